/*
 * envoy.filters.http.ext_proc in the model (conv_ext_proc.c): every field
 * Arion acts on converted as Envoy reads it, every field or value it does
 * not build refused naming the field.
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
#define LISTENER(filters)                                                                          \
	"{\"name\":\"l\"," ADDR ",\"filter_chains\":[{\"filters\":[" filters "]}]}"
#define HCM(hfilters, route_extra)                                                                 \
	"{\"name\":\"hcm\",\"typed_config\":{" HCM_AT ",\"stat_prefix\":\"ing\","                  \
	"\"route_config\":{\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],"                \
	"\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\"}" route_extra      \
	"}]}]},\"http_filters\":[" hfilters ROUTER "]}}"

#define EP_AT AT("envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor")
#define EP_ROUTE_AT AT("envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute")
#define EP(fields) "{\"name\":\"ep\",\"typed_config\":{" EP_AT "," fields "}},"
#define EP_ROUTE(fields) ",\"typed_per_filter_config\":{\"ep\":{" EP_ROUTE_AT "," fields "}}"
#define SVC "\"grpc_service\":{\"envoy_grpc\":{\"cluster_name\":\"proc\"}}"
#define SKIP_RESP "\"processing_mode\":{\"response_header_mode\":\"SKIP\"}"

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

/* The fields Arion acts on, as Envoy reads them: the service (cluster,
 * authority, initial_metadata; timeout taken, as Envoy's stream sets no
 * deadline), Envoy's 200 ms message_timeout unless set, the modes, the
 * mutation rules' switches, forward_rules, stat_prefix; and the route's
 * ExtProcPerRoute (overrides; disabled). Fails before: the filter's type
 * is unknown to Arion, the listener refused. */
static void test_ext_proc_model(void **state)
{
	(void)state;
	tc_ok(L, LISTENER(HCM(EP(SVC "," SKIP_RESP), "")));
	const struct arn_cfg_hcm *h = hcm0();
	assert_int_equal(h->http_filters[0], ARN_CFG_HF_EXT_PROC);
	const struct arn_cfg_ext_proc *f = h->http_filter_cfgs[0];
	assert_int_equal(f->message_timeout_ms, 200);
	assert_int_equal(f->mode.request_headers, ARN_CFG_EXT_PROC_SEND);
	assert_int_equal(f->mode.response_headers, ARN_CFG_EXT_PROC_SKIP);
	assert_false(f->failure_mode_allow);
	assert_int_equal(f->svc.cluster.len, 4);
	assert_memory_equal(f->svc.cluster.name, "proc", 4);
	assert_null(f->svc.authority);
	assert_false(f->disable_clear_route_cache || f->clear_route_cache_always); /* DEFAULT */
	/* route_cache_action CLEAR: taken (fails before: refused, "CLEAR: not
	 * supported by Arion") */
	tc_ok(L, LISTENER(HCM(EP(SVC "," SKIP_RESP ",\"route_cache_action\":\"CLEAR\""), "")));
	f = hcm0()->http_filter_cfgs[0];
	assert_true(f->clear_route_cache_always);
	assert_false(f->disable_clear_route_cache);
	tc_ok(L,
	      LISTENER(HCM(
		  EP("\"grpc_service\":{\"envoy_grpc\":{\"cluster_name\":\"proc\","
		     "\"authority\":\"p.example\"},\"timeout\":\"10s\",\"initial_metadata\":"
		     "[{\"key\":\"X-Tenant\",\"value\":\"t1\"}]},"
		     "\"processing_mode\":{\"request_header_mode\":\"SKIP\","
		     "\"response_header_mode\":\"SKIP\",\"request_body_mode\":\"NONE\","
		     "\"request_trailer_mode\":\"SKIP\",\"response_trailer_mode\":\"DEFAULT\"},"
		     "\"failure_mode_allow\":true,\"message_timeout\":\"1.5s\","
		     "\"max_message_timeout\":\"5s\",\"stat_prefix\":\"p1\","
		     "\"mutation_rules\":{\"allow_envoy\":true,\"disallow_system\":true,"
		     "\"disallow_is_error\":true,\"allow_all_routing\":false},"
		     "\"forward_rules\":{\"allowed_headers\":{\"patterns\":[{\"prefix\":\"x-\"}]},"
		     "\"disallowed_headers\":{\"patterns\":[{\"exact\":\"x-secret\"}]}},"
		     "\"disable_immediate_response\":true,\"route_cache_action\":\"RETAIN\""),
		  EP_ROUTE("\"overrides\":{\"processing_mode\":{\"response_header_mode\":\"SKIP\"},"
			   "\"grpc_service\":{\"envoy_grpc\":{\"cluster_name\":\"other\"}},"
			   "\"grpc_initial_metadata\":[{\"key\":\"x-route\",\"value\":\"r\"}]}"))));
	h = hcm0();
	f = h->http_filter_cfgs[0];
	assert_int_equal(f->mode.request_headers, ARN_CFG_EXT_PROC_SKIP);
	assert_true(f->failure_mode_allow);
	assert_int_equal(f->message_timeout_ms, 1500);
	assert_int_equal(f->max_message_timeout_ms, 5000);
	assert_string_equal(f->stat_prefix, "p1");
	assert_true(f->allow_envoy && f->disallow_system && f->disallow_is_error);
	assert_false(f->disallow_all);
	assert_int_equal(f->n_fwd_allow, 1);
	assert_int_equal(f->n_fwd_deny, 1);
	assert_true(f->disable_immediate_response);
	assert_true(f->disable_clear_route_cache); /* RETAIN */
	assert_false(f->clear_route_cache_always);
	assert_int_equal(f->svc.authority_len, 9);
	assert_int_equal(f->svc.n_md, 1);
	assert_memory_equal(f->svc.md[0].name, "x-tenant", 8);
	const struct arn_cfg_route_table *rt = h->inline_routes;
	assert_non_null(rt);
	const struct arn_cfg_ext_proc_route *pr = arn_cfg_per_filter_find(
	    &rt->vhosts[0], &rt->vhosts[0].routes[0], "ep", 2, ARN_CFG_PF_EXT_PROC);
	assert_non_null(pr);
	assert_false(pr->disabled);
	assert_true(pr->has_mode && pr->has_svc);
	assert_int_equal(pr->mode.request_headers, ARN_CFG_EXT_PROC_SEND);
	assert_memory_equal(pr->svc.cluster.name, "other", 5);
	assert_int_equal(pr->n_md, 1);
	/* response_header_mode SEND (Envoy's default, Envoy Gateway's
	 * processingMode.response): taken (fails before: refused, "does not
	 * send the response's headers yet") */
	tc_ok(L, LISTENER(HCM(EP(SVC), "")));
	f = hcm0()->http_filter_cfgs[0];
	assert_int_equal(f->mode.response_headers, ARN_CFG_EXT_PROC_SEND);
	tc_ok(L, LISTENER(HCM(EP(SVC ",\"processing_mode\":{\"request_header_mode\":\"SKIP\","
				     "\"response_header_mode\":\"SEND\"}"),
			      "")));
	f = hcm0()->http_filter_cfgs[0];
	assert_int_equal(f->mode.request_headers, ARN_CFG_EXT_PROC_SKIP);
	assert_int_equal(f->mode.response_headers, ARN_CFG_EXT_PROC_SEND);
	assert_false(f->mode.request_body_buffered);
	/* request_body_mode BUFFERED (fails before: refused, "not built") */
	tc_ok(L, LISTENER(
		     HCM(EP(SVC ",\"processing_mode\":{\"request_body_mode\":\"BUFFERED\"}"), "")));
	f = hcm0()->http_filter_cfgs[0];
	assert_true(f->mode.request_body_buffered);
	assert_false(f->mode.response_body_buffered);
	assert_false(f->allow_mode_override);
	/* response_body_mode BUFFERED (fails before: refused, "not built") */
	tc_ok(L, LISTENER(HCM(EP(SVC ",\"processing_mode\":{\"response_body_mode\":\"BUFFERED\"}"),
			      "")));
	assert_true(((const struct arn_cfg_ext_proc *)hcm0()->http_filter_cfgs[0])
			->mode.response_body_buffered);
	/* response_body_mode STREAMED, Envoy AI Gateway's SSE completions
	 * (fails before: refused, "not built") */
	tc_ok(L, LISTENER(HCM(EP(SVC ",\"processing_mode\":{\"response_body_mode\":\"STREAMED\"}"),
			      "")));
	f = hcm0()->http_filter_cfgs[0];
	assert_true(f->mode.response_body_streamed);
	assert_false(f->mode.response_body_buffered);
	/* allow_mode_override (fails before: refused, "not supported by
	 * Arion yet") */
	tc_ok(L, LISTENER(HCM(EP(SVC "," SKIP_RESP ",\"allow_mode_override\":true"), "")));
	assert_true(
	    ((const struct arn_cfg_ext_proc *)hcm0()->http_filter_cfgs[0])->allow_mode_override);
	tc_ok(L, LISTENER(HCM(EP(SVC "," SKIP_RESP), EP_ROUTE("\"disabled\":true"))));
	rt = hcm0()->inline_routes;
	pr = arn_cfg_per_filter_find(&rt->vhosts[0], &rt->vhosts[0].routes[0], "ep", 2,
				     ARN_CFG_PF_EXT_PROC);
	assert_non_null(pr);
	assert_true(pr->disabled);
}

/* What Arion does not build, refused naming the field: bodies, trailers, attributes, metadata,
 * observability mode, mode overrides, route re-selection, google_grpc,
 * routing-header mutations; and what Envoy refuses. */
static void test_ext_proc_refusals(void **state)
{
	(void)state;
	static const struct {
		const char *fields, *want;
	} c[] = {
	    {SVC ",\"processing_mode\":{\"response_header_mode\":\"SKIP\","
		 "\"request_body_mode\":\"STREAMED\"}",
	     "processing_mode.request_body_mode: STREAMED: not built by Arion"},
	    {SVC ",\"processing_mode\":{\"response_header_mode\":\"SKIP\","
		 "\"response_body_mode\":\"BUFFERED_PARTIAL\"}",
	     "processing_mode.response_body_mode: BUFFERED_PARTIAL: not built by Arion"},
	    {SVC ",\"processing_mode\":{\"response_header_mode\":\"SKIP\","
		 "\"response_body_mode\":\"FULL_DUPLEX_STREAMED\"}",
	     "processing_mode.response_body_mode: FULL_DUPLEX_STREAMED: not built by Arion"},
	    {SVC ",\"processing_mode\":{\"response_header_mode\":\"SKIP\","
		 "\"request_body_mode\":\"FULL_DUPLEX_STREAMED\"}",
	     "processing_mode.request_body_mode: FULL_DUPLEX_STREAMED: not built by Arion"},
	    {SVC ",\"processing_mode\":{\"response_header_mode\":\"SKIP\","
		 "\"request_trailer_mode\":\"SEND\"}",
	     "processing_mode.request_trailer_mode: SEND: not built by Arion"},
	    {"\"processing_mode\":{\"response_header_mode\":\"SKIP\"}",
	     "grpc_service: missing (Envoy requires it)"},
	    {"\"grpc_service\":{\"google_grpc\":{\"target_uri\":\"x\",\"stat_prefix\":\"s\"}}"
	     "," SKIP_RESP,
	     "grpc_service.google_grpc: not supported by Arion"},
	    {"\"grpc_service\":{\"envoy_grpc\":{}}," SKIP_RESP,
	     "grpc_service.envoy_grpc.cluster_name: missing"},
	    {"\"grpc_service\":{\"envoy_grpc\":{\"cluster_name\":\"p\"},\"initial_metadata\":"
	     "[{\"key\":\"te\",\"value\":\"x\"}]}," SKIP_RESP,
	     "key: 'te': not a header Arion lets the configuration set"},
	    {SVC "," SKIP_RESP ",\"request_attributes\":[\"request.path\"]",
	     "request_attributes: not supported by Arion"},
	    {SVC "," SKIP_RESP ",\"response_attributes\":[\"response.code\"]",
	     "response_attributes: not supported by Arion"},
	    {SVC "," SKIP_RESP ",\"filter_metadata\":{\"a\":1}", "filter_metadata: not supported"},
	    {SVC "," SKIP_RESP ",\"metadata_options\":{}", "metadata_options: not supported"},
	    {SVC "," SKIP_RESP ",\"observability_mode\":true", "observability_mode: true"},
	    {SVC "," SKIP_RESP ",\"deferred_close_timeout\":\"1s\"",
	     "deferred_close_timeout: only with observability_mode"},
	    {SVC "," SKIP_RESP
		 ",\"route_cache_action\":\"CLEAR\",\"disable_clear_route_cache\":true",
	     "route_cache_action: set with disable_clear_route_cache"},
	    {SVC "," SKIP_RESP ",\"mutation_rules\":{\"allow_all_routing\":true}",
	     "mutation_rules.allow_all_routing: true: not supported by Arion"},
	    {SVC "," SKIP_RESP ",\"mutation_rules\":{\"allow_expression\":{\"regex\":\"x\"}}",
	     "mutation_rules.allow_expression: not supported by Arion"},
	    {SVC "," SKIP_RESP ",\"message_timeout\":\"3601s\"",
	     "message_timeout: more than an hour"},
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		char j[2048];
		snprintf(j, sizeof(j), LISTENER(HCM(EP("%s"), "")), c[i].fields);
		tc_refused(L, j, c[i].want);
	}
	/* a route's */
	tc_refused(L, LISTENER(HCM(EP(SVC "," SKIP_RESP), EP_ROUTE("\"disabled\":false"))),
		   "disabled: false: Envoy accepts only true");
	/* a route's processing_mode with the response's headers DEFAULT
	 * (SEND): taken */
	tc_ok(L, LISTENER(HCM(EP(SVC "," SKIP_RESP),
			      EP_ROUTE("\"overrides\":{\"processing_mode\":{}}"))));
	tc_refused(L,
		   LISTENER(HCM(EP(SVC "," SKIP_RESP),
				EP_ROUTE("\"overrides\":{\"request_attributes\":[\"a\"]}"))),
		   "overrides.request_attributes: not supported by Arion");
	tc_refused(
	    L,
	    LISTENER(HCM(EP(SVC "," SKIP_RESP), EP_ROUTE("\"overrides\":{\"async_mode\":true}"))),
	    "overrides.async_mode");
}

const struct CMUnitTest conv_ext_proc_tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    T(test_ext_proc_model),
    T(test_ext_proc_refusals),
};
const size_t n_conv_ext_proc_tests = sizeof(conv_ext_proc_tests) / sizeof(conv_ext_proc_tests[0]);
