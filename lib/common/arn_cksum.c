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
 * chain (further down) takes fewer instructions (72 against 122 for 200
 * bytes) and no more time; above, the chain's serial carries make it
 * slower (119 ns against 34 for 1460 bytes on this machine's CPU), while
 * the lanes still take more instructions (393 against 320): the bulk
 * transfer's full segments go through the lanes, a request's short ones
 * through the chain. */
#define ARN_CKSUM_AVX2_MIN 512

/* Decided once, before any worker runs (not on the fast path). */
static bool have_avx2;
__attribute__((constructor)) static void cksum_init(void)
{
	__builtin_cpu_init();
	have_avx2 = __builtin_cpu_supports("avx2");
}
#endif

#if defined(__x86_64__)

/*
 * x86-64: one add-with-carry chain per block, the words read straight from
 * memory (add/adc with a memory operand), the chain's carry put back with
 * a final adc $0: 9 instructions per 64 bytes. The compiler does not make
 * such a chain from C (__builtin_add_overflow gives an add and an adc $0
 * per word, and a copy through the stack for the memcpy'd loads).
 */
#define ADC_BLOCK(s, p, n)                                                                         \
	__asm__("addq 0(%[ptr]), %[acc]\n\t" n "adcq $0, %[acc]"                                   \
		: [acc] "+r"(s)                                                                    \
		: [ptr] "r"(p), "m"(*(const uint8_t(*)[64])(p))                                    \
		: "cc")
#define ADC8(o) "adcq " #o "(%[ptr]), %[acc]\n\t"

/* The 64-bit sum of @p len bytes at @p p added to @p s by the chain.
 * @p rest: they are the last bytes (under 64) of a buffer of 512 or more
 * whose start the vector lanes summed, so no block loop is needed and the
 * 8 bytes before their end are in the buffer. */
static inline __attribute__((always_inline)) uint64_t chain_sum(const uint8_t *p, size_t len,
								uint64_t s, bool rest)
{
	/* the last 8 bytes are in the buffer (see the tail below) */
	const bool tail_load = rest || len >= 8;
	if (rest)
		goto tail;
	/* 128-byte blocks in one chain whose carry crosses the iterations:
	 * lea and dec leave the carry flag alone, so a block is its 16 adds
	 * and three instructions of loop (9.5 a 64 bytes, against 12 for a
	 * 64-byte block with its own adc $0 and an add/cmp/jne loop). */
	size_t n128 = len >> 7;
	if (n128) {
		__asm__("clc\n"
			"1:\n\t" ADC8(0) ADC8(8) ADC8(16) ADC8(24) ADC8(32) ADC8(40) ADC8(48)
			    ADC8(56) ADC8(64) ADC8(72) ADC8(80) ADC8(88) ADC8(96) ADC8(104)
				ADC8(112) ADC8(120) "leaq 128(%[ptr]), %[ptr]\n\t"
						    "decq %[n]\n\t"
						    "jnz 1b\n\t"
						    "adcq $0, %[acc]"
			: [acc] "+r"(s), [ptr] "+r"(p), [n] "+r"(n128)
			:
			: "cc", "memory");
	}
	if (len & 64) {
		ADC_BLOCK(s, p, ADC8(8) ADC8(16) ADC8(24) ADC8(32) ADC8(40) ADC8(48) ADC8(56));
		p += 64;
	}
tail:
	/* The rest, under 64 bytes, by its binary digits: no loop. */
	if (len & 32) {
		ADC_BLOCK(s, p, ADC8(8) ADC8(16) ADC8(24));
		p += 32;
	}
	if (len & 16) {
		ADC_BLOCK(s, p, ADC8(8));
		p += 16;
	}
	if (len & 8) {
		ADC_BLOCK(s, p, "");
		p += 8;
	}
	if ((len & 7) && tail_load) {
		/* The last 1-7 bytes are the top of the 8 bytes that end the
		 * buffer: one load of those, shifted down past the bytes
		 * already summed, puts them at their offsets in a zero-padded
		 * little-endian word (x86-64 is little-endian). 11
		 * instructions with the tests, against 12-23 for the loads
		 * below; most segments have such a tail, and a segment is at
		 * least 20 bytes. */
		uint64_t w;
		memcpy(&w, p + (len & 7) - 8, 8);
		w >>= (0u - (unsigned)len * 8) & 63;
		__asm__("addq %[in], %[acc]\n\tadcq $0, %[acc]"
			: [acc] "+r"(s)
			: [in] "r"(w)
			: "cc");
	} else if (len & 7) {
		/* A buffer under 8 bytes: its 1-7 bytes at their offsets in a
		 * zero-padded little-endian word, read in at most three loads. */
		uint64_t w = 0;
		unsigned sh = 0;
		if (len & 4) {
			uint32_t x;
			memcpy(&x, p, 4);
			w = x;
			p += 4;
			sh = 32;
		}
		if (len & 2) {
			uint16_t x;
			memcpy(&x, p, 2);
			w |= (uint64_t)x << sh;
			p += 2;
			sh += 16;
		}
		if (len & 1)
			w |= (uint64_t)*p << sh;
		__asm__("addq %[in], %[acc]\n\tadcq $0, %[acc]"
			: [acc] "+r"(s)
			: [in] "r"(w)
			: "cc");
	}
	return s;
}

#ifdef ARN_CKSUM_AVX2
/* Long buffers: 64-byte blocks through the vector lanes, the rest (under
 * 64 bytes, starting at the same parity, so its 16-bit words line up)
 * through the chain. Out of line, so that a short buffer's path keeps no
 * stack frame. */
static __attribute__((noinline)) uint16_t cksum_long(const uint8_t *p, size_t len, uint64_t sum)
{
	size_t n = len & ~(size_t)63;
	sum = add_carry(sum, sum_avx2(p, n));
	return arn_cksum_fold(chain_sum(p + n, len - n, sum, true));
}
#endif

uint16_t arn_cksum_raw(const void *buf, size_t len, uint64_t sum)
{
#ifdef ARN_CKSUM_AVX2
	if (len >= ARN_CKSUM_AVX2_MIN && have_avx2)
		return cksum_long(buf, len, sum);
#endif
	return arn_cksum_fold(chain_sum(buf, len, sum, false));
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
