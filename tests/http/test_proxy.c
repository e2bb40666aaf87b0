/*
 * Unit tests of the proxy's pure logic (lib/http/http_router.c and
 * http_lb.c): the upstream request's header edits (XFF, x-forwarded-proto,
 * x-request-id, x-envoy-* sanitising, header mutations at three levels),
 * substitutions, redirects, local replies and load balancing. Requests are
 * parsed with the real codec and edits are applied with its serializer, so
 * what is checked is the text an upstream would receive.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "arn_bootstrap.h"
#include "arn_config.h"
#include "arn_sb.h"
#include "http_fault.h"
#include "http_int.h"
#include "http_session.h"
#include "trex_astf.h"

/* Envoy's HashUtil::xxHash64 (XXH64, seed 0), to state its hashes */
#define XXH_INLINE_ALL
#include <xxhash.h>

/* ---- helpers ------------------------------------------------------------------- */

struct req {
	struct arn_h1_parser p;
	struct arn_h1_msg m;
	struct arn_h1_header h[64];
	char buf[4096];
};

static void parse(struct req *r, const char *text)
{
	snprintf(r->buf, sizeof(r->buf), "%s", text);
	arn_h1_msg_init(&r->m, r->h, 64);
	arn_h1_parser_init(&r->p, ARN_H1_REQUEST, NULL, &r->m);
	struct arn_h1_ev ev;
	ssize_t n = arn_h1_parse(&r->p, r->buf, strlen(r->buf), &ev);
	assert_true(n > 0);
	assert_int_equal(ev.type, ARN_H1_EV_HEAD);
}

/* Apply @p e to @p m's headers; the result, NUL-terminated, in @p out. */
static void apply(const struct arn_h1_msg *m, const struct arn_h1_edit *e, int n, char *out,
		  size_t cap)
{
	/* an edit the router gives its name's id carries the one the writer
	 * would have looked up: the writer trusts it */
	for (int i = 0; i < n; i++) {
		if (e[i].id1)
			assert_int_equal(e[i].id1 - 1, arn_h1_hdr_lookup(e[i].name, e[i].name_len));
		/* an edit that carries its whole line (the HTTP/1 writer copies
		 * it as it is) has name and value where that line has them */
		if (e[i].line) {
			assert_ptr_equal(e[i].value, e[i].name + e[i].name_len + 2);
			assert_memory_equal(e[i].name + e[i].name_len, ": ", 2);
			assert_memory_equal(e[i].value + e[i].value_len, "\r\n", 2);
		}
	}
	struct arn_h1_wbuf w;
	arn_h1_wbuf_init(&w, out, (uint32_t)cap - 1, NULL, NULL);
	assert_int_equal(arn_h1_write_headers(&w, m, e, (unsigned)n, ARN_H1_W_DROP_HOP), 0);
	out[w.len] = 0;
}

static char text[HTTP_TEXT];

static struct http_req_ctx ctx(const struct arn_cfg_hcm *h)
{
	struct http_req_ctx x = {
	    .hcm = h,
	    .raddr = 0xc6120001, /* 198.18.0.1 */
	    .rport = 40000,
	    .laddr = 0xc6120002,
	    .lport = 80,
	    .rand_hi = 0x0123456789abcdefull,
	    .rand_lo = 0xfedcba9876543210ull,
	    .text = text,
	    .text_cap = sizeof(text),
	};
	return x;
}

static struct arn_cfg_hcm hcm_default(void)
{
	struct arn_cfg_hcm h;
	memset(&h, 0, sizeof(h));
	h.generate_request_id = true;
	h.server_name = "envoy";
	/* internal_address_config {}: RFC 1918 peers internal, the rule these
	 * tests were written for (unset, Envoy 1.36 has none: test_xfcc.c) */
	h.internal_cfg = true;
	return h;
}

static const char *edited(struct http_req_ctx *x, struct req *r, char *out, size_t cap)
{
	struct arn_h1_edit e[ARN_H1_MAX_EDITS];
	/* as the connection manager's head does (on_head), then the router */
	if (r->m.flags & ARN_H1_F_PROXY_FIELDS)
		http_req_sanitize(x->hcm, &r->m, x->raddr, x->mtls);
	int n = http_req_edits(x, &r->m, e, ARN_H1_MAX_EDITS);
	assert_true(n >= 0);
	apply(&r->m, e, n, out, cap);
	return out;
}

/* ---- x-forwarded-for / x-forwarded-proto / x-request-id ------------------------- */

static void test_xff_edge_appends_the_peer(void **state)
{
	(void)state;
	struct arn_cfg_hcm h = hcm_default();
	h.use_remote_address = true;
	struct req r;
	parse(&r, "GET / HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 203.0.113.7\r\n\r\n");
	struct http_req_ctx x = ctx(&h);
	char out[2048];
	edited(&x, &r, out, sizeof(out));
	assert_non_null(strstr(out, "X-Forwarded-For: 203.0.113.7,198.18.0.1\r\n")
			    ?: strstr(out, "x-forwarded-for: 203.0.113.7,198.18.0.1\r\n"));
	assert_int_equal(x.client_addr, 0xc6120001); /* no trusted hops: the peer */
	assert_false(x.internal);
	/* external request at the edge: x-envoy-external-address is the client */
	assert_non_null(strstr(out, "x-envoy-external-address: 198.18.0.1\r\n"));
}

static void test_xff_without_use_remote_address_is_kept(void **state)
{
	(void)state;
	struct arn_cfg_hcm h = hcm_default();
	struct req r;
	parse(&r, "GET / HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 203.0.113.7, 10.0.0.1\r\n\r\n");
	struct http_req_ctx x = ctx(&h);
	char out[2048];
	edited(&x, &r, out, sizeof(out));
	assert_non_null(strstr(out, "X-Forwarded-For: 203.0.113.7, 10.0.0.1\r\n"));
	assert_null(strstr(out, "198.18.0.1"));
	assert_int_equal(x.client_addr, 0x0a000001); /* the last element */
}

static void test_xff_trusted_hops(void **state)
{
	(void)state;
	struct arn_cfg_hcm h = hcm_default();
	struct req r;
	bool internal;
	parse(&r, "GET / HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 203.0.113.128, 203.0.113.10, "
		  "203.0.113.1\r\n\r\n");
	/* Envoy's documented examples */
	h.xff_num_trusted_hops = 1;
	assert_int_equal(http_client_addr(&h, &r.m, 0xc0000205, &internal), 0xcb00710a);
	h.use_remote_address = true;
	assert_int_equal(http_client_addr(&h, &r.m, 0xc0000205, &internal), 0xcb007101);
	h.xff_num_trusted_hops = 0;
	assert_int_equal(http_client_addr(&h, &r.m, 0xc0000205, &internal), 0xc0000205);
	/* more trusted hops than addresses: the peer */
	h.xff_num_trusted_hops = 5;
	assert_int_equal(http_client_addr(&h, &r.m, 0xc0000205, &internal), 0xc0000205);
}

/* A large head: a chain of @p n XFF elements, attacker-chosen ones first
 * (6.6.<i>.<i>), then the client 203.0.113.9 and the trusted proxy
 * 10.1.1.1, spread over @p lines X-Forwarded-For lines (one element per
 * line when lines >= n; an empty line before each). */
struct big_req {
	struct arn_h1_parser p;
	struct arn_h1_msg m;
	struct arn_h1_header h[128];
	char buf[8192];
};

static void parse_chain(struct big_req *r, unsigned n, unsigned lines)
{
	size_t o = (size_t)snprintf(r->buf, sizeof(r->buf), "GET / HTTP/1.1\r\nHost: a\r\n");
	unsigned per = (n + lines - 1) / lines;
	for (unsigned i = 0; i < n; i++) {
		if (i % per == 0) {
			if (lines > 1) /* empty lines add nothing to the joined value */
				o += (size_t)snprintf(
				    r->buf + o, sizeof(r->buf) - o,
				    "%sX-Forwarded-For:\r\nX-Forwarded-For: ", i ? "\r\n" : "");
			else
				o += (size_t)snprintf(r->buf + o, sizeof(r->buf) - o,
						      "X-Forwarded-For: ");
		} else {
			o += (size_t)snprintf(r->buf + o, sizeof(r->buf) - o, ", ");
		}
		if (i == n - 2)
			o += (size_t)snprintf(r->buf + o, sizeof(r->buf) - o, "203.0.113.9");
		else if (i == n - 1)
			o += (size_t)snprintf(r->buf + o, sizeof(r->buf) - o, "10.1.1.1");
		else
			o += (size_t)snprintf(r->buf + o, sizeof(r->buf) - o, "6.6.%u.%u", i % 256,
					      i % 256);
	}
	o += (size_t)snprintf(r->buf + o, sizeof(r->buf) - o, "\r\n\r\n");
	assert_true(o < sizeof(r->buf) - 1);
	arn_h1_msg_init(&r->m, r->h, 128);
	struct arn_h1_config pc = {.max_headers = 128};
	arn_h1_parser_init(&r->p, ARN_H1_REQUEST, &pc, &r->m);
	struct arn_h1_ev ev;
	ssize_t k = arn_h1_parse(&r->p, r->buf, o, &ev);
	assert_true(k > 0);
	assert_int_equal(ev.type, ARN_H1_EV_HEAD);
}

/*
 * Issue 12 item 7: the trusted-hop choice counts from the right over the
 * whole X-Forwarded-For value, as Envoy's getLastAddressFromXFF does over
 * the lines its header map joined; a long chain (it used to be cut at 32
 * elements, so the 33rd from the left was never seen and the "client" was
 * an attacker's element) or a chain split over lines changes nothing.
 */
static void test_xff_long_chains_and_lines(void **state)
{
	(void)state;
	static const unsigned lens[] = {31, 32, 33, 100};
	static const unsigned splits[] = {1, 2, 7, 60};
	const uint32_t client = 0xcb007109; /* 203.0.113.9 */
	const uint32_t proxy = 0x0a010101;  /* 10.1.1.1 */
	struct big_req *r = malloc(sizeof(*r));
	assert_non_null(r);
	for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++)
		for (size_t si = 0; si < sizeof(splits) / sizeof(splits[0]); si++) {
			unsigned n = lens[li];
			parse_chain(r, n, splits[si]);
			struct arn_cfg_hcm h = hcm_default();
			bool internal = true;
			/* at the edge, behind one trusted proxy that appended the
			 * client (10.1.1.1 connected to it, it connected to us) */
			h.use_remote_address = true;
			h.xff_num_trusted_hops = 2;
			assert_int_equal(http_client_addr(&h, &r->m, 0xc6120001, &internal),
					 client);
			assert_false(internal);
			h.xff_num_trusted_hops = 1;
			assert_int_equal(http_client_addr(&h, &r->m, 0xc6120001, &internal), proxy);
			/* as many hops as elements: the leftmost; one more: the peer */
			h.xff_num_trusted_hops = n;
			assert_int_equal(http_client_addr(&h, &r->m, 0xc6120001, &internal),
					 n - 2 ? 0x06060000u : client);
			h.xff_num_trusted_hops = n + 1;
			assert_int_equal(http_client_addr(&h, &r->m, 0xc6120001, &internal),
					 0xc6120001);
			/* behind proxies, not at the edge: skip the trusted hops */
			h.use_remote_address = false;
			h.xff_num_trusted_hops = 1;
			assert_int_equal(http_client_addr(&h, &r->m, 0xc6120001, &internal),
					 client);
			assert_false(internal);
			h.xff_num_trusted_hops = 0;
			assert_int_equal(http_client_addr(&h, &r->m, 0xc6120001, &internal), proxy);
			assert_false(internal); /* a chain, not a single address */
			h.xff_num_trusted_hops = n - 1;
			assert_int_equal(http_client_addr(&h, &r->m, 0xc6120001, &internal),
					 n - 2 ? 0x06060000u : client);
			h.xff_num_trusted_hops = n;
			assert_int_equal(http_client_addr(&h, &r->m, 0xc6120001, &internal),
					 0xc6120001);

			/* what goes upstream: the external address is the client,
			 * and the chain arrives whole with the peer appended */
			h = hcm_default();
			h.use_remote_address = true;
			h.xff_num_trusted_hops = 2;
			struct http_req_ctx x = ctx(&h);
			static char out[16384];
			struct arn_h1_edit e[ARN_H1_MAX_EDITS];
			int k = http_req_edits(&x, &r->m, e, ARN_H1_MAX_EDITS);
			assert_true(k >= 0);
			apply(&r->m, e, k, out, sizeof(out));
			assert_non_null(strstr(out, "x-envoy-external-address: 203.0.113.9\r\n"));
			assert_non_null(strstr(out, "203.0.113.9, 10.1.1.1,198.18.0.1\r\n")
					    ?: strstr(out, "203.0.113.9,10.1.1.1,198.18.0.1\r\n"));
			assert_non_null(strstr(out, ": 6.6.0.0, 6.6.1.1")
					    ?: strstr(out, ": 6.6.0.0,6.6.1.1"));
		}
	free(r);
}

/* Envoy's details of the walk: empty elements count (and are no address),
 * an empty line adds nothing, blanks around an element do not matter, and
 * a single address is one without a comma. */
static void test_xff_empty_elements_and_lines(void **state)
{
	(void)state;
	struct arn_cfg_hcm h = hcm_default();
	struct req r;
	bool internal;
	h.xff_num_trusted_hops = 1;
	parse(&r, "GET / HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 10.0.0.1,,10.0.0.3\r\n\r\n");
	assert_int_equal(http_client_addr(&h, &r.m, 0xc6120001, &internal), 0xc6120001);
	h.xff_num_trusted_hops = 2;
	assert_int_equal(http_client_addr(&h, &r.m, 0xc6120001, &internal), 0x0a000001);
	/* lines: "10.0.0.1" + "" + " 10.0.0.2 " joined to "10.0.0.1,10.0.0.2" */
	parse(&r, "GET / HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 10.0.0.1\r\n"
		  "X-Forwarded-For:\r\nX-Forwarded-For:  10.0.0.2 \r\n\r\n");
	h.xff_num_trusted_hops = 1;
	assert_int_equal(http_client_addr(&h, &r.m, 0xc6120001, &internal), 0x0a000001);
	assert_false(internal); /* one skipped: not Envoy's single address */
	h.xff_num_trusted_hops = 0;
	assert_int_equal(http_client_addr(&h, &r.m, 0xc6120001, &internal), 0x0a000002);
	assert_false(internal);
	parse(&r, "GET / HTTP/1.1\r\nHost: a\r\nX-Forwarded-For:\r\n"
		  "X-Forwarded-For: 10.0.0.2\r\n\r\n");
	assert_int_equal(http_client_addr(&h, &r.m, 0xc6120001, &internal), 0x0a000002);
	assert_true(internal); /* a single internal address */
	/* a trailing comma: Envoy keeps "10.0.0.2," whole, which is no address */
	parse(&r, "GET / HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 10.0.0.2,\r\n\r\n");
	assert_int_equal(http_client_addr(&h, &r.m, 0xc6120001, &internal), 0xc6120001);
	assert_false(internal);
	/* sent upstream: an empty first line does not glue the appended peer
	 * to the last element */
	h.use_remote_address = true;
	parse(&r, "GET / HTTP/1.1\r\nHost: a\r\nX-Forwarded-For:\r\n"
		  "X-Forwarded-For: 203.0.113.7\r\n\r\n");
	struct http_req_ctx x = ctx(&h);
	char out[2048];
	edited(&x, &r, out, sizeof(out));
	assert_non_null(strstr(out, "X-Forwarded-For: 203.0.113.7,198.18.0.1\r\n"));
	assert_null(strstr(out, "203.0.113.7198"));
}

/* Envoy's getLastAddressFromXFF on the joined value, written as Envoy
 * writes it (rfind from the right), as the reference for the walk. */
static bool ref_ip4(const char *s, size_t n, uint32_t *out)
{
	uint32_t a = 0;
	unsigned parts = 0, v = 0, digits = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i == n || s[i] == '.') {
			if (!digits || v > 255)
				return false;
			a = a << 8 | v;
			parts++;
			v = digits = 0;
		} else if (s[i] >= '0' && s[i] <= '9' && digits < 3) {
			v = v * 10 + (unsigned)(s[i] - '0');
			digits++;
		} else {
			return false;
		}
	}
	*out = a;
	return parts == 4;
}

static bool ref_xff(const char *joined, size_t n, unsigned skip, uint32_t *out, bool *single)
{
	for (unsigned i = 0; i < skip; i++) {
		const char *c = NULL;
		for (size_t k = n; k-- > 0;)
			if (joined[k] == ',') {
				c = joined + k;
				break;
			}
		if (!c)
			return false;
		n = (size_t)(c - joined);
	}
	const char *s = joined, *c = NULL;
	for (size_t k = n; k-- > 0;)
		if (joined[k] == ',') {
			c = joined + k;
			break;
		}
	if (c && (size_t)(c - joined) + 1 < n)
		s = c + 1;
	size_t len = n - (size_t)(s - joined);
	while (len && (*s == ' ' || *s == '\t'))
		s++, len--;
	while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	*single = !c && skip == 0;
	return ref_ip4(s, len, out);
}

/* Random chains (addresses, empty elements, blanks, junk) on random lines
 * (some empty): the walk picks what Envoy picks from the joined value. */
static void test_xff_matches_envoy_on_random_chains(void **state)
{
	(void)state;
	static const char *const el[] = {"10.0.0.1",	" 10.0.0.2", "10.0.0.3 ", "",  " ",
					 "203.0.113.9", "1.2.3",     "300.1.1.1", "a", "7.7.7.7"};
	uint64_t rng = 0x9e3779b97f4a7c15ull;
	struct big_req *r = malloc(sizeof(*r));
	assert_non_null(r);
	for (int round = 0; round < 20000; round++) {
		char joined[2048];
		size_t jn = 0;
		size_t o =
		    (size_t)snprintf(r->buf, sizeof(r->buf), "GET / HTTP/1.1\r\nHost: a\r\n");
		unsigned lines = 1 + (unsigned)((rng >> 33) % 5);
		for (unsigned l = 0; l < lines; l++) {
			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			unsigned n = (unsigned)((rng >> 33) % 5); /* elements; 0: an empty line */
			char v[512];
			size_t vn = 0;
			for (unsigned k = 0; k < n; k++) {
				rng = rng * 6364136223846793005ull + 1442695040888963407ull;
				vn += (size_t)snprintf(v + vn, sizeof(v) - vn, "%s%s", k ? "," : "",
						       el[(rng >> 33) % 10]);
			}
			/* the parser trims the value's blanks, as Envoy's codec does */
			size_t b = 0, e = vn;
			while (b < e && v[b] == ' ')
				b++;
			while (e > b && v[e - 1] == ' ')
				e--;
			o += (size_t)snprintf(r->buf + o, sizeof(r->buf) - o,
					      "X-Forwarded-For: %.*s\r\n", (int)(e - b), v + b);
			if (e > b) { /* Envoy's append: a comma only between non-empty values */
				if (jn)
					joined[jn++] = ',';
				memcpy(joined + jn, v + b, e - b);
				jn += e - b;
			}
		}
		o += (size_t)snprintf(r->buf + o, sizeof(r->buf) - o, "\r\n");
		arn_h1_msg_init(&r->m, r->h, 128);
		struct arn_h1_config pc = {.max_headers = 128};
		arn_h1_parser_init(&r->p, ARN_H1_REQUEST, &pc, &r->m);
		struct arn_h1_ev ev;
		assert_true(arn_h1_parse(&r->p, r->buf, o, &ev) > 0);
		struct arn_cfg_hcm h = hcm_default();
		for (unsigned skip = 0; skip < 6; skip++) {
			uint32_t want = 0xc6120001, a;
			bool single = false, internal;
			if (ref_xff(joined, jn, skip, &a, &single))
				want = a;
			else
				single = false;
			h.xff_num_trusted_hops = skip;
			uint32_t got = http_client_addr(&h, &r->m, 0xc6120001, &internal);
			if (got != want || internal != (single && (want >> 24) == 10))
				fail_msg("skip %u of '%.*s': got %08x internal %d, Envoy %08x %d",
					 skip, (int)jn, joined, got, internal, want, single);
		}
	}
	free(r);
}

static void test_internal_request_keeps_request_id(void **state)
{
	(void)state;
	struct arn_cfg_hcm h = hcm_default();
	h.use_remote_address = true;
	struct req r;
	parse(&r, "GET / HTTP/1.1\r\nHost: a\r\nX-Request-Id: abc\r\n\r\n");
	struct http_req_ctx x = ctx(&h);
	x.raddr = 0x0a000005; /* 10.0.0.5: RFC 1918, internal */
	char out[2048];
	edited(&x, &r, out, sizeof(out));
	assert_true(x.internal);
	assert_non_null(strstr(out, "X-Request-Id: abc\r\n"));
	assert_non_null(strstr(out, "x-envoy-internal: true\r\n"));
	assert_null(strstr(out, "x-envoy-external-address"));
}

/* A generated id is the random words' bytes, lowest first, as a UUID 4
 * (http_request_id_fmt): the values the byte-at-a-time formatting gave,
 * every hex digit (0-9 and a-f, each position) and the version and
 * variant bits over all-zero and all-one words. */
static void test_generated_request_id_is_the_words_uuid(void **state)
{
	(void)state;
	static const struct {
		uint64_t hi, lo;
		const char *id;
	} c[] = {
	    {0x0123456789abcdefull, 0xfedcba9876543210ull, "efcdab89-6745-4301-9032-547698badcfe"},
	    {0, 0, "00000000-0000-4000-8000-000000000000"},
	    {~0ull, ~0ull, "ffffffff-ffff-4fff-bfff-ffffffffffff"},
	    {0x9a9a9a9a9a9a9a9aull, 0x0f0f0f0f0f0f0f0full, "9a9a9a9a-9a9a-4a9a-8f0f-0f0f0f0f0f0f"},
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		char out[HTTP_REQUEST_ID_LEN + 1];
		memset(out, '#', sizeof(out));
		http_request_id_fmt(c[i].hi, c[i].lo, out);
		assert_int_equal(out[HTTP_REQUEST_ID_LEN], '#'); /* nothing past it */
		assert_memory_equal(out, c[i].id, HTTP_REQUEST_ID_LEN);
	}
	/* and as the request's edit, NUL-terminated in the text */
	struct arn_cfg_hcm h = hcm_default();
	struct req r;
	parse(&r, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
	struct http_req_ctx x = ctx(&h);
	char out[2048];
	edited(&x, &r, out, sizeof(out));
	assert_non_null(strstr(out, "\r\nx-request-id: efcdab89-6745-4301-9032-547698badcfe\r\n"));
	assert_int_equal(x.request_id_len, HTTP_REQUEST_ID_LEN);
	assert_string_equal(x.request_id, "efcdab89-6745-4301-9032-547698badcfe");
}

static void test_external_request_id_regenerated_unless_preserved(void **state)
{
	(void)state;
	struct arn_cfg_hcm h = hcm_default();
	h.use_remote_address = true;
	struct req r;
	parse(&r,
	      "GET / HTTP/1.1\r\nHost: a\r\nX-Request-Id: abc\r\nX-Envoy-Retry-On: 5xx\r\n\r\n");
	struct http_req_ctx x = ctx(&h);
	char out[2048];
	edited(&x, &r, out, sizeof(out));
	assert_null(strstr(out, "abc"));
	assert_non_null(x.request_id);
	assert_int_equal(x.request_id_len, 36);
	assert_int_equal(x.request_id[14], '4');      /* UUID version 4 */
	assert_null(strstr(out, "X-Envoy-Retry-On")); /* x-envoy-* from outside dropped */
	h.preserve_external_request_id = true;
	x = ctx(&h);
	edited(&x, &r, out, sizeof(out));
	assert_non_null(strstr(out, "X-Request-Id: abc\r\n"));
	/* generate_request_id false: nothing added */
	h.generate_request_id = false;
	parse(&r, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
	x = ctx(&h);
	edited(&x, &r, out, sizeof(out));
	assert_null(strstr(out, "x-request-id"));
}

static void test_forwarded_proto(void **state)
{
	(void)state;
	struct arn_cfg_hcm h = hcm_default();
	struct req r;
	parse(&r, "GET / HTTP/1.1\r\nHost: a\r\nX-Forwarded-Proto: https\r\n\r\n");
	struct http_req_ctx x = ctx(&h);
	char out[2048];
	edited(&x, &r, out, sizeof(out));
	/* untrusted previous hop: overwritten with what we see (plain text) */
	assert_non_null(strstr(out, "x-forwarded-proto: http\r\n"));
	assert_null(strstr(out, "https"));
	h.xff_num_trusted_hops = 1;
	x = ctx(&h);
	edited(&x, &r, out, sizeof(out));
	assert_non_null(strstr(out, "X-Forwarded-Proto: https\r\n"));
	parse(&r, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
	x = ctx(&h);
	edited(&x, &r, out, sizeof(out));
	assert_non_null(strstr(out, "x-forwarded-proto: http\r\n"));
}

/* RouteAction.append_x_forwarded_host (Envoy's Utility::updateAuthority):
 * a Host the route rewrites goes to x-forwarded-host, appended with ","
 * to what is there unless it is the last value already; not without the
 * flag, nor when the Host was not the route's rewrite. */
static void xfh_case(bool flag, bool rewritten, const char *req, const char *want)
{
	struct arn_cfg_hcm h = hcm_default();
	struct arn_cfg_route rt;
	memset(&rt, 0, sizeof(rt));
	rt.route.host_rewrite_literal = "b.test";
	rt.route.append_x_forwarded_host = flag;
	struct req r;
	parse(&r, req);
	struct http_req_ctx x = ctx(&h);
	x.route = &rt;
	x.host = "b.test";
	x.host_len = 6;
	x.host_rewritten = rewritten;
	char out[2048];
	edited(&x, &r, out, sizeof(out));
	assert_non_null(strstr(out, "host: b.test\r\n"));
	const char *got = strcasestr(out, "x-forwarded-host:");
	if (want == NULL) {
		if (got)
			fail_msg("x-forwarded-host sent: %s", out);
		return;
	}
	if (got == NULL || strncmp(got + 17, want, strlen(want)) != 0 ||
	    strstr(got + 1, "x-forwarded-host") || strstr(got + 1, "X-Forwarded-Host"))
		fail_msg("want x-forwarded-host:%s in\n%s", want, out);
}

static void test_append_x_forwarded_host(void **state)
{
	(void)state;
	xfh_case(true, true, "GET / HTTP/1.1\r\nHost: a.test:8080\r\n\r\n", " a.test:8080\r\n");
	xfh_case(true, true, "GET / HTTP/1.1\r\nHost: a.test\r\nX-Forwarded-Host: z.test\r\n\r\n",
		 " z.test,a.test\r\n");
	/* two lines: joined, then appended */
	xfh_case(true, true,
		 "GET / HTTP/1.1\r\nX-Forwarded-Host: y.test\r\nHost: a.test\r\n"
		 "X-Forwarded-Host: z.test\r\n\r\n",
		 " y.test,z.test,a.test\r\n");
	/* the last value already: left as it came */
	xfh_case(true, true,
		 "GET / HTTP/1.1\r\nHost: a.test\r\nX-Forwarded-Host: z.test, a.test \r\n\r\n",
		 " z.test, a.test");
	/* not asked for, or Host not rewritten by the route */
	xfh_case(false, true, "GET / HTTP/1.1\r\nHost: a.test\r\n\r\n", NULL);
	xfh_case(true, false, "GET / HTTP/1.1\r\nHost: a.test\r\n\r\n", NULL);
	/* an empty Host: nothing to forward */
	xfh_case(true, true, "GET / HTTP/1.1\r\nHost: \r\n\r\n", NULL);
}

static void test_host_timeout_original_path_expect(void **state)
{
	(void)state;
	struct arn_cfg_hcm h = hcm_default();
	struct req r;
	parse(&r, "POST /old HTTP/1.1\r\nHost: a:80\r\nExpect: 100-continue\r\nContent-Length: "
		  "3\r\n\r\n");
	struct http_req_ctx x = ctx(&h);
	x.host = "b.test";
	x.host_len = 6;
	x.timeout_ms = 15000;
	x.path_rewritten = true;
	char out[2048];
	edited(&x, &r, out, sizeof(out));
	assert_non_null(strstr(out, "host: b.test\r\n"));
	assert_null(strstr(out, "a:80"));
	assert_non_null(strstr(out, "x-envoy-expected-rq-timeout-ms: 15000\r\n"));
	assert_non_null(strstr(out, "x-envoy-original-path: /old\r\n"));
	assert_null(strstr(out, "Expect"));
	assert_non_null(strstr(out, "Content-Length: 3\r\n"));
	/* the router's suppress_envoy_headers: no timeout announced */
	h.suppress_envoy_headers = true;
	x = ctx(&h);
	x.timeout_ms = 15000;
	edited(&x, &r, out, sizeof(out));
	assert_null(strstr(out, "x-envoy-expected-rq-timeout-ms"));
}

/* ---- header mutations at three levels ------------------------------------------ */

static struct arn_cfg_header_add add_(const char *k, const char *v, uint8_t append)
{
	struct arn_cfg_header_add a = {
	    .key = k, .key_len = strlen(k), .value = v, .value_len = strlen(v), .append = append};
	return a;
}

/*
 * %REQ(a?b):N% as Envoy's RequestHeaderFormatter reads it: the first of
 * the two headers present, cut to N bytes; %% a literal %. Fails before:
 * a %REQ()% with an alternative or a length was left as its text.
 */
static void test_req_subst_req_forms(void **state)
{
	(void)state;
	struct arn_cfg_hcm h = hcm_default();
	struct arn_cfg_route ro;
	memset(&ro, 0, sizeof(ro));
	struct arn_cfg_header_add ra[] = {
	    add_("x-r", "%REQ(x-none?user-agent):4% %REQ(x-none?x-other)%|%REQ(user-agent)% 5%%",
		 ARN_CFG_APPEND_IF_EXISTS_OR_ADD)};
	ro.headers_ops.req_add = ra;
	ro.headers_ops.n_req_add = 1;
	struct req r;
	parse(&r, "GET / HTTP/1.1\r\nHost: a\r\nUser-Agent: curl/8\r\n\r\n");
	struct http_req_ctx x = ctx(&h);
	x.route = &ro;
	char out[2048];
	edited(&x, &r, out, sizeof(out));
	assert_non_null(strstr(out, "x-r: curl |curl/8 5%\r\n"));
}

/*
 * The request direction's %DOWNSTREAM_DIRECT_REMOTE_ADDRESS% (and
 * _WITHOUT_PORT, _PORT) is the TCP peer (the context's draddr) when a
 * PROXY header gave the connection's remote address, as Envoy's
 * formatters read directRemoteAddress(); without one, the peer itself.
 * Fails before: the request's context had no direct peer and gave the
 * PROXY header's source.
 */
static void test_req_subst_direct_peer(void **state)
{
	(void)state;
	struct arn_cfg_hcm h = hcm_default();
	h.use_remote_address = true;
	struct arn_cfg_route ro;
	memset(&ro, 0, sizeof(ro));
	struct arn_cfg_header_add ra[] = {
	    add_("x-d",
		 "%DOWNSTREAM_DIRECT_REMOTE_ADDRESS% "
		 "%DOWNSTREAM_DIRECT_REMOTE_ADDRESS_WITHOUT_PORT% "
		 "%DOWNSTREAM_DIRECT_REMOTE_PORT% %DOWNSTREAM_REMOTE_ADDRESS%",
		 ARN_CFG_APPEND_IF_EXISTS_OR_ADD)};
	ro.headers_ops.req_add = ra;
	ro.headers_ops.n_req_add = 1;
	struct req r;
	parse(&r, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
	struct http_req_ctx x = ctx(&h);
	x.route = &ro;
	x.raddr = 0xcb007107; /* 203.0.113.7:5555, a PROXY header's source */
	x.rport = 5555;
	x.draddr = 0xc6120064; /* 198.18.0.100:40000, the TCP peer */
	x.drport = 40000;
	char out[2048];
	edited(&x, &r, out, sizeof(out));
	assert_non_null(
	    strstr(out, "x-d: 198.18.0.100:40000 198.18.0.100 40000 203.0.113.7:5555\r\n"));
	/* no PROXY header: the direct peer is the peer */
	x = ctx(&h);
	x.route = &ro;
	edited(&x, &r, out, sizeof(out));
	assert_non_null(strstr(out, "x-d: 198.18.0.1:40000 198.18.0.1 40000 198.18.0.1:40000\r\n"));
}

static void test_header_levels(void **state)
{
	(void)state;
	struct arn_cfg_hcm h = hcm_default();
	struct arn_cfg_route_table rt;
	struct arn_cfg_vhost vh;
	struct arn_cfg_route ro;
	memset(&rt, 0, sizeof(rt));
	memset(&vh, 0, sizeof(vh));
	memset(&ro, 0, sizeof(ro));
	struct arn_cfg_header_add ra[] = {
	    add_("x-a", "route", ARN_CFG_OVERWRITE_IF_EXISTS_OR_ADD),
	    add_("x-sub", "%DOWNSTREAM_REMOTE_ADDRESS% %REQ(user-agent)% 100%%",
		 ARN_CFG_APPEND_IF_EXISTS_OR_ADD)};
	struct arn_cfg_header_add va[] = {add_("x-a", "vhost", ARN_CFG_APPEND_IF_EXISTS_OR_ADD),
					  add_("x-b", "vhost", ARN_CFG_ADD_IF_ABSENT)};
	struct arn_cfg_header_add ta[] = {add_("x-c", "table", ARN_CFG_APPEND_IF_EXISTS_OR_ADD)};
	struct arn_cfg_ref rm[] = {{"x-drop", 6, 0}};
	ro.headers_ops.req_add = ra;
	ro.headers_ops.n_req_add = 2;
	vh.headers_ops.req_add = va;
	vh.headers_ops.n_req_add = 2;
	vh.headers_ops.req_remove = rm;
	vh.headers_ops.n_req_remove = 1;
	rt.headers_ops.req_add = ta;
	rt.headers_ops.n_req_add = 1;
	struct req r;
	parse(&r, "GET / HTTP/1.1\r\nHost: a\r\nX-A: client\r\nX-B: client\r\nX-Drop: "
		  "1\r\nUser-Agent: ua/1\r\n\r\n");
	struct http_req_ctx x = ctx(&h);
	x.rt = &rt;
	x.vhost = &vh;
	x.route = &ro;
	struct arn_h1_edit e[ARN_H1_MAX_EDITS];
	int n = http_req_edits(&x, &r.m, e, ARN_H1_MAX_EDITS);
	assert_true(n > 0);
	/* Envoy's default order: route, then virtual host, then route table */
	int iroute = -1, ivh = -1, itable = -1;
	for (int i = 0; i < n; i++) {
		if (e[i].value && e[i].value_len == 5 && !memcmp(e[i].value, "route", 5))
			iroute = i;
		if (e[i].value && e[i].value_len == 5 && !memcmp(e[i].value, "vhost", 5) && ivh < 0)
			ivh = i;
		if (e[i].value && e[i].value_len == 5 && !memcmp(e[i].value, "table", 5))
			itable = i;
	}
	assert_true(iroute >= 0 && iroute < ivh && ivh < itable);
	char out[2048];
	apply(&r.m, e, n, out, sizeof(out));
	assert_non_null(strstr(out, "x-a: route\r\n")); /* overwrote the client's */
	assert_null(strstr(out, "X-A: client"));
	assert_non_null(strstr(out, "x-a: vhost\r\n"));	 /* appended after */
	assert_non_null(strstr(out, "X-B: client\r\n")); /* ADD_IF_ABSENT: present already */
	assert_null(strstr(out, "x-b: vhost"));
	assert_null(strstr(out, "X-Drop"));
	assert_non_null(strstr(out, "x-c: table\r\n"));
	assert_non_null(strstr(out, "x-sub: 198.18.0.1:40000 ua/1 100%\r\n"));
	/* most_specific_header_mutations_wins reverses the order */
	rt.most_specific_header_mutations_wins = true;
	x = ctx(&h);
	x.rt = &rt;
	x.vhost = &vh;
	x.route = &ro;
	n = http_req_edits(&x, &r.m, e, ARN_H1_MAX_EDITS);
	iroute = itable = -1;
	for (int i = 0; i < n; i++) {
		if (e[i].value && e[i].value_len == 5 && !memcmp(e[i].value, "route", 5))
			iroute = i;
		if (e[i].value && e[i].value_len == 5 && !memcmp(e[i].value, "table", 5))
			itable = i;
	}
	assert_true(itable >= 0 && itable < iroute);
	/* behind a trusted proxy (no use_remote_address) the client is the
	 * X-Forwarded-For address, port 0, as Envoy's stream remote address
	 * (fails before: the proxy's 198.18.0.1:40000) */
	rt.most_specific_header_mutations_wins = false;
	parse(&r, "GET / HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 203.0.113.8\r\n"
		  "User-Agent: ua/1\r\n\r\n");
	x = ctx(&h);
	x.rt = &rt;
	x.vhost = &vh;
	x.route = &ro;
	edited(&x, &r, out, sizeof(out));
	assert_non_null(strstr(out, "x-sub: 203.0.113.8:0 ua/1 100%\r\n"));
}

static void test_response_edits(void **state)
{
	(void)state;
	struct arn_cfg_hcm h = hcm_default();
	struct arn_cfg_vhost vh;
	memset(&vh, 0, sizeof(vh));
	struct arn_cfg_ref rm[] = {{"x-internal", 10, 0}};
	struct arn_cfg_header_add va[] = {
	    add_("x-served-by", "%UPSTREAM_HOST%", ARN_CFG_APPEND_IF_EXISTS_OR_ADD)};
	vh.headers_ops.resp_remove = rm;
	vh.headers_ops.n_resp_remove = 1;
	vh.headers_ops.resp_add = va;
	vh.headers_ops.n_resp_add = 1;
	struct arn_h1_parser p;
	struct arn_h1_msg m;
	struct arn_h1_header hd[16];
	char in[] =
	    "HTTP/1.1 200 OK\r\nServer: nginx\r\nX-Internal: 1\r\nContent-Length: 0\r\n\r\n";
	arn_h1_msg_init(&m, hd, 16);
	arn_h1_parser_init(&p, ARN_H1_RESPONSE, NULL, &m);
	struct arn_h1_ev ev;
	assert_true(arn_h1_parse(&p, in, strlen(in), &ev) > 0);
	struct http_resp_ctx x = {.hcm = &h,
				  .vhost = &vh,
				  .service_ms = 12,
				  .upstream_addr = 0xc6120310,
				  .upstream_port = 8080,
				  .text = text,
				  .text_cap = sizeof(text)};
	struct arn_h1_edit e[ARN_H1_MAX_EDITS];
	int n = http_resp_edits(&x, &m, e, ARN_H1_MAX_EDITS);
	char out[1024];
	apply(&m, e, n, out, sizeof(out));
	assert_non_null(strstr(out, "server: envoy\r\n"));
	assert_null(strstr(out, "nginx"));
	assert_null(strstr(out, "X-Internal"));
	assert_non_null(strstr(out, "x-envoy-upstream-service-time: 12\r\n"));
	assert_non_null(strstr(out, "x-served-by: 198.18.3.16:8080\r\n"));
	/* PASS_THROUGH keeps the upstream's server header */
	h.server_header_transformation = 2;
	x.text_len = 0;
	n = http_resp_edits(&x, &m, e, ARN_H1_MAX_EDITS);
	apply(&m, e, n, out, sizeof(out));
	assert_non_null(strstr(out, "Server: nginx\r\n"));
	assert_non_null(strstr(out, "x-envoy-upstream-service-time: 12\r\n"));
	/* the router's suppress_envoy_headers: no service time */
	h.suppress_envoy_headers = true;
	x.text_len = 0;
	n = http_resp_edits(&x, &m, e, ARN_H1_MAX_EDITS);
	apply(&m, e, n, out, sizeof(out));
	assert_null(strstr(out, "x-envoy-upstream-service-time"));
}

/* The usual response's pair (a converted Server line, the caller's service
 * time, a converted route with no level's response edit: http_resp_edits'
 * own two edits) writes what
 * the general list writes (the service time formatted there), for either
 * Server transformation that adds one. */
static void test_response_edits_usual_pair(void **state)
{
	(void)state;
	struct arn_cfg_hcm h = hcm_default();
	h.server_line = "server: envoy\r\n";
	h.server_name_len = 5;
	/* a converted route without response edits at any level says so */
	struct arn_cfg_route route;
	memset(&route, 0, sizeof(route));
	route.no_hdr_edits = ARN_CFG_NO_RESP_EDITS;
	struct arn_h1_parser p;
	struct arn_h1_msg m;
	struct arn_h1_header hd[16];
	char in[] = "HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Length: 0\r\n\r\n";
	arn_h1_msg_init(&m, hd, 16);
	arn_h1_parser_init(&p, ARN_H1_RESPONSE, NULL, &m);
	struct arn_h1_ev ev;
	assert_true(arn_h1_parse(&p, in, strlen(in), &ev) > 0);
	static const char *const want[] = {
	    "HTTP/1.1 200 OK\r\nserver: envoy\r\nContent-Length: 0\r\n"
	    "x-envoy-upstream-service-time: 12\r\n",
	    "HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Length: 0\r\n"
	    "x-envoy-upstream-service-time: 12\r\n",
	};
	for (unsigned t = 0; t < 2; t++) {
		h.server_header_transformation = (uint8_t)t;
		char out[2][1024];
		for (unsigned general = 0; general < 2; general++) {
			struct http_resp_ctx x = {.hcm = &h,
						  .route = &route,
						  .service_ms = 12,
						  .service_txt = general ? NULL : "12",
						  .service_len = general ? 0 : 2,
						  .text = text,
						  .text_cap = sizeof(text)};
			struct arn_h1_edit e[ARN_H1_MAX_EDITS];
			memset(e, 0x5a, sizeof(e));
			int n = http_resp_edits(&x, &m, e, ARN_H1_MAX_EDITS);
			assert_int_equal(n, 2);
			/* name and value as HTTP/2's encoders read them too */
			assert_int_equal(e[0].id1, ARN_H1_H_SERVER + 1);
			assert_int_equal(e[0].op,
					 t == 0 ? ARN_H1_EDIT_SET : ARN_H1_EDIT_ADD_IF_ABSENT);
			assert_true(e[0].name_len == 6 && memcmp(e[0].name, "server", 6) == 0);
			assert_true(e[0].value_len == 5 && memcmp(e[0].value, "envoy", 5) == 0);
			assert_true(e[1].name_len == 29 &&
				    memcmp(e[1].name, "x-envoy-upstream-service-time", 29) == 0);
			assert_true(e[1].value_len == 2 && memcmp(e[1].value, "12", 2) == 0);
			assert_int_equal(e[1].op, ARN_H1_EDIT_SET);
			struct arn_h1_wbuf w;
			arn_h1_wbuf_init(&w, out[general], sizeof(out[0]) - 1, NULL, NULL);
			arn_h1_write_status_line(&w, m.status, NULL, 0, 1);
			assert_int_equal(arn_h1_write_headers(&w, &m, e, (unsigned)n, 0), 0);
			out[general][w.len] = 0;
		}
		assert_string_equal(out[0], out[1]);
		assert_true(strncmp(out[0], want[t], strlen(want[t])) == 0);
	}
}

/* ---- redirects and local replies ------------------------------------------------- */

static void test_redirects(void **state)
{
	(void)state;
	char b[256];
	struct arn_cfg_redirect r;
	memset(&r, 0, sizeof(r));
	r.path = "/new";
	int k = http_redirect_location(&r, false, "a.test:8080", 11, "/old?x=1", 8, NULL, 0, b,
				       sizeof(b));
	assert_int_equal(k, (int)strlen("http://a.test:8080/new?x=1"));
	assert_memory_equal(b, "http://a.test:8080/new?x=1", (size_t)k);
	r.strip_query = true;
	k = http_redirect_location(&r, false, "a.test", 6, "/old?x=1", 8, NULL, 0, b, sizeof(b));
	assert_memory_equal(b, "http://a.test/new", (size_t)k);
	/* https_redirect: the scheme changes, the plain-text port goes */
	memset(&r, 0, sizeof(r));
	r.scheme = "https";
	k = http_redirect_location(&r, false, "a.test:80", 9, "/p", 2, NULL, 0, b, sizeof(b));
	assert_int_equal(k, (int)strlen("https://a.test/p"));
	assert_memory_equal(b, "https://a.test/p", (size_t)k);
	/* host and port redirect, prefix rewrite */
	memset(&r, 0, sizeof(r));
	r.host = "b.test";
	r.port = 8443;
	r.prefix_rewrite = "/v2/";
	k = http_redirect_location(&r, false, "a.test", 6, "/v1/items?q", 11, "/v1/", 4, b,
				   sizeof(b));
	assert_memory_equal(b, "http://b.test:8443/v2/items?q", (size_t)k);
	assert_int_equal(
	    http_redirect_location(&r, false, "a.test", 6, "/v1/x", 5, "/v1/", 4, b, 8), -ENOSPC);
}

static void test_local_reply_shape(void **state)
{
	(void)state;
	char out[512];
	struct arn_h1_wbuf w;
	arn_h1_wbuf_init(&w, out, sizeof(out) - 1, NULL, NULL);
	assert_int_equal(http_local_reply_write(&w, 503, "no healthy upstream", 19, "envoy",
						"Mon, 30 Nov 2026 00:00:00 GMT", 29, NULL, 0, false,
						false),
			 0);
	out[w.len] = 0;
	assert_string_equal(out, "HTTP/1.1 503 Service Unavailable\r\n"
				 "content-type: text/plain\r\n"
				 "content-length: 19\r\n"
				 "date: Mon, 30 Nov 2026 00:00:00 GMT\r\n"
				 "server: envoy\r\n"
				 "\r\n"
				 "no healthy upstream");
	struct arn_h1_edit loc = {.name = "location",
				  .name_len = 8,
				  .value = "http://x/",
				  .value_len = 9,
				  .op = ARN_H1_EDIT_SET};
	arn_h1_wbuf_init(&w, out, sizeof(out) - 1, NULL, NULL);
	http_local_reply_write(&w, 301, NULL, 0, "envoy", NULL, 0, &loc, 1, true, false);
	out[w.len] = 0;
	assert_string_equal(out, "HTTP/1.1 301 Moved Permanently\r\n"
				 "content-length: 0\r\n"
				 "server: envoy\r\n"
				 "location: http://x/\r\n"
				 "connection: close\r\n"
				 "\r\n");
	/* HEAD: the length of the body that a GET would get, and no body */
	arn_h1_wbuf_init(&w, out, sizeof(out) - 1, NULL, NULL);
	http_local_reply_write(&w, 404, "gone", 4, "envoy", NULL, 0, NULL, 0, false, true);
	out[w.len] = 0;
	assert_non_null(strstr(out, "content-length: 4\r\n"));
	assert_null(strstr(out, "gone"));
}

/* ---- load balancing ------------------------------------------------------------------ */

struct lbfix {
	struct arn_cfg_endpoint ep[8];
	struct arn_cfg_locality loc;
	struct arn_cfg_priority prio[2];
	struct arn_cfg_endpoints eps;
	struct arn_cfg_cluster cl;
};

static void lb_setup(struct lbfix *f, unsigned n, uint8_t lb)
{
	memset(f, 0, sizeof(*f));
	for (unsigned i = 0; i < n; i++) {
		f->ep[i].addr = 0xc6120300 + 10 + i;
		f->ep[i].port = 8080;
		f->ep[i].weight = 1;
	}
	f->loc.endpoints = f->ep;
	f->loc.n_endpoints = n;
	f->prio[0].localities = &f->loc;
	f->prio[0].n_localities = 1;
	f->prio[0].n_endpoints = n;
	f->eps.priorities = f->prio;
	f->eps.n_priorities = 1;
	f->eps.n_endpoints = n;
	f->cl.lb = lb;
	f->cl.healthy_panic_threshold = 5000;
	f->cl.least_request_choices = 2;
}

static int pick(struct lbfix *f, uint64_t *rr, uint64_t rnd, bool *panic)
{
	struct http_lb_in in = {.cluster = &f->cl, .eps = &f->eps, .rr = rr, .rand = rnd};
	struct http_lb_out out;
	int rc = http_lb_pick(&in, &out);
	if (panic)
		*panic = out.panic;
	return rc ? rc : (int)(out.ep - f->ep);
}

static void test_lb_round_robin_and_weights(void **state)
{
	(void)state;
	struct lbfix f;
	lb_setup(&f, 3, ARN_CFG_LB_ROUND_ROBIN);
	uint64_t rr = 0;
	for (int i = 0; i < 6; i++)
		assert_int_equal(pick(&f, &rr, 0, NULL), i % 3);
	/* weights 3:1: exactly 3 of every 4 picks go to the heavy host, and not
	 * all in a row */
	lb_setup(&f, 2, ARN_CFG_LB_ROUND_ROBIN);
	f.ep[0].weight = 3;
	rr = 0;
	int cnt[2] = {0, 0}, seq[8];
	for (int i = 0; i < 8; i++) {
		seq[i] = pick(&f, &rr, 0, NULL);
		cnt[seq[i]]++;
	}
	assert_int_equal(cnt[0], 6);
	assert_int_equal(cnt[1], 2);
	assert_false(seq[0] == 0 && seq[1] == 0 && seq[2] == 0);
}

static void test_lb_health_and_panic(void **state)
{
	(void)state;
	struct lbfix f;
	bool panic;
	uint64_t rr = 0;
	lb_setup(&f, 4, ARN_CFG_LB_ROUND_ROBIN);
	f.ep[1].health = ARN_CFG_HEALTH_UNHEALTHY;
	for (int i = 0; i < 12; i++)
		assert_int_not_equal(pick(&f, &rr, 0, &panic), 1);
	assert_false(panic);
	/* 1 healthy of 4 (25% < 50%): Envoy's panic mode uses every host */
	f.ep[0].health = f.ep[2].health = ARN_CFG_HEALTH_UNHEALTHY;
	int seen1 = 0;
	for (int i = 0; i < 8; i++)
		seen1 += pick(&f, &rr, 0, &panic) == 1;
	assert_true(panic);
	assert_true(seen1 > 0);
	/* panic threshold 0: no panic, only the healthy host */
	f.cl.healthy_panic_threshold = 0;
	for (int i = 0; i < 8; i++)
		assert_int_equal(pick(&f, &rr, 0, &panic), 3);
	/* none healthy and no panic: 503 UH */
	f.ep[3].health = ARN_CFG_HEALTH_UNHEALTHY;
	f.ep[0].health = ARN_CFG_HEALTH_UNHEALTHY;
	f.ep[2].health = ARN_CFG_HEALTH_TIMEOUT;
	assert_int_equal(pick(&f, &rr, 0, &panic), -ENOENT);
	/* degraded hosts serve when no host is healthy */
	f.ep[2].health = ARN_CFG_HEALTH_DEGRADED;
	assert_int_equal(pick(&f, &rr, 0, &panic), 2);
	/* no host at all */
	lb_setup(&f, 0, ARN_CFG_LB_ROUND_ROBIN);
	assert_int_equal(pick(&f, &rr, 0, &panic), -ENOENT);
}

/* A stateful session's host (http_lb_override, Envoy's selectOverrideHost
 * with the default override_host_status): honoured when UNKNOWN, HEALTHY
 * or DEGRADED whatever round robin would pick, and the counter stays;
 * refused when EDS calls it UNHEALTHY, DRAINING or TIMEOUT, when active
 * checks failed it, or when no endpoint has the address; found the same
 * through the sorted index and by a walk; a cluster's own
 * override_host_status decides instead. */
static void test_lb_override_host(void **state)
{
	(void)state;
	struct lbfix f;
	lb_setup(&f, 4, ARN_CFG_LB_ROUND_ROBIN);
	uint64_t rr = 5;
	const struct arn_cfg_endpoint *sorted[4] = {&f.ep[0], &f.ep[1], &f.ep[2], &f.ep[3]};
	struct http_lb_in in = {.cluster = &f.cl, .eps = &f.eps, .rr = &rr};
	struct http_lb_out out;
	for (int walk = 0; walk < 2; walk++) {
		const struct arn_cfg_endpoint *const *ix = walk ? NULL : sorted;
		for (int k = 0; k < 3; k++) {
			assert_int_equal(http_lb_override(&in, ix, 4, f.ep[2].addr, 8080, &out), 0);
			assert_ptr_equal(out.ep, &f.ep[2]);
			assert_false(out.panic);
		}
		assert_int_equal(rr, 5);
		f.ep[2].health = ARN_CFG_HEALTH_DEGRADED;
		assert_int_equal(http_lb_override(&in, ix, 4, f.ep[2].addr, 8080, &out), 0);
		f.ep[2].health = ARN_CFG_HEALTH_HEALTHY;
		assert_int_equal(http_lb_override(&in, ix, 4, f.ep[2].addr, 8080, &out), 0);
		static const uint8_t out_states[] = {
		    ARN_CFG_HEALTH_UNHEALTHY, ARN_CFG_HEALTH_DRAINING, ARN_CFG_HEALTH_TIMEOUT};
		for (size_t i = 0; i < sizeof(out_states); i++) {
			f.ep[2].health = out_states[i];
			assert_int_equal(http_lb_override(&in, ix, 4, f.ep[2].addr, 8080, &out),
					 -EHOSTDOWN);
		}
		f.ep[2].health = ARN_CFG_HEALTH_UNKNOWN;
		/* another port, another address, the first and the last */
		assert_int_equal(http_lb_override(&in, ix, 4, f.ep[2].addr, 8081, &out), -ENOENT);
		assert_int_equal(http_lb_override(&in, ix, 4, 0x0a000001, 8080, &out), -ENOENT);
		assert_int_equal(http_lb_override(&in, ix, 4, f.ep[0].addr, 8080, &out), 0);
		assert_ptr_equal(out.ep, &f.ep[0]);
		assert_int_equal(http_lb_override(&in, ix, 4, f.ep[3].addr, 8080, &out), 0);
		assert_ptr_equal(out.ep, &f.ep[3]);
	}
	/* active health checks failed the host: not it */
	struct http_host h[4];
	struct http_host *hosts[4];
	memset(h, 0, sizeof(h));
	for (int i = 0; i < 4; i++) {
		h[i].addr = f.ep[i].addr;
		h[i].port = 8080;
		hosts[i] = &h[i];
	}
	f.cl.n_health_checks = 1;
	in.hosts = hosts;
	in.n_hosts = 4;
	assert_int_equal(http_lb_override(&in, sorted, 4, f.ep[1].addr, 8080, &out), 0);
	h[1].hc_flags = HTTP_HOST_FAILED_ACTIVE_HC;
	assert_int_equal(http_lb_override(&in, sorted, 4, f.ep[1].addr, 8080, &out), -EHOSTDOWN);
	/* the cluster's override_host_status: a failed check is UNHEALTHY,
	 * DRAINING taken when listed, UNKNOWN refused when not */
	f.cl.override_host_set = true;
	f.cl.override_host_mask = 1u << ARN_CFG_HEALTH_UNHEALTHY | 1u << ARN_CFG_HEALTH_DRAINING;
	assert_int_equal(http_lb_override(&in, sorted, 4, f.ep[1].addr, 8080, &out), 0);
	assert_ptr_equal(out.ep, &f.ep[1]);
	f.ep[2].health = ARN_CFG_HEALTH_DRAINING;
	assert_int_equal(http_lb_override(&in, sorted, 4, f.ep[2].addr, 8080, &out), 0);
	assert_int_equal(http_lb_override(&in, sorted, 4, f.ep[3].addr, 8080, &out), -EHOSTDOWN);
	f.cl.override_host_mask = 0;
	assert_int_equal(http_lb_override(&in, sorted, 4, f.ep[2].addr, 8080, &out), -EHOSTDOWN);
	/* no endpoints */
	lb_setup(&f, 0, ARN_CFG_LB_ROUND_ROBIN);
	struct http_lb_in in0 = {.cluster = &f.cl, .eps = &f.eps, .rr = &rr};
	assert_int_equal(http_lb_override(&in0, NULL, 0, 0xc612030a, 8080, &out), -ENOENT);
}

/* The session values (http_session.c): what Arion writes reads back; the
 * older form (base64 of "ip:port") reads too; an expiry passed is no
 * session; the client's garbage names nothing or no host, never more. */
static void test_session_values(void **state)
{
	(void)state;
	char v[HTTP_SS_ENC_MAX];
	uint32_t a;
	uint16_t p;
	/* the cookie: envoy.Cookie{address: "198.18.3.10:8080", expires: 1000} */
	size_t n = http_session_encode(true, 0xc612030a, 8080, 1000, v);
	assert_int_equal(http_session_decode(v, n, true, 999, &a, &p), HTTP_SS_ADDR);
	assert_int_equal(a, 0xc612030a);
	assert_int_equal(p, 8080);
	assert_int_equal(http_session_decode(v, n, true, 1000, &a, &p), HTTP_SS_ADDR);
	assert_int_equal(http_session_decode(v, n, true, 1001, &a, &p), HTTP_SS_NONE);
	/* the bytes Envoy writes: 0a 10 "198.18.3.10:8080" 10 e8 07 */
	assert_memory_equal(v, "ChAxOTguMTguMy4xMDo4MDgwEOgH", n);
	/* no ttl: no expiry */
	n = http_session_encode(true, 0xc612030a, 8080, 0, v);
	assert_memory_equal(v, "ChAxOTguMTguMy4xMDo4MDgw", n);
	assert_int_equal(http_session_decode(v, n, true, UINT64_MAX, &a, &p), HTTP_SS_ADDR);
	/* the header, and the older cookie: base64 of the address */
	n = http_session_encode(false, 0x0a000001, 80, 0, v);
	assert_memory_equal(v, "MTAuMC4wLjE6ODA=", n);
	assert_int_equal(http_session_decode(v, n, false, 0, &a, &p), HTTP_SS_ADDR);
	assert_int_equal(a, 0x0a000001);
	assert_int_equal(p, 80);
	/* "10.0.0.1:80" is itself a valid protobuf (tag 6 fixed64, tag 7
	 * varint) with no address: Envoy's newer reader finds no session */
	assert_int_equal(http_session_decode(v, n, true, 0, &a, &p), HTTP_SS_NONE);
	/* one that is no protobuf reads as the older form */
	assert_int_equal(http_session_decode("MTkyLjE2OC4wLjE6ODA=", 20, true, 0, &a, &p),
			 HTTP_SS_ADDR);
	assert_int_equal(a, 0xc0a80001);
	/* unknown fields are skipped: 0a 09 "1.2.3.4:5" 18 01 */
	assert_int_equal(http_session_decode("CgkxLjIuMy40OjUYAQ==", 20, true, 0, &a, &p),
			 HTTP_SS_ADDR);
	assert_int_equal(a, 0x01020304);
	assert_int_equal(p, 5);
	/* garbage */
	static const char *const none[] = {"", "%%%%", "abc", "QQ=", "QR==", "====", "Q==="};
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++)
		assert_int_equal(http_session_decode(none[i], strlen(none[i]), false, 0, &a, &p),
				 HTTP_SS_NONE);
	static const char *const other[] = {
	    "bm90IGFuIGFkZHJlc3M=", /* "not an address" */
	    "MDEuMi4zLjQ6NQ==",	    /* "01.2.3.4:5" */
	    "MS4yLjMuNDo2NTUzNg==", /* "1.2.3.4:65536" */
	    "MS4yLjMuMjU2OjU=",	    /* "1.2.3.256:5" */
	    "WzEuMi4zLjRdOjU=",	    /* "[1.2.3.4]:5" */
	    "MS4yLjMuNDo=",	    /* "1.2.3.4:" */
	};
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
		assert_int_equal(http_session_decode(other[i], strlen(other[i]), false, 0, &a, &p),
				 HTTP_SS_OTHER);
	/* longer than HTTP_SS_VALUE_MAX: nothing */
	char big[HTTP_SS_VALUE_MAX + 4];
	memset(big, 'A', sizeof(big));
	assert_int_equal(http_session_decode(big, sizeof(big), true, 0, &a, &p), HTTP_SS_NONE);
	/* Envoy's cookie path match */
	assert_true(http_session_path_match(NULL, 0, "/x", 2));
	assert_true(http_session_path_match("/", 1, "/x", 2));
	assert_true(http_session_path_match("/a/", 3, "/a/b", 4));
	assert_false(http_session_path_match("/a/", 3, "/a", 2));
	assert_true(http_session_path_match("/a", 2, "/a", 2));
	assert_true(http_session_path_match("/a", 2, "/a?x", 4));
	assert_true(http_session_path_match("/a", 2, "/a/b", 4));
	assert_false(http_session_path_match("/a", 2, "/ab", 3));
}

/*
 * A priority of more than 1,024 hosts is balanced over all of them: the
 * candidates were copied into an array of 1,024, so the hosts after it
 * got no traffic (round robin, random, ring hash), and when the first
 * 1,024 were unhealthy the healthy ones after them none either.
 */
static void test_lb_more_than_1024_hosts(void **state)
{
	(void)state;
	enum { N = 3000 };
	struct arn_cfg_endpoint *ep = calloc(N, sizeof(*ep));
	uint8_t *seen = calloc(N, 1);
	assert_non_null(ep);
	assert_non_null(seen);
	for (unsigned i = 0; i < N; i++) {
		ep[i].addr = 0xc6120000 + i;
		ep[i].port = 8080;
		ep[i].weight = 1;
	}
	struct arn_cfg_locality loc = {.endpoints = ep, .n_endpoints = N};
	struct arn_cfg_priority pr = {.localities = &loc, .n_localities = 1, .n_endpoints = N};
	struct arn_cfg_endpoints eps = {.priorities = &pr, .n_priorities = 1, .n_endpoints = N};
	struct arn_cfg_cluster cl = {.lb = ARN_CFG_LB_ROUND_ROBIN, .healthy_panic_threshold = 5000};
	uint64_t rr = 0;
	struct http_lb_in in = {.cluster = &cl, .eps = &eps, .rr = &rr};
	struct http_lb_out out;
	/* round robin: each host once in N picks */
	for (unsigned i = 0; i < N; i++) {
		assert_int_equal(http_lb_pick(&in, &out), 0);
		seen[out.ep - ep]++;
	}
	for (unsigned i = 0; i < N; i++)
		assert_int_equal(seen[i], 1);
	/* the first 1,100 unhealthy (36 %, no panic): every pick is one of
	 * the 1,900 healthy hosts, and all of them are picked in turn */
	memset(seen, 0, N);
	for (unsigned i = 0; i < 1100; i++)
		ep[i].health = ARN_CFG_HEALTH_UNHEALTHY;
	for (unsigned i = 0; i < 1900; i++) {
		assert_int_equal(http_lb_pick(&in, &out), 0);
		assert_false(out.panic);
		assert_true(out.ep - ep >= 1100);
		seen[out.ep - ep]++;
	}
	for (unsigned i = 1100; i < N; i++)
		assert_int_equal(seen[i], 1);
	/* weighted random and ring hash reach the last hosts too */
	ep[N - 1].weight = 100000;
	cl.lb = ARN_CFG_LB_RANDOM;
	in.rand = 1899 + 99999; /* inside the last host's share */
	assert_int_equal(http_lb_pick(&in, &out), 0);
	assert_ptr_equal(out.ep, &ep[N - 1]);
	cl.lb = ARN_CFG_LB_RING_HASH;
	in.has_hash = true;
	unsigned late = 0;
	for (uint64_t k = 0; k < 64; k++) {
		in.hash = k * 0x9e3779b97f4a7c15ull;
		assert_int_equal(http_lb_pick(&in, &out), 0);
		late += out.ep == &ep[N - 1];
	}
	assert_true(late > 32); /* the heavy last host takes most keys */
	free(seen);
	free(ep);
}

/*
 * A cluster of one host takes http_lb_pick's shortcut: the same answers as
 * the general walk (every policy picks the host, round robin's counter
 * advances, no panic), and the walk's answers when the host is not healthy
 * (panic, or none with the threshold 0; degraded is served).
 */
static void test_lb_single_host(void **state)
{
	(void)state;
	struct lbfix f;
	bool panic = true;
	const uint8_t lbs[] = {ARN_CFG_LB_ROUND_ROBIN, ARN_CFG_LB_LEAST_REQUEST, ARN_CFG_LB_RANDOM,
			       ARN_CFG_LB_RING_HASH, ARN_CFG_LB_MAGLEV};
	for (size_t k = 0; k < sizeof(lbs); k++) {
		lb_setup(&f, 1, lbs[k]);
		uint64_t rr = 7;
		assert_int_equal(pick(&f, &rr, 12345, &panic), 0);
		assert_false(panic);
		/* only round robin counts its picks */
		assert_int_equal(rr, lbs[k] == ARN_CFG_LB_ROUND_ROBIN ? 8 : 7);
	}
	lb_setup(&f, 1, ARN_CFG_LB_ROUND_ROBIN);
	uint64_t rr = 0;
	f.ep[0].health = ARN_CFG_HEALTH_UNHEALTHY;
	assert_int_equal(pick(&f, &rr, 0, &panic), 0); /* 0 of 1 healthy: panic */
	assert_true(panic);
	f.cl.healthy_panic_threshold = 0;
	assert_int_equal(pick(&f, &rr, 0, &panic), -ENOENT);
	f.ep[0].health = ARN_CFG_HEALTH_DEGRADED;
	assert_int_equal(pick(&f, &rr, 0, &panic), 0);
	assert_false(panic);
	/* one host in the second locality (the first empty): the walk's pick */
	lb_setup(&f, 1, ARN_CFG_LB_ROUND_ROBIN);
	struct arn_cfg_locality locs[2] = {{0}, f.loc};
	f.prio[0].localities = locs;
	f.prio[0].n_localities = 2;
	assert_int_equal(pick(&f, &rr, 0, &panic), 0);
	assert_false(panic);
}

/* Two priorities of 4 hosts each, P0 = ep 0-3, P1 = ep 4-7. */
static void prio_setup(struct lbfix *f, uint8_t lb)
{
	lb_setup(f, 8, lb);
	static struct arn_cfg_locality l0, l1;
	l0 = (struct arn_cfg_locality){.endpoints = f->ep, .n_endpoints = 4};
	l1 = (struct arn_cfg_locality){.endpoints = f->ep + 4, .n_endpoints = 4};
	f->prio[0] =
	    (struct arn_cfg_priority){.localities = &l0, .n_localities = 1, .n_endpoints = 4};
	f->prio[1] =
	    (struct arn_cfg_priority){.localities = &l1, .n_localities = 1, .n_endpoints = 4};
	f->eps.n_priorities = 2;
	f->eps.overprovisioning_factor = 140;
}

/* Picks of hashes 0-99 (RING_HASH: the priority is the hash's, Envoy's
 * choosePriority(hash % 100 + 1)), walked or through a worker's cache:
 * how many land in P0, and whether any was panic's. */
static unsigned prio_p0(struct lbfix *f, bool cached, unsigned *panics)
{
	const struct arn_cfg_endpoint *cand[8];
	uint64_t cum[8];
	struct http_lb_cache k = {.cap = 8, .cand = cand, .cum = cum};
	unsigned p0 = 0;
	*panics = 0;
	for (uint64_t h = 0; h < 100; h++) {
		struct http_lb_in in = {.cluster = &f->cl,
					.eps = &f->eps,
					.has_hash = true,
					.hash = h,
					.cache = cached ? &k : NULL};
		struct http_lb_out out;
		assert_int_equal(http_lb_pick(&in, &out), 0);
		p0 += out.ep - f->ep < 4;
		*panics += out.panic;
	}
	return p0;
}

#define SET_HEALTH(f, from, to, h)                                                                 \
	for (int i_ = (from); i_ < (to); i_++)                                                     \
	(f)->ep[i_].health = (h)

/*
 * Envoy's priority loads (LoadBalancerBase::recalculatePerPriorityState
 * and recalculatePerPriorityPanic): a priority's availability is
 * min(100, 1.4 x its healthy share), and it spills the rest of the load to
 * the next priority, rather than keeping all of it until its last healthy
 * host. Each case's shares are exact (the hash is the load line), walked
 * and cached alike.
 */
static void test_lb_priority_loads(void **state)
{
	(void)state;
	struct lbfix f;
	unsigned panics;
	for (int cached = 0; cached < 2; cached++) {
		prio_setup(&f, ARN_CFG_LB_RING_HASH);
		/* all healthy, and 3 of 4 (1.4 x 75% = 105%): P0 takes all */
		assert_int_equal(prio_p0(&f, cached, &panics), 100);
		f.ep[0].health = ARN_CFG_HEALTH_UNHEALTHY;
		assert_int_equal(prio_p0(&f, cached, &panics), 100);
		/* 2 of 4: 1.4 x 50% = 70% to P0, 30% spill to P1 (Arion gave
		 * P0 all of it until its last host failed) */
		f.ep[1].health = ARN_CFG_HEALTH_UNHEALTHY;
		assert_int_equal(prio_p0(&f, cached, &panics), 70);
		assert_int_equal(panics, 0);
		/* 1 of 4 (25%, under the 50% panic threshold): 35 / 65, and no
		 * panic, since the total availability is 100% */
		f.ep[2].health = ARN_CFG_HEALTH_UNHEALTHY;
		assert_int_equal(prio_p0(&f, cached, &panics), 35);
		assert_int_equal(panics, 0);
		/* P0 down, P1 2 of 4: P1 takes all, P0's panic unused */
		f.ep[3].health = ARN_CFG_HEALTH_UNHEALTHY;
		SET_HEALTH(&f, 4, 6, ARN_CFG_HEALTH_UNHEALTHY);
		assert_int_equal(prio_p0(&f, cached, &panics), 0);
		assert_int_equal(panics, 0);
		/* P1 1 of 4 too: every priority in panic, the load by host
		 * count (50 / 50), every host a candidate */
		f.ep[6].health = ARN_CFG_HEALTH_UNHEALTHY;
		assert_int_equal(prio_p0(&f, cached, &panics), 50);
		assert_int_equal(panics, 100);
		/* P0 degraded, P1 healthy: the healthy priority first */
		SET_HEALTH(&f, 0, 4, ARN_CFG_HEALTH_DEGRADED);
		SET_HEALTH(&f, 4, 8, ARN_CFG_HEALTH_HEALTHY);
		assert_int_equal(prio_p0(&f, cached, &panics), 0);
		/* P0 2 healthy + 2 degraded: 70% healthy to P0, 30% to P1 */
		SET_HEALTH(&f, 0, 2, ARN_CFG_HEALTH_HEALTHY);
		assert_int_equal(prio_p0(&f, cached, &panics), 70);
		/* P1 down too: P0's degraded hosts take what its healthy
		 * leave (70 + 30) */
		SET_HEALTH(&f, 4, 8, ARN_CFG_HEALTH_UNHEALTHY);
		assert_int_equal(prio_p0(&f, cached, &panics), 100);
		/* EDS DRAINING hosts are Envoy's excluded ones: 2 healthy of
		 * 2 counted is 100%, P0 takes all */
		SET_HEALTH(&f, 2, 4, ARN_CFG_HEALTH_DRAINING);
		SET_HEALTH(&f, 4, 8, ARN_CFG_HEALTH_HEALTHY);
		assert_int_equal(prio_p0(&f, cached, &panics), 100);
		/* overprovisioning_factor 100: 2 of 4 is 50 / 50 */
		SET_HEALTH(&f, 2, 4, ARN_CFG_HEALTH_UNHEALTHY);
		f.eps.overprovisioning_factor = 100;
		assert_int_equal(prio_p0(&f, cached, &panics), 50);
	}
	/* round robin over a split: both priorities' hosts take turns, each
	 * only its healthy ones */
	prio_setup(&f, ARN_CFG_LB_ROUND_ROBIN);
	SET_HEALTH(&f, 0, 2, ARN_CFG_HEALTH_UNHEALTHY);
	uint64_t rr = 0;
	unsigned seen[8] = {0};
	for (uint64_t r = 0; r < 1000; r++) {
		int e = pick(&f, &rr, r * 0x9e3779b97f4a7c15ull, NULL);
		assert_true(e >= 2);
		seen[e]++;
	}
	assert_true(seen[2] + seen[3] > 600 && seen[2] + seen[3] < 800);
	for (int e = 2; e < 8; e++)
		assert_true(seen[e] > 0);
}

/*
 * Locality weighting over a load split among priorities: a worker keeps
 * the runs (not the endpoints' walk per pick) and each pick walks only
 * its run's priority, with the very answers of a pick without a cache.
 */
static void test_lb_priority_loads_localities(void **state)
{
	(void)state;
	struct lbfix f;
	lb_setup(&f, 8, ARN_CFG_LB_RANDOM);
	static struct arn_cfg_locality l[3];
	l[0] = (struct arn_cfg_locality){.endpoints = f.ep, .n_endpoints = 2, .weight = 1};
	l[1] = (struct arn_cfg_locality){.endpoints = f.ep + 2, .n_endpoints = 2, .weight = 3};
	l[2] = (struct arn_cfg_locality){.endpoints = f.ep + 4, .n_endpoints = 4, .weight = 1};
	f.prio[0] = (struct arn_cfg_priority){.localities = l, .n_localities = 2, .n_endpoints = 4};
	f.prio[1] =
	    (struct arn_cfg_priority){.localities = l + 2, .n_localities = 1, .n_endpoints = 4};
	f.eps.n_priorities = 2;
	f.eps.overprovisioning_factor = 140;
	f.cl.locality_weighted = true;
	/* P0 2 of 4 healthy (one per locality): 70 / 30 */
	f.ep[0].health = f.ep[2].health = ARN_CFG_HEALTH_UNHEALTHY;
	const struct arn_cfg_endpoint *cand[8];
	uint64_t cum[8];
	struct http_lb_loc loc[2];
	uint64_t tmp[4], heap[2];
	struct http_lb_cache k = {.cap = 8,
				  .cand = cand,
				  .cum = cum,
				  .loc_cap = 2,
				  .loc = loc,
				  .loc_tmp = tmp,
				  .loc_heap = (uint32_t *)(void *)heap};
	unsigned p0 = 0, seen[8] = {0};
	for (uint64_t r = 0; r < 1000; r++) {
		uint64_t rnd = r * 0x9e3779b97f4a7c15ull;
		struct http_lb_in in = {.cluster = &f.cl, .eps = &f.eps, .rand = rnd};
		struct http_lb_out a, b;
		assert_int_equal(http_lb_pick(&in, &a), 0);
		in.cache = &k;
		assert_int_equal(http_lb_pick(&in, &b), 0);
		assert_ptr_equal(a.ep, b.ep);
		assert_false(a.panic || b.panic);
		p0 += a.ep - f.ep < 4;
		seen[a.ep - f.ep]++;
	}
	assert_int_equal(k.builds, 1); /* the runs kept, not rebuilt per pick */
	assert_int_equal(k.n_seg, 2);
	assert_true(p0 > 650 && p0 < 750);
	assert_int_equal(seen[0] + seen[2], 0);
	/* P0's localities by weight, 1 : 3 */
	assert_true(seen[3] > 2 * seen[1]);
}

static void test_lb_priorities(void **state)
{
	(void)state;
	struct lbfix f;
	lb_setup(&f, 4, ARN_CFG_LB_ROUND_ROBIN);
	/* P0 = ep 0, 1 (both unhealthy); P1 = ep 2, 3 */
	static struct arn_cfg_locality l0, l1;
	l0.endpoints = f.ep;
	l0.n_endpoints = 2;
	l1.endpoints = f.ep + 2;
	l1.n_endpoints = 2;
	f.prio[0].localities = &l0;
	f.prio[0].n_endpoints = 2;
	f.prio[1].localities = &l1;
	f.prio[1].n_localities = 1;
	f.prio[1].n_endpoints = 2;
	f.eps.n_priorities = 2;
	f.ep[0].health = f.ep[1].health = ARN_CFG_HEALTH_UNHEALTHY;
	uint64_t rr = 0;
	for (int i = 0; i < 6; i++)
		assert_true(pick(&f, &rr, 0, NULL) >= 2);
	/* P0 back: all of the load to it */
	f.ep[0].health = f.ep[1].health = ARN_CFG_HEALTH_HEALTHY;
	f.cl.healthy_panic_threshold = 0;
	for (int i = 0; i < 6; i++)
		assert_true(pick(&f, &rr, (uint64_t)i, NULL) < 2);
}

static uint32_t fake_active(void *ctx, const struct arn_cfg_endpoint *ep)
{
	(void)ctx;
	return ep->port == 1 ? 0 : 100; /* ep with port 1 is idle */
}

static void test_lb_least_request_random_hash(void **state)
{
	(void)state;
	struct lbfix f;
	lb_setup(&f, 4, ARN_CFG_LB_LEAST_REQUEST);
	f.ep[2].port = 1;
	f.cl.least_request_choices = 4;
	int hits = 0;
	for (uint64_t r = 1; r < 200; r++) {
		struct http_lb_in in = {.cluster = &f.cl,
					.eps = &f.eps,
					.rand = r * 0x9e3779b97f4a7c15ull,
					.active = fake_active};
		struct http_lb_out out;
		assert_int_equal(http_lb_pick(&in, &out), 0);
		hits += out.ep == &f.ep[2];
	}
	/* the idle host wins whenever it is among the 4 draws: 1 - (3/4)^4 = 68% */
	assert_true(hits > 100);
	/* RANDOM covers every host */
	lb_setup(&f, 3, ARN_CFG_LB_RANDOM);
	int seen[3] = {0};
	for (uint64_t r = 0; r < 30; r++)
		seen[pick(&f, NULL, r * 7919, NULL)]++;
	assert_true(seen[0] && seen[1] && seen[2]);
	/* RING_HASH: a key always lands on the same host; removing another
	 * host does not move it while the others' points stay (Envoy's ring
	 * is built over the healthy hosts: a minimum_ring_size of 1 gives
	 * each one point with 4 hosts and with 3) */
	lb_setup(&f, 4, ARN_CFG_LB_RING_HASH);
	f.cl.ring_min_size = 1;
	int moved = 0;
	for (uint64_t key = 1; key < 100; key++) {
		struct http_lb_in in = {.cluster = &f.cl,
					.eps = &f.eps,
					.has_hash = true,
					.hash = key * 0x2545f4914f6cdd1dull};
		struct http_lb_out a, b;
		assert_int_equal(http_lb_pick(&in, &a), 0);
		in.rand = key;
		assert_int_equal(http_lb_pick(&in, &b), 0);
		assert_ptr_equal(a.ep, b.ep);
		int was = (int)(a.ep - f.ep);
		f.ep[was == 3 ? 2 : 3].health = ARN_CFG_HEALTH_UNHEALTHY;
		assert_int_equal(http_lb_pick(&in, &b), 0);
		moved += a.ep != b.ep;
		f.ep[2].health = f.ep[3].health = ARN_CFG_HEALTH_UNKNOWN;
	}
	assert_int_equal(moved, 0);
}

/* A cluster of @p n endpoints (weights @p wt(i)) for the hash tables. */
struct hfix {
	struct arn_cfg_endpoint *ep;
	struct arn_cfg_locality loc;
	struct arn_cfg_priority pr;
	struct arn_cfg_endpoints eps;
	struct arn_cfg_cluster cl;
	struct http_lb_cache k; /* a worker's, with its table, as http_rt.c sizes it */
	uint32_t epoch;
};

static void hfix_setup(struct hfix *f, unsigned n, uint8_t lb, uint32_t (*wt)(unsigned))
{
	memset(f, 0, sizeof(*f));
	f->ep = calloc(n, sizeof(*f->ep));
	assert_non_null(f->ep);
	for (unsigned i = 0; i < n; i++) {
		f->ep[i].addr = 0xc6120000 + 10 + i;
		f->ep[i].port = 8080;
		f->ep[i].weight = wt ? wt(i) : 1;
	}
	f->loc = (struct arn_cfg_locality){.endpoints = f->ep, .n_endpoints = n};
	f->pr =
	    (struct arn_cfg_priority){.localities = &f->loc, .n_localities = 1, .n_endpoints = n};
	f->eps =
	    (struct arn_cfg_endpoints){.priorities = &f->pr, .n_priorities = 1, .n_endpoints = n};
	f->cl.lb = lb;
	f->cl.healthy_panic_threshold = 5000;
	f->cl.ring_min_size = 1024; /* the configuration's defaults */
	f->cl.ring_max_size = 8 * 1024 * 1024;
	f->cl.maglev_table_size = 65537;
}

static void hfix_cache(struct hfix *f)
{
	size_t n = f->eps.n_endpoints;
	bool clipped;
	size_t t = http_lb_table_entries(&f->cl, &f->eps, &clipped);
	f->k = (struct http_lb_cache){.cap = n, .tab_cap = t};
	f->k.cand = calloc(n, sizeof(*f->k.cand));
	f->k.cum = calloc(n, sizeof(*f->k.cum));
	if (f->cl.lb == ARN_CFG_LB_RING_HASH)
		f->k.ring = calloc(t, sizeof(*f->k.ring));
	else {
		f->k.mag = calloc(t, sizeof(*f->k.mag));
		f->k.scratch = calloc(4 * n, sizeof(*f->k.scratch));
	}
}

static void hfix_free(struct hfix *f)
{
	free(f->k.cand);
	free(f->k.cum);
	free(f->k.ring);
	free(f->k.mag);
	free(f->k.scratch);
	free(f->ep);
}

/* The endpoint index key @p key lands on: from the worker's cache (and
 * its table) or, @p walk, without it. */
static int hpick(struct hfix *f, uint64_t key, bool walk)
{
	struct http_lb_in in = {.cluster = &f->cl,
				.eps = &f->eps,
				.has_hash = true,
				.hash = key,
				.cache = walk ? NULL : &f->k,
				.epoch = f->epoch};
	struct http_lb_out out;
	assert_int_equal(http_lb_pick(&in, &out), 0);
	return (int)(out.ep - f->ep);
}

static uint32_t wt_1234(unsigned i)
{
	return i % 4 + 1;
}

static uint64_t hkey(uint64_t i)
{
	return (i + 1) * 0x9e3779b97f4a7c15ull ^ (i << 29);
}

/*
 * RING_HASH picks from a ring in the worker's cache (a binary search, not
 * a score per host): the same host for every key as the ring computed
 * without the cache; a host that leaves the candidates (EDS unhealthy,
 * the cache rebuilt at the next epoch) moves its own keys and no other,
 * and gets them back when it returns; weights share the keys (hosts of
 * weight 4 take about 4 times the keys of those of weight 1).
 */
static void test_lb_ring_table(void **state)
{
	(void)state;
	enum { N = 40, K = 4000 };
	struct hfix f;
	hfix_setup(&f, N, ARN_CFG_LB_RING_HASH, wt_1234);
	hfix_cache(&f);
	f.ep[7].health = ARN_CFG_HEALTH_UNHEALTHY;
	static int was[K];
	unsigned per_weight[5] = {0};
	for (unsigned i = 0; i < K; i++) {
		was[i] = hpick(&f, hkey(i), false);
		assert_int_equal(was[i], hpick(&f, hkey(i), true));
		assert_int_not_equal(was[i], 7);
		per_weight[f.ep[was[i]].weight]++;
	}
	assert_int_equal(f.k.tab_kind, HTTP_LB_TAB_RING);
	assert_int_equal(f.k.builds, 1);
	/* 10 hosts of each weight (one of weight 4 out): 1 : 2 : 3 : 4 x 9/10 */
	assert_true(per_weight[4] * 10 > per_weight[1] * 9 * 4 * 3 / 4);
	assert_true(per_weight[4] * 10 < per_weight[1] * 9 * 4 * 5 / 4);
	/* host 12 leaves: its keys alone move */
	f.ep[12].health = ARN_CFG_HEALTH_UNHEALTHY;
	f.epoch++;
	unsigned moved = 0, its = 0;
	for (unsigned i = 0; i < K; i++) {
		int now = hpick(&f, hkey(i), false);
		assert_int_equal(now, hpick(&f, hkey(i), true));
		its += was[i] == 12;
		if (was[i] == 12)
			assert_int_not_equal(now, 12);
		else
			moved += now != was[i];
	}
	assert_int_equal(f.k.builds, 2);
	assert_true(its > 0);
	assert_int_equal(moved, 0);
	/* and back */
	f.ep[12].health = ARN_CFG_HEALTH_HEALTHY;
	f.epoch++;
	for (unsigned i = 0; i < K; i++)
		assert_int_equal(hpick(&f, hkey(i), false), was[i]);
	hfix_free(&f);
}

/* hfix's endpoints as Envoy's tests make their hosts:
 * tcp://127.0.0.1:<port0 + i>, weights @p wt (NULL: 1) */
static void hfix_envoy(struct hfix *f, unsigned n, uint8_t lb, uint16_t port0, const uint32_t *wt)
{
	hfix_setup(f, n, lb, NULL);
	for (unsigned i = 0; i < n; i++) {
		f->ep[i].addr = 0x7f000001;
		f->ep[i].port = (uint16_t)(port0 + i);
		f->ep[i].weight = wt ? wt[i] : 1;
	}
}

/* Each key of @p keys lands on host @p want, with the worker's ring and
 * without it. */
static void hash_lands(struct hfix *f, const uint64_t *keys, const int *want, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(hpick(f, keys[i], false), want[i]);
		assert_int_equal(hpick(f, keys[i], true), want[i]);
	}
}

/*
 * RING_HASH builds Envoy's ring (ring_hash_lb.cc): "ip:port_i" hashed by
 * XXH64 or MurmurHash2, Envoy's scale and running sums, lookup at the
 * first point >= the hash, wrapping. The vectors are Envoy's
 * (test/extensions/load_balancing_policies/ring_hash/ring_hash_lb_test.cc).
 */
static void test_lb_ring_is_envoys(void **state)
{
	(void)state;
	struct hfix f;
	/* RingHashLoadBalancerTest.Basic: :90..:95, minimum_ring_size 12 */
	hfix_envoy(&f, 6, ARN_CFG_LB_RING_HASH, 90, NULL);
	f.cl.ring_min_size = 12;
	hfix_cache(&f);
	{
		const uint64_t k[] = {0, UINT64_MAX, 3551244743356806947ull, 3551244743356806948ull,
				      16117243373044804880ull};
		const int w[] = {4, 4, 5, 3, 0};
		hash_lands(&f, k, w, 5);
		/* the ring: 12 points, Envoy's positions and hosts */
		const uint64_t pos[12] = {
		    833437586790550860ull,   928266305478181108ull,   1033482794131418490ull,
		    3551244743356806947ull,  3851675632748031481ull,  5583722120771150861ull,
		    6311230543546372928ull,  7700377290971790572ull,  13144177310400110813ull,
		    13444792449719432967ull, 15516499411664133160ull, 16117243373044804889ull};
		const int host[12] = {4, 2, 0, 5, 3, 1, 1, 3, 5, 2, 4, 0};
		assert_int_equal(f.k.tab_kind, HTTP_LB_TAB_RING);
		assert_int_equal(f.k.tab_n, 12);
		for (int i = 0; i < 12; i++) {
			assert_true(f.k.ring[i].hash == pos[i]);
			assert_int_equal(f.k.cand[f.k.ring[i].idx] - f.ep, host[i]);
		}
	}
	/* every host unhealthy: panic, the same ring over every host */
	for (int i = 0; i < 6; i++)
		f.ep[i].health = ARN_CFG_HEALTH_UNHEALTHY;
	f.epoch++;
	assert_int_equal(hpick(&f, 0, false), 4);
	hfix_free(&f);
	/* BasicWithMurmur2: :80..:85, MURMUR_HASH_2 */
	hfix_envoy(&f, 6, ARN_CFG_LB_RING_HASH, 80, NULL);
	f.cl.ring_min_size = 12;
	f.cl.ring_hash_fn = 1;
	hfix_cache(&f);
	{
		const uint64_t k[] = {0, UINT64_MAX, 1358027074129602068ull, 1358027074129602069ull,
				      10150910876324007730ull};
		const int w[] = {5, 5, 5, 3, 2};
		hash_lands(&f, k, w, 5);
		assert_int_equal(f.k.tab_n, 12);
	}
	hfix_free(&f);
	/* UnevenHosts: :80 and :81, minimum_ring_size 3: 2 points each */
	hfix_envoy(&f, 2, ARN_CFG_LB_RING_HASH, 80, NULL);
	f.cl.ring_min_size = 3;
	hfix_cache(&f);
	{
		const uint64_t k[] = {0,
				      5454692015285649509ull,
				      7859399908942313493ull,
				      13838424394637650569ull,
				      16064866803292627174ull,
				      16064866803292627175ull};
		const int w[] = {0, 0, 1, 0, 1, 0};
		hash_lands(&f, k, w, 6);
		assert_int_equal(f.k.tab_n, 4);
	}
	hfix_free(&f);
	/* HostWeightedTinyRing: weights 1, 2, 3, a ring of exactly 6 */
	const uint32_t wt[] = {1, 2, 3};
	hfix_envoy(&f, 3, ARN_CFG_LB_RING_HASH, 90, wt);
	f.cl.ring_min_size = f.cl.ring_max_size = 6;
	hfix_cache(&f);
	{
		const uint64_t k[] = {928266305478181108ull,   4443673547860492590ull,
				      5583722120771150861ull,  6311230543546372928ull,
				      13444792449719432967ull, 16117243373044804889ull};
		const int w[] = {2, 2, 1, 1, 2, 0};
		hash_lands(&f, k, w, 6);
		assert_int_equal(f.k.tab_n, 6);
	}
	hfix_free(&f);
}

static uint32_t wt_first3(unsigned i)
{
	return i == 0 ? 3 : 1;
}

/*
 * MAGLEV picks from a Maglev table in the worker's cache (one read): a
 * key lands on the same host each time; the table's entries follow the
 * weights (Envoy's weighted population: host 0 of weight 3 holds 3/12 of
 * 65,537 entries, each other host 1/12, to a few entries); a host that
 * leaves moves its keys and few others (Maglev's minimal disruption:
 * under 2 % of the others' keys).
 */
static void test_lb_maglev_table(void **state)
{
	(void)state;
	enum { N = 10, K = 20000 };
	struct hfix f;
	hfix_setup(&f, N, ARN_CFG_LB_MAGLEV, wt_first3);
	hfix_cache(&f);
	static int was[K];
	for (unsigned i = 0; i < K; i++) {
		was[i] = hpick(&f, hkey(i), false);
		assert_int_equal(was[i], hpick(&f, hkey(i), false));
	}
	assert_int_equal(f.k.tab_kind, HTTP_LB_TAB_MAGLEV);
	assert_int_equal(f.k.tab_n, 65537);
	assert_int_equal(f.k.builds, 1);
	unsigned cnt[N] = {0};
	for (size_t e = 0; e < f.k.tab_n; e++) {
		assert_true(f.k.mag[e] < N);
		cnt[f.k.mag[e]]++;
	}
	assert_true(cnt[0] >= 65537 * 3 / 12 - 3 && cnt[0] <= 65537 * 3 / 12 + 3);
	for (unsigned j = 1; j < N; j++)
		assert_true(cnt[j] >= 65537 / 12 - 3 && cnt[j] <= 65537 / 12 + 3);
	f.ep[4].health = ARN_CFG_HEALTH_UNHEALTHY;
	f.epoch++;
	unsigned moved = 0, others = 0;
	for (unsigned i = 0; i < K; i++) {
		int now = hpick(&f, hkey(i), false);
		assert_int_not_equal(now, 4);
		if (was[i] != 4) {
			others++;
			moved += now != was[i];
		}
	}
	assert_true(moved * 50 < others);
	hfix_free(&f);
}

/* Keys 0 .. 3 x @p n - 1 land on host want[key % n] (Envoy's tests'
 * loop over their table), from the worker's table. */
static void maglev_lands(struct hfix *f, const int *want, unsigned n)
{
	for (unsigned i = 0; i < 3 * n; i++)
		assert_int_equal(hpick(f, i, false), want[i % n]);
}

/*
 * MAGLEV builds Envoy's table (maglev_lb.cc): the hosts sorted by their
 * hash key "ip:port", offset XXH64(key) % M, skip XXH64(key, 1) % (M - 1)
 * + 1, Envoy's weighted rounds (normalized weights, doubles), a key's
 * host at entry hash % M. The vectors are Envoy's
 * (test/extensions/load_balancing_policies/maglev/maglev_lb_test.cc).
 */
static int hpick_attempt(struct hfix *f, uint64_t key, uint32_t attempt)
{
	struct http_lb_in in = {.cluster = &f->cl,
				.eps = &f->eps,
				.has_hash = true,
				.hash = key,
				.attempt = attempt,
				.cache = &f->k,
				.epoch = f->epoch};
	struct http_lb_out out;
	assert_int_equal(http_lb_pick(&in, &out), 0);
	return (int)(out.ep - f->ep);
}

/* A retry's re-pick under previous_hosts (http_lb_in.attempt) as Envoy's
 * chooseHost(hash, attempt): RING_HASH takes the point that many places
 * after the key's (wrapping), MAGLEV the entry of the hash XORed with
 * ~0 - attempt + 1; attempt 0 is the ordinary pick. */
static void test_lb_hash_attempts(void **state)
{
	(void)state;
	struct hfix f;
	/* the ring of RingHashLoadBalancerTest.Basic (hosts by ring index:
	 * 4, 2, 0, 5, 3, 1, 1, 3, 5, 2, 4, 0) */
	hfix_envoy(&f, 6, ARN_CFG_LB_RING_HASH, 90, NULL);
	f.cl.ring_min_size = 12;
	hfix_cache(&f);
	assert_int_equal(hpick_attempt(&f, 0, 0), 4);
	assert_int_equal(hpick_attempt(&f, 0, 1), 2);
	assert_int_equal(hpick_attempt(&f, 0, 2), 0);
	assert_int_equal(hpick_attempt(&f, 3551244743356806947ull, 1), 3);
	assert_int_equal(hpick_attempt(&f, UINT64_MAX, 1), 2); /* wrapped to the first */
	assert_int_equal(hpick_attempt(&f, 0, 12), 4);	       /* a whole turn */
	hfix_free(&f);
	/* MaglevLoadBalancerTest.Basic's table {2, 4, 0, 1, 5, 0, 3} */
	const int basic[7] = {2, 4, 0, 1, 5, 0, 3};
	hfix_envoy(&f, 6, ARN_CFG_LB_MAGLEV, 90, NULL);
	f.cl.maglev_table_size = 7;
	hfix_cache(&f);
	for (uint64_t h = 0; h < 14; h++)
		for (uint32_t a = 0; a < 4; a++) {
			uint64_t m = a ? h ^ (~0ull - a + 1) : h;
			assert_int_equal(hpick_attempt(&f, h, a), basic[m % 7]);
		}
	hfix_free(&f);
}

static void test_lb_maglev_is_envoys(void **state)
{
	(void)state;
	struct hfix f;
	/* MaglevLoadBalancerTest.Basic: :90..:95, table_size 7 */
	const int basic[7] = {2, 4, 0, 1, 5, 0, 3};
	hfix_envoy(&f, 6, ARN_CFG_LB_MAGLEV, 90, NULL);
	f.cl.maglev_table_size = 7;
	hfix_cache(&f);
	maglev_lands(&f, basic, 7);
	assert_int_equal(f.k.tab_n, 7);
	hfix_free(&f);
	/* BasicStability: the hosts in another order, the same table */
	hfix_envoy(&f, 6, ARN_CFG_LB_MAGLEV, 90, NULL);
	for (unsigned i = 0; i < 6; i++)
		f.ep[i].port = (uint16_t)(95 - i);
	f.cl.maglev_table_size = 7;
	hfix_cache(&f);
	for (unsigned i = 0; i < 21; i++)
		assert_int_equal(f.ep[hpick(&f, i, false)].port, 90 + basic[i % 7]);
	hfix_free(&f);
	/* Weighted: :90 weight 1, :91 weight 2, table_size 17 */
	const uint32_t wt[] = {1, 2};
	const int weighted[17] = {1, 0, 0, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1, 0, 1, 0, 1};
	hfix_envoy(&f, 2, ARN_CFG_LB_MAGLEV, 90, wt);
	f.cl.maglev_table_size = 17;
	hfix_cache(&f);
	maglev_lands(&f, weighted, 17);
	hfix_free(&f);
	/* SingleHost, WeightedSingleHost */
	const uint32_t w7[] = {7};
	hfix_envoy(&f, 1, ARN_CFG_LB_MAGLEV, 90, w7);
	f.cl.maglev_table_size = 17;
	hfix_cache(&f);
	for (unsigned i = 0; i < 17; i++)
		assert_int_equal(hpick(&f, i, false), 0);
	hfix_free(&f);
}

/*
 * A worker builds its ring or Maglev table again only when its candidates
 * (or their endpoints' generation, so their weights) changed: a move of
 * the health epoch that leaves them as they were rebuilds the candidate
 * list, not the table (a Maglev table is 4 to 7 M instructions). The
 * table's first entry is overwritten to see whether it was built again.
 */
static void test_lb_hash_table_kept(void **state)
{
	(void)state;
	for (int ring = 0; ring < 2; ring++) {
		struct hfix f;
		hfix_setup(&f, 10, ring ? ARN_CFG_LB_RING_HASH : ARN_CFG_LB_MAGLEV, wt_1234);
		hfix_cache(&f);
		int was = hpick(&f, hkey(1), false);
		assert_int_equal(f.k.builds, 1);
		assert_int_equal(f.k.tab_builds, 1);
		/* the first entry made to name another candidate */
		uint32_t *first = ring ? &f.k.ring[0].idx : &f.k.mag[0];
		uint32_t mark = (*first + 1) % 10;
		*first = mark;
		f.epoch++; /* the same candidates */
		assert_int_equal(hpick(&f, hkey(1), false), was);
		assert_int_equal(f.k.builds, 2);
		assert_int_equal(f.k.tab_builds, 1);
		assert_int_equal(*first, mark);
		/* a candidate leaves: built again */
		f.ep[3].health = ARN_CFG_HEALTH_UNHEALTHY;
		f.epoch++;
		hpick(&f, hkey(1), false);
		assert_int_equal(f.k.builds, 3);
		assert_int_equal(f.k.tab_builds, 2);
		/* and comes back: again (another candidate list) */
		f.ep[3].health = ARN_CFG_HEALTH_HEALTHY;
		f.epoch++;
		assert_int_equal(hpick(&f, hkey(1), false), was);
		assert_int_equal(f.k.tab_builds, 3);
		/* another generation of the endpoints (the same content): again */
		struct arn_cfg_endpoints eps2 = f.eps;
		struct http_lb_in in = {.cluster = &f.cl,
					.eps = &eps2,
					.has_hash = true,
					.hash = hkey(1),
					.cache = &f.k,
					.epoch = f.epoch};
		struct http_lb_out out;
		assert_int_equal(http_lb_pick(&in, &out), 0);
		assert_int_equal(out.ep - f.ep, was);
		assert_int_equal(f.k.tab_builds, 4);
		hfix_free(&f);
	}
}

/*
 * The tables' limits: a ring asked for more points than HTTP_LB_RING_MAX
 * (minimum_ring_size 8M) gets that many at most and is counted as
 * clipped; one cut by its own maximum_ring_size is not; a cluster of more
 * endpoints than the limit gets one point each; a Maglev table_size over
 * HTTP_LB_MAGLEV_MAX is cut to it. The ring keeps the weights' shares.
 */
static void test_lb_hash_table_limits(void **state)
{
	(void)state;
	struct hfix f;
	bool clipped;
	hfix_setup(&f, 3, ARN_CFG_LB_RING_HASH, wt_first3);
	f.cl.ring_min_size = 8 * 1024 * 1024;
	size_t t = http_lb_table_entries(&f.cl, &f.eps, &clipped);
	assert_true(clipped);
	/* room for the scale's ceiling and the running sums' rounding */
	assert_int_equal(t, HTTP_LB_RING_MAX + 2);
	hfix_cache(&f);
	unsigned on0 = 0;
	for (unsigned i = 0; i < 3000; i++)
		on0 += hpick(&f, hkey(i), false) == 0;
	assert_true(on0 > 1500 && on0 < 2100); /* 3/5 */
	assert_true(f.k.tab_n >= HTTP_LB_RING_MAX && f.k.tab_n <= t);
	f.cl.ring_max_size = 4096;
	t = http_lb_table_entries(&f.cl, &f.eps, &clipped);
	assert_false(clipped);
	assert_int_equal(t, 4096 + 2);
	hfix_free(&f);
	hfix_setup(&f, HTTP_LB_RING_MAX + 10, ARN_CFG_LB_RING_HASH, NULL);
	assert_int_equal(http_lb_table_entries(&f.cl, &f.eps, &clipped), HTTP_LB_RING_MAX + 12);
	hfix_free(&f);
	hfix_setup(&f, 3, ARN_CFG_LB_MAGLEV, NULL);
	f.cl.maglev_table_size = 5000011;
	assert_int_equal(http_lb_table_entries(&f.cl, &f.eps, &clipped), HTTP_LB_MAGLEV_MAX);
	assert_true(clipped);
	f.cl.maglev_table_size = 7;
	assert_int_equal(http_lb_table_entries(&f.cl, &f.eps, &clipped), 7);
	assert_false(clipped);
	hfix_free(&f);
}

static void test_lb_hash_policies(void **state)
{
	(void)state;
	struct req r;
	parse(&r, "GET /p?user=42&x=1 HTTP/1.1\r\nHost: a\r\nX-User: bob\r\nCookie: a=1; "
		  "session=s1\r\n\r\n");
	struct arn_cfg_hash_policy hp[1];
	memset(hp, 0, sizeof(hp));
	struct arn_cfg_route_action a;
	memset(&a, 0, sizeof(a));
	a.hash_policies = hp;
	a.n_hash_policies = 1;
	uint64_t h1, h2;
	uint32_t gen = 0;
	struct http_lb_peer one = {.raddr = 1}, p1 = {.raddr = 0x01020304},
			    p2 = {.raddr = 0x01020305};
	hp[0].kind = ARN_CFG_HASH_HEADER;
	hp[0].name = "x-user";
	hp[0].name_len = 6;
	assert_true(http_lb_hash(&a, &r.m, &one, &h1, &gen));
	hp[0].name = "x-none";
	assert_false(http_lb_hash(&a, &r.m, &one, &h2, &gen));
	hp[0].kind = ARN_CFG_HASH_COOKIE;
	hp[0].name = "session";
	hp[0].name_len = 7;
	assert_true(http_lb_hash(&a, &r.m, &one, &h1, &gen));
	hp[0].kind = ARN_CFG_HASH_QUERY_PARAMETER;
	hp[0].name = "user";
	hp[0].name_len = 4;
	assert_true(http_lb_hash(&a, &r.m, &one, &h2, &gen));
	assert_true(h1 != h2);
	hp[0].kind = ARN_CFG_HASH_SOURCE_IP;
	assert_true(http_lb_hash(&a, &r.m, &p1, &h1, &gen));
	assert_true(http_lb_hash(&a, &r.m, &p2, &h2, &gen));
	assert_true(h1 != h2);
	assert_int_equal(gen, 0); /* no ttl: nothing generated */
}

/*
 * A cookie hash policy with a ttl, Envoy's CookieHashMethod: a request
 * without the cookie hashes on a value made from its connection's
 * addresses and marks the policy for a Set-Cookie; the client's next
 * request carrying that value (quoted, as the Set-Cookie gives it, or not)
 * hashes the same, so lands on the same host. An empty value is no cookie.
 * Without a ttl an absent cookie gives no hash and sets nothing.
 */
static void test_lb_cookie_generated(void **state)
{
	(void)state;
	struct req r;
	struct arn_cfg_hash_policy hp[2];
	memset(hp, 0, sizeof(hp));
	hp[1].kind = ARN_CFG_HASH_COOKIE;
	hp[1].name = "sticky";
	hp[1].name_len = 6;
	hp[1].cookie_ttl_set = true;
	hp[1].cookie_ttl_s = 3600;
	hp[1].cookie_path = "/app";
	hp[1].cookie_path_len = 4;
	hp[0].kind = ARN_CFG_HASH_HEADER; /* absent: the cookie's index is 1 */
	hp[0].name = "x-none";
	hp[0].name_len = 6;
	struct arn_cfg_route_action a;
	memset(&a, 0, sizeof(a));
	a.hash_policies = hp;
	a.n_hash_policies = 2;
	struct http_lb_peer p = {
	    .raddr = 0xc6120101u, .laddr = 0xc6120002u, .rport = 40000, .lport = 80};
	struct http_lb_peer q = p;
	q.rport = 40001;
	uint64_t h1, h2;
	uint32_t gen = 0;
	parse(&r, "GET / HTTP/1.1\r\nHost: a\r\nCookie: other=1\r\n\r\n");
	assert_true(http_lb_hash(&a, &r.m, &p, &h1, &gen));
	assert_int_equal(gen, 2);
	/* the same connection: the same value, the same hash */
	gen = 0;
	assert_true(http_lb_hash(&a, &r.m, &p, &h2, &gen));
	assert_true(h1 == h2 && gen == 2);
	/* another connection (its port): another value */
	gen = 0;
	assert_true(http_lb_hash(&a, &r.m, &q, &h2, &gen));
	assert_true(h1 != h2 && gen == 2);
	char v[17] = {0};
	http_lb_cookie_value(&p, v);
	for (int i = 0; i < 16; i++)
		assert_non_null(strchr("0123456789abcdef", v[i]));
	char rq[256];
	/* the cookie it set, sent back quoted: the first request's hash, on
	 * any connection, and nothing generated */
	snprintf(rq, sizeof(rq), "GET / HTTP/1.1\r\nHost: a\r\nCookie: a=1; sticky=\"%s\"\r\n\r\n",
		 v);
	parse(&r, rq);
	gen = 0;
	assert_true(http_lb_hash(&a, &r.m, &q, &h2, &gen));
	assert_true(h1 == h2);
	assert_int_equal(gen, 0);
	snprintf(rq, sizeof(rq), "GET / HTTP/1.1\r\nHost: a\r\nCookie: sticky=%s\r\n\r\n", v);
	parse(&r, rq);
	assert_true(http_lb_hash(&a, &r.m, &q, &h2, &gen));
	assert_true(h1 == h2);
	assert_int_equal(gen, 0);
	/* an empty value (quoted or not) is no cookie: generated */
	parse(&r, "GET / HTTP/1.1\r\nHost: a\r\nCookie: sticky=\"\"\r\n\r\n");
	assert_true(http_lb_hash(&a, &r.m, &p, &h2, &gen));
	assert_true(h1 == h2 && gen == 2);
	/* no ttl: an absent or empty cookie gives no hash, sets nothing */
	hp[1].cookie_ttl_set = false;
	gen = 0;
	assert_false(http_lb_hash(&a, &r.m, &p, &h2, &gen));
	parse(&r, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
	assert_false(http_lb_hash(&a, &r.m, &p, &h2, &gen));
	assert_int_equal(gen, 0);
}

static uint64_t rotl1(uint64_t h)
{
	return h << 1 | h >> 63;
}

/*
 * The request's hash is Envoy's (source/common/http/hash_policy.cc), so a
 * key lands where Envoy's ring or table sends it: each policy's value is
 * XXH64'd with seed 0 (a header's several values sorted, each hashed with
 * the previous hash as its seed; source_ip hashes the address as
 * "a.b.c.d"); the hashes of several policies combine as rotate-left-1 of
 * the previous then XOR; a terminal policy stops once any policy gave a
 * hash. A generated cookie's value is Envoy's generateCookie: 16 hex
 * digits of XXH64(remote "ip:port" + local "ip:port").
 */
static void test_lb_hash_is_envoys(void **state)
{
	(void)state;
	/* the library is XXH64: its published vectors */
	assert_true(XXH64("", 0, 0) == 0xef46db3751d8e999ull);
	assert_true(XXH64("a", 1, 0) == 0xd24ec4f1a98c6e5bull);
	struct req r;
	parse(&r, "GET /p?user=42&x=1 HTTP/1.1\r\nHost: a\r\nX-User: bob\r\nCookie: a=1; "
		  "session=s1\r\n\r\n");
	struct arn_cfg_hash_policy hp[3];
	memset(hp, 0, sizeof(hp));
	struct arn_cfg_route_action a;
	memset(&a, 0, sizeof(a));
	a.hash_policies = hp;
	a.n_hash_policies = 1;
	uint64_t h;
	uint32_t gen = 0;
	struct http_lb_peer p = {
	    .raddr = 0xc6120101u, .laddr = 0xc6120002u, .rport = 40000, .lport = 80};
	hp[0].kind = ARN_CFG_HASH_HEADER;
	hp[0].name = "x-user";
	hp[0].name_len = 6;
	assert_true(http_lb_hash(&a, &r.m, &p, &h, &gen));
	assert_true(h == XXH64("bob", 3, 0));
	hp[0].kind = ARN_CFG_HASH_COOKIE;
	hp[0].name = "session";
	hp[0].name_len = 7;
	assert_true(http_lb_hash(&a, &r.m, &p, &h, &gen));
	assert_true(h == XXH64("s1", 2, 0));
	hp[0].kind = ARN_CFG_HASH_QUERY_PARAMETER;
	hp[0].name = "user";
	hp[0].name_len = 4;
	assert_true(http_lb_hash(&a, &r.m, &p, &h, &gen));
	assert_true(h == XXH64("42", 2, 0));
	hp[0].kind = ARN_CFG_HASH_SOURCE_IP;
	assert_true(http_lb_hash(&a, &r.m, &p, &h, &gen));
	assert_true(h == XXH64("198.18.1.1", 10, 0));
	/* header, then query: rotl(header's) ^ query's */
	hp[0].kind = ARN_CFG_HASH_HEADER;
	hp[0].name = "x-user";
	hp[0].name_len = 6;
	hp[1].kind = ARN_CFG_HASH_QUERY_PARAMETER;
	hp[1].name = "user";
	hp[1].name_len = 4;
	a.n_hash_policies = 2;
	assert_true(http_lb_hash(&a, &r.m, &p, &h, &gen));
	assert_true(h == (rotl1(XXH64("bob", 3, 0)) ^ XXH64("42", 2, 0)));
	/* the same policy twice does not cancel out */
	hp[1] = hp[0];
	assert_true(http_lb_hash(&a, &r.m, &p, &h, &gen));
	assert_true(h == (rotl1(XXH64("bob", 3, 0)) ^ XXH64("bob", 3, 0)));
	/* a terminal policy that gives nothing still stops: the header's
	 * hash exists (Envoy: terminal() && hash) */
	hp[1].kind = ARN_CFG_HASH_HEADER;
	hp[1].name = "x-none";
	hp[1].name_len = 6;
	hp[1].terminal = true;
	hp[2].kind = ARN_CFG_HASH_QUERY_PARAMETER;
	hp[2].name = "user";
	hp[2].name_len = 4;
	a.n_hash_policies = 3;
	assert_true(http_lb_hash(&a, &r.m, &p, &h, &gen));
	assert_true(h == XXH64("bob", 3, 0));
	/* a header's several values, in either order: sorted, chained */
	uint64_t want = XXH64("bob", 3, XXH64("alice", 5, 0)), h2;
	a.n_hash_policies = 1;
	parse(&r, "GET / HTTP/1.1\r\nHost: a\r\nX-User: bob\r\nX-User: alice\r\n\r\n");
	assert_true(http_lb_hash(&a, &r.m, &p, &h, &gen));
	parse(&r, "GET / HTTP/1.1\r\nHost: a\r\nX-User: alice\r\nX-User: bob\r\n\r\n");
	assert_true(http_lb_hash(&a, &r.m, &p, &h2, &gen));
	assert_true(h == want && h2 == want);
	/* a repeated value is hashed as often as it comes; a prefix first */
	parse(&r, "GET / HTTP/1.1\r\nHost: a\r\nX-User: bo\r\nX-User: bob\r\nX-User: bo\r\n\r\n");
	assert_true(http_lb_hash(&a, &r.m, &p, &h, &gen));
	assert_true(h == XXH64("bob", 3, XXH64("bo", 2, XXH64("bo", 2, 0))));
	assert_int_equal(gen, 0);
	/* the generated cookie's value */
	char v[17] = {0}, hex[17];
	http_lb_cookie_value(&p, v);
	const char *addrs = "198.18.1.1:40000198.18.0.2:80";
	snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)XXH64(addrs, strlen(addrs), 0));
	assert_string_equal(v, hex);
}

/* The Set-Cookie of a generated cookie, Envoy's makeSetCookieValue:
 * name="value"; Max-Age=ttl; Path=path; HttpOnly, no Max-Age for a ttl of 0
 * (a session cookie) and no Path without one; one edit (an addition, the
 * upstream's own Set-Cookie stays) per policy that generated. */
static void test_set_cookie_edits(void **state)
{
	(void)state;
	struct arn_cfg_hash_policy hp[2];
	memset(hp, 0, sizeof(hp));
	hp[0].kind = hp[1].kind = ARN_CFG_HASH_COOKIE;
	hp[0].name = "sticky";
	hp[0].name_len = 6;
	hp[0].cookie_ttl_set = true;
	hp[0].cookie_ttl_s = 3600;
	hp[0].cookie_path = "/app";
	hp[0].cookie_path_len = 4;
	hp[1].name = "s2";
	hp[1].name_len = 2;
	hp[1].cookie_ttl_set = true;
	struct arn_cfg_route_action a;
	memset(&a, 0, sizeof(a));
	a.hash_policies = hp;
	a.n_hash_policies = 2;
	struct http_lb_peer p = {.raddr = 1, .laddr = 2, .rport = 3, .lport = 4};
	char v[17] = {0};
	http_lb_cookie_value(&p, v);
	char tx[512], want[128];
	uint32_t len = 7; /* what the tx held before */
	struct arn_h1_edit e[4];
	assert_int_equal(http_set_cookie_edits(&a, 3, &p, tx, sizeof(tx), &len, e, 4), 2);
	assert_int_equal(e[0].op, ARN_H1_EDIT_ADD);
	assert_int_equal(e[0].name_len, 10);
	assert_memory_equal(e[0].name, "set-cookie", 10);
	assert_ptr_equal(e[0].value, tx + 7);
	snprintf(want, sizeof(want), "sticky=\"%s\"; Max-Age=3600; Path=/app; HttpOnly", v);
	assert_int_equal(e[0].value_len, strlen(want));
	assert_memory_equal(e[0].value, want, strlen(want));
	snprintf(want, sizeof(want), "s2=\"%s\"; HttpOnly", v);
	assert_int_equal(e[1].value_len, strlen(want));
	assert_memory_equal(e[1].value, want, strlen(want));
	/* only the policies that generated */
	len = 0;
	assert_int_equal(http_set_cookie_edits(&a, 2, &p, tx, sizeof(tx), &len, e, 4), 1);
	assert_memory_equal(e[0].value, "s2=", 3);
	/* no room in the tx or the edits: -ENOSPC */
	len = 0;
	assert_int_equal(http_set_cookie_edits(&a, 3, &p, tx, 40, &len, e, 4), -ENOSPC);
	len = 0;
	assert_int_equal(http_set_cookie_edits(&a, 3, &p, tx, sizeof(tx), &len, e, 1), -ENOSPC);
}

/* ---- retries (http_retry.c): Envoy's RetryStateImpl ---------------------------- */

static struct arn_cfg_retry_policy policy(uint32_t on, uint32_t n)
{
	struct arn_cfg_retry_policy rp;
	memset(&rp, 0, sizeof(rp));
	rp.present = true;
	rp.retry_on = on;
	rp.num_retries = n;
	rp.backoff_base_ms = 25;
	rp.backoff_max_ms = 250;
	return rp;
}

static void test_retry_on_status(void **state)
{
	(void)state;
	struct arn_cfg_retry_policy rp = policy(ARN_CFG_RETRY_5XX, 1);
	assert_true(http_retry_on_status(&rp, 500, false));
	assert_true(http_retry_on_status(&rp, 503, false));
	assert_true(http_retry_on_status(&rp, 599, false));
	assert_false(http_retry_on_status(&rp, 404, false));
	assert_false(http_retry_on_status(&rp, 200, false));
	/* an upstream Envoy that rate limited: never without envoy-ratelimited */
	assert_false(http_retry_on_status(&rp, 503, true));
	rp = policy(ARN_CFG_RETRY_GATEWAY_ERROR, 1);
	assert_false(http_retry_on_status(&rp, 500, false));
	assert_true(http_retry_on_status(&rp, 502, false));
	assert_true(http_retry_on_status(&rp, 503, false));
	assert_true(http_retry_on_status(&rp, 504, false));
	assert_false(http_retry_on_status(&rp, 505, false));
	rp = policy(ARN_CFG_RETRY_RETRIABLE_4XX, 1);
	assert_true(http_retry_on_status(&rp, 409, false));
	assert_false(http_retry_on_status(&rp, 429, false));
	assert_false(http_retry_on_status(&rp, 503, false));
	uint16_t codes[] = {429, 418};
	rp = policy(ARN_CFG_RETRY_RETRIABLE_STATUS_CODES, 1);
	rp.retriable_status_codes = codes;
	rp.n_retriable_status_codes = 2;
	assert_true(http_retry_on_status(&rp, 429, false));
	assert_true(http_retry_on_status(&rp, 418, false));
	assert_false(http_retry_on_status(&rp, 500, false));
	/* the codes alone do nothing without retriable-status-codes (Envoy) */
	rp.retry_on = ARN_CFG_RETRY_CONNECT_FAILURE;
	assert_false(http_retry_on_status(&rp, 429, false));
	/* connect-failure, reset and refused-stream never retry a response */
	rp = policy(ARN_CFG_RETRY_RESET | ARN_CFG_RETRY_REFUSED_STREAM, 1);
	assert_false(http_retry_on_status(&rp, 503, false));
	assert_false(http_retry_on_status(NULL, 503, false));
	/* envoy-ratelimited: only an answer with x-envoy-ratelimited, and
	 * that one only under it */
	rp = policy(ARN_CFG_RETRY_ENVOY_RATELIMITED | ARN_CFG_RETRY_5XX, 1);
	assert_true(http_retry_on_status(&rp, 429, true));
	assert_true(http_retry_on_status(&rp, 200, true));
	assert_false(http_retry_on_status(&rp, 429, false));
	assert_true(http_retry_on_status(&rp, 503, false));
}

/* The fault filter's decision (Envoy's FaultFilter and fault_config.cc):
 * fixed delay and abort with their percentages; header-asked ones (the
 * header's percentage never above the configured one; an abort status
 * outside [200, 600) none); the selection by cluster, downstream node and
 * headers. */
static void test_fault_plan(void **state)
{
	(void)state;
	struct req r;
	struct http_fault_plan p;
	struct arn_cfg_request none = {0};
	/* fixed: 100 % delay 50 ms, 50 % abort 503 */
	struct arn_cfg_fault f = {.delay = true,
				  .delay_ms = 50,
				  .delay_pct = {100, 100},
				  .abort = ARN_CFG_FAULT_ABORT_HTTP,
				  .abort_status = 503,
				  .abort_pct = {50, 100}};
	parse(&r, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
	assert_true(http_fault_plan(&f, &r.m, &none, "web", 3, 0, 10, &p));
	assert_int_equal(p.delay_ms, 50);
	assert_int_equal(p.abort_status, 503);
	assert_int_equal(p.abort_grpc, -1);
	assert_true(http_fault_plan(&f, &r.m, &none, "web", 3, 0, 60, &p));
	assert_int_equal(p.abort_status, 0); /* 60 of 100: past 50 % */
	/* gRPC abort */
	f.abort = ARN_CFG_FAULT_ABORT_GRPC;
	f.abort_status = 14;
	f.abort_pct = (struct arn_cfg_fraction){100, 100};
	assert_true(http_fault_plan(&f, &r.m, &none, "web", 3, 0, 0, &p));
	assert_int_equal(p.abort_grpc, 14);
	assert_int_equal(p.abort_status, 0);
	/* asked for by the request's headers */
	struct arn_cfg_fault h = {.delay = true,
				  .delay_header = true,
				  .delay_pct = {40, 100},
				  .abort = ARN_CFG_FAULT_ABORT_HEADER,
				  .abort_pct = {100, 100}};
	assert_true(http_fault_plan(&h, &r.m, &none, "web", 3, 0, 0, &p));
	assert_int_equal(p.delay_ms, 0); /* no header: no delay, no abort */
	assert_int_equal(p.abort_status, 0);
	parse(&r,
	      "GET / HTTP/1.1\r\nHost: a\r\nx-envoy-fault-delay-request: 20\r\n"
	      "x-envoy-fault-delay-request-percentage: 90\r\n"
	      "x-envoy-fault-abort-request: 429\r\nx-envoy-fault-abort-grpc-request: 8\r\n\r\n");
	assert_true(http_fault_plan(&h, &r.m, &none, "web", 3, 39, 0, &p));
	assert_int_equal(p.delay_ms, 20);
	assert_int_equal(p.abort_status, 429);
	assert_int_equal(p.abort_grpc, 8);
	/* 90 asked, 40 configured: 40 % */
	assert_true(http_fault_plan(&h, &r.m, &none, "web", 3, 41, 0, &p));
	assert_int_equal(p.delay_ms, 0);
	parse(&r,
	      "GET / HTTP/1.1\r\nHost: a\r\nx-envoy-fault-delay-request: 999999999\r\n"
	      "x-envoy-fault-delay-request-percentage: 10\r\nx-envoy-fault-abort-request: 600\r\n"
	      "\r\n");
	assert_true(http_fault_plan(&h, &r.m, &none, "web", 3, 5, 0, &p));
	assert_int_equal(p.delay_ms, ARN_CFG_FAULT_DELAY_MAX_MS); /* cut */
	assert_int_equal(p.abort_status, 0);			  /* not a status */
	assert_true(http_fault_plan(&h, &r.m, &none, "web", 3, 11, 0, &p));
	assert_int_equal(p.delay_ms, 0); /* 10 % asked: under the 40 */
	/* selection: upstream_cluster, downstream_nodes */
	f.upstream_cluster = "web";
	f.upstream_cluster_len = 3;
	assert_false(http_fault_plan(&f, &r.m, &none, "api", 3, 0, 0, &p));
	assert_false(http_fault_plan(&f, &r.m, &none, NULL, 0, 0, 0, &p));
	assert_true(http_fault_plan(&f, &r.m, &none, "web", 3, 0, 0, &p));
	const char *nodes[] = {"front", "edge"};
	f.downstream_nodes = nodes;
	f.n_downstream_nodes = 2;
	assert_false(http_fault_plan(&f, &r.m, &none, "web", 3, 0, 0, &p));
	parse(&r, "GET / HTTP/1.1\r\nHost: a\r\nx-envoy-downstream-service-node: edge\r\n\r\n");
	assert_true(http_fault_plan(&f, &r.m, &none, "web", 3, 0, 0, &p));
	parse(&r, "GET / HTTP/1.1\r\nHost: a\r\nx-envoy-downstream-service-node: edges\r\n\r\n");
	assert_false(http_fault_plan(&f, &r.m, &none, "web", 3, 0, 0, &p));
}

/* gRPC's retry conditions read a head's grpc-status (Envoy's
 * wouldRetryFromHeaders on a trailers-only answer): each its own code. */
static void test_retry_on_grpc(void **state)
{
	(void)state;
	static const struct {
		uint32_t on;
		const char *code;
	} yes[] = {{ARN_CFG_RETRY_GRPC_CANCELLED, "1"},
		   {ARN_CFG_RETRY_GRPC_DEADLINE_EXCEEDED, "4"},
		   {ARN_CFG_RETRY_GRPC_RESOURCE_EXHAUSTED, "8"},
		   {ARN_CFG_RETRY_GRPC_INTERNAL, "13"},
		   {ARN_CFG_RETRY_GRPC_UNAVAILABLE, "14"}};
	for (size_t i = 0; i < 5; i++) {
		struct arn_cfg_retry_policy rp = policy(yes[i].on, 1);
		assert_true(http_retry_on_grpc(&rp, yes[i].code, strlen(yes[i].code)));
		for (size_t j = 0; j < 5; j++)
			if (j != i)
				assert_false(
				    http_retry_on_grpc(&rp, yes[j].code, strlen(yes[j].code)));
		assert_false(http_retry_on_grpc(&rp, "0", 1));
	}
	struct arn_cfg_retry_policy rp = policy(ARN_CFG_RETRY_GRPC_ANY, 1);
	assert_false(http_retry_on_grpc(&rp, "", 0));
	assert_false(http_retry_on_grpc(&rp, "14x", 3));
	assert_false(http_retry_on_grpc(&rp, "114", 3));
	assert_false(http_retry_on_grpc(&rp, "-1", 2));
	/* 5xx alone retries no gRPC status (a gRPC error comes with 200) */
	rp = policy(ARN_CFG_RETRY_5XX, 1);
	assert_false(http_retry_on_grpc(&rp, "14", 2));
	assert_false(http_retry_on_grpc(NULL, "14", 2));
}

static void test_retry_on_reset(void **state)
{
	(void)state;
	struct arn_cfg_retry_policy rp = policy(ARN_CFG_RETRY_CONNECT_FAILURE, 1);
	assert_true(http_retry_on_reset(&rp, HTTP_RESET_CONNECT_FAILURE));
	assert_false(http_retry_on_reset(&rp, HTTP_RESET_RESET));
	assert_false(http_retry_on_reset(&rp, HTTP_RESET_TIMEOUT));
	/* 5xx, gateway-error and reset cover every reset, connect failures too */
	uint32_t all[] = {ARN_CFG_RETRY_5XX, ARN_CFG_RETRY_GATEWAY_ERROR, ARN_CFG_RETRY_RESET};
	for (unsigned i = 0; i < 3; i++) {
		rp = policy(all[i], 1);
		assert_true(http_retry_on_reset(&rp, HTTP_RESET_CONNECT_FAILURE));
		assert_true(http_retry_on_reset(&rp, HTTP_RESET_RESET));
		assert_true(http_retry_on_reset(&rp, HTTP_RESET_TIMEOUT));
		/* a circuit breaker's overflow: never */
		assert_false(http_retry_on_reset(&rp, HTTP_RESET_OVERFLOW));
	}
	/* retriable-4xx, status codes, refused-stream (HTTP/2 only): no reset */
	rp = policy(ARN_CFG_RETRY_RETRIABLE_4XX | ARN_CFG_RETRY_RETRIABLE_STATUS_CODES |
			ARN_CFG_RETRY_REFUSED_STREAM,
		    1);
	assert_false(http_retry_on_reset(&rp, HTTP_RESET_RESET));
	assert_false(http_retry_on_reset(&rp, HTTP_RESET_CONNECT_FAILURE));
}

static void test_retry_limit_breaker_and_success(void **state)
{
	(void)state;
	struct arn_cfg_retry_policy rp = policy(ARN_CFG_RETRY_5XX, 2);
	struct http_retry r;
	int32_t active = 0;
	bool ok;
	http_retry_init(&r, &rp);
	/* a first answer that is fine: no retry, no success counted */
	assert_int_equal(http_retry_should(&r, false, &active, 3, &ok), HTTP_RETRY_NO);
	assert_false(ok);
	/* two retries allowed, each holds a max_retries slot until its outcome */
	assert_int_equal(http_retry_should(&r, true, &active, 3, &ok), HTTP_RETRY_YES);
	assert_int_equal(active, 1);
	assert_int_equal(r.n, 1);
	assert_int_equal(http_retry_should(&r, true, &active, 3, &ok), HTTP_RETRY_YES);
	assert_false(ok);
	assert_int_equal(active, 1);
	assert_int_equal(r.n, 2);
	/* the third wish: URX */
	assert_int_equal(http_retry_should(&r, true, &active, 3, &ok), HTTP_RETRY_LIMIT);
	assert_int_equal(active, 0);
	/* a retry whose outcome is fine is a success */
	http_retry_init(&r, &rp);
	assert_int_equal(http_retry_should(&r, true, &active, 3, &ok), HTTP_RETRY_YES);
	assert_int_equal(http_retry_should(&r, false, &active, 3, &ok), HTTP_RETRY_NO);
	assert_true(ok);
	assert_int_equal(active, 0);
	/* the breaker: others hold every slot */
	http_retry_init(&r, &rp);
	active = 3;
	assert_int_equal(http_retry_should(&r, true, &active, 3, &ok), HTTP_RETRY_OVERFLOW);
	assert_int_equal(active, 3);
	active = 2;
	assert_int_equal(http_retry_should(&r, true, &active, 3, &ok), HTTP_RETRY_YES);
	assert_int_equal(active, 3);
	http_retry_release(&r, &active); /* the request ended during the back-off */
	assert_int_equal(active, 2);
	http_retry_release(&r, &active);
	assert_int_equal(active, 2);
	/* num_retries: 0, an empty retry_on, no policy: never */
	struct arn_cfg_retry_policy none = policy(ARN_CFG_RETRY_5XX, 0);
	http_retry_init(&r, &none);
	assert_int_equal(http_retry_should(&r, true, &active, 3, &ok), HTTP_RETRY_LIMIT);
	none = policy(0, 3);
	http_retry_init(&r, &none);
	assert_null(r.rp);
	http_retry_init(&r, NULL);
	assert_int_equal(http_retry_should(&r, true, &active, 3, &ok), HTTP_RETRY_NO);
}

static void test_retry_backoff(void **state)
{
	(void)state;
	/* Envoy: the N-th retry waits in [0, (2^N - 1) * 25 ms), at most 250 ms */
	assert_int_equal(http_retry_backoff_ms(25, 250, 1, 24), 24);
	assert_int_equal(http_retry_backoff_ms(25, 250, 1, 25), 0);
	assert_int_equal(http_retry_backoff_ms(25, 250, 2, 74), 74);
	assert_int_equal(http_retry_backoff_ms(25, 250, 2, 75), 0);
	assert_int_equal(http_retry_backoff_ms(25, 250, 3, 174), 174);
	assert_int_equal(http_retry_backoff_ms(25, 250, 4, 374), 250); /* capped */
	assert_int_equal(http_retry_backoff_ms(25, 250, 63, UINT64_MAX - 1), 250);
	uint64_t seed = 88172645463325252ull;
	uint32_t hi[5] = {0};
	for (int i = 0; i < 20000; i++) {
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		for (uint32_t n = 1; n <= 4; n++) {
			uint32_t d = http_retry_backoff_ms(25, 250, n, seed);
			uint32_t ceil = ((1u << n) - 1) * 25;
			assert_true(d < ceil || (d == 250 && ceil > 250));
			if (d > hi[n])
				hi[n] = d;
		}
	}
	/* fully jittered: the whole range is used */
	assert_int_equal(hi[1], 24);
	assert_int_equal(hi[2], 74);
	assert_int_equal(hi[3], 174);
	assert_int_equal(hi[4], 250);
}

static void test_attempt_count_header(void **state)
{
	(void)state;
	struct arn_cfg_hcm h = hcm_default();
	struct arn_cfg_vhost vh;
	memset(&vh, 0, sizeof(vh));
	struct req r;
	parse(&r, "GET / HTTP/1.1\r\nHost: a\r\nx-envoy-attempt-count: 7\r\n\r\n");
	struct http_req_ctx x = ctx(&h);
	x.vhost = &vh;
	x.attempt = 2;
	char out[2048];
	edited(&x, &r, out, sizeof(out));
	assert_non_null(strstr(out, "x-envoy-attempt-count: 7\r\n")); /* not asked for */
	vh.include_request_attempt_count = true;
	x = ctx(&h);
	x.vhost = &vh;
	x.attempt = 2;
	edited(&x, &r, out, sizeof(out));
	assert_non_null(strstr(out, "x-envoy-attempt-count: 2\r\n"));
	assert_null(strstr(out, ": 7\r\n"));
}

/* ---- path normalization (http_path.c) ------------------------------------------- */

static const char *norm(const char *in, unsigned flags)
{
	static char out[512];
	int k = http_path_normalize(in, strlen(in), flags, out, sizeof(out) - 1);
	assert_true(k >= 0);
	assert_true((size_t)k <= strlen(in));
	out[k] = 0;
	/* the quick scan never misses a change */
	if (strcmp(out, in) != 0)
		assert_true(http_path_needs_normalize(in, strlen(in), flags));
	return out;
}

static void test_path_rfc3986_dot_segments(void **state)
{
	(void)state;
	const unsigned N = HTTP_PATH_NORMALIZE;
	/* RFC 3986 5.2.4's examples */
	assert_string_equal(norm("/a/b/c/./../../g", N), "/a/g");
	assert_string_equal(norm("/mid/content=5/../6", N), "/mid/6");
	/* 5.4.1 and 5.4.2: the merged paths of base /b/c/d;p with the references */
	static const char *const cases[][2] = {
	    {"/b/c/g", "/b/c/g"},
	    {"/b/c/./g", "/b/c/g"},
	    {"/b/c/g/", "/b/c/g/"},
	    {"/b/c/.", "/b/c/"},
	    {"/b/c/./", "/b/c/"},
	    {"/b/c/..", "/b/"},
	    {"/b/c/../", "/b/"},
	    {"/b/c/../g", "/b/g"},
	    {"/b/c/../..", "/"},
	    {"/b/c/../../", "/"},
	    {"/b/c/../../g", "/g"},
	    {"/b/c/../../../g", "/g"},
	    {"/b/c/../../../../g", "/g"},
	    {"/./g", "/g"},
	    {"/../g", "/g"},
	    {"/b/c/g.", "/b/c/g."},
	    {"/b/c/.g", "/b/c/.g"},
	    {"/b/c/g..", "/b/c/g.."},
	    {"/b/c/..g", "/b/c/..g"},
	    {"/b/c/./../g", "/b/g"},
	    {"/b/c/./g/.", "/b/c/g/"},
	    {"/b/c/g/./h", "/b/c/g/h"},
	    {"/b/c/g/../h", "/b/c/h"},
	    {"/b/c/g;x=1/./y", "/b/c/g;x=1/y"},
	    {"/b/c/g;x=1/../y", "/b/c/y"},
	    {"/", "/"},
	    {"/..", "/"},
	    {"/.", "/"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_string_equal(norm(cases[i][0], N), cases[i][1]);
}

static void test_path_rfc3986_percent_and_slashes(void **state)
{
	(void)state;
	const unsigned N = HTTP_PATH_NORMALIZE, M = HTTP_PATH_MERGE_SLASHES;
	/* 6.2.2's example path: unreserved escapes decoded, dot segments gone;
	 * the other escapes keep their case (Envoy does no case normalization) */
	assert_string_equal(norm("/./b/../b/%63/%7bfoo%7d", N), "/b/c/%7bfoo%7d");
	assert_string_equal(norm("/%7Euser/%41%2d%5F%2E", N), "/~user/A-_.");
	/* an escaped dot is a dot: no way around dot-segment removal */
	assert_string_equal(norm("/a/%2e%2E/b", N), "/b");
	/* reserved characters stay escaped: %2F is not a separator */
	assert_string_equal(norm("/a%2Fb/%3f", N), "/a%2Fb/%3f");
	/* broken escapes are left alone */
	assert_string_equal(norm("/a%zz/%4", N), "/a%zz/%4");
	/* '\' reads as '/' (the canonicalizer Envoy uses does it) */
	assert_string_equal(norm("/a\\..\\b", N), "/b");
	/* the query is never touched */
	assert_string_equal(norm("/a/../b?x=/../%41//", N), "/b?x=/../%41//");
	assert_string_equal(norm("/a//b//?q=//", M), "/a/b/?q=//");
	/* merge_slashes alone leaves dots and escapes */
	assert_string_equal(norm("//a///./%41", M), "/a/./%41");
	/* empty segments survive normalize_path alone; both: merged */
	assert_string_equal(norm("//a//../b", N), "//a/b");
	assert_string_equal(norm("//a//../b", N | M), "/a/b");
	/* not a path: "*" and authority form */
	assert_string_equal(norm("*", N | M), "*");
	/* nothing to change: the quick scan says so */
	assert_false(http_path_needs_normalize("/a/b.c/..d?x=%41//", 18, N | M));
	assert_false(http_path_needs_normalize("/a//b", 5, N));
	assert_true(http_path_needs_normalize("/a//b", 5, M));
	assert_true(http_path_needs_normalize("/a/..", 5, N));
	assert_true(http_path_needs_normalize("/a/./b", 6, N));
	/* the output must fit the input's length */
	char small[4];
	assert_int_equal(http_path_normalize("/a/../b", 7, N, small, sizeof(small)), -ENOSPC);
}

/* path_with_escaped_slashes_action's unescaping (Envoy's
 * PathUtil::unescapeSlashes): %2F / %2f and %5C / %5c only, in the path
 * part; other escapes, broken ones and the query are left alone. Then, as
 * the HCM does, normalize_path reads the '\' as '/'. */
static void test_path_unescape_slashes(void **state)
{
	(void)state;
	char out[128];
	const char *in = "/a%2Fb%2fc%5Cd%5ce%41%2?q=%2F";
	int k = http_path_unescape_slashes(in, strlen(in), out, sizeof(out));
	assert_int_equal(k, (int)strlen("/a/b/c\\d\\e%41%2?q=%2F"));
	assert_memory_equal(out, "/a/b/c\\d\\e%41%2?q=%2F", (size_t)k);
	/* none: -ENOENT, escapes elsewhere or only in the query included */
	assert_int_equal(http_path_unescape_slashes("/a/b", 4, out, sizeof(out)), -ENOENT);
	assert_int_equal(http_path_unescape_slashes("/a%41?x=%2F", 11, out, sizeof(out)), -ENOENT);
	assert_int_equal(http_path_unescape_slashes("/a%2", 4, out, sizeof(out)), -ENOENT);
	/* an escape cut by the query is none */
	assert_int_equal(http_path_unescape_slashes("/a%2?F", 6, out, sizeof(out)), -ENOENT);
	assert_int_equal(http_path_unescape_slashes("/%2f", 4, out, 3), -ENOSPC);
	/* then normalized: the backslash is a separator, dot segments go */
	k = http_path_unescape_slashes("/a%5C..%5Cb", 11, out, sizeof(out));
	assert_true(k > 0);
	out[k] = 0;
	assert_string_equal(norm(out, HTTP_PATH_NORMALIZE), "/b");
}

/* ---- bench/trex's ASTF byte counts ---------------------------------------------- */

/* bench/trex's ASTF programs wait for byte counts: the server side for the
 * request plus what Arion adds on its way upstream (the profiles' `extra`),
 * the client side for the response plus what Arion adds on its way back
 * (`rextra`). TRex cannot run here, so the counts are checked against what
 * Arion would write with bench/trex/arion-trex.yaml: the profiles' own
 * bytes (trex_astf.h, generated from them) through the real parser, the
 * edits of that configuration's HTTP connection manager and route, and the
 * serializer, composed as http_hcm.c composes the upstream request and the
 * downstream response head. A count that is off leaves an ASTF program
 * waiting forever on the appliance. */
static void test_trex_astf_byte_counts(void **state)
{
	(void)state;
	struct arn_bootstrap *b = NULL;
	struct arn_sb err = ARN_SB_INIT;
	if (arn_bootstrap_load_file("bench/trex/arion-trex.yaml", NULL, &b, &err) != 0)
		fail_msg("bench/trex/arion-trex.yaml: %s", arn_sb_cstr(&err));
	struct arn_config_store *st = arn_config_create(b);
	assert_non_null(st);
	if (arn_config_apply_static(st, b, &err) != 0)
		fail_msg("bench/trex/arion-trex.yaml: %s", arn_sb_cstr(&err));
	const struct arn_cfg_listener *l =
	    arn_cfg_find(arn_config_gen(st), ARN_CFG_LISTENER, "http", 4, arn_cfg_hash("http", 4));
	assert_non_null(l);
	assert_int_equal(l->chains[0].kind, ARN_CFG_NF_HCM);
	const struct arn_cfg_hcm *h = l->chains[0].hcm;
	assert_non_null(h->inline_routes);
	const struct arn_cfg_vhost *vh = &h->inline_routes->vhosts[0];
	const struct arn_cfg_route *rt = &vh->routes[0];

	for (size_t i = 0; i < sizeof(trex_astf) / sizeof(trex_astf[0]); i++) {
		const struct trex_astf *t = &trex_astf[i];
		/* the request, as it leaves for the upstream */
		struct req r;
		parse(&r, t->request);
		struct http_req_ctx x = ctx(h);
		x.rt = h->inline_routes;
		x.vhost = vh;
		x.route = rt;
		x.timeout_ms = rt->route.timeout_ms;
		struct arn_h1_edit e[ARN_H1_MAX_EDITS];
		int n = http_req_edits(&x, &r.m, e, ARN_H1_MAX_EDITS);
		assert_true(n >= 0);
		char up[2048];
		struct arn_h1_wbuf w;
		arn_h1_wbuf_init(&w, up, sizeof(up) - 1, NULL, NULL);
		arn_h1_write_request_line(&w, r.m.method_name.p, r.m.method_name.len, r.m.target.p,
					  r.m.target.len, 1);
		arn_h1_write_headers(&w, &r.m, e, (unsigned)n, ARN_H1_W_DROP_HOP);
		arn_h1_write_end(&w);
		up[w.len] = 0;
		if (w.len != t->server_waits)
			fail_msg("%s: the server side waits for %u bytes of request (extra=%d), "
				 "Arion sends %u (extra=%d):\n%s",
				 t->profile, t->server_waits,
				 (int)t->server_waits - (int)strlen(t->request), w.len,
				 (int)w.len - (int)strlen(t->request), up);

		/* the response, as it leaves for the client: http_hcm.c adds
		 * "connection: close" when the request did not ask to keep the
		 * connection (no max_requests_per_connection here) */
		bool close_after = !(r.m.flags & ARN_H1_F_KEEP_ALIVE);
		struct arn_h1_parser p;
		struct arn_h1_msg m;
		struct arn_h1_header hd[16];
		arn_h1_msg_init(&m, hd, 16);
		arn_h1_parser_init(&p, ARN_H1_RESPONSE, NULL, &m);
		struct arn_h1_ev ev;
		assert_true(arn_h1_parse(&p, t->response, strlen(t->response), &ev) > 0);
		struct http_resp_ctx y = {.hcm = h,
					  .rt = h->inline_routes,
					  .vhost = vh,
					  .route = rt,
					  .service_ms = 1,
					  .upstream_addr = 0x30000001,
					  .upstream_port = 8080,
					  .text = text,
					  .text_cap = sizeof(text)};
		n = http_resp_edits(&y, &m, e, ARN_H1_MAX_EDITS);
		assert_true(n >= 0);
		char down[2048];
		arn_h1_wbuf_init(&w, down, sizeof(down) - 1, NULL, NULL);
		arn_h1_write_status_line(&w, m.status, NULL, 0, 1);
		arn_h1_write_headers(&w, &m, e, (unsigned)n, ARN_H1_W_DROP_HOP);
		if (close_after)
			arn_h1_write_header(&w, "connection", 10, "close", 5);
		arn_h1_write_end(&w);
		down[w.len] = 0;
		size_t body = strlen(t->response) -
			      (size_t)(strstr(t->response, "\r\n\r\n") + 4 - t->response);
		unsigned sent = w.len + (unsigned)body;
		if (sent != t->client_waits)
			fail_msg("%s: the client side waits for %u bytes of response (rextra=%d), "
				 "Arion sends %u (rextra=%d):\n%s",
				 t->profile, t->client_waits,
				 (int)t->client_waits - (int)strlen(t->response), sent,
				 (int)sent - (int)strlen(t->response), down);
	}
	arn_sb_free(&err);
	arn_config_destroy(st);
	arn_bootstrap_free(b);
}

/* The request edits find X-Forwarded-For and x-request-id in one walk of
 * the head and, without X-Forwarded-For, take the client and "internal"
 * as http_client_addr would (issue 17): the same answers for each
 * combination of use_remote_address, trusted hops and peer, with the
 * header, without it, and with an x-request-id before or after it. */
static void test_req_edits_client_without_xff_as_client_addr(void **state)
{
	(void)state;
	static const char *const heads[] = {
	    "GET / HTTP/1.1\r\nHost: a\r\n\r\n",
	    "GET / HTTP/1.1\r\nHost: a\r\nX-Request-Id: r1\r\n\r\n",
	    "GET / HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 10.1.2.3\r\nX-Request-Id: r1\r\n\r\n",
	    ("GET / HTTP/1.1\r\nX-Request-Id: r1\r\nHost: a\r\nX-Forwarded-For: 203.0.113.9, "
	     "10.0.0.1\r\n\r\n"),
	};
	static const uint32_t peers[] = {0x0a000005, 0xc6120001, 0x7f000001};
	for (unsigned hi = 0; hi < sizeof(heads) / sizeof(heads[0]); hi++)
		for (unsigned pi = 0; pi < sizeof(peers) / sizeof(peers[0]); pi++)
			for (int remote = 0; remote < 2; remote++)
				for (unsigned hops = 0; hops < 2; hops++) {
					struct arn_cfg_hcm h = hcm_default();
					h.use_remote_address = remote;
					h.xff_num_trusted_hops = hops;
					h.preserve_external_request_id = true;
					struct req r;
					parse(&r, heads[hi]);
					struct http_req_ctx x = ctx(&h);
					x.raddr = peers[pi];
					bool internal = false;
					uint32_t want =
					    http_client_addr(&h, &r.m, peers[pi], &internal);
					char out[2048];
					edited(&x, &r, out, sizeof(out));
					if (x.client_addr != want || x.internal != internal)
						fail_msg("head %u peer %08x remote %d hops %u: "
							 "client %08x internal %d, "
							 "http_client_addr %08x %d",
							 hi, peers[pi], remote, hops, x.client_addr,
							 x.internal, want, internal);
					/* the request's own id kept, found wherever it is */
					if (hi > 0) {
						assert_int_equal(x.request_id_len, 2);
						assert_memory_equal(x.request_id, "r1", 2);
					}
					if (!remote && hi >= 2)
						assert_non_null(x.xff);
				}
}

/* The Server edit: Envoy's name when none is configured, the configured
 * one otherwise, overwritten or added only when absent as
 * server_header_transformation says. */
static void test_response_server_name(void **state)
{
	(void)state;
	static const char *const heads[] = {
	    "HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Length: 0\r\n\r\n",
	    "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
	};
	static const char *const names[] = {NULL, "edge-1"};
	for (unsigned hi = 0; hi < 2; hi++)
		for (unsigned ni = 0; ni < 2; ni++)
			for (uint8_t t = 0; t < 3; t++) {
				struct arn_cfg_hcm h = hcm_default();
				h.server_name = names[ni];
				h.server_header_transformation = t;
				struct arn_h1_parser p;
				struct arn_h1_msg m;
				struct arn_h1_header hd[16];
				char in[128];
				snprintf(in, sizeof(in), "%s", heads[hi]);
				arn_h1_msg_init(&m, hd, 16);
				arn_h1_parser_init(&p, ARN_H1_RESPONSE, NULL, &m);
				struct arn_h1_ev ev;
				assert_true(arn_h1_parse(&p, in, strlen(in), &ev) > 0);
				struct http_resp_ctx x = {.hcm = &h,
							  .service_ms = -1,
							  .text = text,
							  .text_cap = sizeof(text)};
				struct arn_h1_edit e[ARN_H1_MAX_EDITS];
				int n = http_resp_edits(&x, &m, e, ARN_H1_MAX_EDITS);
				assert_true(n >= 0);
				char out[1024];
				apply(&m, e, n, out, sizeof(out));
				char ours[64];
				snprintf(ours, sizeof(ours), "server: %s\r\n",
					 names[ni] ? names[ni] : "envoy");
				if (hi == 0 && t >= 1) {
					/* pass-through, or added only when absent */
					assert_non_null(strstr(out, "Server: nginx\r\n"));
					assert_null(strstr(out, "server: "));
				} else if (t == 2) {
					assert_null(strstr(out, "erver: "));
				} else {
					assert_non_null(strstr(out, ours));
					assert_null(strstr(out, "nginx"));
				}
			}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_xff_edge_appends_the_peer),
	    cmocka_unit_test(test_append_x_forwarded_host),
	    cmocka_unit_test(test_trex_astf_byte_counts),
	    cmocka_unit_test(test_xff_without_use_remote_address_is_kept),
	    cmocka_unit_test(test_xff_trusted_hops),
	    cmocka_unit_test(test_xff_long_chains_and_lines),
	    cmocka_unit_test(test_xff_empty_elements_and_lines),
	    cmocka_unit_test(test_xff_matches_envoy_on_random_chains),
	    cmocka_unit_test(test_internal_request_keeps_request_id),
	    cmocka_unit_test(test_generated_request_id_is_the_words_uuid),
	    cmocka_unit_test(test_response_edits_usual_pair),
	    cmocka_unit_test(test_external_request_id_regenerated_unless_preserved),
	    cmocka_unit_test(test_forwarded_proto),
	    cmocka_unit_test(test_host_timeout_original_path_expect),
	    cmocka_unit_test(test_header_levels),
	    cmocka_unit_test(test_req_subst_req_forms),
	    cmocka_unit_test(test_req_subst_direct_peer),
	    cmocka_unit_test(test_response_edits),
	    cmocka_unit_test(test_redirects),
	    cmocka_unit_test(test_local_reply_shape),
	    cmocka_unit_test(test_lb_round_robin_and_weights),
	    cmocka_unit_test(test_lb_health_and_panic),
	    cmocka_unit_test(test_lb_override_host),
	    cmocka_unit_test(test_session_values),
	    cmocka_unit_test(test_lb_more_than_1024_hosts),
	    cmocka_unit_test(test_lb_single_host),
	    cmocka_unit_test(test_lb_priorities),
	    cmocka_unit_test(test_lb_priority_loads),
	    cmocka_unit_test(test_lb_priority_loads_localities),
	    cmocka_unit_test(test_lb_least_request_random_hash),
	    cmocka_unit_test(test_lb_ring_table),
	    cmocka_unit_test(test_lb_ring_is_envoys),
	    cmocka_unit_test(test_lb_maglev_table),
	    cmocka_unit_test(test_lb_maglev_is_envoys),
	    cmocka_unit_test(test_lb_hash_attempts),
	    cmocka_unit_test(test_lb_hash_table_kept),
	    cmocka_unit_test(test_lb_hash_table_limits),
	    cmocka_unit_test(test_lb_hash_policies),
	    cmocka_unit_test(test_lb_cookie_generated),
	    cmocka_unit_test(test_lb_hash_is_envoys),
	    cmocka_unit_test(test_set_cookie_edits),
	    cmocka_unit_test(test_retry_on_status),
	    cmocka_unit_test(test_retry_on_grpc),
	    cmocka_unit_test(test_fault_plan),
	    cmocka_unit_test(test_retry_on_reset),
	    cmocka_unit_test(test_retry_limit_breaker_and_success),
	    cmocka_unit_test(test_retry_backoff),
	    cmocka_unit_test(test_attempt_count_header),
	    cmocka_unit_test(test_path_rfc3986_dot_segments),
	    cmocka_unit_test(test_path_rfc3986_percent_and_slashes),
	    cmocka_unit_test(test_path_unescape_slashes),
	    cmocka_unit_test(test_req_edits_client_without_xff_as_client_addr),
	    cmocka_unit_test(test_response_server_name),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
