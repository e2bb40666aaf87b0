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
