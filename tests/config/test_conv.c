/*
 * Converters: every family into the model, and every refusal naming the
 * resource, the field path and the reason.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include <openssl/x509.h>

#include "arn_bootstrap.h"
#include "arn_proto.h"

#include "tboot.h"
#include "tc.h"

/* A listener with an inline route_config and HCM fields of the issue. */
static void test_listener_hcm_inline(void **state)
{
	(void)state;
	tc_ok(
	    L,
	    "{\"name\":\"web\",\"address\":{\"socket_address\":{\"address\":\"198.18.0.2\","
	    "\"port_value\":8080}},\"per_connection_buffer_limit_bytes\":32768,"
	    "\"tcp_backlog_size\":64,"
	    "\"filter_chains\":[{\"filters\":[{\"name\":\"envoy.filters.network.http_connection_"
	    "manager\","
	    "\"typed_config\":{" TJ_HCM_AT ",\"stat_prefix\":\"ingress\",\"codec_type\":\"HTTP1\","
	    "\"stream_idle_timeout\":\"30s\",\"request_timeout\":\"10s\","
	    "\"request_headers_timeout\":\"2s\",\"max_request_headers_kb\":32,"
	    "\"common_http_protocol_options\":{\"idle_timeout\":\"60s\",\"max_headers_count\":50},"
	    "\"use_remote_address\":true,\"xff_num_trusted_hops\":2,\"server_name\":\"arion\","
	    "\"skip_xff_append\":true,\"delayed_close_timeout\":\"0.5s\",\"http_protocol_options\":"
	    "{\"accept_http_10\":true},"
	    "\"generate_request_id\":false,"
	    "\"access_log\":[{\"name\":\"f\",\"typed_config\":{\"@type\":\"type.googleapis.com/"
	    "envoy.extensions.access_loggers.file.v3.FileAccessLog\",\"path\":\"/tmp/a.log\","
	    "\"log_format\":{\"text_format\":\"%PROTOCOL%\\n\"}}},"
	    "{\"name\":\"o\",\"typed_config\":{\"@type\":\"type.googleapis.com/"
	    "envoy.extensions.access_loggers.stream.v3.StdoutAccessLog\"}},"
	    "{\"name\":\"e\",\"typed_config\":{\"@type\":\"type.googleapis.com/"
	    "envoy.extensions.access_loggers.stream.v3.StderrAccessLog\"}}],"
	    "\"route_config\":{\"name\":\"local\",\"virtual_hosts\":[{\"name\":\"vh\","
	    "\"domains\":[\"*\"],\"routes\":[{\"match\":{\"prefix\":\"/"
	    "\"},\"route\":{\"cluster\":\"web\"}}]}]},"
	    "\"http_filters\":[" TJ_ROUTER "]}}]}]}");
	const struct arn_cfg_listener *l = listener("web");
	assert_non_null(l);
	assert_int_equal(l->addr, (198u << 24) | (18u << 16) | 2);
	assert_int_equal(l->port, 8080);
	assert_int_equal(l->per_connection_buffer_limit, 32768);
	assert_int_equal(l->backlog, 64);
	assert_false(l->chains[0].hcm->suppress_envoy_headers);
	assert_int_equal(l->n_chains, 1);
	const struct arn_cfg_hcm *h = l->chains[0].hcm;
	assert_int_equal(l->chains[0].kind, ARN_CFG_NF_HCM);
	assert_non_null(h);
	assert_string_equal(h->stat_prefix, "ingress");
	assert_int_equal(h->codec, ARN_CFG_CODEC_HTTP1);
	assert_int_equal(h->stream_idle_timeout_ms, 30000);
	assert_int_equal(h->request_timeout_ms, 10000);
	assert_int_equal(h->request_headers_timeout_ms, 2000);
	assert_int_equal(h->max_request_headers_kb, 32);
	assert_int_equal(h->idle_timeout_ms, 60000);
	assert_int_equal(h->max_headers_count, 50);
	assert_true(h->use_remote_address);
	assert_int_equal(h->xff_num_trusted_hops, 2);
	assert_string_equal(h->server_name, "arion");
	assert_int_equal(h->server_name_len, 5);
	assert_false(h->generate_request_id);
	assert_true(h->skip_xff_append);
	assert_int_equal(h->delayed_close_timeout_ms, 500);
	assert_true(h->accept_http_10);
	assert_int_equal(h->n_access_logs, 3);
	assert_int_equal(h->access_logs[0].kind, ARN_CFG_LOG_FILE);
	assert_string_equal(h->access_logs[0].path, "/tmp/a.log");
	assert_string_equal(h->access_logs[0].format, "%PROTOCOL%\n");
	assert_int_equal(h->access_logs[1].kind, ARN_CFG_LOG_STDOUT);
	assert_int_equal(h->access_logs[2].kind, ARN_CFG_LOG_STDERR);
	assert_int_equal(h->n_http_filters, 1);
	assert_int_equal(h->http_filters[0], ARN_CFG_HF_ROUTER);
	assert_non_null(h->inline_routes);
	assert_ptr_equal(arn_cfg_hcm_routes(gen(), h), h->inline_routes);
	/* found by address, and by 0.0.0.0 fallback only when one exists */
	assert_ptr_equal(arn_cfg_listener_find(gen(), (198u << 24) | (18u << 16) | 2, 8080), l);
	assert_null(arn_cfg_listener_find(gen(), 1, 8080));
}

/* Defaults are Envoy's. */
static void test_hcm_defaults(void **state)
{
	(void)state;
	tc_ok(R, tj_route("r", "c"));
	tc_ok(L, tj_listener_rds("l", 80, "r"));
	const struct arn_cfg_hcm *h = listener("l")->chains[0].hcm;
	assert_int_equal(h->stream_idle_timeout_ms, 300000);
	assert_int_equal(h->request_timeout_ms, 0);
	assert_int_equal(h->idle_timeout_ms, 3600000);
	assert_int_equal(h->max_request_headers_kb, 60);
	assert_int_equal(h->max_headers_count, 100);
	assert_true(h->generate_request_id);
	assert_string_equal(h->server_name, "envoy");
	assert_int_equal(h->server_name_len, 5);
	assert_false(h->use_remote_address);
	assert_int_equal(listener("l")->per_connection_buffer_limit, 1024 * 1024);
	assert_int_equal(listener("l")->backlog, 0);
	assert_false(h->suppress_envoy_headers);
	/* http2_protocol_options unset: Envoy's defaults (issue 19) */
	assert_int_equal(h->codec, ARN_CFG_CODEC_AUTO);
	assert_int_equal(h->h2.hpack_table_size, 4096);
	assert_int_equal(h->h2.max_concurrent_streams, 2147483647);
	assert_int_equal(h->h2.initial_stream_window_size, 268435456);
	assert_int_equal(h->h2.initial_connection_window_size, 268435456);
	assert_int_equal(h->h2.max_outbound_frames, 10000);
	assert_int_equal(h->h2.max_outbound_control_frames, 1000);
}

/* server_name is a header value, written into every response: a CR or LF
 * from the control plane is refused, not written (it would add header
 * lines of its own). */
static void test_hcm_server_name_refuses_cr_lf(void **state)
{
	(void)state;
#define SNL(sn)                                                                                    \
	"{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","                \
	"\"port_value\":81}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","                  \
	"\"typed_config\":{" TJ_HCM_AT ",\"stat_prefix\":\"x\",\"server_name\":\"" sn "\","        \
	"\"route_config\":{},\"http_filters\":[" TJ_ROUTER "]}}]}]}"
	tc_refused(L, SNL("a\\r\\nset-cookie: x=1"), "server_name: contains CR, LF or NUL");
	tc_refused(L, SNL("a\\nb"), "server_name: contains CR, LF or NUL");
	tc_ok(L, SNL("arion edge"));
	const struct arn_cfg_hcm *h = listener("l")->chains[0].hcm;
	assert_string_equal(h->server_name, "arion edge");
	assert_memory_equal(h->server_line, "server: arion edge\r\n", 21);
#undef SNL
}

/* An access log's format is compiled when the configuration is converted,
 * so that a format Arion cannot write is refused (NACKed, naming the
 * field) as Envoy refuses it, not accepted and then turned off by the
 * worker's runtime with an error in Arion's own log. */
static void test_hcm_access_log_format_refused(void **state)
{
	(void)state;
#define ALF(lf)                                                                                    \
	"{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","                \
	"\"port_value\":81}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","                  \
	"\"typed_config\":{" TJ_HCM_AT ",\"stat_prefix\":\"x\",\"access_log\":[{\"name\":\"f\","   \
	"\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.access_loggers."       \
	"stream.v3.StdoutAccessLog\"," lf "}}],\"route_config\":{},"                              \
	"\"http_filters\":[" TJ_ROUTER "]}}]}]}"
	tc_refused(L, ALF("\"log_format\":{\"text_format\":\"%NOPE%\\n\"}"),
		   "access_log[0].typed_config.log_format.text_format: '%NOPE%'");
	tc_refused(L, ALF("\"log_format\":{\"json_format\":{\"a\":\"%NOPE%\"}}"),
		   "access_log[0].typed_config.log_format.json_format");
	/* Arion writes string values (command operators) only: a number or a
	 * nested object is refused, not left out of every line */
	tc_refused(L, ALF("\"log_format\":{\"json_format\":{\"a\":\"%PROTOCOL%\",\"n\":3}}"),
		   "access_log[0].typed_config.log_format.json_format.n: Arion takes string values");
	tc_ok(L, ALF("\"log_format\":{\"json_format\":{\"a\":\"%PROTOCOL%\"},"
		     "\"omit_empty_values\":true}"));
	assert_true(listener("l")->chains[0].hcm->access_logs[0].omit_empty_values);
#undef ALF
}

/* HTTP ALS's additional_*_to_log names are looked up in every logged
 * request and copied into its entry: at most 32 names (Arion's bound; Envoy
 * sets none) of at most 256 bytes, none empty, each refused naming the
 * list and the entry; the names kept lower case (Envoy's LowerCaseString). */
static void test_als_header_names_bounded(void **state)
{
	(void)state;
#define ALS(x)                                                                                     \
	"{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","                \
	"\"port_value\":81}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","                  \
	"\"typed_config\":{" TJ_HCM_AT ",\"stat_prefix\":\"x\",\"access_log\":[{\"name\":\"g\","   \
	"\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.access_loggers."       \
	"grpc.v3.HttpGrpcAccessLogConfig\",\"common_config\":{\"log_name\":\"n\","                 \
	"\"transport_api_version\":\"V3\",\"grpc_service\":{\"envoy_grpc\":{\"cluster_name\":"     \
	"\"c\"}}}," x "}}],\"route_config\":{},\"http_filters\":[" TJ_ROUTER "]}}]}]}"
	static char json[32768], names[16384], big[300];
	size_t k = 0;
	for (int i = 0; i < 33; i++)
		k += (size_t)snprintf(names + k, sizeof(names) - k, "%s\"X-H%d\"", i ? "," : "", i);
	snprintf(json, sizeof(json), ALS("\"additional_request_headers_to_log\":[%s]"), names);
	tc_refused(L, json,
		   "access_log[0].typed_config.additional_request_headers_to_log: 33 names: at "
		   "most 32");
	memset(big, 'a', 257);
	big[257] = 0;
	snprintf(json, sizeof(json), ALS("\"additional_response_headers_to_log\":[\"ok\",\"%s\"]"),
		 big);
	tc_refused(L, json,
		   "access_log[0].typed_config.additional_response_headers_to_log[1]: 257 bytes: "
		   "a header name of at most 256");
	tc_refused(L, ALS("\"additional_response_trailers_to_log\":[\"\"]"),
		   "access_log[0].typed_config.additional_response_trailers_to_log[0]: empty");
	tc_refused(L, ALS("\"additional_response_trailers_to_log\":[\"a\\r\\nb\"]"),
		   "additional_response_trailers_to_log[0]: contains CR, LF or NUL");
	/* the bounds themselves are accepted */
	names[k - strlen(",\"X-H32\"")] = 0;
	big[256] = 0;
	snprintf(json, sizeof(json),
		 ALS("\"additional_request_headers_to_log\":[%s],"
		     "\"additional_response_headers_to_log\":[\"%s\"]"),
		 names, big);
	tc_ok(L, json);
	const struct arn_cfg_grpc_log *g = listener("l")->chains[0].hcm->access_logs[0].grpc;
	assert_non_null(g);
	assert_int_equal(g->n_req_hdrs, 32);
	assert_string_equal(g->req_hdrs[31], "x-h31");
	assert_int_equal(g->n_resp_hdrs, 1);
	assert_int_equal(strlen(g->resp_hdrs[0]), 256);
#undef ALS
}

/* local_reply_config: mappers (filter, status_code, body, headers_to_add,
 * body_format_override) and body_format converted; what Arion cannot do
 * refused naming the field, never accepted and skipped. */
static void test_hcm_local_reply_config(void **state)
{
	(void)state;
#define LRC(lrc)                                                                                   \
	"{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","                \
	"\"port_value\":81}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","                  \
	"\"typed_config\":{" TJ_HCM_AT ",\"stat_prefix\":\"x\",\"local_reply_config\":{" lrc "},"  \
	"\"route_config\":{},\"http_filters\":[" TJ_ROUTER "]}}]}]}"
#define SCF(op, v)                                                                                 \
	"\"filter\":{\"status_code_filter\":{\"comparison\":{\"op\":\"" op "\",\"value\":"         \
	"{\"default_value\":" v ",\"runtime_key\":\"k\"}}}}"
	tc_ok(L,
	      LRC("\"mappers\":[{" SCF(
		  "EQ",
		  "404") ",\"status_code\":410,"
			 "\"body\":{\"inline_string\":\"gone\"},\"headers_to_add\":[{\"header\":"
			 "{\"key\":\"X-A\",\"value\":\"1\"},\"append_action\":\"ADD_IF_ABSENT\"}]},"
			 "{" SCF(
			     "GE",
			     "500") ",\"body_format_override\":{\"json_format\":"
				    "{\"m\":\"%LOCAL_REPLY_BODY%\"},\"content_type\":\"application/"
				    "problem+json\"}}],"
				    "\"body_format\":{\"text_format\":\"%LOCAL_REPLY_BODY%\\n\"}"));
	const struct arn_cfg_local_reply *lr = listener("l")->chains[0].hcm->local_reply;
	assert_non_null(lr);
	assert_int_equal(lr->n_mappers, 2);
	assert_int_equal(lr->mappers[0].status, 410);
	assert_true(lr->mappers[0].has_body);
	assert_memory_equal(lr->mappers[0].body, "gone", 4);
	assert_int_equal(lr->mappers[0].n_headers, 1);
	assert_string_equal(lr->mappers[0].headers[0].key, "x-a");
	assert_int_equal(lr->mappers[0].headers[0].append, ARN_CFG_ADD_IF_ABSENT);
	assert_non_null(lr->mappers[0].filter_json);
	assert_int_equal(lr->mappers[1].status, 0);
	assert_false(lr->mappers[1].has_body);
	assert_string_equal(lr->mappers[1].format.content_type, "application/problem+json");
	assert_non_null(lr->mappers[1].format.json);
	assert_string_equal(lr->format.text, "%LOCAL_REPLY_BODY%\n");
	/* what Arion cannot do, named */
	tc_refused(L, LRC("\"mappers\":[{\"status_code\":410}]"), "mappers[0].filter: missing");
	tc_refused(L, LRC("\"mappers\":[{" SCF("EQ", "404") ",\"status_code\":600}]"),
		   "mappers[0].status_code: 600 is not in [200, 600)");
	tc_refused(L, LRC("\"mappers\":[{\"filter\":{\"traceable_filter\":{}}}]"),
		   "mappers[0]: filter.traceable_filter: this access log filter is not supported");
	tc_refused(L,
		   LRC("\"mappers\":[{" SCF(
		       "EQ", "404") ",\"headers_to_add\":[{\"header\":"
				    "{\"key\":\"x\",\"value\":\"%RESPONSE_CODE%\"}}]}]"),
		   "mappers[0].headers_to_add[0].header.value: '%' (a substitution) is not "
		   "supported");
	tc_refused(L, LRC("\"body_format\":{\"text_format\":\"%NOPE%\"}"),
		   "local_reply_config.body_format.text_format: '%NOPE%'");
	tc_refused(L,
		   LRC("\"mappers\":[{" SCF("EQ", "404") ",\"body_format_override\":"
							 "{\"json_format\":{\"n\":3}}}]"),
		   "body_format_override.json_format.n: Arion takes string values");
	/* a content type is a header value */
	tc_refused(L,
		   LRC("\"body_format\":{\"text_format\":\"x\",\"content_type\":\"a\\r\\nb: c\"}"),
		   "body_format.content_type: contains CR, LF or NUL");
	/* bounds: mappers, headers, a body */
	char big[ARN_CFG_LR_MAPPERS_MAX * 120 + 4096];
	size_t n = 0;
	for (int i = 0; i <= ARN_CFG_LR_MAPPERS_MAX; i++)
		n += (size_t)snprintf(big + n, sizeof(big) - n, "%s{" SCF("EQ", "404") "}",
				      i ? "," : "");
	char lst[sizeof(big) + 1024];
	snprintf(lst, sizeof(lst), LRC("\"mappers\":[%s]"), big);
	tc_refused(L, lst, "mappers: 65 mappers: Arion takes at most 64");
	n = 0;
	for (int i = 0; i <= ARN_CFG_LR_HEADERS_MAX; i++)
		n += (size_t)snprintf(big + n, sizeof(big) - n,
				      "%s{\"header\":{\"key\":\"x%d\",\"value\":\"v\"}}",
				      i ? "," : "", i);
	snprintf(lst, sizeof(lst),
		 LRC("\"mappers\":[{" SCF("EQ", "404") ",\"headers_to_add\":[%s]}]"), big);
	tc_refused(L, lst, "mappers[0].headers_to_add: 9 headers: Arion takes at most 8");
	char *body = malloc(ARN_CFG_LR_BODY_MAX + 2);
	memset(body, 'b', ARN_CFG_LR_BODY_MAX + 1);
	body[ARN_CFG_LR_BODY_MAX + 1] = 0;
	char *cfg = malloc(ARN_CFG_LR_BODY_MAX + 1024);
	snprintf(cfg, ARN_CFG_LR_BODY_MAX + 1024,
		 LRC("\"mappers\":[{" SCF("EQ", "404") ",\"body\":{\"inline_string\":\"%s\"}}]"),
		 body);
	tc_refused(L, cfg, "mappers[0].body.inline_string: 65537 bytes: longer than Arion's bound");
	free(cfg);
	free(body);
#undef SCF
#undef LRC
}

/* http2_protocol_options as written, with Envoy's ranges; fields Arion
 * does not apply are refused, not ignored (issue 19). */
static void test_hcm_http2_options(void **state)
{
	(void)state;
#define H2L(opts)                                                                                  \
	"{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","                \
	"\"port_value\":81}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","                  \
	"\"typed_config\":{" TJ_HCM_AT ",\"stat_prefix\":\"x\",\"codec_type\":\"HTTP2\","          \
	"\"http2_protocol_options\":{" opts "},\"route_config\":{},"                               \
	"\"http_filters\":[" TJ_ROUTER "]}}]}]}"
	tc_ok(L, H2L("\"hpack_table_size\":0,\"max_concurrent_streams\":50,"
		     "\"initial_stream_window_size\":65535,\"initial_connection_window_size\":"
		     "1048576,\"max_outbound_frames\":100"));
	const struct arn_cfg_hcm *h = listener("l")->chains[0].hcm;
	assert_int_equal(h->codec, ARN_CFG_CODEC_HTTP2);
	assert_int_equal(h->h2.hpack_table_size, 0);
	assert_int_equal(h->h2.max_concurrent_streams, 50);
	assert_int_equal(h->h2.initial_stream_window_size, 65535);
	assert_int_equal(h->h2.initial_connection_window_size, 1048576);
	assert_int_equal(h->h2.max_outbound_frames, 100);
	tc_refused(L, H2L("\"initial_stream_window_size\":1000"),
		   "initial_stream_window_size: 1000: must be 65535 to 2147483647");
	tc_refused(L, H2L("\"max_concurrent_streams\":0"),
		   "max_concurrent_streams: 0: must be 1 to 2147483647");
	tc_refused(L, H2L("\"allow_connect\":true"), "allow_connect");
	/* keepalive PINGs to clients too; connection_idle_interval is a
	 * client codec's option, which Envoy's server codec never reads:
	 * accepted, and nothing on a connection manager */
	tc_ok(L, H2L("\"connection_keepalive\":{\"interval\":\"10s\",\"timeout\":\"2s\","
		     "\"connection_idle_interval\":\"30s\"}"));
	h = listener("l")->chains[0].hcm;
	assert_int_equal(h->h2.keepalive_interval_ms, 10000);
	assert_int_equal(h->h2.keepalive_timeout_ms, 2000);
	assert_int_equal(h->h2.keepalive_idle_interval_ms, 0);
	assert_true(h->h2.keepalive_jitter_pct == 15);
	tc_refused(L, H2L("\"connection_keepalive\":{\"interval\":\"1s\"}"),
		   "connection_keepalive.timeout: missing");
#undef H2L
}

/* A cluster's http2_protocol_options.connection_keepalive as Envoy's
 * KeepaliveSettings: timeout required, jitter 15 % unless given. */
static void test_cluster_h2_keepalive(void **state)
{
	(void)state;
#define KAC(ka)                                                                                    \
	"{\"name\":\"ka\",\"connect_timeout\":\"1s\",\"typed_extension_protocol_options\":{"       \
	"\"envoy.extensions.upstreams.http.v3.HttpProtocolOptions\":{\"@type\":\"type.googleapis." \
	"com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions\",\"explicit_http_config\":{"  \
	"\"http2_protocol_options\":{\"connection_keepalive\":{" ka "}}}}}}"
	tc_ok(C,
	      KAC("\"interval\":\"10s\",\"timeout\":\"2s\",\"connection_idle_interval\":\"30s\""));
	const struct arn_cfg_cluster *c = cluster("ka");
	assert_int_equal(c->http.upstream, 1);
	assert_int_equal(c->http.h2.keepalive_interval_ms, 10000);
	assert_int_equal(c->http.h2.keepalive_timeout_ms, 2000);
	assert_int_equal(c->http.h2.keepalive_idle_interval_ms, 30000);
	assert_true(c->http.h2.keepalive_jitter_pct == 15);
	tc_ok(C, KAC("\"timeout\":\"1s\",\"interval_jitter\":{\"value\":0}"));
	c = cluster("ka");
	assert_int_equal(c->http.h2.keepalive_interval_ms, 0);
	assert_true(c->http.h2.keepalive_jitter_pct == 0);
	tc_refused(C, KAC("\"interval\":\"1s\""), "connection_keepalive.timeout: missing");
	tc_refused(C, KAC("\"timeout\":\"1s\",\"interval_jitter\":{\"value\":150}"),
		   "interval_jitter: 150: must be between 0 and 100");
#undef KAC
}

/* The router's options: suppress_envoy_headers is honoured,
 * respect_expected_rq_timeout refused rather than ignored. */
static void test_router_options(void **state)
{
	(void)state;
	static const char *const l1 =
	    "{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
	    "\"port_value\":81}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","
	    "\"typed_config\":{" TJ_HCM_AT ",\"stat_prefix\":\"x\",\"route_config\":{},"
	    "\"http_filters\":[{\"name\":\"envoy.filters.http.router\",\"typed_config\":{"
	    "\"@type\":\"type.googleapis.com/envoy.extensions.filters.http.router.v3.Router\","
	    "\"suppress_envoy_headers\":true}}]}}]}]}";
	tc_ok(L, l1);
	assert_true(listener("l")->chains[0].hcm->suppress_envoy_headers);
	tc_refused(
	    L,
	    "{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
	    "\"port_value\":81}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","
	    "\"typed_config\":{" TJ_HCM_AT ",\"stat_prefix\":\"x\",\"route_config\":{},"
	    "\"http_filters\":[{\"name\":\"envoy.filters.http.router\",\"typed_config\":{"
	    "\"@type\":\"type.googleapis.com/envoy.extensions.filters.http.router.v3.Router\","
	    "\"respect_expected_rq_timeout\":true}}]}}]}]}",
	    "respect_expected_rq_timeout: not supported by Arion");
}

/* An HCM access log's filter is carried to the logger (as JSON) and checked
 * on arrival: one Arion cannot evaluate refuses the listener, by name. */
static void test_access_log_filter(void **state)
{
	(void)state;
#define AL_LISTENER(FILTER)                                                                        \
	"{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","                \
	"\"port_value\":82}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","                  \
	"\"typed_config\":{" TJ_HCM_AT ",\"stat_prefix\":\"x\",\"route_config\":{},"               \
	"\"access_log\":[{\"name\":\"o\",\"filter\":" FILTER ",\"typed_config\":{\"@type\":"       \
	"\"type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog\"}}],"    \
	"\"http_filters\":[" TJ_ROUTER "]}}]}]}"
	tc_ok(L, AL_LISTENER(
		     "{\"and_filter\":{\"filters\":[{\"status_code_filter\":{\"comparison\":"
		     "{\"op\":\"GE\",\"value\":{\"default_value\":500,\"runtime_key\":\"k\"}}}},"
		     "{\"not_health_check_filter\":{}}]}}"));
	const struct arn_cfg_access_log *a = &listener("l")->chains[0].hcm->access_logs[0];
	assert_non_null(a->filter_json);
	assert_non_null(strstr(a->filter_json, "\"status_code_filter\""));
	assert_non_null(strstr(a->filter_json, "500"));
	tc_refused(L, AL_LISTENER("{\"runtime_filter\":{\"runtime_key\":\"x\"}}"),
		   "access_log[0]: filter.runtime_filter: this access log filter is not supported");
	tc_refused(L, AL_LISTENER("{\"response_flag_filter\":{\"flags\":[\"UH\",\"XX\"]}}"),
		   "access_log[0]: filter.response_flag_filter.flags[1]: 'XX' is not a response "
		   "flag");
#undef AL_LISTENER
}

/* envoy.filters.http.grpc_stats: accepted before the router;
 * stats_for_all_methods is carried; fields asking for what Arion does not
 * count are refused by name, not ignored. */
static void test_grpc_stats_filter(void **state)
{
	(void)state;
#define GS_LISTENER(CFG)                                                                           \
	"{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","                \
	"\"port_value\":83}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","                  \
	"\"typed_config\":{" TJ_HCM_AT ",\"stat_prefix\":\"x\",\"route_config\":{},"               \
	"\"http_filters\":[{\"name\":\"envoy.filters.http.grpc_stats\",\"typed_config\":{"         \
	"\"@type\":\"type.googleapis.com/"                                                         \
	"envoy.extensions.filters.http.grpc_stats.v3.FilterConfig\"" CFG "}}," TJ_ROUTER "]}}]}]}"
	tc_ok(L, GS_LISTENER(""));
	assert_true(listener("l")->chains[0].hcm->grpc_stats);
	assert_false(listener("l")->chains[0].hcm->grpc_stats_all_methods);
	tc_ok(L, GS_LISTENER(",\"stats_for_all_methods\":true"));
	assert_true(listener("l")->chains[0].hcm->grpc_stats_all_methods);
	/* Envoy Gateway's: accepted (nothing in Arion reads filter state) */
	tc_ok(L, GS_LISTENER(",\"emit_filter_state\":true,\"stats_for_all_methods\":true"));
	assert_true(listener("l")->chains[0].hcm->grpc_stats_all_methods);
	tc_refused(L, GS_LISTENER(",\"enable_upstream_stats\":true"),
		   "enable_upstream_stats: not supported by Arion");
	tc_refused(L,
		   GS_LISTENER(",\"individual_method_stats_allowlist\":{\"services\":[{\"name\":"
			       "\"s\",\"method_names\":[\"M\"]}]}"),
		   "individual_method_stats_allowlist: not supported by Arion");
#undef GS_LISTENER
}

/* envoy.filters.http.grpc_web (GrpcWeb, no field in Envoy's API): accepted,
 * typed or by name alone, and the connection manager translates gRPC-Web
 * (Arion refused the listener before: Contour puts it in every chain); a
 * second filter is refused. */
static void test_grpc_web_filter(void **state)
{
	(void)state;
#define GW_LISTENER(F)                                                                             \
	"{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","                \
	"\"port_value\":83}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","                  \
	"\"typed_config\":{" TJ_HCM_AT ",\"stat_prefix\":\"x\",\"route_config\":{},"               \
	"\"http_filters\":[" F TJ_ROUTER "]}}]}]}"
#define GW_TYPED(CFG)                                                                              \
	"{\"name\":\"envoy.filters.http.grpc_web\",\"typed_config\":{\"@type\":"                     \
	"\"type.googleapis.com/envoy.extensions.filters.http.grpc_web.v3.GrpcWeb\"" CFG "}},"
	tc_ok(L, GW_LISTENER(""));
	assert_false(listener("l")->chains[0].hcm->grpc_web);
	tc_ok(L, GW_LISTENER(GW_TYPED("")));
	assert_true(listener("l")->chains[0].hcm->grpc_web);
	tc_ok(L, GW_LISTENER("{\"name\":\"envoy.filters.http.grpc_web\"},"));
	assert_true(listener("l")->chains[0].hcm->grpc_web);
	tc_refused(L, GW_LISTENER(GW_TYPED("") GW_TYPED("")), "a second grpc_web filter");
#undef GW_TYPED
#undef GW_LISTENER
}

/* envoy.filters.http.compressor: the library's typed_config converted
 * with Envoy's defaults, the deprecated fields honoured without
 * response_direction_config, bad values refused naming the field. */
static void test_compressor_filter(void **state)
{
	(void)state;
#define CMP_LISTENER(CFG, LIB)                                                                     \
	"{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","                \
	"\"port_value\":83}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","                  \
	"\"typed_config\":{" TJ_HCM_AT ",\"stat_prefix\":\"x\",\"route_config\":{},"               \
	"\"http_filters\":[{\"name\":\"envoy.filters.http.compressor\",\"typed_config\":{"         \
	"\"@type\":\"type.googleapis.com/"                                                         \
	"envoy.extensions.filters.http.compressor.v3.Compressor\"" CFG                             \
	",\"compressor_library\":{\"name\":\"text\",\"typed_config\":{\"@type\":"                  \
	"\"type.googleapis.com/" LIB "}}}}," TJ_ROUTER "]}}]}]}"
#define GZ(X) "envoy.extensions.compression.gzip.compressor.v3.Gzip\"" X
	tc_ok(L, CMP_LISTENER("", GZ("")));
	const struct arn_cfg_hcm *h = listener("l")->chains[0].hcm;
	assert_int_equal(h->n_compressors, 1);
	const struct arn_cfg_compressor *o = &h->compressors[0];
	assert_string_equal(o->name, "text");
	assert_int_equal(o->lib, ARN_CFG_CMP_GZIP);
	assert_true(o->enabled);
	assert_false(o->response_config);
	assert_int_equal(o->min_content_length, 30);
	assert_null(o->content_types);
	assert_int_equal(o->gz_window, 12);
	assert_int_equal(o->gz_memlevel, 5);
	assert_int_equal(o->gz_level, -1);
	assert_int_equal(o->chunk_size, 4096);
	assert_false(h->cmp_strip_accept_encoding);
	/* the deprecated fields, without response_direction_config */
	tc_ok(L,
	      CMP_LISTENER(",\"content_length\":100,\"content_type\":[\"Text/HTML\"],"
			   "\"disable_on_etag_header\":true,\"remove_accept_encoding_header\":true",
			   GZ(",\"window_bits\":15,\"compression_level\":\"BEST_SPEED\"")));
	o = &listener("l")->chains[0].hcm->compressors[0];
	assert_int_equal(o->min_content_length, 100);
	assert_int_equal(o->n_content_types, 1);
	assert_string_equal(o->content_types[0], "text/html");
	assert_true(o->disable_on_etag && o->remove_accept_encoding);
	assert_true(listener("l")->chains[0].hcm->cmp_strip_accept_encoding);
	assert_int_equal(o->gz_window, 15);
	assert_int_equal(o->gz_level, 1);
	/* response_direction_config wins over them (Envoy ignores them then) */
	tc_ok(L, CMP_LISTENER(",\"content_length\":100,\"response_direction_config\":{"
			      "\"common_config\":{\"min_content_length\":7,\"enabled\":{"
			      "\"default_value\":false,\"runtime_key\":\"k\"}}}",
			      GZ("")));
	o = &listener("l")->chains[0].hcm->compressors[0];
	assert_true(o->response_config);
	assert_false(o->enabled);
	assert_int_equal(o->min_content_length, 7);
	tc_ok(L,
	      CMP_LISTENER(
		  "", "envoy.extensions.compression.brotli.compressor.v3.Brotli\",\"quality\":5"));
	o = &listener("l")->chains[0].hcm->compressors[0];
	assert_int_equal(o->lib, ARN_CFG_CMP_BROTLI);
	assert_int_equal(o->br_quality, 5);
	assert_int_equal(o->br_window, 18);
	tc_ok(
	    L,
	    CMP_LISTENER(
		"",
		"envoy.extensions.compression.zstd.compressor.v3.Zstd\",\"compression_level\":9"));
	o = &listener("l")->chains[0].hcm->compressors[0];
	assert_int_equal(o->lib, ARN_CFG_CMP_ZSTD);
	assert_int_equal(o->zs_level, 9);
	/* refused, naming the field */
	tc_refused(L, CMP_LISTENER("", GZ(",\"window_bits\":8")),
		   "compressor_library.typed_config.window_bits: 8 is out of range: 9 to 15");
	tc_refused(L, CMP_LISTENER("", GZ(",\"chunk_size\":100")),
		   "typed_config.chunk_size: 100 is out of range: 4096 to 65536");
	tc_refused(
	    L,
	    CMP_LISTENER(
		"", "envoy.extensions.compression.brotli.compressor.v3.Brotli\",\"quality\":12"),
	    "typed_config.quality: 12 is out of range: 0 to 11");
	tc_refused(L,
		   CMP_LISTENER("", "envoy.extensions.compression.zstd.compressor.v3.Zstd\","
				    "\"dictionary\":{\"filename\":\"d\"}"),
		   "typed_config.dictionary: not supported by Arion");
	tc_refused(L, CMP_LISTENER(",\"request_direction_config\":{}", GZ("")),
		   "request_direction_config: request compression is not supported by Arion");
	tc_ok(L, CMP_LISTENER(",\"request_direction_config\":{\"common_config\":{\"enabled\":{"
			      "\"default_value\":false,\"runtime_key\":\"k\"}}}",
			      GZ("")));
	/* an unknown library: its type named */
	tc_refused(L, CMP_LISTENER("", "envoy.extensions.filters.http.router.v3.Router\""),
		   "compressor library 'envoy.extensions.filters.http.router.v3.Router' is not "
		   "supported by Arion");
#undef GZ
#undef CMP_LISTENER
}

/* envoy.filters.http.decompressor: the library's typed_config converted
 * with Envoy's defaults (GzipDecompressorFactory: window 15, chunk 4096,
 * max_inflate_ratio 100; both directions on, advertise_accept_encoding
 * true), the directions' fields taken, bad values refused naming the
 * field (Envoy's validation ranges). */
static void test_decompressor_filter(void **state)
{
	(void)state;
#define DC_LISTENER(CFG, LIB)                                                                      \
	"{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","                \
	"\"port_value\":83}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","                  \
	"\"typed_config\":{" TJ_HCM_AT ",\"stat_prefix\":\"x\",\"route_config\":{},"               \
	"\"http_filters\":[{\"name\":\"envoy.filters.http.decompressor\",\"typed_config\":{"       \
	"\"@type\":\"type.googleapis.com/"                                                         \
	"envoy.extensions.filters.http.decompressor.v3.Decompressor\"" CFG                         \
	",\"decompressor_library\":{\"name\":\"in\",\"typed_config\":{\"@type\":"                  \
	"\"type.googleapis.com/" LIB "}}}}," TJ_ROUTER "]}}]}]}"
#define DGZ(X) "envoy.extensions.compression.gzip.decompressor.v3.Gzip\"" X
	tc_ok(L, DC_LISTENER("", DGZ("")));
	const struct arn_cfg_hcm *h = listener("l")->chains[0].hcm;
	assert_int_equal(h->n_decompressors, 1);
	const struct arn_cfg_decompressor *o = &h->decompressors[0];
	assert_string_equal(o->name, "in");
	assert_int_equal(o->lib, ARN_CFG_CMP_GZIP);
	assert_true(o->req_enabled && o->resp_enabled && o->advertise);
	assert_false(o->req_ignore_nt || o->resp_ignore_nt);
	assert_int_equal(o->gz_window, 15);
	assert_int_equal(o->chunk_size, 4096);
	assert_int_equal(o->max_ratio, 100);
	tc_ok(L, DC_LISTENER(
		     ",\"request_direction_config\":{\"common_config\":{\"enabled\":{"
		     "\"default_value\":false,\"runtime_key\":\"k\"}},"
		     "\"advertise_accept_encoding\":false},\"response_direction_config\":{"
		     "\"common_config\":{\"ignore_no_transform_header\":true}}",
		     DGZ(",\"window_bits\":9,\"chunk_size\":8192,\"max_inflate_ratio\":1032")));
	o = &listener("l")->chains[0].hcm->decompressors[0];
	assert_false(o->req_enabled);
	assert_false(o->advertise);
	assert_true(o->resp_enabled && o->resp_ignore_nt);
	assert_int_equal(o->gz_window, 9);
	assert_int_equal(o->chunk_size, 8192);
	assert_int_equal(o->max_ratio, 1032);
	tc_ok(L, DC_LISTENER("", "envoy.extensions.compression.brotli.decompressor.v3.Brotli\","
				 "\"disable_ring_buffer_reallocation\":true"));
	o = &listener("l")->chains[0].hcm->decompressors[0];
	assert_int_equal(o->lib, ARN_CFG_CMP_BROTLI);
	assert_true(o->br_no_realloc);
	tc_ok(L, DC_LISTENER("", "envoy.extensions.compression.zstd.decompressor.v3.Zstd\","
				 "\"chunk_size\":65536"));
	o = &listener("l")->chains[0].hcm->decompressors[0];
	assert_int_equal(o->lib, ARN_CFG_CMP_ZSTD);
	assert_int_equal(o->chunk_size, 65536);
	/* refused, naming the field */
	tc_refused(L, DC_LISTENER("", DGZ(",\"window_bits\":16")),
		   "decompressor_library.typed_config.window_bits: 16 is out of range: 9 to 15");
	tc_refused(L, DC_LISTENER("", DGZ(",\"max_inflate_ratio\":0")),
		   "typed_config.max_inflate_ratio: 0 is out of range: 1 to 1032");
	tc_refused(L, DC_LISTENER("", DGZ(",\"max_inflate_ratio\":1033")),
		   "typed_config.max_inflate_ratio: 1033 is out of range: 1 to 1032");
	tc_refused(L,
		   DC_LISTENER("", "envoy.extensions.compression.brotli.decompressor.v3.Brotli\","
				   "\"chunk_size\":4095"),
		   "typed_config.chunk_size: 4095 is out of range: 4096 to 65536");
	tc_refused(L,
		   DC_LISTENER("", "envoy.extensions.compression.zstd.decompressor.v3.Zstd\","
				   "\"dictionaries\":[{\"filename\":\"d\"}]"),
		   "typed_config.dictionaries: not supported by Arion");
	tc_refused(L, DC_LISTENER("", "envoy.extensions.compression.gzip.compressor.v3.Gzip\""),
		   "decompressor library 'envoy.extensions.compression.gzip.compressor.v3.Gzip' "
		   "is not supported by Arion");
#undef DGZ
#undef DC_LISTENER
}

static void test_echo_and_optional_filter(void **state)
{
	(void)state;
	tc_ok(L, "{\"name\":\"echo\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
		 "\"port_value\":7}},\"filter_chains\":[{\"filters\":[{\"name\":\"envoy.filters."
		 "network.echo\","
		 "\"typed_config\":{\"@type\":\"type.googleapis.com/"
		 "envoy.extensions.filters.network.echo.v3.Echo\"}}]}]}");
	assert_int_equal(listener("echo")->chains[0].kind, ARN_CFG_NF_ECHO);
	/* an unknown HTTP filter marked is_optional is skipped, as Envoy does
	 * (a type Arion knows that is no HTTP filter's stands for one) */
	tc_ok(L, "{\"name\":\"opt\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
		 "\"port_value\":81}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","
		 "\"typed_config\":{" TJ_HCM_AT ",\"stat_prefix\":\"x\",\"route_config\":{},"
		 "\"http_filters\":[{\"name\":\"envoy.filters.http.buffer\",\"is_optional\":true,"
		 "\"typed_config\":{\"@type\":\"type.googleapis.com/"
		 "envoy.extensions.filters.network.echo.v3.Echo\"}}," TJ_ROUTER "]}}]}]}");
	assert_int_equal(listener("opt")->chains[0].hcm->n_http_filters, 1);
}

static void test_refuse_unknown_http_filter(void **state)
{
	(void)state;
	tc_refused(
	    L,
	    "{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
	    "\"port_value\":81}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","
	    "\"typed_config\":{" TJ_HCM_AT ",\"stat_prefix\":\"x\",\"route_config\":{},"
	    "\"http_filters\":[{\"name\":\"envoy.filters.http.buffer\","
	    "\"typed_config\":{\"@type\":\"type.googleapis.com/"
	    "envoy.extensions.filters.network.echo.v3.Echo\"}}," TJ_ROUTER "]}}]}]}",
	    "Listener 'l': filter_chains[0].filters[0].typed_config.http_filters[0]: HTTP filter "
	    "'envoy.filters.http.buffer'");
	tc_refused(L,
		   "{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
		   "\"port_value\":81}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","
		   "\"typed_config\":{" TJ_HCM_AT
		   ",\"stat_prefix\":\"x\",\"route_config\":{}}}]}]}",
		   "http_filters: the last HTTP filter must be the router");
}

static void test_refuse_network_filter(void **state)
{
	(void)state;
	tc_refused(L,
		   "{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
		   "\"port_value\":81}},\"filter_chains\":[{\"filters\":[{\"name\":\"envoy.filters."
		   "network.tcp_proxy\","
		   "\"typed_config\":{\"@type\":\"type.googleapis.com/"
		   "envoy.extensions.filters.network.echo.v3.Echo\"},"
		   "\"name\":\"x\"},{\"name\":\"envoy.filters.network.redis_proxy\"}]}]}",
		   "network filter 'x' is not supported");
	tc_refused(L,
		   "{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
		   "\"port_value\":81}},\"filter_chains\":[{\"filters\":[{\"name\":\"envoy.filters."
		   "network.redis_proxy\"}]}]}",
		   "filters[0]: network filter 'envoy.filters.network.redis_proxy'");
}

#define PP_AT "\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.filters.listener.proxy_protocol.v3.ProxyProtocol\""

static void test_refuse_listener_fields(void **state)
{
	(void)state;
	tc_refused(L,
		   "{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"::1\","
		   "\"port_value\":81}},\"filter_chains\":[{\"filters\":[{\"name\":\"envoy.filters."
		   "network.echo\"}]}]}",
		   "address.socket_address.address: '::1': IPv6 is not supported");
	tc_refused(L,
		   "{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
		   "\"port_value\":81}},\"transparent\":true,\"filter_chains\":[{\"filters\":[{"
		   "\"name\":\"envoy.filters.network.echo\"}]}]}",
		   "Listener 'l': transparent: not supported by Arion");
	tc_refused(L,
		   "{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
		   "\"port_value\":0}},\"filter_chains\":[{\"filters\":[{\"name\":\"envoy.filters."
		   "network.echo\"}]}]}",
		   "port_value: missing");
	tc_refused(L,
		   "{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
		   "\"port_value\":81}},\"tcp_backlog_size\":0,\"filter_chains\":[{\"filters\":[{"
		   "\"name\":\"envoy.filters.network.echo\"}]}]}",
		   "Listener 'l': tcp_backlog_size: must be from 1 to 65535");
	tc_refused(L,
		   "{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
		   "\"port_value\":81}},\"listener_filters\":[{\"name\":\"envoy.filters.listener."
		   "original_dst\"}],"
		   "\"filter_chains\":[{\"filters\":[{\"name\":\"envoy.filters.network.echo\"}]}]}",
		   "listener_filters[0]: listener filter 'envoy.filters.listener.original_dst'");
	/* the PROXY protocol filter: what has no consumer in Arion is refused
	 * by name; after a tls_inspector it would see the header as the hello */
	tc_refused(L,
		   "{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
		   "\"port_value\":81}},\"listener_filters\":[{\"name\":\"pp\"," PP_AT ""
		   ",\"rules\":[{\"tlv_type\":5,\"on_tlv_present\":{\"key\":\"k\"}}]}}],"
		   "\"filter_chains\":[{\"filters\":[{\"name\":\"envoy.filters.network.echo\"}]}]}",
		   "listener_filters[0].typed_config.rules: TLVs to dynamic metadata are not supported");
	tc_refused(L,
		   "{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
		   "\"port_value\":81}},\"listener_filters\":[{\"name\":\"pp\"," PP_AT ""
		   ",\"pass_through_tlvs\":{\"match_type\":\"INCLUDE_ALL\"}}}],"
		   "\"filter_chains\":[{\"filters\":[{\"name\":\"envoy.filters.network.echo\"}]}]}",
		   "listener_filters[0].typed_config.pass_through_tlvs: not supported by Arion");
	tc_refused(L,
		   "{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
		   "\"port_value\":81}},\"listener_filters\":[{\"name\":\"pp\"," PP_AT ""
		   ",\"disallowed_versions\":[\"V1\",\"V2\"]}}],"
		   "\"filter_chains\":[{\"filters\":[{\"name\":\"envoy.filters.network.echo\"}]}]}",
		   "disallowed_versions: both V1 and V2 disallowed");
	tc_refused(L,
		   "{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
		   "\"port_value\":81}},\"listener_filters\":[{\"name\":\"envoy.filters.listener."
		   "tls_inspector\"},{\"name\":\"envoy.filters.listener.proxy_protocol\"}],"
		   "\"filter_chains\":[{\"filters\":[{\"name\":\"envoy.filters.network.echo\"}]}]}",
		   "listener_filters[1]: envoy.filters.listener.proxy_protocol after tls_inspector");
	tc_refused(L,
		   "{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
		   "\"port_value\":81}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","
		   "\"typed_config\":{" TJ_HCM_AT
		   ",\"stat_prefix\":\"x\",\"codec_type\":\"HTTP3\",\"route_config\":{},"
		   "\"http_filters\":[" TJ_ROUTER "]}}]}]}",
		   "codec_type: Arion speaks HTTP/1.1 and HTTP/2");
	tc_refused(L,
		   "{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
		   "\"port_value\":81}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","
		   "\"typed_config\":{" TJ_HCM_AT
		   ",\"stat_prefix\":\"x\",\"max_request_headers_kb\":9000,\"route_config\":{},"
		   "\"http_filters\":[" TJ_ROUTER "]}}]}]}",
		   "max_request_headers_kb: 9000: must be 1 to 8192");
	tc_refused(L,
		   "{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
		   "\"port_value\":81}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","
		   "\"typed_config\":{" TJ_HCM_AT ",\"stat_prefix\":\"x\",\"route_config\":{},"
		   "\"access_log\":[{\"name\":\"a\",\"filter\":{\"status_code_filter\":{}},"
		   "\"typed_config\":{\"@type\":\"type.googleapis.com/"
		   "envoy.extensions.access_loggers.stream.v3.StdoutAccessLog\"}}],"
		   "\"http_filters\":[" TJ_ROUTER "]}}]}]}",
		   "access_log[0]: filter.status_code_filter.comparison: missing");
}

/* X11: only rds.config_source ads is accepted (rule shared with the bootstrap). */
static void test_x11_rds_source_refused(void **state)
{
	(void)state;
	tc_refused(L,
		   "{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
		   "\"port_value\":81}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","
		   "\"typed_config\":{" TJ_HCM_AT
		   ",\"stat_prefix\":\"x\",\"rds\":{\"config_source\":"
		   "{\"path\":\"/etc/r.yaml\"},\"route_config_name\":\"r\"},"
		   "\"http_filters\":[" TJ_ROUTER "]}}]}]}",
		   "filter_chains[0].filters[0].typed_config.rds.config_source: only `ads: {}` is "
		   "accepted");
}

/* X12: EDS clusters have no load_assignment and no service_name. */
static void test_x12_eds_rules(void **state)
{
	(void)state;
	tc_refused(
	    C,
	    "{\"name\":\"api\",\"type\":\"EDS\",\"connect_timeout\":\"1s\","
	    "\"eds_cluster_config\":{\"service_name\":\"other\",\"eds_config\":{\"ads\":{}}}}",
	    "Cluster 'api': eds_cluster_config.service_name: refused");
	tc_refused(C,
		   "{\"name\":\"api\",\"type\":\"EDS\",\"connect_timeout\":\"1s\","
		   "\"load_assignment\":{\"cluster_name\":\"api\"}}",
		   "load_assignment: an EDS cluster has no load_assignment");
	tc_ok(C, tj_cluster_eds("api", "1s"));
	assert_int_equal(cluster("api") == NULL, 1); /* warming: not in the generation */
	/* a service_name that is the cluster's own name overrides nothing:
	 * accepted (Envoy Gateway and Istio write it on every EDS cluster) */
	tc_ok(C, "{\"name\":\"eg/backend/rule/0\",\"type\":\"EDS\",\"connect_timeout\":\"1s\","
		 "\"eds_cluster_config\":{\"service_name\":\"eg/backend/rule/0\",\"eds_config\":"
		 "{\"ads\":{},\"resource_api_version\":\"V3\"}}}");
	assert_int_equal(arn_config_referenced(st, ARN_TYPE_URL_CLA, NULL, NULL), 2);
	tc_refused(
	    C,
	    "{\"name\":\"api2\",\"type\":\"EDS\",\"connect_timeout\":\"1s\","
	    "\"eds_cluster_config\":{\"service_name\":\"api\",\"eds_config\":{\"ads\":{}}}}",
	    "Cluster 'api2': eds_cluster_config.service_name: refused");
}

/* Cluster types: STATIC, STRICT_DNS, LOGICAL_DNS and EDS; the spec's
 * connect_timeout: 0s example. */
/* Listener "so" with socket_options @p opts (JSON list members). */
static const char *so_listener(const char *opts)
{
	static char buf[8192];
	const char *l = tj_listener_inline("so", 9100, "r");
	assert_true(strncmp(l, "{", 1) == 0);
	snprintf(buf, sizeof(buf), "{\"socket_options\":[%s],%s", opts, l + 1);
	return buf;
}

/* A listener's socket_options: TCP keepalive's (what Envoy Gateway's
 * tcpKeepalive writes) read, Linux's defaults for the rest; any other
 * option refused naming its level and name. */
static void test_listener_socket_options(void **state)
{
	(void)state;
	tc_ok(L, so_listener("{\"level\":1,\"name\":9,\"int_value\":1},"
			     "{\"level\":6,\"name\":5,\"int_value\":10}"));
	const struct arn_cfg_listener *l = listener("so");
	assert_true(l->keepalive);
	assert_int_equal(l->keepalive_time_s, 7200);
	assert_int_equal(l->keepalive_intvl_s, 10);
	assert_int_equal(l->keepalive_probes, 9);
	/* the probes' settings alone do not turn keepalive on (Linux) */
	tc_ok(L, so_listener("{\"level\":6,\"name\":4,\"int_value\":10}"));
	assert_false(listener("so")->keepalive);
	tc_refused(L, so_listener("{\"level\":1,\"name\":2,\"int_value\":1}"),
		   "socket_options[0]: level 1 name 2 is not supported by Arion");
	tc_refused(L, so_listener("{\"level\":6,\"name\":6,\"int_value\":0}"),
		   "socket_options[0].int_value: 0: must be 1..127");
	tc_refused(L, so_listener("{\"level\":1,\"name\":9,\"buf_value\":\"AQ==\"}"),
		   "socket_options[0].buf_value: not supported");
}

static void test_cluster_refusals(void **state)
{
	(void)state;
	/* Http1ProtocolOptions on a cluster: enable_trailers and the
	 * preserve_case header_key_format with its defaults; the rest refused
	 * (they were accepted and ignored) */
#define H1C(o)                                                                                     \
	"{\"name\":\"h1\",\"type\":\"STATIC\",\"connect_timeout\":\"1s\","                        \
	"\"http_protocol_options\":" o "}"
#define PCF(o)                                                                                     \
	"{\"header_key_format\":{\"stateful_formatter\":{\"name\":\"p\",\"typed_config\":{"         \
	"\"@type\":\"type.googleapis.com/envoy.extensions.http.header_formatters.preserve_case."    \
	"v3.PreserveCaseFormatterConfig\"" o "}}}}"
	tc_ok(C, H1C(PCF("")));
	tc_refused(C, H1C(PCF(",\"forward_reason_phrase\":true")),
		   "header_key_format.stateful_formatter.typed_config.forward_reason_phrase: not "
		   "supported");
	tc_refused(C, H1C(PCF(",\"formatter_type_on_envoy_headers\":\"PROPER_CASE\"")),
		   "formatter_type_on_envoy_headers: PROPER_CASE is not supported");
	tc_refused(C, H1C("{\"header_key_format\":{\"proper_case_words\":{}}}"),
		   "http_protocol_options.header_key_format.proper_case_words: not supported");
	tc_refused(C, H1C("{\"allow_absolute_url\":true}"),
		   "http_protocol_options.allow_absolute_url: not supported");
#undef H1C
#undef PCF
	/* per_host_thresholds: max_connections (DEFAULT's) taken, Envoy's only
	 * per-host limit; the others refused by name */
	tc_ok(C, "{\"name\":\"ph\",\"type\":\"STATIC\",\"connect_timeout\":\"1s\","
		 "\"circuit_breakers\":{\"per_host_thresholds\":[{\"max_connections\":3}]}}");
	assert_int_equal(cluster("ph")->host_max_connections, 3);
	tc_ok(C, "{\"name\":\"ph2\",\"type\":\"STATIC\",\"connect_timeout\":\"1s\"}");
	assert_int_equal(cluster("ph2")->host_max_connections, UINT32_MAX);
	tc_refused(C,
		   "{\"name\":\"ph\",\"type\":\"STATIC\",\"connect_timeout\":\"1s\","
		   "\"circuit_breakers\":{\"per_host_thresholds\":[{\"max_requests\":3}]}}",
		   "circuit_breakers.per_host_thresholds[0].max_requests: not supported");
	/* upstream_connection_options: tcp_keepalive only, within Linux's bounds */
	tc_ok(C, "{\"name\":\"ka\",\"type\":\"STATIC\",\"connect_timeout\":\"1s\","
		 "\"upstream_connection_options\":{\"tcp_keepalive\":{\"keepalive_probes\":3,"
		 "\"keepalive_time\":10,\"keepalive_interval\":2}}}");
	assert_true(cluster("ka")->keepalive);
	assert_int_equal(cluster("ka")->keepalive_time_s, 10);
	assert_int_equal(cluster("ka")->keepalive_intvl_s, 2);
	assert_int_equal(cluster("ka")->keepalive_probes, 3);
	tc_refused(C,
		   "{\"name\":\"ka\",\"type\":\"STATIC\",\"connect_timeout\":\"1s\","
		   "\"upstream_connection_options\":{\"tcp_keepalive\":{\"keepalive_probes\":0}}}",
		   "upstream_connection_options.tcp_keepalive.keepalive_probes: must be 1..127");
	tc_refused(C,
		   "{\"name\":\"ka\",\"type\":\"STATIC\",\"connect_timeout\":\"1s\","
		   "\"upstream_connection_options\":{\"set_local_interface_name_on_upstream_"
		   "connections\":true}}",
		   "upstream_connection_options.set_local_interface_name_on_upstream_connections: "
		   "not supported");
	tc_refused(C,
		   "{\"name\":\"od\",\"type\":\"ORIGINAL_DST\",\"connect_timeout\":\"1s\","
		   "\"lb_policy\":\"CLUSTER_PROVIDED\"}",
		   "Cluster 'od': type: ORIGINAL_DST is not supported");
	tc_refused(C, "{\"name\":\"api\",\"type\":\"STATIC\",\"connect_timeout\":\"0s\"}",
		   "Cluster 'api': connect_timeout: must be greater than 0s");
	tc_refused(
	    C, "{\"name\":\"api\",\"connect_timeout\":\"1s\",\"lb_policy\":\"CLUSTER_PROVIDED\"}",
	    "lb_policy: not supported");
	tc_refused(C,
		   "{\"name\":\"api\",\"connect_timeout\":\"1s\",\"lb_policy\":\"MAGLEV\","
		   "\"maglev_lb_config\":{\"table_size\":1000}}",
		   "maglev_lb_config.table_size: 1000: must be a prime");
	tc_refused(
	    C,
	    "{\"name\":\"api\",\"connect_timeout\":\"1s\",\"dns_resolvers\":[{\"socket_address\":"
	    "{\"address\":\"1.1.1.1\",\"port_value\":53}}]}",
	    "dns_resolvers: not supported by Arion");
	tc_refused(
	    C,
	    "{\"name\":\"api\",\"connect_timeout\":\"1s\",\"health_checks\":[{\"timeout\":\"1s\","
	    "\"interval\":\"5s\",\"healthy_threshold\":1,\"unhealthy_threshold\":1,"
	    "\"grpc_health_check\":{}}]}",
	    "health_checks[0].grpc_health_check: not supported by Arion");
	/* the HTTP health check's host and path go into its request as they
	 * are: no CR, LF or NUL from the control plane */
	tc_refused(
	    C,
	    "{\"name\":\"api\",\"connect_timeout\":\"1s\",\"health_checks\":[{\"timeout\":\"1s\","
	    "\"interval\":\"5s\",\"healthy_threshold\":1,\"unhealthy_threshold\":1,"
	    "\"http_health_check\":{\"path\":\"/h\",\"host\":\"a\\r\\nx: 1\"}}]}",
	    "health_checks[0].http_health_check.host: contains CR, LF or NUL");
	tc_refused(
	    C,
	    "{\"name\":\"api\",\"connect_timeout\":\"1s\",\"health_checks\":[{\"timeout\":\"1s\","
	    "\"interval\":\"5s\",\"healthy_threshold\":1,\"unhealthy_threshold\":1,"
	    "\"http_health_check\":{\"path\":\"/h\\n\"}}]}",
	    "health_checks[0].http_health_check.path: contains CR, LF or NUL");
	tc_refused(
	    C,
	    "{\"name\":\"api\",\"connect_timeout\":\"1s\",\"load_assignment\":{"
	    "\"cluster_name\":\"api\",\"endpoints\":[{\"lb_endpoints\":[{\"endpoint\":{\"address\":"
	    "{\"socket_address\":{\"address\":\"backend.local\",\"port_value\":80}}}}]}]}}",
	    "load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address.address: "
	    "'backend.local' is not an IPv4 address");
	/* an envoy.lb hash_key would make Envoy's RING_HASH / MAGLEV hash it
	 * instead of the address: refused; empty (Envoy hashes the address),
	 * or other metadata, taken */
#define HK_CLUSTER(md)                                                                             \
	"{\"name\":\"api\",\"connect_timeout\":\"1s\",\"load_assignment\":{"                       \
	"\"cluster_name\":\"api\",\"endpoints\":[{\"lb_endpoints\":[{\"endpoint\":{\"address\":"   \
	"{\"socket_address\":{\"address\":\"10.0.0.1\",\"port_value\":80}}},\"metadata\":"         \
	"{\"filter_metadata\":" md "}}]}]}}"
	tc_refused(
	    C, HK_CLUSTER("{\"envoy.lb\":{\"hash_key\":\"a\"}}"),
	    "load_assignment.endpoints[0].lb_endpoints[0].metadata.filter_metadata[envoy.lb]."
	    "hash_key: not supported");
	tc_ok(C, HK_CLUSTER("{\"envoy.lb\":{\"hash_key\":\"\",\"canary\":true},\"x\":{"
			    "\"hash_key\":\"a\"}}"));
#undef HK_CLUSTER
	tc_refused(
	    C,
	    "{\"name\":\"api\",\"connect_timeout\":\"1s\",\"typed_extension_protocol_options\":{"
	    "\"x\":{\"@type\":\"type.googleapis.com/"
	    "envoy.extensions.filters.network.echo.v3.Echo\"}}}",
	    "typed_extension_protocol_options[x]: 'envoy.extensions.filters.network.echo.v3.Echo' "
	    "is not supported");
}

/* A TCP check; more than one check refused as Envoy's cluster factory
 * refuses it ("Multiple health checks not supported"), naming the field;
 * an endpoint's health_check_config (port, Host). */
static void test_cluster_health_checks(void **state)
{
	(void)state;
	tc_ok(C,
	      "{\"name\":\"tc\",\"type\":\"STATIC\",\"connect_timeout\":\"1s\","
	      "\"health_checks\":[{\"timeout\":\"1s\",\"interval\":\"2s\",\"healthy_threshold\":1,"
	      "\"unhealthy_threshold\":1,\"tcp_health_check\":{\"send\":{\"text\":\"50494e47\"},"
	      "\"receive\":[{\"text\":\"504f4e47\"}]}}],"
	      "\"load_assignment\":{\"cluster_name\":\"tc\",\"endpoints\":[{\"lb_endpoints\":["
	      "{\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"10.0.0.1\","
	      "\"port_value\":80}},\"health_check_config\":{\"port_value\":9901,\"hostname\":"
	      "\"hc.test\"}}},"
	      "{\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"10.0.0.4\","
	      "\"port_value\":80}}}}]}]}}");
	const struct arn_cfg_cluster *c = cluster("tc");
	assert_non_null(c);
	assert_int_equal(c->n_health_checks, 1);
	assert_int_equal(c->health_checks[0].kind, ARN_CFG_HC_TCP);
	assert_int_equal(c->health_checks[0].send_len, 4);
	assert_memory_equal(c->health_checks[0].send, "PING", 4);
	assert_memory_equal(c->health_checks[0].receive[0], "PONG", 4);
	const struct arn_cfg_endpoint *e =
	    c->static_endpoints->priorities[0].localities[0].endpoints;
	assert_int_equal(e[0].hc_port, 9901);
	assert_string_equal(e[0].hc_hostname, "hc.test");
	assert_int_equal(e[1].hc_port, 0);
	assert_null(e[1].hc_hostname);
	tc_refused(C,
		   "{\"name\":\"two\",\"connect_timeout\":\"1s\",\"health_checks\":["
		   "{\"timeout\":\"1s\",\"interval\":\"2s\",\"healthy_threshold\":1,"
		   "\"unhealthy_threshold\":1,\"tcp_health_check\":{}},"
		   "{\"timeout\":\"1s\",\"interval\":\"2s\",\"healthy_threshold\":1,"
		   "\"unhealthy_threshold\":1,\"tcp_health_check\":{}}]}",
		   "health_checks: multiple health checks are not supported (2 given)");
	tc_refused(
	    C,
	    "{\"name\":\"hp\",\"connect_timeout\":\"1s\",\"load_assignment\":{\"cluster_name\":"
	    "\"hp\",\"endpoints\":[{\"lb_endpoints\":[{\"endpoint\":{\"address\":{"
	    "\"socket_address\":{\"address\":\"10.0.0.1\",\"port_value\":80}},"
	    "\"health_check_config\":{\"port_value\":70000}}}]}]}}",
	    "health_check_config.port_value: 70000 is not a port");
	/* an HTTP check's request_headers_to_add / _remove are kept for the
	 * request; a command operator in a value (Arion would send it as it
	 * is) and removing host are refused */
#define HCH(hdrs)                                                                                  \
	"{\"name\":\"hh\",\"connect_timeout\":\"1s\",\"health_checks\":[{\"timeout\":\"1s\","         \
	"\"interval\":\"2s\",\"healthy_threshold\":1,\"unhealthy_threshold\":1,"                     \
	"\"http_health_check\":{\"path\":\"/h\"," hdrs "}}]}"
	tc_ok(C, HCH("\"request_headers_to_add\":[{\"header\":{\"key\":\"X-Probe\",\"value\":\"1\"},"
		     "\"append_action\":\"OVERWRITE_IF_EXISTS_OR_ADD\"}],"
		     "\"request_headers_to_remove\":[\"User-Agent\"]"));
	const struct arn_cfg_health_check *hh = &cluster("hh")->health_checks[0];
	assert_int_equal(hh->headers.n_req_add, 1);
	assert_string_equal(hh->headers.req_add[0].key, "x-probe");
	assert_int_equal(hh->headers.req_add[0].append, ARN_CFG_OVERWRITE_IF_EXISTS_OR_ADD);
	assert_int_equal(hh->headers.n_req_remove, 1);
	assert_string_equal(hh->headers.req_remove[0].name, "user-agent");
	tc_refused(C,
		   HCH("\"request_headers_to_add\":[{\"header\":{\"key\":\"x-n\",\"value\":"
		       "\"%HOSTNAME%\"}}]"),
		   "http_health_check.request_headers_to_add[0].header.value: command operators are "
		   "not supported in health check headers");
	tc_refused(C, HCH("\"request_headers_to_remove\":[\"host\"]"),
		   "http_health_check.request_headers_to_remove[0]: 'host' cannot be removed");
	tc_refused(C,
		   HCH("\"request_headers_to_add\":[{\"header\":{\"key\":\"Host\",\"value\":\"x\"}}]"),
		   "http_health_check.request_headers_to_add[0].header.key: 'host' may not be modified");
#undef HCH
}

/* max_headers_count over what Arion honours (127) is refused, naming the
 * field, on a connection manager and on a cluster (it was lowered to 127
 * without a word); 0 too. */
static void test_max_headers_count_bounded(void **state)
{
	(void)state;
	tc_refused(C,
		   "{\"name\":\"mh\",\"connect_timeout\":\"1s\",\"common_http_protocol_options\":"
		   "{\"max_headers_count\":128}}",
		   "common_http_protocol_options.max_headers_count: 128: must be 1 to 127");
	tc_refused(
	    C,
	    "{\"name\":\"mh\",\"connect_timeout\":\"1s\",\"typed_extension_protocol_options\":{"
	    "\"envoy.extensions.upstreams.http.v3.HttpProtocolOptions\":{\"@type\":\"type."
	    "googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions\","
	    "\"common_http_protocol_options\":{\"max_headers_count\":500},"
	    "\"explicit_http_config\":{\"http_protocol_options\":{}}}}}",
	    "max_headers_count: 500: must be 1 to 127");
	tc_ok(C, "{\"name\":\"mh\",\"connect_timeout\":\"1s\",\"common_http_protocol_options\":"
		 "{\"max_headers_count\":127}}");
	assert_int_equal(cluster("mh")->http.max_headers_count, 127);
#define MHL(n)                                                                                     \
	"{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","                \
	"\"port_value\":81}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","                  \
	"\"typed_config\":{" TJ_HCM_AT ",\"stat_prefix\":\"x\",\"common_http_protocol_options\":"  \
	"{\"max_headers_count\":" n "},\"route_config\":{},\"http_filters\":[" TJ_ROUTER "]}}]}]}"
	tc_refused(L, MHL("128"), "max_headers_count: 128: must be 1 to 127");
	tc_refused(L, MHL("0"), "max_headers_count: 0: must be 1 to 127");
	tc_ok(L, MHL("127"));
	assert_int_equal(listener("l")->chains[0].hcm->max_headers_count, 127);
#undef MHL
}

static void test_cluster_full(void **state)
{
	(void)state;
	tc_ok(
	    C,
	    "{\"name\":\"api\",\"type\":\"STATIC\",\"connect_timeout\":\"0.25s\","
	    "\"per_connection_buffer_limit_bytes\":65536,\"lb_policy\":\"RING_HASH\","
	    "\"ring_hash_lb_config\":{\"minimum_ring_size\":2048,\"hash_function\":\"MURMUR_HASH_"
	    "2\"},"
	    "\"common_lb_config\":{\"healthy_panic_threshold\":{\"value\":25}},"
	    "\"circuit_breakers\":{\"thresholds\":[{\"max_connections\":10,\"max_pending_"
	    "requests\":20,"
	    "\"max_requests\":30,\"max_retries\":4},{\"priority\":\"HIGH\",\"max_connections\":99}]"
	    "},"
	    "\"health_checks\":[{\"timeout\":\"1s\",\"interval\":\"5s\",\"healthy_threshold\":2,"
	    "\"unhealthy_threshold\":3,\"http_health_check\":{\"path\":\"/healthz\",\"host\":\"h\","
	    "\"expected_statuses\":[{\"start\":200,\"end\":300}]}}],"
	    "\"outlier_detection\":{\"consecutive_5xx\":7,\"interval\":\"3s\",\"max_ejection_"
	    "percent\":50,\"failure_percentage_threshold\":90,\"enforcing_failure_percentage\":"
	    "100},"
	    "\"typed_extension_protocol_options\":{\"envoy.extensions.upstreams.http.v3."
	    "HttpProtocolOptions\":"
	    "{\"@type\":\"type.googleapis.com/"
	    "envoy.extensions.upstreams.http.v3.HttpProtocolOptions\","
	    "\"common_http_protocol_options\":{\"idle_timeout\":\"30s\",\"max_requests_per_"
	    "connection\":100},"
	    "\"explicit_http_config\":{\"http_protocol_options\":{}}}},"
	    "\"load_assignment\":{\"cluster_name\":\"api\",\"endpoints\":[{\"lb_endpoints\":["
	    "{\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"10.0.0.1\",\"port_"
	    "value\":80}}}}]}]}}");
	const struct arn_cfg_cluster *c = cluster("api");
	assert_non_null(c);
	assert_int_equal(c->type, ARN_CFG_CLUSTER_STATIC);
	assert_int_equal(c->connect_timeout_ms, 250);
	assert_int_equal(c->per_connection_buffer_limit, 65536);
	assert_int_equal(c->lb, ARN_CFG_LB_RING_HASH);
	assert_int_equal(c->ring_min_size, 2048);
	assert_int_equal(c->ring_hash_fn, 1);
	assert_int_equal(c->healthy_panic_threshold, 2500);
	assert_int_equal(c->thresholds[0].max_connections, 10);
	assert_int_equal(c->thresholds[0].max_pending_requests, 20);
	assert_int_equal(c->thresholds[0].max_requests, 30);
	assert_int_equal(c->thresholds[0].max_retries, 4);
	assert_int_equal(c->thresholds[1].max_connections, 99);
	assert_int_equal(c->thresholds[1].max_requests, 1024);
	assert_int_equal(c->n_health_checks, 1);
	assert_int_equal(c->health_checks[0].kind, ARN_CFG_HC_HTTP);
	assert_string_equal(c->health_checks[0].path, "/healthz");
	assert_int_equal(c->health_checks[0].expected_statuses[1], 300);
	assert_true(c->outlier.present);
	assert_int_equal(c->outlier.consecutive_5xx, 7);
	assert_int_equal(c->outlier.interval_ms, 3000);
	assert_int_equal(c->outlier.max_ejection_percent, 50);
	assert_int_equal(c->outlier.base_ejection_time_ms, 30000);
	/* failure_percentage_*: read (refused as unknown before), Envoy's defaults */
	assert_int_equal(c->outlier.failure_percentage_threshold, 90);
	assert_int_equal(c->outlier.enforcing_failure_percentage, 100);
	assert_int_equal(c->outlier.failure_percentage_minimum_hosts, 5);
	assert_int_equal(c->outlier.failure_percentage_request_volume, 50);
	assert_int_equal(c->http.idle_timeout_ms, 30000);
	assert_int_equal(c->http.max_requests_per_connection, 100);
	assert_int_equal(c->http.upstream, 0);
	struct arn_cfg_ref r = {"api", 3, arn_cfg_hash("api", 3)};
	struct arn_cfg_cluster_view v;
	assert_int_equal(arn_cfg_cluster_resolve(gen(), &r, &v), 0);
	assert_int_equal(v.endpoints->n_endpoints, 1);
	assert_int_equal(v.endpoints->priorities[0].localities[0].endpoints[0].port, 80);
}

/* common_lb_config.override_host_status: the states a stateful
 * session's host may be in, as given (Istio's set for persistent
 * sessions: UNKNOWN, HEALTHY, DRAINING, DEGRADED); an empty set takes
 * none; unset leaves Envoy's default to the balancer. */
#define OHS_CLUSTER(ohs)                                                                           \
	"{\"name\":\"api\",\"type\":\"STATIC\",\"connect_timeout\":\"0.25s\","                     \
	"\"common_lb_config\":{" ohs "},"                                                          \
	"\"load_assignment\":{\"cluster_name\":\"api\",\"endpoints\":[{\"lb_endpoints\":["         \
	"{\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"10.0.0.1\",\"port_"         \
	"value\":80}}}}]}]}}"
static void test_cluster_override_host_status(void **state)
{
	(void)state;
	tc_ok(C, OHS_CLUSTER("\"override_host_status\":{\"statuses\":[\"UNKNOWN\",\"HEALTHY\","
			     "\"DRAINING\",\"DEGRADED\"]}"));
	const struct arn_cfg_cluster *c = cluster("api");
	assert_true(c->override_host_set);
	assert_int_equal(c->override_host_mask,
			 1u << ARN_CFG_HEALTH_UNKNOWN | 1u << ARN_CFG_HEALTH_HEALTHY |
			     1u << ARN_CFG_HEALTH_DRAINING | 1u << ARN_CFG_HEALTH_DEGRADED);
	tc_ok(C, OHS_CLUSTER("\"override_host_status\":{}"));
	c = cluster("api");
	assert_true(c->override_host_set);
	assert_int_equal(c->override_host_mask, 0);
	tc_ok(C, OHS_CLUSTER("\"healthy_panic_threshold\":{\"value\":25}"));
	c = cluster("api");
	assert_false(c->override_host_set);
}

/* common_lb_config.locality_weighted_lb_config (Envoy Gateway writes it on
 * every cluster): accepted, an empty message, on STATIC and EDS clusters
 * with every lb_policy (RING_HASH and MAGLEV take Envoy's normalized
 * weights); zone_aware_lb_config stays refused by name (and unknown bytes
 * inside the message by conv_only, which JSON cannot carry here). A
 * locality's weight counts only beside a locality (Envoy's
 * PriorityStateManager). */
#define LW_CLUSTER(lb, clb)                                                                        \
	"{\"name\":\"api\",\"type\":\"STATIC\",\"connect_timeout\":\"0.25s\",\"lb_policy\":\"" lb  \
	"\",\"common_lb_config\":{" clb "},"                                                       \
	"\"load_assignment\":{\"cluster_name\":\"api\",\"endpoints\":["                            \
	"{\"locality\":{\"region\":\"api/backend/0\"},\"load_balancing_weight\":3,"                \
	"\"lb_endpoints\":[{\"endpoint\":{\"address\":{\"socket_address\":{\"address\":"           \
	"\"10.0.0.1\",\"port_value\":80}}}}]},"                                                    \
	"{\"load_balancing_weight\":5,\"lb_endpoints\":[{\"endpoint\":{\"address\":{"              \
	"\"socket_address\":{\"address\":\"10.0.0.2\",\"port_value\":80}}}}]}]}}"
static void test_cluster_locality_weighted(void **state)
{
	(void)state;
	static const char *const ok[] = {"ROUND_ROBIN", "LEAST_REQUEST", "RANDOM"};
	for (size_t i = 0; i < 3; i++) {
		char j[1024];
		snprintf(j, sizeof(j), LW_CLUSTER("%s", "\"locality_weighted_lb_config\":{}"),
			 ok[i]);
		tc_ok(C, j);
		assert_true(cluster("api")->locality_weighted);
	}
	struct arn_cfg_ref r = {"api", 3, arn_cfg_hash("api", 3)};
	struct arn_cfg_cluster_view v;
	assert_int_equal(arn_cfg_cluster_resolve(gen(), &r, &v), 0);
	assert_int_equal(v.endpoints->priorities[0].n_localities, 2);
	assert_int_equal(v.endpoints->priorities[0].localities[0].weight, 3);
	assert_int_equal(v.endpoints->priorities[0].localities[1].weight, 0); /* no locality */
	tc_ok(C, LW_CLUSTER("ROUND_ROBIN", "\"healthy_panic_threshold\":{\"value\":25}"));
	assert_false(cluster("api")->locality_weighted);
	tc_ok(C, LW_CLUSTER("RING_HASH", "\"locality_weighted_lb_config\":{}"));
	assert_true(cluster("api")->locality_weighted);
	tc_ok(C, LW_CLUSTER("MAGLEV", "\"locality_weighted_lb_config\":{}"));
	assert_true(cluster("api")->locality_weighted);
	tc_refused(C, LW_CLUSTER("ROUND_ROBIN", "\"zone_aware_lb_config\":{}"),
		   "zone_aware_lb_config");
	tc_ok(C, "{\"name\":\"eds\",\"type\":\"EDS\",\"connect_timeout\":\"1s\",\"lb_policy\":"
		 "\"LEAST_REQUEST\",\"common_lb_config\":{\"locality_weighted_lb_config\":{}},"
		 "\"eds_cluster_config\":{\"eds_config\":{\"ads\":{}}}}");
}
#undef LW_CLUSTER

/* split_external_local_origin_errors and its local-origin detectors:
 * read with Envoy's defaults (5; enforcing 100, 100, 0), the enforcing
 * percentages at most 100 as Envoy's proto says. */
static void test_cluster_outlier_split(void **state)
{
	(void)state;
#define OD(x)                                                                                   \
	"{\"name\":\"api\",\"type\":\"STATIC\",\"connect_timeout\":\"1s\",\"outlier_detection\":{" x \
	"}}"
	tc_ok(C, OD("\"split_external_local_origin_errors\":true"));
	const struct arn_cfg_cluster *c = cluster("api");
	assert_non_null(c);
	assert_true(c->outlier.split_external_local_origin_errors);
	assert_int_equal(c->outlier.consecutive_local_origin_failure, 5);
	assert_int_equal(c->outlier.enforcing_consecutive_local_origin_failure, 100);
	assert_int_equal(c->outlier.enforcing_local_origin_success_rate, 100);
	assert_int_equal(c->outlier.enforcing_failure_percentage_local_origin, 0);
	tc_ok(C, OD("\"split_external_local_origin_errors\":true,"
		    "\"consecutive_local_origin_failure\":3,"
		    "\"enforcing_consecutive_local_origin_failure\":0,"
		    "\"enforcing_local_origin_success_rate\":40,"
		    "\"enforcing_failure_percentage_local_origin\":100"));
	c = cluster("api");
	assert_non_null(c);
	assert_int_equal(c->outlier.consecutive_local_origin_failure, 3);
	assert_int_equal(c->outlier.enforcing_consecutive_local_origin_failure, 0);
	assert_int_equal(c->outlier.enforcing_local_origin_success_rate, 40);
	assert_int_equal(c->outlier.enforcing_failure_percentage_local_origin, 100);
	tc_refused(C, OD("\"enforcing_consecutive_local_origin_failure\":101"),
		   "enforcing_consecutive_local_origin_failure: more than 100");
	tc_refused(C, OD("\"enforcing_local_origin_success_rate\":101"),
		   "enforcing_local_origin_success_rate: more than 100");
	tc_refused(C, OD("\"enforcing_failure_percentage_local_origin\":101"),
		   "enforcing_failure_percentage_local_origin: more than 100");
#undef OD
}

static void test_cla(void **state)
{
	(void)state;
	tc_ok(
	    E,
	    "{\"cluster_name\":\"api\",\"policy\":{\"overprovisioning_factor\":200},\"endpoints\":["
	    "{\"locality\":{\"region\":\"eu\",\"zone\":\"a\"},\"load_balancing_weight\":3,\"lb_"
	    "endpoints\":["
	    "{\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"10.0.0.1\",\"port_"
	    "value\":80}}},"
	    "\"health_status\":\"HEALTHY\",\"load_balancing_weight\":5},"
	    "{\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"10.0.0.2\",\"port_"
	    "value\":81}}},"
	    "\"health_status\":\"DRAINING\"}]},"
	    "{\"priority\":2,\"lb_endpoints\":[{\"endpoint\":{\"address\":{\"socket_address\":"
	    "{\"address\":\"10.0.1.1\",\"port_value\":80}}}}]}]}");
	const struct arn_cfg_endpoints *e =
	    arn_cfg_find(gen(), ARN_CFG_CLA, "api", 3, arn_cfg_hash("api", 3));
	assert_non_null(e);
	assert_int_equal(e->overprovisioning_factor, 200);
	assert_int_equal(e->n_priorities, 3);
	assert_int_equal(e->n_endpoints, 3);
	assert_int_equal(e->priorities[1].n_localities, 0);
	const struct arn_cfg_locality *lo = &e->priorities[0].localities[0];
	assert_string_equal(lo->region, "eu");
	assert_string_equal(lo->zone, "a");
	assert_int_equal(lo->weight, 3);
	assert_int_equal(lo->endpoints[0].weight, 5);
	assert_int_equal(lo->endpoints[0].health, ARN_CFG_HEALTH_HEALTHY);
	assert_int_equal(lo->endpoints[1].health, ARN_CFG_HEALTH_DRAINING);
	assert_int_equal(lo->endpoints[1].weight, 1);
	assert_int_equal(e->priorities[2].localities[0].endpoints[0].addr,
			 (10u << 24) | (1u << 8) | 1);
	tc_refused(
	    E,
	    "{\"cluster_name\":\"x\",\"endpoints\":[{\"lb_endpoints\":[{\"endpoint\":{\"address\":"
	    "{\"socket_address\":{\"address\":\"10.0.0.1\",\"port_value\":80}}},\"load_balancing_"
	    "weight\":0}]}]}",
	    "ClusterLoadAssignment 'x': endpoints[0].lb_endpoints[0].load_balancing_weight: must "
	    "be at least 1");
	tc_refused(
	    E, "{\"cluster_name\":\"x\",\"policy\":{\"drop_overloads\":[{\"category\":\"c\"}]}}",
	    "policy.drop_overloads: not supported by Arion");
}

static void test_route_config_conversion(void **state)
{
	(void)state;
	tc_ok(R, "{\"name\":\"r\",\"request_headers_to_add\":[{\"header\":{\"key\":\"X-A\","
		 "\"value\":\"1\"},"
		 "\"append_action\":\"OVERWRITE_IF_EXISTS_OR_ADD\"}],\"response_headers_to_"
		 "remove\":[\"server\"],"
		 "\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],\"retry_policy\":{\"retry_"
		 "on\":\"5xx,reset\","
		 "\"num_retries\":3},\"routes\":[{\"match\":{\"prefix\":\"/"
		 "a\"},\"route\":{\"cluster\":\"c\","
		 "\"timeout\":\"2s\",\"idle_timeout\":\"9s\",\"prefix_rewrite\":\"/"
		 "b\",\"host_rewrite_literal\":\"h\","
		 "\"hash_policy\":[{\"header\":{\"header_name\":\"X-User\"}},{\"connection_"
		 "properties\":{\"source_ip\":true},"
		 "\"terminal\":true}]}},{\"match\":{\"path\":\"/"
		 "r\"},\"redirect\":{\"https_redirect\":true,"
		 "\"response_code\":\"PERMANENT_REDIRECT\"}},{\"match\":{\"prefix\":\"/"
		 "d\"},\"direct_response\":"
		 "{\"status\":418,\"body\":{\"inline_string\":\"teapot\"}}}]}]}");
	const struct arn_cfg_route_table *t = route_table("r");
	assert_non_null(t);
	assert_int_equal(t->headers_ops.n_req_add, 1);
	assert_string_equal(t->headers_ops.req_add[0].key, "x-a");
	assert_int_equal(t->headers_ops.req_add[0].append, ARN_CFG_OVERWRITE_IF_EXISTS_OR_ADD);
	assert_string_equal(t->headers_ops.resp_remove[0].name, "server");
	const struct arn_cfg_route *r = &t->vhosts[0].routes[0];
	assert_int_equal(r->route.timeout_ms, 2000);
	assert_int_equal(r->route.idle_timeout_ms, 9000);
	assert_string_equal(r->route.prefix_rewrite, "/b");
	assert_string_equal(r->route.host_rewrite_literal, "h");
	assert_int_equal(r->route.retry.retry_on, ARN_CFG_RETRY_5XX | ARN_CFG_RETRY_RESET);
	assert_int_equal(r->route.retry.num_retries, 3); /* inherited from the virtual host */
	assert_int_equal(r->route.n_hash_policies, 2);
	assert_string_equal(r->route.hash_policies[0].name, "x-user");
	assert_int_equal(r->route.hash_policies[1].kind, ARN_CFG_HASH_SOURCE_IP);
	assert_true(r->route.hash_policies[1].terminal);
	assert_int_equal(r->route.cluster_not_found_status, 503);
	const struct arn_cfg_route *rd = &t->vhosts[0].routes[1];
	assert_int_equal(rd->action, ARN_CFG_ACTION_REDIRECT);
	assert_string_equal(rd->redirect.scheme, "https");
	assert_int_equal(rd->redirect.status, 308);
	const struct arn_cfg_route *dr = &t->vhosts[0].routes[2];
	assert_int_equal(dr->action, ARN_CFG_ACTION_DIRECT);
	assert_int_equal(dr->direct.status, 418);
	assert_memory_equal(dr->direct.body, "teapot", 6);
}

/*
 * A cookie hash policy keeps its ttl (whole seconds, as Envoy's
 * ttl().seconds()) and path: with a ttl an absent cookie is generated and
 * set on the response. Its name and path go as they are into that
 * Set-Cookie line: a name that is no RFC 6265 token, or a path with a
 * control byte, a space or ';' (that would split the line or start an
 * attribute), is refused naming the field.
 */
static void test_route_cookie_hash_policy(void **state)
{
	(void)state;
#define RC(cookie)                                                                                 \
	"{\"name\":\"r\",\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],\"routes\":[{"     \
	"\"match\":{\"prefix\":\"/"                                                                \
	"\"},\"route\":{\"cluster\":\"c\",\"hash_policy\":[{\"cookie\":" cookie                    \
	"},{\"cookie\":{\"name\":\"plain\"}}]}}]}]}"
	tc_ok(R, RC("{\"name\":\"Sticky-1\",\"ttl\":\"3600.9s\",\"path\":\"/app\"}"));
	const struct arn_cfg_route *r = &route_table("r")->vhosts[0].routes[0];
	const struct arn_cfg_hash_policy *hp = r->route.hash_policies;
	assert_int_equal(hp[0].kind, ARN_CFG_HASH_COOKIE);
	assert_string_equal(hp[0].name, "Sticky-1"); /* cookie names keep their case */
	assert_true(hp[0].cookie_ttl_set);
	assert_int_equal(hp[0].cookie_ttl_s, 3600);
	assert_string_equal(hp[0].cookie_path, "/app");
	assert_int_equal(hp[0].cookie_path_len, 4);
	assert_false(hp[1].cookie_ttl_set); /* no ttl: an absent cookie gives no hash */
	assert_null(hp[1].cookie_path);
	/* ttl 0: a session cookie, still generated */
	tc_ok(R, RC("{\"name\":\"s\",\"ttl\":\"0s\"}"));
	hp = route_table("r")->vhosts[0].routes[0].route.hash_policies;
	assert_true(hp[0].cookie_ttl_set);
	assert_int_equal(hp[0].cookie_ttl_s, 0);
	assert_null(hp[0].cookie_path);
	tc_refused(R, RC("{\"name\":\"a\\r\\nx-evil: 1\",\"ttl\":\"1s\"}"),
		   "hash_policy[0].cookie.name: byte 0x0d at 1 is not a cookie name character");
	tc_refused(R, RC("{\"name\":\"a;b\",\"ttl\":\"1s\"}"),
		   "cookie.name: byte 0x3b at 1 is not a cookie name character");
	tc_refused(R, RC("{\"name\":\"a b\",\"ttl\":\"1s\"}"),
		   "cookie.name: byte 0x20 at 1 is not a cookie name character");
	tc_refused(R, RC("{\"name\":\"a=b\"}"),
		   "cookie.name: byte 0x3d at 1 is not a cookie name character");
	tc_refused(R, RC("{\"name\":\"a\\u0000\"}"),
		   "cookie.name: byte 0x00 at 1 is not a cookie name character");
	tc_refused(R, RC("{\"name\":\"s\",\"ttl\":\"1s\",\"path\":\"/a; Domain=evil\"}"),
		   "hash_policy[0].cookie.path: byte 0x3b at 2 is not a cookie path character");
	tc_refused(R, RC("{\"name\":\"s\",\"path\":\"/a\\nb\"}"),
		   "cookie.path: byte 0x0a at 2 is not a cookie path character");
	tc_refused(R, RC("{\"name\":\"s\",\"path\":\"/a b\"}"),
		   "cookie.path: byte 0x20 at 2 is not a cookie path character");
	tc_refused(R, RC("{\"name\":\"s\",\"ttl\":\"-1s\"}"),
		   "cookie.ttl: must be a non-negative duration");
	char big[1200];
	memset(big, 'a', sizeof(big));
	big[0] = '/';
	big[sizeof(big) - 1] = 0;
	char j[2048];
	snprintf(j, sizeof(j), RC("{\"name\":\"s\",\"path\":\"%s\"}"), big);
	tc_refused(R, j, "cookie.path: longer than 1024 bytes");
#undef RC
}

/* RouteAction.request_mirror_policies (Envoy's ShadowPolicyImpl): cluster
 * or cluster_header, runtime_fraction's default_value (absent: every
 * request), trace_sampled accepted (no tracing); what Arion's Envoy API
 * lacks or Envoy refuses is refused, named. */
static void test_route_mirror_policies(void **state)
{
	(void)state;
#define RM(pol)                                                                                    \
	"{\"name\":\"r\",\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],\"routes\":[{"     \
	"\"match\":{\"prefix\":\"/"                                                                \
	"\"},\"route\":{\"cluster\":\"c\",\"request_mirror_policies\":[" pol "]}}]}]}"
	tc_ok(R, RM("{\"cluster\":\"shadow\"},{\"cluster_header\":\"X-Mirror\",\"trace_sampled\":"
		    "false},{\"cluster\":\"s2\",\"runtime_fraction\":{\"default_value\":{"
		    "\"numerator\":25,\"denominator\":\"TEN_THOUSAND\"},\"runtime_key\":\"k\"}}"));
	const struct arn_cfg_route_table *t = route_table("r");
	assert_non_null(t);
	const struct arn_cfg_route_action *a = &t->vhosts[0].routes[0].route;
	assert_int_equal(a->n_mirrors, 3);
	assert_false(a->mirrors[0].header);
	assert_int_equal(a->mirrors[0].cluster.len, 6);
	assert_memory_equal(a->mirrors[0].cluster.name, "shadow", 6);
	assert_int_equal(a->mirrors[0].numerator, 100);
	assert_int_equal(a->mirrors[0].denominator, 100);
	assert_true(a->mirrors[1].header);
	assert_memory_equal(a->mirrors[1].cluster.name, "x-mirror", 8);
	assert_int_equal(a->mirrors[2].numerator, 25);
	assert_int_equal(a->mirrors[2].denominator, 10000);
	tc_refused(R, RM("{\"cluster\":\"a\",\"cluster_header\":\"x\"}"),
		   "request_mirror_policies[0].cluster_header: set cluster or cluster_header, not "
		   "both");
	tc_refused(R, RM("{\"cluster\":\"a\"},{}"),
		   "request_mirror_policies[1]: no cluster: set cluster or cluster_header");
	tc_refused(R, RM("{\"cluster\":\"a\",\"runtime_fraction\":{}}"),
		   "request_mirror_policies[0].runtime_fraction.default_value: missing");
	tc_refused(R, RM("{\"cluster_header\":\"a\\nb\"}"),
		   "request_mirror_policies[0].cluster_header: contains CR, LF or NUL");
	/* Envoy's newer disable_shadow_host_suffix_append and
	 * request_headers_mutations are not in Arion's Envoy API (gRPC 1.51's):
	 * the JSON decoder refuses them as unknown fields */
#undef RM
}

/* A route's strings that Arion writes as they are into the request line, a
 * Host or a Location header: a CR, LF or NUL from the control plane is
 * refused, naming the field (it would add header lines, or split the
 * request toward the upstream). */
static void test_route_strings_refuse_cr_lf(void **state)
{
	(void)state;
#define RW(action)                                                                                 \
	"{\"name\":\"r\",\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],\"routes\":[{"     \
	"\"match\":{\"prefix\":\"/\"}," action "}]}]}"
	tc_refused(R, RW("\"route\":{\"cluster\":\"c\",\"prefix_rewrite\":\"/b\\r\\nx: 1\"}"),
		   "prefix_rewrite: contains CR, LF or NUL");
	tc_refused(R, RW("\"route\":{\"cluster\":\"c\",\"host_rewrite_literal\":\"h\\n\"}"),
		   "host_rewrite_literal: contains CR, LF or NUL");
	tc_refused(
	    R,
	    RW("\"route\":{\"cluster\":\"c\",\"regex_rewrite\":{\"pattern\":{\"regex\":\"a\"},"
	       "\"substitution\":\"b\\r\"}}"),
	    "substitution: contains CR, LF or NUL");
	tc_refused(R, RW("\"redirect\":{\"host_redirect\":\"a\\r\\nset-cookie: s=1\"}"),
		   "host_redirect: contains CR, LF or NUL");
	tc_refused(R, RW("\"redirect\":{\"path_redirect\":\"/a\\u0000b\"}"),
		   "path_redirect: contains CR, LF or NUL");
	tc_refused(R, RW("\"redirect\":{\"prefix_rewrite\":\"/a\\n\"}"),
		   "prefix_rewrite: contains CR, LF or NUL");
	tc_refused(R, RW("\"redirect\":{\"scheme_redirect\":\"http\\r\"}"),
		   "scheme_redirect: contains CR, LF or NUL");
	tc_ok(R, RW("\"redirect\":{\"scheme_redirect\":\"HTTP\",\"host_redirect\":\"a b\"}"));
	const struct arn_cfg_route *r = &route_table("r")->vhosts[0].routes[0];
	assert_string_equal(r->redirect.scheme, "http");
	assert_string_equal(r->redirect.host, "a b");
#undef RW
}

/* Issue 15: upgrade_configs as Envoy reads them, on the HCM and on a route,
 * and the decision table of Envoy's upgrades page: a route's entry for a
 * type wins either way, else the HCM's entry if enabled, else refused. */
static void test_upgrade_configs(void **state)
{
	(void)state;
	tc_ok(L, "{\"name\":\"up\",\"address\":{\"socket_address\":{\"address\":\"198.18.0.2\","
		 "\"port_value\":8081}},\"filter_chains\":[{\"filters\":[{\"name\":\"envoy.filters."
		 "network.http_connection_manager\",\"typed_config\":{" TJ_HCM_AT
		 ",\"stat_prefix\":\"up\",\"upgrade_configs\":[{\"upgrade_type\":\"websocket\"},"
		 "{\"upgrade_type\":\"spdy/3.1\",\"enabled\":false}],"
		 "\"route_config\":{\"name\":\"local\",\"virtual_hosts\":[{\"name\":\"vh\","
		 "\"domains\":[\"*\"],\"routes\":[{\"match\":{\"prefix\":\"/no-ws\"},\"route\":{"
		 "\"cluster\":\"web\",\"upgrade_configs\":[{\"upgrade_type\":\"WebSocket\","
		 "\"enabled\":false}]}},{\"match\":{\"prefix\":\"/spdy\"},\"route\":{\"cluster\":"
		 "\"web\",\"upgrade_configs\":[{\"upgrade_type\":\"spdy/3.1\"}]}},"
		 "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}]}]},"
		 "\"http_filters\":[" TJ_ROUTER "]}}]}]}");
	const struct arn_cfg_listener *l = listener("up");
	assert_non_null(l);
	const struct arn_cfg_hcm *h = l->chains[0].hcm;
	assert_int_equal(h->n_upgrades, 2);
	assert_string_equal(h->upgrades[0].type, "websocket");
	assert_true(h->upgrades[0].enabled);
	assert_false(h->upgrades[1].enabled);
	const struct arn_cfg_route *r = h->inline_routes->vhosts[0].routes;
	const struct arn_cfg_route_action *no_ws = &r[0].route, *spdy = &r[1].route,
					  *plain = &r[2].route;
	assert_int_equal(no_ws->n_upgrades, 1);
	assert_false(no_ws->upgrades[0].enabled);
	/* HCM T, route unset: T; the type compares without case */
	assert_true(arn_cfg_upgrade_allowed(h, plain, "websocket", 9));
	assert_true(arn_cfg_upgrade_allowed(h, plain, "WEBSOCKET", 9));
	assert_true(arn_cfg_upgrade_allowed(h, NULL, "websocket", 9));
	/* HCM T, route F: F */
	assert_false(arn_cfg_upgrade_allowed(h, no_ws, "websocket", 9));
	/* HCM F, route T: T; HCM F, route unset: F */
	assert_true(arn_cfg_upgrade_allowed(h, spdy, "spdy/3.1", 8));
	assert_false(arn_cfg_upgrade_allowed(h, plain, "spdy/3.1", 8));
	/* named nowhere: refused, as Envoy refuses it */
	assert_false(arn_cfg_upgrade_allowed(h, plain, "h2c", 3));
	assert_false(arn_cfg_upgrade_allowed(h, plain, "websocke", 8));
	assert_false(arn_cfg_upgrade_allowed(NULL, NULL, "websocket", 9));

	const char *hcm_pre =
	    "{\"name\":\"up2\",\"address\":{\"socket_address\":{\"address\":\"198.18.0.2\","
	    "\"port_value\":8082}},\"filter_chains\":[{\"filters\":[{\"name\":\"envoy.filters."
	    "network.http_connection_manager\",\"typed_config\":{" TJ_HCM_AT
	    ",\"stat_prefix\":\"u\","
	    "\"rds\":{\"route_config_name\":\"r\",\"config_source\":{\"ads\":{}}},"
	    "\"http_filters\":[" TJ_ROUTER "],\"upgrade_configs\":[";
	char buf[2048];
	snprintf(buf, sizeof(buf), "%s{\"upgrade_type\":\"CONNECT\"}]}}]}]}", hcm_pre);
	tc_refused(L, buf, "upgrade_configs[0].upgrade_type: CONNECT is not supported");
	snprintf(buf, sizeof(buf),
		 "%s{\"upgrade_type\":\"websocket\"},{\"upgrade_type\":\"WebSocket\"}]}}]}]}",
		 hcm_pre);
	tc_refused(L, buf, "upgrade_configs[1].upgrade_type: 'WebSocket' appears twice");
	snprintf(buf, sizeof(buf),
		 "%s{\"upgrade_type\":\"websocket\",\"filters\":[" TJ_ROUTER "]}]}}]}]}", hcm_pre);
	tc_refused(L, buf, "upgrade_configs[0].filters: custom upgrade filter chains");
	snprintf(buf, sizeof(buf), "%s{\"enabled\":true}]}}]}]}", hcm_pre);
	tc_refused(L, buf, "upgrade_configs[0].upgrade_type: missing");
	tc_refused(
	    R,
	    "{\"name\":\"r\",\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],\"routes\":["
	    "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\",\"upgrade_configs\":[{"
	    "\"upgrade_type\":\"CONNECT\",\"connect_config\":{}}]}}]}]}",
	    "upgrade_configs[0].connect_config: not supported by Arion");
}

/* conv_only names every field a converter does not take, whatever its
 * kind: a map, an enum, a oneof member, a repeated field, a bool, a
 * message, a string (it reads presence through upb's mini table, issue 17). */
static void test_unsupported_field_kinds(void **state)
{
	(void)state;
	static const struct {
		const char *vh, *route, *action, *want;
	} cases[] = {
	    {"",
	     ",\"typed_per_filter_config\":{\"x\":{\"@type\":\"type.googleapis.com/"
	     "envoy.extensions.filters.http.router.v3.Router\"}}",
	     "", "routes[0].typed_per_filter_config"},
	    {"", "", ",\"priority\":\"HIGH\"", "routes[0].route.priority"},
	    {"", "", ",\"host_rewrite_header\":\"x-host\"", "routes[0].route.host_rewrite_header"},
	    /* a virtual host's mirrors: only a route's are read */
	    {",\"request_mirror_policies\":[{\"cluster\":\"m\"}]", "", "",
	     "virtual_hosts[0].request_mirror_policies"},
	    {",\"include_attempt_count_in_response\":true", "", "",
	     "virtual_hosts[0].include_attempt_count_in_response"},
	    /* a route's tracing: its metadata custom tag (Arion keeps no metadata) */
	    {"", ",\"tracing\":{\"custom_tags\":[{\"tag\":\"a\",\"metadata\":{}}]}", "",
	     "routes[0].tracing.custom_tags[0].metadata"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char j[1024], want[256];
		snprintf(j, sizeof(j),
			 "{\"name\":\"r\",\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"]%s,"
			 "\"routes\":[{\"match\":{\"prefix\":\"/"
			 "\"}%s,\"route\":{\"cluster\":\"c\"%s}}]}]}",
			 cases[i].vh, cases[i].route, cases[i].action);
		snprintf(want, sizeof(want), "%s: not supported by Arion", cases[i].want);
		tc_refused(R, j, want);
	}
	/* a string without presence, outside any oneof */
	tc_refused(
	    R,
	    "{\"name\":\"r\",\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],\"routes\":["
	    "{\"match\":{\"prefix\":\"/\"},\"route\":{\"weighted_clusters\":{\"clusters\":["
	    "{\"name\":\"a\",\"weight\":1}],\"runtime_key_prefix\":\"rt\"}}}]}]}",
	    "weighted_clusters.runtime_key_prefix: not supported by Arion");
	/* the same fields at their zero values are not set: accepted */
	tc_ok(
	    R,
	    "{\"name\":\"r\",\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],"
	    "\"include_attempt_count_in_response\":false,\"routes\":[{\"match\":{\"prefix\":\"/\"},"
	    "\"route\":{\"cluster\":\"c\",\"priority\":\"DEFAULT\"}}]}]}");
}

static void test_route_refusals(void **state)
{
	(void)state;
	tc_refused(R,
		   "{\"name\":\"r\",\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"a.com\"],"
		   "\"routes\":[]},{\"name\":\"w\",\"domains\":[\"A.com\"]}]}",
		   "virtual_hosts[1].domains[0]: domain 'A.com' appears twice");
	tc_refused(
	    R, "{\"name\":\"r\",\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"a.*.com\"]}]}",
	    "virtual_hosts[0].domains[0]: 'a.*.com' is not a domain");
	tc_refused(
	    R,
	    "{\"name\":\"r\",\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],\"routes\":["
	    "{\"match\":{\"safe_regex\":{\"regex\":\"(a\"}},\"route\":{\"cluster\":\"c\"}}]}]}",
	    "routes[0].match.safe_regex.regex: '(a': missing )");
	tc_refused(
	    R,
	    "{\"name\":\"r\",\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],\"routes\":["
	    "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\",\"regex_rewrite\":{"
	    "\"pattern\":{\"regex\":\"^/(.*)$\"},\"substitution\":\"/\\\\2\"}}}]}]}",
	    "regex_rewrite.substitution: substitution refers to group \\2");
	tc_refused(
	    R,
	    "{\"name\":\"r\",\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],\"routes\":["
	    "{\"match\":{\"prefix\":\"/\"},\"route\":{\"weighted_clusters\":{\"clusters\":["
	    "{\"name\":\"a\",\"weight\":1}],\"total_weight\":100}}}]}]}",
	    "weighted_clusters.total_weight: 100, but the weights add up to 1");
	tc_refused(
	    R,
	    "{\"name\":\"r\",\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],\"hedge_policy\":{}}]}",
	    "virtual_hosts[0].hedge_policy: not supported by Arion");
	tc_refused(R, "{\"name\":\"r\",\"validate_clusters\":true}",
		   "validate_clusters: true is refused");
	tc_refused(
	    R,
	    "{\"name\":\"r\",\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],\"routes\":["
	    "{\"match\":{\"prefix\":\"/"
	    "\"},\"route\":{\"cluster\":\"c\",\"retry_policy\":{\"retry_on\":\"5xx,nonsense\"}}}]}]"
	    "}",
	    "retry_policy.retry_on: 'nonsense' is not a retry condition");
	tc_refused(
	    R,
	    "{\"name\":\"r\",\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],\"routes\":["
	    "{\"match\":{\"prefix\":\"/\"},\"direct_response\":{\"status\":99}}]}]}",
	    "direct_response.status: 99 is not an HTTP status");
	tc_refused(
	    R,
	    "{\"name\":\"r\",\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],\"routes\":["
	    "{\"match\":{\"prefix\":\"/"
	    "\",\"headers\":[{\"name\":\"x\",\"safe_regex_match\":{\"regex\":\"\\\\p{L}\"}}]},"
	    "\"route\":{\"cluster\":\"c\"}}]}]}",
	    "match.headers[0].safe_regex_match.regex: '\\p{L}': Unicode classes");
}

/* X13: TLS contexts reference secrets by name; inline certificates and
 * non-ADS sds_config are refused. */
static void test_x13_tls_refusals(void **state)
{
	(void)state;
	tc_refused(
	    L,
	    tj_listener_tls("l", 443,
			    "\"common_tls_context\":{\"tls_certificate_sds_secret_configs\":[{"
			    "\"name\":\"c\",\"sds_config\":{\"path\":\"/x\"}}]}"),
	    "tls_certificate_sds_secret_configs[0].sds_config: an sds_config source is refused");
	tc_refused(L,
		   tj_listener_tls("l", 443,
				   "\"common_tls_context\":{\"tls_certificates\":[{\"certificate_"
				   "chain\":{\"inline_string\":\"x\"}}]}"),
		   "common_tls_context.tls_certificates: inline certificates are refused");
}

static void test_secret_tls_certificate(void **state)
{
	(void)state;
	struct tcert a, b;
	tcert_make(&a, "a.test");
	tcert_make(&b, "b.test");
	char *j = tj_secret_tls("cert", a.cert_json, a.key_json);
	assert_non_null(j);
	tc_ok(S, j);
	const struct arn_cfg_secret *s = secret("cert");
	assert_non_null(s);
	assert_int_equal(s->kind, ARN_CFG_SECRET_TLS_CERT);
	assert_non_null(s->cert);
	assert_non_null(s->key);
	/* the key must match the certificate */
	free(j);
	j = tj_secret_tls("bad", a.cert_json, b.key_json);
	assert_non_null(j);
	tc_refused(S, j,
		   "Secret 'bad': tls_certificate.private_key: does not match the certificate");
	/* the refusal names the field, never the key */
	assert_null(strstr(tc_res.errors[0].message, "PRIVATE KEY"));
	snprintf(
	    j, 16384,
	    "{\"name\":\"v\",\"validation_context\":{\"trusted_ca\":{\"inline_string\":\"%s\"},"
	    "\"match_subject_alt_names\":[{\"exact\":\"a.test\"}]}}",
	    b.cert_json);
	tc_ok(S, j);
	assert_int_equal(secret("v")->kind, ARN_CFG_SECRET_VALIDATION);
	assert_int_equal(secret("v")->n_ca, 1);
	assert_int_equal(secret("v")->n_san_matchers, 1);
	tc_refused(S,
		   "{\"name\":\"v2\",\"validation_context\":{\"trusted_ca\":{\"inline_string\":"
		   "\"junk\"}}}",
		   "Secret 'v2': validation_context.trusted_ca: no PEM certificate could be read");
	tc_refused(S,
		   "{\"name\":\"f\",\"tls_certificate\":{\"certificate_chain\":{\"filename\":\"/"
		   "nonexistent/c.pem\"},"
		   "\"private_key\":{\"filename\":\"/nonexistent/k.pem\"}}}",
		   "tls_certificate.certificate_chain.filename: cannot open '/nonexistent/c.pem'");
	/* generic_secret: accepted since oauth2 reads it (test_secret_generic) */
	tc_ok(S, "{\"name\":\"g\",\"generic_secret\":{\"secret\":{\"inline_string\":\"x\"}}}");
	assert_int_equal(secret("g")->kind, ARN_CFG_SECRET_GENERIC);
	/* from files too: written at test time, removed after */
	char cp[] = "/tmp/arn-config-cert-XXXXXX", kp[] = "/tmp/arn-config-key-XXXXXX";
	int cfd = mkstemp(cp), kfd = mkstemp(kp);
	FILE *cf = fdopen(cfd, "w"), *kf = fdopen(kfd, "w");
	fputs(a.cert_pem, cf);
	for (const char *p = a.key_json; *p; p++) /* unescape \n */
		if (p[0] == '\\' && p[1] == 'n') {
			fputc('\n', kf);
			p++;
		} else {
			fputc(*p, kf);
		}
	fclose(cf);
	fclose(kf);
	snprintf(
	    j, 16384,
	    "{\"name\":\"files\",\"tls_certificate\":{\"certificate_chain\":{\"filename\":\"%s\"},"
	    "\"private_key\":{\"filename\":\"%s\"}}}",
	    cp, kp);
	tc_ok(S, j);
	unlink(cp);
	unlink(kp);
	assert_non_null(secret("files")->key);
	free(j);
	tcert_free(&a);
	tcert_free(&b);
}

/* Unknown fields in binary resources (newer Envoy API) are refused, not ignored. */
static void test_unknown_fields_refused(void **state)
{
	(void)state;
	/* a Cluster with field number 999 set (varint) */
	static const char bytes[] = {0x0a, 0x01, 'x', (char)0xb8, 0x3e, 0x01};
	struct arn_config_resource_in in = {"x", "1", bytes, sizeof(bytes)};
	struct arn_config_result r;
	assert_int_equal(arn_config_apply(st, C, &in, 1, NULL, 0, 0, &r), 0);
	assert_false(r.accepted);
	assert_non_null(strstr(r.errors[0].message, "unknown to Arion"));
	arn_config_result_free(&r);
	/* undecodable bytes */
	struct arn_config_resource_in junk = {"y", "1", "\xff\xff\xff", 3};
	assert_int_equal(arn_config_apply(st, C, &junk, 1, NULL, 0, 0, &r), 0);
	assert_false(r.accepted);
	assert_non_null(strstr(r.errors[0].message, "Cluster 'y': cannot decode"));
	arn_config_result_free(&r);
	/* the name in the resource must be the Resource's name */
	tc_apply(C, (const char *const[]){tj_cluster_static("a", "1.1.1.1", 80), NULL}, NULL);
	struct arn_config_resource_in in2 = {"b", "1",
					     "\x0a\x01"
					     "a",
					     3};
	assert_int_equal(arn_config_apply(st, C, &in2, 1, NULL, 0, 0, &r), 0);
	assert_false(r.accepted);
	assert_non_null(strstr(r.errors[0].message, "Cluster 'b': name: 'a' differs"));
	arn_config_result_free(&r);
	assert_int_equal(arn_config_apply(st, "type.googleapis.com/foo", NULL, 0, NULL, 0, 0, &r),
			 -EINVAL);
}

/* A Cluster whose connect_timeout has @p seconds, set on the wire (JSON
 * cannot say a Duration beyond +-10000 years; a control plane's bytes can):
 * tj_cluster_static("x", ...)'s encoding with a Duration appended, which
 * protobuf merges into its connect_timeout (field 4). */
static void apply_connect_timeout_seconds(uint64_t seconds, struct arn_config_result *r)
{
	upb_Arena *a = upb_Arena_New();
	const upb_MessageDef *md = arn_proto_msgdef("envoy.config.cluster.v3.Cluster");
	const char *json = tj_cluster_static("x", "1.1.1.1", 80);
	struct arn_sb err = ARN_SB_INIT;
	upb_Message *m = arn_proto_from_json(json, strlen(json), md, a, &err);
	assert_non_null(m);
	arn_sb_free(&err);
	size_t len = 0;
	char *enc = arn_proto_encode(m, md, a, &len);
	assert_non_null(enc);
	char *b = malloc(len + 16);
	assert_non_null(b);
	memcpy(b, enc, len);
	char d[12];
	size_t n = 0;
	d[n++] = 0x08; /* Duration.seconds, varint */
	for (uint64_t v = seconds; n == 1 || v; v >>= 7)
		d[n++] = (char)((v & 0x7f) | (v >> 7 ? 0x80 : 0));
	b[len++] = 0x22; /* Cluster.connect_timeout, length-delimited */
	b[len++] = (char)n;
	memcpy(b + len, d, n);
	len += n;
	struct arn_config_resource_in in = {"x", "1", b, len};
	assert_int_equal(arn_config_apply(st, C, &in, 1, NULL, 0, 0, r), 0);
	free(b);
	upb_Arena_Free(a);
}

/* A Duration beyond protobuf's range (+-315,576,000,000 s) is refused, as
 * Envoy does ("Duration out-of-range"), rather than multiplied into ms past
 * 64 bits: 18446744073709552 s wrapped to a connect_timeout of 634 ms. The
 * largest valid one is capped at the field's maximum. */
static void test_duration_out_of_range_refused(void **state)
{
	(void)state;
	struct arn_config_result r;
	apply_connect_timeout_seconds(18446744073709552ull, &r);
	assert_false(r.accepted);
	assert_int_equal(r.n_errors, 1);
	assert_non_null(strstr(r.errors[0].message, "Cluster 'x': connect_timeout: "));
	assert_non_null(strstr(r.errors[0].message, "out of range"));
	arn_config_result_free(&r);
	assert_null(cluster("x"));
	apply_connect_timeout_seconds(315576000001ull, &r);
	assert_false(r.accepted);
	arn_config_result_free(&r);
	apply_connect_timeout_seconds(315576000000ull, &r);
	assert_true(r.accepted);
	assert_int_equal(r.n_errors, 0);
	arn_config_result_free(&r);
	assert_non_null(cluster("x"));
	assert_int_equal(cluster("x")->connect_timeout_ms, UINT32_MAX);
}

/* `arion --mode validate`: static resources through the converters, with
 * file, line, column, field path, resource and reason. */
static void test_validate_bootstrap(void **state)
{
	(void)state;
	const char *y = "envoy_bootstrap:\n"
			"  static_resources:\n"
			"    clusters:\n"
			"      - name: ok\n"
			"        connect_timeout: 1s\n"
			"      - name: api\n"
			"        type: STATIC\n"
			"        connect_timeout: 0s\n";
	struct arn_bootstrap *b = tboot_must_load(y, NULL);
	struct arn_sb err = ARN_SB_INIT;
	assert_int_equal(arn_config_validate_bootstrap(b, &err), -EINVAL);
	assert_non_null(strstr(arn_sb_cstr(&err),
			       "t.yaml:8:26: envoy_bootstrap.static_resources.clusters[1].connect_"
			       "timeout: Cluster 'api': must be greater than 0s"));
	arn_sb_free(&err);
	arn_bootstrap_free(b);
	/* the shipped examples are valid */
	const char *files[] = {"config/static.yaml", "config/xds.yaml"};
	for (int i = 0; i < 2; i++) {
		b = NULL;
		if (arn_bootstrap_load_file(files[i], NULL, &b, &err) != 0)
			fail_msg("%s: %s", files[i], arn_sb_cstr(&err));
		if (arn_config_validate_bootstrap(b, &err) != 0)
			fail_msg("%s: %s", files[i], arn_sb_cstr(&err));
		arn_bootstrap_free(b);
	}
	arn_sb_free(&err);
}

const struct CMUnitTest conv_tests[] = {
    TC(test_listener_hcm_inline),
    TC(test_hcm_defaults),
    TC(test_hcm_server_name_refuses_cr_lf),
    TC(test_hcm_access_log_format_refused),
    TC(test_als_header_names_bounded),
    TC(test_hcm_local_reply_config),
    TC(test_hcm_http2_options),
    TC(test_cluster_h2_keepalive),
    TC(test_router_options),
    TC(test_access_log_filter),
    TC(test_grpc_stats_filter),
    TC(test_grpc_web_filter),
    TC(test_compressor_filter),
    TC(test_decompressor_filter),
    TC(test_echo_and_optional_filter),
    TC(test_refuse_unknown_http_filter),
    TC(test_refuse_network_filter),
    TC(test_refuse_listener_fields),
    TC(test_x11_rds_source_refused),
    TC(test_x12_eds_rules),
    TC(test_cluster_refusals),
    TC(test_listener_socket_options),
    TC(test_duration_out_of_range_refused),
    TC(test_cluster_full),
    TC(test_cluster_override_host_status),
    TC(test_cluster_locality_weighted),
    TC(test_cluster_outlier_split),
    TC(test_max_headers_count_bounded),
    TC(test_cluster_health_checks),
    TC(test_cla),
    TC(test_route_config_conversion),
    TC(test_route_mirror_policies),
    TC(test_route_strings_refuse_cr_lf),
    TC(test_route_cookie_hash_policy),
    TC(test_route_refusals),
    TC(test_unsupported_field_kinds),
    TC(test_upgrade_configs),
    TC(test_x13_tls_refusals),
    TC(test_secret_tls_certificate),
    TC(test_unknown_fields_refused),
    TC(test_validate_bootstrap),
};
const size_t n_conv_tests = sizeof(conv_tests) / sizeof(conv_tests[0]);
