/*
 * libFuzzer target: the oauth2 filter's parsers of a peer's bytes
 * (http_oauth2.h): the token endpoint's JSON answer
 * (http_oauth2_parse_answer, a hostile or broken identity provider), a
 * callback's query (http_oauth2_parse_callback: code, state, its url and
 * nonce, from any client), a Cookie header value (http_oauth2_cookie_in)
 * and an id token's exp (http_oauth2_jwt_exp).
 *
 * Input: byte 0 chooses the decoding buffer's size (a small one reaches
 * -ENOSPC); the rest is copied to a buffer of exactly its size (ASan sees
 * any read past it) and given to every parser.
 *
 * Besides "never crash, leak, hang or read out of bounds", the oracle: an
 * answer's tokens lie within the decoding buffer and the bytes it used; a
 * callback's code lies within the query, its url starts http:// or
 * https:// and holds no byte below 0x21 (it becomes a Location); a
 * cookie's value lies within the header value.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_oauth2.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_oauth2: %s:%d: %s\n", __FILE__, __LINE__, #cond);    \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static bool within(const char *p, size_t n, const char *b, size_t cap)
{
	return !n || (p && p >= b && p + n <= b + cap);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t cap = data[0] & 1 ? 8 : 3 * HTTP_OAUTH2_TOKEN_MAX + 3;
	size_t n = size - 1;
	char *in = malloc(n ? n : 1);
	char *buf = malloc(2 * n + cap + 1);
	if (!in || !buf)
		abort();
	memcpy(in, data + 1, n);
	struct http_oauth2_answer a;
	if (http_oauth2_parse_answer(in, n, buf, cap, &a) == 0) {
		CHECK(within(a.access, a.access_len, buf, cap));
		CHECK(within(a.id, a.id_len, buf, cap));
		CHECK(within(a.refresh, a.refresh_len, buf, cap));
		CHECK(!a.has_access || a.access);
	}
	const char *code, *url, *nonce;
	size_t cl, ul, nl;
	if (http_oauth2_parse_callback(in, n, buf, 2 * n, &code, &cl, &url, &ul, &nonce, &nl) ==
	    0) {
		CHECK(within(code, cl, in, n));
		CHECK(within(url, ul, buf, 2 * n) && within(nonce, nl, buf, 2 * n));
		CHECK(ul > 7 && (!memcmp(url, "http://", 7) || !memcmp(url, "https://", 8)));
		for (size_t i = 0; i < ul; i++)
			CHECK((unsigned char)url[i] > 0x20 && (unsigned char)url[i] != 0x7f);
	}
	size_t vl = 0;
	const char *v = http_oauth2_cookie_in(in, n, "OauthHMAC", 9, &vl);
	if (v)
		CHECK(within(v, vl, in, n));
	(void)http_oauth2_jwt_exp(in, n);
	free(in);
	free(buf);
	return 0;
}
