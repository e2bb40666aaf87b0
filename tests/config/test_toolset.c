/*
 * TDS, the sixth family (X2): ToolSet conversion and its refusals (X15,
 * naming resource and field), the MCP gateway filter that names one (X14),
 * the listener's warming on it (G6), on-demand interest (X4) and the
 * ToolSet forgotten when nothing references it, and /config_dump.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arn_admin_config.h"
#include "tc.h"

#define TS_OK                                                                                      \
	"{\"name\":\"tools\",\"backends\":["                                                       \
	"{\"name\":\"gh\",\"cluster\":\"github-mcp\",\"path\":\"/v1/mcp\",\"timeout\":\"5s\","     \
	"\"request_headers_to_add\":[{\"header\":{\"key\":\"Authorization\",\"value\":\"Bearer "   \
	"x\"}}]},"                                                                                 \
	"{\"name\":\"jira\",\"cluster\":\"jira-mcp\"}],"                                           \
	"\"tool_filter\":{\"allow\":[{\"name\":{\"prefix\":\"get_\"}},{\"name\":{\"safe_regex\":{" \
	"\"regex\":\"search_.*\"}},\"backend\":\"jira\"}],"                                        \
	"\"deny\":[{\"name\":{\"exact\":\"get_secret\"}}]},"                                       \
	"\"prefix_mode\":\"ON_COLLISION\",\"prefix_separator\":\".\","                             \
	"\"access_rules\":[{\"tools\":[{\"name\":{\"prefix\":\"search_\"}}],"                      \
	"\"principals\":[{\"header\":{\"name\":\"x-team\",\"string_match\":{\"exact\":\"ops\"}}}," \
	"{\"client_cert_san\":{\"suffix\":\".ops.example\"}}]}],"                                  \
	"\"tools_list_cache_ttl\":\"2s\"}"

static const char *jts(const char *name, const char *cluster)
{
	static char b[4][512];
	static int i;
	char *o = b[i++ % 4];
	snprintf(o, 512, "{\"name\":\"%s\",\"backends\":[{\"name\":\"b\",\"cluster\":\"%s\"}]}",
		 name, cluster);
	return o;
}

/* X2: a ToolSet is the sixth family; every field lands in the model. */
static void test_x2_toolset_converted(void **state)
{
	(void)state;
	assert_int_equal(arn_config_type_from_url(TDS, strlen(TDS)), ARN_CFG_TOOLSET);
	assert_string_equal(arn_config_type_name(ARN_CFG_TOOLSET), "ToolSet");
	/* referenced, as the xDS client only delivers subscribed names (X4) */
	APPLY(L, tj_listener_mcp("l", 80, "tools", NULL), tj_listener_mcp("m", 81, "min", NULL));
	tc_ok(TDS, TS_OK);
	const struct arn_cfg_toolset *t = toolset("tools");
	assert_non_null(t);
	assert_int_equal(t->n_backends, 2);
	assert_string_equal(t->backends[0].name, "gh");
	assert_string_equal(t->backends[0].cluster.name, "github-mcp");
	assert_string_equal(t->backends[0].path, "/v1/mcp");
	assert_int_equal(t->backends[0].timeout_ms, 5000);
	assert_int_equal(t->backends[0].n_headers, 1);
	assert_string_equal(t->backends[0].headers[0].key, "authorization");
	assert_string_equal(t->backends[0].headers[0].value, "Bearer x");
	/* defaults */
	assert_string_equal(t->backends[1].path, "/mcp");
	assert_int_equal(t->backends[1].timeout_ms, ARN_CFG_MCP_DEFAULT_BACKEND_TIMEOUT_MS);
	assert_int_equal(t->n_allow, 2);
	assert_int_equal(t->allow[0].name.kind, ARN_CFG_STR_PREFIX);
	assert_null(t->allow[0].backend);
	assert_int_equal(t->allow[1].name.kind, ARN_CFG_STR_REGEX);
	assert_string_equal(t->allow[1].backend, "jira");
	assert_int_equal(t->n_deny, 1);
	assert_int_equal(t->prefix_mode, ARN_CFG_MCP_PREFIX_ON_COLLISION);
	assert_string_equal(t->separator, ".");
	assert_int_equal(t->n_rules, 1);
	assert_int_equal(t->rules[0].n_principals, 2);
	assert_int_equal(t->rules[0].principals[0].kind, ARN_CFG_MCP_PRINCIPAL_HEADER);
	assert_string_equal(t->rules[0].principals[0].header.name, "x-team");
	assert_int_equal(t->rules[0].principals[1].kind, ARN_CFG_MCP_PRINCIPAL_SAN);
	assert_int_equal(t->tools_list_cache_ttl_ms, 2000);
	/* the minimal one: defaults everywhere */
	tc_ok(TDS, jts("min", "c"));
	t = toolset("min");
	assert_int_equal(t->prefix_mode, ARN_CFG_MCP_PREFIX_ALWAYS);
	assert_string_equal(t->separator, ARN_CFG_MCP_DEFAULT_SEPARATOR);
	assert_int_equal(t->tools_list_cache_ttl_ms, 0);
	struct arn_config_stats s;
	arn_config_get_stats(st, &s);
	assert_int_equal(s.toolsets_active, 2);
}

/* X15: a bad ToolSet is refused naming the resource and the field. */
static void test_x15_bad_toolset_refused_naming_field(void **state)
{
	(void)state;
	static const struct {
		const char *json, *want;
	} cases[] = {
	    {"{\"name\":\"t\"}", "ToolSet 't': backends: empty"},
	    {"{\"name\":\"t\",\"backends\":[{\"name\":\"a\",\"cluster\":\"c\"},{\"name\":\"a\","
	     "\"cluster\":\"d\"}]}",
	     "ToolSet 't': backends[1].name: 'a' is also backends[0]'s name"},
	    {"{\"name\":\"t\",\"backends\":[{\"name\":\"a b\",\"cluster\":\"c\"}]}",
	     "ToolSet 't': backends[0].name: 'a b': only A-Z a-z 0-9 _ - . may appear"},
	    {"{\"name\":\"t\",\"backends\":[{\"name\":\"a\"}]}",
	     "ToolSet 't': backends[0].cluster: missing"},
	    {"{\"name\":\"t\",\"backends\":[{\"name\":\"a\",\"cluster\":\"c\",\"path\":\"mcp\"}]}",
	     "ToolSet 't': backends[0].path: 'mcp' must start with '/'"},
	    {"{\"name\":\"t\",\"backends\":[{\"name\":\"a\",\"cluster\":\"c\","
	     "\"request_headers_to_add\":[{\"header\":{\"key\":\"mcp-session-id\",\"value\":\"x\"}}"
	     "]"
	     "}]}",
	     "ToolSet 't': backends[0].request_headers_to_add[0].header.key: 'mcp-session-id' is "
	     "set by the gateway"},
	    /* the gateway's own accept (application/json, text/event-stream): a
	     * second one made the backend's answer depend on which it read */
	    {"{\"name\":\"t\",\"backends\":[{\"name\":\"a\",\"cluster\":\"c\","
	     "\"request_headers_to_add\":[{\"header\":{\"key\":\"x-a\",\"value\":\"1\"}},"
	     "{\"header\":{\"key\":\"Accept\",\"value\":\"application/json\"}}]}]}",
	     "ToolSet 't': backends[0].request_headers_to_add[1].header.key: 'accept' is "
	     "set by the gateway"},
	    {"{\"name\":\"t\",\"backends\":[{\"name\":\"a\",\"cluster\":\"c\"}],\"tool_filter\":{"
	     "\"allow\":[{\"name\":{\"safe_regex\":{\"regex\":\"(a\"}}}]}}",
	     "ToolSet 't': tool_filter.allow[0].name.safe_regex.regex: '(a'"},
	    {"{\"name\":\"t\",\"backends\":[{\"name\":\"a\",\"cluster\":\"c\"}],\"tool_filter\":{"
	     "\"deny\":[{\"name\":{\"exact\":\"x\"},\"backend\":\"zz\"}]}}",
	     "ToolSet 't': tool_filter.deny[0].backend: 'zz' is not one of the ToolSet's backends"},
	    {"{\"name\":\"t\",\"backends\":[{\"name\":\"a\",\"cluster\":\"c\"}],"
	     "\"prefix_separator\":\"::\"}",
	     "ToolSet 't': prefix_separator: '::': only"},
	    {"{\"name\":\"t\",\"backends\":[{\"name\":\"a\",\"cluster\":\"c\"}],\"access_rules\":[{"
	     "\"tools\":[{\"name\":{\"exact\":\"x\"}}]}]}",
	     "ToolSet 't': access_rules[0].principals: empty"},
	    {"{\"name\":\"t\",\"backends\":[{\"name\":\"a\",\"cluster\":\"c\"}],\"access_rules\":[{"
	     "\"principals\":[{\"header\":{\"name\":\"x\",\"present_match\":true}}]}]}",
	     "ToolSet 't': access_rules[0].tools: empty"},
	    {"{\"name\":\"t\",\"backends\":[{\"name\":\"a\",\"cluster\":\"c\"}],\"access_rules\":[{"
	     "\"tools\":[{\"name\":{\"exact\":\"x\"}}],\"principals\":[{}]}]}",
	     "ToolSet 't': access_rules[0].principals[0]: empty: set header or client_cert_san"},
	    {"{\"name\":\"t\",\"backends\":[{\"name\":\"a\",\"cluster\":\"c\"}],"
	     "\"tools_list_cache_ttl\":\"7200s\"}",
	     "ToolSet 't': tools_list_cache_ttl: more than 1 h"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		tc_refused(TDS, cases[i].json, cases[i].want);
	assert_null(toolset("t"));
}

/*
 * A backend's request_headers_to_add go on every request to it beside the
 * gateway's own headers, in a fixed array (http_mcp.c): more than fit were
 * accepted, and every request to that backend then failed ("too many
 * request headers"), tools/list included. Refused past 16, naming where.
 */
static void test_x15_backend_headers_bounded(void **state)
{
	(void)state;
	static char json[4096];
	for (unsigned n = ARN_CFG_MCP_MAX_BACKEND_HEADERS; n <= ARN_CFG_MCP_MAX_BACKEND_HEADERS + 4;
	     n += 4) {
		size_t o = (size_t)snprintf(json, sizeof(json),
					    "{\"name\":\"t\",\"backends\":[{\"name\":\"a\","
					    "\"cluster\":\"c\",\"request_headers_to_add\":[");
		for (unsigned i = 0; i < n; i++)
			o += (size_t)snprintf(json + o, sizeof(json) - o,
					      "%s{\"header\":{\"key\":\"x-h%u\",\"value\":\"v\"}}",
					      i ? "," : "", i);
		snprintf(json + o, sizeof(json) - o, "]}]}");
		if (n == ARN_CFG_MCP_MAX_BACKEND_HEADERS) {
			APPLY(L, tj_listener_mcp("l", 80, "t", NULL));
			tc_ok(TDS, json);
			assert_int_equal(toolset("t")->backends[0].n_headers, n);
			REMOVE(L, "l");
		} else {
			tc_refused(TDS, json,
				   "ToolSet 't': backends[0].request_headers_to_add: 20 headers; "
				   "at most 16");
		}
	}
	assert_null(toolset("t"));
}

/* X15: one bad ToolSet refuses the whole TDS batch. */
static void test_x15_toolset_batch_refused_whole(void **state)
{
	(void)state;
	APPLY(TDS, jts("good", "c"), "{\"name\":\"bad\",\"backends\":[]}");
	assert_false(tc_res.accepted);
	assert_int_equal(tc_res.n_errors, 1);
	assert_string_equal(tc_res.errors[0].name, "bad");
	assert_null(toolset("good"));
}

/* X14: an HCM with the MCP gateway filter names its ToolSet; defaults. */
static void test_x14_mcp_gateway_filter_converted(void **state)
{
	(void)state;
	APPLY(L, tj_listener_mcp("l", 80, "tools", NULL));
	assert_true(tc_res.accepted);
	assert_int_equal(tc_res.n_errors, 0);
	APPLY(TDS, jts("tools", "c"));
	const struct arn_cfg_listener *l = listener("l");
	assert_non_null(l);
	const struct arn_cfg_hcm *h = l->chains[0].hcm;
	assert_int_equal(h->n_http_filters, 2);
	assert_int_equal(h->http_filters[0], ARN_CFG_HF_MCP_GATEWAY);
	assert_int_equal(h->http_filters[1], ARN_CFG_HF_ROUTER);
	const struct arn_cfg_mcp_filter *f = h->mcp_gateway;
	assert_non_null(f);
	assert_string_equal(f->toolset.name, "tools");
	assert_string_equal(f->path, "/mcp");
	assert_int_equal(f->max_request_bytes, ARN_CFG_MCP_DEFAULT_MAX_REQUEST);
	assert_int_equal(f->max_response_bytes, ARN_CFG_MCP_DEFAULT_MAX_RESPONSE);
	assert_int_equal(f->session_idle_timeout_ms, ARN_CFG_MCP_DEFAULT_SESSION_IDLE_MS);
	assert_ptr_equal(arn_cfg_toolset_find(gen(), &f->toolset), toolset("tools"));
	/* everything set */
	APPLY(L, tj_listener_mcp("m", 81, "tools",
				 "\"path\":\"/agents/mcp\",\"max_request_bytes\":65536,"
				 "\"max_response_bytes\":1048576,\"session_idle_timeout\":\"60s\","
				 "\"tds\":{\"config_name\":\"tools\",\"config_source\":{\"ads\":{},"
				 "\"initial_fetch_timeout\":\"1s\"}}"));
	assert_true(tc_res.accepted);
	f = listener("m")->chains[0].hcm->mcp_gateway;
	assert_string_equal(f->path, "/agents/mcp");
	assert_int_equal(f->max_request_bytes, 65536);
	assert_int_equal(f->max_response_bytes, 1048576);
	assert_int_equal(f->session_idle_timeout_ms, 60000);
}

/* X14: the filter's own refusals name the listener and the field. */
static void test_x14_mcp_gateway_filter_refusals(void **state)
{
	(void)state;
	tc_refused(L, tj_listener_mcp("l", 80, "", NULL),
		   "Listener 'l': filter_chains[0].filters[0].typed_config.http_filters[0]."
		   "typed_config.tds.config_name: missing");
	tc_refused(
	    L,
	    tj_listener_mcp("l", 80, "t",
			    "\"tds\":{\"config_name\":\"t\",\"config_source\":{\"path_config_"
			    "source\":{\"path\":\"/x\"}}}"),
	    "tds.config_source: ");
	assert_non_null(strstr(tc_res.errors[0].message, "(X14)"));
	tc_refused(L, tj_listener_mcp("l", 80, "t", "\"path\":\"mcp\""),
		   "typed_config.path: 'mcp' must start with '/'");
	tc_refused(L, tj_listener_mcp("l", 80, "t", "\"max_request_bytes\":0"),
		   "typed_config.max_request_bytes: must be 1 to");
	tc_refused(L, tj_listener_mcp("l", 80, "t", "\"max_response_bytes\":100000000"),
		   "typed_config.max_response_bytes: must be 1 to");
	assert_null(listener("l"));
}

struct seen {
	char names[8][64];
	int n, calls;
	char last_url[128];
};

static void collect(void *ctx, const char *name)
{
	struct seen *s = ctx;
	snprintf(s->names[s->n++ % 8], 64, "%s", name);
}

static void changed(void *ctx, const char *url)
{
	struct seen *s = ctx;
	s->calls++;
	snprintf(s->last_url, sizeof(s->last_url), "%s", url);
}

/*
 * X4 and G6: a listener with the filter reports its ToolSet as referenced
 * (the xDS client subscribes by name) and warms until it arrives; when the
 * last reference goes, the store forgets the ToolSet (the client
 * unsubscribes) and says so through the interest callback.
 */
static void test_x4_g6_listener_warms_on_toolset_and_forgets_it(void **state)
{
	(void)state;
	struct seen s = {0};
	arn_config_set_interest_cb(st, changed, &s);
	APPLY(L, tj_listener_mcp("l", 80, "tools", NULL));
	assert_true(s.calls >= 1);
	assert_string_equal(s.last_url, TDS);
	assert_int_equal(arn_config_referenced(st, TDS, collect, &s), 1);
	assert_string_equal(s.names[0], "tools");
	/* G6: warming, takes no traffic */
	assert_null(listener("l"));
	struct arn_config_stats cs;
	arn_config_get_stats(st, &cs);
	assert_int_equal(cs.listeners_warming, 1);
	APPLY(TDS, jts("tools", "c"));
	assert_non_null(listener("l"));
	assert_non_null(toolset("tools"));
	/* a second listener on the same ToolSet: still one name */
	APPLY(L, tj_listener_mcp("l2", 81, "tools", NULL));
	assert_non_null(listener("l2")); /* the ToolSet is there: no warming */
	assert_int_equal(arn_config_referenced(st, TDS, NULL, NULL), 1);
	int calls = s.calls;
	REMOVE(L, "l");
	assert_int_equal(s.calls, calls); /* l2 still references it */
	assert_non_null(toolset("tools"));
	REMOVE(L, "l2");
	assert_int_equal(s.calls, calls + 1);
	assert_string_equal(s.last_url, TDS);
	assert_int_equal(arn_config_referenced(st, TDS, NULL, NULL), 0);
	assert_null(toolset("tools"));
	arn_config_get_stats(st, &cs);
	assert_int_equal(cs.toolsets_dropped, 1);
	assert_int_equal(cs.toolsets_active, 0);
	/* a later reference warms again until the server resends it */
	APPLY(L, tj_listener_mcp("l3", 82, "tools", NULL));
	assert_null(listener("l3"));
	arn_config_set_interest_cb(st, NULL, NULL);
}

/* G6: without its ToolSet, the listener stops warming after the config
 * source's initial_fetch_timeout; the filter then finds no ToolSet (503). */
static void test_g6_toolset_warming_ends_at_initial_fetch_timeout(void **state)
{
	(void)state;
	APPLY(L, tj_listener_mcp("l", 80, "tools",
				 "\"tds\":{\"config_name\":\"tools\",\"config_source\":{\"ads\":{},"
				 "\"initial_fetch_timeout\":\"2s\"}}"));
	assert_null(listener("l"));
	fake_now += 1999;
	arn_config_poll(st);
	assert_null(listener("l"));
	fake_now += 1;
	arn_config_poll(st);
	const struct arn_cfg_listener *l = listener("l");
	assert_non_null(l);
	assert_null(arn_cfg_toolset_find(gen(), &l->chains[0].hcm->mcp_gateway->toolset));
	assert_int_equal(arn_config_init_fetch_timeouts(st, TDS), 1);
	/* G3 then: the ToolSet arrives, then is removed; the listener stays */
	APPLY(TDS, jts("tools", "c"));
	assert_non_null(
	    arn_cfg_toolset_find(gen(), &listener("l")->chains[0].hcm->mcp_gateway->toolset));
	REMOVE(TDS, "tools");
	assert_non_null(listener("l"));
	assert_null(toolset("tools"));
}

/* /config_dump: ToolSets in arion.admin.v3.ToolSetsConfigDump, a NACKed
 * update with its error_state beside the version that serves. */
static void test_toolsets_in_config_dump(void **state)
{
	(void)state;
	APPLY(L, tj_listener_mcp("l", 80, "tools", NULL));
	tc_ok(TDS, TS_OK);
	tc_refused(TDS, "{\"name\":\"tools\",\"backends\":[]}", "backends: empty");
	struct arn_sb o = ARN_SB_INIT;
	assert_int_equal(arn_admin_config_dump(st, "arion.admin.v3.ToolSetsConfigDump", &o), 0);
	const char *j = arn_sb_cstr(&o);
	assert_non_null(
	    strstr(j, "{\"@type\":\"type.googleapis.com/arion.admin.v3.ToolSetsConfigDump\""));
	assert_non_null(strstr(j, "\"dynamic_tool_sets\":[{\"version_info\":\"v1\","
				  "\"tool_set\":{\"@type\":\"type.googleapis.com/"
				  "arion.extensions.mcp.v3.ToolSet\",\"name\":\"tools\""));
	assert_non_null(strstr(j, "\"cluster\":\"github-mcp\""));
	assert_non_null(strstr(j, "\"error_state\":"));
	assert_non_null(strstr(j, "backends: empty"));
	assert_non_null(strstr(j, "\"client_status\":\"NACKED\""));
	assert_null(strstr(j, "static_tool_sets"));
	arn_sb_free(&o);
}

const struct CMUnitTest toolset_tests[] = {
    TC(test_x2_toolset_converted),
    TC(test_x15_bad_toolset_refused_naming_field),
    TC(test_x15_backend_headers_bounded),
    TC(test_x15_toolset_batch_refused_whole),
    TC(test_x14_mcp_gateway_filter_converted),
    TC(test_x14_mcp_gateway_filter_refusals),
    TC(test_x4_g6_listener_warms_on_toolset_and_forgets_it),
    TC(test_g6_toolset_warming_ends_at_initial_fetch_timeout),
    TC(test_toolsets_in_config_dump),
};
const size_t n_toolset_tests = sizeof(toolset_tests) / sizeof(toolset_tests[0]);
