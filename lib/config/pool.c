/*
 * Memory pools: every configuration object's memory, freed as a whole.
 * An object and all its parts (filter chains, routes, strings) come from
 * one pool, so dropping the object is one arn_pool_free() and nothing can
 * dangle inside it. Control lcore only.
 */
#include "pool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct chunk {
	struct chunk *next;
	size_t size, used;
	_Alignas(16) unsigned char data[];
};

struct cleanup {
	struct cleanup *next;
	void (*fn)(void *);
	void *arg;
};

struct arn_pool {
	struct chunk *head;
	struct cleanup *cleanups;
	size_t next_size;
	size_t bytes;
	bool failed;
};

struct arn_pool *arn_pool_new(size_t first)
{
	struct arn_pool *p = calloc(1, sizeof(*p));
	if (p)
		p->next_size = first < 64 ? 64 : first;
	return p;
}

void *arn_pool_alloc(struct arn_pool *p, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	if (n == 0)
		n = 16;
	struct chunk *c = p->head;
	if (!c || c->size - c->used < n) {
		size_t sz = p->next_size;
		while (sz < n)
			sz *= 2;
		c = malloc(sizeof(*c) + sz);
		if (!c) {
			p->failed = true;
			return NULL;
		}
		c->size = sz;
		c->used = 0;
		c->next = p->head;
		p->head = c;
		p->bytes += sizeof(*c) + sz;
		if (p->next_size < 64 * 1024)
			p->next_size *= 2;
	}
	void *r = c->data + c->used;
	c->used += n;
	memset(r, 0, n);
	return r;
}

char *arn_pool_strndup(struct arn_pool *p, const char *s, size_t n)
{
	char *r = arn_pool_alloc(p, n + 1);
	if (r && n)
		memcpy(r, s, n);
	return r;
}

int arn_pool_on_free(struct arn_pool *p, void (*fn)(void *), void *arg)
{
	struct cleanup *c = malloc(sizeof(*c));
	if (!c) {
		p->failed = true;
		fn(arg);
		return -ENOMEM;
	}
	c->fn = fn;
	c->arg = arg;
	c->next = p->cleanups;
	p->cleanups = c;
	return 0;
}

void arn_pool_free(struct arn_pool *p)
{
	if (!p)
		return;
	for (struct cleanup *c = p->cleanups, *n; c; c = n) {
		n = c->next;
		c->fn(c->arg);
		free(c);
	}
	for (struct chunk *c = p->head, *n; c; c = n) {
		n = c->next;
		free(c);
	}
	free(p);
}

bool arn_pool_failed(const struct arn_pool *p)
{
	return p->failed;
}

size_t arn_pool_bytes(const struct arn_pool *p)
{
	return p->bytes;
}
