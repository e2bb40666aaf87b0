/*
 * Cluster -> struct arn_cfg_cluster, ClusterLoadAssignment ->
 * struct arn_cfg_endpoints.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "upb/map.h"

#include "arn_proto.h"
#include "arn_rules.h"
#include "config_int.h"

static void rule_sink(void *ctx, const char *path, const char *msg)
{
	struct conv *c = ctx;
	conv_err_at(c, path[0] == '.' ? path + 1 : path, msg);
}

/* Endpoint.health_check_config, as Envoy: active checks of this endpoint
 * go to another port (port_value) and send another Host (hostname). The
 * API Arion is built with (gRPC 1.51's copy of Envoy's) has no address or
 * disable_active_health_check yet: a resource with them is refused as
 * having unknown fields. */
static void endpoint_hc_config(struct conv *c, struct pb hcc, struct arn_cfg_endpoint *ep)
{
	size_t m = conv_push(c, "health_check_config");
	conv_only(c, hcc, "port_value,hostname");
	uint32_t port = pb_u32(hcc, "port_value");
	if (port > 65535)
		conv_err(c, "port_value", "%u is not a port", port);
	ep->hc_port = (uint16_t)port;
	upb_StringView hn = pb_str(hcc, "hostname");
	if (hn.size)
		ep->hc_hostname = conv_hdr_str(c, "hostname", hn);
	conv_pop(c, m);
}

/* ---- ClusterLoadAssignment ----------------------------------------------- */

/*
 * LbEndpoint.metadata: Envoy's RING_HASH and MAGLEV hash a host's
 * filter_metadata["envoy.lb"] string "hash_key", when it is set and not
 * empty, instead of its address (HashingLoadBalancer::hashKey). Arion's
 * tables hash the address (lib/http/http_lb.c), so such a key is refused
 * rather than sending every key to another host than Envoy's.
 * envoy.transport_socket_match chooses the endpoint's transport socket
 * (conv_tsm.c). The rest of the metadata is accepted and not acted on.
 */
static void endpoint_metadata(struct conv *c, struct pb md, struct arn_cfg_endpoint *ep)
{
	const upb_Map *fm = upb_Message_Get(md.m, pb_field(md, "filter_metadata")).map_val;
	conv_tsm_endpoint(c, fm, ep); /* envoy.transport_socket_match (conv_tsm.c) */
	upb_MessageValue v;
	if (!fm || !upb_Map_Get(fm, (upb_MessageValue){.str_val = {"envoy.lb", 8}}, &v) ||
	    !v.msg_val)
		return;
	struct pb st = {v.msg_val, arn_proto_msgdef("google.protobuf.Struct")};
	const upb_Map *fields = upb_Message_Get(st.m, pb_field(st, "fields")).map_val;
	if (!fields || !upb_Map_Get(fields, (upb_MessageValue){.str_val = {"hash_key", 8}}, &v) ||
	    !v.msg_val)
		return;
	struct pb val = {v.msg_val, arn_proto_msgdef("google.protobuf.Value")};
	const char *kind = pb_which(val, "kind");
	if (kind && strcmp(kind, "string_value") == 0 && pb_str(val, "string_value").size)
		conv_err(c, "metadata.filter_metadata[envoy.lb].hash_key",
			 "not supported: RING_HASH and MAGLEV hash the endpoint's address");
}

void conv_endpoints_into(struct conv *c, struct pb cla, struct arn_cfg_endpoints *e)
{
	conv_only(c, cla, "cluster_name,endpoints,policy");
	e->overprovisioning_factor = 140;
	struct pb pol = pb_msg(cla, "policy");
	if (pol.m) {
		size_t m = conv_push(c, "policy");
		conv_only(c, pol, "overprovisioning_factor");
		uint32_t f;
		if (pb_wrapped_u32(pol, "overprovisioning_factor", &f)) {
			if (f == 0)
				conv_err(c, "overprovisioning_factor", "must be greater than 0");
			e->overprovisioning_factor = f;
		}
		conv_pop(c, m);
	}
	size_t nl = pb_len(cla, "endpoints");
	uint32_t maxprio = 0;
	for (size_t i = 0; i < nl; i++) {
		uint32_t p = pb_u32(pb_at(cla, "endpoints", i), "priority");
		if (p > 127) {
			size_t m = conv_push(c, "endpoints[%zu]", i);
			conv_err(c, "priority", "%u: at most 127 priorities", p);
			conv_pop(c, m);
			return;
		}
		if (p > maxprio)
			maxprio = p;
	}
	e->n_priorities = nl ? maxprio + 1 : 0;
	e->priorities = CONV_NEW(c, struct arn_cfg_priority, e->n_priorities ? e->n_priorities : 1);
	if (!e->priorities)
		return;
	/* count localities per priority first, so each gets one array */
	for (size_t i = 0; i < nl; i++)
		e->priorities[pb_u32(pb_at(cla, "endpoints", i), "priority")].n_localities++;
	for (size_t p = 0; p < e->n_priorities; p++) {
		struct arn_cfg_priority *pr = &e->priorities[p];
		pr->localities =
		    CONV_NEW(c, struct arn_cfg_locality, pr->n_localities ? pr->n_localities : 1);
		if (!pr->localities)
			return;
		pr->n_localities = 0;
	}
	for (size_t i = 0; i < nl; i++) {
		struct pb lle = pb_at(cla, "endpoints", i);
		size_t m = conv_push(c, "endpoints[%zu]", i);
		conv_only(c, lle, "locality,lb_endpoints,load_balancing_weight,priority");
		struct arn_cfg_priority *pr = &e->priorities[pb_u32(lle, "priority")];
		struct arn_cfg_locality *lo = &pr->localities[pr->n_localities++];
		struct pb loc = pb_msg(lle, "locality");
		if (loc.m) {
			lo->region = conv_str(c, pb_str(loc, "region"));
			lo->zone = conv_str(c, pb_str(loc, "zone"));
			lo->sub_zone = conv_str(c, pb_str(loc, "sub_zone"));
		}
		if (pb_wrapped_u32(lle, "load_balancing_weight", &lo->weight) && lo->weight == 0)
			conv_err(c, "load_balancing_weight", "must be at least 1");
		/* Envoy's PriorityStateManager takes a weight only beside a
		 * locality (has_locality() && has_load_balancing_weight()) */
		if (!loc.m)
			lo->weight = 0;
		size_t ne = pb_len(lle, "lb_endpoints");
		lo->endpoints = CONV_NEW(c, struct arn_cfg_endpoint, ne ? ne : 1);
		if (!lo->endpoints) {
			conv_pop(c, m);
			return;
		}
		lo->n_endpoints = ne;
		pr->n_endpoints += ne;
		e->n_endpoints += ne;
		for (size_t j = 0; j < ne; j++) {
			struct pb lbe = pb_at(lle, "lb_endpoints", j);
			struct arn_cfg_endpoint *ep = &lo->endpoints[j];
			size_t m2 = conv_push(c, "lb_endpoints[%zu]", j);
			conv_only(c, lbe, "endpoint,health_status,metadata,load_balancing_weight");
			struct pb en = pb_msg(lbe, "endpoint");
			if (!en.m) {
				conv_err(c, "endpoint", "missing");
			} else {
				size_t m3 = conv_push(c, "endpoint");
				conv_only(c, en, "address,hostname,health_check_config");
				conv_socket_address(c, pb_msg(en, "address"), "address", &ep->addr,
						    &ep->port, false);
				if (pb_has(en, "hostname"))
					ep->hostname = conv_str(c, pb_str(en, "hostname"));
				struct pb hcc = pb_msg(en, "health_check_config");
				if (hcc.m)
					endpoint_hc_config(c, hcc, ep);
				conv_pop(c, m3);
			}
			struct pb md = pb_msg(lbe, "metadata");
			if (md.m)
				endpoint_metadata(c, md, ep);
			int32_t hs = pb_i32(lbe, "health_status");
			if (hs < 0 || hs > 5)
				conv_err(c, "health_status", "unknown value %d", hs);
			ep->health = (uint8_t)hs;
			ep->weight = 1;
			if (pb_wrapped_u32(lbe, "load_balancing_weight", &ep->weight) &&
			    ep->weight == 0)
				conv_err(c, "load_balancing_weight", "must be at least 1");
			conv_pop(c, m2);
		}
		conv_pop(c, m);
	}
}

struct arn_cfg_obj *arn_conv_endpoints(struct conv *c, struct pb cla)
{
	upb_StringView cn = pb_str(cla, "cluster_name");
	struct arn_cfg_endpoints *e = conv_obj_new(c, sizeof(*e), ARN_CFG_CLA, cn);
	if (!e)
		return NULL;
	if (cn.size == 0)
		conv_err(c, "cluster_name", "missing: it names the EDS cluster (X12)");
	conv_endpoints_into(c, cla, e);
	return &e->obj;
}

/* ---- Cluster ---------------------------------------------------------------- */

/* upstream_connection_options: tcp_keepalive (Envoy Gateway's
 * BackendTrafficPolicy tcpKeepalive); Envoy sets SO_KEEPALIVE and the
 * fields given, the kernel's defaults for the others (Linux: 7200 s idle,
 * 75 s between probes, 9 probes), which Arion's TCP takes the same. */
static void upstream_options(struct conv *c, struct pb o, struct arn_cfg_cluster *out)
{
	if (!o.m)
		return;
	size_t m = conv_push(c, "upstream_connection_options");
	conv_only(c, o, "tcp_keepalive");
	struct pb k = pb_msg(o, "tcp_keepalive");
	if (k.m) {
		size_t m2 = conv_push(c, "tcp_keepalive");
		conv_only(c, k, "keepalive_probes,keepalive_time,keepalive_interval");
		out->keepalive = true;
		out->keepalive_time_s = 7200;
		out->keepalive_intvl_s = 75;
		out->keepalive_probes = 9;
		pb_wrapped_u32(k, "keepalive_time", &out->keepalive_time_s);
		pb_wrapped_u32(k, "keepalive_interval", &out->keepalive_intvl_s);
		pb_wrapped_u32(k, "keepalive_probes", &out->keepalive_probes);
		/* Linux's bounds (TCP_KEEPIDLE / TCP_KEEPINTVL at most
		 * 32767 s, TCP_KEEPCNT at most 127): Envoy's setsockopt fails
		 * past them and the connection is not made */
		if (out->keepalive_time_s == 0 || out->keepalive_time_s > 32767)
			conv_err(c, "keepalive_time", "must be 1..32767 seconds");
		if (out->keepalive_intvl_s == 0 || out->keepalive_intvl_s > 32767)
			conv_err(c, "keepalive_interval", "must be 1..32767 seconds");
		if (out->keepalive_probes == 0 || out->keepalive_probes > 127)
			conv_err(c, "keepalive_probes", "must be 1..127");
		conv_pop(c, m2);
	}
	conv_pop(c, m);
}

static void thresholds(struct conv *c, struct pb cb, struct arn_cfg_cluster *cl)
{
	for (int p = 0; p < 2; p++) {
		struct arn_cfg_thresholds *t = &cl->thresholds[p];
		t->priority = (uint8_t)p;
		t->max_connections = t->max_pending_requests = t->max_requests = 1024;
		t->max_retries = 3;
		t->max_connection_pools = UINT32_MAX;
	}
	cl->host_max_connections = UINT32_MAX;
	if (!cb.m)
		return;
	size_t m0 = conv_push(c, "circuit_breakers");
	conv_only(c, cb, "thresholds,per_host_thresholds");
	/* per_host_thresholds: Envoy enforces max_connections per host and
	 * nothing else there ("currently only the max_connections field is
	 * supported for per-host limits"); the others are refused rather
	 * than ignored. Arion's requests carry no priority, so DEFAULT's. */
	for (size_t i = 0; i < pb_len(cb, "per_host_thresholds"); i++) {
		struct pb th = pb_at(cb, "per_host_thresholds", i);
		size_t m = conv_push(c, "per_host_thresholds[%zu]", i);
		conv_only(c, th, "priority,max_connections,track_remaining");
		int32_t pr = pb_i32(th, "priority");
		if (pr < 0 || pr > 1)
			conv_err(c, "priority", "unknown value %d", pr);
		else if (pr == 0)
			pb_wrapped_u32(th, "max_connections", &cl->host_max_connections);
		conv_pop(c, m);
	}
	bool seen[2] = {false, false};
	for (size_t i = 0; i < pb_len(cb, "thresholds"); i++) {
		struct pb th = pb_at(cb, "thresholds", i);
		size_t m = conv_push(c, "thresholds[%zu]", i);
		conv_only(c, th,
			  "priority,max_connections,max_pending_requests,max_requests,max_"
			  "retries,max_connection_pools,track_remaining");
		int32_t pr = pb_i32(th, "priority");
		if (pr < 0 || pr > 1) {
			conv_err(c, "priority", "unknown value %d", pr);
		} else {
			if (seen[pr])
				conv_err(c, "priority", "%s is given twice",
					 pr ? "HIGH" : "DEFAULT");
			seen[pr] = true;
			struct arn_cfg_thresholds *t = &cl->thresholds[pr];
			pb_wrapped_u32(th, "max_connections", &t->max_connections);
			pb_wrapped_u32(th, "max_pending_requests", &t->max_pending_requests);
			pb_wrapped_u32(th, "max_requests", &t->max_requests);
			pb_wrapped_u32(th, "max_retries", &t->max_retries);
			pb_wrapped_u32(th, "max_connection_pools", &t->max_connection_pools);
			t->track_remaining = pb_bool(th, "track_remaining");
		}
		conv_pop(c, m);
	}
	conv_pop(c, m0);
}

/* An HTTP check's request_headers_to_add / _to_remove. Envoy substitutes
 * command operators in the values; Arion writes them as they are, so a
 * value with one is refused rather than sent as "%...%". The request
 * must fit what worker 0 writes it into (ARN_CFG_HC_REQUEST_MAX). */
static void hc_headers(struct conv *c, struct pb x, struct arn_cfg_health_check *h)
{
	struct arn_cfg_header_ops *o = &h->headers;
	conv_header_add_list(c, x, "request_headers_to_add", &o->req_add, &o->n_req_add);
	conv_header_remove_list(c, x, "request_headers_to_remove", &o->req_remove,
				&o->n_req_remove);
	if (o->n_req_add > ARN_CFG_HC_MAX_HEADERS)
		conv_err(c, "request_headers_to_add", "%zu headers: at most %d", o->n_req_add,
			 ARN_CFG_HC_MAX_HEADERS);
	size_t bytes = 0;
	for (size_t i = 0; o->req_add && i < o->n_req_add; i++) {
		const struct arn_cfg_header_add *a = &o->req_add[i];
		if (a->value && memchr(a->value, '%', a->value_len)) {
			size_t m = conv_push(c, "request_headers_to_add[%zu]", i);
			conv_err(c, "header.value",
				 "command operators are not supported in health check headers");
			conv_pop(c, m);
		}
		if (a->key_len == 4 && memcmp(a->key, "host", 4) == 0) {
			size_t m = conv_push(c, "request_headers_to_add[%zu]", i);
			conv_err(c, "header.key",
				 "'host' may not be modified (Envoy refuses it too)");
			conv_pop(c, m);
		}
		bytes += a->key_len + a->value_len + 4;
	}
	for (size_t i = 0; o->req_remove && i < o->n_req_remove; i++)
		if (o->req_remove[i].len == 4 && memcmp(o->req_remove[i].name, "host", 4) == 0) {
			size_t m = conv_push(c, "request_headers_to_remove[%zu]", i);
			conv_err(c, "", "'host' cannot be removed (Envoy: nor can pseudo-headers)");
			conv_pop(c, m);
		}
	/* the request line, host, user-agent and connection with room for
	 * the longest path and host a configuration may give (255 each) */
	if (bytes + 640 > ARN_CFG_HC_REQUEST_MAX)
		conv_err(c, "request_headers_to_add",
			 "%zu bytes of headers: the request must fit %d bytes", bytes,
			 ARN_CFG_HC_REQUEST_MAX);
}

static int hex_payload(struct conv *c, struct pb pl, uint8_t **out, size_t *len)
{
	conv_only(c, pl, "text,binary");
	const char *w = pb_which(pl, "payload");
	if (!w) {
		conv_err(c, "", "empty payload");
		return -EINVAL;
	}
	upb_StringView s = pb_str(pl, w);
	if (strcmp(w, "binary") == 0) {
		*out = conv_alloc(c, s.size ? s.size : 1);
		if (*out)
			memcpy(*out, s.data, s.size);
		*len = s.size;
		return 0;
	}
	if (s.size % 2) {
		conv_err(c, "text", "hex text must have an even number of digits");
		return -EINVAL;
	}
	*out = conv_alloc(c, s.size / 2 + 1);
	if (!*out)
		return -ENOMEM;
	for (size_t i = 0; i < s.size; i += 2) {
		unsigned v;
		char b[3] = {s.data[i], s.data[i + 1], 0};
		if (sscanf(b, "%2x", &v) != 1 || !strchr("0123456789abcdefABCDEF", b[0]) ||
		    !strchr("0123456789abcdefABCDEF", b[1])) {
			conv_err(c, "text", "not hex");
			return -EINVAL;
		}
		(*out)[i / 2] = (uint8_t)v;
	}
	*len = s.size / 2;
	return 0;
}

static void health_check(struct conv *c, struct pb hc, struct arn_cfg_health_check *h)
{
	conv_only(c, hc,
		  "timeout,interval,initial_jitter,interval_jitter,unhealthy_threshold,"
		  "healthy_threshold,reuse_connection,http_health_check,tcp_health_check,no_"
		  "traffic_interval,unhealthy_interval,unhealthy_edge_interval,healthy_edge_"
		  "interval,always_log_health_check_failures,interval_jitter_percent");
	if (!conv_duration(c, hc, "timeout", &h->timeout_ms, true) && !pb_has(hc, "timeout"))
		conv_err(c, "timeout", "missing");
	if (!conv_duration(c, hc, "interval", &h->interval_ms, true) && !pb_has(hc, "interval"))
		conv_err(c, "interval", "missing");
	conv_duration(c, hc, "interval_jitter", &h->interval_jitter_ms, false);
	if (!pb_wrapped_u32(hc, "unhealthy_threshold", &h->unhealthy_threshold))
		conv_err(c, "unhealthy_threshold", "missing");
	if (!pb_wrapped_u32(hc, "healthy_threshold", &h->healthy_threshold))
		conv_err(c, "healthy_threshold", "missing");
	h->no_traffic_interval_ms = 60000;
	conv_duration(c, hc, "no_traffic_interval", &h->no_traffic_interval_ms, true);
	h->unhealthy_interval_ms = h->interval_ms;
	conv_duration(c, hc, "unhealthy_interval", &h->unhealthy_interval_ms, true);
	h->unhealthy_edge_interval_ms = h->unhealthy_interval_ms;
	conv_duration(c, hc, "unhealthy_edge_interval", &h->unhealthy_edge_interval_ms, true);
	h->healthy_edge_interval_ms = h->interval_ms;
	conv_duration(c, hc, "healthy_edge_interval", &h->healthy_edge_interval_ms, true);
	conv_duration(c, hc, "initial_jitter", &h->initial_jitter_ms, false);
	h->interval_jitter_percent = pb_u32(hc, "interval_jitter_percent");
	h->reuse_connection = true;
	pb_wrapped_bool(hc, "reuse_connection", &h->reuse_connection);
	const char *w = pb_which(hc, "health_checker");
	if (!w) {
		conv_err(c, "", "no health checker: set http_health_check or tcp_health_check");
	} else if (strcmp(w, "http_health_check") == 0) {
		struct pb x = pb_msg(hc, "http_health_check");
		size_t m = conv_push(c, "http_health_check");
		conv_only(c, x,
			  "host,path,expected_statuses,request_headers_to_add,request_headers_"
			  "to_remove,codec_client_type");
		h->kind = ARN_CFG_HC_HTTP;
		if (pb_has(x, "host"))
			h->host = conv_hdr_str(c, "host", pb_str(x, "host"));
		upb_StringView p = pb_str(x, "path");
		if (p.size == 0 || p.data[0] != '/')
			conv_err(c, "path", "missing or not starting with /");
		h->path = conv_hdr_str(c, "path", p);
		if (pb_i32(x, "codec_client_type") != 0)
			conv_err(c, "codec_client_type", "only HTTP1 is supported");
		hc_headers(c, x, h);
		size_t ns = pb_len(x, "expected_statuses");
		h->expected_statuses = CONV_NEW(c, uint32_t, 2 * (ns ? ns : 1));
		if (h->expected_statuses) {
			if (!ns) {
				h->expected_statuses[0] = 200;
				h->expected_statuses[1] = 201;
				h->n_expected_statuses = 1;
			}
			for (size_t i = 0; i < ns; i++) {
				struct pb r = pb_at(x, "expected_statuses", i);
				int64_t s = pb_i64(r, "start"), e = pb_i64(r, "end");
				if (s < 100 || e > 600 || e <= s)
					conv_err(
					    c, "expected_statuses",
					    "[%lld, %lld) is not a range of HTTP statuses within "
					    "[100, 600)",
					    (long long)s, (long long)e);
				h->expected_statuses[2 * i] = (uint32_t)s;
				h->expected_statuses[2 * i + 1] = (uint32_t)e;
			}
			if (ns)
				h->n_expected_statuses = ns;
		}
		conv_pop(c, m);
	} else if (strcmp(w, "tcp_health_check") == 0) {
		struct pb x = pb_msg(hc, "tcp_health_check");
		size_t m = conv_push(c, "tcp_health_check");
		conv_only(c, x, "send,receive");
		h->kind = ARN_CFG_HC_TCP;
		struct pb send = pb_msg(x, "send");
		if (send.m) {
			size_t m2 = conv_push(c, "send");
			hex_payload(c, send, &h->send, &h->send_len);
			conv_pop(c, m2);
		}
		size_t nr = pb_len(x, "receive");
		if (nr) {
			h->receive = CONV_NEW(c, uint8_t *, nr);
			h->receive_len = CONV_NEW(c, size_t, nr);
			if (h->receive && h->receive_len) {
				h->n_receive = nr;
				for (size_t i = 0; i < nr; i++) {
					size_t m2 = conv_push(c, "receive[%zu]", i);
					hex_payload(c, pb_at(x, "receive", i), &h->receive[i],
						    &h->receive_len[i]);
					conv_pop(c, m2);
				}
			}
		}
		conv_pop(c, m);
	} else {
		conv_err(c, w, "not supported (HTTP and TCP health checks are)");
	}
}

static void outlier(struct conv *c, struct pb od, struct arn_cfg_outlier *o)
{
	o->present = true;
	conv_only(c, od,
		  "consecutive_5xx,interval,base_ejection_time,max_ejection_percent,"
		  "enforcing_consecutive_5xx,enforcing_success_rate,success_rate_minimum_"
		  "hosts,success_rate_request_volume,success_rate_stdev_factor,consecutive_"
		  "gateway_failure,enforcing_consecutive_gateway_failure,split_external_local_"
		  "origin_errors,consecutive_local_origin_failure,max_ejection_time,failure_"
		  "percentage_threshold,enforcing_failure_percentage,failure_percentage_"
		  "minimum_hosts,failure_percentage_request_volume,enforcing_consecutive_"
		  "local_origin_failure,enforcing_local_origin_success_rate,enforcing_"
		  "failure_percentage_local_origin");
	o->consecutive_5xx = 5;
	o->consecutive_gateway_failure = 5;
	o->consecutive_local_origin_failure = 5;
	o->interval_ms = 10000;
	o->base_ejection_time_ms = 30000;
	o->max_ejection_time_ms = 300000;
	o->max_ejection_percent = 10;
	o->enforcing_consecutive_5xx = 100;
	o->enforcing_consecutive_gateway_failure = 0;
	o->enforcing_success_rate = 100;
	o->success_rate_minimum_hosts = 5;
	o->success_rate_request_volume = 100;
	o->success_rate_stdev_factor = 1900;
	o->failure_percentage_threshold = 85;
	o->enforcing_failure_percentage = 0;
	o->failure_percentage_minimum_hosts = 5;
	o->failure_percentage_request_volume = 50;
	o->enforcing_consecutive_local_origin_failure = 100;
	o->enforcing_local_origin_success_rate = 100;
	o->enforcing_failure_percentage_local_origin = 0;
	pb_wrapped_u32(od, "consecutive_5xx", &o->consecutive_5xx);
	pb_wrapped_u32(od, "consecutive_gateway_failure", &o->consecutive_gateway_failure);
	pb_wrapped_u32(od, "consecutive_local_origin_failure",
		       &o->consecutive_local_origin_failure);
	conv_duration(c, od, "interval", &o->interval_ms, true);
	conv_duration(c, od, "base_ejection_time", &o->base_ejection_time_ms, true);
	conv_duration(c, od, "max_ejection_time", &o->max_ejection_time_ms, true);
	pb_wrapped_u32(od, "max_ejection_percent", &o->max_ejection_percent);
	if (o->max_ejection_percent > 100)
		conv_err(c, "max_ejection_percent", "more than 100");
	static const char *pcts[] = {"enforcing_consecutive_5xx",
				     "enforcing_success_rate",
				     "enforcing_consecutive_gateway_failure",
				     "enforcing_failure_percentage",
				     "failure_percentage_threshold",
				     "enforcing_consecutive_local_origin_failure",
				     "enforcing_local_origin_success_rate",
				     "enforcing_failure_percentage_local_origin"};
	uint32_t *dst[] = {&o->enforcing_consecutive_5xx,
			   &o->enforcing_success_rate,
			   &o->enforcing_consecutive_gateway_failure,
			   &o->enforcing_failure_percentage,
			   &o->failure_percentage_threshold,
			   &o->enforcing_consecutive_local_origin_failure,
			   &o->enforcing_local_origin_success_rate,
			   &o->enforcing_failure_percentage_local_origin};
	for (int i = 0; i < 8; i++)
		if (pb_wrapped_u32(od, pcts[i], dst[i]) && *dst[i] > 100)
			conv_err(c, pcts[i], "more than 100");
	pb_wrapped_u32(od, "success_rate_minimum_hosts", &o->success_rate_minimum_hosts);
	pb_wrapped_u32(od, "success_rate_request_volume", &o->success_rate_request_volume);
	pb_wrapped_u32(od, "success_rate_stdev_factor", &o->success_rate_stdev_factor);
	pb_wrapped_u32(od, "failure_percentage_minimum_hosts",
		       &o->failure_percentage_minimum_hosts);
	pb_wrapped_u32(od, "failure_percentage_request_volume",
		       &o->failure_percentage_request_volume);
	o->split_external_local_origin_errors = pb_bool(od, "split_external_local_origin_errors");
}

/* Http1ProtocolOptions toward the hosts: what Arion models of it. The
 * other fields are accepted and have no effect (as before this was read). */
static void h1_options(struct conv *c, struct pb o, struct arn_cfg_http_proto *h)
{
	if (!o.m)
		return;
	size_t m = conv_push(c, "http_protocol_options");
	/* the rest of Http1ProtocolOptions was accepted and ignored here */
	conv_only(c, o, "enable_trailers,header_key_format");
	h->enable_trailers = pb_bool(o, "enable_trailers");
	conv_header_key_format(c, o);
	conv_pop(c, m);
}

static void http_options(struct conv *c, struct pb hpo, struct arn_cfg_http_proto *h)
{
	conv_only(c, hpo,
		  "common_http_protocol_options,upstream_http_protocol_options,explicit_"
		  "http_config,use_downstream_protocol_config,auto_config");
	struct pb cpo = pb_msg(hpo, "common_http_protocol_options");
	if (cpo.m) {
		size_t m = conv_push(c, "common_http_protocol_options");
		conv_only(c, cpo,
			  "idle_timeout,max_headers_count,max_requests_per_connection,"
			  "max_connection_duration");
		conv_duration(c, cpo, "idle_timeout", &h->idle_timeout_ms, false);
		conv_headers_count(c, cpo, &h->max_headers_count);
		pb_wrapped_u32(cpo, "max_requests_per_connection", &h->max_requests_per_connection);
		conv_duration(c, cpo, "max_connection_duration", &h->max_connection_duration_ms,
			      false);
		conv_pop(c, m);
	}
	struct pb up = pb_msg(hpo, "upstream_http_protocol_options");
	if (up.m) {
		size_t m = conv_push(c, "upstream_http_protocol_options");
		conv_only(c, up, "");
		conv_pop(c, m);
	}
	const char *w = pb_which(hpo, "upstream_protocol_options");
	if (w && strcmp(w, "explicit_http_config") == 0) {
		struct pb e = pb_msg(hpo, "explicit_http_config");
		const char *p = pb_which(e, "protocol_config");
		size_t m = conv_push(c, "explicit_http_config");
		if (p && strcmp(p, "http2_protocol_options") == 0) {
			h->upstream = 1;
			arn_conv_h2_options(c, pb_msg(e, "http2_protocol_options"), &h->h2);
		} else if (p && strcmp(p, "http_protocol_options") == 0) {
			h1_options(c, pb_msg(e, "http_protocol_options"), h);
		} else if (p && strcmp(p, "http3_protocol_options") == 0)
			conv_err(c, p, "HTTP/3 is not supported");
		else if (!p)
			conv_err(c, "", "set http_protocol_options or http2_protocol_options");
		conv_pop(c, m);
	} else if (w) {
		/* use_downstream_protocol_config, auto_config: HTTP/2's options
		 * for the connections that speak it */
		h->upstream = strcmp(w, "use_downstream_protocol_config") == 0 ? 2 : 3;
		struct pb e = pb_msg(hpo, w);
		size_t m = conv_push(c, "%s", w);
		/* http3_protocol_options, alternate_protocols_cache_options:
		 * no HTTP/3 in Arion */
		conv_only(c, e, "http_protocol_options,http2_protocol_options");
		arn_conv_h2_options(c, pb_msg(e, "http2_protocol_options"), &h->h2);
		h1_options(c, pb_msg(e, "http_protocol_options"), h);
		conv_pop(c, m);
	}
}

static void unref_cb(void *o)
{
	arn_cfg_obj_unref(o);
}

struct arn_cfg_obj *arn_conv_cluster(struct conv *c, struct pb cl)
{
	upb_StringView name = pb_str(cl, "name");
	struct arn_cfg_cluster *out = conv_obj_new(c, sizeof(*out), ARN_CFG_CLUSTER, name);
	if (!out)
		return NULL;
	struct arn_rule_sink sink = {rule_sink, c};
	arn_rules_cluster((const void *)cl.m, "", c->arena, &sink); /* X12, X13 */
	conv_only(c, cl,
		  "name,alt_stat_name,type,eds_cluster_config,connect_timeout,per_connection_"
		  "buffer_limit_bytes,lb_policy,load_assignment,health_checks,max_requests_per_"
		  "connection,circuit_breakers,common_http_protocol_options,http_protocol_options,"
		  "http2_protocol_options,typed_extension_protocol_options,dns_lookup_family,dns_"
		  "refresh_rate,respect_dns_ttl,wait_for_warm_on_init,outlier_detection,cleanup_"
		  "interval,ring_hash_lb_config,maglev_lb_config,least_request_lb_config,round_"
		  "robin_lb_config,common_lb_config,transport_socket,transport_socket_matches,"
		  "metadata,ignore_health_on_"
		  "host_removal,track_timeout_budgets,dns_failure_refresh_rate,dns_resolvers,use_"
		  "tcp_for_dns_lookups,typed_dns_resolver_config,dns_resolution_config,"
		  "upstream_connection_options");
	if (name.size == 0)
		conv_err(c, "name", "missing");
	upstream_options(c, pb_msg(cl, "upstream_connection_options"), out);
	if (pb_has(cl, "alt_stat_name"))
		out->alt_stat_name = conv_str(c, pb_str(cl, "alt_stat_name"));
	const char *dt = pb_which(cl, "cluster_discovery_type");
	int32_t type = pb_i32(cl, "type");
	if (dt && strcmp(dt, "cluster_type") == 0) {
		conv_err(c, "cluster_type",
			 "custom cluster types are not supported (STATIC, STRICT_DNS, "
			 "LOGICAL_DNS and EDS are)");
	} else if (type == 0) {
		out->type = ARN_CFG_CLUSTER_STATIC;
	} else if (type == 3) {
		out->type = ARN_CFG_CLUSTER_EDS;
	} else if (type == 1 || type == 2) {
		out->type = type == 1 ? ARN_CFG_CLUSTER_STRICT_DNS : ARN_CFG_CLUSTER_LOGICAL_DNS;
	} else {
		conv_err(c, "type",
			 "%s is not supported: Arion supports STATIC, STRICT_DNS, LOGICAL_DNS "
			 "and EDS clusters",
			 type == 4 ? "ORIGINAL_DST" : "this type");
	}
	out->connect_timeout_ms = 5000;
	conv_duration(c, cl, "connect_timeout", &out->connect_timeout_ms, true);
	out->per_connection_buffer_limit = 1024 * 1024;
	pb_wrapped_u32(cl, "per_connection_buffer_limit_bytes", &out->per_connection_buffer_limit);
	if (out->per_connection_buffer_limit == 0)
		conv_err(c, "per_connection_buffer_limit_bytes", "must be greater than 0");
	switch (pb_i32(cl, "lb_policy")) {
	case 0:
		out->lb = ARN_CFG_LB_ROUND_ROBIN;
		break;
	case 1:
		out->lb = ARN_CFG_LB_LEAST_REQUEST;
		break;
	case 2:
		out->lb = ARN_CFG_LB_RING_HASH;
		break;
	case 3:
		out->lb = ARN_CFG_LB_RANDOM;
		break;
	case 5:
		out->lb = ARN_CFG_LB_MAGLEV;
		break;
	default:
		conv_err(c, "lb_policy",
			 "not supported (ROUND_ROBIN, LEAST_REQUEST, RANDOM, "
			 "RING_HASH, MAGLEV are)");
	}
	const char *lbc = pb_which(cl, "lb_config");
	out->least_request_choices = 2;
	out->ring_min_size = 1024;
	out->ring_max_size = 8 * 1024 * 1024;
	out->maglev_table_size = 65537;
	if (lbc) {
		size_t m = conv_push(c, "%s", lbc);
		struct pb x = pb_msg(cl, lbc);
		bool fits =
		    (strcmp(lbc, "ring_hash_lb_config") == 0 && out->lb == ARN_CFG_LB_RING_HASH) ||
		    (strcmp(lbc, "maglev_lb_config") == 0 && out->lb == ARN_CFG_LB_MAGLEV) ||
		    (strcmp(lbc, "least_request_lb_config") == 0 &&
		     out->lb == ARN_CFG_LB_LEAST_REQUEST) ||
		    (strcmp(lbc, "round_robin_lb_config") == 0 &&
		     out->lb == ARN_CFG_LB_ROUND_ROBIN);
		if (!fits)
			conv_err(c, "", "does not match lb_policy");
		if (strcmp(lbc, "ring_hash_lb_config") == 0) {
			conv_only(c, x, "minimum_ring_size,maximum_ring_size,hash_function");
			pb_wrapped_u64(x, "minimum_ring_size", &out->ring_min_size);
			pb_wrapped_u64(x, "maximum_ring_size", &out->ring_max_size);
			if (out->ring_max_size > 8 * 1024 * 1024)
				conv_err(c, "maximum_ring_size", "at most 8388608");
			if (out->ring_min_size > out->ring_max_size)
				conv_err(c, "minimum_ring_size", "greater than maximum_ring_size");
			int32_t hf = pb_i32(x, "hash_function");
			if (hf < 0 || hf > 1)
				conv_err(c, "hash_function", "unknown value");
			out->ring_hash_fn = (uint8_t)hf;
		} else if (strcmp(lbc, "maglev_lb_config") == 0) {
			conv_only(c, x, "table_size");
			pb_wrapped_u64(x, "table_size", &out->maglev_table_size);
			uint64_t n = out->maglev_table_size;
			bool prime = n >= 2 && n <= 5000011;
			for (uint64_t d = 2; prime && d * d <= n; d++)
				prime = n % d != 0;
			if (!prime)
				conv_err(c, "table_size", "%llu: must be a prime up to 5000011",
					 (unsigned long long)n);
		} else if (strcmp(lbc, "least_request_lb_config") == 0) {
			conv_only(c, x, "choice_count");
			if (pb_wrapped_u32(x, "choice_count", &out->least_request_choices) &&
			    out->least_request_choices < 2)
				conv_err(c, "choice_count", "must be at least 2");
		} else {
			conv_only(c, x, "");
		}
		conv_pop(c, m);
	}
	out->healthy_panic_threshold = 5000;
	struct pb clb = pb_msg(cl, "common_lb_config");
	if (clb.m) {
		size_t m = conv_push(c, "common_lb_config");
		conv_only(
		    c, clb,
		    "healthy_panic_threshold,override_host_status,locality_weighted_lb_config");
		/* an empty message (Envoy's LocalityWeightedLbConfig has no
		 * field); Envoy Gateway sets it on every cluster */
		struct pb lw = pb_msg(clb, "locality_weighted_lb_config");
		if (lw.m) {
			size_t m2 = conv_push(c, "locality_weighted_lb_config");
			conv_only(c, lw, "");
			conv_pop(c, m2);
			out->locality_weighted = true;
		}
		struct pb pct = pb_msg(clb, "healthy_panic_threshold");
		if (pct.m) {
			double v = 0;
			pb_wrapped_double(clb, "healthy_panic_threshold", &v);
			if (!(v >= 0 && v <= 100))
				conv_err(c, "healthy_panic_threshold",
					 "must be 0 to 100 (percent)");
			else
				out->healthy_panic_threshold = (uint32_t)lround(v * 100);
		}
		/* the states a stateful session's host may be in (Envoy's
		 * createOverrideHostStatus: each status as it is) */
		struct pb ohs = pb_msg(clb, "override_host_status");
		if (ohs.m) {
			size_t m2 = conv_push(c, "override_host_status");
			conv_only(c, ohs, "statuses");
			out->override_host_set = true;
			for (size_t i = 0; i < pb_len(ohs, "statuses"); i++) {
				int32_t hs = pb_i32_at(ohs, "statuses", i);
				if (hs < ARN_CFG_HEALTH_UNKNOWN || hs > ARN_CFG_HEALTH_DEGRADED)
					conv_err(c, "statuses", "unknown value %d", hs);
				else
					out->override_host_mask |= (uint8_t)(1u << hs);
			}
			conv_pop(c, m2);
		}
		conv_pop(c, m);
	}
	thresholds(c, pb_msg(cl, "circuit_breakers"), out);
	size_t nhc = pb_len(cl, "health_checks");
	if (nhc > 1) {
		/* Envoy's cluster factory: "Multiple health checks not
		 * supported"; running only the first would hide the others */
		conv_err(c, "health_checks", "multiple health checks are not supported (%zu given)",
			 nhc);
		nhc = 0;
	}
	if (nhc) {
		out->health_checks = CONV_NEW(c, struct arn_cfg_health_check, nhc);
		if (out->health_checks) {
			out->n_health_checks = nhc;
			for (size_t i = 0; i < nhc; i++) {
				size_t m = conv_push(c, "health_checks[%zu]", i);
				health_check(c, pb_at(cl, "health_checks", i),
					     &out->health_checks[i]);
				conv_pop(c, m);
			}
		}
	}
	struct pb od = pb_msg(cl, "outlier_detection");
	if (od.m) {
		size_t m = conv_push(c, "outlier_detection");
		outlier(c, od, &out->outlier);
		conv_pop(c, m);
	}
	/* HTTP protocol options: deprecated cluster fields, then the typed extension */
	out->http.idle_timeout_ms = 3600 * 1000;
	out->http.max_headers_count = 100;
	pb_wrapped_u32(cl, "max_requests_per_connection", &out->max_requests_per_connection);
	arn_conv_h2_options(c, (struct pb){0}, &out->http.h2); /* Envoy's defaults */
	if (pb_has(cl, "http2_protocol_options")) {
		out->http.upstream = 1;
		arn_conv_h2_options(c, pb_msg(cl, "http2_protocol_options"), &out->http.h2);
	}
	h1_options(c, pb_msg(cl, "http_protocol_options"), &out->http);
	struct pb cpo = pb_msg(cl, "common_http_protocol_options");
	if (cpo.m) {
		size_t m = conv_push(c, "common_http_protocol_options");
		conv_only(c, cpo, "idle_timeout,max_headers_count,max_requests_per_connection");
		conv_duration(c, cpo, "idle_timeout", &out->http.idle_timeout_ms, false);
		conv_headers_count(c, cpo, &out->http.max_headers_count);
		conv_pop(c, m);
	}
	const upb_FieldDef *tepo = pb_field(cl, "typed_extension_protocol_options");
	const upb_Map *map = upb_Message_Get(cl.m, tepo).map_val;
	if (map) {
		size_t iter = kUpb_Map_Begin;
		while (upb_MapIterator_Next(map, &iter)) {
			upb_StringView key = upb_MapIterator_Key(map, iter).str_val;
			const upb_Message *any = upb_MapIterator_Value(map, iter).msg_val;
			size_t m = conv_push(c, "typed_extension_protocol_options[%.*s]",
					     (int)key.size, key.data);
			struct pb a = {any, arn_proto_msgdef("google.protobuf.Any")};
			upb_StringView tn = arn_proto_any_type_name(any);
			if (!arn_sv_eq(tn, ARN_TYPE_HTTP_PROTOCOL_OPTIONS)) {
				conv_err(c, "", "'%.*s' is not supported (only %s)", (int)tn.size,
					 tn.data, ARN_TYPE_HTTP_PROTOCOL_OPTIONS);
			} else {
				struct pb hpo = conv_any(c, a, ARN_TYPE_HTTP_PROTOCOL_OPTIONS);
				if (hpo.m)
					http_options(c, hpo, &out->http);
			}
			conv_pop(c, m);
		}
	}
	if (out->http.max_requests_per_connection == 0)
		out->http.max_requests_per_connection = out->max_requests_per_connection;
	struct pb ts = pb_msg(cl, "transport_socket");
	if (ts.m)
		out->upstream_tls = conv_upstream_ts(c, ts, &out->upstream_pp);
	conv_tsm_cluster(c, cl, out);
	/* endpoints; a DNS cluster's come from its resolver (conv_dns.c),
	 * its load_assignment checked first as an EDS update is, but with
	 * hostnames */
	struct pb la = pb_msg(cl, "load_assignment");
	if ((out->type == ARN_CFG_CLUSTER_STRICT_DNS || out->type == ARN_CFG_CLUSTER_LOGICAL_DNS) &&
	    la.m) {
		size_t m = conv_push(c, "load_assignment");
		struct arn_cfg_endpoints scratch;
		memset(&scratch, 0, sizeof(scratch));
		c->dns_names = true;
		conv_endpoints_into(c, la, &scratch);
		c->dns_names = false;
		conv_pop(c, m);
	}
	conv_cluster_dns(c, cl, out);
	if (out->type == ARN_CFG_CLUSTER_STATIC) {
		/* The load_assignment becomes its own refcounted object, so that
		 * workers pin endpoints the same way for STATIC and EDS. */
		struct arn_pool *saved = c->pool;
		c->pool = arn_pool_new(512);
		if (!c->pool) {
			c->pool = saved;
			return NULL;
		}
		struct arn_cfg_endpoints *e = conv_obj_new(c, sizeof(*e), ARN_CFG_CLA, name);
		if (e && la.m) {
			size_t m = conv_push(c, "load_assignment");
			conv_endpoints_into(c, la, e);
			conv_pop(c, m);
		} else if (e) {
			e->overprovisioning_factor = 140;
		}
		struct arn_pool *ep = c->pool;
		c->pool = saved;
		if (!e || arn_pool_failed(ep)) {
			arn_pool_free(ep);
			return NULL;
		}
		out->static_endpoints = e;
		arn_pool_on_free(c->pool, unref_cb, e);
	} else if (out->type == ARN_CFG_CLUSTER_EDS) {
		/* X12: endpoints are the ClusterLoadAssignment named like the cluster */
		struct pb ecc = pb_msg(cl, "eds_cluster_config");
		uint32_t timeout = conv_fetch_timeout(c, pb_msg(ecc, "eds_config"));
		if (name.size)
			conv_dep(c, ARN_CFG_CLA, name.data, name.size, true, timeout);
	}
	return &out->obj;
}
