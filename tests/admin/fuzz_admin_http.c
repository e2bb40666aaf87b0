/*
 * libFuzzer target: the admin server's request parsing (lib/admin's
 * http_parse.h): arn_admin_parse_head on arbitrary bytes, then, for a head
 * it accepts, what the server does with it next: the path percent-decoded
 * and the query's parameters looked up (arn_admin_query).
 *
 * The input sits at the very end of a heap block of its exact size, so
 * AddressSanitizer reports any read past it. Checked on every input:
 *   - an accepted head lies within the input, its method is a token, its
 *     target starts with '/', its body length is within the limit, and
 *     every shorter prefix of it is "need more" (the server, which parses
 *     again as bytes arrive, sees the same head however the bytes come);
 *   - a refusal carries a status the server can answer and a reason;
 *   - "need more" only below the head size limit.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arn_admin.h"
#include "http_parse.h"

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_admin_http: %s\n", what);
		abort();
	}
}

static void queries(const char *target, size_t n)
{
	char *t = malloc(n + 1);
	check(t != NULL, "out of memory");
	memcpy(t, target, n);
	t[n] = '\0';
	char *q = strchr(t, '?');
	const char *query = "";
	if (q) {
		*q = '\0';
		query = q + 1;
	}
	char path[1024];
	size_t pl = arn_admin_pct_decode(t, strlen(t), path, sizeof(path), false);
	check(pl < sizeof(path) && path[pl] == '\0', "percent-decoding overran its buffer");
	struct arn_admin_request req = {.method = "GET", .path = path, .query = query};
	static const char *const keys[] = {"filter", "format", "usedonly", "resource", "mask", ""};
	char v[64], tiny[2];
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *r = arn_admin_query(&req, keys[i], v, sizeof(v));
		check(r == NULL || (r == v && strlen(v) < sizeof(v)), "query value overran");
		r = arn_admin_query(&req, keys[i], tiny, sizeof(tiny));
		check(r == NULL || strlen(tiny) < sizeof(tiny), "query value overran");
	}
	free(t);
}

static bool is_tchar(unsigned char c)
{
	return c > 0x20 && c < 0x7f && strchr("\"(),/:;<=>?@[\\]{}", c) == NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size ? size : 1);
	check(buf != NULL, "out of memory");
	memcpy(buf, data, size);
	struct arn_admin_head h;
	ssize_t n = arn_admin_parse_head(buf, size, &h);
	if (n > 0) {
		check((size_t)n <= size, "head longer than the input");
		check(h.method >= buf && h.method + h.method_len <= buf + n, "method outside");
		check(h.target >= buf && h.target + h.target_len <= buf + n, "target outside");
		check(h.method_len > 0 && h.method_len <= ARN_ADMIN_MAX_METHOD, "method length");
		for (size_t i = 0; i < h.method_len; i++)
			check(is_tchar((unsigned char)h.method[i]), "method not a token");
		check(h.target_len > 0 && h.target[0] == '/', "target not origin-form");
		check(h.target_len <= ARN_ADMIN_MAX_TARGET, "target too long");
		for (size_t i = 0; i < h.target_len; i++)
			check((unsigned char)h.target[i] > 0x20 &&
				  (unsigned char)h.target[i] < 0x7f,
			      "target not visible ASCII");
		check(h.minor <= 1, "version");
		check(h.content_length <= ARN_ADMIN_MAX_BODY, "body beyond the limit");
		check((size_t)n <= ARN_ADMIN_MAX_HEAD, "head beyond the limit");
		/* Prefixes (a few: each costs a parse) need more. */
		struct arn_admin_head p;
		size_t cuts[] = {0, (size_t)n / 2, (size_t)n - 1};
		for (size_t i = 0; i < 3; i++) {
			char *pre = malloc(cuts[i] ? cuts[i] : 1);
			check(pre != NULL, "out of memory");
			memcpy(pre, buf, cuts[i]);
			check(arn_admin_parse_head(pre, cuts[i], &p) == ARN_AGAIN,
			      "a prefix of an accepted head is not \"need more\"");
			free(pre);
		}
		queries(h.target, h.target_len);
	} else if (n == -EBADMSG) {
		check(h.error != NULL && *h.error, "refusal without a reason");
		check(h.status == 400 || h.status == 411 || h.status == 413 || h.status == 414 ||
			  h.status == 431 || h.status == 501 || h.status == 505,
		      "refusal with an unexpected status");
	} else {
		check(n == ARN_AGAIN, "unexpected return value");
		check(size <= ARN_ADMIN_MAX_HEAD, "need more beyond the head limit");
	}
	/* Percent-decoding on its own, into buffers of every small size. */
	char out[8];
	for (size_t cap = 0; cap <= sizeof(out); cap++) {
		size_t o = arn_admin_pct_decode(buf, size, out, cap, size & 1);
		check(cap == 0 ? o == 0 : o < cap && out[o] == '\0', "percent-decoding overran");
	}
	free(buf);
	return 0;
}
