/*
 * HCM tracing with the OpenTelemetry tracer, a route's tracing and
 * decorator, in the model (conv_tracing.c): every field Arion acts on
 * converted as Envoy reads it, every field or value it does not build
 * refused naming the field. Through the binary path (JSON encoded, then
 * applied as a control plane's bytes): OpenTelemetryConfig.service_name
 * is newer than Arion's API copy and read from the unknown bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tc.h"

#include "arn_config_l4.h"

#define ADDR "\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\",\"port_value\":9000}}"
#define AT(t) "\"@type\":\"type.googleapis.com/" t "\""
#define HCM_AT                                                                                     \
	AT("envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager")
#define ROUTER                                                                                     \
	"{\"name\":\"envoy.filters.http.router\",\"typed_config\":{" AT(                           \
	    "envoy.extensions.filters.http.router.v3.Router") "}}"
#define LISTENER(tracing, route_extra)                                                             \
	"{\"name\":\"l\"," ADDR ",\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","             \
	"\"typed_config\":{" HCM_AT ",\"stat_prefix\":\"ing\"" tracing ","                         \
	"\"route_config\":{\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],"                \
	"\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\"}" route_extra      \
	"}]}]},\"http_filters\":[" ROUTER "]}}]}]}"
#define OTEL_AT AT("envoy.config.trace.v3.OpenTelemetryConfig")
#define PROVIDER(fields)                                                                           \
	"\"provider\":{\"name\":\"envoy.tracers.opentelemetry\",\"typed_config\":{" OTEL_AT fields \
	"}}"
#define SVC ",\"grpc_service\":{\"envoy_grpc\":{\"cluster_name\":\"otel\"}}"
#define TRACING(fields) ",\"tracing\":{" fields "}"

static int setup(void **state)
{
	arn_config_set_features(ARN_CONFIG_FEATURE_L4 | ARN_CONFIG_FEATURE_HTTP_L4);
	return tc_setup(state);
}

static int teardown(void **state)
{
	arn_config_set_features(0);
	return tc_teardown(state);
}

static const struct arn_cfg_hcm *hcm0(void)
{
	const struct arn_cfg_listener *l = listener("l");
	assert_non_null(l);
	return l->chains[0].hcm;
}

/* Envoy's defaults (100 % each, 256, service.name unknown_service:envoy),
 * Percents rounded to 10000ths, the service, the custom tags; a route's
 * FractionalPercent overrides, tags and decorator. Fails before: tracing
 * refused ("tracing: not supported by Arion"). */
static void test_tracing_model(void **state)
{
	(void)state;
	tc_ok(L, LISTENER(TRACING(PROVIDER(SVC)), ""));
	const struct arn_cfg_tracing *t = hcm0()->tracing;
	assert_non_null(t);
	assert_int_equal(t->client_sampling.numerator, 10000);
	assert_int_equal(t->random_sampling.numerator, 10000);
	assert_int_equal(t->overall_sampling.denominator, 10000);
	assert_int_equal(t->max_path_tag_length, 256);
	assert_int_equal(t->cluster.len, 4);
	assert_memory_equal(t->cluster.name, "otel", 4);
	assert_string_equal(t->service_name, "unknown_service:envoy");
	assert_null(hcm0()->inline_routes->vhosts[0].routes[0].trace);
	setenv("ARN_TEST_TAG_ENV", "from-env", 1);
	tc_ok(L, LISTENER(
		     TRACING("\"client_sampling\":{\"value\":12.345},\"random_sampling\":{"
			     "\"value\":0.005},\"overall_sampling\":{\"value\":0},"
			     "\"max_path_tag_length\":10,\"custom_tags\":["
			     "{\"tag\":\"a\",\"literal\":{\"value\":\"v\"}},"
			     "{\"tag\":\"e\",\"environment\":{\"name\":\"ARN_TEST_TAG_ENV\"}},"
			     "{\"tag\":\"d\",\"environment\":{\"name\":\"ARN_TEST_NO_SUCH\","
			     "\"default_value\":\"dv\"}},"
			     "{\"tag\":\"h\",\"request_header\":{\"name\":\"X-Tag\","
			     "\"default_value\":\"none\"}}]," PROVIDER(
				 ",\"grpc_service\":{\"envoy_grpc\":{\"cluster_name\":\"otel\","
				 "\"authority\":\"c.example\"},\"timeout\":\"2s\","
				 "\"initial_metadata\":[{\"key\":\"X-Tenant\",\"value\":\"t1\"}]},"
				 "\"service_name\":\"gw-1\"")),
		     ",\"tracing\":{\"random_sampling\":{\"numerator\":5,\"denominator\":"
		     "\"TEN_THOUSAND\"},\"custom_tags\":[{\"tag\":\"r\",\"literal\":{\"value\":"
		     "\"rv\"}}]},\"decorator\":{\"operation\":\"op-1\",\"propagate\":false}"));
	t = hcm0()->tracing;
	assert_int_equal(t->client_sampling.numerator, 1235); /* 12.345 % rounded */
	assert_int_equal(t->random_sampling.numerator, 1);    /* 0.005 % rounded up */
	assert_int_equal(t->overall_sampling.numerator, 0);
	assert_int_equal(t->max_path_tag_length, 10);
	assert_int_equal(t->authority_len, 9);
	assert_int_equal(t->timeout_ms, 2000);
	assert_int_equal(t->n_md, 1);
	assert_memory_equal(t->md[0].name, "x-tenant", 8);
	assert_int_equal(t->service_name_len, 4);
	assert_memory_equal(t->service_name, "gw-1", 4);
	assert_int_equal(t->n_tags, 4);
	assert_int_equal(t->tags[0].kind, ARN_CFG_TRACE_TAG_LITERAL);
	assert_string_equal(t->tags[1].value, "from-env");
	assert_string_equal(t->tags[2].value, "dv");
	assert_int_equal(t->tags[3].kind, ARN_CFG_TRACE_TAG_HEADER);
	assert_string_equal(t->tags[3].header, "x-tag");
	assert_string_equal(t->tags[3].value, "none");
	const struct arn_cfg_route_trace *rt = hcm0()->inline_routes->vhosts[0].routes[0].trace;
	assert_non_null(rt);
	assert_int_equal(rt->random_sampling.numerator, 5);
	assert_int_equal(rt->random_sampling.denominator, 10000);
	assert_int_equal(rt->client_sampling.denominator, 0); /* unset: the HCM's */
	assert_int_equal(rt->n_tags, 1);
	assert_string_equal(rt->operation, "op-1");
	assert_false(rt->propagate);
	/* a decorator alone: propagate true */
	tc_ok(L, LISTENER(TRACING(PROVIDER(SVC)), ",\"decorator\":{\"operation\":\"x\"}"));
	rt = hcm0()->inline_routes->vhosts[0].routes[0].trace;
	assert_true(rt->propagate);
	unsetenv("ARN_TEST_TAG_ENV");
}

/* What Arion does not build, refused naming the field. */
static void test_tracing_refusals(void **state)
{
	(void)state;
	static const struct {
		const char *l, *want;
	} cases[] = {
	    {LISTENER(TRACING("\"verbose\":true," PROVIDER(SVC)), ""), "tracing.verbose"},
	    {LISTENER(TRACING("\"random_sampling\":{\"value\":101}," PROVIDER(SVC)), ""),
	     "tracing.random_sampling.value: 101: a percentage is 0 to 100"},
	    {LISTENER(TRACING("\"client_sampling\":{}"), ""), "tracing.provider: missing"},
	    {LISTENER(
		 TRACING("\"provider\":{\"name\":\"envoy.tracers.datadog\",\"typed_config\":{" AT(
		     "envoy.config.trace.v3.DatadogConfig") ",\"collector_cluster\":\"d\","
							    "\"service_name\":\"s\"}}"),
		 ""),
	     "Arion has the OpenTelemetry tracer"},
	    {LISTENER(TRACING(PROVIDER("")), ""), "grpc_service: missing"},
	    {LISTENER(TRACING(PROVIDER(",\"grpc_service\":{\"google_grpc\":{\"target_uri\":\"x\","
				       "\"stat_prefix\":\"s\"}}")),
		      ""),
	     "grpc_service.google_grpc"},
	    {LISTENER(TRACING("\"custom_tags\":[{\"tag\":\"m\",\"metadata\":{}}]," PROVIDER(SVC)),
		      ""),
	     "custom_tags[0].metadata"},
	    {LISTENER(TRACING("\"custom_tags\":[{\"tag\":\"m\"}]," PROVIDER(SVC)), ""),
	     "custom_tags[0]: no type"},
	    {LISTENER(TRACING(PROVIDER(SVC)), ",\"decorator\":{}"), "decorator.operation"},
	    {LISTENER(TRACING(PROVIDER(SVC)),
		      ",\"tracing\":{\"overall_sampling\":{\"numerator\":1,\"denominator\":9}}"),
	     "overall_sampling.denominator"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		tc_refused(L, cases[i].l, cases[i].want);
	/* 33 custom tags: past the bound */
	char tags[4096], l[6000];
	size_t n = 0;
	for (int i = 0; i < 33; i++)
		n += (size_t)snprintf(tags + n, sizeof(tags) - n,
				      "%s{\"tag\":\"t%d\",\"literal\":{\"value\":\"v\"}}",
				      i ? "," : "", i);
	snprintf(l, sizeof(l),
		 "{\"name\":\"l\"," ADDR ",\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","
		 "\"typed_config\":{" HCM_AT
		 ",\"stat_prefix\":\"ing\",\"tracing\":{\"custom_tags\":["
		 "%s]," PROVIDER(
		     SVC) "},\"route_config\":{\"virtual_hosts\":[]},\"http_filters\":[" ROUTER
			  "]}}]}]}",
		 tags);
	tc_refused(L, l, "custom_tags: 33 tags: at most 32");
}

/* spawn_upstream_span (Envoy 1.29, a BoolValue newer than Arion's API
 * copy: read from the unknown bytes the binary path carries): true, false
 * and absent in the model. Fails before: refused as an unknown field. */
static void test_tracing_spawn_upstream_span(void **state)
{
	(void)state;
	tc_ok(L, LISTENER(TRACING("\"spawn_upstream_span\":true," PROVIDER(SVC)), ""));
	assert_true(hcm0()->tracing->spawn_upstream_span);
	tc_ok(L, LISTENER(TRACING("\"spawn_upstream_span\":false," PROVIDER(SVC)), ""));
	assert_false(hcm0()->tracing->spawn_upstream_span);
	tc_ok(L, LISTENER(TRACING(PROVIDER(SVC)), ""));
	assert_false(hcm0()->tracing->spawn_upstream_span);
}

#define ZIPKIN(fields)                                                                             \
	"\"provider\":{\"name\":\"envoy.tracers.zipkin\",\"typed_config\":{" AT(                   \
	    "envoy.config.trace.v3.ZipkinConfig") fields "}}"
#define ZK_MIN "\"collector_cluster\":\"zipkin\",\"collector_endpoint\":\"/api/v2/spans\""

/* envoy.tracers.zipkin's ZipkinConfig in the model: Envoy's defaults
 * (Host the cluster's name, 64-bit trace ids, a shared span context) and
 * every field set; what Arion does not build refused naming the field.
 * Fails before: "Arion has only the OpenTelemetry tracer". */
static void test_tracing_zipkin(void **state)
{
	(void)state;
	tc_ok(L,
	      LISTENER(TRACING(ZIPKIN("," ZK_MIN ",\"collector_endpoint_version\":\"HTTP_JSON\"")),
		       ""));
	const struct arn_cfg_tracing *t = hcm0()->tracing;
	assert_int_equal(t->tracer, ARN_CFG_TRACER_ZIPKIN);
	assert_int_equal(t->cluster.len, 6);
	assert_memory_equal(t->cluster.name, "zipkin", 6);
	assert_int_equal(t->zk_path_len, 13);
	assert_memory_equal(t->zk_path, "/api/v2/spans", 13);
	assert_int_equal(t->zk_host_len, 6);
	assert_memory_equal(t->zk_host, "zipkin", 6);
	assert_false(t->zk_trace_id_128bit);
	assert_true(t->zk_shared_span_context);
	tc_ok(L, LISTENER(TRACING(ZIPKIN("," ZK_MIN ",\"collector_endpoint_version\":\"HTTP_JSON\","
					 "\"trace_id_128bit\":true,\"shared_span_context\":false,"
					 "\"collector_hostname\":\"zipkin.example\"")),
			  ""));
	t = hcm0()->tracing;
	assert_true(t->zk_trace_id_128bit);
	assert_false(t->zk_shared_span_context);
	assert_int_equal(t->zk_host_len, 14);
	assert_memory_equal(t->zk_host, "zipkin.example", 14);
	static const struct {
		const char *l, *want;
	} cases[] = {
	    {LISTENER(TRACING(ZIPKIN("," ZK_MIN)), ""),
	     "collector_endpoint_version: DEPRECATED_AND_UNAVAILABLE_DO_NOT_USE"},
	    {LISTENER(TRACING(ZIPKIN("," ZK_MIN ",\"collector_endpoint_version\":\"HTTP_PROTO\"")),
		      ""),
	     "collector_endpoint_version: HTTP_PROTO: not supported by Arion"},
	    {LISTENER(TRACING(ZIPKIN("," ZK_MIN ",\"collector_endpoint_version\":\"GRPC\"")), ""),
	     "collector_endpoint_version: 3: not supported by Arion"},
	    {LISTENER(TRACING(ZIPKIN(",\"collector_endpoint\":\"/api/v2/spans\","
				     "\"collector_endpoint_version\":\"HTTP_JSON\"")),
		      ""),
	     "collector_cluster: missing"},
	    {LISTENER(TRACING(ZIPKIN(",\"collector_cluster\":\"z\",\"collector_endpoint\":\"api\","
				     "\"collector_endpoint_version\":\"HTTP_JSON\"")),
		      ""),
	     "collector_endpoint: not a path"},
	    {LISTENER(TRACING(ZIPKIN(",\"collector_cluster\":\"z\",\"collector_endpoint\":\"/a b\","
				     "\"collector_endpoint_version\":\"HTTP_JSON\"")),
		      ""),
	     "collector_endpoint: a space or control byte"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		tc_refused(L, cases[i].l, cases[i].want);
}

const struct CMUnitTest conv_tracing_tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    T(test_tracing_model),
    T(test_tracing_refusals),
    T(test_tracing_spawn_upstream_span),
    T(test_tracing_zipkin),
};
const size_t n_conv_tracing_tests = sizeof(conv_tracing_tests) / sizeof(conv_tracing_tests[0]);
