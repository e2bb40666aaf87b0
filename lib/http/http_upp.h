/*
 * The PROXY header Arion writes as the first bytes of an upstream
 * connection whose cluster (or transport_socket_matches entry) wraps its
 * transport socket in envoy.transport_sockets.upstream_proxy_protocol
 * (lib/config's conv_upp.c; docs/http.md, "PROXY protocol upstream").
 * The HTTP pools (http_upstream.c), tcp_proxy (http_tcpp.c) and the
 * health checker (http_hc.c) write it from their on_connected, before
 * TLS's ClientHello or any request byte.
 */
#ifndef HTTP_UPP_H
#define HTTP_UPP_H

#include <stdbool.h>
#include <stdint.h>

#include "arn_proxy_proto.h"

struct arn_tcp_conn;

/**
 * Write the version @p version (1, 2) PROXY header on @p tc, just
 * connected (its send buffer empty: the header, at most 56 bytes, fits).
 * @p a: the downstream's remote (src) and local (dst) addresses; NULL
 * when there is none (a health check): v2 writes LOCAL, v1 the
 * connection's own local (src) and remote (dst) addresses, as Envoy's
 * UpstreamProxyProtocolSocket. @return true if every byte went.
 */
bool http_upp_send(struct arn_tcp_conn *tc, unsigned version, const struct arn_pp_addrs *a);

#endif
