/*
 * A downstream HTTP/1 connection: lib/tcp's callbacks, the pump, closing.
 */
#ifndef ARN_HTTP_CONN_H
#define ARN_HTTP_CONN_H

struct http_conn;
struct http_timer;
struct http_worker;
struct arn_tcp_ops;

extern const struct arn_tcp_ops http_dc_ops;
void http_dc_pump(struct http_conn *hc);
void http_dc_response_event(struct http_conn *hc);
void http_conns_shutdown(struct http_worker *w);
/* Run the connection's stream until nothing changes (never recursive). */
void http_conn_run(struct http_conn *hc);
#define http_conn_abort(hc) http_conn_abort_(hc, __LINE__)
void http_conn_abort_(struct http_conn *hc, int line);
void http_conn_start_close(struct http_conn *hc);
void http_conn_idle_timeout(struct http_timer *t);

#endif
