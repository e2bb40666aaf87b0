/*
 * The runtime objects workers find by name (http_int.h): per cluster,
 * statistics and the circuit breakers' counters; per listener address,
 * listener.<address>.* statistics. The registry on the control lcore holds
 * every object alive, current or not: a removed one lives on while
 * streams, pools, hosts or connections use it, and is freed, with its
 * statistics scope, when its last reference goes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arn_config.h"
#include "http_int.h"

static struct http_cluster_rt **cl_buckets; /* chained by name hash */
static size_t cl_nb, n_clusters;
static struct http_listener_rt **listeners;
static size_t n_listeners, cap_listeners;
static struct http_cluster_rt *crt_reclaim; /* Treiber stacks: any lcore pushes, control pops all */
static struct http_listener_rt *lrt_reclaim;

void http_crt_put(struct http_cluster_rt *c)
{
	if (!c || __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	struct http_cluster_rt *head = __atomic_load_n(&crt_reclaim, __ATOMIC_RELAXED);
	do {
		c->reclaim_next = head;
	} while (!__atomic_compare_exchange_n(&crt_reclaim, &head, c, true, __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
}

void http_lrt_put(struct http_listener_rt *l)
{
	if (!l || __atomic_sub_fetch(&l->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	struct http_listener_rt *head = __atomic_load_n(&lrt_reclaim, __ATOMIC_RELAXED);
	do {
		l->reclaim_next = head;
	} while (!__atomic_compare_exchange_n(&lrt_reclaim, &head, l, true, __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
}

/* A reference unless the object already reached zero (it is then queued
 * for reclaim and must not come back). */
static bool ref_if_live(uint32_t *refs)
{
	uint32_t r = __atomic_load_n(refs, __ATOMIC_RELAXED);
	while (r) {
		if (__atomic_compare_exchange_n(refs, &r, r + 1, true, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return true;
	}
	return false;
}

static bool cl_grow(void)
{
	size_t nb = cl_nb ? cl_nb * 2 : 64;
	struct http_cluster_rt **b = calloc(nb, sizeof(*b));
	if (!b)
		return false;
	for (size_t i = 0; i < cl_nb; i++)
		for (struct http_cluster_rt *c = cl_buckets[i], *next; c; c = next) {
			next = c->next;
			c->next = b[c->hash & (nb - 1)];
			b[c->hash & (nb - 1)] = c;
		}
	free(cl_buckets);
	cl_buckets = b;
	cl_nb = nb;
	return true;
}

struct http_cluster_rt *http_cluster_get(const char *name)
{
	size_t len = strlen(name);
	return http_cluster_getn(name, len, arn_cfg_hash(name, len));
}

struct http_cluster_rt *http_cluster_find(const char *name)
{
	size_t len = strlen(name);
	uint64_t hash = arn_cfg_hash(name, len);
	for (struct http_cluster_rt *c = cl_nb ? cl_buckets[hash & (cl_nb - 1)] : NULL; c;
	     c = c->next)
		if (c->current && c->hash == hash && c->len == len &&
		    memcmp(c->name, name, len) == 0)
			return c;
	return NULL;
}

struct http_cluster_rt *http_cluster_getn(const char *name, size_t len, uint64_t hash)
{
	for (struct http_cluster_rt *c = cl_nb ? cl_buckets[hash & (cl_nb - 1)] : NULL; c;
	     c = c->next)
		if (c->hash == hash && c->len == len && memcmp(c->name, name, len) == 0) {
			if (c->current)
				return c;
			if (ref_if_live(&c->refs)) {
				c->current = true;
				return c;
			}
		}
	if (n_clusters >= cl_nb && !cl_grow())
		return NULL;
	struct http_cluster_rt *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->name = strdup(name);
	c->len = len;
	c->hash = hash;
	c->stats = arn_stats_scope_get(&arn_stats_cluster_schema, ARN_STATS_TAG_CLUSTER, name);
	if (!c->name || !c->stats) {
		free(c->name);
		arn_stats_scope_put(c->stats);
		free(c);
		return NULL;
	}
	c->refs = 1;
	c->current = true;
	c->next = cl_buckets[hash & (cl_nb - 1)];
	cl_buckets[hash & (cl_nb - 1)] = c;
	n_clusters++;
	return c;
}

static void cluster_free(struct http_cluster_rt *c)
{
	for (struct http_cluster_rt **pp = &cl_buckets[c->hash & (cl_nb - 1)]; *pp;
	     pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	n_clusters--;
	arn_stats_scope_put(c->stats);
	free(c->ssl);
	free(c->name);
	free(c);
}

struct http_listener_rt *http_listener_get(uint32_t addr, uint16_t port)
{
	for (size_t i = 0; i < n_listeners; i++) {
		struct http_listener_rt *l = listeners[i];
		if (l->addr != addr || l->port != port)
			continue;
		if (l->current)
			return l;
		if (ref_if_live(&l->refs)) {
			l->current = true;
			return l;
		}
	}
	if (n_listeners == cap_listeners) {
		size_t nc = cap_listeners ? cap_listeners * 2 : 8;
		void *p = realloc(listeners, nc * sizeof(*listeners));
		if (!p)
			return NULL;
		listeners = p;
		cap_listeners = nc;
	}
	struct http_listener_rt *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	char name[48];
	/* Envoy names listener scopes by address with ':' as '_' */
	snprintf(name, sizeof(name), "%u.%u.%u.%u_%u", addr >> 24, (addr >> 16) & 255,
		 (addr >> 8) & 255, addr & 255, port);
	l->addr = addr;
	l->port = port;
	l->stats = arn_stats_scope_get(&arn_stats_listener_schema, ARN_STATS_TAG_LISTENER, name);
	if (!l->stats) {
		free(l);
		return NULL;
	}
	l->refs = 1;
	l->current = true;
	listeners[n_listeners++] = l;
	return l;
}

static void listener_free(struct http_listener_rt *l)
{
	for (size_t i = 0; i < n_listeners; i++)
		if (listeners[i] == l) {
			listeners[i] = listeners[--n_listeners];
			break;
		}
	arn_stats_scope_put(l->stats);
	if (l->pp)
		arn_stats_scope_put(l->pp);
	free(l->ssl);
	free(l);
}

void http_cluster_reclaim(void)
{
	struct http_cluster_rt *c = __atomic_exchange_n(&crt_reclaim, NULL, __ATOMIC_ACQUIRE);
	while (c) {
		struct http_cluster_rt *n = c->reclaim_next;
		cluster_free(c);
		c = n;
	}
	struct http_listener_rt *l = __atomic_exchange_n(&lrt_reclaim, NULL, __ATOMIC_ACQUIRE);
	while (l) {
		struct http_listener_rt *n = l->reclaim_next;
		listener_free(l);
		l = n;
	}
}

void http_cluster_drop_unseen(uint64_t sync_id)
{
	for (size_t i = 0; i < cl_nb; i++)
		for (struct http_cluster_rt *c = cl_buckets[i]; c; c = c->next)
			if (c->current && c->seen != sync_id) {
				c->current = false;
				http_crt_put(c);
			}
}

void http_cluster_forget(const char *name, size_t len, uint64_t hash)
{
	for (struct http_cluster_rt *c = cl_nb ? cl_buckets[hash & (cl_nb - 1)] : NULL; c;
	     c = c->next)
		if (c->current && c->hash == hash && c->len == len &&
		    memcmp(c->name, name, len) == 0) {
			c->current = false;
			http_crt_put(c);
			return;
		}
}

void http_listener_drop_unseen(uint64_t sync_id)
{
	for (size_t i = 0; i < n_listeners; i++) {
		struct http_listener_rt *l = listeners[i];
		if (l->current && l->seen != sync_id) {
			l->current = false;
			http_lrt_put(l);
		}
	}
}

size_t http_cluster_count(void)
{
	return n_clusters;
}

size_t http_listener_count(void)
{
	return n_listeners;
}

void http_cluster_fini(void)
{
	http_cluster_reclaim();
	/* what stopped workers still referenced (pools, streams) goes too */
	for (size_t i = 0; i < cl_nb; i++)
		while (cl_buckets[i])
			cluster_free(cl_buckets[i]);
	free(cl_buckets);
	cl_buckets = NULL;
	cl_nb = 0;
	while (n_listeners)
		listener_free(listeners[0]);
	free(listeners);
	listeners = NULL;
	cap_listeners = 0;
}
