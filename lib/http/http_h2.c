/*
 * Downstream HTTP/2 (http_h2.h): the nghttp2 session of a client
 * connection, its streams as connection blocks of their own, and the
 * codec (http_codec_h2) through which each stream's connection manager
 * reads its request and writes its response.
 *
 * nghttp2's callbacks only record what arrived (a stream's head, body
 * bytes, its end or reset) in the stream's block; the streams are then
 * stepped by the connection's run, outside any callback, so the stream
 * layer is never entered from inside nghttp2.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>
#include <rte_mbuf.h>

#include "arn_config.h"
#include "arn_log.h"
#include "arn_tcp.h"
#include "http_conn_blk.h"
#include "http_h2.h"
#include "http_h2_mem.h"
#include "http_hcm.h"
#include "http_local.h"
#include "http_drain.h"
#include "http_stream.h"
#include "http_upstream.h"

struct http_h2_conn {
	struct http_h1_conn *c; /* the connection's block */
	nghttp2_session *s;
	size_t mem; /* bytes nghttp2 holds (the counting allocator) */
	struct http_h1_conn *streams;
	uint32_t n_streams;
	uint32_t max_hdr_bytes, max_hdrs;
	uint8_t underscores; /* headers_with_underscores_action (ARN_CFG_UNDERSCORES_*) */
	/* streams opened, and those the client reset before their response
	 * was complete (rapid reset, CVE-2023-44487: Envoy's premature
	 * resets) */
	uint32_t n_opened, n_premature;
	/* Envoy's inbound flood checks (http2_protocol_options) */
	uint32_t empty_run, n_priority, n_window_update, n_data_sent;
	uint32_t max_empty, max_priority, max_wu;
	/* the header block being received: its frames after the first
	 * (CONTINUATION) and its bytes on the wire */
	uint32_t blk_frames, blk_bytes;
	bool fatal;		     /* the session failed: flush what it queued (GOAWAY), close */
	bool goaway;		     /* a graceful GOAWAY went out: no new streams */
	struct http_h2_keepalive ka; /* connection_keepalive (keepalive_ops) */
};

/* ---- helpers ------------------------------------------------------------------------------- */

static struct http_h1_conn *blk(struct http_conn *hc)
{
	return (struct http_h1_conn *)(void *)hc;
}

static struct http_h2_stream *h2s(struct http_peer *p)
{
	return (struct http_h2_stream *)(void *)((char *)p - offsetof(struct http_h2_stream, peer));
}

static struct http_h1_conn *blk_of_stream(struct http_h2_stream *x)
{
	return (struct http_h1_conn *)(void *)((char *)x - offsetof(struct http_h1_conn, h2s));
}

static struct http_h1_conn *stream_of(nghttp2_session *s, int32_t id)
{
	return id > 0 ? nghttp2_session_get_stream_user_data(s, id) : NULL;
}

/* http2.* (struct http_hcm_rt's h2stats) */
#define H2S(hc) ((hc)->hrt ? (hc)->hrt->h2stats : NULL)
#define H2_STAT(hc, name)                                                                          \
	do {                                                                                       \
		if (H2S(hc))                                                                       \
			arn_stats_inc(H2S(hc), (hc)->w->slot, ARN_H2_##name);                      \
	} while (0)
#define H2_GAUGE(hc, name, d)                                                                      \
	do {                                                                                       \
		if (H2S(hc))                                                                       \
			arn_stats_gauge_add(H2S(hc), (hc)->w->slot, ARN_H2_##name, (d));           \
	} while (0)
#define H2_INC(h, name) H2_STAT(&(h)->c->c, name)

/* Give @p n received bytes back to the client's windows. */
static void window_give(struct http_h2_stream *x, uint32_t n)
{
	if (!n || !x->h2->s)
		return;
	x->unconsumed -= n;
	nghttp2_session_consume_connection(x->h2->s, n);
	if (!x->closed)
		nghttp2_session_consume_stream(x->h2->s, x->id, n);
}

/* ---- streams ------------------------------------------------------------------------------- */

static void stream_op_run(struct http_conn *hc)
{
	struct http_conn *pc = &blk(hc)->h2s.h2->c->c;
	pc->ops->run(pc);
}

/* The stream's connection manager wants the "connection" closed after
 * this response: for a stream that is the stream's end, which the run
 * sees once the response is out. */
static void stream_op_close(struct http_conn *hc)
{
	hc->close_after = true;
	blk(hc)->h2s.h2->c->c.again = true;
}

/* RST_STREAM: the response cannot be completed properly. */
static void stream_op_reset(struct http_conn *hc, int line)
{
	struct http_h2_stream *x = &blk(hc)->h2s;
	if (hc->state == HTTP_DC_CLOSED)
		return;
	ARN_DEBUG(HTTP, "connection %llx stream %d: reset (line %d)", (unsigned long long)hc->id,
		  x->id, line);
	HTTP_INC(hc, downstream_rq_tx_reset);
	hc->state = HTTP_DC_CLOSED;
	if (!x->closed && x->h2->s) {
		nghttp2_submit_rst_stream(x->h2->s, NGHTTP2_FLAG_NONE, x->id,
					  NGHTTP2_INTERNAL_ERROR);
	}
	x->peer.queued = false;
	x->h2->c->c.again = true;
}

static const struct http_conn_ops stream_ops = {
    .run = stream_op_run,
    .close = stream_op_close,
    .reset = stream_op_reset,
    .resume_head = http_hcm_resume_head,
    .resume_resp_head = http_hcm_resume_resp_head,
    .resp_step = http_resp_step,
    .write_head = http_hcm_write_head,
    .keep_resp_end = http_hcm_resp_keep_end,
};

/* A new stream (HEADERS opening it): a block and a request buffer from the
 * worker's pools. @return NULL when either is exhausted, or when requests
 * wait for a buffer: one free then is owed to the oldest of them (first
 * come, first served, http_res_take), not to a stream opening before the
 * poll hands it on (the stream is refused). */
static struct http_h1_conn *stream_new(struct http_h2_conn *h, int32_t id)
{
	struct http_conn *pc = &h->c->c;
	struct http_worker *w = pc->w;
	if (!w->conn_free || !w->res_free || w->res_wait_head)
		return NULL;
	struct http_conn *hc = w->conn_free;
	w->conn_free = hc->next;
	struct http_res *r = http_res_get(w);
	struct http_h1_conn *c = blk(hc);
	memset(c, 0, sizeof(*c));
	c->is_h2_stream = true;
	hc->w = w;
	hc->ops = &stream_ops;
	hc->tc = pc->tc;
	hc->tls = pc->tls;
	hc->lsn = pc->lsn;
	hc->hcm = pc->hcm;
	hc->hrt = pc->hrt;
	hc->lrt = pc->lrt;
	hc->laddr = pc->laddr;
	hc->raddr = pc->raddr;
	hc->draddr = pc->draddr;
	hc->sladdr = pc->sladdr;
	hc->slport = pc->slport;
	hc->drport = pc->drport;
	hc->lport = pc->lport;
	hc->rport = pc->rport;
	hc->id = pc->id;
	hc->open_tsc = pc->open_tsc;
	hc->l4_fc = pc->l4_fc;
	hc->fc = pc->fc;
	hc->state = HTTP_DC_OPEN;
	hc->drain_counted = true; /* a drain is counted once, by the connection (goaway) */
	struct http_h2_stream *x = &c->h2s;
	x->peer.codec = &http_codec_h2;
	x->h2 = h;
	x->id = id;
	hc->dn = &x->peer;
	http_stream_init(&hc->st, hc);
	http_stream_take(&hc->st, r);
	http_stream_started(&hc->st);
	hc->st.version = 20;
	x->next = h->streams;
	if (h->streams)
		h->streams->h2s.prev = c;
	h->streams = c;
	h->n_streams++;
	h->n_opened++;
	H2_GAUGE(pc, streams_active, 1);
	http_timer_cancel(&pc->idle_timer);
	return c;
}

/* Give the stream's block back: its stream ended (or is cut, @p cut: the
 * client reset it or the connection went). */
static void stream_free(struct http_h1_conn *c, bool cut)
{
	struct http_conn *hc = &c->c;
	struct http_stream *st = &hc->st;
	struct http_h2_stream *x = &c->h2s;
	struct http_h2_conn *h = x->h2;
	struct http_worker *w = hc->w;
	http_stream_timers_cancel(st);
	if ((st->state & HTTP_S_ACTIVE) || st->res || st->rt || st->up ||
	    (st->state & HTTP_S_PENDING)) {
		if (cut && (st->state & HTTP_S_ACTIVE) && !(st->state & HTTP_S_RESP_DONE))
			st->flags |= ARN_RF_BIT(DOWNSTREAM_CONNECTION_TERMINATION);
		/* A stream that ended gives its upstream connection back to
		 * the pool (http_stream_end reuses it when the exchange is
		 * complete, and closes it otherwise), as an HTTP/1.1
		 * connection's request does. Detaching it first closed the
		 * upstream connection after every HTTP/2 request: each one
		 * paid a new connection to the upstream. */
		if (cut)
			http_up_detach(st);
		http_stream_end(st);
		http_res_put(w, st->res);
		st->res = NULL;
	}
	for (unsigned i = 0; i < x->n_rc; i++)
		nghttp2_rcbuf_decref(x->rc[i]);
	x->n_rc = 0;
	if (x->trl) {
		for (unsigned i = 0; i < x->trl->n_rc; i++)
			nghttp2_rcbuf_decref(x->trl->rc[i]);
		http_trl_put(w, x->trl);
		x->trl = NULL;
	}
	uint32_t left = x->unconsumed;
	http_in_free(&x->body);
	http_in_free(&x->reply);
	if (x->trailers)
		rte_pktmbuf_free(x->trailers);
	x->trailers = NULL;
	if (h->s) {
		if (left)
			window_give(x, left);
		if (!x->closed) {
			/* the response is complete but the request is not:
			 * RFC 9113 8.1, the client stops sending it. After
			 * stream_op_reset's RST_STREAM (not sent yet, so the
			 * stream is not closed) this submits a second one;
			 * nghttp2 sends only the first (test_h2_request_body_
			 * no_mbuf counts them on the wire). */
			nghttp2_submit_rst_stream(h->s, NGHTTP2_FLAG_NONE, x->id,
						  (st->state & HTTP_S_RESP_DONE) || !cut
						      ? NGHTTP2_NO_ERROR
						      : NGHTTP2_CANCEL);
			nghttp2_session_set_stream_user_data(h->s, x->id, NULL);
		}
	}
	if (x->prev)
		x->prev->h2s.next = x->next;
	else
		h->streams = x->next;
	if (x->next)
		x->next->h2s.prev = x->prev;
	h->n_streams--;
	H2_GAUGE(&h->c->c, streams_active, -1);
	c->is_h2_stream = false;
	hc->tc = NULL;
	hc->state = HTTP_DC_CLOSED;
	hc->next = w->conn_free;
	w->conn_free = hc;
	h->c->c.again = true;
}

/*
 * Rapid reset (CVE-2023-44487): a client that opens streams and resets them
 * before their response makes the proxy start work (routing, upstream
 * connections) it never pays for. As Envoy's mitigation: once it has
 * opened at least HTTP_H2_PREMATURE_MIN streams and reset half of them
 * early, the connection is closed (GOAWAY ENHANCE_YOUR_CALM), counted in
 * downstream_rq_too_many_premature_resets. (nghttp2's own RST_STREAM rate
 * limit is set too, but Debian's 1.52 does not trip on this pattern.)
 */
#define HTTP_H2_PREMATURE_MIN 100

static void premature_reset(struct http_h2_conn *h)
{
	h->n_premature++;
	if (h->fatal || h->n_opened < HTTP_H2_PREMATURE_MIN || h->n_premature * 2 < h->n_opened)
		return;
	HTTP_INC(&h->c->c, downstream_rq_too_many_premature_resets);
	nghttp2_session_terminate_session(h->s, NGHTTP2_ENHANCE_YOUR_CALM);
	h->fatal = true;
}

/* Step one stream until nothing changes (bounded: what is left is for the
 * connection's next round). */
static void stream_run(struct http_h1_conn *c)
{
	struct http_conn *hc = &c->c;
	struct http_stream *st = &hc->st;
	struct http_h2_stream *x = &c->h2s;
	for (int round = 0; round < 8; round++) {
		hc->again = false;
		if (x->body_lost && hc->state != HTTP_DC_CLOSED)
			stream_op_reset(hc, __LINE__); /* part of its body was lost */
		if (hc->state == HTTP_DC_CLOSED) {
			stream_free(c, false); /* we reset it */
			return;
		}
		if (st->up && !(st->state & HTTP_S_LOCAL))
			http_resp_step(st);
		if (hc->state == HTTP_DC_CLOSED)
			continue;
		bool flushed = !x->peer.queued;
		if ((st->state & HTTP_S_ACTIVE) && flushed && (st->state & HTTP_S_RESP_DONE) &&
		    ((st->state & HTTP_S_REQ_DONE) || hc->close_after) &&
		    !(st->up && http_up_peer(st->up)->queued)) {
			stream_free(c, false);
			return;
		}
		if (x->closed && x->overflow && !x->reset_in) {
			/* nghttp2 reset it (INTERNAL_ERROR) because its header
			 * list was refused: the proxy's reset, as Envoy counts
			 * it. A head refused started no work, so it is no
			 * premature reset, as a request answered 431 is not.
			 * Trailers refused come after the work started, as a
			 * client's reset would: counted, or a rapid reset could
			 * hide behind them. */
			HTTP_INC(hc, downstream_rq_tx_reset);
			if (x->head_in && !(st->state & HTTP_S_RESP_DONE))
				premature_reset(x->h2);
			stream_free(c, true);
			return;
		}
		if (x->closed && !(st->state & HTTP_S_RESP_DONE)) {
			/* the client reset the stream (or the session closed
			 * it) before its response was complete. RST_STREAM's
			 * code is the client's to choose: NO_ERROR resets as
			 * CANCEL does (Envoy's remote reset), or a rapid reset
			 * with it would never count as premature. */
			bool reset = x->reset_in || x->close_error != NGHTTP2_NO_ERROR;
			if (reset && (st->state & HTTP_S_ACTIVE))
				HTTP_INC(hc, downstream_rq_rx_reset);
			if (reset)
				premature_reset(x->h2);
			stream_free(c, true);
			return;
		}
		if (!(st->state & HTTP_S_ACTIVE) && hc->close_after) {
			stream_free(c, true);
			return;
		}
		http_req_step(st);
		if (!hc->again)
			return;
	}
	x->h2->c->c.again = true;
}

/* ---- connection_keepalive ------------------------------------------------------------------ */

static void goaway(struct http_h2_conn *h, int32_t last);

/*
 * Envoy's server codec keepalive (http2_protocol_options.connection_
 * keepalive of a connection manager): a PING to the client every interval
 * (plus a random jitter of up to interval_jitter % of it), from the
 * connection's start, armed again once its ACK came. A PING whose ACK
 * does not come within timeout closes the connection (GOAWAY, then FIN;
 * its streams are cut), counted in http2.keepalive_timeout: a client that
 * vanished without a FIN (NAT state lost, a phone gone off the network)
 * does not hold its connection, and its streams' upstream work, until the
 * idle timeout. Any bytes from the client while waiting put the deadline
 * off by timeout, as upstream (http_upstream_h2.c): an ACK queued behind a
 * large request body does not close a connection that is working.
 */

static struct http_h2_conn *ka_conn(struct http_h2_keepalive *ka)
{
	return (struct http_h2_conn *)(void *)((char *)ka - offsetof(struct http_h2_conn, ka));
}

static bool keepalive_live(const struct http_h2_conn *h)
{
	const struct http_conn *pc = &h->c->c;
	return h->s && !h->fatal && pc->tc && pc->state == HTTP_DC_OPEN;
}

static nghttp2_session *keepalive_session(struct http_h2_keepalive *ka)
{
	struct http_h2_conn *h = ka_conn(ka);
	return keepalive_live(h) ? h->s : NULL;
}

/* A PING is queued: a run sends it. */
static void keepalive_sent(struct http_h2_keepalive *ka)
{
	struct http_conn *pc = &ka_conn(ka)->c->c;
	pc->ops->run(pc);
}

static void keepalive_close(struct http_h2_keepalive *ka)
{
	struct http_h2_conn *h = ka_conn(ka);
	if (!keepalive_live(h))
		return;
	struct http_conn *pc = &h->c->c;
	ARN_DEBUG(HTTP, "connection %llx: HTTP/2: no PING ACK within %u ms: closing",
		  (unsigned long long)pc->id, ka->timeout_ms);
	H2_INC(h, keepalive_timeout);
	http_h2_keepalive_stop(ka);
	/* fatal: the run flushes the GOAWAY (unless one went already) and
	 * closes; the streams still open are cut */
	goaway(h, 0);
	h->fatal = true;
	pc->ops->run(pc);
}

static const struct http_h2_keepalive_ops keepalive_ops = {
    .session = keepalive_session,
    .sent = keepalive_sent,
    .close = keepalive_close,
};

/* ---- nghttp2's callbacks ------------------------------------------------------------------- */

static int on_begin_headers(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
	struct http_h2_conn *h = ud;
	if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	struct http_h1_conn *c = h->goaway ? NULL : stream_new(h, f->hd.stream_id);
	if (!c) {
		/* no block or request buffer free on this worker: refused,
		 * the client may retry it (RFC 9113 8.7) */
		nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, f->hd.stream_id,
					  NGHTTP2_REFUSED_STREAM);
		H2_INC(h, stream_refused_errors);
		return 0;
	}
	nghttp2_session_set_stream_user_data(s, f->hd.stream_id, c);
	/* max_requests_per_connection: the last one is taken, then GOAWAY */
	const struct arn_cfg_hcm *hcm = h->c->c.hcm;
	if (hcm && hcm->max_requests_per_connection &&
	    h->n_opened >= hcm->max_requests_per_connection)
		goaway(h, f->hd.stream_id);
	struct arn_h1_msg *m = &c->c.st.req.m;
	m->version = 20;
	m->host_idx = -1;
	m->upgrade_idx = -1;
	m->flags = ARN_H1_F_KEEP_ALIVE;
	return 0;
}

static int keep(struct http_h2_stream *x, nghttp2_rcbuf *b)
{
	if (__builtin_expect(x->n_rc < HTTP_H2_RCBUFS, 1)) {
		nghttp2_rcbuf_incref(b);
		x->rc[x->n_rc++] = b;
		return 0;
	}
	/* trailers after a large head: in its trailer array */
	struct http_trl *t = x->trl;
	if (!t || t->n_rc >= sizeof(t->rc) / sizeof(t->rc[0]))
		return -1;
	nghttp2_rcbuf_incref(b);
	t->rc[t->n_rc++] = b;
	return 0;
}

/* The stream's trailer array, once its trailers outgrow the slots the
 * head left or their references the stream's own (rc): the trailers so
 * far move there. @return false when the worker has none free: the
 * trailers are refused as ones over max_headers_count are (the stream is
 * reset), counted in trailer_slots_exhausted. Out of line: rare. */
static __attribute__((noinline)) bool trailers_grow(struct http_h1_conn *c)
{
	struct http_h2_stream *x = &c->h2s;
	if (!x->trl)
		x->trl = http_trl_get(c->c.w);
	if (!x->trl) {
		HTTP_INC(&c->c, trailer_slots_exhausted);
		x->overflow = true; /* the proxy's reset, not the client's (stream_run) */
		return false;
	}
	arn_h1_msg_set_trailers(&c->c.st.req.m, x->trl->f, HTTP_MAX_HDRS);
	return true;
}

/* Refuse the stream: its header list is over max_request_headers_kb or
 * max_headers_count (Envoy's http2.header_overflow: the stream is reset). */
static int header_overflow(struct http_h2_conn *h, struct http_h2_stream *x)
{
	x->overflow = true; /* the proxy's reset, not the client's (stream_run) */
	H2_INC(h, header_overflow);
	return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *f, nghttp2_rcbuf *name,
		     nghttp2_rcbuf *value, uint8_t flags, void *ud)
{
	(void)flags;
	struct http_h2_conn *h = ud;
	struct http_h1_conn *c = stream_of(s, f->hd.stream_id);
	if (!c || f->hd.type != NGHTTP2_HEADERS)
		return 0;
	struct http_h2_stream *x = &c->h2s;
	struct arn_h1_msg *m = &c->c.st.req.m;
	nghttp2_vec n = nghttp2_rcbuf_get_buf(name), v = nghttp2_rcbuf_get_buf(value);
	/* headers_with_underscores_action, as Envoy's HTTP/2 codec: a field
	 * dropped, or the stream reset (head and trailers alike) */
	if (__builtin_expect(h->underscores, 0) && n.len && memchr(n.base, '_', n.len)) {
		if (h->underscores == ARN_CFG_UNDERSCORES_DROP) {
			H2_INC(h, dropped_headers_with_underscores);
			return 0;
		}
		H2_INC(h, requests_rejected_with_underscores_in_headers);
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	}
	if (x->head_in && !(m->flags & ARN_H1_F_TRAILERS)) {
		/* the first trailer: the trailer block is bounded on its own
		 * by max_request_headers_kb and max_headers_count, as Envoy
		 * bounds each header map; it starts in the slots the head
		 * left (trailers_grow when they are too few) */
		m->flags |= ARN_H1_F_TRAILERS;
		m->trailers = m->hdrs + m->n_hdrs;
		m->trailer_cap = (uint16_t)(m->hdr_cap - m->n_hdrs);
		x->hdr_bytes = 0;
		H2_INC(h, trailers);
	}
	x->hdr_bytes += (uint32_t)(n.len + v.len + 32);
	if (x->hdr_bytes > h->max_hdr_bytes)
		return header_overflow(h, x);
	if (x->head_in) {
		/* trailers, for the upstream's codec (encode_trailers at the
		 * request's end). nghttp2 refused pseudo and
		 * connection-specific fields in them (RFC 9113 8.1, 8.2.2);
		 * what RFC 9110 6.5.1 keeps out of trailers is dropped as
		 * they are written */
		if (m->n_trailers >= h->max_hdrs)
			return header_overflow(h, x);
		if ((m->n_trailers >= m->trailer_cap || x->n_rc + 2u > HTTP_H2_RCBUFS) && !x->trl &&
		    !trailers_grow(c))
			return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
		if (m->n_trailers >= m->trailer_cap || keep(x, name) || keep(x, value))
			return header_overflow(h, x);
	} else if (keep(x, name) || keep(x, value)) {
		return header_overflow(h, x);
	}
	const char *np = (const char *)n.base, *vp = (const char *)v.base;
	if (x->head_in) {
		m->trailers[m->n_trailers] = (struct arn_h1_header){
		    .name = np,
		    .name_len = (uint16_t)n.len,
		    .value = vp,
		    .value_len = (uint32_t)v.len,
		    .id = (uint16_t)arn_h1_hdr_lookup(np, n.len),
		};
		m->n_trailers++;
		return 0;
	}
	struct arn_h1_slice vs = {vp, (uint32_t)v.len};
	if (n.len && np[0] == ':') {
		/* nghttp2 checked the pseudo-headers (RFC 9113 8.3.1) */
		if (n.len == 7 && memcmp(np, ":method", 7) == 0) {
			m->method_name = vs;
			m->method = (uint8_t)arn_h1_method_lookup(vp, v.len);
			if (m->method == ARN_H1_M_NONE)
				m->method = ARN_H1_M_OTHER;
		} else if (n.len == 5 && memcmp(np, ":path", 5) == 0) {
			m->path = vs;
			m->target = vs;
			m->target_form =
			    v.len == 1 && vp[0] == '*' ? ARN_H1_TF_ASTERISK : ARN_H1_TF_ORIGIN;
			if (memchr(vp, '#', v.len))
				m->flags |= ARN_H1_F_FRAGMENT;
			/* an HTTP/1.1 request-target is visible ASCII (RFC 9112
			 * 3.2), all the HTTP/1 parser takes: nghttp2 refused the
			 * controls but lets 0x80-0xff by, which would go on raw
			 * in an HTTP/1.1 upstream's request line */
			for (size_t i = 0; i < v.len; i++)
				if ((unsigned char)vp[i] >= 0x80) {
					x->bad = true;
					break;
				}
		} else if (n.len == 10 && memcmp(np, ":authority", 10) == 0) {
			m->authority = vs;
		} else if (n.len == 9 && memcmp(np, ":protocol", 9) == 0) {
			x->bad = true; /* extended CONNECT is not served */
		}
		return 0;
	}
	if (m->n_hdrs >= h->max_hdrs || m->n_hdrs + 1u >= m->hdr_cap)
		return header_overflow(h, x);
	struct arn_h1_header *hd = &m->hdrs[m->n_hdrs];
	*hd = (struct arn_h1_header){
	    .name = np,
	    .name_len = (uint16_t)n.len,
	    .value = vp,
	    .value_len = (uint32_t)v.len,
	    .id = (uint16_t)arn_h1_hdr_lookup(np, n.len),
	};
	if (arn_h1_proxy_field(np, n.len, hd->id))
		m->flags |= ARN_H1_F_PROXY_FIELDS;
	if (hd->id == ARN_H1_H_HOST) {
		if (m->host_idx >= 0)
			return 0; /* one Host: the first (or :authority's) */
		m->host_idx = (int16_t)m->n_hdrs;
	} else if (hd->id == ARN_H1_H_CONTENT_LENGTH) {
		uint64_t cl = 0;
		for (size_t i = 0; i < v.len; i++)
			cl = cl * 10 + (uint64_t)(vp[i] - '0'); /* digits: nghttp2 checked */
		m->flags |= ARN_H1_F_CONTENT_LENGTH;
		m->content_length = cl;
	} else if (hd->id == ARN_H1_H_EXPECT) {
		if (v.len == 12 && arn_h1_eq_nocase(vp, 12, "100-continue", 12))
			m->flags |= ARN_H1_F_EXPECT_CONTINUE;
	}
	m->n_hdrs++;
	return 0;
}

/* RFC 9113 8.2.3: HTTP/2 may split Cookie into several fields; toward
 * HTTP/1.1 they are one, joined with "; ". The joined value goes in the
 * stream's text (its first use, before any edit); one that does not fit
 * leaves the fields as they came. */
static void cookies_join(struct http_stream *st, struct arn_h1_msg *m)
{
	int first = -1;
	unsigned n = 0;
	size_t len = 0;
	for (unsigned i = 0; i < m->n_hdrs; i++)
		if (m->hdrs[i].name_len == 6 && memcmp(m->hdrs[i].name, "cookie", 6) == 0) {
			if (first < 0)
				first = (int)i;
			n++;
			len += m->hdrs[i].value_len + 2;
		}
	if (n < 2 || !st->res || st->text_len + len + 1 > HTTP_TEXT)
		return;
	char *o = st->res->text + st->text_len, *p = o;
	unsigned k = 0;
	for (unsigned i = 0; i < m->n_hdrs; i++) {
		struct arn_h1_header *h = &m->hdrs[i];
		if (h->name_len == 6 && memcmp(h->name, "cookie", 6) == 0) {
			if (p != o) {
				*p++ = ';';
				*p++ = ' ';
			}
			memcpy(p, h->value, h->value_len);
			p += h->value_len;
			if ((int)i != first)
				continue; /* dropped: joined into the first */
		}
		m->hdrs[k++] = *h;
	}
	*p = 0;
	/* indexes moved: host_idx is found again */
	m->n_hdrs = (uint16_t)k;
	m->host_idx = -1;
	for (unsigned i = 0; i < k; i++) {
		if (m->hdrs[i].id == ARN_H1_H_HOST && m->host_idx < 0)
			m->host_idx = (int16_t)i;
		if (m->hdrs[i].name_len == 6 && memcmp(m->hdrs[i].name, "cookie", 6) == 0) {
			m->hdrs[i].value = o;
			m->hdrs[i].value_len = (uint32_t)(p - o);
		}
	}
	st->text_len += (uint32_t)(p - o) + 1;
}

/* The request's head is complete: what HTTP/1 would have parsed. */
static void head_done(struct http_h2_stream *x, struct arn_h1_msg *m, bool end)
{
	x->head_in = true;
	cookies_join(&blk_of_stream(x)->c.st, m);
	if (m->method == ARN_H1_M_CONNECT)
		x->bad = true; /* allow_connect is not supported */
	/* :authority is the Host an HTTP/1.1 upstream gets (RFC 9113 8.3.1) */
	if (m->authority.len) {
		if (m->host_idx >= 0) {
			m->hdrs[m->host_idx].value = m->authority.p;
			m->hdrs[m->host_idx].value_len = m->authority.len;
		} else if (m->n_hdrs < m->hdr_cap) {
			m->host_idx = (int16_t)m->n_hdrs;
			m->hdrs[m->n_hdrs++] = (struct arn_h1_header){
			    .name = "host",
			    .name_len = 4,
			    .value = m->authority.p,
			    .value_len = m->authority.len,
			    .id = ARN_H1_H_HOST,
			};
		}
	} else if (m->host_idx >= 0) {
		m->authority = (struct arn_h1_slice){m->hdrs[m->host_idx].value,
						     m->hdrs[m->host_idx].value_len};
	}
	/* The authority routes the request and is the Host an HTTP/1.1
	 * upstream reads: held to what the HTTP/1 parser takes in Host, a
	 * host and an optional port (RFC 9110 7.2; RFC 9113 8.3.1: no
	 * userinfo). nghttp2's own check lets '@' and any port by. */
	struct arn_h1_slice host;
	int port;
	if (m->authority.len &&
	    arn_h1_authority_split(m->authority.p, m->authority.len, &host, &port) != 0)
		x->bad = true;
	if (end) {
		x->end_in = true;
		m->flags |= ARN_H1_F_NO_BODY;
		if (!(m->flags & ARN_H1_F_CONTENT_LENGTH) &&
		    (m->method == ARN_H1_M_POST || m->method == ARN_H1_M_PUT)) {
			/* an HTTP/1.1 upstream reads a body-less POST as
			 * length 0 only when it says so */
			m->flags |= ARN_H1_F_CONTENT_LENGTH;
			m->content_length = 0;
		}
	} else if (!(m->flags & ARN_H1_F_CONTENT_LENGTH)) {
		m->flags |= ARN_H1_F_CHUNKED; /* re-framed for an HTTP/1.1 upstream */
	}
}

/* A flood the client sends (Envoy's inbound checks): the connection is
 * closed, GOAWAY ENHANCE_YOUR_CALM. */
static int flood(struct http_h2_conn *h, nghttp2_session *s)
{
	h->fatal = true;
	nghttp2_session_terminate_session(s, NGHTTP2_ENHANCE_YOUR_CALM);
	return 0;
}

/*
 * Envoy's inbound flood bounds, with its formulas: consecutive frames with
 * an empty payload (DATA without END_STREAM), PRIORITY frames beyond
 * max_inbound_priority_frames_per_stream for each stream opened (and one
 * more), WINDOW_UPDATE frames beyond max_inbound_window_update_frames_per_
 * data_frame_sent for each DATA frame sent (plus 5). nghttp2 bounds the
 * floods of frames that make it answer (SETTINGS, PING).
 *
 * Empty DATA frames are seen once nghttp2 has them (on_frame_recv: open
 * streams only; DATA on a closed stream is answered by nghttp2 itself).
 * Empty is what the payload carries without its padding, as Envoy counts
 * it: padding costs the client no window (nghttp2 gives it back at once),
 * so a frame of one Pad Length byte is as empty as one of none.
 */
static void empty_data(struct http_h2_conn *h, nghttp2_session *s, const nghttp2_frame *f)
{
	const nghttp2_frame_hd *hd = &f->hd;
	if (hd->length <= f->data.padlen && !(hd->flags & NGHTTP2_FLAG_END_STREAM)) {
		if (++h->empty_run > h->max_empty) {
			H2_INC(h, inbound_empty_frames_flood);
			flood(h, s);
		}
	} else {
		h->empty_run = 0;
	}
}

/*
 * CONTINUATION flood (CVE-2024-27316): a header block that never ends
 * (no END_HEADERS) makes the receiver buffer and decode without a stream
 * to refuse. A block is bounded on the wire, before nghttp2 decodes it,
 * by HTTP_H2_MAX_CONTINUATIONS frames after its HEADERS and by bytes no
 * header list within max_request_headers_kb can need: HPACK's longest
 * Huffman code is 30 bits a byte, so a list of L bytes (RFC 9113 6.5.2's
 * size, 32 a field included) takes under 4 L on the wire, plus padding.
 * Past either, the connection is closed (GOAWAY ENHANCE_YOUR_CALM),
 * counted in http2.header_overflow as a list over the limit is.
 */
static int header_block(struct http_h2_conn *h, nghttp2_session *s, const nghttp2_frame_hd *hd)
{
	if (hd->type == NGHTTP2_HEADERS) {
		h->blk_frames = 0;
		h->blk_bytes = (uint32_t)hd->length;
	} else {
		h->blk_frames++;
		h->blk_bytes += (uint32_t)hd->length;
	}
	if (h->blk_frames > HTTP_H2_MAX_CONTINUATIONS ||
	    (uint64_t)h->blk_bytes > 4ull * h->max_hdr_bytes + 256) {
		H2_INC(h, header_overflow);
		return flood(h, s);
	}
	return 0;
}

/* Every frame's header, those for closed streams too. */
static int on_begin_frame(nghttp2_session *s, const nghttp2_frame_hd *hd, void *ud)
{
	struct http_h2_conn *h = ud;
	if (h->fatal)
		return 0;
	switch (hd->type) {
	case NGHTTP2_DATA:
		break; /* empty_data() */
	case NGHTTP2_HEADERS:
	case NGHTTP2_CONTINUATION:
		h->empty_run = 0;
		return header_block(h, s, hd);
	case NGHTTP2_PRIORITY:
		if (++h->n_priority > (uint64_t)h->max_priority * (1 + h->n_opened)) {
			H2_INC(h, inbound_priority_frames_flood);
			return flood(h, s);
		}
		h->empty_run = 0;
		break;
	case NGHTTP2_WINDOW_UPDATE:
		if (++h->n_window_update > 5 + (uint64_t)h->max_wu * (1 + h->n_data_sent)) {
			H2_INC(h, inbound_window_update_frames_flood);
			return flood(h, s);
		}
		h->empty_run = 0;
		break;
	default:
		h->empty_run = 0;
		break;
	}
	return 0;
}

static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
	struct http_h2_conn *h = ud;
	if (f->hd.type == NGHTTP2_DATA && !h->fatal)
		empty_data(h, s, f);
	if (f->hd.type == NGHTTP2_RST_STREAM) {
		H2_INC(h, rx_reset);
		/* before nghttp2 closes the stream (on_stream_close): a reset
		 * with NO_ERROR is a reset all the same (stream_run) */
		struct http_h1_conn *rc = stream_of(s, f->hd.stream_id);
		if (rc)
			rc->h2s.reset_in = true;
		return 0;
	}
	if (f->hd.type == NGHTTP2_PING && (f->hd.flags & NGHTTP2_FLAG_ACK)) {
		http_h2_keepalive_ack(&h->ka);
		return 0;
	}
	struct http_h1_conn *c = stream_of(s, f->hd.stream_id);
	if (!c)
		return 0;
	struct http_h2_stream *x = &c->h2s;
	bool end = f->hd.flags & NGHTTP2_FLAG_END_STREAM;
	if (f->hd.type == NGHTTP2_HEADERS) {
		if (!x->head_in)
			head_done(x, &c->c.st.req.m, end);
		else if (end)
			x->end_in = true; /* trailers end the request */
	} else if (f->hd.type == NGHTTP2_DATA && end) {
		x->end_in = true;
	}
	return 0;
}

static int on_data_chunk(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data,
			 size_t len, void *ud)
{
	(void)flags;
	struct http_h2_conn *h = ud;
	struct http_h1_conn *c = stream_of(s, id);
	if (!c) {
		nghttp2_session_consume_connection(s, len);
		return 0;
	}
	struct http_h2_stream *x = &c->h2s;
	if (x->body_lost) {
		/* a hole is behind these bytes: they go nowhere */
		nghttp2_session_consume_connection(s, len);
		return 0;
	}
	uint32_t before = x->body.bytes;
	bool all = http_h2_in_copy(h->c->c.w, &x->body, data, len);
	uint32_t kept = x->body.bytes - before; /* a copy cut short keeps its start */
	x->unconsumed += kept;
	if (!all) {
		/* Out of mbufs. nghttp2 consumed the bytes from its input
		 * and counted them against the windows, and it ignores a
		 * callback failure here (only a fatal code or PAUSE stops it):
		 * the body has a hole, so the stream must not go on, or its
		 * upstream would get the rest as if nothing were missing. The
		 * stream is reset (stream_run), what follows it is dropped. */
		x->body_lost = true;
		nghttp2_session_consume_connection(s, len - kept);
		H2_INC(h, rx_body_no_mbuf);
		h->c->c.again = true;
	}
	return 0;
}

static int on_stream_close(nghttp2_session *s, int32_t id, uint32_t error, void *ud)
{
	struct http_h2_conn *h = ud;
	struct http_h1_conn *c = stream_of(s, id);
	if (!c)
		return 0;
	struct http_h2_stream *x = &c->h2s;
	x->closed = true;
	x->close_error = error;
	/* nothing more goes out on it */
	x->out_len = 0;
	http_in_free(&x->reply);
	x->peer.queued = false;
	h->c->c.again = true;
	return 0;
}

static int on_frame_send(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
	struct http_h2_conn *h = ud;
	if (f->hd.type == NGHTTP2_DATA)
		h->n_data_sent++;
	if ((f->hd.type == NGHTTP2_HEADERS || f->hd.type == NGHTTP2_DATA) &&
	    (f->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
		/* the response's last frame is out: the stream may end */
		struct http_h1_conn *c = stream_of(s, f->hd.stream_id);
		if (c) {
			c->h2s.eof_sent = true;
			c->h2s.peer.queued = false;
			h->c->c.again = true;
		}
	}
	/* http2.tx_reset counts RST_STREAM frames as they go out, as Envoy's
	 * (ours, a refused stream's, nghttp2's own; one the session drops
	 * as a second for its stream is not sent, so not counted) */
	if (f->hd.type == NGHTTP2_RST_STREAM)
		H2_INC(h, tx_reset);
	if (f->hd.type == NGHTTP2_GOAWAY) {
		H2_INC(h, goaway_sent);
		/* nghttp2 ends a session the client broke with a GOAWAY
		 * naming the error */
		if (f->goaway.error_code != NGHTTP2_NO_ERROR)
			HTTP_INC(&h->c->c, downstream_cx_protocol_error);
	}
	return 0;
}

static int on_invalid_frame(nghttp2_session *s, const nghttp2_frame *f, int err, void *ud)
{
	(void)s;
	(void)f;
	(void)err;
	struct http_h2_conn *h = ud;
	H2_INC(h, rx_messaging_error);
	return 0;
}

/* The trailers kept by encode_trailers, as a HEADERS frame that ends the
 * stream (nghttp2 copies the fields). */
static void submit_trailers(nghttp2_session *s, struct http_h2_stream *x)
{
	nghttp2_nv nv[HTTP_MAX_HDRS];
	unsigned n = http_h2_trailers_nv(x->trailers, x->n_trailers, nv, HTTP_MAX_HDRS);
	nghttp2_submit_trailer(s, x->id, nv, n);
	rte_pktmbuf_free(x->trailers);
	x->trailers = NULL;
}

/* The response body, as the client's windows let nghttp2 frame it: a
 * local reply's copy first, then the bytes lent by the upstream. */
static ssize_t on_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t length, uint32_t *flags,
		       nghttp2_data_source *src, void *ud)
{
	(void)src;
	(void)ud;
	struct http_h1_conn *c = stream_of(s, id);
	if (!c) {
		*flags |= NGHTTP2_DATA_FLAG_EOF;
		return 0;
	}
	struct http_h2_stream *x = &c->h2s;
	size_t n = 0;
	while (n < length && x->reply.head) {
		struct rte_mbuf *m = x->reply.head;
		uint32_t avail = m->data_len - x->reply.off;
		uint32_t k = (uint32_t)(length - n) < avail ? (uint32_t)(length - n) : avail;
		memcpy(buf + n, rte_pktmbuf_mtod_offset(m, char *, x->reply.off), k);
		n += k;
		http_in_drop(&x->reply, k);
	}
	if (n < length && x->out_len) {
		uint32_t k =
		    (uint32_t)(length - n) < x->out_len ? (uint32_t)(length - n) : x->out_len;
		memcpy(buf + n, x->out, k);
		x->out += k;
		x->out_len -= k;
		n += k;
	}
	if (!x->reply.head && !x->out_len) {
		if (x->resp_end) {
			*flags |= NGHTTP2_DATA_FLAG_EOF; /* queued until it is sent */
			if (x->trailers) {
				/* END_STREAM goes with the trailers */
				*flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
				submit_trailers(s, x);
			}
		} else if (n == 0) {
			x->deferred = true;
			x->peer.queued = false;
			return NGHTTP2_ERR_DEFERRED;
		}
	}
	x->peer.queued = x->out_len || x->reply.head || (x->resp_end && !x->eof_sent);
	return (ssize_t)n;
}

/* ---- the connection ------------------------------------------------------------------------ */

int http_h2_preface(const struct http_in *in)
{
	static const char pre[] = HTTP_H2_PREFACE;
	uint32_t i = 0, off = in->off;
	for (const struct rte_mbuf *m = in->head; m && i < HTTP_H2_PREFACE_LEN;
	     m = m->next, off = 0) {
		const char *p = rte_pktmbuf_mtod(m, const char *);
		for (uint32_t k = off; k < m->data_len && i < HTTP_H2_PREFACE_LEN; k++, i++)
			if (p[k] != pre[i])
				return 0;
	}
	return i == HTTP_H2_PREFACE_LEN ? 1 : -1;
}

static uint32_t cap(uint32_t v, uint32_t max)
{
	return v < max ? v : max;
}

/* nghttp2's bound on a header block is one frame past header_block()'s,
 * which answers (and counts) the flood first */
static const struct http_h2_session_def session_def = {
    .server = true,
    .max_continuations = HTTP_H2_MAX_CONTINUATIONS + 1,
    .begin_headers = on_begin_headers,
    .begin_frame = on_begin_frame,
    .header = on_header,
    .frame_recv = on_frame_recv,
    .data_chunk = on_data_chunk,
    .stream_close = on_stream_close,
    .frame_send = on_frame_send,
    .invalid_frame = on_invalid_frame,
};

int http_h2_start(struct http_h1_conn *c)
{
	struct http_conn *pc = &c->c;
	const struct arn_cfg_hcm *hcm = pc->hcm;
	struct http_h2_conn *h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->c = c;
	h->max_hdr_bytes =
	    (hcm && hcm->max_request_headers_kb ? hcm->max_request_headers_kb : 60) * 1024u;
	h->max_hdrs = hcm && hcm->max_headers_count && hcm->max_headers_count < HTTP_MAX_HDRS - 1
			  ? hcm->max_headers_count
			  : HTTP_MAX_HDRS - 1;
	h->underscores = hcm ? hcm->headers_with_underscores : 0;
	const struct arn_cfg_h2 *o = hcm ? &hcm->h2 : NULL;
	h->max_empty = o ? o->max_consecutive_inbound_frames_with_empty_payload : 1;
	h->max_priority = o ? o->max_inbound_priority_frames_per_stream : 100;
	h->max_wu = o ? o->max_inbound_window_update_frames_per_data_frame_sent : 10;
	uint32_t streams =
	    cap(o ? o->max_concurrent_streams : HTTP_H2_MAX_STREAMS, HTTP_H2_MAX_STREAMS);
	uint32_t swin = cap(o ? o->initial_stream_window_size : 65535, HTTP_H2_MAX_STREAM_WINDOW);
	uint32_t cwin = cap(o ? o->initial_connection_window_size : 65535, HTTP_H2_MAX_CONN_WINDOW);
	nghttp2_mem mem = http_h2_mem(&h->mem);
	nghttp2_settings_entry iv[] = {
	    {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, streams},
	    {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, swin},
	    {NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, o ? o->hpack_table_size : 4096},
	    {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, h->max_hdr_bytes},
	};
	if (http_h2_session_new(&h->s, &session_def, h, &mem, o, iv, sizeof(iv) / sizeof(iv[0]),
				cwin) != 0) {
		free(h);
		return -ENOMEM;
	}
	c->h2 = h;
	http_h2_keepalive_init(&h->ka, c->c.w, &keepalive_ops, o);
	http_h2_keepalive_start(&h->ka);
	return 0;
}

/* Feed what the client sent to the session. */
static void h2_read(struct http_h2_conn *h)
{
	struct http_h1_conn *c = h->c;
	struct http_h1_peer *d = &c->dn;
	while (!h->fatal) {
		if (!d->in.head && !http_tp_fill(d->tp, c->c.tc, &d->in))
			break;
		while (d->in.head) {
			struct rte_mbuf *m = d->in.head;
			uint32_t avail = m->data_len - d->in.off;
			ssize_t n = 0;
			if (avail)
				n = nghttp2_session_mem_recv(
				    h->s, rte_pktmbuf_mtod_offset(m, uint8_t *, d->in.off), avail);
			if (n < 0) {
				ARN_DEBUG(HTTP, "connection %llx: HTTP/2: %s",
					  (unsigned long long)c->c.id, nghttp2_strerror((int)n));
				if (n != NGHTTP2_ERR_FLOODED)
					HTTP_INC(&c->c, downstream_cx_protocol_error);
				else
					H2_STAT(&c->c, outbound_control_flood);
				h->fatal = true;
				http_in_free(&d->in);
				return;
			}
			if (avail)
				http_h2_keepalive_rx(&h->ka);
			/* nghttp2 takes all it is given (no pause) */
			d->in.off = m->data_len;
			d->in.bytes -= avail;
			d->in.head = m->next;
			if (!d->in.head)
				d->in.tail = NULL;
			d->in.off = 0;
			http_seg_free(m);
		}
	}
}

/* Frame what the session has for the client, up to HTTP_H2_OUT_MAX bytes
 * waiting for TCP, and hand it on. @return 0, -EAGAIN, or the transport's
 * error. */
static int h2_send(struct http_h2_conn *h)
{
	struct http_conn *pc = &h->c->c;
	if (!pc->tc)
		return -ENOTCONN;
	size_t framed;
	int rc = http_h2_send_frames(h->s, pc->w, &h->c->dn, pc->tc, &h->fatal, &framed);
	if (framed)
		pc->again = true; /* frames went: streams may go on */
	return rc;
}

/* Drain: a listener replaced by a newer generation (gradually, as
 * HTTP/1.1's responses: http_drain_close, which leaves a connection on a
 * chain the new version kept), or failed health checks; the graceful
 * GOAWAY tells the client to open no more streams here (HTTP/1.1 says
 * "connection: close" instead). The connection keeps the version it has
 * while its streams finish (they borrow its configuration). */
static bool draining(struct http_h2_conn *h)
{
	struct http_conn *pc = &h->c->c;
	if (http_healthcheck_failed() && !(pc->lsn && pc->lsn->drain_modify_only))
		return true;
	bool close = http_drain_close(pc);
	pc->rebind = false; /* not moved to the new version: see above */
	return close;
}

/* A graceful GOAWAY: no stream after @p last (0: the last one nghttp2
 * took) is served; those before finish. */
static void goaway(struct http_h2_conn *h, int32_t last)
{
	if (h->goaway || !h->s)
		return;
	h->goaway = true;
	nghttp2_submit_goaway(h->s, NGHTTP2_FLAG_NONE,
			      last ? last : nghttp2_session_get_last_proc_stream_id(h->s),
			      NGHTTP2_NO_ERROR, NULL, 0);
}

void http_h2_drain(struct http_h1_conn *c)
{
	goaway(c->h2, 0);
}

void http_h2_idle(struct http_h1_conn *c)
{
	struct http_h2_conn *h = c->h2;
	if (h->n_streams)
		return;
	HTTP_INC(&c->c, downstream_cx_idle_timeout);
	goaway(h, 0);
	c->c.close_after = true;
}

void http_h2_run(struct http_h1_conn *c)
{
	struct http_h2_conn *h = c->h2;
	struct http_conn *pc = &c->c;
	h2_read(h);
	for (struct http_h1_conn *s = h->streams, *n; s; s = n) {
		n = s->h2s.next;
		stream_run(s);
		if (!pc->tc)
			return;
	}
	if (c->dn.peer.eof && !h->n_streams)
		pc->close_after = true; /* the client closed its side */
	if (!h->goaway && draining(h)) {
		goaway(h, 0);
		if (!pc->drain_counted) {
			pc->drain_counted = true;
			HTTP_INC(pc, downstream_cx_drain_close);
		}
	}
	if (h->goaway && !h->n_streams)
		pc->close_after = true; /* drained */
	int rc = h2_send(h);
	if (rc != 0 && rc != -EAGAIN)
		return; /* the connection is going: on_close follows */
	if (h->fatal || (pc->close_after && !h->n_streams) ||
	    (!nghttp2_session_want_read(h->s) && !nghttp2_session_want_write(h->s))) {
		pc->close_after = true;
		return;
	}
	if (!h->n_streams && pc->hcm && pc->hcm->idle_timeout_ms && !pc->idle_timer.armed)
		http_timer_arm(pc->w, &pc->idle_timer, pc->hcm->idle_timeout_ms);
}

void http_h2_free(struct http_h1_conn *c)
{
	struct http_h2_conn *h = c->h2;
	if (!h)
		return;
	while (h->streams) {
		struct http_h1_conn *s = h->streams;
		s->c.tc = NULL;
		if (!(s->c.st.state & HTTP_S_RESP_DONE) && (s->c.st.state & HTTP_S_ACTIVE))
			HTTP_INC(&s->c, downstream_cx_destroy_active_rq);
		stream_free(s, true);
	}
	http_h2_keepalive_stop(&h->ka);
	nghttp2_session_del(h->s);
	h->s = NULL;
	c->h2 = NULL;
	free(h);
}

/* ---- the codec ----------------------------------------------------------------------------- */

static int h2_decode(struct http_peer *p, struct http_msgbuf *mb, bool keep_head,
		     struct http_ev *ev)
{
	(void)mb;
	(void)keep_head;
	struct http_h2_stream *x = h2s(p);
	ev->type = HTTP_EV_NONE;
	ev->data = NULL;
	ev->len = 0;
	ev->end = false; /* END comes with a decode of its own */
	if (x->given) {
		http_in_drop(&x->body, x->given);
		window_give(x, x->given);
		x->given = 0;
	}
	if (x->bad) {
		ev->status = 400;
		ev->details = "http2.invalid_request";
		return -EBADMSG;
	}
	if (x->body_lost)
		return -EAGAIN; /* nothing after the hole, not its end: stream_run resets it */
	if (!x->head_given) {
		if (!x->head_in)
			return x->closed ? -ECONNABORTED : -EAGAIN;
		x->head_given = true;
		ev->type = HTTP_EV_HEAD;
		return 0;
	}
	if (x->body.head) {
		struct rte_mbuf *m = x->body.head;
		ev->type = HTTP_EV_BODY;
		ev->data = rte_pktmbuf_mtod_offset(m, const char *, x->body.off);
		ev->len = m->data_len - x->body.off;
		x->given = (uint32_t)ev->len;
		return 0;
	}
	if (x->end_in && !x->end_given) {
		x->end_given = true;
		ev->type = HTTP_EV_END;
		return 0;
	}
	if (x->closed && !x->end_given)
		return -ECONNABORTED;
	return -EAGAIN;
}

static void h2_upgrade(struct http_peer *p, bool accepted)
{
	(void)p;
	(void)accepted; /* no HTTP/1.1 upgrade over HTTP/2 */
}

static bool h2_idle(const struct http_peer *p)
{
	(void)p;
	return true; /* one exchange per stream: nothing of a next one */
}

static void h2_release(struct http_peer *p)
{
	(void)p;
}

static int h2_encode_request_head(struct http_peer *p, const struct arn_h1_msg *m, const char *path,
				  uint32_t plen, struct arn_h1_edit *e, unsigned n, bool upgrade)
{
	(void)p, (void)m, (void)path, (void)plen, (void)e, (void)n, (void)upgrade;
	return -EPROTONOSUPPORT; /* downstream streams only send responses */
}

/*
 * The head as HTTP/1 would write it (edits applied, hop-by-hop fields
 * dropped: the serializer's rules), turned into HTTP/2 fields: names
 * lowercased (RFC 9113 8.2.2), :status first. @p buf holds the text;
 * @return the fields in @p nv, or -E2BIG / -ENOBUFS.
 */
static int fields(char *buf, uint32_t len, unsigned status, char *st, nghttp2_nv *nv, unsigned max)
{
	unsigned n = 0;
	int k = 0;
	unsigned s = status;
	char tmp[4];
	do {
		tmp[k++] = (char)('0' + s % 10);
		s /= 10;
	} while (s && k < 3);
	for (int i = 0; i < k; i++)
		st[i] = tmp[k - 1 - i];
	nv[n++] =
	    (nghttp2_nv){(uint8_t *)":status", (uint8_t *)st, 7, (size_t)k, NGHTTP2_NV_FLAG_NONE};
	char *q = buf, *end = buf + len;
	/* the status line */
	char *lf = memchr(q, '\n', (size_t)(end - q));
	if (!lf)
		return -EINVAL;
	q = lf + 1;
	while (q < end) {
		lf = memchr(q, '\n', (size_t)(end - q));
		if (!lf || lf - q < 2)
			break; /* the empty line */
		char *colon = memchr(q, ':', (size_t)(lf - q));
		if (!colon)
			return -EINVAL;
		if (n >= max)
			return -E2BIG;
		for (char *t = q; t < colon; t++)
			if (*t >= 'A' && *t <= 'Z')
				*t = (char)(*t + 32);
		char *v = colon + 1;
		while (v < lf && *v == ' ')
			v++;
		size_t vlen = (size_t)(lf - 1 - v); /* without the CR */
		size_t nlen = (size_t)(colon - q);
		/* "connection: close" and friends have no place in HTTP/2 */
		if (!(nlen == 10 && memcmp(q, "connection", 10) == 0))
			nv[n++] = (nghttp2_nv){(uint8_t *)q, (uint8_t *)v, nlen, vlen,
					       NGHTTP2_NV_FLAG_NONE};
		q = lf + 1;
	}
	return (int)n;
}

#define H2_NV_MAX (HTTP_MAX_HDRS + ARN_H1_MAX_EDITS + 8)

static int submit(struct http_h2_stream *x, char *buf, uint32_t len, unsigned status, bool body)
{
	nghttp2_nv nv[H2_NV_MAX];
	char st[4];
	int n = fields(buf, len, status, st, nv, H2_NV_MAX);
	if (n < 0)
		return n == -E2BIG ? -E2BIG : -ENOBUFS;
	nghttp2_data_provider prd = {.source = {.ptr = x}, .read_callback = on_read};
	x->submitted = true;
	x->no_body = !body;
	int rc = nghttp2_submit_response(x->h2->s, x->id, nv, (size_t)n, body ? &prd : NULL);
	if (rc != 0)
		return -ENOBUFS;
	/* Until END_STREAM is out (on_frame_send) when it is known to be the
	 * last thing: HEADERS alone, or a local reply. A response whose body
	 * follows is not flushed yet: its HEADERS go with the body's first
	 * bytes, and the stream is held by what encode_body lends and by
	 * encode_end. */
	x->peer.queued = !body || x->resp_end;
	return 0;
}

static int h2_encode_response_head(struct http_peer *p, const struct arn_h1_msg *r,
				   struct arn_h1_edit *e, unsigned n, struct http_head_info *hi)
{
	struct http_h2_stream *x = h2s(p);
	struct http_worker *w = x->h2->c->c.w;
	if (x->closed)
		return 0; /* the client reset it: nothing goes */
	bool no_body = (r->flags & ARN_H1_F_NO_BODY) || hi->req_method == ARN_H1_M_HEAD ||
		       r->status == 204 || r->status == 304;
	hi->close = false; /* the stream ends with its END_STREAM, not a close */
	char *buf = http_big_get(w);
	if (!buf)
		return -ENOBUFS;
	struct arn_h1_wbuf wb;
	arn_h1_wbuf_init(&wb, buf, HTTP_BIG_SCRATCH, NULL, NULL);
	arn_h1_write_status_line(&wb, r->status, NULL, 0, 1);
	int rc = arn_h1_write_headers(&wb, r, e, n, ARN_H1_W_DROP_HOP);
	arn_h1_write_end(&wb);
	if (rc == 0 && wb.err)
		rc = -ENOBUFS;
	if (rc == 0)
		rc = submit(x, buf, wb.len, r->status, !no_body);
	http_big_put(w, buf);
	return rc;
}

static int h2_encode_reply(struct http_peer *p, const struct http_reply *r)
{
	struct http_h2_stream *x = h2s(p);
	struct http_worker *w = x->h2->c->c.w;
	if (x->closed)
		return 0;
	uint32_t dlen;
	const char *date = http_date(w, &dlen);
	char *buf = http_big_get(w);
	if (!buf)
		return -ENOBUFS;
	struct arn_h1_wbuf wb;
	arn_h1_wbuf_init(&wb, buf, HTTP_BIG_SCRATCH, NULL, NULL);
	http_local_reply_write(&wb, r->status, r->body, r->blen, r->server, date, dlen, r->extra,
			       r->n_extra, false, true);
	bool body = r->blen && !r->head_only;
	int rc = wb.err ? -ENOBUFS : 0;
	if (rc == 0 && body && !http_h2_in_copy(w, &x->reply, (const uint8_t *)r->body, r->blen))
		rc = -ENOBUFS;
	if (rc == 0) {
		x->resp_end = true;
		rc = submit(x, buf, wb.len, r->status, body);
	}
	http_big_put(w, buf);
	return rc;
}

static void h2_encode_continue(struct http_peer *p)
{
	struct http_h2_stream *x = h2s(p);
	if (x->closed)
		return;
	nghttp2_nv nv = {(uint8_t *)":status", (uint8_t *)"100", 7, 3, NGHTTP2_NV_FLAG_NONE};
	nghttp2_submit_headers(x->h2->s, NGHTTP2_FLAG_NONE, x->id, NULL, &nv, 1, NULL);
}

static void resume(struct http_h2_stream *x)
{
	if (x->deferred && !x->closed) {
		x->deferred = false;
		nghttp2_session_resume_data(x->h2->s, x->id);
	}
}

/*
 * Can @p len more body bytes be copied rather than lent? Only behind no
 * lent bytes (the order), up to HTTP_H2_BODY_COPY_MAX bytes per stream,
 * and only what the client's windows take now: a copy normally leaves in
 * this run's h2_send, and a client that stops reading still leaves the
 * rest in the upstream's connection, as before (flow control).
 */
static bool body_copy_fits(struct http_h2_stream *x, size_t len)
{
	if (x->out_len || x->reply.bytes + len > HTTP_H2_BODY_COPY_MAX)
		return false;
	int32_t sw = nghttp2_session_get_stream_remote_window_size(x->h2->s, x->id);
	int32_t cw = nghttp2_session_get_remote_window_size(x->h2->s);
	int32_t win = sw < cw ? sw : cw;
	return win > 0 && x->reply.bytes + len <= (uint32_t)win;
}

static void h2_encode_body(struct http_peer *p, const char *data, size_t len)
{
	struct http_h2_stream *x = h2s(p);
	if (x->closed || x->no_body || !len)
		return;
	if (body_copy_fits(x, len)) {
		/* nothing lent: the upstream's input may move on, and the
		 * bytes go with the frames the run sends at its end */
		uint32_t before = x->reply.bytes;
		bool all = http_h2_in_copy(x->h2->c->c.w, &x->reply, (const uint8_t *)data, len);
		resume(x);
		if (all)
			return;
		/* out of mbufs: the rest is lent */
		data += x->reply.bytes - before;
		len -= x->reply.bytes - before;
	}
	x->out = data;
	x->out_len = (uint32_t)len;
	p->queued = true;
	resume(x);
}

static void h2_encode_trailers(struct http_peer *p, const struct arn_h1_msg *m)
{
	struct http_h2_stream *x = h2s(p);
	if (x->closed || x->no_body || x->trailers)
		return;
	bool nomem;
	x->trailers = http_h2_trailers_copy(x->h2->c->c.w, m, &x->n_trailers, &nomem);
	if (nomem) {
		/* Out of mbufs: the response must not end as if it had no
		 * trailers (a gRPC call's status is there). Reset: the
		 * RST_STREAM goes out before the body's END_STREAM would. */
		H2_INC(x->h2, tx_trailers_no_mbuf);
		struct http_conn *hc = &blk_of_stream(x)->c;
		hc->ops->reset(hc, __LINE__);
	}
}

static void h2_encode_end(struct http_peer *p)
{
	struct http_h2_stream *x = h2s(p);
	x->resp_end = true;
	if (x->closed || x->no_body)
		return;
	p->queued = !x->eof_sent;
	resume(x);
}

/* The bytes lent by the upstream (out) become the stream's own: copied
 * after what reply holds, which on_read sends before them anyway, so the
 * order is kept and the END_STREAM still follows the last of them. */
static __attribute__((cold)) int h2_own_body(struct http_peer *p)
{
	struct http_h2_stream *x = h2s(p);
	const char *d = x->out;
	uint32_t n = x->out_len;
	x->out = NULL;
	x->out_len = 0;
	if (!n || x->closed)
		return 0;
	if (!http_h2_in_copy(x->h2->c->c.w, &x->reply, (const uint8_t *)d, n))
		return -ENOBUFS; /* what was copied goes with the reset */
	return 0;
}

static int h2_flush(struct http_peer *p)
{
	struct http_h2_stream *x = h2s(p);
	if (x->closed) {
		p->queued = false;
		return 0;
	}
	int rc = h2_send(x->h2);
	if (rc != 0 && rc != -EAGAIN)
		return rc;
	return p->queued ? -EAGAIN : 0;
}

const struct http_codec_ops http_codec_h2 = {
    .name = "HTTP/2",
    .decode = h2_decode,
    .upgrade = h2_upgrade,
    .idle = h2_idle,
    .release = h2_release,
    .encode_request_head = h2_encode_request_head,
    .encode_response_head = h2_encode_response_head,
    .encode_reply = h2_encode_reply,
    .encode_continue = h2_encode_continue,
    .encode_body = h2_encode_body,
    .encode_trailers = h2_encode_trailers,
    .encode_end = h2_encode_end,
    .own_body = h2_own_body,
    .flush = h2_flush,
};
