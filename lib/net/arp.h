/*
 * A worker's ARP timer, the part its loop asks every iteration:
 * net_arp_timer (arp.c) and net_arp_poll, its inline front. Beside arp.c
 * rather than in net_int.h, which every file of lib/net includes: an
 * inline there calling into arp.c made the header depend on that file and
 * that file on it (one circle).
 */
#ifndef ARN_NET_ARP_H
#define ARN_NET_ARP_H

#include <stdint.h>

#include "net_int.h"

/* Retries and expiry; cheap when nothing is due. */
void net_arp_timer(struct arn_lcore *lc, uint64_t now);
/* The start of a worker's ARP cache (struct arn_arp, arp.c): whether a scan
 * is due, read by the worker loop every iteration without a call. */
struct net_arp_head {
	unsigned resolving; /* entries INCOMPLETE or PROBE */
	uint64_t next_scan; /* TSC of the next scan while resolving */
};
/* net_arp_timer() when it has work: nearly every iteration of a worker
 * resolves nothing, and then two loads replace a call. */
static inline void net_arp_poll(struct arn_lcore *lc, uint64_t now)
{
	const struct net_arp_head *h = (const struct net_arp_head *)(const void *)lc->arp;
	if (unlikely(h->resolving != 0) && now >= h->next_scan)
		net_arp_timer(lc, now);
}

#endif
