/*
 * lib/tcp's receive-buffer autotuning (issue 16, items 3 and 5:
 * dataplane.tcp.rcvbuf_max, tcp_rcv_space_adjust in tcp_rmem.c) against
 * the fake lib/net (tcp_fake_net.h): crafted peers that send as much as
 * the advertised window lets them, once per simulated round trip, to an
 * application that reads everything at once (or nothing).
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
#define PEER 0xc6120063u /* 198.18.0.99: the crafted peers */
#define LPORT 80
#define PMSS 1448 /* the peers' segments: MSS 1460 less the timestamps */

static struct arn_lcore *lc = &fake_lc[0];
static bool hold;		     /* the application reads nothing */
static struct arn_tcp_conn *holding; /* ... on this connection */
static int accepts;
static struct arn_tcp_conn *accepted;

static int t_accept(struct arn_tcp_conn *c, void *u)
{
	(void)u;
	accepts++;
	accepted = c;
	return 0;
}

static void t_data(struct arn_tcp_conn *c, struct rte_mbuf *head, uint32_t len)
{
	(void)head;
	if (!hold && c != holding)
		arn_tcp_rx_consume(c, len);
}

static const struct arn_tcp_ops t_ops = {
    .on_accept = t_accept,
    .on_data = t_data,
};

static struct arn_dataplane dp_conf;
static unsigned pool_full;

static int setup_with(uint32_t rcvbuf, uint32_t rcvbuf_max)
{
	hold = false;
	holding = NULL;
	accepts = 0;
	accepted = NULL;
	memset(&dp_conf, 0, sizeof(dp_conf));
	dp_conf.tcp_max_connections = 64;
	dp_conf.tcp_rcvbuf = rcvbuf;
	dp_conf.tcp_rcvbuf_max = rcvbuf_max;
	dp_conf.tcp_sndbuf = 64 * 1024;
	return fake_tcp_start(lc, &dp_conf, &pool_full, US, LPORT, &t_ops, 64) ? 0 : -1;
}

/* 64 KB growing to 1 MiB */
static int setup(void **state)
{
	(void)state;
	return setup_with(64 * 1024, 1 << 20);
}

/* 64 KB growing to 4 MiB: more than the worker's bound on grown memory
 * (a quarter of the fake pool's 16,383 mbufs) lets one connection take */
static int setup_big(void **state)
{
	(void)state;
	return setup_with(64 * 1024, 4 << 20);
}

/* autotuning off: rcvbuf_max 0 */
static int setup_off(void **state)
{
	(void)state;
	return setup_with(64 * 1024, 0);
}

static int teardown(void **state)
{
	(void)state;
	arn_tcp_worker_fini(lc);
	fake_drain(lc);
	return fake_pool_full_again(pool_full);
}

/* ---- a crafted bulk sender ----------------------------------------------------- */

struct peer {
	uint16_t port;
	uint32_t seq;	    /* next to send */
	uint32_t ack;	    /* what it acknowledges: our SYN */
	uint32_t edge;	    /* the right edge we advertised last */
	uint32_t tsval;	    /* its clock */
	uint32_t tsecr;	    /* the last TSval of ours it saw */
	uint8_t ws;	    /* our window scale */
	uint32_t max_wnd;   /* the largest window we advertised */
	unsigned retracted; /* ACKs whose right edge was left of one before */
	struct arn_tcp_conn *c;
};

static uint8_t payload[PMSS];

static void peer_seg(struct peer *p, uint8_t flags, uint32_t seq, const void *data, uint32_t len)
{
	struct fake_opts o = fake_no_opts;
	o.ts = true;
	o.tsval = p->tsval;
	o.tsecr = p->tsecr;
	arn_tcp_input(lc,
		      fake_seg(PEER, US, p->port, LPORT, flags, seq, p->ack, 65535, &o, data, len));
}

/* What we sent the peer: its window and timestamp. */
static void peer_read(struct peer *p)
{
	struct fake_out out;
	fake_advance(lc, 0);
	while (fake_next(lc, &out)) {
		if (out.dport != p->port || !(out.flags & TH_ACK))
			continue;
		uint32_t wnd = (uint32_t)out.wnd << p->ws;
		if (out.flags & TH_SYN)
			wnd = out.wnd;
		if (seq_gt(out.ack + wnd, p->edge))
			p->edge = out.ack + wnd;
		else if (seq_lt(out.ack + wnd, p->edge))
			p->retracted++;
		if (wnd > p->max_wnd)
			p->max_wnd = wnd;
		if (out.o.has_ts)
			p->tsecr = out.o.tsval;
	}
}

static void peer_open_ws(struct peer *p, uint16_t port, int ws)
{
	memset(p, 0, sizeof(*p));
	p->port = port;
	p->seq = 1000;
	p->tsval = 5000;
	struct fake_opts o = {
	    .mss = 1460, .ws = ws, .sack_ok = true, .ts = true, .tsval = p->tsval};
	accepted = NULL;
	arn_tcp_input(lc, fake_seg(PEER, US, port, LPORT, TH_SYN, p->seq, 0, 65535, &o, NULL, 0));
	fake_advance(lc, 0);
	struct fake_out out;
	assert_true(fake_next(lc, &out));
	assert_int_equal(out.flags, TH_SYN | TH_ACK);
	assert_true(out.o.has_ws == (ws >= 0));
	p->ws = out.o.has_ws ? out.o.ws : 0;
	p->tsecr = out.o.tsval;
	p->seq++;
	p->ack = out.seq + 1;
	p->edge = p->seq + out.wnd;
	struct fake_opts a = fake_no_opts;
	a.ts = true;
	a.tsval = p->tsval;
	a.tsecr = p->tsecr;
	arn_tcp_input(
	    lc, fake_seg(PEER, US, port, LPORT, TH_ACK, p->seq, out.seq + 1, 65535, &a, NULL, 0));
	assert_non_null(accepted);
	p->c = accepted;
	assert_int_equal(p->c->state, TCPS_ESTABLISHED);
}

static void peer_open(struct peer *p, uint16_t port)
{
	peer_open_ws(p, port, 7);
}

/* One round trip: the peer fills the window it was offered with full
 * segments, we answer, and @p rtt_ms passes before the next round. */
/* The peer sends full segments up to @p to (within what it was offered),
 * reading our ACKs after every 32. @return bytes sent. */
static uint32_t peer_send_to(struct peer *p, uint32_t to)
{
	uint32_t sent = 0;
	while (seq_leq(p->seq + PMSS, to)) {
		peer_seg(p, TH_ACK, p->seq, payload, PMSS);
		p->seq += PMSS;
		sent += PMSS;
		if (sent % (32 * PMSS) == 0)
			peer_read(p); /* a burst's ACKs, as the poll sends them */
	}
	peer_read(p);
	return sent;
}

static uint32_t peer_round(struct peer *p, unsigned rtt_ms)
{
	/* what it was offered a round trip ago */
	uint32_t sent = peer_send_to(p, p->edge);
	fake_advance(lc, rtt_ms);
	p->tsval += rtt_ms;
	peer_read(p);
	return sent;
}

static unsigned pool_used(void)
{
	return pool_full - rte_mempool_avail_count(fake_pool);
}

/* ---- tests ------------------------------------------------------------------------ */

/* The window scale is chosen at the SYN for the most the buffer may grow
 * to: 64 KB alone needs none, 1 MiB needs 5. */
static void test_window_scale_from_the_max(void **state)
{
	(void)state;
	struct peer p;
	peer_open(&p, 40000);
	assert_int_equal(p.ws, 5);
	assert_int_equal(p.c->rcvbuf, 64 * 1024);
}

/* An application that reads everything at once, at the rate of a window
 * per round trip: the buffer grows (as Linux's tcp_rcv_space_adjust: to
 * about twice what was read in a round trip, more while that grows), the
 * window advertised with it, and the connection's mbuf budget follows;
 * never past rcvbuf_max. */
static void test_window_grows_when_the_app_drains(void **state)
{
	(void)state;
	struct peer p;
	peer_open(&p, 40000);
	struct arn_tcp_conn *c = p.c;
	uint32_t budget0 = c->rmem_max;
	for (int i = 0; i < 4; i++)
		peer_round(&p, 2);
	assert_true(c->rcvbuf > 64 * 1024);
	assert_true(p.max_wnd > 64 * 1024);
	assert_true(c->rmem_max > budget0);
	assert_true(cnt(ARN_TCP_C_RCVBUF_GROWN) >= 1);
	assert_int_equal(cnt(ARN_TCP_C_RCVBUF_GROWN_MBUFS), c->rmem_max - budget0);
	/* many more rounds: up to the max, not past it */
	for (int i = 0; i < 20; i++) {
		peer_round(&p, 2);
		assert_true(c->rcvbuf <= 1u << 20);
		assert_true(p.max_wnd <= 1u << 20);
	}
	assert_int_equal(c->rcvbuf, 1u << 20);
	assert_true(p.max_wnd > (1u << 20) - 2 * PMSS);
	assert_int_equal(cnt(ARN_TCP_C_RCVBUF_GROW_LIMITED), 0);
	/* the budget is the one a fixed 1 MiB buffer would have */
	struct arn_tcp_worker *wk = c->wk;
	assert_int_equal(c->rmem_max, tcp_rmem_budget(wk, 1u << 20));
	/* and the worker's gauge goes back with the connection */
	arn_tcp_abort(c);
	fake_advance(lc, 1);
	fake_drain(lc);
	assert_int_equal(cnt(ARN_TCP_C_RCVBUF_GROWN_MBUFS), 0);
}

/* An application that does not read: the peer fills the window, nothing
 * is consumed, the buffer stays as it was. */
static void test_window_stays_when_the_app_does_not_read(void **state)
{
	(void)state;
	struct peer p;
	peer_open(&p, 40000);
	hold = true;
	for (int i = 0; i < 6; i++)
		peer_round(&p, 2);
	assert_int_equal(p.c->rcvbuf, 64 * 1024);
	assert_true(p.max_wnd <= 64 * 1024);
	assert_int_equal(cnt(ARN_TCP_C_RCVBUF_GROWN), 0);
	assert_int_equal(cnt(ARN_TCP_C_RCVBUF_GROWN_MBUFS), 0);
}

/* A peer without window scaling sees at most 64 KB: the buffer does not
 * grow past what could be advertised, and takes nothing of the worker's
 * bound. */
static void test_no_growth_without_window_scaling(void **state)
{
	(void)state;
	struct peer p;
	peer_open_ws(&p, 40000, -1);
	for (int i = 0; i < 6; i++)
		peer_round(&p, 2);
	assert_int_equal(p.c->rcvbuf, 64 * 1024);
	assert_true(p.max_wnd <= 65535);
	assert_int_equal(cnt(ARN_TCP_C_RCVBUF_GROWN_MBUFS), 0);
}

/* rcvbuf_max 0: a fixed buffer, no scale beyond what it needs (64 KB
 * needs 1), as before. */
static void test_off_keeps_the_buffer_fixed(void **state)
{
	(void)state;
	struct peer p;
	peer_open(&p, 40000);
	assert_int_equal(p.ws, 1);
	for (int i = 0; i < 6; i++)
		peer_round(&p, 2);
	assert_int_equal(p.c->rcvbuf, 64 * 1024);
	assert_true(p.max_wnd <= 64 * 1024);
	assert_int_equal(cnt(ARN_TCP_C_RCVBUF_GROWN), 0);
}

/* A peer that sends one full segment a second, every one echoing a
 * timestamp of ours 98 s old (the TSecr is the peer's to write). The
 * receiver's RTT was taken as 98 s, so the application's reading was
 * measured over 98 s: 140 KB of it against a round trip's 14 KB, and the
 * buffer grew to rcvbuf_max (a fifth of the worker's growth bound) for a
 * peer sending 1.4 KB/s. Now an RTT sample longer than the connection's
 * RTO is none: no estimate, no growth, as for an honest peer at that
 * rate (the same below with true echoes). */
static void test_old_echoes_do_not_grow_a_trickle(void **state)
{
	(void)state;
	struct peer p, q;
	peer_open(&p, 40000);
	peer_open(&q, 40001);
	for (int i = 0; i < 120; i++) {
		uint32_t tsecr = p.tsecr;
		p.tsecr = tsecr - 98000;
		peer_seg(&p, TH_ACK, p.seq, payload, PMSS);
		p.tsecr = tsecr;
		p.seq += PMSS;
		peer_seg(&q, TH_ACK, q.seq, payload, PMSS);
		q.seq += PMSS;
		fake_advance(lc, 1000);
		p.tsval += 1000;
		q.tsval += 1000;
		peer_read(&p);
		peer_read(&q);
	}
	assert_int_equal(cnt(ARN_TCP_C_BYTES_IN), 2 * 120 * PMSS);
	assert_int_equal(p.c->rcvbuf, 64 * 1024);
	assert_int_equal(cnt(ARN_TCP_C_RCVBUF_GROWN), 0);
	assert_int_equal(q.c->rcvbuf, 64 * 1024);
	assert_int_equal(cnt(ARN_TCP_C_RCVBUF_GROWN_MBUFS), 0);
	assert_int_equal(p.c->rcv_rtt8_us, 0);
}

/* The worker's bound on grown receive memory: connections together grow
 * their mbuf budgets by at most wk->rmem_grow_max (a quarter of the pool).
 * The first connection wants 4 MiB, more than the bound allows, and gets
 * what it allows; a second one then cannot grow at all while the first
 * keeps reading; when the first goes, the second can. */
static void test_growth_bounded_by_the_worker(void **state)
{
	(void)state;
	struct peer a, b;
	peer_open(&a, 40000);
	struct arn_tcp_worker *wk = a.c->wk;
	uint32_t budget0 = a.c->rmem_max;
	for (int i = 0; i < 12; i++)
		peer_round(&a, 2);
	assert_true(a.c->rcvbuf > 1u << 20);
	assert_true(a.c->rcvbuf < 4u << 20);
	assert_true(cnt(ARN_TCP_C_RCVBUF_GROW_LIMITED) >= 1);
	assert_true(cnt(ARN_TCP_C_RCVBUF_GROWN_MBUFS) <= wk->rmem_grow_max);
	assert_true(cnt(ARN_TCP_C_RCVBUF_GROWN_MBUFS) > wk->rmem_grow_max - 8);
	assert_int_equal(cnt(ARN_TCP_C_RCVBUF_GROWN_MBUFS), a.c->rmem_max - budget0);
	peer_open(&b, 40001);
	uint64_t limited = cnt(ARN_TCP_C_RCVBUF_GROW_LIMITED);
	for (int i = 0; i < 12; i++) {
		peer_round(&a, 1);
		peer_round(&b, 1);
	}
	assert_true(b.c->rcvbuf < 64 * 1024 + 8 * 1988);
	assert_int_equal(cnt(ARN_TCP_C_RCVBUF_CLAMPED), 0);
	assert_true(cnt(ARN_TCP_C_RCVBUF_GROW_LIMITED) > limited);
	assert_true(cnt(ARN_TCP_C_RCVBUF_GROWN_MBUFS) <= wk->rmem_grow_max);
	arn_tcp_abort(a.c);
	fake_advance(lc, 1);
	fake_drain(lc);
	for (int i = 0; i < 6; i++)
		peer_round(&b, 2);
	assert_true(b.c->rcvbuf > 1u << 20);
	assert_true(cnt(ARN_TCP_C_RCVBUF_GROWN_MBUFS) <= wk->rmem_grow_max);
}

/* Under pool pressure (under a quarter of the pool free) no buffer grows,
 * however fast the application reads; counted. */
static void test_no_growth_under_pool_pressure(void **state)
{
	(void)state;
	struct peer p;
	peer_open(&p, 40000);
	static struct rte_mbuf *held[16384];
	unsigned n = 0, target = pool_full / 5;
	while (rte_mempool_avail_count(fake_pool) > target)
		held[n++] = rte_pktmbuf_alloc(fake_pool);
	fake_advance(lc, 1);
	assert_true(p.c->wk->pressure);
	for (int i = 0; i < 6; i++)
		peer_round(&p, 2);
	assert_int_equal(p.c->rcvbuf, 64 * 1024);
	assert_true(p.max_wnd <= 64 * 1024);
	assert_int_equal(cnt(ARN_TCP_C_RCVBUF_GROWN), 0);
	assert_true(cnt(ARN_TCP_C_RCVBUF_GROW_LIMITED) >= 1);
	/* relief: it grows */
	while (n)
		rte_pktmbuf_free(held[--n]);
	fake_advance(lc, 1);
	for (int i = 0; i < 4; i++)
		peer_round(&p, 2);
	assert_true(p.c->rcvbuf > 64 * 1024);
}

/* A hostile peer on a grown connection: it let the buffer grow (its
 * application read fast), then the application stops reading and the peer
 * sends one-byte segments, first out of order (which cannot be collapsed),
 * then in order. The grown connection still holds no more mbufs than its
 * budget, which is the fixed budget of rcvbuf_max, and out-of-order queues
 * no more than the worker's bound. */
static void test_grown_connection_attack_bounded(void **state)
{
	(void)state;
	struct peer p;
	peer_open(&p, 40000);
	struct arn_tcp_conn *c = p.c;
	struct arn_tcp_worker *wk = c->wk;
	for (int i = 0; i < 24; i++)
		peer_round(&p, 2);
	assert_int_equal(c->rcvbuf, 1u << 20);
	assert_int_equal(c->rmem_max, tcp_rmem_budget(wk, 1u << 20));
	hold = true;
	unsigned base = pool_used();
	/* out of order: every other byte of the window */
	for (uint32_t i = 0; i < 6000; i++) {
		uint8_t b = 'x';
		peer_seg(&p, TH_ACK, p.seq + 1 + 2 * i, &b, 1);
		if (i % 64 == 0) {
			fake_advance(lc, 0);
			fake_drain(lc);
		}
		assert_true(c->rcvq.n + c->oooq.n <= c->rmem_max);
		assert_true(cnt(ARN_TCP_C_OOO_MBUFS) <= wk->ooo_max);
	}
	assert_true(cnt(ARN_TCP_C_OOO_DROPPED) > 0);
	assert_true(pool_used() <= base + wk->ooo_max + 70);
	/* in order: collapsed within the budget */
	for (uint32_t i = 0; i < 20000; i++) {
		uint8_t b = (uint8_t)i;
		peer_seg(&p, TH_ACK, p.seq, &b, 1);
		p.seq++;
		if (i % 64 == 0) {
			fake_advance(lc, 0);
			fake_drain(lc);
		}
		assert_true(c->rcvq.n + c->oooq.n <= c->rmem_max);
	}
	assert_int_equal(c->rcvq.bytes, 20000);
	assert_true(cnt(ARN_TCP_C_RCV_COLLAPSED) > 0);
	assert_int_equal(cnt(ARN_TCP_C_RCV_DROPPED_MBUFS), 0);
	assert_true(pool_used() <= base + c->rmem_max + 70);
	/* nothing read, so nothing more was granted */
	assert_int_equal(c->rmem_max, tcp_rmem_budget(wk, 1u << 20));
}

/* Connection a: grows to the worker's bound (12 round trips of reading). */
static void grow_to_the_bound(struct peer *a)
{
	peer_open(a, 40000);
	for (int i = 0; i < 12; i++)
		peer_round(a, 2);
	struct arn_tcp_worker *wk = a->c->wk;
	assert_true(cnt(ARN_TCP_C_RCVBUF_GROWN_MBUFS) > wk->rmem_grow_max - 8);
}

/* Pass @p ms one at a time, as the worker's poll does. */
static void idle_ms(unsigned ms)
{
	while (ms--) {
		fake_advance(lc, 1);
		fake_drain(lc);
	}
}

/* Issue 16, the stalled download: connection a grows to the worker's
 * bound, then its application stops reading and the peer fills the
 * window. Alone on the bound, a keeps its grant: nobody wants it. Once b,
 * reading, wants to grow, a is clamped: its advertised right edge stays
 * where it was (never retracted), and the part of its grant that it does
 * not hold goes back to the worker; so b grows. As a's application
 * drains what it holds, the rest of its grant goes back, its buffer is
 * the base one again, and the drain alone does not grow it. */
static void test_stalled_connection_gives_back_its_grant(void **state)
{
	(void)state;
	struct peer a, b;
	grow_to_the_bound(&a);
	struct arn_tcp_conn *ac = a.c;
	struct arn_tcp_worker *wk = ac->wk;
	uint32_t base = tcp_rmem_budget(wk, 64 * 1024);
	holding = a.c;
	for (int i = 0; i < 8; i++)
		peer_round(&a, 2);
	uint32_t granted = ac->rmem_grant;
	idle_ms(20);
	assert_int_equal(cnt(ARN_TCP_C_RCVBUF_CLAMPED), 0);
	assert_int_equal(ac->rmem_grant, granted);
	assert_true(ac->rcvq.bytes > 1u << 20); /* it filled */
	/* b reads, and grows: a's grant is taken back */
	peer_open(&b, 40001);
	for (int i = 0; i < 12; i++) {
		peer_round(&b, 2);
		assert_true(cnt(ARN_TCP_C_RCVBUF_GROWN_MBUFS) <= wk->rmem_grow_max);
	}
	assert_int_equal(cnt(ARN_TCP_C_RCVBUF_CLAMPED), 1);
	assert_int_equal(cnt(ARN_TCP_C_RCVBUF_RECLAIMED), 1);
	assert_true(b.c->rcvbuf > 1u << 20);
	assert_int_equal(cnt(ARN_TCP_C_RCVBUF_GROWN_MBUFS), ac->rmem_grant + b.c->rmem_grant);
	/* the grant is what it holds beyond the base budget, and what the
	 * edge it offered still promises (here less than a segment), no more */
	uint32_t ahead = ac->rcv_adv - ac->rcv_nxt;
	assert_true(ahead > 0 && ahead < PMSS);
	assert_int_equal(ac->rmem_max, RTE_MAX(base, ac->rcvq.n + ac->oooq.n + 1));
	assert_int_equal(ac->rmem_grant, ac->rmem_max - base);
	assert_true(cnt(ARN_TCP_C_RCVBUF_SHRUNK_MBUFS) > 0);
	assert_int_equal(ac->rcvbuf, 64 * 1024);
	/* the edge stays */
	uint32_t edge = a.edge;
	for (int i = 0; i < 3; i++)
		assert_int_equal(peer_round(&a, 2), 0);
	assert_int_equal(a.edge, edge);
	/* a drains: its grant goes back as it does */
	uint32_t g0 = ac->rmem_grant;
	arn_tcp_rx_consume(ac, ac->rcvq.bytes / 2);
	assert_true(ac->rmem_grant < g0 * 3 / 4);
	assert_true(ac->rmem_grant > 0);
	arn_tcp_rx_consume(ac, ac->rcvq.bytes);
	assert_int_equal(ac->rmem_grant, 0);
	assert_int_equal(ac->rmem_max, base);
	assert_int_equal(ac->rcvbuf, 64 * 1024);
	assert_int_equal(cnt(ARN_TCP_C_RCVBUF_GROWN_MBUFS), b.c->rmem_grant);
	/* its window opens again past the old edge, from the base buffer */
	peer_read(&a);
	assert_true(seq_gt(a.edge, edge));
	assert_int_equal(a.retracted, 0);
	assert_int_equal(b.retracted, 0);
}

/* The worker's bound is spent and a connection whose application does not
 * keep up holds a grant: a reading connection's growth clamps it at once
 * (before the stall is a few round trips old), and grows. */
static void test_growth_reclaims_from_a_connection_not_reading(void **state)
{
	(void)state;
	struct peer a, b;
	grow_to_the_bound(&a);
	struct arn_tcp_worker *wk = a.c->wk;
	holding = a.c;
	peer_round(&a, 1); /* a's buffer fills */
	peer_open(&b, 40001);
	for (int i = 0; i < 6; i++)
		peer_round(&b, 1);
	assert_int_equal(cnt(ARN_TCP_C_RCVBUF_RECLAIMED), 1);
	assert_true(a.c->rmem_clamped);
	assert_true(b.c->rcvbuf > 256 * 1024);
	assert_true(cnt(ARN_TCP_C_RCVBUF_GROWN_MBUFS) <= wk->rmem_grow_max);
	assert_int_equal(a.retracted, 0);
}

/* The 16 MiB downloads of bench/proxy/run (2026-12-05): a proxy's
 * upstream connection, grown, whose application drains it no faster than
 * the client reads, is reclaimed by another connection's growth while its
 * sender is half way through the window it was offered. The rest of that
 * window arrives: it was promised, so none of it is dropped (before, 138
 * in-order drops a run, each costing the sender a retransmission timeout
 * that doubled: requests of 8.5 s), and the bound still holds, because
 * the grant only keeps what the edge promised and shrinks as it is read. */
static void test_reclaim_keeps_what_the_offered_edge_promised(void **state)
{
	(void)state;
	struct peer a, b;
	grow_to_the_bound(&a);
	struct arn_tcp_conn *ac = a.c;
	struct arn_tcp_worker *wk = ac->wk;
	uint32_t base = tcp_rmem_budget(wk, 64 * 1024);
	holding = ac;
	uint32_t edge = a.edge;
	uint32_t window = edge - a.seq;
	assert_true(window > 1u << 20);
	peer_send_to(&a, a.seq + window / 2 + PMSS);
	assert_true(ac->rcvq.bytes > ac->rcvbuf / 2);
	/* b reads, grows, and takes a's grant: a is clamped at once */
	peer_open(&b, 40001);
	for (int i = 0; i < 6; i++) {
		peer_round(&b, 1);
		assert_true(cnt(ARN_TCP_C_RCVBUF_GROWN_MBUFS) <= wk->rmem_grow_max);
	}
	assert_int_equal(cnt(ARN_TCP_C_RCVBUF_RECLAIMED), 1);
	assert_true(ac->rmem_clamped);
	assert_true(b.c->rcvbuf > 256 * 1024);
	/* what it holds and what the edge still promises in full segments */
	uint32_t ahead = ac->rcv_adv - ac->rcv_nxt;
	assert_true(ahead > window / 3);
	assert_int_equal(ac->rmem_max, ac->rcvq.n + (ahead + ac->mss - 1) / ac->mss);
	/* the rest of the window arrives: all of it is taken */
	peer_send_to(&a, edge);
	assert_true(edge - a.seq < PMSS);
	assert_int_equal(ac->rcv_nxt, a.seq);
	assert_int_equal(cnt(ARN_TCP_C_RCV_DROPPED_MBUFS), 0);
	assert_int_equal(cnt(ARN_TCP_C_OOO_DROPPED), 0);
	assert_true(cnt(ARN_TCP_C_RCVBUF_GROWN_MBUFS) <= wk->rmem_grow_max);
	/* it drains: the grant goes back as it does, to nothing */
	holding = NULL;
	arn_tcp_rx_consume(ac, ac->rcvq.bytes / 2);
	assert_true(ac->rmem_max < ac->rcvq.n + ahead / ac->mss);
	arn_tcp_rx_consume(ac, ac->rcvq.bytes);
	assert_int_equal(ac->rmem_max, base);
	assert_int_equal(ac->rmem_grant, 0);
	assert_int_equal(cnt(ARN_TCP_C_RCVBUF_GROWN_MBUFS), b.c->rmem_grant);
	assert_int_equal(a.retracted, 0);
	assert_int_equal(b.retracted, 0);
}

/* Connection a grows to 1 MiB, then its application stops reading for
 * 20 ms (an echo or a proxy waiting on its own sending direction) and
 * its peer fills the window. With @p others connections holding grants
 * of their own, reading: */
static struct arn_tcp_conn *pause_reading(struct peer *a, int others)
{
	struct peer o[3];
	for (int k = 0; k < others; k++) {
		peer_open(&o[k], (uint16_t)(40001 + k));
		for (int i = 0; i < 24; i++)
			peer_round(&o[k], 2);
		assert_int_equal(o[k].c->rcvbuf, 1u << 20);
	}
	peer_open(a, 40000);
	for (int i = 0; i < 24; i++)
		peer_round(a, 2);
	assert_int_equal(a->c->rcvbuf, 1u << 20);
	holding = a->c;
	peer_round(a, 2);
	peer_round(a, 2);
	assert_true(a->c->rcvq.bytes > 512 * 1024);
	idle_ms(20);
	return a->c;
}

/* ... none: the worker's bound is mostly free (a's grant is a quarter of
 * it), nobody wants a's grant, and a keeps it and its window. */
static void test_pause_in_reading_keeps_the_grant_while_the_bound_is_free(void **state)
{
	(void)state;
	struct peer a;
	struct arn_tcp_conn *c = pause_reading(&a, 0);
	uint32_t granted = c->rmem_grant;
	assert_true(granted > 0);
	assert_true(cnt(ARN_TCP_C_RCVBUF_GROWN_MBUFS) < c->wk->rmem_grow_max / 2);
	assert_int_equal(cnt(ARN_TCP_C_RCVBUF_CLAMPED), 0);
	assert_int_equal(c->rcvbuf, 1u << 20);
	/* it reads again: the whole window reopens at once */
	holding = NULL;
	arn_tcp_rx_consume(c, c->rcvq.bytes);
	peer_read(&a);
	assert_true(a.edge - c->rcv_nxt >= (1u << 20) * 3 / 4);
	assert_int_equal(c->rmem_grant, granted);
	assert_int_equal(a.retracted, 0);
}

/* ... three: the others hold more than half of the bound, which is
 * contended, and a is clamped after the 10 ms with no growth asking. */
static void test_pause_in_reading_clamps_when_the_bound_is_contended(void **state)
{
	(void)state;
	struct peer a;
	struct arn_tcp_conn *c = pause_reading(&a, 3);
	assert_true(cnt(ARN_TCP_C_RCVBUF_GROWN_MBUFS) - c->rmem_grant > c->wk->rmem_grow_max / 2);
	assert_int_equal(cnt(ARN_TCP_C_RCVBUF_CLAMPED), 1);
	assert_int_equal(cnt(ARN_TCP_C_RCVBUF_RECLAIMED), 0);
	assert_true(c->rmem_clamped);
	assert_int_equal(c->rcvbuf, 64 * 1024);
	assert_int_equal(a.retracted, 0);
}

/* A grown connection that goes idle (nothing held, nothing read) gives
 * its whole grant back after 200 ms (not 150: a keep-alive connection
 * between responses keeps it), keeping the edge it offered; reading
 * again grows it again, from scratch. */
static void test_idle_connection_gives_back_its_grant(void **state)
{
	(void)state;
	struct peer p;
	peer_open(&p, 40000);
	struct arn_tcp_conn *c = p.c;
	struct arn_tcp_worker *wk = c->wk;
	for (int i = 0; i < 24; i++)
		peer_round(&p, 2);
	assert_int_equal(c->rcvbuf, 1u << 20);
	uint32_t granted = c->rmem_grant;
	assert_true(granted > 0);
	uint32_t edge = p.edge;
	idle_ms(150);
	assert_int_equal(c->rmem_grant, granted); /* not yet: between responses */
	idle_ms(100);
	assert_int_equal(c->rmem_grant, 0);
	assert_int_equal(c->rmem_max, tcp_rmem_budget(wk, 64 * 1024));
	assert_int_equal(c->rcvbuf, 64 * 1024);
	assert_int_equal(cnt(ARN_TCP_C_RCVBUF_GROWN_MBUFS), 0);
	assert_int_equal(cnt(ARN_TCP_C_RCVBUF_SHRUNK_MBUFS), granted);
	assert_int_equal(cnt(ARN_TCP_C_RCVBUF_CLAMPED), 1);
	peer_read(&p);
	assert_int_equal(p.edge, edge);
	/* reading again: the offered edge first, then growth */
	uint64_t grown = cnt(ARN_TCP_C_RCVBUF_GROWN);
	for (int i = 0; i < 24; i++)
		peer_round(&p, 2);
	assert_true(cnt(ARN_TCP_C_RCVBUF_GROWN) > grown);
	assert_int_equal(c->rcvbuf, 1u << 20);
	assert_int_equal(cnt(ARN_TCP_C_RCVBUF_GROWN_MBUFS), c->rmem_grant);
	assert_int_equal(cnt(ARN_TCP_C_RCV_DROPPED_MBUFS), 0);
	assert_int_equal(p.retracted, 0);
}

/* A grown connection with a hole at its window's left edge: more
 * segments wait above it than the worker's out-of-order bound (an eighth
 * of the pool) holds; the connection's own grant covers them, so none is
 * dropped, and all are delivered when the hole fills. */
static void test_grown_window_holds_out_of_order_past_the_worker_share(void **state)
{
	(void)state;
	struct peer a;
	grow_to_the_bound(&a);
	struct arn_tcp_conn *c = a.c;
	struct arn_tcp_worker *wk = c->wk;
	uint32_t n = wk->ooo_max + 200;
	assert_true(seq_leq(a.seq + (n + 1) * PMSS, a.edge));
	assert_true(n < c->rmem_max);
	for (uint32_t i = 1; i <= n; i++) {
		peer_seg(&a, TH_ACK, a.seq + i * PMSS, payload, PMSS);
		if (i % 64 == 0) {
			fake_advance(lc, 0);
			fake_drain(lc);
		}
	}
	assert_int_equal(cnt(ARN_TCP_C_OOO_DROPPED), 0);
	assert_int_equal(c->oooq.n, n);
	assert_true(cnt(ARN_TCP_C_OOO_MBUFS) <= wk->ooo_max + c->rmem_grant);
	/* the hole fills: everything goes to the application */
	peer_seg(&a, TH_ACK, a.seq, payload, PMSS);
	a.seq += (n + 1) * PMSS;
	fake_advance(lc, 0);
	fake_drain(lc);
	assert_int_equal(c->rcv_nxt, a.seq);
	assert_int_equal(c->oooq.n, 0);
	assert_int_equal(cnt(ARN_TCP_C_OOO_MBUFS), 0);
}

/* A grown connection whose in-order data waits on a hole (the peer is
 * repairing a loss) has nothing its application could read: it is not a
 * connection that stopped reading, and keeps its grant however long the
 * repair takes. */
static void test_hole_is_not_a_stall(void **state)
{
	(void)state;
	struct peer p;
	peer_open(&p, 40000);
	struct arn_tcp_conn *c = p.c;
	for (int i = 0; i < 24; i++)
		peer_round(&p, 2);
	uint32_t granted = c->rmem_grant;
	assert_true(granted > 0);
	/* segment 0 lost, 1..63 arrive */
	for (uint32_t i = 1; i < 64; i++)
		peer_seg(&p, TH_ACK, p.seq + i * PMSS, payload, PMSS);
	idle_ms(300);
	assert_int_equal(c->oooq.n, 63);
	assert_int_equal(c->rmem_grant, granted);
	assert_int_equal(cnt(ARN_TCP_C_RCVBUF_CLAMPED), 0);
	/* repaired: all of it is read */
	peer_seg(&p, TH_ACK, p.seq, payload, PMSS);
	p.seq += 64 * PMSS;
	fake_advance(lc, 0);
	fake_drain(lc);
	assert_int_equal(c->rcv_nxt, p.seq);
	assert_int_equal(c->rcvq.bytes, 0);
}

int main(void)
{
	fake_eal_init();
	memset(payload, 'p', sizeof(payload));
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_window_scale_from_the_max, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_window_grows_when_the_app_drains, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_window_stays_when_the_app_does_not_read, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_no_growth_without_window_scaling, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_off_keeps_the_buffer_fixed, setup_off, teardown),
	    cmocka_unit_test_setup_teardown(test_old_echoes_do_not_grow_a_trickle, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_growth_bounded_by_the_worker, setup_big, teardown),
	    cmocka_unit_test_setup_teardown(test_no_growth_under_pool_pressure, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_grown_connection_attack_bounded, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_stalled_connection_gives_back_its_grant, setup_big,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_reclaim_keeps_what_the_offered_edge_promised,
					    setup_big, teardown),
	    cmocka_unit_test_setup_teardown(test_growth_reclaims_from_a_connection_not_reading,
					    setup_big, teardown),
	    cmocka_unit_test_setup_teardown(
		test_pause_in_reading_keeps_the_grant_while_the_bound_is_free, setup, teardown),
	    cmocka_unit_test_setup_teardown(
		test_pause_in_reading_clamps_when_the_bound_is_contended, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_idle_connection_gives_back_its_grant, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(
		test_grown_window_holds_out_of_order_past_the_worker_share, setup_big, teardown),
	    cmocka_unit_test_setup_teardown(test_hole_is_not_a_stall, setup, teardown),
	};
	int rc = cmocka_run_group_tests_name("tcp_rcvbuf", tests, NULL, NULL);
	fake_eal_fini();
	return rc;
}
