/*
 * libFuzzer target for the decompressor filter's body path (http_dcmp_run,
 * lib/http/http_decompressor.c): a body from a hostile upstream or client,
 * through gzip, brotli or zstd. Besides "never crash, read out of bounds,
 * hang or leak the worker's counted bytes", the oracles:
 *  - what comes out is at most max_inflate_ratio (100) times what went in
 *    (the bomb bound);
 *  - fed whole and fed one byte at a time, a body that decompresses both
 *    ways gives the same bytes (the piece-by-piece pump loses nothing).
 * Input: byte 0 picks the library (bits 0-1: gzip, brotli, zstd, gzip),
 * the output piece (bits 2-3: 4096, 1, 7, 256 bytes) and the window
 * (bit 4: 15, else 9); the rest is the body.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_decompressor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct out {
	uint8_t *p;
	size_t n, cap;
};

static void sink(void *arg, const uint8_t *p, size_t n)
{
	struct out *o = arg;
	if (o->n + n > o->cap)
		abort(); /* past the ratio's bound */
	memcpy(o->p + o->n, p, n);
	o->n += n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 4096)
		return 0;
	static const uint32_t chunks[] = {4096, 1, 7, 256};
	uint8_t lib = (uint8_t)((data[0] & 3) % 3);
	uint32_t chunk = chunks[(data[0] >> 2) & 3];
	uint8_t window = (data[0] & 16) ? 15 : 9;
	const uint8_t *in = data + 1;
	size_t n = size - 1;
	/* each its own malloc: ASan sees a read past its end */
	uint8_t *body = malloc(n ? n : 1);
	memcpy(body, in, n);
	size_t cap = 100 * n + 1;
	struct out whole = {malloc(cap), 0, cap}, bytes = {malloc(cap), 0, cap};
	int a = http_dcmp_run(lib, window, 100, chunk, body, n, 0, sink, &whole);
	int b = http_dcmp_run(lib, window, 100, chunk, body, n, 1, sink, &bytes);
	if ((a != 0 && a != -EBADMSG && a != -ENOMEM) || (b != 0 && b != -EBADMSG && b != -ENOMEM))
		abort();
	if (a == 0 && b == 0 && (whole.n != bytes.n || memcmp(whole.p, bytes.p, whole.n) != 0))
		abort();
	free(whole.p);
	free(bytes.p);
	free(body);
	return 0;
}
