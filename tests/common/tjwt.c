/* Keys and tokens made at run time (tjwt.h). */
#include "tjwt.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x)) {                                                                        \
			fprintf(stderr, "tjwt: %s failed at %s:%d\n", #x, __FILE__, __LINE__);     \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static const char *const names[ARN_JWT__ALGS] = {
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256",
    "ES384", "ES512", "EdDSA", "HS256", "HS384", "HS512",
};

void tjwt_gen(struct tjwt_key *k, int alg, const char *kid)
{
	memset(k, 0, sizeof(*k));
	k->alg = alg;
	if (kid)
		snprintf(k->kid, sizeof(k->kid), "%s", kid);
	if (alg <= ARN_JWT_PS512) {
		k->pk = EVP_RSA_gen(2048);
	} else if (alg <= ARN_JWT_ES512) {
		k->pk = EVP_EC_gen(alg == ARN_JWT_ES256	  ? "P-256"
				   : alg == ARN_JWT_ES384 ? "P-384"
							  : "P-521");
	} else if (alg == ARN_JWT_EDDSA) {
		k->pk = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	} else {
		k->sec_len = alg == ARN_JWT_HS256 ? 32 : alg == ARN_JWT_HS384 ? 48 : 64;
		CHECK(RAND_bytes(k->sec, (int)k->sec_len) == 1);
		return;
	}
	CHECK(k->pk);
}

void tjwt_free(struct tjwt_key *k)
{
	EVP_PKEY_free(k->pk);
	k->pk = NULL;
}

size_t tjwt_b64(const void *in, size_t len, char *out, size_t cap)
{
	CHECK(cap >= 4 * ((len + 2) / 3) + 1);
	int n = EVP_EncodeBlock((unsigned char *)out, in, (int)len);
	CHECK(n >= 0);
	while (n > 0 && out[n - 1] == '=')
		n--;
	for (int i = 0; i < n; i++)
		out[i] = out[i] == '+' ? '-' : out[i] == '/' ? '_' : out[i];
	out[n] = 0;
	return (size_t)n;
}

static size_t bn_b64(EVP_PKEY *pk, const char *param, char *out, size_t cap)
{
	BIGNUM *b = NULL;
	CHECK(EVP_PKEY_get_bn_param(pk, param, &b) == 1);
	unsigned char buf[1024];
	int n = BN_bn2bin(b, buf);
	BN_free(b);
	return tjwt_b64(buf, (size_t)n, out, cap);
}

size_t tjwt_jwk(const struct tjwt_key *k, bool with_alg, char *out, size_t cap)
{
	char a[64] = "", kid[64] = "", x[1400], y[200];
	if (with_alg)
		snprintf(a, sizeof(a), ",\"alg\":\"%s\"", names[k->alg]);
	if (k->kid[0])
		snprintf(kid, sizeof(kid), ",\"kid\":\"%s\"", k->kid);
	int n;
	if (k->alg <= ARN_JWT_PS512) {
		bn_b64(k->pk, OSSL_PKEY_PARAM_RSA_N, x, sizeof(x));
		bn_b64(k->pk, OSSL_PKEY_PARAM_RSA_E, y, sizeof(y));
		n = snprintf(out, cap, "{\"kty\":\"RSA\"%s%s,\"n\":\"%s\",\"e\":\"%s\"}", a, kid, x,
			     y);
	} else if (k->alg <= ARN_JWT_ES512) {
		unsigned char pt[200];
		size_t pl = 0;
		CHECK(EVP_PKEY_get_octet_string_param(k->pk, OSSL_PKEY_PARAM_PUB_KEY, pt,
						      sizeof(pt), &pl) == 1);
		/* uncompressed: 04 || x || y */
		if (pt[0] != 4) {
			EVP_PKEY_CTX *c = NULL;
			(void)c;
			CHECK(EVP_PKEY_set_utf8_string_param(
				  k->pk, OSSL_PKEY_PARAM_EC_POINT_CONVERSION_FORMAT,
				  "uncompressed") == 1);
			CHECK(EVP_PKEY_get_octet_string_param(k->pk, OSSL_PKEY_PARAM_PUB_KEY, pt,
							      sizeof(pt), &pl) == 1);
		}
		size_t c = (pl - 1) / 2;
		tjwt_b64(pt + 1, c, x, sizeof(x));
		tjwt_b64(pt + 1 + c, c, y, sizeof(y));
		n = snprintf(out, cap,
			     "{\"kty\":\"EC\"%s%s,\"crv\":\"%s\",\"x\":\"%s\",\"y\":\"%s\"}", a,
			     kid,
			     c == 32   ? "P-256"
			     : c == 48 ? "P-384"
				       : "P-521",
			     x, y);
	} else if (k->alg == ARN_JWT_EDDSA) {
		unsigned char raw[32];
		size_t rl = sizeof(raw);
		CHECK(EVP_PKEY_get_raw_public_key(k->pk, raw, &rl) == 1);
		tjwt_b64(raw, rl, x, sizeof(x));
		n = snprintf(out, cap, "{\"kty\":\"OKP\"%s%s,\"crv\":\"Ed25519\",\"x\":\"%s\"}", a,
			     kid, x);
	} else {
		tjwt_b64(k->sec, k->sec_len, x, sizeof(x));
		n = snprintf(out, cap, "{\"kty\":\"oct\"%s%s,\"k\":\"%s\"}", a, kid, x);
	}
	CHECK(n > 0 && (size_t)n < cap);
	return (size_t)n;
}

static const EVP_MD *md_of(int alg)
{
	if (alg == ARN_JWT_EDDSA)
		return NULL;
	int i = alg >= ARN_JWT_HS256 ? alg - ARN_JWT_HS256 : alg % 3;
	return i == 0 ? EVP_sha256() : i == 1 ? EVP_sha384() : EVP_sha512();
}

size_t tjwt_sign(const struct tjwt_key *k, int alg, const char *hdr, const char *payload, char *out,
		 size_t cap)
{
	char h[512];
	if (!hdr) {
		if (k->kid[0])
			snprintf(h, sizeof(h), "{\"alg\":\"%s\",\"kid\":\"%s\"}", names[alg],
				 k->kid);
		else
			snprintf(h, sizeof(h), "{\"alg\":\"%s\"}", names[alg]);
		hdr = h;
	}
	size_t n = tjwt_b64(hdr, strlen(hdr), out, cap);
	out[n++] = '.';
	n += tjwt_b64(payload, strlen(payload), out + n, cap - n);
	unsigned char sig[1024];
	size_t sl = sizeof(sig);
	/* signs as the key can: the key's own alg decides the scheme */
	int ka = k->alg;
	const EVP_MD *md = md_of(ka);
	if (ka >= ARN_JWT_HS256) {
		unsigned int ml = 0;
		CHECK(HMAC(md, k->sec, (int)k->sec_len, (unsigned char *)out, n, sig, &ml));
		sl = ml;
	} else {
		EVP_MD_CTX *c = EVP_MD_CTX_new();
		EVP_PKEY_CTX *pc = NULL;
		CHECK(c && EVP_DigestSignInit(c, &pc, md, NULL, k->pk) == 1);
		if (ka >= ARN_JWT_PS256 && ka <= ARN_JWT_PS512) {
			CHECK(EVP_PKEY_CTX_set_rsa_padding(pc, RSA_PKCS1_PSS_PADDING) == 1);
			CHECK(EVP_PKEY_CTX_set_rsa_pss_saltlen(pc, RSA_PSS_SALTLEN_DIGEST) == 1);
		}
		CHECK(EVP_DigestSign(c, sig, &sl, (unsigned char *)out, n) == 1);
		EVP_MD_CTX_free(c);
		if (ka >= ARN_JWT_ES256 && ka <= ARN_JWT_ES512) {
			/* DER into JOSE's r || s */
			size_t coord = ka == ARN_JWT_ES256 ? 32 : ka == ARN_JWT_ES384 ? 48 : 66;
			const unsigned char *p = sig;
			ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &p, (long)sl);
			CHECK(es);
			unsigned char rs[132];
			CHECK(BN_bn2binpad(ECDSA_SIG_get0_r(es), rs, (int)coord) == (int)coord);
			CHECK(BN_bn2binpad(ECDSA_SIG_get0_s(es), rs + coord, (int)coord) ==
			      (int)coord);
			ECDSA_SIG_free(es);
			memcpy(sig, rs, 2 * coord);
			sl = 2 * coord;
		}
	}
	out[n++] = '.';
	n += tjwt_b64(sig, sl, out + n, cap - n);
	return n;
}
