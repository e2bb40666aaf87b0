/*
 * A route's, a virtual host's or a RateLimitPerRoute's rate_limits (Envoy's
 * config.route.v3.RateLimit: a stage and its actions), which both rate
 * limit filters read: local_ratelimit's descriptors (conv_l4.c) and the
 * global ratelimit filter's (conv_rls.c); lib/l4/rldesc.c computes a
 * request's descriptors from them.
 */
#include <string.h>

#include "arn_config_model.h"
#include "arn_proto.h"
#include "config_int.h"

/* One RateLimit.Action (oneof action_specifier). */
static void rl_action(struct conv *c, struct pb a, struct arn_cfg_rl_action *out)
{
	const char *w = pb_which(a, "action_specifier");
	if (!w) {
		conv_err(c, "", "empty action: set one of its kinds");
		return;
	}
	size_t m = conv_push(c, "%s", w);
	struct pb v = pb_msg(a, w);
	out->expect_match = true;
	out->mask_len = 32;
	if (!strcmp(w, "source_cluster") || !strcmp(w, "destination_cluster") ||
	    !strcmp(w, "remote_address")) {
		conv_only(c, v, "");
		out->kind = w[0] == 's'	  ? ARN_CFG_RL_SOURCE_CLUSTER
			    : w[0] == 'd' ? ARN_CFG_RL_DESTINATION_CLUSTER
					  : ARN_CFG_RL_REMOTE_ADDRESS;
		out->key = w;
		out->key_len = strlen(w);
		/* Envoy's SourceClusterAction: the local service cluster
		 * (node.cluster, or --service-cluster), fixed for the process */
		if (out->kind == ARN_CFG_RL_SOURCE_CLUSTER && c->node_cluster) {
			out->value =
			    conv_str(c, (upb_StringView){c->node_cluster, strlen(c->node_cluster)});
			out->value_len = strlen(c->node_cluster);
		}
	} else if (!strcmp(w, "request_headers")) {
		out->kind = ARN_CFG_RL_REQUEST_HEADERS;
		conv_only(c, v, "header_name,descriptor_key,skip_if_absent");
		upb_StringView h = pb_str(v, "header_name"), k = pb_str(v, "descriptor_key");
		if (h.size == 0)
			conv_err(c, "header_name", "missing (Envoy requires it)");
		if (k.size == 0)
			conv_err(c, "descriptor_key", "missing (Envoy requires it)");
		out->header = conv_lstr(c, h);
		out->header_len = h.size;
		out->key = conv_str(c, k);
		out->key_len = k.size;
		out->skip_if_absent = pb_bool(v, "skip_if_absent");
	} else if (!strcmp(w, "generic_key") || !strcmp(w, "header_value_match")) {
		bool g = w[0] == 'g';
		out->kind = g ? ARN_CFG_RL_GENERIC_KEY : ARN_CFG_RL_HEADER_VALUE_MATCH;
		conv_only(c, v,
			  g ? "descriptor_value,descriptor_key"
			    : "descriptor_value,descriptor_key,expect_match,headers");
		upb_StringView val = pb_str(v, "descriptor_value"), k = pb_str(v, "descriptor_key");
		if (val.size == 0)
			conv_err(c, "descriptor_value", "missing (Envoy requires it)");
		out->value = conv_str(c, val);
		out->value_len = val.size;
		if (k.size) {
			out->key = conv_str(c, k);
			out->key_len = k.size;
		} else {
			out->key = g ? "generic_key" : "header_match";
			out->key_len = strlen(out->key);
		}
		if (!g) {
			bool em = true;
			pb_wrapped_bool(v, "expect_match", &em);
			out->expect_match = em;
			size_t nh = pb_len(v, "headers");
			if (nh == 0)
				conv_err(c, "headers", "empty (Envoy requires at least one)");
			out->headers = CONV_NEW(c, struct arn_cfg_header_match, nh ? nh : 1);
			for (size_t i = 0; out->headers && i < nh; i++) {
				size_t m2 = conv_push(c, "headers[%zu]", i);
				conv_header_matcher(c, pb_at(v, "headers", i), &out->headers[i]);
				conv_pop(c, m2);
			}
			out->n_headers = out->headers ? nh : 0;
		}
	} else if (!strcmp(w, "masked_remote_address")) {
		out->kind = ARN_CFG_RL_MASKED_REMOTE_ADDRESS;
		out->key = w;
		out->key_len = strlen(w);
		conv_only(c, v, "v4_prefix_mask_len,v6_prefix_mask_len");
		uint32_t ml = 32;
		if (pb_wrapped_u32(v, "v4_prefix_mask_len", &ml) && ml > 32)
			conv_err(c, "v4_prefix_mask_len", "%u is more than 32", ml);
		out->mask_len = ml > 32 ? 32 : (uint8_t)ml;
	} else {
		/* metadata, dynamic_metadata, extension: no metadata in Arion */
		conv_err(c, "", "this rate limit action is not supported by Arion");
	}
	conv_pop(c, m);
}

void conv_rate_limits(struct conv *c, struct pb p, struct arn_cfg_rate_limit **out, size_t *n)
{
	size_t len = pb_len(p, "rate_limits");
	if (!len)
		return;
	*out = CONV_NEW(c, struct arn_cfg_rate_limit, len);
	if (!*out)
		return;
	*n = len;
	for (size_t i = 0; i < len; i++) {
		struct pb rl = pb_at(p, "rate_limits", i);
		struct arn_cfg_rate_limit *o = &(*out)[i];
		size_t m = conv_push(c, "rate_limits[%zu]", i);
		/* disable_key: a runtime key; Arion has no runtime, so never
		 * disabled, as in an Envoy whose runtime does not set it.
		 * limit: an override from dynamic metadata, which Arion lacks */
		conv_only(c, rl, "stage,disable_key,actions");
		uint32_t st = 0;
		if (pb_wrapped_u32(rl, "stage", &st) && st > 10)
			conv_err(c, "stage", "%u is more than 10", st);
		o->stage = st;
		size_t na = pb_len(rl, "actions");
		if (na == 0)
			conv_err(c, "actions", "empty (Envoy requires at least one)");
		else if (na > ARN_CFG_RL_MAX_ACTIONS)
			/* lib/l4 could not build the descriptor: the limit would
			 * be off for every request */
			conv_err(c, "actions",
				 "%zu actions: Arion builds descriptors of at most %d entries", na,
				 ARN_CFG_RL_MAX_ACTIONS);
		o->actions = CONV_NEW(c, struct arn_cfg_rl_action, na ? na : 1);
		for (size_t j = 0; o->actions && j < na; j++) {
			size_t m2 = conv_push(c, "actions[%zu]", j);
			rl_action(c, pb_at(rl, "actions", j), &o->actions[j]);
			conv_pop(c, m2);
		}
		o->n_actions = o->actions ? na : 0;
		conv_pop(c, m);
	}
}
