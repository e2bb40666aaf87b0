/*
 * Envoy's router filter for one stream: the route a request takes, the
 * cluster and its load balancer, the attempts made against its endpoints
 * and their retries, and what an attempt's end means for the request.
 *
 * The connection manager (http_hcm.c) calls it; it answers through local
 * replies (http_local.h), reaches upstream connections through
 * http_upstream.h (which tell it what happens through the ops it gives
 * them) and the stream's connection through its ops (http_stream.h).
 */
#ifndef ARN_HTTP_ROUTER_FILTER_H
#define ARN_HTTP_ROUTER_FILTER_H

#include "http_rb.h" /* http_rb_free, ... (the body kept) */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http_host_rq.h"
#include "http_stream.h"

struct http_res;
struct http_stream;
struct http_timer;
struct arn_cfg_gen;
struct arn_cfg_request;
struct arn_cfg_route_table;


/**
 * The request's head is in and the filters before the router let it
 * through: match a route of @p rt (of generation @p g) for @p req and act
 * on it (404, a redirect, a direct response, or the cluster and its first
 * attempt). The stream is answered or has an attempt under way on return.
 */
void http_route(struct http_stream *st, const struct arn_cfg_gen *g,
		const struct arn_cfg_route_table *rt, const struct arn_cfg_request *req);
/** http_req_sanitize on the stream's request head, for its connection
 * (its peer, whether its client presented a certificate): on_head, before
 * any filter, route or log reads the head. Out of line: only a head with
 * ARN_H1_F_PROXY_FIELDS comes here. */
void http_route_sanitize(struct http_stream *st);
bool http_attempt_send_(struct http_stream *st);
/**
 * The attempt's request goes on, once its upstream connection took what
 * was queued: a retry's kept body first, then (the whole request out) the
 * route's and the per-try timers start. @return true when it queued a
 * piece: the caller flushes it and calls again. Asked before every event
 * of the request: what has nothing left to do is answered here.
 */
static inline bool http_attempt_send(struct http_stream *st)
{
	uint32_t s = st->state;
	if (!st->up || !(s & (HTTP_S_REPLAYING | HTTP_S_REQ_DONE)))
		return false;
	if (!(s & HTTP_S_REPLAYING) && ((s & HTTP_S_ATTEMPT_SENT) || !(s & HTTP_S_HEAD_SENT)) &&
	    (!st->timeout_ms || (s & (HTTP_S_RESP_DONE | HTTP_S_ROUTE_TIMER))))
		return false;
	return http_attempt_send_(st);
}
/** The route's timeout, started out of line (http_route_timer_due). */
void http_route_timer_start(struct http_stream *st);
/**
 * The route's timeout counts from the whole request in (docs/http.md, as
 * Envoy's global timeout), whatever its attempt waits for: a place in its
 * pool's queue (max_connections), its connection, or an upstream that
 * takes none of the request's bytes. http_attempt_send starts it only once
 * the request went out: without this, such a request waited for
 * stream_idle_timeout. Asked where the request direction stops.
 */
static inline void http_route_timer_due(struct http_stream *st)
{
	uint32_t s = st->state;
	/* (END_HELD with a body-rewriting filter is its HTTP_S_REQ_MORE: the
	 * request is still going out) */
	if (st->timeout_ms && ((s & HTTP_S_REQ_DONE) || ((s & HTTP_S_END_HELD) && !st->req_xf)) &&
	    !(s & (HTTP_S_ROUTE_TIMER | HTTP_S_RESP_DONE | HTTP_S_LOCAL | HTTP_S_TUNNEL)) &&
	    (st->up || (s & HTTP_S_PENDING)))
		http_route_timer_start(st);
}
/* http_xreq_init, the router's per-request state readied: http_stream.h. */
/** Keep @p n body bytes for a later attempt. @return false when the
 * bounds say no more (then http_rb_abandon). */
bool http_rb_append(struct http_stream *st, const char *p, size_t n);
/** The body outgrew what may be kept: no retry for this request. */
void http_rb_abandon(struct http_stream *st);
/**
 * An attempt ended in a way its retry policy may retry (@p would). @return
 * true when a retry is scheduled (the caller stops there); false when the
 * caller gives the final answer (flagged URX / UO when retries ran out or
 * the breaker refused one).
 */
bool http_maybe_retry(struct http_stream *st, bool would, int outcome);
/** The attempt's upstream went away (closed, reset, broke the protocol)
 * before the response was complete: retry, answer 503, or reset. */
void http_upstream_lost(struct http_stream *st, bool reset);
/** The route's timeout (the stream's route_timer). */
void http_route_timeout(struct http_timer *t);

#endif
