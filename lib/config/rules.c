#include "arn_rules.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "envoy/config/bootstrap/v3/bootstrap.upb.h"
#include "envoy/config/cluster/v3/cluster.upb.h"
#include "envoy/config/core/v3/base.upb.h"
#include "envoy/config/core/v3/config_source.upb.h"
#include "envoy/config/listener/v3/listener.upb.h"
#include "envoy/config/listener/v3/listener_components.upb.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.upb.h"
#include "envoy/extensions/transport_sockets/tls/v3/common.upb.h"
#include "envoy/extensions/transport_sockets/tls/v3/secret.upb.h"
#include "envoy/extensions/transport_sockets/tls/v3/tls.upb.h"
#include "google/protobuf/any.upb.h"

#include "arn_bootstrap.h"
#include "arn_proto.h"

void arn_rule_report(const struct arn_rule_sink *sink, const char *path, const char *fmt, ...)
{
	char msg[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sink->fn(sink->ctx, path, msg);
}

/* path + suffix into buf. */
static const char *cat(char *buf, size_t n, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static const char *cat(char *buf, size_t n, const char *path, const char *fmt, ...)
{
	size_t l = (size_t)snprintf(buf, n, "%s", path);
	if (l < n) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(buf + l, n - l, fmt, ap);
		va_end(ap);
	}
	return buf;
}

int arn_rules_ads_only(const envoy_config_core_v3_ConfigSource *cs, const char *path,
		       const char *rule, const struct arn_rule_sink *sink)
{
	const char *why = arn_bootstrap_ads_only(cs);
	if (why == NULL)
		return 0;
	arn_rule_report(sink, path, "%s (%s)", why, rule);
	return 1;
}

int arn_rules_hcm(
    const envoy_extensions_filters_network_http_connection_manager_v3_HttpConnectionManager *hcm,
    const char *path, const struct arn_rule_sink *sink)
{
	char p[512];
	int n = 0;
	const envoy_extensions_filters_network_http_connection_manager_v3_Rds *rds =
	    envoy_extensions_filters_network_http_connection_manager_v3_HttpConnectionManager_rds(
		hcm);
	if (rds != NULL) {
		const envoy_config_core_v3_ConfigSource *cs =
		    envoy_extensions_filters_network_http_connection_manager_v3_Rds_config_source(
			rds);
		if (cs == NULL) {
			arn_rule_report(sink, cat(p, sizeof(p), path, ".rds.config_source"),
					"missing: write `config_source: {ads: {}}` (X11)");
			n++;
		} else {
			n += arn_rules_ads_only(cs, cat(p, sizeof(p), path, ".rds.config_source"),
						"X11", sink);
		}
		if (envoy_extensions_filters_network_http_connection_manager_v3_Rds_route_config_name(
			rds)
			.size == 0) {
			arn_rule_report(sink, cat(p, sizeof(p), path, ".rds.route_config_name"),
					"missing: RDS needs the name of the RouteConfiguration to "
					"fetch (X11)");
			n++;
		}
	}
	if (envoy_extensions_filters_network_http_connection_manager_v3_HttpConnectionManager_has_scoped_routes(
		hcm)) {
		arn_rule_report(sink, cat(p, sizeof(p), path, ".scoped_routes"),
				"scoped RDS (SRDS) is not supported: use route_config or rds");
		n++;
	}
	return n;
}

static int sds_ref(const envoy_extensions_transport_sockets_tls_v3_SdsSecretConfig *s,
		   const char *path, const struct arn_rule_sink *sink)
{
	char p[512];
	int n = 0;
	if (envoy_extensions_transport_sockets_tls_v3_SdsSecretConfig_name(s).size == 0) {
		arn_rule_report(sink, cat(p, sizeof(p), path, ".name"),
				"missing: a secret is referenced by name (X13)");
		n++;
	}
	const envoy_config_core_v3_ConfigSource *cs =
	    envoy_extensions_transport_sockets_tls_v3_SdsSecretConfig_sds_config(s);
	if (cs != NULL && envoy_config_core_v3_ConfigSource_config_source_specifier_case(cs) !=
			      envoy_config_core_v3_ConfigSource_config_source_specifier_ads) {
		arn_rule_report(
		    sink, cat(p, sizeof(p), path, ".sds_config"),
		    "an sds_config source is refused: secrets are referenced by name "
		    "only and always arrive on the ADS stream; remove sds_config (X13)");
		n++;
	}
	return n;
}

int arn_rules_common_tls(const envoy_extensions_transport_sockets_tls_v3_CommonTlsContext *t,
			 const char *path, const struct arn_rule_sink *sink)
{
	char p[512];
	int n = 0;
	size_t len;
	const envoy_extensions_transport_sockets_tls_v3_SdsSecretConfig *const *certs =
	    envoy_extensions_transport_sockets_tls_v3_CommonTlsContext_tls_certificate_sds_secret_configs(
		t, &len);
	for (size_t i = 0; i < len; i++)
		n += sds_ref(certs[i],
			     cat(p, sizeof(p), path, ".tls_certificate_sds_secret_configs[%zu]", i),
			     sink);
	const envoy_extensions_transport_sockets_tls_v3_SdsSecretConfig *vc =
	    envoy_extensions_transport_sockets_tls_v3_CommonTlsContext_validation_context_sds_secret_config(
		t);
	if (vc != NULL)
		n += sds_ref(vc, cat(p, sizeof(p), path, ".validation_context_sds_secret_config"),
			     sink);
	const envoy_extensions_transport_sockets_tls_v3_CommonTlsContext_CombinedCertificateValidationContext
	    *cvc =
		envoy_extensions_transport_sockets_tls_v3_CommonTlsContext_combined_validation_context(
		    t);
	if (cvc != NULL) {
		const envoy_extensions_transport_sockets_tls_v3_SdsSecretConfig *s =
		    envoy_extensions_transport_sockets_tls_v3_CommonTlsContext_CombinedCertificateValidationContext_validation_context_sds_secret_config(
			cvc);
		if (s != NULL)
			n += sds_ref(s,
				     cat(p, sizeof(p), path,
					 ".combined_validation_context.validation_context_sds_"
					 "secret_config"),
				     sink);
	}
	return n;
}

int arn_rules_transport_socket(const upb_Message *any, const char *path, upb_Arena *arena,
			       const struct arn_rule_sink *sink)
{
	char p[512];
	upb_StringView tn = arn_proto_any_type_name(any);
	bool down = arn_sv_eq(tn, ARN_TYPE_DOWNSTREAM_TLS),
	     up = arn_sv_eq(tn, ARN_TYPE_UPSTREAM_TLS);
	if (!down && !up)
		return 0;
	struct arn_sb err = ARN_SB_INIT;
	upb_Message *m = arn_proto_any_unpack(any, NULL, NULL, arena, &err);
	if (m == NULL) {
		arn_rule_report(sink, path, "%s", arn_sb_cstr(&err));
		arn_sb_free(&err);
		return 1;
	}
	const envoy_extensions_transport_sockets_tls_v3_CommonTlsContext *c =
	    down
		? envoy_extensions_transport_sockets_tls_v3_DownstreamTlsContext_common_tls_context(
		      (void *)m)
		: envoy_extensions_transport_sockets_tls_v3_UpstreamTlsContext_common_tls_context(
		      (void *)m);
	int n =
	    c ? arn_rules_common_tls(c, cat(p, sizeof(p), path, ".common_tls_context"), sink) : 0;
	const envoy_extensions_transport_sockets_tls_v3_SdsSecretConfig *tk =
	    down
		? envoy_extensions_transport_sockets_tls_v3_DownstreamTlsContext_session_ticket_keys_sds_secret_config(
		      (void *)m)
		: NULL;
	if (tk != NULL)
		n += sds_ref(tk, cat(p, sizeof(p), path, ".session_ticket_keys_sds_secret_config"),
			     sink);
	return n;
}

static int filter_chain(const envoy_config_listener_v3_FilterChain *fc, const char *path,
			upb_Arena *arena, const struct arn_rule_sink *sink)
{
	char p[512];
	int n = 0;
	size_t nf;
	const envoy_config_listener_v3_Filter *const *fs =
	    envoy_config_listener_v3_FilterChain_filters(fc, &nf);
	for (size_t i = 0; i < nf; i++) {
		const struct google_protobuf_Any *tc =
		    envoy_config_listener_v3_Filter_typed_config(fs[i]);
		if (tc == NULL || !arn_sv_eq(arn_proto_any_type_name(tc), ARN_TYPE_HCM))
			continue;
		struct arn_sb err = ARN_SB_INIT;
		upb_Message *hcm = arn_proto_any_unpack(tc, NULL, NULL, arena, &err);
		cat(p, sizeof(p), path, ".filters[%zu].typed_config", i);
		if (hcm == NULL) {
			arn_rule_report(sink, p, "%s", arn_sb_cstr(&err));
			n++;
		} else {
			n += arn_rules_hcm((void *)hcm, p, sink);
		}
		arn_sb_free(&err);
	}
	const envoy_config_core_v3_TransportSocket *ts =
	    envoy_config_listener_v3_FilterChain_transport_socket(fc);
	if (ts != NULL && envoy_config_core_v3_TransportSocket_typed_config(ts) != NULL)
		n += arn_rules_transport_socket(
		    envoy_config_core_v3_TransportSocket_typed_config(ts),
		    cat(p, sizeof(p), path, ".transport_socket.typed_config"), arena, sink);
	return n;
}

int arn_rules_listener(const envoy_config_listener_v3_Listener *l, const char *path,
		       upb_Arena *arena, const struct arn_rule_sink *sink)
{
	char p[512];
	int n = 0;
	size_t nfc;
	const envoy_config_listener_v3_FilterChain *const *fcs =
	    envoy_config_listener_v3_Listener_filter_chains(l, &nfc);
	for (size_t i = 0; i < nfc; i++)
		n += filter_chain(fcs[i], cat(p, sizeof(p), path, ".filter_chains[%zu]", i), arena,
				  sink);
	const envoy_config_listener_v3_FilterChain *dfc =
	    envoy_config_listener_v3_Listener_default_filter_chain(l);
	if (dfc != NULL)
		n += filter_chain(dfc, cat(p, sizeof(p), path, ".default_filter_chain"), arena,
				  sink);
	return n;
}

int arn_rules_cluster(const envoy_config_cluster_v3_Cluster *c, const char *path, upb_Arena *arena,
		      const struct arn_rule_sink *sink)
{
	char p[512];
	int n = 0;
	bool eds = envoy_config_cluster_v3_Cluster_cluster_discovery_type_case(c) ==
		       envoy_config_cluster_v3_Cluster_cluster_discovery_type_type &&
		   envoy_config_cluster_v3_Cluster_type(c) == envoy_config_cluster_v3_Cluster_EDS;
	const envoy_config_cluster_v3_Cluster_EdsClusterConfig *ecc =
	    envoy_config_cluster_v3_Cluster_eds_cluster_config(c);
	if (eds) {
		if (envoy_config_cluster_v3_Cluster_has_load_assignment(c)) {
			arn_rule_report(
			    sink, cat(p, sizeof(p), path, ".load_assignment"),
			    "an EDS cluster has no load_assignment: its endpoints arrive "
			    "as the ClusterLoadAssignment named like the cluster (X12)");
			n++;
		}
		if (ecc != NULL) {
			/* the override is refused; a service_name that is the
			 * cluster's own name overrides nothing (Envoy Gateway and
			 * Istio write it so on every EDS cluster) */
			upb_StringView sn =
			    envoy_config_cluster_v3_Cluster_EdsClusterConfig_service_name(ecc);
			upb_StringView cn = envoy_config_cluster_v3_Cluster_name(c);
			if (sn.size && (sn.size != cn.size || memcmp(sn.data, cn.data, sn.size) != 0)) {
				arn_rule_report(
				    sink,
				    cat(p, sizeof(p), path, ".eds_cluster_config.service_name"),
				    "refused: the ClusterLoadAssignment's name must equal the "
				    "cluster's name; remove service_name or make it the cluster's "
				    "name (X12)");
				n++;
			}
			n += arn_rules_ads_only(
			    envoy_config_cluster_v3_Cluster_EdsClusterConfig_eds_config(ecc),
			    cat(p, sizeof(p), path, ".eds_cluster_config.eds_config"), "X12", sink);
		}
	} else if (ecc != NULL) {
		arn_rule_report(sink, cat(p, sizeof(p), path, ".eds_cluster_config"),
				"only a cluster of type EDS takes eds_cluster_config (X12)");
		n++;
	}
	const envoy_config_core_v3_TransportSocket *ts =
	    envoy_config_cluster_v3_Cluster_transport_socket(c);
	if (ts != NULL && envoy_config_core_v3_TransportSocket_typed_config(ts) != NULL)
		n += arn_rules_transport_socket(
		    envoy_config_core_v3_TransportSocket_typed_config(ts),
		    cat(p, sizeof(p), path, ".transport_socket.typed_config"), arena, sink);
	/* X13 for every transport_socket_matches entry's socket too */
	size_t nm = 0;
	const envoy_config_cluster_v3_Cluster_TransportSocketMatch *const *tm =
	    envoy_config_cluster_v3_Cluster_transport_socket_matches(c, &nm);
	for (size_t i = 0; i < nm; i++) {
		const envoy_config_core_v3_TransportSocket *mts =
		    envoy_config_cluster_v3_Cluster_TransportSocketMatch_transport_socket(tm[i]);
		if (mts != NULL && envoy_config_core_v3_TransportSocket_typed_config(mts) != NULL)
			n += arn_rules_transport_socket(
			    envoy_config_core_v3_TransportSocket_typed_config(mts),
			    cat(p, sizeof(p), path,
				".transport_socket_matches[%zu].transport_socket.typed_config", i),
			    arena, sink);
	}
	return n;
}

/* ---- static_resources, as the file says them ------------------------------ */

/* One refusal: "FILE:LINE:COL: PATH: Cluster 'api': reason", as the loader
 * reports every other problem of the file. */
struct static_sink {
	const struct arn_bootstrap *b;
	struct arn_sb *err;
	char what[192]; /* "Listener 'l'" */
};

static void static_report(void *ctx, const char *path, const char *msg)
{
	struct static_sink *ss = ctx;
	size_t line, col;
	if (arn_bootstrap_where(ss->b, path, &line, &col) == 0)
		arn_sb_printf(ss->err, "%s:%zu:%zu: %s: %s: %s\n", ss->b->file, line, col, path,
			      ss->what, msg);
	else
		arn_sb_printf(ss->err, "%s: %s: %s: %s\n", ss->b->file, path, ss->what, msg);
}

int arn_rules_static(const struct arn_bootstrap *b, struct arn_sb *err)
{
	const envoy_config_bootstrap_v3_Bootstrap_StaticResources *sr =
	    envoy_config_bootstrap_v3_Bootstrap_static_resources(b->pb);
	if (sr == NULL)
		return 0;
	upb_Arena *arena = upb_Arena_New();
	if (arena == NULL)
		return -ENOMEM;
	struct static_sink ss = {.b = b, .err = err};
	struct arn_rule_sink sink = {static_report, &ss};
	char p[512];
	int n = 0;
	size_t len;
	const envoy_config_listener_v3_Listener *const *ls =
	    envoy_config_bootstrap_v3_Bootstrap_StaticResources_listeners(sr, &len);
	for (size_t i = 0; i < len; i++) {
		snprintf(p, sizeof(p), "envoy_bootstrap.static_resources.listeners[%zu]", i);
		snprintf(ss.what, sizeof(ss.what), "Listener '" ARN_SV_FMT "'",
			 ARN_SV_ARG(envoy_config_listener_v3_Listener_name(ls[i])));
		n += arn_rules_listener(ls[i], p, arena, &sink);
	}
	const envoy_config_cluster_v3_Cluster *const *cl =
	    envoy_config_bootstrap_v3_Bootstrap_StaticResources_clusters(sr, &len);
	for (size_t i = 0; i < len; i++) {
		snprintf(p, sizeof(p), "envoy_bootstrap.static_resources.clusters[%zu]", i);
		snprintf(ss.what, sizeof(ss.what), "Cluster '" ARN_SV_FMT "'",
			 ARN_SV_ARG(envoy_config_cluster_v3_Cluster_name(cl[i])));
		n += arn_rules_cluster(cl[i], p, arena, &sink);
	}
	upb_Arena_Free(arena);
	return n ? -EINVAL : 0;
}
