/*
 * gRPC call outcomes per cluster (and per method): see http_grpc_stats.h.
 */
#include "http_grpc_stats.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arn_stats.h"
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
	uint32_t n;	    /* rows published: [0, n) are complete (release/acquire) */
	uint32_t n_methods; /* of them, with a method */
	struct http_grpc_row rows[ROWS];
};

/* the pull finds the tables here; set and cleared with the worker */
static struct http_grpc_table *tables[ARN_STATS_MAX_WORKERS];

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

void http_grpc_stats_response(struct http_stream *st, bool trailers)
{
	struct http_conn *hc = st->hc;
	struct http_grpc_table *t = hc->w->grpc;
	const struct arn_cfg_hcm *h = hc->hrt ? hc->hrt->hcm : NULL;
	if (!t || !h || !h->grpc_stats || !st->crt || (st->state & HTTP_S_GRPC_COUNTED) ||
	    !http_is_grpc(st))
		return;
	const struct arn_h1_msg *m = &st->resp.m;
	int from = trailers ? m->n_hdrs : 0;
	int to = trailers ? m->n_hdrs + m->n_trailers : m->n_hdrs;
	const struct arn_h1_header *gs = NULL;
	for (int i = from; i < to; i++)
		if (arn_h1_eq_nocase(m->hdrs[i].name, m->hdrs[i].name_len, "grpc-status", 11)) {
			gs = &m->hdrs[i];
			break;
		}
	if (!gs)
		return;
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
	if (!r)
		r = row(t, cl, cn, "", 0);
	if (!r)
		return;
	unsigned s = status_slot(gs->value, gs->value_len);
	inc(&r->c[s]);
	inc(&r->c[s == G_STATUS0 ? G_SUCCESS : G_FAILURE]);
	inc(&r->c[G_TOTAL]);
}

static const char *const names[G_STATUS0] = {"success", "failure", "total"};

static bool same(const struct http_grpc_row *a, const struct http_grpc_row *b)
{
	return a->hash == b->hash && a->clen == b->clen && a->mlen == b->mlen &&
	       !memcmp(a->cluster, b->cluster, a->clen) && !memcmp(a->method, b->method, a->mlen);
}

/* Each (cluster, method) once, summed over the workers that have it. */
static void pull(struct arn_stats_emitter *e, void *arg)
{
	(void)arg;
	char stat[2 * HTTP_GRPC_STATS_NAME_MAX + 32];
	for (unsigned w = 0; w < ARN_STATS_MAX_WORKERS; w++) {
		const struct http_grpc_table *t = __atomic_load_n(&tables[w], __ATOMIC_ACQUIRE);
		uint32_t n = t ? __atomic_load_n(&t->n, __ATOMIC_ACQUIRE) : 0;
		for (uint32_t i = 0; i < n; i++) {
			const struct http_grpc_row *r = &t->rows[i];
			bool earlier = false;
			uint64_t sum[G_COUNT] = {0};
			for (unsigned v = 0; v < ARN_STATS_MAX_WORKERS && !earlier; v++) {
				const struct http_grpc_table *u =
				    __atomic_load_n(&tables[v], __ATOMIC_ACQUIRE);
				uint32_t un = u ? __atomic_load_n(&u->n, __ATOMIC_ACQUIRE) : 0;
				for (uint32_t j = 0; j < un; j++) {
					if (!same(r, &u->rows[j]))
						continue;
					if (v < w) {
						earlier = true;
						break;
					}
					for (unsigned k = 0; k < G_COUNT; k++)
						sum[k] += __atomic_load_n(&u->rows[j].c[k],
									  __ATOMIC_RELAXED);
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
}
