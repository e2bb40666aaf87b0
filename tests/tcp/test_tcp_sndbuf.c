/*
 * lib/tcp's send-buffer autotuning (issue 16: dataplane.tcp.sndbuf_max;
 * tcp_in.c's sndbuf_expand_check, tcp_rmem.c's tcp_sndbuf_expand, items
 * 7 and 8 of its header) against the fake lib/net (tcp_fake_net.h): an
 * application that keeps its send buffer full (or stops), and crafted
 * peers that acknowledge every second segment they receive, one
 * simulated round trip after it was sent, with a large window (or stop,
 * or close the window).
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
#define RTT_US 2000
#define BASE (64u * 1024) /* dataplane.tcp.sndbuf in every test */
#define NPEERS 4
#define ENDLESS UINT64_MAX

static struct arn_lcore *lc = &fake_lc[0];
static struct arn_tcp_conn *accepted;

/* A crafted receiver, and the application that sends to it. */
struct peer {
	bool used;
	uint16_t port;
	uint32_t seq;	/* its own next sequence number (it sends no data) */
	uint32_t rcv;	/* what it received in order */
	uint32_t tsval; /* its clock */
	uint32_t tsecr; /* the last TSval of ours it saw */
	bool silent;	/* it acknowledges nothing more */
	/* the ends of the segments received since its last ACKs */
	uint32_t ends[4096];
	unsigned n_ends;
	uint32_t round_bytes; /* received in the last round trip */
	/* the application: bytes it still has to send (ENDLESS: always more) */
	uint64_t to_write;
	struct arn_tcp_conn *c;
};
static struct peer peers[NPEERS];
static uint8_t data[16384];

static struct peer *peer_of_conn(const struct arn_tcp_conn *c)
{
	for (unsigned i = 0; i < NPEERS; i++)
		if (peers[i].used && peers[i].c == c)
			return &peers[i];
	return NULL;
}

static struct peer *peer_of_port(uint16_t port)
{
	for (unsigned i = 0; i < NPEERS; i++)
		if (peers[i].used && peers[i].port == port)
			return &peers[i];
	return NULL;
}

/* The application writes until its buffer is full or it has nothing
 * more: a write that falls short leaves it waiting (TF_WANT_WRITE), and
 * on_writable brings it back. */
static void app_fill(struct peer *p)
{
	while (p->to_write) {
		uint32_t n = (uint32_t)RTE_MIN(p->to_write, (uint64_t)sizeof(data));
		int w = arn_tcp_write(p->c, data, n);
		assert_true(w >= 0);
		if (p->to_write != ENDLESS)
			p->to_write -= (uint32_t)w;
		if ((uint32_t)w < n)
			break;
	}
}

static int t_accept(struct arn_tcp_conn *c, void *u)
{
	(void)u;
	accepted = c;
	return 0;
}

static void t_writable(struct arn_tcp_conn *c)
{
	struct peer *p = peer_of_conn(c);
	if (p)
		app_fill(p);
}

static const struct arn_tcp_ops t_ops = {
    .on_accept = t_accept,
    .on_writable = t_writable,
};

static struct arn_dataplane dp_conf;
static unsigned pool_full;

static int setup_with(uint32_t sndbuf_max, uint32_t cc)
{
	accepted = NULL;
	memset(peers, 0, sizeof(peers));
	memset(&dp_conf, 0, sizeof(dp_conf));
	dp_conf.tcp_max_connections = 64;
	dp_conf.tcp_rcvbuf = 64 * 1024;
	dp_conf.tcp_sndbuf = BASE;
	dp_conf.tcp_sndbuf_max = sndbuf_max;
	dp_conf.tcp_cc = cc;
	return fake_tcp_start(lc, &dp_conf, &pool_full, US, LPORT, &t_ops, 64) ? 0 : -1;
}

/* 64 KB growing to 1 MiB, within the worker's bound */
static int setup(void **state)
{
	(void)state;
	return setup_with(1 << 20, ARN_DP_TCP_CC_CUBIC);
}

/* 64 KB growing to 4 MiB: more than the worker's bound on grown send
 * memory (a quarter of the fake pool's 16,383 mbufs, counted at two
 * mbufs per half segment) lets one connection take */
static int setup_big(void **state)
{
	(void)state;
	return setup_with(4 << 20, ARN_DP_TCP_CC_CUBIC);
}

/* setup, with NewReno: cwnd set by the test grows by a segment a round
 * trip at most (CUBIC's growth there depends on its history) */
static int setup_newreno(void **state)
{
	(void)state;
	return setup_with(1 << 20, ARN_DP_TCP_CC_NEWRENO);
}

/* autotuning off: sndbuf_max 0 */
static int setup_off(void **state)
{
	(void)state;
	return setup_with(0, ARN_DP_TCP_CC_CUBIC);
}

/* mbufs a test holds to put the pool under pressure: given back at
 * teardown too, so that a failed test does not fail the next ones */
static struct rte_mbuf *held[16384];
static unsigned n_held;

static int teardown(void **state)
{
	(void)state;
	while (n_held)
		rte_pktmbuf_free(held[--n_held]);
	arn_tcp_worker_fini(lc);
	fake_drain(lc);
	return fake_pool_full_again(pool_full);
}

/* ---- the crafted receivers ------------------------------------------------------- */

static void peer_ack(struct peer *p, uint32_t ack, uint16_t wnd)
{
	struct fake_opts o = fake_no_opts;
	o.ts = true;
	o.tsval = p->tsval;
	o.tsecr = p->tsecr;
	arn_tcp_input(lc,
		      fake_seg(PEER, US, p->port, LPORT, TH_ACK, p->seq, ack, wnd, &o, NULL, 0));
}

/* What the stack sent: each peer takes its segments (in order: the fake
 * net loses none; what it already has, a retransmission, is left). */
static void take(const struct fake_out *out)
{
	struct peer *p = peer_of_port(out->dport);
	if (p == NULL)
		return;
	if (out->o.has_ts)
		p->tsecr = out->o.tsval;
	uint32_t end = out->seq + out->len;
	if (out->len == 0 || p->silent || !seq_leq(out->seq, p->rcv) || !seq_gt(end, p->rcv))
		return;
	p->round_bytes += end - p->rcv;
	p->rcv = end;
	if (p->n_ends < RTE_DIM(p->ends))
		p->ends[p->n_ends++] = end;
}

static void collect(void)
{
	static struct fake_out out;
	fake_advance(lc, 0);
	while (fake_next(lc, &out))
		take(&out);
}

/* A connection to the stack's listener from port @p port (window scale 7,
 * SACK, timestamps, MSS 1460), whose application has @p to_write bytes to
 * send and writes them as fast as its buffer takes them. */
static struct peer *peer_open(uint16_t port, uint64_t to_write)
{
	struct peer *p = NULL;
	for (unsigned i = 0; i < NPEERS && p == NULL; i++)
		if (!peers[i].used)
			p = &peers[i];
	assert_non_null(p);
	memset(p, 0, sizeof(*p));
	p->port = port;
	p->seq = 1000;
	p->tsval = 5000;
	struct fake_opts o = {.mss = 1460, .ws = 7, .sack_ok = true, .ts = true, .tsval = p->tsval};
	accepted = NULL;
	arn_tcp_input(lc, fake_seg(PEER, US, port, LPORT, TH_SYN, p->seq, 0, 65535, &o, NULL, 0));
	fake_advance(lc, 0);
	/* the SYN-ACK, among what the others were sent in the same poll */
	static struct fake_out out;
	do
		assert_true(fake_next(lc, &out));
	while (out.dport != port && (take(&out), true));
	assert_int_equal(out.flags, TH_SYN | TH_ACK);
	p->tsecr = out.o.tsval;
	p->seq++;
	p->rcv = out.seq + 1;
	peer_ack(p, p->rcv, 65535);
	assert_non_null(accepted);
	p->c = accepted;
	p->used = true;
	assert_int_equal(p->c->state, TCPS_ESTABLISHED);
	assert_int_equal(p->c->sndbuf, BASE);
	p->to_write = to_write;
	app_fill(p);
	return p;
}

/* One round trip: what the stack sent reaches the peers, a round trip
 * passes, and each peer that still acknowledges sends an ACK for every
 * second segment (and the last), with a window of 8 MB; the stack answers
 * (the application refills its buffer as on_writable says). */
static void round_trip(void)
{
	collect();
	fake_clock_set(fake_now_us + RTT_US);
	for (unsigned i = 0; i < NPEERS; i++) {
		struct peer *p = &peers[i];
		if (!p->used)
			continue;
		p->tsval += RTT_US / 1000;
		if (!p->silent) {
			for (unsigned k = 1; k < p->n_ends; k += 2)
				peer_ack(p, p->ends[k], 65535);
			if (p->n_ends % 2)
				peer_ack(p, p->ends[p->n_ends - 1], 65535);
		}
		p->n_ends = 0;
	}
	for (unsigned i = 0; i < NPEERS; i++)
		peers[i].round_bytes = 0;
	collect();
}

/* The peer goes: it is no one's any more, and the stack resets it. */
static void peer_abort(struct peer *p)
{
	p->used = false;
	arn_tcp_abort(p->c);
	fake_advance(lc, 1);
	fake_drain(lc);
}

/* What the worker's gauge should say: every live connection's grant. */
static uint64_t grants(void)
{
	uint64_t sum = 0;
	for (unsigned i = 0; i < NPEERS; i++)
		if (peers[i].used)
			sum += peers[i].c->smem_grant;
	return sum;
}

/* ---- tests ------------------------------------------------------------------------ */

/* An application that keeps its buffer full on a connection whose cwnd
 * has room for more than the buffer holds: the buffer grows on the ACKs
 * (to twice cwnd, as Linux's tcp_sndbuf_expand), never past sndbuf_max,
 * and the connection sends more per round trip than the base buffer
 * would let it. The grant is the grown bytes' worst case in mbufs, and
 * the worker's gauge says the same. */
static void test_buffer_grows_while_the_app_keeps_it_full(void **state)
{
	(void)state;
	struct peer *p = peer_open(40000, ENDLESS);
	struct arn_tcp_conn *c = p->c;
	struct arn_tcp_worker *wk = c->wk;
	for (int i = 0; i < 6; i++) {
		round_trip();
		assert_true(c->sndbuf <= 1u << 20);
	}
	assert_true(c->sndbuf > BASE);
	assert_true(cnt(ARN_TCP_C_SNDBUF_GROWN) >= 1);
	assert_int_equal(c->smem_grant, tcp_smem_cost(wk, c->sndbuf - BASE));
	assert_int_equal(cnt(ARN_TCP_C_SNDBUF_GROWN_MBUFS), c->smem_grant);
	for (int i = 0; i < 20; i++) {
		round_trip();
		assert_true(c->sndbuf <= 1u << 20);
		assert_true(c->sndbuf <= 2 * c->cwnd || c->sndbuf == BASE);
	}
	assert_int_equal(c->sndbuf, 1u << 20);
	assert_int_equal(c->smem_grant, tcp_smem_cost(wk, (1u << 20) - BASE));
	assert_int_equal(cnt(ARN_TCP_C_SNDBUF_GROWN_MBUFS), c->smem_grant);
	assert_int_equal(cnt(ARN_TCP_C_SNDBUF_GROW_LIMITED), 0);
	/* the sender uses it: a round trip carries far more than 64 KB */
	assert_true(p->round_bytes > 512 * 1024);
	/* at most once a round trip: not once an ACK */
	assert_true(cnt(ARN_TCP_C_SNDBUF_GROWN) <= 26);
}

/* sndbuf_max 0: the same application and peer, the buffer stays. */
static void test_off_keeps_the_buffer_fixed(void **state)
{
	(void)state;
	struct peer *p = peer_open(40000, ENDLESS);
	for (int i = 0; i < 12; i++)
		round_trip();
	assert_int_equal(p->c->sndbuf, BASE);
	assert_true(p->round_bytes <= BASE);
	assert_int_equal(p->c->smem_grant, 0);
	assert_int_equal(cnt(ARN_TCP_C_SNDBUF_GROWN), 0);
	assert_int_equal(cnt(ARN_TCP_C_SNDBUF_GROW_LIMITED), 0);
	assert_int_equal(cnt(ARN_TCP_C_SNDBUF_GROWN_MBUFS), 0);
}

/* cwnd-limited: cwnd (held at 24 segments, about 35 KB: the path's
 * congestion) is smaller than what the buffer holds, so the buffer is not
 * what limits the sender, and it stays, although the application waits
 * on it and twice cwnd is more than the buffer. Once cwnd opens, the
 * buffer is the limit and grows. */
static void test_no_growth_when_cwnd_limited(void **state)
{
	(void)state;
	struct peer *p = peer_open(40000, ENDLESS);
	struct arn_tcp_conn *c = p->c;
	uint32_t cwnd = 24u * c->mss;
	assert_true(2 * cwnd > BASE);
	for (int i = 0; i < 10; i++) {
		c->cwnd = c->ssthresh = cwnd;
		round_trip();
		assert_true(c->flags & TF_WANT_WRITE);
		/* what the path takes, not what the buffer holds */
		assert_true(p->round_bytes <= cwnd + 2u * c->mss);
		assert_true(c->sndq.bytes > cwnd + 2u * c->mss);
	}
	assert_int_equal(c->sndbuf, BASE);
	assert_int_equal(cnt(ARN_TCP_C_SNDBUF_GROWN), 0);
	assert_int_equal(cnt(ARN_TCP_C_SNDBUF_GROWN_MBUFS), 0);
	/* the path opens */
	c->ssthresh = UINT32_MAX;
	for (int i = 0; i < 8; i++)
		round_trip();
	assert_true(c->sndbuf > BASE);
}

/* The worker's bound on grown send memory: connections' send buffers
 * together grow by at most wk->smem_grow_max mbufs (a quarter of the
 * pool). The first connection wants 4 MiB, more than the bound allows,
 * and gets what it allows (the growth is cut, and counted); a second
 * one then cannot grow at all; when the first one's application has
 * sent everything and its queue empties, its grant goes back and the
 * second grows. */
static void test_growth_bounded_by_the_worker(void **state)
{
	(void)state;
	struct peer *a = peer_open(40000, ENDLESS);
	struct arn_tcp_worker *wk = a->c->wk;
	assert_int_equal(wk->smem_grow_max, 16383 / 4);
	for (int i = 0; i < 14; i++) {
		round_trip();
		assert_true(cnt(ARN_TCP_C_SNDBUF_GROWN_MBUFS) <= wk->smem_grow_max);
	}
	assert_true(a->c->sndbuf > 1u << 20);
	assert_true(a->c->sndbuf < 4u << 20);
	assert_true(cnt(ARN_TCP_C_SNDBUF_GROW_LIMITED) >= 1);
	/* cut to what was left: the whole bound but an odd mbuf */
	assert_true(cnt(ARN_TCP_C_SNDBUF_GROWN_MBUFS) + 1 >= wk->smem_grow_max);
	assert_int_equal(cnt(ARN_TCP_C_SNDBUF_GROWN_MBUFS), a->c->smem_grant);
	uint32_t a_buf = a->c->sndbuf;

	struct peer *b = peer_open(40001, ENDLESS);
	uint64_t limited = cnt(ARN_TCP_C_SNDBUF_GROW_LIMITED);
	for (int i = 0; i < 8; i++) {
		round_trip();
		assert_true(cnt(ARN_TCP_C_SNDBUF_GROWN_MBUFS) <= wk->smem_grow_max);
		assert_int_equal(cnt(ARN_TCP_C_SNDBUF_GROWN_MBUFS), grants());
	}
	assert_int_equal(b->c->sndbuf, BASE);
	assert_int_equal(b->c->smem_grant, 0);
	assert_int_equal(a->c->sndbuf, a_buf);
	assert_true(cnt(ARN_TCP_C_SNDBUF_GROW_LIMITED) > limited);
	/* asked (and refused) once a round trip each, not once an ACK */
	assert_true(cnt(ARN_TCP_C_SNDBUF_GROW_LIMITED) - limited <= 2 * 8);

	/* the first one's application is done: its queue drains */
	a->to_write = 0;
	for (int i = 0; i < 8 && a->c->sndq.bytes; i++)
		round_trip();
	assert_int_equal(a->c->sndq.bytes, 0);
	assert_int_equal(a->c->smem_grant, 0);
	assert_int_equal(a->c->sndbuf, BASE);
	for (int i = 0; i < 8; i++) {
		round_trip();
		assert_true(cnt(ARN_TCP_C_SNDBUF_GROWN_MBUFS) <= wk->smem_grow_max);
	}
	assert_true(b->c->sndbuf > 1u << 20);
	assert_int_equal(cnt(ARN_TCP_C_SNDBUF_GROWN_MBUFS), b->c->smem_grant);
}

/* Under pool pressure (under a quarter of the pool free) no buffer grows,
 * however the application waits; counted. Relief: it grows. */
static void test_no_growth_under_pool_pressure(void **state)
{
	(void)state;
	struct peer *p = peer_open(40000, ENDLESS);
	unsigned target = pool_full / 5;
	while (rte_mempool_avail_count(fake_pool) > target)
		held[n_held++] = rte_pktmbuf_alloc(fake_pool);
	fake_advance(lc, 1);
	assert_true(p->c->wk->pressure);
	for (int i = 0; i < 10; i++)
		round_trip();
	assert_true(p->c->wk->pressure);
	assert_int_equal(p->c->sndbuf, BASE);
	assert_int_equal(cnt(ARN_TCP_C_SNDBUF_GROWN), 0);
	assert_int_equal(cnt(ARN_TCP_C_SNDBUF_GROWN_MBUFS), 0);
	assert_true(cnt(ARN_TCP_C_SNDBUF_GROW_LIMITED) >= 1);
	while (n_held)
		rte_pktmbuf_free(held[--n_held]);
	fake_advance(lc, 1);
	for (int i = 0; i < 4; i++)
		round_trip();
	assert_true(p->c->sndbuf > BASE);
}

/* Given back: an application with 6 MiB to send grows its buffer; once it
 * has sent everything and all is acknowledged, the buffer is the base one
 * again and the grant is the worker's again. The next response grows it
 * again, and a connection that goes gives back its grant. */
static void test_buffer_and_grant_return(void **state)
{
	(void)state;
	struct peer *p = peer_open(40000, 6u << 20);
	struct arn_tcp_conn *c = p->c;
	for (int i = 0; i < 8; i++)
		round_trip();
	assert_true(p->to_write > 0);
	assert_true(c->sndbuf > BASE);
	assert_true(c->smem_grant > 0);
	for (int i = 0; i < 30 && (p->to_write || c->sndq.bytes); i++) {
		round_trip();
		assert_int_equal(cnt(ARN_TCP_C_SNDBUF_GROWN_MBUFS), c->smem_grant);
	}
	assert_int_equal(p->to_write, 0);
	assert_int_equal(c->sndq.bytes, 0);
	assert_int_equal(c->sndbuf, BASE);
	assert_int_equal(c->smem_grant, 0);
	assert_int_equal(cnt(ARN_TCP_C_SNDBUF_GROWN_MBUFS), 0);
	/* idle: nothing comes back */
	round_trip();
	assert_int_equal(c->sndbuf, BASE);
	/* the next response */
	uint64_t grown = cnt(ARN_TCP_C_SNDBUF_GROWN);
	p->to_write = 6u << 20;
	app_fill(p);
	for (int i = 0; i < 6; i++)
		round_trip();
	assert_true(cnt(ARN_TCP_C_SNDBUF_GROWN) > grown);
	assert_true(c->smem_grant > 0);
	assert_int_equal(cnt(ARN_TCP_C_SNDBUF_GROWN_MBUFS), c->smem_grant);
	/* the connection goes with its queue full: its grant with it */
	peer_abort(p);
	assert_int_equal(cnt(ARN_TCP_C_SNDBUF_GROWN_MBUFS), 0);
}

/* A peer that read fast (its buffer grew) and then acknowledges half of
 * what is in flight with a zero window: that ACK of new data, with the
 * application waiting and cwnd open, grows nothing (the peer's window,
 * not the buffer, holds the sender back); the connection, its queue full
 * and the peer silent, holds no more than its grant for seconds of
 * retransmissions, and the grant stays what it was. */
static void test_zero_window_peer_keeps_only_its_grant(void **state)
{
	(void)state;
	struct peer *p = peer_open(40000, ENDLESS);
	struct arn_tcp_conn *c = p->c;
	struct arn_tcp_worker *wk = c->wk;
	for (int i = 0; i < 4; i++)
		round_trip();
	collect();
	assert_true(c->sndbuf > BASE);
	assert_true(c->sndbuf < 1u << 20); /* it could grow more */
	assert_true(p->n_ends >= 4);
	uint32_t buf = c->sndbuf, grant = c->smem_grant;
	uint64_t grown = cnt(ARN_TCP_C_SNDBUF_GROWN);
	/* half of the flight, window 0 */
	fake_clock_set(fake_now_us + RTT_US);
	p->tsval += RTT_US / 1000;
	peer_ack(p, p->ends[p->n_ends / 2 - 1], 0);
	p->silent = true;
	assert_int_equal(c->snd_wnd, 0);
	assert_true(2 * c->cwnd > buf);
	assert_int_equal(c->sndbuf, buf);
	assert_int_equal(cnt(ARN_TCP_C_SNDBUF_GROWN), grown);
	/* the application fills what the ACK freed; seconds pass */
	for (int i = 0; i < 3000; i++) {
		fake_advance(lc, 1);
		fake_drain(lc);
		if (i % 100 == 0) {
			assert_int_equal(c->sndbuf, buf);
			assert_int_equal(c->smem_grant, grant);
			assert_true(c->sndq.bytes <= c->sndbuf);
			/* the mbufs its queue pins: within the base buffer's worst
			 * case (arn_tcp.h) and its grant */
			assert_true(c->sndq.n <= 2 * (BASE / (wk->seg_max / 2) + 1) + grant);
		}
	}
	assert_true(c->sndq.bytes > buf - buf / 4);
	assert_int_equal(cnt(ARN_TCP_C_SNDBUF_GROWN_MBUFS), grant);
	assert_int_equal(cnt(ARN_TCP_C_SNDBUF_GROWN), grown);
}

/* Attackers that read fast together, then all stop acknowledging: each
 * holds at most its grant, and their grants together, the worker's gauge,
 * never pass the worker's quarter of the pool, before the stall or during
 * it; the grants go when they do. */
static void test_stalled_attackers_bounded_by_the_worker(void **state)
{
	(void)state;
	struct peer *at[NPEERS];
	for (unsigned i = 0; i < NPEERS; i++)
		at[i] = peer_open((uint16_t)(40000 + i), ENDLESS);
	struct arn_tcp_worker *wk = at[0]->c->wk;
	for (int r = 0; r < 12; r++) {
		round_trip();
		assert_true(cnt(ARN_TCP_C_SNDBUF_GROWN_MBUFS) <= wk->smem_grow_max);
		assert_int_equal(cnt(ARN_TCP_C_SNDBUF_GROWN_MBUFS), grants());
	}
	/* together they wanted 16 MiB: the bound cut them */
	assert_true(cnt(ARN_TCP_C_SNDBUF_GROW_LIMITED) >= 1);
	assert_true(cnt(ARN_TCP_C_SNDBUF_GROWN_MBUFS) + NPEERS >= wk->smem_grow_max);
	uint32_t grant[NPEERS];
	for (unsigned i = 0; i < NPEERS; i++) {
		at[i]->silent = true;
		grant[i] = at[i]->c->smem_grant;
	}
	for (int ms = 0; ms < 3000; ms++) {
		fake_advance(lc, 1);
		fake_drain(lc);
		if (ms % 100)
			continue;
		assert_true(cnt(ARN_TCP_C_SNDBUF_GROWN_MBUFS) <= wk->smem_grow_max);
		for (unsigned i = 0; i < NPEERS; i++) {
			struct arn_tcp_conn *c = at[i]->c;
			assert_int_equal(c->smem_grant, grant[i]);
			assert_true(c->sndq.bytes <= c->sndbuf);
			assert_true(c->sndq.n <= 2 * (BASE / (wk->seg_max / 2) + 1) + grant[i]);
		}
	}
	for (unsigned i = 0; i < NPEERS; i++)
		peer_abort(at[i]);
	assert_int_equal(cnt(ARN_TCP_C_SNDBUF_GROWN_MBUFS), 0);
}

int main(void)
{
	fake_eal_init();
	memset(data, 'd', sizeof(data));
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_buffer_grows_while_the_app_keeps_it_full, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_off_keeps_the_buffer_fixed, setup_off, teardown),
	    cmocka_unit_test_setup_teardown(test_no_growth_when_cwnd_limited, setup_newreno,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_growth_bounded_by_the_worker, setup_big, teardown),
	    cmocka_unit_test_setup_teardown(test_no_growth_under_pool_pressure, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_buffer_and_grant_return, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_zero_window_peer_keeps_only_its_grant, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_stalled_attackers_bounded_by_the_worker, setup_big,
					    teardown),
	};
	int rc = cmocka_run_group_tests_name("tcp_sndbuf", tests, NULL, NULL);
	fake_eal_fini();
	return rc;
}
