/*
 * Envoy's HTTP connection manager for one stream, whichever codec carries
 * it: the request's head (path normalization, host stripping, then the
 * health check and router filters), the two directions of the exchange,
 * the response head with its edits, the stream's timers and its end.
 *
 * The connection that carries the stream (http_conn.c for HTTP/1) calls
 * these from its run; they reach the connection back only through its ops
 * (http_stream.h) and the peers only through their codecs (http_codec.h).
 */
#ifndef ARN_HTTP_HCM_H
#define ARN_HTTP_HCM_H

struct http_conn;
struct http_peer;
struct http_res;
struct http_stream;

/** Ready @p st for its first request on @p hc (a connection's set-up). */
void http_stream_init(struct http_stream *st, struct http_conn *hc);
/** The request's first byte arrived: the stream's timers start (the
 * connection's idle timer leaves a connection with a started stream
 * alone). The request has no buffer yet. */
void http_stream_started(struct http_stream *st);
/* The same, with @p head_later: request_headers_timeout is not armed yet;
 * http_stream_head_deadline arms it (with the deadline it would have had)
 * when the head has to wait, in the same run. A head that is in and takes
 * its buffer at once is parsed in that run, before any timer can fire. */
void http_stream_start(struct http_stream *st, bool head_later);
void http_stream_head_deadline(struct http_stream *st);
/** The stream got request buffer @p r (its head is in): the messages are
 * decoded into it. */
void http_stream_take(struct http_stream *st, struct http_res *r);
/** Stop every timer of @p st. */
void http_stream_timers_cancel(struct http_stream *st);
/**
 * The exchange is over (or its connection is gone): counters, the access
 * log, the upstream connection released for reuse or closed, the buffer
 * given back. @p st is reset for the next request; the connection decides
 * whether there is one.
 */
void http_stream_end(struct http_stream *st);
/** The request direction: decode from the client, encode to the upstream,
 * as far as flow control lets it. */
void http_req_step(struct http_stream *st);
/** The response direction: decode from the upstream, encode to the client. */
void http_resp_step(struct http_stream *st);

#endif
