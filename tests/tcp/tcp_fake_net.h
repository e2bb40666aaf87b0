/*
 * A fake of lib/net for lib/tcp's tests (unit tests and the fuzz target):
 * the arn_net_* functions of arn_l4.h over a test mbuf pool, a settable
 * clock, captured output, and helpers to craft segments and to parse what
 * the stack sent. Header-only so each test executable gets its own copy.
 *
 * Workers: struct arn_lcore here is the test's own (lib/tcp never looks
 * inside it). Worker i has address 198.18.0.(i+1).
 */
#ifndef TCP_FAKE_NET_H
#define TCP_FAKE_NET_H

#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_tcp.h>

#include "arn_dataplane.h"
#include "tcp_int.h"

#define FAKE_WORKERS 2
#define FAKE_ADDR(i) (0xc6120001u + (uint32_t)(i)) /* 198.18.0.1 + i */

struct arn_lcore {
	void *l4;     /* first, as arn_l4.h requires */
	uint64_t now; /* second: arn_net_now() reads it; fake_clock_set() writes it */
	unsigned idx;
	struct rte_mbuf *out[4096]; /* captured, IPv4 header prepended */
	unsigned n_out, out_head;
};
_Static_assert(offsetof(struct arn_lcore, now) == offsetof(struct arn_lcore_head, now),
	       "arn_l4.h's layout contract");

/* The clock (TSC in microseconds), the same on every worker: each fake
 * lcore carries it where arn_net_now() reads it, as lib/net's do. Read it
 * as fake_now_us (not assignable, so that nothing moves one worker's clock
 * alone), move it with fake_clock_set(). */
#define FAKE_CLOCK0 1000000
_Static_assert(FAKE_WORKERS == 2, "fake_lc's initializer");
static struct arn_lcore fake_lc[FAKE_WORKERS] = {{.now = FAKE_CLOCK0}, {.now = FAKE_CLOCK0}};
#define fake_now_us ((uint64_t)fake_lc[0].now)

static inline void fake_clock_set(uint64_t us)
{
	for (unsigned i = 0; i < FAKE_WORKERS; i++)
		fake_lc[i].now = us;
}

static struct rte_mempool *fake_pool;
static int fake_alloc_fail; /* fail this many allocations */
static uint16_t fake_mtu = 1500;
static char fake_prefix[64];

uint64_t arn_net_hz(void)
{
	return 1000000;
}

unsigned arn_net_worker_index(const struct arn_lcore *lc)
{
	return lc->idx;
}

unsigned arn_net_worker_count(const struct arn_lcore *lc)
{
	(void)lc;
	return FAKE_WORKERS;
}

int arn_net_is_local(const struct arn_lcore *lc, uint32_t addr)
{
	(void)lc;
	for (unsigned i = 0; i < FAKE_WORKERS; i++)
		if (addr == FAKE_ADDR(i))
			return 1;
	return 0;
}

uint16_t arn_net_route_mtu(const struct arn_lcore *lc, uint32_t dst)
{
	(void)lc;
	(void)dst;
	return fake_mtu;
}

uint32_t arn_net_route_src(const struct arn_lcore *lc, uint32_t dst)
{
	(void)lc;
	(void)dst;
	return 0; /* no route of our own: active health checks find none */
}

/* lib/net's control side, for the modules above TCP (lib/http resolves
 * new endpoints ahead of traffic): no data plane here, so nothing is
 * posted and next hops need no resolving. */
struct arn_net;
struct arn_net *arn_net_current(void)
{
	return NULL;
}

unsigned arn_net_n_workers(const struct arn_net *net)
{
	(void)net;
	return 0;
}

int arn_net_post(unsigned worker, void (*fn)(struct arn_lcore *, void *), void *arg)
{
	(void)worker;
	(void)fn;
	(void)arg;
	return -ENODEV;
}

void arn_net_resolve(struct arn_lcore *lc, uint32_t dst)
{
	(void)lc;
	(void)dst;
}

/* What arn_net_nexthop_since() answers: UINT64_MAX plays "the next hop
 * waits for ARP" (the fake still delivers at once). */
static uint64_t fake_arp_since;

uint64_t arn_net_nexthop_since(const struct arn_lcore *lc, uint32_t dst)
{
	(void)lc;
	(void)dst;
	return fake_arp_since;
}

/* A software "RSS": which worker owns a flow. */
unsigned arn_net_flow_worker(const struct arn_lcore *lc, uint32_t local, uint32_t remote,
			     uint16_t lport, uint16_t rport)
{
	(void)lc;
	return (unsigned)((local ^ remote ^ lport ^ rport) * 2654435761u >> 16) % FAKE_WORKERS;
}

struct rte_mbuf *arn_net_alloc(struct arn_lcore *lc)
{
	(void)lc;
	if (fake_alloc_fail > 0) {
		fake_alloc_fail--;
		return NULL;
	}
	return rte_pktmbuf_alloc(fake_pool);
}

static uint16_t ip_id;

/* Prepend an IPv4 header to an L4 packet and fill both checksums. */
static inline void fake_ip_wrap(struct rte_mbuf *m, uint32_t src, uint32_t dst, uint8_t tos)
{
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)rte_pktmbuf_prepend(m, sizeof(*ip));
	if (ip == NULL)
		abort();
	memset(ip, 0, sizeof(*ip));
	ip->version_ihl = 0x45;
	ip->type_of_service = tos;
	ip->total_length = rte_cpu_to_be_16((uint16_t)m->pkt_len);
	ip->packet_id = rte_cpu_to_be_16(ip_id++);
	ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_TCP;
	ip->src_addr = rte_cpu_to_be_32(src);
	ip->dst_addr = rte_cpu_to_be_32(dst);
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	struct rte_tcp_hdr *th = (struct rte_tcp_hdr *)(ip + 1);
	th->cksum = 0;
	th->cksum = rte_ipv4_udptcp_cksum(ip, th);
	m->l3_len = sizeof(*ip);
	/* the checksum requests done, as lib/net's output leaves them; the
	 * L4 layer's own marks (arn_l4.h) stay for the tests to see */
	m->ol_flags &= ~(RTE_MBUF_F_TX_TCP_CKSUM | RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM);
}

/* Segments sent through a connection's template, and without one. */
static uint64_t fake_tmpl_out, fake_plain_out;

static int fake_output(struct arn_lcore *lc, struct rte_mbuf *m, uint32_t src, uint32_t dst,
		       uint8_t proto, uint8_t tos)
{
	if (proto != IPPROTO_TCP || rte_pktmbuf_headroom(m) < ARN_L4_HEADROOM || m->nb_segs != 1 ||
	    !(m->ol_flags & RTE_MBUF_F_TX_TCP_CKSUM) ||
	    rte_pktmbuf_mtod(m, struct rte_tcp_hdr *)->cksum != 0) {
		fprintf(stderr, "fake net: contract violated by an output packet\n");
		abort();
	}
	if (m->pkt_len + 20 > fake_mtu) {
		fprintf(stderr, "fake net: %u-byte TCP segment exceeds the MTU %u\n", m->pkt_len,
			fake_mtu);
		abort();
	}
	fake_ip_wrap(m, src, dst, tos);
	if (lc->n_out - lc->out_head >= 4096) {
		rte_pktmbuf_free(m);
		return -ENOBUFS;
	}
	lc->out[lc->n_out++ % 4096] = m;
	return 0;
}

int arn_net_ip4_output_tos(struct arn_lcore *lc, struct rte_mbuf *m, uint32_t src, uint32_t dst,
			   uint8_t proto, uint8_t tos)
{
	fake_plain_out++;
	return fake_output(lc, m, src, dst, proto, tos);
}

/* The fake keeps no headers in a template: it binds it to the first flow
 * that uses it, and aborts when another flow brings it (a template shared,
 * or left over in a reused connection). */
int arn_net_tcp_output(struct arn_lcore *lc, struct rte_mbuf *m, struct arn_net_tmpl *t,
		       uint32_t src, uint32_t dst, uint8_t tos)
{
	uint32_t flow[2] = {src, dst};
	if (t->until == 0) {
		memcpy(t->hdr, flow, sizeof(flow));
		t->until = 1;
	} else if (memcmp(t->hdr, flow, sizeof(flow)) != 0) {
		fprintf(stderr, "fake net: a template of another flow\n");
		abort();
	}
	fake_tmpl_out++;
	return fake_output(lc, m, src, dst, IPPROTO_TCP, tos);
}

int arn_net_ip4_output(struct arn_lcore *lc, struct rte_mbuf *m, uint32_t src, uint32_t dst,
		       uint8_t proto)
{
	return arn_net_ip4_output_tos(lc, m, src, dst, proto, 0);
}

/* A test's teardown check: the mbuf pool holds @p full again (its count
 * at setup), so a test that leaked an mbuf fails. */
static inline int fake_pool_full_again(unsigned full)
{
	if (rte_mempool_avail_count(fake_pool) != full) {
		fprintf(stderr, "mbuf leak: %u of %u back\n", rte_mempool_avail_count(fake_pool),
			full);
		return -1;
	}
	return 0;
}

/* The set-up the test files of tests/tcp share, after each has cleared
 * its own state and filled @p dp: the MTU and the allocations back to
 * normal (a failed test's fake_alloc_fail does not fail the next set-up),
 * the pool's count recorded in *@p pool_full for fake_pool_full_again at
 * teardown, the worker of @p lc started with @p dp, and a listener on
 * @p addr:@p port with @p ops and @p backlog. @return the listener, or
 * NULL when either step failed. */
static inline struct arn_tcp_listener *
fake_tcp_start(struct arn_lcore *lc, const struct arn_dataplane *dp, unsigned *pool_full,
	       uint32_t addr, uint16_t port, const struct arn_tcp_ops *ops, uint32_t backlog)
{
	fake_mtu = 1500;
	fake_alloc_fail = 0;
	*pool_full = rte_mempool_avail_count(fake_pool);
	if (arn_tcp_worker_init(lc, dp) != 0)
		return NULL;
	struct arn_tcp_listen_opts lo = {.backlog = backlog};
	int err = 0;
	return arn_tcp_listen(lc, addr, port, ops, NULL, &lo, &err);
}

static inline struct rte_mbuf *fake_pop(struct arn_lcore *lc)
{
	if (lc->out_head == lc->n_out)
		return NULL;
	return lc->out[lc->out_head++ % 4096];
}

static inline void fake_drain(struct arn_lcore *lc)
{
	struct rte_mbuf *m;
	while ((m = fake_pop(lc)) != NULL)
		rte_pktmbuf_free(m);
}

static inline void fake_eal_init(void)
{
	if (fake_pool)
		return;
	snprintf(fake_prefix, sizeof(fake_prefix), "--file-prefix=arn-t-unit-%d", (int)getpid());
	char *argv[] = {"test_tcp",  "--no-huge", "--no-pci", "--no-shconf",	"-m",
			"256",	     "-l",	  "0",	      "--no-telemetry", "--log-level=error",
			fake_prefix, NULL};
	int argc = (int)(sizeof(argv) / sizeof(argv[0])) - 1;
	if (rte_eal_init(argc, argv) < 0) {
		fprintf(stderr, "EAL init failed\n");
		exit(1);
	}
	fake_pool = rte_pktmbuf_pool_create("arn_t_unit", 16383, 0, 0, 2176, 0);
	if (fake_pool == NULL) {
		fprintf(stderr, "no mbuf pool\n");
		exit(1);
	}
	for (unsigned i = 0; i < FAKE_WORKERS; i++)
		fake_lc[i].idx = i;
}

static inline void fake_eal_fini(void)
{
	char dir[128];
	snprintf(dir, sizeof(dir), "/var/run/dpdk/arn-t-unit-%d", (int)getpid());
	rte_eal_cleanup();
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf %s 2>/dev/null", dir);
	if (system(cmd) != 0) {
	}
}

/* ---- crafting segments -------------------------------------------------------- */

struct fake_opts {
	int mss; /* <0: none */
	int ws;	 /* <0: none */
	bool sack_ok;
	bool ts;
	uint32_t tsval, tsecr;
	int n_sack;
	uint32_t sack[8];
};

static const struct fake_opts fake_no_opts = {.mss = -1, .ws = -1};

static inline struct rte_mbuf *fake_seg(uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport,
					uint8_t flags, uint32_t seq, uint32_t ack, uint16_t wnd,
					const struct fake_opts *o, const void *data, uint32_t len)
{
	uint8_t opt[64]; /* room to build; more than 40 bytes is cut */
	unsigned n = 0;
	if (o == NULL)
		o = &fake_no_opts;
	if (o->mss >= 0) {
		opt[n++] = 2, opt[n++] = 4, opt[n++] = (uint8_t)(o->mss >> 8),
		opt[n++] = (uint8_t)o->mss;
	}
	if (o->ws >= 0)
		opt[n++] = 1, opt[n++] = 3, opt[n++] = 3, opt[n++] = (uint8_t)o->ws;
	if (o->sack_ok)
		opt[n++] = 1, opt[n++] = 1, opt[n++] = 4, opt[n++] = 2;
	if (o->ts) {
		opt[n++] = 1, opt[n++] = 1, opt[n++] = 8, opt[n++] = 10;
		uint32_t a = rte_cpu_to_be_32(o->tsval), b = rte_cpu_to_be_32(o->tsecr);
		memcpy(opt + n, &a, 4);
		memcpy(opt + n + 4, &b, 4);
		n += 8;
	}
	if (o->n_sack) {
		opt[n++] = 1, opt[n++] = 1, opt[n++] = 5, opt[n++] = (uint8_t)(2 + 8 * o->n_sack);
		for (int i = 0; i < 2 * o->n_sack; i++) {
			uint32_t v = rte_cpu_to_be_32(o->sack[i]);
			memcpy(opt + n, &v, 4);
			n += 4;
		}
	}
	if (n > 40)
		n = 40;
	struct rte_mbuf *m = rte_pktmbuf_alloc(fake_pool);
	if (m == NULL)
		abort();
	struct rte_tcp_hdr *th =
	    (struct rte_tcp_hdr *)rte_pktmbuf_append(m, (uint16_t)(20 + n + len));
	if (th == NULL)
		abort();
	memset(th, 0, 20);
	th->src_port = rte_cpu_to_be_16(sport);
	th->dst_port = rte_cpu_to_be_16(dport);
	th->sent_seq = rte_cpu_to_be_32(seq);
	th->recv_ack = rte_cpu_to_be_32(ack);
	th->data_off = (uint8_t)(((20 + n) / 4) << 4);
	th->tcp_flags = flags;
	th->rx_win = rte_cpu_to_be_16(wnd);
	memcpy(th + 1, opt, n);
	if (len)
		memcpy((uint8_t *)(th + 1) + n, data, len);
	fake_ip_wrap(m, src, dst, 0);
	return m;
}

/* A packet as a kernel port's GRO hands it over: an mbuf chain (the
 * lead's AF_PACKET port with virtio-net headers, tcp_in.c's chain_input).
 * @p sizes[0] payload bytes ride in the first link after the headers, then
 * one link for each of @p sizes[1..n-1]; they must add up to @p len. The
 * checksum is computed over a flat copy (with DPDK's own function, not
 * lib/tcp's). @p tso: m->tso_segsz with RTE_MBUF_F_RX_LRO, 0 for neither.
 * @p sizes may hold a 0 past the first (a malformed chain, for the tests
 * of it). */
static inline struct rte_mbuf *fake_chain(uint32_t src, uint32_t dst, uint16_t sport,
					  uint16_t dport, uint8_t flags, uint32_t seq, uint32_t ack,
					  uint16_t wnd, const struct fake_opts *o,
					  const uint8_t *data, uint32_t len, const uint32_t *sizes,
					  unsigned n, uint16_t tso)
{
	static uint8_t flat[65536 + 128];
	struct rte_mbuf *m =
	    fake_seg(src, dst, sport, dport, flags, seq, ack, wnd, o, data, sizes[0]);
	uint32_t off = sizes[0];
	for (unsigned i = 1; i < n; i++) {
		struct rte_mbuf *x = rte_pktmbuf_alloc(fake_pool);
		if (x == NULL)
			abort();
		if (sizes[i]) {
			uint8_t *p = (uint8_t *)rte_pktmbuf_append(x, (uint16_t)sizes[i]);
			if (p == NULL)
				abort();
			memcpy(p, data + off, sizes[i]);
		}
		off += sizes[i];
		if (rte_pktmbuf_chain(m, x) != 0)
			abort();
	}
	if (off != len)
		abort();
	struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod(m, struct rte_ipv4_hdr *);
	struct rte_tcp_hdr *th = (struct rte_tcp_hdr *)(ip + 1);
	ip->total_length = rte_cpu_to_be_16((uint16_t)m->pkt_len);
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	th->cksum = 0;
	const void *f = rte_pktmbuf_read(m, 0, m->pkt_len, flat);
	if (f != flat)
		memcpy(flat, f, m->pkt_len);
	th->cksum = rte_ipv4_udptcp_cksum((const struct rte_ipv4_hdr *)flat, flat + sizeof(*ip));
	if (tso) {
		m->ol_flags |= RTE_MBUF_F_RX_LRO;
		m->tso_segsz = tso;
	}
	return m;
}

/* A segment the stack sent, parsed. */
struct fake_out {
	uint32_t src, dst;
	uint16_t sport, dport;
	uint8_t flags;
	uint32_t seq, ack;
	uint16_t wnd;
	uint8_t tos;	  /* the IPv4 header's (ECN: ECT(0) on data of an ECN connection) */
	struct tcp_seg o; /* options (has_mss, ws, ts, sack...) */
	uint32_t len;
	uint64_t ol_flags; /* as lib/tcp left them (the retransmission mark, arn_l4.h) */
	uint8_t data[9000];
};

static inline bool fake_parse(struct rte_mbuf *m, struct fake_out *f)
{
	const struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod(m, const struct rte_ipv4_hdr *);
	const struct rte_tcp_hdr *th = (const struct rte_tcp_hdr *)(ip + 1);
	if (rte_ipv4_udptcp_cksum(ip, th) != 0 && th->cksum != 0) {
		/* recomputing over a correct packet yields 0 */
	}
	memset(&f->o, 0, sizeof(f->o));
	f->src = rte_be_to_cpu_32(ip->src_addr);
	f->dst = rte_be_to_cpu_32(ip->dst_addr);
	f->tos = ip->type_of_service;
	f->sport = rte_be_to_cpu_16(th->src_port);
	f->dport = rte_be_to_cpu_16(th->dst_port);
	f->flags = th->tcp_flags;
	f->seq = rte_be_to_cpu_32(th->sent_seq);
	f->ack = rte_be_to_cpu_32(th->recv_ack);
	f->wnd = rte_be_to_cpu_16(th->rx_win);
	unsigned doff = (th->data_off >> 4) * 4u;
	tcp_parse_options(&f->o, (const uint8_t *)(th + 1), doff - 20);
	f->len = m->pkt_len - 20 - doff;
	f->ol_flags = m->ol_flags;
	memcpy(f->data, (const uint8_t *)th + doff, RTE_MIN(f->len, (uint32_t)sizeof(f->data)));
	return true;
}

/* Pop the next output of @p lc into @p f; false if there is none. */
static inline bool fake_next(struct arn_lcore *lc, struct fake_out *f)
{
	struct rte_mbuf *m = fake_pop(lc);
	if (m == NULL)
		return false;
	fake_parse(m, f);
	rte_pktmbuf_free(m);
	return true;
}

static inline unsigned fake_pending(const struct arn_lcore *lc)
{
	return lc->n_out - lc->out_head;
}

/* Advance the clock by @p ms milliseconds, one ms at a time, polling. */
static inline void fake_advance(struct arn_lcore *lc, uint64_t ms)
{
	for (uint64_t i = 0; i < ms; i++) {
		fake_clock_set(fake_now_us + 1000);
		arn_tcp_worker_poll(lc, fake_now_us);
	}
	if (ms == 0)
		arn_tcp_worker_poll(lc, fake_now_us);
}

/* Advance the clock by @p us microseconds and poll once. */
static inline void fake_advance_us(struct arn_lcore *lc, uint64_t us)
{
	fake_clock_set(fake_now_us + us);
	arn_tcp_worker_poll(lc, fake_now_us);
}

#ifdef cmocka_unit_test
/* Worker 0's counter @p id, for the cmocka tests (cmocka.h included
 * before this header; the fuzzers and benches that share it have no
 * assert_int_equal). */
static inline uint64_t cnt(enum arn_tcp_counter id)
{
	uint64_t v[ARN_TCP_C_COUNT];
	assert_int_equal(arn_tcp_stats(0, v), 0);
	return v[id];
}
#endif

#endif
