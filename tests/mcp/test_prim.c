/*
 * Prompts and resources across backends (lib/mcp/mcp_prim.c): lists
 * merged under each prefix mode, prompts/get and resources/read routed to
 * the backend that listed the name or URI (or a template's prefix), the
 * ToolSet's filters and access rules (prompts by name, resources by
 * backend), the fan-out asking for them.
 */
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "arn_config_model.h"
#include "mcp_test.h"

static struct arn_cfg_mcp_backend pbackends[3] = {
    {.name = "gh", .name_len = 2},
    {.name = "jira", .name_len = 4},
    {.name = "docs", .name_len = 4},
};

static struct arn_cfg_toolset pts(uint8_t mode)
{
	return (struct arn_cfg_toolset){
	    .backends = pbackends,
	    .n_backends = 3,
	    .prefix_mode = mode,
	    .separator = "__",
	    .separator_len = 2,
	};
}

/* gh: greet, review; jira: greet; docs: failed (NULL) */
static void prompt_lists(struct json_object *l[3])
{
	l[0] = json_tokener_parse(
	    "[{\"name\":\"greet\",\"description\":\"g\"},{\"name\":\"review\"}]");
	l[1] = json_tokener_parse("[{\"name\":\"greet\"},{\"nameless\":1},7]");
	l[2] = NULL;
}

static const char *names(struct json_object *res, const char *key, const char *field)
{
	static char out[256];
	out[0] = 0;
	struct json_object *arr = json_object_object_get(res, key);
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		if (i)
			strcat(out, ",");
		strcat(out, json_object_get_string(
				json_object_object_get(json_object_array_get_idx(arr, i), field)));
	}
	return out;
}

static void test_prompts_merged(void **st)
{
	(void)st;
	struct json_object *l[3];
	prompt_lists(l);
	struct arn_cfg_toolset ts = pts(ARN_CFG_MCP_PREFIX_ALWAYS);
	struct json_object *r = arn_mcp_prim_merge(&ts, ARN_MCP_P_PROMPTS, l, NULL);
	assert_string_equal(names(r, "prompts", "name"), "gh__greet,gh__review,jira__greet");
	/* the rest of a prompt is the backend's */
	assert_non_null(strstr(mt_text(r), "{\"name\":\"gh__greet\",\"description\":\"g\"}"));
	json_object_put(r);
	ts = pts(ARN_CFG_MCP_PREFIX_ON_COLLISION);
	r = arn_mcp_prim_merge(&ts, ARN_MCP_P_PROMPTS, l, NULL);
	assert_string_equal(names(r, "prompts", "name"), "gh__greet,review,jira__greet");
	json_object_put(r);
	ts = pts(ARN_CFG_MCP_PREFIX_NEVER);
	r = arn_mcp_prim_merge(&ts, ARN_MCP_P_PROMPTS, l, NULL);
	assert_string_equal(names(r, "prompts", "name"), "greet,review"); /* the first wins */
	json_object_put(r);
	json_object_put(l[0]);
	json_object_put(l[1]);
}

static void test_prompts_routed(void **st)
{
	(void)st;
	struct json_object *l[3];
	prompt_lists(l);
	struct arn_cfg_toolset ts = pts(ARN_CFG_MCP_PREFIX_ON_COLLISION);
	uint32_t b = 99;
	struct json_object *p = json_tokener_parse("{\"name\":\"jira__greet\",\"arguments\":{}}");
	assert_int_equal(arn_mcp_prim_route(&ts, ARN_MCP_P_PROMPTS, l, NULL, p, &b),
			 ARN_MCP_E_NONE);
	assert_int_equal(b, 1);
	assert_string_equal(mt_text(p), "{\"name\":\"greet\",\"arguments\":{}}");
	json_object_put(p);
	p = json_tokener_parse("{\"name\":\"review\"}");
	assert_int_equal(arn_mcp_prim_route(&ts, ARN_MCP_P_PROMPTS, l, NULL, p, &b),
			 ARN_MCP_E_NONE);
	assert_int_equal(b, 0);
	json_object_put(p);
	/* a colliding name unprefixed is no prompt under ON_COLLISION */
	p = json_tokener_parse("{\"name\":\"greet\"}");
	assert_int_equal(arn_mcp_prim_route(&ts, ARN_MCP_P_PROMPTS, l, NULL, p, &b),
			 ARN_MCP_E_UNKNOWN_PROMPT);
	json_object_put(p);
	p = json_tokener_parse("{\"name\":3}");
	assert_int_equal(arn_mcp_prim_route(&ts, ARN_MCP_P_PROMPTS, l, NULL, p, &b),
			 ARN_MCP_E_INVALID_PARAMS);
	json_object_put(p);
	assert_int_equal(arn_mcp_prim_route(&ts, ARN_MCP_P_PROMPTS, l, NULL, NULL, &b),
			 ARN_MCP_E_INVALID_PARAMS);
	json_object_put(l[0]);
	json_object_put(l[1]);
}

static void test_resources(void **st)
{
	(void)st;
	struct json_object *l[3] = {
	    json_tokener_parse("[{\"uri\":\"mem://a\",\"name\":\"a\"},{\"uri\":\"mem://x\"}]"),
	    NULL,
	    json_tokener_parse("[{\"uri\":\"mem://x\",\"name\":\"second\"},{\"uri\":\"mem://d\"}]"),
	};
	struct arn_cfg_toolset ts = pts(ARN_CFG_MCP_PREFIX_ALWAYS);
	/* URIs are kept; the first backend's wins a shared one */
	struct json_object *r = arn_mcp_prim_merge(&ts, ARN_MCP_P_RESOURCES, l, NULL);
	assert_string_equal(names(r, "resources", "uri"), "mem://a,mem://x,mem://d");
	json_object_put(r);
	uint32_t b = 99;
	struct json_object *p = json_tokener_parse("{\"uri\":\"mem://d\"}");
	assert_int_equal(arn_mcp_prim_route(&ts, ARN_MCP_P_RESOURCES, l, NULL, p, &b),
			 ARN_MCP_E_NONE);
	assert_int_equal(b, 2);
	assert_string_equal(mt_text(p), "{\"uri\":\"mem://d\"}");
	json_object_put(p);
	p = json_tokener_parse("{\"uri\":\"mem://x\"}");
	assert_int_equal(arn_mcp_prim_route(&ts, ARN_MCP_P_RESOURCES, l, NULL, p, &b),
			 ARN_MCP_E_NONE);
	assert_int_equal(b, 0);
	json_object_put(p);
	p = json_tokener_parse("{\"uri\":\"mem://none\"}");
	assert_int_equal(arn_mcp_prim_route(&ts, ARN_MCP_P_RESOURCES, l, NULL, p, &b),
			 ARN_MCP_E_UNKNOWN_RESOURCE);
	assert_int_equal(arn_mcp_err_code(ARN_MCP_E_UNKNOWN_RESOURCE), -32002);
	json_object_put(p);
	json_object_put(l[0]);
	json_object_put(l[2]);
}

/* ---- the ToolSet's rules (issue #20: "prompts and resources aggregate
 * the same way [as tools]: filters, prefixes, access rules") ---------------- */

static struct arn_cfg_mcp_principal ops_san[1] = {
    {.kind = ARN_CFG_MCP_PRINCIPAL_SAN,
     .san = {.kind = ARN_CFG_STR_SUFFIX, .s = ".ops.example", .len = 12}},
};
static struct arn_mcp_str ops_sans[1] = {{"bot.ops.example", 15}};

static enum arn_mcp_err route_s(const struct arn_cfg_toolset *ts, enum arn_mcp_prim k,
				struct json_object *const *l, const struct arn_mcp_client *cl,
				const char *params, uint32_t *b)
{
	struct json_object *p = json_tokener_parse(params);
	enum arn_mcp_err e = arn_mcp_prim_route(ts, k, l, cl, p, b);
	json_object_put(p);
	return e;
}

static const char *merged(const struct arn_cfg_toolset *ts, enum arn_mcp_prim k,
			  struct json_object *const *l, const struct arn_mcp_client *cl)
{
	static char out[256];
	struct json_object *r = arn_mcp_prim_merge(ts, k, l, cl);
	const char *key = k == ARN_MCP_P_PROMPTS     ? "prompts"
			  : k == ARN_MCP_P_RESOURCES ? "resources"
						     : "resourceTemplates";
	const char *field = k == ARN_MCP_P_PROMPTS     ? "name"
			    : k == ARN_MCP_P_RESOURCES ? "uri"
						       : "uriTemplate";
	snprintf(out, sizeof(out), "%s", names(r, key, field));
	json_object_put(r);
	return out;
}

/* Prompts: allow / deny by their own name (a matcher may name the
 * backend), before collisions are counted, as tools'. */
static void test_prompts_filtered(void **st)
{
	(void)st;
	struct json_object *l[3];
	prompt_lists(l);
	struct arn_cfg_toolset ts = pts(ARN_CFG_MCP_PREFIX_ON_COLLISION);
	struct arn_cfg_mcp_tool_match deny[1] = {
	    {.name = {.kind = ARN_CFG_STR_EXACT, .s = "greet", .len = 5},
	     .backend = "jira",
	     .backend_len = 4},
	};
	ts.deny = deny;
	ts.n_deny = 1;
	/* jira's greet is filtered: gh's collides with nothing, unprefixed */
	assert_string_equal(merged(&ts, ARN_MCP_P_PROMPTS, l, NULL), "greet,review");
	uint32_t b = 99;
	assert_int_equal(route_s(&ts, ARN_MCP_P_PROMPTS, l, NULL, "{\"name\":\"greet\"}", &b),
			 ARN_MCP_E_NONE);
	assert_int_equal(b, 0);
	assert_int_equal(route_s(&ts, ARN_MCP_P_PROMPTS, l, NULL, "{\"name\":\"jira__greet\"}", &b),
			 ARN_MCP_E_UNKNOWN_PROMPT);
	struct arn_cfg_mcp_tool_match allow[1] = {
	    {.name = {.kind = ARN_CFG_STR_PREFIX, .s = "rev", .len = 3}},
	};
	ts.n_deny = 0;
	ts.allow = allow;
	ts.n_allow = 1;
	assert_string_equal(merged(&ts, ARN_MCP_P_PROMPTS, l, NULL), "review");
	json_object_put(l[0]);
	json_object_put(l[1]);
}

/* Prompts: an access rule naming a prompt shows it to its principals only. */
static void test_prompts_access(void **st)
{
	(void)st;
	struct json_object *l[3];
	prompt_lists(l);
	struct arn_cfg_toolset ts = pts(ARN_CFG_MCP_PREFIX_ALWAYS);
	struct arn_cfg_mcp_tool_match rt[1] = {
	    {.name = {.kind = ARN_CFG_STR_EXACT, .s = "review", .len = 6}},
	};
	struct arn_cfg_mcp_access_rule rules[1] = {
	    {.tools = rt, .n_tools = 1, .principals = ops_san, .n_principals = 1},
	};
	ts.rules = rules;
	ts.n_rules = 1;
	struct arn_mcp_client anon = {0}, ops = {.sans = ops_sans, .n_sans = 1};
	assert_string_equal(merged(&ts, ARN_MCP_P_PROMPTS, l, &anon), "gh__greet,jira__greet");
	assert_string_equal(merged(&ts, ARN_MCP_P_PROMPTS, l, NULL), "gh__greet,jira__greet");
	assert_string_equal(merged(&ts, ARN_MCP_P_PROMPTS, l, &ops),
			    "gh__greet,gh__review,jira__greet");
	uint32_t b = 99;
	assert_int_equal(route_s(&ts, ARN_MCP_P_PROMPTS, l, &anon, "{\"name\":\"gh__review\"}", &b),
			 ARN_MCP_E_UNKNOWN_PROMPT); /* as unknown: its existence is not told */
	assert_int_equal(route_s(&ts, ARN_MCP_P_PROMPTS, l, &ops, "{\"name\":\"gh__review\"}", &b),
			 ARN_MCP_E_NONE);
	assert_int_equal(b, 0);
	json_object_put(l[0]);
	json_object_put(l[1]);
}

/* Resources have no matchers: their backend's exposure decides, on the
 * safe side. */
static void test_resources_by_backend(void **st)
{
	(void)st;
	struct json_object *l[3] = {
	    json_tokener_parse("[{\"uri\":\"mem://a\"}]"),
	    json_tokener_parse("[{\"uri\":\"mem://j\"}]"),
	    json_tokener_parse("[{\"uri\":\"mem://d\"}]"),
	};
	struct arn_cfg_toolset ts = pts(ARN_CFG_MCP_PREFIX_ALWAYS);
	struct arn_mcp_client anon = {0}, ops = {.sans = ops_sans, .n_sans = 1};
	/* allow naming only gh and docs: jira's resources are hidden */
	struct arn_cfg_mcp_tool_match allow[2] = {
	    {.name = {.kind = ARN_CFG_STR_PREFIX, .s = "", .len = 0},
	     .backend = "gh",
	     .backend_len = 2},
	    {.name = {.kind = ARN_CFG_STR_EXACT, .s = "find", .len = 4},
	     .backend = "docs",
	     .backend_len = 4},
	};
	ts.allow = allow;
	ts.n_allow = 2;
	assert_string_equal(merged(&ts, ARN_MCP_P_RESOURCES, l, &anon), "mem://a,mem://d");
	uint32_t b = 99;
	assert_int_equal(route_s(&ts, ARN_MCP_P_RESOURCES, l, &anon, "{\"uri\":\"mem://j\"}", &b),
			 ARN_MCP_E_UNKNOWN_RESOURCE);
	ts.n_allow = 0;
	/* a rule naming docs: docs' resources for its principals only */
	struct arn_cfg_mcp_tool_match rt[1] = {
	    {.name = {.kind = ARN_CFG_STR_EXACT, .s = "find", .len = 4},
	     .backend = "docs",
	     .backend_len = 4},
	};
	struct arn_cfg_mcp_access_rule rules[1] = {
	    {.tools = rt, .n_tools = 1, .principals = ops_san, .n_principals = 1},
	};
	ts.rules = rules;
	ts.n_rules = 1;
	assert_string_equal(merged(&ts, ARN_MCP_P_RESOURCES, l, &anon), "mem://a,mem://j");
	assert_string_equal(merged(&ts, ARN_MCP_P_RESOURCES, l, &ops), "mem://a,mem://j,mem://d");
	assert_int_equal(route_s(&ts, ARN_MCP_P_RESOURCES, l, &anon, "{\"uri\":\"mem://d\"}", &b),
			 ARN_MCP_E_UNKNOWN_RESOURCE);
	assert_int_equal(route_s(&ts, ARN_MCP_P_RESOURCES, l, &ops, "{\"uri\":\"mem://d\"}", &b),
			 ARN_MCP_E_NONE);
	assert_int_equal(b, 2);
	/* a rule naming no backend may narrow any: every backend governed */
	rt[0].backend = NULL;
	rt[0].backend_len = 0;
	assert_string_equal(merged(&ts, ARN_MCP_P_RESOURCES, l, &anon), "");
	assert_string_equal(merged(&ts, ARN_MCP_P_RESOURCES, l, &ops), "mem://a,mem://j,mem://d");
	for (int i = 0; i < 3; i++)
		json_object_put(l[i]);
}

/* resources/read by template: the longest literal prefix (RFC 6570's
 * text before the first expression) wins, among visible backends. */
static void test_templates_routed(void **st)
{
	(void)st;
	struct json_object *l[3] = {
	    json_tokener_parse("[{\"uriTemplate\":\"file:///{path}\"},"
			       "{\"uriTemplate\":\"mem://fixed\"},{\"uriTemplate\":7},{}]"),
	    json_tokener_parse("[{\"uriTemplate\":\"file:///logs/{name}\"}]"),
	    NULL,
	};
	struct arn_cfg_toolset ts = pts(ARN_CFG_MCP_PREFIX_ALWAYS);
	assert_string_equal(merged(&ts, ARN_MCP_P_TEMPLATES, l, NULL),
			    "file:///{path},mem://fixed,file:///logs/{name}");
	uint32_t b = 99;
	assert_int_equal(
	    route_s(&ts, ARN_MCP_P_TEMPLATES, l, NULL, "{\"uri\":\"file:///logs/a.txt\"}", &b),
	    ARN_MCP_E_NONE);
	assert_int_equal(b, 1);
	assert_int_equal(
	    route_s(&ts, ARN_MCP_P_TEMPLATES, l, NULL, "{\"uri\":\"file:///etc/x\"}", &b),
	    ARN_MCP_E_NONE);
	assert_int_equal(b, 0);
	/* no expression: the URI itself */
	assert_int_equal(
	    route_s(&ts, ARN_MCP_P_TEMPLATES, l, NULL, "{\"uri\":\"mem://fixed\"}", &b),
	    ARN_MCP_E_NONE);
	assert_int_equal(
	    route_s(&ts, ARN_MCP_P_TEMPLATES, l, NULL, "{\"uri\":\"mem://fixed/more\"}", &b),
	    ARN_MCP_E_UNKNOWN_RESOURCE);
	assert_int_equal(route_s(&ts, ARN_MCP_P_TEMPLATES, l, NULL, "{\"uri\":\"http://x\"}", &b),
			 ARN_MCP_E_UNKNOWN_RESOURCE);
	assert_int_equal(route_s(&ts, ARN_MCP_P_TEMPLATES, l, NULL, "{\"uri\":1}", &b),
			 ARN_MCP_E_INVALID_PARAMS);
	/* a hidden backend's template routes nothing */
	struct arn_cfg_mcp_tool_match allow[1] = {
	    {.name = {.kind = ARN_CFG_STR_PREFIX, .s = "", .len = 0},
	     .backend = "gh",
	     .backend_len = 2},
	};
	ts.allow = allow;
	ts.n_allow = 1;
	assert_int_equal(
	    route_s(&ts, ARN_MCP_P_TEMPLATES, l, NULL, "{\"uri\":\"file:///logs/a.txt\"}", &b),
	    ARN_MCP_E_NONE);
	assert_int_equal(b, 0);
	json_object_put(l[0]);
	json_object_put(l[1]);
}

/* The fan-out asks each backend for the kind's list and reads its pages. */
static void test_fanout_kinds(void **st)
{
	(void)st;
	struct arn_cfg_toolset ts = pts(ARN_CFG_MCP_PREFIX_ALWAYS);
	struct arn_mcp_fanout f;
	assert_int_equal(arn_mcp_fanout_init_kind(&f, &ts, NULL, ARN_MCP_P_TEMPLATES), 0);
	struct json_object *q = arn_mcp_fanout_request(&f, 0);
	assert_non_null(strstr(mt_text(q), "\"method\":\"resources/templates/list\""));
	json_object_put(q);
	struct json_object *a = json_tokener_parse(
	    "{\"jsonrpc\":\"2.0\",\"id\":\"arn.list.0.0\",\"result\":{\"resourceTemplates\":"
	    "[{\"uriTemplate\":\"mem://{x}\"}],\"nextCursor\":\"c2\"}}");
	struct arn_mcp_msg m;
	arn_mcp_msg_decode(a, &m);
	assert_int_equal(arn_mcp_fanout_answer(&f, 0, &m, 100), ARN_MCP_F_ASK);
	json_object_put(a);
	q = arn_mcp_fanout_request(&f, 0);
	assert_non_null(strstr(mt_text(q), "\"cursor\":\"c2\""));
	json_object_put(q);
	/* a page without the kind's array fails that backend */
	a = json_tokener_parse("{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":{\"tools\":[]}}");
	arn_mcp_msg_decode(a, &m);
	assert_int_equal(arn_mcp_fanout_answer(&f, 0, &m, 100), ARN_MCP_F_FAILED);
	json_object_put(a);
	arn_mcp_fanout_fini(&f);
	enum arn_mcp_prim k;
	bool list;
	assert_true(arn_mcp_prim_of(ARN_MCP_M_RESOURCES_READ, &k, &list));
	assert_true(k == ARN_MCP_P_RESOURCES && !list);
	assert_false(arn_mcp_prim_of(ARN_MCP_M_TOOLS_LIST, &k, &list));
}

const struct CMUnitTest mt_prim_tests[] = {
    cmocka_unit_test(test_prompts_merged),   cmocka_unit_test(test_prompts_routed),
    cmocka_unit_test(test_resources),	     cmocka_unit_test(test_prompts_filtered),
    cmocka_unit_test(test_prompts_access),   cmocka_unit_test(test_resources_by_backend),
    cmocka_unit_test(test_templates_routed), cmocka_unit_test(test_fanout_kinds),
};
const size_t mt_prim_n = sizeof(mt_prim_tests) / sizeof(mt_prim_tests[0]);
