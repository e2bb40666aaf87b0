/*
 * tools/list across the backends: pages followed per backend, failures
 * isolated, the bounds (tools, pages, repeating cursors), the catalog
 * built from the round, and when list_changed is due.
 */
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "arn_config_model.h"
#include "mcp_test.h"

static struct arn_cfg_mcp_backend backends[3] = {
    {.name = "gh", .name_len = 2},
    {.name = "jira", .name_len = 4},
    {.name = "docs", .name_len = 4},
};

static const struct arn_cfg_toolset ts = {
    .backends = backends,
    .n_backends = 3,
    .prefix_mode = ARN_CFG_MCP_PREFIX_ALWAYS,
    .separator = "__",
    .separator_len = 2,
};

/* Ask backend @p b and check the request; answer with @p answer_json. */
static enum arn_mcp_fanout_state exchange(struct arn_mcp_fanout *f, uint32_t b,
					  const char *want_req, const char *answer_json)
{
	struct json_object *r = arn_mcp_fanout_request(f, b);
	assert_non_null(r);
	assert_string_equal(mt_text(r), want_req);
	json_object_put(r);
	assert_int_equal(f->b[b].state, ARN_MCP_F_WAIT);
	assert_null(arn_mcp_fanout_request(f, b)); /* one at a time */
	struct arn_mcp_body body;
	assert_int_equal(arn_mcp_parse(answer_json, strlen(answer_json), NULL, false, &body),
			 ARN_MCP_E_NONE);
	enum arn_mcp_fanout_state st =
	    arn_mcp_fanout_answer(f, b, &body.msgs[0], strlen(answer_json));
	arn_mcp_body_release(&body);
	return st;
}

#define T(n) "{\"name\":\"" n "\",\"inputSchema\":{\"type\":\"object\"}}"

static void test_fanout_round(void **state)
{
	(void)state;
	struct arn_mcp_fanout f;
	assert_int_equal(arn_mcp_fanout_init(&f, &ts, NULL), 0);
	assert_int_equal(f.pending, 3);
	/* gh: two pages */
	assert_int_equal(
	    exchange(&f, 0,
		     "{\"jsonrpc\":\"2.0\",\"id\":\"arn.list.0.0\",\"method\":\"tools/list\"}",
		     "{\"jsonrpc\":\"2.0\",\"id\":\"arn.list.0.0\",\"result\":{\"tools\":[" T(
			 "a") "],\"nextCursor\":\"p2\"}}"),
	    ARN_MCP_F_ASK);
	assert_int_equal(
	    exchange(&f, 0,
		     "{\"jsonrpc\":\"2.0\",\"id\":\"arn.list.0.1\",\"method\":\"tools/"
		     "list\",\"params\":{\"cursor\":\"p2\"}}",
		     "{\"jsonrpc\":\"2.0\",\"id\":\"arn.list.0.1\",\"result\":{\"tools\":[" T(
			 "b") "]}}"),
	    ARN_MCP_F_DONE);
	assert_false(arn_mcp_fanout_done(&f));
	/* jira: an error answer; docs: down */
	assert_int_equal(
	    exchange(&f, 1,
		     "{\"jsonrpc\":\"2.0\",\"id\":\"arn.list.1.0\",\"method\":\"tools/list\"}",
		     "{\"jsonrpc\":\"2.0\",\"id\":\"arn.list.1.0\",\"error\":{\"code\":-32603,"
		     "\"message\":\"boom\"}}"),
	    ARN_MCP_F_FAILED);
	assert_string_equal(f.b[1].why, "tools/list: error -32603: boom");
	arn_mcp_fanout_fail(&f, 2, "connect failed");
	assert_string_equal(f.b[2].why, "connect failed");
	arn_mcp_fanout_fail(&f, 2, "again"); /* settled once */
	assert_true(arn_mcp_fanout_done(&f));
	struct arn_mcp_catalog *c = arn_mcp_fanout_catalog(&f);
	assert_int_equal(c->n, 2);
	assert_string_equal(c->tools[0].name, "gh__a");
	assert_string_equal(c->tools[1].name, "gh__b");
	arn_mcp_fanout_fini(&f);
	/* the catalog outlives the round */
	assert_string_equal(mt_text(c->tools[1].def),
			    "{\"inputSchema\":{\"type\":\"object\"},\"name\":\"gh__b\"}");

	/* list_changed: due for a first catalog, not for the same tools, due
	 * for other tools or other definitions */
	assert_true(arn_mcp_catalog_changed(NULL, c));
	struct json_object *same[3] = {json_tokener_parse("[" T("a") "," T("b") "]"), NULL, NULL};
	struct arn_mcp_catalog *c2 = arn_mcp_catalog_build(&ts, same, NULL);
	assert_false(arn_mcp_catalog_changed(c, c2));
	arn_mcp_catalog_free(c2);
	json_object_put(same[0]);
	struct json_object *redefined[3] = {
	    json_tokener_parse("[" T("a") ",{\"name\":\"b\",\"inputSchema\":{\"type\":\"object\","
					  "\"properties\":{}}}]"),
	    NULL, NULL};
	c2 = arn_mcp_catalog_build(&ts, redefined, NULL);
	assert_true(c2->hash == c->hash); /* cursors stay valid */
	assert_true(arn_mcp_catalog_changed(c, c2));
	arn_mcp_catalog_free(c2);
	json_object_put(redefined[0]);
	arn_mcp_catalog_free(c);
}

static void test_fanout_bounds(void **state)
{
	(void)state;
	struct arn_mcp_fanout f;
	struct arn_mcp_limits lim = {.max_tools = 2, .max_backend_pages = 3};
	assert_int_equal(arn_mcp_fanout_init(&f, &ts, &lim), 0);
	/* gh: more tools than max_tools */
	assert_int_equal(exchange(&f, 0,
				  "{\"jsonrpc\":\"2.0\",\"id\":\"arn.list.0.0\",\"method\":\"tools/"
				  "list\"}",
				  "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[" T(
				      "a") "," T("b") "," T("c") "]}}"),
			 ARN_MCP_F_FAILED);
	assert_string_equal(f.b[0].why, "tools/list: more than 2 tools (max_tools)");
	/* jira: a cursor that repeats */
	struct json_object *r = arn_mcp_fanout_request(&f, 1);
	json_object_put(r);
	const char *p1 =
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[],\"nextCursor\":\"x\"}}";
	struct arn_mcp_body body;
	assert_int_equal(arn_mcp_parse(p1, strlen(p1), NULL, false, &body), ARN_MCP_E_NONE);
	assert_int_equal(arn_mcp_fanout_answer(&f, 1, &body.msgs[0], strlen(p1)), ARN_MCP_F_ASK);
	r = arn_mcp_fanout_request(&f, 1);
	json_object_put(r);
	assert_int_equal(arn_mcp_fanout_answer(&f, 1, &body.msgs[0], strlen(p1)), ARN_MCP_F_FAILED);
	assert_string_equal(f.b[1].why, "tools/list: nextCursor repeats the cursor asked");
	arn_mcp_body_release(&body);
	/* docs: pages without end */
	for (int i = 0;; i++) {
		char a[128];
		snprintf(a, sizeof(a),
			 "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[],\"nextCursor\":"
			 "\"c%d\"}}",
			 i);
		r = arn_mcp_fanout_request(&f, 2);
		assert_non_null(r);
		json_object_put(r);
		assert_int_equal(arn_mcp_parse(a, strlen(a), NULL, false, &body), ARN_MCP_E_NONE);
		enum arn_mcp_fanout_state st =
		    arn_mcp_fanout_answer(&f, 2, &body.msgs[0], strlen(a));
		arn_mcp_body_release(&body);
		if (st == ARN_MCP_F_FAILED) {
			assert_int_equal(i, 2); /* the third page */
			break;
		}
		assert_int_equal(st, ARN_MCP_F_ASK);
	}
	assert_string_equal(f.b[2].why, "tools/list: more than 3 pages (max_backend_pages)");
	assert_true(arn_mcp_fanout_done(&f));
	struct arn_mcp_catalog *c = arn_mcp_fanout_catalog(&f);
	assert_int_equal(c->n, 0);
	arn_mcp_catalog_free(c);
	arn_mcp_fanout_fini(&f);

	/* malformed answers fail the backend; answers out of turn change nothing */
	assert_int_equal(arn_mcp_fanout_init(&f, &ts, NULL), 0);
	const char *bad = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tool\":[]}}";
	assert_int_equal(arn_mcp_parse(bad, strlen(bad), NULL, false, &body), ARN_MCP_E_NONE);
	assert_int_equal(arn_mcp_fanout_answer(&f, 0, &body.msgs[0], strlen(bad)),
			 ARN_MCP_F_ASK); /* not asked */
	r = arn_mcp_fanout_request(&f, 0);
	json_object_put(r);
	assert_int_equal(arn_mcp_fanout_answer(&f, 0, &body.msgs[0], strlen(bad)),
			 ARN_MCP_F_FAILED);
	assert_string_equal(f.b[0].why, "tools/list: the result has no tools array");
	arn_mcp_body_release(&body);
	const char *note = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}";
	assert_int_equal(arn_mcp_parse(note, strlen(note), NULL, false, &body), ARN_MCP_E_NONE);
	r = arn_mcp_fanout_request(&f, 1);
	json_object_put(r);
	assert_int_equal(arn_mcp_fanout_answer(&f, 1, &body.msgs[0], strlen(note)),
			 ARN_MCP_F_FAILED);
	arn_mcp_body_release(&body);
	assert_null(arn_mcp_fanout_request(&f, 7));
	assert_int_equal(arn_mcp_fanout_answer(&f, 7, NULL, 0), ARN_MCP_F_FAILED);
	arn_mcp_fanout_fini(&f);
}

/* Each answer is bounded (max_message_bytes) as its reader takes it, and
 * a round keeps every page's tools until it ends: 64 pages of one
 * answer-sized tool each would pin 64 answers per backend per round. The
 * pages together are bounded by the same limit: the backend fails at the
 * page that passes it, holding at most the limit and that page. */
static void test_fanout_pages_bounded_together(void **state)
{
	(void)state;
	const size_t lim_bytes = 64 * 1024;
	struct arn_mcp_limits lim = {.max_message_bytes = (uint32_t)lim_bytes};
	struct arn_mcp_fanout f;
	assert_int_equal(arn_mcp_fanout_init(&f, &ts, &lim), 0);
	static char desc[20 * 1024];
	memset(desc, 'x', sizeof(desc) - 1);
	static char ans[64 * 1024];
	enum arn_mcp_fanout_state st = ARN_MCP_F_ASK;
	unsigned p = 0;
	for (; p < 64 && st == ARN_MCP_F_ASK; p++) {
		json_object_put(arn_mcp_fanout_request(&f, 0));
		int n =
		    snprintf(ans, sizeof(ans),
			     "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":{\"tools\":[{\"name\":"
			     "\"t%u\",\"description\":\"%s\",\"inputSchema\":{}}],"
			     "\"nextCursor\":\"c%u\"}}",
			     p, desc, p);
		assert_true((size_t)n < lim_bytes); /* every answer within its limit */
		struct arn_mcp_body body;
		assert_int_equal(arn_mcp_parse(ans, (size_t)n, &lim, false, &body), ARN_MCP_E_NONE);
		st = arn_mcp_fanout_answer(&f, 0, &body.msgs[0], (size_t)n);
		arn_mcp_body_release(&body);
	}
	assert_int_equal(st, ARN_MCP_F_FAILED);
	assert_int_equal(p, 4); /* 3 pages of about 20 KiB fit in 64 KiB, the 4th does not */
	assert_string_equal(f.b[0].why, "tools/list: its pages pass 65536 bytes together");
	assert_true(json_object_array_length(f.b[0].tools) <= 3);
	/* the other backends are not charged for it */
	assert_int_equal(
	    exchange(&f, 1,
		     "{\"jsonrpc\":\"2.0\",\"id\":\"arn.list.1.0\",\"method\":\"tools/list\"}",
		     "{\"jsonrpc\":\"2.0\",\"id\":\"arn.list.1.0\",\"result\":{\"tools\":[" T(
			 "a") "]}}"),
	    ARN_MCP_F_DONE);
	arn_mcp_fanout_fini(&f);
}

const struct CMUnitTest mt_fanout_tests[] = {
    cmocka_unit_test(test_fanout_round),
    cmocka_unit_test(test_fanout_bounds),
    cmocka_unit_test(test_fanout_pages_bounded_together),
};
const size_t mt_fanout_n = sizeof(mt_fanout_tests) / sizeof(mt_fanout_tests[0]);
