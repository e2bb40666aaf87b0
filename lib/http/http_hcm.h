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

#include <stdbool.h>

#include "http_stream.h"

struct http_conn;
struct http_peer;
struct http_res;

/** Ready @p st for its first request on @p hc (a connection's set-up). */
void http_stream_init(struct http_stream *st, struct http_conn *hc);
/** The request's first byte arrived: the stream's timers start (the
 * connection's idle timer leaves a connection with a started stream
 * alone). The request has no buffer yet. */
void http_stream_started(struct http_stream *st);
/* The same, with @p head_later: request_headers_timeout is not armed yet;
 * http_stream_head_deadline arms it (with the deadline it would have had)
 * when the head has to wait, in the same run. A head that is in and takes
 * its buffer at once is parsed in that run, before any timer can fire.
 * Inline: an HTTP/1 connection starts a stream once a request (bench_hcm:
 * 14 instructions a request in the call). */
static inline void http_stream_start(struct http_stream *st, bool head_later)
{
	struct http_conn *hc = st->hc;
	struct http_worker *w = hc->w;
	const struct arn_cfg_hcm *h = hc->hcm;
	st->state |= HTTP_S_STARTED;
	st->start_tsc = http_tsc(w);
	st->last_activity_ms = w->now_ms;
	/* the connection's idle timer is not cancelled: it leaves a
	 * connection with a stream alone (HTTP/1: conn_idle_timeout), and the
	 * stream's end takes it over */
	if (!h)
		return;
	if (!head_later && h->request_headers_timeout_ms)
		http_timer_arm(w, &st->hdr_timer, h->request_headers_timeout_ms);
	if (h->request_timeout_ms)
		http_timer_arm(w, &st->req_timer, h->request_timeout_ms);
	/* An idle timer still armed from an earlier stream (http_stream_end)
	 * stays when it is due before this stream's idle time would end: it
	 * then arms itself for what is left (stream_idle_timeout counts from
	 * last_activity_ms). */
	st->idle_timeout_ms = h->stream_idle_timeout_ms;
	if (!st->idle_timeout_ms)
		http_timer_stop(&st->idle_timer);
	else if (!st->idle_timer.armed || st->idle_timer.due_ms > w->now_ms + st->idle_timeout_ms)
		http_timer_arm(w, &st->idle_timer, st->idle_timeout_ms);
}
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
/**
 * The upstream connection of @p st closed (its input, which the client's
 * output may still refer to, goes next) after the response's end was
 * decoded and held for its last bytes to reach the client
 * (HTTP_S_RESP_END_HELD). When only those bytes hold it (no filter's
 * output, not a tunnel), the client's codec copies them (own_body) and
 * the end follows them, as Envoy's router completes a response its codec
 * decoded whole (UpstreamRequest::decodeData with end_stream) whatever
 * its connection does next. Counted in http.<prefix>.rs_upstream_close_*.
 * @return true: the response is complete (HTTP_S_RESP_DONE), its end
 * queued after its bytes; false: it is not (nothing held, or no mbuf for
 * the copy: the caller resets it as lost).
 */
bool http_hcm_resp_keep_end(struct http_stream *st);

/**
 * A filter that took @p st at its head (its decode_head said true) lets
 * the request on: the decode_head walk goes on from filter @p from (which
 * is asked again: it knows where it stopped), then the router, as on_head
 * would have. The caller then runs the connection (http_conn_run).
 */
struct http_filter_ops;
void http_hcm_resume_head(struct http_stream *st, const struct http_filter_ops *from);

/**
 * A filter that held the upstream's response head (its encode_head_edits
 * said -EAGAIN: http_filter.h) has it go to the client now, with the
 * filters' edits asked again, as it would have gone. From the filter's
 * encode_body at the body's end, before it says true.
 */
void http_hcm_write_head(struct http_stream *st);

/**
 * A filter that holds the upstream's response head for an answer (its
 * encode_head_edits said -EINPROGRESS: http_filter.h) has it go on now:
 * the head is written with the filters' edits asked again, then what came
 * with it (first body bytes, END) and the rest of the response as the
 * step reads it. Nothing if the head is not held (a local reply answered
 * the stream meanwhile). The caller then runs the connection
 * (http_conn_run).
 */
void http_hcm_resume_resp_head(struct http_stream *st);

#endif
