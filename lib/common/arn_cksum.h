/*
 * The Internet checksum (RFC 1071), fast: 64-bit words with end-around
 * carry. DPDK 22.11's rte_raw_cksum() adds 16-bit words one at a time,
 * about 2.6 instructions per byte; on ports without checksum offload
 * (net_af_packet, net_af_xdp, net_ring, NICs without L4 offload) that was
 * two thirds of lib/tcp's work per full-sized received segment, and as
 * much again on the transmit side. The one's complement sum does not
 * depend on the word size once folded (RFC 1071 2(B)), so the result
 * equals rte_raw_cksum()'s. Where the CPU has AVX2, blocks of 64 bytes of
 * a buffer from 512 bytes on go through vector lanes (about 0.22
 * instructions per byte of a full segment against 0.65, and faster than a
 * carry chain); shorter buffers and the rest, on x86-64, through one
 * add-with-carry chain (fewer instructions, as fast at those lengths).
 */
#ifndef ARN_CKSUM_H
#define ARN_CKSUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/**
 * One's complement sum of @p len bytes at @p buf plus @p sum (a partial sum,
 * e.g. of a pseudo-header, as 16-bit words in memory order), folded to 16
 * bits and not complemented: what rte_raw_cksum() returns. @p buf needs no
 * alignment.
 */
uint16_t arn_cksum_raw(const void *buf, size_t len, uint64_t sum);

/**
 * Fold a 64-bit one's complement sum of 16-bit words (in memory order) to
 * 16 bits, not complemented. Each step adds the upper half to the lower
 * with the carry out of the lower half put back in: a rotation added to
 * the value leaves that sum in its upper half (two instructions a step).
 */
static inline uint16_t arn_cksum_fold(uint64_t s)
{
	s += (s >> 32) | (s << 32);
	uint32_t x = (uint32_t)(s >> 32);
	x += (x >> 16) | (x << 16);
	return (uint16_t)(x >> 16);
}

/**
 * The raw sum (as arn_cksum_raw()) of a 20-byte IPv4 header without
 * options at @p hdr: 0xffff when its checksum is right; complemented, its
 * checksum when the field was zero. Five 32-bit words cannot carry out of
 * 64 bits, so no carries are handled before the fold (rte_ipv4_cksum()
 * loops over ten 16-bit words).
 */
static inline uint16_t arn_cksum_ip4_hdr(const void *hdr)
{
	/* Five loads of a word each, not one memcpy of the 20 bytes into an
	 * array: gcc copies that through the stack (a vector store and five
	 * loads back), four instructions more a received packet. */
	const uint8_t *p = (const uint8_t *)hdr;
	uint32_t w0, w1, w2, w3, w4;
	memcpy(&w0, p, 4);
	memcpy(&w1, p + 4, 4);
	memcpy(&w2, p + 8, 4);
	memcpy(&w3, p + 12, 4);
	memcpy(&w4, p + 16, 4);
	return arn_cksum_fold((uint64_t)w0 + w1 + w2 + w3 + w4);
}

/* arn_cksum_raw_short's bound (below it, inline) */
#define ARN_CKSUM_SHORT_MAX 512

#if defined(__x86_64__)
/*
 * x86-64: one add-with-carry chain per block, the words read straight from
 * memory (add/adc with a memory operand), the chain's carry put back with
 * a final adc $0: 9 instructions per 64 bytes. The compiler does not make
 * such a chain from C (__builtin_add_overflow gives an add and an adc $0
 * per word, and a copy through the stack for the memcpy'd loads).
 */
#define ARN_CKSUM_ADC_BLOCK(s, p, n)                                                               \
	__asm__("addq 0(%[ptr]), %[acc]\n\t" n "adcq $0, %[acc]"                                   \
		: [acc] "+r"(s)                                                                    \
		: [ptr] "r"(p), "m"(*(const uint8_t(*)[64])(p))                                    \
		: "cc")
#define ARN_CKSUM_ADC8(o) "adcq " #o "(%[ptr]), %[acc]\n\t"

/* The 64-bit sum of @p len bytes at @p p added to @p s by the chain
 * (arn_cksum_raw's, and arn_cksum_raw_short's inline).
 * @p rest: they are the last bytes (under 64) of a buffer of 512 or more
 * whose start the vector lanes summed, so no block loop is needed and the
 * 8 bytes before their end are in the buffer. */
static inline __attribute__((always_inline)) uint64_t arn_cksum_chain(const uint8_t *p, size_t len,
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
			"1:\n\t" ARN_CKSUM_ADC8(0) ARN_CKSUM_ADC8(8) ARN_CKSUM_ADC8(16)
			    ARN_CKSUM_ADC8(24) ARN_CKSUM_ADC8(32) ARN_CKSUM_ADC8(40)
				ARN_CKSUM_ADC8(48) ARN_CKSUM_ADC8(56) ARN_CKSUM_ADC8(64)
				    ARN_CKSUM_ADC8(72) ARN_CKSUM_ADC8(80) ARN_CKSUM_ADC8(88)
					ARN_CKSUM_ADC8(96) ARN_CKSUM_ADC8(104) ARN_CKSUM_ADC8(112)
					    ARN_CKSUM_ADC8(120) "leaq 128(%[ptr]), %[ptr]\n\t"
								"decq %[n]\n\t"
								"jnz 1b\n\t"
								"adcq $0, %[acc]"
			: [acc] "+r"(s), [ptr] "+r"(p), [n] "+r"(n128)
			:
			: "cc", "memory");
	}
	if (len & 64) {
		ARN_CKSUM_ADC_BLOCK(s, p,
				    ARN_CKSUM_ADC8(8) ARN_CKSUM_ADC8(16) ARN_CKSUM_ADC8(24)
					ARN_CKSUM_ADC8(32) ARN_CKSUM_ADC8(40) ARN_CKSUM_ADC8(48)
					    ARN_CKSUM_ADC8(56));
		p += 64;
	}
tail:
	/* The rest, under 64 bytes, by its binary digits: no loop. */
	if (len & 32) {
		ARN_CKSUM_ADC_BLOCK(s, p, ARN_CKSUM_ADC8(8) ARN_CKSUM_ADC8(16) ARN_CKSUM_ADC8(24));
		p += 32;
	}
	if (len & 16) {
		ARN_CKSUM_ADC_BLOCK(s, p, ARN_CKSUM_ADC8(8));
		p += 16;
	}
	if (len & 8) {
		ARN_CKSUM_ADC_BLOCK(s, p, "");
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

/* arn_cksum_chain for 8 to 511 bytes (arn_cksum_raw_short's), in one carry
 * chain without a test per block: the last 1-7 bytes (the tail's shifted
 * load, 0 when there are none) start it, then it enters an unrolled run
 * of 16 adds of the whole words at the add that leaves as many as the
 * first (len / 8) % 16 of them, and goes round again once per further 128
 * bytes: the run's lea and dec leave the carry flag alone. About 20
 * instructions fewer than arn_cksum_chain's blocks for a segment of a
 * keep-alive exchange (4-5 block tests with their branches and the adc $0
 * that ends each block). The entry is the run's end less 4 bytes per add:
 * each is adcq disp8(%rdi), which both GCC's assembler and clang's encode
 * in 4 bytes (clang's cannot check it with .if: test_common's sweep of
 * every length at every offset does, a wrong size breaks most sums). The
 * jump is notrack, as GCC's jump tables are. */
static inline __attribute__((always_inline)) uint64_t arn_cksum_chain_short(const uint8_t *p,
									    size_t len, uint64_t s)
{
	uint64_t w;
	memcpy(&w, p + len - 8, 8);
	w >>= (0u - (unsigned)len * 8) & 63;
	w = (len & 7) ? w : 0;
	size_t n = len >> 3;		      /* whole words, 1..63 */
	size_t back = (n & 15) * 4;	      /* the run's bytes that add the first words */
	const uint8_t *ptr = p + 8 * (n & 15); /* the run adds the 16 words before it */
	int64_t more = (int64_t)(n >> 4);     /* runs of 16 after the first */
	uintptr_t t;
	__asm__("leaq 2f(%%rip), %[t]\n\t"
		"subq %[back], %[t]\n\t"
		"addq %[w], %[acc]\n\t"
		"notrack jmp *%[t]\n"
		"1:\n\t"
		"adcq -128(%[ptr]), %[acc]\n\t"
		"adcq -120(%[ptr]), %[acc]\n\t"
		"adcq -112(%[ptr]), %[acc]\n\t"
		"adcq -104(%[ptr]), %[acc]\n\t"
		"adcq -96(%[ptr]), %[acc]\n\t"
		"adcq -88(%[ptr]), %[acc]\n\t"
		"adcq -80(%[ptr]), %[acc]\n\t"
		"adcq -72(%[ptr]), %[acc]\n\t"
		"adcq -64(%[ptr]), %[acc]\n\t"
		"adcq -56(%[ptr]), %[acc]\n\t"
		"adcq -48(%[ptr]), %[acc]\n\t"
		"adcq -40(%[ptr]), %[acc]\n\t"
		"adcq -32(%[ptr]), %[acc]\n\t"
		"adcq -24(%[ptr]), %[acc]\n\t"
		"adcq -16(%[ptr]), %[acc]\n\t"
		"adcq -8(%[ptr]), %[acc]\n"
		"2:\n\t"
		"leaq 128(%[ptr]), %[ptr]\n\t"
		"decq %[more]\n\t"
		"jns 1b\n\t"
		"adcq $0, %[acc]"
		: [acc] "+r"(s), [ptr] "+D"(ptr), [more] "+r"(more), [t] "=&r"(t)
		: [w] "r"(w), [back] "r"(back), "m"(*(const uint8_t(*)[ARN_CKSUM_SHORT_MAX])p)
		: "cc");
	return s;
}

#endif

/**
 * arn_cksum_raw() inline for a buffer under ARN_CKSUM_SHORT_MAX bytes (the
 * longer ones through the call): for the one call site per segment that
 * is nearly always short (a keep-alive request's segments are a few
 * hundred bytes), where the call, its frame and the caller's registers
 * saved around it cost about a third of the sum itself.
 */
static inline __attribute__((always_inline)) uint16_t arn_cksum_raw_short(const void *buf,
									  size_t len, uint64_t sum)
{
#if defined(__x86_64__)
	if (len - 8 < ARN_CKSUM_SHORT_MAX - 8)
		return arn_cksum_fold(arn_cksum_chain_short((const uint8_t *)buf, len, sum));
	if (len < 8)
		return arn_cksum_fold(arn_cksum_chain((const uint8_t *)buf, len, sum, false));
#endif
	return arn_cksum_raw(buf, len, sum);
}

#endif
