/*
 * Batches, warming, generations, interest, readiness and the admin view.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_rcu_qsbr.h>

#include "arn_bootstrap.h"
#include "arn_admin_config.h"
#include "arn_proto.h"
#include "arn_sb.h"
#include "config_int.h"
#include "tboot.h"
#include "tc.h"

static struct arn_cfg_ref ref(const char *n)
{
	struct arn_cfg_ref r = {n, strlen(n), arn_cfg_hash(n, strlen(n))};
	return r;
}

/* X10: listeners and clusters pushed are applied with no opt-in. */
static void test_x10_pushed_resources_applied(void **state)
{
	(void)state;
	APPLY(C, tj_cluster_static("a", "10.0.0.1", 80), tj_cluster_static("b", "10.0.0.2", 80));
	assert_true(tc_res.accepted);
	assert_non_null(cluster("a"));
	assert_non_null(cluster("b"));
	assert_true(tc_res.published);
	assert_int_equal(arn_cfg_gen_id(gen()), 1);
}

/* A worker's inline read of the generation (arn_config_gen_slot and
 * arn_config_gen_at, the id by arn_cfg_gen_id_fast) sees what
 * arn_config_gen and arn_cfg_gen_id see, before and after each publish. */
static void test_gen_slot_reads_current(void **state)
{
	(void)state;
	struct arn_cfg_gen *const *slot = arn_config_gen_slot(st);
	assert_ptr_equal(slot, arn_config_gen_slot(st));
	assert_ptr_equal(arn_config_gen_at(slot), gen());
	assert_int_equal(arn_cfg_gen_id_fast(arn_config_gen_at(slot)), arn_cfg_gen_id(gen()));
	APPLY(C, tj_cluster_static("a", "10.0.0.1", 80));
	assert_true(tc_res.published);
	assert_ptr_equal(arn_config_gen_at(slot), gen());
	assert_int_equal(arn_cfg_gen_id_fast(arn_config_gen_at(slot)), 1);
	APPLY(C, tj_cluster_static("b", "10.0.0.2", 80));
	assert_true(tc_res.published);
	assert_ptr_equal(arn_config_gen_at(slot), gen());
	assert_int_equal(arn_cfg_gen_id_fast(arn_config_gen_at(slot)), 2);
	assert_int_equal(arn_cfg_gen_id(gen()), 2);
}

/* The prepare callback (lib/http builds a generation's TLS contexts there,
 * issue 18) sees each generation complete, before workers can: the store
 * still shows the previous one while it runs. */
struct prep_seen {
	unsigned calls;
	uint64_t next_id, visible_id;
	bool has_cluster;
};

static void prep_cb(void *ctx, const struct arn_cfg_gen *next)
{
	struct prep_seen *p = ctx;
	p->calls++;
	p->next_id = arn_cfg_gen_id(next);
	p->visible_id = arn_cfg_gen_id(arn_config_gen(st));
	struct arn_cfg_ref r = ref("a");
	struct arn_cfg_cluster_view v;
	p->has_cluster = arn_cfg_cluster_resolve(next, &r, &v) == 0;
}

static void count_cluster(void *ctx, const struct arn_cfg_cluster *c)
{
	(void)c;
	(*(unsigned *)ctx)++;
}

static void test_prepare_before_publication(void **state)
{
	(void)state;
	struct prep_seen p = {0};
	arn_config_set_prepare_cb(st, prep_cb, &p);
	APPLY(C, tj_cluster_static("a", "10.0.0.1", 80), tj_cluster_static("b", "10.0.0.2", 80));
	assert_true(tc_res.published);
	assert_int_equal(p.calls, 1);
	assert_int_equal(p.next_id, 1);
	assert_int_equal(p.visible_id, 0); /* not published yet while it ran */
	assert_true(p.has_cluster);	   /* the generation was complete */
	unsigned n = 0;
	assert_int_equal(arn_cfg_cluster_foreach(gen(), count_cluster, &n), 2);
	assert_int_equal(n, 2);
	APPLY(C, tj_cluster_static("a", "10.0.0.3", 80));
	assert_int_equal(p.calls, 2);
	assert_int_equal(p.next_id, 2);
	assert_int_equal(p.visible_id, 1);
	arn_config_set_prepare_cb(st, NULL, NULL);
	APPLY(C, tj_cluster_static("a", "10.0.0.4", 80));
	assert_true(tc_res.published);
	assert_int_equal(p.calls, 2); /* unregistered */
}

/* X15: one resource failing conversion refuses the whole batch, removals
 * included, and nothing changes. */
static void test_x15_bad_resource_refuses_whole_batch(void **state)
{
	(void)state;
	APPLY(C, tj_cluster_static("keep", "10.0.0.1", 80));
	uint64_t g0 = arn_cfg_gen_id(gen());
	tc_apply(C,
		 (const char *const[]){
		     tj_cluster_static("new", "10.0.0.2", 80),
		     "{\"name\":\"api\",\"connect_timeout\":\"0s\"}",
		     tj_cluster_static("new2", "10.0.0.3", 80),
		     "{\"name\":\"dns\",\"type\":\"LOGICAL_DNS\",\"connect_timeout\":\"1s\"}",
		     NULL},
		 (const char *const[]){"keep", NULL});
	assert_false(tc_res.accepted);
	assert_int_equal(tc_res.n_errors, 2);
	assert_string_equal(tc_res.errors[0].name, "api");
	assert_non_null(strstr(tc_res.errors[0].message,
			       "Cluster 'api': connect_timeout: must be greater than 0s"));
	assert_string_equal(tc_res.errors[1].name, "dns");
	assert_int_equal(tc_res.token, 0);
	assert_int_equal(arn_cfg_gen_id(gen()), g0);
	assert_null(cluster("new"));
	assert_null(cluster("new2"));
	assert_non_null(cluster("keep")); /* the removal did not happen either */
	struct arn_sb sb = ARN_SB_INIT;
	arn_config_result_format(&tc_res, &sb);
	assert_non_null(strstr(arn_sb_cstr(&sb), "Cluster 'dns': load_assignment: missing"));
	arn_sb_free(&sb);
}

/* X16: application failures are per resource; the others stay applied. */
static void test_x16_application_errors_per_resource(void **state)
{
	(void)state;
	APPLY(L, tj_listener_rds("a", 80, "r"));
	APPLY(L, tj_listener_rds("b", 80, "r"), tj_listener_rds("c", 81, "r"));
	assert_true(tc_res.accepted);
	assert_int_equal(tc_res.n_errors, 1);
	assert_string_equal(tc_res.errors[0].name, "b");
	assert_non_null(
	    strstr(tc_res.errors[0].message,
		   "Listener 'b': address: 0.0.0.0:80 is already used by listener 'a'"));
	/* c is applied (warming on its route config) */
	struct arn_config_stats s;
	arn_config_get_stats(st, &s);
	assert_int_equal(s.listeners_warming, 2);
}

/* A listener replaced by another on the same address in one response
 * ("old" removed, "new" added): removals are applied first, as Envoy's LDS
 * does ("This allows adding a new listener with the same address as a
 * listener that is to be removed"), so "new" takes the address instead of
 * being refused as a conflict with "old", which left nothing on port 80. */
static void test_x16_listener_replaced_on_same_address(void **state)
{
	(void)state;
	APPLY(L, tj_listener_inline("old", 80, "r"));
	assert_non_null(listener("old"));
	tc_apply(L, (const char *const[]){tj_listener_inline("new", 80, "r"), NULL},
		 (const char *const[]){"old", NULL});
	assert_true(tc_res.accepted);
	assert_int_equal(tc_res.n_errors, 0);
	assert_null(listener("old"));
	assert_non_null(listener("new"));
	assert_int_equal(listener("new")->port, 80);
}

/* G5 without a control plane: a static route naming a cluster that
 * static_resources lacks is installed (its requests get 503 NC), and
 * apply_static warns, naming that cluster and no other. With ADS the
 * cluster may still arrive: no warning. */
static void test_g5_static_route_to_undefined_cluster_warns(void **state)
{
	(void)state;
	const char *y =
	    "envoy_bootstrap:\n"
	    "  static_resources:\n"
	    "    listeners:\n"
	    "      - name: l\n"
	    "        address: { socket_address: { address: 0.0.0.0, port_value: 80 } }\n"
	    "        filter_chains:\n"
	    "          - filters:\n"
	    "              - name: envoy.filters.network.http_connection_manager\n"
	    "                typed_config:\n"
	    "                  \"@type\": type.googleapis.com/envoy.extensions.filters.network."
	    "http_connection_manager.v3.HttpConnectionManager\n"
	    "                  stat_prefix: t\n"
	    "                  route_config:\n"
	    "                    name: r\n"
	    "                    virtual_hosts:\n"
	    "                      - name: v\n"
	    "                        domains: [\"*\"]\n"
	    "                        routes:\n"
	    "                          - match: { prefix: \"/a\" }\n"
	    "                            route: { cluster: nope }\n"
	    "                          - match: { prefix: \"/\" }\n"
	    "                            route: { cluster: web }\n"
	    "                  http_filters:\n"
	    "                    - name: envoy.filters.http.router\n"
	    "                      typed_config:\n"
	    "                        \"@type\": type.googleapis.com/envoy.extensions.filters.http."
	    "router.v3.Router\n"
	    "    clusters:\n"
	    "      - name: web\n"
	    "        connect_timeout: 1s\n";
	struct arn_bootstrap *b = tboot_must_load(y, NULL);
	struct arn_sb err = ARN_SB_INIT;
	arn_sb_free(&err);
	assert_false(b->ads);
	assert_int_equal(arn_config_apply_static(st, b, &err), 0);
	const char *w = arn_sb_cstr(&err);
	assert_non_null(strstr(w, "warning: static_resources: cluster 'nope' is named by a route"));
	assert_null(strstr(w, "'web'"));
	assert_non_null(arn_cfg_find(arn_config_gen(st), ARN_CFG_LISTENER, "l", 1,
				     arn_cfg_hash("l", 1))); /* installed all the same */
	arn_sb_free(&err);

	struct arn_config_store *s2 = arn_config_create(NULL);
	assert_non_null(s2);
	b->ads = true;
	assert_int_equal(arn_config_apply_static(s2, b, &err), 0);
	assert_null(strstr(arn_sb_cstr(&err), "warning"));
	arn_sb_free(&err);
	arn_config_destroy(s2);
	arn_bootstrap_free(b);
}

/* X16: static resources cannot be changed or removed over xDS. */
static void test_x16_static_resource_protected(void **state)
{
	(void)state;
	const char *y = "envoy_bootstrap:\n"
			"  static_resources:\n"
			"    clusters:\n"
			"      - name: xds_cluster\n"
			"        connect_timeout: 1s\n";
	struct arn_bootstrap *b = tboot_must_load(y, NULL);
	struct arn_sb err = ARN_SB_INIT;
	assert_int_equal(arn_config_apply_static(st, b, &err), 0);
	APPLY(C, tj_cluster_static("xds_cluster", "10.9.9.9", 1),
	      tj_cluster_static("other", "10.0.0.1", 1));
	assert_true(tc_res.accepted);
	assert_int_equal(tc_res.n_errors, 1);
	assert_non_null(strstr(tc_res.errors[0].message, "defined in static_resources"));
	assert_non_null(cluster("other"));
	assert_null(
	    cluster("xds_cluster")->static_endpoints->priorities); /* unchanged: no endpoints */
	REMOVE(C, "xds_cluster");
	assert_int_equal(tc_res.n_errors, 1);
	assert_non_null(cluster("xds_cluster"));
	arn_sb_free(&err);
	arn_bootstrap_free(b);
}

/* G7: a rejected update never takes effect; the last accepted one serves. */
static void test_g7_rejected_update_keeps_last_accepted(void **state)
{
	(void)state;
	APPLY(C, "{\"name\":\"api\",\"connect_timeout\":\"2s\"}");
	const struct arn_cfg_cluster *before = cluster("api");
	APPLY(C, "{\"name\":\"api\",\"connect_timeout\":\"0s\"}");
	assert_false(tc_res.accepted);
	assert_ptr_equal(cluster("api"), before);
	assert_int_equal(cluster("api")->connect_timeout_ms, 2000);
}

/* G5: a route naming an unknown cluster is installed; the lookup says "no
 * such cluster" (503 NC) until the cluster arrives. Routes do not warm. */
static void test_g5_route_to_unknown_cluster(void **state)
{
	(void)state;
	APPLY(R, tj_route("r", "later"));
	assert_true(tc_res.accepted);
	assert_non_null(route_table("r"));
	struct arn_cfg_request req = {.method = "GET",
				      .method_len = 3,
				      .authority = "x",
				      .authority_len = 1,
				      .path = "/",
				      .path_len = 1};
	struct arn_cfg_route_match m;
	assert_int_equal(arn_cfg_route_match(route_table("r"), &req, &m), 0);
	struct arn_cfg_ref cl;
	assert_int_equal(arn_cfg_route_cluster(&m.route->route, &req, &cl), 0);
	struct arn_cfg_cluster_view v;
	assert_int_equal(arn_cfg_cluster_resolve(gen(), &cl, &v), -ENOENT);
	assert_int_equal(m.route->route.cluster_not_found_status, 503);
	APPLY(C, tj_cluster_static("later", "10.0.0.1", 80));
	assert_int_equal(arn_cfg_cluster_resolve(gen(), &cl, &v), 0);
	assert_ptr_equal(v.cluster, cluster("later"));
}

/* G6: a new listener warms until its RouteConfiguration arrives; warming
 * resources take no traffic. */
static void test_g6_listener_warms_until_rds(void **state)
{
	(void)state;
	APPLY(L, tj_listener_rds("l", 80, "r"));
	assert_true(tc_res.accepted);
	assert_null(listener("l"));
	assert_null(arn_cfg_listener_find(gen(), 0x0a000001, 80));
	APPLY(R, tj_route("r", "c"));
	const struct arn_cfg_listener *l = arn_cfg_listener_find(gen(), 0x0a000001, 80);
	assert_non_null(l);
	assert_ptr_equal(arn_cfg_hcm_routes(gen(), l->chains[0].hcm), route_table("r"));
	struct arn_config_stats s;
	arn_config_get_stats(st, &s);
	assert_int_equal(s.warming_completed, 1);
	assert_int_equal(s.listeners_warming, 0);
}

/* G6: a new EDS cluster warms until its first ClusterLoadAssignment. */
static void test_g6_eds_cluster_warms_until_cla(void **state)
{
	(void)state;
	APPLY(C, tj_cluster_eds("api", "1s"));
	assert_null(cluster("api"));
	struct arn_cfg_ref r = ref("api");
	struct arn_cfg_cluster_view v;
	assert_int_equal(arn_cfg_cluster_resolve(gen(), &r, &v), -ENOENT);
	APPLY(E, tj_cla("api", "10.0.0.7", 8080));
	assert_int_equal(arn_cfg_cluster_resolve(gen(), &r, &v), 0);
	assert_int_equal(v.endpoints->n_endpoints, 1);
	assert_int_equal(v.endpoints->priorities[0].localities[0].endpoints[0].port, 8080);
	/* a new CLA changes the endpoints without touching the cluster object */
	const struct arn_cfg_cluster *c = v.cluster;
	APPLY(E, tj_cla("api", "10.0.0.8", 9090));
	assert_int_equal(arn_cfg_cluster_resolve(gen(), &r, &v), 0);
	assert_ptr_equal(v.cluster, c);
	assert_int_equal(v.endpoints->priorities[0].localities[0].endpoints[0].port, 9090);
	/* removing the CLA leaves the cluster with no endpoints */
	REMOVE(E, "api");
	assert_int_equal(arn_cfg_cluster_resolve(gen(), &r, &v), 0);
	assert_int_equal(v.endpoints->n_endpoints, 0);
}

/* G6: warming ends after initial_fetch_timeout (15 s default), even if
 * nothing arrived. */
static void test_g6_warming_timeout_default_15s(void **state)
{
	(void)state;
	APPLY(L, tj_listener_rds("l", 80, "missing"));
	APPLY(C, tj_cluster_eds("api", "1s"));
	fake_now += 14999;
	arn_config_poll(st);
	assert_null(listener("l"));
	assert_null(cluster("api"));
	fake_now += 1;
	arn_config_poll(st);
	assert_non_null(listener("l"));
	/* no route table: the HTTP layer answers 404 NR */
	assert_null(arn_cfg_hcm_routes(gen(), listener("l")->chains[0].hcm));
	struct arn_cfg_ref r = ref("api");
	struct arn_cfg_cluster_view v;
	assert_int_equal(arn_cfg_cluster_resolve(gen(), &r, &v), 0);
	assert_int_equal(v.endpoints->n_endpoints, 0);
	struct arn_config_stats s;
	arn_config_get_stats(st, &s);
	assert_int_equal(s.warming_timeouts, 2);
	/* Envoy's rds / eds init_fetch_timeout: the families that did not come */
	assert_int_equal(arn_config_init_fetch_timeouts(st, R), 1);
	assert_int_equal(arn_config_init_fetch_timeouts(st, E), 1);
	assert_int_equal(arn_config_init_fetch_timeouts(st, C), 0);
	assert_int_equal(arn_config_init_fetch_timeouts(st, L), 0);
}

/* G6: the config source's initial_fetch_timeout wins; 0s waits forever. */
static void test_g6_warming_timeout_from_config_source(void **state)
{
	(void)state;
	APPLY(C,
	      "{\"name\":\"a\",\"type\":\"EDS\",\"connect_timeout\":\"1s\",\"eds_cluster_config\":"
	      "{\"eds_config\":{\"ads\":{},\"initial_fetch_timeout\":\"2s\"}}}",
	      "{\"name\":\"b\",\"type\":\"EDS\",\"connect_timeout\":\"1s\",\"eds_cluster_config\":"
	      "{\"eds_config\":{\"ads\":{},\"initial_fetch_timeout\":\"0s\"}}}");
	fake_now += 2000;
	arn_config_poll(st);
	assert_non_null(cluster("a"));
	assert_null(cluster("b"));
	fake_now += 3600 * 1000;
	arn_config_poll(st);
	assert_null(cluster("b"));
}

/* G6: an updated listener keeps the old one serving until the new one is warm. */
static void test_g6_updated_listener_old_serves_until_warm(void **state)
{
	(void)state;
	APPLY(R, tj_route("r1", "c"));
	APPLY(L, tj_listener_rds("l", 80, "r1"));
	const struct arn_cfg_listener *old = listener("l");
	assert_non_null(old);
	APPLY(L, tj_listener_rds("l", 80, "r2"));
	assert_true(tc_res.accepted);
	assert_ptr_equal(listener("l"), old);
	assert_ptr_equal(arn_cfg_listener_find(gen(), 1, 80), old);
	APPLY(R, tj_route("r2", "c"));
	assert_ptr_not_equal(listener("l"), old);
	assert_string_equal(listener("l")->chains[0].hcm->rds.name, "r2");
}

/* G6: TLS listeners and clusters warm on their secrets too (SDS). */
static void test_g6_tls_listener_warms_until_secret(void **state)
{
	(void)state;
	struct tcert c;
	tcert_make(&c, "s.test");
	APPLY(L, tj_listener_tls(
		     "tls", 443,
		     "\"common_tls_context\":{\"alpn_protocols\":[\"http/"
		     "1.1\"],\"tls_certificate_sds_secret_configs\":[{\"name\":\"srv\"}]}"));
	assert_true(tc_res.accepted);
	assert_null(listener("tls"));
	char *j = tj_secret_tls("srv", c.cert_json, c.key_json);
	assert_non_null(j);
	APPLY(S, j);
	const struct arn_cfg_listener *l = listener("tls");
	assert_non_null(l);
	const struct arn_cfg_tls *t = l->chains[0].tls;
	assert_non_null(t);
	assert_int_equal(t->n_cert_secrets, 1);
	assert_string_equal(t->alpn[0], "http/1.1");
	const struct arn_cfg_secret *s = arn_cfg_secret_find(gen(), &t->cert_secrets[0]);
	assert_non_null(s);
	assert_non_null(s->key);
	free(j);
	tcert_free(&c);
}

/* A session_ticket_keys Secret of @p n keys, key i made of the byte @p fill + i. */
static char *ticket_keys_secret(const char *name, size_t n, char fill)
{
	size_t lens[8];
	assert_true(n <= 8);
	for (size_t i = 0; i < n; i++)
		lens[i] = ARN_CFG_TICKET_KEY_LEN;
	return tc_ticket_keys_json(name, lens, n, fill);
}

/*
 * G6 and rotation: a TLS listener naming session ticket keys warms until
 * the Secret arrives; an SDS update of the keys is a new Secret object
 * (new handshakes get the new keys once lib/tls rebuilds its context),
 * the listener object is untouched (it names the keys, it does not hold
 * them), and the old keys stay valid for whoever pinned them.
 */
static void test_g6_ticket_keys_secret_rotation(void **state)
{
	(void)state;
	struct tcert c;
	tcert_make(&c, "s.test");
	char *j = tj_secret_tls("srv", c.cert_json, c.key_json);
	assert_non_null(j);
	APPLY(S, j);
	APPLY(L, tj_listener_tls(
		     "tls", 443,
		     "\"common_tls_context\":{\"tls_certificate_sds_secret_configs\":[{\"name\":"
		     "\"srv\"}]},\"session_ticket_keys_sds_secret_config\":{\"name\":\"tk\"}"));
	assert_true(tc_res.accepted);
	assert_null(listener("tls")); /* warming on 'tk' */
	char *k1 = ticket_keys_secret("tk", 1, 'a');
	APPLY(S, k1);
	const struct arn_cfg_listener *l = listener("tls");
	assert_non_null(l);
	const struct arn_cfg_secret *s1 =
	    arn_cfg_secret_find(gen(), &l->chains[0].tls->ticket_keys_secret);
	assert_non_null(s1);
	assert_int_equal(s1->n_ticket_keys, 1);
	assert_int_equal(s1->ticket_keys[0], 'a');
	arn_cfg_pin(s1);
	/* rotation: the new key first, the old one second */
	char *k2 = ticket_keys_secret("tk", 2, 'b');
	APPLY(S, k2);
	assert_true(tc_res.accepted);
	const struct arn_cfg_secret *s2 =
	    arn_cfg_secret_find(gen(), &l->chains[0].tls->ticket_keys_secret);
	assert_ptr_not_equal(s1, s2);
	assert_ptr_equal(listener("tls"), l);
	assert_int_equal(s2->n_ticket_keys, 2);
	assert_int_equal(s2->ticket_keys[0], 'b');
	assert_int_equal(s2->ticket_keys[ARN_CFG_TICKET_KEY_LEN], 'c');
	arn_config_poll(st);
	assert_int_equal(s1->ticket_keys[0], 'a'); /* pinned: still whole (ASan checks) */
	arn_cfg_unpin(s1);
	arn_config_poll(st);
	/* a bad update is refused by name and the keys in force stay (X15) */
	char short_key[77];
	memset(short_key, 'x', sizeof(short_key));
	char *sb64 = tc_b64(short_key, sizeof(short_key)), *bad = malloc(1024);
	snprintf(bad, 1024,
		 "{\"name\":\"tk\",\"session_ticket_keys\":{\"keys\":[{\"inline_bytes\":\"%s\"}]}}",
		 sb64);
	APPLY(S, bad);
	assert_false(tc_res.accepted);
	assert_non_null(
	    strstr(tc_res.errors[0].message, "Secret 'tk': session_ticket_keys.keys[0]: 77 bytes"));
	assert_ptr_equal(secret("tk"), s2);
	free(sb64);
	free(bad);
	free(k1);
	free(k2);
	free(j);
	tcert_free(&c);
}

/* The X16 checks look a listener's address and a Secret's users up rather
 * than walk every listener for each resource: a batch of N listeners, or of
 * N Secret removals, costs O(N) visits, not N^2 / 2 (8,000 listeners in
 * one LDS response held the control lcore, xDS and the admin for 2.4 s).
 * The refusals stay: a clash inside the batch, a clash with a listener in
 * force, Secrets still in use. */
static void test_x16_checks_are_linear(void **state)
{
	(void)state;
	enum { N = 1000 };
#define TLS_TK                                                                                     \
	"\"common_tls_context\":{\"tls_certificate_sds_secret_configs\":[{\"name\":\"srv\"}]},"    \
	"\"session_ticket_keys_sds_secret_config\":{\"name\":\"tk%d\"}"
	char **v = calloc(N + 2, sizeof(*v)), **rm = calloc(N + 1, sizeof(*rm));
	char name[32], f[256];
	for (int i = 0; i <= N; i++) {
		snprintf(name, sizeof(name), i < N ? "l%d" : "dup", i);
		snprintf(f, sizeof(f), TLS_TK, i < N ? i : 0);
		v[i] = strdup(tj_listener_tls(name, 1000 + (unsigned)(i < N ? i : N - 1), f));
	}
	struct arn_config_stats s0, s1;
	arn_config_get_stats(st, &s0);
	tc_apply(L, (const char *const *)v, NULL);
	arn_config_get_stats(st, &s1);
	assert_true(tc_res.accepted);
	assert_int_equal(tc_res.n_errors, 1);
	assert_string_equal(tc_res.errors[0].name, "dup");
	assert_non_null(strstr(tc_res.errors[0].message,
			       "address: 0.0.0.0:1999 is already used by listener 'l999'"));
	assert_int_equal(s1.listeners_warming, N);
	assert_true(s1.check_visits - s0.check_visits < 4 * N);
	snprintf(f, sizeof(f), TLS_TK, 0);
	APPLY(L, tj_listener_tls("dup2", 1000, f));
	assert_int_equal(tc_res.n_errors, 1);
	assert_non_null(strstr(tc_res.errors[0].message, "is already used by listener 'l0'"));
	for (int i = 0; i <= N; i++)
		free(v[i]);
	/* every listener's keys, then their removal, refused: still in use */
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "tk%d", i);
		v[i] = ticket_keys_secret(name, 1, 'a');
		rm[i] = strdup(name);
	}
	v[N] = NULL;
	tc_apply(S, (const char *const *)v, NULL);
	assert_int_equal(tc_res.n_errors, 0);
	arn_config_get_stats(st, &s0);
	tc_apply(S, (const char *const[]){NULL}, (const char *const *)rm);
	arn_config_get_stats(st, &s1);
	assert_int_equal(tc_res.n_errors, N);
	assert_non_null(strstr(tc_res.errors[N - 1].message, "still used by listener"));
	assert_non_null(secret("tk999"));
	assert_true(s1.check_visits - s0.check_visits < 4 * N);
	for (int i = 0; i < N; i++) {
		free(v[i]);
		free(rm[i]);
	}
	free(v);
	free(rm);
#undef TLS_TK
}

/* G10: any arrival order works. */
static void test_g10_any_arrival_order(void **state)
{
	(void)state;
	/* endpoints before their cluster, route before its listener, cluster
	 * after the route that names it */
	APPLY(E, tj_cla("api", "10.0.0.1", 80));
	APPLY(R, tj_route("r", "api"));
	APPLY(L, tj_listener_rds("l", 80, "r"));
	assert_non_null(listener("l"));
	APPLY(C, tj_cluster_eds("api", "1s"));
	assert_non_null(cluster("api")); /* warm at once: its endpoints are there */
	struct arn_cfg_ref r = ref("api");
	struct arn_cfg_cluster_view v;
	assert_int_equal(arn_cfg_cluster_resolve(gen(), &r, &v), 0);
	assert_int_equal(v.endpoints->n_endpoints, 1);
}

/* X17: a publication is acknowledged internally once every registered
 * worker has passed a quiescent state; at once with no worker. */
static void test_x17_acknowledged_after_quiescent_state(void **state)
{
	(void)state;
	APPLY(C, tj_cluster_static("a", "10.0.0.1", 80));
	assert_true(arn_config_acked(st, tc_res.token));
	struct rte_rcu_qsbr *v = arn_config_rcu(st);
	assert_int_equal(rte_rcu_qsbr_thread_register(v, 3), 0);
	rte_rcu_qsbr_thread_online(v, 3);
	APPLY(C, tj_cluster_static("b", "10.0.0.1", 80));
	uint64_t tok = tc_res.token;
	assert_true(tok != 0);
	assert_false(arn_config_acked(st, tok));
	arn_config_poll(st);
	struct arn_config_stats s;
	arn_config_get_stats(st, &s);
	assert_int_equal(s.generations_pending, 1); /* the old generation is still held */
	rte_rcu_qsbr_quiescent(v, 3);
	assert_true(arn_config_acked(st, tok));
	arn_config_poll(st);
	arn_config_get_stats(st, &s);
	assert_int_equal(s.generations_pending, 0);
	rte_rcu_qsbr_thread_offline(v, 3);
	rte_rcu_qsbr_thread_unregister(v, 3);
	/* a batch that changes nothing publishes nothing and needs no wait */
	APPLY(C, tj_cluster_static("b", "10.0.0.1", 80));
	assert_true(tc_res.published); /* a new object, so a new generation */
	tc_apply(C, NULL, (const char *const[]){"nothing", NULL});
	assert_false(tc_res.published);
	assert_int_equal(tc_res.token, 0);
	assert_true(arn_config_acked(st, 0));
}

struct seen {
	char names[8][64];
	int n, calls;
	char last_url[128];
};

static void collect(void *ctx, const char *name)
{
	struct seen *s = ctx;
	snprintf(s->names[s->n++ % 8], 64, "%s", name);
}

static void changed(void *ctx, const char *url)
{
	struct seen *s = ctx;
	s->calls++;
	snprintf(s->last_url, sizeof(s->last_url), "%s", url);
}

/* X4 (generic on-demand interest): the names of a type that the
 * configuration references, and a notification when that set changes. */
static void test_x4_referenced_names_and_notification(void **state)
{
	(void)state;
	struct seen s = {0};
	arn_config_set_interest_cb(st, changed, &s);
	APPLY(L, tj_listener_rds("l", 80, "routes-a"));
	assert_int_equal(s.calls, 1);
	assert_string_equal(s.last_url, R);
	assert_int_equal(arn_config_referenced(st, R, collect, &s), 1);
	assert_string_equal(s.names[0], "routes-a");
	/* same set again: no notification */
	APPLY(L, tj_listener_rds("l", 80, "routes-a"));
	assert_int_equal(s.calls, 1);
	/* a route table referencing clusters */
	APPLY(R, tj_route("routes-a", "c1"));
	assert_int_equal(s.calls, 2);
	assert_string_equal(s.last_url, C);
	REMOVE(L, "l");
	assert_int_equal(arn_config_referenced(st, R, NULL, NULL), 0);
	assert_int_equal(arn_config_referenced(st, "type.googleapis.com/arion.Tds", NULL, NULL), 0);
	arn_config_set_interest_cb(st, NULL, NULL);
}

static void test_ready_static_only(void **state)
{
	(void)state;
	assert_false(arn_config_ready(st));
	struct arn_sb err = ARN_SB_INIT;
	struct arn_bootstrap b = {0};
	assert_int_equal(arn_config_apply_static(st, &b, &err), 0);
	assert_true(arn_config_ready(st));
	arn_sb_free(&err);
}

/* With ads: ready once CDS and LDS first responses are in (or their
 * initial_fetch_timeout passed) and nothing from them still warms. */
static void test_ready_waits_for_initial_fetch_and_warming(void **state)
{
	(void)state;
	arn_config_destroy(st);
	struct arn_bootstrap b = {0};
	b.ads = true;
	st = arn_config_create(&b); /* real clock: the 15 s initial fetch will not pass */
	struct arn_sb err = ARN_SB_INIT;
	assert_int_equal(arn_config_apply_static(st, &b, &err), 0);
	assert_false(arn_config_ready(st));
	APPLY(L, tj_listener_rds("l", 80, "r"));
	arn_config_initial_fetch_done(st, C);
	arn_config_initial_fetch_done(st, L);
	assert_false(arn_config_ready(st)); /* l warms */
	APPLY(R, tj_route("r", "c"));
	assert_true(arn_config_ready(st));
	/* latched: a listener warming later does not make /ready fail */
	APPLY(L, tj_listener_rds("l2", 81, "r2"));
	assert_true(arn_config_ready(st));
	assert_int_equal(arn_config_init_fetch_timeouts(st, C), 0);
	arn_sb_free(&err);
}

/* CDS's and LDS's first responses not in within initial_fetch_timeout:
 * ready anyway, and each counted once as Envoy's init_fetch_timeout. */
static void test_initial_fetch_timeout_counted(void **state)
{
	(void)state;
	arn_config_destroy(st);
	struct arn_bootstrap b = {0};
	b.ads = true;
	st = arn_config_create(&b); /* deadlines from the real clock... */
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	fake_now = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
	arn_config_set_clock(st, tc_clock, NULL); /* ...then from now on ours */
	struct arn_sb err = ARN_SB_INIT;
	assert_int_equal(arn_config_apply_static(st, &b, &err), 0);
	arn_config_initial_fetch_done(st, C);
	assert_false(arn_config_ready(st));
	fake_now += 15000;
	assert_true(arn_config_ready(st));
	assert_true(arn_config_ready(st));
	assert_int_equal(arn_config_init_fetch_timeouts(st, L), 1);
	assert_int_equal(arn_config_init_fetch_timeouts(st, C), 0);
	arn_sb_free(&err);
}

struct dump {
	int active, warming, error_only;
	char json[8192];
	char err[512];
};

static void dump_fn(void *ctx, const struct arn_config_resource_info *info)
{
	struct dump *d = ctx;
	if (info->state == ARN_CONFIG_ACTIVE)
		d->active++;
	else if (info->state == ARN_CONFIG_WARMING)
		d->warming++;
	else
		d->error_only++;
	if (info->last_error)
		snprintf(d->err, sizeof(d->err), "%s", info->last_error);
	struct arn_sb sb = ARN_SB_INIT;
	if (arn_config_resource_json(st, info, &sb) == 0)
		snprintf(d->json, sizeof(d->json), "%s", arn_sb_cstr(&sb));
	arn_sb_free(&sb);
}

/* Admin: active and warming resources per type with version and JSON;
 * secrets' private keys redacted; the last error per resource (G8). */
static void test_admin_enumeration_and_redaction(void **state)
{
	(void)state;
	struct tcert c;
	tcert_make(&c, "k.test");
	char *j = tj_secret_tls("srv", c.cert_json, c.key_json);
	assert_non_null(j);
	APPLY(S, j);
	struct dump d = {0};
	assert_int_equal(arn_config_foreach(st, ARN_CFG_SECRET, dump_fn, &d), 1);
	assert_int_equal(d.active, 1);
	assert_null(strstr(d.json, "PRIVATE KEY"));
	assert_non_null(strstr(d.json, "[redacted]"));
	assert_non_null(strstr(d.json, "BEGIN CERTIFICATE"));
	/* a listener active and its update warming: two entries */
	APPLY(R, tj_route("r1", "c"));
	APPLY(L, tj_listener_rds("l", 80, "r1"));
	APPLY(L, tj_listener_rds("l", 80, "r2"));
	memset(&d, 0, sizeof(d));
	assert_int_equal(arn_config_foreach(st, ARN_CFG_LISTENER, dump_fn, &d), 2);
	assert_int_equal(d.active, 1);
	assert_int_equal(d.warming, 1);
	assert_non_null(strstr(d.json, "\"route_config_name\":\"r2\""));
	/* a refused resource is known by its last error */
	APPLY(C, "{\"name\":\"bad\",\"connect_timeout\":\"0s\"}");
	memset(&d, 0, sizeof(d));
	assert_int_equal(arn_config_foreach(st, ARN_CFG_CLUSTER, dump_fn, &d), 1);
	assert_int_equal(d.error_only, 1);
	assert_non_null(strstr(d.err, "connect_timeout: must be greater than 0s"));
	/* an accepted version clears the error */
	APPLY(C, "{\"name\":\"bad\",\"connect_timeout\":\"1s\"}");
	memset(&d, 0, sizeof(d));
	arn_config_foreach(st, ARN_CFG_CLUSTER, dump_fn, &d);
	assert_int_equal(d.active, 1);
	assert_int_equal(d.err[0], 0);
	free(j);
	tcert_free(&c);
}

/* G3, G8: a resource the control plane removes disappears, its last
 * refusal included. One that was only ever refused used to keep its error
 * and the refused bytes (/config_dump's error_state and
 * failed_configuration) after its removal, for ever: stale to the
 * operator, and memory that every refused name added to. Envoy forgets
 * a listener's error state with the next update. */
static void test_g3_removal_forgets_refused_resource(void **state)
{
	(void)state;
	APPLY(C, "{\"name\":\"bad\",\"connect_timeout\":\"0s\"}");
	assert_false(tc_res.accepted);
	struct dump d = {0};
	assert_int_equal(arn_config_foreach(st, ARN_CFG_CLUSTER, dump_fn, &d), 1);
	assert_int_equal(d.error_only, 1);
	REMOVE(C, "bad");
	assert_true(tc_res.accepted);
	assert_int_equal(tc_res.n_errors, 0);
	memset(&d, 0, sizeof(d));
	assert_int_equal(arn_config_foreach(st, ARN_CFG_CLUSTER, dump_fn, &d), 0);
	/* one in force keeps its refused update's error until removed too */
	APPLY(C, tj_cluster_static("a", "10.0.0.1", 80));
	APPLY(C, "{\"name\":\"a\",\"connect_timeout\":\"0s\"}");
	memset(&d, 0, sizeof(d));
	assert_int_equal(arn_config_foreach(st, ARN_CFG_CLUSTER, dump_fn, &d), 1);
	assert_int_equal(d.active, 1);
	assert_non_null(strstr(d.err, "connect_timeout"));
	REMOVE(C, "a");
	memset(&d, 0, sizeof(d));
	assert_int_equal(arn_config_foreach(st, ARN_CFG_CLUSTER, dump_fn, &d), 0);
}

/* Pinned objects outlive the generation that dropped them. */
static void test_pin_outlives_generation(void **state)
{
	(void)state;
	APPLY(C, tj_cluster_static("a", "10.0.0.1", 80));
	struct arn_cfg_ref r = ref("a");
	struct arn_cfg_cluster_view v;
	assert_int_equal(arn_cfg_cluster_resolve(gen(), &r, &v), 0);
	arn_cfg_pin(v.cluster);
	arn_cfg_pin(v.endpoints);
	REMOVE(C, "a");
	arn_config_poll(st); /* frees the old generation (no workers) */
	assert_null(cluster("a"));
	assert_int_equal(v.cluster->connect_timeout_ms, 250); /* still valid (ASan checks) */
	assert_int_equal(v.endpoints->n_endpoints, 1);
	arn_cfg_unpin(v.endpoints);
	arn_cfg_unpin(v.cluster); /* last reference: handed to the control lcore */
	arn_config_poll(st);
}

/* One changed cluster among many: the other objects are shared. */
static void test_generations_share_unchanged_objects(void **state)
{
	(void)state;
	char names[40][16];
	for (int i = 0; i < 40; i++)
		snprintf(names[i], sizeof(names[i]), "c%d", i);
	for (int i = 0; i < 40; i += 8) {
		const char *b[9];
		for (int k = 0; k < 8; k++)
			b[k] = tj_cluster_static(names[i + k], "10.0.0.1", 80);
		b[8] = NULL;
		tc_apply(C, b, NULL);
	}
	const struct arn_cfg_cluster *before[40];
	for (int i = 0; i < 40; i++)
		before[i] = cluster(names[i]);
	APPLY(C, tj_cluster_static("c7", "10.0.0.2", 81));
	for (int i = 0; i < 40; i++) {
		if (i == 7)
			assert_ptr_not_equal(cluster(names[i]), before[i]);
		else
			assert_ptr_equal(cluster(names[i]), before[i]);
	}
}

static void test_stats_names(void **state)
{
	(void)state;
	APPLY(C, tj_cluster_static("a", "10.0.0.1", 80));
	APPLY(C, "{\"name\":\"b\",\"connect_timeout\":\"0s\"}");
	struct arn_config_stats s;
	arn_config_get_stats(st, &s);
	assert_int_equal(s.batches_accepted, 1);
	assert_int_equal(s.batches_refused, 1);
	assert_int_equal(s.resources_rejected, 1);
	assert_int_equal(s.clusters_active, 1);
	assert_int_equal(s.generation, 1);
}

/* ---- key material ------------------------------------------------------------ */

/* What the wipe hook saw: buffers that held the key before and after they
 * were cleansed. */
static struct {
	char needle[17];
	int calls, held, held_after;
} wipes;

static void wipe_hook(const void *p, size_t len, bool wiped)
{
	bool has = memmem(p, len, wipes.needle, strlen(wipes.needle)) != NULL;
	if (wiped) {
		wipes.held_after += has;
	} else {
		wipes.calls++;
		wipes.held += has;
	}
}

struct dumped {
	struct arn_sb sb;
};

static void dump_all_fn(void *ctx, const struct arn_config_resource_info *info)
{
	struct dumped *d = ctx;
	arn_config_resource_json(st, info, &d->sb);
	arn_config_failed_json(st, info, &d->sb);
}

/*
 * A private key's bytes: every buffer of lib/config's that held them is
 * cleansed before it is freed (seen through the wipe hook, before and
 * after, never by reading freed memory), and none is kept: neither the
 * accepted Secret's nor a refused Secret's or refused Listener's bytes
 * (kept for /config_dump) hold it, and /config_dump says "[redacted]".
 */
static void test_secret_key_bytes_wiped_and_never_kept(void **state)
{
	(void)state;
	struct tcert c, other;
	tcert_make(&c, "w.test");
	tcert_make(&other, "x.test");
	/* 16 base64 characters of the private scalar: a P-256 PKCS#8 key's
	 * first 48 characters are the same for every key */
	const char *body = strstr(c.key_json, "-----\\n");
	assert_non_null(body);
	snprintf(wipes.needle, sizeof(wipes.needle), "%.16s", body + 7 + 48);
	assert_int_equal(strlen(wipes.needle), 16);
	wipes.calls = wipes.held = wipes.held_after = 0;
	arn_config_wipe_hook = wipe_hook;

	char *j = malloc(16384), *bad = malloc(16384), *lis = malloc(16384);
	snprintf(j, 16384,
		 "{\"name\":\"srv\",\"tls_certificate\":{\"certificate_chain\":{\"inline_string\":"
		 "\"%s\"},\"private_key\":{\"inline_string\":\"%s\"},\"password\":{"
		 "\"inline_string\":\"hunter2-not-needed\"}}}",
		 c.cert_json, c.key_json);
	/* each batch: the copy for OpenSSL (Secrets), the arena the batch was
	 * decoded in, the arena of the redacted copy kept for dumps */
	APPLY(S, j);
	assert_true(tc_res.accepted);
	assert_non_null(secret("srv"));
	int held_srv = wipes.held;
	/* refused: the key does not match the certificate */
	snprintf(bad, 16384,
		 "{\"name\":\"bad\",\"tls_certificate\":{\"certificate_chain\":{\"inline_string\":"
		 "\"%s\"},\"private_key\":{\"inline_string\":\"%s\"}}}",
		 other.cert_json, c.key_json);
	APPLY(S, bad);
	assert_false(tc_res.accepted);
	int held_bad = wipes.held - held_srv;
	/* refused: an inline certificate in a TLS context (X13) */
	snprintf(lis, 16384,
		 "{\"name\":\"tl\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
		 "\"port_value\":8443}},\"filter_chains\":[{\"filters\":[{\"name\":\"envoy."
		 "filters.network.echo\"}],\"transport_socket\":{\"name\":\"tls\",\"typed_config\":"
		 "{\"@type\":\"type.googleapis.com/"
		 "envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext\","
		 "\"common_tls_context\":{\"tls_certificates\":[{\"certificate_chain\":{"
		 "\"inline_string\":\"%s\"},\"private_key\":{\"inline_string\":\"%s\"}}]}}}}]}",
		 c.cert_json, c.key_json);
	APPLY(L, lis);
	assert_false(tc_res.accepted);
	int held_lis = wipes.held - held_srv - held_bad;
	print_message("  buffers that held the key: %d, %d, %d\n", held_srv, held_bad, held_lis);
	assert_true(held_srv >= 3 && held_bad >= 3 && held_lis >= 3);

	/* what is kept for dumps: the store's JSON, then /config_dump */
	struct dumped d = {ARN_SB_INIT};
	assert_int_equal(arn_config_foreach(st, ARN_CFG_SECRET, dump_all_fn, &d), 2);
	assert_int_equal(arn_config_foreach(st, ARN_CFG_LISTENER, dump_all_fn, &d), 1);
	const char *js = arn_sb_cstr(&d.sb);
	assert_null(strstr(js, wipes.needle));
	assert_null(strstr(js, "PRIVATE KEY"));
	assert_null(strstr(js, "hunter2"));
	assert_non_null(strstr(js, "\"private_key\":{\"inline_string\":\"[redacted]\"}"));
	assert_non_null(strstr(js, "\"password\":{\"inline_string\":\"[redacted]\"}"));
	assert_non_null(strstr(js, "BEGIN CERTIFICATE")); /* certificates are not secret */
	arn_sb_free(&d.sb);
	static const char *const sections[] = {"envoy.admin.v3.SecretsConfigDump",
					       "envoy.admin.v3.ListenersConfigDump"};
	for (int i = 0; i < 2; i++) {
		struct arn_sb o = ARN_SB_INIT;
		assert_int_equal(arn_admin_config_dump(st, sections[i], &o), 0);
		assert_null(strstr(arn_sb_cstr(&o), wipes.needle));
		assert_null(strstr(arn_sb_cstr(&o), "PRIVATE KEY"));
		assert_non_null(strstr(arn_sb_cstr(&o), "[redacted]"));
		arn_sb_free(&o);
	}

	REMOVE(S, "srv");
	arn_config_poll(st);
	arn_config_wipe_hook = NULL;
	print_message("  %d buffers wiped, %d held the key, %d after wiping\n", wipes.calls,
		      wipes.held, wipes.held_after);
	assert_int_equal(wipes.held_after, 0);
	free(j);
	free(bad);
	free(lis);
	tcert_free(&c);
	tcert_free(&other);
}

/*
 * Session ticket keys: the model keeps them (lib/tls copies them into its
 * contexts), so the Secret's copy is cleansed when the Secret is freed;
 * every other buffer that held them is cleansed too, and /config_dump
 * shows "[redacted]" for each key.
 */
static void test_ticket_keys_wiped_and_redacted(void **state)
{
	(void)state;
	char key[ARN_CFG_TICKET_KEY_LEN];
	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (char)(0x80 | (i * 37)); /* no byte a JSON text would hold */
	memcpy(wipes.needle, key + 32, 16);
	wipes.needle[16] = 0;
	assert_int_equal(strlen(wipes.needle), 16);
	wipes.calls = wipes.held = wipes.held_after = 0;
	arn_config_wipe_hook = wipe_hook;
	char *b64 = tc_b64(key, sizeof(key)), *j = malloc(4096);
	snprintf(j, 4096,
		 "{\"name\":\"tk\",\"session_ticket_keys\":{\"keys\":[{\"inline_bytes\":\"%s\"}]}}",
		 b64);
	APPLY(S, j);
	assert_true(tc_res.accepted);
	assert_memory_equal(secret("tk")->ticket_keys, key, sizeof(key));
	int held = wipes.held;
	print_message("  buffers that held the key: %d\n", held);
	assert_true(held >= 3); /* the datasource copy, the decoded and the redacted arenas */

	struct dumped d = {ARN_SB_INIT};
	assert_int_equal(arn_config_foreach(st, ARN_CFG_SECRET, dump_all_fn, &d), 1);
	const char *js = arn_sb_cstr(&d.sb);
	assert_null(strstr(js, b64));
	assert_non_null(strstr(js, "\"keys\":[{\"inline_string\":\"[redacted]\"}]"));
	arn_sb_free(&d.sb);
	struct arn_sb o = ARN_SB_INIT;
	assert_int_equal(arn_admin_config_dump(st, "envoy.admin.v3.SecretsConfigDump", &o), 0);
	assert_null(strstr(arn_sb_cstr(&o), b64));
	assert_non_null(strstr(arn_sb_cstr(&o), "[redacted]"));
	arn_sb_free(&o);

	/* the model's copy goes when the Secret goes */
	REMOVE(S, "tk");
	arn_config_poll(st);
	assert_true(wipes.held > held);
	arn_config_wipe_hook = NULL;
	assert_int_equal(wipes.held_after, 0);
	free(j);
	free(b64);
}

/* ---- issue 17: a RouteConfiguration's unchanged routes are taken over ------------- */

/* A RouteConfiguration "main" of @p n prefix routes /r<i>/ -> c<i>, route
 * @p over (if < n) going to @p to instead; @p vh_extra goes into the virtual
 * host (",\"retry_policy\":{...}" or ""). malloc'd. */
static char *reuse_rc(size_t n, size_t over, const char *to, const char *vh_extra)
{
	struct arn_sb b = ARN_SB_INIT;
	arn_sb_printf(
	    &b,
	    "{\"name\":\"main\",\"virtual_hosts\":[{\"name\":\"vh\",\"domains\":[\"*\"]%s,"
	    "\"routes\":[",
	    vh_extra);
	for (size_t i = 0; i < n; i++) {
		char cl[32];
		snprintf(cl, sizeof(cl), "c%zu", i);
		arn_sb_printf(
		    &b, "%s{\"match\":{\"prefix\":\"/r%zu/\"},\"route\":{\"cluster\":\"%s\"}}",
		    i ? "," : "", i, i == over ? to : cl);
	}
	arn_sb_puts(&b, "]}]}");
	return arn_sb_steal(&b);
}

static const struct arn_cfg_route *reuse_match(const char *path)
{
	struct arn_cfg_request req = {.method = "GET",
				      .method_len = 3,
				      .authority = "x",
				      .authority_len = 1,
				      .path = path,
				      .path_len = strlen(path)};
	struct arn_cfg_route_match m;
	assert_int_equal(arn_cfg_route_match(route_table("main"), &req, &m), 0);
	return m.route;
}

static void reuse_counts(uint64_t *converted, uint64_t *reused)
{
	struct arn_config_stats s;
	arn_config_get_stats(st, &s);
	*converted = s.routes_converted;
	*reused = s.routes_reused;
}

static void collect_name(void *ctx, const char *name)
{
	struct arn_sb *b = ctx;
	arn_sb_printf(b, "%s,", name);
}

/* One changed route among 100: one conversion, 99 taken over; the changed
 * one is applied, the others answer as before, and the clusters named are
 * the new version's (X4). */
static void test_route_reuse_converts_only_changed(void **state)
{
	(void)state;
	char *v1 = reuse_rc(100, 100, "", "");
	APPLY(R, v1);
	assert_true(tc_res.accepted);
	uint64_t conv, reused;
	reuse_counts(&conv, &reused);
	assert_int_equal(conv, 100);
	assert_int_equal(reused, 0);
	const struct arn_cfg_route *r7 = reuse_match("/r7/x");
	char *v2 = reuse_rc(100, 42, "elsewhere", "");
	APPLY(R, v2);
	assert_true(tc_res.accepted);
	reuse_counts(&conv, &reused);
	assert_int_equal(conv, 101);
	assert_int_equal(reused, 99);
	/* applied: route 42 goes to the new cluster, the others as before */
	const struct arn_cfg_route *r42 = reuse_match("/r42/x");
	assert_int_equal(r42->route.cluster.len, 9);
	assert_memory_equal(r42->route.cluster.name, "elsewhere", 9);
	const struct arn_cfg_route *n7 = reuse_match("/r7/x");
	assert_ptr_not_equal(n7, r7); /* the new table's route... */
	assert_ptr_equal(n7->route.cluster.name, r7->route.cluster.name); /* ...its parts shared */
	/* X4: c42 is no longer referenced, "elsewhere" is */
	struct arn_sb names = ARN_SB_INIT;
	assert_int_equal(arn_config_referenced(st, C, collect_name, &names), 100);
	assert_non_null(strstr(arn_sb_cstr(&names), "elsewhere,"));
	assert_null(strstr(arn_sb_cstr(&names), "c42,"));
	assert_non_null(strstr(arn_sb_cstr(&names), "c7,"));
	arn_sb_free(&names);
	/* the previous table is freed (no worker holds it): what the new one
	 * took over from it must live on (AddressSanitizer checks) */
	arn_config_poll(st);
	arn_config_poll(st);
	n7 = reuse_match("/r7/x");
	assert_int_equal(n7->route.cluster.len, 2);
	assert_memory_equal(n7->route.cluster.name, "c7", 2);
	/* back again: route 42 converted, the other 99 taken over again */
	APPLY(R, v1);
	reuse_counts(&conv, &reused);
	assert_int_equal(conv, 102);
	assert_int_equal(reused, 198);
	assert_memory_equal(reuse_match("/r42/x")->route.cluster.name, "c42", 3);
	free(v1);
	free(v2);
}

/* X15: a changed route that does not convert refuses the whole table, the
 * message naming the route; the version in force stays. */
static void test_x15_route_reuse_changed_route_refused_by_path(void **state)
{
	(void)state;
	char *v1 = reuse_rc(20, 20, "", "");
	APPLY(R, v1);
	const struct arn_cfg_route_table *before = route_table("main");
	char *v2 = reuse_rc(20, 13, "", ""); /* route 13: an empty cluster name */
	APPLY(R, v2);
	assert_false(tc_res.accepted);
	assert_int_equal(tc_res.n_errors, 1);
	assert_non_null(
	    strstr(tc_res.errors[0].message, "virtual_hosts[0].routes[13].route.cluster"));
	assert_ptr_equal(route_table("main"), before);
	/* and the next good version still takes routes over from the one in force */
	uint64_t conv0, reused0, conv, reused;
	reuse_counts(&conv0, &reused0);
	char *v3 = reuse_rc(20, 3, "c4", "");
	APPLY(R, v3);
	assert_true(tc_res.accepted);
	reuse_counts(&conv, &reused);
	assert_int_equal(conv - conv0, 1);
	assert_int_equal(reused - reused0, 19);
	free(v1);
	free(v2);
	free(v3);
}

/* A route takes its virtual host's retry_policy when it has none: a changed
 * virtual host policy converts them again (nothing taken over with a stale
 * default), and the same policy is taken over with the new copy. */
static void test_route_reuse_follows_vhost_retry_policy(void **state)
{
	(void)state;
	char *v1 =
	    reuse_rc(10, 10, "", ",\"retry_policy\":{\"retry_on\":\"5xx\",\"num_retries\":2}");
	APPLY(R, v1);
	assert_int_equal(reuse_match("/r3/")->route.retry.num_retries, 2);
	uint64_t conv0, reused0, conv, reused;
	reuse_counts(&conv0, &reused0);
	char *v2 =
	    reuse_rc(10, 10, "", ",\"retry_policy\":{\"retry_on\":\"5xx\",\"num_retries\":5}");
	APPLY(R, v2);
	assert_true(tc_res.accepted);
	reuse_counts(&conv, &reused);
	assert_int_equal(conv - conv0, 10);
	assert_int_equal(reused - reused0, 0);
	assert_int_equal(reuse_match("/r3/")->route.retry.num_retries, 5);
	/* the same policy again (another route changed): taken over */
	char *v3 =
	    reuse_rc(10, 1, "c2", ",\"retry_policy\":{\"retry_on\":\"5xx\",\"num_retries\":5}");
	APPLY(R, v3);
	reuse_counts(&conv0, &reused0);
	assert_int_equal(conv0 - conv, 1);
	assert_int_equal(reused0 - reused, 9);
	assert_int_equal(reuse_match("/r3/")->route.retry.num_retries, 5);
	assert_int_equal(reuse_match("/r1/")->route.retry.num_retries, 5);
	free(v1);
	free(v2);
	free(v3);
}

/* Apply @p json (a RouteConfiguration "main") with the byte after the
 * first occurrence of @p mark in its serialized form replaced by 0xff (not
 * UTF-8: the wire walk passes it, upb's decode does not), to @p s. */
static void reuse_apply_bad_utf8(struct arn_config_store *s, const char *json, const char *mark,
				 struct arn_config_result *r)
{
	upb_Arena *a = upb_Arena_New();
	const upb_MessageDef *md = arn_proto_msgdef(ARN_TYPE_ROUTE);
	struct arn_sb err = ARN_SB_INIT;
	upb_Message *m = arn_proto_from_json(json, strlen(json), md, a, &err);
	assert_non_null(m);
	arn_sb_free(&err);
	size_t len = 0;
	char *b = arn_proto_encode(m, md, a, &len);
	assert_non_null(b);
	char *at = memmem(b, len, mark, strlen(mark));
	assert_non_null(at);
	at[strlen(mark)] = (char)0xff;
	struct arn_config_resource_in in = {"main", "v2", b, len};
	assert_int_equal(arn_config_apply(s, R, &in, 1, NULL, 0, 0, r), 0);
	upb_Arena_Free(a);
}

/* X15: a changed route whose bytes do not decode (decoded alone, as only
 * changed routes are) refuses the table with the very message the whole
 * table gives without a version in force. */
static void test_x15_route_reuse_undecodable_route_same_refusal(void **state)
{
	(void)state;
	char *v1 = reuse_rc(20, 20, "", "");
	char *v2 = reuse_rc(20, 5, "other", "");
	APPLY(R, v1);
	const struct arn_cfg_route_table *before = route_table("main");
	struct arn_config_result with = {0}, without = {0};
	reuse_apply_bad_utf8(st, v2, "/r5", &with);
	struct arn_config_store *fresh = arn_config_create(NULL);
	reuse_apply_bad_utf8(fresh, v2, "/r5", &without);
	assert_false(with.accepted);
	assert_false(without.accepted);
	assert_int_equal(with.n_errors, 1);
	assert_int_equal(without.n_errors, 1);
	assert_non_null(strstr(with.errors[0].message, "cannot decode"));
	assert_string_equal(with.errors[0].message, without.errors[0].message);
	assert_ptr_equal(route_table("main"), before);
	arn_config_result_free(&with);
	arn_config_result_free(&without);
	arn_config_destroy(fresh);
	free(v1);
	free(v2);
}

/* What dead routes keep alive is bounded: after enough single-route
 * changes, a version is converted whole again (ROUTE_DATA_MAX). */
static void test_route_reuse_bounded_pools(void **state)
{
	(void)state;
	char *v = reuse_rc(50, 50, "", "");
	APPLY(R, v);
	free(v);
	bool whole = false;
	for (size_t k = 0; k < 40 && !whole; k++) {
		uint64_t conv0, reused0, conv, reused;
		reuse_counts(&conv0, &reused0);
		v = reuse_rc(50, k, "other", "");
		APPLY(R, v);
		free(v);
		assert_true(tc_res.accepted);
		reuse_counts(&conv, &reused);
		whole = conv - conv0 == 50;
		if (!whole)
			assert_true(conv - conv0 <= 2);
		arn_config_poll(st);
	}
	assert_true(whole);
}

const struct CMUnitTest store_tests[] = {
    TC(test_gen_slot_reads_current),
    TC(test_x10_pushed_resources_applied),
    TC(test_prepare_before_publication),
    TC(test_x15_bad_resource_refuses_whole_batch),
    TC(test_x16_application_errors_per_resource),
    TC(test_x16_listener_replaced_on_same_address),
    TC(test_x16_checks_are_linear),
    TC(test_g5_static_route_to_undefined_cluster_warns),
    TC(test_x16_static_resource_protected),
    TC(test_g7_rejected_update_keeps_last_accepted),
    TC(test_g5_route_to_unknown_cluster),
    TC(test_g6_listener_warms_until_rds),
    TC(test_g6_eds_cluster_warms_until_cla),
    TC(test_g6_warming_timeout_default_15s),
    TC(test_g6_warming_timeout_from_config_source),
    TC(test_g6_updated_listener_old_serves_until_warm),
    TC(test_g6_tls_listener_warms_until_secret),
    TC(test_g6_ticket_keys_secret_rotation),
    TC(test_g10_any_arrival_order),
    TC(test_x17_acknowledged_after_quiescent_state),
    TC(test_x4_referenced_names_and_notification),
    TC(test_ready_static_only),
    TC(test_ready_waits_for_initial_fetch_and_warming),
    TC(test_initial_fetch_timeout_counted),
    TC(test_admin_enumeration_and_redaction),
    TC(test_g3_removal_forgets_refused_resource),
    TC(test_secret_key_bytes_wiped_and_never_kept),
    TC(test_ticket_keys_wiped_and_redacted),
    TC(test_pin_outlives_generation),
    TC(test_generations_share_unchanged_objects),
    TC(test_stats_names),
    TC(test_route_reuse_converts_only_changed),
    TC(test_x15_route_reuse_changed_route_refused_by_path),
    TC(test_route_reuse_follows_vhost_retry_policy),
    TC(test_route_reuse_bounded_pools),
    TC(test_x15_route_reuse_undecodable_route_same_refusal),
};
const size_t n_store_tests = sizeof(store_tests) / sizeof(store_tests[0]);
