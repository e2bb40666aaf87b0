/*
 * libFuzzer target: frames into a two-worker data plane on net_ring ports
 * with the real TCP stack (lib/tcp) behind it: Ethernet, ARP, IPv4, ICMP,
 * the hand-off to the flow's owner, then arn_tcp_input, listeners, the
 * handshake, established connections, data, FIN and RST, and everything the
 * stack sends back out of the TX rings; plus arbitrary L4 payloads through
 * arn_net_ip4_output (routing, ARP resolution and queueing).
 *
 * Every worker listens on three ports (the peer is 198.18.0.99, on link):
 *   7   Envoy's echo filter (arn_tcp_echo_ops): data goes back, FIN closes
 *   80  a request/response toy: after a blank line ("\r\n\r\n") it answers
 *       and, if the request said "close", closes; the peer's FIN shuts down
 *   81  a reader that never reads: the window closes, data stays queued
 *
 * Input: records, each [flags][length, 2 bytes big-endian][length bytes]:
 *   flags bit 0   the RX queue (worker) the frame arrives on
 *   flags bit 1   keep the frame's destination MAC (else the port's)
 *   flags bit 2   send the bytes as an L4 payload (protocol: flags >> 3)
 *                 to 198.18.0.<first byte> instead of receiving them
 *   flags bit 3   a TCP segment from the peer to us: the harness makes the
 *                 Ethernet and IPv4 headers valid, reads the acknowledgment
 *                 number as an offset from the next sequence number this
 *                 flow was sent (as a peer would, unable to guess our
 *                 ISN), and fills both checksums. This is what lets seeds
 *                 and mutations reach ESTABLISHED and the data paths.
 * After each record both workers run until idle; what they sent is read
 * (sequence numbers per flow) and freed.
 *
 * Every input starts a fresh TCP state on both workers (arn_tcp_worker_init
 * through net_worker_begin) and ends it (net_worker_end); then every mbuf
 * of both pools must be back: a frame the stack forgot to free or send,
 * or a connection's queue not released, aborts the run.
 *
 * Seeds: tests/net/corpus/fuzz_net_input, made by fuzz_net_seeds.py.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_tcp.h>

#include "../fuzz/fuzz_flags.h"
#include "arn_dataplane.h"
#include "arn_log.h"
#include "arn_net.h"
#include "arn_tcp.h"
#include "net_int.h"

#define OUR_IP 0xc6120002u  /* 198.18.0.2 */
#define PEER_IP 0xc6120063u /* 198.18.0.99 */
#define MAX_RECORDS 64

static struct rte_mempool *pool;
static struct rte_ring *rx[2], *tx[2];
static bool verbose; /* FUZZ_NET_VERBOSE=1: how far each input got into TCP */
static struct arn_net *net;
static struct rte_ether_addr mac;
static const struct rte_ether_addr peer_mac = {{0x02, 0, 0, 0, 0, 0x63}};

/* ---- the applications on the listeners --------------------------------------------------- */

static int toy_accept(struct arn_tcp_conn *c, void *u)
{
	(void)u;
	arn_tcp_set_user(c, NULL);
	return 0;
}

/* Port 80: answer once a request head is complete. */
static void toy_data(struct arn_tcp_conn *c, struct rte_mbuf *head, uint32_t len)
{
	(void)head;
	char buf[512];
	uint32_t n = arn_tcp_read(c, buf, sizeof(buf) - 1 < len ? sizeof(buf) - 1 : len);
	buf[n] = '\0';
	if (strstr(buf, "\r\n\r\n") == NULL)
		return;
	static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	arn_tcp_write(c, resp, sizeof(resp) - 1);
	if (strstr(buf, "close"))
		arn_tcp_close(c);
}

static void toy_eof(struct arn_tcp_conn *c)
{
	arn_tcp_shutdown(c);
}

static const struct arn_tcp_ops toy_ops = {
    .on_accept = toy_accept,
    .on_data = toy_data,
    .on_eof = toy_eof,
};

/* Port 81: never reads, so the receive window closes. */
static const struct arn_tcp_ops sink_ops = {
    .on_accept = toy_accept,
};

static int listeners_init(struct arn_lcore *lc, void *arg)
{
	(void)arg;
	struct arn_tcp_listen_opts lo = {.backlog = 4};
	int err;
	if (!arn_tcp_listen(lc, 0, 7, &arn_tcp_echo_ops, NULL, &lo, &err) ||
	    !arn_tcp_listen(lc, 0, 80, &toy_ops, NULL, &lo, &err) ||
	    !arn_tcp_listen(lc, 0, 81, &sink_ops, NULL, &lo, &err))
		return err;
	return 0;
}

static const struct arn_tcp_app listeners = {.name = "fuzz", .worker_init = listeners_init};

/* ---- set-up --------------------------------------------------------------------------------- */

/* lib/tcp's ops with the L4 contract (arn_l4.h, input) checked on every
 * segment lib/net hands over: TCP relies on it without asking again. */
static struct arn_l4_ops checked_ops;

static void checked_input(struct arn_lcore *lc, struct rte_mbuf **m, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		const struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod(m[i], const struct rte_ipv4_hdr *);
		if (m[i]->l3_len != (ip->version_ihl & 0xf) * 4u ||
		    m[i]->pkt_len != rte_be_to_cpu_16(ip->total_length) ||
		    m[i]->pkt_len < m[i]->l3_len + 20u || m[i]->data_len < m[i]->l3_len + 20u) {
			fprintf(stderr, "fuzz_net_input: a segment breaks the L4 contract\n");
			abort();
		}
	}
	arn_tcp_l4_ops.input(lc, m, n);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static char entropic[] = "-entropic=0"; /* fuzz_flags.h says why */
	fuzz_default_flag(argc, argv, entropic);
	char *eal[] = {"fuzz_net_input", "--no-huge",	"--no-pci",    "--no-shconf",	"-m", "128",
		       "--lcores",	 "0@0,1@0,2@0", "--log-level", "lib.eal:error", NULL};
	arn_log_set_spec("off", NULL);
	if (rte_eal_init((int)(sizeof(eal) / sizeof(eal[0])) - 1, eal) < 0)
		abort();
	pool = rte_pktmbuf_pool_create("fuzz_pool", 1023, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, 0);
	char name[RTE_ETH_NAME_MAX_LEN];
	for (int q = 0; q < 2; q++) {
		snprintf(name, sizeof(name), "fz_rx%d", q);
		rx[q] = rte_ring_create(name, 256, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
		snprintf(name, sizeof(name), "fz_tx%d", q);
		tx[q] = rte_ring_create(name, 1024, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
	}
	int pid = rte_eth_from_rings("fz", rx, 2, tx, 2, 0);
	if (pool == NULL || pid < 0 || rte_eth_dev_get_name_by_port((uint16_t)pid, name) != 0)
		abort();
	static unsigned workers[2] = {1, 2};
	static struct arn_dp_port port = {.name = "wan",
					  .ipv4 = OUR_IP,
					  .prefix_len = 24,
					  .gateway = 0xc61200fe,
					  .mtu = 1500,
					  .rx_descriptors = 256,
					  .tx_descriptors = 256};
	static struct arn_dataplane dp;
	port.device = strdup(name);
	dp.present = true;
	dp.control_lcore = -1;
	dp.worker_lcores = workers;
	dp.n_workers = 2;
	dp.ports = &port;
	dp.n_ports = 1;
	dp.mbufs_per_socket = 2047;
	dp.mbuf_cache_size = 0; /* in_use is then exact */
	dp.mbuf_data_room = RTE_MBUF_DEFAULT_BUF_SIZE;
	/* Small, so that an input can exhaust them. */
	dp.tcp_max_connections = 16;
	dp.tcp_rcvbuf = 4096;
	dp.tcp_sndbuf = 4096;
	checked_ops = arn_tcp_l4_ops;
	checked_ops.input = checked_input;
	arn_net_set_l4(&checked_ops);
	net = arn_net_create(&dp);
	if (net == NULL || arn_tcp_app_register(&listeners) != 0)
		abort();
	mac = net->port[0].mac;
	const char *v = getenv("FUZZ_NET_VERBOSE");
	verbose = v && *v == '1';
	return 0;
}

/* ---- what the workers send: sequence numbers per flow ---------------------------------------- */

static struct flow {
	uint16_t peer_port, our_port;
	uint32_t next; /* the sequence number after the last byte (SYN, FIN) we sent */
} flows[32];
static unsigned n_flows;

static struct flow *flow_find(uint16_t peer_port, uint16_t our_port, bool add)
{
	for (unsigned i = 0; i < n_flows; i++)
		if (flows[i].peer_port == peer_port && flows[i].our_port == our_port)
			return &flows[i];
	if (!add || n_flows == RTE_DIM(flows))
		return NULL;
	flows[n_flows] = (struct flow){peer_port, our_port, 0};
	return &flows[n_flows++];
}

static void seen_sent(struct rte_mbuf *m)
{
	uint32_t len = rte_pktmbuf_data_len(m);
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
	if (len < 14 + 20 + 20 || p[12] != 0x08 || p[13] != 0x00)
		return;
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(p + 14);
	if (ip->next_proto_id != IPPROTO_TCP || ip->dst_addr != rte_cpu_to_be_32(PEER_IP))
		return;
	uint32_t ihl = (ip->version_ihl & 15u) * 4;
	uint32_t tot = rte_be_to_cpu_16(ip->total_length);
	if (14 + tot > len || tot < ihl + 20)
		return;
	const struct rte_tcp_hdr *th = (const struct rte_tcp_hdr *)(p + 14 + ihl);
	uint32_t doff = (th->data_off >> 4) * 4u;
	if (doff < 20 || ihl + doff > tot)
		return;
	struct flow *f =
	    flow_find(rte_be_to_cpu_16(th->dst_port), rte_be_to_cpu_16(th->src_port), true);
	if (f == NULL)
		return;
	uint32_t end = rte_be_to_cpu_32(th->sent_seq) + (tot - ihl - doff) +
		       !!(th->tcp_flags & RTE_TCP_SYN_FLAG) + !!(th->tcp_flags & RTE_TCP_FIN_FLAG);
	if (f->next == 0 || (int32_t)(end - f->next) > 0 || (th->tcp_flags & RTE_TCP_SYN_FLAG))
		f->next = end;
}

static void settle(void)
{
	for (int round = 0; round < 4; round++)
		for (unsigned w = 0; w < 2; w++)
			for (int i = 0; i < 8 && net_worker_iteration(net->lc[w]); i++)
				;
	struct rte_mbuf *m;
	for (int q = 0; q < 2; q++)
		while (rte_ring_dequeue(tx[q], (void **)&m) == 0) {
			seen_sent(m);
			rte_pktmbuf_free(m);
		}
}

/* ---- input ---------------------------------------------------------------------------------- */

static void receive(unsigned q, struct rte_mbuf *m)
{
	if (rte_ring_enqueue(rx[q], m) != 0)
		rte_pktmbuf_free(m);
}

/* Make @p p (@p len bytes, at least Ethernet + IPv4 + TCP headers) a valid
 * segment from the peer, its ACK relative to what the flow was sent. */
static void fix_tcp(uint8_t *p, size_t len)
{
	memcpy(p + 6, &peer_mac, 6);
	p[12] = 0x08, p[13] = 0x00;
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(p + 14);
	ip->version_ihl = 0x45;
	ip->total_length = rte_cpu_to_be_16((uint16_t)(len - 14));
	ip->fragment_offset = RTE_BE16(RTE_IPV4_HDR_DF_FLAG);
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_TCP;
	ip->src_addr = rte_cpu_to_be_32(PEER_IP);
	ip->dst_addr = rte_cpu_to_be_32(OUR_IP);
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	struct rte_tcp_hdr *th = (struct rte_tcp_hdr *)(ip + 1);
	size_t doff = (th->data_off >> 4) * 4u;
	if (doff < 20 || doff > len - 14 - 20)
		th->data_off = (uint8_t)((5 << 4) | (th->data_off & 15));
	struct flow *f =
	    flow_find(rte_be_to_cpu_16(th->src_port), rte_be_to_cpu_16(th->dst_port), false);
	if (f)
		th->recv_ack = rte_cpu_to_be_32(f->next + rte_be_to_cpu_32(th->recv_ack));
	th->cksum = 0;
	th->cksum = rte_ipv4_udptcp_cksum(ip, th);
}

/* The peer asks for us: both workers (re)learn it, so that what they send
 * it goes out at once, however long the fuzzer has been running. */
static void peer_arp(void)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	if (m == NULL)
		abort();
	uint8_t *p = (uint8_t *)rte_pktmbuf_append(m, 60);
	memset(p, 0, 60);
	memset(p, 0xff, 6);
	memcpy(p + 6, &peer_mac, 6);
	static const uint8_t arp[] = {0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1};
	memcpy(p + 12, arp, sizeof(arp));
	memcpy(p + 22, &peer_mac, 6);
	uint32_t sip = rte_cpu_to_be_32(PEER_IP), tip = rte_cpu_to_be_32(OUR_IP);
	memcpy(p + 28, &sip, 4);
	memcpy(p + 38, &tip, 4);
	receive(0, m);
}

static void one_record(uint8_t flags, const uint8_t *data, size_t size)
{
	unsigned q = flags & 1;
	if (flags & 4) {
		if (size < 1 || size > 1480)
			return;
		struct arn_lcore *lc = net->lc[q];
		struct rte_mbuf *m = arn_net_alloc(lc);
		if (m == NULL)
			return;
		char *p = rte_pktmbuf_append(m, (uint16_t)(size - 1));
		if (size > 1)
			memcpy(p, data + 1, size - 1);
		arn_net_ip4_output(lc, m, OUR_IP, 0xc6120000 | data[0], flags >> 3);
		return;
	}
	if (size > 1514)
		return;
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	if (m == NULL)
		abort(); /* the pool is back to full after every input */
	uint8_t *p = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)size);
	memcpy(p, data, size);
	if (!(flags & 2) && size >= 6)
		memcpy(p, &mac, 6);
	if ((flags & 8) && size >= 14 + 20 + 20)
		fix_tcp(p, size);
	receive(q, m);
}

static void report(void)
{
	static const enum arn_tcp_counter show[] = {
	    ARN_TCP_C_ACCEPTED,	      ARN_TCP_C_BYTES_IN,	ARN_TCP_C_BYTES_OUT,
	    ARN_TCP_C_SYN_COOKIES_OK, ARN_TCP_C_OUT_OF_ORDER,	ARN_TCP_C_OUT_OF_WINDOW,
	    ARN_TCP_C_RST_RECEIVED,   ARN_TCP_C_CHALLENGE_ACKS, ARN_TCP_C_RST_NO_LISTENER,
	};
	uint64_t sum[ARN_TCP_C_COUNT] = {0}, c[ARN_TCP_C_COUNT];
	for (unsigned w = 0; w < 2; w++)
		if (arn_tcp_stats(w, c) == 0)
			for (unsigned i = 0; i < ARN_TCP_C_COUNT; i++)
				sum[i] += c[i];
	fprintf(stderr, "fuzz_net_input:");
	for (size_t i = 0; i < RTE_DIM(show); i++)
		fprintf(stderr, " %s=%lu", arn_tcp_counter_name(show[i]),
			(unsigned long)sum[show[i]]);
	fprintf(stderr, "\n");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	n_flows = 0;
	for (unsigned w = 0; w < 2; w++)
		if (net_worker_begin(net->lc[w]) != 0)
			abort();
	peer_arp();
	settle();
	for (unsigned r = 0; r < MAX_RECORDS && size >= 3; r++) {
		uint8_t flags = data[0];
		size_t len = (size_t)data[1] << 8 | data[2];
		data += 3, size -= 3;
		if (len > size)
			len = size;
		one_record(flags, data, len);
		data += len, size -= len;
		settle();
	}
	if (verbose)
		report();
	for (unsigned w = 0; w < 2; w++)
		net_worker_end(net->lc[w]);
	struct rte_mbuf *m;
	for (int q = 0; q < 2; q++)
		while (rte_ring_dequeue(tx[q], (void **)&m) == 0)
			rte_pktmbuf_free(m);
	unsigned in_use = rte_mempool_in_use_count(pool);
	unsigned net_in_use = rte_mempool_in_use_count(net->pool[0]);
	if (in_use != 0 || net_in_use != 0) {
		fprintf(stderr, "fuzz_net_input: mbufs not freed: %u of the input, %u of lib/net\n",
			in_use, net_in_use);
		abort();
	}
	return 0;
}
