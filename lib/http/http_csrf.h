/*
 * envoy.filters.http.csrf (Envoy's CsrfFilter::decodeHeaders): a request
 * that modifies (POST, PUT, DELETE, PATCH) must come from the origin it is
 * sent to: its source origin (the host and port of Origin, else of
 * Referer) must be the request's own (the host and port of its Host /
 * :authority) or match one of additional_origins, else it is answered 403
 * "Invalid origin" (details csrf_origin_mismatch). The policy is the most
 * specific level's CsrfPolicy, else the filter's; filter_enabled decides
 * enforcement, shadow_enabled counting without it. docs/http.md.
 *
 * Nothing is held past the call: the origins are slices of the request's
 * head (a repeated Origin or Referer is joined with ',' on the stack, as
 * Envoy's header map joins an inline header's values).
 */
#ifndef ARN_HTTP_CSRF_H
#define ARN_HTTP_CSRF_H

#include <stdbool.h>
#include <stddef.h>

struct arn_cfg_csrf;
struct arn_cfg_route_match;
struct http_stream;

/**
 * The filter at index @p i of the stream's connection manager, config
 * @p f (owned by the pinned listener), on @p st's request (route @p mt,
 * NULL if none matched). @return true when it answered (403).
 */
bool http_csrf_step(struct http_stream *st, size_t i, const struct arn_cfg_csrf *f,
		    const struct arn_cfg_route_match *mt);

/**
 * Envoy's hostAndPort of a header value @p v (@p n bytes): when it parses
 * as an absolute URL (a scheme of letters, "://", an authority), its host
 * and port as written (userinfo dropped; an IPv6 literal from after its
 * '['); else the value itself. *@p out_len is the result's length.
 */
const char *http_csrf_host_and_port(const char *v, size_t n, size_t *out_len);

#endif
