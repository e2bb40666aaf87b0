/*
 * The tool catalog: aggregation across backends (order, prefix modes,
 * collisions), tool filters, access rules, limits, tools/list pages with
 * the gateway's cursors, tools/call routing.
 */
#include <json-c/json.h>
#include <string.h>

#include "arn_config_model.h"
#include "mcp_test.h"

static struct arn_cfg_mcp_backend backends[3] = {
    {.name = "gh", .name_len = 2},
    {.name = "jira", .name_len = 4},
    {.name = "docs", .name_len = 4},
};

static struct arn_cfg_toolset toolset(uint8_t mode)
{
	return (struct arn_cfg_toolset){
	    .backends = backends,
	    .n_backends = 3,
	    .prefix_mode = mode,
	    .separator = "__",
	    .separator_len = 2,
	};
}

#define TOOL(n) "{\"name\":\"" n "\",\"inputSchema\":{\"type\":\"object\"}}"

struct lists {
	struct json_object *l[3];
};

static struct lists lists_default(void)
{
	struct lists x = {{
	    json_tokener_parse(
		"[" TOOL("search") "," TOOL("get_issue") "," TOOL("create_issue") "]"),
	    json_tokener_parse("[" TOOL("search") "," TOOL("get_ticket") "]"),
	    json_tokener_parse("[" TOOL("read") "]"),
	}};
	return x;
}

static void lists_put(struct lists *x)
{
	for (int i = 0; i < 3; i++)
		json_object_put(x->l[i]);
}

/* The exposed names, comma-separated, in catalog order. */
static const char *names(const struct arn_mcp_catalog *c)
{
	static char buf[1024];
	buf[0] = '\0';
	for (uint32_t i = 0; i < c->n; i++) {
		if (i)
			strcat(buf, ",");
		strcat(buf, c->tools[i].name);
	}
	return buf;
}

static struct arn_mcp_catalog *build(const struct arn_cfg_toolset *ts, struct lists *x,
				     const struct arn_mcp_limits *lim)
{
	struct arn_mcp_catalog *c = arn_mcp_catalog_build(ts, x->l, lim);
	assert_non_null(c);
	return c;
}

static void test_prefix_always(void **state)
{
	(void)state;
	struct arn_cfg_toolset ts = toolset(ARN_CFG_MCP_PREFIX_ALWAYS);
	struct lists x = lists_default();
	struct arn_mcp_catalog *c = build(&ts, &x, NULL);
	assert_string_equal(names(c), "gh__search,gh__get_issue,gh__create_issue,jira__search,"
				      "jira__get_ticket,docs__read");
	const struct arn_mcp_tool *t = arn_mcp_catalog_find(c, "jira__search", 12);
	assert_non_null(t);
	assert_int_equal(t->backend, 1);
	assert_string_equal(t->orig, "search");
	/* the definition clients get: the exposed name, the rest the backend's */
	assert_string_equal(mt_text(t->def),
			    "{\"inputSchema\":{\"type\":\"object\"},\"name\":\"jira__"
			    "search\"}");
	assert_null(arn_mcp_catalog_find(c, "search", 6));
	lists_put(&x);
	/* the catalog outlives the backends' answers */
	assert_string_equal(t->orig, "search");
	assert_string_equal(mt_text(c->tools[5].def), "{\"inputSchema\":{\"type\":\"object\"},"
						      "\"name\":\"docs__read\"}");
	arn_mcp_catalog_free(c);
}

static void test_prefix_on_collision(void **state)
{
	(void)state;
	struct arn_cfg_toolset ts = toolset(ARN_CFG_MCP_PREFIX_ON_COLLISION);
	ts.separator = ".";
	ts.separator_len = 1;
	struct lists x = lists_default();
	struct arn_mcp_catalog *c = build(&ts, &x, NULL);
	assert_string_equal(names(c),
			    "gh.search,get_issue,create_issue,jira.search,get_ticket,read");
	assert_int_equal(c->n_shadowed, 0);
	arn_mcp_catalog_free(c);
	lists_put(&x);

	/* a prefixed name equal to another backend's own: the first keeps it */
	ts.separator = "__";
	ts.separator_len = 2;
	struct lists y = {{
	    json_tokener_parse("[" TOOL("x") "]"),
	    json_tokener_parse("[" TOOL("x") "," TOOL("gh__x") "]"),
	    NULL,
	}};
	c = build(&ts, &y, NULL);
	assert_string_equal(names(c), "gh__x,jira__x");
	assert_int_equal(c->n_shadowed, 1);
	assert_int_equal(arn_mcp_catalog_find(c, "gh__x", 5)->backend, 0);
	arn_mcp_catalog_free(c);
	lists_put(&y);
}

static void test_prefix_never(void **state)
{
	(void)state;
	struct arn_cfg_toolset ts = toolset(ARN_CFG_MCP_PREFIX_NEVER);
	struct lists x = lists_default();
	struct arn_mcp_catalog *c = build(&ts, &x, NULL);
	assert_string_equal(names(c), "search,get_issue,create_issue,get_ticket,read");
	assert_int_equal(arn_mcp_catalog_find(c, "search", 6)->backend,
			 0); /* the first backend's */
	assert_int_equal(c->n_shadowed, 1);
	arn_mcp_catalog_free(c);
	lists_put(&x);
}

/* A backend that did not answer: its tools are absent, the others serve. */
static void test_backend_missing(void **state)
{
	(void)state;
	struct arn_cfg_toolset ts = toolset(ARN_CFG_MCP_PREFIX_ON_COLLISION);
	struct lists x = lists_default();
	json_object_put(x.l[0]);
	x.l[0] = NULL;
	struct arn_mcp_catalog *c = build(&ts, &x, NULL);
	/* search collides with nobody now: unprefixed */
	assert_string_equal(names(c), "search,get_ticket,read");
	arn_mcp_catalog_free(c);
	lists_put(&x);
}

static void test_invalid_tools_skipped(void **state)
{
	(void)state;
	struct arn_cfg_toolset ts = toolset(ARN_CFG_MCP_PREFIX_ALWAYS);
	struct arn_mcp_limits lim = {.max_tool_name = 10};
	struct lists x = {{
	    json_tokener_parse("[{\"inputSchema\":{}},{\"name\":5},{\"name\":\"\"},1,"
			       "{\"name\":\"a\\u0001b\"}," TOOL("ok") "," TOOL("ok") "]"),
	    json_tokener_parse("[" TOOL("abcdefgh") "]"),    /* jira__abcdefgh: 14 > 10 */
	    json_tokener_parse("[" TOOL("abcdefghijk") "]"), /* 11 > 10 even unprefixed */
	}};
	struct arn_mcp_catalog *c = build(&ts, &x, &lim);
	assert_string_equal(names(c), "gh__ok");
	assert_int_equal(c->n_invalid, 7);
	assert_int_equal(c->n_shadowed, 1); /* ok twice from gh */
	arn_mcp_catalog_free(c);
	lists_put(&x);
}

/*
 * MCP's Tool has an inputSchema, an object of "type": "object" (and an
 * optional outputSchema object); clients check each tool of a list and
 * refuse the whole list for one that is not so (the SDK's
 * ListToolsResultSchema): a backend's such tools are left out, the other
 * backends' tools stay readable.
 */
static void test_tools_without_schema_skipped(void **state)
{
	(void)state;
	struct arn_cfg_toolset ts = toolset(ARN_CFG_MCP_PREFIX_NEVER);
	struct lists x = {{
	    json_tokener_parse("[{\"name\":\"no_schema\"},{\"name\":\"s\",\"inputSchema\":\"x\"},"
			       "{\"name\":\"arr\",\"inputSchema\":[]},"
			       "{\"name\":\"str\",\"inputSchema\":{\"type\":\"string\"}},"
			       "{\"name\":\"untyped\",\"inputSchema\":{}},"
			       "{\"name\":\"out\",\"inputSchema\":{\"type\":\"object\"},"
			       "\"outputSchema\":7}," TOOL("ok") "]"),
	    json_tokener_parse("[" TOOL("search") "]"),
	    json_tokener_parse("[{\"name\":\"with_out\",\"inputSchema\":{\"type\":\"object\"},"
			       "\"outputSchema\":{\"type\":\"object\"}}]"),
	}};
	struct arn_mcp_catalog *c = build(&ts, &x, NULL);
	assert_string_equal(names(c), "ok,search,with_out");
	assert_int_equal(c->n_invalid, 6);
	/* what clients get is only tools MCP's Tool allows */
	struct json_object *r = NULL;
	assert_int_equal(arn_mcp_tools_list(c, &ts, NULL, NULL, 0, &r), ARN_MCP_E_NONE);
	struct json_object *tools = json_object_object_get(r, "tools");
	for (size_t i = 0; i < json_object_array_length(tools); i++) {
		struct json_object *in =
		    json_object_object_get(json_object_array_get_idx(tools, i), "inputSchema");
		assert_true(json_object_is_type(in, json_type_object));
		assert_string_equal(json_object_get_string(json_object_object_get(in, "type")),
				    "object");
	}
	json_object_put(r);
	arn_mcp_catalog_free(c);
	lists_put(&x);
}

static void test_max_tools(void **state)
{
	(void)state;
	struct arn_cfg_toolset ts = toolset(ARN_CFG_MCP_PREFIX_NEVER);
	struct arn_mcp_limits lim = {.max_tools = 4};
	struct lists x = lists_default();
	struct arn_mcp_catalog *c = build(&ts, &x, &lim);
	assert_int_equal(c->n, 4);
	assert_int_equal(c->n_over, 1);
	arn_mcp_catalog_free(c);
	lists_put(&x);

	/* a backend's pages stop at max_tools */
	struct json_object *acc = json_object_new_array();
	const char *next;
	struct json_object *p1 =
	    json_tokener_parse("{\"tools\":[" TOOL("a") "," TOOL("b") "],\"nextCursor\":\"n1\"}");
	struct json_object *p2 = json_tokener_parse("{\"tools\":[" TOOL("c") "," TOOL("d") "]}");
	assert_int_equal(arn_mcp_tools_page_read(p1, acc, 3, &next), ARN_MCP_E_NONE);
	assert_string_equal(next, "n1");
	assert_int_equal(arn_mcp_tools_page_read(p2, acc, 3, &next), ARN_MCP_E_BACKEND);
	assert_int_equal(json_object_array_length(acc), 3);
	json_object_put(acc);
	acc = json_object_new_array();
	assert_int_equal(arn_mcp_tools_page_read(p2, acc, 10, &next), ARN_MCP_E_NONE);
	assert_null(next);
	struct json_object *bad = json_tokener_parse("{\"tool\":[]}");
	assert_int_equal(arn_mcp_tools_page_read(bad, acc, 10, &next), ARN_MCP_E_INVALID);
	json_object_put(bad);
	json_object_put(acc);
	json_object_put(p1);
	json_object_put(p2);
}

/* tool_filter: allow (empty: all) then deny; a matcher may name a backend. */
static void test_tool_filter(void **state)
{
	(void)state;
	struct arn_cfg_toolset ts = toolset(ARN_CFG_MCP_PREFIX_ALWAYS);
	struct arn_cfg_mcp_tool_match allow[2] = {
	    {.name = {.kind = ARN_CFG_STR_PREFIX, .s = "get_", .len = 4}},
	    {.name = {.kind = ARN_CFG_STR_EXACT, .s = "search", .len = 6},
	     .backend = "jira",
	     .backend_len = 4},
	};
	struct arn_cfg_mcp_tool_match deny[1] = {
	    {.name = {.kind = ARN_CFG_STR_SUFFIX, .s = "_ticket", .len = 7}},
	};
	ts.allow = allow;
	ts.n_allow = 2;
	ts.deny = deny;
	ts.n_deny = 1;
	struct lists x = lists_default();
	struct arn_mcp_catalog *c = build(&ts, &x, NULL);
	assert_string_equal(names(c), "gh__get_issue,jira__search");
	assert_int_equal(c->n_filtered, 4);
	arn_mcp_catalog_free(c);
	lists_put(&x);
}

/* ---- access rules -------------------------------------------------------------- */

static struct arn_cfg_mcp_tool_match rule_tools[1] = {
    {.name = {.kind = ARN_CFG_STR_EXACT, .s = "search", .len = 6}},
};
static struct arn_cfg_mcp_principal principals[2] = {
    {.kind = ARN_CFG_MCP_PRINCIPAL_HEADER,
     .header = {.name = "x-team",
		.name_len = 6,
		.kind = ARN_CFG_HDR_STRING,
		.str = {.kind = ARN_CFG_STR_EXACT, .s = "ops", .len = 3}}},
    {.kind = ARN_CFG_MCP_PRINCIPAL_SAN,
     .san = {.kind = ARN_CFG_STR_SUFFIX, .s = ".ops.example", .len = 12}},
};
static struct arn_cfg_mcp_access_rule rules[1] = {
    {.tools = rule_tools, .n_tools = 1, .principals = principals, .n_principals = 2},
};

static const char *listed(const struct arn_mcp_catalog *c, const struct arn_cfg_toolset *ts,
			  const struct arn_mcp_client *cl)
{
	static char buf[1024];
	struct json_object *r;
	assert_int_equal(arn_mcp_tools_list(c, ts, cl, NULL, 100, &r), ARN_MCP_E_NONE);
	struct json_object *tools;
	assert_true(json_object_object_get_ex(r, "tools", &tools));
	buf[0] = '\0';
	for (size_t i = 0; i < json_object_array_length(tools); i++) {
		struct json_object *n;
		json_object_object_get_ex(json_object_array_get_idx(tools, i), "name", &n);
		if (i)
			strcat(buf, ",");
		strcat(buf, json_object_get_string(n));
	}
	json_object_put(r);
	return buf;
}

static enum arn_mcp_err call(const struct arn_mcp_catalog *c, const struct arn_cfg_toolset *ts,
			     const struct arn_mcp_client *cl, const char *params_json,
			     const struct arn_mcp_tool **t, char *rewritten)
{
	struct json_object *p = json_tokener_parse(params_json);
	enum arn_mcp_err e = arn_mcp_tools_call(c, ts, cl, p, t);
	if (rewritten)
		strcpy(rewritten, mt_text(p));
	json_object_put(p);
	return e;
}

static void test_access_rules(void **state)
{
	(void)state;
	struct arn_cfg_toolset ts = toolset(ARN_CFG_MCP_PREFIX_ON_COLLISION);
	ts.rules = rules;
	ts.n_rules = 1;
	struct lists x = lists_default();
	struct arn_mcp_catalog *c = build(&ts, &x, NULL);
	assert_true(c->tools[0].governed);  /* gh.search */
	assert_false(c->tools[1].governed); /* get_issue */

	struct arn_mcp_client anon = {0};
	struct arn_cfg_header h_dev = {"X-Team", 6, "dev", 3}, h_ops = {"x-team", 6, "ops", 3};
	struct arn_cfg_request r_dev = {.headers = &h_dev, .n_headers = 1};
	struct arn_cfg_request r_ops = {.headers = &h_ops, .n_headers = 1};
	struct arn_mcp_client dev = {.req = &r_dev}, ops = {.req = &r_ops};
	struct arn_mcp_str san[2] = {{"spiffe://x/y", 12}, {"bot.ops.example", 15}};
	struct arn_mcp_client cert = {.sans = san, .n_sans = 2};

	const char *open = "get_issue,create_issue,get_ticket,read";
	assert_string_equal(listed(c, &ts, &anon), open);
	assert_string_equal(listed(c, &ts, &dev), open);
	assert_string_equal(listed(c, &ts, &ops),
			    "gh__search,get_issue,create_issue,jira__search,get_ticket,read");
	assert_string_equal(listed(c, &ts, &cert),
			    "gh__search,get_issue,create_issue,jira__search,get_ticket,read");
	/* the same names, but the list did not fit whole: no SAN principal
	 * matches (a header one still does) */
	struct arn_mcp_client cert_lost = {.sans = san, .n_sans = 2, .sans_lost = true};
	assert_string_equal(listed(c, &ts, &cert_lost), open);
	struct arn_mcp_client both_lost = {
	    .req = &r_ops, .sans = san, .n_sans = 2, .sans_lost = true};
	assert_string_equal(listed(c, &ts, &both_lost),
			    "gh__search,get_issue,create_issue,jira__search,get_ticket,read");

	const struct arn_mcp_tool *t;
	char rw[256];
	assert_int_equal(call(c, &ts, &dev, "{\"name\":\"gh__search\"}", &t, NULL),
			 ARN_MCP_E_FORBIDDEN_TOOL);
	assert_int_equal(call(c, &ts, &cert_lost, "{\"name\":\"gh__search\"}", &t, NULL),
			 ARN_MCP_E_FORBIDDEN_TOOL);
	assert_int_equal(call(c, &ts, &cert, "{\"name\":\"gh__search\"}", &t, NULL),
			 ARN_MCP_E_NONE);
	assert_int_equal(
	    call(c, &ts, &ops, "{\"name\":\"gh__search\",\"arguments\":{\"q\":1}}", &t, rw),
	    ARN_MCP_E_NONE);
	assert_int_equal(t->backend, 0);
	assert_string_equal(rw, "{\"name\":\"search\",\"arguments\":{\"q\":1}}");
	assert_int_equal(call(c, &ts, &anon, "{\"name\":\"get_ticket\"}", &t, rw), ARN_MCP_E_NONE);
	assert_int_equal(t->backend, 1);
	arn_mcp_catalog_free(c);
	lists_put(&x);
}

static void test_tools_call_errors(void **state)
{
	(void)state;
	struct arn_cfg_toolset ts = toolset(ARN_CFG_MCP_PREFIX_ALWAYS);
	struct lists x = lists_default();
	struct arn_mcp_catalog *c = build(&ts, &x, NULL);
	struct arn_mcp_client anon = {0};
	const struct arn_mcp_tool *t;
	assert_int_equal(call(c, &ts, &anon, "{\"name\":\"search\"}", &t, NULL),
			 ARN_MCP_E_UNKNOWN_TOOL); /* only prefixed names exist */
	assert_null(t);
	assert_int_equal(call(c, &ts, &anon, "{}", &t, NULL), ARN_MCP_E_INVALID_PARAMS);
	assert_int_equal(call(c, &ts, &anon, "{\"name\":7}", &t, NULL), ARN_MCP_E_INVALID_PARAMS);
	assert_int_equal(
	    call(c, &ts, &anon, "{\"name\":\"gh__search\",\"arguments\":[]}", &t, NULL),
	    ARN_MCP_E_INVALID_PARAMS);
	assert_int_equal(
	    call(c, &ts, &anon, "{\"name\":\"gh__search\",\"arguments\":null}", &t, NULL),
	    ARN_MCP_E_INVALID_PARAMS);
	assert_int_equal(arn_mcp_tools_call(c, &ts, &anon, NULL, &t), ARN_MCP_E_INVALID_PARAMS);
	assert_int_equal(arn_mcp_err_code(ARN_MCP_E_UNKNOWN_TOOL), -32602);
	arn_mcp_catalog_free(c);
	lists_put(&x);
}

/* ---- pages ------------------------------------------------------------------------ */

static struct json_object *page(const struct arn_mcp_catalog *c, const struct arn_cfg_toolset *ts,
				const struct arn_mcp_client *cl, const char *cursor, uint32_t size,
				enum arn_mcp_err want)
{
	struct json_object *p = json_object_new_object();
	if (cursor)
		json_object_object_add(p, "cursor", json_object_new_string(cursor));
	struct json_object *r;
	assert_int_equal(arn_mcp_tools_list(c, ts, cl, p, size, &r), want);
	json_object_put(p);
	return r;
}

static void test_pages(void **state)
{
	(void)state;
	struct arn_cfg_toolset ts = toolset(ARN_CFG_MCP_PREFIX_ALWAYS);
	ts.rules = rules;
	ts.n_rules = 1;
	struct lists x = lists_default();
	struct arn_mcp_catalog *c = build(&ts, &x, NULL);
	struct arn_mcp_client anon = {0};
	/* anon sees 4 of 6 (the two search tools are governed): pages of 3 */
	struct json_object *r = page(c, &ts, &anon, NULL, 3, ARN_MCP_E_NONE), *tools, *nc;
	assert_true(json_object_object_get_ex(r, "tools", &tools));
	assert_int_equal(json_object_array_length(tools), 3);
	assert_true(json_object_object_get_ex(r, "nextCursor", &nc));
	char cursor[64];
	strcpy(cursor, json_object_get_string(nc));
	assert_int_equal(strlen(cursor), 24);
	json_object_put(r);
	r = page(c, &ts, &anon, cursor, 3, ARN_MCP_E_NONE);
	assert_true(json_object_object_get_ex(r, "tools", &tools));
	assert_int_equal(json_object_array_length(tools), 1); /* docs__read; jira__search hidden */
	assert_false(json_object_object_get_ex(r, "nextCursor", NULL));
	json_object_put(r);
	/* exactly a page's worth: no nextCursor */
	r = page(c, &ts, &anon, NULL, 4, ARN_MCP_E_NONE);
	assert_false(json_object_object_get_ex(r, "nextCursor", NULL));
	json_object_put(r);

	/* a catalog rebuilt with the same tools takes the cursor */
	struct arn_mcp_catalog *same = build(&ts, &x, NULL);
	assert_true(same->hash == c->hash);
	r = page(same, &ts, &anon, cursor, 3, ARN_MCP_E_NONE);
	json_object_put(r);
	arn_mcp_catalog_free(same);
	/* a changed one refuses it */
	struct json_object *l2 = x.l[2];
	x.l[2] = json_tokener_parse("[" TOOL("read") "," TOOL("write") "]");
	struct arn_mcp_catalog *other = build(&ts, &x, NULL);
	assert_true(other->hash != c->hash);
	assert_null(page(other, &ts, &anon, cursor, 3, ARN_MCP_E_BAD_CURSOR));
	arn_mcp_catalog_free(other);
	json_object_put(x.l[2]);
	x.l[2] = l2;

	assert_null(page(c, &ts, &anon, "nope", 3, ARN_MCP_E_BAD_CURSOR));
	assert_null(page(c, &ts, &anon, "", 3, ARN_MCP_E_BAD_CURSOR));
	char past[32];
	memcpy(past, cursor, 16);
	strcpy(past + 16, "000000ff");
	assert_null(page(c, &ts, &anon, past, 3, ARN_MCP_E_BAD_CURSOR));
	struct json_object *p = json_tokener_parse("{\"cursor\":5}");
	assert_int_equal(arn_mcp_tools_list(c, &ts, &anon, p, 3, &r), ARN_MCP_E_INVALID_PARAMS);
	json_object_put(p);
	/* an empty catalog lists nothing */
	struct lists none = {{NULL, NULL, NULL}};
	struct arn_mcp_catalog *e = build(&ts, &none, NULL);
	r = page(e, &ts, &anon, NULL, 0, ARN_MCP_E_NONE);
	assert_string_equal(mt_text(r), "{\"tools\":[]}");
	json_object_put(r);
	arn_mcp_catalog_free(e);
	arn_mcp_catalog_free(c);
	lists_put(&x);
}

const struct CMUnitTest mt_tools_tests[] = {
    cmocka_unit_test(test_prefix_always),
    cmocka_unit_test(test_prefix_on_collision),
    cmocka_unit_test(test_prefix_never),
    cmocka_unit_test(test_backend_missing),
    cmocka_unit_test(test_invalid_tools_skipped),
    cmocka_unit_test(test_tools_without_schema_skipped),
    cmocka_unit_test(test_max_tools),
    cmocka_unit_test(test_tool_filter),
    cmocka_unit_test(test_access_rules),
    cmocka_unit_test(test_tools_call_errors),
    cmocka_unit_test(test_pages),
};
const size_t mt_tools_n = sizeof(mt_tools_tests) / sizeof(mt_tools_tests[0]);
