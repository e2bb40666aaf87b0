/*
 * One worker lcore's state: struct arn_lcore, the first argument of every
 * fast-path function (lib/net's and the L4 layer's, see arn_l4.h).
 *
 * Ownership: lib/net allocates one per worker (on the worker's NUMA socket)
 * in arn_net_create() and frees it in arn_net_destroy(). Only its worker
 * writes it after start; the control lcore reads the counters without locks
 * (each is written by one thread; 64-bit loads and stores are atomic on the
 * platforms DPDK supports). The L4 layer owns what it hangs on @c l4.
 *
 * Fields below "private" are lib/net's; other modules use only @c l4 and the
 * arn_net_* accessors.
 */
#ifndef ARN_LCORE_H
#define ARN_LCORE_H

#include <stddef.h>
#include <stdint.h>

#include <rte_common.h>

#include "arn_l4.h"

enum arn_net_pctr {
#define ARN_NET_PCTR(name, help) ARN_NET_P_##name,
#include "arn_net_counters.def"
	ARN_NET_PCTR_COUNT,
};

enum arn_net_wctr {
#define ARN_NET_WCTR(name, help) ARN_NET_W_##name,
#include "arn_net_counters.def"
	ARN_NET_WCTR_COUNT,
};

struct rte_mbuf;
struct rte_mempool;
struct rte_ring;
struct rte_rcu_qsbr;
struct arn_net;
struct arn_arp;
struct arn_l4_ops;

/* Frames a TX buffer holds before it is flushed regardless of the deadline. */
#define ARN_NET_TX_BURST 32
/* Frames asked of each RX queue per iteration. */
#define ARN_NET_RX_BURST 32
/* TCP segments gathered before they go to the L4 layer in one call. */
#define ARN_NET_L4_BURST 64

/* One port as seen by one worker: its TX buffer and its counters. */
struct arn_lcore_port {
	uint16_t n_tx;	      /* frames in tx[] */
	uint32_t tx_bytes_q;  /* their bytes (pkt_len), counted as queued */
	uint64_t tx_deadline; /* TSC by which tx[] is flushed */
	struct rte_mbuf *tx[ARN_NET_TX_BURST];
	uint64_t ctr[ARN_NET_PCTR_COUNT];
} __rte_cache_aligned;

struct arn_lcore {
	/** The L4 layer's per-worker state (the L4 layer's worker_init sets it). It
	 * must stay the first member: arn_l4_state() reads it there. */
	void *l4;
	/** TSC at the start of this iteration; lib/net writes it. It must stay
	 * second: arn_net_now() reads it there (struct arn_lcore_head). */
	uint64_t now;

	/* ---- private to lib/net ------------------------------------------------ */
	struct arn_net *net; /* the data plane this worker belongs to */
	unsigned index;	     /* 0..n_workers-1 = its queue on every port */
	unsigned n_workers;
	unsigned lcore_id;	  /* EAL lcore it runs on */
	unsigned socket;	  /* its NUMA socket */
	struct rte_mempool *pool; /* mbufs of its socket */
	/* pool's cache for the thread that runs the loop (net_worker_begin;
	 * NULL before, after net_worker_end, or without a cache) */
	struct rte_mempool_cache *mcache;
	struct rte_ring *handoff; /* MP/SC: packets other workers pass to it */
	struct rte_ring *ctrl;	  /* SP/SC: struct net_ctrl_msg from control */
	struct arn_arp *arp;	  /* its ARP cache and waiting packets */
	struct rte_rcu_qsbr *rcu; /* QSBR it reports to (NULL: none) */
	uint64_t tx_drain;	  /* TSC ticks a buffered frame may wait */
	uint8_t garp_left;	  /* gratuitous ARPs still to send (worker 0) */
	uint64_t garp_next;	  /* TSC of the next one */
	uint16_t ip_id;		  /* IPv4 identification, per worker */
	uint32_t nh_gen;	  /* bumped when a next hop's MAC changes:
				     the TX templates built before are stale (arp.c) */
	uint16_t n_ports;
	volatile int running;		 /* set while its loop runs */
	uint64_t ctrl_done;		 /* control messages run (written by the worker) */
	uint64_t ctrl_posted;		 /* control messages queued (written by control) */
	struct rte_rcu_qsbr *rcu_seen;	 /* the QSBR it switched to (read by control) */
	volatile int rcu_failed;	 /* ... but could not register with it: idle */
	struct arn_lcore_port *port;	 /* [n_ports] */
	const struct arn_l4_ops *l4_ops; /* the L4 layer (arn_net_set_l4), or NULL */
	uint16_t n_l4_in;		 /* segments gathered for l4_ops->input */
	struct rte_mbuf *l4_in[ARN_NET_L4_BURST];
	uint64_t ctr[ARN_NET_WCTR_COUNT];
} __rte_cache_aligned;

/* Count one event on a port / on the worker. Only the owning worker calls these. */
#define ARN_NET_PINC(lc, p, name) ((lc)->port[(p)].ctr[ARN_NET_P_##name]++)
#define ARN_NET_PADD(lc, p, name, n) ((lc)->port[(p)].ctr[ARN_NET_P_##name] += (n))
#define ARN_NET_WINC(lc, name) ((lc)->ctr[ARN_NET_W_##name]++)
#define ARN_NET_WADD(lc, name, n) ((lc)->ctr[ARN_NET_W_##name] += (n))

/* arn_l4.h's layout contract (struct arn_lcore_head). */
_Static_assert(offsetof(struct arn_lcore, l4) == offsetof(struct arn_lcore_head, l4),
	       "arn_l4_state() reads the L4 state at the lcore's start");
_Static_assert(offsetof(struct arn_lcore, now) == offsetof(struct arn_lcore_head, now),
	       "arn_net_now() reads the clock where struct arn_lcore_head has it");

#endif
