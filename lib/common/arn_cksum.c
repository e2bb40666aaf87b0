#include "arn_cksum.h"

#include <string.h>

static inline uint64_t add_carry(uint64_t sum, uint64_t w)
{
	uint64_t r;
	if (__builtin_add_overflow(sum, w, &r))
		r++;
	return r;
}

uint16_t arn_cksum_raw(const void *buf, size_t len, uint64_t sum)
{
	const uint8_t *p = buf;
	/* four independent accumulators hide the carry chain's latency */
	uint64_t s0 = sum, s1 = 0, s2 = 0, s3 = 0;
	while (len >= 32) {
		uint64_t w[4];
		memcpy(w, p, 32);
		s0 = add_carry(s0, w[0]);
		s1 = add_carry(s1, w[1]);
		s2 = add_carry(s2, w[2]);
		s3 = add_carry(s3, w[3]);
		p += 32;
		len -= 32;
	}
	s0 = add_carry(s0, s1);
	s2 = add_carry(s2, s3);
	s0 = add_carry(s0, s2);
	while (len >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		s0 = add_carry(s0, w);
		p += 8;
		len -= 8;
	}
	if (len) {
		/* the tail in memory order, zero padded: byte order independent */
		uint64_t w = 0;
		memcpy(&w, p, len);
		s0 = add_carry(s0, w);
	}
	/* fold 64 -> 32 -> 16 with end-around carries */
	uint64_t f = (s0 & 0xffffffffu) + (s0 >> 32);
	f = (f & 0xffffffffu) + (f >> 32);
	f = (f & 0xffff) + (f >> 16);
	f = (f & 0xffff) + (f >> 16);
	f = (f & 0xffff) + (f >> 16);
	return (uint16_t)f;
}
