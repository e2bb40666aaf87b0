/*
 * lib/tcp's receive path in a loss episode of a bulk download, as
 * bench/proxy/run's 16 MiB responses through Arion make them: one segment
 * lost, the sender's flight (N full segments, timestamps and SACK)
 * arriving above the hole, the connection's mbuf budget reached half way
 * (as a grown or clamped connection's is: its window offers more than its
 * budget holds), so the second half is dropped at the budget. For
 * callgrind:
 *
 *   valgrind --tool=callgrind --toggle-collect=ooo_round \
 *       --callgrind-out-file=/tmp/cg.ooo build/tests/tcp/bench_tcp_ooo 1000
 *
 * Only the segments' input is counted (ooo_round); the ACKs they cause
 * go out, uncounted, between them. The fake lib/net (tcp_fake_net.h)
 * stands for lib/net.
 *
 * A second argument chooses another pattern, with the budget as the
 * configuration makes it (rcvbuf, the third argument in KiB, 64 if none):
 *   inorder   N full segments in order, for the cost of one against which
 *             the others compare;
 *   walk      a hostile peer's: one byte at the far end of the window,
 *             then N one-byte segments a byte apart, in ascending order
 *             below it, each placed just before that far byte (the
 *             queue's tail), so that every one was placed by walking the
 *             whole list the queue was before 2026-12-06 (tcp_sack.c's
 *             tcp_ooo_insert), three times; now each is a new run, its
 *             place and its run searched in the queue's trees;
 *   scatter   the same far byte, then N one-byte segments at pseudo-random
 *             even offsets below it: each in the queue's middle, no last
 *             node to append at;
 *   gaps      the queue filled to its budget as walk fills it (not
 *             counted), then N/2 pairs: two bytes over one queued byte
 *             and the gap before it (the byte freed, the segment queued
 *             next to a small mbuf: a run of two), and a byte alone
 *             higher up, which finds the queue at its budget: tcp_rmem.c
 *             collapses that run (a walk of both queues), making room.
 * The line printed gives the searches' steps (out_of_order_walk_steps).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcp_fake_net.h"

#define US FAKE_ADDR(0)
#define PEER 0xc6120063u
#define LPORT 80
#define PPORT 40000
#define PMSS 1448

static struct arn_lcore *lc = &fake_lc[0];
static struct arn_tcp_conn *conn;
static uint8_t payload[PMSS];

static int b_accept(struct arn_tcp_conn *c, void *u)
{
	(void)u;
	conn = c;
	return 0;
}

static void b_data(struct arn_tcp_conn *c, struct rte_mbuf *head, uint32_t len)
{
	(void)head;
	arn_tcp_rx_consume(c, len);
}

static const struct arn_tcp_ops b_ops = {.on_accept = b_accept, .on_data = b_data};

/* one segment of the flight (callgrind's toggle) */
__attribute__((noinline)) void ooo_round(struct rte_mbuf *m);
__attribute__((noinline)) void ooo_round(struct rte_mbuf *m)
{
	arn_tcp_input(lc, m);
}

static struct fake_opts popts(void)
{
	struct fake_opts o = fake_no_opts;
	o.ts = true;
	o.tsval = 5000;
	return o;
}

/* the patterns other than the loss episode: see the header */
static int other(unsigned n, const char *mode, uint32_t seq, uint32_t ack)
{
	struct fake_out out;
	struct arn_tcp_worker *wk = conn->wk;
	if (strcmp(mode, "inorder") == 0) {
		for (unsigned i = 0; i < n; i++) {
			struct fake_opts p = popts();
			ooo_round(fake_seg(PEER, US, PPORT, LPORT, TH_ACK, seq + i * PMSS, ack,
					   65535, &p, payload, PMSS));
			fake_advance(lc, 0);
			fake_drain(lc);
		}
		printf("inorder: %u segments, %" PRIu64 " bytes in\n", n,
		       wk->cnt[ARN_TCP_C_BYTES_IN]);
		return 0;
	}
	bool scatter = strcmp(mode, "scatter") == 0, gaps = strcmp(mode, "gaps") == 0;
	if (strcmp(mode, "walk") != 0 && !scatter && !gaps)
		return 1;
	/* the far byte: the last of the window offered */
	uint32_t wnd = conn->rcv_adv - conn->rcv_nxt;
	struct fake_opts p = popts();
	arn_tcp_input(lc, fake_seg(PEER, US, PPORT, LPORT, TH_ACK, seq + wnd - 1, ack, 65535, &p,
				   payload, 1));
	fake_advance(lc, 0);
	fake_drain(lc);
	uint32_t x = 777;
	if (gaps) {
		/* the queue filled to its budget as walk does (not counted),
		 * then N one-byte segments in the gaps, ascending */
		for (unsigned i = 1; conn->oooq.n < conn->rmem_max && 2 * i < wnd - 1; i++) {
			p = popts();
			arn_tcp_input(lc, fake_seg(PEER, US, PPORT, LPORT, TH_ACK, seq + 2 * i, ack,
						   65535, &p, payload, 1));
			fake_advance(lc, 0);
			fake_drain(lc);
		}
		/* Pairs: [4j - 1, 4j + 1) frees the byte at 4j and is queued
		 * in its place (small, next to the byte at 4j - 2: a run of
		 * two small mbufs); then a byte alone above the filled part,
		 * which finds the queue at its budget: a collapse walk, which
		 * copies that run into one mbuf, making room for it. */
		uint32_t top = 2 * conn->rmem_max + 2;
		for (unsigned i = 1; i <= n / 2 && 4 * i + 1 < top; i++) {
			p = popts();
			ooo_round(fake_seg(PEER, US, PPORT, LPORT, TH_ACK, seq + 4 * i - 1, ack,
					   65535, &p, payload, 2));
			fake_advance(lc, 0);
			fake_drain(lc);
			p = popts();
			ooo_round(fake_seg(PEER, US, PPORT, LPORT, TH_ACK, seq + top + 2 * i, ack,
					   65535, &p, payload, 1));
			fake_advance(lc, 0);
			fake_drain(lc);
		}
		n = 0;
	}
	for (unsigned i = 1; i <= n && 2 * i < wnd - 1; i++) {
		uint32_t off = 2 * i;
		if (scatter)
			off = 2 + 2 * (((x = x * 1103515245u + 12345u) >> 8) % (wnd / 2 - 1));
		p = popts();
		ooo_round(fake_seg(PEER, US, PPORT, LPORT, TH_ACK, seq + off, ack, 65535, &p,
				   payload, 1));
		fake_advance(lc, 0);
		fake_drain(lc);
	}
	(void)out;
	printf("%s: %u queued (budget %u, window %u), walks %" PRIu64 " (steps %" PRIu64
	       "), dropped %" PRIu64 ", collapse walks %" PRIu64 "\n",
	       mode, conn->oooq.n, conn->rmem_max, wnd, wk->cnt[ARN_TCP_C_OOO_WALKS],
	       wk->cnt[ARN_TCP_C_OOO_WALK_STEPS], wk->cnt[ARN_TCP_C_OOO_DROPPED],
	       wk->cnt[ARN_TCP_C_RCV_COLLAPSE_WALKS]);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 1000;
	const char *mode = argc > 2 ? argv[2] : "loss";
	uint32_t rcvbuf = argc > 3 ? (uint32_t)atoi(argv[3]) << 10 : 64u << 10;
	bool loss = strcmp(mode, "loss") == 0;
	fake_eal_init();
	struct arn_dataplane conf = {.tcp_max_connections = 8,
				     .tcp_rcvbuf = loss ? 4u << 20 : rcvbuf,
				     .tcp_sndbuf = 64 * 1024};
	if (arn_tcp_worker_init(lc, &conf) != 0)
		return 1;
	struct arn_tcp_listen_opts lo = {.backlog = 8};
	int err = 0;
	if (!arn_tcp_listen(lc, US, LPORT, &b_ops, NULL, &lo, &err))
		return 1;
	struct fake_opts o = {.mss = 1460, .ws = 7, .sack_ok = true, .ts = true, .tsval = 5000};
	arn_tcp_input(lc, fake_seg(PEER, US, PPORT, LPORT, TH_SYN, 999, 0, 65535, &o, NULL, 0));
	fake_advance(lc, 0);
	struct fake_out out;
	if (!fake_next(lc, &out))
		return 1;
	uint32_t ack = out.seq + 1, seq = 1000;
	struct fake_opts a = popts();
	arn_tcp_input(lc, fake_seg(PEER, US, PPORT, LPORT, TH_ACK, seq, ack, 65535, &a, NULL, 0));
	fake_drain(lc);
	if (conn == NULL)
		return 1;
	if (!loss) {
		int rc = other(n, mode, seq, ack);
		arn_tcp_worker_fini(lc);
		fake_drain(lc);
		fake_eal_fini();
		return rc;
	}
	/* the budget: half the flight (no grant raises it) */
	conn->rmem_max = n / 2;
	conn->wk->rmem_grow_max = 0;
	for (unsigned i = 1; i <= n; i++) {
		struct fake_opts p = popts();
		ooo_round(fake_seg(PEER, US, PPORT, LPORT, TH_ACK, seq + i * PMSS, ack, 65535, &p,
				   payload, PMSS));
		fake_advance(lc, 0);
		fake_drain(lc);
	}
	printf("ooo: %u queued of %u\n", conn->oooq.n, n);
	/* the retransmission fills the hole */
	struct fake_opts p = popts();
	arn_tcp_input(lc,
		      fake_seg(PEER, US, PPORT, LPORT, TH_ACK, seq, ack, 65535, &p, payload, PMSS));
	fake_advance(lc, 0);
	fake_drain(lc);
	arn_tcp_worker_fini(lc);
	fake_drain(lc);
	fake_eal_fini();
	return 0;
}
