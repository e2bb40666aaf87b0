/*
 * The codec contract: how a stream reads and writes the messages of its two
 * peers (the client that sent the request, the upstream that answers it)
 * without knowing the protocol on the wire. HTTP/1 (http_codec_h1.c)
 * implements it for both peers; an HTTP/2 codec implements the same table,
 * its peer being one stream of a multiplexed connection.
 *
 * Messages are struct arn_h1_msg (start line, header slices, framing flags)
 * and header edits struct arn_h1_edit (arn_h1.h): the message model every
 * codec fills when it decodes and applies when it encodes. HTTP/2 fills the
 * same fields from its pseudo-headers.
 *
 * Flow control: a codec decodes one event per call and only when asked. The
 * stream asks for the next event of one peer only once the other peer's
 * codec handed the previous one to its transport (queued is false): body
 * bytes are queued by reference, so a slow reader closes the writer's
 * window instead of growing memory.
 *
 * Ownership: a peer is embedded in its connection (the downstream
 * connection's owner, or struct http_upconn) and lives as long as it. A
 * message buffer (struct http_msgbuf) is the stream's; the stream lends it
 * to the codec of the peer that sends that message, and the slices of a
 * decoded message stay valid until the stream releases the buffer (pins,
 * scratch). Nothing here calls back into the stream; everything runs on
 * the peer's worker.
 */
#ifndef ARN_HTTP_CODEC_H
#define ARN_HTTP_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arn_h1.h"
#include "http_io.h"

struct http_codec_ops;
struct http_trl;

/* One peer of a stream, as its codec reads and writes it. */
struct http_peer {
	const struct http_codec_ops *codec;
	bool eof; /* the peer closed its sending side (lib/tcp's on_eof) */
	/* something is queued that the transport did not take yet: kept by
	 * the codec after every encode and flush, and read before every event
	 * a stream takes (a field, not a call) */
	bool queued;
};

/* Bytes of http_msgbuf.scratch: enough for the lines of a head that span
 * segments in all but heads of many long lines (those go on in a larger
 * buffer from the worker, HTTP_BIG_SCRATCH). */
#define HTTP_SCRATCH 8192

/*
 * Where a message is decoded to: the stream's, lent to the codec of the
 * peer that sends the message. The header array and scratch come from the
 * stream's request buffer (struct http_res) once it has one.
 */
struct http_msgbuf {
	struct arn_h1_msg m;
	struct http_pins pins; /* input segments the head's slices point into */
	char *scratch;	       /* HTTP_SCRATCH bytes for lines across segments */
	/* where what the message takes from the worker beyond them is kept
	 * (the stream's request buffer's) */
	struct http_msg_more *more;
};

/* What a message may take from its worker beyond its buffers, kept until
 * its stream ends: a larger scratch (HTTP_BIG_SCRATCH), a trailer array
 * (HTTP/1: trailers past the slots the head left). NULL: none taken. */
struct http_msg_more {
	char *big;
	struct http_trl *trl;
};

enum http_ev_type {
	HTTP_EV_NONE = 0, /* input was taken, no event yet (a head's lines) */
	HTTP_EV_HEAD,	  /* the message's head is complete in the buffer */
	HTTP_EV_BODY,	  /* data, len: body bytes (without framing), or a tunnel's */
	HTTP_EV_END,	  /* the message is complete */
	/* data, len: a body's last bytes, and the message is complete: one
	 * event for the two where they came in one decode (issue 17). Only
	 * from http_h1_decode_fused (http_codec_h1.h), never from decode(). */
	HTTP_EV_BODY_END,
};

struct http_ev {
	enum http_ev_type type;
	const char *data; /* HTTP_EV_BODY: in the peer's input; valid until the next decode */
	size_t len;
	/* HTTP_EV_HEAD: the message ended with its head (no body, and the
	 * connection goes on as HTTP): the codec took its END too, which no
	 * decode gives again; the stream handles it after the head, when it
	 * would have taken the next event (one decode a request less: issue
	 * 17). Set with every HEAD: by HTTP/1 for a request (a client's
	 * message); for a response only by http_h1_decode_fused, whose HEAD
	 * may also carry the body's first bytes in data/len
	 * (http_codec_h1.h); false otherwise. */
	bool end;
	/* decode() -EBADMSG on a request: the status a server answers and
	 * Envoy's response code details */
	unsigned status;
	const char *details;
};

/* What a codec must know of the exchange to write a response head. */
struct http_head_info {
	uint8_t req_method;  /* enum arn_h1_method of the request answered */
	uint8_t req_version; /* 10, 11: the request's HTTP version */
	bool tunnel;	     /* the response switches the exchange to raw bytes (101) */
	bool close;	     /* in: the connection closes after this exchange; out: the
				codec made it so (a body only its close can end) */
};

/* A local reply: the whole response, made here. */
struct http_reply {
	unsigned status;
	const char *body; /* may be NULL */
	size_t blen;
	const char *server; /* the server header's value */
	const struct arn_h1_edit *extra;
	unsigned n_extra;
	bool close;	/* the connection closes after it */
	bool head_only; /* the request was HEAD: no body is written */
};

struct http_codec_ops {
	const char *name; /* "HTTP/1.1" */

	/* ---- what the peer sends ---- */

	/**
	 * The next event of the message the peer sends, decoded into @p mb,
	 * taking input from the transport as needed. @p keep: the head's
	 * slices are still to be used, so keep what they point into.
	 * @return 0 with @p ev (HTTP_EV_NONE: progress without an event);
	 *   -EAGAIN: nothing until the peer sends more (or until the stream
	 *   lets the codec go on: a request to switch protocols waits for
	 *   upgrade());
	 *   -ESHUTDOWN: the peer closed where a message may end; @p ev is
	 *   HTTP_EV_END when the close ends the message (a body delimited by
	 *   the close), else HTTP_EV_NONE;
	 *   -ECONNABORTED: the peer closed in the middle of a message;
	 *   -EBADMSG: the peer broke the protocol (for a request, @p ev says
	 *   what to answer). The codec takes no more input after it.
	 */
	int (*decode)(struct http_peer *p, struct http_msgbuf *mb, bool keep, struct http_ev *ev);
	/** The exchange switched protocols (@p accepted: 101, CONNECT's 2xx):
	 * raw bytes both ways from now on; or it stays HTTP (refused). */
	void (*upgrade)(struct http_peer *p, bool accepted);
	/** Between messages: nothing of a next message was taken. */
	bool (*idle)(const struct http_peer *p);
	/** The stream takes its message buffer back (after idle()). */
	void (*release)(struct http_peer *p);

	/* ---- what goes to the peer ---- */

	/**
	 * Queue the request head for @p m: its method, @p path, and its
	 * headers with @p e applied (@p e has room for one more edit, the
	 * codec's own); @p upgrade keeps a request to switch protocols. The
	 * body is framed as @p m's.
	 * @return 0; -E2BIG (more edits than a head takes: nothing queued);
	 *   -ENOBUFS (out of mbufs: nothing queued).
	 */
	int (*encode_request_head)(struct http_peer *p, const struct arn_h1_msg *m,
				   const char *path, uint32_t plen, struct arn_h1_edit *e,
				   unsigned n_edits, bool upgrade);
	/**
	 * Queue the response head for @p m with @p e applied (room for one
	 * more edit, as above); the codec frames the body for the request
	 * @p hi describes and may decide that the connection closes after it
	 * (@p hi->close). @return as encode_request_head.
	 */
	int (*encode_response_head)(struct http_peer *p, const struct arn_h1_msg *m,
				    struct arn_h1_edit *e, unsigned n_edits,
				    struct http_head_info *hi);
	/** Queue a whole local reply. @return 0, -ENOBUFS (nothing queued). */
	int (*encode_reply)(struct http_peer *p, const struct http_reply *r);
	/** Queue an interim "100 Continue" (dropped when out of mbufs). */
	void (*encode_continue)(struct http_peer *p);
	/** Queue @p len body bytes, framed as the head said (a chunk is
	 * queued whole, with the CRLF that closes it). They stay where
	 * they are (another peer's input) until queued is false. */
	void (*encode_body)(struct http_peer *p, const char *data, size_t len);
	/** The message's trailers (@p m's trailers[0 .. n_trailers)),
	 * to go with its end (encode_end follows). NULL: the codec drops them
	 * (HTTP/1.1 to clients). They are copied: @p m's slices may go once
	 * it returns. */
	void (*encode_trailers)(struct http_peer *p, const struct arn_h1_msg *m);
	/** End the body (a chunked body's last chunk). */
	void (*encode_end)(struct http_peer *p);
	/**
	 * The bytes encode_body lent are going away (the other peer's
	 * connection closed, and its input with it): copy what the codec
	 * still refers to into buffers of its own (mbufs of the worker's
	 * pool), in their place in the output. At most the last body piece
	 * is lent (the stream hands on the next only once queued is false),
	 * so the copy is bounded by what one decode gives (HTTP_IN_MAX).
	 * NULL: the codec never lends. @return 0 (nothing lent any more);
	 * -ENOBUFS (out of mbufs: the lent bytes are dropped, the output is
	 * no longer whole, and the caller resets the stream).
	 */
	int (*own_body)(struct http_peer *p);
	/** Hand what is queued to the transport. @return 0 (all of it),
	 * -EAGAIN (the rest waits for room), another negative errno (the
	 * transport cannot take data any more). */
	int (*flush)(struct http_peer *p);
};

#endif
