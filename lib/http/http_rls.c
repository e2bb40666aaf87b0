/*
 * envoy.filters.http.ratelimit (http_rls.h): the descriptors, the call
 * and what its answer does, as Envoy's RateLimitFilter (Envoy 1.35's
 * ratelimit.cc: initiateCall, complete, populateResponseHeaders).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "arn_config.h"
#include "arn_log.h"
#include "arn_rbac.h"
#include "arn_rldesc.h"
#include "http_authz_grpc.h"
#include "http_filter.h"
#include "http_int.h"
#include "http_local.h"
#include "http_req_kept.h"
#include "http_ctxpool.h"
#include "http_rls.h"
#include "http_rls_grpc.h"
#include "http_stream.h"
#include "http_subreq.h"
#include "http_worker.h"

_Static_assert(HTTP_RLS_REQ + HTTP_RLS_DESC < HTTP_BIG_SCRATCH,
	       "a call's request, descriptor and joined values share one large scratch buffer");
_Static_assert(HTTP_RLS_REQ + HTTP_RLS_ANS <= HTTP_BIG_SCRATCH,
	       "a call's request and answer share one large scratch buffer");

enum rls_state {
	RLS_RUNNING = 0, /* the call is under way */
	RLS_ALLOWED,	 /* let on: its edits ride on the request and response */
	RLS_OVER,	 /* answered, or let on without edits */
};

enum rls_outcome {
	RLS_OUT_OK = 0,
	RLS_OUT_OVER_LIMIT,
	RLS_OUT_ERROR,
};

struct http_rls {
	struct http_subreq sr;
	struct http_stream *st;
	struct http_rls *next; /* the worker's free list */
	const struct arn_cfg_rls *cfg;
	uint8_t idx; /* the filter's index in the HCM's chain */
	uint8_t state;
	bool overflow;	/* the answer did not fit */
	bool bad_ct;	/* the answer's content-type is not application/grpc */
	bool malformed; /* the answer did not decode */
	uint16_t status;
	int32_t grpc_status; /* -1: none yet */
	char *big;	     /* the worker's large scratch, while the call runs */
	uint32_t rlen;	     /* the answer's bytes so far */
	uint32_t used;	     /* of buf */
	/* the route's cluster (its name lives in the pinned route table or
	 * the request's head): cluster.<it>.ratelimit.* */
	const char *cl;
	uint32_t cl_len;
	uint64_t cl_hash;
	uint8_t n_up, n_rsp;
	struct http_subreq_header h[HTTP_SUBREQ_MAX_HDRS];
	struct arn_h1_edit up[HTTP_RLS_GRPC_HDRS];	/* request_headers_to_add */
	struct arn_h1_edit rsp[HTTP_RLS_GRPC_HDRS + 4]; /* the response's */
	char buf[HTTP_RLS_BUF];
};

static struct http_ctxpools pools;
_Static_assert(HTTP_RLS_N < UINT16_MAX, "st->rls holds 1 + a context's index");

int http_rls_worker_init(struct http_worker *w)
{
	/* (a worker without a pool: every call fails, counted) */
	return http_ctxpools_init(&pools, w->idx, HTTP_RLS_N, sizeof(struct http_rls),
				  offsetof(struct http_rls, next));
}

void http_rls_worker_fini(struct http_worker *w)
{
	http_ctxpools_fini(&pools, w->idx);
}

unsigned http_rls_in_use(const struct http_worker *w)
{
	return http_ctxpools_in_use(&pools, w->idx);
}

static struct http_rls *rls_at(const struct http_stream *st)
{
	return http_ctxpools_at(&pools, st->hc->w->idx, st->rls);
}

static struct http_rls *rls_get(struct http_worker *w)
{
	struct http_rls *a = http_ctxpools_get(&pools, w->idx);
	if (!a)
		return NULL;
	a->state = RLS_RUNNING;
	a->overflow = a->bad_ct = a->malformed = false;
	a->status = 0;
	a->grpc_status = -1;
	a->big = NULL;
	a->rlen = a->used = 0;
	a->n_up = a->n_rsp = 0;
	a->sr.running = false;
	return a;
}

static void rls_big_put(struct http_worker *w, struct http_rls *a)
{
	if (a->big)
		http_big_put(w, a->big);
	a->big = NULL;
}

static void rls_put(struct http_worker *w, struct http_rls *a)
{
	rls_big_put(w, a);
	a->st = NULL;
	http_ctxpool_put(&pools.w[w->idx], a);
}

/* cluster.<the route's cluster>.ratelimit.<id>, as Envoy counts on
 * cluster_->statsScope(); looked up now (nothing is kept across the
 * call), nothing when the cluster is gone. */
static void rls_count(struct http_worker *w, const char *cl, uint32_t len, uint64_t hash,
		      unsigned id)
{
	if (!cl)
		return;
	struct http_cluster_rt *crt = http_rt_cluster(cl, len, hash);
	if (crt && crt->stats)
		arn_stats_inc(crt->stats, w->slot, id);
}

static char *rls_room(struct http_rls *a, size_t n)
{
	if (n > HTTP_RLS_BUF - a->used) {
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

/* Headers never taken from the service: its framing, hop-by-hop ones
 * and Host (Arion writes them). */
static bool rls_never(const char *n, size_t len)
{
	static const char *const never[] = {
	    "content-length", "transfer-encoding", "connection",
	    "keep-alive",     "proxy-connection",  "te",
	    "trailer",	      "upgrade",	   "host",
	};
	if (!len || n[0] == ':')
		return true;
	for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++)
		if (name_is(n, len, never[i]))
			return true;
	return false;
}

/* A header into @p e (@p *n of @p cap), its strings copied. */
static void rls_keep(struct http_rls *a, struct arn_h1_edit *e, uint8_t *n, unsigned cap,
		     const char *name, size_t nl, const char *v, size_t vl, uint8_t op)
{
	if (*n >= cap || nl > UINT16_MAX) {
		a->overflow = true;
		return;
	}
	char *p = rls_room(a, nl + vl);
	if (!p)
		return;
	memcpy(p, name, nl);
	if (vl)
		memcpy(p + nl, v, vl);
	e[(*n)++] = (struct arn_h1_edit){.name = p,
					 .name_len = (uint16_t)nl,
					 .value = p + nl,
					 .value_len = (uint32_t)vl,
					 .op = op};
}

/* ---- the answer -------------------------------------------------------------------------------
 */

static void rls_resume(struct http_rls *a)
{
	a->st->hc->ops->resume_head(a->st, &http_l4_filter_ops);
}

static bool rls_orphan(const struct http_rls *a)
{
	return !a->st || (a->st->state & HTTP_S_LOCAL) || rls_at(a->st) != a;
}

/* The call failed (@p why): status_on_error with failure_mode_deny, else
 * the request goes on without edits (Envoy's failure_mode_allowed). */
static void rls_error(struct http_rls *a, const char *why)
{
	struct http_stream *st = a->st;
	struct http_worker *w = st->hc->w;
	const struct arn_cfg_rls *f = a->cfg;
	ARN_DEBUG(HTTP, "ratelimit: call failed: %s", why);
	rls_count(w, a->cl, a->cl_len, a->cl_hash, ARN_CL_ratelimit_error);
	if (a->overflow)
		rls_count(w, a->cl, a->cl_len, a->cl_hash, ARN_CL_ratelimit_overflow);
	if (a->malformed)
		rls_count(w, a->cl, a->cl_len, a->cl_hash, ARN_CL_ratelimit_malformed);
	a->n_up = a->n_rsp = 0;
	if (!f->failure_mode_deny) {
		rls_count(w, a->cl, a->cl_len, a->cl_hash, ARN_CL_ratelimit_failure_mode_allowed);
		a->state = RLS_OVER;
		return;
	}
	a->state = RLS_OVER;
	http_local_reply(st, f->status_on_error, NULL, 0, ARN_RF_BIT(RATELIMIT_SERVICE_ERROR),
			 "rate_limiter_error", NULL, 0);
}

/* grpc-status among @p n headers @p h. */
static void rls_grpc_status(struct http_rls *a, const struct arn_h1_header *h, unsigned n)
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

static void rlsg_head(struct http_subreq *sr, const struct arn_h1_msg *m)
{
	struct http_rls *a = OWNER(sr, struct http_rls, sr);
	a->status = m->status;
	bool ct = false;
	for (unsigned i = 0; i < m->n_hdrs; i++) {
		const struct arn_h1_header *h = &m->hdrs[i];
		if (name_is(h->name, h->name_len, "content-type"))
			ct = h->value_len >= 16 &&
			     strncasecmp(h->value, "application/grpc", 16) == 0;
	}
	a->bad_ct = !ct;
	rls_grpc_status(a, m->hdrs, m->n_hdrs); /* a trailers-only answer */
}

static void rlsg_body(struct http_subreq *sr, const char *data, size_t len)
{
	struct http_rls *a = OWNER(sr, struct http_rls, sr);
	if (a->overflow || !a->big)
		return;
	if (len > HTTP_RLS_ANS - a->rlen) {
		a->overflow = true; /* larger than Arion reads */
		return;
	}
	memcpy(a->big + HTTP_RLS_REQ + a->rlen, data, len);
	a->rlen += (uint32_t)len;
}

static void rlsg_trailers(struct http_subreq *sr, const struct arn_h1_msg *m)
{
	struct http_rls *a = OWNER(sr, struct http_rls, sr);
	rls_grpc_status(a, m->trailers, m->n_trailers);
}

/* The answer's response edits into a->rsp: the service's
 * response_headers_to_add (each a line, Envoy's copyFrom), over the
 * limit x-envoy-ratelimited, then x-ratelimit-* (enable_x_ratelimit_headers). */
static void rls_resp_headers(struct http_rls *a, const struct http_rls_resp *r, bool over)
{
	const struct arn_cfg_rls *f = a->cfg;
	unsigned cap = HTTP_RLS_GRPC_HDRS + 4;
	for (unsigned i = 0; i < r->n_rsp && !a->overflow; i++) {
		if (rls_never(r->rsp[i].name, r->rsp[i].name_len))
			continue;
		/* over the limit, the service's content-type replaces the
		 * local reply's (Envoy's populateResponseHeaders) */
		bool ct = name_is(r->rsp[i].name, r->rsp[i].name_len, "content-type");
		rls_keep(a, a->rsp, &a->n_rsp, cap, r->rsp[i].name, r->rsp[i].name_len,
			 r->rsp[i].value, r->rsp[i].value_len,
			 ct && over ? ARN_H1_EDIT_SET : ARN_H1_EDIT_ADD);
	}
	if (over && !f->no_x_envoy_ratelimited)
		rls_keep(a, a->rsp, &a->n_rsp, cap, "x-envoy-ratelimited", 19, "true", 4,
			 ARN_H1_EDIT_SET);
	if (!f->x_ratelimit_headers || a->overflow)
		return;
	struct http_rls_xrl x;
	int k = http_rls_xrl(r, &x);
	if (k < 0) {
		a->overflow = true;
		return;
	}
	if (k == 0)
		return;
	rls_keep(a, a->rsp, &a->n_rsp, cap, "x-ratelimit-limit", 17, x.limit, x.limit_len,
		 ARN_H1_EDIT_ADD);
	rls_keep(a, a->rsp, &a->n_rsp, cap, "x-ratelimit-remaining", 21, x.remaining,
		 x.remaining_len, ARN_H1_EDIT_ADD);
	rls_keep(a, a->rsp, &a->n_rsp, cap, "x-ratelimit-reset", 17, x.reset, x.reset_len,
		 ARN_H1_EDIT_ADD);
}

static uint8_t append_op(uint8_t ap)
{
	return ap == ARN_CFG_ADD_IF_ABSENT		  ? ARN_H1_EDIT_ADD_IF_ABSENT
	       : ap == ARN_CFG_OVERWRITE_IF_EXISTS_OR_ADD ? ARN_H1_EDIT_SET
							  : ARN_H1_EDIT_ADD;
}

/* Over the limit: rate_limited_status with raw_body, the response edits
 * and the filter's response_headers_to_add (Envoy's
 * responseHeadersParser, after the service's), flag RL, details
 * request_rate_limited; a gRPC request's grpc-status RESOURCE_EXHAUSTED
 * with rate_limited_as_resource_exhausted. */
static void rls_over(struct http_rls *a, const struct http_rls_resp *r)
{
	struct http_stream *st = a->st;
	const struct arn_cfg_rls *f = a->cfg;
	struct arn_h1_edit e[MAX_EDITS];
	unsigned n = 0;
	for (unsigned i = 0; i < a->n_rsp; i++)
		e[n++] = a->rsp[i];
	struct http_subst sub;
	http_stream_subst(st, &sub);
	for (size_t i = 0; i < f->n_resp_add; i++) {
		const struct arn_cfg_header_add *h = &f->resp_add[i];
		const char *v = h->value;
		size_t vl = h->value_len;
		if (memchr(v, '%', vl)) {
			size_t room = HTTP_RLS_BUF - a->used;
			int k = http_subst(&sub, v, vl, a->buf + a->used, room);
			if (k < 0) {
				a->overflow = true;
				break;
			}
			v = a->buf + a->used;
			vl = (size_t)k;
			a->used += (uint32_t)k;
		}
		if (vl == 0 && !h->keep_empty_value)
			continue;
		e[n++] = (struct arn_h1_edit){.name = h->key,
					      .name_len = (uint16_t)h->key_len,
					      .value = v,
					      .value_len = (uint32_t)vl,
					      .op = append_op(h->append)};
	}
	char *body = r->body_len ? rls_room(a, r->body_len) : NULL;
	if (body)
		memcpy(body, r->body, r->body_len);
	if (a->overflow) {
		rls_error(a, "answer too large");
		return;
	}
	if (f->resource_exhausted && http_is_grpc(st))
		e[n++] = (struct arn_h1_edit){.name = "grpc-status",
					      .name_len = 11,
					      .value = "8",
					      .value_len = 1,
					      .op = ARN_H1_EDIT_SET};
	a->state = RLS_OVER;
	http_local_reply(st, f->rate_limited_status, body, body ? r->body_len : 0,
			 ARN_RF_BIT(RATE_LIMITED), "request_rate_limited", e, n);
}

/* The answer decided (@p a not orphaned). */
static void rlsg_decide(struct http_rls *a)
{
	struct http_stream *st = a->st;
	struct http_worker *w = st->hc->w;
	if (a->overflow) {
		rls_error(a, "answer too large");
		return;
	}
	if (a->status != 200 || a->bad_ct) {
		rls_error(a, a->status != 200 ? "HTTP status not 200" : "not a gRPC answer");
		return;
	}
	if (a->grpc_status != 0) {
		rls_error(a, a->grpc_status < 0 ? "no grpc-status" : "grpc-status not OK");
		return;
	}
	uint8_t *msg;
	long ml = http_authz_grpc_unframe((uint8_t *)a->big + HTTP_RLS_REQ, a->rlen, &msg);
	struct http_rls_resp r;
	int rc = ml < 0 ? (int)ml : http_rls_grpc_decode(msg, (size_t)ml, &r);
	if (rc != 0) {
		if (rc == -E2BIG)
			a->overflow = true; /* a bound: counted in overflow */
		else
			a->malformed = true;
		rls_error(a, rc == -E2BIG ? "RateLimitResponse past Arion's bounds"
					  : "malformed RateLimitResponse");
		return;
	}
	/* Envoy's GrpcClientImpl: OVER_LIMIT, else OK (UNKNOWN too) */
	bool over = r.code == HTTP_RLS_OVER_LIMIT;
	rls_resp_headers(a, &r, over);
	if (a->overflow) {
		rls_error(a, "answer too large");
		return;
	}
	if (over) {
		rls_count(w, a->cl, a->cl_len, a->cl_hash, ARN_CL_ratelimit_over_limit);
		rls_over(a, &r);
		return;
	}
	/* request_headers_to_add: each a line (Envoy's copyFrom) */
	for (unsigned i = 0; i < r.n_req && !a->overflow; i++)
		if (!rls_never(r.req[i].name, r.req[i].name_len))
			rls_keep(a, a->up, &a->n_up, HTTP_RLS_GRPC_HDRS, r.req[i].name,
				 r.req[i].name_len, r.req[i].value, r.req[i].value_len,
				 ARN_H1_EDIT_ADD);
	if (a->overflow) {
		rls_error(a, "answer too large");
		return;
	}
	rls_count(w, a->cl, a->cl_len, a->cl_hash, ARN_CL_ratelimit_ok);
	if (a->n_up && http_req_edits_keep(st, a->up, a->n_up) < 0) {
		/* never the request upstream without them (issue 12) */
		HTTP_INC(st->hc, rq_edit_overflow);
		a->state = RLS_OVER;
		http_local_reply(st, 500, NULL, 0, 0, "header_edits_overflow", NULL, 0);
		return;
	}
	a->state = RLS_ALLOWED;
}

static void rlsg_end(struct http_subreq *sr)
{
	struct http_rls *a = OWNER(sr, struct http_rls, sr);
	if (rls_orphan(a)) {
		a->state = RLS_OVER;
		return;
	}
	struct http_conn *hc = a->st->hc;
	rlsg_decide(a);
	rls_big_put(hc->w, a);
	if (!(a->st->state & HTTP_S_LOCAL))
		rls_resume(a);
	http_conn_run(hc);
}

static void rlsg_failed(struct http_subreq *sr, const char *why)
{
	struct http_rls *a = OWNER(sr, struct http_rls, sr);
	if (rls_orphan(a)) {
		if (a->st)
			rls_big_put(a->st->hc->w, a);
		a->state = RLS_OVER;
		return;
	}
	struct http_conn *hc = a->st->hc;
	rls_big_put(hc->w, a);
	rls_error(a, why);
	if (!(a->st->state & HTTP_S_LOCAL))
		rls_resume(a);
	http_conn_run(hc);
}

static const struct http_subreq_ops rlsg_ops = {
    .on_head = rlsg_head,
    .on_body = rlsg_body,
    .on_trailers = rlsg_trailers,
    .on_end = rlsg_end,
    .on_failed = rlsg_failed,
};

/* ---- the call
 * ------------------------------------------------------------------------------------ */

#define RLS_PATH "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"

/* The descriptors of @p rls (@p n) into @p q: all of them (@p any_stage:
 * a RateLimitPerRoute's), or those of the filter's stage. @return how
 * many, or -ENOSPC (a descriptor past HTTP_RLS_DESC bytes, or the request
 * past HTTP_RLS_REQ). */
static int rls_descs(struct http_rls *a, struct http_rls_req *q, const struct arn_rl_input *in,
		     const struct arn_cfg_rate_limit *rls, size_t n, bool any_stage)
{
	int count = 0;
	for (size_t i = 0; i < n; i++) {
		if (!any_stage && rls[i].stage != a->cfg->stage)
			continue;
		struct arn_rl_desc d;
		int r = arn_rl_descriptor(&rls[i], in, &d, a->big + HTTP_RLS_REQ, HTTP_RLS_DESC);
		if (r < 0)
			return r; /* one that cannot be sent: not left out (evading its limit) */
		if (r == 0)
			continue;
		http_rls_req_desc(q, &d);
		count++;
	}
	return q->err ? -ENOSPC : count;
}

/* The call failed to start, or could not be made: as a failed call. */
static bool rls_fail_now(struct http_rls *a, const char *why)
{
	struct http_stream *st = a->st;
	rls_big_put(st->hc->w, a);
	rls_error(a, why);
	return (st->state & HTTP_S_LOCAL) != 0;
}

bool http_rls_step(struct http_stream *st, size_t i, const struct arn_cfg_rls *f,
		   const struct arn_cfg_route_match *mt, const struct arn_cfg_request *req,
		   uint32_t client)
{
	struct http_conn *hc = st->hc;
	struct http_worker *w = hc->w;
	if (st->rls)
		return false; /* its call let it on: the walk goes on past it */
	/* request_type: Envoy's isEnvoyInternalRequest reads x-envoy-internal
	 * after its connection manager removed a client's and set its own:
	 * whether the manager counts the request internal (http_client_addr,
	 * as the router does), never the header the client sent */
	if (f->request_type != ARN_CFG_RLS_BOTH) {
		bool internal;
		http_client_addr(hc->hcm, &st->req.m, hc->raddr, &internal);
		if (internal != (f->request_type == ARN_CFG_RLS_INTERNAL))
			return false;
	}
	/* no route entry or no cluster: no call (Envoy's) */
	if (!mt || !mt->route || mt->route->action != ARN_CFG_ACTION_ROUTE)
		return false;
	const struct arn_cfg_route_action *ra = &mt->route->route;
	struct arn_cfg_ref cl;
	if (!http_route_cluster(ra, req, &cl) || !http_rt_cluster(cl.name, cl.len, cl.hash))
		return false;
	const struct arn_cfg_hcm *h = hc->hcm;
	const char *name = h->http_filter_names ? h->http_filter_names[i] : NULL;
	const struct arn_cfg_rls_route *pr =
	    name ? arn_cfg_per_filter_find(mt->vhost, mt->route, name, strlen(name),
					   ARN_CFG_PF_RATELIMIT)
		 : NULL;
	struct http_rls *a = rls_get(w);
	if (!a) {
		/* no context: as a failed call (counted, status_on_error
		 * with failure_mode_deny) */
		rls_count(w, cl.name, (uint32_t)cl.len, cl.hash, ARN_CL_ratelimit_error);
		rls_count(w, cl.name, (uint32_t)cl.len, cl.hash, ARN_CL_ratelimit_overflow);
		if (!f->failure_mode_deny) {
			rls_count(w, cl.name, (uint32_t)cl.len, cl.hash,
				  ARN_CL_ratelimit_failure_mode_allowed);
			return false;
		}
		http_local_reply(st, f->status_on_error, NULL, 0,
				 ARN_RF_BIT(RATELIMIT_SERVICE_ERROR), "rate_limiter_error", NULL,
				 0);
		return true;
	}
	a->st = st;
	a->cfg = f;
	a->idx = (uint8_t)i;
	a->cl = cl.name;
	a->cl_len = (uint32_t)cl.len;
	a->cl_hash = cl.hash;
	st->rls = (uint16_t)http_ctxpool_id(&pools.w[w->idx], a);
	a->big = http_big_get(w);
	if (!a->big) {
		a->overflow = true;
		return rls_fail_now(a, "no buffer");
	}
	/* the destination_cluster action's value (the route's cluster) */
	struct arn_rl_input in = {
	    .remote_addr = client,
	    .route_cluster = {.s = cl.name, .len = cl.len},
	    .header = arn_rbac_request_header,
	    .header_ctx = (void *)(uintptr_t)req,
	    .scratch = a->big + HTTP_RLS_REQ + HTTP_RLS_DESC,
	    .scratch_len = HTTP_BIG_SCRATCH - HTTP_RLS_REQ - HTTP_RLS_DESC,
	};
	const char *dom = pr && pr->domain ? pr->domain : f->domain;
	size_t dl = pr && pr->domain ? pr->domain_len : f->domain_len;
	struct http_rls_req q;
	http_rls_req_start(&q, (uint8_t *)a->big, HTTP_RLS_REQ, dom, dl);
	int nd;
	if (pr && pr->n_rate_limits) {
		/* the per-route rate_limits alone (Envoy's route_config_) */
		nd = rls_descs(a, &q, &in, pr->rate_limits, pr->n_rate_limits, true);
	} else {
		nd = rls_descs(a, &q, &in, ra->rate_limits, ra->n_rate_limits, false);
		uint8_t vh = ra->include_vh_rate_limits ? ARN_CFG_VH_RL_INCLUDE
			     : pr			? pr->vh_rate_limits
							: ARN_CFG_VH_RL_OVERRIDE;
		if (nd >= 0 && (vh == ARN_CFG_VH_RL_INCLUDE ||
				(vh == ARN_CFG_VH_RL_OVERRIDE && ra->n_rate_limits == 0))) {
			int k = rls_descs(a, &q, &in, mt->vhost->rate_limits,
					  mt->vhost->n_rate_limits, false);
			nd = k < 0 ? k : nd + k;
		}
	}
	if (nd < 0) {
		a->overflow = true;
		return rls_fail_now(a, "descriptors past Arion's bounds");
	}
	if (nd == 0) {
		/* no descriptor: no call, and nothing left (Envoy's) */
		st->rls = 0;
		rls_put(w, a);
		return false;
	}
	long ql = http_rls_req_end(&q);
	if (ql < 0) {
		a->overflow = true;
		return rls_fail_now(a, "request past Arion's bounds");
	}
	unsigned n = 0;
	a->h[n++] = (struct http_subreq_header){"content-type", "application/grpc", 12, 16};
	a->h[n++] = (struct http_subreq_header){"te", "trailers", 2, 8};
	if (f->timeout_ms) {
		char *t = rls_room(a, 16);
		int tl = snprintf(t, 16, "%um", f->timeout_ms);
		a->h[n++] = (struct http_subreq_header){"grpc-timeout", t, 12, (size_t)tl};
	}
	for (size_t k = 0; k < f->n_md && n < HTTP_SUBREQ_MAX_HDRS; k++)
		a->h[n++] = (struct http_subreq_header){f->md[k].name, f->md[k].value,
							f->md[k].name_len, f->md[k].value_len};
	a->sr.method_name = (struct arn_h1_slice){0};
	a->sr.method = 0;
	a->sr.host = f->authority ? f->authority : f->cluster.name;
	a->sr.host_len = f->authority ? f->authority_len : f->cluster.len;
	a->sr.get = a->sr.del = false;
	a->sr.msg = NULL;
	const struct arn_cfg_gen *g = w->gen_slot ? arn_config_gen_at(w->gen_slot) : NULL;
	int rc = http_subreq_start(&a->sr, hc, g, &f->cluster, RLS_PATH, sizeof(RLS_PATH) - 1, a->h,
				   n, a->big, (size_t)ql, f->timeout_ms, &rlsg_ops, a);
	if (rc != 0)
		return rls_fail_now(a, rc == -EBUSY	     ? "overflow"
				       : rc == -EHOSTUNREACH ? "no healthy upstream"
				       : rc == -ENOENT	     ? "no cluster"
							     : "could not start");
	return true; /* the answer resumes it (rlsg_end, rlsg_failed) */
}

size_t http_rls_resume_at(const struct http_stream *st)
{
	const struct http_rls *a = rls_at(st);
	return a ? (size_t)a->idx + 1 : 0;
}

int http_rls_resp_edits(struct http_stream *st, struct arn_h1_edit *e, unsigned cap)
{
	struct http_rls *a = rls_at(st);
	if (!a || a->state != RLS_ALLOWED)
		return 0;
	if (a->n_rsp > cap)
		return -ENOSPC;
	memcpy(e, a->rsp, a->n_rsp * sizeof(*e));
	return a->n_rsp;
}

void http_rls_stream_end(struct http_stream *st)
{
	struct http_rls *a = rls_at(st);
	if (!a)
		return;
	http_subreq_cancel(&a->sr); /* (nothing when it is over) */
	st->rls = 0;
	rls_put(st->hc->w, a);
}
