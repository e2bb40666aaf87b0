/*
 * lib/common's small shared pieces: the hex digit decoder (arn_hex.h), the
 * integer and IPv4 formatters (arn_fmt.h), the Internet checksum
 * (arn_cksum.h), the HTTP reason phrases (arn_http_reason.h) and the JSON tree (arn_json.h,
 * strings decoded by json-c) that the admin endpoint and the access log read.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "arn_cksum.h"
#include "arn_fmt.h"
#include "arn_hex.h"
#include "arn_http_reason.h"
#include "arn_json.h"
#include "arn_subst.h"
#include "arn_table.h"

/* Every byte: the 22 hex digits of either case have their value, nothing
 * else is a digit (no sign, space, 'g' or high byte slips through). */
static void test_hexval_every_byte(void **state)
{
	(void)state;
	int digits = 0;
	for (int c = 0; c < 256; c++) {
		int v = arn_hexval((char)c);
		if (c >= '0' && c <= '9')
			assert_int_equal(v, c - '0');
		else if (c >= 'a' && c <= 'f')
			assert_int_equal(v, c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			assert_int_equal(v, c - 'A' + 10);
		else
			assert_int_equal(v, -1);
		digits += v >= 0;
	}
	assert_int_equal(digits, 22);
}

/* The JSON parser (json-c, for strings) decodes \u escapes in either case
 * and refuses a non-digit in one. */
static void test_json_unicode_escape(void **state)
{
	(void)state;
	static const char in[] = "[\"\\u00e9\\u00C9\"]";
	struct arn_json *j = arn_json_parse(in, strlen(in));
	assert_non_null(j);
	assert_int_equal(j->type, ARN_JSON_ARRAY);
	assert_int_equal(j->n, 1);
	assert_string_equal(j->v[0]->str, "\xc3\xa9\xc3\x89");
	arn_json_free(j);
	static const char bad[] = "[\"\\u00g9\"]";
	assert_null(arn_json_parse(bad, strlen(bad)));
}

/* Parse @p in, write it back compact: byte for byte what came in. */
static void assert_roundtrip(const char *in)
{
	struct arn_json *j = arn_json_parse(in, strlen(in));
	assert_non_null(j);
	struct arn_sb out = ARN_SB_INIT;
	arn_json_write(j, &out, false);
	assert_string_equal(arn_sb_cstr(&out), in);
	arn_sb_free(&out);
	arn_json_free(j);
}

/* Numbers keep their text: json-c would clamp the 20-digit integer to
 * 2^64-1 and print -0 as 0; strings keep their escapes as written. */
static void test_json_literals_byte_for_byte(void **state)
{
	(void)state;
	assert_roundtrip("[99999999999999999999,-99999999999999999999,-0.0,-0,1e400,1E+2,"
			 "0.10,123456789012345678901234567890]");
	assert_roundtrip("99999999999999999999");
	assert_roundtrip("{\"s\":\"\\u00e9\\/\\ud83d\\ude00\\t\xc3\xa9\",\"e\":\"\"}");
	static const char in[] = "[\"\\u00e9\\/\\ud83d\\ude00\"]";
	struct arn_json *j = arn_json_parse(in, strlen(in));
	assert_non_null(j);
	assert_string_equal(j->v[0]->str, "\xc3\xa9/\xf0\x9f\x98\x80");
	arn_json_free(j);
	/* the longest number kept, one byte more refused */
	char num[ARN_JSON_MAX_NUMBER + 2];
	memset(num, '7', sizeof(num) - 1);
	num[sizeof(num) - 1] = '\0';
	assert_null(arn_json_parse(num, ARN_JSON_MAX_NUMBER + 1));
	j = arn_json_parse(num, ARN_JSON_MAX_NUMBER);
	assert_non_null(j);
	assert_int_equal(strlen(j->lit), ARN_JSON_MAX_NUMBER);
	arn_json_free(j);
}

/* Key order is the text's, duplicates stay (the first one is found), and a
 * key written back is escaped again. */
static void test_json_key_order_and_duplicates(void **state)
{
	(void)state;
	assert_roundtrip("{\"b\":1,\"a\":2,\"b\":3,\"\\n\":4}");
	static const char in[] = "{\"b\":1,\"a\":2,\"b\":3}";
	struct arn_json *j = arn_json_parse(in, strlen(in));
	assert_non_null(j);
	assert_int_equal(j->n, 3);
	assert_string_equal(j->keys[0], "b");
	assert_string_equal(j->keys[1], "a");
	assert_string_equal(arn_json_get(j, "b")->lit, "1");
	arn_json_free(j);
}

/* What json-c decodes: a lone surrogate is U+FFFD, \u0000 cuts the value;
 * the literal is kept either way. Raw control characters and invalid UTF-8
 * are refused. */
static void test_json_string_decoding(void **state)
{
	(void)state;
	static const char in[] = "[\"a\\ud800b\",\"x\\u0000y\",\"\\udc00\"]";
	struct arn_json *j = arn_json_parse(in, strlen(in));
	assert_non_null(j);
	assert_string_equal(j->v[0]->str, "a\xef\xbf\xbd"
					  "b");
	assert_string_equal(j->v[1]->str, "x");
	assert_string_equal(j->v[2]->str, "\xef\xbf\xbd");
	assert_string_equal(j->v[0]->lit, "\"a\\ud800b\"");
	arn_json_free(j);
	assert_roundtrip(in);
	const char *bad[] = {"[\"a\tb\"]",  "[\"a\x01\"]", "[\"\xff\"]", "[\"\xc3\"]",
			     "[\"\\u12\"]", "[\"abc]",	   "[\"\\\"]"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_null(arn_json_parse(bad[i], strlen(bad[i])));
	/* a NUL byte in the text is not the end of it */
	assert_null(arn_json_parse("{}\0x", 4));
	assert_null(arn_json_parse("[\"a\0\"]", 6));
}

/* Numbers follow RFC 8259's grammar (json-c 0.16 takes "1.", "00",
 * "NaN" and "Infinity" even in strict mode). */
static void test_json_number_grammar(void **state)
{
	(void)state;
	const char *bad[] = {"1.",   "01",	"[00]",	 "-01", "NaN", "Infinity", "-Infinity",
			     "-",    "+1",	".5",	 "1e",	"1e+", "0x10",	   "-inf",
			     "1.e5", "-5119-1", "1e5e5", "--1", "nan", "[1 2]"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_null(arn_json_parse(bad[i], strlen(bad[i])));
	const char *good[] = {"0", "-0", "0.5", "-1.25e-3", "10E10", "[1, 2 ,3]", " 7 "};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct arn_json *j = arn_json_parse(good[i], strlen(good[i]));
		assert_non_null(j);
		arn_json_free(j);
	}
}

/* ARN_JSON_MAX_DEPTH counts nested values, the innermost scalar too. */
static void test_json_depth(void **state)
{
	(void)state;
	char d[2 * ARN_JSON_MAX_DEPTH + 3];
	for (int n = ARN_JSON_MAX_DEPTH - 1; n <= ARN_JSON_MAX_DEPTH + 1; n++) {
		memset(d, '[', (size_t)n);
		memset(d + n, ']', (size_t)n);
		struct arn_json *j = arn_json_parse(d, 2 * (size_t)n);
		assert_true((j != NULL) == (n <= ARN_JSON_MAX_DEPTH));
		arn_json_free(j);
		memset(d, '[', (size_t)n);
		d[n] = '1';
		memset(d + n + 1, ']', (size_t)n);
		j = arn_json_parse(d, 2 * (size_t)n + 1);
		assert_true((j != NULL) == (n < ARN_JSON_MAX_DEPTH));
		arn_json_free(j);
	}
}

/* Pretty output as /config_dump has always given it (Envoy's admin form:
 * two spaces a level, "key": value, empty containers closed at once). */
static void test_json_pretty(void **state)
{
	(void)state;
	static const char in[] =
	    "{\"configs\":[{\"@type\":\"type.googleapis.com/x\",\"a\":[],"
	    "\"b\":{},\"c\":[1,\"s\\/\"],\"d\":{\"e\":null,\"f\":true}}],\"g\":-0.0}";
	struct arn_json *j = arn_json_parse(in, strlen(in));
	assert_non_null(j);
	struct arn_sb out = ARN_SB_INIT;
	arn_json_write(j, &out, true);
	assert_string_equal(arn_sb_cstr(&out), "{\n"
					       "  \"configs\": [\n"
					       "    {\n"
					       "      \"@type\": \"type.googleapis.com/x\",\n"
					       "      \"a\": [],\n"
					       "      \"b\": {},\n"
					       "      \"c\": [\n"
					       "        1,\n"
					       "        \"s\\/\"\n"
					       "      ],\n"
					       "      \"d\": {\n"
					       "        \"e\": null,\n"
					       "        \"f\": true\n"
					       "      }\n"
					       "    }\n"
					       "  ],\n"
					       "  \"g\": -0.0\n"
					       "}");
	arn_sb_free(&out);
	arn_json_free(j);
}

static void test_reason_phrases(void **state)
{
	(void)state;
	static const struct {
		unsigned status;
		const char *reason;
	} want[] = {
	    {100, "Continue"},
	    {200, "OK"},
	    {204, "No Content"},
	    {301, "Moved Permanently"},
	    {304, "Not Modified"},
	    {400, "Bad Request"},
	    {404, "Not Found"},
	    {405, "Method Not Allowed"},
	    {408, "Request Timeout"},
	    {411, "Length Required"},
	    {413, "Payload Too Large"},
	    {414, "URI Too Long"},
	    {421, "Misdirected Request"},
	    {429, "Too Many Requests"},
	    {431, "Request Header Fields Too Large"},
	    {500, "Internal Server Error"},
	    {501, "Not Implemented"},
	    {502, "Bad Gateway"},
	    {503, "Service Unavailable"},
	    {504, "Gateway Timeout"},
	    {505, "HTTP Version Not Supported"},
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		assert_string_equal(arn_http_reason(want[i].status), want[i].reason);
	/* a code without a registered phrase, and what is no status at all */
	assert_string_equal(arn_http_reason(299), "Unknown");
	assert_string_equal(arn_http_reason(0), "Unknown");
	assert_string_equal(arn_http_reason(1000), "Unknown");
}

/* The formatters print what snprintf's "%llu", "%lld" and "%u.%u.%u.%u"
 * print, at every digit count and at the extremes, and write no byte past
 * what they return. */
static void test_fmt_matches_snprintf(void **state)
{
	(void)state;
	char got[32], want[32];
	uint64_t u[] = {0,
			1,
			9,
			10,
			99,
			100,
			999,
			1000,
			65535,
			4294967295u,
			4294967296u,
			UINT64_MAX / 10,
			UINT64_MAX - 1,
			UINT64_MAX};
	for (size_t i = 0; i < sizeof(u) / sizeof(u[0]); i++) {
		memset(got, 'x', sizeof(got));
		int n = arn_fmt_u64(u[i], got);
		int w = snprintf(want, sizeof(want), "%llu", (unsigned long long)u[i]);
		assert_int_equal(n, w);
		assert_true(n <= ARN_FMT_U64_MAX);
		assert_memory_equal(got, want, (size_t)n);
		assert_int_equal(got[n], 'x');
	}
	/* every power of ten and its neighbours */
	for (uint64_t p = 1; p <= UINT64_MAX / 10; p *= 10)
		for (uint64_t v = p - 1; v <= p + 1; v++) {
			int n = arn_fmt_u64(v, got);
			assert_int_equal(
			    n, snprintf(want, sizeof(want), "%llu", (unsigned long long)v));
			assert_memory_equal(got, want, (size_t)n);
		}
	int64_t s[] = {0,   1,	     -1,       9,	  -9,	     10,
		       -10, 1234567, -1234567, INT64_MAX, INT64_MIN, INT64_MIN + 1};
	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
		memset(got, 'x', sizeof(got));
		int n = arn_fmt_i64(s[i], got);
		int w = snprintf(want, sizeof(want), "%lld", (long long)s[i]);
		assert_int_equal(n, w);
		assert_true(n <= ARN_FMT_I64_MAX);
		assert_memory_equal(got, want, (size_t)n);
		assert_int_equal(got[n], 'x');
	}
	/* every octet value in every position */
	for (unsigned b = 0; b < 256; b++)
		for (int sh = 0; sh < 32; sh += 8) {
			uint32_t a = ((uint32_t)b << sh) | (sh ? 0x01000000u >> (32 - sh) : 0);
			memset(got, 'x', sizeof(got));
			int n = arn_fmt_ip4(a, got);
			int w = snprintf(want, sizeof(want), "%u.%u.%u.%u", a >> 24,
					 (a >> 16) & 255, (a >> 8) & 255, a & 255);
			assert_int_equal(n, w);
			assert_true(n <= ARN_FMT_IP4_MAX);
			assert_memory_equal(got, want, (size_t)n);
			assert_int_equal(got[n], 'x');
		}
	assert_int_equal(arn_fmt_ip4(0xffffffffu, got), 15);
	assert_memory_equal(got, "255.255.255.255", 15);
}

/* ---- the Internet checksum (arn_cksum.h) ---------------------------------------------- */

/* RFC 1071 as written: 16-bit words in memory order (a last odd byte
 * padded with a zero), the 64-bit partial sum as its four 16-bit pieces,
 * end-around carries one word at a time. What rte_raw_cksum() computes. */
static uint16_t cksum_ref(const uint8_t *p, size_t len, uint64_t sum)
{
	uint32_t s = 0;
	for (int k = 0; k < 4; k++)
		s += (uint16_t)(sum >> (16 * k));
	for (size_t i = 0; i + 1 < len; i += 2) {
		uint16_t w;
		memcpy(&w, p + i, 2);
		s += w;
	}
	if (len & 1) {
		uint8_t last[2] = {p[len - 1], 0};
		uint16_t w;
		memcpy(&w, last, 2);
		s += w;
	}
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

static uint64_t xs(uint64_t *x)
{
	*x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
	return *x;
}

/* @p f against cksum_ref: every length 0..@p max_len at every offset
 * within 16 bytes of @p buf, with a zero partial sum every @p zero_every
 * lengths and random ones (up to 64 bits) otherwise. */
static void sweep_against_ref(uint16_t (*f)(const void *, size_t, uint64_t), const uint8_t *buf,
			      unsigned max_len, unsigned zero_every, uint64_t *x)
{
	for (unsigned off = 0; off < 16; off++)
		for (unsigned len = 0; len <= max_len; len++) {
			uint64_t sum = len % zero_every == 0 ? 0 : xs(x) >> (len % 64);
			uint16_t a = f(buf + off, len, sum);
			uint16_t b = cksum_ref(buf + off, len, sum);
			if (a != b)
				fail_msg("len %u off %u sum %#llx: %#x != %#x", len, off,
					 (unsigned long long)sum, a, b);
		}
}

/* arn_cksum_raw_short is inline: an address for sweep_against_ref */
static uint16_t short_sum(const void *p, size_t len, uint64_t sum)
{
	return arn_cksum_raw_short(p, len, sum);
}

/* Every length up to 700 (each tail of 1-7 bytes, each of the 8-, 16-, 32-
 * and 64-byte blocks alone and together, and both sides of the AVX2 lanes'
 * 512-byte threshold) at every offset within 16 bytes,
 * with random bytes and random partial sums up to 64 bits; then random
 * lengths up to 9000 (a jumbo frame). */
static void test_cksum_matches_reference(void **state)
{
	(void)state;
	static uint8_t buf[9100];
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)xs(&x);
	sweep_against_ref(arn_cksum_raw, buf, 700, 3, &x);
	for (int i = 0; i < 20000; i++) {
		size_t off = xs(&x) % 64, len = xs(&x) % (sizeof(buf) - 64);
		uint64_t sum = xs(&x);
		if (arn_cksum_raw(buf + off, len, sum) != cksum_ref(buf + off, len, sum))
			fail_msg("len %zu off %zu", len, off);
	}
}

/* The carries: all ones, where every add carries and the folds go all the
 * way round; all zeros with a zero sum (0, never 0xffff: a zero sum stays
 * zero); the largest partial sum. */
static void test_cksum_carries(void **state)
{
	(void)state;
	static uint8_t ones[2000], zeros[2000];
	memset(ones, 0xff, sizeof(ones));
	for (unsigned len = 0; len < sizeof(ones); len += 1 + len / 16) {
		assert_int_equal(arn_cksum_raw(ones, len, 0), cksum_ref(ones, len, 0));
		assert_int_equal(arn_cksum_raw(ones, len, UINT64_MAX),
				 cksum_ref(ones, len, UINT64_MAX));
		assert_int_equal(arn_cksum_raw(zeros, len, 0), 0);
	}
	assert_int_equal(arn_cksum_raw(zeros, 0, UINT64_MAX), 0xffff);
	assert_int_equal(arn_cksum_fold(0), 0);
	assert_int_equal(arn_cksum_fold(0xffff), 0xffff);
	assert_int_equal(arn_cksum_fold(0x10000), 1);
	assert_int_equal(arn_cksum_fold(UINT64_MAX), 0xffff);
	assert_int_equal(arn_cksum_fold(0xffffffff00000001ull), 1);
	uint64_t x = 12345;
	for (int i = 0; i < 100000; i++) {
		uint64_t v = xs(&x) >> (i % 64);
		assert_int_equal(arn_cksum_fold(v), cksum_ref(NULL, 0, v));
	}
}

/* The sum reads nothing past its last byte: buffers that end right at an
 * unmapped page (a read beyond would fault), every length and offset. */
static void test_cksum_reads_no_further(void **state)
{
	(void)state;
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *map =
	    mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(map != MAP_FAILED);
	assert_int_equal(mprotect(map + pg, (size_t)pg, PROT_NONE), 0);
	uint64_t x = 7;
	for (long i = 0; i < pg; i++)
		map[i] = (uint8_t)xs(&x);
	for (unsigned len = 0; len <= 200; len++) {
		const uint8_t *p = map + pg - len;
		assert_int_equal(arn_cksum_raw(p, len, 0), cksum_ref(p, len, 0));
	}
	munmap(map, (size_t)pg * 2);
}

/*
 * A header value's operators read as Envoy's commandWithArgsRegex reads
 * them (^%([A-Z0-9_]+)(?:\((.*?)\))?(?::([0-9]+))?%): the argument runs
 * to the first ')' after which the rest matches, a length is digits, a
 * command is upper case; and the check reads nothing past the value's
 * last byte: every prefix of each value, ending right at an unmapped
 * page (a read beyond would fault), is refused or taken, never read
 * further.
 */
static void test_subst_grammar_and_bounds(void **state)
{
	(void)state;
	struct arn_subst_tok t;
	static const char a[] = "%REQ(a)b)%";
	assert_int_equal(arn_subst_token(a, sizeof(a) - 1, &t), 0);
	assert_int_equal(t.len, sizeof(a) - 1);
	assert_int_equal(t.arg_len, 3); /* "a)b": the first ) after which % follows */
	static const char l[] = "%REQ(x):12%tail";
	assert_int_equal(arn_subst_token(l, sizeof(l) - 1, &t), 0);
	assert_int_equal(t.len, 11);
	assert_true(t.has_len);
	assert_int_equal(t.max_len, 12);
	assert_int_equal(arn_subst_token("%REQ(x):%", 9, &t), -1);
	assert_int_equal(arn_subst_token("%req%", 5, &t), -1);
	assert_int_equal(arn_subst_token("%A(\n)%", 6, &t), -1);
	assert_int_equal(arn_subst_token("%PROTOCOL", 9, &t), -1);
	assert_int_equal(arn_subst_lookup("REQ", 3), ARN_SUBST_REQ);
	assert_int_equal(arn_subst_lookup("RE", 2), ARN_SUBST_NONE);
	char err[256];
	assert_int_equal(arn_subst_check("100%% %PROTOCOL%%%", 18, err, sizeof(err)), 0);
	assert_int_equal(arn_subst_check("%START_TIME(%s)%", 16, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "%START_TIME%: Envoy's command operator is not supported by "
				    "Arion"));

	static const char *const vals[] = {
	    "%REQ(x-a?x-b):4% %%",
	    "%DOWNSTREAM_REMOTE_ADDRESS%",
	    "%REQ(a)b)%",
	    "%UPSTREAM_METADATA(a:b)%",
	    "50%",
	    "%REQ(x):123456789012345678901%",
	    "%%%",
	};
	long pg = sysconf(_SC_PAGESIZE);
	char *map =
	    mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(map != MAP_FAILED);
	assert_int_equal(mprotect(map + pg, (size_t)pg, PROT_NONE), 0);
	for (size_t v = 0; v < sizeof(vals) / sizeof(vals[0]); v++)
		for (size_t n = 0; n <= strlen(vals[v]); n++) {
			char *p = map + pg - n;
			memcpy(p, vals[v], n);
			int rc = arn_subst_check(p, n, err, sizeof(err));
			assert_true(rc == 0 || rc == -EINVAL);
			if (n && p[0] == '%' && !(n > 1 && p[1] == '%'))
				(void)arn_subst_token(p, n, &t);
		}
	munmap(map, (size_t)pg * 2);
}

/* The IPv4 header sum: a real header sums to 0xffff; the complement of
 * the sum with a zero field is the field; each of its bits matters. */
static void test_cksum_ip4_hdr(void **state)
{
	(void)state;
	uint8_t h[20] = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
			 0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};
	assert_int_equal(arn_cksum_ip4_hdr(h), 0xffff);
	h[10] = h[11] = 0;
	uint16_t ck = (uint16_t)~arn_cksum_ip4_hdr(h);
	memcpy(h + 10, &ck, 2);
	assert_int_equal(h[10], 0xb8);
	assert_int_equal(h[11], 0x61);
	uint64_t x = 99;
	for (int i = 0; i < 10000; i++) {
		for (int k = 0; k < 20; k++)
			h[k] = (uint8_t)xs(&x);
		if (i % 4 == 0)
			memset(h + 12, 0xff, 8);
		assert_int_equal(arn_cksum_ip4_hdr(h), cksum_ref(h, 20, 0));
	}
}

/* Nor before its first byte (the last 1-7 bytes are read as the top of
 * the buffer's last 8, which only a buffer of 8 bytes or more has):
 * buffers that start right after an unmapped page, every length. */
static void test_cksum_reads_nothing_before(void **state)
{
	(void)state;
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *map =
	    mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(map != MAP_FAILED);
	assert_int_equal(mprotect(map, (size_t)pg, PROT_NONE), 0);
	uint64_t x = 11;
	for (long i = pg; i < 2 * pg; i++)
		map[i] = (uint8_t)xs(&x);
	for (unsigned len = 0; len <= 200; len++) {
		const uint8_t *p = map + pg;
		uint64_t sum = xs(&x);
		assert_int_equal(arn_cksum_raw(p, len, sum), cksum_ref(p, len, sum));
	}
	munmap(map, (size_t)pg * 2);
}

/* arn_cksum_raw_short (the inline entry lib/net sums a short segment
 * with) gives arn_cksum_raw's sum on both sides of its bound: every length
 * 0..2000 at every offset within 16 bytes, random bytes and partial sums;
 * and it reads nothing past the last byte, nor before the first. */
static void test_cksum_short_matches_reference(void **state)
{
	(void)state;
	static uint8_t buf[2100];
	uint64_t x = 0x2545f4914f6cdd1dull;
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)xs(&x);
	sweep_against_ref(short_sum, buf, 2000, 5, &x);
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *map =
	    mmap(NULL, (size_t)pg * 3, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(map != MAP_FAILED);
	assert_int_equal(mprotect(map, (size_t)pg, PROT_NONE), 0);
	assert_int_equal(mprotect(map + 2 * pg, (size_t)pg, PROT_NONE), 0);
	for (long i = pg; i < 2 * pg; i++)
		map[i] = (uint8_t)xs(&x);
	for (unsigned len = 0; len <= ARN_CKSUM_SHORT_MAX + 8; len++) {
		const uint8_t *end = map + 2 * pg - len, *start = map + pg;
		assert_int_equal(arn_cksum_raw_short(end, len, 0), cksum_ref(end, len, 0));
		assert_int_equal(arn_cksum_raw_short(start, len, 1), cksum_ref(start, len, 1));
	}
	munmap(map, (size_t)pg * 3);
}

#if !defined(__SANITIZE_ADDRESS__) /* (the tables are on the heap there) */
/* The smaps entry of the mapping holding @p p: its Rss in KiB and whether
 * its VmFlags say "hg" (MADV_HUGEPAGE); false when not found. */
static bool smaps_of(const void *p, long *rss_kb, bool *hg)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	if (!f)
		return false;
	char line[512];
	bool in = false, found = false;
	*rss_kb = -1;
	*hg = false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			if (found)
				break;
			in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
			found = in;
			continue;
		}
		if (!in)
			continue;
		if (strncmp(line, "Rss:", 4) == 0)
			*rss_kb = strtol(line + 4, NULL, 10);
		if (strncmp(line, "VmFlags:", 8) == 0)
			*hg = strstr(line, " hg") != NULL;
	}
	fclose(f);
	return found;
}
#endif

/* arn_table_zalloc: zeroed, 64-byte aligned, writable to its last byte,
 * and (but under ASan, where the tables stay on the heap for its
 * redzones and leak check) faulted in at once (Rss covers it before any
 * write) and advised into huge pages when 2 MiB or more. */
static void test_table_zeroed_faulted_in_and_huge(void **state)
{
	(void)state;
	static const size_t sizes[] = {1, 100, 4096, (2u << 20) - 64, 5u << 20};
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k];
		uint8_t *p = arn_table_zalloc(n);
		assert_non_null(p);
		assert_int_equal((uintptr_t)p % 64, 0);
#if !defined(__SANITIZE_ADDRESS__)
		long rss;
		bool hg;
		assert_true(smaps_of(p, &rss, &hg));
		assert_true(rss * 1024 >= (long)n); /* faulted in before any write */
		assert_int_equal(hg, n + 64 >= (2u << 20));
#endif
		for (size_t i = 0; i < n; i++)
			if (p[i] != 0)
				fail_msg("byte %zu of %zu not zero", i, n);
		p[0] = 1;
		p[n - 1] = 1;
		arn_table_free(p);
	}
	arn_table_free(NULL);
	errno = 0;
	assert_null(arn_table_zalloc(SIZE_MAX - 10));
	assert_int_equal(errno, ENOMEM);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hexval_every_byte),
	    cmocka_unit_test(test_table_zeroed_faulted_in_and_huge),
	    cmocka_unit_test(test_json_unicode_escape),
	    cmocka_unit_test(test_json_literals_byte_for_byte),
	    cmocka_unit_test(test_json_key_order_and_duplicates),
	    cmocka_unit_test(test_json_string_decoding),
	    cmocka_unit_test(test_json_number_grammar),
	    cmocka_unit_test(test_json_depth),
	    cmocka_unit_test(test_json_pretty),
	    cmocka_unit_test(test_reason_phrases),
	    cmocka_unit_test(test_fmt_matches_snprintf),
	    cmocka_unit_test(test_cksum_matches_reference),
	    cmocka_unit_test(test_cksum_carries),
	    cmocka_unit_test(test_cksum_reads_no_further),
	    cmocka_unit_test(test_cksum_ip4_hdr),
	    cmocka_unit_test(test_cksum_reads_nothing_before),
	    cmocka_unit_test(test_subst_grammar_and_bounds),
	    cmocka_unit_test(test_cksum_short_matches_reference),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
