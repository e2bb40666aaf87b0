/*
 * Pulled row tables: see arn_stats_rows.h.
 */
#include "arn_stats_rows.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A row: this header, the names a and b (name_max + 1 bytes each), then
 * the counters and the histogram, 8-byte aligned. Its size (the table's
 * stride) depends on the def, so rows are addressed by offset. */
struct row {
	uint64_t hash;
	uint32_t alen, blen;
};

struct arn_stats_rows_table {
	/* odd while the worker moves rows (a sweep): the pull copies the
	 * table and keeps the copy only when seq was even and unchanged
	 * around it */
	uint32_t seq;
	uint32_t n;	   /* rows published: [0, n) are complete (release/acquire) */
	uint32_t n_keyed;  /* of them, with a non-empty b */
	uint64_t overflow; /* samples whose row did not fit (relaxed) */
	/* fixed at allocation, from the def */
	uint32_t max_keyed, max_bare;
	size_t name_max, stride, words_at;
	unsigned char rows[]; /* (max_keyed + max_bare) * stride */
};

static struct row *row_at(const struct arn_stats_rows_table *t, uint32_t i)
{
	return (struct row *)(uintptr_t)(t->rows + (size_t)i * t->stride);
}

static char *name_a(const struct arn_stats_rows_table *t, struct row *r)
{
	(void)t;
	return (char *)(r + 1);
}

static char *name_b(const struct arn_stats_rows_table *t, struct row *r)
{
	return (char *)(r + 1) + t->name_max + 1;
}

static uint64_t *words(const struct arn_stats_rows_table *t, struct row *r)
{
	return (uint64_t *)(uintptr_t)((unsigned char *)r + t->words_at);
}

static struct arn_stats_rows_table *table_new(const struct arn_stats_rows_def *d)
{
	size_t n_words = d->n_counters + (d->hist ? ARN_STATS_HIST_WORDS : 0);
	size_t words_at = (sizeof(struct row) + 2 * (d->name_max + 1) + 7) & ~(size_t)7;
	size_t stride = words_at + n_words * sizeof(uint64_t);
	size_t rows = (size_t)d->max_keyed + d->max_bare;
	struct arn_stats_rows_table *t = calloc(1, sizeof(*t) + rows * stride);
	if (!t)
		return NULL;
	t->max_keyed = d->max_keyed;
	t->max_bare = d->max_bare;
	t->name_max = d->name_max;
	t->stride = stride;
	t->words_at = words_at;
	return t;
}

int arn_stats_rows_worker_init(struct arn_stats_rows *s, unsigned w)
{
	if (s->def.n_counters > ARN_STATS_ROWS_COUNTERS)
		return -EINVAL; /* the pull sums at most that many */
	if (w >= ARN_STATS_MAX_WORKERS)
		return 0; /* no slot in /stats: nothing counted */
	struct arn_stats_rows_table *t = table_new(&s->def);
	if (!t)
		return -ENOMEM;
	__atomic_store_n(&s->tables[w], t, __ATOMIC_RELEASE);
	return 0;
}

void arn_stats_rows_worker_fini(struct arn_stats_rows *s, unsigned w)
{
	if (w >= ARN_STATS_MAX_WORKERS)
		return;
	struct arn_stats_rows_table *t = s->tables[w];
	__atomic_store_n(&s->tables[w], NULL, __ATOMIC_RELEASE);
	free(t);
}

static uint64_t fnv(uint64_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h;
}

uint64_t *arn_stats_rows_find(struct arn_stats_rows_table *t, const char *a, size_t an,
			      const char *b, size_t bn)
{
	if (an > t->name_max || bn > t->name_max)
		return NULL; /* never truncate: two names would share a row */
	uint64_t h = fnv(fnv(0xcbf29ce484222325ull, a, an) ^ 0xff, b, bn);
	for (uint32_t i = 0; i < t->n; i++) {
		struct row *r = row_at(t, i);
		if (r->hash == h && r->alen == an && r->blen == bn &&
		    !memcmp(name_a(t, r), a, an) && !memcmp(name_b(t, r), b, bn))
			return words(t, r);
	}
	if (bn ? t->n_keyed == t->max_keyed : t->n - t->n_keyed == t->max_bare)
		return NULL;
	struct row *r = row_at(t, t->n);
	memset(r, 0, t->stride);
	r->hash = h;
	r->alen = (uint32_t)an;
	r->blen = (uint32_t)bn;
	memcpy(name_a(t, r), a, an);
	memcpy(name_b(t, r), b, bn);
	if (bn)
		t->n_keyed++;
	__atomic_store_n(&t->n, t->n + 1, __ATOMIC_RELEASE);
	return words(t, r);
}

void arn_stats_rows_overflow(struct arn_stats_rows_table *t)
{
	arn_stats_rows_add(&t->overflow, 1);
}

void arn_stats_rows_sweep(struct arn_stats_rows_table *t, arn_stats_rows_keep_fn keep, void *arg)
{
	if (!t || !t->n)
		return;
	uint32_t k = 0, kk = 0;
	__atomic_store_n(&t->seq, t->seq + 1, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	for (uint32_t i = 0; i < t->n; i++) {
		struct row *r = row_at(t, i);
		if (!keep(name_a(t, r), r->alen, name_b(t, r), r->blen, arg))
			continue;
		if (k != i)
			memcpy(row_at(t, k), r, t->stride);
		k++;
		kk += r->blen != 0;
	}
	t->n = k;
	t->n_keyed = kk;
	__atomic_store_n(&t->seq, t->seq + 1, __ATOMIC_RELEASE);
}

static bool same(const struct arn_stats_rows_table *t, struct row *x, struct row *y)
{
	return x->hash == y->hash && x->alen == y->alen && x->blen == y->blen &&
	       !memcmp(name_a(t, x), name_a(t, y), x->alen) &&
	       !memcmp(name_b(t, x), name_b(t, y), x->blen);
}

/* A copy of worker @p w's table, taken while no sweep moved its rows
 * (a few tries), into @p out. @return false: no table, or no stable copy. */
static bool snapshot(struct arn_stats_rows *s, unsigned w, struct arn_stats_rows_table *out)
{
	const struct arn_stats_rows_table *t = __atomic_load_n(&s->tables[w], __ATOMIC_ACQUIRE);
	if (!t)
		return false;
	uint32_t max = t->max_keyed + t->max_bare;
	for (int tries = 0; tries < 4; tries++) {
		uint32_t s0 = __atomic_load_n(&t->seq, __ATOMIC_ACQUIRE);
		if (s0 & 1)
			continue;
		uint32_t n = __atomic_load_n(&t->n, __ATOMIC_ACQUIRE);
		if (n > max)
			continue;
		memcpy(out->rows, t->rows, n * t->stride);
		out->n = n;
		out->overflow = __atomic_load_n(&t->overflow, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&t->seq, __ATOMIC_RELAXED) == s0)
			return true;
	}
	return false;
}

/* Each (a, b) once, summed over the workers that have it. */
static void pull(struct arn_stats_emitter *e, void *arg)
{
	struct arn_stats_rows *s = arg;
	const struct arn_stats_rows_def *d = &s->def;
	struct arn_stats_rows_table *tabs[ARN_STATS_MAX_WORKERS];
	for (unsigned w = 0; w < ARN_STATS_MAX_WORKERS; w++) {
		tabs[w] = NULL;
		if (!__atomic_load_n(&s->tables[w], __ATOMIC_ACQUIRE))
			continue;
		if (!s->snap[w] && !(s->snap[w] = table_new(d)))
			continue;
		if (snapshot(s, w, s->snap[w]))
			tabs[w] = s->snap[w];
	}
	for (unsigned w = 0; w < ARN_STATS_MAX_WORKERS; w++) {
		const struct arn_stats_rows_table *t = tabs[w];
		uint32_t n = t ? t->n : 0;
		if (t) {
			char tag[16];
			snprintf(tag, sizeof(tag), "%u", w);
			arn_stats_emit(e, ARN_STAT_COUNTER, d->family, ARN_STATS_TAG_WORKER, tag,
				       "rows_overflow", (int64_t)t->overflow);
			arn_stats_emit(e, ARN_STAT_GAUGE, d->family, ARN_STATS_TAG_WORKER, tag,
				       "rows", (int64_t)n);
		}
		for (uint32_t i = 0; i < n; i++) {
			struct row *r = row_at(t, i);
			bool earlier = false;
			uint64_t sum[ARN_STATS_ROWS_COUNTERS] = {0};
			struct arn_stats_hist hist = {0};
			for (unsigned v = 0; v < ARN_STATS_MAX_WORKERS && !earlier; v++) {
				const struct arn_stats_rows_table *u = tabs[v];
				uint32_t un = u ? u->n : 0;
				for (uint32_t j = 0; j < un; j++) {
					struct row *q = row_at(u, j);
					if (!same(t, r, q))
						continue;
					if (v < w) {
						earlier = true;
						break;
					}
					const uint64_t *c = words(u, q);
					for (unsigned k = 0; k < d->n_counters; k++)
						sum[k] += c[k];
					if (d->hist)
						arn_stats_hist_add_words(&hist, c + d->n_counters);
				}
			}
			if (earlier)
				continue;
			/* the names end in NUL: a row is zeroed before they are copied in */
			d->emit(e, name_a(t, r), name_b(t, r), r->blen, sum, d->hist ? &hist : NULL,
				d->arg);
		}
	}
}

int arn_stats_rows_start(struct arn_stats_rows *s)
{
	return arn_stats_pull_register(pull, s);
}

void arn_stats_rows_stop(struct arn_stats_rows *s)
{
	arn_stats_pull_unregister(pull, s);
	for (unsigned w = 0; w < ARN_STATS_MAX_WORKERS; w++) {
		free(s->snap[w]);
		s->snap[w] = NULL;
	}
}
