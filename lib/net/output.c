/*
 * The transmit path of a worker above ARP: the route (route.c), the IPv4
 * header and checksums (in the NIC when the port offers it), then the next
 * hop's resolution (arp.c), which hands the frame to tx.c; or, for a TCP
 * segment whose flow has a header template, both headers copied from it
 * and the frame handed to tx.c directly. Also the arn_l4.h helpers the L4
 * layer asks about routes and clocks.
 */
#include <errno.h>

#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_tcp.h>

#include "arn_dataplane.h"
#include "arn_cksum.h"
#include "arn_cksum_mbuf.h"
#include "net_int.h"
#include "tx.h"
#include "route.h"

int arn_net_ip4_output(struct arn_lcore *lc, struct rte_mbuf *m, uint32_t src, uint32_t dst,
		       uint8_t proto)
{
	return arn_net_ip4_output_tos(lc, m, src, dst, proto, 0);
}

int arn_net_ip4_output_tos(struct arn_lcore *lc, struct rte_mbuf *m, uint32_t src, uint32_t dst,
			   uint8_t proto, uint8_t tos)
{
	const struct arn_net *net = lc->net;
	uint32_t nh;
	int p = net_route_fast(net, src, dst, &nh);
	if (p < 0) {
		ARN_NET_WINC(lc, tx_drop_no_route);
		rte_pktmbuf_free(m);
		return -EHOSTUNREACH;
	}
	const struct net_port *np = &net->port[p];
	uint32_t tot = rte_pktmbuf_pkt_len(m) + (uint32_t)sizeof(struct rte_ipv4_hdr);
	if (tot > np->mtu) {
		ARN_NET_PINC(lc, p, ip4_tx_drop_too_big);
		rte_pktmbuf_free(m);
		return -EMSGSIZE;
	}
	struct rte_ipv4_hdr *ip =
	    (struct rte_ipv4_hdr *)rte_pktmbuf_prepend(m, sizeof(struct rte_ipv4_hdr));
	if (ip == NULL) {
		ARN_NET_WINC(lc, tx_drop_no_headroom);
		rte_pktmbuf_free(m);
		return -ENOBUFS;
	}
	ip->version_ihl = 0x45;
	ip->type_of_service = tos;
	ip->total_length = rte_cpu_to_be_16((uint16_t)tot);
	/* DF is set, so the datagram is atomic and its ID only needs to be
	 * unlikely to repeat within a flow (RFC 6864 4.1): a per-worker counter
	 * does that without per-flow state. */
	ip->packet_id = rte_cpu_to_be_16(lc->ip_id++);
	ip->fragment_offset = RTE_BE16(RTE_IPV4_HDR_DF_FLAG);
	ip->time_to_live = 64;
	ip->next_proto_id = proto;
	ip->src_addr = rte_cpu_to_be_32(src);
	ip->dst_addr = rte_cpu_to_be_32(dst);
	ip->hdr_checksum = 0;
	m->l2_len = sizeof(struct rte_ether_hdr);
	m->l3_len = sizeof(struct rte_ipv4_hdr);

	uint64_t fl = m->ol_flags & RTE_MBUF_F_TX_TCP_CKSUM;
	if (fl && proto == IPPROTO_TCP &&
	    rte_pktmbuf_data_len(m) >= 20 + sizeof(struct rte_tcp_hdr)) {
		struct rte_tcp_hdr *th = (struct rte_tcp_hdr *)(ip + 1);
		if (np->tx_tcp_cksum) {
			/* The NIC wants the pseudo-header sum in the field. */
			th->cksum =
			    rte_ipv4_phdr_cksum(ip, RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_TCP_CKSUM);
		} else {
			th->cksum = 0;
			if (m->nb_segs == 1) {
				/* pseudo-header (RFC 9293 3.1) as 16-bit words in memory */
				uint32_t l4_len = tot - (uint32_t)sizeof(struct rte_ipv4_hdr);
				uint64_t ph = (uint64_t)ip->src_addr + ip->dst_addr +
					      rte_cpu_to_be_16((uint16_t)IPPROTO_TCP) +
					      rte_cpu_to_be_16((uint16_t)l4_len);
				th->cksum = (uint16_t)~arn_cksum_raw(th, l4_len, ph);
			} else {
				uint32_t l4_len = tot - (uint32_t)sizeof(struct rte_ipv4_hdr);
				uint64_t ph = (uint64_t)ip->src_addr + ip->dst_addr +
					      rte_cpu_to_be_16((uint16_t)IPPROTO_TCP) +
					      rte_cpu_to_be_16((uint16_t)l4_len);
				th->cksum = (uint16_t)~arn_cksum_mbuf(
				    m, (uint32_t)sizeof(struct rte_ipv4_hdr), l4_len, ph);
			}
			fl = 0;
		}
	} else {
		fl = 0;
	}
	if (np->tx_ip_cksum)
		fl |= RTE_MBUF_F_TX_IP_CKSUM;
	else
		ip->hdr_checksum = (uint16_t)~arn_cksum_ip4_hdr(ip);
	m->ol_flags = (m->ol_flags & ~(RTE_MBUF_F_TX_TCP_CKSUM | RTE_MBUF_F_TX_IP_CKSUM)) | fl |
		      (fl ? RTE_MBUF_F_TX_IPV4 : 0);
	ARN_NET_PINC(lc, p, ip4_tx);
	return net_arp_output(lc, (uint16_t)p, nh, m);
}

/* ---- TX templates (arn_l4.h) ---------------------------------------------------------------- */

#define TMPL_TCP_CKSUM 1 /* offload bits of struct arn_net_tmpl */
#define TMPL_IP_CKSUM 2

/* Build @p t for the flow @p src -> @p dst when its next hop is resolved
 * and not due to be asked again; else leave it empty (its segments take
 * arn_net_ip4_output_tos's path, which resolves and refreshes). */
static void tmpl_fill(struct arn_lcore *lc, struct arn_net_tmpl *t, uint32_t src, uint32_t dst)
{
	const struct arn_net *net = lc->net;
	t->until = 0;
	uint32_t nh;
	int p = net_route_fast(net, src, dst, &nh);
	struct rte_ether_addr mac;
	uint64_t until;
	if (p < 0 || !net_arp_tmpl(lc, nh, &mac, &until))
		return;
	const struct net_port *np = &net->port[p];
	memset(t->hdr, 0, sizeof(t->hdr));
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)t->hdr;
	rte_ether_addr_copy(&mac, &eth->dst_addr);
	rte_ether_addr_copy(&np->mac, &eth->src_addr);
	eth->ether_type = RTE_BE16(RTE_ETHER_TYPE_IPV4);
	/* as arn_net_ip4_output_tos writes it, less what each segment sets */
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
	ip->version_ihl = 0x45;
	ip->fragment_offset = RTE_BE16(RTE_IPV4_HDR_DF_FLAG);
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_TCP;
	ip->src_addr = rte_cpu_to_be_32(src);
	ip->dst_addr = rte_cpu_to_be_32(dst);
	t->ip_sum = arn_cksum_ip4_hdr(ip);
	t->ph_sum = arn_cksum_fold((uint64_t)ip->src_addr + ip->dst_addr +
				   rte_cpu_to_be_16((uint16_t)IPPROTO_TCP));
	t->port = (uint8_t)p;
	t->offload = (uint8_t)((np->tx_tcp_cksum ? TMPL_TCP_CKSUM : 0) |
			       (np->tx_ip_cksum ? TMPL_IP_CKSUM : 0));
	t->mtu = np->mtu;
	t->gen = lc->nh_gen;
	t->until = until;
}

/* A segment arn_net_tcp_output does not send from the template: dropped
 * and counted (@p err -EMSGSIZE: too big for the route's MTU; else no
 * headroom). Out of line, as the general path below, so that the usual
 * segment's path saves no registers. */
static __attribute__((noinline, cold)) int tcp_output_drop(struct arn_lcore *lc, struct rte_mbuf *m,
							   uint8_t port, int err)
{
	if (err == -EMSGSIZE)
		ARN_NET_PINC(lc, port, ip4_tx_drop_too_big);
	else
		ARN_NET_WINC(lc, tx_drop_no_headroom);
	rte_pktmbuf_free(m);
	return err;
}

static __attribute__((noinline)) int tcp_output_general(struct arn_lcore *lc, struct rte_mbuf *m,
							struct arn_net_tmpl *t, uint32_t src,
							uint32_t dst, uint8_t tos)
{
	int rc = arn_net_ip4_output_tos(lc, m, src, dst, IPPROTO_TCP, tos);
	tmpl_fill(lc, t, src, dst);
	return rc;
}

/* arn_net_tcp_output's work once the template is known good: inline in it
 * for a short one-mbuf segment (a request's, a response's head, an ACK),
 * whose checksum is summed inline too; in tcp_output_long for the others
 * (a full-sized segment: its sum, through the vector lanes, is several
 * times the call; a chain). */
static inline __attribute__((always_inline)) int tcp_output_tmpl(struct arn_lcore *lc,
								 struct rte_mbuf *m,
								 const struct arn_net_tmpl *t,
								 uint8_t tos, bool long_seg)
{
	uint32_t l4_len = rte_pktmbuf_pkt_len(m);
	uint32_t tot = l4_len + (uint32_t)sizeof(struct rte_ipv4_hdr);
	if (unlikely(tot > t->mtu))
		return tcp_output_drop(lc, m, t->port, -EMSGSIZE);
	uint8_t *h = (uint8_t *)rte_pktmbuf_prepend(m, sizeof(t->hdr));
	if (unlikely(h == NULL))
		return tcp_output_drop(lc, m, t->port, -ENOBUFS);
	memcpy(h, t->hdr, sizeof(t->hdr));
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(h + sizeof(struct rte_ether_hdr));
	struct rte_tcp_hdr *th = (struct rte_tcp_hdr *)(ip + 1);
	uint16_t len_be = rte_cpu_to_be_16((uint16_t)tot);
	uint16_t id_be = rte_cpu_to_be_16(lc->ip_id++); /* see arn_net_ip4_output_tos */
	ip->type_of_service = tos;
	ip->total_length = len_be;
	ip->packet_id = id_be;
	m->l2_len = sizeof(struct rte_ether_hdr);
	m->l3_len = sizeof(struct rte_ipv4_hdr);
	/* The IPv4 header's sum first: what it adds up (the TOS, the length,
	 * the ID) is then dead before the TCP sum, whose carry chain wants
	 * the registers (two saved and restored a segment instead of six). */
	uint64_t fl;
	if (t->offload & TMPL_IP_CKSUM) {
		fl = RTE_MBUF_F_TX_IP_CKSUM | RTE_MBUF_F_TX_IPV4;
	} else {
		/* The template's sum plus the words written above: the first
		 * word's second byte is the TOS, so as a word in memory order
		 * it is rte_cpu_to_be_16(tos). */
		ip->hdr_checksum = (uint16_t)~arn_cksum_fold(
		    (uint64_t)t->ip_sum + rte_cpu_to_be_16((uint16_t)tos) + len_be + id_be);
		fl = 0;
	}
	/* The pseudo-header's length word, added to the template's sum. */
	uint64_t ph = (uint64_t)t->ph_sum + rte_cpu_to_be_16((uint16_t)l4_len);
	if (t->offload & TMPL_TCP_CKSUM) {
		th->cksum = arn_cksum_fold(ph); /* what the NIC wants in the field */
		fl |= RTE_MBUF_F_TX_TCP_CKSUM | RTE_MBUF_F_TX_IPV4;
	} else {
		th->cksum = 0;
		if (!long_seg)
			th->cksum = (uint16_t)~arn_cksum_raw_short(th, l4_len, ph);
		else if (m->nb_segs == 1)
			th->cksum = (uint16_t)~arn_cksum_raw(th, l4_len, ph);
		else
			th->cksum = (uint16_t)~arn_cksum_mbuf(m, sizeof(t->hdr), l4_len, ph);
	}
	m->ol_flags = (m->ol_flags & ~(RTE_MBUF_F_TX_TCP_CKSUM | RTE_MBUF_F_TX_IP_CKSUM)) | fl;
	ARN_NET_PINC(lc, t->port, ip4_tx);
	net_tx(lc, t->port, m);
	return 0;
}

static __attribute__((noinline)) int tcp_output_long(struct arn_lcore *lc, struct rte_mbuf *m,
						     const struct arn_net_tmpl *t, uint8_t tos)
{
	return tcp_output_tmpl(lc, m, t, tos, true);
}

int arn_net_tcp_output(struct arn_lcore *lc, struct rte_mbuf *m, struct arn_net_tmpl *t,
		       uint32_t src, uint32_t dst, uint8_t tos)
{
	/* A segment that asks for no checksum, or whose TCP header is not in
	 * its first mbuf, is left to the general path as well. */
	if (unlikely(t->gen != lc->nh_gen || lc->now >= t->until ||
		     !(m->ol_flags & RTE_MBUF_F_TX_TCP_CKSUM) ||
		     rte_pktmbuf_data_len(m) < sizeof(struct rte_tcp_hdr)))
		return tcp_output_general(lc, m, t, src, dst, tos);
	if (unlikely(m->nb_segs != 1 || rte_pktmbuf_pkt_len(m) >= ARN_CKSUM_SHORT_MAX))
		return tcp_output_long(lc, m, t, tos);
	return tcp_output_tmpl(lc, m, t, tos, false);
}

int arn_net_is_local(const struct arn_lcore *lc, uint32_t addr)
{
	return net_is_local(lc->net, addr);
}

void arn_net_resolve(struct arn_lcore *lc, uint32_t dst)
{
	uint32_t nh;
	int p = net_route(lc->net, 0, dst, &nh);
	if (p >= 0)
		net_arp_resolve(lc, (uint16_t)p, nh);
}

uint64_t arn_net_nexthop_since(const struct arn_lcore *lc, uint32_t dst)
{
	uint32_t nh;
	int p = net_route(lc->net, 0, dst, &nh);
	return p < 0 ? 0 : net_arp_since(lc, nh);
}

uint16_t arn_net_route_mtu(const struct arn_lcore *lc, uint32_t dst)
{
	uint32_t nh;
	int p = net_route(lc->net, 0, dst, &nh);
	return p < 0 ? 0 : lc->net->port[p].mtu;
}

uint32_t arn_net_route_src(const struct arn_lcore *lc, uint32_t dst)
{
	uint32_t nh;
	int p = net_route(lc->net, 0, dst, &nh);
	return p < 0 ? 0 : lc->net->port[p].ip;
}

uint64_t arn_net_hz(void)
{
	return rte_get_tsc_hz();
}
