/*
 * The request body a stream keeps, in whole mbufs (http_rb.c): for the
 * router's retries and shadows (http_rb_append, http_router_filter.h) and
 * for a filter that reads the body before the request goes on (ext_authz's
 * with_request_body). Bounded by the caller's byte limit and the worker's
 * HTTP_RB_WORKER_SEGS mbufs.
 *
 * Ownership: the chain is the stream's http_xreq's (X(st)->rb_head), from
 * the first kept byte to http_rb_free (the request's end, or a retry
 * abandoned).
 */
#ifndef ARN_HTTP_RB_H
#define ARN_HTTP_RB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct http_stream;

/** Forget the request body kept for retries. */
void http_rb_free(struct http_stream *st);
/** Keep @p n body bytes whatever the retry policy (ext_authz's
 * with_request_body), at most @p limit in all. @return false when a
 * bound says no more (@p limit, the worker's HTTP_RB_WORKER_SEGS, the
 * mbufs). */
bool http_rb_keep(struct http_stream *st, const char *p, size_t n, uint32_t limit);
/** The first @p cap bytes of the body kept into @p out. @return how many. */
size_t http_rb_copy(const struct http_stream *st, char *out, size_t cap);
/** The body kept goes to the first attempt's upstream after its head, as
 * a retry's does (nothing when none is kept). */
void http_rb_send_first(struct http_stream *st);

#endif
