/*
 * envoy.filters.http.ext_authz over HTTP (http_authz.h): the check's
 * request, as Envoy's RawHttpClientImpl makes it, and its answer.
 *
 * The check: the client's method, path_prefix + its path, content-length
 * 0 and no body, Host the client's, authorization and the headers
 * allowed_headers matches (disallowed_headers not), then headers_to_add
 * (which replace the client's of the same name). The answer: 200 allows,
 * its headers that allowed_upstream_headers(_to_append) match go on the
 * upstream request, those allowed_client_headers_on_success matches on the
 * response; a 5xx is an error, as is a failure (connect, reset, timeout,
 * circuit breaker); any other status denies with the service's status,
 * body and the headers allowed_client_headers matches (unset: all but
 * host). Never copied: the framing (content-length, transfer-encoding),
 * hop-by-hop headers and host, which are Arion's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "arn_config.h"
#include "arn_http_ratelimit.h"
#include "arn_log.h"
#include "http_authz.h"
#include "http_ctxpool.h"
#include "http_authz_grpc.h"
#include "http_filter.h"
#include "http_int.h"
#include "http_local.h"
#include "http_rb.h"
#include "http_stream.h"
#include "http_subreq.h"
#include "http_worker.h"

enum az_state {
	AZ_RUNNING = 0, /* the check is under way */
	AZ_ALLOWED,	/* let on: its edits ride on the request and response */
	AZ_OVER,	/* answered, or the stream went on without its edits */
};

struct http_authz {
	struct http_subreq sr;
	struct http_stream *st;
	struct http_authz *next; /* the worker's free list */
	const struct arn_cfg_ext_authz *cfg;
	uint8_t idx; /* the filter's index in the HCM's chain */
	uint8_t state;
	bool overflow; /* the answer did not fit (HTTP_AUTHZ_BUF / _EDITS) */
	uint16_t status;
	uint8_t n_up, n_cl;
	uint32_t used, body_at, body_len;
	/* a gRPC check: its request and answer (a worker's big scratch:
	 * HTTP_AUTHZ_GRPC_REQ bytes of request, then the answer's), the
	 * answer's bytes so far and its grpc-status (-1: none yet) */
	char *big;
	uint32_t rlen;
	int32_t grpc_status;
	bool bad_ct; /* the answer's content-type is not application/grpc */
	/* with_request_body: the body is being read (HTTP_S_MCP: it comes to
	 * http_authz_body) into the stream's kept body (http_rb_keep); then
	 * the check carries its first blen bytes (partial: it had more) */
	bool collecting, bodied, partial;
	uint32_t blen;
	/* the most specific per-route settings (NULL: none), and the virtual
	 * host's when the route has its own (their context_extensions merge) */
	const struct arn_cfg_ext_authz_route *pr, *pr_vh;
	struct http_subreq_header h[HTTP_SUBREQ_MAX_HDRS];
	struct arn_h1_edit up[HTTP_AUTHZ_EDITS]; /* on the upstream request */
	struct arn_h1_edit cl[HTTP_AUTHZ_EDITS]; /* on the response, or the denial */
	char buf[HTTP_AUTHZ_BUF];
};

static struct http_ctxpools pools;
_Static_assert(HTTP_AUTHZ_N < UINT16_MAX, "st->authz holds 1 + a context's index");

int http_authz_worker_init(struct http_worker *w)
{
	/* (a worker without a pool: every call fails, counted) */
	return http_ctxpools_init(&pools, w->idx, HTTP_AUTHZ_N, sizeof(struct http_authz),
				  offsetof(struct http_authz, next));
}

void http_authz_worker_fini(struct http_worker *w)
{
	http_ctxpools_fini(&pools, w->idx);
}

unsigned http_authz_in_use(const struct http_worker *w)
{
	return http_ctxpools_in_use(&pools, w->idx);
}

/* The check of @p st (st->authz), or NULL. */
static struct http_authz *az_at(const struct http_stream *st)
{
	return http_ctxpools_at(&pools, st->hc->w->idx, st->authz);
}

static struct http_authz *az_get(struct http_worker *w)
{
	struct http_authz *a = http_ctxpools_get(&pools, w->idx);
	if (!a)
		return NULL;
	a->state = AZ_RUNNING;
	a->overflow = false;
	a->status = 0;
	a->n_up = a->n_cl = 0;
	a->used = a->body_at = a->body_len = 0;
	a->big = NULL;
	a->rlen = 0;
	a->grpc_status = -1;
	a->bad_ct = false;
	a->collecting = a->bodied = a->partial = false;
	a->blen = 0;
	a->pr = a->pr_vh = NULL;
	a->sr.running = false;
	return a;
}

/* The gRPC check's buffer goes back (nothing once it has). */
static void az_big_put(struct http_worker *w, struct http_authz *a)
{
	if (a->big)
		http_big_put(w, a->big);
	a->big = NULL;
}

static void az_put(struct http_worker *w, struct http_authz *a)
{
	az_big_put(w, a);
	a->st = NULL;
	http_ctxpool_put(&pools.w[w->idx], a);
}

static void az_count(struct http_stream *st, size_t i, unsigned id)
{
	struct http_hcm_rt *r = st->hc->hrt;
	struct arn_stats_scope *sc = r && i < HTTP_MAX_FILTER_STATS ? r->fstats[i] : NULL;
	if (sc)
		arn_stats_inc(sc, st->hc->w->slot, id);
}

/* Bytes of the context's buffer, or NULL (the overflow is noted). */
static char *az_room(struct http_authz *a, size_t n)
{
	if (n > HTTP_AUTHZ_BUF - a->used) {
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

/* Headers never copied from the answer, in either direction: its framing,
 * hop-by-hop ones (RFC 9110 7.6.1) and Host. */
static bool az_never(const char *n, size_t len)
{
	static const char *const never[] = {
	    "content-length",
	    "transfer-encoding",
	    "connection",
	    "keep-alive",
	    "proxy-connection",
	    "te",
	    "trailer",
	    "upgrade",
	    "host",
	    /* read on a 200 (az_remove), never passed on */
	    "x-envoy-auth-headers-to-remove",
	};
	if (!len || n[0] == ':')
		return true;
	for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++)
		if (name_is(n, len, never[i]))
			return true;
	return false;
}

/* Does a matcher of @p m (@p n of them) match header name @p name, as
 * Envoy matches its lower-case names? */
static bool az_match(const struct arn_cfg_str_match *m, size_t n, const char *name, size_t len)
{
	char low[256];
	if (!n || len > sizeof(low))
		return false;
	for (size_t i = 0; i < len; i++)
		low[i] = (char)((name[i] >= 'A' && name[i] <= 'Z') ? name[i] + 32 : name[i]);
	for (size_t i = 0; i < n; i++)
		if (arn_cfg_str_match(&m[i], low, len))
			return true;
	return false;
}

/* One header of the answer into @p e (@p *n of HTTP_AUTHZ_EDITS), copied. */
static void az_keep(struct http_authz *a, struct arn_h1_edit *e, uint8_t *n,
		    const struct arn_h1_header *h, uint8_t op)
{
	if (*n >= HTTP_AUTHZ_EDITS) {
		a->overflow = true;
		return;
	}
	char *p = az_room(a, (size_t)h->name_len + h->value_len);
	if (!p)
		return;
	memcpy(p, h->name, h->name_len);
	if (h->value_len) /* (a removal has none: value NULL) */
		memcpy(p + h->name_len, h->value, h->value_len);
	e[(*n)++] = (struct arn_h1_edit){.name = p,
					 .name_len = h->name_len,
					 .value = p + h->name_len,
					 .value_len = h->value_len,
					 .op = op};
}

/* ---- the answer ----------------------------------------------------------------------- */

/* The router asks the filters for a request's own upstream edits (and
 * keeps the connection's kept list from being reused) only when
 * st->rl_unenforced is set: one field tested per request (bench_hcm).
 * An allowed check with edits sets it to this empty configuration when
 * no local_ratelimit filter did; http_l4_req_edits then adds the check's
 * after the (no) rate limit headers. */
static const struct arn_cfg_http_ratelimit az_no_rl;

/* @p a lets its request on, with its edits. */
static void az_allow(struct http_authz *a)
{
	a->state = AZ_ALLOWED;
	if (a->n_up && !a->st->rl_unenforced)
		a->st->rl_unenforced = &az_no_rl;
}

/* A 200's x-envoy-auth-headers-to-remove (Envoy's storage header): the
 * comma-separated names it lists are removed from the upstream request,
 * but for pseudo-headers and host (Envoy's isRemovableHeader). */
static void az_remove(struct http_authz *a, const struct arn_h1_header *h)
{
	const char *p = h->value, *end = h->value + h->value_len;
	while (p < end && !a->overflow) {
		const char *c = memchr(p, ',', (size_t)(end - p));
		const char *e = c ? c : end;
		const char *s = p;
		while (s < e && (*s == ' ' || *s == '\t'))
			s++;
		const char *t = e;
		while (t > s && (t[-1] == ' ' || t[-1] == '\t'))
			t--;
		size_t n = (size_t)(t - s);
		if (n && s[0] != ':' && !name_is(s, n, "host") && n <= UINT16_MAX) {
			struct arn_h1_header r = {.name = s, .name_len = (uint16_t)n};
			az_keep(a, a->up, &a->n_up, &r, ARN_H1_EDIT_REMOVE);
		}
		p = c ? c + 1 : end;
	}
}

static void az_resume(struct http_authz *a);

/* The check failed (@p why): status_on_error, or on with failure_mode_allow. */
static void az_error(struct http_authz *a, const char *why)
{
	struct http_stream *st = a->st;
	const struct arn_cfg_ext_authz *f = a->cfg;
	ARN_DEBUG(HTTP, "ext_authz: check failed: %s", why);
	az_count(st, a->idx, ARN_EXT_AUTHZ_error);
	if (a->overflow)
		az_count(st, a->idx, ARN_EXT_AUTHZ_overflow);
	a->n_up = a->n_cl = 0;
	if (f->failure_mode_allow) {
		az_count(st, a->idx, ARN_EXT_AUTHZ_failure_mode_allowed);
		if (f->failure_mode_allow_header_add)
			a->up[a->n_up++] =
			    (struct arn_h1_edit){.name = "x-envoy-auth-failure-mode-allowed",
						 .name_len = 33,
						 .value = "true",
						 .value_len = 4,
						 .op = ARN_H1_EDIT_SET};
		az_allow(a);
		return;
	}
	a->state = AZ_OVER;
	http_local_reply(st, f->status_on_error, NULL, 0, ARN_RF_BIT(UNAUTHORIZED_EXTERNAL_SERVICE),
			 "ext_authz_error", NULL, 0);
}

/* Has the stream moved on without the check (a timeout's reply, a reset)? */
static bool az_orphan(const struct http_authz *a)
{
	return !a->st || (a->st->state & HTTP_S_LOCAL) || az_at(a->st) != a;
}

static void az_head(struct http_subreq *sr, const struct arn_h1_msg *m)
{
	struct http_authz *a = OWNER(sr, struct http_authz, sr);
	const struct arn_cfg_ext_authz *f = a->cfg;
	a->status = m->status;
	if (m->status >= 500 || az_orphan(a))
		return; /* an error: nothing of it is kept */
	for (unsigned i = 0; i < m->n_hdrs && !a->overflow; i++) {
		const struct arn_h1_header *h = &m->hdrs[i];
		if (m->status == 200 &&
		    name_is(h->name, h->name_len, "x-envoy-auth-headers-to-remove"))
			az_remove(a, h);
		if (az_never(h->name, h->name_len))
			continue;
		if (m->status == 200) {
			if (az_match(f->up_set, f->n_up_set, h->name, h->name_len))
				az_keep(a, a->up, &a->n_up, h, ARN_H1_EDIT_SET);
			else if (az_match(f->up_append, f->n_up_append, h->name, h->name_len))
				az_keep(a, a->up, &a->n_up, h, ARN_H1_EDIT_APPEND_VALUE);
			if (az_match(f->client_ok, f->n_client_ok, h->name, h->name_len))
				az_keep(a, a->cl, &a->n_cl, h, ARN_H1_EDIT_ADD);
		} else {
			/* unset: every header but host (never copied anyway);
			 * set: those, and status, content-length (Arion's),
			 * www-authenticate and location (Envoy's defaults) */
			bool take = !f->n_client ||
				    name_is(h->name, h->name_len, "www-authenticate") ||
				    name_is(h->name, h->name_len, "location") ||
				    az_match(f->client, f->n_client, h->name, h->name_len);
			if (take)
				az_keep(a, a->cl, &a->n_cl, h, ARN_H1_EDIT_SET);
		}
	}
	a->body_at = a->used;
}

static void az_body(struct http_subreq *sr, const char *data, size_t len)
{
	struct http_authz *a = OWNER(sr, struct http_authz, sr);
	if (a->status == 200 || a->status >= 500 || a->overflow)
		return; /* only a denial's body goes on */
	char *p = az_room(a, len);
	if (p) {
		memcpy(p, data, len);
		a->body_len += (uint32_t)len;
	}
}

static void az_end(struct http_subreq *sr)
{
	struct http_authz *a = OWNER(sr, struct http_authz, sr);
	if (az_orphan(a)) {
		a->state = AZ_OVER;
		return;
	}
	struct http_stream *st = a->st;
	struct http_conn *hc = st->hc;
	az_big_put(hc->w, a);
	if (a->overflow || a->status >= 500) {
		az_error(a, a->overflow ? "answer too large" : "5xx");
	} else if (a->status == 200) {
		az_count(st, a->idx, ARN_EXT_AUTHZ_ok);
		az_allow(a);
	} else {
		az_count(st, a->idx, ARN_EXT_AUTHZ_denied);
		a->state = AZ_OVER;
		http_local_reply(st, a->status, a->buf + a->body_at, a->body_len,
				 ARN_RF_BIT(UNAUTHORIZED_EXTERNAL_SERVICE), "ext_authz_denied",
				 a->cl, a->n_cl);
	}
	if (a->state == AZ_ALLOWED)
		az_resume(a);
	http_conn_run(hc);
}

static void az_failed(struct http_subreq *sr, const char *why)
{
	struct http_authz *a = OWNER(sr, struct http_authz, sr);
	if (az_orphan(a)) {
		a->state = AZ_OVER;
		return;
	}
	struct http_conn *hc = a->st->hc;
	az_big_put(hc->w, a);
	az_error(a, why);
	if (a->state == AZ_ALLOWED)
		az_resume(a);
	http_conn_run(hc);
}

static const struct http_subreq_ops az_ops = {
    .on_head = az_head,
    .on_body = az_body,
    .on_end = az_end,
    .on_failed = az_failed,
};

/* ---- a gRPC check's answer ---------------------------------------------------------- */

_Static_assert(HTTP_AUTHZ_GRPC_REQ + HTTP_AUTHZ_GRPC_ANS <= HTTP_BIG_SCRATCH,
	       "a gRPC check's request and answer share one large scratch buffer");

/* grpc-status among @p n headers @p h into a->grpc_status. */
static void az_grpc_status(struct http_authz *a, const struct arn_h1_header *h, unsigned n)
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
		a->grpc_status = ok ? v : 1000; /* unparsable: not OK */
	}
}

static void azg_head(struct http_subreq *sr, const struct arn_h1_msg *m)
{
	struct http_authz *a = OWNER(sr, struct http_authz, sr);
	a->status = m->status;
	bool ct = false;
	for (unsigned i = 0; i < m->n_hdrs; i++) {
		const struct arn_h1_header *h = &m->hdrs[i];
		if (name_is(h->name, h->name_len, "content-type"))
			ct = h->value_len >= 16 &&
			     strncasecmp(h->value, "application/grpc", 16) == 0;
	}
	a->bad_ct = !ct;
	az_grpc_status(a, m->hdrs, m->n_hdrs); /* a trailers-only answer */
}

static void azg_body(struct http_subreq *sr, const char *data, size_t len)
{
	struct http_authz *a = OWNER(sr, struct http_authz, sr);
	if (a->overflow || !a->big)
		return;
	if (len > HTTP_AUTHZ_GRPC_ANS - a->rlen) {
		a->overflow = true; /* the answer is larger than Arion reads */
		return;
	}
	memcpy(a->big + HTTP_AUTHZ_GRPC_REQ + a->rlen, data, len);
	a->rlen += (uint32_t)len;
}

static void azg_trailers(struct http_subreq *sr, const struct arn_h1_msg *m)
{
	struct http_authz *a = OWNER(sr, struct http_authz, sr);
	az_grpc_status(a, m->trailers, m->n_trailers);
}

/* Mutations @p hv (@p n) of a CheckResponse into @p e (@p *k): not the
 * headers Arion frames (az_never), nor pseudo-headers and host. */
static void azg_keep(struct http_authz *a, struct arn_h1_edit *e, uint8_t *k,
		     const struct http_authz_hv *hv, unsigned n)
{
	for (unsigned i = 0; i < n && !a->overflow; i++) {
		if (az_never(hv[i].name, hv[i].name_len))
			continue;
		struct arn_h1_header h = {.name = hv[i].name,
					  .name_len = (uint16_t)hv[i].name_len,
					  .value = hv[i].value,
					  .value_len = hv[i].value_len};
		az_keep(a, e, k, &h, hv[i].op);
	}
}

/* An answer Envoy's validate_mutations would refuse (rejectResponse):
 * 500, whatever failure_mode_allow says. */
static void az_invalid(struct http_authz *a, const char *why)
{
	struct http_stream *st = a->st;
	ARN_DEBUG(HTTP, "ext_authz: invalid answer: %s", why);
	az_count(st, a->idx, ARN_EXT_AUTHZ_invalid);
	a->n_up = a->n_cl = 0;
	a->state = AZ_OVER;
	http_local_reply(st, 500, NULL, 0, ARN_RF_BIT(UNAUTHORIZED_EXTERNAL_SERVICE),
			 "ext_authz_invalid", NULL, 0);
}

/* ok_response's query_parameters_to_set / _to_remove on the request's
 * path, as Envoy's ext_authz rewrites it (http_query.h), into the
 * context's buffer (it lives until the stream ends: retries send it
 * too). Keys and values to set must be x-www-form-urlencoded (Envoy
 * checks so with validate_mutations; Arion always: they go into the
 * request line as they are). @return false when the request was
 * answered (an invalid answer); an overflow is noted in @p a. */
static bool azg_query(struct http_authz *a, const struct http_authz_grpc_resp *r)
{
	struct arn_h1_msg *m = &a->st->req.m;
	if (!m->path.len) {
		az_invalid(a, "query parameters for a request without a path");
		return false;
	}
	for (unsigned i = 0; i < r->n_qset; i++) {
		const struct http_qkv *q = &r->qset[i];
		if (!http_query_is_encoded(q->k, q->kl) || !http_query_is_encoded(q->v, q->vl)) {
			az_invalid(a, "a query parameter to set is not URL-encoded");
			return false;
		}
	}
	/* its exact length first: the new path may be longer than the old
	 * and the values set together ("flag" is written "flag=") */
	long cap = http_query_rewrite(m->path.p, m->path.len, r->qset, r->n_qset, r->qrm, r->n_qrm,
				      NULL, 0);
	char *out = cap < 0 || cap > UINT32_MAX ? NULL : az_room(a, (size_t)cap);
	if (!out) {
		a->overflow = true; /* more parameters than HTTP_QUERY_MAX_PARAMS, or no room */
		return true;
	}
	long n = http_query_rewrite(m->path.p, m->path.len, r->qset, r->n_qset, r->qrm, r->n_qrm,
				    out, (size_t)cap);
	if (n != cap) {
		a->overflow = true; /* (cannot happen: the same inputs) */
		return true;
	}
	m->path = (struct arn_h1_slice){out, (uint32_t)n};
	return true;
}

/* The answer decided (@p a not orphaned): allowed, denied or an error. */
static void azg_decide(struct http_authz *a)
{
	struct http_stream *st = a->st;
	if (a->overflow) {
		az_error(a, "answer too large");
		return;
	}
	if (a->status != 200 || a->bad_ct) {
		az_error(a, a->status != 200 ? "HTTP status not 200" : "not a gRPC answer");
		return;
	}
	if (a->grpc_status != 0) {
		az_error(a, a->grpc_status < 0 ? "no grpc-status" : "grpc-status not OK");
		return;
	}
	uint8_t *msg;
	long ml = http_authz_grpc_unframe((uint8_t *)a->big + HTTP_AUTHZ_GRPC_REQ, a->rlen, &msg);
	struct http_authz_grpc_resp r;
	int rc = ml < 0 ? (int)ml : http_authz_grpc_decode(msg, (size_t)ml, &r);
	if (rc == -E2BIG)
		a->overflow = true; /* a bound, counted in .overflow */
	if (rc != 0) {
		if (rc != -E2BIG)
			az_count(st, a->idx, ARN_EXT_AUTHZ_malformed);
		az_error(a, rc == -E2BIG ? "CheckResponse has too many headers"
					 : "malformed CheckResponse");
		return;
	}
	if (!r.denied) {
		azg_keep(a, a->up, &a->n_up, r.h, r.n_h);
		for (unsigned i = 0; i < r.n_rm && !a->overflow; i++) {
			/* Envoy's isRemovableHeader: not pseudo-headers, not host */
			if (name_is(r.rm[i].name, r.rm[i].name_len, "host"))
				continue;
			struct arn_h1_header h = {.name = r.rm[i].name,
						  .name_len = (uint16_t)r.rm[i].name_len};
			az_keep(a, a->up, &a->n_up, &h, ARN_H1_EDIT_REMOVE);
		}
		azg_keep(a, a->cl, &a->n_cl, r.rsp, r.n_rsp);
		if ((r.n_qset || r.n_qrm) && !a->overflow && !azg_query(a, &r))
			return;
		if (a->overflow) {
			az_error(a, "answer too large");
			return;
		}
		az_count(st, a->idx, ARN_EXT_AUTHZ_ok);
		az_allow(a);
		return;
	}
	azg_keep(a, a->cl, &a->n_cl, r.h, r.n_h);
	char *body = r.body_len ? az_room(a, r.body_len) : NULL;
	if (body)
		memcpy(body, r.body, r.body_len);
	if (a->overflow) {
		az_error(a, "answer too large");
		return;
	}
	/* denied_response.status (unset, or not a status: 403, Envoy's) */
	unsigned code = r.http_status >= 200 && r.http_status <= 599 ? r.http_status : 403;
	az_count(st, a->idx, ARN_EXT_AUTHZ_denied);
	a->state = AZ_OVER;
	http_local_reply(st, code, body, r.body_len, ARN_RF_BIT(UNAUTHORIZED_EXTERNAL_SERVICE),
			 "ext_authz_denied", a->cl, a->n_cl);
}

static void azg_end(struct http_subreq *sr)
{
	struct http_authz *a = OWNER(sr, struct http_authz, sr);
	if (az_orphan(a)) {
		a->state = AZ_OVER;
		return;
	}
	struct http_conn *hc = a->st->hc;
	azg_decide(a);
	az_big_put(hc->w, a);
	if (a->state == AZ_ALLOWED)
		az_resume(a);
	http_conn_run(hc);
}

static void azg_failed(struct http_subreq *sr, const char *why)
{
	struct http_authz *a = OWNER(sr, struct http_authz, sr);
	if (a->st)
		az_big_put(a->st->hc->w, a);
	az_failed(sr, why);
}

static const struct http_subreq_ops azg_ops = {
    .on_head = azg_head,
    .on_body = azg_body,
    .on_trailers = azg_trailers,
    .on_end = azg_end,
    .on_failed = azg_failed,
};

/* The HCM's walk goes on after the filter (http_authz_resume_at). */
static void az_resume(struct http_authz *a)
{
	if (a->bodied) /* the body read for the check goes up after the head */
		http_rb_send_first(a->st);
	a->st->hc->ops->resume_head(a->st, &http_l4_filter_ops);
}

/* ---- the check ------------------------------------------------------------------------- */

/* The check's headers into a->h: the client's that go (authorization and
 * allowed_headers' matches, not disallowed_headers', nor what
 * headers_to_add replaces), then headers_to_add. @return how many, or -1
 * when there are more than a sub-request takes. */
static int az_headers(struct http_authz *a, const struct arn_h1_msg *m)
{
	const struct arn_cfg_ext_authz *f = a->cfg;
	unsigned n = 0;
	for (unsigned i = 0; i < m->n_hdrs; i++) {
		const struct arn_h1_header *h = &m->hdrs[i];
		if (az_never(h->name, h->name_len) || name_is(h->name, h->name_len, "expect"))
			continue;
		if (!name_is(h->name, h->name_len, "authorization") &&
		    !az_match(f->allowed, f->n_allowed, h->name, h->name_len))
			continue;
		if (az_match(f->disallowed, f->n_disallowed, h->name, h->name_len))
			continue;
		bool replaced = false;
		for (size_t k = 0; k < f->n_add && !replaced; k++)
			replaced = name_is(h->name, h->name_len, f->add[k].name);
		if (replaced)
			continue;
		if (n >= HTTP_SUBREQ_MAX_HDRS)
			return -1;
		a->h[n++] =
		    (struct http_subreq_header){h->name, h->value, h->name_len, h->value_len};
	}
	for (size_t k = 0; k < f->n_add; k++) {
		if (n >= HTTP_SUBREQ_MAX_HDRS)
			return -1;
		a->h[n++] = (struct http_subreq_header){f->add[k].name, f->add[k].value,
							f->add[k].name_len, f->add[k].value_len};
	}
	if (a->bodied) { /* Envoy's, with the body it carries */
		if (n >= HTTP_SUBREQ_MAX_HDRS)
			return -1;
		a->h[n++] = (struct http_subreq_header){"x-envoy-auth-partial-body",
							a->partial ? "true" : "false", 25,
							a->partial ? 4u : 5u};
	}
	return (int)n;
}

/* http_authz_grpc_req's keep: allowed_headers (unset: all) and not
 * disallowed_headers, as Envoy picks the headers of a gRPC check. */
static bool azg_goes(const void *ctx, const char *name, size_t len)
{
	const struct arn_cfg_ext_authz *f = ctx;
	if (f->n_allowed && !az_match(f->allowed, f->n_allowed, name, len))
		return false;
	return !az_match(f->disallowed, f->n_disallowed, name, len);
}

#define AZG_PATH "/envoy.service.auth.v3.Authorization/Check"

/* Start @p a's gRPC check (Authorization.Check) of @p st's request,
 * per-route settings @p pr (NULL: none). @return as http_subreq_start,
 * -E2BIG / -EBUSY when it does not fit or no buffer is free. */
static int azg_start(struct http_authz *a, struct http_stream *st,
		     const struct arn_cfg_ext_authz_route *pr)
{
	const struct arn_cfg_ext_authz *f = a->cfg;
	struct http_conn *hc = st->hc;
	struct http_worker *w = hc->w;
	if (!a->big)
		a->big = http_big_get(w);
	if (!a->big) {
		a->overflow = true;
		return -EBUSY;
	}
	const struct arn_h1_msg *m = &st->req.m;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	int64_t now = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
	/* the source: where the connection manager takes the client from
	 * the request (http_client_from_headers), the address found (port
	 * 0), as Envoy's sets the stream's remote address before its
	 * filters run */
	uint32_t src = hc->raddr;
	uint16_t sport = hc->rport;
	if (http_client_from_headers(hc->hcm)) {
		src = http_client_addr(hc->hcm, m, hc->raddr, NULL);
		sport = src == hc->raddr ? sport : 0;
	}
	struct http_authz_grpc_req q = {
	    .saddr = src,
	    .sport = sport,
	    .daddr = hc->laddr,
	    .dport = hc->lport,
	    .time_us = now - (int64_t)http_now_us(w, st->start_tsc),
	    .id = http_rand(w),
	    .method = m->method_name.p,
	    .method_len = (uint32_t)m->method_name.len,
	    .path = m->path.p,
	    .path_len = (uint32_t)m->path.len,
	    .host = st->auth,
	    .host_len = st->auth_len,
	    .scheme = hc->tls ? "https" : "http",
	    .protocol = st->version >= 20   ? "HTTP/2"
			: st->version == 10 ? "HTTP/1.0"
					    : "HTTP/1.1",
	    .m = m,
	    .keep = azg_goes,
	    .keep_ctx = f,
	    .ctx = pr ? pr->ctx : NULL,
	    .n_ctx = pr ? pr->n_ctx : 0,
	    .ctx_vh = a->pr_vh ? a->pr_vh->ctx : NULL,
	    .n_ctx_vh = a->pr_vh ? a->pr_vh->n_ctx : 0,
	    /* the body (at the buffer's start, az_take_body) */
	    .body = a->big,
	    .body_len = a->blen,
	    .with_body = a->bodied,
	    .partial = a->partial,
	    .raw_body = f->pack_as_bytes,
	};
	/* encoded after the body, whose bytes it copies */
	long at =
	    http_authz_grpc_encode(&q, (uint8_t *)a->big + a->blen, HTTP_AUTHZ_GRPC_REQ - a->blen);
	if (at >= 0)
		at += a->blen;
	if (at < 0) {
		a->overflow = true;
		return -E2BIG;
	}
	/* gRPC's request headers, then initial_metadata; :authority the
	 * configured one, else the cluster's name (Envoy's) */
	unsigned n = 0;
	a->h[n++] = (struct http_subreq_header){"content-type", "application/grpc", 12, 16};
	a->h[n++] = (struct http_subreq_header){"te", "trailers", 2, 8};
	if (f->timeout_ms) {
		char *t = az_room(a, 16);
		if (!t)
			return -E2BIG;
		int tl = snprintf(t, 16, "%um", f->timeout_ms);
		a->h[n++] = (struct http_subreq_header){"grpc-timeout", t, 12, (size_t)tl};
	}
	for (size_t k = 0; k < f->n_md; k++) {
		if (n >= HTTP_SUBREQ_MAX_HDRS)
			return -E2BIG;
		a->h[n++] = (struct http_subreq_header){f->md[k].name, f->md[k].value,
							f->md[k].name_len, f->md[k].value_len};
	}
	a->sr.method_name = (struct arn_h1_slice){0};
	a->sr.method = 0;
	a->sr.host = f->authority ? f->authority : f->cluster.name;
	a->sr.host_len = f->authority ? f->authority_len : f->cluster.len;
	a->sr.get = a->sr.del = false;
	a->sr.msg = NULL;
	const struct arn_cfg_gen *g = w->gen_slot ? arn_config_gen_at(w->gen_slot) : NULL;
	return http_subreq_start(&a->sr, hc, g, &f->cluster, AZG_PATH, sizeof(AZG_PATH) - 1, a->h,
				 n, a->big + at, HTTP_AUTHZ_GRPC_REQ - (size_t)at, f->timeout_ms,
				 &azg_ops, a);
}

static int az_start(struct http_authz *a);

bool http_authz_step(struct http_stream *st, size_t i, const struct arn_cfg_ext_authz *f,
		     const struct arn_cfg_route_match *mt)
{
	struct http_conn *hc = st->hc;
	struct http_worker *w = hc->w;
	if (st->authz)
		return false; /* its check allowed: the walk goes on past it */
	const struct arn_cfg_hcm *h = hc->hcm;
	const char *name = h->http_filter_names ? h->http_filter_names[i] : NULL;
	const struct arn_cfg_ext_authz_route *pr =
	    mt && name ? arn_cfg_per_filter_find(mt->vhost, mt->route, name, strlen(name),
						 ARN_CFG_PF_EXT_AUTHZ)
		       : NULL;
	if (pr && pr->disabled)
		return false;
	if (!arn_fraction_hit(&f->enabled, http_rand(w))) {
		az_count(st, i, ARN_EXT_AUTHZ_disabled);
		if (!f->deny_at_disable)
			return false;
		http_local_reply(st, f->status_on_error, NULL, 0,
				 ARN_RF_BIT(UNAUTHORIZED_EXTERNAL_SERVICE), "ext_authz_error", NULL,
				 0);
		return true;
	}
	struct http_authz *a = az_get(w);
	if (!a) {
		/* no context: the check cannot run, as a failure (without the
		 * failure header, which would need one) */
		az_count(st, i, ARN_EXT_AUTHZ_error);
		az_count(st, i, ARN_EXT_AUTHZ_overflow);
		if (f->failure_mode_allow) {
			az_count(st, i, ARN_EXT_AUTHZ_failure_mode_allowed);
			return false;
		}
		http_local_reply(st, f->status_on_error, NULL, 0,
				 ARN_RF_BIT(UNAUTHORIZED_EXTERNAL_SERVICE), "ext_authz_error", NULL,
				 0);
		return true;
	}
	a->st = st;
	a->cfg = f;
	a->idx = (uint8_t)i;
	a->pr = pr;
	if (pr && mt->route) { /* the virtual host's, if the route's is not it */
		const struct arn_cfg_ext_authz_route *vh = arn_cfg_per_filter_find(
		    mt->vhost, NULL, name, strlen(name), ARN_CFG_PF_EXT_AUTHZ);
		a->pr_vh = vh != pr ? vh : NULL;
	}
	st->authz = (uint16_t)http_ctxpool_id(&pools.w[w->idx], a);
	if (f->with_body && !(pr && pr->no_body) && http_msg_has_body(&st->req.m) &&
	    !(st->state & HTTP_S_REQ_DONE)) {
		/* the body first (http_authz_body, http_authz_body_end) */
		a->collecting = true;
		st->state |= HTTP_S_MCP;
		return true;
	}
	if (f->with_body && !(pr && pr->no_body) && http_msg_has_body(&st->req.m) &&
	    X(st)->rb_head) {
		/* read whole before this filter (the buffer filter's): the
		 * check takes it from the kept body, no second copy */
		uint32_t kept = X(st)->rb_bytes;
		if (kept > f->max_body && !f->partial_body) {
			a->state = AZ_OVER;
			http_local_reply(st, 413, "Payload Too Large", 17, 0,
					 "request_payload_too_large", NULL, 0);
			return true;
		}
		a->bodied = true;
		a->partial = kept > f->max_body;
		a->blen = a->partial ? f->max_body : kept;
	}
	return az_start(a) != AZ_ALLOWED;
}

/* The first blen bytes of the body kept (a->blen: at most max_request_bytes)
 * into the start of a->big. @return false when no buffer is free. */
static bool az_take_body(struct http_authz *a)
{
	if (!a->bodied)
		return true;
	a->big = http_big_get(a->st->hc->w);
	if (!a->big) {
		a->overflow = true;
		return false;
	}
	a->blen = (uint32_t)http_rb_copy(a->st, a->big, a->blen);
	return true;
}

/* Start @p a's check. @return its state: AZ_RUNNING (the answer resumes
 * the stream), AZ_OVER (answered: it failed) or AZ_ALLOWED (it failed,
 * and failure_mode_allow lets the request on now). */
static int az_start(struct http_authz *a)
{
	struct http_stream *st = a->st;
	const struct arn_cfg_ext_authz *f = a->cfg;
	struct http_conn *hc = st->hc;
	struct http_worker *w = hc->w;
	if (!az_take_body(a)) {
		az_error(a, "no buffer for the body");
		return a->state;
	}
	if (f->grpc) {
		int grc = azg_start(a, st, a->pr);
		if (grc == 0)
			return AZ_RUNNING; /* the answer resumes it (azg_end, azg_failed) */
		az_big_put(w, a);
		az_error(a, grc == -EBUSY	   ? "overflow"
			    : grc == -EHOSTUNREACH ? "no healthy upstream"
			    : grc == -ENOENT	   ? "no cluster"
			    : grc == -E2BIG	   ? "check too large"
						   : "could not start");
		return a->state;
	}
	const struct arn_h1_msg *m = &st->req.m;
	/* the path: path_prefix + the client's (its query too) */
	const char *path = m->path.p;
	size_t plen = m->path.len;
	if (f->path_prefix_len) {
		char *p = az_room(a, f->path_prefix_len + plen);
		if (p) {
			memcpy(p, f->path_prefix, f->path_prefix_len);
			memcpy(p + f->path_prefix_len, m->path.p, plen);
		}
		path = p;
		plen += f->path_prefix_len;
	}
	int n = path ? az_headers(a, m) : -1;
	int rc = -E2BIG;
	if (n >= 0) {
		/* the client's method and Host, content-length 0 */
		a->sr.method = m->method;
		a->sr.method_name = m->method_name;
		a->sr.host = st->auth;
		a->sr.host_len = st->auth_len;
		a->sr.get = a->sr.del = false;
		const struct arn_cfg_gen *g = w->gen_slot ? arn_config_gen_at(w->gen_slot) : NULL;
		/* with_request_body: the body (a->big), content-length its size */
		rc = http_subreq_start(&a->sr, hc, g, &f->cluster, path, plen, a->h, (unsigned)n,
				       a->big, a->blen, f->timeout_ms, &az_ops, a);
	} else {
		a->overflow = true;
	}
	if (rc == 0)
		return AZ_RUNNING; /* the answer resumes it (az_end, az_failed) */
	az_big_put(w, a);
	az_error(a, rc == -EBUSY	  ? "overflow"
		    : rc == -EHOSTUNREACH ? "no healthy upstream"
		    : rc == -ENOENT	  ? "no cluster"
					  : "could not start");
	return a->state;
}

/* The body is in (or as much as the check takes): the check starts; if
 * it fails open at once, the stream goes on from here. */
static void az_body_done(struct http_authz *a)
{
	struct http_stream *st = a->st;
	a->collecting = false;
	st->state &= ~HTTP_S_MCP;
	a->bodied = true;
	if (az_start(a) == AZ_ALLOWED)
		az_resume(a);
}

bool http_authz_body(struct http_stream *st, const char *data, size_t len)
{
	struct http_authz *a = az_at(st);
	if (!a || !a->collecting)
		return false;
	const struct arn_cfg_ext_authz *f = a->cfg;
	/* kept whole (the stream's kept body, counted in the worker's
	 * HTTP_RB_WORKER_SEGS buffers): what passes max_request_bytes goes
	 * upstream after the check with the rest */
	if (!http_rb_keep(st, data, len, UINT32_MAX)) {
		a->collecting = false;
		st->state &= ~HTTP_S_MCP;
		az_count(st, a->idx, ARN_EXT_AUTHZ_error);
		az_count(st, a->idx, ARN_EXT_AUTHZ_overflow);
		a->state = AZ_OVER;
		/* not failure_mode_allow: a body not kept cannot go on */
		http_local_reply(st, f->status_on_error, NULL, 0,
				 ARN_RF_BIT(UNAUTHORIZED_EXTERNAL_SERVICE), "ext_authz_error", NULL,
				 0);
		return false;
	}
	uint32_t kept = X(st)->rb_bytes;
	if (kept <= f->max_body)
		return true; /* more to come (or its end) */
	if (!f->partial_body) {
		/* Envoy's decoder buffer limit (max_request_bytes) */
		a->collecting = false;
		st->state &= ~HTTP_S_MCP;
		a->state = AZ_OVER;
		http_local_reply(st, 413, "Payload Too Large", 17, 0, "request_payload_too_large",
				 NULL, 0);
		return false;
	}
	/* allow_partial_message: the check goes with max_request_bytes of
	 * it; the rest waits unread */
	a->partial = true;
	a->blen = f->max_body;
	az_body_done(a);
	return false;
}

void http_authz_body_end(struct http_stream *st)
{
	struct http_authz *a = az_at(st);
	if (!a || !a->collecting)
		return;
	a->blen = X(st)->rb_bytes;
	az_body_done(a);
}

size_t http_authz_resume_at(const struct http_stream *st)
{
	const struct http_authz *a = az_at(st);
	return a ? (size_t)a->idx + 1 : 0;
}

int http_authz_req_edits(struct http_stream *st, struct arn_h1_edit *e, unsigned cap)
{
	struct http_authz *a = az_at(st);
	if (!a || a->state != AZ_ALLOWED)
		return 0;
	if (a->n_up > cap)
		return -ENOSPC;
	memcpy(e, a->up, a->n_up * sizeof(*e));
	return a->n_up;
}

int http_authz_resp_edits(struct http_stream *st, struct arn_h1_edit *e, unsigned cap)
{
	struct http_authz *a = az_at(st);
	if (!a || a->state != AZ_ALLOWED)
		return 0;
	if (a->n_cl > cap)
		return -ENOSPC;
	memcpy(e, a->cl, a->n_cl * sizeof(*e));
	return a->n_cl;
}

void http_authz_stream_end(struct http_stream *st)
{
	struct http_authz *a = az_at(st);
	if (!a)
		return;
	http_subreq_cancel(&a->sr); /* (nothing when it is over) */
	st->authz = 0;
	az_put(st->hc->w, a);
}
