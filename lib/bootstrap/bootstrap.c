/*
 * Loading the configuration file: YAML, the Envoy bootstrap under
 * `envoy_bootstrap:`, Arion's `dataplane:` section, and the rules of the xDS
 * contract that a bootstrap alone can break (X7-X10, G9; X13 for the xDS
 * cluster's own TLS). The rules that every resource follows, static or
 * from xDS (X11-X13), are lib/config's (arn_rules.h).
 */
#include "arn_bootstrap.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

#include "upb/reflection.h"

#include "envoy/config/bootstrap/v3/bootstrap.upb.h"
#include "envoy/config/cluster/v3/cluster.upb.h"
#include "envoy/config/core/v3/address.upb.h"
#include "envoy/config/core/v3/base.upb.h"
#include "envoy/config/core/v3/config_source.upb.h"
#include "envoy/config/core/v3/grpc_service.upb.h"
#include "envoy/config/core/v3/protocol.upb.h"
#include "envoy/config/endpoint/v3/endpoint.upb.h"
#include "envoy/config/endpoint/v3/endpoint_components.upb.h"
#include "envoy/config/listener/v3/listener.upb.h"
#include "envoy/config/overload/v3/overload.upb.h"
#include "envoy/extensions/transport_sockets/tls/v3/secret.upb.h"
#include "envoy/extensions/upstreams/http/v3/http_protocol_options.upb.h"
#include "google/protobuf/any.upb.h"

#include "arn_log.h"
#include "arn_proto.h"
#include "bootstrap_int.h"
#include "y2j.h"

static char *xstrdup(const char *s)
{
	return strdup(s ? s : "");
}

static char *sv_dup(upb_StringView sv)
{
	return strndup(sv.data ? sv.data : "", sv.size);
}

/* ---- the Envoy bootstrap ------------------------------------------------- */

static bool cluster_has_http2(const envoy_config_cluster_v3_Cluster *cl, upb_Arena *arena)
{
	if (envoy_config_cluster_v3_Cluster_has_http2_protocol_options(cl))
		return true;
	struct google_protobuf_Any *any = NULL;
	if (!envoy_config_cluster_v3_Cluster_typed_extension_protocol_options_get(
		cl, upb_StringView_FromString(ARN_TYPE_HTTP_PROTOCOL_OPTIONS), &any) ||
	    any == NULL)
		return false;
	struct arn_sb err = ARN_SB_INIT;
	const upb_Message *m = arn_proto_any_unpack(
	    any, arn_proto_msgdef(ARN_TYPE_HTTP_PROTOCOL_OPTIONS), NULL, arena, &err);
	arn_sb_free(&err);
	if (m == NULL)
		return false;
	const envoy_extensions_upstreams_http_v3_HttpProtocolOptions *hpo = (const void *)m;
	const envoy_extensions_upstreams_http_v3_HttpProtocolOptions_ExplicitHttpConfig *ex =
	    envoy_extensions_upstreams_http_v3_HttpProtocolOptions_explicit_http_config(hpo);
	if (ex != NULL &&
	    envoy_extensions_upstreams_http_v3_HttpProtocolOptions_ExplicitHttpConfig_has_http2_protocol_options(
		ex))
		return true;
	const envoy_extensions_upstreams_http_v3_HttpProtocolOptions_AutoHttpConfig *au =
	    envoy_extensions_upstreams_http_v3_HttpProtocolOptions_auto_config(hpo);
	if (au != NULL &&
	    envoy_extensions_upstreams_http_v3_HttpProtocolOptions_AutoHttpConfig_has_http2_protocol_options(
		au))
		return true;
	return false;
}

static const envoy_config_cluster_v3_Cluster *
static_cluster(const envoy_config_bootstrap_v3_Bootstrap *bs, upb_StringView name, size_t *index)
{
	const envoy_config_bootstrap_v3_Bootstrap_StaticResources *sr =
	    envoy_config_bootstrap_v3_Bootstrap_static_resources(bs);
	if (sr == NULL)
		return NULL;
	size_t n;
	const envoy_config_cluster_v3_Cluster *const *cl =
	    envoy_config_bootstrap_v3_Bootstrap_StaticResources_clusters(sr, &n);
	for (size_t i = 0; i < n; i++) {
		upb_StringView cn = envoy_config_cluster_v3_Cluster_name(cl[i]);
		if (cn.size == name.size && memcmp(cn.data, name.data, cn.size) == 0) {
			*index = i;
			return cl[i];
		}
	}
	return NULL;
}

/* X7, X9, G9: the cluster that reaches the control plane, and its channel. */
static void check_xds_cluster(struct arn_bs_ctx *c, const struct arn_bootstrap *b,
			      upb_StringView name, const char *ref_path)
{
	const envoy_config_bootstrap_v3_Bootstrap *bs = b->pb;
	size_t idx = 0;
	const envoy_config_cluster_v3_Cluster *cl = static_cluster(bs, name, &idx);
	if (cl == NULL) {
		arn_bs_error(c, ref_path,
			     "names cluster '" ARN_SV_FMT "', which static_resources.clusters does "
			     "not define; the xDS cluster must be static, since nothing can be "
			     "fetched before the control plane is reached (X7)",
			     ARN_SV_ARG(name));
		return;
	}
	char p[512];
	snprintf(p, sizeof(p), "envoy_bootstrap.static_resources.clusters[%zu]", idx);
	/* STATIC: the control plane's addresses; STRICT_DNS / LOGICAL_DNS:
	 * its names (as most hand-written bootstraps and Envoy Gateway's
	 * write it), which the xDS channel (gRPC's own resolver) resolves
	 * again for every connection attempt, trying the answer's addresses
	 * in order. EDS and the others need what the control plane sends. */
	int type = envoy_config_cluster_v3_Cluster_type(cl);
	if (envoy_config_cluster_v3_Cluster_cluster_discovery_type_case(cl) !=
		envoy_config_cluster_v3_Cluster_cluster_discovery_type_NOT_SET &&
	    envoy_config_cluster_v3_Cluster_cluster_discovery_type_case(cl) !=
		envoy_config_cluster_v3_Cluster_cluster_discovery_type_type) {
		char tp[600];
		snprintf(tp, sizeof(tp), "%s.cluster_type", p);
		arn_bs_error(c, tp,
			     "the xDS cluster must be of type STATIC, STRICT_DNS or LOGICAL_DNS");
	} else if (type != envoy_config_cluster_v3_Cluster_STATIC &&
		   type != envoy_config_cluster_v3_Cluster_STRICT_DNS &&
		   type != envoy_config_cluster_v3_Cluster_LOGICAL_DNS) {
		char tp[600];
		snprintf(tp, sizeof(tp), "%s.type", p);
		arn_bs_error(c, tp,
			     "the xDS cluster must be of type STATIC (the control plane's IP "
			     "addresses in load_assignment), STRICT_DNS or LOGICAL_DNS (its "
			     "names): its endpoints cannot come from the control plane (X7)");
	}
	const envoy_config_endpoint_v3_ClusterLoadAssignment *la =
	    envoy_config_cluster_v3_Cluster_load_assignment(cl);
	size_t nle = 0, neps = 0;
	if (la != NULL) {
		const envoy_config_endpoint_v3_LocalityLbEndpoints *const *lle =
		    envoy_config_endpoint_v3_ClusterLoadAssignment_endpoints(la, &nle);
		for (size_t i = 0; i < nle; i++) {
			size_t k;
			envoy_config_endpoint_v3_LocalityLbEndpoints_lb_endpoints(lle[i], &k);
			neps += k;
		}
	}
	if (neps == 0) {
		char lp[600];
		snprintf(lp, sizeof(lp), "%s.load_assignment", p);
		arn_bs_error(c, la ? lp : p,
			     "the xDS cluster '" ARN_SV_FMT "' has no endpoints: list the control "
			     "plane's address under load_assignment.endpoints[].lb_endpoints[]."
			     "endpoint.address.socket_address",
			     ARN_SV_ARG(name));
	}
	if (!cluster_has_http2(cl, c->arena))
		arn_bs_warn(
		    c, p,
		    "xDS cluster '" ARN_SV_FMT "' does not enable HTTP/2, and gRPC needs it; "
		    "this is the most common reason a setup never connects to its control "
		    "plane. Add typed_extension_protocol_options: {" ARN_TYPE_HTTP_PROTOCOL_OPTIONS
		    ": {\"@type\": " ARN_TYPE_URL_PREFIX ARN_TYPE_HTTP_PROTOCOL_OPTIONS
		    ", explicit_http_config: {http2_protocol_options: {}}}} (G9)",
		    ARN_SV_ARG(name));
	arn_bs_check_xds_channel(c, b, cl, p, name);
}

const char *arn_bootstrap_ads_only(const envoy_config_core_v3_ConfigSource *cs)
{
	if (cs == NULL)
		return NULL;
	switch (envoy_config_core_v3_ConfigSource_config_source_specifier_case(cs)) {
	case envoy_config_core_v3_ConfigSource_config_source_specifier_ads:
		return NULL;
	case envoy_config_core_v3_ConfigSource_config_source_specifier_NOT_SET:
		return "the config source names no source; write `ads: {}`: Arion receives "
		       "everything on its one ADS stream";
	default:
		return "only `ads: {}` is accepted here: Arion receives every resource on its "
		       "one ADS stream, never from files, REST or another gRPC service";
	}
}

/* X10: listeners and clusters come from the ADS stream. */
static void lds_cds_ads_only(struct arn_bs_ctx *c, const envoy_config_core_v3_ConfigSource *cs,
			     const char *path)
{
	const char *why = arn_bootstrap_ads_only(cs);
	if (why != NULL)
		arn_bs_error(c, path, "%s (X10)", why);
}

static void check_dynamic(struct arn_bs_ctx *c, struct arn_bootstrap *b)
{
	const envoy_config_bootstrap_v3_Bootstrap *bs = b->pb;
	const envoy_config_bootstrap_v3_Bootstrap_DynamicResources *dr =
	    envoy_config_bootstrap_v3_Bootstrap_dynamic_resources(bs);
	if (dr == NULL)
		return;
	static const char *const dr_ok[] = {"ads_config", "lds_config", "cds_config", NULL};
	arn_bs_only_fields(c, (const upb_Message *)dr,
			   arn_proto_msgdef("envoy.config.bootstrap.v3.Bootstrap.DynamicResources"),
			   "envoy_bootstrap.dynamic_resources", dr_ok,
			   "listeners and clusters come from ads_config (X1)");
	lds_cds_ads_only(c, envoy_config_bootstrap_v3_Bootstrap_DynamicResources_lds_config(dr),
			 "envoy_bootstrap.dynamic_resources.lds_config");
	lds_cds_ads_only(c, envoy_config_bootstrap_v3_Bootstrap_DynamicResources_cds_config(dr),
			 "envoy_bootstrap.dynamic_resources.cds_config");
	const envoy_config_core_v3_ApiConfigSource *ads =
	    envoy_config_bootstrap_v3_Bootstrap_DynamicResources_ads_config(dr);
	if (ads == NULL) {
		bool any_ads =
		    envoy_config_bootstrap_v3_Bootstrap_DynamicResources_has_lds_config(dr) ||
		    envoy_config_bootstrap_v3_Bootstrap_DynamicResources_has_cds_config(dr);
		if (any_ads)
			arn_bs_error(
			    c, "envoy_bootstrap.dynamic_resources",
			    "lds_config/cds_config say `ads: {}`, but ads_config is missing: "
			    "ads_config names the cluster of the control plane (X7)");
		return;
	}
	b->ads = true;
	const char *ap = "envoy_bootstrap.dynamic_resources.ads_config";
	static const char *const ads_ok[] = {"api_type", "transport_api_version", "grpc_services",
					     "set_node_on_first_message_only", NULL};
	arn_bs_only_fields(c, (const upb_Message *)ads,
			   arn_proto_msgdef("envoy.config.core.v3.ApiConfigSource"), ap, ads_ok,
			   NULL);
	int api = envoy_config_core_v3_ApiConfigSource_api_type(ads);
	if (api != 0 && api != envoy_config_core_v3_ApiConfigSource_DELTA_GRPC &&
	    api != envoy_config_core_v3_ApiConfigSource_AGGREGATED_DELTA_GRPC) {
		arn_bs_error(c, "envoy_bootstrap.dynamic_resources.ads_config.api_type",
			     "Arion speaks only the incremental (delta) xDS protocol on one ADS "
			     "stream: write api_type: DELTA_GRPC or leave it out (X1)");
	}
	int tav = envoy_config_core_v3_ApiConfigSource_transport_api_version(ads);
	if (tav != envoy_config_core_v3_AUTO && tav != envoy_config_core_v3_V3)
		arn_bs_error(c,
			     "envoy_bootstrap.dynamic_resources.ads_config.transport_api_version",
			     "only V3 exists");
	size_t ng;
	const envoy_config_core_v3_GrpcService *const *gs =
	    envoy_config_core_v3_ApiConfigSource_grpc_services(ads, &ng);
	if (ng == 0)
		arn_bs_error(c, ap,
			     "grpc_services is empty: name the control plane's cluster with "
			     "grpc_services: [{envoy_grpc: {cluster_name: xds_cluster}}] (X7)");
	b->xds_clusters = calloc(ng ? ng : 1, sizeof(char *));
	for (size_t i = 0; i < ng; i++) {
		char p[512];
		snprintf(p, sizeof(p), "%s.grpc_services[%zu]", ap, i);
		if (envoy_config_core_v3_GrpcService_has_google_grpc(gs[i])) {
			char gp[600];
			snprintf(gp, sizeof(gp), "%s.google_grpc", p);
			arn_bs_error(
			    c, gp,
			    "google_grpc is refused: Arion reaches control planes through "
			    "envoy_grpc only; write envoy_grpc: {cluster_name: ...} naming "
			    "a static cluster (X8)");
			continue;
		}
		const envoy_config_core_v3_GrpcService_EnvoyGrpc *eg =
		    envoy_config_core_v3_GrpcService_envoy_grpc(gs[i]);
		if (eg == NULL) {
			arn_bs_error(c, p, "missing envoy_grpc: {cluster_name: ...} (X7)");
			continue;
		}
		upb_StringView cn = envoy_config_core_v3_GrpcService_EnvoyGrpc_cluster_name(eg);
		char cp[600];
		snprintf(cp, sizeof(cp), "%s.envoy_grpc.cluster_name", p);
		if (cn.size == 0) {
			arn_bs_error(c, cp,
				     "missing: name the static cluster of the control plane");
			continue;
		}
		check_xds_cluster(c, b, cn, cp);
		b->xds_clusters[b->n_xds_clusters++] = sv_dup(cn);
	}
	if (b->node_id[0] == '\0' || b->node_cluster[0] == '\0')
		arn_bs_error(c, "envoy_bootstrap.node",
			     "node id and cluster are required with ads_config: the control plane "
			     "picks this proxy's configuration by them; set node.id and "
			     "node.cluster, or --service-node and --service-cluster (X7)");
}

/* Every static cluster has a name of its own (the xDS cluster is found by
 * name, X7). */
static void check_static(struct arn_bs_ctx *c, const envoy_config_bootstrap_v3_Bootstrap *bs)
{
	const envoy_config_bootstrap_v3_Bootstrap_StaticResources *sr =
	    envoy_config_bootstrap_v3_Bootstrap_static_resources(bs);
	if (sr == NULL)
		return;
	char p[512];
	size_t n;
	const envoy_config_cluster_v3_Cluster *const *cl =
	    envoy_config_bootstrap_v3_Bootstrap_StaticResources_clusters(sr, &n);
	for (size_t i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "envoy_bootstrap.static_resources.clusters[%zu]", i);
		if (envoy_config_cluster_v3_Cluster_name(cl[i]).size == 0) {
			char np[600];
			snprintf(np, sizeof(np), "%s.name", p);
			arn_bs_error(c, np, "missing: every cluster has a name");
		}
		for (size_t j = 0; j < i; j++)
			if (upb_StringView_IsEqual(envoy_config_cluster_v3_Cluster_name(cl[i]),
						   envoy_config_cluster_v3_Cluster_name(cl[j]))) {
				char np[600];
				snprintf(np, sizeof(np), "%s.name", p);
				arn_bs_error(
				    c, np,
				    "cluster '" ARN_SV_FMT "' is defined twice "
				    "(also clusters[%zu])",
				    ARN_SV_ARG(envoy_config_cluster_v3_Cluster_name(cl[i])), j);
			}
	}
}

static void admin_info(struct arn_bs_ctx *c, struct arn_bootstrap *b)
{
	const envoy_config_bootstrap_v3_Admin *ad =
	    envoy_config_bootstrap_v3_Bootstrap_admin(b->pb);
	if (ad == NULL)
		return;
	const envoy_config_core_v3_Address *a = envoy_config_bootstrap_v3_Admin_address(ad);
	if (a == NULL)
		return;
	const envoy_config_core_v3_SocketAddress *sa =
	    envoy_config_core_v3_Address_socket_address(a);
	if (sa == NULL) {
		arn_bs_error(
		    c, "envoy_bootstrap.admin.address",
		    "the admin endpoint listens on a socket_address {address, port_value}");
		return;
	}
	b->has_admin = true;
	b->admin_address = sv_dup(envoy_config_core_v3_SocketAddress_address(sa));
	uint32_t port = envoy_config_core_v3_SocketAddress_port_value(sa);
	if (port > 65535)
		arn_bs_error(c, "envoy_bootstrap.admin.address.socket_address.port_value",
			     "%u is not a port number", port);
	b->admin_port = (uint16_t)port;
	/* Checked here, not when the endpoint opens: --mode validate must
	 * refuse what serve refuses, and serve must refuse it before a port
	 * is touched (lib/admin checks again, for callers without a file). */
	struct in6_addr a6;
	struct in_addr a4;
	const char *as = b->admin_address;
	bool v4 = inet_pton(AF_INET, as, &a4) == 1;
	if (!v4 && inet_pton(AF_INET6, as, &a6) != 1) {
		arn_bs_error(c, "envoy_bootstrap.admin.address.socket_address.address",
			     "'%s' is not an IP address; write one such as 127.0.0.1", as);
		return;
	}
	bool loopback =
	    v4 ? (ntohl(a4.s_addr) >> 24) == 127
	       : IN6_IS_ADDR_LOOPBACK(&a6) || (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127);
	const char *env = getenv("ARION_ADMIN_ALLOW_REMOTE");
	if (!loopback && !(env && strcmp(env, "1") == 0))
		arn_bs_error(
		    c, "envoy_bootstrap.admin.address.socket_address.address",
		    "%s is not a loopback address. The admin endpoint has no "
		    "authentication: anyone who reaches it can stop the process (POST "
		    "/quitquitquit), fail health checks and read the whole configuration. "
		    "Bind it to 127.0.0.1 (reach it through an SSH tunnel or a local agent), "
		    "or start arion with ARION_ADMIN_ALLOW_REMOTE=1 in the environment to "
		    "expose it anyway (docs/admin.md)",
		    as);
}

/* The listener limit of runtime key @p key (a listener's name between
 * the prefix and the suffix), or NULL when the key is not one. */
static const char *runtime_listener(const char *key, size_t kl, size_t *nl)
{
	static const char lp[] = "envoy.resource_limits.listener.", ls[] = ".connection_limit";
	size_t a = sizeof(lp) - 1, z = sizeof(ls) - 1;
	if (kl <= a + z || strncmp(key, lp, a) != 0 || strcmp(key + kl - z, ls) != 0)
		return NULL;
	*nl = kl - a - z;
	return key + a;
}

/* What check_runtime found: the global runtime limit, kept until the
 * overload manager (which wins over it, as in Envoy) was read. */
struct runtime_seen {
	bool global;
	uint64_t global_max;
	char global_path[1024];
};

/*
 * layered_runtime is accepted and Arion has no runtime, so its values
 * change nothing, except the two connection limits Envoy documents
 * (docs/root/configuration/operations/overload_manager), which Arion
 * enforces at accept (lib/http's http_cxlimit.c): the global one,
 * overload.global_downstream_max_connections, and a listener's,
 * envoy.resource_limits.listener.<name>.connection_limit. Keys may be
 * nested or dotted, as in Envoy; a later layer's value wins, as in
 * Envoy's layered runtime. A value that is not a count is refused: a
 * limit silently dropped would let in what the operator meant to keep out.
 */
static void runtime_limits(struct arn_bs_ctx *c, struct arn_bootstrap *b, struct runtime_seen *rs,
			   yaml_node_t *n, char *key, size_t kl, char *path, size_t pl,
			   unsigned depth)
{
	if (n == NULL || depth > 32)
		return;
	if (n->type != YAML_MAPPING_NODE) {
		size_t nl = 0;
		const char *ln = runtime_listener(key, kl, &nl);
		bool global = !strcmp(key, "overload.global_downstream_max_connections");
		if (!ln && !global)
			return;
		const char *v = n->type == YAML_SCALAR_NODE ? arn_y2j_scalar(n) : "";
		char *end = NULL;
		errno = 0;
		unsigned long long max = strtoull(v, &end, 10);
		if (!*v || *v == '-' || *v == '+' || *end || errno) {
			arn_bs_error(c, path,
				     "the runtime key '%s' is a connection limit: its value must "
				     "be a whole number of connections from 0 to %llu",
				     key, (unsigned long long)UINT64_MAX);
			return;
		}
		if (global) {
			rs->global = true;
			rs->global_max = max;
			snprintf(rs->global_path, sizeof(rs->global_path), "%s", path);
			return;
		}
		for (size_t i = 0; i < b->n_cx_limits; i++)
			if (strlen(b->cx_limits[i].listener) == nl &&
			    !memcmp(b->cx_limits[i].listener, ln, nl)) {
				b->cx_limits[i].max = max;
				return;
			}
		struct arn_bootstrap_cx_limit *l =
		    realloc(b->cx_limits, (b->n_cx_limits + 1) * sizeof(*l));
		char *name = strndup(ln, nl);
		if (l == NULL || name == NULL) {
			free(name);
			if (l)
				b->cx_limits = l;
			arn_bs_error(c, path, "out of memory");
			return;
		}
		b->cx_limits = l;
		l[b->n_cx_limits++] = (struct arn_bootstrap_cx_limit){name, max};
		return;
	}
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
		if (k == NULL || k->type != YAML_SCALAR_NODE)
			continue;
		const char *ks = arn_y2j_scalar(k);
		int nk = snprintf(key + kl, 512 - kl, "%s%s", kl ? "." : "", ks);
		int np = snprintf(path + pl, 1024 - pl, ".%s", ks);
		if (nk > 0 && kl + (size_t)nk < 512 && np > 0 && pl + (size_t)np < 1024)
			runtime_limits(c, b, rs, yaml_document_get_node(c->doc, p->value), key,
				       kl + (size_t)nk, path, pl + (size_t)np, depth + 1);
		key[kl] = 0;
		path[pl] = 0;
	}
}

static void check_runtime(struct arn_bs_ctx *c, struct arn_bootstrap *b, struct runtime_seen *rs)
{
	yaml_node_t *root = c->doc ? yaml_document_get_root_node(c->doc) : NULL;
	yaml_node_t *ls =
	    root ? arn_y2j_find(c->doc, root, "envoy_bootstrap.layered_runtime.layers") : NULL;
	if (ls == NULL || ls->type != YAML_SEQUENCE_NODE)
		return;
	size_t i = 0;
	for (yaml_node_item_t *it = ls->data.sequence.items.start; it < ls->data.sequence.items.top;
	     it++, i++) {
		yaml_node_t *layer = yaml_document_get_node(c->doc, *it);
		if (layer == NULL || layer->type != YAML_MAPPING_NODE)
			continue;
		char path[1024], key[512] = "";
		int pl = snprintf(path, sizeof(path),
				  "envoy_bootstrap.layered_runtime.layers[%zu].static_layer", i);
		yaml_node_t *sl = arn_y2j_find(c->doc, layer, "static_layer");
		if (sl && sl != layer && sl->type == YAML_MAPPING_NODE)
			runtime_limits(c, b, rs, sl, key, 0, path, (size_t)pl, 0);
	}
}

#define GLOBAL_CX_MONITOR "envoy.resource_monitors.global_downstream_max_connections"

/*
 * overload_manager: Arion has one resource monitor, Envoy's proactive
 * global_downstream_max_connections (a count of open downstream
 * connections, checked at accept). Actions and the other monitors
 * (memory, CPU, file descriptors) are refused by name: Arion does not
 * measure those resources, and a monitor accepted and never fed would
 * look like protection it is not.
 */
static void check_overload(struct arn_bs_ctx *c, struct arn_bootstrap *b,
			   const struct runtime_seen *rs)
{
	const envoy_config_bootstrap_v3_Bootstrap *bs = b->pb;
	const envoy_config_overload_v3_OverloadManager *om =
	    envoy_config_bootstrap_v3_Bootstrap_overload_manager(bs);
	bool monitor = false;
	if (om) {
		static const char *const om_ok[] = {"resource_monitors", "refresh_interval", NULL};
		arn_bs_only_fields(c, (const upb_Message *)om,
				   arn_proto_msgdef("envoy.config.overload.v3.OverloadManager"),
				   "envoy_bootstrap.overload_manager", om_ok,
				   "Arion's overload manager has only the " GLOBAL_CX_MONITOR
				   " resource monitor, and no actions");
		size_t n = 0;
		const envoy_config_overload_v3_ResourceMonitor *const *rm =
		    envoy_config_overload_v3_OverloadManager_resource_monitors(om, &n);
		for (size_t i = 0; i < n; i++) {
			char path[256];
			snprintf(path, sizeof(path),
				 "envoy_bootstrap.overload_manager.resource_monitors[%zu]", i);
			upb_StringView name = envoy_config_overload_v3_ResourceMonitor_name(rm[i]);
			const struct google_protobuf_Any *any =
			    envoy_config_overload_v3_ResourceMonitor_typed_config(rm[i]);
			upb_StringView tn = any ? arn_proto_any_type_name((const upb_Message *)any)
						: (upb_StringView){0};
			bool is_cx = any ? arn_sv_eq(tn, ARN_TYPE_DOWNSTREAM_CONNECTIONS)
					 : arn_sv_eq(name, GLOBAL_CX_MONITOR);
			if (!is_cx) {
				arn_bs_error(
				    c, path,
				    "the resource monitor '%.*s' is not supported by Arion: "
				    "its overload manager has only " GLOBAL_CX_MONITOR
				    " (typed_config " ARN_TYPE_DOWNSTREAM_CONNECTIONS ")",
				    (int)name.size, name.data ? name.data : "");
				continue;
			}
			if (monitor) {
				arn_bs_error(
				    c, path,
				    "a second " GLOBAL_CX_MONITOR
				    " monitor; Envoy refuses a duplicate resource monitor");
				continue;
			}
			monitor = true;
			struct arn_sb err = ARN_SB_INIT;
			const upb_MessageDef *md =
			    arn_proto_msgdef(ARN_TYPE_DOWNSTREAM_CONNECTIONS);
			const upb_Message *m = any ? arn_proto_any_unpack((const upb_Message *)any,
									  md, NULL, c->arena, &err)
						   : NULL;
			arn_sb_free(&err);
			int64_t max = 0;
			if (m) {
				const upb_FieldDef *f = upb_MessageDef_FindFieldByName(
				    md, "max_active_downstream_connections");
				max = upb_Message_Get(m, f).int64_val;
			}
			snprintf(path + strlen(path), sizeof(path) - strlen(path),
				 ".typed_config.max_active_downstream_connections");
			if (max <= 0) {
				arn_bs_error(c, path, "must be greater than 0 (Envoy's rule)");
				continue;
			}
			b->has_global_cx_limit = true;
			b->global_cx_limit = (uint64_t)max;
		}
	}
	if (rs->global && monitor)
		arn_bs_warn(c, rs->global_path,
			    "ignored: the overload manager's " GLOBAL_CX_MONITOR
			    " monitor sets the global downstream connection limit, and wins "
			    "over this runtime key, as in Envoy");
	else if (rs->global) {
		b->has_global_cx_limit = true;
		b->global_cx_limit = rs->global_max;
	}
}

static int check_envoy(struct arn_bs_ctx *c, struct arn_bootstrap *b,
		       const struct arn_bootstrap_overrides *ov)
{
	const envoy_config_bootstrap_v3_Bootstrap *bs = b->pb;
	static const char *const top_ok[] = {"node",  "static_resources", "dynamic_resources",
					     "admin", "layered_runtime",  "overload_manager",
					     NULL};
	arn_bs_only_fields(c, (const upb_Message *)bs, arn_proto_msgdef(ARN_TYPE_BOOTSTRAP),
			   "envoy_bootstrap", top_ok, NULL);
	const envoy_config_core_v3_Node *node = envoy_config_bootstrap_v3_Bootstrap_node(bs);
	b->node_id = ov && ov->service_node ? xstrdup(ov->service_node)
		     : node		    ? sv_dup(envoy_config_core_v3_Node_id(node))
					    : xstrdup("");
	b->node_cluster = ov && ov->service_cluster ? xstrdup(ov->service_cluster)
			  : node ? sv_dup(envoy_config_core_v3_Node_cluster(node))
				 : xstrdup("");
	check_dynamic(c, b);
	check_static(c, bs);
	struct runtime_seen rs = {0};
	check_runtime(c, b, &rs);
	check_overload(c, b, &rs);
	admin_info(c, b);
	return c->n_errors ? -EINVAL : 0;
}

/* ---- loading ------------------------------------------------------------- */

static const struct arn_y2j_refusal refusals[] = {
    {"envoy.config.core.v3.GrpcService", "google_grpc",
     "google_grpc is refused: Arion reaches control planes through envoy_grpc only; write "
     "envoy_grpc: {cluster_name: ...} naming a static cluster (X8)"},
    {NULL, NULL, NULL},
};

static void yaml_error(struct arn_sb *err, const char *file, const yaml_parser_t *p,
		       const char *buf, size_t len)
{
	const char *what = p->error == YAML_MEMORY_ERROR ? "out of memory"
			   : p->problem			 ? p->problem
							 : "invalid YAML";
	arn_sb_printf(err, "%s:%zu:%zu: YAML error: %s", file, p->problem_mark.line + 1,
		      p->problem_mark.column + 1, what);
	if (p->context != NULL)
		arn_sb_printf(err, " (%s, at line %zu column %zu)", p->context,
			      p->context_mark.line + 1, p->context_mark.column + 1);
	/* the commonest cause by far: a tab where YAML wants spaces */
	if (p->problem_mark.index < len && buf[p->problem_mark.index] == '\t')
		arn_sb_puts(err, "; that is a tab: YAML indents with spaces only");
	arn_sb_putc(err, '\n');
}

void arn_bootstrap_free(struct arn_bootstrap *b)
{
	if (b == NULL)
		return;
	free(b->file);
	if (b->arena)
		upb_Arena_Free(b->arena);
	free(b->node_id);
	free(b->node_cluster);
	for (size_t i = 0; i < b->n_xds_clusters; i++)
		free(b->xds_clusters[i]);
	free(b->xds_clusters);
	free(b->admin_address);
	for (size_t i = 0; i < b->n_cx_limits; i++)
		free(b->cx_limits[i].listener);
	free(b->cx_limits);
	arn_dataplane_free(&b->dp);
	arn_sb_free(&b->warnings);
	if (b->yaml) {
		yaml_document_delete(b->yaml);
		free(b->yaml);
	}
	free(b);
}

int arn_bootstrap_load_buf(const char *name, const char *buf, size_t len,
			   const struct arn_bootstrap_overrides *ov, struct arn_bootstrap **out,
			   struct arn_sb *err)
{
	*out = NULL;
	if (arn_proto_init() != 0) {
		arn_sb_puts(err, "internal error: protobuf descriptors failed to load\n");
		return -ENOMEM;
	}
	struct arn_bootstrap *b = calloc(1, sizeof(*b));
	yaml_document_t *doc = calloc(1, sizeof(*doc));
	if (b == NULL || doc == NULL) {
		free(b);
		free(doc);
		return -ENOMEM;
	}
	b->file = xstrdup(name);

	yaml_parser_t parser;
	yaml_parser_initialize(&parser);
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	if (!yaml_parser_load(&parser, doc)) {
		yaml_error(err, name, &parser, buf, len);
		yaml_parser_delete(&parser);
		free(doc);
		arn_bootstrap_free(b);
		return -EINVAL;
	}
	b->yaml = doc;
	yaml_node_t *root = yaml_document_get_root_node(doc);
	if (root == NULL) {
		arn_sb_printf(err, "%s: the file is empty; it needs an envoy_bootstrap: key\n",
			      name);
		yaml_parser_delete(&parser);
		arn_bootstrap_free(b);
		return -EINVAL;
	}
	yaml_document_t second;
	if (!yaml_parser_load(&parser, &second)) {
		yaml_error(err, name, &parser, buf, len);
		yaml_parser_delete(&parser);
		arn_bootstrap_free(b);
		return -EINVAL;
	}
	yaml_node_t *r2 = yaml_document_get_root_node(&second);
	if (r2 != NULL) {
		arn_sb_printf(err, "%s:%zu:%zu: a second YAML document; the file holds one\n", name,
			      r2->start_mark.line + 1, r2->start_mark.column + 1);
		yaml_document_delete(&second);
		yaml_parser_delete(&parser);
		arn_bootstrap_free(b);
		return -EINVAL;
	}
	yaml_document_delete(&second);
	yaml_parser_delete(&parser);

	struct arn_bs_ctx c = {.file = name, .doc = doc, .err = err, .warnings = &b->warnings};
	if (root->type != YAML_MAPPING_NODE) {
		arn_sb_printf(err,
			      "%s:%zu:%zu: the file must be a mapping with an envoy_bootstrap: "
			      "key (and optionally dataplane:)\n",
			      name, root->start_mark.line + 1, root->start_mark.column + 1);
		arn_bootstrap_free(b);
		return -EINVAL;
	}
	yaml_node_t *eb = NULL, *dp = NULL, *xs = NULL;
	for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = yaml_document_get_node(doc, p->key);
		yaml_node_t *v = yaml_document_get_node(doc, p->value);
		const char *kt = k && k->type == YAML_SCALAR_NODE ? arn_y2j_scalar(k) : "";
		yaml_node_t **slot = strcmp(kt, "envoy_bootstrap") == 0 ? &eb
				     : strcmp(kt, "dataplane") == 0	? &dp
				     : strcmp(kt, "xds") == 0		? &xs
									: NULL;
		if (slot == NULL) {
			arn_sb_printf(err,
				      "%s:%zu:%zu: unknown top-level key '%s': the file has "
				      "envoy_bootstrap: (an Envoy v3 bootstrap), dataplane: "
				      "(Arion's data plane) and xds: (how Arion reaches its "
				      "control plane)\n",
				      name, k->start_mark.line + 1, k->start_mark.column + 1, kt);
			c.n_errors++;
		} else if (*slot != NULL) {
			arn_sb_printf(err, "%s:%zu:%zu: '%s' appears twice\n", name,
				      k->start_mark.line + 1, k->start_mark.column + 1, kt);
			c.n_errors++;
		} else {
			*slot = v;
		}
	}
	if (eb == NULL) {
		arn_sb_printf(err,
			      "%s: envoy_bootstrap: is missing; it holds the Envoy v3 "
			      "bootstrap (node, static_resources, dynamic_resources, admin)\n",
			      name);
		arn_bootstrap_free(b);
		return -EINVAL;
	}

	/* YAML -> JSON, checked against the schema. */
	const upb_MessageDef *bdef = arn_proto_msgdef(ARN_TYPE_BOOTSTRAP);
	/* against the schema JSON is read with: it has the Envoy fields
	 * newer than gRPC's API copy (lib/proto/newer.c) */
	const upb_DefPool *jpool;
	const upb_MessageDef *jdef = arn_proto_json_def(bdef, &jpool);
	struct arn_y2j y = {
	    .doc = doc, .file = name, .pool = jpool, .errors = err, .refusals = refusals};
	arn_y2j_push_field(&y, "envoy_bootstrap");
	bool ok = arn_y2j_message(&y, eb, jdef);
	c.n_errors += y.n_errors;
	if (dp != NULL)
		c.n_errors += arn_dataplane_parse(&c, dp, &b->dp);
	else
		arn_dataplane_defaults(&b->dp);
	if (xs != NULL)
		c.n_errors += arn_xds_section_parse(&c, xs, &b->xds);
	if (!ok || c.n_errors) {
		arn_sb_free(&y.json);
		arn_bootstrap_free(b);
		return -EINVAL;
	}

	/* JSON -> Bootstrap with upb's decoder: the field meanings are Envoy's. */
	b->arena = upb_Arena_New();
	struct arn_sb jerr = ARN_SB_INIT;
	b->pb = (const void *)arn_proto_from_json(y.json.buf, y.json.len, bdef, b->arena, &jerr);
	arn_sb_free(&y.json);
	if (b->pb == NULL) {
		arn_sb_printf(err, "%s: envoy_bootstrap: %s\n", name, arn_sb_cstr(&jerr));
		arn_sb_free(&jerr);
		arn_bootstrap_free(b);
		return -EINVAL;
	}
	arn_sb_free(&jerr);

	c.arena = b->arena;
	if (check_envoy(&c, b, ov) != 0) {
		arn_bootstrap_free(b);
		return -EINVAL;
	}
	*out = b;
	return 0;
}

int arn_bootstrap_load_file(const char *path, const struct arn_bootstrap_overrides *ov,
			    struct arn_bootstrap **out, struct arn_sb *err)
{
	*out = NULL;
	FILE *f = fopen(path, "rb");
	if (f == NULL) {
		int e = errno;
		arn_sb_printf(err, "%s: cannot open: %s\n", path, strerror(e));
		return -e;
	}
	struct stat st;
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		arn_sb_printf(err, "%s: is a directory: -c takes the configuration file\n", path);
		fclose(f);
		return -EISDIR;
	}
	struct arn_sb data = ARN_SB_INIT;
	char chunk[65536];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		arn_sb_append(&data, chunk, n);
		if (data.len > (64u << 20)) {
			arn_sb_printf(err, "%s: larger than 64 MiB; is this the right file?\n",
				      path);
			fclose(f);
			arn_sb_free(&data);
			return -EFBIG;
		}
	}
	int rerr = ferror(f) ? errno : 0;
	fclose(f);
	if (rerr) {
		arn_sb_printf(err, "%s: cannot read: %s\n", path, strerror(rerr));
		arn_sb_free(&data);
		return -EIO;
	}
	if (data.oom) {
		arn_sb_free(&data);
		return -ENOMEM;
	}
	int rc = arn_bootstrap_load_buf(path, arn_sb_cstr(&data), data.len, ov, out, err);
	arn_sb_free(&data);
	return rc;
}

int arn_bootstrap_where(const struct arn_bootstrap *b, const char *path, size_t *line, size_t *col)
{
	yaml_document_t *doc = b->yaml;
	yaml_node_t *root = doc ? yaml_document_get_root_node(doc) : NULL;
	if (root == NULL)
		return -ENOENT;
	yaml_node_t *n = arn_y2j_find(doc, root, path);
	if (n == NULL || n == root)
		return -ENOENT;
	*line = n->start_mark.line + 1;
	*col = n->start_mark.column + 1;
	return 0;
}

/* Depth-first: the first mapping pair under @p n whose key is one of
 * @p keys and whose value is the scalar @p value. */
static yaml_node_t *find_pair(yaml_document_t *doc, yaml_node_t *n, const char *const *keys,
			      const char *value, unsigned depth)
{
	if (n == NULL || depth > 64)
		return NULL;
	if (n->type == YAML_SEQUENCE_NODE) {
		for (yaml_node_item_t *i = n->data.sequence.items.start;
		     i < n->data.sequence.items.top; i++) {
			yaml_node_t *r =
			    find_pair(doc, yaml_document_get_node(doc, *i), keys, value, depth + 1);
			if (r)
				return r;
		}
	} else if (n->type == YAML_MAPPING_NODE) {
		for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
		     p < n->data.mapping.pairs.top; p++) {
			yaml_node_t *k = yaml_document_get_node(doc, p->key);
			yaml_node_t *v = yaml_document_get_node(doc, p->value);
			if (k && v && k->type == YAML_SCALAR_NODE && v->type == YAML_SCALAR_NODE) {
				for (const char *const *key = keys; *key; key++)
					if (!strcmp(arn_y2j_scalar(k), *key) &&
					    !strcmp(arn_y2j_scalar(v), value))
						return v;
			}
			yaml_node_t *r = find_pair(doc, v, keys, value, depth + 1);
			if (r)
				return r;
		}
	}
	return NULL;
}

int arn_bootstrap_where_cluster_ref(const struct arn_bootstrap *b, const char *cluster,
				    size_t *line, size_t *col)
{
	yaml_document_t *doc = b->yaml;
	yaml_node_t *root = doc ? yaml_document_get_root_node(doc) : NULL;
	if (root == NULL)
		return -ENOENT;
	yaml_node_t *ls = arn_y2j_find(doc, root, "envoy_bootstrap.static_resources.listeners");
	/* route.cluster, and weighted_clusters.clusters[].name */
	static const char *const keys[] = {"cluster", "name", NULL};
	static const char *const only_cluster[] = {"cluster", NULL};
	yaml_node_t *n = find_pair(doc, ls, only_cluster, cluster, 0);
	if (n == NULL)
		n = find_pair(doc, ls, keys, cluster, 0);
	if (n == NULL)
		return -ENOENT;
	*line = n->start_mark.line + 1;
	*col = n->start_mark.column + 1;
	return 0;
}

/* ---- summary ------------------------------------------------------------- */

static void put_socket_address(struct arn_sb *o, const envoy_config_core_v3_Address *a)
{
	const envoy_config_core_v3_SocketAddress *sa =
	    a ? envoy_config_core_v3_Address_socket_address(a) : NULL;
	if (sa == NULL) {
		arn_sb_puts(o, "(no socket address)");
		return;
	}
	arn_sb_printf(o, ARN_SV_FMT ":%u",
		      ARN_SV_ARG(envoy_config_core_v3_SocketAddress_address(sa)),
		      envoy_config_core_v3_SocketAddress_port_value(sa));
}

static const char *cluster_type_name(int t)
{
	switch (t) {
	case envoy_config_cluster_v3_Cluster_STATIC:
		return "STATIC";
	case envoy_config_cluster_v3_Cluster_STRICT_DNS:
		return "STRICT_DNS";
	case envoy_config_cluster_v3_Cluster_LOGICAL_DNS:
		return "LOGICAL_DNS";
	case envoy_config_cluster_v3_Cluster_EDS:
		return "EDS";
	case envoy_config_cluster_v3_Cluster_ORIGINAL_DST:
		return "ORIGINAL_DST";
	default:
		return "?";
	}
}

static void ipv4_str(uint32_t a, char *buf, size_t n)
{
	snprintf(buf, n, "%u.%u.%u.%u", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255);
}

void arn_bootstrap_summary(const struct arn_bootstrap *b, struct arn_sb *o)
{
	arn_sb_printf(o, "config: %s\n", b->file);
	arn_sb_printf(o, "node: id=%s cluster=%s\n", b->node_id[0] ? b->node_id : "(none)",
		      b->node_cluster[0] ? b->node_cluster : "(none)");
	if (b->ads) {
		arn_sb_puts(o, "xds: delta ADS (DeltaAggregatedResources) via");
		for (size_t i = 0; i < b->n_xds_clusters; i++) {
			size_t idx;
			const envoy_config_cluster_v3_Cluster *cl = static_cluster(
			    b->pb, upb_StringView_FromString(b->xds_clusters[i]), &idx);
			arn_sb_printf(o, "%s cluster %s [", i ? "," : "", b->xds_clusters[i]);
			const envoy_config_endpoint_v3_ClusterLoadAssignment *la =
			    cl ? envoy_config_cluster_v3_Cluster_load_assignment(cl) : NULL;
			size_t nl = 0;
			const envoy_config_endpoint_v3_LocalityLbEndpoints *const *lle =
			    la ? envoy_config_endpoint_v3_ClusterLoadAssignment_endpoints(la, &nl)
			       : NULL;
			bool first = true;
			for (size_t l = 0; l < nl; l++) {
				size_t ne;
				const envoy_config_endpoint_v3_LbEndpoint *const *eps =
				    envoy_config_endpoint_v3_LocalityLbEndpoints_lb_endpoints(
					lle[l], &ne);
				for (size_t e = 0; e < ne; e++) {
					const envoy_config_endpoint_v3_Endpoint *ep =
					    envoy_config_endpoint_v3_LbEndpoint_endpoint(eps[e]);
					arn_sb_puts(o, first ? "" : " ");
					first = false;
					put_socket_address(
					    o, ep ? envoy_config_endpoint_v3_Endpoint_address(ep)
						  : NULL);
				}
			}
			arn_sb_printf(o, "] %s", cl ? arn_bs_xds_channel_kind(cl) : "?");
		}
		arn_sb_putc(o, '\n');
	} else {
		arn_sb_puts(o, "xds: none (static configuration only)\n");
	}
	if (b->has_admin)
		arn_sb_printf(o, "admin: %s:%u\n", b->admin_address, b->admin_port);
	else
		arn_sb_puts(o, "admin: disabled (no admin.address)\n");
	/* only when set: what an operator checks after writing them */
	if (b->has_global_cx_limit || b->n_cx_limits) {
		arn_sb_puts(o, "connection limits:");
		if (b->has_global_cx_limit)
			arn_sb_printf(o, " global %llu", (unsigned long long)b->global_cx_limit);
		for (size_t i = 0; i < b->n_cx_limits; i++)
			arn_sb_printf(
			    o, "%s listener %s %llu", i || b->has_global_cx_limit ? "," : "",
			    b->cx_limits[i].listener, (unsigned long long)b->cx_limits[i].max);
		arn_sb_putc(o, '\n');
	}

	const envoy_config_bootstrap_v3_Bootstrap_StaticResources *sr =
	    envoy_config_bootstrap_v3_Bootstrap_static_resources(b->pb);
	size_t nl = 0, nc = 0, ns = 0;
	const envoy_config_listener_v3_Listener *const *ls =
	    sr ? envoy_config_bootstrap_v3_Bootstrap_StaticResources_listeners(sr, &nl) : NULL;
	const envoy_config_cluster_v3_Cluster *const *cl =
	    sr ? envoy_config_bootstrap_v3_Bootstrap_StaticResources_clusters(sr, &nc) : NULL;
	const envoy_extensions_transport_sockets_tls_v3_Secret *const *se =
	    sr ? envoy_config_bootstrap_v3_Bootstrap_StaticResources_secrets(sr, &ns) : NULL;
	arn_sb_printf(o, "static listeners: %zu\n", nl);
	for (size_t i = 0; i < nl; i++) {
		upb_StringView ln = envoy_config_listener_v3_Listener_name(ls[i]);
		/* unnamed: lib/config names it after its address */
		if (ln.size)
			arn_sb_printf(o, "  " ARN_SV_FMT " on ", ARN_SV_ARG(ln));
		else
			arn_sb_puts(o, "  (unnamed) on ");
		put_socket_address(o, envoy_config_listener_v3_Listener_address(ls[i]));
		size_t nfc;
		envoy_config_listener_v3_Listener_filter_chains(ls[i], &nfc);
		arn_sb_printf(o, ", %zu filter chain%s\n", nfc, nfc == 1 ? "" : "s");
	}
	arn_sb_printf(o, "static clusters: %zu\n", nc);
	for (size_t i = 0; i < nc; i++) {
		const envoy_config_endpoint_v3_ClusterLoadAssignment *la =
		    envoy_config_cluster_v3_Cluster_load_assignment(cl[i]);
		size_t neps = 0, nloc = 0;
		const envoy_config_endpoint_v3_LocalityLbEndpoints *const *lle =
		    la ? envoy_config_endpoint_v3_ClusterLoadAssignment_endpoints(la, &nloc) : NULL;
		for (size_t l = 0; l < nloc; l++) {
			size_t k;
			envoy_config_endpoint_v3_LocalityLbEndpoints_lb_endpoints(lle[l], &k);
			neps += k;
		}
		arn_sb_printf(o, "  " ARN_SV_FMT " (%s, %zu endpoint%s)\n",
			      ARN_SV_ARG(envoy_config_cluster_v3_Cluster_name(cl[i])),
			      cluster_type_name(envoy_config_cluster_v3_Cluster_type(cl[i])), neps,
			      neps == 1 ? "" : "s");
	}
	arn_sb_printf(o, "static secrets: %zu\n", ns);
	for (size_t i = 0; i < ns; i++)
		arn_sb_printf(
		    o, "  " ARN_SV_FMT "\n",
		    ARN_SV_ARG(envoy_extensions_transport_sockets_tls_v3_Secret_name(se[i])));

	const struct arn_dataplane *dp = &b->dp;
	if (!dp->present) {
		arn_sb_puts(o, "dataplane: none (control plane only)\n");
	} else {
		arn_sb_printf(o, "dataplane: %zu port%s, control lcore ", dp->n_ports,
			      dp->n_ports == 1 ? "" : "s");
		if (dp->control_lcore >= 0)
			arn_sb_printf(o, "%d", dp->control_lcore);
		else
			arn_sb_puts(o, "(EAL default)");
		arn_sb_puts(o, ", worker lcores");
		for (size_t i = 0; i < dp->n_workers; i++)
			arn_sb_printf(o, "%s%u", i ? "," : " ", dp->worker_lcores[i]);
		if (dp->n_workers == 0)
			arn_sb_puts(o, " (all other EAL lcores)");
		arn_sb_putc(o, '\n');
		for (size_t i = 0; i < dp->n_ports; i++) {
			const struct arn_dp_port *p = &dp->ports[i];
			char a[16], g[16];
			ipv4_str(p->ipv4, a, sizeof(a));
			ipv4_str(p->gateway, g, sizeof(g));
			arn_sb_printf(o, "  %s: %s %s, %s/%u%s%s, mtu %u", p->name,
				      p->is_pci ? "pci" : "vdev", p->device, a, p->prefix_len,
				      p->gateway ? " via " : "", p->gateway ? g : "", p->mtu);
			for (size_t r = 0; r < p->n_routes; r++) {
				char pr[16];
				ipv4_str(p->routes[r].prefix, pr, sizeof(pr));
				arn_sb_printf(o, "%s%s/%u", r ? ", " : ", routes ", pr,
					      p->routes[r].len);
			}
			arn_sb_putc(o, '\n');
		}
		arn_sb_printf(o, "  mbufs: %u per socket (cache %u, data room %u)\n",
			      dp->mbufs_per_socket, dp->mbuf_cache_size, dp->mbuf_data_room);
		arn_sb_printf(o, "  tcp: %s, %u connections per worker, rcvbuf %u",
			      dp->tcp_cc == ARN_DP_TCP_CC_NEWRENO ? "newreno"
			      : dp->tcp_cc == ARN_DP_TCP_CC_BBR	  ? "bbr"
								  : "cubic",
			      dp->tcp_max_connections, dp->tcp_rcvbuf);
		/* autotuning's ceiling, or that it is off (0 or not above rcvbuf:
		 * tcp_rmem_init) */
		if (dp->tcp_rcvbuf_max > dp->tcp_rcvbuf)
			arn_sb_printf(o, " (autotuned up to %u)", dp->tcp_rcvbuf_max);
		else
			arn_sb_printf(o, " (not autotuned)");
		arn_sb_printf(o, ", sndbuf %u", dp->tcp_sndbuf);
		/* the same for send buffers (0 or not above sndbuf: off,
		 * tcp_rmem_init) */
		if (dp->tcp_sndbuf_max > dp->tcp_sndbuf)
			arn_sb_printf(o, " (autotuned up to %u)", dp->tcp_sndbuf_max);
		else
			arn_sb_printf(o, " (not autotuned)");
		/* the opt-in reordering window beyond SRTT (docs/tcp.md, "Ninth
		 * pass"); nothing said for the default, RFC 8985's window */
		if (dp->tcp_reo_max_ms)
			arn_sb_printf(o, ", reordering window up to %u ms on DSACK evidence",
				      dp->tcp_reo_max_ms);
		arn_sb_putc(o, '\n');
		arn_sb_printf(
		    o,
		    "  http: %u client and %u upstream connections, %u requests in flight, "
		    "%u mbufs of kept request bodies per worker\n",
		    dp->http_max_client_connections, dp->http_max_upstream_connections,
		    dp->http_max_requests_in_flight, dp->http_kept_body_mbufs);
	}
	if (b->warnings.len)
		arn_sb_printf(o, "warnings:\n%s", arn_sb_cstr(&b->warnings));
}
