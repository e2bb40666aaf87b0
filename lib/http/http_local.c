/*
 * Answers given here rather than by an upstream: local replies (Envoy's
 * sendLocalReply: 404 NR, 503 NC/UH/UF/UO/UC, 504 UT, 400/431 for bad
 * requests, redirects, direct responses) and Envoy's health check filter,
 * with the draining that a failed health check brings (every response
 * closes its connection).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "arn_config.h"
#include "http_cresp.h"
#include "http_filter.h"
#include "http_grpc_stats.h"
#include "http_gw_stream.h"
#include "http_local.h"
#include "http_otel.h"
#include "http_router_filter.h"
#include "http_local_reply.h"
#include "http_stream.h"
#include "http_upstream.h"

/* ---- health checks and draining ---------------------------------------------------------- */

/*
 * After POST /healthcheck/fail every response closes its connection
 * ("connection: close"), as Envoy's drain manager makes the HTTP/1
 * connection manager do while health checks fail, so keep-alive clients
 * reconnect, which a load balancer that saw the failed health check sends
 * elsewhere. Counted once per connection in downstream_cx_drain_close.
 * Listeners with drain_type MODIFY_ONLY are left alone, as in Envoy.
 * Every response also asks whether its listener's drain closes it.
 */
void http_hc_drain_failed(struct http_conn *hc)
{
	if (hc->lsn && hc->lsn->drain_modify_only)
		return;
	hc->close_after = true;
	if (!hc->drain_counted) {
		hc->drain_counted = true;
		HTTP_INC(hc, downstream_cx_drain_close);
	}
}

/* Envoy's health check filter marks every other response while health
 * checks fail, so a downstream Envoy ejects this host at once. */
bool http_hc_fail_header(const struct http_stream *st, struct arn_h1_edit *e)
{
	const struct http_conn *hc = st->hc;
	if (!hc->hcm || !hc->hcm->health_check || (st->state & HTTP_S_HEALTH_CHECK) ||
	    !http_healthcheck_failed())
		return false;
	*e = (struct arn_h1_edit){.name = "x-envoy-immediate-health-check-fail",
				  .name_len = 35,
				  .value = "true",
				  .value_len = 4,
				  .op = ARN_H1_EDIT_SET};
	return true;
}

/* Pass-through mode with cache_time: remember the upstream's answer. */
void http_hc_cache_set(struct http_stream *st, unsigned status)
{
	struct http_conn *hc = st->hc;
	const struct arn_cfg_hc_filter *f = hc->hcm ? hc->hcm->health_check : NULL;
	if (!f || !f->pass_through || !f->cache_time_ms || !hc->hrt)
		return;
	__atomic_store_n(&hc->hrt->hc_cache_status, (uint16_t)status, __ATOMIC_RELAXED);
	__atomic_store_n(&hc->hrt->hc_cache_until_ms, hc->w->now_ms + f->cache_time_ms,
			 __ATOMIC_RELAXED);
}

static unsigned hc_cached(const struct http_conn *hc)
{
	const struct arn_cfg_hc_filter *f = hc->hcm->health_check;
	if (!f->pass_through || !f->cache_time_ms || !hc->hrt)
		return 0;
	if (__atomic_load_n(&hc->hrt->hc_cache_until_ms, __ATOMIC_RELAXED) <= hc->w->now_ms)
		return 0;
	return __atomic_load_n(&hc->hrt->hc_cache_status, __ATOMIC_RELAXED);
}

/* cluster_min_healthy_percentages, as Envoy: every named cluster must exist
 * and have at least that share of healthy or degraded hosts. */
static unsigned hc_clusters(const struct arn_cfg_hc_filter *f, const struct arn_cfg_gen *g,
			    const char **details)
{
	*details = "health_check_ok_cluster_healthy";
	for (size_t i = 0; i < f->n_min_healthy; i++) {
		const struct arn_cfg_hc_min_healthy *m = &f->min_healthy[i];
		struct arn_cfg_cluster_view v;
		if (!g || arn_cfg_cluster_resolve(g, &m->cluster, &v) != 0) {
			*details = "health_check_failed_no_cluster_found";
			return 503;
		}
		uint64_t total = 0, ok = 0;
		for (size_t p = 0; p < v.endpoints->n_priorities; p++) {
			const struct arn_cfg_priority *pr = &v.endpoints->priorities[p];
			for (size_t l = 0; l < pr->n_localities; l++)
				for (size_t k = 0; k < pr->localities[l].n_endpoints; k++) {
					uint8_t h = pr->localities[l].endpoints[k].health;
					total++;
					ok += h == ARN_CFG_HEALTH_UNKNOWN ||
					      h == ARN_CFG_HEALTH_HEALTHY ||
					      h == ARN_CFG_HEALTH_DEGRADED;
				}
		}
		if (total == 0) {
			if (m->percent == 0)
				continue;
			*details = "health_check_failed_cluster_empty";
			return 503;
		}
		if (100 * ok < total * m->percent) {
			*details = "health_check_failed_cluster_unhealthy";
			return 503;
		}
	}
	return 200;
}

/*
 * Envoy's HTTP health check filter: a request whose headers match is a
 * health check. Without pass-through it is answered here, never upstream:
 * 200, or 503 (flag LH) after /healthcheck/fail or when a cluster of
 * cluster_min_healthy_percentages is short of healthy hosts. With
 * pass-through it goes upstream unless health checks fail (503 here) or a
 * cached answer is fresh. @return true when answered.
 */
bool http_hc_filter(struct http_stream *st, const struct arn_cfg_gen *g,
		    const struct arn_cfg_request *req)
{
	struct http_conn *hc = st->hc;
	const struct arn_cfg_hc_filter *f = hc->hcm->health_check;
	if (!arn_cfg_headers_match(f->headers, f->n_headers, req))
		return false;
	st->state |= HTTP_S_HEALTH_CHECK;
	unsigned status = 200, cached = 0;
	const char *details = "health_check_ok";
	if (http_healthcheck_failed()) {
		status = 503;
		details = "health_check_failed";
	} else if (f->pass_through) {
		cached = hc_cached(hc);
		if (!cached)
			return false; /* the upstream answers */
		status = cached;
		details = "health_check_cached";
	} else if (f->n_min_healthy) {
		status = hc_clusters(f, g, &details);
	}
	uint32_t flags = status >= 200 && status < 300 ? 0 : ARN_RF_BIT(FAILED_LOCAL_HEALTH_CHECK);
	http_local_reply(st, status, NULL, 0, flags, details, NULL, 0);
	return true;
}

/* ---- local replies -------------------------------------------------------------------------- */

unsigned http_grpc_status(unsigned http)
{
	/* Envoy's Grpc::Utility::httpToGrpcStatus */
	switch (http) {
	case 400:
		return 13; /* INTERNAL */
	case 401:
		return 16; /* UNAUTHENTICATED */
	case 403:
		return 7; /* PERMISSION_DENIED */
	case 404:
		return 12; /* UNIMPLEMENTED */
	case 429:
	case 502:
	case 503:
	case 504:
		return 14; /* UNAVAILABLE */
	default:
		return 2; /* UNKNOWN (a 2xx too, as Envoy) */
	}
}

/* grpc-message is percent-encoded (gRPC over HTTP/2: printable ASCII but
 * '%' stays as it is). @return the length written to @p out. */
static size_t grpc_message(const char *s, size_t n, char *out, size_t cap)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t k = 0;
	for (size_t i = 0; i < n && k + 3 < cap; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x7f && c != '%') {
			out[k++] = (char)c;
		} else {
			out[k++] = '%';
			out[k++] = hex[c >> 4];
			out[k++] = hex[c & 15];
		}
	}
	return k;
}

static void local_reply(struct http_stream *st, unsigned status, const char *body, size_t blen,
			uint32_t flags, const char *details, const struct arn_h1_edit *extra,
			unsigned n_extra);

void http_local_reply(struct http_stream *st, unsigned status, const char *body, size_t blen,
		      uint32_t flags, const char *details, const struct arn_h1_edit *extra,
		      unsigned n_extra)
{
	struct http_conn *hc = st->hc;
	/* a custom_response filter's policy may answer instead (its own
	 * reply is direct: http_local_reply_direct) */
	if (hc->hrt && hc->hrt->cresp && !(st->state & HTTP_S_RESP_STARTED)) {
		st->flags |= flags;
		st->details = details;
		struct http_cresp_reply r;
		if (http_cresp_local(st, status, blen, extra, n_extra, &r)) {
			local_reply(st, r.status, r.body, r.blen, 0, r.details, r.e, r.n);
			return;
		}
	}
	local_reply(st, status, body, blen, flags, details, extra, n_extra);
}

void http_local_reply_direct(struct http_stream *st, unsigned status, const char *body, size_t blen,
			     uint32_t flags, const char *details, const struct arn_h1_edit *extra,
			     unsigned n_extra)
{
	local_reply(st, status, body, blen, flags, details, extra, n_extra);
}

/* The request's first x-request-id line (its index in @p m, -1: none)
 * into *@p first, and whether it keeps it as http_req_edits decides:
 * always without generate_request_id, else unless generated over it at
 * the edge (use_remote_address, an external client) without
 * preserve_external_request_id. Envoy's mutateRequestHeaders. */
static bool rid_keeps_own(const struct http_conn *hc, const struct arn_h1_msg *m, int *first)
{
	const struct arn_cfg_hcm *h = hc->hcm;
	int ri = -1;
	for (int i = 0; i < m->n_hdrs && ri < 0; i++)
		if (m->hdrs[i].id == ARN_H1_H_X_REQUEST_ID)
			ri = i;
	*first = ri;
	if (ri < 0)
		return false;
	if (!h->generate_request_id || !h->use_remote_address || h->preserve_external_request_id)
		return true;
	bool internal = false;
	http_client_addr(h, m, hc->raddr, &internal);
	return internal;
}

/* A generated id into @p st's text from the stream's random words (drawn
 * now unless routing drew them: all zero when not), as http_req_edits
 * makes one. @return it, or NULL when the text has no room. */
static char *rid_generate(struct http_stream *st)
{
	uint32_t at = st->text_len;
	if (at + HTTP_REQUEST_ID_LEN + 1 > HTTP_TEXT)
		return NULL;
	if (!X(st)->rid_hi && !X(st)->rid_lo) {
		X(st)->rid_hi = http_rand(st->hc->w);
		X(st)->rid_lo = http_rand(st->hc->w);
	}
	char *v = st->res->text + at;
	http_request_id_fmt(X(st)->rid_hi, X(st)->rid_lo, v);
	v[HTTP_REQUEST_ID_LEN] = 0;
	st->text_len = at + HTTP_REQUEST_ID_LEN + 1;
	st->request_id = v;
	st->request_id_len = HTTP_REQUEST_ID_LEN;
	return v;
}

void http_request_id_head(struct http_stream *st)
{
	struct arn_h1_msg *m = &st->req.m;
	if (st->request_id || !st->res || !st->hc->hcm || !st->hc->hcm->generate_request_id)
		return;
	int ri;
	if (rid_keeps_own(st->hc, m, &ri)) {
		st->request_id = m->hdrs[ri].value;
		st->request_id_len = m->hdrs[ri].value_len;
		st->rid_head = true;
		return;
	}
	/* a line for the id: the request's own one replaced, or one more,
	 * which the configuration always leaves room for (max_headers_count
	 * is at most ARN_CFG_MAX_HEADERS_COUNT, below HTTP_MAX_HDRS); where a
	 * head still has none (HTTP/2's Host added to a full one), the
	 * filters do not see it and the router generates it as before */
	if (ri < 0 && m->n_hdrs >= m->hdr_cap)
		return;
	char *v = rid_generate(st);
	if (!v)
		return; /* (the router's edits find no room either: 500) */
	/* the writer may no longer copy the block as it came */
	m->flags &= ~ARN_H1_F_FIELDS_WHOLE;
	if (ri < 0) {
		m->hdrs[m->n_hdrs++] = (struct arn_h1_header){.name = "x-request-id",
							      .name_len = 12,
							      .value = v,
							      .value_len = HTTP_REQUEST_ID_LEN,
							      .id = ARN_H1_H_X_REQUEST_ID};
	} else {
		/* Envoy's setRequestId replaces every line of the name: the
		 * first takes the id, the others go (as the router's SET
		 * drops them), the indexes after them moved */
		m->hdrs[ri].value = v;
		m->hdrs[ri].value_len = HTTP_REQUEST_ID_LEN;
		unsigned j = (unsigned)ri + 1;
		for (unsigned i = j; i < m->n_hdrs; i++) {
			if (m->hdrs[i].id == ARN_H1_H_X_REQUEST_ID)
				continue;
			if ((int)i == m->host_idx)
				m->host_idx = (int16_t)j;
			if ((int)i == m->upgrade_idx)
				m->upgrade_idx = (int16_t)j;
			m->hdrs[j++] = m->hdrs[i];
		}
		m->n_hdrs = (uint16_t)j;
	}
	st->rid_head = true;
}

/* The x-request-id Envoy's connection manager gives a request at its
 * head, for one answered here that has none yet (http_request_id_head
 * gives it only where something may read the head): http_req_edits'
 * rules (the client's own, or one generated from the words routing drew,
 * or drawn now for a request answered before it was routed), into the
 * stream's text, before the reply's edits, its log and its span read it. */
static void local_request_id(struct http_stream *st)
{
	struct http_conn *hc = st->hc;
	const struct arn_cfg_hcm *h = hc->hcm;
	if (st->request_id || !h || !st->res || !(st->state & HTTP_S_HEAD_DONE))
		return;
	const struct arn_h1_msg *m = &st->req.m;
	int ri;
	if (rid_keeps_own(hc, m, &ri)) {
		st->request_id = m->hdrs[ri].value;
		st->request_id_len = m->hdrs[ri].value_len;
		return;
	}
	if (h->generate_request_id)
		(void)rid_generate(st);
}

/* HCM tracing: the decision Envoy makes at the head
 * (mutateTracingRequestHeader), for a request answered before one was
 * made, in its id before the reply, its log and its span read it. Out of
 * line: only a tracing manager's replies come here. */
static void __attribute__((noinline)) local_trace(struct http_stream *st)
{
	struct http_conn *hc = st->hc;
	const struct arn_cfg_hcm *h = hc->hcm;
	if (!st->res || !(st->state & HTTP_S_HEAD_DONE))
		return;
	bool internal = false;
	if (h->use_remote_address)
		http_client_addr(h, &st->req.m, hc->raddr, &internal);
	http_otel_local(st, h->use_remote_address && !internal);
}

static void local_reply(struct http_stream *st, unsigned status, const char *body, size_t blen,
			uint32_t flags, const char *details, const struct arn_h1_edit *extra,
			unsigned n_extra)
{
	struct http_conn *hc = st->hc;
	st->flags |= flags;
	st->details = details;
	/* the id Envoy gives every request at its head, for the reply, its
	 * access log and its span */
	local_request_id(st);
	if (unlikely(hc->hcm && hc->hcm->tracing))
		local_trace(st);
	if (st->state & HTTP_S_RESP_STARTED) {
		/* too late for a reply: Envoy resets the stream */
		if (HS(hc))
			HTTP_INC(hc, rq_reset_after_downstream_response_started);
		http_up_detach(st);
		http_conn_abort(hc);
		return;
	}
	http_up_detach(st);
	http_timer_cancel(&st->route_timer);
	/* the stream idle timer runs on: the reply may be slow to go */
	http_timer_cancel(&st->hdr_timer);
	http_timer_cancel(&st->req_timer);
	if (st->res) {
		http_timer_cancel(&X(st)->retry_timer);
		http_timer_cancel(&X(st)->try_timer);
		http_timer_cancel(&X(st)->try_idle_timer);
	}
	st->state &= ~HTTP_S_RETRY_WAIT;
	/* (an ext_proc filter awaiting the response counts it at the
	 * stream's end: http_ext_proc_stream_end) */
	st->state |= HTTP_S_LOCAL;
	if (!(st->state & HTTP_S_HEAD_DONE) ||
	    (!(st->state & HTTP_S_REQ_DONE) && http_msg_has_body(&st->req.m)))
		hc->close_after = true;
	http_hc_drain(hc);
	struct arn_h1_edit more[MAX_EDITS], lre[MAX_EDITS];
	const struct http_lr *lr = hc->hrt ? hc->hrt->lr : NULL;
	if (lr) {
		/* before the filters' edits, as Envoy rewrites before the
		 * encoder filters see the reply */
		if (n_extra)
			memcpy(lre, extra, n_extra * sizeof(*extra));
		/* one slot stays for the health check header, one for a
		 * filter's; none when the caller's edits fill them (a route's
		 * many response_headers_to_add): a mapper that adds then
		 * overflows, as any edit that does not fit */
		unsigned room = n_extra + 2 < MAX_EDITS ? MAX_EDITS - 2 - n_extra : 0;
		int k = http_lr_rewrite(st, lr, &status, &body, &blen, lre + n_extra, room);
		if (k < 0) {
			/* without extra edits the mapper's always fit (above) */
			HTTP_INC(hc, rs_edit_overflow);
			local_reply(st, 500, NULL, 0, flags, "response_edits_overflow", NULL, 0);
			return;
		}
		extra = lre;
		n_extra += (unsigned)k;
	}
	if (st->rl_x || st->cors_origin ||
	    arn_cfg_hcm_has_filter(hc->hcm, ARN_CFG_HF_HEADER_MUTATION)) {
		/* a local_ratelimit filter let it through: x-ratelimit-* ride on
		 * any reply; the CORS filter allowed its Origin: its headers
		 * likewise; a header_mutation filter's response mutations (its
		 * own, or a route level's) too (Envoy's encodeHeaders runs on
		 * local replies too).
		 * One slot stays for the health check header. */
		int k = n_extra < MAX_EDITS - 1
			    ? http_filters_resp_edits(st, more + n_extra, MAX_EDITS - 1 - n_extra)
			    : -ENOSPC;
		st->rl_x = false;
		st->cors_origin = 0;
		if (k < 0) {
			/* never a reply without its headers (issue 12) */
			HTTP_INC(hc, rs_edit_overflow);
			local_reply(st, 500, NULL, 0, flags, "response_edits_overflow", NULL, 0);
			return;
		}
		if (n_extra)
			memcpy(more, extra, n_extra * sizeof(*extra));
		extra = more;
		n_extra += (unsigned)k;
	}
	if (n_extra < MAX_EDITS && http_hc_fail_header(st, &more[n_extra])) {
		if (n_extra && extra != more)
			memcpy(more, extra, n_extra * sizeof(*extra));
		extra = more;
		n_extra++;
	}
	/* the request's id, as Envoy's mutateResponseHeaders sets it on a
	 * local reply too (always_set_request_id_in_response, or an internal
	 * request's x-envoy-force-trace) */
	if (st->request_id &&
	    ((hc->hcm && hc->hcm->always_set_request_id_in_response) || st->rid_resp)) {
		if (n_extra >= MAX_EDITS) {
			/* never a reply without its headers (issue 12) */
			HTTP_INC(hc, rs_edit_overflow);
			local_reply(st, 500, NULL, 0, flags, "response_edits_overflow", NULL, 0);
			return;
		}
		if (n_extra && extra != more)
			memcpy(more, extra, n_extra * sizeof(*extra));
		extra = more;
		more[n_extra++] = http_request_id_edit(st);
	}
	/* HCM tracing: a route decorator's operation propagated */
	if (unlikely(hc->hcm && hc->hcm->tracing) && n_extra < MAX_EDITS &&
	    http_otel_resp_header(st, &more[n_extra])) {
		if (n_extra && extra != more)
			memcpy(more, extra, n_extra * sizeof(*extra));
		extra = more;
		n_extra++;
	}
	http_stream_set(st, HTTP_S_LOCAL_WAIT_END,
			!(st->state & HTTP_S_REQ_DONE) && !hc->close_after);
	/* A gRPC request is answered in gRPC, as Envoy's sendLocalReply does:
	 * 200 with content-type application/grpc, grpc-status from the HTTP
	 * status and grpc-message from the body, and no body (a
	 * trailers-only response): a gRPC client reads no HTTP status. */
	struct arn_h1_edit ge[MAX_EDITS];
	char gs[12], gm[512];
	if (status >= 200 && http_is_grpc(st) && n_extra + 3 <= MAX_EDITS) {
		unsigned code = http_grpc_status(status);
		int k = snprintf(gs, sizeof(gs), "%u", code);
		size_t ml = body ? grpc_message(body, blen, gm, sizeof(gm)) : 0;
		unsigned n = 0;
		for (unsigned i = 0; i < n_extra; i++) {
			if (extra[i].name_len == 11 &&
			    arn_h1_eq_nocase(extra[i].name, 11, "grpc-status", 11) &&
			    extra[i].value_len < sizeof(gs)) {
				/* a status the caller chose (the fault filter's
				 * grpc_status abort): not the HTTP status's */
				memcpy(gs, extra[i].value, extra[i].value_len);
				k = (int)extra[i].value_len;
				continue;
			}
			if (!(extra[i].name_len == 12 &&
			      arn_h1_eq_nocase(extra[i].name, 12, "content-type", 12)))
				ge[n++] = extra[i];
		}
		/* a gRPC-Web request's reply goes through the grpc_web
		 * filter's encodeHeaders in Envoy: its content-type */
		uint32_t ctl = 16;
		const char *ct = http_grpc_web_ctype(st, &ctl);
		ge[n++] = (struct arn_h1_edit){.name = "content-type",
					       .name_len = 12,
					       .value = ct ? ct : "application/grpc",
					       .value_len = ctl,
					       .op = ARN_H1_EDIT_SET};
		ge[n++] = (struct arn_h1_edit){.name = "grpc-status",
					       .name_len = 11,
					       .value = gs,
					       .value_len = (uint32_t)k,
					       .op = ARN_H1_EDIT_SET};
		if (ml)
			ge[n++] = (struct arn_h1_edit){.name = "grpc-message",
						       .name_len = 12,
						       .value = gm,
						       .value_len = (uint32_t)ml,
						       .op = ARN_H1_EDIT_SET};
		extra = ge;
		n_extra = n;
		status = 200;
		body = NULL;
		blen = 0;
		if (HS(hc))
			HTTP_INC(hc, downstream_rq_grpc_local_reply);
		http_grpc_stats_local(st, gs, (size_t)k);
	}
	struct http_reply r = {
	    .status = status,
	    .body = body,
	    .blen = blen,
	    .server = hc->hcm && hc->hcm->server_name ? hc->hcm->server_name : "envoy",
	    .extra = extra,
	    .n_extra = n_extra,
	    .close = hc->close_after,
	    .head_only = st->method == ARN_H1_M_HEAD,
	};
	if (hc->dn->codec->encode_reply(hc->dn, &r) != 0) {
		http_conn_abort(hc);
		return;
	}
	st->status = (uint16_t)status;
	st->state |= HTTP_S_RESP_STARTED | HTTP_S_RESP_DONE;
	st->tx_body = st->method == ARN_H1_M_HEAD ? 0 : blen;
	hc->again = true;
}

/* A local reply with the route's response_headers_to_add (direct responses,
 * redirects, and errors after a route was chosen, as Envoy applies them).
 * When they do not fit (text or edit slots), the reply is not sent without
 * them (issue 12: a response never leaves without its edits): a 500 with
 * none of the route's edits goes instead, counted in rs_edit_overflow. */
void http_local_reply_route(struct http_stream *st, unsigned status, const char *body, size_t blen,
			    uint32_t flags, const char *details, const char *location,
			    size_t loclen)
{
	struct http_conn *hc = st->hc;
	struct arn_h1_edit e[MAX_EDITS];
	unsigned n = 0;
	if (location)
		e[n++] = (struct arn_h1_edit){.name = "location",
					      .name_len = 8,
					      .value = location,
					      .value_len = (uint32_t)loclen,
					      .op = ARN_H1_EDIT_SET};
	if (st->route && st->res) {
		struct http_resp_ctx x = {
		    .hcm = hc->hcm,
		    .no_server = true, /* written by the local reply itself */
		    .rt = st->rt,
		    .vhost = st->vhost,
		    .route = st->route,
		    .wc = st->wc,
		    .service_ms = -1,
		    .subst_fill = http_stream_subst,
		    .subst_arg = st,
		    .text = st->res->text + st->text_len,
		    .text_cap = HTTP_TEXT - st->text_len,
		};
		/* one slot stays for local_reply's health check header */
		int k = http_resp_edits(&x, NULL, e + n, MAX_EDITS - 1 - n);
		if (k < 0) {
			HTTP_INC(hc, rs_edit_overflow);
			http_local_reply(st, 500, NULL, 0, flags, "response_edits_overflow", NULL,
					 0);
			return;
		}
		n += (unsigned)k;
		st->text_len += x.text_len;
	}
	http_local_reply(st, status, body, blen, flags, details, e, n);
}

void http_reset_reply(struct http_stream *st, unsigned status, const char *reason, uint32_t flags,
		      const char *details)
{
	char body[400];
	int k = snprintf(body, sizeof(body), "%s%s", HTTP_BODY_RESET, reason);
	if (k >= (int)sizeof(body))
		k = (int)sizeof(body) - 1;
	http_local_reply_route(st, status, body, (size_t)k, flags, details, NULL, 0);
}
