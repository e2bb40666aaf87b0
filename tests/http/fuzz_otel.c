/*
 * libFuzzer target for HCM tracing's parsers and writers of a client's
 * bytes (lib/http/http_otel.c): the traceparent parser (what it accepts
 * formats back to the same ids and flag), the trace decision over any
 * x-request-id, and a span whose name, tracestate and attributes are the
 * input: its bytes must decode (http_pb.h's bounded reader) field by
 * field, every string valid UTF-8 and of the input's length; the same
 * for the Zipkin tracer's B3 headers and JSON span (zipkin() below).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arn_config_model.h"
#include "arn_json.h"
#include "http_otel.h"
#include "http_pb.h"
#include "http_zipkin.h"

static bool utf8_ok(const uint8_t *p, size_t n)
{
	size_t i = 0;
	while (i < n) {
		uint8_t c = p[i];
		size_t k = c < 0x80		? 1
			   : (c & 0xe0) == 0xc0 ? 2
			   : (c & 0xf0) == 0xe0 ? 3
			   : (c & 0xf8) == 0xf0 ? 4
						: 0;
		if (!k || i + k > n)
			return false;
		uint32_t cp = k == 1 ? c : c & (0x7f >> k);
		for (size_t j = 1; j < k; j++) {
			if ((p[i + j] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (p[i + j] & 0x3f);
		}
		if ((k == 2 && cp < 0x80) || (k == 3 && cp < 0x800) || (k == 4 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += k;
	}
	return true;
}

static void must(bool c)
{
	if (!c)
		abort();
}

/* The Zipkin tracer (http_zipkin.c): the input as the single b3 header
 * and, split at its first four '\n', as x-b3-traceid, spanid,
 * parentspanid and sampled: a context it takes, written back as B3
 * headers, reads back the same; and a span whose name, service name and
 * tag are the input is JSON that parses, the tag's value whole. */
static void zipkin(const char *s, size_t size)
{
	struct http_b3 b, b2;
	struct http_b3_in in = {.b3 = s, .b3_len = size};
	int rc = http_zipkin_b3_parse(&in, size & 1, &b);
	must(rc >= -EINVAL && rc <= 1);
	const char *parts[5] = {0};
	size_t lens[5] = {0}, k = 0, at = 0;
	for (size_t i = 0; i <= size && k < 5; i++)
		if (i == size || (s[i] == '\n' && k < 4)) {
			parts[k] = s + at;
			lens[k++] = i - at;
			at = i + 1;
		}
	struct http_b3_in m = {.trace_id = parts[0], .trace_id_len = lens[0],
			       .span_id = parts[1], .span_id_len = lens[1],
			       .parent_id = parts[2], .parent_id_len = lens[2],
			       .sampled = parts[3], .sampled_len = lens[3]};
	rc = http_zipkin_b3_parse(&m, size & 2, &b);
	if (rc == 1) {
		struct http_otel_span sp = {0};
		memcpy(sp.trace_id, b.trace_id, 16);
		sp.t128 = b.t128;
		sp.sampled = b.sampled;
		bool par = b.parent_id[0] | b.parent_id[7];
		struct arn_h1_edit e[4];
		char buf[HTTP_ZIPKIN_HDRS_LEN];
		unsigned n = http_zipkin_inject(&sp, b.span_id, par ? b.parent_id : NULL, buf, e);
		struct http_b3_in back = {.trace_id = e[0].value, .trace_id_len = e[0].value_len,
					  .span_id = e[1].value, .span_id_len = e[1].value_len,
					  .sampled = e[n - 1].value, .sampled_len = 1};
		if (par) {
			back.parent_id = e[2].value;
			back.parent_id_len = e[2].value_len;
		}
		must(http_zipkin_b3_parse(&back, !b.sampled, &b2) == 1);
		must(!memcmp(b2.trace_id, b.trace_id, 16) && !memcmp(b2.span_id, b.span_id, 8) &&
		     b2.t128 == b.t128 && b2.sampled == b.sampled);
		must(!par || !memcmp(b2.parent_id, b.parent_id, 8));
	}
	static char out[1 << 17];
	struct http_otel_span sp = {0};
	struct http_otel_kv kv = {"t", s, 1, (uint32_t)size};
	size_t n = http_zipkin_span_json(out, sizeof(out), &sp, sp.span_id, NULL, size & 1, true, s,
					 size, s, size, 1, 2, &kv, 1);
	must(n > 0);
	struct arn_json *j = arn_json_parse(out, n);
	must(j != NULL);
	if (size) {
		const struct arn_json *t = arn_json_get(j, "tags");
		must(t && t->n == 1 && t->v[0]->type == ARN_JSON_STRING);
		/* as long as the input unless a NUL cut the decoded value */
		must(strlen(t->v[0]->str) == size || memchr(s, 0, size));
	}
	arn_json_free(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	/* traceparent */
	struct http_otel_span sp = {0};
	if (http_otel_tp_parse(s, size, sp.trace_id, sp.parent_id, &sp.sampled) == 0) {
		memcpy(sp.span_id, sp.parent_id, 8);
		http_otel_tp_fmt(&sp);
		uint8_t t2[16], p2[8];
		bool s2;
		must(http_otel_tp_parse(sp.tp, HTTP_OTEL_TP_LEN, t2, p2, &s2) == 0);
		must(!memcmp(t2, sp.trace_id, 16) && !memcmp(p2, sp.parent_id, 8) &&
		     s2 == sp.sampled);
	}
	/* the decision over any id */
	struct arn_cfg_tracing t = {0};
	t.client_sampling = (struct arn_cfg_fraction){5000, 10000};
	t.random_sampling = (struct arn_cfg_fraction){5000, 10000};
	t.overall_sampling = (struct arn_cfg_fraction){9000, 10000};
	bool ch;
	enum http_otel_status st =
	    http_otel_decide(&t, NULL, s, size, size & 1, size & 2, size, &ch);
	must(st <= HTTP_OTEL_CLIENT && (!ch || size == 36));
	/* a span of the input's strings: name, tracestate, attributes */
	size_t q = size / 4;
	struct http_otel_kv kv[2] = {{s, s + q, (uint32_t)q, (uint32_t)q},
				     {"k", s + 2 * q, 1, (uint32_t)(size - 2 * q)}};
	sp.tracestate = s + q;
	sp.tracestate_len = (uint32_t)q;
	sp.has_parent = size & 4;
	static uint8_t out[1 << 17];
	size_t n = http_otel_span_encode(out, sizeof(out), &sp, s, q, 1, 2, kv, 2);
	must(n > 0);
	struct pbr r = {out, out + n};
	struct fld f;
	int rc;
	unsigned attrs = 0;
	while ((rc = r_next(&r, &f)) > 0) {
		if (f.num == 3 || f.num == 5)
			must(f.len == q && utf8_ok(f.data, f.len));
		if (f.num == 9) {
			struct pbr a = {f.data, f.data + f.len};
			struct fld g;
			int k;
			attrs++;
			while ((k = r_next(&a, &g)) > 0) {
				must(g.wt == 2);
				if (g.num == 1)
					must(utf8_ok(g.data, g.len));
				if (g.num == 2) {
					struct pbr v = {g.data, g.data + g.len};
					struct fld h;
					must(r_next(&v, &h) == 1 && h.num == 1 &&
					     utf8_ok(h.data, h.len));
				}
			}
			must(k == 0);
		}
	}
	must(rc == 0 && attrs == 2);
	/* the upstream attempt's span (spawn_upstream_span): kind CLIENT, its
	 * own id, the server span its parent, whatever the strings */
	for (int i = 0; i < 8; i++)
		sp.up_id[i] = (uint8_t)(sp.span_id[i] ^ 0x5a);
	n = http_otel_up_span_encode(out, sizeof(out), &sp, s, q, 1, 2, kv, 2);
	must(n > 0);
	r = (struct pbr){out, out + n};
	unsigned seen = 0;
	while ((rc = r_next(&r, &f)) > 0) {
		if (f.num == 2)
			seen |= 1, must(f.len == 8 && !memcmp(f.data, sp.up_id, 8));
		if (f.num == 4)
			seen |= 2, must(f.len == 8 && !memcmp(f.data, sp.span_id, 8));
		if (f.num == 6)
			seen |= 4, must(f.v == 3);
	}
	must(rc == 0 && seen == 7);
	zipkin(s, size);
	return 0;
}
