/*
 * The MCP gateway's per-tool statistics: see http_mcp_tools.h. The table
 * and its pull are lib/stats/arn_stats_rows.h's, as for gRPC's.
 */
#include "http_mcp_tools.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arn_config.h"
#include "arn_stats.h"
#include "arn_stats_rows.h"
#include "http_worker.h"

enum { T_CALLS = 0, T_ERRORS, T_COUNT };

static void emit(struct arn_stats_emitter *e, const char *ts, const char *tool, size_t tn,
		 const uint64_t *sum, const struct arn_stats_hist *h, void *arg);

/* rows keyed (ToolSet, tool), each with rq_time: a call's time is a
 * distribution, not only a mean (its sum is the old rq_time_us) */
static struct arn_stats_rows rows = {.def = {
					 .family = "mcp.tool_stats",
					 .n_counters = T_COUNT,
					 .hist = true,
					 .max_keyed = HTTP_MCP_TOOL_STATS,
					 .max_bare = 0, /* a tool always has a name */
					 .name_max = HTTP_MCP_TOOL_STATS_NAME_MAX,
					 .emit = emit,
				     }};

int http_mcp_tools_worker_init(struct http_worker *w)
{
	return arn_stats_rows_worker_init(&rows, w->idx);
}

void http_mcp_tools_worker_fini(struct http_worker *w)
{
	arn_stats_rows_worker_fini(&rows, w->idx);
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

void http_mcp_tools_count(struct http_worker *w, const char *ts, size_t sn, const char *tool,
			  size_t tn, bool failed, uint64_t us)
{
	struct arn_stats_rows_table *t = arn_stats_rows_get(&rows, w->idx);
	if (!t)
		return;
	uint64_t *c = stat_name_ok(ts, sn) && stat_name_ok(tool, tn)
			  ? arn_stats_rows_find(t, ts, sn, tool, tn)
			  : NULL;
	if (!c) {
		arn_stats_rows_overflow(t);
		return;
	}
	arn_stats_rows_add(&c[T_CALLS], 1);
	if (failed)
		arn_stats_rows_add(&c[T_ERRORS], 1);
	arn_stats_hist_record_words(c + T_COUNT, us);
}

static bool keep(const char *ts, size_t sn, const char *tool, size_t tn, void *arg)
{
	(void)tool;
	(void)tn;
	const struct arn_cfg_gen *g = arg;
	struct arn_cfg_ref ref = {ts, sn, arn_cfg_hash(ts, sn)};
	return g && arn_cfg_toolset_find(g, &ref);
}

void http_mcp_tools_sweep(struct http_worker *w, const struct arn_cfg_gen *g)
{
	arn_stats_rows_sweep(arn_stats_rows_get(&rows, w->idx), keep, (void *)(uintptr_t)g);
}

static const char *const names[T_COUNT] = {"calls", "errors"};

/* One (ToolSet, tool) row, summed over workers. */
static void emit(struct arn_stats_emitter *e, const char *ts, const char *tool, size_t tn,
		 const uint64_t *sum, const struct arn_stats_hist *h, void *arg)
{
	(void)tn;
	(void)arg;
	for (unsigned k = 0; k < T_COUNT; k++)
		arn_stats_emit_sub(e, ARN_STAT_COUNTER, "mcp", "arion_toolset", ts, "tool",
				   "arion_mcp_tool", tool, names[k], (int64_t)sum[k]);
	arn_stats_emit_sub_hist(e, "mcp", "arion_toolset", ts, "tool", "arion_mcp_tool", tool,
				"rq_time", h);
}

void http_mcp_tools_start(void)
{
	arn_stats_rows_start(&rows);
}

void http_mcp_tools_stop(void)
{
	arn_stats_rows_stop(&rows);
}
