/*
 * Outlier detection (Envoy's config.cluster.v3.OutlierDetection): the
 * consecutive_5xx and consecutive_gateway_failure detectors, inline as in
 * Envoy, and every `interval` on one lcore (worker 0, http_od_interval):
 * the ends of ejections whose time passed, the decay of the ejection
 * multipliers, and the success-rate and failure-percentage detectors over
 * the requests each host counted in the interval (its per-worker
 * rq_success and rq_error, summed: nothing more on the request path).
 *
 * Where the state lives: in the registry's struct http_host (http_int.h,
 * od_*), shared by every worker through atomics, and the count of hosts
 * ejected at once in the cluster's struct http_cluster_rt (od_ejected).
 * No lock: a response's end (http_od_put, any worker) adds to a host's
 * consecutive counts with an atomic add or zeroes them on a success; the
 * worker whose add reaches a threshold is the only one that sees that value
 * and decides the ejection, and a compare-and-swap of od_ejected (0 to 1)
 * makes one worker the ejector even against another detector. The ejection
 * ends at od_until_ms, a time every worker compares with its own now_ms
 * (the TSC's milliseconds, one clock for all workers): the first worker that
 * finds it passed (http_od_ejected, from the balancer, an ejection's sweep
 * or the interval on worker 0) swaps od_ejected back to 0 and gives back
 * the cluster's count.
 *
 * Ownership: nothing here owns anything; @p h and @p crt are the caller's
 * (a snapshot's hosts, the stream's cluster reference).
 */
#ifndef ARN_HTTP_OD_H
#define ARN_HTTP_OD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arn_config_model.h"

struct http_host;
struct http_cluster_rt;
struct http_worker;

/* What one request's end says about its host. */
enum http_od_result {
	HTTP_OD_SUCCESS = 0, /* a response below 500: resets the consecutive counts */
	HTTP_OD_5XX,	     /* a 5xx other than 502, 503, 504 */
	HTTP_OD_GATEWAY,     /* 502, 503 or 504 */
	HTTP_OD_LOCAL, /* connect failure, reset, timeout: Envoy maps it to a gateway failure */
	HTTP_OD_NONE,  /* says nothing (the client went away) */
	/* a reset or timeout after the request went on a connection: as
	 * HTTP_OD_LOCAL, but with split_external_local_origin_errors Envoy
	 * heard the connection's success first (LocalOriginConnectSuccess) */
	HTTP_OD_RESET,
	/* tcp_proxy's connect done (LocalOriginConnectSuccessFinal): as
	 * HTTP_OD_SUCCESS, but in split mode a local-origin success only */
	HTTP_OD_CONNECTED,
};

/* What http_od_put did, for the caller's statistics (it has the slot). */
struct http_od_ev {
	bool detected_5xx, enforced_5xx;
	bool detected_gw, enforced_gw;
	bool detected_lo, enforced_lo; /* consecutive_local_origin_failure */
	bool overflow;		       /* max_ejection_percent refused an ejection */
	uint32_t unejected;	       /* ejections the sweep ended (ejections_active -) */
};

/* What http_od_interval did, for the caller's statistics. */
struct http_od_iev {
	uint32_t detected_sr, enforced_sr; /* success rate */
	uint32_t detected_fp, enforced_fp; /* failure percentage */
	/* split_external_local_origin_errors: over local-origin results */
	uint32_t detected_lsr, enforced_lsr, detected_lfp, enforced_lfp;
	uint32_t overflow;  /* max_ejection_percent refused */
	uint32_t unejected; /* ejections ended (ejections_active -) */
};

struct arn_stats_scope;
/**
 * What one http_od_put did, into cluster statistics scope @p sc (NULL:
 * none) in worker slot @p slot: the detections, enforcements, overflows
 * and the ejections_active gauge. The router and tcp_proxy both report
 * through it.
 */
void http_od_ev_stats(struct arn_stats_scope *sc, unsigned slot, const struct http_od_ev *ev);

/** The detectors' verdict on an upstream status (0: none, a local failure). */
enum http_od_result http_od_classify(unsigned status, bool local_failure);

/**
 * Count result @p r for host @p h of cluster @p crt (@p c its
 * outlier_detection, present), at @p now_ms; @p hosts (@p n_hosts) are
 * the cluster's hosts (max_ejection_percent's base, and the hosts whose
 * ejection time passed are brought back first); @p rand decides the
 * enforcing_* percentages. Sets *@p ev (zeroed first).
 * @return true when @p h was ejected by this call.
 */
bool http_od_put(const struct arn_cfg_outlier *c, struct http_cluster_rt *crt, struct http_host *h,
		 struct http_host *const *hosts, size_t n_hosts, enum http_od_result r,
		 uint64_t now_ms, uint64_t rand, struct http_od_ev *ev);

/**
 * Is @p h ejected at @p now_ms? A host whose ejection time passed is
 * brought back here (once, by the first caller: *@p unejected += 1, and
 * @p crt's count goes down).
 */
bool http_od_ejected(struct http_host *h, struct http_cluster_rt *crt, uint64_t now_ms,
		     uint32_t *unejected);

/**
 * The interval's evaluation of cluster @p crt (@p c its outlier_detection,
 * present) at @p now_ms, as Envoy's onIntervalTimer, on one lcore only:
 * every host of @p hosts (@p n_hosts, the cluster's) whose ejection time
 * passed comes back (the health epoch moves); a host back in the set for
 * an interval takes one off its ejection count; then, over the requests
 * each host counted since the last call (rq_success, rq_error summed over
 * its worker slots), the success-rate detector (hosts with at least
 * success_rate_request_volume requests, at least
 * success_rate_minimum_hosts of them: a host below mean - stdev x
 * success_rate_stdev_factor / 1000 is an outlier) and the
 * failure-percentage one (failure_percentage_request_volume,
 * failure_percentage_minimum_hosts, failure_percentage_threshold).
 * With split_external_local_origin_errors the two detectors count only the
 * statuses the hosts sent (http_od_put's counts, not rq_*), and run again
 * over the local-origin results (enforcing_local_origin_success_rate,
 * enforcing_failure_percentage_local_origin), as Envoy's.
 * @p rand draws the enforcing_* percentages. The first call (@p crt's
 * od_round 0) and a host not evaluated by the last call only take their
 * counts as the start of the next interval. Sets *@p ev (zeroed first).
 * @return hosts this call ejected.
 */
uint32_t http_od_interval(const struct arn_cfg_outlier *c, struct http_cluster_rt *crt,
			  struct http_host *const *hosts, size_t n_hosts, uint64_t now_ms,
			  uint64_t rand, struct http_od_iev *ev);

/**
 * Worker 0, from the health checker's tick (http_od_tick.c): runs
 * http_od_interval for each cluster of the current generation with
 * outlier_detection whose interval passed, and counts its statistics.
 */
void http_od_tick(struct http_worker *w);
/* Clusters the last call of http_od_tick visited (0: it did not walk);
 * for the tests. */
size_t http_od_tick_visited(void);

/** The ejection time of the @p n th ejection (1 first) under @p c, ms:
 * base_ejection_time x n, capped at max(max_ejection_time, base). */
uint64_t http_od_eject_ms(const struct arn_cfg_outlier *c, uint32_t n);

#endif
