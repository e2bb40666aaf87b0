/*
 * The Internet checksum (arn_cksum.h) over an mbuf chain: lib/net's
 * (ICMP, TCP output of a chain) and lib/tcp's (a kernel port's GRO
 * super-segments, tcp_cksum.h) one piece of code. Header-only: lib/common
 * itself links no DPDK (lib/proto and lib/bootstrap use it without), and
 * only modules that do include this.
 */
#ifndef ARN_CKSUM_MBUF_H
#define ARN_CKSUM_MBUF_H

#include <stdint.h>

#include <rte_byteorder.h>
#include <rte_common.h>
#include <rte_mbuf.h>

#include "arn_cksum.h"

/**
 * The one's complement sum (arn_cksum_raw's, not complemented) of @p len
 * bytes from offset @p off of the chain @p m, plus the partial sum @p sum;
 * -1 when the chain holds fewer bytes. Each link's bytes are summed alone,
 * folded, and byte-swapped when the link starts at an odd offset of the
 * range: its bytes then pair with the other half of each 16-bit word (RFC
 * 1071 2(B)). Not rte_raw_cksum_mbuf: DPDK 22.11's drops the carries of a
 * link that starts at an odd offset (it byte-swaps the unfolded sum cut to
 * 16 bits), so a chain with an odd-length link got a wrong checksum.
 */
static inline int arn_cksum_mbuf(const struct rte_mbuf *m, uint32_t off, uint32_t len, uint64_t sum)
{
	uint64_t acc = sum;
	uint32_t pos = 0;
	for (; m != NULL && pos < len; m = m->next) {
		if (off >= m->data_len) {
			off -= m->data_len;
			continue;
		}
		uint32_t n = RTE_MIN(len - pos, (uint32_t)m->data_len - off);
		uint16_t v = arn_cksum_raw(rte_pktmbuf_mtod_offset(m, const uint8_t *, off), n, 0);
		acc += (pos & 1) ? rte_bswap16(v) : v;
		pos += n;
		off = 0;
	}
	if (pos < len)
		return -1;
	return arn_cksum_fold(acc);
}

#endif
