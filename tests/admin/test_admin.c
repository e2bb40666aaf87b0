/*
 * lib/admin: the stats registry (per-worker slots summed on read, scopes by
 * name with reference counts, pulls), JSON tree, config_dump mask/resource,
 * output formats and access-log formatting.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "admin_int.h"
#include "arn_admin.h"
#include "arn_stats.h"
#include "json.h"
#include "stats_int.h"

enum test_stat {
#define ARN_STAT(kind, name, help) TS_##name,
#include "test_stats_defs.def"
#undef ARN_STAT
	TS__COUNT
};
static const struct arn_stat_def test_defs[] = {
#define ARN_STAT(kind, name, help) ARN_STAT_DEF(kind, name, help),
#include "test_stats_defs.def"
#undef ARN_STAT
};
static struct arn_stats_schema test_schema = ARN_STATS_SCHEMA("cluster", test_defs);

static int reset(void **state)
{
	(void)state;
	arn_stats_reset_for_tests();
	arn_admin_reset_for_tests();
	return 0;
}

static const struct arn_stat_sample *find_sample(const struct arn_stats_snapshot *s,
						 const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i].name, name) == 0)
			return &s->v[i];
	return NULL;
}

static void test_scope_names_and_refcount(void **state)
{
	(void)state;
	struct arn_stats_scope *a = arn_stats_scope_get(&test_schema, ARN_STATS_TAG_CLUSTER, "web");
	struct arn_stats_scope *b = arn_stats_scope_get(&test_schema, ARN_STATS_TAG_CLUSTER, "web");
	assert_non_null(a);
	assert_ptr_equal(a, b);
	assert_string_equal(arn_stats_scope_name(a), "cluster.web");
	arn_stats_inc(a, ARN_STATS_SLOT_CONTROL, TS_upstream_rq_total);
	arn_stats_scope_put(b);
	/* one reference left: the value survives (a cluster updated by CDS) */
	assert_int_equal(arn_stats_counter_value(a, TS_upstream_rq_total), 1);
	struct arn_stats_snapshot s;
	assert_int_equal(arn_stats_snapshot_take(&s), 0);
	const struct arn_stat_sample *x = find_sample(&s, "cluster.web.upstream_rq_total");
	assert_non_null(x);
	assert_int_equal(x->counter, 1);
	assert_string_equal(x->stat, "upstream_rq_total");
	assert_string_equal(x->family, "cluster");
	assert_string_equal(x->tag_name, "envoy_cluster_name");
	assert_string_equal(x->tag_value, "web");
	assert_non_null(find_sample(&s, "cluster.web.upstream_rq_time"));
	arn_stats_snapshot_free(&s);
	arn_stats_scope_put(a);
	/* last reference gone: the scope leaves /stats */
	assert_int_equal(arn_stats_snapshot_take(&s), 0);
	assert_null(find_sample(&s, "cluster.web.upstream_rq_total"));
	arn_stats_snapshot_free(&s);
}

static struct arn_stat_def other_defs[] = {ARN_STAT_DEF(COUNTER, x, "x")};
static struct arn_stats_schema other_schema = ARN_STATS_SCHEMA("cluster", other_defs);

static void test_scope_name_clash_refused(void **state)
{
	(void)state;
	struct arn_stats_scope *a = arn_stats_scope_get(&test_schema, ARN_STATS_TAG_CLUSTER, "c");
	assert_non_null(a);
	assert_null(arn_stats_scope_get(&other_schema, ARN_STATS_TAG_CLUSTER, "c"));
	arn_stats_scope_put(a);
}

static int deferred_calls;
static arn_admin_free_fn pending_fn;
static void *pending_arg;

static void defer_hook(arn_admin_free_fn fn, void *arg)
{
	deferred_calls++;
	pending_fn = fn;
	pending_arg = arg;
}

static void test_scope_free_is_deferred(void **state)
{
	(void)state;
	arn_admin_set_deferred_free(defer_hook);
	struct arn_stats_scope *a = arn_stats_scope_get(&test_schema, ARN_STATS_TAG_CLUSTER, "d");
	arn_stats_scope_put(a);
	assert_int_equal(deferred_calls, 1);
	/* a worker could still write here until the grace period ends */
	arn_stats_inc(a, ARN_STATS_SLOT_CONTROL, TS_upstream_rq_total);
	pending_fn(pending_arg);
	arn_admin_set_deferred_free(NULL);
}

#define N_THREADS 4
#define N_INCS 200000

struct writer {
	struct arn_stats_scope *sc;
	unsigned worker;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	unsigned slot = ARN_STATS_SLOT_WORKER(w->worker);
	for (unsigned i = 0; i < N_INCS; i++) {
		arn_stats_inc(w->sc, slot, TS_upstream_rq_total);
		arn_stats_gauge_add(w->sc, slot, TS_upstream_cx_active, (i & 1) ? -1 : 1);
		if ((i & 1023) == 0)
			arn_stats_hist_record(w->sc, slot, TS_upstream_rq_time, 700);
	}
	/* leave one connection open per worker; close one opened by another */
	arn_stats_gauge_add(w->sc, slot, TS_upstream_cx_active, 1);
	return NULL;
}

static void test_workers_write_own_slots_admin_sums(void **state)
{
	(void)state;
	struct arn_stats_scope *sc = arn_stats_scope_get(&test_schema, ARN_STATS_TAG_CLUSTER, "mt");
	assert_non_null(sc);
	arn_stats_inc(sc, ARN_STATS_SLOT_CONTROL, TS_upstream_rq_total);
	/* scopes made before lib/net knows the workers are grown, values kept */
	assert_int_equal(arn_stats_set_workers(N_THREADS), 0);
	assert_int_equal(arn_stats_workers(), N_THREADS);
	assert_int_equal(arn_stats_counter_value(sc, TS_upstream_rq_total), 1);
	/* slabs are cache-line separated */
	assert_int_equal(((uintptr_t)arn_stats_slab(sc, 1)) % 64, 0);
	assert_int_equal(sc->stride % 8, 0);

	pthread_t th[N_THREADS];
	struct writer w[N_THREADS];
	for (unsigned i = 0; i < N_THREADS; i++) {
		w[i] = (struct writer){sc, i};
		assert_int_equal(pthread_create(&th[i], NULL, writer_main, &w[i]), 0);
	}
	/* read while they write: never more than the total, never torn */
	for (int k = 0; k < 100; k++) {
		uint64_t v = arn_stats_counter_value(sc, TS_upstream_rq_total);
		assert_true(v <= 1 + (uint64_t)N_THREADS * N_INCS);
	}
	for (unsigned i = 0; i < N_THREADS; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(arn_stats_counter_value(sc, TS_upstream_rq_total),
			 1 + (uint64_t)N_THREADS * N_INCS);
	assert_int_equal(arn_stats_gauge_value(sc, TS_upstream_cx_active), N_THREADS);
	/* a gauge share may go negative on one slot; the sum is what counts */
	arn_stats_gauge_add(sc, ARN_STATS_SLOT_WORKER(0), TS_upstream_cx_active, -3);
	assert_int_equal(arn_stats_gauge_value(sc, TS_upstream_cx_active), N_THREADS - 3);
	struct arn_stats_hist h;
	arn_stats_hist_value(sc, TS_upstream_rq_time, &h);
	unsigned per = (N_INCS + 1023) / 1024;
	assert_int_equal(h.count, N_THREADS * per);
	assert_int_equal(h.buckets[1], N_THREADS * per); /* 0.5 < 0.7 <= 1 ms */
	assert_int_equal(h.sum_us, 700ULL * N_THREADS * per);

	/* shrinking folds the removed slots into the control slot */
	assert_int_equal(arn_stats_set_workers(1), 0);
	assert_int_equal(arn_stats_counter_value(sc, TS_upstream_rq_total),
			 1 + (uint64_t)N_THREADS * N_INCS);
	assert_int_equal(arn_stats_set_workers(ARN_STATS_MAX_WORKERS + 1), -EINVAL);
	arn_stats_scope_put(sc);
}

static void test_histogram_buckets_and_quantiles(void **state)
{
	(void)state;
	struct arn_stats_scope *sc = arn_stats_scope_get(&test_schema, ARN_STATS_TAG_CLUSTER, "h");
	/* Envoy's bucket bounds are inclusive upper bounds (le) */
	arn_stats_hist_record(sc, 0, TS_upstream_rq_time, 500);		  /* le 0.5 */
	arn_stats_hist_record(sc, 0, TS_upstream_rq_time, 501);		  /* le 1 */
	arn_stats_hist_record(sc, 0, TS_upstream_rq_time, 4000000000ULL); /* +Inf */
	struct arn_stats_hist h;
	arn_stats_hist_value(sc, TS_upstream_rq_time, &h);
	assert_int_equal(h.buckets[0], 1);
	assert_int_equal(h.buckets[1], 1);
	assert_int_equal(h.buckets[ARN_STATS_HIST_BUCKETS], 1);
	assert_int_equal(h.count, 3);
	double p0 = arn_stats_hist_quantile(&h, 0);
	assert_true(p0 >= 0 && p0 <= 0.5);
	assert_true(arn_stats_hist_quantile(&h, 1.0) >= 3600000.0);
	struct arn_stats_hist empty = {0};
	assert_true(isnan(arn_stats_hist_quantile(&empty, 0.5)));
	arn_stats_scope_put(sc);
}

static void pull_port(struct arn_stats_emitter *e, void *arg)
{
	int *n = arg;
	arn_stats_emit(e, ARN_STAT_COUNTER, "dpdk.port", "arion_port", "0", "rx_missed", *n);
	arn_stats_emit(e, ARN_STAT_GAUGE, "control_plane", NULL, NULL, "connected_state", 1);
}

static void test_pull_stats_at_read_time(void **state)
{
	(void)state;
	int n = 7;
	assert_int_equal(arn_stats_pull_register(pull_port, &n), 0);
	assert_int_equal(arn_stats_pull_register(pull_port, &n), -EEXIST);
	struct arn_stats_snapshot s;
	n = 42;
	assert_int_equal(arn_stats_snapshot_take(&s), 0);
	const struct arn_stat_sample *x = find_sample(&s, "dpdk.port.0.rx_missed");
	assert_non_null(x);
	assert_int_equal(x->counter, 42);
	x = find_sample(&s, "control_plane.connected_state");
	assert_non_null(x);
	assert_int_equal(x->kind, ARN_STAT_GAUGE);
	assert_null(x->tag_name);
	/* sorted by name */
	for (size_t i = 1; i < s.n; i++)
		assert_true(strcmp(s.v[i - 1].name, s.v[i].name) < 0);
	arn_stats_snapshot_free(&s);
	assert_int_equal(arn_stats_pull_unregister(pull_port, &n), 0);
	assert_int_equal(arn_stats_pull_unregister(pull_port, &n), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_scope_names_and_refcount, reset),
	    cmocka_unit_test_setup(test_scope_name_clash_refused, reset),
	    cmocka_unit_test_setup(test_scope_free_is_deferred, reset),
	    cmocka_unit_test_setup(test_workers_write_own_slots_admin_sums, reset),
	    cmocka_unit_test_setup(test_histogram_buckets_and_quantiles, reset),
	    cmocka_unit_test_setup(test_pull_stats_at_read_time, reset),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
