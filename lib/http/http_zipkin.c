/*
 * HCM tracing with the Zipkin tracer (http_zipkin.h). Followed: Envoy
 * 1.34's source/extensions/tracers/zipkin (span_context_extractor.cc:
 * the accept and reject rules of the B3 headers; tracer.cc: the span's
 * ids; zipkin_core_types.cc: the "ss" / "cr" annotation and the duration
 * at the end, an empty tag left out; span_buffer.cc: the JSON v2 fields,
 * "shared": true on a SERVER span with shared_span_context).
 */
#include <errno.h>
#include <string.h>

#include "arn_h1.h"
#include "arn_hex.h"
#include "arn_utf8.h"
#include "http_zipkin.h"

/* ---- B3 ---------------------------------------------------------------------------------- */


/* 1 to 16 hex digits at @p s into 8 big-endian bytes (Envoy's
 * StringUtil::atoull base 16, without strtoull's leading blanks, sign and
 * 0x, which no B3 writer sends). */
static bool hex64(const char *s, size_t n, uint8_t out[8])
{
	if (!n || n > 16)
		return false;
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		int d = arn_hexval(s[i]);
		if (d < 0)
			return false;
		v = v << 4 | (uint64_t)d;
	}
	for (int i = 7; i >= 0; i--) {
		out[i] = (uint8_t)v;
		v >>= 8;
	}
	return true;
}

static bool valid_flag(char c)
{
	return c == '1' || c == '0' || c == 'd';
}

static bool nonzero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return true;
	return false;
}

/* SpanContextExtractor::extractSampled */
static bool b3_sampled(const struct http_b3_in *in, bool traced)
{
	if (in->b3) {
		size_t pos;
		switch (in->b3_len) {
		case 1:
			pos = 0;
			break;
		case 35: /* 16-16-s */
		case 52: /* 16-16-s-16 */
			pos = 34;
			break;
		case 51: /* 32-16-s */
		case 68: /* 32-16-s-16 */
			pos = 50;
			break;
		default:
			return traced;
		}
		char c = in->b3[pos];
		return valid_flag(c) ? c != '0' : traced;
	}
	if (!in->sampled)
		return traced;
	/* "true" from old Zipkin tracers */
	return (in->sampled_len == 1 && in->sampled[0] == '1') ||
	       (in->sampled_len == 4 && memcmp(in->sampled, "true", 4) == 0);
}

/* extractSpanContextFromB3SingleFormat: "trace-span[-sampled[-parent]]" */
static int b3_single(const char *b3, size_t len, struct http_b3 *o)
{
	if (!len)
		return -EINVAL;
	if (len == 1) /* sampling flags only: no context */
		return valid_flag(b3[0]) ? 0 : -EINVAL;
	if (len < 16 + 1 + 16 || len > 32 + 1 + 16 + 3 + 16)
		return -EINVAL;
	size_t pos = 0;
	if (len > 32 && b3[32] == '-') {
		if (!hex64(b3, 16, o->trace_id) || !hex64(b3 + 16, 16, o->trace_id + 8))
			return -EINVAL;
		pos = 32;
	} else {
		if (!hex64(b3, 16, o->trace_id + 8))
			return -EINVAL;
		pos = 16;
	}
	/* std::string's [] at its size is the NUL, not '-' */
	if (pos >= len || b3[pos++] != '-')
		return -EINVAL;
	size_t sl = len - pos < 16 ? len - pos : 16; /* substr(pos, 16) */
	if (!hex64(b3 + pos, sl, o->span_id))
		return -EINVAL;
	pos += 16;
	if (len > pos) {
		if (len == pos + 1)
			return -EINVAL; /* truncated */
		if (b3[pos++] != '-')
			return -EINVAL;
		if (len == pos + 1 || (len >= pos + 2 && b3[pos + 1] == '-')) {
			if (!valid_flag(b3[pos]))
				return -EINVAL;
			pos++;
		} else {
			return -EINVAL;
		}
		if (len > pos) {
			if (len != pos + 17)
				return -EINVAL;
			pos++; /* the '-' checked above */
			if (!hex64(b3 + pos, 16, o->parent_id))
				return -EINVAL;
		}
	}
	return 1;
}

int http_zipkin_b3_parse(const struct http_b3_in *in, bool traced, struct http_b3 *o)
{
	memset(o, 0, sizeof(*o));
	o->sampled = b3_sampled(in, traced);
	int rc;
	if (in->b3) {
		rc = b3_single(in->b3, in->b3_len, o);
	} else if (in->trace_id && in->span_id) {
		rc = 1;
		if (in->trace_id_len == 32) {
			if (!hex64(in->trace_id, 16, o->trace_id) ||
			    !hex64(in->trace_id + 16, 16, o->trace_id + 8))
				rc = -EINVAL;
		} else if (!hex64(in->trace_id, in->trace_id_len, o->trace_id + 8)) {
			rc = -EINVAL;
		}
		if (!hex64(in->span_id, in->span_id_len, o->span_id))
			rc = -EINVAL;
		if (in->parent_id && in->parent_id_len &&
		    !hex64(in->parent_id, in->parent_id_len, o->parent_id))
			rc = -EINVAL;
	} else {
		rc = 0;
	}
	if (rc < 0) {
		bool s = o->sampled;
		memset(o, 0, sizeof(*o));
		o->sampled = s;
		return rc;
	}
	/* SpanContext::is128BitTraceId: its high half not zero */
	o->t128 = nonzero(o->trace_id, 8);
	return rc;
}

static const char hexd[] = "0123456789abcdef";

static void hex_out(char *o, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		o[2 * i] = hexd[p[i] >> 4];
		o[2 * i + 1] = hexd[p[i] & 15];
	}
}

unsigned http_zipkin_inject(const struct http_otel_span *sp, const uint8_t id[8],
			    const uint8_t *parent, char *buf, struct arn_h1_edit *e)
{
	unsigned n = 0;
	size_t tl = sp->t128 ? 32 : 16;
	hex_out(buf, sp->t128 ? sp->trace_id : sp->trace_id + 8, tl / 2);
	hex_out(buf + 32, id, 8);
	e[n++] = (struct arn_h1_edit){.op = ARN_H1_EDIT_SET,
				      .id1 = ARN_H1_H_OTHER + 1,
				      .name = "x-b3-traceid",
				      .name_len = 12,
				      .value = buf,
				      .value_len = (uint32_t)tl};
	e[n++] = (struct arn_h1_edit){.op = ARN_H1_EDIT_SET,
				      .id1 = ARN_H1_H_OTHER + 1,
				      .name = "x-b3-spanid",
				      .name_len = 11,
				      .value = buf + 32,
				      .value_len = 16};
	if (parent) {
		hex_out(buf + 48, parent, 8);
		e[n++] = (struct arn_h1_edit){.op = ARN_H1_EDIT_SET,
					      .id1 = ARN_H1_H_OTHER + 1,
					      .name = "x-b3-parentspanid",
					      .name_len = 17,
					      .value = buf + 48,
					      .value_len = 16};
	}
	e[n++] = (struct arn_h1_edit){.op = ARN_H1_EDIT_SET,
				      .id1 = ARN_H1_H_OTHER + 1,
				      .name = "x-b3-sampled",
				      .name_len = 12,
				      .value = sp->sampled ? "1" : "0",
				      .value_len = 1};
	return n;
}

/* ---- JSON v2 ----------------------------------------------------------------------------- */

struct jw {
	char *b;
	size_t n, cap;
	bool err;
};

static void jw_raw(struct jw *w, const char *s, size_t n)
{
	if (w->err || n > w->cap - w->n) {
		w->err = true;
		return;
	}
	memcpy(w->b + w->n, s, n);
	w->n += n;
}

#define JW_LIT(w, s) jw_raw(w, s, sizeof(s) - 1)

/* A JSON string of @p n bytes: '"', '\\' and control bytes escaped,
 * bytes that are not UTF-8 '?' (the values come from clients). */
static void jw_str(struct jw *w, const char *s, size_t n)
{
	JW_LIT(w, "\"");
	const uint8_t *p = (const uint8_t *)s;
	for (size_t i = 0; i < n && !w->err;) {
		uint8_t c = p[i];
		if (c == '"' || c == '\\') {
			char e[2] = {'\\', (char)c};
			jw_raw(w, e, 2);
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			char e[6] = {'\\', 'u', '0', '0', hexd[c >> 4], hexd[c & 15]};
			jw_raw(w, e, 6);
			i++;
		} else {
			size_t k = arn_utf8_seq(p + i, n - i);
			if (!k) {
				JW_LIT(w, "?");
				i++;
				continue;
			}
			jw_raw(w, s + i, k);
			i += k;
		}
	}
	JW_LIT(w, "\"");
}

static void jw_hex(struct jw *w, const uint8_t *p, size_t n)
{
	char h[34];
	h[0] = '"';
	hex_out(h + 1, p, n);
	h[2 * n + 1] = '"';
	jw_raw(w, h, 2 * n + 2);
}

static void jw_u64(struct jw *w, uint64_t v)
{
	char t[20];
	size_t k = sizeof(t);
	do {
		t[--k] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	jw_raw(w, t + k, sizeof(t) - k);
}

size_t http_zipkin_span_json(char *out, size_t cap, const struct http_otel_span *sp,
			     const uint8_t id[8], const uint8_t *parent, bool client, bool shared,
			     const char *name, size_t name_len, const char *svc, size_t svc_len,
			     uint64_t start_us, uint64_t dur_us, const struct http_otel_kv *kv,
			     unsigned n)
{
	struct jw w = {out, 0, cap, false};
	JW_LIT(&w, "{\"traceId\":");
	if (sp->t128)
		jw_hex(&w, sp->trace_id, 16);
	else
		jw_hex(&w, sp->trace_id + 8, 8);
	if (parent) {
		JW_LIT(&w, ",\"parentId\":");
		jw_hex(&w, parent, 8);
	}
	JW_LIT(&w, ",\"id\":");
	jw_hex(&w, id, 8);
	if (client)
		JW_LIT(&w, ",\"kind\":\"CLIENT\"");
	else
		JW_LIT(&w, ",\"kind\":\"SERVER\"");
	if (name_len) { /* an empty name is left out */
		JW_LIT(&w, ",\"name\":");
		jw_str(&w, name, name_len);
	}
	JW_LIT(&w, ",\"timestamp\":");
	jw_u64(&w, start_us);
	JW_LIT(&w, ",\"duration\":");
	jw_u64(&w, dur_us);
	JW_LIT(&w, ",\"localEndpoint\":{");
	if (svc_len) {
		JW_LIT(&w, "\"serviceName\":");
		jw_str(&w, svc, svc_len);
	}
	JW_LIT(&w, "}");
	bool any = false;
	for (unsigned i = 0; i < n; i++) {
		if (!kv[i].kl || !kv[i].vl) /* Span::setTag: empty ones are not set */
			continue;
		if (any)
			JW_LIT(&w, ",");
		else
			JW_LIT(&w, ",\"tags\":{");
		any = true;
		jw_str(&w, kv[i].k, kv[i].kl);
		JW_LIT(&w, ":");
		jw_str(&w, kv[i].v, kv[i].vl);
	}
	if (any)
		JW_LIT(&w, "}");
	JW_LIT(&w, ",\"annotations\":[{\"timestamp\":");
	jw_u64(&w, start_us + dur_us);
	if (client)
		JW_LIT(&w, ",\"value\":\"cr\"}]");
	else
		JW_LIT(&w, ",\"value\":\"ss\"}]");
	if (!client && shared)
		JW_LIT(&w, ",\"shared\":true");
	JW_LIT(&w, "}");
	return w.err ? 0 : w.n;
}
