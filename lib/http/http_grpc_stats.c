/*
 * gRPC call outcomes per cluster (and per method): see http_grpc_stats.h.
 * The per-worker table and its pull are lib/stats/arn_stats_rows.h's.
 */
#include "http_grpc_stats.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arn_config.h"
#include "arn_stats.h"
#include "arn_stats_rows.h"
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

static void emit(struct arn_stats_emitter *e, const char *cl, const char *m, size_t mn,
		 const uint64_t *sum, const struct arn_stats_hist *h, void *arg);

/* rows keyed (cluster, "<service>.<method>"), or (cluster, "") */
static struct arn_stats_rows rows = {.def = {
					 .family = "grpc_stats",
					 .n_counters = G_COUNT,
					 .max_keyed = HTTP_GRPC_STATS_METHODS,
					 .max_bare = HTTP_GRPC_STATS_CLUSTERS,
					 .name_max = HTTP_GRPC_STATS_NAME_MAX,
					 .emit = emit,
				     }};

int http_grpc_stats_worker_init(struct http_worker *w)
{
	return arn_stats_rows_worker_init(&rows, w->idx);
}

void http_grpc_stats_worker_fini(struct http_worker *w)
{
	arn_stats_rows_worker_fini(&rows, w->idx);
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
static struct arn_stats_rows_table *counted(struct http_stream *st, const struct arn_cfg_hcm **hp)
{
	struct http_conn *hc = st->hc;
	struct arn_stats_rows_table *t = arn_stats_rows_get(&rows, hc->w->idx);
	const struct arn_cfg_hcm *h = hc->hrt ? hc->hrt->hcm : NULL;
	if (!t || !h || !h->grpc_stats || !st->crt || (st->state & HTTP_S_GRPC_COUNTED) ||
	    !http_is_grpc(st))
		return NULL;
	/* HttpFilter.disabled / FilterConfig: off for the stream's route */
	if ((h->grpc_stats_off || (st->rt && st->rt->filter_toggles)) && h->grpc_stats_name &&
	    arn_cfg_filter_off(st->vhost, st->route, h->grpc_stats_name, strlen(h->grpc_stats_name),
			       h->grpc_stats_off))
		return NULL;
	*hp = h;
	return t;
}

/* Count @p st's call with grpc-status @p v. */
static void count(struct arn_stats_rows_table *t, const struct arn_cfg_hcm *h,
		  struct http_stream *st, const char *v, size_t vn)
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
	uint64_t *c = mn ? arn_stats_rows_find(t, cl, cn, mname, mn) : NULL;
	if (mn && !c)
		arn_stats_rows_overflow(t); /* counted under the cluster's name */
	if (!c)
		c = arn_stats_rows_find(t, cl, cn, "", 0);
	if (!c) {
		if (!mn)
			arn_stats_rows_overflow(t);
		return;
	}
	unsigned s = status_slot(v, vn);
	arn_stats_rows_add(&c[s], 1);
	arn_stats_rows_add(&c[s == G_STATUS0 ? G_SUCCESS : G_FAILURE], 1);
	arn_stats_rows_add(&c[G_TOTAL], 1);
}

void http_grpc_stats_response(struct http_stream *st, bool trailers)
{
	const struct arn_cfg_hcm *h;
	struct arn_stats_rows_table *t = counted(st, &h);
	if (!t)
		return;
	const struct arn_h1_msg *m = &st->resp.m;
	const struct arn_h1_header *f = trailers ? m->trailers : m->hdrs;
	unsigned n = trailers ? m->n_trailers : m->n_hdrs;
	for (unsigned i = 0; i < n; i++)
		if (arn_h1_eq_nocase(f[i].name, f[i].name_len, "grpc-status", 11)) {
			count(t, h, st, f[i].value, f[i].value_len);
			return;
		}
}

void http_grpc_stats_local(struct http_stream *st, const char *status, size_t len)
{
	const struct arn_cfg_hcm *h;
	struct arn_stats_rows_table *t = counted(st, &h);
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

struct sweep {
	struct want x;
	const struct arn_cfg_gen *g;
};

static bool keep(const char *cl, size_t cn, const char *m, size_t mn, void *arg)
{
	(void)m;
	const struct sweep *sw = arg;
	struct arn_cfg_ref ref = {cl, cn, arn_cfg_hash(cl, cn)};
	struct arn_cfg_cluster_view v;
	return sw->x.any && (sw->x.methods || !mn) && sw->g &&
	       arn_cfg_cluster_resolve(sw->g, &ref, &v) == 0;
}

void http_grpc_stats_sweep(struct http_worker *w, const struct arn_cfg_gen *g)
{
	struct sweep sw = {{false, false}, g};
	if (g)
		arn_cfg_listener_foreach(g, want_listener, &sw.x);
	arn_stats_rows_sweep(arn_stats_rows_get(&rows, w->idx), keep, &sw);
}

static const char *const names[G_STATUS0] = {"success", "failure", "total"};

/* One (cluster, method) row, summed over workers. */
static void emit(struct arn_stats_emitter *e, const char *cl, const char *m, size_t mn,
		 const uint64_t *sum, const struct arn_stats_hist *h, void *arg)
{
	(void)h;
	(void)arg;
	char stat[2 * HTTP_GRPC_STATS_NAME_MAX + 32];
	for (unsigned k = 0; k < G_COUNT; k++) {
		if (k >= G_STATUS0 && !sum[k])
			continue; /* Envoy makes a status's counter when it is seen */
		char code[8];
		const char *nm = names[k < G_STATUS0 ? k : 0];
		if (k == G_OTHER)
			nm = "other";
		else if (k >= G_STATUS0) {
			snprintf(code, sizeof(code), "%u", k - G_STATUS0);
			nm = code;
		}
		snprintf(stat, sizeof(stat), "grpc.%s%s%s", m, mn ? "." : "", nm);
		arn_stats_emit(e, ARN_STAT_COUNTER, "cluster", ARN_STATS_TAG_CLUSTER, cl, stat,
			       (int64_t)sum[k]);
	}
}

void http_grpc_stats_start(void)
{
	arn_stats_rows_start(&rows);
}

void http_grpc_stats_stop(void)
{
	arn_stats_rows_stop(&rows);
}

/* counted() reads nothing for a manager without grpc_stats */
static bool grpc_stats_active(const struct arn_cfg_hcm *h)
{
	return h->grpc_stats;
}

const struct http_filter_ops http_grpc_stats_filter_ops = {
    .name = "grpc_stats",
    .active = grpc_stats_active,
    .encode_response = http_grpc_stats_response,
};
