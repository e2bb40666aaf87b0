/*
 * lib/net's transmit buffer, the part every frame sent goes through:
 * net_tx and net_tx_flush inline, with tx.c's out-of-line cases behind
 * them. Apart from net_int.h, which every file of lib/net includes, as
 * lib/tcp's tcp_stash.h is apart from tcp_int.h: inlines there calling
 * into tx.c made the header depend on tx.c and tx.c on it (one circle).
 * Included by the files that send (arp.c, input.c, output.c, worker.c)
 * and by tx.c. Worker lcore only.
 */
#ifndef ARN_NET_TX_H
#define ARN_NET_TX_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_ether.h>
#include <rte_mbuf.h>

#include "net_int.h"

/* net_tx() when the buffer of @p port has one free slot or none. */
void net_tx_full(struct arn_lcore *lc, uint16_t port, struct rte_mbuf *m);

/* Queue a complete Ethernet frame on this worker's TX buffer of @p port;
 * consumes @p m. Flushes when the buffer fills. Inline: once per frame
 * sent, and nearly always just a store. */
static inline void net_tx(struct arn_lcore *lc, uint16_t port, struct rte_mbuf *m)
{
	struct arn_lcore_port *lp = &lc->port[port];
	uint16_t n = lp->n_tx;
	if (likely(n < ARN_NET_TX_BURST - 1)) {
		if (n == 0)
			lp->tx_deadline = lc->now + lc->tx_drain;
		lp->tx[n] = m;
		lp->n_tx = (uint16_t)(n + 1);
		lp->tx_bytes_q += rte_pktmbuf_pkt_len(m);
		return;
	}
	net_tx_full(lc, port, m);
}
/* Hand port @p p's buffered frames to its TX queue (tx.c); @return the
 * frames sent. */
uint16_t net_tx_flush_port(struct arn_lcore *lc, uint16_t p);
/* Send buffered frames of every port (all, or only those past deadline);
 * returns how many frames were handed to the ports. Inline: every
 * iteration of a worker runs it, and one with nothing buffered calls
 * nothing. */
static inline unsigned net_tx_flush(struct arn_lcore *lc, bool all)
{
	if (likely(lc->n_ports == 1)) {
		/* the usual one port without the loop (every iteration) */
		const struct arn_lcore_port *lp = &lc->port[0];
		if (lp->n_tx != 0 && (all || lc->now >= lp->tx_deadline))
			return net_tx_flush_port(lc, 0);
		return 0;
	}
	unsigned n = 0;
	for (uint16_t p = 0; p < lc->n_ports; p++) {
		struct arn_lcore_port *lp = &lc->port[p];
		if (lp->n_tx != 0 && (all || lc->now >= lp->tx_deadline))
			n += net_tx_flush_port(lc, p);
	}
	return n;
}
/* The worker stops: the frames no flush could send are freed, counted in
 * tx_drop_full. */
void net_tx_drop_all(struct arn_lcore *lc);
/* Prepend the Ethernet header for @p dst_mac and queue; consumes @p m
 * (data at the IPv4 header). Inline: once per frame sent. */
static inline void net_eth_output(struct arn_lcore *lc, uint16_t port,
				  const struct rte_ether_addr *dst_mac, struct rte_mbuf *m)
{
	struct rte_ether_hdr *eth =
	    (struct rte_ether_hdr *)rte_pktmbuf_prepend(m, sizeof(struct rte_ether_hdr));
	if (unlikely(eth == NULL)) {
		ARN_NET_WINC(lc, tx_drop_no_headroom);
		rte_pktmbuf_free(m);
		return;
	}
	rte_ether_addr_copy(dst_mac, &eth->dst_addr);
	rte_ether_addr_copy(&lc->net->port[port].mac, &eth->src_addr);
	eth->ether_type = RTE_BE16(RTE_ETHER_TYPE_IPV4);
	m->l2_len = sizeof(struct rte_ether_hdr);
	net_tx(lc, port, m);
}

#endif
