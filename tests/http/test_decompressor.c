/*
 * envoy.filters.http.decompressor on the wire (lib/http/http_decompressor.c):
 * the connection manager on the real TCP stack over the fake lib/net
 * (hcm_harness.h) with decompressor filters; the upstream sends bodies
 * compressed here with zlib, brotli and zstd, and what the client receives
 * is compared byte for byte with what was compressed. Envoy's behaviour
 * named in each test is DecompressorFilter's (decompressor_filter.h/.cc)
 * and its libraries' (zlib_decompressor_impl.cc, ...).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <brotli/encode.h>
#include <zlib.h>
#include <zstd.h>

#define DC_LISTENER(name, port, filters)                                                           \
	"      - name: " name "\n"                                                                 \
	"        address: {socket_address: {address: 0.0.0.0, port_value: " port "}}\n"            \
	"        filter_chains:\n"                                                                 \
	"          - filters:\n"                                                                   \
	"              - name: envoy.filters.network.http_connection_manager\n"                    \
	"                typed_config:\n"                                                          \
	"                  \"@type\": type.googleapis.com/"                                        \
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager\n"      \
	"                  stat_prefix: " name "\n"                                                \
	"                  generate_request_id: false\n"                                           \
	"                  route_config:\n"                                                        \
	"                    virtual_hosts: [{name: all, domains: [\"*\"], routes: [{match: "      \
	"{prefix: \"/slow\"}, route: {cluster: web, timeout: 1s}}, {match: "                       \
	"{prefix: \"/\"}, route: {cluster: web}}]}]\n"                                             \
	"                  http_filters:\n" filters                                                \
	"                    - name: envoy.filters.http.router\n"                                  \
	"                      typed_config: {\"@type\": "                                         \
	"type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}\n"

#define DC_FILTER(name, extra, lib, libcfg)                                                        \
	"                    - name: envoy.filters.http.decompressor\n"                            \
	"                      typed_config:\n"                                                    \
	"                        \"@type\": type.googleapis.com/"                                  \
	"envoy.extensions.filters.http.decompressor.v3.Decompressor\n" extra                       \
	"                        decompressor_library:\n"                                          \
	"                          name: " name "\n"                                               \
	"                          typed_config: {\"@type\": type.googleapis.com/"                 \
	"envoy.extensions.compression." lib libcfg "}\n"

/* main (80): gzip, brotli and zstd with Envoy's defaults (both
 * directions); strict (81): gzip that ignores no-transform in responses, with
 * max_inflate_ratio 10, request decompression off. */
static const char dc_yaml[] =
    "envoy_bootstrap:\n"
    "  static_resources:\n"
    "    listeners:\n" DC_LISTENER("main", "80",
				   DC_FILTER("gz", "", "gzip.decompressor.v3.Gzip", "")
				       DC_FILTER("b", "", "brotli.decompressor.v3.Brotli", "")
					   DC_FILTER("z", "", "zstd.decompressor.v3.Zstd", ""))
	DC_LISTENER("strict", "81",
		    DC_FILTER("gz",
			      "                        response_direction_config: "
			      "{common_config: {ignore_no_transform_header: true}}\n"
			      "                        request_direction_config: {common_config: "
			      "{enabled: {default_value: false, runtime_key: rq}}}\n",
			      "gzip.decompressor.v3.Gzip",
			      ", max_inflate_ratio: 10")) "    clusters:\n"
							  "      - name: web\n"
							  "        type: STATIC\n"
							  "        connect_timeout: 1s\n"
							  "        load_assignment:\n"
							  "          cluster_name: web\n"
							  "          endpoints: [{lb_endpoints: "
							  "[{endpoint: {address: "
							  "{socket_address: {address: "
							  "198.18.0.200, port_value: 8080}}}}]}]\n"
							  "      - name: two\n"
							  "        type: STATIC\n"
							  "        connect_timeout: 1s\n"
							  "        load_assignment:\n"
							  "          cluster_name: two\n"
							  "          endpoints: [{lb_endpoints: "
							  "[{endpoint: {address: "
							  "{socket_address: {address: "
							  "198.18.0.201, port_value: 8080}}}}]}]\n"
							  "      - name: empty\n"
							  "        type: STATIC\n"
							  "        connect_timeout: 1s\n"
							  "        load_assignment:\n"
							  "          cluster_name: empty\n";
#define HH_CONFIG_YAML dc_yaml
#include "hcm_harness.h"
#include "arn_stats_snapshot.h"
#include "http_decompressor.h"
#include "http_worker.h"

/* ---- helpers ------------------------------------------------------------------------------ */

static void send_str(struct peer *p, const char *s)
{
	assert_non_null(p);
	hh_send(p, s, (uint32_t)strlen(s), 0);
	hh_settle();
}

static uint64_t stat(const char *name)
{
	struct arn_stats_snapshot s;
	assert_int_equal(arn_stats_snapshot_take(&s), 0);
	uint64_t v = 0;
	for (size_t i = 0; i < s.n; i++)
		if (!strcmp(s.v[i].name, name))
			v = s.v[i].kind == ARN_STAT_GAUGE ? (uint64_t)s.v[i].gauge : s.v[i].counter;
	arn_stats_snapshot_free(&s);
	return v;
}

/* @p n bytes that hardly compress (a fixed sequence). */
static uint8_t *noise_body(size_t n)
{
	uint8_t *b = malloc(n);
	assert_non_null(b);
	uint32_t x = 12345;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		b[i] = (uint8_t)(x >> 24);
	}
	return b;
}

/* A text body of @p n bytes that compresses about 5 to 1. */
static uint8_t *text_body(size_t n)
{
	uint8_t *b = malloc(n);
	assert_non_null(b);
	static const char words[] = "the quick brown fox jumps over the lazy dog 0123456789 ";
	uint32_t x = 7;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		b[i] = (x >> 28) == 0 ? (uint8_t)(x >> 20) : (uint8_t)words[(i * 7 + i / 13) % 55];
	}
	return b;
}

/* @p in compressed with @p enc ("gzip", "br", "zstd") into a malloc'd
 * buffer; *@p out_len its length. */
static uint8_t *pack(const char *enc, const uint8_t *in, size_t n, size_t *out_len)
{
	size_t cap = n + n / 2 + 1024;
	uint8_t *out = malloc(cap);
	assert_non_null(out);
	if (!strcmp(enc, "gzip")) {
		z_stream z = {0};
		assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY),
				 Z_OK);
		z.next_in = (Bytef *)(uintptr_t)in;
		z.avail_in = (uInt)n;
		z.next_out = out;
		z.avail_out = (uInt)cap;
		assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
		*out_len = cap - z.avail_out;
		deflateEnd(&z);
	} else if (!strcmp(enc, "br")) {
		*out_len = cap;
		assert_true(BrotliEncoderCompress(5, 22, BROTLI_MODE_GENERIC, n, in, out_len, out));
	} else {
		*out_len = ZSTD_compress(out, cap, in, n, 3);
		assert_false(ZSTD_isError(*out_len));
	}
	return out;
}

/* What a client received: one response, its head and its body. */
struct resp {
	char head[4096];
	uint8_t *body;
	size_t blen;
	bool chunked, has_cl, complete;
};

static bool head_has(const struct resp *r, const char *line)
{
	return strcasestr(r->head, line) != NULL;
}

static void resp_parse(const uint8_t *b, size_t n, struct resp *r)
{
	memset(r, 0, sizeof(*r));
	const uint8_t *e = memmem(b, n, "\r\n\r\n", 4);
	assert_non_null(e);
	size_t hl = (size_t)(e - b) + 4;
	assert_true(hl < sizeof(r->head));
	memcpy(r->head, b, hl);
	r->chunked = strcasestr(r->head, "\r\ntransfer-encoding: chunked\r\n") != NULL;
	const char *cl = strcasestr(r->head, "\r\ncontent-length:");
	r->has_cl = cl != NULL;
	r->body = malloc(n + 1);
	assert_non_null(r->body);
	const uint8_t *p = b + hl, *end = b + n;
	if (r->chunked) {
		for (;;) {
			const uint8_t *le = memmem(p, (size_t)(end - p), "\r\n", 2);
			if (!le)
				return;
			size_t k = strtoul((const char *)p, NULL, 16);
			p = le + 2;
			if (k == 0) {
				r->complete =
				    memmem(p - 2, (size_t)(end - p + 2), "\r\n\r\n", 4) != NULL;
				return;
			}
			if ((size_t)(end - p) < k + 2)
				return;
			memcpy(r->body + r->blen, p, k);
			r->blen += k;
			p += k + 2;
		}
	}
	size_t want = r->has_cl ? strtoul(cl + 17, NULL, 10) : (size_t)(end - p);
	r->blen = want < (size_t)(end - p) ? want : (size_t)(end - p);
	memcpy(r->body, p, r->blen);
	r->complete = r->blen == want;
}

static uint8_t cap_buf[N_CLIENTS][1 << 21];

/* Client @p c opens to @p port, capturing everything it receives. */
static struct peer *client(unsigned c, uint16_t port)
{
	hh_open(c, port);
	hh_settle();
	struct peer *p = hh_client(c);
	assert_non_null(p);
	p->cap = cap_buf[c];
	p->cap_len = 0;
	p->cap_max = sizeof(cap_buf[c]);
	return p;
}

static struct peer *last_upstream(void)
{
	struct peer *u = NULL;
	for (unsigned i = 0; i < N_UPSTREAMS; i++)
		if (hh_upstream(i))
			u = hh_upstream(i);
	assert_non_null(u);
	return u;
}

/* A GET from @p c answered with @p head lines and @p body (@p n bytes,
 * content-length). @return the upstream. */
static struct peer *get_resp(struct peer *c, const char *req_hdrs, const char *head,
			     const uint8_t *body, size_t n)
{
	char req[512];
	snprintf(req, sizeof(req), "GET /t HTTP/1.1\r\nHost: a\r\n%s\r\n", req_hdrs);
	send_str(c, req);
	struct peer *u = last_upstream();
	char h[1024];
	int k = snprintf(h, sizeof(h), "HTTP/1.1 200 OK\r\n%sContent-Length: %zu\r\n\r\n", head, n);
	hh_send(u, h, (uint32_t)k, 0);
	hh_send(u, body, (uint32_t)n, 0);
	hh_settle();
	return u;
}

#define ST(s) ("http.main.decompressor." s)

/* ---- tests -------------------------------------------------------------------------------- */

/* Envoy's maybeInitDecompress / decompress: a gzip, br or zstd response
 * (its coding in any case) reaches the client inflated byte for byte,
 * Content-Encoding removed (its only coding), Content-Length removed
 * (chunked); decompressed and the byte totals counted as Envoy names
 * them. */
static void test_inflated_byte_exact(void **state)
{
	(void)state;
	static const struct {
		const char *enc, *ce, *lib;
	} cases[] = {{"gzip", "gzip", "gz.gzip"},
		     {"gzip", "GZip", "gz.gzip"},
		     {"br", " br ", "b.brotli"},
		     {"zstd", "zstd", "z.zstd"}};
	size_t n = 300000;
	uint8_t *body = text_body(n);
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t cn;
		uint8_t *cb = pack(cases[i].enc, body, n, &cn);
		hh_begin(1);
		char name[128];
		snprintf(name, sizeof(name), ST("%s.response.decompressed"), cases[i].lib);
		uint64_t d0 = stat(name);
		snprintf(name, sizeof(name), ST("%s.response.total_uncompressed_bytes"),
			 cases[i].lib);
		uint64_t u0 = stat(name);
		snprintf(name, sizeof(name), ST("%s.response.total_compressed_bytes"),
			 cases[i].lib);
		uint64_t c0 = stat(name);
		struct peer *c = client(0, 80);
		char head[128];
		snprintf(head, sizeof(head), "Content-Type: text/plain\r\nContent-Encoding: %s\r\n",
			 cases[i].ce);
		get_resp(c, "", head, cb, cn);
		for (int k = 0; k < 50 && !c->dead; k++)
			hh_advance(20);
		struct resp r;
		resp_parse(c->cap, c->cap_len, &r);
		assert_true(r.complete);
		assert_int_equal(r.blen, n);
		assert_memory_equal(r.body, body, n);
		assert_false(head_has(&r, "content-encoding"));
		assert_false(r.has_cl);
		assert_true(r.chunked);
		assert_true(head_has(&r, "\r\ncontent-type: text/plain\r\n"));
		snprintf(name, sizeof(name), ST("%s.response.decompressed"), cases[i].lib);
		assert_int_equal(stat(name), d0 + 1);
		snprintf(name, sizeof(name), ST("%s.response.total_uncompressed_bytes"),
			 cases[i].lib);
		assert_int_equal(stat(name), u0 + n);
		snprintf(name, sizeof(name), ST("%s.response.total_compressed_bytes"),
			 cases[i].lib);
		assert_int_equal(stat(name), c0 + cn);
		assert_int_equal(http_dcmp_states(tcp_wk(lc)->lsn[0].user), 0);
		free(r.body);
		free(cb);
		hh_end();
	}
	free(body);
}

/* Multiple codings: the outermost (last, RFC 9110 8.4) is removed when it
 * is a filter's; "gzip, br" through the br filter reaches the client as
 * the gzip body with Content-Encoding: gzip. (Envoy's
 * contentEncodingMatches takes the FIRST coding: Arion takes the last,
 * the one the body was compressed with last; docs/http.md.) */
static void test_multiple_codings(void **state)
{
	(void)state;
	size_t n = 20000, gn, bn;
	uint8_t *body = text_body(n);
	uint8_t *gz = pack("gzip", body, n, &gn);
	uint8_t *br = pack("br", gz, gn, &bn);
	hh_begin(1);
	struct peer *c = client(0, 80);
	get_resp(c, "", "Content-Encoding: gzip, br\r\n", br, bn);
	hh_advance(50);
	struct resp r;
	resp_parse(c->cap, c->cap_len, &r);
	assert_true(r.complete);
	assert_int_equal(r.blen, gn);
	assert_memory_equal(r.body, gz, gn);
	assert_true(head_has(&r, "\r\ncontent-encoding: gzip\r\n"));
	free(r.body);
	hh_end();
	/* two header lines are one list, as Envoy's header map joins them */
	hh_begin(1);
	c = client(0, 80);
	get_resp(c, "", "Content-Encoding: gzip\r\nContent-Encoding: br\r\n", br, bn);
	hh_advance(50);
	resp_parse(c->cap, c->cap_len, &r);
	assert_true(r.complete);
	assert_int_equal(r.blen, gn);
	assert_memory_equal(r.body, gz, gn);
	assert_true(head_has(&r, "\r\ncontent-encoding: gzip\r\n"));
	free(r.body);
	hh_end();
	free(br);
	free(gz);
	free(body);
}

/* Left alone (Envoy's should_decompress false: not_decompressed): a
 * coding no filter has, a filter's coding not outermost, no-transform,
 * no Content-Encoding. The response goes as it came, Content-Length and
 * all. */
static void test_not_decompressed(void **state)
{
	(void)state;
	size_t n = 5000, gn;
	uint8_t *body = text_body(n);
	uint8_t *gz = pack("gzip", body, n, &gn);
	static const char *const heads[] = {
	    "Content-Encoding: deflate\r\n",
	    "Content-Encoding: gzip, identity\r\n",
	    "Content-Encoding: gzip\r\nCache-Control: max-age=3, No-Transform\r\n",
	    "",
	};
	for (unsigned i = 0; i < 4; i++) {
		hh_begin(1);
		uint64_t nd0 = stat(ST("gz.gzip.response.not_decompressed"));
		struct peer *c = client(0, 80);
		get_resp(c, "", heads[i], gz, gn);
		hh_advance(50);
		struct resp r;
		resp_parse(c->cap, c->cap_len, &r);
		assert_true(r.complete);
		assert_true(r.has_cl);
		assert_int_equal(r.blen, gn);
		assert_memory_equal(r.body, gz, gn);
		assert_int_equal(stat(ST("gz.gzip.response.not_decompressed")), nd0 + 1);
		free(r.body);
		hh_end();
	}
	/* ignore_no_transform_header: decompressed anyway (listener strict) */
	hh_begin(1);
	struct peer *c = client(0, 81);
	get_resp(c, "", "Content-Encoding: gzip\r\nCache-Control: no-transform\r\n", gz, gn);
	hh_advance(50);
	struct resp r;
	resp_parse(c->cap, c->cap_len, &r);
	assert_true(r.complete);
	assert_int_equal(r.blen, n);
	assert_memory_equal(r.body, body, n);
	free(r.body);
	hh_end();
	free(gz);
	free(body);
}

/* Envoy's decodeHeaders with advertise_accept_encoding (its default) and
 * response decompression on: Accept-Encoding as addEncodingToAcceptEncoding
 * leaves it, each filter's encoding in chain order, its own token (q-value
 * and all) moved last; a filter that does not advertise adds nothing. */
static void test_advertise_accept_encoding(void **state)
{
	(void)state;
	hh_begin(1);
	struct peer *c = client(0, 80);
	send_str(c, "GET /t HTTP/1.1\r\nHost: a\r\nAccept-Encoding: br;q=0.5, deflate\r\n\r\n");
	struct peer *u = last_upstream();
	assert_non_null(
	    memmem(u->log, u->log_len, "\r\naccept-encoding: deflate,gzip,br,zstd\r\n", 41));
	send_str(u, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
	hh_end();
	hh_begin(1);
	c = client(0, 80);
	send_str(c, "GET /t HTTP/1.1\r\nHost: a\r\n\r\n");
	u = last_upstream();
	assert_non_null(memmem(u->log, u->log_len, "\r\naccept-encoding: gzip,br,zstd\r\n", 33));
	send_str(u, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
	hh_end();
	/* the helper itself, with Envoy's own cases (header_utility_test.cc) */
	char out[64];
	int k = http_dcmp_accept_encoding("one,two", 7, "three", out, sizeof(out));
	assert_int_equal(k, 13);
	assert_memory_equal(out, "one,two,three", 13);
	k = http_dcmp_accept_encoding("one;q=0.3,two", 13, "one", out, sizeof(out));
	assert_memory_equal(out, "two,one", 7);
	k = http_dcmp_accept_encoding("one;q=0.3,two", 13, "two", out, sizeof(out));
	assert_memory_equal(out, "one;q=0.3,two", 13);
	k = http_dcmp_accept_encoding("", 0, "one", out, sizeof(out));
	assert_int_equal(k, 3);
	k = http_dcmp_accept_encoding("br,mock, mock\t,mock ;q=0.3", 26, "mock", out, sizeof(out));
	assert_int_equal(k, 7);
	assert_memory_equal(out, "br,mock", 7);
}

/* Hostile bodies reset the stream, counted in the library's stat (Envoy's
 * names): corrupt, cut short, and a bomb past max_inflate_ratio (gzip:
 * 1 MiB of zeros, about 1 KiB compressed, 1000 to 1 against 100; brotli
 * and zstd: 64 MiB of zeros against 100). Whatever the client got is at
 * most the ratio times what was taken. */
static void test_hostile_bodies_reset(void **state)
{
	(void)state;
	size_t n = 50000, gn;
	uint8_t *body = text_body(n);
	uint8_t *gz = pack("gzip", body, n, &gn);
	/* corrupt: its deflate data flipped */
	uint8_t *bad = malloc(gn);
	memcpy(bad, gz, gn);
	for (size_t i = 20; i < 60; i++)
		bad[i] ^= 0x5a;
	static const struct {
		const char *enc, *stat;
		size_t zeros;
	} bombs[] = {{"gzip", ST("gz.gzip.decompressor_library.zlib_data_error"), 1u << 20},
		     {"br", ST("b.brotli.decompressor_library.brotli_error"), 64u << 20},
		     {"zstd", ST("z.zstd.decompressor_library.zstd_generic_error"), 64u << 20}};
	for (unsigned t = 0; t < 2 + 3; t++) {
		const uint8_t *in;
		size_t in_n;
		const char *enc = "gzip", *st = bombs[0].stat;
		uint8_t *owned = NULL;
		if (t == 0) {
			in = bad;
			in_n = gn;
		} else if (t == 1) {
			in = gz;
			in_n = gn / 2; /* cut short: the body ends mid-stream */
		} else {
			enc = bombs[t - 2].enc;
			st = bombs[t - 2].stat;
			uint8_t *z = calloc(1, bombs[t - 2].zeros);
			owned = pack(enc, z, bombs[t - 2].zeros, &in_n);
			free(z);
			in = owned;
			assert_true(in_n < 70000);
		}
		hh_begin(1);
		uint64_t e0 = stat(st);
		struct peer *c = client(0, 80);
		char head[64];
		snprintf(head, sizeof(head), "Content-Encoding: %s\r\n", enc);
		get_resp(c, "", head, in, in_n);
		for (int k = 0; k < 50 && !c->dead; k++)
			hh_advance(20);
		assert_true(c->dead); /* reset */
		assert_int_equal(stat(st), e0 + 1);
		assert_true(c->cap_len <= 100 * in_n + 4096);
		assert_int_equal(http_dcmp_states(tcp_wk(lc)->lsn[0].user), 0);
		hh_end();
		free(owned);
	}
	free(bad);
	free(gz);
	free(body);
}

/* A slow client that does not read while the upstream sends: the output
 * held for it is one piece at a time (256 bytes here), made once the
 * client's codec took the last; the rest stays in the upstream's input
 * and TCP window (the upstream is held back), for each library; once it
 * reads, the body is whole. */
static void test_slow_client_bounded(void **state)
{
	(void)state;
	static const char *const encs[] = {"gzip", "br", "zstd"};
	http_dcmp_chunk_cap = 256;
	for (unsigned e = 0; e < 3; e++) {
		size_t n = 200000, cn;
		uint8_t *body = noise_body(n);
		uint8_t *cb = pack(encs[e], body, n, &cn);
		hh_begin(1);
		struct peer *c = client(0, 80);
		send_str(c, "GET /t HTTP/1.1\r\nHost: a\r\n\r\n");
		struct peer *u = last_upstream();
		hh_window(c, 0);
		char h[128];
		int k = snprintf(h, sizeof(h),
				 "HTTP/1.1 200 OK\r\nContent-Encoding: %s\r\nContent-Length: "
				 "%zu\r\n\r\n",
				 encs[e], cn);
		hh_send(u, h, (uint32_t)k, 0);
		hh_send(u, cb, (uint32_t)cn, 0);
		hh_advance(50);
		struct http_worker *w = tcp_wk(lc)->lsn[0].user;
		assert_int_equal(http_dcmp_states(w), 1);
		/* one state and its piece: zstd's window for a 1 MB frame and
		 * brotli's ring buffer are the libraries', no more */
		assert_true(http_dcmp_mem(w) < 4u << 20);
		/* the upstream is held back; brotli's decoder takes input ahead
		 * into its ring buffer (up to its window, counted in the mem
		 * above), so its upstream is held back only past that */
		assert_true(u->snd_una - u->iss < cn || e == 1);
		hh_window(c, 255);
		for (int i = 0; i < 400 && http_dcmp_states(w); i++)
			hh_advance(20);
		hh_advance(200);
		struct resp r;
		resp_parse(c->cap, c->cap_len, &r);
		assert_true(r.complete);
		assert_int_equal(r.blen, n);
		assert_memory_equal(r.body, body, n);
		free(r.body);
		free(cb);
		free(body);
		hh_end();
	}
	http_dcmp_chunk_cap = 65536;
}

/* The worker's states are capped: past the cap the response goes as it
 * came (compressed, its headers untouched) and is counted. */
static void test_state_cap(void **state)
{
	(void)state;
	size_t n = 5000, gn;
	uint8_t *body = text_body(n);
	uint8_t *gz = pack("gzip", body, n, &gn);
	unsigned saved = http_dcmp_states_max;
	http_dcmp_states_max = 0;
	hh_begin(1);
	uint64_t l0 = stat(ST("gz.gzip.response.not_decompressed_state_limit"));
	struct peer *c = client(0, 80);
	get_resp(c, "", "Content-Encoding: gzip\r\n", gz, gn);
	hh_advance(50);
	struct resp r;
	resp_parse(c->cap, c->cap_len, &r);
	assert_true(r.complete);
	assert_int_equal(r.blen, gn);
	assert_memory_equal(r.body, gz, gn);
	assert_true(head_has(&r, "\r\ncontent-encoding: gzip\r\n"));
	assert_int_equal(stat(ST("gz.gzip.response.not_decompressed_state_limit")), l0 + 1);
	free(r.body);
	hh_end();
	http_dcmp_states_max = saved;
	free(gz);
	free(body);
}

/* A chunked body from @p b (@p n bytes, starting at its first chunk) into
 * @p out: its length, *@p complete when its last chunk came. */
static size_t unchunk(const uint8_t *b, size_t n, uint8_t *out, bool *complete)
{
	const uint8_t *p = b, *end = b + n;
	size_t k = 0;
	*complete = false;
	for (;;) {
		const uint8_t *le = memmem(p, (size_t)(end - p), "\r\n", 2);
		if (!le)
			return k;
		size_t c = strtoul((const char *)p, NULL, 16);
		p = le + 2;
		if (c == 0) {
			*complete = true;
			return k;
		}
		if ((size_t)(end - p) < c + 2)
			return k;
		memcpy(out + k, p, c);
		k += c;
		p += c + 2;
	}
}

static uint8_t up_cap[1 << 21];

/* Request direction (Envoy's decodeHeaders / decodeData): a POST whose
 * body is gzip, br or zstd goes upstream inflated byte for byte, chunked,
 * its Content-Encoding and Content-Length removed; counted under
 * ".request.". */
static void test_request_inflated(void **state)
{
	(void)state;
	static const struct {
		const char *enc, *lib;
	} cases[] = {{"gzip", "gz.gzip"}, {"br", "b.brotli"}, {"zstd", "z.zstd"}};
	size_t n = 100000;
	uint8_t *body = text_body(n);
	uint8_t *got = malloc(n + 1024);
	for (unsigned i = 0; i < 3; i++) {
		size_t cn;
		uint8_t *cb = pack(cases[i].enc, body, n, &cn);
		hh_begin(1);
		char name[128];
		snprintf(name, sizeof(name), ST("%s.request.decompressed"), cases[i].lib);
		uint64_t d0 = stat(name);
		snprintf(name, sizeof(name), ST("%s.request.total_uncompressed_bytes"),
			 cases[i].lib);
		uint64_t u0 = stat(name);
		struct peer *c = client(0, 80);
		char req[256];
		snprintf(req, sizeof(req),
			 "POST /t HTTP/1.1\r\nHost: a\r\nContent-Encoding: %s\r\nContent-Length: "
			 "%zu\r\n\r\n",
			 cases[i].enc, cn);
		send_str(c, req);
		struct peer *u = last_upstream();
		u->cap = up_cap;
		u->cap_len = 0;
		u->cap_max = sizeof(up_cap);
		assert_non_null(memmem(u->log, u->log_len, "\r\n\r\n", 4));
		assert_null(strcasestr((const char *)u->log, "\r\ncontent-encoding:"));
		assert_null(strcasestr((const char *)u->log, "\r\ncontent-length:"));
		assert_non_null(
		    strcasestr((const char *)u->log, "\r\ntransfer-encoding: chunked\r\n"));
		/* the body after the head, in pieces as TCP brings them */
		hh_send(c, cb, (uint32_t)cn, 0);
		hh_settle();
		for (int k = 0; k < 50; k++)
			hh_advance(20);
		bool complete;
		size_t gl = unchunk(up_cap, u->cap_len, got, &complete);
		assert_true(complete);
		assert_int_equal(gl, n);
		assert_memory_equal(got, body, n);
		snprintf(name, sizeof(name), ST("%s.request.decompressed"), cases[i].lib);
		assert_int_equal(stat(name), d0 + 1);
		snprintf(name, sizeof(name), ST("%s.request.total_uncompressed_bytes"),
			 cases[i].lib);
		assert_int_equal(stat(name), u0 + n);
		send_str(u, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
		hh_advance(20);
		assert_int_equal(http_dcmp_states(tcp_wk(lc)->lsn[0].user), 0);
		free(cb);
		hh_end();
	}
	free(got);
	free(body);
}

/* A slow upstream that does not read while the client sends: the request's
 * output held is one piece (256 bytes), the next made once the upstream's
 * codec took the last (decode_more); the client is held back (its bytes
 * stay in its TCP window); once the upstream reads, the body is whole. A
 * corrupt request body is answered 400 and counted (zlib_data_error). */
static void test_request_slow_upstream_and_corrupt(void **state)
{
	(void)state;
	http_dcmp_chunk_cap = 256;
	size_t n = 150000, cn;
	uint8_t *body = noise_body(n);
	uint8_t *cb = pack("zstd", body, n, &cn);
	hh_begin(1);
	struct peer *c = client(0, 80);
	char req[256];
	snprintf(req, sizeof(req),
		 "POST /t HTTP/1.1\r\nHost: a\r\nContent-Encoding: zstd\r\nContent-Length: "
		 "%zu\r\n\r\n",
		 cn);
	send_str(c, req);
	struct peer *u = last_upstream();
	u->cap = up_cap;
	u->cap_len = 0;
	u->cap_max = sizeof(up_cap);
	hh_window(u, 0);
	hh_send(c, cb, (uint32_t)cn, 0);
	hh_advance(50);
	struct http_worker *w = tcp_wk(lc)->lsn[0].user;
	assert_int_equal(http_dcmp_states(w), 1);
	assert_true(http_dcmp_mem(w) < 4u << 20);
	assert_true(c->snd_una - c->iss < cn); /* the client is held back */
	hh_window(u, 255);
	for (int i = 0; i < 200; i++)
		hh_advance(20);
	uint8_t *got = malloc(n + 1024);
	bool complete;
	size_t gl = unchunk(up_cap, u->cap_len, got, &complete);
	assert_true(complete);
	assert_int_equal(gl, n);
	assert_memory_equal(got, body, n);
	free(got);
	send_str(u, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
	hh_end();
	http_dcmp_chunk_cap = 65536;
	/* corrupt */
	size_t gn;
	uint8_t *gz = pack("gzip", body, 20000, &gn);
	for (size_t i = 20; i < 60; i++)
		gz[i] ^= 0x5a;
	hh_begin(1);
	uint64_t e0 = stat(ST("gz.gzip.decompressor_library.zlib_data_error"));
	c = client(0, 80);
	snprintf(req, sizeof(req),
		 "POST /t HTTP/1.1\r\nHost: a\r\nContent-Encoding: gzip\r\nContent-Length: "
		 "%zu\r\n\r\n",
		 gn);
	send_str(c, req);
	hh_send(c, gz, (uint32_t)gn, 0);
	hh_advance(100);
	assert_non_null(memmem(c->cap, c->cap_len, "HTTP/1.1 400 ", 13));
	assert_int_equal(stat(ST("gz.gzip.decompressor_library.zlib_data_error")), e0 + 1);
	assert_int_equal(http_dcmp_states(w), 0);
	hh_end();
	free(gz);
	free(cb);
	free(body);
}

/* The route's timeout runs from the request's end, as Envoy's router
 * starts it (onRequestComplete): a request whose decompressed body an
 * upstream takes slowly (its pieces held, HTTP_S_REQ_MORE) for longer
 * than the timeout is not timed out meanwhile, and its answer goes
 * through. */
static void test_request_route_timeout_from_end(void **state)
{
	(void)state;
	http_dcmp_chunk_cap = 256;
	size_t n = 150000, cn;
	uint8_t *body = noise_body(n);
	uint8_t *cb = pack("gzip", body, n, &cn);
	hh_begin(1);
	struct peer *c = client(0, 80);
	char req[256];
	snprintf(req, sizeof(req),
		 "POST /slow HTTP/1.1\r\nHost: a\r\nContent-Encoding: gzip\r\nContent-Length: "
		 "%zu\r\n\r\n",
		 cn);
	send_str(c, req);
	struct peer *u = last_upstream();
	hh_window(u, 0);
	hh_send(c, cb, (uint32_t)cn, 0);
	for (int i = 0; i < 150; i++)
		hh_advance(20); /* 3 s: past the route's 1 s */
	assert_null(memmem(c->cap, c->cap_len, "HTTP/1.1 504", 12));
	hh_window(u, 255);
	for (int i = 0; i < 100; i++)
		hh_advance(5);
	send_str(u, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
	hh_advance(20);
	assert_non_null(memmem(c->cap, c->cap_len, "HTTP/1.1 200 OK", 15));
	hh_end();
	http_dcmp_chunk_cap = 65536;
	free(cb);
	free(body);
}

/* The stream-less run (the fuzzer's): fed one byte at a time as well as
 * whole, each library's body comes out byte for byte. */
struct sinkbuf {
	uint8_t *p;
	size_t n, cap;
};

static void sink(void *arg, const uint8_t *p, size_t n)
{
	struct sinkbuf *s = arg;
	assert_true(s->n + n <= s->cap);
	memcpy(s->p + s->n, p, n);
	s->n += n;
}

static void test_run_bytewise(void **state)
{
	(void)state;
	static const char *const encs[] = {"gzip", "br", "zstd"};
	size_t n = 300000, cn;
	uint8_t *body = text_body(n);
	for (unsigned e = 0; e < 3; e++) {
		uint8_t *cb = pack(encs[e], body, n, &cn);
		static const size_t slices[] = {0, 1, 1460, 65536};
		for (size_t si = 0; si < 4; si++) {
			size_t slice = slices[si];
			struct sinkbuf s = {malloc(n), 0, n};
			int rc = http_dcmp_run((uint8_t)e, 15, 100, 4096, cb, cn, slice, sink, &s);
			assert_int_equal(rc, 0);
			assert_int_equal(s.n, n);
			assert_memory_equal(s.p, body, n);
			free(s.p);
		}
		free(cb);
	}
	free(body);
}

int main(void)
{
	hh_init(false);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_run_bytewise),
	    cmocka_unit_test(test_inflated_byte_exact),
	    cmocka_unit_test(test_multiple_codings),
	    cmocka_unit_test(test_not_decompressed),
	    cmocka_unit_test(test_advertise_accept_encoding),
	    cmocka_unit_test(test_hostile_bodies_reset),
	    cmocka_unit_test(test_slow_client_bounded),
	    cmocka_unit_test(test_state_cap),
	    cmocka_unit_test(test_request_inflated),
	    cmocka_unit_test(test_request_slow_upstream_and_corrupt),
	    cmocka_unit_test(test_request_route_timeout_from_end),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
