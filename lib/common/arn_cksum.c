#include "arn_cksum.h"

#include <stdbool.h>
#include <string.h>

static inline uint64_t add_carry(uint64_t sum, uint64_t w)
{
	uint64_t r;
	if (__builtin_add_overflow(sum, w, &r))
		r++;
	return r;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define ARN_CKSUM_AVX2 1

/*
 * @p len (a multiple of 64) bytes as 32-bit words summed into 64-bit lanes:
 * the low and high halves of every 64-bit word go to two accumulators, so
 * no carry is lost and none has to be added back per word (a lane takes
 * 2^32 words before it could overflow). About 0.2 instructions per byte
 * against 0.45 for the scalar loop: the checksum was the largest single
 * item of a proxied MiB (docs/benchmarks/proxy.md).
 */
__attribute__((target("avx2"))) static uint64_t sum_avx2(const uint8_t *p, size_t len)
{
	const __m256i lo = _mm256_set1_epi64x(0xffffffff);
	__m256i a0 = _mm256_setzero_si256(), a1 = _mm256_setzero_si256();
	__m256i b0 = _mm256_setzero_si256(), b1 = _mm256_setzero_si256();
	for (; len >= 64; p += 64, len -= 64) {
		__m256i x = _mm256_loadu_si256((const __m256i *)(const void *)p);
		__m256i y = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32));
		a0 = _mm256_add_epi64(a0, _mm256_and_si256(x, lo));
		a1 = _mm256_add_epi64(a1, _mm256_srli_epi64(x, 32));
		b0 = _mm256_add_epi64(b0, _mm256_and_si256(y, lo));
		b1 = _mm256_add_epi64(b1, _mm256_srli_epi64(y, 32));
	}
	__m256i t = _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(b0, b1));
	uint64_t w[4];
	_mm256_storeu_si256((__m256i *)(void *)w, t);
	return add_carry(add_carry(w[0], w[1]), add_carry(w[2], w[3]));
}

/* From this length on the vector lanes: below it, x86-64's add-with-carry
 * chain (arn_cksum.h) takes fewer instructions (72 against 122 for 200
 * bytes) and no more time; above, the chain's serial carries make it
 * slower (119 ns against 34 for 1460 bytes on this machine's CPU), while
 * the lanes still take more instructions (393 against 320): the bulk
 * transfer's full segments go through the lanes, a request's short ones
 * through the chain (arn_cksum_raw_short's bound too). */
#define ARN_CKSUM_AVX2_MIN ARN_CKSUM_SHORT_MAX

/* Decided once, before any worker runs (not on the fast path). */
static bool have_avx2;
__attribute__((constructor)) static void cksum_init(void)
{
	__builtin_cpu_init();
	have_avx2 = __builtin_cpu_supports("avx2");
}
#endif

#if defined(__x86_64__)

#ifdef ARN_CKSUM_AVX2
/* Long buffers: 64-byte blocks through the vector lanes, the rest (under
 * 64 bytes, starting at the same parity, so its 16-bit words line up)
 * through the chain. Out of line, so that a short buffer's path keeps no
 * stack frame. */
static __attribute__((noinline)) uint16_t cksum_long(const uint8_t *p, size_t len, uint64_t sum)
{
	size_t n = len & ~(size_t)63;
	sum = add_carry(sum, sum_avx2(p, n));
	return arn_cksum_fold(arn_cksum_chain(p + n, len - n, sum, true));
}
#endif

uint16_t arn_cksum_raw(const void *buf, size_t len, uint64_t sum)
{
#ifdef ARN_CKSUM_AVX2
	if (len >= ARN_CKSUM_AVX2_MIN && have_avx2)
		return cksum_long(buf, len, sum);
#endif
	return arn_cksum_fold(arn_cksum_chain(buf, len, sum, false));
}

#else

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
	return arn_cksum_fold(s0);
}

#endif
