/*
 * Client options from the bootstrap: the node (X7), the grpc_services
 * clusters in order with their static endpoints (X9) and TLS, and
 * set_node_on_first_message_only.
 *
 * TLS: lib/bootstrap has already refused every UpstreamTlsContext field
 * the channel cannot honour and checked that the secrets it names are in
 * static_resources.secrets; here the PEM material is read (file,
 * environment variable or inline) and the SAN matchers collected, in
 * Envoy's merge order for combined_validation_context (the default
 * context's matchers, then the secret's).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envoy/config/bootstrap/v3/bootstrap.upb.h"
#include "envoy/config/cluster/v3/cluster.upb.h"
#include "envoy/config/core/v3/address.upb.h"
#include "envoy/config/core/v3/base.upb.h"
#include "envoy/config/core/v3/config_source.upb.h"
#include "envoy/config/endpoint/v3/endpoint.upb.h"
#include "envoy/config/endpoint/v3/endpoint_components.upb.h"
#include "envoy/extensions/transport_sockets/tls/v3/common.upb.h"
#include "envoy/extensions/transport_sockets/tls/v3/secret.upb.h"
#include "envoy/extensions/transport_sockets/tls/v3/tls.upb.h"
#include "envoy/type/matcher/v3/string.upb.h"
#include "google/protobuf/any.upb.h"

#include "arn_bootstrap.h"
#include "arn_log.h"
#include "arn_proto.h"
#include "arn_xds.h"

#define MAX_PEM (1u << 20) /* as lib/config's secrets */

typedef envoy_extensions_transport_sockets_tls_v3_CertificateValidationContext cvc_t;
typedef envoy_extensions_transport_sockets_tls_v3_Secret secret_t;

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
	for (size_t i = 0; i < h->n_strs; i++) {
		explicit_bzero(h->strs[i], strlen(h->strs[i])); /* keys among them */
		free(h->strs[i]);
	}
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

static const secret_t *find_secret(const struct arn_bootstrap *b, upb_StringView name)
{
	const envoy_config_bootstrap_v3_Bootstrap_StaticResources *sr =
	    envoy_config_bootstrap_v3_Bootstrap_static_resources(b->pb);
	size_t n = 0;
	const secret_t *const *se =
	    sr ? envoy_config_bootstrap_v3_Bootstrap_StaticResources_secrets(sr, &n) : NULL;
	for (size_t i = 0; i < n; i++)
		if (upb_StringView_IsEqual(
			envoy_extensions_transport_sockets_tls_v3_Secret_name(se[i]), name))
			return se[i];
	return NULL;
}

/* A file's contents, NUL-terminated, into the holder. */
static int read_file(struct arn_xds_options_holder *h, const char *cluster, const char *what,
		     const char *path, const char **out)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL) {
		int e = errno;
		ARN_ERR(XDS, "xDS cluster %s: %s: cannot open '%s': %s", cluster, what, path,
			strerror(e));
		return -EINVAL;
	}
	char *buf = malloc(MAX_PEM + 1);
	size_t n = buf ? fread(buf, 1, MAX_PEM + 1, f) : 0;
	bool bad = buf && (ferror(f) || n > MAX_PEM);
	fclose(f);
	if (buf == NULL)
		return -ENOMEM;
	if (bad) {
		ARN_ERR(XDS, "xDS cluster %s: %s: '%s' cannot be read or is over %u bytes", cluster,
			what, path, MAX_PEM);
		free(buf);
		return -EINVAL;
	}
	*out = keep(h, (upb_StringView){buf, n});
	explicit_bzero(buf, n);
	free(buf);
	return *out ? 0 : -ENOMEM;
}

/* A DataSource (filename, environment_variable, inline_bytes, inline_string). */
static int datasource(struct arn_xds_options_holder *h, const char *cluster, const char *what,
		      const envoy_config_core_v3_DataSource *ds, const char **out)
{
	*out = NULL;
	if (ds == NULL) {
		ARN_ERR(XDS, "xDS cluster %s: %s is missing", cluster, what);
		return -EINVAL;
	}
	char name[4096];
	const char *v;
	switch (envoy_config_core_v3_DataSource_specifier_case(ds)) {
	case envoy_config_core_v3_DataSource_specifier_filename: {
		upb_StringView fn = envoy_config_core_v3_DataSource_filename(ds);
		snprintf(name, sizeof(name), "%.*s", (int)fn.size, fn.data);
		return read_file(h, cluster, what, name, out);
	}
	case envoy_config_core_v3_DataSource_specifier_environment_variable: {
		upb_StringView ev = envoy_config_core_v3_DataSource_environment_variable(ds);
		snprintf(name, sizeof(name), "%.*s", (int)ev.size, ev.data);
		v = getenv(name);
		if (v == NULL || *v == '\0') {
			ARN_ERR(XDS, "xDS cluster %s: %s: environment variable %s is not set",
				cluster, what, name);
			return -EINVAL;
		}
		*out = keep(h, upb_StringView_FromString(v));
		break;
	}
	case envoy_config_core_v3_DataSource_specifier_inline_bytes:
		*out = keep(h, envoy_config_core_v3_DataSource_inline_bytes(ds));
		break;
	case envoy_config_core_v3_DataSource_specifier_inline_string:
		*out = keep(h, envoy_config_core_v3_DataSource_inline_string(ds));
		break;
	default:
		ARN_ERR(XDS, "xDS cluster %s: %s names no source", cluster, what);
		return -EINVAL;
	}
	return *out ? 0 : -ENOMEM;
}

/* Append the SAN matchers of @p vc to @p t (arena storage). */
static int san_matchers(struct arn_xds_options_holder *h, struct arn_xds_tls *t, const cvc_t *vc)
{
	size_t nu, nt;
	const envoy_type_matcher_v3_StringMatcher *const *um =
	    envoy_extensions_transport_sockets_tls_v3_CertificateValidationContext_match_subject_alt_names(
		vc, &nu);
	const envoy_extensions_transport_sockets_tls_v3_SubjectAltNameMatcher *const *tm =
	    envoy_extensions_transport_sockets_tls_v3_CertificateValidationContext_match_typed_subject_alt_names(
		vc, &nt);
	if (nu + nt == 0)
		return 0;
	struct arn_xds_san_matcher *m =
	    upb_Arena_Malloc(h->arena, (t->n_san + nu + nt) * sizeof(*m));
	if (m == NULL)
		return -ENOMEM;
	if (t->n_san)
		memcpy(m, t->san, t->n_san * sizeof(*m));
	size_t n = t->n_san;
	for (size_t i = 0; i < nu + nt; i++) {
		const envoy_type_matcher_v3_StringMatcher *sm =
		    i < nu
			? um[i]
			: envoy_extensions_transport_sockets_tls_v3_SubjectAltNameMatcher_matcher(
			      tm[i - nu]);
		if (sm == NULL)
			continue;
		struct arn_xds_san_matcher *x = &m[n];
		x->type =
		    i < nu
			? ARN_XDS_SAN_ANY
			: (enum arn_xds_san_type)
			      envoy_extensions_transport_sockets_tls_v3_SubjectAltNameMatcher_san_type(
				  tm[i - nu]);
		x->ignore_case = envoy_type_matcher_v3_StringMatcher_ignore_case(sm);
		upb_StringView v;
		switch (envoy_type_matcher_v3_StringMatcher_match_pattern_case(sm)) {
		case envoy_type_matcher_v3_StringMatcher_match_pattern_exact:
			x->how = ARN_XDS_MATCH_EXACT;
			v = envoy_type_matcher_v3_StringMatcher_exact(sm);
			break;
		case envoy_type_matcher_v3_StringMatcher_match_pattern_prefix:
			x->how = ARN_XDS_MATCH_PREFIX;
			v = envoy_type_matcher_v3_StringMatcher_prefix(sm);
			break;
		case envoy_type_matcher_v3_StringMatcher_match_pattern_suffix:
			x->how = ARN_XDS_MATCH_SUFFIX;
			v = envoy_type_matcher_v3_StringMatcher_suffix(sm);
			break;
		case envoy_type_matcher_v3_StringMatcher_match_pattern_contains:
			x->how = ARN_XDS_MATCH_CONTAINS;
			v = envoy_type_matcher_v3_StringMatcher_contains(sm);
			break;
		default:
			return -EINVAL; /* lib/bootstrap refuses the rest */
		}
		if ((x->value = keep(h, v)) == NULL)
			return -ENOMEM;
		n++;
	}
	t->san = m;
	t->n_san = n;
	return 0;
}

/* The static secret @p ref names, of kind tls_certificate or validation_context. */
static const secret_t *
secret_ref(const struct arn_bootstrap *b, const char *cluster,
	   const envoy_extensions_transport_sockets_tls_v3_SdsSecretConfig *ref, bool cert)
{
	upb_StringView name =
	    ref ? envoy_extensions_transport_sockets_tls_v3_SdsSecretConfig_name(ref)
		: upb_StringView_FromString("");
	const secret_t *s = find_secret(b, name);
	if (s == NULL ||
	    (cert ? !envoy_extensions_transport_sockets_tls_v3_Secret_has_tls_certificate(s)
		  : !envoy_extensions_transport_sockets_tls_v3_Secret_has_validation_context(s))) {
		ARN_ERR(XDS, "xDS cluster %s: secret '%.*s' is not a static %s secret", cluster,
			(int)name.size, name.data, cert ? "tls_certificate" : "validation_context");
		return NULL;
	}
	return s;
}

/* The TLS of xDS cluster @p cl, or s->tls = NULL for plaintext. */
static int add_tls(struct arn_xds_options_holder *h, const struct arn_bootstrap *b,
		   struct arn_xds_server *s, const envoy_config_cluster_v3_Cluster *cl)
{
	const envoy_config_core_v3_TransportSocket *ts =
	    envoy_config_cluster_v3_Cluster_transport_socket(cl);
	const struct google_protobuf_Any *any =
	    ts ? envoy_config_core_v3_TransportSocket_typed_config(ts) : NULL;
	if (any == NULL ||
	    !arn_sv_eq(arn_proto_any_type_name((const upb_Message *)any), ARN_TYPE_UPSTREAM_TLS))
		return 0; /* RawBuffer or none: plaintext (lib/bootstrap allowed it) */
	struct arn_sb err = ARN_SB_INIT;
	const envoy_extensions_transport_sockets_tls_v3_UpstreamTlsContext *utc =
	    (const void *)arn_proto_any_unpack((const upb_Message *)any, NULL, NULL, h->arena,
					       &err);
	if (utc == NULL) {
		ARN_ERR(XDS, "xDS cluster %s: transport_socket: %s", s->cluster, arn_sb_cstr(&err));
		arn_sb_free(&err);
		return -EINVAL;
	}
	arn_sb_free(&err);
	const envoy_extensions_transport_sockets_tls_v3_CommonTlsContext *ctc =
	    envoy_extensions_transport_sockets_tls_v3_UpstreamTlsContext_common_tls_context(utc);
	struct arn_xds_tls *t = upb_Arena_Malloc(h->arena, sizeof(*t));
	if (t == NULL)
		return -ENOMEM;
	memset(t, 0, sizeof(*t));
	upb_StringView sni = envoy_extensions_transport_sockets_tls_v3_UpstreamTlsContext_sni(utc);
	if (sni.size && (t->sni = keep(h, sni)) == NULL)
		return -ENOMEM;
	int rc;
	size_t n = 0;
	const envoy_extensions_transport_sockets_tls_v3_SdsSecretConfig *const *certs =
	    ctc ? envoy_extensions_transport_sockets_tls_v3_CommonTlsContext_tls_certificate_sds_secret_configs(
		      ctc, &n)
		: NULL;
	if (n > 0) {
		const secret_t *sec = secret_ref(b, s->cluster, certs[0], true);
		if (sec == NULL)
			return -EINVAL;
		const envoy_extensions_transport_sockets_tls_v3_TlsCertificate *tc =
		    envoy_extensions_transport_sockets_tls_v3_Secret_tls_certificate(sec);
		rc = datasource(
		    h, s->cluster, "tls_certificate.certificate_chain",
		    envoy_extensions_transport_sockets_tls_v3_TlsCertificate_certificate_chain(tc),
		    &t->cert_pem);
		if (rc == 0)
			rc = datasource(
			    h, s->cluster, "tls_certificate.private_key",
			    envoy_extensions_transport_sockets_tls_v3_TlsCertificate_private_key(
				tc),
			    &t->key_pem);
		if (rc != 0)
			return rc;
	}
	const envoy_extensions_transport_sockets_tls_v3_SdsSecretConfig *vref = NULL;
	if (ctc != NULL &&
	    envoy_extensions_transport_sockets_tls_v3_CommonTlsContext_has_combined_validation_context(
		ctc)) {
		const envoy_extensions_transport_sockets_tls_v3_CommonTlsContext_CombinedCertificateValidationContext
		    *cv =
			envoy_extensions_transport_sockets_tls_v3_CommonTlsContext_combined_validation_context(
			    ctc);
		const cvc_t *dvc =
		    envoy_extensions_transport_sockets_tls_v3_CommonTlsContext_CombinedCertificateValidationContext_default_validation_context(
			cv);
		if (dvc != NULL && (rc = san_matchers(h, t, dvc)) != 0)
			return rc;
		vref =
		    envoy_extensions_transport_sockets_tls_v3_CommonTlsContext_CombinedCertificateValidationContext_validation_context_sds_secret_config(
			cv);
	} else if (ctc != NULL) {
		vref =
		    envoy_extensions_transport_sockets_tls_v3_CommonTlsContext_validation_context_sds_secret_config(
			ctc);
	}
	const secret_t *vs = secret_ref(b, s->cluster, vref, false);
	if (vs == NULL)
		return -EINVAL;
	const cvc_t *vc = envoy_extensions_transport_sockets_tls_v3_Secret_validation_context(vs);
	rc = datasource(
	    h, s->cluster, "validation_context.trusted_ca",
	    envoy_extensions_transport_sockets_tls_v3_CertificateValidationContext_trusted_ca(vc),
	    &t->ca_pem);
	if (rc == 0)
		rc = san_matchers(h, t, vc);
	if (rc != 0)
		return rc;
	s->tls = t;
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
		if (rc == 0)
			rc = add_tls(h, b, s, cl);
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
