/*
 * HCM tracing with the OpenTelemetry tracer (http_otel.h). Followed:
 * Envoy 1.30's source/common/http/conn_manager_utility.cc
 * (mutateTracingRequestHeader), source/common/tracing/http_tracer_impl.cc
 * (the span's tags), source/extensions/request_id/uuid (the trace status
 * in the id's 15th character) and source/extensions/tracers/opentelemetry
 * (span_context_extractor.cc, tracer.cc: a malformed traceparent makes
 * no span; a parent's sampled flag decides; the batch of 5 spans or 5 s).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "arn_access_log.h"
#include "arn_config.h"
#include "arn_hex.h"
#include "arn_stats_envoy.h"
#include "arn_utf8.h"
#include "http_access_log.h"
#include "http_filter.h"
#include "http_otel.h"
#include "http_pb.h"
#include "http_grpc_unary.h"
#include "http_pbw.h"
#include "http_stream.h"
#include "http_subreq.h"
#include "http_zipkin.h"

/* ---- traceparent ------------------------------------------------------------------------ */


/* @p n hex digits at @p s into @p out (n / 2 bytes); false if one is not. */
static bool unhex(const char *s, size_t n, uint8_t *out)
{
	for (size_t i = 0; i < n; i += 2) {
		int a = arn_hexval(s[i]), b = arn_hexval(s[i + 1]);
		if (a < 0 || b < 0)
			return false;
		out[i / 2] = (uint8_t)(a << 4 | b);
	}
	return true;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

int http_otel_tp_parse(const char *v, size_t n, uint8_t trace_id[16], uint8_t parent_id[8],
		       bool *sampled)
{
	/* 55 bytes split on '-' into 4 non-empty fields of 2, 32, 16, 2:
	 * the dashes are at 2, 35 and 52 and nowhere else */
	if (n != HTTP_OTEL_TP_LEN || v[2] != '-' || v[35] != '-' || v[52] != '-')
		return -EINVAL;
	uint8_t ver, flags;
	if (!unhex(v, 2, &ver) || !unhex(v + 3, 32, trace_id) || !unhex(v + 36, 16, parent_id) ||
	    !unhex(v + 53, 2, &flags))
		return -EINVAL;
	if (all_zero(trace_id, 16) || all_zero(parent_id, 8))
		return -EINVAL;
	*sampled = flags & 1;
	return 0;
}

static const char hexd[] = "0123456789abcdef";

static void hex_out(char *o, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		o[2 * i] = hexd[p[i] >> 4];
		o[2 * i + 1] = hexd[p[i] & 15];
	}
}

static void tp_fmt_id(struct http_otel_span *sp, const uint8_t id[8])
{
	char *o = sp->tp;
	memcpy(o, "00-", 3);
	hex_out(o + 3, sp->trace_id, 16);
	o[35] = '-';
	hex_out(o + 36, id, 8);
	o[52] = '-';
	o[53] = '0';
	o[54] = sp->sampled ? '1' : '0';
	o[55] = 0;
}

void http_otel_tp_fmt(struct http_otel_span *sp)
{
	tp_fmt_id(sp, sp->span_id);
}

/* ---- the decision ------------------------------------------------------------------------ */

#define RID_UUID_LEN 36
#define RID_TRACE_POS 14

enum http_otel_status http_otel_rid_status(const char *rid, size_t n)
{
	if (!rid || n != RID_UUID_LEN)
		return HTTP_OTEL_NO_TRACE;
	switch (rid[RID_TRACE_POS]) {
	case '9':
		return HTTP_OTEL_SAMPLED;
	case 'a':
		return HTTP_OTEL_FORCED;
	case 'b':
		return HTTP_OTEL_CLIENT;
	default:
		return HTTP_OTEL_NO_TRACE;
	}
}

static const char status_char[] = {'4', '9', 'a', 'b'};

/* UUIDRequestIDExtension::getInteger: the id's first 8 characters as hex */
static bool rid_integer(const char *rid, size_t n, uint64_t *v)
{
	if (!rid || n < 8)
		return false;
	uint64_t x = 0;
	for (int i = 0; i < 8; i++) {
		int d = arn_hexval(rid[i]);
		if (d < 0)
			return false;
		x = x << 4 | (uint64_t)d;
	}
	*v = x;
	return true;
}

enum http_otel_status http_otel_decide(const struct arn_cfg_tracing *t,
				       const struct arn_cfg_route_trace *rt, const char *rid,
				       size_t n, bool client_trace_id, bool force_trace,
				       uint64_t rnd, bool *changed)
{
	enum http_otel_status was = http_otel_rid_status(rid, n), s = was;
	*changed = false;
	uint64_t v;
	if (!rid_integer(rid, n, &v))
		return was; /* no id, or not one Envoy reads: left as it is */
	uint64_t result = v % 10000;
	const struct arn_cfg_fraction *cs = &t->client_sampling, *rs = &t->random_sampling,
				      *os = &t->overall_sampling;
	if (rt) {
		if (rt->client_sampling.denominator)
			cs = &rt->client_sampling;
		if (rt->random_sampling.denominator)
			rs = &rt->random_sampling;
		if (rt->overall_sampling.denominator)
			os = &rt->overall_sampling;
	}
	if (s == HTTP_OTEL_NO_TRACE) {
		if (client_trace_id && arn_cfg_fraction_hit(cs, rnd))
			s = HTTP_OTEL_CLIENT;
		else if (force_trace)
			s = HTTP_OTEL_FORCED;
		else if (arn_cfg_fraction_hit(rs, result))
			s = HTTP_OTEL_SAMPLED;
	}
	if (!arn_cfg_fraction_hit(os, result))
		s = HTTP_OTEL_NO_TRACE;
	/* setTraceReason writes only into a UUID-long id */
	if (n != RID_UUID_LEN)
		return HTTP_OTEL_NO_TRACE;
	*changed = s != was;
	return s;
}

/* ---- OTLP bytes, forwards ------------------------------------------------------------------- */

/* KeyValue{key, value: AnyValue{string_value}} as field @p field */
static size_t kv_size(const struct http_otel_kv *kv)
{
	size_t any = 1 + pb_vsize(kv->vl) + kv->vl;
	return 1 + pb_vsize(kv->kl) + kv->kl + 1 + pb_vsize(any) + any;
}

static void f_kv(struct pbw *f, uint32_t field, const struct http_otel_kv *kv)
{
	size_t any = 1 + pb_vsize(kv->vl) + kv->vl;
	pbw_tag(f, field, 2);
	pbw_varint(f, kv_size(kv));
	pbw_utf8(f, 1, kv->k, kv->kl);
	pbw_tag(f, 2, 2);
	pbw_varint(f, any);
	pbw_utf8(f, 1, kv->v, kv->vl);
}

/* Span{trace_id, span_id, trace_state, parent_span_id (NULL: none), name,
 * kind (2 SERVER, 3 CLIENT), start, end, attributes} */
static size_t span_encode(uint8_t *out, size_t cap, const struct http_otel_span *sp,
			  const uint8_t *id, const uint8_t *parent, unsigned kind, const char *name,
			  size_t name_len, uint64_t start_ns, uint64_t end_ns,
			  const struct http_otel_kv *kv, unsigned n)
{
	struct pbw f = {out, 0, cap, false};
	pbw_bytes(&f, 1, sp->trace_id, 16);
	pbw_bytes(&f, 2, id, 8);
	if (sp->tracestate_len)
		pbw_utf8(&f, 3, sp->tracestate, sp->tracestate_len);
	if (parent)
		pbw_bytes(&f, 4, parent, 8);
	pbw_utf8(&f, 5, name, name_len);
	pbw_tag(&f, 6, 0);
	pbw_varint(&f, kind);
	pbw_fixed64(&f, 7, start_ns);
	pbw_fixed64(&f, 8, end_ns);
	for (unsigned i = 0; i < n; i++)
		f_kv(&f, 9, &kv[i]);
	return f.err ? 0 : f.n;
}

size_t http_otel_span_encode(uint8_t *out, size_t cap, const struct http_otel_span *sp,
			     const char *name, size_t name_len, uint64_t start_ns, uint64_t end_ns,
			     const struct http_otel_kv *kv, unsigned n)
{
	return span_encode(out, cap, sp, sp->span_id, sp->has_parent ? sp->parent_id : NULL,
			   2 /* SPAN_KIND_SERVER */, name, name_len, start_ns, end_ns, kv, n);
}

size_t http_otel_up_span_encode(uint8_t *out, size_t cap, const struct http_otel_span *sp,
				const char *name, size_t name_len, uint64_t start_ns,
				uint64_t end_ns, const struct http_otel_kv *kv, unsigned n)
{
	/* Envoy's spawnChild: the server span's trace and tracestate, its
	 * span the parent; an upstream span is a CLIENT one */
	return span_encode(out, cap, sp, sp->up_id, sp->span_id, 3 /* SPAN_KIND_CLIENT */, name,
			   name_len, start_ns, end_ns, kv, n);
}

size_t http_otel_export_encode(uint8_t *out, size_t cap, const char *svc, size_t svc_len,
			       const uint8_t *spans, size_t len)
{
	/* ExportTraceServiceRequest{1: ResourceSpans{1: Resource{1:
	 * KeyValue service.name}, 2: ScopeSpans{2: spans}}} */
	struct http_otel_kv sn = {"service.name", svc, 12, (uint32_t)svc_len};
	size_t kvn = kv_size(&sn);
	size_t res = 1 + pb_vsize(kvn) + kvn;
	size_t scope = len;
	size_t rs = 1 + pb_vsize(res) + res + 1 + pb_vsize(scope) + scope;
	size_t req = 1 + pb_vsize(rs) + rs;
	if (req > UINT32_MAX)
		return 0;
	struct pbw f = {out, 0, cap, false};
	uint8_t hdr[5] = {0, (uint8_t)(req >> 24), (uint8_t)(req >> 16), (uint8_t)(req >> 8),
			  (uint8_t)req};
	pbw_raw(&f, hdr, 5);
	pbw_tag(&f, 1, 2);
	pbw_varint(&f, rs);
	pbw_tag(&f, 1, 2);
	pbw_varint(&f, res);
	f_kv(&f, 1, &sn);
	pbw_tag(&f, 2, 2);
	pbw_varint(&f, scope);
	pbw_raw(&f, spans, len);
	return f.err ? 0 : f.n;
}

/* ---- per request ---------------------------------------------------------------------------- */

/* The first line of header @p name (@p nl bytes) in @p m's head
 * (arn_h1_find), or NULL. */
static const struct arn_h1_header *hdr_find(const struct arn_h1_msg *m, const char *name, size_t nl)
{
	int k = arn_h1_find(m, name, nl, 0);
	return k >= 0 ? &m->hdrs[k] : NULL;
}

static uint64_t otel_rand(struct http_worker *w);

static uint64_t wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void rand_bytes(struct http_worker *w, uint8_t *p, size_t n)
{
	while (n) {
		uint64_t r = otel_rand(w);
		size_t k = n < 8 ? n : 8;
		memcpy(p, &r, k);
		p += k;
		n -= k;
	}
}

/* What a tracer does its own way (the rest of this file is both
 * tracers': the decision, the tags, the decorator, the upstream spans,
 * the worker's queue and its flush). */
struct http_otel_worker;
struct tracer_ops {
	/* The span's context from the request (@p traced: the decision):
	 * its ids, parent and sampled flag in st->res->otel. @return 0, or
	 * -EINVAL for a malformed context (Envoy's NullSpan: no span). */
	int (*start)(struct http_stream *st, const struct arn_cfg_tracing *t, bool traced);
	/* The upstream request's propagation headers for span @p id (its
	 * parent @p parent, NULL: none): at most max_inject edits into @p e. */
	unsigned (*inject)(struct http_otel_span *sp, const uint8_t id[8], const uint8_t *parent,
			   struct arn_h1_edit *e);
	unsigned max_inject;
	/* One finished span's bytes (kind CLIENT with @p client): its
	 * length in @p out (@p cap), 0 when it does not fit. */
	size_t (*span)(uint8_t *out, size_t cap, const struct arn_cfg_tracing *t,
		       const struct http_otel_span *sp, const uint8_t id[8], const uint8_t *parent,
		       bool client, const char *name, size_t name_len, uint64_t start_ns,
		       uint64_t end_ns, const struct http_otel_kv *kv, unsigned n);
	/* The queue's bytes a span of @p len takes after @p qn others, and
	 * its appending (the room checked). */
	size_t (*need)(size_t len, uint32_t qn);
	void (*append)(struct http_otel_worker *o, const uint8_t *span, size_t len);
	/* The report of the queue's @p n spans of @p t (the queue's pin
	 * already the report's; export_over() when it is over). */
	void (*report)(struct http_otel_worker *o, const struct arn_cfg_tracing *t, uint32_t n);
	/* an unnamed request's span: the request's authority, else "ingress" */
	bool name_authority;
	/* its counters: the scope, its spans_dropped and timer_flushed */
	struct arn_stats_scope **stats;
	unsigned dropped, timer;
};

static const struct tracer_ops otel_ops, zipkin_ops;

static const struct tracer_ops *tracer_of(const struct arn_cfg_tracing *t)
{
	return t->tracer == ARN_CFG_TRACER_ZIPKIN ? &zipkin_ops : &otel_ops;
}

/* The OpenTelemetry tracer's span (span_context_extractor.cc,
 * tracer.cc): the client's traceparent (and tracestate) its parent, else
 * a new trace sampled by the decision; a new span id either way. */
static int otel_start(struct http_stream *st, const struct arn_cfg_tracing *t, bool traced)
{
	struct http_worker *w = st->hc->w;
	const struct arn_h1_msg *m = &st->req.m;
	struct http_otel_span *sp = &st->res->otel;
	(void)t;
	const struct arn_h1_header *tp = hdr_find(m, "traceparent", 11);
	if (tp) {
		if (http_otel_tp_parse(tp->value, tp->value_len, sp->trace_id, sp->parent_id,
				       &sp->sampled) != 0)
			return -EINVAL;
		sp->has_parent = true;
		const struct arn_h1_header *ts = hdr_find(m, "tracestate", 10);
		if (ts) {
			sp->tracestate = ts->value;
			sp->tracestate_len = ts->value_len;
		}
	} else {
		rand_bytes(w, sp->trace_id, 16);
		sp->sampled = traced;
	}
	rand_bytes(w, sp->span_id, 8);
	return 0;
}

/* traceparent with span @p id, the parent's tracestate (or none) */
static unsigned otel_inject(struct http_otel_span *sp, const uint8_t id[8], const uint8_t *parent,
			    struct arn_h1_edit *e)
{
	(void)parent;
	unsigned n = 0;
	tp_fmt_id(sp, id);
	e[n++] = (struct arn_h1_edit){.op = ARN_H1_EDIT_SET,
				      .id1 = ARN_H1_H_OTHER + 1,
				      .name = "traceparent",
				      .name_len = 11,
				      .value = sp->tp,
				      .value_len = HTTP_OTEL_TP_LEN};
	if (sp->tracestate_len)
		e[n++] = (struct arn_h1_edit){.op = ARN_H1_EDIT_SET,
					      .id1 = ARN_H1_H_OTHER + 1,
					      .name = "tracestate",
					      .name_len = 10,
					      .value = sp->tracestate,
					      .value_len = sp->tracestate_len};
	else
		e[n++] = (struct arn_h1_edit){.op = ARN_H1_EDIT_REMOVE,
					      .id1 = ARN_H1_H_OTHER + 1,
					      .name = "tracestate",
					      .name_len = 10};
	return n;
}

static size_t otel_span(uint8_t *out, size_t cap, const struct arn_cfg_tracing *t,
			const struct http_otel_span *sp, const uint8_t id[8], const uint8_t *parent,
			bool client, const char *name, size_t name_len, uint64_t start_ns,
			uint64_t end_ns, const struct http_otel_kv *kv, unsigned n)
{
	(void)t;
	return span_encode(out, cap, sp, id, parent, client ? 3 /* SPAN_KIND_CLIENT */ : 2, name,
			   name_len, start_ns, end_ns, kv, n);
}

static unsigned zipkin_inject(struct http_otel_span *sp, const uint8_t id[8], const uint8_t *parent,
			      struct arn_h1_edit *e)
{
	return http_zipkin_inject(sp, id, parent, sp->tp, e);
}

static size_t zipkin_span(uint8_t *out, size_t cap, const struct arn_cfg_tracing *t,
			  const struct http_otel_span *sp, const uint8_t id[8],
			  const uint8_t *parent, bool client, const char *name, size_t name_len,
			  uint64_t start_ns, uint64_t end_ns, const struct http_otel_kv *kv,
			  unsigned n)
{
	return http_zipkin_span_json((char *)out, cap, sp, id, parent, client,
				     t->zk_shared_span_context, name, name_len, t->service_name,
				     t->service_name_len, start_ns / 1000,
				     (end_ns - start_ns) / 1000, kv, n);
}

/* The Zipkin tracer's span of the request (Envoy's zipkin Driver::
 * startSpan and Tracer::startSpan): from its B3 context, with
 * shared_span_context the client's span id (its parent the client's
 * parent), else a new one whose parent is the client's; without one a
 * root span whose id is its trace id's low half. @p traced: the
 * decision. @return 0, or -EINVAL for a malformed context. */
static int zipkin_start(struct http_stream *st, const struct arn_cfg_tracing *t, bool traced)
{
	struct http_worker *w = st->hc->w;
	const struct arn_h1_msg *m = &st->req.m;
	struct http_otel_span *sp = &st->res->otel;
	struct http_b3_in in = {0};
	const struct arn_h1_header *h;
#define B3H(field, name)                                                                           \
	if ((h = hdr_find(m, name, sizeof(name) - 1)) != NULL) {                                   \
		in.field = h->value;                                                               \
		in.field##_len = h->value_len;                                                     \
	}
	B3H(b3, "b3");
	B3H(trace_id, "x-b3-traceid");
	B3H(span_id, "x-b3-spanid");
	B3H(parent_id, "x-b3-parentspanid");
	B3H(sampled, "x-b3-sampled");
#undef B3H
	struct http_b3 b;
	int rc = http_zipkin_b3_parse(&in, traced, &b);
	if (rc < 0)
		return rc;
	sp->sampled = b.sampled;
	if (rc == 0) {
		memset(sp->trace_id, 0, 8);
		rand_bytes(w, sp->trace_id + 8, 8);
		if (t->zk_trace_id_128bit) {
			rand_bytes(w, sp->trace_id, 8);
			sp->t128 = true;
		}
		memcpy(sp->span_id, sp->trace_id + 8, 8);
		return 0;
	}
	memcpy(sp->trace_id, b.trace_id, 16);
	sp->t128 = b.t128;
	if (t->zk_shared_span_context) {
		memcpy(sp->span_id, b.span_id, 8);
		sp->has_parent = !all_zero(b.parent_id, 8);
		memcpy(sp->parent_id, b.parent_id, 8);
	} else {
		rand_bytes(w, sp->span_id, 8);
		memcpy(sp->parent_id, b.span_id, 8);
		sp->has_parent = true;
	}
	return 0;
}

/* The request's trace decision and span (Envoy's traceRequest): @p rid
 * the x-request-id it has (NULL: none). Sets st->otel (a span) or
 * st->otel_bad (a malformed traceparent: Envoy's NullSpan, none). */
static void start(struct http_stream *st, bool edge, const char *rid, uint32_t rid_len)
{
	struct http_conn *hc = st->hc;
	struct http_worker *w = hc->w;
	const struct arn_cfg_tracing *t = hc->hcm->tracing;
	const struct arn_h1_msg *m = &st->req.m;
	struct http_otel_span *sp = &st->res->otel;
	/* an ingress request's x-envoy-decorator-operation names its span
	 * (and is not sent on) */
	const struct arn_h1_header *op = hdr_find(m, "x-envoy-decorator-operation", 27);
	sp->op = op ? op->value : NULL;
	sp->op_len = op ? op->value_len : 0;
	sp->op_hdr = op != NULL;
	sp->has_parent = false;
	sp->tracestate = NULL;
	sp->tracestate_len = 0;
	sp->up_open = false;
	sp->t128 = false;
	bool changed = false;
	enum http_otel_status s = http_otel_decide(
	    t, st->route ? st->route->trace : NULL, rid, rid_len,
	    hdr_find(m, "x-client-trace-id", 17) != NULL,
	    !edge && hdr_find(m, "x-envoy-force-trace", 19) != NULL, otel_rand(w), &changed);
	sp->status = (uint8_t)s;
	sp->changed = changed;
	if (tracer_of(t)->start(st, t, s != HTTP_OTEL_NO_TRACE) != 0)
		st->otel_bad = true; /* a malformed context: no span */
	else
		st->otel = true;
}

int http_otel_req_edits(struct http_stream *st, bool edge, const char **rid, uint32_t *rid_len,
			char *text, size_t text_cap, uint32_t *text_len, struct arn_h1_edit *e,
			unsigned cap)
{
	struct http_otel_span *sp = &st->res->otel;
	const struct arn_cfg_tracing *t = st->hc->hcm->tracing;
	const struct tracer_ops *ops = tracer_of(t);
	unsigned n = 0;
	if (cap < 2 + ops->max_inject)
		return -ENOSPC;
	if (!st->otel && !st->otel_bad) /* the first attempt decides */
		start(st, edge, *rid, *rid_len);
	if (sp->changed && *rid && *rid_len == RID_UUID_LEN) {
		char *at = (char *)(uintptr_t)*rid;
		if (at >= text && at < text + *text_len) {
			at[RID_TRACE_POS] = status_char[sp->status]; /* generated here */
		} else {
			if ((size_t)*text_len + RID_UUID_LEN + 1 > text_cap)
				return -ENOSPC;
			char *v = text + *text_len;
			memcpy(v, *rid, RID_UUID_LEN);
			v[RID_TRACE_POS] = status_char[sp->status];
			v[RID_UUID_LEN] = 0;
			*text_len += RID_UUID_LEN + 1;
			e[n++] = (struct arn_h1_edit){.op = ARN_H1_EDIT_SET,
						      .id1 = ARN_H1_H_X_REQUEST_ID + 1,
						      .name = "x-request-id",
						      .name_len = 12,
						      .value = v,
						      .value_len = RID_UUID_LEN};
			*rid = v;
		}
	}
	if (sp->op_hdr)
		e[n++] = (struct arn_h1_edit){.op = ARN_H1_EDIT_REMOVE,
					      .id1 = ARN_H1_H_OTHER + 1,
					      .name = "x-envoy-decorator-operation",
					      .name_len = 27};
	if (!st->otel)
		return (int)n;
	if (t->spawn_upstream_span) {
		/* Envoy's UpstreamRequest: a child span per attempt, whose id
		 * the upstream's traceparent carries (injectContext) */
		if (sp->up_open) /* (an attempt not ended: ended now) */
			http_otel_attempt_end(st);
		rand_bytes(st->hc->w, sp->up_id, 8);
		sp->up_attempt = st->attempts;
		sp->up_start_ns = wall_ns();
		sp->up_open = true;
	}
	/* the span's ids, or the attempt's (its parent the request's span) */
	const uint8_t *id = sp->up_open ? sp->up_id : sp->span_id;
	const uint8_t *parent = sp->up_open ? sp->span_id : sp->has_parent ? sp->parent_id : NULL;
	return (int)(n + ops->inject(sp, id, parent, e + n));
}

void http_otel_local(struct http_stream *st, bool edge)
{
	const struct arn_cfg_hcm *h = st->hc->hcm;
	if (!h || !h->tracing || !st->res || st->otel || st->otel_bad)
		return;
	start(st, edge, st->request_id, st->request_id_len);
	const struct http_otel_span *sp = &st->res->otel;
	if (!sp->changed || !st->request_id || st->request_id_len != RID_UUID_LEN)
		return;
	char *text = st->res->text;
	char *at = (char *)(uintptr_t)st->request_id;
	if (at < text || at >= text + st->text_len) {
		/* the client's: copied, as http_otel_req_edits sets it anew */
		if ((size_t)st->text_len + RID_UUID_LEN + 1 > HTTP_TEXT)
			return;
		at = text + st->text_len;
		memcpy(at, st->request_id, RID_UUID_LEN);
		at[RID_UUID_LEN] = 0;
		st->text_len += RID_UUID_LEN + 1;
		st->request_id = at;
	}
	at[RID_TRACE_POS] = status_char[sp->status];
}

/* ---- the worker's queue and exporter ------------------------------------------------------- */

#define OTEL_PATH "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
#define OTEL_SPAN_MAX (16 * 1024) /* one span's bytes; a longer one is dropped */
#define OTEL_OUT_MAX (HTTP_OTEL_QUEUE_BYTES + ARN_CFG_TRACE_TAG_VALUE_MAX + 64)

struct http_otel_worker {
	/* the sub-requests' connection: only its worker and local address
	 * are read (http_subreq.c) */
	struct http_conn hc;
	struct http_subreq sr;
	struct http_timer timer;
	/* the queued spans' HCM tracing, in the pinned listener lsn */
	const struct arn_cfg_listener *lsn;
	const struct arn_cfg_tracing *t;
	/* the export in flight's, pinned until it is over */
	const struct arn_cfg_listener *out_lsn;
	struct http_subreq_header h[HTTP_GRPC_CALL_HDRS(ARN_CFG_TRACE_MD_MAX)];
	struct http_grpc_head hd; /* OTLP's export's (h) */
	uint64_t rng[2];	  /* otel_rand's */
	uint32_t qn;
	size_t qlen, outlen;
	bool busy;
	/* the queued spans' tracer (the last's, once they went) */
	const struct tracer_ops *ops;
	int grpc_status;	    /* Zipkin: the report's HTTP status (-1: none yet) */
	struct http_grpc_unary ex; /* OTLP's export */
	uint8_t span[OTEL_SPAN_MAX];
	uint8_t q[HTTP_OTEL_QUEUE_BYTES];
	uint8_t out[OTEL_OUT_MAX];
};

/* Tracing's ids and client sampling draw from the worker's own
 * generator for them (xorshift128+, seeded at start from getrandom):
 * turning tracing on shifts no load balancer's or retry's draws. */
static uint64_t otel_rand(struct http_worker *w)
{
	uint64_t *r = w->otel->rng;
	uint64_t s1 = r[0];
	const uint64_t s0 = r[1];
	r[0] = s0;
	s1 ^= s1 << 23;
	r[1] = s1 ^ s0 ^ (s1 >> 17) ^ (s0 >> 26);
	return r[1] + s0;
}

static struct arn_stats_scope *g_otel_stats, *g_zipkin_stats;

static char g_node_id[256], g_zone[256];
static uint32_t g_node_id_len, g_zone_len;

void http_otel_module_init(const char *node_id, const char *zone, size_t zone_len)
{
	size_t n = node_id ? strlen(node_id) : 0;
	g_node_id_len = (uint32_t)(n < sizeof(g_node_id) ? n : sizeof(g_node_id) - 1);
	if (g_node_id_len)
		memcpy(g_node_id, node_id, g_node_id_len);
	g_zone_len = (uint32_t)(zone_len < sizeof(g_zone) ? zone_len : sizeof(g_zone) - 1);
	if (g_zone_len)
		memcpy(g_zone, zone, g_zone_len);
	if (!g_otel_stats)
		g_otel_stats = arn_stats_scope_get(&arn_stats_otel_schema, NULL, NULL);
	if (!g_zipkin_stats)
		g_zipkin_stats = arn_stats_scope_get(&arn_stats_zipkin_schema, NULL, NULL);
}

static void otel_count(struct http_worker *w, unsigned stat, uint64_t n)
{
	if (g_otel_stats && n)
		arn_stats_add(g_otel_stats, w->slot, stat, n);
}

static void zipkin_count(struct http_worker *w, unsigned stat, uint64_t n)
{
	if (g_zipkin_stats && n)
		arn_stats_add(g_zipkin_stats, w->slot, stat, n);
}

/* Counter @p stat of @p ops's tracer (its scope). */
static void tracer_count(struct http_worker *w, const struct tracer_ops *ops, unsigned stat,
			 uint64_t n)
{
	if (*ops->stats && n)
		arn_stats_add(*ops->stats, w->slot, stat, n);
}

static void export_over(struct http_otel_worker *o, bool ok)
{
	if (!ok)
		otel_count(o->hc.w, ARN_OTEL_exports_failed, 1);
	o->busy = false;
	if (o->out_lsn)
		arn_cfg_unpin(o->out_lsn);
	o->out_lsn = NULL;
}

/* OTLP's export is over (http_grpc_unary) */
static void ex_done(struct http_grpc_unary *u, bool ok)
{
	export_over(OWNER(u, struct http_otel_worker, ex), ok);
}

/* Zipkin's report (Envoy's ReporterImpl::onSuccess / onFailure): 202
 * is sent, another status dropped, a failure failed. */
static void zk_head(struct http_subreq *sr, const struct arn_h1_msg *m)
{
	struct http_otel_worker *o = sr->user;
	o->grpc_status = m->status;
}

static void zk_end(struct http_subreq *sr)
{
	struct http_otel_worker *o = sr->user;
	zipkin_count(o->hc.w,
		     o->grpc_status == 202 ? ARN_ZIPKIN_reports_sent : ARN_ZIPKIN_reports_dropped,
		     1);
	export_over(o, true);
}

static void zk_failed(struct http_subreq *sr, const char *why)
{
	struct http_otel_worker *o = sr->user;
	(void)why;
	zipkin_count(o->hc.w, ARN_ZIPKIN_reports_failed, 1);
	export_over(o, true);
}

/* the report's answer (Envoy reads none of it) */
static void zk_body(struct http_subreq *sr, const char *d, size_t n)
{
	(void)sr, (void)d, (void)n;
}

static const struct http_subreq_ops zk_ops = {
    .on_head = zk_head,
    .on_body = zk_body,
    .on_end = zk_end,
    .on_failed = zk_failed,
};

/* Zipkin's report of the queued spans: a JSON array POSTed to
 * collector_endpoint with collector_hostname as Host, timing out after
 * Envoy's tracing.zipkin.request_timeout (5 s). */
static void zipkin_report(struct http_otel_worker *o, const struct arn_cfg_tracing *t, uint32_t n)
{
	struct http_worker *w = o->hc.w;
	size_t len = 0;
	if (o->qlen + 2 <= sizeof(o->out)) {
		o->out[0] = '[';
		memcpy(o->out + 1, o->q, o->qlen);
		o->out[o->qlen + 1] = ']';
		len = o->qlen + 2;
	}
	zipkin_count(w, ARN_ZIPKIN_spans_sent, n);
	if (!len) {
		zipkin_count(w, ARN_ZIPKIN_spans_dropped, n);
		export_over(o, true);
		return;
	}
	o->h[0] = (struct http_subreq_header){"content-type", "application/json", 12, 16};
	memset(&o->sr, 0, sizeof(o->sr));
	o->sr.host = t->zk_host;
	o->sr.host_len = t->zk_host_len;
	o->grpc_status = -1;
	o->outlen = len;
	const struct arn_cfg_gen *g = w->gen_slot ? arn_config_gen_at(w->gen_slot) : NULL;
	int rc = http_subreq_start(&o->sr, &o->hc, g, &t->cluster, t->zk_path, t->zk_path_len, o->h,
				   1, (const char *)o->out, len, HTTP_OTEL_FLUSH_MS, &zk_ops, o);
	if (rc != 0) {
		zipkin_count(w,
			     rc == -ENOENT ? ARN_ZIPKIN_reports_skipped_no_cluster
					   : ARN_ZIPKIN_reports_failed,
			     1);
		export_over(o, true);
	}
}

/* The queue lets go of its spans' configuration (none wait). */
static void queue_release(struct http_otel_worker *o)
{
	if (o->lsn)
		arn_cfg_unpin(o->lsn);
	o->lsn = NULL;
	o->t = NULL;
	o->qn = 0;
	o->qlen = 0;
}

/* OTLP's export of the queue's @p n spans: one ExportTraceServiceRequest
 * in a unary gRPC call to the envoy_grpc cluster. */
static void otel_report(struct http_otel_worker *o, const struct arn_cfg_tracing *t, uint32_t n)
{
	struct http_worker *w = o->hc.w;
	size_t len = http_otel_export_encode(o->out, sizeof(o->out), t->service_name,
					     t->service_name_len, o->q, o->qlen);
	if (!len) {
		otel_count(w, ARN_OTEL_spans_dropped, n);
		export_over(o, true);
		return;
	}
	http_grpc_unary_init(&o->ex, ex_done);
	o->outlen = len;
	struct http_grpc_target tg = {&t->cluster,   t->authority, t->authority_len,
				      t->timeout_ms, t->md,	   t->n_md};
	o->hd.h = o->h;
	/* an export waits at most its timeout, else the flush interval: a
	 * collector that never answers holds one export, not the queue */
	uint32_t tmo = t->timeout_ms ? t->timeout_ms : HTTP_OTEL_FLUSH_MS;
	int rc = http_grpc_call_start(&o->sr, &o->hc, &tg, OTEL_PATH, sizeof(OTEL_PATH) - 1, &o->hd,
				      (const char *)o->out, len, false, tmo, &http_grpc_unary_ops,
				      &o->ex);
	if (rc != 0) {
		otel_count(w, ARN_OTEL_spans_dropped, n);
		export_over(o, false);
		return;
	}
	otel_count(w, ARN_OTEL_spans_sent, n);
}

/* OTLP's queue: ScopeSpans.spans fields (tag, length, span) */
static size_t otel_need(size_t len, uint32_t qn)
{
	(void)qn;
	return 1 + pb_vsize(len) + len;
}

static void otel_append(struct http_otel_worker *o, const uint8_t *span, size_t len)
{
	struct pbw f = {o->q, o->qlen, sizeof(o->q), false};
	pbw_bytes(&f, 2, span, len);
	o->qlen = f.n;
}

/* Zipkin's queue: the JSON array's elements, ','-separated */
static size_t zipkin_need(size_t len, uint32_t qn)
{
	return len + (qn ? 1 : 0);
}

static void zipkin_append(struct http_otel_worker *o, const uint8_t *span, size_t len)
{
	if (o->qn)
		o->q[o->qlen++] = ',';
	memcpy(o->q + o->qlen, span, len);
	o->qlen += len;
}

static const struct tracer_ops otel_ops = {
    .start = otel_start,
    .inject = otel_inject,
    .max_inject = 2,
    .span = otel_span,
    .need = otel_need,
    .append = otel_append,
    .report = otel_report,
    .stats = &g_otel_stats,
    .dropped = ARN_OTEL_spans_dropped,
    .timer = ARN_OTEL_timer_flushed,
};

static const struct tracer_ops zipkin_ops = {
    .start = zipkin_start,
    .inject = zipkin_inject,
    .max_inject = 4,
    .span = zipkin_span,
    .need = zipkin_need,
    .append = zipkin_append,
    .report = zipkin_report,
    .name_authority = true,
    .stats = &g_zipkin_stats,
    .dropped = ARN_ZIPKIN_spans_dropped,
    .timer = ARN_ZIPKIN_timer_flushed,
};

/* Export the queued spans (nothing while one is in flight or none wait):
 * the queue's pin of their listener goes with the export. */
static void flush(struct http_otel_worker *o)
{
	const struct arn_cfg_tracing *t = o->t;
	if (o->busy || !o->qn || !t)
		return;
	uint32_t n = o->qn;
	o->out_lsn = o->lsn; /* the queue's pin: the export's (export_over lets go) */
	o->lsn = NULL;
	o->t = NULL;
	o->qn = 0;
	o->busy = true;
	o->ops->report(o, t, n); /* from the queue's bytes, then gone */
	o->qlen = 0;
}

static void flush_timer(struct http_timer *tm)
{
	struct http_otel_worker *o =
	    (struct http_otel_worker *)((char *)tm - offsetof(struct http_otel_worker, timer));
	struct http_worker *w = o->hc.w;
	tracer_count(w, o->ops, o->ops->timer, 1);
	flush(o);
	if (o->qn || o->busy)
		http_timer_arm(w, &o->timer, HTTP_OTEL_FLUSH_MS);
}

static bool sv_eq(const char *a, size_t al, const char *b, size_t bl)
{
	return al == bl && (!al || memcmp(a, b, al) == 0);
}

/* Do @p a and @p b export alike (Envoy shares one tracer between
 * connection managers whose provider is the same: Envoy Gateway writes the
 * same one on every listener)? Their spans then go in one export. */
static bool same_exporter(const struct arn_cfg_tracing *a, const struct arn_cfg_tracing *b)
{
	if (!sv_eq(a->cluster.name, a->cluster.len, b->cluster.name, b->cluster.len) ||
	    !sv_eq(a->authority, a->authority_len, b->authority, b->authority_len) ||
	    !sv_eq(a->service_name, a->service_name_len, b->service_name, b->service_name_len) ||
	    a->timeout_ms != b->timeout_ms || a->n_md != b->n_md || a->tracer != b->tracer ||
	    !sv_eq(a->zk_path, a->zk_path_len, b->zk_path, b->zk_path_len) ||
	    !sv_eq(a->zk_host, a->zk_host_len, b->zk_host, b->zk_host_len))
		return false;
	for (size_t i = 0; i < a->n_md; i++)
		if (!sv_eq(a->md[i].name, a->md[i].name_len, b->md[i].name, b->md[i].name_len) ||
		    !sv_eq(a->md[i].value, a->md[i].value_len, b->md[i].value, b->md[i].value_len))
			return false;
	return true;
}

/* Queue @p len bytes of a span of @p t (listener @p l). */
static void enqueue(struct http_otel_worker *o, const struct arn_cfg_listener *l, uint32_t hc_laddr,
		    const struct arn_cfg_tracing *t, const uint8_t *span, size_t len)
{
	struct http_worker *w = o->hc.w;
	/* the export's local address: a listener's of this worker (TCP's,
	 * not a PROXY header's), as a client's connection lends its own to
	 * ext_authz's checks; sub-requests connect from sladdr */
	o->hc.laddr = hc_laddr;
	o->hc.sladdr = hc_laddr;
	if (o->qn && o->t != t && !same_exporter(o->t, t)) {
		/* another configuration's spans go in another export */
		flush(o);
		if (o->qn) { /* one in flight: the others cannot wait */
			tracer_count(w, o->ops, o->ops->dropped, o->qn);
			queue_release(o);
		}
	}
	const struct tracer_ops *ops = tracer_of(t);
	if (!o->qn) { /* the queue holds its spans' configuration */
		if (o->lsn)
			arn_cfg_unpin(o->lsn);
		arn_cfg_pin(l);
		o->lsn = l;
		o->t = t;
		o->ops = ops;
	}
	if (o->qn >= HTTP_OTEL_QUEUE_SPANS || ops->need(len, o->qn) > sizeof(o->q) - o->qlen) {
		tracer_count(w, ops, ops->dropped, 1);
		if (!o->qn)
			queue_release(o);
		return;
	}
	ops->append(o, span, len);
	o->qn++;
	if (o->qn >= HTTP_OTEL_MIN_FLUSH_SPANS)
		flush(o);
	if (!o->timer.armed)
		http_timer_arm(w, &o->timer, HTTP_OTEL_FLUSH_MS);
}

static const char *const rf_short[] = {
#define ARN_RESPONSE_FLAG(id, s, l) s,
#include "arn_response_flags.def"
#undef ARN_RESPONSE_FLAG
};

/* %RESPONSE_FLAGS%'s short form, "-" for none (Envoy's toShortString) */
static size_t flags_short(uint32_t f, char *o, size_t cap)
{
	size_t n = 0;
	for (unsigned i = 0; i < sizeof(rf_short) / sizeof(rf_short[0]); i++) {
		if (!(f & (1u << i)))
			continue;
		size_t k = strlen(rf_short[i]);
		if (n + k + 1 > cap)
			break;
		if (n)
			o[n++] = ',';
		memcpy(o + n, rf_short[i], k);
		n += k;
	}
	if (!n)
		o[n++] = '-';
	return n;
}

static size_t ip_fmt(char *o, size_t cap, uint32_t a)
{
	int n = snprintf(o, cap, "%u.%u.%u.%u", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255);
	return n > 0 ? (size_t)n : 0;
}

/* A custom tag's value: empty ones are not set (CustomTagBase::apply). */
static bool tag_value(const struct arn_cfg_trace_tag *tg, const struct arn_h1_msg *m,
		      struct http_otel_kv *kv)
{
	kv->k = tg->tag;
	kv->kl = tg->tag_len;
	kv->v = tg->value;
	kv->vl = tg->value_len;
	if (tg->kind == ARN_CFG_TRACE_TAG_HEADER) {
		const struct arn_h1_header *h = hdr_find(m, tg->header, tg->header_len);
		if (h) {
			kv->v = h->value;
			kv->vl = h->value_len;
		}
	}
	return kv->vl != 0;
}

#define MAX_TAGS (20 + 2 * ARN_CFG_TRACE_TAGS_MAX)

/* Envoy's "tag set twice keeps the later value in the first's place"
 * (Span::setTag): custom tags may name a standard one */
static unsigned tags_dedup(struct http_otel_kv *kv, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		for (unsigned j = i + 1; j < n; j++)
			if (kv[j].kl == kv[i].kl && memcmp(kv[j].k, kv[i].k, kv[i].kl) == 0) {
				kv[i].v = kv[j].v;
				kv[i].vl = kv[j].vl;
				memmove(&kv[j], &kv[j + 1], (n - j - 1) * sizeof(kv[0]));
				n--;
				j--;
			}
	return n;
}

void http_otel_attempt_end(struct http_stream *st)
{
	struct http_conn *hc = st->hc;
	struct http_worker *w = hc->w;
	struct http_otel_worker *o = w->otel;
	const struct arn_cfg_tracing *t = hc->hcm ? hc->hcm->tracing : NULL;
	struct http_otel_span *sp = &st->res->otel;
	if (!st->otel || !sp->up_open)
		return;
	sp->up_open = false;
	if (!t || !o || !hc->lsn || !sp->sampled)
		return; /* an unsampled span is not sent */
	/* Envoy's UpstreamRequest (retry.count), finalizeUpstreamSpan and
	 * setCommonTags (Envoy 1.35's order) on the attempt's stream info */
	const struct arn_h1_msg *m = &st->req.m;
	struct http_otel_kv kv[MAX_TAGS];
	unsigned n = 0;
	char rc[12], up[24], code[12], flags[128];
#define KV(key, val, len)                                                                          \
	kv[n++] = (struct http_otel_kv)                                                            \
	{                                                                                          \
		key, val, sizeof(key) - 1, (uint32_t)(len)                                         \
	}
	if (sp->up_attempt > 1)
		KV("retry.count", rc, (size_t)snprintf(rc, sizeof(rc), "%u", sp->up_attempt - 1));
	/* the upstream's protocol: the cluster's (auto: HTTP/1.1) */
	uint8_t upp = st->cluster ? st->cluster->http.upstream : 0;
	if (upp == 1 || (upp == 2 && st->version == 20))
		KV("http.protocol", "HTTP/2", 6);
	else
		KV("http.protocol", "HTTP/1.1", 8);
	size_t ul = 0;
	if (st->ep_addr) {
		ul = ip_fmt(up, sizeof(up), st->ep_addr);
		ul += (size_t)snprintf(up + ul, sizeof(up) - ul, ":%u", st->ep_port);
		KV("upstream_address", up, ul);
		KV("peer.address", up, ul);
	}
	KV("component", "proxy", 5);
	if (st->crt) {
		KV("upstream_cluster", st->crt->name, st->crt->len);
		KV("upstream_cluster.name", st->crt->name, st->crt->len);
	}
	KV("http.status_code", code, (size_t)snprintf(code, sizeof(code), "%u", st->up_status));
	KV("response_flags", flags, flags_short(st->flags, flags, sizeof(flags)));
	if (st->up_status == 0 || (st->up_status >= 500 && st->up_status < 600))
		KV("error", "true", 4);
#undef KV
	for (size_t i = 0; i < t->n_tags; i++)
		if (tag_value(&t->tags[i], m, &kv[n]))
			n++;
	const struct arn_cfg_route_trace *rt = st->route ? st->route->trace : NULL;
	for (size_t i = 0; rt && i < rt->n_tags; i++)
		if (tag_value(&rt->tags[i], m, &kv[n]))
			n++;
	n = tags_dedup(kv, n);
	/* "router <cluster observability name> egress" */
	char name[ARN_CFG_TRACE_TAG_VALUE_MAX + 16];
	const char *cn = st->crt ? st->crt->name : "";
	size_t cl = st->crt ? st->crt->len : 0;
	if (cl > sizeof(name) - 16)
		cl = sizeof(name) - 16;
	memcpy(name, "router ", 7);
	memcpy(name + 7, cn, cl);
	memcpy(name + 7 + cl, " egress", 7);
	/* Envoy's spawnChild: the server span's trace (and tracestate), its
	 * span the parent; an upstream span is a CLIENT one */
	const struct tracer_ops *ops = tracer_of(t);
	size_t len = ops->span(o->span, sizeof(o->span), t, sp, sp->up_id, sp->span_id, true, name,
			       cl + 14, sp->up_start_ns, wall_ns(), kv, n);
	if (!len) {
		tracer_count(w, ops, ops->dropped, 1);
		return;
	}
	enqueue(o, hc->lsn, hc->sladdr, t, o->span, len);
}

void http_otel_finish(struct http_stream *st)
{
	struct http_conn *hc = st->hc;
	struct http_worker *w = hc->w;
	struct http_otel_worker *o = w->otel;
	const struct arn_cfg_tracing *t = hc->hcm ? hc->hcm->tracing : NULL;
	struct http_otel_span *sp = &st->res->otel;
	if (!t || !o || !hc->lsn)
		return;
	/* a request that neither went upstream nor was answered here (a
	 * local reply starts it: http_otel_local) starts its span now, with
	 * the id it has (Envoy starts every request's at its head) */
	if (!st->otel && !st->otel_bad) {
		/* the edge as the head's decision takes it (http_local.c's
		 * local_trace): with use_remote_address, an internal client's
		 * request is not at the edge, and its force-trace counts */
		bool internal = false;
		if (hc->hcm->use_remote_address)
			http_client_addr(hc->hcm, &st->req.m, hc->raddr, &internal);
		/* its id: the one given at the head (a tracing manager's
		 * filters walk, so http_request_id_head gave it), or without
		 * generate_request_id the client's, which Envoy leaves as is */
		const char *rid = st->request_id;
		uint32_t rid_len = st->request_id_len;
		if (!rid && !hc->hcm->generate_request_id) {
			const struct arn_h1_header *x = hdr_find(&st->req.m, "x-request-id", 12);
			rid = x ? x->value : NULL;
			rid_len = x ? x->value_len : 0;
		}
		start(st, hc->hcm->use_remote_address && !internal, rid, rid_len);
	}
	if (!st->otel)
		return;
	if (sp->up_open) /* the last attempt's upstream span first */
		http_otel_attempt_end(st);
	st->otel = false;
	st->otel_done = true;
	if (!sp->sampled)
		return; /* Envoy's Span::finishSpan sends only a sampled span */
	struct arn_access_record rec;
	http_access_record(st, &rec);
	const struct arn_h1_msg *m = &st->req.m;
	struct http_otel_kv kv[MAX_TAGS];
	unsigned n = 0;
#define KV(key, val, len)                                                                          \
	kv[n++] = (struct http_otel_kv){key, val, sizeof(key) - 1, (uint32_t)(len)}
	KV("node_id", g_node_id, g_node_id_len);
	KV("zone", g_zone, g_zone_len);
	if (st->request_id)
		KV("guid:x-request-id", st->request_id, st->request_id_len);
	/* http.url: scheme "://" host path (bounded) */
	size_t plen = rec.path.len < t->max_path_tag_length ? rec.path.len : t->max_path_tag_length;
	char *u = (char *)st->res->text + st->text_len;
	size_t ucap = HTTP_TEXT - st->text_len, ul = 0;
	if (rec.scheme.len + 3 + rec.authority.len + plen <= ucap) {
		memcpy(u, rec.scheme.p, rec.scheme.len);
		memcpy(u + rec.scheme.len, "://", 3);
		memcpy(u + rec.scheme.len + 3, rec.authority.p, rec.authority.len);
		memcpy(u + rec.scheme.len + 3 + rec.authority.len, rec.path.p, plen);
		ul = rec.scheme.len + 3 + rec.authority.len + plen;
	}
	KV("http.url", u, ul);
	KV("http.method", rec.method.p, rec.method.len);
	const struct arn_h1_header *h = hdr_find(m, "x-envoy-downstream-service-cluster", 34);
	if (h)
		KV("downstream_cluster", h->value, h->value_len);
	else
		KV("downstream_cluster", "-", 1);
	h = hdr_find(m, "user-agent", 10);
	if (h)
		KV("user_agent", h->value, h->value_len);
	else
		KV("user_agent", "-", 1);
	KV("http.protocol", rec.protocol.p, rec.protocol.len);
	char peer[16], up[24], rq[24], rs[24], code[12], flags[128];
	KV("peer.address", peer, ip_fmt(peer, sizeof(peer), rec.downstream_remote.ip));
	h = hdr_find(m, "x-client-trace-id", 17);
	if (h)
		KV("guid:x-client-trace-id", h->value, h->value_len);
	for (size_t i = 0; i < t->n_tags; i++)
		if (tag_value(&t->tags[i], m, &kv[n]))
			n++;
	const struct arn_cfg_route_trace *rt = st->route ? st->route->trace : NULL;
	for (size_t i = 0; rt && i < rt->n_tags; i++)
		if (tag_value(&rt->tags[i], m, &kv[n]))
			n++;
	KV("request_size", rq,
	   (size_t)snprintf(rq, sizeof(rq), "%llu", (unsigned long long)rec.bytes_received));
	KV("response_size", rs,
	   (size_t)snprintf(rs, sizeof(rs), "%llu", (unsigned long long)rec.bytes_sent));
	KV("component", "proxy", 5);
	if (rec.upstream_host.ip) {
		KV("upstream_cluster", rec.upstream_cluster.p, rec.upstream_cluster.len);
		KV("upstream_cluster.name", rec.upstream_cluster.p, rec.upstream_cluster.len);
	}
	KV("http.status_code", code, (size_t)snprintf(code, sizeof(code), "%u", rec.response_code));
	size_t fl = flags_short(rec.response_flags, flags, sizeof(flags));
	KV("response_flags", flags, fl);
	if (rec.upstream_host.ip) {
		size_t k = ip_fmt(up, sizeof(up), rec.upstream_host.ip);
		k += (size_t)snprintf(up + k, sizeof(up) - k, ":%u", rec.upstream_host.port);
		KV("upstream_address", up, k);
	}
	if (rec.response_code == 0 || (rec.response_code >= 500 && rec.response_code < 600))
		KV("error", "true", 4);
#undef KV
	n = tags_dedup(kv, n);
	/* the request's x-envoy-decorator-operation (not empty), else the
	 * route's decorator, else Envoy's ingress operation name (Zipkin's:
	 * the request's authority, as its Driver::startSpan names it) */
	const struct tracer_ops *ops = tracer_of(t);
	const char *name = sp->op_len		 ? sp->op
			   : rt && rt->operation ? rt->operation
			   : ops->name_authority ? rec.authority.p
						 : "ingress";
	size_t name_len = sp->op_len		? sp->op_len
			  : rt && rt->operation ? rt->operation_len
			  : ops->name_authority ? rec.authority.len
						: 7;
	uint64_t start = (uint64_t)rec.start_time_us * 1000;
	uint64_t end = start + rec.duration_us * 1000;
	size_t len = ops->span(o->span, sizeof(o->span), t, sp, sp->span_id,
			       sp->has_parent ? sp->parent_id : NULL, false, name, name_len, start,
			       end, kv, n);
	if (!len) {
		tracer_count(w, ops, ops->dropped, 1);
		return;
	}
	enqueue(o, hc->lsn, hc->sladdr, t, o->span, len);
}

int http_otel_worker_init(struct http_worker *w)
{
	struct http_otel_worker *o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	o->hc.w = w;
	o->timer.fn = flush_timer;
	if (getrandom(o->rng, sizeof(o->rng), 0) != (ssize_t)sizeof(o->rng)) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		o->rng[0] = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ w->idx;
		o->rng[1] = (uint64_t)ts.tv_sec ^ 0xbf58476d1ce4e5b9ull;
	}
	if (!(o->rng[0] | o->rng[1]))
		o->rng[1] = 1; /* xorshift's one bad state */
	w->otel = o;
	return 0;
}

void http_otel_worker_fini(struct http_worker *w)
{
	struct http_otel_worker *o = w->otel;
	if (!o)
		return;
	/* an export in flight is not cancelled: the worker's upstream
	 * connections are already gone (worker_free), and with them every
	 * callback that could reach it */
	http_timer_cancel(&o->timer);
	if (o->out_lsn)
		arn_cfg_unpin(o->out_lsn);
	queue_release(o);
	free(o);
	w->otel = NULL;
}

/* ---- as a filter of the chain (http_filter.h): no hook runs for a
 * connection manager without tracing, which then costs nothing ---- */

static bool otel_active(const struct arn_cfg_hcm *h)
{
	return h->tracing != NULL;
}

/* The span of a request whose head was read, before the access log. */
static void otel_log(struct http_stream *st)
{
	struct http_conn *hc = st->hc;
	if (!hc->hcm || !hc->hcm->tracing || !st->res || !(st->state & HTTP_S_HEAD_DONE))
		return;
	if (st->state & HTTP_S_STARTED) {
		/* the start in wall-clock time, as the access log takes it */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		int64_t now = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
		st->start_wall_us = now - (int64_t)http_now_us(hc->w, st->start_tsc);
	}
	http_otel_finish(st);
}

static int otel_resp_edits(struct http_stream *st, struct arn_h1_edit *e, unsigned cap)
{
	const struct arn_cfg_hcm *h = st->hc->hcm;
	/* a local reply's comes from http_local.c, which calls this hook
	 * only with some filters */
	if (!h || !h->tracing || !cap || (st->state & HTTP_S_LOCAL))
		return 0;
	return http_otel_resp_header(st, e) ? 1 : 0;
}

const struct http_filter_ops http_otel_filter_ops = {
    .name = "tracing",
    .active = otel_active,
    .encode_head_edits = otel_resp_edits,
    .log = otel_log,
};

void http_otel_seed(struct http_worker *w, uint64_t s0, uint64_t s1)
{
	if (w->otel && (s0 | s1)) {
		w->otel->rng[0] = s0;
		w->otel->rng[1] = s1;
	}
}
