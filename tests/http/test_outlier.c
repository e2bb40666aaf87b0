/*
 * Outlier detection (lib/http/http_od.c), without a data plane: the
 * consecutive 5xx and gateway failure detectors (thresholds, a success
 * resets, enforcing percentages), max_ejection_percent, the ejection time
 * (growth, cap, decay) and the end of an ejection, and the balancer that
 * skips an ejected host (http_lb_pick with a cluster's hosts). On the
 * wire: tests/http/e2e_outlier.sh.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "http_int.h"
#include "http_od.h"

#define NH 20

struct fix {
	struct arn_cfg_outlier c;
	struct http_cluster_rt crt;
	struct http_host h[NH];
	struct http_host *hosts[NH];
	struct http_host_ctr ctr[NH]; /* one worker slot per host */
	size_t n;
};

static void fix_setup(struct fix *f, size_t n)
{
	memset(f, 0, sizeof(*f));
	f->c = (struct arn_cfg_outlier){
	    .present = true,
	    .consecutive_5xx = 5,
	    .consecutive_gateway_failure = 5,
	    .interval_ms = 10000,
	    .base_ejection_time_ms = 30000,
	    .max_ejection_time_ms = 300000,
	    .max_ejection_percent = 10,
	    .enforcing_consecutive_5xx = 100,
	    .enforcing_consecutive_gateway_failure = 0,
	    .enforcing_success_rate = 100,
	    .success_rate_minimum_hosts = 5,
	    .success_rate_request_volume = 100,
	    .success_rate_stdev_factor = 1900,
	    .failure_percentage_threshold = 85,
	    .enforcing_failure_percentage = 0,
	    .failure_percentage_minimum_hosts = 5,
	    .failure_percentage_request_volume = 50,
	    .consecutive_local_origin_failure = 5,
	    .enforcing_consecutive_local_origin_failure = 100,
	    .enforcing_local_origin_success_rate = 100,
	    .enforcing_failure_percentage_local_origin = 0,
	};
	for (size_t i = 0; i < n; i++) {
		f->h[i].slots = &f->ctr[i];
		f->h[i].n_slots = 1;
		f->h[i].addr = 0xc6120300 + 10 + (uint32_t)i;
		f->h[i].port = 8080;
		f->hosts[i] = &f->h[i];
	}
	f->n = n;
}

/* Report @p r for host @p i @p k times at @p now; @return ejections. */
static int put(struct fix *f, size_t i, enum http_od_result r, int k, uint64_t now,
	       struct http_od_ev *last)
{
	int ej = 0;
	struct http_od_ev ev;
	for (int j = 0; j < k; j++) {
		ej += http_od_put(&f->c, &f->crt, &f->h[i], f->hosts, f->n, r, now, 0, &ev);
		if (last && (ev.detected_5xx || ev.detected_gw || ev.detected_lo || ev.overflow))
			*last = ev;
	}
	return ej;
}

static bool ejected(struct fix *f, size_t i, uint64_t now)
{
	return http_od_ejected(&f->h[i], &f->crt, now, NULL);
}

static void test_classify(void **state)
{
	(void)state;
	assert_int_equal(http_od_classify(200, false), HTTP_OD_SUCCESS);
	assert_int_equal(http_od_classify(404, false), HTTP_OD_SUCCESS);
	assert_int_equal(http_od_classify(500, false), HTTP_OD_5XX);
	assert_int_equal(http_od_classify(502, false), HTTP_OD_GATEWAY);
	assert_int_equal(http_od_classify(503, false), HTTP_OD_GATEWAY);
	assert_int_equal(http_od_classify(504, false), HTTP_OD_GATEWAY);
	assert_int_equal(http_od_classify(0, true), HTTP_OD_LOCAL);
	assert_int_equal(http_od_classify(0, false), HTTP_OD_NONE);
}

static void test_consecutive_5xx_threshold_and_reset(void **state)
{
	(void)state;
	struct fix f;
	fix_setup(&f, 1);
	/* 4 then a success: the count starts again */
	assert_int_equal(put(&f, 0, HTTP_OD_5XX, 4, 1000, NULL), 0);
	assert_int_equal(put(&f, 0, HTTP_OD_SUCCESS, 1, 1000, NULL), 0);
	assert_int_equal(put(&f, 0, HTTP_OD_5XX, 4, 1000, NULL), 0);
	assert_false(ejected(&f, 0, 1000));
	struct http_od_ev ev = {0};
	assert_int_equal(put(&f, 0, HTTP_OD_5XX, 1, 1000, &ev), 1);
	assert_true(ev.detected_5xx && ev.enforced_5xx);
	assert_true(ejected(&f, 0, 1001));
	assert_int_equal(f.crt.od_ejected, 1);
	assert_int_equal(f.h[0].od_5xx, 0); /* zeroed by the ejection */
	/* local failures count as 5xx too (no split) */
	fix_setup(&f, 1);
	assert_int_equal(put(&f, 0, HTTP_OD_LOCAL, 5, 1000, NULL), 1);
	/* NONE counts nothing */
	fix_setup(&f, 1);
	assert_int_equal(put(&f, 0, HTTP_OD_NONE, 10, 1000, NULL), 0);
	assert_int_equal(f.h[0].od_5xx, 0);
}

static void test_gateway_failure_enforcing(void **state)
{
	(void)state;
	struct fix f;
	fix_setup(&f, 1);
	f.c.consecutive_5xx = 0; /* the 5xx detector off */
	struct http_od_ev ev = {0};
	/* enforcing_consecutive_gateway_failure 0 (Envoy's default): detected only */
	assert_int_equal(put(&f, 0, HTTP_OD_GATEWAY, 5, 1000, &ev), 0);
	assert_true(ev.detected_gw);
	assert_false(ev.enforced_gw);
	assert_false(ejected(&f, 0, 1000));
	fix_setup(&f, 1);
	f.c.consecutive_5xx = 0;
	f.c.enforcing_consecutive_gateway_failure = 100;
	/* a 500 is not a gateway failure: it resets the gateway count */
	assert_int_equal(put(&f, 0, HTTP_OD_GATEWAY, 4, 1000, NULL), 0);
	assert_int_equal(put(&f, 0, HTTP_OD_5XX, 1, 1000, NULL), 0);
	assert_int_equal(put(&f, 0, HTTP_OD_GATEWAY, 4, 1000, NULL), 0);
	assert_int_equal(put(&f, 0, HTTP_OD_GATEWAY, 1, 1000, &ev), 1);
	assert_true(ev.detected_gw && ev.enforced_gw);
	/* defaults: five 503s are detected by both, enforced by consecutive_5xx */
	fix_setup(&f, 1);
	memset(&ev, 0, sizeof(ev));
	assert_int_equal(put(&f, 0, HTTP_OD_GATEWAY, 5, 1000, &ev), 1);
	assert_true(ev.detected_gw && !ev.enforced_gw && ev.detected_5xx && ev.enforced_5xx);
}

static void test_max_ejection_percent(void **state)
{
	(void)state;
	struct fix f;
	fix_setup(&f, 10);
	struct http_od_ev ev = {0};
	/* 10% of 10 hosts: the first ejection passes, the second would be 20% */
	assert_int_equal(put(&f, 0, HTTP_OD_5XX, 5, 1000, NULL), 1);
	assert_int_equal(put(&f, 1, HTTP_OD_5XX, 5, 1000, &ev), 0);
	assert_true(ev.overflow);
	assert_false(ejected(&f, 1, 1000));
	/* the cluster's count holds hosts that left it while ejected: the
	 * snapshot's hosts decide */
	fix_setup(&f, 10);
	f.crt.od_ejected = 3;
	assert_int_equal(put(&f, 0, HTTP_OD_5XX, 5, 1000, NULL), 1);
	/* 2 hosts at 10%: Envoy still ejects the first (none ejected yet) */
	fix_setup(&f, 2);
	assert_int_equal(put(&f, 0, HTTP_OD_5XX, 5, 1000, NULL), 1);
	assert_int_equal(put(&f, 1, HTTP_OD_5XX, 5, 1000, NULL), 0);
	/* 20 hosts at 10%: two */
	fix_setup(&f, 20);
	assert_int_equal(put(&f, 0, HTTP_OD_5XX, 5, 1000, NULL), 1);
	assert_int_equal(put(&f, 1, HTTP_OD_5XX, 5, 1000, NULL), 1);
	assert_int_equal(put(&f, 2, HTTP_OD_5XX, 5, 1000, NULL), 0);
	assert_int_equal(f.crt.od_ejected, 2);
	/* once host 0's time passed the sweep of the next ejection brings it
	 * back, and host 2 fits (its count reaches the threshold again after
	 * a success) */
	put(&f, 2, HTTP_OD_SUCCESS, 1, 31001, NULL);
	memset(&ev, 0, sizeof(ev));
	struct http_od_ev e2;
	for (int j = 0; j < 5; j++)
		http_od_put(&f.c, &f.crt, &f.h[2], f.hosts, f.n, HTTP_OD_5XX, 31001, 0, &e2);
	assert_int_equal(e2.unejected, 2);
	assert_true(e2.enforced_5xx);
	assert_int_equal(f.crt.od_ejected, 1);
}

/* Two workers eject two hosts at the same time (threads, many rounds):
 * with max_ejection_percent 0 only the first ejection passes, never
 * both. Worker A (this thread, host 0) sees the hosts of a large cluster,
 * host 1 first: its sweep reads host 1 at once and decides long after.
 * Worker B (a thread, host 1) sees hosts 0 and 1 only, so its whole
 * ejection fits in A's sweep when it starts during it. Before the
 * claim-then-count order each counted before the other had marked its
 * host, and both passed. */
#define RACE_HOSTS 100000

struct race {
	struct fix *f;
	uint32_t ready, go, done; /* rounds waited for, released, finished */
	int ej;			  /* B's ejections in its last round */
};

static void spin_until(const uint32_t *p, uint32_t v)
{
	for (unsigned k = 0; __atomic_load_n(p, __ATOMIC_ACQUIRE) != v; k++)
		if (k > 100000)
			sched_yield(); /* the machine is shared: let the other run */
}

static void *race_thread(void *arg)
{
	struct race *r = arg;
	for (uint32_t round = 1;; round++) {
		__atomic_store_n(&r->ready, round, __ATOMIC_RELEASE);
		spin_until(&r->go, round);
		if (!r->f)
			return NULL;
		/* let A's sweep pass host 1 first */
		for (volatile unsigned k = 0; k < 2000; k++)
			;
		struct http_od_ev ev;
		r->ej = http_od_put(&r->f->c, &r->f->crt, &r->f->h[1], r->f->hosts, 2, HTTP_OD_5XX,
				    1000, 0, &ev);
		__atomic_store_n(&r->done, round, __ATOMIC_RELEASE);
	}
}

static void test_max_ejection_percent_two_workers(void **state)
{
	(void)state;
	static struct fix f;
	static struct http_host rest;
	struct http_host **hosts = calloc(RACE_HOSTS, sizeof(*hosts));
	assert_non_null(hosts);
	hosts[0] = &f.h[1];
	hosts[1] = &f.h[0];
	for (size_t i = 2; i < RACE_HOSTS; i++)
		hosts[i] = &rest;
	struct race r = {.f = &f};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, race_thread, &r), 0);
	/* A and B on two CPUs when there are two: on one they take turns,
	 * and B seldom runs inside A's sweep */
	cpu_set_t all, one;
	bool pinned = sched_getaffinity(0, sizeof(all), &all) == 0 && CPU_COUNT(&all) >= 2;
	for (int c = 0, k = 0; pinned && c < CPU_SETSIZE && k < 2; c++) {
		if (!CPU_ISSET(c, &all))
			continue;
		CPU_ZERO(&one);
		CPU_SET(c, &one);
		pthread_setaffinity_np(k++ ? t : pthread_self(), sizeof(one), &one);
	}
	int both = 0;
	uint32_t round;
	for (round = 1; round <= 500 && !both; round++) {
		fix_setup(&f, 2);
		f.c.max_ejection_percent = 0;
		/* one failure short of the threshold on hosts 0 and 1 */
		put(&f, 0, HTTP_OD_5XX, 4, 1000, NULL);
		put(&f, 1, HTTP_OD_5XX, 4, 1000, NULL);
		spin_until(&r.ready, round); /* B spins: it starts at once */
		__atomic_store_n(&r.go, round, __ATOMIC_RELEASE);
		struct http_od_ev ev;
		int ej = http_od_put(&f.c, &f.crt, &f.h[0], hosts, RACE_HOSTS, HTTP_OD_5XX, 1000, 0,
				     &ev);
		spin_until(&r.done, round);
		both += ej && r.ej;
		/* a refused claim is given back */
		assert_true(f.crt.od_ejected == (uint32_t)(ej + r.ej));
		assert_int_equal(f.h[0].od_ejected, ej ? HTTP_HOST_FAILED_OUTLIER : 0);
		assert_int_equal(f.h[1].od_ejected, r.ej ? HTTP_HOST_FAILED_OUTLIER : 0);
	}
	r.f = NULL;
	spin_until(&r.ready, round);
	__atomic_store_n(&r.go, round, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	if (pinned)
		pthread_setaffinity_np(pthread_self(), sizeof(all), &all);
	free(hosts);
	if (both)
		print_message("both ejected in round %u\n", round - 1);
	assert_int_equal(both, 0);
}

static void test_ejection_time_growth_cap_and_return(void **state)
{
	(void)state;
	struct fix f;
	fix_setup(&f, 1);
	f.c.base_ejection_time_ms = 30000;
	f.c.max_ejection_time_ms = 100000;
	assert_int_equal(http_od_eject_ms(&f.c, 1), 30000);
	assert_int_equal(http_od_eject_ms(&f.c, 3), 90000);
	assert_int_equal(http_od_eject_ms(&f.c, 4), 100000); /* capped */
	uint64_t now = 1000;
	/* first: 30 s */
	assert_int_equal(put(&f, 0, HTTP_OD_5XX, 5, now, NULL), 1);
	assert_true(ejected(&f, 0, now + 29999));
	uint32_t back = 0;
	assert_false(http_od_ejected(&f.h[0], &f.crt, now + 30000, &back));
	assert_int_equal(back, 1);
	assert_int_equal(f.crt.od_ejected, 0);
	/* only the first caller brings it back */
	assert_false(http_od_ejected(&f.h[0], &f.crt, now + 30001, &back));
	assert_int_equal(back, 1);
	/* again at once: 60 s */
	now += 30000;
	assert_int_equal(put(&f, 0, HTTP_OD_5XX, 5, now, NULL), 1);
	assert_true(ejected(&f, 0, now + 59999));
	assert_false(ejected(&f, 0, now + 60000));
	/* again: 90 s, then 100 s (the cap) */
	now += 60000;
	assert_int_equal(put(&f, 0, HTTP_OD_5XX, 5, now, NULL), 1);
	assert_false(ejected(&f, 0, now + 90000));
	now += 90000;
	assert_int_equal(put(&f, 0, HTTP_OD_5XX, 5, now, NULL), 1);
	assert_true(ejected(&f, 0, now + 99999));
	assert_false(ejected(&f, 0, now + 100000));
	now += 100000;
	/* decay: 4 ejections counted; 3 intervals back in the set take 3 off
	 * (the interval's, not the next ejection's), so the next is the
	 * second's 60 s */
	struct http_od_iev iev;
	assert_int_equal(f.h[0].od_times, 4);
	for (int i = 0; i <= 3; i++)
		http_od_interval(&f.c, &f.crt, f.hosts, f.n, now + i * f.c.interval_ms, 0, &iev);
	assert_int_equal(f.h[0].od_times, 1);
	now += 3 * f.c.interval_ms;
	assert_int_equal(put(&f, 0, HTTP_OD_5XX, 5, now, NULL), 1);
	assert_true(ejected(&f, 0, now + 59999));
	assert_false(ejected(&f, 0, now + 60000));
	/* an ejection being set up (its end not stored yet) is not ended
	 * by a worker that sees the last one's end */
	fix_setup(&f, 1);
	f.h[0].od_ejected = 2;
	f.h[0].od_until_ms = 10;
	back = 0;
	assert_true(http_od_ejected(&f.h[0], &f.crt, 1000, &back));
	assert_int_equal(back, 0);
	/* late answers of an ejected host count nothing */
	fix_setup(&f, 1);
	assert_int_equal(put(&f, 0, HTTP_OD_5XX, 5, 1000, NULL), 1);
	assert_int_equal(put(&f, 0, HTTP_OD_5XX, 7, 1001, NULL), 0);
	assert_int_equal(f.h[0].od_5xx, 0);
}

/* The balancer: an ejected host is not healthy; the panic threshold
 * looks at the combined health. */
struct lbfix {
	struct arn_cfg_endpoint ep[3];
	struct arn_cfg_locality loc;
	struct arn_cfg_priority prio;
	struct arn_cfg_endpoints eps;
	struct arn_cfg_cluster cl;
};

static void lb_setup(struct lbfix *l, struct fix *f)
{
	memset(l, 0, sizeof(*l));
	fix_setup(f, 3);
	for (unsigned i = 0; i < 3; i++) {
		l->ep[i].addr = f->h[i].addr;
		l->ep[i].port = 8080;
		l->ep[i].weight = 1;
	}
	l->loc.endpoints = l->ep;
	l->loc.n_endpoints = 3;
	l->prio.localities = &l->loc;
	l->prio.n_localities = 1;
	l->prio.n_endpoints = 3;
	l->eps.priorities = &l->prio;
	l->eps.n_priorities = 1;
	l->eps.n_endpoints = 3;
	l->cl.lb = ARN_CFG_LB_ROUND_ROBIN;
	l->cl.healthy_panic_threshold = 5000;
	l->cl.outlier = f->c;
}

/* A pick over the fixture's three endpoints: walked, or (@p k not NULL)
 * from worker cache @p k with the endpoints' hosts resolved. @return the
 * endpoint's index, or the balancer's error. */
static int lb_pick_k(struct lbfix *l, struct fix *f, struct http_lb_cache *k, uint64_t now,
		     uint64_t *rr, bool *panic, uint32_t *back)
{
	struct http_lb_in in = {.cluster = &l->cl,
				.eps = &l->eps,
				.rr = rr,
				.rand = *rr * 7919,
				.hosts = f->hosts,
				.n_hosts = 3,
				.od_crt = &f->crt,
				.now_ms = now,
				.unejected = back};
	if (k) {
		in.cache = k;
		in.epoch = __atomic_load_n(&f->crt.health_epoch, __ATOMIC_ACQUIRE);
		in.ep_hosts = f->hosts;
		in.n_ep_hosts = 3;
	}
	struct http_lb_out out;
	int rc = http_lb_pick(&in, &out);
	if (panic)
		*panic = out.panic;
	return rc ? rc : (int)(out.ep - l->ep);
}

static int lb_pick(struct lbfix *l, struct fix *f, uint64_t now, uint64_t *rr, bool *panic,
		   uint32_t *back)
{
	return lb_pick_k(l, f, NULL, now, rr, panic, back);
}

static void test_lb_skips_ejected_host(void **state)
{
	(void)state;
	struct lbfix l;
	struct fix f;
	lb_setup(&l, &f);
	f.c.max_ejection_percent = 100;
	uint64_t rr = 0;
	bool panic = true;
	uint32_t back = 0;
	assert_int_equal(put(&f, 1, HTTP_OD_5XX, 5, 1000, NULL), 1);
	for (int i = 0; i < 12; i++) {
		int k = lb_pick(&l, &f, 2000, &rr, &panic, &back);
		assert_true(k == 0 || k == 2);
		assert_false(panic);
	}
	/* two of three out: under 50% healthy, panic: all serve */
	assert_int_equal(put(&f, 2, HTTP_OD_5XX, 5, 1000, NULL), 1);
	lb_pick(&l, &f, 2000, &rr, &panic, &back);
	assert_true(panic);
	l.cl.healthy_panic_threshold = 0;
	for (int i = 0; i < 6; i++)
		assert_int_equal(lb_pick(&l, &f, 2000, &rr, &panic, &back), 0);
	assert_int_equal(back, 0);
	/* their time ends: back in the rotation, counted once each */
	int seen[3] = {0};
	for (int i = 0; i < 12; i++)
		seen[lb_pick(&l, &f, 1000 + 30000, &rr, &panic, &back)]++;
	assert_int_equal(back, 2);
	assert_int_equal(f.crt.od_ejected, 0);
	assert_int_equal(seen[0], 4);
	assert_int_equal(seen[1], 4);
	assert_int_equal(seen[2], 4);
}

/* A worker's cached candidates (struct http_lb_cache) follow a health
 * change: an active check failing a host, an ejection and its end move
 * the cluster's health epoch, and the next pick builds the list again. */
static struct http_lb_cache *cache_new(size_t n)
{
	struct http_lb_cache *k = calloc(1, sizeof(*k));
	assert_non_null(k);
	k->cap = n;
	k->cand = calloc(n, sizeof(*k->cand));
	k->cum = calloc(n, sizeof(*k->cum));
	assert_non_null(k->cand);
	assert_non_null(k->cum);
	return k;
}

static void cache_free(struct http_lb_cache *k)
{
	free(k->cand);
	free(k->cum);
	free(k);
}

static int cached_pick(struct lbfix *l, struct fix *f, struct http_lb_cache *k, uint64_t now,
		       uint64_t *rr, uint32_t *back)
{
	return lb_pick_k(l, f, k, now, rr, NULL, back);
}

static void test_lb_cache_follows_health(void **state)
{
	(void)state;
	struct lbfix l;
	struct fix f;
	lb_setup(&l, &f);
	f.c.max_ejection_percent = 100;
	l.cl.n_health_checks = 1;
	l.cl.healthy_panic_threshold = 0;
	for (unsigned i = 0; i < 3; i++)
		f.h[i].crt = &f.crt;
	struct http_lb_cache *k = cache_new(3);
	uint64_t rr = 0;
	uint32_t back = 0;
	int seen[3] = {0};
	for (int i = 0; i < 6; i++)
		seen[cached_pick(&l, &f, k, 1000, &rr, &back)]++;
	assert_int_equal(seen[1], 2);
	/* the checks fail host 1 (http_hc.c's flag and epoch): out at once */
	uint32_t e0 = f.crt.health_epoch;
	f.h[1].hc_flags = HTTP_HOST_FAILED_ACTIVE_HC;
	__atomic_fetch_add(&f.crt.health_epoch, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 6; i++)
		assert_int_not_equal(cached_pick(&l, &f, k, 1000, &rr, &back), 1);
	/* outlier detection ejects host 2: its epoch moves, host 0 alone */
	e0 = f.crt.health_epoch;
	assert_int_equal(put(&f, 2, HTTP_OD_5XX, 5, 1000, NULL), 1);
	assert_true(f.crt.health_epoch != e0);
	for (int i = 0; i < 6; i++)
		assert_int_equal(cached_pick(&l, &f, k, 2000, &rr, &back), 0);
	assert_int_equal(back, 0);
	/* the ejection's end, with no event: the list knew when it ends */
	memset(seen, 0, sizeof(seen));
	for (int i = 0; i < 6; i++)
		seen[cached_pick(&l, &f, k, 1000 + 30000, &rr, &back)]++;
	assert_int_equal(back, 1);
	assert_int_equal(f.crt.od_ejected, 0);
	assert_int_equal(seen[0], 3);
	assert_int_equal(seen[2], 3);
	/* the checks pass host 1 again */
	f.h[1].hc_flags = 0;
	__atomic_fetch_add(&f.crt.health_epoch, 1, __ATOMIC_RELEASE);
	memset(seen, 0, sizeof(seen));
	for (int i = 0; i < 6; i++)
		seen[cached_pick(&l, &f, k, 31000, &rr, &back)]++;
	assert_int_equal(seen[1], 2);
	cache_free(k);
}

/* The cached picks are the walk's, for every policy over random
 * priorities, localities, weights, EDS health, check flags and
 * ejections, with the hosts looked up (ep_hosts NULL) or resolved. */
static void test_lb_cache_picks_as_walk(void **state)
{
	(void)state;
	enum { NP = 2, NL = 2, NE = 5, N = NP * NL * NE };
	static const uint8_t lbs[] = {ARN_CFG_LB_ROUND_ROBIN, ARN_CFG_LB_LEAST_REQUEST,
				      ARN_CFG_LB_RANDOM, ARN_CFG_LB_RING_HASH};
	static const uint8_t healths[] = {ARN_CFG_HEALTH_HEALTHY, ARN_CFG_HEALTH_UNKNOWN,
					  ARN_CFG_HEALTH_DEGRADED, ARN_CFG_HEALTH_UNHEALTHY};
	struct fix f;
	struct arn_cfg_endpoint ep[N];
	struct arn_cfg_locality loc[NP * NL];
	struct arn_cfg_priority pr[NP];
	struct arn_cfg_endpoints eps = {.priorities = pr, .n_priorities = NP, .n_endpoints = N};
	struct arn_cfg_cluster cl;
	struct http_host *by_ep[N];
	uint64_t seed = 0x1234567;
	struct http_lb_cache *k = cache_new(N);
	unsigned differ = 0, picks = 0, none = 0;
	for (int round = 0; round < 400; round++) {
		fix_setup(&f, N);
		memset(&cl, 0, sizeof(cl));
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t r = seed >> 11;
		cl.lb = lbs[round % 4];
		cl.healthy_panic_threshold = (uint32_t)(r % 3) * 4000;
		cl.n_health_checks = 1;
		cl.outlier.present = true;
		bool equal = (r >> 4) & 1;
		for (size_t p = 0; p < NP; p++) {
			pr[p] = (struct arn_cfg_priority){&loc[p * NL], NL, NL * NE};
			for (size_t li = 0; li < NL; li++)
				loc[p * NL + li] = (struct arn_cfg_locality){
				    .endpoints = &ep[(p * NL + li) * NE], .n_endpoints = NE};
		}
		for (size_t i = 0; i < N; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			uint64_t x = seed >> 17;
			/* endpoint i is host (i * 7) % N: not in sorted order */
			struct http_host *h = &f.h[(i * 7) % N];
			by_ep[i] = h;
			ep[i] = (struct arn_cfg_endpoint){
			    .addr = h->addr,
			    .port = h->port,
			    .weight = equal ? 1 : (uint32_t)(x % 4),
			    .health = healths[(x >> 3) % 4 ? 0 : (x >> 5) % 4]};
			if ((x >> 8) % 5 == 0)
				h->hc_flags = HTTP_HOST_FAILED_ACTIVE_HC;
			if ((x >> 12) % 5 == 0) {
				h->od_ejected = HTTP_HOST_FAILED_OUTLIER;
				h->od_until_ms = 1000 + (x >> 16) % 200;
				f.crt.od_ejected++;
			}
		}
		k->eps = NULL; /* a new configuration */
		uint64_t rr_walk = 0, rr_cache = 0;
		uint32_t back_walk = 0, back_cache = 0;
		for (int j = 0; j < 50; j++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			/* time passes: ejections end along the way */
			uint64_t now = 1000 + (uint64_t)j * 4;
			struct http_lb_in in = {.cluster = &cl,
						.eps = &eps,
						.rr = &rr_walk,
						.rand = seed,
						.has_hash = j % 3 != 0,
						.hash = seed >> 3,
						.hosts = f.hosts,
						.n_hosts = N,
						.od_crt = &f.crt,
						.now_ms = now,
						.unejected = &back_walk};
			struct http_lb_out a, b;
			int ra = http_lb_pick(&in, &a);
			in.rr = &rr_cache;
			in.unejected = &back_cache;
			in.cache = k;
			in.epoch = __atomic_load_n(&f.crt.health_epoch, __ATOMIC_ACQUIRE);
			in.ep_hosts = round % 2 ? by_ep : NULL;
			in.n_ep_hosts = round % 2 ? N : 0;
			int rb = http_lb_pick(&in, &b);
			picks++;
			none += ra != 0;
			if (ra != rb || (ra == 0 && (a.ep != b.ep || a.panic != b.panic)))
				differ++;
		}
		/* the walk, first, brings back the hosts whose ejection ended
		 * and the cache's pick finds them back: one count between them */
		(void)back_cache;
	}
	cache_free(k);
	assert_int_equal(differ, 0);
	assert_true(none < picks / 2);
}

/* Envoy's ejectTimeBackoff grows only while base x count < max + base:
 * ten ejections in a row at a 100 s cap over a 30 s base count 5, not
 * 10, so three intervals of decay bring the next ejection down from the
 * cap to 90 s (3 x 30). */
static void test_ejection_count_capped(void **state)
{
	(void)state;
	struct fix f;
	fix_setup(&f, 1);
	f.c.max_ejection_time_ms = 100000;
	uint64_t now = 1000;
	for (int i = 0; i < 10; i++) {
		assert_int_equal(put(&f, 0, HTTP_OD_5XX, 5, now, NULL), 1);
		now = f.h[0].od_until_ms;
		assert_false(ejected(&f, 0, now));
	}
	assert_int_equal(f.h[0].od_times, 5);
	struct http_od_iev iev;
	for (int i = 0; i <= 3; i++)
		http_od_interval(&f.c, &f.crt, f.hosts, f.n, now + i * f.c.interval_ms, 0, &iev);
	assert_int_equal(f.h[0].od_times, 2);
	now += 3 * f.c.interval_ms;
	assert_int_equal(put(&f, 0, HTTP_OD_5XX, 5, now, NULL), 1);
	assert_int_equal(f.h[0].od_until_ms, now + 90000);
}

/* @p ok successes and @p err failures for host @p i (its worker slot). */
static void count(struct fix *f, size_t i, uint64_t ok, uint64_t err)
{
	f->ctr[i].rq_success += ok;
	f->ctr[i].rq_error += err;
}

/* The success-rate detector: six hosts of 200 requests, one at 50%: the
 * mean is 91.7, the stdev 18.6, the threshold 91.7 - 1.9 x 18.6 = 56.3:
 * the 50% host is ejected (the first ejection passes
 * max_ejection_percent), the others are not. */
static void test_interval_success_rate(void **state)
{
	(void)state;
	struct fix f;
	fix_setup(&f, 6);
	struct http_od_iev ev;
	/* the first call only starts the interval: counts before it are
	 * not the interval's */
	count(&f, 5, 0, 1000);
	assert_int_equal(http_od_interval(&f.c, &f.crt, f.hosts, f.n, 1000, 0, &ev), 0);
	assert_int_equal(ev.detected_sr, 0);
	for (size_t i = 0; i < 5; i++)
		count(&f, i, 200, 0);
	count(&f, 5, 100, 100);
	uint32_t e0 = f.crt.health_epoch;
	assert_int_equal(http_od_interval(&f.c, &f.crt, f.hosts, f.n, 11000, 0, &ev), 1);
	assert_int_equal(ev.detected_sr, 1);
	assert_int_equal(ev.enforced_sr, 1);
	assert_int_equal(ev.detected_fp, 0);
	assert_true(ejected(&f, 5, 11001));
	for (size_t i = 0; i < 5; i++)
		assert_false(ejected(&f, i, 11001));
	assert_int_equal(f.crt.od_ejected, 1);
	assert_true(f.crt.health_epoch != e0);
	assert_int_equal(f.h[5].od_until_ms, 11000 + 30000);
	/* the next interval counts its own requests only: all equal, none */
	for (size_t i = 0; i < 5; i++)
		count(&f, i, 150, 50);
	assert_int_equal(http_od_interval(&f.c, &f.crt, f.hosts, f.n, 21000, 0, &ev), 0);
	assert_int_equal(ev.detected_sr, 0);
	/* enforcing_success_rate 0: detected, not ejected */
	fix_setup(&f, 6);
	f.c.enforcing_success_rate = 0;
	http_od_interval(&f.c, &f.crt, f.hosts, f.n, 1000, 0, &ev);
	for (size_t i = 0; i < 5; i++)
		count(&f, i, 200, 0);
	count(&f, 5, 100, 100);
	assert_int_equal(http_od_interval(&f.c, &f.crt, f.hosts, f.n, 11000, 0, &ev), 0);
	assert_int_equal(ev.detected_sr, 1);
	assert_int_equal(ev.enforced_sr, 0);
	assert_false(ejected(&f, 5, 11001));
	/* Envoy's worked example, {50, 100, 100, 100, 100}: mean 90, stdev
	 * 20; a factor of 2.0 puts the threshold at 50, and 50 is not below
	 * it; 1.9 puts it at 52 */
	for (int factor = 0; factor < 2; factor++) {
		fix_setup(&f, 5);
		f.c.success_rate_stdev_factor = factor ? 1900 : 2000;
		http_od_interval(&f.c, &f.crt, f.hosts, f.n, 1000, 0, &ev);
		for (size_t i = 0; i < 4; i++)
			count(&f, i, 200, 0);
		count(&f, 4, 100, 100);
		assert_int_equal(http_od_interval(&f.c, &f.crt, f.hosts, f.n, 11000, 0, &ev),
				 factor);
		assert_int_equal(ev.detected_sr, factor);
	}
}

/* Below success_rate_minimum_hosts hosts with success_rate_request_volume
 * requests: no statistics, no ejection. */
static void test_interval_success_rate_minimum(void **state)
{
	(void)state;
	struct fix f;
	struct http_od_iev ev;
	/* 6 hosts, only 4 of them with 100 requests */
	fix_setup(&f, 6);
	http_od_interval(&f.c, &f.crt, f.hosts, f.n, 1000, 0, &ev);
	for (size_t i = 0; i < 3; i++)
		count(&f, i, 200, 0);
	count(&f, 3, 0, 200);
	count(&f, 4, 99, 0);
	count(&f, 5, 50, 0);
	assert_int_equal(http_od_interval(&f.c, &f.crt, f.hosts, f.n, 11000, 0, &ev), 0);
	assert_int_equal(ev.detected_sr, 0);
	assert_false(ejected(&f, 3, 11001));
	/* host 4 at 100 requests: 5 hosts, the minimum, and host 3 goes */
	fix_setup(&f, 6);
	http_od_interval(&f.c, &f.crt, f.hosts, f.n, 1000, 0, &ev);
	for (size_t i = 0; i < 3; i++)
		count(&f, i, 200, 0);
	count(&f, 3, 0, 200);
	count(&f, 4, 100, 0);
	count(&f, 5, 50, 0);
	assert_int_equal(http_od_interval(&f.c, &f.crt, f.hosts, f.n, 11000, 0, &ev), 1);
	assert_int_equal(ev.detected_sr, 1);
	assert_true(ejected(&f, 3, 11001));
}

/* The failure-percentage detector: hosts with failure_percentage_
 * request_volume requests, at least failure_percentage_minimum_hosts of
 * them; a host failing >= failure_percentage_threshold % is an outlier,
 * ejected with enforcing_failure_percentage (Envoy's default 0). */
static void test_interval_failure_percentage(void **state)
{
	(void)state;
	struct fix f;
	struct http_od_iev ev;
	for (int enforcing = 0; enforcing < 2; enforcing++) {
		fix_setup(&f, 5);
		f.c.enforcing_failure_percentage = enforcing ? 100 : 0;
		http_od_interval(&f.c, &f.crt, f.hosts, f.n, 1000, 0, &ev);
		/* 60 requests each (under the success rate's 100) */
		count(&f, 0, 60, 0);
		count(&f, 1, 10, 50); /* 83%: under 85 */
		count(&f, 2, 9, 51);  /* 85%: an outlier */
		count(&f, 3, 60, 0);
		count(&f, 4, 60, 0);
		assert_int_equal(http_od_interval(&f.c, &f.crt, f.hosts, f.n, 11000, 0, &ev),
				 enforcing);
		assert_int_equal(ev.detected_sr, 0);
		assert_int_equal(ev.detected_fp, 1);
		assert_int_equal(ev.enforced_fp, enforcing);
		assert_int_equal(ejected(&f, 2, 11001), enforcing);
		assert_false(ejected(&f, 1, 11001));
	}
	/* one host under the volume: 4 hosts, under the minimum of 5 */
	fix_setup(&f, 5);
	f.c.enforcing_failure_percentage = 100;
	http_od_interval(&f.c, &f.crt, f.hosts, f.n, 1000, 0, &ev);
	count(&f, 0, 60, 0);
	count(&f, 1, 0, 60);
	count(&f, 2, 60, 0);
	count(&f, 3, 60, 0);
	count(&f, 4, 49, 0);
	assert_int_equal(http_od_interval(&f.c, &f.crt, f.hosts, f.n, 11000, 0, &ev), 0);
	assert_int_equal(ev.detected_fp, 0);
}

/* split_external_local_origin_errors (Envoy's
 * putResultWithLocalExternalSplit): connect failures, resets and
 * timeouts count to consecutive_local_origin_failure only, not to
 * consecutive_5xx nor consecutive_gateway_failure; the statuses the
 * host sent still eject by consecutive_5xx; a connection made resets
 * the local-origin count, and tcp_proxy's connect done leaves the 5xx
 * count alone. */
static void test_split_consecutive_local_origin(void **state)
{
	(void)state;
	struct fix f;
	struct http_od_ev ev = {0};
	fix_setup(&f, 1);
	f.c.split_external_local_origin_errors = true;
	f.c.consecutive_local_origin_failure = 7;
	/* 6 connect failures: not a consecutive 5xx (5) nor gateway failure */
	assert_int_equal(put(&f, 0, HTTP_OD_LOCAL, 6, 1000, &ev), 0);
	assert_false(ejected(&f, 0, 1000));
	assert_int_equal(f.h[0].od_5xx, 0);
	assert_int_equal(f.h[0].od_gw, 0);
	assert_false(ev.detected_5xx || ev.detected_gw);
	/* the 7th: consecutive_local_origin_failure */
	assert_int_equal(put(&f, 0, HTTP_OD_LOCAL, 1, 1000, &ev), 1);
	assert_true(ev.detected_lo && ev.enforced_lo);
	assert_false(ev.detected_5xx || ev.enforced_5xx || ev.detected_gw);
	assert_true(ejected(&f, 0, 1001));
	assert_int_equal(f.h[0].od_lo, 0);
	/* a status (the connection was made) resets the local-origin count */
	fix_setup(&f, 1);
	f.c.split_external_local_origin_errors = true;
	assert_int_equal(put(&f, 0, HTTP_OD_LOCAL, 4, 1000, NULL), 0);
	assert_int_equal(put(&f, 0, HTTP_OD_5XX, 1, 1000, NULL), 0);
	assert_int_equal(put(&f, 0, HTTP_OD_LOCAL, 4, 1000, NULL), 0);
	assert_false(ejected(&f, 0, 1000));
	/* resets after the connection: each is a connection made, then a
	 * failure, as Envoy hears them: never 2 in a row */
	fix_setup(&f, 1);
	f.c.split_external_local_origin_errors = true;
	assert_int_equal(put(&f, 0, HTTP_OD_RESET, 20, 1000, NULL), 0);
	assert_int_equal(f.h[0].od_lo, 1);
	assert_int_equal(f.h[0].od_5xx, 0);
	/* 5xx statuses still eject by consecutive_5xx, local failures between
	 * them leave the count alone */
	fix_setup(&f, 1);
	f.c.split_external_local_origin_errors = true;
	assert_int_equal(put(&f, 0, HTTP_OD_5XX, 3, 1000, NULL), 0);
	assert_int_equal(put(&f, 0, HTTP_OD_LOCAL, 2, 1000, NULL), 0);
	assert_int_equal(put(&f, 0, HTTP_OD_CONNECTED, 1, 1000, NULL), 0);
	assert_int_equal(put(&f, 0, HTTP_OD_5XX, 2, 1000, &ev), 1);
	assert_true(ev.detected_5xx && ev.enforced_5xx);
	assert_false(ev.detected_lo);
	/* without split the same connect done resets the 5xx count */
	fix_setup(&f, 1);
	assert_int_equal(put(&f, 0, HTTP_OD_5XX, 4, 1000, NULL), 0);
	assert_int_equal(put(&f, 0, HTTP_OD_CONNECTED, 1, 1000, NULL), 0);
	assert_int_equal(put(&f, 0, HTTP_OD_5XX, 4, 1000, NULL), 0);
	assert_int_equal(put(&f, 0, HTTP_OD_RESET, 1, 1000, NULL), 1);
	/* enforcing_consecutive_local_origin_failure 0: detected only */
	fix_setup(&f, 1);
	f.c.split_external_local_origin_errors = true;
	f.c.enforcing_consecutive_local_origin_failure = 0;
	memset(&ev, 0, sizeof(ev));
	assert_int_equal(put(&f, 0, HTTP_OD_LOCAL, 5, 1000, &ev), 0);
	assert_true(ev.detected_lo);
	assert_false(ev.enforced_lo);
	assert_false(ejected(&f, 0, 1001));
}

/* Report to host @p i @p ok statuses below 500 and @p bad connect
 * failures through http_od_put. */
static void put_mix(struct fix *f, size_t i, int ok, int bad)
{
	put(f, i, HTTP_OD_SUCCESS, ok, 1000, NULL);
	put(f, i, HTTP_OD_LOCAL, bad, 1000, NULL);
}

/* The interval in split mode: the success-rate detector runs over the
 * local-origin results (enforcing_local_origin_success_rate) and the
 * statuses apart; the hosts' rq_* (which count the connect failures) are
 * not the statuses' counts. {100, 100, 100, 100, 50} local-origin
 * success: mean 90, stdev 20, threshold 52: host 4 goes. */
static void test_split_interval_local_origin_success_rate(void **state)
{
	(void)state;
	struct fix f;
	struct http_od_iev ev;
	for (int enforcing = 0; enforcing < 2; enforcing++) {
		fix_setup(&f, 5);
		f.c.split_external_local_origin_errors = true;
		f.c.consecutive_local_origin_failure = 0; /* the interval's only */
		f.c.max_ejection_percent = 100;
		f.c.enforcing_local_origin_success_rate = enforcing ? 100 : 0;
		http_od_interval(&f.c, &f.crt, f.hosts, f.n, 1000, 0, &ev);
		for (size_t i = 0; i < 4; i++) {
			put_mix(&f, i, 200, 0);
			count(&f, i, 200, 0);
		}
		put_mix(&f, 4, 100, 100);
		count(&f, 4, 100, 100); /* what rq_* say: not the statuses */
		assert_int_equal(http_od_interval(&f.c, &f.crt, f.hosts, f.n, 11000, 0, &ev),
				 enforcing);
		assert_int_equal(ev.detected_sr, 0);
		assert_int_equal(ev.detected_lsr, 1);
		assert_int_equal(ev.enforced_lsr, enforcing);
		assert_int_equal(ev.detected_fp + ev.detected_lfp, 0);
		assert_int_equal(ejected(&f, 4, 11001), enforcing);
		for (size_t i = 0; i < 4; i++)
			assert_false(ejected(&f, i, 11001));
	}
	/* without split: the same results are the external success rate's */
	fix_setup(&f, 5);
	f.c.consecutive_5xx = 0;
	f.c.consecutive_gateway_failure = 0;
	f.c.max_ejection_percent = 100;
	http_od_interval(&f.c, &f.crt, f.hosts, f.n, 1000, 0, &ev);
	for (size_t i = 0; i < 4; i++)
		count(&f, i, 200, 0);
	count(&f, 4, 100, 100);
	assert_int_equal(http_od_interval(&f.c, &f.crt, f.hosts, f.n, 11000, 0, &ev), 1);
	assert_int_equal(ev.detected_sr, 1);
	assert_int_equal(ev.detected_lsr, 0);
}

/* The failure-percentage detector over local-origin results
 * (enforcing_failure_percentage_local_origin, Envoy's default 0). */
static void test_split_interval_local_origin_failure_percentage(void **state)
{
	(void)state;
	struct fix f;
	struct http_od_iev ev;
	for (int enforcing = 0; enforcing < 2; enforcing++) {
		fix_setup(&f, 5);
		f.c.split_external_local_origin_errors = true;
		f.c.consecutive_local_origin_failure = 0;
		f.c.enforcing_failure_percentage_local_origin = enforcing ? 100 : 0;
		f.c.enforcing_failure_percentage = 100; /* the statuses': none fails */
		http_od_interval(&f.c, &f.crt, f.hosts, f.n, 1000, 0, &ev);
		put_mix(&f, 0, 60, 0);
		put_mix(&f, 1, 10, 50); /* 83 %: under 85 */
		put_mix(&f, 2, 9, 51);	/* 85 %: an outlier */
		put_mix(&f, 3, 60, 0);
		put_mix(&f, 4, 60, 0);
		assert_int_equal(http_od_interval(&f.c, &f.crt, f.hosts, f.n, 11000, 0, &ev),
				 enforcing);
		assert_int_equal(ev.detected_fp, 0);
		assert_int_equal(ev.detected_lfp, 1);
		assert_int_equal(ev.enforced_lfp, enforcing);
		assert_int_equal(ejected(&f, 2, 11001), enforcing);
		assert_false(ejected(&f, 1, 11001));
	}
}

/* An ejection ends at the interval, with no request and no pick: the
 * cluster's count goes back, the health epoch moves, and a worker's
 * cached candidates (built while the host was out) take it again at
 * the next pick without the balancer having to end the ejection. */
static void test_interval_ends_ejection(void **state)
{
	(void)state;
	struct lbfix l;
	struct fix f;
	lb_setup(&l, &f);
	f.c.max_ejection_percent = 100;
	l.cl.healthy_panic_threshold = 0;
	struct http_lb_cache *k = cache_new(3);
	uint64_t rr = 0;
	uint32_t back = 0;
	struct http_od_iev ev;
	http_od_interval(&f.c, &f.crt, f.hosts, f.n, 1000, 0, &ev);
	assert_int_equal(put(&f, 1, HTTP_OD_5XX, 5, 1000, NULL), 1);
	for (int i = 0; i < 6; i++)
		assert_int_not_equal(cached_pick(&l, &f, k, 2000, &rr, &back), 1);
	/* an interval before the end: still out */
	uint32_t e0 = f.crt.health_epoch;
	http_od_interval(&f.c, &f.crt, f.hosts, f.n, 11000, 0, &ev);
	assert_int_equal(ev.unejected, 0);
	assert_int_equal(f.crt.health_epoch, e0);
	assert_int_equal(f.crt.od_ejected, 1);
	/* the interval after its end (31 s) brings it back */
	http_od_interval(&f.c, &f.crt, f.hosts, f.n, 31000, 0, &ev);
	assert_int_equal(ev.unejected, 1);
	assert_int_equal(f.crt.od_ejected, 0);
	assert_true(f.crt.health_epoch != e0);
	assert_int_equal(f.h[1].od_ejected, 0);
	int seen[3] = {0};
	for (int i = 0; i < 6; i++)
		seen[cached_pick(&l, &f, k, 31000, &rr, &back)]++;
	assert_int_equal(seen[1], 2);
	assert_int_equal(back, 0); /* the interval ended it, not the balancer */
	cache_free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_classify),
	    cmocka_unit_test(test_consecutive_5xx_threshold_and_reset),
	    cmocka_unit_test(test_gateway_failure_enforcing),
	    cmocka_unit_test(test_max_ejection_percent),
	    cmocka_unit_test(test_max_ejection_percent_two_workers),
	    cmocka_unit_test(test_ejection_time_growth_cap_and_return),
	    cmocka_unit_test(test_lb_skips_ejected_host),
	    cmocka_unit_test(test_lb_cache_follows_health),
	    cmocka_unit_test(test_lb_cache_picks_as_walk),
	    cmocka_unit_test(test_ejection_count_capped),
	    cmocka_unit_test(test_interval_success_rate),
	    cmocka_unit_test(test_interval_success_rate_minimum),
	    cmocka_unit_test(test_interval_failure_percentage),
	    cmocka_unit_test(test_interval_ends_ejection),
	    cmocka_unit_test(test_split_consecutive_local_origin),
	    cmocka_unit_test(test_split_interval_local_origin_success_rate),
	    cmocka_unit_test(test_split_interval_local_origin_failure_percentage),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
