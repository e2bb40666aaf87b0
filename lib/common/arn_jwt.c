/*
 * JWT and JWKS (arn_jwt.h): Envoy's source/common/jwt checks with
 * OpenSSL 3 and json-c.
 */
#include "arn_jwt.h"

#include <json-c/json.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const status_str[ARN_JWT__COUNT] = {
    [ARN_JWT_OK] = "OK",
    [ARN_JWT_MISSED] = "Jwt is missing",
    [ARN_JWT_NOT_YET_VALID] = "Jwt not yet valid",
    [ARN_JWT_EXPIRED] = "Jwt is expired",
    [ARN_JWT_BAD_FORMAT] =
	"Jwt is not in the form of Header.Payload.Signature with two dots and 3 sections",
    [ARN_JWT_HEADER_BAD_BASE64] = "Jwt header is an invalid Base64url encoded",
    [ARN_JWT_HEADER_BAD_JSON] = "Jwt header is an invalid JSON",
    [ARN_JWT_HEADER_BAD_ALG] = "Jwt header [alg] field is required and must be a string",
    [ARN_JWT_HEADER_NOT_IMPLEMENTED_ALG] = "Jwt header [alg] is not supported",
    [ARN_JWT_HEADER_BAD_KID] = "Jwt header [kid] field is not a string",
    [ARN_JWT_PAYLOAD_BAD_BASE64] = "Jwt payload is an invalid Base64url encoded",
    [ARN_JWT_ED25519_SIG_WRONG_LENGTH] = "Jwt ED25519 signature is wrong length",
    [ARN_JWT_PAYLOAD_BAD_JSON] = "Jwt payload is an invalid JSON",
    [ARN_JWT_ISS_NOT_STRING] = "Jwt payload [iss] field is not a string",
    [ARN_JWT_SUB_NOT_STRING] = "Jwt payload [sub] field is not a string",
    [ARN_JWT_IAT_NOT_INTEGER] = "Jwt payload [iat] field is not an integer",
    [ARN_JWT_IAT_OUT_OF_RANGE] = "Jwt payload [iat] field is not a positive 64 bit integer",
    [ARN_JWT_NBF_NOT_INTEGER] = "Jwt payload [nbf] field is not an integer",
    [ARN_JWT_NBF_OUT_OF_RANGE] = "Jwt payload [nbf] field is not a positive 64 bit integer",
    [ARN_JWT_EXP_NOT_INTEGER] = "Jwt payload [exp] field is not an integer",
    [ARN_JWT_EXP_OUT_OF_RANGE] = "Jwt payload [exp] field is not a positive 64 bit integer",
    [ARN_JWT_JTI_NOT_STRING] = "Jwt payload [jti] field is not a string",
    [ARN_JWT_AUD_NOT_STRING] = "Jwt payload [aud] field is not a string or string list",
    [ARN_JWT_SIG_BAD_BASE64] = "Jwt signature is an invalid Base64url encoded",
    [ARN_JWT_UNKNOWN_ISSUER] = "Jwt issuer is not configured",
    [ARN_JWT_AUDIENCE_NOT_ALLOWED] = "Audiences in Jwt are not allowed",
    [ARN_JWT_VERIFICATION_FAIL] = "Jwt verification fails",
    [ARN_JWT_MULTIPLE_TOKENS] = "Found multiple Jwt tokens",
    [ARN_JWKS_KID_ALG_MISMATCH] = "Jwks doesn't have key to match kid or alg from Jwt",
    [ARN_JWKS_NO_VALID_KEYS] = "Jwks doesn't have any valid public key",
    [ARN_JWKS_FETCH_FAIL] = "Jwks remote fetch is failed",
};

const char *arn_jwt_status_str(enum arn_jwt_status s)
{
	return (unsigned)s < ARN_JWT__COUNT && status_str[s] ? status_str[s] : "";
}

static const char *const alg_names[ARN_JWT__ALGS] = {
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256",
    "ES384", "ES512", "EdDSA", "HS256", "HS384", "HS512",
};

int arn_jwt_alg_from_name(const char *s, size_t len)
{
	for (int a = 0; a < ARN_JWT__ALGS; a++)
		if (strlen(alg_names[a]) == len && memcmp(alg_names[a], s, len) == 0)
			return a;
	return -1;
}

/* ---- base64url ------------------------------------------------------------------------ */

/* @p c's value in base64url (@p url) or base64, or -1 */
static int b64v(unsigned char c, bool url)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == (url ? '-' : '+'))
		return 62;
	if (c == (url ? '_' : '/'))
		return 63;
	return -1;
}

static long b64_decode(const char *s, size_t len, unsigned char *out, size_t cap, bool url)
{
	if (len % 4 == 1 || len / 4 * 3 + (len % 4 ? len % 4 - 1 : 0) > cap)
		return -1;
	size_t o = 0;
	uint32_t acc = 0;
	unsigned bits = 0;
	for (size_t i = 0; i < len; i++) {
		int v = b64v((unsigned char)s[i], url);
		if (v < 0)
			return -1;
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (unsigned char)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	/* the unused low bits of the last character must be zero: else two
	 * texts would decode to the same bytes */
	if (acc != 0)
		return -1;
	return (long)o;
}

long arn_b64url_decode(const char *s, size_t len, unsigned char *out, size_t cap)
{
	return b64_decode(s, len, out, cap, true);
}

long arn_b64_decode(const char *s, size_t len, unsigned char *out, size_t cap)
{
	return b64_decode(s, len, out, cap, false);
}

/* ---- key sets ------------------------------------------------------------------------- */

enum kty { KTY_RSA = 0, KTY_EC, KTY_OKP, KTY_OCT };

struct jwk {
	EVP_PKEY *pkey;	  /* RSA, EC, Ed25519 */
	unsigned char *k; /* oct: the secret (cleansed when freed) */
	size_t k_len;
	char *kid; /* NULL: none */
	size_t kid_len;
	int alg;	/* enum arn_jwt_alg, -1: any that fits the kty */
	uint8_t kty;	/* enum kty */
	uint8_t ec_alg; /* EC: the ES alg of its curve */
};

struct arn_jwks {
	size_t n;
	struct jwk keys[];
};

size_t arn_jwks_count(const struct arn_jwks *ks)
{
	return ks ? ks->n : 0;
}

void arn_jwks_free(struct arn_jwks *ks)
{
	if (!ks)
		return;
	for (size_t i = 0; i < ks->n; i++) {
		EVP_PKEY_free(ks->keys[i].pkey);
		if (ks->keys[i].k) {
			OPENSSL_cleanse(ks->keys[i].k, ks->keys[i].k_len);
			free(ks->keys[i].k);
		}
		free(ks->keys[i].kid);
	}
	free(ks);
}

/* A member string of @p o: NULL when absent or not a string. */
static const char *jstr(struct json_object *o, const char *name, size_t *len)
{
	struct json_object *v = NULL;
	if (!json_object_object_get_ex(o, name, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	*len = (size_t)json_object_get_string_len(v);
	return json_object_get_string(v);
}

/* A base64url member of at most @p cap bytes decoded. @return length or -1. */
static long jb64(struct json_object *o, const char *name, unsigned char *out, size_t cap)
{
	size_t l = 0;
	const char *s = jstr(o, name, &l);
	if (!s)
		return -1;
	return arn_b64url_decode(s, l, out, cap);
}

static EVP_PKEY *fromdata(const char *type, OSSL_PARAM_BLD *b)
{
	OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(b);
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, type, NULL);
	EVP_PKEY *pk = NULL;
	if (!params || !ctx || EVP_PKEY_fromdata_init(ctx) != 1 ||
	    EVP_PKEY_fromdata(ctx, &pk, EVP_PKEY_PUBLIC_KEY, params) != 1)
		pk = NULL;
	EVP_PKEY_CTX_free(ctx);
	OSSL_PARAM_free(params);
	return pk;
}

/* RSA n and e: moduli of at most ARN_JWKS_MAX_RSA_BITS (a larger one
 * would make each verification a client can ask for cost milliseconds),
 * exponents of at most 64 bits. */
static EVP_PKEY *rsa_key(struct json_object *o)
{
	unsigned char n[ARN_JWKS_MAX_RSA_BITS / 8], e[8];
	long nl = jb64(o, "n", n, sizeof(n)), el = jb64(o, "e", e, sizeof(e));
	if (nl <= 0 || el <= 0)
		return NULL;
	BIGNUM *bn = BN_bin2bn(n, (int)nl, NULL), *be = BN_bin2bn(e, (int)el, NULL);
	OSSL_PARAM_BLD *b = OSSL_PARAM_BLD_new();
	EVP_PKEY *pk = NULL;
	if (bn && be && b && OSSL_PARAM_BLD_push_BN(b, OSSL_PKEY_PARAM_RSA_N, bn) &&
	    OSSL_PARAM_BLD_push_BN(b, OSSL_PKEY_PARAM_RSA_E, be))
		pk = fromdata("RSA", b);
	OSSL_PARAM_BLD_free(b);
	BN_free(bn);
	BN_free(be);
	return pk;
}

static const struct {
	const char *crv, *group;
	size_t coord;
	uint8_t alg;
} ec_curves[] = {
    {"P-256", "prime256v1", 32, ARN_JWT_ES256},
    {"P-384", "secp384r1", 48, ARN_JWT_ES384},
    {"P-521", "secp521r1", 66, ARN_JWT_ES512},
};

/* EC crv, x, y (the point checked on the curve by OpenSSL's import) */
static EVP_PKEY *ec_key(struct json_object *o, int alg, uint8_t *ec_alg)
{
	size_t cl = 0;
	const char *crv = jstr(o, "crv", &cl);
	int c = -1;
	for (int i = 0; i < 3; i++)
		if (crv ? (strlen(ec_curves[i].crv) == cl && memcmp(crv, ec_curves[i].crv, cl) == 0)
			: alg == ec_curves[i].alg)
			c = i;
	/* Envoy: the crv the alg names when crv is absent; both must agree */
	if (c < 0 || (alg >= 0 && alg != ec_curves[c].alg))
		return NULL;
	size_t k = ec_curves[c].coord;
	unsigned char x[66], y[66], pt[1 + 2 * 66];
	long xl = jb64(o, "x", x, sizeof(x)), yl = jb64(o, "y", y, sizeof(y));
	if (xl <= 0 || yl <= 0 || (size_t)xl > k || (size_t)yl > k)
		return NULL;
	/* left-padded to the coordinate size, as a BIGNUM would be */
	pt[0] = 4;
	memset(pt + 1, 0, 2 * k);
	memcpy(pt + 1 + k - (size_t)xl, x, (size_t)xl);
	memcpy(pt + 1 + 2 * k - (size_t)yl, y, (size_t)yl);
	OSSL_PARAM_BLD *b = OSSL_PARAM_BLD_new();
	EVP_PKEY *pk = NULL;
	if (b &&
	    OSSL_PARAM_BLD_push_utf8_string(b, OSSL_PKEY_PARAM_GROUP_NAME, ec_curves[c].group, 0) &&
	    OSSL_PARAM_BLD_push_octet_string(b, OSSL_PKEY_PARAM_PUB_KEY, pt, 1 + 2 * k))
		pk = fromdata("EC", b);
	OSSL_PARAM_BLD_free(b);
	if (pk) {
		/* fromdata does not check the point is on the curve */
		EVP_PKEY_CTX *cx = EVP_PKEY_CTX_new(pk, NULL);
		if (!cx || EVP_PKEY_public_check(cx) != 1) {
			EVP_PKEY_free(pk);
			pk = NULL;
		}
		EVP_PKEY_CTX_free(cx);
	}
	*ec_alg = ec_curves[c].alg;
	return pk;
}

static EVP_PKEY *okp_key(struct json_object *o)
{
	size_t cl = 0;
	const char *crv = jstr(o, "crv", &cl);
	unsigned char x[33];
	if (!crv || cl != 7 || memcmp(crv, "Ed25519", 7) != 0 || jb64(o, "x", x, sizeof(x)) != 32)
		return NULL;
	return EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, x, 32);
}

/* One element of "keys" into @p k. @return false: skipped (as Envoy). */
static bool jwk_parse(struct json_object *o, struct jwk *k)
{
	size_t tl = 0, al = 0, kl = 0;
	const char *kty = jstr(o, "kty", &tl);
	if (!kty)
		return false;
	const char *alg = jstr(o, "alg", &al);
	const char *kid = jstr(o, "kid", &kl);
	k->alg = -1;
	if (alg && al) {
		k->alg = arn_jwt_alg_from_name(alg, al);
		if (k->alg < 0)
			return false; /* no token could use it */
	}
	if (tl == 3 && memcmp(kty, "RSA", 3) == 0) {
		k->kty = KTY_RSA;
		if (k->alg >= 0 && k->alg > ARN_JWT_PS512)
			return false; /* Envoy: alg must start with RS or PS */
		k->pkey = rsa_key(o);
	} else if (tl == 2 && memcmp(kty, "EC", 2) == 0) {
		k->kty = KTY_EC;
		if (k->alg >= 0 && (k->alg < ARN_JWT_ES256 || k->alg > ARN_JWT_ES512))
			return false;
		k->pkey = ec_key(o, k->alg, &k->ec_alg);
	} else if (tl == 3 && memcmp(kty, "OKP", 3) == 0) {
		k->kty = KTY_OKP;
		if (k->alg >= 0 && k->alg != ARN_JWT_EDDSA)
			return false;
		k->pkey = okp_key(o);
	} else if (tl == 3 && memcmp(kty, "oct", 3) == 0) {
		k->kty = KTY_OCT;
		if (k->alg >= 0 && k->alg < ARN_JWT_HS256)
			return false;
		size_t sl = 0;
		const char *s = jstr(o, "k", &sl);
		if (!s || !sl || sl > 4096)
			return false;
		k->k = malloc(sl);
		long n = k->k ? arn_b64url_decode(s, sl, k->k, sl) : -1;
		if (n <= 0) {
			free(k->k);
			k->k = NULL;
			return false;
		}
		k->k_len = (size_t)n;
		goto kid;
	} else {
		return false; /* Envoy skips a kty it does not know */
	}
	if (!k->pkey)
		return false;
kid:
	if (kid && kl) {
		k->kid = malloc(kl + 1);
		if (!k->kid) {
			EVP_PKEY_free(k->pkey);
			free(k->k);
			return false;
		}
		memcpy(k->kid, kid, kl);
		k->kid[kl] = 0;
		k->kid_len = kl;
	}
	return true;
}

static struct json_object *json_parse(const char *s, size_t len)
{
	if (len > (size_t)0x7fffffff)
		return NULL;
	struct json_tokener *t = json_tokener_new_ex(ARN_JWT_MAX_DEPTH);
	if (!t)
		return NULL;
	json_tokener_set_flags(t, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	struct json_object *o = json_tokener_parse_ex(t, s, (int)len);
	if (o && json_tokener_get_parse_end(t) != len) {
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(t);
	return o;
}

struct arn_jwks *arn_jwks_parse(const char *json, size_t len, char *err, size_t errlen)
{
	if (len > ARN_JWKS_MAX_BYTES) {
		snprintf(err, errlen, "%zu bytes: more than %u", len, ARN_JWKS_MAX_BYTES);
		return NULL;
	}
	struct json_object *o = json_parse(json, len);
	struct json_object *keys = NULL;
	if (!o || !json_object_is_type(o, json_type_object)) {
		snprintf(err, errlen, "not a JSON object (at most %d levels deep)",
			 ARN_JWT_MAX_DEPTH);
		json_object_put(o);
		return NULL;
	}
	if (!json_object_object_get_ex(o, "keys", &keys) ||
	    !json_object_is_type(keys, json_type_array)) {
		snprintf(err, errlen, "no [keys] array");
		json_object_put(o);
		return NULL;
	}
	size_t n = json_object_array_length(keys);
	if (n > ARN_JWKS_MAX_KEYS) {
		snprintf(err, errlen, "%zu keys: more than %d", n, ARN_JWKS_MAX_KEYS);
		json_object_put(o);
		return NULL;
	}
	struct arn_jwks *ks = calloc(1, sizeof(*ks) + (n ? n : 1) * sizeof(struct jwk));
	if (!ks) {
		snprintf(err, errlen, "out of memory");
		json_object_put(o);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(keys, i);
		struct jwk *k = &ks->keys[ks->n];
		memset(k, 0, sizeof(*k));
		if (json_object_is_type(e, json_type_object) && jwk_parse(e, k))
			ks->n++;
	}
	json_object_put(o);
	if (!ks->n) {
		snprintf(err, errlen, "%s", status_str[ARN_JWKS_NO_VALID_KEYS]);
		free(ks);
		return NULL;
	}
	return ks;
}

/* ---- tokens --------------------------------------------------------------------------- */

void arn_jwt_release(struct arn_jwt *j)
{
	json_object_put(j->hdr);
	json_object_put(j->payload);
	j->hdr = j->payload = NULL;
}

/* A registered time claim: absent 0; an integer >= 0. */
static enum arn_jwt_status time_claim(struct json_object *p, const char *name, uint64_t *out,
				      enum arn_jwt_status not_int, enum arn_jwt_status range)
{
	struct json_object *v = NULL;
	*out = 0;
	if (!json_object_object_get_ex(p, name, &v))
		return ARN_JWT_OK;
	if (json_object_is_type(v, json_type_int)) {
		int64_t x = json_object_get_int64(v);
		if (x < 0)
			return range;
		*out = (uint64_t)x;
		return ARN_JWT_OK;
	}
	if (json_object_is_type(v, json_type_double)) {
		/* Envoy reads numbers as doubles: an integral one is an integer */
		double d = json_object_get_double(v);
		if (d != floor(d) || !isfinite(d))
			return not_int;
		if (d < 0 || d >= 18446744073709551616.0)
			return range;
		*out = (uint64_t)d;
		return ARN_JWT_OK;
	}
	return not_int;
}

/* An optional string claim: absent, or a string. */
static bool str_claim(struct json_object *p, const char *name, const char **s, size_t *len)
{
	struct json_object *v = NULL;
	*s = NULL;
	*len = 0;
	if (!json_object_object_get_ex(p, name, &v))
		return true;
	if (!json_object_is_type(v, json_type_string))
		return false;
	*s = json_object_get_string(v);
	*len = (size_t)json_object_get_string_len(v);
	return true;
}

static enum arn_jwt_status parse_payload(struct arn_jwt *j)
{
	struct json_object *p = j->payload;
	const char *s;
	size_t l;
	if (!str_claim(p, "iss", &j->iss, &j->iss_len))
		return ARN_JWT_ISS_NOT_STRING;
	if (!str_claim(p, "sub", &j->sub, &j->sub_len))
		return ARN_JWT_SUB_NOT_STRING;
	enum arn_jwt_status st =
	    time_claim(p, "iat", &j->iat, ARN_JWT_IAT_NOT_INTEGER, ARN_JWT_IAT_OUT_OF_RANGE);
	if (st == ARN_JWT_OK)
		st = time_claim(p, "nbf", &j->nbf, ARN_JWT_NBF_NOT_INTEGER,
				ARN_JWT_NBF_OUT_OF_RANGE);
	if (st == ARN_JWT_OK)
		st = time_claim(p, "exp", &j->exp, ARN_JWT_EXP_NOT_INTEGER,
				ARN_JWT_EXP_OUT_OF_RANGE);
	if (st != ARN_JWT_OK)
		return st;
	if (!str_claim(p, "jti", &s, &l))
		return ARN_JWT_JTI_NOT_STRING;
	struct json_object *a = NULL;
	if (json_object_object_get_ex(p, "aud", &a)) {
		if (json_object_is_type(a, json_type_string)) {
			j->aud[0] = json_object_get_string(a);
			j->aud_len[0] = (size_t)json_object_get_string_len(a);
			j->n_aud = 1;
		} else if (json_object_is_type(a, json_type_array)) {
			size_t n = json_object_array_length(a);
			if (n > ARN_JWT_MAX_AUD)
				return ARN_JWT_AUD_NOT_STRING;
			for (size_t i = 0; i < n; i++) {
				struct json_object *e = json_object_array_get_idx(a, i);
				if (!json_object_is_type(e, json_type_string))
					return ARN_JWT_AUD_NOT_STRING;
				j->aud[j->n_aud] = json_object_get_string(e);
				j->aud_len[j->n_aud++] = (size_t)json_object_get_string_len(e);
			}
		} else {
			return ARN_JWT_AUD_NOT_STRING;
		}
	}
	return ARN_JWT_OK;
}

enum arn_jwt_status arn_jwt_parse(struct arn_jwt *j, const char *text, size_t len)
{
	memset(j, 0, offsetof(struct arn_jwt, sig));
	j->text = text;
	if (len > ARN_JWT_MAX_TOKEN)
		return ARN_JWT_BAD_FORMAT;
	const char *d1 = memchr(text, '.', len);
	const char *d2 = d1 ? memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - text)) : NULL;
	if (!d2 || memchr(d2 + 1, '.', len - (size_t)(d2 + 1 - text)))
		return ARN_JWT_BAD_FORMAT;
	size_t hl = (size_t)(d1 - text), pl = (size_t)(d2 - d1 - 1);
	size_t sl = len - (size_t)(d2 + 1 - text);
	/* decoded header and payload: the signature's buffer holds them in
	 * turn until the JSON is parsed */
	long n = arn_b64url_decode(text, hl, j->sig, sizeof(j->sig));
	if (n < 0)
		return ARN_JWT_HEADER_BAD_BASE64;
	j->hdr = json_parse((const char *)j->sig, (size_t)n);
	if (!j->hdr || !json_object_is_type(j->hdr, json_type_object))
		return ARN_JWT_HEADER_BAD_JSON;
	size_t al = 0;
	const char *alg = NULL;
	struct json_object *v = NULL;
	if (!json_object_object_get_ex(j->hdr, "alg", &v) ||
	    !json_object_is_type(v, json_type_string))
		return ARN_JWT_HEADER_BAD_ALG;
	alg = json_object_get_string(v);
	al = (size_t)json_object_get_string_len(v);
	int a = arn_jwt_alg_from_name(alg, al);
	if (a < 0)
		return ARN_JWT_HEADER_NOT_IMPLEMENTED_ALG; /* "none" among them */
	j->alg = (enum arn_jwt_alg)a;
	if (json_object_object_get_ex(j->hdr, "kid", &v)) {
		if (!json_object_is_type(v, json_type_string))
			return ARN_JWT_HEADER_BAD_KID;
		j->kid = json_object_get_string(v);
		j->kid_len = (size_t)json_object_get_string_len(v);
	}
	n = arn_b64url_decode(d1 + 1, pl, j->sig, sizeof(j->sig));
	if (n < 0)
		return ARN_JWT_PAYLOAD_BAD_BASE64;
	j->payload = json_parse((const char *)j->sig, (size_t)n);
	if (!j->payload || !json_object_is_type(j->payload, json_type_object))
		return ARN_JWT_PAYLOAD_BAD_JSON;
	enum arn_jwt_status st = parse_payload(j);
	if (st != ARN_JWT_OK)
		return st;
	n = arn_b64url_decode(d2 + 1, sl, j->sig, sizeof(j->sig));
	if (n < 0)
		return ARN_JWT_SIG_BAD_BASE64;
	j->sig_len = (size_t)n;
	j->signed_len = (size_t)(d2 - text);
	j->payload_b64 = d1 + 1;
	j->payload_b64_len = pl;
	return ARN_JWT_OK;
}

enum arn_jwt_status arn_jwt_check_time(const struct arn_jwt *j, uint64_t now, uint64_t skew,
				       bool require_exp)
{
	if (j->nbf && now + skew < j->nbf)
		return ARN_JWT_NOT_YET_VALID;
	if (j->exp && j->exp + skew >= j->exp && now > j->exp + skew)
		return ARN_JWT_EXPIRED;
	if (require_exp && !j->exp)
		return ARN_JWT_EXPIRED;
	return ARN_JWT_OK;
}

/* An audience without http:// or https:// and a trailing '/' */
static void aud_norm(const char **s, size_t *l)
{
	if (*l >= 8 && strncmp(*s, "https://", 8) == 0) {
		*s += 8;
		*l -= 8;
	} else if (*l >= 7 && strncmp(*s, "http://", 7) == 0) {
		*s += 7;
		*l -= 7;
	}
	if (*l && (*s)[*l - 1] == '/')
		(*l)--;
}

bool arn_jwt_aud_allowed(const struct arn_jwt *j, const char *const *auds, size_t n)
{
	if (!n)
		return true;
	for (unsigned i = 0; i < j->n_aud; i++) {
		const char *a = j->aud[i];
		size_t al = j->aud_len[i];
		aud_norm(&a, &al);
		for (size_t k = 0; k < n; k++) {
			const char *b = auds[k];
			size_t bl = strlen(b);
			aud_norm(&b, &bl);
			if (al == bl && memcmp(a, b, al) == 0)
				return true;
		}
	}
	return false;
}

static const EVP_MD *alg_md(enum arn_jwt_alg a)
{
	switch (a) {
	case ARN_JWT_RS256:
	case ARN_JWT_PS256:
	case ARN_JWT_ES256:
	case ARN_JWT_HS256:
		return EVP_sha256();
	case ARN_JWT_RS384:
	case ARN_JWT_PS384:
	case ARN_JWT_ES384:
	case ARN_JWT_HS384:
		return EVP_sha384();
	case ARN_JWT_EDDSA:
		return NULL;
	default:
		return EVP_sha512();
	}
}

/* One asymmetric verification of @p sig over the signed bytes. */
static bool pkey_verify(const struct arn_jwt *j, EVP_PKEY *pk, const unsigned char *sig, size_t sl)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	EVP_PKEY_CTX *pc = NULL;
	bool ok = false;
	if (!md)
		return false;
	if (EVP_DigestVerifyInit(md, &pc, alg_md(j->alg), NULL, pk) != 1)
		goto out;
	if (j->alg >= ARN_JWT_PS256 && j->alg <= ARN_JWT_PS512 &&
	    (EVP_PKEY_CTX_set_rsa_padding(pc, RSA_PKCS1_PSS_PADDING) != 1 ||
	     EVP_PKEY_CTX_set_rsa_pss_saltlen(pc, RSA_PSS_SALTLEN_DIGEST) != 1))
		goto out;
	if (j->alg <= ARN_JWT_RS512 && EVP_PKEY_CTX_set_rsa_padding(pc, RSA_PKCS1_PADDING) != 1)
		goto out;
	ok = EVP_DigestVerify(md, sig, sl, (const unsigned char *)j->text, j->signed_len) == 1;
out:
	EVP_MD_CTX_free(md);
	return ok;
}

/* JOSE's r || s into DER for OpenSSL, and verified. */
static bool ec_verify(const struct arn_jwt *j, EVP_PKEY *pk, size_t coord)
{
	if (j->sig_len != 2 * coord)
		return false;
	ECDSA_SIG *es = ECDSA_SIG_new();
	BIGNUM *r = BN_bin2bn(j->sig, (int)coord, NULL);
	BIGNUM *s = BN_bin2bn(j->sig + coord, (int)coord, NULL);
	unsigned char *der = NULL;
	int dl = -1;
	if (es && r && s && ECDSA_SIG_set0(es, r, s) == 1) {
		r = s = NULL; /* es owns them */
		dl = i2d_ECDSA_SIG(es, &der);
	}
	BN_free(r);
	BN_free(s);
	ECDSA_SIG_free(es);
	bool ok = dl > 0 && pkey_verify(j, pk, der, (size_t)dl);
	OPENSSL_free(der);
	return ok;
}

static bool hmac_verify(const struct arn_jwt *j, const unsigned char *key, size_t kl)
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	size_t ml = 0;
	const char *dn = j->alg == ARN_JWT_HS256   ? "SHA256"
			 : j->alg == ARN_JWT_HS384 ? "SHA384"
						   : "SHA512";
	EVP_MAC *m = EVP_MAC_fetch(NULL, "HMAC", NULL);
	EVP_MAC_CTX *c = m ? EVP_MAC_CTX_new(m) : NULL;
	OSSL_PARAM p[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)dn, 0),
			  OSSL_PARAM_construct_end()};
	bool ok = c && EVP_MAC_init(c, key, kl, p) == 1 &&
		  EVP_MAC_update(c, (const unsigned char *)j->text, j->signed_len) == 1 &&
		  EVP_MAC_final(c, mac, &ml, sizeof(mac)) == 1 && ml == j->sig_len &&
		  CRYPTO_memcmp(mac, j->sig, ml) == 0;
	EVP_MAC_CTX_free(c);
	EVP_MAC_free(m);
	OPENSSL_cleanse(mac, sizeof(mac));
	return ok;
}

enum arn_jwt_status arn_jwt_verify_sig(const struct arn_jwt *j, const struct arn_jwks *ks,
				       unsigned *budget)
{
	bool matched = false;
	if (j->alg == ARN_JWT_EDDSA && j->sig_len != 64)
		return ARN_JWT_ED25519_SIG_WRONG_LENGTH;
	for (size_t i = 0; ks && i < ks->n; i++) {
		const struct jwk *k = &ks->keys[i];
		if (j->kid && k->kid &&
		    (k->kid_len != j->kid_len || memcmp(k->kid, j->kid, j->kid_len) != 0))
			continue;
		if (k->alg >= 0 && k->alg != (int)j->alg)
			continue;
		matched = true;
		if (budget) {
			if (!*budget)
				break;
			(*budget)--;
		}
		bool ok = false;
		switch (k->kty) {
		case KTY_RSA:
			if (j->alg <= ARN_JWT_PS512)
				ok = pkey_verify(j, k->pkey, j->sig, j->sig_len);
			break;
		case KTY_EC:
			if (j->alg == k->ec_alg)
				ok = ec_verify(j, k->pkey,
					       j->alg == ARN_JWT_ES256	 ? 32
					       : j->alg == ARN_JWT_ES384 ? 48
									 : 66);
			break;
		case KTY_OKP:
			if (j->alg == ARN_JWT_EDDSA)
				ok = pkey_verify(j, k->pkey, j->sig, j->sig_len);
			break;
		case KTY_OCT:
			/* only an HS alg reaches a secret: RS256 with an oct key
			 * (the classic confusion) is never an HMAC */
			if (j->alg >= ARN_JWT_HS256)
				ok = hmac_verify(j, k->k, k->k_len);
			break;
		default:
			break;
		}
		if (ok)
			return ARN_JWT_OK;
	}
	return matched ? ARN_JWT_VERIFICATION_FAIL : ARN_JWKS_KID_ALG_MISMATCH;
}

long arn_jwt_claim(const struct arn_jwt *j, const char *name, char *buf, size_t cap)
{
	struct json_object *o = j->payload, *v = NULL;
	char part[256];
	const char *s = name;
	/* "a.b.c": each part but the last an object */
	for (;;) {
		const char *dot = strchr(s, '.');
		size_t l = dot ? (size_t)(dot - s) : strlen(s);
		if (l >= sizeof(part))
			return 0;
		memcpy(part, s, l);
		part[l] = 0;
		if (!o || !json_object_is_type(o, json_type_object) ||
		    !json_object_object_get_ex(o, part, &v))
			return 0;
		if (!dot)
			break;
		o = v;
		s = dot + 1;
	}
	size_t n;
	const char *val;
	char num[40];
	switch (json_object_get_type(v)) {
	case json_type_string:
		val = json_object_get_string(v);
		n = (size_t)json_object_get_string_len(v);
		break;
	case json_type_boolean:
		val = json_object_get_boolean(v) ? "true" : "false";
		n = strlen(val);
		break;
	case json_type_int:
		n = (size_t)snprintf(num, sizeof(num), "%lld", (long long)json_object_get_int64(v));
		val = num;
		break;
	case json_type_double: {
		double d = json_object_get_double(v);
		if (d == floor(d) && fabs(d) < 9.2e18)
			n = (size_t)snprintf(num, sizeof(num), "%lld", (long long)d);
		else
			n = (size_t)snprintf(num, sizeof(num), "%.17g", d);
		val = num;
		break;
	}
	default:
		return 0;
	}
	if (n > cap)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (val[i] == '\r' || val[i] == '\n' || val[i] == 0)
			return -1;
	memcpy(buf, val, n);
	return (long)n;
}
