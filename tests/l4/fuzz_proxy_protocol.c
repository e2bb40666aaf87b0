/*
 * libFuzzer: the PROXY protocol parser (arn_proxy_proto.h) over hostile
 * bytes. The first byte chooses a split point; the rest is the
 * connection's first bytes. Invariants:
 *   - whole, byte at a time and in two pieces give the same answer (the
 *     same status, bytes taken, error reason and result);
 *   - a header never takes more than it was given; v1's is at most 107
 *     bytes and ends in CRLF; v2's is 16 + its length field;
 *   - an error refuses all further input;
 *   - what the writer (arn_pp_write) makes of an IPv4 result, v1 and v2,
 *     parses back whole to the same addresses and ports (a LOCAL / UNKNOWN
 *     one to LOCAL).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arn_proxy_proto.h"

static ssize_t run(struct arn_pp *p, const uint8_t *d, size_t n, size_t split, size_t *took)
{
	arn_pp_init(p);
	*took = 0;
	size_t at = 0;
	while (at < n) {
		size_t k = split ? split : n;
		if (k > n - at)
			k = n - at;
		ssize_t r = arn_pp_parse(p, d + at, k);
		if (r != ARN_AGAIN) {
			if (r >= 0) {
				if ((size_t)r > k)
					abort();
				*took = at + (size_t)r;
			}
			return r;
		}
		at += k;
	}
	return ARN_AGAIN;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t split = data[0];
	data++;
	size--;
	/* an exact copy, so that a read past the end is ASan's to see */
	uint8_t *d = malloc(size ? size : 1);
	if (!d)
		return 0;
	memcpy(d, data, size);
	struct arn_pp a, b, c;
	size_t ta, tb, tc;
	ssize_t ra = run(&a, d, size, 0, &ta);
	ssize_t rb = run(&b, d, size, 1, &tb);
	ssize_t rc = run(&c, d, size, split, &tc);
	if ((ra >= 0) != (rb >= 0) || (ra >= 0) != (rc >= 0))
		abort();
	if (ra < 0 && (ra != rb || ra != rc))
		abort();
	if (ra >= 0) {
		const struct arn_pp_result *x = arn_pp_result(&a), *y = arn_pp_result(&b),
					   *z = arn_pp_result(&c);
		if (!x || !y || !z || ta != tb || ta != tc || x->header_len != ta ||
		    memcmp(x, y, sizeof(*x)) || memcmp(x, z, sizeof(*x)))
			abort();
		if (x->version == 1 &&
		    (ta > ARN_PP_V1_MAX || d[ta - 2] != '\r' || d[ta - 1] != '\n'))
			abort();
		if (x->version == 2 && ta != ARN_PP_V2_HDR + ((size_t)d[14] << 8 | d[15]))
			abort();
		if (x->version != 1 && x->version != 2)
			abort();
		if (x->local || x->family == 4) {
			struct arn_pp_addrs ad = {x->src4, x->dst4, x->src_port, x->dst_port};
			for (unsigned v = 1; v <= 2; v++) {
				uint8_t w[ARN_PP_WRITE_MAX];
				size_t wn = arn_pp_write(w, v, x->local ? NULL : &ad);
				struct arn_pp q;
				arn_pp_init(&q);
				if (!wn || arn_pp_parse(&q, w, wn) != (ssize_t)wn)
					abort();
				const struct arn_pp_result *r = arn_pp_result(&q);
				if (r->local != x->local ||
				    (!x->local && (r->src4 != x->src4 || r->dst4 != x->dst4 ||
						   r->src_port != x->src_port ||
						   r->dst_port != x->dst_port)))
					abort();
			}
		}
	}
	if (ra == ARN_PP_ERROR) {
		if (arn_pp_error(&a) != arn_pp_error(&b) || arn_pp_error(&a) != arn_pp_error(&c) ||
		    arn_pp_error(&a) == ARN_PP_E_NONE)
			abort();
		if (arn_pp_parse(&a, "PROXY ", 6) != ARN_PP_ERROR)
			abort();
	}
	free(d);
	return 0;
}
