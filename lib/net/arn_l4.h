/*
 * The boundary between lib/net (Ethernet, ARP, IPv4, ICMP, the worker loop)
 * and the L4 layer (lib/tcp). This header is the whole contract: lib/net
 * implements the arn_net_* functions and calls the L4 layer through the ops
 * table the application registers (arn_net_set_l4); lib/tcp implements that
 * table (arn_tcp_l4_ops) and calls arn_net_*. Neither includes the other's
 * private headers, and neither links the other by name.
 *
 * Everything here runs on a worker lcore, on the worker that owns the flow
 * (see arn_net_flow_worker), without locks or allocation beyond mbufs.
 */
#ifndef ARN_L4_H
#define ARN_L4_H

#include <stddef.h>
#include <stdint.h>

#include <rte_mbuf_dyn.h>

struct rte_mbuf;
struct arn_lcore; /* lib/net/arn_lcore.h: one per worker */

/* Bytes an L4 layer leaves in front of its header for IPv4 + Ethernet
 * (+ a VLAN tag). mbufs from the worker's pool have RTE_PKTMBUF_HEADROOM
 * (128), which is enough. */
#define ARN_L4_HEADROOM 64

/* The name of the DPDK dynamic mbuf flag (rte_mbuf_dynflag_register: the
 * L4 layer and lib/net each register it by this name and get the same
 * bit) by which the L4 layer marks a segment that repeats data it sent
 * before: a retransmission. A port that merges segments into one frame
 * (arn_af_packet's GSO, vpkt.c) sends such a segment on its own: a repair
 * merged with its neighbours is lost with them to one drop, with nothing
 * sent after it whose acknowledgement would show the loss, and only the
 * retransmission timer finds it (issue 16; docs/tcp.md). */
#define ARN_L4_DYNFLAG_REXMIT "arn_l4_dynflag_rexmit"

/* ARN_L4_DYNFLAG_REXMIT's bit in ol_flags, registered (or found) by name:
 * the L4 layer's at its worker's init, a merging port's at its set-up, the
 * same bit for both. 0 when it cannot be registered (rte_errno says why):
 * then retransmissions are merged like any segment. */
static inline uint64_t arn_l4_rexmit_flag(void)
{
	const struct rte_mbuf_dynflag f = {.name = ARN_L4_DYNFLAG_REXMIT};
	int bit = rte_mbuf_dynflag_register(&f);
	return bit >= 0 ? UINT64_C(1) << bit : 0;
}

/* ---- net -> L4: the L4 layer's ops table ---------------------------------- */

struct arn_dataplane;

/**
 * What lib/net calls in the L4 layer (lib/tcp's arn_tcp_l4_ops), registered
 * with arn_net_set_l4() on the control lcore before arn_net_launch(). Every
 * member is called on a worker lcore, for that worker. Without a registered
 * layer, TCP segments are counted (tcp_rx) and dropped.
 */
struct arn_l4_ops {
	const char *name;
	/**
	 * Received TCP segments, @p n of them, gathered over one RX burst (one
	 * call per burst, not per segment), each already checked by lib/net:
	 * the Ethernet frame was for us, the IPv4 header is valid (version,
	 * lengths, header checksum, not a fragment), the destination is one
	 * of our addresses, and this worker owns the flow. Each mbuf's data
	 * starts at the IPv4 header; m->l3_len is the IPv4 header length;
	 * m->pkt_len equals the IPv4 total length (padding trimmed) and is at
	 * least m->l3_len + 20 (the TCP header's fixed part), and the first
	 * segment holds those l3_len + 20 bytes. The L4 layer relies on these
	 * and does not check them again; the TCP data offset, options and
	 * lengths beyond those 20 bytes are unchecked. The TCP
	 * checksum is NOT verified yet: RTE_MBUF_F_RX_L4_CKSUM_GOOD / _BAD in
	 * m->ol_flags tell what the NIC found; otherwise verify it.
	 * Ownership of every mbuf passes to the callee (free or keep it).
	 */
	void (*input)(struct arn_lcore *lc, struct rte_mbuf **m, unsigned n);
	/**
	 * An ICMP destination unreachable (or fragmentation needed) for a TCP
	 * segment we sent: @p code is the ICMP code, @p mtu the next-hop MTU
	 * for code 4 (0 otherwise); the addresses, ports and sequence number
	 * @p seq (host order) are those of the original segment as quoted
	 * (ours as src), for the L4 layer to check against what it has in
	 * flight (RFC 5927 4.1): anyone can send an ICMP error.
	 */
	void (*icmp_unreach)(struct arn_lcore *lc, uint8_t code, uint16_t mtu, uint32_t src,
			     uint32_t dst, uint16_t sport, uint16_t dport, uint32_t seq);
	/**
	 * Before the worker's loop starts: create the per-worker state (flow
	 * table, timers, pools) from @p conf and hang it on the lcore
	 * (arn_l4_set_state). @return 0 or a negative errno (the worker does
	 * not start).
	 */
	int (*worker_init)(struct arn_lcore *lc, const struct arn_dataplane *conf);
	/** Once per loop iteration after RX (timers, deferred ACKs, output). */
	void (*worker_poll)(struct arn_lcore *lc, uint64_t now_tsc);
	/** At shutdown, after the worker's last poll. */
	void (*worker_fini)(struct arn_lcore *lc);
};

/**
 * Register the L4 layer (control lcore, before arn_net_create; @p ops must
 * stay valid). NULL unregisters. Process-wide, as there is one data plane.
 */
void arn_net_set_l4(const struct arn_l4_ops *ops);

/* ---- L4 -> net ----------------------------------------------------------- */

/**
 * Send an IPv4 packet. The mbuf's data starts at the L4 header and it has at
 * least ARN_L4_HEADROOM bytes of headroom. lib/net prepends the IPv4 header
 * (TTL 64, DF set, IP id per flow) and the Ethernet header, picks the port
 * by route (the port whose subnet holds @p dst, else the one with a
 * gateway), resolves the next hop with ARP (queueing a bounded number of
 * packets while it resolves), and queues the frame on this worker's TX
 * queue of that port.
 *
 * If m->ol_flags has RTE_MBUF_F_TX_TCP_CKSUM, m->l4_len is set and the TCP
 * checksum field is zero, lib/net completes the TCP checksum: in hardware
 * when the port offers it, else in software.
 *
 * Ownership of @p m passes to lib/net in every case.
 * @return 0 (sent or queued for ARP); -EHOSTUNREACH (no route), -ENOBUFS
 *   (ARP queue full, no headroom), -EMSGSIZE (larger than the route's MTU;
 *   DF is set, nothing is fragmented): the packet was dropped and counted.
 *   A full TX queue is found later, at flush time, and only counted.
 */
int arn_net_ip4_output(struct arn_lcore *lc, struct rte_mbuf *m, uint32_t src, uint32_t dst,
		       uint8_t proto);

/** The ECN field of the IPv4 header (RFC 3168 5): not ECN-capable, ECT(1),
 * ECT(0), Congestion Experienced. */
#define ARN_IP_ECN_MASK 0x03
#define ARN_IP_ECN_ECT0 0x02
#define ARN_IP_ECN_CE 0x03

/**
 * arn_net_ip4_output() with @p tos as the header's Type of Service byte
 * (DSCP and ECN, RFC 2474 / RFC 3168): lib/tcp marks the data segments of
 * a connection that negotiated ECN as ECN-capable (ECT(0)). Same return
 * values and ownership as arn_net_ip4_output().
 */
int arn_net_ip4_output_tos(struct arn_lcore *lc, struct rte_mbuf *m, uint32_t src, uint32_t dst,
			   uint8_t proto, uint8_t tos);

/**
 * A flow's Ethernet and IPv4 headers, built once and copied into each of
 * its segments by arn_net_tcp_output(), so that a segment costs lib/net a
 * copy and a few stores instead of a route, a next-hop lookup and two
 * headers built field by field. lib/net fills it and alone reads its
 * fields; the L4 layer owns it (one per connection) and only zeroes it
 * when the connection is created: a zeroed template is empty.
 */
struct arn_net_tmpl {
	uint8_t hdr[34]; /* Ethernet + IPv4: tos, length, id and checksum zero */
	uint8_t port;
	uint8_t offload; /* the port's checksum offloads */
	uint16_t mtu;	 /* the route's */
	uint16_t ip_sum; /* raw sum of the IPv4 header above */
	uint16_t ph_sum; /* raw sum of the TCP pseudo-header without its length */
	uint32_t gen;	 /* lib/net's neighbour generation it was built at */
	uint64_t until;	 /* TSC from which the next hop is to be asked again; 0: empty */
};

/**
 * arn_net_ip4_output_tos() for a TCP segment of the flow @p src -> @p dst
 * whose headers @p t holds (same contract for @p m, same return values and
 * ownership): the Ethernet and IPv4 headers are copied from @p t, and
 * only the Type of Service @p tos, the length, the id and the checksums
 * are written per segment. When @p t is empty or stale (the next hop's
 * MAC changed or is due to be asked again, see arp.c) the segment takes
 * arn_net_ip4_output_tos()'s path and @p t is built again afterwards if
 * the next hop is resolved. @p t must belong to this worker and to this
 * flow only.
 */
int arn_net_tcp_output(struct arn_lcore *lc, struct rte_mbuf *m, struct arn_net_tmpl *t,
		       uint32_t src, uint32_t dst, uint8_t tos);

/**
 * Resolve the next hop toward @p dst (host byte order) now, before any
 * packet needs it: for a destination that traffic is about to reach for
 * the first time (an endpoint that a configuration update just added), so
 * that the first connections' SYNs do not wait for ARP. Does nothing when
 * the next hop is known or being resolved, or when no route leads to
 * @p dst. Never blocks; one ARP request at most.
 */
void arn_net_resolve(struct arn_lcore *lc, uint32_t dst);

/**
 * When packets toward @p dst (host byte order) started to leave: for a
 * connect timeout that must not count the time a first SYN waited for ARP.
 * @return UINT64_MAX while they wait for the next hop's first ARP answer;
 * else the TSC (arn_net_now()) of that answer, or 0 when none is recorded
 * (resolved long ago, evicted, or no route). Never blocks.
 */
uint64_t arn_net_nexthop_since(const struct arn_lcore *lc, uint32_t dst);

/** Allocate an mbuf from this worker's pool (NULL when empty, counted). */
struct rte_mbuf *arn_net_alloc(struct arn_lcore *lc);

/**
 * Which worker (0..n_workers-1) owns the flow whose packets arrive from
 * @p remote:@p rport to @p local:@p lport (host byte order). Symmetric RSS
 * makes both directions land on the same queue; lib/net answers for what
 * its ports actually do (the hash and RETA when the port has RSS, its own
 * software hash otherwise, the same one it uses to hand packets to their
 * owner).
 */
unsigned arn_net_flow_worker(const struct arn_lcore *lc, uint32_t local, uint32_t remote,
			     uint16_t lport, uint16_t rport);

/** This worker's index (0..n_workers-1) and the number of workers. */
unsigned arn_net_worker_index(const struct arn_lcore *lc);
unsigned arn_net_worker_count(const struct arn_lcore *lc);

/** Is @p addr (host byte order) one of our port addresses? */
int arn_net_is_local(const struct arn_lcore *lc, uint32_t addr);

/** The MTU of the port that routes to @p dst (0 if none). */
uint16_t arn_net_route_mtu(const struct arn_lcore *lc, uint32_t dst);

/** The address of the port that routes to @p dst (host byte order): the
 * source of a connection the data plane opens on its own (active health
 * checks), 0 if no route leads there. */
uint32_t arn_net_route_src(const struct arn_lcore *lc, uint32_t dst);

/** The worker's clock: TSC ticks per second (arn_net_now() is below). */
uint64_t arn_net_hz(void);

/* ---- the head of struct arn_lcore: L4 state and clock ---------------------- */

/*
 * Every struct arn_lcore (lib/net's, and any test's fake of it) begins with
 * the members of struct arn_lcore_head, in its order and at its offsets
 * (lib/net and the fakes check it with _Static_assert): a pointer that
 * belongs to the L4 layer, its per-worker state; then the loop iteration's
 * clock. Each is reached in one load without knowing the rest of the
 * layout. A pointer to a structure points to its first member (C11
 * 6.7.2.1), so this is plain C; the clock is read as the uint64_t it is, at
 * the offset it has here.
 *
 * The clock is inline because lib/tcp and lib/http read it about 11 times
 * per proxied request: as a call into lib/net it cost the call and the
 * caller-saved registers spilled around it, for one load.
 */
struct arn_lcore_head {
	void *l4;
	uint64_t now; /* TSC at the start of this loop iteration */
};

/** The TSC read at the start of the current loop iteration (one rdtsc per
 * iteration, shared by every packet of the burst; iterations last
 * microseconds). */
static inline uint64_t arn_net_now(const struct arn_lcore *lc)
{
	return *(const uint64_t *)(const void *)((const char *)lc +
						 offsetof(struct arn_lcore_head, now));
}

static inline void *arn_l4_state(const struct arn_lcore *lc)
{
	return *(void *const *)(const void *)lc;
}
static inline void arn_l4_set_state(struct arn_lcore *lc, void *state)
{
	*(void **)(void *)lc = state;
}

#endif
