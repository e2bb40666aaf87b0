/*
 * The receive path of a worker: Ethernet, IPv4 validation, ICMP, and the
 * hand-off of TCP segments to the L4 layer or to the worker that owns them.
 *
 * What is dropped, and why (docs/dataplane.md has the operator's view):
 * IPv4 is checked in the order of RFC 1122 3.2.1 / RFC 1812 5.2.2: version,
 * header length, total length against the frame, header checksum; then what
 * this stack does not do: options (a gateway for HTTP needs none, and
 * source routing is a hazard), fragments (no reassembly: TCP peers use
 * PMTUD and DF), forwarding. Every drop has its own counter.
 *
 * Headers are read from the first mbuf segment only; a frame whose headers
 * straddle segments (possible only with tiny data rooms) is dropped and
 * counted rather than copied.
 */
#include <string.h>

#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_icmp.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_tcp.h>

#include "arn_cksum.h"
#include "arn_l4.h"
#include "arn_cksum_mbuf.h"
#include "net_int.h"
#include "tx.h"

#define ETH_LEN ((uint32_t)sizeof(struct rte_ether_hdr))

static inline void drop(struct rte_mbuf *m)
{
	rte_pktmbuf_free(m);
}

void net_handoff(struct arn_lcore *lc, unsigned owner, struct rte_mbuf *m)
{
	struct arn_lcore *to = lc->net->lc[owner];
	if (rte_ring_mp_enqueue(to->handoff, m) != 0) {
		ARN_NET_WINC(lc, handoff_drop_full);
		drop(m);
		return;
	}
	ARN_NET_WINC(lc, handoff_out);
}

/* Is @p a a source we refuse: 0, loopback, multicast, limited broadcast, or
 * one of our own addresses (a looped-back or spoofed packet)? Inline in
 * both its callers (gcc made it a call of 28 instructions a segment once it
 * had two). */
static __rte_always_inline bool bad_source(const struct arn_lcore *lc, uint32_t a)
{
	if (a == 0 || (a >> 24) == 127 || (a >> 28) == 0xe || a == 0xffffffffu)
		return true;
	return net_is_local(lc->net, a);
}

static void icmp_echo_reply(struct arn_lcore *lc, uint16_t port, struct rte_mbuf *m,
			    struct rte_ipv4_hdr *ip, uint32_t ihl, uint32_t icmp_len)
{
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_icmp_hdr *icmp = (struct rte_icmp_hdr *)((char *)ip + ihl);

	rte_ether_addr_copy(&eth->src_addr, &eth->dst_addr);
	rte_ether_addr_copy(&lc->net->port[port].mac, &eth->src_addr);
	uint32_t peer = ip->src_addr;
	ip->src_addr = ip->dst_addr;
	ip->dst_addr = peer;
	ip->time_to_live = 64;
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);

	icmp->icmp_type = RTE_IP_ICMP_ECHO_REPLY;
	icmp->icmp_cksum = 0;
	icmp->icmp_cksum = (uint16_t)~arn_cksum_mbuf(m, ETH_LEN + ihl, icmp_len, 0);

	m->ol_flags = 0;
	ARN_NET_PINC(lc, port, icmp_tx_echo_reply);
	net_tx(lc, port, m);
}

/* A destination unreachable quoting one of our TCP segments: tell its
 * owner's TCP layer. RFC 1122 3.2.2.1: the quote is the IP header + 8 bytes. */
static void icmp_unreach(struct arn_lcore *lc, uint16_t port, struct rte_mbuf *m,
			 const struct rte_icmp_hdr *icmp, uint32_t icmp_len, bool from_ring)
{
	const uint8_t *q = (const uint8_t *)(icmp + 1);
	uint32_t qlen = icmp_len - (uint32_t)sizeof(*icmp);
	const struct rte_ipv4_hdr *in = (const struct rte_ipv4_hdr *)q;
	uint32_t in_ihl = qlen >= 20 ? (uint32_t)(in->version_ihl & 0xf) * 4 : 0;
	if (qlen < 20 || in_ihl < 20 || qlen < in_ihl + 8) {
		ARN_NET_PINC(lc, port, icmp_drop_truncated);
		drop(m);
		return;
	}
	uint32_t src = rte_be_to_cpu_32(in->src_addr), dst = rte_be_to_cpu_32(in->dst_addr);
	if (in->next_proto_id != IPPROTO_TCP || !arn_net_is_local(lc, src)) {
		ARN_NET_PINC(lc, port, icmp_rx_other);
		drop(m);
		return;
	}
	const struct rte_tcp_hdr *th = (const struct rte_tcp_hdr *)(q + in_ihl);
	uint16_t sport = rte_be_to_cpu_16(th->src_port), dport = rte_be_to_cpu_16(th->dst_port);
	if (!from_ring) {
		unsigned owner = arn_net_flow_worker(lc, src, dst, sport, dport);
		if (owner != lc->index) {
			m->port = port;
			net_handoff(lc, owner, m);
			return;
		}
	}
	/* RFC 1191: the next-hop MTU is the low 16 bits of the second word. */
	uint16_t mtu = icmp->icmp_code == 4 ? rte_be_to_cpu_16(icmp->icmp_seq_nb) : 0;
	ARN_NET_PINC(lc, port, icmp_rx_unreach);
	if (lc->l4_ops)
		lc->l4_ops->icmp_unreach(lc, icmp->icmp_code, mtu, src, dst, sport, dport,
					 rte_be_to_cpu_32(th->sent_seq));
	drop(m);
}

static void icmp_input(struct arn_lcore *lc, uint16_t port, struct rte_mbuf *m,
		       struct rte_ipv4_hdr *ip, uint32_t ihl, uint32_t tot, bool from_ring)
{
	uint32_t icmp_len = tot - ihl;
	if (icmp_len < sizeof(struct rte_icmp_hdr)) {
		ARN_NET_PINC(lc, port, icmp_drop_truncated);
		drop(m);
		return;
	}
	/* The fixed part and up to 68 bytes of a quote must be contiguous. */
	uint32_t need = ETH_LEN + ihl + RTE_MIN(icmp_len, 8u + 60u + 8u);
	if (rte_pktmbuf_data_len(m) < need) {
		ARN_NET_PINC(lc, port, rx_drop_split_header);
		drop(m);
		return;
	}
	if (arn_cksum_mbuf(m, ETH_LEN + ihl, icmp_len, 0) != 0xffff) {
		ARN_NET_PINC(lc, port, icmp_drop_cksum);
		drop(m);
		return;
	}
	struct rte_icmp_hdr *icmp = (struct rte_icmp_hdr *)((char *)ip + ihl);
	switch (icmp->icmp_type) {
	case RTE_IP_ICMP_ECHO_REQUEST:
		if (icmp->icmp_code != 0)
			break;
		ARN_NET_PINC(lc, port, icmp_rx_echo);
		icmp_echo_reply(lc, port, m, ip, ihl, icmp_len);
		return;
	case 3: /* destination unreachable */
		icmp_unreach(lc, port, m, icmp, icmp_len, from_ring);
		return;
	default:
		break;
	}
	ARN_NET_PINC(lc, port, icmp_rx_other);
	drop(m);
}

static void tcp_segment_in(struct arn_lcore *lc, uint16_t port, struct rte_mbuf *m,
			   struct rte_ipv4_hdr *ip, uint32_t ihl, uint32_t tot, bool from_ring)
{
	if (tot - ihl < sizeof(struct rte_tcp_hdr)) {
		ARN_NET_PINC(lc, port, tcp_drop_truncated);
		drop(m);
		return;
	}
	if (rte_pktmbuf_data_len(m) < ETH_LEN + ihl + sizeof(struct rte_tcp_hdr)) {
		ARN_NET_PINC(lc, port, rx_drop_split_header);
		drop(m);
		return;
	}
	if (!from_ring && lc->n_workers > 1) {
		const struct rte_tcp_hdr *th = (const struct rte_tcp_hdr *)((char *)ip + ihl);
		unsigned owner = arn_net_flow_worker(
		    lc, rte_be_to_cpu_32(ip->dst_addr), rte_be_to_cpu_32(ip->src_addr),
		    rte_be_to_cpu_16(th->dst_port), rte_be_to_cpu_16(th->src_port));
		if (owner != lc->index) {
			m->port = port;
			net_handoff(lc, owner, m);
			return;
		}
	}
	rte_pktmbuf_adj(m, ETH_LEN);
	m->l2_len = 0;
	m->l3_len = ihl;
	m->port = port;
	ARN_NET_PINC(lc, port, tcp_rx);
	if (unlikely(lc->l4_ops == NULL)) {
		drop(m);
		return;
	}
	/* gathered, so that the L4 layer is called once per burst */
	lc->l4_in[lc->n_l4_in++] = m;
	if (lc->n_l4_in == ARN_NET_L4_BURST)
		net_l4_flush(lc);
}

static void ip4_input(struct arn_lcore *lc, uint16_t port, struct rte_mbuf *m, bool from_ring)
{
	if (!from_ring)
		ARN_NET_PINC(lc, port, ip4_rx);
	uint32_t len = rte_pktmbuf_pkt_len(m) - ETH_LEN;
	if (len < sizeof(struct rte_ipv4_hdr)) {
		ARN_NET_PINC(lc, port, ip4_drop_truncated);
		goto out;
	}
	if (rte_pktmbuf_data_len(m) < ETH_LEN + sizeof(struct rte_ipv4_hdr)) {
		ARN_NET_PINC(lc, port, rx_drop_split_header);
		goto out;
	}
	struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, ETH_LEN);
	if ((ip->version_ihl >> 4) != 4) {
		ARN_NET_PINC(lc, port, ip4_drop_version);
		goto out;
	}
	uint32_t ihl = (uint32_t)(ip->version_ihl & RTE_IPV4_HDR_IHL_MASK) * 4;
	uint32_t tot = rte_be_to_cpu_16(ip->total_length);
	if (ihl < sizeof(struct rte_ipv4_hdr) || tot < ihl) {
		ARN_NET_PINC(lc, port, ip4_drop_hdr_len);
		goto out;
	}
	if (tot > len || ihl > len) {
		ARN_NET_PINC(lc, port, ip4_drop_truncated);
		goto out;
	}
	if (rte_pktmbuf_data_len(m) < ETH_LEN + ihl) {
		ARN_NET_PINC(lc, port, rx_drop_split_header);
		goto out;
	}
	/* The header checksum in software unless the port verified it; the
	 * usual 20-byte header by five 32-bit words (arn_cksum.h). */
	uint64_t ck = m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK;
	if (ck == RTE_MBUF_F_RX_IP_CKSUM_BAD ||
	    (ck != RTE_MBUF_F_RX_IP_CKSUM_GOOD &&
	     (ihl == sizeof(struct rte_ipv4_hdr) ? arn_cksum_ip4_hdr(ip)
						 : arn_cksum_raw(ip, ihl, 0)) != 0xffff)) {
		ARN_NET_PINC(lc, port, ip4_drop_cksum);
		goto out;
	}
	if (ihl != sizeof(struct rte_ipv4_hdr)) {
		ARN_NET_PINC(lc, port, ip4_drop_options);
		goto out;
	}
	if (rte_be_to_cpu_16(ip->fragment_offset) &
	    (RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK)) {
		ARN_NET_PINC(lc, port, ip4_drop_fragment);
		goto out;
	}
	if (ip->time_to_live == 0) {
		ARN_NET_PINC(lc, port, ip4_drop_ttl);
		goto out;
	}
	if (bad_source(lc, rte_be_to_cpu_32(ip->src_addr))) {
		ARN_NET_PINC(lc, port, ip4_drop_bad_src);
		goto out;
	}
	if (!net_is_local(lc->net, rte_be_to_cpu_32(ip->dst_addr))) {
		ARN_NET_PINC(lc, port, ip4_drop_not_local);
		goto out;
	}
	/* Ethernet pads short frames: from here on pkt_len is the IP length. */
	if (tot < len && rte_pktmbuf_trim(m, (uint16_t)(len - tot)) != 0) {
		ARN_NET_PINC(lc, port, ip4_drop_truncated);
		goto out;
	}
	switch (ip->next_proto_id) {
	case IPPROTO_TCP:
		tcp_segment_in(lc, port, m, ip, ihl, tot, from_ring);
		return;
	case IPPROTO_ICMP:
		icmp_input(lc, port, m, ip, ihl, tot, from_ring);
		return;
	default:
		ARN_NET_PINC(lc, port, ip4_drop_proto);
		break;
	}
out:
	drop(m);
}

/* rte_is_same_ether_addr as one 4-byte and one 2-byte comparison, not
 * three 2-byte ones: the usual path's first test of every frame, where
 * DPDK's three loads, three xors and two ors gave the register allocator
 * more to keep (test_net's usual segment: 6 instructions fewer). */
static __rte_always_inline bool same_mac(const struct rte_ether_addr *a,
					 const struct rte_ether_addr *b)
{
	uint32_t a0, b0;
	uint16_t a1, b1;
	memcpy(&a0, a->addr_bytes, 4);
	memcpy(&b0, b->addr_bytes, 4);
	memcpy(&a1, a->addr_bytes + 4, 2);
	memcpy(&b1, b->addr_bytes + 4, 2);
	return ((a0 ^ b0) | (uint32_t)(a1 ^ b1)) == 0;
}

/*
 * The usual frame, checked in one pass: a TCP segment in an IPv4 header of
 * 20 bytes to our MAC and one of our addresses, its header checksum right,
 * not a fragment, from a source we accept, for this worker. Everything
 * else, and every frame these checks refuse, goes through the full checks
 * (ip4_input), which drop it and count why, or take it as they always
 * did: the two take the same frames and leave them the same way. Half the
 * instructions of the full checks per segment (each a test and a counter
 * of its own, in RFC order), and a proxied request is four segments.
 *
 * Another worker's segment that passes every check is handed to its owner
 * from here, as it came (the owner takes its Ethernet header and padding
 * off): the full checks would run every test again, and hash the flow a
 * second time, only to hand it over too. With two workers on a port
 * without RSS (af_packet, af_xdp on a veth) about a third of a proxied
 * request's frames are handed (bench/cost/run's 2-worker rows).
 * @p from_ring: @p m was handed over by another worker, which checked
 * that it is this worker's and counted it (rx, ip4_rx): not hashed or
 * counted again, as the full checks do not either.
 * @p ctr: @p port's counters of this worker.
 * @return true with @p m counted (ip4_rx unless @p from_ring, tcp_rx), its
 * Ethernet header and padding taken off and gathered for the L4 layer; or
 * counted (ip4_rx) and handed to its owner.
 */
static __rte_always_inline bool tcp_usual(struct arn_lcore *lc, uint16_t port,
					  const struct net_port *np, uint64_t *ctr,
					  struct rte_mbuf *m, bool from_ring)
{
	if (unlikely(rte_pktmbuf_data_len(m) <
		     ETH_LEN + sizeof(struct rte_ipv4_hdr) + sizeof(struct rte_tcp_hdr)))
		return false;
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(eth + 1);
	if (!same_mac(&eth->dst_addr, &np->mac) ||
	    eth->ether_type != RTE_BE16(RTE_ETHER_TYPE_IPV4) || ip->version_ihl != 0x45 ||
	    ip->next_proto_id != IPPROTO_TCP || ip->time_to_live == 0 ||
	    (ip->fragment_offset & RTE_BE16(RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK)))
		return false;
	uint32_t len = rte_pktmbuf_pkt_len(m) - ETH_LEN;
	uint32_t tot = rte_be_to_cpu_16(ip->total_length);
	/* padding is trimmed here from a single mbuf only */
	if (tot < sizeof(struct rte_ipv4_hdr) + sizeof(struct rte_tcp_hdr) || tot > len ||
	    (tot < len && m->nb_segs != 1))
		return false;
	uint64_t ck = m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK;
	if (ck != RTE_MBUF_F_RX_IP_CKSUM_GOOD &&
	    (ck == RTE_MBUF_F_RX_IP_CKSUM_BAD || arn_cksum_ip4_hdr(ip) != 0xffff))
		return false;
	uint32_t src = rte_be_to_cpu_32(ip->src_addr), dst = rte_be_to_cpu_32(ip->dst_addr);
	if (bad_source(lc, src) || !net_is_local(lc->net, dst) || unlikely(lc->l4_ops == NULL))
		return false;
	if (!from_ring && lc->n_workers > 1) {
		const struct rte_tcp_hdr *th = (const struct rte_tcp_hdr *)(ip + 1);
		unsigned owner = arn_net_flow_worker(lc, dst, src, rte_be_to_cpu_16(th->dst_port),
						     rte_be_to_cpu_16(th->src_port));
		if (owner != lc->index) {
			ctr[ARN_NET_P_ip4_rx]++; /* tcp_rx: its owner's */
			m->port = port;
			net_handoff(lc, owner, m);
			return true;
		}
	}
	/* as rte_pktmbuf_trim and rte_pktmbuf_adj(ETH_LEN) leave it */
	m->data_off = (uint16_t)(m->data_off + ETH_LEN);
	m->data_len = (uint16_t)(m->data_len - ETH_LEN - (len - tot));
	m->pkt_len = tot;
	m->l2_len = 0;
	m->l3_len = sizeof(struct rte_ipv4_hdr);
	m->port = port;
	if (!from_ring)
		ctr[ARN_NET_P_ip4_rx]++;
	ctr[ARN_NET_P_tcp_rx]++;
	lc->l4_in[lc->n_l4_in++] = m;
	if (lc->n_l4_in == ARN_NET_L4_BURST)
		net_l4_flush(lc);
	return true;
}

/* A frame tcp_usual did not take (or one handed over by another worker):
 * Ethernet, then ARP or IPv4 with every check. Out of line, so that the
 * loop over the burst keeps its few values in registers. */
static __rte_noinline void frame_in(struct arn_lcore *lc, uint16_t port, const struct net_port *np,
				    struct rte_mbuf *m, bool from_ring)
{
	if (rte_pktmbuf_data_len(m) < ETH_LEN) {
		ARN_NET_PINC(lc, port, rx_drop_runt);
		drop(m);
		return;
	}
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	if (!rte_is_same_ether_addr(&eth->dst_addr, &np->mac) &&
	    !rte_is_broadcast_ether_addr(&eth->dst_addr)) {
		ARN_NET_PINC(lc, port, rx_drop_not_ours);
		drop(m);
		return;
	}
	switch (eth->ether_type) {
	case RTE_BE16(RTE_ETHER_TYPE_IPV4):
		ip4_input(lc, port, m, from_ring);
		break;
	case RTE_BE16(RTE_ETHER_TYPE_ARP):
		net_arp_input(lc, port, m, from_ring);
		break;
	default:
		ARN_NET_PINC(lc, port, rx_drop_ethertype);
		drop(m);
		break;
	}
}

void net_input(struct arn_lcore *lc, uint16_t port, struct rte_mbuf **pkts, uint16_t n,
	       bool from_ring)
{
	const struct net_port *np = &lc->net->port[port];
	/* the port's counters found once, not through lc->port per frame */
	uint64_t *ctr = lc->port[port].ctr;
	if (from_ring) {
		/* the usual segment of this worker's flow, handed over by the
		 * worker that received it: the one-pass checks again (the
		 * mbuf came through a ring from another lcore), not the full */
		for (uint16_t i = 0; i < n; i++) {
			if (i + 1 < n)
				rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 1], void *));
			if (tcp_usual(lc, port, np, ctr, pkts[i], true))
				continue;
			frame_in(lc, port, np, pkts[i], true);
		}
		return;
	}
	ctr[ARN_NET_P_rx_packets] += n;
	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		if (i + 1 < n)
			rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 1], void *));
		ctr[ARN_NET_P_rx_bytes] += rte_pktmbuf_pkt_len(m);
		if (tcp_usual(lc, port, np, ctr, m, false))
			continue;
		frame_in(lc, port, np, m, false);
	}
}
