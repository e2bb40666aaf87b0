/*
 * Locality-weighted load balancing (common_lb_config.
 * locality_weighted_lb_config; http_lb.c): a priority's picks shared among
 * its localities by Envoy's EDF over their effective weights, then the
 * lb_policy within the chosen locality. The expected sequences are Envoy's
 * EdfScheduler (edf_scheduler.h: createWithPicks, pickAndAdd) over
 * effectiveLocalityWeight (upstream_impl.cc; the createWithPicks start of
 * the runtime guard edf_lb_locality_scheduler_init_fix, on by default),
 * computed by a transcription of that code and written out here. Picks
 * are counted, nothing is timed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "http_int.h"

enum { LW_EPS = 16, LW_LOCS = 4 };

/* One priority of up to LW_LOCS localities and LW_EPS hosts, and a
 * worker's cache with room for them, as http_rt.c gives it. */
struct lwfix {
	struct arn_cfg_endpoint ep[LW_EPS];
	struct arn_cfg_locality loc[LW_LOCS];
	struct arn_cfg_priority pr;
	struct arn_cfg_endpoints eps;
	struct arn_cfg_cluster cl;
	struct http_lb_cache k;
	const struct arn_cfg_endpoint *cand[LW_EPS];
	uint64_t cum[LW_EPS];
	struct http_lb_loc lo[LW_LOCS];
	uint32_t heap[LW_LOCS];
	uint64_t tmp[2 * LW_LOCS];
	uint64_t rr;
	uint32_t epoch;
};

static const char *const region[LW_LOCS] = {"r0", "r1", "r2", "r3"};

/* @p nl localities: locality l has @p hosts[l] hosts of weight 1 and
 * load_balancing_weight @p w[l] (0: unset), region "r<l>". */
static void lw_setup(struct lwfix *f, uint8_t lb, size_t nl, const unsigned *hosts,
		     const uint32_t *w)
{
	memset(f, 0, sizeof(*f));
	size_t e = 0;
	for (size_t l = 0; l < nl; l++) {
		f->loc[l] = (struct arn_cfg_locality){.region = region[l],
						      .weight = w[l],
						      .endpoints = &f->ep[e],
						      .n_endpoints = hosts[l]};
		for (unsigned i = 0; i < hosts[l]; i++, e++) {
			assert_true(e < LW_EPS);
			f->ep[e] = (struct arn_cfg_endpoint){
			    .addr = 0xc6120300 + 10 + (uint32_t)e, .port = 8080, .weight = 1};
		}
	}
	f->pr =
	    (struct arn_cfg_priority){.localities = f->loc, .n_localities = nl, .n_endpoints = e};
	f->eps = (struct arn_cfg_endpoints){.priorities = &f->pr,
					    .n_priorities = 1,
					    .n_endpoints = e,
					    .overprovisioning_factor = 140};
	f->cl.lb = lb;
	f->cl.healthy_panic_threshold = 5000;
	f->cl.least_request_choices = 2;
	f->cl.locality_weighted = true;
	f->k = (struct http_lb_cache){.cap = LW_EPS,
				      .cand = f->cand,
				      .cum = f->cum,
				      .loc_cap = LW_LOCS,
				      .loc = f->lo,
				      .loc_heap = f->heap,
				      .loc_tmp = f->tmp};
}

static uint32_t no_active(void *ctx, const struct arn_cfg_endpoint *ep)
{
	(void)ctx;
	(void)ep;
	return 0;
}

/* The endpoint index of a pick with random number @p rnd, from the
 * worker's cache or, @p walk, without one. */
static int lwpick(struct lwfix *f, uint64_t rnd, bool walk)
{
	struct http_lb_in in = {.cluster = &f->cl,
				.eps = &f->eps,
				.rr = &f->rr,
				.rand = rnd,
				.active = no_active,
				.cache = walk ? NULL : &f->k,
				.epoch = f->epoch};
	struct http_lb_out out;
	int rc = http_lb_pick(&in, &out);
	assert_int_equal(rc, 0);
	return (int)(out.ep - f->ep);
}

/* The locality endpoint @p e is in. */
static int loc_of(const struct lwfix *f, int e)
{
	for (size_t l = 0; l < f->pr.n_localities; l++)
		if (e >= f->loc[l].endpoints - f->ep &&
		    e < f->loc[l].endpoints - f->ep + (long)f->loc[l].n_endpoints)
			return (int)l;
	fail();
	return -1;
}

static uint64_t mix(uint64_t i)
{
	uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull;
	x ^= x >> 31;
	return x * 0xbf58476d1ce4e5b9ull;
}

/*
 * Two localities weighted 80 and 20, of 1 and 3 hosts: Envoy's EDF gives
 * the first locality 80 of 100 picks and the second 20, in Envoy's order
 * (the second's first turn is the 4th pick: its deadline 1/(20 + 1e-13)
 * is just before the first's 4/80), whatever the host counts; round robin
 * within the second shares its 20 picks 7, 7, 6. Without the option the
 * four hosts share them equally (25 each), as before.
 */
static void test_lw_edf_80_20(void **state)
{
	(void)state;
	static const unsigned hosts[] = {1, 3};
	static const uint32_t w[] = {80, 20};
	static const int seq[20] = {0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0};
	struct lwfix f;
	lw_setup(&f, ARN_CFG_LB_ROUND_ROBIN, 2, hosts, w);
	int per_loc[2] = {0, 0}, per_ep[4] = {0, 0, 0, 0};
	for (int i = 0; i < 100; i++) {
		int e = lwpick(&f, 0, false);
		if (i < 20)
			assert_int_equal(loc_of(&f, e), seq[i]);
		per_loc[loc_of(&f, e)]++;
		per_ep[e]++;
	}
	assert_int_equal(per_loc[0], 80);
	assert_int_equal(per_loc[1], 20);
	assert_int_equal(per_ep[1], 7);
	assert_int_equal(per_ep[2], 7);
	assert_int_equal(per_ep[3], 6);
	assert_int_equal(f.k.builds, 1); /* built once, not per pick */

	/* without locality_weighted_lb_config: by host, 25 each */
	lw_setup(&f, ARN_CFG_LB_ROUND_ROBIN, 2, hosts, w);
	f.cl.locality_weighted = false;
	memset(per_ep, 0, sizeof(per_ep));
	for (int i = 0; i < 100; i++)
		per_ep[lwpick(&f, 0, false)]++;
	for (int e = 0; e < 4; e++)
		assert_int_equal(per_ep[e], 25);
}

/*
 * createWithPicks: the schedule starts after a random number of picks
 * (the pick's random number when it is built), Envoy's, so that workers
 * do not all start on the first locality: 23 picks done give the
 * sequence Envoy's createWithPicks(23) gives, and the shares stay 80/20.
 */
static void test_lw_initial_picks(void **state)
{
	(void)state;
	static const unsigned hosts[] = {1, 3};
	static const uint32_t w[] = {80, 20};
	static const int seq23[12] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0};
	static const int seq37[12] = {0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
	struct lwfix f;
	for (int t = 0; t < 2; t++) {
		lw_setup(&f, ARN_CFG_LB_ROUND_ROBIN, 2, hosts, w);
		int per_loc[2] = {0, 0};
		for (int i = 0; i < 100; i++) {
			/* the first pick builds: its random number is the seed */
			int l = loc_of(&f, lwpick(&f, i ? 0 : t ? 37 : 23, false));
			if (i < 12)
				assert_int_equal(l, t ? seq37[i] : seq23[i]);
			per_loc[l]++;
		}
		assert_int_equal(per_loc[0], 80);
		assert_int_equal(per_loc[1], 20);
	}
}

/*
 * Health: a locality that lost half its hosts has the effective weight
 * weight x min(1, 1.4 x 2/4) = 0.7 of its weight (overprovisioning_factor
 * 140, Envoy's default): of 170 picks, 100 and 70, only to its healthy
 * hosts; with overprovisioning_factor 100, 0.5: 100 and 50; one host of
 * four down leaves it whole (1.4 x 3/4 > 1); all down, nothing.
 */
static void test_lw_health_overprovisioning(void **state)
{
	(void)state;
	static const unsigned hosts[] = {4, 4};
	static const uint32_t w[] = {1, 1};
	struct lwfix f;
	lw_setup(&f, ARN_CFG_LB_ROUND_ROBIN, 2, hosts, w);
	f.ep[6].health = f.ep[7].health = ARN_CFG_HEALTH_UNHEALTHY;
	int per_loc[2] = {0, 0}, per_ep[8] = {0};
	for (int i = 0; i < 170; i++) {
		int e = lwpick(&f, 0, false);
		per_loc[loc_of(&f, e)]++;
		per_ep[e]++;
	}
	assert_int_equal(per_loc[0], 100);
	assert_int_equal(per_loc[1], 70);
	assert_int_equal(per_ep[6] + per_ep[7], 0);
	assert_int_equal(per_ep[4], 35);
	assert_int_equal(per_ep[5], 35);
	assert_true(f.lo[1].weight > 0.6999 && f.lo[1].weight < 0.7001);

	f.eps.overprovisioning_factor = 100;
	f.epoch++; /* health or endpoints moved: rebuilt */
	per_loc[0] = per_loc[1] = 0;
	for (int i = 0; i < 150; i++)
		per_loc[loc_of(&f, lwpick(&f, 0, false))]++;
	assert_int_equal(per_loc[0], 100);
	assert_int_equal(per_loc[1], 50);

	f.eps.overprovisioning_factor = 140;
	f.ep[6].health = ARN_CFG_HEALTH_HEALTHY;
	f.epoch++;
	per_loc[0] = per_loc[1] = 0;
	for (int i = 0; i < 100; i++)
		per_loc[loc_of(&f, lwpick(&f, 0, false))]++;
	assert_int_equal(per_loc[0], 50);
	assert_int_equal(per_loc[1], 50);

	f.ep[4].health = f.ep[5].health = f.ep[6].health = ARN_CFG_HEALTH_UNHEALTHY;
	f.ep[7].health = ARN_CFG_HEALTH_DRAINING;
	f.epoch++;
	for (int i = 0; i < 20; i++)
		assert_int_equal(loc_of(&f, lwpick(&f, 0, false)), 0);
}

/*
 * A locality without load_balancing_weight has weight 0 (Envoy's locality
 * weights map): nothing while another has a weight; when none has one
 * there is no schedule and the priority's hosts are one list, as without
 * the option. Panic (3 healthy of 8, under 50%) balances over every host
 * whatever the weights (Envoy's AllHosts source).
 */
static void test_lw_zero_weight_and_panic(void **state)
{
	(void)state;
	static const unsigned hosts[] = {2, 2};
	static const uint32_t w[] = {3, 0};
	struct lwfix f;
	lw_setup(&f, ARN_CFG_LB_ROUND_ROBIN, 2, hosts, w);
	int per_ep[8] = {0};
	for (int i = 0; i < 40; i++)
		per_ep[lwpick(&f, 0, false)]++;
	assert_int_equal(per_ep[0], 20);
	assert_int_equal(per_ep[1], 20);
	assert_int_equal(per_ep[2] + per_ep[3], 0);

	static const uint32_t none[] = {0, 0};
	lw_setup(&f, ARN_CFG_LB_ROUND_ROBIN, 2, hosts, none);
	memset(per_ep, 0, sizeof(per_ep));
	for (int i = 0; i < 40; i++)
		per_ep[lwpick(&f, 0, false)]++;
	for (int e = 0; e < 4; e++)
		assert_int_equal(per_ep[e], 10);

	static const unsigned h44[] = {4, 4};
	static const uint32_t w91[] = {9, 1};
	lw_setup(&f, ARN_CFG_LB_ROUND_ROBIN, 2, h44, w91);
	for (int e = 0; e < 5; e++)
		f.ep[e].health = ARN_CFG_HEALTH_UNHEALTHY;
	memset(per_ep, 0, sizeof(per_ep));
	for (int i = 0; i < 80; i++)
		per_ep[lwpick(&f, 0, false)]++;
	assert_true(f.k.panic);
	for (int e = 0; e < 8; e++)
		assert_int_equal(per_ep[e], 10);
}

/*
 * One locality (Envoy Gateway's cluster of one backendRef) is the whole
 * priority: no schedule is built and the policy balances over its hosts
 * as without the option, whatever its weight.
 */
static void test_lw_one_locality(void **state)
{
	(void)state;
	static const unsigned hosts[] = {3};
	static const uint32_t w[] = {7};
	struct lwfix f;
	lw_setup(&f, ARN_CFG_LB_ROUND_ROBIN, 1, hosts, w);
	int per_ep[3] = {0};
	for (int i = 0; i < 30; i++)
		per_ep[lwpick(&f, 0, false)]++;
	assert_int_equal(f.k.n_loc, 0);
	assert_false(f.k.lw);
	for (int e = 0; e < 3; e++)
		assert_int_equal(per_ep[e], 10);
}

/*
 * Envoy's localities are the distinct (region, zone, sub_zone) of a
 * priority in that order (a std::map with LocalityLess), entries naming
 * the same one merged, its weight the last one given: listed "r1" then
 * "r0" with equal weights, "r0" takes the first pick (EDF's ties go in
 * insertion order); "r0" listed twice (weights 1 then 3) is one locality
 * of weight 3 whose hosts are both entries'.
 */
static void test_lw_locality_order_and_merge(void **state)
{
	(void)state;
	static const unsigned hosts[] = {1, 1};
	static const uint32_t w[] = {1, 1};
	struct lwfix f;
	lw_setup(&f, ARN_CFG_LB_ROUND_ROBIN, 2, hosts, w);
	f.loc[0].region = "r1";
	f.loc[1].region = "r0";
	assert_int_equal(lwpick(&f, 0, false), 1);
	assert_int_equal(lwpick(&f, 0, false), 0);

	static const unsigned h3[] = {1, 1, 1};
	static const uint32_t w3[] = {1, 3, 3};
	lw_setup(&f, ARN_CFG_LB_ROUND_ROBIN, 3, h3, w3);
	f.loc[0].region = "r0";
	f.loc[1].region = "r1";
	f.loc[2].region = "r0";
	f.loc[2].weight = 3;
	int per_ep[3] = {0};
	for (int i = 0; i < 120; i++)
		per_ep[lwpick(&f, 0, false)]++;
	assert_int_equal(f.k.n_loc, 2);
	assert_int_equal(per_ep[0] + per_ep[2], 60);
	assert_int_equal(per_ep[0], 30);
	assert_int_equal(per_ep[1], 60);
}

/*
 * LEAST_REQUEST and RANDOM pick within the locality EDF chose: 80 and 20
 * of 100 picks whatever the random numbers; DEGRADED hosts (none healthy)
 * are shared the same way by the degraded schedule.
 */
static void test_lw_policies_and_degraded(void **state)
{
	(void)state;
	static const unsigned hosts[] = {2, 3};
	static const uint32_t w[] = {80, 20};
	static const uint8_t pol[] = {ARN_CFG_LB_LEAST_REQUEST, ARN_CFG_LB_RANDOM,
				      ARN_CFG_LB_ROUND_ROBIN};
	struct lwfix f;
	for (size_t p = 0; p < 3; p++) {
		lw_setup(&f, pol[p], 2, hosts, w);
		if (pol[p] == ARN_CFG_LB_ROUND_ROBIN)
			for (int e = 0; e < 5; e++)
				f.ep[e].health = ARN_CFG_HEALTH_DEGRADED;
		int per_loc[2] = {0, 0}, per_ep[5] = {0};
		for (int i = 0; i < 100; i++) {
			int e = lwpick(&f, i ? mix((uint64_t)i) : 0, false);
			per_loc[loc_of(&f, e)]++;
			per_ep[e]++;
		}
		assert_int_equal(per_loc[0], 80);
		assert_int_equal(per_loc[1], 20);
		for (int e = 0; e < 5; e++)
			assert_true(per_ep[e] > 0);
	}
}

/*
 * Without the worker's cache (a snapshot a generation apart) or with a
 * cache that has no room for the localities, a pick draws the locality
 * at random by effective weight: about 80/20 of 1,000 picks (these
 * random numbers give a fixed count), never a weight-0 locality.
 */
static void test_lw_without_cache(void **state)
{
	(void)state;
	static const unsigned hosts[] = {1, 3, 1};
	static const uint32_t w[] = {80, 20, 0};
	struct lwfix f;
	for (int t = 0; t < 2; t++) {
		lw_setup(&f, ARN_CFG_LB_ROUND_ROBIN, 3, hosts, w);
		if (t)
			f.k.loc_cap = 2; /* fewer than the priority's localities */
		int per_loc[3] = {0, 0, 0};
		for (int i = 0; i < 1000; i++)
			per_loc[loc_of(&f, lwpick(&f, mix((uint64_t)i), !t))]++;
		assert_true(per_loc[0] > 750 && per_loc[0] < 850);
		assert_int_equal(per_loc[0] + per_loc[1], 1000);
	}
}

/* The worker's table for RING_HASH / MAGLEV, as http_rt.c sizes it. */
static void lw_hash_cache(struct lwfix *f)
{
	bool clipped;
	size_t tab = http_lb_table_entries(&f->cl, &f->eps, &clipped);
	f->k.tab_cap = tab;
	if (f->cl.lb == ARN_CFG_LB_RING_HASH) {
		f->k.ring = calloc(tab, sizeof(*f->k.ring));
		assert_non_null(f->k.ring);
	} else {
		f->k.mag = calloc(tab, sizeof(*f->k.mag));
		f->k.scratch = calloc(4 * LW_EPS, sizeof(*f->k.scratch));
		assert_non_null(f->k.mag);
		assert_non_null(f->k.scratch);
	}
	f->k.nw = f->cl.locality_weighted ? calloc(LW_EPS, sizeof(double)) : NULL;
	f->cl.ring_min_size = 1024; /* the configuration's defaults */
	f->cl.ring_max_size = 8 * 1024 * 1024;
	f->cl.maglev_table_size = 65537;
}

static void lw_hash_free(struct lwfix *f)
{
	free(f->k.ring);
	free(f->k.mag);
	free(f->k.scratch);
	free(f->k.nw);
	f->k.ring = NULL;
	f->k.mag = NULL;
	f->k.scratch = NULL;
	f->k.nw = NULL;
}

/* The endpoint index key @p key lands on (-1: no host). */
static int lwhpick(struct lwfix *f, uint64_t key)
{
	struct http_lb_in in = {.cluster = &f->cl,
				.eps = &f->eps,
				.has_hash = true,
				.hash = key,
				.cache = &f->k,
				.epoch = f->epoch};
	struct http_lb_out out;
	if (http_lb_pick(&in, &out))
		return -1;
	return (int)(out.ep - f->ep);
}

/* The ring's points (or the Maglev table's entries) of endpoint @p e. */
static size_t table_share(const struct lwfix *f, int e)
{
	size_t n = 0;
	for (size_t i = 0; i < f->k.tab_n; i++) {
		uint32_t idx = f->k.tab_kind == HTTP_LB_TAB_RING ? f->k.ring[i].idx : f->k.mag[i];
		n += f->k.cand[idx] - f->ep == e;
	}
	return n;
}

/*
 * RING_HASH and MAGLEV with locality weighting take Envoy's normalized
 * weights (normalizeLocalityWeights): a host's weight / its locality's
 * candidates' total x its locality's weight / the priority's localities'
 * total. Localities 1 and 3 of 2 hosts each: 1/8, 1/8, 3/8, 3/8, so the
 * ring (scale ceil(1/8 x 1,024) / (1/8) = 1,024) has 128, 128, 384 and 384
 * points, where without the option it has 256 each. The second
 * locality's hosts all down: the first's keep 1/8 each (the total counts
 * the empty locality, as Envoy's), 128 points each, 256 in all. Every
 * locality without a weight: Envoy's table is empty, no host.
 */
static void test_lw_ring_normalized(void **state)
{
	(void)state;
	static const unsigned hosts[] = {2, 2};
	static const uint32_t w[] = {1, 3};
	static const size_t want[4] = {128, 128, 384, 384};
	struct lwfix f;
	lw_setup(&f, ARN_CFG_LB_RING_HASH, 2, hosts, w);
	lw_hash_cache(&f);
	assert_true(lwhpick(&f, 1) >= 0);
	assert_int_equal(f.k.tab_kind, HTTP_LB_TAB_RING);
	assert_int_equal(f.k.tab_n, 1024);
	for (int e = 0; e < 4; e++)
		assert_int_equal(table_share(&f, e), want[e]);
	/* keys land by those shares: about 3/4 on the second locality */
	int second = 0;
	for (uint64_t i = 0; i < 4000; i++)
		second += lwhpick(&f, mix(i)) >= 2;
	assert_true(second > 2800 && second < 3200);
	/* no hash: Envoy's random one, through the same ring */
	struct http_lb_in in = {.cluster = &f.cl, .eps = &f.eps, .cache = &f.k, .epoch = f.epoch};
	struct http_lb_out out;
	second = 0;
	for (uint64_t i = 0; i < 4000; i++) {
		in.rand = mix(i);
		assert_int_equal(http_lb_pick(&in, &out), 0);
		second += out.ep - f.ep >= 2;
	}
	assert_true(second > 2800 && second < 3200);

	f.ep[2].health = f.ep[3].health = ARN_CFG_HEALTH_UNHEALTHY;
	f.epoch++;
	assert_true(lwhpick(&f, 1) < 2);
	assert_int_equal(f.k.tab_n, 256);
	assert_int_equal(table_share(&f, 0), 128);
	assert_int_equal(table_share(&f, 1), 128);
	lw_hash_free(&f);

	lw_setup(&f, ARN_CFG_LB_RING_HASH, 2, hosts, w);
	f.cl.locality_weighted = false;
	lw_hash_cache(&f);
	assert_true(lwhpick(&f, 1) >= 0);
	for (int e = 0; e < 4; e++)
		assert_int_equal(table_share(&f, e), 256);
	lw_hash_free(&f);

	static const uint32_t none[] = {0, 0};
	lw_setup(&f, ARN_CFG_LB_RING_HASH, 2, hosts, none);
	lw_hash_cache(&f);
	assert_int_equal(lwhpick(&f, 1), -1);
	lw_hash_free(&f);
}

/*
 * MAGLEV: localities 1 and 3 of one host each, normalized weights 1/4 and
 * 3/4: Envoy's weighted rounds give the first host a turn in round 1 and
 * every third round after, the second every round, 16,385 and 49,152 of
 * 65,537 entries. One locality of weight 5 gives the table Envoy builds
 * without the option: every key on the same host.
 */
static void test_lw_maglev_normalized(void **state)
{
	(void)state;
	static const unsigned h11[] = {1, 1};
	static const uint32_t w13[] = {1, 3};
	struct lwfix f;
	lw_setup(&f, ARN_CFG_LB_MAGLEV, 2, h11, w13);
	lw_hash_cache(&f);
	assert_true(lwhpick(&f, 1) >= 0);
	assert_int_equal(f.k.tab_kind, HTTP_LB_TAB_MAGLEV);
	assert_int_equal(table_share(&f, 0), 16385);
	assert_int_equal(table_share(&f, 1), 49152);
	lw_hash_free(&f);

	static const unsigned h4[] = {4};
	static const uint32_t w5[] = {5};
	struct lwfix g;
	lw_setup(&f, ARN_CFG_LB_MAGLEV, 1, h4, w5);
	lw_setup(&g, ARN_CFG_LB_MAGLEV, 1, h4, w5);
	for (int e = 0; e < 4; e++)
		f.ep[e].weight = g.ep[e].weight = (uint32_t)e + 1;
	g.cl.locality_weighted = false;
	lw_hash_cache(&f);
	lw_hash_cache(&g);
	for (uint64_t i = 0; i < 2000; i++)
		assert_int_equal(lwhpick(&f, mix(i)), lwhpick(&g, mix(i)));
	lw_hash_free(&f);
	lw_hash_free(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_lw_edf_80_20),
	    cmocka_unit_test(test_lw_initial_picks),
	    cmocka_unit_test(test_lw_health_overprovisioning),
	    cmocka_unit_test(test_lw_zero_weight_and_panic),
	    cmocka_unit_test(test_lw_one_locality),
	    cmocka_unit_test(test_lw_locality_order_and_merge),
	    cmocka_unit_test(test_lw_policies_and_degraded),
	    cmocka_unit_test(test_lw_without_cache),
	    cmocka_unit_test(test_lw_ring_normalized),
	    cmocka_unit_test(test_lw_maglev_normalized),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
