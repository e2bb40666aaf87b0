/*
 * Issue 7's two HTTP gaps, without a data plane:
 *
 *  - per-host counters (lib/http/http_host.c, http_rt.c, http_upstream.c):
 *    a host that stays in its cluster across EDS generations keeps its
 *    object and counts; a host removed while a request to it is in flight
 *    stays alive until that request is done (the pool holds it), and one
 *    that a worker just found in a snapshot stays alive until the worker
 *    passed a quiescent state. Run under ASan, a counter written after its
 *    memory was freed fails the test. /clusters and /stats show the sums.
 *  - the health check filter's conversion (envoy.filters.http.health_check
 *    into the HCM's model) and its refusals.
 *
 * Worker-side code runs on the test thread with a worker struct of its own
 * (pools only); the configuration store is real.
 */
#include <errno.h>
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rte_rcu_qsbr.h>

#include "upb/reflection.h"

#include "admin_int.h"
#include "arn_admin.h"
#include "arn_admin_config.h"
#include "arn_config.h"
#include "arn_http.h"
#include "arn_proto.h"
#include "arn_stats.h"
#include "arn_stats_snapshot.h"
#include "http_hc.h"
#include "http_int.h"
#include "http_upstream.h"

#define L ARN_TYPE_URL_LISTENER
#define C ARN_TYPE_URL_CLUSTER
#define E ARN_TYPE_URL_CLA

static struct arn_config_store *st;
static struct arn_admin_config *ca;
static struct arn_config_result res;

/* What app/arion/app_admin.c plugs into /clusters: lib/http's counts. */
static void host_stats(void *arg, const char *cluster, uint32_t addr, uint16_t port,
		       struct arn_admin_host_info *h)
{
	(void)arg;
	struct arn_http_host_counts c;
	if (arn_http_host_counts(cluster, addr, port, &c) != 0)
		return;
	h->cx_total = c.cx_total;
	h->cx_connect_fail = c.cx_connect_fail;
	h->rq_total = c.rq_total;
	h->rq_success = c.rq_success;
	h->rq_error = c.rq_error;
	h->rq_timeout = c.rq_timeout;
	h->cx_active = c.cx_active;
	h->rq_active = c.rq_active;
}

static int setup(void **state)
{
	(void)state;
	st = arn_config_create(NULL);
	assert_non_null(st);
	ca = arn_admin_config_start(st);
	assert_non_null(ca);
	arn_admin_set_host_stats(host_stats, NULL);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	http_rt_fini();
	arn_config_result_free(&res);
	arn_admin_set_host_stats(NULL, NULL);
	arn_admin_config_stop(ca);
	ca = NULL;
	arn_config_destroy(st);
	st = NULL;
	arn_admin_reset_for_tests();
	arn_stats_reset_for_tests();
	return 0;
}

/* ---- applying resources (JSON -> proto -> the store) --------------------------------- */

static void apply(const char *type, const char *version, const char *const *json)
{
	arn_config_result_free(&res);
	struct arn_config_resource_in in[8];
	char names[8][128];
	size_t n = 0;
	upb_Arena *a = upb_Arena_New();
	const upb_MessageDef *md = arn_proto_msgdef(strrchr(type, '/') + 1);
	for (; json[n]; n++) {
		assert_true(n < 8);
		struct arn_sb err = ARN_SB_INIT;
		upb_Message *m = arn_proto_from_json(json[n], strlen(json[n]), md, a, &err);
		if (!m)
			fail_msg("bad test JSON: %s\n%s", arn_sb_cstr(&err), json[n]);
		arn_sb_free(&err);
		const upb_FieldDef *f =
		    upb_MessageDef_FindFieldByName(md, strcmp(type, E) ? "name" : "cluster_name");
		upb_StringView nm = upb_Message_Get(m, f).str_val;
		snprintf(names[n], sizeof(names[n]), "%.*s", (int)nm.size, nm.data);
		in[n] = (struct arn_config_resource_in){names[n], version, NULL, 0};
		in[n].bytes = arn_proto_encode(m, md, a, &in[n].len);
	}
	assert_int_equal(arn_config_apply(st, type, in, n, NULL, 0, 0, &res), 0);
	upb_Arena_Free(a);
}

#define APPLY(type, version, ...) apply((type), (version), (const char *const[]){__VA_ARGS__, NULL})

static void accepted(void)
{
	if (!res.accepted || res.n_errors)
		fail_msg("batch not accepted cleanly: %s",
			 res.n_errors ? res.errors[0].message : "refused");
}

/* The batch was refused with an error mentioning every one of @p words. */
static void refused_with(const char *what, const char *words)
{
	if (res.accepted && !res.n_errors)
		fail_msg("%s: accepted, expected a refusal", what);
	assert_true(res.n_errors > 0);
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", words);
	for (char *w = strtok(buf, "|"); w; w = strtok(NULL, "|"))
		if (!strstr(res.errors[0].message, w))
			fail_msg("%s: error lacks '%s': %s", what, w, res.errors[0].message);
}

static char jb[8][4096];
static int njb;

static const char *jcluster_eds(const char *name)
{
	char *b = jb[njb++ % 8];
	snprintf(b, 4096,
		 "{\"name\":\"%s\",\"type\":\"EDS\",\"connect_timeout\":\"1s\","
		 "\"eds_cluster_config\":{\"eds_config\":{\"ads\":{}}}}",
		 name);
	return b;
}

/* A ClusterLoadAssignment with endpoints 198.18.0.<last[i]>:8080. */
static const char *jcla(const char *name, const int *last, size_t n)
{
	char *b = jb[njb++ % 8];
	int k =
	    snprintf(b, 4096, "{\"cluster_name\":\"%s\",\"endpoints\":[{\"lb_endpoints\":[", name);
	for (size_t i = 0; i < n; i++)
		k += snprintf(b + k, 4096 - (size_t)k,
			      "%s{\"endpoint\":{\"address\":{\"socket_address\":{\"address\":"
			      "\"198.18.0.%d\",\"port_value\":8080}}}}",
			      i ? "," : "", last[i]);
	snprintf(b + k, 4096 - (size_t)k, "]}]}");
	return b;
}

#define IP(last) (0xc6120000u | (uint32_t)(last)) /* 198.18.0.<last> */

/* ---- per-host counters ------------------------------------------------------------------ */

static struct http_worker *fake_worker(unsigned idx)
{
	struct http_worker *w = calloc(1, sizeof(*w));
	assert_non_null(w);
	w->idx = idx;
	w->slot = ARN_STATS_SLOT_WORKER(idx);
	w->pools_cap = HTTP_POOLS;
	w->pools = calloc(w->pools_cap, sizeof(*w->pools));
	assert_non_null(w->pools);
	return w;
}

static void fake_worker_free(struct http_worker *w)
{
	free(w->pools);
	free(w);
}

static struct arn_cfg_ref web_ref(void)
{
	return (struct arn_cfg_ref){"web", 3, arn_cfg_hash("web", 3)};
}

static struct http_host_ctr sum_of(struct http_host *h)
{
	struct http_host_ctr c;
	http_host_sum(h, &c);
	return c;
}

static void want_in(const char *text, const char *line)
{
	if (!strstr(text, line))
		fail_msg("missing '%s' in:\n%s", line, text);
}

/* ---- active health checks' targets across generations ---------------------------------- */

static const char *jcluster_eds_hc(const char *name)
{
	char *b = jb[njb++ % 8];
	snprintf(b, 4096,
		 "{\"name\":\"%s\",\"type\":\"EDS\",\"connect_timeout\":\"1s\","
		 "\"eds_cluster_config\":{\"eds_config\":{\"ads\":{}}},"
		 "\"health_checks\":[{\"timeout\":\"1s\",\"interval\":\"5s\","
		 "\"unhealthy_threshold\":2,\"healthy_threshold\":2,"
		 "\"http_health_check\":{\"path\":\"/healthz\"}}]}",
		 name);
	return b;
}

/* The configuration applied so far accepted, the proxy's runtime on the
 * store, and worker 0 with its timers and its (idle) health checker. */
static struct http_worker *hc_worker0(void)
{
	accepted();
	assert_int_equal(http_rt_init(st), 0);
	struct http_worker *w = fake_worker(0);
	http_timers_init(w);
	assert_int_equal(http_hc_worker_init(w), 0);
	return w;
}

static bool failed_hc(int last)
{
	struct arn_http_host_counts c;
	assert_int_equal(arn_http_host_counts("web", IP(last), 8080, &c), 0);
	return c.failed_active_hc;
}

/* Worker 0's checker follows the generations (http_hc_gen): a host added to
 * a checked cluster starts failed (Envoy's FAILED_ACTIVE_HC until its
 * first check passes); one that stays across an EDS update keeps its
 * target and its health; a removed one's target goes; a cluster that
 * drops its checks lets go of every target and flag. No check runs here
 * (the worker's timers are not run). */
static void test_active_hc_targets_follow_generations(void **state)
{
	(void)state;
	assert_int_equal(arn_stats_set_workers(1), 0);
	APPLY(C, "1", jcluster_eds_hc("web"));
	APPLY(E, "1", jcla("web", (const int[]){10, 11}, 2));
	struct http_worker *w = hc_worker0();
	http_hc_gen(w, arn_config_gen(st));
	assert_int_equal(http_hc_targets(w), 2);
	assert_true(failed_hc(10));
	assert_true(failed_hc(11));
	/* 10 passed its checks (what worker 0's verdict writes) */
	struct http_host *h10 = http_host_find("web", 3, IP(10), 8080);
	assert_non_null(h10);
	__atomic_store_n(&h10->hc_flags, 0, __ATOMIC_RELAXED);
	/* EDS: 10 stays, 11 goes, 12 comes */
	APPLY(E, "2", jcla("web", (const int[]){10, 12}, 2));
	accepted();
	http_rt_sync(st);
	http_hc_gen(w, arn_config_gen(st));
	assert_int_equal(http_hc_targets(w), 2);
	assert_false(failed_hc(10)); /* kept */
	assert_true(failed_hc(12));  /* new */
	/* the checks removed: no target, no flag left behind */
	APPLY(C, "2", jcluster_eds("web"));
	accepted();
	http_rt_sync(st);
	http_hc_gen(w, arn_config_gen(st));
	assert_int_equal(http_hc_targets(w), 0);
	assert_false(failed_hc(10));
	assert_false(failed_hc(12));
	/* a host new to a cluster without checks is not failed */
	APPLY(E, "3", jcla("web", (const int[]){10, 12, 13}, 3));
	accepted();
	http_rt_sync(st);
	http_hc_gen(w, arn_config_gen(st));
	assert_false(failed_hc(13));
	http_hc_worker_fini(w);
	fake_worker_free(w);
}

static void find_web(void *ctx, const struct arn_cfg_cluster *cl)
{
	if (cl->obj.name_len == 3 && memcmp(cl->obj.name, "web", 3) == 0)
		*(const struct arn_cfg_cluster **)ctx = cl;
}

/* Envoy's initial_jitter, interval_jitter_percent and edge intervals are
 * converted (interval_jitter_percent was refused, the others accepted and
 * dropped), the edge intervals defaulting as Envoy's: unhealthy_interval
 * and interval. */
static void test_active_hc_intervals_converted(void **state)
{
	(void)state;
	APPLY(C, "1",
	      "{\"name\":\"web\",\"type\":\"EDS\",\"connect_timeout\":\"1s\","
	      "\"eds_cluster_config\":{\"eds_config\":{\"ads\":{}}},"
	      "\"health_checks\":[{\"timeout\":\"1s\",\"interval\":\"5s\","
	      "\"unhealthy_threshold\":2,\"healthy_threshold\":2,\"initial_jitter\":\"0.5s\","
	      "\"interval_jitter_percent\":10,\"unhealthy_interval\":\"2s\","
	      "\"unhealthy_edge_interval\":\"0.1s\",\"healthy_edge_interval\":\"0.2s\","
	      "\"reuse_connection\":false,\"http_health_check\":{\"path\":\"/healthz\"}}]}");
	accepted();
	APPLY(E, "1", jcla("web", (const int[]){10}, 1)); /* out of warming */
	accepted();
	const struct arn_cfg_cluster *cl = NULL;
	arn_cfg_cluster_foreach(arn_config_gen(st), find_web, &cl);
	assert_non_null(cl);
	const struct arn_cfg_health_check *h = &cl->health_checks[0];
	assert_int_equal(h->initial_jitter_ms, 500);
	assert_int_equal(h->interval_jitter_percent, 10);
	assert_int_equal(h->unhealthy_interval_ms, 2000);
	assert_int_equal(h->unhealthy_edge_interval_ms, 100);
	assert_int_equal(h->healthy_edge_interval_ms, 200);
	assert_false(h->reuse_connection);
	APPLY(C, "2", jcluster_eds_hc("web"));
	accepted();
	cl = NULL;
	arn_cfg_cluster_foreach(arn_config_gen(st), find_web, &cl);
	assert_non_null(cl);
	h = &cl->health_checks[0];
	assert_int_equal(h->initial_jitter_ms, 0);
	assert_int_equal(h->interval_jitter_percent, 0);
	assert_int_equal(h->unhealthy_edge_interval_ms, 5000);
	assert_int_equal(h->healthy_edge_interval_ms, 5000);
	assert_true(h->reuse_connection); /* Envoy's default */
}

/* A ClusterLoadAssignment of @p cluster with @p n endpoints
 * 198.18.<i / 256>.<i % 256>:8080 (malloc'd). */
static char *jcla_n(const char *cluster, unsigned n)
{
	size_t cap = 128 + (size_t)n * 100, k = 0;
	char *b = malloc(cap);
	assert_non_null(b);
	k += (size_t)snprintf(
	    b + k, cap - k, "{\"cluster_name\":\"%s\",\"endpoints\":[{\"lb_endpoints\":[", cluster);
	for (unsigned i = 0; i < n; i++)
		k += (size_t)snprintf(
		    b + k, cap - k,
		    "%s{\"endpoint\":{\"address\":{\"socket_address\":{\"address\":"
		    "\"198.18.%u.%u\",\"port_value\":8080}}}}",
		    i ? "," : "", i / 256, i % 256);
	assert_true(k + 5 < cap);
	snprintf(b + k, cap - k, "]}]}");
	return b;
}

/* Worker 0's targets are as many as the configuration's checked hosts, up
 * to HTTP_HC_MAX_TARGETS (once a fixed table of 1024: a cluster of 5,000
 * hosts had 3,976 of them unchecked); hosts beyond the limit are counted
 * in cluster.<c>.health_check.unchecked, not held failed. */
static void test_active_hc_many_hosts(void **state)
{
	(void)state;
	assert_int_equal(arn_stats_set_workers(1), 0);
	APPLY(C, "1", jcluster_eds_hc("web"));
	char *cla = jcla_n("web", 5000);
	APPLY(E, "1", cla);
	free(cla);
	struct http_worker *w = hc_worker0();
	http_hc_gen(w, arn_config_gen(st));
	assert_int_equal(http_hc_targets(w), 5000);
	struct http_cluster_rt *crt = http_rt_cluster("web", 3, arn_cfg_hash("web", 3));
	assert_non_null(crt);
	assert_int_equal(arn_stats_counter_value(crt->stats, ARN_CL_health_check_unchecked), 0);
	/* over the limit: HTTP_HC_MAX_TARGETS of them are checked, the others
	 * counted (once per host and configuration change) and not failed */
	cla = jcla_n("web", HTTP_HC_MAX_TARGETS + 8);
	APPLY(E, "2", cla);
	free(cla);
	accepted();
	http_rt_sync(st);
	http_hc_gen(w, arn_config_gen(st));
	assert_int_equal(http_hc_targets(w), HTTP_HC_MAX_TARGETS);
	crt = http_rt_cluster("web", 3, arn_cfg_hash("web", 3));
	assert_int_equal(arn_stats_counter_value(crt->stats, ARN_CL_health_check_unchecked), 8);
	unsigned failed = 0;
	for (unsigned i = 0; i < HTTP_HC_MAX_TARGETS + 8; i++) {
		struct http_host *h =
		    http_host_find("web", 3, 0xc6120000u | (i / 256) << 8 | (i % 256), 8080);
		assert_non_null(h);
		failed += (__atomic_load_n(&h->hc_flags, __ATOMIC_RELAXED) &
			   HTTP_HOST_FAILED_ACTIVE_HC) != 0;
	}
	assert_int_equal(failed, HTTP_HC_MAX_TARGETS);
	/* and back to a few: the others' targets go */
	APPLY(E, "3", jcla("web", (const int[]){10, 11}, 2));
	accepted();
	http_rt_sync(st);
	http_hc_gen(w, arn_config_gen(st));
	assert_int_equal(http_hc_targets(w), 2);
	http_hc_worker_fini(w);
	fake_worker_free(w);
}

/* An endpoint's health_check_config, as Envoy: its checks go to
 * port_value instead of the endpoint's port, and send its hostname as Host
 * over the check's own (or the cluster's name); a later generation's
 * changes reach the same target. */
static void test_active_hc_endpoint_config(void **state)
{
	(void)state;
	assert_int_equal(arn_stats_set_workers(1), 0);
	APPLY(C, "1", jcluster_eds_hc("web"));
	static const char cla1[] =
	    "{\"cluster_name\":\"web\",\"endpoints\":[{\"lb_endpoints\":["
	    "{\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"198.18.0.10\","
	    "\"port_value\":8080}},\"health_check_config\":{\"port_value\":9901,\"hostname\":"
	    "\"hc.test\"}}},"
	    "{\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"198.18.0.11\","
	    "\"port_value\":8080}}}}]}]}";
	APPLY(E, "1", cla1);
	struct http_worker *w = hc_worker0();
	http_hc_gen(w, arn_config_gen(st));
	assert_int_equal(http_hc_targets(w), 2);
	uint16_t port;
	const char *host;
	struct http_host *h10 = http_host_find("web", 3, IP(10), 8080);
	struct http_host *h11 = http_host_find("web", 3, IP(11), 8080);
	assert_int_equal(http_hc_target_peer(w, h10, &port, &host), 0);
	assert_int_equal(port, 9901);
	assert_string_equal(host, "hc.test");
	assert_int_equal(http_hc_target_peer(w, h11, &port, &host), 0);
	assert_int_equal(port, 8080);
	assert_string_equal(host, "web"); /* no host in the check: the cluster's name */
	/* the next generation moves .10's checks back and .11's elsewhere */
	static const char cla2[] =
	    "{\"cluster_name\":\"web\",\"endpoints\":[{\"lb_endpoints\":["
	    "{\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"198.18.0.10\","
	    "\"port_value\":8080}}}},"
	    "{\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"198.18.0.11\","
	    "\"port_value\":8080}},\"health_check_config\":{\"port_value\":81}}}]}]}";
	APPLY(E, "2", cla2);
	accepted();
	http_rt_sync(st);
	http_hc_gen(w, arn_config_gen(st));
	assert_int_equal(http_hc_target_peer(w, h10, &port, &host), 0);
	assert_int_equal(port, 8080);
	assert_string_equal(host, "web");
	assert_int_equal(http_hc_target_peer(w, h11, &port, &host), 0);
	assert_int_equal(port, 81);
	http_hc_worker_fini(w);
	fake_worker_free(w);
}

/* The targets' table goes with the last cluster that has checks (it once
 * stayed, 4.5 MB, until the worker stopped), and comes back with the next
 * one. */
static void test_active_hc_table_freed_without_checks(void **state)
{
	(void)state;
	assert_int_equal(arn_stats_set_workers(1), 0);
	APPLY(C, "1", jcluster_eds_hc("web"));
	APPLY(E, "1", jcla("web", (const int[]){10, 11}, 2));
	struct http_worker *w = hc_worker0();
	size_t idle = http_hc_mem(w);
	assert_true(idle < 1024);
	http_hc_gen(w, arn_config_gen(st));
	assert_int_equal(http_hc_targets(w), 2);
	assert_true(http_hc_mem(w) > idle + 2 * HTTP_HC_RX_MAX);
	/* a generation without checks */
	APPLY(C, "2", jcluster_eds("web"));
	accepted();
	http_rt_sync(st);
	http_hc_gen(w, arn_config_gen(st));
	assert_int_equal(http_hc_targets(w), 0);
	assert_int_equal(http_hc_mem(w), idle);
	/* the checks again */
	APPLY(C, "3", jcluster_eds_hc("web"));
	accepted();
	http_rt_sync(st);
	http_hc_gen(w, arn_config_gen(st));
	assert_int_equal(http_hc_targets(w), 2);
	assert_true(http_hc_mem(w) > idle + 2 * HTTP_HC_RX_MAX);
	http_hc_worker_fini(w);
	fake_worker_free(w);
}

/* http_pool_get's hint (a connection's last pool) is taken only when it
 * is the pool asked for; otherwise the lookup finds or makes the right one
 * and the hint follows it. */
static void test_pool_hint(void **state)
{
	(void)state;
	assert_int_equal(arn_stats_set_workers(1), 0);
	APPLY(C, "1", jcluster_eds("web"));
	APPLY(E, "1", jcla("web", (const int[]){10, 11}, 2));
	accepted();
	assert_int_equal(http_rt_init(st), 0);
	struct arn_cfg_ref ref = web_ref();
	struct http_cluster_rt *crt = http_rt_cluster(ref.name, ref.len, ref.hash);
	assert_non_null(crt);
	struct http_worker *w = fake_worker(0);
	struct http_pool *a = http_pool_get(w, &ref, crt, IP(10), 8080, NULL);
	struct http_pool *b = http_pool_get(w, &ref, crt, IP(11), 8080, NULL);
	assert_ptr_not_equal(a, b);
	struct http_pool *hint = b; /* another host's */
	assert_ptr_equal(http_pool_get(w, &ref, crt, IP(10), 8080, &hint), a);
	assert_ptr_equal(hint, a);
	assert_ptr_equal(http_pool_get(w, &ref, crt, IP(10), 8080, &hint), a);
	struct http_pool *c = http_pool_get(w, &ref, crt, IP(10), 8081, &hint);
	assert_ptr_equal(hint, c);
	assert_ptr_not_equal(c, a); /* another port: a new pool */
	/* another cluster's pool at the same host */
	struct arn_cfg_ref other = {"web2", 4, arn_cfg_hash("web2", 4)};
	hint = a;
	struct http_pool *o = http_pool_get(w, &other, NULL, IP(10), 8080, &hint);
	assert_ptr_not_equal(o, a);
	assert_ptr_equal(hint, o);
	assert_int_equal(o->cluster_len, 4);
	assert_int_equal(w->n_pools, 4);
	fake_worker_free(w);
}

static void test_host_counts_kept_across_generations_and_in_flight(void **state)
{
	(void)state;
	assert_int_equal(arn_stats_set_workers(2), 0);
	APPLY(C, "1", jcluster_eds("web"));
	APPLY(E, "1", jcla("web", (const int[]){10, 11}, 2));
	accepted();
	assert_int_equal(http_rt_init(st), 0);
	struct arn_cfg_ref ref = web_ref();
	struct http_cluster_rt *crt = http_rt_cluster(ref.name, ref.len, ref.hash);
	assert_non_null(crt);

	/* two workers each send requests to both hosts */
	struct http_worker *w0 = fake_worker(0), *w1 = fake_worker(1);
	struct http_pool *a0 = http_pool_get(w0, &ref, crt, IP(10), 8080, NULL);
	struct http_pool *b0 = http_pool_get(w0, &ref, crt, IP(11), 8080, NULL);
	struct http_pool *a1 = http_pool_get(w1, &ref, crt, IP(10), 8080, NULL);
	assert_non_null(a0->host);
	assert_non_null(b0->host);
	assert_ptr_equal(a0->host, a1->host); /* one host, a slot per worker */
	assert_ptr_not_equal(a0->host, b0->host);
	HTTP_HOST_ADD(http_host_ctr(a0->host, 0), rq_total, 3);
	HTTP_HOST_ADD(http_host_ctr(a0->host, 0), rq_success, 3);
	HTTP_HOST_ADD(http_host_ctr(a1->host, 1), rq_total, 2);
	HTTP_HOST_ADD(http_host_ctr(a1->host, 1), rq_error, 2);
	HTTP_HOST_ADD(http_host_ctr(a1->host, 1), cx_total, 1);
	HTTP_HOST_ADD(http_host_ctr(a1->host, 1), cx_active, 1);
	/* a request to 198.18.0.11 is in flight on worker 0 */
	struct http_host *b = b0->host;
	HTTP_HOST_ADD(http_host_ctr(b, 0), rq_total, 1);
	HTTP_HOST_ADD(http_host_ctr(b, 0), rq_active, 1);
	b0->n_counted = 1;

	struct http_host_ctr s = sum_of(a0->host);
	assert_int_equal(s.rq_total, 5);
	assert_int_equal(s.rq_success, 3);
	assert_int_equal(s.rq_error, 2);
	assert_int_equal(s.cx_active, 1);

	/* /clusters shows the sums (text and Envoy's JSON) */
	struct arn_sb t = ARN_SB_INIT;
	arn_admin_clusters_write_(&t, false);
	want_in(arn_sb_cstr(&t), "web::198.18.0.10:8080::rq_total::5\n");
	want_in(arn_sb_cstr(&t), "web::198.18.0.10:8080::cx_active::1\n");
	want_in(arn_sb_cstr(&t), "web::198.18.0.11:8080::rq_active::1\n");
	arn_sb_reset(&t);
	arn_admin_clusters_write_(&t, true);
	upb_Arena *ar = upb_Arena_New();
	struct arn_sb err = ARN_SB_INIT;
	if (!arn_proto_from_json(t.buf, t.len, arn_proto_msgdef("envoy.admin.v3.Clusters"), ar,
				 &err))
		fail_msg("/clusters?format=json: %s\n%s", arn_sb_cstr(&err), arn_sb_cstr(&t));
	upb_Arena_Free(ar);
	arn_sb_free(&err);
	want_in(arn_sb_cstr(&t), "{\"name\":\"rq_total\",\"value\":\"5\"}");
	want_in(arn_sb_cstr(&t), "{\"type\":\"GAUGE\",\"name\":\"cx_active\",\"value\":\"1\"}");

	/* EDS: 198.18.0.11 leaves, 198.18.0.12 arrives */
	APPLY(E, "2", jcla("web", (const int[]){10, 12}, 2));
	accepted();
	http_rt_sync(st);
	const struct arn_cfg_gen *g = arn_config_gen(st);
	http_pools_sweep(w0, g);
	http_pools_sweep(w1, g);
	/* the host that stayed is the same object with its counts */
	assert_ptr_equal(http_rt_host(crt, IP(10), 8080), a0->host);
	assert_int_equal(sum_of(a0->host).rq_total, 5);
	assert_false(a0->draining);
	/* the new one starts at zero; the removed one is not in the snapshot */
	struct http_host *c = http_rt_host(crt, IP(12), 8080);
	assert_non_null(c);
	assert_int_equal(sum_of(c).rq_total, 0);
	assert_null(http_rt_host(crt, IP(11), 8080));
	/* ... but its pool drains with the request in flight and keeps it */
	assert_true(b0->used);
	assert_true(b0->draining);
	assert_ptr_equal(b0->host, b);
	arn_sb_reset(&t);
	arn_admin_clusters_write_(&t, false);
	want_in(arn_sb_cstr(&t), "web::198.18.0.10:8080::rq_total::5\n");
	want_in(arn_sb_cstr(&t), "web::198.18.0.12:8080::rq_total::0\n");
	assert_null(strstr(arn_sb_cstr(&t), "198.18.0.11"));
	/* several generations later, still alive */
	APPLY(E, "3", jcla("web", (const int[]){10, 12, 13}, 3));
	http_rt_sync(st);
	http_pools_sweep(w0, arn_config_gen(st));
	http_rt_sync(st);

	/* the request finishes: its counters are written (live memory; ASan
	 * would catch a write after free), then the pool lets the host go */
	HTTP_HOST_ADD(http_host_ctr(b, 0), rq_success, 1);
	HTTP_HOST_ADD(http_host_ctr(b, 0), rq_active, -1);
	assert_int_equal(sum_of(b).rq_success, 1);
	size_t before = http_host_count();
	b0->n_counted = 0;
	http_pool_maybe_retire(w0, b0);
	assert_false(b0->used);
	assert_null(b0->host);
	http_rt_sync(st); /* reclaims */
	assert_int_equal(http_host_count(), before - 1);
	assert_null(http_host_find("web", 3, IP(11), 8080));

	/* 198.18.0.11 comes back: a new host, counting from zero */
	APPLY(E, "4", jcla("web", (const int[]){10, 11}, 2));
	http_rt_sync(st);
	http_pools_sweep(w0, arn_config_gen(st));
	struct http_pool *b0n = http_pool_get(w0, &ref, crt, IP(11), 8080, NULL);
	assert_non_null(b0n->host);
	assert_int_equal(sum_of(b0n->host).rq_total, 0);
	assert_int_equal(sum_of(a0->host).rq_total, 5);

	arn_sb_free(&t);
	fake_worker_free(w0);
	fake_worker_free(w1);
}

/* A worker that found a host in a snapshot in this loop iteration may still
 * take its reference after the control lcore published a generation
 * without it: the old snapshot keeps the host until the worker passed a
 * quiescent state. */
static void test_removed_host_waits_for_quiescent_workers(void **state)
{
	(void)state;
	assert_int_equal(arn_stats_set_workers(1), 0);
	APPLY(C, "1", jcluster_eds("web"));
	APPLY(E, "1", jcla("web", (const int[]){10, 11}, 2));
	accepted();
	struct rte_rcu_qsbr *q = arn_config_rcu(st);
	assert_int_equal(rte_rcu_qsbr_thread_register(q, 0), 0);
	rte_rcu_qsbr_thread_online(q, 0);
	assert_int_equal(http_rt_init(st), 0);
	struct arn_cfg_ref ref = web_ref();
	struct http_cluster_rt *crt = http_rt_cluster(ref.name, ref.len, ref.hash);
	rte_rcu_qsbr_quiescent(q, 0);

	struct http_host *b = http_rt_host(crt, IP(11), 8080); /* worker: found it */
	assert_non_null(b);
	APPLY(E, "2", jcla("web", (const int[]){10}, 1)); /* control: it goes */
	accepted();
	http_rt_sync(st);
	http_rt_sync(st);
	/* the worker has not passed a quiescent state: the host is alive */
	assert_ptr_equal(http_host_find("web", 3, IP(11), 8080), b);
	http_host_ref(b); /* still legal in the same iteration */
	HTTP_HOST_ADD(http_host_ctr(b, 0), cx_total, 1);
	rte_rcu_qsbr_quiescent(q, 0);
	http_rt_sync(st); /* the old snapshot goes; the worker's reference remains */
	assert_ptr_equal(http_host_find("web", 3, IP(11), 8080), b);
	assert_int_equal(sum_of(b).cx_total, 1);
	http_host_put(b);
	http_rt_sync(st);
	assert_null(http_host_find("web", 3, IP(11), 8080));

	/* a host nobody took is freed after the grace period alone */
	size_t n = http_host_count();
	APPLY(E, "3", jcla("web", (const int[]){12}, 1));
	http_rt_sync(st);
	assert_int_equal(http_host_count(), n + 1); /* 10 waits for the worker */
	rte_rcu_qsbr_quiescent(q, 0);
	http_rt_sync(st);
	assert_int_equal(http_host_count(), n); /* 10 gone, 12 in */
	assert_null(http_host_find("web", 3, IP(10), 8080));
	rte_rcu_qsbr_thread_offline(q, 0);
	rte_rcu_qsbr_thread_unregister(q, 0);
}

/* ---- removed clusters leave /stats (issue 15) -------------------------------------------- */

static const char *jcluster_static(const char *name)
{
	char *b = jb[njb++ % 8];
	snprintf(b, 4096,
		 "{\"name\":\"%s\",\"type\":\"STATIC\",\"connect_timeout\":\"1s\","
		 "\"load_assignment\":{\"cluster_name\":\"%s\",\"endpoints\":[{\"lb_endpoints\":[{"
		 "\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"198.18.0.10\","
		 "\"port_value\":8080}}}}]}]}}",
		 name, name);
	return b;
}

static void remove_cluster(const char *name)
{
	arn_config_result_free(&res);
	const char *const rm[] = {name};
	assert_int_equal(arn_config_apply(st, C, NULL, 0, rm, 1, 0, &res), 0);
	accepted();
}

static bool has_stat(const char *name)
{
	struct arn_stats_snapshot s;
	assert_int_equal(arn_stats_snapshot_take(&s), 0);
	bool found = false;
	for (size_t i = 0; i < s.n && !found; i++)
		found = strcmp(s.v[i].name, name) == 0;
	arn_stats_snapshot_free(&s);
	return found;
}

/* A removed cluster's cluster.<name>.* stays while something uses it (a
 * stream in flight, a pool draining), then leaves /stats, as in Envoy. */
static void test_removed_cluster_stats_freed_when_unused(void **state)
{
	(void)state;
	assert_int_equal(arn_stats_set_workers(1), 0);
	APPLY(C, "1", jcluster_static("gone"));
	accepted();
	assert_int_equal(http_rt_init(st), 0);
	struct arn_cfg_ref ref = {"gone", 4, arn_cfg_hash("gone", 4)};
	struct http_cluster_rt *crt = http_rt_cluster(ref.name, ref.len, ref.hash);
	/* not assert_non_null alone: cmocka's failure is not noreturn, and
	 * with LTO the compiler saw http_crt_ref's store through NULL
	 * (-Wstringop-overflow) */
	if (!crt) {
		fail_msg("cluster gone has no runtime object");
		return;
	}
	/* a worker routes a stream there and opens a pool */
	http_crt_ref(crt);
	struct http_worker *w = fake_worker(0);
	struct http_pool *p = http_pool_get(w, &ref, crt, IP(10), 8080, NULL);
	assert_non_null(p);
	p->n_counted = 1;
	arn_stats_inc(crt->stats, w->slot, ARN_CL_upstream_rq_total);

	remove_cluster("gone");
	http_rt_sync(st);
	http_pools_sweep(w, arn_config_gen(st));
	http_rt_sync(st);
	assert_null(http_rt_cluster(ref.name, ref.len, ref.hash));
	/* in use: the counters still take writes and still show */
	arn_stats_inc(crt->stats, w->slot, ARN_CL_upstream_rq_completed);
	assert_true(has_stat("cluster.gone.upstream_rq_total"));
	http_crt_put(crt); /* the stream ends */
	http_rt_sync(st);
	assert_true(has_stat("cluster.gone.upstream_rq_total"));
	p->n_counted = 0; /* the pool's last request ends: it retires */
	http_pool_maybe_retire(w, p);
	http_rt_sync(st);
	assert_false(has_stat("cluster.gone.upstream_rq_total"));
	assert_int_equal(http_cluster_count(), 0);
	assert_int_equal(http_host_count(), 0);

	/* added again: new counters */
	APPLY(C, "2", jcluster_static("gone"));
	accepted();
	http_rt_sync(st);
	crt = http_rt_cluster(ref.name, ref.len, ref.hash);
	assert_non_null(crt);
	assert_int_equal(arn_stats_counter_value(crt->stats, ARN_CL_upstream_rq_total), 0);
	fake_worker_free(w);
}

/* http_rt_cluster keeps a worker's last lookup (issue 17): the cache must
 * answer by the name's bytes (a cluster_header's name lives in a request
 * buffer, reused at the same address), never by the hash alone, and must
 * not outlive the snapshot's cluster part (a removed cluster is gone). */
static void test_cluster_lookup_cache(void **state)
{
	(void)state;
	assert_int_equal(arn_stats_set_workers(1), 0);
	APPLY(C, "1", jcluster_static("web"), jcluster_static("two"));
	accepted();
	assert_int_equal(http_rt_init(st), 0);
	char buf[8];
	strcpy(buf, "web");
	struct http_cluster_rt *a = http_rt_cluster(buf, 3, arn_cfg_hash(buf, 3));
	strcpy(buf, "two");
	struct http_cluster_rt *b = http_rt_cluster(buf, 3, arn_cfg_hash(buf, 3));
	assert_non_null(a);
	assert_non_null(b);
	assert_ptr_not_equal(a, b);
	assert_string_equal(a->name, "web");
	assert_string_equal(b->name, "two");
	strcpy(buf, "web"); /* the same buffer, other bytes */
	assert_ptr_equal(http_rt_cluster(buf, 3, arn_cfg_hash(buf, 3)), a);
	assert_ptr_equal(http_rt_cluster(buf, 3, arn_cfg_hash(buf, 3)), a);
	strcpy(buf, "two");
	assert_ptr_equal(http_rt_cluster(buf, 3, arn_cfg_hash(buf, 3)), b);
	/* the cached entry's hash with other bytes, and a prefix of its name */
	strcpy(buf, "twx");
	assert_null(http_rt_cluster(buf, 3, arn_cfg_hash("two", 3)));
	strcpy(buf, "tw");
	assert_null(http_rt_cluster(buf, 2, arn_cfg_hash(buf, 2)));
	strcpy(buf, "two");
	assert_ptr_equal(http_rt_cluster(buf, 3, arn_cfg_hash(buf, 3)), b);
	/* cached, then removed: the next snapshot's lookup misses */
	remove_cluster("two");
	http_rt_sync(st);
	assert_null(http_rt_cluster(buf, 3, arn_cfg_hash(buf, 3)));
	strcpy(buf, "web");
	assert_ptr_equal(http_rt_cluster(buf, 3, arn_cfg_hash(buf, 3)), a);
}

#ifndef CHURN_CYCLES
#define CHURN_CYCLES 100000
#endif

static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
}

/* 100,000 distinct clusters added and removed, one at a time, with the
 * workers' RCU in use: the process's memory stays flat (what remains is
 * the one cluster of the moment). */
static void test_cluster_churn_keeps_memory_flat(void **state)
{
	(void)state;
	assert_int_equal(arn_stats_set_workers(1), 0);
	struct rte_rcu_qsbr *q = arn_config_rcu(st);
	assert_int_equal(rte_rcu_qsbr_thread_register(q, 0), 0);
	rte_rcu_qsbr_thread_online(q, 0);
	assert_int_equal(http_rt_init(st), 0);
	size_t scopes0 = arn_stats_scope_count(), heap_warm = 0;
	char name[32], prev[32] = "";
	for (unsigned i = 0; i < CHURN_CYCLES; i++) {
		snprintf(name, sizeof(name), "churn-%u", i);
		APPLY(C, "1", jcluster_static(name));
		accepted();
		if (*prev)
			remove_cluster(prev);
		http_rt_sync(st);
		rte_rcu_qsbr_quiescent(q, 0); /* the worker's loop */
		arn_config_poll(st);
		memcpy(prev, name, sizeof(prev));
		if (i == CHURN_CYCLES / 10)
			heap_warm = heap_in_use();
	}
	http_rt_sync(st);
	arn_config_poll(st);
	/* what is alive: the last cluster, its host and its scope */
	assert_int_equal(http_cluster_count(), 1);
	assert_int_equal(http_host_count(), 1);
	assert_int_equal(arn_stats_scope_count(), scopes0 + 1);
	char stat[64];
	snprintf(stat, sizeof(stat), "cluster.churn-%u.upstream_rq_total", CHURN_CYCLES - 2);
	assert_false(has_stat(stat));
	size_t heap_end = heap_in_use();
	print_message("  heap in use after %u cycles: %zu bytes (%zu at cycle %u)\n", CHURN_CYCLES,
		      heap_end, heap_warm, CHURN_CYCLES / 10);
	/* mallinfo2 counts nothing under ASan, whose allocator it does not
	 * see; there the counts above and LeakSanitizer speak */
	if (heap_warm > 0)
		assert_true(heap_end < heap_warm + heap_warm / 10);
	rte_rcu_qsbr_thread_offline(q, 0);
	rte_rcu_qsbr_thread_unregister(q, 0);
}

/* /stats: Envoy's per-endpoint names, and their Prometheus form with both
 * tags (envoy_cluster_name, envoy_endpoint_address). */
static void test_host_stats_names(void **state)
{
	(void)state;
	assert_int_equal(arn_stats_set_workers(1), 0);
	APPLY(C, "1", jcluster_eds("web"));
	APPLY(E, "1", jcla("web", (const int[]){10}, 1));
	assert_int_equal(http_rt_init(st), 0);
	struct arn_cfg_ref ref = web_ref();
	struct http_host *h =
	    http_rt_host(http_rt_cluster(ref.name, ref.len, ref.hash), IP(10), 8080);
	assert_non_null(h);
	HTTP_HOST_ADD(http_host_ctr(h, 0), rq_total, 7);
	HTTP_HOST_ADD(http_host_ctr(h, 0), rq_active, 2);
	struct arn_stats_snapshot s;
	assert_int_equal(arn_stats_snapshot_take(&s), 0);
	bool total = false, active = false;
	for (size_t i = 0; i < s.n; i++) {
		if (!strcmp(s.v[i].name, "cluster.web.endpoint.198.18.0.10_8080.rq_total")) {
			total = true;
			assert_int_equal(s.v[i].counter, 7);
			assert_int_equal(s.v[i].kind, ARN_STAT_COUNTER);
		}
		if (!strcmp(s.v[i].name, "cluster.web.endpoint.198.18.0.10_8080.rq_active")) {
			active = true;
			assert_int_equal(s.v[i].gauge, 2);
			assert_int_equal(s.v[i].kind, ARN_STAT_GAUGE);
		}
	}
	assert_true(total && active);
	struct arn_sb out = ARN_SB_INIT;
	assert_int_equal(arn_admin_stats_prometheus_(&s, NULL, &out), 0);
	want_in(arn_sb_cstr(&out), "# TYPE envoy_cluster_endpoint_rq_total counter\n");
	want_in(arn_sb_cstr(&out), "envoy_cluster_endpoint_rq_total{envoy_cluster_name=\"web\","
				   "envoy_endpoint_address=\"198.18.0.10:8080\"} 7\n");
	want_in(arn_sb_cstr(&out), "# TYPE envoy_cluster_endpoint_rq_active gauge\n");
	arn_sb_free(&out);
	arn_stats_snapshot_free(&s);
}

/* ---- the health check filter's conversion ------------------------------------------------ */

#define HCM_AT                                                                                     \
	"\"@type\":\"type.googleapis.com/"                                                         \
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager\""
#define ROUTER                                                                                     \
	"{\"name\":\"envoy.filters.http.router\",\"typed_config\":{\"@type\":\"type.googleapis."   \
	"com/envoy.extensions.filters.http.router.v3.Router\"}}"
#define HC_AT                                                                                      \
	"\"@type\":\"type.googleapis.com/"                                                         \
	"envoy.extensions.filters.http.health_check.v3.HealthCheck\""

/* A listener whose HCM runs @p filters (JSON array members) and a route. */
static const char *jlistener(const char *filters)
{
	char *b = jb[njb++ % 8];
	snprintf(b, 4096,
		 "{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
		 "\"port_value\":80}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","
		 "\"typed_config\":{" HCM_AT ",\"stat_prefix\":\"in\",\"route_config\":{\"name\":"
		 "\"r\",\"virtual_hosts\":[{\"name\":\"vh\",\"domains\":[\"*\"],\"routes\":[{"
		 "\"match\":{\"prefix\":\"/\"},\"direct_response\":{\"status\":200}}]}]},"
		 "\"http_filters\":[%s]}}]}]}",
		 filters);
	return b;
}

static const char *jhc(const char *fields)
{
	char *b = jb[njb++ % 8];
	snprintf(b, 4096,
		 "{\"name\":\"envoy.filters.http.health_check\",\"typed_config\":{" HC_AT "%s%s}}",
		 *fields ? "," : "", fields);
	return b;
}

static char fbuf[2048];
static const char *two(const char *a, const char *b2)
{
	snprintf(fbuf, sizeof(fbuf), "%s,%s", a, b2);
	return fbuf;
}

static const struct arn_cfg_hcm *listener_hcm(void)
{
	const struct arn_cfg_listener *l =
	    arn_cfg_find(arn_config_gen(st), ARN_CFG_LISTENER, "l", 1, arn_cfg_hash("l", 1));
	assert_non_null(l);
	assert_true(l->n_chains == 1);
	return l->chains[0].hcm;
}

#define PATH_HEALTHZ "\"headers\":[{\"name\":\":path\",\"string_match\":{\"exact\":\"/healthz\"}}]"

static void test_hc_filter_converted(void **state)
{
	(void)state;
	APPLY(L, "1", jlistener(two(jhc("\"pass_through_mode\":false," PATH_HEALTHZ), ROUTER)));
	accepted();
	const struct arn_cfg_hcm *h = listener_hcm();
	assert_int_equal(h->n_http_filters, 2);
	assert_int_equal(h->http_filters[0], ARN_CFG_HF_HEALTH_CHECK);
	assert_int_equal(h->http_filters[1], ARN_CFG_HF_ROUTER);
	const struct arn_cfg_hc_filter *f = h->health_check;
	assert_non_null(f);
	assert_false(f->pass_through);
	assert_int_equal(f->cache_time_ms, 0);
	assert_int_equal(f->n_headers, 1);
	assert_string_equal(f->headers[0].name, ":path");
	assert_int_equal(f->n_min_healthy, 0);

	/* the matchers decide which requests are health checks */
	struct arn_cfg_request rq = {
	    .method = "GET", .method_len = 3, .path = "/healthz", .path_len = 8};
	assert_true(arn_cfg_headers_match(f->headers, f->n_headers, &rq));
	rq.path = "/healthz?x=1";
	rq.path_len = 12;
	assert_false(arn_cfg_headers_match(f->headers, f->n_headers, &rq));
	rq.path = "/";
	rq.path_len = 1;
	assert_false(arn_cfg_headers_match(f->headers, f->n_headers, &rq));

	/* pass-through with a cache and cluster percentages (truncated, as Envoy) */
	APPLY(L, "2",
	      jlistener(two(jhc("\"pass_through_mode\":true,\"cache_time\":\"2.5s\","
				"\"cluster_min_healthy_percentages\":{\"web\":{\"value\":50.9},"
				"\"api\":{\"value\":0}},"
				"\"headers\":[{\"name\":\"x-hc\",\"present_match\":true},{\"name\":"
				"\":method\",\"string_match\":{\"exact\":\"GET\"}}]"),
			    ROUTER)));
	accepted();
	f = listener_hcm()->health_check;
	assert_true(f->pass_through);
	assert_int_equal(f->cache_time_ms, 2500);
	assert_int_equal(f->n_headers, 2);
	assert_int_equal(f->n_min_healthy, 2);
	for (size_t i = 0; i < 2; i++) {
		const struct arn_cfg_hc_min_healthy *m = &f->min_healthy[i];
		if (m->cluster.len == 3 && !memcmp(m->cluster.name, "web", 3))
			assert_int_equal(m->percent, 50);
		else
			assert_int_equal(m->percent, 0);
	}

	/* without it, no filter */
	APPLY(L, "3", jlistener(ROUTER));
	accepted();
	assert_null(listener_hcm()->health_check);
}

static void test_hc_filter_refusals(void **state)
{
	(void)state;
	APPLY(L, "1", jlistener(two(jhc(PATH_HEALTHZ), ROUTER)));
	refused_with("pass_through_mode missing", "http_filters[0]|pass_through_mode|missing");
	APPLY(L, "1",
	      jlistener(two(jhc("\"pass_through_mode\":false,\"cache_time\":\"1s\"," PATH_HEALTHZ),
			    ROUTER)));
	refused_with("cache_time without pass-through", "cache_time|pass_through_mode: true");
	APPLY(L, "1", jlistener(two(jhc("\"pass_through_mode\":false"), ROUTER)));
	refused_with("no headers", "headers|empty");
	APPLY(L, "1",
	      jlistener(two(jhc("\"pass_through_mode\":false,\"cluster_min_healthy_percentages\":{"
				"\"web\":{\"value\":150}}," PATH_HEALTHZ),
			    ROUTER)));
	refused_with("percent over 100", "cluster_min_healthy_percentages[web]|between 0 and 100");
	char twice[2048];
	snprintf(twice, sizeof(twice), "%s,%s,%s", jhc("\"pass_through_mode\":false," PATH_HEALTHZ),
		 jhc("\"pass_through_mode\":true," PATH_HEALTHZ), ROUTER);
	APPLY(L, "1", jlistener(twice));
	refused_with("two health check filters", "http_filters[1]|second health_check");
	APPLY(L, "1", jlistener(two(ROUTER, jhc("\"pass_through_mode\":false," PATH_HEALTHZ))));
	refused_with("after the router", "after the router");
	/* a header matcher's own errors are reported at its path */
	APPLY(L, "1",
	      jlistener(two(jhc("\"pass_through_mode\":false,\"headers\":[{\"name\":\":path\","
				"\"range_match\":{\"start\":5,\"end\":1}}]"),
			    ROUTER)));
	refused_with("bad matcher", "headers[0]|range_match");
	/* nothing of it was applied */
	assert_null(
	    arn_cfg_find(arn_config_gen(st), ARN_CFG_LISTENER, "l", 1, arn_cfg_hash("l", 1)));
}

/* ---- what the HCM and route conversion give the proxy (retries, timeouts, paths) ------- */

/* A listener whose HCM has @p hcm_extra (JSON members, may be "") and one
 * virtual host (@p vh_extra members) with one route to "web" (@p ra_extra
 * members of its RouteAction). */
static const char *jproxy(const char *hcm_extra, const char *vh_extra, const char *ra_extra)
{
	char *b = jb[njb++ % 8];
	snprintf(b, 4096,
		 "{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
		 "\"port_value\":80}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","
		 "\"typed_config\":{" HCM_AT
		 ",\"stat_prefix\":\"in\"%s%s,\"route_config\":{\"name\":"
		 "\"r\",\"virtual_hosts\":[{\"name\":\"vh\",\"domains\":[\"*\"]%s%s,\"routes\":[{"
		 "\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"%s%s}}]}]},"
		 "\"http_filters\":[" ROUTER "]}}]}]}",
		 *hcm_extra ? "," : "", hcm_extra, *vh_extra ? "," : "", vh_extra,
		 *ra_extra ? "," : "", ra_extra);
	return b;
}

static const struct arn_cfg_route_action *listener_route(void)
{
	const struct arn_cfg_hcm *h = listener_hcm();
	assert_non_null(h->inline_routes);
	assert_int_equal(h->inline_routes->n_vhosts, 1);
	return &h->inline_routes->vhosts[0].routes[0].route;
}

static void test_proxy_settings_converted(void **state)
{
	(void)state;
	APPLY(L, "1",
	      jproxy("\"request_timeout\":\"3s\",\"request_headers_timeout\":\"0.5s\","
		     "\"normalize_path\":true,\"merge_slashes\":true",
		     "\"include_request_attempt_count\":true,\"retry_policy\":{\"retry_on\":"
		     "\"5xx,connect-failure\",\"num_retries\":4}",
		     "\"idle_timeout\":\"0s\""));
	accepted();
	const struct arn_cfg_hcm *h = listener_hcm();
	assert_int_equal(h->request_timeout_ms, 3000);
	assert_int_equal(h->request_headers_timeout_ms, 500);
	assert_true(h->normalize_path);
	assert_true(h->merge_slashes);
	assert_true(h->inline_routes->vhosts[0].include_request_attempt_count);
	const struct arn_cfg_route_action *a = listener_route();
	/* idle_timeout 0 is given: it turns the stream idle timeout off */
	assert_true(a->idle_timeout_set);
	assert_int_equal(a->idle_timeout_ms, 0);
	/* the virtual host's policy, with Envoy's back-off defaults */
	assert_true(a->retry.present);
	assert_int_equal(a->retry.retry_on, ARN_CFG_RETRY_5XX | ARN_CFG_RETRY_CONNECT_FAILURE);
	assert_int_equal(a->retry.num_retries, 4);
	assert_int_equal(a->retry.backoff_base_ms, 25);
	assert_int_equal(a->retry.backoff_max_ms, 250);

	/* the route's own policy replaces the virtual host's; defaults: off */
	APPLY(L, "2",
	      jproxy("", "\"retry_policy\":{\"retry_on\":\"5xx\"}",
		     "\"retry_policy\":{\"retry_on\":\"retriable-status-codes,reset\","
		     "\"retriable_status_codes\":[429],\"per_try_timeout\":\"0.2s\","
		     "\"per_try_idle_timeout\":\"0.05s\","
		     "\"retry_back_off\":{\"base_interval\":\"0.01s\"}}"));
	accepted();
	h = listener_hcm();
	assert_int_equal(h->request_timeout_ms, 0);
	assert_int_equal(h->request_headers_timeout_ms, 10000); /* Arion's default */
	assert_false(h->normalize_path);
	assert_false(h->merge_slashes);
	a = listener_route();
	assert_false(a->idle_timeout_set);
	assert_int_equal(a->retry.retry_on,
			 ARN_CFG_RETRY_RETRIABLE_STATUS_CODES | ARN_CFG_RETRY_RESET);
	assert_int_equal(a->retry.num_retries, 1);
	assert_int_equal(a->retry.n_retriable_status_codes, 1);
	assert_int_equal(a->retry.retriable_status_codes[0], 429);
	assert_int_equal(a->retry.per_try_timeout_ms, 200);
	assert_int_equal(a->retry.per_try_idle_timeout_ms, 50);
	assert_int_equal(a->retry.backoff_base_ms, 10);
	assert_int_equal(a->retry.backoff_max_ms, 100);
	assert_false(a->retry.previous_hosts);
	assert_int_equal(a->retry.host_selection_retries, 1);

	/* Istio's default retry policy (every route it writes): gRPC
	 * conditions, the previous_hosts predicate (its typed_config, and
	 * the older name-only form) and the re-picks; envoy-ratelimited */
	APPLY(L, "3",
	      jproxy("", "",
		     "\"retry_policy\":{\"retry_on\":\"connect-failure,refused-stream,unavailable,"
		     "cancelled,retriable-status-codes\",\"num_retries\":2,"
		     "\"retriable_status_codes\":[503],\"retry_host_predicate\":[{\"name\":"
		     "\"envoy.retry_host_predicates.previous_hosts\",\"typed_config\":{\"@type\":"
		     "\"type.googleapis.com/envoy.extensions.retry.host.previous_hosts.v3."
		     "PreviousHostsPredicate\"}}],\"host_selection_retry_max_attempts\":\"5\"}"));
	accepted();
	a = listener_route();
	assert_int_equal(a->retry.retry_on,
			 ARN_CFG_RETRY_CONNECT_FAILURE | ARN_CFG_RETRY_REFUSED_STREAM |
			     ARN_CFG_RETRY_GRPC_UNAVAILABLE | ARN_CFG_RETRY_GRPC_CANCELLED |
			     ARN_CFG_RETRY_RETRIABLE_STATUS_CODES);
	assert_true(a->retry.previous_hosts);
	assert_int_equal(a->retry.host_selection_retries, 5);
	APPLY(L, "4",
	      jproxy("", "",
		     "\"retry_policy\":{\"retry_on\":\"envoy-ratelimited,deadline-exceeded,"
		     "internal,resource-exhausted\",\"retry_host_predicate\":[{\"name\":"
		     "\"envoy.retry_host_predicates.previous_hosts\"},{\"name\":"
		     "\"envoy.retry_host_predicates.omit_canary_hosts\"}]}"));
	accepted();
	a = listener_route();
	assert_int_equal(a->retry.retry_on,
			 ARN_CFG_RETRY_ENVOY_RATELIMITED | ARN_CFG_RETRY_GRPC_DEADLINE_EXCEEDED |
			     ARN_CFG_RETRY_GRPC_INTERNAL | ARN_CFG_RETRY_GRPC_RESOURCE_EXHAUSTED);
	assert_true(a->retry.previous_hosts);
	/* retriable-headers with its matchers, and the request's */
	APPLY(L, "5",
	      jproxy("", "",
		     "\"retry_policy\":{\"retry_on\":\"retriable-headers\",\"retriable_headers\":"
		     "[{\"name\":\"X-Retry\",\"present_match\":true}],"
		     "\"retriable_request_headers\":[{\"name\":\":method\",\"string_match\":"
		     "{\"exact\":\"GET\"}}]}"));
	accepted();
	a = listener_route();
	assert_int_equal(a->retry.retry_on, ARN_CFG_RETRY_RETRIABLE_HEADERS);
	assert_int_equal(a->retry.n_retriable_headers, 1);
	assert_string_equal(a->retry.retriable_headers[0].name, "x-retry");
	assert_int_equal(a->retry.n_retriable_request_headers, 1);
}

static void test_proxy_settings_refused(void **state)
{
	(void)state;
	/* what the proxy does not do is refused by name, never ignored */
	char many[2048];
	size_t k = (size_t)snprintf(many, sizeof(many),
				    "\"retry_policy\":{\"retry_on\":\"retriable-headers\","
				    "\"retriable_headers\":[");
	for (int i = 0; i <= ARN_CFG_RETRY_HEADERS_MAX; i++)
		k += (size_t)snprintf(many + k, sizeof(many) - k, "%s{\"name\":\"x%d\"}", i ? "," : "",
				      i);
	snprintf(many + k, sizeof(many) - k, "]}");
	APPLY(L, "1", jproxy("", "", many));
	refused_with("retriable_headers", "retriable_headers|17 matchers|at most 16");
	APPLY(L, "1",
	      jproxy("", "",
		     "\"retry_policy\":{\"retry_on\":\"5xx\",\"retry_host_predicate\":[{\"name\":"
		     "\"envoy.retry_host_predicates.omit_host_metadata\"}]}"));
	refused_with("retry_host_predicate", "retry_host_predicate[0]|omit_host_metadata|not "
					     "supported");
	APPLY(L, "1",
	      jproxy("", "",
		     "\"retry_policy\":{\"retry_on\":\"5xx\","
		     "\"host_selection_retry_max_attempts\":17}"));
	refused_with("host_selection_retry_max_attempts", "host_selection_retry_max_attempts|17");
	APPLY(L, "1", jproxy("", "\"include_attempt_count_in_response\":true", ""));
	refused_with("include_attempt_count_in_response", "include_attempt_count_in_response");
	/* every path_with_escaped_slashes_action and
	 * headers_with_underscores_action (test_hcm_tcp runs them) */
	static const char *const esc[] = {"KEEP_UNCHANGED", "REJECT_REQUEST",
					  "UNESCAPE_AND_REDIRECT", "UNESCAPE_AND_FORWARD",
					  "IMPLEMENTATION_SPECIFIC_DEFAULT"};
	for (size_t i = 0; i < sizeof(esc) / sizeof(esc[0]); i++) {
		char f[128];
		snprintf(f, sizeof(f), "\"path_with_escaped_slashes_action\":\"%s\"", esc[i]);
		APPLY(L, "1", jproxy(f, "", ""));
		accepted();
	}
	static const char *const us[] = {"ALLOW", "REJECT_REQUEST", "DROP_HEADER"};
	for (size_t i = 0; i < sizeof(us) / sizeof(us[0]); i++) {
		char f[160];
		snprintf(f, sizeof(f),
			 "\"common_http_protocol_options\":{\"headers_with_underscores_action\":"
			 "\"%s\"}",
			 us[i]);
		APPLY(L, "1", jproxy(f, "", ""));
		accepted();
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_pool_hint, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_active_hc_targets_follow_generations, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_active_hc_many_hosts, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_active_hc_endpoint_config, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_active_hc_intervals_converted, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_active_hc_table_freed_without_checks, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_host_counts_kept_across_generations_and_in_flight,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_removed_host_waits_for_quiescent_workers, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_host_stats_names, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_removed_cluster_stats_freed_when_unused, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_cluster_churn_keeps_memory_flat, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cluster_lookup_cache, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_hc_filter_converted, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_hc_filter_refusals, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_proxy_settings_converted, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_proxy_settings_refused, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
