/*
 * The access log record of a stream, written when the stream ends.
 */
#ifndef ARN_HTTP_ACCESS_LOG_H
#define ARN_HTTP_ACCESS_LOG_H

struct http_stream;

/** Build @p st's record and hand it to each of its HCM's access
 * loggers (nothing when it has none). */
void http_access_log(struct http_stream *st);

#endif
