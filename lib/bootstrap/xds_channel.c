/*
 * The channel to the control plane: what the xDS cluster's transport_socket
 * may say, and the rule that a remote control plane is not reached in
 * plaintext unless the operator says so (`xds: {allow_plaintext: true}`).
 *
 * The xDS client (lib/xds, gRPC's C core TLS credentials) honours an
 * UpstreamTlsContext with
 *   - sni,
 *   - one client certificate: tls_certificate_sds_secret_configs[0],
 *   - a trusted CA: validation_context_sds_secret_config, or
 *     combined_validation_context (whose default_validation_context adds SAN
 *     matchers),
 *   - SAN matchers (match_subject_alt_names, match_typed_subject_alt_names)
 *     with exact, prefix, suffix or contains, ignore_case,
 *   - tls_params that leave gRPC's TLS 1.2-1.3 range as it is, and
 *     alpn_protocols [h2].
 * Everything else is refused here, by field, so that `--mode validate`
 * refuses what serve could not do.
 *
 * Why secrets by name: X13 (TLS contexts name secrets; inline material is
 * refused everywhere, and lib/config converts the xDS cluster like any other
 * static cluster). Nothing can come from the control plane before it is
 * reached, so those secrets must be in static_resources.secrets, which is
 * also how Envoy resolves a name without an sds_config.
 *
 * Why a CA is required: without one Envoy does not verify the peer, and a
 * control plane that is not authenticated can rewrite every route and read
 * every private key it is asked for. That meaning is refused, not kept.
 */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
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

#include "arn_proto.h"
#include "bootstrap_int.h"

#define TLS_NS "envoy.extensions.transport_sockets.tls.v3."

#define HOW_TO_TLS                                                                                 \
	"give the cluster a transport_socket {name: envoy.transport_sockets.tls, typed_config: "   \
	"{\"@type\": " ARN_TYPE_URL_PREFIX ARN_TYPE_UPSTREAM_TLS                                   \
	", ...}} (docs/configuration.md, "                                                         \
	"\"TLS to the control plane\")"

typedef envoy_extensions_transport_sockets_tls_v3_CommonTlsContext ctc_t;
typedef envoy_extensions_transport_sockets_tls_v3_CertificateValidationContext cvc_t;
typedef envoy_extensions_transport_sockets_tls_v3_SdsSecretConfig sds_t;
typedef envoy_extensions_transport_sockets_tls_v3_Secret secret_t;

/* A printf'd path into @p buf (cut if longer: paths only point at the place). */
static const char *sub(char *buf, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static const char *sub(char *buf, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, n, fmt, ap);
	va_end(ap);
	return buf;
}
#define SUB(buf, ...) sub((buf), sizeof(buf), __VA_ARGS__)

bool arn_bs_is_loopback(const char *host)
{
	struct in_addr a4;
	struct in6_addr a6;
	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (inet_pton(AF_INET6, host, &a6) != 1)
		return false; /* a name: where it leads is not known here */
	if (IN6_IS_ADDR_LOOPBACK(&a6))
		return true;
	return IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127;
}

const secret_t *arn_bs_static_secret(const envoy_config_bootstrap_v3_Bootstrap *bs,
				     upb_StringView name, size_t *index)
{
	const envoy_config_bootstrap_v3_Bootstrap_StaticResources *sr =
	    envoy_config_bootstrap_v3_Bootstrap_static_resources(bs);
	size_t n = 0;
	const secret_t *const *se =
	    sr ? envoy_config_bootstrap_v3_Bootstrap_StaticResources_secrets(sr, &n) : NULL;
	for (size_t i = 0; i < n; i++)
		if (upb_StringView_IsEqual(
			envoy_extensions_transport_sockets_tls_v3_Secret_name(se[i]), name)) {
			if (index)
				*index = i;
			return se[i];
		}
	return NULL;
}

/* Exact, prefix, suffix, contains (and ignore_case); not safe_regex. */
static void string_matcher(struct arn_bs_ctx *c, const envoy_type_matcher_v3_StringMatcher *m,
			   const char *path)
{
	char p[640];
	switch (envoy_type_matcher_v3_StringMatcher_match_pattern_case(m)) {
	case envoy_type_matcher_v3_StringMatcher_match_pattern_exact:
	case envoy_type_matcher_v3_StringMatcher_match_pattern_prefix:
	case envoy_type_matcher_v3_StringMatcher_match_pattern_suffix:
	case envoy_type_matcher_v3_StringMatcher_match_pattern_contains:
		break;
	case envoy_type_matcher_v3_StringMatcher_match_pattern_safe_regex:
		arn_bs_error(c, SUB(p, "%s.safe_regex", path),
			     "not supported for the xDS channel's SAN check: use exact, prefix, "
			     "suffix or contains");
		break;
	default:
		arn_bs_error(c, path,
			     "the matcher is empty: give exact, prefix, suffix or contains");
		break;
	}
}

/* SAN matchers of a CertificateValidationContext; @p secret: it is a
 * Secret's (where trusted_ca belongs) rather than the TLS context's own. */
static void validation_context(struct arn_bs_ctx *c, const cvc_t *vc, const char *path, bool secret)
{
	static const char *const ok_secret[] = {"trusted_ca", "match_subject_alt_names",
						"match_typed_subject_alt_names", NULL};
	arn_bs_only_fields(c, (const upb_Message *)vc,
			   arn_proto_msgdef(TLS_NS "CertificateValidationContext"), path,
			   secret ? ok_secret : ok_secret + 1,
			   "the xDS channel (gRPC's TLS client) checks the chain against "
			   "trusted_ca and the SAN matchers, nothing else");
	char p[640];
	size_t n;
	const envoy_type_matcher_v3_StringMatcher *const *sm =
	    envoy_extensions_transport_sockets_tls_v3_CertificateValidationContext_match_subject_alt_names(
		vc, &n);
	for (size_t i = 0; i < n; i++)
		string_matcher(c, sm[i], SUB(p, "%s.match_subject_alt_names[%zu]", path, i));
	const envoy_extensions_transport_sockets_tls_v3_SubjectAltNameMatcher *const *tm =
	    envoy_extensions_transport_sockets_tls_v3_CertificateValidationContext_match_typed_subject_alt_names(
		vc, &n);
	for (size_t i = 0; i < n; i++) {
		int32_t ty =
		    envoy_extensions_transport_sockets_tls_v3_SubjectAltNameMatcher_san_type(tm[i]);
		if (ty < envoy_extensions_transport_sockets_tls_v3_SubjectAltNameMatcher_EMAIL ||
		    ty > envoy_extensions_transport_sockets_tls_v3_SubjectAltNameMatcher_IP_ADDRESS)
			arn_bs_error(
			    c, SUB(p, "%s.match_typed_subject_alt_names[%zu].san_type", path, i),
			    "give DNS, URI, EMAIL or IP_ADDRESS");
		const envoy_type_matcher_v3_StringMatcher *m =
		    envoy_extensions_transport_sockets_tls_v3_SubjectAltNameMatcher_matcher(tm[i]);
		if (m == NULL)
			arn_bs_error(
			    c, SUB(p, "%s.match_typed_subject_alt_names[%zu].matcher", path, i),
			    "missing");
		else
			string_matcher(
			    c, m, SUB(p, "%s.match_typed_subject_alt_names[%zu].matcher", path, i));
	}
}

/*
 * A secret reference of the xDS cluster: no sds_config (the control plane
 * cannot deliver the key to its own channel), the name in
 * static_resources.secrets with the right kind. @return the secret or NULL.
 */
static const secret_t *static_ref(struct arn_bs_ctx *c,
				  const envoy_config_bootstrap_v3_Bootstrap *bs, const sds_t *ref,
				  const char *path, bool want_cert)
{
	char p[640];
	const char *kind = want_cert ? "tls_certificate" : "validation_context";
	upb_StringView name = envoy_extensions_transport_sockets_tls_v3_SdsSecretConfig_name(ref);
	const envoy_config_core_v3_ConfigSource *cs =
	    envoy_extensions_transport_sockets_tls_v3_SdsSecretConfig_sds_config(ref);
	if (cs != NULL) {
		/* X13 refuses other sources (arn_rules_static(), lib/config);
		 * ads: {} is refused here. */
		if (envoy_config_core_v3_ConfigSource_config_source_specifier_case(cs) ==
		    envoy_config_core_v3_ConfigSource_config_source_specifier_ads)
			arn_bs_error(
			    c, SUB(p, "%s.sds_config", path),
			    "the xDS cluster's own secrets cannot come over the ADS stream "
			    "that they protect: remove sds_config and define secret '" ARN_SV_FMT
			    "' in static_resources.secrets",
			    ARN_SV_ARG(name));
		return NULL;
	}
	if (name.size == 0)
		return NULL; /* X13 reports it (arn_rules_static(), lib/config) */
	size_t idx = 0;
	const secret_t *s = arn_bs_static_secret(bs, name, &idx);
	if (s == NULL) {
		arn_bs_error(
		    c, SUB(p, "%s.name", path),
		    "secret '" ARN_SV_FMT "' is not in static_resources.secrets; the xDS "
		    "cluster's TLS material cannot come from the control plane it reaches: "
		    "define it there with %s",
		    ARN_SV_ARG(name), kind);
		return NULL;
	}
	bool is_cert = envoy_extensions_transport_sockets_tls_v3_Secret_has_tls_certificate(s);
	bool is_vc = envoy_extensions_transport_sockets_tls_v3_Secret_has_validation_context(s);
	if ((want_cert && !is_cert) || (!want_cert && !is_vc)) {
		arn_bs_error(c, SUB(p, "%s.name", path),
			     "secret '" ARN_SV_FMT "' (static_resources.secrets[%zu]) has no %s",
			     ARN_SV_ARG(name), idx, kind);
		return NULL;
	}
	char sp[128];
	SUB(sp, "envoy_bootstrap.static_resources.secrets[%zu].%s", idx, kind);
	if (want_cert) {
		static const char *const ok[] = {"certificate_chain", "private_key", NULL};
		arn_bs_only_fields(
		    c,
		    (const upb_Message *)
			envoy_extensions_transport_sockets_tls_v3_Secret_tls_certificate(s),
		    arn_proto_msgdef(TLS_NS "TlsCertificate"), sp, ok,
		    "this secret is the xDS channel's client certificate, and gRPC's "
		    "TLS client takes a PEM chain and an unencrypted PEM key only");
	} else {
		const cvc_t *vc =
		    envoy_extensions_transport_sockets_tls_v3_Secret_validation_context(s);
		validation_context(c, vc, sp, true);
		if (!envoy_extensions_transport_sockets_tls_v3_CertificateValidationContext_has_trusted_ca(
			vc))
			arn_bs_error(c, sp,
				     "trusted_ca is missing: the xDS channel verifies the control "
				     "plane's certificate against it");
	}
	return s;
}

static void tls_params(struct arn_bs_ctx *c, const upb_Message *tp, const char *path)
{
	static const char *const ok[] = {"tls_minimum_protocol_version",
					 "tls_maximum_protocol_version", NULL};
	arn_bs_only_fields(c, tp, arn_proto_msgdef(TLS_NS "TlsParameters"), path, ok,
			   "gRPC's TLS client chooses its own ciphers and curves");
	const envoy_extensions_transport_sockets_tls_v3_TlsParameters *t = (const void *)tp;
	char p[640];
	int32_t lo =
	    envoy_extensions_transport_sockets_tls_v3_TlsParameters_tls_minimum_protocol_version(t);
	int32_t hi =
	    envoy_extensions_transport_sockets_tls_v3_TlsParameters_tls_maximum_protocol_version(t);
	if (lo != envoy_extensions_transport_sockets_tls_v3_TlsParameters_TLS_AUTO &&
	    lo != envoy_extensions_transport_sockets_tls_v3_TlsParameters_TLSv1_2)
		arn_bs_error(
		    c, SUB(p, "%s.tls_minimum_protocol_version", path),
		    "the xDS channel (gRPC) speaks TLS 1.2 and 1.3 and cannot change that: "
		    "write TLSv1_2 or leave it out");
	if (hi != envoy_extensions_transport_sockets_tls_v3_TlsParameters_TLS_AUTO &&
	    hi != envoy_extensions_transport_sockets_tls_v3_TlsParameters_TLSv1_3)
		arn_bs_error(
		    c, SUB(p, "%s.tls_maximum_protocol_version", path),
		    "the xDS channel (gRPC) speaks TLS 1.2 and 1.3 and cannot change that: "
		    "write TLSv1_3 or leave it out");
}

/* The UpstreamTlsContext of the xDS cluster at @p path (its typed_config). */
static void upstream_tls(struct arn_bs_ctx *c, const envoy_config_bootstrap_v3_Bootstrap *bs,
			 const upb_Message *utc, const char *path)
{
	static const char *const ok_utc[] = {"common_tls_context", "sni", NULL};
	arn_bs_only_fields(c, utc, arn_proto_msgdef(ARN_TYPE_UPSTREAM_TLS), path, ok_utc,
			   "gRPC's TLS client, which carries the xDS stream, cannot do it");
	const ctc_t *ctc =
	    envoy_extensions_transport_sockets_tls_v3_UpstreamTlsContext_common_tls_context(
		(const void *)utc);
	char p[640], cp[600];
	if (ctc == NULL) {
		arn_bs_error(
		    c, path,
		    "common_tls_context is missing: the xDS channel needs at least a trusted "
		    "CA (validation_context_sds_secret_config naming a static secret)");
		return;
	}
	SUB(cp, "%s.common_tls_context", path);
	static const char *const ok_ctc[] = {"tls_params",
					     "tls_certificates",
					     "tls_certificate_sds_secret_configs",
					     "validation_context",
					     "validation_context_sds_secret_config",
					     "combined_validation_context",
					     "alpn_protocols",
					     NULL};
	arn_bs_only_fields(c, (const upb_Message *)ctc, arn_proto_msgdef(TLS_NS "CommonTlsContext"),
			   cp, ok_ctc,
			   "gRPC's TLS client, which carries the xDS stream, cannot do it");
	if (envoy_extensions_transport_sockets_tls_v3_CommonTlsContext_has_tls_params(ctc))
		tls_params(
		    c,
		    (const upb_Message *)
			envoy_extensions_transport_sockets_tls_v3_CommonTlsContext_tls_params(ctc),
		    SUB(p, "%s.tls_params", cp));
	size_t n;
	const upb_StringView *alpn =
	    envoy_extensions_transport_sockets_tls_v3_CommonTlsContext_alpn_protocols(ctc, &n);
	for (size_t i = 0; i < n; i++)
		if (!arn_sv_eq(alpn[i], "h2"))
			arn_bs_error(c, SUB(p, "%s.alpn_protocols[%zu]", cp, i),
				     "gRPC offers h2 and only h2: remove '" ARN_SV_FMT "'",
				     ARN_SV_ARG(alpn[i]));
	envoy_extensions_transport_sockets_tls_v3_CommonTlsContext_tls_certificates(ctc, &n);
	if (n > 0)
		arn_bs_error(
		    c, SUB(p, "%s.tls_certificates", cp),
		    "inline certificates are refused (X13): put certificate_chain and "
		    "private_key in a static_resources.secrets entry (tls_certificate) and "
		    "name it in tls_certificate_sds_secret_configs");
	const sds_t *const *certs =
	    envoy_extensions_transport_sockets_tls_v3_CommonTlsContext_tls_certificate_sds_secret_configs(
		ctc, &n);
	if (n > 1)
		arn_bs_error(c, SUB(p, "%s.tls_certificate_sds_secret_configs", cp),
			     "the xDS channel presents one client certificate; name one secret");
	else if (n == 1)
		static_ref(c, bs, certs[0], SUB(p, "%s.tls_certificate_sds_secret_configs[0]", cp),
			   true);

	const char *no_ca =
	    "no trusted CA: Envoy would not verify the control plane's certificate, and Arion "
	    "does not take configuration and private keys from a peer it cannot "
	    "authenticate; define a static secret with validation_context.trusted_ca and "
	    "name it in validation_context_sds_secret_config (or in "
	    "combined_validation_context, whose default_validation_context holds SAN "
	    "matchers)";
	switch (
	    envoy_extensions_transport_sockets_tls_v3_CommonTlsContext_validation_context_type_case(
		ctc)) {
	case envoy_extensions_transport_sockets_tls_v3_CommonTlsContext_validation_context_type_validation_context: {
		const cvc_t *vc =
		    envoy_extensions_transport_sockets_tls_v3_CommonTlsContext_validation_context(
			ctc);
		if (envoy_extensions_transport_sockets_tls_v3_CertificateValidationContext_has_trusted_ca(
			vc))
			arn_bs_error(
			    c, SUB(p, "%s.validation_context.trusted_ca", cp),
			    "an inline trusted CA is refused (X13): put it in a "
			    "static_resources.secrets entry (validation_context.trusted_ca) "
			    "and name it in validation_context_sds_secret_config, or in "
			    "combined_validation_context with these SAN matchers in "
			    "default_validation_context");
		else
			arn_bs_error(c, SUB(p, "%s.validation_context", cp), "%s", no_ca);
		break;
	}
	case envoy_extensions_transport_sockets_tls_v3_CommonTlsContext_validation_context_type_validation_context_sds_secret_config:
		static_ref(
		    c, bs,
		    envoy_extensions_transport_sockets_tls_v3_CommonTlsContext_validation_context_sds_secret_config(
			ctc),
		    SUB(p, "%s.validation_context_sds_secret_config", cp), false);
		break;
	case envoy_extensions_transport_sockets_tls_v3_CommonTlsContext_validation_context_type_combined_validation_context: {
		const envoy_extensions_transport_sockets_tls_v3_CommonTlsContext_CombinedCertificateValidationContext
		    *cv =
			envoy_extensions_transport_sockets_tls_v3_CommonTlsContext_combined_validation_context(
			    ctc);
		char vp[640];
		SUB(vp, "%s.combined_validation_context", cp);
		static const char *const ok[] = {"default_validation_context",
						 "validation_context_sds_secret_config", NULL};
		arn_bs_only_fields(
		    c, (const upb_Message *)cv,
		    arn_proto_msgdef(TLS_NS
				     "CommonTlsContext.CombinedCertificateValidationContext"),
		    vp, ok, NULL);
		const cvc_t *dvc =
		    envoy_extensions_transport_sockets_tls_v3_CommonTlsContext_CombinedCertificateValidationContext_default_validation_context(
			cv);
		if (dvc != NULL)
			validation_context(c, dvc, SUB(p, "%s.default_validation_context", vp),
					   false);
		const sds_t *ref =
		    envoy_extensions_transport_sockets_tls_v3_CommonTlsContext_CombinedCertificateValidationContext_validation_context_sds_secret_config(
			cv);
		if (ref == NULL)
			arn_bs_error(c, SUB(p, "%s.validation_context_sds_secret_config", vp),
				     "missing: name the static secret that holds the trusted CA");
		else
			static_ref(c, bs, ref,
				   SUB(p, "%s.validation_context_sds_secret_config", vp), false);
		break;
	}
	case envoy_extensions_transport_sockets_tls_v3_CommonTlsContext_validation_context_type_NOT_SET:
		arn_bs_error(c, cp, "%s", no_ca);
		break;
	default:
		break; /* a certificate provider: only_fields refused it */
	}
}

/* The first endpoint of @p cl that is not a loopback address, or NULL. */
static const envoy_config_core_v3_SocketAddress *
remote_endpoint(const envoy_config_cluster_v3_Cluster *cl)
{
	const envoy_config_endpoint_v3_ClusterLoadAssignment *la =
	    envoy_config_cluster_v3_Cluster_load_assignment(cl);
	size_t nl = 0;
	const envoy_config_endpoint_v3_LocalityLbEndpoints *const *lle =
	    la ? envoy_config_endpoint_v3_ClusterLoadAssignment_endpoints(la, &nl) : NULL;
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
			char host[128];
			upb_StringView h = envoy_config_core_v3_SocketAddress_address(sa);
			snprintf(host, sizeof(host), ARN_SV_FMT, ARN_SV_ARG(h));
			if (!arn_bs_is_loopback(host))
				return sa;
		}
	}
	return NULL;
}

const char *arn_bs_xds_channel_kind(const envoy_config_cluster_v3_Cluster *cl)
{
	const envoy_config_core_v3_TransportSocket *ts =
	    envoy_config_cluster_v3_Cluster_transport_socket(cl);
	const struct google_protobuf_Any *any =
	    ts ? envoy_config_core_v3_TransportSocket_typed_config(ts) : NULL;
	if (any == NULL ||
	    !arn_sv_eq(arn_proto_any_type_name((const upb_Message *)any), ARN_TYPE_UPSTREAM_TLS))
		return "plaintext";
	upb_Arena *a = upb_Arena_New();
	struct arn_sb err = ARN_SB_INIT;
	const upb_Message *m =
	    a ? arn_proto_any_unpack((const upb_Message *)any, NULL, NULL, a, &err) : NULL;
	arn_sb_free(&err);
	const ctc_t *ctc =
	    m ? envoy_extensions_transport_sockets_tls_v3_UpstreamTlsContext_common_tls_context(
		    (const void *)m)
	      : NULL;
	size_t n = 0;
	if (ctc != NULL)
		envoy_extensions_transport_sockets_tls_v3_CommonTlsContext_tls_certificate_sds_secret_configs(
		    ctc, &n);
	if (a)
		upb_Arena_Free(a);
	return n ? "mTLS" : "TLS";
}

void arn_bs_check_xds_channel(struct arn_bs_ctx *c, const struct arn_bootstrap *b,
			      const envoy_config_cluster_v3_Cluster *cl, const char *path,
			      upb_StringView name)
{
	char p[640];
	size_t n;
	envoy_config_cluster_v3_Cluster_transport_socket_matches(cl, &n);
	if (n > 0)
		arn_bs_error(c, SUB(p, "%s.transport_socket_matches", path),
			     "not supported on the xDS cluster: its channel has one "
			     "transport_socket for every endpoint");
	const envoy_config_core_v3_TransportSocket *ts =
	    envoy_config_cluster_v3_Cluster_transport_socket(cl);
	const struct google_protobuf_Any *any =
	    ts ? envoy_config_core_v3_TransportSocket_typed_config(ts) : NULL;
	char tp[600];
	SUB(tp, "%s.transport_socket", path);
	if (ts != NULL && any == NULL &&
	    !arn_sv_eq(envoy_config_core_v3_TransportSocket_name(ts),
		       "envoy.transport_sockets.raw_buffer")) {
		arn_bs_error(c, tp, "typed_config is missing: give an " ARN_TYPE_UPSTREAM_TLS);
		return;
	}
	upb_StringView tn = any ? arn_proto_any_type_name((const upb_Message *)any)
				: upb_StringView_FromString(ARN_TYPE_RAW_BUFFER);
	if (arn_sv_eq(tn, ARN_TYPE_UPSTREAM_TLS)) {
		struct arn_sb err = ARN_SB_INIT;
		upb_Message *utc =
		    arn_proto_any_unpack((const upb_Message *)any, NULL, NULL, c->arena, &err);
		if (utc == NULL)
			arn_bs_error(c, SUB(p, "%s.typed_config", tp), "%s", arn_sb_cstr(&err));
		else
			upstream_tls(c, b->pb, utc, SUB(p, "%s.typed_config", tp));
		arn_sb_free(&err);
		return;
	}
	if (!arn_sv_eq(tn, ARN_TYPE_RAW_BUFFER)) {
		arn_bs_error(c, SUB(p, "%s.typed_config", tp),
			     "transport socket type '" ARN_SV_FMT "' is not supported for the xDS "
			     "cluster (only " ARN_TYPE_UPSTREAM_TLS ")",
			     ARN_SV_ARG(tn));
		return;
	}
	/* Plaintext: fine on loopback, refused elsewhere unless allowed. */
	const envoy_config_core_v3_SocketAddress *sa = remote_endpoint(cl);
	if (sa == NULL)
		return;
	upb_StringView host = envoy_config_core_v3_SocketAddress_address(sa);
	uint32_t port = envoy_config_core_v3_SocketAddress_port_value(sa);
	if (b->xds.allow_plaintext) {
		arn_bs_warn(c, path,
			    "xDS cluster '" ARN_SV_FMT "' reaches " ARN_SV_FMT ":%u in plaintext "
			    "(xds.allow_plaintext): anyone on the path can read its secrets and "
			    "rewrite its configuration",
			    ARN_SV_ARG(name), ARN_SV_ARG(host), port);
		return;
	}
	arn_bs_error(c, path,
		     "xDS cluster '" ARN_SV_FMT "' would reach its control plane at " ARN_SV_FMT
		     ":%u in plaintext, and that address is not loopback: private keys (SDS) and "
		     "every route would cross the network unencrypted, and anyone on the path "
		     "could rewrite the configuration. Either " HOW_TO_TLS ", or, on a network "
		     "you trust, set `xds: {allow_plaintext: true}` at the top level of the file",
		     ARN_SV_ARG(name), ARN_SV_ARG(host), port);
}
