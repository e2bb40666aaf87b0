/*
 * lib/net unit tests: RSS ownership and hand-off, IPv4 / ICMP validation,
 * the ARP cache, IPv4 output, the control ring, RCU and counters, with
 * crafted frames on net_ring ports (rte_eth_from_rings): a test puts frames
 * on a worker's RX ring, runs that worker's loop iteration on this thread,
 * and reads what it sent from the TX ring.
 *
 * The EAL runs without hugepages and without shared files, with three
 * lcores mapped onto CPU 0 (workers are launched only by the launch test).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <linux/filter.h>
#include <netinet/in.h>

#include <rte_arp.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_icmp.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>
#include <rte_tcp.h>
#include <rte_thash.h>

#include "arn_cksum.h"
#include "arn_cksum_mbuf.h"
#include "arn_dataplane.h"
#include "arn_log.h"
#include "arn_net.h"
#include "net_int.h"
#include "tx.h"
#include "route.h"

#define IP(a, b, c, d) (((uint32_t)(a) << 24) | ((uint32_t)(b) << 16) | ((uint32_t)(c) << 8) | (d))
#define OUR_IP IP(198, 18, 0, 2)
#define PEER_IP IP(198, 18, 0, 1)
#define GW_IP IP(198, 18, 0, 254)

static const struct rte_ether_addr peer_mac = {{0x02, 0, 0, 0, 0, 0x01}};
static const struct rte_ether_addr gw_mac = {{0x02, 0, 0, 0, 0, 0xfe}};

static struct rte_mempool *pool;

/* ---- the L4 side, recorded ------------------------------------------------------------------ */

static struct {
	unsigned inputs;
	struct arn_lcore *input_lc;
	uint32_t input_len;
	uint32_t input_l3_len;
	uint8_t first_byte;
	unsigned unreach;
	struct arn_lcore *unreach_lc;
	uint8_t code;
	uint16_t mtu;
	uint32_t src, dst;
	uint16_t sport, dport;
	uint32_t seq;
	unsigned inits, polls, finis;
} l4;

static void l4_input(struct arn_lcore *lc, struct rte_mbuf **ms, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct rte_mbuf *m = ms[i];
		/* the contract TCP relies on without checking (arn_l4.h) */
		const struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod(m, const struct rte_ipv4_hdr *);
		if (m->l3_len != (ip->version_ihl & 0xf) * 4u ||
		    m->pkt_len != rte_be_to_cpu_16(ip->total_length) ||
		    m->pkt_len < m->l3_len + 20u || m->data_len < m->l3_len + 20u)
			fail_msg("a segment breaks the L4 contract");
		l4.inputs++;
		l4.input_lc = lc;
		l4.input_len = rte_pktmbuf_pkt_len(m);
		l4.input_l3_len = m->l3_len;
		l4.first_byte = *rte_pktmbuf_mtod(m, uint8_t *);
		rte_pktmbuf_free(m);
	}
}

static void l4_icmp_unreach(struct arn_lcore *lc, uint8_t code, uint16_t mtu, uint32_t src,
			    uint32_t dst, uint16_t sport, uint16_t dport, uint32_t seq)
{
	l4.unreach++;
	l4.unreach_lc = lc;
	l4.code = code;
	l4.mtu = mtu;
	l4.src = src;
	l4.dst = dst;
	l4.sport = sport;
	l4.dport = dport;
	l4.seq = seq;
}

static int l4_worker_init(struct arn_lcore *lc, const struct arn_dataplane *conf)
{
	(void)conf;
	__atomic_fetch_add(&l4.inits, 1, __ATOMIC_RELAXED);
	lc->l4 = &l4;
	return 0;
}

static void l4_worker_poll(struct arn_lcore *lc, uint64_t now)
{
	(void)lc, (void)now;
	__atomic_fetch_add(&l4.polls, 1, __ATOMIC_RELAXED);
}

static void l4_worker_fini(struct arn_lcore *lc)
{
	(void)lc;
	__atomic_fetch_add(&l4.finis, 1, __ATOMIC_RELAXED);
}

/* lib/net reaches the L4 layer through this table only (arn_l4.h) */
static const struct arn_l4_ops l4_ops = {
    .name = "recorder",
    .input = l4_input,
    .icmp_unreach = l4_icmp_unreach,
    .worker_init = l4_worker_init,
    .worker_poll = l4_worker_poll,
    .worker_fini = l4_worker_fini,
};

/* ---- a data plane on ring ports ----------------------------------------------------------------
 */

struct fixture {
	struct arn_dataplane dp;
	struct arn_dp_port port;
	unsigned workers[2];
	struct rte_ring *rx[2], *tx[2];
	struct arn_net *net;
	struct rte_ether_addr mac;
};

/* The port's prefix length for the next make_net (a flood needs more
 * on-link addresses than a /24 has). */
static unsigned fixture_prefix_len = 24;

static int make_net(struct fixture *f, unsigned n_workers)
{
	static int seq;
	char name[32];
	memset(f, 0, sizeof(*f));
	memset(&l4, 0, sizeof(l4));
	int id = seq++;
	for (unsigned q = 0; q < n_workers; q++) {
		snprintf(name, sizeof(name), "t%d_rx%u", id, q);
		f->rx[q] = rte_ring_create(name, 1024, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
		snprintf(name, sizeof(name), "t%d_tx%u", id, q);
		f->tx[q] = rte_ring_create(name, 1024, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (!f->rx[q] || !f->tx[q])
			return -1;
		f->workers[q] = q + 1;
	}
	snprintf(name, sizeof(name), "arn_t%d", id);
	int pid = rte_eth_from_rings(name, f->rx, n_workers, f->tx, n_workers, 0);
	if (pid < 0 || rte_eth_dev_get_name_by_port((uint16_t)pid, name) != 0)
		return -1;
	f->port.name = strdup("wan");
	f->port.device = strdup(name);
	f->port.ipv4 = OUR_IP;
	f->port.prefix_len = fixture_prefix_len;
	fixture_prefix_len = 24;
	f->port.gateway = GW_IP;
	f->port.mtu = 1500;
	f->port.rx_descriptors = 256;
	f->port.tx_descriptors = 256;
	f->dp.present = true;
	f->dp.control_lcore = -1;
	f->dp.mbuf_data_room = RTE_MBUF_DEFAULT_BUF_SIZE;
	f->dp.worker_lcores = f->workers;
	f->dp.n_workers = n_workers;
	f->dp.ports = &f->port;
	f->dp.n_ports = 1;
	f->dp.mbufs_per_socket = 2047;
	f->dp.mbuf_cache_size = 32;
	arn_net_set_l4(&l4_ops);
	f->net = arn_net_create(&f->dp);
	if (f->net == NULL)
		return -1;
	f->mac = f->net->port[0].mac;
	return 0;
}

static void free_net(struct fixture *f)
{
	arn_net_destroy(f->net);
	for (unsigned q = 0; q < 2; q++) {
		struct rte_mbuf *m;
		if (f->tx[q])
			while (rte_ring_dequeue(f->tx[q], (void **)&m) == 0)
				rte_pktmbuf_free(m);
		if (f->rx[q])
			while (rte_ring_dequeue(f->rx[q], (void **)&m) == 0)
				rte_pktmbuf_free(m);
		rte_ring_free(f->rx[q]);
		rte_ring_free(f->tx[q]);
	}
	free(f->port.name);
	free(f->port.device);
}

static int setup1(void **state)
{
	static struct fixture f;
	*state = &f;
	return make_net(&f, 1);
}

static int setup2(void **state)
{
	static struct fixture f;
	*state = &f;
	return make_net(&f, 2);
}

/* One worker on a /16: 65534 on-link addresses to spoof. */
static int setup1_wide(void **state)
{
	static struct fixture f;
	*state = &f;
	fixture_prefix_len = 16;
	return make_net(&f, 1);
}

static int teardown(void **state)
{
	free_net(*state);
	return 0;
}

static struct arn_lcore *W(struct fixture *f, unsigned w)
{
	return arn_net_lcore(f->net, w);
}

/* Run worker @p w's iterations until one is idle (it then flushes TX). */
static void run(struct fixture *f, unsigned w)
{
	for (int i = 0; i < 16 && net_worker_iteration(W(f, w)); i++)
		;
}

static void inject(struct fixture *f, unsigned q, const void *frame, size_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	assert_non_null(m);
	char *p = rte_pktmbuf_append(m, (uint16_t)len);
	assert_non_null(p);
	memcpy(p, frame, len);
	assert_int_equal(rte_ring_enqueue(f->rx[q], m), 0);
}

/* Take the next frame worker @p q sent (caller frees), or NULL. */
static struct rte_mbuf *sent(struct fixture *f, unsigned q)
{
	struct rte_mbuf *m = NULL;
	if (rte_ring_dequeue(f->tx[q], (void **)&m) != 0)
		return NULL;
	return m;
}

static unsigned drain(struct fixture *f, unsigned q)
{
	unsigned n = 0;
	struct rte_mbuf *m;
	while ((m = sent(f, q)) != NULL) {
		rte_pktmbuf_free(m);
		n++;
	}
	return n;
}

static uint64_t pc(struct fixture *f, enum arn_net_pctr c)
{
	return arn_net_port_counter(f->net, 0, c);
}

static uint64_t wc(struct fixture *f, unsigned w, enum arn_net_wctr c)
{
	return arn_net_worker_counter(f->net, w, c);
}

/* ---- frames ------------------------------------------------------------------------------------
 */

struct pkt {
	uint8_t b[1600];
	size_t len;
};

static struct rte_ipv4_hdr *ip_of(struct pkt *p)
{
	return (struct rte_ipv4_hdr *)(p->b + sizeof(struct rte_ether_hdr));
}

/* Ethernet + IPv4 (valid checksum) + @p l4 payload of @p l4len bytes. */
static void build_ip(struct pkt *p, const struct rte_ether_addr *dst_mac, uint32_t src,
		     uint32_t dst, uint8_t proto, const void *l4b, size_t l4len)
{
	memset(p, 0, sizeof(*p));
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)p->b;
	eth->dst_addr = *dst_mac;
	eth->src_addr = peer_mac;
	eth->ether_type = RTE_BE16(RTE_ETHER_TYPE_IPV4);
	struct rte_ipv4_hdr *ip = ip_of(p);
	ip->version_ihl = 0x45;
	ip->total_length = rte_cpu_to_be_16((uint16_t)(20 + l4len));
	ip->packet_id = RTE_BE16(7);
	ip->time_to_live = 64;
	ip->next_proto_id = proto;
	ip->src_addr = rte_cpu_to_be_32(src);
	ip->dst_addr = rte_cpu_to_be_32(dst);
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	memcpy(ip + 1, l4b, l4len);
	p->len = sizeof(*eth) + 20 + l4len;
	if (p->len < 60)
		p->len = 60; /* Ethernet padding, which lib/net must trim */
}

static void fix_ip_cksum(struct pkt *p)
{
	struct rte_ipv4_hdr *ip = ip_of(p);
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
}

static void build_tcp(struct pkt *p, const struct rte_ether_addr *mac, uint32_t src, uint32_t dst,
		      uint16_t sport, uint16_t dport)
{
	struct rte_tcp_hdr th;
	memset(&th, 0, sizeof(th));
	th.src_port = rte_cpu_to_be_16(sport);
	th.dst_port = rte_cpu_to_be_16(dport);
	th.data_off = 5 << 4;
	th.tcp_flags = RTE_TCP_SYN_FLAG;
	build_ip(p, mac, src, dst, IPPROTO_TCP, &th, sizeof(th));
}

static void build_echo(struct pkt *p, const struct rte_ether_addr *mac, uint32_t src, uint32_t dst,
		       size_t payload)
{
	uint8_t b[1500];
	struct rte_icmp_hdr *ic = (struct rte_icmp_hdr *)b;
	memset(b, 0, sizeof(b));
	ic->icmp_type = RTE_IP_ICMP_ECHO_REQUEST;
	ic->icmp_ident = RTE_BE16(0x1234);
	ic->icmp_seq_nb = RTE_BE16(1);
	for (size_t i = 0; i < payload; i++)
		b[sizeof(*ic) + i] = (uint8_t)i;
	ic->icmp_cksum = (uint16_t)~rte_raw_cksum(b, sizeof(*ic) + payload);
	build_ip(p, mac, src, dst, IPPROTO_ICMP, b, sizeof(*ic) + payload);
}

static void build_arp(struct pkt *p, const struct rte_ether_addr *eth_dst, uint16_t op,
		      const struct rte_ether_addr *sha, uint32_t sip, uint32_t tip)
{
	memset(p, 0, sizeof(*p));
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)p->b;
	eth->dst_addr = *eth_dst;
	eth->src_addr = *sha;
	eth->ether_type = RTE_BE16(RTE_ETHER_TYPE_ARP);
	struct rte_arp_hdr *a = (struct rte_arp_hdr *)(eth + 1);
	a->arp_hardware = RTE_BE16(RTE_ARP_HRD_ETHER);
	a->arp_protocol = RTE_BE16(RTE_ETHER_TYPE_IPV4);
	a->arp_hlen = 6;
	a->arp_plen = 4;
	a->arp_opcode = rte_cpu_to_be_16(op);
	a->arp_data.arp_sha = *sha;
	a->arp_data.arp_sip = rte_cpu_to_be_32(sip);
	a->arp_data.arp_tip = rte_cpu_to_be_32(tip);
	p->len = 60;
}

/* A TCP SYN for us whose flow belongs to worker @p owner. */
static uint16_t sport_for(struct fixture *f, unsigned owner)
{
	for (uint16_t s = 40000; s < 50000; s++)
		if (arn_net_flow_worker(W(f, 0), OUR_IP, PEER_IP, 80, s) == owner)
			return s;
	fail_msg("no source port hashes to worker %u", owner);
	return 0;
}

/* ---- RSS and ownership
 * ---------------------------------------------------------------------------- */

static void test_rss_hash_matches_dpdk_softrss(void **state)
{
	(void)state;
	net_rss_init();
	uint32_t x = 12345;
	for (int i = 0; i < 2000; i++) {
		x = x * 1103515245 + 12345;
		uint32_t src = x;
		x = x * 1103515245 + 12345;
		uint32_t dst = x;
		uint16_t sp = (uint16_t)(x >> 7), dp = (uint16_t)(x >> 19);
		uint32_t tuple[3] = {src, dst, ((uint32_t)sp << 16) | dp};
		assert_int_equal(arn_net_rss_hash(src, dst, sp, dp),
				 rte_softrss(tuple, 3, net_rss_key));
	}
}

/* A classic BPF interpreter for what net_rss_fanout_prog writes, as the
 * kernel runs a fanout program: loads at SKF_NET_OFF + k from the IPv4
 * header @p ip (@p len bytes; a load past them makes the program return 0,
 * as the kernel's does), the frame's protocol and flow hash as ancillary
 * data. Fails the test on an instruction it does not know. */
static uint32_t cbpf_run(const struct sock_filter *f, unsigned n, const uint8_t *ip, unsigned len,
			 uint16_t proto, uint32_t rxhash)
{
	uint32_t A = 0, X = 0, M[BPF_MEMWORDS] = {0};
	for (unsigned pc = 0; pc < n; pc++) {
		const struct sock_filter *i = &f[pc];
		uint32_t k = i->k, off, sz;
		switch (i->code) {
		case BPF_LD | BPF_W | BPF_ABS:
		case BPF_LD | BPF_H | BPF_ABS:
		case BPF_LD | BPF_B | BPF_ABS:
		case BPF_LD | BPF_W | BPF_IND:
		case BPF_LDX | BPF_B | BPF_MSH:
			if (i->code == (BPF_LD | BPF_W | BPF_ABS) &&
			    k == (uint32_t)(SKF_AD_OFF + SKF_AD_PROTOCOL)) {
				A = proto;
				break;
			}
			if (i->code == (BPF_LD | BPF_W | BPF_ABS) &&
			    k == (uint32_t)(SKF_AD_OFF + SKF_AD_RXHASH)) {
				A = rxhash;
				break;
			}
			off = (BPF_MODE(i->code) == BPF_IND ? X : 0) + k - (uint32_t)SKF_NET_OFF;
			sz = BPF_SIZE(i->code) == BPF_W ? 4 : BPF_SIZE(i->code) == BPF_H ? 2 : 1;
			if (off > len || len - off < sz)
				return 0;
			uint32_t v = 0;
			for (uint32_t b = 0; b < sz; b++)
				v = v << 8 | ip[off + b];
			if (BPF_CLASS(i->code) == BPF_LDX)
				X = (v & 0xf) << 2;
			else
				A = v;
			break;
		case BPF_LD | BPF_IMM:
			A = k;
			break;
		case BPF_LD | BPF_MEM:
			A = M[k];
			break;
		case BPF_LDX | BPF_W | BPF_MEM:
			X = M[k];
			break;
		case BPF_ST:
			M[k] = A;
			break;
		case BPF_ALU | BPF_XOR | BPF_X:
			A ^= X;
			break;
		case BPF_ALU | BPF_XOR | BPF_K:
			A ^= k;
			break;
		case BPF_ALU | BPF_RSH | BPF_K:
			A >>= k;
			break;
		case BPF_MISC | BPF_TAX:
			X = A;
			break;
		case BPF_JMP | BPF_JEQ | BPF_K:
			pc += A == k ? i->jt : i->jf;
			break;
		case BPF_JMP | BPF_JSET | BPF_K:
			pc += (A & k) ? i->jt : i->jf;
			break;
		case BPF_RET | BPF_A:
			return A;
		default:
			fail_msg("instruction %u: code 0x%x not interpreted", pc, i->code);
		}
		assert_true(pc < n);
	}
	fail_msg("the program ran off its end");
	return 0;
}

/* arn_af_packet's fanout program delivers each IPv4/TCP frame to the
 * socket of the worker arn_net_flow_worker names (member k = worker k, the
 * kernel taking the result modulo the members), for any number of workers
 * and table size, with and without IPv4 options, in both directions of a
 * flow; other IPv4 frames go by their addresses, and frames that are not
 * IPv4 by the kernel's hash; a table that is not round-robin gets no
 * program. */
static void test_rss_fanout_prog_gives_the_owner(void **state)
{
	(void)state;
	static const unsigned workers[] = {1, 2, 3, 4, 7, 8};
	static const unsigned sizes[] = {64, 128, 512};
	struct sock_filter prog[NET_RSS_FANOUT_PROG_MAX];
	uint32_t x = 4242;
	for (unsigned wi = 0; wi < RTE_DIM(workers); wi++)
		for (unsigned si = 0; si < RTE_DIM(sizes); si++) {
			struct arn_net net;
			memset(&net, 0, sizeof(net));
			net.n_workers = workers[wi];
			net_reta_fill(&net, sizes[si]);
			unsigned n = net_rss_fanout_prog(&net, prog, RTE_DIM(prog));
			assert_true(n > 0 && n <= NET_RSS_FANOUT_PROG_MAX);
			assert_int_equal(net_rss_fanout_prog(&net, prog, n - 1), 0);
			for (int t = 0; t < 3000; t++) {
				x = x * 1103515245 + 12345;
				uint32_t src = x ^ (uint32_t)t << 7;
				x = x * 1103515245 + 12345;
				uint32_t dst = x;
				uint16_t sp = (uint16_t)(x >> 5), dp = (uint16_t)(t * 7919);
				unsigned opt = (t % 4) * 4; /* bytes of IPv4 options */
				uint8_t ip[60 + 20];
				memset(ip, 0x5a, sizeof(ip));
				ip[0] = (uint8_t)(0x45 + opt / 4);
				ip[6] = (t % 5 == 0) ? 0x40 : 0; /* DF or not */
				ip[7] = 0;
				ip[9] = IPPROTO_TCP;
				for (int b = 0; b < 4; b++) {
					ip[12 + b] = (uint8_t)(src >> (24 - 8 * b));
					ip[16 + b] = (uint8_t)(dst >> (24 - 8 * b));
				}
				uint8_t *th = ip + 20 + opt;
				th[0] = (uint8_t)(sp >> 8), th[1] = (uint8_t)sp;
				th[2] = (uint8_t)(dp >> 8), th[3] = (uint8_t)dp;
				unsigned owner =
				    net.reta[arn_net_rss_hash(src, dst, sp, dp) & net.reta_mask];
				uint32_t r = cbpf_run(prog, n, ip, 20 + opt + 20, 0x0800, 77);
				assert_int_equal(r % workers[wi], owner);
				/* the other direction of the flow */
				uint8_t rev[80];
				memcpy(rev, ip, sizeof(rev));
				memcpy(rev + 12, ip + 16, 4);
				memcpy(rev + 16, ip + 12, 4);
				memcpy(rev + 20 + opt, th + 2, 2);
				memcpy(rev + 22 + opt, th, 2);
				r = cbpf_run(prog, n, rev, 20 + opt + 20, 0x0800, 77);
				assert_int_equal(r % workers[wi], owner);
				if (t % 10 == 0) {
					/* not TCP, a later fragment: by the addresses; not
					 * IPv4: the kernel's hash */
					unsigned by_addr =
					    net.reta[arn_net_rss_hash(src, dst, 0, 0) &
						     net.reta_mask];
					ip[9] = IPPROTO_UDP;
					r = cbpf_run(prog, n, ip, 40 + opt, 0x0800, 77);
					assert_int_equal(r % workers[wi], by_addr);
					ip[9] = IPPROTO_TCP;
					ip[7] = 1;
					r = cbpf_run(prog, n, ip, 40 + opt, 0x0800, 77);
					assert_int_equal(r % workers[wi], by_addr);
					assert_int_equal(
					    cbpf_run(prog, n, ip, 40 + opt, 0x0806, 78), 78);
				}
			}
		}
	struct arn_net net;
	memset(&net, 0, sizeof(net));
	net.n_workers = 2;
	net_reta_fill(&net, 128);
	net.reta[5] = 0; /* not round-robin */
	assert_int_equal(net_rss_fanout_prog(&net, prog, RTE_DIM(prog)), 0);
}

static void test_rss_hash_is_symmetric(void **state)
{
	(void)state;
	net_rss_init();
	uint32_t x = 99;
	for (int i = 0; i < 5000; i++) {
		x = x * 1103515245 + 12345;
		uint32_t a = x;
		x = x * 1103515245 + 12345;
		uint32_t b = x;
		uint16_t pa = (uint16_t)(x >> 3), pb = (uint16_t)(x >> 17);
		assert_int_equal(arn_net_rss_hash(a, b, pa, pb), arn_net_rss_hash(b, a, pb, pa));
	}
}

static void test_flow_worker_spreads_and_pick_lport(void **state)
{
	struct fixture *f = *state;
	unsigned count[2] = {0, 0};
	for (uint16_t p = 1024; p < 3024; p++)
		count[arn_net_flow_worker(W(f, 0), OUR_IP, PEER_IP, 80, p)]++;
	/* Both workers own a fair share of flows. */
	assert_true(count[0] > 600 && count[1] > 600);
	for (unsigned w = 0; w < 2; w++) {
		uint16_t start = 32768;
		for (int i = 0; i < 50; i++) {
			uint16_t p = arn_net_flow_pick_lport(W(f, w), OUR_IP, IP(198, 18, 1, 10),
							     8080, 32768, 60999, start);
			assert_true(p >= 32768 && p <= 60999);
			/* Replies (remote -> local) hash to the picking worker. */
			assert_int_equal(
			    arn_net_flow_worker(W(f, w), OUR_IP, IP(198, 18, 1, 10), p, 8080), w);
			start = (uint16_t)(p + 1);
		}
	}
	assert_int_equal(arn_net_worker_count(W(f, 1)), 2);
	assert_int_equal(arn_net_worker_index(W(f, 1)), 1);
}

static void test_tcp_to_owner_directly(void **state)
{
	struct fixture *f = *state;
	struct pkt p;
	build_tcp(&p, &f->mac, PEER_IP, OUR_IP, sport_for(f, 0), 80);
	inject(f, 0, p.b, p.len);
	run(f, 0);
	assert_int_equal(l4.inputs, 1);
	assert_ptr_equal(l4.input_lc, W(f, 0));
	/* Data at the IPv4 header, l3_len set, Ethernet padding trimmed. */
	assert_int_equal(l4.input_len, 40);
	assert_int_equal(l4.input_l3_len, 20);
	assert_int_equal(l4.first_byte, 0x45);
	assert_int_equal(wc(f, 0, ARN_NET_W_handoff_out), 0);
}

static void test_tcp_handed_to_owner(void **state)
{
	struct fixture *f = *state;
	struct pkt p;
	/* A flow of worker 1 arrives on worker 0's queue (the kernel's hash). */
	build_tcp(&p, &f->mac, PEER_IP, OUR_IP, sport_for(f, 1), 80);
	inject(f, 0, p.b, p.len);
	run(f, 0);
	assert_int_equal(l4.inputs, 0);
	assert_int_equal(wc(f, 0, ARN_NET_W_handoff_out), 1);
	run(f, 1);
	assert_int_equal(l4.inputs, 1);
	assert_ptr_equal(l4.input_lc, W(f, 1));
	assert_int_equal(l4.input_len, 40);
	assert_int_equal(wc(f, 1, ARN_NET_W_handoff_in), 1);
	/* Counted once, on the worker that received it. */
	assert_int_equal(pc(f, ARN_NET_P_rx_packets), 1);
	assert_int_equal(pc(f, ARN_NET_P_ip4_rx), 1);
	assert_int_equal(pc(f, ARN_NET_P_tcp_rx), 1);
}

static void test_icmp_unreach_goes_to_flow_owner(void **state)
{
	struct fixture *f = *state;
	/* We sent OUR_IP:lport -> 198.18.1.10:8080; a router says "frag needed". */
	uint32_t remote = IP(198, 18, 1, 10);
	uint16_t lport =
	    arn_net_flow_pick_lport(W(f, 1), OUR_IP, remote, 8080, 40000, 50000, 40000);
	uint8_t b[8 + 20 + 8];
	memset(b, 0, sizeof(b));
	struct rte_icmp_hdr *ic = (struct rte_icmp_hdr *)b;
	ic->icmp_type = 3;
	ic->icmp_code = 4;
	ic->icmp_seq_nb = RTE_BE16(1400); /* next-hop MTU */
	struct rte_ipv4_hdr *in = (struct rte_ipv4_hdr *)(b + 8);
	in->version_ihl = 0x45;
	in->total_length = RTE_BE16(1500);
	in->time_to_live = 63;
	in->next_proto_id = IPPROTO_TCP;
	in->src_addr = rte_cpu_to_be_32(OUR_IP);
	in->dst_addr = rte_cpu_to_be_32(remote);
	uint16_t *ports = (uint16_t *)(b + 28);
	ports[0] = rte_cpu_to_be_16(lport);
	ports[1] = RTE_BE16(8080);
	uint32_t qseq = RTE_BE32(0x89abcdefu); /* the quoted sequence number */
	memcpy(b + 32, &qseq, 4);
	ic->icmp_cksum = (uint16_t)~rte_raw_cksum(b, sizeof(b));
	struct pkt p;
	build_ip(&p, &f->mac, GW_IP, OUR_IP, IPPROTO_ICMP, b, sizeof(b));
	inject(f, 0, p.b, p.len);
	run(f, 0);
	run(f, 1);
	assert_int_equal(l4.unreach, 1);
	assert_ptr_equal(l4.unreach_lc, W(f, 1));
	assert_int_equal(l4.code, 4);
	assert_int_equal(l4.mtu, 1400);
	assert_int_equal(l4.src, OUR_IP);
	assert_int_equal(l4.dst, remote);
	assert_int_equal(l4.sport, lport);
	assert_int_equal(l4.dport, 8080);
	assert_int_equal(l4.seq, 0x89abcdefu);
	assert_int_equal(pc(f, ARN_NET_P_icmp_rx_unreach), 1);
}

static void test_arp_shared_with_other_workers(void **state)
{
	struct fixture *f = *state;
	struct pkt p;
	static const struct rte_ether_addr bc = {{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}};
	build_arp(&p, &bc, RTE_ARP_OP_REQUEST, &peer_mac, PEER_IP, OUR_IP);
	inject(f, 0, p.b, p.len);
	run(f, 0);
	assert_int_equal(drain(f, 0), 1); /* the reply */
	assert_true(net_arp_lookup(W(f, 0), PEER_IP, NULL));
	assert_false(net_arp_lookup(W(f, 1), PEER_IP, NULL));
	run(f, 1);
	struct rte_ether_addr mac;
	assert_true(net_arp_lookup(W(f, 1), PEER_IP, &mac));
	assert_true(rte_is_same_ether_addr(&mac, &peer_mac));
	/* Worker 1 learned only: it did not answer again. */
	assert_int_equal(drain(f, 1), 0);
	assert_int_equal(pc(f, ARN_NET_P_arp_tx_reply), 1);
	assert_int_equal(wc(f, 0, ARN_NET_W_arp_shared_out), 1);
}

/* ---- IPv4 and ICMP validation
 * ---------------------------------------------------------------------- */

static void test_icmp_echo_reply(void **state)
{
	struct fixture *f = *state;
	struct pkt p;
	build_echo(&p, &f->mac, PEER_IP, OUR_IP, 56);
	inject(f, 0, p.b, p.len);
	run(f, 0);
	struct rte_mbuf *m = sent(f, 0);
	assert_non_null(m);
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	assert_true(rte_is_same_ether_addr(&eth->dst_addr, &peer_mac));
	assert_true(rte_is_same_ether_addr(&eth->src_addr, &f->mac));
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
	assert_int_equal(rte_be_to_cpu_32(ip->src_addr), OUR_IP);
	assert_int_equal(rte_be_to_cpu_32(ip->dst_addr), PEER_IP);
	assert_int_equal(rte_raw_cksum(ip, 20), 0xffff);
	struct rte_icmp_hdr *ic = (struct rte_icmp_hdr *)(ip + 1);
	assert_int_equal(ic->icmp_type, RTE_IP_ICMP_ECHO_REPLY);
	assert_int_equal(rte_raw_cksum(ic, 8 + 56), 0xffff);
	assert_int_equal(rte_pktmbuf_pkt_len(m), 14 + 20 + 8 + 56);
	const uint8_t *payload = (const uint8_t *)(ic + 1);
	for (int i = 0; i < 56; i++)
		assert_int_equal(payload[i], i);
	rte_pktmbuf_free(m);
	assert_int_equal(pc(f, ARN_NET_P_icmp_rx_echo), 1);
	assert_int_equal(pc(f, ARN_NET_P_icmp_tx_echo_reply), 1);
	assert_int_equal(pc(f, ARN_NET_P_tx_packets), 1);
}

/* Two ports, one worker: net_worker_iteration's RX and TX flush for more
 * than one port (the one-port case has a path of its own): each port's
 * queue is read in the iteration, each echo answered on the port it came
 * in on, and both ports' TX buffers flushed. */
static void test_two_ports_each_read_and_flushed(void **state)
{
	(void)state;
	static int seq;
	char name[32];
	struct rte_ring *rx[2], *tx[2];
	struct arn_dp_port ports[2];
	memset(ports, 0, sizeof(ports));
	memset(&l4, 0, sizeof(l4));
	const uint32_t ip[2] = {OUR_IP, IP(198, 19, 0, 2)};
	const uint32_t peer[2] = {PEER_IP, IP(198, 19, 0, 1)};
	for (unsigned i = 0; i < 2; i++) {
		snprintf(name, sizeof(name), "tp%d_rx%u", seq, i);
		rx[i] = rte_ring_create(name, 64, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
		snprintf(name, sizeof(name), "tp%d_tx%u", seq, i);
		tx[i] = rte_ring_create(name, 64, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
		assert_non_null(rx[i]);
		assert_non_null(tx[i]);
		snprintf(name, sizeof(name), "arn_tp%d_%u", seq, i);
		int pid = rte_eth_from_rings(name, &rx[i], 1, &tx[i], 1, 0);
		assert_true(pid >= 0);
		assert_int_equal(rte_eth_dev_get_name_by_port((uint16_t)pid, name), 0);
		ports[i].name = strdup(i ? "b" : "a");
		ports[i].device = strdup(name);
		ports[i].ipv4 = ip[i];
		ports[i].prefix_len = 24;
		ports[i].mtu = 1500;
		ports[i].rx_descriptors = 256;
		ports[i].tx_descriptors = 256;
	}
	seq++;
	unsigned workers[1] = {1};
	struct arn_dataplane dp = {.present = true,
				   .control_lcore = -1,
				   .mbuf_data_room = RTE_MBUF_DEFAULT_BUF_SIZE,
				   .worker_lcores = workers,
				   .n_workers = 1,
				   .ports = ports,
				   .n_ports = 2,
				   .mbufs_per_socket = 2047,
				   .mbuf_cache_size = 32};
	arn_net_set_l4(&l4_ops);
	struct arn_net *net = arn_net_create(&dp);
	assert_non_null(net);
	struct arn_lcore *lc = arn_net_lcore(net, 0);
	for (unsigned i = 0; i < 2; i++) {
		struct pkt p;
		build_echo(&p, &net->port[i].mac, peer[i], ip[i], 8);
		struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
		assert_non_null(m);
		memcpy(rte_pktmbuf_append(m, (uint16_t)p.len), p.b, p.len);
		assert_int_equal(rte_ring_enqueue(rx[i], m), 0);
	}
	/* one iteration reads both queues and sends both answers */
	assert_int_equal(net_worker_iteration(lc), 1);
	for (unsigned i = 0; i < 2; i++) {
		struct rte_mbuf *m = NULL;
		assert_int_equal(rte_ring_dequeue(tx[i], (void **)&m), 0);
		struct rte_ipv4_hdr *h = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, 14);
		assert_int_equal(rte_be_to_cpu_32(h->src_addr), ip[i]);
		assert_int_equal(rte_be_to_cpu_32(h->dst_addr), peer[i]);
		rte_pktmbuf_free(m);
		assert_int_equal(rte_ring_count(tx[i]), 0);
		assert_int_equal(
		    arn_net_port_counter(net, (uint16_t)i, ARN_NET_P_icmp_tx_echo_reply), 1);
		assert_int_equal(arn_net_port_counter(net, (uint16_t)i, ARN_NET_P_tx_packets), 1);
	}
	assert_int_equal(net_worker_iteration(lc), 0);
	arn_net_destroy(net);
	for (unsigned i = 0; i < 2; i++) {
		rte_ring_free(rx[i]);
		rte_ring_free(tx[i]);
		free(ports[i].name);
		free(ports[i].device);
	}
}

/* A TX queue that takes nothing (its ring full, as a tap's kernel side
 * behind on a loaded machine) keeps the worker's frames for the next flush,
 * in order, instead of dropping them; only what finds the worker's buffer
 * full too is dropped and counted. */
static void test_full_tx_queue_keeps_frames(void **state)
{
	struct fixture *f = *state;
	/* fill the TX ring with placeholders */
	unsigned cap = rte_ring_free_count(f->tx[0]);
	struct rte_mbuf *ph[1024];
	for (unsigned i = 0; i < cap; i++) {
		ph[i] = rte_pktmbuf_alloc(pool);
		assert_non_null(ph[i]);
		assert_int_equal(rte_ring_enqueue(f->tx[0], ph[i]), 0);
	}
	struct pkt p;
	for (int i = 0; i < 5; i++) {
		build_echo(&p, &f->mac, PEER_IP, OUR_IP, 8 + (size_t)i); /* told apart by length */
		inject(f, 0, p.b, p.len);
	}
	run(f, 0);
	assert_int_equal(pc(f, ARN_NET_P_icmp_tx_echo_reply), 5);
	assert_int_equal(pc(f, ARN_NET_P_tx_packets), 0);
	assert_int_equal(pc(f, ARN_NET_P_tx_drop_full), 0);
	assert_true(pc(f, ARN_NET_P_tx_full_kept) > 0);
	/* the queue drains: the five go out, in order */
	for (unsigned i = 0; i < cap; i++) {
		struct rte_mbuf *m = sent(f, 0);
		assert_ptr_equal(m, ph[i]);
		rte_pktmbuf_free(m);
	}
	run(f, 0);
	for (int i = 0; i < 5; i++) {
		struct rte_mbuf *m = sent(f, 0);
		assert_non_null(m);
		assert_int_equal(rte_pktmbuf_pkt_len(m), 14 + 20 + 8 + 8 + i);
		rte_pktmbuf_free(m);
	}
	assert_null(sent(f, 0));
	assert_int_equal(pc(f, ARN_NET_P_tx_packets), 5);
	assert_int_equal(pc(f, ARN_NET_P_tx_drop_full), 0);

	/* full again, and more replies than the buffer holds: the buffer
	 * keeps ARN_NET_TX_BURST, the rest are dropped and counted */
	for (unsigned i = 0; i < cap; i++) {
		ph[i] = rte_pktmbuf_alloc(pool);
		assert_int_equal(rte_ring_enqueue(f->tx[0], ph[i]), 0);
	}
	unsigned extra = ARN_NET_TX_BURST + 8;
	for (unsigned i = 0; i < extra; i++) {
		build_echo(&p, &f->mac, PEER_IP, OUR_IP, 8);
		inject(f, 0, p.b, p.len);
	}
	for (int k = 0; k < 8; k++)
		run(f, 0);
	assert_int_equal(pc(f, ARN_NET_P_tx_drop_full), 8);
	assert_int_equal(drain(f, 0), cap);
	run(f, 0);
	assert_int_equal(drain(f, 0), ARN_NET_TX_BURST);
}

/* A TX queue with room for part of the buffer: tx_packets and tx_bytes
 * count what it took (the frames it did not take are counted when a later
 * flush sends them), whatever the split. */
static void test_partly_taken_tx_counts_what_was_sent(void **state)
{
	struct fixture *f = *state;
	unsigned cap = rte_ring_free_count(f->tx[0]);
	struct rte_mbuf *ph[1024];
	for (unsigned i = 0; i + 2 < cap; i++) {
		ph[i] = rte_pktmbuf_alloc(pool);
		assert_non_null(ph[i]);
		assert_int_equal(rte_ring_enqueue(f->tx[0], ph[i]), 0);
	}
	struct pkt p;
	for (int i = 0; i < 5; i++) {
		build_echo(&p, &f->mac, PEER_IP, OUR_IP, 8 + (size_t)i);
		inject(f, 0, p.b, p.len);
	}
	run(f, 0);
	/* the first two replies went, 14 + 20 + 8 + 8 (+ 0, + 1) bytes */
	assert_int_equal(pc(f, ARN_NET_P_tx_packets), 2);
	assert_int_equal(pc(f, ARN_NET_P_tx_bytes), 50 + 51);
	assert_true(pc(f, ARN_NET_P_tx_full_kept) > 0);
	for (unsigned i = 0; i + 2 < cap; i++)
		rte_pktmbuf_free(sent(f, 0));
	assert_int_equal(drain(f, 0), 2);
	run(f, 0);
	assert_int_equal(drain(f, 0), 3);
	assert_int_equal(pc(f, ARN_NET_P_tx_packets), 5);
	assert_int_equal(pc(f, ARN_NET_P_tx_bytes), 50 + 51 + 52 + 53 + 54);
}

struct bad_case {
	const char *what;
	enum arn_net_pctr counter;
	void (*mutate)(struct pkt *p);
};

static void m_version(struct pkt *p)
{
	ip_of(p)->version_ihl = 0x65;
	fix_ip_cksum(p);
}
static void m_ihl_small(struct pkt *p)
{
	ip_of(p)->version_ihl = 0x44;
}
static void m_total_beyond_frame(struct pkt *p)
{
	ip_of(p)->total_length = RTE_BE16(1400);
	fix_ip_cksum(p);
}
static void m_total_below_header(struct pkt *p)
{
	ip_of(p)->total_length = RTE_BE16(12);
	fix_ip_cksum(p);
}
static void m_cksum(struct pkt *p)
{
	ip_of(p)->hdr_checksum ^= 0x0101;
}
static void m_options(struct pkt *p)
{
	/* IHL 6 with a NOP option word; total length grows by 4. */
	struct rte_ipv4_hdr *ip = ip_of(p);
	uint16_t tot = rte_be_to_cpu_16(ip->total_length);
	memmove((uint8_t *)ip + 24, (uint8_t *)ip + 20, tot - 20);
	memset((uint8_t *)ip + 20, 1, 4);
	ip->version_ihl = 0x46;
	ip->total_length = rte_cpu_to_be_16((uint16_t)(tot + 4));
	p->len += 4;
	fix_ip_cksum(p);
}
/* A 24-byte header (summed by arn_cksum_raw, not the 20-byte sum) with a
 * wrong checksum: the checksum is checked before options are refused. */
static void m_options_cksum(struct pkt *p)
{
	m_options(p);
	ip_of(p)->hdr_checksum ^= 0x0400;
}
static void m_more_fragments(struct pkt *p)
{
	ip_of(p)->fragment_offset = RTE_BE16(RTE_IPV4_HDR_MF_FLAG);
	fix_ip_cksum(p);
}
static void m_fragment_offset(struct pkt *p)
{
	ip_of(p)->fragment_offset = RTE_BE16(185);
	fix_ip_cksum(p);
}
static void m_ttl0(struct pkt *p)
{
	ip_of(p)->time_to_live = 0;
	fix_ip_cksum(p);
}
static void m_src_multicast(struct pkt *p)
{
	ip_of(p)->src_addr = rte_cpu_to_be_32(IP(224, 0, 0, 5));
	fix_ip_cksum(p);
}
static void m_src_ours(struct pkt *p)
{
	ip_of(p)->src_addr = rte_cpu_to_be_32(OUR_IP);
	fix_ip_cksum(p);
}
static void m_dst_other(struct pkt *p)
{
	ip_of(p)->dst_addr = rte_cpu_to_be_32(IP(198, 18, 0, 3));
	fix_ip_cksum(p);
}
static void m_dst_broadcast(struct pkt *p)
{
	ip_of(p)->dst_addr = rte_cpu_to_be_32(IP(198, 18, 0, 255));
	fix_ip_cksum(p);
}
static void m_proto_udp(struct pkt *p)
{
	ip_of(p)->next_proto_id = IPPROTO_UDP;
	fix_ip_cksum(p);
}
static void m_runt(struct pkt *p)
{
	p->len = 10;
}
static void m_not_our_mac(struct pkt *p)
{
	p->b[5] ^= 0x40;
}
static void m_ipv6(struct pkt *p)
{
	p->b[12] = 0x86;
	p->b[13] = 0xdd;
}
static void m_icmp_cksum(struct pkt *p)
{
	((struct rte_icmp_hdr *)(ip_of(p) + 1))->icmp_cksum ^= 0x2002;
}
static void m_icmp_short(struct pkt *p)
{
	ip_of(p)->total_length = RTE_BE16(20 + 4);
	fix_ip_cksum(p);
}
static void m_ip_truncated(struct pkt *p)
{
	p->len = 14 + 12;
}

/* The IPv4 and Ethernet defects both malformed-frame tests send (in an
 * ICMP echo and in a TCP segment), in two parts: the TCP test puts its
 * own truncation case between them. */
#define IP4_BAD_HEAD                                                                               \
	{"version 6 in an IPv4 frame", ARN_NET_P_ip4_drop_version, m_version},                     \
	    {"IHL 4", ARN_NET_P_ip4_drop_hdr_len, m_ihl_small},                                    \
	    {"total length beyond the frame", ARN_NET_P_ip4_drop_truncated, m_total_beyond_frame}, \
	{                                                                                          \
		"total length below the header", ARN_NET_P_ip4_drop_hdr_len, m_total_below_header  \
	}
#define IP4_BAD_REST                                                                               \
	{"bad header checksum", ARN_NET_P_ip4_drop_cksum, m_cksum},                                \
	    {"options", ARN_NET_P_ip4_drop_options, m_options},                                    \
	    {"options, bad header checksum", ARN_NET_P_ip4_drop_cksum, m_options_cksum},           \
	    {"more fragments", ARN_NET_P_ip4_drop_fragment, m_more_fragments},                     \
	    {"fragment offset", ARN_NET_P_ip4_drop_fragment, m_fragment_offset},                   \
	    {"TTL 0", ARN_NET_P_ip4_drop_ttl, m_ttl0},                                             \
	    {"multicast source", ARN_NET_P_ip4_drop_bad_src, m_src_multicast},                     \
	    {"our own source", ARN_NET_P_ip4_drop_bad_src, m_src_ours},                            \
	    {"not our address", ARN_NET_P_ip4_drop_not_local, m_dst_other},                        \
	    {"subnet broadcast", ARN_NET_P_ip4_drop_not_local, m_dst_broadcast},                   \
	    {"UDP", ARN_NET_P_ip4_drop_proto, m_proto_udp},                                        \
	    {"runt frame", ARN_NET_P_rx_drop_runt, m_runt},                                        \
	    {"another MAC", ARN_NET_P_rx_drop_not_ours, m_not_our_mac},                            \
	{                                                                                          \
		"IPv6 EtherType", ARN_NET_P_rx_drop_ethertype, m_ipv6                              \
	}

static void test_malformed_ipv4_counted_and_dropped(void **state)
{
	struct fixture *f = *state;
	static const struct bad_case cases[] = {
	    IP4_BAD_HEAD,
	    IP4_BAD_REST,
	    {"bad ICMP checksum", ARN_NET_P_icmp_drop_cksum, m_icmp_cksum},
	    {"ICMP shorter than its header", ARN_NET_P_icmp_drop_truncated, m_icmp_short},
	    {"IPv4 header cut short", ARN_NET_P_ip4_drop_truncated, m_ip_truncated},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pkt p;
		build_echo(&p, &f->mac, PEER_IP, OUR_IP, 32);
		cases[i].mutate(&p);
		uint64_t before = pc(f, cases[i].counter);
		inject(f, 0, p.b, p.len);
		run(f, 0);
		if (pc(f, cases[i].counter) != before + 1)
			fail_msg("%s: counter not incremented", cases[i].what);
		if (drain(f, 0) != 0)
			fail_msg("%s: something was sent", cases[i].what);
	}
	assert_int_equal(pc(f, ARN_NET_P_icmp_tx_echo_reply), 0);
	assert_int_equal(l4.inputs, 0);
	/* Nothing leaked: every mbuf is back (the pool is the test's). */
}

/* The defects of an IPv4 frame, in a TCP segment. */
static const struct bad_case tcp_bad_cases[] = {
    IP4_BAD_HEAD,
    {"total length below a TCP header", ARN_NET_P_tcp_drop_truncated, m_icmp_short},
    IP4_BAD_REST,
    {"IPv4 header cut short", ARN_NET_P_ip4_drop_truncated, m_ip_truncated},
};

/* The same defects in a TCP segment: the usual segment's one-pass checks
 * (input.c's tcp_usual) refuse each, and the full checks drop it and count
 * it where they count it in any other frame; TCP sees none. A padded
 * segment to our MAC, or to the broadcast MAC, is taken. */
static void test_malformed_tcp_counted_and_dropped(void **state)
{
	struct fixture *f = *state;
	const struct bad_case *cases = tcp_bad_cases;
	for (size_t i = 0; i < RTE_DIM(tcp_bad_cases); i++) {
		struct pkt p;
		build_tcp(&p, &f->mac, PEER_IP, OUR_IP, 40000, 80);
		cases[i].mutate(&p);
		uint64_t before = pc(f, cases[i].counter);
		inject(f, 0, p.b, p.len);
		run(f, 0);
		if (pc(f, cases[i].counter) != before + 1)
			fail_msg("%s: counter not incremented", cases[i].what);
	}
	assert_int_equal(l4.inputs, 0);
	assert_int_equal(pc(f, ARN_NET_P_tcp_rx), 0);
	struct pkt p;
	build_tcp(&p, &f->mac, PEER_IP, OUR_IP, 40000, 80);
	inject(f, 0, p.b, p.len);
	run(f, 0);
	assert_int_equal(l4.inputs, 1);
	assert_int_equal(l4.input_len, 40); /* the padding trimmed */
	static const struct rte_ether_addr bcast = {{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}};
	build_tcp(&p, &bcast, PEER_IP, OUR_IP, 40000, 80);
	inject(f, 0, p.b, p.len);
	run(f, 0);
	assert_int_equal(l4.inputs, 2);
	assert_int_equal(l4.input_len, 40);
	assert_int_equal(pc(f, ARN_NET_P_tcp_rx), 2);
	/* all but the runt, the other MAC's and the IPv6 frame were IPv4 */
	assert_int_equal(pc(f, ARN_NET_P_ip4_rx), RTE_DIM(tcp_bad_cases) - 3 + 2);
}

/* Another worker's segment is handed over from the one-pass checks of the
 * usual segment (input.c's tcp_usual) only once it has passed all of them:
 * each defect of test_malformed_tcp_counted_and_dropped, in a segment of
 * worker 1's flow arriving on worker 0, is dropped and counted on worker 0
 * and never handed; the good one, padded, is handed once and arrives at
 * worker 1's TCP trimmed, counted once (ip4_rx on worker 0, tcp_rx on 1). */
static void test_tcp_handed_only_when_every_check_passes(void **state)
{
	struct fixture *f = *state;
	const struct bad_case *cases = tcp_bad_cases;
	uint16_t sport = sport_for(f, 1);
	for (size_t i = 0; i < RTE_DIM(tcp_bad_cases); i++) {
		struct pkt p;
		build_tcp(&p, &f->mac, PEER_IP, OUR_IP, sport, 80);
		cases[i].mutate(&p);
		uint64_t before = pc(f, cases[i].counter);
		inject(f, 0, p.b, p.len);
		run(f, 0);
		run(f, 1);
		if (pc(f, cases[i].counter) != before + 1)
			fail_msg("%s: counter not incremented", cases[i].what);
		if (wc(f, 0, ARN_NET_W_handoff_out) != 0)
			fail_msg("%s: handed to the flow's owner", cases[i].what);
	}
	assert_int_equal(l4.inputs, 0);
	struct pkt p;
	build_tcp(&p, &f->mac, PEER_IP, OUR_IP, sport, 80);
	assert_true(p.len > 14 + 40); /* Ethernet padding */
	uint64_t ip4 = pc(f, ARN_NET_P_ip4_rx);
	inject(f, 0, p.b, p.len);
	run(f, 0);
	assert_int_equal(wc(f, 0, ARN_NET_W_handoff_out), 1);
	assert_int_equal(l4.inputs, 0);
	run(f, 1);
	assert_int_equal(wc(f, 1, ARN_NET_W_handoff_in), 1);
	assert_int_equal(l4.inputs, 1);
	assert_ptr_equal(l4.input_lc, W(f, 1));
	assert_int_equal(l4.input_len, 40);
	assert_int_equal(l4.input_l3_len, 20);
	assert_int_equal(l4.first_byte, 0x45);
	assert_int_equal(pc(f, ARN_NET_P_ip4_rx), ip4 + 1);
	assert_int_equal(pc(f, ARN_NET_P_tcp_rx), 1);
}

/* Every truncation of a valid echo request, and of a valid TCP segment, is
 * dropped without a reply and without reaching TCP. */
static void test_every_truncation_dropped(void **state)
{
	struct fixture *f = *state;
	struct pkt e, t;
	build_echo(&e, &f->mac, PEER_IP, OUR_IP, 100);
	build_tcp(&t, &f->mac, PEER_IP, OUR_IP, 40000, 80);
	size_t ip_end_e = 14 + rte_be_to_cpu_16(ip_of(&e)->total_length);
	size_t ip_end_t = 14 + rte_be_to_cpu_16(ip_of(&t)->total_length);
	for (size_t len = 0; len < ip_end_e; len++)
		inject(f, 0, e.b, len);
	for (size_t len = 0; len < ip_end_t; len++)
		inject(f, 0, t.b, len);
	run(f, 0);
	assert_int_equal(drain(f, 0), 0);
	assert_int_equal(l4.inputs, 0);
	assert_int_equal(pc(f, ARN_NET_P_rx_packets), ip_end_e + ip_end_t);
	uint64_t drops = pc(f, ARN_NET_P_rx_drop_runt) + pc(f, ARN_NET_P_ip4_drop_truncated) +
			 pc(f, ARN_NET_P_rx_drop_not_ours);
	/* Frames of 0..5 bytes lack even a destination MAC. */
	assert_int_equal(drops, ip_end_e + ip_end_t);
}

/* A UDP flood of random bytes after a valid Ethernet header: never a crash,
 * everything counted as some drop. */
static void test_random_ipv4_never_crashes(void **state)
{
	struct fixture *f = *state;
	uint32_t x = 7;
	for (int i = 0; i < 3000; i++) {
		struct pkt p;
		build_echo(&p, &f->mac, PEER_IP, OUR_IP, 40);
		size_t n = 14 + (x % 80);
		for (size_t k = 14; k < n; k++) {
			x = x * 1103515245 + 12345;
			if ((x >> 16) % 4 == 0)
				p.b[k] = (uint8_t)(x >> 24);
		}
		p.len = n;
		inject(f, 0, p.b, p.len);
		if (i % 500 == 499)
			run(f, 0);
	}
	run(f, 0);
	drain(f, 0);
	assert_int_equal(pc(f, ARN_NET_P_rx_packets), 3000);
}

/* ---- ARP
 * ------------------------------------------------------------------------------------------- */

static void test_arp_request_answered_and_sender_learned(void **state)
{
	struct fixture *f = *state;
	static const struct rte_ether_addr bc = {{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}};
	struct pkt p;
	build_arp(&p, &bc, RTE_ARP_OP_REQUEST, &peer_mac, PEER_IP, OUR_IP);
	inject(f, 0, p.b, p.len);
	run(f, 0);
	struct rte_mbuf *m = sent(f, 0);
	assert_non_null(m);
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	assert_true(rte_is_same_ether_addr(&eth->dst_addr, &peer_mac));
	assert_int_equal(eth->ether_type, RTE_BE16(RTE_ETHER_TYPE_ARP));
	struct rte_arp_hdr *a = (struct rte_arp_hdr *)(eth + 1);
	assert_int_equal(rte_be_to_cpu_16(a->arp_opcode), RTE_ARP_OP_REPLY);
	assert_true(rte_is_same_ether_addr(&a->arp_data.arp_sha, &f->mac));
	assert_int_equal(rte_be_to_cpu_32(a->arp_data.arp_sip), OUR_IP);
	assert_true(rte_is_same_ether_addr(&a->arp_data.arp_tha, &peer_mac));
	assert_int_equal(rte_be_to_cpu_32(a->arp_data.arp_tip), PEER_IP);
	rte_pktmbuf_free(m);
	assert_true(net_arp_lookup(W(f, 0), PEER_IP, NULL));

	/* A request for someone else: not answered, and not learned either. */
	struct rte_ether_addr other = {{0x02, 0, 0, 0, 0, 0x33}};
	build_arp(&p, &bc, RTE_ARP_OP_REQUEST, &other, IP(198, 18, 0, 33), IP(198, 18, 0, 44));
	inject(f, 0, p.b, p.len);
	run(f, 0);
	assert_int_equal(drain(f, 0), 0);
	assert_false(net_arp_lookup(W(f, 0), IP(198, 18, 0, 33), NULL));
	assert_int_equal(pc(f, ARN_NET_P_arp_rx_not_ours), 1);
	assert_int_equal(pc(f, ARN_NET_P_arp_rx_ignored), 1);

	/* Malformed: wrong hardware type, and too short. */
	build_arp(&p, &bc, RTE_ARP_OP_REQUEST, &peer_mac, PEER_IP, OUR_IP);
	p.b[15] = 6;
	inject(f, 0, p.b, p.len);
	build_arp(&p, &bc, RTE_ARP_OP_REQUEST, &peer_mac, PEER_IP, OUR_IP);
	inject(f, 0, p.b, 14 + 20);
	run(f, 0);
	assert_int_equal(drain(f, 0), 0);
	assert_int_equal(pc(f, ARN_NET_P_arp_rx_bad), 2);
}

/* An L4 segment of @p len bytes with @p tag in its first byte. */
static struct rte_mbuf *segment(struct fixture *f, uint8_t tag, uint16_t len)
{
	struct rte_mbuf *m = arn_net_alloc(W(f, 0));
	assert_non_null(m);
	uint8_t *p = (uint8_t *)rte_pktmbuf_append(m, len);
	memset(p, 0, len);
	p[0] = tag;
	return m;
}

struct nh_seen {
	unsigned n;
	uint32_t nh, drops;
	unsigned waiting;
};

static void nh_seen_add(void *ctx, uint32_t nh, unsigned waiting, uint32_t drops)
{
	struct nh_seen *s = ctx;
	s->n++;
	s->nh = nh;
	s->waiting = waiting;
	s->drops = drops;
}

static void test_arp_resolves_queues_and_releases(void **state)
{
	struct fixture *f = *state;
	struct arn_lcore *lc = W(f, 0);
	lc->now = rte_rdtsc();
	uint32_t host = IP(198, 18, 0, 77);
	struct rte_ether_addr host_mac = {{0x02, 0, 0, 0, 0, 0x77}};
	/* Issue 22: as many wait as Linux lets wait for a neighbour
	 * (unres_qlen_bytes, 212,992 bytes of whole buffers: 97 mbufs of
	 * 2,176), so that a burst of SYNs to an endpoint never contacted
	 * before waits for one ARP answer; past it the OLDEST go. */
	struct rte_mbuf *probe = segment(f, 0, 20);
	unsigned cap = 212992u / probe->buf_len;
	rte_pktmbuf_free(probe);
	unsigned total = cap + 23;
	for (unsigned i = 0; i < total; i++)
		arn_net_ip4_output(lc, segment(f, (uint8_t)i, 20), OUR_IP, host, 253);
	/* One request; cap wait; the 23 oldest dropped. */
	assert_int_equal(net_arp_n_waiting(lc), cap);
	assert_int_equal(pc(f, ARN_NET_P_arp_drop_queue_full), 23);
	/* ... and /stats tells them by next hop (dpdk.arp.<ip>.*) */
	struct nh_seen seen = {0};
	net_arp_foreach_queue(lc, nh_seen_add, &seen);
	assert_int_equal(seen.n, 1);
	assert_int_equal(seen.nh, host);
	assert_int_equal(seen.waiting, cap);
	assert_int_equal(seen.drops, 23);
	run(f, 0);
	struct rte_mbuf *m = sent(f, 0);
	assert_non_null(m);
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	assert_true(rte_is_broadcast_ether_addr(&eth->dst_addr));
	struct rte_arp_hdr *a = (struct rte_arp_hdr *)(eth + 1);
	assert_int_equal(rte_be_to_cpu_16(a->arp_opcode), RTE_ARP_OP_REQUEST);
	assert_int_equal(rte_be_to_cpu_32(a->arp_data.arp_tip), host);
	assert_int_equal(rte_be_to_cpu_32(a->arp_data.arp_sip), OUR_IP);
	rte_pktmbuf_free(m);
	assert_null(sent(f, 0));

	struct pkt p;
	build_arp(&p, &f->mac, RTE_ARP_OP_REPLY, &host_mac, host, OUR_IP);
	inject(f, 0, p.b, p.len);
	run(f, 0);
	assert_int_equal(net_arp_n_waiting(lc), 0);
	for (unsigned i = 23; i < total; i++) {
		m = sent(f, 0);
		if (m == NULL) { /* the TX ring holds a burst at a time */
			run(f, 0);
			m = sent(f, 0);
		}
		assert_non_null(m);
		eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
		assert_true(rte_is_same_ether_addr(&eth->dst_addr, &host_mac));
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
		assert_int_equal(((uint8_t *)(ip + 1))[0], (uint8_t)i); /* in order, newest kept */
		assert_int_equal(ip->next_proto_id, 253);
		assert_int_equal(ip->time_to_live, 64);
		assert_int_equal(ip->fragment_offset, RTE_BE16(RTE_IPV4_HDR_DF_FLAG));
		assert_int_equal(rte_raw_cksum(ip, 20), 0xffff);
		rte_pktmbuf_free(m);
	}
	assert_null(sent(f, 0));
	/* Resolved: the next packet goes straight out. */
	assert_int_equal(arn_net_ip4_output(lc, segment(f, 9, 20), OUR_IP, host, 253), 0);
	run(f, 0);
	assert_int_equal(drain(f, 0), 1);
	assert_int_equal(pc(f, ARN_NET_P_arp_resolved), 1);
}

/* Issue 22: a next hop resolved ahead of traffic (an endpoint that an EDS
 * update added) answers before the first SYN needs it. */
static void test_arp_resolve_ahead(void **state)
{
	struct fixture *f = *state;
	struct arn_lcore *lc = W(f, 0);
	lc->now = rte_rdtsc();
	uint32_t host = IP(198, 18, 0, 78);
	struct rte_ether_addr host_mac = {{0x02, 0, 0, 0, 0, 0x78}};
	assert_int_equal(arn_net_nexthop_since(lc, host), 0); /* nothing known */
	arn_net_resolve(lc, host);
	arn_net_resolve(lc, host); /* once is enough */
	/* what goes toward it now waits (a connect timeout must not run) */
	assert_true(arn_net_nexthop_since(lc, host) == UINT64_MAX);
	run(f, 0);
	struct rte_mbuf *m = sent(f, 0);
	assert_non_null(m);
	struct rte_arp_hdr *a = rte_pktmbuf_mtod_offset(m, struct rte_arp_hdr *, 14);
	assert_int_equal(rte_be_to_cpu_16(a->arp_opcode), RTE_ARP_OP_REQUEST);
	assert_int_equal(rte_be_to_cpu_32(a->arp_data.arp_tip), host);
	rte_pktmbuf_free(m);
	assert_null(sent(f, 0));
	assert_int_equal(pc(f, ARN_NET_P_arp_resolve_ahead), 1);
	struct pkt p;
	build_arp(&p, &f->mac, RTE_ARP_OP_REPLY, &host_mac, host, OUR_IP);
	inject(f, 0, p.b, p.len);
	run(f, 0);
	/* the answer's time: a connect timeout runs from there */
	uint64_t since = arn_net_nexthop_since(lc, host);
	assert_true(since != UINT64_MAX && since != 0 && since <= lc->now);
	/* the first packet goes straight out: nothing waits */
	assert_int_equal(arn_net_ip4_output(lc, segment(f, 1, 20), OUR_IP, host, 253), 0);
	assert_int_equal(net_arp_n_waiting(lc), 0);
	run(f, 0);
	assert_int_equal(drain(f, 0), 1);
	/* off link: the next hop is the gateway, resolved (once) instead */
	arn_net_resolve(lc, IP(10, 9, 9, 9));
	arn_net_resolve(lc, IP(10, 9, 9, 10));
	assert_int_equal(pc(f, ARN_NET_P_arp_resolve_ahead), 2);
}

static void test_arp_off_link_uses_gateway(void **state)
{
	struct fixture *f = *state;
	struct arn_lcore *lc = W(f, 0);
	lc->now = rte_rdtsc();
	arn_net_ip4_output(lc, segment(f, 1, 20), OUR_IP, IP(203, 0, 113, 9), 253);
	run(f, 0);
	struct rte_mbuf *m = sent(f, 0);
	assert_non_null(m);
	struct rte_arp_hdr *a = rte_pktmbuf_mtod_offset(m, struct rte_arp_hdr *, 14);
	assert_int_equal(rte_be_to_cpu_32(a->arp_data.arp_tip), GW_IP);
	rte_pktmbuf_free(m);
	struct pkt p;
	build_arp(&p, &f->mac, RTE_ARP_OP_REPLY, &gw_mac, GW_IP, OUR_IP);
	inject(f, 0, p.b, p.len);
	run(f, 0);
	m = sent(f, 0);
	assert_non_null(m);
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	assert_true(rte_is_same_ether_addr(&eth->dst_addr, &gw_mac));
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
	assert_int_equal(rte_be_to_cpu_32(ip->dst_addr), IP(203, 0, 113, 9));
	rte_pktmbuf_free(m);
}

static void test_arp_retries_then_gives_up(void **state)
{
	struct fixture *f = *state;
	struct arn_lcore *lc = W(f, 0);
	uint64_t hz = rte_get_tsc_hz();
	net_arp_timing.retry = hz / 200; /* 5 ms */
	net_arp_timing.retries = 3;
	lc->now = rte_rdtsc();
	uint32_t host = IP(198, 18, 0, 99);
	arn_net_ip4_output(lc, segment(f, 1, 20), OUR_IP, host, 253);
	arn_net_ip4_output(lc, segment(f, 2, 20), OUR_IP, host, 253);
	/* Until it gives up (15 ms plus scheduling delays on a busy machine). */
	uint64_t end = rte_rdtsc() + 2 * hz;
	while (rte_rdtsc() < end && pc(f, ARN_NET_P_arp_unresolved) == 0)
		net_worker_iteration(lc);
	run(f, 0);
	/* Three requests, then the two waiting packets are dropped. */
	assert_int_equal(drain(f, 0), 3);
	assert_int_equal(pc(f, ARN_NET_P_arp_tx_request), 3);
	assert_int_equal(pc(f, ARN_NET_P_arp_unresolved), 1);
	assert_int_equal(pc(f, ARN_NET_P_arp_drop_unresolved), 2);
	assert_int_equal(net_arp_n_waiting(lc), 0);
	assert_false(net_arp_lookup(lc, host, NULL));
	/* The next packet starts over: a new request (and, with a long retry
	 * interval now, only one whatever the scheduler does). */
	net_arp_timing.retry = hz;
	lc->now = rte_rdtsc();
	arn_net_ip4_output(lc, segment(f, 3, 20), OUR_IP, host, 253);
	run(f, 0);
	assert_int_equal(drain(f, 0), 1);
	net_arp_flush(lc);
}

static void test_arp_stale_entry_used_while_refreshed(void **state)
{
	struct fixture *f = *state;
	struct arn_lcore *lc = W(f, 0);
	uint64_t hz = rte_get_tsc_hz();
	net_arp_timing.reachable = hz / 100; /* 10 ms */
	net_arp_timing.retry = hz;	     /* no retry within the test */
	struct pkt p;
	build_arp(&p, &f->mac, RTE_ARP_OP_REPLY, &peer_mac, PEER_IP, OUR_IP);
	inject(f, 0, p.b, p.len);
	run(f, 0);
	/* An unsolicited reply from a host we never asked for is not cached. */
	assert_false(net_arp_lookup(lc, PEER_IP, NULL));
	static const struct rte_ether_addr bc = {{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}};
	build_arp(&p, &bc, RTE_ARP_OP_REQUEST, &peer_mac, PEER_IP, OUR_IP);
	inject(f, 0, p.b, p.len);
	run(f, 0);
	drain(f, 0);
	assert_true(net_arp_lookup(lc, PEER_IP, NULL));
	rte_delay_us_block(20000);
	lc->now = rte_rdtsc();
	arn_net_ip4_output(lc, segment(f, 5, 20), OUR_IP, PEER_IP, 253);
	run(f, 0);
	/* The packet went out with the old MAC, and a refresh request too. */
	unsigned ip_frames = 0, arp_frames = 0;
	struct rte_mbuf *m;
	while ((m = sent(f, 0)) != NULL) {
		struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
		if (eth->ether_type == RTE_BE16(RTE_ETHER_TYPE_IPV4)) {
			assert_true(rte_is_same_ether_addr(&eth->dst_addr, &peer_mac));
			ip_frames++;
		} else {
			arp_frames++;
		}
		rte_pktmbuf_free(m);
	}
	assert_int_equal(ip_frames, 1);
	assert_int_equal(arp_frames, 1);
	/* The answer makes it reachable again. */
	build_arp(&p, &f->mac, RTE_ARP_OP_REPLY, &peer_mac, PEER_IP, OUR_IP);
	inject(f, 0, p.b, p.len);
	run(f, 0);
	assert_true(net_arp_lookup(lc, PEER_IP, NULL));
	assert_int_equal(pc(f, ARN_NET_P_arp_resolved), 1);
}

/* Inject @p n ARP frames (sender i gets address base + i and a MAC of its
 * own) in batches the RX ring holds, running the worker and dropping what
 * it sends after each batch. @return frames it sent. */
static unsigned arp_flood(struct fixture *f, uint16_t op, const struct rte_ether_addr *eth_dst,
			  uint32_t base, unsigned n, uint32_t tip, bool gratuitous)
{
	unsigned out = 0;
	for (unsigned i = 0; i < n;) {
		for (unsigned b = 0; b < 128 && i < n; b++, i++) {
			struct rte_ether_addr sha = {
			    {0x02, 0x5f, 0, 0, (uint8_t)(i >> 8), (uint8_t)i}};
			struct pkt p;
			build_arp(&p, eth_dst, op, &sha, base + i, gratuitous ? base + i : tip);
			inject(f, 0, p.b, p.len);
		}
		run(f, 0);
		out += drain(f, 0);
	}
	return out;
}

static void test_arp_spoofed_senders_create_no_entries(void **state)
{
	struct fixture *f = *state;
	struct arn_lcore *lc = W(f, 0);
	static const struct rte_ether_addr bc = {{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}};
	/* On-link senders (198.18.1.0 and up, inside our /16) that ask for
	 * other hosts, reply to us unasked, or announce themselves: Linux
	 * (arp_process, arp_accept=0) learns none of them, and neither do we. */
	assert_int_equal(arp_flood(f, RTE_ARP_OP_REQUEST, &bc, IP(198, 18, 1, 0), 1500,
				   IP(198, 18, 0, 9), false),
			 0);
	assert_int_equal(
	    arp_flood(f, RTE_ARP_OP_REPLY, &f->mac, IP(198, 18, 8, 0), 1500, OUR_IP, false), 0);
	assert_int_equal(arp_flood(f, RTE_ARP_OP_REQUEST, &bc, IP(198, 18, 16, 0), 1500, 0, true),
			 0);
	assert_int_equal(net_arp_n_entries(lc), 0);
	assert_int_equal(pc(f, ARN_NET_P_arp_rx_ignored), 4500);
	assert_int_equal(pc(f, ARN_NET_P_arp_rx_not_ours), 3000);
	assert_int_equal(pc(f, ARN_NET_P_arp_tx_reply), 0);

	/* Requests for us are answered, and their senders learned until the
	 * table is full; past that they are answered but not learned. */
	assert_int_equal(
	    arp_flood(f, RTE_ARP_OP_REQUEST, &bc, IP(198, 18, 32, 0), 1000, OUR_IP, false), 1000);
	assert_int_equal(pc(f, ARN_NET_P_arp_tx_reply), 1000);
	assert_int_equal(net_arp_n_entries(lc), NET_ARP_MAX_ENTRIES);
	assert_int_equal(pc(f, ARN_NET_P_arp_learn_refused), 1000 - NET_ARP_MAX_ENTRIES);
	assert_true(net_arp_lookup(lc, IP(198, 18, 32, 0), NULL));
	assert_false(net_arp_lookup(lc, IP(198, 18, 32, 0) + 999, NULL));
	assert_int_equal(pc(f, ARN_NET_P_arp_evicted), 0);
	/* Now cached, a sender is updated by what it sends, asked for or not
	 * (an unsolicited reply with a new MAC, as after a NIC swap). */
	struct rte_ether_addr moved = {{0x02, 0x5f, 0xee, 0, 0, 1}};
	struct pkt p;
	build_arp(&p, &f->mac, RTE_ARP_OP_REPLY, &moved, IP(198, 18, 32, 1), OUR_IP);
	inject(f, 0, p.b, p.len);
	run(f, 0);
	struct rte_ether_addr mac;
	assert_true(net_arp_lookup(lc, IP(198, 18, 32, 1), &mac));
	assert_true(rte_is_same_ether_addr(&mac, &moved));
	assert_int_equal(pc(f, ARN_NET_P_arp_rx_ignored), 4500);
}

/* Resolve @p ip to @p mac by sending to it (a request goes out) and
 * injecting the reply; the entry is then in use. */
static void resolve_and_use(struct fixture *f, uint32_t dst, uint32_t nh,
			    const struct rte_ether_addr *mac)
{
	struct arn_lcore *lc = W(f, 0);
	lc->now = rte_rdtsc();
	assert_int_equal(arn_net_ip4_output(lc, segment(f, 1, 20), OUR_IP, dst, 253), 0);
	run(f, 0);
	drain(f, 0);
	struct pkt p;
	build_arp(&p, &f->mac, RTE_ARP_OP_REPLY, mac, nh, OUR_IP);
	inject(f, 0, p.b, p.len);
	run(f, 0);
	assert_int_equal(drain(f, 0), 1); /* the packet that waited */
	assert_true(net_arp_lookup(lc, nh, NULL));
}

/* A host on the link chose its senders' addresses (inside our /16) so
 * that their slots in the ARP table's linear probing all lie together:
 * with the unkeyed multiplicative hash the table had, 768 requests for us
 * built one run of 768 entries, and every later lookup of an address that
 * hashes into it (each ARP packet from such a sender, each packet to such
 * a next hop) read hundreds of slots (761 on average). The hash is
 * keyed per worker now: the same addresses take a few slots each. */
static void test_arp_chosen_senders_cannot_pile_up(void **state)
{
	struct fixture *f = *state;
	struct arn_lcore *lc = W(f, 0);
	static const struct rte_ether_addr bc = {{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}};
	/* the unkeyed home (Knuth's multiplier, top 10 bits) of the first
	 * 16 slots: about 1,024 of the /16's addresses */
	static uint32_t ips[1200];
	unsigned n = 0;
	for (uint32_t ip = IP(198, 18, 1, 0); ip < IP(198, 19, 0, 0) && n < RTE_DIM(ips); ip++)
		if (((ip * 2654435761u) >> 22) < 16)
			ips[n++] = ip;
	assert_true(n > NET_ARP_MAX_ENTRIES + 128);
	for (unsigned i = 0; i < NET_ARP_MAX_ENTRIES;) {
		for (unsigned b = 0; b < 128 && i < NET_ARP_MAX_ENTRIES; b++, i++) {
			struct rte_ether_addr sha = {
			    {0x02, 0x5f, 0, 0, (uint8_t)(i >> 8), (uint8_t)i}};
			struct pkt p;
			build_arp(&p, &bc, RTE_ARP_OP_REQUEST, &sha, ips[i], OUR_IP);
			inject(f, 0, p.b, p.len);
		}
		run(f, 0);
		drain(f, 0);
	}
	assert_int_equal(net_arp_n_entries(lc), NET_ARP_MAX_ENTRIES);
	/* lookups of the others: a miss reads its run to the first free slot */
	uint64_t probes = 0;
	for (unsigned i = NET_ARP_MAX_ENTRIES; i < n; i++)
		probes += net_arp_probes(lc, ips[i]);
	probes /= n - NET_ARP_MAX_ENTRIES;
	/* 8.5 expected at a load of 3/4 (Knuth's (1 + 1 / (1 - a)^2) / 2) */
	assert_true(probes < 40);
}

static void test_arp_flood_cannot_evict_entries_in_use(void **state)
{
	struct fixture *f = *state;
	struct arn_lcore *lc = W(f, 0);
	static const struct rte_ether_addr bc = {{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}};
	/* The gateway and an on-link peer, resolved first (so the old policy,
	 * "evict what expires first", picked them first) and in use. */
	resolve_and_use(f, IP(203, 0, 113, 9), GW_IP, &gw_mac);
	resolve_and_use(f, PEER_IP, PEER_IP, &peer_mac);

	/* Requests for us from 2000 spoofed on-link senders fill the table
	 * with entries that nothing uses; they push nothing out. */
	assert_int_equal(
	    arp_flood(f, RTE_ARP_OP_REQUEST, &bc, IP(198, 18, 32, 0), 2000, OUR_IP, false), 2000);
	assert_int_equal(net_arp_n_entries(lc), NET_ARP_MAX_ENTRIES);
	assert_int_equal(pc(f, ARN_NET_P_arp_learn_refused), 2000 - (NET_ARP_MAX_ENTRIES - 2));
	assert_int_equal(pc(f, ARN_NET_P_arp_evicted), 0);
	struct rte_ether_addr mac;
	assert_true(net_arp_lookup(lc, GW_IP, &mac));
	assert_true(rte_is_same_ether_addr(&mac, &gw_mac));
	assert_true(net_arp_lookup(lc, PEER_IP, &mac));
	assert_true(rte_is_same_ether_addr(&mac, &peer_mac));

	/* Next hops we need (as SYN-ACKs to spoofed on-link SYNs would be)
	 * take the idle learned entries' slots, least recently used first,
	 * then find every entry resolving or in use and are refused. */
	lc->now = rte_rdtsc();
	for (unsigned i = 0; i < 1000; i++) {
		arn_net_ip4_output(lc, segment(f, 2, 20), OUR_IP, IP(198, 18, 128, 0) + i, 253);
		if (i % 64 == 63) {
			net_tx_flush(lc, true);
			drain(f, 0);
		}
	}
	net_tx_flush(lc, true);
	drain(f, 0);
	assert_int_equal(pc(f, ARN_NET_P_arp_evicted), NET_ARP_MAX_ENTRIES - 2);
	assert_int_equal(pc(f, ARN_NET_P_arp_drop_table_full), 1000 - (NET_ARP_MAX_ENTRIES - 2));
	assert_int_equal(net_arp_n_entries(lc), NET_ARP_MAX_ENTRIES);
	assert_false(net_arp_lookup(lc, IP(198, 18, 32, 0), NULL));

	/* The gateway and the peer are still there and used at once. */
	assert_true(net_arp_lookup(lc, GW_IP, &mac));
	assert_true(rte_is_same_ether_addr(&mac, &gw_mac));
	assert_int_equal(arn_net_ip4_output(lc, segment(f, 3, 20), OUR_IP, IP(203, 0, 113, 9), 253),
			 0);
	assert_int_equal(arn_net_ip4_output(lc, segment(f, 4, 20), OUR_IP, PEER_IP, 253), 0);
	net_tx_flush(lc, true);
	struct rte_mbuf *m;
	unsigned to_gw = 0, to_peer = 0;
	while ((m = sent(f, 0)) != NULL) {
		struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
		assert_int_equal(eth->ether_type, RTE_BE16(RTE_ETHER_TYPE_IPV4));
		to_gw += rte_is_same_ether_addr(&eth->dst_addr, &gw_mac);
		to_peer += rte_is_same_ether_addr(&eth->dst_addr, &peer_mac);
		rte_pktmbuf_free(m);
	}
	assert_int_equal(to_gw, 1);
	assert_int_equal(to_peer, 1);
	net_arp_flush(lc);
}

static void test_arp_sharing_leaves_half_the_handoff_ring(void **state)
{
	struct fixture *f = *state;
	static const struct rte_ether_addr bc = {{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}};
	/* Worker 1's hand-off ring half full (of segments other workers passed). */
	struct rte_ring *r = W(f, 1)->handoff;
	unsigned half = rte_ring_get_capacity(r) / 2;
	struct rte_mbuf *held[NET_HANDOFF_RING];
	assert_int_equal(rte_pktmbuf_alloc_bulk(pool, held, half), 0);
	assert_int_equal(rte_ring_enqueue_bulk(r, (void **)held, half, NULL), half);
	struct pkt p;
	build_arp(&p, &bc, RTE_ARP_OP_REQUEST, &peer_mac, PEER_IP, OUR_IP);
	inject(f, 0, p.b, p.len);
	run(f, 0);
	assert_int_equal(drain(f, 0), 1); /* answered all the same */
	assert_int_equal(wc(f, 0, ARN_NET_W_arp_share_skipped), 1);
	assert_int_equal(wc(f, 0, ARN_NET_W_arp_shared_out), 0);
	assert_int_equal(rte_ring_count(r), half);
	struct rte_mbuf *m;
	while (rte_ring_dequeue(r, (void **)&m) == 0)
		rte_pktmbuf_free(m);
	/* With room again, ARP is shared. */
	inject(f, 0, p.b, p.len);
	run(f, 0);
	drain(f, 0);
	assert_int_equal(wc(f, 0, ARN_NET_W_arp_shared_out), 1);
	run(f, 1);
	assert_true(net_arp_lookup(W(f, 1), PEER_IP, NULL));
}

static void test_gratuitous_arp_at_start(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(net_worker_begin(W(f, 0)), 0);
	struct rte_mbuf *m = sent(f, 0);
	assert_non_null(m);
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	assert_true(rte_is_broadcast_ether_addr(&eth->dst_addr));
	struct rte_arp_hdr *a = (struct rte_arp_hdr *)(eth + 1);
	assert_int_equal(rte_be_to_cpu_32(a->arp_data.arp_sip), OUR_IP);
	assert_int_equal(rte_be_to_cpu_32(a->arp_data.arp_tip), OUR_IP);
	rte_pktmbuf_free(m);
	/* Two more follow, a second apart. */
	assert_null(sent(f, 0));
	uint64_t end = rte_rdtsc() + 3 * rte_get_tsc_hz() + rte_get_tsc_hz() / 2;
	while (rte_rdtsc() < end && pc(f, ARN_NET_P_arp_tx_request) < 3) {
		net_worker_iteration(W(f, 0));
		rte_delay_us_sleep(10000);
	}
	run(f, 0);
	assert_int_equal(drain(f, 0), 2);
	assert_int_equal(pc(f, ARN_NET_P_arp_tx_request), 3);
	net_worker_end(W(f, 0));
	assert_int_equal(l4.inits, 1);
	assert_int_equal(l4.finis, 1);
}

/* The loop thread's mbufs come from its cache of the pool (arn_net_alloc
 * after net_worker_begin, without rte_pktmbuf_alloc's lookup of the
 * thread's cache) as rte_pktmbuf_alloc gives them: reset, whatever was
 * done with them before they were freed; a pool run dry is counted. */
static void test_alloc_from_the_loop_cache_is_reset(void **state)
{
	struct fixture *f = *state;
	struct arn_lcore *lc = W(f, 0);
	assert_int_equal(net_worker_begin(lc), 0);
	drain(f, 0); /* the gratuitous ARP */
	struct rte_mbuf *m = arn_net_alloc(lc);
	assert_non_null(m);
	assert_non_null(rte_pktmbuf_append(m, 100));
	assert_non_null(rte_pktmbuf_adj(m, 10));
	m->ol_flags |= RTE_MBUF_F_TX_TCP_CKSUM;
	m->l2_len = 14;
	m->packet_type = 1;
	m->port = 3;
	rte_pktmbuf_free(m);
	struct rte_mbuf *n = arn_net_alloc(lc);
	assert_ptr_equal(n, m); /* the cache's last in */
	assert_int_equal(n->data_len, 0);
	assert_int_equal(n->pkt_len, 0);
	assert_int_equal(n->data_off, RTE_MIN(RTE_PKTMBUF_HEADROOM, n->buf_len));
	assert_int_equal(n->ol_flags, 0);
	assert_int_equal(n->l2_len, 0);
	assert_int_equal(n->packet_type, 0);
	assert_int_equal(n->nb_segs, 1);
	assert_null(n->next);
	rte_pktmbuf_free(n);
	/* until the pool is dry: one failure counted, then all back */
	unsigned size = lc->pool->size;
	struct rte_mbuf **all = calloc(size + 1, sizeof(*all));
	assert_non_null(all);
	unsigned k = 0;
	while (k <= size && (all[k] = arn_net_alloc(lc)) != NULL)
		k++;
	assert_true(k > 0 && k <= size);
	assert_int_equal(wc(f, 0, ARN_NET_W_mbuf_alloc_failed), 1);
	for (unsigned i = 0; i < k; i++)
		rte_pktmbuf_free(all[i]);
	free(all);
	net_worker_end(lc);
	assert_null(lc->mcache);
	assert_non_null((m = arn_net_alloc(lc)));
	rte_pktmbuf_free(m);
}

/* An iteration that received nothing but sent what an earlier one queued
 * is busy: the send (a system call under net_af_packet and net_af_xdp)
 * is the worker's work, and loop_busy_cycles is what the benchmarks and
 * DESIGN.md's "what fast means" read as the worker's cost. Counted, not
 * timed. */
static void test_iteration_that_only_transmits_is_busy(void **state)
{
	struct fixture *f = *state;
	struct arn_lcore *lc = W(f, 0);
	assert_int_equal(net_worker_begin(lc), 0);
	drain(f, 0); /* the gratuitous ARP */
	/* Nothing to do: idle. */
	uint64_t busy0 = wc(f, 0, ARN_NET_W_loop_busy_iterations);
	uint64_t idle0 = wc(f, 0, ARN_NET_W_loop_idle_iterations);
	assert_int_equal(net_worker_iteration(lc), 0);
	assert_int_equal(wc(f, 0, ARN_NET_W_loop_busy_iterations), busy0);
	assert_int_equal(wc(f, 0, ARN_NET_W_loop_idle_iterations), idle0 + 1);
	/* A frame left in the TX buffer by earlier work (its drain deadline
	 * not reached), as a busy iteration leaves what it queued. */
	struct rte_mbuf *m = arn_net_alloc(lc);
	assert_non_null(m);
	assert_non_null(rte_pktmbuf_append(m, 60));
	memset(rte_pktmbuf_mtod(m, void *), 0, 60);
	lc->now = rte_rdtsc();
	net_tx(lc, 0, m);
	assert_null(sent(f, 0));
	/* The next iteration receives nothing and sends that frame: busy. */
	assert_int_equal(net_worker_iteration(lc), 1);
	assert_int_equal(drain(f, 0), 1);
	assert_int_equal(wc(f, 0, ARN_NET_W_loop_busy_iterations), busy0 + 1);
	assert_int_equal(wc(f, 0, ARN_NET_W_loop_idle_iterations), idle0 + 1);
	assert_true(wc(f, 0, ARN_NET_W_loop_busy_cycles) > 0);
	net_worker_end(lc);
}

/* What an iteration makes of the input it received goes out in that
 * iteration once its RX queues are drained (a burst came back short):
 * waiting for the next iteration batches nothing more and cost a proxied
 * keep-alive request two extra busy iterations (issue 17). Counted, not
 * timed. */
static void test_reply_sent_in_the_iteration_that_made_it(void **state)
{
	struct fixture *f = *state;
	struct arn_lcore *lc = W(f, 0);
	struct pkt p;
	build_echo(&p, &f->mac, PEER_IP, OUR_IP, 8);
	inject(f, 0, p.b, p.len);
	uint64_t busy0 = wc(f, 0, ARN_NET_W_loop_busy_iterations);
	assert_int_equal(net_worker_iteration(lc), 1);
	assert_int_equal(pc(f, ARN_NET_P_icmp_tx_echo_reply), 1);
	assert_int_equal(drain(f, 0), 1);
	/* nothing was left for the next one: idle */
	assert_int_equal(net_worker_iteration(lc), 0);
	assert_int_equal(wc(f, 0, ARN_NET_W_loop_busy_iterations), busy0 + 1);
	assert_int_equal(pc(f, ARN_NET_P_tx_packets), 1);
}

/* One loop iteration, in a function of its own for callgrind
 * (--toggle-collect=rx_iteration: a busy iteration's instructions, with
 * the ring PMD's receive in place of a NIC's). */
static __attribute__((noinline)) int rx_iteration(struct arn_lcore *lc)
{
	return net_worker_iteration(lc);
}

/* The usual segment, one per busy iteration as a keep-alive exchange
 * brings them: each reaches the L4 layer in its own iteration, with the
 * Ethernet header off and counted once in rx_packets, ip4_rx and tcp_rx;
 * the iteration after the last is idle. */
static void test_usual_tcp_one_per_iteration(void **state)
{
	struct fixture *f = *state;
	struct arn_lcore *lc = W(f, 0);
	struct pkt p;
	build_tcp(&p, &f->mac, PEER_IP, OUR_IP, 40000, 80);
	uint64_t rx0 = pc(f, ARN_NET_P_rx_packets), ip0 = pc(f, ARN_NET_P_ip4_rx),
		 tcp0 = pc(f, ARN_NET_P_tcp_rx);
	uint64_t busy0 = wc(f, 0, ARN_NET_W_loop_busy_iterations);
	for (unsigned i = 0; i < 1024; i++) {
		inject(f, 0, p.b, p.len);
		assert_int_equal(rx_iteration(lc), 1);
		assert_int_equal(l4.inputs, i + 1);
		assert_int_equal(l4.input_len, 40);
		assert_int_equal(l4.input_l3_len, 20);
		assert_int_equal(l4.first_byte, 0x45);
	}
	assert_int_equal(rx_iteration(lc), 0);
	assert_int_equal(pc(f, ARN_NET_P_rx_packets), rx0 + 1024);
	assert_int_equal(pc(f, ARN_NET_P_ip4_rx), ip0 + 1024);
	assert_int_equal(pc(f, ARN_NET_P_tcp_rx), tcp0 + 1024);
	assert_int_equal(wc(f, 0, ARN_NET_W_loop_busy_iterations), busy0 + 1024);
	assert_int_equal(drain(f, 0), 0);
}

/* The usual path's destination MAC test (input.c's same_mac: a 4-byte
 * and a 2-byte comparison): a frame whose destination differs from ours
 * in any one of the six bytes, by any one bit, reaches no L4 layer and is
 * counted as another host's; ours, the same frame unchanged, reaches it. */
static void test_usual_tcp_every_mac_byte_compared(void **state)
{
	struct fixture *f = *state;
	struct arn_lcore *lc = W(f, 0);
	struct pkt p;
	build_tcp(&p, &f->mac, PEER_IP, OUR_IP, 40000, 80);
	uint64_t not0 = pc(f, ARN_NET_P_rx_drop_not_ours);
	unsigned in0 = l4.inputs, n = 0;
	for (unsigned byte = 0; byte < 6; byte++) {
		for (unsigned bit = 0; bit < 8; bit++) {
			struct pkt q = p;
			q.b[byte] ^= (uint8_t)(1u << bit);
			inject(f, 0, q.b, q.len);
			assert_int_equal(rx_iteration(lc), 1);
			n++;
			assert_int_equal(l4.inputs, in0);
			assert_int_equal(pc(f, ARN_NET_P_rx_drop_not_ours), not0 + n);
		}
	}
	inject(f, 0, p.b, p.len);
	assert_int_equal(rx_iteration(lc), 1);
	assert_int_equal(l4.inputs, in0 + 1);
	assert_int_equal(drain(f, 0), 0);
}

/* ---- IPv4 output
 * ------------------------------------------------------------------------------------ */

static void test_ip4_output_completes_tcp_checksum(void **state)
{
	struct fixture *f = *state;
	struct arn_lcore *lc = W(f, 0);
	static const struct rte_ether_addr bc = {{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}};
	struct pkt p;
	build_arp(&p, &bc, RTE_ARP_OP_REQUEST, &peer_mac, PEER_IP, OUR_IP);
	inject(f, 0, p.b, p.len);
	run(f, 0);
	drain(f, 0);

	struct rte_mbuf *m = segment(f, 0, 20 + 11);
	struct rte_tcp_hdr *th = rte_pktmbuf_mtod(m, struct rte_tcp_hdr *);
	th->src_port = RTE_BE16(80);
	th->dst_port = RTE_BE16(40000);
	th->data_off = 5 << 4;
	th->tcp_flags = RTE_TCP_ACK_FLAG | RTE_TCP_PSH_FLAG;
	memcpy(th + 1, "hello world", 11);
	th->cksum = 0;
	m->ol_flags |= RTE_MBUF_F_TX_TCP_CKSUM;
	m->l4_len = 20;
	assert_int_equal(arn_net_ip4_output(lc, m, OUR_IP, PEER_IP, IPPROTO_TCP), 0);
	run(f, 0);
	m = sent(f, 0);
	assert_non_null(m);
	struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, 14);
	assert_int_equal(rte_be_to_cpu_16(ip->total_length), 20 + 20 + 11);
	assert_int_equal(rte_raw_cksum(ip, 20), 0xffff);
	assert_int_equal(rte_ipv4_udptcp_cksum_verify(ip, ip + 1), 0);
	rte_pktmbuf_free(m);
	/* every length, odd and even, and a full-sized segment: the fast sum
	 * (lib/common/arn_cksum.c) must agree with DPDK's verification */
	static const unsigned lens[] = {0, 1, 2, 3, 7, 8, 9, 31, 32, 33, 63, 64, 65, 1000, 1460};
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		m = segment(f, (uint8_t)(i + 1), 20 + lens[i]);
		th = rte_pktmbuf_mtod(m, struct rte_tcp_hdr *);
		th->src_port = RTE_BE16(80);
		th->dst_port = rte_cpu_to_be_16((uint16_t)(40000 + i));
		th->data_off = 5 << 4;
		uint8_t *pl = (uint8_t *)(th + 1);
		for (unsigned k = 0; k < lens[i]; k++)
			pl[k] = (uint8_t)(k * 151 + i);
		th->cksum = 0;
		m->ol_flags |= RTE_MBUF_F_TX_TCP_CKSUM;
		m->l4_len = 20;
		assert_int_equal(arn_net_ip4_output(lc, m, OUR_IP, PEER_IP, IPPROTO_TCP), 0);
		run(f, 0);
		m = sent(f, 0);
		assert_non_null(m);
		ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, 14);
		assert_int_equal(rte_ipv4_udptcp_cksum_verify(ip, ip + 1), 0);
		rte_pktmbuf_free(m);
	}

	/* A segment in an mbuf chain (the software sum of a multi-segment
	 * packet: DPDK's rte_ipv4_udptcp_cksum_mbuf), with odd-length links
	 * so that words straddle them. */
	static const uint16_t links[][3] = {{21, 7, 13}, {20, 1, 1}, {33, 100, 0}, {25, 0, 9}};
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		m = segment(f, 0, links[i][0]);
		th = rte_pktmbuf_mtod(m, struct rte_tcp_hdr *);
		th->src_port = RTE_BE16(80);
		th->dst_port = rte_cpu_to_be_16((uint16_t)(41000 + i));
		th->data_off = 5 << 4;
		for (unsigned k = 20; k < links[i][0]; k++)
			((uint8_t *)th)[k] = (uint8_t)(k * 29 + i);
		for (int l = 1; l < 3; l++) {
			if (!links[i][l])
				continue;
			struct rte_mbuf *n = arn_net_alloc(lc);
			assert_non_null(n);
			uint8_t *q = (uint8_t *)rte_pktmbuf_append(n, links[i][l]);
			for (unsigned k = 0; k < links[i][l]; k++)
				q[k] = (uint8_t)(k * 53 + l + i);
			assert_int_equal(rte_pktmbuf_chain(m, n), 0);
		}
		th->cksum = 0;
		m->ol_flags |= RTE_MBUF_F_TX_TCP_CKSUM;
		m->l4_len = 20;
		assert_int_equal(arn_net_ip4_output(lc, m, OUR_IP, PEER_IP, IPPROTO_TCP), 0);
		run(f, 0);
		m = sent(f, 0);
		assert_non_null(m);
		assert_int_equal(rte_pktmbuf_linearize(m), 0);
		ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, 14);
		assert_int_equal(rte_ipv4_udptcp_cksum_verify(ip, ip + 1), 0);
		rte_pktmbuf_free(m);
	}

	/* Larger than the MTU (DF, no fragmentation): refused. */
	m = segment(f, 0, 1481);
	assert_int_equal(arn_net_ip4_output(lc, m, OUR_IP, PEER_IP, IPPROTO_TCP), -EMSGSIZE);
	assert_int_equal(pc(f, ARN_NET_P_ip4_tx_drop_too_big), 1);
	assert_int_equal(arn_net_route_mtu(lc, PEER_IP), 1500);
	assert_true(arn_net_is_local(lc, OUR_IP));
	assert_false(arn_net_is_local(lc, PEER_IP));
	/* the one-port fast route agrees with net_route, on and off link */
	static const uint32_t dsts[] = {PEER_IP,	   OUR_IP,	   GW_IP,
					IP(198, 18, 1, 1), IP(8, 8, 8, 8), 0};
	for (size_t i = 0; i < sizeof(dsts) / sizeof(dsts[0]); i++) {
		uint32_t a = 1, b = 2;
		assert_int_equal(net_route_fast(f->net, OUR_IP, dsts[i], &a),
				 net_route(f->net, OUR_IP, dsts[i], &b));
		assert_int_equal(a, b);
	}
	assert_true(arn_net_hz() > 0);
}

/* A port that verified the IPv4 header checksum says so in the mbuf's
 * flags: GOOD is believed (a header with a wrong sum is taken: the NIC
 * checked what it received), BAD is dropped and counted even when the
 * sum is right; with no verdict (UNKNOWN, every port without offload)
 * the header is summed in software. */
static void test_rx_ip_checksum_flags_believed(void **state)
{
	struct fixture *f = *state;
	static const struct {
		uint64_t flag;
		bool corrupt, dropped;
	} cases[] = {
	    {RTE_MBUF_F_RX_IP_CKSUM_GOOD, true, false},
	    {RTE_MBUF_F_RX_IP_CKSUM_BAD, false, true},
	    {RTE_MBUF_F_RX_IP_CKSUM_UNKNOWN, true, true},
	    {RTE_MBUF_F_RX_IP_CKSUM_UNKNOWN, false, false},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pkt p;
		build_echo(&p, &f->mac, PEER_IP, OUR_IP, 32);
		if (cases[i].corrupt)
			ip_of(&p)->hdr_checksum ^= 0x0101;
		struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
		assert_non_null(m);
		memcpy(rte_pktmbuf_append(m, (uint16_t)p.len), p.b, p.len);
		m->ol_flags = cases[i].flag;
		assert_int_equal(rte_ring_enqueue(f->rx[0], m), 0);
		uint64_t before = pc(f, ARN_NET_P_ip4_drop_cksum);
		uint64_t replies = pc(f, ARN_NET_P_icmp_tx_echo_reply);
		run(f, 0);
		drain(f, 0);
		if (pc(f, ARN_NET_P_ip4_drop_cksum) != before + cases[i].dropped)
			fail_msg("case %zu: drop not as expected", i);
		/* the echo is answered when the header was taken */
		if (pc(f, ARN_NET_P_icmp_tx_echo_reply) != replies + !cases[i].dropped)
			fail_msg("case %zu: reply not as expected", i);
	}
}

/* arn_cksum_mbuf against the flat sum of the same bytes: random chains
 * of 1-5 links of 0-40 bytes (odd ones included, so that links start at
 * odd offsets of the range), random ranges within them, random partial
 * sums; a range past the chain's end is -1. DPDK 22.11's
 * rte_raw_cksum_mbuf fails this (it drops an odd-offset link's carries). */
static void test_cksum_mbuf_chains(void **state)
{
	(void)state;
	uint64_t x = 0x2545f4914f6cdd1dull;
	for (int iter = 0; iter < 3000; iter++) {
		uint8_t flat[256];
		uint32_t total = 0;
		struct rte_mbuf *head = NULL;
		int links = 1 + (int)(x % 5);
		for (int l = 0; l < links; l++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			uint16_t n = (uint16_t)(x % 41);
			struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
			assert_non_null(m);
			uint8_t *p = (uint8_t *)rte_pktmbuf_append(m, n);
			for (uint16_t k = 0; k < n; k++) {
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				p[k] = flat[total + k] = (uint8_t)(x >> 24);
			}
			total += n;
			if (head == NULL)
				head = m;
			else
				assert_int_equal(rte_pktmbuf_chain(head, m), 0);
		}
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		uint32_t off = total ? (uint32_t)(x % (total + 1)) : 0;
		uint32_t len = (uint32_t)((x >> 20) % (total - off + 1));
		uint64_t sum = x >> (iter % 48);
		int got = arn_cksum_mbuf(head, off, len, sum);
		if (got != arn_cksum_raw(flat + off, len, sum))
			fail_msg("iteration %d: links %d, off %u, len %u: %#x != %#x", iter, links,
				 off, len, got, arn_cksum_raw(flat + off, len, sum));
		assert_int_equal(arn_cksum_mbuf(head, off, total - off + 1, 0), -1);
		rte_pktmbuf_free(head);
	}
}

/* One TCP segment of @p len payload bytes through arn_net_ip4_output and
 * the worker's TX flush: the frame the port was given. */
static struct rte_mbuf *tcp_out_frame(struct fixture *f, uint16_t len)
{
	struct rte_mbuf *m = segment(f, 0, (uint16_t)(20 + len));
	struct rte_tcp_hdr *th = rte_pktmbuf_mtod(m, struct rte_tcp_hdr *);
	th->src_port = RTE_BE16(80);
	th->dst_port = RTE_BE16(40001);
	th->data_off = 5 << 4;
	th->tcp_flags = RTE_TCP_ACK_FLAG;
	for (uint16_t k = 0; k < len; k++)
		((uint8_t *)(th + 1))[k] = (uint8_t)(k * 7 + 3);
	th->cksum = 0;
	m->ol_flags |= RTE_MBUF_F_TX_TCP_CKSUM;
	m->l4_len = 20;
	assert_int_equal(arn_net_ip4_output(W(f, 0), m, OUR_IP, PEER_IP, IPPROTO_TCP), 0);
	run(f, 0);
	m = sent(f, 0);
	assert_non_null(m);
	return m;
}

/* Checksum offload is used only when the port advertises it: net_ring
 * offers none (rte_eth_dev_info_get), so lib/net enables none, and what it
 * sends carries no offload request and complete checksums, odd lengths
 * included. A port that offers both (set by hand here, as port.c sets them
 * from the device's capabilities) gets the requests, the pseudo-header sum
 * in the TCP field (what DPDK's offload API wants) and a zero IPv4 field. */
static void test_checksum_offload_only_when_advertised(void **state)
{
	struct fixture *f = *state;
	static const struct rte_ether_addr bc = {{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}};
	struct pkt p;
	build_arp(&p, &bc, RTE_ARP_OP_REQUEST, &peer_mac, PEER_IP, OUR_IP);
	inject(f, 0, p.b, p.len);
	run(f, 0);
	drain(f, 0);

	struct net_port *np = &f->net->port[0];
	struct rte_eth_dev_info info;
	assert_int_equal(rte_eth_dev_info_get(np->port_id, &info), 0);
	assert_false(info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_TCP_CKSUM);
	assert_false(info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM);
	assert_false(np->tx_tcp_cksum);
	assert_false(np->tx_ip_cksum);
	assert_false(np->rx_ip_cksum);
	const uint64_t req = RTE_MBUF_F_TX_TCP_CKSUM | RTE_MBUF_F_TX_IP_CKSUM | RTE_MBUF_F_TX_IPV4;
	for (uint16_t len = 0; len < 70; len += 7) {
		struct rte_mbuf *m = tcp_out_frame(f, len);
		assert_int_equal(m->ol_flags & req, 0);
		struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, 14);
		assert_int_equal(rte_raw_cksum(ip, 20), 0xffff);
		assert_int_equal(rte_ipv4_udptcp_cksum_verify(ip, ip + 1), 0);
		rte_pktmbuf_free(m);
	}

	np->tx_tcp_cksum = np->tx_ip_cksum = true;
	struct rte_mbuf *m = tcp_out_frame(f, 11);
	assert_int_equal(m->ol_flags & req, req);
	assert_int_equal(m->l2_len, 14);
	assert_int_equal(m->l3_len, 20);
	struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, 14);
	struct rte_tcp_hdr *th = (struct rte_tcp_hdr *)(ip + 1);
	assert_int_equal(ip->hdr_checksum, 0);
	assert_int_equal(th->cksum, rte_ipv4_phdr_cksum(ip, m->ol_flags));
	rte_pktmbuf_free(m);
	/* IPv4 only: the TCP sum in software, the header's by the port */
	np->tx_tcp_cksum = false;
	m = tcp_out_frame(f, 11);
	assert_int_equal(m->ol_flags & req, RTE_MBUF_F_TX_IP_CKSUM | RTE_MBUF_F_TX_IPV4);
	ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, 14);
	assert_int_equal(ip->hdr_checksum, 0);
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	assert_int_equal(rte_ipv4_udptcp_cksum_verify(ip, ip + 1), 0);
	rte_pktmbuf_free(m);
	np->tx_ip_cksum = false;
}

/* net_is_local (the receive path's two checks a packet: our own address as
 * a source, one of ours as the destination) looks at port 0 apart from
 * the rest: every port's address is ours, no other is, and with no port
 * nothing is, not even what port 0's unused slot holds. */
static void test_is_local_every_port_and_none_without_ports(void **state)
{
	(void)state;
	struct arn_net *net = calloc(1, sizeof(*net));
	assert_non_null(net);
	assert_false(net_is_local(net, 0)); /* port[0].ip is 0, but no port */
	net->port[0].ip = IP(198, 18, 0, 2);
	assert_false(net_is_local(net, IP(198, 18, 0, 2)));
	net->n_ports = 1;
	assert_true(net_is_local(net, IP(198, 18, 0, 2)));
	assert_false(net_is_local(net, IP(198, 18, 0, 3)));
	assert_false(net_is_local(net, 0));
	net->n_ports = 3;
	net->port[1].ip = IP(198, 18, 5, 2);
	net->port[2].ip = IP(198, 19, 0, 2);
	assert_true(net_is_local(net, IP(198, 18, 0, 2)));
	assert_true(net_is_local(net, IP(198, 18, 5, 2)));
	assert_true(net_is_local(net, IP(198, 19, 0, 2)));
	assert_false(net_is_local(net, IP(198, 19, 0, 3)));
	net->n_ports = 2; /* the third port's address is not ours any more */
	assert_false(net_is_local(net, IP(198, 19, 0, 2)));
	free(net);
}

static void test_route_longest_prefix_and_gateway(void **state)
{
	(void)state;
	struct arn_net *net = calloc(1, sizeof(*net));
	net->n_ports = 3;
	net->port[0].ip = IP(198, 18, 0, 2);
	net->port[0].mask = net_prefix_mask(16);
	net->port[1].ip = IP(198, 18, 5, 2);
	net->port[1].mask = net_prefix_mask(24);
	net->port[1].gateway = IP(198, 18, 5, 1);
	net->port[2].ip = IP(198, 19, 0, 2);
	net->port[2].mask = net_prefix_mask(24);
	net->port[2].gateway = IP(198, 19, 0, 1);
	uint32_t nh;
	assert_int_equal(net_route(net, 0, IP(198, 18, 5, 9), &nh), 1); /* longest prefix */
	assert_int_equal(nh, IP(198, 18, 5, 9));
	assert_int_equal(net_route(net, 0, IP(198, 18, 9, 9), &nh), 0);
	assert_int_equal(net_route(net, 0, IP(8, 8, 8, 8), &nh), 1); /* first gateway */
	assert_int_equal(nh, IP(198, 18, 5, 1));
	assert_int_equal(net_route(net, IP(198, 19, 0, 2), IP(8, 8, 8, 8), &nh), 2); /* by source */
	assert_int_equal(nh, IP(198, 19, 0, 1));
	/* Static routes (dataplane ports[].routes): longest prefix through that
	 * port's gateway; a port with routes is no default route. */
	static const struct arn_dp_route r2[] = {{IP(16, 0, 0, 0), 16}, {IP(48, 0, 0, 0), 8}};
	static const struct arn_dp_route r1[] = {{IP(48, 1, 0, 0), 16}};
	net->port[2].routes = r2;
	net->port[2].n_routes = 2;
	assert_int_equal(net_route(net, 0, IP(16, 0, 3, 4), &nh), 2);
	assert_int_equal(nh, IP(198, 19, 0, 1));
	assert_int_equal(net_route(net, IP(198, 19, 0, 2), IP(8, 8, 8, 8), &nh), 1); /* not 2 */
	net->port[1].routes = r1;
	net->port[1].n_routes = 1;
	assert_int_equal(net_route(net, 0, IP(48, 1, 2, 3), &nh), 1); /* /16 beats /8 */
	assert_int_equal(net_route(net, 0, IP(48, 2, 2, 3), &nh), 2);
	assert_int_equal(net_route(net, 0, IP(8, 8, 8, 8), &nh), -1); /* no default left */
	net->port[1].n_routes = net->port[2].n_routes = 0;
	net->port[1].gateway = net->port[2].gateway = 0;
	assert_int_equal(net_route(net, 0, IP(8, 8, 8, 8), &nh), -1);
	free(net);
}

/* ---- launch, control ring, RCU, counters
 * --------------------------------------------------------------- */

static void mark(struct arn_lcore *lc, void *arg)
{
	unsigned *seen = arg;
	__atomic_fetch_or(seen, 1u << lc->index, __ATOMIC_RELAXED);
}

struct stat_sum {
	uint64_t port_rx, worker_rx, busy;
	unsigned n;
};

static void sum_stat(void *ctx, const struct arn_net_stat *s)
{
	struct stat_sum *t = ctx;
	t->n++;
	if (!strcmp(s->name, "rx_packets")) {
		if (s->scope == ARN_NET_SCOPE_PORT)
			t->port_rx += s->value;
		else
			t->worker_rx += s->value;
	}
	if (!strcmp(s->name, "loop_busy_iterations"))
		t->busy += s->value;
}

static void test_launch_ctrl_rcu_and_stats(void **state)
{
	struct fixture *f = *state;
	size_t sz = rte_rcu_qsbr_get_memsize(RTE_MAX_LCORE);
	struct rte_rcu_qsbr *v = rte_zmalloc("qsbr", sz, RTE_CACHE_LINE_SIZE);
	assert_non_null(v);
	assert_int_equal(rte_rcu_qsbr_init(v, RTE_MAX_LCORE), 0);
	assert_int_equal(arn_net_set_rcu(v), 0);

	assert_int_equal(arn_net_launch(f->net), 0);
	assert_int_equal(l4.inits, 2);
	/* Worker 0 announced our address before launch returned. */
	assert_int_equal(drain(f, 0), 1);
	unsigned seen = 0;
	assert_int_equal(arn_net_call_all(mark, &seen, 2000), 0);
	assert_int_equal(seen, 3);
	/* Workers report quiescent states: a grace period completes. */
	uint64_t t = rte_rcu_qsbr_start(v);
	assert_int_equal(rte_rcu_qsbr_check(v, t, true), 1);

	/* Traffic through running workers. */
	for (int i = 0; i < 20; i++) {
		struct pkt p;
		build_echo(&p, &f->mac, PEER_IP, OUR_IP, 8);
		inject(f, (unsigned)i % 2, p.b, p.len);
	}
	unsigned got = 0;
	/* up to 20 s: the workers share this machine's CPUs with everything
	 * else it runs (a condition, not a timing assertion) */
	for (int i = 0; i < 20000 && got < 20; i++) {
		got += drain(f, 0) + drain(f, 1);
		rte_delay_us_sleep(1000);
	}
	assert_int_equal(got, 20);

	/* Switching the QSBR while running waits for the workers. */
	assert_int_equal(arn_net_set_rcu(NULL), 0);
	assert_int_equal(arn_net_set_rcu(v), 0);

	arn_net_stop(f->net);
	assert_int_equal(l4.finis, 2);
	assert_true(l4.polls > 0);
	struct stat_sum s = {0};
	assert_int_equal(arn_net_stats_foreach(sum_stat, &s), 0);
	assert_int_equal(s.port_rx, 20);
	assert_int_equal(s.worker_rx, 20);
	assert_true(s.busy >= 2);
	assert_true(s.n > 2 * ARN_NET_PCTR_COUNT);
	assert_int_equal(arn_net_n_workers(f->net), 2);
	assert_int_equal(arn_net_n_ports(f->net), 1);
	assert_string_equal(arn_net_port_name(f->net, 0), "wan");
	/* Workers left the QSBR: a grace period does not wait for them. */
	t = rte_rcu_qsbr_start(v);
	assert_int_equal(rte_rcu_qsbr_check(v, t, false), 1);
	arn_net_set_rcu(NULL);
	rte_free(v);
}

/* A QSBR for lcore ids below @p n only: workers on lcores 1 and 2 cannot
 * all register with it, as with a QSBR sized below RTE_MAX_LCORE. */
static struct rte_rcu_qsbr *small_qsbr(unsigned n)
{
	struct rte_rcu_qsbr *v =
	    rte_zmalloc("qsbr_small", rte_rcu_qsbr_get_memsize(n), RTE_CACHE_LINE_SIZE);
	assert_non_null(v);
	assert_int_equal(rte_rcu_qsbr_init(v, n), 0);
	return v;
}

static void test_worker_that_cannot_register_rcu_is_not_started(void **state)
{
	struct fixture *f = *state;
	/* Lcore 1 (worker 0) can register, lcore 2 (worker 1) cannot. */
	struct rte_rcu_qsbr *v = small_qsbr(2);
	assert_int_equal(arn_net_set_rcu(v), 0);
	assert_int_equal(arn_net_launch(f->net), -EINVAL);
	/* Worker 1 never reached the TCP layer's init (nothing that reads the
	 * configuration ran on it); worker 0 did and was stopped again. */
	assert_int_equal(l4.inits, 1);
	assert_int_equal(l4.finis, 1);
	assert_int_equal(W(f, 0)->running, 0);
	assert_int_equal(W(f, 1)->running, 0);
	/* Both left the QSBR: a grace period does not wait for anyone. */
	uint64_t t = rte_rcu_qsbr_start(v);
	assert_int_equal(rte_rcu_qsbr_check(v, t, false), 1);
	arn_net_set_rcu(NULL);
	drain(f, 0);
	rte_free(v);
}

static void test_running_worker_that_cannot_register_rcu_stops_working(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(arn_net_set_rcu(NULL), 0);
	assert_int_equal(arn_net_launch(f->net), 0);
	drain(f, 0); /* gratuitous ARP */
	struct rte_rcu_qsbr *v = small_qsbr(2);
	/* Worker 1 cannot switch: reported, and it stops all work. */
	assert_int_equal(arn_net_set_rcu(v), -EINVAL);
	assert_int_equal(W(f, 1)->rcu_failed, 1);
	assert_int_equal(W(f, 0)->rcu_failed, 0);
	uint64_t rx_before = wc(f, 1, ARN_NET_W_loop_busy_iterations);
	struct pkt p;
	build_echo(&p, &f->mac, PEER_IP, OUR_IP, 8);
	inject(f, 1, p.b, p.len);
	inject(f, 0, p.b, p.len);
	/* Worker 0 answers its ping; worker 1 receives nothing meanwhile. */
	unsigned got = 0;
	for (int i = 0; i < 2000 && got == 0; i++) {
		got += drain(f, 0);
		rte_delay_us_sleep(1000);
	}
	assert_int_equal(got, 1);
	rte_delay_us_sleep(20000);
	assert_int_equal(drain(f, 1), 0);
	assert_int_equal(rte_ring_count(f->rx[1]), 1);
	assert_int_equal(wc(f, 1, ARN_NET_W_loop_busy_iterations), rx_before);
	/* A switch it can follow puts it back to work. */
	assert_int_equal(arn_net_set_rcu(NULL), 0);
	got = 0;
	for (int i = 0; i < 2000 && got == 0; i++) {
		got += drain(f, 1);
		rte_delay_us_sleep(1000);
	}
	assert_int_equal(got, 1);
	arn_net_stop(f->net);
	rte_free(v);
}

/*
 * net_af_xdp (DPDK 22.11) registers populated mbufs x object size bytes from
 * the pool's first page as its UMEM, and the kernel silently refuses every
 * frame in an mbuf outside it (issue 17: the port's TX stalled under bulk
 * traffic once the pool cycled into those mbufs). Without hugepages,
 * rte_pktmbuf_pool_create keeps each 2,368-byte object within a 4 KiB page,
 * so the pool is 1.7 times that span; the packed pool lib/net makes for
 * net_af_xdp ports is exactly that span.
 */
static void test_af_xdp_pool_is_inside_its_umem(void **state)
{
	(void)state;
	struct rte_mempool *loose =
	    net_pool_create("t_loose", 1023, 0, RTE_MBUF_DEFAULT_BUF_SIZE, 0, false);
	assert_non_null(loose);
	/* what the stall came from (EAL runs with --no-huge here) */
	assert_true(net_pool_outside_umem(loose) > 1023 / 3);
	rte_mempool_free(loose);

	struct rte_mempool *mp =
	    net_pool_create("t_packed", 1023, 32, RTE_MBUF_DEFAULT_BUF_SIZE, 0, true);
	assert_non_null(mp);
	assert_int_equal(mp->populated_size, 1023);
	assert_int_equal(net_pool_outside_umem(mp), 0);
	/* a pktmbuf pool like any other */
	struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
	assert_non_null(m);
	assert_int_equal(rte_pktmbuf_data_room_size(mp), RTE_MBUF_DEFAULT_BUF_SIZE);
	assert_int_equal(rte_pktmbuf_headroom(m), RTE_PKTMBUF_HEADROOM);
	assert_non_null(rte_pktmbuf_append(m, 1514));
	rte_pktmbuf_free(m);
	rte_mempool_free(mp);

	struct arn_dp_port ports[2] = {{.device = "net_af_packet0,iface=a"},
				       {.device = "net_af_xdp0,iface=b"}};
	struct arn_dataplane dp = {.ports = ports, .n_ports = 1};
	assert_false(net_dp_has_af_xdp(&dp));
	dp.n_ports = 2;
	assert_true(net_dp_has_af_xdp(&dp));
}

static void test_create_errors(void **state)
{
	(void)state;
	struct fixture f;
	memset(&f, 0, sizeof(f));
	struct arn_dp_port port = {.name = "x",
				   .device = "net_nosuchdriver0",
				   .ipv4 = OUR_IP,
				   .prefix_len = 24,
				   .mtu = 1500,
				   .rx_descriptors = 256,
				   .tx_descriptors = 256};
	unsigned workers[1] = {1};
	f.dp.control_lcore = -1;
	f.dp.mbuf_data_room = RTE_MBUF_DEFAULT_BUF_SIZE;
	f.dp.mbuf_cache_size = 32;
	f.dp.ports = &port;
	f.dp.n_ports = 1;
	f.dp.worker_lcores = workers;
	f.dp.n_workers = 1;
	f.dp.mbufs_per_socket = 1023;
	errno = 0;
	assert_null(arn_net_create(&f.dp));
	assert_int_equal(errno, ENODEV);
	/* An lcore the EAL does not have. */
	workers[0] = 7;
	port.device = "net_ring_unused";
	assert_null(arn_net_create(&f.dp));
	assert_int_equal(errno, EINVAL);
	/* The control lcore as a worker. */
	workers[0] = 0;
	assert_null(arn_net_create(&f.dp));
	assert_int_equal(errno, EINVAL);
	assert_null(arn_net_current());
}

/* ---- TX templates (arn_net_tcp_output) ------------------------------------------------------ */

/* A TCP segment from port 80 to @p dport with @p len payload bytes, as
 * lib/tcp hands it over (checksum requested, field zero). */
static struct rte_mbuf *tcp_seg(struct fixture *f, uint16_t dport, uint16_t len, uint8_t tag)
{
	struct rte_mbuf *m = segment(f, 0, (uint16_t)(20 + len));
	struct rte_tcp_hdr *th = rte_pktmbuf_mtod(m, struct rte_tcp_hdr *);
	th->src_port = RTE_BE16(80);
	th->dst_port = rte_cpu_to_be_16(dport);
	th->sent_seq = rte_cpu_to_be_32(1000u + tag);
	th->data_off = 5 << 4;
	th->tcp_flags = RTE_TCP_ACK_FLAG;
	for (uint16_t k = 0; k < len; k++)
		((uint8_t *)(th + 1))[k] = (uint8_t)(k * 13 + tag);
	th->cksum = 0;
	m->ol_flags |= RTE_MBUF_F_TX_TCP_CKSUM | RTE_MBUF_F_TX_IPV4;
	m->l4_len = 20;
	return m;
}

/* Learn @p mac for PEER_IP (a request for us from it), or learn it anew. */
static void peer_says(struct fixture *f, const struct rte_ether_addr *mac)
{
	static const struct rte_ether_addr bc = {{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}};
	struct pkt p;
	build_arp(&p, &bc, RTE_ARP_OP_REQUEST, mac, PEER_IP, OUR_IP);
	inject(f, 0, p.b, p.len);
	run(f, 0);
	drain(f, 0);
}

/* The next frame sent (after a flush), or a failed test. */
static struct rte_mbuf *next_sent(struct fixture *f)
{
	run(f, 0);
	struct rte_mbuf *m = sent(f, 0);
	assert_non_null(m);
	return m;
}

/* A template's frames are the frames arn_net_ip4_output_tos builds, byte
 * for byte but the IPv4 id and checksum (the id counts per worker), with
 * right checksums at every length and TOS, and the same offload requests
 * and header fields when the port offers offloads: both, either one
 * alone (each sum in software or asked of the NIC on its own), or none. */
static void test_tcp_template_frames_as_ip4_output(void **state)
{
	struct fixture *f = *state;
	struct arn_lcore *lc = W(f, 0);
	peer_says(f, &peer_mac);
	struct net_port *np = &f->net->port[0];
	const uint64_t req = RTE_MBUF_F_TX_TCP_CKSUM | RTE_MBUF_F_TX_IP_CKSUM | RTE_MBUF_F_TX_IPV4;
	static const uint16_t lens[] = {0, 1, 2, 3, 31, 64, 65, 999, 1460};
	for (int offl = 0; offl < 4; offl++) {
		np->tx_tcp_cksum = offl & 1;
		np->tx_ip_cksum = offl >> 1;
		struct arn_net_tmpl t;
		memset(&t, 0, sizeof(t));
		/* the first segment builds the template */
		assert_int_equal(
		    arn_net_tcp_output(lc, tcp_seg(f, 40000, 5, 0), &t, OUR_IP, PEER_IP, 0), 0);
		rte_pktmbuf_free(next_sent(f));
		assert_int_not_equal(t.until, 0);
		for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
			for (uint8_t tos = 0; tos < 4; tos++) {
				uint64_t ip4_tx = pc(f, ARN_NET_P_ip4_tx);
				assert_int_equal(
				    arn_net_ip4_output_tos(lc, tcp_seg(f, 40000, lens[i], tos),
							   OUR_IP, PEER_IP, IPPROTO_TCP, tos),
				    0);
				struct rte_mbuf *a = next_sent(f);
				assert_int_equal(arn_net_tcp_output(lc,
								    tcp_seg(f, 40000, lens[i], tos),
								    &t, OUR_IP, PEER_IP, tos),
						 0);
				struct rte_mbuf *b = next_sent(f);
				assert_int_equal(pc(f, ARN_NET_P_ip4_tx), ip4_tx + 2);
				assert_int_equal(a->pkt_len, b->pkt_len);
				assert_int_equal(a->nb_segs, 1);
				assert_int_equal(b->nb_segs, 1);
				assert_int_equal(a->ol_flags & req, b->ol_flags & req);
				assert_int_equal(a->l2_len, b->l2_len);
				assert_int_equal(a->l3_len, b->l3_len);
				assert_int_equal(a->l4_len, b->l4_len);
				uint8_t *pa = rte_pktmbuf_mtod(a, uint8_t *);
				uint8_t *pb = rte_pktmbuf_mtod(b, uint8_t *);
				struct rte_ipv4_hdr *ia = (struct rte_ipv4_hdr *)(pa + 14);
				struct rte_ipv4_hdr *ib = (struct rte_ipv4_hdr *)(pb + 14);
				assert_int_equal(rte_be_to_cpu_16(ib->packet_id),
						 (uint16_t)(rte_be_to_cpu_16(ia->packet_id) + 1));
				if (np->tx_ip_cksum)
					assert_int_equal(ib->hdr_checksum, 0);
				else
					assert_int_equal(rte_raw_cksum(ib, 20), 0xffff);
				if (np->tx_tcp_cksum)
					assert_int_equal(
					    ((struct rte_tcp_hdr *)(ib + 1))->cksum,
					    rte_ipv4_phdr_cksum(ib, RTE_MBUF_F_TX_IPV4 |
									RTE_MBUF_F_TX_TCP_CKSUM));
				else
					assert_int_equal(rte_ipv4_udptcp_cksum_verify(ib, ib + 1),
							 0);
				ia->packet_id = ib->packet_id = 0;
				ia->hdr_checksum = ib->hdr_checksum = 0;
				assert_memory_equal(pa, pb, a->pkt_len);
				rte_pktmbuf_free(a);
				rte_pktmbuf_free(b);
			}
		}
	}
	np->tx_tcp_cksum = np->tx_ip_cksum = false;
	/* Larger than the MTU: refused as arn_net_ip4_output refuses it. */
	struct arn_net_tmpl t;
	memset(&t, 0, sizeof(t));
	assert_int_equal(arn_net_tcp_output(lc, tcp_seg(f, 40000, 0, 0), &t, OUR_IP, PEER_IP, 0),
			 0);
	rte_pktmbuf_free(next_sent(f));
	assert_int_not_equal(t.until, 0);
	assert_int_equal(arn_net_tcp_output(lc, tcp_seg(f, 40000, 1461, 0), &t, OUR_IP, PEER_IP, 0),
			 -EMSGSIZE);
	assert_int_equal(pc(f, ARN_NET_P_ip4_tx_drop_too_big), 1);
	/* A segment in an mbuf chain: summed across its links. */
	struct rte_mbuf *m = tcp_seg(f, 40000, 7, 1);
	struct rte_mbuf *n = arn_net_alloc(lc);
	assert_non_null(n);
	uint8_t *q = (uint8_t *)rte_pktmbuf_append(n, 13);
	for (unsigned k = 0; k < 13; k++)
		q[k] = (uint8_t)(k * 53 + 1);
	assert_int_equal(rte_pktmbuf_chain(m, n), 0);
	assert_int_equal(arn_net_tcp_output(lc, m, &t, OUR_IP, PEER_IP, 0), 0);
	m = next_sent(f);
	assert_int_equal(rte_pktmbuf_linearize(m), 0);
	struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, 14);
	assert_int_equal(rte_be_to_cpu_16(ip->total_length), 20 + 20 + 20);
	assert_int_equal(rte_ipv4_udptcp_cksum_verify(ip, ip + 1), 0);
	rte_pktmbuf_free(m);
}

/* The next hop's MAC changes in the middle of a connection: the next
 * segment carries the new one (the worker's neighbour generation makes
 * the template stale), and later ones too. */
static void test_tcp_template_follows_new_mac(void **state)
{
	struct fixture *f = *state;
	struct arn_lcore *lc = W(f, 0);
	static const struct rte_ether_addr moved = {{0x02, 0, 0, 0, 0, 0x42}};
	peer_says(f, &peer_mac);
	struct arn_net_tmpl t;
	memset(&t, 0, sizeof(t));
	for (int i = 0; i < 3; i++) {
		assert_int_equal(
		    arn_net_tcp_output(lc, tcp_seg(f, 40000, 10, 0), &t, OUR_IP, PEER_IP, 0), 0);
		struct rte_mbuf *m = next_sent(f);
		struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
		assert_true(rte_is_same_ether_addr(&eth->dst_addr, &peer_mac));
		rte_pktmbuf_free(m);
	}
	uint32_t gen = t.gen;
	assert_int_equal(gen, lc->nh_gen);
	/* the same MAC again (a refresh) leaves templates as they are */
	peer_says(f, &peer_mac);
	assert_int_equal(lc->nh_gen, gen);
	peer_says(f, &moved);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(
		    arn_net_tcp_output(lc, tcp_seg(f, 40000, 10, 0), &t, OUR_IP, PEER_IP, 0), 0);
		struct rte_mbuf *m = next_sent(f);
		struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
		assert_true(rte_is_same_ether_addr(&eth->dst_addr, &moved));
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
		assert_int_equal(rte_ipv4_udptcp_cksum_verify(ip, ip + 1), 0);
		rte_pktmbuf_free(m);
	}
	assert_int_equal(t.gen, lc->nh_gen);
	assert_int_not_equal(t.gen, gen);
}

/* A template lives only as long as its entry is REACHABLE: past that the
 * segment goes the general way, which asks the neighbour again (as
 * test_arp_stale_entry_used_while_refreshed); and when the neighbour never
 * answers and its entry goes, segments wait for ARP again instead of
 * leaving for a MAC nobody vouches for. */
static void test_tcp_template_expires_with_its_entry(void **state)
{
	struct fixture *f = *state;
	struct arn_lcore *lc = W(f, 0);
	uint64_t hz = rte_get_tsc_hz();
	net_arp_timing.reachable = hz / 100; /* 10 ms */
	net_arp_timing.retry = hz / 1000;    /* 1 ms */
	net_arp_timing.retries = 2;
	peer_says(f, &peer_mac);
	struct arn_net_tmpl t;
	memset(&t, 0, sizeof(t));
	assert_int_equal(arn_net_tcp_output(lc, tcp_seg(f, 40000, 10, 0), &t, OUR_IP, PEER_IP, 0),
			 0);
	rte_pktmbuf_free(next_sent(f));
	assert_int_not_equal(t.until, 0);
	uint64_t req = pc(f, ARN_NET_P_arp_tx_request);
	rte_delay_us_block(20000);
	lc->now = rte_rdtsc();
	assert_int_equal(arn_net_tcp_output(lc, tcp_seg(f, 40000, 10, 1), &t, OUR_IP, PEER_IP, 0),
			 0);
	run(f, 0);
	/* sent with the old MAC, and the neighbour asked again */
	assert_int_equal(pc(f, ARN_NET_P_arp_tx_request), req + 1);
	assert_int_equal(drain(f, 0), 2);
	/* no answer: the entry goes after its retries */
	for (int i = 0; i < 10 && net_arp_lookup(lc, PEER_IP, NULL); i++) {
		rte_delay_us_block(2000);
		run(f, 0);
	}
	assert_false(net_arp_lookup(lc, PEER_IP, NULL));
	drain(f, 0);
	assert_int_equal(arn_net_tcp_output(lc, tcp_seg(f, 40000, 10, 2), &t, OUR_IP, PEER_IP, 0),
			 0);
	run(f, 0);
	/* waiting for an answer, not sent: only the ARP request leaves */
	assert_int_equal(net_arp_n_waiting(lc), 1);
	struct rte_mbuf *m = sent(f, 0);
	assert_non_null(m);
	assert_int_equal(rte_pktmbuf_mtod(m, struct rte_ether_hdr *)->ether_type,
			 RTE_BE16(RTE_ETHER_TYPE_ARP));
	rte_pktmbuf_free(m);
	assert_null(sent(f, 0));
	assert_int_equal(t.until, 0);
}

int main(void)
{
	char *argv[] = {"test_net", "--no-huge",   "--no-pci",	  "--no-shconf",   "-m", "128",
			"--lcores", "0@0,1@0,2@0", "--log-level", "lib.eal:error", NULL};
	int argc = (int)(sizeof(argv) / sizeof(argv[0])) - 1;
	arn_log_set_spec("error", NULL);
	if (rte_eal_init(argc, argv) < 0) {
		fprintf(stderr, "test_net: cannot initialise the EAL\n");
		return 1;
	}
	pool = rte_pktmbuf_pool_create("test_pool", 8191, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, 0);
	if (pool == NULL)
		return 1;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rss_hash_matches_dpdk_softrss),
	    cmocka_unit_test(test_cksum_mbuf_chains),
	    cmocka_unit_test(test_rss_hash_is_symmetric),
	    cmocka_unit_test(test_rss_fanout_prog_gives_the_owner),
	    cmocka_unit_test(test_is_local_every_port_and_none_without_ports),
	    cmocka_unit_test(test_route_longest_prefix_and_gateway),
	    cmocka_unit_test_setup_teardown(test_flow_worker_spreads_and_pick_lport, setup2,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_tcp_to_owner_directly, setup2, teardown),
	    cmocka_unit_test_setup_teardown(test_tcp_handed_to_owner, setup2, teardown),
	    cmocka_unit_test_setup_teardown(test_tcp_handed_only_when_every_check_passes, setup2,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_icmp_unreach_goes_to_flow_owner, setup2, teardown),
	    cmocka_unit_test_setup_teardown(test_arp_shared_with_other_workers, setup2, teardown),
	    cmocka_unit_test_setup_teardown(test_icmp_echo_reply, setup1, teardown),
	    cmocka_unit_test(test_two_ports_each_read_and_flushed),
	    cmocka_unit_test_setup_teardown(test_full_tx_queue_keeps_frames, setup1, teardown),
	    cmocka_unit_test_setup_teardown(test_partly_taken_tx_counts_what_was_sent, setup1,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_rx_ip_checksum_flags_believed, setup1, teardown),
	    cmocka_unit_test_setup_teardown(test_checksum_offload_only_when_advertised, setup1,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_malformed_tcp_counted_and_dropped, setup1,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_malformed_ipv4_counted_and_dropped, setup1,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_every_truncation_dropped, setup1, teardown),
	    cmocka_unit_test_setup_teardown(test_random_ipv4_never_crashes, setup1, teardown),
	    cmocka_unit_test_setup_teardown(test_arp_request_answered_and_sender_learned, setup1,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_arp_resolve_ahead, setup1, teardown),
	    cmocka_unit_test_setup_teardown(test_arp_resolves_queues_and_releases, setup1,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_arp_off_link_uses_gateway, setup1, teardown),
	    cmocka_unit_test_setup_teardown(test_arp_retries_then_gives_up, setup1, teardown),
	    cmocka_unit_test_setup_teardown(test_arp_stale_entry_used_while_refreshed, setup1,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_arp_spoofed_senders_create_no_entries, setup1_wide,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_arp_chosen_senders_cannot_pile_up, setup1_wide,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_arp_flood_cannot_evict_entries_in_use, setup1_wide,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_arp_sharing_leaves_half_the_handoff_ring, setup2,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_gratuitous_arp_at_start, setup1, teardown),
	    cmocka_unit_test_setup_teardown(test_alloc_from_the_loop_cache_is_reset, setup1,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_iteration_that_only_transmits_is_busy, setup1,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_reply_sent_in_the_iteration_that_made_it, setup1,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_usual_tcp_one_per_iteration, setup1, teardown),
	    cmocka_unit_test_setup_teardown(test_usual_tcp_every_mac_byte_compared, setup1,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_ip4_output_completes_tcp_checksum, setup1,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_launch_ctrl_rcu_and_stats, setup2, teardown),
	    cmocka_unit_test_setup_teardown(test_worker_that_cannot_register_rcu_is_not_started,
					    setup2, teardown),
	    cmocka_unit_test_setup_teardown(
		test_running_worker_that_cannot_register_rcu_stops_working, setup2, teardown),
	    cmocka_unit_test(test_create_errors),
	    cmocka_unit_test(test_af_xdp_pool_is_inside_its_umem),
	    cmocka_unit_test_setup_teardown(test_tcp_template_frames_as_ip4_output, setup1,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_tcp_template_follows_new_mac, setup1, teardown),
	    cmocka_unit_test_setup_teardown(test_tcp_template_expires_with_its_entry, setup1,
					    teardown),
	};
	int rc = cmocka_run_group_tests_name("net", tests, NULL, NULL);
	/* Every mbuf the tests and lib/net took came back. */
	if (rc == 0 && rte_mempool_avail_count(pool) != 8191) {
		fprintf(stderr, "test_net: %u mbufs leaked from the test pool\n",
			8191 - rte_mempool_avail_count(pool));
		rc = 1;
	}
	rte_mempool_free(pool);
	rte_eal_cleanup();
	return rc;
}
