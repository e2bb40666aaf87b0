/*
 * lib/tcp's send path on a keep-alive exchange as Linux peers make it
 * (timestamps, SACK, window scale 7, so RACK is on): the peer sends an
 * 80-byte request, the application answers 250 bytes, the peer ACKs.
 * For callgrind, as bench_hcm for lib/http:
 *
 *   valgrind --tool=callgrind --toggle-collect=rr_round \
 *       --callgrind-out-file=/tmp/cg.rr build/tests/tcp/bench_tcp_rr 1000
 *
 * and divide by N. The fake lib/net (tcp_fake_net.h) stands for
 * lib/net: arn_net_tcp_output, the checksum and the worker loop are
 * bench/cost/run's.
 */
#include <stdio.h>
#include <stdlib.h>

#include "tcp_fake_net.h"

#define US FAKE_ADDR(0)
#define PEER 0xc6120063u
#define LPORT 80
#define PPORT 40000

static struct arn_lcore *lc = &fake_lc[0];
static struct arn_tcp_conn *conn;
static uint8_t resp[250];

static int b_accept(struct arn_tcp_conn *c, void *u)
{
	(void)u;
	conn = c;
	return 0;
}

static void b_data(struct arn_tcp_conn *c, struct rte_mbuf *head, uint32_t len)
{
	(void)head;
	uint8_t buf[256];
	arn_tcp_read(c, buf, RTE_MIN(len, (uint32_t)sizeof(buf)));
	arn_tcp_write(c, resp, sizeof(resp));
}

static void b_close(struct arn_tcp_conn *c, int reason)
{
	(void)c;
	(void)reason;
	conn = NULL;
}

static const struct arn_tcp_ops b_ops = {
    .on_accept = b_accept, .on_data = b_data, .on_close = b_close};

static uint32_t p_seq = 1000, p_ack, p_tsval = 5000, p_tsecr;
static const uint8_t req[80] = "GET /small HTTP/1.1\r\nHost: 198.18.0.2\r\n\r\n";

static void peer_send(uint8_t flags, const void *data, uint32_t len)
{
	struct fake_opts o = {
	    .mss = -1, .ws = -1, .ts = true, .tsval = p_tsval++, .tsecr = p_tsecr};
	arn_tcp_input(lc,
		      fake_seg(PEER, US, PPORT, LPORT, flags, p_seq, p_ack, 502, &o, data, len));
	p_seq += len;
}

static struct fake_out out;

static void take_out(void)
{
	while (fake_next(lc, &out)) {
		p_ack = out.seq + out.len;
		p_tsecr = out.o.tsval;
	}
}

static void __attribute__((noinline)) rr_round(void)
{
	peer_send(TH_ACK | TH_PSH, req, sizeof(req));
	fake_advance_us(lc, 30);
	take_out();
	peer_send(TH_ACK, NULL, 0);
	fake_advance_us(lc, 30);
	take_out();
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	fake_eal_init();
	struct arn_dataplane dp = {
	    .tcp_max_connections = 64, .tcp_rcvbuf = 256 * 1024, .tcp_sndbuf = 256 * 1024};
	if (arn_tcp_worker_init(lc, &dp) != 0)
		return 1;
	struct arn_tcp_listen_opts lo = {.backlog = 16};
	int err = 0;
	if (arn_tcp_listen(lc, US, LPORT, &b_ops, NULL, &lo, &err) == NULL)
		return 1;
	struct fake_opts o = {
	    .mss = 1460, .ws = 7, .sack_ok = true, .ts = true, .tsval = p_tsval++};
	arn_tcp_input(lc, fake_seg(PEER, US, PPORT, LPORT, TH_SYN, p_seq, 0, 64240, &o, NULL, 0));
	fake_advance(lc, 0);
	if (!fake_next(lc, &out))
		return 1;
	p_seq++;
	p_ack = out.seq + 1;
	p_tsecr = out.o.tsval;
	peer_send(TH_ACK, NULL, 0);
	if (conn == NULL)
		return 1;
	for (int i = 0; i < 10; i++)
		rr_round();
	for (long i = 0; i < n; i++)
		rr_round();
	printf("%ld rounds, conn %s, snd_max-iss %u\n", n, conn ? "up" : "gone",
	       conn ? conn->snd_max - conn->iss : 0);
	int rc = conn && (conn->flags & TF_RACK_OFF) == 0 && (conn->flags & TF_TS_OK) ? 0 : 1;
	fake_eal_fini();
	return rc;
}
