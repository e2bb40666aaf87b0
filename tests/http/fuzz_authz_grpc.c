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
		CHECK(!r.denied || (!r.n_rm && !r.n_rsp && !r.query));
		CHECK(!r.body_len || ((const uint8_t *)r.body >= msg &&
				      (const uint8_t *)r.body + r.body_len <= msg + ml));
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
