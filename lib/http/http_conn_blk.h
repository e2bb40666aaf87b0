/*
 * The block of a downstream connection (struct http_h1_conn): what its
 * stream sees, its HTTP/1 peer or, for one stream of an HTTP/2
 * connection, that stream's peer, and the connection's state. Its own
 * header, below both http_conn.c (which accepts, runs and frees the
 * blocks) and http_h2.c (which takes blocks for its streams), so neither
 * reaches into the other's file for the layout.
 *
 * Ownership: the blocks are the worker's (w->conns, allocated by
 * http_module.c); see http_conn.h and http_h2.h for who takes and gives
 * back which.
 */
#ifndef ARN_HTTP_CONN_BLK_H
#define ARN_HTTP_CONN_BLK_H

#include <stdbool.h>
#include <stdint.h>

#include "arn_proxy_proto.h"
#include "http_codec_h1.h"
#include "http_h2.h"
#include "http_stream.h"
#include "http_tls.h"

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
	/* a listener with proxy_protocol: its header is read first (pp_reading),
	 * each byte consumed from TCP's queue once the signature is known
	 * (pp_taken so far), so a header pins no mbuf; pp_addrs is what it
	 * said (pp_have: a PROXY command with IPv4 addresses) */
	bool pp_reading;
	bool pp_have;
	uint32_t pp_taken;
	struct arn_pp pp;
	struct http_dc_addrs pp_addrs;
};

#endif
