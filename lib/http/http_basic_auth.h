/*
 * envoy.filters.http.basic_auth (Envoy's BasicAuthFilter::decodeHeaders):
 * the request's credential ("Basic " base64(name:password) in
 * Authorization, or authentication_header) checked against the htpasswd
 * users of the route's or virtual host's BasicAuthPerRoute, else the
 * filter's; a failure answers 401 with www-authenticate Basic and the
 * realm jwt_authn gives (http_www_authenticate). docs/http.md.
 *
 * Nothing is held past the call: the credential is decoded in pieces on
 * the stack (a password of any length is hashed as it is decoded), the
 * forwarded user name goes into the stream's text.
 */
#ifndef ARN_HTTP_BASIC_AUTH_H
#define ARN_HTTP_BASIC_AUTH_H

#include <stdbool.h>
#include <stddef.h>

struct arn_cfg_basic_auth;
struct arn_cfg_route_match;
struct http_stream;

/**
 * The filter at index @p i of the stream's connection manager, config
 * @p f (owned by the pinned listener), on @p st's request (route @p mt,
 * NULL if none matched). @return true when it answered (a 401, or a 500
 * when the user name could not be kept for the upstream request).
 */
bool http_basic_auth_step(struct http_stream *st, size_t i, const struct arn_cfg_basic_auth *f,
			  const struct arn_cfg_route_match *mt);

#endif
