/*
 * bench/tcp unit-level benchmark: two instances of Arion's TCP stack (two
 * workers) talk through the fake lib/net of tests/tcp (no NIC, no kernel,
 * no loss), one as a client, one with the echo listener. Meant to run under
 * valgrind --tool=callgrind (bench_tcp_unit.sh does), which counts
 * instructions - repeatable on a noisy machine, unlike time.
 *
 *   bench_tcp_unit [BULK_BYTES] [CONNECTIONS] [hwcsum]
 *
 * Phases, each between CALLGRIND_ZERO_STATS and CALLGRIND_DUMP_STATS_AT so
 * that callgrind writes one profile per phase:
 *   bulk   one connection echoes BULK_BYTES each way
 *   conns  CONNECTIONS connections one after another: handshake, 64 bytes
 *          each way, close, TIME_WAIT on the client
 *   pingpong  one connection, PINGPONG_ROUNDS exchanges of 100 bytes each
 *          way, the next written when the last came back: a keep-alive
 *          request's pattern (every segment data that acknowledges the
 *          peer's last, no pure ACKs), with timestamps and SACK on
 * "hwcsum" marks received segments as checksum-verified by the NIC (a port
 * with RX offload); without it lib/tcp verifies every checksum itself.
 * Prints the segment and connection counts the profiles are divided by.
 */
#include <valgrind/callgrind.h>

#include "tcp_fake_net.h"

static struct arn_lcore *ca = &fake_lc[0], *sa = &fake_lc[1];
static bool hwcsum;

static struct {
	uint32_t total, written, read;
	bool connected, closed, eof;
} cl;

static uint8_t buf[65536];

static void cl_pump(struct arn_tcp_conn *c)
{
	while (cl.written < cl.total) {
		uint32_t n = RTE_MIN(cl.total - cl.written, (uint32_t)sizeof(buf));
		int w = arn_tcp_write(c, buf, n);
		if (w <= 0)
			return;
		cl.written += (uint32_t)w;
	}
	arn_tcp_shutdown(c);
}

static void cl_connected(struct arn_tcp_conn *c, int status)
{
	cl.connected = status == 0;
	if (status == 0)
		cl_pump(c);
}

static void cl_data(struct arn_tcp_conn *c, struct rte_mbuf *head, uint32_t len)
{
	(void)head;
	cl.read += len;
	arn_tcp_rx_consume(c, len);
}

static void cl_eof(struct arn_tcp_conn *c)
{
	cl.eof = true;
	arn_tcp_close(c);
}

static void cl_close(struct arn_tcp_conn *c, int reason)
{
	(void)c;
	(void)reason;
	cl.closed = true;
}

/* pingpong: the client writes the next 100 bytes once the last came back */
#define PP_BYTES 100u
#define PINGPONG_ROUNDS 2000u

static struct {
	uint32_t rounds, read;
	bool closed;
} pp;

static void pp_send(struct arn_tcp_conn *c)
{
	if (pp.rounds == PINGPONG_ROUNDS) {
		arn_tcp_shutdown(c);
		return;
	}
	pp.rounds++;
	if (arn_tcp_write(c, buf, PP_BYTES) != (int)PP_BYTES) {
		fprintf(stderr, "pingpong: write failed\n");
		exit(1);
	}
}

static void pp_connected(struct arn_tcp_conn *c, int status)
{
	if (status != 0) {
		fprintf(stderr, "pingpong: connect: %d\n", status);
		exit(1);
	}
	pp_send(c);
}

static void pp_data(struct arn_tcp_conn *c, struct rte_mbuf *head, uint32_t len)
{
	(void)head;
	pp.read += len;
	arn_tcp_rx_consume(c, len);
	if (pp.read == pp.rounds * PP_BYTES)
		pp_send(c);
}

static void pp_eof(struct arn_tcp_conn *c)
{
	arn_tcp_close(c);
}

static void pp_close(struct arn_tcp_conn *c, int reason)
{
	(void)c;
	(void)reason;
	pp.closed = true;
}

static const struct arn_tcp_ops pp_ops = {
    .on_connected = pp_connected,
    .on_data = pp_data,
    .on_eof = pp_eof,
    .on_close = pp_close,
};

static const struct arn_tcp_ops cl_ops = {
    .on_connected = cl_connected,
    .on_data = cl_data,
    .on_eof = cl_eof,
    .on_writable = cl_pump,
    .on_close = cl_close,
};

/* Move what each side sent to the other (the wire), as a NIC would hand it
 * over: data at the IPv4 header, l3_len set. */
static void wire(struct arn_lcore *from, struct arn_lcore *to)
{
	struct rte_mbuf *m;
	while ((m = fake_pop(from)) != NULL) {
		m->ol_flags = hwcsum ? RTE_MBUF_F_RX_L4_CKSUM_GOOD : 0;
		m->l3_len = 20;
		arn_tcp_input(to, m);
	}
}

/* One loop iteration of both workers, 10 us of simulated time. */
static void step(void)
{
	fake_clock_set(fake_now_us + 10);
	arn_tcp_worker_poll(ca, fake_now_us);
	arn_tcp_worker_poll(sa, fake_now_us);
	wire(ca, sa);
	wire(sa, ca);
}

static uint64_t counter(unsigned w, enum arn_tcp_counter id)
{
	uint64_t v[ARN_TCP_C_COUNT];
	return arn_tcp_stats(w, v) == 0 ? v[id] : 0;
}

static void run_one(uint32_t bytes)
{
	memset(&cl, 0, sizeof(cl));
	cl.total = bytes;
	int err;
	struct arn_tcp_conn *c = arn_tcp_connect(ca, FAKE_ADDR(0), FAKE_ADDR(1), 7, &cl_ops, NULL,
						 ARN_TCP_CC_CUBIC, &err);
	if (c == NULL) {
		fprintf(stderr, "connect: %d\n", err);
		exit(1);
	}
	for (unsigned i = 0; i < 10000000 && !cl.closed; i++)
		step();
	if (!cl.closed || cl.read != bytes) {
		fprintf(stderr, "transfer did not finish: read %u of %u\n", cl.read, bytes);
		exit(1);
	}
	/* the server's LAST_ACK, then its block back in the pool */
	for (unsigned i = 0; i < 1000 && counter(1, ARN_TCP_C_ACTIVE) != 0; i++)
		step();
}

/* A step of the exchanges, in a function of its own for callgrind's
 * --toggle-collect=pingpong_step (called, not entered once: callgrind
 * counts calls made while it collects). */
static __attribute__((noinline)) void pingpong_step(void)
{
	step();
}

/* The pingpong phase. Its profile is pingpong_step's (the exchanges,
 * without the handshake and the close). */
static void run_pingpong(void)
{
	memset(&pp, 0, sizeof(pp));
	int err;
	struct arn_tcp_conn *c = arn_tcp_connect(ca, FAKE_ADDR(0), FAKE_ADDR(1), 7, &pp_ops, NULL,
						 ARN_TCP_CC_CUBIC, &err);
	if (c == NULL) {
		fprintf(stderr, "connect: %d\n", err);
		exit(1);
	}
	for (unsigned i = 0; i < 100 && pp.rounds < 2; i++)
		step();
	for (unsigned i = 0; i < 10000000 && pp.rounds < PINGPONG_ROUNDS; i++)
		pingpong_step();
	for (unsigned i = 0; i < 10000000 && !pp.closed; i++)
		step();
	if (!pp.closed || pp.read != PINGPONG_ROUNDS * PP_BYTES) {
		fprintf(stderr, "pingpong did not finish: %u rounds, read %u\n", pp.rounds,
			pp.read);
		exit(1);
	}
	for (unsigned i = 0; i < 1000 && counter(1, ARN_TCP_C_ACTIVE) != 0; i++)
		step();
}

int main(int argc, char **argv)
{
	/* "pingpong" first: that phase alone, without the dumps of the other
	 * two (a dump resets callgrind's call counts, and the profile of
	 * --toggle-collect=pingpong_step then reads wrong) */
	bool pp_only = argc > 1 && strcmp(argv[1], "pingpong") == 0;
	uint32_t bulk = argc > 1 && !pp_only ? (uint32_t)strtoul(argv[1], NULL, 0) : 16u << 20;
	unsigned conns = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 0) : 2000;
	hwcsum = argc > (pp_only ? 2 : 3) && strcmp(argv[pp_only ? 2 : 3], "hwcsum") == 0;
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 2654435761u >> 24);
	fake_eal_init();
	struct arn_dataplane conf = {.tcp_max_connections = 4096};
	if (arn_tcp_worker_init(ca, &conf) != 0 || arn_tcp_worker_init(sa, &conf) != 0)
		return 1;
	int err;
	if (!arn_tcp_listen(sa, FAKE_ADDR(1), 7, &arn_tcp_echo_ops, NULL, NULL, &err))
		return 1;
	run_one(64 << 10); /* warm up: pools, caches */

	uint64_t s0 = counter(0, ARN_TCP_C_SEG_IN) + counter(1, ARN_TCP_C_SEG_IN);
	if (!pp_only) {
		CALLGRIND_ZERO_STATS;
		run_one(bulk);
		CALLGRIND_DUMP_STATS_AT("bulk");
	}
	uint64_t s1 = counter(0, ARN_TCP_C_SEG_IN) + counter(1, ARN_TCP_C_SEG_IN);

	if (!pp_only) {
		CALLGRIND_ZERO_STATS;
		for (unsigned i = 0; i < conns; i++)
			run_one(64);
		CALLGRIND_DUMP_STATS_AT("conns");
	}
	uint64_t s2 = counter(0, ARN_TCP_C_SEG_IN) + counter(1, ARN_TCP_C_SEG_IN);

	run_pingpong();
	uint64_t s3 = counter(0, ARN_TCP_C_SEG_IN) + counter(1, ARN_TCP_C_SEG_IN);

	if (!pp_only) {
		printf("bulk: %u bytes each way, %lu segments received (both stacks)\n", bulk,
		       (unsigned long)(s1 - s0));
		printf("conns: %u connections, %lu segments received (both stacks)\n", conns,
		       (unsigned long)(s2 - s1));
	}
	printf("pingpong: %u rounds of %u bytes each way, %lu segments received (both stacks, "
	       "with the handshake and the close)\n",
	       PINGPONG_ROUNDS, PP_BYTES, (unsigned long)(s3 - s2));
	arn_tcp_worker_fini(ca);
	arn_tcp_worker_fini(sa);
	fake_drain(ca);
	fake_drain(sa);
	fake_eal_fini();
	return 0;
}
