/*
 * The access log record of a stream (Envoy's access log fields), built
 * when the stream ends.
 */
#ifndef ARN_HTTP_ACCESS_LOG_H
#define ARN_HTTP_ACCESS_LOG_H

struct http_stream;
struct arn_access_record;

/**
 * @p st's record as its access log would have it now (local_reply_config's
 * mappers test a local reply's). It points as http_access_log's does.
 */
void http_access_record(struct http_stream *st, struct arn_access_record *out);

/**
 * Build @p st's record and hand it to each of its HCM's access loggers
 * (nothing when it has none). The record points into the stream (its
 * messages are still whole: call it before the stream lets go of them) and
 * into the worker's scratch (w->log_req, w->log_resp); the loggers format
 * it during the call and keep none of it.
 */
void http_access_log(struct http_stream *st);

#endif
