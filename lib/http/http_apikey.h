/*
 * envoy.filters.http.api_key_auth (Envoy's ApiKeyAuthFilter::decodeHeaders)
 * and envoy.filters.http.credential_injector (CredentialInjectorFilter with
 * the generic credential), steps of l4_filters_run. docs/http.md.
 *
 * Nothing is held past the call: a query key is decoded on the stack, the
 * edits (the client id, the credential, the removed key) go into the
 * stream's kept request edits (http_req_kept.h), their values the
 * configuration's or the stream's text.
 */
#ifndef ARN_HTTP_APIKEY_H
#define ARN_HTTP_APIKEY_H

#include <stdbool.h>
#include <stddef.h>

struct arn_cfg_api_key_auth;
struct arn_cfg_cred_injector;
struct arn_cfg_gen;
struct arn_cfg_route_match;
struct http_stream;

/**
 * The api_key_auth filter at index @p i of the stream's connection
 * manager, config @p f (owned by the pinned listener), on @p st's request
 * (route @p mt, NULL if none matched). @return true when it answered (a
 * 401 or 403, or a 500 when an edit could not be kept).
 */
bool http_api_key_step(struct http_stream *st, size_t i, const struct arn_cfg_api_key_auth *f,
		       const struct arn_cfg_route_match *mt);

/**
 * The credential_injector filter at index @p i, config @p f, its secret
 * looked up in the request's configuration generation @p g (pinned by the
 * caller). @return true when it answered (401 failed_to_inject_credential,
 * or a 500 when the edit could not be kept).
 */
bool http_cred_inject_step(struct http_stream *st, size_t i, const struct arn_cfg_cred_injector *f,
			   const struct arn_cfg_gen *g);

#endif
