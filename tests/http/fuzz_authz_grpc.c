/*
 * libFuzzer target: an authorization service's CheckResponse (a hostile
 * upstream's bytes) through ext_authz's gRPC decoder
 * (http_authz_grpc_decode, http_authz_grpc_unframe), and a request made
 * of the input's bytes (its headers, and its body with with_request_body)
 * through the CheckRequest encoder.
 *
 * Input: byte 0 chooses (bit 0: the rest is a gRPC body, prefix and
 * all, else a bare CheckResponse); the rest is the answer, copied to a
 * buffer of exactly its size (ASan sees any read past it). The same bytes,
 * cut at each NUL into header names and values, are the encoder's
 * request headers.
 *
 * Besides "never crash, leak, hang or read out of bounds", the oracle: a
 * decoded answer keeps every list within HTTP_AUTHZ_GRPC_HDRS, every
 * slice within the input, every name a lower-case token, every value
 * free of CR, LF and NUL, ops only those Envoy's append actions map to;
 * an encoded request is one gRPC message whose length prefix is exact
 * and whose bytes parse as protobuf (the decoder's walk accepts them).
 * The query parameters an answer sets or removes are applied (as
 * ext_authz applies them) to a path made of the same bytes: the path
 * before the query kept, each removed key gone, each set one there once.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arn_config.h"
#include "arn_h1.h"
#include "http_authz_grpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_authz_grpc: %s:%d: %s\n", __FILE__, __LINE__,        \
				#cond);                                                            \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static void check_hv(const uint8_t *b, size_t n, const struct http_authz_hv *h, unsigned k,
		     bool remove)
{
	CHECK(k <= HTTP_AUTHZ_GRPC_HDRS);
	for (unsigned i = 0; i < k; i++) {
		const uint8_t *nm = (const uint8_t *)h[i].name;
		CHECK(nm >= b && nm + h[i].name_len <= b + n && h[i].name_len > 0);
		for (uint32_t j = 0; j < h[i].name_len; j++)
			CHECK(nm[j] > ' ' && nm[j] < 0x7f && !(nm[j] >= 'A' && nm[j] <= 'Z') &&
			      nm[j] != ':');
		if (remove) {
			CHECK(h[i].op == ARN_H1_EDIT_REMOVE);
			continue;
		}
		CHECK(h[i].op == ARN_H1_EDIT_ADD || h[i].op == ARN_H1_EDIT_SET ||
		      h[i].op == ARN_H1_EDIT_APPEND_VALUE || h[i].op == ARN_H1_EDIT_ADD_IF_ABSENT ||
		      h[i].op == ARN_H1_EDIT_SET_IF_PRESENT);
		const uint8_t *v = (const uint8_t *)h[i].value;
		CHECK(!h[i].value_len || (v >= b && v + h[i].value_len <= b + n));
		for (uint32_t j = 0; j < h[i].value_len; j++)
			CHECK(v[j] != '\r' && v[j] != '\n' && v[j] != 0);
	}
}

/* The query of @p o (@p n bytes, from its '?'): does it have key @p k? */
static unsigned key_count(const char *o, size_t n, const char *k, size_t kl)
{
	const char *q = memchr(o, '?', n);
	unsigned c = 0;
	for (size_t i = q ? (size_t)(q - o) + 1 : n; i < n;) {
		const char *amp = memchr(o + i, '&', n - i);
		size_t len = amp ? (size_t)(amp - (o + i)) : n - i;
		const char *eq = memchr(o + i, '=', len);
		CHECK(eq); /* every pair written back has one */
		if ((size_t)(eq - (o + i)) == kl && (!kl || memcmp(o + i, k, kl) == 0))
			c++;
		i += len + 1;
	}
	return c;
}

/* ext_authz's query rewrite with what the answer asked, over a path made
 * of the input's bytes (a client's): bounded, the path before the '?'
 * kept, a removed key gone, a key set once, the keys in byte order. */
static void query(const uint8_t *data, size_t size, const struct http_authz_grpc_resp *r)
{
	size_t plen = size > 512 ? 512 : size;
	/* the exact length first, as ext_authz asks it; one byte short of it
	 * does not fit */
	long need = http_query_rewrite((const char *)data, plen, r->qset, r->n_qset, r->qrm,
				       r->n_qrm, NULL, 0);
	CHECK(need == -E2BIG || need >= 0);
	if (need < 0)
		return;
	size_t cap = (size_t)need;
	char *out = malloc(cap ? cap : 1);
	CHECK(out);
	if (cap)
		CHECK(http_query_rewrite((const char *)data, plen, r->qset, r->n_qset, r->qrm,
					 r->n_qrm, out, cap - 1) == -ENOSPC);
	long n = http_query_rewrite((const char *)data, plen, r->qset, r->n_qset, r->qrm, r->n_qrm,
				    out, cap);
	CHECK(n == need);
	/* what ext_authz writes: only sets whose keys and values are
	 * URL-encoded (the others answer 500 before any rewrite) */
	bool encoded = true;
	for (unsigned i = 0; i < r->n_qset; i++)
		encoded &= http_query_is_encoded(r->qset[i].k, r->qset[i].kl) &&
			   http_query_is_encoded(r->qset[i].v, r->qset[i].vl);
	if (n >= 0 && encoded) {
		const char *q = memchr(data, '?', plen);
		size_t head = q ? (size_t)(q - (const char *)data) : plen;
		CHECK((size_t)n >= head && (!head || memcmp(out, data, head) == 0));
		CHECK((size_t)n == head || out[head] == '?');
		/* only keys without '&' or '=' can be found again as keys */
		for (unsigned i = 0; i < r->n_qrm; i++)
			if (!memchr(r->qrm[i].k, '&', r->qrm[i].kl) &&
			    !memchr(r->qrm[i].k, '=', r->qrm[i].kl))
				CHECK(key_count(out, (size_t)n, r->qrm[i].k, r->qrm[i].kl) == 0);
		for (unsigned i = 0; i < r->n_qset; i++) {
			const struct http_qkv *s = &r->qset[i];
			bool removed = false;
			for (unsigned j = 0; j < r->n_qrm; j++)
				removed |= r->qrm[j].kl == s->kl &&
					   (!s->kl || memcmp(r->qrm[j].k, s->k, s->kl) == 0);
			if (!removed && http_query_is_encoded(s->k, s->kl) &&
			    http_query_is_encoded(s->v, s->vl))
				CHECK(key_count(out, (size_t)n, s->k, s->kl) == 1);
		}
	}
	free(out);
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
	struct http_authz_grpc_resp r;
	int rc = http_authz_grpc_decode(msg, (size_t)ml, &r);
	CHECK(rc == 0 || rc == -EBADMSG || rc == -E2BIG);
	if (rc == 0) {
		CHECK(r.denied == (r.code != 0));
		check_hv(msg, (size_t)ml, r.h, r.n_h, false);
		check_hv(msg, (size_t)ml, r.rm, r.n_rm, true);
		check_hv(msg, (size_t)ml, r.rsp, r.n_rsp, false);
		CHECK(!r.denied || (!r.n_rm && !r.n_rsp && !r.n_qset && !r.n_qrm));
		CHECK(!r.body_len || ((const uint8_t *)r.body >= msg &&
				      (const uint8_t *)r.body + r.body_len <= msg + ml));
		CHECK(r.n_qset <= HTTP_AUTHZ_GRPC_HDRS && r.n_qrm <= HTTP_AUTHZ_GRPC_HDRS);
		for (unsigned i = 0; i < r.n_qset; i++) {
			CHECK(!r.qset[i].kl ||
			      ((const uint8_t *)r.qset[i].k >= msg &&
			       (const uint8_t *)r.qset[i].k + r.qset[i].kl <= msg + ml));
			CHECK(!r.qset[i].vl ||
			      ((const uint8_t *)r.qset[i].v >= msg &&
			       (const uint8_t *)r.qset[i].v + r.qset[i].vl <= msg + ml));
		}
		if (r.n_qset || r.n_qrm)
			query(data, size, &r);
	}
	free(b);
}

static bool keep_odd(const void *ctx, const char *name, size_t len)
{
	(void)ctx;
	return (len + (size_t)name[0]) % 3 != 0;
}

static void encode(const uint8_t *data, size_t size)
{
	static struct arn_h1_header h[64];
	struct arn_h1_msg m;
	memset(&m, 0, sizeof(m));
	m.hdrs = h;
	size_t i = 0;
	while (i < size && m.n_hdrs < 64) {
		const uint8_t *nz = memchr(data + i, 0, size - i);
		size_t nl = nz ? (size_t)(nz - (data + i)) : size - i;
		size_t at = i + nl + (nz ? 1 : 0);
		const uint8_t *vz = at < size ? memchr(data + at, 0, size - at) : NULL;
		size_t vl = at < size ? (vz ? (size_t)(vz - (data + at)) : size - at) : 0;
		if (nl && nl <= UINT16_MAX)
			h[m.n_hdrs++] = (struct arn_h1_header){.name = (const char *)data + i,
							       .name_len = (uint16_t)nl,
							       .value = (const char *)data + at,
							       .value_len = (uint32_t)vl};
		i = at + vl + (vz ? 1 : 0);
		if (!nz)
			break;
	}
	struct arn_cfg_ext_authz_hdr ctx = {"k", "v", 1, 1};
	struct arn_cfg_ext_authz_hdr ctx_vh[2] = {{"k", "vh", 1, 2}, {"k2", "v2", 2, 2}};
	struct http_authz_grpc_req q = {
	    .saddr = 0xc6120064u,
	    .sport = 1234,
	    .daddr = 0xc6120001u,
	    .dport = 80,
	    .time_us = 1700000000123456,
	    .id = size,
	    .method = "GET",
	    .method_len = 3,
	    .path = "/p",
	    .path_len = 2,
	    .host = "h",
	    .host_len = 1,
	    .scheme = "http",
	    .protocol = "HTTP/1.1",
	    .m = &m,
	    .keep = size & 1 ? keep_odd : NULL,
	    .ctx = &ctx,
	    .n_ctx = 1,
	    .ctx_vh = ctx_vh,
	    .n_ctx_vh = 2,
	    /* with_request_body: the input itself, as body or raw_body */
	    .body = (const char *)data,
	    .body_len = (uint32_t)size,
	    .with_body = size & 4,
	    .partial = size & 8,
	    .raw_body = size & 16,
	};
	size_t cap = size & 2 ? 256 : 64 * 1024;
	uint8_t *buf = malloc(cap);
	CHECK(buf);
	long at = http_authz_grpc_encode(&q, buf, cap);
	CHECK(at == -E2BIG || (at >= 0 && (size_t)at + 5 <= cap));
	if (at >= 0) {
		uint8_t *msg;
		long ml = http_authz_grpc_unframe(buf + at, cap - (size_t)at, &msg);
		CHECK(ml >= 0);
		struct http_authz_grpc_resp r;
		/* a CheckRequest read as a CheckResponse: its field 1 is a
		 * message, every length inside is walked */
		CHECK(http_authz_grpc_decode(msg, (size_t)ml, &r) == 0);
	}
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	decode(data + 1, size - 1, data[0] & 1);
	encode(data + 1, size - 1);
	return 0;
}
