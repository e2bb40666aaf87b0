/*
 * lib/config benchmark (reports, never gates):
 *
 *  1. 10,000 clusters: time and memory to apply one changed cluster (one
 *     batch of one resource: decode, convert, path-copy the trie, publish)
 *     against rebuilding all of them (one batch of 10,000 updates).
 *  2. Matching a request against a 1,000-route table (prefix routes with
 *     a few header and regex routes), first, middle and last routes, and
 *     no match.
 *
 *   bench_config [N_CLUSTERS] [N_ROUTES]     (N_CLUSTERS 0: routes only)
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_rcu_qsbr.h>

#include "arn_config.h"
#include "arn_log.h"
#include "arn_proto.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t heap_bytes(void)
{
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
}

struct res {
	char name[32];
	char *bytes;
	size_t len;
};

static void encode(const char *type, const char *json, struct res *r)
{
	upb_Arena *a = upb_Arena_New();
	struct arn_sb err = ARN_SB_INIT;
	const upb_MessageDef *md = arn_proto_msgdef(type);
	upb_Message *m = arn_proto_from_json(json, strlen(json), md, a, &err);
	if (!m) {
		fprintf(stderr, "bad JSON: %s\n", arn_sb_cstr(&err));
		exit(1);
	}
	size_t n;
	char *b = arn_proto_encode(m, md, a, &n);
	r->bytes = malloc(n);
	memcpy(r->bytes, b, n);
	r->len = n;
	upb_Arena_Free(a);
	arn_sb_free(&err);
}

static void cluster_json(char *buf, size_t cap, int i, int variant)
{
	snprintf(
	    buf, cap,
	    "{\"name\":\"cluster-%05d\",\"type\":\"STATIC\",\"connect_timeout\":\"0.%03ds\","
	    "\"lb_policy\":\"LEAST_REQUEST\",\"circuit_breakers\":{\"thresholds\":[{\"max_"
	    "connections\":%d}]},"
	    "\"health_checks\":[{\"timeout\":\"1s\",\"interval\":\"5s\",\"healthy_threshold\":2,"
	    "\"unhealthy_threshold\":3,\"http_health_check\":{\"path\":\"/healthz\"}}],"
	    "\"load_assignment\":{\"cluster_name\":\"cluster-%05d\",\"endpoints\":[{\"lb_"
	    "endpoints\":["
	    "{\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"10.%d.%d.1\",\"port_"
	    "value\":8080}}}},"
	    "{\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"10.%d.%d.2\",\"port_"
	    "value\":8080}}}}]}]}}",
	    i, 100 + variant % 900, 1000 + variant, i, i / 250, i % 250, i / 250, i % 250);
}

static void apply(struct arn_config_store *s, const char *url, struct res *r, size_t n)
{
	struct arn_config_resource_in *in = calloc(n, sizeof(*in));
	for (size_t i = 0; i < n; i++)
		in[i] = (struct arn_config_resource_in){r[i].name, "1", r[i].bytes, r[i].len};
	struct arn_config_result res;
	if (arn_config_apply(s, url, in, n, NULL, 0, 0, &res) != 0 || !res.accepted ||
	    res.n_errors) {
		fprintf(stderr, "apply failed: %s\n", res.n_errors ? res.errors[0].message : "?");
		exit(1);
	}
	arn_config_result_free(&res);
	free(in);
	arn_config_poll(s); /* no workers: the previous generation is freed now */
}

static void bench_clusters(int n)
{
	struct arn_config_store *s = arn_config_create(NULL);
	struct res *all = calloc((size_t)n, sizeof(*all));
	char buf[2048];
	for (int i = 0; i < n; i++) {
		cluster_json(buf, sizeof(buf), i, 0);
		snprintf(all[i].name, sizeof(all[i].name), "cluster-%05d", i);
		encode("envoy.config.cluster.v3.Cluster", buf, &all[i]);
	}
	size_t m0 = heap_bytes();
	double t0 = now_s();
	apply(s, ARN_TYPE_URL_CLUSTER, all, (size_t)n);
	double t_first = now_s() - t0;
	size_t m_first = heap_bytes() - m0;

	/* one changed cluster, many times */
	enum { REPS = 2000 };
	struct res *one = calloc(REPS, sizeof(*one));
	for (int k = 0; k < REPS; k++) {
		int i = (k * 7919) % n;
		cluster_json(buf, sizeof(buf), i, k + 1);
		snprintf(one[k].name, sizeof(one[k].name), "cluster-%05d", i);
		encode("envoy.config.cluster.v3.Cluster", buf, &one[k]);
	}
	size_t m1 = heap_bytes();
	t0 = now_s();
	for (int k = 0; k < REPS; k++)
		apply(s, ARN_TYPE_URL_CLUSTER, &one[k], 1);
	double t_one = (now_s() - t0) / REPS;
	long m_one = (long)heap_bytes() - (long)m1;

	/* memory held by a generation that is still referenced: publish one
	 * change while a worker is registered and has not passed a quiescent
	 * state, so the old generation stays alive next to the new one */
	struct rte_rcu_qsbr *v = arn_config_rcu(s);
	rte_rcu_qsbr_thread_register(v, 1);
	rte_rcu_qsbr_thread_online(v, 1);
	struct arn_config_stats st;
	size_t m2 = heap_bytes();
	cluster_json(buf, sizeof(buf), 5, 424242);
	struct res extra;
	snprintf(extra.name, sizeof(extra.name), "cluster-%05d", 5);
	encode("envoy.config.cluster.v3.Cluster", buf, &extra);
	size_t m2b = heap_bytes();
	apply(s, ARN_TYPE_URL_CLUSTER, &extra, 1);
	size_t m_gen_one = heap_bytes() - m2b;
	(void)m2;
	rte_rcu_qsbr_thread_offline(v, 1);
	rte_rcu_qsbr_thread_unregister(v, 1);
	arn_config_poll(s);

	/* rebuild all: every cluster updated in one batch */
	for (int i = 0; i < n; i++) {
		free(all[i].bytes);
		cluster_json(buf, sizeof(buf), i, 7);
		encode("envoy.config.cluster.v3.Cluster", buf, &all[i]);
	}
	rte_rcu_qsbr_thread_register(v, 1);
	rte_rcu_qsbr_thread_online(v, 1);
	size_t m3 = heap_bytes();
	t0 = now_s();
	apply(s, ARN_TYPE_URL_CLUSTER, all, (size_t)n);
	double t_all = now_s() - t0;
	size_t m_gen_all = heap_bytes() - m3;
	rte_rcu_qsbr_thread_offline(v, 1);
	rte_rcu_qsbr_thread_unregister(v, 1);
	arn_config_poll(s);
	arn_config_get_stats(s, &st);

	printf("clusters: %d\n", n);
	printf("  first load (one batch of %d):      %10.3f ms, %8.1f KiB heap\n", n, t_first * 1e3,
	       (double)m_first / 1024);
	printf("  apply 1 changed cluster of %d:     %10.3f us per apply (mean of %d), heap drift "
	       "%ld B\n",
	       n, t_one * 1e6, REPS, m_one);
	printf("    memory a 1-cluster generation adds while the old one is held: %zu B\n",
	       m_gen_one);
	printf("  rebuild all %d (one batch):         %10.3f ms, %8.1f KiB while the old one is "
	       "held\n",
	       n, t_all * 1e3, (double)m_gen_all / 1024);
	printf("  ratio rebuild-all / one-change:     %10.0fx time, %10.0fx memory\n",
	       t_all / t_one, (double)m_gen_all / (double)(m_gen_one ? m_gen_one : 1));
	printf("  generations published: %llu\n", (unsigned long long)st.generations_published);
	for (int i = 0; i < n; i++)
		free(all[i].bytes);
	for (int k = 0; k < REPS; k++)
		free(one[k].bytes);
	free(extra.bytes);
	free(all);
	free(one);
	arn_config_destroy(s);
}

static void bench_routes(int n)
{
	struct arn_config_store *s = arn_config_create(NULL);
	size_t cap = (size_t)n * 256 + 1024;
	char *j = malloc(cap);
	size_t o = (size_t)snprintf(j, cap,
				    "{\"name\":\"big\",\"virtual_hosts\":[{\"name\":\"v\","
				    "\"domains\":[\"*\"],\"routes\":[");
	for (int i = 0; i < n; i++) {
		const char *extra = "";
		char e[128] = "";
		if (i % 100 == 50) {
			snprintf(e, sizeof(e),
				 ",\"headers\":[{\"name\":\"x-tenant\",\"string_match\":{\"exact\":"
				 "\"t%d\"}}]",
				 i);
			extra = e;
		}
		if (i % 100 == 75)
			o += (size_t)snprintf(
			    j + o, cap - o,
			    "%s{\"match\":{\"safe_regex\":{\"regex\":\"/re%d/[a-z]+/[0-9]+\"}},"
			    "\"route\":{\"cluster\":\"c%d\"}}",
			    i ? "," : "", i, i % 50);
		else
			o += (size_t)snprintf(j + o, cap - o,
					      "%s{\"match\":{\"prefix\":\"/svc%04d/"
					      "\"%s},\"route\":{\"cluster\":\"c%d\"}}",
					      i ? "," : "", i, extra, i % 50);
	}
	snprintf(j + o, cap - o, "]}]}");
	struct res r;
	snprintf(r.name, sizeof(r.name), "big");
	encode("envoy.config.route.v3.RouteConfiguration", j, &r);
	double t0 = now_s();
	apply(s, ARN_TYPE_URL_ROUTE, &r, 1);
	double t_first = now_s() - t0;
	/* RDS's unit is the whole RouteConfiguration: one route changes its
	 * cluster, and all n routes arrive again */
	enum { RREPS = 5 };
	struct res again[RREPS];
	char *at = strstr(j, "\"cluster\":\"c");
	for (int k = 0; k < RREPS; k++) {
		at[12] = (char)('a' + k);
		snprintf(again[k].name, sizeof(again[k].name), "big");
		encode("envoy.config.route.v3.RouteConfiguration", j, &again[k]);
	}
	free(j);
	t0 = now_s();
	for (int k = 0; k < RREPS; k++)
		apply(s, ARN_TYPE_URL_ROUTE, &again[k], 1);
	double t_again = (now_s() - t0) / RREPS;
	for (int k = 0; k < RREPS; k++)
		free(again[k].bytes);
	printf("routes: %d in one RouteConfiguration: first load %.3f ms, one route changed "
	       "(all %d sent again) %.3f ms per apply (mean of %d)\n",
	       n, t_first * 1e3, n, t_again * 1e3, RREPS);
	const struct arn_cfg_route_table *rt =
	    arn_cfg_find(arn_config_gen(s), ARN_CFG_ROUTE, "big", 3, arn_cfg_hash("big", 3));
	struct {
		const char *what;
		char path[64];
	} cases[4] = {
	    {"first route", ""}, {"middle route", ""}, {"last route", ""}, {"no match", ""}};
	snprintf(cases[0].path, 64, "/svc0000/users/42");
	snprintf(cases[1].path, 64, "/svc%04d/users/42", n / 2);
	snprintf(cases[2].path, 64, "/svc%04d/users/42", n - 1);
	snprintf(cases[3].path, 64, "/nothing/here");
	printf("routes: %d in one virtual host (1%% header-matched, 1%% regex)\n", n);
	for (int c = 0; c < 4; c++) {
		struct arn_cfg_header h = {"x-tenant", 8, "none", 4};
		struct arn_cfg_request req = {.method = "GET",
					      .method_len = 3,
					      .authority = "a.example.com",
					      .authority_len = 13,
					      .path = cases[c].path,
					      .path_len = strlen(cases[c].path),
					      .headers = &h,
					      .n_headers = 1};
		struct arn_cfg_route_match m;
		int iters = 20000;
		int hits = 0;
		t0 = now_s();
		for (int k = 0; k < iters; k++)
			hits += arn_cfg_route_match(rt, &req, &m) == 0;
		double t = (now_s() - t0) / iters;
		printf("  %-13s %-22s %8.0f ns per match (%s)\n", cases[c].what, cases[c].path,
		       t * 1e9, hits ? "matched" : "404");
	}
	free(r.bytes);
	arn_config_destroy(s);
}

int main(int argc, char **argv)
{
	arn_log_set_spec("error", NULL);
	arn_proto_init();
	int nc = argc > 1 ? atoi(argv[1]) : 10000;
	int nr = argc > 2 ? atoi(argv[2]) : 1000;
	if (nc > 0) /* 0: routes only (e.g. under callgrind) */
		bench_clusters(nc);
	bench_routes(nr);
	return 0;
}
