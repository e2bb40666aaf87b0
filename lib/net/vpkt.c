/*
 * arn_af_packet (vpkt.h): AF_PACKET sockets with virtio-net headers.
 *
 * Why a port of Arion's own: on a machine without a DPDK NIC, DPDK 22.11's
 * kernel exchanges (net_af_packet, net_af_xdp, net_tap) trade 1,514-byte
 * frames, so a bulk transfer costs the kernel one skb, and on af_xdp two
 * extra copies, per 1,448 bytes, where a kernel proxy's sockets move 64 KiB
 * GSO packets across the same veth (docs/benchmarks/proxy.md, "Why item 4
 * fails"). The socket option the kernel has had since Linux 3.13,
 * PACKET_VNET_HDR, is what qemu's tap networking uses: a 10-byte header
 * before each frame says its checksum state and, for a super-segment, its
 * segment size. Received: the sender's TSO packet as it crossed the veth.
 * Sent: one frame per run of segments, which the kernel cuts only if a
 * real device that cannot needs it.
 *
 * The costs it trades: a system call per receive poll (recvmmsg, empty or
 * not) and per flush (sendmmsg), where net_af_xdp reads rings. For small
 * exchanges that is more than af_xdp's rings; for bulk transfer far less
 * than a skb per frame. bench/proxy/run measures both.
 *
 * Receive: each queue offers the kernel VPKT_RX_MSGS frames, each as a
 * chain of mbufs long enough for 64 KiB (the virtio-net header goes in the
 * first mbuf's headroom, just before the frame; every link keeps the usual
 * headroom). A frame takes the links
 * it fills; the rest stay offered. The sockets of a port form a fanout
 * group whose member k is worker k's socket, steered by a classic BPF
 * program that computes lib/net's own owner of each flow (symmetric
 * Toeplitz and the redirection table, rss.c), as a NIC programmed with
 * Arion's key and RETA does: every TCP segment reaches the worker that
 * owns its flow, and none is handed over (net_af_packet's group spreads by
 * the kernel's flow hash, so half of a flow's segments land on the wrong
 * worker with two). PACKET_FANOUT_FLAG_DEFRAG as net_af_packet has.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include <rte_byteorder.h>
#include <rte_errno.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_tcp.h>

#include "arn_dataplane.h"
#include "arn_log.h"
#include "arn_mem.h"
#include "net_int.h"
#include "vpkt.h"

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23 /* Linux 4.20 */
#endif

/* Frames offered to the kernel per receive call. */
#define VPKT_RX_MSGS 8
/* Links of a receive chain at most: 64 KiB and the Ethernet header in
 * mbufs of at least 1,700 bytes' room (data rooms are 2,048 by default). */
#define VPKT_RX_LINKS 40
/* A slot's arrays of links and iovecs: twice the links it offers. A frame
 * takes the first k links offered; the rest, and their iovecs, stay where
 * they are and the slot's window moves on by k. They move back to the
 * front only when the window would pass the end, about once per
 * VPKT_RX_LINKS links taken, where before every frame moved them and
 * rebuilt all its slot's iovecs (33 of them for a 1,514-byte frame, with
 * the default 2,176-byte data rooms: 2,048 bytes after the headroom). */
#define VPKT_RX_SPAN (2 * VPKT_RX_LINKS)
/* struct vpkt_q's unready with every slot in it */
#define VPKT_RX_ALL ((1u << VPKT_RX_MSGS) - 1)
/* iovecs a TX burst may use: a header each, and the frames' links */
#define VPKT_TX_IOVS (ARN_NET_TX_BURST * 6)
/* The largest IPv4 total length (a GSO frame's headers included). */
#define VPKT_IP_MAX 65535u

struct vpkt_q {
	int fd;
	unsigned links; /* links per offered frame */
	unsigned room0; /* bytes a link holds: its data room less the headroom */
	struct rte_mempool *pool;
	/* slot s offers links rx[s][start[s]] .. rx[s][start[s] + filled[s] - 1],
	 * each with its iovec at the same index in riov[s] */
	unsigned start[VPKT_RX_MSGS];
	unsigned filled[VPKT_RX_MSGS];
	/* bit s: slot s is not offered (a frame took links from it, or the
	 * pool was short); clear: its links offered, the first's iovec with
	 * the header. A call refills only these, not all eight. */
	uint32_t unready;
	struct rte_mbuf *rx[VPKT_RX_MSGS][VPKT_RX_SPAN];
	struct iovec riov[VPKT_RX_MSGS][VPKT_RX_SPAN];
	struct mmsghdr rmsg[VPKT_RX_MSGS];
	struct vpkt_group grp[ARN_NET_TX_BURST];
	struct vpkt_head head[ARN_NET_TX_BURST];
	struct mmsghdr tmsg[ARN_NET_TX_BURST];
	struct iovec tiov[VPKT_TX_IOVS];
	bool tx_err_logged;
} __rte_cache_aligned;

struct net_vpkt {
	char ifn[IF_NAMESIZE + 1];
	int ifindex;
	unsigned nq;
	/* the L4 layer's retransmission mark (arn_l4.h): such a segment goes
	 * in a frame of its own; 0 if the flag could not be registered */
	uint64_t rexmit;
	struct vpkt_q *q; /* [nq] */
};

/* ---- planning a TX burst (pure) -------------------------------------------- */

/* A TCP/IPv4 frame whose headers are in its first link: their length, and
 * the payload's. */
static bool tcp_frame(const struct rte_mbuf *m, unsigned *hl, unsigned *payload)
{
	if (!(m->ol_flags & RTE_MBUF_F_TX_TCP_CKSUM) || m->data_len < 14 + 20 + 20)
		return false;
	const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
	if (f[12] != 0x08 || f[13] != 0x00 || f[14] != 0x45 || f[23] != IPPROTO_TCP)
		return false;
	unsigned doff = (unsigned)(f[14 + 20 + 12] >> 4) * 4;
	unsigned h = 14 + 20 + doff;
	unsigned tot = (unsigned)f[16] << 8 | f[17];
	if (doff < 20 || h > m->data_len || h > VPKT_HEAD_MAX || 14 + tot != m->pkt_len ||
	    tot < 20 + doff)
		return false;
	*hl = h;
	*payload = m->pkt_len - h;
	return true;
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* May anything follow a group whose last frame is @p prev (payload
 * @p prev_len; the group's segment size @p gso)? Only a full segment that
 * ends nothing: no FIN, SYN, RST, PSH or URG. Tested before the next
 * frame is looked at: request/response traffic, a PSH on every segment,
 * stops here. */
static inline bool extendable(const uint8_t *prev, unsigned prev_len, unsigned gso)
{
	return prev_len == gso &&
	       !(prev[34 + 13] & (RTE_TCP_FIN_FLAG | RTE_TCP_SYN_FLAG | RTE_TCP_RST_FLAG |
				  RTE_TCP_PSH_FLAG | RTE_TCP_URG_FLAG));
}

/* May @p b follow @p a's group, whose last frame is @p prev (payload
 * @p prev_len, extendable) and whose segment size is @p gso? Headers
 * equal but for the IPv4 length, ID and checksum and the TCP sequence,
 * flags and checksum; sequence contiguous. */
static inline __attribute__((always_inline)) bool mergeable(const uint8_t *a, const uint8_t *prev,
							    unsigned prev_len, const uint8_t *b,
							    unsigned hl, unsigned b_len,
							    unsigned gso)
{
	const uint8_t *ta = a + 34, *tp = prev + 34, *tb = b + 34;
	if (b_len == 0 || b_len > gso)
		return false;
	if ((tb[13] &
	     (RTE_TCP_SYN_FLAG | RTE_TCP_RST_FLAG | RTE_TCP_URG_FLAG | RTE_TCP_CWR_FLAG)) ||
	    ((ta[13] ^ tb[13]) & RTE_TCP_ECE_FLAG))
		return false;
	if (memcmp(a, b, 16) != 0 || memcmp(a + 20, b + 20, 4) != 0 ||
	    memcmp(a + 26, b + 26, 8) != 0) /* Ethernet, IP vhl/tos, frag/ttl/proto, addresses */
		return false;
	if (memcmp(ta, tb, 4) != 0 || memcmp(ta + 8, tb + 8, 5) != 0 ||
	    memcmp(ta + 14, tb + 14, 2) != 0 || !arn_mem_eq(ta + 18, tb + 18, hl - 34 - 18))
		return false; /* ports, ACK and data offset, window, urgent pointer and options */
	return rd32(tb + 4) == rd32(tp + 4) + prev_len;
}

/* Frame @p b's payload, if it may be compared with a run's first frame,
 * whose headers (@p hl bytes) tcp_frame checked: a TCP frame of lib/net's
 * with at least those bytes in its first link and an IPv4 length that is
 * its own. The rest of tcp_frame's checks (EtherType, IPv4 header length,
 * protocol, TCP data offset) are mergeable's byte comparison with the
 * first frame. */
static inline bool follows(const struct rte_mbuf *b, unsigned hl, unsigned *payload)
{
	if (!(b->ol_flags & RTE_MBUF_F_TX_TCP_CKSUM) || b->data_len < hl)
		return false;
	const uint8_t *f = rte_pktmbuf_mtod(b, const uint8_t *);
	if (14 + ((unsigned)f[16] << 8 | f[17]) != b->pkt_len)
		return false;
	*payload = b->pkt_len - hl;
	return true;
}

/* May @p m start a run? Not the last frame of the burst, not one that
 * must go alone, and (read in place, before the headers are checked) no
 * flag that ends a run: request/response traffic, a PSH on every
 * segment, is decided here without tcp_frame's checks. */
static inline bool may_lead(const struct rte_mbuf *m, bool last, uint64_t alone)
{
	if (last || (m->ol_flags & alone))
		return false;
	const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
	return m->data_len >= m->l2_len + m->l3_len + 20 &&
	       !(f[m->l2_len + m->l3_len + 13] &
		 (RTE_TCP_FIN_FLAG | RTE_TCP_SYN_FLAG | RTE_TCP_RST_FLAG | RTE_TCP_PSH_FLAG |
		  RTE_TCP_URG_FLAG));
}

/* Group @p x, whose first frame @p m (pkts[@p i], headers @p hl bytes,
 * payload @p pl) tcp_frame checked and may_lead allows, extended over the
 * frames that follow it in @p pkts (@p n in all; @p iovs of the burst's
 * iovecs taken by the groups before). Out of line: request/response
 * traffic never gets here, and inline its registers cost the lone
 * frame's path too. */
static __attribute__((noinline)) void run_extend(struct rte_mbuf *const *pkts, unsigned n,
						 unsigned i, struct vpkt_group *x, unsigned hl,
						 unsigned pl, unsigned iovs, unsigned max_iovs,
						 uint64_t alone)
{
	x->head_len = (uint16_t)hl;
	x->payload = pl;
	const uint8_t *a = rte_pktmbuf_mtod(pkts[i], const uint8_t *);
	const uint8_t *prev = a;
	unsigned prev_len = pl;
	/* the first frame is extendable if full: may_lead said so */
	while (i + x->n < n && extendable(prev, prev_len, pl)) {
		const struct rte_mbuf *b = pkts[i + x->n];
		unsigned bpl;
		if ((b->ol_flags & alone) || !follows(b, hl, &bpl) ||
		    hl - 14 + x->payload + bpl > VPKT_IP_MAX ||
		    iovs + x->iovs + b->nb_segs > max_iovs)
			break;
		const uint8_t *bb = rte_pktmbuf_mtod(b, const uint8_t *);
		if (!mergeable(a, prev, prev_len, bb, hl, bpl, pl))
			break;
		x->payload += bpl;
		x->iovs = (uint16_t)(x->iovs + b->nb_segs);
		x->n++;
		prev = bb;
		prev_len = bpl;
	}
	if (x->n > 1)
		x->gso_size = (uint16_t)pl;
}

static inline __attribute__((always_inline)) unsigned plan(struct rte_mbuf *const *pkts, unsigned n,
							   struct vpkt_group *g, unsigned max_iovs,
							   uint64_t alone)
{
	unsigned k = 0, iovs = 0;
	unsigned i = 0;
	while (i < n) {
		const struct rte_mbuf *m = pkts[i];
		unsigned hl, pl;
		struct vpkt_group *x = &g[k];
		x->first = (uint16_t)i;
		x->n = 1;
		x->gso_size = 0;
		x->iovs = (uint16_t)(1 + m->nb_segs);
		x->head_len = 0;
		x->payload = 0;
		if (!(m->ol_flags & RTE_MBUF_F_TX_TCP_CKSUM)) {
			/* summed by lib/net, or not TCP: as it is */
		} else if (!may_lead(m, i + 1 == n, alone) || !tcp_frame(m, &hl, &pl)) {
			/* A lone TCP frame: lib/net's header lengths (arn_l4.h:
			 * l4_len is set with TX_TCP_CKSUM), for the checksum's
			 * place; its headers go from its own mbuf. */
			x->head_len = (uint16_t)(m->l2_len + m->l3_len + m->l4_len);
		} else {
			run_extend(pkts, n, i, x, hl, pl, iovs, max_iovs, alone);
		}
		if (iovs + x->iovs > max_iovs)
			break;
		iovs += x->iovs;
		i += x->n;
		k++;
	}
	return k;
}

unsigned net_vpkt_plan(struct rte_mbuf *const *pkts, unsigned n, struct vpkt_group *g,
		       unsigned max_iovs, uint64_t alone)
{
	return plan(pkts, n, g, max_iovs, alone);
}

static inline __attribute__((always_inline)) unsigned
group_head(struct rte_mbuf *const *pkts, const struct vpkt_group *g, struct vpkt_head *out)
{
	memset(&out->v, 0, sizeof(out->v));
	if (g->head_len == 0)
		return sizeof(out->v);
	/* The kernel finishes the TCP checksum from csum_start on: the field
	 * holds the pseudo-header's sum (lib/net's offload form). */
	const struct rte_mbuf *m = pkts[g->first];
	out->v.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	out->v.csum_offset = 16;
	out->v.hdr_len = g->head_len;
	if (g->n == 1) {
		/* a lone frame's headers are right as they are: they go from
		 * its own mbuf, not copied; its checksum where lib/net's
		 * header lengths put it */
		out->v.csum_start = (uint16_t)(m->l2_len + m->l3_len);
		return sizeof(out->v);
	}
	out->v.csum_start = 14 + 20; /* the layout tcp_frame checked */
	memcpy(out->h, rte_pktmbuf_mtod(m, const void *), g->head_len);
	const struct rte_mbuf *last = pkts[g->first + g->n - 1];
	const uint8_t *lt = rte_pktmbuf_mtod(last, const uint8_t *) + 34;
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(out->h + 14);
	struct rte_tcp_hdr *th = (struct rte_tcp_hdr *)(out->h + 34);
	ip->total_length = rte_cpu_to_be_16((uint16_t)(g->head_len - 14 + g->payload));
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	/* PSH and FIN are the last segment's; the kernel's GSO puts them on
	 * the last piece it cuts (and CWR on the first). */
	th->tcp_flags = (uint8_t)(th->tcp_flags | (lt[13] & (RTE_TCP_PSH_FLAG | RTE_TCP_FIN_FLAG)));
	th->cksum = rte_ipv4_phdr_cksum(ip, 0);
	out->v.gso_type = VIRTIO_NET_HDR_GSO_TCPV4;
	if (th->tcp_flags & RTE_TCP_CWR_FLAG)
		out->v.gso_type |= VIRTIO_NET_HDR_GSO_ECN;
	out->v.gso_size = g->gso_size;
	return sizeof(out->v) + g->head_len;
}

unsigned net_vpkt_group_head(struct rte_mbuf *const *pkts, const struct vpkt_group *g,
			     struct vpkt_head *out)
{
	return group_head(pkts, g, out);
}

bool net_vpkt_rx_flags(struct rte_mbuf *m, const struct virtio_net_hdr *v)
{
	uint64_t fl = 0;
	/* NEEDS_CSUM: a local sender's partial sum (the kernel never
	 * finishes it for a packet that stays in the machine); DATA_VALID:
	 * a device or the kernel checked it. Either way the kernel vouches,
	 * as its own stack would take it. */
	if (v->flags & (VIRTIO_NET_HDR_F_NEEDS_CSUM | VIRTIO_NET_HDR_F_DATA_VALID))
		fl |= RTE_MBUF_F_RX_L4_CKSUM_GOOD;
	switch (v->gso_type & ~VIRTIO_NET_HDR_GSO_ECN) {
	case VIRTIO_NET_HDR_GSO_NONE:
		break;
	case VIRTIO_NET_HDR_GSO_TCPV4:
		fl |= RTE_MBUF_F_RX_LRO;
		m->tso_segsz = v->gso_size;
		break;
	default:
		return false;
	}
	m->ol_flags = fl;
	return true;
}

/* ---- the data path ------------------------------------------------------------ */

/* recvmmsg and sendmmsg as bare system calls. glibc's wrappers are
 * cancellation points: in a process with threads each call marks the
 * thread asynchronously cancellable before entering the kernel and not
 * after, two atomic read-modify-writes of the thread's cancel state per
 * call (bench/cost/run on this port: 202 instructions a proxied
 * keep-alive request, 45 an idle poll, and the atomics' cycles). No
 * thread of Arion's is ever cancelled (nothing calls pthread_cancel), so
 * the worker enters the kernel through syscall(2), which is not a
 * cancellation point. Both return as the wrappers do: -1 with errno set
 * on an error. */
static inline int vpkt_recvmmsg(int fd, struct mmsghdr *m, unsigned n, int flags)
{
	return (int)syscall(SYS_recvmmsg, fd, m, n, flags, NULL);
}

static inline int vpkt_sendmmsg(int fd, struct mmsghdr *m, unsigned n, int flags)
{
	return (int)syscall(SYS_sendmmsg, fd, m, n, flags);
}

/* Offer slot @p s again after a frame took some of its links: the
 * missing ones allocated after those left, each with its iovec, and the
 * first link's iovec widened to take the virtio-net header just before
 * its data. A link left keeps its iovec: the kernel wrote nothing into it
 * and nothing here changed its data_off. @return false when the pool is
 * short (the slot is not offered). */
static inline bool rx_fill(struct vpkt_q *q, struct rte_mempool_cache *cache, unsigned s)
{
	unsigned b = q->start[s], f = q->filled[s];
	if (unlikely(b + q->links > VPKT_RX_SPAN)) {
		memmove(&q->rx[s][0], &q->rx[s][b], f * sizeof(q->rx[s][0]));
		memmove(&q->riov[s][0], &q->riov[s][b], f * sizeof(q->riov[s][0]));
		q->start[s] = b = 0;
	}
	if (f < q->links) {
		/* rte_pktmbuf_alloc_bulk's work from the worker's own cache,
		 * not found again through the thread's lcore id per call */
		if (rte_mempool_generic_get(q->pool, (void **)&q->rx[s][b + f], q->links - f,
					    cache) != 0)
			return false;
		/* as a PMD's mbufs: the usual headroom (rte_pktmbuf_reset's),
		 * room0 bytes after it */
		for (unsigned i = b + f; i < b + q->links; i++) {
			rte_pktmbuf_reset(q->rx[s][i]);
			q->riov[s][i].iov_base = rte_pktmbuf_mtod(q->rx[s][i], uint8_t *);
			q->riov[s][i].iov_len = q->room0;
		}
		q->filled[s] = q->links;
	}
	const size_t vh = sizeof(struct virtio_net_hdr);
	q->riov[s][b].iov_base = rte_pktmbuf_mtod(q->rx[s][b], uint8_t *) - vh;
	q->riov[s][b].iov_len = vh + q->room0;
	q->rmsg[s].msg_hdr.msg_iov = &q->riov[s][b];
	q->rmsg[s].msg_hdr.msg_iovlen = q->links;
	q->unready &= ~(1u << s);
	return true;
}

/* The links of slot @p s that a frame of @p len bytes filled leave as its
 * chain; the slot's window moves past them (rx_fill offers it again). */
static struct rte_mbuf *rx_take(struct vpkt_q *q, unsigned s, uint32_t len)
{
	unsigned b = q->start[s];
	struct rte_mbuf *head = q->rx[s][b];
	uint32_t left = len;
	unsigned k = 0;
	struct rte_mbuf *prev = NULL;
	while (left > 0) {
		struct rte_mbuf *m = q->rx[s][b + k];
		uint16_t dl = (uint16_t)(left < q->room0 ? left : q->room0);
		m->data_len = dl;
		m->next = NULL;
		if (prev)
			prev->next = m;
		prev = m;
		left -= dl;
		k++;
	}
	head->pkt_len = len;
	head->nb_segs = (uint16_t)k;
	q->filled[s] -= k;
	/* every link taken (a super-segment's 64 KiB): start again at the
	 * front, nothing to move */
	q->start[s] = q->filled[s] ? b + k : 0;
	q->unready |= 1u << s;
	return head;
}

/* One receive call on queue @p q: the frames, each an mbuf chain with its
 * port set to @p port, refills from the pool through @p cache (the
 * worker's, or NULL); what was dropped counted in @p c. */
static inline uint16_t q_rx(struct vpkt_q *q, struct rte_mempool_cache *cache, uint16_t port,
			    struct rte_mbuf **pkts, uint16_t n, struct vpkt_rx_count *c)
{
	unsigned want = n < VPKT_RX_MSGS ? n : VPKT_RX_MSGS;
	/* the slots the last call's frames took, refilled; the offer is the
	 * slots up to the first still unready (the pool short) */
	for (uint32_t due = q->unready & ((1u << want) - 1); due; due &= due - 1)
		if (unlikely(!rx_fill(q, cache, (unsigned)__builtin_ctz(due))))
			break;
	unsigned offer = (unsigned)__builtin_ctz(q->unready | 1u << want);
	if (offer == 0) {
		c->nomem++;
		return 0;
	}
	int r = vpkt_recvmmsg(q->fd, q->rmsg, offer, MSG_DONTWAIT);
	if (r <= 0)
		return 0;
	uint16_t out = 0;
	for (int i = 0; i < r; i++) {
		struct mmsghdr *mh = &q->rmsg[i];
		uint32_t len = mh->msg_len;
		if ((mh->msg_hdr.msg_flags & MSG_TRUNC) || len <= sizeof(struct virtio_net_hdr)) {
			c->oversize++;
			mh->msg_hdr.msg_flags = 0;
			continue;
		}
		struct virtio_net_hdr v;
		memcpy(&v, rte_pktmbuf_mtod(q->rx[i][q->start[i]], uint8_t *) - sizeof(v),
		       sizeof(v));
		struct rte_mbuf *m = rx_take(q, (unsigned)i, len - (uint32_t)sizeof(v));
		m->port = port;
		if (!net_vpkt_rx_flags(m, &v)) {
			c->gso_type++;
			rte_pktmbuf_free(m);
			continue;
		}
		c->gro += (m->ol_flags & RTE_MBUF_F_RX_LRO) != 0;
		pkts[out++] = m;
	}
	return out;
}

uint16_t net_vpkt_rx(struct arn_lcore *lc, uint16_t p, struct rte_mbuf **pkts, uint16_t n)
{
	struct vpkt_rx_count c = {0};
	uint16_t out = q_rx(&lc->net->port[p].vpkt->q[lc->index], lc->mcache, p, pkts, n, &c);
	if (c.gro)
		ARN_NET_PADD(lc, p, rx_gro, c.gro);
	if (unlikely(c.nomem | c.oversize | c.gso_type)) {
		ARN_NET_WADD(lc, mbuf_alloc_failed, c.nomem);
		ARN_NET_PADD(lc, p, rx_drop_oversize, c.oversize);
		ARN_NET_PADD(lc, p, rx_drop_gso_type, c.gso_type);
	}
	return out;
}

uint16_t net_vpkt_q_rx(struct vpkt_q *q, struct rte_mbuf **pkts, uint16_t n,
		       struct vpkt_rx_count *c)
{
	return q_rx(q, NULL, 0, pkts, n, c);
}

uint16_t net_vpkt_tx(struct arn_lcore *lc, uint16_t p, struct rte_mbuf **pkts, uint16_t n)
{
	struct net_vpkt *vp = lc->net->port[p].vpkt;
	struct vpkt_q *q = &vp->q[lc->index];
	uint16_t done = 0;
	while (done < n) {
		unsigned k = plan(pkts + done, n - done, q->grp, VPKT_TX_IOVS, vp->rexmit);
		if (unlikely(k == 0)) {
			/* a frame of more links than a burst's iovecs: never
			 * one of lib/net's (a header and a few references) */
			ARN_NET_PINC(lc, p, tx_drop_kernel);
			rte_pktmbuf_free(pkts[done++]);
			continue;
		}
		unsigned iov = 0;
		for (unsigned g = 0; g < k; g++) {
			struct vpkt_group *x = &q->grp[g];
			/* only the iovecs are set: the rest of the message (no
			 * address, no control data, no flags) is as the queue's
			 * zeroed allocation left it, and sendmmsg writes back
			 * only msg_len */
			struct msghdr *mh = &q->tmsg[g].msg_hdr;
			mh->msg_iov = &q->tiov[iov];
			unsigned hb = group_head(pkts + done, x, &q->head[g]);
			q->tiov[iov].iov_base = &q->head[g];
			q->tiov[iov].iov_len = hb;
			iov++;
			/* the headers the group's header carries, skipped in
			 * each frame (none for a lone frame) */
			unsigned hskip = hb - (unsigned)sizeof(q->head[g].v);
			for (unsigned j = 0; j < x->n; j++) {
				unsigned skip = hskip;
				for (struct rte_mbuf *m = pkts[done + x->first + j]; m;
				     m = m->next) {
					unsigned dl = m->data_len;
					if (skip >= dl) {
						skip -= dl;
						continue;
					}
					q->tiov[iov].iov_base =
					    rte_pktmbuf_mtod_offset(m, uint8_t *, skip);
					q->tiov[iov].iov_len = dl - skip;
					skip = 0;
					iov++;
				}
			}
			mh->msg_iovlen = (size_t)(&q->tiov[iov] - mh->msg_iov);
		}
		int r = vpkt_sendmmsg(q->fd, q->tmsg, k, MSG_DONTWAIT);
		if (r < 0) {
			int e = errno;
			if (e == EAGAIN || e == ENOBUFS || e == EINTR)
				break;
			/* The kernel refused the first frame itself (EMSGSIZE, a
			 * downed interface): it is dropped, the rest retried. */
			r = 1;
			ARN_NET_PADD(lc, p, tx_drop_kernel, q->grp[0].n);
			if (!q->tx_err_logged) {
				q->tx_err_logged = true;
				ARN_WARN(NET,
					 "port %s: the kernel refused a frame on %s: %s (counted "
					 "in tx_drop_kernel; said once)",
					 lc->net->port[p].name, vp->ifn, strerror(e));
			}
		}
		unsigned frames = 0;
		for (int g = 0; g < r; g++) {
			frames += q->grp[g].n;
			if (q->grp[g].n > 1) {
				ARN_NET_PINC(lc, p, tx_gso);
				ARN_NET_PADD(lc, p, tx_gso_segments, q->grp[g].n);
			}
		}
		/* one frame, request/response traffic's usual burst: DPDK's
		 * inline free, not the bulk call's set-up for one mbuf chain */
		if (frames == 1)
			rte_pktmbuf_free(pkts[done]);
		else
			rte_pktmbuf_free_bulk(pkts + done, frames);
		done = (uint16_t)(done + frames);
		if ((unsigned)r < k)
			break;
	}
	return done;
}

/* ---- setup -------------------------------------------------------------------- */

static int sockopt(int fd, int level, int name, int v)
{
	return setsockopt(fd, level, name, &v, sizeof(v));
}

static int q_open(struct net_port *np, struct net_vpkt *vp, struct vpkt_q *q, unsigned idx,
		  unsigned rx_desc)
{
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, rte_cpu_to_be_16(ETH_P_ALL));
	if (fd < 0) {
		int e = errno;
		ARN_ERR(NET,
			"port %s: cannot open a packet socket: %s (%s needs root or CAP_NET_RAW)",
			np->name, strerror(e), VPKT_PREFIX);
		return -e;
	}
	q->fd = fd;
	const char *what = "PACKET_VNET_HDR";
	int rc = sockopt(fd, SOL_PACKET, PACKET_VNET_HDR, 1);
	/* frames Arion sends are not received back */
	if (rc == 0 && (what = "PACKET_IGNORE_OUTGOING",
			rc = sockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)) == 0)
		what = NULL;
	if (rc != 0) {
		int e = errno;
		ARN_ERR(NET,
			"port %s: the kernel refused %s on a packet socket: %s (%s needs "
			"Linux 4.20 or later)",
			np->name, what, strerror(e), VPKT_PREFIX);
		return -e;
	}
	/* the qdisc is the kernel's queue for its own sockets; Arion queues */
	(void)sockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, 1);
	/* Room for the frames of rx_descriptors full segments, or 64 super-
	 * segments, whichever is more (SO_RCVBUFFORCE: above rmem_max). */
	int rb = (int)RTE_MAX(rx_desc * 4096u, 64u * 70000u);
	if (sockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, rb) != 0)
		(void)sockopt(fd, SOL_SOCKET, SO_RCVBUF, rb);
	if (sockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, 4 << 20) != 0)
		(void)sockopt(fd, SOL_SOCKET, SO_SNDBUF, 4 << 20);
	struct sockaddr_ll sll = {
	    .sll_family = AF_PACKET,
	    .sll_protocol = rte_cpu_to_be_16(ETH_P_ALL),
	    .sll_ifindex = vp->ifindex,
	};
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) != 0) {
		int e = errno;
		ARN_ERR(NET, "port %s: cannot bind a packet socket to %s: %s", np->name, vp->ifn,
			strerror(e));
		return -e;
	}
	/* one group per port, its id from the interface and the process; the
	 * members in the order they join, queue 0 first; its program is set
	 * at start, once net->reta is known (until then member 0 gets all) */
	/* (in unsigned: DEFRAG is bit 15 of the mode, bit 31 of the word) */
	uint32_t fanout = (((uint32_t)getpid() ^ (uint32_t)vp->ifindex << 8) & 0xffffu) |
			  (uint32_t)(PACKET_FANOUT_CBPF | PACKET_FANOUT_FLAG_DEFRAG) << 16;
	if (setsockopt(fd, SOL_PACKET, PACKET_FANOUT, &fanout, sizeof(fanout)) != 0) {
		int e = errno;
		ARN_ERR(NET,
			"port %s: cannot join queue %u's socket to the port's fanout group on "
			"%s: %s",
			np->name, idx, vp->ifn, strerror(e));
		return -e;
	}
	return 0;
}

/* Queue @p q's receive side, its links from @p pool: how many links a
 * frame is offered (at most VPKT_RX_LINKS), each a PMD's usual headroom
 * and room0 bytes after it. @return the links 64 KiB would need. */
static unsigned q_rx_init(struct vpkt_q *q, struct rte_mempool *pool)
{
	q->pool = pool;
	q->room0 = rte_pktmbuf_data_room_size(pool) - RTE_PKTMBUF_HEADROOM;
	/* every link keeps the usual headroom, as any PMD's mbufs do (the
	 * resends session 24 put down to links without it were the veth's
	 * reordering: docs/benchmarks/proxy.md) */
	unsigned need = 14 + 65535 + 4;
	unsigned want = need <= q->room0 ? 1 : (need + q->room0 - 1) / q->room0;
	q->links = want < VPKT_RX_LINKS ? want : VPKT_RX_LINKS;
	for (unsigned s = 0; s < VPKT_RX_MSGS; s++) {
		q->start[s] = q->filled[s] = 0;
		q->rmsg[s].msg_hdr.msg_iov = q->riov[s];
		q->rmsg[s].msg_hdr.msg_iovlen = 0;
	}
	q->unready = VPKT_RX_ALL; /* the first call fills them */
	return want;
}

/* The links queue @p q holds for receive, freed. */
static void q_rx_release(struct vpkt_q *q)
{
	for (unsigned s = 0; s < VPKT_RX_MSGS; s++) {
		for (unsigned k = 0; k < q->filled[s]; k++)
			rte_pktmbuf_free(q->rx[s][q->start[s] + k]);
		q->filled[s] = 0;
		q->start[s] = 0;
	}
	q->unready = VPKT_RX_ALL;
}

struct vpkt_q *net_vpkt_q_new(int fd, struct rte_mempool *pool)
{
	struct vpkt_q *q = rte_zmalloc("vpkt_q", sizeof(*q), RTE_CACHE_LINE_SIZE);
	if (q == NULL)
		return NULL;
	q->fd = fd;
	q_rx_init(q, pool);
	return q;
}

void net_vpkt_q_free(struct vpkt_q *q)
{
	if (q == NULL)
		return;
	q_rx_release(q);
	rte_free(q);
}

int net_vpkt_setup(struct net_port *np, const struct arn_dp_port *pc, const char *ifn,
		   unsigned workers, struct arn_lcore *const *lc)
{
	struct net_vpkt *vp = calloc(1, sizeof(*vp));
	if (vp == NULL)
		return -ENOMEM;
	np->vpkt = vp;
	if (*ifn == '\0') {
		ARN_ERR(NET, "port %s: %s needs the interface to use (%s,iface=veth0)", np->name,
			VPKT_PREFIX, VPKT_PREFIX);
		return -EINVAL;
	}
	snprintf(vp->ifn, sizeof(vp->ifn), "%s", ifn);
	vp->ifindex = (int)if_nametoindex(vp->ifn);
	if (vp->ifindex == 0) {
		ARN_ERR(NET,
			"port %s: %s's interface '%s' does not exist (device '%s'): create "
			"it or fix iface= (`ip link show` lists them)",
			np->name, VPKT_PREFIX, vp->ifn, pc->device);
		return -ENODEV;
	}
	snprintf(np->device, sizeof(np->device), "%s", pc->device);
	vp->q = rte_zmalloc_socket("vpkt_q", workers * sizeof(*vp->q), RTE_CACHE_LINE_SIZE,
				   (int)lc[0]->socket);
	if (vp->q == NULL)
		return -ENOMEM;
	vp->nq = workers;
	for (unsigned i = 0; i < workers; i++)
		vp->q[i].fd = -1;
	vp->rexmit = arn_l4_rexmit_flag();
	if (vp->rexmit == 0)
		ARN_WARN(NET,
			 "port %s: cannot register the mbuf flag %s (%s): retransmissions "
			 "are merged into GSO frames like any segment",
			 np->name, ARN_L4_DYNFLAG_REXMIT, rte_strerror(rte_errno));
	for (unsigned i = 0; i < workers; i++) {
		struct vpkt_q *q = &vp->q[i];
		unsigned want = q_rx_init(q, lc[i]->pool);
		unsigned room = q->room0 + RTE_PKTMBUF_HEADROOM; /* the pool's data room */
		if (i == 0 && q->links > 8 && want <= VPKT_RX_LINKS)
			ARN_INFO(
			    NET,
			    "port %s: a 64 KiB super-segment is received into %u mbufs of %u "
			    "bytes, each a segment to TCP; dataplane.mbuf_pool.data_room_size: "
			    "8320 makes it 8, for about a quarter less CPU per MiB "
			    "(docs/dataplane.md)",
			    np->name, q->links, q->room0);
		if (want > VPKT_RX_LINKS && i == 0)
			ARN_WARN(NET,
				 "port %s: mbufs of %u bytes hold %u bytes in %u links: "
				 "larger super-segments are dropped (rx_drop_oversize); "
				 "raise dataplane.mbuf_pool.data_room_size",
				 np->name, room, q->room0 * VPKT_RX_LINKS, VPKT_RX_LINKS);
		int rc = q_open(np, vp, q, i, pc->rx_descriptors);
		if (rc != 0)
			return rc;
		if (i < RTE_DIM(np->afp_fd))
			np->afp_fd[i] = q->fd;
	}
	np->n_afp_fd = workers; /* PACKET_STATISTICS: the kernel's drops (nic_rx_missed) */
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_mtu = np->mtu;
	int rc = net_if_ioctl(vp->ifn, SIOCSIFMTU, &ifr);
	if (rc != 0)
		ARN_WARN(NET, "port %s: cannot set %s's MTU to %u (%s); continuing with its own",
			 np->name, vp->ifn, np->mtu, strerror(-rc));
	rc = net_if_ioctl(vp->ifn, SIOCGIFHWADDR, &ifr);
	if (rc != 0) {
		ARN_ERR(NET, "port %s: cannot read %s's MAC address: %s", np->name, vp->ifn,
			strerror(-rc));
		return rc;
	}
	memcpy(np->mac.addr_bytes, ifr.ifr_hwaddr.sa_data, RTE_ETHER_ADDR_LEN);
	/* lib/net leaves the TCP checksum's pseudo-header sum; the kernel
	 * finishes it where a packet leaves the machine */
	np->tx_tcp_cksum = true;
	return 0;
}

int net_vpkt_start(const struct arn_net *net, struct net_port *np)
{
	struct net_vpkt *vp = np->vpkt;
	/* the group's program: each flow to its owner (rss.c) */
	struct sock_filter code[NET_RSS_FANOUT_PROG_MAX];
	struct sock_fprog fp = {
	    .len = (unsigned short)net_rss_fanout_prog(net, code, RTE_DIM(code)),
	    .filter = code,
	};
	if (fp.len == 0) {
		ARN_ERR(NET, "port %s: no fanout program gives the redirection table's owners",
			np->name);
		return -EINVAL;
	}
	if (setsockopt(vp->q[0].fd, SOL_PACKET, PACKET_FANOUT_DATA, &fp, sizeof(fp)) != 0) {
		int e = errno;
		ARN_ERR(NET,
			"port %s: the kernel refused the fanout program that steers each flow "
			"to its worker on %s: %s (PACKET_FANOUT_DATA needs Linux 4.3 or later)",
			np->name, vp->ifn, strerror(e));
		return -e;
	}
	np->rss_fanout = true;
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	int rc = net_if_ioctl(vp->ifn, SIOCGIFFLAGS, &ifr);
	if (rc == 0 && !(ifr.ifr_flags & IFF_UP)) {
		ifr.ifr_flags |= IFF_UP;
		rc = net_if_ioctl(vp->ifn, SIOCSIFFLAGS, &ifr);
	}
	if (rc != 0) {
		ARN_ERR(NET, "port %s: cannot bring %s up: %s", np->name, vp->ifn, strerror(-rc));
		return rc;
	}
	return 0;
}

void net_vpkt_close(struct net_port *np)
{
	struct net_vpkt *vp = np->vpkt;
	if (vp == NULL)
		return;
	for (unsigned i = 0; vp->q && i < vp->nq; i++) {
		struct vpkt_q *q = &vp->q[i];
		q_rx_release(q);
		if (q->fd >= 0)
			close(q->fd);
		q->fd = -1;
	}
	rte_free(vp->q);
	free(vp);
	np->vpkt = NULL;
}
