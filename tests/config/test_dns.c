/*
 * STRICT_DNS and LOGICAL_DNS clusters (lib/config/dns.c, conv_dns.c) with a
 * fake resolver (no network): the names resolve on the store's resolver
 * threads, the tests poll the store until the answers they wait for are
 * counted (events, not time) and look at the endpoints published.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arn_bootstrap.h"
#include "tc.h"

#define IP(a, b, c, d) (((uint32_t)(a) << 24) | ((uint32_t)(b) << 16) | ((uint32_t)(c) << 8) | (d))

/* the fake DNS: one answer for every name, set by the test */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int rc; /* >= 0: addresses; < 0: failure */
	uint32_t addrs[64];
	bool gated; /* calls wait until the gate opens */
	int calls, waiting;
	int last_family;
	uint32_t ttl;
	char last_host[256];
} fake = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER};

static int fake_resolve(void *ctx, const char *host, int family, uint32_t *out, size_t max,
			uint32_t *ttl_s)
{
	(void)ctx;
	pthread_mutex_lock(&fake.mu);
	fake.calls++;
	fake.last_family = family;
	snprintf(fake.last_host, sizeof(fake.last_host), "%s", host);
	fake.waiting++;
	pthread_cond_broadcast(&fake.cv);
	while (fake.gated)
		pthread_cond_wait(&fake.cv, &fake.mu);
	fake.waiting--;
	int rc = fake.rc;
	*ttl_s = fake.ttl;
	for (int i = 0; i < rc && (size_t)i < max; i++)
		out[i] = fake.addrs[i];
	pthread_mutex_unlock(&fake.mu);
	return rc;
}

static void answer(int rc, const uint32_t *a)
{
	pthread_mutex_lock(&fake.mu);
	fake.rc = rc;
	for (int i = 0; i < rc && i < 64; i++)
		fake.addrs[i] = a[i];
	pthread_mutex_unlock(&fake.mu);
}

static void gate(bool closed)
{
	pthread_mutex_lock(&fake.mu);
	fake.gated = closed;
	pthread_cond_broadcast(&fake.cv);
	pthread_mutex_unlock(&fake.mu);
}

/* wait (in events) until @p n calls sit in the fake */
static void wait_waiting(int n)
{
	pthread_mutex_lock(&fake.mu);
	while (fake.waiting < n)
		pthread_cond_wait(&fake.cv, &fake.mu);
	pthread_mutex_unlock(&fake.mu);
}

static struct arn_config_stats stats(void)
{
	struct arn_config_stats s;
	arn_config_get_stats(st, &s);
	return s;
}

/* poll until @p n answers (successes and failures) were taken in */
static void settle(uint64_t n)
{
	for (long i = 0; i < 2000000; i++) {
		arn_config_poll(st);
		struct arn_config_stats s = stats();
		if (s.dns_update_success + s.dns_update_failure >= n)
			return;
		sched_yield();
	}
	fail_msg("the resolver did not answer %llu times", (unsigned long long)n);
}

static int dns_setup(void **state)
{
	tc_setup(state);
	memset(fake.addrs, 0, sizeof(fake.addrs));
	fake.rc = 0;
	fake.gated = false;
	fake.calls = fake.waiting = 0;
	fake.last_family = -1;
	fake.ttl = 0;
	arn_config_set_dns_resolver(fake_resolve, NULL);
	return 0;
}

static int dns_teardown(void **state)
{
	gate(false);
	tc_teardown(state);
	arn_config_set_dns_resolver(NULL, NULL);
	return 0;
}

/* endpoints of cluster @p name in the current generation: count, and
 * the first @p max as address and port */
static size_t eps(const char *name, const struct arn_cfg_endpoint **out, size_t max)
{
	struct arn_cfg_ref ref = {name, strlen(name), arn_cfg_hash(name, strlen(name))};
	struct arn_cfg_cluster_view v;
	if (arn_cfg_cluster_resolve(gen(), &ref, &v) != 0)
		return (size_t)-1;
	size_t n = 0;
	for (size_t p = 0; p < v.endpoints->n_priorities; p++)
		for (size_t l = 0; l < v.endpoints->priorities[p].n_localities; l++) {
			const struct arn_cfg_locality *lo =
			    &v.endpoints->priorities[p].localities[l];
			for (size_t e = 0; e < lo->n_endpoints; e++, n++)
				if (n < max)
					out[n] = &lo->endpoints[e];
		}
	return n;
}

static bool has_addr(const struct arn_cfg_endpoint **e, size_t n, uint32_t a)
{
	for (size_t i = 0; i < n; i++)
		if (e[i]->addr == a)
			return true;
	return false;
}

static char json[8192];

static const char *dns_cluster(const char *name, const char *type, const char *extra,
			       const char *hosts)
{
	snprintf(json, sizeof(json),
		 "{\"name\":\"%s\",\"type\":\"%s\",\"connect_timeout\":\"1s\"%s,"
		 "\"load_assignment\":{\"cluster_name\":\"%s\",\"endpoints\":[{\"lb_endpoints\":"
		 "[%s]}]}}",
		 name, type, extra, name, hosts);
	return json;
}

#define HOST(h, port)                                                                              \
	"{\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"" h                         \
	"\",\"port_value\":" #port "}}}}"

/* The store's cluster update events (Envoy's cluster.<name>.update_*),
 * as lib/http counts them; a SUCCESS seen while the cluster was not yet in
 * the generation workers read would be lost there. */
static unsigned upd[ARN_CONFIG_UPDATE_NO_REBUILD + 1];
static unsigned upd_unpublished;

static void upd_cb(void *ctx, const char *name, enum arn_config_cluster_update u)
{
	(void)ctx;
	assert_string_equal(name, "web");
	upd[u]++;
	if (!cluster("web"))
		upd_unpublished++;
}

static unsigned upd_all;

static void upd_count(void *ctx, const char *name, enum arn_config_cluster_update u)
{
	(void)ctx;
	(void)name;
	(void)u;
	upd_all++;
}

/* The updates waiting for a warming cluster are bounded in entries
 * (4,096): a control plane that keeps sending a warming cluster refused
 * ClusterLoadAssignments (an attempt and a rejection each) queues no more,
 * and once the cluster is in force exactly the bound is told. */
static void test_cluster_update_queue_bounded(void **state)
{
	(void)state;
	upd_all = 0;
	arn_config_set_cluster_update_cb(st, upd_count, NULL);
	APPLY(C, tj_cluster_eds("w", "1s"));
	assert_null(cluster("w")); /* warming on its endpoints */
	static const char bad[] = "{\"cluster_name\":\"w\",\"endpoints\":[{\"lb_endpoints\":[{"
				  "\"endpoint\":{\"address\":{\"socket_address\":{\"address\":"
				  "\"no.such.name\",\"port_value\":80}}}}]}]}";
	for (int i = 0; i < 2100; i++) {
		APPLY(E, bad);
		assert_false(tc_res.accepted);
	}
	assert_int_equal(upd_all, 0); /* none told while it warms */
	APPLY(E, "{\"cluster_name\":\"w\",\"endpoints\":[{\"lb_endpoints\":[{\"endpoint\":{"
		 "\"address\":{\"socket_address\":{\"address\":\"198.18.0.1\",\"port_value\":80}}}}]}]}");
	assert_true(tc_res.accepted);
	assert_non_null(cluster("w"));
	assert_int_equal(upd_all, 4096);
	/* and the queue is free again: the next update is told */
	APPLY(E, "{\"cluster_name\":\"w\",\"endpoints\":[]}");
	assert_int_equal(upd_all, 4096 + 2);
}

/* STRICT_DNS: every address of the name, each with the endpoint's port
 * and weight; a change follows; a failure keeps the last hosts; an answer
 * with no address removes them (Envoy's strict_dns_cluster.cc). */
static void test_dns_strict_follows_answers(void **state)
{
	(void)state;
	memset(upd, 0, sizeof(upd));
	upd_unpublished = 0;
	arn_config_set_cluster_update_cb(st, upd_cb, NULL);
	answer(2, (uint32_t[]){IP(198, 18, 0, 1), IP(198, 18, 0, 2)});
	APPLY(C, dns_cluster("web", "STRICT_DNS", "",
			     "{\"endpoint\":{\"address\":{\"socket_address\":{\"address\":"
			     "\"web.test\",\"port_value\":8080}}},\"load_balancing_weight\":3}"));
	assert_true(tc_res.accepted);
	assert_int_equal(tc_res.n_errors, 0);
	/* warms until the first answer, and asks nothing of xDS */
	assert_null(cluster("web"));
	assert_int_equal(stats().clusters_warming, 1);
	assert_int_equal(arn_config_referenced(st, E, NULL, NULL), 0);
	settle(1);
	assert_string_equal(fake.last_host, "web.test");
	assert_non_null(cluster("web"));
	assert_int_equal(stats().clusters_warming, 0);
	const struct arn_cfg_endpoint *e[8];
	assert_int_equal(eps("web", e, 8), 2);
	assert_true(has_addr(e, 2, IP(198, 18, 0, 1)));
	assert_true(has_addr(e, 2, IP(198, 18, 0, 2)));
	assert_int_equal(e[0]->port, 8080);
	assert_int_equal(e[0]->weight, 3);
	assert_string_equal(e[0]->hostname, "web.test");

	/* one address now, at the next refresh (dns_refresh_rate 5 s) */
	answer(1, (uint32_t[]){IP(198, 18, 0, 2)});
	fake_now += 4999;
	arn_config_poll(st);
	assert_int_equal(stats().dns_update_attempt, 1); /* not due yet */
	fake_now += 1;
	settle(2);
	assert_int_equal(eps("web", e, 8), 1);
	assert_int_equal(e[0]->addr, IP(198, 18, 0, 2));

	/* failure: the last hosts stay */
	answer(-EAGAIN, NULL);
	fake_now += 5000;
	settle(3);
	assert_int_equal(stats().dns_update_failure, 1);
	assert_int_equal(eps("web", e, 8), 1);
	assert_int_equal(e[0]->addr, IP(198, 18, 0, 2));

	/* recovery after the failure back-off (base: the refresh rate) */
	answer(1, (uint32_t[]){IP(198, 18, 0, 3)});
	fake_now += 5000;
	settle(4);
	assert_int_equal(eps("web", e, 8), 1);
	assert_int_equal(e[0]->addr, IP(198, 18, 0, 3));

	/* the same answer again rebuilds nothing */
	uint64_t g = arn_cfg_gen_id(gen());
	fake_now += 5000;
	settle(5);
	assert_int_equal(stats().dns_update_no_rebuild, 1);
	assert_int_equal(arn_cfg_gen_id(gen()), g);

	/* no address: no host */
	answer(0, NULL);
	fake_now += 5000;
	settle(6);
	assert_int_equal(stats().dns_update_empty, 1);
	assert_int_equal(eps("web", e, 8), 0);
	struct arn_config_stats s = stats();
	assert_int_equal(s.dns_update_attempt, 6);
	assert_int_equal(s.dns_update_success, 5);
	assert_int_equal(s.dns_clusters, 1);
	/* the same, for the cluster's own counters; none told before the
	 * generation with the cluster was out (the first answer warmed it) */
	assert_int_equal(upd[ARN_CONFIG_UPDATE_ATTEMPT], 6);
	assert_int_equal(upd[ARN_CONFIG_UPDATE_SUCCESS], 5);
	assert_int_equal(upd[ARN_CONFIG_UPDATE_FAILURE], 1);
	assert_int_equal(upd[ARN_CONFIG_UPDATE_NO_REBUILD], 1);
	assert_int_equal(upd[ARN_CONFIG_UPDATE_REJECTED] + upd[ARN_CONFIG_UPDATE_EMPTY], 0);
	assert_int_equal(upd_unpublished, 0);
}

/* dns_failure_refresh_rate: base, doubled, capped at max; a success resets */
static void test_dns_failure_backoff(void **state)
{
	(void)state;
	answer(-EAGAIN, NULL);
	APPLY(C, dns_cluster("web", "STRICT_DNS",
			     ",\"dns_failure_refresh_rate\":{\"base_interval\":\"1s\","
			     "\"max_interval\":\"3s\"}",
			     HOST("web.test", 80)));
	settle(1);
	/* the first failure ends warming, with no hosts */
	assert_non_null(cluster("web"));
	const struct arn_cfg_endpoint *e[4];
	assert_int_equal(eps("web", e, 4), 0);
	static const uint32_t waits[] = {1000, 2000, 3000, 3000};
	for (size_t i = 0; i < 4; i++) {
		fake_now += waits[i] - 1;
		arn_config_poll(st);
		assert_int_equal(stats().dns_update_attempt, i + 1);
		fake_now += 1;
		settle(i + 2);
	}
	answer(1, (uint32_t[]){IP(198, 18, 0, 9)});
	fake_now += 3000;
	settle(6);
	assert_int_equal(eps("web", e, 4), 1);
	answer(-EAGAIN, NULL);
	fake_now += 5000; /* dns_refresh_rate after the success */
	settle(7);
	fake_now += 999;
	arn_config_poll(st);
	assert_int_equal(stats().dns_update_attempt, 7); /* back to base_interval */
	fake_now += 1;
	settle(8);
	assert_int_equal(eps("web", e, 4), 1); /* kept through the failures */
}

/* respect_dns_ttl: the next resolution at the answer's TTL, the refresh
 * rate when the answer has none; Envoy Gateway's cluster (30 s, TTLs) */
static void test_dns_respect_ttl(void **state)
{
	(void)state;
	answer(1, (uint32_t[]){IP(198, 18, 0, 1)});
	fake.ttl = 7;
	APPLY(C, dns_cluster("web", "STRICT_DNS",
			     ",\"dns_refresh_rate\":\"30s\",\"respect_dns_ttl\":true,"
			     "\"dns_lookup_family\":\"V4_PREFERRED\"",
			     HOST("web.test", 80)));
	assert_int_equal(tc_res.n_errors, 0);
	settle(1);
	fake.ttl = 0;
	fake_now += 6999;
	arn_config_poll(st);
	assert_int_equal(stats().dns_update_attempt, 1);
	fake_now += 1;
	settle(2);
	/* no TTL: dns_refresh_rate */
	fake_now += 29999;
	arn_config_poll(st);
	assert_int_equal(stats().dns_update_attempt, 2);
	fake_now += 1;
	settle(3);
}

/* LOGICAL_DNS: one host, the newest first address; no address keeps it */
static void test_dns_logical_first_address(void **state)
{
	(void)state;
	answer(2, (uint32_t[]){IP(198, 18, 0, 1), IP(198, 18, 0, 2)});
	APPLY(C, dns_cluster("lg", "LOGICAL_DNS", "", HOST("lg.test", 443)));
	assert_int_equal(tc_res.n_errors, 0);
	settle(1);
	const struct arn_cfg_endpoint *e[4];
	assert_int_equal(eps("lg", e, 4), 1);
	assert_int_equal(e[0]->addr, IP(198, 18, 0, 1));
	assert_int_equal(e[0]->port, 443);
	answer(2, (uint32_t[]){IP(198, 18, 0, 3), IP(198, 18, 0, 1)});
	fake_now += 5000;
	settle(2);
	assert_int_equal(eps("lg", e, 4), 1);
	assert_int_equal(e[0]->addr, IP(198, 18, 0, 3));
	answer(0, NULL);
	fake_now += 5000;
	settle(3);
	assert_int_equal(eps("lg", e, 4), 1);
	assert_int_equal(e[0]->addr, IP(198, 18, 0, 3));
}

/* dns_lookup_family reaches the resolver; what Arion cannot do is refused
 * naming the field */
static void test_dns_family_and_refusals(void **state)
{
	(void)state;
	answer(1, (uint32_t[]){IP(198, 18, 0, 1)});
	APPLY(C, dns_cluster("f", "STRICT_DNS", ",\"dns_lookup_family\":\"V4_PREFERRED\"",
			     HOST("f.test", 80)));
	assert_int_equal(tc_res.n_errors, 0);
	settle(1);
	assert_int_equal(fake.last_family, 3);
	tc_ok(C,
	      dns_cluster("g", "STRICT_DNS", ",\"dns_lookup_family\":\"ALL\"", HOST("g.test", 80)));
	tc_refused(C,
		   dns_cluster("x", "STRICT_DNS", ",\"dns_lookup_family\":\"V6_ONLY\"",
			       HOST("x.test", 80)),
		   "Cluster 'x': dns_lookup_family: V6_ONLY: Arion's data plane is IPv4 only");
	tc_refused(
	    C,
	    dns_cluster("x", "STRICT_DNS", ",\"use_tcp_for_dns_lookups\":true", HOST("x.test", 80)),
	    "use_tcp_for_dns_lookups: not supported by Arion");
	tc_refused(C,
		   dns_cluster("x", "STRICT_DNS",
			       ",\"dns_failure_refresh_rate\":{\"base_interval\":\"2s\","
			       "\"max_interval\":\"1s\"}",
			       HOST("x.test", 80)),
		   "dns_failure_refresh_rate.max_interval: less than base_interval");
	tc_refused(C,
		   dns_cluster("x", "LOGICAL_DNS", "", HOST("a.test", 80) "," HOST("b.test", 80)),
		   "Cluster 'x': load_assignment: LOGICAL_DNS clusters must have a single "
		   "locality_lb_endpoint and a single lb_endpoint");
	tc_refused(C, dns_cluster("x", "STRICT_DNS", "", HOST("a b.test", 80)),
		   "load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address."
		   "address: 'a b.test' is not a hostname");
	tc_refused(C, dns_cluster("x", "STRICT_DNS", "", HOST("a.test", 0)), "port_value: missing");
	/* a STATIC cluster still wants addresses */
	tc_refused(C, dns_cluster("x", "STATIC", "", HOST("a.test", 80)),
		   "'a.test' is not an IPv4 address (a hostname needs a STRICT_DNS or "
		   "LOGICAL_DNS cluster)");
}

/* Limits: hostnames per cluster at conversion; addresses per hostname and
 * resolutions in flight counted when they trip. */
static void test_dns_limits(void **state)
{
	(void)state;
	char hosts[8192] = "";
	for (int i = 0; i <= ARN_CFG_DNS_MAX_HOSTS; i++) {
		char one[160];
		snprintf(one, sizeof(one), "%s" HOST("h%d.test", 80), i ? "," : "", i);
		strcat(hosts, one);
	}
	tc_refused(C, dns_cluster("x", "STRICT_DNS", "", hosts),
		   "65 lb_endpoints: a DNS cluster resolves at most 64 hostnames");

	uint32_t many[40];
	for (int i = 0; i < 40; i++)
		many[i] = IP(198, 18, 1, i + 1);
	answer(40, many);
	gate(true);
	APPLY(C, dns_cluster("m", "STRICT_DNS", "",
			     HOST("a.test", 80) "," HOST("b.test", 80) "," HOST(
				 "c.test", 80) "," HOST("d.test", 80) "," HOST("e.test", 80)));
	assert_int_equal(tc_res.n_errors, 0);
	arn_config_poll(st);
	wait_waiting(ARN_CFG_DNS_MAX_INFLIGHT);
	arn_config_poll(st);
	struct arn_config_stats s = stats();
	assert_int_equal(s.dns_update_attempt, ARN_CFG_DNS_MAX_INFLIGHT);
	assert_true(s.dns_inflight_full >= 1);
	gate(false);
	settle(5);
	const struct arn_cfg_endpoint *e[1];
	assert_int_equal(eps("m", e, 0), 5 * ARN_CFG_DNS_MAX_ADDRS);
	assert_int_equal(stats().dns_addresses_dropped, 5 * (40 - ARN_CFG_DNS_MAX_ADDRS));
}

/* A cluster removed while its name resolves: the late answer is dropped,
 * nothing is published for it, and its endpoints go with it. */
static void test_dns_removed_while_resolving(void **state)
{
	(void)state;
	answer(1, (uint32_t[]){IP(198, 18, 0, 1)});
	APPLY(C, dns_cluster("web", "STRICT_DNS", ",\"wait_for_warm_on_init\":false",
			     HOST("web.test", 80)));
	/* wait_for_warm_on_init false: in force at once, with no host */
	assert_non_null(cluster("web"));
	const struct arn_cfg_endpoint *e[4];
	assert_int_equal(eps("web", e, 4), 0);
	settle(1);
	assert_int_equal(eps("web", e, 4), 1);
	gate(true);
	fake_now += 5000;
	arn_config_poll(st);
	wait_waiting(1);
	REMOVE(C, "web");
	assert_int_equal(tc_res.n_errors, 0);
	arn_config_poll(st); /* its endpoints go now */
	assert_int_equal(stats().endpoints_active, 0);
	gate(false);
	for (long i = 0; i < 2000000 && stats().dns_stale_results == 0; i++) {
		arn_config_poll(st);
		sched_yield();
	}
	assert_int_equal(stats().dns_stale_results, 1);
	assert_int_equal(stats().dns_update_success, 1);
	assert_int_equal(stats().endpoints_active, 0);
	assert_int_equal(stats().dns_clusters, 0);
	assert_null(cluster("web"));
}

/* The endpoints are the resolver's: xDS cannot replace them (X16); a new
 * version of the cluster with the same names keeps the addresses and takes
 * its new weights at once. */
static void test_dns_endpoints_owned(void **state)
{
	(void)state;
	answer(1, (uint32_t[]){IP(198, 18, 0, 1)});
	APPLY(C, dns_cluster("web", "STRICT_DNS", "", HOST("web.test", 80)));
	settle(1);
	APPLY(E, tj_cla("web", "10.9.9.9", 80));
	assert_int_equal(tc_res.n_errors, 1);
	assert_non_null(strstr(tc_res.errors[0].message,
			       "ClusterLoadAssignment 'web': the endpoints of a STRICT_DNS or "
			       "LOGICAL_DNS cluster come from its DNS resolution"));
	APPLY(C, dns_cluster("web", "STRICT_DNS", "",
			     "{\"endpoint\":{\"address\":{\"socket_address\":{\"address\":"
			     "\"web.test\",\"port_value\":80}}},\"load_balancing_weight\":7}"));
	assert_int_equal(tc_res.n_errors, 0);
	arn_config_poll(st);
	const struct arn_cfg_endpoint *e[4];
	assert_int_equal(eps("web", e, 4), 1);
	assert_int_equal(e[0]->addr, IP(198, 18, 0, 1));
	assert_int_equal(e[0]->weight, 7);
	assert_int_equal(stats().dns_update_attempt, 1);
	/* a STATIC cluster of the same name: the resolver's endpoints go */
	APPLY(C, tj_cluster_static("web", "10.0.0.1", 80));
	arn_config_poll(st);
	assert_int_equal(stats().dns_clusters, 0);
	assert_int_equal(eps("web", e, 4), 1);
	assert_int_equal(e[0]->addr, IP(10, 0, 0, 1));
}

/* wait_for_warm_on_init (default true): /ready waits for the first answer,
 * as for an EDS cluster's endpoints. */
static void test_dns_warming_holds_ready(void **state)
{
	(void)state;
	arn_config_destroy(st);
	struct arn_bootstrap b = {0};
	b.ads = true;
	st = arn_config_create(&b);
	arn_config_set_clock(st, tc_clock, NULL);
	struct arn_sb err = ARN_SB_INIT;
	assert_int_equal(arn_config_apply_static(st, &b, &err), 0);
	arn_sb_free(&err);
	answer(1, (uint32_t[]){IP(198, 18, 0, 1)});
	gate(true);
	APPLY(C, dns_cluster("web", "STRICT_DNS", "", HOST("web.test", 80)));
	arn_config_initial_fetch_done(st, C);
	arn_config_initial_fetch_done(st, L);
	arn_config_poll(st);
	wait_waiting(1);
	fake_now += 3600 * 1000; /* no initial_fetch_timeout for a DNS cluster */
	arn_config_poll(st);
	assert_false(arn_config_ready(st));
	assert_null(cluster("web"));
	gate(false);
	settle(1);
	assert_true(arn_config_ready(st));
	assert_non_null(cluster("web"));
}

/* The fuzzer's seeds (tests/config/corpus/config/cluster_*_dns) are DNS
 * clusters that convert: fuzz_config reaches conv_dns.c from them. */
static void test_dns_fuzz_seeds(void **state)
{
	(void)state;
	static const char *const seeds[][2] = {{"cluster_strict_dns", "web"},
					       {"cluster_logical_dns", "lg"}};
	for (size_t i = 0; i < 2; i++) {
		char path[256], buf[1024];
		snprintf(path, sizeof(path), "tests/config/corpus/config/%s", seeds[i][0]);
		FILE *f = fopen(path, "rb");
		assert_non_null(f);
		size_t n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		assert_true(n > 1 && n < sizeof(buf) && buf[0] == ARN_CFG_CLUSTER);
		struct arn_config_resource_in in = {seeds[i][1], "v", buf + 1, n - 1};
		struct arn_config_result r;
		assert_int_equal(arn_config_apply(st, C, &in, 1, NULL, 0, 0, &r), 0);
		for (size_t j = 0; j < r.n_errors; j++)
			print_message("  %s: %s\n", seeds[i][0], r.errors[j].message);
		assert_true(r.accepted);
		assert_int_equal(r.n_errors, 0);
		arn_config_result_free(&r);
	}
	assert_int_equal(stats().clusters_warming, 2);
	assert_int_equal(stats().dns_clusters, 2);
}

const struct CMUnitTest dns_tests[] = {
    cmocka_unit_test_setup_teardown(test_dns_strict_follows_answers, dns_setup, dns_teardown),
    cmocka_unit_test_setup_teardown(test_cluster_update_queue_bounded, dns_setup, dns_teardown),
    cmocka_unit_test_setup_teardown(test_dns_failure_backoff, dns_setup, dns_teardown),
    cmocka_unit_test_setup_teardown(test_dns_logical_first_address, dns_setup, dns_teardown),
    cmocka_unit_test_setup_teardown(test_dns_respect_ttl, dns_setup, dns_teardown),
    cmocka_unit_test_setup_teardown(test_dns_family_and_refusals, dns_setup, dns_teardown),
    cmocka_unit_test_setup_teardown(test_dns_limits, dns_setup, dns_teardown),
    cmocka_unit_test_setup_teardown(test_dns_removed_while_resolving, dns_setup, dns_teardown),
    cmocka_unit_test_setup_teardown(test_dns_endpoints_owned, dns_setup, dns_teardown),
    cmocka_unit_test_setup_teardown(test_dns_warming_holds_ready, dns_setup, dns_teardown),
    cmocka_unit_test_setup_teardown(test_dns_fuzz_seeds, dns_setup, dns_teardown),
};
const size_t n_dns_tests = sizeof(dns_tests) / sizeof(dns_tests[0]);
