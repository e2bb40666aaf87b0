/*
 * Outlier detection: the consecutive detectors and ejections (http_od.h).
 */
#include "http_od.h"

#include <string.h>

#include "arn_stats.h"
#include "arn_stats_envoy.h"
#include "http_int.h"

/* struct http_host's od_ejected while an ejection is being set up */
#define OD_EJECTING 2u

enum http_od_result http_od_classify(unsigned status, bool local_failure)
{
	if (local_failure)
		return HTTP_OD_LOCAL;
	if (!status)
		return HTTP_OD_NONE;
	if (status == 502 || status == 503 || status == 504)
		return HTTP_OD_GATEWAY;
	return status >= 500 ? HTTP_OD_5XX : HTTP_OD_SUCCESS;
}

uint64_t http_od_eject_ms(const struct arn_cfg_outlier *c, uint32_t n)
{
	uint64_t base = c->base_ejection_time_ms;
	uint64_t cap = c->max_ejection_time_ms > base ? c->max_ejection_time_ms : base;
	uint64_t t = base * (n ? n : 1);
	return t < cap ? t : cap;
}

/* The cluster's health epoch moves, after the host's own store: the
 * balancers' cached candidate lists (struct http_lb_cache) are built
 * again. */
static void epoch_bump(struct http_cluster_rt *crt)
{
	if (crt)
		__atomic_fetch_add(&crt->health_epoch, 1, __ATOMIC_RELEASE);
}

bool http_od_ejected(struct http_host *h, struct http_cluster_rt *crt, uint64_t now_ms,
		     uint32_t *unejected)
{
	uint8_t st = __atomic_load_n(&h->od_ejected, __ATOMIC_ACQUIRE);
	if (!st)
		return false;
	/* OD_EJECTING: the ejector has not stored the end yet */
	if (st != HTTP_HOST_FAILED_OUTLIER ||
	    now_ms < __atomic_load_n(&h->od_until_ms, __ATOMIC_RELAXED))
		return true;
	uint8_t one = 1;
	if (__atomic_compare_exchange_n(&h->od_ejected, &one, 0, false, __ATOMIC_ACQ_REL,
					__ATOMIC_RELAXED)) {
		if (crt)
			__atomic_fetch_sub(&crt->od_ejected, 1, __ATOMIC_RELAXED);
		epoch_bump(crt);
		if (unejected)
			(*unejected)++;
	}
	return false;
}

/* Envoy's ejectHost: max_ejection_percent (the first ejection always
 * passes), then the detector's enforcing percentage.
 *
 * Two workers may eject two hosts at once. Each claims its host first
 * (0 -> OD_EJECTING) and counts the others after a full fence: of two
 * concurrent ejections at least one sees the other's claim (the sweep
 * counts an OD_EJECTING host), so they cannot both pass the limit as
 * when each counted before the other had marked anything (at worst both
 * refuse, as the limit allows one). Without the snapshot's hosts the
 * cluster's count is the base, reserved with a compare-and-swap. */
static bool eject(const struct arn_cfg_outlier *c, struct http_cluster_rt *crt, struct http_host *h,
		  struct http_host *const *hosts, size_t n_hosts, uint32_t enforcing,
		  uint64_t now_ms, uint64_t rand, struct http_od_ev *ev, bool *enforced)
{
	uint32_t max_pct = c->max_ejection_percent > 100 ? 100 : c->max_ejection_percent;
	bool enforce = rand % 100 < enforcing;
	/* 0 -> OD_EJECTING -> ejected: a balancer that saw the flag with the
	 * last ejection's end (passed) would end this one at once */
	if (enforce) {
		uint8_t zero = 0;
		if (!__atomic_compare_exchange_n(&h->od_ejected, &zero, OD_EJECTING, false,
						 __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
			return false; /* another worker ejected it first */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	}
	/* bring back the hosts whose time passed, so the count is today's;
	 * the hosts of the snapshot decide when there are some: the
	 * cluster's count also holds hosts that left the cluster while
	 * ejected (nobody brings those back) */
	bool over;
	if (n_hosts) {
		uint32_t active = 0;
		for (size_t i = 0; i < n_hosts; i++)
			if (hosts[i] != h)
				active += http_od_ejected(hosts[i], crt, now_ms, &ev->unejected);
		over = active && (uint64_t)100 * (active + 1) > (uint64_t)max_pct * n_hosts;
		if (!over && enforce)
			__atomic_fetch_add(&crt->od_ejected, 1, __ATOMIC_RELAXED);
	} else {
		uint32_t active = __atomic_load_n(&crt->od_ejected, __ATOMIC_RELAXED);
		do
			over = active && (uint64_t)100 * (active + 1) > (uint64_t)max_pct;
		while (!over && enforce &&
		       !__atomic_compare_exchange_n(&crt->od_ejected, &active, active + 1, false,
						    __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	}
	if (over) {
		ev->overflow = true;
		if (enforce) {
			__atomic_store_n(&h->od_ejected, 0, __ATOMIC_RELEASE);
			epoch_bump(crt); /* a balancer may have left it out meanwhile */
		}
		return false;
	}
	if (!enforce)
		return false;
	/* the count grows while base x count is under max + base, as
	 * Envoy's ejectTimeBackoff: past the cap the ejection time stays
	 * the cap, and the interval's decay (one off per interval back in
	 * the set, http_od_interval) brings it down from there, not from
	 * the number of ejections. The interval's lcore may decay it at
	 * once: both compare-and-swap. */
	uint64_t lim = (uint64_t)c->max_ejection_time_ms + c->base_ejection_time_ms;
	uint32_t n = __atomic_load_n(&h->od_times, __ATOMIC_RELAXED), m;
	do
		m = (uint64_t)c->base_ejection_time_ms * n < lim ? n + 1 : n;
	while (m != n && !__atomic_compare_exchange_n(&h->od_times, &n, m, false, __ATOMIC_RELAXED,
						      __ATOMIC_RELAXED));
	__atomic_store_n(&h->od_until_ms, now_ms + http_od_eject_ms(c, m ? m : 1),
			 __ATOMIC_RELEASE);
	__atomic_store_n(&h->od_ejected, HTTP_HOST_FAILED_OUTLIER, __ATOMIC_RELEASE);
	epoch_bump(crt);
	*enforced = true;
	return true;
}

/* A host answered: its consecutive 5xx and gateway-failure counts start
 * again (a plain load first: most responses succeed, and a store on every
 * one would bounce the host's line between workers). */
static inline __attribute__((always_inline)) void consecutive_ok(struct http_host *h)
{
	if (__atomic_load_n(&h->od_5xx, __ATOMIC_RELAXED))
		__atomic_store_n(&h->od_5xx, 0, __ATOMIC_RELAXED);
	if (__atomic_load_n(&h->od_gw, __ATOMIC_RELAXED))
		__atomic_store_n(&h->od_gw, 0, __ATOMIC_RELAXED);
}

/* An ejected host's consecutive counts start again when it comes back
 * (Envoy zeroes them at the ejection, and its uneject resets them). */
static void consecutive_zero(struct http_host *h)
{
	__atomic_store_n(&h->od_5xx, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&h->od_gw, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&h->od_lo, 0, __ATOMIC_RELAXED);
}

/* A failure for the consecutive 5xx detector, and for the gateway-failure
 * one when @p gateway (else that count starts again: Envoy's "not a gateway
 * failure"). == : only the add that reaches a threshold decides, once;
 * Envoy's order, the gateway detector first. @return whether it ejected. */
static bool consecutive_fail(const struct arn_cfg_outlier *c, struct http_cluster_rt *crt,
			     struct http_host *h, struct http_host *const *hosts, size_t n_hosts,
			     bool gateway, uint64_t now_ms, uint64_t rand, struct http_od_ev *ev)
{
	uint32_t n5 = __atomic_add_fetch(&h->od_5xx, 1, __ATOMIC_RELAXED);
	uint32_t ng = 0;
	if (gateway)
		ng = __atomic_add_fetch(&h->od_gw, 1, __ATOMIC_RELAXED);
	else if (__atomic_load_n(&h->od_gw, __ATOMIC_RELAXED))
		__atomic_store_n(&h->od_gw, 0, __ATOMIC_RELAXED);
	bool enforced = false;
	if (c->consecutive_gateway_failure && ng == c->consecutive_gateway_failure) {
		ev->detected_gw = true;
		if (eject(c, crt, h, hosts, n_hosts, c->enforcing_consecutive_gateway_failure,
			  now_ms, rand >> 7, ev, &enforced))
			ev->enforced_gw = true;
	}
	if (!enforced && c->consecutive_5xx && n5 == c->consecutive_5xx) {
		ev->detected_5xx = true;
		if (eject(c, crt, h, hosts, n_hosts, c->enforcing_consecutive_5xx, now_ms, rand, ev,
			  &enforced))
			ev->enforced_5xx = true;
	}
	return enforced;
}

/* A status in split mode (Envoy's putHttpResponseCode): the consecutive
 * 5xx and gateway-failure counts, as http_od_put's without split. */
static bool put_status(const struct arn_cfg_outlier *c, struct http_cluster_rt *crt,
		       struct http_host *h, struct http_host *const *hosts, size_t n_hosts,
		       enum http_od_result r, uint64_t now_ms, uint64_t rand, struct http_od_ev *ev)
{
	__atomic_fetch_add(&h->od_x_n, 1, __ATOMIC_RELAXED);
	if (r == HTTP_OD_SUCCESS) {
		__atomic_fetch_add(&h->od_x_ok, 1, __ATOMIC_RELAXED);
		consecutive_ok(h);
		return false;
	}
	if (__atomic_load_n(&h->od_ejected, __ATOMIC_RELAXED))
		return false;
	return consecutive_fail(c, crt, h, hosts, n_hosts, r == HTTP_OD_GATEWAY, now_ms, rand, ev);
}

/* split_external_local_origin_errors: Envoy's
 * putResultWithLocalExternalSplit. A connection's success (before a
 * status or a reset: LocalOriginConnectSuccess, or tcp_proxy's final one)
 * resets the consecutive local-origin failures; a connect failure, reset
 * or timeout counts to consecutive_local_origin_failure and to nothing
 * else; a status goes to the 5xx and gateway detectors. */
static bool put_split(const struct arn_cfg_outlier *c, struct http_cluster_rt *crt,
		      struct http_host *h, struct http_host *const *hosts, size_t n_hosts,
		      enum http_od_result r, uint64_t now_ms, uint64_t rand, struct http_od_ev *ev)
{
	bool enforced = false;
	if (r != HTTP_OD_LOCAL) { /* the connection was made */
		__atomic_fetch_add(&h->od_lo_n, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&h->od_lo_ok, 1, __ATOMIC_RELAXED);
		if (__atomic_load_n(&h->od_lo, __ATOMIC_RELAXED))
			__atomic_store_n(&h->od_lo, 0, __ATOMIC_RELAXED);
		if (r == HTTP_OD_CONNECTED)
			return false;
		if (r != HTTP_OD_RESET)
			enforced = put_status(c, crt, h, hosts, n_hosts, r, now_ms, rand, ev);
	}
	if (r == HTTP_OD_LOCAL || r == HTTP_OD_RESET) {
		__atomic_fetch_add(&h->od_lo_n, 1, __ATOMIC_RELAXED);
		if (__atomic_load_n(&h->od_ejected, __ATOMIC_RELAXED))
			return false;
		uint32_t nl = __atomic_add_fetch(&h->od_lo, 1, __ATOMIC_RELAXED);
		if (c->consecutive_local_origin_failure &&
		    nl == c->consecutive_local_origin_failure) {
			ev->detected_lo = true;
			if (eject(c, crt, h, hosts, n_hosts,
				  c->enforcing_consecutive_local_origin_failure, now_ms, rand >> 14,
				  ev, &enforced))
				ev->enforced_lo = true;
		}
	}
	if (enforced)
		consecutive_zero(h);
	return enforced;
}

bool http_od_put(const struct arn_cfg_outlier *c, struct http_cluster_rt *crt, struct http_host *h,
		 struct http_host *const *hosts, size_t n_hosts, enum http_od_result r,
		 uint64_t now_ms, uint64_t rand, struct http_od_ev *ev)
{
	memset(ev, 0, sizeof(*ev));
	if (r == HTTP_OD_NONE || !h)
		return false;
	if (c->split_external_local_origin_errors)
		return put_split(c, crt, h, hosts, n_hosts, r, now_ms, rand, ev);
	if (r == HTTP_OD_SUCCESS || r == HTTP_OD_CONNECTED) {
		consecutive_ok(h);
		return false;
	}
	/* an ejected host's late answers count nothing (Envoy ignores them) */
	if (__atomic_load_n(&h->od_ejected, __ATOMIC_RELAXED))
		return false;
	/* without split_external_local_origin_errors every failure here is a
	 * 5xx to consecutive_5xx; gateway failures and local ones count to
	 * consecutive_gateway_failure as well */
	bool enforced =
	    consecutive_fail(c, crt, h, hosts, n_hosts, r != HTTP_OD_5XX, now_ms, rand, ev);
	if (enforced)
		consecutive_zero(h);
	return enforced;
}

/* splitmix64: one draw per host from the caller's one random value */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* One ejection by an interval detector; the consecutive counts start
 * again, as Envoy's uneject resets them. */
static bool iv_eject(const struct arn_cfg_outlier *c, struct http_cluster_rt *crt,
		     struct http_host *h, struct http_host *const *hosts, size_t n_hosts,
		     uint32_t enforcing, uint64_t now_ms, uint64_t rand, struct http_od_iev *ev)
{
	struct http_od_ev e = {0};
	bool enforced = false;
	bool ok = eject(c, crt, h, hosts, n_hosts, enforcing, now_ms, rand, &e, &enforced);
	ev->overflow += e.overflow;
	ev->unejected += e.unejected;
	if (ok)
		consecutive_zero(h);
	return ok;
}

/* The interval's success-rate and failure-percentage detectors over the
 * hosts' od_iv_* (@p lo false) or od_lo_iv_* (true: the local-origin
 * ones, Envoy's SUCCESS_RATE_LOCAL_ORIGIN and
 * FAILURE_PERCENTAGE_LOCAL_ORIGIN). */
#define IV_OK(h) (lo ? (h)->od_lo_iv_ok : (h)->od_iv_ok)
#define IV_N(h) (lo ? (h)->od_lo_iv_n : (h)->od_iv_n)
static uint32_t iv_detect(const struct arn_cfg_outlier *c, struct http_cluster_rt *crt,
			  struct http_host *const *hosts, size_t n_hosts, bool lo, uint64_t now_ms,
			  uint64_t rand, struct http_od_iev *ev)
{
	double sr_sum = 0;
	size_t n_sr = 0, n_fp = 0;
	for (size_t i = 0; i < n_hosts; i++) {
		struct http_host *h = hosts[i];
		/* Envoy evaluates the local-origin results after the others:
		 * a host they ejected is not among them */
		if (lo && __atomic_load_n(&h->od_ejected, __ATOMIC_RELAXED))
			h->od_lo_iv_n = 0;
		if (!IV_N(h))
			continue;
		if (IV_N(h) >= c->success_rate_request_volume) {
			n_sr++;
			sr_sum += 100.0 * (double)IV_OK(h) / (double)IV_N(h);
		}
		if (IV_N(h) >= c->failure_percentage_request_volume)
			n_fp++;
	}
	uint32_t ejected = 0;
	uint64_t r0 = lo ? 2 * (uint64_t)n_hosts : 0;
	if (n_sr && n_sr >= c->success_rate_minimum_hosts) {
		/* Envoy's threshold, mean - stdev x factor; "below" tested as
		 * (mean - rate)^2 > (factor x stdev)^2 with mean > rate: the
		 * same set, no square root */
		double mean = sr_sum / (double)n_sr, var = 0;
		for (size_t i = 0; i < n_hosts; i++)
			if (IV_N(hosts[i]) && IV_N(hosts[i]) >= c->success_rate_request_volume) {
				double d =
				    100.0 * (double)IV_OK(hosts[i]) / (double)IV_N(hosts[i]) - mean;
				var += d * d;
			}
		var /= (double)n_sr;
		double k = c->success_rate_stdev_factor / 1000.0;
		for (size_t i = 0; i < n_hosts; i++) {
			struct http_host *h = hosts[i];
			if (!IV_N(h) || IV_N(h) < c->success_rate_request_volume)
				continue;
			double d = mean - 100.0 * (double)IV_OK(h) / (double)IV_N(h);
			if (d <= 0 || d * d <= k * k * var)
				continue;
			lo ? ev->detected_lsr++ : ev->detected_sr++;
			if (iv_eject(c, crt, h, hosts, n_hosts,
				     lo ? c->enforcing_local_origin_success_rate
					: c->enforcing_success_rate,
				     now_ms, mix(rand + r0 + 2 * i), ev)) {
				lo ? ev->enforced_lsr++ : ev->enforced_sr++;
				ejected++;
			}
		}
	}
	if (n_fp && n_fp >= c->failure_percentage_minimum_hosts) {
		for (size_t i = 0; i < n_hosts; i++) {
			struct http_host *h = hosts[i];
			uint64_t n = IV_N(h);
			if (!n || n < c->failure_percentage_request_volume ||
			    __atomic_load_n(&h->od_ejected, __ATOMIC_RELAXED))
				continue;
			/* 100 - success rate >= threshold, in integers */
			if ((n - IV_OK(h)) * 100 < (uint64_t)c->failure_percentage_threshold * n)
				continue;
			lo ? ev->detected_lfp++ : ev->detected_fp++;
			if (iv_eject(c, crt, h, hosts, n_hosts,
				     lo ? c->enforcing_failure_percentage_local_origin
					: c->enforcing_failure_percentage,
				     now_ms, mix(rand + r0 + 2 * i + 1), ev)) {
				lo ? ev->enforced_lfp++ : ev->enforced_fp++;
				ejected++;
			}
		}
	}
	return ejected;
}
#undef IV_OK
#undef IV_N

uint32_t http_od_interval(const struct arn_cfg_outlier *c, struct http_cluster_rt *crt,
			  struct http_host *const *hosts, size_t n_hosts, uint64_t now_ms,
			  uint64_t rand, struct http_od_iev *ev)
{
	memset(ev, 0, sizeof(*ev));
	uint32_t prev = crt->od_round;
	uint32_t cur = prev + 1 ? prev + 1 : 1;
	crt->od_round = cur;
	bool split = c->split_external_local_origin_errors;
	/* the ends, the decay and the interval's counts (Envoy swaps each
	 * host's success-rate bucket, ejected or not) */
	for (size_t i = 0; i < n_hosts; i++) {
		struct http_host *h = hosts[i];
		bool out = http_od_ejected(h, crt, now_ms, &ev->unejected);
		uint32_t t = __atomic_load_n(&h->od_times, __ATOMIC_RELAXED);
		if (!out && t &&
		    now_ms >= __atomic_load_n(&h->od_until_ms, __ATOMIC_RELAXED) + c->interval_ms)
			__atomic_compare_exchange_n(&h->od_times, &t, t - 1, false,
						    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
		uint64_t ok, err;
		if (split) { /* the statuses the host sent, no local failure */
			ok = __atomic_load_n(&h->od_x_ok, __ATOMIC_RELAXED);
			err = __atomic_load_n(&h->od_x_n, __ATOMIC_RELAXED) - ok;
		} else {
			ok = __atomic_load_n(&h->od_cx_ok, __ATOMIC_RELAXED);
			err = __atomic_load_n(&h->od_cx_fail, __ATOMIC_RELAXED);
			for (unsigned k = 0; k < h->n_slots; k++) {
				ok += __atomic_load_n(&h->slots[k].rq_success, __ATOMIC_RELAXED);
				err += __atomic_load_n(&h->slots[k].rq_error, __ATOMIC_RELAXED);
			}
		}
		uint64_t lok = __atomic_load_n(&h->od_lo_ok, __ATOMIC_RELAXED);
		uint64_t ln = __atomic_load_n(&h->od_lo_n, __ATOMIC_RELAXED);
		/* a host the last call saw (in the same mode), or new since
		 * (its counts start at 0): its interval; else only the start
		 * of the next */
		bool valid = prev && (h->od_round == prev || h->od_round == 0) &&
			     h->od_split == split && !out;
		h->od_iv_ok = valid ? ok - h->od_ok : 0;
		h->od_iv_n = valid ? ok - h->od_ok + err - h->od_err : 0;
		h->od_lo_iv_ok = valid && split ? lok - h->od_lo_prev_ok : 0;
		h->od_lo_iv_n = valid && split ? ln - h->od_lo_prev_n : 0;
		h->od_ok = ok;
		h->od_err = err;
		h->od_lo_prev_ok = lok;
		h->od_lo_prev_n = ln;
		h->od_split = split;
		h->od_round = cur;
	}
	uint32_t ejected = iv_detect(c, crt, hosts, n_hosts, false, now_ms, rand, ev);
	if (split)
		ejected += iv_detect(c, crt, hosts, n_hosts, true, now_ms, rand, ev);
	return ejected;
}

void http_od_ev_stats(struct arn_stats_scope *sc, unsigned slot, const struct http_od_ev *ev)
{
	if (!sc)
		return;
	if (ev->detected_5xx)
		arn_stats_inc(sc, slot,
			      ARN_CL_outlier_detection_ejections_detected_consecutive_5xx);
	if (ev->detected_gw)
		arn_stats_inc(
		    sc, slot,
		    ARN_CL_outlier_detection_ejections_detected_consecutive_gateway_failure);
	if (ev->detected_lo)
		arn_stats_inc(
		    sc, slot,
		    ARN_CL_outlier_detection_ejections_detected_consecutive_local_origin_failure);
	if (ev->overflow)
		arn_stats_inc(sc, slot, ARN_CL_outlier_detection_ejections_overflow);
	bool enforced = ev->enforced_5xx || ev->enforced_gw || ev->enforced_lo;
	if (enforced) {
		arn_stats_inc(sc, slot, ARN_CL_outlier_detection_ejections_enforced_total);
		arn_stats_inc(
		    sc, slot,
		    ev->enforced_5xx ? ARN_CL_outlier_detection_ejections_enforced_consecutive_5xx
		    : ev->enforced_gw
			? ARN_CL_outlier_detection_ejections_enforced_consecutive_gateway_failure
			: ARN_CL_outlier_detection_ejections_enforced_consecutive_local_origin_failure);
	}
	int64_t active = (int64_t)enforced - (int64_t)ev->unejected;
	if (active)
		arn_stats_gauge_add(sc, slot, ARN_CL_outlier_detection_ejections_active, active);
}
