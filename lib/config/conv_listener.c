/*
 * Listener (with its filter chains and HttpConnectionManager)
 * -> struct arn_cfg_listener. TLS contexts: conv_tls.c.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arn_access_log.h"
#include "arn_bootstrap.h"
#include "arn_proto.h"
#include "arn_rules.h"
#include "config_int.h"
#include "upb/decode.h"
#include "upb/encode.h"

#define ECHO_TYPE "envoy.extensions.filters.network.echo.v3.Echo"
#define ROUTER_TYPE "envoy.extensions.filters.http.router.v3.Router"
#define HEALTH_CHECK_TYPE "envoy.extensions.filters.http.health_check.v3.HealthCheck"
#define GRPC_STATS_TYPE "envoy.extensions.filters.http.grpc_stats.v3.FilterConfig"
#define COMPRESSOR_TYPE "envoy.extensions.filters.http.compressor.v3.Compressor"
#define DECOMPRESSOR_TYPE "envoy.extensions.filters.http.decompressor.v3.Decompressor"
#define GRPC_WEB_TYPE "envoy.extensions.filters.http.grpc_web.v3.GrpcWeb"
#define TLS_INSPECTOR_TYPE "envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector"
#define PROXY_PROTOCOL_TYPE "envoy.extensions.filters.listener.proxy_protocol.v3.ProxyProtocol"

static int cidr_list(struct conv *c, struct pb p, const char *f, struct arn_cfg_cidr **out,
		     size_t *n)
{
	size_t len = pb_len(p, f);
	if (!len)
		return 0;
	*out = CONV_NEW(c, struct arn_cfg_cidr, len);
	if (!*out)
		return -ENOMEM;
	*n = len;
	for (size_t i = 0; i < len; i++) {
		size_t m = conv_push(c, "%s[%zu]", f, i);
		conv_cidr(c, pb_at(p, f, i), &(*out)[i]);
		conv_pop(c, m);
	}
	return 0;
}

/*
 * envoy.filters.http.health_check with Envoy's checks: pass_through_mode is
 * required, cache_time only makes sense in pass-through mode.
 */
static struct arn_cfg_hc_filter *health_check_filter(struct conv *c, struct pb any)
{
	struct pb hc = conv_any(c, any, HEALTH_CHECK_TYPE);
	struct arn_cfg_hc_filter *out = CONV_NEW(c, struct arn_cfg_hc_filter, 1);
	if (!hc.m || !out)
		return NULL;
	conv_only(c, hc, "pass_through_mode,cache_time,cluster_min_healthy_percentages,headers");
	if (!pb_wrapped_bool(hc, "pass_through_mode", &out->pass_through))
		conv_err(c, "pass_through_mode", "missing (Envoy requires it)");
	if (conv_duration(c, hc, "cache_time", &out->cache_time_ms, false) && !out->pass_through &&
	    out->cache_time_ms)
		conv_err(c, "cache_time",
			 "only applies with pass_through_mode: true (Envoy refuses it otherwise)");
	size_t nh = pb_len(hc, "headers");
	if (nh == 0)
		conv_err(c, "headers",
			 "empty: name the health check requests (for example :path exact "
			 "/healthz), or every request would be one");
	out->headers = CONV_NEW(c, struct arn_cfg_header_match, nh ? nh : 1);
	for (size_t i = 0; out->headers && i < nh; i++) {
		size_t m = conv_push(c, "headers[%zu]", i);
		conv_header_matcher(c, pb_at(hc, "headers", i), &out->headers[i]);
		conv_pop(c, m);
	}
	out->n_headers = out->headers ? nh : 0;
	const upb_Map *map =
	    upb_Message_Get(hc.m, pb_field(hc, "cluster_min_healthy_percentages")).map_val;
	size_t nm = map ? upb_Map_Size(map) : 0;
	if (nm) {
		out->min_healthy = CONV_NEW(c, struct arn_cfg_hc_min_healthy, nm);
		size_t iter = kUpb_Map_Begin;
		while (out->min_healthy && upb_MapIterator_Next(map, &iter)) {
			upb_StringView key = upb_MapIterator_Key(map, iter).str_val;
			const upb_Message *pm = upb_MapIterator_Value(map, iter).msg_val;
			size_t m = conv_push(c, "cluster_min_healthy_percentages[%.*s]",
					     (int)key.size, key.data);
			struct pb pct = {pm, arn_proto_msgdef("envoy.type.v3.Percent")};
			double v = 0;
			if (pct.m) {
				const upb_FieldDef *f = pb_field(pct, "value");
				v = upb_Message_Get(pct.m, f).double_val;
			}
			if (key.size == 0)
				conv_err(c, "", "empty cluster name");
			if (!(v >= 0 && v <= 100))
				conv_err(c, "value", "must be between 0 and 100");
			struct arn_cfg_hc_min_healthy *e = &out->min_healthy[out->n_min_healthy++];
			conv_refs(c, &e->cluster, key);
			/* Envoy truncates: 12.5 % is 12 % */
			e->percent = v >= 0 && v <= 100 ? (uint32_t)v : 100;
			conv_pop(c, m);
		}
	}
	return out;
}

static void unref_cb(void *o)
{
	arn_cfg_obj_unref(o);
}

/*
 * http2_protocol_options with Envoy's defaults and ranges. The fields
 * Arion does not apply are refused rather than ignored: allow_connect
 * (CONNECT over HTTP/2 is not proxied), allow_metadata,
 * custom_settings_parameters. connection_keepalive is read here and
 * applied to both sides (connection_idle_interval to upstream connections
 * only: h2_keepalive_downstream).
 */
/*
 * connection_keepalive (KeepaliveSettings) with Envoy's rules: timeout
 * required, durations at least 1 ms, interval_jitter a percentage (15 by
 * default), connection_idle_interval at least 1 ms.
 */
static void h2_keepalive(struct conv *c, struct pb k, struct arn_cfg_h2 *o)
{
	if (!k.m)
		return;
	size_t m = conv_push(c, "connection_keepalive");
	conv_only(c, k, "interval,timeout,interval_jitter,connection_idle_interval");
	o->keepalive_jitter_pct = 15;
	conv_duration(c, k, "interval", &o->keepalive_interval_ms, false);
	if (!conv_duration(c, k, "timeout", &o->keepalive_timeout_ms, true))
		conv_err(c, "timeout", "missing: how long to wait for a PING ACK");
	conv_duration(c, k, "connection_idle_interval", &o->keepalive_idle_interval_ms, true);
	struct pb j = pb_msg(k, "interval_jitter");
	if (j.m) {
		double v = upb_Message_Get(j.m, pb_field(j, "value")).double_val;
		if (!(v >= 0 && v <= 100))
			conv_err(c, "interval_jitter", "%g: must be between 0 and 100", v);
		else
			o->keepalive_jitter_pct = v;
	}
	conv_pop(c, m);
}

void arn_conv_h2_options(struct conv *c, struct pb p, struct arn_cfg_h2 *o)
{
	*o = (struct arn_cfg_h2){
	    .hpack_table_size = 4096,
	    .max_concurrent_streams = 2147483647u,
	    .initial_stream_window_size = 268435456u,
	    .initial_connection_window_size = 268435456u,
	    .max_outbound_frames = 10000,
	    .max_outbound_control_frames = 1000,
	    .max_consecutive_inbound_frames_with_empty_payload = 1,
	    .max_inbound_priority_frames_per_stream = 100,
	    .max_inbound_window_update_frames_per_data_frame_sent = 10,
	};
	if (!p.m)
		return;
	size_t m = conv_push(c, "http2_protocol_options");
	conv_only(c, p,
		  "hpack_table_size,max_concurrent_streams,initial_stream_window_size,"
		  "initial_connection_window_size,max_outbound_frames,max_outbound_control_"
		  "frames,max_consecutive_inbound_frames_with_empty_payload,max_inbound_"
		  "priority_frames_per_stream,max_inbound_window_update_frames_per_data_frame_"
		  "sent,stream_error_on_invalid_http_messaging,override_stream_error_on_"
		  "invalid_http_message,connection_keepalive");
	uint32_t v;
	pb_wrapped_u32(p, "hpack_table_size", &o->hpack_table_size);
	if (pb_wrapped_u32(p, "max_concurrent_streams", &v)) {
		if (v < 1 || v > 2147483647u)
			conv_err(c, "max_concurrent_streams", "%u: must be 1 to 2147483647", v);
		o->max_concurrent_streams = v;
	}
	/* Envoy's range for both windows: 65535 to 2147483647 */
	if (pb_wrapped_u32(p, "initial_stream_window_size", &v)) {
		if (v < 65535 || v > 2147483647u)
			conv_err(c, "initial_stream_window_size", "%u: must be 65535 to 2147483647",
				 v);
		o->initial_stream_window_size = v;
	}
	if (pb_wrapped_u32(p, "initial_connection_window_size", &v)) {
		if (v < 65535 || v > 2147483647u)
			conv_err(c, "initial_connection_window_size",
				 "%u: must be 65535 to 2147483647", v);
		o->initial_connection_window_size = v;
	}
	if (pb_wrapped_u32(p, "max_outbound_frames", &v)) {
		if (v < 1)
			conv_err(c, "max_outbound_frames", "must be at least 1");
		o->max_outbound_frames = v;
	}
	if (pb_wrapped_u32(p, "max_outbound_control_frames", &v)) {
		if (v < 1)
			conv_err(c, "max_outbound_control_frames", "must be at least 1");
		o->max_outbound_control_frames = v;
	}
	pb_wrapped_u32(p, "max_consecutive_inbound_frames_with_empty_payload",
		       &o->max_consecutive_inbound_frames_with_empty_payload);
	pb_wrapped_u32(p, "max_inbound_priority_frames_per_stream",
		       &o->max_inbound_priority_frames_per_stream);
	if (pb_wrapped_u32(p, "max_inbound_window_update_frames_per_data_frame_sent", &v)) {
		if (v < 1)
			conv_err(c, "max_inbound_window_update_frames_per_data_frame_sent",
				 "must be at least 1");
		o->max_inbound_window_update_frames_per_data_frame_sent = v;
	}
	h2_keepalive(c, pb_msg(p, "connection_keepalive"), o);
	conv_pop(c, m);
}

/* A connection manager's connection_keepalive: PINGs to the client every
 * interval, the connection closed when one is not answered within timeout
 * (lib/http/http_h2.c). connection_idle_interval is a client codec's
 * option (a PING ahead of a new stream): Envoy's server codec never reads
 * it, so a connection manager accepts it and it does nothing, as in Envoy. */
static void h2_keepalive_downstream(struct arn_cfg_h2 *o)
{
	o->keepalive_idle_interval_ms = 0;
}

/*
 * envoy.filters.http.grpc_stats: what Arion counts is the calls' outcome
 * (success, failure, total, per grpc-status); the fields that ask for more
 * (message counts in filter state, an allowlist of methods, per-method
 * upstream_rq_time, renamed services) are refused rather than ignored, so
 * a dashboard is not left waiting for stats that never come. Like Envoy's
 * v3 default, per-method names only with stats_for_all_methods: true.
 */
static void grpc_stats_filter(struct conv *c, struct pb any, struct arn_cfg_hcm *out)
{
	struct pb g = conv_any(c, any, GRPC_STATS_TYPE);
	out->grpc_stats = true;
	if (!g.m)
		return;
	conv_only(c, g,
		  "emit_filter_state,stats_for_all_methods,enable_upstream_stats,"
		  "replace_dots_in_grpc_service_name");
	/* emit_filter_state: the call's message counts in filter state, which
	 * only %FILTER_STATE(...)% access log operators read; Arion has none
	 * (a format naming one is refused), so there is nothing to differ:
	 * accepted (Envoy Gateway sets it on every gRPC listener) */
	if (pb_bool(g, "enable_upstream_stats"))
		conv_err(c, "enable_upstream_stats",
			 "not supported by Arion: cluster.<c>.upstream_rq_time has the times");
	if (pb_bool(g, "replace_dots_in_grpc_service_name"))
		conv_err(c, "replace_dots_in_grpc_service_name",
			 "not supported by Arion: stat names keep the service's dots");
	bool all = false;
	if (pb_wrapped_bool(g, "stats_for_all_methods", &all))
		out->grpc_stats_all_methods = all;
}

/* HttpFilter.disabled of the filter about to be added to @p out (of @p nf):
 * off unless a route's per-filter configuration names it. @return false
 * out of memory. */
static bool filter_off(struct conv *c, struct arn_cfg_hcm *out, size_t nf)
{
	if (!out->http_filter_off) {
		bool *o = CONV_NEW(c, bool, nf);
		if (!o)
			return false;
		out->http_filter_off = o;
	}
	out->http_filter_off[out->n_http_filters] = true;
	return true;
}

static struct arn_cfg_hcm *hcm(struct conv *c, struct pb any)
{
	struct pb h = conv_any(c, any, ARN_TYPE_HCM);
	struct arn_cfg_hcm *out = CONV_NEW(c, struct arn_cfg_hcm, 1);
	if (!h.m || !out)
		return NULL;
	conv_only(
	    c, h,
	    "codec_type,stat_prefix,rds,route_config,http_filters,add_user_agent,common_http_"
	    "protocol_options,http_protocol_options,server_name,server_header_transformation,"
	    "max_request_headers_kb,stream_idle_timeout,request_timeout,request_headers_"
	    "timeout,drain_timeout,delayed_close_timeout,access_log,use_remote_address,xff_"
	    "num_trusted_hops,skip_xff_append,generate_request_id,preserve_external_request_"
	    "id,always_set_request_id_in_response,normalize_path,merge_slashes,strip_matching_"
	    "host_port,strip_any_host_port,stream_error_on_invalid_http_message,strip_"
	    "trailing_host_dot,path_with_escaped_slashes_action,scoped_routes,upgrade_configs,"
	    "http2_protocol_options,local_reply_config,tracing,"
	    "forward_client_cert_details,set_current_client_cert_details,"
	    "internal_address_config,original_ip_detection_extensions");
	/* scoped_routes is listed so that arn_rules_hcm() alone reports it */
	upb_StringView sp = pb_str(h, "stat_prefix");
	if (sp.size == 0)
		conv_err(c, "stat_prefix", "missing (Envoy requires it)");
	out->stat_prefix = conv_str(c, sp);
	if (pb_has(h, "tracing"))
		out->tracing = conv_tracing(c, pb_msg(h, "tracing"));
	switch (pb_i32(h, "codec_type")) {
	case 0:
		out->codec = ARN_CFG_CODEC_AUTO;
		break;
	case 1:
		out->codec = ARN_CFG_CODEC_HTTP1;
		break;
	case 2:
		out->codec = ARN_CFG_CODEC_HTTP2;
		break;
	default:
		conv_err(c, "codec_type",
			 "Arion speaks HTTP/1.1 and HTTP/2: use AUTO, HTTP1 or HTTP2");
	}
	arn_conv_h2_options(c, pb_msg(h, "http2_protocol_options"), &out->h2);
	h2_keepalive_downstream(&out->h2);
	const char *rs = pb_which(h, "route_specifier");
	if (!rs) {
		conv_err(c, "", "no routes: set route_config or rds");
	} else if (strcmp(rs, "route_config") == 0) {
		size_t m = conv_push(c, "route_config");
		struct arn_cfg_obj *rt =
		    arn_conv_route_table(c, pb_msg(h, "route_config"), true, NULL);
		if (rt) {
			out->inline_routes = (struct arn_cfg_route_table *)rt;
			arn_pool_on_free(c->pool, unref_cb, rt);
		}
		conv_pop(c, m);
	} else if (strcmp(rs, "rds") == 0) {
		struct pb rds = pb_msg(h, "rds");
		upb_StringView rn = pb_str(rds, "route_config_name");
		conv_refs(c, &out->rds, rn);
		if (rn.size)
			conv_dep(c, ARN_CFG_ROUTE, rn.data, rn.size, true,
				 conv_fetch_timeout(c, pb_msg(rds, "config_source")));
	}
	/* http_filters */
	size_t nf = pb_len(h, "http_filters");
	out->http_filters = CONV_NEW(c, uint8_t, nf ? nf : 1);
	out->http_filter_names = CONV_NEW(c, const char *, nf ? nf : 1);
	out->http_filter_cfgs = CONV_NEW(c, const void *, nf ? nf : 1);
	if (!out->http_filter_names || !out->http_filter_cfgs)
		return NULL;
	bool router = false;
	unsigned ext_authz = 0;
	for (size_t i = 0; out->http_filters && i < nf; i++) {
		struct pb hf = pb_at(h, "http_filters", i);
		size_t m = conv_push(c, "http_filters[%zu]", i);
		conv_only(c, hf, "name,typed_config,is_optional,disabled");
		bool off = pb_newer_bool(hf, "disabled");
		upb_StringView name = pb_str(hf, "name");
		struct pb tc = pb_msg(hf, "typed_config");
		upb_StringView tn = tc.m ? arn_proto_any_type_name(tc.m) : name;
		if (router)
			conv_err(c, "",
				 "'%.*s' comes after the router, which must be the last filter",
				 (int)name.size, name.data);
		uint8_t l4kind = 0;
		const void *l4cfg = NULL;
		out->http_filter_names[out->n_http_filters] = conv_str(c, name);
		if (conv_l4_http_filter(c, tc, tn, &l4kind, &l4cfg)) {
			if (l4kind == ARN_CFG_HF_EXT_AUTHZ && l4cfg && ext_authz++)
				conv_err(c, "",
					 "a second ext_authz filter: Arion runs one per "
					 "connection manager");
			if (l4cfg) {
				if (off && !filter_off(c, out, nf))
					return NULL;
				out->http_filter_cfgs[out->n_http_filters] = l4cfg;
				out->http_filters[out->n_http_filters++] = l4kind;
			}
			off = false;
		} else if (arn_sv_eq(tn, ROUTER_TYPE) ||
			   (!tc.m && arn_sv_eq(name, "envoy.filters.http.router"))) {
			if (tc.m) {
				size_t m2 = conv_push(c, "typed_config");
				struct pb r = conv_any(c, tc, ROUTER_TYPE);
				/* dynamic_stats and start_child_span change nothing Arion
				 * emits (no per-route dynamic stats, no tracing) */
				conv_only(c, r,
					  "dynamic_stats,start_child_span,suppress_envoy_headers,"
					  "respect_expected_rq_timeout");
				if (r.m) {
					out->suppress_envoy_headers =
					    pb_bool(r, "suppress_envoy_headers");
					if (pb_bool(r, "respect_expected_rq_timeout"))
						conv_err(c, "respect_expected_rq_timeout",
							 "not supported by Arion: the route's "
							 "timeout applies");
				}
				conv_pop(c, m2);
			}
			out->http_filters[out->n_http_filters++] = ARN_CFG_HF_ROUTER;
			router = true;
			if (off)
				conv_err(c, "disabled",
					 "the router is the terminal filter: it cannot be "
					 "disabled");
			off = false;
		} else if (arn_sv_eq(tn, HEALTH_CHECK_TYPE)) {
			size_t m2 = conv_push(c, "typed_config");
			if (out->health_check)
				conv_err(c, "",
					 "a second health_check filter: Arion runs one per "
					 "connection manager");
			else
				out->health_check = health_check_filter(c, tc);
			conv_pop(c, m2);
			if (off && !filter_off(c, out, nf))
				return NULL;
			off = false;
			out->http_filters[out->n_http_filters++] = ARN_CFG_HF_HEALTH_CHECK;
		} else if (arn_sv_eq(tn, GRPC_STATS_TYPE)) {
			size_t m2 = conv_push(c, "typed_config");
			if (out->grpc_stats)
				conv_err(c, "",
					 "a second grpc_stats filter: Arion counts once per "
					 "connection manager");
			grpc_stats_filter(c, tc, out);
			conv_pop(c, m2);
			out->grpc_stats_off = off;
			out->grpc_stats_name = out->http_filter_names[out->n_http_filters];
			off = false;
		} else if (arn_sv_eq(tn, GRPC_WEB_TYPE) ||
			   (!tc.m && arn_sv_eq(name, "envoy.filters.http.grpc_web"))) {
			/* GrpcWeb has no field (Envoy's API, every version) */
			size_t m2 = conv_push(c, "typed_config");
			if (tc.m) {
				struct pb g = conv_any(c, tc, GRPC_WEB_TYPE);
				if (g.m)
					conv_only(c, g, "");
			}
			if (out->grpc_web)
				conv_err(c, "",
					 "a second grpc_web filter: it would translate the "
					 "gRPC-Web request twice");
			out->grpc_web = true;
			conv_pop(c, m2);
			/* in the chain, for HttpFilter.disabled and a route's
			 * FilterConfig (http_filter_kind_off) */
			if (off && !filter_off(c, out, nf))
				return NULL;
			off = false;
			out->http_filters[out->n_http_filters++] = ARN_CFG_HF_GRPC_WEB;
		} else if (arn_sv_eq(tn, COMPRESSOR_TYPE)) {
			size_t m2 = conv_push(c, "typed_config");
			size_t had = out->n_compressors;
			conv_compressor_filter(c, tc, nf, out);
			conv_pop(c, m2);
			if (out->n_compressors > had) {
				struct arn_cfg_compressor *cf =
				    (struct arn_cfg_compressor *)&out->compressors[had];
				cf->off = off;
				cf->filter_name = out->http_filter_names[out->n_http_filters];
			}
			off = false;
		} else if (arn_sv_eq(tn, DECOMPRESSOR_TYPE)) {
			size_t m2 = conv_push(c, "typed_config");
			conv_decompressor_filter(c, tc, nf, out);
			conv_pop(c, m2);
			if (off)
				conv_err(c, "disabled",
					 "not supported by Arion for the decompressor filter: "
					 "remove the filter instead");
			off = false;
		} else if (arn_sv_eq(tn, ARN_TYPE_MCP_GATEWAY)) {
			/* arion.filters.http.mcp_gateway (X14): its ToolSet is
			 * subscribed on demand and warmed on (conv_toolset.c) */
			size_t m2 = conv_push(c, "typed_config");
			if (out->mcp_gateway)
				conv_err(c, "",
					 "a second mcp_gateway filter: Arion runs one per "
					 "connection manager");
			else
				out->mcp_gateway = conv_mcp_filter(c, tc);
			conv_pop(c, m2);
			if (off && !filter_off(c, out, nf))
				return NULL;
			off = false;
			out->http_filters[out->n_http_filters++] = ARN_CFG_HF_MCP_GATEWAY;
		} else if (pb_bool(hf, "is_optional")) {
			/* Envoy skips an optional filter it does not know; so do we */
			off = false;
		} else {
			conv_err(c, "",
				 "HTTP filter '%.*s' (%.*s) is not supported by Arion; set "
				 "is_optional: true to run without it",
				 (int)name.size, name.data, (int)tn.size, tn.data);
		}
		conv_pop(c, m);
	}
	if (!router)
		conv_err(c, "http_filters",
			 "the last HTTP filter must be the router "
			 "(envoy.filters.http.router)");
	/* timeouts and limits, with Envoy's defaults */
	out->idle_timeout_ms = 3600 * 1000;
	out->max_headers_count = 100;
	struct pb cpo = pb_msg(h, "common_http_protocol_options");
	if (cpo.m) {
		size_t m = conv_push(c, "common_http_protocol_options");
		conv_only(c, cpo,
			  "idle_timeout,max_headers_count,max_requests_per_connection,"
			  "max_connection_duration,headers_with_underscores_action");
		conv_duration(c, cpo, "idle_timeout", &out->idle_timeout_ms, false);
		conv_headers_count(c, cpo, &out->max_headers_count);
		pb_wrapped_u32(cpo, "max_requests_per_connection",
			       &out->max_requests_per_connection);
		conv_duration(c, cpo, "max_connection_duration", &out->max_connection_duration_ms,
			      false);
		int32_t u = pb_i32(cpo, "headers_with_underscores_action");
		if (u < ARN_CFG_UNDERSCORES_ALLOW || u > ARN_CFG_UNDERSCORES_DROP)
			conv_err(c, "headers_with_underscores_action", "%d: unknown value", u);
		else
			out->headers_with_underscores = (uint8_t)u;
		conv_pop(c, m);
	}
	struct pb h1 = pb_msg(h, "http_protocol_options");
	if (h1.m) {
		size_t m = conv_push(c, "http_protocol_options");
		conv_only(c, h1,
			  "accept_http_10,default_host_for_http_10,enable_trailers,header_key_format");
		conv_header_key_format(c, h1);
		out->accept_http_10 = pb_bool(h1, "accept_http_10");
		out->enable_trailers = pb_bool(h1, "enable_trailers");
		if (pb_has(h1, "default_host_for_http_10"))
			out->default_host_for_http_10 =
			    conv_str(c, pb_str(h1, "default_host_for_http_10"));
		conv_pop(c, m);
	}
	out->max_request_headers_kb = 60;
	uint32_t kb;
	if (pb_wrapped_u32(h, "max_request_headers_kb", &kb)) {
		if (kb == 0 || kb > 8192)
			conv_err(c, "max_request_headers_kb", "%u: must be 1 to 8192", kb);
		out->max_request_headers_kb = kb;
	}
	out->stream_idle_timeout_ms = 300 * 1000;
	conv_duration(c, h, "stream_idle_timeout", &out->stream_idle_timeout_ms, false);
	conv_duration(c, h, "request_timeout", &out->request_timeout_ms, false);
	/* Arion's deviation from Envoy (off there): a head must arrive within
	 * 10 s unless the HCM says otherwise (0 turns it off), as HAProxy's
	 * usual "timeout http-request"; slow heads cannot hold a worker's
	 * connections open for ever (issue 12, docs/http.md) */
	out->request_headers_timeout_ms = 10 * 1000;
	conv_duration(c, h, "request_headers_timeout", &out->request_headers_timeout_ms, false);
	out->drain_timeout_ms = 5000;
	conv_duration(c, h, "drain_timeout", &out->drain_timeout_ms, false);
	bool b;
	if (pb_wrapped_bool(h, "use_remote_address", &b))
		out->use_remote_address = b;
	out->xff_num_trusted_hops = pb_u32(h, "xff_num_trusted_hops");
	/* a header value, written into every response and into its pre-built
	 * line below as it is */
	out->server_name = pb_has(h, "server_name")
			       ? conv_hdr_str(c, "server_name", pb_str(h, "server_name"))
			       : "envoy";
	/* measured once here: every response's server header uses it */
	out->server_name_len = strlen(out->server_name);
	/* and its whole line, which HTTP/1 responses copy in one piece */
	char *sl = conv_alloc(c, out->server_name_len + 11);
	if (sl) {
		memcpy(sl, "server: ", 8);
		memcpy(sl + 8, out->server_name, out->server_name_len);
		memcpy(sl + 8 + out->server_name_len, "\r\n", 3);
		out->server_line = sl;
	}
	int32_t sht = pb_i32(h, "server_header_transformation");
	if (sht < 0 || sht > 2)
		conv_err(c, "server_header_transformation", "unknown value");
	out->server_header_transformation = (uint8_t)sht;
	out->generate_request_id = true;
	if (pb_wrapped_bool(h, "generate_request_id", &b))
		out->generate_request_id = b;
	out->preserve_external_request_id = pb_bool(h, "preserve_external_request_id");
	if (pb_wrapped_bool(h, "normalize_path", &b))
		out->normalize_path = b;
	out->merge_slashes = pb_bool(h, "merge_slashes");
	out->strip_matching_host_port = pb_bool(h, "strip_matching_host_port");
	out->strip_any_host_port = pb_bool(h, "strip_any_host_port");
	if (out->strip_matching_host_port && out->strip_any_host_port)
		conv_err(c, "strip_any_host_port",
			 "set only one of strip_matching_host_port and "
			 "strip_any_host_port");
	int32_t esc = pb_i32(h, "path_with_escaped_slashes_action");
	if (esc < 0 || esc > ARN_CFG_ESC_SLASHES_FORWARD)
		conv_err(c, "path_with_escaped_slashes_action", "%d: unknown value", esc);
	else if (esc > ARN_CFG_ESC_SLASHES_KEEP)
		out->escaped_slashes = (uint8_t)esc;
	out->head_policies = out->escaped_slashes || out->headers_with_underscores;
	conv_access_logs(c, h, "access_log", &out->access_logs, &out->n_access_logs);
	if (pb_has(h, "local_reply_config"))
		conv_local_reply(c, pb_msg(h, "local_reply_config"), &out->local_reply);
	out->delayed_close_timeout_ms = 1000;
	conv_duration(c, h, "delayed_close_timeout", &out->delayed_close_timeout_ms, false);
	bool aua = false;
	pb_wrapped_bool(h, "add_user_agent", &aua);
	out->add_user_agent = aua;
	out->skip_xff_append = pb_bool(h, "skip_xff_append");
	conv_hcm_client(c, h, out);
	out->always_set_request_id_in_response = pb_bool(h, "always_set_request_id_in_response");
	/* http_hcm.c's head_policies marks each stream's response for it */
	out->head_policies |= out->always_set_request_id_in_response;
	bool seo = false;
	pb_wrapped_bool(h, "stream_error_on_invalid_http_message", &seo);
	out->stream_error_on_invalid_http_message = seo;
	out->strip_trailing_host_dot = pb_bool(h, "strip_trailing_host_dot");
	conv_upgrades(c, h, false, &out->upgrades, &out->n_upgrades);
	return out;
}

static void fc_match(struct conv *c, struct pb m, struct arn_cfg_fc_match *out)
{
	if (!m.m)
		return;
	size_t m0 = conv_push(c, "filter_chain_match");
	conv_only(c, m,
		  "destination_port,prefix_ranges,server_names,transport_protocol,"
		  "application_protocols,source_prefix_ranges,direct_source_prefix_ranges,"
		  "source_ports,source_type");
	uint32_t port = 0;
	if (pb_wrapped_u32(m, "destination_port", &port) && (port == 0 || port > 65535))
		conv_err(c, "destination_port", "%u is not a port", port);
	out->dst_port = (uint16_t)port;
	cidr_list(c, m, "prefix_ranges", &out->dst_prefixes, &out->n_dst_prefixes);
	cidr_list(c, m, "source_prefix_ranges", &out->src_prefixes, &out->n_src_prefixes);
	cidr_list(c, m, "direct_source_prefix_ranges", &out->direct_src_prefixes,
		  &out->n_direct_src_prefixes);
	int32_t st = pb_i32(m, "source_type");
	if (st < 0 || st > 2)
		conv_err(c, "source_type", "unknown value %d", st);
	else
		out->source_type = (uint8_t)st;
	conv_str_list(c, m, "server_names", &out->server_names, &out->n_server_names, true);
	for (size_t i = 0; i < out->n_server_names; i++) {
		const char *s = out->server_names[i];
		const char *star = s ? strchr(s, '*') : NULL;
		if (star && (star != s || s[1] != '.' || strchr(s + 1, '*')))
			conv_err(c, "server_names", "'%s': a wildcard must be a leading '*.'", s);
	}
	if (pb_has(m, "transport_protocol")) {
		upb_StringView tp = pb_str(m, "transport_protocol");
		if (!arn_sv_eq(tp, "tls") && !arn_sv_eq(tp, "raw_buffer"))
			conv_err(c, "transport_protocol", "'%.*s': only tls and raw_buffer",
				 (int)tp.size, tp.data);
		out->transport_protocol = conv_str(c, tp);
	}
	conv_str_list(c, m, "application_protocols", &out->alpn, &out->n_alpn, false);
	size_t np = pb_len(m, "source_ports");
	if (np) {
		out->src_ports = CONV_NEW(c, uint16_t, np);
		if (out->src_ports) {
			out->n_src_ports = np;
			for (size_t i = 0; i < np; i++) {
				uint32_t p = pb_u32_at(m, "source_ports", i);
				if (p == 0 || p > 65535)
					conv_err(c, "source_ports", "%u is not a port", p);
				out->src_ports[i] = (uint16_t)p;
			}
		}
	}
	conv_pop(c, m0);
}

/*
 * FNV-1a of @p p's deterministic encoding (fields in number order, map
 * entries sorted), so that the same message from a control plane hashes
 * the same in two pushes. 0 if it cannot be encoded (out of memory): a
 * chain hashed 0 is never taken for an unchanged one (see below).
 */
static uint64_t pb_hash(struct conv *c, const upb_Message *m, const upb_MessageDef *d)
{
	char *buf = NULL;
	size_t len = 0;
	if (!m || upb_Encode(m, upb_MessageDef_MiniTable(d), kUpb_EncodeOption_Deterministic,
			     c->arena, &buf, &len) != kUpb_EncodeStatus_Ok)
		return 0;
	uint64_t h = arn_cfg_hash(buf, len);
	return h ? h : 1;
}

/*
 * The Listener's bytes without its filter chains: a copy (decoded from its
 * own encoding into the scratch arena) with filter_chains and
 * default_filter_chain cleared, as Envoy's filterChainOnlyChange() compares
 * two versions ignoring those fields. 0 on failure: never equal to a
 * successful hash, so the update is then a full replacement.
 */
static uint64_t listener_base_hash(struct conv *c, struct pb l)
{
	const upb_MiniTable *mt = upb_MessageDef_MiniTable(l.d);
	char *buf = NULL;
	size_t len = 0;
	if (upb_Encode(l.m, mt, 0, c->arena, &buf, &len) != kUpb_EncodeStatus_Ok)
		return 0;
	upb_Message *copy = upb_Message_New(l.d, c->arena);
	if (!copy || upb_Decode(buf, len, copy, mt, NULL, 0, c->arena) != kUpb_DecodeStatus_Ok)
		return 0;
	static const char *const skip[] = {"filter_chains", "default_filter_chain",
					   "filter_chain_matcher"};
	for (size_t i = 0; i < sizeof(skip) / sizeof(skip[0]); i++) {
		const upb_FieldDef *f = upb_MessageDef_FindFieldByName(l.d, skip[i]);
		if (f)
			upb_Message_ClearField(copy, f);
	}
	return pb_hash(c, copy, l.d);
}

/*
 * The network filters before the terminal one, as the data plane can run
 * them: echo runs none (its connections are never admitted through them,
 * so rbac would not deny nor connection_limit count), and a connection
 * records in one byte which connection_limit filters count it.
 */
static void l4_filters_check(struct conv *c, const struct arn_cfg_filter_chain *out)
{
	size_t ncl = 0;
	for (size_t i = 0; i < out->n_l4_filters; i++)
		ncl += out->l4_filters[i].kind == ARN_CFG_L4_CONNECTION_LIMIT;
	if (ncl > ARN_CFG_L4_MAX_CONNECTION_LIMITS)
		conv_err(c, "filters",
			 "%zu connection_limit filters: Arion runs at most %d in one filter chain",
			 ncl, ARN_CFG_L4_MAX_CONNECTION_LIMITS);
	if (out->kind != ARN_CFG_NF_ECHO || out->n_l4_filters == 0)
		return;
	char names[256];
	size_t used = 0;
	names[0] = 0;
	for (size_t i = 0; i < out->n_l4_filters && used < sizeof(names); i++) {
		const struct arn_cfg_l4_filter *f = &out->l4_filters[i];
		static const char *const kinds[] = {"rbac", "local_ratelimit", "connection_limit"};
		const char *k = f->kind < 3 ? kinds[f->kind] : "?";
		int n = snprintf(names + used, sizeof(names) - used, "%s'%s' (%s)", i ? ", " : "",
				 f->name && f->name[0] ? f->name : k, k);
		if (n < 0)
			break;
		used += (size_t)n;
	}
	conv_err(c, "filters",
		 "%s before echo: Arion runs no network filter ahead of echo (they would "
		 "be ignored); remove them or use tcp_proxy",
		 names);
}

static void filter_chain(struct conv *c, struct pb fc, struct arn_cfg_filter_chain *out,
			 bool *needs_inspector)
{
	out->hash = pb_hash(c, fc.m, fc.d);
	conv_only(c, fc,
		  "filter_chain_match,filters,transport_socket,name,metadata,"
		  "transport_socket_connect_timeout");
	if (pb_has(fc, "name"))
		out->name = conv_str(c, pb_str(fc, "name"));
	conv_duration(c, fc, "transport_socket_connect_timeout",
		      &out->transport_socket_connect_timeout_ms, false);
	fc_match(c, pb_msg(fc, "filter_chain_match"), &out->match);
	if (out->match.n_server_names || out->match.transport_protocol || out->match.n_alpn)
		*needs_inspector = true;
	size_t nf = pb_len(fc, "filters");
	if (nf == 0)
		conv_err(c, "filters",
			 "empty: a filter chain needs http_connection_manager, tcp_proxy or "
			 "echo");
	out->l4_filters = CONV_NEW(c, struct arn_cfg_l4_filter, nf ? nf : 1);
	if (!out->l4_filters)
		return;
	for (size_t i = 0; i < nf; i++) {
		struct pb f = pb_at(fc, "filters", i);
		size_t m = conv_push(c, "filters[%zu]", i);
		conv_only(c, f, "name,typed_config");
		upb_StringView name = pb_str(f, "name");
		struct pb tc = pb_msg(f, "typed_config");
		upb_StringView tn = tc.m ? arn_proto_any_type_name(tc.m) : name;
		if (conv_l4_network_filter(c, f, tn, i + 1 == nf, out)) {
			/* tcp_proxy, rbac, local_ratelimit, connection_limit */
		} else if (i + 1 < nf) {
			conv_err(c, "",
				 "network filter '%.*s' is not supported before the terminal "
				 "filter (%.*s: only rbac, local_ratelimit and connection_limit "
				 "are)",
				 (int)name.size, name.data, (int)tn.size, tn.data);
		} else if (arn_sv_eq(tn, ARN_TYPE_HCM)) {
			size_t m2 = conv_push(c, "typed_config");
			out->kind = ARN_CFG_NF_HCM;
			out->hcm = hcm(c, tc);
			conv_pop(c, m2);
		} else if (arn_sv_eq(tn, ECHO_TYPE) ||
			   (!tc.m && arn_sv_eq(name, "envoy.filters.network.echo"))) {
			out->kind = ARN_CFG_NF_ECHO;
			if (tc.m) {
				size_t m2 = conv_push(c, "typed_config");
				conv_any(c, tc, ECHO_TYPE);
				conv_pop(c, m2);
			}
		} else {
			conv_err(
			    c, "",
			    "network filter '%.*s' (%.*s) is not supported by Arion (the "
			    "terminal filters are envoy.filters.network.http_connection_manager, "
			    "tcp_proxy and echo)",
			    (int)name.size, name.data, (int)tn.size, tn.data);
		}
		conv_pop(c, m);
	}
	l4_filters_check(c, out);
	struct pb ts = pb_msg(fc, "transport_socket");
	/* with tcp_proxy too: TLS is terminated and the plaintext relayed */
	if (ts.m)
		out->tls = conv_tls(c, ts, true);
	/* ALPN h2 is offered only by a chain whose HCM serves HTTP/2: a
	 * client that picks it must find an HTTP/2 codec behind it */
	for (size_t i = 0; out->tls && i < out->tls->n_alpn; i++) {
		if (!out->tls->alpn[i] || strcmp(out->tls->alpn[i], "h2") != 0)
			continue;
		if (out->kind != ARN_CFG_NF_HCM || !out->hcm)
			conv_err(c, "transport_socket",
				 "ALPN 'h2' on a chain without http_connection_manager");
		else if (out->hcm->codec == ARN_CFG_CODEC_HTTP1)
			conv_err(c, "transport_socket",
				 "ALPN 'h2' but the connection manager's codec_type is HTTP1: "
				 "use AUTO or HTTP2, or offer http/1.1 only");
	}
}

/*
 * The tls_inspector's typed_config, as Envoy reads it: JA3 fingerprints are
 * not computed by Arion (refused rather than silently absent from access
 * logs); initial_read_buffer_size is validated as Envoy's API does and
 * kept (it sizes no buffer in Arion: the ClientHello is parsed in TCP's
 * queue).
 */
static void tls_inspector(struct conv *c, struct pb tc, struct arn_cfg_listener *out)
{
	struct pb ti = conv_any(c, tc, TLS_INSPECTOR_TYPE);
	if (!ti.m)
		return;
	size_t m = conv_push(c, "typed_config");
	conv_only(c, ti, "enable_ja3_fingerprinting,initial_read_buffer_size");
	bool ja3 = false;
	if (pb_wrapped_bool(ti, "enable_ja3_fingerprinting", &ja3) && ja3)
		conv_err(c, "enable_ja3_fingerprinting",
			 "JA3 fingerprinting is not supported by Arion (set false or remove it)");
	uint32_t rs = 0;
	if (pb_wrapped_u32(ti, "initial_read_buffer_size", &rs)) {
		if (rs < 256 || rs > 65536)
			conv_err(c, "initial_read_buffer_size", "%u is not from 256 to 65536", rs);
		else
			out->tls_inspector_read_size = rs;
	}
	conv_pop(c, m);
}

/*
 * The PROXY protocol listener filter's typed_config, as Envoy's
 * proxy_protocol.cc reads it. rules (TLVs to dynamic metadata) are refused:
 * no listener-level dynamic metadata reaches a consumer in Arion (no
 * access log %DYNAMIC_METADATA%, no RBAC metadata matcher on it);
 * pass_through_tlvs are refused: they feed only the upstream PROXY
 * transport socket's pass_through_tlvs, and Arion writes no TLV upstream.
 */
static void proxy_protocol(struct conv *c, struct pb tc, struct arn_cfg_listener *out)
{
	struct pb pp = conv_any(c, tc, PROXY_PROTOCOL_TYPE);
	if (!pp.m)
		return;
	size_t m = conv_push(c, "typed_config");
	conv_only(c, pp,
		  "rules,allow_requests_without_proxy_protocol,pass_through_tlvs,"
		  "disallowed_versions,stat_prefix");
	if (pb_len(pp, "rules"))
		conv_err(c, "rules",
			 "TLVs to dynamic metadata are not supported by Arion: no listener "
			 "dynamic metadata has a consumer (remove rules)");
	if (pb_has(pp, "pass_through_tlvs"))
		conv_err(c, "pass_through_tlvs",
			 "not supported by Arion: passed TLVs feed only "
			 "envoy.transport_sockets.upstream_proxy_protocol's pass_through_tlvs, "
			 "and Arion writes no TLV upstream (remove pass_through_tlvs)");
	out->pp_allow_without = pb_bool(pp, "allow_requests_without_proxy_protocol");
	size_t nd = pb_len(pp, "disallowed_versions");
	for (size_t i = 0; i < nd; i++) {
		int32_t v = pb_i32_at(pp, "disallowed_versions", i);
		if (v == 0)
			out->pp_v1_off = true;
		else if (v == 1)
			out->pp_v2_off = true;
		else
			conv_err(c, "disallowed_versions", "%d is neither V1 (0) nor V2 (1)", v);
	}
	if (out->pp_v1_off && out->pp_v2_off && !out->pp_allow_without)
		conv_err(c, "disallowed_versions",
			 "both V1 and V2 disallowed: no connection could pass");
	upb_StringView sp = pb_str(pp, "stat_prefix");
	if (sp.size)
		out->pp_stat_prefix = conv_str(c, sp);
	conv_pop(c, m);
}

static void rule_sink(void *ctx, const char *path, const char *msg)
{
	struct conv *c = ctx;
	conv_err_at(c, path[0] == '.' ? path + 1 : path, msg);
}

/*
 * A listener's socket_options: Arion's TCP is its own, so a setsockopt()
 * has nowhere to go; the ones that set TCP keepalive (Envoy Gateway's
 * ClientTrafficPolicy tcpKeepalive writes SO_KEEPALIVE, TCP_KEEPCNT,
 * TCP_KEEPIDLE, TCP_KEEPINTVL, Linux's numbers) are read as what they
 * ask of accepted connections, Linux's defaults (7200 s, 75 s, 9) for
 * those not given; any other option is refused naming its level and name.
 */
static void socket_options(struct conv *c, struct pb l, struct arn_cfg_listener *out)
{
	size_t n = pb_len(l, "socket_options");
	bool on = false;
	uint32_t v[3] = {7200, 75, 9}; /* TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_KEEPCNT */
	for (size_t i = 0; i < n; i++) {
		struct pb o = pb_at(l, "socket_options", i);
		size_t m = conv_push(c, "socket_options[%zu]", i);
		conv_only(c, o, "description,level,name,int_value,state");
		int64_t level = pb_i64(o, "level"), name = pb_i64(o, "name");
		int64_t x = pb_i64(o, "int_value");
		if (!pb_has(o, "int_value"))
			conv_err(c, "int_value", "missing (the options Arion reads take an integer)");
		if (level == 1 && name == 9) { /* SOL_SOCKET, SO_KEEPALIVE */
			on = x != 0;
		} else if (level == 6 && name >= 4 && name <= 6) { /* IPPROTO_TCP */
			static const int64_t hi[] = {32767, 32767, 127};
			if (x < 1 || x > hi[name - 4])
				conv_err(c, "int_value", "%lld: must be 1..%lld (Linux's bounds)",
					 (long long)x, (long long)hi[name - 4]);
			else
				v[name - 4] = (uint32_t)x;
		} else {
			conv_err(c, "",
				 "level %lld name %lld is not supported by Arion: its TCP is its own; "
				 "it reads SO_KEEPALIVE (1, 9) and TCP_KEEPIDLE, TCP_KEEPINTVL, "
				 "TCP_KEEPCNT (6, 4..6)",
				 (long long)level, (long long)name);
		}
		conv_pop(c, m);
	}
	out->keepalive = on;
	out->keepalive_time_s = v[0];
	out->keepalive_intvl_s = v[1];
	out->keepalive_probes = v[2];
}

struct arn_cfg_obj *arn_conv_listener(struct conv *c, struct pb l)
{
	upb_StringView name = pb_str(l, "name");
	struct arn_cfg_listener *out = conv_obj_new(c, sizeof(*out), ARN_CFG_LISTENER, name);
	if (!out)
		return NULL;
	/* X11, X13 (shared with the bootstrap loader) */
	struct arn_rule_sink sink = {rule_sink, c};
	arn_rules_listener((const void *)l.m, "", c->arena, &sink);
	conv_only(c, l,
		  "name,address,stat_prefix,filter_chains,default_filter_chain,per_"
		  "connection_buffer_limit_bytes,metadata,drain_type,listener_filters,listener_"
		  "filters_timeout,continue_on_listener_filters_timeout,traffic_direction,bind_"
		  "to_port,enable_reuse_port,reuse_port,tcp_backlog_size,ignore_global_conn_"
		  "limit,access_log,socket_options");
	if (name.size == 0)
		conv_err(c, "name", "missing");
	conv_socket_address(c, pb_msg(l, "address"), "address", &out->addr, &out->port, true);
	bool bind = true;
	if (pb_wrapped_bool(l, "bind_to_port", &bind) && !bind)
		conv_err(c, "bind_to_port",
			 "false is not supported (no original-destination "
			 "redirection in Arion)");
	out->stat_prefix = pb_has(l, "stat_prefix") ? conv_str(c, pb_str(l, "stat_prefix")) : NULL;
	/* MODIFY_ONLY (1): drained only when the listener changes, not by
	 * POST /healthcheck/fail */
	out->drain_modify_only = pb_i32(l, "drain_type") == 1;
	conv_access_logs(c, l, "access_log", &out->access_logs, &out->n_access_logs);
	socket_options(c, l, out);
	out->base_hash = listener_base_hash(c, l);
	out->per_connection_buffer_limit = 1024 * 1024;
	pb_wrapped_u32(l, "per_connection_buffer_limit_bytes", &out->per_connection_buffer_limit);
	if (out->per_connection_buffer_limit == 0)
		conv_err(c, "per_connection_buffer_limit_bytes", "must be greater than 0");
	/* Envoy passes tcp_backlog_size to listen(); Arion's TCP bounds its SYN
	 * queue by it and answers with SYN cookies beyond. */
	if (pb_wrapped_u32(l, "tcp_backlog_size", &out->backlog) &&
	    (out->backlog == 0 || out->backlog > 65535))
		conv_err(c, "tcp_backlog_size", "must be from 1 to 65535");
	/* Envoy's default 15 s; 0 disables the timeout */
	out->listener_filters_timeout_ms = 15000;
	conv_duration(c, l, "listener_filters_timeout", &out->listener_filters_timeout_ms, false);
	out->continue_on_listener_filters_timeout =
	    pb_bool(l, "continue_on_listener_filters_timeout");
	/* exempt from the bootstrap's global downstream connection limit
	 * (lib/http refuses over it at accept), as in Envoy */
	out->ignore_global_conn_limit = pb_bool(l, "ignore_global_conn_limit");
	size_t nlf = pb_len(l, "listener_filters");
	for (size_t i = 0; i < nlf; i++) {
		struct pb lf = pb_at(l, "listener_filters", i);
		size_t m = conv_push(c, "listener_filters[%zu]", i);
		conv_only(c, lf, "name,typed_config");
		upb_StringView n = pb_str(lf, "name");
		struct pb tc = pb_msg(lf, "typed_config");
		/* the typed_config's type decides, as in Envoy; the name only
		 * without one */
		upb_StringView tn = tc.m ? arn_proto_any_type_name(tc.m) : n;
		if (arn_sv_eq(tn, TLS_INSPECTOR_TYPE) ||
		    arn_sv_eq(tn, "envoy.filters.listener.tls_inspector")) {
			out->tls_inspector = true;
			if (tc.m)
				tls_inspector(c, tc, out);
		} else if (arn_sv_eq(tn, PROXY_PROTOCOL_TYPE) ||
			   arn_sv_eq(tn, "envoy.filters.listener.proxy_protocol")) {
			/* the PROXY header comes before the ClientHello: Envoy
			 * would run a tls_inspector listed first on its bytes */
			if (out->tls_inspector)
				conv_err(c, "",
					 "envoy.filters.listener.proxy_protocol after "
					 "tls_inspector: list it first (the PROXY header "
					 "precedes the ClientHello)");
			if (out->proxy_protocol)
				conv_err(c, "", "envoy.filters.listener.proxy_protocol twice");
			out->proxy_protocol = true;
			if (tc.m)
				proxy_protocol(c, tc, out);
		} else {
			conv_err(c, "",
				 "listener filter '%.*s' is not supported (only "
				 "envoy.filters.listener.proxy_protocol and "
				 "envoy.filters.listener.tls_inspector)",
				 (int)tn.size, tn.data);
		}
		conv_pop(c, m);
	}
	size_t nfc = pb_len(l, "filter_chains");
	struct pb dfc = pb_msg(l, "default_filter_chain");
	if (nfc == 0 && !dfc.m)
		conv_err(c, "filter_chains", "empty: a listener needs a filter chain");
	if (nfc > ARN_CFG_MAX_CHAINS) {
		conv_err(c, "filter_chains", "%zu chains: at most %d", nfc, ARN_CFG_MAX_CHAINS);
		return NULL;
	}
	out->chains = CONV_NEW(c, struct arn_cfg_filter_chain, nfc ? nfc : 1);
	if (!out->chains)
		return NULL;
	out->n_chains = nfc;
	bool needs_inspector = false;
	for (size_t i = 0; i < nfc; i++) {
		size_t m = conv_push(c, "filter_chains[%zu]", i);
		filter_chain(c, pb_at(l, "filter_chains", i), &out->chains[i], &needs_inspector);
		conv_pop(c, m);
	}
	if (dfc.m) {
		size_t m = conv_push(c, "default_filter_chain");
		out->default_chain = CONV_NEW(c, struct arn_cfg_filter_chain, 1);
		if (out->default_chain)
			filter_chain(c, dfc, out->default_chain, &needs_inspector);
		if (pb_has(dfc, "filter_chain_match"))
			conv_err(c, "filter_chain_match", "the default filter chain has no match");
		conv_pop(c, m);
	}
	if (needs_inspector && !out->tls_inspector)
		conv_err(c, "listener_filters",
			 "filter chains match on server_names, transport_protocol or "
			 "application_protocols, which needs envoy.filters.listener.tls_inspector");
	/* Two chains with identical matches: Envoy refuses ("multiple filter
	 * chains with the same matching rules"); compare the simple case. */
	for (size_t i = 0; i < nfc; i++)
		for (size_t j = i + 1; j < nfc; j++) {
			const struct arn_cfg_fc_match *a = &out->chains[i].match,
						      *b = &out->chains[j].match;
			if (a->dst_port == b->dst_port && !a->n_dst_prefixes &&
			    !b->n_dst_prefixes && !a->n_server_names && !b->n_server_names &&
			    !a->n_alpn && !b->n_alpn && !a->n_src_prefixes && !b->n_src_prefixes &&
			    !a->n_direct_src_prefixes && !b->n_direct_src_prefixes &&
			    a->source_type == b->source_type && !a->n_src_ports &&
			    !b->n_src_ports &&
			    ((!a->transport_protocol && !b->transport_protocol) ||
			     (a->transport_protocol && b->transport_protocol &&
			      !strcmp(a->transport_protocol, b->transport_protocol))))
				conv_err(c, "filter_chains",
					 "chains %zu and %zu have the same filter_chain_match", i,
					 j);
		}
	return &out->obj;
}
