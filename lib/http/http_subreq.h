/*
 * Sub-requests: an exchange with a cluster that a filter starts itself
 * (Envoy's AsyncClient), not the client's request routed on. One client
 * stream may run several at once (the MCP gateway asks every backend).
 * Each picks its endpoint with the cluster's load balancer, borrows a
 * pooled connection (http_up_acquire), counts in the cluster's circuit
 * breaker (max_requests) and statistics as any request does, has its own
 * response buffer (a struct http_res from the worker's pool) and its own
 * timeout, and reports back through its ops.
 *
 * How: a sub-request embeds a struct http_stream that the pools and the
 * codec see as any stream (its hc is the client's connection, for the
 * worker and the local address); only this file touches it.
 *
 * Ownership: struct http_subreq is the caller's (embedded in its own
 * state) from http_subreq_start until the sub-request is over: after
 * on_end or on_failed has returned, or after http_subreq_cancel. The
 * request's path, headers and body are the caller's and must stay valid
 * until then. Callbacks run from lib/tcp's callbacks or the worker's
 * timers, never from inside http_subreq_start.
 *
 * A streaming sub-request (sr->stream: one bidirectional gRPC call per
 * client request, as ext_proc's) sends its body as the caller gives it
 * (http_subreq_send) while its response is handed over as it comes:
 * on_head, then on_body for each slice, possibly before the request's
 * end was sent; on_trailers and on_end (or on_failed) close it as for
 * any sub-request.
 */
#ifndef ARN_HTTP_SUBREQ_H
#define ARN_HTTP_SUBREQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http_stream.h"

struct http_subreq;

struct http_subreq_ops {
	/* The response head (a final status): @p m's slices live until on_end
	 * or on_failed. */
	void (*on_head)(struct http_subreq *sr, const struct arn_h1_msg *m);
	/* Body bytes, valid during the call only. */
	void (*on_body)(struct http_subreq *sr, const char *data, size_t len);
	/* The response is complete. The sub-request is over when it returns. */
	void (*on_end)(struct http_subreq *sr);
	/* Optional (NULL: none): the response's trailers (@p m's trailers,
	 * n_trailers > 0), before on_end, valid during the call only: a
	 * gRPC answer's grpc-status (ext_authz's gRPC check). */
	void (*on_trailers)(struct http_subreq *sr, const struct arn_h1_msg *m);
	/* It failed: @p why says how ("connect failed", "timed out after 30000
	 * ms", "connection reset", "overflow", "no healthy upstream", ...). The
	 * sub-request is over when it returns. */
	void (*on_failed)(struct http_subreq *sr, const char *why);
	/* Optional, streaming sub-requests only: every body byte given so
	 * far has gone to the transport (the caller's buffer is free again
	 * and http_subreq_send takes more). Called only after a
	 * http_subreq_send returned -EAGAIN, once per such return. */
	void (*on_sent)(struct http_subreq *sr);
};

/* One header of a sub-request; both strings the caller's. */
struct http_subreq_header {
	const char *name, *value;
	size_t name_len, value_len;
};

#define HTTP_SUBREQ_MAX_HDRS 32

struct http_subreq {
	struct http_stream st; /* what the pools see; private */
	const struct http_subreq_ops *ops;
	void *user;
	const char *path, *authority;
	size_t path_len, authority_len;
	const char *body;
	size_t blen;
	struct arn_h1_edit hdrs[HTTP_SUBREQ_MAX_HDRS + 2];
	unsigned n_hdrs;
	char clen[24];
	uint32_t timeout_ms;
	struct http_timer timer;
	bool running, sent, head_seen;
	bool paused; /* no more of the response is decoded until resumed */
	/* set before http_subreq_start: a streaming POST (no content-length,
	 * HTTP/2 DATA or HTTP/1.1 chunks) whose body is @p body and then what
	 * http_subreq_send gives, up to its end; private: */
	bool stream;
	bool ended;	/* the request's end was queued */
	bool want_sent; /* a send was refused (-EAGAIN): on_sent is owed */
	/* set before http_subreq_start, else zero: a request of this method
	 * (its name and enum arn_h1_method), with a content-length, as
	 * ext_authz checks with the client's method; and the Host sent in
	 * place of the endpoint's name (host_len 0: the endpoint's) */
	struct arn_h1_slice method_name;
	uint8_t method;
	const char *host;
	size_t host_len;
	/* set before http_subreq_start: a DELETE (the body, if any, is not
	 * sent), as the MCP gateway ends a backend's session */
	bool del;
	/* set before http_subreq_start: a GET with no body (no
	 * content-length), as the MCP gateway opens a backend session's
	 * event stream; pass timeout_ms 0 for a stream meant to stay open */
	bool get;
	/* set before http_subreq_start: the request's head is this message
	 * (its method, its fields as they are, its body framing) with
	 * n_edits edits applied, not a head made here (no host or
	 * content-length added, @p h unused): a copy of a client's request,
	 * as a shadow (http_shadow.c) sends it. Both the caller's, as the
	 * path and body are. */
	const struct arn_h1_msg *msg;
	const struct arn_h1_edit *edits;
	unsigned n_edits; /* at most HTTP_SUBREQ_MAX_HDRS */
};

/**
 * Start a POST of @p body (or a DELETE, sr->del, or a GET, sr->get) (@p blen bytes) to @p path on
 * cluster @p cluster (resolved in generation @p g), with @p n headers @p h (at most
 * HTTP_SUBREQ_MAX_HDRS; host and content-length are added), for the
 * client connection @p hc, failing after @p timeout_ms (0: none).
 * @return 0 (callbacks will follow), -ENOENT (no such cluster),
 * -EHOSTUNREACH (no healthy endpoint), -EBUSY (circuit breaker or no
 * buffer), -E2BIG (too many headers), or another negative errno (could
 * not connect). On error no callback follows.
 */
int http_subreq_start(struct http_subreq *sr, struct http_conn *hc, const struct arn_cfg_gen *g,
		      const struct arn_cfg_ref *cluster, const char *path, size_t path_len,
		      const struct http_subreq_header *h, unsigned n, const char *body, size_t blen,
		      uint32_t timeout_ms, const struct http_subreq_ops *ops, void *user);

/**
 * Back-pressure: decode no more of @p sr's response (its bytes wait in
 * the upstream connection, whose window closes) until http_subreq_resume.
 * Safe from inside its callbacks; the slice being handed over is the
 * last one until then.
 */
void http_subreq_pause(struct http_subreq *sr);
/** Go on decoding @p sr's response; its callbacks may run inside. */
void http_subreq_resume(struct http_subreq *sr);

/**
 * Streaming sub-requests (sr->stream): queue @p len more body bytes
 * @p data (0: none) and, with @p end, the request's end (END_STREAM).
 * One write at a time: @p data is sent by reference and stays the
 * caller's, unchanged, until on_sent or the sub-request is over.
 * Flow control is the transport's (an HTTP/2 stream's window).
 * @return 0 (queued), -EAGAIN (the head or an earlier write is still
 * waiting: nothing queued, on_sent follows), -ENOTCONN (not running, not
 * a stream, or its end already queued). No callback runs inside.
 */
int http_subreq_send(struct http_subreq *sr, const char *data, size_t len, bool end);

/** Stop @p sr (the client went away): its connection is dropped, no
 * callback follows. Nothing when it is not running. */
void http_subreq_cancel(struct http_subreq *sr);

#endif
