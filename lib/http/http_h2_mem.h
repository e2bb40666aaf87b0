/*
 * nghttp2's allocations, counted and capped per HTTP/2 connection, for the
 * downstream (http_h2.c) and upstream (http_upstream_h2.c) sessions alike:
 * nghttp2 allocates with the C library's allocator (HPACK tables, frames
 * queued, stream state), and a peer decides how much of that it makes
 * Arion hold, so each connection counts its bytes and an allocation past
 * HTTP_H2_MEM_MAX fails (nghttp2 then fails the session: the connection
 * closes with GOAWAY). Worker lcore only; the counter belongs to the
 * connection that owns the session.
 */
#ifndef ARN_HTTP_H2_MEM_H
#define ARN_HTTP_H2_MEM_H

#include <stddef.h>

#include <nghttp2/nghttp2.h>

#define HTTP_H2_MEM_MAX (4u << 20) /* nghttp2's own allocations per connection */

/** nghttp2's allocator counting into *@p used (bytes held now), refusing
 * any allocation that would take it past HTTP_H2_MEM_MAX. */
nghttp2_mem http_h2_mem(size_t *used);

/** Zeroed memory counted in *@p used (the same budget as the session's), or
 * NULL past HTTP_H2_MEM_MAX; freed by http_h2_mem_free(p, used). */
void *http_h2_mem_calloc(size_t nmemb, size_t size, void *used);
void http_h2_mem_free(void *p, void *used);

#endif
