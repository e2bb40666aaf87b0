/*
 * Client options from the bootstrap: the node (X7), the grpc_services
 * clusters in order with their static endpoints (X9), and
 * set_node_on_first_message_only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "envoy/config/bootstrap/v3/bootstrap.upb.h"
#include "envoy/config/cluster/v3/cluster.upb.h"
#include "envoy/config/core/v3/address.upb.h"
#include "envoy/config/core/v3/base.upb.h"
#include "envoy/config/core/v3/config_source.upb.h"
#include "envoy/config/endpoint/v3/endpoint.upb.h"
#include "envoy/config/endpoint/v3/endpoint_components.upb.h"

#include "arn_bootstrap.h"
#include "arn_log.h"
#include "arn_xds.h"

struct arn_xds_options_holder {
	upb_Arena *arena;
	struct arn_xds_server *servers;
	size_t n_servers;
	char **strs;
	size_t n_strs, cap_strs;
};

static char *keep(struct arn_xds_options_holder *h, upb_StringView s)
{
	if (h->n_strs == h->cap_strs) {
		size_t nc = h->cap_strs ? h->cap_strs * 2 : 16;
		char **nv = realloc(h->strs, nc * sizeof(char *));
		if (nv == NULL)
			return NULL;
		h->strs = nv;
		h->cap_strs = nc;
	}
	char *d = strndup(s.data ? s.data : "", s.size);
	if (d != NULL)
		h->strs[h->n_strs++] = d;
	return d;
}

void arn_xds_options_release(struct arn_xds_options_holder *h)
{
	if (h == NULL)
		return;
	for (size_t i = 0; i < h->n_servers; i++) {
		free((void *)h->servers[i].hosts);
		free((void *)h->servers[i].ports);
	}
	free(h->servers);
	for (size_t i = 0; i < h->n_strs; i++)
		free(h->strs[i]);
	free(h->strs);
	if (h->arena)
		upb_Arena_Free(h->arena);
	free(h);
}

static const envoy_config_cluster_v3_Cluster *find_cluster(const struct arn_bootstrap *b,
							   const char *name)
{
	const envoy_config_bootstrap_v3_Bootstrap_StaticResources *sr =
	    envoy_config_bootstrap_v3_Bootstrap_static_resources(b->pb);
	if (sr == NULL)
		return NULL;
	size_t n;
	const envoy_config_cluster_v3_Cluster *const *cl =
	    envoy_config_bootstrap_v3_Bootstrap_StaticResources_clusters(sr, &n);
	for (size_t i = 0; i < n; i++)
		if (upb_StringView_IsEqual(envoy_config_cluster_v3_Cluster_name(cl[i]),
					   upb_StringView_FromString(name)))
			return cl[i];
	return NULL;
}

static int add_endpoints(struct arn_xds_options_holder *h, struct arn_xds_server *s,
			 const envoy_config_cluster_v3_Cluster *cl)
{
	const envoy_config_endpoint_v3_ClusterLoadAssignment *la =
	    envoy_config_cluster_v3_Cluster_load_assignment(cl);
	size_t nl = 0;
	const envoy_config_endpoint_v3_LocalityLbEndpoints *const *lle =
	    la ? envoy_config_endpoint_v3_ClusterLoadAssignment_endpoints(la, &nl) : NULL;
	size_t total = 0;
	for (size_t i = 0; i < nl; i++) {
		size_t k;
		envoy_config_endpoint_v3_LocalityLbEndpoints_lb_endpoints(lle[i], &k);
		total += k;
	}
	const char **hosts = calloc(total ? total : 1, sizeof(char *));
	uint16_t *ports = calloc(total ? total : 1, sizeof(uint16_t));
	if (hosts == NULL || ports == NULL) {
		free(hosts);
		free(ports);
		return -ENOMEM;
	}
	s->hosts = hosts;
	s->ports = ports;
	for (size_t i = 0; i < nl; i++) {
		size_t k;
		const envoy_config_endpoint_v3_LbEndpoint *const *lbe =
		    envoy_config_endpoint_v3_LocalityLbEndpoints_lb_endpoints(lle[i], &k);
		for (size_t j = 0; j < k; j++) {
			const envoy_config_endpoint_v3_Endpoint *ep =
			    envoy_config_endpoint_v3_LbEndpoint_endpoint(lbe[j]);
			const envoy_config_core_v3_Address *a =
			    ep ? envoy_config_endpoint_v3_Endpoint_address(ep) : NULL;
			const envoy_config_core_v3_SocketAddress *sa =
			    a ? envoy_config_core_v3_Address_socket_address(a) : NULL;
			if (sa == NULL)
				continue;
			uint32_t port = envoy_config_core_v3_SocketAddress_port_value(sa);
			const char *host = keep(h, envoy_config_core_v3_SocketAddress_address(sa));
			if (host == NULL)
				return -ENOMEM;
			if (port == 0 || port > 65535) {
				ARN_ERR(XDS, "xDS cluster %s: endpoint %s has no usable port_value",
					s->cluster, host);
				return -EINVAL;
			}
			hosts[s->n_endpoints] = host;
			ports[s->n_endpoints] = (uint16_t)port;
			s->n_endpoints++;
		}
	}
	if (s->n_endpoints == 0) {
		ARN_ERR(XDS, "xDS cluster %s has no socket_address endpoints in load_assignment",
			s->cluster);
		return -EINVAL;
	}
	return 0;
}

int arn_xds_options_from_bootstrap(const struct arn_bootstrap *b, struct arn_xds_options *o,
				   struct arn_xds_options_holder **holder)
{
	*holder = NULL;
	if (!b->ads || b->n_xds_clusters == 0) {
		ARN_ERR(XDS, "no dynamic_resources.ads_config in %s", b->file);
		return -EINVAL;
	}
	struct arn_xds_options_holder *h = calloc(1, sizeof(*h));
	if (h == NULL)
		return -ENOMEM;
	h->arena = upb_Arena_New();
	h->servers = calloc(b->n_xds_clusters, sizeof(*h->servers));
	if (h->arena == NULL || h->servers == NULL) {
		arn_xds_options_release(h);
		return -ENOMEM;
	}
	int rc = 0;
	for (size_t i = 0; i < b->n_xds_clusters && rc == 0; i++) {
		struct arn_xds_server *s = &h->servers[h->n_servers++];
		s->cluster = b->xds_clusters[i];
		const envoy_config_cluster_v3_Cluster *cl = find_cluster(b, s->cluster);
		if (cl == NULL) {
			ARN_ERR(XDS, "xDS cluster %s is not in static_resources.clusters",
				s->cluster);
			rc = -EINVAL;
			break;
		}
		rc = add_endpoints(h, s, cl);
	}
	if (rc != 0) {
		arn_xds_options_release(h);
		return rc;
	}
	o->node_id = b->node_id;
	o->node_cluster = b->node_cluster;
	const envoy_config_core_v3_Node *node = envoy_config_bootstrap_v3_Bootstrap_node(b->pb);
	if (node != NULL)
		o->node_pb = envoy_config_core_v3_Node_serialize(node, h->arena, &o->node_pb_len);
	const envoy_config_bootstrap_v3_Bootstrap_DynamicResources *dr =
	    envoy_config_bootstrap_v3_Bootstrap_dynamic_resources(b->pb);
	const envoy_config_core_v3_ApiConfigSource *ads =
	    dr ? envoy_config_bootstrap_v3_Bootstrap_DynamicResources_ads_config(dr) : NULL;
	o->node_first_only =
	    ads && envoy_config_core_v3_ApiConfigSource_set_node_on_first_message_only(ads);
	o->servers = h->servers;
	o->n_servers = h->n_servers;
	*holder = h;
	return 0;
}
