/*
 * Answers given by the proxy itself (local replies) and Envoy's health
 * check filter.
 */
#ifndef ARN_HTTP_LOCAL_H
#define ARN_HTTP_LOCAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arn_h1.h"

struct http_conn;
struct http_stream;
struct arn_cfg_gen;
struct arn_cfg_request;

/** Answer @p st with @p status (body @p body, flags, details for
 * the access log, @p extra edits); too late once the response started: the
 * stream is reset instead. */
void http_local_reply(struct http_stream *st, unsigned status, const char *body, size_t blen,
		      uint32_t flags, const char *details, const struct arn_h1_edit *extra,
		      unsigned n_extra);
/** The same with the route's response_headers_to_add (and @p location). */
void http_local_reply_route(struct http_stream *st, unsigned status, const char *body, size_t blen,
			    uint32_t flags, const char *details, const char *location,
			    size_t loclen);
/** Envoy's "upstream connect error or disconnect/reset before headers". */
void http_reset_reply(struct http_stream *st, unsigned status, const char *reason, uint32_t flags,
		      const char *details);

/** While health checks fail: the connection closes after this response. */
void http_hc_drain(struct http_conn *hc);
/** x-envoy-immediate-health-check-fail into @p e when it is due. */
bool http_hc_fail_header(const struct http_stream *st, struct arn_h1_edit *e);
/** Pass-through with cache_time: remember the upstream's answer. */
void http_hc_cache_set(struct http_stream *st, unsigned status);
/** The health check filter. @return true when it answered the request. */
bool http_hc_filter(struct http_stream *st, const struct arn_cfg_gen *g,
		    const struct arn_cfg_request *req);

#endif
