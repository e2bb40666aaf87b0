/*
 * envoy.filters.http.oauth2 (Envoy's OAuth2Filter, 1.31/1.32: the
 * url=&nonce= state): a request without valid cookies is sent to the
 * authorization endpoint (302, a nonce cookie); the callback path's code
 * is exchanged for tokens by a POST to the token endpoint (a sub-request,
 * http_subreq.h), whose JSON answer becomes the BearerToken, IdToken,
 * RefreshToken, OauthHMAC and OauthExpires cookies of a 302 back to the
 * original URL; later requests pass when the HMAC of their cookies is
 * right and OauthExpires is ahead. docs/http.md.
 *
 * Ownership: a callback's exchange holds a context from its worker's
 * pool (HTTP_OAUTH2_N) and one of the worker's large scratch buffers
 * (the answer, the request's body, the reply) until it answers or the
 * stream ends (http_oauth2_stream_end cancels it).
 */
#ifndef ARN_HTTP_OAUTH2_H
#define ARN_HTTP_OAUTH2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct arn_cfg_oauth2;
struct arn_cfg_request;
struct arn_cfg_route_match;
struct http_stream;
struct http_worker;

/* Exchanges in flight per worker; past it a callback answers 401 (counted
 * in oauth_failure and oauth2_overflow). */
#define HTTP_OAUTH2_N 64
/* Bytes of the token endpoint's answer; more fails the callback (401). */
#define HTTP_OAUTH2_ANSWER_MAX (16u * 1024)
/* Bytes of one token (access, id, refresh) taken from it into a cookie. */
#define HTTP_OAUTH2_TOKEN_MAX 4096u
/* Nesting of the answer's JSON the parser walks through. */
#define HTTP_OAUTH2_JSON_DEPTH 16

int http_oauth2_worker_init(struct http_worker *w);
void http_oauth2_worker_fini(struct http_worker *w);
/** Contexts taken from @p w's pool (tests: none after every stream ended). */
unsigned http_oauth2_in_use(const struct http_worker *w);

/**
 * The filter at index @p i, config @p f (the pinned listener's), on @p st's
 * request (@p req, route @p mt or NULL). @return true when it took the
 * stream: a reply was sent, or the token exchange runs (it answers).
 */
bool http_oauth2_step(struct http_stream *st, size_t i, const struct arn_cfg_oauth2 *f,
		      const struct arn_cfg_route_match *mt, const struct arn_cfg_request *req);

/** The stream ends: an exchange in flight is cancelled. */
void http_oauth2_stream_end(struct http_stream *st);

/* The token endpoint's answer, as Envoy reads its OAuthResponse: slices
 * of the decoded strings in the caller's buffer. */
struct http_oauth2_answer {
	const char *access, *id, *refresh;
	uint32_t access_len, id_len, refresh_len;
	bool has_access, has_expires;
	uint64_t expires_in;
};

/**
 * Parse @p len bytes of JSON (an object; strings decoded into @p buf of
 * @p cap bytes; unknown members skipped, nesting at most
 * HTTP_OAUTH2_JSON_DEPTH). @return 0, or -EINVAL (not JSON, not an
 * object, a member of the wrong type), -ENOSPC (@p buf too small).
 */
int http_oauth2_parse_answer(const char *s, size_t len, char *buf, size_t cap,
			     struct http_oauth2_answer *out);

/**
 * Envoy's validateOAuthCallback on the path's query @p q (after '?'):
 * no "error", a "code" and a "state" whose decoded url (an http(s) URL)
 * and nonce are written into @p buf (@p cap bytes). @return 0, or -EINVAL.
 */
int http_oauth2_parse_callback(const char *q, size_t qlen, char *buf, size_t cap, const char **code,
			       size_t *code_len, const char **url, size_t *url_len,
			       const char **nonce, size_t *nonce_len);

/** The value of cookie @p name in the Cookie header values of @p st's
 * request (Envoy's parseCookies: the first, quotes stripped), or NULL. */
const char *http_oauth2_cookie(const struct http_stream *st, const char *name, size_t nlen,
			       size_t *vlen);

/** The same in one Cookie header value @p v (@p n bytes), or NULL. */
const char *http_oauth2_cookie_in(const char *v, size_t n, const char *name, size_t nlen,
				  size_t *vlen);

/** An id token's "exp" (a JWT's payload, base64url, a JSON object whose
 * exp is a non-negative integer), or 0 when it has none. */
uint64_t http_oauth2_jwt_exp(const char *t, size_t n);

/** Envoy's encodeHmacBase64 of (host, expires, token, id, refresh) with
 * @p key into @p out (45 bytes, NUL-terminated). */
void http_oauth2_hmac(const uint8_t *key, size_t klen, const char *const *parts, const size_t *lens,
		      char out[45]);

#endif
