/*
 * The MCP gateway filter (arion.filters.http.mcp_gateway) on the data
 * path: it takes the requests to its path at the head, as the health
 * check filter does, feeds their bodies to lib/mcp's reader (arn_mcp.h),
 * and answers them itself: whole JSON replies with the session's headers,
 * empty 202s, and the errors lib/mcp names. docs/mcp.md describes the
 * protocol; this file only connects it to a stream.
 *
 * Ownership: a taken stream holds one struct http_mcp_req from its
 * worker's pool (st->mcp) until http_stream_end gives it back
 * (http_mcp_stream_end); the worker's session table and that pool are
 * made in worker_init (http_mcp_worker_init) and freed in worker_fini.
 * The ToolSet a request is served from is pinned for the request's life.
 */
#ifndef ARN_HTTP_MCP_H
#define ARN_HTTP_MCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rte_ring.h>

struct http_stream;
struct http_worker;
struct arn_cfg_gen;
struct arn_cfg_request;

/* Sessions per worker by default (struct arn_mcp_sessions): every slot is
 * allocated at start, each with room for a session id of every possible
 * backend. */
#define HTTP_MCP_SESSIONS 1024

/* A worker's MCP tables (arn_http_options' mcp_*): 0 takes the default. */
struct http_mcp_caps {
	uint32_t sessions; /* HTTP_MCP_SESSIONS */
	uint32_t legs;	   /* backend exchanges at once: HTTP_MCP_LEGS */
	uint32_t detached; /* detached requests: MCP_BG */
};

/**
 * Make @p w's MCP state: its session table, its backend legs and detached
 * requests (as many as @p caps says), and a request context for each of
 * its request buffers. @return 0, or -ENOMEM.
 */
int http_mcp_worker_init(struct http_worker *w, const struct http_mcp_caps *caps);
void http_mcp_worker_fini(struct http_worker *w);

/**
 * The filter at @p st's request head (@p req: the request as routes see
 * it, generation @p g), called when the HCM carries the filter and the
 * path is its own. @return true: the filter took the stream (it answered,
 * or reads the body: HTTP_S_MCP); false never happens for its path, which
 * is not routed on.
 */
bool http_mcp_filter(struct http_stream *st, const struct arn_cfg_gen *g,
		     const struct arn_cfg_request *req);

/** A body slice of a taken stream. @return true to go on reading. */
bool http_mcp_body(struct http_stream *st, const char *data, size_t len);

/** The request of a taken stream ended: answer it. */
void http_mcp_end(struct http_stream *st);

/**
 * For the access log: fill @p st->log with the tool @p st called (as the
 * client named it) and the backend it went to; each NULL / 0 when none.
 * Valid until the stream ends.
 */
void http_mcp_log(struct http_stream *st);

/**
 * The connection runs: when @p st's event stream to the client is out
 * (its output flushed), the backends' answers paused for it go on.
 */
void http_mcp_run(struct http_stream *st);

/**
 * Worker @p w sees configuration generation @p g: every GET stream whose
 * ToolSet changed is sent notifications/tools/list_changed (and follows
 * the new ToolSet).
 */
void http_mcp_gen(struct http_worker *w, const struct arn_cfg_gen *g);

/*
 * The head of a worker's MCP state (struct http_mcp_worker, http_mcp.c,
 * begins with it): what http_mcp_poll tests inline.
 */
struct http_mcp_due {
	uint64_t due_ms;	/* 0: work of the worker's own waits; else the next sweep */
	struct rte_ring *inbox; /* other workers' messages to this worker */
};
void http_mcp_poll_work(struct http_worker *w);

/** Has worker MCP state @p mcp (a worker's w->mcp; NULL: none) work due at
 * @p now_ms? One load and compare, and the inbox's emptiness: what
 * http_mcp_poll and the worker's poll (http_module.c) test inline. */
static inline bool http_mcp_due(const void *mcp, uint64_t now_ms)
{
	const struct http_mcp_due *d = (const struct http_mcp_due *)mcp;
	return d && (now_ms >= d->due_ms || !rte_ring_empty(d->inbox));
}

/**
 * Once per loop iteration of worker @p w (@p mcp: its w->mcp, @p now_ms:
 * its w->now_ms): messages from other workers (requests for this worker's
 * sessions, answers to requests it handed over), what found another
 * worker's inbox full, detached requests that ended, and idle sessions
 * (once a second). Inline: nearly every iteration has none of them.
 */
static inline void http_mcp_poll(struct http_worker *w, const void *mcp, uint64_t now_ms)
{
	if (http_mcp_due(mcp, now_ms))
		http_mcp_poll_work(w);
}

/** Worker @p w stops: its detached requests end (before the upstream
 * connections their sub-requests use are closed). */
void http_mcp_shutdown(struct http_worker *w);

/** The control lcore at stop, after every worker ended: the workers'
 * inboxes and what is left in them go. */
void http_mcp_stop(void);

/** The stream ends: its request context goes back to the worker. */
void http_mcp_stream_end(struct http_stream *st);

#endif
