/*
 * Answers the proxy gives itself: local replies (Envoy's sendLocalReply)
 * and Envoy's health check filter, with the draining that failed health
 * checks bring (every response closes its connection).
 *
 * A local reply goes through the client's codec (encode_reply) and ends
 * the stream's response: it drops the stream's upstream connection (or its
 * place in a pool's queue), stops its request timers, and asks the
 * connection for another run (hc->again). Once the response has started
 * it is too late for one: the stream's connection is reset instead.
 */
#ifndef ARN_HTTP_LOCAL_H
#define ARN_HTTP_LOCAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arn_h1.h"
#include "http_drain.h"
#include "http_stream.h"

struct http_conn;
struct http_stream;
struct arn_cfg_gen;
struct arn_cfg_request;

/**
 * Answer @p st with @p status and @p body (@p blen bytes, may be NULL),
 * response flags @p flags and Envoy's response code @p details for the
 * access log, and @p n_extra more headers @p extra (kept by the caller
 * until the call returns).
 */
/** The gRPC status for HTTP status @p http (Envoy's httpToGrpcStatus). */
unsigned http_grpc_status(unsigned http);

void http_local_reply(struct http_stream *st, unsigned status, const char *body, size_t blen,
		      uint32_t flags, const char *details, const struct arn_h1_edit *extra,
		      unsigned n_extra);
/** The same, as Envoy's sendDirectLocalReply: no custom_response policy is
 * asked (http_cresp.c's own replies, which must not match again). */
void http_local_reply_direct(struct http_stream *st, unsigned status, const char *body, size_t blen,
			     uint32_t flags, const char *details, const struct arn_h1_edit *extra,
			     unsigned n_extra);
/** The same with the route's response_headers_to_add and a Location
 * (@p location may be NULL); a 500 instead when those do not fit. */
void http_local_reply_route(struct http_stream *st, unsigned status, const char *body, size_t blen,
			    uint32_t flags, const char *details, const char *location,
			    size_t loclen);
/**
 * The request's x-request-id as Envoy's mutateRequestHeaders gives it at
 * the head, before any filter runs (generate_request_id: the client's
 * own, kept; or one generated, over the client's at the edge without
 * preserve_external_request_id), put into @p st's head itself: every
 * view of the request a filter reads (ext_authz's check, ext_proc's
 * headers, Lua's headers(), the route and RBAC matchers, the access log)
 * then has the id the upstream gets, which the router sends as the
 * request's own (st->rid_head). The value lives in the stream's text.
 * Without generate_request_id, or once the stream has its id, nothing is
 * done; nor where the head has no line left for one (the router then
 * generates it as before).
 */
void http_request_id_head(struct http_stream *st);
/** Envoy's "upstream connect error or disconnect/reset before headers.
 * reset reason: @p reason", as a local reply with the route's headers. */
void http_reset_reply(struct http_stream *st, unsigned status, const char *reason, uint32_t flags,
		      const char *details);

/** http_hc_drain's part while health checks fail. */
void http_hc_drain_failed(struct http_conn *hc);
/** While health checks fail, or when its replaced listener's drain says
 * so (http_drain_close): @p hc closes after this response (counted once
 * per connection in downstream_cx_drain_close). Inline: asked at every
 * response, which nearly always goes on. */
static inline void http_hc_drain(struct http_conn *hc)
{
	/* a listener replaced by a newer generation drains its connections,
	 * gradually as Envoy's drain manager does (http_conn.c) */
	if (!hc->close_after && http_drain_close(hc))
		hc->close_after = true;
	if (http_healthcheck_failed())
		http_hc_drain_failed(hc);
}
/** While health checks fail, x-envoy-immediate-health-check-fail into
 * @p e for a response of @p st. @return true when it is due. */
bool http_hc_fail_header(const struct http_stream *st, struct arn_h1_edit *e);
/** Pass-through with cache_time: remember the upstream's @p status. */
void http_hc_cache_set(struct http_stream *st, unsigned status);
/** The health check filter on @p st's request @p req (generation @p g).
 * @return true when it answered the request (the router does not see it). */
bool http_hc_filter(struct http_stream *st, const struct arn_cfg_gen *g,
		    const struct arn_cfg_request *req);

#endif
