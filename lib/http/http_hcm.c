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
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <rte_mbuf.h>

#include "arn_config.h"
#include "arn_fmt.h"
#include "arn_http_reason.h"
#include "arn_log.h"
#include "arn_tcp.h"
#include "http_access_log.h"
#include "http_codec_h1.h"
#include "http_cresp.h"
#include "http_filter.h"
#include "http_hcm.h"
#include "http_local.h"
#include "http_req_kept.h"
#include "http_router_filter.h"
#include "http_shadow.h"
#include "http_stream.h"
#include "http_upstream.h"
#include "http_zero.h"

static void stream_idle_timeout(struct http_timer *t);

/* No filter acts on @p hc's streams (its manager's runtime says so, once
 * per configuration generation): the walks below are skipped, not each
 * filter called to find out (bench_hcm: about 200 instructions a request).
 * Without a runtime yet (a reply before the head), the filters decide. */
static inline bool filters_idle(const struct http_conn *hc)
{
	return hc->hrt && hc->hrt->filters_idle;
}

/* Each filter's @p hook, where it has one, in chain order, unless none
 * acts on connection @p hc's streams. */
#define FOR_FILTERS(hc, hook, ...)                                                                 \
	do {                                                                                       \
		if (!filters_idle(hc))                                                             \
			for (unsigned fi_ = 0; fi_ < http_filters_##hook.n; fi_++)                 \
				http_filters_##hook.f[fi_]->hook(__VA_ARGS__);                     \
	} while (0)
static void hdr_timeout(struct http_timer *t);
static void req_timeout(struct http_timer *t);

/* ---- stream end ------------------------------------------------------------------------------ */

/* When @p st started, in wall-clock time, for the access log, which
 * alone reads it: the clock is read once per logged request, not at every
 * stream's start (bench_hcm: about 25 instructions a request). */
static void stream_wall_start(struct http_stream *st)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	int64_t now = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
	st->start_wall_us = now - (int64_t)http_now_us(st->hc->w, st->start_tsc);
}

/* Link @p hc into its worker's list of connections keeping pins. */
static void kept_list(struct http_conn *hc)
{
	struct http_worker *w = hc->w;
	hc->kept_listed = true;
	hc->kprev = NULL;
	hc->knext = w->kept_head;
	if (w->kept_head)
		w->kept_head->kprev = hc;
	w->kept_head = hc;
}

void http_kept_drop(struct http_conn *hc)
{
	hc->kept_stale = false;
	if (!hc->kept_listed)
		return;
	struct http_kept *k = &hc->kept;
	if (k->rt)
		arn_cfg_unpin(k->rt);
	if (k->cluster)
		arn_cfg_unpin(k->cluster);
	if (k->endpoints)
		arn_cfg_unpin(k->endpoints);
	if (k->crt)
		http_crt_put(k->crt);
	*k = (struct http_kept){0};
	if (hc->kprev)
		hc->kprev->knext = hc->knext;
	else
		hc->w->kept_head = hc->knext;
	if (hc->knext)
		hc->knext->kprev = hc->kprev;
	hc->kept_listed = false;
}

void http_kept_drop_all(struct http_worker *w)
{
	for (struct http_conn *hc = w->kept_head, *next; hc; hc = next) {
		next = hc->knext;
		if (hc->st.rt) /* its stream may borrow them: they go at its end */
			hc->kept_stale = true;
		else
			http_kept_drop(hc);
	}
}

/* Hand pin @p o of a stream that ends to its connection's @p kept when
 * @p keep (a kept pin of another object goes), else drop it. */
static void kept_give(bool keep, const void **kept, const void *o)
{
	if (!keep) {
		arn_cfg_unpin(o);
		return;
	}
	if (*kept)
		arn_cfg_unpin(*kept);
	*kept = o;
}

/* stream_release_cfg's part for a stream that took pins of its own, or
 * whose connection's kept ones are of an older generation. */
static void stream_release_own(struct http_stream *st)
{
	struct http_conn *hc = st->hc;
	struct http_kept *k = &hc->kept;
	bool keep = hc->keeps && !hc->kept_stale && hc->state == HTTP_DC_OPEN && !hc->close_after;
	if (hc->kept_stale)
		http_kept_drop(hc); /* the borrowed ones with them */
	unsigned own = st->own;
	if (own & HTTP_OWN_RT)
		kept_give(keep, &k->rt, st->rt);
	if (own & HTTP_OWN_CLUSTER)
		kept_give(keep, &k->cluster, st->cluster);
	if (own & HTTP_OWN_ENDPOINTS)
		kept_give(keep, &k->endpoints, st->endpoints);
	if (own & HTTP_OWN_CRT) {
		if (keep && k->crt)
			http_crt_put(k->crt);
		if (keep)
			k->crt = st->crt;
		else
			http_crt_put(st->crt);
	}
	if (keep && own && !hc->kept_listed)
		kept_list(hc);
	st->own = 0;
}

static void stream_release_cfg(struct http_stream *st)
{
	/* a steady keep-alive request borrowed them all: nothing to give
	 * back (http_stream.h) */
	if (st->own | st->hc->kept_stale)
		stream_release_own(st);
	st->crt = NULL;
	st->rt = NULL;
	st->cluster = NULL;
	st->endpoints = NULL;
}

/* A message buffer's pins and scratch cleared: its message is the caller's.
 * The pins' slot array is not: it is read only below n (http_io.c). */
static void msgbuf_clear(struct http_msgbuf *b)
{
	_Static_assert(sizeof(struct http_msgbuf) == sizeof(struct arn_h1_msg) +
							 sizeof(struct http_pins) +
							 2 * sizeof(char *),
		       "http_msgbuf: m, pins, scratch and more, nothing else");
	b->pins.n = 0;
	b->pins.overflow = false;
	b->scratch = NULL;
	b->more = NULL;
}

/* Clear @p st for the next request: the connection and the request message
 * its codec parses into stay, and so do its four timers (stopped, but for
 * the idle timer, which may stay armed: http_stream_end). Not one memset
 * of the whole stream: two thirds of it are the pins' slot arrays, which
 * need no clearing (bench_hcm: 182 instructions a request to about 80). */
static void stream_reset(struct http_stream *st)
{
	_Static_assert(offsetof(struct http_stream, resp) ==
			   offsetof(struct http_stream, req) + sizeof(struct http_msgbuf),
		       "req and resp are adjacent");
	_Static_assert(
	    offsetof(struct http_stream, hc) == 0 &&
		offsetof(struct http_stream, route_timer) <
		    offsetof(struct http_stream, idle_timer) &&
		offsetof(struct http_stream, idle_timer) <
		    offsetof(struct http_stream, last_activity_ms) &&
		offsetof(struct http_stream, last_activity_ms) <
		    offsetof(struct http_stream, hdr_timer) &&
		offsetof(struct http_stream, hdr_timer) < offsetof(struct http_stream, req_timer) &&
		offsetof(struct http_stream, req_timer) < offsetof(struct http_stream, attempts) &&
		offsetof(struct http_stream, attempts) < offsetof(struct http_stream, res) &&
		offsetof(struct http_stream, res) + sizeof(st->res) ==
		    offsetof(struct http_stream, req),
	    "hc first; route_timer to res: the timers, last_activity_ms, attempts, res");
	http_zero((char *)st + sizeof(st->hc),
		  offsetof(struct http_stream, route_timer) - sizeof(st->hc));
	st->last_activity_ms = 0;
	st->attempts = 0;
	st->res = NULL;
	msgbuf_clear(&st->req);
	http_zero(&st->resp.m, sizeof(st->resp.m));
	msgbuf_clear(&st->resp);
	const size_t tail = offsetof(struct http_stream, resp) + sizeof(struct http_msgbuf);
	http_zero((char *)st + tail, sizeof(*st) - tail);
}

void http_stream_init(struct http_stream *st, struct http_conn *hc)
{
	st->hc = hc;
	memset(&st->route_timer, 0, sizeof(st->route_timer));
	memset(&st->idle_timer, 0, sizeof(st->idle_timer));
	memset(&st->hdr_timer, 0, sizeof(st->hdr_timer));
	memset(&st->req_timer, 0, sizeof(st->req_timer));
	st->route_timer.fn = http_route_timeout;
	st->idle_timer.fn = stream_idle_timeout;
	st->hdr_timer.fn = hdr_timeout;
	st->req_timer.fn = req_timeout;
	stream_reset(st);
	arn_h1_msg_init(&st->req.m, NULL, 0);
}

/* (http_stream_take_inline says what it takes: bench_hcm, about 30
 * instructions less than a clearing of the message) */
void http_stream_take(struct http_stream *st, struct http_res *r)
{
	http_stream_take_inline(st, r);
}

/* The stream's timers but its idle and route timers (http_stream_end).
 * Inline: the stream's end calls it once a request, for five tests of
 * timers that are nearly always stopped. */
static inline __attribute__((always_inline)) void stream_timers_stop(struct http_stream *st)
{
	http_timer_stop(&st->hdr_timer);
	http_timer_stop(&st->req_timer);
	if (!st->res)
		return;
	http_timer_stop(&X(st)->retry_timer);
	http_timer_stop(&X(st)->try_timer);
	http_timer_stop(&X(st)->try_idle_timer);
}

void http_stream_timers_cancel(struct http_stream *st)
{
	http_timer_stop(&st->idle_timer);
	http_timer_stop(&st->route_timer);
	stream_timers_stop(st);
}

void http_stream_end(struct http_stream *st)
{
	struct http_conn *hc = st->hc;
	struct http_worker *w = hc->w;
	/* The idle timer may stay armed: it does nothing to a connection
	 * without a stream (stream_idle_timeout), and the next stream's start
	 * takes it over, as the connection's idle timer is (http_conn.c's
	 * stream_ended): no arm and cancel per keep-alive request (issue 17).
	 * So may the route timer, which does nothing to a stream without
	 * HTTP_S_ROUTE_TIMER and arms itself for what is left of a later
	 * stream's timeout (http_route_timeout). The connection's release and
	 * an HTTP/2 stream's end stop both (http_stream_timers_cancel) before
	 * they call this. */
	stream_timers_stop(st);
	if (st->res) {
		/* a max_retries slot held (only between a retry's wish and its
		 * outcome) and a request body kept for a retry: nothing, for
		 * most requests, so the tests are inline (bench_hcm: a call a
		 * request) */
		struct http_xreq *x = X(st);
		if (x->retry.holding && st->crt)
			http_retry_release(&x->retry, &st->crt->retries_active);
		if (x->rb_head || x->rb_segs)
			http_rb_free(st);
		if (x->shadows) /* those the request never sent */
			http_shadow_drop(st);
	}
	struct arn_stats_scope *hs = HS(hc);
	if ((st->state & HTTP_S_COUNTED_RQ) && hs) {
		struct http_sw s = http_sw(hs, w->slot);
		http_sw_add(s, ARN_HTTP_downstream_rq_active, (uint64_t)-1);
		if (st->status) {
			http_sw_add(s, ARN_HTTP_downstream_rq_completed, 1);
			http_sw_add(s, arn_stats_code_class(ARN_HTTP_downstream_rq_1xx, st->status),
				    1);
		}
		http_sw_hist(s, ARN_HTTP_downstream_rq_time, http_now_us(w, st->start_tsc));
	}
	if (st->state & HTTP_S_COUNTED_HOST)
		http_host_rq_done(st, HOST_AUTO);
	struct arn_stats_scope *cs = CS(st);
	if ((st->state & HTTP_S_COUNTED_UP) && cs) {
		struct http_sw s = http_sw(cs, w->slot);
		http_sw_add(s, ARN_CL_upstream_rq_active, (uint64_t)-1);
		if (st->up_start_tsc)
			http_sw_hist(s, ARN_CL_upstream_rq_time, http_now_us(w, st->up_start_tsc));
	}
	if (st->state & HTTP_S_ACTIVE) {
		FOR_FILTERS(hc, log, st); /* the filters' fields of the record */
		/* http_access_log's own test, here: its frame is paid only with
		 * a logger (bench_hcm: 22 instructions a request) */
		if (hc->hrt && hc->hrt->n_logs) {
			if (st->state & HTTP_S_STARTED)
				stream_wall_start(st);
			http_access_log(st);
		}
	}
	struct http_upconn *u = st->up;
	if (u) {
		struct http_peer *up = http_up_peer(u);
		ARN_DEBUG(
		    HTTP,
		    "stream end: tunnel %d resp_done %d req_done %d head_sent %d ka %d eof %d",
		    !!(st->state & HTTP_S_TUNNEL), !!(st->state & HTTP_S_RESP_DONE),
		    !!(st->state & HTTP_S_REQ_DONE), !!(st->state & HTTP_S_HEAD_SENT),
		    !!(st->resp.m.flags & ARN_H1_F_KEEP_ALIVE), up->eof);
		bool reuse = !(st->state & HTTP_S_TUNNEL) && (st->state & HTTP_S_RESP_DONE) &&
			     (st->state & HTTP_S_REQ_DONE) && (st->state & HTTP_S_HEAD_SENT) &&
			     !up->queued && (st->resp.m.flags & ARN_H1_F_KEEP_ALIVE) && !up->eof &&
			     up->codec->idle(up);
		http_up_release(u, reuse);
	} else {
		http_up_detach(st);
	}
	FOR_FILTERS(hc, stream_end, st);
	stream_release_cfg(st);
	http_pins_release2(&st->req.pins, &st->resp.pins);
	struct http_res *res = st->res;
	/* Between messages the parser holds no partial line: what its scratch
	 * still holds are slices of the message that just ended, which nobody
	 * uses any more. (Taking a scratch in use for "mid-message" closed the
	 * connection after every request whose head spanned two segments,
	 * dropping the pipelined requests behind it.) */
	struct http_peer *dn = hc->dn;
	/* (an END held with its head is a message not ended: the codec,
	 * which took it, is idle) */
	bool idle = dn->codec->idle(dn) && !(st->state & HTTP_S_END_HELD);
	if (res && idle) {
		dn->codec->release(dn);
		/* arn_h1_msg_init(NULL, 0) inline: 16-byte stores, no call */
		struct arn_h1_msg *rm = &st->req.m;
		http_zero(rm, sizeof(*rm));
		rm->host_idx = -1;
		rm->upgrade_idx = -1;
		http_res_put(w, res);
		res = NULL;
	} else if (res) {
		hc->close_after = true; /* mid-message: the connection cannot go on */
		http_xreq_init(st, res);
	}
	stream_reset(st);
	if (res)
		http_stream_attach(st, res);
}

/*
 * The first byte of a request arrived: Envoy's HTTP/1 codec opens the
 * stream here, so the connection's idle timer stops and the stream's
 * timers start: request_headers_timeout (until the head is parsed; 10 s
 * when the HCM leaves it unset, Arion's deviation from Envoy, see
 * docs/http.md), request_timeout (until the whole request is in or the
 * response starts) and stream_idle_timeout. The request has no http_res
 * yet: it takes one once its head is in (http_conn.c, head_ready).
 */
void http_stream_started(struct http_stream *st)
{
	http_stream_start(st, false);
}

void http_stream_head_deadline(struct http_stream *st)
{
	const struct arn_cfg_hcm *h = st->hc->hcm;
	if (h && h->request_headers_timeout_ms && !st->hdr_timer.armed)
		http_timer_arm(st->hc->w, &st->hdr_timer, h->request_headers_timeout_ms);
}

/* The stream's request counts once, whenever it is first seen as one. */
static void count_request(struct http_stream *st)
{
	struct http_conn *hc = st->hc;
	if (st->state & HTTP_S_COUNTED_RQ)
		return;
	st->state |= HTTP_S_COUNTED_RQ;
	struct arn_stats_scope *sc = HS(hc);
	if (!sc)
		return;
	struct http_sw s = http_sw(sc, hc->w->slot);
	http_sw_add(s, ARN_HTTP_downstream_rq_total, 1);
	http_sw_add(s,
		    st->version == 20 ? ARN_HTTP_downstream_rq_http2_total
				      : ARN_HTTP_downstream_rq_http1_total,
		    1);
	http_sw_add(s, ARN_HTTP_downstream_rq_active, 1);
}

/* A local reply to a request whose head is not complete: it is counted as
 * a request, and the connection closes after it. */
static void pre_head_reply(struct http_stream *st, unsigned status, const char *body,
			   uint32_t flags, const char *details)
{
	struct http_conn *hc = st->hc;
	http_res_unwait(hc->w, hc); /* answered: no buffer is wanted for this head */
	count_request(st);
	if (!(st->state & HTTP_S_STARTED))
		http_stream_started(st);
	st->state |= HTTP_S_ACTIVE;
	hc->close_after = true;
	http_local_reply(st, status, body, body ? strlen(body) : 0, flags, details, NULL, 0);
}

/*
 * Did routing send the request head on an HTTP/1 upstream connection that
 * was connected already (a kept-alive one), and leave the connection's
 * round nothing else to do? The router then asks for one more round
 * (upstream_ready's http_conn_run, which from inside the run sets
 * hc->again) to flush the head and read on; on_head runs inside the
 * request's step, which goes on with exactly that. The round would find:
 * no response yet (the connection came idle with nothing read: the pool
 * closes one that said something, http_up_acquire), nothing queued for
 * the client (a 100 Continue is: that round flushes it), no local reply,
 * and the request's step stopped where it stops again. bench_hcm: one
 * round in three, about 190 instructions a request.
 */
static inline __attribute__((always_inline)) bool routed_on(struct http_stream *st)
{
	struct http_upconn *u = st->up;
	/* what http_up_acquire checked of a connection it takes idle, still
	 * true: nothing came in since, on this call's way */
	return (st->state & (HTTP_S_HEAD_SENT | HTTP_S_LOCAL | HTTP_S_MCP)) == HTTP_S_HEAD_SENT &&
	       !st->mcp && !st->hc->dn->queued && u && !u->xs && !u->h1.peer.eof &&
	       !u->h1.in.bytes && u->h1.tc && !arn_tcp_rx_pending(u->h1.tc);
}

/* The request's headers as the route matcher sees them, copied into the
 * worker's scratch the first time a matcher asks (route matching on the
 * path alone never does: bench_hcm, about 25 instructions a request). */
struct route_hdrs {
	struct arn_h1_msg *m; /* its stream's request (st->req.m) */
	struct arn_cfg_header *buf;
	unsigned n;
	bool built;
};

static const struct arn_cfg_header *route_hdrs_get(void *ctx, size_t *n)
{
	struct route_hdrs *s = ctx;
	if (!s->built) {
		/* the stream from its request (not one more member for every
		 * request to set: bench_hcm, 9 instructions a request) */
		struct http_stream *st = OWNER(s->m, struct http_stream, req.m);
		/* a route's header matcher sees the x-request-id Envoy gives
		 * the request before it routes (the chain idle: none was given
		 * at the head, http_request_id_head) */
		if (!st->request_id && st->hc->hcm->generate_request_id)
			http_request_id_head(st);
		const struct arn_h1_msg *m = s->m;
		s->n = m->n_hdrs < HTTP_MAX_HDRS ? m->n_hdrs : HTTP_MAX_HDRS;
		for (unsigned i = 0; i < s->n; i++)
			s->buf[i] = (struct arn_cfg_header){m->hdrs[i].name, m->hdrs[i].name_len,
							    m->hdrs[i].value, m->hdrs[i].value_len};
		if (st->route_edited) {
			/* Envoy's clearRouteCache: matched again on the
			 * mutated headers (lines past the scratch are not
			 * seen, as a head's past HTTP_MAX_HDRS) */
			size_t k = s->n;
			(void)http_req_edits_view(st, s->buf, &k, HTTP_MAX_HDRS);
			s->n = (unsigned)k;
		}
		s->built = true;
	}
	*n = s->n;
	return s->buf;
}

/*
 * The request's head, as on_head made it (the path normalized, the Host's
 * port stripped: both kept in the stream), through the filters before the
 * router from the @p i-th on (@p walk: any may act; false: none can,
 * filters_idle), in chain order: one that takes the stream (answers it,
 * holds it, or reads its body) ends the walk; then the router. In the
 * generation of now: a held head resumed later (http_hcm_resume_head)
 * routes in the configuration it resumes in. Inline: on_head's, every
 * request.
 */
static inline __attribute__((always_inline)) void head_walk(struct http_stream *st, unsigned i,
							    bool walk)
{
	struct http_conn *hc = st->hc;
	struct http_worker *w = hc->w;
	const struct arn_h1_msg *m = &st->req.m;
	const struct arn_cfg_hcm *h = hc->hcm;
	const struct arn_cfg_gen *g = w->gen_slot ? arn_config_gen_at(w->gen_slot) : NULL;
	const struct arn_cfg_route_table *rt = g ? arn_cfg_hcm_routes(g, h) : h->inline_routes;
	struct route_hdrs src = {.m = &st->req.m, .buf = w->route_hdrs};
	struct arn_cfg_request req = {
	    .method = m->method_name.p,
	    .method_len = m->method_name.len,
	    .authority = st->auth,
	    .authority_len = st->auth_len,
	    .path = m->path.p,
	    .path_len = m->path.len,
	    .listener_port = hc->lport,
	    .random = http_rand(w),
	    .headers_fn = route_hdrs_get,
	    .headers_ctx = &src,
	};
	/* the filters read req.headers themselves: built for them here */
	if (walk) {
		if (unlikely(st->route_path) && !st->route_edited) {
			/* a filter rewrote the path without clearing the route
			 * cache (ext_proc's :path): the route is the one the
			 * path before it matched, as Envoy's cached route (only
			 * a filter sets it: tested where they walk, bench_hcm's
			 * idle chain pays nothing) */
			const struct arn_h1_slice *rp = http_route_path(st);
			if (rp) {
				req.path = rp->p;
				req.path_len = rp->len;
			}
		}
		size_t n;
		req.headers = route_hdrs_get(&src, &n);
		req.n_headers = n;
		for (; i < http_filters_decode_head.n; i++) {
			const struct http_filter_ops *f = http_filters_decode_head.f[i];
			if (f->decode_head(st, g, rt, &req)) {
				st->filter = f;
				return;
			}
		}
	}
	bool again = hc->again;
	http_route(st, g, rt, &req);
	if (!again && hc->again && routed_on(st))
		hc->again = false;
}

/* headers_with_underscores_action on an HTTP/1 request's head, as
 * Envoy's HTTP/1 codec: REJECT_REQUEST answers 400
 * (http1.unexpected_underscore) and closes, a protocol error;
 * DROP_HEADER takes each field whose name has a '_' out of the head, so
 * that neither a filter, a route nor the upstream sees it. No field the
 * parser read framing from has a '_' (their names are hyphenated), so the
 * message's flags stand. @return true when it answered. */
static bool has_underscore(const struct arn_h1_header *f, void *arg)
{
	(void)arg;
	return f->name_len && memchr(f->name, '_', f->name_len);
}

static bool h1_underscores(struct http_stream *st, uint8_t action)
{
	struct http_conn *hc = st->hc;
	struct arn_h1_msg *m = &st->req.m;
	struct arn_stats_scope *sc = hc->hrt ? hc->hrt->h1stats : NULL;
	if (action == ARN_CFG_UNDERSCORES_REJECT) {
		for (unsigned i = 0; i < m->n_hdrs; i++) {
			if (!has_underscore(&m->hdrs[i], NULL))
				continue;
			if (sc)
				arn_stats_inc(sc, hc->w->slot,
					      ARN_H1S_requests_rejected_with_underscores_in_headers);
			hc->close_after = true;
			http_local_reply(st, 400, NULL, 0, ARN_RF_BIT(DOWNSTREAM_PROTOCOL_ERROR),
					 "http1.unexpected_underscore", NULL, 0);
			return true;
		}
		return false;
	}
	unsigned gone = arn_h1_drop_fields(m, has_underscore, NULL);
	if (sc && gone)
		arn_stats_add(sc, hc->w->slot, ARN_H1S_dropped_headers_with_underscores, gone);
	return false;
}

/* headers_with_underscores_action on an HTTP/1 request's chunked
 * trailers, as Envoy's HTTP/1 codec checks every field it completes,
 * trailers included: REJECT_REQUEST is the codec's protocol error (400
 * http1.unexpected_underscore and close, or the stream reset once its
 * response has begun, as any error in the body), DROP_HEADER takes the
 * field out before the trailers go upstream. (HTTP/2 trailers are checked
 * field by field in http_h2.c.) Out of line: only a request with trailers
 * comes here. @return true when it answered. */
static bool __attribute__((noinline, cold)) h1_trailer_underscores(struct http_stream *st)
{
	struct http_conn *hc = st->hc;
	struct arn_h1_msg *m = &st->req.m;
	uint8_t action = hc->hcm->headers_with_underscores;
	if (!action || m->version == 20 || (st->state & HTTP_S_LOCAL))
		return false; /* (a local reply answers it: they go nowhere) */
	struct arn_stats_scope *sc = hc->hrt ? hc->hrt->h1stats : NULL;
	unsigned j = 0;
	for (unsigned i = 0; i < m->n_trailers; i++) {
		const struct arn_h1_header *f = &m->trailers[i];
		if (f->name_len && memchr(f->name, '_', f->name_len)) {
			if (action == ARN_CFG_UNDERSCORES_REJECT) {
				if (sc)
					arn_stats_inc(
					    sc, hc->w->slot,
					    ARN_H1S_requests_rejected_with_underscores_in_headers);
				HTTP_INC(hc, downstream_cx_protocol_error);
				pre_head_reply(st, 400, arn_http_reason(400),
					       ARN_RF_BIT(DOWNSTREAM_PROTOCOL_ERROR),
					       "http1.unexpected_underscore");
				return true;
			}
			if (sc)
				arn_stats_inc(sc, hc->w->slot,
					      ARN_H1S_dropped_headers_with_underscores);
			continue;
		}
		if (i != j)
			m->trailers[j] = *f;
		j++;
	}
	m->n_trailers = (uint16_t)j;
	return false;
}

/* path_with_escaped_slashes_action (Envoy's maybeNormalizePath and its
 * caller): a path with "%2F" or "%5C" (either case) is refused 400, or
 * rewritten with them unescaped and forwarded or redirected (307); a
 * gRPC request is refused where it would be redirected (gRPC clients do
 * not follow). @return 0 go on, 1 redirect once normalized, -1 answered. */
static int escaped_slashes(struct http_stream *st, uint8_t action)
{
	struct http_conn *hc = st->hc;
	struct arn_h1_msg *m = &st->req.m;
	if (!m->path.len || !memchr(m->path.p, '%', m->path.len))
		return 0;
	char *buf = st->res->text + st->text_len;
	int k =
	    http_path_unescape_slashes(m->path.p, m->path.len, buf, HTTP_TEXT - 1 - st->text_len);
	if (k == -ENOENT)
		return 0;
	if (k < 0 || action == ARN_CFG_ESC_SLASHES_REJECT ||
	    (action == ARN_CFG_ESC_SLASHES_REDIRECT && http_is_grpc(st))) {
		HTTP_INC(hc, downstream_rq_failed_path_normalization);
		http_local_reply(st, 400, NULL, 0, 0, "path_normalization_failed", NULL, 0);
		return -1;
	}
	buf[k] = 0;
	m->path = (struct arn_h1_slice){buf, (uint32_t)k};
	st->text_len += (uint32_t)k + 1;
	return action == ARN_CFG_ESC_SLASHES_REDIRECT;
}

/* normalize_path / merge_slashes (@p pf) into the stream's text; the
 * path must change (http_path_needs_normalize). @return true when it
 * answered (400: the result outgrows the stream's text space). */
static bool __attribute__((noinline)) path_normalize(struct http_stream *st, unsigned pf)
{
	struct arn_h1_msg *m = &st->req.m;
	char *buf = st->res->text + st->text_len;
	int k = http_path_normalize(m->path.p, m->path.len, pf, buf, HTTP_TEXT - 1 - st->text_len);
	if (k < 0) {
		/* longer than the stream's text space (4 KB) */
		HTTP_INC(st->hc, downstream_rq_failed_path_normalization);
		http_local_reply(st, 400, NULL, 0, 0, "path_normalization_failed", NULL, 0);
		return true;
	}
	buf[k] = 0;
	m->path = (struct arn_h1_slice){buf, (uint32_t)k};
	st->text_len += (uint32_t)k + 1;
	return false;
}

/* The connection manager's header and path policies that Envoy applies
 * in its codecs and before normalize_path (on_head runs normalize_path
 * next): headers_with_underscores_action for an HTTP/1 head (the HTTP/2
 * codec acts on each field as it arrives, http_h2.c), then
 * path_with_escaped_slashes_action; its redirect is sent here, the path
 * normalized and its slashes merged first, as Envoy's maybeNormalizePath
 * does. @return true when it answered. */
static bool __attribute__((noinline))
head_policies(struct http_stream *st, const struct arn_cfg_hcm *h)
{
	/* always_set_request_id_in_response: under the manager's one test
	 * (conv_listener.c), not a test of its own a request */
	if (h->always_set_request_id_in_response) {
		st->state |= HTTP_S_RESP_EXTRA;
		st->rid_resp = true;
	}
	/* an original_ip_detection extension with reject_with_status that
	 * found no address: Envoy's local reply, before anything else runs */
	uint32_t client;
	bool internal;
	int rs;
	if (h->ip_detect_reject &&
	    (rs = http_ip_detect(h, &st->req.m, st->hc->raddr, &client, &internal)) != 0) {
		HTTP_INC(st->hc, downstream_rq_rejected_via_ip_detection);
		http_local_reply(st, rs, NULL, 0, 0, "rejecting_because_detection_failed", NULL, 0);
		return true;
	}
	if (h->headers_with_underscores && st->req.m.version != 20 &&
	    h1_underscores(st, h->headers_with_underscores))
		return true;
	if (!h->escaped_slashes)
		return false;
	int r = escaped_slashes(st, h->escaped_slashes);
	if (r <= 0)
		return r < 0;
	const struct arn_h1_msg *m = &st->req.m;
	unsigned pf = (h->normalize_path ? HTTP_PATH_NORMALIZE : 0) |
		      (h->merge_slashes ? HTTP_PATH_MERGE_SLASHES : 0);
	if (pf && http_path_needs_normalize(m->path.p, m->path.len, pf) && path_normalize(st, pf))
		return true;
	/* Envoy: 307 to the path (relative, its query kept) */
	HTTP_INC(st->hc, downstream_rq_redirected_with_normalized_path);
	struct arn_h1_edit e = {.name = "location",
				.name_len = 8,
				.value = m->path.p,
				.value_len = m->path.len,
				.op = ARN_H1_EDIT_SET};
	http_local_reply(st, 307, NULL, 0, 0, "path_normalization_failed", &e, 1);
	return true;
}

static void on_head(struct http_stream *st)
{
	struct http_conn *hc = st->hc;
	const struct arn_h1_msg *m = &st->req.m;
	const struct arn_cfg_hcm *h = hc->hcm;

	st->state |= HTTP_S_HEAD_DONE;
	http_timer_stop(&st->hdr_timer);
	if (!hc->hrt) /* accepted before the control lcore saw this generation */
		hc->hrt = http_rt_hcm(h);
	st->method = m->method;
	st->version = m->version;
	count_request(st);
	hc->n_req++;
	if (!(m->flags & ARN_H1_F_KEEP_ALIVE))
		hc->close_after = true;
	if (h->max_requests_per_connection && hc->n_req >= h->max_requests_per_connection)
		hc->close_after = true;
	/* (the stream's reset cleared HTTP_S_UPGRADE: set, not computed) */
	if ((m->flags & (ARN_H1_F_UPGRADE | ARN_H1_F_H2C)) == ARN_H1_F_UPGRADE)
		st->state |= HTTP_S_UPGRADE;
	/* The stream idle timer was armed at the stream's start with this
	 * timeout (http_stream_start, http_stream_started: every stream that
	 * gets here started, on the manager it still has): it runs from
	 * last_activity_ms (stream_idle_timeout re-arms for what is left), so
	 * nothing is done here. */

	/* RFC 9112 3.2: a request-target has no fragment. Envoy rejects one
	 * (its default since 1.19) in its path normalization: routes and
	 * authorization must not see a path the upstream reads differently. */
	if (m->flags & ARN_H1_F_FRAGMENT) {
		HTTP_INC(hc, downstream_rq_failed_path_normalization);
		http_local_reply(st, 400, NULL, 0, 0, "path_normalization_failed", NULL, 0);
		return;
	}

	/* RFC 9113 8.3.1: :path is origin-form, or "*" for OPTIONS, which is
	 * all the HTTP/1 parser leaves (it takes an absolute-form target
	 * apart). nghttp2 checks the form only under the http and https
	 * schemes: with another :scheme, an absolute URI passed by the route
	 * prefixes and reached an HTTP/1.1 upstream as absolute-form, whose
	 * host and path it reads instead of Host (RFC 9112 3.2.2). Envoy
	 * answers any path not starting with '/' 404. */
	if (m->path.len && m->path.p[0] != '/' &&
	    !(m->path.len == 1 && m->path.p[0] == '*' && m->method == ARN_H1_M_OPTIONS)) {
		HTTP_INC(hc, downstream_rq_non_relative_path);
		http_local_reply(st, 404, NULL, 0, 0, "absolute_path", NULL, 0);
		return;
	}

	/* Envoy without proxy_100_continue answers the expectation itself */
	if (m->flags & ARN_H1_F_EXPECT_CONTINUE) {
		hc->dn->codec->encode_continue(hc->dn);
	}

	/* headers_with_underscores_action and path_with_escaped_slashes_action
	 * (one test for the usual manager that sets neither) */
	if (__builtin_expect(h->head_policies, 0) && head_policies(st, h))
		return;

	/* a client's x-envoy-* and x-forwarded-client-cert that Envoy's
	 * mutateRequestHeaders takes out go before anything reads the head
	 * (filters, routes, logs: RBAC's header matchers, ext_authz's check);
	 * one test of a flag the parser set for a head without them */
	if (__builtin_expect(m->flags & ARN_H1_F_PROXY_FIELDS, 0))
		http_route_sanitize(st);

	/* normalize_path / merge_slashes: before anything looks at the path
	 * (health checks, routes), and the upstream gets the result, as Envoy
	 * changes :path itself. A path that stays as it is costs one scan. */
	unsigned pf = (h->normalize_path ? HTTP_PATH_NORMALIZE : 0) |
		      (h->merge_slashes ? HTTP_PATH_MERGE_SLASHES : 0);
	if (pf && http_path_needs_normalize(m->path.p, m->path.len, pf) && path_normalize(st, pf))
		return;

	/* the Host the routes see (and the upstream gets) */
	const char *auth = m->authority.p;
	size_t alen = m->authority.len;
	if (h->strip_any_host_port || h->strip_matching_host_port) {
		uint32_t port = 0;
		size_t hl = arn_cfg_host_without_port(auth, alen, &port);
		if (hl != alen && (h->strip_any_host_port || port == hc->lport)) {
			alen = hl;
			st->state |= HTTP_S_HOST_STRIPPED;
		}
	}
	st->auth = auth;
	st->auth_len = (uint32_t)alen;

	/* x-request-id before any filter reads the head, as Envoy's
	 * mutateRequestHeaders gives it: where none can (the chain idle: the
	 * router alone), the router's edits make it, which on a kept list
	 * costs nothing (bench_hcm: this test of walk, +1 a request; inside
	 * head_walk's walk block it cost +3, its registers around the call) */
	bool walk = !filters_idle(hc);
	if (walk && h->generate_request_id)
		http_request_id_head(st);
	head_walk(st, 0, walk);
}

void http_hcm_resume_head(struct http_stream *st, const struct http_filter_ops *from)
{
	st->filter = NULL;
	unsigned i = 0;
	while (i < http_filters_decode_head.n && http_filters_decode_head.f[i] != from)
		i++;
	head_walk(st, i, true);
}

/* ---- the two directions ---------------------------------------------------------------------- */

/*
 * One direction of the exchange: the peer its message comes from, the
 * buffer it is decoded into, and what the stream does with each event.
 * The request goes from the client to the upstream, the response back;
 * both are stepped by step(), written once. Every member returns true to
 * go on with the next event, false to stop (flow control, or the stream
 * changed course: the connection's run takes it from there).
 */
struct direction {
	/* the previous event's bytes left for the other peer, and this
	 * direction may take another event now */
	bool (*ready)(struct http_stream *st);
	/* a head came with its END (http_ev.end): may the END be handled at
	 * once? Else it is held (HTTP_S_END_HELD) until ready() takes it.
	 * NULL: the direction's codec never gives one. */
	bool (*end_ready)(struct http_stream *st);
	/* a body's last bytes came with its END (HTTP_EV_BODY_END): once
	 * body() took them, may the END be handled at once (the bytes went
	 * to the other peer's transport, as ready() would wait for)? Else it
	 * is held with the state bit end_held until ready() takes it. NULL:
	 * the direction's decode never gives one. */
	bool (*body_end_ready)(struct http_stream *st);
	uint32_t end_held;
	/* a head may come with what follows it (http_h1_decode_fused: a
	 * response's first body bytes in data, len, its END in end) */
	bool head_more;
	/* ready() said no right after a head that came with what follows
	 * it: the direction keeps that for later if its head is held (NULL:
	 * it is dropped, as head_more says) */
	void (*hold_rest)(struct http_stream *st, const struct http_ev *ev);
	struct http_peer *(*source)(struct http_stream *st);
	/* NULL: the source's codec's decode */
	int (*decode)(struct http_peer *src, struct http_msgbuf *mb, bool keep, struct http_ev *ev);
	struct http_msgbuf *(*buffer)(struct http_stream *st);
	/* the head is still to be used: the codec keeps what its slices point into */
	bool (*keep)(const struct http_stream *st);
	/* input was taken (any event) */
	void (*progress)(struct http_stream *st);
	bool (*head)(struct http_stream *st);
	bool (*body)(struct http_stream *st, const char *data, size_t len);
	bool (*end)(struct http_stream *st);
	/* the source closed (decode: -ESHUTDOWN or -ECONNABORTED, @p ev) */
	bool (*closed)(struct http_stream *st, int rc, const struct http_ev *ev);
	/* the source broke the protocol (decode: -EBADMSG, @p ev) */
	bool (*error)(struct http_stream *st, const struct http_ev *ev);
	/* the proxy had no buffer for what the source sent (decode:
	 * -ENOBUFS, @p ev); NULL: as error() */
	bool (*no_buffer)(struct http_stream *st, const struct http_ev *ev);
};

/*
 * What came with a head (struct direction's head_more): body bytes, then
 * the END, handled as their own events would have been after it: each
 * only if the direction may take the next event (ready(), as the step's
 * loop asks before a decode), the END after the bytes only once they went
 * on (body_end_ready), else held. Bytes and an END that the stream cannot
 * take are dropped with it: it is done with its source (a local reply, a
 * retry, a reset detach the upstream, whose connection is closed, as with
 * any response not read to its end). @p go: the head's answer. @return
 * the step's go.
 */
static inline __attribute__((always_inline)) bool
head_more(struct http_stream *st, const struct direction *d, const struct http_ev *ev, bool go)
{
	if (!go)
		return false;
	if (!d->ready(st)) {
		/* (only where the direction may hold its head: off the usual
		 * path, ready() said no) */
		if (d->hold_rest)
			d->hold_rest(st, ev);
		return false;
	}
	if (ev->len) {
		if (!d->body(st, ev->data, ev->len)) {
			/* a filter holds the bytes (HTTP_S_ENC_MORE): the END
			 * waits for them */
			if (ev->end && (st->state & HTTP_S_ENC_MORE))
				st->state |= d->end_held;
			return false;
		}
		if (!ev->end)
			return true;
		if (!d->body_end_ready(st)) {
			st->state |= d->end_held;
			return false;
		}
	}
	return d->end(st);
}

/* Inlined into each direction's entry with its table, which the compiler
 * then reads at build time: the members are called directly, not through
 * pointers, on the path every request takes. */
static inline __attribute__((always_inline)) void step(struct http_stream *st,
						       const struct direction *d)
{
	while (d->ready(st)) {
		struct http_peer *src = d->source(st);
		struct http_ev ev;
		int rc = d->decode ? d->decode(src, d->buffer(st), d->keep(st), &ev)
				   : src->codec->decode(src, d->buffer(st), d->keep(st), &ev);
		bool go;
		/* an event first: five a proxied request, against one -EAGAIN */
		if (__builtin_expect(rc >= 0, 1)) {
			d->progress(st);
			switch (ev.type) {
			case HTTP_EV_HEAD:
				go = d->head(st);
				if (d->end_ready && ev.end) {
					if (go && d->end_ready(st))
						go = d->end(st);
					else
						st->state |= HTTP_S_END_HELD;
				}
				if (d->head_more && (ev.len || ev.end))
					go = head_more(st, d, &ev, go);
				break;
			case HTTP_EV_BODY:
			case HTTP_EV_BODY_END:
				/* (one call of body(), inline) */
				go = d->body(st, ev.data, ev.len);
				if (d->body_end_ready && ev.type == HTTP_EV_BODY_END) {
					if (go && d->body_end_ready(st))
						go = d->end(st);
					else
						st->state |= d->end_held;
				}
				break;
			case HTTP_EV_END:
				go = d->end(st);
				break;
			default:
				go = true;
				break;
			}
		} else if (rc == -EAGAIN) {
			return;
		} else if (rc == -ESHUTDOWN || rc == -ECONNABORTED) {
			go = d->closed(st, rc, &ev);
		} else if (rc == -ENOBUFS && d->no_buffer) {
			go = d->no_buffer(st, &ev);
		} else {
			go = d->error(st, &ev);
		}
		if (!go)
			return;
	}
}

/* ---- request: client -> upstream ------------------------------------------------------------- */

static inline __attribute__((always_inline)) bool req_may_parse(struct http_stream *st)
{
	struct http_conn *hc = st->hc;
	if (hc->state != HTTP_DC_OPEN)
		return false;
	if (!(st->state & HTTP_S_ACTIVE))
		return true;
	if (st->state & HTTP_S_LOCAL)
		return st->state & HTTP_S_LOCAL_WAIT_END;
	if (st->state & HTTP_S_TUNNEL)
		return st->up && http_up_alive(st->up);
	if (st->state & HTTP_S_REQ_DONE)
		return false;
	if (st->state & HTTP_S_MCP)
		return true; /* the filter takes the body as it comes */
	if (st->state & HTTP_S_HEAD_DONE)
		return st->up && st->up->connected && (st->state & HTTP_S_HEAD_SENT) &&
		       !(st->state & HTTP_S_REPLAYING);
	return true;
}

static bool req_end(struct http_stream *st);
static void req_progress(struct http_stream *st);
static bool req_more(struct http_stream *st);

static bool req_ready(struct http_stream *st)
{
	for (;;) {
		struct http_peer *up = st->up ? http_up_peer(st->up) : NULL;
		if (up && up->queued && up->codec->flush(up) != 0) {
			http_route_timer_due(st);
			return false; /* -EAGAIN: on_writable; else on_close will tell */
		}
		if (http_attempt_send(st))
			continue;
		if (!req_may_parse(st) || !st->res) {
			http_route_timer_due(st);
			return false;
		}
		if (!(st->state & HTTP_S_END_HELD))
			return true;
		st->state &= ~HTTP_S_END_HELD;
		if (unlikely(st->req_xf) && http_filters[st->req_xf - 1]->decode_more) {
			/* HTTP_S_REQ_MORE: the filter's next piece, once the
			 * upstream took the last (the flush above) */
			if (!req_more(st))
				return false;
			continue;
		}
		/* an END that came with its head: handled where its decode
		 * would have given it */
		req_progress(st);
		if (!req_end(st))
			return false;
	}
}

/* After a head that came with its END: what req_ready would answer for the
 * END, but for the upstream's flush (the END queues nothing that the head
 * does not precede, and the round after it flushes both). */
static bool req_end_ready(struct http_stream *st)
{
	return req_may_parse(st) && st->res;
}

static struct http_peer *req_source(struct http_stream *st)
{
	return st->hc->dn;
}

static struct http_msgbuf *req_buffer(struct http_stream *st)
{
	return &st->req;
}

static bool req_keep(const struct http_stream *st)
{
	return !(st->state & HTTP_S_HEAD_DONE);
}

static void req_progress(struct http_stream *st)
{
	st->last_activity_ms = st->hc->w->now_ms;
	if (!(st->state & HTTP_S_ACTIVE)) {
		if (!(st->state & HTTP_S_STARTED))
			http_stream_started(st);
		st->state |= HTTP_S_ACTIVE;
	}
}

static bool req_head(struct http_stream *st)
{
	if (st->req.pins.overflow) {
		/* a head in more pieces than we keep references to */
		st->hc->close_after = true;
		http_local_reply(st, 431, "Request Header Fields Too Large", 31,
				 ARN_RF_BIT(DOWNSTREAM_PROTOCOL_ERROR), "http1.headers_too_large",
				 NULL, 0);
		return false;
	}
	on_head(st);
	return true;
}

/* A filter rewrites the request body (http_filter.h's decode_xform): the
 * slice @p *data becomes what the filter made of it (out of line: only
 * such a filter's streams come here). @return false when the filter
 * answered: nothing goes on. */
static __attribute__((noinline, cold)) bool req_xform(struct http_stream *st, const char **data,
						      size_t *len)
{
	const struct http_filter_ops *f = http_filters[st->req_xf - 1];
	const char *out = NULL;
	/* the slice is the stream's to rewrite (the contract above) */
	long k = f->decode_xform(st, (char *)(uintptr_t)*data, *len, *data == NULL, &out);
	if (k < 0)
		return false;
	*data = out;
	*len = (size_t)k;
	return true;
}

/* Body bytes to the upstream (and the body kept for a retry). */
static inline __attribute__((always_inline)) void req_send(struct http_stream *st, const char *data,
							   size_t len)
{
	if ((st->state & HTTP_S_KEEP_BODY) && !(st->state & HTTP_S_TUNNEL) &&
	    !http_rb_append(st, data, len))
		http_rb_abandon(st);
	struct http_peer *up = http_up_peer(st->up);
	up->codec->encode_body(up, data, len);
	if (CS(st))
		arn_stats_add(CS(st), st->hc->w->slot, ARN_CL_upstream_cx_tx_bytes_total, len);
}

/* A body slice through the filter that rewrites it: what it made goes
 * upstream. Its output may be full first (HTTP_S_REQ_MORE: a
 * decompressor's piece): the stream then takes no event until the
 * upstream took the piece and req_ready had the filter go on (out of
 * line: only such a filter's streams come here). */
static __attribute__((noinline, cold)) bool req_body_xf(struct http_stream *st, const char *data,
							size_t len)
{
	if (!req_xform(st, &data, &len))
		return false;
	if (len)
		req_send(st, data, len); /* (an HTTP/1.1 chunk of 0 would end the body) */
	if (st->state & HTTP_S_REQ_MORE) {
		st->hc->again = true;
		return false;
	}
	return true;
}

/* What a filter's full output left (HTTP_S_REQ_MORE, cleared): its next
 * piece goes upstream. @return false when the filter answered. */
static __attribute__((noinline, cold)) bool req_more(struct http_stream *st)
{
	const char *out = NULL;
	long k = http_filters[st->req_xf - 1]->decode_more(st, &out);
	if (k < 0)
		return false;
	if (k)
		req_send(st, out, (size_t)k);
	return true;
}

static bool req_body(struct http_stream *st, const char *data, size_t len)
{
	struct http_conn *hc = st->hc;
	st->rx_body += len;
	if (st->state & HTTP_S_LOCAL) {
		/* a reply is out already; the body is not read */
		hc->close_after = true;
		st->state &= ~HTTP_S_LOCAL_WAIT_END;
		hc->again = true; /* the stream can end now */
		return false;
	}
	if (st->state & HTTP_S_MCP)
		return st->filter->decode_body(st, data, len);
	if (!st->up)
		return false;
	if (unlikely(st->req_xf))
		return req_body_xf(st, data, len);
	req_send(st, data, len);
	return true;
}

static bool req_end(struct http_stream *st)
{
	struct http_conn *hc = st->hc;
	/* the client's trailers (a chunked HTTP/1 request's, rare): the
	 * manager's field policy, before anything takes them on */
	if (unlikely(st->req.m.n_trailers) && h1_trailer_underscores(st)) {
		hc->again = true;
		return false;
	}
	st->state |= HTTP_S_REQ_DONE;
	st->req_end_tsc = http_tsc(hc->w);
	http_timer_stop(&st->req_timer);
	/* one test for the requests that end otherwise (bench_hcm: a
	 * mirrored request's test costs the others nothing) */
	if (unlikely(st->state & (HTTP_S_LOCAL | HTTP_S_MCP | HTTP_S_KEEP_BODY))) {
		if (st->state & HTTP_S_LOCAL) {
			/* the reply may be out already (it went from a callback,
			 * before this END was parsed): the stream ends now, not
			 * at the connection's next event */
			st->state &= ~HTTP_S_LOCAL_WAIT_END;
			hc->again = true;
			return false;
		}
		if (st->state & HTTP_S_MCP) {
			st->filter->decode_end(st);
			hc->again = true;
			return false;
		}
		/* a mirrored request is whole: its shadows go (http_shadow.h) */
		if (X(st)->shadows)
			http_shadow_end(st);
	}
	if (unlikely(st->req_xf) && st->up) {
		/* the filter's check of the body's end (it forwards nothing
		 * here); its reply ends the stream */
		const char *none = NULL;
		size_t zero = 0;
		if (!req_xform(st, &none, &zero)) {
			hc->again = true;
			return false;
		}
	}
	if (st->up)
		http_req_end_encode(st, http_up_peer(st->up));
	return true;
}

/* The client closed its side. */
static bool req_closed(struct http_stream *st, int rc, const struct http_ev *ev)
{
	(void)ev;
	struct http_conn *hc = st->hc;
	if ((st->state & HTTP_S_TUNNEL) ||
	    ((st->state & HTTP_S_ACTIVE) && !(st->state & HTTP_S_REQ_DONE)) ||
	    rc == -ECONNABORTED) {
		if ((st->state & HTTP_S_ACTIVE) && !(st->state & HTTP_S_RESP_DONE)) {
			/* the client went away mid-request */
			st->flags |= ARN_RF_BIT(DOWNSTREAM_CONNECTION_TERMINATION);
			HTTP_INC(hc, downstream_rq_rx_reset);
			http_up_detach(st);
			st->state |= HTTP_S_RESP_DONE | HTTP_S_REQ_DONE;
		}
		if (st->state & HTTP_S_TUNNEL)
			st->state |= HTTP_S_REQ_DONE | HTTP_S_RESP_DONE;
		hc->close_after = true;
	} else if (!(st->state & HTTP_S_ACTIVE)) {
		hc->close_after = true;
		http_conn_close(hc);
	} else {
		hc->close_after = true;
	}
	hc->again = true;
	return false;
}

/* The client broke the protocol: its codec says what to answer. */
static bool req_error(struct http_stream *st, const struct http_ev *ev)
{
	HTTP_INC(st->hc, downstream_cx_protocol_error);
	/* Envoy's HTTP/1 codec answers with the status's text as the body */
	pre_head_reply(st, ev->status, arn_http_reason(ev->status),
		       ARN_RF_BIT(DOWNSTREAM_PROTOCOL_ERROR), ev->details);
	return false;
}

/* The proxy had no trailer array for the client's trailers (the
 * worker's are all in use: http_trl): they are refused as ones over
 * max_headers_count are, 431 (or the stream reset, its response begun). */
static bool req_no_buffer(struct http_stream *st, const struct http_ev *ev)
{
	HTTP_INC(st->hc, trailer_slots_exhausted);
	pre_head_reply(st, ev->status, arn_http_reason(ev->status),
		       ARN_RF_BIT(DOWNSTREAM_PROTOCOL_ERROR), ev->details);
	return false;
}

static const struct direction request = {
    .ready = req_ready,
    .end_ready = req_end_ready,
    .source = req_source,
    .buffer = req_buffer,
    .keep = req_keep,
    .progress = req_progress,
    .head = req_head,
    .body = req_body,
    .end = req_end,
    .closed = req_closed,
    .error = req_error,
    .no_buffer = req_no_buffer,
};

void http_req_step(struct http_stream *st)
{
	step(st, &request);
}

/* ---- response: upstream -> client ------------------------------------------------------------ */

/*
 * The response's edits (server, x-envoy-upstream-service-time,
 * response_headers_to_add / _remove at every level) do not fit the stream's
 * text or edit slots. The head must not go out without them (issue 12: it
 * went out with none, response_headers_to_remove skipped, so a header the
 * operator strips reached the client). Nothing of the response was sent
 * yet: 502, as for a response Arion cannot forward, and the upstream
 * connection is closed mid-response. Counted in rs_edit_overflow.
 */
static void response_edit_overflow(struct http_stream *st)
{
	struct http_conn *hc = st->hc;
	HTTP_INC(hc, rs_edit_overflow);
	/* a 101 already turned the request side into a tunnel: the
	 * connection cannot carry another request */
	hc->close_after = true;
	http_local_reply(st, 502, NULL, 0, 0, "response_edits_overflow", NULL, 0);
}

/* The cookies the route's hash policies generated for this stream (Envoy's
 * router appends them to the upstream's response headers), after the @p n
 * edits in @p e, in the stream's text. @return the edits' count, or
 * -ENOSPC. */
static int __attribute__((noinline, cold))
set_cookies(struct http_stream *st, struct arn_h1_edit *e, int n)
{
	struct http_conn *hc = st->hc;
	struct http_lb_peer peer = {hc->raddr, hc->laddr, hc->rport, hc->lport};
	uint32_t len = st->text_len;
	int k = http_set_cookie_edits(&st->route->route, X(st)->cookie_gen, &peer, st->res->text,
				      HTTP_TEXT, &len, e + n, MAX_EDITS - 2 - (unsigned)n);
	if (k < 0)
		return k;
	st->text_len = len;
	return n + k;
}

/* What the upstream's response takes beyond its edits, after the @p n
 * edits in @p e: the health check filter's cache of its @p status, the
 * cookies the route's hash policies generated, and the request's id (as
 * Envoy's setInResponse: when it has one). @return the edits' count, or
 * -ENOSPC. Out of line: few responses come here, and the usual one's
 * code keeps its registers (bench_hcm: one instruction a request less). */
static int __attribute__((noinline, cold))
resp_extra(struct http_stream *st, unsigned status, struct arn_h1_edit *e, int n)
{
	if (st->state & HTTP_S_HEALTH_CHECK)
		http_hc_cache_set(st, status);
	if (X(st)->cookie_gen && (n = set_cookies(st, e, n)) < 0)
		return n;
	/* the two slots write_resp_head keeps: the health check's and the
	 * codec's */
	if (st->rid_resp && st->request_id) {
		if (n >= MAX_EDITS - 2)
			return -ENOSPC;
		e[n++] = http_request_id_edit(st);
	}
	return n;
}

static void write_resp_head(struct http_stream *st)
{
	struct http_conn *hc = st->hc;
	struct http_worker *w = hc->w;
	const struct arn_h1_msg *r = &st->resp.m;
	/* the service time in decimal once: the access log's, and the value
	 * of x-envoy-upstream-service-time (the edits read it before the head
	 * is encoded, the stream keeps it until its end) */
	int64_t service_ms = (int64_t)((http_tsc(w) - st->up_start_tsc) / w->tsc_per_ms);
	_Static_assert(sizeof(st->service_time) > ARN_FMT_I64_MAX, "service_time holds an int64");
	int sk = arn_fmt_i64(service_ms, st->service_time);
	st->service_time[sk] = '\0';
	struct http_resp_ctx x = {
	    .hcm = hc->hcm,
	    .rt = st->rt,
	    .vhost = st->vhost,
	    .route = st->route,
	    .wc = st->wc,
	    .service_ms = service_ms,
	    .subst_fill = http_stream_subst,
	    .subst_arg = st,
	    .service_txt = st->service_time,
	    .service_len = (uint32_t)sk,
	    .text = st->res->text + st->text_len,
	    .text_cap = HTTP_TEXT - st->text_len,
	};
	struct arn_h1_edit e[MAX_EDITS];
	uint32_t text0 = st->text_len; /* (given back if a filter holds the head) */
	/* two slots stay: one for the health check header, one for the codec */
	int n = http_resp_edits(&x, r, e, MAX_EDITS - 2);
	if (n < 0) {
		response_edit_overflow(st);
		return;
	}
	st->text_len += x.text_len;
	int k = 0;
	if (!filters_idle(hc)) {
		/* a custom_response policy replaces the response whole: its
		 * reply goes instead of this head, which nothing of the route's
		 * edits reaches (http_cresp.h). Under the filters' one test
		 * (bench_hcm: a test of its own cost 5 instructions a request) */
		struct http_cresp_reply cr;
		if (hc->hrt && hc->hrt->cresp && http_cresp_upstream(st, &cr)) {
			http_local_reply_direct(st, cr.status, cr.body, cr.blen, 0, cr.details,
						cr.e, cr.n);
			return;
		}
		k = http_filters_resp_edits(st, e + n, MAX_EDITS - 2 - (unsigned)n);
	}
	if (k < 0) {
		/* a filter holds the head (http_filter.h): it has it written
		 * once it read the body (http_hcm_write_head) */
		if (k == -EAGAIN && (st->state & HTTP_S_ENC_BODY))
			return;
		if (k == -ECANCELED && (st->state & HTTP_S_LOCAL))
			return; /* a filter answered with a local reply instead */
		if (k == -EINPROGRESS && !(st->state & HTTP_S_ENC_BODY)) {
			/* a filter waits for an answer before the head goes
			 * (http_filter.h): nothing more of the response is read
			 * until it has the head written (http_hcm_resume_resp_head),
			 * whose edits are asked again then */
			st->text_len = text0;
			st->state |= HTTP_S_HEAD_HELD;
			st->res->held_len = 0;
			st->res->held_end = false;
			return;
		}
		response_edit_overflow(st);
		return;
	}
	n += k;
	/* A response that starts before its request has been read whole ends
	 * the connection (the rest of the request is not read once the
	 * response is done); say so in the head, as Envoy does. */
	if (!(st->state & (HTTP_S_REQ_DONE | HTTP_S_TUNNEL)))
		hc->close_after = true;
	http_hc_drain(hc);
	/* one test for all: none is common (no instruction a request
	 * where there is none, bench_hcm) */
	if ((st->state & (HTTP_S_HEALTH_CHECK | HTTP_S_RESP_EXTRA)) &&
	    (n = resp_extra(st, r->status, e, n)) < 0) {
		response_edit_overflow(st);
		return;
	}
	struct arn_h1_edit hcf;
	/* its last test first, inline: health checks seldom fail */
	if (http_healthcheck_failed() && http_hc_fail_header(st, &hcf))
		e[n++] = hcf;
	struct http_head_info hi = {
	    .req_method = st->method,
	    .req_version = st->version,
	    .tunnel = (st->state & HTTP_S_TUNNEL),
	    .close = hc->close_after,
	};
	struct http_peer *dn = hc->dn;
	int rc = dn->codec->encode_response_head(dn, r, e, (unsigned)n, &hi);
	hc->close_after = hi.close; /* a body only our close can end */
	if (rc == -E2BIG) {
		response_edit_overflow(st);
		return;
	}
	if (rc != 0) {
		st->flags |= ARN_RF_BIT(LOCAL_RESET);
		http_up_detach(st);
		http_conn_abort(hc);
		return;
	}
	st->state |= HTTP_S_RESP_STARTED;
	http_timer_stop(&st->req_timer);    /* request_timeout ends with the response's start */
	http_timer_stop(&X(st)->try_timer); /* Envoy ignores a per-try timeout from now on */
	st->status = r->status;
	st->up_status = r->status;
	if (!st->details)
		st->details = "via_upstream"; /* Envoy's %RESPONSE_CODE_DETAILS% */
	st->resp_first_tsc = http_tsc(w);
	if (CS(st))
		arn_stats_inc(CS(st), w->slot,
			      arn_stats_code_class(ARN_CL_upstream_rq_1xx, r->status));
	FOR_FILTERS(hc, encode_response, st, false); /* trailers-only: grpc-status in the head */
}

void http_hcm_write_head(struct http_stream *st)
{
	write_resp_head(st);
}

static inline __attribute__((always_inline)) bool resp_end(struct http_stream *st);
static void resp_progress(struct http_stream *st);

static inline __attribute__((always_inline)) bool resp_ready(struct http_stream *st)
{
	for (;;) {
		struct http_conn *hc = st->hc;
		if (!st->up || (st->state & HTTP_S_LOCAL) || hc->state == HTTP_DC_CLOSED)
			return false;
		struct http_peer *dn = hc->dn;
		/* What the client's output holds goes before the next event is
		 * taken (its flow control), but an HTTP/1 response's head waits
		 * for its first body piece: the two go to TCP in one flush, not
		 * two (issue 17). The head is not held back: the connection's
		 * round flushes the client's output after this step
		 * (http_conn.c's run_once); an HTTP/2 stream's round does not,
		 * so its head goes at once. */
		if (dn->queued && (st->tx_body || dn->codec != &http_codec_h1) &&
		    dn->codec->flush(dn) != 0)
			return false;
		/* (one test of the state for the usual answer) */
		uint32_t s = st->state;
		if (!(s & (HTTP_S_RESP_DONE | HTTP_S_RESP_END_HELD | HTTP_S_ENC_MORE)))
			return true;
		if (s & HTTP_S_ENC_MORE) {
			if (!(s & HTTP_S_ENC_BODY))
				return false; /* HTTP_S_HEAD_HELD: a filter holds the head */
			/* a filter's output that was full: its next piece, once
			 * the client's codec took the last (the flush above),
			 * and flushed before anything else */
			if (st->enc->encode_more(st))
				st->state &= ~HTTP_S_ENC_MORE;
			else if (!dn->queued)
				return false; /* it waits for an answer: it steps the stream */
			continue;
		}
		if (!(s & HTTP_S_RESP_END_HELD))
			return s & HTTP_S_TUNNEL;
		/* an END that came with the body's last bytes, which are out
		 * now: handled where its decode would have given it */
		st->state &= ~HTTP_S_RESP_END_HELD;
		resp_progress(st);
		if (!resp_end(st))
			return false;
	}
}

/* The body's last bytes came with the END: it is handled now if they went
 * to the client (resp_ready's flush, which the END's own decode waited
 * for), else held. Not before: the client's output refers to the bytes in
 * the upstream's segment, which the stream's end frees with the upstream
 * connection's input, and a chunked body's last chunk takes the place in
 * the output their chunk's prefix holds. */
static bool resp_body_end_ready(struct http_stream *st)
{
	struct http_peer *dn = st->hc->dn;
	return !dn->queued || dn->codec->flush(dn) == 0;
}

/* The HTTP/1 upstream's decode with a body's last bytes and its END as
 * one event (issue 17: a decode and a round of the step less a response);
 * an HTTP/2 upstream's as it is. */
static int resp_decode(struct http_peer *src, struct http_msgbuf *mb, bool keep, struct http_ev *ev)
{
	if (src->codec == &http_codec_h1)
		return http_h1_decode_fused(src, mb, keep, ev);
	/* another codec's head comes alone (the step reads len and end of
	 * every response head: head_more) */
	ev->len = 0;
	ev->end = false;
	return src->codec->decode(src, mb, keep, ev);
}

static struct http_peer *resp_source(struct http_stream *st)
{
	return http_up_peer(st->up);
}

static struct http_msgbuf *resp_buffer(struct http_stream *st)
{
	return &st->resp;
}

static bool resp_keep(const struct http_stream *st)
{
	return !(st->state & HTTP_S_RESP_STARTED);
}

static void resp_progress(struct http_stream *st)
{
	uint64_t now = st->hc->w->now_ms;
	st->last_activity_ms = now;
	X(st)->up_activity_ms = now;
}

static bool resp_head(struct http_stream *st)
{
	struct http_conn *hc = st->hc;
	struct http_peer *dn = hc->dn, *up = http_up_peer(st->up);
	const struct arn_h1_msg *m = &st->resp.m;
	if (m->status < 200 && m->status != 101)
		return true; /* interim responses are not forwarded (100 was ours) */
	if (m->status == 101) {
		if (!(st->state & HTTP_S_UPGRADE)) {
			st->flags |= ARN_RF_BIT(UPSTREAM_PROTOCOL_ERROR);
			http_reset_reply(st, 502, "protocol error",
					 ARN_RF_BIT(UPSTREAM_PROTOCOL_ERROR),
					 "upstream_reset_before_response_started{protocol_error}");
			return false;
		}
		st->state |= HTTP_S_TUNNEL;
		http_timer_stop(&st->route_timer);
		dn->codec->upgrade(dn, true);
		up->codec->upgrade(up, true);
	} else if (st->state & HTTP_S_UPGRADE) {
		dn->codec->upgrade(dn, false);
	}
	if (X(st)->retry.rp && m->status != 101) {
		/* a retriable answer is never forwarded while a retry is
		 * allowed; the outcome of a retry is its success */
		const struct arn_cfg_retry_policy *rp = X(st)->retry.rp;
		bool rl = arn_h1_find(m, "x-envoy-ratelimited", 19, 0) >= 0;
		bool would = http_retry_on_status(rp, m->status, rl);
		if (!would && !rl && (rp->retry_on & ARN_CFG_RETRY_GRPC_ANY)) {
			int g = arn_h1_find(m, "grpc-status", 11, 0);
			would = g >= 0 &&
				http_retry_on_grpc(rp, m->hdrs[g].value, m->hdrs[g].value_len);
		}
		if (!would && !rl && (rp->retry_on & ARN_CFG_RETRY_RETRIABLE_HEADERS))
			would = http_retry_headers_match(rp->retriable_headers,
							 rp->n_retriable_headers, m);
		st->up_status = m->status;
		if (http_maybe_retry(st, would, HOST_AUTO)) {
			if (CS(st))
				arn_stats_inc(
				    CS(st), hc->w->slot,
				    arn_stats_code_class(ARN_CL_upstream_rq_1xx, m->status));
			hc->again = true;
			return false;
		}
	}
	if (st->resp.pins.overflow) {
		http_upstream_lost(st, false);
		return false;
	}
	write_resp_head(st);
	hc->again = true; /* the request side may go on (tunnel) */
	return true;
}

/* A body slice into the filter that took the response body (out of line:
 * most responses have none). @return false when the filter's output is
 * full: resp_ready has it go on after the client took it, and the run
 * goes round once more for that (its flush may be all it waits for). */
static __attribute__((noinline, cold)) bool enc_body(struct http_stream *st, const char *data,
						     size_t len)
{
	if (st->enc->encode_body(st, data, len, false))
		return true;
	st->state |= HTTP_S_ENC_MORE;
	st->hc->again = true;
	return false;
}

/* The response's end into that filter (its last output first): @return
 * true when it is out to the client's codec and flushed, so the end (the
 * trailers, the codec's end) may follow; false: held (RESP_END_HELD)
 * until resp_ready took what the filter has. */
static __attribute__((noinline, cold)) bool enc_end(struct http_stream *st)
{
	struct http_peer *dn = st->hc->dn;
	bool done = st->enc->encode_body(st, NULL, 0, true);
	if (done && !dn->queued)
		return true;
	if (!done)
		st->state |= HTTP_S_ENC_MORE;
	st->state |= HTTP_S_RESP_END_HELD;
	st->hc->again = true;
	return false;
}

static inline __attribute__((always_inline)) bool resp_body(struct http_stream *st,
							    const char *data, size_t len)
{
	struct http_peer *dn = st->hc->dn;
	if (CS(st))
		arn_stats_add(CS(st), st->hc->w->slot, ARN_CL_upstream_cx_rx_bytes_total, len);
	if (st->state & HTTP_S_ENC_BODY)
		return enc_body(st, data, len);
	st->tx_body += len;
	dn->codec->encode_body(dn, data, len);
	return true;
}

/* The response is complete: its end goes to the client. */
static bool resp_done(struct http_stream *st)
{
	struct http_conn *hc = st->hc;
	struct http_peer *dn = hc->dn;
	/* the upstream's trailers (grpc-status, ...) go on to a client whose
	 * codec carries them: HTTP/2, or HTTP/1.1 chunked with the HCM's
	 * enable_trailers (kept by the response's pins, as its head) */
	if ((st->resp.m.flags & ARN_H1_F_TRAILERS) && st->resp.m.n_trailers &&
	    !st->resp.pins.overflow) {
		FOR_FILTERS(hc, encode_response, st, true);
		/* unless a filter put them in the body (grpc_web's frame) */
		if (dn->codec->encode_trailers &&
		    !((st->state & HTTP_S_ENC_BODY) && st->enc->trailers_in_body &&
		      st->enc->trailers_in_body(st)))
			dn->codec->encode_trailers(dn, &st->resp.m);
	}
	dn->codec->encode_end(dn);
	/* the route timer stays armed: done, the stream is not timed out
	 * (http_route_timeout), and the next one may take it over */
	st->state |= HTTP_S_RESP_DONE;
	CL_INC(st, upstream_rq_completed);
	if (!(st->state & HTTP_S_REQ_DONE))
		hc->close_after = true; /* the rest of the request is not read */
	hc->again = true;
	/* The step stops here for an HTTP/1 client: a complete response
	 * takes no more events (resp_ready would answer so after its flush
	 * of the client's output, which the connection's round makes right
	 * after this step: http_conn.c's run_once). An HTTP/2 stream's round
	 * does not flush: its step goes on to resp_ready's. (bench_hcm: a
	 * round of resp_ready's tests a request) */
	return dn->codec != &http_codec_h1;
}

static inline __attribute__((always_inline)) bool resp_end(struct http_stream *st)
{
	/* (one test for the two: neither is common) */
	if (st->state & (HTTP_S_TUNNEL | HTTP_S_ENC_BODY)) {
		if (st->state & HTTP_S_TUNNEL)
			return true; /* the 101's own end: the tunnel runs until a close */
		if (!enc_end(st))
			return false; /* a filter's last output goes first */
	}
	if (st->resp.m.status < 200) {
		/* an interim response's end: the final one follows. Its head
		 * is done with (never forwarded), and so are the segments it
		 * pinned: kept to the stream's end, interim responses added up
		 * against the final head's bound (HTTP_PIN_MAX), and a server
		 * that sent 102 Processing now and then had its final response
		 * refused (503) after 64 of them */
		http_pins_release(&st->resp.pins);
		return true;
	}
	return resp_done(st);
}

/* The upstream closed its side: a body delimited by its close ends there,
 * anything else is cut. */
static bool resp_closed(struct http_stream *st, int rc, const struct http_ev *ev)
{
	if (!(st->state & HTTP_S_TUNNEL) && rc == -ESHUTDOWN && ev->type == HTTP_EV_END &&
	    (st->state & HTTP_S_RESP_STARTED)) {
		if ((st->state & HTTP_S_ENC_BODY) && !enc_end(st))
			return false;
		return resp_done(st);
	}
	http_upstream_lost(st, false);
	return false;
}

bool http_hcm_resp_keep_end(struct http_stream *st)
{
	struct http_conn *hc = st->hc;
	if ((st->state & (HTTP_S_RESP_END_HELD | HTTP_S_ENC_BODY | HTTP_S_ENC_MORE | HTTP_S_TUNNEL |
			  HTTP_S_LOCAL | HTTP_S_RESP_DONE)) != HTTP_S_RESP_END_HELD ||
	    hc->state != HTTP_DC_OPEN || st->resp.m.status < 200)
		return false;
	struct http_peer *dn = hc->dn;
	if (!dn->codec->own_body || dn->codec->own_body(dn) != 0) {
		HTTP_INC(hc, rs_upstream_close_no_mbuf);
		return false;
	}
	HTTP_INC(hc, rs_upstream_close_copied);
	/* the END where resp_ready would have taken it */
	st->state &= ~HTTP_S_RESP_END_HELD;
	resp_progress(st);
	resp_done(st);
	return true;
}

/* The upstream does not speak HTTP properly. */
static bool resp_error(struct http_stream *st, const struct http_ev *ev)
{
	(void)ev;
	struct http_conn *hc = st->hc;
	CL_INC(st, upstream_cx_protocol_error);
	if (!(st->state & HTTP_S_RESP_STARTED) &&
	    http_maybe_retry(st, http_retry_on_reset(X(st)->retry.rp, HTTP_RESET_RESET),
			     HOST_ERROR)) {
		hc->again = true;
		return false;
	}
	st->flags |= ARN_RF_BIT(UPSTREAM_PROTOCOL_ERROR);
	if (!(st->state & HTTP_S_RESP_STARTED)) {
		http_reset_reply(st, 502, "protocol error", ARN_RF_BIT(UPSTREAM_PROTOCOL_ERROR),
				 "upstream_reset_before_response_started{protocol_error}");
	} else {
		http_up_detach(st);
		http_conn_abort(hc);
	}
	return false;
}

/* The proxy had no buffer for the response (an HTTP/2 upstream's DATA
 * found no mbuf): the proxy gives the stream up, Envoy's local reset (LR,
 * 503 before the response started), not the upstream's protocol error:
 * not counted in upstream_cx_protocol_error (http2.rx_body_no_mbuf says
 * it). Retried as a reset, as Envoy retries its local resets. */
static bool resp_no_buffer(struct http_stream *st, const struct http_ev *ev)
{
	struct http_conn *hc = st->hc;
	if (ev->details && strcmp(ev->details, HTTP_TRL_DETAILS) == 0)
		HTTP_INC(hc, trailer_slots_exhausted); /* no trailer array (http_trl) */
	/* the worker's shortage, not the host's failure: a client that drains
	 * the mbufs must not get healthy hosts ejected (HOST_LOCAL) */
	if (!(st->state & HTTP_S_RESP_STARTED) &&
	    http_maybe_retry(st, http_retry_on_reset(X(st)->retry.rp, HTTP_RESET_RESET),
			     HOST_LOCAL)) {
		hc->again = true;
		return false;
	}
	st->state |= HTTP_S_LOCAL_FAIL;
	st->flags |= ARN_RF_BIT(LOCAL_RESET);
	if (!(st->state & HTTP_S_RESP_STARTED)) {
		http_reset_reply(st, ev->status, "local reset", ARN_RF_BIT(LOCAL_RESET),
				 ev->details);
	} else {
		http_up_detach(st);
		http_conn_abort(hc);
	}
	return false;
}

/* A held head came with its first body bytes or its END (fused): they
 * go on once it is written. The bytes lie in the upstream's input (or the
 * head's pins), which the next decode alone lets go of: none comes while
 * the head is held. */
static void resp_hold_rest(struct http_stream *st, const struct http_ev *ev)
{
	if ((st->state & (HTTP_S_HEAD_HELD | HTTP_S_ENC_BODY | HTTP_S_LOCAL)) != HTTP_S_HEAD_HELD ||
	    !st->res)
		return;
	st->res->held_data = ev->data;
	st->res->held_len = ev->len;
	st->res->held_end = ev->end;
}

static const struct direction response = {
    .ready = resp_ready,
    .body_end_ready = resp_body_end_ready,
    .end_held = HTTP_S_RESP_END_HELD,
    .head_more = true,
    .hold_rest = resp_hold_rest,
    .source = resp_source,
    .decode = resp_decode,
    .buffer = resp_buffer,
    .keep = resp_keep,
    .progress = resp_progress,
    .head = resp_head,
    .body = resp_body,
    .end = resp_end,
    .closed = resp_closed,
    .error = resp_error,
    .no_buffer = resp_no_buffer,
};

void http_resp_step(struct http_stream *st)
{
	step(st, &response);
}

void http_hcm_resume_resp_head(struct http_stream *st)
{
	if ((st->state & (HTTP_S_HEAD_HELD | HTTP_S_ENC_BODY | HTTP_S_LOCAL)) != HTTP_S_HEAD_HELD ||
	    !st->res)
		return;
	st->state &= ~HTTP_S_HEAD_HELD;
	write_resp_head(st);
	if ((st->state & HTTP_S_LOCAL) || !(st->state & (HTTP_S_RESP_STARTED | HTTP_S_ENC_BODY)))
		return; /* replied instead, or held again */
	struct http_res *x = st->res;
	const char *d = x->held_data;
	size_t len = x->held_len;
	bool end = x->held_end, go = true;
	x->held_len = 0;
	x->held_end = false;
	if (len) {
		/* as head_more would have had them */
		resp_progress(st);
		go = resp_body(st, d, len);
		if (!go && end && (st->state & HTTP_S_ENC_MORE))
			st->state |= HTTP_S_RESP_END_HELD;
		else if (go && end && !resp_body_end_ready(st)) {
			st->state |= HTTP_S_RESP_END_HELD;
			go = false;
		}
	}
	if (go && end)
		go = resp_end(st);
	if (go)
		http_resp_step(st);
}

/* ---- timers -----------------------------------------------------------------------------------
 */

static void stream_idle_timeout(struct http_timer *t)
{
	struct http_stream *st = OWNER(t, struct http_stream, idle_timer);
	struct http_conn *hc = st->hc;
	struct http_worker *w = hc->w;
	if (!(st->state & HTTP_S_STARTED) || !st->idle_timeout_ms || hc->state != HTTP_DC_OPEN)
		return;
	uint64_t idle = w->now_ms - st->last_activity_ms;
	if (idle < st->idle_timeout_ms) {
		http_timer_arm(w, t, st->idle_timeout_ms - idle);
		return;
	}
	if (!(st->state & HTTP_S_HEAD_DONE)) {
		/* the head never completed */
		pre_head_reply(st, 408, HTTP_BODY_SI, ARN_RF_BIT(STREAM_IDLE_TIMEOUT),
			       "stream_idle_timeout");
	} else if (!(st->state & HTTP_S_RESP_STARTED)) {
		hc->close_after = true;
		http_local_reply_route(st, 408, HTTP_BODY_SI, strlen(HTTP_BODY_SI),
				       ARN_RF_BIT(STREAM_IDLE_TIMEOUT), "stream_idle_timeout", NULL,
				       0);
	} else {
		st->flags |= ARN_RF_BIT(STREAM_IDLE_TIMEOUT);
		http_up_detach(st);
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
	struct http_conn *hc = st->hc;
	if (!(st->state & HTTP_S_STARTED) || (st->state & HTTP_S_HEAD_DONE) || !hc->tc ||
	    hc->state != HTTP_DC_OPEN)
		return;
	if (hc->res_waiting) {
		http_res_unwait(hc->w, hc);
		HTTP_INC(hc, downstream_rq_overload_close);
		pre_head_reply(st, 503, "envoy overloaded", ARN_RF_BIT(OVERLOAD_MANAGER),
			       "overload");
	} else {
		HTTP_INC(hc, downstream_rq_header_timeout);
		pre_head_reply(st, 408, "request header timeout", 0, "request_header_timeout");
	}
	http_conn_run(hc);
}

/* request_timeout: the whole request (head and body) did not arrive before
 * the response started; 408, and the connection closes (the rest of the
 * body is not read). */
static void req_timeout(struct http_timer *t)
{
	struct http_stream *st = OWNER(t, struct http_stream, req_timer);
	struct http_conn *hc = st->hc;
	if (!(st->state & HTTP_S_STARTED) ||
	    (st->state & (HTTP_S_REQ_DONE | HTTP_S_RESP_STARTED)) || !hc->tc ||
	    hc->state != HTTP_DC_OPEN)
		return;
	HTTP_INC(hc, downstream_rq_timeout);
	if (!(st->state & HTTP_S_HEAD_DONE)) {
		pre_head_reply(st, 408, "request timeout", 0, "request_overall_timeout");
	} else {
		hc->close_after = true;
		http_local_reply_route(st, 408, "request timeout", 15, 0, "request_overall_timeout",
				       NULL, 0);
	}
	http_conn_run(hc);
}
