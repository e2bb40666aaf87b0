/*
 * Request mirroring (RouteAction.request_mirror_policies, Envoy's shadow
 * policies): a copy of a routed request goes to each mirror cluster,
 * fire and forget. Its answer is discarded; its failure, slowness or
 * refusal never reaches the client's request.
 *
 * A shadow is a sub-request (http_subreq.h) in a slot of the worker's
 * own (HTTP_SHADOW_MAX of them), which holds its copy of the request:
 * the head as the router sends it upstream (its edits applied, the path
 * rewritten), with "-shadow" added to its Host (before the port, as
 * Envoy's shadow writer does), and the body, at most HTTP_SHADOW_BODY
 * bytes (Envoy buffers a shadowed request up to its buffer limit and
 * gives the shadow up past it, counting retry_or_shadow_abandoned). A
 * slot is taken when the request is routed ("pending": its copy fills
 * as the request goes upstream) and the shadow starts once the request
 * is whole (Envoy shadows at the request's end); from then on it lives
 * alone, bounded by its own timeout (the route's), and does not need
 * the client's stream. A pending shadow goes when its stream ends first.
 *
 * Everything here runs on the stream's worker.
 */
#ifndef ARN_HTTP_SHADOW_H
#define ARN_HTTP_SHADOW_H

#include <stddef.h>
#include <stdint.h>

struct arn_h1_edit;
struct arn_h1_msg;
struct http_stream;
struct http_worker;

/* shadows in flight or pending per worker: a full worker counts
 * shadow_overflow and sends none */
#define HTTP_SHADOW_MAX 16
/* a shadow's copy of the head as sent (the request line and fields) */
#define HTTP_SHADOW_HEAD 16384
/* and of the body: a larger one gives the shadow up */
#define HTTP_SHADOW_BODY 65536
/* its timeout when the route has none (0): a slot is never held for ever */
#define HTTP_SHADOW_TIMEOUT_MS 15000

/** Stream @p st was routed to a cluster by a route with mirror
 * policies: take a slot for each shadow its runtime_fraction draws. */
void http_shadow_route(struct http_stream *st);
/** @p st's head goes upstream as @p m with @p n edits @p e and path
 * @p path (@p plen bytes): its pending shadows copy it. */
void http_shadow_head(struct http_stream *st, const struct arn_h1_msg *m, const char *path,
		      uint32_t plen, const struct arn_h1_edit *e, int n);
/** @p n body bytes of @p st: its pending shadows copy them. */
void http_shadow_body(struct http_stream *st, const char *p, size_t n);
/** @p st's request is whole: its pending shadows that have their head go. */
void http_shadow_end(struct http_stream *st);
/** @p st ends: its shadows not started yet go (their slots come back). */
void http_shadow_drop(struct http_stream *st);

/** The worker's slots. @return 0 or -ENOMEM. */
int http_shadow_worker_init(struct http_worker *w);
/** The worker stops: its shadows in flight are cancelled. */
void http_shadow_shutdown(struct http_worker *w);
void http_shadow_worker_fini(struct http_worker *w);
/** The worker's free slots (what a test reads). */
unsigned http_shadow_free_count(const struct http_worker *w);

#endif
