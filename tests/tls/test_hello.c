/*
 * ClientHello inspection (the tls_inspector's core) and the server-name
 * index. Every input is parsed whole, one byte at a time and in random
 * pieces, each piece copied right before a PROT_NONE page so that a read
 * past the end of a piece faults; all must give the same answer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sys/mman.h>
#include <unistd.h>

#include <openssl/ssl.h>

#include "arn_tls.h"
#include "hello_gen.h"
#include "tests.h"
#include "tls_harness.h"

/* ---- guarded feeding ----------------------------------------------------------------- */

static enum arn_tls_hello_status feed_guarded(struct arn_tls_hello_parser *p, const uint8_t *b,
					      size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t npg = (n + pg - 1) / pg;
	uint8_t *map =
	    mmap(NULL, (npg + 1) * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(map != MAP_FAILED);
	uint8_t *guard = map + npg * pg;
	assert_int_equal(mprotect(guard, pg, PROT_NONE), 0);
	memcpy(guard - n, b, n);
	enum arn_tls_hello_status st = arn_tls_hello_parse(p, guard - n, n);
	munmap(map, (npg + 1) * pg);
	return st;
}

/* Parse @p in with pieces ending at @p cuts; the final status and result. */
static enum arn_tls_hello_status parse_split(const uint8_t *in, size_t n, const size_t *cuts,
					     size_t ncuts, uint32_t max, struct arn_tls_hello *out)
{
	struct arn_tls_hello_parser p;
	arn_tls_hello_init(&p, max);
	enum arn_tls_hello_status st = ARN_TLS_HELLO_AGAIN;
	size_t at = 0;
	for (size_t i = 0; i <= ncuts; i++) {
		size_t end = i < ncuts ? cuts[i] : n;
		if (end <= at)
			continue;
		st = feed_guarded(&p, in + at, end - at);
		at = end;
	}
	*out = *arn_tls_hello_result(&p);
	return st;
}

/* Whole, byte by byte and random splits must agree; returns the status. */
static enum arn_tls_hello_status check_all(const uint8_t *in, size_t n, uint32_t max,
					   struct arn_tls_hello *res)
{
	struct arn_tls_hello whole, other;
	enum arn_tls_hello_status st = parse_split(in, n, NULL, 0, max, &whole);
	/* one byte at a time (without guard pages: a few thousand mmaps) */
	struct arn_tls_hello_parser p;
	arn_tls_hello_init(&p, max);
	enum arn_tls_hello_status s1 = ARN_TLS_HELLO_AGAIN;
	for (size_t i = 0; i < n; i++) {
		uint8_t b = in[i];
		s1 = arn_tls_hello_parse(&p, &b, 1);
	}
	assert_int_equal(s1, st);
	assert_memory_equal(arn_tls_hello_result(&p), &whole, sizeof(whole));
	srand((unsigned)n);
	for (int r = 0; r < 8; r++) {
		size_t cuts[6];
		size_t nc = 0;
		for (int k = 0; k < 6; k++)
			if (n > 1)
				cuts[nc++] = 1 + (size_t)rand() % (n - 1);
		for (size_t a = 0; a < nc; a++) /* sort */
			for (size_t b = a + 1; b < nc; b++)
				if (cuts[b] < cuts[a]) {
					size_t t = cuts[a];
					cuts[a] = cuts[b];
					cuts[b] = t;
				}
		assert_int_equal(parse_split(in, n, cuts, nc, max, &other), st);
		assert_memory_equal(&other, &whole, sizeof(whole));
	}
	if (res)
		*res = whole;
	return st;
}

/* ---- real clients ----------------------------------------------------------------------- */

static void test_hello_real_clients(void **state)
{
	(void)state;
	static const char *const alpn2[] = {"h2", "http/1.1", NULL};
	size_t n;
	struct arn_tls_hello h;

	/* a TLS 1.3 client with SNI and ALPN */
	uint8_t *in =
	    hg_client_hello(&(struct hg_opts){.sni = "www.Example.com", .alpn = alpn2}, &n);
	assert_int_equal(check_all(in, n, 0, &h), ARN_TLS_HELLO_DONE);
	assert_true(h.has_sni);
	assert_string_equal(h.sni, "www.Example.com"); /* as sent */
	assert_int_equal(h.sni_len, 15);
	assert_true(h.has_alpn);
	assert_int_equal(h.n_alpn, 2);
	assert_string_equal(arn_tls_hello_alpn(&h, 0), "h2");
	assert_string_equal(arn_tls_hello_alpn(&h, 1), "http/1.1");
	assert_true(h.has_versions);
	assert_int_equal(h.versions[0], TLS1_3_VERSION);
	assert_true(h.has_sigalgs && h.n_sigalgs > 4);
	assert_int_equal(h.legacy_version, TLS1_2_VERSION);
	assert_int_equal(h.record_version >> 8, 3);
	assert_int_equal(h.hello_len + 5, n); /* one record */
	free(in);

	/* TLS 1.2 only, no SNI, no ALPN, our own sigalgs */
	in = hg_client_hello(&(struct hg_opts){.max_version = TLS1_2_VERSION,
					       .sigalgs = "ECDSA+SHA256:RSA-PSS+SHA256"},
			     &n);
	assert_int_equal(check_all(in, n, 0, &h), ARN_TLS_HELLO_DONE);
	assert_false(h.has_sni);
	assert_false(h.has_alpn);
	assert_false(h.has_versions);
	assert_int_equal(h.n_sigalgs, 2);
	assert_int_equal(h.sigalgs[0], 0x0403); /* ecdsa_secp256r1_sha256 */
	assert_int_equal(h.sigalgs[1], 0x0804); /* rsa_pss_rsae_sha256 */
	free(in);

	/* the padding extension and an OCSP status request */
	in = hg_client_hello(
	    &(struct hg_opts){.sni = "a.example.com", .padding = true, .status_request = true}, &n);
	assert_int_equal(check_all(in, n, 0, &h), ARN_TLS_HELLO_DONE);
	assert_string_equal(h.sni, "a.example.com");
	free(in);
}

/* More ALPN protocols than kept: the first ones, and a flag. */
static void test_hello_alpn_truncated(void **state)
{
	(void)state;
	static char names[40][16];
	const char *list[41];
	for (int i = 0; i < 40; i++) {
		snprintf(names[i], sizeof(names[i]), "proto-%02d", i);
		list[i] = names[i];
	}
	list[40] = NULL;
	size_t n;
	struct arn_tls_hello h;
	uint8_t *in = hg_client_hello(&(struct hg_opts){.alpn = list}, &n);
	assert_int_equal(check_all(in, n, 0, &h), ARN_TLS_HELLO_DONE);
	assert_int_equal(h.n_alpn, ARN_TLS_HELLO_MAX_ALPN);
	assert_true(h.alpn_truncated);
	assert_string_equal(arn_tls_hello_alpn(&h, 15), "proto-15");
	free(in);
}

/* A ClientHello cut into records of every size, down to one byte each,
 * gives the same result: BoringSSL (Envoy's tls_inspector) and OpenSSL
 * take a ClientHello in any number of records, and clients that split it
 * on purpose (against middleboxes reading SNI) exist. */
static void test_hello_fragmented_records(void **state)
{
	(void)state;
	static const char *const alpn[] = {"http/1.1", NULL};
	size_t n;
	uint8_t *in =
	    hg_client_hello(&(struct hg_opts){.sni = "frag.example.com", .alpn = alpn}, &n);
	struct arn_tls_hello want;
	assert_int_equal(check_all(in, n, 0, &want), ARN_TLS_HELLO_DONE);
	size_t body = n - 5;
	for (size_t rec = 1; rec <= 700; rec = rec < 8 ? rec + 1 : rec * 3) {
		size_t nrec = (body + rec - 1) / rec;
		uint8_t *out = malloc(body + 5 * nrec);
		size_t o = 0;
		for (size_t at = 0; at < body; at += rec) {
			size_t l = body - at < rec ? body - at : rec;
			out[o++] = 22;
			out[o++] = in[1];
			out[o++] = in[2];
			out[o++] = (uint8_t)(l >> 8);
			out[o++] = (uint8_t)l;
			memcpy(out + o, in + 5 + at, l);
			o += l;
		}
		struct arn_tls_hello h;
		assert_int_equal(check_all(out, o, 0, &h), ARN_TLS_HELLO_DONE);
		assert_string_equal(h.sni, "frag.example.com");
		assert_int_equal(h.n_alpn, 1);
		assert_int_equal(h.n_sigalgs, want.n_sigalgs);
		free(out);
	}
	free(in);
}

/* ---- not TLS, malformed, too large ------------------------------------------------------ */

static void test_hello_not_tls(void **state)
{
	(void)state;
	static const char http[] = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
	assert_int_equal(check_all((const uint8_t *)http, sizeof(http) - 1, 0, NULL),
			 ARN_TLS_HELLO_NOT_TLS);
	/* decided on the first byte: no need to wait for more */
	struct arn_tls_hello_parser p;
	arn_tls_hello_init(&p, 0);
	assert_int_equal(arn_tls_hello_parse(&p, "G", 1), ARN_TLS_HELLO_NOT_TLS);
	/* an SSLv2-compatible hello */
	static const uint8_t v2[] = {0x80, 0x2e, 0x01, 0x03, 0x01};
	assert_int_equal(check_all(v2, sizeof(v2), 0, NULL), ARN_TLS_HELLO_NOT_TLS);
	/* an alert record, a bad major version, empty and oversized records */
	static const uint8_t alert[] = {21, 3, 3, 0, 2, 2, 40};
	static const uint8_t major[] = {22, 2, 0, 0, 4};
	static const uint8_t empty[] = {22, 3, 1, 0, 0};
	static const uint8_t huge[] = {22, 3, 1, 0x40, 0x01};
	assert_int_equal(check_all(alert, sizeof(alert), 0, NULL), ARN_TLS_HELLO_NOT_TLS);
	assert_int_equal(check_all(major, sizeof(major), 0, NULL), ARN_TLS_HELLO_NOT_TLS);
	assert_int_equal(check_all(empty, sizeof(empty), 0, NULL), ARN_TLS_HELLO_NOT_TLS);
	assert_int_equal(check_all(huge, sizeof(huge), 0, NULL), ARN_TLS_HELLO_NOT_TLS);
	/* a ServerHello (type 2) is not a ClientHello */
	static const uint8_t sh[] = {22, 3, 3, 0, 4, 2, 0, 0, 0};
	assert_int_equal(check_all(sh, sizeof(sh), 0, NULL), ARN_TLS_HELLO_NOT_TLS);
	/* a partial record header is undecided */
	static const uint8_t part[] = {22, 3};
	assert_int_equal(check_all(part, sizeof(part), 0, NULL), ARN_TLS_HELLO_AGAIN);
}

/* A minimal hand-made ClientHello whose extension block we control. */
static size_t make_hello(uint8_t *out, const uint8_t *ext, size_t ext_len, bool with_ext_len)
{
	uint8_t body[2048];
	size_t b = 0;
	body[b++] = 3;
	body[b++] = 3;
	memset(body + b, 0x11, 32);
	b += 32;
	body[b++] = 0; /* session id */
	body[b++] = 0;
	body[b++] = 2;
	body[b++] = 0x13;
	body[b++] = 0x01;
	body[b++] = 1;
	body[b++] = 0; /* null compression */
	if (with_ext_len) {
		body[b++] = (uint8_t)(ext_len >> 8);
		body[b++] = (uint8_t)ext_len;
	}
	if (ext_len)
		memcpy(body + b, ext, ext_len);
	b += ext_len;
	size_t o = 0;
	out[o++] = 22;
	out[o++] = 3;
	out[o++] = 1;
	out[o++] = (uint8_t)((b + 4) >> 8);
	out[o++] = (uint8_t)(b + 4);
	out[o++] = 1;
	out[o++] = 0;
	out[o++] = (uint8_t)(b >> 8);
	out[o++] = (uint8_t)b;
	memcpy(out + o, body, b);
	return o + b;
}

#define HELLO(ext) make_hello(buf, ext, sizeof(ext), true)

static void test_hello_malformed(void **state)
{
	(void)state;
	uint8_t buf[4096];
	struct arn_tls_hello h;
	size_t n;

	/* well-formed: SNI "ab", ALPN "h2", versions {1.3}, sigalgs {0x0403} */
	static const uint8_t good[] = {0, 0,  0, 7, 0, 5, 0, 0,	  2,   'a', 'b', /* SNI */
				       0, 16, 0, 5, 0, 3, 2, 'h', '2',		 /* ALPN */
				       0, 43, 0, 3, 2, 3, 4,			 /* versions */
				       0, 13, 0, 4, 0, 2, 4, 3};		 /* sigalgs */
	n = HELLO(good);
	assert_int_equal(check_all(buf, n, 0, &h), ARN_TLS_HELLO_DONE);
	assert_string_equal(h.sni, "ab");
	assert_string_equal(arn_tls_hello_alpn(&h, 0), "h2");
	assert_int_equal(h.versions[0], 0x0304);
	assert_int_equal(h.sigalgs[0], 0x0403);

	/* a legacy_version above any known one: a server answers with its
	 * highest (RFC 5246 E.1), so the inspector must call it TLS too (the
	 * first-flight fuzzer found OpenSSL answering one it called NOT_TLS) */
	n = HELLO(good);
	buf[9] = 0xd5;
	assert_int_equal(check_all(buf, n, 0, &h), ARN_TLS_HELLO_DONE);
	assert_int_equal(h.legacy_version, 0xd503);
	assert_string_equal(h.sni, "ab");

	/* no extensions at all (a TLS 1.0 client) */
	n = make_hello(buf, NULL, 0, false);
	assert_int_equal(check_all(buf, n, 0, &h), ARN_TLS_HELLO_DONE);
	assert_false(h.has_sni);

	/* an unknown extension, skipped; an empty one too */
	static const uint8_t unknown[] = {0xfe, 0xfe, 0, 3, 1, 2, 3, 0xaa, 0xaa, 0, 0};
	n = HELLO(unknown);
	assert_int_equal(check_all(buf, n, 0, &h), ARN_TLS_HELLO_DONE);

	/* SNI list length one short / one long of the extension */
	static const uint8_t sni_short[] = {0, 0, 0, 7, 0, 4, 0, 0, 2, 'a', 'b'};
	static const uint8_t sni_long[] = {0, 0, 0, 7, 0, 6, 0, 0, 2, 'a', 'b'};
	assert_int_equal(check_all(buf, HELLO(sni_short), 0, NULL), ARN_TLS_HELLO_NOT_TLS);
	assert_int_equal(check_all(buf, HELLO(sni_long), 0, NULL), ARN_TLS_HELLO_NOT_TLS);
	/* a host name running past its list */
	static const uint8_t sni_over[] = {0, 0, 0, 7, 0, 5, 0, 0, 3, 'a', 'b'};
	assert_int_equal(check_all(buf, HELLO(sni_over), 0, NULL), ARN_TLS_HELLO_NOT_TLS);
	/* an empty host name, a NUL inside one, two host names */
	static const uint8_t sni_empty[] = {0, 0, 0, 5, 0, 3, 0, 0, 0};
	static const uint8_t sni_nul[] = {0, 0, 0, 7, 0, 5, 0, 0, 2, 'a', 0};
	static const uint8_t sni_two[] = {0, 0, 0, 12, 0, 10, 0, 0, 2, 'a', 'b', 0, 0, 2, 'c', 'd'};
	assert_int_equal(check_all(buf, HELLO(sni_empty), 0, NULL), ARN_TLS_HELLO_NOT_TLS);
	assert_int_equal(check_all(buf, HELLO(sni_nul), 0, NULL), ARN_TLS_HELLO_NOT_TLS);
	assert_int_equal(check_all(buf, HELLO(sni_two), 0, NULL), ARN_TLS_HELLO_NOT_TLS);
	/* another name type is skipped; the host_name after it is read */
	static const uint8_t sni_other[] = {0, 0,   0,	 12, 0, 10, 7,	 0,
					    2, 'x', 'y', 0,  0, 2,  'c', 'd'};
	assert_int_equal(check_all(buf, HELLO(sni_other), 0, &h), ARN_TLS_HELLO_DONE);
	assert_string_equal(h.sni, "cd");
	/* a server_name extension twice (RFC 8446 4.2) */
	static const uint8_t sni_dup[] = {0, 0, 0, 7, 0, 5, 0, 0, 2, 'a', 'b',
					  0, 0, 0, 7, 0, 5, 0, 0, 2, 'c', 'd'};
	assert_int_equal(check_all(buf, HELLO(sni_dup), 0, NULL), ARN_TLS_HELLO_NOT_TLS);
	/* an empty ALPN name (RFC 7301 3.1), an empty ALPN list */
	static const uint8_t alpn_empty_name[] = {0, 16, 0, 5, 0, 3, 2, 'h', '2', 0, 16};
	static const uint8_t alpn_zero[] = {0, 16, 0, 4, 0, 2, 0, 0};
	static const uint8_t alpn_nolist[] = {0, 16, 0, 2, 0, 0};
	assert_int_equal(check_all(buf, HELLO(alpn_empty_name), 0, NULL), ARN_TLS_HELLO_NOT_TLS);
	assert_int_equal(check_all(buf, HELLO(alpn_zero), 0, NULL), ARN_TLS_HELLO_NOT_TLS);
	assert_int_equal(check_all(buf, HELLO(alpn_nolist), 0, NULL), ARN_TLS_HELLO_NOT_TLS);
	/* an odd supported_versions / signature_algorithms length */
	static const uint8_t sv_odd[] = {0, 43, 0, 4, 3, 3, 4, 3};
	static const uint8_t sa_odd[] = {0, 13, 0, 5, 0, 3, 4, 3, 1};
	assert_int_equal(check_all(buf, HELLO(sv_odd), 0, NULL), ARN_TLS_HELLO_NOT_TLS);
	assert_int_equal(check_all(buf, HELLO(sa_odd), 0, NULL), ARN_TLS_HELLO_NOT_TLS);
	/* an extension running past the block */
	static const uint8_t ext_over[] = {0xaa, 0xaa, 0, 9, 1, 2};
	assert_int_equal(check_all(buf, HELLO(ext_over), 0, NULL), ARN_TLS_HELLO_NOT_TLS);
	/* the extension block shorter than the message says */
	n = make_hello(buf, unknown, sizeof(unknown), true);
	buf[n - sizeof(unknown) - 1]--; /* ext_len one less than the bytes */
	assert_int_equal(check_all(buf, n, 0, NULL), ARN_TLS_HELLO_NOT_TLS);
	/* a session id of 33 bytes */
	n = make_hello(buf, NULL, 0, false);
	buf[9 + 34] = 33;
	assert_int_equal(check_all(buf, n, 0, NULL), ARN_TLS_HELLO_NOT_TLS);
	/* a host name of 256 bytes: OpenSSL would refuse it */
	uint8_t longsni[4 + 2 + 3 + 256];
	size_t L = 256;
	longsni[0] = 0;
	longsni[1] = 0;
	longsni[2] = (uint8_t)((L + 5) >> 8);
	longsni[3] = (uint8_t)(L + 5);
	longsni[4] = (uint8_t)((L + 3) >> 8);
	longsni[5] = (uint8_t)(L + 3);
	longsni[6] = 0;
	longsni[7] = (uint8_t)(L >> 8);
	longsni[8] = (uint8_t)L;
	memset(longsni + 9, 'a', L);
	assert_int_equal(check_all(buf, HELLO(longsni), 0, NULL), ARN_TLS_HELLO_NOT_TLS);
	/* 255 is fine */
	longsni[3]--;
	longsni[5]--;
	longsni[7] = 0;
	longsni[8] = 255;
	n = make_hello(buf, longsni, sizeof(longsni) - 1, true);
	assert_int_equal(check_all(buf, n, 0, &h), ARN_TLS_HELLO_DONE);
	assert_int_equal(h.sni_len, 255);
}

static void test_hello_too_large(void **state)
{
	(void)state;
	/* a declared length over the bound is decided at once */
	static const uint8_t big[] = {22, 3, 1, 0x40, 0x00, 1, 0x00, 0x40, 0x00};
	assert_int_equal(check_all(big, sizeof(big), 0, NULL), ARN_TLS_HELLO_TOO_LARGE);
	/* the bound is the caller's: 500 bytes, and a padded hello over it */
	size_t n;
	uint8_t *in =
	    hg_client_hello(&(struct hg_opts){.sni = "a.example.com", .padding = true}, &n);
	assert_true(n > 512);
	assert_int_equal(check_all(in, n, 500, NULL), ARN_TLS_HELLO_TOO_LARGE);
	/* the bound counts the bytes read, record headers included, as
	 * Envoy's max_client_hello_size does */
	assert_int_equal(check_all(in, n, (uint32_t)n, NULL), ARN_TLS_HELLO_DONE);
	assert_int_equal(check_all(in, n, (uint32_t)n - 1, NULL), ARN_TLS_HELLO_TOO_LARGE);
	/* the hard cap applies to any value asked for */
	struct arn_tls_hello_parser p;
	arn_tls_hello_init(&p, 1u << 30);
	assert_int_equal(p.max_hello, ARN_TLS_HELLO_HARD_MAX);
	/* one byte per record: six bytes read per byte of ClientHello, so
	 * many records reach the bound sooner */
	size_t body = n - 5, fl = 6 * body;
	uint8_t *frag = malloc(fl);
	for (size_t i = 0; i < body; i++) {
		uint8_t *r = frag + 6 * i;
		r[0] = 22;
		r[1] = 3;
		r[2] = 1;
		r[3] = 0;
		r[4] = 1;
		r[5] = in[5 + i];
	}
	assert_int_equal(check_all(frag, fl, (uint32_t)fl, NULL), ARN_TLS_HELLO_DONE);
	assert_int_equal(check_all(frag, fl, (uint32_t)fl - 1, NULL), ARN_TLS_HELLO_TOO_LARGE);
	/* decided as soon as the record headers so far and the declared
	 * length make more than the bound: here at the eighth record header */
	arn_tls_hello_init(&p, (uint32_t)(body + 5 * 8 - 1));
	assert_int_equal(arn_tls_hello_parse(&p, frag, 6 * 7 + 4), ARN_TLS_HELLO_AGAIN);
	arn_tls_hello_init(&p, (uint32_t)(body + 5 * 8 - 1));
	assert_int_equal(arn_tls_hello_parse(&p, frag, 6 * 7 + 5), ARN_TLS_HELLO_TOO_LARGE);
	free(frag);
	free(in);
}

static void test_hello_counters_and_sni_ext(void **state)
{
	(void)state;
	struct arn_tls_inspector_stats s = {0};
	struct arn_tls_hello h = {.has_sni = true, .has_alpn = true, .n_alpn = 1};
	arn_tls_inspector_count(&s, ARN_TLS_HELLO_DONE, &h);
	h = (struct arn_tls_hello){0};
	arn_tls_inspector_count(&s, ARN_TLS_HELLO_DONE, &h);
	arn_tls_inspector_count(&s, ARN_TLS_HELLO_NOT_TLS, &h);
	arn_tls_inspector_count(&s, ARN_TLS_HELLO_TOO_LARGE, &h);
	assert_int_equal(s.v[ARN_TLS_I_TLS_FOUND], 2);
	assert_int_equal(s.v[ARN_TLS_I_SNI_FOUND], 1);
	assert_int_equal(s.v[ARN_TLS_I_SNI_NOT_FOUND], 1);
	assert_int_equal(s.v[ARN_TLS_I_ALPN_FOUND], 1);
	assert_int_equal(s.v[ARN_TLS_I_ALPN_NOT_FOUND], 1);
	assert_int_equal(s.v[ARN_TLS_I_TLS_NOT_FOUND], 1);
	assert_int_equal(s.v[ARN_TLS_I_CLIENT_HELLO_TOO_LARGE], 1);
	assert_string_equal(arn_tls_inspector_stat_name(ARN_TLS_I_CLIENT_HELLO_TOO_LARGE),
			    "tls_inspector.client_hello_too_large");

	const uint8_t *name;
	static const uint8_t ok[] = {0, 5, 0, 0, 2, 'a', 'b'};
	assert_int_equal(arn_tls_sni_from_ext(ok, sizeof(ok), &name), 2);
	assert_memory_equal(name, "ab", 2);
	static const uint8_t bad_len[] = {0, 6, 0, 0, 2, 'a', 'b'};
	static const uint8_t over[] = {0, 5, 0, 0, 3, 'a', 'b'};
	static const uint8_t nul[] = {0, 5, 0, 0, 2, 'a', 0};
	static const uint8_t other[] = {0, 5, 1, 0, 2, 'a', 'b'};
	assert_int_equal(arn_tls_sni_from_ext(bad_len, sizeof(bad_len), &name), -EINVAL);
	assert_int_equal(arn_tls_sni_from_ext(over, sizeof(over), &name), -EINVAL);
	assert_int_equal(arn_tls_sni_from_ext(nul, sizeof(nul), &name), -EINVAL);
	assert_int_equal(arn_tls_sni_from_ext(other, sizeof(other), &name), -EINVAL);
	assert_int_equal(arn_tls_sni_from_ext(ok, 1, &name), -EINVAL);
}

/* ---- choosing a context by SNI ------------------------------------------------------------- */

static void test_sni_map_order(void **state)
{
	(void)state;
	struct tt_pki *k = tt_pki();
	struct arn_tls_cert c = tt_tc(k->srv_ec, k->srv_ec_key, "srv");
	struct arn_tls_ctx *x[4];
	for (int i = 0; i < 4; i++)
		assert_non_null(x[i] = tt_server_ctx(&c, 1, NULL, NULL));
	static const char *const exact[] = {"api.example.com", "EXACT.example.org"};
	static const char *const wild1[] = {"*.example.com"};
	static const char *const wild2[] = {"*.eu.example.com", "*.org"};
	struct arn_tls_sni_entry e[] = {
	    {exact, 2, x[0]},
	    {wild1, 1, x[1]},
	    {wild2, 2, x[2]},
	};
	char err[256];
	struct arn_tls_sni_map *m = arn_tls_sni_map_new(e, 3, x[3], err, sizeof(err));
	assert_non_null(m);
	/* exact before any wildcard, case-insensitive */
	assert_ptr_equal(arn_tls_sni_map_select(m, "api.example.com", 15), x[0]);
	assert_ptr_equal(arn_tls_sni_map_select(m, "API.Example.COM", 15), x[0]);
	assert_ptr_equal(arn_tls_sni_map_select(m, "exact.example.org", 17), x[0]);
	/* the longest wildcard suffix */
	assert_ptr_equal(arn_tls_sni_map_select(m, "www.example.com", 15), x[1]);
	assert_ptr_equal(arn_tls_sni_map_select(m, "a.eu.example.com", 16), x[2]);
	assert_ptr_equal(arn_tls_sni_map_select(m, "a.b.eu.example.com", 18), x[2]);
	/* a wildcard stands for one label or more, never for none */
	assert_ptr_equal(arn_tls_sni_map_select(m, "x.y.example.com", 15), x[1]);
	assert_ptr_equal(arn_tls_sni_map_select(m, "example.com", 11), x[3]);
	assert_ptr_equal(arn_tls_sni_map_select(m, "eu.example.com", 14), x[1]);
	assert_ptr_equal(arn_tls_sni_map_select(m, "foo.org", 7), x[2]);
	/* no match, no SNI: the default */
	assert_ptr_equal(arn_tls_sni_map_select(m, "other.net", 9), x[3]);
	assert_ptr_equal(arn_tls_sni_map_select(m, NULL, 0), x[3]);
	arn_tls_sni_map_free(m);

	/* a name twice, malformed wildcards */
	static const char *const dup[] = {"*.example.com"};
	struct arn_tls_sni_entry e2[] = {{wild1, 1, x[0]}, {dup, 1, x[1]}};
	assert_null(arn_tls_sni_map_new(e2, 2, NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "'*.example.com' is given twice"));
	static const char *const bad[] = {"a.*.example.com"};
	static const char *const bad2[] = {"*example.com"};
	static const char *const bad3[] = {"*"};
	struct arn_tls_sni_entry e3[] = {{bad, 1, x[0]}};
	assert_null(arn_tls_sni_map_new(e3, 1, NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "wildcard"));
	e3[0].server_names = bad2;
	assert_null(arn_tls_sni_map_new(e3, 1, NULL, err, sizeof(err)));
	e3[0].server_names = bad3;
	assert_null(arn_tls_sni_map_new(e3, 1, NULL, err, sizeof(err)));
	for (int i = 0; i < 4; i++)
		arn_tls_ctx_unref(x[i]);
	assert_int_equal(arn_tls_reclaim(), 4);
}

const struct CMUnitTest hello_tests[] = {
    cmocka_unit_test(test_hello_real_clients),
    cmocka_unit_test(test_hello_alpn_truncated),
    cmocka_unit_test(test_hello_fragmented_records),
    cmocka_unit_test(test_hello_not_tls),
    cmocka_unit_test(test_hello_malformed),
    cmocka_unit_test(test_hello_too_large),
    cmocka_unit_test(test_hello_counters_and_sni_ext),
    cmocka_unit_test(test_sni_map_order),
};
const size_t n_hello_tests = sizeof(hello_tests) / sizeof(hello_tests[0]);
