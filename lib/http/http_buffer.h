/*
 * envoy.filters.http.buffer (Envoy's BufferFilter): the request's body is
 * read whole, max_request_bytes at most, before the request goes on to
 * the filters after it and the upstream. A body past the bound is
 * answered 413 (Envoy's decoder buffer limit: "Payload Too Large",
 * request_payload_too_large), at once when its content-length says so.
 * Once whole, a request without a content-length gets the length of its
 * body (Envoy's maybeAddContentLength), and goes upstream framed by it
 * alone (http_rb_frame_kept). docs/http.md.
 *
 * The body is kept in the stream's kept body (http_rb.h: the mbufs the
 * router's retries and ext_authz's with_request_body keep, one copy),
 * bounded by the worker's HTTP_RB_WORKER_SEGS; the router sends it first
 * (http_rb_send_first).
 */
#ifndef ARN_HTTP_BUFFER_H
#define ARN_HTTP_BUFFER_H

#include <stdbool.h>
#include <stddef.h>

struct arn_cfg_buffer;
struct arn_cfg_route_match;
struct http_stream;

/**
 * The filter at index @p i of the stream's connection manager, config
 * @p f (owned by the pinned listener), on @p st's request (route @p mt,
 * NULL if none matched). @return true when it answered (413) or holds
 * the head while it reads the body (HTTP_S_MCP).
 */
bool http_buffer_step(struct http_stream *st, size_t i, const struct arn_cfg_buffer *f,
		      const struct arn_cfg_route_match *mt);

/** Is the filter reading @p st's body (http_buffer_body takes it)? */
static inline bool http_buffer_reading(const struct http_stream *st);

/** A piece of the body the filter reads. @return true for more (false:
 * it answered). */
bool http_buffer_body(struct http_stream *st, const char *data, size_t len);

/** The body is whole: the request goes on (framed by its length). */
void http_buffer_body_end(struct http_stream *st);

/** The filter after which the head's walk resumes, or 0. */
size_t http_buffer_resume_at(const struct http_stream *st);

/** The stream ends: its state goes. */
void http_buffer_stream_end(struct http_stream *st);

#include "http_stream.h"

static inline bool http_buffer_reading(const struct http_stream *st)
{
	return st->res && st->res->buf_reading;
}

#endif
