/*
 * The bottom of a worker's transmit path: mbufs from the worker's pool, the
 * Ethernet header, and TX buffering. ARP (arp.c) and IPv4 output
 * (output.c) build on it.
 *
 * Each worker owns TX queue <worker index> of every port and buffers up to
 * ARN_NET_TX_BURST frames per port. A buffer is sent when it fills, when its
 * oldest frame has waited NET_TX_DRAIN_US, or when an iteration drained its
 * RX queues (nothing more is waiting to batch with, so waiting only adds
 * latency, and a loop iteration).
 */
#include <string.h>

#include <rte_byteorder.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_mbuf.h>

#include "net_int.h"
#include "tx.h"
#include "vpkt.h"

static __rte_noinline struct rte_mbuf *alloc_slow(struct arn_lcore *lc)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(lc->pool);
	if (m == NULL)
		ARN_NET_WINC(lc, mbuf_alloc_failed);
	return m;
}

/* rte_pktmbuf_alloc, from the loop thread's cache of the pool found once
 * (net_worker_begin) rather than through the thread's lcore id at every
 * call, and without a call frame while the cache holds mbufs: four mbufs
 * a proxied request (TCP's headers, HTTP's data). An empty cache, or none
 * (before net_worker_begin), takes rte_pktmbuf_alloc's way. */
struct rte_mbuf *arn_net_alloc(struct arn_lcore *lc)
{
	struct rte_mempool_cache *c = lc->mcache;
	struct rte_mbuf *m;
	if (likely(c != NULL && c->len != 0) &&
	    rte_mempool_generic_get(lc->pool, (void **)&m, 1, c) == 0) {
		rte_pktmbuf_reset(m);
		return m;
	}
	return alloc_slow(lc);
}

/* Port @p p's TX queue of this worker: an ethdev's, or arn_af_packet's
 * socket (vpkt.c), which take frames alike. */
static inline uint16_t port_tx(struct arn_lcore *lc, uint16_t p, struct rte_mbuf **pkts, uint16_t n)
{
	const struct net_port *np = &lc->net->port[p];
	if (np->vpkt)
		return net_vpkt_tx(lc, p, pkts, n);
	return rte_eth_tx_burst(np->port_id, (uint16_t)lc->index, pkts, n);
}

/* rte_eth_tx_burst attempts per flush; what a full queue leaves waits in
 * the buffer for the next iteration's flush. */
#define TX_RETRIES 4

/* net_tx_flush_port's rest when the queue took only @p sent of the
 * buffer's frames: more attempts, then what is left stays in the buffer,
 * in order. Frames not taken are still ours, so the bytes sent are the
 * buffer's (tx_bytes_q) less theirs. */
static __rte_noinline uint16_t tx_partial(struct arn_lcore *lc, uint16_t p, uint16_t sent)
{
	struct arn_lcore_port *lp = &lc->port[p];
	uint16_t n = lp->n_tx;
	for (int t = 1; t < TX_RETRIES && sent < n; t++)
		sent += port_tx(lc, p, lp->tx + sent, (uint16_t)(n - sent));
	uint32_t left = 0;
	for (uint16_t i = sent; i < n; i++)
		left += rte_pktmbuf_pkt_len(lp->tx[i]);
	ARN_NET_PADD(lc, p, tx_packets, sent);
	ARN_NET_PADD(lc, p, tx_bytes, lp->tx_bytes_q - left);
	lp->tx_bytes_q = left;
	if (sent < n) {
		ARN_NET_PINC(lc, p, tx_full_kept);
		memmove(lp->tx, lp->tx + sent, (size_t)(n - sent) * sizeof(lp->tx[0]));
	}
	lp->n_tx = (uint16_t)(n - sent);
	return sent;
}

/*
 * Hand port @p p's buffered frames to its TX queue. A queue that takes
 * only part of them (a NIC whose descriptors are not yet written back, the
 * kernel side of net_tap or net_af_packet behind on a loaded machine)
 * keeps the rest, in order, for the next flush rather than dropping them:
 * a dropped segment costs TCP a loss recovery (or an RTO) for a stall of a
 * few microseconds. The buffer bounds what waits (ARN_NET_TX_BURST
 * frames); net_tx drops, and counts in tx_drop_full, only what arrives
 * while it is full. @return the frames sent.
 */
uint16_t net_tx_flush_port(struct arn_lcore *lc, uint16_t p)
{
	struct arn_lcore_port *lp = &lc->port[p];
	uint16_t n = lp->n_tx;
	/* The frames' lengths were added up as they were queued
	 * (tx_bytes_q): a frame the PMD takes is its own from then on
	 * (net_af_packet frees it at once, and the pool may hand it out
	 * again), and a sum made here before the burst would be one more
	 * value kept across the call (and a loop) every flush. */
	uint16_t sent = port_tx(lc, p, lp->tx, n);
	if (unlikely(sent != n))
		return tx_partial(lc, p, sent);
	lp->ctr[ARN_NET_P_tx_packets] += n;
	lp->ctr[ARN_NET_P_tx_bytes] += lp->tx_bytes_q;
	lp->tx_bytes_q = 0;
	lp->n_tx = 0;
	return n;
}

void net_tx_full(struct arn_lcore *lc, uint16_t port, struct rte_mbuf *m)
{
	struct arn_lcore_port *lp = &lc->port[port];
	if (unlikely(lp->n_tx == ARN_NET_TX_BURST)) {
		/* the queue refused the whole buffer at the last flush */
		net_tx_flush_port(lc, port);
		if (lp->n_tx == ARN_NET_TX_BURST) {
			ARN_NET_PINC(lc, port, tx_drop_full);
			rte_pktmbuf_free(m);
			return;
		}
	}
	if (lp->n_tx == 0)
		lp->tx_deadline = lc->now + lc->tx_drain;
	lp->tx[lp->n_tx++] = m;
	lp->tx_bytes_q += rte_pktmbuf_pkt_len(m);
	if (lp->n_tx == ARN_NET_TX_BURST)
		net_tx_flush_port(lc, port);
}

void net_tx_drop_all(struct arn_lcore *lc)
{
	for (uint16_t p = 0; p < lc->n_ports; p++) {
		struct arn_lcore_port *lp = &lc->port[p];
		ARN_NET_PADD(lc, p, tx_drop_full, lp->n_tx);
		for (uint16_t i = 0; i < lp->n_tx; i++)
			rte_pktmbuf_free(lp->tx[i]);
		lp->n_tx = 0;
		lp->tx_bytes_q = 0;
	}
}
