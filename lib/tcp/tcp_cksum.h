/*
 * The TCP checksum of received segments, when the port did not verify it
 * (net_af_packet, net_af_xdp, net_ring, NICs without L4 RX offload), with
 * lib/common's fast sum (arn_cksum.h says why not rte_ipv4_udptcp_cksum()).
 * Inline: tcp_input asks it for every segment such a port hands over, and
 * it is the pseudo-header's sum around lib/common's short sum, inline
 * below 512 bytes (a keep-alive request's segments), one call above (outside
 * lib/tcp, so this header ties no file of lib/tcp to another).
 */
#ifndef ARN_TCP_CKSUM_H
#define ARN_TCP_CKSUM_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_byteorder.h>
#include <rte_ip.h>
#include <rte_mbuf.h>

#include "arn_cksum.h"
#include "arn_cksum_mbuf.h"

/* Is the TCP checksum of the segment at @p l4 (@p l4_len bytes, header
 * included) under IPv4 header @p ip right? */
static inline bool tcp_cksum_ok(const struct rte_ipv4_hdr *ip, const void *l4, uint32_t l4_len)
{
	/* pseudo-header (RFC 9293 3.1): addresses, zero + protocol, length,
	 * summed as the 16-bit words they are in memory */
	uint64_t ph = (uint64_t)ip->src_addr + ip->dst_addr +
		      rte_cpu_to_be_16((uint16_t)IPPROTO_TCP) + rte_cpu_to_be_16((uint16_t)l4_len);
	return arn_cksum_raw_short(l4, l4_len, ph) == 0xffff;
}

/* tcp_cksum_ok for a segment that arrived as an mbuf chain @p m (a kernel
 * port's GRO super-segment: tcp_in.c's chain_input): the IPv4 header @p ip
 * at the first link's start, the TCP segment from byte @p l3 to pkt_len,
 * summed link by link (arn_cksum_mbuf, lib/net's sum of a chain too). */
static inline bool tcp_cksum_ok_chain(const struct rte_ipv4_hdr *ip, const struct rte_mbuf *m,
				      uint32_t l3)
{
	uint32_t l4_len = m->pkt_len - l3;
	uint64_t ph = (uint64_t)ip->src_addr + ip->dst_addr +
		      rte_cpu_to_be_16((uint16_t)IPPROTO_TCP) + rte_cpu_to_be_16((uint16_t)l4_len);
	return arn_cksum_mbuf(m, l3, l4_len, ph) == 0xffff;
}

#endif
