/*
 * The deferred-free queue (arn_defer.h): a ring of (token, fn, arg) in a
 * power-of-two array that doubles when full, so queueing allocates only
 * while the queue grows past its largest size so far.
 */
#include <stdint.h>
#include <stdlib.h>

#include <rte_rcu_qsbr.h>

#include "arn_defer.h"

struct entry {
	uint64_t token;
	arn_defer_fn fn;
	void *arg;
};

struct arn_defer {
	struct rte_rcu_qsbr *v;
	struct entry *ring;
	size_t cap; /* a power of two, or 0 */
	size_t head, n;
};

static struct arn_defer *default_queue;

struct arn_defer *arn_defer_create(struct rte_rcu_qsbr *v)
{
	struct arn_defer *d = calloc(1, sizeof(*d));
	if (d != NULL)
		d->v = v;
	return d;
}

static int grow(struct arn_defer *d)
{
	size_t cap = d->cap ? 2 * d->cap : 64;
	struct entry *r = malloc(cap * sizeof(*r));
	if (r == NULL)
		return -1;
	for (size_t i = 0; i < d->n; i++)
		r[i] = d->ring[(d->head + i) & (d->cap - 1)];
	free(d->ring);
	d->ring = r;
	d->cap = cap;
	d->head = 0;
	return 0;
}

void arn_defer_free(struct arn_defer *d, arn_defer_fn fn, void *arg)
{
	if (d == NULL || d->v == NULL) {
		fn(arg);
		return;
	}
	if (d->n == d->cap && grow(d) != 0) {
		rte_rcu_qsbr_synchronize(d->v, RTE_QSBR_THRID_INVALID);
		fn(arg);
		return;
	}
	d->ring[(d->head + d->n) & (d->cap - 1)] =
	    (struct entry){rte_rcu_qsbr_start(d->v), fn, arg};
	d->n++;
}

size_t arn_defer_reclaim(struct arn_defer *d)
{
	size_t ran = 0;
	while (d != NULL && d->n > 0) {
		struct entry e = d->ring[d->head];
		if (rte_rcu_qsbr_check(d->v, e.token, false) != 1)
			break;
		d->head = (d->head + 1) & (d->cap - 1);
		d->n--;
		/* dequeued first: fn may queue more */
		e.fn(e.arg);
		ran++;
	}
	return ran;
}

size_t arn_defer_pending(const struct arn_defer *d)
{
	return d ? d->n : 0;
}

void arn_defer_destroy(struct arn_defer *d)
{
	if (d == NULL)
		return;
	while (d->n > 0) {
		struct entry e = d->ring[d->head];
		d->head = (d->head + 1) & (d->cap - 1);
		d->n--;
		e.fn(e.arg);
	}
	if (default_queue == d)
		default_queue = NULL;
	free(d->ring);
	free(d);
}

void arn_defer_set_default(struct arn_defer *d)
{
	default_queue = d;
}

struct arn_defer *arn_defer_default(void)
{
	return default_queue;
}
