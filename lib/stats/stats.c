/*
 * The statistics registry: scopes by name (a chained hash table, since CDS
 * may bring tens of thousands of clusters), per-slot slabs, pulls, the
 * watchers of the slot count, and the snapshot that the admin formats.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arn_defer.h"
#include "arn_log.h"
#include "arn_stats_snapshot.h"

const uint64_t arn_stats_hist_bounds_us[ARN_STATS_HIST_BUCKETS] = {
    500,      1000,	 5000,	    10000,	25000,	       50000,	 100000,
    250000,   500000,	 1000000,   2500000,	5000000,       10000000, 30000000,
    60000000, 300000000, 600000000, 1800000000, 3600000000ULL,
};

#define CACHE_WORDS 8 /* 64 bytes */

struct pull {
	arn_stats_pull_fn fn;
	void *arg;
	struct pull *next;
};

struct watcher {
	arn_stats_workers_fn fn;
	void *arg;
	struct watcher *next;
};

static struct {
	struct arn_stats_scope **buckets;
	size_t n_buckets; /* power of two, or 0 before the first scope */
	size_t n_scopes;
	unsigned n_workers;
	struct pull *pulls;
	struct watcher *watchers;
} reg;

static size_t hash_str(const char *s)
{
	size_t h = 1469598103934665603ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static int layout(struct arn_stats_schema *sc)
{
	if (sc->laid_out)
		return 0;
	unsigned *off = calloc(sc->n_defs ? sc->n_defs : 1, sizeof(*off));
	if (off == NULL)
		return -ENOMEM;
	unsigned w = 0;
	for (unsigned i = 0; i < sc->n_defs; i++) {
		off[i] = w;
		w += sc->defs[i].kind == ARN_STAT_HISTOGRAM ? ARN_STATS_HIST_WORDS : 1;
	}
	sc->offsets = off;
	sc->n_words = w;
	sc->laid_out = true;
	return 0;
}

static uint64_t *alloc_slabs(size_t stride, unsigned n_slots)
{
	size_t bytes = stride * n_slots * sizeof(uint64_t);
	if (bytes == 0)
		bytes = 64;
	uint64_t *p = aligned_alloc(64, bytes);
	if (p != NULL)
		memset(p, 0, bytes);
	return p;
}

static int grow_table(void)
{
	size_t n = reg.n_buckets ? reg.n_buckets * 2 : 64;
	struct arn_stats_scope **b = calloc(n, sizeof(*b));
	if (b == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < reg.n_buckets; i++) {
		struct arn_stats_scope *s = reg.buckets[i], *next;
		for (; s != NULL; s = next) {
			next = s->next;
			size_t h = hash_str(s->name) & (n - 1);
			s->next = b[h];
			b[h] = s;
		}
	}
	free(reg.buckets);
	reg.buckets = b;
	reg.n_buckets = n;
	return 0;
}

static struct arn_stats_scope *find(const char *name)
{
	if (reg.n_buckets == 0)
		return NULL;
	for (struct arn_stats_scope *s = reg.buckets[hash_str(name) & (reg.n_buckets - 1)]; s;
	     s = s->next)
		if (strcmp(s->name, name) == 0)
			return s;
	return NULL;
}

/* "<family>[.<tag_value>][.<sub>.<sub_tag_value, ':' as '_'>]" */
static char *scope_name(const char *family, const char *tag_value, const char *sub,
			const char *sub_tag_value)
{
	size_t a = strlen(family), b = tag_value ? strlen(tag_value) : 0;
	size_t c = sub ? strlen(sub) : 0, d = sub ? strlen(sub_tag_value) : 0;
	char *n = malloc(a + b + c + d + 4);
	if (n == NULL)
		return NULL;
	char *p = n;
	memcpy(p, family, a);
	p += a;
	if (tag_value != NULL) {
		*p++ = '.';
		memcpy(p, tag_value, b);
		p += b;
	}
	if (sub != NULL) {
		*p++ = '.';
		memcpy(p, sub, c);
		p += c;
		*p++ = '.';
		for (size_t i = 0; i < d; i++)
			*p++ = sub_tag_value[i] == ':' ? '_' : sub_tag_value[i];
	}
	*p = '\0';
	return n;
}

static struct arn_stats_scope *scope_get(struct arn_stats_schema *schema, const char *family,
					 const char *tag_name, const char *tag_value,
					 const char *sub, const char *sub_tag_name,
					 const char *sub_tag_value);

struct arn_stats_scope *arn_stats_scope_get(struct arn_stats_schema *schema, const char *tag_name,
					    const char *tag_value)
{
	return arn_stats_scope_get_named(schema, NULL, tag_name, tag_value);
}

struct arn_stats_scope *arn_stats_scope_get_named(struct arn_stats_schema *schema,
						  const char *family, const char *tag_name,
						  const char *tag_value)
{
	return scope_get(schema, family, tag_name, tag_value, NULL, NULL, NULL);
}

struct arn_stats_scope *arn_stats_scope_get_sub(struct arn_stats_schema *schema, const char *family,
						const char *tag_name, const char *tag_value,
						const char *sub, const char *sub_tag_name,
						const char *sub_tag_value)
{
	if (sub == NULL || sub_tag_name == NULL)
		sub = sub_tag_name = NULL;
	else if (sub_tag_value == NULL)
		sub_tag_value = "";
	return scope_get(schema, family, tag_name, tag_value, sub, sub_tag_name, sub_tag_value);
}

static struct arn_stats_scope *scope_get(struct arn_stats_schema *schema, const char *family,
					 const char *tag_name, const char *tag_value,
					 const char *sub, const char *sub_tag_name,
					 const char *sub_tag_value)
{
	if (tag_name == NULL)
		tag_value = NULL;
	else if (tag_value == NULL)
		tag_value = "";
	if (family == NULL)
		family = schema->family;
	char *name = scope_name(family, tag_value, sub, sub_tag_value);
	if (name == NULL)
		goto oom;
	struct arn_stats_scope *s = find(name);
	if (s != NULL) {
		if (s->schema != schema) {
			ARN_ERR(ADMIN,
				"stats scope '%s' is already used by another set of stats; "
				"the second one gets no stats",
				name);
			free(name);
			return NULL;
		}
		free(name);
		s->refs++;
		return s;
	}
	if (layout(schema) != 0)
		goto oom_name;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		goto oom_name;
	s->schema = schema;
	s->stride = (schema->n_words + CACHE_WORDS - 1) / CACHE_WORDS * CACHE_WORDS;
	if (s->stride == 0)
		s->stride = CACHE_WORDS;
	s->n_slots = 1 + reg.n_workers;
	s->slabs = alloc_slabs(s->stride, s->n_slots);
	s->name = name;
	s->tag_name = tag_name ? strdup(tag_name) : NULL;
	s->tag_value = tag_value ? strdup(tag_value) : NULL;
	s->family = family == schema->family ? NULL : strdup(family);
	if (sub != NULL) {
		s->sub = strdup(sub);
		s->sub_tag_name = strdup(sub_tag_name);
		s->sub_tag_value = strdup(sub_tag_value);
	}
	s->refs = 1;
	if (s->slabs == NULL || (tag_name && (!s->tag_name || !s->tag_value)) ||
	    (family != schema->family && !s->family) ||
	    (sub && (!s->sub || !s->sub_tag_name || !s->sub_tag_value)) ||
	    (reg.n_scopes + 1 > reg.n_buckets && grow_table() != 0)) {
		free(s->slabs);
		free(s->tag_name);
		free(s->tag_value);
		free(s->family);
		free(s->sub);
		free(s->sub_tag_name);
		free(s->sub_tag_value);
		free(s);
		goto oom_name;
	}
	size_t h = hash_str(name) & (reg.n_buckets - 1);
	s->next = reg.buckets[h];
	reg.buckets[h] = s;
	reg.n_scopes++;
	return s;
oom_name:
	free(name);
oom:
	ARN_ERR(ADMIN, "out of memory creating stats scope %s.%s", family,
		tag_value ? tag_value : "");
	return NULL;
}

void arn_stats_scope_ref(struct arn_stats_scope *sc)
{
	sc->refs++;
}

static void scope_free(void *arg)
{
	struct arn_stats_scope *s = arg;
	free(s->slabs);
	free(s->name);
	free(s->tag_name);
	free(s->tag_value);
	free(s->family);
	free(s->sub);
	free(s->sub_tag_name);
	free(s->sub_tag_value);
	free(s);
}

void arn_stats_scope_put(struct arn_stats_scope *sc)
{
	if (sc == NULL || --sc->refs > 0)
		return;
	size_t h = hash_str(sc->name) & (reg.n_buckets - 1);
	for (struct arn_stats_scope **pp = &reg.buckets[h]; *pp; pp = &(*pp)->next)
		if (*pp == sc) {
			*pp = sc->next;
			break;
		}
	reg.n_scopes--;
	arn_defer_free(arn_defer_default(), scope_free, sc);
}

const char *arn_stats_scope_name(const struct arn_stats_scope *sc)
{
	return sc->name;
}

unsigned arn_stats_workers(void)
{
	return reg.n_workers;
}

size_t arn_stats_scope_count(void)
{
	return reg.n_scopes;
}

int arn_stats_workers_watch(arn_stats_workers_fn fn, void *arg)
{
	struct watcher **pp = &reg.watchers;
	for (; *pp; pp = &(*pp)->next)
		if ((*pp)->fn == fn && (*pp)->arg == arg)
			return -EEXIST;
	struct watcher *w = calloc(1, sizeof(*w));
	if (w == NULL)
		return -ENOMEM;
	w->fn = fn;
	w->arg = arg;
	*pp = w;
	return 0;
}

int arn_stats_workers_unwatch(arn_stats_workers_fn fn, void *arg)
{
	for (struct watcher **pp = &reg.watchers; *pp; pp = &(*pp)->next)
		if ((*pp)->fn == fn && (*pp)->arg == arg) {
			struct watcher *w = *pp;
			*pp = w->next;
			free(w);
			return 0;
		}
	return -ENOENT;
}

static int tell_watchers(unsigned n)
{
	for (struct watcher *w = reg.watchers; w; w = w->next) {
		int rc = w->fn(n, w->arg);
		if (rc != 0)
			return rc;
	}
	return 0;
}

int arn_stats_set_workers(unsigned n)
{
	if (n > ARN_STATS_MAX_WORKERS)
		return -EINVAL;
	if (n == reg.n_workers)
		return 0;
	/* Allocate everything first so that a failure changes nothing. */
	uint64_t **fresh = calloc(reg.n_scopes ? reg.n_scopes : 1, sizeof(*fresh));
	if (fresh == NULL)
		return -ENOMEM;
	size_t k = 0;
	for (size_t i = 0; i < reg.n_buckets; i++)
		for (struct arn_stats_scope *s = reg.buckets[i]; s; s = s->next, k++)
			if ((fresh[k] = alloc_slabs(s->stride, 1 + n)) == NULL)
				goto fail;
	int rc = tell_watchers(n);
	if (rc != 0)
		goto fail;
	k = 0;
	for (size_t i = 0; i < reg.n_buckets; i++)
		for (struct arn_stats_scope *s = reg.buckets[i]; s; s = s->next, k++) {
			unsigned keep = s->n_slots < 1 + n ? s->n_slots : 1 + n;
			memcpy(fresh[k], s->slabs, keep * s->stride * sizeof(uint64_t));
			/* Fold slots that go away into the control slot: every word is a
			 * sum (counters, gauge shares, bucket counts). */
			for (unsigned sl = keep; sl < s->n_slots; sl++)
				for (size_t w = 0; w < s->stride; w++)
					fresh[k][w] += s->slabs[sl * s->stride + w];
			free(s->slabs);
			s->slabs = fresh[k];
			s->n_slots = 1 + n;
		}
	free(fresh);
	reg.n_workers = n;
	return 0;
fail:
	for (size_t j = 0; j < reg.n_scopes; j++)
		free(fresh[j]);
	free(fresh);
	return -ENOMEM;
}

/* ---- reading ------------------------------------------------------------- */

uint64_t arn_stats_counter_value(const struct arn_stats_scope *sc, unsigned stat)
{
	uint64_t v = 0;
	for (unsigned sl = 0; sl < sc->n_slots; sl++)
		v += __atomic_load_n(arn_stats_word_(sc, sl, stat), __ATOMIC_RELAXED);
	return v;
}

int64_t arn_stats_gauge_value(const struct arn_stats_scope *sc, unsigned stat)
{
	return (int64_t)arn_stats_counter_value(sc, stat);
}

void arn_stats_hist_value(const struct arn_stats_scope *sc, unsigned stat,
			  struct arn_stats_hist *out)
{
	memset(out, 0, sizeof(*out));
	for (unsigned sl = 0; sl < sc->n_slots; sl++)
		arn_stats_hist_add_words(out, arn_stats_word_(sc, sl, stat));
}

void arn_stats_hist_add_words(struct arn_stats_hist *out, const uint64_t *h)
{
	for (unsigned b = 0; b <= ARN_STATS_HIST_BUCKETS; b++) {
		uint64_t c = __atomic_load_n(&h[b], __ATOMIC_RELAXED);
		out->buckets[b] += c;
		out->count += c;
	}
	out->sum_us += __atomic_load_n(&h[ARN_STATS_HIST_BUCKETS + 1], __ATOMIC_RELAXED);
}

double arn_stats_hist_quantile(const struct arn_stats_hist *h, double q)
{
	if (h->count == 0)
		return NAN;
	double rank = q * (double)h->count;
	uint64_t seen = 0;
	for (unsigned b = 0; b <= ARN_STATS_HIST_BUCKETS; b++) {
		if (h->buckets[b] == 0)
			continue;
		double lo = b == 0 ? 0 : (double)arn_stats_hist_bounds_us[b - 1] / 1000.0;
		if (b == ARN_STATS_HIST_BUCKETS) /* above the top bound: report the bound */
			return lo;
		double hi = (double)arn_stats_hist_bounds_us[b] / 1000.0;
		if ((double)(seen + h->buckets[b]) >= rank) {
			double within = (rank - (double)seen) / (double)h->buckets[b];
			if (within < 0)
				within = 0;
			return lo + (hi - lo) * within;
		}
		seen += h->buckets[b];
	}
	return (double)arn_stats_hist_bounds_us[ARN_STATS_HIST_BUCKETS - 1] / 1000.0;
}

/* ---- pulls --------------------------------------------------------------- */

int arn_stats_pull_register(arn_stats_pull_fn fn, void *arg)
{
	for (struct pull *p = reg.pulls; p; p = p->next)
		if (p->fn == fn && p->arg == arg)
			return -EEXIST;
	struct pull *p = malloc(sizeof(*p));
	if (p == NULL)
		return -ENOMEM;
	p->fn = fn;
	p->arg = arg;
	/* Keep registration order: append. */
	struct pull **pp = &reg.pulls;
	while (*pp)
		pp = &(*pp)->next;
	p->next = NULL;
	*pp = p;
	return 0;
}

int arn_stats_pull_unregister(arn_stats_pull_fn fn, void *arg)
{
	for (struct pull **pp = &reg.pulls; *pp; pp = &(*pp)->next)
		if ((*pp)->fn == fn && (*pp)->arg == arg) {
			struct pull *p = *pp;
			*pp = p->next;
			free(p);
			return 0;
		}
	return -ENOENT;
}

/* ---- snapshot ------------------------------------------------------------ */

struct arn_stats_emitter {
	struct arn_stats_snapshot *snap;
};

static struct arn_stat_sample *add_sample(struct arn_stats_snapshot *s, const char *family,
					  const char *tag_name, const char *tag_value,
					  const char *stat)
{
	if (s->oom)
		return NULL;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		struct arn_stat_sample *v = realloc(s->v, cap * sizeof(*v));
		if (v == NULL) {
			s->oom = true;
			return NULL;
		}
		s->v = v;
		s->cap = cap;
	}
	if (tag_name == NULL)
		tag_value = NULL;
	else if (tag_value == NULL)
		tag_value = "";
	size_t lf = strlen(family), ls = strlen(stat);
	size_t ltn = tag_name ? strlen(tag_name) : 0, ltv = tag_value ? strlen(tag_value) : 0;
	/* name\0 family\0 tag_name\0 tag_value\0 */
	size_t lname = lf + (tag_value ? 1 + ltv : 0) + 1 + ls;
	char *m = malloc(lname + 1 + lf + 1 + ltn + 1 + ltv + 1);
	if (m == NULL) {
		s->oom = true;
		return NULL;
	}
	struct arn_stat_sample *x = &s->v[s->n++];
	memset(x, 0, sizeof(*x));
	x->strs = m;
	char *p = m;
	memcpy(p, family, lf);
	p += lf;
	if (tag_value) {
		*p++ = '.';
		memcpy(p, tag_value, ltv);
		p += ltv;
	}
	*p++ = '.';
	memcpy(p, stat, ls);
	p += ls;
	*p++ = '\0';
	x->name = m;
	x->stat = p - 1 - ls;
	x->family = p;
	memcpy(p, family, lf + 1);
	p += lf + 1;
	if (tag_name) {
		x->tag_name = p;
		memcpy(p, tag_name, ltn + 1);
		p += ltn + 1;
		x->tag_value = p;
		memcpy(p, tag_value, ltv + 1);
	}
	return x;
}

void arn_stats_emit(struct arn_stats_emitter *e, enum arn_stat_kind kind, const char *family,
		    const char *tag_name, const char *tag_value, const char *stat, int64_t value)
{
	struct arn_stat_sample *x = add_sample(e->snap, family, tag_name, tag_value, stat);
	if (x == NULL)
		return;
	x->kind = kind == ARN_STAT_GAUGE ? ARN_STAT_GAUGE : ARN_STAT_COUNTER;
	x->counter = (uint64_t)value;
	x->gauge = value;
}

/* arn_stats_emit_sub()'s sample, its value not set: NULL when out of memory. */
static struct arn_stat_sample *sub_sample(struct arn_stats_emitter *e, const char *family,
					  const char *tag_name, const char *tag_value,
					  const char *sub, const char *sub_tag_name,
					  const char *sub_tag_value, const char *stat)
{
	/* "<sub>.<sub_tag_value, ':' as '_'>.<stat>" after the scope's name */
	size_t ls = strlen(sub), lv = strlen(sub_tag_value), lst = strlen(stat);
	size_t lf = strlen(family), ltn = strlen(sub_tag_name);
	char *mid = malloc(ls + 1 + lv + 1 + lst + 1);
	/* prom family\0 prom stat\0 tag2 name\0 tag2 value\0 */
	char *s2 = malloc(lf + 1 + ls + 1 + lst + 1 + ltn + 1 + lv + 1);
	if (mid == NULL || s2 == NULL) {
		free(mid);
		free(s2);
		e->snap->oom = true;
		return NULL;
	}
	char *p = mid;
	memcpy(p, sub, ls);
	p += ls;
	*p++ = '.';
	for (size_t i = 0; i < lv; i++)
		*p++ = sub_tag_value[i] == ':' ? '_' : sub_tag_value[i];
	*p++ = '.';
	memcpy(p, stat, lst + 1);
	struct arn_stat_sample *x = add_sample(e->snap, family, tag_name, tag_value, mid);
	free(mid);
	if (x == NULL) {
		free(s2);
		return NULL;
	}
	x->strs2 = s2;
	p = s2;
	x->prom_family = p;
	memcpy(p, family, lf);
	p += lf;
	*p++ = '.';
	memcpy(p, sub, ls + 1);
	p += ls + 1;
	x->prom_stat = p;
	memcpy(p, stat, lst + 1);
	p += lst + 1;
	x->tag2_name = p;
	memcpy(p, sub_tag_name, ltn + 1);
	p += ltn + 1;
	x->tag2_value = p;
	memcpy(p, sub_tag_value, lv + 1);
	return x;
}

void arn_stats_emit_sub(struct arn_stats_emitter *e, enum arn_stat_kind kind, const char *family,
			const char *tag_name, const char *tag_value, const char *sub,
			const char *sub_tag_name, const char *sub_tag_value, const char *stat,
			int64_t value)
{
	struct arn_stat_sample *x =
	    sub_sample(e, family, tag_name, tag_value, sub, sub_tag_name, sub_tag_value, stat);
	if (x == NULL)
		return;
	x->kind = kind == ARN_STAT_GAUGE ? ARN_STAT_GAUGE : ARN_STAT_COUNTER;
	x->counter = (uint64_t)value;
	x->gauge = value;
}

void arn_stats_emit_sub_hist(struct arn_stats_emitter *e, const char *family, const char *tag_name,
			     const char *tag_value, const char *sub, const char *sub_tag_name,
			     const char *sub_tag_value, const char *stat,
			     const struct arn_stats_hist *h)
{
	struct arn_stat_sample *x =
	    sub_sample(e, family, tag_name, tag_value, sub, sub_tag_name, sub_tag_value, stat);
	if (x == NULL)
		return;
	x->kind = ARN_STAT_HISTOGRAM;
	x->hist = *h;
}

static int by_name(const void *a, const void *b)
{
	const struct arn_stat_sample *x = a, *y = b;
	return strcmp(x->name, y->name);
}

int arn_stats_snapshot_take(struct arn_stats_snapshot *s)
{
	memset(s, 0, sizeof(*s));
	struct arn_stats_emitter e = {s};
	for (size_t i = 0; i < reg.n_buckets; i++)
		for (struct arn_stats_scope *sc = reg.buckets[i]; sc; sc = sc->next) {
			const struct arn_stats_schema *sch = sc->schema;
			const char *fam = sc->family ? sc->family : sch->family;
			for (unsigned d = 0; d < sch->n_defs; d++) {
				const struct arn_stat_def *def = &sch->defs[d];
				struct arn_stat_sample *x =
				    sc->sub
					? sub_sample(&e, fam, sc->tag_name, sc->tag_value, sc->sub,
						     sc->sub_tag_name, sc->sub_tag_value, def->name)
					: add_sample(s, fam, sc->tag_name, sc->tag_value,
						     def->name);
				if (x == NULL)
					break;
				x->kind = def->kind;
				x->help = def->help;
				if (def->kind == ARN_STAT_HISTOGRAM)
					arn_stats_hist_value(sc, d, &x->hist);
				else
					x->counter = arn_stats_counter_value(sc, d);
				x->gauge = (int64_t)x->counter;
			}
		}
	for (struct pull *p = reg.pulls; p; p = p->next)
		p->fn(&e, p->arg);
	if (s->n > 1)
		qsort(s->v, s->n, sizeof(s->v[0]), by_name);
	return s->oom ? -ENOMEM : 0;
}

void arn_stats_snapshot_free(struct arn_stats_snapshot *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].strs);
		free(s->v[i].strs2);
	}
	free(s->v);
	memset(s, 0, sizeof(*s));
}

void arn_stats_reset_for_tests(void)
{
	for (size_t i = 0; i < reg.n_buckets; i++) {
		struct arn_stats_scope *s = reg.buckets[i], *next;
		for (; s; s = next) {
			next = s->next;
			scope_free(s);
		}
	}
	free(reg.buckets);
	while (reg.pulls) {
		struct pull *p = reg.pulls;
		reg.pulls = p->next;
		free(p);
	}
	/* watchers keep watching (they own per-slot state of their own),
	 * shrunk to no workers as the scopes are */
	struct watcher *w = reg.watchers;
	memset(&reg, 0, sizeof(reg));
	reg.watchers = w;
	tell_watchers(0);
}
