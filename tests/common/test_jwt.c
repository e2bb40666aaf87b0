/*
 * lib/common's JWT / JWKS verification (arn_jwt.h): every algorithm with
 * keys generated here, and each way a token or a key set is refused, with
 * Envoy's status.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/bn.h>

#include "arn_jwt.h"
#include "tjwt.h"

static char tok[ARN_JWT_MAX_TOKEN * 2];
static struct arn_jwt jw;

/* A set of the @p n keys' JWKs. */
static struct arn_jwks *jwks_of(const struct tjwt_key *k, size_t n, bool with_alg)
{
	static char buf[64 * 1024];
	size_t o = (size_t)snprintf(buf, sizeof(buf), "{\"keys\":[");
	for (size_t i = 0; i < n; i++) {
		if (i)
			buf[o++] = ',';
		o += tjwt_jwk(&k[i], with_alg, buf + o, sizeof(buf) - o);
	}
	o += (size_t)snprintf(buf + o, sizeof(buf) - o, "]}");
	char err[128];
	struct arn_jwks *ks = arn_jwks_parse(buf, o, err, sizeof(err));
	if (!ks)
		fail_msg("jwks: %s", err);
	return ks;
}

static enum arn_jwt_status verify(const char *t, size_t n, const struct arn_jwks *ks)
{
	enum arn_jwt_status st = arn_jwt_parse(&jw, t, n);
	if (st == ARN_JWT_OK)
		st = arn_jwt_verify_sig(&jw, ks, NULL);
	arn_jwt_release(&jw);
	return st;
}

static void test_b64url_strict(void **state)
{
	(void)state;
	unsigned char o[16];
	assert_int_equal(arn_b64url_decode("QQ", 2, o, sizeof(o)), 1);
	assert_int_equal(o[0], 'A');
	assert_int_equal(arn_b64url_decode("QUI", 3, o, sizeof(o)), 2);
	assert_int_equal(arn_b64url_decode("", 0, o, sizeof(o)), 0);
	assert_int_equal(arn_b64url_decode("QR", 2, o, sizeof(o)), -1);	  /* unused bits set */
	assert_int_equal(arn_b64url_decode("QQ==", 4, o, sizeof(o)), -1); /* padding */
	assert_int_equal(arn_b64url_decode("Q", 1, o, sizeof(o)), -1);	  /* 1 mod 4 */
	assert_int_equal(arn_b64url_decode("QU+I", 4, o, sizeof(o)), -1); /* standard alphabet */
	assert_int_equal(arn_b64url_decode("-_-_", 4, o, sizeof(o)), 3);
	assert_int_equal(arn_b64url_decode("QUJD", 4, o, 2), -1); /* no room */
}

/* Every algorithm verifies with its key, with the key's alg in the JWK or
 * without, and fails with one bit of the signature changed. */
static void test_every_alg(void **state)
{
	(void)state;
	for (int a = 0; a < ARN_JWT__ALGS; a++) {
		struct tjwt_key k;
		tjwt_gen(&k, a, a % 2 ? "k1" : NULL);
		for (int wa = 0; wa < 2; wa++) {
			struct arn_jwks *ks = jwks_of(&k, 1, wa);
			size_t n = tjwt_sign(&k, a, NULL, "{\"iss\":\"me\",\"exp\":2000000000}",
					     tok, sizeof(tok));
			assert_int_equal(verify(tok, n, ks), ARN_JWT_OK);
			/* the signature's first character flipped */
			char *s = strrchr(tok, '.') + 1;
			*s = *s == 'A' ? 'B' : 'A';
			enum arn_jwt_status st = verify(tok, n, ks);
			if (st != ARN_JWT_VERIFICATION_FAIL)
				fail_msg("alg %d: status %d", a, st);
			arn_jwks_free(ks);
		}
		tjwt_free(&k);
	}
}

static void test_alg_none_and_unknown(void **state)
{
	(void)state;
	struct tjwt_key k;
	tjwt_gen(&k, ARN_JWT_HS256, NULL);
	struct arn_jwks *ks = jwks_of(&k, 1, false);
	size_t n = tjwt_sign(&k, ARN_JWT_HS256, "{\"alg\":\"none\"}", "{}", tok, sizeof(tok));
	assert_int_equal(verify(tok, n, ks), ARN_JWT_HEADER_NOT_IMPLEMENTED_ALG);
	n = tjwt_sign(&k, ARN_JWT_HS256, "{\"alg\":\"HS1\"}", "{}", tok, sizeof(tok));
	assert_int_equal(verify(tok, n, ks), ARN_JWT_HEADER_NOT_IMPLEMENTED_ALG);
	n = tjwt_sign(&k, ARN_JWT_HS256, "{\"typ\":\"JWT\"}", "{}", tok, sizeof(tok));
	assert_int_equal(verify(tok, n, ks), ARN_JWT_HEADER_BAD_ALG);
	n = tjwt_sign(&k, ARN_JWT_HS256, "{\"alg\":256}", "{}", tok, sizeof(tok));
	assert_int_equal(verify(tok, n, ks), ARN_JWT_HEADER_BAD_ALG);
	n = tjwt_sign(&k, ARN_JWT_HS256, "{\"alg\":\"HS256\",\"kid\":1}", "{}", tok, sizeof(tok));
	assert_int_equal(verify(tok, n, ks), ARN_JWT_HEADER_BAD_KID);
	/* alg none with an empty signature, the classic bypass */
	memcpy(tok, "eyJhbGciOiJub25lIn0.e30.", 25);
	assert_int_equal(verify(tok, 24, ks), ARN_JWT_HEADER_NOT_IMPLEMENTED_ALG);
	arn_jwks_free(ks);
	tjwt_free(&k);
}

/* The algorithm confusion: a token that says HS256, MACed with the RSA
 * key's public modulus as the secret, against a set with that RSA key
 * only; and one that says RS256 against an oct key only. */
static void test_alg_kty_confusion(void **state)
{
	(void)state;
	struct tjwt_key rsa, oct;
	tjwt_gen(&rsa, ARN_JWT_RS256, NULL);
	tjwt_gen(&oct, ARN_JWT_HS256, NULL);
	struct arn_jwks *kr = jwks_of(&rsa, 1, false), *ko = jwks_of(&oct, 1, false);
	struct tjwt_key fake = oct;
	unsigned char nb[512];
	BIGNUM *bn = NULL;
	assert_int_equal(EVP_PKEY_get_bn_param(rsa.pk, "n", &bn), 1);
	int nl = BN_bn2bin(bn, nb);
	BN_free(bn);
	memcpy(fake.sec, nb, 64);
	fake.sec_len = 64;
	(void)nl;
	size_t n = tjwt_sign(&fake, ARN_JWT_HS256, NULL, "{}", tok, sizeof(tok));
	assert_int_equal(verify(tok, n, kr), ARN_JWT_VERIFICATION_FAIL);
	/* RS256 claimed, signed by the oct key's HMAC */
	n = tjwt_sign(&oct, ARN_JWT_HS256, "{\"alg\":\"RS256\"}", "{}", tok, sizeof(tok));
	assert_int_equal(verify(tok, n, ko), ARN_JWT_VERIFICATION_FAIL);
	/* with alg in the JWK, no key even matches */
	struct arn_jwks *ko2 = jwks_of(&oct, 1, true);
	assert_int_equal(verify(tok, n, ko2), ARN_JWKS_KID_ALG_MISMATCH);
	arn_jwks_free(kr);
	arn_jwks_free(ko);
	arn_jwks_free(ko2);
	tjwt_free(&rsa);
}

static void test_kid(void **state)
{
	(void)state;
	struct tjwt_key k[2];
	tjwt_gen(&k[0], ARN_JWT_ES256, "a");
	tjwt_gen(&k[1], ARN_JWT_ES256, "b");
	struct arn_jwks *ks = jwks_of(k, 2, true);
	size_t n = tjwt_sign(&k[1], ARN_JWT_ES256, NULL, "{}", tok, sizeof(tok));
	assert_int_equal(verify(tok, n, ks), ARN_JWT_OK);
	/* signed by b, naming a: a alone is tried */
	n = tjwt_sign(&k[1], ARN_JWT_ES256, "{\"alg\":\"ES256\",\"kid\":\"a\"}", "{}", tok,
		      sizeof(tok));
	assert_int_equal(verify(tok, n, ks), ARN_JWT_VERIFICATION_FAIL);
	n = tjwt_sign(&k[1], ARN_JWT_ES256, "{\"alg\":\"ES256\",\"kid\":\"zz\"}", "{}", tok,
		      sizeof(tok));
	assert_int_equal(verify(tok, n, ks), ARN_JWKS_KID_ALG_MISMATCH);
	/* without a kid every key is tried */
	n = tjwt_sign(&k[1], ARN_JWT_ES256, "{\"alg\":\"ES256\"}", "{}", tok, sizeof(tok));
	assert_int_equal(verify(tok, n, ks), ARN_JWT_OK);
	/* the budget: a token without kid, signed by the second key, finds
	 * it only with two trials left */
	unsigned budget = 1;
	assert_int_equal(arn_jwt_parse(&jw, tok, n), ARN_JWT_OK);
	assert_int_equal(arn_jwt_verify_sig(&jw, ks, &budget), ARN_JWT_VERIFICATION_FAIL);
	assert_int_equal(budget, 0);
	assert_int_equal(arn_jwt_verify_sig(&jw, ks, &budget), ARN_JWT_VERIFICATION_FAIL);
	budget = 2;
	assert_int_equal(arn_jwt_verify_sig(&jw, ks, &budget), ARN_JWT_OK);
	assert_int_equal(budget, 0);
	arn_jwt_release(&jw);
	/* ES384 claimed: no P-256 key is of its curve */
	n = tjwt_sign(&k[1], ARN_JWT_ES256, "{\"alg\":\"ES384\"}", "{}", tok, sizeof(tok));
	assert_int_equal(verify(tok, n, ks), ARN_JWKS_KID_ALG_MISMATCH);
	arn_jwks_free(ks);
	tjwt_free(&k[0]);
	tjwt_free(&k[1]);
}

static void test_malformed(void **state)
{
	(void)state;
	struct tjwt_key k;
	tjwt_gen(&k, ARN_JWT_HS256, NULL);
	struct arn_jwks *ks = jwks_of(&k, 1, false);
	assert_int_equal(verify("a.b", 3, ks), ARN_JWT_BAD_FORMAT);
	assert_int_equal(verify("a.b.c.d", 7, ks), ARN_JWT_BAD_FORMAT);
	assert_int_equal(verify("a*.e30.AA", 9, ks), ARN_JWT_HEADER_BAD_BASE64);
	assert_int_equal(verify("e30.e30.AA", 10, ks), ARN_JWT_HEADER_BAD_ALG);
	/* "[1]" as the header */
	assert_int_equal(verify("WzFd.e30.AA", 11, ks), ARN_JWT_HEADER_BAD_JSON);
	size_t n = tjwt_sign(&k, ARN_JWT_HS256, NULL, "{}", tok, sizeof(tok));
	tok[n - 1] = '=';
	assert_int_equal(verify(tok, n, ks), ARN_JWT_SIG_BAD_BASE64);
	static const struct {
		const char *payload;
		enum arn_jwt_status st;
	} bad[] = {
	    {"[]", ARN_JWT_PAYLOAD_BAD_JSON},
	    {"{\"a\":", ARN_JWT_PAYLOAD_BAD_JSON},
	    {"{\"iss\":1}", ARN_JWT_ISS_NOT_STRING},
	    {"{\"sub\":[]}", ARN_JWT_SUB_NOT_STRING},
	    {"{\"iat\":\"1\"}", ARN_JWT_IAT_NOT_INTEGER},
	    {"{\"nbf\":1.5}", ARN_JWT_NBF_NOT_INTEGER},
	    {"{\"exp\":-1}", ARN_JWT_EXP_OUT_OF_RANGE},
	    {"{\"jti\":true}", ARN_JWT_JTI_NOT_STRING},
	    {"{\"aud\":[\"a\",2]}", ARN_JWT_AUD_NOT_STRING},
	    {"{\"aud\":{}}", ARN_JWT_AUD_NOT_STRING},
	    {"{\"a\":[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]}", ARN_JWT_PAYLOAD_BAD_JSON},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		n = tjwt_sign(&k, ARN_JWT_HS256, NULL, bad[i].payload, tok, sizeof(tok));
		enum arn_jwt_status st = verify(tok, n, ks);
		if (st != bad[i].st)
			fail_msg("%s: %d, not %d", bad[i].payload, st, bad[i].st);
	}
	/* huge: past ARN_JWT_MAX_TOKEN, refused unread */
	memset(tok, 'A', sizeof(tok));
	tok[10] = tok[20] = '.';
	assert_int_equal(verify(tok, ARN_JWT_MAX_TOKEN + 1, ks), ARN_JWT_BAD_FORMAT);
	arn_jwks_free(ks);
}

static void test_time_aud(void **state)
{
	(void)state;
	struct tjwt_key k;
	tjwt_gen(&k, ARN_JWT_HS256, NULL);
	size_t n = tjwt_sign(&k, ARN_JWT_HS256, NULL,
			     "{\"nbf\":1000,\"exp\":2000,\"aud\":[\"https://a.example/\",\"b\"]}",
			     tok, sizeof(tok));
	assert_int_equal(arn_jwt_parse(&jw, tok, n), ARN_JWT_OK);
	assert_int_equal(arn_jwt_check_time(&jw, 939, 60, false), ARN_JWT_NOT_YET_VALID);
	assert_int_equal(arn_jwt_check_time(&jw, 940, 60, false), ARN_JWT_OK);
	assert_int_equal(arn_jwt_check_time(&jw, 2060, 60, false), ARN_JWT_OK);
	assert_int_equal(arn_jwt_check_time(&jw, 2061, 60, false), ARN_JWT_EXPIRED);
	const char *a1[] = {"a.example"}, *a2[] = {"http://b/"}, *a3[] = {"c", "d"};
	assert_true(arn_jwt_aud_allowed(&jw, a1, 1));
	assert_true(arn_jwt_aud_allowed(&jw, a2, 1));
	assert_false(arn_jwt_aud_allowed(&jw, a3, 2));
	assert_true(arn_jwt_aud_allowed(&jw, NULL, 0));
	arn_jwt_release(&jw);
	n = tjwt_sign(&k, ARN_JWT_HS256, NULL, "{\"aud\":\"x\"}", tok, sizeof(tok));
	assert_int_equal(arn_jwt_parse(&jw, tok, n), ARN_JWT_OK);
	assert_int_equal(arn_jwt_check_time(&jw, 5, 60, false), ARN_JWT_OK);
	assert_int_equal(arn_jwt_check_time(&jw, 5, 60, true), ARN_JWT_EXPIRED);
	assert_false(arn_jwt_aud_allowed(&jw, a3, 2));
	arn_jwt_release(&jw);
}

static void test_claims(void **state)
{
	(void)state;
	struct tjwt_key k;
	tjwt_gen(&k, ARN_JWT_HS256, NULL);
	size_t n = tjwt_sign(&k, ARN_JWT_HS256, NULL,
			     "{\"s\":\"v\",\"i\":42,\"d\":1.5,\"b\":true,\"o\":{\"x\":\"y\"},"
			     "\"crlf\":\"a\\r\\nb\",\"nul\":\"a\\u0000b\",\"arr\":[1]}",
			     tok, sizeof(tok));
	assert_int_equal(arn_jwt_parse(&jw, tok, n), ARN_JWT_OK);
	char b[32];
	assert_int_equal(arn_jwt_claim(&jw, "s", b, sizeof(b)), 1);
	assert_memory_equal(b, "v", 1);
	assert_int_equal(arn_jwt_claim(&jw, "i", b, sizeof(b)), 2);
	assert_memory_equal(b, "42", 2);
	assert_int_equal(arn_jwt_claim(&jw, "d", b, sizeof(b)), 3);
	assert_memory_equal(b, "1.5", 3);
	assert_int_equal(arn_jwt_claim(&jw, "b", b, sizeof(b)), 4);
	assert_int_equal(arn_jwt_claim(&jw, "o.x", b, sizeof(b)), 1);
	assert_memory_equal(b, "y", 1);
	assert_int_equal(arn_jwt_claim(&jw, "crlf", b, sizeof(b)), -1);
	assert_int_equal(arn_jwt_claim(&jw, "nul", b, sizeof(b)), -1);
	assert_int_equal(arn_jwt_claim(&jw, "arr", b, sizeof(b)), 0);
	assert_int_equal(arn_jwt_claim(&jw, "none", b, sizeof(b)), 0);
	assert_int_equal(arn_jwt_claim(&jw, "s", b, 0), -1);
	arn_jwt_release(&jw);
}

static void test_jwks(void **state)
{
	(void)state;
	char err[128];
	struct tjwt_key k;
	tjwt_gen(&k, ARN_JWT_EDDSA, "e");
	char jwk[512], buf[70000];
	size_t jl = tjwt_jwk(&k, true, jwk, sizeof(jwk));
	/* unknown kty and broken keys skipped, the good one kept */
	int n =
	    snprintf(buf, sizeof(buf),
		     "{\"keys\":[{\"kty\":\"XYZ\"},1,{\"kty\":\"RSA\",\"n\":\"AQAB\"},"
		     "{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"AQ\",\"y\":\"AQ\"},"
		     "{\"kty\":\"OKP\",\"alg\":\"RS256\",\"crv\":\"Ed25519\",\"x\":\"AA\"},%.*s]}",
		     (int)jl, jwk);
	struct arn_jwks *ks = arn_jwks_parse(buf, (size_t)n, err, sizeof(err));
	assert_non_null(ks);
	assert_int_equal(arn_jwks_count(ks), 1);
	arn_jwks_free(ks);
	/* an RSA modulus past ARN_JWKS_MAX_RSA_BITS (8193 bits) is skipped */
	static unsigned char big[ARN_JWKS_MAX_RSA_BITS / 8 + 1];
	memset(big, 0xff, sizeof(big));
	big[0] = 1;
	char nb[1500];
	tjwt_b64(big, sizeof(big), nb, sizeof(nb));
	n = snprintf(buf, sizeof(buf),
		     "{\"keys\":[{\"kty\":\"RSA\",\"n\":\"%s\",\"e\":\"AQAB\"},%.*s]}", nb, (int)jl,
		     jwk);
	ks = arn_jwks_parse(buf, (size_t)n, err, sizeof(err));
	assert_non_null(ks);
	assert_int_equal(arn_jwks_count(ks), 1);
	arn_jwks_free(ks);
	/* none usable */
	assert_null(arn_jwks_parse("{\"keys\":[{\"kty\":\"XYZ\"}]}", 24, err, sizeof(err)));
	assert_string_equal(err, "Jwks doesn't have any valid public key");
	assert_null(arn_jwks_parse("{\"keys\":{}}", 11, err, sizeof(err)));
	assert_null(arn_jwks_parse("[]", 2, err, sizeof(err)));
	assert_null(arn_jwks_parse("{\"keys\":[]} x", 13, err, sizeof(err)));
	/* more than ARN_JWKS_MAX_KEYS */
	size_t o = (size_t)snprintf(buf, sizeof(buf), "{\"keys\":[");
	for (int i = 0; i <= ARN_JWKS_MAX_KEYS; i++)
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%.*s", i ? "," : "", (int)jl,
				      jwk);
	o += (size_t)snprintf(buf + o, sizeof(buf) - o, "]}");
	assert_null(arn_jwks_parse(buf, o, err, sizeof(err)));
	assert_non_null(strstr(err, "65 keys"));
	tjwt_free(&k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_b64url_strict),
	    cmocka_unit_test(test_every_alg),
	    cmocka_unit_test(test_alg_none_and_unknown),
	    cmocka_unit_test(test_alg_kty_confusion),
	    cmocka_unit_test(test_kid),
	    cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_time_aud),
	    cmocka_unit_test(test_claims),
	    cmocka_unit_test(test_jwks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
