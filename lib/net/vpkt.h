/*
 * arn_af_packet: Arion's own kernel exchange (vpkt.c). One AF_PACKET socket
 * per worker with virtio-net headers (PACKET_VNET_HDR), so that the kernel
 * and Arion trade super-segments instead of 1,514-byte frames:
 *
 *   receive  what the kernel's TCP sent as one TSO packet (or GRO merged)
 *            arrives as one frame of up to 64 KiB, in an mbuf chain, with
 *            RTE_MBUF_F_RX_LRO and tso_segsz = the sender's segment size;
 *            a checksum the kernel vouches for (VIRTIO_NET_HDR_F_NEEDS_CSUM
 *            from a local sender, _DATA_VALID) is marked GOOD.
 *   send     consecutive full segments of one TCP flow in a TX burst leave
 *            as one GSO frame (one copy into one skb, which the kernel cuts
 *            only where it must: a veth to a local socket never does);
 *            TCP checksums are left to the kernel (NEEDS_CSUM).
 *
 * Ownership: the port (struct net_port.vpkt) owns one struct net_vpkt; queue
 * q is used only by worker q after start, and by the control thread before
 * start and after stop (setup, close). Sent frames are freed here; frames
 * the kernel did not take stay the caller's, in order (as rte_eth_tx_burst).
 *
 * The planning of a TX burst (which frames share a GSO frame, and the
 * header that frame carries) is net_vpkt_plan / net_vpkt_group_head, pure
 * functions over mbufs, so that tests check them without a socket.
 */
#ifndef ARN_NET_VPKT_H
#define ARN_NET_VPKT_H

#include <stdbool.h>
#include <stdint.h>

#include <linux/virtio_net.h>

struct rte_mbuf;
struct arn_lcore;
struct arn_dp_port;
struct net_port;

#define VPKT_PREFIX "arn_af_packet"
/* headers of a frame that may be merged: Ethernet, IPv4 without options,
 * TCP with up to 40 bytes of options */
#define VPKT_HEAD_MAX (14 + 20 + 60)

/* One GSO frame of a TX burst: frames first .. first + n - 1. */
struct vpkt_group {
	uint16_t first, n;
	/* Ethernet + IPv4 + TCP headers, for a frame whose TCP checksum the
	 * kernel finishes (TX_TCP_CKSUM; a lone one's from lib/net's l2_len,
	 * l3_len and l4_len); 0: any other frame, sent as it is */
	uint16_t head_len;
	uint16_t gso_size; /* payload of each but the last (0: n == 1) */
	uint32_t payload;  /* TCP payload bytes of all n (a run's; a lone frame may leave 0) */
	uint16_t iovs;	   /* iovecs it needs, its header's included */
};

/* The header an outgoing frame starts with: the virtio-net header, then
 * (for a TCP frame) a copy of the first frame's headers, rewritten for the
 * group (lengths, flags, checksums). */
struct vpkt_head {
	struct virtio_net_hdr v;
	uint8_t h[VPKT_HEAD_MAX];
} __attribute__((packed));

/** Split @p n frames into groups, in order: each group is one frame, or a
 * run of TCP segments of one flow, contiguous in sequence, all but the
 * last full (the first's payload) and without PSH/FIN/SYN/RST/URG, their
 * headers otherwise equal, under 64 KiB in all; a frame whose ol_flags
 * have a bit of @p alone (the L4 layer's retransmission mark, arn_l4.h's
 * ARN_L4_DYNFLAG_REXMIT) is a group of its own. @p max_iovs bounds the
 * iovecs the groups need; frames that would pass it are left out.
 * @return the groups written to @p g (at most @p n), covering the frames
 * first .. g[k-1].first + g[k-1].n - 1. */
unsigned net_vpkt_plan(struct rte_mbuf *const *pkts, unsigned n, struct vpkt_group *g,
		       unsigned max_iovs, uint64_t alone);

/** Write group @p g's header into @p out: the virtio-net header and, for a
 * run of TCP segments (n > 1), its first frame's headers rewritten for the
 * run; a lone frame goes with its own headers, not copied here. The
 * frames' bytes follow it with the headers this copied skipped in each.
 * @return the bytes written. */
unsigned net_vpkt_group_head(struct rte_mbuf *const *pkts, const struct vpkt_group *g,
			     struct vpkt_head *out);

/** Fill a received frame's mbuf fields from its virtio-net header @p v:
 * checksum status, and RTE_MBUF_F_RX_LRO with tso_segsz for a TCP/IPv4
 * super-segment. @return false when the frame is a super-segment of
 * another kind (UDP, IPv6), which Arion does not take. */
bool net_vpkt_rx_flags(struct rte_mbuf *m, const struct virtio_net_hdr *v);

/** Open the port's sockets (one per worker) on interface @p ifn (the
 * device string's iface=, "" when it has none), set its MTU and read its
 * MAC. Control thread. */
int net_vpkt_setup(struct net_port *np, const struct arn_dp_port *pc, const char *ifn,
		   unsigned workers, struct arn_lcore *const *lc);
/** Steer each flow to its owner's socket (the fanout group's program,
 * from @p net's redirection table) and bring the interface up. */
struct arn_net;
int net_vpkt_start(const struct arn_net *net, struct net_port *np);
/** Close the sockets and free the mbufs held for receive. */
void net_vpkt_close(struct net_port *np);

/** Receive up to @p n frames on worker @p lc's queue of port @p p. */
uint16_t net_vpkt_rx(struct arn_lcore *lc, uint16_t p, struct rte_mbuf **pkts, uint16_t n);
/** Send @p n frames; @return how many the kernel took (those are freed). */
uint16_t net_vpkt_tx(struct arn_lcore *lc, uint16_t p, struct rte_mbuf **pkts, uint16_t n);

/* The receive side of one queue on its own, for tests: any socket whose
 * datagrams are a virtio-net header and a frame will do (a Unix
 * socketpair), and what net_vpkt_rx would count is returned instead. */
struct rte_mempool;
struct vpkt_q;
struct vpkt_rx_count {
	uint32_t nomem;	   /* calls that offered nothing: the pool was empty */
	uint32_t oversize; /* frames larger than their chain, or empty */
	uint32_t gso_type; /* super-segments other than TCP/IPv4 */
	uint32_t gro;	   /* super-segments taken */
};
/** A queue reading @p fd (not closed by net_vpkt_q_free) into links of
 * @p pool, offered as net_vpkt_setup offers them. NULL: no memory. */
struct vpkt_q *net_vpkt_q_new(int fd, struct rte_mempool *pool);
/** net_vpkt_rx on @p q alone: frames of port 0; @p c is added to. */
uint16_t net_vpkt_q_rx(struct vpkt_q *q, struct rte_mbuf **pkts, uint16_t n,
		       struct vpkt_rx_count *c);
/** Free @p q and the links it holds. */
void net_vpkt_q_free(struct vpkt_q *q);

#endif
