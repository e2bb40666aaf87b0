/*
 * envoy.filters.http.custom_response's CustomResponse (the filter's, or a
 * route level's typed_per_filter_config), field for field as Envoy reads
 * it (custom_response/config.cc, local_response_policy.cc): the matcher's
 * matcher_list (predicates on the response: conv_resp_predicate, RBAC's
 * rule trees) and each entry's action, a LocalResponsePolicy. What Arion
 * does not run is refused by name: matcher_tree, custom_match (Envoy
 * Gateway's CEL status ranges), a nested matcher, RedirectPolicy (Envoy's
 * internal redirect: Arion's router does not re-route a stream), a body
 * from a file.
 */
#include <errno.h>
#include <string.h>

#include "arn_access_log.h"
#include "arn_proto.h"
#include "arn_sb.h"
#include "config_int.h"

#define LOCAL_POLICY_TYPE                                                                          \
	"envoy.extensions.http.custom_response.local_response_policy.v3.LocalResponsePolicy"
#define REDIRECT_POLICY_TYPE                                                                       \
	"envoy.extensions.http.custom_response.redirect_policy.v3.RedirectPolicy"

static void format_free(void *f)
{
	arn_access_format_free(f);
}

/* response_headers_to_add: literal values (as local_reply_config's
 * mappers), never a header that frames the reply Arion writes. */
static void policy_headers(struct conv *c, struct pb p, struct arn_cfg_cresp_policy *o)
{
	size_t nh = pb_len(p, "response_headers_to_add");
	if (nh > ARN_CFG_CRESP_MAX_HEADERS) {
		conv_err(c, "response_headers_to_add",
			 "%zu headers: Arion takes at most %d (they take the reply's edit slots)",
			 nh, ARN_CFG_CRESP_MAX_HEADERS);
		return;
	}
	conv_header_add_list(c, p, "response_headers_to_add", &o->headers, &o->n_headers);
	for (size_t i = 0; i < o->n_headers; i++) {
		const struct arn_cfg_header_add *h = &o->headers[i];
		size_t m = conv_push(c, "response_headers_to_add[%zu]", i);
		if (h->value && memchr(h->value, '%', h->value_len))
			conv_err(c, "header.value",
				 "'%%' (a substitution) is not supported by Arion in a custom "
				 "response's headers: literal values only");
		static const char *const framing[] = {"content-length", "transfer-encoding",
						      "connection"};
		for (size_t k = 0; k < 3; k++)
			if (h->key && h->key_len == strlen(framing[k]) &&
			    memcmp(h->key, framing[k], h->key_len) == 0)
				conv_err(c, "header.key",
					 "%s frames the reply Arion writes: it cannot be added",
					 framing[k]);
		conv_pop(c, m);
	}
}

/* A LocalResponsePolicy: the reply that replaces a matched response. */
static const struct arn_cfg_cresp_policy *local_policy(struct conv *c, struct pb p)
{
	struct arn_cfg_cresp_policy *o = CONV_NEW(c, struct arn_cfg_cresp_policy, 1);
	if (!o)
		return NULL;
	conv_only(c, p, "body,body_format,status_code,response_headers_to_add");
	uint32_t sc;
	if (pb_wrapped_u32(p, "status_code", &sc)) {
		if (sc < 200 || sc > 599)
			conv_err(c, "status_code", "%u is not in [200, 600) (Envoy's bounds)", sc);
		o->status = (uint16_t)sc;
	}
	struct pb b = pb_msg(p, "body");
	if (b.m) {
		size_t m = conv_push(c, "body");
		const char *w = pb_which(b, "specifier");
		if (w && strcmp(w, "filename") == 0)
			conv_err(c, "filename",
				 "not supported by Arion in a custom response: put the body "
				 "inline (inline_string or inline_bytes)");
		else
			o->has_body = conv_data_source(c, b, ARN_CFG_LR_BODY_MAX,
						       "Arion's bound on a custom response body",
						       &o->body, &o->body_len) == 0;
		conv_pop(c, m);
	}
	struct pb bf = pb_msg(p, "body_format");
	if (bf.m) {
		const char *fw = conv_subst_format(c, bf, "body_format", &o->format);
		if (fw) {
			int before = c->nerr;
			conv_check_access_format(c, o->format.json, o->format.text,
						 o->format.omit_empty_values, fw);
			struct arn_sb e = ARN_SB_INIT;
			struct arn_access_format *f =
			    c->nerr == before
				? arn_access_format_of(o->format.json, o->format.text,
						       o->format.omit_empty_values, fw, &e)
				: NULL;
			arn_sb_free(&e);
			if (f && arn_pool_on_free(c->pool, format_free, f) != 0) {
				arn_access_format_free(f);
				f = NULL;
			}
			if (!f && c->nerr == before)
				conv_err(c, fw, "out of memory");
			o->fmt = f;
		}
	}
	policy_headers(c, p, o);
	return o;
}

/* An OnMatch: its action, a LocalResponsePolicy. */
static const struct arn_cfg_cresp_policy *on_match(struct conv *c, struct pb om)
{
	/* a nested matcher, keep_matching: not supported (conv_only names them) */
	conv_only(c, om, "action");
	struct pb a = pb_msg(om, "action");
	if (!a.m) {
		conv_err(c, "action", "missing (a nested matcher is not supported by Arion)");
		return NULL;
	}
	size_t m = conv_push(c, "action.typed_config");
	struct pb any = pb_msg(a, "typed_config");
	upb_StringView tn = any.m ? arn_proto_any_type_name(any.m) : (upb_StringView){0};
	const struct arn_cfg_cresp_policy *out = NULL;
	if (!any.m) {
		conv_err(c, "", "missing");
	} else if (arn_sv_eq(tn, REDIRECT_POLICY_TYPE)) {
		conv_err(c, "",
			 "RedirectPolicy (Envoy's internal redirect) is not supported by Arion: "
			 "its router does not re-route a stream; use a LocalResponsePolicy");
	} else if (!arn_sv_eq(tn, LOCAL_POLICY_TYPE)) {
		conv_err(c, "", "action '%.*s' is not supported by Arion (LocalResponsePolicy is)",
			 (int)tn.size, tn.data);
	} else {
		struct pb p = conv_any(c, any, LOCAL_POLICY_TYPE);
		if (p.m)
			out = local_policy(c, p);
	}
	conv_pop(c, m);
	return out;
}

const struct arn_cfg_custom_response *conv_custom_response(struct conv *c, struct pb p)
{
	struct arn_cfg_custom_response *out = CONV_NEW(c, struct arn_cfg_custom_response, 1);
	if (!out)
		return NULL;
	conv_only(c, p, "custom_response_matcher");
	struct pb r = pb_msg(p, "custom_response_matcher");
	if (!r.m)
		return out; /* Envoy: a filter whose routes carry the matchers */
	size_t m0 = conv_push(c, "custom_response_matcher");
	if (pb_has(r, "matcher_tree"))
		conv_err(c, "matcher_tree", "not supported by Arion: use matcher_list");
	conv_only(c, r, "matcher_list,on_no_match,matcher_tree");
	struct pb ml = pb_msg(r, "matcher_list");
	size_t n = ml.m ? pb_len(ml, "matchers") : 0;
	if (ml.m && n == 0)
		conv_err(c, "matcher_list.matchers", "empty (Envoy requires at least one)");
	if (n > ARN_CFG_CRESP_MAX_MATCHERS) {
		conv_err(c, "matcher_list.matchers",
			 "%zu matchers: Arion takes at most %d (each response tries them in "
			 "order)",
			 n, ARN_CFG_CRESP_MAX_MATCHERS);
		n = 0;
	}
	out->entries = CONV_NEW(c, struct arn_cfg_cresp_entry, n ? n : 1);
	for (size_t i = 0; out->entries && i < n; i++) {
		struct pb fm = pb_at(ml, "matchers", i);
		size_t m = conv_push(c, "matcher_list.matchers[%zu]", i);
		conv_only(c, fm, "predicate,on_match");
		size_t m2 = conv_push(c, "predicate");
		if (!pb_msg(fm, "predicate").m)
			conv_err(c, "", "missing");
		else
			conv_resp_predicate(c, pb_msg(fm, "predicate"), &out->entries[i].predicate);
		conv_pop(c, m2);
		m2 = conv_push(c, "on_match");
		if (!pb_msg(fm, "on_match").m)
			conv_err(c, "", "missing");
		else
			out->entries[i].policy = on_match(c, pb_msg(fm, "on_match"));
		conv_pop(c, m2);
		conv_pop(c, m);
	}
	out->n_entries = out->entries ? n : 0;
	struct pb nm = pb_msg(r, "on_no_match");
	if (nm.m) {
		size_t m = conv_push(c, "on_no_match");
		out->no_match = on_match(c, nm);
		conv_pop(c, m);
	}
	conv_pop(c, m0);
	return out;
}
