/*
 * gRPC access loggers (Envoy's envoy.access_loggers.open_telemetry,
 * http_grpc and tcp_grpc), into
 * an access log's model (struct arn_cfg_grpc_log). Followed: Envoy 1.36's
 * source/extensions/access_loggers/open_telemetry (otlp_log_utils.cc: the
 * top-level log_name / grpc_service / buffer_* before common_config's; the
 * built-in resource labels) and grpc/grpc_access_log_utils.cc (the flush
 * interval of 1 s, the buffer of 16384 bytes). Every field is acted on or
 * refused naming it.
 */
#include <stdio.h>
#include <string.h>

#include "arn_proto.h"
#include "config_int.h"

#define HTTP_ALS_TYPE "envoy.extensions.access_loggers.grpc.v3.HttpGrpcAccessLogConfig"
#define TCP_ALS_TYPE "envoy.extensions.access_loggers.grpc.v3.TcpGrpcAccessLogConfig"
#define OTEL_LOG_TYPE                                                                              \
	"envoy.extensions.access_loggers.open_telemetry.v3.OpenTelemetryAccessLogConfig"

/* grpc_service (an envoy_grpc one) into @p o. */
static void grpc_service(struct conv *c, struct pb gs, struct arn_cfg_grpc_log *o)
{
	size_t m = conv_push(c, "grpc_service");
	conv_only(c, gs, "envoy_grpc,google_grpc,timeout,initial_metadata");
	if (pb_has(gs, "google_grpc"))
		conv_err(c, "google_grpc",
			 "not supported by Arion: the logs go over Arion's own HTTP/2 upstreams "
			 "(use envoy_grpc)");
	struct pb eg = pb_msg(gs, "envoy_grpc");
	if (eg.m) {
		size_t m1 = conv_push(c, "envoy_grpc");
		conv_envoy_grpc(c, eg, &o->cluster, &o->authority, &o->authority_len);
		conv_pop(c, m1);
	} else if (!pb_has(gs, "google_grpc")) {
		conv_err(c, "envoy_grpc", "missing: the collector's cluster");
	}
	if (pb_has(gs, "timeout"))
		conv_duration(c, gs, "timeout", &o->timeout_ms, false);
	conv_grpc_metadata(c, gs, "initial_metadata", ARN_CFG_GLOG_MD_MAX, "export", &o->md,
			   &o->n_md);
	conv_pop(c, m);
}

static void buffer_size(struct conv *c, struct pb p, struct arn_cfg_grpc_log *o)
{
	uint32_t v;
	if (!pb_wrapped_u32(p, "buffer_size_bytes", &v))
		return;
	if (v > ARN_CFG_GLOG_BUFFER_MAX)
		conv_err(c, "buffer_size_bytes",
			 "%u bytes: more than a worker's queue of records holds (%u)", v,
			 ARN_CFG_GLOG_BUFFER_MAX);
	o->buffer_bytes = v;
}

/* CommonGrpcAccessLogConfig @p cc; @p otel: the OpenTelemetry logger's,
 * whose grpc_service may come from the top level instead. */
static void common_config(struct conv *c, struct pb cc, struct arn_cfg_grpc_log *o, bool otel)
{
	size_t m = conv_push(c, "common_config");
	conv_only(c, cc,
		  "log_name,grpc_service,transport_api_version,buffer_flush_interval,"
		  "buffer_size_bytes,filter_state_objects_to_log,grpc_stream_retry_policy,"
		  "custom_tags");
	upb_StringView ln = pb_str(cc, "log_name");
	if (ln.size > ARN_CFG_GLOG_STR_MAX)
		conv_err(c, "log_name", "%zu bytes: at most %u", ln.size, ARN_CFG_GLOG_STR_MAX);
	if (ln.size) {
		o->log_name = conv_str(c, ln);
		o->log_name_len = (uint32_t)ln.size;
	} else if (!otel) {
		conv_err(c, "log_name", "missing (Envoy requires it)");
	}
	struct pb gs = pb_msg(cc, "grpc_service");
	if (gs.m)
		grpc_service(c, gs, o);
	else if (!otel)
		conv_err(c, "grpc_service", "missing: the collector's gRPC service");
	/* ApiVersion: AUTO (0) is V2's alias in Envoy and refused there too */
	if (pb_i32(cc, "transport_api_version") != 2)
		conv_err(c, "transport_api_version",
			 "must be V3 (Envoy refuses AUTO and V2 for access log services)");
	if (pb_has(cc, "buffer_flush_interval"))
		conv_duration(c, cc, "buffer_flush_interval", &o->flush_ms, true);
	buffer_size(c, cc, o);
	if (pb_len(cc, "filter_state_objects_to_log"))
		conv_err(c, "filter_state_objects_to_log",
			 "not supported by Arion: it keeps no filter state objects");
	if (pb_has(cc, "grpc_stream_retry_policy"))
		conv_err(c, "grpc_stream_retry_policy",
			 "not supported by Arion: a failed export is counted and not retried");
	if (pb_len(cc, "custom_tags"))
		conv_err(c, "custom_tags", "not supported by Arion's gRPC access loggers");
	conv_pop(c, m);
}

/* A KeyValueList of string values @p kv (field @p f) into @p out; at most
 * ARN_CFG_GLOG_ATTRS_MAX. */
static void kv_list(struct conv *c, struct pb kv, const char *f, struct arn_cfg_glog_kv **out,
		    size_t *n, bool literal)
{
	size_t m = conv_push(c, "%s", f);
	conv_only(c, kv, "values");
	size_t k = pb_len(kv, "values");
	if (k > ARN_CFG_GLOG_ATTRS_MAX) {
		conv_err(c, "values", "%zu entries: at most %u", k, ARN_CFG_GLOG_ATTRS_MAX);
		k = ARN_CFG_GLOG_ATTRS_MAX;
	}
	struct arn_cfg_glog_kv *o = CONV_NEW(c, struct arn_cfg_glog_kv, k ? k : 1);
	for (size_t i = 0; o && i < k; i++) {
		size_t m1 = conv_push(c, "values[%zu]", i);
		struct pb e = pb_at(kv, "values", i);
		conv_only(c, e, "key,value");
		upb_StringView key = pb_str(e, "key");
		struct pb v = pb_msg(e, "value");
		const char *w = v.m ? pb_which(v, "value") : NULL;
		if (!w || strcmp(w, "string_value") != 0) {
			conv_err(c, "value",
				 "%s: Arion's gRPC access loggers take string values (a format "
				 "string) only",
				 w ? w : "missing");
		} else {
			upb_StringView sv = pb_str(v, "string_value");
			if (key.size > ARN_CFG_GLOG_STR_MAX)
				conv_err(c, "key", "%zu bytes: at most %u", key.size,
					 ARN_CFG_GLOG_STR_MAX);
			if (literal && sv.size > ARN_CFG_GLOG_STR_MAX)
				conv_err(c, "value", "%zu bytes: at most %u", sv.size,
					 ARN_CFG_GLOG_STR_MAX);
			o[i] = (struct arn_cfg_glog_kv){conv_str(c, key), conv_str(c, sv),
							(uint32_t)key.size, (uint32_t)sv.size};
		}
		conv_pop(c, m1);
	}
	*out = o;
	*n = o ? k : 0;
	conv_pop(c, m);
}

static void otel_config(struct conv *c, struct pb cfg, struct arn_cfg_access_log *a)
{
	struct arn_cfg_grpc_log *o = CONV_NEW(c, struct arn_cfg_grpc_log, 1);
	if (!o)
		return;
	a->kind = ARN_CFG_LOG_OTEL;
	a->grpc = o;
	o->flush_ms = 1000;
	o->buffer_bytes = 16384;
	o->log_name = "";
	conv_only(
	    c, cfg,
	    "common_config,grpc_service,disable_builtin_labels,resource_attributes,"
	    "resource_detectors,body,attributes,stat_prefix,formatters,log_name,"
	    "buffer_flush_interval,buffer_size_bytes,filter_state_objects_to_log,custom_tags");
	struct pb cc = pb_msg(cfg, "common_config");
	if (cc.m)
		common_config(c, cc, o, true);
	/* the top-level fields (Envoy 1.36) come before common_config's */
	struct pb gs = pb_msg(cfg, "grpc_service");
	if (gs.m) {
		o->md = NULL;
		o->n_md = 0;
		o->authority = NULL;
		o->authority_len = 0;
		o->timeout_ms = 0;
		grpc_service(c, gs, o);
	} else if (!cc.m || !pb_has(cc, "grpc_service")) {
		conv_err(c, "grpc_service",
			 "missing: the OTLP collector's gRPC service (here or in common_config)");
	}
	upb_StringView ln = pb_str(cfg, "log_name");
	if (ln.size > ARN_CFG_GLOG_STR_MAX)
		conv_err(c, "log_name", "%zu bytes: at most %u", ln.size, ARN_CFG_GLOG_STR_MAX);
	if (ln.size) {
		o->log_name = conv_str(c, ln);
		o->log_name_len = (uint32_t)ln.size;
	}
	if (pb_has(cfg, "buffer_flush_interval"))
		conv_duration(c, cfg, "buffer_flush_interval", &o->flush_ms, true);
	buffer_size(c, cfg, o);
	o->builtin_labels = !pb_bool(cfg, "disable_builtin_labels");
	if (pb_has(cfg, "resource_attributes"))
		kv_list(c, pb_msg(cfg, "resource_attributes"), "resource_attributes", &o->res_attrs,
			&o->n_res_attrs, true);
	if (pb_len(cfg, "resource_detectors"))
		conv_err(c, "resource_detectors",
			 "not supported by Arion (set resource_attributes)");
	struct pb body = pb_msg(cfg, "body");
	if (body.m) {
		const char *w = pb_which(body, "value");
		if (w && strcmp(w, "string_value") == 0) {
			o->body = conv_str(c, pb_str(body, "string_value"));
			conv_check_access_format(c, NULL, o->body, false, "body.string_value");
		} else if (w) {
			conv_err(c, "body",
				 "%s: Arion formats a string_value body only (Envoy's kvlist and "
				 "array bodies are not built)",
				 w);
		}
	}
	if (pb_has(cfg, "attributes")) {
		kv_list(c, pb_msg(cfg, "attributes"), "attributes", &o->attrs, &o->n_attrs, false);
		for (size_t i = 0; i < o->n_attrs; i++) {
			if (!o->attrs[i].value)
				continue;
			char f[64];
			snprintf(f, sizeof(f), "attributes.values[%zu].value", i);
			conv_check_access_format(c, NULL, o->attrs[i].value, false, f);
		}
	}
	if (pb_str(cfg, "stat_prefix").size)
		conv_err(c, "stat_prefix",
			 "not supported by Arion: its statistics are "
			 "access_logs.open_telemetry_access_log.* (leave it empty)");
	if (pb_len(cfg, "formatters"))
		conv_err(c, "formatters",
			 "not supported by Arion: its format engine has no formatter extensions");
	if (pb_len(cfg, "filter_state_objects_to_log"))
		conv_err(c, "filter_state_objects_to_log",
			 "not supported by Arion: it keeps no filter state objects");
	if (pb_len(cfg, "custom_tags"))
		conv_err(c, "custom_tags", "not supported by Arion's gRPC access loggers");
}

/* A list of header names to log (HTTP ALS's), lower case: at most
 * ARN_CFG_GLOG_ATTRS_MAX names of at most ARN_CFG_GLOG_STR_MAX bytes
 * (each is looked up in every logged request's headers and copied into
 * its entry). */
static void header_names(struct conv *c, struct pb p, const char *f, const char ***out, size_t *n)
{
	size_t k = pb_len(p, f);
	if (k > ARN_CFG_GLOG_ATTRS_MAX) {
		conv_err(c, f, "%zu names: at most %u", k, ARN_CFG_GLOG_ATTRS_MAX);
		return;
	}
	bool ok = true;
	for (size_t i = 0; i < k; i++) {
		upb_StringView v = pb_str_at(p, f, i);
		size_t m = conv_push(c, "%s[%zu]", f, i);
		if (v.size > ARN_CFG_GLOG_STR_MAX) {
			conv_err(c, NULL, "%zu bytes: a header name of at most %u", v.size,
				 ARN_CFG_GLOG_STR_MAX);
			ok = false;
		} else if (!v.size || !conv_hdr_ok(c, NULL, v)) {
			if (!v.size)
				conv_err(c, NULL, "empty: not a header name");
			ok = false;
		}
		conv_pop(c, m);
	}
	if (ok)
		conv_str_list(c, p, f, out, n, true);
}

/* envoy.access_loggers.http_grpc / tcp_grpc (Envoy's ALS) */
static void als_config(struct conv *c, struct pb cfg, struct arn_cfg_access_log *a, bool tcp)
{
	struct arn_cfg_grpc_log *o = CONV_NEW(c, struct arn_cfg_grpc_log, 1);
	if (!o)
		return;
	a->kind = tcp ? ARN_CFG_LOG_TCP_GRPC : ARN_CFG_LOG_HTTP_GRPC;
	a->grpc = o;
	o->flush_ms = 1000;
	o->buffer_bytes = 16384;
	o->log_name = "";
	conv_only(c, cfg,
		  tcp ? "common_config"
		      : "common_config,additional_request_headers_to_log,"
			"additional_response_headers_to_log,additional_response_trailers_to_log");
	struct pb cc = pb_msg(cfg, "common_config");
	if (!cc.m)
		conv_err(c, "common_config", "missing (Envoy requires it)");
	else
		common_config(c, cc, o, false);
	if (tcp)
		return;
	header_names(c, cfg, "additional_request_headers_to_log", &o->req_hdrs, &o->n_req_hdrs);
	header_names(c, cfg, "additional_response_headers_to_log", &o->resp_hdrs, &o->n_resp_hdrs);
	header_names(c, cfg, "additional_response_trailers_to_log", &o->resp_trls, &o->n_resp_trls);
}

bool conv_grpc_access_log(struct conv *c, struct pb any, upb_StringView tn,
			  struct arn_cfg_access_log *a)
{
	bool http = arn_sv_eq(tn, HTTP_ALS_TYPE), tcp = arn_sv_eq(tn, TCP_ALS_TYPE);
	if (http || tcp) {
		struct pb cfg = conv_any(c, any, http ? HTTP_ALS_TYPE : TCP_ALS_TYPE);
		if (cfg.m)
			als_config(c, cfg, a, tcp);
		return true;
	}
	if (!arn_sv_eq(tn, OTEL_LOG_TYPE))
		return false;
	struct pb cfg = conv_any(c, any, OTEL_LOG_TYPE);
	if (cfg.m)
		otel_config(c, cfg, a);
	return true;
}
