/*
 * ARP (RFC 826) for one worker: answering for our addresses, and a cache of
 * next hops with the packets waiting for them.
 *
 * Each worker has its own cache (share-nothing, no locks). An ARP packet
 * that can teach something arrives at one worker only (the NIC or kernel
 * picks the queue), so that worker passes a reference to every other
 * worker's hand-off ring, and they learn from it too.
 *
 * States, as in Linux's neighbour table but simpler:
 *
 *   INCOMPLETE  request sent; packets wait, as many as Linux lets wait for
 *               a neighbour (unres_qlen_bytes: 212,992 bytes counted as
 *               whole mbufs, about 97 packets), the oldest dropped first
 *               past that, and at most ARP_WAITING_MAX mbufs per worker;
 *               requests are repeated every `retry` up to `retries` times,
 *               then the entry and its packets are dropped (counted).
 *   REACHABLE   answer younger than `reachable`: used as is.
 *   PROBE       older than that: still used, and a request is sent to
 *               refresh it; no answer after `retries` tries removes it.
 *
 * The cache is an open-addressed table (linear probing, backward-shift
 * deletion) of fixed size, allocated at start: no malloc after that.
 *
 * TCP segments mostly skip the lookup: each connection copies its next
 * hop's MAC into a header template (output.c) while the entry is
 * REACHABLE, and uses it until the entry's deadline (then its segments
 * take net_arp_output again, which asks the neighbour). Within that time
 * only an answer with another MAC can make a template wrong: it bumps the
 * worker's nh_gen, and templates of an older generation are built again.
 * Nothing removes the entry meanwhile: the timer removes only entries
 * that are resolving, and eviction only those idle for `reachable`,
 * which building a template prevents (it counts as a use, and a
 * template lives at most `reachable` from the entry's last answer).
 *
 * What may create an entry, as Linux's arp_process() with arp_accept=0:
 * our own need for a next hop (net_arp_output), and a request for one of
 * our addresses (its sender is about to talk to us). Replies, gratuitous
 * ARP and requests for other hosts only update an entry that exists (an
 * INCOMPLETE one is how we "asked"), so spoofed on-link traffic cannot fill
 * the table (arp_rx_ignored counts what taught nothing).
 *
 * When the table is full (ARP_MAX_USED), a request for us is simply not
 * learned (arp_learn_refused: we answer it anyway), and a next hop we need
 * takes the slot of the least recently used entry that is idle: resolved,
 * not being refreshed, and not used to send for `reachable`. Entries that
 * are resolving or in use are never evicted, so a flood of requests from
 * spoofed on-link senders, or of SYNs that make us answer them, cannot push
 * out the gateway or a peer we talk to; when nothing is idle the new next
 * hop is refused (arp_drop_table_full) instead.
 */
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_ether.h>
#include <rte_arp.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "net_int.h"
#include "tx.h"
#include "arp.h"

#define ARP_SLOTS 1024u			 /* power of 2 */
#define ARP_MAX_USED NET_ARP_MAX_ENTRIES /* 75% load */
/* Bytes (whole mbufs: buf_len) waiting per next hop: Linux's default
 * unres_qlen_bytes (SK_WMEM_MAX). A burst of new connections to endpoints
 * never contacted before (an EDS update) waits here for one ARP answer. */
#define ARP_UNRES_QLEN_BYTES 212992u
#define ARP_WAITING_MAX 1024u /* mbufs waiting per worker: the pool's share */
#define ARP_FRAME_LEN 60u     /* minimum Ethernet frame without FCS */

enum arp_state {
	ARP_FREE = 0,
	ARP_INCOMPLETE,
	ARP_REACHABLE,
	ARP_PROBE,
};

struct arp_entry {
	uint32_t ip; /* host byte order */
	uint8_t state;
	uint8_t port;
	uint8_t tries; /* requests sent in this INCOMPLETE / PROBE phase */
	uint16_t n_pending;
	struct rte_ether_addr mac;
	uint32_t pending_bytes; /* buf_len of what waits */
	uint64_t deadline;	/* INCOMPLETE/PROBE: next retry; REACHABLE: until */
	uint64_t last_used;	/* TSC of the last packet sent through it; 0: never */
	uint64_t resolved_at;	/* TSC of the answer that ended INCOMPLETE; 0: none */
	uint32_t drops;		/* packets for it dropped from a full queue (its life) */
	/* packets waiting, oldest first, linked through m->next (each frame
	 * is one segment: lib/net's output contract) */
	struct rte_mbuf *pending, *pending_tail;
};

struct arn_arp {
	struct net_arp_head h; /* first: net_arp_poll() reads it there */
	unsigned used;	       /* entries not FREE */
	unsigned waiting;      /* packets in pending[] of all entries */
	uint16_t tab[4][256];  /* home()'s random tables, one per byte of an address */
	struct arp_entry e[ARP_SLOTS];
};

struct net_arp_timing net_arp_timing;

struct arn_arp *net_arp_create(unsigned socket)
{
	struct arn_arp *a =
	    rte_zmalloc_socket("arn_arp", sizeof(struct arn_arp), RTE_CACHE_LINE_SIZE, (int)socket);
	if (a == NULL)
		return NULL;
	if (getrandom(a->tab, sizeof(a->tab), 0) != (ssize_t)sizeof(a->tab)) {
		/* never expected; the TSC still differs per worker and start */
		uint64_t x = rte_rdtsc() | 1;
		for (unsigned i = 0; i < 4; i++)
			for (unsigned j = 0; j < 256; j++) {
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				a->tab[i][j] = (uint16_t)x;
			}
	}
	return a;
}

void net_arp_free(struct arn_arp *arp)
{
	rte_free(arp);
}

/* Keyed: a host on the link chooses its sender address within our
 * subnet, and with the unkeyed multiplicative hash the table had, anyone
 * could pick 768 addresses whose slots lie together. Linear probing then
 * made them one run, and every lookup that hashed into it (each ARP packet
 * from such a sender, each packet to such a next hop) read hundreds of
 * slots. Simple tabulation (one random table per byte of the address,
 * XORed), since linear probing needs more than a universal hash:
 * Patrascu and Thorup proved tabulation keeps its probes O(1) expected,
 * while a keyed multiply-shift still made runs of tens of slots for some
 * keys out of such a chosen set. */
static inline unsigned home(const struct arn_arp *a, uint32_t ip)
{
	return (a->tab[0][ip & 0xff] ^ a->tab[1][(ip >> 8) & 0xff] ^ a->tab[2][(ip >> 16) & 0xff] ^
		a->tab[3][ip >> 24]) &
	       (ARP_SLOTS - 1);
}

static struct arp_entry *find(struct arn_arp *a, uint32_t ip)
{
	for (unsigned i = home(a, ip), n = 0; n < ARP_SLOTS; i = (i + 1) & (ARP_SLOTS - 1), n++) {
		if (a->e[i].state == ARP_FREE)
			return NULL;
		if (a->e[i].ip == ip)
			return &a->e[i];
	}
	return NULL;
}

static void set_state(struct arn_arp *a, struct arp_entry *e, enum arp_state s)
{
	bool was = e->state == ARP_INCOMPLETE || e->state == ARP_PROBE;
	bool is = s == ARP_INCOMPLETE || s == ARP_PROBE;
	a->h.resolving += (unsigned)is - (unsigned)was;
	e->state = (uint8_t)s;
}

/* Remove @p e (its pending packets must be gone) keeping probe chains intact. */
static void erase(struct arn_arp *a, struct arp_entry *e)
{
	set_state(a, e, ARP_REACHABLE); /* not resolving any more */
	unsigned i = (unsigned)(e - a->e);
	for (unsigned j = (i + 1) & (ARP_SLOTS - 1); a->e[j].state != ARP_FREE;
	     j = (j + 1) & (ARP_SLOTS - 1)) {
		unsigned k = home(a, a->e[j].ip);
		/* Move e[j] into the hole at i unless its home lies in (i, j]. */
		bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
		if (!stays) {
			a->e[i] = a->e[j];
			i = j;
		}
	}
	memset(&a->e[i], 0, sizeof(a->e[i]));
	a->used--;
}

/* An entry that may make room for another: resolved (nothing waits on it,
 * no request is out) and not used to send for `reachable`. */
static bool idle(const struct arp_entry *e, uint64_t now)
{
	return e->state == ARP_REACHABLE &&
	       (e->last_used == 0 || now - e->last_used >= net_arp_timing.reachable);
}

/*
 * A new entry for @p ip (state REACHABLE until the caller sets it). When the
 * table is full: NULL unless @p evict, which frees the least recently used
 * idle entry (counted as arp_evicted), or NULL if none is idle.
 */
static struct arp_entry *insert(struct arn_lcore *lc, uint32_t ip, bool evict)
{
	struct arn_arp *a = lc->arp;
	if (a->used >= ARP_MAX_USED) {
		if (!evict)
			return NULL;
		struct arp_entry *victim = NULL;
		for (unsigned i = 0; i < ARP_SLOTS; i++) {
			struct arp_entry *e = &a->e[i];
			if (idle(e, lc->now) &&
			    (!victim || e->last_used < victim->last_used ||
			     (e->last_used == victim->last_used && e->deadline < victim->deadline)))
				victim = e;
		}
		if (victim == NULL)
			return NULL;
		ARN_NET_PINC(lc, victim->port, arp_evicted);
		erase(a, victim);
	}
	unsigned i = home(a, ip);
	while (a->e[i].state != ARP_FREE)
		i = (i + 1) & (ARP_SLOTS - 1);
	struct arp_entry *e = &a->e[i];
	memset(e, 0, sizeof(*e));
	e->ip = ip;
	e->state = ARP_REACHABLE; /* callers set the real state via set_state */
	a->used++;
	return e;
}

/* Build and queue an ARP packet on @p port. */
static void arp_send(struct arn_lcore *lc, uint16_t port, uint16_t op,
		     const struct rte_ether_addr *eth_dst, const struct rte_ether_addr *tha,
		     uint32_t tip, uint32_t sip)
{
	struct rte_mbuf *m = arn_net_alloc(lc);
	if (m == NULL)
		return;
	char *p = rte_pktmbuf_append(m, ARP_FRAME_LEN);
	if (p == NULL) {
		rte_pktmbuf_free(m);
		return;
	}
	memset(p, 0, ARP_FRAME_LEN);
	const struct rte_ether_addr *mac = &lc->net->port[port].mac;
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)p;
	rte_ether_addr_copy(eth_dst, &eth->dst_addr);
	rte_ether_addr_copy(mac, &eth->src_addr);
	eth->ether_type = RTE_BE16(RTE_ETHER_TYPE_ARP);
	struct rte_arp_hdr *arp = (struct rte_arp_hdr *)(eth + 1);
	arp->arp_hardware = RTE_BE16(RTE_ARP_HRD_ETHER);
	arp->arp_protocol = RTE_BE16(RTE_ETHER_TYPE_IPV4);
	arp->arp_hlen = RTE_ETHER_ADDR_LEN;
	arp->arp_plen = 4;
	arp->arp_opcode = rte_cpu_to_be_16(op);
	rte_ether_addr_copy(mac, &arp->arp_data.arp_sha);
	arp->arp_data.arp_sip = rte_cpu_to_be_32(sip);
	rte_ether_addr_copy(tha, &arp->arp_data.arp_tha);
	arp->arp_data.arp_tip = rte_cpu_to_be_32(tip);
	if (op == RTE_ARP_OP_REQUEST)
		ARN_NET_PINC(lc, port, arp_tx_request);
	else
		ARN_NET_PINC(lc, port, arp_tx_reply);
	net_tx(lc, port, m);
}

static const struct rte_ether_addr bcast = {{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}};
static const struct rte_ether_addr zero_mac = {{0}};

static void request(struct arn_lcore *lc, struct arp_entry *e)
{
	e->tries++;
	e->deadline = lc->now + net_arp_timing.retry;
	arp_send(lc, e->port, RTE_ARP_OP_REQUEST, &bcast, &zero_mac, e->ip,
		 lc->net->port[e->port].ip);
}

void net_arp_announce(struct arn_lcore *lc, uint16_t port)
{
	uint32_t ip = lc->net->port[port].ip;
	arp_send(lc, port, RTE_ARP_OP_REQUEST, &bcast, &zero_mac, ip, ip);
}

/* Take the oldest packet waiting on @p e. */
static struct rte_mbuf *pending_pop(struct arn_arp *a, struct arp_entry *e)
{
	struct rte_mbuf *m = e->pending;
	if (m == NULL)
		return NULL;
	e->pending = m->next;
	if (e->pending == NULL)
		e->pending_tail = NULL;
	m->next = NULL;
	e->n_pending--;
	e->pending_bytes -= m->buf_len;
	a->waiting--;
	return m;
}

static void drop_pending(struct arn_lcore *lc, struct arp_entry *e)
{
	struct rte_mbuf *m;
	while ((m = pending_pop(lc->arp, e)) != NULL) {
		rte_pktmbuf_free(m);
		ARN_NET_PINC(lc, e->port, arp_drop_unresolved);
	}
}

/* @p e now has a (new) MAC: it is reachable; release what waited. */
static void resolved(struct arn_lcore *lc, struct arp_entry *e, const struct rte_ether_addr *mac)
{
	struct arn_arp *a = lc->arp;
	if (!rte_is_same_ether_addr(mac, &e->mac))
		lc->nh_gen++; /* templates hold the old one */
	rte_ether_addr_copy(mac, &e->mac);
	if (e->state != ARP_REACHABLE)
		ARN_NET_PINC(lc, e->port, arp_resolved);
	if (e->state == ARP_INCOMPLETE)
		e->resolved_at = lc->now; /* what waited leaves now */
	set_state(a, e, ARP_REACHABLE);
	e->tries = 0;
	e->deadline = lc->now + net_arp_timing.reachable;
	struct rte_mbuf *m;
	while ((m = pending_pop(a, e)) != NULL)
		net_eth_output(lc, e->port, &e->mac, m);
}

int net_arp_output(struct arn_lcore *lc, uint16_t port, uint32_t nh, struct rte_mbuf *m)
{
	struct arn_arp *a = lc->arp;
	struct arp_entry *e = find(a, nh);
	if (e != NULL)
		e->last_used = lc->now;
	if (e != NULL && e->state != ARP_INCOMPLETE) {
		if (e->state == ARP_REACHABLE && lc->now >= e->deadline) {
			/* Stale: keep using it while asking again. */
			e->port = (uint8_t)port;
			set_state(a, e, ARP_PROBE);
			e->tries = 0;
			request(lc, e);
		}
		net_eth_output(lc, port, &e->mac, m);
		return 0;
	}
	if (e == NULL) {
		e = insert(lc, nh, true);
		if (e == NULL) {
			ARN_NET_PINC(lc, port, arp_drop_table_full);
			rte_pktmbuf_free(m);
			return -ENOBUFS;
		}
		e->port = (uint8_t)port;
		e->last_used = lc->now;
		set_state(a, e, ARP_INCOMPLETE);
		request(lc, e);
	}
	if (a->waiting >= ARP_WAITING_MAX && e->pending == NULL) {
		/* the worker's share of the pool is spent on other next hops */
		ARN_NET_PINC(lc, port, arp_drop_queue_full);
		e->drops++;
		rte_pktmbuf_free(m);
		return -ENOBUFS;
	}
	/* Full: the oldest goes, as Linux's __neigh_event_send drops from the
	 * head; the newest packet is the one most likely still wanted. */
	while (e->pending != NULL && (e->pending_bytes + m->buf_len > ARP_UNRES_QLEN_BYTES ||
				      a->waiting >= ARP_WAITING_MAX)) {
		ARN_NET_PINC(lc, port, arp_drop_queue_full);
		e->drops++;
		rte_pktmbuf_free(pending_pop(a, e));
	}
	m->next = NULL;
	if (e->pending_tail)
		e->pending_tail->next = m;
	else
		e->pending = m;
	e->pending_tail = m;
	e->n_pending++;
	e->pending_bytes += m->buf_len;
	a->waiting++;
	return 0;
}

int net_arp_tmpl(struct arn_lcore *lc, uint32_t nh, struct rte_ether_addr *mac, uint64_t *until)
{
	struct arp_entry *e = find(lc->arp, nh);
	if (e == NULL || e->state != ARP_REACHABLE || lc->now >= e->deadline)
		return 0;
	e->last_used = lc->now;
	rte_ether_addr_copy(&e->mac, mac);
	*until = e->deadline;
	return 1;
}

void net_arp_resolve(struct arn_lcore *lc, uint16_t port, uint32_t nh)
{
	struct arn_arp *a = lc->arp;
	if (find(a, nh) != NULL)
		return;
	struct arp_entry *e = insert(lc, nh, true);
	if (e == NULL) {
		ARN_NET_PINC(lc, port, arp_drop_table_full);
		return;
	}
	e->port = (uint8_t)port;
	e->last_used = lc->now;
	set_state(a, e, ARP_INCOMPLETE);
	ARN_NET_PINC(lc, port, arp_resolve_ahead);
	request(lc, e);
}

void net_arp_foreach_queue(const struct arn_lcore *lc,
			   void (*fn)(void *ctx, uint32_t nh, unsigned waiting, uint32_t drops),
			   void *ctx)
{
	const struct arn_arp *a = lc->arp;
	for (unsigned i = 0; a != NULL && i < ARP_SLOTS; i++) {
		const struct arp_entry *e = &a->e[i];
		/* read while the worker writes: each field is one aligned
		 * word; a slot being reused may report its old next hop once */
		uint16_t n = __atomic_load_n(&e->n_pending, __ATOMIC_RELAXED);
		uint32_t d = __atomic_load_n(&e->drops, __ATOMIC_RELAXED);
		if (__atomic_load_n(&e->state, __ATOMIC_RELAXED) != ARP_FREE && (n || d))
			fn(ctx, __atomic_load_n(&e->ip, __ATOMIC_RELAXED), n, d);
	}
}

uint64_t net_arp_since(const struct arn_lcore *lc, uint32_t nh)
{
	const struct arp_entry *e = find(lc->arp, nh);
	if (e == NULL)
		return 0;
	return e->state == ARP_INCOMPLETE ? UINT64_MAX : e->resolved_at;
}

void net_arp_timer(struct arn_lcore *lc, uint64_t now)
{
	struct arn_arp *a = lc->arp;
	if (a->h.resolving == 0 || now < a->h.next_scan)
		return;
	/* Retries are a second apart; looking ten times as often is enough. */
	a->h.next_scan = now + net_arp_timing.retry / 10;
	for (unsigned i = 0; i < ARP_SLOTS; i++) {
		struct arp_entry *e = &a->e[i];
		if ((e->state != ARP_INCOMPLETE && e->state != ARP_PROBE) || now < e->deadline)
			continue;
		if (e->tries < net_arp_timing.retries) {
			request(lc, e);
			continue;
		}
		ARN_NET_PINC(lc, e->port, arp_unresolved);
		drop_pending(lc, e);
		erase(a, e);
		i--; /* erase() may have moved a later entry into slot i */
	}
}

void net_arp_flush(struct arn_lcore *lc)
{
	struct arn_arp *a = lc->arp;
	for (unsigned i = 0; i < ARP_SLOTS; i++)
		if (a->e[i].n_pending)
			drop_pending(lc, &a->e[i]);
}

int net_arp_lookup(const struct arn_lcore *lc, uint32_t ip, struct rte_ether_addr *mac)
{
	struct arp_entry *e = find(lc->arp, ip);
	if (e == NULL || e->state == ARP_INCOMPLETE)
		return 0;
	if (mac)
		rte_ether_addr_copy(&e->mac, mac);
	return 1;
}

unsigned net_arp_probes(const struct arn_lcore *lc, uint32_t ip)
{
	const struct arn_arp *a = lc->arp;
	unsigned n = 0;
	for (unsigned i = home(a, ip); n < ARP_SLOTS; i = (i + 1) & (ARP_SLOTS - 1)) {
		n++;
		if (a->e[i].state == ARP_FREE || a->e[i].ip == ip)
			break;
	}
	return n;
}

unsigned net_arp_n_waiting(const struct arn_lcore *lc)
{
	return __atomic_load_n(&lc->arp->waiting, __ATOMIC_RELAXED);
}

unsigned net_arp_n_entries(const struct arn_lcore *lc)
{
	return __atomic_load_n(&lc->arp->used, __ATOMIC_RELAXED);
}

/* Give the other workers a reference to @p m so they learn from it too.
 * Learning is best effort and TCP hand-offs are not: a ring already half
 * full is skipped (arp_share_skipped), so an ARP flood cannot crowd the
 * segments other workers hand over out of it. */
static void share(struct arn_lcore *lc, uint16_t port, struct rte_mbuf *m)
{
	struct arn_net *net = lc->net;
	m->port = port;
	for (unsigned w = 0; w < net->n_workers; w++) {
		if (w == lc->index)
			continue;
		struct rte_ring *r = net->lc[w]->handoff;
		if (rte_ring_count(r) >= rte_ring_get_capacity(r) / 2) {
			ARN_NET_WINC(lc, arp_share_skipped);
			continue;
		}
		rte_mbuf_refcnt_update(m, 1);
		if (rte_ring_mp_enqueue(r, m) != 0) {
			rte_mbuf_refcnt_update(m, -1);
			ARN_NET_WINC(lc, handoff_drop_full);
			continue;
		}
		ARN_NET_WINC(lc, arp_shared_out);
	}
}

void net_arp_input(struct arn_lcore *lc, uint16_t port, struct rte_mbuf *m, bool shared)
{
	const struct net_port *np = &lc->net->port[port];
	if (rte_pktmbuf_data_len(m) < sizeof(struct rte_ether_hdr) + sizeof(struct rte_arp_hdr)) {
		if (!shared)
			ARN_NET_PINC(lc, port, arp_rx_bad);
		rte_pktmbuf_free(m);
		return;
	}
	const struct rte_arp_hdr *arp =
	    rte_pktmbuf_mtod_offset(m, const struct rte_arp_hdr *, sizeof(struct rte_ether_hdr));
	uint16_t op = rte_be_to_cpu_16(arp->arp_opcode);
	struct rte_ether_addr sha = arp->arp_data.arp_sha;
	uint32_t sip = rte_be_to_cpu_32(arp->arp_data.arp_sip);
	uint32_t tip = rte_be_to_cpu_32(arp->arp_data.arp_tip);
	if (arp->arp_hardware != RTE_BE16(RTE_ARP_HRD_ETHER) ||
	    arp->arp_protocol != RTE_BE16(RTE_ETHER_TYPE_IPV4) ||
	    arp->arp_hlen != RTE_ETHER_ADDR_LEN || arp->arp_plen != 4 ||
	    (op != RTE_ARP_OP_REQUEST && op != RTE_ARP_OP_REPLY) ||
	    !rte_is_unicast_ether_addr(&sha)) {
		if (!shared)
			ARN_NET_PINC(lc, port, arp_rx_bad);
		rte_pktmbuf_free(m);
		return;
	}
	if (!shared) {
		if (op == RTE_ARP_OP_REQUEST)
			ARN_NET_PINC(lc, port, arp_rx_request);
		else
			ARN_NET_PINC(lc, port, arp_rx_reply);
	}
	bool for_us = tip == np->ip;
	bool on_link = sip != 0 && sip != np->ip && ((sip ^ np->ip) & np->mask) == 0;

	/* RFC 826 "merge": refresh what we know; add the sender only when it
	 * asks for us (it will want an answer, and we will answer it). Like
	 * Linux (arp_accept=0), a reply, a gratuitous ARP or a request for
	 * another host creates nothing, which keeps a spoofer from filling the
	 * cache; learning never evicts (see the top of the file). */
	if (on_link) {
		struct arp_entry *e = find(lc->arp, sip);
		if (e == NULL && for_us && op == RTE_ARP_OP_REQUEST) {
			e = insert(lc, sip, false);
			if (e == NULL)
				ARN_NET_PINC(lc, port, arp_learn_refused);
		} else if (e == NULL && !shared) {
			ARN_NET_PINC(lc, port, arp_rx_ignored);
		}
		if (e) {
			e->port = (uint8_t)port;
			resolved(lc, e, &sha);
		}
	}
	if (!for_us && !shared)
		ARN_NET_PINC(lc, port, arp_rx_not_ours);
	if (!shared && for_us && op == RTE_ARP_OP_REQUEST)
		arp_send(lc, port, RTE_ARP_OP_REPLY, &sha, &sha, sip, np->ip);
	if (!shared && on_link && lc->n_workers > 1)
		share(lc, port, m);
	rte_pktmbuf_free(m);
}
