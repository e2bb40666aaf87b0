/*
 * envoy.filters.http.header_mutation's HeaderMutation and a route level's
 * HeaderMutationPerRoute -> struct arn_cfg_header_mutation, as Envoy's
 * header_mutation.cc and HeaderMutations (mutation_rules HeaderMutation:
 * remove, append, remove_on_match). parameter_mutations and regex_copy are
 * refused naming them. A name the mutations may not touch (pseudo-headers,
 * and what frames or routes the request: host, content-length,
 * transfer-encoding, as basic_auth's forwarding header) is refused too.
 */
#include <string.h>

#include "config_int.h"

/* Can a mutation name @p n (lower case, @p len bytes)? */
static bool hm_name_ok(struct conv *c, const char *field, const char *n, size_t len)
{
	static const char *const no[] = {"host", "content-length", "transfer-encoding",
					 "connection", "upgrade"};
	if (len && n[0] == ':') {
		conv_err(c, field, "'%.*s': a pseudo-header is not mutated by Arion", (int)len, n);
		return false;
	}
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (strlen(no[i]) == len && memcmp(no[i], n, len) == 0) {
			conv_err(c, field,
				 "'%.*s' frames or routes the message: not mutated by Arion",
				 (int)len, n);
			return false;
		}
	return true;
}

/* A HeaderValueOption (a mutation's append) into @p h. */
static void hm_append(struct conv *c, struct pb hvo, struct arn_cfg_header_add *h)
{
	size_t m = conv_push(c, "append");
	conv_only(c, hvo, "header,append,append_action,keep_empty_value");
	struct pb hv = pb_msg(hvo, "header");
	if (!hv.m) {
		conv_err(c, "header", "missing");
	} else {
		size_t m2 = conv_push(c, "header");
		conv_only(c, hv, "key,value");
		size_t kl = 0;
		const char *k = conv_hdr_name(c, "key", pb_str(hv, "key"), &kl);
		if (k && hm_name_ok(c, "key", k, kl)) {
			h->key = k;
			h->key_len = kl;
		}
		upb_StringView v = pb_str(hv, "value");
		h->value = conv_hdr_str(c, "value", v);
		h->value_len = v.size;
		conv_header_value_ops(c, "value", h->value, h->value_len);
		conv_pop(c, m2);
	}
	bool append;
	bool has_append = pb_wrapped_bool(hvo, "append", &append);
	int32_t action = pb_i32(hvo, "append_action");
	if (has_append && action != 0)
		conv_err(c, "append", "set either append or append_action, not both");
	if (has_append)
		h->append =
		    append ? ARN_CFG_APPEND_IF_EXISTS_OR_ADD : ARN_CFG_OVERWRITE_IF_EXISTS_OR_ADD;
	else if (action >= 0 && action <= 3)
		h->append = (uint8_t)action; /* 3: OVERWRITE_IF_EXISTS */
	else
		conv_err(c, "append_action", "unknown value %d", action);
	h->keep_empty_value = pb_bool(hvo, "keep_empty_value");
	conv_pop(c, m);
}

static void hm_list(struct conv *c, struct pb p, const char *f, const struct arn_cfg_hm_op **out,
		    size_t *n_out)
{
	size_t n = pb_len(p, f);
	if (!n)
		return;
	if (n > ARN_CFG_HM_MAX_OPS) {
		conv_err(c, f, "%zu mutations: more than %d (each is a pass over the head)", n,
			 ARN_CFG_HM_MAX_OPS);
		return;
	}
	struct arn_cfg_hm_op *o = CONV_NEW(c, struct arn_cfg_hm_op, n);
	if (!o)
		return;
	for (size_t i = 0; i < n; i++) {
		size_t m = conv_push(c, "%s[%zu]", f, i);
		struct pb hm = pb_at(p, f, i);
		conv_only(c, hm, "remove,append,remove_on_match");
		const char *w = pb_which(hm, "action");
		if (!w) {
			conv_err(c, "", "no action (Envoy requires one)");
		} else if (strcmp(w, "remove") == 0) {
			size_t l = 0;
			const char *nm = conv_hdr_name(c, "remove", pb_str(hm, "remove"), &l);
			if (nm && hm_name_ok(c, "remove", nm, l)) {
				o[i].kind = ARN_CFG_HM_REMOVE;
				o[i].name = nm;
				o[i].name_len = l;
			}
		} else if (strcmp(w, "append") == 0) {
			o[i].kind = ARN_CFG_HM_APPEND;
			hm_append(c, pb_msg(hm, "append"), &o[i].add);
		} else if (strcmp(w, "remove_on_match") == 0) {
			o[i].kind = ARN_CFG_HM_REMOVE_MATCH;
			struct pb rm = pb_msg(hm, "remove_on_match");
			size_t m2 = conv_push(c, "remove_on_match");
			conv_only(c, rm, "key_matcher");
			struct pb km = pb_msg(rm, "key_matcher");
			if (!km.m) {
				conv_err(c, "key_matcher", "missing (Envoy requires it)");
			} else {
				size_t m3 = conv_push(c, "key_matcher");
				conv_string_matcher(c, km, &o[i].key);
				conv_pop(c, m3);
			}
			conv_pop(c, m2);
		} /* regex_copy: refused by conv_only */
		conv_pop(c, m);
	}
	*out = o;
	*n_out = n;
}

static void hm_mutations(struct conv *c, struct pb p, struct arn_cfg_header_mutation *o)
{
	struct pb mu = pb_msg(p, "mutations");
	if (!mu.m)
		return;
	size_t m = conv_push(c, "mutations");
	/* parameter_mutations (query parameters) is not built: refused here */
	conv_only(c, mu, "request_mutations,response_mutations");
	hm_list(c, mu, "request_mutations", &o->req, &o->n_req);
	hm_list(c, mu, "response_mutations", &o->resp, &o->n_resp);
	conv_pop(c, m);
}

const struct arn_cfg_header_mutation *conv_header_mutation(struct conv *c, struct pb p,
							   bool per_route)
{
	struct arn_cfg_header_mutation *o = CONV_NEW(c, struct arn_cfg_header_mutation, 1);
	if (!o)
		return NULL;
	if (per_route) {
		conv_only(c, p, "mutations");
	} else {
		conv_only(c, p, "mutations,most_specific_header_mutations_wins");
		o->most_specific_wins = pb_bool(p, "most_specific_header_mutations_wins");
	}
	hm_mutations(c, p, o);
	return o;
}
