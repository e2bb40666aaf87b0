/*
 * Request mirroring (http_shadow.h): the worker's shadow slots, the copy
 * each takes of its request, and the sub-request that sends it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arn_config.h"
#include "arn_log.h"
#include "http_int.h"
#include "http_router_filter.h"
#include "http_shadow.h"
#include "http_stream.h"
#include "http_subreq.h"

/* the edits a shadow's head takes: host, content-length,
 * transfer-encoding, expect */
#define SHADOW_EDITS 4

struct http_shadow {
	struct http_subreq sr;
	/* the pools' view of "the client's connection": the worker and the
	 * local address, which is all a sub-request reads of it. A shadow
	 * outlives its client, so it has its own. */
	struct http_conn hc;
	struct http_shadow *next; /* the worker's free list */
	/* pending: the client's stream (its copy fills); NULL once started */
	const struct http_stream *owner;
	struct arn_cfg_ref cluster; /* valid while owner is: the route's, or the header's */
	uint32_t timeout_ms;
	uint32_t head_len; /* bytes of head[] the head text holds; 0: not yet */
	uint32_t body_len;
	bool running;
	struct arn_h1_msg m; /* head[] parsed */
	struct arn_h1_edit ed[SHADOW_EDITS];
	char host[320]; /* the Host with "-shadow" */
	char clen[24];
	struct arn_h1_header hdrs[HTTP_MAX_HDRS];
	char head[HTTP_SHADOW_HEAD];
	char body[HTTP_SHADOW_BODY];
};

static struct http_shadow *shadow_get(struct http_worker *w)
{
	struct http_shadow *s = w->shadow_free;
	if (s)
		w->shadow_free = s->next;
	return s;
}

static void shadow_put(struct http_worker *w, struct http_shadow *s)
{
	s->owner = NULL;
	s->running = false;
	s->next = w->shadow_free;
	w->shadow_free = s;
}

/* Envoy's shadow Host: "-shadow" after the host, before a port (the last
 * ':' not inside an IPv6 literal's brackets: HeaderUtility::getPortStart).
 * @return its length, 0 when it does not fit @p cap. */
static uint32_t shadow_host(const char *h, uint32_t n, char *out, uint32_t cap)
{
	uint32_t port = n;
	for (uint32_t i = n; i-- > 0;)
		if (h[i] == ':') {
			port = i;
			break;
		}
	/* a ']' after it: the ':' is the IPv6 literal's, there is no port */
	for (uint32_t i = port + 1; port < n && i < n; i++)
		if (h[i] == ']')
			port = n;
	if ((uint64_t)n + 7 > cap)
		return 0;
	memcpy(out, h, port);
	memcpy(out + port, "-shadow", 7);
	memcpy(out + port + 7, h + port, n - port);
	return n + 7;
}

/* ---- the sub-request's end ------------------------------------------------------------- */

static struct http_shadow *of(struct http_subreq *sr)
{
	return sr->user;
}

static void on_head(struct http_subreq *sr, const struct arn_h1_msg *m)
{
	(void)sr;
	(void)m; /* discarded, as Envoy's shadow writer discards it */
}

static void on_body(struct http_subreq *sr, const char *data, size_t len)
{
	(void)sr;
	(void)data;
	(void)len;
}

static void on_end(struct http_subreq *sr)
{
	struct http_shadow *s = of(sr);
	shadow_put(s->hc.w, s);
}

static void on_failed(struct http_subreq *sr, const char *why)
{
	struct http_shadow *s = of(sr);
	ARN_DEBUG(HTTP, "shadow request failed: %s", why);
	shadow_put(s->hc.w, s);
}

static const struct http_subreq_ops shadow_ops = {
    .on_head = on_head,
    .on_body = on_body,
    .on_end = on_end,
    .on_failed = on_failed,
};

/* ---- pending shadows ------------------------------------------------------------------- */

/* Shadow @p s (pending, its head and whole body in) goes: from now on it
 * needs nothing of its stream. Its slot comes back when it ends, or now
 * when it cannot start (no such cluster: skipped, as Envoy's shadow
 * writer skips it; a full circuit breaker or no buffer: counted there). */
static void shadow_start(struct http_worker *w, struct http_shadow *s)
{
	struct arn_h1_msg *m = &s->m;
	/* the body is whole: framed by its length, whatever the client's
	 * framing was (chunked, HTTP/2 DATA) */
	unsigned k = 0;
	uint32_t hl = 0;
	if (m->host_idx >= 0)
		hl = shadow_host(m->hdrs[m->host_idx].value, m->hdrs[m->host_idx].value_len,
				 s->host, sizeof(s->host));
	else if (m->authority.len)
		hl = shadow_host(m->authority.p, m->authority.len, s->host, sizeof(s->host));
	if (hl)
		s->ed[k++] = (struct arn_h1_edit){.name = "host",
						  .name_len = 4,
						  .value = s->host,
						  .value_len = hl,
						  .op = ARN_H1_EDIT_SET};
	s->ed[k++] =
	    (struct arn_h1_edit){.name = "expect", .name_len = 6, .op = ARN_H1_EDIT_REMOVE};
	s->ed[k++] = (struct arn_h1_edit){
	    .name = "transfer-encoding", .name_len = 17, .op = ARN_H1_EDIT_REMOVE};
	bool framed = m->flags & (ARN_H1_F_CONTENT_LENGTH | ARN_H1_F_CHUNKED);
	m->flags &=
	    ~(ARN_H1_F_CHUNKED | ARN_H1_F_TE | ARN_H1_F_CL_IGNORED | ARN_H1_F_EXPECT_CONTINUE |
	      ARN_H1_F_EXPECT_OTHER | ARN_H1_F_NO_BODY | ARN_H1_F_CONTENT_LENGTH);
	if (s->body_len || framed) {
		int cl = snprintf(s->clen, sizeof(s->clen), "%u", s->body_len);
		s->ed[k++] = (struct arn_h1_edit){.name = "content-length",
						  .name_len = 14,
						  .value = s->clen,
						  .value_len = (uint32_t)cl,
						  .op = ARN_H1_EDIT_SET};
		m->flags |= ARN_H1_F_CONTENT_LENGTH;
		m->content_length = s->body_len;
	} else {
		m->flags |= ARN_H1_F_NO_BODY;
		m->content_length = 0;
	}
	s->owner = NULL;
	s->running = true;
	s->sr.del = s->sr.get = false;
	s->sr.msg = m;
	s->sr.edits = s->ed;
	s->sr.n_edits = k;
	const struct arn_cfg_gen *g = w->store ? arn_config_gen(w->store) : NULL;
	int rc = http_subreq_start(&s->sr, &s->hc, g, &s->cluster, m->path.p, m->path.len, NULL, 0,
				   s->body, s->body_len, s->timeout_ms, &shadow_ops, s);
	if (rc != 0) {
		ARN_DEBUG(HTTP, "shadow to '%.*s' not sent (%d)", (int)s->cluster.len,
			  s->cluster.name, rc);
		shadow_put(w, s);
	}
}

/* Shadow @p s of stream @p st goes before it started. */
static void shadow_forget(struct http_stream *st, struct http_shadow *s)
{
	shadow_put(st->hc->w, s);
	if (X(st)->shadows)
		X(st)->shadows--;
}

void http_shadow_route(struct http_stream *st)
{
	struct http_conn *hc = st->hc;
	struct http_worker *w = hc->w;
	const struct arn_cfg_route_action *a = &st->route->route;
	/* an upgrade or CONNECT (a tunnel) is not shadowed: its bytes are
	 * not a request */
	if (!w->shadows || (st->state & HTTP_S_UPGRADE) || st->req.m.method == ARN_H1_M_CONNECT)
		return;
	for (size_t i = 0; i < a->n_mirrors; i++) {
		const struct arn_cfg_mirror *mp = &a->mirrors[i];
		/* runtime_fraction: Envoy's featureEnabled of a random number */
		if (mp->numerator < mp->denominator &&
		    (mp->numerator == 0 || http_rand(w) % mp->denominator >= mp->numerator))
			continue;
		struct arn_cfg_ref ref = mp->cluster;
		if (mp->header) {
			/* cluster_header: the request's value names the cluster;
			 * none (or empty): no shadow, as in Envoy */
			int j = arn_h1_find(&st->req.m, mp->cluster.name, mp->cluster.len, 0);
			if (j < 0 || !st->req.m.hdrs[j].value_len)
				continue;
			const struct arn_h1_header *hd = &st->req.m.hdrs[j];
			ref = (struct arn_cfg_ref){hd->value, hd->value_len,
						   arn_cfg_hash(hd->value, hd->value_len)};
		}
		struct http_shadow *s = shadow_get(w);
		if (!s) {
			HTTP_INC(hc, shadow_overflow);
			continue;
		}
		s->owner = st;
		s->cluster = ref;
		s->timeout_ms = st->timeout_ms ? st->timeout_ms : HTTP_SHADOW_TIMEOUT_MS;
		s->head_len = s->body_len = 0;
		s->hc.laddr = hc->laddr;
		s->hc.sladdr = hc->sladdr;
		s->hc.lport = hc->lport;
		X(st)->shadows++;
	}
	/* the request's body, and its end, come through the retry body's
	 * path (http_rb_append, the connection manager's request end) */
	if (X(st)->shadows)
		st->state |= HTTP_S_KEEP_BODY;
	/* what a filter read before the route (the buffer filter's whole
	 * body, ext_authz's with_request_body) passed no such path: the
	 * shadows take it from the kept body, before the rest comes */
	for (const struct rte_mbuf *m = X(st)->shadows ? X(st)->rb_head : NULL; m; m = m->next)
		http_shadow_body(st, rte_pktmbuf_mtod(m, const char *), m->data_len);
}

/* Each pending shadow @p s of stream @p st (no walk when it has none). */
#define FOR_PENDING(st, s)                                                                         \
	for (struct http_shadow *s = (st)->hc->w->shadows,                                         \
				*s##_end = s + (X(st)->shadows ? HTTP_SHADOW_MAX : 0);             \
	     s < s##_end; s++)                                                                     \
		if (s->owner == (st))

void http_shadow_head(struct http_stream *st, const struct arn_h1_msg *m, const char *path,
		      uint32_t plen, const struct arn_h1_edit *e, int n)
{
	FOR_PENDING(st, s)
	{
		if (s->head_len)
			continue; /* a retry's: the first attempt's head is the copy */
		struct arn_h1_wbuf wb;
		arn_h1_wbuf_init(&wb, s->head, sizeof(s->head), NULL, NULL);
		arn_h1_write_request_line(&wb, m->method_name.p, m->method_name.len, path, plen, 1);
		int rc = arn_h1_write_headers(&wb, m, e, (unsigned)n, 0);
		arn_h1_write_end(&wb);
		struct arn_h1_parser p;
		struct arn_h1_config cfg = {
		    .max_head_bytes = sizeof(s->head),
		    .max_headers = HTTP_MAX_HDRS,
		    .opts = ARN_H1_O_ALLOW_CUSTOM_METHODS | ARN_H1_O_ALLOW_CHUNKED_LENGTH,
		};
		struct arn_h1_ev ev = {0};
		if (rc == 0 && !wb.err) {
			arn_h1_msg_init(&s->m, s->hdrs, HTTP_MAX_HDRS);
			arn_h1_parser_init(&p, ARN_H1_REQUEST, &cfg, &s->m);
			if (arn_h1_parse(&p, s->head, wb.len, &ev) < 0)
				ev.type = ARN_H1_EV_NONE;
		}
		if (ev.type != ARN_H1_EV_HEAD) {
			/* larger than a shadow's copy of a head: given up, as a
			 * body past its bound is */
			CL_INC(st, retry_or_shadow_abandoned);
			shadow_forget(st, s);
			continue;
		}
		s->head_len = wb.len;
		if (st->state & HTTP_S_REQ_DONE) {
			/* the request was whole before its head went */
			X(st)->shadows--;
			shadow_start(st->hc->w, s);
		}
	}
}

void http_shadow_body(struct http_stream *st, const char *p, size_t n)
{
	bool over = false;
	FOR_PENDING(st, s)
	{
		if ((uint64_t)s->body_len + n > sizeof(s->body)) {
			over = true;
			shadow_forget(st, s);
			continue;
		}
		memcpy(s->body + s->body_len, p, n);
		s->body_len += (uint32_t)n;
	}
	/* once for the request, as Envoy counts its abandoned shadowing */
	if (over)
		CL_INC(st, retry_or_shadow_abandoned);
}

void http_shadow_end(struct http_stream *st)
{
	struct http_worker *w = st->hc->w;
	FOR_PENDING(st, s)
	{
		if (!s->head_len)
			continue; /* its head goes with the attempt's (http_shadow_head) */
		X(st)->shadows--;
		shadow_start(w, s);
	}
}

void http_shadow_drop(struct http_stream *st)
{
	FOR_PENDING(st, s)
	{
		shadow_forget(st, s);
	}
	X(st)->shadows = 0;
}

/* ---- the worker ------------------------------------------------------------------------ */

int http_shadow_worker_init(struct http_worker *w)
{
	w->shadows = calloc(HTTP_SHADOW_MAX, sizeof(*w->shadows));
	if (!w->shadows)
		return -ENOMEM;
	for (unsigned i = HTTP_SHADOW_MAX; i-- > 0;) {
		w->shadows[i].hc.w = w;
		shadow_put(w, &w->shadows[i]);
	}
	return 0;
}

void http_shadow_shutdown(struct http_worker *w)
{
	for (unsigned i = 0; w->shadows && i < HTTP_SHADOW_MAX; i++)
		if (w->shadows[i].running) {
			http_subreq_cancel(&w->shadows[i].sr);
			shadow_put(w, &w->shadows[i]);
		}
}

void http_shadow_worker_fini(struct http_worker *w)
{
	free(w->shadows);
	w->shadows = NULL;
	w->shadow_free = NULL;
}

unsigned http_shadow_free_count(const struct http_worker *w)
{
	unsigned n = 0;
	for (const struct http_shadow *s = w->shadow_free; s; s = s->next)
		n++;
	return n;
}
