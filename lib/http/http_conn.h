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

#include "http_codec_h1.h"
#include "http_h2.h"
#include "http_stream.h"
#include "http_tls.h"

struct arn_tcp_ops;
struct http_worker;

struct http_h1_conn {
	struct http_conn c; /* what its stream sees (first) */
	union {
		/* the client, as HTTP/1 reads and writes it; for an HTTP/2
		 * connection, its transport (input, output, TLS) */
		struct http_h1_peer dn;
		/* is_h2_stream: this block is one stream of an HTTP/2
		 * connection, and this its downstream peer (http_h2.h) */
		struct http_h2_stream h2s;
	};
	bool is_h2_stream;
	bool proto_known;	 /* HTTP/1.1 or HTTP/2 was chosen (preface, ALPN, codec_type) */
	struct http_h2_conn *h2; /* the connection speaks HTTP/2 (its session) */
	bool in_run;		 /* its run is on the stack: a nested one only asks for a round */
	bool dead;		 /* lib/tcp closed it during its run: freed when that unwinds */
	bool shut;		 /* FIN sent while closing */
	bool aborted;		 /* reset by us (reset op), not by the client */
	/* the next request's head looked for in the input before the request
	 * takes a buffer (head_ready): bytes from the input's cursor scanned,
	 * and where the scan is in its lines */
	uint32_t hs_scanned;
	bool hs_line;  /* the current line has a byte other than CR */
	bool hs_start; /* a non-empty line (the request line) was seen */
	bool head_in;  /* the whole head (or more than it may be) is in the input */
	/* a chain with TLS: dn's transport, its handshake run before the
	 * codec sees a byte (tls.on) */
	struct http_tls_tp tls;
	/* a listener with tls_inspector: no chain yet, the ClientHello is
	 * read from TCP's queue (not consumed) until it chooses one */
	bool inspecting;
	struct arn_tls_hello_parser hello;
};

/** What listeners hand to lib/tcp (the listener user is the worker). */
extern const struct arn_tcp_ops http_dc_ops;
/** Worker shutdown: reset and free every connection. */
void http_conns_shutdown(struct http_worker *w);

#endif
