/*
 * envoy.filters.http.buffer (http_buffer.h), as Envoy's buffer_filter.cc
 * (main, where maybeAddContentLength sets content-length unconditionally:
 * the runtime guard buffer_filter_populate_content_length is gone):
 * a request with a body has it read whole before the walk goes on; the
 * route's or virtual host's BufferPerRoute (the most specific) replaces
 * the filter's settings, or turns it off (a FilterConfig disabled, as
 * arn_cfg_filter_off reads it, before this step runs).
 *
 * The body goes into the stream's kept body (http_rb_keep: whole mbufs,
 * the worker's HTTP_RB_WORKER_SEGS at most), which ext_authz's
 * with_request_body and the router's retries read too: one copy. A
 * client that stops sending holds it until the stream's idle or request
 * timeout ends the stream (http_rb_free at its end).
 */
#include <errno.h>
#include <string.h>

#include "arn_config.h"
#include "http_buffer.h"
#include "http_filter.h"
#include "http_int.h"
#include "http_local.h"
#include "http_rb.h"
#include "http_stream.h"
#include "http_worker.h"

/* Envoy's answer to a body past the decoder buffer limit (the connection
 * manager's, for the buffer filter's setDecoderBufferLimit) */
static void too_large(struct http_stream *st)
{
	HTTP_INC(st->hc, downstream_rq_too_large);
	http_local_reply(st, 413, "Payload Too Large", 17, 0, "request_payload_too_large", NULL, 0);
}

/* The body is read no more: the head is the filter's no longer. */
static void reading_over(struct http_stream *st)
{
	st->res->buf_reading = false;
	st->state &= ~HTTP_S_MCP;
}

/* The body is whole in the kept body: framed by its length, it goes first
 * once the router has its upstream. @return false when it could not be
 * framed (answered 500: never the request upstream with a length that is
 * not its body's; a content-length that is not the bytes kept cannot
 * happen while the codecs hold bodies to it, and would end here too). */
static bool whole(struct http_stream *st)
{
	int rc = http_rb_frame_kept(st);
	if (rc != 0) {
		if (rc == -ENOSPC)
			HTTP_INC(st->hc, rq_edit_overflow);
		http_local_reply(
		    st, 500, NULL, 0, 0,
		    rc == -ENOSPC ? "header_edits_overflow" : "request_length_mismatch", NULL, 0);
		return false;
	}
	http_rb_send_first(st);
	return true;
}

bool http_buffer_step(struct http_stream *st, size_t i, const struct arn_cfg_buffer *f,
		      const struct arn_cfg_route_match *mt)
{
	const struct arn_h1_msg *m = &st->req.m;
	/* a head-only request: nothing to read (Envoy's end_stream) */
	if (!st->res || !http_msg_has_body(m))
		return false;
	const struct arn_cfg_hcm *h = st->hc->hcm;
	const char *name = h->http_filter_names ? h->http_filter_names[i] : NULL;
	const struct arn_cfg_buffer *pr =
	    mt && name ? arn_cfg_per_filter_find(mt->vhost, mt->route, name, strlen(name),
						 ARN_CFG_PF_BUFFER)
		       : NULL;
	uint32_t max = pr ? pr->max_request_bytes : f->max_request_bytes;
	/* refused before a byte of it is read */
	if ((m->flags & ARN_H1_F_CONTENT_LENGTH) && m->content_length > max) {
		too_large(st);
		return true;
	}
	st->res->buf_from = (uint8_t)(i + 1);
	if (st->state & HTTP_S_REQ_DONE) {
		/* read whole already, by a filter before this one (ext_authz's
		 * with_request_body): it is the kept body */
		if (X(st)->rb_bytes > max) {
			too_large(st);
			return true;
		}
		return !whole(st);
	}
	/* the rest of it (a filter before this one may have kept its
	 * start: the bound counts it) */
	st->res->buf_max = max;
	st->res->buf_reading = true;
	st->state |= HTTP_S_MCP;
	return true;
}

bool http_buffer_body(struct http_stream *st, const char *data, size_t len)
{
	struct http_conn *hc = st->hc;
	if (__builtin_expect(st->req_xf != 0, 0)) {
		/* a filter rewrites the body (gRPC-Web text): what is kept is
		 * what goes upstream */
		const char *out = NULL;
		long k = http_filters[st->req_xf - 1]->decode_xform(st, (char *)(uintptr_t)data,
								    len, false, &out);
		if (k < 0) {
			reading_over(st);
			return false;
		}
		data = out;
		len = (size_t)k;
	}
	if ((uint64_t)X(st)->rb_bytes + len > st->res->buf_max) {
		reading_over(st);
		too_large(st);
		return false;
	}
	if (!http_rb_keep(st, data, len, st->res->buf_max)) {
		/* the worker's bound (HTTP_RB_WORKER_SEGS) or its mbufs: this
		 * request is refused, the bodies kept stay whole */
		reading_over(st);
		HTTP_INC(hc, rq_buffer_overflow);
		http_local_reply(st, 503, NULL, 0, 0, "request_buffer_overflow", NULL, 0);
		return false;
	}
	return true;
}

void http_buffer_body_end(struct http_stream *st)
{
	reading_over(st);
	if (__builtin_expect(st->req_xf != 0, 0)) {
		/* the rewriting filter's check of the body's end */
		const char *out = NULL;
		if (http_filters[st->req_xf - 1]->decode_xform(st, NULL, 0, true, &out) < 0)
			return;
	}
	if (!whole(st))
		return;
	st->hc->ops->resume_head(st, &http_l4_filter_ops);
}

size_t http_buffer_resume_at(const struct http_stream *st)
{
	return st->res ? st->res->buf_from : 0;
}

void http_buffer_stream_end(struct http_stream *st)
{
	if (!st->res)
		return;
	st->res->buf_from = 0;
	st->res->buf_reading = false;
}
