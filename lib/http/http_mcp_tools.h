/*
 * Per-tool statistics of the MCP gateway filter (issue 20, item 5):
 *   mcp.<ToolSet>.tool.<tool>.{calls,errors} and the rq_time histogram
 * (Prometheus: envoy_mcp_tool_<stat>{arion_toolset, arion_mcp_tool}),
 * beside the per-backend scopes mcp.<ToolSet>.backend.<name>.*.
 *
 * Tool names come from the backends at run time, on the workers, while
 * statistics scopes are made on the control lcore from the configuration
 * (lib/http/http_rt.c), which does not know them. So each worker keeps a
 * table of HTTP_MCP_TOOL_STATS (ToolSet, tool) rows allocated at start
 * (lib/stats/arn_stats_rows.h, as for gRPC methods), and the control
 * lcore pulls the rows into /stats, summed over workers. Only calls the
 * gateway routed are counted, so every name is one a ToolSet's catalog
 * exposed (a client cannot make rows by naming tools); backends are
 * hostile too, so a call whose row does not fit (table full, a name
 * longer than HTTP_MCP_TOOL_STATS_NAME_MAX or outside the tool name
 * alphabet) is counted in mcp.tool_stats.<worker>.rows_overflow
 * (mcp.tool_stats.<worker>.rows: rows in use).
 *
 * Rows go when their ToolSet leaves the configuration
 * (http_mcp_tools_sweep, each new generation). Rows are added behind a
 * release store of the count and moved only by a sweep, inside a
 * sequence count the pull checks around its copy (a seqlock).
 */
#ifndef ARN_HTTP_MCP_TOOLS_H
#define ARN_HTTP_MCP_TOOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct arn_cfg_gen;
struct http_worker;

/* (ToolSet, tool) rows per worker; past them, calls count as overflow. */
#define HTTP_MCP_TOOL_STATS 256
/* Longest ToolSet and tool name kept, bytes (the catalog's tool limit). */
#define HTTP_MCP_TOOL_STATS_NAME_MAX 128

/** Allocate @p w's table. @return 0 or -ENOMEM. */
int http_mcp_tools_worker_init(struct http_worker *w);
/** Unpublish and free @p w's table. */
void http_mcp_tools_worker_fini(struct http_worker *w);

/**
 * Count one routed tools/call of tool @p tool (@p tn bytes, the exposed
 * name) of ToolSet @p ts (@p sn bytes) on worker @p w: @p failed when the
 * backend failed or answered an error (a JSON-RPC error, or a result with
 * isError), @p us its time from start to answer. Worker lcore.
 */
void http_mcp_tools_count(struct http_worker *w, const char *ts, size_t sn, const char *tool,
			  size_t tn, bool failed, uint64_t us);

/** Free @p w's rows of ToolSets generation @p g (NULL: none) does not have. */
void http_mcp_tools_sweep(struct http_worker *w, const struct arn_cfg_gen *g);

/** Register / unregister the /stats pull (control lcore). */
void http_mcp_tools_start(void);
void http_mcp_tools_stop(void);

#endif
