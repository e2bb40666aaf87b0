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

#endif
