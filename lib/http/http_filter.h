/*
 * The HTTP filters the connection manager (http_hcm.c) runs on a stream,
 * as a table of ops in chain order: the HCM walks the table and names no
 * filter, so a filter (which calls the HCM's http_req_step, local replies,
 * ...) sits above it, not beside it in a loop. The table is registered once
 * by the module (http_module.c, http_hcm_set_filters) before any worker
 * runs.
 *
 * Only the hooks the filters use exist; a NULL hook is skipped. The router
 * is still the HCM's terminal step, called by name (http_router_filter.h).
 *
 * Ownership: the table and its ops are static, const, process-wide.
 */
#ifndef ARN_HTTP_FILTER_H
#define ARN_HTTP_FILTER_H

#include <stdbool.h>
#include <stddef.h>

struct arn_cfg_gen;
struct arn_cfg_hcm;
struct arn_cfg_request;
struct arn_cfg_route_table;
struct arn_h1_edit;
struct http_stream;

struct http_filter_ops {
	const char *name; /* for logs */
	/**
	 * May any hook below act on a stream of connection manager @p h (its
	 * configuration alone decides)? false: every hook is a no-op for all
	 * of @p h's streams. NULL: always true. Asked once per manager's
	 * runtime (http_rt.c, a configuration generation), not per request.
	 */
	bool (*active)(const struct arn_cfg_hcm *h);
	/**
	 * The request's head (@p req: as routes see it, routes @p rt,
	 * generation @p g, NULL without a store). @return true when the filter
	 * took the stream (it answered, or reads the body: decode_body /
	 * decode_end then come to it); the filters after it and the router do
	 * not see the request.
	 */
	bool (*decode_head)(struct http_stream *st, const struct arn_cfg_gen *g,
			    const struct arn_cfg_route_table *rt,
			    const struct arn_cfg_request *req);
	/** A body slice of a stream this filter took. @return true to go on reading. */
	bool (*decode_body)(struct http_stream *st, const char *data, size_t len);
	/** The request of a stream this filter took ended. */
	void (*decode_end)(struct http_stream *st);
	/**
	 * A request body slice of a stream whose body this filter rewrites on
	 * its way upstream (its decode_head set st->req_xf to 1 + its index
	 * in http_filters and did not take the stream): called by the HCM
	 * before the router forwards the slice, so the upstream, the body kept
	 * for a retry and the shadows all get what this returns. @p data
	 * (@p len bytes) is the stream's to rewrite in place: the client's
	 * input that its codec handed over once and nothing reads again.
	 * @p end: the request's END (@p data NULL, @p len 0). The bytes to
	 * forward go in *@p out: within @p data, or in the filter's
	 * per-stream state, which must stay as it is until the stream's next
	 * request event (the upstream's codec holds them by reference until
	 * its queue is flushed, and the HCM flushes it before the next event).
	 * @return how many, or -1: the filter answered (a local reply) and
	 * nothing goes on. Bounded: the filter may keep only a fixed number
	 * of bytes per stream (in the stream's http_res).
	 */
	long (*decode_xform)(struct http_stream *st, char *data, size_t len, bool end,
			     const char **out);
	/**
	 * The output of a decode_xform that was full first: the filter sets
	 * HTTP_S_REQ_MORE (in decode_xform or here) when its input slice is
	 * not all taken; the HCM then forwards what it returned, reads no
	 * more of the request and, once the upstream took that (its queued),
	 * calls this for the next piece (*@p out, valid as decode_xform's),
	 * until the filter leaves the bit clear. @return the piece's bytes,
	 * or -1: the filter answered. NULL: the filter's output is never
	 * full (it has no HTTP_S_REQ_MORE).
	 */
	long (*decode_more)(struct http_stream *st, const char **out);
	/**
	 * The response head goes to the client: its edits, into @p e (at most
	 * @p cap), values in the stream's text. @return how many, or -ENOSPC;
	 * or, for the upstream's head alone, -EAGAIN: the filter holds it (it
	 * took the body, HTTP_S_ENC_BODY, and reads it whole first), and its
	 * encode_body at the body's end has it written (http_hcm_write_head),
	 * this hook asked again then. Or, for the upstream's head alone and
	 * without HTTP_S_ENC_BODY, -EINPROGRESS: the filter holds the head for
	 * an asynchronous answer (ext_proc's response_headers). The HCM keeps
	 * the head (its pins), what came with it (first body bytes, the END:
	 * in the upstream's input, which no decode frees meanwhile) and reads
	 * nothing more of the response: the upstream's flow control (TCP's
	 * window, HTTP/2's) bounds what waits, as for a slow client. The
	 * filter ends the hold with http_hcm_resume_resp_head (this hook asked
	 * again, where it gives its edits) or with a local reply, which
	 * replaces the response (the upstream is detached). The upstream
	 * closing meanwhile is kept in its input (a FIN) or ends the stream as
	 * any upstream loss before the response started (a reset: 503); the
	 * client going away ends the stream, whose stream_end hook gives back
	 * what the filter holds. The filter's own timer bounds the hold.
	 */
	int (*encode_head_edits)(struct http_stream *st, struct arn_h1_edit *e, unsigned cap);
	/**
	 * A response body slice of a stream whose body this filter took in
	 * its encode_head_edits (it set st->enc, st->enc_state and
	 * HTTP_S_ENC_BODY: the HCM walks this hook for that stream alone):
	 * the filter hands its transform to the client's codec. @p end: the
	 * body is over (@p data NULL); called once, before the trailers.
	 * @return true when @p data is taken whole; false when the filter's
	 * output is full first: encode_more goes on once the client's codec
	 * took what is queued (@p data stays valid until then: the stream
	 * takes no event meanwhile).
	 */
	bool (*encode_body)(struct http_stream *st, const char *data, size_t len, bool end);
	/** What encode_body left: go on. @return as encode_body. */
	bool (*encode_more)(struct http_stream *st);
	/** The upstream's response head went out (@p trailers false) or its
	 * trailers are going out (true). */
	void (*encode_response)(struct http_stream *st, bool trailers);
	/**
	 * The response's trailers went into its body (this filter took the
	 * body: HTTP_S_ENC_BODY, and framed them in its encode_body's end):
	 * the client's codec gets none of its own (the HCM's encode_response
	 * hooks still see them). NULL: the trailers go to the client's codec.
	 */
	bool (*trailers_in_body)(const struct http_stream *st);
	/** Just before the access log record is built: fill st->log. */
	void (*log)(struct http_stream *st);
	/** The stream ends: give back what the filter holds for it. */
	void (*stream_end)(struct http_stream *st);
};

/* A stream's request event that came with its head (HTTP_S_END_HELD)
 * never comes with a body, and a decode_xform filter's output that was
 * full (http_filter_ops.decode_more) comes only with a body: one bit for
 * the two, which sends req_ready off its usual path (http_hcm.c). */
#define HTTP_S_REQ_MORE HTTP_S_END_HELD

/* The filters, each defined by its file. */
extern const struct http_filter_ops http_l4_filter_ops;		/* health check, RBAC, ratelimit */
extern const struct http_filter_ops http_mcp_filter_ops;	/* the MCP gateway */
extern const struct http_filter_ops http_grpc_stats_filter_ops; /* grpc_stats */
extern const struct http_filter_ops http_compressor_filter_ops; /* compressor */
extern const struct http_filter_ops http_decompressor_filter_ops; /* decompressor */
extern const struct http_filter_ops http_grpc_web_filter_ops;	/* grpc_web */
extern const struct http_filter_ops http_otel_filter_ops;	/* HCM tracing (http_otel.c) */

/* At most this many filters in the table. */
#define HTTP_FILTERS_MAX 8

/**
 * Register the HTTP filters in chain order (control lcore, before the
 * workers start; @p chain must stay valid). @p n at most HTTP_FILTERS_MAX.
 * @return 0, or -EINVAL.
 */
int http_filters_set(const struct http_filter_ops *const *chain, unsigned n);

/* The registered table (http_filters_set), read-only once workers run. */
extern const struct http_filter_ops *const *http_filters;
extern unsigned http_n_filters;

/* The filters of the table that have hook @p hook, in chain order: what
 * a stream calls at every request walks only those (most hooks are one
 * filter's). Set by http_filters_set. */
struct http_filter_list {
	const struct http_filter_ops *f[HTTP_FILTERS_MAX];
	unsigned n;
};
extern struct http_filter_list http_filters_encode_response, http_filters_log,
    http_filters_stream_end, http_filters_encode_head_edits, http_filters_decode_head;

/**
 * The response edits of every filter with encode_head_edits, in chain
 * order, into @p e (at most @p cap): for the upstream's response head
 * (http_hcm.c) and local replies (http_local.c) alike. @return how many,
 * or -ENOSPC.
 */
int http_filters_resp_edits(struct http_stream *st, struct arn_h1_edit *e, unsigned cap);

/**
 * Does no filter of the table act on the streams of connection manager
 * @p h (every filter has an active hook, and each says false)? Then the
 * HCM walks none of the hooks for them (http_hcm_rt.filters_idle).
 */
bool http_filters_idle(const struct arn_cfg_hcm *h);

#endif
