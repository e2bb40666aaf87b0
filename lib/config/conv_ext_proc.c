/*
 * envoy.filters.http.ext_proc's ExternalProcessor and ExtProcPerRoute ->
 * struct arn_cfg_ext_proc / arn_cfg_ext_proc_route (arn_config_l4.h).
 * Every field is acted on or refused by name; what Arion does not build
 * yet (the request's body STREAMED, FULL_DUPLEX_STREAMED and
 * BUFFERED_PARTIAL bodies, trailers, attributes, metadata, observability
 * mode) is refused naming the field and value.
 * Envoy's newer ExternalProcessor fields (past 19) are not in Arion's copy
 * of the API and are refused as unknown fields.
 */
#include <string.h>

#include "arn_proto.h"
#include "config_int.h"

static const char *const body_modes[] = {"NONE", "STREAMED", "BUFFERED", "BUFFERED_PARTIAL",
					 "FULL_DUPLEX_STREAMED"};

/* A HeaderSendMode @p f of @p pm into @p out (DEFAULT: @p dflt). */
static void header_mode(struct conv *c, struct pb pm, const char *f, uint8_t dflt, uint8_t *out)
{
	int32_t v = pb_i32(pm, f);
	if (v == 0)
		*out = dflt;
	else if (v == 1)
		*out = ARN_CFG_EXT_PROC_SEND;
	else if (v == 2)
		*out = ARN_CFG_EXT_PROC_SKIP;
	else
		conv_err(c, f, "unknown value %d", v);
}

/* ProcessingMode: the request's and the response's headers SEND or SKIP;
 * the request's body BUFFERED or NONE, the response's BUFFERED, STREAMED
 * or NONE, no trailers (what Arion builds; the rest refused by name). */
static void processing_mode(struct conv *c, struct pb pm, struct arn_cfg_ext_proc_mode *o)
{
	o->request_headers = o->response_headers = ARN_CFG_EXT_PROC_SEND; /* Envoy's defaults */
	if (!pm.m)
		return;
	conv_only(c, pm,
		  "request_header_mode,response_header_mode,request_body_mode,"
		  "response_body_mode,request_trailer_mode,response_trailer_mode");
	header_mode(c, pm, "request_header_mode", ARN_CFG_EXT_PROC_SEND, &o->request_headers);
	header_mode(c, pm, "response_header_mode", ARN_CFG_EXT_PROC_SEND, &o->response_headers);
	/* the request's body BUFFERED (read whole, sent as one
	 * request_body); the response's BUFFERED or STREAMED (each piece
	 * sent as it comes, held until its answer: Envoy AI Gateway's SSE
	 * completions); the rest not built */
	int32_t v = pb_i32(pm, "request_body_mode");
	if (v == 2)
		o->request_body_buffered = true;
	else if (v != 0)
		conv_err(c, "request_body_mode",
			 "%s: not built by Arion for the request's body (its ext_proc sends it "
			 "BUFFERED or not at all: NONE; STREAMED is built for the response's body)",
			 v > 0 && v < 5 ? body_modes[v] : "an unknown mode");
	v = pb_i32(pm, "response_body_mode");
	if (v == 2)
		o->response_body_buffered = true;
	else if (v == 1)
		o->response_body_streamed = true;
	else if (v != 0)
		conv_err(c, "response_body_mode",
			 "%s: not built by Arion (its ext_proc sends the response's body "
			 "STREAMED, BUFFERED or not at all: NONE)",
			 v > 0 && v < 5 ? body_modes[v] : "an unknown mode");
	static const char *const trailers[] = {"request_trailer_mode", "response_trailer_mode"};
	for (size_t i = 0; i < 2; i++) {
		v = pb_i32(pm, trailers[i]);
		if (v == 1)
			conv_err(c, trailers[i],
				 "SEND: not built by Arion (its ext_proc sends no trailers: "
				 "DEFAULT or SKIP)");
		else if (v != 0 && v != 2)
			conv_err(c, trailers[i], "unknown value %d", v);
	}
}

/* grpc_service: envoy_grpc (cluster_name, authority), initial_metadata;
 * timeout taken and not applied, as Envoy's ext_proc stream, which sets no
 * deadline (message_timeout bounds each answer); google_grpc refused. */
static void service(struct conv *c, struct pb gs, struct arn_cfg_ext_proc_service *o)
{
	conv_only(c, gs, "envoy_grpc,google_grpc,timeout,initial_metadata");
	if (pb_has(gs, "google_grpc"))
		conv_err(c, "google_grpc",
			 "not supported by Arion: the stream goes over Arion's own HTTP/2 "
			 "upstreams (use envoy_grpc)");
	struct pb eg = pb_msg(gs, "envoy_grpc");
	if (!eg.m) {
		if (!pb_has(gs, "google_grpc"))
			conv_err(c, "envoy_grpc", "missing: the external processor's cluster");
	} else {
		size_t m = conv_push(c, "envoy_grpc");
		conv_envoy_grpc(c, eg, &o->cluster, &o->authority, &o->authority_len);
		conv_pop(c, m);
	}
	if (pb_has(gs, "timeout")) {
		uint32_t ignored = 0;
		conv_duration(c, gs, "timeout", &ignored, false);
	}
	conv_grpc_metadata(c, gs, "initial_metadata", ARN_CFG_EXT_PROC_MD_MAX, "stream", &o->md,
			   &o->n_md);
}

/* A ListStringMatcher @p f of @p p into @p out (NULL, 0 when unset). */
static void str_list(struct conv *c, struct pb p, const char *f,
		     const struct arn_cfg_str_match **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	struct pb l = pb_msg(p, f);
	if (!l.m)
		return;
	size_t m = conv_push(c, "%s", f);
	conv_only(c, l, "patterns");
	size_t k = pb_len(l, "patterns");
	struct arn_cfg_str_match *a = CONV_NEW(c, struct arn_cfg_str_match, k ? k : 1);
	for (size_t i = 0; a && i < k; i++) {
		size_t m2 = conv_push(c, "patterns[%zu]", i);
		if (conv_string_matcher(c, pb_at(l, "patterns", i), &a[*n]) == 0)
			(*n)++;
		conv_pop(c, m2);
	}
	*out = a;
	conv_pop(c, m);
}

/* mutation_rules (HeaderMutationRules): Envoy's checker's switches;
 * allow_all_routing (Host, :method, :scheme mutated) and the regular
 * expressions are refused. */
static void mutation_rules(struct conv *c, struct pb mr, struct arn_cfg_ext_proc *o)
{
	conv_only(c, mr,
		  "allow_all_routing,allow_envoy,disallow_system,disallow_all,allow_expression,"
		  "disallow_expression,disallow_is_error");
	bool v = false;
	if (pb_wrapped_bool(mr, "allow_all_routing", &v) && v)
		conv_err(c, "allow_all_routing",
			 "true: not supported by Arion (a processor does not change the "
			 "request's Host, :method or :scheme: the route and the upstream "
			 "connection were chosen on them)");
	if (pb_has(mr, "allow_expression"))
		conv_err(c, "allow_expression", "not supported by Arion");
	if (pb_has(mr, "disallow_expression"))
		conv_err(c, "disallow_expression", "not supported by Arion");
	v = false;
	o->allow_envoy = pb_wrapped_bool(mr, "allow_envoy", &v) && v;
	v = false;
	o->disallow_system = pb_wrapped_bool(mr, "disallow_system", &v) && v;
	v = false;
	o->disallow_all = pb_wrapped_bool(mr, "disallow_all", &v) && v;
	v = false;
	o->disallow_is_error = pb_wrapped_bool(mr, "disallow_is_error", &v) && v;
}

/* A Duration @p f of @p p in ms, at most an hour (Envoy's validation). */
static void hour_at_most(struct conv *c, struct pb p, const char *f, uint32_t *out)
{
	if (!pb_has(p, f))
		return;
	conv_duration(c, p, f, out, false);
	if (*out > 3600u * 1000)
		conv_err(c, f, "more than an hour (Envoy's bound)");
}

const struct arn_cfg_ext_proc *conv_ext_proc(struct conv *c, struct pb p)
{
	struct arn_cfg_ext_proc *o = CONV_NEW(c, struct arn_cfg_ext_proc, 1);
	if (!o)
		return NULL;
	conv_only(c, p,
		  "grpc_service,failure_mode_allow,processing_mode,request_attributes,"
		  "response_attributes,message_timeout,stat_prefix,mutation_rules,"
		  "max_message_timeout,forward_rules,filter_metadata,allow_mode_override,"
		  "disable_immediate_response,metadata_options,observability_mode,"
		  "disable_clear_route_cache,route_cache_action,deferred_close_timeout");
	struct pb gs = pb_msg(p, "grpc_service");
	if (!gs.m) {
		conv_err(c, "grpc_service", "missing (Envoy requires it)");
	} else {
		size_t m = conv_push(c, "grpc_service");
		service(c, gs, &o->svc);
		conv_pop(c, m);
	}
	o->failure_mode_allow = pb_bool(p, "failure_mode_allow");
	{
		size_t m = conv_push(c, "processing_mode");
		processing_mode(c, pb_msg(p, "processing_mode"), &o->mode);
		conv_pop(c, m);
	}
	if (pb_len(p, "request_attributes"))
		conv_err(c, "request_attributes",
			 "not supported by Arion (no CEL attributes are sent)");
	if (pb_len(p, "response_attributes"))
		conv_err(c, "response_attributes",
			 "not supported by Arion (no CEL attributes are sent)");
	o->message_timeout_ms = 200; /* Envoy's */
	hour_at_most(c, p, "message_timeout", &o->message_timeout_ms);
	hour_at_most(c, p, "max_message_timeout", &o->max_message_timeout_ms);
	upb_StringView sp = pb_str(p, "stat_prefix");
	if (sp.size)
		o->stat_prefix = conv_str(c, sp);
	struct pb mr = pb_msg(p, "mutation_rules");
	if (mr.m) {
		size_t m = conv_push(c, "mutation_rules");
		mutation_rules(c, mr, o);
		conv_pop(c, m);
	}
	struct pb fr = pb_msg(p, "forward_rules");
	if (fr.m) {
		size_t m = conv_push(c, "forward_rules");
		conv_only(c, fr, "allowed_headers,disallowed_headers");
		str_list(c, fr, "allowed_headers", &o->fwd_allow, &o->n_fwd_allow);
		str_list(c, fr, "disallowed_headers", &o->fwd_deny, &o->n_fwd_deny);
		conv_pop(c, m);
	}
	if (pb_has(p, "filter_metadata"))
		conv_err(c, "filter_metadata",
			 "not supported by Arion (no ext_proc logging information is kept)");
	/* a mode_override asking for a mode Arion does not build is ignored
	 * whole (http_ext_proc.c) */
	o->allow_mode_override = pb_bool(p, "allow_mode_override");
	o->disable_immediate_response = pb_bool(p, "disable_immediate_response");
	if (pb_has(p, "metadata_options"))
		conv_err(c, "metadata_options",
			 "not supported by Arion (no dynamic metadata is forwarded or received)");
	if (pb_bool(p, "observability_mode"))
		conv_err(c, "observability_mode", "true: not supported by Arion");
	if (pb_has(p, "deferred_close_timeout"))
		conv_err(c, "deferred_close_timeout",
			 "only with observability_mode, which Arion does not support");
	o->disable_clear_route_cache = pb_bool(p, "disable_clear_route_cache");
	int32_t rca = pb_i32(p, "route_cache_action");
	if (rca < 0 || rca > 2)
		conv_err(c, "route_cache_action", "unknown value %d", rca);
	if (o->disable_clear_route_cache && rca != 0)
		conv_err(c, "route_cache_action",
			 "set with disable_clear_route_cache (Envoy takes one of them)");
	/* DEFAULT: a response's clear_route_cache; CLEAR: any header
	 * mutation; RETAIN: never (disable_clear_route_cache) */
	o->clear_route_cache_always = rca == 1;
	if (rca == 2)
		o->disable_clear_route_cache = true;
	return o;
}

const struct arn_cfg_ext_proc_route *conv_ext_proc_route(struct conv *c, struct pb p)
{
	struct arn_cfg_ext_proc_route *o = CONV_NEW(c, struct arn_cfg_ext_proc_route, 1);
	if (!o)
		return NULL;
	conv_only(c, p, "disabled,overrides");
	struct pb ov = pb_msg(p, "overrides");
	if (pb_has(p, "disabled")) {
		if (!pb_bool(p, "disabled"))
			conv_err(c, "disabled", "false: Envoy accepts only true");
		o->disabled = true;
		return o;
	}
	if (!ov.m) {
		conv_err(c, "", "neither disabled nor overrides (Envoy requires one)");
		return o;
	}
	size_t m = conv_push(c, "overrides");
	conv_only(c, ov,
		  "processing_mode,async_mode,request_attributes,response_attributes,"
		  "grpc_service,metadata_options,grpc_initial_metadata");
	struct pb pm = pb_msg(ov, "processing_mode");
	if (pm.m) {
		size_t m2 = conv_push(c, "processing_mode");
		processing_mode(c, pm, &o->mode);
		o->has_mode = true;
		conv_pop(c, m2);
	}
	if (pb_bool(ov, "async_mode"))
		conv_err(c, "async_mode", "true: not supported (nor by Envoy)");
	if (pb_len(ov, "request_attributes"))
		conv_err(c, "request_attributes",
			 "not supported by Arion (no CEL attributes are sent)");
	if (pb_len(ov, "response_attributes"))
		conv_err(c, "response_attributes",
			 "not supported by Arion (no CEL attributes are sent)");
	if (pb_has(ov, "metadata_options"))
		conv_err(c, "metadata_options",
			 "not supported by Arion (no dynamic metadata is forwarded or received)");
	struct pb gs = pb_msg(ov, "grpc_service");
	if (gs.m) {
		size_t m2 = conv_push(c, "grpc_service");
		service(c, gs, &o->svc);
		o->has_svc = true;
		conv_pop(c, m2);
	}
	/* grpc_initial_metadata: HeaderValues added to the service's
	 * (Envoy's mergeGrpcInitialMetadata) */
	conv_grpc_metadata(c, ov, "grpc_initial_metadata", ARN_CFG_EXT_PROC_MD_MAX, "stream",
			   &o->md, &o->n_md);
	conv_pop(c, m);
	return o;
}
