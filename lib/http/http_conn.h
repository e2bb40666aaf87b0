/*
 * A downstream HTTP/1 connection: it accepts (filter chain selection), takes
 * lib/tcp's callbacks, waits for each request's head before the request
 * takes a buffer, runs its stream (http_hcm.h) whenever something happened,
 * and closes (linger, FIN, drain) or waits for the next request under its
 * idle timer.
 *
 * Ownership: the blocks are the worker's (w->conns, allocated by
 * http_module.c); one is taken from w->conn_free on accept and goes back
 * when lib/tcp's on_close has come and its run has unwound. Its stream
 * reaches it only through struct http_conn_ops (http_stream.h).
 */
#ifndef ARN_HTTP_CONN_H
#define ARN_HTTP_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include "http_conn_blk.h"

struct arn_tcp_ops;
struct http_worker;

/** What listeners hand to lib/tcp (the listener user is the worker). */
extern const struct arn_tcp_ops http_dc_ops;
/** Worker shutdown: reset and free every connection. */
void http_conns_shutdown(struct http_worker *w);

#endif
