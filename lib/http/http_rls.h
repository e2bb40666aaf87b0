/*
 * envoy.filters.http.ratelimit (global rate limiting), as Envoy's
 * RateLimitFilter: the request's descriptors (the route's rate_limits of
 * the filter's stage and the virtual host's, or a RateLimitPerRoute's
 * rate_limits) go to the rate limit service in one unary gRPC call,
 * envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit, a
 * sub-request (http_subreq.h) over its cluster's HTTP/2; the request
 * waits (its head held) until the answer. OK lets it on with the
 * service's request_headers_to_add; OVER_LIMIT answers
 * rate_limited_status (429) with x-envoy-ratelimited; a failure lets it
 * on unless failure_mode_deny (then status_on_error, 500). No descriptor:
 * no call. docs/http.md.
 *
 * Ownership: a call's context (struct http_rls) comes from its worker's
 * pool (HTTP_RLS_N) and stays with the stream (st->rls) until the stream
 * ends (http_rls_stream_end): it holds the copies of the service's
 * headers the upstream request and the response take. While the call
 * runs it also holds one of the worker's large scratch buffers.
 */
#ifndef ARN_HTTP_RLS_H
#define ARN_HTTP_RLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct arn_cfg_rls;
struct arn_cfg_route_match;
struct arn_cfg_request;
struct arn_h1_edit;
struct http_stream;
struct http_worker;

/* Calls in flight (or streams holding what one left) per worker: past it
 * a call fails (counted in cluster.<c>.ratelimit.error). */
#define HTTP_RLS_N 256
/* What a context holds of an answer, in bytes: the service's headers,
 * the x-ratelimit-* values and, over the limit, raw_body. More fails the
 * call. */
#define HTTP_RLS_BUF 8192

/* A call's large scratch buffer (HTTP_BIG_SCRATCH): the RateLimitRequest
 * in the first HTTP_RLS_REQ bytes; each descriptor is built in the next
 * HTTP_RLS_DESC bytes (its values together: a longer one fails the call)
 * with header_value_match's joined values in the rest; the answer's gRPC
 * message then takes HTTP_RLS_ANS bytes after the request. */
#define HTTP_RLS_REQ (24u * 1024)
#define HTTP_RLS_DESC (16u * 1024)
#define HTTP_RLS_ANS (16u * 1024)

/** The worker's pool (worker init). @return 0 or -ENOMEM. */
int http_rls_worker_init(struct http_worker *w);
void http_rls_worker_fini(struct http_worker *w);
/** Contexts taken from @p w's pool (tests: none after every stream ended). */
unsigned http_rls_in_use(const struct http_worker *w);

/**
 * The filter at index @p i of the stream's connection manager, config
 * @p f, on the request of @p st (route @p mt, NULL if none matched;
 * @p req its description; @p client the trusted client address).
 * @return true when it took the stream: a call is under way (the walk
 * goes on from http_rls_resume_at once it allows), or it answered.
 */
bool http_rls_step(struct http_stream *st, size_t i, const struct arn_cfg_rls *f,
		   const struct arn_cfg_route_match *mt, const struct arn_cfg_request *req,
		   uint32_t client);
/** The filter index the HCM's walk goes on from once @p st's call let it
 * on (0 without a call). */
size_t http_rls_resume_at(const struct http_stream *st);
/** The edits an OK answer makes on the response (the service's
 * response_headers_to_add and x-ratelimit-*), into @p e (at most @p cap).
 * @return how many, or -ENOSPC. */
int http_rls_resp_edits(struct http_stream *st, struct arn_h1_edit *e, unsigned cap);
/** The stream ends: a call in flight is cancelled, the context goes back. */
void http_rls_stream_end(struct http_stream *st);

#endif
