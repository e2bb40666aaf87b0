/*
 * HTTP/1 behind the codec contract (http_codec.h), for both peers of a
 * stream: a client's connection (requests in, responses out) and an
 * upstream connection (requests out, responses in). One peer is one TCP
 * connection that carries one exchange at a time; its input, parser and
 * output are here, on top of the parser and serializer of arn_h1.h.
 *
 * Ownership: a struct http_h1_peer is embedded in its connection, which
 * sets it up (http_h1_peer_init, then http_h1_serve or http_h1_expect for
 * each response), frees what it holds (http_h1_peer_free) and clears tc
 * when lib/tcp closes the connection. Streams reach it only through
 * http_codec_h1 (peer.codec).
 */
#ifndef ARN_HTTP_CODEC_H1_H
#define ARN_HTTP_CODEC_H1_H

#include <stdbool.h>
#include <stdint.h>

#include "arn_h1.h"
#include "http_codec.h"
#include "http_io.h"

struct arn_tcp_conn;
struct http_worker;

struct http_h1_peer {
	struct http_peer peer;	   /* what streams see; codec = &http_codec_h1 */
	struct http_worker *w;	   /* mbufs, large scratch, the Date value */
	struct arn_tcp_conn *tc;   /* its TCP connection; NULL once lib/tcp closed it */
	struct http_transport *tp; /* what carries its bytes over tc (raw unless set) */
	bool server;		   /* it sends requests (a client of ours) */
	bool chunked;		   /* the body it is sent is chunked (ch frames it) */
	/* Http1ProtocolOptions.enable_trailers of its side (the HCM's for a
	 * client, the cluster's for an upstream): trailers it is given go
	 * after a chunked body's last chunk; without it they are dropped */
	bool trailers;
	bool trailed; /* the last chunk went with the trailers: encode_end adds none */
	struct arn_h1_chunker ch;
	struct http_in in;
	struct arn_h1_parser p;
	struct http_out out;
};

extern const struct http_codec_ops http_codec_h1;

static inline struct http_h1_peer *http_h1_of(struct http_peer *p)
{
	return (struct http_h1_peer *)(void *)((char *)p - offsetof(struct http_h1_peer, peer));
}

/** Set @p h up for TCP connection @p tc, raw transport (the rest zeroed). */
void http_h1_peer_init(struct http_h1_peer *h, struct http_worker *w, struct arn_tcp_conn *tc);
/** Give back what @p h holds (input segments, queued output). */
void http_h1_peer_free(struct http_h1_peer *h);
/** A client's connection: parse requests into @p msg (the stream's, kept
 * for the connection's life) with @p cfg's limits. */
void http_h1_serve(struct http_h1_peer *h, const struct arn_h1_config *cfg, struct arn_h1_msg *msg);
/** An upstream connection: parse the response to a @p method request into
 * @p msg (the stream's), at most @p max_headers header lines. */
void http_h1_expect(struct http_h1_peer *h, struct arn_h1_msg *msg, uint16_t max_headers,
		    enum arn_h1_method method);
/** An upstream connection's exchange ended and it is kept for the next
 * one: the segments of @p h's input, all of them read (the one a fused
 * END left, http_h1_decode_fused), go, and the parser lets go of the
 * message's scratch (the stream's). http_codec_h1.release and the input's
 * freeing in one direct call. */
void http_h1_reuse(struct http_h1_peer *h);

/**
 * http_codec_h1.decode for a caller that takes HTTP_EV_BODY_END (the
 * connection manager's response, http_hcm.c): a body's last bytes that
 * come with the message's end, a Content-Length body's or a chunked one's
 * whose last chunk (without trailers) follows them in their segment, are
 * one event. The END is taken: no decode gives it again. The segment the
 * bytes lie in stays in the peer's input until the next decode (or
 * http_h1_peer_free, or http_h1_reuse with the connection), so the
 * other peer's output may refer to them until it is flushed.
 *
 * A response's HTTP_EV_HEAD carries what follows it in its segment too:
 * data, len: a Content-Length body's first bytes there (len 0: none), as a
 * BODY event would give them; end: the message ended there, with the head
 * (a keep-alive response without a body: 204, 304, a HEAD's, length 0) or
 * with those bytes, and its END was taken. The caller handles the head,
 * then the bytes, then the END (issue 17: one decode and one event for the
 * usual response instead of two).
 * @return as decode.
 */
int http_h1_decode_fused(struct http_peer *p, struct http_msgbuf *mb, bool keep,
			 struct http_ev *ev);

/* RFC 9112 2.2: a server ignores empty lines before a request line, as
 * Envoy's codec does without opening a stream. Drop them from @p in.
 * @return true when the input starts with a request's first byte; false
 * when it is empty, or holds only a CR whose LF may follow. */
bool http_h1_skip_empty_lines(struct http_in *in);

#endif
