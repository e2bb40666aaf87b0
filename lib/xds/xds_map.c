#include "xds_map.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

char xds_tomb_[1];

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static struct xds_ent *find(const struct xds_map *m, const char *name, struct xds_ent **tomb)
{
	if (m->cap == 0)
		return NULL;
	size_t mask = m->cap - 1, i = hash(name) & mask;
	for (;;) {
		struct xds_ent *e = &m->slots[i];
		if (e->name == NULL)
			return NULL;
		if (e->name == XDS_TOMB) {
			if (tomb && !*tomb)
				*tomb = e;
		} else if (strcmp(e->name, name) == 0) {
			return e;
		}
		i = (i + 1) & mask;
	}
}

struct xds_ent *xds_map_get(const struct xds_map *m, const char *name)
{
	return find(m, name, NULL);
}

static int grow(struct xds_map *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 16;
	if (m->n * 4 < m->cap) /* mostly tombstones: rehash at the same size */
		ncap = m->cap;
	struct xds_ent *ns = calloc(ncap, sizeof(*ns));
	if (ns == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++) {
		struct xds_ent *e = &m->slots[i];
		if (!xds_ent_live(e))
			continue;
		size_t j = hash(e->name) & (ncap - 1);
		while (ns[j].name != NULL)
			j = (j + 1) & (ncap - 1);
		ns[j] = *e;
	}
	free(m->slots);
	m->slots = ns;
	m->cap = ncap;
	m->used = m->n;
	return 0;
}

struct xds_ent *xds_map_put(struct xds_map *m, const char *name)
{
	struct xds_ent *tomb = NULL;
	struct xds_ent *e = find(m, name, &tomb);
	if (e != NULL)
		return e;
	if ((m->used + 1) * 4 > m->cap * 3) {
		if (grow(m) != 0)
			return NULL;
		tomb = NULL;
	}
	char *k = strdup(name);
	if (k == NULL)
		return NULL;
	if (tomb == NULL) {
		size_t mask = m->cap - 1, i = hash(name) & mask;
		while (m->slots[i].name != NULL && m->slots[i].name != XDS_TOMB)
			i = (i + 1) & mask;
		e = &m->slots[i];
		if (e->name == NULL)
			m->used++;
	} else {
		e = tomb;
	}
	e->name = k;
	e->version = NULL;
	e->subscribed = false;
	e->ttl_deadline_ms = 0;
	m->n++;
	return e;
}

int xds_ent_set_version(struct xds_ent *e, const char *version)
{
	char *v = NULL;
	if (version != NULL && (v = strdup(version)) == NULL)
		return -ENOMEM;
	free(e->version);
	e->version = v;
	return 0;
}

bool xds_map_del(struct xds_map *m, const char *name)
{
	struct xds_ent *e = find(m, name, NULL);
	if (e == NULL)
		return false;
	free(e->name);
	free(e->version);
	e->name = XDS_TOMB;
	e->version = NULL;
	e->subscribed = false;
	e->ttl_deadline_ms = 0;
	m->n--;
	return true;
}

void xds_map_clear(struct xds_map *m)
{
	for (size_t i = 0; i < m->cap; i++) {
		struct xds_ent *e = &m->slots[i];
		if (xds_ent_live(e)) {
			free(e->name);
			free(e->version);
		}
		e->name = NULL;
		e->version = NULL;
	}
	m->n = m->used = 0;
}

void xds_map_free(struct xds_map *m)
{
	xds_map_clear(m);
	free(m->slots);
	m->slots = NULL;
	m->cap = 0;
}

static int cmp_ent(const void *a, const void *b)
{
	return strcmp((*(struct xds_ent *const *)a)->name, (*(struct xds_ent *const *)b)->name);
}

struct xds_ent **xds_map_sorted(const struct xds_map *m, size_t *n)
{
	*n = 0;
	if (m->n == 0)
		return NULL;
	struct xds_ent **v = malloc(m->n * sizeof(*v));
	if (v == NULL)
		return NULL;
	XDS_MAP_FOREACH(m, e)
	v[(*n)++] = e;
	qsort(v, *n, sizeof(*v), cmp_ent);
	return v;
}
