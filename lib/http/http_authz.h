/*
 * envoy.filters.http.ext_authz with an HTTP authorization service (Envoy's
 * ExtAuthz filter and its RawHttpClientImpl): the request's head is sent,
 * without its body, as a sub-request (http_subreq.h) to the service's
 * cluster, and the client's request waits (its body unread) until the
 * answer. 200 lets it on (the HCM's filter walk and the router go on,
 * http_hcm_resume_head), any other status answers the client with the
 * service's status, body and allowed headers, a failure answers
 * status_on_error unless failure_mode_allow. docs/http.md.
 *
 * Ownership: a check's context (struct http_authz) comes from its
 * worker's pool (HTTP_AUTHZ_N) and stays with the stream (st->authz)
 * until the stream ends (http_authz_stream_end): it holds the copies of
 * the service's headers that the upstream request and the response take.
 */
#ifndef ARN_HTTP_AUTHZ_H
#define ARN_HTTP_AUTHZ_H

#include <stdbool.h>
#include <stddef.h>

struct arn_cfg_ext_authz;
struct arn_cfg_route_match;
struct arn_h1_edit;
struct http_stream;
struct http_worker;

/* Checks in flight (or streams holding what one left) per worker: past
 * it, a check fails (failure_mode_allow lets the request on, without the
 * failure header), counted in ext_authz.error and .overflow. */
#define HTTP_AUTHZ_N 256
/* What a check may hold, in bytes: the check's path (path_prefix and the
 * request's path) and the copies of the service's headers and, on a
 * denial, its body. More fails the check (.overflow). */
#define HTTP_AUTHZ_BUF 8192
/* Headers taken from the service's answer, per direction (upstream
 * request, client response). More fails the check (.overflow). */
#define HTTP_AUTHZ_EDITS 16

/* A gRPC check (grpc_service) holds one of its worker's large scratch
 * buffers (HTTP_BIG_SCRATCH) while it runs: the CheckRequest (its
 * request's headers and, with with_request_body, body) in the first
 * HTTP_AUTHZ_GRPC_REQ bytes, the answer's gRPC message in the next
 * HTTP_AUTHZ_GRPC_ANS. More of either fails the check (.overflow), as
 * does no free buffer. */
#define HTTP_AUTHZ_GRPC_REQ (48u * 1024)
#define HTTP_AUTHZ_GRPC_ANS (16u * 1024)

/** The worker's pool (worker init, before it runs). @return 0 or -ENOMEM. */
int http_authz_worker_init(struct http_worker *w);
void http_authz_worker_fini(struct http_worker *w);
/** Contexts taken from @p w's pool (tests: none after every stream ended). */
unsigned http_authz_in_use(const struct http_worker *w);

/**
 * The filter at index @p i of the stream's connection manager, config
 * @p f, on the request of @p st (route @p mt, NULL if none matched).
 * @return true when it took the stream: a check is under way (the walk
 * goes on from http_authz_resume_at once it allows), or it answered.
 */
bool http_authz_step(struct http_stream *st, size_t i, const struct arn_cfg_ext_authz *f,
		     const struct arn_cfg_route_match *mt);
/** The filter index the HCM's walk goes on from once @p st's check
 * allowed (0 without a check). */
size_t http_authz_resume_at(const struct http_stream *st);
/** The edits the allowed check makes on the upstream request, into @p e
 * (at most @p cap). @return how many, or -ENOSPC. */
int http_authz_req_edits(struct http_stream *st, struct arn_h1_edit *e, unsigned cap);
/** The edits it makes on the response (allowed_client_headers_on_success). */
int http_authz_resp_edits(struct http_stream *st, struct arn_h1_edit *e, unsigned cap);
/** with_request_body: a body slice of @p st, whose check waits for its
 * body (http_authz_step took the stream with HTTP_S_MCP). @return true to
 * go on reading. */
bool http_authz_body(struct http_stream *st, const char *data, size_t len);
/** The request of @p st ended while its check waited for the body. */
void http_authz_body_end(struct http_stream *st);
/** The stream ends: a check in flight is cancelled, the context goes back. */
void http_authz_stream_end(struct http_stream *st);

#endif
