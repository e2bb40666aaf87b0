/*
 * lib/config on the admin endpoint (lib/config/config_admin.c): each
 * /config_dump section built from a store made in the test must decode as
 * its envoy.admin.v3 message with upb's strict JSON decoder (so every field
 * name is Envoy's) and carry what the store holds: versions, last_updated,
 * warming and error states (G8), redacted secrets. Also the /ready
 * condition, /clusters and /listeners, config.* stats and the deferred free
 * through the store's RCU.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rte_rcu_qsbr.h>

#include "admin_int.h"
#include "arn_admin.h"
#include "arn_admin_config.h"
#include "arn_bootstrap.h"
#include "arn_config.h"
#include "arn_defer.h"
#include "arn_json.h"
#include "arn_log.h"
#include "arn_proto.h"
#include "arn_stats.h"
#include "arn_stats_snapshot.h"
#include "tcert.h"
#include "tj.h"
#include "tj_config.h"

#define L ARN_TYPE_URL_LISTENER
#define R ARN_TYPE_URL_ROUTE
#define C ARN_TYPE_URL_CLUSTER
#define E ARN_TYPE_URL_CLA
#define S ARN_TYPE_URL_SECRET

static struct arn_config_store *st;
static struct arn_admin_config *ca;

static int setup(void **state)
{
	(void)state;
	st = arn_config_create(NULL);
	assert_non_null(st);
	ca = arn_admin_config_start(st);
	assert_non_null(ca);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	arn_admin_config_stop(ca);
	ca = NULL;
	arn_config_destroy(st);
	st = NULL;
	arn_admin_reset_for_tests();
	arn_stats_reset_for_tests();
	return 0;
}

/* ---- applying resources ------------------------------------------------------ */

static struct arn_config_result res;

/* Apply a batch of JSON resources (NULL-terminated) with @p version. */
static void apply(const char *type, const char *version, unsigned flags, const char *const *json,
		  const char *const *removed)
{
	tj_apply(st, type, version, flags, json, removed, &res);
}

#define APPLY(type, version, ...)                                                                  \
	apply((type), (version), 0, (const char *const[]){__VA_ARGS__, NULL}, NULL)
#define APPLY_STATIC(type, ...)                                                                    \
	apply((type), "", ARN_CONFIG_APPLY_STATIC, (const char *const[]){__VA_ARGS__, NULL}, NULL)

static void accepted(void)
{
	if (!res.accepted || res.n_errors)
		fail_msg("batch not accepted cleanly: %s",
			 res.n_errors ? res.errors[0].message : "refused");
}

/* ---- reading a section -------------------------------------------------------------- */

/* The section @p type_name, checked against Envoy's message, as a tree. */
static struct arn_json *section(const char *type_name)
{
	struct arn_sb out = ARN_SB_INIT;
	assert_int_equal(arn_admin_config_dump(st, type_name, &out), 0);
	/* as an Any (the section carries its "@type"), strictly: an unknown or
	 * misspelt field name, or a resource that is not its type, fails here */
	tj_assert_decodes(out.buf, out.len, "google.protobuf.Any", type_name);
	struct arn_json *j = arn_json_parse(out.buf, out.len);
	assert_non_null(j);
	arn_sb_free(&out);
	return j;
}

/* Node at dotted @p path ("dynamic_active_clusters.0.version_info"), or NULL. */
static const struct arn_json *at(const struct arn_json *j, const char *path)
{
	char p[256];
	snprintf(p, sizeof(p), "%s", path);
	char *save = NULL;
	for (char *k = strtok_r(p, ".", &save); k && j; k = strtok_r(NULL, ".", &save)) {
		if (j->type == ARN_JSON_ARRAY) {
			size_t i = strtoul(k, NULL, 10);
			j = i < j->n ? j->v[i] : NULL;
		} else {
			j = arn_json_get(j, k);
		}
	}
	return j;
}

static const char *str_at(const struct arn_json *j, const char *path)
{
	const struct arn_json *n = at(j, path);
	if (n == NULL || n->type != ARN_JSON_STRING)
		fail_msg("no string at %s", path);
	return n->str;
}

static size_t len_at(const struct arn_json *j, const char *path)
{
	const struct arn_json *n = at(j, path);
	return n && n->type == ARN_JSON_ARRAY ? n->n : 0;
}

/* A Timestamp in Envoy's form, within the last minute. */
static void assert_recent_time(const char *ts)
{
	int y, mo, d, h, mi, s, ms;
	char z;
	assert_int_equal(
	    sscanf(ts, "%4d-%2d-%2dT%2d:%2d:%2d.%3d%c", &y, &mo, &d, &h, &mi, &s, &ms, &z), 8);
	assert_int_equal(z, 'Z');
	assert_true(y >= 2024);
}

/* ---- ClustersConfigDump ----------------------------------------------------------- */

static void test_clusters_section_static_active_warming(void **state)
{
	(void)state;
	APPLY_STATIC(C, tj_cluster_static("xds_cluster", "127.0.0.1", 50000));
	accepted();
	APPLY(C, "7", tj_cluster_static("web", "198.18.0.10", 80), tj_cluster_eds("api", "0.25s"));
	accepted();
	struct arn_json *j = section("envoy.admin.v3.ClustersConfigDump");
	assert_string_equal(str_at(j, "@type"),
			    "type.googleapis.com/envoy.admin.v3.ClustersConfigDump");
	assert_int_equal(len_at(j, "static_clusters"), 1);
	assert_string_equal(str_at(j, "static_clusters.0.cluster.@type"), C);
	assert_string_equal(str_at(j, "static_clusters.0.cluster.name"), "xds_cluster");
	assert_recent_time(str_at(j, "static_clusters.0.last_updated"));
	assert_null(at(j, "static_clusters.0.version_info")); /* StaticCluster has none */
	/* web is active; api (EDS) warms until its ClusterLoadAssignment (G6) */
	assert_int_equal(len_at(j, "dynamic_active_clusters"), 1);
	assert_string_equal(str_at(j, "dynamic_active_clusters.0.cluster.name"), "web");
	assert_string_equal(str_at(j, "dynamic_active_clusters.0.version_info"), "7");
	assert_recent_time(str_at(j, "dynamic_active_clusters.0.last_updated"));
	assert_null(at(j, "dynamic_active_clusters.0.error_state"));
	assert_int_equal(len_at(j, "dynamic_warming_clusters"), 1);
	assert_string_equal(str_at(j, "dynamic_warming_clusters.0.cluster.name"), "api");
	assert_string_equal(str_at(j, "dynamic_warming_clusters.0.cluster.connect_timeout"),
			    "0.250s");
	arn_json_free(j);

	APPLY(E, "8", tj_cla("api", "198.18.0.11", 8080));
	accepted();
	j = section("envoy.admin.v3.ClustersConfigDump");
	assert_int_equal(len_at(j, "dynamic_active_clusters"), 2);
	assert_string_equal(str_at(j, "dynamic_active_clusters.0.cluster.name"), "api");
	assert_null(at(j, "dynamic_warming_clusters"));
	arn_json_free(j);
}

/* G8 / X15: a refused update shows in error_state with the NACK's text while
 * the accepted version stays active; a name never accepted shows its error
 * alone. */
static void test_clusters_section_error_state(void **state)
{
	(void)state;
	APPLY(C, "1", tj_cluster_eds("api", "1s"));
	accepted();
	APPLY(C, "2", tj_cluster_eds("api", "0s"));
	assert_false(res.accepted);
	APPLY(C, "3", tj_cluster_eds("payments", "0s"));
	assert_false(res.accepted);
	struct arn_json *j = section("envoy.admin.v3.ClustersConfigDump");
	/* api warms (no CLA): the accepted version 1 is the one shown */
	assert_string_equal(str_at(j, "dynamic_warming_clusters.0.cluster.name"), "api");
	assert_string_equal(str_at(j, "dynamic_warming_clusters.0.version_info"), "1");
	assert_string_equal(str_at(j, "dynamic_warming_clusters.0.cluster.connect_timeout"), "1s");
	assert_non_null(
	    strstr(str_at(j, "dynamic_warming_clusters.0.error_state.details"), "connect_timeout"));
	assert_string_equal(str_at(j, "dynamic_warming_clusters.0.error_state.version_info"), "2");
	assert_recent_time(str_at(j, "dynamic_warming_clusters.0.error_state.last_update_attempt"));
	/* ... and the refused resource itself, as Envoy shows it */
	assert_string_equal(str_at(j, "dynamic_warming_clusters.0.error_state.failed_configuration."
				      "@type"),
			    C);
	assert_string_equal(str_at(j, "dynamic_warming_clusters.0.error_state.failed_configuration."
				      "connect_timeout"),
			    "0s");
	assert_string_equal(str_at(j, "dynamic_warming_clusters.0.client_status"), "NACKED");
	/* payments: only its error */
	assert_int_equal(len_at(j, "dynamic_active_clusters"), 1);
	assert_null(at(j, "dynamic_active_clusters.0.cluster"));
	assert_null(at(j, "dynamic_active_clusters.0.version_info"));
	assert_non_null(
	    strstr(str_at(j, "dynamic_active_clusters.0.error_state.details"), "'payments'"));
	assert_string_equal(str_at(j, "dynamic_active_clusters.0.error_state.version_info"), "3");
	arn_json_free(j);

	/* a good update clears the error */
	APPLY(C, "4", tj_cluster_eds("api", "2s"));
	accepted();
	j = section("envoy.admin.v3.ClustersConfigDump");
	assert_string_equal(str_at(j, "dynamic_warming_clusters.0.version_info"), "4");
	assert_null(at(j, "dynamic_warming_clusters.0.error_state"));
	arn_json_free(j);
}

/* ---- ListenersConfigDump ----------------------------------------------------------- */

static void test_listeners_section_states(void **state)
{
	(void)state;
	APPLY_STATIC(L, tj_listener_inline("static_l", 8080, "local"));
	accepted();
	APPLY(L, "1", tj_listener_rds("web", 80, "r1"));
	accepted();
	struct arn_json *j = section("envoy.admin.v3.ListenersConfigDump");
	assert_string_equal(str_at(j, "static_listeners.0.listener.@type"), L);
	assert_string_equal(str_at(j, "static_listeners.0.listener.name"), "static_l");
	assert_recent_time(str_at(j, "static_listeners.0.last_updated"));
	/* web warms until RouteConfiguration r1 arrives (G6) */
	assert_int_equal(len_at(j, "dynamic_listeners"), 1);
	assert_string_equal(str_at(j, "dynamic_listeners.0.name"), "web");
	assert_null(at(j, "dynamic_listeners.0.active_state"));
	assert_string_equal(str_at(j, "dynamic_listeners.0.warming_state.version_info"), "1");
	assert_string_equal(str_at(j, "dynamic_listeners.0.warming_state.listener.name"), "web");
	assert_recent_time(str_at(j, "dynamic_listeners.0.warming_state.last_updated"));
	arn_json_free(j);

	APPLY(R, "1", tj_route("r1", "c"));
	accepted();
	/* v2 references a route that is not there: v1 keeps serving, v2 warms */
	APPLY(L, "2", tj_listener_rds("web", 80, "r2"));
	accepted();
	j = section("envoy.admin.v3.ListenersConfigDump");
	assert_int_equal(len_at(j, "dynamic_listeners"), 1);
	assert_string_equal(str_at(j, "dynamic_listeners.0.active_state.version_info"), "1");
	assert_string_equal(
	    str_at(j, "dynamic_listeners.0.active_state.listener.filter_chains.0.filters.0."
		      "typed_config.rds.route_config_name"),
	    "r1");
	assert_string_equal(str_at(j, "dynamic_listeners.0.warming_state.version_info"), "2");
	assert_null(at(j, "dynamic_listeners.0.error_state"));
	arn_json_free(j);
}

/* X16: an application error (address in use) shows on that listener only. */
static void test_listeners_section_error_state(void **state)
{
	(void)state;
	APPLY(L, "1", tj_listener_inline("a", 80, "ra"));
	accepted();
	APPLY(L, "2", tj_listener_inline("a", 80, "ra2"), tj_listener_inline("b", 80, "rb"));
	assert_true(res.accepted);
	assert_int_equal(res.n_errors, 1);
	struct arn_json *j = section("envoy.admin.v3.ListenersConfigDump");
	assert_int_equal(len_at(j, "dynamic_listeners"), 2);
	assert_string_equal(str_at(j, "dynamic_listeners.0.name"), "a");
	assert_string_equal(str_at(j, "dynamic_listeners.0.active_state.version_info"), "2");
	assert_null(at(j, "dynamic_listeners.0.error_state"));
	assert_string_equal(str_at(j, "dynamic_listeners.1.name"), "b");
	assert_null(at(j, "dynamic_listeners.1.active_state"));
	assert_non_null(strstr(str_at(j, "dynamic_listeners.1.error_state.details"),
			       "already used by listener 'a'"));
	assert_string_equal(str_at(j, "dynamic_listeners.1.error_state.version_info"), "2");
	assert_string_equal(str_at(j, "dynamic_listeners.1.client_status"), "NACKED");
	arn_json_free(j);
}

/* ---- RoutesConfigDump and EndpointsConfigDump ---------------------------------------- */

static void test_routes_section_dynamic_and_inline(void **state)
{
	(void)state;
	APPLY(L, "1", tj_listener_inline("l", 80, "inline_rc"));
	accepted();
	APPLY(R, "5", tj_route("r1", "web"));
	accepted();
	struct arn_json *j = section("envoy.admin.v3.RoutesConfigDump");
	/* Envoy lists an HCM's inline route_config as a static route config */
	assert_int_equal(len_at(j, "static_route_configs"), 1);
	assert_string_equal(str_at(j, "static_route_configs.0.route_config.@type"), R);
	assert_string_equal(str_at(j, "static_route_configs.0.route_config.name"), "inline_rc");
	assert_recent_time(str_at(j, "static_route_configs.0.last_updated"));
	assert_int_equal(len_at(j, "dynamic_route_configs"), 1);
	assert_string_equal(str_at(j, "dynamic_route_configs.0.version_info"), "5");
	assert_string_equal(str_at(j, "dynamic_route_configs.0.route_config.name"), "r1");
	assert_string_equal(
	    str_at(j,
		   "dynamic_route_configs.0.route_config.virtual_hosts.0.routes.0.route.cluster"),
	    "web");
	arn_json_free(j);
}

static void test_endpoints_section_only_with_include_eds(void **state)
{
	(void)state;
	APPLY(C, "1", tj_cluster_static("s", "198.18.0.5", 81), tj_cluster_eds("api", "1s"));
	APPLY(E, "9", tj_cla("api", "198.18.0.10", 8080));
	accepted();
	struct arn_json *j = section("envoy.admin.v3.EndpointsConfigDump");
	assert_int_equal(len_at(j, "dynamic_endpoint_configs"), 1);
	assert_string_equal(str_at(j, "dynamic_endpoint_configs.0.version_info"), "9");
	assert_string_equal(str_at(j, "dynamic_endpoint_configs.0.endpoint_config.@type"), E);
	assert_string_equal(str_at(j, "dynamic_endpoint_configs.0.endpoint_config.cluster_name"),
			    "api");
	/* a STATIC cluster's load_assignment, named by the cluster, as Envoy */
	assert_int_equal(len_at(j, "static_endpoint_configs"), 1);
	assert_string_equal(str_at(j, "static_endpoint_configs.0.endpoint_config.cluster_name"),
			    "s");
	arn_json_free(j);
	/* /config_dump has it only with ?include_eds */
	struct arn_sb d = ARN_SB_INIT;
	assert_int_equal(arn_admin_config_dump_build_(&d, false), 0);
	assert_null(strstr(arn_sb_cstr(&d), "EndpointsConfigDump"));
	assert_non_null(strstr(arn_sb_cstr(&d), "ClustersConfigDump"));
	arn_sb_reset(&d);
	assert_int_equal(arn_admin_config_dump_build_(&d, true), 0);
	const char *t = arn_sb_cstr(&d);
	/* Envoy's order: clusters, endpoints, listeners, routes, secrets */
	const char *pc = strstr(t, "ClustersConfigDump"), *pe = strstr(t, "EndpointsConfigDump"),
		   *pl = strstr(t, "ListenersConfigDump"), *pr = strstr(t, "RoutesConfigDump"),
		   *ps = strstr(t, "SecretsConfigDump");
	assert_true(pc && pe && pl && pr && ps && pc < pe && pe < pl && pl < pr && pr < ps);
	/* the whole document is Envoy's ConfigDump */
	tj_assert_decodes(d.buf, d.len, "envoy.admin.v3.ConfigDump", "/config_dump");
	arn_sb_free(&d);
}

/* ---- SecretsConfigDump -------------------------------------------------------------------- */

/* The second line of PEM @p pem (malloc'd): for a key, base64 of the key
 * itself, certainly in any leak. */
static char *second_line(const char *pem)
{
	const char *nl = strchr(pem, '\n');
	return strndup(nl + 1, strcspn(nl + 1, "\n"));
}

static void test_secrets_section_redacted(void **state)
{
	(void)state;
	struct tcert tc;
	tcert_make(&tc, "arn-test");
	const char *cert = tc.cert_json, *key = tc.key_json;
	char *key_line = second_line(tc.key_pem);
	size_t cap = strlen(cert) + strlen(key) + 512;
	char *s1 = malloc(cap), *s2 = malloc(cap);
	const char *names[] = {"static_cert", "dyn_cert"};
	char *bufs_[] = {s1, s2};
	for (int i = 0; i < 2; i++)
		snprintf(bufs_[i], cap,
			 "{\"name\":\"%s\",\"tls_certificate\":{\"certificate_chain\":{"
			 "\"inline_string\":\"%s\"},\"private_key\":{\"inline_string\":\"%s\"}}}",
			 names[i], cert, key);
	APPLY_STATIC(S, s1);
	accepted();
	APPLY(S, "3", s2);
	accepted();
	struct arn_sb out = ARN_SB_INIT;
	assert_int_equal(arn_admin_config_dump(st, "envoy.admin.v3.SecretsConfigDump", &out), 0);
	assert_null(strstr(arn_sb_cstr(&out), key_line));
	arn_sb_free(&out);
	struct arn_json *j = section("envoy.admin.v3.SecretsConfigDump");
	assert_string_equal(str_at(j, "static_secrets.0.name"), "static_cert");
	assert_recent_time(str_at(j, "static_secrets.0.last_updated"));
	assert_string_equal(str_at(j, "static_secrets.0.secret.@type"), S);
	assert_string_equal(str_at(j, "static_secrets.0.secret.tls_certificate.private_key."
				      "inline_string"),
			    "[redacted]");
	assert_string_equal(str_at(j, "dynamic_active_secrets.0.name"), "dyn_cert");
	assert_string_equal(str_at(j, "dynamic_active_secrets.0.version_info"), "3");
	assert_string_equal(str_at(j, "dynamic_active_secrets.0.secret.tls_certificate."
				      "private_key.inline_string"),
			    "[redacted]");
	/* the certificate itself is not secret */
	assert_non_null(strstr(str_at(j, "dynamic_active_secrets.0.secret.tls_certificate."
					 "certificate_chain.inline_string"),
			       "BEGIN CERTIFICATE"));
	arn_json_free(j);
	/* a refused update keeps its bytes for error_state.failed_configuration,
	 * with the key redacted there too */
	snprintf(s2, cap,
		 "{\"name\":\"dyn_cert\",\"tls_certificate\":{\"certificate_chain\":{"
		 "\"inline_string\":\"not a certificate\"},\"private_key\":{\"inline_string\":"
		 "\"%s\"}}}",
		 key);
	APPLY(S, "4", s2);
	assert_false(res.accepted);
	assert_int_equal(arn_admin_config_dump(st, "envoy.admin.v3.SecretsConfigDump", &out), 0);
	assert_null(strstr(arn_sb_cstr(&out), key_line));
	arn_sb_free(&out);
	j = section("envoy.admin.v3.SecretsConfigDump");
	assert_string_equal(str_at(j, "dynamic_active_secrets.0.version_info"), "3");
	assert_string_equal(str_at(j, "dynamic_active_secrets.0.error_state.version_info"), "4");
	assert_string_equal(str_at(j, "dynamic_active_secrets.0.error_state.failed_configuration."
				      "tls_certificate.private_key.inline_string"),
			    "[redacted]");
	assert_string_equal(str_at(j, "dynamic_active_secrets.0.error_state.failed_configuration."
				      "tls_certificate.certificate_chain.inline_string"),
			    "not a certificate");
	arn_json_free(j);
	free(s1);
	free(s2);
	tcert_free(&tc);
	free(key_line);
}

static void test_unknown_section_refused(void **state)
{
	(void)state;
	struct arn_sb out = ARN_SB_INIT;
	assert_int_equal(arn_admin_config_dump(st, "envoy.admin.v3.Nope", &out), -EINVAL);
	assert_int_equal(out.len, 0);
	arn_sb_free(&out);
}

/* ---- /ready -----------------------------------------------------------------------------------
 */

static void test_ready_static_only(void **state)
{
	(void)state;
	arn_admin_set_started_(true);
	struct arn_sb why = ARN_SB_INIT;
	/* static configuration not applied yet */
	assert_int_equal(arn_admin_state(&why), ARN_ADMIN_STATE_INITIALIZING);
	struct arn_bootstrap b = {0};
	assert_int_equal(arn_config_apply_static(st, &b, &why), 0);
	arn_sb_reset(&why);
	assert_int_equal(arn_admin_state(&why), ARN_ADMIN_STATE_LIVE);
	arn_sb_free(&why);
}

/* /ready waits for the first Cluster and Listener responses and for what
 * warms from them; POST /healthcheck/fail makes it DRAINING. */
static void test_ready_initial_fetch_and_warming(void **state)
{
	(void)state;
	arn_admin_config_stop(ca);
	arn_config_destroy(st);
	struct arn_bootstrap b = {0};
	b.ads = true;
	st = arn_config_create(&b); /* real clock: the 15 s initial fetch does not pass */
	ca = arn_admin_config_start(st);
	arn_admin_set_started_(true);
	struct arn_sb why = ARN_SB_INIT;
	assert_int_equal(arn_config_apply_static(st, &b, &why), 0);
	assert_int_equal(arn_admin_state(&why), ARN_ADMIN_STATE_INITIALIZING);
	assert_non_null(strstr(arn_sb_cstr(&why), "config: waiting for the initial xDS fetch"));
	arn_config_initial_fetch_done(st, C);
	APPLY(L, "1", tj_listener_rds("web", 80, "r1"));
	arn_config_initial_fetch_done(st, L);
	arn_sb_reset(&why);
	assert_int_equal(arn_admin_state(&why), ARN_ADMIN_STATE_INITIALIZING);
	assert_non_null(strstr(arn_sb_cstr(&why),
			       "1 resource warming until what it references arrives: "
			       "Listener 'web'"));
	APPLY(L, "1", tj_listener_rds("web2", 81, "r2"));
	arn_sb_reset(&why);
	assert_int_equal(arn_admin_state(&why), ARN_ADMIN_STATE_INITIALIZING);
	assert_non_null(
	    strstr(arn_sb_cstr(&why), "2 resources warming until what they reference arrives: "));
	assert_non_null(strstr(arn_sb_cstr(&why), "Listener 'web2'"));
	APPLY(R, "1", tj_route("r1", "c"), tj_route("r2", "c"));
	accepted();
	arn_sb_reset(&why);
	assert_int_equal(arn_admin_state(&why), ARN_ADMIN_STATE_LIVE);
	arn_admin_set_healthcheck_failed(true);
	assert_int_equal(arn_admin_state(NULL), ARN_ADMIN_STATE_DRAINING);
	arn_admin_set_healthcheck_failed(false);
	assert_int_equal(arn_admin_state(NULL), ARN_ADMIN_STATE_LIVE);
	arn_sb_free(&why);
}

/* ---- /clusters and /listeners ---------------------------------------------------------------- */

static void test_clusters_output(void **state)
{
	(void)state;
	APPLY_STATIC(C, tj_cluster_static("xds_cluster", "127.0.0.1", 50000));
	APPLY(C, "1",
	      "{\"name\":\"api\",\"type\":\"EDS\",\"connect_timeout\":\"1s\",\"alt_stat_name\":"
	      "\"api_stats\",\"circuit_breakers\":{\"thresholds\":[{\"max_connections\":77}]},"
	      "\"eds_cluster_config\":{\"eds_config\":{\"ads\":{}}}}");
	accepted();
	APPLY(E, "1",
	      "{\"cluster_name\":\"api\",\"endpoints\":[{\"locality\":{\"region\":\"eu\",\"zone\":"
	      "\"eu-1\"},\"lb_endpoints\":[{\"endpoint\":{\"address\":{\"socket_address\":{"
	      "\"address\":\"198.18.0.10\",\"port_value\":8080}},\"hostname\":\"a.example\"},"
	      "\"load_balancing_weight\":3},{\"endpoint\":{\"address\":{\"socket_address\":{"
	      "\"address\":\"198.18.0.11\",\"port_value\":8080}}},\"health_status\":\"UNHEALTHY\""
	      "}]},{\"priority\":1,\"lb_endpoints\":[{\"endpoint\":{\"address\":{\"socket_"
	      "address\":{\"address\":\"198.18.0.12\",\"port_value\":9090}}},\"health_status\":"
	      "\"DEGRADED\"}]}]}");
	accepted();
	struct arn_sb t = ARN_SB_INIT;
	arn_admin_clusters_write_(&t, false);
	const char *want[] = {
	    "api::observability_name::api_stats\n",
	    "api::default_priority::max_connections::77\n",
	    "api::added_via_api::true\n",
	    "api::198.18.0.10:8080::weight::3\n",
	    "api::198.18.0.10:8080::health_flags::healthy\n",
	    "api::198.18.0.10:8080::hostname::a.example\n",
	    "api::198.18.0.10:8080::region::eu\n",
	    "api::198.18.0.10:8080::zone::eu-1\n",
	    "api::198.18.0.10:8080::cx_active::0\n",
	    "api::198.18.0.10:8080::rq_active::0\n",
	    "api::198.18.0.11:8080::health_flags::/failed_eds_health\n",
	    "api::198.18.0.11:8080::weight::1\n",
	    "api::198.18.0.12:9090::priority::1\n",
	    "api::198.18.0.12:9090::health_flags::/degraded_eds_health\n",
	    "xds_cluster::added_via_api::false\n",
	    "xds_cluster::127.0.0.1:50000::health_flags::healthy\n",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!strstr(arn_sb_cstr(&t), want[i]))
			fail_msg("/clusters lacks %s in:\n%s", want[i], arn_sb_cstr(&t));
	arn_sb_reset(&t);
	arn_admin_clusters_write_(&t, true);
	tj_assert_decodes(t.buf, t.len, "envoy.admin.v3.Clusters", "/clusters?format=json");
	struct arn_json *j = arn_json_parse(t.buf, t.len);
	assert_string_equal(str_at(j, "cluster_statuses.0.name"), "api");
	assert_string_equal(str_at(j, "cluster_statuses.0.host_statuses.1.health_status."
				      "eds_health_status"),
			    "UNHEALTHY");
	assert_string_equal(str_at(j, "cluster_statuses.0.host_statuses.0.locality.region"), "eu");
	arn_json_free(j);
	arn_sb_free(&t);
}

static void test_listeners_output(void **state)
{
	(void)state;
	APPLY(L, "1", tj_listener_inline("b", 81, "x"), tj_listener_inline("a", 80, "y"),
	      tj_listener_rds("warm", 82, "missing"));
	accepted();
	struct arn_sb t = ARN_SB_INIT;
	arn_admin_listeners_write_(&t, false);
	/* the active ones, by name; the warming one takes no traffic */
	assert_string_equal(arn_sb_cstr(&t), "a::0.0.0.0:80\nb::0.0.0.0:81\n");
	arn_sb_reset(&t);
	arn_admin_listeners_write_(&t, true);
	tj_assert_decodes(t.buf, t.len, "envoy.admin.v3.Listeners", "/listeners?format=json");
	arn_sb_free(&t);
}

/* ---- config.* stats and the deferred free -------------------------------------------------- */

static void test_config_stats_pulled(void **state)
{
	(void)state;
	APPLY(C, "1", tj_cluster_static("web", "198.18.0.10", 80));
	struct arn_stats_snapshot s;
	assert_int_equal(arn_stats_snapshot_take(&s), 0);
	bool seen_batches = false, seen_active = false;
	for (size_t i = 0; i < s.n; i++) {
		if (!strcmp(s.v[i].name, "config.batches_accepted")) {
			seen_batches = true;
			assert_int_equal(s.v[i].kind, ARN_STAT_COUNTER);
			assert_int_equal(s.v[i].counter, 1);
		}
		if (!strcmp(s.v[i].name, "config.clusters_active")) {
			seen_active = true;
			assert_int_equal(s.v[i].kind, ARN_STAT_GAUGE);
			assert_int_equal(s.v[i].gauge, 1);
		}
	}
	assert_true(seen_batches && seen_active);
	arn_stats_snapshot_free(&s);
}

static int freed;
static void count_free(void *arg)
{
	(void)arg;
	freed++;
}

/* What lib/stats and lib/accesslog free waits for every worker on the
 * store's RCU: the application's deferred-free queue (app_config.c). */
static void test_deferred_free_waits_for_workers(void **state)
{
	(void)state;
	struct rte_rcu_qsbr *q = arn_config_rcu(st);
	struct arn_defer *d = arn_defer_create(q);
	assert_non_null(d);
	arn_defer_set_default(d);
	assert_int_equal(rte_rcu_qsbr_thread_register(q, 3), 0);
	rte_rcu_qsbr_thread_online(q, 3);
	freed = 0;
	arn_defer_free(arn_defer_default(), count_free, NULL);
	arn_defer_reclaim(d);
	assert_int_equal(freed, 0); /* worker 3 may still read it */
	rte_rcu_qsbr_quiescent(q, 3);
	arn_defer_reclaim(d);
	assert_int_equal(freed, 1);
	/* and a stats scope released while a worker runs */
	static const struct arn_stat_def sd[] = {ARN_STAT_DEF(COUNTER, x, "x")};
	static struct arn_stats_schema sch = ARN_STATS_SCHEMA("arn_test", sd);
	struct arn_stats_scope *sc = arn_stats_scope_get(&sch, NULL, NULL);
	arn_stats_scope_put(sc);
	arn_defer_free(arn_defer_default(), count_free, NULL);
	arn_defer_reclaim(d);
	assert_int_equal(freed, 1);
	assert_int_equal(arn_defer_pending(d), 2);
	/* destroyed (workers gone): runs what is pending, frees are immediate again */
	rte_rcu_qsbr_thread_offline(q, 3);
	rte_rcu_qsbr_thread_unregister(q, 3);
	arn_defer_destroy(d);
	assert_int_equal(freed, 2);
	arn_defer_free(arn_defer_default(), count_free, NULL);
	assert_int_equal(freed, 3);
}

static void test_one_registration_per_process(void **state)
{
	(void)state;
	assert_null(arn_admin_config_start(st));
	assert_null(arn_admin_config_start(NULL));
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	arn_log_set_spec("error", NULL);
	assert_true(arn_proto_init() == 0);
	const struct CMUnitTest tests[] = {
	    T(test_clusters_section_static_active_warming),
	    T(test_clusters_section_error_state),
	    T(test_listeners_section_states),
	    T(test_listeners_section_error_state),
	    T(test_routes_section_dynamic_and_inline),
	    T(test_endpoints_section_only_with_include_eds),
	    T(test_secrets_section_redacted),
	    T(test_unknown_section_refused),
	    T(test_ready_static_only),
	    T(test_ready_initial_fetch_and_warming),
	    T(test_clusters_output),
	    T(test_listeners_output),
	    T(test_config_stats_pulled),
	    T(test_deferred_free_waits_for_workers),
	    T(test_one_registration_per_process),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	arn_config_result_free(&res);
	return rc;
}
