/*
 * The HTTP filters before the router that lib/l4's engines decide for:
 * envoy.filters.http.rbac and envoy.filters.http.local_ratelimit, with
 * envoy.filters.http.cors and envoy.filters.http.jwt_authn (tokens
 * verified by lib/common/arn_jwt.c), run with the health check filter in
 * the order of the connection manager's http_filters, once the request's
 * head is in (Envoy's decodeHeaders).
 *
 * Each filter may answer the request itself (403 / 429 / 401); the router then
 * never sees it. A route's typed_per_filter_config replaces the filter's
 * configuration, so the route is matched here first when a filter needs
 * it (the router matches it again: a second match only on connection
 * managers that have these filters).
 *
 * Statistics: the scopes are taken by the control lcore with the
 * connection manager's runtime object (http_l4_hrt_init, in
 * http_l4_rt.c), per filter index, and counted into by workers (their
 * own slot).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "arn_config.h"
#include "arn_connlimit.h"
#include "arn_http_ratelimit.h"
#include "arn_jwt.h"
#include "http_jwks.h"
#include "arn_rbac.h"
#include "arn_tbucket.h"
#include "arn_tls.h"
#include "http_apikey.h"
#include "http_authz.h"
#include "http_rls.h"
#include "http_basic_auth.h"
#include "http_csrf.h"
#include "http_hm.h"
#include "http_buffer.h"
#include "http_ext_proc.h"
#include "http_lua.h"
#include "http_oauth2.h"
#include "http_fault.h"
#include "http_filter.h"
#include "http_int.h"
#include "http_l4.h"
#include "http_req_kept.h"
#include "http_local.h"
#include "http_session.h"
#include "http_stream.h"
#include "http_worker.h"

/* ---- workers ------------------------------------------------------------------------------ */

static inline void wstat_inc(struct http_worker *w, struct arn_stats_scope *sc, unsigned id)
{
	if (sc)
		arn_stats_inc(sc, w->slot, id);
}

static inline void fstat_inc(struct http_conn *hc, struct arn_stats_scope *sc, unsigned id)
{
	if (sc)
		arn_stats_inc(sc, hc->w->slot, id);
}

static void rbac_count(struct http_worker *w, struct arn_stats_scope *sc,
		       struct arn_stats_scope *sh, const struct arn_rbac_result *res);

void http_rbac_peer(struct arn_rbac_input *in, const struct arn_tls_conn *tls,
		    struct http_rbac_peer *p)
{
	in->tls = tls != NULL;
	if (!tls || !arn_tls_peer_cert(tls))
		return;
	/* URI SANs first, DNS SANs after them in the same room */
	size_t used = 0, n = 0;
	for (int uri = 1; uri >= 0; uri--) {
		int k = arn_tls_peer_san_list(tls, uri, p->buf + used, sizeof(p->buf) - used,
					      p->off + n, p->len + n, HTTP_RBAC_PEER_NAMES - n);
		if (k < 0) {
			in->peer_names_truncated = true;
			k = 0;
		}
		for (int i = 0; i < k; i++) {
			p->names[n + i] =
			    (struct arn_rbac_str){p->buf + used + p->off[n + i], p->len[n + i]};
		}
		if (uri) {
			in->uri_sans = p->names;
			in->n_uri_sans = (size_t)k;
		} else {
			in->dns_sans = p->names + n;
			in->n_dns_sans = (size_t)k;
		}
		if (k)
			used += p->off[n + k - 1] + p->len[n + k - 1];
		n += (size_t)k;
	}
	int k = arn_tls_peer_subject(tls, p->subject, sizeof(p->subject));
	if (k >= 0)
		in->subject = (struct arn_rbac_str){p->subject, (size_t)k};
	else if (k == -ENOSPC)
		in->peer_names_truncated = true;
}

/* envoy.filters.http.rbac on @p st's request @p req: the route's
 * RBACPerRoute, else the filter's rules. @return true when it denied
 * (the request is answered with 403). */
static bool rbac_step(struct http_stream *st, size_t i, const struct arn_cfg_rbac_filter *f,
		      const struct arn_cfg_route_match *mt, const struct arn_cfg_request *req,
		      uint32_t client)
{
	struct http_conn *hc = st->hc;
	struct http_worker *w = hc->w;
	const struct arn_cfg_hcm *h = hc->hcm;
	const char *name = h->http_filter_names ? h->http_filter_names[i] : NULL;
	const struct arn_cfg_rbac_filter *pr =
	    mt && name
		? arn_cfg_per_filter_find(mt->vhost, mt->route, name, strlen(name), ARN_CFG_PF_RBAC)
		: NULL;
	/* joined header values as long as a request head may be: a 64 KB
	 * scratch when one is free, else arn_rbac's 4 KB on the stack (a
	 * longer joined value then denies, never slips past a rule) */
	char *big = http_big_get(w);
	struct arn_rbac_input in = {
	    .src_addr = hc->raddr,
	    .direct_addr = hc->draddr,
	    .remote_addr = client,
	    .dst_addr = hc->laddr,
	    .dst_port = hc->lport,
	    .path = req->path,
	    .path_len = req->path_len,
	    .header = arn_rbac_request_header,
	    .header_ctx = (void *)(uintptr_t)req,
	    .scratch = big,
	    .scratch_len = big ? HTTP_BIG_SCRATCH : 0,
	};
	struct http_rbac_peer peer;
	http_rbac_peer(&in, hc->tls, &peer);
	struct arn_rbac_result res;
	bool ok = arn_rbac_filter_eval(f, pr, &in, &res);
	http_big_put(w, big);
	const struct arn_cfg_rbac_rules *rules = pr ? pr->rules : f->rules;
	if (res.ran && rules && rules->action == ARN_CFG_RBAC_LOG)
		st->access_log_hint =
		    res.enforced.log ? ARN_ACCESS_HINT_TRUE : ARN_ACCESS_HINT_FALSE;

	struct http_hcm_rt *r = hc->hrt;
	bool idx = r && i < HTTP_MAX_FILTER_STATS;
	rbac_count(w, idx ? r->fstats[i] : NULL, idx ? r->fshadow[i] : NULL, &res);
	if (ok)
		return false;
	/* Envoy's details name the policy that decided, kept in the
	 * stream's text for the access log */
	char *d = st->res->text + st->text_len;
	size_t room = HTTP_TEXT - st->text_len;
	size_t k = arn_rbac_details(&res.enforced, d, room);
	const char *details = "rbac_access_denied";
	if (k < room) {
		st->text_len += (uint32_t)k + 1;
		details = d;
	}
	static const char body[] = "RBAC: access denied";
	http_local_reply(st, 403, body, sizeof(body) - 1, 0, details, NULL, 0);
	return true;
}

static uint8_t append_op(uint8_t a)
{
	return a == ARN_CFG_ADD_IF_ABSENT		 ? ARN_H1_EDIT_ADD_IF_ABSENT
	       : a == ARN_CFG_OVERWRITE_IF_EXISTS_OR_ADD ? ARN_H1_EDIT_SET
							 : ARN_H1_EDIT_ADD;
}

/* A number into the stream's text. @return it, or NULL. */
static const char *text_u64(struct http_stream *st, uint32_t *len, unsigned long long v)
{
	char *t = st->res->text + st->text_len;
	int k = snprintf(t, HTTP_TEXT - st->text_len, "%llu", v);
	if (k < 0 || (uint32_t)k >= HTTP_TEXT - st->text_len)
		return NULL;
	st->text_len += (uint32_t)k + 1;
	*len = (uint32_t)k;
	return t;
}

/* Keep the bucket that decided for x-ratelimit-* (draft 03). */
static void rl_x_note(struct http_stream *st, const struct arn_hlrl_decision *d)
{
	uint64_t hz = st->hc->w->hz ? st->hc->w->hz : 1;
	st->rl_x = true;
	st->rl_limit = d->limit;
	st->rl_remaining = d->remaining;
	st->rl_reset_s = (uint32_t)RTE_MIN((d->reset_ticks + hz - 1) / hz, (uint64_t)UINT32_MAX);
}

static int rl_edits(struct http_stream *st, struct arn_h1_edit *e, unsigned cap);

/* The CORS filter's response headers (Envoy's encodeHeaders): for a
 * request whose Origin it allowed, on the upstream's response and on
 * local replies alike. @return how many edits, or -ENOSPC. */
static int cors_resp_edits(struct http_stream *st, struct arn_h1_edit *e, unsigned cap)
{
	unsigned n = 0;
	if (cap < 3)
		return -ENOSPC;
	const struct arn_h1_header *o = &st->req.m.hdrs[st->cors_origin - 1];
	e[n++] = (struct arn_h1_edit){.name = "access-control-allow-origin",
				      .name_len = 27,
				      .value = o->value,
				      .value_len = o->value_len,
				      .op = ARN_H1_EDIT_SET};
	if (st->cors_credentials)
		e[n++] = (struct arn_h1_edit){.name = "access-control-allow-credentials",
					      .name_len = 32,
					      .value = "true",
					      .value_len = 4,
					      .op = ARN_H1_EDIT_SET};
	if (st->cors_expose)
		e[n++] = (struct arn_h1_edit){.name = "access-control-expose-headers",
					      .name_len = 29,
					      .value = st->cors_expose,
					      .value_len = st->cors_expose_len,
					      .op = ARN_H1_EDIT_SET};
	return (int)n;
}

static int resp_edits(struct http_stream *st, struct arn_h1_edit *e, unsigned cap)
{
	if (st->cors_origin) {
		int k = cors_resp_edits(st, e, cap);
		if (k < 0 || !st->rl_x || !st->res)
			return k;
		int j = rl_edits(st, e + k, cap - (unsigned)k);
		return j < 0 ? j : k + j;
	}
	return rl_edits(st, e, cap);
}

static int session_edits(struct http_stream *st, struct arn_h1_edit *e, unsigned cap);

int http_l4_resp_edits(struct http_stream *st, struct arn_h1_edit *e, unsigned cap)
{
	if (st->ext_proc) {
		/* ext_proc holds the head first (its processor's answer, or
		 * the response's body read whole), before edits take text */
		int h = http_ext_proc_resp_hold(st);
		if (h < 0)
			return h;
	}
	/* envoy_on_response's scripts run next: one that waits for the
	 * body holds the head before the other edits take text; their
	 * edits go last (below) */
	struct arn_h1_edit le[HTTP_LUA_RESP_EDITS];
	int lk = 0;
	if (arn_cfg_hcm_has_filter(st->hc->hcm, ARN_CFG_HF_LUA)) {
		lk = http_lua_resp_edits(st, le, HTTP_LUA_RESP_EDITS);
		if (lk < 0)
			return lk;
	}
	int k = resp_edits(st, e, cap);
	/* a stateful session's Set-Cookie or header */
	if (k >= 0 && st->res && st->ss_from) {
		int j = session_edits(st, e + k, cap - (unsigned)k);
		k = j < 0 ? j : k + j;
	}
	if (k >= 0 && st->rls) {
		/* an OK rate limit call's response_headers_to_add, x-ratelimit-* */
		int j = http_rls_resp_edits(st, e + k, cap - (unsigned)k);
		k = j < 0 ? j : k + j;
	}
	if (k >= 0 && st->authz) {
		/* an allowed ext_authz check's allowed_client_headers_on_success */
		int j = http_authz_resp_edits(st, e + k, cap - (unsigned)k);
		k = j < 0 ? j : k + j;
	}
	if (k >= 0 && arn_cfg_hcm_has_filter(st->hc->hcm, ARN_CFG_HF_HEADER_MUTATION)) {
		/* header_mutation's response_mutations, after the other
		 * filters' headers (Envoy: a filter earlier in the chain
		 * encodes later; Arion's edits add, in order) */
		int j = http_hm_resp_edits(st, e + k, cap - (unsigned)k);
		k = j < 0 ? j : k + j;
	}
	if (k >= 0 && st->ext_proc) {
		/* ext_proc's answers' mutations, last (Envoy's processor
		 * has the last word) */
		int j = http_ext_proc_resp_edits(st, e + k, cap - (unsigned)k);
		k = j < 0 ? j : k + j;
	}
	if (k >= 0 && lk) {
		/* envoy_on_response's header changes */
		if ((unsigned)lk > cap - (unsigned)k)
			return -ENOSPC;
		memcpy(e + k, le, (size_t)lk * sizeof(le[0]));
		k += lk;
	}
	return k;
}

/* draft 03's x-ratelimit-* of the bucket rl_x_note kept. @return how
 * many edits (0: none kept), or -ENOSPC. */
static int rl_edits(struct http_stream *st, struct arn_h1_edit *e, unsigned cap)
{
	static const char *const names[3] = {"x-ratelimit-limit", "x-ratelimit-remaining",
					     "x-ratelimit-reset"};
	if (!st->rl_x || !st->res)
		return 0;
	if (cap < 3)
		return -ENOSPC;
	unsigned long long vals[3] = {st->rl_limit, st->rl_remaining, st->rl_reset_s};
	for (unsigned j = 0; j < 3; j++) {
		uint32_t vl;
		const char *v = text_u64(st, &vl, vals[j]);
		if (!v)
			return -ENOSPC;
		e[j] = (struct arn_h1_edit){.name = names[j],
					    .name_len = (uint16_t)strlen(names[j]),
					    .value = v,
					    .value_len = vl,
					    .op = ARN_H1_EDIT_SET};
	}
	return 3;
}

/*
 * The headers of a limited request's reply: x-envoy-ratelimited, the
 * configuration's response_headers_to_add (Envoy adds them to the
 * responses of limited requests) and, with enable_x_ratelimit_headers,
 * draft 03's x-ratelimit-limit / -remaining / -reset of the bucket that
 * decided. @return how many edits went into @p e, or -ENOSPC.
 */
static int rl_reply_edits(struct http_stream *st, const struct arn_hlrl_decision *d,
			  struct arn_h1_edit *e, unsigned cap)
{
	unsigned n = 0;
	e[n++] = (struct arn_h1_edit){"x-envoy-ratelimited", "true", 4, 19, ARN_H1_EDIT_SET};
	const struct arn_cfg_header_ops *o = &d->config->headers;
	struct http_subst sub;
	http_stream_subst(st, &sub);
	for (size_t i = 0; i < o->n_resp_add; i++) {
		const struct arn_cfg_header_add *a = &o->resp_add[i];
		const char *v = a->value;
		size_t vl = a->value_len;
		if (memchr(v, '%', vl)) {
			char *t = st->res->text + st->text_len;
			int k = http_subst(&sub, v, vl, t, HTTP_TEXT - st->text_len);
			if (k < 0)
				return -ENOSPC;
			st->text_len += (uint32_t)k;
			v = t;
			vl = (size_t)k;
		}
		if (vl == 0 && !a->keep_empty_value)
			continue;
		if (n >= cap)
			return -ENOSPC;
		e[n++] = (struct arn_h1_edit){.name = a->key,
					      .name_len = (uint16_t)a->key_len,
					      .value = v,
					      .value_len = (uint32_t)vl,
					      .op = append_op(a->append)};
	}
	if (d->config->x_ratelimit_headers && d->has_bucket) {
		rl_x_note(st, d);
		int k = rl_edits(st, e + n, cap - n);
		st->rl_x = false; /* they are among this reply's edits */
		if (k < 0)
			return k;
		n += (unsigned)k;
	}
	return (int)n;
}

/* The jwt_authn filter's request edits while it runs (at most
 * JWT_MAX_EDITS); once kept, the filters' request edits in the stream's
 * text (st->jwt_edits): a struct l4_edits of n edits */
#define JWT_MAX_EDITS 32
struct jwt_edits {
	unsigned n;
	struct arn_h1_edit e[JWT_MAX_EDITS];
};
int http_l4_req_edits(struct http_stream *st, struct arn_h1_edit *e, unsigned cap)
{
	unsigned n = 0;
	const struct http_req_edits *je = http_req_edits_kept(st);
	if (je) {
		if (je->n > cap)
			return -ENOSPC;
		memcpy(e, je->e, je->n * sizeof(*e));
		n = je->n;
	}
	const struct arn_cfg_http_ratelimit *f = st->rl_unenforced;
	if (!f)
		return (int)n;
	struct http_subst sub;
	http_stream_subst(st, &sub);
	for (size_t i = 0; i < f->headers.n_req_add; i++) {
		const struct arn_cfg_header_add *a = &f->headers.req_add[i];
		const char *v = a->value;
		size_t vl = a->value_len;
		if (memchr(v, '%', vl)) {
			char *t = st->res->text + st->text_len;
			int k = http_subst(&sub, v, vl, t, HTTP_TEXT - st->text_len);
			if (k < 0)
				return -ENOSPC;
			st->text_len += (uint32_t)k;
			v = t;
			vl = (size_t)k;
		}
		if (vl == 0 && !a->keep_empty_value)
			continue;
		if (n >= cap)
			return -ENOSPC;
		e[n++] = (struct arn_h1_edit){.name = a->key,
					      .name_len = (uint16_t)a->key_len,
					      .value = v,
					      .value_len = (uint32_t)vl,
					      .op = append_op(a->append)};
	}
	int k = http_authz_req_edits(st, e + n, cap - n);
	return k < 0 ? k : (int)n + k;
}

/* Does one of the policies' origin matchers (the first policy, route
 * then virtual host, that has any) allow @p origin? As Envoy's, a matcher
 * that matches "*" allows every origin. */
static bool cors_origin_allowed(const struct arn_cfg_cors *const *p, size_t np, const char *origin,
				size_t len)
{
	for (size_t k = 0; k < np; k++) {
		if (!p[k]->n_origins)
			continue;
		for (size_t j = 0; j < p[k]->n_origins; j++)
			if (arn_cfg_str_match(&p[k]->origins[j], "*", 1) ||
			    arn_cfg_str_match(&p[k]->origins[j], origin, len))
				return true;
		return false;
	}
	return false;
}

/* The first policy's value of a string field that is set, as Envoy's
 * filter reads each field: route first, then virtual host. */
#define CORS_FIELD(p, np, f, lenp)                                                                 \
	({                                                                                         \
		const char *v_ = NULL;                                                             \
		for (size_t k_ = 0; k_ < (np) && !v_; k_++)                                        \
			if ((p)[k_]->f) {                                                          \
				v_ = (p)[k_]->f;                                                   \
				*(lenp) = (p)[k_]->f##_len;                                        \
			}                                                                          \
		v_;                                                                                \
	})

/* The first policy's value of a tri-state field that is set, else @p dflt. */
static bool cors_flag(const struct arn_cfg_cors *const *p, size_t np, size_t off, bool dflt)
{
	for (size_t k = 0; k < np; k++) {
		int8_t v = *(const int8_t *)((const char *)p[k] + off);
		if (v >= 0)
			return v;
	}
	return dflt;
}

/* A request header's value, or NULL when absent or empty; its index in
 * @p idx (may be NULL). */
static const char *req_hdr(const struct http_stream *st, const char *name, size_t n, size_t *len,
			   int *idx)
{
	int i = arn_h1_find(&st->req.m, name, n, 0);
	if (i < 0 || st->req.m.hdrs[i].value_len == 0)
		return NULL;
	*len = st->req.m.hdrs[i].value_len;
	if (idx)
		*idx = i;
	return st->req.m.hdrs[i].value;
}

/*
 * envoy.filters.http.cors (Envoy's CorsFilter::decodeHeaders): a request
 * with an Origin on a route that forwards (a redirect or direct response
 * bypasses it, as in Envoy) and has a policy is counted (origin_valid /
 * origin_invalid); unless only in shadow mode, an allowed Origin is
 * latched for the response's headers, and a preflight (OPTIONS with
 * Access-Control-Request-Method) is answered here, 200 with the policy's
 * headers, unless its origin is not allowed and
 * forward_not_matching_preflights (true by default) sends it upstream.
 * @return true when it answered.
 */
static bool cors_step(struct http_stream *st, size_t i, const struct arn_cfg_route_match *mt)
{
	struct http_conn *hc = st->hc;
	const struct arn_cfg_hcm *h = hc->hcm;
	const char *name = h->http_filter_names ? h->http_filter_names[i] : NULL;
	if (!mt || !name || mt->route->action != ARN_CFG_ACTION_ROUTE)
		return false;
	const struct arn_cfg_cors *p[3];
	size_t np = arn_cfg_cors_policies(mt->vhost, mt->route, name, strlen(name), p);
	if (!np)
		return false;
	struct http_worker *w = hc->w;
	bool enabled = arn_fraction_hit(&p[0]->enabled, http_rand(w));
	bool shadow = arn_fraction_hit(&p[0]->shadow, http_rand(w));
	if (!enabled && !shadow)
		return false;
	size_t olen = 0;
	int oi = 0;
	const char *origin = req_hdr(st, "origin", 6, &olen, &oi);
	if (!origin)
		return false;
	bool allowed = cors_origin_allowed(p, np, origin, olen);
	struct http_hcm_rt *r = hc->hrt;
	struct arn_stats_scope *sc = r && i < HTTP_MAX_FILTER_STATS ? r->fstats[i] : NULL;
	if (sc)
		arn_stats_inc(sc, w->slot,
			      allowed ? ARN_CORS_origin_valid : ARN_CORS_origin_invalid);
	if (!enabled)
		return false; /* shadow mode: counted only */
	bool credentials =
	    cors_flag(p, np, offsetof(struct arn_cfg_cors, allow_credentials), false);
	if (allowed) {
		/* the request's head stays with the stream until its end */
		st->cors_origin = (uint16_t)(oi + 1);
		st->cors_credentials = credentials;
		st->cors_expose = CORS_FIELD(p, np, expose_headers, &st->cors_expose_len);
	}
	size_t mlen = 0;
	const char *rq_method = req_hdr(st, "access-control-request-method", 29, &mlen, NULL);
	if (st->method != ARN_H1_M_OPTIONS || !rq_method)
		return false;
	if (!allowed && cors_flag(p, np, offsetof(struct arn_cfg_cors, forward_not_matching), true))
		return false;
	/* the preflight's answer; allow-origin and, with it, the
	 * credentials come from cors_resp_edits (the latch), as Envoy's
	 * encodeHeaders sets them on the filter's own reply too */
	struct arn_h1_edit e[5];
	unsigned n = 0;
	if (credentials && !allowed)
		e[n++] = (struct arn_h1_edit){"access-control-allow-credentials", "true", 4, 32,
					      ARN_H1_EDIT_SET};
	uint32_t vl = 0;
	const char *v = CORS_FIELD(p, np, allow_methods, &vl);
	if (v) {
		if (vl == 1 && *v == '*') {
			v = rq_method;
			vl = (uint32_t)mlen;
		}
		e[n++] = (struct arn_h1_edit){"access-control-allow-methods", v, vl, 28,
					      ARN_H1_EDIT_SET};
	}
	v = CORS_FIELD(p, np, allow_headers, &vl);
	if (v) {
		size_t hl = 0;
		const char *rq_headers = NULL;
		if (vl == 1 && *v == '*') {
			rq_headers = req_hdr(st, "access-control-request-headers", 30, &hl, NULL);
			v = rq_headers;
			vl = (uint32_t)hl;
		}
		if (v)
			e[n++] = (struct arn_h1_edit){"access-control-allow-headers", v, vl, 28,
						      ARN_H1_EDIT_SET};
	}
	v = CORS_FIELD(p, np, max_age, &vl);
	if (v)
		e[n++] = (struct arn_h1_edit){"access-control-max-age", v, vl, 22, ARN_H1_EDIT_SET};
	size_t pl = 0;
	const char *pna = req_hdr(st, "access-control-request-private-network", 38, &pl, NULL);
	if (pna && pl == 4 && memcmp(pna, "true", 4) == 0 &&
	    cors_flag(p, np, offsetof(struct arn_cfg_cors, allow_private_network), false))
		e[n++] = (struct arn_h1_edit){"access-control-allow-private-network", "true", 4, 36,
					      ARN_H1_EDIT_SET};
	http_local_reply(st, 200, NULL, 0, 0, "cors_response", e, n);
	return true;
}

/* ---- envoy.filters.http.jwt_authn ------------------------------------------------------------ */

/* Per request (docs/security.md): tokens looked at, keys tried against
 * them, and request edits made; past either of the first two the request
 * is refused ("Jwt verification fails", counted in verify_limited). */
#define JWT_MAX_TOKENS 8
#define JWT_MAX_KEY_TRIALS 16
/* the realm's path (Envoy's MaximumUriLength) and host */
#define JWT_MAX_URI_PATH 256
#define JWT_MAX_URI_HOST 1024

static const char *const jwt_details[ARN_JWT__COUNT] = {
    [ARN_JWT_MISSED] = "jwt_authn_access_denied{Jwt_is_missing}",
    [ARN_JWT_NOT_YET_VALID] = "jwt_authn_access_denied{Jwt_not_yet_valid}",
    [ARN_JWT_EXPIRED] = "jwt_authn_access_denied{Jwt_is_expired}",
    [ARN_JWT_BAD_FORMAT] = "jwt_authn_access_denied{Jwt_is_not_in_the_form_of_Header.Payload."
			   "Signature_with_two_dots_and_3_sections}",
    [ARN_JWT_HEADER_BAD_BASE64] =
	"jwt_authn_access_denied{Jwt_header_is_an_invalid_Base64url_encoded}",
    [ARN_JWT_HEADER_BAD_JSON] = "jwt_authn_access_denied{Jwt_header_is_an_invalid_JSON}",
    [ARN_JWT_HEADER_BAD_ALG] =
	"jwt_authn_access_denied{Jwt_header_[alg]_field_is_required_and_must_be_a_string}",
    [ARN_JWT_HEADER_NOT_IMPLEMENTED_ALG] =
	"jwt_authn_access_denied{Jwt_header_[alg]_is_not_supported}",
    [ARN_JWT_HEADER_BAD_KID] = "jwt_authn_access_denied{Jwt_header_[kid]_field_is_not_a_string}",
    [ARN_JWT_PAYLOAD_BAD_BASE64] =
	"jwt_authn_access_denied{Jwt_payload_is_an_invalid_Base64url_encoded}",
    [ARN_JWT_ED25519_SIG_WRONG_LENGTH] =
	"jwt_authn_access_denied{Jwt_ED25519_signature_is_wrong_length}",
    [ARN_JWT_PAYLOAD_BAD_JSON] = "jwt_authn_access_denied{Jwt_payload_is_an_invalid_JSON}",
    [ARN_JWT_ISS_NOT_STRING] = "jwt_authn_access_denied{Jwt_payload_[iss]_field_is_not_a_string}",
    [ARN_JWT_SUB_NOT_STRING] = "jwt_authn_access_denied{Jwt_payload_[sub]_field_is_not_a_string}",
    [ARN_JWT_IAT_NOT_INTEGER] =
	"jwt_authn_access_denied{Jwt_payload_[iat]_field_is_not_an_integer}",
    [ARN_JWT_IAT_OUT_OF_RANGE] =
	"jwt_authn_access_denied{Jwt_payload_[iat]_field_is_not_a_positive_64_bit_integer}",
    [ARN_JWT_NBF_NOT_INTEGER] =
	"jwt_authn_access_denied{Jwt_payload_[nbf]_field_is_not_an_integer}",
    [ARN_JWT_NBF_OUT_OF_RANGE] =
	"jwt_authn_access_denied{Jwt_payload_[nbf]_field_is_not_a_positive_64_bit_integer}",
    [ARN_JWT_EXP_NOT_INTEGER] =
	"jwt_authn_access_denied{Jwt_payload_[exp]_field_is_not_an_integer}",
    [ARN_JWT_EXP_OUT_OF_RANGE] =
	"jwt_authn_access_denied{Jwt_payload_[exp]_field_is_not_a_positive_64_bit_integer}",
    [ARN_JWT_JTI_NOT_STRING] = "jwt_authn_access_denied{Jwt_payload_[jti]_field_is_not_a_string}",
    [ARN_JWT_AUD_NOT_STRING] =
	"jwt_authn_access_denied{Jwt_payload_[aud]_field_is_not_a_string_or_string_list}",
    [ARN_JWT_SIG_BAD_BASE64] =
	"jwt_authn_access_denied{Jwt_signature_is_an_invalid_Base64url_encoded}",
    [ARN_JWT_UNKNOWN_ISSUER] = "jwt_authn_access_denied{Jwt_issuer_is_not_configured}",
    [ARN_JWT_AUDIENCE_NOT_ALLOWED] = "jwt_authn_access_denied{Audiences_in_Jwt_are_not_allowed}",
    [ARN_JWT_VERIFICATION_FAIL] = "jwt_authn_access_denied{Jwt_verification_fails}",
    [ARN_JWT_MULTIPLE_TOKENS] = "jwt_authn_access_denied{Found_multiple_Jwt_tokens}",
    [ARN_JWKS_KID_ALG_MISMATCH] =
	"jwt_authn_access_denied{Jwks_doesn't_have_key_to_match_kid_or_alg_from_Jwt}",
    [ARN_JWKS_NO_VALID_KEYS] = "jwt_authn_access_denied{Jwks_doesn't_have_any_valid_public_key}",
    [ARN_JWKS_FETCH_FAIL] = "jwt_authn_access_denied{Jwks_remote_fetch_is_failed}",
};

/* A token found: where (a view into the request head, which stays with
 * the stream) and, for a header, that header's name (for its removal) */
struct jwt_loc {
	const char *p;
	size_t n;
	const char *hdr;
	size_t hdr_len;
	uint32_t providers; /* allow_missing*: providers naming the location */
};

struct jwt_run {
	struct http_stream *st;
	const struct arn_cfg_jwt_authn *f;
	struct arn_stats_scope *sc;
	uint64_t now;
	unsigned trials; /* keys that may still be tried */
	unsigned tokens; /* tokens looked at */
	bool limited, overflow;
	/* remote_jwks: keys to wait for (the first missing; the run's
	 * outcome is then void), and whether no wait is possible (a missing
	 * key set fails its provider) */
	const struct arn_cfg_jwt_remote *pending;
	bool no_wait;
	struct jwt_edits *ed; /* on the stack, into the text once verified */
	struct arn_jwt jw;
};

static void jwt_edit(struct jwt_run *r, uint8_t op, const char *name, size_t nl, const char *v,
		     size_t vl)
{
	if (r->ed->n >= JWT_MAX_EDITS) {
		r->overflow = true;
		return;
	}
	r->ed->e[r->ed->n++] = (struct arn_h1_edit){.name = name,
						    .name_len = (uint16_t)nl,
						    .value = v,
						    .value_len = (uint32_t)vl,
						    .op = op};
}

/* Room for @p n bytes in the stream's text, or NULL. */
static char *jwt_text(struct http_stream *st, size_t n)
{
	return http_st_text(st, n);
}

/* Envoy's sanitizeHeaders: a provider's payload and claim headers never
 * come from the client. */
static void jwt_sanitize(struct jwt_run *r, const struct arn_cfg_jwt_provider *p)
{
	if (p->payload_header)
		jwt_edit(r, ARN_H1_EDIT_REMOVE, p->payload_header, p->payload_header_len, NULL, 0);
	for (size_t i = 0; i < p->n_claims; i++)
		jwt_edit(r, ARN_H1_EDIT_REMOVE, p->claims[i].header, p->claims[i].header_len, NULL,
			 0);
}

static bool b64url_char(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_' || c == '.';
}

/* Add @p l unless a token at the same place is there: provider bit @p bit. */
static unsigned jwt_loc_add(struct jwt_loc *out, unsigned n, const struct jwt_loc *l, unsigned bit)
{
	for (unsigned k = 0; k < n; k++)
		if (out[k].p == l->p && out[k].n == l->n) {
			out[k].providers |= 1u << bit;
			return n;
		}
	if (n > JWT_MAX_TOKENS)
		return n;
	out[n] = *l;
	out[n].providers = 1u << bit;
	return n + 1;
}

/* Envoy's Extractor: the tokens of provider @p p in the request's head
 * (its headers with their value_prefix, its query parameters' first
 * values, its cookies), added to @p out (room for JWT_MAX_TOKENS + 1).
 * @return the new count. */
static unsigned jwt_extract(const struct http_stream *st, const struct arn_cfg_jwt_provider *p,
			    unsigned bit, struct jwt_loc *out, unsigned n)
{
	const struct arn_h1_msg *m = &st->req.m;
	for (size_t i = 0; i < p->n_headers; i++) {
		const struct arn_cfg_jwt_from_header *h = &p->headers[i];
		for (int k = arn_h1_find(m, h->name, h->name_len, 0); k >= 0;
		     k = arn_h1_find(m, h->name, h->name_len, k + 1)) {
			const char *v = m->hdrs[k].value;
			size_t vl = m->hdrs[k].value_len;
			if (h->prefix_len) {
				const char *at = memmem(v, vl, h->prefix, h->prefix_len);
				if (!at)
					continue;
				size_t s = (size_t)(at - v) + h->prefix_len;
				while (s < vl && !b64url_char((unsigned char)v[s]))
					s++;
				/* none: the value as it is (Envoy's extractJWT) */
				if (s < vl) {
					v += s;
					vl -= s;
				}
			}
			struct jwt_loc l = {v, vl, h->name, h->name_len, 0};
			n = jwt_loc_add(out, n, &l, bit);
		}
	}
	const char *q = m->path.len ? memchr(m->path.p, '?', m->path.len) : NULL;
	size_t ql = q ? m->path.len - (size_t)(q + 1 - m->path.p) : 0;
	for (size_t i = 0; q && i < p->n_params; i++) {
		size_t nl = strlen(p->params[i]);
		const char *s = q + 1, *end = q + 1 + ql;
		while (s < end && *s != '#') {
			const char *amp = s;
			while (amp < end && *amp != '&' && *amp != '#')
				amp++;
			if ((size_t)(amp - s) > nl && s[nl] == '=' &&
			    memcmp(s, p->params[i], nl) == 0) {
				struct jwt_loc l = {s + nl + 1, (size_t)(amp - s) - nl - 1, NULL, 0,
						    0};
				n = jwt_loc_add(out, n, &l, bit);
				break; /* the first value (Envoy's getFirstValue) */
			}
			s = amp < end && *amp == '&' ? amp + 1 : end;
		}
	}
	for (size_t i = 0; i < p->n_cookies; i++) {
		size_t nl = strlen(p->cookies[i]);
		bool found = false;
		for (int k = arn_h1_find(m, "cookie", 6, 0); k >= 0 && !found;
		     k = arn_h1_find(m, "cookie", 6, k + 1)) {
			const char *s = m->hdrs[k].value, *end = s + m->hdrs[k].value_len;
			while (s < end && !found) {
				while (s < end && (*s == ' ' || *s == ';'))
					s++;
				const char *semi = memchr(s, ';', (size_t)(end - s));
				const char *e = semi ? semi : end;
				if ((size_t)(e - s) > nl && s[nl] == '=' &&
				    memcmp(s, p->cookies[i], nl) == 0) {
					const char *v = s + nl + 1;
					size_t vl = (size_t)(e - v);
					while (vl && v[vl - 1] == ' ')
						vl--;
					if (vl >= 2 && v[0] == '"' && v[vl - 1] == '"') {
						v++;
						vl -= 2;
					}
					struct jwt_loc l = {v, vl, NULL, 0, 0};
					n = jwt_loc_add(out, n, &l, bit);
					found = true;
				}
				s = e;
			}
		}
	}
	return n;
}

/* A good token's outputs (Envoy's handleGoodJwt): its payload and claims
 * as headers, and its header removed unless forwarded. */
static void jwt_good(struct jwt_run *r, const struct arn_cfg_jwt_provider *p,
		     const struct jwt_loc *l)
{
	struct arn_jwt *j = &r->jw;
	if (p->payload_header) {
		const char *v = j->payload_b64;
		size_t vl = j->payload_b64_len;
		size_t pad = p->pad_payload ? (4 - vl % 4) % 4 : 0;
		if (pad) {
			char *t = jwt_text(r->st, vl + pad);
			if (!t) {
				r->overflow = true;
				return;
			}
			memcpy(t, v, vl);
			memset(t + vl, '=', pad);
			v = t;
			vl += pad;
		}
		jwt_edit(r, ARN_H1_EDIT_ADD, p->payload_header, p->payload_header_len, v, vl);
	}
	for (size_t i = 0; i < p->n_claims; i++) {
		size_t room = r->st->text_len < HTTP_TEXT ? HTTP_TEXT - r->st->text_len : 0;
		char *t = r->st->res ? r->st->res->text + r->st->text_len : NULL;
		long k = t ? arn_jwt_claim(j, p->claims[i].claim, t, room) : -1;
		if (k < 0) {
			fstat_inc(r->st->hc, r->sc, ARN_JWT_AUTHN_claim_header_refused);
			continue;
		}
		if (k == 0)
			continue; /* absent, or not a string, number or boolean */
		r->st->text_len += (uint32_t)k;
		jwt_edit(r, ARN_H1_EDIT_ADD, p->claims[i].header, p->claims[i].header_len, t,
			 (size_t)k);
	}
	if (!p->forward && l->hdr)
		jwt_edit(r, ARN_H1_EDIT_REMOVE, l->hdr, l->hdr_len, NULL, 0);
}

/* One token against provider @p p (NULL: the one its issuer names among
 * those naming its location, as Envoy's allow_missing* find it), with
 * audiences @p q's when it overrides them (Envoy's startVerify). */
static enum arn_jwt_status jwt_one(struct jwt_run *r, const struct arn_cfg_jwt_provider *p,
				   const struct arn_cfg_jwt_req *q, const struct jwt_loc *l)
{
	if (r->pending)
		return ARN_JWKS_FETCH_FAIL; /* the run is void: it waits, then runs again */
	if (++r->tokens > JWT_MAX_TOKENS) {
		r->limited = true;
		return ARN_JWT_VERIFICATION_FAIL;
	}
	struct arn_jwt *j = &r->jw;
	enum arn_jwt_status s = arn_jwt_parse(j, l->p, l->n);
	if (s != ARN_JWT_OK)
		goto out;
	const struct arn_cfg_jwt_authn *f = r->f;
	if (p) {
		if (p->issuer_len && (!j->iss || j->iss_len != p->issuer_len ||
				      memcmp(j->iss, p->issuer, j->iss_len)))
			s = ARN_JWT_UNKNOWN_ISSUER;
	} else {
		/* the location's issuers; then the first provider with the
		 * token's issuer, else the first without an issuer */
		bool allowed = false;
		for (size_t i = 0; i < f->n_providers && i < 32; i++) {
			const struct arn_cfg_jwt_provider *c = &f->providers[i];
			if (!(l->providers & (1u << i)))
				continue;
			if (!c->issuer_len || (j->iss && j->iss_len == c->issuer_len &&
					       memcmp(j->iss, c->issuer, j->iss_len) == 0))
				allowed = true;
		}
		for (size_t i = 0; allowed && !p && i < f->n_providers; i++)
			if (f->providers[i].issuer_len && j->iss &&
			    j->iss_len == f->providers[i].issuer_len &&
			    memcmp(j->iss, f->providers[i].issuer, j->iss_len) == 0)
				p = &f->providers[i];
		for (size_t i = 0; allowed && !p && i < f->n_providers; i++)
			if (!f->providers[i].issuer_len)
				p = &f->providers[i];
		if (!p)
			s = ARN_JWT_UNKNOWN_ISSUER;
	}
	if (s != ARN_JWT_OK)
		goto out;
	s = arn_jwt_check_time(j, r->now, p->clock_skew_s, p->require_exp);
	if (s != ARN_JWT_OK)
		goto out;
	bool aud = q && q->aud_override ? arn_jwt_aud_allowed(j, q->audiences, q->n_audiences)
					: arn_jwt_aud_allowed(j, p->audiences, p->n_audiences);
	if (!aud) {
		s = ARN_JWT_AUDIENCE_NOT_ALLOWED;
		goto out;
	}
	const struct arn_jwks *ks = p->jwks;
	if (p->remote) {
		/* Envoy's startVerify: keys missing or expired are fetched
		 * (the request waits), a failed fetch fails the token */
		bool failed;
		ks = http_jwks_get(r->st, p->remote, &failed);
		if (!ks) {
			if (!failed && !r->no_wait)
				r->pending = p->remote;
			s = ARN_JWKS_FETCH_FAIL;
			goto out;
		}
	}
	if (!ks) {
		s = ARN_JWKS_NO_VALID_KEYS;
		goto out;
	}
	s = arn_jwt_verify_sig(j, ks, &r->trials);
	if (s != ARN_JWT_OK && !r->trials)
		r->limited = true;
	if (s == ARN_JWT_OK)
		jwt_good(r, p, l);
out:
	arn_jwt_release(j);
	return s;
}

/* Envoy's ProviderVerifier: every token of @p p's locations must verify. */
static enum arn_jwt_status jwt_provider_run(struct jwt_run *r, const struct arn_cfg_jwt_req *q)
{
	const struct arn_cfg_jwt_provider *p = &r->f->providers[q->provider];
	struct jwt_loc locs[JWT_MAX_TOKENS + 1];
	jwt_sanitize(r, p);
	unsigned n = jwt_extract(r->st, p, 0, locs, 0);
	if (!n)
		return ARN_JWT_MISSED;
	/* Envoy verifies the last found first */
	for (unsigned k = n; k-- > 0;) {
		enum arn_jwt_status s = jwt_one(r, p, q, &locs[k]);
		if (s != ARN_JWT_OK)
			return s;
	}
	return ARN_JWT_OK;
}

/* Envoy's allow_missing / allow_missing_or_failed verifiers: every
 * provider's locations; a failure does not stop the others, the last
 * token's status is the answer (as Envoy's Authenticator). */
static enum arn_jwt_status jwt_all_run(struct jwt_run *r)
{
	const struct arn_cfg_jwt_authn *f = r->f;
	struct jwt_loc locs[JWT_MAX_TOKENS + 1];
	unsigned n = 0;
	for (size_t i = 0; i < f->n_providers && i < 32; i++) {
		jwt_sanitize(r, &f->providers[i]);
		n = jwt_extract(r->st, &f->providers[i], (unsigned)i, locs, n);
	}
	enum arn_jwt_status s = ARN_JWT_MISSED;
	for (unsigned k = n; k-- > 0;)
		s = jwt_one(r, NULL, NULL, &locs[k]);
	return s;
}

static enum arn_jwt_status jwt_req_run(struct jwt_run *r, const struct arn_cfg_jwt_req *q)
{
	enum arn_jwt_status s, last = ARN_JWT_MISSED;
	switch (q->kind) {
	case ARN_CFG_JWT_REQ_PROVIDER:
		return jwt_provider_run(r, q);
	case ARN_CFG_JWT_REQ_ANY:
		/* any one verifies; else the last failure that is not a
		 * missing token */
		for (size_t i = 0; i < q->n_subs; i++) {
			s = jwt_req_run(r, &q->subs[i]);
			if (s == ARN_JWT_OK)
				return s;
			if (s != ARN_JWT_MISSED)
				last = s;
		}
		return last;
	case ARN_CFG_JWT_REQ_ALL:
		for (size_t i = 0; i < q->n_subs; i++)
			if ((s = jwt_req_run(r, &q->subs[i])) != ARN_JWT_OK)
				return s;
		return ARN_JWT_OK;
	case ARN_CFG_JWT_REQ_ALLOW_MISSING:
		s = jwt_all_run(r);
		return s == ARN_JWT_MISSED ? ARN_JWT_OK : s;
	default:
		(void)jwt_all_run(r);
		return ARN_JWT_OK;
	}
}

/* Envoy's isCorsPreflightRequest */
static bool jwt_cors_preflight(const struct http_stream *st)
{
	size_t l = 0;
	return st->method == ARN_H1_M_OPTIONS && req_hdr(st, "origin", 6, &l, NULL) &&
	       req_hdr(st, "access-control-request-method", 29, &l, NULL);
}

/* The failure reply: Envoy's onComplete (401, or 403 for an audience not
 * allowed; the status string as the body; www-authenticate with the
 * request's original URI as the realm). */
static void jwt_deny(struct jwt_run *r, enum arn_jwt_status s)
{
	struct http_stream *st = r->st;
	unsigned code = s == ARN_JWT_AUDIENCE_NOT_ALLOWED ? 403 : 401;
	const char *details = jwt_details[s] ? jwt_details[s] : "jwt_authn_access_denied";
	if (r->f->strip_failure_response) {
		http_local_reply(st, code, "", 0, 0, details, NULL, 0);
		return;
	}
	const char *body = arn_jwt_status_str(s);
	struct arn_h1_edit e[1];
	unsigned n = http_www_authenticate(
	    st, "Bearer", s != ARN_JWT_MISSED ? ", error=\"invalid_token\"" : "", e);
	http_local_reply(st, code, body, strlen(body), 0, details, e, n);
}

/*
 * envoy.filters.http.jwt_authn (Envoy's Filter::decodeHeaders): a CORS
 * preflight passes when bypass_cors_preflight says so; the route's or
 * virtual host's PerRouteConfig (disabled, or a requirement_map name),
 * else the first rule whose match matches, gives the requirement; none:
 * the request passes. @return true when it answered (a failure).
 */
static bool jwt_step(struct http_stream *st, size_t i, const struct arn_cfg_jwt_authn *f,
		     const struct arn_cfg_route_match *mt, const struct arn_cfg_request *req)
{
	struct http_conn *hc = st->hc;
	struct http_hcm_rt *hr = hc->hrt;
	struct jwt_run r;
	r.sc = hr && i < HTTP_MAX_FILTER_STATS ? hr->fstats[i] : NULL;
	if (f->bypass_cors_preflight && jwt_cors_preflight(st)) {
		fstat_inc(hc, r.sc, ARN_JWT_AUTHN_cors_preflight_bypassed);
		fstat_inc(hc, r.sc, ARN_JWT_AUTHN_allowed);
		return false;
	}
	const struct arn_cfg_hcm *h = hc->hcm;
	const char *name = h->http_filter_names ? h->http_filter_names[i] : NULL;
	const struct arn_cfg_jwt_per_route *pr =
	    mt && name ? arn_cfg_per_filter_find(mt->vhost, mt->route, name, strlen(name),
						 ARN_CFG_PF_JWT_AUTHN)
		       : NULL;
	const struct arn_cfg_jwt_req *q = NULL;
	if (pr && !pr->disabled) {
		size_t k = 0;
		while (k < f->n_reqmap && (f->reqmap[k].name_len != pr->name_len ||
					   memcmp(f->reqmap[k].name, pr->name, pr->name_len) != 0))
			k++;
		if (k == f->n_reqmap) {
			/* Envoy: 403 "Failed JWT authentication: Wrong
			 * requirement_name: ..." */
			fstat_inc(hc, r.sc, ARN_JWT_AUTHN_denied);
			static const char pre[] = "Failed JWT authentication: ";
			size_t nl = strlen(f->reqmap_names);
			size_t need = sizeof(pre) + 26 + pr->name_len + 26 + nl + 2;
			char *t = jwt_text(st, need);
			int k2 =
			    t ? snprintf(t, need,
					 "%sWrong requirement_name: %.*s. It should be one of [%s]",
					 f->strip_failure_response ? "" : pre, (int)pr->name_len,
					 pr->name, f->reqmap_names)
			      : 0;
			const char *body = t && k2 > 0 && !f->strip_failure_response ? t : "";
			size_t bl = *body ? (size_t)k2 : 0;
			http_local_reply(st, 403, body, bl, 0,
					 "jwt_authn_access_denied{Wrong_requirement_name}", NULL,
					 0);
			return true;
		}
		q = f->reqmap[k].req;
	} else if (!pr) {
		for (size_t k = 0; k < f->n_rules; k++)
			if (arn_cfg_route_matches(&f->rules[k].match, req)) {
				q = f->rules[k].req;
				break;
			}
	}
	if (!q) {
		fstat_inc(hc, r.sc, ARN_JWT_AUTHN_allowed);
		return false;
	}
	r.st = st;
	r.f = f;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	r.now = ts.tv_sec > 0 ? (uint64_t)ts.tv_sec : 0;
	r.no_wait = false;
	struct jwt_edits ed;
	r.ed = &ed;
	uint32_t text0 = st->text_len;
	enum arn_jwt_status s;
	for (;;) {
		r.trials = JWT_MAX_KEY_TRIALS;
		r.tokens = 0;
		r.limited = r.overflow = false;
		r.pending = NULL;
		memset(&r.jw, 0, offsetof(struct arn_jwt, sig));
		ed.n = 0;
		s = jwt_req_run(&r, q);
		if (!r.pending)
			break;
		/* a provider's remote keys are missing: the request waits for
		 * them and runs again (http_jwks_resume_at); unless it cannot
		 * wait, when the run is made again with those keys failing */
		st->text_len = text0;
		if (http_jwks_hold(st, i, r.pending, r.sc) == 0)
			return true;
		r.no_wait = true;
	}
	if (st->res && st->res->jwks_wait)
		http_jwks_done(st); /* decided: a wait's context goes back */
	if (r.limited) {
		fstat_inc(hc, r.sc, ARN_JWT_AUTHN_verify_limited);
		s = ARN_JWT_VERIFICATION_FAIL;
	}
	if (s != ARN_JWT_OK) {
		fstat_inc(hc, r.sc, ARN_JWT_AUTHN_denied);
		jwt_deny(&r, s);
		return true;
	}
	/* the edits into the stream's text, where the router finds them
	 * (http_l4_req_edits) */
	if (r.overflow || http_req_edits_keep(st, ed.e, ed.n) < 0) {
		/* more edits than the stream holds: never a request without
		 * them upstream (issue 12) */
		HTTP_INC(hc, rq_edit_overflow);
		http_local_reply(st, 500, NULL, 0, 0, "header_edits_overflow", NULL, 0);
		return true;
	}
	fstat_inc(hc, r.sc, ARN_JWT_AUTHN_allowed);
	return false;
}

/* envoy.filters.http.local_ratelimit. @return true when it answered. */
static bool ratelimit_step(struct http_stream *st, size_t i, bool first,
			   const struct arn_cfg_http_ratelimit *f,
			   const struct arn_cfg_route_match *mt, const struct arn_cfg_request *req,
			   uint32_t client)
{
	struct http_conn *hc = st->hc;
	struct http_worker *w = hc->w;
	const struct arn_cfg_hcm *h = hc->hcm;
	const char *name = h->http_filter_names ? h->http_filter_names[i] : NULL;
	/* header_value_match's joined values as long as a request head may
	 * be, as rbac_step's (else 4 KB: a longer one yields no descriptor) */
	char *big = http_big_get(w);
	/* destination_cluster: the route's cluster, as the global filter's */
	struct arn_cfg_ref rcl = {0};
	if (mt && mt->route && mt->route->action == ARN_CFG_ACTION_ROUTE)
		http_route_cluster(&mt->route->route, req, &rcl);
	struct arn_hlrl_input in = {
	    .filter = f,
	    .filter_name = name,
	    .filter_name_len = name ? strlen(name) : 0,
	    .vhost = mt ? mt->vhost : NULL,
	    .route = mt ? mt->route : NULL,
	    .rl = {.remote_addr = client,
		   .route_cluster = {.s = rcl.name, .len = rcl.len},
		   .header = arn_rbac_request_header,
		   .header_ctx = (void *)(uintptr_t)req,
		   .scratch = big,
		   .scratch_len = big ? HTTP_BIG_SCRATCH : 0},
	    .now = http_tsc(w),
	    .hz = w->hz,
	    .random = http_rand(w),
	    .random_enforced = http_rand(w),
	    /* the connection's buckets belong to the first local_ratelimit
	     * filter; a later one asking for them is not limited (-ENOSPC) */
	    .conn_states = first ? hc->rl_conn : NULL,
	    .n_conn_states = first ? ARN_CFG_HLRL_CONN_BUCKETS : 0,
	};
	struct arn_hlrl_decision d;
	struct http_hcm_rt *r = hc->hrt;
	struct arn_stats_scope *sc = r && i < HTTP_MAX_FILTER_STATS ? r->fstats[i] : NULL;
	int rc = arn_hlrl_decide(&in, &d);
	http_big_put(w, big);
	if (rc != 0) {
		/* a later local_ratelimit filter asking for per-connection
		 * buckets (the first one has them), or more descriptors than
		 * the engine takes (lib/config refuses that): not limited */
		return false;
	}
	if (!d.enabled)
		return false;
	/* a route's configuration counts under its own stat_prefix (Envoy) */
	if (d.config && d.config != f)
		sc = http_rt_rl_scope(d.config);
	fstat_inc(hc, sc, ARN_HLRL_enabled);
	fstat_inc(hc, sc, d.limited ? ARN_HLRL_rate_limited : ARN_HLRL_ok);
	if (d.limited && !d.enforced && d.config && d.config->headers.n_req_add)
		st->rl_unenforced = d.config; /* the router adds them (http_l4_req_edits) */
	if (!d.limited || !d.enforced) {
		/* x-ratelimit-* on whatever answers it (http_l4_resp_edits) */
		if (d.config && d.config->x_ratelimit_headers && d.has_bucket)
			rl_x_note(st, &d);
		return false;
	}
	fstat_inc(hc, sc, ARN_HLRL_enforced);
	static const char body[] = "local_rate_limited";
	struct arn_h1_edit e[MAX_EDITS];
	/* one slot stays for local_reply's health check header, and one
	 * for rate_limited_as_resource_exhausted: a gRPC request's status is
	 * RESOURCE_EXHAUSTED (Envoy's rateLimitedGrpcStatus), not the one
	 * its HTTP status maps to (the local reply keeps a grpc-status
	 * given to it) */
	const struct arn_cfg_http_ratelimit *lc = d.config ? d.config : f;
	bool re = lc->resource_exhausted && http_is_grpc(st);
	int k = rl_reply_edits(st, &d, e, MAX_EDITS - 1 - (re ? 1 : 0));
	if (k < 0) {
		/* never the limit's answer without its headers (issue 12) */
		HTTP_INC(hc, rs_edit_overflow);
		http_local_reply(st, 500, NULL, 0, 0, "response_edits_overflow", NULL, 0);
		return true;
	}
	if (re)
		e[k++] = (struct arn_h1_edit){.name = "grpc-status",
					      .name_len = 11,
					      .value = "8",
					      .value_len = 1,
					      .op = ARN_H1_EDIT_SET};
	unsigned status = d.config && d.config->status ? d.config->status : 429;
	http_local_reply(st, status, body, sizeof(body) - 1, ARN_RF_BIT(RATE_LIMITED),
			 "local_rate_limited", e, (unsigned)k);
	return true;
}

/* ---- envoy.filters.http.fault -------------------------------------------------------- */

/* The fault's abort (Envoy's abortWithStatus): "fault filter abort", flag
 * FI, details fault_filter_abort; a gRPC status answers a gRPC request
 * with it (200, grpc-status), another request with @p status or 200. */
static void fault_abort(struct http_stream *st, struct arn_stats_scope *sc, unsigned status,
			int grpc)
{
	fstat_inc(st->hc, sc, ARN_FAULT_aborts_injected);
	static const char body[] = "fault filter abort";
	if (grpc >= 0 && http_is_grpc(st)) {
		char gs[12];
		int k = snprintf(gs, sizeof(gs), "%d", grpc);
		struct arn_h1_edit e[2] = {
		    {.name = "content-type",
		     .name_len = 12,
		     .value = "application/grpc",
		     .value_len = 16,
		     .op = ARN_H1_EDIT_SET},
		    {.name = "grpc-status",
		     .name_len = 11,
		     .value = gs,
		     .value_len = (uint32_t)k,
		     .op = ARN_H1_EDIT_SET},
		};
		/* a trailers-only answer: the HTTP status is 200 and no body
		 * (local_reply keeps a grpc-status given to it) */
		http_local_reply(st, 200, NULL, 0, ARN_RF_BIT(FAULT_INJECTED), "fault_filter_abort",
				 e, 2);
		return;
	}
	http_local_reply(st, status ? status : 200, body, sizeof(body) - 1,
			 ARN_RF_BIT(FAULT_INJECTED), "fault_filter_abort", NULL, 0);
}

/* A delay ends (its timer, or the stream's end): it leaves active_faults. */
static void fault_delay_over(struct http_stream *st)
{
	struct http_xreq *x = X(st);
	if (!x->fault_delayed)
		return;
	x->fault_delayed = false;
	struct http_hcm_rt *hr = st->hc->hrt;
	size_t i = (size_t)x->fault_from - 1;
	if (hr && i < HTTP_MAX_FILTER_STATS && hr->fstats[i])
		arn_stats_gauge_add(hr->fstats[i], st->hc->w->slot, ARN_FAULT_active_faults, -1);
}

static void fault_fire(struct http_timer *t)
{
	struct http_stream *st = OWNER(t, struct http_xreq, retry_timer)->st;
	struct http_conn *hc = st->hc;
	struct http_xreq *x = X(st);
	bool was = x->fault_delayed;
	fault_delay_over(st);
	if (!was || !hc->tc || (st->state & HTTP_S_LOCAL))
		return;
	struct http_hcm_rt *hr = hc->hrt;
	size_t i = (size_t)x->fault_from - 1;
	if (x->fault_abort)
		fault_abort(st, hr && i < HTTP_MAX_FILTER_STATS ? hr->fstats[i] : NULL,
			    x->fault_abort < HTTP_FAULT_GRPC ? x->fault_abort : 0,
			    x->fault_abort >= HTTP_FAULT_GRPC ? x->fault_abort - HTTP_FAULT_GRPC
							      : -1);
	else
		hc->ops->resume_head(st, &http_l4_filter_ops);
	http_conn_run(hc);
}

/* envoy.filters.http.fault at filter @p i: the route's HTTPFault (most
 * specific) or @p f. @return true when it answered (an abort) or holds
 * the request (a delay: fault_fire goes on). */
static bool fault_step(struct http_stream *st, size_t i, const struct arn_cfg_fault *f,
		       const struct arn_cfg_route_match *mt, const struct arn_cfg_request *req)
{
	struct http_conn *hc = st->hc;
	struct http_worker *w = hc->w;
	struct http_hcm_rt *hr = hc->hrt;
	struct arn_stats_scope *sc = hr && i < HTTP_MAX_FILTER_STATS ? hr->fstats[i] : NULL;
	const char *name = hc->hcm->http_filter_names ? hc->hcm->http_filter_names[i] : NULL;
	const struct arn_cfg_fault *pr =
	    mt && name ? arn_cfg_per_filter_find(mt->vhost, mt->route, name, strlen(name),
						 ARN_CFG_PF_FAULT)
		       : NULL;
	if (pr)
		f = pr;
	/* the route's cluster, as Envoy's route entry names it (a header
	 * or weighted choice is made later: none here) */
	const char *cl = NULL;
	size_t cll = 0;
	if (mt && mt->route && mt->route->action == ARN_CFG_ACTION_ROUTE &&
	    mt->route->route.spec == ARN_CFG_CLUSTER_NAME && mt->route->route.cluster.name) {
		cl = mt->route->route.cluster.name;
		cll = mt->route->route.cluster.len;
	}
	struct http_fault_plan p;
	if (!http_fault_plan(f, &st->req.m, req, cl, cll, http_rand(w), http_rand(w), &p))
		return false;
	if (!p.delay_ms && !p.abort_status && p.abort_grpc < 0)
		return false;
	if (f->max_active && sc &&
	    arn_stats_gauge_value(sc, ARN_FAULT_active_faults) >= (int64_t)f->max_active) {
		fstat_inc(hc, sc, ARN_FAULT_faults_overflow);
		return false;
	}
	if (!p.delay_ms) {
		fault_abort(st, sc, p.abort_status, p.abort_grpc);
		return true;
	}
	struct http_xreq *x = X(st);
	x->fault_from = (uint8_t)(i + 1);
	x->fault_abort =
	    p.abort_grpc >= 0 ? (uint16_t)(HTTP_FAULT_GRPC + p.abort_grpc) : p.abort_status;
	x->fault_delayed = sc != NULL;
	if (sc)
		arn_stats_gauge_add(sc, w->slot, ARN_FAULT_active_faults, 1);
	fstat_inc(hc, sc, ARN_FAULT_delays_injected);
	st->flags |= ARN_RF_BIT(DELAY_INJECTED);
	x->retry_timer.fn = fault_fire;
	http_timer_arm(w, &x->retry_timer, p.delay_ms);
	return true;
}

/* ---- envoy.filters.http.stateful_session ---------------------------------------------- */

/* Filter @p i's StatefulSession for route @p vh / @p r: the route's (most
 * specific) or @p f; NULL when the route disables it. */
static const struct arn_cfg_stateful_session *session_cfg(struct http_stream *st, size_t i,
							  const struct arn_cfg_stateful_session *f,
							  const struct arn_cfg_vhost *vh,
							  const struct arn_cfg_route *r)
{
	const char *name =
	    st->hc->hcm->http_filter_names ? st->hc->hcm->http_filter_names[i] : NULL;
	const struct arn_cfg_stateful_session *pr =
	    vh && name
		? arn_cfg_per_filter_find(vh, r, name, strlen(name), ARN_CFG_PF_STATEFUL_SESSION)
		: NULL;
	if (pr)
		f = pr->disabled ? NULL : pr;
	return f && f->mode != ARN_CFG_SS_NONE ? f : NULL;
}

/* envoy.filters.http.stateful_session at filter @p i (Envoy's
 * StatefulSession::decodeHeaders): the session the request's cookie (its
 * path matching the cookie's) or header names, for the router's first
 * pick (http_xreq.ss_*); the response then names the host it went to
 * (session_edits). Never answers. */
static void session_step(struct http_stream *st, size_t i, const struct arn_cfg_stateful_session *f,
			 const struct arn_cfg_route_match *mt, const struct arn_cfg_request *req)
{
	if (!st->res)
		return;
	f = session_cfg(st, i, f, mt ? mt->vhost : NULL, mt ? mt->route : NULL);
	if (!f)
		return;
	bool cookie = f->mode == ARN_CFG_SS_COOKIE;
	if (cookie && !http_session_path_match(f->path, f->path_len, req->path ? req->path : "",
					       req->path ? req->path_len : 0))
		return; /* Envoy: no session state at all */
	st->ss_from = (uint8_t)(i + 1);
	struct arn_h1_slice v = {0};
	if (cookie) {
		if (!http_lb_cookie_find(&st->req.m, f->name, f->name_len, &v))
			return;
	} else {
		int k = arn_h1_find(&st->req.m, f->name, f->name_len, 0);
		if (k < 0)
			return;
		v.p = st->req.m.hdrs[k].value;
		v.len = st->req.m.hdrs[k].value_len;
	}
	uint32_t a = 0;
	uint16_t p = 0;
	int r = http_session_decode(v.p, v.len, cookie, st->hc->w->now_ms / 1000, &a, &p);
	if (r == HTTP_SS_NONE)
		return;
	st->ss_flags = (uint8_t)(HTTP_SS_F_NAMED | (r == HTTP_SS_ADDR ? HTTP_SS_F_ADDR : 0) |
				 (f->strict ? HTTP_SS_F_STRICT : 0));
	st->ss_addr = a;
	st->ss_port = p;
}

/* The response's session (Envoy's onUpdate): when a host answered and it
 * is not the one the session named, a Set-Cookie (name="value";
 * Max-Age=ttl; Path=path; HttpOnly, Envoy's makeSetCookieValue) or the
 * header naming it. @return edits added, or -ENOSPC. */
static int session_edits(struct http_stream *st, struct arn_h1_edit *e, unsigned cap)
{
	if (!st->ep_addr && !st->ep_port)
		return 0; /* no upstream host (a local reply before a pick) */
	if ((st->ss_flags & HTTP_SS_F_ADDR) && st->ss_addr == st->ep_addr &&
	    st->ss_port == st->ep_port)
		return 0;
	size_t i = (size_t)st->ss_from - 1;
	const struct arn_cfg_hcm *h = st->hc->hcm;
	if (!h || i >= h->n_http_filters || !h->http_filter_cfgs)
		return 0;
	const struct arn_cfg_stateful_session *f =
	    session_cfg(st, i, h->http_filter_cfgs[i], st->vhost, st->route);
	if (!f)
		return 0;
	if (!cap)
		return -ENOSPC;
	bool cookie = f->mode == ARN_CFG_SS_COOKIE;
	uint64_t now_s = st->hc->w->now_ms / 1000;
	char val[HTTP_SS_ENC_MAX];
	size_t vl = http_session_encode(cookie, st->ep_addr, st->ep_port,
					cookie && f->ttl_s ? now_s + f->ttl_s : 0, val);
	char *t = st->res->text + st->text_len;
	uint32_t room = HTTP_TEXT - st->text_len;
	int k;
	if (cookie) {
		char age[24] = "";
		if (f->ttl_s)
			snprintf(age, sizeof(age), "; Max-Age=%u", f->ttl_s);
		k = snprintf(t, room, "%.*s=\"%.*s\"%s%s%.*s; HttpOnly", (int)f->name_len, f->name,
			     (int)vl, val, age, f->path_len ? "; Path=" : "", (int)f->path_len,
			     f->path_len ? f->path : "");
	} else {
		k = snprintf(t, room, "%.*s", (int)vl, val);
	}
	if (k < 0 || (uint32_t)k >= room)
		return -ENOSPC;
	st->text_len += (uint32_t)k + 1;
	if (cookie)
		e[0] = (struct arn_h1_edit){.name = "set-cookie",
					    .name_len = 10,
					    .value = t,
					    .value_len = (uint32_t)k,
					    .op = ARN_H1_EDIT_ADD};
	else
		e[0] = (struct arn_h1_edit){.name = f->name,
					    .name_len = (uint16_t)f->name_len,
					    .value = t,
					    .value_len = (uint32_t)k,
					    .op = ARN_H1_EDIT_SET};
	return 1;
}

static bool __attribute__((noinline))
l4_filters_run(struct http_stream *st, const struct arn_cfg_gen *g,
	       const struct arn_cfg_route_table *rt, const struct arn_cfg_request *req,
	       size_t from);

/* Has @p h a filter of these (health check, RBAC, local ratelimit)?
 * Without one, no hook of this table acts: the head runs no filter, and
 * the ratelimit headers (rl_x, rl_unenforced) are set by none. */
static bool l4_active(const struct arn_cfg_hcm *h)
{
	for (size_t i = 0; i < h->n_http_filters; i++)
		if (h->http_filters[i] == ARN_CFG_HF_EXT_AUTHZ ||
		    h->http_filters[i] == ARN_CFG_HF_HEALTH_CHECK ||
		    h->http_filters[i] == ARN_CFG_HF_RBAC ||
		    h->http_filters[i] == ARN_CFG_HF_LOCAL_RATELIMIT ||
		    h->http_filters[i] == ARN_CFG_HF_CORS ||
		    h->http_filters[i] == ARN_CFG_HF_JWT_AUTHN ||
		    h->http_filters[i] == ARN_CFG_HF_FAULT ||
		    h->http_filters[i] == ARN_CFG_HF_BASIC_AUTH ||
		    h->http_filters[i] == ARN_CFG_HF_STATEFUL_SESSION ||
		    h->http_filters[i] == ARN_CFG_HF_CSRF ||
		    h->http_filters[i] == ARN_CFG_HF_API_KEY_AUTH ||
		    h->http_filters[i] == ARN_CFG_HF_CRED_INJECTOR ||
		    h->http_filters[i] == ARN_CFG_HF_RATELIMIT ||
		    h->http_filters[i] == ARN_CFG_HF_OAUTH2 ||
		    h->http_filters[i] == ARN_CFG_HF_HEADER_MUTATION ||
		    h->http_filters[i] == ARN_CFG_HF_CUSTOM_RESPONSE ||
		    h->http_filters[i] == ARN_CFG_HF_BUFFER ||
		    h->http_filters[i] == ARN_CFG_HF_EXT_PROC ||
		    h->http_filters[i] == ARN_CFG_HF_LUA)
			return true;
	return false;
}

/* Most chains have none of these filters (the router alone): found out
 * before the walk's frame (bench_hcm: 44 instructions a request to about
 * 15) */
bool http_l4_filters(struct http_stream *st, const struct arn_cfg_gen *g,
		     const struct arn_cfg_route_table *rt, const struct arn_cfg_request *req)
{
	if (l4_active(st->hc->hcm)) {
		/* after the filter that held the head, if one did */
		size_t from = http_authz_resume_at(st);
		if (st->rls && http_rls_resume_at(st) > from)
			from = http_rls_resume_at(st); /* the ratelimit filter's call */
		if (st->res && X(st)->fault_from > from)
			from = X(st)->fault_from;
		if (http_buffer_resume_at(st) > from)
			from = http_buffer_resume_at(st); /* the body read whole */
		/* jwt_authn runs again once the keys it waited for came */
		if (st->res && st->res->jwks_wait && http_jwks_resume_at(st) > from)
			from = http_jwks_resume_at(st);
		if (st->ext_proc && http_ext_proc_resume_at(st) > from)
			from = http_ext_proc_resume_at(st); /* its processor's answer */
		if (http_lua_resume_at(st) > from)
			from = http_lua_resume_at(st); /* a script's body() */
		return l4_filters_run(st, g, rt, req, from);
	}
	return false;
}

/* Is filter @p i of @p h off for the request's route @p mt (NULL: none
 * matched: the HttpFilter's own disabled decides)? */
static bool l4_filter_off(const struct arn_cfg_hcm *h, size_t i,
			  const struct arn_cfg_route_match *mt)
{
	bool dflt = h->http_filter_off && h->http_filter_off[i];
	const char *name = h->http_filter_names ? h->http_filter_names[i] : NULL;
	if (!mt || !name)
		return dflt;
	return arn_cfg_filter_off(mt->vhost, mt->route, name, strlen(name), dflt);
}

bool http_filter_kind_off(const struct arn_cfg_hcm *h, unsigned kind,
			  const struct arn_cfg_route_table *rt, const struct arn_cfg_request *req)
{
	if (!h->http_filter_off && !(rt && rt->filter_toggles))
		return false;
	size_t i = 0;
	while (i < h->n_http_filters && h->http_filters[i] != kind)
		i++;
	if (i == h->n_http_filters)
		return false;
	struct arn_cfg_route_match mt;
	bool matched = rt && arn_cfg_route_match(rt, req, &mt) == 0;
	return l4_filter_off(h, i, matched ? &mt : NULL);
}

/* From filter @p from: 0, or the one after an ext_authz filter whose
 * check allowed the request (http_hcm_resume_head). */
static bool l4_filters_run(struct http_stream *st, const struct arn_cfg_gen *g,
			   const struct arn_cfg_route_table *rt, const struct arn_cfg_request *req,
			   size_t from)
{
	const struct arn_cfg_hcm *h = st->hc->hcm;
	struct arn_cfg_route_match mt;
	bool matched = false, have = false, first_rl = true, toggles = false;
	uint32_t client = 0;
	for (size_t i = from; i < h->n_http_filters; i++) {
		const void *cfg = h->http_filter_cfgs ? h->http_filter_cfgs[i] : NULL;
		switch (h->http_filters[i]) {
		case ARN_CFG_HF_HEALTH_CHECK:
			if (h->health_check &&
			    !((h->http_filter_off || (rt && rt->filter_toggles)) &&
			      http_filter_kind_off(h, ARN_CFG_HF_HEALTH_CHECK, rt, req)) &&
			    http_hc_filter(st, g, req))
				return true;
			break;
		case ARN_CFG_HF_EXT_AUTHZ:
		case ARN_CFG_HF_RBAC:
		case ARN_CFG_HF_LOCAL_RATELIMIT:
		case ARN_CFG_HF_CORS:
		case ARN_CFG_HF_JWT_AUTHN:
		case ARN_CFG_HF_FAULT:
		case ARN_CFG_HF_BASIC_AUTH:
		case ARN_CFG_HF_STATEFUL_SESSION:
		case ARN_CFG_HF_CSRF:
		case ARN_CFG_HF_API_KEY_AUTH:
		case ARN_CFG_HF_CRED_INJECTOR:
		case ARN_CFG_HF_RATELIMIT:
		case ARN_CFG_HF_OAUTH2:
		case ARN_CFG_HF_HEADER_MUTATION:
		case ARN_CFG_HF_BUFFER:
		case ARN_CFG_HF_EXT_PROC:
		case ARN_CFG_HF_LUA:
			if (!cfg)
				break;
			if (!have) {
				have = true;
				matched = rt && arn_cfg_route_match(rt, req, &mt) == 0;
				/* remote_ip and remote_address: the client the
				 * connection manager trusts (XFF unless
				 * use_remote_address), as Envoy's filters see it */
				bool internal;
				client = http_client_addr(h, &st->req.m, st->hc->raddr, &internal);
				toggles = h->http_filter_off || (rt && rt->filter_toggles);
			}
			/* HttpFilter.disabled, FilterConfig (Envoy's
			 * filterDisabled): the route's level decides */
			if (toggles && l4_filter_off(h, i, matched ? &mt : NULL))
				break;
			if (h->http_filters[i] == ARN_CFG_HF_RBAC) {
				if (rbac_step(st, i, cfg, matched ? &mt : NULL, req, client))
					return true;
			} else if (h->http_filters[i] == ARN_CFG_HF_EXT_AUTHZ) {
				if (http_authz_step(st, i, cfg, matched ? &mt : NULL))
					return true;
			} else if (h->http_filters[i] == ARN_CFG_HF_CORS) {
				if (cors_step(st, i, matched ? &mt : NULL))
					return true;
			} else if (h->http_filters[i] == ARN_CFG_HF_JWT_AUTHN) {
				if (jwt_step(st, i, cfg, matched ? &mt : NULL, req))
					return true;
			} else if (h->http_filters[i] == ARN_CFG_HF_FAULT) {
				if (fault_step(st, i, cfg, matched ? &mt : NULL, req))
					return true;
			} else if (h->http_filters[i] == ARN_CFG_HF_BASIC_AUTH) {
				if (http_basic_auth_step(st, i, cfg, matched ? &mt : NULL))
					return true;
			} else if (h->http_filters[i] == ARN_CFG_HF_OAUTH2) {
				if (http_oauth2_step(st, i, cfg, matched ? &mt : NULL, req))
					return true;
			} else if (h->http_filters[i] == ARN_CFG_HF_STATEFUL_SESSION) {
				session_step(st, i, cfg, matched ? &mt : NULL, req);
			} else if (h->http_filters[i] == ARN_CFG_HF_CSRF) {
				if (http_csrf_step(st, i, cfg, matched ? &mt : NULL))
					return true;
			} else if (h->http_filters[i] == ARN_CFG_HF_API_KEY_AUTH) {
				if (http_api_key_step(st, i, cfg, matched ? &mt : NULL))
					return true;
			} else if (h->http_filters[i] == ARN_CFG_HF_CRED_INJECTOR) {
				if (http_cred_inject_step(st, i, cfg, g))
					return true;
			} else if (h->http_filters[i] == ARN_CFG_HF_RATELIMIT) {
				if (http_rls_step(st, i, cfg, matched ? &mt : NULL, req, client))
					return true;
			} else if (h->http_filters[i] == ARN_CFG_HF_HEADER_MUTATION) {
				if (http_hm_step(st, i, cfg, matched ? &mt : NULL))
					return true;
			} else if (h->http_filters[i] == ARN_CFG_HF_BUFFER) {
				if (http_buffer_step(st, i, cfg, matched ? &mt : NULL))
					return true;
			} else if (h->http_filters[i] == ARN_CFG_HF_EXT_PROC) {
				if (http_ext_proc_step(st, i, cfg, matched ? &mt : NULL))
					return true;
			} else if (h->http_filters[i] == ARN_CFG_HF_LUA) {
				if (http_lua_step(st, i, cfg, matched ? &mt : NULL))
					return true;
			} else {
				bool first = first_rl;
				first_rl = false;
				if (ratelimit_step(st, i, first, cfg, matched ? &mt : NULL, req,
						   client))
					return true;
			}
			break;
		default:
			break;
		}
	}
	return false;
}

/* ---- the network filters before the terminal filter ------------------------------------- */

/*
 * The network filters run ahead of either terminal filter (the connection
 * manager, tcp_proxy): the connection's owner keeps what they hold (which
 * connection_limit filters count it, whether RBAC waits for the first
 * byte) and hands it in; @p r is the terminal filter's runtime object,
 * whose l4stats / l4shadow are the filters' scopes by index.
 */
int http_l4_net_accept(struct http_worker *w, struct http_hcm_rt *r,
		       const struct arn_cfg_filter_chain *fc, uint8_t *held, bool *rbac_pending,
		       uint32_t *delay_ms)
{
	*delay_ms = 0;
	/* held: bit k for the k-th connection_limit filter, whatever its
	 * index among the others (lib/config keeps them to HTTP_L4_HELD_MAX) */
	unsigned k = 0;
	for (size_t i = 0; i < fc->n_l4_filters; i++) {
		const struct arn_cfg_l4_filter *f = &fc->l4_filters[i];
		struct arn_stats_scope *sc = r && i < HTTP_MAX_FILTER_STATS ? r->l4stats[i] : NULL;
		switch (f->kind) {
		case ARN_CFG_L4_LOCAL_RATELIMIT: {
			/* one token per connection, from the bucket every worker shares */
			const struct arn_cfg_local_ratelimit *rl = f->ratelimit;
			struct arn_tbucket tb;
			if (!rl || !rl->enabled || arn_tbucket_init(&tb, &rl->bucket, w->hz) < 0)
				break;
			if (!arn_tbucket_take(&tb, rl->state, http_tsc(w), 1)) {
				wstat_inc(w, sc, ARN_LRL_rate_limited);
				return -EBUSY;
			}
			break;
		}
		case ARN_CFG_L4_CONNECTION_LIMIT: {
			const struct arn_cfg_connection_limit *cl = f->connection_limit;
			unsigned bit = k++;
			if (!cl || !cl->enabled)
				break;
			if (bit >= HTTP_L4_HELD_MAX || !arn_connlimit_acquire(cl)) {
				wstat_inc(w, sc, ARN_CXL_limited_connections);
				*delay_ms = cl->delay_ms;
				return -EBUSY;
			}
			*held |= (uint8_t)(1u << bit);
			if (sc)
				arn_stats_gauge_add(sc, w->slot, ARN_CXL_active_connections, 1);
			break;
		}
		case ARN_CFG_L4_RBAC:
			/* on the first byte (http_l4_net_first_byte) */
			*rbac_pending = true;
			break;
		default:
			break;
		}
	}
	return 0;
}

/* The counters of one RBAC outcome into @p sc (and @p sh for shadow
 * rules under their own prefix). */
static void rbac_count(struct http_worker *w, struct arn_stats_scope *sc,
		       struct arn_stats_scope *sh, const struct arn_rbac_result *res)
{
	if (res->ran)
		wstat_inc(w, sc, res->enforced.allowed ? ARN_RBAC_allowed : ARN_RBAC_denied);
	if (!res->shadow_ran)
		return;
	if (sh)
		wstat_inc(w, sh,
			  res->shadow.allowed ? ARN_RBAC_SHADOW_shadow_allowed
					      : ARN_RBAC_SHADOW_shadow_denied);
	else
		wstat_inc(w, sc,
			  res->shadow.allowed ? ARN_RBAC_shadow_allowed : ARN_RBAC_shadow_denied);
}

int http_l4_net_first_byte(struct http_worker *w, struct http_hcm_rt *r,
			   const struct arn_cfg_filter_chain *fc, const struct arn_rbac_input *in,
			   uint32_t *delay_ms, uint8_t *hint, struct arn_rbac_decision *denied)
{
	*delay_ms = 0;
	for (size_t i = 0; fc && i < fc->n_l4_filters; i++) {
		const struct arn_cfg_l4_filter *f = &fc->l4_filters[i];
		if (f->kind != ARN_CFG_L4_RBAC || !f->rbac)
			continue;
		struct arn_rbac_result res;
		bool ok = arn_rbac_filter_eval(f->rbac, NULL, in, &res);
		if (hint && res.ran && f->rbac->rules && f->rbac->rules->action == ARN_CFG_RBAC_LOG)
			*hint = res.enforced.log ? ARN_ACCESS_HINT_TRUE : ARN_ACCESS_HINT_FALSE;
		bool idx = r && i < HTTP_MAX_FILTER_STATS;
		rbac_count(w, idx ? r->l4stats[i] : NULL, idx ? r->l4shadow[i] : NULL, &res);
		if (!ok) {
			*delay_ms = f->rbac->delay_deny_ms;
			if (denied)
				*denied = res.enforced;
			return -EACCES;
		}
	}
	return 0;
}

void http_l4_net_close(struct http_worker *w, struct http_hcm_rt *r,
		       const struct arn_cfg_filter_chain *fc, uint8_t *held)
{
	unsigned k = 0;
	for (size_t i = 0; fc && *held && i < fc->n_l4_filters && k < HTTP_L4_HELD_MAX; i++) {
		if (fc->l4_filters[i].kind != ARN_CFG_L4_CONNECTION_LIMIT)
			continue;
		unsigned bit = k++;
		if (!(*held & (1u << bit)))
			continue;
		*held &= (uint8_t) ~(1u << bit);
		arn_connlimit_release(fc->l4_filters[i].connection_limit);
		/* (no scope past HTTP_MAX_FILTER_STATS, as at accept) */
		struct arn_stats_scope *sc = r && i < HTTP_MAX_FILTER_STATS ? r->l4stats[i] : NULL;
		if (sc)
			arn_stats_gauge_add(sc, w->slot, ARN_CXL_active_connections, -1);
	}
	*held = 0;
}

/* ---- the connection manager's connections ---------------------------------------------- */

int http_l4_accept(struct http_conn *hc, const struct arn_cfg_filter_chain *fc, uint32_t *delay_ms)
{
	hc->l4_fc = fc; /* lives in the pinned listener */
	return http_l4_net_accept(hc->w, hc->hrt, fc, &hc->l4_held, &hc->l4_rbac_pending, delay_ms);
}

int http_l4_first_byte(struct http_conn *hc, uint32_t *delay_ms)
{
	hc->l4_rbac_pending = false;
	/* Plain text: nothing a rule reads changes after the first byte
	 * (no SNI, no certificate), so ONE_TIME_ON_FIRST_BYTE and CONTINUOUS
	 * decide alike and the filter runs once. */
	struct arn_rbac_input in = {
	    .src_addr = hc->raddr,
	    .direct_addr = hc->draddr,
	    .remote_addr = hc->raddr,
	    .dst_addr = hc->laddr,
	    .dst_port = hc->lport,
	};
	return http_l4_net_first_byte(hc->w, hc->hrt, hc->l4_fc, &in, delay_ms, NULL, NULL);
}

void http_l4_close(struct http_conn *hc)
{
	http_l4_net_close(hc->w, hc->hrt, hc->l4_fc, &hc->l4_held);
	hc->l4_fc = NULL;
}

/* Health check, RBAC and local_ratelimit, in the HCM's filter order, as
 * one entry of the HTTP filter chain (http_filter.h). */
/* The stream ends: an ext_authz check it waits for is cancelled, a fault
 * delay it waits out leaves active_faults (its timer is the request's
 * retry timer, stopped with the stream). */
static void l4_stream_end(struct http_stream *st)
{
	http_authz_stream_end(st);
	http_rls_stream_end(st);
	http_oauth2_stream_end(st);
	http_ext_proc_stream_end(st);
	if (st->res)
		fault_delay_over(st);
	if (st->res && st->res->jwks_wait)
		http_jwks_stream_end(st);
	http_buffer_stream_end(st);
	http_lua_stream_end(st);
}

/* The body a filter reads before the request goes on: the buffer
 * filter's, or ext_authz's with_request_body. */
static bool l4_body(struct http_stream *st, const char *data, size_t len)
{
	if (http_lua_streaming(st) && !http_buffer_reading(st)) {
		/* a Lua script before the reader waits in bodyChunks() or
		 * trailers(): the slice passes it first, as Envoy's decodeData
		 * walks the chain in order (the buffer filter feeds it itself,
		 * through its decode_xform) */
		const char *out = data;
		long k = http_lua_xform(st, (char *)(uintptr_t)data, len, false, &out);
		if (k < 0)
			return false;
		data = out;
		len = (size_t)k;
	}
	if (http_lua_reading(st))
		return http_lua_body(st, data, len);
	if (http_buffer_reading(st))
		return http_buffer_body(st, data, len);
	if (st->ext_proc && http_ext_proc_reading(st))
		return http_ext_proc_body(st, data, len); /* request_body_mode BUFFERED */
	return http_authz_body(st, data, len);
}

static void l4_body_end(struct http_stream *st)
{
	if (http_lua_streaming(st) && !http_buffer_reading(st)) {
		/* its end (and the trailers) to the Lua script before, first */
		const char *out = NULL;
		if (http_lua_xform(st, NULL, 0, true, &out) < 0)
			return;
	}
	if (http_lua_reading(st)) {
		http_lua_body_end(st);
		return;
	}
	if (http_buffer_reading(st))
		http_buffer_body_end(st);
	else if (st->ext_proc && http_ext_proc_reading(st))
		http_ext_proc_body_end(st);
	else
		http_authz_body_end(st);
}

const struct http_filter_ops http_l4_filter_ops = {
    .name = "l4",
    .active = l4_active,
    .decode_head = http_l4_filters,
    /* the buffer filter's body, ext_authz's with_request_body's */
    .decode_body = l4_body,
    .decode_end = l4_body_end,
    /* a Lua script's bodyChunks() / trailers() (st->req_xf) */
    .decode_xform = http_lua_xform,
    .encode_head_edits = http_l4_resp_edits,
    .stream_end = l4_stream_end,
};
