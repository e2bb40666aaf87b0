/*
 * envoy.filters.network.tcp_proxy's data path: a downstream connection
 * whose chain ends in tcp_proxy is relayed byte for byte to a new
 * connection to an endpoint of the chosen cluster (http_tcpp.c).
 *
 * Ownership: the sessions are the worker's blocks (w->tcpps, allocated by
 * http_module.c with the other pools); one is taken on accept and goes back
 * when lib/tcp has closed both of its connections. A session holds its
 * listener pinned (its chain and tcp_proxy configuration live there), its
 * cluster and endpoints pinned, and references to its runtime objects.
 *
 * Memory: the relay keeps no bytes of its own. What the downstream sent
 * moves from its TCP receive queue into the upstream's send queue (the
 * mbufs are relinked, not copied: arn_tcp_rx_take, arn_tcp_write_mbuf),
 * and only as much as that send queue has room for; the rest stays in the
 * receive queue, whose window then closes. Likewise the other way. So a
 * slow reader on either side holds at most one send buffer plus one
 * receive buffer of lib/tcp (both bounded in bytes and in mbufs there),
 * never more.
 */
#ifndef ARN_HTTP_TCPP_H
#define ARN_HTTP_TCPP_H

#include <stddef.h>
#include <stdint.h>

struct arn_tcp_conn;
struct arn_cfg_listener;
struct arn_cfg_filter_chain;
struct http_worker;
struct arn_tls_ctx;
struct arn_tls_stats;

/*
 * Start relaying accepted connection @p tc (on listener @p l, chain @p fc,
 * whose terminal filter is tcp_proxy): the network filters before it, the
 * cluster, the upstream connection. @p sni (may be NULL) is the name the
 * ClientHello asked for when tls_inspector chose the chain; the hello's
 * bytes stay in TCP's queue and are relayed like any others (TLS
 * passthrough). With @p tctx (the chain's DownstreamTlsContext), TLS is
 * terminated first and the plaintext relayed; its handshake counts in
 * @p ssl. @return 0 (the session owns @p tc from now on: it sets its ops
 * and user), or a negative errno (nothing was kept: the caller refuses or
 * closes @p tc).
 */
int http_tcpp_open(struct http_worker *w, struct arn_tcp_conn *tc, const struct arn_cfg_listener *l,
		   const struct arn_cfg_filter_chain *fc, const char *sni, size_t sni_len,
		   struct arn_tls_ctx *tctx, struct arn_tls_stats *ssl);

/*
 * Serve accepted connection @p tc (on listener @p l, chain @p fc, whose
 * filter is envoy.filters.network.echo) with lib/tcp's echo, in a session
 * block that keeps its listener version for the drain. @return 0 (it owns
 * @p tc), or -ENOBUFS (no session block free: the caller refuses @p tc).
 */
int http_tcpp_echo_open(struct http_worker *w, struct arn_tcp_conn *tc,
			const struct arn_cfg_listener *l, const struct arn_cfg_filter_chain *fc);

/*
 * The drain of listener version @p l ended (--drain-time-s after it was
 * replaced or removed): close the sessions on it whose filter chain the
 * current version @p now (NULL: removed) did not keep, as Envoy closes a
 * draining listener's network-filter connections at the end of its drain
 * time (tcp_proxy and echo have no protocol-level signal to ask the
 * client to go).
 * Sessions on an older version of the same address, kept by @p l's
 * update and no longer draining themselves, are judged against @p now as
 * well. Queued bytes go out, then FIN (both sides). @return the sessions
 * closed.
 */
uint32_t http_tcpp_drain_end(struct http_worker *w, const struct arn_cfg_listener *l,
			     const struct arn_cfg_listener *now);

/** Worker shutdown: reset every session's connections, no callbacks. */
void http_tcpp_shutdown(struct http_worker *w);

/** The worker's @p n session blocks (worker_init, on the worker's lcore).
 * @return 0 or -ENOMEM. */
int http_tcpp_worker_init(struct http_worker *w, uint32_t n);
void http_tcpp_worker_fini(struct http_worker *w);

#endif
