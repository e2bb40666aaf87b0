/*
 * libFuzzer target: an external processor's answers (a hostile upstream's
 * bytes) through ext_proc's gRPC reassembly (http_grpc_rd_*, the body cut
 * into slices the input chooses) and ProcessingResponse decoder
 * (http_ext_proc_decode); and headers made of the input's bytes through
 * the ProcessingRequest encoder.
 *
 * Input: byte 0 chooses the slice sizes (1 + its value) and byte 1 the
 * reassembly buffer (16-byte steps, from 5); the rest is the answer's
 * body, copied to a buffer of exactly its size (ASan sees any read past
 * it). The same bytes, cut at each NUL into names and values, are the
 * encoder's headers.
 *
 * Besides "never crash, leak, hang or read out of bounds", the oracle:
 * every message reassembled is the one a plain walk of the body finds
 * (prefix, length, bytes), none past the buffer; a decoded answer keeps
 * its lists within their bounds and every slice within the message; an
 * encoded request is one gRPC message whose length prefix is exact and
 * whose bytes walk as a ProcessingRequest carrying the headers given, in
 * order, names lower-cased; a body message's start with the input as its
 * body likewise (request_body / response_body, end_of_stream).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_ext_proc_grpc.h"
#include "http_pb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_ext_proc_grpc: %s:%d: %s\n", __FILE__, __LINE__,     \
				#cond);                                                            \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static void in_msg(const uint8_t *m, size_t n, const char *p, uint32_t len)
{
	const uint8_t *v = (const uint8_t *)p;
	CHECK(!len || (v >= m && v + len <= m + n));
}

static void decode(const uint8_t *m, size_t n)
{
	struct http_ext_proc_resp r;
	int rc = http_ext_proc_decode(m, n, &r);
	CHECK(rc == 0 || rc == -EBADMSG || rc == -E2BIG);
	if (rc != 0)
		return;
	CHECK(r.kind <= HTTP_EXT_PROC_IMMEDIATE);
	CHECK(r.mut.n_set <= HTTP_EXT_PROC_GRPC_HDRS && r.mut.n_rm <= HTTP_EXT_PROC_GRPC_HDRS);
	for (unsigned i = 0; i < r.mut.n_set; i++) {
		in_msg(m, n, r.mut.set[i].name, r.mut.set[i].name_len);
		in_msg(m, n, r.mut.set[i].value, r.mut.set[i].value_len);
	}
	for (unsigned i = 0; i < r.mut.n_rm; i++)
		in_msg(m, n, r.mut.rm[i].name, r.mut.rm[i].name_len);
	in_msg(m, n, r.body, r.body_len);
	in_msg(m, n, r.details, r.details_len);
	/* a body_mutation's body: within the message, one of body and
	 * clear_body, only with a body_mutation */
	in_msg(m, n, (const char *)r.new_body, r.has_new_body ? r.new_body_len : 0);
	CHECK(!(r.has_new_body && r.clear_body));
	CHECK(r.has_body_mutation || !(r.has_new_body || r.clear_body));
	CHECK(!r.has_timeout_override || r.timeout_ms <= 86400000u);
}

/* The body @p b (@p n bytes) in slices of @p step through a reassembly
 * buffer of @p cap, each message checked against a plain walk. */
static void reassemble(const uint8_t *b, size_t n, size_t step, uint32_t cap)
{
	uint8_t *buf = malloc(cap);
	CHECK(buf);
	struct http_grpc_rd rd = {.buf = buf, .cap = cap};
	size_t off = 0, walk = 0;
	bool failed = false;
	while (off < n && !failed) {
		size_t k = n - off < step ? n - off : step;
		const char *s = (const char *)b + off;
		while (k && !failed) {
			bool done;
			long t = http_grpc_rd_take(&rd, s, k, &done);
			if (t < 0) {
				CHECK(t == -EBADMSG || t == -E2BIG);
				/* the walk agrees: a flag not 0, or too large */
				CHECK(walk + 5 <= n);
				uint32_t l = (uint32_t)b[walk + 1] << 24 |
					     (uint32_t)b[walk + 2] << 16 |
					     (uint32_t)b[walk + 3] << 8 | b[walk + 4];
				CHECK(t == -EBADMSG ? b[walk] != 0 : (uint64_t)l + 5 > cap);
				failed = true;
				break;
			}
			CHECK(t > 0 && (size_t)t <= k);
			s += t;
			k -= (size_t)t;
			off += (size_t)t;
			if (done) {
				uint32_t l = http_grpc_rd_len(&rd);
				CHECK(b[walk] == 0 && walk + 5 + l <= n);
				CHECK(memcmp(buf, b + walk, 5 + (size_t)l) == 0);
				decode(buf + 5, l);
				walk += 5 + l;
				http_grpc_rd_next(&rd);
			}
		}
	}
	free(buf);
}

/* Walk @p m (@p n bytes) as the gRPC message of a ProcessingRequest of
 * @p k headers @p h. */
static void check_request(const uint8_t *m, size_t n, const struct http_ext_proc_hdr *h, unsigned k)
{
	CHECK(n >= 5 && m[0] == 0);
	uint32_t l = (uint32_t)m[1] << 24 | (uint32_t)m[2] << 16 | (uint32_t)m[3] << 8 | m[4];
	CHECK((size_t)l == n - 5);
	struct pbr r = {(uint8_t *)(uintptr_t)m + 5, (uint8_t *)(uintptr_t)m + n};
	struct fld f, hh = {0};
	int rc;
	bool md = false;
	while ((rc = r_next(&r, &f)) == 1) {
		if (f.num == 2)
			hh = f;
		else if (f.num == 8)
			md = f.wt == 2 && f.len == 0;
		else
			CHECK(0);
	}
	CHECK(rc == 0 && md && hh.wt == 2);
	struct pbr a = {hh.data, hh.data + hh.len};
	unsigned seen = 0;
	while ((rc = r_next(&a, &f)) == 1) {
		if (f.num == 3) {
			CHECK(f.wt == 0 && f.v == 1);
			continue;
		}
		CHECK(f.num == 1 && f.wt == 2);
		struct pbr mp = {f.data, f.data + f.len};
		struct fld e;
		while ((rc = r_next(&mp, &e)) == 1) {
			CHECK(e.num == 1 && e.wt == 2 && seen < k);
			struct pbr hv = {e.data, e.data + e.len};
			struct fld g;
			size_t vl = 0;
			bool key = false;
			while ((rc = r_next(&hv, &g)) == 1) {
				CHECK(g.wt == 2);
				if (g.num == 1) {
					CHECK(g.len == h[seen].name_len);
					for (size_t j = 0; j < g.len; j++) {
						char c = h[seen].name[j];
						CHECK(g.data[j] ==
						      (uint8_t)(c >= 'A' && c <= 'Z' ? c + 32 : c));
					}
					key = true;
				} else {
					CHECK(g.num == 3 && g.len == h[seen].value_len &&
					      memcmp(g.data, h[seen].value, g.len) == 0);
					vl = g.len;
				}
			}
			CHECK(rc == 0 && key && vl == h[seen].value_len);
			seen++;
		}
		CHECK(rc == 0);
	}
	CHECK(rc == 0 && seen == k);
}

static void encode(const uint8_t *data, size_t size)
{
	struct http_ext_proc_hdr h[64];
	unsigned k = 0;
	size_t i = 0;
	while (i < size && k < 64) {
		const char *nm = (const char *)data + i;
		const uint8_t *z = memchr(data + i, 0, size - i);
		size_t nl = z ? (size_t)(z - (data + i)) : size - i;
		i += nl + (z ? 1 : 0);
		const char *v = (const char *)data + i;
		z = i < size ? memchr(data + i, 0, size - i) : NULL;
		size_t vl = i < size ? (z ? (size_t)(z - (data + i)) : size - i) : 0;
		i += vl + (z ? 1 : 0);
		h[k++] = (struct http_ext_proc_hdr){nm, v, (uint32_t)nl, (uint32_t)vl};
	}
	size_t cap = 5 + 2 * size + 16 * k + 16;
	uint8_t *buf = malloc(cap);
	CHECK(buf);
	long n = http_ext_proc_encode_headers(false, h, k, k & 1, buf, cap);
	CHECK(n > 0);
	check_request(buf, (size_t)n, h, k);
	/* one byte short: refused, nothing past the buffer written */
	CHECK(http_ext_proc_encode_headers(false, h, k, k & 1, buf, (size_t)n - 1) == -E2BIG);
	free(buf);
}

/* A body message's start for a body of the input's @p n bytes
 * (request_body or response_body, end_of_stream from @p flags): with the
 * body after it, one gRPC message whose prefix is exact, walking as a
 * ProcessingRequest whose HttpBody carries those bytes. */
static void encode_body(const uint8_t *d, size_t n, uint8_t flags)
{
	uint8_t head[32], *all = malloc(32 + n);
	CHECK(all);
	bool resp = flags & 1, eos = flags & 2;
	long k = http_ext_proc_encode_body_head(resp, n, eos, head, sizeof(head));
	CHECK(k > 5 && (size_t)k <= sizeof(head));
	memcpy(all, head, (size_t)k);
	memcpy(all + k, d, n);
	size_t len = (size_t)k + n;
	CHECK(all[0] == 0);
	CHECK(((size_t)all[1] << 24 | (size_t)all[2] << 16 | (size_t)all[3] << 8 | all[4]) ==
	      len - 5);
	struct pbr r = {all + 5, all + len};
	struct fld f;
	int rc;
	bool seen = false;
	while ((rc = r_next(&r, &f)) == 1) {
		if (f.num != (resp ? 5u : 4u))
			continue;
		CHECK(f.wt == 2 && !seen);
		seen = true;
		struct pbr b = {f.data, f.data + f.len};
		struct fld g;
		bool body = false, end = false;
		while ((rc = r_next(&b, &g)) == 1) {
			if (g.num == 1) {
				CHECK(g.len == n && (!n || memcmp(g.data, d, n) == 0));
				body = true;
			} else if (g.num == 2) {
				end = g.v != 0;
			}
		}
		CHECK(rc == 0 && body && end == eos);
	}
	CHECK(rc == 0 && seen);
	free(all);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	size_t step = 1 + data[0];
	uint32_t cap = 5 + 16u * data[1];
	uint8_t *b = malloc(size - 2 ? size - 2 : 1);
	CHECK(b);
	memcpy(b, data + 2, size - 2);
	reassemble(b, size - 2, step, cap);
	decode(b, size - 2);
	free(b);
	encode(data + 2, size - 2);
	encode_body(data + 2, size - 2, data[0]);
	return 0;
}
