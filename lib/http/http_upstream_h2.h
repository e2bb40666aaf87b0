/*
 * Upstream HTTP/2 (RFC 9113) on nghttp2's client session: one connection
 * per (cluster, endpoint, worker) carrying many streams, as Envoy's HTTP/2
 * connection pool.
 *
 * How it plugs into the pool and the stream layer (http_upstream.h): the
 * connection is a struct http_upconn whose h2 holds the session; each
 * stream on it is a struct http_upconn of its own (xs set), taken from the
 * worker's upstream blocks, that a stream borrows as it would an HTTP/1
 * connection: st->up is the stream block, its peer (h2peer) speaks the
 * codec http_codec_uph2. Releasing or detaching the stream block ends
 * that stream only (RST_STREAM when it is not closed yet); the connection
 * then serves the pool's waiting streams, idles, or closes.
 *
 * nghttp2's callbacks only record what arrived (a response head, body
 * bytes, trailers, the stream's end or reset) in the stream's state; the
 * streams are told afterwards (their on_data), never from inside nghttp2.
 *
 * Flow control: no_auto_window_update, as downstream: a response body's
 * bytes are given back to the upstream's windows only when the stream's
 * downstream codec took them (the next decode), so a slow client holds at
 * most one stream window (HTTP_UPH2_STREAM_WINDOW) per stream and one
 * connection window per connection; a request body is framed by
 * reference, as the upstream's windows allow, and the client's next bytes
 * are read only once nghttp2 took these.
 *
 * Memory: nghttp2 allocates through a counting allocator bounded per
 * connection (HTTP_H2_MEM_MAX); a stream's own state (its header
 * references) comes from the same allocator.
 *
 * Ownership: the session belongs to its connection block and outlives it
 * while stream blocks still hold it (their header slices point into
 * nghttp2's buffers); the last of them frees it. Worker lcore only.
 */
#ifndef ARN_HTTP_UPSTREAM_H2_H
#define ARN_HTTP_UPSTREAM_H2_H

#include <stdbool.h>
#include <stdint.h>

#include "http_upstream.h"

/* Limits Arion applies on top of the cluster's http2_protocol_options
 * (docs/security.md): streams per connection, and the windows Arion
 * advertises (the response bytes one stream, and one connection, may hold
 * in Arion's buffers before its client took them). */
#define HTTP_UPH2_MAX_STREAMS 128
#define HTTP_UPH2_STREAM_WINDOW (256u << 10)
#define HTTP_UPH2_CONN_WINDOW (1u << 20)
/* a response's header list (and its trailers'), RFC 9113 6.5.2's size:
 * name, value and 32 per field; over it the stream fails (502 UPE) */
#define HTTP_UPH2_MAX_HDR_BYTES (96u * 1024)

extern const struct http_codec_ops http_codec_uph2;

/** Does stream @p st go to its cluster over HTTP/2 (explicit
 * http2_protocol_options, or use_downstream_protocol_config and an
 * HTTP/2 client)? */
bool http_uph2_wanted(const struct http_stream *st);
/** Turn connection block @p u (just opened) to HTTP/2 with cluster @p c's
 * options. @return 0, or -ENOMEM. */
/* What the session asks of the pool that owns its connection (given by
 * http_upstream.c to http_uph2_start), so that this layer, below the pool,
 * names nothing of it. Called from inside the session's own callbacks'
 * aftermath, never from nghttp2's. */
struct http_uph2_pool_ops {
	/* a stream place came free on connection @p u: a request waiting in
	 * the pool may take it */
	void (*slot_freed)(struct http_upconn *u);
	/* close connection @p u (@p abort: with RST); its close reports it */
	void (*close)(struct http_upconn *u, bool abort);
};

int http_uph2_start(struct http_upconn *u, const struct arn_cfg_cluster *c,
		    const struct http_uph2_pool_ops *ops);
/** May connection @p u take one more stream (open, no GOAWAY, under
 * max_concurrent_streams, the upstream's SETTINGS_MAX_CONCURRENT_STREAMS
 * and max_requests_per_connection as they were when it opened)? */
bool http_uph2_room(const struct http_upconn *u);
/** Streams open on connection @p u. */
uint32_t http_uph2_streams(const struct http_upconn *u);
/** A stream block on connection @p u, linked to it. @return NULL when
 * the worker's upstream blocks or the session's memory ran out. */
struct http_upconn *http_uph2_stream_new(struct http_upconn *u);
/** Stream block @p s is bound to @p st: its response decodes into st's
 * message buffer, at most @p max_headers fields (the cluster's
 * max_headers_count) in its head and as many in its trailers. */
void http_uph2_bind(struct http_upconn *s, struct http_stream *st, uint16_t max_headers);
/** The stream is done with block @p s (@p cancel: mid-exchange): the
 * stream is reset when still open, the block goes back. */
void http_uph2_stream_end(struct http_upconn *s, bool cancel);
/** TCP (and TLS) is up: the streams waiting for it send their requests. */
void http_uph2_ready(struct http_upconn *u);
/** Input (or its end) arrived: feed the session, tell the streams. */
void http_uph2_pump(struct http_upconn *u);
/** The transport took what waited: frame more, tell the streams. */
void http_uph2_writable(struct http_upconn *u);
/** Idle (no streams): a graceful GOAWAY before the close. */
void http_uph2_goaway(struct http_upconn *u);
/** lib/tcp closed connection @p u (@p reason as on_close): streams not
 * yet connected fail (on_failed), the others see their stream cut. */
void http_uph2_closed(struct http_upconn *u, int reason, const char *why);
/** Worker shutdown: free what @p u holds, no callbacks. */
void http_uph2_shutdown(struct http_upconn *u);

#endif
