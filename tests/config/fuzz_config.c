/*
 * libFuzzer: arbitrary bytes as each resource type through decode, convert
 * and apply (and, when accepted, the worker-side lookups and the admin's
 * JSON dump). The first byte picks the type; the rest is the resource.
 * A fresh store per input, so state never builds up and leaks show.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arn_config.h"
#include "arn_http_ratelimit.h"
#include "arn_rbac.h"
#include "arn_tcp_proxy.h"
#include "arn_log.h"
#include "arn_proto.h"
#include "config_int.h"

static const char *const urls[] = {ARN_TYPE_URL_LISTENER, ARN_TYPE_URL_ROUTE,
				   ARN_TYPE_URL_CLUSTER,  ARN_TYPE_URL_CLA,
				   ARN_TYPE_URL_SECRET,	  ARN_TYPE_URL_TOOLSET};
_Static_assert(sizeof(urls) / sizeof(urls[0]) == ARN_CFG_NTYPES, "one URL per family");

static void dump(void *ctx, const struct arn_config_resource_info *info)
{
	struct arn_sb sb = ARN_SB_INIT;
	arn_config_resource_json(ctx, info, &sb);
	arn_sb_free(&sb);
}

/* lib/l4's engines over what was just converted: RBAC rules with every
 * matcher the converter builds (regexes included), rate limit decisions
 * and descriptors, tcp_proxy's cluster choice. */
static void exercise_l4_chain(const struct arn_cfg_filter_chain *fc,
			      const struct arn_cfg_request *req)
{
	struct arn_rbac_input in = {.src_addr = 0xc6120005,
				    .remote_addr = 0xc0000201,
				    .dst_addr = 0x0a000001,
				    .dst_port = 443,
				    .sni = {"a.example.com", 13},
				    .path = req->path,
				    .path_len = req->path_len,
				    .header = arn_rbac_request_header,
				    .header_ctx = (void *)req,
				    .tls = true,
				    .subject = {"CN=x", 4}};
	struct arn_rbac_result r;
	for (size_t i = 0; i < fc->n_l4_filters; i++)
		if (fc->l4_filters[i].rbac)
			arn_rbac_filter_eval(fc->l4_filters[i].rbac, NULL, &in, &r);
	if (fc->tcp_proxy)
		arn_tcp_proxy_cluster(fc->tcp_proxy, 7);
	const struct arn_cfg_hcm *h = fc->hcm;
	for (size_t i = 0; h && i < h->n_http_filters; i++) {
		if (h->http_filters[i] == ARN_CFG_HF_RBAC) {
			arn_rbac_filter_eval(h->http_filter_cfgs[i], NULL, &in, &r);
		} else if (h->http_filters[i] == ARN_CFG_HF_LOCAL_RATELIMIT) {
			struct arn_cfg_bucket_state conn[4] = {{0}};
			const char *n = h->http_filter_names[i];
			struct arn_hlrl_input hi = {.filter = h->http_filter_cfgs[i],
						    .filter_name = n,
						    .filter_name_len = strlen(n),
						    .rl = {.remote_addr = in.remote_addr,
							   .header = arn_rbac_request_header,
							   .header_ctx = (void *)req},
						    .now = 1000,
						    .hz = 1000000,
						    .conn_states = conn,
						    .n_conn_states = 4};
			struct arn_hlrl_decision d;
			arn_hlrl_decide(&hi, &d);
		}
	}
}

static void exercise_l4_route(const struct arn_cfg_route_table *rt,
			      const struct arn_cfg_route_match *m,
			      const struct arn_cfg_request *req)
{
	(void)rt;
	struct arn_rl_input in = {.remote_addr = 0xc0000201,
				  .header = arn_rbac_request_header,
				  .header_ctx = (void *)req};
	const struct arn_cfg_route *r = m->route;
	for (size_t i = 0; r->action == ARN_CFG_ACTION_ROUTE && i < r->route.n_rate_limits; i++) {
		struct arn_rl_desc d;
		char buf[256];
		arn_rl_descriptor(&r->route.rate_limits[i], &in, &d, buf, sizeof(buf));
	}
}

static void exercise(const struct arn_cfg_gen *g, int t, const char *name, size_t len)
{
	const void *o = arn_cfg_find(g, (enum arn_cfg_type)t, name, len, arn_cfg_hash(name, len));
	if (!o)
		return;
	struct arn_cfg_header h = {"x-test", 6, "value", 5};
	struct arn_cfg_request req = {.method = "GET",
				      .method_len = 3,
				      .authority = "a.example.com:80",
				      .authority_len = 16,
				      .path = "/api/v1/x?q=1&b",
				      .path_len = 15,
				      .headers = &h,
				      .n_headers = 1,
				      .random = 7};
	const struct arn_cfg_route_table *rt = NULL;
	if (t == ARN_CFG_CLUSTER) {
		/* transport_socket_matches: each static endpoint's choice */
		const struct arn_cfg_cluster *cl = o;
		const struct arn_cfg_endpoints *e = cl->static_endpoints;
		for (size_t p = 0; e && p < e->n_priorities; p++)
			for (size_t l = 0; l < e->priorities[p].n_localities; l++) {
				const struct arn_cfg_locality *lo = &e->priorities[p].localities[l];
				for (size_t i = 0; i < lo->n_endpoints; i++)
					arn_cfg_tsm_resolve(cl, &lo->endpoints[i]);
			}
	}
	if (t == ARN_CFG_ROUTE) {
		rt = o;
	} else if (t == ARN_CFG_LISTENER) {
		const struct arn_cfg_listener *l = o;
		struct arn_cfg_fc_input in = {.dst_port = l->port,
					      .server_name = "a.example.com",
					      .server_name_len = 13,
					      .transport_protocol = "tls"};
		const struct arn_cfg_filter_chain *fc = arn_cfg_filter_chain_select(l, &in);
		if (fc)
			exercise_l4_chain(fc, &req);
		if (fc && fc->hcm)
			rt = arn_cfg_hcm_routes(g, fc->hcm);
	}
	if (rt) {
		struct arn_cfg_route_match m;
		if (arn_cfg_route_match(rt, &req, &m) == 0)
			exercise_l4_route(rt, &m, &req);
		if (arn_cfg_route_match(rt, &req, &m) == 0 &&
		    m.route->action == ARN_CFG_ACTION_ROUTE) {
			struct arn_cfg_ref c;
			char buf[256];
			arn_cfg_route_cluster(&m.route->route, &req, &c);
			arn_cfg_route_rewrite_path(m.route, req.path, req.path_len, buf,
						   sizeof(buf));
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool init;
	if (!init) {
		arn_log_set_spec("off", NULL);
		arn_proto_init();
		/* reach the L4 converters, which refuse everything otherwise */
		arn_config_set_features(ARN_CONFIG_FEATURE_L4 | ARN_CONFIG_FEATURE_HTTP_L4);
		init = true;
	}
	if (size < 1)
		return 0;
	int t = data[0] % ARN_CFG_NTYPES;
	const char *bytes = (const char *)data + 1;
	size_t len = size - 1;
	/* the resource's own name, so that conversion is reached */
	char name[256] = "";
	upb_Arena *a = upb_Arena_New();
	const upb_MessageDef *md = arn_proto_msgdef(arn_cfg_type_msg[t]);
	struct arn_sb err = ARN_SB_INIT;
	char why[256];
	upb_Message *m = conv_wire_check(bytes, len, md, why, sizeof(why))
			     ? arn_proto_decode(bytes, len, md, a, &err)
			     : NULL;
	if (m) {
		struct pb p = {m, md};
		upb_StringView n = pb_str(p, t == ARN_CFG_CLA ? "cluster_name" : "name");
		snprintf(name, sizeof(name), "%.*s", (int)n.size, n.data);
	}
	arn_sb_free(&err);
	upb_Arena_Free(a);
	struct arn_config_store *s = arn_config_create(NULL);
	if (!s)
		return 0;
	struct arn_config_resource_in in = {name, "v", bytes, len};
	struct arn_config_result r;
	if (arn_config_apply(s, urls[t], &in, 1, NULL, 0, 0, &r) == 0) {
		if (r.accepted && !r.n_errors)
			exercise(arn_config_gen(s), t, name, strlen(name));
		arn_config_foreach(s, (enum arn_cfg_type)t, dump, s);
		bool again = t == ARN_CFG_ROUTE && r.accepted && !r.n_errors;
		arn_config_result_free(&r);
		/* a RouteConfiguration again: its routes taken over from the
		 * version in force (conv_route.c), which is then freed */
		if (again && arn_config_apply(s, urls[t], &in, 1, NULL, 0, 0, &r) == 0) {
			arn_config_poll(s);
			if (r.accepted && !r.n_errors)
				exercise(arn_config_gen(s), t, name, strlen(name));
			arn_config_result_free(&r);
		}
	}
	const char *rm[] = {name};
	if (arn_config_apply(s, urls[t], NULL, 0, rm, 1, 0, &r) == 0)
		arn_config_result_free(&r);
	arn_config_poll(s);
	arn_config_destroy(s);
	return 0;
}
