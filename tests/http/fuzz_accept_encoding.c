/*
 * libFuzzer target for Accept-Encoding, the client's bytes the compressor
 * filter reads (http_cmp_choose, lib/http/http_compressor.c). Besides
 * "never crash, read out of bounds or hang", the oracles:
 *  - the values of several Accept-Encoding lines give the answer their
 *    join with ',' gives (Envoy joins them into one list);
 *  - the answer is an offer's index, and HTTP_CMP_HDR_USED comes with
 *    one, identity and not-valid without;
 *  - an offer chosen is the first offer of its encoding.
 * Input: byte 0 picks the offers (bits 0-1: how many of gzip, br, zstd,
 * gzip again; bits 2-5: choose_first of each), the rest is the values,
 * separated by '\n'.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_compressor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	static const char *const encs[] = {"gzip", "br", "zstd", "gzip"};
	struct http_cmp_offer o[4];
	unsigned n = 1 + (data[0] & 3);
	for (unsigned i = 0; i < n; i++)
		o[i] = (struct http_cmp_offer){encs[i], strlen(encs[i]), (data[0] >> (2 + i)) & 1};
	/* each value its own malloc: ASan sees a read past its end */
	struct http_cmp_slice ae[8];
	char *own[8];
	unsigned n_ae = 0;
	const char *p = (const char *)data + 1, *end = (const char *)data + size;
	while (p <= end && n_ae < 8) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *ve = nl ? nl : end;
		size_t len = (size_t)(ve - p);
		own[n_ae] = malloc(len ? len : 1);
		memcpy(own[n_ae], p, len);
		ae[n_ae] = (struct http_cmp_slice){own[n_ae], len};
		n_ae++;
		if (!nl)
			break;
		p = nl + 1;
	}
	enum http_cmp_hdr st;
	int c = http_cmp_choose(o, n, ae, n_ae, &st);
	if (c >= (int)n || c < -1)
		abort();
	if ((c >= 0) != (st == HTTP_CMP_HDR_USED || st == HTTP_CMP_HDR_WILDCARD))
		abort();
	for (int j = 0; c >= 0 && j < c; j++)
		if (!strcmp(encs[j], encs[c]))
			abort(); /* a later offer of an encoding never wins */
	/* the same values joined */
	size_t jl = 0;
	for (unsigned i = 0; i < n_ae; i++)
		jl += ae[i].len + 1;
	char *joined = malloc(jl ? jl : 1);
	size_t k = 0;
	for (unsigned i = 0; i < n_ae; i++) {
		if (i)
			joined[k++] = ',';
		memcpy(joined + k, ae[i].p, ae[i].len);
		k += ae[i].len;
	}
	struct http_cmp_slice one = {joined, k};
	enum http_cmp_hdr st2;
	int c2 = http_cmp_choose(o, n, &one, 1, &st2);
	if (c2 != c || st2 != st) {
		fprintf(stderr, "split %d/%d, joined %d/%d\n", c, st, c2, st2);
		abort();
	}
	free(joined);
	for (unsigned i = 0; i < n_ae; i++)
		free(own[i]);
	return 0;
}
