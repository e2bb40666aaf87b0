/*
 * envoy.filters.http.ext_proc (http_ext_proc.h): the stream, the request
 * headers' exchange and what the answer does, as Envoy's ext_proc filter
 * (main of 2025: ext_proc.cc onReceiveMessage, onGrpcError, onGrpcClose,
 * onMessageTimeout, sendImmediateResponse; processor_state.cc
 * handleHeadersResponse; mutation_utils.cc applyHeaderMutations; the
 * mutation rules' Checker).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <rte_mbuf.h>

#include "arn_config.h"
#include "arn_log.h"
#include "http_ctxpool.h"
#include "http_ext_proc.h"
#include "http_ext_proc_grpc.h"
#include "http_filter.h"
#include "http_int.h"
#include "http_local.h"
#include "http_req_kept.h"
#include "http_stream.h"
#include "http_rb.h"
#include "http_subreq.h"
#include "http_worker.h"

_Static_assert(HTTP_EXT_PROC_REQ + HTTP_EXT_PROC_ANS <= HTTP_BIG_SCRATCH,
	       "a stream's message and answer share one large scratch buffer");

enum ep_state {
	EP_WAIT_REQ_HEADERS = 0, /* the request's headers sent, their answer awaited */
	EP_DONE,		 /* processing complete: the stream is ignored */
	/* the request's phase over (or skipped), the response's head to be
	 * sent (response_header_mode SEND): the stream stays open, or opens
	 * then (request_header_mode SKIP) */
	EP_IDLE,
	EP_WAIT_RESP_HEADERS, /* the response's head held, its answer awaited */
	EP_READ_REQ_BODY,     /* request_body_mode BUFFERED: the body read whole */
	EP_WAIT_REQ_BODY,     /* the body sent (request_body), its answer awaited */
	EP_READ_RESP_BODY,    /* response_body_mode BUFFERED: the response's body read whole */
	EP_WAIT_RESP_BODY,    /* it went (response_body), its answer awaited */
	/* response_body_mode STREAMED: the response's head answered (or
	 * skipped), its body's pieces go as they come (the ring a->rs) */
	EP_STREAM_RESP,
};

/* A piece of a STREAMED response body: sent (its message's start in pre,
 * then its mbufs), kept until its answer. */
struct ep_chunk {
	struct rte_mbuf *head, *tail;
	uint32_t segs, bytes;
	bool eos;
	uint8_t pre_len;
	uint8_t pre[30];
};

/* What waits for the answer (ep_after resumes it) */
enum ep_paused { EP_P_NONE = 0, EP_P_REQ, EP_P_RESP, EP_P_RESP_BODY };

/* Where a HeaderMutation applies (mutate) */
enum ep_where { EP_MUT_REQ = 0, EP_MUT_RESP, EP_MUT_REPLY };

struct http_ext_proc {
	struct http_subreq sr;
	struct http_stream *st;
	struct http_ext_proc *next; /* the worker's free list */
	const struct arn_cfg_ext_proc *cfg;
	uint8_t idx; /* the filter's index in the HCM's chain */
	uint8_t state;
	/* the stream's context of an ext_proc filter before this one in its
	 * chain (1 + its index, 0: none): each filter has its own stream,
	 * all released with the client's stream */
	uint16_t prev;
	uint8_t n_override;  /* override_message_timeout taken in this exchange */
	bool overflow;	     /* an answer or what it asks did not fit */
	bool bad_ct;	     /* the answer's content-type is not application/grpc */
	bool head_seen;	     /* the answer's head came */
	bool holds_reply;    /* big holds an immediate response being written */
	bool resp_send;	     /* response_header_mode SEND (its route's mode) */
	bool resp_edits;     /* up[0..n_up) are the response_headers answer's */
	bool big_owed;	     /* big holds a message the transport still reads */
	uint8_t paused;	     /* enum ep_paused */
	uint16_t new_status; /* the answer's :status (0: none) */
	uint32_t new_path_len;
	const char *new_path;	 /* the answer's :path, in buf (NULL: none) */
	bool body_buf;		 /* request_body_mode BUFFERED (its route's mode) */
	bool reading;		 /* the body is read into the kept body (HTTP_S_MCP) */
	bool body_kept;		 /* the request's body is in the kept body: framed on */
	bool tx_head_done;	 /* the body message's start went to the transport */
	uint32_t tx_head_len;	 /* its length, at the start of big */
	struct rte_mbuf *tx_seg; /* the kept body's next segment to send */
	/* response_body_mode BUFFERED: the response's body, whole mbufs
	 * counted in the worker's kept bodies (rb_segs) */
	bool rsp_body_buf, rsp_taken, rsp_written;
	struct rte_mbuf *rsp_head, *rsp_tail;
	uint32_t rsp_bytes, rsp_segs;
	uint32_t send_owed; /* a message refused by the transport (-EAGAIN): its length */
	/* response_body_mode STREAMED (Envoy's chunk queue): rsp_stream the
	 * mode; rs_on: the filter took the body (ep_rs_ops). The ring's
	 * pieces from rs_head: rs_n queued (rs_bytes), the first rs_sent of
	 * them wholly to the transport; the next one's start sent
	 * (rs_tx_pre), its next mbuf rs_tx_seg. rs_old: mbufs done with
	 * that a transport (the client's codec, the stream's) may still
	 * read by reference, freed once neither does (rs_reap). */
	bool rsp_stream, rs_on, rs_eos_sent, rs_tx_pre, rs_kick;
	uint8_t rs_head, rs_n, rs_sent;
	uint32_t rs_bytes, rs_old_segs;
	struct rte_mbuf *rs_tx_seg, *rs_old, *rs_old_tail;
	struct ep_chunk rs[HTTP_EXT_PROC_STREAM_CHUNKS];
	const struct arn_cfg_ext_proc_service *svc;
	const struct arn_cfg_ext_proc_route *pr;
	char status_txt[4];
	uint16_t status;     /* the answer's HTTP status */
	int32_t grpc_status; /* -1: none yet */
	char *big;	     /* the worker's large scratch, while an exchange runs */
	/* the previous exchange's buffer, whose message the transport still
	 * reads by reference (a processor may answer before it was sent)
	 * while the next exchange has a buffer of its own: back on on_sent,
	 * the transport then holding nothing of the stream's */
	char *big_old;
	struct http_grpc_rd rd;
	struct http_timer timer; /* message_timeout */
	uint32_t timeout_ms;
	uint32_t used; /* of buf */
	unsigned n_up;
	struct http_subreq_header h[HTTP_SUBREQ_MAX_HDRS];
	struct arn_h1_edit up[2 * HTTP_EXT_PROC_GRPC_HDRS];
	char buf[HTTP_EXT_PROC_BUF];
};

static struct http_ctxpools pools;
_Static_assert(HTTP_EXT_PROC_N < UINT16_MAX, "st->ext_proc holds 1 + a context's index");

int http_ext_proc_worker_init(struct http_worker *w)
{
	/* (a worker without a pool: every call fails, counted) */
	return http_ctxpools_init(&pools, w->idx, HTTP_EXT_PROC_N, sizeof(struct http_ext_proc),
				  offsetof(struct http_ext_proc, next));
}

void http_ext_proc_worker_fini(struct http_worker *w)
{
	http_ctxpools_fini(&pools, w->idx);
}

unsigned http_ext_proc_in_use(const struct http_worker *w)
{
	return http_ctxpools_in_use(&pools, w->idx);
}

static struct http_ext_proc *ep_at(const struct http_stream *st)
{
	return http_ctxpools_at(&pools, st->hc->w->idx, st->ext_proc);
}

static void ep_timeout(struct http_timer *t);

static struct http_ext_proc *ep_get(struct http_worker *w)
{
	struct http_ext_proc *a = http_ctxpools_get(&pools, w->idx);
	if (!a)
		return NULL;
	a->state = EP_WAIT_REQ_HEADERS;
	a->overflow = a->bad_ct = a->head_seen = a->holds_reply = false;
	a->resp_send = a->resp_edits = a->big_owed = false;
	a->big_old = NULL;
	a->paused = EP_P_NONE;
	a->new_status = 0;
	a->new_path = NULL;
	a->new_path_len = 0;
	a->body_buf = a->reading = a->body_kept = a->tx_head_done = false;
	a->tx_head_len = 0;
	a->tx_seg = NULL;
	a->rsp_body_buf = a->rsp_taken = a->rsp_written = false;
	a->rsp_head = a->rsp_tail = NULL;
	a->rsp_bytes = a->rsp_segs = 0;
	a->send_owed = 0;
	a->rsp_stream = a->rs_on = a->rs_eos_sent = a->rs_tx_pre = a->rs_kick = false;
	a->rs_head = a->rs_n = a->rs_sent = 0;
	a->rs_bytes = a->rs_old_segs = 0;
	a->rs_tx_seg = a->rs_old = a->rs_old_tail = NULL;
	a->svc = NULL;
	a->pr = NULL;
	a->status = 0;
	a->grpc_status = -1;
	a->big = NULL;
	a->used = 0;
	a->n_up = 0;
	a->prev = 0;
	a->n_override = 0;
	a->sr.running = false;
	memset(&a->timer, 0, sizeof(a->timer));
	a->timer.fn = ep_timeout;
	return a;
}

static void ep_big_put(struct http_worker *w, struct http_ext_proc *a)
{
	if (a->big)
		http_big_put(w, a->big);
	a->big = NULL;
	a->holds_reply = false;
	a->big_owed = false;
	http_big_put(w, a->big_old);
	a->big_old = NULL;
}

/* The response's kept body goes back. */
static void rsp_free(struct http_worker *w, struct http_ext_proc *a)
{
	http_rb_chain_free(w, a->rsp_head, a->rsp_segs);
	a->rsp_head = a->rsp_tail = NULL;
	a->rsp_bytes = a->rsp_segs = 0;
}

/* @p n bytes @p p onto the response's kept body, in whole mbufs within
 * the worker's kept bodies (kept_body_mbufs) and HTTP_EXT_PROC_BODY_MAX.
 * @return false when a bound says no. */
static bool rsp_keep(struct http_worker *w, struct http_ext_proc *a, const char *p, size_t n)
{
	if ((uint64_t)a->rsp_bytes + n > HTTP_EXT_PROC_BODY_MAX)
		return false;
	return http_rb_chain_append(w, &a->rsp_head, &a->rsp_tail, &a->rsp_segs, &a->rsp_bytes, p,
				    n);
}

static struct ep_chunk *rs_at(struct http_ext_proc *a, unsigned k)
{
	return &a->rs[(a->rs_head + k) % HTTP_EXT_PROC_STREAM_CHUNKS];
}

static void ep_put(struct http_worker *w, struct http_ext_proc *a)
{
	http_timer_cancel(&a->timer);
	rsp_free(w, a);
	for (unsigned k = 0; k < a->rs_n; k++)
		http_rb_chain_free(w, rs_at(a, k)->head, rs_at(a, k)->segs);
	a->rs_n = 0;
	http_rb_chain_free(w, a->rs_old, a->rs_old_segs);
	a->rs_old = a->rs_old_tail = NULL;
	a->rs_old_segs = 0;
	ep_big_put(w, a);
	a->st = NULL;
	http_ctxpool_put(&pools.w[w->idx], a);
}

static void ep_count(struct http_stream *st, size_t i, unsigned id)
{
	struct http_hcm_rt *r = st->hc->hrt;
	struct arn_stats_scope *sc = r && i < HTTP_MAX_FILTER_STATS ? r->fstats[i] : NULL;
	if (sc)
		arn_stats_inc(sc, st->hc->w->slot, id);
}

#define EP_INC(a, id) ep_count((a)->st, (a)->idx, ARN_EXT_PROC_##id)

static char *ep_room(struct http_ext_proc *a, size_t n)
{
	if (n > HTTP_EXT_PROC_BUF - a->used) {
		a->overflow = true;
		return NULL;
	}
	char *p = a->buf + a->used;
	a->used += (uint32_t)n;
	return p;
}

static bool name_is(const char *n, size_t len, const char *s)
{
	return len == strlen(s) && strncasecmp(n, s, len) == 0;
}

/* ---- the mutation rules (Envoy's Checker) --------------------------------------------------- */

enum ck_op { CK_SET = 0, CK_APPEND, CK_REMOVE };
enum ck_result { CK_OK = 0, CK_IGNORE, CK_FAIL };

static bool tchar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Envoy's headerNameIsValid: a token, or ':' and a token. */
static bool name_valid(const char *n, size_t len)
{
	size_t i = len && n[0] == ':' ? 1 : 0;
	if (i == len || len > 256)
		return false;
	for (; i < len; i++)
		if (!tchar(n[i]))
			return false;
	return true;
}

static bool value_valid(const char *v, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (v[i] == '\r' || v[i] == '\n' || v[i] == 0)
			return false;
	return true;
}

/* The Checker of @p f on operation @p op of header @p n (lower case),
 * value @p v: its isAllowed and isValidValue. allow_all_routing,
 * allow_expression and disallow_expression are refused by the
 * configuration. */
static int checker(const struct arn_cfg_ext_proc *f, int op, const char *n, size_t len,
		   const char *v, size_t vl)
{
	bool ok = true;
	if (op == CK_REMOVE && (n[0] == ':' || name_is(n, len, "host")))
		ok = false; /* never removed: host and the pseudo-headers */
	else if (f->disallow_all)
		ok = false;
	else if (name_is(n, len, "host") || name_is(n, len, ":authority") ||
		 name_is(n, len, ":method") || name_is(n, len, ":scheme"))
		ok = false; /* the routing headers (allow_all_routing) */
	else if (n[0] == ':' && (op == CK_APPEND || f->disallow_system))
		ok = false;
	else if (!f->allow_envoy && len >= 7 && strncasecmp(n, "x-envoy", 7) == 0)
		ok = false;
	if (ok && op != CK_REMOVE && name_is(n, len, ":status")) {
		unsigned s = 0;
		bool num = vl > 0 && vl <= 9;
		for (size_t i = 0; num && i < vl; i++) {
			num = v[i] >= '0' && v[i] <= '9';
			s = s * 10 + (unsigned)(v[i] - '0');
		}
		ok = num && s >= 200;
	}
	if (ok)
		return CK_OK;
	return f->disallow_is_error ? CK_FAIL : CK_IGNORE;
}

/* What frames the message or the connection: Arion never lets a
 * processor change it (Envoy's codec would frame the message anew;
 * Arion's edits keep the client's framing). */
static bool framing(const char *n, size_t len)
{
	static const char *const never[] = {
	    "content-length", "transfer-encoding", "connection",
	    "keep-alive",     "proxy-connection",  "te",
	    "trailer",	      "upgrade",
	};
	for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++)
		if (name_is(n, len, never[i]))
			return true;
	return false;
}

/* The edit of a set_headers entry (Envoy's applyHeaderMutations: with
 * append_action set, it; else the deprecated append, false by default:
 * the value replaces the header's). -1: an unknown append_action. */
static int set_op(const struct http_ext_proc_set *s, int *check_op)
{
	*check_op = CK_SET;
	switch (s->action) {
	case 0:
		if (s->append && s->append_value) {
			*check_op = CK_APPEND;
			return ARN_H1_EDIT_ADD;
		}
		return ARN_H1_EDIT_SET;
	case 1: /* ADD_IF_ABSENT */
		return ARN_H1_EDIT_ADD_IF_ABSENT;
	case 2: /* OVERWRITE_IF_EXISTS_OR_ADD */
		return ARN_H1_EDIT_SET;
	case 3: /* OVERWRITE_IF_EXISTS */
		return ARN_H1_EDIT_SET_IF_PRESENT;
	default:
		return -1;
	}
}

/* "@p what <name>" in the context's buffer (Envoy's message), or NULL
 * without room (the overflow is noted). */
static const char *named(struct http_ext_proc *a, const char *what, const char *n, size_t len)
{
	size_t wl = strlen(what);
	char *p = ep_room(a, wl + len + 1);
	if (!p)
		return NULL;
	memcpy(p, what, wl);
	memcpy(p + wl, n, len);
	p[wl + len] = 0;
	return p;
}

/* A copy of name @p n lower-cased, in the context's buffer. */
static char *lower_copy(struct http_ext_proc *a, const char *n, size_t len)
{
	char *p = ep_room(a, len);
	for (size_t i = 0; p && i < len; i++)
		p[i] = (char)(n[i] >= 'A' && n[i] <= 'Z' ? n[i] + 32 : n[i]);
	return p;
}

/*
 * The HeaderMutation @p m into @p e (at most @p cap, *@p n of them), the
 * strings copied into the context (@p where: enum ep_where; on a local
 * reply no pseudo-header is taken, on the response :status alone, into
 * a->new_status). @return NULL, or what went wrong as Envoy's
 * message says it (the request then fails with it as details); an
 * IGNORE is counted in rejected_header_mutations and skipped.
 */
static const char *mutate(struct http_ext_proc *a, const struct http_ext_proc_mut *m,
			  struct arn_h1_edit *e, unsigned *n, unsigned cap, int where)
{
	const struct arn_cfg_ext_proc *f = a->cfg;
	for (unsigned i = 0; i < m->n_rm; i++) {
		const char *rn = m->rm[i].name;
		uint32_t rl = m->rm[i].name_len;
		if (!name_valid(rn, rl)) {
			EP_INC(a, rejected_header_mutations);
			return "Invalid character in remove_headers mutation.";
		}
		char *ln = lower_copy(a, rn, rl);
		if (!ln)
			return NULL; /* (a->overflow) */
		int r = checker(f, CK_REMOVE, ln, rl, NULL, 0);
		if (r == CK_FAIL) {
			EP_INC(a, rejected_header_mutations);
			return named(a, "Invalid attempt to remove ", ln, rl);
		}
		if (r == CK_IGNORE || framing(ln, rl)) {
			EP_INC(a, rejected_header_mutations);
			continue;
		}
		if (*n >= cap) {
			a->overflow = true;
			return NULL;
		}
		e[(*n)++] = (struct arn_h1_edit){
		    .name = ln, .name_len = (uint16_t)rl, .op = ARN_H1_EDIT_REMOVE};
	}
	for (unsigned i = 0; i < m->n_set; i++) {
		const struct http_ext_proc_set *s = &m->set[i];
		if (!s->has_header)
			continue;
		if (s->both_values) {
			EP_INC(a, rejected_header_mutations);
			return "Only one of value or raw_value in the HeaderValue message should "
			       "be "
			       "set.";
		}
		if (!name_valid(s->name, s->name_len) || !value_valid(s->value, s->value_len)) {
			EP_INC(a, rejected_header_mutations);
			return "Invalid character in set_headers mutation.";
		}
		int cop;
		int op = set_op(s, &cop);
		if (op < 0)
			return named(a, "Invalid append_action value ", s->name, s->name_len);
		char *ln = lower_copy(a, s->name, s->name_len);
		if (!ln)
			return NULL;
		int r = checker(f, cop, ln, s->name_len, s->value, s->value_len);
		if (r == CK_FAIL) {
			EP_INC(a, rejected_header_mutations);
			return named(a, "Invalid attempt to modify ", ln, s->name_len);
		}
		if (r == CK_IGNORE || framing(ln, s->name_len) ||
		    (where == EP_MUT_REPLY && ln[0] == ':')) {
			EP_INC(a, rejected_header_mutations);
			continue;
		}
		if (where == EP_MUT_RESP && ln[0] == ':') {
			/* :status (the checker took its digits, 200 and up);
			 * Arion's codecs write three digits, and a status
			 * that changes whether the response has a body (204,
			 * 304) would unframe the body that follows: both
			 * refused as a rule's IGNORE */
			unsigned sv = 0;
			for (uint32_t k = 0; k < s->value_len; k++)
				sv = sv * 10 + (unsigned)(s->value[k] - '0');
			const struct arn_h1_msg *rm = &a->st->resp.m;
			bool was = rm->status == 204 || rm->status == 304,
			     now = sv == 204 || sv == 304;
			if (!name_is(ln, s->name_len, ":status") || sv > 999 || was != now) {
				EP_INC(a, rejected_header_mutations);
				continue;
			}
			a->new_status = (uint16_t)sv;
			continue;
		}
		if (where == EP_MUT_REQ && name_is(ln, s->name_len, ":path")) {
			/* as Envoy's (the rules let it through): the request
			 * goes upstream with it, on the route it matched
			 * (clear_route_cache is not acted on). A path an
			 * HTTP/1 request line cannot carry (empty, a space, a
			 * control byte) is refused as a rule's IGNORE */
			bool ok = s->value_len > 0 && s->value_len <= HTTP_EXT_PROC_BUF / 2;
			for (uint32_t k = 0; ok && k < s->value_len; k++)
				ok = (unsigned char)s->value[k] > 0x20 &&
				     (unsigned char)s->value[k] != 0x7f;
			if (!ok || op == ARN_H1_EDIT_ADD_IF_ABSENT) {
				if (!ok)
					EP_INC(a, rejected_header_mutations);
				continue; /* (ADD_IF_ABSENT: a request has one) */
			}
			char *pv = ep_room(a, s->value_len);
			if (!pv)
				return NULL;
			memcpy(pv, s->value, s->value_len);
			a->new_path = pv;
			a->new_path_len = s->value_len;
			continue;
		}
		if (ln[0] == ':')
			/* another pseudo-header Envoy's rules let through:
			 * Arion edits header fields and the path, not the
			 * rest of the request line */
			return "Arion does not rewrite the request's pseudo-headers";
		char *v = s->value_len ? ep_room(a, s->value_len) : (char *)"";
		if (!v)
			return NULL;
		if (s->value_len)
			memcpy(v, s->value, s->value_len);
		if (*n >= cap) {
			a->overflow = true;
			return NULL;
		}
		e[(*n)++] = (struct arn_h1_edit){.name = ln,
						 .name_len = (uint16_t)s->name_len,
						 .value = v,
						 .value_len = s->value_len,
						 .op = (uint8_t)op};
	}
	return NULL;
}

/* ---- outcomes --------------------------------------------------------------------------------
 */

static void ep_reply(struct http_ext_proc *a, unsigned status, const char *body, size_t blen,
		     const char *details, const struct arn_h1_edit *e, unsigned n);

/* The kept body's framing, as Envoy's in BUFFERED mode: a request with a
 * content-length keeps one (the body's answer set it to the new length;
 * http_rb_frame_kept checks they agree: never a length that is not the
 * body's); one without (chunked, an HTTP/2 request without one) goes as
 * it came, its codec framing the kept body (Envoy adds no content-length,
 * where its buffer filter does). */
static int ep_frame(struct http_stream *st)
{
	if (!(st->req.m.flags & ARN_H1_F_CONTENT_LENGTH))
		return 0;
	return http_rb_frame_kept(st);
}

/* The request goes on: a body read whole (BUFFERED) is in the kept body,
 * framed (ep_frame) and sent first. */
static void ep_resume(struct http_ext_proc *a)
{
	struct http_stream *st = a->st;
	if (a->body_kept) {
		int rc = ep_frame(st);
		if (rc != 0) {
			if (rc == -ENOSPC)
				HTTP_INC(st->hc, rq_edit_overflow);
			ep_reply(a, 500, NULL, 0,
				 rc == -ENOSPC ? "header_edits_overflow"
					       : "request_length_mismatch",
				 NULL, 0);
			return;
		}
		http_rb_send_first(st);
		if (!X(st)->rb_head && !(st->req.m.flags & ARN_H1_F_CONTENT_LENGTH))
			/* an emptied body without a length (chunked): its end,
			 * read before, still goes (its last chunk), as a
			 * replay's */
			st->state |= HTTP_S_REPLAYING;
	}
	st->hc->ops->resume_head(st, &http_l4_filter_ops);
}

/* Its stream answered already, or it is over: a context keeps its st
 * until the stream ends (http_ext_proc_stream_end), which stops its
 * sub-request first, so no callback comes for a context reused. */
static bool ep_orphan(const struct http_ext_proc *a)
{
	return !a->st || (a->st->state & HTTP_S_LOCAL);
}

/* Processing is over (Envoy's processing_complete_): nothing more is
 * read of the stream, its timer stops, the exchange's buffer goes back
 * unless a reply is written from it. */
static void ep_complete(struct http_ext_proc *a)
{
	a->state = EP_DONE;
	http_timer_cancel(&a->timer);
	if (!a->holds_reply)
		ep_big_put(a->st->hc->w, a);
}

/* Processing is over for the stream: it is closed as Envoy's close()
 * does (END_STREAM, then a reset), nothing when it is over already. Envoy
 * closes it when processing ends otherwise than by letting the request on,
 * else when its filter goes; nothing more is ever sent on it in Arion's
 * build (no response phase), so it is closed once the answer came: a
 * stream holds its sub-request (a request buffer, an HTTP/2 stream) only
 * while it waits. Safe inside the stream's own callbacks: it reads no more
 * once it returns. */
static void ep_close(struct http_ext_proc *a)
{
	if (!a->sr.running)
		return;
	(void)http_subreq_send(&a->sr, NULL, 0, true); /* -EAGAIN: the reset goes alone */
	http_subreq_cancel(&a->sr);
}

/* Between two exchanges (EP_IDLE: the response's head still to be sent;
 * EP_READ_REQ_BODY: the body being read): the stream stays open, its timer stops, the exchange's
 * buffer goes back once the transport is done with the message in it
 * (on_sent, when it is not: a processor may answer before it read it). */
static void ep_between(struct http_ext_proc *a, uint8_t state)
{
	a->state = state;
	http_timer_cancel(&a->timer);
	if (a->sr.running && http_subreq_send(&a->sr, NULL, 0, false) == -EAGAIN) {
		/* answered before the transport sent it all (an HTTP/2
		 * window the processor keeps shut): the next exchange takes a
		 * buffer of its own, its message queued behind this one; a
		 * second one owed meanwhile stays, and the next exchange
		 * fails (no buffer) */
		if (!a->big_old) {
			a->big_old = a->big;
			a->big = NULL;
		} else {
			a->big_owed = true;
		}
	} else {
		ep_big_put(a->st->hc->w, a);
	}
}

/* Envoy's details: what the answer said, its spaces as '_'
 * (StringUtil::replaceAllEmptySpace), in the context's buffer. */
static const char *details_copy(struct http_ext_proc *a, const char *d, size_t len)
{
	char *p = ep_room(a, len + 1);
	if (!p)
		return "ext_proc_error";
	for (size_t i = 0; i < len; i++)
		p[i] = d[i] == ' ' || d[i] == '\t' || d[i] == '\r' || d[i] == '\n' ? '_' : d[i];
	p[len] = 0;
	return p;
}

static void rs_over(struct http_ext_proc *a);

/* A local reply for the client, then the connection goes on (the
 * request does not: HTTP_S_LOCAL). */
static void ep_reply(struct http_ext_proc *a, unsigned status, const char *body, size_t blen,
		     const char *details, const struct arn_h1_edit *e, unsigned n)
{
	if (a->reading) {
		/* the body is read no more: the head is not the filter's */
		a->reading = false;
		a->st->state &= ~HTTP_S_MCP;
	}
	http_local_reply(a->st, status, body, blen, 0, details, e, n);
}

/* The stream failed with gRPC status @p code (Envoy's onGrpcError): the
 * request goes on with failure_mode_allow, else 500
 * ext_proc_error_gRPC_error_<code>. @return true when it answered. */
static bool ep_error(struct http_ext_proc *a, int code, const char *why)
{
	ARN_DEBUG(HTTP, "ext_proc: stream failed: %s", why);
	EP_INC(a, streams_failed);
	if (a->overflow)
		EP_INC(a, overflow);
	ep_complete(a);
	ep_close(a);
	if (a->cfg->failure_mode_allow) {
		/* Envoy's onGrpcError: onGrpcClose (streams_closed), then
		 * failure_mode_allowed; clearAsyncState: a streamed body's
		 * pieces go on unprocessed */
		rs_over(a);
		EP_INC(a, streams_closed);
		EP_INC(a, failure_mode_allowed);
		return false;
	}
	char d[40];
	snprintf(d, sizeof(d), "ext_proc_error_gRPC_error_%d", code);
	ep_reply(a, 500, NULL, 0, details_copy(a, d, strlen(d)), NULL, 0);
	return true;
}

/* An answer past Arion's bounds or asking what it does not do: 500 with
 * @p details, as Envoy's failed mutations (not failure_mode_allow: the
 * processor answered). */
static void ep_fail_request(struct http_ext_proc *a, const char *details)
{
	ep_complete(a);
	ep_close(a);
	ep_reply(a, 500, NULL, 0, details_copy(a, details, strlen(details)), NULL, 0);
}

static const char *ep_open_why(int rc);
static int ep_open(struct http_ext_proc *a, size_t ml);
static int ep_open_at(struct http_ext_proc *a, const char *msg, size_t ml);

/* The request's phase is over: the response's head awaited (the stream
 * stays), or processing complete. */
static void ep_req_over(struct http_ext_proc *a)
{
	if (a->resp_send || a->rsp_body_buf || a->rsp_stream) {
		ep_between(a, EP_IDLE); /* the stream stays for the response's head */
	} else {
		ep_complete(a);
		ep_close(a);
	}
}

/* Envoy's answer to a body past the decoder buffer limit (as the buffer
 * filter's): 413. */
static void ep_too_large(struct http_ext_proc *a)
{
	HTTP_INC(a->st->hc, downstream_rq_too_large);
	ep_complete(a);
	ep_close(a);
	ep_reply(a, 413, "Payload Too Large", 17, "request_payload_too_large", NULL, 0);
}

/* The message's start, then the kept body's segments, to the transport,
 * one write at a time (http_subreq_send): a refused one goes on from
 * on_sent. @return 0, or -ENOTCONN. */
static int ep_tx_pump(struct http_ext_proc *a)
{
	for (;;) {
		const char *d;
		size_t l;
		if (!a->tx_head_done) {
			d = a->big;
			l = a->tx_head_len;
		} else if (a->tx_seg) {
			d = rte_pktmbuf_mtod(a->tx_seg, const char *);
			l = a->tx_seg->data_len;
		} else {
			return 0;
		}
		int rc = http_subreq_send(&a->sr, d, l, false);
		if (rc == -EAGAIN)
			return 0;
		if (rc < 0)
			return rc;
		if (!a->tx_head_done)
			a->tx_head_done = true;
		else
			a->tx_seg = a->tx_seg->next;
	}
}

/* Everything of the body's message went to the transport, which holds
 * none of it by reference any more (the kept body may change). */
static bool ep_tx_done(struct http_ext_proc *a)
{
	return a->tx_head_done && !a->tx_seg &&
	       (!a->sr.running || http_subreq_send(&a->sr, NULL, 0, false) != -EAGAIN);
}

/* The body, whole in the kept body, to the processor as request_body
 * (end_of_stream), the stream opened with it if it is not (Envoy's
 * decodeData in BUFFERED mode). @return true when it answered the client;
 * else the body waits for the answer (EP_WAIT_REQ_BODY) or, failed with
 * failure_mode_allow, goes on (EP_DONE). */
static bool ep_body_send(struct http_ext_proc *a, bool resp)
{
	struct http_stream *st = a->st;
	struct http_worker *w = st->hc->w;
	uint32_t blen = resp ? a->rsp_bytes : X(st)->rb_bytes;
	if (!resp && blen > HTTP_EXT_PROC_BODY_MAX) {
		ep_too_large(a);
		return true;
	}
	const char *why = NULL;
	if (a->big_owed || (!a->big && !(a->big = http_big_get(w)))) {
		a->overflow = true;
		why = "no buffer";
	}
	long hl = 0;
	if (!why) {
		a->rd = (struct http_grpc_rd){.buf = (uint8_t *)a->big + HTTP_EXT_PROC_REQ,
					      .cap = HTTP_EXT_PROC_ANS};
		hl = http_ext_proc_encode_body_head(resp, blen, true, (uint8_t *)a->big,
						    HTTP_EXT_PROC_REQ);
		if (hl < 0) {
			a->overflow = true;
			why = "body past Arion's bound";
		}
	}
	if (!why) {
		a->state = resp ? EP_WAIT_RESP_BODY : EP_WAIT_REQ_BODY;
		a->n_override = 0;
		a->tx_seg = resp ? a->rsp_head : X(st)->rb_head;
		a->tx_head_len = (uint32_t)hl;
		a->tx_head_done = false;
		if (!a->sr.running) {
			int rc = ep_open(a, (size_t)hl);
			if (rc != 0)
				why = ep_open_why(rc);
			a->tx_head_done = true;
		}
		if (!why && ep_tx_pump(a) < 0)
			why = "stream gone";
	}
	if (why)
		return ep_error(a, 14, why);
	EP_INC(a, stream_msgs_sent);
	a->paused = resp ? EP_P_RESP_BODY : EP_P_REQ;
	if (a->cfg->message_timeout_ms)
		http_timer_arm(w, &a->timer, a->cfg->message_timeout_ms);
	return false;
}

/* The body is to be read whole (EP_READ_REQ_BODY): at once when it is
 * already (an earlier filter read it), else as it comes (HTTP_S_MCP:
 * http_ext_proc_body). @return true when it answered the client. */
static bool ep_body_begin(struct http_ext_proc *a)
{
	struct http_stream *st = a->st;
	const struct arn_h1_msg *m = &st->req.m;
	a->body_kept = true;
	a->paused = EP_P_REQ;
	if ((m->flags & ARN_H1_F_CONTENT_LENGTH) && m->content_length > HTTP_EXT_PROC_BODY_MAX) {
		ep_too_large(a); /* refused before a byte of it is read */
		return true;
	}
	if (st->state & HTTP_S_REQ_DONE)
		return ep_body_send(a, false);
	a->reading = true;
	st->state |= HTTP_S_MCP;
	return false;
}

/* An answer's clear_route_cache (Envoy's DecodingProcessorState::
 * clearRouteCache, main of 2025): only with a header_mutation (else
 * counted as ignored); route_cache_action DEFAULT takes the answer's
 * word, CLEAR clears on any mutation, RETAIN (disable_clear_route_cache)
 * counts it. Cleared, the request's route is matched again where the
 * router matches it, after this filter: on its headers with every kept
 * edit applied (http_req_edits_view), which the later filters' per-route
 * configuration, the cluster, the timeouts and the retry policy follow;
 * the filters before keep what they did, as Envoy's refreshCachedRoute
 * leaves them. */
static void ep_route_cache(struct http_ext_proc *a, const struct http_ext_proc_resp *r)
{
	const struct arn_cfg_ext_proc *f = a->cfg;
	if (!r->has_header_mutation) {
		if (r->clear_route_cache)
			EP_INC(a, clear_route_cache_ignored);
		return;
	}
	if (f->clear_route_cache_always ||
	    (r->clear_route_cache && !f->disable_clear_route_cache)) {
		a->st->route_edited = true;
	} else if (r->clear_route_cache) {
		EP_INC(a, clear_route_cache_disabled);
	}
}

/* The answer's :path on the request: what the router sends, the access
 * log and a later ext_proc filter read; the route stays the one the path
 * before it matched (http_route_path_keep) unless the route cache is
 * cleared, as Envoy's cached route. @return false when the stream's text
 * had no room for that: answered 500 (never a request on a route it did
 * not match). */
static bool ep_set_path(struct http_ext_proc *a)
{
	struct http_stream *st = a->st;
	if (!a->new_path)
		return true;
	if (http_route_path_keep(st) < 0) {
		HTTP_INC(st->hc, rq_edit_overflow);
		ep_complete(a);
		ep_close(a);
		ep_reply(a, 500, NULL, 0, "header_edits_overflow", NULL, 0);
		return false;
	}
	st->req.m.path = (struct arn_h1_slice){.p = a->new_path, .len = a->new_path_len};
	return true;
}

/* The answer to the request's headers (Envoy's handleHeadersResponse).
 * @return true when it answered the client. */
static bool ep_headers_answer(struct http_ext_proc *a, const struct http_ext_proc_resp *r)
{
	struct http_stream *st = a->st;
	EP_INC(a, stream_msgs_received);
	if (r->status == 1 && r->has_body_mutation) {
		/* CONTINUE_AND_REPLACE with a body: no body is replaced here */
		EP_INC(a, overflow);
		ep_fail_request(a, "ext_proc_error_body_mutation_unsupported");
		return true;
	}
	unsigned n = 0;
	const char *bad = mutate(a, &r->mut, a->up, &n, 2 * HTTP_EXT_PROC_GRPC_HDRS, EP_MUT_REQ);
	if (bad || a->overflow) {
		if (a->overflow)
			EP_INC(a, overflow);
		ep_fail_request(a, bad ? bad : "ext_proc_error_mutations_past_arion_bounds");
		return true;
	}
	ep_route_cache(a, r);
	a->n_up = n;
	if (!ep_set_path(a))
		return true;
	bool body = a->body_buf && http_msg_has_body(&st->req.m);
	if (body)
		ep_between(a, EP_READ_REQ_BODY); /* the stream stays for the body */
	else
		ep_req_over(a);
	if (n && http_req_edits_keep(st, a->up, n) < 0) {
		/* never the request upstream without them (issue 12) */
		HTTP_INC(st->hc, rq_edit_overflow);
		ep_reply(a, 500, NULL, 0, "header_edits_overflow", NULL, 0);
		return true;
	}
	if (body)
		return ep_body_begin(a);
	return false;
}

/* Has the response a body (Envoy's end_stream false on its headers)? */
static bool ep_resp_has_body(const struct http_stream *st)
{
	const struct arn_h1_msg *m = &st->resp.m;
	return !((m->flags & ARN_H1_F_NO_BODY) || st->method == ARN_H1_M_HEAD || m->status == 204 ||
		 m->status == 304 || ((m->flags & ARN_H1_F_CONTENT_LENGTH) && !m->content_length));
}

/* The answer to the response's headers (Envoy's handleHeadersResponse on
 * the encoding side): its mutations go on the held head (:status
 * included), kept in the context until the stream ends. @return true
 * when it answered the client instead (a failed mutation: 500). */
static bool ep_resp_headers_answer(struct http_ext_proc *a, const struct http_ext_proc_resp *r)
{
	EP_INC(a, stream_msgs_received);
	if (r->status == 1 && r->has_body_mutation) {
		EP_INC(a, overflow);
		ep_fail_request(a, "ext_proc_error_body_mutation_unsupported");
		return true;
	}
	unsigned n = 0;
	a->new_status = 0;
	const char *bad = mutate(a, &r->mut, a->up, &n, 2 * HTTP_EXT_PROC_GRPC_HDRS, EP_MUT_RESP);
	if (bad || a->overflow) {
		if (a->overflow)
			EP_INC(a, overflow);
		ep_fail_request(a, bad ? bad : "ext_proc_error_mutations_past_arion_bounds");
		return true;
	}
	if (a->new_status)
		a->st->resp.m.status = a->new_status;
	a->n_up = n;
	a->resp_edits = true;
	if (a->rsp_body_buf && ep_resp_has_body(a->st)) {
		ep_between(a, EP_READ_RESP_BODY); /* the stream stays for the body */
	} else if (a->rsp_stream && ep_resp_has_body(a->st)) {
		/* the stream stays for the body's pieces, its buffer for their
		 * answers (the headers' message in it is not touched): the
		 * held head goes (http_ext_proc_resp_hold takes the body) */
		a->state = EP_STREAM_RESP;
		http_timer_cancel(&a->timer);
	} else {
		ep_complete(a);
		ep_close(a);
	}
	return false;
}

/* A replaced body's content-length (a message that had one): the edit
 * a->up[*n], its text in the exchange's room, and @p m's length. @return
 * false when the room is spent: the request failed (answered). */
static bool ep_length_edit(struct http_ext_proc *a, struct arn_h1_msg *m, uint32_t bl, unsigned *n)
{
	char num[12];
	int k = snprintf(num, sizeof(num), "%u", bl);
	char *v = ep_room(a, (size_t)k);
	if (!v) {
		EP_INC(a, overflow);
		ep_fail_request(a, "ext_proc_error_mutations_past_arion_bounds");
		return false;
	}
	memcpy(v, num, (size_t)k);
	a->up[(*n)++] = (struct arn_h1_edit){.name = "content-length",
					     .name_len = 14,
					     .value = v,
					     .value_len = (uint32_t)k,
					     .op = ARN_H1_EDIT_SET};
	m->content_length = bl;
	return true;
}

/* The answer to the request's body (Envoy's handleBodyResponse in
 * BUFFERED mode): its header mutations as the headers' (kept for the
 * request upstream), its body_mutation replacing the kept body (body, or
 * clear_body: empty), the content-length set to the new length, as
 * Envoy's. @return true when it answered the client. */
static bool ep_body_answer(struct http_ext_proc *a, const struct http_ext_proc_resp *r)
{
	struct http_stream *st = a->st;
	struct arn_h1_msg *m = &st->req.m;
	EP_INC(a, stream_msgs_received);
	if (!ep_tx_done(a)) {
		/* answered before the transport took the body: the kept body
		 * is still read by reference (the stream's close lets go) */
		EP_INC(a, malformed);
		return ep_error(a, 13, "answer before the body was sent");
	}
	unsigned n = 0;
	const char *bad =
	    mutate(a, &r->mut, a->up, &n, 2 * HTTP_EXT_PROC_GRPC_HDRS - 1, EP_MUT_REQ);
	if (bad || a->overflow) {
		if (a->overflow)
			EP_INC(a, overflow);
		ep_fail_request(a, bad ? bad : "ext_proc_error_mutations_past_arion_bounds");
		return true;
	}
	if (!ep_set_path(a))
		return true;
	ep_route_cache(a, r); /* as handleBodyResponse's */
	if (r->has_new_body || r->clear_body) {
		uint32_t bl = r->has_new_body ? r->new_body_len : 0;
		http_rb_free(st);
		if (bl &&
		    !http_rb_keep(st, (const char *)r->new_body, bl, HTTP_EXT_PROC_BODY_MAX)) {
			/* the worker's kept bodies (kept_body_mbufs) or its mbufs */
			HTTP_INC(st->hc, rq_buffer_overflow);
			ep_complete(a);
			ep_close(a);
			ep_reply(a, 503, NULL, 0, "request_buffer_overflow", NULL, 0);
			return true;
		}
		if ((m->flags & ARN_H1_F_CONTENT_LENGTH) && !ep_length_edit(a, m, bl, &n))
			return true;
	}
	a->n_up = n;
	ep_req_over(a);
	if (n && http_req_edits_keep(st, a->up, n) < 0) {
		HTTP_INC(st->hc, rq_edit_overflow);
		ep_reply(a, 500, NULL, 0, "header_edits_overflow", NULL, 0);
		return true;
	}
	return false;
}

/* The answer to the response's body (handleBodyResponse on the encoding
 * side): its header mutations after the headers' answer's (:status as
 * there), its body_mutation replacing the kept body, content-length the
 * new length when the response had one (a chunked one stays chunked).
 * The head and the body are written by the filter's encode_more
 * (ep_enc_write) once the step runs again. @return true when it
 * answered the client. */
static bool ep_resp_body_answer(struct http_ext_proc *a, const struct http_ext_proc_resp *r)
{
	struct http_stream *st = a->st;
	struct arn_h1_msg *m = &st->resp.m;
	EP_INC(a, stream_msgs_received);
	if (!ep_tx_done(a)) {
		EP_INC(a, malformed);
		return ep_error(a, 13, "answer before the body was sent");
	}
	unsigned n = a->resp_edits ? a->n_up : 0;
	a->new_status = 0;
	const char *bad =
	    mutate(a, &r->mut, a->up, &n, 2 * HTTP_EXT_PROC_GRPC_HDRS - 1, EP_MUT_RESP);
	if (bad || a->overflow) {
		if (a->overflow)
			EP_INC(a, overflow);
		ep_fail_request(a, bad ? bad : "ext_proc_error_mutations_past_arion_bounds");
		return true;
	}
	if (a->new_status)
		m->status = a->new_status;
	if (r->has_new_body || r->clear_body) {
		struct http_worker *w = st->hc->w;
		uint32_t bl = r->has_new_body ? r->new_body_len : 0;
		rsp_free(w, a);
		if (bl && !rsp_keep(w, a, (const char *)r->new_body, bl)) {
			EP_INC(a, overflow);
			ep_fail_request(a, "response_buffer_overflow");
			return true;
		}
		if ((m->flags & ARN_H1_F_CONTENT_LENGTH) && !ep_length_edit(a, m, bl, &n))
			return true;
	}
	a->n_up = n;
	a->resp_edits = true;
	ep_complete(a);
	ep_close(a);
	return false;
}

/* An immediate_response (Envoy's sendImmediateResponse): its status
 * (200 unless one of 200 and above), body, headers (the mutation rules
 * checked; failures skip them, as Envoy logs them), grpc-status and
 * details. The body and details stay in the exchange's buffer until the
 * stream ends. */
static void ep_immediate(struct http_ext_proc *a, const struct http_ext_proc_resp *r)
{
	EP_INC(a, stream_msgs_received);
	struct arn_h1_edit e[HTTP_EXT_PROC_GRPC_HDRS + 1];
	unsigned n = 0;
	const char *bad = mutate(a, &r->mut, e, &n, HTTP_EXT_PROC_GRPC_HDRS, EP_MUT_REPLY);
	if (bad || a->overflow) {
		ARN_DEBUG(HTTP, "ext_proc: immediate response mutations failed: %s",
			  bad ? bad : "past Arion's bounds");
		a->overflow = false;
	}
	/* only the edits before the failure (Envoy's applies in order) */
	char gs[12];
	if (r->has_grpc_status && http_is_grpc(a->st)) {
		int gl = snprintf(gs, sizeof(gs), "%u", r->grpc_status);
		char *g = ep_room(a, (size_t)gl);
		if (g) {
			memcpy(g, gs, (size_t)gl);
			e[n++] = (struct arn_h1_edit){.name = "grpc-status",
						      .name_len = 11,
						      .value = g,
						      .value_len = (uint32_t)gl,
						      .op = ARN_H1_EDIT_SET};
		}
	}
	unsigned status = r->http_status >= 200 && r->http_status <= 599 ? r->http_status : 200;
	const char *details = details_copy(a, r->details, r->details_len);
	a->holds_reply = true; /* the body points into it */
	ep_complete(a);
	ep_close(a);
	ep_reply(a, status, r->body, r->body_len, details, e, n);
}

/* ---- response_body_mode STREAMED (Envoy's ext_proc.cc encodeData with
 * STREAMED, processor_state.cc enqueueStreamingChunk,
 * handleStreamedBodyResponse, requestWatermark / clearWatermark) ---- */

/* Chain @p h .. @p t (@p segs mbufs) is done with here, but a transport
 * may still read it by reference: freed by rs_reap. */
static void rs_retire(struct http_ext_proc *a, struct rte_mbuf *h, struct rte_mbuf *t,
		      uint32_t segs)
{
	if (!h)
		return;
	if (a->rs_old_tail)
		a->rs_old_tail->next = h;
	else
		a->rs_old = h;
	a->rs_old_tail = t;
	a->rs_old_segs += segs;
}

/* The retired mbufs go back once neither the client's codec nor the
 * stream's transport holds them (the transport's on_sent calls again). */
static void rs_reap(struct http_ext_proc *a)
{
	struct http_stream *st = a->st;
	if (!a->rs_old || st->hc->dn->queued)
		return;
	if (a->sr.running && http_subreq_send(&a->sr, NULL, 0, false) == -EAGAIN)
		return;
	http_rb_chain_free(st->hc->w, a->rs_old, a->rs_old_segs);
	a->rs_old = a->rs_old_tail = NULL;
	a->rs_old_segs = 0;
}

/* Chain @p h to the client, by reference (retired after). Empty pieces
 * are not written: an HTTP/1 chunk of none would end the body. */
static void rs_write(struct http_ext_proc *a, const struct rte_mbuf *h)
{
	struct http_stream *st = a->st;
	struct http_peer *dn = st->hc->dn;
	if (st->state & HTTP_S_LOCAL)
		return;
	for (const struct rte_mbuf *m = h; m; m = m->next) {
		if (!m->data_len)
			continue;
		st->tx_body += m->data_len;
		dn->codec->encode_body(dn, rte_pktmbuf_mtod(m, const char *), m->data_len);
	}
}

/* The oldest piece leaves the queue, to the client as it came when
 * @p write (else its answer's body went instead). */
static void rs_pop(struct http_ext_proc *a, bool write)
{
	struct ep_chunk *c = rs_at(a, 0);
	if (write)
		rs_write(a, c->head);
	rs_retire(a, c->head, c->tail, c->segs);
	a->rs_bytes -= c->bytes;
	a->rs_head = (uint8_t)((a->rs_head + 1) % HTTP_EXT_PROC_STREAM_CHUNKS);
	a->rs_n--;
	if (a->rs_sent) {
		a->rs_sent--;
	} else {
		/* (it was being sent: processing is over) */
		a->rs_tx_pre = false;
		a->rs_tx_seg = NULL;
	}
}

/* Processing is over while pieces wait (Envoy's clearAsyncState: the
 * leftover chunks injected unprocessed): they go on as they came. */
static void rs_over(struct http_ext_proc *a)
{
	while (a->rs_n)
		rs_pop(a, true);
}

/* The queued pieces not sent yet to the transport, one write at a time
 * (as ep_tx_pump): a refused one goes on from on_sent. @return 0, or
 * -ENOTCONN. */
static int rs_pump(struct http_ext_proc *a)
{
	while (a->rs_sent < a->rs_n) {
		struct ep_chunk *c = rs_at(a, a->rs_sent);
		const char *d;
		size_t l;
		if (!a->rs_tx_pre) {
			d = (const char *)c->pre;
			l = c->pre_len;
		} else if (a->rs_tx_seg) {
			d = rte_pktmbuf_mtod(a->rs_tx_seg, const char *);
			l = a->rs_tx_seg->data_len;
		} else {
			a->rs_sent++;
			a->rs_tx_pre = false;
			continue;
		}
		int rc = http_subreq_send(&a->sr, d, l, false);
		if (rc == -EAGAIN)
			return 0;
		if (rc < 0)
			return rc;
		if (!a->rs_tx_pre) {
			a->rs_tx_pre = true;
			a->rs_tx_seg = c->head;
		} else {
			a->rs_tx_seg = a->rs_tx_seg->next;
		}
	}
	return 0;
}

/* Above the high watermark: the upstream is read no more. */
static bool rs_high(const struct http_ext_proc *a)
{
	return a->rs_n >= HTTP_EXT_PROC_STREAM_CHUNKS || a->rs_bytes > HTTP_EXT_PROC_BODY_MAX;
}

/*
 * A piece of the body (@p len bytes @p data; @p eos: the body's end, an
 * empty piece) copied onto the queue and sent as a response_body (Envoy's
 * enqueueStreamingChunk, then sendBodyChunk with its end_of_stream), the
 * stream opened with it when it is not (response_header_mode SKIP). The
 * message timer restarts, as Envoy's onStartProcessorCall. @return 0:
 * queued; 1: failed, the body goes on unprocessed (failure_mode_allow),
 * this piece with it; 2: the same, this piece not taken (the caller's to
 * write); -1: failed, the client's stream reset (the head went: Envoy's
 * sendLocalReply then resets).
 */
static int rs_send(struct http_ext_proc *a, const char *data, size_t len, bool eos)
{
	struct http_stream *st = a->st;
	struct http_worker *w = st->hc->w;
	const char *why = NULL;
	bool queued = false;
	struct ep_chunk *c = rs_at(a, a->rs_n);
	if (a->rs_n >= HTTP_EXT_PROC_STREAM_CHUNKS) {
		a->overflow = true;
		why = "streamed body past Arion's bound";
	} else {
		*c = (struct ep_chunk){.eos = eos};
		long hl = http_ext_proc_encode_body_head(true, len, eos, c->pre, sizeof(c->pre));
		if (hl < 0) {
			a->overflow = true;
			why = "body past Arion's bound";
		} else if (len && !http_rb_chain_append(w, &c->head, &c->tail, &c->segs, &c->bytes,
							data, len)) {
			/* the worker's kept bodies (kept_body_mbufs) or its mbufs */
			http_rb_chain_free(w, c->head, c->segs);
			a->overflow = true;
			why = "no buffer";
		} else {
			c->pre_len = (uint8_t)hl;
			queued = true;
			a->rs_n++;
			a->rs_bytes += c->bytes;
		}
	}
	if (!why && !a->sr.running) {
		/* (the queue's first piece: nothing was sent before it) */
		int rc = ep_open_at(a, (const char *)c->pre, c->pre_len);
		if (rc != 0)
			why = ep_open_why(rc);
		a->rs_tx_pre = true;
		a->rs_tx_seg = c->head;
	}
	if (!why && rs_pump(a) < 0)
		why = "stream gone";
	if (why)
		return ep_error(a, 14, why) ? -1 : queued ? 1 : 2;
	EP_INC(a, stream_msgs_sent);
	if (a->cfg->message_timeout_ms) {
		http_timer_cancel(&a->timer);
		http_timer_arm(w, &a->timer, a->cfg->message_timeout_ms);
	}
	return 0;
}

/* The response's body streams through the filter (st->enc: ep_rs_ops,
 * http_filter.h's encode_body). Taken (true) unless the queue is above
 * its high watermark: false, the HCM reads no more of the upstream until
 * rs_enc_more says so. The END is held (false) until its own piece was
 * answered. Once processing is over (the last answer, a failure let on,
 * a spurious message) the body goes as it comes. */
static bool rs_enc_body(struct http_stream *st, const char *data, size_t len, bool end)
{
	struct http_ext_proc *a = st->enc_state;
	rs_reap(a);
	if (a->state != EP_STREAM_RESP || (st->state & HTTP_S_LOCAL)) {
		if (len && !(st->state & HTTP_S_LOCAL)) {
			struct http_peer *dn = st->hc->dn;
			st->tx_body += len;
			dn->codec->encode_body(dn, data, len);
		}
		return true;
	}
	if (end) {
		if (a->rs_eos_sent)
			return false;
		a->rs_eos_sent = true;
		return rs_send(a, NULL, 0, true) != 0;
	}
	if (!len)
		return true;
	int rc = rs_send(a, data, len, false);
	if (rc == 2)
		return rs_enc_body(st, data, len, false); /* (processing over: as it came) */
	return rc != 0 || !rs_high(a);
}

/* Go on once the answers brought the queue under its low watermark
 * (Envoy's queueBelowLowLimit: half the limit), or the END once its
 * piece was answered. */
static bool rs_enc_more(struct http_stream *st)
{
	struct http_ext_proc *a = st->enc_state;
	rs_reap(a);
	if (a->state != EP_STREAM_RESP || (st->state & HTTP_S_LOCAL))
		return true;
	if (a->rs_eos_sent)
		return false;
	return a->rs_n <= HTTP_EXT_PROC_STREAM_CHUNKS / 2 &&
	       a->rs_bytes < HTTP_EXT_PROC_BODY_MAX / 2;
}

/* Not in the filter table: st->enc of a response whose body ext_proc
 * streams (rs_take) */
static const struct http_filter_ops ep_rs_ops = {
    .name = "ext_proc",
    .encode_body = rs_enc_body,
    .encode_more = rs_enc_more,
};

/* The filter takes the response's body to stream it, and lets the head
 * go without its content-length (Envoy's shouldRemoveContentLength with
 * STREAMED: each piece's answer may change its length; the client's
 * codec frames the body: HTTP/1.1 chunked, HTTP/2 DATA). @return 0, or
 * what the failure did as ep_resp_start's (1 on unprocessed, -1 a local
 * reply). */
static int rs_take(struct http_ext_proc *a)
{
	struct http_stream *st = a->st;
	struct http_worker *w = st->hc->w;
	if (!a->big) {
		/* (the answers are reassembled in it) */
		if (a->big_owed || !(a->big = http_big_get(w))) {
			a->overflow = true;
			return ep_error(a, 14, "no buffer") ? -1 : 1;
		}
		a->rd = (struct http_grpc_rd){.buf = (uint8_t *)a->big + HTTP_EXT_PROC_REQ,
					      .cap = HTTP_EXT_PROC_ANS};
	}
	a->state = EP_STREAM_RESP;
	a->rsp_taken = a->rs_on = true;
	a->n_override = 0;
	st->enc = &ep_rs_ops;
	st->enc_state = a;
	st->state |= HTTP_S_ENC_BODY;
	st->resp.m.flags &= ~ARN_H1_F_CONTENT_LENGTH;
	return 0;
}

/* The answer to the oldest piece sent (Envoy's handleStreamedBodyResponse):
 * its body_mutation (body, clear_body: nothing) or else the piece as it
 * came goes to the client; its header mutations are not applied (the
 * head went; Envoy's streamed answer reads none). The answer to the END's
 * piece ends processing. @return true when it answered the client (the
 * stream reset). */
static bool rs_answer(struct http_ext_proc *a, const struct http_ext_proc_resp *r)
{
	struct http_stream *st = a->st;
	struct http_worker *w = st->hc->w;
	EP_INC(a, stream_msgs_received);
	bool eos = rs_at(a, 0)->eos;
	if (r->has_new_body || r->clear_body) {
		struct rte_mbuf *h = NULL, *t = NULL;
		uint32_t segs = 0, bytes = 0;
		if (r->has_new_body && r->new_body_len &&
		    !http_rb_chain_append(w, &h, &t, &segs, &bytes, (const char *)r->new_body,
					  r->new_body_len)) {
			http_rb_chain_free(w, h, segs);
			EP_INC(a, overflow);
			ep_fail_request(a, "response_buffer_overflow");
			return true;
		}
		rs_write(a, h);
		rs_retire(a, h, t, segs);
		rs_pop(a, false);
	} else {
		rs_pop(a, true);
	}
	a->rs_kick = true;
	if (eos) {
		ep_complete(a);
		ep_close(a);
	} else {
		/* Envoy's timer starts again with the next piece sent; the
		 * pieces already out are timed from their answer's, so that
		 * a processor holding them cannot hold the stream forever */
		http_timer_cancel(&a->timer);
		if (a->rs_n && a->cfg->message_timeout_ms)
			http_timer_arm(w, &a->timer, a->cfg->message_timeout_ms);
	}
	return false;
}

/*
 * A ProcessingMode @p m (its six enums, as sent) overriding the stream's
 * (Envoy's effectiveModeOverride: a header or trailer mode DEFAULT leaves
 * the current one, the body modes are always taken). What Arion builds is
 * taken: the response's headers SEND or SKIP, the request's body NONE or
 * BUFFERED, the response's NONE, BUFFERED or STREAMED (Envoy AI
 * Gateway's answer to an SSE completion's head), trailers DEFAULT or
 * SKIP; an override that asks for anything else (the request's body
 * STREAMED, a FULL_DUPLEX_STREAMED or BUFFERED_PARTIAL body, trailers
 * sent) is ignored whole (Envoy would act on it), as an override
 * allowed_override_modes refuses is. The request's headers' mode is over
 * by then.
 */
static void ep_mode_override(struct http_ext_proc *a, const uint32_t *m)
{
	if ((m[2] != 0 && m[2] != 2) || m[3] > 2 || m[4] == 1 || m[5] == 1 || m[1] > 2 ||
	    m[4] > 2 || m[5] > 2) {
		ARN_DEBUG(HTTP, "ext_proc: mode_override asks for a mode Arion does not build: "
				"ignored");
		return;
	}
	if (m[1] == 1)
		a->resp_send = true;
	else if (m[1] == 2)
		a->resp_send = false;
	a->body_buf = m[2] == 2;
	a->rsp_body_buf = m[3] == 2;
	a->rsp_stream = m[3] == 1;
}

/* One whole ProcessingResponse (@p msg, @p len bytes) while the request's
 * headers wait (Envoy's onReceiveMessage). @return true when the request
 * was let on or answered (processing is over). */
static bool ep_message(struct http_ext_proc *a, const uint8_t *msg, size_t len, bool *answered)
{
	const struct arn_cfg_ext_proc *f = a->cfg;
	struct http_ext_proc_resp r;
	*answered = false;
	int rc = http_ext_proc_decode(msg, len, &r);
	if (rc != 0) {
		/* Envoy's gRPC client resets a stream whose message does not
		 * parse: Internal */
		if (rc == -E2BIG)
			a->overflow = true;
		else
			EP_INC(a, malformed);
		*answered = ep_error(a, 13, "malformed ProcessingResponse");
		return true;
	}
	if (r.has_timeout_override) {
		/* Envoy's onNewTimeout: within max_message_timeout, the
		 * timer restarts with it; the message is nothing else */
		if (f->max_message_timeout_ms && r.timeout_ms >= 1 &&
		    r.timeout_ms <= f->max_message_timeout_ms &&
		    a->n_override < HTTP_EXT_PROC_OVERRIDES) {
			a->n_override++;
			EP_INC(a, override_message_timeout_received);
			http_timer_cancel(&a->timer);
			http_timer_arm(a->st->hc->w, &a->timer, r.timeout_ms);
		} else {
			EP_INC(a, override_message_timeout_ignored);
		}
		return false;
	}
	/* mode_override (Envoy's, main of 2025): with allow_mode_override,
	 * while a headers' answer is awaited, before the answer is handled;
	 * else ignored, as Envoy's */
	if (f->allow_mode_override && r.has_mode_override &&
	    (a->state == EP_WAIT_REQ_HEADERS || a->state == EP_WAIT_RESP_HEADERS))
		ep_mode_override(a, r.mode);
	if (r.kind == HTTP_EXT_PROC_RESPONSE_BODY && a->state == EP_STREAM_RESP && a->rs_sent) {
		/* a streamed piece's answer: the next ones may follow in
		 * the same read (false: go on reading them) */
		*answered = rs_answer(a, &r);
		return *answered || a->state == EP_DONE;
	}
	if (r.kind == HTTP_EXT_PROC_REQUEST_HEADERS && a->state == EP_WAIT_REQ_HEADERS) {
		*answered = ep_headers_answer(a, &r);
		return true;
	}
	if (r.kind == HTTP_EXT_PROC_REQUEST_BODY && a->state == EP_WAIT_REQ_BODY) {
		*answered = ep_body_answer(a, &r);
		return true;
	}
	if (r.kind == HTTP_EXT_PROC_RESPONSE_BODY && a->state == EP_WAIT_RESP_BODY) {
		*answered = ep_resp_body_answer(a, &r);
		return true;
	}
	if (r.kind == HTTP_EXT_PROC_RESPONSE_HEADERS && a->state == EP_WAIT_RESP_HEADERS) {
		*answered = ep_resp_headers_answer(a, &r);
		return true;
	}
	if (r.kind == HTTP_EXT_PROC_IMMEDIATE && !f->disable_immediate_response) {
		ep_immediate(a, &r);
		*answered = true;
		return true;
	}
	/* out of turn (for a streamed piece: none sent unanswered), or an
	 * immediate response disabled: spurious, the stream ignored from
	 * now on and the request let on (Envoy's clearAsyncState: the
	 * streamed pieces waiting go on unprocessed) */
	EP_INC(a, spurious_msgs_received);
	rs_over(a);
	ep_complete(a);
	ep_close(a);
	return true;
}

/* ---- the stream's callbacks ------------------------------------------------------------------
 */

static void ep_grpc_status(struct http_ext_proc *a, const struct arn_h1_header *h, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (!name_is(h[i].name, h[i].name_len, "grpc-status"))
			continue;
		int32_t v = 0;
		bool ok = h[i].value_len > 0 && h[i].value_len <= 3;
		for (unsigned k = 0; ok && k < h[i].value_len; k++) {
			char c = h[i].value[k];
			ok = c >= '0' && c <= '9';
			v = v * 10 + (c - '0');
		}
		a->grpc_status = ok ? v : 2; /* unparsable: UNKNOWN */
	}
}

static void epg_head(struct http_subreq *sr, const struct arn_h1_msg *m)
{
	struct http_ext_proc *a = OWNER(sr, struct http_ext_proc, sr);
	a->status = m->status;
	a->head_seen = true;
	bool ct = false;
	for (unsigned i = 0; i < m->n_hdrs; i++) {
		const struct arn_h1_header *h = &m->hdrs[i];
		if (name_is(h->name, h->name_len, "content-type"))
			ct = h->value_len >= 16 &&
			     strncasecmp(h->value, "application/grpc", 16) == 0;
	}
	a->bad_ct = !ct;
	ep_grpc_status(a, m->hdrs, m->n_hdrs); /* a trailers-only answer */
}

/* Let what waited (the request's head, the response's) on, or not,
 * after a decision taken in a callback. */
static void ep_after(struct http_ext_proc *a, bool answered)
{
	struct http_stream *st = a->st;
	struct http_conn *hc = st->hc;
	if (a->rs_on) {
		/* STREAMED: pieces went to the client; the upstream read
		 * again if the queue held it (http_filter.h's encode_more) */
		a->rs_kick = false;
		if (!answered && (st->state & (HTTP_S_LOCAL | HTTP_S_ENC_MORE)) == HTTP_S_ENC_MORE)
			hc->ops->resp_step(st);
		http_conn_run(hc);
		return;
	}
	if (!answered && (a->reading || a->state == EP_WAIT_REQ_BODY)) {
		/* the request's body is read, or sent: it waits on */
		http_conn_run(hc);
		return;
	}
	uint8_t p = a->paused;
	a->paused = EP_P_NONE;
	if (!answered && !(st->state & HTTP_S_LOCAL)) {
		if (p == EP_P_REQ)
			ep_resume(a);
		else if (p == EP_P_RESP)
			st->hc->ops->resume_resp_head(st);
		else if (p == EP_P_RESP_BODY)
			st->hc->ops->resp_step(st); /* its encode_more writes the response */
	}
	http_conn_run(hc);
}

static void epg_body(struct http_subreq *sr, const char *data, size_t len)
{
	struct http_ext_proc *a = OWNER(sr, struct http_ext_proc, sr);
	if (ep_orphan(a) || a->state == EP_DONE)
		return; /* processing is over: the rest is ignored, as Envoy's */
	if (a->status != 200 || a->bad_ct)
		return; /* not a gRPC answer: its end says so */
	if (a->state == EP_IDLE || a->state == EP_READ_REQ_BODY || a->state == EP_READ_RESP_BODY) {
		/* a message nothing asked for: spurious, the stream ignored
		 * from now on (as out of turn) */
		EP_INC(a, spurious_msgs_received);
		ep_complete(a);
		ep_close(a);
		return;
	}
	while (len && a->state != EP_DONE) {
		bool done;
		long k = http_grpc_rd_take(&a->rd, data, len, &done);
		if (k < 0) {
			if (k == -E2BIG)
				a->overflow = true;
			else
				EP_INC(a, malformed);
			ep_after(a, ep_error(a, 13,
					     k == -E2BIG ? "answer past Arion's bound"
							 : "compressed answer"));
			return;
		}
		data += k;
		len -= (size_t)k;
		if (!done)
			continue;
		bool answered;
		uint8_t *msg = (uint8_t *)a->rd.buf + 5;
		uint32_t ml = http_grpc_rd_len(&a->rd);
		http_grpc_rd_next(&a->rd);
		if (ep_message(a, msg, ml, &answered)) {
			ep_after(a, answered);
			return;
		}
	}
	if (a->rs_kick)
		ep_after(a, false);
}

static void epg_trailers(struct http_subreq *sr, const struct arn_h1_msg *m)
{
	struct http_ext_proc *a = OWNER(sr, struct http_ext_proc, sr);
	ep_grpc_status(a, m->trailers, m->n_trailers);
}

/* The processor ended the stream (Envoy's onRemoteClose). */
static void epg_end(struct http_subreq *sr)
{
	struct http_ext_proc *a = OWNER(sr, struct http_ext_proc, sr);
	if (ep_orphan(a))
		return;
	int code = a->status != 200	? (int)http_grpc_status(a->status)
		   : a->bad_ct		? 2
		   : a->grpc_status < 0 ? 2
					: a->grpc_status;
	if (a->state == EP_DONE) {
		/* after processing: counted, nothing else changes */
		if (code == 0)
			EP_INC(a, streams_closed);
		else
			EP_INC(a, streams_failed);
		return;
	}
	if (code == 0) {
		/* onGrpcClose: the request goes on, unprocessed */
		EP_INC(a, streams_closed);
		rs_over(a);
		ep_complete(a);
		ep_after(a, false);
		return;
	}
	ep_after(a, ep_error(a, code, "grpc-status not OK"));
}

static void epg_failed(struct http_subreq *sr, const char *why)
{
	struct http_ext_proc *a = OWNER(sr, struct http_ext_proc, sr);
	if (ep_orphan(a))
		return;
	if (a->state == EP_DONE) {
		EP_INC(a, streams_failed);
		return;
	}
	ep_after(a, ep_error(a, 14, why)); /* UNAVAILABLE, as Envoy's client */
}

static long ep_send_now(struct http_ext_proc *a, size_t ml);

/* The transport took what was refused or still queued: the request's
 * message is out (its buffer goes back in EP_IDLE), or the response's
 * head, refused, goes now. */
static void epg_sent(struct http_subreq *sr)
{
	struct http_ext_proc *a = OWNER(sr, struct http_ext_proc, sr);
	if (ep_orphan(a))
		return;
	/* the transport took everything: the old message too */
	http_big_put(a->st->hc->w, a->big_old);
	a->big_old = NULL;
	if (a->rs_on) {
		if (a->state == EP_STREAM_RESP && rs_pump(a) < 0) {
			ep_after(a, ep_error(a, 14, "stream gone"));
			return;
		}
		rs_reap(a);
		return;
	}
	if ((a->state == EP_WAIT_REQ_BODY || a->state == EP_WAIT_RESP_BODY) &&
	    (!a->tx_head_done || a->tx_seg)) {
		if (ep_tx_pump(a) < 0)
			ep_after(a, ep_error(a, 14, "stream gone"));
		return;
	}
	if (a->big_owed && (a->state == EP_IDLE || a->state == EP_READ_REQ_BODY ||
			    a->state == EP_READ_RESP_BODY)) {
		ep_big_put(a->st->hc->w, a);
		return;
	}
	a->big_owed = false;
	if (a->send_owed && a->state == EP_WAIT_RESP_HEADERS) {
		uint32_t ml = a->send_owed;
		a->send_owed = 0;
		if (ep_send_now(a, ml) < 0)
			ep_after(a, ep_error(a, 14, "stream gone"));
	}
}

static const struct http_subreq_ops epg_ops = {
    .on_head = epg_head,
    .on_sent = epg_sent,
    .on_body = epg_body,
    .on_trailers = epg_trailers,
    .on_end = epg_end,
    .on_failed = epg_failed,
};

/* No answer within message_timeout (Envoy's onMessageTimeout). */
static void ep_timeout(struct http_timer *t)
{
	struct http_ext_proc *a = OWNER(t, struct http_ext_proc, timer);
	if (ep_orphan(a) || a->state == EP_DONE)
		return;
	EP_INC(a, message_timeouts);
	ep_complete(a);
	ep_close(a);
	if (a->cfg->failure_mode_allow) {
		EP_INC(a, failure_mode_allowed);
		rs_over(a); /* clearAsyncState's */
		ep_after(a, false);
		return;
	}
	/* ext_proc_timeout_error (Envoy's default): 504 */
	ep_reply(a, 504, NULL, 0, "ext_proc_error_per-message_timeout_exceeded", NULL, 0);
	ep_after(a, true);
}

/* ---- the stream ------------------------------------------------------------------------------
 */

#define EP_PATH "/envoy.service.ext_proc.v3.ExternalProcessor/Process"

/* Does header @p n go to the processor (forward_rules: allowed, none
 * meaning all, and not disallowed; Envoy's headerCanBeForwarded)? */
static bool ep_forwards(const struct arn_cfg_ext_proc *f, const char *n, size_t len)
{
	char low[256];
	if (len > sizeof(low))
		return false;
	for (size_t i = 0; i < len; i++)
		low[i] = (char)(n[i] >= 'A' && n[i] <= 'Z' ? n[i] + 32 : n[i]);
	for (size_t i = 0; i < f->n_fwd_deny; i++)
		if (arn_cfg_str_match(&f->fwd_deny[i], low, len))
			return false;
	if (!f->n_fwd_allow)
		return true;
	for (size_t i = 0; i < f->n_fwd_allow; i++)
		if (arn_cfg_str_match(&f->fwd_allow[i], low, len))
			return true;
	return false;
}

/* The request's headers as Envoy's header map has them: the
 * pseudo-headers, then its fields (Host as :authority), each line an
 * entry, with what earlier filters' kept edits did to them; encoded at
 * the start of a->big. @return its length, or -E2BIG. */
static long ep_request_headers(struct http_ext_proc *a)
{
	struct http_stream *st = a->st;
	const struct arn_cfg_ext_proc *f = a->cfg;
	const struct arn_h1_msg *m = &st->req.m;
	/* the view the edits apply to (http_req_edits_view, the route
	 * matcher's too), then the message's entries */
	struct arn_cfg_header v[4 + HTTP_MAX_HDRS];
	struct http_ext_proc_hdr h[4 + HTTP_MAX_HDRS];
	size_t n = 0;
	const char *scheme = st->hc->tls ? "https" : "http";
	const struct arn_cfg_header ps[4] = {
	    {":authority", 10, st->auth, st->auth_len},
	    {":path", 5, m->path.p, m->path.len},
	    {":method", 7, m->method_name.p, m->method_name.len},
	    {":scheme", 7, scheme, strlen(scheme)},
	};
	for (unsigned i = 0; i < 4; i++)
		if (ep_forwards(f, ps[i].name, ps[i].name_len))
			v[n++] = ps[i];
	for (unsigned i = 0; i < m->n_hdrs && n < 4 + HTTP_MAX_HDRS; i++) {
		const struct arn_h1_header *x = &m->hdrs[i];
		if (name_is(x->name, x->name_len, "host") || !ep_forwards(f, x->name, x->name_len))
			continue;
		v[n++] = (struct arn_cfg_header){x->name, x->name_len, x->value, x->value_len};
	}
	size_t nf = n;
	if (!http_req_edits_view(st, v, &n, 4 + HTTP_MAX_HDRS))
		return -E2BIG;
	unsigned k = 0;
	for (size_t i = 0; i < n; i++) {
		/* forward_rules on what the edits added too */
		if (i >= nf && !ep_forwards(f, v[i].name, v[i].name_len))
			continue;
		h[k++] = (struct http_ext_proc_hdr){v[i].name, v[i].value, (uint32_t)v[i].name_len,
						    (uint32_t)v[i].value_len};
	}
	bool eos = !http_msg_has_body(m);
	return http_ext_proc_encode_headers(false, h, k, eos, (uint8_t *)a->big, HTTP_EXT_PROC_REQ);
}

/* The stream could not start: as a failed stream. @return true when
 * it answered the client. */
static bool ep_fail_now(struct http_ext_proc *a, const char *why)
{
	return ep_error(a, 14, why);
}

/* The stream opens to a->svc with the message at the start of a->big
 * (@p ml bytes) as its first body: @return 0, or
 * http_subreq_start's error. */
static int ep_open_at(struct http_ext_proc *a, const char *msg, size_t ml)
{
	struct http_stream *st = a->st;
	struct http_conn *hc = st->hc;
	struct http_worker *w = hc->w;
	const struct arn_cfg_ext_proc_service *svc = a->svc;
	const struct arn_cfg_ext_proc_route *pr = a->pr;
	unsigned n = 0;
	a->h[n++] = (struct http_subreq_header){"content-type", "application/grpc", 12, 16};
	a->h[n++] = (struct http_subreq_header){"te", "trailers", 2, 8};
	for (size_t k = 0; k < svc->n_md && n < HTTP_SUBREQ_MAX_HDRS; k++)
		a->h[n++] = (struct http_subreq_header){svc->md[k].name, svc->md[k].value,
							svc->md[k].name_len, svc->md[k].value_len};
	for (size_t k = 0; pr && k < pr->n_md && n < HTTP_SUBREQ_MAX_HDRS; k++)
		a->h[n++] = (struct http_subreq_header){pr->md[k].name, pr->md[k].value,
							pr->md[k].name_len, pr->md[k].value_len};
	memset(&a->sr, 0, sizeof(a->sr));
	a->sr.stream = true;
	a->sr.host = svc->authority ? svc->authority : svc->cluster.name;
	a->sr.host_len = svc->authority ? svc->authority_len : svc->cluster.len;
	const struct arn_cfg_gen *g = w->gen_slot ? arn_config_gen_at(w->gen_slot) : NULL;
	int rc = http_subreq_start(&a->sr, hc, g, &svc->cluster, EP_PATH, sizeof(EP_PATH) - 1, a->h,
				   n, msg, ml, 0, &epg_ops, a);
	if (rc == 0)
		EP_INC(a, streams_started);
	else if (rc == -EBUSY)
		a->overflow = true;
	return rc;
}

static int ep_open(struct http_ext_proc *a, size_t ml)
{
	return ep_open_at(a, a->big, ml);
}

static const char *ep_open_why(int rc)
{
	return rc == -EHOSTUNREACH ? "no healthy upstream"
	       : rc == -ENOENT	   ? "no cluster"
				   : "could not start";
}

/* The message at the start of a->big (@p ml bytes) on the open stream.
 * @return 0 (sent, or owed: on_sent sends it), or -ENOTCONN. */
static long ep_send_now(struct http_ext_proc *a, size_t ml)
{
	int rc = http_subreq_send(&a->sr, a->big, ml, false);
	if (rc == -EAGAIN) {
		a->send_owed = (uint32_t)ml;
		return 0;
	}
	return rc;
}

bool http_ext_proc_step(struct http_stream *st, size_t i, const struct arn_cfg_ext_proc *f,
			const struct arn_cfg_route_match *mt)
{
	struct http_conn *hc = st->hc;
	struct http_worker *w = hc->w;
	const struct http_ext_proc *cur = st->ext_proc ? ep_at(st) : NULL;
	if (cur && cur->idx >= i)
		return false; /* its processor let it on: the walk goes on past it */
	const struct arn_cfg_hcm *h = hc->hcm;
	const char *name = h->http_filter_names ? h->http_filter_names[i] : NULL;
	const struct arn_cfg_ext_proc_route *pr =
	    mt && name ? arn_cfg_per_filter_find(mt->vhost, mt->route, name, strlen(name),
						 ARN_CFG_PF_EXT_PROC)
		       : NULL;
	if (pr && pr->disabled)
		return false;
	const struct arn_cfg_ext_proc_mode *mode = pr && pr->has_mode ? &pr->mode : &f->mode;
	bool req_send = mode->request_headers == ARN_CFG_EXT_PROC_SEND;
	bool resp_send = mode->response_headers == ARN_CFG_EXT_PROC_SEND;
	bool body_buf = mode->request_body_buffered;
	bool rsp_body_buf = mode->response_body_buffered;
	bool rsp_stream = mode->response_body_streamed;
	if (!req_send && !resp_send && !body_buf && !rsp_body_buf && !rsp_stream)
		return false; /* nothing to send: no stream (Envoy opens it on its first message) */
	struct http_ext_proc *a = ep_get(w);
	if (!a) {
		/* no context: the stream cannot start, as a failure */
		ep_count(st, i, ARN_EXT_PROC_streams_failed);
		ep_count(st, i, ARN_EXT_PROC_overflow);
		if (f->failure_mode_allow) {
			ep_count(st, i, ARN_EXT_PROC_streams_closed); /* as ep_error's */
			ep_count(st, i, ARN_EXT_PROC_failure_mode_allowed);
			return false;
		}
		http_local_reply(st, 500, NULL, 0, 0, "ext_proc_error_gRPC_error_14", NULL, 0);
		return true;
	}
	a->st = st;
	a->cfg = f;
	a->idx = (uint8_t)i;
	a->svc = pr && pr->has_svc ? &pr->svc : &f->svc;
	a->pr = pr;
	a->resp_send = resp_send;
	a->body_buf = body_buf;
	a->rsp_body_buf = rsp_body_buf;
	a->rsp_stream = rsp_stream;
	a->prev = st->ext_proc; /* an earlier ext_proc filter's, if any */
	st->ext_proc = (uint16_t)http_ctxpool_id(&pools.w[w->idx], a);
	if (!req_send) {
		/* the body, or the response's head: the stream opens then */
		if (body_buf && http_msg_has_body(&st->req.m)) {
			a->state = EP_READ_REQ_BODY;
			if (ep_body_begin(a))
				return true;
			if (a->reading || a->state == EP_WAIT_REQ_BODY)
				return true; /* its answer resumes it */
			/* failed, let on (failure_mode_allow): framed */
			if (ep_frame(st) != 0) {
				http_local_reply(st, 500, NULL, 0, 0, "request_length_mismatch",
						 NULL, 0);
				return true;
			}
			http_rb_send_first(st);
			return false;
		}
		a->state = resp_send || rsp_body_buf || rsp_stream ? EP_IDLE : EP_DONE;
		return false;
	}
	a->big = http_big_get(w);
	if (!a->big) {
		a->overflow = true;
		return ep_fail_now(a, "no buffer");
	}
	a->rd = (struct http_grpc_rd){.buf = (uint8_t *)a->big + HTTP_EXT_PROC_REQ,
				      .cap = HTTP_EXT_PROC_ANS};
	long ml = ep_request_headers(a);
	if (ml < 0) {
		a->overflow = true;
		return ep_fail_now(a, "request headers past Arion's bound");
	}
	int rc = ep_open(a, (size_t)ml);
	if (rc != 0)
		return ep_fail_now(a, ep_open_why(rc));
	ep_count(st, i, ARN_EXT_PROC_stream_msgs_sent);
	a->paused = EP_P_REQ;
	if (f->message_timeout_ms)
		http_timer_arm(w, &a->timer, f->message_timeout_ms);
	return true; /* the answer resumes it (epg_body, epg_end, epg_failed, ep_timeout) */
}

/* The response's head as Envoy's header map has it (:status, then its
 * fields), encoded at the start of a->big. @return its length, or
 * -E2BIG. */
static long ep_response_headers(struct http_ext_proc *a)
{
	struct http_stream *st = a->st;
	const struct arn_cfg_ext_proc *f = a->cfg;
	const struct arn_h1_msg *m = &st->resp.m;
	struct http_ext_proc_hdr h[1 + HTTP_MAX_HDRS];
	unsigned n = 0;
	unsigned sv = m->status <= 999 ? m->status : 999;
	a->status_txt[0] = (char)('0' + sv / 100);
	a->status_txt[1] = (char)('0' + sv / 10 % 10);
	a->status_txt[2] = (char)('0' + sv % 10);
	if (ep_forwards(f, ":status", 7))
		h[n++] = (struct http_ext_proc_hdr){":status", a->status_txt, 7, 3};
	for (unsigned i = 0; i < m->n_hdrs && n < 1 + HTTP_MAX_HDRS; i++) {
		const struct arn_h1_header *x = &m->hdrs[i];
		if (!ep_forwards(f, x->name, x->name_len))
			continue;
		h[n++] = (struct http_ext_proc_hdr){x->name, x->value, (uint32_t)x->name_len,
						    (uint32_t)x->value_len};
	}
	/* end_of_stream: a response without a body */
	bool eos = (m->flags & ARN_H1_F_NO_BODY) || st->method == ARN_H1_M_HEAD ||
		   m->status == 204 || m->status == 304 ||
		   ((m->flags & ARN_H1_F_CONTENT_LENGTH) && !m->content_length);
	return http_ext_proc_encode_headers(true, h, n, eos, (uint8_t *)a->big, HTTP_EXT_PROC_REQ);
}

/* The upstream's response head to @p a's processor (Envoy's encodeHeaders
 * with response_header_mode SEND). @return 0: sent, the head held; else
 * what the failure did: 1 the response goes on unprocessed
 * (failure_mode_allow), -1 a local reply answered. */
static int ep_resp_start(struct http_ext_proc *a)
{
	struct http_stream *st = a->st;
	struct http_worker *w = st->hc->w;
	const char *why = NULL;
	int code = 14;
	if (st->state & HTTP_S_ENC_BODY) {
		/* another filter (grpc_web) took the body before: the head
		 * cannot wait (http_filter.h) */
		code = 12;
		why = "the response's body taken by another filter";
	} else if (a->big_owed || !(a->big = http_big_get(w))) {
		a->overflow = true;
		why = "no buffer";
	}
	long ml = 0;
	if (!why) {
		a->rd = (struct http_grpc_rd){.buf = (uint8_t *)a->big + HTTP_EXT_PROC_REQ,
					      .cap = HTTP_EXT_PROC_ANS};
		ml = ep_response_headers(a);
		if (ml < 0) {
			a->overflow = true;
			why = "response headers past Arion's bound";
		}
	}
	if (!why) {
		a->state = EP_WAIT_RESP_HEADERS;
		a->n_override = 0;
		if (!a->sr.running) {
			int rc = ep_open(a, (size_t)ml);
			if (rc != 0)
				why = ep_open_why(rc);
		} else if (ep_send_now(a, (size_t)ml) < 0) {
			why = "stream gone";
		}
	}
	if (why)
		return ep_error(a, code, why) ? -1 : 1;
	EP_INC(a, stream_msgs_sent);
	a->paused = EP_P_RESP;
	if (a->cfg->message_timeout_ms)
		http_timer_arm(w, &a->timer, a->cfg->message_timeout_ms);
	return 0;
}

static const struct http_filter_ops ep_enc_ops;

/* The response's body is to be read whole (response_body_mode BUFFERED):
 * the filter takes it (HTTP_S_ENC_BODY, st->enc: ep_enc_ops) and holds
 * the head until it went to the processor and came back (http_filter.h's
 * -EAGAIN). */
static void ep_resp_take(struct http_ext_proc *a)
{
	struct http_stream *st = a->st;
	a->rsp_taken = true;
	a->state = EP_READ_RESP_BODY;
	st->enc = &ep_enc_ops;
	st->enc_state = a;
	st->state |= HTTP_S_ENC_BODY;
}

int http_ext_proc_resp_hold(struct http_stream *st)
{
	struct http_worker *w = st->hc->w;
	if (st->state & HTTP_S_LOCAL)
		return 0; /* local replies go to no processor */
	/* the contexts from the chain's last ext_proc filter back: Envoy
	 * encodes in reverse order */
	for (uint16_t id = st->ext_proc; id && w->idx < ARN_STATS_MAX_WORKERS;) {
		struct http_ext_proc *a = http_ctxpool_at(&pools.w[w->idx], id);
		if (!a)
			break;
		id = a->prev;
		if (a->state == EP_IDLE && a->resp_send) {
			int rc = ep_resp_start(a);
			if (rc == 0)
				return -EINPROGRESS;
			if (rc < 0)
				return -ECANCELED; /* a local reply went instead */
			continue;
		}
		if (a->rsp_stream && !a->rsp_taken &&
		    (a->state == EP_IDLE || a->state == EP_STREAM_RESP)) {
			/* response_body_mode STREAMED: the head goes now, the
			 * body's pieces through the filter */
			if (!ep_resp_has_body(st)) {
				ep_complete(a);
				ep_close(a);
				continue;
			}
			if (st->state & HTTP_S_ENC_BODY) {
				/* as BUFFERED's below */
				if (ep_error(a, 12, "the response's body taken by another filter"))
					return -ECANCELED;
				continue;
			}
			if (rs_take(a) < 0)
				return -ECANCELED;
			continue;
		}
		if (a->rsp_taken || (a->state != EP_IDLE && a->state != EP_READ_RESP_BODY))
			continue;
		/* response_body_mode BUFFERED, the headers sent or not */
		if (!a->rsp_body_buf || !ep_resp_has_body(st)) {
			if (a->state == EP_IDLE) {
				ep_complete(a);
				ep_close(a);
			}
			continue;
		}
		if (st->state & HTTP_S_ENC_BODY) {
			/* another filter (grpc_web) took the body first: as the
			 * headers' case, the stream fails (never a response
			 * the processor was to see, unseen, unless allowed) */
			if (ep_error(a, 12, "the response's body taken by another filter"))
				return -ECANCELED;
			continue;
		}
		ep_resp_take(a);
		return -EAGAIN;
	}
	return 0;
}


int http_ext_proc_resp_edits(struct http_stream *st, struct arn_h1_edit *e, unsigned cap)
{
	struct http_worker *w = st->hc->w;
	unsigned n = 0;
	/* a local reply (one that replaced the response the answers were
	 * for) takes none of them: not its status, not a body answer's
	 * content-length beside its own */
	if (st->state & HTTP_S_LOCAL)
		return 0;
	for (uint16_t id = st->ext_proc; id && w->idx < ARN_STATS_MAX_WORKERS;) {
		struct http_ext_proc *a = http_ctxpool_at(&pools.w[w->idx], id);
		if (!a)
			break;
		id = a->prev;
		if (a->rs_on) {
			/* STREAMED: the body's length is not known ahead */
			if (n >= cap)
				return -ENOSPC;
			e[n++] = (struct arn_h1_edit){
			    .name = "content-length", .name_len = 14, .op = ARN_H1_EDIT_REMOVE};
		}
		if (!a->resp_edits)
			continue;
		if (a->n_up > cap - n)
			return -ENOSPC;
		memcpy(e + n, a->up, a->n_up * sizeof(e[0]));
		n += a->n_up;
	}
	return (int)n;
}

/* The response goes to the client: the held head (the filters' edits,
 * this one's answers' among them), then the kept body. Once. */
static bool ep_enc_write(struct http_ext_proc *a)
{
	struct http_stream *st = a->st;
	if (a->rsp_written)
		return true;
	a->rsp_written = true;
	st->hc->ops->write_head(st);
	if ((st->state & HTTP_S_LOCAL) || !(st->state & HTTP_S_RESP_STARTED))
		return true;
	struct http_peer *dn = st->hc->dn;
	for (struct rte_mbuf *m = a->rsp_head; m; m = m->next) {
		/* by reference: the mbufs stay until the stream ends */
		st->tx_body += m->data_len;
		dn->codec->encode_body(dn, rte_pktmbuf_mtod(m, const char *), m->data_len);
	}
	return true;
}

/* The response's body, kept whole (http_filter.h's encode_body); at its
 * end it goes to the processor and the filter waits (false: the HCM
 * holds the END, encode_more says when it is out). */
static bool ep_enc_body(struct http_stream *st, const char *data, size_t len, bool end)
{
	struct http_ext_proc *a = st->enc_state;
	struct http_worker *w = st->hc->w;
	if (!end) {
		if (!rsp_keep(w, a, data, len)) {
			/* Envoy's encoder buffer limit, the head not sent: 500 */
			if ((uint64_t)a->rsp_bytes + len > HTTP_EXT_PROC_BODY_MAX)
				HTTP_INC(st->hc, rs_too_large);
			else
				EP_INC(a, overflow);
			ep_complete(a);
			ep_close(a);
			ep_reply(a, 500, NULL, 0, "response_payload_too_large", NULL, 0);
			return false;
		}
		return true;
	}
	if (a->state == EP_READ_RESP_BODY) {
		bool answered = ep_body_send(a, true);
		if (answered || a->state == EP_WAIT_RESP_BODY)
			return false;
	}
	if (a->state == EP_WAIT_RESP_BODY)
		return false;
	return ep_enc_write(a);
}

static bool ep_enc_more(struct http_stream *st)
{
	struct http_ext_proc *a = st->enc_state;
	if (a->state == EP_WAIT_RESP_BODY || a->state == EP_READ_RESP_BODY ||
	    (st->state & HTTP_S_LOCAL))
		return false; /* the processor's answer steps the stream */
	return ep_enc_write(a);
}

/* Not in the filter table: st->enc of a response whose body ext_proc
 * reads (ep_resp_take) */
static const struct http_filter_ops ep_enc_ops = {
    .name = "ext_proc",
    .encode_body = ep_enc_body,
    .encode_more = ep_enc_more,
};

/* The context reading @p st's body, or NULL. */
static struct http_ext_proc *ep_reader(const struct http_stream *st)
{
	struct http_worker *w = st->hc->w;
	for (uint16_t id = st->ext_proc; id && w->idx < ARN_STATS_MAX_WORKERS;) {
		struct http_ext_proc *a = http_ctxpool_at(&pools.w[w->idx], id);
		if (!a)
			break;
		if (a->reading)
			return a;
		id = a->prev;
	}
	return NULL;
}

bool http_ext_proc_reading(const struct http_stream *st)
{
	return st->ext_proc && ep_reader(st);
}

bool http_ext_proc_body(struct http_stream *st, const char *data, size_t len)
{
	struct http_ext_proc *a = ep_reader(st);
	if (!a)
		return false;
	if ((uint64_t)X(st)->rb_bytes + len > HTTP_EXT_PROC_BODY_MAX) {
		ep_too_large(a);
		return false;
	}
	if (!http_rb_keep(st, data, len, HTTP_EXT_PROC_BODY_MAX)) {
		/* the worker's bound (kept_body_mbufs) or its mbufs, as the
		 * buffer filter's */
		HTTP_INC(st->hc, rq_buffer_overflow);
		ep_complete(a);
		ep_close(a);
		ep_reply(a, 503, NULL, 0, "request_buffer_overflow", NULL, 0);
		return false;
	}
	return true;
}

void http_ext_proc_body_end(struct http_stream *st)
{
	struct http_ext_proc *a = ep_reader(st);
	if (!a)
		return;
	a->reading = false;
	st->state &= ~HTTP_S_MCP;
	bool answered = false;
	if (a->state == EP_READ_REQ_BODY)
		answered = ep_body_send(a, false);
	if (answered || a->state == EP_WAIT_REQ_BODY || (st->state & HTTP_S_LOCAL))
		return; /* its answer resumes it */
	/* processing ended while the body came (failure_mode_allow, a
	 * spurious message, the processor's close): it goes on */
	a->paused = EP_P_NONE;
	ep_resume(a);
}

size_t http_ext_proc_resume_at(const struct http_stream *st)
{
	const struct http_ext_proc *a = st->ext_proc ? ep_at(st) : NULL;
	return a ? (size_t)a->idx + 1 : 0;
}

void http_ext_proc_stream_end(struct http_stream *st)
{
	if (!st->ext_proc)
		return;
	struct http_worker *w = st->hc->w;
	uint16_t id = st->ext_proc;
	st->ext_proc = 0;
	while (id && w->idx < ARN_STATS_MAX_WORKERS) {
		struct http_ext_proc *a = http_ctxpool_at(&pools.w[w->idx], id);
		if (!a)
			break;
		id = a->prev;
		/* a local reply made after the filter (the router's 503, a
		 * later filter's): Envoy's encodeHeaders would send it to a
		 * processor awaiting the response (EP_IDLE: the request's
		 * phase answered); Arion's are written at once, so counted.
		 * EP_DONE (an immediate_response, a failure, a timeout:
		 * Envoy's processing_complete_) is not. */
		if ((st->state & HTTP_S_LOCAL) && a->state == EP_IDLE &&
		    (a->resp_send || a->rsp_body_buf || a->rsp_stream))
			EP_INC(a, local_replies_unprocessed);
		http_subreq_cancel(&a->sr); /* (nothing when it is over) */
		ep_put(w, a);
	}
}
