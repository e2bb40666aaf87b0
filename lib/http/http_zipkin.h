/*
 * HCM tracing with the Zipkin tracer (Envoy's
 * source/extensions/tracers/zipkin): the B3 propagation headers read
 * (span_context_extractor.cc) and written upstream (ZipkinSpan::
 * injectContext), and a finished span as Zipkin API v2 JSON
 * (span_buffer.cc's JsonV2Serializer). The stream and queue part is
 * http_otel.c's, shared by both tracers.
 *
 * Ownership: every pointer argument is the caller's, read during the
 * call only.
 */
#ifndef ARN_HTTP_ZIPKIN_H
#define ARN_HTTP_ZIPKIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http_otel.h"

/* The B3 headers of a request (first lines; NULL: absent). */
struct http_b3_in {
	const char *b3, *trace_id, *span_id, *parent_id, *sampled;
	size_t b3_len, trace_id_len, span_id_len, parent_id_len, sampled_len;
};

/* What they carry (ids big-endian: the hex digits' order). */
struct http_b3 {
	uint8_t trace_id[16]; /* the high half zero for a 64-bit id */
	uint8_t span_id[8];
	uint8_t parent_id[8]; /* zero: none */
	bool t128;	      /* a 128-bit trace id (its high half not 0) */
	bool sampled;
};

/**
 * Envoy's SpanContextExtractor over @p in: the sampled flag (the single
 * b3 header's, else x-b3-sampled "1" or "true", else @p traced, the
 * request's trace decision) and the context (the single b3 header,
 * else x-b3-traceid with x-b3-spanid and, if not empty,
 * x-b3-parentspanid). Ids are 1 to 16 hex digits (a 32-digit trace id
 * two of 16). @return 1 with a context in @p out, 0 for none (a root span;
 * out->sampled set), -EINVAL for a malformed one (Envoy then makes no
 * span at all).
 */
int http_zipkin_b3_parse(const struct http_b3_in *in, bool traced, struct http_b3 *out);

/* x-b3-traceid (16 or 32), x-b3-spanid and x-b3-parentspanid (16) */
#define HTTP_ZIPKIN_HDRS_LEN (32 + 16 + 16)

/**
 * The B3 headers sent upstream for @p sp's span @p id (its parent
 * @p parent, NULL: none): lower-case hex into @p buf
 * (HTTP_ZIPKIN_HDRS_LEN bytes, the caller's until the head is written),
 * at most 4 edits into @p e. @return the edits.
 */
unsigned http_zipkin_inject(const struct http_otel_span *sp, const uint8_t id[8],
			    const uint8_t *parent, char *buf, struct arn_h1_edit *e);

/**
 * One span as a Zipkin API v2 JSON object: trace @p sp's, id @p id,
 * parent @p parent (NULL: none), kind SERVER (@p client false:
 * "shared": true with @p shared) or CLIENT, named @p name, its
 * localEndpoint.serviceName @p svc (empty: none), from @p start_us
 * lasting @p dur_us (its "ss" or "cr" annotation at the end), tags
 * @p kv (@p n; empty values left out). Every string is escaped; bytes
 * that are not UTF-8 become '?'. @return its length in @p out (@p cap),
 * 0 when it does not fit.
 */
size_t http_zipkin_span_json(char *out, size_t cap, const struct http_otel_span *sp,
			     const uint8_t id[8], const uint8_t *parent, bool client, bool shared,
			     const char *name, size_t name_len, const char *svc, size_t svc_len,
			     uint64_t start_us, uint64_t dur_us, const struct http_otel_kv *kv,
			     unsigned n);

#endif
