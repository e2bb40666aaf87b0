/*
 * The per-stream buffers (struct http_res): a per-worker pool that a
 * request takes from once its head is in the input and gives back when its
 * stream ends, and the first come, first served queue of connections
 * waiting for one (issue 12: slow heads hold none).
 */
#include "http_stream.h"

struct http_res *http_res_get(struct http_worker *w)
{
	struct http_res *r = w->res_free;
	if (r)
		w->res_free = r->next;
	return r;
}

void http_res_wait(struct http_worker *w, struct http_conn *hc)
{
	if (hc->res_waiting)
		return;
	hc->res_waiting = true;
	hc->wnext = NULL;
	hc->wprev = w->res_wait_tail;
	if (w->res_wait_tail)
		w->res_wait_tail->wnext = hc;
	else
		w->res_wait_head = hc;
	w->res_wait_tail = hc;
}

void http_res_unwait(struct http_worker *w, struct http_conn *hc)
{
	if (!hc->res_waiting)
		return;
	hc->res_waiting = false;
	if (hc->wprev)
		hc->wprev->wnext = hc->wnext;
	else
		w->res_wait_head = hc->wnext;
	if (hc->wnext)
		hc->wnext->wprev = hc->wprev;
	else
		w->res_wait_tail = hc->wprev;
	hc->wnext = hc->wprev = NULL;
}

struct http_res *http_res_take(struct http_worker *w, struct http_conn *hc)
{
	/* a buffer freed while others wait is theirs, oldest first (the poll
	 * hands it on): a newcomer, or a connection whose data arrived at the
	 * right moment, never jumps the queue */
	struct http_res *r = NULL;
	if (!w->res_wait_head || w->res_wait_head == hc)
		r = http_res_get(w);
	if (r)
		http_res_unwait(w, hc);
	else
		http_res_wait(w, hc);
	return r;
}

void http_res_put_big(struct http_worker *w, struct http_res *r)
{
	http_big_put(w, r->req_more.big);
	http_big_put(w, r->resp_more.big);
	http_trl_put(w, r->req_more.trl);
	http_trl_put(w, r->resp_more.trl);
	r->req_more = r->resp_more = (struct http_msg_more){0};
	r->next = w->res_free;
	w->res_free = r;
}

bool http_is_grpc(const struct http_stream *st)
{
	if (!(st->state & HTTP_S_HEAD_DONE))
		return false;
	/* the grpc_web filter made it a gRPC request (Envoy's filters after
	 * it and its local replies see content-type application/grpc) */
	if (st->grpc_web)
		return true;
	int i = arn_h1_find_id(&st->req.m, ARN_H1_H_CONTENT_TYPE, 0);
	if (i < 0)
		return false;
	const struct arn_h1_header *h = &st->req.m.hdrs[i];
	/* application/grpc, application/grpc+proto, application/grpc-web... */
	return h->value_len >= 16 && arn_h1_eq_nocase(h->value, 16, "application/grpc", 16) &&
	       (h->value_len == 16 || h->value[16] == '+' || h->value[16] == ';');
}
