/*
 * envoy.transport_sockets.upstream_proxy_protocol (Envoy's
 * ProxyProtocolUpstreamTransport) on a cluster or in its
 * transport_socket_matches: the PROXY header (v1 or v2) lib/http writes as
 * the first bytes of every upstream connection, before the wrapped
 * socket's (raw_buffer, or TLS's ClientHello). Envoy Gateway writes it for
 * a BackendTrafficPolicy's proxyProtocol (internal/xds/translator,
 * cluster.go's buildProxyProtocolSocket).
 *
 * Acted on: config.version; transport_socket (raw_buffer or
 * UpstreamTlsContext, as a cluster's own). allow_unspecified_address and
 * tlv_as_pool_key are accepted: every downstream address Arion has is an
 * IPv4 one (the first never applies) and it sends no TLV (the second keys
 * by nothing more than the addresses it keys by already). Refused, by
 * name: config.pass_through_tlvs and config.added_tlvs (absent from
 * gRPC's copy of ProxyProtocolConfig: refused as unknown fields by
 * conv_only), since Arion writes no TLV.
 */
#include "arn_proto.h"
#include "config_int.h"

#define UPP_TYPE                                                                                   \
	"envoy.extensions.transport_sockets.proxy_protocol.v3.ProxyProtocolUpstreamTransport"

struct arn_cfg_tls *conv_upstream_ts(struct conv *c, struct pb ts, uint8_t *pp)
{
	*pp = 0;
	struct pb any = pb_msg(ts, "typed_config");
	if (!any.m || !arn_sv_eq(arn_proto_any_type_name(any.m), UPP_TYPE))
		return conv_tls(c, ts, false);
	size_t m0 = conv_push(c, "transport_socket");
	conv_only(c, ts, "name,typed_config");
	size_t m1 = conv_push(c, "typed_config");
	struct pb u = conv_any(c, any, UPP_TYPE);
	if (!u.m) {
		conv_pop(c, m0);
		return NULL;
	}
	conv_only(c, u, "config,transport_socket,allow_unspecified_address,tlv_as_pool_key");
	struct pb cfg = pb_msg(u, "config");
	size_t m2 = conv_push(c, "config");
	/* pass_through_tlvs, added_tlvs: unknown to gRPC's copy, refused here */
	conv_only(c, cfg, "version");
	int32_t v = pb_i32(cfg, "version"); /* V1 = 0 (the default), V2 = 1 */
	if (v != 0 && v != 1)
		conv_err(c, "version", "%d is not a PROXY protocol version (V1, V2)", v);
	else
		*pp = (uint8_t)(v + 1);
	conv_pop(c, m2);
	struct pb inner = pb_msg(u, "transport_socket");
	struct arn_cfg_tls *t = NULL;
	if (!inner.m) {
		conv_err(c, "transport_socket",
			 "missing (Envoy requires the wrapped socket: raw_buffer or tls)");
	} else {
		struct pb ia = pb_msg(inner, "typed_config");
		if (ia.m && arn_sv_eq(arn_proto_any_type_name(ia.m), UPP_TYPE))
			conv_err(c, "transport_socket",
				 "upstream_proxy_protocol inside upstream_proxy_protocol: one "
				 "PROXY header per connection");
		else
			t = conv_tls(c, inner, false);
	}
	conv_pop(c, m1);
	conv_pop(c, m0);
	return t;
}
