#include "hamt.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A slot holds an object pointer, or a child node pointer with bit 0 set.
 * Slots of a normal node are ordered by their 5-bit hash chunk (bitmap);
 * a collision node (two names with the same 64-bit hash) is a plain list. */
struct arn_hamt {
	uint32_t refs;
	uint32_t bitmap;
	uint32_t count;
	uint32_t collision;
	uintptr_t slot[];
};

#define BITS 5
#define MAX_SHIFT 64

static bool is_node(uintptr_t v)
{
	return v & 1u;
}
static struct arn_hamt *as_node(uintptr_t v)
{
	return (struct arn_hamt *)(v & ~(uintptr_t)1);
}
static uintptr_t from_node(struct arn_hamt *n)
{
	return (uintptr_t)n | 1u;
}
static struct arn_cfg_obj *as_obj(uintptr_t v)
{
	return (struct arn_cfg_obj *)v;
}
static uint32_t chunk(uint64_t hash, unsigned shift)
{
	return (uint32_t)(hash >> shift) & 31;
}

static bool same_name(const struct arn_cfg_obj *o, const char *name, size_t len, uint64_t hash)
{
	return o->hash == hash && o->name_len == len && memcmp(o->name, name, len) == 0;
}

static struct arn_hamt *node_new(uint32_t count)
{
	struct arn_hamt *n = calloc(1, sizeof(*n) + count * sizeof(uintptr_t));
	if (n) {
		n->refs = 1;
		n->count = count;
	}
	return n;
}

static void slot_ref(uintptr_t v)
{
	if (is_node(v))
		as_node(v)->refs++;
	else
		__atomic_fetch_add(&as_obj(v)->refs, 1, __ATOMIC_RELAXED);
}

static void slot_unref(uintptr_t v, void (*unref)(struct arn_cfg_obj *))
{
	if (is_node(v))
		arn_hamt_unref(as_node(v), unref);
	else
		unref(as_obj(v));
}

void arn_hamt_ref(struct arn_hamt *root)
{
	if (root)
		root->refs++;
}

void arn_hamt_unref(struct arn_hamt *n, void (*unref)(struct arn_cfg_obj *))
{
	if (!n || --n->refs > 0)
		return;
	for (uint32_t i = 0; i < n->count; i++)
		slot_unref(n->slot[i], unref);
	free(n);
}

/* @p name under node @p n whose slots are chunks of the hash from @p shift. */
static struct arn_cfg_obj *get_from(const struct arn_hamt *n, unsigned shift, const char *name,
				    size_t len, uint64_t hash)
{
	while (n) {
		if (n->collision) {
			for (uint32_t i = 0; i < n->count; i++)
				if (same_name(as_obj(n->slot[i]), name, len, hash))
					return as_obj(n->slot[i]);
			return NULL;
		}
		uint32_t bit = 1u << chunk(hash, shift);
		if (!(n->bitmap & bit))
			return NULL;
		uintptr_t v = n->slot[__builtin_popcount(n->bitmap & (bit - 1))];
		if (!is_node(v))
			return same_name(as_obj(v), name, len, hash) ? as_obj(v) : NULL;
		n = as_node(v);
		shift += BITS;
	}
	return NULL;
}

struct arn_cfg_obj *arn_hamt_get(const struct arn_hamt *n, const char *name, size_t len,
				 uint64_t hash)
{
	return get_from(n, 0, name, len, hash);
}

/*
 * A node the caller may change, standing for @p n with @p extra (0 or 1)
 * more slots; with extra 1 the new slot is at @p at and left 0. Consumes
 * the caller's reference to @p n: an exclusively owned node is reused (or
 * moved into a bigger one); a shared one is copied, each copied slot gaining
 * a reference. NULL on ENOMEM, with the caller's reference untouched.
 */
static struct arn_hamt *make_mut(struct arn_hamt *n, uint32_t extra, uint32_t at)
{
	bool exclusive = n->refs == 1;
	if (exclusive && extra == 0)
		return n;
	struct arn_hamt *c = node_new(n->count + extra);
	if (!c)
		return NULL;
	c->bitmap = n->bitmap;
	c->collision = n->collision;
	for (uint32_t i = 0, j = 0; i < n->count; i++, j++) {
		if (extra && i == at)
			j++;
		c->slot[j] = n->slot[i];
		if (!exclusive)
			slot_ref(n->slot[i]);
	}
	if (exclusive)
		free(n);
	else
		n->refs--;
	return c;
}

/* A subtrie holding two objects whose hashes agree below @p shift; takes
 * over the caller's references to both. */
static struct arn_hamt *pair(uintptr_t a, uintptr_t b, unsigned shift)
{
	if (shift >= MAX_SHIFT) {
		struct arn_hamt *n = node_new(2);
		if (!n)
			return NULL;
		n->collision = 1;
		n->slot[0] = a;
		n->slot[1] = b;
		return n;
	}
	uint32_t ia = chunk(as_obj(a)->hash, shift), ib = chunk(as_obj(b)->hash, shift);
	struct arn_hamt *n = node_new(ia == ib ? 1 : 2);
	if (!n)
		return NULL;
	if (ia == ib) {
		struct arn_hamt *sub = pair(a, b, shift + BITS);
		if (!sub) {
			free(n);
			return NULL;
		}
		n->bitmap = 1u << ia;
		n->slot[0] = from_node(sub);
		return n;
	}
	n->bitmap = (1u << ia) | (1u << ib);
	n->slot[ia < ib ? 0 : 1] = a;
	n->slot[ia < ib ? 1 : 0] = b;
	return n;
}

/*
 * Insert @p o (whose reference the trie takes on success) into @p n (NULL:
 * empty), consuming the caller's reference to @p n. Returns the node to put
 * in its place; on ENOMEM sets *err and returns a node that means what @p n
 * meant (NULL if @p n was NULL).
 */
static struct arn_hamt *ins(struct arn_hamt *n, unsigned shift, struct arn_cfg_obj *o,
			    void (*unref)(struct arn_cfg_obj *), int *err)
{
	if (n == NULL) {
		struct arn_hamt *r = node_new(1);
		if (!r) {
			*err = -ENOMEM;
			return NULL;
		}
		r->bitmap = 1u << chunk(o->hash, shift);
		r->slot[0] = (uintptr_t)o;
		return r;
	}
	struct arn_hamt *c;
	if (n->collision) {
		for (uint32_t i = 0; i < n->count; i++) {
			if (same_name(as_obj(n->slot[i]), o->name, o->name_len, o->hash)) {
				if (!(c = make_mut(n, 0, 0)))
					goto nomem;
				unref(as_obj(c->slot[i]));
				c->slot[i] = (uintptr_t)o;
				return c;
			}
		}
		if (!(c = make_mut(n, 1, n->count)))
			goto nomem;
		c->slot[c->count - 1] = (uintptr_t)o;
		return c;
	}
	uint32_t bit = 1u << chunk(o->hash, shift);
	uint32_t pos = (uint32_t)__builtin_popcount(n->bitmap & (bit - 1));
	if (!(n->bitmap & bit)) {
		if (!(c = make_mut(n, 1, pos)))
			goto nomem;
		c->bitmap |= bit;
		c->slot[pos] = (uintptr_t)o;
		return c;
	}
	if (!(c = make_mut(n, 0, 0)))
		goto nomem;
	uintptr_t v = c->slot[pos];
	if (is_node(v)) {
		struct arn_hamt *nc = ins(as_node(v), shift + BITS, o, unref, err);
		c->slot[pos] = from_node(nc); /* means the same on error */
	} else if (same_name(as_obj(v), o->name, o->name_len, o->hash)) {
		unref(as_obj(v));
		c->slot[pos] = (uintptr_t)o;
	} else {
		struct arn_hamt *sub = pair(v, (uintptr_t)o, shift + BITS);
		if (!sub)
			*err = -ENOMEM;
		else
			c->slot[pos] = from_node(sub);
	}
	return c;
nomem:
	*err = -ENOMEM;
	return n;
}

int arn_hamt_set(struct arn_hamt **root, struct arn_cfg_obj *o, void (*unref)(struct arn_cfg_obj *))
{
	int err = 0;
	__atomic_fetch_add(&o->refs, 1, __ATOMIC_RELAXED);
	*root = ins(*root, 0, o, unref, &err);
	if (err)
		unref(o);
	return err;
}

/*
 * Remove the (present) name from @p n, consuming the caller's reference.
 * Returns what replaces @p n in its parent: 0 (empty), a lone object (only
 * below the root), or a node. On ENOMEM sets *err and returns a node that
 * means what @p n meant.
 */
static uintptr_t del(struct arn_hamt *n, unsigned shift, const char *name, size_t len,
		     uint64_t hash, void (*unref)(struct arn_cfg_obj *), int *err)
{
	struct arn_hamt *c = make_mut(n, 0, 0);
	if (!c) {
		*err = -ENOMEM;
		return from_node(n);
	}
	uint32_t pos = 0;
	if (c->collision) {
		while (pos < c->count && !same_name(as_obj(c->slot[pos]), name, len, hash))
			pos++;
		unref(as_obj(c->slot[pos]));
	} else {
		uint32_t bit = 1u << chunk(hash, shift);
		pos = (uint32_t)__builtin_popcount(c->bitmap & (bit - 1));
		uintptr_t v = c->slot[pos];
		if (is_node(v)) {
			uintptr_t r = del(as_node(v), shift + BITS, name, len, hash, unref, err);
			if (*err || r != 0) {
				c->slot[pos] = r;
				if (!*err && c->count == 1 && !is_node(r) && shift > 0) {
					free(c); /* its one reference moves to the parent */
					return r;
				}
				return from_node(c);
			}
		} else {
			unref(as_obj(v));
		}
		c->bitmap &= ~bit;
	}
	/* remove slot pos in place (no allocation) */
	memmove(&c->slot[pos], &c->slot[pos + 1], (c->count - pos - 1) * sizeof(uintptr_t));
	c->count--;
	if (c->count == 0) {
		free(c);
		return 0;
	}
	if (c->count == 1 && !is_node(c->slot[0]) && shift > 0) {
		uintptr_t r = c->slot[0];
		free(c);
		return r;
	}
	return from_node(c);
}

int arn_hamt_del(struct arn_hamt **root, const char *name, size_t len, uint64_t hash,
		 void (*unref)(struct arn_cfg_obj *))
{
	if (!arn_hamt_get(*root, name, len, hash))
		return -ENOENT;
	int err = 0;
	uintptr_t r = del(*root, 0, name, len, hash, unref, &err);
	*root = r ? as_node(r) : NULL; /* never a lone object at shift 0 */
	return err;
}

static void each(const struct arn_hamt *n, void (*fn)(void *, struct arn_cfg_obj *), void *ctx)
{
	for (uint32_t i = 0; i < n->count; i++) {
		if (is_node(n->slot[i]))
			each(as_node(n->slot[i]), fn, ctx);
		else
			fn(ctx, as_obj(n->slot[i]));
	}
}

void arn_hamt_foreach(const struct arn_hamt *root, void (*fn)(void *ctx, struct arn_cfg_obj *o),
		      void *ctx)
{
	if (root)
		each(root, fn, ctx);
}

void arn_hamt_stats(const struct arn_hamt *n, size_t *nodes, size_t *bytes)
{
	if (!n)
		return;
	(*nodes)++;
	*bytes += sizeof(*n) + n->count * sizeof(uintptr_t);
	for (uint32_t i = 0; i < n->count; i++)
		if (is_node(n->slot[i]))
			arn_hamt_stats(as_node(n->slot[i]), nodes, bytes);
}

/* ---- diff ------------------------------------------------------------------ */

typedef void diff_fn(void *ctx, struct arn_cfg_obj *was, struct arn_cfg_obj *now);

struct diff {
	diff_fn *fn;
	void *ctx;
	size_t visited;
};

/* @p name in slot @p v (0, an object, or a node at @p shift). */
static struct arn_cfg_obj *slot_get(uintptr_t v, unsigned shift, const struct arn_cfg_obj *o)
{
	if (!v)
		return NULL;
	if (!is_node(v))
		return same_name(as_obj(v), o->name, o->name_len, o->hash) ? as_obj(v) : NULL;
	return get_from(as_node(v), shift, o->name, o->name_len, o->hash);
}

/* Every object of slot @p v: @p was side (report removed and replaced
 * ones against @p other) or not (report added ones). */
static void slot_each(struct diff *d, uintptr_t v, uintptr_t other, unsigned shift, bool was)
{
	if (!v)
		return;
	if (is_node(v)) {
		struct arn_hamt *n = as_node(v);
		d->visited++;
		for (uint32_t i = 0; i < n->count; i++)
			slot_each(d, n->slot[i], other, shift, was);
		return;
	}
	struct arn_cfg_obj *o = as_obj(v), *p = slot_get(other, shift, o);
	if (was && p != o)
		d->fn(d->ctx, o, p);
	else if (!was && !p)
		d->fn(d->ctx, NULL, o);
}

/*
 * Slots @p a and @p b, both at @p shift: equal pointers are the same
 * subtrie (path copying shares what a batch did not touch), so only
 * differing ones are descended; where the shapes differ (an object against
 * a node, a collision node) every object of both sides is looked up in the
 * other, which is at most a few objects below the top levels.
 */
static void diff_slots(struct diff *d, uintptr_t a, uintptr_t b, unsigned shift)
{
	if (a == b)
		return;
	if (a && b && is_node(a) && is_node(b) && !as_node(a)->collision &&
	    !as_node(b)->collision) {
		const struct arn_hamt *na = as_node(a), *nb = as_node(b);
		d->visited += 2;
		uint32_t all = na->bitmap | nb->bitmap;
		while (all) {
			uint32_t bit = all & -all;
			all &= all - 1;
			uintptr_t va = na->bitmap & bit
					   ? na->slot[__builtin_popcount(na->bitmap & (bit - 1))]
					   : 0;
			uintptr_t vb = nb->bitmap & bit
					   ? nb->slot[__builtin_popcount(nb->bitmap & (bit - 1))]
					   : 0;
			diff_slots(d, va, vb, shift + BITS);
		}
		return;
	}
	slot_each(d, a, b, shift, true);
	slot_each(d, b, a, shift, false);
}

size_t arn_hamt_diff(const struct arn_hamt *a, const struct arn_hamt *b,
		     void (*fn)(void *ctx, struct arn_cfg_obj *was, struct arn_cfg_obj *now),
		     void *ctx)
{
	struct diff d = {fn, ctx, 0};
	diff_slots(&d, a ? from_node((struct arn_hamt *)a) : 0,
		   b ? from_node((struct arn_hamt *)b) : 0, 0);
	return d.visited;
}
