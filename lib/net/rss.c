/*
 * Flow ownership: the symmetric Toeplitz hash of the IPv4/TCP 4-tuple and
 * the logical redirection table that maps it to a worker.
 *
 * Ports with RSS are programmed with net_rss_key and a RETA equal to
 * net->reta, so a NIC's choice of queue and arn_net_flow_worker() agree.
 * Virtual devices (net_tap, net_af_packet) spread packets by the kernel's
 * own hash; there the same function decides, and a packet that lands on
 * another worker is handed to its owner (input.c). Either way there is one
 * answer to "who owns this flow", which the TCP layer also uses to pick
 * source ports for upstream connections.
 *
 * The hash is computed with a per-byte table: 12 lookups per tuple.
 */
#include <pthread.h>
#include <string.h>

#include <linux/filter.h>

#include "net_int.h"

/* 0x6d5a repeated: with a key whose period is 16 bits, Toeplitz gives the
 * same hash when (src, dst) and (sport, dport) are swapped (Woo and Park,
 * "Scalable TCP Session Monitoring with Symmetric Receive-side Scaling"). */
const uint8_t net_rss_key[40] = {
    0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
    0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
    0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
};

/* tbl[i][b]: the hash contribution of input byte i having value b. */
static uint32_t tbl[12][256];
static pthread_once_t tbl_once = PTHREAD_ONCE_INIT;

/* The 32 key bits starting at bit @p pos (big-endian bit order). */
static uint32_t key_window(const uint8_t *key, unsigned pos)
{
	uint64_t w = 0;
	unsigned byte = pos / 8, shift = pos % 8;
	for (unsigned i = 0; i < 5; i++)
		w = (w << 8) | (byte + i < 40 ? key[byte + i] : 0);
	return (uint32_t)(w >> (8 - shift));
}

static void tbl_build(void)
{
	for (unsigned i = 0; i < 12; i++)
		for (unsigned b = 0; b < 256; b++) {
			uint32_t h = 0;
			for (unsigned j = 0; j < 8; j++)
				if (b & (0x80u >> j))
					h ^= key_window(net_rss_key, i * 8 + j);
			tbl[i][b] = h;
		}
}

void net_rss_init(void)
{
	pthread_once(&tbl_once, tbl_build);
}

uint32_t arn_net_rss_hash(uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport)
{
	/* The NIC hashes the fields in network byte order: src, dst, sport, dport. */
	return tbl[0][src >> 24] ^ tbl[1][(src >> 16) & 0xff] ^ tbl[2][(src >> 8) & 0xff] ^
	       tbl[3][src & 0xff] ^ tbl[4][dst >> 24] ^ tbl[5][(dst >> 16) & 0xff] ^
	       tbl[6][(dst >> 8) & 0xff] ^ tbl[7][dst & 0xff] ^ tbl[8][sport >> 8] ^
	       tbl[9][sport & 0xff] ^ tbl[10][dport >> 8] ^ tbl[11][dport & 0xff];
}

void net_reta_fill(struct arn_net *net, unsigned size)
{
	if (size == 0 || size > NET_RETA_MAX || (size & (size - 1)) != 0)
		size = 128;
	net->reta_mask = size - 1;
	for (unsigned i = 0; i < size; i++)
		net->reta[i] = (uint16_t)(net->n_workers ? i % net->n_workers : 0);
}

/* The program net_rss_fanout_prog writes, in steps:
 *
 * With a key whose period is 16 bits, the window of key bits an input bit
 * at position i XORs in depends only on i mod 16. So Toeplitz over the
 * 96 bits (src, dst, sport, dport) is Toeplitz over the XOR of their six
 * 16-bit words v: the hash is the XOR of window(j) for each bit j of v
 * that is set (j counted from v's top bit). Only the window's bits under
 * reta_mask matter for the owner, and the owner is (hash & reta_mask) %
 * workers when the table is round-robin, which the kernel's own "% members"
 * finishes: the program returns hash & reta_mask.
 *
 * Loads are relative to the network header (SKF_NET_OFF), wherever the
 * frame's data starts when the kernel runs it. An IPv4 frame that is not
 * TCP, or a fragment past the first (the group defragments first, so only
 * a fragment it could not reassemble), is hashed on its addresses alone
 * (ports 0), so that a flood of another protocol still spreads over the
 * workers; a frame that is not IPv4 (ARP) gets the kernel's flow hash.
 * Whoever receives one of those hands it on if it belongs to a flow (ICMP
 * errors), as lib/net does on any port. */
unsigned net_rss_fanout_prog(const struct arn_net *net, struct sock_filter *prog, unsigned cap)
{
	unsigned n = net->n_workers;
	if (n == 0 || net->reta_mask >= NET_RETA_MAX)
		return 0;
	for (unsigned i = 0; i <= net->reta_mask; i++)
		if (net->reta[i] != i % n)
			return 0; /* not round-robin: no "% members" gives it */
	net_rss_init();
	const int32_t NET = SKF_NET_OFF;
	struct sock_filter head[] = {
	    /* 0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (uint32_t)(SKF_AD_OFF + SKF_AD_PROTOCOL)),
	    /* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x0800, 0, 0), /* jf: other, below */
	    /* 2: M[0] = src ^ dst */
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (uint32_t)(NET + 12)),
	    BPF_STMT(BPF_ST, 0),
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (uint32_t)(NET + 16)),
	    BPF_STMT(BPF_LDX | BPF_W | BPF_MEM, 0),
	    BPF_STMT(BPF_ALU | BPF_XOR | BPF_X, 0),
	    BPF_STMT(BPF_ST, 0),
	    /* 8: not TCP, or a fragment past the first: the addresses alone */
	    BPF_STMT(BPF_LD | BPF_B | BPF_ABS, (uint32_t)(NET + 9)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 6, 0, 7),
	    BPF_STMT(BPF_LD | BPF_H | BPF_ABS, (uint32_t)(NET + 6)),
	    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x1fff, 5, 0),
	    /* 12: ^ (sport << 16 | dport), the TCP header after the IPv4 one's IHL */
	    BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, (uint32_t)NET),
	    BPF_STMT(BPF_LD | BPF_W | BPF_IND, (uint32_t)NET),
	    BPF_STMT(BPF_LDX | BPF_W | BPF_MEM, 0),
	    BPF_STMT(BPF_ALU | BPF_XOR | BPF_X, 0),
	    BPF_STMT(BPF_ST, 0),
	    /* 17: v in the low 16 bits: the high half folded onto the low */
	    BPF_STMT(BPF_LD | BPF_MEM, 0),
	    BPF_STMT(BPF_MISC | BPF_TAX, 0),
	    BPF_STMT(BPF_ALU | BPF_RSH | BPF_K, 16),
	    BPF_STMT(BPF_ALU | BPF_XOR | BPF_X, 0),
	    BPF_STMT(BPF_ST, 0),
	    /* M[1]: the hash's bits under the mask */
	    BPF_STMT(BPF_LD | BPF_IMM, 0),
	    BPF_STMT(BPF_ST, 1),
	};
	unsigned len = RTE_DIM(head);
	/* 16 bits of 5 instructions, the result's 2, the other frames' 2 */
	_Static_assert(RTE_DIM(head) + 16 * 5 + 4 == NET_RSS_FANOUT_PROG_MAX, "the bound");
	if (cap < NET_RSS_FANOUT_PROG_MAX)
		return 0;
	memcpy(prog, head, sizeof(head));
	for (unsigned j = 0; j < 16; j++) {
		uint32_t w = tbl[0][0x80u >> j] & net->reta_mask; /* window(j), j < 8 */
		if (j >= 8)
			w = tbl[1][0x80u >> (j - 8)] & net->reta_mask;
		if (w == 0)
			continue;
		prog[len++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_MEM, 0);
		prog[len++] =
		    (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x8000u >> j, 0, 3);
		prog[len++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_MEM, 1);
		prog[len++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_XOR | BPF_K, w);
		prog[len++] = (struct sock_filter)BPF_STMT(BPF_ST, 1);
	}
	prog[len++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_MEM, 1);
	prog[len++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_A, 0);
	unsigned other = len;
	prog[len++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						   (uint32_t)(SKF_AD_OFF + SKF_AD_RXHASH));
	prog[len++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_A, 0);
	prog[1].jf = (uint8_t)(other - 2); /* from the next instruction */
	return len;
}

unsigned arn_net_flow_worker(const struct arn_lcore *lc, uint32_t local, uint32_t remote,
			     uint16_t lport, uint16_t rport)
{
	const struct arn_net *net = lc->net;
	if (net->n_workers <= 1)
		return 0;
	return net->reta[arn_net_rss_hash(remote, local, rport, lport) & net->reta_mask];
}

uint16_t arn_net_flow_pick_lport(const struct arn_lcore *lc, uint32_t local, uint32_t remote,
				 uint16_t rport, uint16_t lo, uint16_t hi, uint16_t start)
{
	if (lo == 0)
		lo = 1;
	if (hi < lo)
		return 0;
	if (start < lo || start > hi)
		start = lo;
	unsigned span = (unsigned)hi - lo + 1;
	for (unsigned i = 0; i < span; i++) {
		uint16_t p = (uint16_t)(lo + (start - lo + i) % span);
		if (arn_net_flow_worker(lc, local, remote, p, rport) == lc->index)
			return p;
	}
	return 0;
}

unsigned arn_net_worker_index(const struct arn_lcore *lc)
{
	return lc->index;
}

unsigned arn_net_worker_count(const struct arn_lcore *lc)
{
	return lc->n_workers;
}
