/*
 * A downstream HTTP/1 connection on one worker (http_conn.h): accept
 * (filter chain selection), lib/tcp's callbacks, the wait for each
 * request's head before it takes a buffer, the run that steps the
 * connection's stream whenever something happened, closing (linger, FIN,
 * drain) and the connection's idle timer.
 *
 * One request is processed at a time (HTTP/1.1 pipelining is sequential):
 * the next request's bytes wait in the input until the current response is
 * complete.
 */
#include <errno.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <rte_mbuf.h>

#include "arn_config.h"
#include "arn_log.h"
#include "arn_tcp.h"
#include "http_conn.h"
#include "http_glog.h"
#include "http_l4.h"
#include "http_hcm.h"
#include "http_mcp.h"
#include "http_drain.h"
#include "http_stream.h"
#include "http_tcpp.h"
#include "http_upstream.h"

#define LINGER_MS 3000

static void conn_release(struct http_h1_conn *c);
static void conn_idle_timeout(struct http_timer *t);
static void conn_follow(struct http_conn *hc);
static bool tls_ready(struct http_h1_conn *c);
static void inspect_done(struct http_h1_conn *c, enum arn_tls_hello_status st, bool go);

static struct http_h1_conn *h1c(struct http_conn *hc)
{
	return (struct http_h1_conn *)(void *)hc; /* c is its first member */
}

/* ---- closing ------------------------------------------------------------------------------ */

static void conn_abort(struct http_conn *hc, int line)
{
	if (hc->state == HTTP_DC_CLOSED || !hc->tc)
		return;
	ARN_DEBUG(HTTP, "connection %llx: reset (line %d)", (unsigned long long)hc->id, line);
	HTTP_INC(hc, downstream_rq_tx_reset);
	hc->state = HTTP_DC_CLOSED;
	h1c(hc)->aborted = true;
	arn_tcp_abort(hc->tc); /* on_close follows and frees the connection */
}

static void start_close(struct http_conn *hc)
{
	if (hc->state != HTTP_DC_OPEN)
		return;
	http_res_unwait(hc->w, hc);
	hc->state = HTTP_DC_CLOSING;
	hc->idle_timer.fn = conn_idle_timeout;
	http_timer_arm(hc->w, &hc->idle_timer, LINGER_MS);
	h1c(hc)->shut = false;
}

/* Closing: once the reply is out, FIN; discard what the client still sends
 * (a close with unread data would reset and could destroy our response in
 * flight); close when the client's FIN arrives or the linger time ends. */
static void closing_step(struct http_h1_conn *c)
{
	struct http_conn *hc = &c->c;
	if (!hc->tc || http_out_busy(&c->dn.out))
		return;
	http_in_free(&c->dn.in);
	arn_tcp_rx_consume(hc->tc, arn_tcp_rx_pending(hc->tc));
	if (!c->shut) {
		c->shut = true;
		http_tp_shutdown(c->dn.tp, hc->tc);
	}
	if (c->dn.peer.eof) {
		hc->state = HTTP_DC_CLOSED;
		arn_tcp_close(hc->tc);
	}
}

/* ---- the next request's head ---------------------------------------------------------- */

/*
 * Is the next request's head in the input, so that it is worth a request
 * buffer (struct http_res: header array, scratch, text)? Issue 12: a
 * buffer taken at a request's first byte was held while a slow client
 * trickled its head, and 1,024 such clients per worker starved everyone
 * else. The input is scanned here for the head's end, an empty line after
 * a non-empty one (empty lines before the request line are not one, as the
 * parser ignores them), without parsing: incrementally, each byte once
 * (c->hs_*), memchr from line end to line end. Also true once the input
 * holds more than a head may be (max_request_headers_kb) or all the input
 * a connection takes from TCP (HTTP_IN_MAX): the parser then refuses it,
 * or takes a head larger than that in parts as before. What the scan
 * accepts the parser still judges: a bare CR or LF it refuses is refused
 * then, with the buffer taken, as before.
 */
/*
 * head_ready's usual case: a scan not begun, and the whole head in the
 * first segment. Its line feeds are found 16 bytes at a time, not by a
 * memchr call per line (bench_hcm: 88 instructions fewer a request). A line is empty when it is
 * nothing or one CR before its LF, and not when its first byte is not a CR; anything else (CRs that
 * may make up the whole line) is left to the byte scan. @return true with the head's end found;
 * false: undecided, the byte scan starts (from the beginning).
 */
/* One line feed at @p i for head_scan_first: 1 the head ends there, 0
 * undecided, -1 go on. */
static inline int head_scan_lf(struct http_h1_conn *c, const char *p, uint32_t i, uint32_t *ls,
			       bool *start)
{
	uint32_t n = i - *ls;
	if (n > 1 && p[*ls] == '\r')
		return 0; /* CRs only? the byte scan says */
	if (n == 0 || p[*ls] == '\r') {
		if (*start) {
			c->hs_scanned = i + 1;
			c->head_in = true;
			return 1;
		}
	} else {
		*start = true;
	}
	*ls = i + 1;
	return -1;
}

static bool head_scan_first(struct http_h1_conn *c, const char *p, uint32_t len)
{
	uint32_t ls = 0; /* the current line's start */
	bool start = c->hs_start;
	uint32_t b = 0;
	int r;
#if defined(__SSE2__)
	const __m128i nl = _mm_set1_epi8('\n');
	for (; b + 16 <= len; b += 16) {
		unsigned mask = (unsigned)_mm_movemask_epi8(
		    _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)(p + b)), nl));
		for (; mask; mask &= mask - 1)
			if ((r = head_scan_lf(c, p, b + (uint32_t)__builtin_ctz(mask), &ls,
					      &start)) >= 0)
				return r;
	}
	if (b < len && len >= 16) {
		/* the rest: the last 16 bytes, less those already seen */
		unsigned mask =
		    (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(
			_mm_loadu_si128((const __m128i *)(const void *)(p + len - 16)), nl)) >>
		    (b - (len - 16));
		for (; mask; mask &= mask - 1)
			if ((r = head_scan_lf(c, p, b + (uint32_t)__builtin_ctz(mask), &ls,
					      &start)) >= 0)
				return r;
		return false;
	}
#endif
	for (; b < len; b++)
		if (p[b] == '\n' && (r = head_scan_lf(c, p, b, &ls, &start)) >= 0)
			return r;
	return false;
}

static bool head_ready(struct http_h1_conn *c)
{
	struct http_in *in = &c->dn.in;
	if (c->head_in)
		return true;
	if (!c->hs_scanned && !c->hs_line && in->head) {
		const char *p = rte_pktmbuf_mtod_offset(in->head, const char *, in->off);
		uint32_t len = in->head->data_len - in->off;
		/* The usual request, without a body, ends its first segment
		 * with an empty line: its first line is not empty (its first
		 * byte is neither CR nor LF), so an empty line ends the head
		 * there or before, and the parser finds where. One compare
		 * instead of a scan of every line (about 80 instructions a
		 * request under bench/cost/run). */
		if (len >= 4 && p[0] != '\r' && p[0] != '\n' &&
		    memcmp(p + len - 4, "\r\n\r\n", 4) == 0) {
			c->head_in = true;
			return true;
		}
		if (head_scan_first(c, p, len))
			return true;
	}
	uint32_t skip = c->hs_scanned, off = in->off;
	for (struct rte_mbuf *m = in->head; m && !c->head_in; m = m->next, off = 0) {
		uint32_t len = m->data_len - off;
		if (skip >= len) {
			skip -= len;
			continue;
		}
		const char *p = rte_pktmbuf_mtod_offset(m, const char *, off + skip);
		const char *e = p + (len - skip);
		skip = 0;
		while (p < e) {
			const char *lf = memchr(p, '\n', (size_t)(e - p));
			const char *stop = lf ? lf : e;
			for (const char *q = p; q < stop && !c->hs_line; q++)
				c->hs_line = *q != '\r';
			if (!lf) {
				c->hs_scanned += (uint32_t)(e - p);
				break;
			}
			c->hs_scanned += (uint32_t)(lf + 1 - p);
			p = lf + 1;
			if (!c->hs_line && c->hs_start) {
				c->head_in = true; /* the empty line that ends the head */
				break;
			}
			c->hs_start |= c->hs_line;
			c->hs_line = false;
		}
	}
	if (in->bytes > c->dn.p.max_head || in->bytes >= HTTP_IN_MAX)
		c->head_in = true;
	return c->head_in;
}

/* http_h1_skip_empty_lines with its usual cases inline: no input yet
 * (the bytes are still TCP's), or a request's first byte first (bench_hcm:
 * its two calls a request, about 30 instructions). */
static inline bool request_byte_in(struct http_in *in)
{
	const struct rte_mbuf *m = in->head;
	if (!m)
		return false;
	if (in->off < m->data_len) {
		char b = *rte_pktmbuf_mtod_offset(m, const char *, in->off);
		if (b != '\r' && b != '\n')
			return true;
	}
	return http_h1_skip_empty_lines(in);
}

/*
 * Before the stream has a request buffer: empty lines before a request are
 * no part of it (they start no stream, the connection stays idle); the
 * request's first byte starts the stream and its timers, but its buffer
 * waits for the head to be in, so that a client trickling its head holds
 * none (issue 12). @return true once the stream has its buffer.
 */
static bool request_wait(struct http_h1_conn *c)
{
	struct http_conn *hc = &c->c;
	struct http_stream *st = &hc->st;
	while (!(st->state & HTTP_S_STARTED) && !request_byte_in(&c->dn.in)) {
		if (http_tp_fill(c->dn.tp, hc->tc, &c->dn.in))
			continue;
		if (c->dn.peer.eof) {
			/* the client closed between requests */
			hc->close_after = true;
			start_close(hc);
			hc->again = true;
		}
		return false;
	}
	/* the head deadline is armed only if the head has to wait (for its
	 * bytes or a buffer): bench_hcm's heads never do (about 40
	 * instructions a request) */
	bool later = false;
	if (!(st->state & HTTP_S_STARTED)) {
		http_stream_start(st, true);
		later = true;
	}
	while (!head_ready(c)) {
		if (http_tp_fill(c->dn.tp, hc->tc, &c->dn.in))
			continue;
		if (later)
			http_stream_head_deadline(st);
		if (c->dn.peer.eof) {
			/* the client went away mid-head: closed without a reply,
			 * as before (Envoy's codec resets the stream) */
			http_stream_timers_cancel(st);
			hc->close_after = true;
			start_close(hc);
			hc->again = true;
		}
		return false;
	}
	/* in because of its size, not its end: the parser may take it in parts */
	struct http_in *in = &c->dn.in;
	if (later && (in->bytes > c->dn.p.max_head || in->bytes >= HTTP_IN_MAX))
		http_stream_head_deadline(st);
	bool queued = hc->res_waiting;
	struct http_worker *w = hc->w;
	struct http_res *r;
	if (!queued && !w->res_wait_head && w->res_free) {
		/* nobody waits: the free list's first, as http_res_take takes
		 * it, without its queue's bookkeeping */
		r = w->res_free;
		w->res_free = r->next;
	} else {
		r = http_res_take(w, hc);
	}
	if (!r) {
		if (later)
			http_stream_head_deadline(st);
		/* every request buffer of this worker is in use, or requests
		 * before this one wait for one: it waits its turn (its head
		 * stays in the input); the poll wakes waiters in order */
		if (!queued)
			HTTP_INC(hc, downstream_rq_buffer_wait);
		return false;
	}
	http_stream_take_inline(st, r);
	return true;
}

/* ---- the run --------------------------------------------------------------------------------- */

/* The stream ended: close, or wait for the next request under the
 * connection's idle timeout. */
static void stream_ended(struct http_h1_conn *c)
{
	struct http_conn *hc = &c->c;
	c->hs_scanned = 0;
	c->hs_line = c->hs_start = c->head_in = false;
	if (!hc->tc)
		return;
	if (hc->close_after) {
		start_close(hc);
		hc->again = true; /* closing_step: the FIN once the reply is out */
	} else {
		if (hc->rebind)
			conn_follow(hc);
		/* The idle timeout counts from here. A timer still armed from
		 * an earlier idle time (a stream's start does not cancel it:
		 * conn_idle_timeout leaves a connection with a stream alone)
		 * stays when it is due before this idle time would end, and
		 * then arms itself for what is left: no arm and cancel per
		 * keep-alive request (issue 17). */
		uint64_t now = hc->w->now_ms;
		uint32_t idle = hc->hcm ? hc->hcm->idle_timeout_ms : 0;
		hc->idle_since_ms = now;
		hc->idle_timer.fn = conn_idle_timeout;
		if (!idle)
			http_timer_cancel(&hc->idle_timer);
		else if (!hc->idle_timer.armed || hc->idle_timer.due_ms > now + idle)
			http_timer_arm(hc->w, &hc->idle_timer, idle);
		/* Pipelined requests may wait in the input, or the client's
		 * FIN came during the exchange: one more round reads them.
		 * Without either (a plain text connection with nothing in its
		 * buffer or TCP's), that round would find nothing to do: the
		 * next bytes or the FIN call conn_run (dc_data, dc_eof). */
		hc->again =
		    c->tls.on || c->dn.peer.eof || c->dn.in.bytes || arn_tcp_rx_pending(hc->tc);
	}
}

/* The handshake completed before transport_socket_connect_timeout: the
 * idle timer goes back to the idle timeout, counted from the accept. */
static void hs_deadline_met(struct http_conn *hc)
{
	hc->hs_deadline = false;
	uint32_t idle = hc->hcm ? hc->hcm->idle_timeout_ms : 0;
	uint64_t age = hc->w->now_ms - hc->idle_since_ms; /* set at the accept */
	if (idle)
		http_timer_arm(hc->w, &hc->idle_timer, age < idle ? idle - age : 1);
	else
		http_timer_cancel(&hc->idle_timer);
}

/*
 * A TLS connection's handshake, before the codec sees a byte. @return true
 * once it is open. A failed one (its alert is with TCP already) closes the
 * connection, as Envoy does; so does a client that leaves mid-handshake.
 * The idle timer armed on accept bounds a handshake that stalls.
 */
static bool tls_ready(struct http_h1_conn *c)
{
	struct http_conn *hc = &c->c;
	int rc = http_tls_handshake(&c->tls);
	if (rc == 0) {
		if (hc->hs_deadline)
			hs_deadline_met(hc);
		return true;
	}
	if ((rc == -EAGAIN || rc == -EBUSY) && !c->dn.peer.eof)
		return false;
	ARN_DEBUG(HTTP, "connection %llx: TLS handshake failed (%d)", (unsigned long long)hc->id,
		  rc);
	hc->state = HTTP_DC_CLOSED;
	arn_tcp_rx_consume(hc->tc, arn_tcp_rx_pending(hc->tc));
	arn_tcp_close(hc->tc);
	return false;
}

/*
 * HTTP/1.1 or HTTP/2, decided once before the first request: ALPN "h2"
 * on TLS; else the codec_type (HTTP2: HTTP/2 only, AUTO: HTTP/2 when the
 * client's first bytes are the connection preface, Envoy's prior
 * knowledge). @return true to go on as HTTP/1.1; false with the
 * connection turned to HTTP/2 (hc->again), or waiting for more bytes.
 */
static bool proto_select(struct http_h1_conn *c)
{
	struct http_conn *hc = &c->c;
	uint8_t codec = hc->hcm ? hc->hcm->codec : ARN_CFG_CODEC_HTTP1;
	bool h2 = false;
	if (codec != ARN_CFG_CODEC_HTTP1 && c->tls.on) {
		size_t n = 0;
		const char *a = arn_tls_alpn(&c->tls.tls, &n);
		h2 = a && n == 2 && memcmp(a, "h2", 2) == 0;
	}
	if (!h2 && codec == ARN_CFG_CODEC_HTTP2) {
		h2 = true;
	} else if (!h2 && codec == ARN_CFG_CODEC_AUTO) {
		int p;
		while ((p = http_h2_preface(&c->dn.in)) < 0) {
			if (http_tp_fill(c->dn.tp, hc->tc, &c->dn.in))
				continue;
			if (!c->dn.peer.eof)
				return false; /* the first bytes will tell */
			break;
		}
		h2 = p == 1;
	}
	c->proto_known = true;
	if (!h2) {
		HTTP_INC(hc, downstream_cx_http1_total);
		HTTP_GAUGE(hc, downstream_cx_http1_active, 1);
		return true;
	}
	if (http_h2_start(c) != 0) {
		ARN_DEBUG(HTTP, "connection %llx: no memory for HTTP/2",
			  (unsigned long long)hc->id);
		conn_abort(hc, __LINE__);
		return false;
	}
	HTTP_INC(hc, downstream_cx_http2_total);
	HTTP_GAUGE(hc, downstream_cx_http2_active, 1);
	hc->again = true;
	return false;
}

/* One round of an HTTP/2 connection (http_h2.c), or of its closing. */
static void h2_once(struct http_h1_conn *c)
{
	struct http_conn *hc = &c->c;
	if (hc->state == HTTP_DC_CLOSING) {
		/* the GOAWAY and the last frames go before the FIN */
		if (http_out_busy(&c->dn.out)) {
			int rc = http_tp_flush(c->dn.tp, hc->tc, &c->dn.out);
			if (rc != 0 && rc != -EAGAIN)
				return;
		}
		closing_step(c);
		return;
	}
	http_h2_run(c);
	if (!hc->tc || hc->state == HTTP_DC_CLOSED)
		return;
	if (hc->close_after) {
		start_close(hc);
		hc->again = true;
	}
}

/*
 * One round: the response direction, the client's output, the stream's
 * end, closing, then the request direction (or the wait for the next
 * request's head).
 */
static void run_once(struct http_h1_conn *c)
{
	struct http_conn *hc = &c->c;
	struct http_stream *st = &hc->st;
	if (hc->state == HTTP_DC_CLOSED || !hc->tc)
		return;
	if (c->tls.on && !arn_tls_is_open(&c->tls.tls) && !tls_ready(c))
		return;
	if (c->h2) {
		h2_once(c);
		return;
	}
	if (!c->proto_known && hc->state == HTTP_DC_OPEN && !proto_select(c))
		return;
	if (st->up && !(st->state & HTTP_S_LOCAL))
		http_resp_step(st);
	if (hc->state == HTTP_DC_CLOSED || !hc->tc)
		return;
	/* the MCP gateway's event stream goes on as the client takes it */
	if (st->mcp)
		http_mcp_run(st);
	if (hc->state == HTTP_DC_CLOSED || !hc->tc)
		return;
	/* nothing queued: nothing to hand over (the codec keeps the flag) */
	int rc = c->dn.peer.queued ? c->dn.peer.codec->flush(&c->dn.peer) : 0;
	if (rc != 0 && rc != -EAGAIN)
		return; /* the connection is going: on_close follows */
	bool flushed = rc == 0;
	if ((st->state & HTTP_S_ACTIVE) && flushed && (st->state & HTTP_S_RESP_DONE) &&
	    ((st->state & HTTP_S_REQ_DONE) || hc->close_after) &&
	    !(st->up && http_up_peer(st->up)->queued)) {
		http_stream_end(st);
		stream_ended(c); /* asks for another round if there is work */
		return;
	}
	if (hc->state == HTTP_DC_CLOSING) {
		closing_step(c);
		return;
	}
	if (!(st->state & HTTP_S_ACTIVE) && hc->close_after && flushed) {
		start_close(hc);
		hc->again = true;
		return;
	}
	if (!st->res && hc->state == HTTP_DC_OPEN && !(st->state & HTTP_S_ACTIVE) &&
	    !request_wait(c))
		return;
	http_req_step(st);
}

static void conn_run(struct http_conn *hc)
{
	struct http_h1_conn *c = h1c(hc);
	if (c->in_run) {
		hc->again = true;
		return;
	}
	c->in_run = true;
	do {
		hc->again = false;
		run_once(c);
	} while (hc->again && hc->tc && hc->state != HTTP_DC_CLOSED);
	c->in_run = false;
	if (c->dead)
		conn_release(c);
}

/* lib/tls: a handshake the worker's budget deferred may go on. */
static void conn_resume(void *arg)
{
	conn_run(arg);
}

static void conn_idle_timeout(struct http_timer *t)
{
	struct http_conn *hc = OWNER(t, struct http_conn, idle_timer);
	if (!hc->tc)
		return;
	if (hc->state == HTTP_DC_CLOSING) {
		/* the client never closed its side: give up waiting */
		hc->state = HTTP_DC_CLOSED;
		arn_tcp_rx_consume(hc->tc, arn_tcp_rx_pending(hc->tc));
		arn_tcp_close(hc->tc);
		return;
	}
	struct http_h1_conn *c = h1c(hc);
	if (hc->hs_deadline && (!c->tls.on || arn_tls_is_open(&c->tls.tls))) {
		hs_deadline_met(hc);
		return;
	}
	if (hc->hs_deadline) {
		/* the handshake has not completed (Envoy's
		 * transport_socket_connect_timeout): an OpenSSL server
		 * handshake holds tens of KB of heap (docs/tls.md), so a
		 * client that stalls it is closed at this deadline, not
		 * at the idle timeout (1 h by default) */
		if (hc->w->now_ms < hc->hs_due_ms) {
			http_timer_arm(hc->w, t, hc->hs_due_ms - hc->w->now_ms);
			return;
		}
		if (hc->lrt)
			arn_stats_inc(hc->lrt->stats, hc->w->slot,
				      ARN_LS_downstream_cx_transport_socket_connect_timeout);
		ARN_DEBUG(HTTP, "connection %llx: TLS handshake not done in time",
			  (unsigned long long)hc->id);
		hc->state = HTTP_DC_CLOSED;
		arn_tcp_rx_consume(hc->tc, arn_tcp_rx_pending(hc->tc));
		arn_tcp_close(hc->tc);
		return;
	}
	if (c->h2) {
		/* GOAWAY, then the close once it is out */
		http_h2_idle(h1c(hc));
		conn_run(hc);
		return;
	}
	if (hc->st.state & (HTTP_S_ACTIVE | HTTP_S_STARTED))
		return; /* the stream's end arms it again */
	/* armed in an earlier idle time, maybe (stream_ended) */
	uint32_t idle = hc->hcm ? hc->hcm->idle_timeout_ms : 0;
	uint64_t was = hc->w->now_ms - hc->idle_since_ms;
	if (idle && was < idle) {
		http_timer_arm(hc->w, t, idle - was);
		return;
	}
	HTTP_INC(hc, downstream_cx_idle_timeout);
	hc->close_after = true;
	start_close(hc);
	conn_run(hc);
}

/* ---- listener drain ------------------------------------------------------------------------- */

/*
 * Envoy drains a replaced listener's connections over --drain-time-s
 * (DrainManagerImpl::drainClose(): P(close) = elapsed / drain time, so
 * that clients reconnect spread over the drain time instead of all at
 * once, issue 22), and updates a listener whose filter chains alone
 * changed in place: connections on a chain whose FilterChain is unchanged
 * stay. Arion decides at each response (http_drain_close) and, for idle
 * keep-alive connections, in a scan when a drain starts and when it ends
 * (http_drain_begin, http_drains_poll): never per packet.
 */

/* The listener the current generation has at @p hc's address. */
static const struct arn_cfg_listener *lsn_now(struct http_conn *hc)
{
	const struct arn_cfg_gen *g = hc->w->store ? arn_config_gen(hc->w->store) : NULL;
	return g ? arn_cfg_listener_find(g, hc->sladdr, hc->slport) : NULL;
}

/*
 * Move @p hc, idle, from its listener to @p l, whose chain @p fc has the
 * same FilterChain bytes as its own, so that the old version's memory can
 * go. Not done for a chain with network filters: their per-connection
 * state (connection_limit counts, RBAC) belongs to the old chain's runtime,
 * so such a connection stays on the old version, pinned, until it closes.
 * The old listener is unpinned last: nothing of it is read after.
 */
static void conn_rebind(struct http_conn *hc, const struct arn_cfg_listener *l,
			const struct arn_cfg_filter_chain *fc)
{
	hc->rebind = false;
	if (fc->n_l4_filters || hc->l4_held || fc->kind != ARN_CFG_NF_HCM || !fc->hcm)
		return;
	struct http_hcm_rt *r = http_rt_hcm(fc->hcm);
	if (!r) {
		hc->rebind = true; /* its runtime is not built yet: at the next idle time */
		return;
	}
	const struct arn_cfg_listener *was = hc->lsn;
	arn_cfg_pin(l);
	http_rt_hcm_put(hc->hrt);
	hc->hrt = r;
	hc->lsn = l;
	hc->fc = fc;
	hc->hcm = fc->hcm;
	h1c(hc)->dn.trailers = fc->hcm->enable_trailers;
	arn_cfg_unpin(was);
}

/* An idle connection whose listener was replaced by one that kept its
 * chain goes over to it. */
static void conn_follow(struct http_conn *hc)
{
	const struct arn_cfg_listener *l = lsn_now(hc);
	hc->rebind = false;
	if (l == hc->lsn)
		return;
	const struct arn_cfg_filter_chain *fc = arn_cfg_filter_chain_kept(hc->lsn, hc->fc, l);
	if (fc)
		conn_rebind(hc, l, fc);
}

/* listener_manager.*: what drain @p d is (worker 0 counts for the process:
 * every worker drains the same versions) */
static void drain_count_start(struct http_worker *w, struct http_drain *d)
{
	const struct arn_cfg_listener *l = d->l;
	const struct arn_cfg_gen *g = w->store ? arn_config_gen(w->store) : NULL;
	const struct arn_cfg_listener *now = g ? arn_cfg_listener_find(g, l->addr, l->port) : NULL;
	d->n_chains = 0;
	d->whole = !now || !l->base_hash || now->base_hash != l->base_hash;
	for (size_t i = 0; i <= l->n_chains; i++) {
		const struct arn_cfg_filter_chain *fc =
		    i < l->n_chains ? &l->chains[i] : l->default_chain;
		if (fc && (d->whole || !arn_cfg_filter_chain_kept(l, fc, now)))
			d->n_chains++;
	}
	if (w->idx != 0 || !w->lm)
		return;
	if (!now)
		arn_stats_inc(w->lm, w->slot, ARN_LM_listener_removed);
	else if (d->whole)
		arn_stats_inc(w->lm, w->slot, ARN_LM_listener_modified);
	else if (d->n_chains)
		arn_stats_inc(w->lm, w->slot, ARN_LM_listener_in_place_updated);
	if (d->whole)
		arn_stats_gauge_add(w->lm, w->slot, ARN_LM_total_listeners_draining, 1);
	arn_stats_gauge_add(w->lm, w->slot, ARN_LM_total_filter_chains_draining, d->n_chains);
}

static void drain_count_end(struct http_worker *w, const struct http_drain *d)
{
	if (w->idx != 0 || !w->lm)
		return;
	if (d->whole)
		arn_stats_gauge_add(w->lm, w->slot, ARN_LM_total_listeners_draining, -1);
	arn_stats_gauge_add(w->lm, w->slot, ARN_LM_total_filter_chains_draining,
			    -(int64_t)d->n_chains);
}

/*
 * The idle connections on listener @p l (connected, no exchange under way):
 * those whose chain the current listener kept go over to it; the others
 * close if @p end (their drain ended). Connections in an exchange are left
 * to http_drain_close at their response.
 */
static void drain_scan(struct http_worker *w, const struct arn_cfg_listener *l, bool end)
{
	const struct arn_cfg_listener *now = NULL;
	bool now_known = false;
	for (uint32_t i = 0; i < w->n_conns; i++) {
		struct http_h1_conn *c = &w->conns[i];
		struct http_conn *hc = &c->c;
		if (c->is_h2_stream || hc->lsn != l || !hc->tc || hc->state != HTTP_DC_OPEN ||
		    c->inspecting || c->in_run)
			continue;
		if (c->h2) {
			/* HTTP/2 stays on the version its streams borrow;
			 * at the drain's end: GOAWAY, then the close once its
			 * streams are done */
			if (end) {
				http_drain_count(hc);
				http_h2_drain(c);
				conn_run(hc);
			}
			continue;
		}
		if (hc->st.res || (hc->st.state & (HTTP_S_ACTIVE | HTTP_S_STARTED)))
			continue;
		if (!now_known) {
			now = lsn_now(hc);
			now_known = true;
		}
		const struct arn_cfg_filter_chain *fc = arn_cfg_filter_chain_kept(l, hc->fc, now);
		if (fc) {
			conn_rebind(hc, now, fc);
		} else if (end) {
			http_drain_count(hc);
			hc->close_after = true;
			start_close(hc);
			conn_run(hc);
		}
	}
}

static void drain_end(struct http_worker *w, struct http_drain *d)
{
	const struct arn_cfg_listener *l = d->l;
	drain_scan(w, l, true);
	/* the network-filter connections (tcp_proxy, echo) have no way to be asked
	 * to go: Envoy closes them when the drain time ends */
	const struct arn_cfg_gen *g = w->store ? arn_config_gen(w->store) : NULL;
	http_tcpp_drain_end(w, l, g ? arn_cfg_listener_find(g, l->addr, l->port) : NULL);
	drain_count_end(w, d);
	d->l = NULL;
	w->n_drains--;
	arn_cfg_unpin(l);
}

void http_drain_begin(struct http_worker *w, const struct arn_cfg_listener *l)
{
	struct http_drain *d = NULL;
	for (uint32_t i = 0; i < HTTP_DRAINS_MAX && !d; i++)
		if (!w->drains[i].l)
			d = &w->drains[i];
	if (!d) {
		/* more listener versions draining than slots: the oldest
		 * drain ends now */
		d = &w->drains[0];
		for (uint32_t i = 1; i < HTTP_DRAINS_MAX; i++)
			if (w->drains[i].start_ms < d->start_ms)
				d = &w->drains[i];
		drain_end(w, d);
	}
	d->l = l;
	d->start_ms = w->now_ms;
	d->end_ms = w->now_ms + (w->drain_ms ? w->drain_ms : 1);
	w->n_drains++;
	drain_count_start(w, d);
	/* idle connections on chains the new version kept go over to it now */
	drain_scan(w, l, false);
}

void http_drains_poll(struct http_worker *w)
{
	for (uint32_t i = 0; i < HTTP_DRAINS_MAX && w->n_drains; i++)
		if (w->drains[i].l && w->now_ms >= w->drains[i].end_ms)
			drain_end(w, &w->drains[i]);
}

void http_drains_fini(struct http_worker *w)
{
	for (uint32_t i = 0; i < HTTP_DRAINS_MAX; i++)
		if (w->drains[i].l) {
			drain_count_end(w, &w->drains[i]);
			arn_cfg_unpin(w->drains[i].l);
			w->drains[i].l = NULL;
		}
	w->n_drains = 0;
}

static const struct http_conn_ops conn_ops = {
    .run = conn_run,
    .close = start_close,
    .reset = conn_abort,
    .resume_head = http_hcm_resume_head,
    .resume_resp_head = http_hcm_resume_resp_head,
    .resp_step = http_resp_step,
    .write_head = http_hcm_write_head,
    .keep_resp_end = http_hcm_resp_keep_end,
};

/* ---- TCP callbacks ----------------------------------------------------------------------------
 */

static struct http_h1_conn *conn_alloc(struct http_worker *w, struct arn_tcp_conn *tc)
{
	struct http_conn *hc = w->conn_free;
	if (!hc)
		return NULL;
	w->conn_free = hc->next;
	struct http_h1_conn *c = h1c(hc);
	memset(c, 0, sizeof(*c));
	hc->w = w;
	hc->ops = &conn_ops;
	hc->tc = tc;
	hc->dn = &c->dn.peer;
	http_h1_peer_init(&c->dn, w, tc);
	http_stream_init(&hc->st, hc);
	hc->idle_timer.fn = conn_idle_timeout;
	hc->keeps = true;
	return c;
}

static void conn_release(struct http_h1_conn *c)
{
	struct http_conn *hc = &c->c;
	struct http_worker *w = hc->w;
	struct http_stream *st = &hc->st;
	http_res_unwait(w, hc);
	/* a stream starts (its timers run) before it has a buffer */
	http_stream_timers_cancel(st);
	if ((st->state & HTTP_S_ACTIVE) || st->res || st->rt || st->up ||
	    (st->state & HTTP_S_PENDING)) {
		if ((st->state & HTTP_S_ACTIVE) && !(st->state & HTTP_S_RESP_DONE) && !c->aborted)
			st->flags |= ARN_RF_BIT(DOWNSTREAM_CONNECTION_TERMINATION);
		http_up_detach(st);
		http_stream_end(st);
		http_res_put(w, st->res); /* kept by the stream's end when mid-message */
		st->res = NULL;
	}
	http_kept_drop(hc);
	http_timer_cancel(&hc->idle_timer);
	bool h2 = c->h2 != NULL;
	http_h2_free(c); /* its streams first */
	http_l4_close(hc);
	http_h1_peer_free(&c->dn);
	if (c->tls.on) {
		HTTP_GAUGE(hc, downstream_cx_ssl_active, -1);
		http_tls_stop(&c->tls);
	}
	HTTP_GAUGE(hc, downstream_cx_active, -1);
	if (h2)
		HTTP_GAUGE(hc, downstream_cx_http2_active, -1);
	else if (c->proto_known)
		HTTP_GAUGE(hc, downstream_cx_http1_active, -1);
	HTTP_INC(hc, downstream_cx_destroy);
	if (HS(hc))
		arn_stats_hist_record(HS(hc), w->slot, ARN_HTTP_downstream_cx_length_ms,
				      http_now_us(w, hc->open_tsc));
	http_cx_release(&hc->cx_adm);
	if (hc->lrt) {
		arn_stats_gauge_add(hc->lrt->stats, w->slot, ARN_LS_downstream_cx_active, -1);
		LS_INC(hc, downstream_cx_destroy);
		http_lrt_put(hc->lrt);
		hc->lrt = NULL;
	}
	http_rt_hcm_put(hc->hrt);
	hc->hrt = NULL;
	if (hc->lsn)
		arn_cfg_unpin(hc->lsn);
	hc->lsn = NULL;
	hc->next = w->conn_free;
	w->conn_free = hc;
}

/* The block that waited for a ClientHello is done with: the connection
 * went to a tcp_proxy session, which set its own user and ops. */
static void inspect_release(struct http_h1_conn *c)
{
	struct http_conn *hc = &c->c;
	struct http_worker *w = hc->w;
	http_timer_cancel(&hc->idle_timer);
	http_kept_drop(hc);
	http_h1_peer_free(&c->dn);
	if (hc->lsn)
		arn_cfg_unpin(hc->lsn);
	hc->lsn = NULL;
	hc->tc = NULL;
	hc->state = HTTP_DC_CLOSED;
	hc->next = w->conn_free;
	w->conn_free = hc;
}

/* A connection no filter chain of @p l takes, to the listener's own
 * access_log as Envoy logs it (active_stream_listener_base.cc): flag NR,
 * details filter_chain_not_found, the SNI a tls_inspector read (@p c's,
 * when it waited for the ClientHello). */
static void no_chain_log(struct http_worker *w, const struct arn_cfg_listener *l,
			 struct http_h1_conn *c, uint32_t laddr, uint16_t lport, uint32_t raddr,
			 uint16_t rport)
{
	struct http_hcm_rt *r = l->n_access_logs ? http_rt_listener_logs(l) : NULL;
	if (!r)
		return;
	struct arn_access_record rec;
	memset(&rec, 0, sizeof(rec));
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	rec.start_time_us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
	rec.request_duration_us = UINT64_MAX;
	rec.response_duration_us = UINT64_MAX;
	rec.response_tx_duration_us = UINT64_MAX;
	rec.response_flags = ARN_RF_BIT(NO_ROUTE_FOUND);
	static const char details[] = "filter_chain_not_found";
	rec.response_code_details = (struct arn_access_str){details, sizeof(details) - 1};
	rec.downstream_remote = (struct arn_access_addr){raddr, rport};
	rec.downstream_local = (struct arn_access_addr){laddr, lport};
	rec.connection_id = ((uint64_t)w->idx << 48) | ++w->next_conn_id;
	const struct arn_tls_hello *h = c ? arn_tls_hello_result(&c->hello) : NULL;
	if (h && h->has_sni)
		rec.requested_server_name = (struct arn_access_str){h->sni, h->sni_len};
	for (unsigned i = 0; i < r->n_loggers; i++)
		arn_access_log_write(r->loggers[i], w->slot, &rec);
	if (r->n_glogs)
		r->glog_log(w, l, laddr, r, &rec);
	http_rt_hcm_put(r);
}

/*
 * Open the connection on listener @p l's chain @p fc (NULL: none matched):
 * @p c is the block that waited for the ClientHello (tls_inspector), or
 * NULL to take one. @return 0, or a negative errno: refused (a block
 * given stays the caller's, to close).
 */
static int conn_open(struct http_worker *w, struct arn_tcp_conn *tc, struct http_h1_conn *c,
		     const struct arn_cfg_listener *l, const struct arn_cfg_filter_chain *fc)
{
	uint32_t laddr, raddr;
	uint16_t lport, rport;
	arn_tcp_endpoints(tc, &laddr, &lport, &raddr, &rport);
	uint32_t draddr = raddr, sladdr = laddr;
	uint16_t drport = rport, slport = lport;
	const struct http_dc_addrs *pp = c && c->pp_have ? &c->pp_addrs : NULL;
	if (pp) { /* a PROXY header's: the connection's remote and local */
		laddr = pp->laddr;
		lport = pp->lport;
		raddr = pp->raddr;
		rport = pp->rport;
	}
	struct http_listener_rt *lrt = http_rt_listener(l->addr, l->port);
	if (!fc) {
		if (lrt)
			arn_stats_inc(lrt->stats, w->slot, ARN_LS_no_filter_chain_match);
		no_chain_log(w, l, c, laddr, lport, raddr, rport);
		return -ENOENT;
	}
	struct arn_tls_ctx *tctx = NULL;
	if (fc->tls) {
		/* no context: it failed to build (logged on the control lcore),
		 * or the chain is not one the HTTP connection serves */
		tctx = fc->kind == ARN_CFG_NF_HCM || fc->kind == ARN_CFG_NF_TCP_PROXY
			   ? http_rt_tls(fc)
			   : NULL;
		if (!tctx)
			return -EPROTONOSUPPORT;
	}
	if (fc->kind == ARN_CFG_NF_ECHO && !c)
		return http_tcpp_echo_open(w, tc, l, fc);
	if (fc->kind == ARN_CFG_NF_TCP_PROXY) {
		/* the ClientHello a tls_inspector read stays in TCP's queue:
		 * relayed as it is (TLS passthrough), or the handshake's (a
		 * chain that terminates TLS) */
		const char *sni = NULL;
		size_t sni_len = 0;
		if (c) {
			const struct arn_tls_hello *h = arn_tls_hello_result(&c->hello);
			if (h && h->has_sni) {
				sni = h->sni;
				sni_len = h->sni_len;
			}
		}
		struct arn_tls_stats *ssl = lrt && lrt->ssl && w->idx < ARN_STATS_MAX_WORKERS
						? &lrt->ssl[w->idx]
						: &w->tls_stats;
		/* the session takes the connection's admission: the
		 * waiting block's, or dc_accept's */
		struct http_cx_adm *pending = w->cx_pending;
		if (c)
			w->cx_pending = &c->c.cx_adm;
		w->dc_addrs = pp;
		int rc = http_tcpp_open(w, tc, l, fc, sni, sni_len, tctx, ssl);
		w->dc_addrs = NULL;
		w->cx_pending = pending;
		if (rc == 0 && c)
			inspect_release(c); /* the session owns the connection now */
		return rc;
	}
	if (fc->kind != ARN_CFG_NF_HCM || !fc->hcm)
		return -ENOENT;
	bool fresh = !c;
	if (fresh)
		c = conn_alloc(w, tc);
	if (!c) {
		if (lrt)
			arn_stats_inc(lrt->stats, w->slot, ARN_LS_downstream_cx_overload_reject);
		return -ENOBUFS;
	}
	struct http_conn *hc = &c->c;
	if (tctx) {
		/* the ClientHello still in TCP's queue is the handshake's */
		/* listener.<address>.ssl.* (the connection's reference to lrt
		 * keeps the block) */
		struct arn_tls_stats *ssl = lrt && lrt->ssl && w->idx < ARN_STATS_MAX_WORKERS
						? &lrt->ssl[w->idx]
						: &w->tls_stats;
		if (http_tls_start(&c->tls, w, tc, tctx, ssl, &c->dn.peer.eof, conn_resume, hc,
				   NULL) < 0) {
			if (fresh) {
				hc->next = w->conn_free;
				w->conn_free = hc;
			}
			return -ENOMEM;
		}
		c->dn.tp = &c->tls.t;
		hc->tls = &c->tls.tls;
	}
	if (!hc->lsn) {
		arn_cfg_pin(l);
		hc->lsn = l;
	}
	hc->fc = fc;
	hc->hcm = fc->hcm;
	hc->hrt = http_rt_hcm(fc->hcm);
	hc->lrt = lrt;
	if (lrt)
		http_lrt_ref(lrt); /* the connection's, until conn_free */
	hc->laddr = laddr;
	hc->lport = lport;
	hc->raddr = raddr;
	hc->rport = rport;
	hc->draddr = draddr;
	hc->drport = drport;
	hc->sladdr = sladdr;
	hc->slport = slport;
	hc->id = ((uint64_t)w->idx << 48) | ++w->next_conn_id;
	hc->open_tsc = http_tsc(w);
	const struct arn_cfg_hcm *h = fc->hcm;
	struct arn_h1_config pc = {
	    .max_head_bytes = h->max_request_headers_kb ? h->max_request_headers_kb * 1024 : 0,
	    .max_headers = (uint16_t)(h->max_headers_count && h->max_headers_count < HTTP_MAX_HDRS
					  ? h->max_headers_count
					  : HTTP_MAX_HDRS),
	};
	arn_h1_msg_init(&hc->st.req.m, NULL, 0);
	http_h1_serve(&c->dn, &pc, &hc->st.req.m);
	c->dn.trailers = h->enable_trailers;
	HTTP_INC(hc, downstream_cx_total);
	HTTP_GAUGE(hc, downstream_cx_active, 1);
	/* downstream_cx_http1_* / http2_*: once the protocol is known
	 * (proto_select); a connection manager that serves HTTP/1.1 only
	 * knows it now */
	if (fc->hcm->codec == ARN_CFG_CODEC_HTTP1) {
		c->proto_known = true;
		HTTP_INC(hc, downstream_cx_http1_total);
		HTTP_GAUGE(hc, downstream_cx_http1_active, 1);
	}
	if (tctx) {
		HTTP_INC(hc, downstream_cx_ssl_total);
		HTTP_GAUGE(hc, downstream_cx_ssl_active, 1);
	}
	if (lrt) {
		arn_stats_inc(lrt->stats, w->slot, ARN_LS_downstream_cx_total);
		arn_stats_gauge_add(lrt->stats, w->slot, ARN_LS_downstream_cx_active, 1);
	}
	uint32_t deny_ms;
	if (fc->n_l4_filters && http_l4_accept(hc, fc, &deny_ms) != 0) {
		/* refused by a network filter: read nothing, close after
		 * delay_deny (the idle timer closes a closing connection) */
		hc->state = HTTP_DC_CLOSING;
		http_timer_arm(w, &hc->idle_timer, deny_ms ? deny_ms : 1);
	} else {
		/* the idle timer also ends a TLS handshake that outlasts the
		 * chain's transport_socket_connect_timeout (conn_idle_timeout):
		 * it fires at the sooner of the two */
		uint32_t first = h->idle_timeout_ms,
			 hs = tctx ? fc->transport_socket_connect_timeout_ms : 0;
		if (hs && (!first || hs < first))
			first = hs;
		hc->idle_since_ms = w->now_ms;
		hc->hs_deadline = hs && first == hs;
		hc->hs_due_ms = w->now_ms + hs;
		if (first)
			http_timer_arm(w, &hc->idle_timer, first);
	}
	if (fresh)
		http_cx_take(w, &hc->cx_adm); /* a waiting block has it already */
	arn_tcp_set_user(tc, c);
	return 0;
}

/* ---- envoy.filters.listener.proxy_protocol: the PROXY header ------------------------------ */

static void pp_count(struct http_conn *hc, unsigned stat)
{
	struct http_listener_rt *lrt = http_rt_listener(hc->lsn->addr, hc->lsn->port);
	if (lrt && lrt->pp)
		arn_stats_inc(lrt->pp, hc->w->slot, stat);
}

/*
 * Feed the PROXY header's new bytes, TCP's queue from where the parser
 * stopped (the queue starts at the header's byte c->pp_taken). @return 1
 * the header is read (or absent and allowed: no addresses), 0 more is
 * needed, -1 refused (the connection is closing, counted). *@p hdr: the
 * bytes at the queue's head that are the header's, for the caller to
 * consume: none while the signature is undecided (with
 * allow_requests_without_proxy_protocol they may be a request's).
 */
static int pp_data(struct http_h1_conn *c, struct rte_mbuf *head, uint32_t *hdr)
{
	struct http_conn *hc = &c->c;
	const struct arn_cfg_listener *l = hc->lsn;
	uint32_t skip = arn_pp_fed(&c->pp) - c->pp_taken;
	ssize_t r = ARN_AGAIN;
	*hdr = 0;
	for (struct rte_mbuf *m = head; m && r == ARN_AGAIN; m = m->next) {
		if (skip >= m->data_len) {
			skip -= m->data_len;
			continue;
		}
		r = arn_pp_parse(&c->pp, rte_pktmbuf_mtod_offset(m, char *, skip),
				 m->data_len - skip);
		skip = 0;
	}
	unsigned v = arn_pp_version(&c->pp);
	if ((v == 1 && l->pp_v1_off) || (v == 2 && l->pp_v2_off)) {
		pp_count(hc, v == 1 ? ARN_PPS_v1_disallowed : ARN_PPS_v2_disallowed);
		inspect_done(c, ARN_TLS_HELLO_NOT_TLS, false);
		return -1;
	}
	if (r == ARN_AGAIN) {
		*hdr = v ? arn_pp_fed(&c->pp) - c->pp_taken : 0;
		return 0;
	}
	if (r < 0) {
		enum arn_pp_err e = arn_pp_error(&c->pp);
		if (e == ARN_PP_E_NOT_PROXY && l->pp_allow_without) {
			/* Envoy's SkipFilter: on as if there were no filter */
			pp_count(hc, ARN_PPS_not_found_allowed);
			c->pp_reading = false;
			return 1;
		}
		pp_count(hc, e == ARN_PP_E_NOT_PROXY ? ARN_PPS_not_found_disallowed
			     : v == 1		     ? ARN_PPS_v1_error
						     : ARN_PPS_v2_error);
		pp_count(hc, ARN_PPS__ERR + (unsigned)e - 1);
		inspect_done(c, ARN_TLS_HELLO_NOT_TLS, false);
		return -1;
	}
	const struct arn_pp_result *res = arn_pp_result(&c->pp);
	*hdr = res->header_len - c->pp_taken;
	pp_count(hc, v == 1 ? ARN_PPS_v1_found : ARN_PPS_v2_found);
	c->pp_reading = false;
	if (!res->local && res->family == 6) {
		/* Arion's addresses are IPv4: an address it cannot use is not
		 * replaced by the load balancer's own (RBAC, XFF and logs would
		 * see the balancer), the connection is closed as Envoy closes
		 * one whose family it does not take */
		pp_count(hc, ARN_PPS_ipv6_refused);
		inspect_done(c, ARN_TLS_HELLO_NOT_TLS, false);
		return -1;
	}
	if (!res->local) { /* LOCAL / UNKNOWN: TCP's addresses stay (Envoy) */
		c->pp_have = true;
		c->pp_addrs = (struct http_dc_addrs){.laddr = res->dst4,
						     .raddr = res->src4,
						     .lport = res->dst_port,
						     .rport = res->src_port};
	}
	return 1;
}

/* ---- tls_inspector: the chain chosen by the ClientHello ------------------------------------ */

/* The listener filter timeout: close, or go on as plain text when the
 * listener says so (continue_on_listener_filters_timeout), as Envoy. */
static void inspect_timeout(struct http_timer *t)
{
	struct http_conn *hc = OWNER(t, struct http_conn, idle_timer);
	struct http_h1_conn *c = h1c(hc);
	if (!hc->tc || !c->inspecting)
		return;
	if (c->pp_reading) {
		/* a header half read cannot go on (its bytes are consumed),
		 * continue_on_listener_filters_timeout or not */
		pp_count(hc, ARN_PPS_timeout);
		struct http_listener_rt *lrt = http_rt_listener(hc->lsn->addr, hc->lsn->port);
		if (lrt)
			arn_stats_inc(lrt->stats, hc->w->slot, ARN_LS_downstream_pre_cx_timeout);
		inspect_done(c, ARN_TLS_HELLO_NOT_TLS, false);
		return;
	}
	/* Envoy's count, whether the connection goes on or not (the
	 * listener's runtime object is found at the chain's choice: not yet) */
	struct http_listener_rt *lrt = http_rt_listener(hc->lsn->addr, hc->lsn->port);
	if (lrt)
		arn_stats_inc(lrt->stats, hc->w->slot, ARN_LS_downstream_pre_cx_timeout);
	inspect_done(c, ARN_TLS_HELLO_NOT_TLS, hc->lsn->continue_on_listener_filters_timeout);
}

/*
 * The inspection ended with @p st: choose the chain as Envoy's tls_inspector
 * makes filter chain matching see it (transport_protocol "tls" with the SNI
 * and ALPN, or "raw_buffer") and open the connection on it; @p go false (a
 * ClientHello too large, or the timeout without continuing) closes it.
 */
static void inspect_done(struct http_h1_conn *c, enum arn_tls_hello_status st, bool go)
{
	struct http_conn *hc = &c->c;
	struct arn_tcp_conn *tc = hc->tc;
	const struct arn_cfg_listener *l = hc->lsn;
	c->inspecting = false;
	http_timer_cancel(&hc->idle_timer);
	hc->idle_timer.fn = conn_idle_timeout;
	const struct arn_tls_hello *h = arn_tls_hello_result(&c->hello);
	const char *alpn[ARN_TLS_HELLO_MAX_ALPN];
	uint32_t laddr, raddr;
	uint16_t lport, rport;
	arn_tcp_endpoints(tc, &laddr, &lport, &raddr, &rport);
	uint32_t direct = raddr;
	if (c->pp_have) { /* Envoy matches chains on the restored addresses */
		laddr = c->pp_addrs.laddr;
		lport = c->pp_addrs.lport;
		raddr = c->pp_addrs.raddr;
		rport = c->pp_addrs.rport;
	}
	struct arn_cfg_fc_input in = {
	    .dst_addr = laddr,
	    .dst_port = lport,
	    .src_addr = raddr,
	    .src_port = rport,
	    .direct_src_addr = direct,
	    .transport_protocol = st == ARN_TLS_HELLO_DONE ? "tls" : "raw_buffer",
	};
	if (st == ARN_TLS_HELLO_DONE) {
		if (h->has_sni) {
			in.server_name = h->sni;
			in.server_name_len = h->sni_len;
		}
		for (unsigned i = 0; i < h->n_alpn; i++)
			alpn[i] = arn_tls_hello_alpn(h, i);
		in.alpn = alpn;
		in.n_alpn = h->n_alpn;
	}
	const struct arn_cfg_filter_chain *fc = go ? arn_cfg_filter_chain_select(l, &in) : NULL;
	int rc = go ? conn_open(hc->w, tc, c, l, fc) : -ECONNABORTED;
	if (rc == 0)
		return;
	/* refused: nothing was answered; on_close frees the block */
	hc->state = HTTP_DC_CLOSED;
	arn_tcp_rx_consume(tc, arn_tcp_rx_pending(tc));
	arn_tcp_close(tc);
}

/* Feed the PROXY header's new bytes (consumed), then the ClientHello's
 * (TCP's queue from where the parser stopped; nothing is consumed: the
 * handshake reads them again). */
static void inspect_data(struct http_h1_conn *c, struct rte_mbuf *head)
{
	struct arn_tcp_conn *tc = c->c.tc;
	uint32_t hdr = 0;
	if (c->pp_reading) {
		int r = pp_data(c, head, &hdr);
		if (r < 0)
			return;
		if (r == 0 || !c->c.lsn->tls_inspector) {
			arn_tcp_rx_consume(tc, hdr);
			c->pp_taken += hdr;
			if (r == 1)
				inspect_done(c, ARN_TLS_HELLO_NOT_TLS, true); /* raw_buffer */
			return;
		}
	}
	/* the ClientHello after the header: in the same chain, past it */
	uint32_t skip = hdr + arn_tls_hello_fed(&c->hello);
	enum arn_tls_hello_status st = ARN_TLS_HELLO_AGAIN;
	for (struct rte_mbuf *m = head; m && st == ARN_TLS_HELLO_AGAIN; m = m->next) {
		if (skip >= m->data_len) {
			skip -= m->data_len;
			continue;
		}
		st = arn_tls_hello_parse(&c->hello, rte_pktmbuf_mtod_offset(m, char *, skip),
					 m->data_len - skip);
		skip = 0;
	}
	if (hdr) { /* head is not read after this */
		arn_tcp_rx_consume(tc, hdr);
		c->pp_taken += hdr;
	}
	if (st == ARN_TLS_HELLO_AGAIN && c->dn.peer.eof)
		st = ARN_TLS_HELLO_NOT_TLS; /* the client ended before a whole hello */
	if (st != ARN_TLS_HELLO_AGAIN)
		inspect_done(c, st, st != ARN_TLS_HELLO_TOO_LARGE);
}

/* A listener with tls_inspector: the connection waits in a block of its
 * own, without a chain, until its first bytes say whether it is TLS and
 * for which name. */
static int inspect_start(struct http_worker *w, struct arn_tcp_conn *tc,
			 const struct arn_cfg_listener *l)
{
	struct http_h1_conn *c = conn_alloc(w, tc);
	if (!c) {
		struct http_listener_rt *lrt = http_rt_listener(l->addr, l->port);
		if (lrt)
			arn_stats_inc(lrt->stats, w->slot, ARN_LS_downstream_cx_overload_reject);
		return -ENOBUFS;
	}
	struct http_conn *hc = &c->c;
	arn_cfg_pin(l);
	hc->lsn = l;
	hc->id = ((uint64_t)w->idx << 48) | ++w->next_conn_id;
	c->inspecting = true;
	arn_tls_hello_init(&c->hello, 0);
	c->pp_reading = l->proxy_protocol;
	arn_pp_init(&c->pp);
	hc->idle_timer.fn = inspect_timeout;
	if (l->listener_filters_timeout_ms)
		http_timer_arm(w, &hc->idle_timer, l->listener_filters_timeout_ms);
	http_cx_take(w, &hc->cx_adm);
	arn_tcp_set_user(tc, c);
	return 0;
}

static int dc_accept(struct arn_tcp_conn *tc, void *luser)
{
	struct http_worker *w = luser;
	uint32_t laddr, raddr;
	uint16_t lport, rport;
	arn_tcp_endpoints(tc, &laddr, &lport, &raddr, &rport);
	const struct arn_cfg_gen *g = w->store ? arn_config_gen(w->store) : NULL;
	const struct arn_cfg_listener *l = g ? arn_cfg_listener_find(g, laddr, lport) : NULL;
	if (!l)
		return -ENOENT;
	/* the connection limits first, as Envoy: over one, reset it before a
	 * listener filter or a block is spent on it */
	struct http_cx_adm adm;
	int rc = http_cx_admit(w, l, &adm);
	if (rc != 0)
		return rc;
	/* socket_options' TCP keepalive, as Linux's accepted sockets inherit it */
	if (l->keepalive)
		arn_tcp_set_keepalive(tc, l->keepalive_time_s, l->keepalive_intvl_s,
				      l->keepalive_probes);
	/* the block that keeps the connection takes adm (http_cx_take) */
	w->cx_pending = &adm;
	if (l->tls_inspector || l->proxy_protocol) {
		rc = inspect_start(w, tc, l);
	} else {
		struct arn_cfg_fc_input in = {
		    .dst_addr = laddr,
		    .dst_port = lport,
		    .src_addr = raddr,
		    .src_port = rport,
		    .transport_protocol = "raw_buffer",
		};
		rc = conn_open(w, tc, NULL, l, arn_cfg_filter_chain_select(l, &in));
	}
	w->cx_pending = NULL;
	http_cx_release(&adm); /* refused: nothing took it */
	return rc;
}

static void dc_data(struct arn_tcp_conn *tc, struct rte_mbuf *head, uint32_t len)
{
	struct http_h1_conn *c = arn_tcp_user(tc);
	if (!c)
		return;
	if (c->inspecting) {
		inspect_data(c, head);
		if (c->inspecting || c->c.state != HTTP_DC_OPEN)
			return;
	}
	if (c->c.state != HTTP_DC_OPEN) {
		arn_tcp_rx_consume(tc, len);
		return;
	}
	c->c.st.last_activity_ms = c->c.w->now_ms;
	uint32_t deny_ms;
	if (c->c.l4_rbac_pending && http_l4_first_byte(&c->c, &deny_ms) != 0) {
		/* network RBAC denied it: read nothing more, close after delay_deny */
		arn_tcp_rx_consume(tc, len);
		c->c.state = HTTP_DC_CLOSING;
		http_timer_arm(c->c.w, &c->c.idle_timer, deny_ms ? deny_ms : 1);
		return;
	}
	conn_run(&c->c);
}

static void dc_eof(struct arn_tcp_conn *tc)
{
	struct http_h1_conn *c = arn_tcp_user(tc);
	if (!c)
		return;
	c->dn.peer.eof = true;
	if (c->inspecting) {
		if (c->pp_reading)
			pp_count(&c->c, ARN_PPS_eof);
		inspect_done(c, ARN_TLS_HELLO_NOT_TLS, false); /* no hello, and no more */
		return;
	}
	http_tp_eof(c->dn.tp, tc);
	conn_run(&c->c);
}

static void dc_writable(struct arn_tcp_conn *tc)
{
	struct http_h1_conn *c = arn_tcp_user(tc);
	if (!c)
		return;
	http_tp_writable(c->dn.tp, tc);
	conn_run(&c->c);
}

static void dc_closed(struct arn_tcp_conn *tc, int reason)
{
	struct http_h1_conn *c = arn_tcp_user(tc);
	if (!c)
		return;
	struct http_conn *hc = &c->c;
	arn_tcp_set_user(tc, NULL);
	ARN_DEBUG(HTTP, "connection %llx: closed (%d), state %d", (unsigned long long)hc->id,
		  reason, hc->state);
	hc->tc = NULL;
	c->dn.tc = NULL;
	c->tls.tc = NULL;
	/* conn_abort() closed it: our reset, not the client's going away */
	bool remote = !c->aborted && (reason == 0 || reason == -ECONNRESET);
	hc->state = HTTP_DC_CLOSED;
	if (remote)
		HTTP_INC(hc, downstream_cx_destroy_remote);
	else
		HTTP_INC(hc, downstream_cx_destroy_local);
	if ((hc->st.state & HTTP_S_ACTIVE) && !(hc->st.state & HTTP_S_RESP_DONE)) {
		HTTP_INC(hc, downstream_cx_destroy_active_rq);
		if (remote) {
			/* as Envoy flags a request whose client went away */
			hc->st.flags |= ARN_RF_BIT(DOWNSTREAM_CONNECTION_TERMINATION);
			HTTP_INC(hc, downstream_rq_rx_reset);
		}
	}
	if (c->in_run) {
		c->dead = true;
		return;
	}
	conn_release(c);
}

const struct arn_tcp_ops http_dc_ops = {
    .on_accept = dc_accept,
    .on_data = dc_data,
    .on_eof = dc_eof,
    .on_writable = dc_writable,
    .on_close = dc_closed,
};

void http_conns_shutdown(struct http_worker *w)
{
	static const struct arn_tcp_ops none = {0};
	for (uint32_t i = 0; i < w->n_conns; i++) {
		struct http_h1_conn *c = &w->conns[i];
		struct http_conn *hc = &c->c;
		if (!hc->tc || c->is_h2_stream)
			continue; /* HTTP/2 streams go with their connection */
		struct arn_tcp_conn *tc = hc->tc;
		arn_tcp_set_ops(tc, &none);
		arn_tcp_set_user(tc, NULL);
		arn_tcp_abort(tc);
		hc->tc = NULL;
		c->dn.tc = NULL;
		c->tls.tc = NULL;
		hc->state = HTTP_DC_CLOSED;
		conn_release(c);
	}
}
