/*
 * The request body a stream keeps (its http_xreq's rb_head chain, packed
 * into whole mbufs counted in the worker's rb_segs, HTTP_RB_WORKER_SEGS at
 * most): for the router's retries and shadows, and for a filter that must
 * read a body before the request goes on (ext_authz's with_request_body).
 * Below both: neither names the other through it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_mbuf.h>

#include "http_rb.h"
#include "http_stream.h"
#include "http_int.h"
#include "http_req_kept.h"

void http_rb_chain_free(struct http_worker *w, struct rte_mbuf *head, uint32_t segs)
{
	struct rte_mbuf *m = head;
	while (m) {
		struct rte_mbuf *n = m->next;
		m->next = NULL;
		m->nb_segs = 1;
		rte_pktmbuf_free_seg(m);
		m = n;
	}
	w->rb_segs -= segs;
}

/* The kept segments go back: out of line, so that the common call (none
 * kept) sets up no frame for the freeing loop. */
static void __attribute__((noinline)) rb_free_chain(struct http_stream *st)
{
	http_rb_chain_free(st->hc->w, X(st)->rb_head, X(st)->rb_segs);
	X(st)->rb_head = X(st)->rb_tail = NULL;
	X(st)->rb_bytes = X(st)->rb_segs = 0;
}

void http_rb_free(struct http_stream *st)
{
	if (!st->res)
		return;
	/* nothing kept (every request without a retried body): the counts
	 * are 0 already */
	if (X(st)->rb_head)
		rb_free_chain(st);
	X(st)->replay = NULL;
	st->state &= ~HTTP_S_REPLAYING;
}

bool http_rb_chain_append(struct http_worker *w, struct rte_mbuf **head, struct rte_mbuf **tail,
			  uint32_t *segs, uint32_t *bytes, const char *p, size_t n)
{
	while (n) {
		struct rte_mbuf *t = *tail;
		size_t room = t ? rte_pktmbuf_tailroom(t) : 0;
		if (!room) {
			if (w->rb_segs >= (w->rb_segs_max ? w->rb_segs_max : HTTP_RB_WORKER_SEGS))
				return false;
			struct rte_mbuf *m = http_mbuf(w);
			if (!m)
				return false;
			m->next = NULL;
			if (t)
				t->next = m;
			else
				*head = m;
			*tail = m;
			(*segs)++;
			w->rb_segs++;
			continue;
		}
		size_t k = n < room ? n : room;
		memcpy(rte_pktmbuf_mtod_offset(t, char *, t->data_len), p, k);
		t->data_len = (uint16_t)(t->data_len + k);
		t->pkt_len = t->data_len;
		p += k;
		n -= k;
		*bytes += (uint32_t)k;
	}
	return true;
}

bool http_rb_keep(struct http_stream *st, const char *p, size_t n, uint32_t limit)
{
	struct http_xreq *x = X(st);
	if ((uint64_t)x->rb_bytes + n > limit)
		return false;
	return http_rb_chain_append(st->hc->w, &x->rb_head, &x->rb_tail, &x->rb_segs, &x->rb_bytes,
				    p, n);
}

size_t http_rb_copy(const struct http_stream *st, char *out, size_t cap)
{
	size_t k = 0;
	for (const struct rte_mbuf *m = X(st)->rb_head; m && k < cap; m = m->next) {
		size_t n = m->data_len < cap - k ? m->data_len : cap - k;
		memcpy(out + k, rte_pktmbuf_mtod(m, const char *), n);
		k += n;
	}
	return k;
}

void http_rb_send_first(struct http_stream *st)
{
	if (!X(st)->rb_head)
		return;
	st->state |= HTTP_S_REPLAYING;
	X(st)->replay = X(st)->rb_head;
}

int http_rb_frame_kept(struct http_stream *st)
{
	struct arn_h1_msg *m = &st->req.m;
	uint32_t n = X(st)->rb_bytes;
	if (st->grpc_web)
		return 0;
	/* its codec held the body to that length (HTTP/1's parser, nghttp2's
	 * check): were it otherwise, the request does not go */
	if (m->flags & ARN_H1_F_CONTENT_LENGTH)
		return m->content_length == n ? 0 : -EPROTO;
	char num[12];
	int k = snprintf(num, sizeof(num), "%u", n);
	char *v = http_st_text(st, (size_t)k);
	if (!v)
		return -ENOSPC;
	memcpy(v, num, (size_t)k);
	struct arn_h1_edit e = {.name = "content-length",
				.name_len = 14,
				.value = v,
				.value_len = (uint32_t)k,
				.op = ARN_H1_EDIT_SET};
	if (http_req_edits_keep(st, &e, 1) < 0)
		return -ENOSPC;
	/* a content-length the parser ignored beside chunked is the one SET
	 * replaces: the codec is not to remove it again */
	m->flags &= ~(ARN_H1_F_CHUNKED | ARN_H1_F_TE | ARN_H1_F_CL_IGNORED);
	m->flags |= ARN_H1_F_CONTENT_LENGTH;
	m->content_length = n;
	return 0;
}
