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
struct http_worker;
struct rte_mbuf;

/** Forget the request body kept for retries. */
void http_rb_free(struct http_stream *st);
/** Keep @p n body bytes whatever the retry policy (ext_authz's
 * with_request_body), at most @p limit in all. @return false when a
 * bound says no more (@p limit, the worker's HTTP_RB_WORKER_SEGS, the
 * mbufs). */
bool http_rb_keep(struct http_stream *st, const char *p, size_t n, uint32_t limit);
/**
 * @p n bytes @p p onto the mbuf chain *@p head .. *@p tail (*@p segs
 * mbufs, *@p bytes bytes: the caller's), in whole mbufs counted in the
 * worker's kept bodies (w->rb_segs, within kept_body_mbufs or
 * HTTP_RB_WORKER_SEGS): http_rb_keep's for the request's, ext_proc's for
 * a response's. The caller bounds the bytes. @return false when the
 * worker's bound or its mbufs say no (what fitted stays on the chain).
 */
bool http_rb_chain_append(struct http_worker *w, struct rte_mbuf **head, struct rte_mbuf **tail,
			  uint32_t *segs, uint32_t *bytes, const char *p, size_t n);
/** The mbuf chain from @p head (@p segs mbufs counted in w->rb_segs) goes
 * back: http_rb_free's, ext_proc's for a response's. */
void http_rb_chain_free(struct http_worker *w, struct rte_mbuf *head, uint32_t segs);
/** The first @p cap bytes of the body kept into @p out. @return how many. */
size_t http_rb_copy(const struct http_stream *st, char *out, size_t cap);
/** The body kept goes to the first attempt's upstream after its head, as
 * a retry's does (nothing when none is kept). */
void http_rb_send_first(struct http_stream *st);
/**
 * The request's body is whole in the kept body (the buffer filter read
 * it): the upstream request is framed by its length, the one place that
 * says so. A request with a content-length keeps it (its codec held the
 * body to it: the bytes kept are that many); one without (chunked HTTP/1,
 * HTTP/2 without content-length) gets content-length the bytes kept and
 * loses its chunked framing (transfer-encoding is never forwarded: the
 * codec writes it from ARN_H1_F_CHUNKED alone), so the upstream never
 * sees both. An HTTP/1 client's trailers then have no room on an HTTP/1
 * upstream: dropped, as Envoy's codec drops them after a content-length.
 * A gRPC-Web request keeps its chunked framing (its edits remove
 * content-length). @return 0, or -ENOSPC when the stream's text had no
 * room for the length, -EPROTO when a content-length is not the bytes
 * kept (neither can go on).
 */
int http_rb_frame_kept(struct http_stream *st);

#endif
