/*
 * Downstream HTTP/2 (RFC 9113) on nghttp2's session API: one client
 * connection carrying many streams, each of which goes through the same
 * connection manager, router, local replies, access log and statistics
 * as an HTTP/1.1 request (http_hcm.c).
 *
 * How it plugs into the stream layer: each HTTP/2 stream is a connection
 * block of its own (struct http_h1_conn from the worker's pool, marked
 * h2s.on) whose struct http_conn is what its stream sees: its ops reach
 * the stream's HTTP/2 connection (run it, end the stream, RST_STREAM),
 * and its downstream peer (hc->dn) is the stream's struct http_h2_stream,
 * whose codec is http_codec_h2. The connection's own block keeps the
 * transport (its http_h1_peer's input, output, TLS) and the nghttp2
 * session (struct http_h2_conn). So nothing of the stream layer needed to
 * know about multiplexing: "close the connection after this response"
 * on a stream block ends that stream only.
 *
 * Flow control: nghttp2 does not send WINDOW_UPDATE by itself
 * (no_auto_window_update): a request body's bytes are consumed, and the
 * client's windows reopened, only when the upstream's codec took them;
 * the response body is read from the upstream's input only as the
 * client's window lets nghttp2 frame it, except a small piece the
 * windows take at once (HTTP_H2_BODY_COPY_MAX bytes per stream), copied so
 * that a small response leaves whole, HEADERS and DATA with END_STREAM,
 * in one write at the end of the run that read it. Memory: nghttp2 allocates
 * through a counting allocator bounded per connection
 * (HTTP_H2_MEM_MAX); the bytes of request bodies waiting for their
 * upstream are bounded by the connection window Arion advertises.
 *
 * Ownership: struct http_h2_conn is allocated when a connection turns to
 * HTTP/2 and freed with its block (http_h2_free); stream blocks go back to
 * the worker's pool when their stream ends, all of them before their
 * connection's. Worker lcore only.
 */
#ifndef ARN_HTTP_H2_H
#define ARN_HTTP_H2_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>

#include "http_codec.h"
#include "http_h2_mem.h"
#include "http_h2_util.h"
#include "http_io.h"
#include "http_worker.h"

struct http_h1_conn;
struct http_h2_conn;
struct nghttp2_rcbuf;

/* Limits Arion applies on top of http2_protocol_options (docs/http.md,
 * docs/security.md): Envoy's defaults would let one connection hold
 * 2^31 streams and 256 MiB per window. */
#define HTTP_H2_MAX_STREAMS 128		       /* concurrent streams per connection */
#define HTTP_H2_MAX_STREAM_WINDOW (256u << 10) /* bytes of one request body buffered */
#define HTTP_H2_MAX_CONN_WINDOW (1u << 20)     /* bytes of all request bodies buffered */
#define HTTP_H2_MAX_CONTINUATIONS 8	       /* CONTINUATION frames in one header block */
#define HTTP_H2_BODY_COPY_MAX 2048	       /* response body bytes copied per stream (below) */

/* The client connection preface (RFC 9113 3.4). */
#define HTTP_H2_PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define HTTP_H2_PREFACE_LEN 24

/*
 * One HTTP/2 stream as its stream's downstream peer: what the client sent
 * (decoded into the stream's request message by nghttp2's callbacks) and
 * the response going back by reference, framed as the client's window
 * allows.
 */
struct http_h2_stream {
	struct http_peer peer; /* codec = &http_codec_h2 */
	bool on;	       /* this block is an HTTP/2 stream */
	struct http_h2_conn *h2;
	struct http_h1_conn *next, *prev; /* the connection's streams */
	int32_t id;
	/* the request */
	bool head_in, head_given, end_in, end_given, bad, closed;
	bool reset_in;	      /* the client sent RST_STREAM, whatever its code */
	bool overflow;	      /* its header list was refused: nghttp2 reset it */
	bool body_lost;	      /* DATA bytes were lost (out of mbufs): reset it */
	uint32_t close_error; /* RST_STREAM's error code when closed */
	uint32_t hdr_bytes;   /* header list size so far (RFC 9113 6.5.2) */
	uint16_t n_rc;
	struct nghttp2_rcbuf *rc[HTTP_H2_RCBUFS];
	/* its trailers past the slots the head left, and the references to
	 * their bytes past rc (from the worker's pool; NULL until needed) */
	struct http_trl *trl;
	struct http_in body; /* DATA payload copied into mbufs, not yet handed on */
	uint32_t given;	     /* bytes of the last HTTP_EV_BODY, consumed at the next decode */
	uint32_t unconsumed; /* bytes received and not given back to the window */
	/* the response */
	bool submitted, resp_end, eof_sent, deferred, no_body;
	const char *out; /* body bytes by reference (the upstream's input) */
	uint32_t out_len;
	struct http_in reply; /* a local reply's body, copied */
	/* the response's trailers, copied ("name\0value\0" each, names
	 * lowercased), sent as a HEADERS frame after the body */
	struct rte_mbuf *trailers;
	uint16_t n_trailers;
};

extern const struct http_codec_ops http_codec_h2;

/** Does @p in start with the client preface? 1: yes; 0: it cannot; -1:
 * not enough bytes yet to tell. */
int http_h2_preface(const struct http_in *in);
/** Turn connection @p c to HTTP/2 (its input untouched: the preface is
 * the session's). @return 0, or -ENOMEM (the caller closes it). */
int http_h2_start(struct http_h1_conn *c);
/** One run of an HTTP/2 connection: read, step every stream, write. */
void http_h2_run(struct http_h1_conn *c);
/** The connection is going away (lib/tcp closed it, or worker shutdown):
 * end every stream and free the session. */
void http_h2_free(struct http_h1_conn *c);
/** The connection's listener drain ended: GOAWAY (the caller runs it;
 * it closes once its streams are done). */
void http_h2_drain(struct http_h1_conn *c);
/** Idle timeout of an HTTP/2 connection without streams: GOAWAY, close. */
void http_h2_idle(struct http_h1_conn *c);

#endif
