/*
 * Envoy's HTTP connection manager and router filter for HTTP/1.1 on one
 * worker: accept (filter chain selection), parse requests, route them on
 * the compiled tables, answer locally (404 NR, 503 NC/UH/UF/UO/UC, 504 UT,
 * 400/431 for bad requests, redirects, direct responses) or proxy them to
 * an endpoint chosen by the cluster's load balancer, stream bodies both
 * ways with back-pressure, and log.
 *
 * Flow control: each direction owns at most HTTP_IN_MAX bytes taken from
 * TCP; a body piece is parsed only when the previous one has been handed to
 * the other side's TCP send buffer, so a slow reader closes the writer's
 * TCP window instead of growing memory (a 1 GB upload holds the two TCP
 * buffers and HTTP_IN_MAX, nothing more).
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
#include "arn_net.h"
#include "arn_tcp.h"
#include "http_int.h"

#define LINGER_MS 3000
#define MAX_EDITS ARN_H1_MAX_EDITS

#define HS(hc) ((hc)->hrt ? (hc)->hrt->stats : NULL)
#define HTTP_INC(hc, name)                                                                         \
	do {                                                                                       \
		if (HS(hc))                                                                        \
			arn_stats_inc(HS(hc), (hc)->w->slot, ARN_HTTP_##name);                     \
	} while (0)
#define HTTP_GAUGE(hc, name, d)                                                                    \
	do {                                                                                       \
		if (HS(hc))                                                                        \
			arn_stats_gauge_add(HS(hc), (hc)->w->slot, ARN_HTTP_##name, (d));          \
	} while (0)
#define CS(st) ((st)->crt ? (st)->crt->stats : NULL)
#define CL_INC(hc, name)                                                                           \
	do {                                                                                       \
		if (CS(&(hc)->st))                                                                 \
			arn_stats_inc(CS(&(hc)->st), (hc)->w->slot, ARN_CL_##name);                \
	} while (0)
#define CL_GAUGE(hc, name, d)                                                                      \
	do {                                                                                       \
		if (CS(&(hc)->st))                                                                 \
			arn_stats_gauge_add(CS(&(hc)->st), (hc)->w->slot, ARN_CL_##name, (d));     \
	} while (0)
#define LS_INC(hc, name)                                                                           \
	do {                                                                                       \
		if ((hc)->lrt)                                                                     \
			arn_stats_inc((hc)->lrt->stats, (hc)->w->slot, ARN_LS_##name);             \
	} while (0)

static void hc_run(struct http_conn *hc);
static void route_timeout(struct http_timer *t);
static void stream_idle_timeout(struct http_timer *t);
static void conn_idle_timeout(struct http_timer *t);
static void hdr_timeout(struct http_timer *t);
static void req_timeout(struct http_timer *t);
static void retry_fire(struct http_timer *t);
static void try_timeout(struct http_timer *t);
static void try_idle_timeout(struct http_timer *t);

/* The request's state that lives in its http_res (only requests in flight
 * have one; every stream that reached this code has one). */
#define X(st) (&(st)->res->x)

/* Request bodies kept for retries, per worker: a bound on top of each
 * listener's per_connection_buffer_limit so that retries can never take
 * the mbufs that TCP needs (about 4 MB with 2 KB mbufs). */
#define HTTP_RB_WORKER_SEGS 2048

static uint64_t now_us(struct http_worker *w, uint64_t since_tsc)
{
	return (http_tsc(w) - since_tsc) / w->tsc_per_us;
}

static bool msg_has_body(const struct arn_h1_msg *m)
{
	if (m->flags & ARN_H1_F_CHUNKED)
		return true;
	if (m->flags & ARN_H1_F_CONTENT_LENGTH)
		return m->content_length > 0;
	return false;
}

static void out_add_chain(struct http_out *o, struct rte_mbuf *m)
{
	if (!o->chain) {
		o->chain = m;
	} else if (rte_pktmbuf_chain(o->chain, m) != 0) {
		/* too many segments to link: drop the new part (never expected) */
		rte_pktmbuf_free(m);
	}
}

/* ---- access log ---------------------------------------------------------------------- */

static unsigned log_headers(const struct arn_h1_msg *m, struct arn_access_header *out, unsigned cap,
			    const struct http_stream *st, bool request)
{
	unsigned n = 0;
	bool rid = false, xff = false;
	for (unsigned i = 0; i < m->n_hdrs && n < cap; i++) {
		const struct arn_h1_header *h = &m->hdrs[i];
		struct arn_access_header *a = &out[n++];
		a->name = (struct arn_access_str){h->name, h->name_len};
		a->value = (struct arn_access_str){h->value, h->value_len};
		if (!request)
			continue;
		/* the values Arion sent upstream, as Envoy logs them */
		if (st->request_id && h->name_len == 12 &&
		    arn_h1_eq_nocase(h->name, 12, "x-request-id", 12)) {
			a->value = (struct arn_access_str){st->request_id, st->request_id_len};
			rid = true;
		}
		if (st->xff && h->name_len == 15 &&
		    arn_h1_eq_nocase(h->name, 15, "x-forwarded-for", 15) && !xff) {
			xff = true;
		}
	}
	if (request && st->request_id && !rid && n < cap)
		out[n++] = (struct arn_access_header){{"x-request-id", 12},
						      {st->request_id, st->request_id_len}};
	if (request && st->xff && !xff && n < cap)
		out[n++] =
		    (struct arn_access_header){{"x-forwarded-for", 15}, {st->xff, st->xff_len}};
	return n;
}

static void access_log(struct http_conn *hc)
{
	struct http_stream *st = &hc->st;
	struct http_hcm_rt *r = hc->hrt;
	if (!r || !r->n_loggers)
		return;
	struct http_worker *w = hc->w;
	const struct arn_h1_msg *m = &hc->msg;
	struct arn_access_record rec;
	memset(&rec, 0, sizeof(rec));
	rec.start_time_us = st->start_wall_us;
	rec.duration_us = now_us(w, st->start_tsc);
	rec.request_duration_us =
	    st->req_end_tsc ? (st->req_end_tsc - st->start_tsc) / w->tsc_per_us : UINT64_MAX;
	rec.response_duration_us =
	    st->resp_first_tsc ? (st->resp_first_tsc - st->start_tsc) / w->tsc_per_us : UINT64_MAX;
	rec.response_tx_duration_us =
	    st->resp_first_tsc ? now_us(w, st->resp_first_tsc) : UINT64_MAX;
	bool have_req = st->head_done && st->res;
	if (have_req) {
		rec.method = (struct arn_access_str){m->method_name.p, m->method_name.len};
		rec.path = (struct arn_access_str){m->path.p, m->path.len};
		rec.authority = (struct arn_access_str){m->authority.p, m->authority.len};
		rec.req_headers = w->log_req;
		rec.n_req_headers = log_headers(m, w->log_req, HTTP_MAX_HDRS + 2, st, true);
	}
	rec.scheme = (struct arn_access_str){"http", 4};
	rec.protocol = st->version == 10 ? (struct arn_access_str){"HTTP/1.0", 8}
					 : (struct arn_access_str){"HTTP/1.1", 8};
	if (st->resp_started && !st->local && st->res) {
		rec.resp_headers = w->log_resp;
		rec.n_resp_headers =
		    log_headers(&st->resp, w->log_resp, HTTP_MAX_HDRS - 1, st, false);
		/* the header Arion added, for %RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% */
		char *svc = st->service_time;
		w->log_resp[rec.n_resp_headers++] = (struct arn_access_header){
		    {"x-envoy-upstream-service-time", 29}, {svc, (uint32_t)strlen(svc)}};
	}
	rec.response_code = st->status;
	if (st->details)
		rec.response_code_details =
		    (struct arn_access_str){st->details, (uint32_t)strlen(st->details)};
	rec.response_flags = st->flags;
	rec.bytes_received = st->rx_body;
	rec.bytes_sent = st->tx_body;
	rec.downstream_remote = (struct arn_access_addr){hc->raddr, hc->rport};
	rec.downstream_local = (struct arn_access_addr){hc->laddr, hc->lport};
	if (st->ep_addr)
		rec.upstream_host = (struct arn_access_addr){st->ep_addr, st->ep_port};
	if (st->crt)
		rec.upstream_cluster =
		    (struct arn_access_str){st->crt->name, (uint32_t)st->crt->len};
	if (st->route && st->route->name)
		rec.route_name =
		    (struct arn_access_str){st->route->name, (uint32_t)strlen(st->route->name)};
	rec.connection_id = hc->id;
	rec.upstream_request_attempt_count = st->attempts;
	rec.health_check = st->health_check;
	for (unsigned i = 0; i < r->n_loggers; i++)
		arn_access_log_write(r->loggers[i], w->slot, &rec);
}

/* ---- closing ------------------------------------------------------------------------------ */

#define abort_conn(hc) abort_conn_(hc, __LINE__)
static void abort_conn_(struct http_conn *hc, int line)
{
	if (hc->state == HTTP_DC_CLOSED || !hc->tc)
		return;
	ARN_DEBUG(HTTP, "connection %llx: reset (line %d)", (unsigned long long)hc->id, line);
	HTTP_INC(hc, downstream_rq_tx_reset);
	hc->state = HTTP_DC_CLOSED;
	hc->aborted = true;
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
	hc->shut = false;
}

/* Closing: once the reply is out, FIN; discard what the client still sends
 * (a close with unread data would reset and could destroy our response in
 * flight); close when the client's FIN arrives or the linger time ends. */
static void closing_step(struct http_conn *hc)
{
	if (!hc->tc || http_out_busy(&hc->out))
		return;
	http_in_free(&hc->in);
	arn_tcp_rx_consume(hc->tc, arn_tcp_rx_pending(hc->tc));
	if (!hc->shut) {
		hc->shut = true;
		arn_tcp_shutdown(hc->tc);
	}
	if (hc->peer_eof) {
		hc->state = HTTP_DC_CLOSED;
		arn_tcp_close(hc->tc);
	}
}

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

static void stream_reset(struct http_conn *hc)
{
	struct http_stream *st = &hc->st;
	memset(st, 0, sizeof(*st));
	st->route_timer.fn = route_timeout;
	st->idle_timer.fn = stream_idle_timeout;
	st->hdr_timer.fn = hdr_timeout;
	st->req_timer.fn = req_timeout;
}

/* A request's own state in its http_res: fresh for each request. */
static void xreq_init(struct http_conn *hc, struct http_res *r)
{
	struct http_xreq *x = &r->x;
	memset(x, 0, sizeof(*x));
	x->hc = hc;
	x->retry_timer.fn = retry_fire;
	x->try_timer.fn = try_timeout;
	x->try_idle_timer.fn = try_idle_timeout;
}

static void stream_timers_cancel(struct http_stream *st)
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

/* ---- the request body kept for retries ------------------------------------------------- */

static void rb_free(struct http_conn *hc)
{
	struct http_stream *st = &hc->st;
	if (!st->res)
		return;
	struct rte_mbuf *m = X(st)->rb_head;
	while (m) {
		struct rte_mbuf *n = m->next;
		m->next = NULL;
		m->nb_segs = 1;
		rte_pktmbuf_free_seg(m);
		m = n;
	}
	hc->w->rb_segs -= X(st)->rb_segs;
	X(st)->rb_head = X(st)->rb_tail = X(st)->replay = NULL;
	X(st)->rb_bytes = X(st)->rb_segs = 0;
	st->replaying = false;
}

/* Keep a copy of body bytes for a later attempt, packed into whole mbufs.
 * @return false when the listener's buffer limit (Envoy buffers a request
 * for retries up to per_connection_buffer_limit_bytes), the worker's bound
 * or the mbufs ran out. */
static bool rb_append(struct http_conn *hc, const char *p, size_t n)
{
	struct http_worker *w = hc->w;
	struct http_stream *st = &hc->st;
	uint32_t limit = hc->lsn ? hc->lsn->per_connection_buffer_limit : 1024 * 1024;
	if ((uint64_t)X(st)->rb_bytes + n > limit)
		return false;
	while (n) {
		struct rte_mbuf *t = X(st)->rb_tail;
		size_t room = t ? rte_pktmbuf_tailroom(t) : 0;
		if (!room) {
			if (w->rb_segs >= HTTP_RB_WORKER_SEGS)
				return false;
			struct rte_mbuf *m = http_mbuf(w);
			if (!m)
				return false;
			m->next = NULL;
			if (t)
				t->next = m;
			else
				X(st)->rb_head = m;
			X(st)->rb_tail = m;
			X(st)->rb_segs++;
			w->rb_segs++;
			continue;
		}
		size_t k = n < room ? n : room;
		memcpy(rte_pktmbuf_mtod_offset(t, char *, t->data_len), p, k);
		t->data_len = (uint16_t)(t->data_len + k);
		t->pkt_len = t->data_len;
		p += k;
		n -= k;
		X(st)->rb_bytes += (uint32_t)k;
	}
	return true;
}

/*
 * Envoy's per-host outcome of a request sent to st->pool's host: rq_timeout
 * (and rq_error) after the route timeout, rq_error for a failed or reset
 * exchange or a 5xx, rq_success otherwise; a request the client abandoned
 * counts in neither. Runs once, at stream end.
 */
enum { HOST_AUTO = 0, HOST_ERROR, HOST_TIMEOUT };

static void host_rq_done(struct http_conn *hc, int outcome)
{
	struct http_worker *w = hc->w;
	struct http_stream *st = &hc->st;
	struct http_pool *p = st->pool;
	st->counted_host = false;
	if (!p)
		return;
	struct http_host_ctr *c = http_host_ctr(p->host, w->idx);
	const uint32_t failed =
	    ARN_RF_BIT(UPSTREAM_CONNECTION_FAILURE) | ARN_RF_BIT(UPSTREAM_CONNECTION_TERMINATION) |
	    ARN_RF_BIT(UPSTREAM_PROTOCOL_ERROR) | ARN_RF_BIT(UPSTREAM_OVERFLOW) |
	    ARN_RF_BIT(UPSTREAM_REMOTE_RESET) | ARN_RF_BIT(LOCAL_RESET);
	if (st->timed_out || outcome == HOST_TIMEOUT) {
		HTTP_HOST_ADD(c, rq_timeout, 1);
		HTTP_HOST_ADD(c, rq_error, 1);
	} else if (outcome == HOST_ERROR || (st->flags & failed)) {
		HTTP_HOST_ADD(c, rq_error, 1);
	} else if (st->up_status) {
		if (st->up_status >= 500)
			HTTP_HOST_ADD(c, rq_error, 1);
		else
			HTTP_HOST_ADD(c, rq_success, 1);
	} else if (!(st->flags & ARN_RF_BIT(DOWNSTREAM_CONNECTION_TERMINATION))) {
		HTTP_HOST_ADD(c, rq_error, 1);
	}
	HTTP_HOST_ADD(c, rq_active, -1);
	if (p->n_counted)
		p->n_counted--;
	http_pool_maybe_retire(w, p);
}

static void stream_end(struct http_conn *hc)
{
	struct http_worker *w = hc->w;
	struct http_stream *st = &hc->st;
	stream_timers_cancel(st);
	if (st->crt && st->res)
		http_retry_release(&X(st)->retry, &st->crt->retries_active);
	rb_free(hc);
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
					      now_us(w, st->start_tsc));
	}
	if (st->counted_host)
		host_rq_done(hc, HOST_AUTO);
	if (st->counted_up) {
		CL_GAUGE(hc, upstream_rq_active, -1);
		if (CS(st) && st->up_start_tsc)
			arn_stats_hist_record(CS(st), w->slot, ARN_CL_upstream_rq_time,
					      now_us(w, st->up_start_tsc));
		__atomic_fetch_sub(&st->crt->rq_active, 1, __ATOMIC_RELAXED);
	}
	if (st->active)
		access_log(hc);
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
		xreq_init(hc, res);
	}
	stream_reset(hc);
	st->res = res;
	if (!hc->tc)
		return;
	if (hc->close_after) {
		start_close(hc);
	} else {
		hc->idle_timer.fn = conn_idle_timeout;
		if (hc->hcm && hc->hcm->idle_timeout_ms)
			http_timer_arm(w, &hc->idle_timer, hc->hcm->idle_timeout_ms);
		hc->again = true; /* pipelined requests may wait in the input */
	}
}

/* ---- health checks and draining ------------------------------------------------------------ */

/*
 * After POST /healthcheck/fail every response closes its connection
 * ("connection: close"), as Envoy's drain manager makes the HTTP/1
 * connection manager do while health checks fail, so keep-alive clients
 * reconnect, which a load balancer that saw the failed health check sends
 * elsewhere. Counted once per connection in downstream_cx_drain_close.
 * Listeners with drain_type MODIFY_ONLY are left alone, as in Envoy.
 */
static void drain_on_failed_healthcheck(struct http_conn *hc)
{
	if (!http_healthcheck_failed() || (hc->lsn && hc->lsn->drain_modify_only))
		return;
	hc->close_after = true;
	if (!hc->drain_counted) {
		hc->drain_counted = true;
		HTTP_INC(hc, downstream_cx_drain_close);
	}
}

/* Envoy's health check filter marks every other response while health
 * checks fail, so a downstream Envoy ejects this host at once. */
static bool hc_fail_header(const struct http_conn *hc, struct arn_h1_edit *e)
{
	if (!hc->hcm || !hc->hcm->health_check || hc->st.health_check || !http_healthcheck_failed())
		return false;
	*e = (struct arn_h1_edit){.name = "x-envoy-immediate-health-check-fail",
				  .name_len = 35,
				  .value = "true",
				  .value_len = 4,
				  .op = ARN_H1_EDIT_SET};
	return true;
}

/* Pass-through mode with cache_time: remember the upstream's answer. */
static void hc_cache_set(struct http_conn *hc, unsigned status)
{
	const struct arn_cfg_hc_filter *f = hc->hcm ? hc->hcm->health_check : NULL;
	if (!f || !f->pass_through || !f->cache_time_ms || !hc->hrt)
		return;
	__atomic_store_n(&hc->hrt->hc_cache_status, (uint16_t)status, __ATOMIC_RELAXED);
	__atomic_store_n(&hc->hrt->hc_cache_until_ms, hc->w->now_ms + f->cache_time_ms,
			 __ATOMIC_RELAXED);
}

static unsigned hc_cached(const struct http_conn *hc)
{
	const struct arn_cfg_hc_filter *f = hc->hcm->health_check;
	if (!f->pass_through || !f->cache_time_ms || !hc->hrt)
		return 0;
	if (__atomic_load_n(&hc->hrt->hc_cache_until_ms, __ATOMIC_RELAXED) <= hc->w->now_ms)
		return 0;
	return __atomic_load_n(&hc->hrt->hc_cache_status, __ATOMIC_RELAXED);
}

/* cluster_min_healthy_percentages, as Envoy: every named cluster must exist
 * and have at least that share of healthy or degraded hosts. */
static unsigned hc_clusters(const struct arn_cfg_hc_filter *f, const struct arn_cfg_gen *g,
			    const char **details)
{
	*details = "health_check_ok_cluster_healthy";
	for (size_t i = 0; i < f->n_min_healthy; i++) {
		const struct arn_cfg_hc_min_healthy *m = &f->min_healthy[i];
		struct arn_cfg_cluster_view v;
		if (!g || arn_cfg_cluster_resolve(g, &m->cluster, &v) != 0) {
			*details = "health_check_failed_no_cluster_found";
			return 503;
		}
		uint64_t total = 0, ok = 0;
		for (size_t p = 0; p < v.endpoints->n_priorities; p++) {
			const struct arn_cfg_priority *pr = &v.endpoints->priorities[p];
			for (size_t l = 0; l < pr->n_localities; l++)
				for (size_t k = 0; k < pr->localities[l].n_endpoints; k++) {
					uint8_t h = pr->localities[l].endpoints[k].health;
					total++;
					ok += h == ARN_CFG_HEALTH_UNKNOWN ||
					      h == ARN_CFG_HEALTH_HEALTHY ||
					      h == ARN_CFG_HEALTH_DEGRADED;
				}
		}
		if (total == 0) {
			if (m->percent == 0)
				continue;
			*details = "health_check_failed_cluster_empty";
			return 503;
		}
		if (100 * ok < total * m->percent) {
			*details = "health_check_failed_cluster_unhealthy";
			return 503;
		}
	}
	return 200;
}

static void local_reply(struct http_conn *hc, unsigned status, const char *body, size_t blen,
			uint32_t flags, const char *details, const struct arn_h1_edit *extra,
			unsigned n_extra);

/*
 * Envoy's HTTP health check filter: a request whose headers match is a
 * health check. Without pass-through it is answered here, never upstream:
 * 200, or 503 (flag LH) after /healthcheck/fail or when a cluster of
 * cluster_min_healthy_percentages is short of healthy hosts. With
 * pass-through it goes upstream unless health checks fail (503 here) or a
 * cached answer is fresh. @return true when answered.
 */
static bool health_check_filter(struct http_conn *hc, const struct arn_cfg_gen *g,
				const struct arn_cfg_request *req)
{
	const struct arn_cfg_hc_filter *f = hc->hcm->health_check;
	struct http_stream *st = &hc->st;
	if (!arn_cfg_headers_match(f->headers, f->n_headers, req))
		return false;
	st->health_check = true;
	unsigned status = 200, cached = 0;
	const char *details = "health_check_ok";
	if (http_healthcheck_failed()) {
		status = 503;
		details = "health_check_failed";
	} else if (f->pass_through) {
		cached = hc_cached(hc);
		if (!cached)
			return false; /* the upstream answers */
		status = cached;
		details = "health_check_cached";
	} else if (f->n_min_healthy) {
		status = hc_clusters(f, g, &details);
	}
	uint32_t flags = status >= 200 && status < 300 ? 0 : ARN_RF_BIT(FAILED_LOCAL_HEALTH_CHECK);
	local_reply(hc, status, NULL, 0, flags, details, NULL, 0);
	return true;
}

/* ---- local replies -------------------------------------------------------------------------- */

static void local_reply(struct http_conn *hc, unsigned status, const char *body, size_t blen,
			uint32_t flags, const char *details, const struct arn_h1_edit *extra,
			unsigned n_extra)
{
	struct http_stream *st = &hc->st;
	struct http_worker *w = hc->w;
	st->flags |= flags;
	st->details = details;
	if (st->resp_started) {
		/* too late for a reply: Envoy resets the stream */
		if (HS(hc))
			HTTP_INC(hc, rq_reset_after_downstream_response_started);
		http_up_detach(hc);
		abort_conn(hc);
		return;
	}
	http_up_detach(hc);
	http_timer_cancel(&st->route_timer);
	/* the stream idle timer runs on: the reply may be slow to go */
	http_timer_cancel(&st->hdr_timer);
	http_timer_cancel(&st->req_timer);
	if (st->res) {
		http_timer_cancel(&X(st)->retry_timer);
		http_timer_cancel(&X(st)->try_timer);
		http_timer_cancel(&X(st)->try_idle_timer);
	}
	st->retry_wait = false;
	st->local = true;
	if (!st->head_done || (!st->req_done && msg_has_body(&hc->msg)))
		hc->close_after = true;
	drain_on_failed_healthcheck(hc);
	struct arn_h1_edit more[MAX_EDITS];
	if (n_extra < MAX_EDITS && hc_fail_header(hc, &more[n_extra])) {
		if (n_extra)
			memcpy(more, extra, n_extra * sizeof(*extra));
		extra = more;
		n_extra++;
	}
	st->local_wait_end = !st->req_done && !hc->close_after;
	uint32_t dlen;
	const char *date = http_date(w, &dlen);
	const char *server = hc->hcm && hc->hcm->server_name ? hc->hcm->server_name : "envoy";
	struct http_wchain c;
	http_wchain_init(&c, w);
	http_local_reply_write(&c.wb, status, body, blen, server, date, dlen, extra, n_extra,
			       hc->close_after, st->method == ARN_H1_M_HEAD);
	struct rte_mbuf *m = http_wchain_finish(&c);
	if (!m) {
		abort_conn(hc);
		return;
	}
	out_add_chain(&hc->out, m);
	st->status = (uint16_t)status;
	st->resp_started = true;
	st->resp_done = true;
	st->tx_body = st->method == ARN_H1_M_HEAD ? 0 : blen;
	hc->again = true;
}

/* A local reply with the route's response_headers_to_add (direct responses,
 * redirects, and errors after a route was chosen, as Envoy applies them).
 * When they do not fit (text or edit slots), the reply is not sent without
 * them (issue 12: a response never leaves without its edits): a 500 with
 * none of the route's edits goes instead, counted in rs_edit_overflow. */
static void local_reply_route(struct http_conn *hc, unsigned status, const char *body, size_t blen,
			      uint32_t flags, const char *details, const char *location,
			      size_t loclen)
{
	struct http_stream *st = &hc->st;
	struct arn_h1_edit e[MAX_EDITS];
	unsigned n = 0;
	if (location)
		e[n++] = (struct arn_h1_edit){.name = "location",
					      .name_len = 8,
					      .value = location,
					      .value_len = (uint32_t)loclen,
					      .op = ARN_H1_EDIT_SET};
	if (st->route && st->res) {
		struct http_resp_ctx x = {
		    .hcm = NULL, /* server: written by the local reply itself */
		    .rt = st->rt,
		    .vhost = st->vhost,
		    .route = st->route,
		    .wc = st->wc,
		    .service_ms = -1,
		    .raddr = hc->raddr,
		    .rport = hc->rport,
		    .text = st->res->text + st->text_len,
		    .text_cap = HTTP_TEXT - st->text_len,
		};
		/* one slot stays for local_reply's health check header */
		int k = http_resp_edits(&x, NULL, e + n, MAX_EDITS - 1 - n);
		if (k < 0) {
			HTTP_INC(hc, rs_edit_overflow);
			local_reply(hc, 500, NULL, 0, flags, "response_edits_overflow", NULL, 0);
			return;
		}
		n += (unsigned)k;
		st->text_len += x.text_len;
	}
	local_reply(hc, status, body, blen, flags, details, e, n);
}

static void reset_reply(struct http_conn *hc, unsigned status, const char *reason, uint32_t flags,
			const char *details)
{
	char body[160];
	int k = snprintf(body, sizeof(body), "%s%s", HTTP_BODY_RESET, reason);
	local_reply_route(hc, status, body, (size_t)k, flags, details, NULL, 0);
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
	local_reply(hc, status, body, body ? strlen(body) : 0, flags, details, NULL, 0);
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

/* ---- routing ------------------------------------------------------------------------------------
 */

static uint32_t lb_active(void *ctx, const struct arn_cfg_endpoint *ep)
{
	struct http_conn *hc = ctx;
	struct http_pool *p = hc->st.crt ? http_pool_find(hc->w, hc->st.crt->name, hc->st.crt->len,
							  ep->addr, ep->port)
					 : NULL;
	return p ? p->n_active : 0;
}

static uint64_t *lb_rr(struct http_worker *w, uint64_t key)
{
	key |= 1;
	for (unsigned i = 0; i < HTTP_LB_SLOTS; i++) {
		struct http_lb_state *s = &w->lb[(key + i) & (HTTP_LB_SLOTS - 1)];
		if (s->key == key)
			return &s->rr;
		if (s->key == 0) {
			s->key = key;
			s->rr = 0;
			return &s->rr;
		}
	}
	return NULL;
}

/* ---- attempts and retries ---------------------------------------------------------------- */

static void attempt_start(struct http_conn *hc);

/* One attempt is over (failed, or answered with a response that is retried):
 * its per-host and per-cluster request counts end. */
static void attempt_end(struct http_conn *hc, int outcome)
{
	struct http_stream *st = &hc->st;
	if (st->counted_host)
		host_rq_done(hc, outcome);
	if (st->counted_up) {
		CL_GAUGE(hc, upstream_rq_active, -1);
		__atomic_fetch_sub(&st->crt->rq_active, 1, __ATOMIC_RELAXED);
		st->counted_up = false;
	}
}

/* Drop this attempt's upstream and start the back-off to the next one. */
static void retry_schedule(struct http_conn *hc)
{
	struct http_worker *w = hc->w;
	struct http_stream *st = &hc->st;
	const struct arn_cfg_retry_policy *rp = X(st)->retry.rp;
	http_up_detach(hc); /* mid-exchange: the connection is closed, never reused */
	http_timer_cancel(&X(st)->try_timer);
	http_timer_cancel(&X(st)->try_idle_timer);
	http_pins_release(&st->resp_pins);
	st->pool = NULL;
	st->req_head_sent = false;
	st->attempt_sent = false;
	st->replaying = false;
	X(st)->replay = NULL;
	st->up_chunked = false;
	st->up_chunker.open = false;
	st->up_status = 0;
	st->retry_wait = true;
	CL_INC(hc, upstream_rq_retry);
	CL_INC(hc, upstream_rq_retry_backoff_exponential);
	uint32_t base = rp->backoff_base_ms ? rp->backoff_base_ms : 25;
	uint32_t max = rp->backoff_max_ms ? rp->backoff_max_ms : 10 * base;
	http_timer_arm(w, &X(st)->retry_timer,
		       http_retry_backoff_ms(base, max, X(st)->retry.n, http_rand(w)));
	/* the route's timeout counts from the end of the request, whatever
	 * the attempts do (Envoy's global timeout) */
	if (st->req_done && st->timeout_ms && !st->route_timer_armed) {
		st->route_timer_armed = true;
		http_timer_arm(w, &st->route_timer, st->timeout_ms);
	}
	ARN_DEBUG(HTTP, "connection %llx: retry %u of %u", (unsigned long long)hc->id,
		  X(st)->retry.n, rp->num_retries);
}

/*
 * An attempt ended with an outcome that the retry policy may retry
 * (@p would). Never once the response started downstream. @return true
 * when a retry is scheduled (the caller stops); otherwise the caller gives
 * the final answer, flagged URX when retries ran out and UO when the
 * max_retries circuit breaker refused one, as Envoy flags it.
 */
static bool maybe_retry(struct http_conn *hc, bool would, int outcome)
{
	struct http_stream *st = &hc->st;
	if (!st->res || !X(st)->retry.rp || !st->crt || st->resp_started || st->local || st->tunnel)
		return false;
	bool success = false;
	uint32_t max = st->cluster ? st->cluster->thresholds[0].max_retries : 3;
	enum http_retry_status s =
	    http_retry_should(&X(st)->retry, would, &st->crt->retries_active, max, &success);
	if (success)
		CL_INC(hc, upstream_rq_retry_success);
	switch (s) {
	case HTTP_RETRY_YES:
		attempt_end(hc, outcome);
		retry_schedule(hc);
		return true;
	case HTTP_RETRY_LIMIT:
		CL_INC(hc, upstream_rq_retry_limit_exceeded);
		st->flags |= ARN_RF_BIT(UPSTREAM_RETRY_LIMIT_EXCEEDED);
		break;
	case HTTP_RETRY_OVERFLOW:
		CL_INC(hc, upstream_rq_retry_overflow);
		st->flags |= ARN_RF_BIT(UPSTREAM_OVERFLOW);
		break;
	default:
		break;
	}
	return false;
}

/* The body outgrew what may be kept: no retry for this request (Envoy drops
 * its retry state then). */
static void rb_abandon(struct http_conn *hc)
{
	struct http_stream *st = &hc->st;
	st->rb_on = false;
	rb_free(hc);
	if (X(st)->retry.rp) {
		if (st->crt)
			http_retry_release(&X(st)->retry, &st->crt->retries_active);
		X(st)->retry.rp = NULL;
		CL_INC(hc, retry_or_shadow_abandoned);
	}
}

static void retry_fire(struct http_timer *t);

/* A connection could not be had for this attempt (local failure). */
static void attempt_connect_failed(struct http_conn *hc)
{
	CL_INC(hc, upstream_cx_connect_fail);
	if (maybe_retry(hc, http_retry_on_reset(X(&hc->st)->retry.rp, HTTP_RESET_CONNECT_FAILURE),
			HOST_ERROR))
		return;
	reset_reply(hc, 503, "local connection failure", ARN_RF_BIT(UPSTREAM_CONNECTION_FAILURE),
		    "upstream_reset_before_response_started{local_connection_failure}");
}

static void route_to_cluster(struct http_conn *hc, const struct arn_cfg_gen *g,
			     const struct arn_cfg_request *req)
{
	struct http_worker *w = hc->w;
	struct http_stream *st = &hc->st;
	const struct arn_cfg_route_action *a = &st->route->route;
	struct arn_cfg_ref ref;
	if (arn_cfg_route_cluster(a, req, &ref) != 0) {
		HTTP_INC(hc, no_cluster);
		local_reply_route(hc, 503, NULL, 0, ARN_RF_BIT(NO_CLUSTER_FOUND),
				  "cluster_not_found", NULL, 0);
		return;
	}
	if (a->spec == ARN_CFG_CLUSTER_WEIGHTED)
		for (size_t i = 0; i < a->n_weighted; i++)
			if (a->weighted[i].cluster.name == ref.name ||
			    (a->weighted[i].cluster.len == ref.len &&
			     memcmp(a->weighted[i].cluster.name, ref.name, ref.len) == 0)) {
				st->wc = &a->weighted[i];
				break;
			}
	struct arn_cfg_cluster_view v;
	if (!g || arn_cfg_cluster_resolve(g, &ref, &v) != 0) {
		/* G5: a route to a cluster that does not exist */
		HTTP_INC(hc, no_cluster);
		unsigned code = a->cluster_not_found_status ? a->cluster_not_found_status : 503;
		local_reply_route(hc, code, NULL, 0, ARN_RF_BIT(NO_CLUSTER_FOUND),
				  "cluster_not_found", NULL, 0);
		return;
	}
	arn_cfg_pin(v.cluster);
	arn_cfg_pin(v.endpoints);
	st->cluster = v.cluster;
	st->endpoints = v.endpoints;
	/* the name stays valid: it lives in the pinned route table, or (cluster_
	 * header) in the request head, whose segments are pinned too */
	X(st)->cref = ref;
	st->crt = http_rt_cluster(ref.name, ref.len,
				  ref.hash ? ref.hash : arn_cfg_hash(ref.name, ref.len));
	if (st->crt)
		http_crt_ref(st->crt); /* the stream's, until stream_release_cfg */
	st->timeout_ms = a->timeout_ms;
	/* the route's idle_timeout replaces the HCM's stream_idle_timeout; 0
	 * turns it off for this route */
	if (a->idle_timeout_set) {
		st->idle_timeout_ms = a->idle_timeout_ms;
		st->last_activity_ms = w->now_ms;
		if (st->idle_timeout_ms)
			http_timer_arm(w, &st->idle_timer, st->idle_timeout_ms);
		else
			http_timer_cancel(&st->idle_timer);
	}
	/* What the head put in the text (a normalized path, ...) stays; the
	 * attempts' edits go after it. The request id is the same for every
	 * attempt, as the request's header is in Envoy. Both are set here, not
	 * by the first attempt that reaches an upstream: that may be a retry
	 * (the first connection refused), and the mark would then be 0 and the
	 * id all zeros. */
	X(st)->text_mark = st->text_len;
	X(st)->rid_hi = http_rand(w);
	X(st)->rid_lo = http_rand(w);
	/* retries: not for upgrades (a tunnel cannot be replayed) */
	http_retry_init(&X(st)->retry, st->upgrade_req ? NULL : &a->retry);
	st->rb_on = X(st)->retry.rp && msg_has_body(&hc->msg);
	attempt_start(hc);
}

/* Pick a host and get a connection to it for the next attempt. */
static void attempt_start(struct http_conn *hc)
{
	struct http_worker *w = hc->w;
	struct http_stream *st = &hc->st;
	const struct arn_cfg_route_action *a = &st->route->route;
	st->attempts++;
	struct http_lb_in in = {
	    .cluster = st->cluster,
	    .eps = st->endpoints,
	    .rr = st->crt ? lb_rr(w, st->crt->hash)
			  : lb_rr(w, arn_cfg_hash(X(st)->cref.name, X(st)->cref.len)),
	    .rand = http_rand(w),
	    .active = lb_active,
	    .ctx = hc,
	};
	if (st->cluster->lb == ARN_CFG_LB_RING_HASH || st->cluster->lb == ARN_CFG_LB_MAGLEV)
		in.has_hash = http_lb_hash(a, &hc->msg, hc->raddr, &in.hash);
	struct http_lb_out out;
	if (http_lb_pick(&in, &out) != 0) {
		CL_INC(hc, upstream_cx_none_healthy);
		local_reply_route(hc, 503, HTTP_BODY_UH, strlen(HTTP_BODY_UH),
				  ARN_RF_BIT(NO_HEALTHY_UPSTREAM), "no_healthy_upstream", NULL, 0);
		return;
	}
	if (out.panic)
		CL_INC(hc, lb_healthy_panic);
	st->ep_addr = out.ep->addr;
	st->ep_port = out.ep->port;
	st->ep_host = out.ep->hostname;
	const struct arn_cfg_thresholds *th = &st->cluster->thresholds[0];
	if (st->crt &&
	    __atomic_load_n(&st->crt->rq_active, __ATOMIC_RELAXED) >= (int32_t)th->max_requests) {
		CL_INC(hc, upstream_rq_pending_overflow);
		reset_reply(hc, 503, "overflow", ARN_RF_BIT(UPSTREAM_OVERFLOW), "overflow");
		return;
	}
	struct http_pool *p = http_pool_get(w, &X(st)->cref, st->crt, out.ep->addr, out.ep->port);
	if (!p) {
		reset_reply(hc, 503, "overflow", ARN_RF_BIT(UPSTREAM_OVERFLOW), "overflow");
		return;
	}
	int rc = http_up_acquire(w, p, hc, hc->laddr);
	if (rc == -EBUSY) {
		reset_reply(hc, 503, "overflow", ARN_RF_BIT(UPSTREAM_OVERFLOW), "overflow");
		return;
	}
	if (rc != 0) {
		attempt_connect_failed(hc);
		return;
	}
	if (st->crt) {
		__atomic_fetch_add(&st->crt->rq_active, 1, __ATOMIC_RELAXED);
		st->counted_up = true;
		CL_INC(hc, upstream_rq_total);
		CL_GAUGE(hc, upstream_rq_active, 1);
	}
	if (p->host) {
		/* the pool stays (and keeps its host) until the attempt uncounts */
		struct http_host_ctr *hc_ = http_host_ctr(p->host, w->idx);
		HTTP_HOST_ADD(hc_, rq_total, 1);
		HTTP_HOST_ADD(hc_, rq_active, 1);
		p->n_counted++;
		st->counted_host = true;
	}
	if (st->attempts == 1)
		HTTP_INC(hc, rq_total);
	if (st->up && st->up->connected)
		http_dc_upstream_ready(hc);
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
		local_reply(hc, 400, NULL, 0, 0, "path_normalization_failed", NULL, 0);
		return;
	}

	/* Envoy without proxy_100_continue answers the expectation itself */
	if (m->flags & ARN_H1_F_EXPECT_CONTINUE) {
		struct http_wchain c;
		http_wchain_init(&c, w);
		arn_h1_put(&c.wb, "HTTP/1.1 100 Continue\r\n\r\n", 25);
		struct rte_mbuf *cm = http_wchain_finish(&c);
		if (cm)
			out_add_chain(&hc->out, cm);
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
			local_reply(hc, 400, NULL, 0, 0, "path_normalization_failed", NULL, 0);
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
	if (h->health_check && health_check_filter(hc, g, &req))
		return;
	struct arn_cfg_route_match mt;
	if (!rt || arn_cfg_route_match(rt, &req, &mt) != 0) {
		HTTP_INC(hc, no_route);
		local_reply(hc, 404, NULL, 0, ARN_RF_BIT(NO_ROUTE_FOUND), "route_not_found", NULL,
			    0);
		return;
	}
	arn_cfg_pin(rt);
	st->rt = rt;
	st->vhost = mt.vhost;
	st->route = mt.route;
	const struct arn_cfg_route *r = mt.route;

	if (mt.vhost->require_tls) {
		/* plain text to a virtual host that requires TLS: Envoy redirects */
		char *loc = st->res->text + st->text_len;
		int k = snprintf(loc, HTTP_TEXT - st->text_len, "https://%.*s%.*s",
				 (int)arn_cfg_host_without_port(auth, alen, NULL), auth,
				 (int)m->path.len, m->path.p);
		if (k > 0 && (uint32_t)k < HTTP_TEXT - st->text_len) {
			st->text_len += (uint32_t)k + 1;
			HTTP_INC(hc, rq_redirect);
			local_reply_route(hc, 301, NULL, 0, 0, "direct_response", loc, (size_t)k);
			return;
		}
		/* a Location too long for the text: never proxied in plain
		 * text instead of redirected (issue 12) */
		HTTP_INC(hc, rq_edit_overflow);
		local_reply(hc, 500, NULL, 0, 0, "redirect_too_long", NULL, 0);
		return;
	}
	switch (r->action) {
	case ARN_CFG_ACTION_DIRECT:
		HTTP_INC(hc, rq_direct_response);
		local_reply_route(hc, r->direct.status, r->direct.body, r->direct.body_len, 0,
				  "direct_response", NULL, 0);
		return;
	case ARN_CFG_ACTION_REDIRECT: {
		char *loc = st->res->text + st->text_len;
		int k =
		    http_redirect_location(&r->redirect, false, auth, alen, m->path.p, m->path.len,
					   r->path_kind == ARN_CFG_PATH_PREFIX ? r->path : NULL,
					   r->path_kind == ARN_CFG_PATH_PREFIX ? r->path_len : 0,
					   loc, HTTP_TEXT - st->text_len);
		if (k < 0) {
			HTTP_INC(hc, rq_edit_overflow);
			local_reply(hc, 500, NULL, 0, 0, "redirect_too_long", NULL, 0);
			return;
		}
		st->text_len += (uint32_t)k + 1;
		HTTP_INC(hc, rq_redirect);
		local_reply_route(hc, r->redirect.status ? r->redirect.status : 301, NULL, 0, 0,
				  "direct_response", loc, (size_t)k);
		return;
	}
	default:
		route_to_cluster(hc, g, &req);
		return;
	}
}

/*
 * An edit the request needs does not fit the stream's buffers (its 4 KB of
 * text for generated values and the rewritten path, or the edit slots).
 * Envoy's header map grows instead, so Envoy never refuses here; what must
 * not happen is that the request goes on without the edit (issue 12: a
 * path rewrite that did not fit sent the original path upstream, which a
 * rewrite may exist to keep from it). Refused before anything goes
 * upstream with 500, as Envoy answers a request its filters cannot
 * process: the limit is the proxy's, not a rule the client broke (431 or
 * 414 would blame a head that may be valid), and it is counted.
 */
static void request_edit_overflow(struct http_conn *hc, const char *details)
{
	HTTP_INC(hc, rq_edit_overflow);
	local_reply_route(hc, 500, NULL, 0, 0, details, NULL, 0);
	hc_run(hc);
}

/* The request head goes upstream once the stream has a connected upstream
 * connection (now, or from on_connected). */
void http_dc_upstream_ready(struct http_conn *hc)
{
	struct http_worker *w = hc->w;
	struct http_stream *st = &hc->st;
	struct http_upconn *u = st->up;
	const struct arn_h1_msg *m = &hc->msg;
	if (!u || st->req_head_sent || !st->res)
		return;
	/* every attempt writes its edits from the same place in the text (set
	 * when the request was routed): the previous attempt's are serialized
	 * already. */
	st->text_len = X(st)->text_mark;
	const struct arn_cfg_route *r = st->route;
	char *text = st->res->text;
	/* prefix_rewrite / regex_rewrite: the path is rewritten below, once
	 * the edits took their text, or the request is refused */
	bool rewrite = r && (r->route.prefix_rewrite || r->route.regex_rewrite);
	char hostbuf[64];
	const char *host = NULL;
	uint32_t host_len = 0;
	if (r && r->route.host_rewrite_literal) {
		host = r->route.host_rewrite_literal;
		host_len = (uint32_t)strlen(host);
	} else if (r && r->route.auto_host_rewrite) {
		if (st->ep_host) {
			host = st->ep_host;
			host_len = (uint32_t)strlen(host);
		} else {
			int k = snprintf(hostbuf, sizeof(hostbuf), "%u.%u.%u.%u:%u",
					 st->ep_addr >> 24, (st->ep_addr >> 16) & 255,
					 (st->ep_addr >> 8) & 255, st->ep_addr & 255, st->ep_port);
			host = hostbuf;
			host_len = (uint32_t)k;
		}
	} else if (st->host_stripped || m->target_form == ARN_H1_TF_ABSOLUTE) {
		/* absolute-form: the target's authority replaces Host (RFC 9112
		 * 3.2.2, as Envoy with allow_absolute_url) */
		host = st->auth;
		host_len = st->auth_len;
	} else if (m->host_idx < 0) {
		/* HTTP/1.0 without Host (or absolute-form without one): the
		 * upstream speaks HTTP/1.1 and needs one */
		if (m->authority.len) {
			host = m->authority.p;
			host_len = m->authority.len;
		} else {
			int k = snprintf(hostbuf, sizeof(hostbuf), "%u.%u.%u.%u:%u",
					 st->ep_addr >> 24, (st->ep_addr >> 16) & 255,
					 (st->ep_addr >> 8) & 255, st->ep_addr & 255, st->ep_port);
			host = hostbuf;
			host_len = (uint32_t)k;
		}
	}
	struct http_req_ctx x = {
	    .hcm = hc->hcm,
	    .rt = st->rt,
	    .vhost = st->vhost,
	    .route = st->route,
	    .wc = st->wc,
	    .raddr = hc->raddr,
	    .rport = hc->rport,
	    .laddr = hc->laddr,
	    .lport = hc->lport,
	    .host = host,
	    .host_len = host_len,
	    .path_rewritten = rewrite,
	    .timeout_ms = st->timeout_ms,
	    .attempt = st->attempts,
	    .rand_hi = X(st)->rid_hi,
	    .rand_lo = X(st)->rid_lo,
	    .text = text + st->text_len,
	    .text_cap = HTTP_TEXT - st->text_len,
	};
	/* Envoy announces the per-try timeout when it is the shorter one */
	uint32_t pt = r && r->route.retry.present ? r->route.retry.per_try_timeout_ms : 0;
	if (pt && (!x.timeout_ms || pt < x.timeout_ms))
		x.timeout_ms = pt;
	struct arn_h1_edit e[MAX_EDITS];
	int n = http_req_edits(&x, m, e, MAX_EDITS - 1);
	if (n < 0) {
		request_edit_overflow(hc, "header_edits_overflow");
		return;
	}
	st->text_len += x.text_len;
	/* The rewritten path goes last in the text, and only until the head is
	 * serialized: the response's edits need the room more. A path that
	 * does not fit (or a rewrite to nothing) is refused: the original
	 * path must never go upstream in its place (issue 12). */
	const char *path = m->path.p;
	uint32_t plen = m->path.len;
	if (rewrite) {
		char *buf = text + st->text_len;
		int k = arn_cfg_route_rewrite_path(r, m->path.p, m->path.len, buf,
						   HTTP_TEXT - st->text_len);
		if (k <= 0) {
			request_edit_overflow(hc, k == 0 ? "path_rewrite_empty"
							 : "path_rewrite_overflow");
			return;
		}
		path = buf; /* past text_len: free again once serialized */
		plen = (uint32_t)k;
	}
	st->xff = x.xff;
	st->xff_len = x.xff_len;
	st->request_id = x.request_id;
	st->request_id_len = x.request_id_len;
	if (m->flags & ARN_H1_F_CL_IGNORED)
		e[n++] = (struct arn_h1_edit){
		    .name = "content-length", .name_len = 14, .op = ARN_H1_EDIT_REMOVE};
	struct http_wchain c;
	http_wchain_init(&c, w);
	arn_h1_write_request_line(&c.wb, m->method_name.p, m->method_name.len, path, plen, 1);
	if (arn_h1_write_headers(&c.wb, m, e, (unsigned)n,
				 ARN_H1_W_DROP_HOP | (st->upgrade_req ? ARN_H1_W_UPGRADE : 0)) ==
	    -E2BIG) {
		/* more edits than the serializer applies (never with the
		 * slots above): none of them would be written */
		struct rte_mbuf *part = http_wchain_finish(&c);
		if (part)
			rte_pktmbuf_free(part);
		request_edit_overflow(hc, "header_edits_overflow");
		return;
	}
	if (m->flags & ARN_H1_F_CHUNKED) {
		arn_h1_write_header(&c.wb, "transfer-encoding", 17, "chunked", 7);
		st->up_chunked = true;
	}
	arn_h1_write_end(&c.wb);
	struct rte_mbuf *chain = http_wchain_finish(&c);
	if (!chain) {
		local_reply_route(hc, 503, NULL, 0, ARN_RF_BIT(LOCAL_RESET), "out_of_buffers", NULL,
				  0);
		hc_run(hc);
		return;
	}
	out_add_chain(&u->out, chain);
	st->req_head_sent = true;
	u->n_req++;
	st->up_start_tsc = http_tsc(w);
	if (st->attempts > 1) {
		/* a retry: the body kept so far goes first (req_step) */
		st->replaying = true;
		X(st)->replay = X(st)->rb_head;
	}
	hc_run(hc);
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

static void req_step(struct http_conn *hc)
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
					start_close(hc);
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
					stream_timers_cancel(st);
					hc->close_after = true;
					start_close(hc);
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
			xreq_init(hc, st->res);
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
					start_close(hc);
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
				local_reply(hc, 431, "Request Header Fields Too Large", 31,
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
			if (st->rb_on && !st->tunnel && !rb_append(hc, ev.data, ev.len))
				rb_abandon(hc);
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
	local_reply(hc, 502, NULL, 0, 0, "response_edits_overflow", NULL, 0);
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
	drain_on_failed_healthcheck(hc);
	if (st->health_check)
		hc_cache_set(hc, r->status);
	struct arn_h1_edit hcf;
	if (hc_fail_header(hc, &hcf))
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
		abort_conn(hc);
		return;
	}
	out_add_chain(&hc->out, m);
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

static void upstream_lost(struct http_conn *hc, bool reset)
{
	struct http_stream *st = &hc->st;
	if (st->tunnel) {
		st->req_done = st->resp_done = true;
		hc->close_after = true;
		http_up_detach(hc);
		hc->again = true;
		return;
	}
	if (!st->resp_started) {
		CL_INC(hc, upstream_rq_rx_reset);
		if (maybe_retry(hc, http_retry_on_reset(X(st)->retry.rp, HTTP_RESET_RESET),
				HOST_ERROR)) {
			hc->again = true;
			return;
		}
		reset_reply(hc, 503, "connection termination",
			    ARN_RF_BIT(UPSTREAM_CONNECTION_TERMINATION),
			    "upstream_reset_before_response_started{connection_termination}");
		return;
	}
	(void)reset;
	/* the response is partly out: the client must see it cut, not complete */
	CL_INC(hc, upstream_rq_rx_reset);
	st->flags |= ARN_RF_BIT(UPSTREAM_CONNECTION_TERMINATION);
	st->details = "upstream_reset_after_response_started{connection_termination}";
	HTTP_INC(hc, rq_reset_after_downstream_response_started);
	http_up_detach(hc);
	abort_conn(hc);
}

static void resp_step(struct http_conn *hc)
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
				upstream_lost(hc, false);
				return;
			}
			int rc = arn_h1_parse_eof(&u->p, &ev);
			if (rc == 0 && ev.type == ARN_H1_EV_END && st->resp_started) {
				/* a body delimited by the upstream's close */
				goto end;
			}
			upstream_lost(hc, false);
			return;
		}
		if (n < 0) {
			/* the upstream does not speak HTTP/1 properly */
			CL_INC(hc, upstream_cx_protocol_error);
			if (!st->resp_started &&
			    maybe_retry(hc, http_retry_on_reset(X(st)->retry.rp, HTTP_RESET_RESET),
					HOST_ERROR)) {
				hc->again = true;
				return;
			}
			if (!st->resp_started) {
				st->flags |= ARN_RF_BIT(UPSTREAM_PROTOCOL_ERROR);
				reset_reply(
				    hc, 502, "protocol error", ARN_RF_BIT(UPSTREAM_PROTOCOL_ERROR),
				    "upstream_reset_before_response_started{protocol_error}");
			} else {
				st->flags |= ARN_RF_BIT(UPSTREAM_PROTOCOL_ERROR);
				http_up_detach(hc);
				abort_conn(hc);
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
					reset_reply(hc, 502, "protocol error",
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
				if (maybe_retry(hc, would, HOST_AUTO)) {
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
				upstream_lost(hc, false);
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

void http_dc_response_event(struct http_conn *hc)
{
	hc->st.last_activity_ms = hc->w->now_ms;
	hc_run(hc);
}

void http_dc_pump(struct http_conn *hc)
{
	hc_run(hc);
}

void http_dc_upstream_failed(struct http_conn *hc, int reason, bool connected, bool timed_out)
{
	struct http_stream *st = &hc->st;
	if (!st->active || st->resp_done) {
		hc_run(hc);
		return;
	}
	if (!connected) {
		if (maybe_retry(hc,
				http_retry_on_reset(X(st)->retry.rp, HTTP_RESET_CONNECT_FAILURE),
				HOST_ERROR)) {
			hc_run(hc);
			return;
		}
		/* Envoy 1.2x's texts: "remote connection failure" for a refused
		 * or unreachable connect, "connection timeout" past connect_timeout */
		if (timed_out)
			reset_reply(hc, 503, "connection timeout",
				    ARN_RF_BIT(UPSTREAM_CONNECTION_FAILURE),
				    "upstream_reset_before_response_started{connection_timeout}");
		else
			reset_reply(hc, 503,
				    reason == -ECONNREFUSED
					? "remote connection failure, transport failure reason: "
					  "delayed connect error: 111"
					: "remote connection failure",
				    ARN_RF_BIT(UPSTREAM_CONNECTION_FAILURE),
				    "upstream_reset_before_response_started{remote_connection_"
				    "failure}");
	} else {
		upstream_lost(hc, reason == -ECONNRESET);
	}
	hc_run(hc);
}

/* ---- the pump
 * ------------------------------------------------------------------------------------ */

static void run_once(struct http_conn *hc)
{
	struct http_stream *st = &hc->st;
	if (hc->state == HTTP_DC_CLOSED || !hc->tc)
		return;
	if (st->up && !st->local)
		resp_step(hc);
	if (hc->state == HTTP_DC_CLOSED || !hc->tc)
		return;
	int rc = http_out_flush(&hc->out, hc->tc);
	if (rc != 0 && rc != -EAGAIN)
		return; /* the connection is going: on_close follows */
	bool flushed = rc == 0;
	if (st->active && flushed && st->resp_done && (st->req_done || hc->close_after) &&
	    !(st->up && http_out_busy(&st->up->out))) {
		stream_end(hc);
		hc->again = true;
		return;
	}
	if (hc->state == HTTP_DC_CLOSING) {
		closing_step(hc);
		return;
	}
	if (!st->active && hc->close_after && flushed) {
		start_close(hc);
		hc->again = true;
		return;
	}
	req_step(hc);
}

static void conn_free(struct http_conn *hc);

static void hc_run(struct http_conn *hc)
{
	if (hc->in_pump) {
		hc->again = true;
		return;
	}
	hc->in_pump = true;
	do {
		hc->again = false;
		run_once(hc);
	} while (hc->again && hc->tc && hc->state != HTTP_DC_CLOSED);
	hc->in_pump = false;
	if (hc->dead)
		conn_free(hc);
}

/* ---- timers -----------------------------------------------------------------------------------
 */

#define OWNER(t, type, field) ((type *)((char *)(t)-offsetof(type, field)))

static void route_timeout(struct http_timer *t)
{
	struct http_stream *st = OWNER(t, struct http_stream, route_timer);
	struct http_conn *hc = OWNER(st, struct http_conn, st);
	if (!st->active || st->resp_done || st->tunnel)
		return;
	st->timed_out = true;
	CL_INC(hc, upstream_rq_timeout);
	if (!st->resp_started) {
		local_reply_route(hc, 504, HTTP_BODY_UT, strlen(HTTP_BODY_UT),
				  ARN_RF_BIT(UPSTREAM_REQUEST_TIMEOUT), "upstream_response_timeout",
				  NULL, 0);
	} else {
		st->flags |= ARN_RF_BIT(UPSTREAM_REQUEST_TIMEOUT);
		http_up_detach(hc);
		abort_conn(hc);
	}
	hc_run(hc);
}

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
		local_reply_route(hc, 408, HTTP_BODY_SI, strlen(HTTP_BODY_SI),
				  ARN_RF_BIT(STREAM_IDLE_TIMEOUT), "stream_idle_timeout", NULL, 0);
	} else {
		st->flags |= ARN_RF_BIT(STREAM_IDLE_TIMEOUT);
		http_up_detach(hc);
		abort_conn(hc);
	}
	hc_run(hc);
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
	hc_run(hc);
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
		local_reply_route(hc, 408, "request timeout", 15, 0, "request_overall_timeout",
				  NULL, 0);
	}
	hc_run(hc);
}

/* The back-off is over: the next attempt. */
static void retry_fire(struct http_timer *t)
{
	struct http_conn *hc = OWNER(t, struct http_xreq, retry_timer)->hc;
	struct http_stream *st = &hc->st;
	if (!st->retry_wait || !hc->tc || hc->state == HTTP_DC_CLOSED || st->local)
		return;
	st->retry_wait = false;
	attempt_start(hc);
	hc_run(hc);
}

/* per_try_timeout: this attempt took too long to answer; it is reset and,
 * when the policy allows, retried (Envoy counts it as a reset), else 504. */
static void try_timeout(struct http_timer *t)
{
	struct http_conn *hc = OWNER(t, struct http_xreq, try_timer)->hc;
	struct http_stream *st = &hc->st;
	if (!st->active || st->resp_started || st->local || st->tunnel || !hc->tc ||
	    (!st->up && !st->pending))
		return;
	CL_INC(hc, upstream_rq_per_try_timeout);
	if (maybe_retry(hc, http_retry_on_reset(X(st)->retry.rp, HTTP_RESET_TIMEOUT),
			HOST_TIMEOUT)) {
		hc_run(hc);
		return;
	}
	st->timed_out = true;
	local_reply_route(hc, 504, HTTP_BODY_UT, strlen(HTTP_BODY_UT),
			  ARN_RF_BIT(UPSTREAM_REQUEST_TIMEOUT), "upstream_per_try_timeout", NULL,
			  0);
	hc_run(hc);
}

/* per_try_idle_timeout: this attempt's upstream went quiet for too long.
 * Before the response: a per-try timeout (retried, or 504). After it
 * started (Envoy keeps this timer running through the body): the stream is
 * reset. */
static void try_idle_timeout(struct http_timer *t)
{
	struct http_conn *hc = OWNER(t, struct http_xreq, try_idle_timer)->hc;
	struct http_stream *st = &hc->st;
	struct http_worker *w = hc->w;
	const struct arn_cfg_retry_policy *rp = st->route ? &st->route->route.retry : NULL;
	if (!rp || !rp->per_try_idle_timeout_ms || !st->active || st->resp_done || st->local ||
	    st->tunnel || !hc->tc || !st->up)
		return;
	uint64_t idle = w->now_ms - X(st)->up_activity_ms;
	if (idle < rp->per_try_idle_timeout_ms) {
		http_timer_arm(w, t, rp->per_try_idle_timeout_ms - idle);
		return;
	}
	CL_INC(hc, upstream_rq_per_try_idle_timeout);
	if (st->resp_started) {
		st->flags |= ARN_RF_BIT(UPSTREAM_REQUEST_TIMEOUT);
		st->details = "upstream_per_try_idle_timeout";
		HTTP_INC(hc, rq_reset_after_downstream_response_started);
		http_up_detach(hc);
		abort_conn(hc);
		hc_run(hc);
		return;
	}
	if (maybe_retry(hc, http_retry_on_reset(X(st)->retry.rp, HTTP_RESET_TIMEOUT),
			HOST_TIMEOUT)) {
		hc_run(hc);
		return;
	}
	st->timed_out = true;
	local_reply_route(hc, 504, HTTP_BODY_UT, strlen(HTTP_BODY_UT),
			  ARN_RF_BIT(UPSTREAM_REQUEST_TIMEOUT), "upstream_per_try_idle_timeout",
			  NULL, 0);
	hc_run(hc);
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
	if (hc->st.active || hc->st.started)
		return;
	HTTP_INC(hc, downstream_cx_idle_timeout);
	hc->close_after = true;
	start_close(hc);
	hc_run(hc);
}

/* ---- TCP callbacks ----------------------------------------------------------------------------
 */

static struct http_conn *conn_alloc(struct http_worker *w)
{
	struct http_conn *hc = w->conn_free;
	if (!hc)
		return NULL;
	w->conn_free = hc->next;
	memset(hc, 0, sizeof(*hc));
	hc->w = w;
	stream_reset(hc);
	hc->idle_timer.fn = conn_idle_timeout;
	return hc;
}

static void conn_free(struct http_conn *hc)
{
	struct http_worker *w = hc->w;
	struct http_stream *st = &hc->st;
	http_res_unwait(w, hc);
	/* a stream starts (its timers run) before it has a buffer */
	stream_timers_cancel(st);
	if (st->active || st->res || st->rt || st->up || st->pending) {
		if (st->active && !st->resp_done && !hc->aborted)
			st->flags |= ARN_RF_BIT(DOWNSTREAM_CONNECTION_TERMINATION);
		http_up_detach(hc);
		stream_end(hc);
		http_res_put(w, hc->st.res); /* kept by stream_end when mid-message */
		hc->st.res = NULL;
	}
	http_timer_cancel(&hc->idle_timer);
	http_in_free(&hc->in);
	http_out_reset(&hc->out);
	HTTP_GAUGE(hc, downstream_cx_active, -1);
	HTTP_GAUGE(hc, downstream_cx_http1_active, -1);
	HTTP_INC(hc, downstream_cx_destroy);
	if (HS(hc))
		arn_stats_hist_record(HS(hc), w->slot, ARN_HTTP_downstream_cx_length_ms,
				      now_us(w, hc->open_tsc));
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

static int dc_accept(struct arn_tcp_conn *c, void *luser)
{
	struct http_worker *w = luser;
	uint32_t laddr, raddr;
	uint16_t lport, rport;
	arn_tcp_endpoints(c, &laddr, &lport, &raddr, &rport);
	const struct arn_cfg_gen *g = w->store ? arn_config_gen(w->store) : NULL;
	const struct arn_cfg_listener *l = g ? arn_cfg_listener_find(g, laddr, lport) : NULL;
	if (!l)
		return -ENOENT;
	struct http_listener_rt *lrt = http_rt_listener(l->addr, l->port);
	struct arn_cfg_fc_input in = {
	    .dst_addr = laddr,
	    .dst_port = lport,
	    .src_addr = raddr,
	    .src_port = rport,
	    .transport_protocol = "raw_buffer",
	};
	const struct arn_cfg_filter_chain *fc = arn_cfg_filter_chain_select(l, &in);
	if (!fc) {
		if (lrt)
			arn_stats_inc(lrt->stats, w->slot, ARN_LS_no_filter_chain_match);
		return -ENOENT;
	}
	if (fc->tls) {
		/* lib/tls is not wired to this layer yet */
		static bool warned;
		if (!warned && w->idx == 0) {
			warned = true;
			ARN_WARN(HTTP,
				 "listener '%s': TLS filter chains are not served yet; "
				 "connections to them are refused",
				 l->obj.name);
		}
		return -EPROTONOSUPPORT;
	}
	if (fc->kind == ARN_CFG_NF_ECHO) {
		int rc = arn_tcp_echo_ops.on_accept ? arn_tcp_echo_ops.on_accept(c, NULL) : 0;
		if (rc == 0)
			arn_tcp_set_ops(c, &arn_tcp_echo_ops);
		if (lrt) {
			arn_stats_inc(lrt->stats, w->slot, ARN_LS_downstream_cx_total);
		}
		return rc;
	}
	if (fc->kind != ARN_CFG_NF_HCM || !fc->hcm)
		return -ENOENT;
	struct http_conn *hc = conn_alloc(w);
	if (!hc) {
		if (lrt)
			arn_stats_inc(lrt->stats, w->slot, ARN_LS_downstream_cx_overload_reject);
		return -ENOBUFS;
	}
	arn_cfg_pin(l);
	hc->lsn = l;
	hc->hcm = fc->hcm;
	hc->hrt = http_rt_hcm(fc->hcm);
	hc->lrt = lrt;
	if (lrt)
		http_lrt_ref(lrt); /* the connection's, until conn_free */
	hc->tc = c;
	hc->laddr = laddr;
	hc->lport = lport;
	hc->raddr = raddr;
	hc->rport = rport;
	hc->id = ((uint64_t)w->idx << 48) | ++w->next_conn_id;
	hc->open_tsc = http_tsc(w);
	const struct arn_cfg_hcm *h = fc->hcm;
	struct arn_h1_config pc = {
	    .max_head_bytes = h->max_request_headers_kb ? h->max_request_headers_kb * 1024 : 0,
	    .max_headers = (uint16_t)(h->max_headers_count && h->max_headers_count < HTTP_MAX_HDRS
					  ? h->max_headers_count
					  : HTTP_MAX_HDRS),
	};
	arn_h1_msg_init(&hc->msg, NULL, 0);
	arn_h1_parser_init(&hc->p, ARN_H1_REQUEST, &pc, &hc->msg);
	arn_h1_parser_allow_grow(&hc->p, true);
	HTTP_INC(hc, downstream_cx_total);
	HTTP_INC(hc, downstream_cx_http1_total);
	HTTP_GAUGE(hc, downstream_cx_active, 1);
	HTTP_GAUGE(hc, downstream_cx_http1_active, 1);
	if (lrt) {
		arn_stats_inc(lrt->stats, w->slot, ARN_LS_downstream_cx_total);
		arn_stats_gauge_add(lrt->stats, w->slot, ARN_LS_downstream_cx_active, 1);
	}
	if (h->idle_timeout_ms)
		http_timer_arm(w, &hc->idle_timer, h->idle_timeout_ms);
	arn_tcp_set_user(c, hc);
	return 0;
}

static void dc_data(struct arn_tcp_conn *c, struct rte_mbuf *head, uint32_t len)
{
	(void)head;
	struct http_conn *hc = arn_tcp_user(c);
	if (!hc)
		return;
	if (hc->state != HTTP_DC_OPEN) {
		arn_tcp_rx_consume(c, len);
		return;
	}
	hc->st.last_activity_ms = hc->w->now_ms;
	hc_run(hc);
}

static void dc_eof(struct arn_tcp_conn *c)
{
	struct http_conn *hc = arn_tcp_user(c);
	if (!hc)
		return;
	hc->peer_eof = true;
	hc_run(hc);
}

static void dc_writable(struct arn_tcp_conn *c)
{
	struct http_conn *hc = arn_tcp_user(c);
	if (!hc)
		return;
	hc_run(hc);
}

static void dc_closed(struct arn_tcp_conn *c, int reason)
{
	struct http_conn *hc = arn_tcp_user(c);
	if (!hc)
		return;
	arn_tcp_set_user(c, NULL);
	ARN_DEBUG(HTTP, "connection %llx: closed (%d), state %d", (unsigned long long)hc->id,
		  reason, hc->state);
	hc->tc = NULL;
	/* abort_conn() closed it: our reset, not the client's going away */
	bool remote = !hc->aborted && (reason == 0 || reason == -ECONNRESET);
	hc->state = HTTP_DC_CLOSED;
	if (remote)
		HTTP_INC(hc, downstream_cx_destroy_remote);
	else
		HTTP_INC(hc, downstream_cx_destroy_local);
	if (hc->st.active && !hc->st.resp_done) {
		HTTP_INC(hc, downstream_cx_destroy_active_rq);
		if (remote) {
			/* as Envoy flags a request whose client went away */
			hc->st.flags |= ARN_RF_BIT(DOWNSTREAM_CONNECTION_TERMINATION);
			HTTP_INC(hc, downstream_rq_rx_reset);
		}
	}
	if (hc->in_pump) {
		hc->dead = true;
		return;
	}
	conn_free(hc);
}

const struct arn_tcp_ops http_dc_ops = {
    .on_accept = dc_accept,
    .on_data = dc_data,
    .on_eof = dc_eof,
    .on_writable = dc_writable,
    .on_close = dc_closed,
};

void http_conns_shutdown(struct http_worker *w);
void http_conns_shutdown(struct http_worker *w)
{
	static const struct arn_tcp_ops none = {0};
	for (uint32_t i = 0; i < w->n_conns; i++) {
		struct http_conn *hc = &w->conns[i];
		if (!hc->tc)
			continue;
		struct arn_tcp_conn *tc = hc->tc;
		arn_tcp_set_ops(tc, &none);
		arn_tcp_set_user(tc, NULL);
		arn_tcp_abort(tc);
		hc->tc = NULL;
		hc->state = HTTP_DC_CLOSED;
		conn_free(hc);
	}
}
