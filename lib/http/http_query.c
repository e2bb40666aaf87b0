/*
 * Envoy's QueryParamsMulti rewrite of a path's query (http_query.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "http_query.h"

static bool hexd(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

bool http_query_is_encoded(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '*' || c == '-' || c == '.' || c == '_')
			continue;
		if (c == '%' && i + 2 < n && hexd(p[i + 1]) && hexd(p[i + 2])) {
			i += 2;
			continue;
		}
		return false;
	}
	return true;
}

static bool key_eq(const char *a, size_t al, const char *b, size_t bl)
{
	return al == bl && (al == 0 || memcmp(a, b, al) == 0);
}

/* std::string's order: bytes, then the shorter first. */
static int key_cmp(const struct http_qkv *a, const struct http_qkv *b)
{
	size_t n = a->kl < b->kl ? a->kl : b->kl;
	int c = n ? memcmp(a->k, b->k, n) : 0;
	if (c)
		return c;
	return a->kl < b->kl ? -1 : a->kl > b->kl;
}

static bool listed(const struct http_qkv *l, size_t n, const char *k, size_t kl)
{
	for (size_t i = 0; i < n; i++)
		if (key_eq(l[i].k, l[i].kl, k, kl))
			return true;
	return false;
}

long http_query_rewrite(const char *path, size_t plen, const struct http_qkv *set, size_t nset,
			const struct http_qkv *rm, size_t nrm, char *out, size_t cap)
{
	const char *q = memchr(path, '?', plen);
	size_t head = q ? (size_t)(q - path) : plen;
	struct http_qkv p[HTTP_QUERY_MAX_PARAMS];
	size_t n = 0;
	/* the query's parameters that stay: neither set nor removed */
	if (q) {
		size_t i = head + 1;
		while (i < plen) {
			const char *s = path + i;
			const char *amp = memchr(s, '&', plen - i);
			size_t len = amp ? (size_t)(amp - s) : plen - i;
			const char *eq = memchr(s, '=', len);
			struct http_qkv kv = {s, eq ? eq + 1 : "",
					      eq ? (uint32_t)(eq - s) : (uint32_t)len,
					      eq ? (uint32_t)(len - (size_t)(eq - s) - 1) : 0};
			if (!listed(set, nset, kv.k, kv.kl) && !listed(rm, nrm, kv.k, kv.kl)) {
				if (n == HTTP_QUERY_MAX_PARAMS)
					return -E2BIG;
				p[n++] = kv;
			}
			i += len + 1;
		}
	}
	/* the keys set, each once (its last value), unless removed */
	for (size_t i = 0; i < nset; i++) {
		if (listed(rm, nrm, set[i].k, set[i].kl) ||
		    listed(set + i + 1, nset - i - 1, set[i].k, set[i].kl))
			continue;
		if (n == HTTP_QUERY_MAX_PARAMS)
			return -E2BIG;
		p[n++] = set[i];
	}
	/* byte order of keys, a key's values in their order: a stable
	 * insertion sort (n is bounded) */
	for (size_t i = 1; i < n; i++) {
		struct http_qkv x = p[i];
		size_t j = i;
		while (j > 0 && key_cmp(&p[j - 1], &x) > 0) {
			p[j] = p[j - 1];
			j--;
		}
		p[j] = x;
	}
	size_t need = head;
	for (size_t i = 0; i < n; i++)
		need += 1 + (size_t)p[i].kl + 1 + p[i].vl;
	if (!out)
		return (long)need;
	if (need > cap)
		return -ENOSPC;
	if (head)
		memcpy(out, path, head);
	size_t at = head;
	for (size_t i = 0; i < n; i++) {
		out[at++] = i ? '&' : '?';
		if (p[i].kl)
			memcpy(out + at, p[i].k, p[i].kl);
		at += p[i].kl;
		out[at++] = '=';
		if (p[i].vl)
			memcpy(out + at, p[i].v, p[i].vl);
		at += p[i].vl;
	}
	return (long)at;
}
