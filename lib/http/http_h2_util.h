/*
 * What the two HTTP/2 sides (downstream http_h2.c, upstream
 * http_upstream_h2.c) share below both of them: the nghttp2 session's
 * callbacks, options and first SETTINGS, the limit on framed bytes
 * waiting for TCP, the header references one message keeps, trailers
 * copied for a HEADERS frame, the keepalive PINGs and their timers, and
 * the mbuf queue of received DATA. Neither side reaches the other through
 * this file, so the upstream session does not depend on the downstream
 * one. Worker lcore only.
 */
#ifndef ARN_HTTP_H2_UTIL_H
#define ARN_HTTP_H2_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include <nghttp2/nghttp2.h>
#include <rte_mbuf.h>

#include "arn_h1.h"
#include "http_codec_h1.h"
#include "http_io.h"
#include "http_worker.h"

#define HTTP_H2_OUT_MAX (64u * 1024) /* framed bytes waiting for TCP per connection */

/**
 * Either side's output: frame what session @p s has for peer @p d, up to
 * HTTP_H2_OUT_MAX bytes, into one chain of @p w's mbufs, and hand it to
 * @p d's transport over @p tc, after what still waits there (d->out).
 * Bytes nghttp2 gave that could not be kept (out of mbufs) are lost to
 * the connection's framing, as are bytes after nghttp2 failed: then
 * *@p fatal is set and the caller closes the connection. *@p framed is
 * what was framed by this call (0: nothing, or nothing could be). Worker
 * lcore only; @p s, @p d and @p tc stay the caller's.
 * @return 0, -EAGAIN (bytes wait for TCP's room: d->peer.queued says
 * so), -ENOBUFS (*@p fatal), or the transport's error.
 */
int http_h2_send_frames(nghttp2_session *s, struct http_worker *w, struct http_h1_peer *d,
			struct arn_tcp_conn *tc, bool *fatal, size_t *framed);

/* Header fields of one request kept by reference (nghttp2's buffers). */
#define HTTP_H2_RCBUFS (2 * HTTP_MAX_HDRS + 16)

/**
 * Copy @p m's trailers (trailers[0 .. n_trailers)) for an HTTP/2
 * HEADERS frame: names lowercased (RFC 9113 8.2.1), those a proxy does not
 * forward dropped (arn_h1_trailer_dropped), packed "name\0value\0" into
 * a chain of mbufs of @p w's pool, no field split across two (a field
 * larger than one segment, about 2 KB, is dropped). @return the chain
 * (the caller's, freed with rte_pktmbuf_free) with *@p n fields; NULL when
 * none is left, or out of mbufs: then *@p nomem is set and nothing is kept
 * (the caller fails its stream: a message must not end without trailers
 * it had, a gRPC status among them).
 */
struct rte_mbuf *http_h2_trailers_copy(struct http_worker *w, const struct arn_h1_msg *m,
				       uint16_t *n, bool *nomem);
/** The fields of a copy @p b of @p n trailers as nghttp2's, pointing into
 * @p b, at most @p max. @return how many. */
unsigned http_h2_trailers_nv(const struct rte_mbuf *b, uint16_t n, nghttp2_nv *nv, unsigned max);

/** The delay to the next connection_keepalive PING, on either side
 * (http_h2.c, http_upstream_h2.c): @p interval_ms plus a random jitter
 * below @p jitter_pct % of it (interval_jitter), so that connections
 * opened together do not PING together. */
uint64_t http_h2_keepalive_delay(struct http_worker *w, uint32_t interval_ms, double jitter_pct);

/*
 * connection_keepalive (http2_protocol_options), either side: a PING
 * every interval (plus the jitter above), armed again once its ACK came;
 * a PING whose ACK does not come within timeout closes the connection
 * (the side's close callback). Any bytes received while waiting put the
 * deadline off by timeout (http_h2_keepalive_rx): an ACK queued behind a
 * large body does not close a connection that is working. Embedded in
 * the side's connection, which its callbacks find with offsetof.
 */
struct http_h2_keepalive;

struct http_h2_keepalive_ops {
	/** The session a PING may go out on now, NULL if none may. */
	nghttp2_session *(*session)(struct http_h2_keepalive *ka);
	/** A PING was queued on it: have it sent. */
	void (*sent)(struct http_h2_keepalive *ka);
	/** No ACK within timeout (the wait timer fired): unless the
	 * connection is going already, count it, stop the keepalive
	 * (http_h2_keepalive_stop) and close. */
	void (*close)(struct http_h2_keepalive *ka);
};

struct http_h2_keepalive {
	struct http_timer send, wait; /* the next interval PING; the ACK's deadline */
	struct http_worker *w;
	const struct http_h2_keepalive_ops *ops;
	/* the configuration's (0: no keepalive, or no interval / idle PING) */
	uint32_t interval_ms, timeout_ms, idle_ms;
	double jitter_pct;
	uint64_t rx_ms; /* the worker's clock when bytes last came */
};

struct arn_cfg_h2;

/** Set @p ka up for @p w with @p ops (static) and @p o's connection_keepalive
 * (NULL or no timeout: none); nothing is armed yet. */
void http_h2_keepalive_init(struct http_h2_keepalive *ka, struct http_worker *w,
			    const struct http_h2_keepalive_ops *ops, const struct arn_cfg_h2 *o);
/** The connection is up: the interval starts (and idleness counts) now. */
void http_h2_keepalive_start(struct http_h2_keepalive *ka);
/** A PING out and its ACK's deadline, unless one is out already or the
 * side's session() says none may go. */
void http_h2_keepalive_ping(struct http_h2_keepalive *ka);
/** A PING ACK came: the next interval starts, if a PING was waiting for it. */
void http_h2_keepalive_ack(struct http_h2_keepalive *ka);
/** Bytes came: the connection works, the ACK may be behind them. */
void http_h2_keepalive_rx(struct http_h2_keepalive *ka);
/** Whether nothing came for connection_idle_interval (0: never). */
bool http_h2_keepalive_idle(const struct http_h2_keepalive *ka);
/** Disarm both timers (the connection goes). */
void http_h2_keepalive_stop(struct http_h2_keepalive *ka);

/*
 * What one side's nghttp2 session is made of that the other side's is not:
 * its callbacks (NULL: none) and its bound on the CONTINUATION frames of
 * one header block. Static, one per side.
 */
struct http_h2_session_def {
	bool server; /* http_h2.c's, for clients; else http_upstream_h2.c's */
	size_t max_continuations;
	nghttp2_on_begin_headers_callback begin_headers;
	nghttp2_on_begin_frame_callback begin_frame;
	nghttp2_on_header_callback2 header;
	nghttp2_on_frame_recv_callback frame_recv;
	nghttp2_on_data_chunk_recv_callback data_chunk;
	nghttp2_on_stream_close_callback stream_close;
	nghttp2_on_frame_send_callback frame_send;
	nghttp2_on_invalid_frame_recv_callback invalid_frame;
};

/**
 * Make an nghttp2 session as @p d says, with the options both sides share
 * (no automatic WINDOW_UPDATE, @p o's max_outbound_control_frames (NULL:
 * 1000), bounded SETTINGS and HPACK table, no closed streams kept), queue
 * the first SETTINGS frame (@p iv, @p n_iv entries, in that order) and open
 * the connection's receive window to @p conn_window. @p user is what the
 * callbacks get; @p mem is not kept. @return 0 with *@p s the caller's
 * (nghttp2_session_del), or -ENOMEM with *@p s NULL and nothing left over.
 */
int http_h2_session_new(nghttp2_session **s, const struct http_h2_session_def *d, void *user,
			nghttp2_mem *mem, const struct arn_cfg_h2 *o,
			const nghttp2_settings_entry *iv, size_t n_iv, uint32_t conn_window);

/** Copy @p len bytes to the end of @p in, in mbufs of @p w's pool.
 * @return false when out of mbufs (what was copied stays). */
bool http_h2_in_copy(struct http_worker *w, struct http_in *in, const uint8_t *p, size_t len);

#endif
