/*
 * A worker's fixed pool of per-stream contexts: the calls and exchanges a
 * filter makes for a request (ext_authz's checks, the ratelimit filter's
 * calls, oauth2's token exchanges). n elements of size bytes, allocated
 * at the worker's start (never on the request path), a free list
 * threaded through each element's `next` pointer (at next_off), a stream
 * holding 1 + its element's index (0: none) in a small integer.
 *
 * Ownership: the pool is its worker's; an element is the stream's from
 * http_ctxpool_get to http_ctxpool_put. Not thread-safe: one worker.
 */
#ifndef ARN_HTTP_CTXPOOL_H
#define ARN_HTTP_CTXPOOL_H

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "arn_stats.h" /* ARN_STATS_MAX_WORKERS */

struct http_ctxpool {
	char *mem;
	void *free;
	size_t size, next_off;
	unsigned n, in_use;
};

static inline void **http_ctxpool_next(const struct http_ctxpool *p, void *x)
{
	return (void **)(void *)((char *)x + p->next_off);
}

/** @return 0, or -ENOMEM (the pool stays empty: every get fails). */
static inline int http_ctxpool_init(struct http_ctxpool *p, unsigned n, size_t size,
				    size_t next_off)
{
	*p = (struct http_ctxpool){.size = size, .next_off = next_off};
	p->mem = calloc(n, size);
	if (!p->mem)
		return -ENOMEM;
	p->n = n;
	for (unsigned i = n; i-- > 0;) {
		void *x = p->mem + (size_t)i * size;
		*http_ctxpool_next(p, x) = p->free;
		p->free = x;
	}
	return 0;
}

static inline void http_ctxpool_fini(struct http_ctxpool *p)
{
	free(p->mem);
	*p = (struct http_ctxpool){0};
}

/** A free element (its contents as its last user left them), or NULL. */
static inline void *http_ctxpool_get(struct http_ctxpool *p)
{
	void *x = p->free;
	if (!x)
		return NULL;
	p->free = *http_ctxpool_next(p, x);
	*http_ctxpool_next(p, x) = NULL;
	p->in_use++;
	return x;
}

static inline void http_ctxpool_put(struct http_ctxpool *p, void *x)
{
	*http_ctxpool_next(p, x) = p->free;
	p->free = x;
	p->in_use--;
}

/** The element a stream's @p id (1 + its index; 0: none) names, or NULL. */
static inline void *http_ctxpool_at(const struct http_ctxpool *p, unsigned id)
{
	return id && id <= p->n ? p->mem + (size_t)(id - 1) * p->size : NULL;
}

/** The id (1 + index) of element @p x. */
static inline unsigned http_ctxpool_id(const struct http_ctxpool *p, const void *x)
{
	return (unsigned)((size_t)((const char *)x - p->mem) / p->size) + 1;
}

/*
 * A filter's pools, one per worker (by its index): the worker's start
 * makes its own, its end frees it. A worker past ARN_STATS_MAX_WORKERS
 * has none, and every get on it fails (its filter counts the overflow).
 */
struct http_ctxpools {
	struct http_ctxpool w[ARN_STATS_MAX_WORKERS];
};

/** Worker @p widx's pool, or NULL. */
static inline struct http_ctxpool *http_ctxpools_of(struct http_ctxpools *ps, unsigned widx)
{
	return widx < ARN_STATS_MAX_WORKERS ? &ps->w[widx] : NULL;
}

/** @return 0 (also for a worker without a pool), or -ENOMEM. */
static inline int http_ctxpools_init(struct http_ctxpools *ps, unsigned widx, unsigned n,
				     size_t size, size_t next_off)
{
	struct http_ctxpool *p = http_ctxpools_of(ps, widx);
	return p ? http_ctxpool_init(p, n, size, next_off) : 0;
}

static inline void http_ctxpools_fini(struct http_ctxpools *ps, unsigned widx)
{
	struct http_ctxpool *p = http_ctxpools_of(ps, widx);
	if (p)
		http_ctxpool_fini(p);
}

static inline unsigned http_ctxpools_in_use(const struct http_ctxpools *ps, unsigned widx)
{
	return widx < ARN_STATS_MAX_WORKERS ? ps->w[widx].in_use : 0;
}

/** Worker @p widx's element @p id (1 + index; 0: none), or NULL. */
static inline void *http_ctxpools_at(const struct http_ctxpools *ps, unsigned widx, unsigned id)
{
	return widx < ARN_STATS_MAX_WORKERS ? http_ctxpool_at(&ps->w[widx], id) : NULL;
}

/** A free element of worker @p widx's pool, or NULL. */
static inline void *http_ctxpools_get(struct http_ctxpools *ps, unsigned widx)
{
	struct http_ctxpool *p = http_ctxpools_of(ps, widx);
	return p ? http_ctxpool_get(p) : NULL;
}

#endif
