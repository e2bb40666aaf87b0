/*
 * Worker-side lookups in a generation: listeners, filter chains, virtual
 * hosts and routes, clusters with their endpoints, secrets. Nothing here
 * allocates, locks or writes shared memory.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "arn_config_model.h"
#include "arn_regex.h"
#include "config_int.h"
#include "hamt.h"

uint64_t arn_cfg_gen_type_changed(const struct arn_cfg_gen *g, enum arn_cfg_type t)
{
	return g && (unsigned)t < ARN_CFG_NTYPES ? g->changed[t] : 0;
}

struct arn_hamt *arn_cfg_gen_trie(const struct arn_cfg_gen *g, enum arn_cfg_type t)
{
	return g && (unsigned)t < ARN_CFG_NTYPES ? g->roots[t] : NULL;
}

const void *arn_cfg_find(const struct arn_cfg_gen *g, enum arn_cfg_type t, const char *name,
			 size_t len, uint64_t hash)
{
	if ((unsigned)t >= ARN_CFG_NTYPES)
		return NULL;
	return arn_hamt_get(g->roots[t], name, len, hash);
}

const struct arn_cfg_listener *arn_cfg_listener_find(const struct arn_cfg_gen *g, uint32_t addr,
						     uint16_t port)
{
	const struct arn_cfg_lindex *x = g->lindex;
	if (!x)
		return NULL;
	size_t lo = 0, hi = x->n;
	while (lo < hi) { /* first with l->port >= port */
		size_t mid = (lo + hi) / 2;
		if (x->l[mid]->port < port)
			lo = mid + 1;
		else
			hi = mid;
	}
	const struct arn_cfg_listener *any = NULL;
	for (size_t i = lo; i < x->n && x->l[i]->port == port; i++) {
		if (x->l[i]->addr == addr)
			return x->l[i];
		if (x->l[i]->addr == 0)
			any = x->l[i];
	}
	return any;
}

size_t arn_cfg_listener_foreach(const struct arn_cfg_gen *g,
				void (*fn)(void *ctx, const struct arn_cfg_listener *l), void *ctx)
{
	if (!g->lindex)
		return 0;
	for (size_t i = 0; i < g->lindex->n; i++)
		fn(ctx, g->lindex->l[i]);
	return g->lindex->n;
}

struct cl_each {
	void (*fn)(void *ctx, const struct arn_cfg_cluster *c);
	void *ctx;
	size_t n;
};

static void cl_each_fn(void *ctx, struct arn_cfg_obj *o)
{
	struct cl_each *e = ctx;
	e->fn(e->ctx, (const struct arn_cfg_cluster *)(const void *)o);
	e->n++;
}

size_t arn_cfg_cluster_foreach(const struct arn_cfg_gen *g,
			       void (*fn)(void *ctx, const struct arn_cfg_cluster *c), void *ctx)
{
	struct cl_each e = {fn, ctx, 0};
	arn_hamt_foreach(g->roots[ARN_CFG_CLUSTER], cl_each_fn, &e);
	return e.n;
}

const struct arn_cfg_route_table *arn_cfg_hcm_routes(const struct arn_cfg_gen *g,
						     const struct arn_cfg_hcm *h)
{
	if (h->inline_routes)
		return h->inline_routes;
	if (!h->rds.len)
		return NULL;
	return (const void *)arn_hamt_get(g->roots[ARN_CFG_ROUTE], h->rds.name, h->rds.len,
					  h->rds.hash);
}

/* Endpoints of an EDS cluster whose ClusterLoadAssignment has not arrived
 * (warming ended on timeout) or was removed: no hosts, 503 UH. Its count
 * never reaches zero, so pinning it is harmless. */
static struct arn_cfg_endpoints no_endpoints = {
    .obj = {.refs = 1u << 30, .type = ARN_CFG_CLA, .name = "", .name_len = 0},
    .overprovisioning_factor = 140,
};

int arn_cfg_cluster_resolve(const struct arn_cfg_gen *g, const struct arn_cfg_ref *name,
			    struct arn_cfg_cluster_view *out)
{
	const struct arn_cfg_cluster *c = (const void *)arn_hamt_get(
	    g->roots[ARN_CFG_CLUSTER], name->name, name->len, name->hash);
	if (!c)
		return -ENOENT;
	out->cluster = c;
	if (c->static_endpoints) {
		out->endpoints = c->static_endpoints;
	} else {
		const struct arn_cfg_endpoints *e = (const void *)arn_hamt_get(
		    g->roots[ARN_CFG_CLA], c->obj.name, c->obj.name_len, c->obj.hash);
		out->endpoints = e ? e : &no_endpoints;
	}
	return 0;
}

const struct arn_cfg_secret *arn_cfg_secret_find(const struct arn_cfg_gen *g,
						 const struct arn_cfg_ref *name)
{
	return (const void *)arn_hamt_get(g->roots[ARN_CFG_SECRET], name->name, name->len,
					  name->hash);
}

const struct arn_cfg_toolset *arn_cfg_toolset_find(const struct arn_cfg_gen *g,
						   const struct arn_cfg_ref *name)
{
	return (const void *)arn_hamt_get(g->roots[ARN_CFG_TOOLSET], name->name, name->len,
					  name->hash);
}

/* ---- string matching ---------------------------------------------------- */

static bool mem_eq(const char *a, const char *b, size_t n, bool icase)
{
	return icase ? strncasecmp(a, b, n) == 0 : memcmp(a, b, n) == 0;
}

static bool contains(const char *h, size_t hn, const char *n, size_t nn, bool icase)
{
	if (nn == 0)
		return true;
	for (size_t i = 0; i + nn <= hn; i++)
		if (mem_eq(h + i, n, nn, icase))
			return true;
	return false;
}

bool arn_cfg_str_match(const struct arn_cfg_str_match *m, const char *v, size_t n)
{
	switch (m->kind) {
	case ARN_CFG_STR_EXACT:
		return n == m->len && mem_eq(v, m->s, n, m->ignore_case);
	case ARN_CFG_STR_PREFIX:
		return n >= m->len && mem_eq(v, m->s, m->len, m->ignore_case);
	case ARN_CFG_STR_SUFFIX:
		return n >= m->len && mem_eq(v + n - m->len, m->s, m->len, m->ignore_case);
	case ARN_CFG_STR_CONTAINS:
		return contains(v, n, m->s, m->len, m->ignore_case);
	case ARN_CFG_STR_REGEX:
		return m->re && arn_regex_full_match(m->re, v, n);
	default:
		return false;
	}
}

/* ---- routes --------------------------------------------------------------- */

static uint64_t hash_lower(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 'A' && c <= 'Z')
			c += 32;
		h ^= c;
		h *= 0x100000001b3ull;
	}
	return h;
}

size_t arn_cfg_host_without_port(const char *host, size_t len, uint32_t *port)
{
	size_t i = len;
	if (port)
		*port = 0;
	while (i > 0 && host[i - 1] >= '0' && host[i - 1] <= '9')
		i--;
	if (i == 0 || i == len || host[i - 1] != ':')
		return len;
	/* "[v6]:port" or "name:port", but not a bare IPv6 literal "::1" */
	if (host[0] != '[' && memchr(host, ':', i - 1))
		return len;
	if (host[0] == '[' && host[i - 2] != ']')
		return len;
	if (port) {
		uint32_t p = 0;
		for (size_t k = i; k < len && p <= 65535; k++)
			p = p * 10 + (uint32_t)(host[k] - '0');
		*port = p;
	}
	return i - 1;
}

static int find_vhost(const struct arn_cfg_route_table *rt, const char *host, size_t hn)
{
	if (rt->n_vhosts == 0)
		return -1;
	if (rt->ignore_port_in_host_matching)
		hn = arn_cfg_host_without_port(host, hn, NULL);
	if (rt->n_exact_slots) {
		size_t mask = rt->n_exact_slots - 1;
		for (size_t h = (size_t)hash_lower(host, hn) & mask; rt->exact[h].s;
		     h = (h + 1) & mask)
			if (rt->exact[h].len == hn && strncasecmp(rt->exact[h].s, host, hn) == 0)
				return (int)rt->exact[h].vhost;
	}
	/* wildcards must match at least one character */
	for (size_t i = 0; i < rt->n_suffix; i++) {
		const struct arn_cfg_domain *d = &rt->suffix[i];
		if (hn > d->len && strncasecmp(host + hn - d->len, d->s, d->len) == 0)
			return (int)d->vhost;
	}
	for (size_t i = 0; i < rt->n_prefix; i++) {
		const struct arn_cfg_domain *d = &rt->prefix[i];
		if (hn > d->len && strncasecmp(host, d->s, d->len) == 0)
			return (int)d->vhost;
	}
	return rt->default_vhost;
}

/* Value of a request header (several occurrences joined by ","), with
 * pseudo-headers mapped to the request line. */
static bool header_value(const struct arn_cfg_request *req, const char *name, size_t nlen,
			 char *buf, size_t cap, const char **v, size_t *vlen)
{
	if (nlen && name[0] == ':') {
		if (nlen == 7 && memcmp(name, ":method", 7) == 0) {
			*v = req->method;
			*vlen = req->method_len;
			return req->method != NULL;
		}
		if (nlen == 10 && memcmp(name, ":authority", 10) == 0) {
			*v = req->authority;
			*vlen = req->authority_len;
			return req->authority != NULL;
		}
		if (nlen == 5 && memcmp(name, ":path", 5) == 0) {
			*v = req->path;
			*vlen = req->path_len;
			return req->path != NULL;
		}
		return false;
	}
	const struct arn_cfg_header *hs = req->headers;
	size_t nh = req->n_headers;
	if (!hs && req->headers_fn)
		hs = req->headers_fn(req->headers_ctx, &nh);
	bool found = false;
	size_t used = 0;
	for (size_t i = 0; i < nh; i++) {
		const struct arn_cfg_header *h = &hs[i];
		if (h->name_len != nlen || strncasecmp(h->name, name, nlen) != 0)
			continue;
		if (!found) {
			*v = h->value;
			*vlen = h->value_len;
			found = true;
			continue;
		}
		/* second occurrence: join into buf (truncated at cap) */
		if (used == 0) {
			used = *vlen < cap ? *vlen : cap;
			memcpy(buf, *v, used);
		}
		if (used < cap)
			buf[used++] = ',';
		size_t k = h->value_len < cap - used ? h->value_len : cap - used;
		memcpy(buf + used, h->value, k);
		used += k;
		*v = buf;
		*vlen = used;
	}
	return found;
}

/*
 * A header value as a range_match operand: an optional sign and decimal
 * digits, nothing else, within int64_t. The value is the client's, so a
 * number past the type's range is "not a number" (no match), never an
 * overflow: the magnitude is built in uint64_t and checked against 2^63
 * (negative) or 2^63 - 1 before every step.
 */
static bool parse_i64(const char *s, size_t n, int64_t *out)
{
	size_t i = 0;
	bool neg = false;
	if (n > 0 && (s[0] == '-' || s[0] == '+')) {
		neg = s[0] == '-';
		i = 1;
	}
	if (i == n)
		return false;
	const uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	uint64_t v = 0;
	for (; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (limit - d) / 10)
			return false;
		v = v * 10 + d;
	}
	/* v <= 2^63 here, so v - 1 fits: -(2^63) comes out as INT64_MIN */
	*out = v == 0 ? 0 : neg ? -(int64_t)(v - 1) - 1 : (int64_t)v;
	return true;
}

bool arn_cfg_header_match_value(const struct arn_cfg_header_match *m, bool present, const char *v,
				size_t vlen)
{
	bool r;
	if (m->kind == ARN_CFG_HDR_PRESENT) {
		r = present == m->present;
	} else {
		if (!present && m->missing_as_empty) {
			v = "";
			vlen = 0;
			present = true;
		}
		if (!present) {
			/* a missing header never matches, inverted or not (Envoy) */
			return false;
		}
		if (m->kind == ARN_CFG_HDR_RANGE) {
			int64_t x;
			r = parse_i64(v, vlen, &x) && x >= m->start && x < m->end;
		} else {
			r = arn_cfg_str_match(&m->str, v, vlen);
		}
	}
	return r != m->invert;
}

static bool header_matches(const struct arn_cfg_header_match *m, const struct arn_cfg_request *req)
{
	char buf[4096];
	const char *v = NULL;
	size_t vlen = 0;
	bool present = header_value(req, m->name, m->name_len, buf, sizeof(buf), &v, &vlen);
	return arn_cfg_header_match_value(m, present, v, vlen);
}

bool arn_cfg_headers_match(const struct arn_cfg_header_match *m, size_t n,
			   const struct arn_cfg_request *req)
{
	for (size_t i = 0; i < n; i++)
		if (!header_matches(&m[i], req))
			return false;
	return true;
}

static bool query_matches(const struct arn_cfg_query_match *m, const char *q, size_t qn)
{
	size_t i = 0;
	while (i < qn) {
		size_t j = i;
		while (j < qn && q[j] != '&')
			j++;
		size_t eq = i;
		while (eq < j && q[eq] != '=')
			eq++;
		if (eq - i == m->name_len && memcmp(q + i, m->name, m->name_len) == 0) {
			if (m->present_only)
				return true;
			const char *v = eq < j ? q + eq + 1 : "";
			size_t vn = eq < j ? j - eq - 1 : 0;
			return arn_cfg_str_match(&m->str, v, vn); /* the first occurrence decides */
		}
		i = j + 1;
	}
	return false;
}

/* mem_eq for a route's path literal: one of up to 8 bytes (a route's "/"
 * or "/api", the common case) compared inline, ASCII letters folded when
 * @p icase as strncasecmp folds them in the C locale; the libc call cost
 * more than the bytes (bench_hcm: ~17 instructions for "/"). */
static inline bool path_eq(const char *a, const char *b, size_t n, bool icase)
{
	if (n > 8)
		return mem_eq(a, b, n, icase);
	for (size_t i = 0; i < n; i++) {
		unsigned char x = (unsigned char)a[i], y = (unsigned char)b[i];
		if (x == y)
			continue;
		if (!icase)
			return false;
		if (x >= 'A' && x <= 'Z')
			x = (unsigned char)(x + 32);
		if (y >= 'A' && y <= 'Z')
			y = (unsigned char)(y + 32);
		if (x != y)
			return false;
	}
	return true;
}

static bool route_matches(const struct arn_cfg_route *r, const struct arn_cfg_request *req,
			  const char *path, size_t pn, const char *query, size_t qn)
{
	switch (r->path_kind) {
	case ARN_CFG_PATH_PREFIX:
		if (pn < r->path_len || !path_eq(path, r->path, r->path_len, !r->case_sensitive))
			return false;
		break;
	case ARN_CFG_PATH_EXACT:
		if (pn != r->path_len || !path_eq(path, r->path, pn, !r->case_sensitive))
			return false;
		break;
	case ARN_CFG_PATH_SEPARATED_PREFIX:
		if (pn < r->path_len || !path_eq(path, r->path, r->path_len, !r->case_sensitive))
			return false;
		if (pn > r->path_len && path[r->path_len] != '/')
			return false;
		break;
	case ARN_CFG_PATH_REGEX:
		if (!arn_regex_full_match(r->path_re, path, pn))
			return false;
		break;
	}
	for (size_t i = 0; i < r->n_headers; i++)
		if (!header_matches(&r->headers[i], req))
			return false;
	for (size_t i = 0; i < r->n_query; i++)
		if (!query_matches(&r->query[i], query, qn))
			return false;
	if (r->grpc_only) {
		char buf[256];
		const char *v;
		size_t vn;
		if (!header_value(req, "content-type", 12, buf, sizeof(buf), &v, &vn) || vn < 16 ||
		    strncasecmp(v, "application/grpc", 16) != 0)
			return false;
	}
	return true;
}

/* Bytes equal to '?' or '#' in a word, as their high bits: the lowest
 * one is exact (a false mark only ever sits above a true one). */
static inline uint64_t qh_bytes(uint64_t w)
{
	const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
	uint64_t q = w ^ ('?' * ones), h = w ^ ('#' * ones);
	return (((q - ones) & ~q) | ((h - ones) & ~h)) & high;
}

/* The path's length before its query or fragment: 8 bytes a step (a
 * byte loop cost about 7 instructions a byte for every request), a short
 * path as two overlapping 4-byte words; nothing outside [p, p + n). */
static size_t path_len(const char *p, size_t n)
{
	size_t i = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint64_t w, m;
	for (; n - i >= 8; i += 8) {
		memcpy(&w, p + i, 8);
		if ((m = qh_bytes(w)) != 0)
			return i + (size_t)__builtin_ctzll(m) / 8;
	}
	size_t left = n - i;
	if (left >= 4) {
		/* bytes i..i+3 low, i+left-4..i+left-1 high: the first mark is
		 * the first such byte (the overlap is in the low half too) */
		uint32_t a, b;
		memcpy(&a, p + i, 4);
		memcpy(&b, p + i + left - 4, 4);
		m = qh_bytes((uint64_t)b << 32 | a);
		if (!m)
			return n;
		size_t k = (size_t)__builtin_ctzll(m) / 8;
		return k < 4 ? i + k : i + left - 8 + k;
	}
#endif
	while (i < n && p[i] != '?' && p[i] != '#')
		i++;
	return i;
}

bool arn_cfg_route_matches(const struct arn_cfg_route *r, const struct arn_cfg_request *req)
{
	const char *path = req->path ? req->path : "";
	size_t plen = req->path ? req->path_len : 0;
	size_t pn = path_len(path, plen);
	const char *query = "";
	size_t qn = 0;
	if (pn < plen && path[pn] == '?') {
		query = path + pn + 1;
		qn = plen - pn - 1;
		const char *hash = memchr(query, '#', qn);
		if (hash)
			qn = (size_t)(hash - query);
	}
	return route_matches(r, req, path, pn, query, qn);
}

int arn_cfg_route_match(const struct arn_cfg_route_table *rt, const struct arn_cfg_request *req,
			struct arn_cfg_route_match *out)
{
	out->vhost = NULL;
	out->route = NULL;
	int vi = find_vhost(rt, req->authority ? req->authority : "",
			    req->authority ? req->authority_len : 0);
	if (vi < 0)
		return -ENOENT;
	const struct arn_cfg_vhost *vh = &rt->vhosts[vi];
	out->vhost = vh;
	const char *path = req->path ? req->path : "";
	size_t plen = req->path ? req->path_len : 0;
	size_t pn = path_len(path, plen);
	const char *query = "";
	size_t qn = 0;
	if (pn < plen && path[pn] == '?') {
		query = path + pn + 1;
		qn = plen - pn - 1;
		const char *hash = memchr(query, '#', qn);
		if (hash)
			qn = (size_t)(hash - query);
	}
	const struct arn_cfg_route_index *ix = vh->index;
	if (!ix) {
		for (size_t i = 0; i < vh->n_routes; i++) {
			if (route_matches(&vh->routes[i], req, path, pn, query, qn)) {
				out->route = &vh->routes[i];
				return 0;
			}
		}
		return -ESRCH;
	}
	/* candidates: routes whose literal prefix the path starts with, and
	 * those without one; checked in configuration order */
	uint64_t cand[ARN_CFG_INDEX_MAX_ROUTES / 64];
	size_t words = (vh->n_routes + 63) / 64;
	memset(cand, 0, words * sizeof(uint64_t));
	for (uint32_t k = 0; k < ix->n_always; k++)
		cand[ix->always[k] / 64] |= 1ull << (ix->always[k] % 64);
	uint32_t node = 0;
	for (size_t i = 0;; i++) {
		const struct arn_cfg_rtrie_node *nd = &ix->nodes[node];
		for (uint32_t k = 0; k < nd->n_routes; k++) {
			uint32_t r = ix->route_ids[nd->routes + k];
			cand[r / 64] |= 1ull << (r % 64);
		}
		if (i >= pn)
			break;
		unsigned char ch = (unsigned char)path[i];
		if (ch >= 'A' && ch <= 'Z')
			ch += 32;
		uint32_t child = nd->first_child;
		while (child && ix->nodes[child].byte < ch)
			child = ix->nodes[child].next_sibling;
		if (!child || ix->nodes[child].byte != ch)
			break;
		node = child;
	}
	for (size_t w = 0; w < words; w++) {
		uint64_t bits = cand[w];
		while (bits) {
			size_t i = w * 64 + (size_t)__builtin_ctzll(bits);
			bits &= bits - 1;
			if (route_matches(&vh->routes[i], req, path, pn, query, qn)) {
				out->route = &vh->routes[i];
				return 0;
			}
		}
	}
	return -ESRCH;
}

int arn_cfg_route_cluster(const struct arn_cfg_route_action *a, const struct arn_cfg_request *req,
			  struct arn_cfg_ref *out)
{
	switch (a->spec) {
	case ARN_CFG_CLUSTER_NAME:
		*out = a->cluster;
		return 0;
	case ARN_CFG_CLUSTER_HEADER: {
		char buf[256];
		const char *v;
		size_t vn;
		if (!header_value(req, a->cluster.name, a->cluster.len, buf, sizeof(buf), &v,
				  &vn) ||
		    vn == 0)
			return -ENOENT;
		out->name = v;
		out->len = vn;
		out->hash = arn_cfg_hash(v, vn);
		return 0;
	}
	default: {
		if (a->n_weighted == 0 || a->total_weight == 0)
			return -ENOENT;
		uint64_t pick = req->random % a->total_weight;
		for (size_t i = 0; i < a->n_weighted; i++) {
			if (pick < a->weighted[i].weight) {
				*out = a->weighted[i].cluster;
				return 0;
			}
			pick -= a->weighted[i].weight;
		}
		*out = a->weighted[a->n_weighted - 1].cluster;
		return 0;
	}
	}
}

int arn_cfg_route_rewrite_path(const struct arn_cfg_route *r, const char *path, size_t len,
			       char *buf, size_t cap)
{
	const struct arn_cfg_route_action *a = &r->route;
	if (r->action != ARN_CFG_ACTION_ROUTE || (!a->prefix_rewrite && !a->regex_rewrite))
		return 0;
	size_t pn = 0;
	while (pn < len && path[pn] != '?')
		pn++;
	size_t o;
	if (a->regex_rewrite) {
		long n =
		    arn_regex_replace(a->regex_rewrite, path, pn, a->regex_substitution, buf, cap);
		if (n < 0)
			return -ENOSPC;
		o = (size_t)n;
	} else {
		/* the part the route matched is replaced: the prefix, or the whole
		 * path for exact and regex matches */
		size_t matched = (r->path_kind == ARN_CFG_PATH_PREFIX ||
				  r->path_kind == ARN_CFG_PATH_SEPARATED_PREFIX)
				     ? r->path_len
				     : pn;
		if (matched > pn)
			matched = pn;
		if (a->prefix_rewrite_len + (pn - matched) >= cap)
			return -ENOSPC;
		memcpy(buf, a->prefix_rewrite, a->prefix_rewrite_len);
		memcpy(buf + a->prefix_rewrite_len, path + matched, pn - matched);
		o = a->prefix_rewrite_len + (pn - matched);
	}
	if (o + (len - pn) >= cap)
		return -ENOSPC;
	memcpy(buf + o, path + pn, len - pn);
	o += len - pn;
	buf[o] = 0;
	return (int)o;
}

/* ---- filter chains ---------------------------------------------------------- */

/* Longest prefix: the prefix length + 1, 0 without prefixes (which Envoy
 * files as 0.0.0.0/0: an empty list and a /0 are equally unspecific).
 * IPv6 ranges hold no IPv4 address (Envoy's LcTrie keeps them in a trie
 * of their own that an IPv4 address never looks up), so a list of only
 * IPv6 ranges is -1 for every IPv4 address: only an empty list is "any"
 * (Envoy's makeCidrListEntry files the empty list alone as the catch-all). */
static int cidr_score(const struct arn_cfg_cidr *c, size_t n, uint32_t addr)
{
	if (n == 0)
		return 0;
	int best = -1;
	for (size_t i = 0; i < n; i++)
		if (arn_cfg_cidr_has4(&c[i], addr) && (int)c[i].len > best)
			best = c[i].len;
	return best;
}

/* Exact name, else the longest "*.suffix" Envoy finds by stripping labels
 * from the left, else the chains without server_names. */
static int sni_score(const struct arn_cfg_fc_match *m, const struct arn_cfg_fc_input *in)
{
	if (m->n_server_names == 0)
		return 0;
	if (!in->server_name || in->server_name_len == 0)
		return -1;
	int best = -1;
	for (size_t i = 0; i < m->n_server_names; i++) {
		const char *s = m->server_names[i];
		size_t sl = strlen(s);
		if (s[0] == '*') {
			/* "*.example.com" matches "a.example.com", longer is more specific */
			size_t suf = sl - 1;
			if (in->server_name_len > suf &&
			    strncasecmp(in->server_name + in->server_name_len - suf, s + 1, suf) ==
				0 &&
			    (int)suf > best)
				best = (int)suf;
		} else if (sl == in->server_name_len && strncasecmp(s, in->server_name, sl) == 0) {
			return 1 << 20;
		}
	}
	return best;
}

/* Envoy tries the client's ALPN names in the client's order and takes the
 * first some chain lists: earlier in the client's list scores higher. */
static int alpn_score(const struct arn_cfg_fc_match *m, const struct arn_cfg_fc_input *in)
{
	if (m->n_alpn == 0)
		return 0;
	for (size_t j = 0; j < in->n_alpn && j < 1000; j++)
		for (size_t i = 0; i < m->n_alpn; i++)
			if (strcmp(m->alpn[i], in->alpn[j]) == 0)
				return 1000 - (int)j;
	return -1;
}

/* SAME_IP_OR_LOOPBACK: the peer is the local address or on 127/8. */
static int source_type_score(const struct arn_cfg_fc_match *m, const struct arn_cfg_fc_input *in)
{
	if (m->source_type == ARN_CFG_SOURCE_ANY)
		return 0;
	bool local = in->src_addr == in->dst_addr || (in->src_addr >> 24) == 127;
	return (m->source_type == ARN_CFG_SOURCE_LOCAL) == local ? 1 : -1;
}

enum {
	STEP_DST_PORT = 0,
	STEP_DST_IP,
	STEP_SERVER_NAME,
	STEP_TRANSPORT,
	STEP_ALPN,
	STEP_DIRECT_SRC_IP,
	STEP_SRC_TYPE,
	STEP_SRC_IP,
	STEP_SRC_PORT,
	STEP__COUNT,
};

static int chain_score(const struct arn_cfg_fc_match *m, const struct arn_cfg_fc_input *in,
		       int step)
{
	switch (step) {
	case STEP_DST_PORT:
		return m->dst_port == 0 ? 0 : m->dst_port == in->dst_port ? 1 : -1;
	case STEP_DST_IP:
		return cidr_score(m->dst_prefixes, m->n_dst_prefixes, in->dst_addr);
	case STEP_SERVER_NAME:
		return sni_score(m, in);
	case STEP_TRANSPORT: {
		if (!m->transport_protocol)
			return 0;
		const char *tp = in->transport_protocol ? in->transport_protocol : "raw_buffer";
		return strcmp(m->transport_protocol, tp) == 0 ? 1 : -1;
	}
	case STEP_ALPN:
		return alpn_score(m, in);
	case STEP_DIRECT_SRC_IP:
		/* the TCP peer, even when a PROXY header gave the source */
		return cidr_score(m->direct_src_prefixes, m->n_direct_src_prefixes,
				  in->direct_src_addr ? in->direct_src_addr : in->src_addr);
	case STEP_SRC_TYPE:
		return source_type_score(m, in);
	case STEP_SRC_IP:
		return cidr_score(m->src_prefixes, m->n_src_prefixes, in->src_addr);
	default:
		if (m->n_src_ports == 0)
			return 0;
		for (size_t i = 0; i < m->n_src_ports; i++)
			if (m->src_ports[i] == in->src_port)
				return 1;
		return -1;
	}
}

const struct arn_cfg_filter_chain *arn_cfg_filter_chain_select(const struct arn_cfg_listener *l,
							       const struct arn_cfg_fc_input *in)
{
	/* candidates as a bitmap on the stack; listeners have at most
	 * ARN_CFG_MAX_CHAINS chains (checked at conversion) */
	uint64_t cand[ARN_CFG_MAX_CHAINS / 64];
	size_t n = l->n_chains, words = (n + 63) / 64;
	if (n == 0)
		return l->default_chain;
	for (size_t w = 0; w < words; w++)
		cand[w] = ~0ull;
	if (n % 64)
		cand[words - 1] = (1ull << (n % 64)) - 1;
	for (int step = 0; step < STEP__COUNT; step++) {
		int best = -1;
		for (size_t i = 0; i < n; i++) {
			if (!(cand[i / 64] >> (i % 64) & 1))
				continue;
			int s = chain_score(&l->chains[i].match, in, step);
			if (s < 0)
				cand[i / 64] &= ~(1ull << (i % 64));
			else if (s > best)
				best = s;
		}
		if (best < 0)
			return l->default_chain;
		for (size_t i = 0; i < n; i++)
			if ((cand[i / 64] >> (i % 64) & 1) &&
			    chain_score(&l->chains[i].match, in, step) != best)
				cand[i / 64] &= ~(1ull << (i % 64));
	}
	for (size_t i = 0; i < n; i++)
		if (cand[i / 64] >> (i % 64) & 1)
			return &l->chains[i];
	return l->default_chain;
}

/* ---- upgrades ---------------------------------------------------------------- */

static const struct arn_cfg_upgrade *upgrade_find(const struct arn_cfg_upgrade *u, size_t n,
						  const char *type, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (u[i].len == len && strncasecmp(u[i].type, type, len) == 0)
			return &u[i];
	return NULL;
}

bool arn_cfg_upgrade_allowed(const struct arn_cfg_hcm *h, const struct arn_cfg_route_action *a,
			     const char *type, size_t len)
{
	/* Envoy's HttpConnectionManagerConfig::createUpgradeFilterChain: the
	 * route's entry decides when it names the type, either way */
	const struct arn_cfg_upgrade *u =
	    a ? upgrade_find(a->upgrades, a->n_upgrades, type, len) : NULL;
	if (u)
		return u->enabled;
	u = h ? upgrade_find(h->upgrades, h->n_upgrades, type, len) : NULL;
	return u && u->enabled;
}

/* ---- typed_per_filter_config ------------------------------------------------- */

static const void *per_filter(const struct arn_cfg_per_filter *pf, size_t n, const char *name,
			      size_t len, enum arn_cfg_per_filter_kind kind)
{
	for (size_t i = 0; name && i < n; i++)
		if (pf[i].kind == kind && pf[i].name_len == len &&
		    memcmp(pf[i].name, name, len) == 0)
			return pf[i].cfg;
	return NULL;
}

const void *arn_cfg_per_filter_find(const struct arn_cfg_vhost *vh, const struct arn_cfg_route *r,
				    const char *name, size_t len, enum arn_cfg_per_filter_kind kind)
{
	const void *cfg = r ? per_filter(r->per_filter, r->n_per_filter, name, len, kind) : NULL;
	if (!cfg && vh)
		cfg = per_filter(vh->per_filter, vh->n_per_filter, name, len, kind);
	if (!cfg && vh)
		cfg = per_filter(vh->rc_per_filter, vh->n_rc_per_filter, name, len, kind);
	return cfg;
}

/* Level @p pf's opinion of filter @p name: -1 none, 1 off, 0 on. */
static int filter_opinion(const struct arn_cfg_per_filter *pf, size_t n, const char *name,
			  size_t len)
{
	for (size_t i = 0; name && i < n; i++)
		if (pf[i].name_len == len && memcmp(pf[i].name, name, len) == 0)
			return pf[i].kind == ARN_CFG_PF_DISABLED;
	return -1;
}

bool arn_cfg_filter_off(const struct arn_cfg_vhost *vh, const struct arn_cfg_route *r,
			const char *name, size_t len, bool dflt)
{
	int o = r ? filter_opinion(r->per_filter, r->n_per_filter, name, len) : -1;
	if (o < 0 && vh)
		o = filter_opinion(vh->per_filter, vh->n_per_filter, name, len);
	if (o < 0 && vh)
		o = filter_opinion(vh->rc_per_filter, vh->n_rc_per_filter, name, len);
	return o < 0 ? dflt : o == 1;
}

bool arn_cfg_cmp_on_route(const struct arn_cfg_compressor *f, bool toggles,
			  const struct arn_cfg_vhost *vh, const struct arn_cfg_route *r,
			  const struct arn_cfg_compressor_route **pr)
{
	size_t len = f->filter_name ? strlen(f->filter_name) : 0;
	*pr = NULL;
	if ((f->off || toggles) && len && arn_cfg_filter_off(vh, r, f->filter_name, len, f->off))
		return false;
	if (len && vh)
		*pr = arn_cfg_per_filter_find(vh, r, f->filter_name, len, ARN_CFG_PF_COMPRESSOR);
	return true;
}

bool arn_cfg_cmp_strip_accept_encoding(const struct arn_cfg_hcm *h,
				       const struct arn_cfg_route_table *rt,
				       const struct arn_cfg_vhost *vh,
				       const struct arn_cfg_route *r)
{
	bool toggles = rt && rt->filter_toggles;
	for (size_t i = 0; i < h->n_compressors; i++) {
		const struct arn_cfg_compressor *f = &h->compressors[i];
		const struct arn_cfg_compressor_route *p;
		if (!arn_cfg_cmp_on_route(f, toggles, vh, r, &p))
			continue;
		bool on = p && p->enable >= 0 ? p->enable : f->enabled;
		bool strip = p && p->remove_ae >= 0 ? p->remove_ae : f->remove_accept_encoding;
		if (on && strip)
			return true;
	}
	return false;
}

size_t arn_cfg_cors_policies(const struct arn_cfg_vhost *vh, const struct arn_cfg_route *r,
			     const char *name, size_t len, const struct arn_cfg_cors *out[3])
{
	size_t n = 0;
	const struct arn_cfg_cors *p =
	    r ? per_filter(r->per_filter, r->n_per_filter, name, len, ARN_CFG_PF_CORS) : NULL;
	if (p)
		out[n++] = p;
	p = vh ? per_filter(vh->per_filter, vh->n_per_filter, name, len, ARN_CFG_PF_CORS) : NULL;
	if (p)
		out[n++] = p;
	p = vh ? per_filter(vh->rc_per_filter, vh->n_rc_per_filter, name, len, ARN_CFG_PF_CORS)
	       : NULL;
	if (p)
		out[n++] = p;
	if (n)
		return n;
	/* Envoy: without a per-filter policy at any level, the route's
	 * and the virtual host's cors fields */
	if (r && r->cors)
		out[n++] = r->cors;
	if (vh && vh->cors)
		out[n++] = vh->cors;
	return n;
}

const struct arn_cfg_filter_chain *arn_cfg_filter_chain_kept(const struct arn_cfg_listener *was,
							     const struct arn_cfg_filter_chain *fc,
							     const struct arn_cfg_listener *now)
{
	/* 0: a hash that could not be computed, never equal to anything */
	if (!was || !fc || !now || !fc->hash || !was->base_hash || was->base_hash != now->base_hash)
		return NULL;
	/* a linear walk: at most ARN_CFG_MAX_CHAINS, once per connection
	 * per listener change (at its next response or when it is idle) */
	for (size_t i = 0; i < now->n_chains; i++)
		if (now->chains[i].hash == fc->hash)
			return &now->chains[i];
	if (now->default_chain && now->default_chain->hash == fc->hash)
		return now->default_chain;
	return NULL;
}
