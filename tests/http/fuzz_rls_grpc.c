/*
 * libFuzzer target: a rate limit service's RateLimitResponse (a hostile
 * upstream's bytes) through the ratelimit filter's gRPC decoder
 * (http_rls_grpc_decode, after http_authz_grpc_unframe) and the
 * x-ratelimit-* values made of it (http_rls_xrl); and descriptors made
 * of the input's bytes through the RateLimitRequest encoder.
 *
 * Input: byte 0 chooses (bit 0: the rest is a gRPC body, prefix and
 * all, else a bare RateLimitResponse; bits 1-7: the encoder's buffer, in
 * 16-byte steps); the rest is the answer, copied to a buffer of exactly
 * its size (ASan sees any read past it). The same bytes, cut at each NUL
 * into keys and values, are the encoder's descriptors.
 *
 * Besides "never crash, leak, hang or read out of bounds", the oracle: a
 * decoded answer keeps its lists within their bounds, every slice within
 * the input, every header name a lower-case token, every value and
 * limit name free of CR, LF and NUL; x-ratelimit-limit fits its buffer
 * and has none of them either; an encoded request is one gRPC message
 * whose length prefix is exact and whose bytes walk as a
 * RateLimitRequest carrying the descriptors given, in order.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_authz_grpc.h"
#include "http_pb.h"
#include "http_rls_grpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_rls_grpc: %s:%d: %s\n", __FILE__, __LINE__, #cond);  \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static void check_text(const uint8_t *b, size_t n, const char *p, uint32_t len)
{
	const uint8_t *v = (const uint8_t *)p;
	CHECK(!len || (v >= b && v + len <= b + n));
	for (uint32_t j = 0; j < len; j++)
		CHECK(v[j] != '\r' && v[j] != '\n' && v[j] != 0);
}

static void check_hv(const uint8_t *b, size_t n, const struct http_rls_hv *h, unsigned k)
{
	CHECK(k <= HTTP_RLS_GRPC_HDRS);
	for (unsigned i = 0; i < k; i++) {
		const uint8_t *nm = (const uint8_t *)h[i].name;
		CHECK(nm >= b && nm + h[i].name_len <= b + n && h[i].name_len > 0);
		for (uint32_t j = 0; j < h[i].name_len; j++)
			CHECK(nm[j] > ' ' && nm[j] < 0x7f && !(nm[j] >= 'A' && nm[j] <= 'Z') &&
			      nm[j] != ':');
		check_text(b, n, h[i].value, h[i].value_len);
	}
}

static void decode(const uint8_t *data, size_t size, bool framed)
{
	uint8_t *b = malloc(size ? size : 1);
	CHECK(b);
	memcpy(b, data, size);
	uint8_t *msg = b;
	long ml = (long)size;
	if (framed) {
		ml = http_authz_grpc_unframe(b, size, &msg);
		if (ml < 0) {
			CHECK(ml == -EBADMSG);
			free(b);
			return;
		}
		CHECK(msg == b + 5 && (size_t)ml == size - 5);
	}
	struct http_rls_resp r;
	int rc = http_rls_grpc_decode(msg, (size_t)ml, &r);
	CHECK(rc == 0 || rc == -EBADMSG || rc == -E2BIG);
	if (rc == 0) {
		check_hv(b, size, r.rsp, r.n_rsp);
		check_hv(b, size, r.req, r.n_req);
		CHECK(r.n_st <= HTTP_RLS_GRPC_STATUSES);
		for (unsigned i = 0; i < r.n_st; i++)
			check_text(b, size, r.st[i].name, r.st[i].name_len);
		const uint8_t *bd = (const uint8_t *)r.body;
		CHECK(!r.body_len || (bd >= b && bd + r.body_len <= b + size));
		struct http_rls_xrl x;
		int k = http_rls_xrl(&r, &x);
		CHECK(k == 0 || k == 1 || k == -E2BIG);
		if (k == 1) {
			CHECK(x.limit_len > 0 && x.limit_len < sizeof(x.limit));
			CHECK(x.remaining_len > 0 && x.remaining_len < sizeof(x.remaining));
			CHECK(x.reset_len > 0 && x.reset_len < sizeof(x.reset));
			for (uint32_t j = 0; j < x.limit_len; j++)
				CHECK(x.limit[j] != '\r' && x.limit[j] != '\n' && x.limit[j] != 0);
		}
	}
	free(b);
}

/* The message walks as RateLimitRequest {domain = 1, descriptors = 2
 * {entries = 1 {key = 1, value = 2}}}: @return the descriptors' count,
 * their entries' in @p ne. */
static unsigned walk(uint8_t *m, size_t n, unsigned *ne)
{
	struct pbr r = {m, m + n};
	struct fld f;
	int rc;
	unsigned nd = 0;
	*ne = 0;
	while ((rc = r_next(&r, &f)) == 1) {
		CHECK(f.wt == 2 && (f.num == 1 || f.num == 2));
		if (f.num != 2)
			continue;
		nd++;
		struct pbr d = {f.data, f.data + f.len};
		struct fld g;
		while ((rc = r_next(&d, &g)) == 1) {
			CHECK(g.num == 1 && g.wt == 2);
			(*ne)++;
			struct pbr e = {g.data, g.data + g.len};
			struct fld h;
			while ((rc = r_next(&e, &h)) == 1)
				CHECK((h.num == 1 || h.num == 2) && h.wt == 2);
			CHECK(rc == 0);
		}
		CHECK(rc == 0);
	}
	CHECK(rc == 0);
	return nd;
}

static void encode(const uint8_t *data, size_t size, size_t cap)
{
	/* keys and values: the input cut at each NUL */
	struct arn_rl_desc d[4];
	unsigned nd = 0, total = 0;
	memset(d, 0, sizeof(d));
	const char *p = (const char *)data, *end = p + size;
	while (p < end && nd < 4) {
		struct arn_rl_desc *x = &d[nd];
		for (unsigned e = 0; e < 3 && p < end; e++) {
			const char *z = memchr(p, 0, (size_t)(end - p));
			size_t l = z ? (size_t)(z - p) : (size_t)(end - p);
			x->entries[x->n_entries].key = p;
			x->entries[x->n_entries].key_len = l;
			x->entries[x->n_entries].value = p;
			x->entries[x->n_entries].value_len = l / 2;
			x->n_entries++;
			p += l + (z ? 1 : 0);
		}
		total += (unsigned)x->n_entries;
		nd++;
	}
	uint8_t *buf = malloc(cap ? cap : 1);
	CHECK(buf);
	struct http_rls_req q;
	http_rls_req_start(&q, buf, cap, "dom", 3);
	for (unsigned i = 0; i < nd; i++)
		http_rls_req_desc(&q, &d[i]);
	long n = http_rls_req_end(&q);
	CHECK(n == -E2BIG || (n >= 5 && (size_t)n <= cap));
	if (n > 0) {
		uint32_t l = (uint32_t)buf[1] << 24 | (uint32_t)buf[2] << 16 |
			     (uint32_t)buf[3] << 8 | buf[4];
		CHECK(buf[0] == 0 && l == (uint32_t)n - 5);
		unsigned ne;
		CHECK(walk(buf + 5, l, &ne) == nd);
		CHECK(ne == total);
	}
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	decode(data + 1, size - 1, data[0] & 1);
	encode(data + 1, size - 1, (size_t)(data[0] >> 1) * 16);
	return 0;
}
