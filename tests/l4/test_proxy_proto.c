/*
 * lib/l4's PROXY protocol parser (arn_proxy_proto.h): every input is fed
 * whole, one byte at a time and in every two-piece split, each piece right
 * before a guard page (a read past a piece crashes), and must give the
 * same answer; the bytes after the header are never taken. Vectors from
 * HAProxy's proxy-protocol.txt and Envoy's proxy_protocol_test.cc.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "arn_proxy_proto.h"

#define V2SIG "\x0d\x0a\x0d\x0a\x00\x0d\x0a\x51\x55\x49\x54\x0a"

static char *g_map;
static size_t g_pg;

/* @p n bytes copied so that they end right at a guard page */
static const uint8_t *guarded(const void *src, size_t n, unsigned slot)
{
	/* two 68 KB areas, each followed by a guard page */
	size_t area = (ARN_PP_V2_MAX + 4096 + g_pg - 1) / g_pg * g_pg;
	char *end = g_map + slot * (area + g_pg) + area;
	memcpy(end - n, src, n);
	return (const uint8_t *)end - n;
}

static int setup(void **st)
{
	(void)st;
	g_pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t area = (ARN_PP_V2_MAX + 4096 + g_pg - 1) / g_pg * g_pg;
	size_t total = 2 * (area + g_pg);
	g_map = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(g_map != MAP_FAILED);
	for (unsigned i = 0; i < 2; i++)
		assert_int_equal(mprotect(g_map + i * (area + g_pg) + area, g_pg, PROT_NONE), 0);
	return 0;
}

/* One run of @p n bytes in pieces: @p split 0 whole, 1 byte at a time,
 * else two pieces at @p split. @return what the last call returned, the
 * bytes the header took in *took (counted over all pieces). */
static ssize_t feed(struct arn_pp *p, const uint8_t *in, size_t n, size_t split, size_t *took)
{
	arn_pp_init(p);
	*took = 0;
	if (split == 0 || split >= n) {
		ssize_t r = arn_pp_parse(p, guarded(in, n, 0), n);
		*took = r >= 0 ? (size_t)r : 0;
		return r;
	}
	if (split == 1) {
		for (size_t i = 0; i < n; i++) {
			ssize_t r = arn_pp_parse(p, guarded(in + i, 1, i & 1), 1);
			if (r != ARN_AGAIN) {
				*took = r >= 0 ? i + (size_t)r : 0;
				return r;
			}
		}
		return ARN_AGAIN;
	}
	ssize_t r = arn_pp_parse(p, guarded(in, split, 0), split);
	if (r != ARN_AGAIN) {
		*took = r >= 0 ? (size_t)r : 0;
		return r;
	}
	r = arn_pp_parse(p, guarded(in + split, n - split, 1), n - split);
	*took = r >= 0 ? split + (size_t)r : 0;
	return r;
}

/* @p in (@p n bytes) must give @p want (>= 0: a header of that many
 * bytes; ARN_AGAIN; else the error @p err) in every split. */
static void expect(const void *in, size_t n, ssize_t want, enum arn_pp_err err, struct arn_pp *out)
{
	size_t splits = n < 200 ? n : 200;
	for (size_t s = 0; s <= splits; s++) {
		struct arn_pp p;
		size_t took;
		ssize_t r = feed(&p, in, n, s, &took);
		if (want >= 0) {
			assert_true(r >= 0);
			assert_int_equal(took, (size_t)want);
			assert_int_equal(arn_pp_result(&p)->header_len, (uint32_t)want);
			assert_int_equal(arn_pp_fed(&p), (uint32_t)want);
		} else if (want == ARN_AGAIN) {
			assert_int_equal(r, ARN_AGAIN);
			assert_null(arn_pp_result(&p));
		} else {
			assert_int_equal(r, ARN_PP_ERROR);
			assert_int_equal(arn_pp_error(&p), err);
			assert_null(arn_pp_result(&p));
			/* refused for good */
			assert_int_equal(arn_pp_parse(&p, "\r\n", 2), ARN_PP_ERROR);
		}
		if (s == 0 && out)
			*out = p;
	}
}

#define S(lit) lit, sizeof(lit) - 1

static void test_v1_tcp4(void **st)
{
	(void)st;
	struct arn_pp p;
	/* the header and then a request: only the header is taken */
	static const char in[] =
	    "PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\nGET / HTTP/1.1\r\n";
	expect(S(in), 47, 0, &p);
	const struct arn_pp_result *r = arn_pp_result(&p);
	assert_int_equal(r->version, 1);
	assert_false(r->local);
	assert_int_equal(r->family, 4);
	assert_int_equal(r->src4, 0xc0a80001);
	assert_int_equal(r->dst4, 0xc0a8000b);
	assert_int_equal(r->src_port, 56324);
	assert_int_equal(r->dst_port, 443);
	/* Envoy's V1Basic */
	expect(S("PROXY TCP4 1.2.3.4 253.253.253.253 65535 1234\r\nmore data"), 47, 0, &p);
	assert_int_equal(arn_pp_result(&p)->src_port, 65535);
	/* ports 0 and the shortest addresses */
	expect(S("PROXY TCP4 1.0.0.1 1.0.0.2 0 0\r\n"), 32, 0, NULL);
}

static void test_v1_tcp6_unknown(void **st)
{
	(void)st;
	struct arn_pp p;
	static const char in[] = "PROXY TCP6 1:2:3::4 5:6::7:8 1234 5678\r\nx";
	expect(S(in), sizeof(in) - 2, 0, &p);
	const struct arn_pp_result *r = arn_pp_result(&p);
	assert_int_equal(r->family, 6);
	assert_int_equal(r->src6[1], 1);
	assert_int_equal(r->src6[15], 4);
	assert_int_equal(r->dst6[15], 8);
	assert_int_equal(r->src_port, 1234);
	/* the longest TCP6 line is 104 bytes */
	static const char lng[] = "PROXY TCP6 efff:ffff:ffff:ffff:ffff:ffff:ffff:fffe "
				  "efff:ffff:ffff:ffff:ffff:ffff:ffff:fffe 65535 65535\r\n";
	assert_int_equal(sizeof(lng) - 1, 104);
	expect(S(lng), 104, 0, NULL);
	/* UNKNOWN: the peer's addresses stay, whatever follows the word */
	expect(S("PROXY UNKNOWN\r\nGET"), 15, 0, &p);
	assert_true(arn_pp_result(&p)->local);
	expect(S("PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n"), 35, 0, &p);
	assert_true(arn_pp_result(&p)->local);
	assert_int_equal(arn_pp_result(&p)->src_port, 0);
}

static void test_v1_length(void **st)
{
	(void)st;
	char line[160];
	/* UNKNOWN padded to exactly 107 bytes: taken; 108: refused */
	memset(line, 'x', sizeof(line));
	memcpy(line, "PROXY UNKNOWN ", 14);
	memcpy(line + 105, "\r\n", 2);
	expect(line, 107, 107, 0, NULL);
	memcpy(line + 105, "x\r\n", 3);
	expect(line, 108, ARN_PP_ERROR, ARN_PP_E_V1_TOO_LONG, NULL);
	/* no CRLF at all: refused at byte 108, whatever comes */
	expect(line, 150, ARN_PP_ERROR, ARN_PP_E_V1_TOO_LONG, NULL);
	/* incomplete: more needed */
	expect(S("PROXY TCP4 1.2.3.4 1.2.3.5 1 2\r"), ARN_AGAIN, 0, NULL);
	expect(S("PROX"), ARN_AGAIN, 0, NULL);
	expect(S("\r\n\r\n\0\r\nQU"), ARN_AGAIN, 0, NULL);
}

static void test_v1_errors(void **st)
{
	(void)st;
	static const struct {
		const char *in;
		enum arn_pp_err e;
	} v[] = {
	    {"GET / HTTP/1.1\r\n", ARN_PP_E_NOT_PROXY},
	    {"PROXY\r\n", ARN_PP_E_NOT_PROXY},
	    {"proxy TCP4 1.2.3.4 1.2.3.5 1 2\r\n", ARN_PP_E_NOT_PROXY},
	    {"PROXY  TCP4 1.2.3.4 1.2.3.5 1 2\r\n", ARN_PP_E_V1_BAD_LINE},
	    {"PROXY TCP4 1.2.3.4  1.2.3.5 1 2\r\n", ARN_PP_E_V1_BAD_LINE},
	    {"PROXY TCP4 1.2.3.4 1.2.3.5 1 2 \r\n", ARN_PP_E_V1_BAD_FIELDS},
	    {"PROXY TCP4 1.2.3.4 1.2.3.5 1 2\n", ARN_PP_E_V1_BAD_LINE},
	    {"PROXY TCP4 1.2.3.4 1.2.3.5 1 2\rX", ARN_PP_E_V1_BAD_LINE},
	    {"PROXY UNKNOWN\n", ARN_PP_E_V1_BAD_LINE},
	    {"PROXY UNKNOWN x\ny\r\n", ARN_PP_E_V1_BAD_LINE},
	    {"PROXY TCP5 1.2.3.4 1.2.3.5 1 2\r\n", ARN_PP_E_V1_BAD_PROTO},
	    {"PROXY tcp4 1.2.3.4 1.2.3.5 1 2\r\n", ARN_PP_E_V1_BAD_PROTO},
	    {"PROXY UNKNOWNX\r\n", ARN_PP_E_V1_BAD_PROTO},
	    {"PROXY TCP4\r\n", ARN_PP_E_V1_BAD_FIELDS},
	    {"PROXY TCP4 1.2.3.4 1.2.3.5 1\r\n", ARN_PP_E_V1_BAD_FIELDS},
	    {"PROXY TCP4 1.2.3.4 1.2.3.5\r\n", ARN_PP_E_V1_BAD_FIELDS},
	    {"PROXY TCP4 1.2.3.4 1.2.3.5 1 2 3\r\n", ARN_PP_E_V1_BAD_FIELDS},
	    /* addresses: inet_pton's rules, the protocol's family */
	    {"PROXY TCP4 1.2.3 1.2.3.5 1 2\r\n", ARN_PP_E_V1_BAD_ADDR},
	    {"PROXY TCP4 1.2.3.256 1.2.3.5 1 2\r\n", ARN_PP_E_V1_BAD_ADDR},
	    {"PROXY TCP4 01.2.3.4 1.2.3.5 1 2\r\n", ARN_PP_E_V1_BAD_ADDR},
	    {"PROXY TCP4 ::1 1.2.3.5 1 2\r\n", ARN_PP_E_V1_BAD_ADDR},
	    {"PROXY TCP6 1.2.3.4 1.2.3.5 1 2\r\n", ARN_PP_E_V1_BAD_ADDR},
	    {"PROXY TCP4 1.2.3.4 host 1 2\r\n", ARN_PP_E_V1_BAD_ADDR},
	    {"PROXY TCP6 1:2:3:4:5:6:7:8:9 ::2 1 2\r\n", ARN_PP_E_V1_BAD_ADDR},
	    /* ports: decimal, no sign, no leading zero, at most 65535 */
	    {"PROXY TCP4 1.2.3.4 1.2.3.5 65536 2\r\n", ARN_PP_E_V1_BAD_PORT},
	    {"PROXY TCP4 1.2.3.4 1.2.3.5 1 099999\r\n", ARN_PP_E_V1_BAD_PORT},
	    {"PROXY TCP4 1.2.3.4 1.2.3.5 01 2\r\n", ARN_PP_E_V1_BAD_PORT},
	    {"PROXY TCP4 1.2.3.4 1.2.3.5 +1 2\r\n", ARN_PP_E_V1_BAD_PORT},
	    {"PROXY TCP4 1.2.3.4 1.2.3.5 -1 2\r\n", ARN_PP_E_V1_BAD_PORT},
	    {"PROXY TCP4 1.2.3.4 1.2.3.5 0x10 2\r\n", ARN_PP_E_V1_BAD_PORT},
	    /* unicast only, as Envoy */
	    {"PROXY TCP4 0.0.0.0 1.2.3.5 1 2\r\n", ARN_PP_E_NOT_UNICAST},
	    {"PROXY TCP4 1.2.3.4 255.255.255.255 1 2\r\n", ARN_PP_E_NOT_UNICAST},
	    {"PROXY TCP4 224.0.0.1 1.2.3.5 1 2\r\n", ARN_PP_E_NOT_UNICAST},
	    {"PROXY TCP6 :: ::2 1 2\r\n", ARN_PP_E_NOT_UNICAST},
	    {"PROXY TCP6 ::1 ff02::1 1 2\r\n", ARN_PP_E_NOT_UNICAST},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		print_message("%s", v[i].in);
		expect(v[i].in, strlen(v[i].in), ARN_PP_ERROR, v[i].e, NULL);
	}
	/* a NUL in a field */
	expect(S("PROXY TCP4 1.2.3.4\0 1.2.3.5 1 2\r\n"), ARN_PP_ERROR, ARN_PP_E_V1_BAD_ADDR, NULL);
}

/* NOT_PROXY takes none of the bytes at and after the one that decided */
static void test_not_proxy_takes_nothing(void **st)
{
	(void)st;
	struct arn_pp p;
	arn_pp_init(&p);
	assert_int_equal(arn_pp_parse(&p, "POST / HTTP/1.1\r\n", 17), ARN_PP_ERROR);
	assert_int_equal(arn_pp_error(&p), ARN_PP_E_NOT_PROXY);
	assert_int_equal(arn_pp_fed(&p), 1); /* "P" matched "PROXY " */
	arn_pp_init(&p);
	assert_int_equal(arn_pp_parse(&p, "\x16\x03\x01", 3), ARN_PP_ERROR);
	assert_int_equal(arn_pp_fed(&p), 0);
	arn_pp_init(&p);
	assert_int_equal(arn_pp_parse(&p, "\r\n\r\nX", 5), ARN_PP_ERROR);
	assert_int_equal(arn_pp_fed(&p), 4);
}

static void test_v2_inet(void **st)
{
	(void)st;
	struct arn_pp p;
	/* Envoy's V2Basic: 1.2.3.4:773 -> 0.1.1.2:2, then data */
	static const char in[] = V2SIG "\x21\x11\x00\x0c\x01\x02\x03\x04\x00\x01\x01\x02\x03\x05"
				       "\x00\x02"
				       "moredata";
	expect(in, sizeof(in) - 1, 28, 0, &p);
	const struct arn_pp_result *r = arn_pp_result(&p);
	assert_int_equal(r->version, 2);
	assert_false(r->local);
	assert_int_equal(r->family, 4);
	assert_int_equal(r->src4, 0x01020304);
	assert_int_equal(r->dst4, 0x00010102);
	assert_int_equal(r->src_port, 773);
	assert_int_equal(r->dst_port, 2);
	assert_int_equal(r->n_tlvs, 0);
	/* DGRAM is taken as Envoy takes it */
	static const char dg[] = V2SIG "\x21\x12\x00\x0c\x01\x02\x03\x04\x00\x01\x01\x02\x03\x05"
				       "\x00\x02";
	expect(dg, sizeof(dg) - 1, 28, 0, NULL);
}

static void test_v2_inet6_local(void **st)
{
	(void)st;
	struct arn_pp p;
	/* Envoy's V2BasicV6: 1:2:3::4 port 8 -> 1:100:200:3:: port 2 */
	static const char in6[] =
	    V2SIG "\x21\x22\x00\x24"
		  "\x00\x01\x00\x02\x00\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00\x04"
		  "\x00\x01\x01\x00\x02\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00\x00"
		  "\x00\x08\x00\x02"
		  "more";
	expect(in6, sizeof(in6) - 1, 52, 0, &p);
	const struct arn_pp_result *r = arn_pp_result(&p);
	assert_int_equal(r->family, 6);
	assert_int_equal(r->src6[15], 4);
	assert_int_equal(r->src_port, 8);
	assert_int_equal(r->dst_port, 2);
	/* LOCAL: addresses and TLVs skipped whatever they say (Envoy's
	 * V2LocalConnection / V2LocalConnectionExtension), the peer stays */
	static const char loc[] = V2SIG "\x20\x00\x00\x00"
					"more";
	expect(loc, sizeof(loc) - 1, 16, 0, &p);
	assert_true(arn_pp_result(&p)->local);
	static const char locx[] = V2SIG "\x20\x11\x00\x10\x01\x02\x03\x04\x00\x01\x01\x02\x03\x05"
					 "\x00\x02\xff\xff\xff\xff"
					 "more";
	expect(locx, sizeof(locx) - 1, 32, 0, &p);
	assert_true(arn_pp_result(&p)->local);
	assert_int_equal(arn_pp_result(&p)->tlv_bytes, 16);
	/* LOCAL with AF_UNIX's 216 bytes: skipped too */
	uint8_t lu[16 + 216 + 3];
	memcpy(lu, V2SIG "\x20\x31\x00\xd8", 16);
	memset(lu + 16, 0x41, 216 + 3);
	expect(lu, sizeof(lu), 232, 0, NULL);
}

static void test_v2_tlvs(void **st)
{
	(void)st;
	struct arn_pp p;
	/* two TLVs (an empty one, a 3-byte authority), then data */
	static const char in[] = V2SIG "\x21\x11\x00\x15\x01\x02\x03\x04\x00\x01\x01\x02\x03\x05"
				       "\x00\x02"
				       "\x04\x00\x00"
				       "\x02\x00\x03"
				       "foo"
				       "GET";
	expect(in, sizeof(in) - 1, 37, 0, &p);
	assert_int_equal(arn_pp_result(&p)->n_tlvs, 2);
	assert_int_equal(arn_pp_result(&p)->tlv_bytes, 9);
	/* a TLV whose value runs past the length (Envoy's V2ExtensionsLargerThanInitMaxReadBytes
	 * differs; this is its V2ParseExtensionsLargeThanBuffer's error half) */
	static const char over[] = V2SIG "\x21\x11\x00\x11\x01\x02\x03\x04\x00\x01\x01\x02\x03\x05"
					 "\x00\x02"
					 "\x02\x00\x03"
					 "fo";
	expect(over, sizeof(over) - 1, ARN_PP_ERROR, ARN_PP_E_V2_BAD_TLV, NULL);
	/* a TLV head cut by the length: 1 and 2 bytes of it */
	static const char cut1[] = V2SIG "\x21\x11\x00\x0d\x01\x02\x03\x04\x00\x01\x01\x02\x03\x05"
					 "\x00\x02\x02";
	expect(cut1, sizeof(cut1) - 1, ARN_PP_ERROR, ARN_PP_E_V2_BAD_TLV, NULL);
	static const char cut2[] = V2SIG "\x21\x11\x00\x0e\x01\x02\x03\x04\x00\x01\x01\x02\x03\x05"
					 "\x00\x02\x02\x00";
	expect(cut2, sizeof(cut2) - 1, ARN_PP_ERROR, ARN_PP_E_V2_BAD_TLV, NULL);
}

/* the longest header the format allows: 65,535 bytes of TLVs walked */
static void test_v2_max(void **st)
{
	(void)st;
	static uint8_t big[ARN_PP_V2_MAX + 8];
	memcpy(big, V2SIG "\x21\x11\xff\xff\x01\x02\x03\x04\x00\x01\x01\x02\x03\x05\x00\x02", 28);
	/* 65,523 bytes of TLVs: 255 of 3 + 253, then one of 3 + 253 - ... */
	size_t at = 28, left = 65535 - 12;
	unsigned n = 0;
	while (left) {
		size_t v = left - 3 > 1000 ? 1000 : left - 3;
		big[at] = 0xe0;
		big[at + 1] = (uint8_t)(v >> 8);
		big[at + 2] = (uint8_t)v;
		memset(big + at + 3, 'v', v);
		at += 3 + v;
		left -= 3 + v;
		n++;
	}
	memcpy(big + at, "GET ", 4);
	struct arn_pp p;
	size_t took;
	assert_true(feed(&p, big, at + 4, 0, &took) >= 0);
	assert_int_equal(took, ARN_PP_V2_MAX);
	assert_int_equal(arn_pp_result(&p)->n_tlvs, n);
	assert_true(feed(&p, big, at + 4, 1, &took) >= 0);
	assert_int_equal(took, ARN_PP_V2_MAX);
	assert_true(feed(&p, big, at + 4, 30000, &took) >= 0);
	assert_int_equal(took, ARN_PP_V2_MAX);
}

static void test_v2_errors(void **st)
{
	(void)st;
	static const struct {
		const char *in;
		size_t n;
		enum arn_pp_err e;
	} v[] = {
#define E(lit, e) {lit, sizeof(lit) - 1, e}
	    E(V2SIG "\x11\x11\x00\x0c", ARN_PP_E_V2_BAD_VERSION),
	    E(V2SIG "\x31\x11\x00\x0c", ARN_PP_E_V2_BAD_VERSION),
	    E(V2SIG "\x22\x11\x00\x0c", ARN_PP_E_V2_BAD_COMMAND),
	    E(V2SIG "\x2f\x11\x00\x0c", ARN_PP_E_V2_BAD_COMMAND),
	    E(V2SIG "\x21\x00\x00\x00", ARN_PP_E_V2_BAD_FAMILY), /* PROXY + AF_UNSPEC */
	    E(V2SIG "\x21\x31\x00\xd8", ARN_PP_E_V2_BAD_FAMILY), /* AF_UNIX */
	    E(V2SIG "\x21\x41\x00\x0c", ARN_PP_E_V2_BAD_FAMILY),
	    E(V2SIG "\x21\x10\x00\x0c", ARN_PP_E_V2_BAD_TRANSPORT),
	    E(V2SIG "\x21\x13\x00\x0c", ARN_PP_E_V2_BAD_TRANSPORT),
	    E(V2SIG "\x21\x11\x00\x0b", ARN_PP_E_V2_SHORT_LENGTH),
	    E(V2SIG "\x21\x21\x00\x0c", ARN_PP_E_V2_SHORT_LENGTH),
	    E(V2SIG "\x21\x11\x00\x0c\x00\x00\x00\x00\x01\x01\x01\x02\x03\x05\x00\x02",
	      ARN_PP_E_NOT_UNICAST),
	    E(V2SIG "\x21\x11\x00\x0c\x01\x02\x03\x04\xe0\x00\x00\x01\x03\x05\x00\x02",
	      ARN_PP_E_NOT_UNICAST),
	    E("\r\n\r\n\0\r\nQUIX\n", ARN_PP_E_NOT_PROXY),
#undef E
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		print_message("v2 error %zu\n", i);
		expect(v[i].in, v[i].n, ARN_PP_ERROR, v[i].e, NULL);
	}
	/* every reason has a counter name */
	for (int e = 0; e < ARN_PP_E_COUNT; e++)
		assert_true(strlen(arn_pp_err_name((enum arn_pp_err)e)) > 0);
	assert_string_equal(arn_pp_err_name(ARN_PP_E_V2_BAD_TLV), "v2_bad_tlv");
}

/* The writer (arn_pp_write): the exact bytes Envoy's upstream
 * proxy_protocol transport socket sends, and each read back by the parser
 * to the same addresses. */
static void test_write(void **st)
{
	(void)st;
	uint8_t o[ARN_PP_WRITE_MAX + 8];
	struct arn_pp p;
	struct arn_pp_addrs a = {0xc0a80001, 0x0a00000b, 56324, 443};
	size_t n = arn_pp_write(o, 1, &a);
	assert_int_equal(n, 44);
	assert_memory_equal(o, "PROXY TCP4 192.168.0.1 10.0.0.11 56324 443\r\n", n);
	expect(o, n, (ssize_t)n, 0, &p);
	const struct arn_pp_result *r = arn_pp_result(&p);
	assert_int_equal(r->version, 1);
	assert_int_equal(r->src4, a.src);
	assert_int_equal(r->dst4, a.dst);
	assert_int_equal(r->src_port, a.sport);
	assert_int_equal(r->dst_port, a.dport);
	/* the longest: ARN_PP_WRITE_MAX */
	struct arn_pp_addrs big = {0xfefefefe, 0xdfdfdfdf, 65535, 65535};
	n = arn_pp_write(o, 1, &big);
	assert_int_equal(n, 56);
	assert_int_equal(n, ARN_PP_WRITE_MAX);
	assert_memory_equal(o, "PROXY TCP4 254.254.254.254 223.223.223.223 65535 65535\r\n", n);
	expect(o, n, (ssize_t)n, 0, NULL);
	/* zeros in every position: 1.0.100.10 port 0 */
	struct arn_pp_addrs z = {0x01006400 | 10, 0x0a000001, 0, 80};
	n = arn_pp_write(o, 1, &z);
	assert_memory_equal(o, "PROXY TCP4 1.0.100.10 10.0.0.1 0 80\r\n", n);
	expect(o, n, (ssize_t)n, 0, NULL);
	/* v1 without a downstream */
	n = arn_pp_write(o, 1, NULL);
	assert_memory_equal(o, "PROXY UNKNOWN\r\n", n);
	assert_int_equal(n, 15);
	expect(o, n, (ssize_t)n, 0, &p);
	assert_true(arn_pp_result(&p)->local);
	/* v2 PROXY, AF_INET STREAM */
	n = arn_pp_write(o, 2, &a);
	assert_int_equal(n, 28);
	assert_memory_equal(o,
			    V2SIG "\x21\x11\x00\x0c"
				  "\xc0\xa8\x00\x01\x0a\x00\x00\x0b\xdc\x04\x01\xbb",
			    n);
	expect(o, n, (ssize_t)n, 0, &p);
	r = arn_pp_result(&p);
	assert_int_equal(r->version, 2);
	assert_false(r->local);
	assert_int_equal(r->family, 4);
	assert_int_equal(r->src4, a.src);
	assert_int_equal(r->dst4, a.dst);
	assert_int_equal(r->src_port, a.sport);
	assert_int_equal(r->dst_port, a.dport);
	/* v2 LOCAL (a health check): Envoy's generateV2LocalHeader */
	n = arn_pp_write(o, 2, NULL);
	assert_int_equal(n, 16);
	assert_memory_equal(o, V2SIG "\x20\x00\x00\x00", n);
	expect(o, n, (ssize_t)n, 0, &p);
	assert_true(arn_pp_result(&p)->local);
	assert_int_equal(arn_pp_write(o, 0, &a), 0);
	assert_int_equal(arn_pp_write(o, 3, &a), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_v1_tcp4),
	    cmocka_unit_test(test_v1_tcp6_unknown),
	    cmocka_unit_test(test_v1_length),
	    cmocka_unit_test(test_v1_errors),
	    cmocka_unit_test(test_not_proxy_takes_nothing),
	    cmocka_unit_test(test_v2_inet),
	    cmocka_unit_test(test_v2_inet6_local),
	    cmocka_unit_test(test_v2_tlvs),
	    cmocka_unit_test(test_v2_max),
	    cmocka_unit_test(test_v2_errors),
	    cmocka_unit_test(test_write),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
