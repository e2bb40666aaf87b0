/*
 * envoy.filters.http.fault's HTTPFault -> struct arn_cfg_fault: delays and
 * aborts, fixed or asked for by the request's x-envoy-fault-* headers,
 * with their percentages, the headers, upstream cluster and downstream
 * nodes that select the requests, and max_active_faults. Runtime keys are
 * names of values Arion has no runtime for: accepted, not read.
 * response_rate_limit is refused (Arion does not pace a response body).
 */
#include <string.h>

#include "config_int.h"

static void fault_delay(struct conv *c, struct pb d, struct arn_cfg_fault *o)
{
	size_t m = conv_push(c, "delay");
	conv_only(c, d, "fixed_delay,header_delay,percentage");
	o->delay = true;
	o->delay_pct = (struct arn_cfg_fraction){0, 100};
	struct pb pct = pb_msg(d, "percentage");
	if (pct.m)
		conv_fractional_percent(c, pct, "percentage", &o->delay_pct);
	const char *w = pb_which(d, "fault_delay_secifier");
	if (!w) {
		conv_err(c, "", "set fixed_delay or header_delay (Envoy requires one)");
	} else if (strcmp(w, "header_delay") == 0) {
		o->delay_header = true;
	} else {
		uint32_t ms = 0;
		if (!conv_duration(c, d, "fixed_delay", &ms, false) || ms == 0)
			conv_err(c, "fixed_delay", "must be more than 0 (Envoy)");
		else if (ms > ARN_CFG_FAULT_DELAY_MAX_MS)
			conv_err(
			    c, "fixed_delay",
			    "%u ms: Arion delays a request %u ms at most (it holds its request "
			    "buffer all along)",
			    ms, ARN_CFG_FAULT_DELAY_MAX_MS);
		o->delay_ms = ms;
	}
	conv_pop(c, m);
}

static void fault_abort(struct conv *c, struct pb a, struct arn_cfg_fault *o)
{
	size_t m = conv_push(c, "abort");
	conv_only(c, a, "http_status,grpc_status,header_abort,percentage");
	o->abort_pct = (struct arn_cfg_fraction){0, 100};
	struct pb pct = pb_msg(a, "percentage");
	if (pct.m)
		conv_fractional_percent(c, pct, "percentage", &o->abort_pct);
	const char *w = pb_which(a, "error_type");
	if (!w) {
		conv_err(c, "",
			 "set http_status, grpc_status or header_abort (Envoy requires one)");
	} else if (strcmp(w, "header_abort") == 0) {
		o->abort = ARN_CFG_FAULT_ABORT_HEADER;
	} else if (strcmp(w, "grpc_status") == 0) {
		o->abort = ARN_CFG_FAULT_ABORT_GRPC;
		o->abort_status = pb_u32(a, "grpc_status");
		if (o->abort_status > 16)
			conv_err(c, "grpc_status",
				 "%u is not a gRPC status code (0 to 16 are)", o->abort_status);
	} else {
		o->abort = ARN_CFG_FAULT_ABORT_HTTP;
		o->abort_status = pb_u32(a, "http_status");
		if (o->abort_status < 200 || o->abort_status > 599)
			conv_err(c, "http_status", "%u is not in [200, 600) (Envoy's bounds)",
				 o->abort_status);
	}
	conv_pop(c, m);
}

const struct arn_cfg_fault *conv_fault(struct conv *c, struct pb p)
{
	struct arn_cfg_fault *o = CONV_NEW(c, struct arn_cfg_fault, 1);
	if (!o)
		return NULL;
	conv_only(c, p,
		  "delay,abort,upstream_cluster,headers,downstream_nodes,max_active_faults,"
		  "delay_percent_runtime,abort_percent_runtime,delay_duration_runtime,abort_http_"
		  "status_runtime,max_active_faults_runtime,abort_grpc_status_runtime,disable_"
		  "downstream_cluster_stats");
	/* response_rate_limit and response_rate_limit_percent_runtime are
	 * left out of the list: refused by name */
	if (pb_has(p, "delay"))
		fault_delay(c, pb_msg(p, "delay"), o);
	if (pb_has(p, "abort"))
		fault_abort(c, pb_msg(p, "abort"), o);
	upb_StringView uc = pb_str(p, "upstream_cluster");
	if (uc.size) {
		o->upstream_cluster = conv_str(c, uc);
		o->upstream_cluster_len = uc.size;
	}
	size_t nh = pb_len(p, "headers");
	if (nh > ARN_CFG_FAULT_HEADERS_MAX) {
		conv_err(c, "headers", "%zu matchers: Arion takes at most %d", nh,
			 ARN_CFG_FAULT_HEADERS_MAX);
	} else if (nh) {
		o->headers = CONV_NEW(c, struct arn_cfg_header_match, nh);
		for (size_t i = 0; o->headers && i < nh; i++) {
			size_t m = conv_push(c, "headers[%zu]", i);
			conv_header_matcher(c, pb_at(p, "headers", i), &o->headers[i]);
			conv_pop(c, m);
			o->n_headers = i + 1;
		}
	}
	conv_str_list(c, p, "downstream_nodes", &o->downstream_nodes, &o->n_downstream_nodes,
		      false);
	pb_wrapped_u32(p, "max_active_faults", &o->max_active);
	return o;
}
