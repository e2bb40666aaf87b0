/*
 * The HTTP filters before the router whose decisions lib/l4 makes
 * (envoy.filters.http.rbac, envoy.filters.http.local_ratelimit), run in
 * the connection manager's filter order with the health check filter.
 */
#ifndef ARN_HTTP_L4_H
#define ARN_HTTP_L4_H

#include <stdbool.h>
#include <stdint.h>

#include "arn_rbac.h"

struct http_conn;
struct http_hcm_rt;
struct arn_cfg_filter_chain;
struct arn_cfg_listener;
struct http_stream;
struct arn_cfg_gen;
struct arn_cfg_request;
struct arn_cfg_route_table;

struct arn_tls_conn;

/* Room for a TLS peer's names given to RBAC (authenticated principal_name):
 * a peer with more is judged by the engine as an error (denied). */
#define HTTP_RBAC_PEER_NAMES 16
#define HTTP_RBAC_PEER_BYTES 2048

/** The verified peer's names, for one RBAC evaluation (on the stack). */
struct http_rbac_peer {
	char buf[HTTP_RBAC_PEER_BYTES]; /* the SANs, back to back */
	char subject[512];		/* RFC 2253 */
	size_t off[HTTP_RBAC_PEER_NAMES], len[HTTP_RBAC_PEER_NAMES];
	struct arn_rbac_str names[HTTP_RBAC_PEER_NAMES];
};

/**
 * Mark @p in as TLS when @p tls is not NULL and give it the peer
 * certificate's URI SANs, DNS SANs and subject (Envoy's AuthenticatedMatcher
 * input), which point into @p p.
 */
void http_rbac_peer(struct arn_rbac_input *in, const struct arn_tls_conn *tls,
		    struct http_rbac_peer *p);

/** Control lcore: take the statistics scopes of @p r's filters, and of
 * the network filters before it in listener @p l's chain. */
void http_l4_hrt_init(struct http_hcm_rt *r, const struct arn_cfg_listener *l);
/** Control lcore: put them. */
void http_l4_hrt_fini(struct http_hcm_rt *r);

/**
 * Run the filters before the router (health check, RBAC, local rate
 * limit) in order on @p st's request @p req, whose routes are @p rt.
 * @return true when one of them answered it (the router does not see it).
 */
bool http_l4_filters(struct http_stream *st, const struct arn_cfg_gen *g,
		     const struct arn_cfg_route_table *rt, const struct arn_cfg_request *req);

/**
 * Is the filter of kind @p kind (enum arn_cfg_http_filter: the first of
 * that kind in @p h's chain) off for request @p req of route table @p rt?
 * Its HttpFilter.disabled, unless the matched route's level says
 * otherwise (FilterConfig, or any per-filter configuration naming it:
 * arn_cfg_filter_off). Costs nothing unless @p h disables a filter or
 * @p rt turns one off by name.
 */
bool http_filter_kind_off(const struct arn_cfg_hcm *h, unsigned kind,
			  const struct arn_cfg_route_table *rt, const struct arn_cfg_request *req);

struct arn_h1_edit;
/**
 * The request edits the jwt_authn and basic_auth filters kept for @p st's
 * request (payload and claim headers, the token's header removed; the
 * user name: st->jwt_edits, http_req_edits_keep in http_req_kept.h)
 * and those a local_ratelimit filter asked for when it limited the
 * request without enforcing (request_headers_to_add_when_not_enforced),
 * into @p e (at most @p cap), values in the stream's text.
 * @return how many, or -ENOSPC.
 */
int http_l4_req_edits(struct http_stream *st, struct arn_h1_edit *e, unsigned cap);

/**
 * Response edits of a request a local_ratelimit filter with
 * enable_x_ratelimit_headers let through: draft 03's x-ratelimit-limit,
 * -remaining and -reset of the bucket it consulted, as Envoy adds them to
 * every response (encodeHeaders). @return how many went into @p e (0 or
 * 3), or -ENOSPC.
 */
int http_l4_resp_edits(struct http_stream *st, struct arn_h1_edit *e, unsigned cap);

/**
 * The network filters before the connection manager of chain @p fc on the
 * new connection @p hc (its hrt and listener set): local_ratelimit takes a
 * token, connection_limit counts it.
 * @return 0 to serve it, -EBUSY to refuse it: close it after *@p delay_ms
 *   (connection_limit's delay_deny), reading nothing.
 */
int http_l4_accept(struct http_conn *hc, const struct arn_cfg_filter_chain *fc, uint32_t *delay_ms);
/**
 * The network RBAC filters of @p hc's chain, once its first bytes came
 * (when http_l4_accept() left hc->l4_rbac_pending).
 * @return 0 to serve it, -EACCES to close it after *@p delay_ms (delay_deny).
 */
int http_l4_first_byte(struct http_conn *hc, uint32_t *delay_ms);
/** @p hc closes: what http_l4_accept() counted is released. */
void http_l4_close(struct http_conn *hc);

/*
 * The same network filters for any connection (tcp_proxy's too): @p r is
 * the terminal filter's runtime object (its l4stats), the caller keeps
 * *@p held (the connection_limit filters counting it: bit k for the
 * chain's k-th connection_limit filter) and
 * *@p rbac_pending between the calls.
 */
struct http_worker;
struct arn_rbac_input;
int http_l4_net_accept(struct http_worker *w, struct http_hcm_rt *r,
		       const struct arn_cfg_filter_chain *fc, uint8_t *held, bool *rbac_pending,
		       uint32_t *delay_ms);
/** The RBAC filters on the connection's first byte, with @p in (its
 * addresses, and the SNI a ClientHello gave); *@p hint (may be NULL) gets
 * the access_log_hint of a filter with action LOG (enum arn_access_hint).
 * @return 0, or -EACCES with the decision that denied in *@p denied (may
 * be NULL: its policy, for %CONNECTION_TERMINATION_DETAILS%). */
int http_l4_net_first_byte(struct http_worker *w, struct http_hcm_rt *r,
			   const struct arn_cfg_filter_chain *fc, const struct arn_rbac_input *in,
			   uint32_t *delay_ms, uint8_t *hint, struct arn_rbac_decision *denied);
void http_l4_net_close(struct http_worker *w, struct http_hcm_rt *r,
		       const struct arn_cfg_filter_chain *fc, uint8_t *held);

#endif
