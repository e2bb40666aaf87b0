/*
 * envoy.filters.http.compressor on the wire (lib/http/http_compressor.c):
 * the connection manager on the real TCP stack over the fake lib/net
 * (hcm_harness.h), with a configuration of compressor filters; what the
 * client receives is parsed here and its body decompressed with zlib,
 * brotli and zstd's decoders, and compared with what the upstream sent.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <time.h>

#include "tjwt.h" /* before the harness, whose macros OpenSSL's headers would meet */

#include <brotli/decode.h>
#include <nghttp2/nghttp2.h>
#include <zlib.h>
#include <zstd.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#define CMP_LISTENER(name, port, filters)                                                          \
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
	"                  http_protocol_options: {enable_trailers: true}\n"                       \
	"                  route_config:\n"                                                        \
	"                    virtual_hosts: [{name: all, domains: [\"*\"], routes: [{match: "      \
	"{prefix: \"/\"}, route: {cluster: web}}]}]\n"                                             \
	"                  http_filters:\n" filters                                                \
	"                    - name: envoy.filters.http.router\n"                                  \
	"                      typed_config: {\"@type\": "                                         \
	"type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}\n"

#define CMP_FILTER(name, extra, lib, libcfg)                                                       \
	"                    - name: envoy.filters.http.compressor\n"                              \
	"                      typed_config:\n"                                                    \
	"                        \"@type\": type.googleapis.com/"                                  \
	"envoy.extensions.filters.http.compressor.v3.Compressor\n" extra                           \
	"                        compressor_library:\n"                                            \
	"                          name: " name "\n"                                               \
	"                          typed_config: {\"@type\": type.googleapis.com/"                 \
	"envoy.extensions.compression." lib libcfg "}\n"

/* tgl (84): HttpFilter.disabled and route.v3.FilterConfig for compressors
 * (Envoy Gateway's pattern): "gzon" is on except on /a, whose
 * FilterConfig turns it off; "broff" is off except on /a, whose optional
 * FilterConfig of a type Arion lacks turns it on. */
#define TGL_CMP(fname, extra, lib)                                                                 \
	"                    - name: " fname "\n" extra                                             \
	"                      typed_config:\n"                                                    \
	"                        \"@type\": type.googleapis.com/"                                  \
	"envoy.extensions.filters.http.compressor.v3.Compressor\n"                                 \
	"                        compressor_library:\n"                                            \
	"                          name: " fname "\n"                                              \
	"                          typed_config: {\"@type\": type.googleapis.com/"                 \
	"envoy.extensions.compression." lib "}\n"
#define TGL_LISTENER                                                                               \
	"      - name: tgl\n"                                                                      \
	"        address: {socket_address: {address: 0.0.0.0, port_value: 84}}\n"                  \
	"        filter_chains:\n"                                                                 \
	"          - filters:\n"                                                                   \
	"              - name: envoy.filters.network.http_connection_manager\n"                    \
	"                typed_config:\n"                                                          \
	"                  \"@type\": type.googleapis.com/"                                        \
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager\n"      \
	"                  stat_prefix: tgl\n"                                                     \
	"                  generate_request_id: false\n"                                           \
	"                  route_config:\n"                                                        \
	"                    virtual_hosts:\n"                                                     \
	"                      - name: all\n"                                                      \
	"                        domains: [\"*\"]\n"                                               \
	"                        routes:\n"                                                        \
	"                          - match: {prefix: \"/a\"}\n"                                    \
	"                            route: {cluster: web}\n"                                      \
	"                            typed_per_filter_config:\n"                                   \
	"                              gzon: {\"@type\": type.googleapis.com/"                     \
	"envoy.config.route.v3.FilterConfig, disabled: true}\n"                                    \
	"                              broff: {\"@type\": type.googleapis.com/"                    \
	"envoy.config.route.v3.FilterConfig, is_optional: true, config: {\"@type\": "              \
	"type.googleapis.com/google.protobuf.Empty}}\n"                                            \
	"                          - match: {prefix: \"/\"}\n"                                     \
	"                            route: {cluster: web}\n"                                      \
	"                  http_filters:\n" TGL_CMP("gzon", "", "gzip.compressor.v3.Gzip")          \
	    TGL_CMP("broff", "                      disabled: true\n",                              \
		    "brotli.compressor.v3.Brotli")                                                  \
	"                    - name: envoy.filters.http.router\n"                                  \
	"                      typed_config: {\"@type\": "                                         \
	"type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}\n"

/* egr (85): Envoy Gateway's compression (its translator's compressor.go):
 * a gzip and a brotli filter, each HttpFilter.disabled, turned on per
 * route by a CompressorPerRoute with overrides. The virtual host turns
 * gzip on; /d turns it off (disabled: true); /b turns brotli on as well;
 * /l gives gzip a zstd compressor_library (Envoy 1.37); /r has gzip
 * remove the request's accept-encoding. */
#define EGR_ON                                                                                     \
	"{\"@type\": type.googleapis.com/envoy.extensions.filters.http.compressor.v3."             \
	"CompressorPerRoute, overrides: {response_direction_config: {}}}"
#define EGR_LISTENER                                                                               \
	"      - name: egr\n"                                                                      \
	"        address: {socket_address: {address: 0.0.0.0, port_value: 85}}\n"                  \
	"        filter_chains:\n"                                                                 \
	"          - filters:\n"                                                                   \
	"              - name: envoy.filters.network.http_connection_manager\n"                    \
	"                typed_config:\n"                                                          \
	"                  \"@type\": type.googleapis.com/"                                        \
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager\n"      \
	"                  stat_prefix: egr\n"                                                     \
	"                  generate_request_id: false\n"                                           \
	"                  route_config:\n"                                                        \
	"                    virtual_hosts:\n"                                                     \
	"                      - name: all\n"                                                      \
	"                        domains: [\"*\"]\n"                                               \
	"                        typed_per_filter_config:\n"                                       \
	"                          envoy.filters.http.compressor.gzip: " EGR_ON "\n"               \
	"                        routes:\n"                                                        \
	"                          - match: {prefix: \"/d\"}\n"                                    \
	"                            route: {cluster: web}\n"                                      \
	"                            typed_per_filter_config:\n"                                   \
	"                              envoy.filters.http.compressor.gzip: {\"@type\": "           \
	"type.googleapis.com/envoy.extensions.filters.http.compressor.v3.CompressorPerRoute, "     \
	"disabled: true}\n"                                                                        \
	"                          - match: {prefix: \"/b\"}\n"                                    \
	"                            route: {cluster: web}\n"                                      \
	"                            typed_per_filter_config:\n"                                   \
	"                              envoy.filters.http.compressor.brotli: " EGR_ON "\n"         \
	"                          - match: {prefix: \"/l\"}\n"                                    \
	"                            route: {cluster: web}\n"                                      \
	"                            typed_per_filter_config:\n"                                   \
	"                              envoy.filters.http.compressor.gzip: {\"@type\": "           \
	"type.googleapis.com/envoy.extensions.filters.http.compressor.v3.CompressorPerRoute, "     \
	"overrides: {response_direction_config: {}, compressor_library: {name: zl, "               \
	"typed_config: {\"@type\": type.googleapis.com/"                                           \
	"envoy.extensions.compression.zstd.compressor.v3.Zstd, compression_level: 3}}}}\n"         \
	"                          - match: {prefix: \"/r\"}\n"                                    \
	"                            route: {cluster: web}\n"                                      \
	"                            typed_per_filter_config:\n"                                   \
	"                              envoy.filters.http.compressor.gzip: {\"@type\": "           \
	"type.googleapis.com/envoy.extensions.filters.http.compressor.v3.CompressorPerRoute, "     \
	"overrides: {response_direction_config: {remove_accept_encoding_header: true}}}\n"         \
	"                          - match: {prefix: \"/\"}\n"                                     \
	"                            route: {cluster: web}\n"                                      \
	"                  http_filters:\n" TGL_CMP("envoy.filters.http.compressor.gzip",          \
						    "                      disabled: true\n",      \
						    "gzip.compressor.v3.Gzip")                     \
	    TGL_CMP(                                                                               \
		"envoy.filters.http.compressor.brotli", "                      disabled: true\n",  \
		"brotli.compressor.v3.Brotli") "                    - name: "                      \
					       "envoy.filters.http.router\n"                       \
					       "                      typed_config: {\"@type\": "  \
					       "type.googleapis.com/"                              \
					       "envoy.extensions.filters.http.router.v3.Router}\n"

/* main (80): gzip, brotli and zstd filters with Envoy's defaults; strict
 * (81): one gzip filter with response_direction_config (a minimum of
 * 100 bytes, text/plain only, no compression with an ETag, Accept-Encoding
 * removed from requests). Clusters as the harness wants them. */
static const char cmp_yaml[] =
    "envoy_bootstrap:\n"
    "  static_resources:\n"
    "    listeners:\n" CMP_LISTENER("main", "80",
				    CMP_FILTER("gz", "", "gzip.compressor.v3.Gzip", "")
					CMP_FILTER("b", "", "brotli.compressor.v3.Brotli", "")
					    CMP_FILTER("z", "", "zstd.compressor.v3.Zstd", ""))
	CMP_LISTENER(
	    "strict", "81",
	    CMP_FILTER("gz",
		       "                        response_direction_config:\n"
		       "                          disable_on_etag_header: true\n"
		       "                          remove_accept_encoding_header: true\n"
		       "                          common_config: {min_content_length: 100, "
		       "content_type: [text/plain]}\n",
		       "gzip.compressor.v3.Gzip", ", window_bits: 10")) TGL_LISTENER EGR_LISTENER
    "    clusters:\n"
    "      - name: web\n"
    "        type: STATIC\n"
    "        connect_timeout: 1s\n"
    "        load_assignment:\n"
    "          cluster_name: web\n"
    "          endpoints: [{lb_endpoints: [{endpoint: {address: "
    "{socket_address: {address: "
    "198.18.0.200, port_value: 8080}}}}]}]\n"
    "      - name: two\n"
    "        type: STATIC\n"
    "        connect_timeout: 1s\n"
    "        load_assignment:\n"
    "          cluster_name: two\n"
    "          endpoints: [{lb_endpoints: [{endpoint: {address: "
    "{socket_address: {address: "
    "198.18.0.201, port_value: 8080}}}}]}]\n"
    "      - name: empty\n"
    "        type: STATIC\n"
    "        connect_timeout: 1s\n"
    "        load_assignment:\n"
    "          cluster_name: empty\n";
#define HH_CONFIG_YAML cmp_yaml
#include "hcm_harness.h"
#include "arn_stats_snapshot.h"
#include "http_compressor.h"
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

/* A text body of @p n bytes that compresses (and is not all one byte). */
static char *text_body(size_t n)
{
	char *b = malloc(n + 1);
	assert_non_null(b);
	static const char words[] = "the quick brown fox jumps over the lazy dog 0123456789 ";
	for (size_t i = 0; i < n; i++)
		b[i] = words[(i * 7 + i / 13) % (sizeof(words) - 1)];
	b[n] = 0;
	return b;
}

/* @p n bytes that hardly compress (a fixed sequence). */
static char *noise_body(size_t n)
{
	char *b = malloc(n);
	assert_non_null(b);
	uint32_t x = 12345;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		b[i] = (char)(x >> 24);
	}
	return b;
}

/* What a client received: one response, its head and its body (chunks
 * joined, or up to the content-length, or to the end). */
struct resp {
	char head[4096];
	uint8_t *body;
	size_t blen;
	bool chunked, has_cl, complete;
	char trailers[512];
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
				const uint8_t *te =
				    memmem(p - 2, (size_t)(end - p + 2), "\r\n\r\n", 4);
				if (te) {
					size_t tl = (size_t)(te - p) + 2;
					if (tl < sizeof(r->trailers))
						memcpy(r->trailers, p, tl);
					r->complete = true;
				}
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

/* @p in (@p n bytes) decoded with encoding @p enc into a malloc'd
 * buffer; *@p out_len its length. NULL when it does not decode whole. */
static uint8_t *decode(const char *enc, const uint8_t *in, size_t n, size_t *out_len)
{
	size_t cap = 1 << 22;
	uint8_t *out = malloc(cap);
	assert_non_null(out);
	if (!strcmp(enc, "gzip")) {
		z_stream z = {0};
		assert_int_equal(inflateInit2(&z, 16 + 15), Z_OK);
		z.next_in = (Bytef *)(uintptr_t)in;
		z.avail_in = (uInt)n;
		z.next_out = out;
		z.avail_out = (uInt)cap;
		int rc = inflate(&z, Z_FINISH);
		*out_len = cap - z.avail_out;
		inflateEnd(&z);
		if (rc != Z_STREAM_END || z.avail_in) {
			free(out);
			return NULL;
		}
		return out;
	}
	if (!strcmp(enc, "br")) {
		size_t ol = cap;
		if (BrotliDecoderDecompress(n, in, &ol, out) != BROTLI_DECODER_RESULT_SUCCESS) {
			free(out);
			return NULL;
		}
		*out_len = ol;
		return out;
	}
	ZSTD_DCtx *d = ZSTD_createDCtx();
	ZSTD_inBuffer ib = {in, n, 0};
	ZSTD_outBuffer ob = {out, cap, 0};
	size_t rc;
	do
		rc = ZSTD_decompressStream(d, &ob, &ib);
	while (!ZSTD_isError(rc) && rc && ib.pos < ib.size);
	ZSTD_freeDCtx(d);
	*out_len = ob.pos;
	if (ZSTD_isError(rc) || rc != 0 || ib.pos != n) {
		free(out);
		return NULL;
	}
	return out;
}

/* Client @p c's capture, parsed; @p enc: the body must decode with it to
 * @p want (@p wn bytes); NULL: it must be @p want as it is. */
static void expect_body(struct peer *c, struct resp *r, const char *enc, const char *want,
			size_t wn)
{
	resp_parse(c->cap, c->cap_len, r);
	assert_true(r->complete);
	if (!enc) {
		assert_int_equal(r->blen, wn);
		assert_memory_equal(r->body, want, wn);
		return;
	}
	size_t dl = 0;
	uint8_t *d = decode(enc, r->body, r->blen, &dl);
	assert_non_null(d);
	assert_int_equal(dl, wn);
	assert_memory_equal(d, want, wn);
	free(d);
}

static uint8_t cap_buf[N_CLIENTS][1 << 20];

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

/* The upstream's response: @p head lines (without the end), then the
 * body @p body (@p n bytes) with a content-length, in one send. */
static void respond_cl(struct peer *u, const char *head, const char *body, size_t n)
{
	char h[1024];
	int k = snprintf(h, sizeof(h), "HTTP/1.1 200 OK\r\n%sContent-Length: %zu\r\n\r\n", head, n);
	hh_send(u, h, (uint32_t)k, 0);
	hh_send(u, body, (uint32_t)n, 0);
	hh_settle();
}

/* A GET with @p hdrs from client @p c (port 80 unless opened), answered by
 * the upstream with a text/plain body of @p n bytes (content-length). */
static struct peer *get_text_at(struct peer *c, const char *path, const char *hdrs, size_t n,
			       const char *body)
{
	char req[512];
	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: a\r\n%s\r\n", path, hdrs);
	uint32_t rx0 = 0;
	(void)rx0;
	send_str(c, req);
	struct peer *u = NULL;
	for (unsigned i = 0; i < N_UPSTREAMS; i++)
		if (hh_upstream(i))
			u = hh_upstream(i);
	assert_non_null(u);
	respond_cl(u, "Content-Type: text/plain; charset=utf-8\r\n", body, n);
	return u;
}

static struct peer *get_text(struct peer *c, const char *hdrs, size_t n, const char *body)
{
	return get_text_at(c, "/t", hdrs, n, body);
}

#define ST(s) ("http.main.compressor." s)

/* ---- tests -------------------------------------------------------------------------------- */

/* gzip, chosen by Accept-Encoding: the body decodes to the upstream's
 * bytes; content-encoding and vary set, content-length gone (chunked). */
static void test_gzip_content_length(void **state)
{
	(void)state;
	hh_begin(1);
	/* (the stats rows are the worker's: read within its run) */
	uint64_t c0 = stat(ST("gz.gzip.compressed")),
		 u0 = stat(ST("gz.gzip.header_compressor_used"));
	uint64_t ub0 = stat(ST("gz.gzip.total_uncompressed_bytes"));
	struct peer *c = client(0, 80);
	char *body = text_body(20000);
	get_text(c, "Accept-Encoding: gzip\r\n", 20000, body);
	hh_advance(10);
	struct resp r;
	expect_body(c, &r, "gzip", body, 20000);
	assert_true(head_has(&r, "\r\ncontent-encoding: gzip\r\n"));
	assert_true(head_has(&r, "\r\nvary: accept-encoding\r\n"));
	assert_true(r.chunked);
	assert_false(r.has_cl);
	assert_true(r.blen < 20000 / 4);
	assert_int_equal(stat(ST("gz.gzip.compressed")), c0 + 1);
	assert_int_equal(stat(ST("gz.gzip.header_compressor_used")), u0 + 1);
	assert_int_equal(stat(ST("gz.gzip.total_uncompressed_bytes")), ub0 + 20000);
	/* the brotli and zstd filters were overshadowed */
	assert_true(stat(ST("b.brotli.header_compressor_overshadowed")) > 0);
	assert_int_equal(http_cmp_states(tcp_wk(lc)->lsn[0].user), 0);
	free(r.body);
	free(body);
	hh_end();
}

/* q-values choose: br over gzip, zstd over both, ties to the first
 * token; "*" takes the first filter (gzip); q=0 refuses. */
static void test_q_values_choose(void **state)
{
	(void)state;
	static const struct {
		const char *ae, *enc;
	} cases[] = {
	    {"Accept-Encoding: gzip;q=0.5, br\r\n", "br"},
	    {"Accept-Encoding: gzip;q=0.5, br;q=0.7, zstd;q=0.9\r\n", "zstd"},
	    {"Accept-Encoding: br, gzip\r\n", "br"},
	    {"Accept-Encoding: *\r\n", "gzip"},
	    {"Accept-Encoding: gzip;q=0, *\r\n", "br"},
	    {"Accept-Encoding: deflate, zstd;Q=1\r\n", "zstd"},
	    {"Accept-Encoding: gzip;q=0\r\n", NULL},
	    {"Accept-Encoding: identity\r\n", NULL},
	    {"Accept-Encoding: br;q=0.2, identity;q=0.5\r\n", NULL},
	    {"Accept-Encoding: deflate\r\n", NULL},
	    {"", NULL},
	};
	char *body = text_body(3000);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		hh_begin(1);
		struct peer *c = client(0, 80);
		get_text(c, cases[i].ae, 3000, body);
		hh_advance(10);
		struct resp r;
		expect_body(c, &r, cases[i].enc, body, 3000);
		if (cases[i].enc) {
			char line[64];
			snprintf(line, sizeof(line), "\r\ncontent-encoding: %s\r\n", cases[i].enc);
			assert_true(head_has(&r, line));
		} else {
			assert_false(head_has(&r, "content-encoding"));
			assert_true(r.has_cl);
		}
		/* compressible either way: a cache must keep them apart */
		assert_true(head_has(&r, "\r\nvary: accept-encoding\r\n"));
		free(r.body);
		hh_end();
	}
	free(body);
}

/* A chunked body from the upstream, in many small pieces, and its
 * trailers: compressed, and the trailers follow the compressed chunks. */
static void test_chunked_many_pieces_and_trailers(void **state)
{
	(void)state;
	hh_begin(1);
	struct peer *c = client(0, 80);
	send_str(c, "GET /t HTTP/1.1\r\nHost: a\r\nAccept-Encoding: br\r\nTE: trailers\r\n\r\n");
	struct peer *u = hh_upstream(0);
	assert_non_null(u);
	send_str(u, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n");
	char *body = text_body(6000);
	for (size_t off = 0; off < 6000; off += 100) {
		char ch[160];
		int k = snprintf(ch, sizeof(ch), "64\r\n%.100s\r\n", body + off);
		hh_send(u, ch, (uint32_t)k, 0);
		hh_settle();
	}
	send_str(u, "0\r\ngrpc-status: 0\r\n\r\n");
	hh_advance(10);
	struct resp r;
	expect_body(c, &r, "br", body, 6000);
	assert_true(r.chunked);
	assert_true(strstr(r.trailers, "grpc-status: 0") != NULL);
	free(r.body);
	free(body);
	hh_end();
}

/* Not compressed: too small, a type not listed, already encoded,
 * no-transform, HEAD, 204 and 304; the response goes as it came. */
static void test_not_compressed(void **state)
{
	(void)state;
	static const struct {
		const char *method, *status, *head;
		size_t n;
		bool vary;
	} cases[] = {
	    {"GET", "200 OK", "Content-Type: text/plain\r\n", 29, false},
	    {"GET", "200 OK", "Content-Type: image/png\r\n", 3000, false},
	    {"GET", "200 OK", "Content-Type: text/plain\r\nContent-Encoding: gzip\r\n", 3000,
	     false},
	    {"GET", "200 OK",
	     "Content-Type: text/plain\r\nCache-Control: max-age=1, No-Transform\r\n", 3000, false},
	    {"HEAD", "200 OK", "Content-Type: text/plain\r\n", 3000, true},
	    /* Envoy's isCompressible holds for these: Vary goes on */
	    {"GET", "204 No Content", "Content-Type: text/plain\r\n", 0, true},
	    {"GET", "304 Not Modified", "Content-Type: text/plain\r\n", 0, true},
	};
	char *body = text_body(3000);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		hh_begin(1);
		/* (the stats rows are the worker's: read within its run) */
		uint64_t small0 = stat(ST("gz.gzip.content_length_too_small"));
		struct peer *c = client(0, 80);
		char req[256];
		snprintf(req, sizeof(req),
			 "%s /t HTTP/1.1\r\nHost: a\r\nAccept-Encoding: gzip\r\n\r\n",
			 cases[i].method);
		send_str(c, req);
		struct peer *u = hh_upstream(0);
		assert_non_null(u);
		char h[512];
		bool nobody = !strcmp(cases[i].method, "HEAD") || cases[i].n == 0;
		int k =
		    snprintf(h, sizeof(h), "HTTP/1.1 %s\r\n%s%s%zu\r\n\r\n", cases[i].status,
			     cases[i].head, cases[i].n ? "Content-Length: " : "X-N: ", cases[i].n);
		hh_send(u, h, (uint32_t)k, 0);
		if (!nobody)
			hh_send(u, body, (uint32_t)cases[i].n, 0);
		hh_settle();
		hh_advance(10);
		struct resp r;
		resp_parse(c->cap, c->cap_len, &r);
		if (!strstr(cases[i].head, "Content-Encoding"))
			assert_false(head_has(&r, "content-encoding"));
		assert_false(r.chunked);
		assert_int_equal(stat(ST("gz.gzip.content_length_too_small")), small0 + (i == 0));
		if (!nobody) {
			assert_int_equal(r.blen, cases[i].n);
			assert_memory_equal(r.body, body, cases[i].n);
		}
		if (head_has(&r, "vary: accept-encoding") != cases[i].vary)
			fail_msg("case %zu: vary %d", i, !cases[i].vary);
		free(r.body);
		hh_end();
	}
	free(body);
}

/* An existing Vary gets ", accept-encoding"; a strong ETag goes, a weak
 * one stays (Envoy's sanitizeEtagHeader). */
static void test_vary_appended_etag(void **state)
{
	(void)state;
	char *body = text_body(3000);
	for (int weak = 0; weak < 2; weak++) {
		hh_begin(1);
		struct peer *c = client(0, 80);
		send_str(c, "GET /t HTTP/1.1\r\nHost: a\r\nAccept-Encoding: zstd\r\n\r\n");
		struct peer *u = hh_upstream(0);
		assert_non_null(u);
		respond_cl(u,
			   weak ? "Content-Type: text/html\r\nVary: Origin\r\nETag: W/\"abc\"\r\n"
				: "Content-Type: text/html\r\nVary: Origin\r\nETag: \"abc\"\r\n",
			   body, 3000);
		hh_advance(10);
		struct resp r;
		expect_body(c, &r, "zstd", body, 3000);
		assert_true(head_has(&r, "\r\nvary: Origin, accept-encoding\r\n"));
		assert_true(head_has(&r, "etag: W/\"abc\"") == (weak == 1));
		assert_false(head_has(&r, "etag: \"abc\""));
		free(r.body);
		hh_end();
	}
	free(body);
}

/* An HTTP/1.0 client gets the compressed body delimited by the close. */
static void test_http10_close_delimited(void **state)
{
	(void)state;
	char *body = text_body(5000);
	hh_begin(1);
	struct peer *c = client(0, 80);
	send_str(c, "GET /t HTTP/1.0\r\nHost: a\r\nAccept-Encoding: gzip\r\n\r\n");
	struct peer *u = hh_upstream(0);
	assert_non_null(u);
	respond_cl(u, "Content-Type: text/plain\r\n", body, 5000);
	hh_advance(10);
	assert_true(c->fin_in);
	struct resp r;
	expect_body(c, &r, "gzip", body, 5000);
	assert_false(r.chunked);
	assert_false(r.has_cl);
	assert_true(head_has(&r, "\r\nconnection: close\r\n"));
	free(r.body);
	free(body);
	hh_end();
}

/* strict: response_direction_config's fields (stats under ".response."),
 * an ETag disables, Accept-Encoding does not reach the upstream. */
static void test_response_direction_config(void **state)
{
	(void)state;
	char *body = text_body(3000);
	hh_begin(1);
	uint64_t c0 = stat("http.strict.compressor.gz.gzip.response.compressed");
	uint64_t e0 = stat("http.strict.compressor.gz.gzip.not_compressed_etag");
	struct peer *c = client(0, 81);
	send_str(c, "GET /t HTTP/1.1\r\nHost: a\r\nAccept-Encoding: gzip\r\n\r\n");
	struct peer *u = hh_upstream(0);
	assert_non_null(u);
	assert_null(memmem(u->log, u->log_len, "ccept-Encoding", 14));
	respond_cl(u, "Content-Type: text/plain\r\n", body, 3000);
	hh_advance(10);
	struct resp r;
	expect_body(c, &r, "gzip", body, 3000);
	free(r.body);
	/* an ETag: not compressed */
	c->cap_len = 0;
	send_str(c, "GET /t HTTP/1.1\r\nHost: a\r\nAccept-Encoding: gzip\r\n\r\n");
	respond_cl(u, "Content-Type: text/plain\r\nETag: \"x\"\r\n", body, 3000);
	hh_advance(10);
	expect_body(c, &r, NULL, body, 3000);
	free(r.body);
	/* 99 bytes: under its minimum of 100 */
	c->cap_len = 0;
	send_str(c, "GET /t HTTP/1.1\r\nHost: a\r\nAccept-Encoding: gzip\r\n\r\n");
	respond_cl(u, "Content-Type: text/plain\r\n", body, 99);
	hh_advance(10);
	expect_body(c, &r, NULL, body, 99);
	free(r.body);
	assert_int_equal(stat("http.strict.compressor.gz.gzip.response.compressed"), c0 + 1);
	assert_int_equal(stat("http.strict.compressor.gz.gzip.not_compressed_etag"), e0 + 1);
	free(body);
	hh_end();
}

/* The worker's states are capped: past the cap a response goes
 * uncompressed and is counted; a state is given back at the stream's
 * end. */
static void test_state_cap(void **state)
{
	(void)state;
	size_t n = 100000;
	char *body = noise_body(n);
	unsigned saved = http_cmp_states_max;
	http_cmp_states_max = 1;
	hh_begin(0);
	uint64_t l0 = stat(ST("gz.gzip.not_compressed_state_limit"));
	struct peer *c0 = client(0, 80), *c1 = client(1, 80);
	/* client 0's response is compressed and held: its window is closed
	 * and the body is larger than the TCP buffers */
	send_str(c0, "GET /t HTTP/1.1\r\nHost: a\r\nAccept-Encoding: gzip\r\n\r\n");
	hh_window(c0, 0);
	struct peer *u0 = hh_upstream(0);
	assert_non_null(u0);
	respond_cl(u0, "Content-Type: text/plain\r\n", body, n);
	struct http_worker *w = tcp_wk(lc)->lsn[0].user;
	assert_int_equal(http_cmp_states(w), 1);
	/* client 1's would need a second state: uncompressed, counted */
	send_str(c1, "GET /t HTTP/1.1\r\nHost: a\r\nAccept-Encoding: gzip\r\n\r\n");
	struct peer *u1 = hh_upstream(1);
	assert_non_null(u1);
	respond_cl(u1, "Content-Type: text/plain\r\n", body, 3000);
	hh_advance(10);
	struct resp r;
	expect_body(c1, &r, NULL, body, 3000);
	free(r.body);
	assert_int_equal(stat(ST("gz.gzip.not_compressed_state_limit")), l0 + 1);
	/* client 0 reads: its response completes, the state goes back */
	hh_window(c0, 255);
	for (int i = 0; i < 100 && http_cmp_states(w); i++)
		hh_advance(20);
	expect_body(c0, &r, "gzip", body, n);
	free(r.body);
	assert_int_equal(http_cmp_states(w), 0);
	http_cmp_states_max = saved;
	free(body);
	hh_end();
}

/* A slow reader: the output held for it is one chunk at a time, however
 * much the upstream sent (what it sent stays in the upstream's input and
 * TCP windows). With 256-byte pieces every body slice fills several: the
 * next is made only once the client's codec took the last
 * (HTTP_S_ENC_MORE), for each library. */
static void test_slow_reader_bounded(void **state)
{
	(void)state;
	static const char *const encs[] = {"gzip", "br", "zstd"};
	http_cmp_chunk_cap = 256;
	for (unsigned e = 0; e < 3; e++) {
		size_t n = 200000;
		char *body = noise_body(n);
		hh_begin(1);
		struct peer *c = client(0, 80);
		char req[128];
		snprintf(req, sizeof(req),
			 "GET /t HTTP/1.1\r\nHost: a\r\nAccept-Encoding: %s\r\n\r\n", encs[e]);
		send_str(c, req);
		struct peer *u = hh_upstream(0);
		assert_non_null(u);
		hh_window(c, 0);
		char h[128];
		int k = snprintf(
		    h, sizeof(h),
		    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n\r\n",
		    n);
		hh_send(u, h, (uint32_t)k, 0);
		hh_send(u, body, (uint32_t)n, 0);
		hh_advance(50);
		struct http_worker *w = tcp_wk(lc)->lsn[0].user;
		/* one state and its one output chunk, not the body */
		assert_int_equal(http_cmp_states(w), 1);
		assert_true(http_cmp_mem(w) < 200000 || e > 0); /* zstd's own state is ~1.3 MB */
		assert_true(u->snd_una - u->iss < 200000);	/* the upstream is held back */
		hh_window(c, 255);
		for (int i = 0; i < 200 && http_cmp_states(w); i++)
			hh_advance(20);
		hh_advance(200);
		struct resp r;
		expect_body(c, &r, encs[e], body, n);
		free(r.body);
		free(body);
		hh_end();
	}
	http_cmp_chunk_cap = 65536;
}

/* A whole response in one segment (its head, body and end decoded as one
 * event) whose body fills more than one output piece: its end waits for
 * the pieces, and the body is whole. */
static void test_head_body_end_in_one_piece(void **state)
{
	(void)state;
	static const char *const encs[] = {"gzip", "br", "zstd"};
	http_cmp_chunk_cap = 256;
	char *body = noise_body(1000);
	for (unsigned e = 0; e < 3; e++) {
		hh_begin(1);
		struct peer *c = client(0, 80);
		char req[128];
		snprintf(req, sizeof(req),
			 "GET /t HTTP/1.1\r\nHost: a\r\nAccept-Encoding: %s\r\n\r\n", encs[e]);
		send_str(c, req);
		struct peer *u = hh_upstream(0);
		assert_non_null(u);
		char m[1200];
		int k = snprintf(m, sizeof(m),
				 "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
				 "Content-Length: 1000\r\n\r\n");
		memcpy(m + k, body, 1000);
		hh_send(u, m, (uint32_t)k + 1000, 0);
		hh_advance(20);
		struct resp r;
		expect_body(c, &r, encs[e], body, 1000);
		free(r.body);
		/* the connection goes on: a second request on it */
		c->cap_len = 0;
		send_str(c, req);
		hh_send(u, m, (uint32_t)k + 1000, 0);
		hh_advance(20);
		expect_body(c, &r, encs[e], body, 1000);
		free(r.body);
		hh_end();
	}
	free(body);
	http_cmp_chunk_cap = 65536;
}

/* ---- an HTTP/2 client (nghttp2's client session) ---------------------------------------- */

struct h2c {
	struct peer *p;
	uint32_t fed; /* bytes of p->cap given to the session */
	char head[2048];
	size_t hl;
	uint8_t *body;
	size_t blen, bcap;
	bool closed;
};

static ssize_t h2c_send(nghttp2_session *s, const uint8_t *d, size_t n, int flags, void *u)
{
	(void)s, (void)flags;
	struct h2c *c = u;
	hh_send(c->p, d, (uint32_t)n, 0);
	return (ssize_t)n;
}

static int h2c_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t nl,
		      const uint8_t *value, size_t vl, uint8_t flags, void *u)
{
	(void)s, (void)f, (void)flags;
	struct h2c *c = u;
	int k = snprintf(c->head + c->hl, sizeof(c->head) - c->hl, "%.*s: %.*s\n", (int)nl,
			 (const char *)name, (int)vl, (const char *)value);
	if (k > 0 && (size_t)k < sizeof(c->head) - c->hl)
		c->hl += (size_t)k;
	return 0;
}

static int h2c_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *d, size_t n,
		    void *u)
{
	(void)s, (void)flags, (void)id;
	struct h2c *c = u;
	assert_true(c->blen + n <= c->bcap);
	memcpy(c->body + c->blen, d, n);
	c->blen += n;
	return 0;
}

static int h2c_close(nghttp2_session *s, int32_t id, uint32_t code, void *u)
{
	(void)s, (void)id, (void)code;
	((struct h2c *)u)->closed = true;
	return 0;
}

/* What the stack sent the client goes into the session, and what the
 * session has (acknowledgements, window updates) to the stack. */
static void h2c_pump(nghttp2_session *s, struct h2c *c)
{
	for (int i = 0; i < 50; i++) {
		hh_settle();
		if (c->p->cap_len > c->fed) {
			ssize_t k =
			    nghttp2_session_mem_recv(s, c->p->cap + c->fed, c->p->cap_len - c->fed);
			assert_true(k >= 0);
			c->fed += (uint32_t)k;
		}
		assert_int_equal(nghttp2_session_send(s), 0);
		hh_advance(2);
		if (c->closed)
			return;
	}
}

/* A client session over @p c (its peer and body buffer set): nghttp2's
 * callbacks into @p c, its SETTINGS queued. */
static nghttp2_session *h2c_session(struct h2c *c)
{
	nghttp2_session_callbacks *cb;
	nghttp2_session_callbacks_new(&cb);
	nghttp2_session_callbacks_set_send_callback(cb, h2c_send);
	nghttp2_session_callbacks_set_on_header_callback(cb, h2c_header);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, h2c_data);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, h2c_close);
	nghttp2_session *s;
	assert_int_equal(nghttp2_session_client_new(&s, cb, c), 0);
	nghttp2_session_callbacks_del(cb);
	nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, NULL, 0);
	return s;
}

/* An HTTP/2 client (prior knowledge) asks for gzip: DATA frames carry
 * the compressed body, no content-length. */
/* HttpFilter.disabled and a route's FilterConfig reach the compressors
 * (listener tgl, above): the filter a route turns off offers nothing (no
 * vary, the body as sent), the one it turns on compresses. */
static void test_filter_toggled_per_route(void **state)
{
	(void)state;
	hh_begin(1);
	char *body = text_body(5000);
	struct resp r;
	const struct {
		const char *path, *ae, *enc;
	} cases[] = {
	    {"/t", "Accept-Encoding: gzip\r\n", "gzip"}, /* gzon on */
	    {"/t", "Accept-Encoding: br\r\n", NULL},	 /* broff off */
	    {"/a", "Accept-Encoding: gzip\r\n", NULL},	 /* gzon off on /a */
	    {"/a", "Accept-Encoding: br\r\n", "br"},	 /* broff on on /a */
	};
	struct peer *c = client(0, 84);
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		c->cap_len = 0;
		get_text_at(c, cases[k].path, cases[k].ae, 5000, body);
		hh_advance(10);
		expect_body(c, &r, cases[k].enc, body, 5000);
		if (cases[k].enc) {
			char want[64];
			snprintf(want, sizeof(want), "\r\ncontent-encoding: %s\r\n", cases[k].enc);
			assert_true(head_has(&r, want));
		} else {
			assert_false(head_has(&r, "\r\ncontent-encoding:"));
		}
		free(r.body);
	}
	free(body);
	hh_end();
}

/* CompressorPerRoute (Envoy Gateway's compression, listener egr above):
 * its overrides turn a disabled filter on for a route (the virtual host's
 * for every route), disabled: true off; a filter off for the route offers
 * no encoding (a client preferring br gets gzip where only gzip is on:
 * before, the off brotli filter won the choice and nothing was
 * compressed); a route's compressor_library compresses with that library;
 * remove_accept_encoding_header per route. CompressorPerRoute was refused
 * before, so the whole listener was. */
static void test_compressor_per_route(void **state)
{
	(void)state;
	hh_begin(1);
	char *body = text_body(5000);
	struct resp r;
	const struct {
		const char *path, *ae, *enc;
	} cases[] = {
	    {"/t", "Accept-Encoding: br, gzip\r\n", "gzip"}, /* the vhost's gzip only */
	    {"/d", "Accept-Encoding: gzip\r\n", NULL},	     /* gzip disabled on /d */
	    {"/b", "Accept-Encoding: br, gzip\r\n", "br"},   /* both on: br first */
	    {"/l", "Accept-Encoding: gzip\r\n", NULL},	     /* gzip's library is zstd */
	    {"/l", "Accept-Encoding: zstd\r\n", "zstd"},
	    {"/r", "Accept-Encoding: gzip\r\n", "gzip"}, /* and no accept-encoding up */
	};
	struct peer *c = client(0, 85);
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		c->cap_len = 0;
		struct peer *u = get_text_at(c, cases[k].path, cases[k].ae, 5000, body);
		/* the upstream's view of the request: accept-encoding removed
		 * only where the route says so */
		const char *req = strstr(u->log, cases[k].path);
		assert_non_null(req);
		if (!strcmp(cases[k].path, "/r"))
			assert_null(strcasestr(req, "accept-encoding"));
		else
			assert_non_null(strcasestr(req, "accept-encoding"));
		hh_advance(10);
		expect_body(c, &r, cases[k].enc, body, 5000);
		if (cases[k].enc) {
			char want[64];
			snprintf(want, sizeof(want), "\r\ncontent-encoding: %s\r\n", cases[k].enc);
			if (!head_has(&r, want))
				fail_msg("%s (%s): %s", cases[k].path, cases[k].ae, r.head);
		} else if (head_has(&r, "\r\ncontent-encoding:")) {
			fail_msg("%s (%s): %s", cases[k].path, cases[k].ae, r.head);
		}
		free(r.body);
	}
	free(body);
	hh_end();
}

static void test_http2_client(void **state)
{
	(void)state;
	size_t n = 50000;
	char *body = text_body(n);
	hh_clients_h2 = true;
	hh_begin(1);
	struct h2c c = {.p = client(0, 80), .bcap = 1 << 20};
	c.body = malloc(c.bcap);
	assert_non_null(c.body);
	nghttp2_session *s = h2c_session(&c);
#define NV(a, b)                                                                                   \
	{(uint8_t *)(a), (uint8_t *)(b), sizeof(a) - 1, sizeof(b) - 1, NGHTTP2_NV_FLAG_NONE}
	nghttp2_nv nv[] = {NV(":method", "GET"), NV(":path", "/t"), NV(":scheme", "http"),
			   NV(":authority", "a"), NV("accept-encoding", "gzip, br;q=0.5")};
#undef NV
	assert_true(nghttp2_submit_request(s, NULL, nv, 5, NULL, NULL) > 0);
	h2c_pump(s, &c);
	struct peer *u = hh_upstream(0);
	assert_non_null(u);
	char h[160];
	int k =
	    snprintf(h, sizeof(h),
		     "HTTP/1.1 200 OK\r\nContent-Type: text/css\r\nContent-Length: %zu\r\n\r\n", n);
	hh_send(u, h, (uint32_t)k, 0);
	for (size_t off = 0; off < n; off += 10000) {
		hh_send(u, body + off, 10000, 0);
		h2c_pump(s, &c);
	}
	for (int i = 0; i < 20 && !c.closed; i++)
		h2c_pump(s, &c);
	assert_true(c.closed);
	c.head[c.hl] = 0;
	assert_non_null(strstr(c.head, ":status: 200\n"));
	assert_non_null(strstr(c.head, "content-encoding: gzip\n"));
	assert_non_null(strstr(c.head, "vary: accept-encoding\n"));
	assert_null(strstr(c.head, "content-length"));
	size_t dl = 0;
	uint8_t *d = decode("gzip", c.body, c.blen, &dl);
	assert_non_null(d);
	assert_int_equal(dl, n);
	assert_memory_equal(d, body, n);
	free(d);
	nghttp2_session_del(s);
	free(c.body);
	free(body);
	hh_end();
	hh_clients_h2 = false;
}

static bool got_str(const struct peer *p, const char *s)
{
	return p && memmem(p->log, p->log_len, s, strlen(s)) != NULL;
}

static ssize_t xa_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
		       nghttp2_data_source *src, void *u)
{
	(void)s, (void)id, (void)src, (void)u;
	static const char b[] = "form=1";
	size_t n = sizeof(b) - 1 < len ? sizeof(b) - 1 : len;
	memcpy(buf, b, n);
	*flags |= NGHTTP2_DATA_FLAG_EOF;
	return (ssize_t)n;
}

/* Listener "dyn" (port 82): ext_authz asking cluster "two" under /check,
 * then gzip, before the router to "web". */
/* clang-format off */
#define XA_H2_LISTENER                                                                             \
	"{\"name\":\"dyn\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","              \
	"\"port_value\":82}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","                  \
	"\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.filters.network."      \
	"http_connection_manager.v3.HttpConnectionManager\",\"stat_prefix\":\"xa2\","              \
	"\"route_config\":{\"name\":\"dyn\",\"virtual_hosts\":[{\"name\":\"all\",\"domains\":"     \
	"[\"*\"],\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}]}]},"  \
	"\"http_filters\":[{\"name\":\"xa\",\"typed_config\":{\"@type\":\"type.googleapis.com/"    \
	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz\",\"http_service\":{\"server_uri\":{" \
	"\"uri\":\"http://authz\",\"cluster\":\"two\",\"timeout\":\"0.3s\"},\"path_prefix\":"      \
	"\"/check\",\"authorization_response\":{\"allowed_upstream_headers\":{\"patterns\":[{"    \
	"\"exact\":\"x-user\"}]},\"allowed_client_headers_on_success\":{\"patterns\":[{"          \
	"\"prefix\":\"x-a\"}]}}}}},{\"name\":\"gz\",\"typed_config\":{\"@type\":"                 \
	"\"type.googleapis.com/envoy.extensions.filters.http.compressor.v3.Compressor\","         \
	"\"compressor_library\":{\"name\":\"gz\",\"typed_config\":{\"@type\":\"type.googleapis."  \
	"com/envoy.extensions.compression.gzip.compressor.v3.Gzip\"}}}},"                         \
	"{\"name\":\"envoy.filters.http.router\",\"typed_config\":{\"@type\":\"type.googleapis."   \
	"com/envoy.extensions.filters.http.router.v3.Router\"}}]}}]}]}"
/* clang-format on */

/* ext_authz over HTTP/2 (XA_H2_LISTENER): the check carries the stream's
 * method, path and :authority as Host, not its DATA, which wait until the
 * service says 200 and then go up whole with the service's x-user; the
 * response carries its x-a* header beside the compressor's
 * content-encoding. */
static void test_http2_ext_authz(void **state)
{
	(void)state;
	hh_clients_h2 = true;
	hh_begin(1);
	hh_apply(ARN_TYPE_URL_LISTENER, XA_H2_LISTENER);
	hh_cfg_changed = true; /* the next run gets the harness's "dyn" back */
	hh_settle();
	struct h2c c = {.p = client(0, 82), .bcap = 1 << 20};
	c.body = malloc(c.bcap);
	assert_non_null(c.body);
	nghttp2_session *s = h2c_session(&c);
#define NV(a, b)                                                                                   \
	{(uint8_t *)(a), (uint8_t *)(b), sizeof(a) - 1, sizeof(b) - 1, NGHTTP2_NV_FLAG_NONE}
	nghttp2_nv nv[] = {NV(":method", "POST"),     NV(":path", "/authz/x"),
			   NV(":scheme", "http"),     NV(":authority", "h.test"),
			   NV("content-length", "6"), NV("accept-encoding", "gzip")};
#undef NV
	nghttp2_data_provider dp = {.read_callback = xa_read};
	assert_true(nghttp2_submit_request(s, NULL, nv, 6, &dp, NULL) > 0);
	h2c_pump(s, &c);
	struct peer *a = hh_upstream(0);
	assert_non_null(a);
	if (!got_str(a, "POST /check/authz/x HTTP/1.1\r\n") || !got_str(a, "host: h.test\r\n") ||
	    got_str(a, "form=1") || hh_upstream(1))
		fail_msg("the check: %.*s", (int)a->log_len, a->log);
	const char *ok = "HTTP/1.1 200 OK\r\nx-user: u1\r\nx-ab: 1\r\ncontent-length: 0\r\n\r\n";
	hh_send(a, ok, (uint32_t)strlen(ok), 0);
	h2c_pump(s, &c);
	struct peer *u = hh_upstream(1);
	assert_non_null(u);
	if (!got_str(u, "POST /authz/x HTTP/1.1\r\n") || !got_str(u, "x-user: u1\r\n") ||
	    !got_str(u, "form=1") || got_str(u, "x-ab"))
		fail_msg("the upstream got: %.*s", (int)u->log_len, u->log);
	size_t n = 4096;
	char *body = text_body(n);
	char h[160];
	int k = snprintf(
	    h, sizeof(h),
	    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n\r\n", n);
	hh_send(u, h, (uint32_t)k, 0);
	hh_send(u, body, (uint32_t)n, 0);
	for (int i = 0; i < 20 && !c.closed; i++)
		h2c_pump(s, &c);
	assert_true(c.closed);
	c.head[c.hl] = 0;
	if (!strstr(c.head, ":status: 200\n") || !strstr(c.head, "x-ab: 1\n") ||
	    !strstr(c.head, "content-encoding: gzip\n"))
		fail_msg("the response's head: %s", c.head);
	nghttp2_session_del(s);
	free(c.body);
	free(body);
	hh_end();
	hh_clients_h2 = false;
}

/* Listener "dyn" (port 82): grpc_web, then the router to "web". */
/* clang-format off */
#define GW_H2_LISTENER                                                                             \
	"{\"name\":\"dyn\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","              \
	"\"port_value\":82}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","                  \
	"\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.filters.network."      \
	"http_connection_manager.v3.HttpConnectionManager\",\"stat_prefix\":\"gw2\","              \
	"\"route_config\":{\"name\":\"dyn\",\"virtual_hosts\":[{\"name\":\"all\",\"domains\":"     \
	"[\"*\"],\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}]}]},"  \
	"\"http_filters\":[{\"name\":\"gw\",\"typed_config\":{\"@type\":\"type.googleapis.com/"    \
	"envoy.extensions.filters.http.grpc_web.v3.GrpcWeb\"}},"                                   \
	"{\"name\":\"envoy.filters.http.router\",\"typed_config\":{\"@type\":\"type.googleapis."   \
	"com/envoy.extensions.filters.http.router.v3.Router\"}}]}}]}]}"
/* clang-format on */

/* The base64 of \0\0\0\0\5hello, 3 bytes a DATA frame. */
static ssize_t gw_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
		       nghttp2_data_source *src, void *u)
{
	(void)s, (void)id, (void)u;
	static const char b[] = "AAAAAAVoZWxsbw==";
	size_t off = (size_t)src->ptr;
	size_t n = sizeof(b) - 1 - off < 3 ? sizeof(b) - 1 - off : 3;
	if (n > len)
		n = len;
	memcpy(buf, b + off, n);
	src->ptr = (void *)(off + n);
	if (off + n == sizeof(b) - 1)
		*flags |= NGHTTP2_DATA_FLAG_EOF;
	return (ssize_t)n;
}

/* grpc_web over an HTTP/2 client: the -text body's DATA frames of 3 bytes
 * (quanta straddle them) are decoded in place and reach the upstream
 * whole; the response's frame and trailers frame come back base64 in
 * DATA, and the client gets no trailers HEADERS (Envoy clears them). */
static void test_http2_grpc_web(void **state)
{
	(void)state;
	hh_clients_h2 = true;
	hh_begin(1);
	hh_apply(ARN_TYPE_URL_LISTENER, GW_H2_LISTENER);
	hh_cfg_changed = true;
	hh_settle();
	struct h2c c = {.p = client(0, 82), .bcap = 1 << 16};
	c.body = malloc(c.bcap);
	assert_non_null(c.body);
	nghttp2_session *s = h2c_session(&c);
#define NV(a, b)                                                                                   \
	{(uint8_t *)(a), (uint8_t *)(b), sizeof(a) - 1, sizeof(b) - 1, NGHTTP2_NV_FLAG_NONE}
	nghttp2_nv nv[] = {NV(":method", "POST"),
			   NV(":path", "/s.S/M"),
			   NV(":scheme", "http"),
			   NV(":authority", "a"),
			   NV("content-type", "application/grpc-web-text"),
			   NV("accept", "application/grpc-web-text")};
#undef NV
	nghttp2_data_provider dp = {.source = {.ptr = NULL}, .read_callback = gw_read};
	assert_true(nghttp2_submit_request(s, NULL, nv, 6, &dp, NULL) > 0);
	for (int i = 0; i < 4; i++)
		h2c_pump(s, &c);
	struct peer *u = hh_upstream(0);
	assert_non_null(u);
	static const char frame[] = "a\r\n\0\0\0\0\5hello\r\n0\r\n\r\n";
	if (!got_str(u, "content-type: application/grpc\r\n") || !got_str(u, "te: trailers\r\n") ||
	    !memmem(u->log, u->log_len, frame, sizeof(frame) - 1))
		fail_msg("the upstream got: %.*s", (int)u->log_len, u->log);
	static const char resp[] = "HTTP/1.1 200 OK\r\ncontent-type: application/grpc\r\n"
				   "transfer-encoding: chunked\r\n\r\na\r\n\0\0\0\0\5world\r\n"
				   "0\r\ngrpc-status: 0\r\n\r\n";
	hh_send(u, resp, sizeof(resp) - 1, 0);
	for (int i = 0; i < 20 && !c.closed; i++)
		h2c_pump(s, &c);
	assert_true(c.closed);
	c.head[c.hl] = 0;
	if (!strstr(c.head, ":status: 200\n") ||
	    !strstr(c.head, "content-type: application/grpc-web-text+proto\n") ||
	    strstr(c.head, "grpc-status"))
		fail_msg("the response's head: %s", c.head);
	/* \0\0\0\0\5world, then \x80\0\0\0\x0fgrpc-status:0\r\n */
	static const char want[] = "AAAAAAV3b3JsZA==gAAAAA9ncnBjLXN0YXR1czowDQo=";
	assert_int_equal(c.blen, sizeof(want) - 1);
	assert_memory_equal(c.body, want, sizeof(want) - 1);
	nghttp2_session_del(s);
	free(c.body);
	hh_end();
	hh_clients_h2 = false;
}

/* The harness's "dyn" listener (port 82) runs the CORS filter before the
 * gzip compressor (hcm_harness.h's HH_LDYN): over HTTP/2 too, an allowed
 * Origin's response carries access-control-allow-origin from the request's
 * own header (the stream's latch is that header's index: the HTTP/2 codec's
 * fields as well as HTTP/1's) beside content-encoding, and a preflight is
 * answered by Arion, the upstream never seeing it. */
static void test_http2_cors(void **state)
{
	(void)state;
	size_t n = 4096;
	char *body = text_body(n);
	hh_clients_h2 = true;
	hh_begin(1);
	struct h2c c = {.p = client(0, 82), .bcap = 1 << 20};
	c.body = malloc(c.bcap);
	assert_non_null(c.body);
	nghttp2_session *s = h2c_session(&c);
#define NV(a, b)                                                                                   \
	{(uint8_t *)(a), (uint8_t *)(b), sizeof(a) - 1, sizeof(b) - 1, NGHTTP2_NV_FLAG_NONE}
	/* a preflight first: answered here */
	nghttp2_nv pf[] = {NV(":method", "OPTIONS"),
			   NV(":path", "/t"),
			   NV(":scheme", "http"),
			   NV(":authority", "a"),
			   NV("origin", "https://o.example"),
			   NV("access-control-request-method", "PUT")};
	assert_true(nghttp2_submit_request(s, NULL, pf, 6, NULL, NULL) > 0);
	h2c_pump(s, &c);
	assert_true(c.closed);
	assert_null(hh_upstream(0));
	c.head[c.hl] = 0;
	if (!strstr(c.head, ":status: 200\n") ||
	    !strstr(c.head, "access-control-allow-origin: https://o.example\n") ||
	    !strstr(c.head, "access-control-allow-methods: PUT\n"))
		fail_msg("the preflight's head: %s", c.head);
	c.closed = false;
	c.hl = 0;
	nghttp2_nv nv[] = {NV(":method", "GET"),
			   NV(":path", "/t"),
			   NV(":scheme", "http"),
			   NV(":authority", "a"),
			   NV("origin", "https://o.example"),
			   NV("accept-encoding", "gzip")};
#undef NV
	assert_true(nghttp2_submit_request(s, NULL, nv, 6, NULL, NULL) > 0);
	h2c_pump(s, &c);
	struct peer *u = hh_upstream(0);
	assert_non_null(u);
	char h[160];
	int k = snprintf(
	    h, sizeof(h),
	    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n\r\n", n);
	hh_send(u, h, (uint32_t)k, 0);
	hh_send(u, body, (uint32_t)n, 0);
	for (int i = 0; i < 20 && !c.closed; i++)
		h2c_pump(s, &c);
	assert_true(c.closed);
	c.head[c.hl] = 0;
	if (!strstr(c.head, ":status: 200\n") ||
	    !strstr(c.head, "access-control-allow-origin: https://o.example\n") ||
	    !strstr(c.head, "access-control-allow-credentials: true\n") ||
	    !strstr(c.head, "content-encoding: gzip\n"))
		fail_msg("the response's head: %s", c.head);
	size_t dl = 0;
	uint8_t *d = decode("gzip", c.body, c.blen, &dl);
	assert_non_null(d);
	assert_int_equal(dl, n);
	assert_memory_equal(d, body, n);
	free(d);
	nghttp2_session_del(s);
	free(c.body);
	free(body);
	hh_end();
	hh_clients_h2 = false;
}

/* ---- request mirroring with an HTTP/2 client (test_hcm_tcp has HTTP/1's) --------------- */

static const char h2_shadow_body[] = "hello h2 body";

static ssize_t h2_shadow_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len,
			      uint32_t *flags, nghttp2_data_source *src, void *u)
{
	(void)s, (void)id, (void)src, (void)u;
	size_t n = sizeof(h2_shadow_body) - 1;
	assert_true(len >= n);
	memcpy(buf, h2_shadow_body, n);
	*flags |= NGHTTP2_DATA_FLAG_EOF;
	return (ssize_t)n;
}

/* The upstream connection to 198.18.0.<last>, or NULL. */
static struct peer *upstream_to(unsigned last)
{
	for (unsigned u = 0; u < N_UPSTREAMS; u++) {
		struct peer *p = hh_upstream(u);
		if (p && p->addr == (0xc6120000u | last))
			return p;
	}
	return NULL;
}

static bool peer_got(const struct peer *p, const char *s)
{
	return p && memmem(p->log, p->log_len, s, strlen(s)) != NULL;
}

/* An HTTP/2 client's mirrored POST: the shadow, an HTTP/1.1 request to
 * "dyn" (.203), has the :authority as its Host with "-shadow" before the
 * port, and the DATA frames' bytes as its body framed by their length;
 * the client gets the main cluster's answer. */
static void test_http2_client_mirrored(void **state)
{
	(void)state;
	hh_clients_h2 = true;
	hh_begin(1);
	char l[8192];
	snprintf(l, sizeof(l), HH_LDYN,
		 "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\","
		 "\"request_mirror_policies\":[{\"cluster\":\"dyn\"}]}}");
	hh_apply(ARN_TYPE_URL_LISTENER, l);
	hh_cfg_changed = true; /* the next run gets the harness's "dyn" back */
	hh_settle();
	struct h2c c = {.p = client(0, 82), .bcap = 1 << 16};
	c.body = malloc(c.bcap);
	assert_non_null(c.body);
	nghttp2_session *s = h2c_session(&c);
#define NV(a, b)                                                                                   \
	{(uint8_t *)(a), (uint8_t *)(b), sizeof(a) - 1, sizeof(b) - 1, NGHTTP2_NV_FLAG_NONE}
	nghttp2_nv nv[] = {NV(":method", "POST"), NV(":path", "/up?x=1"), NV(":scheme", "http"),
			   NV(":authority", "app.example:8080"), NV("x-a", "1")};
#undef NV
	nghttp2_data_provider dp = {.read_callback = h2_shadow_read};
	assert_true(nghttp2_submit_request(s, NULL, nv, 5, &dp, NULL) > 0);
	h2c_pump(s, &c);
	struct peer *u = upstream_to(200), *sh = upstream_to(203);
	assert_non_null(u);
	if (!sh || !peer_got(sh, "POST /up?x=1 HTTP/1.1\r\n") ||
	    !peer_got(sh, ": app.example-shadow:8080\r\n") || !peer_got(sh, "x-a: 1\r\n") ||
	    !peer_got(sh, "ength: 13\r\n") || !peer_got(sh, "\r\n\r\nhello h2 body"))
		fail_msg("the shadow got: %.*s", sh ? (int)sh->log_len : 0, sh ? sh->log : "");
	send_str(sh, "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n");
	send_str(u, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
	for (int i = 0; i < 20 && !c.closed; i++)
		h2c_pump(s, &c);
	assert_true(c.closed);
	c.head[c.hl] = 0;
	assert_non_null(strstr(c.head, ":status: 200\n"));
	assert_int_equal(c.blen, 5);
	nghttp2_session_del(s);
	free(c.body);
	hh_end();
	hh_clients_h2 = false;
}

/* clang-format off */
/* Listener "dyn" (port 82): jwt_authn with one provider (keys %s, Envoy's
 * default locations, claim sub to x-sub) required on every path. */
#define JWT_H2_LISTENER                                                                            \
	"{\"name\":\"dyn\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","              \
	"\"port_value\":82}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","                  \
	"\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.filters.network."      \
	"http_connection_manager.v3.HttpConnectionManager\",\"stat_prefix\":\"jw2\","              \
	"\"route_config\":{\"name\":\"dyn\",\"virtual_hosts\":[{\"name\":\"all\",\"domains\":"     \
	"[\"*\"],\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}]}]},"  \
	"\"http_filters\":[{\"name\":\"jwt\",\"typed_config\":{\"@type\":\"type.googleapis.com/"   \
	"envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication\",\"providers\":{\"p\":{"    \
	"\"local_jwks\":{\"inline_string\":\"%s\"},\"claim_to_headers\":[{\"header_name\":"        \
	"\"x-sub\",\"claim_name\":\"sub\"}]}},\"rules\":[{\"match\":{\"prefix\":\"/\"},"           \
	"\"requires\":{\"provider_name\":\"p\"}}]}},"                                              \
	"{\"name\":\"envoy.filters.http.router\",\"typed_config\":{\"@type\":"                     \
	"\"type.googleapis.com/envoy.extensions.filters.http.router.v3.Router\"}}]}}]}]}"
/* clang-format on */

/* envoy.filters.http.jwt_authn over an HTTP/2 client: a request without a
 * token is answered 401 with www-authenticate (HTTP/2's :authority as the
 * realm's host), never reaching the upstream; one with a valid token in
 * its authorization field goes upstream without it, with the sub claim in
 * x-sub (the filter's edits from the HTTP/2 codec's fields). */
static void test_http2_jwt_authn(void **state)
{
	(void)state;
	struct tjwt_key k;
	tjwt_gen(&k, ARN_JWT_ES256, "e");
	char jwks[512], esc[1024], json[4096], tok[1024], auth[1100];
	size_t n = (size_t)snprintf(jwks, sizeof(jwks), "{\"keys\":[");
	n += tjwt_jwk(&k, true, jwks + n, sizeof(jwks) - n);
	snprintf(jwks + n, sizeof(jwks) - n, "]}");
	size_t e = 0;
	for (const char *s = jwks; *s; s++) {
		if (*s == '"')
			esc[e++] = '\\';
		esc[e++] = *s;
	}
	esc[e] = 0;
	snprintf(json, sizeof(json), JWT_H2_LISTENER, esc);
	char payload[128];
	snprintf(payload, sizeof(payload), "{\"sub\":\"u1\",\"exp\":%lld}",
		 (long long)time(NULL) + 3600);
	tjwt_sign(&k, ARN_JWT_ES256, NULL, payload, tok, sizeof(tok));
	snprintf(auth, sizeof(auth), "Bearer %s", tok);
	hh_clients_h2 = true;
	hh_begin(1);
	hh_apply(ARN_TYPE_URL_LISTENER, json);
	hh_cfg_changed = true;
	hh_settle();
	struct h2c c = {.p = client(0, 82), .bcap = 1 << 16};
	c.body = malloc(c.bcap);
	assert_non_null(c.body);
	nghttp2_session_callbacks *cb;
	nghttp2_session_callbacks_new(&cb);
	nghttp2_session_callbacks_set_send_callback(cb, h2c_send);
	nghttp2_session_callbacks_set_on_header_callback(cb, h2c_header);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, h2c_data);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, h2c_close);
	nghttp2_session *s;
	assert_int_equal(nghttp2_session_client_new(&s, cb, &c), 0);
	nghttp2_session_callbacks_del(cb);
	nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, NULL, 0);
#define NV(a, b)                                                                                   \
	{(uint8_t *)(a), (uint8_t *)(b), sizeof(a) - 1, sizeof(b) - 1, NGHTTP2_NV_FLAG_NONE}
	nghttp2_nv nv0[] = {NV(":method", "GET"), NV(":path", "/t"), NV(":scheme", "http"),
			    NV(":authority", "a")};
	assert_true(nghttp2_submit_request(s, NULL, nv0, 4, NULL, NULL) > 0);
	h2c_pump(s, &c);
	assert_true(c.closed);
	assert_null(hh_upstream(0));
	c.head[c.hl] = 0;
	if (!strstr(c.head, ":status: 401\n") ||
	    !strstr(c.head, "www-authenticate: Bearer realm=\"http://a/t\"\n"))
		fail_msg("the head: %s", c.head);
	c.closed = false;
	c.hl = 0;
	nghttp2_nv nv[] = {
	    NV(":method", "GET"),
	    NV(":path", "/t"),
	    NV(":scheme", "http"),
	    NV(":authority", "a"),
	    NV("x-sub", "forged"),
	    {(uint8_t *)"authorization", (uint8_t *)auth, 13, strlen(auth), NGHTTP2_NV_FLAG_NONE}};
#undef NV
	assert_true(nghttp2_submit_request(s, NULL, nv, 6, NULL, NULL) > 0);
	h2c_pump(s, &c);
	struct peer *u = hh_upstream(0);
	assert_non_null(u);
	if (!memmem(u->log, u->log_len, "x-sub: u1\r\n", 11) ||
	    memmem(u->log, u->log_len, "forged", 6) ||
	    memmem(u->log, u->log_len, "authorization", 13))
		fail_msg("the upstream got: %.*s", (int)u->log_len, u->log);
	static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	hh_send(u, ok, sizeof(ok) - 1, 0);
	for (int i = 0; i < 20 && !c.closed; i++)
		h2c_pump(s, &c);
	assert_true(c.closed);
	c.head[c.hl] = 0;
	if (!strstr(c.head, ":status: 200\n"))
		fail_msg("the head: %s", c.head);
	nghttp2_session_del(s);
	free(c.body);
	hh_end();
	hh_clients_h2 = false;
	tjwt_free(&k);
}

/* clang-format off */
/* Listener "dyn" (port 82): basic_auth (alice:secret, the name upstream in
 * x-user) before the router. */
#define BA_H2_LISTENER                                                                             \
	"{\"name\":\"dyn\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","              \
	"\"port_value\":82}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","                  \
	"\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.filters.network."      \
	"http_connection_manager.v3.HttpConnectionManager\",\"stat_prefix\":\"ba2\","              \
	"\"route_config\":{\"name\":\"dyn\",\"virtual_hosts\":[{\"name\":\"all\",\"domains\":"     \
	"[\"*\"],\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}]}]},"  \
	"\"http_filters\":[{\"name\":\"ba\",\"typed_config\":{\"@type\":\"type.googleapis.com/"    \
	"envoy.extensions.filters.http.basic_auth.v3.BasicAuth\",\"users\":{\"inline_string\":"    \
	"\"alice:{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ=\"},\"forward_username_header\":\"x-user\"}},"    \
	"{\"name\":\"envoy.filters.http.router\",\"typed_config\":{\"@type\":"                     \
	"\"type.googleapis.com/envoy.extensions.filters.http.router.v3.Router\"}}]}}]}]}"
/* clang-format on */

/* envoy.filters.http.basic_auth over an HTTP/2 client: a wrong password
 * is answered 401 with www-authenticate Basic (:authority and :path as
 * the realm), never reaching the upstream; alice's credential in the
 * authorization field goes upstream with x-user (the client's forged one
 * replaced: the filter's edit on the HTTP/2 codec's fields). */
static void test_http2_basic_auth(void **state)
{
	(void)state;
	hh_clients_h2 = true;
	hh_begin(1);
	hh_apply(ARN_TYPE_URL_LISTENER, BA_H2_LISTENER);
	hh_cfg_changed = true;
	hh_settle();
	struct h2c c = {.p = client(0, 82), .bcap = 1 << 16};
	c.body = malloc(c.bcap);
	assert_non_null(c.body);
	nghttp2_session_callbacks *cb;
	nghttp2_session_callbacks_new(&cb);
	nghttp2_session_callbacks_set_send_callback(cb, h2c_send);
	nghttp2_session_callbacks_set_on_header_callback(cb, h2c_header);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, h2c_data);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, h2c_close);
	nghttp2_session *s;
	assert_int_equal(nghttp2_session_client_new(&s, cb, &c), 0);
	nghttp2_session_callbacks_del(cb);
	nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, NULL, 0);
#define NV(a, b)                                                                                   \
	{(uint8_t *)(a), (uint8_t *)(b), sizeof(a) - 1, sizeof(b) - 1, NGHTTP2_NV_FLAG_NONE}
	nghttp2_nv nv0[] = {NV(":method", "GET"), NV(":path", "/t?q"), NV(":scheme", "http"),
			    NV(":authority", "a"), NV("authorization", "Basic YWxpY2U6d3Jvbmc=")};
	assert_true(nghttp2_submit_request(s, NULL, nv0, 5, NULL, NULL) > 0);
	h2c_pump(s, &c);
	assert_true(c.closed);
	assert_null(hh_upstream(0));
	c.head[c.hl] = 0;
	if (!strstr(c.head, ":status: 401\n") ||
	    !strstr(c.head, "www-authenticate: Basic realm=\"http://a/t?q\"\n"))
		fail_msg("the head: %s", c.head);
	c.closed = false;
	c.hl = 0;
	nghttp2_nv nv[] = {NV(":method", "GET"),   NV(":path", "/t"),
			   NV(":scheme", "http"),  NV(":authority", "a"),
			   NV("x-user", "forged"), NV("authorization", "Basic YWxpY2U6c2VjcmV0")};
#undef NV
	assert_true(nghttp2_submit_request(s, NULL, nv, 6, NULL, NULL) > 0);
	h2c_pump(s, &c);
	struct peer *u = hh_upstream(0);
	assert_non_null(u);
	if (!memmem(u->log, u->log_len, "x-user: alice\r\n", 15) ||
	    memmem(u->log, u->log_len, "forged", 6))
		fail_msg("the upstream got: %.*s", (int)u->log_len, u->log);
	static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	hh_send(u, ok, sizeof(ok) - 1, 0);
	for (int i = 0; i < 20 && !c.closed; i++)
		h2c_pump(s, &c);
	assert_true(c.closed);
	c.head[c.hl] = 0;
	if (!strstr(c.head, ":status: 200\n"))
		fail_msg("the head: %s", c.head);
	nghttp2_session_del(s);
	free(c.body);
	hh_end();
	hh_clients_h2 = false;
}

/* envoy.filters.http.fault over an HTTP/2 client (the "dyn" listener's
 * header-asked fault): a delayed stream resumes through the HTTP/2
 * stream's resume_head and goes upstream; an asked abort answers it. */
static void test_http2_fault(void **state)
{
	(void)state;
	hh_clients_h2 = true;
	hh_begin(1);
	struct arn_stats_scope *sc =
	    arn_stats_scope_get_named(&arn_stats_fault_schema, "http.dyn.fault", NULL, NULL);
	assert_non_null(sc);
	uint64_t d0 = arn_stats_counter_value(sc, ARN_FAULT_delays_injected);
	uint64_t a0 = arn_stats_counter_value(sc, ARN_FAULT_aborts_injected);
	struct h2c c = {.p = client(0, 82), .bcap = 1 << 16};
	c.body = malloc(c.bcap);
	assert_non_null(c.body);
	nghttp2_session *s = h2c_session(&c);
#define NV(a, b)                                                                                   \
	{(uint8_t *)(a), (uint8_t *)(b), sizeof(a) - 1, sizeof(b) - 1, NGHTTP2_NV_FLAG_NONE}
	nghttp2_nv nv[] = {NV(":method", "GET"), NV(":path", "/f"), NV(":scheme", "http"),
			   NV(":authority", "a"), NV("x-envoy-fault-delay-request", "40")};
	assert_true(nghttp2_submit_request(s, NULL, nv, 5, NULL, NULL) > 0);
	assert_int_equal(nghttp2_session_send(s), 0);
	hh_settle();
	assert_null(hh_upstream(0)); /* held */
	assert_int_equal(arn_stats_counter_value(sc, ARN_FAULT_delays_injected), d0 + 1);
	h2c_pump(s, &c); /* past the 40 ms */
	struct peer *u = hh_upstream(0);
	assert_non_null(u);
	static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	hh_send(u, ok, sizeof(ok) - 1, 0);
	for (int i = 0; i < 20 && !c.closed; i++)
		h2c_pump(s, &c);
	assert_true(c.closed);
	c.head[c.hl] = 0;
	assert_non_null(strstr(c.head, ":status: 200\n"));
	c.closed = false;
	c.hl = 0;
	nghttp2_nv ab[] = {NV(":method", "GET"), NV(":path", "/f"), NV(":scheme", "http"),
			   NV(":authority", "a"), NV("x-envoy-fault-abort-request", "503")};
#undef NV
	assert_true(nghttp2_submit_request(s, NULL, ab, 5, NULL, NULL) > 0);
	h2c_pump(s, &c);
	assert_true(c.closed);
	c.head[c.hl] = 0;
	if (!strstr(c.head, ":status: 503\n"))
		fail_msg("the head: %s", c.head);
	assert_int_equal(arn_stats_counter_value(sc, ARN_FAULT_aborts_injected), a0 + 1);
	arn_stats_scope_put(sc);
	nghttp2_session_del(s);
	free(c.body);
	hh_end();
	hh_clients_h2 = false;
}

/* clang-format off */
#define OA_H2_LISTENER                                                                             \
	"{\"name\":\"dyn\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","              \
	"\"port_value\":82}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","                  \
	"\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.filters.network."      \
	"http_connection_manager.v3.HttpConnectionManager\",\"stat_prefix\":\"oa2\","              \
	"\"route_config\":{\"name\":\"dyn\",\"virtual_hosts\":[{\"name\":\"all\",\"domains\":"     \
	"[\"*\"],\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}]}]},"  \
	"\"http_filters\":[{\"name\":\"oa\",\"typed_config\":{\"@type\":\"type.googleapis.com/"    \
	"envoy.extensions.filters.http.oauth2.v3.OAuth2\",\"config\":{\"token_endpoint\":{"        \
	"\"uri\":\"https://idp/t\",\"cluster\":\"web\",\"timeout\":\"1s\"},"                       \
	"\"authorization_endpoint\":\"https://idp/auth\",\"credentials\":{\"client_id\":\"c\","    \
	"\"token_secret\":{\"name\":\"dyn\"},\"hmac_secret\":{\"name\":\"dyn\"}},"                 \
	"\"redirect_uri\":\"%REQ(:scheme)%://%REQ(:authority)%/cb\","                              \
	"\"redirect_path_matcher\":{\"path\":{\"exact\":\"/cb\"}},"                                \
	"\"signout_path\":{\"path\":{\"exact\":\"/out\"}},\"forward_bearer_token\":true}}},"       \
	"{\"name\":\"envoy.filters.http.router\",\"typed_config\":{\"@type\":"                     \
	"\"type.googleapis.com/envoy.extensions.filters.http.router.v3.Router\"}}]}}]}]}"
/* clang-format on */

/* envoy.filters.http.oauth2 over an HTTP/2 client: no cookies is the 302
 * to the authorization endpoint, its state from :scheme, :authority and
 * :path, with the nonce cookie; cookies whose HMAC (computed here with
 * OpenSSL's HMAC) is right reach the upstream with the Bearer. */
static void test_http2_oauth2(void **state)
{
	(void)state;
	hh_clients_h2 = true;
	hh_begin(1);
	hh_apply(ARN_TYPE_URL_SECRET,
		 "{\"name\":\"dyn\",\"generic_secret\":{\"secret\":{\"inline_string\":\"k\"}}}");
	hh_apply(ARN_TYPE_URL_LISTENER, OA_H2_LISTENER);
	hh_cfg_changed = true;
	hh_settle();
	struct h2c c = {.p = client(0, 82), .bcap = 1 << 16};
	c.body = malloc(c.bcap);
	assert_non_null(c.body);
	nghttp2_session_callbacks *cb;
	nghttp2_session_callbacks_new(&cb);
	nghttp2_session_callbacks_set_send_callback(cb, h2c_send);
	nghttp2_session_callbacks_set_on_header_callback(cb, h2c_header);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, h2c_data);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, h2c_close);
	nghttp2_session *s;
	assert_int_equal(nghttp2_session_client_new(&s, cb, &c), 0);
	nghttp2_session_callbacks_del(cb);
	nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, NULL, 0);
#define NV(a, b) {(uint8_t *)(a), (uint8_t *)(b), strlen(a), strlen(b), NGHTTP2_NV_FLAG_NONE}
	nghttp2_nv nv0[] = {NV(":method", "GET"), NV(":path", "/p?q"), NV(":scheme", "http"),
			    NV(":authority", "a")};
	assert_true(nghttp2_submit_request(s, NULL, nv0, 4, NULL, NULL) > 0);
	h2c_pump(s, &c);
	assert_true(c.closed);
	assert_null(hh_upstream(0));
	c.head[c.hl] = 0;
	if (!strstr(c.head, ":status: 302\n") ||
	    !strstr(c.head,
		    "location: https://idp/auth?client_id=c&redirect_uri=http%3A%2F%2Fa%2Fcb"
		    "&response_type=code&scope=user&state=url%3Dhttp%253A%252F%252Fa%252Fp%"
		    "253Fq%26nonce%3D") ||
	    !strstr(c.head, "set-cookie: OauthNonce="))
		fail_msg("the head: %s", c.head);
	c.closed = false;
	c.hl = 0;
	char exp[32], payload[128], cookie[256];
	snprintf(exp, sizeof(exp), "%lld", (long long)time(NULL) + 600);
	snprintf(payload, sizeof(payload), "a\n%s\ntok\n\n", exp);
	unsigned char md[32];
	unsigned int ml = 0;
	HMAC(EVP_sha256(), "k", 1, (const unsigned char *)payload, strlen(payload), md, &ml);
	char mac[48];
	EVP_EncodeBlock((unsigned char *)mac, md, 32);
	snprintf(cookie, sizeof(cookie), "OauthHMAC=%s; OauthExpires=%s; BearerToken=tok", mac,
		 exp);
	nghttp2_nv nv[] = {NV(":method", "GET"), NV(":path", "/p"), NV(":scheme", "http"),
			   NV(":authority", "a"), NV("cookie", cookie)};
#undef NV
	assert_true(nghttp2_submit_request(s, NULL, nv, 5, NULL, NULL) > 0);
	h2c_pump(s, &c);
	struct peer *u = hh_upstream(0);
	assert_non_null(u);
	if (!memmem(u->log, u->log_len, "authorization: Bearer tok\r\n", 27))
		fail_msg("the upstream got: %.*s", (int)u->log_len, u->log);
	static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	hh_send(u, ok, sizeof(ok) - 1, 0);
	for (int i = 0; i < 20 && !c.closed; i++)
		h2c_pump(s, &c);
	assert_true(c.closed);
	c.head[c.hl] = 0;
	if (!strstr(c.head, ":status: 200\n"))
		fail_msg("the head: %s", c.head);
	nghttp2_session_del(s);
	free(c.body);
	hh_end();
	hh_clients_h2 = false;
}

int main(void)
{
	hh_init(false);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_gzip_content_length),
	    cmocka_unit_test(test_q_values_choose),
	    cmocka_unit_test(test_chunked_many_pieces_and_trailers),
	    cmocka_unit_test(test_not_compressed),
	    cmocka_unit_test(test_vary_appended_etag),
	    cmocka_unit_test(test_http10_close_delimited),
	    cmocka_unit_test(test_response_direction_config),
	    cmocka_unit_test(test_state_cap),
	    cmocka_unit_test(test_slow_reader_bounded),
	    cmocka_unit_test(test_http2_ext_authz),
	    cmocka_unit_test(test_head_body_end_in_one_piece),
	    cmocka_unit_test(test_filter_toggled_per_route),
	    cmocka_unit_test(test_compressor_per_route),
	    cmocka_unit_test(test_http2_client),
	    cmocka_unit_test(test_http2_cors),
	    cmocka_unit_test(test_http2_client_mirrored),
	    cmocka_unit_test(test_http2_jwt_authn),
	    cmocka_unit_test(test_http2_basic_auth),
	    cmocka_unit_test(test_http2_fault),
	    cmocka_unit_test(test_http2_grpc_web),
	    cmocka_unit_test(test_http2_oauth2),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
