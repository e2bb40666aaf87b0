/*
 * lib/tcp's out-of-order queue and receive collapse (tcp_sack.c's
 * tcp_ooo_insert, tcp_rmem.c's collapse) against the fake lib/net
 * (tcp_fake_net.h): a crafted peer sends segments at chosen places above
 * holes, and each test checks the queue against a model of the bytes it
 * should hold, the SACK blocks against runs found by walking the queue (as
 * tcp_ooo_insert did for every segment before 2026-12-05), and counts the
 * walks.
 *
 * Every test ends with the mbuf pool full again: a leaked mbuf fails it.
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
#define PPORT 40000
#define PMSS 1448
#define SPAN (4u << 20) /* bytes of the stream a test may send */

static struct arn_lcore *lc = &fake_lc[0];
static struct arn_tcp_conn *conn;
static bool hold;	 /* the application reads nothing */
static uint32_t p_isn;	 /* the peer's first data byte's sequence */
static uint32_t p_ack;	 /* what the peer acknowledges */
static uint32_t app_off; /* stream offset the application has read up to */
static unsigned pool_full;

/* byte @p off of the peer's stream */
static uint8_t pat(uint32_t off)
{
	return (uint8_t)((off * 2654435761u) >> 24);
}

static int t_accept(struct arn_tcp_conn *c, void *u)
{
	(void)u;
	conn = c;
	return 0;
}

/* reads everything (unless held), checking every byte */
static void t_data(struct arn_tcp_conn *c, struct rte_mbuf *head, uint32_t len)
{
	if (hold)
		return;
	uint32_t k = 0;
	for (struct rte_mbuf *m = head; m && k < len; m = m->next)
		for (uint32_t i = 0; i < m->data_len && k < len; i++, k++)
			assert_int_equal(rte_pktmbuf_mtod(m, uint8_t *)[i], pat(app_off + k));
	app_off += len;
	arn_tcp_rx_consume(c, len);
}

static const struct arn_tcp_ops t_ops = {.on_accept = t_accept, .on_data = t_data};

static struct arn_dataplane dp_conf;

static int setup_with(uint32_t rcvbuf)
{
	conn = NULL;
	hold = false;
	app_off = 0;
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

/* 2 MiB: a flight of 1,000 segments above one hole fits the window */
static int setup_big(void **state)
{
	(void)state;
	return setup_with(2 << 20);
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

static void open_conn(void)
{
	struct fake_opts o = {.mss = 1460, .ws = 7, .sack_ok = true, .ts = true, .tsval = 5000};
	arn_tcp_input(lc, fake_seg(PEER, US, PPORT, LPORT, TH_SYN, 999, 0, 65535, &o, NULL, 0));
	fake_advance(lc, 0);
	struct fake_out out;
	assert_true(fake_next(lc, &out));
	assert_int_equal(out.flags, TH_SYN | TH_ACK);
	p_isn = 1000;
	p_ack = out.seq + 1;
	struct fake_opts a = popts();
	arn_tcp_input(lc,
		      fake_seg(PEER, US, PPORT, LPORT, TH_ACK, p_isn, p_ack, 65535, &a, NULL, 0));
	assert_non_null(conn);
	assert_int_equal(conn->state, TCPS_ESTABLISHED);
	fake_drain(lc);
	/* The tests set the connection's mbuf budget below what its window
	 * needs, to reach it: no grant may raise it again (rmem_take grants
	 * for an edge offered beyond the budget). */
	conn->wk->rmem_grow_max = 0;
}

/* ---- the model ------------------------------------------------------------------ */

static uint8_t held[SPAN]; /* stream offsets the out-of-order queue should hold */
static uint32_t top_off;   /* above every offset sent */

static uint32_t off_of(uint32_t seq)
{
	return seq - p_isn;
}

/* The blocks of the last ACK with SACK blocks (the D-SACK, if any, left
 * out), as the peer saw them. */
static struct tcp_sack_block wire[4];
static unsigned n_wire;

static void read_acks(void)
{
	struct fake_out out;
	fake_advance(lc, 0);
	while (fake_next(lc, &out)) {
		if (!(out.flags & TH_ACK) || out.o.n_sack == 0)
			continue;
		unsigned k = 0;
		n_wire = 0;
		/* RFC 2883: a first block below the ACK or inside the second
		 * is a D-SACK */
		if (seq_leq(out.o.sack[0].end, out.ack) ||
		    (out.o.n_sack > 1 && seq_geq(out.o.sack[0].start, out.o.sack[1].start) &&
		     seq_leq(out.o.sack[0].end, out.o.sack[1].end)))
			k = 1;
		for (; k < out.o.n_sack; k++)
			wire[n_wire++] = out.o.sack[k];
	}
}

/* The run of contiguous queued data holding @p seq, found by walking. */
static bool walk_run(const struct arn_tcp_conn *c, uint32_t seq, uint32_t *s, uint32_t *e)
{
	uint32_t rs = 0, re = 0;
	bool in = false;
	for (const struct rte_mbuf *x = c->oooq.head; x; x = x->next) {
		uint32_t xs = x->hash.usr;
		if (x == c->oooq.head || xs != re) {
			if (in)
				break;
			rs = xs;
		}
		re = xs + x->data_len;
		if (seq_leq(xs, seq) && seq_lt(seq, re))
			in = true;
	}
	*s = rs;
	*e = re;
	return in;
}

/* The queue holds what the model says, sorted, its bytes intact, its
 * counts right, ooo_tail_run is where the tail's run starts, and its
 * indexes match it. */
static void check_queue(const struct arn_tcp_conn *c)
{
	uint32_t n = 0, bytes = 0, last_end = 0, tail_run = 0;
	const struct rte_mbuf *last = NULL;
	static uint8_t seen[SPAN];
	uint32_t lo = off_of(c->rcv_nxt);
	if (top_off > lo)
		memset(seen + lo, 0, top_off - lo);
	for (const struct rte_mbuf *x = c->oooq.head; x; x = x->next) {
		uint32_t xs = x->hash.usr;
		assert_true(x->data_len > 0);
		assert_true(seq_gt(xs, c->rcv_nxt));
		if (last) {
			assert_true(seq_geq(xs, last_end));
			if (xs != last_end)
				tail_run = xs;
		} else {
			tail_run = xs;
		}
		uint32_t o0 = off_of(xs);
		assert_true(o0 + x->data_len <= SPAN);
		const uint8_t *b = rte_pktmbuf_mtod(x, const uint8_t *);
		bool intact = true;
		for (uint32_t i = 0; i < x->data_len; i++)
			intact &= b[i] == pat(o0 + i);
		assert_true(intact);
		memset(seen + o0, 1, x->data_len);
		n++;
		bytes += x->data_len;
		last_end = xs + x->data_len;
		last = x;
	}
	assert_ptr_equal(c->oooq.tail, last);
	assert_int_equal(c->oooq.n, n);
	assert_int_equal(c->oooq.bytes, bytes);
	if (last)
		assert_int_equal(c->ooo_tail_run, tail_run);
	if (top_off > lo)
		assert_memory_equal(seen + lo, held + lo, top_off - lo);
	/* its indexes (tcp_sack.c's trees of mbufs and runs) match it */
	assert_true(tcp_ooo_consistent(c));
}

/* The peer sends [@p off, @p off + @p len) of its stream. The model
 * follows: in order, what was held up to the new rcv_nxt leaves the queue;
 * out of order, the bytes are held unless the segment was dropped; a prune
 * empties it. @return whether an out-of-order segment brought new data
 * (and so a SACK block). */
static bool send_at(uint32_t off, uint32_t len)
{
	static uint8_t d[PMSS];
	for (uint32_t i = 0; i < len; i++)
		d[i] = pat(off + i);
	struct arn_tcp_conn *c = conn;
	uint32_t nxt = c->rcv_nxt, adv = c->rcv_adv;
	uint64_t dropped = cnt(ARN_TCP_C_OOO_DROPPED), pruned = cnt(ARN_TCP_C_OOO_PRUNED);
	uint64_t ooo = cnt(ARN_TCP_C_OUT_OF_ORDER);
	assert_true(off + len < SPAN);
	if (off + len > top_off)
		top_off = off + len;
	bool fresh = false;
	for (uint32_t i = 0; i < len; i++)
		if (seq_gt(p_isn + off + i, nxt) && !held[off + i])
			fresh = true;
	struct fake_opts o = popts();
	arn_tcp_input(
	    lc, fake_seg(PEER, US, PPORT, LPORT, TH_ACK, p_isn + off, p_ack, 65535, &o, d, len));
	if (cnt(ARN_TCP_C_OOO_PRUNED) != pruned)
		memset(held, 0, top_off);
	/* queued, as far as the window we offered reaches */
	bool queued =
	    cnt(ARN_TCP_C_OUT_OF_ORDER) == ooo + 1 && cnt(ARN_TCP_C_OOO_DROPPED) == dropped;
	if (queued)
		memset(held + off, 1, RTE_MIN(len, (uint32_t)(adv - (p_isn + off))));
	for (uint32_t o2 = off_of(nxt); o2 != off_of(c->rcv_nxt); o2++)
		held[o2] = 0;
	read_acks();
	check_queue(c);
	return queued && fresh;
}

/* An out-of-order segment with new data: its SACK block is the run that
 * holds it, first in what we keep and what the peer was sent. */
static void ooo_at(uint32_t off, uint32_t len)
{
	if (!send_at(off, len))
		return;
	uint32_t s, e;
	/* its first byte not queued before may have been trimmed: any of
	 * its bytes is in the run */
	assert_true(walk_run(conn, p_isn + off + len - 1, &s, &e));
	assert_int_equal(conn->rsack[0].start, s);
	assert_int_equal(conn->rsack[0].end, e);
	assert_true(n_wire >= 1);
	assert_int_equal(wire[0].start, s);
	assert_int_equal(wire[0].end, e);
}

/* ooo_at for a segment at or above the end of everything sent before:
 * at the queue's tail, it takes no walk. */
static void ooo_at_tail(uint32_t off, uint32_t len)
{
	uint64_t walks = cnt(ARN_TCP_C_OOO_WALKS);
	ooo_at(off, len);
	assert_int_equal(cnt(ARN_TCP_C_OOO_WALKS), walks);
}

static void expect_block(unsigned i, uint32_t start_off, uint32_t end_off)
{
	assert_true(n_wire > i);
	assert_int_equal(wire[i].start, p_isn + start_off);
	assert_int_equal(wire[i].end, p_isn + end_off);
}

/* ---- tests ------------------------------------------------------------------------ */

/* Appends at the tail, a new hole above it, a middle segment that bridges
 * two runs, overlaps, a collapse of the queue (tiny segments at the
 * budget), a pull of the head run, and a prune: the queue holds what was
 * sent, and every ACK's SACK blocks are what walking the queue gives (the
 * appends' blocks come from ooo_tail_run instead), spelled out. */
static void test_ooo_sack_blocks_scripted(void **state)
{
	(void)state;
	memset(held, 0, sizeof(held));
	open_conn();
	uint64_t walks = cnt(ARN_TCP_C_OOO_WALKS);
	/* hole [0, 1000); appends */
	ooo_at(1000, 1000);
	expect_block(0, 1000, 2000);
	ooo_at(2000, 1000);
	expect_block(0, 1000, 3000);
	ooo_at(3000, 500);
	expect_block(0, 1000, 3500);
	/* a new hole above the tail, then appends to the new run */
	ooo_at(4000, 1000);
	expect_block(0, 4000, 5000);
	expect_block(1, 1000, 3500);
	ooo_at(5000, 1000);
	expect_block(0, 4000, 6000);
	assert_int_equal(cnt(ARN_TCP_C_OOO_WALKS), walks);
	/* the middle: [3500, 4000) bridges the two runs */
	ooo_at(3500, 500);
	expect_block(0, 1000, 6000);
	assert_int_equal(n_wire, 1);
	assert_int_equal(cnt(ARN_TCP_C_OOO_WALKS), walks + 1);
	/* an append after the bridge extends the bridged run */
	ooo_at(6000, 1000);
	expect_block(0, 1000, 7000);
	/* overlapping the tail's end: trimmed, then the tail's run */
	ooo_at(6500, 1000);
	expect_block(0, 1000, 7500);
	/* a hole and a run above it; a segment over the tail's end (trimmed
	 * in front), then one from below the tail over all of it (the tail
	 * mbuf freed, the segment the new tail) */
	ooo_at(8000, 300);
	ooo_at(8300, 300);
	ooo_at(8400, 300);
	expect_block(0, 8000, 8700);
	ooo_at(8550, 200);
	expect_block(0, 8000, 8750);
	ooo_at(8750, 150);
	expect_block(0, 8000, 8900);
	/* from the end of the first run over the whole second one: every
	 * mbuf of the tail's run freed, the segment starts where what is
	 * left ends (the tail's run start remembered before is stale: the
	 * segment takes the walk, and joins the first run) */
	ooo_at(7500, 1400);
	expect_block(0, 1000, 8900);
	assert_int_equal(n_wire, 1);
	ooo_at(8900, 100);
	expect_block(0, 1000, 9000);
	/* the hole fills: the whole queue is pulled */
	send_at(0, 1000);
	assert_null(conn->oooq.head);
	assert_int_equal(conn->rcv_nxt, p_isn + 9000);
	/* two runs; the head one is pulled, the tail one keeps appending */
	ooo_at(10000, 1000);
	ooo_at(12000, 1000);
	ooo_at(13000, 1000);
	send_at(9000, 1000);
	assert_int_equal(conn->rcv_nxt, p_isn + 11000);
	ooo_at(14000, 1000);
	expect_block(0, 12000, 15000);
	/* tiny contiguous segments at the tail, then the budget: they are
	 * collapsed (a new tail mbuf), and appends still get the tail's run */
	conn->rmem_max = conn->oooq.n + 40;
	uint64_t collapsed = cnt(ARN_TCP_C_RCV_COLLAPSED);
	for (uint32_t i = 0; i < 60; i++) {
		ooo_at(15000 + 10 * i, 10);
		expect_block(0, 12000, 15010 + 10 * i);
	}
	assert_true(cnt(ARN_TCP_C_RCV_COLLAPSED) > collapsed);
	ooo_at(15600, 1000);
	expect_block(0, 12000, 16600);
	/* a new hole above the collapsed tail */
	ooo_at(17000, 100);
	expect_block(0, 17000, 17100);
	expect_block(1, 12000, 16600);
	/* a prune (the worker's bound, or in-order data at the budget) drops
	 * it all; appends start a new run */
	tcp_ooo_prune(conn);
	memset(held, 0, top_off);
	check_queue(conn);
	ooo_at(20000, 1000);
	expect_block(0, 20000, 21000);
	assert_int_equal(n_wire, 1);
	ooo_at(21000, 1000);
	expect_block(0, 20000, 22000);
	/* and the hole below them, in order: all delivered */
	conn->rmem_max = tcp_rmem_budget(conn->wk, conn->rcvbuf);
	for (uint32_t o = 11000; o < 20000; o += 1000)
		send_at(o, 1000);
	assert_int_equal(conn->rcv_nxt, p_isn + 22000);
	assert_int_equal(app_off, 22000);
}

/* The same checks over 6,000 segments of a seeded random mix: mostly
 * appends at the tail (full or tiny, contiguous or above a new hole: no
 * walk),
 * some in the middle (filling, bridging, overlapping, duplicating), some
 * filling the hole at rcv_nxt (a pull of the head run, whole or in part),
 * an application that stops reading and reads again,
 * a small budget (collapses, drops) and now and then a prune. */
static void test_ooo_sack_blocks_random(void **state)
{
	(void)state;
	memset(held, 0, sizeof(held));
	open_conn();
	struct arn_tcp_conn *c = conn;
	uint32_t x = 12345;
#define RND() (x = x * 1103515245u + 12345u, x >> 8)
	uint32_t tail = 1000; /* the stream offset above which nothing was sent */
	uint64_t appends = 0;
	for (unsigned step = 0; step < 6000; step++) {
		uint32_t nxt = off_of(c->rcv_nxt);
		if (tail <= nxt)
			tail = nxt + 1 + RND() % 3000;
		c->rmem_max = 48;
		uint32_t r = RND() % 100;
		if (tail > nxt + 120000) {
			/* the window's end: the hole fills */
			r = 90;
			hold = false;
		}
		uint32_t len = RND() % 4 == 0 ? 1 + RND() % 40 : 1 + RND() % PMSS;
		if (r < 45) {
			ooo_at_tail(tail, len);
			tail += len;
			appends++;
		} else if (r < 55) {
			tail += 1 + RND() % 1500; /* a new hole */
			ooo_at_tail(tail, len);
			tail += len;
		} else if (r < 85) {
			uint32_t o = nxt + 1 + RND() % (tail - nxt);
			if (o + len > nxt + 120000)
				len = 1;
			ooo_at(o, len); /* the middle */
			if (o + len > tail)
				tail = o + len;
		} else if (r < 95) {
			/* the hole at rcv_nxt, in part or whole */
			uint32_t l = RND() % 2 ? len : RTE_MIN(len, 1u + RND() % 200);
			send_at(nxt, l);
			if (nxt + l > tail)
				tail = nxt + l;
		} else if (r < 99) {
			hold = RND() % 2;
		} else {
			tcp_ooo_prune(c);
			memset(held, 0, top_off);
			check_queue(c);
		}
		if (step % 64 == 0) {
			fake_advance(lc, 1);
			fake_drain(lc);
		}
	}
#undef RND
	assert_true(appends > 1000);
	assert_true(cnt(ARN_TCP_C_RCV_COLLAPSED) > 0);
	assert_true(cnt(ARN_TCP_C_OOO_PRUNED) > 0);
	assert_true(cnt(ARN_TCP_C_OOO_WALKS) > 500);
}

/* One hole and a flight of 1,000 full segments above it (a bulk download
 * losing one segment): none of them walks the queue, each is appended at
 * its tail, each ACK's block grows by one segment; the retransmission
 * that fills the hole delivers all of it. Before, each segment walked the
 * queue three times: 1.5 million steps for the flight. */
static void test_ooo_tail_appends_do_not_walk(void **state)
{
	(void)state;
	memset(held, 0, sizeof(held));
	open_conn();
	assert_true(conn->rmem_max > 1000 + 8);
	for (uint32_t i = 1; i <= 1000; i++) {
		ooo_at(i * PMSS, PMSS);
		expect_block(0, PMSS, (i + 1) * PMSS);
	}
	assert_int_equal(conn->oooq.n, 1000);
	assert_int_equal(cnt(ARN_TCP_C_OOO_WALKS), 0);
	assert_int_equal(cnt(ARN_TCP_C_RCV_COLLAPSE_WALKS), 0);
	send_at(0, PMSS);
	assert_int_equal(app_off, 1001 * PMSS);
	assert_int_equal(cnt(ARN_TCP_C_OOO_WALKS), 0);
}

/* At its budget with full mbufs only (a bulk sender's flight above a
 * hole), the queues are walked for small mbufs to collapse once, not for
 * every segment that follows. Tiny segments queued since (the budget made
 * room for by a read) are collapsed at the next segment, and so is a
 * receive queue's head that a partial read left small next to a small
 * one. */
static void test_collapse_walks_once_at_the_budget(void **state)
{
	(void)state;
	memset(held, 0, sizeof(held));
	open_conn();
	struct arn_tcp_conn *c = conn;
	hold = true;
	c->rmem_max = 64;
	/* in order: a full segment and a small one, held by the application */
	send_at(0, PMSS);
	send_at(PMSS, 10);
	uint32_t top = PMSS + 10 + PMSS; /* a hole of one segment */
	/* out of order: full segments up to the budget, and 100 more */
	while (c->rcvq.n + c->oooq.n < c->rmem_max) {
		ooo_at(top, PMSS);
		top += PMSS;
	}
	assert_int_equal(cnt(ARN_TCP_C_RCV_COLLAPSE_WALKS), 0);
	uint64_t dropped = cnt(ARN_TCP_C_OOO_DROPPED);
	for (int i = 0; i < 100; i++)
		send_at(top + (uint32_t)i * PMSS, PMSS);
	assert_int_equal(cnt(ARN_TCP_C_OOO_DROPPED), dropped + 100);
	assert_int_equal(cnt(ARN_TCP_C_RCV_COLLAPSE_WALKS), 1);
	assert_int_equal(cnt(ARN_TCP_C_RCV_COLLAPSED), 0);
	/* the application reads part of the first segment: what is left of
	 * it is small, next to the small one, and both are copied into one
	 * mbuf at the next segment, which then fits: that run alone (one
	 * change since the walk does not pay for another, collapse()) */
	hold = false;
	app_off = 1000;
	arn_tcp_rx_consume(c, 1000);
	hold = true;
	assert_true(tcp_mbuf_small(c->wk, c->rcvq.head));
	uint64_t visits = cnt(ARN_TCP_C_RCV_COLLAPSE_VISITS);
	ooo_at(top, PMSS);
	top += PMSS;
	assert_true(held[top - 1]);
	assert_int_equal(cnt(ARN_TCP_C_RCV_COLLAPSE_WALKS), 1);
	assert_int_equal(cnt(ARN_TCP_C_RCV_COLLAPSED), 1);
	assert_int_equal(cnt(ARN_TCP_C_RCV_COLLAPSE_VISITS), visits + 2);
	assert_int_equal(c->rcvq.n, 1);
	/* at the budget again: no walk */
	dropped = cnt(ARN_TCP_C_OOO_DROPPED);
	send_at(top, PMSS);
	send_at(top + PMSS, PMSS);
	assert_int_equal(cnt(ARN_TCP_C_OOO_DROPPED), dropped + 2);
	assert_int_equal(cnt(ARN_TCP_C_RCV_COLLAPSE_WALKS), 1);
	/* room for 8 (a larger budget, as a read would make): tiny
	 * segments, contiguous at the tail, take it; at the budget they
	 * are collapsed, and more of them fit */
	c->rmem_max += 8;
	uint64_t collapsed = cnt(ARN_TCP_C_RCV_COLLAPSED);
	for (uint32_t i = 0; i < 40; i++)
		ooo_at(top + i * 20, 20);
	assert_true(cnt(ARN_TCP_C_RCV_COLLAPSED) > collapsed);
	assert_true(c->rcvq.n + c->oooq.n <= c->rmem_max);
	for (uint32_t o = top; o < top + 800; o++)
		assert_true(held[o]);
	/* the hole fills: everything queued is delivered, in order */
	hold = false;
	c->rmem_max = tcp_rmem_budget(c->wk, c->rcvbuf);
	t_data(c, c->rcvq.head, c->rcvq.bytes);
	send_at(PMSS + 10, PMSS);
	assert_int_equal(app_off, top + 800);
}

/* The gaps pattern (bench_tcp_ooo's) with a budget of @p budget mbufs:
 * the queue filled with bytes a byte apart, then pairs: two bytes over a
 * queued byte and the gap before it (the byte freed, the segment queued
 * next to a small mbuf: a run of two) and a byte alone above, which finds
 * the queue at its budget. @return the mbufs collapse visited, per
 * segment of the pairs. */
static double gaps_visits(uint32_t budget)
{
	struct arn_tcp_conn *c = conn;
	tcp_ooo_prune(c);
	memset(held, 0, top_off);
	c->rmem_max = budget;
	for (uint32_t i = 1; c->oooq.n < budget; i++)
		ooo_at(2 * i, 1);
	uint32_t top = 2 * budget + 2, n = 0;
	uint64_t visits = cnt(ARN_TCP_C_RCV_COLLAPSE_VISITS);
	for (uint32_t i = 1; 4 * i + 1 < top; i++, n += 2) {
		ooo_at(4 * i - 1, 2);
		ooo_at(top + 2 * i, 1);
	}
	return (double)(cnt(ARN_TCP_C_RCV_COLLAPSE_VISITS) - visits) / n;
}

/* A peer alternating tiny segments so that each other one finds the
 * budget full with one run of two small mbufs somewhere in the queue
 * (the gaps pattern) made every such segment walk both queues: the work
 * a segment costs grew with the queue. It must not: the mbufs collapse
 * visits, per segment, at 128 and at 1,024 mbufs queued, stay under a
 * bound that does not depend on the queue (collapse() pays a walk with
 * the mbufs queued since, 8 visits each, and copies the last small
 * mbuf's run alone between walks). Fails before (every segment that
 * found the budget full walked): 64.0 and 512.0 visits a segment; now
 * 9.3 and 9.5. */
static void test_collapse_work_bounded(void **state)
{
	(void)state;
	memset(held, 0, sizeof(held));
	open_conn();
	struct arn_tcp_conn *c = conn;
	assert_true(c->rcv_adv - c->rcv_nxt > 4 * 1024 + 8);
	double small = gaps_visits(128);
	double big = gaps_visits(1024);
	print_message(
	    "gaps: %.1f mbufs visited by collapse a segment at 128 mbufs, %.1f at 1,024\n", small,
	    big);
	assert_true(small <= 16.0);
	assert_true(big <= 16.0);
	/* nothing legitimate was refused for it: every pair's first segment
	 * and most lone bytes are queued */
	assert_int_equal(c->oooq.n, 1024);
	tcp_ooo_prune(c);
	memset(held, 0, top_off);
	c->rmem_max = tcp_rmem_budget(c->wk, c->rcvbuf);
}

/* ceil(log2(n)) */
static unsigned lg2(uint32_t n)
{
	unsigned k = 0;
	while ((1u << k) < n)
		k++;
	return k;
}

/* Out-of-order segments at @p offs[0..n), each checked as ooo_at does:
 * @return the out_of_order_walk_steps they took, per segment. */
static double steps_per_segment(const uint32_t *offs, uint32_t n, uint32_t len)
{
	uint64_t steps = cnt(ARN_TCP_C_OOO_WALK_STEPS);
	for (uint32_t i = 0; i < n; i++)
		ooo_at(offs[i], len);
	return (double)(cnt(ARN_TCP_C_OOO_WALK_STEPS) - steps) / n;
}

static uint32_t offs[2048];

/* A peer's worst arrival orders for the list the queue was (each segment
 * walked it, several times: to place it, again after admission, for its
 * SACK block): the work a segment takes must not grow with the queue
 * beyond its logarithm. Measured in out_of_order_walk_steps (the nodes
 * the searches visit), at two queue sizes, 128 and 2,048 mbufs:
 *   walk     one byte at the window's far end, then one-byte segments a
 *            byte apart in ascending order below it, each just below the
 *            queue's tail (bench_tcp_ooo's walk mode);
 *   scatter  one-byte segments at random even places below it;
 *   inside   one-byte duplicates at random places inside one long run of
 *            full segments above a hole.
 * The bound, 6 log2(n): three searches at most (a red-black tree's
 * height is at most 2 log2(n + 1)). Fails before (the list walked):
 * walk 191.0 steps a segment up to 128 mbufs (the bound: 42), 4,604.0 at
 * 1,024-2,047 (66); scatter 102.0 and 2,143.4; inside 1,016.4. Now 17.6
 * and 37.0, 11.8 and 21.2, 11.4. */
static void test_ooo_worst_order_logarithmic(void **state)
{
	(void)state;
	memset(held, 0, sizeof(held));
	open_conn();
	struct arn_tcp_conn *c = conn;
	uint32_t wnd = c->rcv_adv - c->rcv_nxt;
	assert_true(wnd > 2 * 2048 + 2);
	assert_true(c->rmem_max > 2048 + 8 && c->wk->ooo_max >= 2047);
	/* walk: the far byte, then 127 and 1,920 segments below it */
	ooo_at(wnd - 1, 1);
	for (uint32_t i = 0; i < 2046; i++)
		offs[i] = 2 + 2 * i;
	double small = steps_per_segment(offs, 127, 1);
	assert_int_equal(c->oooq.n, 128);
	for (uint32_t i = 127; i < 1023; i++)
		ooo_at(offs[i], 1);
	double big = steps_per_segment(offs + 1023, 1023, 1);
	assert_int_equal(c->oooq.n, 2047);
	print_message("walk: %.1f steps a segment at 1-128 mbufs, %.1f at 1,024-2,047\n", small,
		      big);
	assert_true(small <= 6.0 * lg2(128));
	assert_true(big <= 6.0 * lg2(2048));
	/* scatter: the queue pruned, then the same far byte and segments at
	 * random even places below it */
	tcp_ooo_prune(c);
	memset(held, 0, top_off);
	uint32_t x = 777;
	ooo_at(wnd - 1, 1);
	for (uint32_t i = 0; i < 2046; i++)
		offs[i] = 2 + 2 * (((x = x * 1103515245u + 12345u) >> 8) % (wnd / 2 - 2));
	small = steps_per_segment(offs, 127, 1);
	for (uint32_t i = 127; i < 1023; i++)
		ooo_at(offs[i], 1);
	uint32_t n1 = c->oooq.n;
	big = steps_per_segment(offs + 1023, 1023, 1);
	print_message("scatter: %.1f steps a segment at 1-128 mbufs, %.1f at %u-%u\n", small, big,
		      n1, c->oooq.n);
	assert_true(c->oooq.n > 1500);
	assert_true(small <= 6.0 * lg2(128));
	assert_true(big <= 6.0 * lg2(2048));
	/* inside: one run of 2,000 mbufs (32 bytes each) above a one-byte
	 * hole, then one-byte duplicates inside it (each D-SACKed and
	 * dropped) */
	tcp_ooo_prune(c);
	memset(held, 0, top_off);
	const uint32_t n = 2000, len = 32;
	assert_true(1 + n * len < wnd);
	for (uint32_t i = 0; i < n; i++)
		ooo_at(1 + i * len, len);
	assert_int_equal(c->oooq.n, n);
	for (uint32_t i = 0; i < 1000; i++)
		offs[i] = 1 + ((x = x * 1103515245u + 12345u) >> 8) % (n * len);
	uint64_t dup = cnt(ARN_TCP_C_DUP_DATA);
	double inside = steps_per_segment(offs, 1000, 1);
	assert_int_equal(cnt(ARN_TCP_C_DUP_DATA), dup + 1000);
	print_message("inside: %.1f steps a segment, %u mbufs in one run\n", inside, n);
	assert_true(inside <= 6.0 * lg2(2048));
	/* the hole fills: everything is delivered */
	send_at(0, 1);
	assert_int_equal(app_off, 1 + n * len);
}

/* A segment that covers queued mbufs frees them before its admission;
 * refused then (the connection over its budget), what they held is gone,
 * and the runs (the SACK blocks' source) must lose it too: a run split in
 * two, a run's head cut, a run removed whole, two runs removed by one
 * segment. The queue is checked against its indexes after each. */
static void test_ooo_refused_segment_cuts_runs(void **state)
{
	(void)state;
	memset(held, 0, sizeof(held));
	open_conn();
	struct arn_tcp_conn *c = conn;
	/* runs [1000, 6000) of five 1,000-byte mbufs, [8000, 9000),
	 * [10000, 12000) of two, [13000, 13500) and [13700, 14000) */
	for (uint32_t o = 1000; o < 6000; o += 1000)
		ooo_at(o, 1000);
	ooo_at(8000, 1000);
	ooo_at(10000, 1000);
	ooo_at(11000, 1000);
	ooo_at(13000, 500);
	ooo_at(13700, 300);
	assert_int_equal(c->oooq.n, 10);
	/* over its budget from now on: nothing is admitted */
	c->rmem_max = 4;
	static uint8_t d[PMSS];
	static const struct {
		uint32_t off, len;	 /* what is sent */
		uint32_t gone, gone_len; /* what it frees */
		uint32_t gone2, gone2_len;
	} cases[] = {
	    {2999, 1002, 3000, 1000, 0, 0},	   /* [3000, 4000): the first run splits */
	    {999, 1002, 1000, 1000, 0, 0},	   /* [1000, 2000): its head */
	    {7999, 1002, 8000, 1000, 0, 0},	   /* [8000, 9000): a whole run */
	    {12999, 1002, 13000, 500, 13700, 300}, /* two whole runs */
	};
	for (unsigned i = 0; i < RTE_DIM(cases); i++) {
		uint32_t off = cases[i].off, len = cases[i].len;
		for (uint32_t k = 0; k < len; k++)
			d[k] = pat(off + k);
		uint64_t dropped = cnt(ARN_TCP_C_OOO_DROPPED);
		uint32_t n = c->oooq.n;
		struct fake_opts o = popts();
		arn_tcp_input(lc, fake_seg(PEER, US, PPORT, LPORT, TH_ACK, p_isn + off, p_ack,
					   65535, &o, d, len));
		assert_int_equal(cnt(ARN_TCP_C_OOO_DROPPED), dropped + 1);
		assert_int_equal(c->oooq.n, n - (cases[i].gone2_len ? 2 : 1));
		memset(held + cases[i].gone, 0, cases[i].gone_len);
		memset(held + cases[i].gone2, 0, cases[i].gone2_len);
		read_acks();
		check_queue(c);
	}
	/* runs now: [2000, 3000), [4000, 6000), [10000, 12000) */
	uint32_t s, e;
	assert_true(walk_run(c, p_isn + 2000, &s, &e));
	assert_int_equal(s, p_isn + 2000);
	assert_int_equal(e, p_isn + 3000);
	assert_true(walk_run(c, p_isn + 4000, &s, &e));
	assert_int_equal(s, p_isn + 4000);
	assert_int_equal(e, p_isn + 6000);
	assert_false(walk_run(c, p_isn + 8000, &s, &e));
	assert_int_equal(c->ooo_runs.root != NULL, true);
	/* room again: [3000, 4000) bridges two runs, its block the whole */
	c->rmem_max = tcp_rmem_budget(c->wk, c->rcvbuf);
	ooo_at(3000, 1000);
	expect_block(0, 2000, 6000);
	/* the hole fills: everything is delivered, in order */
	send_at(0, 1000);
	assert_int_equal(app_off, 1000);
	send_at(1000, 1000);
	assert_int_equal(app_off, 6000);
}

/* Every SACK block of the last ACK, and every block kept for the next,
 * holds only bytes the queue holds (found by walking it). */
static void check_blocks_held(const struct arn_tcp_conn *c)
{
	uint32_t s, e;
	for (unsigned i = 0; i < n_wire; i++) {
		assert_true(walk_run(c, wire[i].start, &s, &e));
		assert_true(seq_leq(s, wire[i].start) && seq_leq(wire[i].end, e));
	}
	for (unsigned i = 0; i < c->n_rsack; i++) {
		assert_true(walk_run(c, c->rsack[i].start, &s, &e));
		assert_true(seq_leq(s, c->rsack[i].start) && seq_leq(c->rsack[i].end, e));
	}
}

/* A segment that frees the mbufs it covers and is then refused (the
 * connection over its budget) leaves a hole where the queue held data:
 * the SACK blocks kept for the next ACKs must lose it too, or they report
 * bytes we no longer hold (reneging, RFC 2018 8: the sender does not
 * resend them until its retransmission timer). Each kept block is cut
 * around the hole: [1000, 6000) becomes [1000, 3000) and [4000, 6000).
 * Fails before: the ACK sent for the refused segment carries [2999,
 * 3000) (its D-SACK), [8000, 9000) and [1000, 6000), over the freed
 * [3000, 4000). */
static void test_ooo_refused_segment_trims_sack_blocks(void **state)
{
	(void)state;
	memset(held, 0, sizeof(held));
	open_conn();
	struct arn_tcp_conn *c = conn;
	/* runs [1000, 6000) of five 1,000-byte mbufs and [8000, 9000) */
	for (uint32_t o = 1000; o < 6000; o += 1000)
		ooo_at(o, 1000);
	ooo_at(8000, 1000);
	expect_block(0, 8000, 9000);
	expect_block(1, 1000, 6000);
	c->rmem_max = 4; /* over its budget: nothing is admitted */
	static uint8_t d[PMSS];
	for (uint32_t k = 0; k < 1002; k++)
		d[k] = pat(2999 + k);
	uint64_t dropped = cnt(ARN_TCP_C_OOO_DROPPED);
	struct fake_opts o = popts();
	arn_tcp_input(
	    lc, fake_seg(PEER, US, PPORT, LPORT, TH_ACK, p_isn + 2999, p_ack, 65535, &o, d, 1002));
	assert_int_equal(cnt(ARN_TCP_C_OOO_DROPPED), dropped + 1);
	memset(held + 3000, 0, 1000);
	n_wire = 0;
	read_acks();
	check_queue(c);
	assert_true(n_wire >= 2);
	check_blocks_held(c);
	/* the next ACK (a segment that changes nothing: a duplicate) too */
	send_at(8000, 10);
	check_blocks_held(c);
	bool left = false, right = false;
	for (unsigned i = 0; i < c->n_rsack; i++) {
		left |= c->rsack[i].start == p_isn + 1000 && c->rsack[i].end == p_isn + 3000;
		right |= c->rsack[i].start == p_isn + 4000 && c->rsack[i].end == p_isn + 6000;
	}
	assert_true(left && right);
	/* room again: the hole filled, its block the whole run again */
	c->rmem_max = tcp_rmem_budget(c->wk, c->rcvbuf);
	ooo_at(3000, 1000);
	expect_block(0, 1000, 6000);
	send_at(0, 1000);
	assert_int_equal(app_off, 6000);
}

/* RFC 2883 section 4: a D-SACK for data above the cumulative ACK is
 * followed by the block that holds it, as Linux's tcp_sack_new_ofo_skb
 * brings that block to the front. A whole duplicate of queued data left
 * the blocks in their order: the D-SACK [2000, 3000) went out followed by
 * [8000, 9000), and the peer read it as a block of its own. */
static void test_dsack_above_the_ack_precedes_its_block(void **state)
{
	(void)state;
	memset(held, 0, sizeof(held));
	open_conn();
	for (uint32_t o = 1000; o < 6000; o += 1000)
		ooo_at(o, 1000);
	ooo_at(8000, 1000);
	expect_block(0, 8000, 9000);
	expect_block(1, 1000, 6000);
	uint64_t dsack = cnt(ARN_TCP_C_DSACK_SENT);
	send_at(2000, 1000); /* all of it queued already */
	assert_int_equal(cnt(ARN_TCP_C_DSACK_SENT), dsack + 1);
	/* read_acks took the first block as the D-SACK (inside the second) */
	expect_block(0, 1000, 6000);
	expect_block(1, 8000, 9000);
	send_at(0, 1000);
	assert_int_equal(app_off, 6000);
}

int main(void)
{
	fake_eal_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_ooo_sack_blocks_scripted, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_ooo_sack_blocks_random, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_ooo_tail_appends_do_not_walk, setup_big, teardown),
	    cmocka_unit_test_setup_teardown(test_collapse_walks_once_at_the_budget, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_ooo_worst_order_logarithmic, setup_big, teardown),
	    cmocka_unit_test_setup_teardown(test_ooo_refused_segment_cuts_runs, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_collapse_work_bounded, setup_big, teardown),
	    cmocka_unit_test_setup_teardown(test_ooo_refused_segment_trims_sack_blocks, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_dsack_above_the_ack_precedes_its_block, setup,
					    teardown),
	};
	int rc = cmocka_run_group_tests_name("tcp_ooo", tests, NULL, NULL);
	fake_eal_fini();
	return rc;
}
