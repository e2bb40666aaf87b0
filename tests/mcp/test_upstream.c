/*
 * The gateway as a client of its backends: headers, the backend session's
 * initialize, answers classified, errors naming the backend, backends'
 * own messages made ready for the client.
 */
#include <json-c/json.h>
#include <string.h>

#include "arn_config_model.h"
#include "mcp_test.h"

static void test_upstream_headers(void **state)
{
	(void)state;
	struct arn_cfg_header_add add[1] = {
	    {.key = "authorization", .key_len = 13, .value = "Bearer t", .value_len = 8}};
	struct arn_cfg_mcp_backend b = {
	    .name = "gh", .name_len = 2, .headers = add, .n_headers = 1};
	struct arn_mcp_header h[8];
	/* before the backend's initialize answered: no session, no version */
	size_t n = arn_mcp_upstream_headers(&b, NULL, ARN_MCP_V_2025_06_18, h, 8);
	assert_int_equal(n, 3);
	assert_string_equal(h[0].name, "content-type");
	assert_string_equal(h[1].value, "application/json, text/event-stream");
	assert_string_equal(h[2].name, "authorization");
	/* after: both */
	n = arn_mcp_upstream_headers(&b, "s-1", ARN_MCP_V_2025_06_18, h, 8);
	assert_int_equal(n, 5);
	assert_string_equal(h[2].name, "mcp-session-id");
	assert_string_equal(h[2].value, "s-1");
	assert_string_equal(h[3].name, "mcp-protocol-version");
	assert_memory_equal(h[3].value, "2025-06-18", h[3].value_len);
	/* 2024-11-05 has no version header */
	assert_int_equal(arn_mcp_upstream_headers(&b, "s-1", ARN_MCP_V_2024_11_05, h, 8), 4);
	/* short of room: the count says so */
	assert_int_equal(arn_mcp_upstream_headers(&b, "s-1", ARN_MCP_V_2025_06_18, h, 2), 5);
}

static void test_backend_initialize(void **state)
{
	(void)state;
	struct json_object *r = arn_mcp_backend_initialize(ARN_MCP_V_2025_03_26, "0.1.0", true);
	assert_string_equal(mt_text(r),
			    "{\"jsonrpc\":\"2.0\",\"id\":\"arn.init\",\"method\":\"initialize\","
			    "\"params\":{\"protocolVersion\":\"2025-03-26\",\"capabilities\":{"
			    "\"elicitation\":{},\"sampling\":{}},\"clientInfo\":{\"name\":\"arion-"
			    "mcp-gateway\",\"version\":\"0.1.0\"}}}");
	json_object_put(r);
	r = arn_mcp_backend_initialize(ARN_MCP_V_2025_06_18, "0.1.0", false);
	assert_non_null(strstr(mt_text(r), "\"capabilities\":{}"));
	json_object_put(r);
}

static void test_upstream_classified(void **state)
{
	(void)state;
	assert_int_equal(arn_mcp_upstream_classify(200, "application/json", 16, true),
			 ARN_MCP_U_JSON);
	assert_int_equal(
	    arn_mcp_upstream_classify(200, "Application/JSON; charset=utf-8", 31, true),
	    ARN_MCP_U_JSON);
	assert_int_equal(arn_mcp_upstream_classify(200, "text/event-stream", 17, false),
			 ARN_MCP_U_SSE);
	assert_int_equal(arn_mcp_upstream_classify(202, NULL, 0, true), ARN_MCP_U_ACCEPTED);
	assert_int_equal(arn_mcp_upstream_classify(404, NULL, 0, true), ARN_MCP_U_SESSION_GONE);
	assert_int_equal(arn_mcp_upstream_classify(404, NULL, 0, false), ARN_MCP_U_FAILED);
	assert_int_equal(arn_mcp_upstream_classify(200, "application/jsonx", 17, true),
			 ARN_MCP_U_FAILED);
	assert_int_equal(arn_mcp_upstream_classify(200, NULL, 0, true), ARN_MCP_U_FAILED);
	assert_int_equal(arn_mcp_upstream_classify(503, "application/json", 16, true),
			 ARN_MCP_U_FAILED);

	struct json_object *id = json_object_new_int(4);
	struct json_object *e = arn_mcp_backend_error(id, "jira", "timed out after 30000 ms");
	assert_string_equal(mt_text(e), "{\"jsonrpc\":\"2.0\",\"id\":4,\"error\":{\"code\":-32000,"
					"\"message\":\"Backend unavailable: backend 'jira': timed "
					"out after 30000 ms\"}}");
	json_object_put(e);
	json_object_put(id);
}

static void test_from_backend(void **state)
{
	(void)state;
	const char *s =
	    "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"elicitation/create\",\"params\":{}}";
	struct arn_mcp_body b;
	assert_int_equal(arn_mcp_parse(s, strlen(s), NULL, false, &b), ARN_MCP_E_NONE);
	assert_int_equal(arn_mcp_from_backend(&b.msgs[0], 2), 0);
	assert_string_equal(mt_text(b.root), "{\"jsonrpc\":\"2.0\",\"id\":\"arn.2.9\",\"method\":"
					     "\"elicitation/create\",\"params\":{}}");
	assert_string_equal(json_object_get_string(b.msgs[0].id), "arn.2.9");
	arn_mcp_body_release(&b);
	/* notifications and the answer pass as they are */
	s = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{"
	    "\"progressToken\":\"t\",\"progress\":1}}";
	assert_int_equal(arn_mcp_parse(s, strlen(s), NULL, false, &b), ARN_MCP_E_NONE);
	assert_int_equal(arn_mcp_from_backend(&b.msgs[0], 2), 0);
	assert_string_equal(mt_text(b.root), s);
	arn_mcp_body_release(&b);
	s = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}";
	assert_int_equal(arn_mcp_parse(s, strlen(s), NULL, false, &b), ARN_MCP_E_NONE);
	assert_int_equal(arn_mcp_from_backend(&b.msgs[0], 2), 0);
	assert_string_equal(mt_text(b.root), s);
	arn_mcp_body_release(&b);
	/* what the gateway cannot read is not relayed */
	s = "{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"x\"}";
	assert_int_equal(arn_mcp_parse(s, strlen(s), NULL, false, &b), ARN_MCP_E_NONE);
	assert_int_equal(arn_mcp_from_backend(&b.msgs[0], 2), -EINVAL);
	arn_mcp_body_release(&b);
}

const struct CMUnitTest mt_upstream_tests[] = {
    cmocka_unit_test(test_upstream_headers),
    cmocka_unit_test(test_backend_initialize),
    cmocka_unit_test(test_upstream_classified),
    cmocka_unit_test(test_from_backend),
};
const size_t mt_upstream_n = sizeof(mt_upstream_tests) / sizeof(mt_upstream_tests[0]);
