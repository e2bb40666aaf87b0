/*
 * lib/tcp's receive path for mbuf chains (tcp_in.c's chain_input): a
 * kernel port's GRO super-segment, one TCP header over up to 64 KB of
 * payload in up to 64 links whose boundaries are not the sender's
 * segments'. Against the fake lib/net (tcp_fake_net.h's fake_chain): each
 * test names what it proves. Every test ends with the mbuf pool full
 * again: a leaked link fails it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tcp_fake_net.h"

#define US FAKE_ADDR(0)	 /* 198.18.0.1: the stack under test */
#define PEER 0xc6120063u /* 198.18.0.99: the crafted peer */
#define LPORT 80
#define PMSS 1448
#define SPAN (1u << 20)
/* a GRO super-segment's payload: 45 segments of 1448 */
#define SUPER (45u * PMSS)
/* payload in a chain's first link: an mbuf's 2048 bytes less 66 of headers */
#define FIRST 1982u
#define LINK 2048u

static struct arn_lcore *lc = &fake_lc[0];
static unsigned pool_full;
static uint8_t stream[SPAN];

struct peer {
	uint16_t port;
	struct arn_tcp_conn *c;
	uint32_t isn; /* the peer's first data byte's sequence */
	uint32_t ack; /* what it acknowledges */
	uint32_t read;
	bool hold; /* its application reads nothing */
	bool eof;
};
static struct peer peers[4];
static unsigned n_peers;

static struct peer *peer_of(const struct arn_tcp_conn *c)
{
	for (unsigned i = 0; i < n_peers; i++)
		if (peers[i].port == c->rport)
			return &peers[i];
	fail();
	return NULL;
}

static int t_accept(struct arn_tcp_conn *c, void *u)
{
	(void)u;
	peer_of(c)->c = c;
	return 0;
}

/* reads everything (unless held), checking every byte */
static void t_data(struct arn_tcp_conn *c, struct rte_mbuf *head, uint32_t len)
{
	struct peer *p = peer_of(c);
	if (p->hold)
		return;
	uint32_t k = 0;
	for (struct rte_mbuf *m = head; m && k < len; m = m->next)
		for (uint32_t i = 0; i < m->data_len && k < len; i++, k++)
			assert_int_equal(rte_pktmbuf_mtod(m, uint8_t *)[i], stream[p->read + k]);
	p->read += len;
	arn_tcp_rx_consume(c, len);
}

static void t_eof(struct arn_tcp_conn *c)
{
	peer_of(c)->eof = true;
}

static const struct arn_tcp_ops t_ops = {.on_accept = t_accept, .on_data = t_data, .on_eof = t_eof};

static struct arn_dataplane dp_conf;

static int setup_with(uint32_t rcvbuf)
{
	n_peers = 0;
	memset(peers, 0, sizeof(peers));
	for (uint32_t i = 0; i < SPAN; i++)
		stream[i] = (uint8_t)((i * 2654435761u) >> 24);
	memset(&dp_conf, 0, sizeof(dp_conf));
	dp_conf.tcp_max_connections = 8;
	dp_conf.tcp_rcvbuf = rcvbuf;
	dp_conf.tcp_sndbuf = 64 * 1024;
	return fake_tcp_start(lc, &dp_conf, &pool_full, US, LPORT, &t_ops, 8) ? 0 : -1;
}

static int setup(void **state)
{
	(void)state;
	return setup_with(256 * 1024);
}

/* 16 KB: a super-segment is bigger than the window */
static int setup_small(void **state)
{
	(void)state;
	return setup_with(16 * 1024);
}

static int teardown(void **state)
{
	(void)state;
	arn_tcp_worker_fini(lc);
	fake_drain(lc);
	return fake_pool_full_again(pool_full);
}

static struct fake_opts popts(void)
{
	struct fake_opts o = fake_no_opts;
	o.ts = true;
	o.tsval = 5000;
	return o;
}

static struct peer *open_peer(uint16_t port)
{
	struct peer *p = &peers[n_peers++];
	p->port = port;
	struct fake_opts o = {.mss = 1460, .ws = 7, .sack_ok = true, .ts = true, .tsval = 5000};
	arn_tcp_input(lc, fake_seg(PEER, US, port, LPORT, TH_SYN, 999, 0, 65535, &o, NULL, 0));
	fake_advance(lc, 0);
	struct fake_out out;
	assert_true(fake_next(lc, &out));
	assert_int_equal(out.flags, TH_SYN | TH_ACK);
	p->isn = 1000;
	p->ack = out.seq + 1;
	struct fake_opts a = popts();
	arn_tcp_input(lc,
		      fake_seg(PEER, US, port, LPORT, TH_ACK, p->isn, p->ack, 65535, &a, NULL, 0));
	assert_non_null(p->c);
	assert_int_equal(p->c->state, TCPS_ESTABLISHED);
	fake_drain(lc);
	return p;
}

/* @p len bytes split as a GRO chain: @p first in the first link, then
 * links of @p link. @return the number of links. */
static unsigned split(uint32_t len, uint32_t first, uint32_t link, uint32_t *sizes)
{
	unsigned n = 0;
	sizes[n++] = RTE_MIN(first, len);
	for (uint32_t off = sizes[0]; off < len; off += sizes[n - 1])
		sizes[n++] = RTE_MIN(link, len - off);
	return n;
}

/* Stream bytes [@p off, @p off + len) with @p flags, as one chain
 * (@p chain) or as the same links sent as segments one by one, FIN and PSH
 * on the last. */
static void deliver(struct peer *p, bool chain, uint8_t flags, uint32_t off, uint32_t len,
		    const uint32_t *sizes, unsigned n, uint16_t tso)
{
	struct fake_opts o = popts();
	if (chain) {
		arn_tcp_input(lc, fake_chain(PEER, US, p->port, LPORT, flags, p->isn + off, p->ack,
					     65535, &o, stream + off, len, sizes, n, tso));
		return;
	}
	uint32_t k = off;
	for (unsigned i = 0; i < n; i++) {
		uint8_t f = i + 1 < n ? (uint8_t)(flags & ~(TH_FIN | TH_PSH)) : flags;
		arn_tcp_input(lc, fake_seg(PEER, US, p->port, LPORT, f, p->isn + k, p->ack, 65535,
					   &o, stream + k, sizes[i]));
		k += sizes[i];
	}
}

/* The receive queue holds stream bytes [@p from, ...) in single-segment
 * mbufs, as many bytes as it says. */
static void check_rcvq(const struct arn_tcp_conn *c, uint32_t from)
{
	uint32_t k = 0, n = 0;
	for (const struct rte_mbuf *m = c->rcvq.head; m; m = m->next, n++) {
		assert_int_equal(m->nb_segs, 1);
		assert_int_equal(m->pkt_len, m->data_len);
		assert_memory_equal(rte_pktmbuf_mtod(m, const uint8_t *), stream + from + k,
				    m->data_len);
		k += m->data_len;
	}
	assert_int_equal(k, c->rcvq.bytes);
	assert_int_equal(n, c->rcvq.n);
}

/* Poll; @return how many segments went out, the last in @p last. */
static unsigned poll_out(struct fake_out *last)
{
	fake_advance(lc, 0);
	unsigned n = 0;
	while (fake_next(lc, last))
		n++;
	return n;
}

/* An in-order 64 KB chain (45 segments of 1448 in 32 links) arrives
 * byte-exact in the receive queue, one single-segment mbuf per link, is
 * counted (chains_received, chain_segments by tso_segsz, bytes_received),
 * and earns exactly one ACK, for all of it. */
static void test_chain_in_order_64k_one_ack(void **state)
{
	(void)state;
	struct peer *p = open_peer(40000);
	p->hold = true;
	uint32_t sizes[64];
	unsigned n = split(SUPER, FIRST, LINK, sizes);
	assert_int_equal(n, 32);
	uint64_t b0 = cnt(ARN_TCP_C_BYTES_IN);
	unsigned avail0 = rte_mempool_avail_count(fake_pool);
	deliver(p, true, TH_ACK | TH_PSH, 0, SUPER, sizes, n, PMSS);
	assert_int_equal(p->c->rcv_nxt, p->isn + SUPER);
	assert_int_equal(p->c->rcvq.bytes, SUPER);
	assert_int_equal(p->c->rcvq.n, n);
	check_rcvq(p->c, 0);
	assert_int_equal(cnt(ARN_TCP_C_GRO_IN), 1);
	assert_int_equal(cnt(ARN_TCP_C_GRO_SEGS), 45);
	assert_int_equal(cnt(ARN_TCP_C_BYTES_IN) - b0, SUPER);
	/* what the queue does not hold went back: only its links are out */
	assert_int_equal(rte_mempool_avail_count(fake_pool), avail0 - n);
	struct fake_out out;
	assert_int_equal(poll_out(&out), 1);
	assert_int_equal(out.flags, TH_ACK);
	assert_int_equal(out.ack, p->isn + SUPER);
	/* the application reads it all */
	p->hold = false;
	static uint8_t got[SUPER];
	assert_int_equal(arn_tcp_read(p->c, got, sizeof(got)), SUPER);
	assert_memory_equal(got, stream, SUPER);
}

/* The received-packet counters count a chain once, as Linux counts a
 * GRO packet, not once per link (their units would otherwise change with
 * the port's mbuf size): acks_coalesced does not count the chain's own
 * links sharing its one ACK; a chain received again counts one
 * duplicate_data, and its bytes in duplicate_bytes; segments sent one by
 * one still count each. */
static void test_chain_counted_once(void **state)
{
	(void)state;
	struct peer *p = open_peer(40010);
	p->hold = true;
	uint32_t sizes[64];
	/* links of 1,000 bytes, which also go one by one as segments */
	unsigned n = split(20000, 1000, 1000, sizes);
	assert_int_equal(n, 20);
	uint64_t coal = cnt(ARN_TCP_C_ACKS_COALESCED), fast = cnt(ARN_TCP_C_FAST_PATH);
	uint64_t dup = cnt(ARN_TCP_C_DUP_DATA), dupb = cnt(ARN_TCP_C_DUP_BYTES);
	deliver(p, true, TH_ACK, 0, 20000, sizes, n, PMSS);
	assert_int_equal(p->c->rcv_nxt, p->isn + 20000);
	assert_int_equal(cnt(ARN_TCP_C_ACKS_COALESCED), coal);
	assert_true(cnt(ARN_TCP_C_FAST_PATH) - fast <= 1);
	struct fake_out out;
	assert_int_equal(poll_out(&out), 1);
	/* the same chain again: all of it duplicate */
	deliver(p, true, TH_ACK, 0, 20000, sizes, n, PMSS);
	assert_int_equal(cnt(ARN_TCP_C_DUP_DATA) - dup, 1);
	assert_int_equal(cnt(ARN_TCP_C_DUP_BYTES) - dupb, 20000);
	fake_drain(lc);
	/* the same links as segments one by one: each counts */
	deliver(p, false, TH_ACK, 0, 20000, sizes, n, PMSS);
	assert_int_equal(cnt(ARN_TCP_C_DUP_DATA) - dup, 1 + n);
	assert_int_equal(cnt(ARN_TCP_C_DUP_BYTES) - dupb, 2 * 20000);
	fake_drain(lc);
}

/* A chain partly outside the receive window (its first 300 bytes
 * received already, its tail past the right edge) is trimmed exactly as
 * its links sent as single segments are: the same bytes queued, the same
 * rcv_nxt (the offered right edge), the same ACK number. */
static void test_chain_trimmed_as_single_segments(void **state)
{
	(void)state;
	struct peer *pc = open_peer(40001), *ps = open_peer(40002);
	uint32_t one[1] = {1000};
	uint32_t sizes[64];
	/* links a segment's mbuf can hold with its headers, for the
	 * single segments */
	unsigned n = split(30000, FIRST, 1900, sizes);
	uint32_t got_nxt[2], got_ack[2];
	for (int i = 0; i < 2; i++) {
		struct peer *p = i ? ps : pc;
		p->hold = true;
		deliver(p, false, TH_ACK, 0, 1000, one, 1, 0);
		struct fake_out out;
		poll_out(&out);
		uint32_t edge = p->c->rcv_adv;
		assert_true(seq_lt(edge, p->isn + 700 + 30000));
		deliver(p, i == 0, TH_ACK, 700, 30000, sizes, n, PMSS);
		assert_int_equal(p->c->rcv_nxt, edge);
		check_rcvq(p->c, 0);
		assert_int_equal(poll_out(&out), 1);
		got_nxt[i] = p->c->rcv_nxt - p->isn;
		got_ack[i] = out.ack - p->isn;
	}
	assert_int_equal(got_nxt[0], got_nxt[1]);
	assert_int_equal(got_ack[0], got_ack[1]);
	assert_int_equal(pc->c->rcvq.bytes, ps->c->rcvq.bytes);
}

/* An out-of-order chain is queued whole above its hole, with one ACK
 * whose SACK block covers all of it; the chain that fills the hole then
 * releases everything in order, byte-exact, with one ACK. */
static void test_chain_out_of_order_then_hole_filled(void **state)
{
	(void)state;
	struct peer *p = open_peer(40003);
	uint32_t sizes[64];
	unsigned n = split(20000, FIRST, LINK, sizes);
	uint64_t ooo0 = cnt(ARN_TCP_C_OUT_OF_ORDER);
	deliver(p, true, TH_ACK, 10000, 20000, sizes, n, PMSS);
	assert_int_equal(p->c->rcv_nxt, p->isn);
	assert_int_equal(p->c->oooq.bytes, 20000);
	assert_int_equal(p->c->oooq.n, n);
	/* one packet out of order, however many links it came in */
	assert_int_equal(cnt(ARN_TCP_C_OUT_OF_ORDER) - ooo0, 1);
	struct fake_out out;
	assert_int_equal(poll_out(&out), 1);
	assert_int_equal(out.ack, p->isn);
	assert_int_equal(out.o.n_sack, 1);
	assert_int_equal(out.o.sack[0].start, p->isn + 10000);
	assert_int_equal(out.o.sack[0].end, p->isn + 30000);
	n = split(10000, FIRST, LINK, sizes);
	deliver(p, true, TH_ACK, 0, 10000, sizes, n, PMSS);
	assert_int_equal(p->c->rcv_nxt, p->isn + 30000);
	assert_null(p->c->oooq.head);
	assert_int_equal(p->read, 30000); /* t_data checked every byte */
	assert_int_equal(poll_out(&out), 1);
	assert_int_equal(out.ack, p->isn + 30000);
	assert_int_equal(out.o.n_sack, 0);
}

/* A chain ending with FIN: its data first, then the FIN (only the last
 * link carries it): CLOSE_WAIT, on_eof, one ACK for data and FIN. */
static void test_chain_ending_with_fin(void **state)
{
	(void)state;
	struct peer *p = open_peer(40004);
	uint32_t sizes[64];
	unsigned n = split(5000, FIRST, LINK, sizes);
	deliver(p, true, TH_ACK | TH_PSH | TH_FIN, 0, 5000, sizes, n, PMSS);
	assert_int_equal(p->c->state, TCPS_CLOSE_WAIT);
	assert_int_equal(p->c->rcv_nxt, p->isn + 5001);
	assert_int_equal(p->read, 5000);
	assert_true(p->eof);
	struct fake_out out;
	assert_int_equal(poll_out(&out), 1);
	assert_int_equal(out.ack, p->isn + 5001);
}

/* A chain whose first link holds the headers alone is fine (its payload
 * starts in the second); one with an empty link, or whose TCP options
 * spill into the second link, or whose links do not add up to pkt_len,
 * is dropped as malformed, whole, and nothing of it stays. */
static void test_chain_malformed_dropped(void **state)
{
	(void)state;
	struct peer *p = open_peer(40005);
	struct fake_opts o = popts();
	/* headers alone in the first link: accepted */
	uint32_t ok[3] = {0, 2048, 952};
	deliver(p, true, TH_ACK, 0, 3000, ok, 3, PMSS);
	assert_int_equal(p->c->rcv_nxt, p->isn + 3000);
	assert_int_equal(cnt(ARN_TCP_C_MALFORMED), 0);
	unsigned avail = rte_mempool_avail_count(fake_pool);
	/* an empty link */
	uint32_t empty[3] = {FIRST, 0, 1018};
	deliver(p, true, TH_ACK, 3000, 3000, empty, 3, PMSS);
	assert_int_equal(cnt(ARN_TCP_C_MALFORMED), 1);
	/* options in the second link: IPv4 + 20 bytes of TCP header in the
	 * first, the 12 bytes of timestamps and the payload in the second */
	struct rte_mbuf *m = fake_seg(PEER, US, p->port, LPORT, TH_ACK, p->isn + 3000, p->ack,
				      65535, &o, stream + 3000, 100);
	struct rte_mbuf *m2 = rte_pktmbuf_alloc(fake_pool);
	assert_non_null(m2);
	memcpy(rte_pktmbuf_append(m2, 112), rte_pktmbuf_mtod_offset(m, uint8_t *, 40), 112);
	assert_int_equal(rte_pktmbuf_trim(m, 112), 0);
	assert_int_equal(rte_pktmbuf_chain(m, m2), 0);
	m->ol_flags |= RTE_MBUF_F_RX_L4_CKSUM_GOOD; /* only the layout is wrong */
	arn_tcp_input(lc, m);
	assert_int_equal(cnt(ARN_TCP_C_MALFORMED), 2);
	/* pkt_len beyond the links */
	uint32_t two[2] = {FIRST, 1018};
	m = fake_chain(PEER, US, p->port, LPORT, TH_ACK, p->isn + 3000, p->ack, 65535, &o,
		       stream + 3000, 3000, two, 2, PMSS);
	m->pkt_len += 1;
	arn_tcp_input(lc, m);
	assert_int_equal(cnt(ARN_TCP_C_MALFORMED), 3);
	assert_int_equal(p->c->rcv_nxt, p->isn + 3000);
	assert_int_equal(rte_mempool_avail_count(fake_pool), avail);
}

/* The checksum over a chain without RTE_MBUF_F_RX_L4_CKSUM_GOOD: links of
 * odd lengths (sums at odd offsets) pass when right; one byte changed in
 * the third link fails it (bad_checksum, nothing queued); the same with
 * the kernel's GOOD flag is taken without summing. */
static void test_chain_checksum_over_links(void **state)
{
	(void)state;
	struct peer *p = open_peer(40006);
	uint32_t sizes[4] = {1001, 999, 1337, 3};
	deliver(p, true, TH_ACK, 0, 3340, sizes, 4, 0);
	assert_int_equal(p->c->rcv_nxt, p->isn + 3340);
	assert_int_equal(cnt(ARN_TCP_C_BAD_CKSUM), 0);
	struct fake_opts o = popts();
	struct rte_mbuf *m = fake_chain(PEER, US, p->port, LPORT, TH_ACK, p->isn + 3340, p->ack,
					65535, &o, stream + 3340, 3340, sizes, 4, 0);
	rte_pktmbuf_mtod(m->next->next, uint8_t *)[7] ^= 0x40;
	arn_tcp_input(lc, m);
	assert_int_equal(cnt(ARN_TCP_C_BAD_CKSUM), 1);
	assert_int_equal(p->c->rcv_nxt, p->isn + 3340);
	m = fake_chain(PEER, US, p->port, LPORT, TH_ACK, p->isn + 3340, p->ack, 65535, &o,
		       stream + 3340, 3340, sizes, 4, 0);
	m->ol_flags |= RTE_MBUF_F_RX_L4_CKSUM_GOOD;
	arn_tcp_input(lc, m);
	assert_int_equal(cnt(ARN_TCP_C_BAD_CKSUM), 1);
	assert_int_equal(p->c->rcv_nxt, p->isn + 6680);
	assert_int_equal(p->read, 6680);
}

/* The delayed-ACK rule counts the sender's segments, not links: a
 * super-segment of 3 segments (tso_segsz 1448) in 2 links earns an ACK at
 * once; a 2-link chain without RTE_MBUF_F_RX_LRO (one segment, only split
 * by the port) is one segment, whose ACK is delayed. */
static void test_chain_ack_policy_counts_sender_segments(void **state)
{
	(void)state;
	struct peer *p = open_peer(40007);
	struct arn_tcp_conn *c = p->c;
	/* not reading: a read of 2 MSS would send a window update */
	p->hold = true;
	/* out of quick-ACK mode, data arriving steadily */
	c->quickack = 0;
	c->last_rcv_ms = c->wk->now_ms;
	c->segs_unacked = 0;
	uint32_t sizes[2] = {FIRST, 1000};
	deliver(p, true, TH_ACK, 0, FIRST + 1000, sizes, 2, PMSS);
	struct fake_out out;
	assert_int_equal(poll_out(&out), 1);
	assert_int_equal(out.ack, p->isn + FIRST + 1000);
	assert_int_equal(c->segs_unacked, 0);
	deliver(p, true, TH_ACK, FIRST + 1000, FIRST + 1000, sizes, 2, 0);
	assert_int_equal(c->segs_unacked, 1);
	assert_int_equal(poll_out(&out), 0);
	assert_true(c->t_delack != 0);
	fake_advance(lc, TCP_DELACK_MS + 1);
	assert_true(fake_next(lc, &out));
	assert_int_equal(out.ack, p->isn + 2 * (FIRST + 1000));
}

/* An attacker's chains far above rcv_nxt, of tiny links (64 of 8 bytes
 * each, a hole between chains), pin no more mbufs than the connection's
 * budget (rmem_max, tcp_rmem.c) and the worker's out-of-order bound, as
 * the same links sent as single segments would not either. */
static void test_chain_ooo_attack_bounded(void **state)
{
	(void)state;
	struct peer *pc = open_peer(40008), *ps = open_peer(40009);
	uint32_t sizes[64];
	for (unsigned i = 0; i < 64; i++)
		sizes[i] = 8;
	unsigned held[2] = {0, 0};
	for (int i = 0; i < 2; i++) {
		struct peer *p = i ? ps : pc;
		struct arn_tcp_conn *c = p->c;
		c->wk->rmem_grow_max = 0;
		uint32_t budget = c->rmem_max;
		for (uint32_t k = 0; k < 200; k++) {
			uint32_t off = 2000 + k * 1000;
			if (seq_geq(p->isn + off + 512, c->rcv_adv))
				break;
			deliver(p, i == 0, TH_ACK, off, 512, sizes, 64, 0);
			assert_true(c->rcvq.n + c->oooq.n <= budget);
			assert_true(cnt(ARN_TCP_C_OOO_MBUFS) <= c->wk->ooo_max);
			held[i] = RTE_MAX(held[i], c->oooq.n);
			fake_advance(lc, 0);
			fake_drain(lc);
		}
		assert_true(pool_full - rte_mempool_avail_count(fake_pool) <= 2 * budget + 8);
		assert_int_equal(c->rcv_nxt, p->isn);
	}
	assert_true(held[0] <= held[1]);
	assert_true(held[0] > 0);
}

int main(void)
{
	fake_eal_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_chain_in_order_64k_one_ack, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_chain_counted_once, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_chain_trimmed_as_single_segments, setup_small,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_chain_out_of_order_then_hole_filled, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_chain_ending_with_fin, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_chain_malformed_dropped, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_chain_checksum_over_links, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_chain_ack_policy_counts_sender_segments, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_chain_ooo_attack_bounded, setup, teardown),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	fake_eal_fini();
	return rc;
}
