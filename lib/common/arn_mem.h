/*
 * Short runs of bytes compared for equality inline, where the libc call
 * costs more than the comparison (lib/http's kept route key, lib/net's
 * arn_af_packet TCP option bytes): one copy, so both read the same way.
 */
#ifndef ARN_MEM_H
#define ARN_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/**
 * @p n bytes at @p a and @p b equal: 8-byte words, the last one
 * overlapping the one before, so that nothing outside either run is read
 * (a request's bytes may end a buffer); two 4-byte words for 4 to 7 bytes,
 * bytes below that. For the short runs of a hot path: the libc call cost
 * twice as much for a Host and a path (bench_hcm: about 36 instructions),
 * and for a TCP header's 14 bytes after the window.
 */
static inline bool arn_mem_eq(const void *a_, const void *b_, size_t n)
{
	const uint8_t *a = a_, *b = b_;
	uint64_t x, y;
	if (n >= 8) {
		for (size_t i = 0; i + 8 < n; i += 8) {
			memcpy(&x, a + i, 8);
			memcpy(&y, b + i, 8);
			if (x != y)
				return false;
		}
		memcpy(&x, a + n - 8, 8);
		memcpy(&y, b + n - 8, 8);
		return x == y;
	}
	if (n >= 4) {
		uint32_t p, q, r, t;
		memcpy(&p, a, 4);
		memcpy(&q, b, 4);
		memcpy(&r, a + n - 4, 4);
		memcpy(&t, b + n - 4, 4);
		return ((p ^ q) | (r ^ t)) == 0;
	}
	for (size_t i = 0; i < n; i++)
		if (a[i] != b[i])
			return false;
	return true;
}

#endif
