/*
 * envoy.filters.http.custom_response in the model, field for field as
 * Envoy reads it (conv_cresp.c, conv_l4.c's response predicates); each
 * malformed or unsupported field refused naming the resource and field.
 * Refused whole before (an unknown filter type).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tc.h"

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

#define CR_AT AT("envoy.extensions.filters.http.custom_response.v3.CustomResponse")
#define LRP_AT                                                                                     \
	AT("envoy.extensions.http.custom_response.local_response_policy.v3.LocalResponsePolicy")
#define RDP_AT AT("envoy.extensions.http.custom_response.redirect_policy.v3.RedirectPolicy")
#define CR(fields) "{\"name\":\"cr\",\"typed_config\":{" CR_AT fields "}},"
/* a matcher_list of @p entries */
#define ML(entries) ",\"custom_response_matcher\":{\"matcher_list\":{\"matchers\":[" entries "]}}"
/* the same with an on_no_match */
#define ML_NM(entries, nm)                                                                         \
	",\"custom_response_matcher\":{\"matcher_list\":{\"matchers\":[" entries "]},"             \
	"\"on_no_match\":" nm "}"
#define INPUT(t, more)                                                                             \
	"\"input\":{\"name\":\"i\",\"typed_config\":{" AT("envoy.type.matcher.v3." t) more "}}"
#define SP_STATUS(code)                                                                            \
	"{\"single_predicate\":{" INPUT("HttpResponseStatusCodeMatchInput",                        \
					"") ",\"value_match\":{\"exact\":\"" code "\"}}}"
#define ACT(at, fields) "{\"action\":{\"name\":\"a\",\"typed_config\":{" at fields "}}}"
#define ENTRY(pred, policy) "{\"predicate\":" pred ",\"on_match\":" ACT(LRP_AT, policy) "}"
#define E404(policy) ENTRY(SP_STATUS("404"), policy)

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

/* The model: each input kind, or / and / not, the policy's fields, a route
 * level's CustomResponse, on_no_match, a filter without a matcher. */
/* clang-format off */
#define SP(t, more, vm)                                                                            \
	"{\"single_predicate\":{" INPUT(t, more) ",\"value_match\":" vm "}}"
#define MODEL_PRED                                                                                 \
	"{\"or_matcher\":{\"predicate\":["                                                         \
	SP("HttpResponseStatusCodeClassMatchInput", "", "{\"exact\":\"5xx\"}") ","                  \
	"{\"not_matcher\":" SP("HttpResponseHeaderMatchInput", ",\"header_name\":\"X-Up\"",         \
				"{\"prefix\":\"a\"}") "},"                                             \
	"{\"and_matcher\":{\"predicate\":["                                                        \
	SP("HttpResponseLocalReplyMatchInput", "", "{\"exact\":\"true\"}") "," SP_STATUS("503")     \
	"]}}]}}"
#define MODEL_POLICY                                                                               \
	",\"status_code\":410,\"body\":{\"inline_string\":\"gone\"},"                              \
	"\"body_format\":{\"text_format\":\"%LOCAL_REPLY_BODY%!\",\"content_type\":\"text/html\"}," \
	"\"response_headers_to_add\":[{\"header\":{\"key\":\"X-A\",\"value\":\"1\"}}]"
static const char model_json[] = LISTENER(HCM(
	CR(ML_NM(E404(MODEL_POLICY) "," ENTRY(MODEL_PRED, ""), ACT(LRP_AT, ""))),
	",\"typed_per_filter_config\":{\"cr\":{" CR_AT ML(E404("")) "}}"));
/* clang-format on */

static void test_cresp_model(void **state)
{
	(void)state;
	tc_ok(L, model_json);
	const struct arn_cfg_hcm *h = hcm0();
	assert_int_equal(h->http_filters[0], ARN_CFG_HF_CUSTOM_RESPONSE);
	const struct arn_cfg_custom_response *f = h->http_filter_cfgs[0];
	assert_int_equal(f->n_entries, 2);
	const struct arn_cfg_cresp_entry *e = &f->entries[0];
	assert_int_equal(e->predicate.kind, ARN_CFG_RBAC_RESP_STATUS);
	assert_true(arn_cfg_str_match(&e->predicate.str, "404", 3));
	assert_int_equal(e->policy->status, 410);
	assert_true(e->policy->has_body);
	assert_memory_equal(e->policy->body, "gone", 4);
	assert_non_null(e->policy->fmt);
	assert_string_equal(e->policy->format.content_type, "text/html");
	assert_int_equal(e->policy->n_headers, 1);
	assert_memory_equal(e->policy->headers[0].key, "x-a", 3);
	e = &f->entries[1];
	assert_int_equal(e->predicate.kind, ARN_CFG_RBAC_OR);
	assert_int_equal(e->predicate.n_kids, 3);
	assert_int_equal(e->predicate.kids[0].kind, ARN_CFG_RBAC_RESP_CLASS);
	assert_int_equal(e->predicate.kids[1].kind, ARN_CFG_RBAC_NOT);
	assert_int_equal(e->predicate.kids[1].kids[0].kind, ARN_CFG_RBAC_RESP_HEADER);
	assert_memory_equal(e->predicate.kids[1].kids[0].header->name, "x-up", 4);
	assert_int_equal(e->predicate.kids[2].kind, ARN_CFG_RBAC_AND);
	assert_int_equal(e->predicate.kids[2].kids[0].kind, ARN_CFG_RBAC_RESP_LOCAL);
	assert_int_equal(e->policy->status, 0);
	assert_false(e->policy->has_body);
	assert_non_null(f->no_match);
	const struct arn_cfg_vhost *vh = &h->inline_routes->vhosts[0];
	const struct arn_cfg_custom_response *r =
	    arn_cfg_per_filter_find(vh, &vh->routes[0], "cr", 2, ARN_CFG_PF_CUSTOM_RESPONSE);
	assert_non_null(r);
	assert_int_equal(r->n_entries, 1);

	/* Envoy allows a filter without a matcher (its routes carry them) */
	tc_ok(L, LISTENER(HCM(CR(""), "")));
	f = hcm0()->http_filter_cfgs[0];
	assert_int_equal(f->n_entries, 0);
	assert_null(f->no_match);
}

/* clang-format off */
/* Envoy Gateway's status range (custom_response.go's
 * buildStatusCodeCELMatcher): response.code >= lo && response.code <= hi */
#define CEL_CMP(id, fn, k)                                                                         \
	"{\"id\":" #id ",\"call_expr\":{\"function\":\"" fn "\",\"args\":[{\"select_expr\":"      \
	"{\"operand\":{\"ident_expr\":{\"name\":\"response\"}},\"field\":\"code\"}},"              \
	"{\"const_expr\":{\"int64_value\":" k "}}]}}"
#define CEL_PRED(expr)                                                                             \
	"{\"single_predicate\":{\"input\":{\"name\":\"http-attributes-cel-match-input\","         \
	"\"typed_config\":{" AT("xds.type.matcher.v3.HttpAttributesCelMatchInput") "}},"           \
	"\"custom_match\":{\"name\":\"cel-matcher\",\"typed_config\":{"                          \
	AT("xds.type.matcher.v3.CelMatcher") ",\"expr_match\":{\"cel_expr_parsed\":{\"expr\":"     \
	expr "}}}}}}"
#define CEL_RANGE(lo, hi)                                                                          \
	"{\"id\":9,\"call_expr\":{\"function\":\"_&&_\",\"args\":[" CEL_CMP(3, "_>=_", lo) ","    \
	CEL_CMP(7, "_<=_", hi) "]}}"
static const char cel_ok_json[] = LISTENER(HCM(CR(ML(
	ENTRY(CEL_PRED(CEL_RANGE("500", "599")), "") ","
	ENTRY(CEL_PRED(CEL_CMP(1, "_>_", "399")), ""))), ""));
static const char cel_other_json[] = LISTENER(HCM(CR(ML(
	ENTRY(CEL_PRED(CEL_CMP(1, "_==_", "404")), ""))), ""));
static const char cel_string_json[] = LISTENER(HCM(CR(ML(
	ENTRY("{\"single_predicate\":{\"input\":{\"name\":\"i\",\"typed_config\":{"
	      AT("xds.type.matcher.v3.HttpAttributesCelMatchInput") "}},"
	      "\"custom_match\":{\"name\":\"c\",\"typed_config\":{"
	      AT("xds.type.matcher.v3.CelMatcher") ",\"expr_match\":{\"cel_expr_string\":"
	      "\"response.code == 404\"}}}}}", ""))), ""));
static const char cel_json[] = LISTENER(HCM(CR(ML(
	"{\"predicate\":{\"single_predicate\":{" INPUT("HttpResponseStatusCodeMatchInput", "")
	",\"custom_match\":{\"name\":\"cel\",\"typed_config\":{"
	AT("envoy.type.matcher.v3.HttpResponseStatusCodeMatchInput") "}}}},"
	"\"on_match\":" ACT(LRP_AT, "") "}")), ""));
static const char tree_json[] = LISTENER(HCM(CR(
	",\"custom_response_matcher\":{\"matcher_tree\":{\"input\":{\"name\":\"i\",\"typed_config\":{"
	AT("envoy.type.matcher.v3.HttpResponseStatusCodeMatchInput") "}},"
	"\"exact_match_map\":{\"map\":{}}}}"), ""));
/* clang-format on */

/* Envoy Gateway's CEL status ranges: [500, 599], and > 399 (a strict
 * comparison alone); anything else refused naming its field. */
static void test_cresp_cel(void **state)
{
	(void)state;
	tc_ok(L, cel_ok_json);
	const struct arn_cfg_custom_response *f = hcm0()->http_filter_cfgs[0];
	assert_int_equal(f->n_entries, 2);
	assert_int_equal(f->entries[0].predicate.kind, ARN_CFG_RBAC_RESP_RANGE);
	assert_int_equal(f->entries[0].predicate.port_lo, 500);
	assert_int_equal(f->entries[0].predicate.port_hi, 599);
	assert_int_equal(f->entries[1].predicate.port_lo, 400);
	assert_int_equal(f->entries[1].predicate.port_hi, 999);
	/* a custom_match that is not a CelMatcher over the CEL input */
	tc_refused(L, cel_json,
		   "input.typed_config: envoy.type.matcher.v3.HttpResponseStatusCodeMatchInput: a "
		   "custom_match reads xds.type.matcher.v3.HttpAttributesCelMatchInput");
	/* CEL other than Envoy Gateway's status range; the expression as a string */
	tc_refused(L, cel_other_json,
		   "expr_match.cel_expr_parsed.expr: a CEL expression Arion does not evaluate");
	tc_refused(L, cel_string_json, "expr_match.cel_expr_string: not supported by Arion");
}

/* Every refusal names its field. */
static void test_cresp_refusals(void **state)
{
	(void)state;
	/* a request input */
	tc_refused(L,
		   LISTENER(HCM(CR(ML(ENTRY("{\"single_predicate\":{" INPUT(
						"HttpRequestHeaderMatchInput",
						",\"header_name\":\"a\"") ",\"value_match\":"
									  "{\"exact\":\"v\"}}}",
					    ""))),
				"")),
		   "input.typed_config: envoy.type.matcher.v3.HttpRequestHeaderMatchInput is not "
		   "supported as a custom_response matcher input");
	tc_refused(L,
		   LISTENER(HCM(CR(ML("{\"predicate\":{\"single_predicate\":{" INPUT(
				    "HttpResponseStatusCodeMatchInput",
				    "") "}},"
					"\"on_match\":" ACT(LRP_AT, "") "}")),
				"")),
		   "single_predicate.value_match: missing");
	tc_refused(L, tree_json, "custom_response_matcher.matcher_tree: not supported by Arion");
	tc_refused(L,
		   LISTENER(HCM(CR(",\"custom_response_matcher\":{\"matcher_list\":{\"matchers\":"
				   "[]}}"),
				"")),
		   "matcher_list.matchers: empty");
	/* the redirect action */
	tc_refused(L,
		   LISTENER(HCM(CR(ML("{\"predicate\":" SP_STATUS("404") ",\"on_match\":" ACT(
				    RDP_AT, ",\"uri\":\"https://e.com/err\"") "}")),
				"")),
		   "on_match.action.typed_config: RedirectPolicy (Envoy's internal redirect) is "
		   "not supported by Arion");
	/* a nested matcher */
	tc_refused(L,
		   LISTENER(HCM(CR(ML("{\"predicate\":" SP_STATUS(
				    "404") ",\"on_match\":{\"matcher\":{\"matcher_list\":{"
					   "\"matchers\":[" E404("") "]}}}}")),
				"")),
		   "on_match.matcher");
	tc_refused(L, LISTENER(HCM(CR(ML(E404(",\"body\":{\"filename\":\"/etc/passwd\"}"))), "")),
		   "body.filename: not supported by Arion in a custom response");
	tc_refused(L, LISTENER(HCM(CR(ML(E404(",\"status_code\":700"))), "")),
		   "status_code: 700 is not in [200, 600)");
	tc_refused(L,
		   LISTENER(HCM(CR(ML(E404(",\"body_format\":{\"text_format\":\"%NOPE%\"}"))), "")),
		   "body_format.text_format");
	tc_refused(L,
		   LISTENER(HCM(CR(ML(E404(",\"response_headers_to_add\":[{\"header\":{\"key\":"
					   "\"content-length\",\"value\":\"3\"}}]"))),
				"")),
		   "response_headers_to_add[0].header.key: content-length frames the reply");
	tc_refused(L,
		   LISTENER(HCM(CR(ML(E404(",\"response_headers_to_add\":[{\"header\":{\"key\":"
					   "\"x\",\"value\":\"%REQ(a)%\"}}]"))),
				"")),
		   "response_headers_to_add[0].header.value: '%' (a substitution) is not "
		   "supported");
}

/* The bounds: a body at ARN_CFG_LR_BODY_MAX and past it; 64 matchers and
 * 65; 8 headers and 9. */
static void test_cresp_limits(void **state)
{
	(void)state;
	size_t cap = 2 * ARN_CFG_LR_BODY_MAX + 65536;
	char *json = malloc(cap), *body = malloc(ARN_CFG_LR_BODY_MAX + 2);
	assert_non_null(json);
	assert_non_null(body);
	static const char pre[] = LISTENER(
	    HCM(CR(ML("{\"predicate\":" SP_STATUS(
		    "404") ",\"on_match\":{\"action\":{\"name\":\"a\",\"typed_config\":{" LRP_AT
			   ",\"body\":{\"inline_string\":\"%s\"}}}}}")),
		""));
	for (size_t n = ARN_CFG_LR_BODY_MAX; n <= ARN_CFG_LR_BODY_MAX + 1; n++) {
		memset(body, 'b', n);
		body[n] = 0;
		snprintf(json, cap, pre, body);
		if (n == ARN_CFG_LR_BODY_MAX)
			tc_ok(L, json);
		else
			tc_refused(L, json,
				   "body.inline_string: 65537 bytes: longer than Arion's bound");
	}
	for (size_t n = ARN_CFG_CRESP_MAX_MATCHERS; n <= ARN_CFG_CRESP_MAX_MATCHERS + 1; n++) {
		struct arn_sb sb = ARN_SB_INIT;
		for (size_t i = 0; i < n; i++)
			arn_sb_printf(&sb, "%s" E404(""), i ? "," : "");
		static const char lp[] = LISTENER(HCM(CR(ML("%s")), ""));
		snprintf(json, cap, lp, arn_sb_cstr(&sb));
		arn_sb_free(&sb);
		if (n == ARN_CFG_CRESP_MAX_MATCHERS)
			tc_ok(L, json);
		else
			tc_refused(L, json,
				   "matcher_list.matchers: 65 matchers: Arion takes at most 64");
	}
	for (size_t n = ARN_CFG_CRESP_MAX_HEADERS; n <= ARN_CFG_CRESP_MAX_HEADERS + 1; n++) {
		struct arn_sb sb = ARN_SB_INIT;
		for (size_t i = 0; i < n; i++)
			arn_sb_printf(&sb, "%s{\"header\":{\"key\":\"x-%zu\",\"value\":\"v\"}}",
				      i ? "," : "", i);
		static const char lp[] =
		    LISTENER(HCM(CR(ML(E404(",\"response_headers_to_add\":[%s]"))), ""));
		snprintf(json, cap, lp, arn_sb_cstr(&sb));
		arn_sb_free(&sb);
		if (n == ARN_CFG_CRESP_MAX_HEADERS)
			tc_ok(L, json);
		else
			tc_refused(L, json,
				   "response_headers_to_add: 9 headers: Arion takes at most 8");
	}
	free(json);
	free(body);
}

const struct CMUnitTest conv_cresp_tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    T(test_cresp_model),
    T(test_cresp_refusals),
    T(test_cresp_limits),
    T(test_cresp_cel),
};
const size_t n_conv_cresp_tests = sizeof(conv_cresp_tests) / sizeof(conv_cresp_tests[0]);
