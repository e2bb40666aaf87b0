/*
 * envoy.filters.http.ratelimit's RateLimit and RateLimitPerRoute ->
 * struct arn_cfg_rls / arn_cfg_rls_route (arn_config_l4.h). Every field
 * is acted on or refused by name: Envoy's newer RateLimit fields (past
 * stat_prefix, 13) are not in Arion's copy of the API and are refused as
 * unknown fields.
 */
#include <string.h>

#include "arn_proto.h"
#include "config_int.h"

/* rate_limit_service (RateLimitServiceConfig): grpc_service.envoy_grpc,
 * transport_api_version V3. */
static void rls_service(struct conv *c, struct pb rs, struct arn_cfg_rls *o)
{
	conv_only(c, rs, "grpc_service,transport_api_version");
	/* Envoy accepts only V3 here (AUTO, the default, is refused by it
	 * too since v2 went away; Arion takes both as v3) */
	int32_t api = pb_i32(rs, "transport_api_version");
	if (api != 0 && api != 2)
		conv_err(c, "transport_api_version", "%d: only V3", api);
	struct pb gs = pb_msg(rs, "grpc_service");
	if (!gs.m) {
		conv_err(c, "grpc_service", "missing (Envoy requires it)");
		return;
	}
	size_t m = conv_push(c, "grpc_service");
	/* timeout: Envoy's call uses the filter's timeout, never this one */
	conv_only(c, gs, "envoy_grpc,google_grpc,initial_metadata");
	if (pb_has(gs, "google_grpc"))
		conv_err(c, "google_grpc",
			 "not supported by Arion: the call goes over Arion's own HTTP/2 "
			 "upstreams (use envoy_grpc)");
	struct pb eg = pb_msg(gs, "envoy_grpc");
	if (!eg.m) {
		if (!pb_has(gs, "google_grpc"))
			conv_err(c, "envoy_grpc", "missing: the rate limit service's cluster");
	} else {
		size_t m2 = conv_push(c, "envoy_grpc");
		conv_envoy_grpc(c, eg, &o->cluster, &o->authority, &o->authority_len);
		conv_pop(c, m2);
	}
	conv_grpc_metadata(c, gs, "initial_metadata", ARN_CFG_RLS_MD_MAX, "call", &o->md, &o->n_md);
	conv_pop(c, m);
}

/* An HttpStatus @p f of @p p: its code when in [@p lo, 599], else @p dflt
 * (Envoy: rate_limited_status below 400 is 429; status_on_error any). */
static uint16_t rls_status(struct conv *c, struct pb p, const char *f, unsigned lo, uint16_t dflt)
{
	struct pb s = pb_msg(p, f);
	if (!s.m)
		return dflt;
	size_t m = conv_push(c, "%s", f);
	conv_only(c, s, "code");
	int32_t code = pb_i32(s, "code");
	uint16_t out = dflt;
	if (code > 599 || code < 0)
		conv_err(c, "code", "%d is not an HTTP status", code);
	else if (code >= (int32_t)lo)
		out = (uint16_t)code;
	else if (lo < 400 && code != 0)
		conv_err(c, "code", "%d: not a final HTTP status", code);
	conv_pop(c, m);
	return out;
}

const struct arn_cfg_rls *conv_rls(struct conv *c, struct pb p)
{
	struct arn_cfg_rls *o = CONV_NEW(c, struct arn_cfg_rls, 1);
	if (!o)
		return NULL;
	/* stat_prefix: Arion counts under cluster.<route's cluster>.ratelimit.*
	 * only (Envoy's names without one) */
	conv_only(c, p,
		  "domain,stage,request_type,timeout,failure_mode_deny,"
		  "rate_limited_as_resource_exhausted,rate_limit_service,"
		  "enable_x_ratelimit_headers,disable_x_envoy_ratelimited_header,"
		  "rate_limited_status,response_headers_to_add,status_on_error");
	upb_StringView d = pb_str(p, "domain");
	if (!d.size)
		conv_err(c, "domain", "missing (Envoy requires it)");
	o->domain = conv_str(c, d);
	o->domain_len = (uint32_t)d.size;
	o->stage = pb_u32(p, "stage");
	if (o->stage > 10)
		conv_err(c, "stage", "%u is more than 10", o->stage);
	upb_StringView rt = pb_str(p, "request_type");
	if (!rt.size || arn_sv_eq(rt, "both"))
		o->request_type = ARN_CFG_RLS_BOTH;
	else if (arn_sv_eq(rt, "internal"))
		o->request_type = ARN_CFG_RLS_INTERNAL;
	else if (arn_sv_eq(rt, "external"))
		o->request_type = ARN_CFG_RLS_EXTERNAL;
	else
		conv_err(c, "request_type", "'%.*s': internal, external or both", (int)rt.size,
			 rt.data);
	o->timeout_ms = 20; /* Envoy's */
	if (pb_has(p, "timeout"))
		conv_duration(c, p, "timeout", &o->timeout_ms, false);
	o->failure_mode_deny = pb_bool(p, "failure_mode_deny");
	o->resource_exhausted = pb_bool(p, "rate_limited_as_resource_exhausted");
	struct pb rs = pb_msg(p, "rate_limit_service");
	if (!rs.m) {
		conv_err(c, "rate_limit_service", "missing (Envoy requires it)");
	} else {
		size_t m = conv_push(c, "rate_limit_service");
		rls_service(c, rs, o);
		conv_pop(c, m);
	}
	int32_t x = pb_i32(p, "enable_x_ratelimit_headers");
	if (x != 0 && x != 1)
		conv_err(c, "enable_x_ratelimit_headers", "unknown value %d", x);
	o->x_ratelimit_headers = x == 1;
	o->no_x_envoy_ratelimited = pb_bool(p, "disable_x_envoy_ratelimited_header");
	o->rate_limited_status = rls_status(c, p, "rate_limited_status", 400, 429);
	o->status_on_error = rls_status(c, p, "status_on_error", 200, 500);
	conv_header_add_list(c, p, "response_headers_to_add", &o->resp_add, &o->n_resp_add);
	conv_header_add_ops(c, "response_headers_to_add", o->resp_add, o->n_resp_add);
	if (o->n_resp_add > 10)
		conv_err(c, "response_headers_to_add", "at most 10 (Envoy)");
	return o;
}

const struct arn_cfg_rls_route *conv_rls_route(struct conv *c, struct pb p)
{
	struct arn_cfg_rls_route *o = CONV_NEW(c, struct arn_cfg_rls_route, 1);
	if (!o)
		return NULL;
	conv_only(c, p, "vh_rate_limits,override_option,rate_limits,domain");
	int32_t vh = pb_i32(p, "vh_rate_limits");
	if (vh < 0 || vh > 2)
		conv_err(c, "vh_rate_limits", "unknown value %d", vh);
	else
		o->vh_rate_limits = (uint8_t)vh;
	/* not implemented in Envoy either ([#not-implemented-hide:]) */
	if (pb_i32(p, "override_option") != 0)
		conv_err(c, "override_option",
			 "not supported by Arion (nor by Envoy): DEFAULT only");
	conv_rate_limits(c, p, &o->rate_limits, &o->n_rate_limits);
	if (o->n_rate_limits > ARN_CFG_RL_MAX_DESCRIPTORS)
		conv_err(c, "rate_limits", "%zu: a request carries at most %d descriptors",
			 o->n_rate_limits, ARN_CFG_RL_MAX_DESCRIPTORS);
	upb_StringView d = pb_str(p, "domain");
	if (d.size) {
		o->domain = conv_str(c, d);
		o->domain_len = (uint32_t)d.size;
	}
	return o;
}
