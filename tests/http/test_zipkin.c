/*
 * HCM tracing with the Zipkin tracer (http_zipkin.c, http_otel.c's
 * stream and queue part): the B3 headers' accept and reject rules
 * (the cases of Envoy's span_context_extractor_test.cc), the headers sent
 * upstream, one span's JSON v2 parsed back, and on the real TCP stack
 * over the fake lib/net (hcm_harness.h's "dyn" listener, its provider
 * made Zipkin): one request's report as the collector gets it, and the
 * worker's queue bounded while the collector never answers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "arn_json.h"
#include "arn_stats_envoy.h"
#include "hcm_harness.h"
#include "http_zipkin.h"

/* ---- B3 ---------------------------------------------------------------------------------- */

static int parse_b3(const char *b3, bool traced, struct http_b3 *o)
{
	struct http_b3_in in = {0};
	in.b3 = b3;
	in.b3_len = strlen(b3);
	return http_zipkin_b3_parse(&in, traced, o);
}

static bool hex_is(const uint8_t *p, size_t n, const char *hex)
{
	static const char d[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++)
		if (hex[2 * i] != d[p[i] >> 4] || hex[2 * i + 1] != d[p[i] & 15])
			return false;
	return true;
}

/* The single b3 header's forms Envoy takes: 64- and 128-bit trace ids,
 * with or without the sampling state and parent; a lone sampling state
 * is no context; the state decides the sampled flag ('d' debug is
 * sampled), its absence the request's decision. */
static void test_b3_single_accepted(void **state)
{
	(void)state;
	struct http_b3 b;
	assert_int_equal(parse_b3("0000000000000001-0000000000000002", false, &b), 1);
	assert_false(b.t128);
	assert_false(b.sampled);
	assert_true(hex_is(b.trace_id, 16, "00000000000000000000000000000001"));
	assert_true(hex_is(b.span_id, 8, "0000000000000002"));
	assert_true(hex_is(b.parent_id, 8, "0000000000000000"));
	assert_int_equal(parse_b3("0000000000000001-0000000000000002", true, &b), 1);
	assert_true(b.sampled);
	assert_int_equal(parse_b3("0000000000000001-0000000000000002-1", false, &b), 1);
	assert_true(b.sampled);
	assert_int_equal(parse_b3("0000000000000001-0000000000000002-0", true, &b), 1);
	assert_false(b.sampled);
	assert_int_equal(
	    parse_b3("0000000000000001-0000000000000002-d-0000000000000003", false, &b), 1);
	assert_true(b.sampled);
	assert_true(hex_is(b.parent_id, 8, "0000000000000003"));
	assert_int_equal(
	    parse_b3("80f198ee56343ba864fe8b2a57d3eff7-e457b5a2e4d86bd1-1-05e3ac9a4f6e3b90", false,
		     &b),
	    1);
	assert_true(b.t128);
	assert_true(b.sampled);
	assert_true(hex_is(b.trace_id, 16, "80f198ee56343ba864fe8b2a57d3eff7"));
	assert_true(hex_is(b.span_id, 8, "e457b5a2e4d86bd1"));
	assert_true(hex_is(b.parent_id, 8, "05e3ac9a4f6e3b90"));
	/* a 32-digit trace id whose high half is 0: a 64-bit one */
	assert_int_equal(parse_b3("00000000000000000000000000000001-0000000000000002-1", false, &b),
			 1);
	assert_false(b.t128);
	for (const char *f = "01d"; *f; f++) {
		char s[2] = {*f, 0};
		assert_int_equal(parse_b3(s, *f == '0', &b), 0);
		assert_int_equal(b.sampled, *f != '0');
	}
}

/* What Envoy refuses (ExtractorException: no span at all). */
static void test_b3_single_refused(void **state)
{
	(void)state;
	static const char *const bad[] = {
	    "",							    /* empty */
	    "-",						    /* an invalid sampling state */
	    "x",						    /* same */
	    "0000000000000001",					    /* truncated */
	    "0000000000000001-000000000000000",			    /* truncated */
	    "0000000000000001-0000000000000002-",		    /* truncated */
	    "0000000000000001-0000000000000002-11",		    /* the state is one byte */
	    "0000000000000001-0000000000000002-x",		    /* an invalid state */
	    "0000000000000001-0000000000000002-1-",		    /* truncated */
	    "0000000000000001-0000000000000002-1-00000",	    /* truncated */
	    "0000000000000001-0000000000000002-1-000000000000000x", /* the parent */
	    "000000000000000x-0000000000000002",		    /* the trace id */
	    "0000000000000001-000000000000000x",		    /* the span id */
	    "0000000000000001+0000000000000002",		    /* no span id */
	    "0000000000000001-0000000000000002+1",		    /* no sampling state */
	    "00000000000000010000000000000002-0000000000000003-1-0000000000000004x", /* long */
	    "0x00000000000001-0000000000000002", /* hex digits only */
	};
	struct http_b3 b;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = parse_b3(bad[i], true, &b);
		if (rc != -EINVAL)
			fail_msg("b3 '%s': %d, wanted -EINVAL", bad[i], rc);
	}
}

/* The multiple headers: both x-b3-traceid and x-b3-spanid make a context
 * (one alone none), x-b3-parentspanid when not empty, x-b3-sampled "1"
 * or "true" sampled and anything else not, whatever the decision; a
 * malformed id refused. */
static void test_b3_multi(void **state)
{
	(void)state;
	struct http_b3 b;
	struct http_b3_in in = {0};
#define SET(f, v)                                                                                  \
	do {                                                                                       \
		in.f = v;                                                                          \
		in.f##_len = in.f ? strlen(v) : 0;                                                 \
	} while (0)
	SET(trace_id, "463ac35c9f6413ad48485a3953bb6124");
	assert_int_equal(http_zipkin_b3_parse(&in, true, &b), 0);
	assert_true(b.sampled);
	SET(span_id, "a2fb4a1d1a96d312");
	assert_int_equal(http_zipkin_b3_parse(&in, false, &b), 1);
	assert_true(b.t128);
	assert_false(b.sampled);
	assert_true(hex_is(b.trace_id, 16, "463ac35c9f6413ad48485a3953bb6124"));
	assert_true(hex_is(b.span_id, 8, "a2fb4a1d1a96d312"));
	SET(parent_id, "");
	assert_int_equal(http_zipkin_b3_parse(&in, false, &b), 1);
	assert_true(hex_is(b.parent_id, 8, "0000000000000000"));
	SET(parent_id, "0020000000000001");
	SET(sampled, "true");
	assert_int_equal(http_zipkin_b3_parse(&in, false, &b), 1);
	assert_true(b.sampled);
	assert_true(hex_is(b.parent_id, 8, "0020000000000001"));
	SET(sampled, "0");
	assert_int_equal(http_zipkin_b3_parse(&in, true, &b), 1);
	assert_false(b.sampled);
	SET(sampled, "yes");
	assert_int_equal(http_zipkin_b3_parse(&in, true, &b), 1);
	assert_false(b.sampled);
	SET(trace_id, "1");
	assert_int_equal(http_zipkin_b3_parse(&in, true, &b), 1);
	assert_false(b.t128);
	assert_true(hex_is(b.trace_id + 8, 8, "0000000000000001"));
	SET(trace_id, "xyz");
	assert_int_equal(http_zipkin_b3_parse(&in, true, &b), -EINVAL);
	SET(trace_id, "463ac35c9f6413ad48485a3953bb612x");
	assert_int_equal(http_zipkin_b3_parse(&in, true, &b), -EINVAL);
	SET(trace_id, "1");
	SET(span_id, "a2fb4a1d1a96d31g");
	assert_int_equal(http_zipkin_b3_parse(&in, true, &b), -EINVAL);
	SET(span_id, "1");
	SET(parent_id, "-1");
	assert_int_equal(http_zipkin_b3_parse(&in, true, &b), -EINVAL);
	/* the single header wins over them */
	SET(b3, "0000000000000005-0000000000000006-1");
	assert_int_equal(http_zipkin_b3_parse(&in, false, &b), 1);
	assert_true(hex_is(b.span_id, 8, "0000000000000006"));
#undef SET
}

/* ZipkinSpan::injectContext: the trace id (16 or 32 hex), the span id,
 * the parent when set, x-b3-sampled 1 or 0. */
static void test_b3_inject(void **state)
{
	(void)state;
	struct http_otel_span sp = {0};
	memcpy(sp.trace_id, "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10", 16);
	sp.sampled = true;
	uint8_t id[8] = {0xaa, 0xbb, 0, 0, 0, 0, 0, 1}, par[8] = {0, 0, 0, 0, 0, 0, 0, 2};
	struct arn_h1_edit e[4];
	char buf[HTTP_ZIPKIN_HDRS_LEN];
	assert_int_equal(http_zipkin_inject(&sp, id, par, buf, e), 4);
	assert_int_equal(e[0].value_len, 16);
	assert_memory_equal(e[0].name, "x-b3-traceid", 12);
	assert_memory_equal(e[0].value, "090a0b0c0d0e0f10", 16);
	assert_memory_equal(e[1].name, "x-b3-spanid", 11);
	assert_memory_equal(e[1].value, "aabb000000000001", 16);
	assert_memory_equal(e[2].name, "x-b3-parentspanid", 17);
	assert_memory_equal(e[2].value, "0000000000000002", 16);
	assert_memory_equal(e[3].name, "x-b3-sampled", 12);
	assert_memory_equal(e[3].value, "1", 1);
	sp.t128 = true;
	sp.sampled = false;
	assert_int_equal(http_zipkin_inject(&sp, id, NULL, buf, e), 3);
	assert_int_equal(e[0].value_len, 32);
	assert_memory_equal(e[0].value, "0102030405060708090a0b0c0d0e0f10", 32);
	assert_memory_equal(e[2].name, "x-b3-sampled", 12);
	assert_memory_equal(e[2].value, "0", 1);
}

static const char *jstr(const struct arn_json *j, const char *k)
{
	const struct arn_json *v = arn_json_get(j, k);
	assert_non_null(v);
	assert_int_equal(v->type, ARN_JSON_STRING);
	return v->str;
}

/* One SERVER span and one CLIENT span as JSON v2, parsed back: the
 * fields Envoy's JsonV2Serializer writes, ids in hex, microseconds, the
 * tags (an empty value left out, a client's quote, backslash, control
 * byte and bytes that are not UTF-8 escaped or replaced), "shared" on the
 * SERVER span only. */
static void test_span_json(void **state)
{
	(void)state;
	struct http_otel_span sp = {0};
	sp.trace_id[15] = 0x11;
	sp.span_id[7] = 0x22;
	uint8_t par[8] = {0, 0, 0, 0, 0, 0, 0, 0x33};
	static const char hostile[] = "a\"b\\c\x01\xff\xc3\xa9";
	struct http_otel_kv kv[3] = {
	    {"http.method", "GET", 11, 3},
	    {"zone", "", 4, 0},
	    {"x", hostile, 1, sizeof(hostile) - 1},
	};
	char out[2048];
	size_t n = http_zipkin_span_json(out, sizeof(out), &sp, sp.span_id, par, false, true,
					 "a.example", 9, "gw", 2, 1700000000000001ull, 42, kv, 3);
	assert_true(n > 0);
	struct arn_json *j = arn_json_parse(out, n);
	if (!j)
		fail_msg("not JSON: %.*s", (int)n, out);
	assert_string_equal(jstr(j, "traceId"), "0000000000000011");
	assert_string_equal(jstr(j, "id"), "0000000000000022");
	assert_string_equal(jstr(j, "parentId"), "0000000000000033");
	assert_string_equal(jstr(j, "kind"), "SERVER");
	assert_string_equal(jstr(j, "name"), "a.example");
	assert_string_equal(arn_json_get(j, "timestamp")->lit, "1700000000000001");
	assert_string_equal(arn_json_get(j, "duration")->lit, "42");
	assert_string_equal(jstr(arn_json_get(j, "localEndpoint"), "serviceName"), "gw");
	const struct arn_json *tags = arn_json_get(j, "tags");
	assert_non_null(tags);
	assert_int_equal(tags->n, 2);
	assert_string_equal(jstr(tags, "http.method"), "GET");
	assert_null(arn_json_get(tags, "zone"));
	assert_string_equal(jstr(tags, "x"), "a\"b\\c\x01?\xc3\xa9");
	const struct arn_json *an = arn_json_get(j, "annotations");
	assert_non_null(an);
	assert_int_equal(an->n, 1);
	assert_string_equal(jstr(an->v[0], "value"), "ss");
	assert_string_equal(arn_json_get(an->v[0], "timestamp")->lit, "1700000000000043");
	assert_string_equal(arn_json_get(j, "shared")->lit, "true");
	arn_json_free(j);
	/* a CLIENT span of a 128-bit trace: no "shared", "cr" */
	sp.t128 = true;
	sp.trace_id[0] = 0x80;
	n = http_zipkin_span_json(out, sizeof(out), &sp, par, sp.span_id, true, true, "r", 1, "", 0,
				  5, 6, kv, 1);
	assert_true(n > 0);
	j = arn_json_parse(out, n);
	assert_non_null(j);
	assert_string_equal(jstr(j, "traceId"), "80000000000000000000000000000011");
	assert_string_equal(jstr(j, "kind"), "CLIENT");
	assert_string_equal(jstr(j, "parentId"), "0000000000000022");
	assert_null(arn_json_get(j, "shared"));
	assert_int_equal(arn_json_get(j, "localEndpoint")->n, 0);
	assert_string_equal(jstr(arn_json_get(j, "annotations")->v[0], "value"), "cr");
	arn_json_free(j);
	/* too small a buffer: 0, not a cut object */
	assert_int_equal(http_zipkin_span_json(out, 100, &sp, par, sp.span_id, true, true, "r", 1,
					       "", 0, 5, 6, kv, 3),
			 0);
}

/* ---- on the fake network ----------------------------------------------------------------- */

#define OK5 "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
#define TID "463ac35c9f6413ad48485a3953bb6124"
#define SID "a2fb4a1d1a96d312"
#define PSID "0020000000000001"

static void snapshot(uint32_t *rx0)
{
	for (int i = 0; i < N_PEERS; i++)
		rx0[i] = peers[i].rx;
}

static struct peer *upstream_that_got(const uint32_t *rx0)
{
	for (unsigned u = 0; u < N_UPSTREAMS; u++) {
		struct peer *p = hh_upstream(u);
		if (p && p->rx != rx0[p - peers])
			return p;
	}
	return NULL;
}

static void send_str(struct peer *p, const char *s)
{
	assert_non_null(p);
	hh_send(p, s, (uint32_t)strlen(s), 0);
	hh_settle();
}

static uint64_t zk_stat(unsigned id)
{
	struct arn_stats_scope *sc = arn_stats_scope_get(&arn_stats_zipkin_schema, NULL, NULL);
	assert_non_null(sc);
	uint64_t v = arn_stats_counter_value(sc, id);
	arn_stats_scope_put(sc);
	return v;
}

/* The "dyn" listener with the Zipkin tracer (collector "two") in place of
 * HH_TRACING's OpenTelemetry one; @p extra: more ZipkinConfig fields. */
static void apply_zipkin_su(const char *extra, bool spawn)
{
	static char b[32768], l[33000];
	snprintf(b, sizeof(b), HH_LDYN, HH_ROUTE_DYN);
	if (spawn) { /* HCM tracing's spawn_upstream_span: true */
		static const char su[] = "\"spawn_upstream_span\":true,";
		char *at = strstr(b, "\"tracing\":{");
		assert_non_null(at);
		at += 11;
		memmove(at + sizeof(su) - 1, at, strlen(at) + 1);
		memcpy(at, su, sizeof(su) - 1);
	}
	char *p = strstr(b, "\"provider\":{");
	char *e = strstr(b, "\"timeout\":\"0.3s\"}}}");
	assert_non_null(p);
	assert_non_null(e);
	e += strlen("\"timeout\":\"0.3s\"}}}");
	snprintf(l, sizeof(l),
		 "%.*s\"provider\":{\"name\":\"envoy.tracers.zipkin\",\"typed_config\":{\"@type\":"
		 "\"type.googleapis.com/envoy.config.trace.v3.ZipkinConfig\",\"collector_cluster\":"
		 "\"two\",\"collector_endpoint\":\"/api/v2/spans\",\"collector_endpoint_version\":"
		 "\"HTTP_JSON\",\"collector_hostname\":\"zipkin.example\"%s}}%s",
		 (int)(p - b), b, extra, e);
	hh_apply(ARN_TYPE_URL_LISTENER, l);
	hh_cfg_changed = true;
	hh_settle();
}

static void apply_zipkin(const char *extra)
{
	apply_zipkin_su(extra, false);
}

static uint8_t cap[128 * 1024];

/* Advance to the flush interval: the collector that got the report. */
static struct peer *flushed(void)
{
	uint32_t rx0[N_PEERS];
	snapshot(rx0);
	for (int i = 0; i < 52; i++) {
		hh_advance(100);
		if (upstream_that_got(rx0))
			break;
	}
	struct peer *col = upstream_that_got(rx0);
	assert_non_null(col);
	memcpy(cap, col->log, col->log_len);
	col->cap = cap;
	col->cap_len = col->log_len;
	col->cap_max = sizeof(cap);
	hh_settle();
	return col;
}

/* The report's JSON array (the POST's body). */
static struct arn_json *report(const char **head)
{
	const char *h = (const char *)cap;
	*head = h;
	const char *cl = strstr(h, "\r\ncontent-length: ");
	assert_non_null(cl);
	size_t blen = strtoul(cl + 18, NULL, 10);
	const char *body = strstr(h, "\r\n\r\n") + 4;
	struct arn_json *j = arn_json_parse(body, blen);
	if (!j)
		fail_msg("not JSON: %.*s", (int)blen, body);
	assert_int_equal(j->type, ARN_JSON_ARRAY);
	return j;
}

/* One sampled request with the multiple B3 headers (a 128-bit trace):
 * with shared_span_context (Envoy's default) the upstream gets the
 * client's trace id and span id and parent, x-b3-sampled 1; after the
 * 5 s flush interval the collector ("two") gets a POST of
 * application/json to collector_endpoint with collector_hostname as Host:
 * a JSON array of the request's span (its ids, kind SERVER, "shared", the
 * name the request's authority, Envoy's tags and the custom one); 202
 * counts the report sent. With shared_span_context false the upstream
 * gets a new span id whose parent is the client's span. Fails before: the
 * listener is refused ("Arion has only the OpenTelemetry tracer"). */
static void test_zipkin_report(void **state)
{
	(void)state;
	hh_begin(1);
	apply_zipkin("");
	uint64_t sent0 = zk_stat(ARN_ZIPKIN_spans_sent), tf0 = zk_stat(ARN_ZIPKIN_timer_flushed),
		 ok0 = zk_stat(ARN_ZIPKIN_reports_sent);
	hh_open(0, 82);
	hh_settle();
	uint32_t rx0[N_PEERS];
	snapshot(rx0);
	send_str(hh_client(0), "GET /t/1?q=1 HTTP/1.1\r\nHost: a\r\n"
			       "x-request-id: 0000270f-0000-4000-8000-000000000000\r\n"
			       "x-b3-traceid: " TID "\r\nx-b3-spanid: " SID "\r\n"
			       "x-b3-parentspanid: " PSID "\r\nx-b3-sampled: 1\r\n"
			       "x-user: al\"ice\r\nUser-Agent: ua/1\r\n\r\n");
	struct peer *u = upstream_that_got(rx0);
	assert_non_null(u);
	assert_non_null(strstr(u->log, "x-b3-traceid: " TID "\r\n"));
	assert_non_null(strstr(u->log, "x-b3-spanid: " SID "\r\n"));
	assert_non_null(strstr(u->log, "x-b3-parentspanid: " PSID "\r\n"));
	assert_non_null(strstr(u->log, "x-b3-sampled: 1\r\n"));
	assert_null(strstr(u->log, "traceparent"));
	send_str(u, OK5);
	assert_non_null(strstr(hh_client(0)->log, "HTTP/1.1 200 OK"));
	struct peer *col = flushed();
	assert_int_equal(zk_stat(ARN_ZIPKIN_timer_flushed) - tf0, 1);
	assert_int_equal(zk_stat(ARN_ZIPKIN_spans_sent) - sent0, 1);
	const char *h;
	struct arn_json *j = report(&h);
	assert_memory_equal(h, "POST /api/v2/spans HTTP/1.1\r\n", 29);
	assert_non_null(strstr(h, "\r\ncontent-type: application/json\r\n"));
	assert_non_null(strstr(h, "zipkin.example\r\n"));
	assert_int_equal(j->n, 1);
	const struct arn_json *s = j->v[0];
	assert_string_equal(jstr(s, "traceId"), TID);
	assert_string_equal(jstr(s, "id"), SID);
	assert_string_equal(jstr(s, "parentId"), PSID);
	assert_string_equal(jstr(s, "kind"), "SERVER");
	assert_string_equal(jstr(s, "name"), "a");
	assert_string_equal(arn_json_get(s, "shared")->lit, "true");
	const struct arn_json *tags = arn_json_get(s, "tags");
	assert_non_null(tags);
	assert_string_equal(jstr(tags, "http.method"), "GET");
	assert_string_equal(jstr(tags, "http.url"), "http://a/t/1?q=1");
	assert_string_equal(jstr(tags, "http.status_code"), "200");
	assert_string_equal(jstr(tags, "upstream_cluster"), "dyn");
	assert_string_equal(jstr(tags, "component"), "proxy");
	assert_string_equal(jstr(tags, "u"), "al\"ice");
	assert_string_equal(jstr(tags, "guid:x-request-id"),
			    "0000270f-0000-9000-8000-000000000000");
	arn_json_free(j);
	send_str(col, "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n");
	assert_int_equal(zk_stat(ARN_ZIPKIN_reports_sent) - ok0, 1);
	col->cap = NULL;
	hh_end();
	/* not shared: a new span id upstream, the client's its parent */
	hh_begin(1);
	apply_zipkin(",\"shared_span_context\":false");
	hh_open(0, 82);
	hh_settle();
	snapshot(rx0);
	send_str(hh_client(0), "GET /t/2 HTTP/1.1\r\nHost: a\r\n"
			       "b3: " TID "-" SID "-1\r\n\r\n");
	u = upstream_that_got(rx0);
	assert_non_null(u);
	const char *at = strstr(u->log, "GET /t/2");
	assert_non_null(at);
	assert_non_null(strstr(at, "x-b3-traceid: " TID "\r\n"));
	assert_null(strstr(at, "x-b3-spanid: " SID "\r\n"));
	assert_non_null(strstr(at, "x-b3-spanid: "));
	assert_non_null(strstr(at, "x-b3-parentspanid: " SID "\r\n"));
	send_str(u, OK5);
	hh_end();
}

/* The worker's queue bounded in bytes while the collector never answers:
 * five spans go in a report left unanswered; spans of 7 KB each (a
 * client's x-user tag) then fill the 64 KiB queue, and past it each is
 * dropped and counted (tracing.zipkin.spans_dropped); requests are
 * answered as ever. When the report times out (5 s) it counts failed, and
 * the flush interval's next tick reports what the queue kept. Fails
 * before: the listener is refused. */
static void test_zipkin_queue_bound(void **state)
{
	(void)state;
	hh_begin(1);
	apply_zipkin("");
	uint64_t sent0 = zk_stat(ARN_ZIPKIN_spans_sent), drop0 = zk_stat(ARN_ZIPKIN_spans_dropped),
		 fail0 = zk_stat(ARN_ZIPKIN_reports_failed);
	hh_open(0, 82);
	hh_settle();
	static char big[7000], req[8000];
	memset(big, 'u', sizeof(big) - 1);
	struct peer *col = NULL;
	for (int i = 0; i < 5 + 12; i++) {
		uint32_t rx0[N_PEERS];
		snapshot(rx0);
		snprintf(req, sizeof(req),
			 "GET /t/%d HTTP/1.1\r\nHost: a\r\nx-b3-sampled: 1\r\nx-user: %s\r\n\r\n",
			 i, i >= 5 ? big : "");
		send_str(hh_client(0), req);
		struct peer *u = upstream_that_got(rx0);
		assert_non_null(u);
		snapshot(rx0);
		send_str(u, OK5);
		if (i == 4) { /* the fifth span: the report, never answered */
			col = upstream_that_got(rx0);
			assert_non_null(col);
		}
	}
	assert_non_null(col);
	assert_int_equal(zk_stat(ARN_ZIPKIN_spans_sent) - sent0, 5);
	uint64_t dropped = zk_stat(ARN_ZIPKIN_spans_dropped) - drop0;
	/* 64 KiB holds 8 of them, not 12 */
	assert_true(dropped >= 3 && dropped <= 4);
	assert_int_equal(zk_stat(ARN_ZIPKIN_reports_failed) - fail0, 0);
	for (int i = 0; i < 60; i++)
		hh_advance(100);
	assert_int_equal(zk_stat(ARN_ZIPKIN_reports_failed) - fail0, 1);
	/* the flush interval's next tick */
	for (int i = 0; i < 50 && zk_stat(ARN_ZIPKIN_spans_sent) - sent0 == 5; i++)
		hh_advance(100);
	assert_int_equal(zk_stat(ARN_ZIPKIN_spans_sent) - sent0, 5 + 12 - dropped);
	hh_end();
}

/* The x-b3-spanid and x-b3-parentspanid an upstream got. */
static void b3_ids(const struct peer *u, char *id, char *parent)
{
	const char *a = strstr(u->log, "x-b3-spanid: "), *b = strstr(u->log, "x-b3-parentspanid: ");
	assert_non_null(a);
	assert_non_null(b);
	memcpy(id, a + 13, 16);
	memcpy(parent, b + 19, 16);
	id[16] = parent[16] = 0;
}

/* spawn_upstream_span with the Zipkin tracer (stage 2): a request retried
 * once (503, then 200) makes a CLIENT span per attempt; each attempt's
 * upstream gets its own span id as x-b3-spanid and the request's SERVER
 * span as x-b3-parentspanid; the report holds the three spans, the
 * CLIENT ones named "router dyn egress" with their "cr" annotation, no
 * "shared", the 503 one with error, the retry with retry.count 1; the
 * SERVER span (shared: the client's span id) is their parent. Fails
 * before: the listener is refused. */
static void test_zipkin_upstream_spans(void **state)
{
	(void)state;
	hh_begin(1);
	apply_zipkin_su("", true);
	hh_open(0, 82);
	hh_settle();
	uint32_t rx0[N_PEERS];
	snapshot(rx0);
	send_str(hh_client(0), "GET /t/3 HTTP/1.1\r\nHost: a\r\nx-user: bob\r\n"
			       "b3: " TID "-" SID "-1\r\n\r\n");
	struct peer *u1 = upstream_that_got(rx0);
	assert_non_null(u1);
	char id1[17], id2[17], p1[17], p2[17];
	b3_ids(u1, id1, p1);
	assert_string_equal(p1, SID); /* the request's span: the client's (shared) */
	snapshot(rx0);
	send_str(u1, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n");
	for (int i = 0; i < 50 && !upstream_that_got(rx0); i++)
		hh_advance(10);
	struct peer *u2 = upstream_that_got(rx0);
	assert_non_null(u2);
	const char *at = strstr(u2->log, "GET /t/3");
	assert_non_null(at);
	b3_ids(u2, id2, p2);
	assert_ptr_not_equal(u2, u1); /* (else its log holds both attempts) */
	assert_string_not_equal(id1, id2);
	assert_string_equal(p2, SID);
	send_str(u2, OK5);
	assert_non_null(strstr(hh_client(0)->log, "HTTP/1.1 200 OK"));
	flushed();
	const char *h;
	struct arn_json *j = report(&h);
	struct peer *col = NULL;
	for (unsigned u = 0; u < N_UPSTREAMS; u++)
		if (hh_upstream(u) && hh_upstream(u)->cap == cap)
			col = hh_upstream(u);
	assert_non_null(col);
	assert_int_equal(j->n, 3);
	/* in the order they ended: the two attempts, then the request */
	const char *ids[2] = {id1, id2};
	for (unsigned i = 0; i < 2; i++) {
		const struct arn_json *c = j->v[i];
		assert_string_equal(jstr(c, "kind"), "CLIENT");
		assert_string_equal(jstr(c, "traceId"), TID);
		assert_string_equal(jstr(c, "id"), ids[i]);
		assert_string_equal(jstr(c, "parentId"), SID);
		assert_string_equal(jstr(c, "name"), "router dyn egress");
		assert_null(arn_json_get(c, "shared"));
		assert_string_equal(jstr(arn_json_get(c, "annotations")->v[0], "value"), "cr");
		assert_string_equal(jstr(arn_json_get(c, "tags"), "u"), "bob");
	}
	const struct arn_json *t0 = arn_json_get(j->v[0], "tags"),
			      *t1 = arn_json_get(j->v[1], "tags");
	assert_string_equal(jstr(t0, "http.status_code"), "503");
	assert_string_equal(jstr(t0, "error"), "true");
	assert_null(arn_json_get(t0, "retry.count"));
	assert_string_equal(jstr(t1, "retry.count"), "1");
	assert_null(arn_json_get(t1, "error"));
	const struct arn_json *sv = j->v[2];
	assert_string_equal(jstr(sv, "kind"), "SERVER");
	assert_string_equal(jstr(sv, "id"), SID);
	assert_null(arn_json_get(sv, "parentId"));
	assert_string_equal(arn_json_get(sv, "shared")->lit, "true");
	arn_json_free(j);
	send_str(col, "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n");
	col->cap = NULL;
	hh_end();
}

int main(void)
{
	hh_init(false);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_b3_single_accepted), cmocka_unit_test(test_b3_single_refused),
	    cmocka_unit_test(test_b3_multi),	       cmocka_unit_test(test_b3_inject),
	    cmocka_unit_test(test_span_json),	       cmocka_unit_test(test_zipkin_report),
	    cmocka_unit_test(test_zipkin_queue_bound), cmocka_unit_test(test_zipkin_upstream_spans),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
