/*
 * Envoy's HTTP connection manager for one stream: the request's head
 * (path normalization, host stripping, the health check filter, then the
 * router filter), the two directions of the exchange stepped with
 * back-pressure (a body piece is parsed only once the previous one was
 * handed to the other side's TCP send buffer), the response head with its
 * edits, the stream's timers, and the stream's end (counters, access log,
 * the upstream connection released or closed).
 *
 * One request is processed at a time per connection (HTTP/1.1 pipelining is
 * sequential): the next request's bytes wait in the input until the current
 * response is complete.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <rte_mbuf.h>

#include "arn_config.h"
#include "arn_log.h"
#include "arn_tcp.h"
#include "http_access_log.h"
#include "http_hcm.h"
#include "http_local.h"
#include "http_router_filter.h"
#include "http_stream.h"
#include "http_upstream.h"

static void stream_idle_timeout(struct http_timer *t);
static void hdr_timeout(struct http_timer *t);
static void req_timeout(struct http_timer *t);

/* ---- stream end ------------------------------------------------------------------------------ */

static void stream_release_cfg(struct http_stream *st)
{
	if (st->rt)
		arn_cfg_unpin(st->rt);
	if (st->cluster)
		arn_cfg_unpin(st->cluster);
	if (st->endpoints)
		arn_cfg_unpin(st->endpoints);
	http_crt_put(st->crt);
	st->crt = NULL;
	st->rt = NULL;
	st->cluster = NULL;
	st->endpoints = NULL;
}

void http_stream_reset(struct http_conn *hc)
{
	struct http_stream *st = &hc->st;
	memset(st, 0, sizeof(*st));
	st->route_timer.fn = http_route_timeout;
	st->idle_timer.fn = stream_idle_timeout;
	st->hdr_timer.fn = hdr_timeout;
	st->req_timer.fn = req_timeout;
}

void http_stream_timers_cancel(struct http_stream *st)
{
	http_timer_cancel(&st->route_timer);
	http_timer_cancel(&st->idle_timer);
	http_timer_cancel(&st->hdr_timer);
	http_timer_cancel(&st->req_timer);
	if (!st->res)
		return;
	http_timer_cancel(&X(st)->retry_timer);
	http_timer_cancel(&X(st)->try_timer);
	http_timer_cancel(&X(st)->try_idle_timer);
}

/* A head's lines that cross segments outgrew the stream's scratch: go on
 * in a large one from the worker's pool (kept with the http_res), or, with
 * none left or that one full too, let the parser fail the head (431 for a
 * request, 502 for a response). */
static void scratch_grow(struct http_worker *w, struct arn_h1_parser *p, char **big)
{
	if (!*big)
		*big = http_big_get(w);
	if (*big && p->scratch != *big &&
	    arn_h1_parser_grow_scratch(p, *big, HTTP_BIG_SCRATCH) == 0)
		return;
	arn_h1_parser_grow_scratch(p, NULL, 0);
}

void http_stream_end(struct http_conn *hc)
{
	struct http_worker *w = hc->w;
	struct http_stream *st = &hc->st;
	http_stream_timers_cancel(st);
	if (st->crt && st->res)
		http_retry_release(&X(st)->retry, &st->crt->retries_active);
	http_rb_free(hc);
	if (st->counted_rq) {
		HTTP_GAUGE(hc, downstream_rq_active, -1);
		if (st->status) {
			HTTP_INC(hc, downstream_rq_completed);
			if (HS(hc))
				arn_stats_inc(
				    HS(hc), w->slot,
				    arn_stats_code_class(ARN_HTTP_downstream_rq_1xx, st->status));
		}
		if (HS(hc))
			arn_stats_hist_record(HS(hc), w->slot, ARN_HTTP_downstream_rq_time,
					      http_now_us(w, st->start_tsc));
	}
	if (st->counted_host)
		http_host_rq_done(hc, HOST_AUTO);
	if (st->counted_up) {
		CL_GAUGE(hc, upstream_rq_active, -1);
		if (CS(st) && st->up_start_tsc)
			arn_stats_hist_record(CS(st), w->slot, ARN_CL_upstream_rq_time,
					      http_now_us(w, st->up_start_tsc));
		__atomic_fetch_sub(&st->crt->rq_active, 1, __ATOMIC_RELAXED);
	}
	if (st->active)
		http_access_log(hc);
	struct http_upconn *u = st->up;
	if (u) {
		ARN_DEBUG(
		    HTTP,
		    "stream end: tunnel %d resp_done %d req_done %d head_sent %d ka %d eof %d",
		    st->tunnel, st->resp_done, st->req_done, st->req_head_sent,
		    !!(st->resp.flags & ARN_H1_F_KEEP_ALIVE), u->peer_eof);
		bool reuse = !st->tunnel && st->resp_done && st->req_done && st->req_head_sent &&
			     !http_out_busy(&u->out) && (st->resp.flags & ARN_H1_F_KEEP_ALIVE) &&
			     !u->peer_eof && arn_h1_parser_idle(&u->p);
		http_up_release(u, reuse);
	} else {
		http_up_detach(hc);
	}
	stream_release_cfg(st);
	http_pins_release(&st->req_pins);
	http_pins_release(&st->resp_pins);
	struct http_res *res = st->res;
	/* Between messages the parser holds no partial line: what its scratch
	 * still holds are slices of the message that just ended, which nobody
	 * uses any more. (Taking a scratch in use for "mid-message" closed the
	 * connection after every request whose head spanned two segments,
	 * dropping the pipelined requests behind it.) */
	bool idle = arn_h1_parser_idle(&hc->p);
	if (res && idle) {
		arn_h1_parser_set_scratch(&hc->p, NULL, 0);
		arn_h1_msg_init(&hc->msg, NULL, 0);
		http_res_put(w, res);
		res = NULL;
	} else if (res) {
		hc->close_after = true; /* mid-message: the connection cannot go on */
		http_xreq_init(hc, res);
	}
	http_stream_reset(hc);
	st->res = res;
}

/*
 * The first byte of a request arrived: Envoy's HTTP/1 codec opens the
 * stream here, so the connection's idle timer stops and the stream's
 * timers start: request_headers_timeout (until the head is parsed; 10 s
 * when the HCM leaves it unset, Arion's deviation from Envoy, see
 * docs/http.md), request_timeout (until the whole request is in or the
 * response starts) and stream_idle_timeout. The request has no http_res
 * yet: it takes one once its head is in (head_ready).
 */
static void stream_started(struct http_conn *hc)
{
	struct http_worker *w = hc->w;
	struct http_stream *st = &hc->st;
	const struct arn_cfg_hcm *h = hc->hcm;
	st->started = true;
	st->start_tsc = http_tsc(w);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	st->start_wall_us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
	st->last_activity_ms = w->now_ms;
	http_timer_cancel(&hc->idle_timer);
	if (!h)
		return;
	if (h->request_headers_timeout_ms)
		http_timer_arm(w, &st->hdr_timer, h->request_headers_timeout_ms);
	if (h->request_timeout_ms)
		http_timer_arm(w, &st->req_timer, h->request_timeout_ms);
	st->idle_timeout_ms = h->stream_idle_timeout_ms;
	if (st->idle_timeout_ms)
		http_timer_arm(w, &st->idle_timer, st->idle_timeout_ms);
}

/* The stream's request counts once, whenever it is first seen as one. */
static void count_request(struct http_conn *hc)
{
	struct http_stream *st = &hc->st;
	if (st->counted_rq)
		return;
	st->counted_rq = true;
	HTTP_INC(hc, downstream_rq_total);
	HTTP_INC(hc, downstream_rq_http1_total);
	HTTP_GAUGE(hc, downstream_rq_active, 1);
}

/* A local reply to a request whose head is not complete: it is counted as
 * a request, and the connection closes after it. */
static void pre_head_reply(struct http_conn *hc, unsigned status, const char *body, uint32_t flags,
			   const char *details)
{
	struct http_stream *st = &hc->st;
	http_res_unwait(hc->w, hc); /* answered: no buffer is wanted for this head */
	count_request(hc);
	if (!st->started)
		stream_started(hc);
	st->active = true;
	hc->close_after = true;
	http_local_reply(hc, status, body, body ? strlen(body) : 0, flags, details, NULL, 0);
}

static void protocol_error(struct http_conn *hc)
{
	enum arn_h1_err e = arn_h1_parser_error(&hc->p);
	unsigned status = (unsigned)arn_h1_err_status(e);
	HTTP_INC(hc, downstream_cx_protocol_error);
	/* Envoy's HTTP/1 codec answers with the status's text as the body */
	pre_head_reply(hc, status, arn_h1_reason(status), ARN_RF_BIT(DOWNSTREAM_PROTOCOL_ERROR),
		       arn_h1_err_details(e));
}

static void on_head(struct http_conn *hc)
{
	struct http_worker *w = hc->w;
	struct http_stream *st = &hc->st;
	const struct arn_h1_msg *m = &hc->msg;
	const struct arn_cfg_hcm *h = hc->hcm;

	st->head_done = true;
	http_timer_cancel(&st->hdr_timer);
	if (!hc->hrt) /* accepted before the control lcore saw this generation */
		hc->hrt = http_rt_hcm(h);
	st->method = m->method;
	st->version = m->version;
	count_request(hc);
	hc->n_req++;
	if (!(m->flags & ARN_H1_F_KEEP_ALIVE))
		hc->close_after = true;
	if (h->max_requests_per_connection && hc->n_req >= h->max_requests_per_connection)
		hc->close_after = true;
	st->upgrade_req = (m->flags & ARN_H1_F_UPGRADE) && !(m->flags & ARN_H1_F_H2C);
	st->idle_timeout_ms = h->stream_idle_timeout_ms;
	if (st->idle_timeout_ms)
		http_timer_arm(w, &st->idle_timer, st->idle_timeout_ms);

	/* RFC 9112 3.2: a request-target has no fragment. Envoy rejects one
	 * (its default since 1.19) in its path normalization: routes and
	 * authorization must not see a path the upstream reads differently. */
	if (m->flags & ARN_H1_F_FRAGMENT) {
		HTTP_INC(hc, downstream_rq_failed_path_normalization);
		http_local_reply(hc, 400, NULL, 0, 0, "path_normalization_failed", NULL, 0);
		return;
	}

	/* Envoy without proxy_100_continue answers the expectation itself */
	if (m->flags & ARN_H1_F_EXPECT_CONTINUE) {
		struct http_wchain c;
		http_wchain_init(&c, w);
		arn_h1_put(&c.wb, "HTTP/1.1 100 Continue\r\n\r\n", 25);
		struct rte_mbuf *cm = http_wchain_finish(&c);
		if (cm)
			http_out_add_chain(&hc->out, cm);
		st->expect_100_sent = true;
	}

	/* normalize_path / merge_slashes: before anything looks at the path
	 * (health checks, routes), and the upstream gets the result, as Envoy
	 * changes :path itself. A path that stays as it is costs one scan. */
	unsigned pf = (h->normalize_path ? HTTP_PATH_NORMALIZE : 0) |
		      (h->merge_slashes ? HTTP_PATH_MERGE_SLASHES : 0);
	if (pf && http_path_needs_normalize(m->path.p, m->path.len, pf)) {
		char *buf = st->res->text + st->text_len;
		int k = http_path_normalize(m->path.p, m->path.len, pf, buf,
					    HTTP_TEXT - 1 - st->text_len);
		if (k < 0) {
			/* longer than the stream's text space (4 KB) */
			HTTP_INC(hc, downstream_rq_failed_path_normalization);
			http_local_reply(hc, 400, NULL, 0, 0, "path_normalization_failed", NULL, 0);
			return;
		}
		buf[k] = 0;
		hc->msg.path = (struct arn_h1_slice){buf, (uint32_t)k};
		st->text_len += (uint32_t)k + 1;
	}

	/* the Host the routes see (and the upstream gets) */
	const char *auth = m->authority.p;
	size_t alen = m->authority.len;
	if (h->strip_any_host_port || h->strip_matching_host_port) {
		uint32_t port = 0;
		size_t hl = arn_cfg_host_without_port(auth, alen, &port);
		if (hl != alen && (h->strip_any_host_port || port == hc->lport)) {
			alen = hl;
			st->host_stripped = true;
		}
	}
	st->auth = auth;
	st->auth_len = (uint32_t)alen;

	const struct arn_cfg_gen *g = w->store ? arn_config_gen(w->store) : NULL;
	const struct arn_cfg_route_table *rt = g ? arn_cfg_hcm_routes(g, h) : h->inline_routes;
	unsigned n = m->n_hdrs < HTTP_MAX_HDRS ? m->n_hdrs : HTTP_MAX_HDRS;
	for (unsigned i = 0; i < n; i++)
		w->route_hdrs[i] = (struct arn_cfg_header){m->hdrs[i].name, m->hdrs[i].name_len,
							   m->hdrs[i].value, m->hdrs[i].value_len};
	struct arn_cfg_request req = {
	    .method = m->method_name.p,
	    .method_len = m->method_name.len,
	    .authority = auth,
	    .authority_len = alen,
	    .path = m->path.p,
	    .path_len = m->path.len,
	    .headers = w->route_hdrs,
	    .n_headers = n,
	    .listener_port = hc->lport,
	    .random = http_rand(w),
	};
	if (h->health_check && http_hc_filter(hc, g, &req))
		return;
	http_route(hc, g, rt, &req);
}

/* ---- request direction ---------------------------------------------------------------------- */

/*
 * Is the next request's head in the input, so that it is worth a request
 * buffer (struct http_res: header array, scratch, text)? Issue 12: a
 * buffer taken at a request's first byte was held while a slow client
 * trickled its head, and 1,024 such clients per worker starved everyone
 * else. The input is scanned here for the head's end, an empty line after
 * a non-empty one (empty lines before the request line are not one, as the
 * parser ignores them), without parsing: incrementally, each byte once
 * (st->hs_*), memchr from line end to line end. Also true once the input
 * holds more than a head may be (max_request_headers_kb) or all the input
 * a connection takes from TCP (HTTP_IN_MAX): the parser then refuses it,
 * or takes a head larger than that in parts as before. What the scan
 * accepts the parser still judges: a bare CR or LF it refuses is refused
 * then, with the buffer taken, as before.
 */
static bool head_ready(struct http_conn *hc)
{
	struct http_stream *st = &hc->st;
	struct http_in *in = &hc->in;
	if (st->head_in)
		return true;
	uint32_t skip = st->hs_scanned, off = in->off;
	for (struct rte_mbuf *m = in->head; m && !st->head_in; m = m->next, off = 0) {
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
			for (const char *q = p; q < stop && !st->hs_line; q++)
				st->hs_line = *q != '\r';
			if (!lf) {
				st->hs_scanned += (uint32_t)(e - p);
				break;
			}
			st->hs_scanned += (uint32_t)(lf + 1 - p);
			p = lf + 1;
			if (!st->hs_line && st->hs_start) {
				st->head_in = true; /* the empty line that ends the head */
				break;
			}
			st->hs_start |= st->hs_line;
			st->hs_line = false;
		}
	}
	if (in->bytes > hc->p.max_head || in->bytes >= HTTP_IN_MAX)
		st->head_in = true;
	return st->head_in;
}

static bool req_may_parse(struct http_conn *hc)
{
	struct http_stream *st = &hc->st;
	if (hc->state != HTTP_DC_OPEN)
		return false;
	if (!st->active)
		return true;
	if (st->local)
		return st->local_wait_end;
	if (st->tunnel)
		return st->up && st->up->tc;
	if (st->req_done)
		return false;
	if (st->head_done)
		return st->up && st->up->connected && st->req_head_sent && !st->replaying;
	return true;
}

static void fwd_body(struct http_out *o, struct arn_h1_chunker *ch, bool chunked, const char *p,
		     size_t n)
{
	if (chunked) {
		size_t k = arn_h1_chunk_prefix(ch, n, o->stage);
		o->stage_off = 0;
		o->stage_len = (uint8_t)k;
	}
	o->data = p;
	o->data_len = (uint32_t)n;
}

static void fwd_end(struct http_out *o, struct arn_h1_chunker *ch)
{
	size_t k = arn_h1_chunk_last(ch, o->stage);
	o->stage[k++] = '\r';
	o->stage[k++] = '\n';
	o->stage_off = 0;
	o->stage_len = (uint8_t)k;
}

void http_req_step(struct http_conn *hc)
{
	struct http_worker *w = hc->w;
	struct http_stream *st = &hc->st;
	for (;;) {
		struct http_upconn *u = st->up;
		if (u && http_out_busy(&u->out)) {
			int rc = http_out_flush(&u->out, u->tc);
			if (rc != 0)
				return; /* -EAGAIN: on_writable; else on_close will tell */
		}
		/* a retry: this attempt gets the body kept so far first */
		if (st->replaying && u && st->req_head_sent) {
			if (X(st)->replay) {
				struct rte_mbuf *rm = X(st)->replay;
				X(st)->replay = rm->next;
				fwd_body(&u->out, &st->up_chunker, st->up_chunked,
					 rte_pktmbuf_mtod(rm, const char *), rm->data_len);
				continue;
			}
			st->replaying = false;
			if (st->req_done && st->up_chunked) {
				fwd_end(&u->out, &st->up_chunker);
				continue;
			}
		}
		if (st->req_done && !st->replaying && u && !http_out_busy(&u->out)) {
			st->req_sent = true;
			if (st->timeout_ms && !st->resp_done && !st->route_timer_armed) {
				st->route_timer_armed = true;
				http_timer_arm(w, &st->route_timer, st->timeout_ms);
			}
			/* per_try_timeout: from the moment the attempt has its
			 * connection and the whole request */
			const struct arn_cfg_retry_policy *rp =
			    st->route ? &st->route->route.retry : NULL;
			if (st->req_head_sent && !st->attempt_sent) {
				st->attempt_sent = true;
				if (rp && rp->present && rp->per_try_timeout_ms &&
				    !st->resp_started)
					http_timer_arm(w, &X(st)->try_timer,
						       rp->per_try_timeout_ms);
				/* per_try_idle_timeout: the same start, then reset by
				 * every byte from the upstream, response body included */
				if (rp && rp->present && rp->per_try_idle_timeout_ms &&
				    !st->resp_done) {
					X(st)->up_activity_ms = w->now_ms;
					http_timer_arm(w, &X(st)->try_idle_timer,
						       rp->per_try_idle_timeout_ms);
				}
			}
		}
		if (!req_may_parse(hc))
			return;
		if (!st->res) {
			/* empty lines before a request are no part of it: they
			 * start no stream, the connection stays idle */
			while (!st->started && !http_in_skip_empty_lines(&hc->in)) {
				if (http_in_fill(&hc->in, hc->tc))
					continue;
				if (hc->peer_eof) {
					/* the client closed between requests */
					hc->close_after = true;
					http_conn_close(hc);
					hc->again = true;
				}
				return;
			}
			/* the request's first byte: its stream and timers start,
			 * but its buffer waits for a head to parse, so that a
			 * client trickling its head holds none (issue 12) */
			if (!st->started)
				stream_started(hc);
			while (!head_ready(hc)) {
				if (http_in_fill(&hc->in, hc->tc))
					continue;
				if (hc->peer_eof) {
					/* the client went away mid-head: closed without
					 * a reply, as before (Envoy's codec resets the
					 * stream) */
					http_stream_timers_cancel(st);
					hc->close_after = true;
					http_conn_close(hc);
					hc->again = true;
				}
				return;
			}
			bool queued = hc->res_waiting;
			st->res = http_res_take(w, hc);
			if (!st->res) {
				/* every request buffer of this worker is in use, or
				 * requests before this one wait for one: it waits
				 * its turn (its head stays in the input); the poll
				 * wakes waiters in order */
				if (!queued)
					HTTP_INC(hc, downstream_rq_buffer_wait);
				return;
			}
			http_xreq_init(hc, st->res);
			arn_h1_msg_init(&hc->msg, st->res->req_hdrs, HTTP_MAX_HDRS);
		}
		struct arn_h1_ev ev;
		ssize_t n = http_in_parse(&hc->in, &hc->p, &ev, &st->req_pins, !st->head_done);
		if (!st->started && (n >= 0 || n == ARN_AGAIN) && !arn_h1_parser_idle(&hc->p))
			stream_started(hc);
		if (n == ARN_AGAIN) {
			if (http_in_fill(&hc->in, hc->tc))
				continue;
			if (hc->peer_eof) {
				struct arn_h1_ev e2;
				int rc = arn_h1_parse_eof(&hc->p, &e2);
				if (st->tunnel || (st->active && !st->req_done) || rc != 0) {
					if (st->active && !st->resp_done) {
						/* the client went away mid-request */
						st->flags |=
						    ARN_RF_BIT(DOWNSTREAM_CONNECTION_TERMINATION);
						HTTP_INC(hc, downstream_rq_rx_reset);
						http_up_detach(hc);
						st->resp_done = st->req_done = true;
					}
					if (st->tunnel)
						st->req_done = st->resp_done = true;
					hc->close_after = true;
				} else if (!st->active) {
					hc->close_after = true;
					http_conn_close(hc);
				} else {
					hc->close_after = true;
				}
				hc->again = true;
			}
			return;
		}
		if (n == -EBADMSG) {
			protocol_error(hc);
			return;
		}
		if (n == -EPIPE) {
			/* bytes after a request that ended the connection */
			http_in_free(&hc->in);
			return;
		}
		if (n < 0)
			return; /* -EBUSY: an upgrade waits for the upstream's answer */
		st->last_activity_ms = w->now_ms;
		if (!st->active) {
			if (!st->started)
				stream_started(hc);
			st->active = true;
		}
		switch (ev.type) {
		case ARN_H1_EV_NEED_SCRATCH:
			if (arn_h1_parser_scratch_short(&hc->p))
				scratch_grow(w, &hc->p, &st->res->big_req);
			else
				arn_h1_parser_set_scratch(&hc->p, st->res->req_scratch,
							  HTTP_SCRATCH);
			break;
		case ARN_H1_EV_HEAD:
			if (st->req_pins.overflow) {
				/* a head in more pieces than we keep references to */
				hc->close_after = true;
				http_local_reply(hc, 431, "Request Header Fields Too Large", 31,
						 ARN_RF_BIT(DOWNSTREAM_PROTOCOL_ERROR),
						 "http1.headers_too_large", NULL, 0);
				return;
			}
			on_head(hc);
			break;
		case ARN_H1_EV_BODY:
			st->rx_body += ev.len;
			if (st->local) {
				/* a reply is out already; the body is not read */
				hc->close_after = true;
				st->local_wait_end = false;
				hc->again = true; /* the stream can end now */
				return;
			}
			if (!st->up)
				return;
			if (st->rb_on && !st->tunnel && !http_rb_append(hc, ev.data, ev.len))
				http_rb_abandon(hc);
			fwd_body(&st->up->out, &st->up_chunker, st->up_chunked && !st->tunnel,
				 ev.data, ev.len);
			if (CS(st))
				arn_stats_add(CS(st), w->slot, ARN_CL_upstream_cx_tx_bytes_total,
					      ev.len);
			break;
		case ARN_H1_EV_END:
			st->req_done = true;
			st->req_end_tsc = http_tsc(w);
			http_timer_cancel(&st->req_timer);
			if (st->local) {
				/* the reply may be out already (it went from a
				 * callback, before this END was parsed): the stream
				 * ends now, not at the connection's next event */
				st->local_wait_end = false;
				hc->again = true;
				return;
			}
			if (st->up && st->up_chunked)
				fwd_end(&st->up->out, &st->up_chunker);
			break;
		default:
			break;
		}
	}
}

/* ---- response direction -----------------------------------------------------------------------
 */

/*
 * The response's edits (server, x-envoy-upstream-service-time,
 * response_headers_to_add / _remove at every level) do not fit the stream's
 * text or edit slots. The head must not go out without them (issue 12: it
 * went out with none, response_headers_to_remove skipped, so a header the
 * operator strips reached the client). Nothing of the response was sent
 * yet: 502, as for a response Arion cannot forward, and the upstream
 * connection is closed mid-response. Counted in rs_edit_overflow.
 */
static void response_edit_overflow(struct http_conn *hc)
{
	HTTP_INC(hc, rs_edit_overflow);
	/* a 101 already turned the request side into a tunnel: the
	 * connection cannot carry another request */
	hc->close_after = true;
	http_local_reply(hc, 502, NULL, 0, 0, "response_edits_overflow", NULL, 0);
}

static void write_resp_head(struct http_conn *hc)
{
	struct http_worker *w = hc->w;
	struct http_stream *st = &hc->st;
	const struct arn_h1_msg *r = &st->resp;
	struct http_resp_ctx x = {
	    .hcm = hc->hcm,
	    .rt = st->rt,
	    .vhost = st->vhost,
	    .route = st->route,
	    .wc = st->wc,
	    .service_ms = (int64_t)((http_tsc(w) - st->up_start_tsc) / w->tsc_per_ms),
	    .upstream_addr = st->ep_addr,
	    .upstream_port = st->ep_port,
	    .raddr = hc->raddr,
	    .rport = hc->rport,
	    .text = st->res->text + st->text_len,
	    .text_cap = HTTP_TEXT - st->text_len,
	};
	struct arn_h1_edit e[MAX_EDITS];
	/* two slots stay for the health check header and a content-length
	 * removal below */
	int n = http_resp_edits(&x, r, e, MAX_EDITS - 2);
	if (n < 0) {
		response_edit_overflow(hc);
		return;
	}
	st->text_len += x.text_len;
	snprintf(st->service_time, sizeof(st->service_time), "%lld", (long long)x.service_ms);
	bool no_body = (r->flags & ARN_H1_F_NO_BODY) || st->method == ARN_H1_M_HEAD ||
		       r->status == 204 || r->status == 304;
	if (!no_body && !st->tunnel && !(r->flags & ARN_H1_F_CONTENT_LENGTH)) {
		if (st->version >= 11) {
			st->dn_chunked = true;
		} else {
			st->dn_until_close = true;
			hc->close_after = true;
		}
	}
	/* A response that starts before its request has been read whole ends
	 * the connection (the rest of the request is not read once the
	 * response is done); say so in the head, as Envoy does. */
	if (!st->req_done && !st->tunnel)
		hc->close_after = true;
	/* a listener replaced by a newer generation drains its connections */
	if (w->store && !hc->close_after) {
		const struct arn_cfg_gen *g = arn_config_gen(w->store);
		if (arn_cfg_listener_find(g, hc->laddr, hc->lport) != hc->lsn)
			hc->close_after = true;
	}
	http_hc_drain(hc);
	if (st->health_check)
		http_hc_cache_set(hc, r->status);
	struct arn_h1_edit hcf;
	if (http_hc_fail_header(hc, &hcf))
		e[n++] = hcf;
	if (r->flags & ARN_H1_F_CL_IGNORED) /* "0" in a 204 or 101 */
		e[n++] = (struct arn_h1_edit){
		    .name = "content-length", .name_len = 14, .op = ARN_H1_EDIT_REMOVE};
	struct http_wchain c;
	http_wchain_init(&c, w);
	arn_h1_write_status_line(&c.wb, r->status, NULL, 0, 1);
	if (arn_h1_write_headers(&c.wb, r, e, (unsigned)n,
				 ARN_H1_W_DROP_HOP | (st->tunnel ? ARN_H1_W_UPGRADE : 0)) ==
	    -E2BIG) {
		struct rte_mbuf *part = http_wchain_finish(&c);
		if (part)
			rte_pktmbuf_free(part);
		response_edit_overflow(hc);
		return;
	}
	if (st->dn_chunked)
		arn_h1_write_header(&c.wb, "transfer-encoding", 17, "chunked", 7);
	if (!st->tunnel) {
		if (hc->close_after)
			arn_h1_write_header(&c.wb, "connection", 10, "close", 5);
		else if (st->version == 10)
			arn_h1_write_header(&c.wb, "connection", 10, "keep-alive", 10);
	}
	arn_h1_write_end(&c.wb);
	struct rte_mbuf *m = http_wchain_finish(&c);
	if (!m) {
		st->flags |= ARN_RF_BIT(LOCAL_RESET);
		http_up_detach(hc);
		http_conn_abort(hc);
		return;
	}
	http_out_add_chain(&hc->out, m);
	st->resp_started = true;
	http_timer_cancel(&st->req_timer);    /* request_timeout ends with the response's start */
	http_timer_cancel(&X(st)->try_timer); /* Envoy ignores a per-try timeout from now on */
	st->status = r->status;
	st->up_status = r->status;
	if (!st->details)
		st->details = "via_upstream"; /* Envoy's %RESPONSE_CODE_DETAILS% */
	st->resp_first_tsc = http_tsc(w);
	if (CS(st))
		arn_stats_inc(CS(st), w->slot,
			      arn_stats_code_class(ARN_CL_upstream_rq_1xx, r->status));
}

void http_resp_step(struct http_conn *hc)
{
	struct http_worker *w = hc->w;
	struct http_stream *st = &hc->st;
	for (;;) {
		struct http_upconn *u = st->up;
		if (!u || st->local || hc->state == HTTP_DC_CLOSED)
			return;
		if (http_out_busy(&hc->out)) {
			int rc = http_out_flush(&hc->out, hc->tc);
			if (rc != 0)
				return;
		}
		if (st->resp_done && !st->tunnel)
			return;
		struct arn_h1_ev ev;
		ssize_t n = http_in_parse(&u->in, &u->p, &ev, &st->resp_pins, !st->resp_started);
		if (n == ARN_AGAIN) {
			if (http_in_fill(&u->in, u->tc))
				continue;
			if (!u->peer_eof)
				return;
			if (st->tunnel) {
				http_upstream_lost(hc, false);
				return;
			}
			int rc = arn_h1_parse_eof(&u->p, &ev);
			if (rc == 0 && ev.type == ARN_H1_EV_END && st->resp_started) {
				/* a body delimited by the upstream's close */
				goto end;
			}
			http_upstream_lost(hc, false);
			return;
		}
		if (n < 0) {
			/* the upstream does not speak HTTP/1 properly */
			CL_INC(hc, upstream_cx_protocol_error);
			if (!st->resp_started &&
			    http_maybe_retry(hc,
					     http_retry_on_reset(X(st)->retry.rp, HTTP_RESET_RESET),
					     HOST_ERROR)) {
				hc->again = true;
				return;
			}
			if (!st->resp_started) {
				st->flags |= ARN_RF_BIT(UPSTREAM_PROTOCOL_ERROR);
				http_reset_reply(
				    hc, 502, "protocol error", ARN_RF_BIT(UPSTREAM_PROTOCOL_ERROR),
				    "upstream_reset_before_response_started{protocol_error}");
			} else {
				st->flags |= ARN_RF_BIT(UPSTREAM_PROTOCOL_ERROR);
				http_up_detach(hc);
				http_conn_abort(hc);
			}
			return;
		}
		st->last_activity_ms = w->now_ms;
		X(st)->up_activity_ms = w->now_ms;
		switch (ev.type) {
		case ARN_H1_EV_NEED_SCRATCH:
			if (arn_h1_parser_scratch_short(&u->p))
				scratch_grow(w, &u->p, &st->res->big_resp);
			else
				arn_h1_parser_set_scratch(&u->p, st->res->resp_scratch,
							  HTTP_SCRATCH);
			break;
		case ARN_H1_EV_HEAD:
			if (st->resp.status < 200 && st->resp.status != 101)
				break; /* interim responses are not forwarded (100 was ours) */
			if (st->resp.status == 101) {
				if (!st->upgrade_req) {
					st->flags |= ARN_RF_BIT(UPSTREAM_PROTOCOL_ERROR);
					http_reset_reply(hc, 502, "protocol error",
							 ARN_RF_BIT(UPSTREAM_PROTOCOL_ERROR),
							 "upstream_reset_before_response_started{"
							 "protocol_error}");
					return;
				}
				st->tunnel = true;
				http_timer_cancel(&st->route_timer);
				arn_h1_parser_tunnel(&hc->p);
			} else if (st->upgrade_req) {
				arn_h1_parser_resume(&hc->p);
			}
			if (X(st)->retry.rp && st->resp.status != 101) {
				/* a retriable answer is never forwarded while a retry
				 * is allowed; the outcome of a retry is its success */
				bool rl = arn_h1_find(&st->resp, "x-envoy-ratelimited", 19, 0) >= 0;
				bool would =
				    http_retry_on_status(X(st)->retry.rp, st->resp.status, rl);
				st->up_status = st->resp.status;
				if (http_maybe_retry(hc, would, HOST_AUTO)) {
					if (CS(st))
						arn_stats_inc(
						    CS(st), w->slot,
						    arn_stats_code_class(ARN_CL_upstream_rq_1xx,
									 st->resp.status));
					hc->again = true;
					return;
				}
			}
			if (st->resp_pins.overflow) {
				http_upstream_lost(hc, false);
				return;
			}
			write_resp_head(hc);
			hc->again = true; /* the request side may go on (tunnel) */
			break;
		case ARN_H1_EV_BODY:
			st->tx_body += ev.len;
			if (CS(st))
				arn_stats_add(CS(st), w->slot, ARN_CL_upstream_cx_rx_bytes_total,
					      ev.len);
			fwd_body(&hc->out, &st->dn_chunker, st->dn_chunked, ev.data, ev.len);
			break;
		case ARN_H1_EV_END:
			if (st->tunnel)
				break; /* the 101's own end: the tunnel runs until a close */
			if (st->resp.status < 200)
				break; /* an interim response's end: the final one follows */
			goto end;
		default:
			break;
		}
		continue;
	end:
		if (st->dn_chunked)
			fwd_end(&hc->out, &st->dn_chunker);
		st->resp_done = true;
		http_timer_cancel(&st->route_timer);
		CL_INC(hc, upstream_rq_completed);
		if (!st->req_done)
			hc->close_after = true; /* the rest of the request is not read */
		hc->again = true;
	}
}

/* ---- timers -----------------------------------------------------------------------------------
 */

static void stream_idle_timeout(struct http_timer *t)
{
	struct http_stream *st = OWNER(t, struct http_stream, idle_timer);
	struct http_conn *hc = OWNER(st, struct http_conn, st);
	struct http_worker *w = hc->w;
	if (!st->started || !st->idle_timeout_ms || hc->state != HTTP_DC_OPEN)
		return;
	uint64_t idle = w->now_ms - st->last_activity_ms;
	if (idle < st->idle_timeout_ms) {
		http_timer_arm(w, t, st->idle_timeout_ms - idle);
		return;
	}
	if (!st->head_done) {
		/* the head never completed */
		pre_head_reply(hc, 408, HTTP_BODY_SI, ARN_RF_BIT(STREAM_IDLE_TIMEOUT),
			       "stream_idle_timeout");
	} else if (!st->resp_started) {
		hc->close_after = true;
		http_local_reply_route(hc, 408, HTTP_BODY_SI, strlen(HTTP_BODY_SI),
				       ARN_RF_BIT(STREAM_IDLE_TIMEOUT), "stream_idle_timeout", NULL,
				       0);
	} else {
		st->flags |= ARN_RF_BIT(STREAM_IDLE_TIMEOUT);
		http_up_detach(hc);
		http_conn_abort(hc);
	}
	http_conn_run(hc);
}

/* request_headers_timeout (Arion's default 10 s when unset): the head did
 * not complete in time (a slow or stalled client); Envoy answers 408 and
 * the connection closes. A head that did arrive but found every request
 * buffer busy for that long is refused as Envoy's overload manager
 * refuses a request (503, flag OM), not blamed on the client. */
static void hdr_timeout(struct http_timer *t)
{
	struct http_stream *st = OWNER(t, struct http_stream, hdr_timer);
	struct http_conn *hc = OWNER(st, struct http_conn, st);
	if (!st->started || st->head_done || !hc->tc || hc->state != HTTP_DC_OPEN)
		return;
	if (hc->res_waiting) {
		http_res_unwait(hc->w, hc);
		HTTP_INC(hc, downstream_rq_overload_close);
		pre_head_reply(hc, 503, "envoy overloaded", ARN_RF_BIT(OVERLOAD_MANAGER),
			       "overload");
	} else {
		HTTP_INC(hc, downstream_rq_header_timeout);
		pre_head_reply(hc, 408, "request header timeout", 0, "request_header_timeout");
	}
	http_conn_run(hc);
}

/* request_timeout: the whole request (head and body) did not arrive before
 * the response started; 408, and the connection closes (the rest of the
 * body is not read). */
static void req_timeout(struct http_timer *t)
{
	struct http_stream *st = OWNER(t, struct http_stream, req_timer);
	struct http_conn *hc = OWNER(st, struct http_conn, st);
	if (!st->started || st->req_done || st->resp_started || !hc->tc ||
	    hc->state != HTTP_DC_OPEN)
		return;
	HTTP_INC(hc, downstream_rq_timeout);
	if (!st->head_done) {
		pre_head_reply(hc, 408, "request timeout", 0, "request_overall_timeout");
	} else {
		hc->close_after = true;
		http_local_reply_route(hc, 408, "request timeout", 15, 0, "request_overall_timeout",
				       NULL, 0);
	}
	http_conn_run(hc);
}
