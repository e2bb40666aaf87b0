/*
 * Server names -> index: Envoy's order for server_names (exact first, then
 * the longest "*." suffix), used for certificate groups inside a context and
 * for the public SNI map that chooses among contexts.
 *
 * Two sorted arrays (exact names, wildcard suffixes) and binary search: a
 * lookup lower-cases the name once into a stack buffer, then tries the
 * exact table and each suffix from the longest ("*.b.example.com" before
 * "*.example.com"), so its cost grows with the labels of the name, not
 * with the number of names configured. Built on the control lcore; lookups
 * read only and allocate nothing.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arn_log.h"
#include "tls_int.h"

static int name_cmp(const char *a, uint32_t al, const char *b, uint32_t bl)
{
	uint32_t n = al < bl ? al : bl;
	int r = memcmp(a, b, n);
	if (r)
		return r;
	return al < bl ? -1 : al > bl;
}

static int entry_cmp(const void *x, const void *y)
{
	const struct tls_name *a = x, *b = y;
	return name_cmp(a->pat, a->len, b->pat, b->len);
}

static const struct tls_name *find(const struct tls_name *v, size_t n, const char *s, uint32_t len)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int r = name_cmp(v[mid].pat, v[mid].len, s, len);
		if (r == 0)
			return &v[mid];
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int tls_names_add(struct tls_names *t, const char *name, size_t len, int idx, bool keep_first)
{
	if (len == 0 || len > ARN_TLS_HELLO_SNI_MAX || memchr(name, 0, len))
		return -EINVAL;
	bool wild = name[0] == '*';
	/* "*.example.com": the '*' stands for at least one label */
	if (wild && (len < 3 || name[1] != '.' || memchr(name + 1, '*', len - 1)))
		return -EINVAL;
	if (!wild && memchr(name, '*', len))
		return -EINVAL;
	const char *p = wild ? name + 1 : name;
	uint32_t pl = (uint32_t)(wild ? len - 1 : len);
	struct tls_name **v = wild ? &t->wild : &t->exact;
	size_t *n = wild ? &t->n_wild : &t->n_exact;
	size_t *cap = wild ? &t->cap_wild : &t->cap_exact;
	char low[ARN_TLS_HELLO_SNI_MAX + 1];
	for (uint32_t i = 0; i < pl; i++)
		low[i] = (char)tolower((unsigned char)p[i]);
	/* duplicates: a linear scan, at build time only */
	for (size_t i = 0; i < *n; i++)
		if (name_cmp((*v)[i].pat, (*v)[i].len, low, pl) == 0)
			return keep_first ? 0 : -EEXIST;
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 8;
		struct tls_name *nv = realloc(*v, nc * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = nc;
	}
	char *copy = malloc(pl + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, low, pl);
	copy[pl] = 0;
	(*v)[(*n)++] = (struct tls_name){copy, pl, idx};
	return 0;
}

void tls_names_seal(struct tls_names *t)
{
	if (t->n_exact)
		qsort(t->exact, t->n_exact, sizeof(*t->exact), entry_cmp);
	if (t->n_wild)
		qsort(t->wild, t->n_wild, sizeof(*t->wild), entry_cmp);
}

int tls_names_lookup(const struct tls_names *t, const char *name, size_t len, bool single_label)
{
	char low[ARN_TLS_HELLO_SNI_MAX + 1];
	if (!name || len == 0 || len > ARN_TLS_HELLO_SNI_MAX)
		return -1;
	for (size_t i = 0; i < len; i++)
		low[i] = (char)tolower((unsigned char)name[i]);
	const struct tls_name *e = find(t->exact, t->n_exact, low, (uint32_t)len);
	if (e)
		return e->idx;
	/* the longest suffix first: the leftmost dot after the first label */
	for (size_t i = 1; i + 1 < len; i++) {
		if (low[i] != '.')
			continue;
		e = find(t->wild, t->n_wild, low + i, (uint32_t)(len - i));
		if (e)
			return e->idx;
		if (single_label)
			break;
	}
	return -1;
}

void tls_names_free(struct tls_names *t)
{
	for (size_t i = 0; i < t->n_exact; i++)
		free(t->exact[i].pat);
	for (size_t i = 0; i < t->n_wild; i++)
		free(t->wild[i].pat);
	free(t->exact);
	free(t->wild);
	memset(t, 0, sizeof(*t));
}

/* ---- the public SNI map ------------------------------------------------------ */

struct arn_tls_sni_map {
	struct tls_names names;
	struct arn_tls_ctx **ctx;
	size_t n_ctx;
	struct arn_tls_ctx *dflt;
};

struct arn_tls_sni_map *arn_tls_sni_map_new(const struct arn_tls_sni_entry *e, size_t n,
					    struct arn_tls_ctx *default_ctx, char *err,
					    size_t errlen)
{
	struct arn_tls_sni_map *m = calloc(1, sizeof(*m));
	if (!m || (n && !(m->ctx = calloc(n, sizeof(*m->ctx))))) {
		snprintf(err, errlen, "out of memory");
		free(m);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		m->ctx[i] = e[i].ctx;
		arn_tls_ctx_ref(e[i].ctx);
		m->n_ctx++;
		for (size_t j = 0; j < e[i].n_server_names; j++) {
			const char *s = e[i].server_names[j];
			int r = tls_names_add(&m->names, s, strlen(s), (int)i, false);
			if (r) {
				snprintf(err, errlen, "server_names: '%s' %s", s,
					 r == -EEXIST ? "is given twice"
					 : r == -EINVAL
					     ? "is not a host name or a leading '*.' wildcard"
					     : "could not be added (out of memory)");
				ARN_ERR(TLS, "SNI map: %s", err);
				arn_tls_sni_map_free(m);
				return NULL;
			}
		}
	}
	tls_names_seal(&m->names);
	m->dflt = default_ctx;
	if (default_ctx)
		arn_tls_ctx_ref(default_ctx);
	return m;
}

struct arn_tls_ctx *arn_tls_sni_map_select(const struct arn_tls_sni_map *m, const char *sni,
					   size_t len)
{
	int i = sni ? tls_names_lookup(&m->names, sni, len, false) : -1;
	return i >= 0 ? m->ctx[i] : m->dflt;
}

void arn_tls_sni_map_free(struct arn_tls_sni_map *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n_ctx; i++)
		arn_tls_ctx_unref(m->ctx[i]);
	arn_tls_ctx_unref(m->dflt);
	tls_names_free(&m->names);
	free(m->ctx);
	free(m);
}
