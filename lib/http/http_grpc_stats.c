/*
 * gRPC call outcomes per cluster (and per method): see http_grpc_stats.h.
 */
#include "http_grpc_stats.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arn_config.h"
#include "arn_stats.h"
#include "http_filter.h"
#include "http_int.h"
#include "http_stream.h"
#include "http_worker.h"

enum {
	G_SUCCESS = 0,
	G_FAILURE,
	G_TOTAL,
	G_STATUS0, /* grpc-status 0 .. 16, then "other" */
	G_OTHER = G_STATUS0 + 17,
	G_COUNT,
};

struct http_grpc_row {
	uint64_t hash;
	uint32_t clen, mlen;
	char cluster[HTTP_GRPC_STATS_NAME_MAX + 1];
	char method[HTTP_GRPC_STATS_NAME_MAX + 1]; /* "<service>.<method>", or "" */
	uint64_t c[G_COUNT];			   /* this worker's only; relaxed */
};

#define ROWS (HTTP_GRPC_STATS_METHODS + HTTP_GRPC_STATS_CLUSTERS)

struct http_grpc_table {
	/* odd while the worker frees rows (a sweep moves them): the pull
	 * copies the table and keeps the copy only when seq was even and
	 * unchanged around it */
	uint32_t seq;
	uint32_t n;	    /* rows published: [0, n) are complete (release/acquire) */
	uint32_t n_methods; /* of them, with a method */
	uint64_t overflow;  /* calls whose row did not fit (relaxed) */
	struct http_grpc_row rows[ROWS];
};

/* the pull finds the tables here; set and cleared with the worker */
static struct http_grpc_table *tables[ARN_STATS_MAX_WORKERS];
/* the pull's copies of them (control lcore only; freed at stop) */
static struct http_grpc_table *snap[ARN_STATS_MAX_WORKERS];

int http_grpc_stats_worker_init(struct http_worker *w)
{
	w->grpc = calloc(1, sizeof(*w->grpc));
	if (!w->grpc)
		return -ENOMEM;
	if (w->idx < ARN_STATS_MAX_WORKERS)
		__atomic_store_n(&tables[w->idx], w->grpc, __ATOMIC_RELEASE);
	return 0;
}

void http_grpc_stats_worker_fini(struct http_worker *w)
{
	if (w->idx < ARN_STATS_MAX_WORKERS && tables[w->idx] == w->grpc)
		__atomic_store_n(&tables[w->idx], NULL, __ATOMIC_RELEASE);
	free(w->grpc);
	w->grpc = NULL;
}

static uint64_t fnv(uint64_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h;
}

/* "/<service>/<method>" -> "<service>.<method>" in @p out, when both
 * parts are non-empty, short enough and made of name characters only (a
 * stat name must not carry what the client likes: spaces, quotes, '{'). */
static size_t method_name(const char *p, size_t n, char out[HTTP_GRPC_STATS_NAME_MAX + 1])
{
	if (n < 4 || p[0] != '/')
		return 0;
	size_t k = 0, slash = 0;
	for (size_t i = 1; i < n; i++) {
		char ch = p[i];
		if (ch == '?')
			break;
		if (ch == '/') {
			if (slash || i == 1)
				return 0;
			slash = i;
			ch = '.';
		} else if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			     (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-')) {
			return 0;
		}
		if (k == HTTP_GRPC_STATS_NAME_MAX)
			return 0;
		out[k++] = ch;
	}
	if (!slash || out[k - 1] == '.')
		return 0;
	out[k] = '\0';
	return k;
}

/* The row for (cluster, method), added when missing and there is room. */
static struct http_grpc_row *row(struct http_grpc_table *t, const char *cl, size_t cn,
				 const char *m, size_t mn)
{
	uint64_t h = fnv(fnv(0xcbf29ce484222325ull, cl, cn) ^ 0xff, m, mn);
	for (uint32_t i = 0; i < t->n; i++) {
		struct http_grpc_row *r = &t->rows[i];
		if (r->hash == h && r->clen == cn && r->mlen == mn && !memcmp(r->cluster, cl, cn) &&
		    !memcmp(r->method, m, mn))
			return r;
	}
	if (t->n == ROWS || (mn && t->n_methods == HTTP_GRPC_STATS_METHODS) ||
	    (!mn && t->n - t->n_methods == HTTP_GRPC_STATS_CLUSTERS))
		return NULL;
	struct http_grpc_row *r = &t->rows[t->n];
	memset(r, 0, sizeof(*r));
	r->hash = h;
	r->clen = (uint32_t)cn;
	r->mlen = (uint32_t)mn;
	memcpy(r->cluster, cl, cn);
	memcpy(r->method, m, mn);
	if (mn)
		t->n_methods++;
	__atomic_store_n(&t->n, t->n + 1, __ATOMIC_RELEASE);
	return r;
}

static void inc(uint64_t *c)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

/* grpc-status: 0 to 16, else "other" (Envoy names the well-known codes) */
static unsigned status_slot(const char *v, size_t n)
{
	unsigned s = 0;
	if (n == 0 || n > 2)
		return G_OTHER;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return G_OTHER;
		s = s * 10 + (unsigned)(v[i] - '0');
	}
	if (n == 2 && v[0] == '0')
		return G_OTHER;
	return s <= 16 ? G_STATUS0 + s : G_OTHER;
}

/* Is @p st a call the filter counts, not counted yet? */
static struct http_grpc_table *counted(struct http_stream *st, const struct arn_cfg_hcm **hp)
{
	struct http_conn *hc = st->hc;
	struct http_grpc_table *t = hc->w->grpc;
	const struct arn_cfg_hcm *h = hc->hrt ? hc->hrt->hcm : NULL;
	if (!t || !h || !h->grpc_stats || !st->crt || (st->state & HTTP_S_GRPC_COUNTED) ||
	    !http_is_grpc(st))
		return NULL;
	*hp = h;
	return t;
}

/* Count @p st's call with grpc-status @p v. */
static void count(struct http_grpc_table *t, const struct arn_cfg_hcm *h, struct http_stream *st,
		  const char *v, size_t vn)
{
	st->state |= HTTP_S_GRPC_COUNTED;
	const char *cl = st->crt->name;
	size_t cn = st->crt->len;
	if (cn > HTTP_GRPC_STATS_NAME_MAX)
		return; /* config names are bounded elsewhere; never truncate */
	char mname[HTTP_GRPC_STATS_NAME_MAX + 1];
	size_t mn = 0;
	if (h->grpc_stats_all_methods)
		mn = method_name(st->req.m.path.p, st->req.m.path.len, mname);
	struct http_grpc_row *r = mn ? row(t, cl, cn, mname, mn) : NULL;
	if (mn && !r)
		inc(&t->overflow); /* counted under the cluster's name */
	if (!r)
		r = row(t, cl, cn, "", 0);
	if (!r) {
		if (!mn)
			inc(&t->overflow);
		return;
	}
	unsigned s = status_slot(v, vn);
	inc(&r->c[s]);
	inc(&r->c[s == G_STATUS0 ? G_SUCCESS : G_FAILURE]);
	inc(&r->c[G_TOTAL]);
}

void http_grpc_stats_response(struct http_stream *st, bool trailers)
{
	const struct arn_cfg_hcm *h;
	struct http_grpc_table *t = counted(st, &h);
	if (!t)
		return;
	const struct arn_h1_msg *m = &st->resp.m;
	int from = trailers ? m->n_hdrs : 0;
	int to = trailers ? m->n_hdrs + m->n_trailers : m->n_hdrs;
	for (int i = from; i < to; i++)
		if (arn_h1_eq_nocase(m->hdrs[i].name, m->hdrs[i].name_len, "grpc-status", 11)) {
			count(t, h, st, m->hdrs[i].value, m->hdrs[i].value_len);
			return;
		}
}

void http_grpc_stats_local(struct http_stream *st, const char *status, size_t len)
{
	const struct arn_cfg_hcm *h;
	struct http_grpc_table *t = counted(st, &h);
	if (t)
		count(t, h, st, status, len);
}

/* What a generation's connection managers count: grpc_stats at all, and
 * per method. */
struct want {
	bool any, methods;
};

static void want_hcm(struct want *x, const struct arn_cfg_hcm *h)
{
	if (h && h->grpc_stats) {
		x->any = true;
		x->methods |= h->grpc_stats_all_methods;
	}
}

static void want_listener(void *ctx, const struct arn_cfg_listener *l)
{
	struct want *x = ctx;
	for (size_t i = 0; i < l->n_chains; i++)
		want_hcm(x, l->chains[i].hcm);
	if (l->default_chain)
		want_hcm(x, l->default_chain->hcm);
}

void http_grpc_stats_sweep(struct http_worker *w, const struct arn_cfg_gen *g)
{
	struct http_grpc_table *t = w->grpc;
	if (!t || !t->n)
		return;
	struct want x = {false, false};
	if (g)
		arn_cfg_listener_foreach(g, want_listener, &x);
	uint32_t k = 0, km = 0;
	__atomic_store_n(&t->seq, t->seq + 1, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	for (uint32_t i = 0; i < t->n; i++) {
		struct http_grpc_row *r = &t->rows[i];
		struct arn_cfg_ref ref = {r->cluster, r->clen, arn_cfg_hash(r->cluster, r->clen)};
		struct arn_cfg_cluster_view v;
		bool keep = x.any && (x.methods || !r->mlen) && g &&
			    arn_cfg_cluster_resolve(g, &ref, &v) == 0;
		if (!keep)
			continue;
		if (k != i)
			t->rows[k] = *r;
		k++;
		km += r->mlen != 0;
	}
	t->n = k;
	t->n_methods = km;
	__atomic_store_n(&t->seq, t->seq + 1, __ATOMIC_RELEASE);
}

static const char *const names[G_STATUS0] = {"success", "failure", "total"};

static bool same(const struct http_grpc_row *a, const struct http_grpc_row *b)
{
	return a->hash == b->hash && a->clen == b->clen && a->mlen == b->mlen &&
	       !memcmp(a->cluster, b->cluster, a->clen) && !memcmp(a->method, b->method, a->mlen);
}

/* A copy of worker @p w's table, taken while no sweep moved its rows
 * (a few tries), into @p out. @return false: no table, or no stable copy. */
static bool snapshot(unsigned w, struct http_grpc_table *out)
{
	const struct http_grpc_table *t = __atomic_load_n(&tables[w], __ATOMIC_ACQUIRE);
	if (!t)
		return false;
	for (int tries = 0; tries < 4; tries++) {
		uint32_t s0 = __atomic_load_n(&t->seq, __ATOMIC_ACQUIRE);
		if (s0 & 1)
			continue;
		uint32_t n = __atomic_load_n(&t->n, __ATOMIC_ACQUIRE);
		if (n > ROWS)
			continue;
		memcpy(out->rows, t->rows, n * sizeof(t->rows[0]));
		out->n = n;
		out->overflow = __atomic_load_n(&t->overflow, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&t->seq, __ATOMIC_RELAXED) == s0)
			return true;
	}
	return false;
}

/* Each (cluster, method) once, summed over the workers that have it. */
static void pull(struct arn_stats_emitter *e, void *arg)
{
	(void)arg;
	char stat[2 * HTTP_GRPC_STATS_NAME_MAX + 32];
	struct http_grpc_table *tabs[ARN_STATS_MAX_WORKERS];
	for (unsigned w = 0; w < ARN_STATS_MAX_WORKERS; w++) {
		tabs[w] = NULL;
		if (!__atomic_load_n(&tables[w], __ATOMIC_ACQUIRE))
			continue;
		if (!snap[w] && !(snap[w] = malloc(sizeof(*snap[w]))))
			continue;
		if (snapshot(w, snap[w]))
			tabs[w] = snap[w];
	}
	for (unsigned w = 0; w < ARN_STATS_MAX_WORKERS; w++) {
		const struct http_grpc_table *t = tabs[w];
		uint32_t n = t ? t->n : 0;
		if (t) {
			char tag[16];
			snprintf(tag, sizeof(tag), "%u", w);
			arn_stats_emit(e, ARN_STAT_COUNTER, "grpc_stats", ARN_STATS_TAG_WORKER, tag,
				       "rows_overflow", (int64_t)t->overflow);
			arn_stats_emit(e, ARN_STAT_GAUGE, "grpc_stats", ARN_STATS_TAG_WORKER, tag,
				       "rows", (int64_t)n);
		}
		for (uint32_t i = 0; i < n; i++) {
			const struct http_grpc_row *r = &t->rows[i];
			bool earlier = false;
			uint64_t sum[G_COUNT] = {0};
			for (unsigned v = 0; v < ARN_STATS_MAX_WORKERS && !earlier; v++) {
				const struct http_grpc_table *u = tabs[v];
				uint32_t un = u ? u->n : 0;
				for (uint32_t j = 0; j < un; j++) {
					if (!same(r, &u->rows[j]))
						continue;
					if (v < w) {
						earlier = true;
						break;
					}
					for (unsigned k = 0; k < G_COUNT; k++)
						sum[k] += u->rows[j].c[k];
				}
			}
			if (earlier)
				continue;
			char cl[HTTP_GRPC_STATS_NAME_MAX + 1];
			memcpy(cl, r->cluster, r->clen);
			cl[r->clen] = '\0';
			for (unsigned k = 0; k < G_COUNT; k++) {
				if (k >= G_STATUS0 && !sum[k])
					continue; /* Envoy makes a status's counter when it is seen
						   */
				char code[8];
				const char *nm = names[k < G_STATUS0 ? k : 0];
				if (k == G_OTHER)
					nm = "other";
				else if (k >= G_STATUS0) {
					snprintf(code, sizeof(code), "%u", k - G_STATUS0);
					nm = code;
				}
				snprintf(stat, sizeof(stat), "grpc.%.*s%s%s", (int)r->mlen,
					 r->method, r->mlen ? "." : "", nm);
				arn_stats_emit(e, ARN_STAT_COUNTER, "cluster",
					       ARN_STATS_TAG_CLUSTER, cl, stat, (int64_t)sum[k]);
			}
		}
	}
}

void http_grpc_stats_start(void)
{
	arn_stats_pull_register(pull, NULL);
}

void http_grpc_stats_stop(void)
{
	arn_stats_pull_unregister(pull, NULL);
	for (unsigned w = 0; w < ARN_STATS_MAX_WORKERS; w++) {
		free(snap[w]);
		snap[w] = NULL;
	}
}

const struct http_filter_ops http_grpc_stats_filter_ops = {
    .name = "grpc_stats",
    .encode_response = http_grpc_stats_response,
};
