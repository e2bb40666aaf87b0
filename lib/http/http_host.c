/*
 * Per-host counters (http_int.h, "Per-host"): the control lcore's registry
 * of hosts by (cluster, address, port), their reference counts and the
 * sums the admin endpoint reads. Workers only add to their own slot and
 * take or drop references.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "arn_log.h"
#include "arn_stats.h"
#include "http_int.h"

static struct http_host **buckets;
static size_t n_buckets, n_hosts;
static struct http_host *reclaim_head; /* Treiber stack: any lcore pushes, control pops */

static uint64_t host_key(uint64_t cluster_hash, uint32_t addr, uint16_t port)
{
	uint64_t h = cluster_hash ^ (((uint64_t)addr << 16 | port) * 0x9e3779b97f4a7c15ull);
	h ^= h >> 29;
	return h;
}

static bool grow(void)
{
	size_t nb = n_buckets ? n_buckets * 2 : 64;
	struct http_host **b = calloc(nb, sizeof(*b));
	if (!b)
		return false;
	for (size_t i = 0; i < n_buckets; i++) {
		struct http_host *h = buckets[i], *next;
		for (; h; h = next) {
			next = h->next;
			h->next = b[h->key & (nb - 1)];
			b[h->key & (nb - 1)] = h;
		}
	}
	free(buckets);
	buckets = b;
	n_buckets = nb;
	return true;
}

/* A reference unless the host already reached zero (then it is queued for
 * reclaim and must not come back). */
static bool ref_if_live(struct http_host *h)
{
	uint32_t r = __atomic_load_n(&h->refs, __ATOMIC_RELAXED);
	while (r) {
		if (__atomic_compare_exchange_n(&h->refs, &r, r + 1, true, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return true;
	}
	return false;
}

struct http_host *http_host_get(struct http_cluster_rt *crt, uint32_t addr, uint16_t port,
				bool *created)
{
	unsigned slots = arn_stats_workers();
	if (created)
		*created = false;
	if (!crt || slots == 0)
		return NULL;
	uint64_t key = host_key(crt->hash, addr, port);
	if (n_buckets)
		for (struct http_host *h = buckets[key & (n_buckets - 1)]; h; h = h->next)
			if (h->crt == crt && h->addr == addr && h->port == port && ref_if_live(h))
				return h;
	if (n_hosts >= n_buckets && !grow())
		return NULL;
	struct http_host *h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	/* one cache line per worker: no two writers ever share a line */
	h->slots = aligned_alloc(64, sizeof(struct http_host_ctr) * slots);
	if (!h->slots) {
		free(h);
		return NULL;
	}
	memset(h->slots, 0, sizeof(struct http_host_ctr) * slots);
	h->n_slots = slots;
	h->crt = crt;
	http_crt_ref(crt); /* the caller's reference (a snapshot's) covers this */
	h->addr = addr;
	h->port = port;
	h->key = key;
	h->refs = 1;
	h->next = buckets[key & (n_buckets - 1)];
	buckets[key & (n_buckets - 1)] = h;
	n_hosts++;
	if (created)
		*created = true;
	return h;
}

void http_host_put(struct http_host *h)
{
	if (!h || __atomic_sub_fetch(&h->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	struct http_host *head = __atomic_load_n(&reclaim_head, __ATOMIC_RELAXED);
	do {
		h->reclaim_next = head;
	} while (!__atomic_compare_exchange_n(&reclaim_head, &head, h, true, __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
}

static void unlink_host(struct http_host *h)
{
	struct http_host **pp = &buckets[h->key & (n_buckets - 1)];
	while (*pp && *pp != h)
		pp = &(*pp)->next;
	if (*pp) {
		*pp = h->next;
		n_hosts--;
	}
}

static void host_free(struct http_host *h)
{
	http_crt_put(h->crt);
	free(h->slots);
	free(h);
}

void http_host_reclaim(void)
{
	struct http_host *h = __atomic_exchange_n(&reclaim_head, NULL, __ATOMIC_ACQUIRE);
	while (h) {
		struct http_host *next = h->reclaim_next;
		unlink_host(h);
		host_free(h);
		h = next;
	}
}

struct http_host *http_host_find(const char *cluster, size_t len, uint32_t addr, uint16_t port)
{
	if (!n_buckets)
		return NULL;
	uint64_t key = host_key(arn_cfg_hash(cluster, len), addr, port);
	for (struct http_host *h = buckets[key & (n_buckets - 1)]; h; h = h->next)
		if (h->addr == addr && h->port == port && h->crt->len == len &&
		    memcmp(h->crt->name, cluster, len) == 0 &&
		    __atomic_load_n(&h->refs, __ATOMIC_RELAXED))
			return h;
	return NULL;
}

void http_host_sum(const struct http_host *h, struct http_host_ctr *out)
{
	memset(out, 0, sizeof(*out));
	for (unsigned i = 0; i < h->n_slots; i++) {
		const struct http_host_ctr *s = &h->slots[i];
#define SUM(f) out->f += __atomic_load_n(&s->f, __ATOMIC_RELAXED)
		SUM(cx_total);
		SUM(cx_connect_fail);
		SUM(rq_total);
		SUM(rq_success);
		SUM(rq_error);
		SUM(rq_timeout);
		SUM(cx_active);
		SUM(rq_active);
#undef SUM
	}
}

void http_host_foreach(void (*fn)(void *ctx, struct http_host *h), void *ctx)
{
	for (size_t i = 0; i < n_buckets; i++)
		for (struct http_host *h = buckets[i]; h; h = h->next)
			if (__atomic_load_n(&h->refs, __ATOMIC_RELAXED))
				fn(ctx, h);
}

size_t http_host_count(void)
{
	return n_hosts;
}

void http_host_fini(void)
{
	/* workers are stopped: whatever they still referenced goes too */
	__atomic_store_n(&reclaim_head, NULL, __ATOMIC_RELAXED);
	for (size_t i = 0; i < n_buckets; i++) {
		struct http_host *h = buckets[i], *next;
		for (; h; h = next) {
			next = h->next;
			host_free(h);
		}
	}
	free(buckets);
	buckets = NULL;
	n_buckets = n_hosts = 0;
}
