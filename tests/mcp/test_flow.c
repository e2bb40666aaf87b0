/*
 * The pieces together, as the filter will use them, with HTTP left out:
 * a 2025-06-18 client initializes, lists the tools of two backends (one
 * paged, one down), calls one, and the backend streams progress, asks the
 * client something (elicitation) and answers; the client's answer goes
 * back to that backend. Each step's output is what the filter would write.
 */
#include <json-c/json.h>
#include <string.h>

#include "arn_config_model.h"
#include "mcp_test.h"

static struct arn_cfg_mcp_backend backends[2] = {
    {.name = "gh", .name_len = 2, .path = "/mcp", .path_len = 4},
    {.name = "jira", .name_len = 4, .path = "/mcp", .path_len = 4},
};
static const struct arn_cfg_toolset ts = {
    .backends = backends,
    .n_backends = 2,
    .prefix_mode = ARN_CFG_MCP_PREFIX_ALWAYS,
    .separator = "__",
    .separator_len = 2,
};
static const uint8_t rnd[16] = {0xaa, 0xbb};

/* The client's body, read as the filter reads it. */
static void client(const char *s, struct arn_mcp_body *b, enum arn_mcp_version v)
{
	assert_int_equal(arn_mcp_parse(s, strlen(s), NULL, arn_mcp_version_batches(v), b),
			 ARN_MCP_E_NONE);
}

static void test_flow(void **state)
{
	(void)state;
	struct arn_mcp_sessions *t = arn_mcp_sessions_create(0, 16, 2, 60000);
	struct arn_mcp_body b;
	struct json_object *ans;
	enum arn_mcp_version v;

	/* 1. initialize: no session yet; the gateway opens one and answers */
	client("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
	       "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":"
	       "\"c\",\"version\":\"1\"}}}",
	       &b, ARN_MCP_V_NONE);
	assert_int_equal(arn_mcp_dispatch(&b.msgs[0], NULL, b.batch, &ans, &v),
			 ARN_MCP_S_INITIALIZE);
	struct arn_mcp_session *s;
	assert_int_equal(
	    arn_mcp_session_open(t, v, ARN_MCP_T_STREAMABLE, 1000, rnd, &s, NULL, NULL),
	    ARN_MCP_E_NONE);
	struct json_object *r = arn_mcp_initialize_result(v, NULL, 0, "0.1.0");
	ans = arn_mcp_new_result(b.msgs[0].id, r);
	json_object_put(r);
	assert_non_null(strstr(mt_text(ans), "\"protocolVersion\":\"2025-06-18\""));
	json_object_put(ans);
	arn_mcp_body_release(&b);
	char sid[ARN_MCP_SID_LEN + 1];
	strcpy(sid, s->id); /* the Mcp-Session-Id response header */

	/* 2. notifications/initialized, on the session: 202 */
	struct arn_mcp_session *f;
	assert_int_equal(arn_mcp_session_find(t, sid, strlen(sid), 1001, &f), ARN_MCP_E_NONE);
	assert_int_equal(arn_mcp_version_header("2025-06-18", 10, f->version), ARN_MCP_E_NONE);
	client("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &b, f->version);
	assert_int_equal(arn_mcp_dispatch(&b.msgs[0], f, b.batch, &ans, &v), ARN_MCP_S_CONSUMED);
	assert_true(f->initialized);
	arn_mcp_body_release(&b);

	/* 3. tools/list: ask both backends; gh answers in two pages, jira is down */
	client("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", &b, f->version);
	assert_int_equal(arn_mcp_dispatch(&b.msgs[0], f, b.batch, &ans, &v), ARN_MCP_S_TOOLS_LIST);
	struct arn_mcp_fanout fo;
	assert_int_equal(arn_mcp_fanout_init(&fo, &ts, NULL), 0);
	const char *pages[] = {
	    "{\"jsonrpc\":\"2.0\",\"id\":\"arn.list.0.0\",\"result\":{\"tools\":[{\"name\":"
	    "\"search\",\"inputSchema\":{\"type\":\"object\"}}],\"nextCursor\":\"2\"}}",
	    "{\"jsonrpc\":\"2.0\",\"id\":\"arn.list.0.1\",\"result\":{\"tools\":[{\"name\":"
	    "\"create_issue\",\"inputSchema\":{\"type\":\"object\"}}]}}",
	};
	for (int page = 0; page < 2; page++) {
		struct json_object *req = arn_mcp_fanout_request(&fo, 0);
		assert_non_null(req);
		/* (before its first request to gh, the filter opens gh's own
		 * session with arn_mcp_backend_initialize) */
		json_object_put(req);
		struct arn_mcp_body up;
		assert_int_equal(arn_mcp_parse(pages[page], strlen(pages[page]), NULL, false, &up),
				 ARN_MCP_E_NONE);
		arn_mcp_fanout_answer(&fo, 0, &up.msgs[0], strlen(pages[page]));
		arn_mcp_body_release(&up);
	}
	json_object_put(arn_mcp_fanout_request(&fo, 1));
	arn_mcp_fanout_fail(&fo, 1, "connect failed");
	assert_true(arn_mcp_fanout_done(&fo));
	struct arn_mcp_catalog *cat = arn_mcp_fanout_catalog(&fo);
	arn_mcp_fanout_fini(&fo);
	struct arn_mcp_client anon = {0};
	assert_int_equal(arn_mcp_tools_list(cat, &ts, &anon, b.msgs[0].params, 0, &r),
			 ARN_MCP_E_NONE);
	ans = arn_mcp_new_result(b.msgs[0].id, r);
	json_object_put(r);
	assert_string_equal(
	    mt_text(ans),
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"inputSchema\":{\"type\":"
	    "\"object\"},"
	    "\"name\":\"gh__search\"},{\"inputSchema\":{\"type\":\"object\"},\"name\":\"gh__create_"
	    "issue\"}]}}");
	json_object_put(ans);
	arn_mcp_body_release(&b);

	/* 4. tools/call gh__search: routed to gh as "search", with gh's session */
	client("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
	       "\"gh__search\",\"arguments\":{\"q\":\"x\"},\"_meta\":{\"progressToken\":\"p\"}}}",
	       &b, f->version);
	assert_int_equal(arn_mcp_dispatch(&b.msgs[0], f, b.batch, &ans, &v), ARN_MCP_S_TOOLS_CALL);
	const struct arn_mcp_tool *tool;
	assert_int_equal(arn_mcp_tools_call(cat, &ts, &anon, b.msgs[0].params, &tool),
			 ARN_MCP_E_NONE);
	assert_int_equal(tool->backend, 0);
	assert_int_equal(arn_mcp_session_backend_set(t, f, 0, "gh-sess", 7), 0);
	struct arn_mcp_header h[8];
	size_t nh = arn_mcp_upstream_headers(&backends[0], arn_mcp_session_backend(t, f, 0, NULL),
					     f->version, h, 8);
	assert_int_equal(nh, 4);
	assert_string_equal(h[2].value, "gh-sess");
	assert_string_equal(mt_text(b.root),
			    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{"
			    "\"name\":\"search\",\"arguments\":{\"q\":\"x\"},\"_meta\":{"
			    "\"progressToken\":\"p\"}}}");
	arn_mcp_body_release(&b);

	/* 5. gh streams: progress, an elicitation request, the result */
	assert_int_equal(arn_mcp_upstream_classify(200, "text/event-stream", 17, true),
			 ARN_MCP_U_SSE);
	const char *stream =
	    "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{"
	    "\"progressToken\":\"p\",\"progress\":1}}\n\n"
	    "data: "
	    "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"elicitation/create\",\"params\":{}}\n\n"
	    "data: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[]}}\n\n";
	const char *want[] = {
	    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{"
	    "\"progressToken\":\"p\",\"progress\":1}}",
	    "{\"jsonrpc\":\"2.0\",\"id\":\"arn.0.7\",\"method\":\"elicitation/"
	    "create\",\"params\":{}}",
	    "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[]}}",
	};
	char buf[512];
	struct arn_mcp_sse sse;
	arn_mcp_sse_init(&sse, buf, sizeof(buf));
	size_t off = 0, n = strlen(stream);
	for (int i = 0; i < 3; i++) {
		struct arn_mcp_sse_ev ev;
		ssize_t k = arn_mcp_sse_feed(&sse, stream + off, n - off, &ev);
		assert_true(k > 0);
		off += (size_t)k;
		struct arn_mcp_body m;
		assert_int_equal(arn_mcp_parse(ev.data, ev.data_len, NULL, false, &m),
				 ARN_MCP_E_NONE);
		assert_int_equal(arn_mcp_from_backend(&m.msgs[0], tool->backend), 0);
		/* each relayed to the client as an event of the POST's stream */
		char out[512];
		size_t len;
		const char *txt = arn_mcp_text(m.root, &len);
		assert_string_equal(txt, want[i]);
		assert_true(arn_mcp_sse_event(out, sizeof(out), "message", NULL, txt, len) <
			    sizeof(out));
		arn_mcp_body_release(&m);
	}

	/* 6. the client answers the elicitation: back to gh with gh's id */
	client("{\"jsonrpc\":\"2.0\",\"id\":\"arn.0.7\",\"result\":{\"action\":\"accept\"}}", &b,
	       f->version);
	assert_int_equal(arn_mcp_dispatch(&b.msgs[0], f, b.batch, &ans, &v), ARN_MCP_S_REPLY);
	uint32_t owner;
	struct json_object *orig;
	assert_int_equal(arn_mcp_id_unwrap(b.msgs[0].id, &owner, &orig), 0);
	assert_int_equal(owner, 0);
	json_object_object_add(b.root, "id", orig);
	assert_string_equal(mt_text(b.root),
			    "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"action\":\"accept\"}}");
	arn_mcp_body_release(&b);

	/* 7. DELETE ends the session; the id is gone */
	arn_mcp_session_close(t, f);
	assert_int_equal(arn_mcp_session_find(t, sid, strlen(sid), 1002, &f),
			 ARN_MCP_E_SESSION_UNKNOWN);
	arn_mcp_catalog_free(cat);
	arn_mcp_sessions_destroy(t);
}

const struct CMUnitTest mt_flow_tests[] = {
    cmocka_unit_test(test_flow),
};
const size_t mt_flow_n = sizeof(mt_flow_tests) / sizeof(mt_flow_tests[0]);
