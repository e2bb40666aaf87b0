/*
 * Publication under readers: the control thread publishes 10,000+
 * generations while two worker threads (plain pthreads registered on the
 * store's rte_rcu_qsbr, as lib/net's lcores are) look up listeners, routes
 * and clusters in a loop, pinning some across iterations. Run under
 * AddressSanitizer, any use of a freed generation or object is an error.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_rcu_qsbr.h>

#include "arn_proto.h"
#include "tc.h"

#define NCLUSTERS 10
#define GENERATIONS 10000

static volatile int stop_flag;

struct worker {
	pthread_t th;
	unsigned id;
	uint64_t iterations, pins;
	const char *error;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct rte_rcu_qsbr *v = arn_config_rcu(st);
	rte_rcu_qsbr_thread_register(v, w->id);
	rte_rcu_qsbr_thread_online(v, w->id);
	struct arn_cfg_cluster_view held[4] = {0};
	unsigned long r = w->id;
	char path[32];
	while (!__atomic_load_n(&stop_flag, __ATOMIC_ACQUIRE) && !w->error) {
		const struct arn_cfg_gen *g = arn_config_gen(st);
		const struct arn_cfg_listener *l = arn_cfg_listener_find(g, 0x0a000001, 80);
		if (!l) {
			w->error = "listener missing";
			break;
		}
		const struct arn_cfg_route_table *rt = arn_cfg_hcm_routes(g, l->chains[0].hcm);
		if (!rt) {
			w->error = "route table missing";
			break;
		}
		r = r * 6364136223846793005ul + 1442695040888963407ul;
		snprintf(path, sizeof(path), "/c%lu/x", (r >> 33) % NCLUSTERS);
		struct arn_cfg_request req = {.method = "GET",
					      .method_len = 3,
					      .authority = "h",
					      .authority_len = 1,
					      .path = path,
					      .path_len = strlen(path),
					      .random = r};
		struct arn_cfg_route_match m;
		struct arn_cfg_ref cref;
		struct arn_cfg_cluster_view cv;
		if (arn_cfg_route_match(rt, &req, &m) != 0 ||
		    arn_cfg_route_cluster(&m.route->route, &req, &cref) != 0) {
			w->error = "no route";
			break;
		}
		if (arn_cfg_cluster_resolve(g, &cref, &cv) != 0) {
			w->error = "cluster missing";
			break;
		}
		if (cv.cluster->connect_timeout_ms == 0 || cv.cluster->connect_timeout_ms > 1000 ||
		    cv.endpoints->n_endpoints != 1 ||
		    cv.endpoints->priorities[0].localities[0].endpoints[0].port == 0) {
			w->error = "inconsistent cluster";
			break;
		}
		/* an "in-flight request": pinned across iterations, released later */
		unsigned slot = (unsigned)(r >> 40) % 4;
		if (held[slot].cluster) {
			if (held[slot].cluster->connect_timeout_ms == 0)
				w->error = "pinned cluster changed";
			arn_cfg_unpin(held[slot].endpoints);
			arn_cfg_unpin(held[slot].cluster);
			held[slot].cluster = NULL;
		} else {
			arn_cfg_pin(cv.cluster);
			arn_cfg_pin(cv.endpoints);
			held[slot] = cv;
			w->pins++;
		}
		w->iterations++;
		rte_rcu_qsbr_quiescent(v, w->id);
	}
	for (int i = 0; i < 4; i++)
		if (held[i].cluster) {
			arn_cfg_unpin(held[i].endpoints);
			arn_cfg_unpin(held[i].cluster);
		}
	rte_rcu_qsbr_thread_offline(v, w->id);
	rte_rcu_qsbr_thread_unregister(v, w->id);
	return NULL;
}

static const char *route_json(int variant)
{
	static char b[8192];
	int n = snprintf(b, sizeof(b),
			 "{\"name\":\"r\",\"virtual_hosts\":[{\"name\":\"v%d\","
			 "\"domains\":[\"*\"],\"routes\":[",
			 variant);
	for (int i = 0; i < NCLUSTERS; i++)
		n += snprintf(b + n, sizeof(b) - (size_t)n,
			      "%s{\"match\":{\"prefix\":\"/c%d/\"},\"route\":{\"cluster\":\"c%d\","
			      "\"timeout\":\"%ds\"}}",
			      i ? "," : "", i, i, 1 + variant % 30);
	snprintf(b + n, sizeof(b) - (size_t)n, "]}]}");
	return b;
}

static void test_stress_publish_under_readers(void **state)
{
	(void)state;
	arn_config_set_clock(st, NULL, NULL);
	char names[NCLUSTERS][8];
	for (int i = 0; i < NCLUSTERS; i++) {
		snprintf(names[i], sizeof(names[i]), "c%d", i);
		APPLY(C, tj_cluster_static(names[i], "10.0.0.1", 80));
	}
	APPLY(R, route_json(0));
	APPLY(L, tj_listener_rds("l", 80, "r"));
	assert_non_null(listener("l"));
	struct worker w[2] = {{.id = 1}, {.id = 2}};
	stop_flag = 0;
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&w[i].th, NULL, worker_main, &w[i]), 0);
	struct arn_config_stats s0, s1;
	arn_config_get_stats(st, &s0);
	uint64_t last_token = 0;
	char cj[1024];
	for (int i = 0; i < GENERATIONS && !w[0].error && !w[1].error; i++) {
		if (i % 100 == 99) {
			APPLY(R, route_json(i));
		} else if (i % 1000 == 999) {
			APPLY(L, tj_listener_rds("l", 80, "r"));
		} else {
			int c = i % NCLUSTERS;
			snprintf(
			    cj, sizeof(cj),
			    "{\"name\":\"c%d\",\"type\":\"STATIC\",\"connect_timeout\":\"0.%03ds\","
			    "\"load_assignment\":{\"cluster_name\":\"c%d\",\"endpoints\":[{\"lb_"
			    "endpoints\":"
			    "[{\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"10.0.0."
			    "%d\","
			    "\"port_value\":%d}}}}]}]}}",
			    c, 1 + i % 999, c, 1 + i % 200, 1 + i % 60000);
			APPLY(C, cj);
		}
		assert_true(tc_res.accepted && tc_res.n_errors == 0);
		assert_true(tc_res.published);
		last_token = tc_res.token;
		arn_config_poll(st);
	}
	/* the workers acknowledge the last publication by themselves */
	for (int spin = 0; spin < 100000 && !arn_config_acked(st, last_token); spin++)
		sched_yield();
	__atomic_store_n(&stop_flag, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++)
		pthread_join(w[i].th, NULL);
	if (w[0].error || w[1].error)
		fail_msg("worker error: %s / %s", w[0].error ? w[0].error : "-",
			 w[1].error ? w[1].error : "-");
	assert_true(arn_config_acked(st, last_token));
	arn_config_poll(st);
	arn_config_get_stats(st, &s1);
	assert_true(s1.generations_published - s0.generations_published >= GENERATIONS);
	assert_int_equal(s1.generations_pending, 0);
	print_message("  %llu generations; workers: %llu + %llu lookups, %llu + %llu pins\n",
		      (unsigned long long)(s1.generations_published - s0.generations_published),
		      (unsigned long long)w[0].iterations, (unsigned long long)w[1].iterations,
		      (unsigned long long)w[0].pins, (unsigned long long)w[1].pins);
	assert_true(w[0].iterations > 0 && w[1].iterations > 0);
}

const struct CMUnitTest stress_tests[] = {
    TC(test_stress_publish_under_readers),
};
const size_t n_stress_tests = sizeof(stress_tests) / sizeof(stress_tests[0]);
