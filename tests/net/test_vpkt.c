/*
 * arn_af_packet (lib/net/vpkt.c). Without a socket: its planning of a TX
 * burst (which frames share a GSO frame, and that the kernel's
 * segmentation of that frame, done here as tcp_gso_segment does it, gives
 * back the frames Arion built, byte for byte but for what GSO rewrites:
 * IPv4 length, ID and checksum, TCP checksum) and its reading of received
 * virtio-net headers. Over a Unix socketpair: its receive side (the chains
 * it makes, byte for byte, and what it drops and counts).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include <rte_eal.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_tcp.h>

#include "vpkt.h"

static struct rte_mempool *pool;

#define HL (14 + 20 + 32) /* Ethernet, IPv4, TCP with timestamps */
#define MSS 1448
#define ACK 0x10
#define PSH 0x08
#define FIN 0x01

struct fr {
	uint32_t seq;
	unsigned len;
	uint8_t flags;
	uint16_t sport;
	uint32_t ack;
	uint32_t tsval;
	bool split;   /* headers in one mbuf, payload in a second (lib/tcp's reference) */
	bool no_csum; /* no TX_TCP_CKSUM: a frame lib/net summed itself */
};

/* A frame as lib/net hands it to the port: pseudo-header sum in the TCP
 * checksum, TX_TCP_CKSUM, payload bytes a function of the sequence. */
static struct rte_mbuf *frame(const struct fr *f)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	assert_non_null(m);
	uint8_t *dst = (uint8_t *)rte_pktmbuf_append(m, HL + (f->split ? 0 : f->len));
	assert_non_null(dst);
	uint8_t h[HL] = {0};
	memcpy(h, "\x02\0\0\0\0\x01\x02\0\0\0\0\x02\x08\x00", 14);
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(h + 14);
	ip->version_ihl = 0x45;
	ip->total_length = rte_cpu_to_be_16((uint16_t)(HL - 14 + f->len));
	ip->packet_id = rte_cpu_to_be_16((uint16_t)f->seq);
	ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_TCP;
	ip->src_addr = rte_cpu_to_be_32(0xc6120002);
	ip->dst_addr = rte_cpu_to_be_32(0xc612000a);
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	struct rte_tcp_hdr *th = (struct rte_tcp_hdr *)(ip + 1);
	th->src_port = rte_cpu_to_be_16(f->sport ? f->sport : 80);
	th->dst_port = rte_cpu_to_be_16(40000);
	th->sent_seq = rte_cpu_to_be_32(f->seq);
	th->recv_ack = rte_cpu_to_be_32(f->ack ? f->ack : 77);
	th->data_off = (32 / 4) << 4;
	th->tcp_flags = f->flags ? f->flags : ACK;
	th->rx_win = rte_cpu_to_be_16(5000);
	uint8_t *o = (uint8_t *)(th + 1);
	o[0] = 1, o[1] = 1, o[2] = 8, o[3] = 10;
	uint32_t tv = rte_cpu_to_be_32(f->tsval ? f->tsval : 1000), te = rte_cpu_to_be_32(9);
	memcpy(o + 4, &tv, 4);
	memcpy(o + 8, &te, 4);
	th->cksum = rte_ipv4_phdr_cksum(ip, 0);
	memcpy(dst, h, HL);
	uint8_t *p = dst + HL;
	if (f->split) {
		struct rte_mbuf *d = rte_pktmbuf_alloc(pool);
		assert_non_null(d);
		p = (uint8_t *)rte_pktmbuf_append(d, (uint16_t)f->len);
		assert_non_null(p);
		assert_int_equal(rte_pktmbuf_chain(m, d), 0);
	}
	for (unsigned i = 0; i < f->len; i++)
		p[i] = (uint8_t)((f->seq + i) * 7);
	m->l2_len = 14;
	m->l3_len = 20;
	m->l4_len = HL - 34; /* as lib/tcp sets it with TX_TCP_CKSUM */
	if (!f->no_csum)
		m->ol_flags = RTE_MBUF_F_TX_TCP_CKSUM | RTE_MBUF_F_TX_IPV4;
	return m;
}

static void free_all(struct rte_mbuf **m, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		rte_pktmbuf_free(m[i]);
}

/* What the kernel sends for group @p g: its header and the frames' bytes
 * after their headers, as vpkt.c's sendmmsg gathers them. */
static unsigned gather(struct rte_mbuf **pkts, const struct vpkt_group *g, uint8_t *out,
		       struct vpkt_head *vh)
{
	unsigned hb = net_vpkt_group_head(pkts, g, vh);
	memcpy(out, vh->h, hb - sizeof(vh->v));
	unsigned n = hb - (unsigned)sizeof(vh->v);
	const unsigned carried = n; /* the headers the group's header carries */
	for (unsigned j = 0; j < g->n; j++) {
		unsigned skip = carried;
		for (struct rte_mbuf *m = pkts[g->first + j]; m; m = m->next) {
			if (skip >= m->data_len) {
				skip -= m->data_len;
				continue;
			}
			memcpy(out + n, rte_pktmbuf_mtod_offset(m, uint8_t *, skip),
			       m->data_len - skip);
			n += m->data_len - skip;
			skip = 0;
		}
	}
	return n;
}

/* tcp_gso_segment's cut of @p buf (@p len bytes, header @p hl) into
 * segments of @p gso: segment @p i, written to @p seg. */
static unsigned gso_cut(const uint8_t *buf, unsigned len, unsigned hl, unsigned gso, unsigned i,
			uint8_t *seg)
{
	unsigned total = len - hl, off = i * gso;
	unsigned pl = total - off < gso ? total - off : gso;
	memcpy(seg, buf, hl);
	memcpy(seg + hl, buf + hl + off, pl);
	struct rte_tcp_hdr *th = (struct rte_tcp_hdr *)(seg + 34);
	th->sent_seq = rte_cpu_to_be_32(rte_be_to_cpu_32(th->sent_seq) + off);
	if (off + pl < total)
		th->tcp_flags &= (uint8_t) ~(PSH | FIN);
	return hl + pl;
}

/* The frame @p m and the kernel's segment @p seg are the same but for the
 * fields GSO rewrites. */
static void same_but_gso_fields(struct rte_mbuf *m, const uint8_t *seg, unsigned seg_len)
{
	assert_int_equal(rte_pktmbuf_pkt_len(m), seg_len);
	uint8_t want[2048];
	const uint8_t *w = rte_pktmbuf_read(m, 0, seg_len, want);
	static const unsigned skip[][2] = {{16, 2}, {18, 2}, {24, 2}, {34 + 16, 2}};
	unsigned at = 0;
	for (unsigned k = 0; k <= RTE_DIM(skip); k++) {
		unsigned end = k < RTE_DIM(skip) ? skip[k][0] : seg_len;
		assert_memory_equal(w + at, seg + at, end - at);
		if (k < RTE_DIM(skip))
			at = skip[k][0] + skip[k][1];
	}
}

static void check_group_round_trip(struct rte_mbuf **pkts, const struct vpkt_group *g)
{
	static uint8_t buf[70000];
	struct vpkt_head vh;
	unsigned len = gather(pkts, g, buf, &vh);
	assert_int_equal(len, g->head_len + g->payload);
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(buf + 14);
	/* the header the kernel takes: its lengths and sums right for the whole */
	assert_int_equal(rte_be_to_cpu_16(ip->total_length), len - 14);
	assert_int_equal(rte_ipv4_cksum(ip), 0); /* summed over a right checksum field */
	const struct rte_tcp_hdr *th = (const struct rte_tcp_hdr *)(buf + 34);
	assert_int_equal(th->cksum, rte_ipv4_phdr_cksum(ip, 0));
	assert_int_equal(vh.v.flags, VIRTIO_NET_HDR_F_NEEDS_CSUM);
	assert_int_equal(vh.v.csum_start, 34);
	assert_int_equal(vh.v.csum_offset, 16);
	assert_int_equal(vh.v.gso_type, VIRTIO_NET_HDR_GSO_TCPV4);
	assert_int_equal(vh.v.gso_size, g->gso_size);
	assert_int_equal(vh.v.hdr_len, g->head_len);
	for (unsigned i = 0; i < g->n; i++) {
		uint8_t seg[2048];
		unsigned sl = gso_cut(buf, len, g->head_len, g->gso_size, i, seg);
		same_but_gso_fields(pkts[g->first + i], seg, sl);
	}
}

/* A flight of full segments and a short last one with PSH: one GSO frame
 * that the kernel cuts back into the same segments. */
static void test_flight_becomes_one_gso_frame(void **state)
{
	(void)state;
	struct rte_mbuf *p[5];
	for (unsigned i = 0; i < 5; i++)
		p[i] = frame(&(struct fr){.seq = 1000 + i * MSS,
					  .len = i < 4 ? MSS : 300,
					  .flags = i < 4 ? ACK : ACK | PSH,
					  .split = i % 2});
	struct vpkt_group g[5];
	assert_int_equal(net_vpkt_plan(p, 5, g, 1000, 0), 1);
	assert_int_equal(g[0].n, 5);
	assert_int_equal(g[0].gso_size, MSS);
	assert_int_equal(g[0].payload, 4 * MSS + 300);
	assert_int_equal(g[0].head_len, HL);
	check_group_round_trip(p, &g[0]);
	free_all(p, 5);
}

/* What GSO cannot reproduce starts a new frame: a hole in the sequence, a
 * short segment before the last, PSH or FIN before the last, another
 * flow, another ACK or timestamp, a frame lib/net summed, a non-TCP frame. */
static void test_what_breaks_a_run(void **state)
{
	(void)state;
	struct fr base = {.seq = 5000, .len = MSS};
	struct {
		const char *why;
		struct fr f;
	} cases[] = {
	    {"hole", {.seq = 5000 + 2 * MSS + 1, .len = MSS}},
	    {"psh before", {.seq = 0, .len = 0}},
	    {"other flow", {.seq = 5000 + MSS, .len = MSS, .sport = 81}},
	    {"other ack", {.seq = 5000 + MSS, .len = MSS, .ack = 78}},
	    {"other tsval", {.seq = 5000 + MSS, .len = MSS, .tsval = 1001}},
	    {"summed", {.seq = 5000 + MSS, .len = MSS, .no_csum = true}},
	    {"longer", {.seq = 5000 + MSS, .len = MSS + 1}},
	};
	for (unsigned c = 0; c < RTE_DIM(cases); c++) {
		struct rte_mbuf *p[2];
		struct fr a = base, b = cases[c].f;
		if (c == 0)
			a.seq = 5000 + MSS; /* b is one byte past a's end */
		if (c == 1) {
			a.flags = ACK | PSH;
			b = (struct fr){.seq = 5000 + MSS, .len = MSS};
		}
		p[0] = frame(&a);
		p[1] = frame(&b);
		struct vpkt_group g[2];
		unsigned k = net_vpkt_plan(p, 2, g, 1000, 0);
		if (k != 2)
			fail_msg("case '%s': %u group(s), wanted 2", cases[c].why, k);
		assert_int_equal(g[0].n, 1);
		assert_int_equal(g[1].first, 1);
		free_all(p, 2);
	}
	/* a short segment ends a run: full, short | full */
	{
		struct rte_mbuf *q[3];
		q[0] = frame(&(struct fr){.seq = 100, .len = MSS});
		q[1] = frame(&(struct fr){.seq = 100 + MSS, .len = 1000});
		q[2] = frame(&(struct fr){.seq = 100 + MSS + 1000, .len = MSS});
		struct vpkt_group gq[3];
		assert_int_equal(net_vpkt_plan(q, 3, gq, 1000, 0), 2);
		assert_int_equal(gq[0].n, 2);
		assert_int_equal(gq[1].first, 2);
		check_group_round_trip(q, &gq[0]);
		free_all(q, 3);
	}
	/* an ARP frame between two runs */
	struct rte_mbuf *p[3];
	p[0] = frame(&base);
	p[1] = rte_pktmbuf_alloc(pool);
	memset(rte_pktmbuf_append(p[1], 60), 0, 60);
	p[2] = frame(&(struct fr){.seq = 5000 + MSS, .len = MSS});
	struct vpkt_group g[3];
	assert_int_equal(net_vpkt_plan(p, 3, g, 1000, 0), 3);
	assert_int_equal(g[1].head_len, 0);
	struct vpkt_head vh;
	assert_int_equal(net_vpkt_group_head(p, &g[1], &vh), sizeof(vh.v));
	assert_int_equal(vh.v.flags, 0);
	assert_int_equal(vh.v.gso_type, VIRTIO_NET_HDR_GSO_NONE);
	free_all(p, 3);
}

/* A lone TCP frame goes as it is, its headers from its own mbuf (the
 * group's header is the virtio-net header alone); the kernel finishes
 * its checksum. */
static void test_lone_segment(void **state)
{
	(void)state;
	struct rte_mbuf *p =
	    frame(&(struct fr){.seq = 1, .len = 20, .flags = ACK | PSH, .split = true});
	struct vpkt_group g;
	assert_int_equal(net_vpkt_plan(&p, 1, &g, 1000, 0), 1);
	assert_int_equal(g.n, 1);
	struct vpkt_head vh;
	unsigned hb = net_vpkt_group_head(&p, &g, &vh);
	assert_int_equal(hb, sizeof(vh.v));
	static uint8_t buf[4096], want[4096];
	unsigned len = gather(&p, &g, buf, &vh);
	assert_int_equal(len, HL + 20);
	const uint8_t *w = rte_pktmbuf_read(p, 0, len, want);
	assert_non_null(w);
	assert_memory_equal(buf, w, len); /* the frame's own bytes, headers and all */
	assert_int_equal(vh.v.flags, VIRTIO_NET_HDR_F_NEEDS_CSUM);
	assert_int_equal(vh.v.csum_start, 34);
	assert_int_equal(vh.v.csum_offset, 16);
	assert_int_equal(vh.v.hdr_len, HL);
	assert_int_equal(vh.v.gso_type, VIRTIO_NET_HDR_GSO_NONE);
	rte_pktmbuf_free(p);
}

/* A run longer than an IPv4 packet holds is cut below 64 KiB; every
 * group still round-trips. */
static void test_runs_stay_under_64k(void **state)
{
	(void)state;
	enum { N = 100 };
	struct rte_mbuf *p[N];
	for (unsigned i = 0; i < N; i++)
		p[i] = frame(&(struct fr){.seq = 7 + i * MSS, .len = MSS, .split = true});
	struct vpkt_group g[N];
	unsigned k = net_vpkt_plan(p, N, g, 10000, 0);
	unsigned covered = 0;
	for (unsigned i = 0; i < k; i++) {
		assert_int_equal(g[i].first, covered);
		assert_true(g[i].head_len - 14 + g[i].payload <= 65535);
		if (g[i].n > 1)
			check_group_round_trip(p, &g[i]);
		covered += g[i].n;
	}
	assert_int_equal(covered, N);
	assert_true(k >= 3);			      /* 100 x 1,448 bytes need three */
	assert_int_equal(g[0].n, (65535 - 52) / MSS); /* as many as fit */
	free_all(p, N);
}

/* The iovec budget: frames that would pass it are left for the next call. */
static void test_iovec_budget(void **state)
{
	(void)state;
	struct rte_mbuf *p[4];
	for (unsigned i = 0; i < 4; i++) /* each: header + payload mbuf = 2 links */
		p[i] = frame(&(struct fr){.seq = 9 + i * MSS, .len = MSS, .split = true});
	struct vpkt_group g[4];
	/* a group costs one iovec for its header plus its frames' links */
	unsigned k = net_vpkt_plan(p, 4, g, 1 + 2 * 2, 0);
	assert_int_equal(k, 1);
	assert_int_equal(g[0].n, 2);
	assert_int_equal(net_vpkt_plan(p, 4, g, 2, 0), 0);
	free_all(p, 4);
}

/* A retransmission (the L4 layer's mark, arn_l4.h's ARN_L4_DYNFLAG_REXMIT)
 * is a frame of its own, between runs that merge as before: one drop must
 * not take it together with its neighbours (issue 16: whole GSO frames of
 * repairs lost at 5% loss cost an RTO each). Two marked in a row are two
 * frames; without the mark registered (0), the five make one frame. */
static void test_retransmission_goes_alone(void **state)
{
	(void)state;
	const uint64_t mark = UINT64_C(1) << 60;
	struct rte_mbuf *p[5];
	for (unsigned i = 0; i < 5; i++)
		p[i] = frame(&(struct fr){.seq = 7000 + i * MSS, .len = MSS});
	p[2]->ol_flags |= mark;
	struct vpkt_group g[5];
	assert_int_equal(net_vpkt_plan(p, 5, g, 1000, mark), 3);
	assert_int_equal(g[0].n, 2);
	assert_int_equal(g[1].first, 2);
	assert_int_equal(g[1].n, 1);
	assert_int_equal(g[1].gso_size, 0);
	assert_int_equal(g[2].first, 3);
	assert_int_equal(g[2].n, 2);
	check_group_round_trip(p, &g[0]);
	check_group_round_trip(p, &g[2]);
	p[3]->ol_flags |= mark;
	assert_int_equal(net_vpkt_plan(p, 5, g, 1000, mark), 4);
	assert_int_equal(g[1].n, 1);
	assert_int_equal(g[2].first, 3);
	assert_int_equal(g[2].n, 1);
	assert_int_equal(g[3].first, 4);
	assert_int_equal(net_vpkt_plan(p, 5, g, 1000, 0), 1);
	assert_int_equal(g[0].n, 5);
	free_all(p, 5);
}

/* Received: what the kernel vouches for is GOOD; a TCP super-segment is
 * LRO with the sender's segment size; others are refused. */
static void test_rx_flags(void **state)
{
	(void)state;
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	struct virtio_net_hdr v = {0};
	assert_true(net_vpkt_rx_flags(m, &v));
	assert_int_equal(m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK, 0);
	v.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	v.gso_type = VIRTIO_NET_HDR_GSO_TCPV4 | VIRTIO_NET_HDR_GSO_ECN;
	v.gso_size = 1448;
	assert_true(net_vpkt_rx_flags(m, &v));
	assert_int_equal(m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK, RTE_MBUF_F_RX_L4_CKSUM_GOOD);
	assert_true(m->ol_flags & RTE_MBUF_F_RX_LRO);
	assert_int_equal(m->tso_segsz, 1448);
	v.flags = VIRTIO_NET_HDR_F_DATA_VALID;
	v.gso_type = VIRTIO_NET_HDR_GSO_NONE;
	assert_true(net_vpkt_rx_flags(m, &v));
	assert_int_equal(m->ol_flags, RTE_MBUF_F_RX_L4_CKSUM_GOOD);
	v.gso_type = VIRTIO_NET_HDR_GSO_UDP;
	assert_false(net_vpkt_rx_flags(m, &v));
	v.gso_type = VIRTIO_NET_HDR_GSO_TCPV6;
	assert_false(net_vpkt_rx_flags(m, &v));
	rte_pktmbuf_free(m);
}

/* ---- the receive side on a socketpair ------------------------------------------ */

/* A datagram socketpair standing in for the AF_PACKET socket: [0] is the
 * queue's, [1] the "kernel's". */
static int rx_pair(int sv[2])
{
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) != 0)
		return -1;
	int big = 1 << 22;
	setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	return 0;
}

static uint32_t rng_next(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

/* Send a frame of @p len bytes, each byte from @p seed, behind a
 * virtio-net header (a TCP super-segment's when it is over 1,514). */
static void rx_send(int fd, uint32_t len, uint32_t seed)
{
	static uint8_t buf[sizeof(struct virtio_net_hdr) + 70000];
	struct virtio_net_hdr v = {0};
	if (len > 1514) {
		v.gso_type = VIRTIO_NET_HDR_GSO_TCPV4;
		v.gso_size = 1448;
	}
	memcpy(buf, &v, sizeof(v));
	uint32_t x = seed | 1;
	for (uint32_t i = 0; i < len; i++)
		buf[sizeof(v) + i] = (uint8_t)rng_next(&x);
	assert_int_equal(send(fd, buf, sizeof(v) + len, MSG_DONTWAIT), (ssize_t)(sizeof(v) + len));
}

/* Chain @p m is the frame rx_send made of @p len and @p seed, in links of
 * @p room bytes each but the last. */
static void rx_check(struct rte_mbuf *m, uint32_t len, uint32_t seed, unsigned room)
{
	assert_int_equal(m->pkt_len, len);
	assert_int_equal(m->nb_segs, (len + room - 1) / room);
	assert_int_equal(!!(m->ol_flags & RTE_MBUF_F_RX_LRO), len > 1514);
	uint32_t x = seed | 1, at = 0;
	for (struct rte_mbuf *l = m; l; l = l->next) {
		assert_int_equal(l->data_off, RTE_PKTMBUF_HEADROOM);
		assert_true(l->data_len == room || (l->next == NULL && l->data_len <= room));
		const uint8_t *d = rte_pktmbuf_mtod(l, const uint8_t *);
		for (unsigned i = 0; i < l->data_len; i++, at++)
			if (d[i] != (uint8_t)rng_next(&x))
				fail_msg("frame of %u bytes: byte %u differs", len, at);
	}
	assert_int_equal(at, len);
}

/* A queue on a socketpair, its links from a pool of its own. */
struct rx_rig {
	struct rte_mempool *pool;
	unsigned mbufs, room; /* the pool's size; a link's bytes */
	int sv[2];
	struct vpkt_q *q;
};

static void rig_up(struct rx_rig *r, const char *name, unsigned mbufs)
{
	r->pool = rte_pktmbuf_pool_create(name, mbufs, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, 0);
	assert_non_null(r->pool);
	r->mbufs = mbufs;
	r->room = rte_pktmbuf_data_room_size(r->pool) - RTE_PKTMBUF_HEADROOM;
	assert_int_equal(rx_pair(r->sv), 0);
	r->q = net_vpkt_q_new(r->sv[0], r->pool);
	assert_non_null(r->q);
}

/* The queue freed: every link back in the pool. */
static void rig_down(struct rx_rig *r)
{
	net_vpkt_q_free(r->q);
	assert_int_equal(rte_mempool_avail_count(r->pool), r->mbufs);
	close(r->sv[0]);
	close(r->sv[1]);
	rte_mempool_free(r->pool);
}

/* Frames of every size class, in bursts of one to eight, come out as the
 * chains they went in as, byte for byte: 1-link frames that leave the
 * rest of their slot's links offered (and, every thirty-odd frames, moved
 * back to the front of the slot), 64 KiB super-segments that take every
 * link, and sizes between. No link leaks: the pool is whole once the
 * queue is freed. */
static void test_rx_chains_byte_exact(void **state)
{
	(void)state;
	struct rx_rig r;
	rig_up(&r, "vpkt_rx", 1023);
	unsigned room = r.room;
	struct vpkt_rx_count c = {0};
	uint32_t x = 12345, frames = 0, gro = 0;
	for (unsigned burst = 0; burst < 600; burst++) {
		unsigned n = 1 + rng_next(&x) % 8;
		uint32_t len[8], seed[8], bytes = 0;
		for (unsigned i = 0; i < n; i++) {
			uint32_t v = rng_next(&x);
			switch (v % 5) {
			case 0: /* an ACK */
				len[i] = 60 + v / 5 % 40;
				break;
			case 1: /* a full segment */
				len[i] = 1514;
				break;
			case 2: /* a full super-segment */
				len[i] = 14 + 65535;
				break;
			case 3: /* one byte either side of a link's end, or on it */
				len[i] = room * (1 + v / 5 % 8) + v / 40 % 3 - 1;
				break;
			default:
				len[i] = 61 + v / 5 % 65488;
				break;
			}
			/* under the socket's default send buffer (wmem_max's
			 * 212,992 doubled): a burst past it would block */
			if (i > 0 && bytes + len[i] > 300000) {
				n = i;
				break;
			}
			bytes += len[i];
			seed[i] = rng_next(&x);
			rx_send(r.sv[1], len[i], seed[i]);
			gro += len[i] > 1514;
		}
		/* a burst of n may take several calls: each offers the kernel
		 * what it asks for, up to eight frames */
		unsigned got = 0, tries = 0;
		while (got < n) {
			struct rte_mbuf *m[32];
			uint16_t k = net_vpkt_q_rx(r.q, m, (uint16_t)(1 + rng_next(&x) % 32), &c);
			for (unsigned j = 0; j < k; j++, got++) {
				rx_check(m[j], len[got], seed[got], room);
				rte_pktmbuf_free(m[j]);
			}
			assert_true(++tries < 100);
		}
		frames += n;
	}
	assert_int_equal(c.nomem + c.oversize + c.gso_type, 0);
	assert_int_equal(c.gro, gro);
	/* nothing left: a call finds no frame */
	struct rte_mbuf *m[8];
	assert_int_equal(net_vpkt_q_rx(r.q, m, 8, &c), 0);
	assert_true(frames > 2000);
	rig_down(&r);
}

/* A frame larger than its chain (MSG_TRUNC) and a datagram of no frame
 * are counted and dropped; the slot is offered again whole, and the
 * frames after them arrive intact. */
static void test_rx_oversize_and_empty(void **state)
{
	(void)state;
	struct rx_rig r;
	rig_up(&r, "vpkt_rx2", 1023);
	unsigned room = r.room;
	unsigned links = (14 + 65535 + 4 + room - 1) / room;
	struct vpkt_rx_count c = {0};
	struct rte_mbuf *m[8];
	for (unsigned round = 0; round < 40; round++) {
		rx_send(r.sv[1], 100, round);
		rx_send(r.sv[1], links * room + 1, 7); /* one byte past the chain */
		uint8_t tiny[4] = {0};
		assert_int_equal(send(r.sv[1], tiny, sizeof(tiny), MSG_DONTWAIT), 4);
		rx_send(r.sv[1], 1514, round + 1);
		unsigned got = 0;
		uint32_t want_len[2] = {100, 1514}, want_seed[2] = {round, round + 1};
		for (unsigned tries = 0; got < 2 && tries < 10; tries++) {
			uint16_t k = net_vpkt_q_rx(r.q, m, 8, &c);
			for (unsigned j = 0; j < k; j++, got++) {
				rx_check(m[j], want_len[got], want_seed[got], room);
				rte_pktmbuf_free(m[j]);
			}
		}
		assert_int_equal(got, 2);
	}
	assert_int_equal(c.oversize, 80);
	assert_int_equal(c.nomem + c.gso_type, 0);
	rig_down(&r);
}

/* The pool empty: the call offers nothing, says so, and loses nothing;
 * with mbufs back, the frame waiting is received. */
static void test_rx_pool_empty(void **state)
{
	(void)state;
	struct rx_rig r;
	rig_up(&r, "vpkt_rx3", 255);
	struct rte_mbuf *hold[255];
	unsigned held = 0;
	while (held < 255 && (hold[held] = rte_pktmbuf_alloc(r.pool)) != NULL)
		held++;
	rx_send(r.sv[1], 1514, 99);
	struct vpkt_rx_count c = {0};
	struct rte_mbuf *m[8];
	assert_int_equal(net_vpkt_q_rx(r.q, m, 8, &c), 0);
	assert_int_equal(c.nomem, 1);
	rte_pktmbuf_free_bulk(hold, held);
	assert_int_equal(net_vpkt_q_rx(r.q, m, 8, &c), 1);
	rx_check(m[0], 1514, 99, r.room);
	rte_pktmbuf_free(m[0]);
	rig_down(&r);
}

int main(void)
{
	char *argv[] = {"test_vpkt", "--no-huge", "--no-pci",	 "--no-shconf",	  "-m", "128",
			"-l",	     "0",	  "--log-level", "lib.eal:error", NULL};
	if (rte_eal_init(RTE_DIM(argv) - 1, argv) < 0)
		return 1;
	pool = rte_pktmbuf_pool_create("vpkt_test", 1023, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, 0);
	if (pool == NULL)
		return 1;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_flight_becomes_one_gso_frame),
	    cmocka_unit_test(test_what_breaks_a_run),
	    cmocka_unit_test(test_lone_segment),
	    cmocka_unit_test(test_runs_stay_under_64k),
	    cmocka_unit_test(test_iovec_budget),
	    cmocka_unit_test(test_retransmission_goes_alone),
	    cmocka_unit_test(test_rx_flags),
	    cmocka_unit_test(test_rx_chains_byte_exact),
	    cmocka_unit_test(test_rx_oversize_and_empty),
	    cmocka_unit_test(test_rx_pool_empty),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	rte_eal_cleanup();
	return rc;
}
