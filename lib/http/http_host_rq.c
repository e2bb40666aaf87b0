/*
 * An attempt's end as its host and cluster see it: the per-host counters
 * (rq_success, rq_error, rq_timeout, rq_active), outlier detection's
 * detectors and a draining pool's retirement (http_host_rq_done), and a
 * stream's least-request count of a host (http_lb_stream_active). The
 * router filter and sub-requests (routed requests, MCP calls, shadows)
 * end their attempts here; it calls down only (pools, hosts, detectors).
 */
#include "http_host_rq.h"
#include "http_od.h"
#include "http_stream.h"
#include "http_upstream.h"

/* The request's end as Envoy's outlier detector sees it: a status, or a
 * locally originated failure (connect failure, reset, timeout) that,
 * without split_external_local_origin_errors, counts as a gateway error. */
static void __attribute__((noinline))
od_put(struct http_stream *st, struct http_host *h, int outcome)
{
	struct http_worker *w = st->hc->w;
	if (!st->crt)
		return;
	const uint32_t local =
	    ARN_RF_BIT(UPSTREAM_CONNECTION_FAILURE) | ARN_RF_BIT(UPSTREAM_CONNECTION_TERMINATION) |
	    ARN_RF_BIT(UPSTREAM_PROTOCOL_ERROR) | ARN_RF_BIT(UPSTREAM_REMOTE_RESET);
	enum http_od_result r;
	if (outcome == HOST_LOCAL)
		r = HTTP_OD_NONE; /* ours, not the host's */
	else if ((st->state & HTTP_S_TIMED_OUT) || outcome == HOST_TIMEOUT ||
		 outcome == HOST_ERROR || (st->flags & local))
		r = (st->state & HTTP_S_HEAD_SENT) ? HTTP_OD_RESET : HTTP_OD_LOCAL;
	else if (st->up_status)
		r = http_od_classify(st->up_status, false);
	else
		r = HTTP_OD_NONE; /* the client went away, or our own overflow */
	struct http_host *const *hosts = NULL;
	size_t n = 0;
	if (r != HTTP_OD_SUCCESS && r != HTTP_OD_NONE)
		hosts = http_rt_hosts(st->crt, &n);
	struct http_od_ev ev;
	http_od_put(&st->cluster->outlier, st->crt, h, hosts, n, r, w->now_ms, http_rand(w), &ev);
	http_od_ev_stats(CS(st), w->slot, &ev);
}

/* http_host_rq_done's end for a cluster with outlier detection: the
 * detectors, then a draining pool may retire (it holds the host until). */
static void __attribute__((noinline))
od_put_retire(struct http_stream *st, struct http_pool *p, int outcome)
{
	od_put(st, p->host, outcome);
	if (p->draining)
		http_pool_maybe_retire(st->hc->w, p);
}

void http_host_rq_done(struct http_stream *st, int outcome)
{
	struct http_conn *hc = st->hc;
	struct http_worker *w = hc->w;
	struct http_pool *p = st->pool;
	st->state &= ~HTTP_S_COUNTED_HOST;
	if (!p)
		return;
	struct http_host_ctr *c = http_host_ctr(p->host, w->idx);
	const uint32_t failed =
	    ARN_RF_BIT(UPSTREAM_CONNECTION_FAILURE) | ARN_RF_BIT(UPSTREAM_CONNECTION_TERMINATION) |
	    ARN_RF_BIT(UPSTREAM_PROTOCOL_ERROR) | ARN_RF_BIT(UPSTREAM_OVERFLOW) |
	    ARN_RF_BIT(UPSTREAM_REMOTE_RESET) | ARN_RF_BIT(LOCAL_RESET);
	if ((st->state & HTTP_S_TIMED_OUT) || outcome == HOST_TIMEOUT) {
		HTTP_HOST_ADD(c, rq_timeout, 1);
		HTTP_HOST_ADD(c, rq_error, 1);
	} else if (outcome != HOST_AUTO || (st->flags & failed)) {
		/* HOST_ERROR, or HOST_LOCAL / HTTP_S_LOCAL_FAIL (whose
		 * LOCAL_RESET lands here too): the proxy's own failure is not
		 * the host's error, nor its success. Tested here, off a
		 * successful request's path. */
		if (outcome != HOST_LOCAL && !(st->state & HTTP_S_LOCAL_FAIL))
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
	/* outlier detection: one test of a flag for clusters without it (a
	 * stream with a pool has its cluster). Both calls are tail calls: a
	 * call in the middle made every request pay a stack frame (bench_hcm:
	 * 37 -> 45 instructions here) */
	if (__builtin_expect(st->cluster->outlier.present, 0)) {
		od_put_retire(st, p, outcome);
		return;
	}
	if (p->draining) /* only a draining pool retires */
		http_pool_maybe_retire(w, p);
}

uint32_t http_lb_stream_active(void *ctx, const struct arn_cfg_endpoint *ep)
{
	struct http_stream *st = ctx;
	struct http_pool *p =
	    st->crt ? http_pool_find(st->hc->w, st->crt->name, st->crt->len, ep->addr, ep->port)
		    : NULL;
	return p ? p->n_active : 0;
}
