/*
 * Envoy's router filter: the route a request takes (direct responses,
 * redirects, a cluster), the cluster's load balancer, the attempts made
 * against its endpoints and their retries (retry_policy, per-try timeouts,
 * the request body kept for a replay), the request head each attempt
 * sends, and what an attempt's end means for the request.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <rte_mbuf.h>

#include "arn_config.h"
#include "arn_log.h"
#include "arn_mem.h"
#include "http_decompressor.h"
#include "http_gw_stream.h"
#include "http_l4.h"
#include "http_local.h"
#include "http_od.h"
#include "http_router_filter.h"
#include "http_session.h"
#include "http_shadow.h"
#include "http_stream.h"
#include "http_upstream.h"
#include "http_zero.h"
#include "http_xfcc_tls.h"

static void retry_fire(struct http_timer *t);
static void try_timeout(struct http_timer *t);
static void try_idle_timeout(struct http_timer *t);
static void upstream_ready(struct http_stream *st);
static void upstream_data(struct http_stream *st);
static void upstream_writable(struct http_stream *st);
static void upstream_failed(struct http_stream *st, int reason, bool connected, bool timed_out,
			    const char *why);

/* What the attempt's upstream connection tells the stream. */
static const struct http_upstream_ops rt_up_ops = {
    .on_ready = upstream_ready,
    .on_data = upstream_data,
    .on_writable = upstream_writable,
    .on_failed = upstream_failed,
};

/* Arm the request's timer @p t to run @p fn in @p ms: the handler is set
 * here, at each arming, so that http_xreq_init (http_stream.h), which
 * readies a request's state for every request, names nothing of the
 * router's. */
static inline void xreq_arm(struct http_worker *w, struct http_timer *t, http_timer_fn fn,
			    uint64_t ms)
{
	t->fn = fn;
	http_timer_arm(w, t, ms);
}

/* ---- the request body kept for retries ------------------------------------------------- */

/* Keep a copy of body bytes for a later attempt, packed into whole mbufs.
 * @return false when the listener's buffer limit (Envoy buffers a request
 * for retries up to per_connection_buffer_limit_bytes), the worker's bound
 * or the mbufs ran out. */
bool http_rb_append(struct http_stream *st, const char *p, size_t n)
{
	struct http_conn *hc = st->hc;
	/* the request's shadows take their copy here too (http_shadow.h):
	 * without a retry policy, theirs is the only one */
	if (X(st)->shadows)
		http_shadow_body(st, p, n);
	if (!X(st)->retry.rp)
		return true;
	uint32_t limit = hc->lsn ? hc->lsn->per_connection_buffer_limit : 1024 * 1024;
	return http_rb_keep(st, p, n, limit);
}

/* ---- routing ------------------------------------------------------------------------------- */

/* ---- attempts and retries ---------------------------------------------------------------- */

static void attempt_start(struct http_stream *st);

/* One attempt is over (failed, or answered with a response that is retried):
 * its per-host and per-cluster request counts end. */
static void attempt_end(struct http_stream *st, int outcome)
{
	if (st->state & HTTP_S_COUNTED_HOST)
		http_host_rq_done(st, outcome);
	if (st->state & HTTP_S_COUNTED_UP) {
		CL_GAUGE(st, upstream_rq_active, -1);
		st->state &= ~HTTP_S_COUNTED_UP;
	}
}

/*
 * The route's timeout starts: it ends at route_due_ms. The timer may stay
 * armed after a stream's end (http_hcm.c's resp_done and http_stream_end
 * leave it), due earlier than this stream's timeout: it then arms itself
 * for what is left (http_route_timeout), so a keep-alive request arms it
 * only when it is stopped or due too late, and nobody cancels it per
 * request (issue 17), as the stream's idle timer.
 */
static void route_timer_start(struct http_worker *w, struct http_stream *st)
{
	st->state |= HTTP_S_ROUTE_TIMER;
	st->route_due_ms = w->now_ms + st->timeout_ms;
	if (!st->route_timer.armed || st->route_timer.due_ms > st->route_due_ms)
		http_timer_arm(w, &st->route_timer, st->timeout_ms);
}

void http_route_timer_start(struct http_stream *st)
{
	route_timer_start(st->hc->w, st);
}

/* Drop this attempt's upstream; the next attempt starts when the retry
 * timer fires (HTTP_S_RETRY_WAIT). */
static void attempt_drop(struct http_stream *st)
{
	if (unlikely(st->otel)) /* HCM tracing's upstream span of the attempt */
		http_otel_attempt_end(st);
	http_up_detach(st); /* mid-exchange: the connection is closed, never reused */
	http_timer_cancel(&X(st)->try_timer);
	http_timer_cancel(&X(st)->try_idle_timer);
	http_pins_release(&st->resp.pins);
	st->pool = NULL;
	st->state &= ~(HTTP_S_HEAD_SENT | HTTP_S_ATTEMPT_SENT | HTTP_S_REPLAYING);
	X(st)->replay = NULL;
	st->up_status = 0;
	st->state |= HTTP_S_RETRY_WAIT;
}

/* Drop this attempt's upstream and start the back-off to the next one. */
static void retry_schedule(struct http_stream *st)
{
	struct http_conn *hc = st->hc;
	struct http_worker *w = hc->w;
	const struct arn_cfg_retry_policy *rp = X(st)->retry.rp;
	attempt_drop(st);
	CL_INC(st, upstream_rq_retry);
	CL_INC(st, upstream_rq_retry_backoff_exponential);
	uint32_t base = rp->backoff_base_ms ? rp->backoff_base_ms : 25;
	uint32_t max = rp->backoff_max_ms ? rp->backoff_max_ms : 10 * base;
	xreq_arm(w, &X(st)->retry_timer, retry_fire,
		 http_retry_backoff_ms(base, max, X(st)->retry.n, http_rand(w)));
	/* the route's timeout counts from the end of the request, whatever
	 * the attempts do (Envoy's global timeout) */
	if ((st->state & HTTP_S_REQ_DONE) && st->timeout_ms && !(st->state & HTTP_S_ROUTE_TIMER))
		route_timer_start(w, st);
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
bool http_maybe_retry(struct http_stream *st, bool would, int outcome)
{
	if (!st->res || !X(st)->retry.rp || !st->crt ||
	    (st->state & (HTTP_S_RESP_STARTED | HTTP_S_LOCAL)) || (st->state & HTTP_S_TUNNEL))
		return false;
	bool success = false;
	uint32_t max = st->cluster ? st->cluster->thresholds[0].max_retries : 3;
	enum http_retry_status s =
	    http_retry_should(&X(st)->retry, would, &st->crt->retries_active, max, &success);
	if (success)
		CL_INC(st, upstream_rq_retry_success);
	switch (s) {
	case HTTP_RETRY_YES:
		if (X(st)->retry.rp->previous_hosts) {
			/* the oldest forgotten past HTTP_RETRY_TRIED */
			struct http_retry *r = &X(st)->retry;
			X(st)->tried[r->n_tried % HTTP_RETRY_TRIED] =
			    (uint64_t)st->ep_addr << 16 | st->ep_port;
			if (r->n_tried < 2 * HTTP_RETRY_TRIED - 1)
				r->n_tried++;
			else
				r->n_tried = HTTP_RETRY_TRIED;
		}
		attempt_end(st, outcome);
		retry_schedule(st);
		return true;
	case HTTP_RETRY_LIMIT:
		CL_INC(st, upstream_rq_retry_limit_exceeded);
		st->flags |= ARN_RF_BIT(UPSTREAM_RETRY_LIMIT_EXCEEDED);
		break;
	case HTTP_RETRY_OVERFLOW:
		CL_INC(st, upstream_rq_retry_overflow);
		st->flags |= ARN_RF_BIT(UPSTREAM_OVERFLOW);
		break;
	default:
		break;
	}
	return false;
}

/* The body outgrew what may be kept: no retry for this request (Envoy drops
 * its retry state then). */
void http_rb_abandon(struct http_stream *st)
{
	if (!X(st)->shadows) /* theirs goes on (http_shadow_body) */
		st->state &= ~HTTP_S_KEEP_BODY;
	http_rb_free(st);
	if (X(st)->retry.rp) {
		if (st->crt)
			http_retry_release(&X(st)->retry, &st->crt->retries_active);
		X(st)->retry.rp = NULL;
		CL_INC(st, retry_or_shadow_abandoned);
	}
}

/*
 * grpc-timeout (gRPC over HTTP/2: 1 to 8 digits and a unit, H M S m u n)
 * as Envoy's router honours it when the route sets a cap: the request's
 * deadline, less grpc_timeout_offset, capped by max_grpc_timeout (0: no
 * cap), replaces the route's timeout; a gRPC request without the header,
 * or with 0, gets the cap (0: none). A malformed value is ignored.
 */
static void grpc_timeout(struct http_stream *st, const struct arn_cfg_route_action *a)
{
	if (!http_is_grpc(st))
		return;
	uint64_t ms = a->max_grpc_timeout_ms;
	int i = arn_h1_find(&st->req.m, "grpc-timeout", 12, 0);
	if (i >= 0) {
		const struct arn_h1_header *h = &st->req.m.hdrs[i];
		uint64_t v = 0;
		uint32_t k = 0;
		while (k < h->value_len && k < 8 && h->value[k] >= '0' && h->value[k] <= '9')
			v = v * 10 + (uint64_t)(h->value[k++] - '0');
		if (k == 0 || k + 1 != h->value_len)
			return;
		switch (h->value[k]) {
		case 'H':
			v *= 3600000;
			break;
		case 'M':
			v *= 60000;
			break;
		case 'S':
			v *= 1000;
			break;
		case 'm':
			break;
		case 'u':
			v = (v + 999) / 1000;
			break;
		case 'n':
			v = (v + 999999) / 1000000;
			break;
		default:
			return;
		}
		if (a->grpc_timeout_offset_ms && v > a->grpc_timeout_offset_ms)
			v -= a->grpc_timeout_offset_ms;
		/* 0 is no deadline, as in Envoy's finalTimeout: the cap (0:
		 * none), not 1 ms (a gRPC TimeoutValue is positive: 0 is no
		 * client's deadline, and ended every such request at once) */
		if (v && (!a->max_grpc_timeout_ms || v < a->max_grpc_timeout_ms))
			ms = v;
	}
	st->timeout_ms = ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
}

/* A connection could not be had for this attempt (local failure). */
static void attempt_connect_failed(struct http_stream *st)
{
	CL_INC(st, upstream_cx_connect_fail);
	if (http_maybe_retry(st, http_retry_on_reset(X(st)->retry.rp, HTTP_RESET_CONNECT_FAILURE),
			     HOST_ERROR))
		return;
	http_reset_reply(st, 503, "local connection failure",
			 ARN_RF_BIT(UPSTREAM_CONNECTION_FAILURE),
			 "upstream_reset_before_response_started{local_connection_failure}");
}

static void route_to_cluster(struct http_stream *st, const struct arn_cfg_gen *g,
			     const struct arn_cfg_request *req)
{
	struct http_conn *hc = st->hc;
	struct http_worker *w = hc->w;
	const struct arn_cfg_route_action *a = &st->route->route;
	struct arn_cfg_ref ref;
	/* a named cluster (the usual route) is the route's own reference:
	 * no call for it */
	if (a->spec == ARN_CFG_CLUSTER_NAME)
		ref = a->cluster;
	else if (arn_cfg_route_cluster(a, req, &ref) != 0) {
		HTTP_INC(hc, no_cluster);
		http_local_reply_route(st, 503, NULL, 0, ARN_RF_BIT(NO_CLUSTER_FOUND),
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
	/* a keep-alive connection's requests mostly take one route to one
	 * cluster: its lookup is kept for as long as the generation is the
	 * same (bench_hcm: about 95 instructions a request) */
	uint64_t gid = g ? arn_cfg_gen_id(g) : 0;
	st->route_gen = gid; /* the kept request edits' key (edits_kept) */
	/* read before the lookups below: what they find is of this snapshot
	 * or a newer one, never older (http_rt_snap_sync) */
	uint64_t rsync = http_rt_snap_sync();
	struct http_cluster_rt *crt = NULL;
	if (gid && hc->cv_gen_id == gid && hc->cv_name == ref.name && hc->cv_len == ref.len) {
		v = hc->cv;
		/* its runtime object too, while the snapshot is the same
		 * (bench_hcm: about 60 instructions a request) */
		if (hc->cv_crt_sync == rsync)
			crt = hc->cv_crt;
	} else if (!g || arn_cfg_cluster_resolve(g, &ref, &v) != 0) {
		/* G5: a route to a cluster that does not exist */
		HTTP_INC(hc, no_cluster);
		unsigned code = a->cluster_not_found_status ? a->cluster_not_found_status : 503;
		http_local_reply_route(st, code, NULL, 0, ARN_RF_BIT(NO_CLUSTER_FOUND),
				       "cluster_not_found", NULL, 0);
		return;
	} else if (a->spec == ARN_CFG_CLUSTER_NAME) {
		/* only a name the route table holds: cluster_header's lives
		 * in the request, weighted ones are picked per request */
		hc->cv_gen_id = gid;
		hc->cv_name = ref.name;
		hc->cv_len = ref.len;
		hc->cv = v;
		hc->cv_crt = NULL; /* the name's, found below */
	}
	/* the connection's kept pins when they are these (http_stream.h) */
	http_kept_pin(st, hc->kept.cluster, v.cluster, HTTP_OWN_CLUSTER);
	http_kept_pin(st, hc->kept.endpoints, v.endpoints, HTTP_OWN_ENDPOINTS);
	st->cluster = v.cluster;
	st->endpoints = v.endpoints;
	/* the name stays valid: it lives in the pinned route table, or (cluster_
	 * header) in the request head, whose segments are pinned too */
	X(st)->cref = ref;
	if (!crt) {
		crt = http_rt_cluster(ref.name, ref.len,
				      ref.hash ? ref.hash : arn_cfg_hash(ref.name, ref.len));
		/* kept only for the name cv holds (the one above) */
		if (crt && gid && hc->cv_gen_id == gid && hc->cv_name == ref.name &&
		    hc->cv_len == ref.len) {
			hc->cv_crt = crt;
			hc->cv_crt_sync = rsync;
		}
	}
	st->crt = crt;
	http_kept_crt(st, st->crt); /* the stream's, until stream_release_cfg */
	st->timeout_ms = a->timeout_ms;
	if (a->grpc_timeout_set)
		grpc_timeout(st, a);
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
	/* drawn only where an id may be generated (http_req_edits): left 0
	 * (http_xreq_init) otherwise, unread */
	if (hc->hcm && hc->hcm->generate_request_id) {
		X(st)->rid_hi = http_rand(w);
		X(st)->rid_lo = http_rand(w);
	}
	/* retries: not for upgrades (a tunnel cannot be replayed) */
	http_retry_init(&X(st)->retry, (st->state & HTTP_S_UPGRADE) ? NULL : &a->retry);
	/* retriable_request_headers: a request none of them matches is not
	 * retried at all (Envoy's RetryStateImpl::create) */
	if (X(st)->retry.rp && __builtin_expect(a->retry.n_retriable_request_headers != 0, 0) &&
	    !http_retry_headers_match(a->retry.retriable_request_headers,
				      a->retry.n_retriable_request_headers, &st->req.m))
		X(st)->retry.rp = NULL;
	http_stream_set(st, HTTP_S_KEEP_BODY, X(st)->retry.rp && http_msg_has_body(&st->req.m));
	if (a->n_mirrors) /* request_mirror_policies */
		http_shadow_route(st);
	attempt_start(st);
}

/* The request's hash for RING_HASH / MAGLEV (http_lb_hash), noting the
 * cookies it generated for the response. Out of line: the other policies'
 * attempts do not carry its code (bench_hcm). */
static bool __attribute__((noinline)) attempt_hash(struct http_stream *st, uint64_t *hash)
{
	struct http_conn *hc = st->hc;
	struct http_lb_peer peer = {hc->raddr, hc->laddr, hc->rport, hc->lport};
	uint32_t gen = 0;
	bool has = http_lb_hash(&st->route->route, &st->req.m, &peer, hash, &gen);
	/* a retry hashes anew to the same cookies: still one Set-Cookie
	 * each on the response */
	if (gen) {
		X(st)->cookie_gen = gen;
		st->state |= HTTP_S_RESP_EXTRA;
	}
	return has;
}

/* The cluster's balancer picks for @p st (http_lb_pick), @p rr its
 * round-robin counter. */
static int lb_pick(struct http_stream *st, uint64_t *rr, uint32_t attempt, struct http_lb_out *out)
{
	struct http_lb_in in = {
	    .attempt = attempt,
	    .cluster = st->cluster,
	    .eps = st->endpoints,
	    .rr = rr,
	    .rand = http_rand(st->hc->w),
	    .active = http_lb_stream_active,
	    .ctx = st,
	};
	if (st->cluster->lb == ARN_CFG_LB_RING_HASH || st->cluster->lb == ARN_CFG_LB_MAGLEV)
		in.has_hash = attempt_hash(st, &in.hash);
	/* active health checks: only a cluster that has them reads its
	 * hosts (the others' picks read no host); it and a large cluster
	 * pick from the worker's cached candidates (http_lb_cache) */
	http_rt_lb_in(st->crt, st->hc->w->idx, &in);
	/* outlier detection: ejected hosts are out; those whose time ended
	 * come back here and leave the gauge */
	uint32_t unejected = 0;
	if (st->cluster->outlier.present && st->crt) {
		in.od_crt = st->crt;
		in.now_ms = st->hc->w->now_ms;
		in.unejected = &unejected;
	}
	int rc = http_lb_pick(&in, out);
	if (unejected)
		CL_GAUGE(st, outlier_detection_ejections_active, -(int64_t)unejected);
	return rc;
}

/* envoy.filters.http.stateful_session's host for the first attempt (as
 * Envoy's router, which gives a retry no override host): the endpoint
 * the session names when it is in the cluster and in a state Envoy's
 * default override_host_status takes (http_lb_override), found in the
 * snapshot's sorted endpoints. Out of line: only requests with a
 * session come here.
 * @return 1: *@p out is it; 0: balance as usual; -1: strict, and it is
 * not there (503 no_healthy_upstream, as Envoy's). */
static int __attribute__((noinline)) session_pick(struct http_stream *st, struct http_lb_out *out)
{
	int rc = -ENOENT;
	if (st->ss_flags & HTTP_SS_F_ADDR) {
		struct http_lb_in in = {.cluster = st->cluster, .eps = st->endpoints};
		http_rt_lb_in(st->crt, st->hc->w->idx, &in);
		uint32_t unejected = 0;
		if (st->cluster->outlier.present && st->crt) {
			in.od_crt = st->crt;
			in.now_ms = st->hc->w->now_ms;
			in.unejected = &unejected;
		}
		struct http_lb_view v;
		bool have = http_rt_lb_view(st->crt, st->hc->w->idx, &v) && v.eps == st->endpoints;
		rc = http_lb_override(&in, have ? v.ep_sorted : NULL, have ? v.n_ep_sorted : 0,
				      st->ss_addr, st->ss_port, out);
		if (unejected)
			CL_GAUGE(st, outlier_detection_ejections_active, -(int64_t)unejected);
	}
	if (rc == 0)
		return 1;
	return (st->ss_flags & HTTP_SS_F_STRICT) ? -1 : 0;
}

/* Whether @p ep is a host @p st tried (retry_host_predicate previous_hosts). */
static bool tried(const struct http_stream *st, const struct arn_cfg_endpoint *ep)
{
	uint64_t k = (uint64_t)ep->addr << 16 | ep->port;
	unsigned n = X(st)->retry.n_tried;
	for (unsigned i = 0; i < n && i < HTTP_RETRY_TRIED; i++)
		if (X(st)->tried[i] == k)
			return true;
	return false;
}

/* Envoy's host selection under previous_hosts: a retry's pick that lands
 * on a host the request tried is made again, host_selection_retry_max_
 * attempts more times at most; the last pick stands. The hashed
 * balancers take the re-pick's number (http_lb_in.attempt). Out of line:
 * only retries with the predicate come here. */
static void __attribute__((noinline))
repick(struct http_stream *st, uint64_t *rr, struct http_lb_out *out)
{
	uint32_t n = X(st)->retry.rp->host_selection_retries;
	for (uint32_t k = 1; k <= n && tried(st, out->ep); k++) {
		struct http_lb_out again;
		if (lb_pick(st, rr, k, &again) != 0)
			break;
		*out = again;
	}
}

/* Pick a host and get a connection to it for the next attempt. */
static void attempt_start(struct http_stream *st)
{
	struct http_conn *hc = st->hc;
	struct http_worker *w = hc->w;
	st->attempts++;
	uint8_t lb = st->cluster->lb;
	uint64_t *rr = st->crt ? http_lb_rr(w, st->crt->hash)
			       : http_lb_rr(w, arn_cfg_hash(X(st)->cref.name, X(st)->cref.len));
	struct http_lb_out out;
	/* one healthy host: http_lb_pick's answer, without its input (a
	 * random number, the call). Not for the hash policies: the request's
	 * hash is still taken (bench_hcm: about 20 instructions a request). */
	const struct arn_cfg_endpoint *one =
	    lb != ARN_CFG_LB_RING_HASH && lb != ARN_CFG_LB_MAGLEV &&
		    !(st->cluster->n_health_checks | st->cluster->outlier.present)
		? http_lb_one(st->endpoints, st->cluster->healthy_panic_threshold)
		: NULL;
	/* a stateful session's host, first attempt only */
	int ss = 0;
	if (__builtin_expect(st->ss_flags != 0, 0) && st->attempts == 1)
		ss = session_pick(st, &out);
	if (ss > 0) {
		/* the session's host */
	} else if (ss < 0) {
		CL_INC(st, upstream_cx_none_healthy);
		http_local_reply_route(st, 503, HTTP_BODY_UH, strlen(HTTP_BODY_UH),
				       ARN_RF_BIT(NO_HEALTHY_UPSTREAM), "no_healthy_upstream", NULL,
				       0);
		return;
	} else if (one) {
		if (http_lb_counts(lb))
			(*rr)++;
		out.ep = one;
		out.panic = false;
	} else if (lb_pick(st, rr, 0, &out) != 0) {
		CL_INC(st, upstream_cx_none_healthy);
		http_local_reply_route(st, 503, HTTP_BODY_UH, strlen(HTTP_BODY_UH),
				       ARN_RF_BIT(NO_HEALTHY_UPSTREAM), "no_healthy_upstream", NULL,
				       0);
		return;
	} else if (X(st)->retry.n_tried) {
		repick(st, rr, &out);
	}
	if (out.panic)
		CL_INC(st, lb_healthy_panic);
	st->ep_addr = out.ep->addr;
	st->ep_port = out.ep->port;
	st->ep_host = out.ep->hostname;
	const struct arn_cfg_thresholds *th = &st->cluster->thresholds[0];
	if (st->crt && http_rq_full(st, th->max_requests)) {
		CL_INC(st, upstream_rq_pending_overflow);
		http_reset_reply(st, 503, "overflow", ARN_RF_BIT(UPSTREAM_OVERFLOW), "overflow");
		return;
	}
	struct http_pool *p =
	    http_pool_get(w, &X(st)->cref, st->crt, out.ep->addr, out.ep->port, &hc->pool_hint);
	if (!p) {
		http_reset_reply(st, 503, "overflow", ARN_RF_BIT(UPSTREAM_OVERFLOW), "overflow");
		return;
	}
	int rc = http_up_acquire(w, p, st, hc->sladdr, &rt_up_ops);
	if (rc == -EBUSY) {
		http_reset_reply(st, 503, "overflow", ARN_RF_BIT(UPSTREAM_OVERFLOW), "overflow");
		return;
	}
	if (rc != 0) {
		attempt_connect_failed(st);
		return;
	}
	if (st->crt) {
		st->state |= HTTP_S_COUNTED_UP;
		struct arn_stats_scope *cs = CS(st);
		if (cs) {
			struct http_sw s = http_sw(cs, w->slot);
			http_sw_add(s, ARN_CL_upstream_rq_total, 1);
			/* the breaker's count (http_rq_full) */
			http_sw_add(s, ARN_CL_upstream_rq_active, 1);
		}
	}
	if (p->host) {
		/* the pool stays (and keeps its host) until the attempt uncounts */
		struct http_host_ctr *hc_ = http_host_ctr(p->host, w->idx);
		HTTP_HOST_ADD(hc_, rq_total, 1);
		HTTP_HOST_ADD(hc_, rq_active, 1);
		p->n_counted++;
		st->state |= HTTP_S_COUNTED_HOST;
	}
	if (st->attempts == 1)
		HTTP_INC(hc, rq_total);
	if (st->up && st->up->connected)
		upstream_ready(st);
}

/*
 * The request's route: the connection's last match where the authority and
 * path decide it (arn_cfg_route.path_decides) and they, the table and its
 * generation are the same, else a fresh one (kept when it may be). A
 * keep-alive connection's requests mostly repeat theirs (bench_hcm: 104
 * instructions a request less). Only within one connection: its block is
 * zeroed when it is taken.
 * @return whether a route matched.
 */
static bool route_match(struct http_conn *hc, const struct arn_cfg_gen *g,
			const struct arn_cfg_route_table *rt, const struct arn_cfg_request *req,
			struct arn_cfg_route_match *mt)
{
	uint64_t gid = g ? arn_cfg_gen_id(g) : 0;
	const char *auth = req->authority ? req->authority : "";
	size_t alen = req->authority ? req->authority_len : 0;
	const char *path = req->path ? req->path : "";
	size_t plen = req->path ? req->path_len : 0;
	if (gid && hc->rm_gen_id == gid && hc->rm_rt == rt && hc->rm_alen == alen &&
	    hc->rm_plen == plen && arn_mem_eq(hc->rm_key, auth, alen) &&
	    arn_mem_eq(hc->rm_key + alen, path, plen)) {
		mt->vhost = hc->rm_vhost;
		mt->route = hc->rm_route;
		return true;
	}
	if (arn_cfg_route_match(rt, req, mt) != 0)
		return false;
	if (gid && mt->route->path_decides && alen + plen <= sizeof(hc->rm_key)) {
		/* the key first: a request longer than the room is not kept */
		hc->rm_gen_id = gid;
		hc->rm_rt = rt;
		hc->rm_alen = (uint8_t)alen;
		hc->rm_plen = (uint8_t)plen;
		memcpy(hc->rm_key, auth, alen);
		memcpy(hc->rm_key + alen, path, plen);
		hc->rm_vhost = mt->vhost;
		hc->rm_route = mt->route;
	}
	return true;
}

/*
 * The router filter's part of a request head: the route (404 NR without
 * one), a virtual host that requires TLS (a redirect), direct responses,
 * redirects, or the cluster and its first attempt. Envoy's order.
 */
void http_route(struct http_stream *st, const struct arn_cfg_gen *g,
		const struct arn_cfg_route_table *rt, const struct arn_cfg_request *req)
{
	struct http_conn *hc = st->hc;
	const struct arn_h1_msg *m = &st->req.m;
	const char *auth = st->auth;
	size_t alen = st->auth_len;
	struct arn_cfg_route_match mt;
	bool matched = rt && route_match(hc, g, rt, req, &mt);
	if (m->method == ARN_H1_M_CONNECT) {
		/* CONNECT is an upgrade of its own type to Envoy, which no
		 * configuration of Arion allows (conv_upgrades refuses it):
		 * 403 upgrade_failed whatever matched. Routed, an authority-form
		 * request has no path to send: the upstream got "CONNECT
		 * HTTP/1.1" with no target, and its 2xx made a tunnel of the
		 * upstream connection while the client's stayed HTTP. */
		HTTP_INC(hc, downstream_rq_ws_on_non_ws_route);
		http_local_reply(st, 403, NULL, 0, 0, "upgrade_failed", NULL, 0);
		return;
	}
	if (st->state & HTTP_S_UPGRADE) {
		/* Envoy's order: the connection manager decides an upgrade
		 * before any filter runs (createUpgradeFilterChain), from the
		 * route's upgrade_configs and its own; a type neither allows
		 * is refused (issue 15). */
		const struct arn_h1_header *u = &m->hdrs[m->upgrade_idx];
		const struct arn_cfg_route_action *ra =
		    matched && mt.route->action == ARN_CFG_ACTION_ROUTE ? &mt.route->route : NULL;
		if (!arn_cfg_upgrade_allowed(hc->hcm, ra, u->value, u->value_len)) {
			HTTP_INC(hc, downstream_rq_ws_on_non_ws_route);
			http_local_reply(st, 403, NULL, 0, 0, "upgrade_failed", NULL, 0);
			return;
		}
	}
	if (!matched) {
		HTTP_INC(hc, no_route);
		http_local_reply(st, 404, NULL, 0, ARN_RF_BIT(NO_ROUTE_FOUND), "route_not_found",
				 NULL, 0);
		return;
	}
	http_kept_pin(st, hc->kept.rt, rt, HTTP_OWN_RT);
	st->rt = rt;
	st->vhost = mt.vhost;
	st->route = mt.route;
	const struct arn_cfg_route *r = mt.route;

	if (mt.vhost->require_tls && !hc->tls) {
		/* plain text to a virtual host that requires TLS: Envoy redirects */
		char *loc = st->res->text + st->text_len;
		int k = snprintf(loc, HTTP_TEXT - st->text_len, "https://%.*s%.*s",
				 (int)arn_cfg_host_without_port(auth, alen, NULL), auth,
				 (int)m->path.len, m->path.p);
		if (k > 0 && (uint32_t)k < HTTP_TEXT - st->text_len) {
			st->text_len += (uint32_t)k + 1;
			HTTP_INC(hc, rq_redirect);
			http_local_reply_route(st, 301, NULL, 0, 0, "direct_response", loc,
					       (size_t)k);
			return;
		}
		/* a Location too long for the text: never proxied in plain
		 * text instead of redirected (issue 12) */
		HTTP_INC(hc, rq_edit_overflow);
		http_local_reply(st, 500, NULL, 0, 0, "redirect_too_long", NULL, 0);
		return;
	}
	switch (r->action) {
	case ARN_CFG_ACTION_DIRECT:
		HTTP_INC(hc, rq_direct_response);
		http_local_reply_route(st, r->direct.status, r->direct.body, r->direct.body_len, 0,
				       "direct_response", NULL, 0);
		return;
	case ARN_CFG_ACTION_REDIRECT: {
		char *loc = st->res->text + st->text_len;
		int k = http_redirect_location(
		    &r->redirect, hc->tls != NULL, auth, alen, m->path.p, m->path.len,
		    r->path_kind == ARN_CFG_PATH_PREFIX ? r->path : NULL,
		    r->path_kind == ARN_CFG_PATH_PREFIX ? r->path_len : 0, loc,
		    HTTP_TEXT - st->text_len);
		if (k < 0) {
			HTTP_INC(hc, rq_edit_overflow);
			http_local_reply(st, 500, NULL, 0, 0, "redirect_too_long", NULL, 0);
			return;
		}
		st->text_len += (uint32_t)k + 1;
		HTTP_INC(hc, rq_redirect);
		http_local_reply_route(st, r->redirect.status ? r->redirect.status : 301, NULL, 0,
				       0, "direct_response", loc, (size_t)k);
		return;
	}
	default:
		route_to_cluster(st, g, req);
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
static void request_edit_overflow(struct http_stream *st, const char *details)
{
	struct http_conn *hc = st->hc;
	HTTP_INC(hc, rq_edit_overflow);
	http_local_reply_route(st, 500, NULL, 0, 0, details, NULL, 0);
	http_conn_run(hc);
}

void __attribute__((noinline, cold)) http_route_sanitize(struct http_stream *st)
{
	struct http_conn *hc = st->hc;
	bool mtls = hc->tls && arn_tls_peer_cert_presented(hc->tls);
	http_req_sanitize(hc->hcm, &st->req.m, hc->raddr, mtls);
	/* an x-envoy-force-trace left (an internal request's) puts the
	 * request's id on the response (Envoy's mutateResponseHeaders) */
	const struct arn_h1_msg *m = &st->req.m;
	for (unsigned i = 0; i < m->n_hdrs; i++)
		if (m->hdrs[i].name_len == 19 &&
		    arn_h1_eq_nocase(m->hdrs[i].name, 19, "x-envoy-force-trace", 19)) {
			st->state |= HTTP_S_RESP_EXTRA;
			st->rid_resp = true;
			break;
		}
}


/*
 * The request edits a keep-alive connection keeps (struct http_conn.re_*).
 * http_req_edits makes the same list again for another request when
 * nothing it reads differs, and the list holds only pointers that outlive
 * the request (but a generated id's, set per request); then it is kept,
 * and the next request whose key is the same sends it as it is
 * (bench_hcm: 145 instructions a request less).
 *
 * What the list depends on, and how each is covered:
 *  - the route table, virtual host, route and weighted cluster (their
 *    request_headers_to_add / _remove, most_specific_header_mutations_wins,
 *    include_request_attempt_count, the route's rewrites and per-try
 *    timeout) and the generation they were matched in: keyed (pointers and
 *    generation id: a generation holds its objects as they are, and ids
 *    only grow, so no freed object's address can come back under it).
 *    Their names and constant values live in that configuration, which the
 *    stream that uses the list pins.
 *  - the connection manager (use_remote_address, xff_num_trusted_hops,
 *    generate_request_id, preserve_external_request_id,
 *    suppress_envoy_headers): keyed (hc->hcm; it changes only when an idle
 *    connection follows a newer listener, which comes with a newer
 *    generation too).
 *  - the connection's TLS and addresses (x-forwarded-proto, internal):
 *    the connection's own for its life.
 *  - the timeout announced (x-envoy-expected-rq-timeout-ms, per request
 *    with grpc-timeout): keyed by value; its line lives in
 *    hc->timeout_text, which only a list made anew rewrites, and every
 *    list made anew replaces or drops the kept one.
 *  - Expect: 100-continue (its removal): keyed.
 *  - Host sent (a rewrite, absolute-form, a stripped port, HTTP/1.0
 *    without Host: pointers into the request or the endpoint): kept and
 *    reused only without one.
 *  - the path rewritten (x-envoy-original-path points into the request):
 *    never kept (the route says so: keyed with it).
 *  - X-Forwarded-For (the client address and whether the request is
 *    internal): never kept with it, and a request that has it makes its
 *    own list.
 *  - x-forwarded-client-cert (its removal per forward_client_cert_details
 *    and whether the client presented a certificate, the connection's
 *    own): a request that has it makes its own list.
 *  - x-request-id: a request's own changes no edit. With
 *    generate_request_id (Envoy's default) a request without one gets
 *    one generated (never over its own: that needs use_remote_address,
 *    whose lists are not kept): the kept list's edit for it (hc->re_rid)
 *    takes each request's own id, generated from its random words into
 *    its text as http_req_edits would; a list with that edit is used
 *    only for a request without an id, one without it (made for a
 *    request that brought its own) only for one with. A request whose
 *    head was given its id before the filters ran (http_request_id_head:
 *    the chain is not idle) brings it as its own: its lists are of the
 *    second kind.
 *  - every other value made for the request (the appended XFF address,
 *    the external address, the attempt count, %-substitutions:
 *    %REQ(...)%, %PROTOCOL% and the others) goes into the request's own
 *    text: a list that used any of it is never kept.
 *  - a local_ratelimit filter's unenforced headers: added per request
 *    after the list; a request with them makes its own.
 * test_router_edits_kept.c changes each of these alone.
 */

/* The outputs http_req_edits gives with a kept list (it was made without
 * use_remote_address: no id is generated over the request's own): the
 * request's own x-request-id, or the one generated for it, set in the
 * list's edit for it (hc->re_rid). @return false when the request has
 * X-Forwarded-For or x-forwarded-client-cert, when the list has an edit
 * for a generated id and the request brings its own or the reverse (the
 * list is another), or when the text has no room for the id; then
 * nothing is set. */
#define KEPT_IDS                                                                                   \
	(1ull << ARN_H1_H_X_FORWARDED_FOR | 1ull << ARN_H1_H_X_FORWARDED_CLIENT_CERT |             \
	 1ull << ARN_H1_H_X_REQUEST_ID)
static inline bool edits_kept_outputs(struct http_conn *hc, struct http_stream *st,
				      const struct arn_h1_msg *m)
{
	const char *rid = NULL; /* a field's value is never NULL */
	uint32_t rlen = 0;
	for (int i = m->n_hdrs - 1; i >= 0; i--) {
		uint8_t id = m->hdrs[i].id;
		/* one test of the three ids for the usual field (ids are
		 * below 64: h1_write.c); a client's x-forwarded-client-cert
		 * has edits of its own (forward_client_cert_details) */
		if (likely(!((1ull << id) & KEPT_IDS)))
			continue;
		if (id != ARN_H1_H_X_REQUEST_ID)
			return false;
		rid = m->hdrs[i].value;
		rlen = m->hdrs[i].value_len;
	}
	/* one test without generated ids (re_rid 0) */
	if (hc->re_rid) {
		if (hc->re_rid == HTTP_RE_RID_OWN) {
			if (!rid)
				return false; /* an id to generate: no edit for it */
		} else {
			/* generated as http_req_edits generates it (the
			 * stream's random words, in the text where its edits
			 * begin: every attempt sends the same id) */
			uint32_t at = st->text_len;
			if (rid || at + HTTP_REQUEST_ID_LEN + 1 > HTTP_TEXT)
				return false;
			char *v = st->res->text + at;
			http_request_id_fmt(X(st)->rid_hi, X(st)->rid_lo, v);
			v[HTTP_REQUEST_ID_LEN] = 0;
			st->text_len = at + HTTP_REQUEST_ID_LEN + 1;
			hc->re_e[hc->re_rid - 1].value = v;
			rid = v;
			rlen = HTTP_REQUEST_ID_LEN;
		}
	}
	st->xff = NULL;
	st->xff_len = 0;
	st->request_id = rid;
	st->request_id_len = rlen;
	return true;
}

/* Does @p m send a Host of its own making (a stripped port, absolute-form,
 * none in the request: HTTP/1.0), where the route rewrites none? */
static inline bool edits_host_sent(const struct http_stream *st, const struct arn_h1_msg *m)
{
	return (st->state & HTTP_S_HOST_STRIPPED) || m->target_form == ARN_H1_TF_ABSOLUTE ||
	       m->host_idx < 0;
}

/* Is the connection's kept list the one http_req_edits would make for
 * @p st now? Sets the stream's outputs when it is. Asked before the Host
 * sent and the timeout announced are worked out: the route is keyed, and
 * a route that rewrites Host or the path never has its list kept
 * (edits_keep), so a Host is sent only where the request makes one
 * (edits_host_sent); the timeout announced is the route's per-try
 * timeout's pick from the stream's timeout, which is keyed. */
static inline bool edits_kept(struct http_conn *hc, struct http_stream *st,
			      const struct arn_h1_msg *m)
{
	return hc->re_gen_id && hc->re_gen_id == st->route_gen && hc->re_route == st->route &&
	       hc->re_vhost == st->vhost && hc->re_rt == st->rt && hc->re_wc == st->wc &&
	       hc->re_hcm == hc->hcm && hc->re_timeout_ms == st->timeout_ms &&
	       hc->re_expect == !!(m->flags & ARN_H1_F_EXPECT_CONTINUE) &&
	       !edits_host_sent(st, m) && !st->rl_unenforced && !st->jwt_edits && !st->grpc_web &&
	       edits_kept_outputs(hc, st, m);
}

/* Keep the @p n edits http_req_edits made in @p e from @p x when another
 * request may use them (see above), or drop the kept ones: the kept list
 * is always the last one made (hc->timeout_text holds its timeout). */
static void edits_keep(struct http_conn *hc, const struct http_stream *st,
		       const struct http_req_ctx *x, const struct arn_h1_edit *e, unsigned n)
{
	_Static_assert(HTTP_RE_MAX + 1 < HTTP_RE_RID_OWN, "re_rid's index and mark differ");
	/* a generated id is the only text a kept list may have used: its
	 * edit's value is set per request (edits_kept_outputs) */
	bool gen_id = x->request_id == x->text && x->text_len == HTTP_REQUEST_ID_LEN + 1;
	unsigned rid = 0;
	if (gen_id)
		while (rid < n && e[rid].value != x->request_id)
			rid++;
	if (!st->route_gen || (x->text_len && !gen_id) || x->xff || x->host || x->path_rewritten ||
	    x->hcm->n_ip_detect ||
	    n > HTTP_RE_MAX || (gen_id && rid == n) || (st->route && st->route->route.n_mirrors)) {
		hc->re_gen_id = 0;
		return;
	}
	hc->re_rid = gen_id			   ? (uint8_t)(rid + 1)
		     : x->hcm->generate_request_id ? HTTP_RE_RID_OWN
						   : 0;
	memcpy(hc->re_e, e, n * sizeof(*e));
	hc->re_n = (uint8_t)n;
	hc->re_gen_id = st->route_gen;
	hc->re_rt = st->rt;
	hc->re_vhost = st->vhost;
	hc->re_route = st->route;
	hc->re_wc = st->wc;
	hc->re_hcm = hc->hcm;
	hc->re_timeout_ms = st->timeout_ms; /* as routed: see edits_kept */
	hc->re_expect = (st->req.m.flags & ARN_H1_F_EXPECT_CONTINUE) != 0;
}

/* The client's x-forwarded-client-cert element (APPEND_FORWARD,
 * SANITIZE_SET on mTLS), first in the request's text (a list that uses
 * the text is never kept). @return 0, or -1 when it could not be made
 * (the request was answered: 500, as an edit list that does not fit;
 * sent without the element, the upstream would take the client for
 * whoever a header before it names). */
static int __attribute__((noinline)) xfcc_make(struct http_stream *st, struct http_req_ctx *x)
{
	struct http_conn *hc = st->hc;
	int k = http_xfcc_tls_value(hc->tls, hc->hcm->fcc_details, x->text, x->text_cap - 1);
	if (k < 0) {
		HTTP_INC(hc, rq_xfcc_failed);
		http_local_reply_route(st, 500, NULL, 0, 0, "xfcc_failed", NULL, 0);
		http_conn_run(hc);
		return -1;
	}
	x->text[k] = 0;
	x->xfcc = x->text;
	x->xfcc_len = (uint32_t)k;
	x->text_len = (uint32_t)k + 1;
	return 0;
}

/* The request's edits made anew into @p e (MAX_EDITS slots): http_req_edits'
 * (kept for the next request when they may be: edits_keep) and a local
 * rate limit's. @return their count, or -1 when they did not fit (the
 * request was answered). Out of line: a request that reuses the kept
 * edits sets up no context. */
static int __attribute__((noinline))
edits_make(struct http_stream *st, const char *host, uint32_t host_len, bool rewrite, uint32_t tmo,
	   struct arn_h1_edit *e)
{
	struct http_conn *hc = st->hc;
	const struct arn_h1_msg *m = &st->req.m;
	char *text = st->res->text;
	/* Filled field by field: an initializer zeroes the whole context,
	 * padding and results (which http_req_edits sets before it reads
	 * them) too (bench_hcm: about 20 instructions a request). */
	_Static_assert(sizeof(void *) != 8 || sizeof(struct http_req_ctx) == 176,
		       "a member added to http_req_ctx is to be set here too");
	struct http_req_ctx x;
	x.hcm = hc->hcm;
	x.rt = st->rt;
	x.vhost = st->vhost;
	x.route = st->route;
	x.wc = st->wc;
	x.raddr = hc->raddr;
	x.rport = hc->rport;
	x.draddr = hc->draddr;
	x.drport = hc->drport;
	x.laddr = hc->laddr;
	x.lport = hc->lport;
	x.tls = hc->tls != NULL;
	/* asked only by the modes that look at it: FORWARD_ONLY,
	 * APPEND_FORWARD, SANITIZE_SET (1 to 3) */
	x.mtls =
	    hc->tls && (unsigned)(hc->hcm->fcc - 1) < 3 && arn_tls_peer_cert_presented(hc->tls);
	x.host = host;
	x.host_len = host_len;
	x.host_rewritten = host && st->route &&
			   (host == st->ep_host || host == st->route->route.host_rewrite_literal);
	x.path_rewritten = rewrite;
	x.rid_head = st->rid_head;
	x.timeout_ms = tmo;
	x.timeout_text = &hc->timeout_text;
	x.attempt = st->attempts;
	x.rand_hi = X(st)->rid_hi;
	x.rand_lo = X(st)->rid_lo;
	x.text = text + st->text_len;
	x.text_cap = HTTP_TEXT - st->text_len;
	x.text_len = 0;
	x.xfcc = NULL;
	x.xfcc_len = 0;
	if (unlikely(x.mtls) && hc->hcm->fcc != ARN_CFG_FCC_FORWARD_ONLY && xfcc_make(st, &x) < 0)
		return -1;
	int n = http_req_edits(&x, m, e, MAX_EDITS - 1);
	hc->re_made++;
	if (n < 0) {
		/* it may have rewritten hc->timeout_text: the kept list goes */
		hc->re_gen_id = 0;
		request_edit_overflow(st, "header_edits_overflow");
		return -1;
	}
	st->text_len += x.text_len;
	edits_keep(hc, st, &x, e, (unsigned)n);
	if (unlikely(hc->hcm->tracing)) {
		/* HCM tracing: the decision in x-request-id, traceparent and
		 * tracestate (per request: such a list is never kept) */
		hc->re_gen_id = 0;
		int k = http_otel_req_edits(st, hc->hcm->use_remote_address && !x.internal,
					    &x.request_id, &x.request_id_len, text, HTTP_TEXT,
					    &st->text_len, e + n, MAX_EDITS - 1 - (unsigned)n);
		if (k < 0) {
			request_edit_overflow(st, "header_edits_overflow");
			return -1;
		}
		n += k;
	}
	if (unlikely(hc->hcm->n_decompressors)) {
		/* a decompressor's advertise_accept_encoding: of the request's
		 * own Accept-Encoding (per request: such a list is never kept) */
		hc->re_gen_id = 0;
		int k = http_dcmp_req_edits(st, e + n, MAX_EDITS - 1 - (unsigned)n);
		if (k < 0) {
			request_edit_overflow(st, "header_edits_overflow");
			return -1;
		}
		n += k;
	}
	st->xff = x.xff;
	st->xff_len = x.xff_len;
	st->request_id = x.request_id;
	st->request_id_len = x.request_id_len;
	/* only a local ratelimit filter's unenforced decision and the
	 * jwt_authn filter have edits */
	int rl = st->rl_unenforced || st->jwt_edits
		     ? http_l4_req_edits(st, e + n, MAX_EDITS - 1 - (unsigned)n)
		     : 0;
	if (rl < 0) {
		request_edit_overflow(st, "header_edits_overflow");
		return -1;
	}
	n += rl;
	if (unlikely(st->grpc_web)) {
		/* the grpc_web filter's: the request as gRPC */
		int k = http_grpc_web_req_edits(st, e + n, MAX_EDITS - 1 - (unsigned)n);
		if (k < 0) {
			request_edit_overflow(st, "header_edits_overflow");
			return -1;
		}
		n += k;
	}
	return n;
}

/* The request head goes upstream with @p n edits @p ed and path @p path
 * (@p plen bytes): the attempt is under way. */
static inline __attribute__((always_inline)) void
head_send(struct http_stream *st, const char *path, uint32_t plen, struct arn_h1_edit *ed, int n)
{
	struct http_conn *hc = st->hc;
	struct http_upconn *u = st->up;
	/* the edit slots keep one free for the codec's own */
	struct http_peer *up = http_up_peer(u);
	int rc = up->codec->encode_request_head(up, &st->req.m, path, plen, ed, (unsigned)n,
						(st->state & HTTP_S_UPGRADE));
	if (rc == -E2BIG) {
		/* more edits than the serializer applies (never with the
		 * slots above): none of them would be written */
		request_edit_overflow(st, "header_edits_overflow");
		return;
	}
	if (rc != 0) {
		http_local_reply_route(st, 503, NULL, 0, ARN_RF_BIT(LOCAL_RESET), "out_of_buffers",
				       NULL, 0);
		http_conn_run(hc);
		return;
	}
	st->state |= HTTP_S_HEAD_SENT;
	u->n_req++;
	X(st)->attempt_reused = u->n_req > 1;
	X(st)->attempt_heard = false;
	st->up_start_tsc = http_tsc(hc->w);
	if (st->attempts > 1) {
		/* a retry: the body kept so far goes first (http_attempt_send) */
		st->state |= HTTP_S_REPLAYING;
		X(st)->replay = X(st)->rb_head;
	}
	http_conn_run(hc);
}

/* The endpoint's address and port as a Host value ("a.b.c.d:port", no
 * NUL) into @p buf: for a request that has no authority to send.
 * @return its length. */
static uint32_t ep_authority(const struct http_stream *st, char buf[64])
{
	return (uint32_t)snprintf(buf, 64, "%u.%u.%u.%u:%u", st->ep_addr >> 24,
				  (st->ep_addr >> 16) & 255, (st->ep_addr >> 8) & 255,
				  st->ep_addr & 255, st->ep_port);
}

/* upstream_ready for a request that does not take the connection's kept
 * edits: the Host it sends, the timeout it announces and its rewritten
 * path worked out, its edits made. Out of line: the kept edits' path
 * needs none of it (nor its frame's edit slots). */
static void __attribute__((noinline)) upstream_ready_anew(struct http_stream *st)
{
	const struct arn_h1_msg *m = &st->req.m;
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
	} else if (r && r->route.auto_host_rewrite && st->ep_host) {
		/* the endpoint's hostname; without one the Host stays as it came,
		 * as Envoy's router leaves it (it rewrites only to a hostname) */
		host = st->ep_host;
		host_len = (uint32_t)strlen(host);
	} else if (edits_host_sent(st, m)) {
		if ((st->state & HTTP_S_HOST_STRIPPED) || m->target_form == ARN_H1_TF_ABSOLUTE) {
			/* absolute-form: the target's authority replaces Host
			 * (RFC 9112 3.2.2, as Envoy with allow_absolute_url) */
			host = st->auth;
			host_len = st->auth_len;
		} else if (m->authority.len) {
			/* HTTP/1.0 without Host (or absolute-form without
			 * one): the upstream speaks HTTP/1.1 and needs one */
			host = m->authority.p;
			host_len = m->authority.len;
		} else {
			host = hostbuf;
			host_len = ep_authority(st, hostbuf);
		}
	}
	/* Envoy announces the per-try timeout when it is the shorter one */
	uint32_t tmo = st->timeout_ms;
	uint32_t pt = r && r->route.retry.present ? r->route.retry.per_try_timeout_ms : 0;
	if (pt && (!tmo || pt < tmo))
		tmo = pt;
	struct arn_h1_edit e[MAX_EDITS];
	int n = edits_make(st, host, host_len, rewrite, tmo, e);
	if (n < 0)
		return;
	/* The rewritten path goes last in the text, and only until the head is
	 * serialized: the response's edits need the room more. A path that
	 * does not fit (or a rewrite to nothing) is refused: the original
	 * path must never go upstream in its place (issue 12). */
	const char *path = m->path.p;
	uint32_t plen = m->path.len;
	if (rewrite) {
		/* text_len never passes HTTP_TEXT (the edits stop at the cap);
		 * said here so that the compiler sees the room is at most
		 * HTTP_TEXT: with LTO it inlines the regex rewrite and, not
		 * knowing it, warned of a store 2 GiB past text
		 * (-Wstringop-overflow, a path that cannot be taken) */
		uint32_t used = st->text_len < HTTP_TEXT ? st->text_len : HTTP_TEXT;
		char *buf = text + used;
		int k =
		    arn_cfg_route_rewrite_path(r, m->path.p, m->path.len, buf, HTTP_TEXT - used);
		if (k <= 0) {
			request_edit_overflow(st, k == 0 ? "path_rewrite_empty"
							 : "path_rewrite_overflow");
			return;
		}
		path = buf; /* past text_len: free again once serialized */
		plen = (uint32_t)k;
	}
	/* a mirrored request's shadows copy its head as it goes (a route
	 * with mirrors never takes the kept edits: edits_keep) */
	if (X(st)->shadows)
		http_shadow_head(st, m, path, plen, e, n);
	head_send(st, path, plen, e, n);
}

/* The request head goes upstream once the stream has a connected upstream
 * connection (now, or from on_connected): with the connection's kept
 * edits when they are this request's (edits_kept), else its own
 * (upstream_ready_anew). */
static void upstream_ready(struct http_stream *st)
{
	struct http_conn *hc = st->hc;
	const struct arn_h1_msg *m = &st->req.m;
	if (!st->up || (st->state & HTTP_S_HEAD_SENT) || !st->res)
		return;
	/* every attempt writes its edits from the same place in the text (set
	 * when the request was routed): the previous attempt's are serialized
	 * already. */
	st->text_len = X(st)->text_mark;
	if (!edits_kept(hc, st, m)) {
		upstream_ready_anew(st);
		return;
	}
	/* a kept list's route rewrites no path (edits_keep) */
	head_send(st, m->path.p, m->path.len, hc->re_e, hc->re_n);
}

/* RFC 9110 9.2.2: methods whose request may be sent twice to the same effect. */
static bool method_idempotent(uint8_t m)
{
	return m == ARN_H1_M_GET || m == ARN_H1_M_HEAD || m == ARN_H1_M_OPTIONS ||
	       m == ARN_H1_M_TRACE || m == ARN_H1_M_PUT || m == ARN_H1_M_DELETE;
}

/*
 * The connection this attempt took idle from the pool closed before a byte
 * of the answer came: almost always the upstream closing it as idle while
 * the request was on its way (the keep-alive race of RFC 9112 9.3.1 and
 * 9.6, which no timeout can rule out). An idempotent request without a
 * body, complete and not yet answered, is sent once more on a new
 * connection at the next timer tick, as HAProxy (retry-on
 * conn-failure,empty-response) and nginx (proxy_next_upstream error) do,
 * where Envoy answers 503 UC unless a retry policy covers resets. Once per
 * request, outside the retry policy and its budget; counted in
 * upstream_rq_reuse_replay. A request with a body is not: its bytes were
 * not kept (HTTP_S_KEEP_BODY belongs to the retry policy), and the method
 * says nothing about a second effect. @return true when it is replayed.
 */
static bool reuse_replay(struct http_stream *st)
{
	struct http_upconn *u = st->up; /* NULL when its close reported it */
	if (!st->res || !X(st)->attempt_reused || X(st)->attempt_heard || X(st)->reuse_replayed ||
	    (st->state & (HTTP_S_LOCAL | HTTP_S_TUNNEL | HTTP_S_UPGRADE | HTTP_S_RESP_STARTED)) ||
	    !(st->state & HTTP_S_REQ_DONE) || http_msg_has_body(&st->req.m) ||
	    !method_idempotent(st->req.m.method) || (u && http_up_heard(u)))
		return false;
	X(st)->reuse_replayed = true;
	attempt_end(st, HOST_ERROR);
	attempt_drop(st);
	st->state |= HTTP_S_FRESH_UP;
	CL_INC(st, upstream_rq_reuse_replay);
	xreq_arm(st->hc->w, &X(st)->retry_timer, retry_fire, 0);
	return true;
}

void http_upstream_lost(struct http_stream *st, bool reset)
{
	struct http_conn *hc = st->hc;
	if (st->up && st->res) /* a TLS alert ended it: the access log's reason */
		http_up_failure_reason(st->up, X(st)->tfr, sizeof(X(st)->tfr));
	if (st->state & HTTP_S_TUNNEL) {
		st->state |= HTTP_S_REQ_DONE | HTTP_S_RESP_DONE;
		hc->close_after = true;
		http_up_detach(st);
		hc->again = true;
		return;
	}
	/* an HTTP/2 upstream reset the stream (Envoy's remote_reset, UR;
	 * REFUSED_STREAM: remote_refused_stream_reset, retriable by
	 * refused-stream as by reset), else the connection went (UC) */
	uint8_t rs = st->up_reset;
	st->up_reset = 0;
	uint32_t flag =
	    rs ? ARN_RF_BIT(UPSTREAM_REMOTE_RESET) : ARN_RF_BIT(UPSTREAM_CONNECTION_TERMINATION);
	if (!(st->state & HTTP_S_RESP_STARTED)) {
		CL_INC(st, upstream_rq_rx_reset);
		if (!rs && reuse_replay(st)) {
			hc->again = true;
			return;
		}
		const struct arn_cfg_retry_policy *rp = X(st)->retry.rp;
		bool would = http_retry_on_reset(rp, HTTP_RESET_RESET) ||
			     (rs == 2 && rp && (rp->retry_on & ARN_CFG_RETRY_REFUSED_STREAM));
		if (http_maybe_retry(st, would, HOST_ERROR)) {
			hc->again = true;
			return;
		}
		if (rs)
			http_reset_reply(st, 503, "remote reset", flag,
					 rs == 2 ? "upstream_reset_before_response_started{remote_"
						   "refused_stream_reset}"
						 : "upstream_reset_before_response_started{remote_"
						   "reset}");
		else
			http_reset_reply(
			    st, 503, "connection termination", flag,
			    "upstream_reset_before_response_started{connection_termination}");
		return;
	}
	(void)reset;
	/* the response is partly out: the client must see it cut, not complete */
	CL_INC(st, upstream_rq_rx_reset);
	st->flags |= flag;
	st->details = rs ? "upstream_reset_after_response_started{remote_reset}"
			 : "upstream_reset_after_response_started{connection_termination}";
	HTTP_INC(hc, rq_reset_after_downstream_response_started);
	http_up_detach(st);
	http_conn_abort(hc);
}

static void upstream_failed(struct http_stream *st, int reason, bool connected, bool timed_out,
			    const char *why)
{
	struct http_conn *hc = st->hc;
	if (why && st->res) {
		/* the last attempt's, for %UPSTREAM_TRANSPORT_FAILURE_REASON% */
		struct http_xreq *x = X(st);
		snprintf(x->tfr, sizeof(x->tfr), "%s", why);
	}
	if (!(st->state & HTTP_S_ACTIVE) || (st->state & HTTP_S_RESP_DONE)) {
		http_conn_run(hc);
		return;
	}
	/* the response's end was read and waits for its last bytes to reach
	 * the client: complete, not lost (an upstream's connection: close,
	 * then its FIN or its RST for the request body it did not read) */
	if ((st->state & HTTP_S_RESP_END_HELD) && connected && hc->ops->keep_resp_end &&
	    hc->ops->keep_resp_end(st)) {
		http_conn_run(hc);
		return;
	}
	if (!connected) {
		if (http_maybe_retry(
			st, http_retry_on_reset(X(st)->retry.rp, HTTP_RESET_CONNECT_FAILURE),
			HOST_ERROR)) {
			http_conn_run(hc);
			return;
		}
		/* Envoy 1.2x's texts: "remote connection failure" for a refused
		 * or unreachable connect, "connection timeout" past connect_timeout */
		char text[320];
		if (timed_out)
			http_reset_reply(
			    st, 503, "connection timeout", ARN_RF_BIT(UPSTREAM_CONNECTION_FAILURE),
			    "upstream_reset_before_response_started{connection_timeout}");
		else if (why) {
			/* Envoy's text for a failed TLS handshake */
			snprintf(text, sizeof(text),
				 "remote connection failure, transport failure reason: %s", why);
			http_reset_reply(st, 503, text, ARN_RF_BIT(UPSTREAM_CONNECTION_FAILURE),
					 "upstream_reset_before_response_started{remote_connection_"
					 "failure}");
		} else
			http_reset_reply(
			    st, 503,
			    reason == -ECONNREFUSED
				? "remote connection failure, transport failure reason: "
				  "delayed connect error: 111"
				: "remote connection failure",
			    ARN_RF_BIT(UPSTREAM_CONNECTION_FAILURE),
			    "upstream_reset_before_response_started{remote_connection_"
			    "failure}");
	} else {
		http_upstream_lost(st, reason == -ECONNRESET);
	}
	http_conn_run(hc);
}

/* The upstream said something (or closed): the response step takes it. */
static void upstream_data(struct http_stream *st)
{
	if (st->up && http_up_heard(st->up))
		X(st)->attempt_heard = true; /* not a mere FIN: no replay (reuse_replay) */
	st->last_activity_ms = st->hc->w->now_ms;
	http_conn_run(st->hc);
}

/* The upstream connection took what waited: the request goes on. */
static void upstream_writable(struct http_stream *st)
{
	http_conn_run(st->hc);
}

/*
 * The attempt's request goes on once its connection took what was queued:
 * a retry sends the body kept so far first, a piece at a time; once the
 * whole request is out, the route's timeout and the per-try timers start.
 */
bool http_attempt_send_(struct http_stream *st)
{
	struct http_worker *w = st->hc->w;
	struct http_peer *up = st->up ? http_up_peer(st->up) : NULL;
	if ((st->state & HTTP_S_REPLAYING) && up && (st->state & HTTP_S_HEAD_SENT)) {
		if (X(st)->replay) {
			struct rte_mbuf *rm = X(st)->replay;
			X(st)->replay = rm->next;
			up->codec->encode_body(up, rte_pktmbuf_mtod(rm, const char *),
					       rm->data_len);
			return true;
		}
		st->state &= ~HTTP_S_REPLAYING;
		if (st->state & HTTP_S_REQ_DONE) {
			http_req_end_encode(st, up);
			return true;
		}
	}
	if ((st->state & HTTP_S_REQ_DONE) && !(st->state & HTTP_S_REPLAYING) && up && !up->queued) {
		if (st->timeout_ms && !(st->state & (HTTP_S_RESP_DONE | HTTP_S_ROUTE_TIMER)))
			route_timer_start(w, st);
		/* per_try_timeout: from the moment the attempt has its connection
		 * and the whole request */
		const struct arn_cfg_retry_policy *rp = st->route ? &st->route->route.retry : NULL;
		if ((st->state & HTTP_S_HEAD_SENT) && !(st->state & HTTP_S_ATTEMPT_SENT)) {
			st->state |= HTTP_S_ATTEMPT_SENT;
			if (rp && rp->present && rp->per_try_timeout_ms &&
			    !(st->state & HTTP_S_RESP_STARTED))
				xreq_arm(w, &X(st)->try_timer, try_timeout, rp->per_try_timeout_ms);
			/* per_try_idle_timeout: the same start, then reset by every
			 * byte from the upstream, response body included */
			if (rp && rp->present && rp->per_try_idle_timeout_ms &&
			    !(st->state & HTTP_S_RESP_DONE)) {
				X(st)->up_activity_ms = w->now_ms;
				xreq_arm(w, &X(st)->try_idle_timer, try_idle_timeout,
					 rp->per_try_idle_timeout_ms);
			}
		}
	}
	return false;
}

/* ---- timers -----------------------------------------------------------------------------------
 */

void http_route_timeout(struct http_timer *t)
{
	struct http_stream *st = OWNER(t, struct http_stream, route_timer);
	struct http_conn *hc = st->hc;
	/* left armed by an earlier stream, or by this one's response */
	if (!(st->state & HTTP_S_ROUTE_TIMER) || !(st->state & HTTP_S_ACTIVE) ||
	    (st->state & (HTTP_S_RESP_DONE | HTTP_S_TUNNEL)))
		return;
	struct http_worker *w = hc->w;
	if (w->now_ms < st->route_due_ms) {
		/* armed for an earlier stream: this one's timeout is later */
		http_timer_arm(w, t, st->route_due_ms - w->now_ms);
		return;
	}
	st->state |= HTTP_S_TIMED_OUT;
	CL_INC(st, upstream_rq_timeout);
	if (!(st->state & HTTP_S_RESP_STARTED)) {
		http_local_reply_route(st, 504, HTTP_BODY_UT, strlen(HTTP_BODY_UT),
				       ARN_RF_BIT(UPSTREAM_REQUEST_TIMEOUT),
				       "upstream_response_timeout", NULL, 0);
	} else {
		st->flags |= ARN_RF_BIT(UPSTREAM_REQUEST_TIMEOUT);
		http_up_detach(st);
		http_conn_abort(hc);
	}
	http_conn_run(hc);
}

/* The back-off is over: the next attempt. */
static void retry_fire(struct http_timer *t)
{
	struct http_stream *st = OWNER(t, struct http_xreq, retry_timer)->st;
	struct http_conn *hc = st->hc;
	if (!(st->state & HTTP_S_RETRY_WAIT) || !hc->tc || hc->state == HTTP_DC_CLOSED ||
	    (st->state & HTTP_S_LOCAL))
		return;
	st->state &= ~HTTP_S_RETRY_WAIT;
	attempt_start(st);
	http_conn_run(hc);
}

/* per_try_timeout: this attempt took too long to answer; it is reset and,
 * when the policy allows, retried (Envoy counts it as a reset), else 504. */
static void try_timeout(struct http_timer *t)
{
	struct http_stream *st = OWNER(t, struct http_xreq, try_timer)->st;
	struct http_conn *hc = st->hc;
	if (!(st->state & HTTP_S_ACTIVE) || (st->state & (HTTP_S_RESP_STARTED | HTTP_S_LOCAL)) ||
	    (st->state & HTTP_S_TUNNEL) || !hc->tc || (!st->up && !(st->state & HTTP_S_PENDING)))
		return;
	CL_INC(st, upstream_rq_per_try_timeout);
	if (http_maybe_retry(st, http_retry_on_reset(X(st)->retry.rp, HTTP_RESET_TIMEOUT),
			     HOST_TIMEOUT)) {
		http_conn_run(hc);
		return;
	}
	st->state |= HTTP_S_TIMED_OUT;
	http_local_reply_route(st, 504, HTTP_BODY_UT, strlen(HTTP_BODY_UT),
			       ARN_RF_BIT(UPSTREAM_REQUEST_TIMEOUT), "upstream_per_try_timeout",
			       NULL, 0);
	http_conn_run(hc);
}

/* per_try_idle_timeout: this attempt's upstream went quiet for too long.
 * Before the response: a per-try timeout (retried, or 504). After it
 * started (Envoy keeps this timer running through the body): the stream is
 * reset. */
static void try_idle_timeout(struct http_timer *t)
{
	struct http_stream *st = OWNER(t, struct http_xreq, try_idle_timer)->st;
	struct http_conn *hc = st->hc;
	struct http_worker *w = hc->w;
	const struct arn_cfg_retry_policy *rp = st->route ? &st->route->route.retry : NULL;
	if (!rp || !rp->per_try_idle_timeout_ms || !(st->state & HTTP_S_ACTIVE) ||
	    (st->state & (HTTP_S_RESP_DONE | HTTP_S_LOCAL)) || (st->state & HTTP_S_TUNNEL) ||
	    !hc->tc || !st->up)
		return;
	uint64_t idle = w->now_ms - X(st)->up_activity_ms;
	if (idle < rp->per_try_idle_timeout_ms) {
		http_timer_arm(w, t, rp->per_try_idle_timeout_ms - idle);
		return;
	}
	CL_INC(st, upstream_rq_per_try_idle_timeout);
	if (st->state & HTTP_S_RESP_STARTED) {
		st->flags |= ARN_RF_BIT(UPSTREAM_REQUEST_TIMEOUT);
		st->details = "upstream_per_try_idle_timeout";
		HTTP_INC(hc, rq_reset_after_downstream_response_started);
		http_up_detach(st);
		http_conn_abort(hc);
		http_conn_run(hc);
		return;
	}
	if (http_maybe_retry(st, http_retry_on_reset(X(st)->retry.rp, HTTP_RESET_TIMEOUT),
			     HOST_TIMEOUT)) {
		http_conn_run(hc);
		return;
	}
	st->state |= HTTP_S_TIMED_OUT;
	http_local_reply_route(st, 504, HTTP_BODY_UT, strlen(HTTP_BODY_UT),
			       ARN_RF_BIT(UPSTREAM_REQUEST_TIMEOUT),
			       "upstream_per_try_idle_timeout", NULL, 0);
	http_conn_run(hc);
}
