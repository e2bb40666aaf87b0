/*
 * The Internet checksum (RFC 1071), fast: 64-bit words with end-around
 * carry. DPDK 22.11's rte_raw_cksum() adds 16-bit words one at a time,
 * about 2.6 instructions per byte; on ports without checksum offload
 * (net_af_packet, net_tap, NICs without L4 offload) that was two thirds of
 * lib/tcp's work per full-sized received segment, and as much again on the
 * transmit side. The one's complement sum does not depend on the word size
 * once folded (RFC 1071 2(B)), so the result equals rte_raw_cksum()'s.
 * Where the CPU has AVX2, blocks of 64 bytes go through vector lanes
 * (about 0.22 instructions per byte of a full segment against 0.65).
 */
#ifndef ARN_CKSUM_H
#define ARN_CKSUM_H

#include <stddef.h>
#include <stdint.h>

/**
 * One's complement sum of @p len bytes at @p buf plus @p sum (a partial sum,
 * e.g. of a pseudo-header, as 16-bit words in memory order), folded to 16
 * bits and not complemented: what rte_raw_cksum() returns.
 */
uint16_t arn_cksum_raw(const void *buf, size_t len, uint64_t sum);

#endif
