/*
 * HCM tracing with the OpenTelemetry tracer (Envoy's
 * source/extensions/tracers/opentelemetry and source/common/tracing):
 * the trace decision carried in x-request-id, the incoming W3C
 * traceparent / tracestate, the span a request makes (its traceparent
 * sent upstream) and, at the stream's end, the span's OTLP bytes queued
 * on the worker and exported in batches to the collector cluster
 * (ExportTraceServiceRequest over a unary gRPC sub-request).
 *
 * Ownership: a struct http_otel_span lives in the request's http_res;
 * its tracestate points into the request's head (valid until the stream
 * ends). The worker's queue (struct http_otel_worker) is the worker's.
 */
#ifndef ARN_HTTP_OTEL_H
#define ARN_HTTP_OTEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arn_h1.h"

struct arn_cfg_tracing;
struct arn_cfg_route_trace;
struct http_stream;
struct http_worker;

/* "00-" 32 hex "-" 16 hex "-" 2 hex */
#define HTTP_OTEL_TP_LEN 55
/* the propagation headers' hex (traceparent's 55 + NUL, B3's 64) */
#define HTTP_OTEL_HDRS_MAX 64
/* the worker's queue of finished spans: bytes and spans (docs/security.md) */
#define HTTP_OTEL_QUEUE_BYTES (64 * 1024)
#define HTTP_OTEL_QUEUE_SPANS 512
/* Envoy's tracing.opentelemetry.min_flush_spans and flush_interval_ms */
#define HTTP_OTEL_MIN_FLUSH_SPANS 5
#define HTTP_OTEL_FLUSH_MS 5000

/* x-request-id's trace status (Envoy's UUID request id: its 15th
 * character) */
enum http_otel_status {
	HTTP_OTEL_NO_TRACE = 0, /* '4' */
	HTTP_OTEL_SAMPLED,	/* '9' */
	HTTP_OTEL_FORCED,	/* 'a' */
	HTTP_OTEL_CLIENT,	/* 'b' */
};

struct http_otel_span {
	uint8_t trace_id[16];
	uint8_t span_id[8];
	uint8_t parent_id[8];
	bool has_parent;
	bool sampled;
	bool changed;		 /* x-request-id's status is rewritten */
	uint8_t status;		 /* enum http_otel_status */
	uint32_t tracestate_len; /* (here and below: no holes, 152 bytes) */
	const char *tracestate;	 /* the request's first tracestate (parent's) */
	/* the request's x-envoy-decorator-operation (into the request):
	 * the span's name when not empty; op_hdr: present, removed upstream */
	const char *op;
	uint32_t op_len;
	bool op_hdr;
	bool t128; /* Zipkin: a 128-bit trace id (else its low 8 bytes) */
	/* spawn_upstream_span: the attempt's CLIENT span (the server span's
	 * child), open from its request edits to its end */
	bool up_open;
	/* the traceparent sent upstream, or (Zipkin) the x-b3-* ids' hex */
	char tp[HTTP_OTEL_HDRS_MAX];
	uint8_t up_id[8];
	uint32_t up_attempt;
	uint64_t up_start_ns;
};

/**
 * Parse traceparent value @p v (@p n bytes) as Envoy's
 * SpanContextExtractor: exactly 55 bytes, four '-'-separated hex fields of
 * 2, 32, 16 and 2 digits, trace id and parent id not all zero; the
 * sampled flag is the flags' low bit. @return 0, or -EINVAL (Envoy then
 * makes no span at all).
 */
int http_otel_tp_parse(const char *v, size_t n, uint8_t trace_id[16], uint8_t parent_id[8],
		       bool *sampled);

/** The trace status x-request-id @p rid carries (NO_TRACE unless a 36-byte UUID). */
enum http_otel_status http_otel_rid_status(const char *rid, size_t n);

/**
 * Envoy's ConnectionManagerUtility::mutateTracingRequestHeader: the
 * status for request id @p rid with the HCM's @p t and the route's @p rt
 * (NULL: none) sampling, @p client_trace_id (x-client-trace-id present),
 * @p force_trace (x-envoy-force-trace on a request that is not an edge
 * one) and @p rnd (a uniform random number for client sampling).
 * @p changed is set when the status differs from what @p rid carries.
 */
enum http_otel_status http_otel_decide(const struct arn_cfg_tracing *t,
				       const struct arn_cfg_route_trace *rt, const char *rid,
				       size_t n, bool client_trace_id, bool force_trace,
				       uint64_t rnd, bool *changed);

/** Format @p sp's traceparent into sp->tp (lower-case hex, as Envoy's). */
void http_otel_tp_fmt(struct http_otel_span *sp);

/** Strings of one finished span (the access record's, the tags'). */
struct http_otel_kv {
	const char *k, *v;
	uint32_t kl, vl;
};

/**
 * Encode one Span (opentelemetry.proto.trace.v1.Span) of @p sp named
 * @p name, kind SERVER, from @p start_ns to @p end_ns with @p n
 * attributes @p kv (string values; bytes that are not UTF-8 become '?')
 * into @p out (@p cap bytes). @return its length, or 0 when it does not
 * fit.
 */
size_t http_otel_span_encode(uint8_t *out, size_t cap, const struct http_otel_span *sp,
			     const char *name, size_t name_len, uint64_t start_ns, uint64_t end_ns,
			     const struct http_otel_kv *kv, unsigned n);

/**
 * Encode the CLIENT span of @p sp's upstream attempt (span id sp->up_id,
 * parent sp->span_id, the server span's trace and tracestate), as
 * http_otel_span_encode does.
 */
size_t http_otel_up_span_encode(uint8_t *out, size_t cap, const struct http_otel_span *sp,
				const char *name, size_t name_len, uint64_t start_ns,
				uint64_t end_ns, const struct http_otel_kv *kv, unsigned n);

/**
 * Wrap @p n spans @p spans (@p len bytes: each a ScopeSpans.spans field)
 * as a gRPC message of an ExportTraceServiceRequest whose resource has
 * service.name @p svc, into @p out (@p cap bytes). @return its length, 0
 * when it does not fit.
 */
size_t http_otel_export_encode(uint8_t *out, size_t cap, const char *svc, size_t svc_len,
			       const uint8_t *spans, size_t len);

/* ---- the stream's and the worker's part (http_otel.c) ---- */

/**
 * The request's trace (first attempt) or its edits again (a retry): the
 * decision, x-request-id's status rewritten when it changed (in place
 * when Arion generated the id, else an edit), the span started, and
 * traceparent / tracestate set upstream. Appends at most 3 edits to
 * @p e (@p cap). @p edge: an edge request (its x-envoy-force-trace is
 * not trusted). @p rid / @p rid_len: the id sent (updated when
 * rewritten); @p text, @p text_cap, @p text_len: the request's text.
 * @return the edits added, or -ENOSPC.
 */
int http_otel_req_edits(struct http_stream *st, bool edge, const char **rid, uint32_t *rid_len,
			char *text, size_t text_cap, uint32_t *text_len, struct arn_h1_edit *e,
			unsigned cap);

/**
 * The trace decision of a request answered locally before one was made
 * (no route, a filter's or the router's reply before its first attempt):
 * Envoy's mutateTracingRequestHeader decides at the head, so a local
 * reply's x-request-id (its response header, access log and span) carries
 * the decision too (UUIDRequestIDExtension::setTraceReason, the 15th
 * character). The span is started (Envoy's traceRequest), and
 * st->request_id rewritten: in place when in the stream's text, else a
 * copy there (no room: as it came). @p edge as http_otel_req_edits'.
 * Nothing when the HCM does not trace or the decision was made.
 */
void http_otel_local(struct http_stream *st, bool edge);

/**
 * The response's x-envoy-decorator-operation (Envoy's ingress
 * propagation): the route's decorator operation with propagate, unless
 * the request named its own. @return true with @p e set.
 */
bool http_otel_resp_header(const struct http_stream *st, struct arn_h1_edit *e);

/** An upstream attempt of a traced request is over (spawn_upstream_span):
 * its CLIENT span, if open, into the worker's queue. */
void http_otel_attempt_end(struct http_stream *st);

/** The stream ends with its span started: finish it into the worker's queue. */
void http_otel_finish(struct http_stream *st);

/** tracing.opentelemetry.*'s scope, and the node_id and zone tags (at
 * most 255 bytes each; NULL: ""), copied (control lcore, at start). */
void http_otel_module_init(const char *node_id, const char *zone, size_t zone_len);
/** The worker's exporter: set up at worker start (@return 0 or -ENOMEM), freed at its end. */
int http_otel_worker_init(struct http_worker *w);
void http_otel_worker_fini(struct http_worker *w);
/** Seed the worker's tracing ids' generator (tests: the same run for the
 * same input; @p s0 | @p s1 not 0). */
void http_otel_seed(struct http_worker *w, uint64_t s0, uint64_t s1);

#endif
