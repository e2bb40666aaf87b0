/*
 * Test helper: keys generated at run time (none committed) and JWTs signed
 * with them by OpenSSL, for test_jwt, test_hcm_tcp and the JWT fuzzer's
 * seeds. Every function aborts the test program on an OpenSSL failure.
 */
#ifndef TJWT_H
#define TJWT_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/evp.h>

#include "arn_jwt.h"

struct tjwt_key {
	EVP_PKEY *pk;	       /* RSA (RS / PS), EC (ES, its curve), Ed25519 */
	unsigned char sec[64]; /* oct (HS) */
	size_t sec_len;
	int alg;      /* enum arn_jwt_alg it was made for */
	char kid[32]; /* "" none */
};

/** A new key for @p alg with kid @p kid (NULL: none). */
void tjwt_gen(struct tjwt_key *k, int alg, const char *kid);
void tjwt_free(struct tjwt_key *k);
/** The key's JWK (public part; the secret of an oct key), with "alg" when
 * @p with_alg. @return its length. */
size_t tjwt_jwk(const struct tjwt_key *k, bool with_alg, char *out, size_t cap);
/** base64url without padding. @return its length. */
size_t tjwt_b64(const void *in, size_t len, char *out, size_t cap);
/**
 * A token: header @p hdr (NULL: {"alg":"<alg>"} plus the key's kid) and
 * payload @p payload (JSON text), signed with @p k as @p alg says (an alg
 * other than the key's signs as the key can, for mismatch tests: the
 * signature is then the key's own). @return its length.
 */
size_t tjwt_sign(const struct tjwt_key *k, int alg, const char *hdr, const char *payload, char *out,
		 size_t cap);

#endif
