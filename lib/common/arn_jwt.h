/*
 * JSON Web Tokens (RFC 7519) and key sets (RFC 7517) as Envoy's
 * jwt_authn filter verifies them (its source/common/jwt: the same checks,
 * in the same order, with the same status strings). OpenSSL does every
 * cryptographic step; json-c parses the JOSE header, the payload and the
 * JWKS.
 *
 * Threads: a key set (struct arn_jwks) is built on the control lcore
 * (arn_jwks_parse) and read by any number of workers at once (verifying
 * takes the EVP_PKEYs read-only); it is freed when no worker can hold
 * it (the configuration generation that owns it is freed). A token
 * (struct arn_jwt) is one caller's, on its stack.
 *
 * Memory: parsing a token allocates json-c's objects for its header and
 * payload (a few hundred bytes per claim, at most ARN_JWT_MAX_TOKEN
 * bytes of input, ARN_JWT_MAX_DEPTH levels), and verifying allocates
 * OpenSSL's digest context: both freed before the call returns or by
 * arn_jwt_release(). Everything here is hostile input: the token from a
 * client, the JWKS from the control plane.
 */
#ifndef ARN_JWT_H
#define ARN_JWT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Limits (docs/security.md). A longer token is refused unread
 * (ARN_JWT_BAD_FORMAT): the client's request head bounds it already
 * (Envoy's 60 KiB header block), this bounds the decode buffers. */
#define ARN_JWT_MAX_TOKEN 8192
/* Nesting of the header, payload and JWKS JSON (json-c's tokener depth) */
#define ARN_JWT_MAX_DEPTH 16
/* Audiences read from a token's aud list (more: ARN_JWT_AUD_NOT_STRING) */
#define ARN_JWT_MAX_AUD 16
/* Keys in one JWKS, and its size */
#define ARN_JWKS_MAX_KEYS 64
#define ARN_JWKS_MAX_BYTES (256u * 1024u)
/* RSA moduli in a JWKS (a larger key is skipped: its verifications cost) */
#define ARN_JWKS_MAX_RSA_BITS 8192

/* Envoy's Status (source/common/jwt/status.h), those Arion can return. */
enum arn_jwt_status {
	ARN_JWT_OK = 0,
	ARN_JWT_MISSED,
	ARN_JWT_NOT_YET_VALID,
	ARN_JWT_EXPIRED,
	ARN_JWT_BAD_FORMAT,
	ARN_JWT_HEADER_BAD_BASE64,
	ARN_JWT_HEADER_BAD_JSON,
	ARN_JWT_HEADER_BAD_ALG,
	ARN_JWT_HEADER_NOT_IMPLEMENTED_ALG,
	ARN_JWT_HEADER_BAD_KID,
	ARN_JWT_PAYLOAD_BAD_BASE64,
	ARN_JWT_ED25519_SIG_WRONG_LENGTH,
	ARN_JWT_PAYLOAD_BAD_JSON,
	ARN_JWT_ISS_NOT_STRING,
	ARN_JWT_SUB_NOT_STRING,
	ARN_JWT_IAT_NOT_INTEGER,
	ARN_JWT_IAT_OUT_OF_RANGE,
	ARN_JWT_NBF_NOT_INTEGER,
	ARN_JWT_NBF_OUT_OF_RANGE,
	ARN_JWT_EXP_NOT_INTEGER,
	ARN_JWT_EXP_OUT_OF_RANGE,
	ARN_JWT_JTI_NOT_STRING,
	ARN_JWT_AUD_NOT_STRING,
	ARN_JWT_SIG_BAD_BASE64,
	ARN_JWT_UNKNOWN_ISSUER,
	ARN_JWT_AUDIENCE_NOT_ALLOWED,
	ARN_JWT_VERIFICATION_FAIL,
	ARN_JWT_MULTIPLE_TOKENS,
	ARN_JWKS_KID_ALG_MISMATCH,
	ARN_JWKS_NO_VALID_KEYS,
	ARN_JWKS_FETCH_FAIL, /* remote_jwks: the keys could not be fetched */
	ARN_JWT__COUNT
};

/** Envoy's text for @p s (getStatusString): static. */
const char *arn_jwt_status_str(enum arn_jwt_status s);

enum arn_jwt_alg {
	ARN_JWT_RS256 = 0,
	ARN_JWT_RS384,
	ARN_JWT_RS512,
	ARN_JWT_PS256,
	ARN_JWT_PS384,
	ARN_JWT_PS512,
	ARN_JWT_ES256,
	ARN_JWT_ES384,
	ARN_JWT_ES512,
	ARN_JWT_EDDSA,
	ARN_JWT_HS256,
	ARN_JWT_HS384,
	ARN_JWT_HS512,
	ARN_JWT__ALGS
};

/**
 * Strict base64url (RFC 4648 5) without padding: '=' , characters outside
 * the alphabet, a length of 1 mod 4 and nonzero unused bits in the last
 * character are refused (one encoding per byte string).
 * @return the decoded length (at most @p cap), or -1.
 */
long arn_b64url_decode(const char *s, size_t len, unsigned char *out, size_t cap);
/**
 * Strict base64 (RFC 4648 4, '+' and '/') without padding, as
 * arn_b64url_decode (the caller strips '='): what Envoy's
 * Base64::decodeWithoutPadding accepts once it dropped the padding.
 * @return the decoded length (at most @p cap), or -1.
 */
long arn_b64_decode(const char *s, size_t len, unsigned char *out, size_t cap);

struct json_object;
struct arn_jwks;

/** A parsed token: views into the caller's token text, decoded copies. */
struct arn_jwt {
	const char *text;	 /* the token (not owned) */
	size_t signed_len;	 /* header "." payload: the bytes signed */
	const char *payload_b64; /* within text */
	size_t payload_b64_len;
	enum arn_jwt_alg alg;
	const char *kid; /* in hdr (json-c's), NULL: none */
	size_t kid_len;
	const char *iss, *sub; /* in payload; NULL: none */
	size_t iss_len, sub_len;
	uint64_t iat, nbf, exp; /* 0: absent */
	const char *aud[ARN_JWT_MAX_AUD];
	size_t aud_len[ARN_JWT_MAX_AUD];
	unsigned n_aud;
	struct json_object *hdr, *payload; /* owned: arn_jwt_release */
	size_t sig_len;
	unsigned char sig[ARN_JWT_MAX_TOKEN * 3 / 4];
};

/**
 * Parse @p len bytes of @p text into @p j (Envoy's Jwt::parseFromString):
 * three base64url sections, the header's alg (one of enum arn_jwt_alg:
 * "none" is not) and kid, the payload's registered claims.
 * @return ARN_JWT_OK, or why not; arn_jwt_release(@p j) either way.
 */
enum arn_jwt_status arn_jwt_parse(struct arn_jwt *j, const char *text, size_t len);
/** Free what arn_jwt_parse allocated (idempotent). */
void arn_jwt_release(struct arn_jwt *j);

/**
 * nbf and exp against @p now (Unix seconds), each with @p skew seconds of
 * slack (Envoy's verifyTimeConstraint); @p require_exp: a token without
 * exp is refused as expired.
 */
enum arn_jwt_status arn_jwt_check_time(const struct arn_jwt *j, uint64_t now, uint64_t skew,
				       bool require_exp);

/**
 * Does one of the token's audiences match one of @p n @p auds (Envoy's
 * CheckAudience: compared without an http:// or https:// scheme and a
 * trailing '/')? @p n == 0 allows any token.
 */
bool arn_jwt_aud_allowed(const struct arn_jwt *j, const char *const *auds, size_t n);

/**
 * The signature against @p ks (Envoy's verifyJwtWithoutTimeChecking):
 * each key whose kid matches the token's (a key without a kid matches
 * any) and whose alg, when it has one, is the token's, of a type that
 * fits the token's alg (RSA for RS / PS, EC of the alg's curve for ES,
 * Ed25519 for EdDSA, oct for HS), is tried until one verifies.
 * @p budget (NULL: no limit) is how many keys may still be tried, less
 * one for each tried; at 0 the search stops (the caller sees it spent).
 * @return ARN_JWT_OK, ARN_JWT_VERIFICATION_FAIL (keys were tried, or the
 *   budget ran out), ARN_JWKS_KID_ALG_MISMATCH (none matched) or
 *   ARN_JWT_ED25519_SIG_WRONG_LENGTH.
 */
enum arn_jwt_status arn_jwt_verify_sig(const struct arn_jwt *j, const struct arn_jwks *ks,
				       unsigned *budget);

/**
 * A claim of the payload as a header value into @p buf (@p cap bytes):
 * a string as it is, a number (integral: decimal, else %.17g) or a
 * boolean ("true" / "false"); nested paths "a.b" walk objects. A value
 * with CR, LF or NUL, or that does not fit, is not given.
 * @return its length, 0 when absent or of another type, -1 refused.
 */
long arn_jwt_claim(const struct arn_jwt *j, const char *name, char *buf, size_t cap);

/**
 * Build a key set from a JWKS document (@p len bytes of JSON: an object
 * with a "keys" array). Keys Envoy skips are skipped (unknown kty, a
 * malformed key, an alg that does not fit the kty); more than
 * ARN_JWKS_MAX_KEYS keys, or none usable, refuse the set.
 * @return a malloc'd set, or NULL with the reason in @p err.
 */
struct arn_jwks *arn_jwks_parse(const char *json, size_t len, char *err, size_t errlen);
/** Keys in @p ks. */
size_t arn_jwks_count(const struct arn_jwks *ks);
/** Free @p ks (NULL is a no-op); the oct secrets are cleansed. */
void arn_jwks_free(struct arn_jwks *ks);
/** Parse @p s as an alg name. @return the alg, or -1. */
int arn_jwt_alg_from_name(const char *s, size_t len);

#endif
