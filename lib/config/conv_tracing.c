/*
 * HCM `tracing` with the OpenTelemetry tracer (envoy.tracers.opentelemetry)
 * or the Zipkin tracer (envoy.tracers.zipkin), and a route's `tracing` and `decorator`: what
 * Envoy's ConnectionManagerConfig / TracingConnectionManagerConfig and RouteEntryImplBase read,
 * into struct arn_cfg_tracing and struct arn_cfg_route_trace (arn_config_model.h). Every field is
 * acted on or refused by name.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arn_proto.h"
#include "config_int.h"

#define OTEL_TYPE "envoy.config.trace.v3.OpenTelemetryConfig"
#define OTEL_NAME "envoy.tracers.opentelemetry"
#define ZIPKIN_TYPE "envoy.config.trace.v3.ZipkinConfig"
#define ZIPKIN_NAME "envoy.tracers.zipkin"

/* A Percent @p f of @p p (0..100) into per 10000, as Envoy rounds it
 * (PROTOBUF_PERCENT_TO_ROUNDED_INTEGER_OR_DEFAULT); @return false when
 * unset (*out untouched). */
static bool percent(struct conv *c, struct pb p, const char *f, struct arn_cfg_fraction *out)
{
	if (!pb_has(p, f))
		return false;
	size_t m = conv_push(c, "%s", f);
	conv_only(c, pb_msg(p, f), "value");
	double v = 0;
	pb_wrapped_double(p, f, &v);
	if (!(v >= 0 && v <= 100)) /* NaN too */
		conv_err(c, "value", "%g: a percentage is 0 to 100", v);
	else
		*out = (struct arn_cfg_fraction){(uint32_t)llround(v * 100), 10000};
	conv_pop(c, m);
	return true;
}

/* A tag's value or a default: at most ARN_CFG_TRACE_TAG_VALUE_MAX bytes,
 * no NUL (it goes into the span as a protobuf string). */
static const char *tag_str(struct conv *c, const char *f, upb_StringView s)
{
	if (s.size > ARN_CFG_TRACE_TAG_VALUE_MAX) {
		conv_err(c, f, "%zu bytes: at most %u", s.size, ARN_CFG_TRACE_TAG_VALUE_MAX);
		return NULL;
	}
	if (s.size && memchr(s.data, 0, s.size)) {
		conv_err(c, f, "has a NUL byte");
		return NULL;
	}
	return conv_str(c, s);
}

/* custom_tags (envoy.type.tracing.v3.CustomTag) of @p p into *@p out. */
static void custom_tags(struct conv *c, struct pb p, struct arn_cfg_trace_tag **out, size_t *n)
{
	size_t k = pb_len(p, "custom_tags");
	*out = NULL;
	*n = 0;
	if (!k)
		return;
	if (k > ARN_CFG_TRACE_TAGS_MAX) {
		conv_err(c, "custom_tags", "%zu tags: at most %u", k, ARN_CFG_TRACE_TAGS_MAX);
		return;
	}
	struct arn_cfg_trace_tag *t = CONV_NEW(c, struct arn_cfg_trace_tag, k);
	if (!t)
		return;
	for (size_t i = 0; i < k; i++) {
		size_t m = conv_push(c, "custom_tags[%zu]", i);
		struct pb ct = pb_at(p, "custom_tags", i);
		conv_only(c, ct, "tag,literal,environment,request_header,metadata");
		upb_StringView tag = pb_str(ct, "tag");
		if (!tag.size)
			conv_err(c, "tag", "missing (Envoy requires it)");
		t[i].tag = tag_str(c, "tag", tag);
		t[i].tag_len = (uint32_t)tag.size;
		const char *w = pb_which(ct, "type");
		if (!w) {
			conv_err(c, "", "no type: set literal, environment or request_header");
		} else if (strcmp(w, "literal") == 0) {
			struct pb l = pb_msg(ct, "literal");
			conv_only(c, l, "value");
			upb_StringView v = pb_str(l, "value");
			t[i].kind = ARN_CFG_TRACE_TAG_LITERAL;
			t[i].value = tag_str(c, "literal.value", v);
			t[i].value_len = (uint32_t)v.size;
		} else if (strcmp(w, "environment") == 0) {
			/* read once, here, as Envoy reads it when the
			 * configuration is loaded (EnvironmentCustomTag) */
			struct pb e = pb_msg(ct, "environment");
			conv_only(c, e, "name,default_value");
			upb_StringView nm = pb_str(e, "name");
			const char *name = conv_str(c, nm);
			const char *env = name && nm.size ? getenv(name) : NULL;
			upb_StringView v =
			    env ? (upb_StringView){env, strlen(env)} : pb_str(e, "default_value");
			if (!nm.size)
				conv_err(c, "environment.name", "missing (Envoy requires it)");
			t[i].kind = ARN_CFG_TRACE_TAG_LITERAL;
			t[i].value =
			    tag_str(c, env ? "environment.name" : "environment.default_value", v);
			t[i].value_len = (uint32_t)v.size;
		} else if (strcmp(w, "request_header") == 0) {
			struct pb h = pb_msg(ct, "request_header");
			conv_only(c, h, "name,default_value");
			upb_StringView nm = pb_str(h, "name"), dv = pb_str(h, "default_value");
			size_t hl = 0;
			t[i].kind = ARN_CFG_TRACE_TAG_HEADER;
			t[i].header = conv_hdr_name(c, "request_header.name", nm, &hl);
			t[i].header_len = (uint32_t)hl;
			t[i].value = tag_str(c, "request_header.default_value", dv);
			t[i].value_len = (uint32_t)dv.size;
		} else {
			conv_err(c, w,
				 "not supported by Arion: it keeps no metadata (use literal, "
				 "environment or request_header)");
		}
		conv_pop(c, m);
	}
	*out = t;
	*n = k;
}

/* envoy.tracers.zipkin's ZipkinConfig (Envoy's zipkin_tracer_impl.cc
 * Driver): the spans as Zipkin API v2 JSON, POSTed to collector_endpoint
 * on collector_cluster. split_spans_for_request (Envoy 1.27),
 * trace_context_option (1.35) and collector_service (1.35) are newer than
 * Arion's copy of the message: refused as unknown fields. */
static void zipkin(struct conv *c, struct pb zc, struct arn_cfg_tracing *o)
{
	conv_only(c, zc,
		  "collector_cluster,collector_endpoint,trace_id_128bit,shared_span_context,"
		  "collector_endpoint_version,collector_hostname");
	o->tracer = ARN_CFG_TRACER_ZIPKIN;
	upb_StringView cn = pb_str(zc, "collector_cluster");
	if (!cn.size) {
		conv_err(c, "collector_cluster", "missing: the Zipkin collector's cluster");
	} else {
		conv_refs(c, &o->cluster, cn);
		conv_dep(c, ARN_CFG_CLUSTER, cn.data, cn.size, false, 0);
	}
	upb_StringView ep = pb_str(zc, "collector_endpoint");
	bool bad = false; /* it goes in the request line as it is */
	for (size_t i = 0; i < ep.size; i++)
		bad |= (unsigned char)ep.data[i] <= ' ' || ep.data[i] == 0x7f;
	if (!ep.size || ep.data[0] != '/' || bad) {
		conv_err(c, "collector_endpoint", "%s: the collector's path, such as /api/v2/spans",
			 !ep.size ? "missing"
			 : bad	  ? "a space or control byte in it"
				  : "not a path (it starts with '/')");
	} else {
		o->zk_path = conv_hdr_str(c, "collector_endpoint", ep);
		o->zk_path_len = (uint32_t)ep.size;
	}
	upb_StringView hn = pb_str(zc, "collector_hostname");
	if (!hn.size)
		hn = cn;
	o->zk_host = conv_hdr_str(c, "collector_hostname", hn);
	o->zk_host_len = (uint32_t)hn.size;
	o->zk_trace_id_128bit = pb_bool(zc, "trace_id_128bit");
	bool sh = true;
	pb_wrapped_bool(zc, "shared_span_context", &sh);
	o->zk_shared_span_context = sh;
	int32_t v = pb_i32(zc, "collector_endpoint_version");
	if (v == 0)
		conv_err(
		    c, "collector_endpoint_version",
		    "DEPRECATED_AND_UNAVAILABLE_DO_NOT_USE (the default): Zipkin API v1 is not "
		    "available, as in Envoy (set HTTP_JSON)");
	else if (v == 2)
		conv_err(c, "collector_endpoint_version",
			 "HTTP_PROTO: not supported by Arion, which sends Zipkin API v2 JSON (set "
			 "HTTP_JSON)");
	else if (v != 1)
		conv_err(
		    c, "collector_endpoint_version",
		    "%d: not supported by Arion, which sends Zipkin API v2 JSON (set HTTP_JSON)",
		    (int)v);
	/* the spans' localEndpoint.serviceName: the node's cluster (Envoy's
	 * LocalInfo::clusterName) */
	const char *nc = c->node_cluster ? c->node_cluster : "";
	upb_StringView sv = {nc, strlen(nc)};
	o->service_name = tag_str(c, "collector_cluster", sv);
	o->service_name_len = (uint32_t)sv.size;
}

/* The provider: envoy.tracers.opentelemetry's OpenTelemetryConfig or
 * envoy.tracers.zipkin's ZipkinConfig. */
static void provider(struct conv *c, struct pb pv, struct arn_cfg_tracing *o)
{
	size_t m0 = conv_push(c, "provider");
	conv_only(c, pv, "name,typed_config");
	upb_StringView nm = pb_str(pv, "name");
	struct pb tc = pb_msg(pv, "typed_config");
	upb_StringView tn = tc.m ? arn_proto_any_type_name(tc.m) : (upb_StringView){NULL, 0};
	if (tc.m && arn_sv_eq(tn, ZIPKIN_TYPE)) {
		size_t m1 = conv_push(c, "typed_config");
		struct pb zc = conv_any(c, tc, ZIPKIN_TYPE);
		if (zc.m)
			zipkin(c, zc, o);
		conv_pop(c, m1);
		conv_pop(c, m0);
		return;
	}
	if (!tc.m || !arn_sv_eq(tn, OTEL_TYPE)) {
		conv_err(
		    c, tc.m ? "typed_config" : "",
		    "tracer '%.*s' (%.*s): Arion has the OpenTelemetry tracer (" OTEL_NAME
		    ", " OTEL_TYPE ") and the Zipkin tracer (" ZIPKIN_NAME ", " ZIPKIN_TYPE ")",
		    (int)nm.size, nm.data ? nm.data : "", (int)tn.size, tn.data ? tn.data : "");
		conv_pop(c, m0);
		return;
	}
	size_t m1 = conv_push(c, "typed_config");
	struct pb ot = conv_any(c, tc, OTEL_TYPE);
	if (ot.m) {
		/* http_service, resource_detectors and sampler are newer than
		 * Arion's copy of the message: refused as unknown fields */
		conv_only(c, ot, "grpc_service,service_name");
		struct pb gs = pb_msg(ot, "grpc_service");
		if (!gs.m) {
			conv_err(c, "grpc_service", "missing: the OTLP collector's gRPC service");
		} else {
			size_t m2 = conv_push(c, "grpc_service");
			conv_only(c, gs, "envoy_grpc,google_grpc,timeout,initial_metadata");
			if (pb_has(gs, "google_grpc"))
				conv_err(c, "google_grpc",
					 "not supported by Arion: the export goes over Arion's own "
					 "HTTP/2 upstreams (use envoy_grpc)");
			struct pb eg = pb_msg(gs, "envoy_grpc");
			if (eg.m) {
				size_t m3 = conv_push(c, "envoy_grpc");
				conv_envoy_grpc(c, eg, &o->cluster, &o->authority,
						&o->authority_len);
				conv_pop(c, m3);
			} else if (!pb_has(gs, "google_grpc")) {
				conv_err(c, "envoy_grpc", "missing: the collector's cluster");
			}
			if (pb_has(gs, "timeout"))
				conv_duration(c, gs, "timeout", &o->timeout_ms, false);
			conv_grpc_metadata(c, gs, "initial_metadata", ARN_CFG_TRACE_MD_MAX,
					   "export", &o->md, &o->n_md);
			conv_pop(c, m2);
		}
		upb_StringView sn = pb_newer_str(ot, "service_name");
		if (sn.size) {
			o->service_name = tag_str(c, "service_name", sn);
			o->service_name_len = (uint32_t)sn.size;
		}
	}
	conv_pop(c, m1);
	conv_pop(c, m0);
}

const struct arn_cfg_tracing *conv_tracing(struct conv *c, struct pb t)
{
	struct arn_cfg_tracing *o = CONV_NEW(c, struct arn_cfg_tracing, 1);
	if (!o)
		return NULL;
	size_t m = conv_push(c, "tracing");
	conv_only(c, t,
		  "client_sampling,random_sampling,overall_sampling,verbose,max_path_tag_length,"
		  "custom_tags,provider,spawn_upstream_span");
	o->client_sampling = o->random_sampling = o->overall_sampling =
	    (struct arn_cfg_fraction){10000, 10000};
	percent(c, t, "client_sampling", &o->client_sampling);
	percent(c, t, "random_sampling", &o->random_sampling);
	percent(c, t, "overall_sampling", &o->overall_sampling);
	if (pb_bool(t, "verbose"))
		conv_err(c, "verbose",
			 "not supported by Arion: its spans carry no timing annotations (set "
			 "false)");
	o->max_path_tag_length = 256;
	uint32_t mp;
	if (pb_wrapped_u32(t, "max_path_tag_length", &mp))
		o->max_path_tag_length = mp;
	custom_tags(c, t, &o->tags, &o->n_tags);
	bool su = false;
	if (pb_newer_wrapped_bool(t, "spawn_upstream_span", &su))
		o->spawn_upstream_span = su;
	struct pb pv = pb_msg(t, "provider");
	if (!pv.m)
		conv_err(c, "provider",
			 "missing: Arion traces with the OpenTelemetry (" OTEL_NAME
			 ") or the Zipkin (" ZIPKIN_NAME ") tracer, configured here");
	else
		provider(c, pv, o);
	if (!o->service_name && o->tracer == ARN_CFG_TRACER_OTEL) {
		/* Envoy's default resource service.name */
		static const char dflt[] = "unknown_service:envoy";
		o->service_name = dflt;
		o->service_name_len = sizeof(dflt) - 1;
	}
	conv_pop(c, m);
	return o;
}

const struct arn_cfg_route_trace *conv_route_trace(struct conv *c, struct pb rt)
{
	struct pb t = pb_msg(rt, "tracing"), d = pb_msg(rt, "decorator");
	if (!t.m && !d.m)
		return NULL;
	struct arn_cfg_route_trace *o = CONV_NEW(c, struct arn_cfg_route_trace, 1);
	if (!o)
		return NULL;
	o->propagate = true;
	if (t.m) {
		size_t m = conv_push(c, "tracing");
		conv_only(c, t, "client_sampling,random_sampling,overall_sampling,custom_tags");
		/* a route's are FractionalPercent */
		static const char *const f[3] = {"client_sampling", "random_sampling",
						 "overall_sampling"};
		struct arn_cfg_fraction *v[3] = {&o->client_sampling, &o->random_sampling,
						 &o->overall_sampling};
		for (int i = 0; i < 3; i++)
			if (pb_has(t, f[i]))
				conv_fractional_percent(c, pb_msg(t, f[i]), f[i], v[i]);
		custom_tags(c, t, &o->tags, &o->n_tags);
		conv_pop(c, m);
	}
	if (d.m) {
		size_t m = conv_push(c, "decorator");
		conv_only(c, d, "operation,propagate");
		upb_StringView op = pb_str(d, "operation");
		if (!op.size)
			conv_err(c, "operation", "missing (Envoy requires it)");
		o->operation = tag_str(c, "operation", op);
		o->operation_len = (uint32_t)op.size;
		bool pr = true;
		if (pb_wrapped_bool(d, "propagate", &pr))
			o->propagate = pr;
		conv_pop(c, m);
	}
	return o;
}
