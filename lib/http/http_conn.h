/*
 * A downstream HTTP/1 connection: lib/tcp's callbacks, the pump, closing.
 */
#ifndef ARN_HTTP_CONN_H
#define ARN_HTTP_CONN_H

struct http_conn;
struct http_worker;
struct arn_tcp_ops;

extern const struct arn_tcp_ops http_dc_ops;
void http_conns_shutdown(struct http_worker *w);

#endif
