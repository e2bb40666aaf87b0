/*
 * An attempt's end as its host and cluster see it (http_host_rq.c), and
 * the cluster's max_requests breaker: what the router filter and
 * sub-requests (http_subreq.c) share below both.
 */
#ifndef ARN_HTTP_HOST_RQ_H
#define ARN_HTTP_HOST_RQ_H

#include <stdbool.h>
#include <stdint.h>

#include "http_stream.h"

struct arn_cfg_endpoint;

/* How an attempt went, for the per-host counters (http_host_rq_done).
 * HOST_LOCAL: the proxy's own failure (no buffer for the answer): neither
 * the host's success nor its error, so outlier detection (consecutive and
 * interval detectors alike) never blames a host for a worker's shortage,
 * which a client can cause. */
enum { HOST_AUTO = 0, HOST_ERROR, HOST_TIMEOUT, HOST_LOCAL };

/** The attempt's per-host outcome (once: at the attempt's or stream's end). */
void http_host_rq_done(struct http_stream *st, int outcome);

/**
 * Whether the requests in flight to stream @p st's cluster (st->crt, not
 * NULL) reach @p max, its circuit breaker's max_requests. Routed requests
 * and sub-requests (http_subreq.c) count alike, in the cluster's
 * upstream_rq_active gauge, which each worker adds to in its own
 * statistics slot: this worker's share is read as it is, the other
 * workers' as this worker last summed them, at most a millisecond ago, so
 * that a request reads no line another worker writes (issue 17:
 * share-nothing; with one worker the count is exact). Envoy's check is as
 * loose across workers: a load, then an increment.
 */
static inline bool http_rq_full(const struct http_stream *st, uint32_t max)
{
	struct http_worker *w = st->hc->w;
	struct http_cluster_rt *c = st->crt;
	/* this worker's own share: the word CL_GAUGE adds to */
	int64_t own = (int64_t)__atomic_load_n(
	    arn_stats_word_(c->stats, w->slot, ARN_CL_upstream_rq_active), __ATOMIC_RELAXED);
	if (w->rq_others_crt != c || w->rq_others_ms != w->now_ms) {
		w->rq_others_crt = c;
		w->rq_others_ms = w->now_ms;
		w->rq_others = arn_stats_gauge_value(c->stats, ARN_CL_upstream_rq_active) - own;
	}
	return own + w->rq_others >= (int64_t)max;
}
struct arn_cfg_endpoint;
/** A load balancer's active-request count for @p ep: the requests of the
 * stream @p ctx's cluster's pool to it on this worker (least-request). */
uint32_t http_lb_stream_active(void *ctx, const struct arn_cfg_endpoint *ep);

#endif
