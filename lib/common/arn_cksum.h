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
	uint32_t w[5];
	memcpy(w, hdr, sizeof(w));
	return arn_cksum_fold((uint64_t)w[0] + w[1] + w[2] + w[3] + w[4]);
}

#endif
