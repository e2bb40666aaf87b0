/*
 * What the filter does with each message: local answers, the session's
 * lifecycle, refusals; backends' request ids on a client's stream; the
 * 2024-11-05 endpoint event.
 */
#include <json-c/json.h>
#include <string.h>

#include "mcp_test.h"

struct d {
	enum arn_mcp_step step;
	enum arn_mcp_version v;
	char answer[512];
};

static struct d dispatch(const char *msg, struct arn_mcp_session *s, bool in_batch)
{
	struct arn_mcp_body b;
	struct d out = {0};
	assert_int_equal(arn_mcp_parse(msg, strlen(msg), NULL, false, &b), ARN_MCP_E_NONE);
	struct json_object *a;
	out.step = arn_mcp_dispatch(&b.msgs[0], s, in_batch, &a, &out.v);
	if (out.step == ARN_MCP_S_ANSWER) {
		assert_non_null(a);
		strcpy(out.answer, mt_text(a));
		json_object_put(a);
	} else {
		assert_null(a);
	}
	arn_mcp_body_release(&b);
	return out;
}

#define INIT                                                                                       \
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":" \
	"\"2025-03-26\",\"capabilities\":{},\"clientInfo\":{\"name\":\"c\",\"version\":\"1\"}}}"

static void test_lifecycle(void **state)
{
	(void)state;
	struct arn_mcp_session s = {.in_use = true}; /* HTTP+SSE: before initialize */
	struct d d = dispatch(INIT, NULL, false);
	assert_int_equal(d.step, ARN_MCP_S_INITIALIZE);
	assert_int_equal(d.v, ARN_MCP_V_2025_03_26);
	d = dispatch(INIT, &s, false);
	assert_int_equal(d.step, ARN_MCP_S_INITIALIZE);
	d = dispatch(INIT, NULL, true);
	assert_int_equal(d.step, ARN_MCP_S_ANSWER);
	assert_string_equal(
	    d.answer, "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32600,"
		      "\"message\":\"Invalid Request: initialize must not be part of a batch\"}}");
	d = dispatch("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}", NULL,
		     false);
	assert_int_equal(d.step, ARN_MCP_S_ANSWER);
	assert_non_null(strstr(d.answer, "-32602"));

	/* before initialize: ping yes, the rest no */
	d = dispatch("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}", NULL, false);
	assert_string_equal(d.answer, "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}");
	d = dispatch("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}", &s, false);
	assert_int_equal(d.step, ARN_MCP_S_ANSWER);
	assert_non_null(strstr(d.answer, "Server not initialized"));

	s.version = ARN_MCP_V_2025_03_26;
	d = dispatch(INIT, &s, false);
	assert_non_null(strstr(d.answer, "Server already initialized"));
	assert_false(s.initialized);
	d = dispatch("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &s, false);
	assert_int_equal(d.step, ARN_MCP_S_CONSUMED);
	assert_true(s.initialized);
}

static void test_methods(void **state)
{
	(void)state;
	struct arn_mcp_session s = {.in_use = true, .version = ARN_MCP_V_2025_06_18};
	assert_int_equal(
	    dispatch("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", &s, false).step,
	    ARN_MCP_S_TOOLS_LIST);
	assert_int_equal(
	    dispatch("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{}}", &s,
		     false)
		.step,
	    ARN_MCP_S_TOOLS_CALL);
	struct d d = dispatch("{\"jsonrpc\":\"2.0\",\"id\":\"q\",\"method\":\"logging/setLevel\","
			      "\"params\":{\"level\":\"info\"}}",
			      &s, false);
	assert_string_equal(d.answer, "{\"jsonrpc\":\"2.0\",\"id\":\"q\",\"result\":{}}");
	assert_int_equal(
	    dispatch("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"prompts/list\"}", &s, false).step,
	    ARN_MCP_S_PRIM);
	d = dispatch("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"completion/complete\"}", &s,
		     false);
	assert_non_null(strstr(d.answer, "-32601"));
	assert_non_null(strstr(d.answer, "completion/complete"));
	d = dispatch("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"frobnicate\"}", &s, false);
	assert_string_equal(d.answer, "{\"jsonrpc\":\"2.0\",\"id\":5,\"error\":{\"code\":-32601,"
				      "\"message\":\"Method not found: frobnicate\"}}");
	/* notifications are never answered */
	assert_int_equal(
	    dispatch("{\"jsonrpc\":\"2.0\",\"method\":\"frobnicate\"}", &s, false).step,
	    ARN_MCP_S_CONSUMED);
	assert_int_equal(dispatch("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
				  "\"params\":{\"requestId\":1}}",
				  &s, false)
			     .step,
			 ARN_MCP_S_CANCEL);
	/* a client's answer to a backend's request */
	assert_int_equal(
	    dispatch("{\"jsonrpc\":\"2.0\",\"id\":\"arn.1.5\",\"result\":{}}", &s, false).step,
	    ARN_MCP_S_REPLY);
	assert_int_equal(
	    dispatch("{\"jsonrpc\":\"2.0\",\"id\":\"arn.1.5\",\"result\":{}}", NULL, false).step,
	    ARN_MCP_S_CONSUMED);
	/* an invalid message is answered with its error */
	d = dispatch("{\"jsonrpc\":\"1.0\",\"id\":9,\"method\":\"ping\"}", &s, false);
	assert_non_null(strstr(d.answer, "\"id\":9,\"error\":{\"code\":-32600"));
}

static void test_ids_wrapped(void **state)
{
	(void)state;
	struct json_object *id = json_object_new_int(5), *w, *back;
	uint32_t b;
	w = arn_mcp_id_wrap(3, id);
	assert_string_equal(json_object_get_string(w), "arn.3.5");
	assert_int_equal(arn_mcp_id_unwrap(w, &b, &back), 0);
	assert_int_equal(b, 3);
	assert_true(json_object_equal(back, id));
	json_object_put(back);
	json_object_put(w);
	json_object_put(id);

	id = json_object_new_string("a.b\"c");
	w = arn_mcp_id_wrap(12, id);
	assert_string_equal(json_object_get_string(w), "arn.12.\"a.b\\\"c\"");
	assert_int_equal(arn_mcp_id_unwrap(w, &b, &back), 0);
	assert_int_equal(b, 12);
	assert_string_equal(json_object_get_string(back), "a.b\"c");
	json_object_put(back);
	json_object_put(w);
	json_object_put(id);

	static const char *bad[] = {
	    "5",	 "arn.",	"arn.x.5",   "arn.1",	  "arn.1.",
	    "arn.1.{}",	 "arn.1.5x",	"arn.1.[1]", "arn.1.\"a", "arn.99999999999.1",
	    "arn.1.1.5", "arn.1.\"a\"b"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		w = json_object_new_string(bad[i]);
		back = NULL;
		if (arn_mcp_id_unwrap(w, &b, &back) != -EINVAL)
			fail_msg("'%s' unwrapped", bad[i]);
		assert_null(back);
		json_object_put(w);
	}
	w = json_object_new_int(1);
	assert_int_equal(arn_mcp_id_unwrap(w, &b, &back), -EINVAL);
	json_object_put(w);
}

static void test_endpoint_event(void **state)
{
	(void)state;
	struct arn_mcp_session s = {0};
	strcpy(s.id, "00000000000000000102030405060708090a0b0c0d0e0f10");
	char buf[256];
	size_t n = arn_mcp_sse_endpoint(buf, sizeof(buf), "/mcp", 4, &s);
	assert_int_equal(n, strlen("event: endpoint\ndata: /mcp?sessionId=") + 48 + 2);
	assert_memory_equal(buf, "event: endpoint\ndata: /mcp?sessionId=000000000000000001", 55);
}

const struct CMUnitTest mt_dispatch_tests[] = {
    cmocka_unit_test(test_lifecycle),
    cmocka_unit_test(test_methods),
    cmocka_unit_test(test_ids_wrapped),
    cmocka_unit_test(test_endpoint_event),
};
const size_t mt_dispatch_n = sizeof(mt_dispatch_tests) / sizeof(mt_dispatch_tests[0]);
