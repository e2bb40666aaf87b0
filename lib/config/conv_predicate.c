/*
 * An xds.type.matcher.v3 predicate (single_predicate, or_matcher,
 * and_matcher, not_matcher) as an RBAC rule tree, for what reads one:
 * RBAC's matcher (the network, or an HTTP request; conv_l4.c) and
 * custom_response's matchers (an HTTP response; conv_cresp.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "arn_proto.h"
#include "config_int.h"

#define HDR_INPUT "envoy.type.matcher.v3.HttpRequestHeaderMatchInput"

/* or_matcher / and_matcher: a PredicateList of at least two (Envoy). */
static void predicate_list(struct conv *c, struct pb l, int http, int depth,
			   struct arn_cfg_rbac_rule *out)
{
	conv_only(c, l, "predicate");
	size_t n = pb_len(l, "predicate");
	if (n < 2)
		conv_err(c, "predicate", "%zu predicate(s): Envoy requires at least two", n);
	out->kids = CONV_NEW(c, struct arn_cfg_rbac_rule, n ? n : 1);
	for (size_t i = 0; out->kids && i < n; i++) {
		size_t m = conv_push(c, "predicate[%zu]", i);
		conv_predicate(c, pb_at(l, "predicate", i), http, depth + 1, &out->kids[i]);
		conv_pop(c, m);
	}
	out->n_kids = out->kids ? n : 0;
}

#define RESP_INPUT(n) "envoy.type.matcher.v3.HttpResponse" n "MatchInput"

#define CEL_INPUT "xds.type.matcher.v3.HttpAttributesCelMatchInput"
#define CEL_MATCHER "xds.type.matcher.v3.CelMatcher"

/* One comparison of response.code with an int constant (the CEL AST
 * Envoy Gateway writes: a call of _>=_, _<=_, _>_ or _<_ whose arguments
 * are the select `response.code` and an int64 constant) into [*lo, *hi].
 * @return false for anything else. */
static bool cel_code_cmp(struct pb e, uint32_t *lo, uint32_t *hi)
{
	struct pb call = pb_msg(e, "call_expr");
	if (!call.m || pb_has(call, "target") || pb_len(call, "args") != 2)
		return false;
	upb_StringView fn = pb_str(call, "function");
	struct pb a = pb_at(call, "args", 0), k = pb_at(call, "args", 1);
	struct pb sel = pb_msg(a, "select_expr"), id = pb_msg(sel, "operand");
	struct pb ident = pb_msg(id, "ident_expr"), cst = pb_msg(k, "const_expr");
	if (!sel.m || !ident.m || !cst.m || pb_bool(sel, "test_only") ||
	    !arn_sv_eq(pb_str(sel, "field"), "code") ||
	    !arn_sv_eq(pb_str(ident, "name"), "response"))
		return false;
	const char *kw = pb_which(cst, "constant_kind");
	int64_t v;
	if (kw && strcmp(kw, "int64_value") == 0)
		v = pb_i64(cst, "int64_value");
	else if (kw && strcmp(kw, "uint64_value") == 0 && pb_u64(cst, "uint64_value") < 1000)
		v = (int64_t)pb_u64(cst, "uint64_value");
	else
		return false;
	/* strict comparisons as inclusive ones; bounds past the statuses
	 * (0..999) clamped, an empty range kept empty */
	bool ge = arn_sv_eq(fn, "_>=_") || arn_sv_eq(fn, "_>_");
	if (!ge && !arn_sv_eq(fn, "_<=_") && !arn_sv_eq(fn, "_<_"))
		return false;
	if (arn_sv_eq(fn, "_>_") && v < 1000)
		v++;
	else if (arn_sv_eq(fn, "_<_") && v > -1)
		v--;
	v = v < -1 ? -1 : v > 1000 ? 1000 : v;
	if (ge && v > (int64_t)*lo)
		*lo = (uint32_t)v;
	else if (!ge && v < (int64_t)*hi)
		*hi = v < 0 ? 0 : (uint32_t)v, *lo = v < 0 ? 1 : *lo;
	return true;
}

/*
 * A custom_match: Envoy Gateway's status range, a CelMatcher whose
 * expression is `response.code >= A && response.code <= B` (or one such
 * comparison) over HttpAttributesCelMatchInput, into a RESP_RANGE rule
 * [port_lo, port_hi]. Any other expression is refused: Arion has no CEL
 * evaluator.
 */
static void cel_range(struct conv *c, struct pb v, struct arn_cfg_rbac_rule *out)
{
	struct pb in = pb_msg(v, "input");
	struct pb any = pb_msg(in, "typed_config");
	upb_StringView tn = any.m ? arn_proto_any_type_name(any.m) : (upb_StringView){0};
	size_t m = conv_push(c, "input");
	if (!arn_sv_eq(tn, CEL_INPUT))
		conv_err(c, "typed_config",
			 "%.*s: a custom_match reads " CEL_INPUT " (Envoy Gateway's)", (int)tn.size,
			 tn.data);
	else if ((any = conv_any(c, any, CEL_INPUT)).m)
		conv_only(c, any, "");
	conv_pop(c, m);
	m = conv_push(c, "custom_match.typed_config");
	struct pb ca = pb_msg(pb_msg(v, "custom_match"), "typed_config");
	tn = ca.m ? arn_proto_any_type_name(ca.m) : (upb_StringView){0};
	struct pb cm = {0};
	if (!arn_sv_eq(tn, CEL_MATCHER))
		conv_err(c, "",
			 "%.*s is not supported by Arion as a custom_match (a CelMatcher with "
			 "Envoy Gateway's status range is)",
			 (int)tn.size, tn.data);
	else
		cm = conv_any(c, ca, CEL_MATCHER);
	if (cm.m) {
		conv_only(c, cm, "expr_match,description");
		struct pb em = pb_msg(cm, "expr_match");
		size_t m2 = conv_push(c, "expr_match");
		conv_only(c, em, "cel_expr_parsed,parsed_expr");
		struct pb pe = pb_msg(em, "cel_expr_parsed");
		if (!pe.m)
			pe = pb_msg(em, "parsed_expr");
		struct pb e = pb_msg(pe, "expr");
		uint32_t lo = 0, hi = 999;
		struct pb call = pb_msg(e, "call_expr");
		bool ok = false;
		if (call.m && arn_sv_eq(pb_str(call, "function"), "_&&_") &&
		    pb_len(call, "args") == 2 && !pb_has(call, "target"))
			ok = cel_code_cmp(pb_at(call, "args", 0), &lo, &hi) &&
			     cel_code_cmp(pb_at(call, "args", 1), &lo, &hi);
		else if (e.m)
			ok = cel_code_cmp(e, &lo, &hi);
		if (!ok)
			conv_err(c,
				 pe.m ? (pb_msg(em, "cel_expr_parsed").m ? "cel_expr_parsed.expr"
									 : "parsed_expr.expr")
				      : "",
				 "a CEL expression Arion does not evaluate (it has no CEL "
				 "interpreter): it takes Envoy Gateway's status range, "
				 "response.code >= A && response.code <= B");
		out->kind = ARN_CFG_RBAC_RESP_RANGE;
		out->port_lo = lo;
		out->port_hi = hi;
		conv_pop(c, m2);
	}
	conv_pop(c, m);
}

/*
 * A custom_response SinglePredicate: Envoy's response inputs, matched by
 * value_match (the status in decimal, its class "5xx", "true" for a local
 * reply, a header's values joined with ','); custom_match (Envoy Gateway's
 * CEL status ranges) and the other inputs refused by name.
 */
static void resp_predicate(struct conv *c, struct pb v, struct arn_cfg_rbac_rule *out)
{
	static const struct {
		const char *type;
		uint8_t kind;
	} inputs[] = {
	    {RESP_INPUT("StatusCode"), ARN_CFG_RBAC_RESP_STATUS},
	    {RESP_INPUT("StatusCodeClass"), ARN_CFG_RBAC_RESP_CLASS},
	    {RESP_INPUT("LocalReply"), ARN_CFG_RBAC_RESP_LOCAL},
	    {RESP_INPUT("Header"), ARN_CFG_RBAC_RESP_HEADER},
	};
	conv_only(c, v, "input,value_match,custom_match");
	if (pb_has(v, "custom_match")) {
		cel_range(c, v, out);
		return;
	}
	struct pb in = pb_msg(v, "input");
	struct pb any = pb_msg(in, "typed_config");
	upb_StringView tn = any.m ? arn_proto_any_type_name(any.m) : (upb_StringView){0};
	size_t m = conv_push(c, "input");
	size_t k = 0;
	while (k < sizeof(inputs) / sizeof(inputs[0]) && !arn_sv_eq(tn, inputs[k].type))
		k++;
	if (!in.m || !any.m) {
		conv_err(c, in.m ? "typed_config" : "", "missing");
	} else if (k == sizeof(inputs) / sizeof(inputs[0])) {
		conv_err(c, "typed_config",
			 "%.*s is not supported as a custom_response matcher input: Arion reads "
			 "HttpResponseStatusCodeMatchInput, HttpResponseStatusCodeClassMatchInput, "
			 "HttpResponseLocalReplyMatchInput and HttpResponseHeaderMatchInput",
			 (int)tn.size, tn.data);
	} else {
		size_t m2 = conv_push(c, "typed_config");
		struct pb hi = conv_any(c, any, inputs[k].type);
		conv_pop(c, m2);
		out->kind = inputs[k].kind;
		if (hi.m && out->kind == ARN_CFG_RBAC_RESP_HEADER) {
			conv_only(c, hi, "header_name");
			size_t hl = 0;
			const char *hn = conv_hdr_name(c, "typed_config.header_name",
						       pb_str(hi, "header_name"), &hl);
			out->header = CONV_NEW(c, struct arn_cfg_header_match, 1);
			if (out->header) {
				out->header->name = hn;
				out->header->name_len = hl;
				out->header->kind = ARN_CFG_HDR_STRING;
			}
		} else if (hi.m) {
			conv_only(c, hi, "");
		}
	}
	conv_pop(c, m);
	struct pb vm = pb_msg(v, "value_match");
	m = conv_push(c, "value_match");
	if (!vm.m)
		conv_err(c, "", "missing");
	else
		conv_string_matcher(c, vm, out->header ? &out->header->str : &out->str);
	conv_pop(c, m);
}

/*
 * A Predicate as an RBAC rule tree. The one input Arion reads is the
 * request header (Envoy's HttpRequestHeaderMatchInput, its values joined
 * with ',' as RBAC's header rules join them; absent: no match), matched by
 * value_match; the network inputs and custom_match are refused by name.
 */
void conv_predicate(struct conv *c, struct pb p, int http, int depth, struct arn_cfg_rbac_rule *out)
{
	const char *w = pb_which(p, "match_type");
	if (depth > RBAC_MAX_DEPTH) {
		conv_err(c, "", "predicates nested more than %d deep", RBAC_MAX_DEPTH);
		return;
	}
	if (!w) {
		conv_err(c, "",
			 "empty predicate: set single_predicate, or_matcher, and_matcher "
			 "or not_matcher");
		return;
	}
	size_t m = conv_push(c, "%s", w);
	struct pb v = pb_msg(p, w);
	if (!strcmp(w, "or_matcher") || !strcmp(w, "and_matcher")) {
		out->kind = w[0] == 'o' ? ARN_CFG_RBAC_OR : ARN_CFG_RBAC_AND;
		predicate_list(c, v, http, depth, out);
	} else if (!strcmp(w, "not_matcher")) {
		out->kind = ARN_CFG_RBAC_NOT;
		out->kids = CONV_NEW(c, struct arn_cfg_rbac_rule, 1);
		if (out->kids) {
			out->n_kids = 1;
			conv_predicate(c, v, http, depth + 1, out->kids);
		}
	} else if (http == CONV_PRED_RESP) {
		resp_predicate(c, v, out);
	} else {
		conv_only(c, v, "input,value_match");
		struct pb in = pb_msg(v, "input");
		struct pb any = pb_msg(in, "typed_config");
		upb_StringView url = pb_str(any, "type_url");
		const char *slash = url.size ? memrchr(url.data, '/', url.size) : NULL;
		size_t off = slash ? (size_t)(slash - url.data) + 1 : 0;
		size_t m2 = conv_push(c, "input");
		if (!in.m || !any.m) {
			conv_err(c, in.m ? "typed_config" : "", "missing");
		} else if (!http || url.size - off != strlen(HDR_INPUT) ||
			   memcmp(url.data + off, HDR_INPUT, url.size - off) != 0) {
			conv_err(c, "typed_config",
				 "%.*s is not supported as an RBAC matcher input: Arion reads %s",
				 (int)(url.size - off), url.data + off,
				 http ? "the request's headers (" HDR_INPUT ")"
				      : "none on the network filter (use rules)");
		} else {
			size_t m3 = conv_push(c, "typed_config");
			struct pb hi = conv_any(c, any, HDR_INPUT);
			conv_pop(c, m3);
			upb_StringView hn = hi.m ? pb_str(hi, "header_name") : (upb_StringView){0};
			out->kind = ARN_CFG_RBAC_HEADER;
			out->header = CONV_NEW(c, struct arn_cfg_header_match, 1);
			if (hi.m && hn.size == 0)
				conv_err(c, "typed_config.header_name", "missing");
			if (out->header) {
				out->header->name = conv_lstr(c, hn);
				out->header->name_len = hn.size;
				out->header->kind = ARN_CFG_HDR_STRING;
			}
		}
		conv_pop(c, m2);
		struct pb vm = pb_msg(v, "value_match");
		size_t m4 = conv_push(c, "value_match");
		if (!vm.m)
			conv_err(c, "", "missing (custom_match is not supported by Arion)");
		else if (out->header)
			conv_string_matcher(c, vm, &out->header->str);
		conv_pop(c, m4);
	}
	conv_pop(c, m);
}

void conv_resp_predicate(struct conv *c, struct pb p, struct arn_cfg_rbac_rule *out)
{
	conv_predicate(c, p, CONV_PRED_RESP, 0, out);
}
