/*
 * The connection manager's stream: its steps, start and end.
 */
#ifndef ARN_HTTP_HCM_H
#define ARN_HTTP_HCM_H

struct http_conn;
struct http_stream;

void http_stream_reset(struct http_conn *hc);
void http_stream_timers_cancel(struct http_stream *st);
void http_stream_end(struct http_conn *hc);
void http_req_step(struct http_conn *hc);
void http_resp_step(struct http_conn *hc);

#endif
