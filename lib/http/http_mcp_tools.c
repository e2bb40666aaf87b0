/*
 * The MCP gateway's per-tool statistics: see http_mcp_tools.h. The table
 * and its pull follow lib/http/http_grpc_stats.c.
 */
#include "http_mcp_tools.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arn_config.h"
#include "arn_stats.h"
#include "http_worker.h"

enum { T_CALLS = 0, T_ERRORS, T_COUNT };

struct mcp_tool_row {
	uint64_t hash;
	uint32_t slen, tlen;
	char ts[HTTP_MCP_TOOL_STATS_NAME_MAX + 1];
	char tool[HTTP_MCP_TOOL_STATS_NAME_MAX + 1];
	uint64_t c[T_COUNT]; /* this worker's only; relaxed */
	/* rq_time: arn_stats_hist_record_words' layout (the sum is the old
	 * rq_time_us), so a call's time is a distribution, not only a mean */
	uint64_t h[ARN_STATS_HIST_WORDS];
};

struct mcp_tool_table {
	uint32_t seq;	   /* odd while a sweep moves rows */
	uint32_t n;	   /* rows published: [0, n) are complete (release/acquire) */
	uint64_t overflow; /* calls whose row did not fit (relaxed) */
	struct mcp_tool_row rows[HTTP_MCP_TOOL_STATS];
};

/* the pull finds the tables here; set and cleared with the worker */
static struct mcp_tool_table *tables[ARN_STATS_MAX_WORKERS];
/* the pull's copies of them (control lcore only; freed at stop) */
static struct mcp_tool_table *snap[ARN_STATS_MAX_WORKERS];

int http_mcp_tools_worker_init(struct http_worker *w)
{
	if (w->idx >= ARN_STATS_MAX_WORKERS)
		return 0; /* no slot in /stats: nothing counted */
	struct mcp_tool_table *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	__atomic_store_n(&tables[w->idx], t, __ATOMIC_RELEASE);
	return 0;
}

void http_mcp_tools_worker_fini(struct http_worker *w)
{
	if (w->idx >= ARN_STATS_MAX_WORKERS)
		return;
	struct mcp_tool_table *t = tables[w->idx];
	__atomic_store_n(&tables[w->idx], NULL, __ATOMIC_RELEASE);
	free(t);
}

static uint64_t fnv(uint64_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h;
}

/* A name a stat may carry: the tool name alphabet (docs/mcp.md), bounded.
 * ToolSet names are configuration, but they become a stat name too. */
static bool stat_name_ok(const char *s, size_t n)
{
	if (n == 0 || n > HTTP_MCP_TOOL_STATS_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' || ch == '.' || ch == '/'))
			return false;
	}
	return true;
}

static void add(uint64_t *c, uint64_t v)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
}

void http_mcp_tools_count(struct http_worker *w, const char *ts, size_t sn, const char *tool,
			  size_t tn, bool failed, uint64_t us)
{
	struct mcp_tool_table *t = w->idx < ARN_STATS_MAX_WORKERS ? tables[w->idx] : NULL;
	if (!t)
		return;
	if (!stat_name_ok(ts, sn) || !stat_name_ok(tool, tn)) {
		add(&t->overflow, 1);
		return;
	}
	uint64_t h = fnv(fnv(0xcbf29ce484222325ull, ts, sn) ^ 0xff, tool, tn);
	struct mcp_tool_row *r = NULL;
	for (uint32_t i = 0; i < t->n && !r; i++)
		if (t->rows[i].hash == h && t->rows[i].slen == sn && t->rows[i].tlen == tn &&
		    !memcmp(t->rows[i].ts, ts, sn) && !memcmp(t->rows[i].tool, tool, tn))
			r = &t->rows[i];
	if (!r) {
		if (t->n == HTTP_MCP_TOOL_STATS) {
			add(&t->overflow, 1);
			return;
		}
		r = &t->rows[t->n];
		memset(r, 0, sizeof(*r));
		r->hash = h;
		r->slen = (uint32_t)sn;
		r->tlen = (uint32_t)tn;
		memcpy(r->ts, ts, sn);
		memcpy(r->tool, tool, tn);
		__atomic_store_n(&t->n, t->n + 1, __ATOMIC_RELEASE);
	}
	add(&r->c[T_CALLS], 1);
	if (failed)
		add(&r->c[T_ERRORS], 1);
	arn_stats_hist_record_words(r->h, us);
}

void http_mcp_tools_sweep(struct http_worker *w, const struct arn_cfg_gen *g)
{
	struct mcp_tool_table *t = w->idx < ARN_STATS_MAX_WORKERS ? tables[w->idx] : NULL;
	if (!t || !t->n)
		return;
	uint32_t k = 0;
	__atomic_store_n(&t->seq, t->seq + 1, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	for (uint32_t i = 0; i < t->n; i++) {
		struct mcp_tool_row *r = &t->rows[i];
		struct arn_cfg_ref ref = {r->ts, r->slen, arn_cfg_hash(r->ts, r->slen)};
		if (!g || !arn_cfg_toolset_find(g, &ref))
			continue;
		if (k != i)
			t->rows[k] = *r;
		k++;
	}
	t->n = k;
	__atomic_store_n(&t->seq, t->seq + 1, __ATOMIC_RELEASE);
}

static bool same(const struct mcp_tool_row *a, const struct mcp_tool_row *b)
{
	return a->hash == b->hash && a->slen == b->slen && a->tlen == b->tlen &&
	       !memcmp(a->ts, b->ts, a->slen) && !memcmp(a->tool, b->tool, a->tlen);
}

/* A copy of worker @p w's table taken while no sweep moved its rows (a
 * few tries), into @p out. @return false: no table, or no stable copy. */
static bool snapshot(unsigned w, struct mcp_tool_table *out)
{
	const struct mcp_tool_table *t = __atomic_load_n(&tables[w], __ATOMIC_ACQUIRE);
	if (!t)
		return false;
	for (int tries = 0; tries < 4; tries++) {
		uint32_t s0 = __atomic_load_n(&t->seq, __ATOMIC_ACQUIRE);
		if (s0 & 1)
			continue;
		uint32_t n = __atomic_load_n(&t->n, __ATOMIC_ACQUIRE);
		if (n > HTTP_MCP_TOOL_STATS)
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

static const char *const names[T_COUNT] = {"calls", "errors"};

/* Each (ToolSet, tool) once, summed over the workers that have it. */
static void pull(struct arn_stats_emitter *e, void *arg)
{
	(void)arg;
	struct mcp_tool_table *tabs[ARN_STATS_MAX_WORKERS];
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
		const struct mcp_tool_table *t = tabs[w];
		uint32_t n = t ? t->n : 0;
		if (t) {
			char tag[16];
			snprintf(tag, sizeof(tag), "%u", w);
			arn_stats_emit(e, ARN_STAT_COUNTER, "mcp.tool_stats", ARN_STATS_TAG_WORKER,
				       tag, "rows_overflow", (int64_t)t->overflow);
			arn_stats_emit(e, ARN_STAT_GAUGE, "mcp.tool_stats", ARN_STATS_TAG_WORKER,
				       tag, "rows", (int64_t)n);
		}
		for (uint32_t i = 0; i < n; i++) {
			const struct mcp_tool_row *r = &t->rows[i];
			bool earlier = false;
			uint64_t sum[T_COUNT] = {0};
			struct arn_stats_hist hist = {0};
			for (unsigned v = 0; v < ARN_STATS_MAX_WORKERS && !earlier; v++) {
				const struct mcp_tool_table *u = tabs[v];
				uint32_t un = u ? u->n : 0;
				for (uint32_t j = 0; j < un; j++) {
					if (!same(r, &u->rows[j]))
						continue;
					if (v < w) {
						earlier = true;
						break;
					}
					for (unsigned k = 0; k < T_COUNT; k++)
						sum[k] += u->rows[j].c[k];
					arn_stats_hist_add_words(&hist, u->rows[j].h);
				}
			}
			if (earlier)
				continue;
			char ts[HTTP_MCP_TOOL_STATS_NAME_MAX + 1],
			    tool[HTTP_MCP_TOOL_STATS_NAME_MAX + 1];
			memcpy(ts, r->ts, r->slen);
			ts[r->slen] = '\0';
			memcpy(tool, r->tool, r->tlen);
			tool[r->tlen] = '\0';
			for (unsigned k = 0; k < T_COUNT; k++)
				arn_stats_emit_sub(e, ARN_STAT_COUNTER, "mcp", "arion_toolset", ts,
						   "tool", "arion_mcp_tool", tool, names[k],
						   (int64_t)sum[k]);
			arn_stats_emit_sub_hist(e, "mcp", "arion_toolset", ts, "tool",
						"arion_mcp_tool", tool, "rq_time", &hist);
		}
	}
}

void http_mcp_tools_start(void)
{
	arn_stats_pull_register(pull, NULL);
}

void http_mcp_tools_stop(void)
{
	arn_stats_pull_unregister(pull, NULL);
	for (unsigned w = 0; w < ARN_STATS_MAX_WORKERS; w++) {
		free(snap[w]);
		snap[w] = NULL;
	}
}
