/*
 * HCM tracing's pure parts (lib/http/http_otel.c): the traceparent
 * parser with Envoy's accept and reject cases (span_context_extractor.cc
 * and its test), the trace decision carried in x-request-id
 * (conn_manager_utility.cc mutateTracingRequestHeader), and the OTLP
 * bytes of a span and of an export, decoded back here field by field.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "arn_config_model.h"
#include "http_otel.h"
#include "http_pb.h"

static void test_traceparent(void **state)
{
	(void)state;
	uint8_t tid[16], pid[8];
	bool s = false;
	const char *ok = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
	assert_int_equal(http_otel_tp_parse(ok, strlen(ok), tid, pid, &s), 0);
	assert_true(s);
	assert_int_equal(tid[0], 0x0a);
	assert_int_equal(tid[15], 0x9c);
	assert_int_equal(pid[0], 0xb7);
	assert_int_equal(pid[7], 0x31);
	/* upper-case hex, any version, flags' low bit only */
	const char *up = "FF-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-02";
	assert_int_equal(http_otel_tp_parse(up, strlen(up), tid, pid, &s), 0);
	assert_false(s);
	static const char *const bad[] = {
	    "",								/* length */
	    "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-", /* 56 bytes */
	    "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-1",	/* 54 */
	    "00-0af7651916cd43dd8448eb211c80319cb-7ad6b7169203331-01",	/* field sizes */
	    "00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333101-",	/* hyphenation */
	    "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331x01",	/* hyphenation */
	    "0x-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",	/* hex */
	    "00-0af7651916cd43dd8448eb211c80319g-b7ad6b7169203331-01",	/* hex */
	    "00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333 -01",	/* hex */
	    "00-00000000000000000000000000000000-b7ad6b7169203331-01",	/* trace id 0 */
	    "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",	/* parent id 0 */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(http_otel_tp_parse(bad[i], strlen(bad[i]), tid, pid, &s), -EINVAL);
	/* a NUL inside is a byte like another: not hex */
	char nul[56];
	memcpy(nul, ok, 56);
	nul[10] = 0;
	assert_int_equal(http_otel_tp_parse(nul, 55, tid, pid, &s), -EINVAL);
	/* the traceparent sent: lower-case, version 00, the sampled flag */
	struct http_otel_span sp = {.sampled = true};
	memcpy(sp.trace_id, tid, 16);
	memset(sp.span_id, 0xab, 8);
	http_otel_tp_fmt(&sp);
	assert_string_equal(sp.tp, "00-0af7651916cd43dd8448eb211c80319c-abababababababab-01");
}

static struct arn_cfg_tracing tr(uint32_t client, uint32_t rnd, uint32_t overall)
{
	struct arn_cfg_tracing t = {0};
	t.client_sampling = (struct arn_cfg_fraction){client, 10000};
	t.random_sampling = (struct arn_cfg_fraction){rnd, 10000};
	t.overall_sampling = (struct arn_cfg_fraction){overall, 10000};
	return t;
}

static void test_decision(void **state)
{
	(void)state;
	bool ch;
	/* "0000270f" = 9999: % 10000 = 9999; "00000000": 0 */
	const char *lo = "00000000-0000-4000-8000-000000000000";
	const char *hi = "0000270f-0000-4000-8000-000000000000";
	struct arn_cfg_tracing t = tr(10000, 10000, 10000);
	assert_int_equal(http_otel_decide(&t, NULL, lo, 36, false, false, 0, &ch),
			 HTTP_OTEL_SAMPLED);
	assert_true(ch);
	/* random sampling 50 %: the id's integer decides */
	t = tr(10000, 5000, 10000);
	assert_int_equal(http_otel_decide(&t, NULL, lo, 36, false, false, 0, &ch),
			 HTTP_OTEL_SAMPLED);
	assert_int_equal(http_otel_decide(&t, NULL, hi, 36, false, false, 0, &ch),
			 HTTP_OTEL_NO_TRACE);
	assert_false(ch);
	/* x-client-trace-id with client sampling; x-envoy-force-trace */
	t = tr(10000, 0, 10000);
	assert_int_equal(http_otel_decide(&t, NULL, hi, 36, true, false, 5, &ch), HTTP_OTEL_CLIENT);
	assert_int_equal(http_otel_decide(&t, NULL, hi, 36, false, true, 5, &ch), HTTP_OTEL_FORCED);
	t = tr(0, 0, 10000);
	assert_int_equal(http_otel_decide(&t, NULL, hi, 36, true, false, 5, &ch),
			 HTTP_OTEL_NO_TRACE);
	/* overall sampling 0: nothing, even forced */
	t = tr(10000, 10000, 0);
	assert_int_equal(http_otel_decide(&t, NULL, lo, 36, true, true, 0, &ch),
			 HTTP_OTEL_NO_TRACE);
	/* an id that carries its status keeps it (the overall test aside) */
	t = tr(10000, 0, 10000);
	const char *forced = "0000270f-0000-a000-8000-000000000000";
	assert_int_equal(http_otel_rid_status(forced, 36), HTTP_OTEL_FORCED);
	assert_int_equal(http_otel_decide(&t, NULL, forced, 36, false, false, 0, &ch),
			 HTTP_OTEL_FORCED);
	assert_false(ch);
	/* the route's overrides */
	struct arn_cfg_route_trace rt = {0};
	rt.random_sampling = (struct arn_cfg_fraction){0, 100};
	t = tr(10000, 10000, 10000);
	assert_int_equal(http_otel_decide(&t, &rt, lo, 36, false, false, 0, &ch),
			 HTTP_OTEL_NO_TRACE);
	/* an id Envoy cannot read (not hex first, or not a UUID): untouched */
	assert_int_equal(http_otel_decide(&t, NULL, "zz", 2, false, false, 0, &ch),
			 HTTP_OTEL_NO_TRACE);
	assert_false(ch);
	assert_int_equal(http_otel_decide(&t, NULL, "00000000abc", 11, false, false, 0, &ch),
			 HTTP_OTEL_NO_TRACE);
	assert_false(ch);
	assert_int_equal(http_otel_decide(&t, NULL, NULL, 0, false, false, 0, &ch),
			 HTTP_OTEL_NO_TRACE);
}

/* A length-delimited field @p num of @p m, its @p idx-th. */
static bool field(const uint8_t *m, size_t n, uint32_t num, unsigned idx, struct fld *out)
{
	struct pbr r = {(uint8_t *)m, (uint8_t *)m + n};
	struct fld f;
	int rc;
	while ((rc = r_next(&r, &f)) > 0)
		if (f.num == num && idx-- == 0) {
			*out = f;
			return true;
		}
	assert_int_equal(rc, 0);
	return false;
}

static bool str_is(const struct fld *f, const char *s)
{
	return f->len == strlen(s) && memcmp(f->data, s, f->len) == 0;
}

static void test_otlp_bytes(void **state)
{
	(void)state;
	struct http_otel_span sp = {.has_parent = true, .sampled = true};
	for (int i = 0; i < 16; i++)
		sp.trace_id[i] = (uint8_t)(i + 1);
	memset(sp.span_id, 0x22, 8);
	memset(sp.parent_id, 0x33, 8);
	sp.tracestate = "k=v";
	sp.tracestate_len = 3;
	struct http_otel_kv kv[] = {
	    {"component", "proxy", 9, 5},
	    {"user_agent",
	     "a\xff"
	     "b\xc3\xa9",
	     10, 5}, /* one byte not UTF-8 */
	};
	uint8_t b[512];
	size_t n = http_otel_span_encode(b, sizeof(b), &sp, "ingress", 7, 1000, 2500, kv, 2);
	assert_true(n > 0);
	struct fld f;
	assert_true(field(b, n, 1, 0, &f));
	assert_int_equal(f.len, 16);
	assert_memory_equal(f.data, sp.trace_id, 16);
	assert_true(field(b, n, 2, 0, &f) && f.len == 8 && f.data[0] == 0x22);
	assert_true(field(b, n, 3, 0, &f) && str_is(&f, "k=v"));
	assert_true(field(b, n, 4, 0, &f) && f.len == 8 && f.data[0] == 0x33);
	assert_true(field(b, n, 5, 0, &f) && str_is(&f, "ingress"));
	/* kind SERVER (varint 2), start and end fixed64: exact bytes */
	static const uint8_t tail_head[] = {0x30, 0x02, 0x39, 0xe8, 0x03, 0, 0, 0, 0, 0,
					    0,	  0x41, 0xc4, 0x09, 0,	  0, 0, 0, 0, 0};
	const uint8_t *k = memmem(b, n, tail_head, sizeof(tail_head));
	assert_non_null(k);
	assert_true(field(b, n, 9, 1, &f));
	struct fld key, val, s;
	assert_true(field(f.data, f.len, 1, 0, &key) && str_is(&key, "user_agent"));
	assert_true(field(f.data, f.len, 2, 0, &val));
	assert_true(field(val.data, val.len, 1, 0, &s) && str_is(&s, "a?b\xc3\xa9"));
	/* no room: 0 */
	assert_int_equal(http_otel_span_encode(b, 20, &sp, "ingress", 7, 1, 2, kv, 2), 0);

	/* the export: a gRPC frame of ExportTraceServiceRequest */
	uint8_t q[600];
	q[0] = 0x12; /* ScopeSpans.spans (2), length n */
	q[1] = (uint8_t)n;
	memcpy(q + 2, b, n);
	uint8_t o[800];
	size_t on = http_otel_export_encode(o, sizeof(o), "svc", 3, q, n + 2);
	assert_true(on > 5);
	assert_int_equal(o[0], 0);
	assert_int_equal(((size_t)o[1] << 24 | o[2] << 16 | o[3] << 8 | o[4]), on - 5);
	struct fld rs, res, attr, sc, span;
	assert_true(field(o + 5, on - 5, 1, 0, &rs));	    /* resource_spans */
	assert_true(field(rs.data, rs.len, 1, 0, &res));    /* resource */
	assert_true(field(res.data, res.len, 1, 0, &attr)); /* attributes */
	assert_true(field(attr.data, attr.len, 1, 0, &key) && str_is(&key, "service.name"));
	assert_true(field(attr.data, attr.len, 2, 0, &val));
	assert_true(field(val.data, val.len, 1, 0, &s) && str_is(&s, "svc"));
	assert_true(field(rs.data, rs.len, 2, 0, &sc)); /* scope_spans */
	assert_true(field(sc.data, sc.len, 2, 0, &span));
	assert_int_equal(span.len, n);
	assert_memory_equal(span.data, b, n);
	assert_int_equal(http_otel_export_encode(o, 40, "svc", 3, q, n + 2), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_traceparent),
	    cmocka_unit_test(test_decision),
	    cmocka_unit_test(test_otlp_bytes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
