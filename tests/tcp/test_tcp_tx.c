/*
 * lib/tcp's transmit path against the fake lib/net (tcp_fake_net.h): which
 * of lib/net's output calls a segment takes. A connection's segments go
 * through its own header template (arn_net_tcp_output), whose state lib/net
 * keeps in the connection; segments without a connection (a RST to a
 * stranger) take arn_net_ip4_output_tos.
 *
 * Every test ends with the mbuf pool full again: a leaked mbuf fails it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tcp_fake_net.h"

#define US FAKE_ADDR(0) /* 198.18.0.1: the stack under test */
#define LPORT 80

static struct arn_lcore *lc = &fake_lc[0];
static struct arn_tcp_conn *accepted, *last_accepted;
static int closes;

static int t_accept(struct arn_tcp_conn *c, void *u)
{
	(void)u;
	accepted = last_accepted = c;
	return 0;
}

static bool hold_data; /* t_data leaves what came in the receive queue */

static void t_data(struct arn_tcp_conn *c, struct rte_mbuf *head, uint32_t len)
{
	(void)head;
	if (hold_data)
		return;
	uint8_t buf[2048];
	while (len) {
		uint32_t n = arn_tcp_read(c, buf, RTE_MIN(len, (uint32_t)sizeof(buf)));
		if (n == 0)
			break;
		len -= n;
	}
}

static void t_close(struct arn_tcp_conn *c, int reason)
{
	(void)c;
	(void)reason;
	closes++;
	accepted = NULL;
}

static const struct arn_tcp_ops t_ops = {
    .on_accept = t_accept,
    .on_data = t_data,
    .on_close = t_close,
};

static struct arn_dataplane dp_conf;
static unsigned pool_full;

static int setup(void **state)
{
	(void)state;
	accepted = NULL;
	closes = 0;
	hold_data = false;
	memset(&dp_conf, 0, sizeof(dp_conf));
	dp_conf.tcp_max_connections =
	    64; /* a LIFO free list: the next connection reuses the slot */
	dp_conf.tcp_rcvbuf = 64 * 1024;
	dp_conf.tcp_sndbuf = 64 * 1024;
	return fake_tcp_start(lc, &dp_conf, &pool_full, US, LPORT, &t_ops, 4) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	arn_tcp_worker_fini(lc);
	fake_drain(lc);
	return fake_pool_full_again(pool_full);
}

static struct fake_out out;

static void expect_seg(uint8_t flags)
{
	fake_advance(lc, 0);
	assert_true(fake_next(lc, &out));
	assert_int_equal(out.flags, flags);
}

/* Open a connection from @p peer:@p pport, send 100 bytes of data, have
 * the application answer with @p len bytes, then reset it from the peer. */
static void one_connection(uint32_t peer, uint16_t pport, uint32_t len)
{
	uint32_t seq = 7000;
	arn_tcp_input(lc, fake_seg(peer, US, pport, LPORT, TH_SYN, seq, 0, 65535, NULL, NULL, 0));
	expect_seg(TH_SYN | TH_ACK);
	uint32_t isn = out.seq;
	seq++;
	arn_tcp_input(lc,
		      fake_seg(peer, US, pport, LPORT, TH_ACK, seq, isn + 1, 65535, NULL, NULL, 0));
	assert_non_null(accepted);
	static uint8_t data[4096];
	memset(data, 'x', sizeof(data));
	arn_tcp_input(lc, fake_seg(peer, US, pport, LPORT, TH_ACK | TH_PSH, seq, isn + 1, 65535,
				   NULL, data, 100));
	seq += 100;
	assert_int_equal(arn_tcp_write(accepted, data, len), (int)len);
	fake_advance(lc, 0);
	uint32_t got = 0;
	while (fake_next(lc, &out)) {
		assert_int_equal(out.src, US);
		assert_int_equal(out.dst, peer);
		assert_int_equal(out.dport, pport);
		got += out.len;
	}
	assert_int_equal(got, len);
	arn_tcp_input(lc, fake_seg(peer, US, pport, LPORT, TH_RST, seq, 0, 0, NULL, NULL, 0));
	fake_advance(lc, 0);
	assert_null(accepted);
}

/* Every segment of a connection (its SYN-ACK, data and ACKs) goes through
 * the connection's template; a RST for a segment no connection owns does
 * not. The one connection slot is then reused by a connection from
 * another peer: the fake binds a template to the addresses it first saw
 * and aborts if a segment of another flow brings it, so a slot that kept
 * its old template would fail here. */
static void test_connection_segments_use_its_template(void **state)
{
	(void)state;
	uint64_t tmpl0 = fake_tmpl_out, plain0 = fake_plain_out;
	one_connection(0xc6120063u, 40000, 3000);
	uint64_t tmpl = fake_tmpl_out - tmpl0;
	assert_true(tmpl >= 7); /* SYN-ACK, six segments of 536 bytes at most */
	assert_int_equal(fake_plain_out, plain0);
	/* a RST to a stranger: no connection, no template */
	arn_tcp_input(lc, fake_seg(0xc6120064u, US, 40001, 81, TH_ACK, 1, 1, 0, NULL, NULL, 0));
	fake_advance(lc, 0);
	assert_true(fake_next(lc, &out));
	assert_int_equal(out.flags, TH_RST);
	assert_int_equal(fake_plain_out, plain0 + 1);
	assert_int_equal(fake_tmpl_out - tmpl0, tmpl);
	struct arn_tcp_conn *first = last_accepted;
	one_connection(0xc6120065u, 40002, 100);
	assert_ptr_equal(last_accepted, first); /* the same slot */
	assert_true(fake_tmpl_out - tmpl0 > tmpl);
	assert_int_equal(closes, 2);
}

/* A connection from @p pport that negotiated SACK (so RACK-TLP is on),
 * established, nothing in flight, SRTT 1 ms. */
static struct arn_tcp_conn *rack_connection(uint16_t pport, uint32_t *seq, uint32_t *isn)
{
	const uint32_t peer = 0xc6120063u;
	struct fake_opts o = {.mss = 1460, .ws = -1, .sack_ok = true};
	*seq = 7000;
	arn_tcp_input(lc, fake_seg(peer, US, pport, LPORT, TH_SYN, *seq, 0, 65535, &o, NULL, 0));
	expect_seg(TH_SYN | TH_ACK);
	*isn = out.seq;
	(*seq)++;
	arn_tcp_input(
	    lc, fake_seg(peer, US, pport, LPORT, TH_ACK, *seq, *isn + 1, 65535, NULL, NULL, 0));
	assert_non_null(accepted);
	struct arn_tcp_conn *c = accepted;
	assert_true(tcp_rack_on(c));
	c->srtt_us8 = 1000 << 3;
	c->rttvar_us4 = 1000 << 1;
	return c;
}

/* Send @p len bytes on @p c with nothing in flight (RTO @p rto ms, backed
 * off @p backoff times) and return the rexmt timer's delay from now, with
 * whether it is the loss probe's. */
static uint64_t first_flight_timer(struct arn_tcp_conn *c, uint32_t rto, uint8_t backoff,
				   uint32_t len, bool *tlp)
{
	static uint8_t data[8192];
	assert_int_equal(c->snd_max, c->snd_una);
	assert_int_equal(c->t_rexmt, 0);
	c->rto = rto;
	c->backoff = backoff;
	assert_int_equal(arn_tcp_write(c, data, len), (int)len);
	fake_advance(lc, 0);
	fake_drain(lc);
	assert_true(c->snd_max - c->snd_una == len);
	*tlp = (c->flags & TF_TLP) != 0;
	return c->t_rexmt - c->wk->now_ms;
}

/* The timer a flight starts with (RFC 8985 7.2 against RFC 6298): with
 * one segment out the probe waits 2 x SRTT + WCDelAckT (200 ms), so the
 * RTO (200 ms, not backed off) comes first; a larger RTO, or one backed
 * off, leaves the probe first; with more than a segment out the probe
 * waits 2 x SRTT + 2 ms. Each case on a fresh flight of its own. */
static void test_first_flight_arms_rto_or_probe(void **state)
{
	(void)state;
	static const struct {
		uint32_t rto;
		uint8_t backoff;
		uint32_t len;
		uint64_t want;
		bool tlp;
	} cases[] = {
	    {200, 0, 100, 200, false}, /* one segment: the RTO */
	    {201, 0, 100, 201, false}, /* the probe (202 ms) later still */
	    {250, 0, 100, 202, true},  /* 2 x 1 ms + 200 ms before the RTO */
	    {200, 1, 100, 202, true},  /* backed off: 400 ms */
	    {150, 0, 100, 150, false}, /* a lower RTO (set by hand) */
	    {200, 0, 3000, 4, true},   /* three segments: 2 x 1 ms + 2 ms */
	};
	for (unsigned i = 0; i < RTE_DIM(cases); i++) {
		uint32_t seq, isn;
		struct arn_tcp_conn *c = rack_connection((uint16_t)(40100 + i), &seq, &isn);
		bool tlp;
		uint64_t d =
		    first_flight_timer(c, cases[i].rto, cases[i].backoff, cases[i].len, &tlp);
		assert_int_equal(d, cases[i].want);
		assert_int_equal(tlp, cases[i].tlp);
		arn_tcp_input(lc, fake_seg(0xc6120063u, US, (uint16_t)(40100 + i), LPORT, TH_RST,
					   seq, 0, 0, NULL, NULL, 0));
		fake_advance(lc, 0);
		fake_drain(lc);
		assert_null(accepted);
	}
}

/* arn_tcp.h's inline reads (struct arn_tcp_conn_pub over the stack's
 * fields): the user pointer as set, the receive queue's bytes as they
 * arrive and are consumed. */
static void test_inline_reads_follow_the_stack(void **state)
{
	(void)state;
	hold_data = true;
	uint32_t seq, isn;
	struct arn_tcp_conn *c = rack_connection(40200, &seq, &isn);
	assert_null(arn_tcp_user(c));
	int mark;
	arn_tcp_set_user(c, &mark);
	assert_ptr_equal(arn_tcp_user(c), &mark);
	assert_int_equal(arn_tcp_rx_pending(c), 0);
	static uint8_t data[300];
	for (uint32_t i = 0; i < 3; i++) {
		arn_tcp_input(lc, fake_seg(0xc6120063u, US, 40200, LPORT, TH_ACK | TH_PSH, seq,
					   isn + 1, 65535, NULL, data, 100));
		seq += 100;
		assert_int_equal(arn_tcp_rx_pending(c), 100 * (i + 1));
	}
	arn_tcp_rx_consume(c, 150);
	assert_int_equal(arn_tcp_rx_pending(c), 150);
	assert_int_equal(arn_tcp_read(c, data, sizeof(data)), 150);
	assert_int_equal(arn_tcp_rx_pending(c), 0);
	assert_ptr_equal(arn_tcp_user(c), &mark);
	arn_tcp_input(lc,
		      fake_seg(0xc6120063u, US, 40200, LPORT, TH_RST, seq, 0, 0, NULL, NULL, 0));
	fake_advance(lc, 0);
	fake_drain(lc);
	assert_null(accepted);
}

static struct rte_mbuf *filled_mbuf(char ch, uint16_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(fake_pool);
	assert_non_null(m);
	memset(rte_pktmbuf_append(m, len), ch, len);
	return m;
}

/* arn_tcp_write_mbuf: one mbuf into an empty send queue is queued as it
 * is; a small one after it joins its tail (copied, freed); a chain is
 * linked mbuf by mbuf; what goes out is every byte in order. */
static void test_write_mbuf_queues_and_merges(void **state)
{
	(void)state;
	uint32_t seq, isn;
	struct arn_tcp_conn *c = rack_connection(40300, &seq, &isn);
	c->snd_wnd = 0; /* nothing leaves before the checks below */
	assert_int_equal(arn_tcp_write_mbuf(c, filled_mbuf('a', 100)), 0);
	assert_int_equal(c->sndq.n, 1);
	assert_int_equal(c->sndq.bytes, 100);
	assert_int_equal(c->sndq.head->pkt_len, 100);
	assert_int_equal(arn_tcp_write_mbuf(c, filled_mbuf('b', 50)), 0);
	assert_int_equal(c->sndq.n, 1); /* into the tail */
	assert_int_equal(c->sndq.bytes, 150);
	struct rte_mbuf *chain = filled_mbuf('c', 1000);
	assert_int_equal(rte_pktmbuf_chain(chain, filled_mbuf('d', 20)), 0);
	assert_int_equal(arn_tcp_write_mbuf(c, chain), 0);
	assert_int_equal(c->sndq.n, 2); /* 'c' linked (half a segment or more), 'd' copied */
	assert_int_equal(c->sndq.bytes, 1170);
	assert_int_equal(c->sndq.tail->nb_segs, 1);
	assert_int_equal(c->sndq.tail->pkt_len, 1020);
	/* the window opens: every byte goes, in order */
	arn_tcp_input(lc, fake_seg(0xc6120063u, US, 40300, LPORT, TH_ACK, seq, isn + 1, 65535, NULL,
				   NULL, 0));
	fake_advance(lc, 0);
	static uint8_t got[2048];
	uint32_t n = 0;
	while (fake_next(lc, &out)) {
		assert_true(n + out.len <= sizeof(got));
		memcpy(got + n, out.data, out.len);
		n += out.len;
	}
	assert_int_equal(n, 1170);
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(got[i], i < 100 ? 'a' : i < 150 ? 'b' : i < 1150 ? 'c' : 'd');
	arn_tcp_input(lc,
		      fake_seg(0xc6120063u, US, 40300, LPORT, TH_RST, seq, 0, 0, NULL, NULL, 0));
	fake_advance(lc, 0);
	fake_drain(lc);
	assert_null(accepted);
}

/* A sender that catches up with its application (a proxy forwarding a
 * download piece by piece as it arrives): after each piece goes out
 * whole, the send cursor is the queue's last mbuf, not cleared; the next
 * piece's segment starts from it instead of walking every unacknowledged
 * mbuf from the queue's head (2026-12-05: 7% of the worker in
 * bench/proxy/run's downloads). Every byte still goes out in order, and an
 * ACK that frees the cursor's mbuf clears it. */
static void test_send_cursor_follows_the_application(void **state)
{
	(void)state;
	uint32_t seq, isn;
	struct arn_tcp_conn *c = rack_connection(40500, &seq, &isn);
	c->cwnd = 64 * 1460; /* the whole test in flight: nothing ACKed */
	static uint8_t got[40 * 1000];
	uint32_t n = 0;
	for (int i = 0; i < 40; i++) {
		assert_int_equal(arn_tcp_write_mbuf(c, filled_mbuf((char)('A' + i), 1000)), 0);
		fake_advance(lc, 0);
		while (fake_next(lc, &out)) {
			assert_true(n + out.len <= sizeof(got));
			memcpy(got + n, out.data, out.len);
			n += out.len;
		}
		assert_int_equal(n, (uint32_t)(i + 1) * 1000);
		assert_int_equal(c->sndq.n, i + 1);
		/* the cursor: the last mbuf, sent whole */
		assert_ptr_equal(c->snd_cur, c->sndq.tail);
		assert_int_equal(c->snd_cur_off + c->snd_cur->data_len, c->snd_max);
	}
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(got[i], 'A' + (int)(i / 1000));
	/* all of it ACKed but the last piece's last byte: the cursor's mbuf
	 * stays (trimmed), so the cursor is cleared and recomputed */
	arn_tcp_input(lc, fake_seg(0xc6120063u, US, 40500, LPORT, TH_ACK, seq, isn + 1 + n - 1,
				   65535, NULL, NULL, 0));
	fake_advance(lc, 0);
	fake_drain(lc);
	assert_null(c->snd_cur);
	assert_int_equal(c->sndq.bytes, 1);
	/* a new piece after it goes out right */
	assert_int_equal(arn_tcp_write_mbuf(c, filled_mbuf('z', 1000)), 0);
	fake_advance(lc, 0);
	assert_true(fake_next(lc, &out));
	assert_int_equal(out.len, 1000);
	assert_int_equal(out.seq, isn + 1 + n);
	assert_int_equal(out.data[0], 'z');
	assert_ptr_equal(c->snd_cur, c->sndq.tail);
	arn_tcp_input(lc,
		      fake_seg(0xc6120063u, US, 40500, LPORT, TH_RST, seq, 0, 0, NULL, NULL, 0));
	fake_advance(lc, 0);
	fake_drain(lc);
}

/* arn_tcp_write, and arn_tcp_write_ref of fewer bytes than half a segment
 * (copied): bytes that fit the send queue's tail (ours alone) join it;
 * more than fits fill it, then new mbufs; a tail shared with another
 * holder (a reference) is left alone; what goes out is every byte in
 * order. */
static void test_write_fills_tail_then_mbufs(void **state)
{
	(void)state;
	uint32_t seq, isn;
	struct arn_tcp_conn *c = rack_connection(40400, &seq, &isn);
	c->snd_wnd = 0; /* nothing leaves before the checks below */
	static uint8_t src[4096];
	assert_int_equal(arn_tcp_write_mbuf(c, filled_mbuf('a', 100)), 0);
	struct rte_mbuf *b = filled_mbuf('b', 30);
	assert_int_equal(arn_tcp_write_ref(c, b, rte_pktmbuf_mtod(b, void *), 30), 30);
	rte_pktmbuf_free(b); /* copied: still the caller's */
	assert_int_equal(c->sndq.n, 1);
	assert_int_equal(c->sndq.bytes, 130);
	assert_int_equal(c->sndq.tail->pkt_len, 130);
	uint32_t room = rte_pktmbuf_tailroom(c->sndq.tail);
	memset(src, 'c', room + 500);
	assert_int_equal(arn_tcp_write(c, src, room + 500), (int)(room + 500));
	assert_true(c->sndq.n >= 2);
	assert_int_equal(c->sndq.bytes, 130 + room + 500);
	/* the tail referenced elsewhere too: not written into */
	struct rte_mbuf *tail = c->sndq.tail;
	uint32_t n = c->sndq.n;
	rte_mbuf_refcnt_update(tail, 1);
	struct rte_mbuf *d = filled_mbuf('d', 10);
	assert_int_equal(arn_tcp_write_ref(c, d, rte_pktmbuf_mtod(d, void *), 10), 10);
	rte_pktmbuf_free(d);
	assert_int_equal(c->sndq.n, n + 1);
	rte_mbuf_refcnt_update(tail, -1);
	arn_tcp_input(lc, fake_seg(0xc6120063u, US, 40400, LPORT, TH_ACK, seq, isn + 1, 65535, NULL,
				   NULL, 0));
	fake_advance(lc, 0);
	static uint8_t got[8192];
	uint32_t total = 0;
	while (fake_next(lc, &out)) {
		assert_true(total + out.len <= sizeof(got));
		memcpy(got + total, out.data, out.len);
		total += out.len;
	}
	assert_int_equal(total, 130 + room + 500 + 10);
	for (uint32_t i = 0; i < total; i++)
		assert_int_equal(got[i], i < 100		? 'a'
					 : i < 130		? 'b'
					 : i < 130 + room + 500 ? 'c'
								: 'd');
	arn_tcp_input(lc,
		      fake_seg(0xc6120063u, US, 40400, LPORT, TH_RST, seq, 0, 0, NULL, NULL, 0));
	fake_advance(lc, 0);
	fake_drain(lc);
	assert_null(accepted);
}

int main(void)
{
	fake_eal_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_connection_segments_use_its_template, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_first_flight_arms_rto_or_probe, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_inline_reads_follow_the_stack, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_send_cursor_follows_the_application, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_write_mbuf_queues_and_merges, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_write_fills_tail_then_mbufs, setup, teardown),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	fake_eal_fini();
	return rc;
}
