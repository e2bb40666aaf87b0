/*
 * libFuzzer: a client's token through the JWT parse and every check the
 * jwt_authn filter makes (arn_jwt.h) against a fixed key set, one key of
 * each algorithm with a kid naming it (made once, at start: the seeds
 * under corpus/jwt name those kids, so each reaches its algorithm's
 * verification; their signatures, made with other keys, fail). Input
 * that starts with '{' also goes through the JWKS parser (the one a
 * remote_jwks fetch's body goes through, lib/http/http_jwks.c, after
 * its 65536-byte limit: seed corpus/jwt/jwks), and every input
 * through the strict base64url decoder, which must decode only the one
 * canonical text of its bytes. Must never crash, leak or hang.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arn_jwt.h"
#include "tjwt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct arn_jwks *keys;

static void keys_make(void)
{
	static char buf[32 * 1024];
	size_t o = (size_t)snprintf(buf, sizeof(buf), "{\"keys\":[");
	for (int a = 0; a < ARN_JWT__ALGS; a++) {
		struct tjwt_key k;
		char kid[8];
		snprintf(kid, sizeof(kid), "k%d", a);
		tjwt_gen(&k, a, kid);
		if (a)
			buf[o++] = ',';
		o += tjwt_jwk(&k, a % 2 == 0, buf + o, sizeof(buf) - o);
		tjwt_free(&k);
	}
	o += (size_t)snprintf(buf + o, sizeof(buf) - o, "]}");
	char err[128];
	keys = arn_jwks_parse(buf, o, err, sizeof(err));
	if (!keys || arn_jwks_count(keys) != ARN_JWT__ALGS)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!keys)
		keys_make();
	const char *s = (const char *)data;
	static struct arn_jwt j;
	if (arn_jwt_parse(&j, s, size) == ARN_JWT_OK) {
		static const char *const aud[] = {"https://a.example/", "b"};
		(void)arn_jwt_check_time(&j, 1700000000, 60, size & 1);
		(void)arn_jwt_aud_allowed(&j, aud, 2);
		char v[64];
		static const char *const claims[] = {"sub", "a.b", "email", "x.y.z"};
		for (size_t i = 0; i < 4; i++) {
			long n = arn_jwt_claim(&j, claims[i], v, sizeof(v));
			for (long k = 0; k < n; k++)
				if (v[k] == '\r' || v[k] == '\n' || v[k] == 0)
					abort(); /* never into a header */
		}
		unsigned budget = 4;
		(void)arn_jwt_verify_sig(&j, keys, (size & 2) ? &budget : NULL);
	}
	arn_jwt_release(&j);
	if (size && data[0] == '{') {
		char err[128];
		arn_jwks_free(arn_jwks_parse(s, size, err, sizeof(err)));
	}
	/* base64url: what decodes must be the canonical encoding of its bytes */
	if (size <= 4096) {
		unsigned char out[3072];
		char again[4200];
		long n = arn_b64url_decode(s, size, out, sizeof(out));
		if (n >= 0) {
			size_t m = tjwt_b64(out, (size_t)n, again, sizeof(again));
			if (m != size || memcmp(again, s, size) != 0)
				abort();
		}
	}
	return 0;
}
