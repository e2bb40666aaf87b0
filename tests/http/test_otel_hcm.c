/*
 * HCM tracing on the real TCP stack over the fake lib/net (hcm_harness.h,
 * whose "dyn" listener traces: HH_TRACING): one request's span as the
 * collector gets it (the export's head and its OTLP bytes decoded back
 * here, tag by tag), the export's answer, and fuzz_hcm's seed
 * dyn_tracing replayed, with nothing left behind at the end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "hcm_harness.h"
#include "arn_stats_envoy.h"
#include "http_pb.h"

#define OK5 "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
#define TID "0af7651916cd43dd8448eb211c80319c"
#define PID "b7ad6b7169203331"

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

static uint64_t otel_stat(unsigned id)
{
	struct arn_stats_scope *sc = arn_stats_scope_get(&arn_stats_otel_schema, NULL, NULL);
	assert_non_null(sc);
	uint64_t v = arn_stats_counter_value(sc, id);
	arn_stats_scope_put(sc);
	return v;
}

static uint8_t cap[64 * 1024];

/* Field @p num (length-delimited), its @p idx-th, of @p m. */
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

/* The string value of attribute @p key of span @p s, or NULL. */
static const char *attr(const struct fld *s, const char *key, char *buf, size_t cap_)
{
	struct fld kv, k, v, sv;
	for (unsigned i = 0; field(s->data, s->len, 9, i, &kv); i++) {
		assert_true(field(kv.data, kv.len, 1, 0, &k));
		if (k.len != strlen(key) || memcmp(k.data, key, k.len))
			continue;
		assert_true(field(kv.data, kv.len, 2, 0, &v));
		assert_true(field(v.data, v.len, 1, 0, &sv));
		assert_true(sv.len < cap_);
		memcpy(buf, sv.data, sv.len);
		buf[sv.len] = 0;
		return buf;
	}
	return NULL;
}

static bool hex_is(const uint8_t *p, size_t n, const char *hex)
{
	static const char d[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++)
		if (hex[2 * i] != d[p[i] >> 4] || hex[2 * i + 1] != d[p[i] & 15])
			return false;
	return true;
}

/* One sampled request through the "dyn" listener: the upstream gets the
 * trace continued (the client's trace id, a new span id, flag 01) and
 * x-request-id's status '9'; after the 5 s flush interval the collector
 * ("two", HTTP/1.1 here) gets a POST to TraceService/Export with gRPC's
 * headers and one ExportTraceServiceRequest whose span is the request's:
 * ids, parent, name, kind, times, Envoy's tags and the custom tag. A
 * trailers-only OK counts it sent. Fails before: the listener's tracing
 * is refused. */
static void test_otel_export_bytes(void **state)
{
	(void)state;
	hh_begin(1);
	uint64_t sent0 = otel_stat(ARN_OTEL_spans_sent), tf0 = otel_stat(ARN_OTEL_timer_flushed),
		 fail0 = otel_stat(ARN_OTEL_exports_failed);
	hh_open(0, 82);
	hh_settle();
	uint32_t rx0[N_PEERS];
	snapshot(rx0);
	send_str(hh_client(0), "GET /t/1?q=1 HTTP/1.1\r\nHost: a\r\n"
			       "x-request-id: 0000270f-0000-4000-8000-000000000000\r\n"
			       "traceparent: 00-" TID "-" PID "-01\r\ntracestate: k=v\r\n"
			       "x-user: alice\r\nUser-Agent: ua/1\r\n\r\n");
	struct peer *u = upstream_that_got(rx0);
	assert_non_null(u);
	assert_non_null(strstr(u->log, "traceparent: 00-" TID "-"));
	assert_null(strstr(u->log, "-" PID "-"));
	assert_non_null(strstr(u->log, "-01\r\n"));
	assert_non_null(strstr(u->log, "tracestate: k=v\r\n"));
	assert_non_null(strstr(u->log, "x-request-id: 0000270f-0000-9000-8000-000000000000\r\n"));
	const char *tp = strstr(u->log, "traceparent: 00-" TID "-") + 16 + 33;
	char span_id[17];
	memcpy(span_id, tp, 16);
	span_id[16] = 0;
	send_str(u, OK5);
	assert_non_null(strstr(hh_client(0)->log, "HTTP/1.1 200 OK"));
	/* the flush interval */
	snapshot(rx0);
	for (int i = 0; i < 52; i++) {
		hh_advance(100);
		if (upstream_that_got(rx0))
			break;
	}
	struct peer *col = upstream_that_got(rx0);
	assert_non_null(col);
	assert_int_equal(otel_stat(ARN_OTEL_timer_flushed) - tf0, 1);
	memcpy(cap, col->log, col->log_len);
	col->cap = cap;
	col->cap_len = col->log_len;
	col->cap_max = sizeof(cap);
	hh_settle();
	const char *h = (const char *)cap;
	assert_memory_equal(h,
			    "POST /opentelemetry.proto.collector.trace.v1.TraceService/Export "
			    "HTTP/1.1\r\n",
			    71);
	assert_non_null(strstr(h, "\r\ncontent-type: application/grpc\r\n"));
	assert_non_null(strstr(h, "\r\nte: trailers\r\n"));
	assert_non_null(strstr(h, "\r\ngrpc-timeout: 300m\r\n"));
	const char *cl = strstr(h, "\r\ncontent-length: ");
	assert_non_null(cl);
	size_t blen = strtoul(cl + 18, NULL, 10);
	const uint8_t *body = (const uint8_t *)strstr(h, "\r\n\r\n") + 4;
	assert_int_equal((size_t)(body - cap) + blen, col->cap_len);
	/* the gRPC frame: uncompressed, its length */
	assert_int_equal(body[0], 0);
	assert_int_equal((size_t)body[1] << 24 | body[2] << 16 | body[3] << 8 | body[4], blen - 5);
	struct fld rs, res, kv, k, ss, sp, f;
	char b[512];
	assert_true(field(body + 5, blen - 5, 1, 0, &rs));
	assert_false(field(body + 5, blen - 5, 1, 1, &f)); /* one ResourceSpans */
	assert_true(field(rs.data, rs.len, 1, 0, &res));
	assert_true(field(res.data, res.len, 1, 0, &kv));
	assert_true(field(kv.data, kv.len, 1, 0, &k));
	assert_int_equal(k.len, 12);
	assert_memory_equal(k.data, "service.name", 12);
	assert_true(field(rs.data, rs.len, 2, 0, &ss));
	assert_true(field(ss.data, ss.len, 2, 0, &sp));
	assert_false(field(ss.data, ss.len, 2, 1, &f)); /* one span */
	assert_true(field(sp.data, sp.len, 1, 0, &f) && f.len == 16 && hex_is(f.data, 16, TID));
	assert_true(field(sp.data, sp.len, 2, 0, &f) && f.len == 8 && hex_is(f.data, 8, span_id));
	assert_true(field(sp.data, sp.len, 3, 0, &f) && f.len == 3 && !memcmp(f.data, "k=v", 3));
	assert_true(field(sp.data, sp.len, 4, 0, &f) && f.len == 8 && hex_is(f.data, 8, PID));
	assert_true(field(sp.data, sp.len, 5, 0, &f) && f.len == 7 &&
		    !memcmp(f.data, "ingress", 7));
	/* kind SERVER, then start and end (fixed64, end >= start) */
	struct pbr r = {sp.data, sp.data + sp.len};
	uint64_t kind = 0, start = 0, end = 0;
	while (r_next(&r, &f) > 0) {
		if (f.num == 6)
			kind = f.v;
		if (f.num == 7 || f.num == 8) {
			uint64_t t = 0;
			for (int i = 7; i >= 0; i--)
				t = t << 8 | r.p[-8 + i];
			*(f.num == 7 ? &start : &end) = t;
		}
	}
	assert_int_equal(kind, 2);
	assert_true(start > 1600000000ull * 1000000000ull && end >= start);
	assert_string_equal(attr(&sp, "component", b, sizeof(b)), "proxy");
	assert_string_equal(attr(&sp, "http.method", b, sizeof(b)), "GET");
	assert_string_equal(attr(&sp, "http.url", b, sizeof(b)), "http://a/t/1?q=1");
	assert_string_equal(attr(&sp, "http.protocol", b, sizeof(b)), "HTTP/1.1");
	assert_string_equal(attr(&sp, "http.status_code", b, sizeof(b)), "200");
	assert_string_equal(attr(&sp, "response_flags", b, sizeof(b)), "-");
	assert_string_equal(attr(&sp, "response_size", b, sizeof(b)), "5");
	assert_string_equal(attr(&sp, "request_size", b, sizeof(b)), "0");
	assert_string_equal(attr(&sp, "user_agent", b, sizeof(b)), "ua/1");
	assert_string_equal(attr(&sp, "downstream_cluster", b, sizeof(b)), "-");
	assert_string_equal(attr(&sp, "upstream_cluster", b, sizeof(b)), "dyn");
	assert_string_equal(attr(&sp, "guid:x-request-id", b, sizeof(b)),
			    "0000270f-0000-9000-8000-000000000000");
	assert_string_equal(attr(&sp, "u", b, sizeof(b)), "alice"); /* the custom tag */
	assert_non_null(attr(&sp, "peer.address", b, sizeof(b)));
	assert_non_null(attr(&sp, "upstream_address", b, sizeof(b)));
	assert_null(attr(&sp, "error", b, sizeof(b)));
	assert_int_equal(otel_stat(ARN_OTEL_spans_sent) - sent0, 1);
	send_str(col, "HTTP/1.1 200 OK\r\ncontent-type: application/grpc\r\ngrpc-status: 0\r\n"
		      "content-length: 0\r\n\r\n");
	assert_int_equal(otel_stat(ARN_OTEL_exports_failed) - fail0, 0);
	col->cap = NULL;
	hh_end();
}

/* A run that ends with a span queued, its flush due in the run's last
 * moments and the collector's SYN unanswered: the export starts and fails
 * within the run's end (hh_finish's 5 s), the queue and the export give
 * back their request buffer and their listener pin, and nothing is left
 * (hh_end's checks); the span counts as sent, the export as failed. */
static void test_otel_run_end_with_export_pending(void **state)
{
	(void)state;
	hh_begin(1);
	uint64_t drop0 = otel_stat(ARN_OTEL_spans_dropped);
	hh_open(0, 82);
	hh_settle();
	uint32_t rx0[N_PEERS];
	snapshot(rx0);
	send_str(hh_client(0), "GET /t/2 HTTP/1.1\r\nHost: a\r\n"
			       "traceparent: 00-" TID "-" PID "-01\r\n\r\n");
	struct peer *u = upstream_that_got(rx0);
	assert_non_null(u);
	send_str(u, OK5); /* the span queued: the flush comes 5 s from now */
	hh_syn(2);	  /* the collector's SYN goes unanswered */
	hh_advance(150);
	uint64_t sent0 = otel_stat(ARN_OTEL_spans_sent), fail0 = otel_stat(ARN_OTEL_exports_failed);
	hh_end();
	assert_int_equal(otel_stat(ARN_OTEL_spans_sent) - sent0, 1);
	assert_int_equal(otel_stat(ARN_OTEL_exports_failed) - fail0, 1);
	assert_int_equal(otel_stat(ARN_OTEL_spans_dropped) - drop0, 0);
}

static void no_own(struct hh_rd *r, uint8_t op)
{
	(void)r;
	(void)op;
}

/* fuzz_hcm's seed dyn_tracing (tests/http/gen_hcm_seeds.py) replayed:
 * five sampled spans (the malformed traceparent makes none, the request
 * without an id is not sampled) go in one export, answered OK; the
 * later ones go at the flush interval to an export never answered; and
 * the run's end finds nothing left (hh_end: the worker's request
 * buffers, pools and configuration pins). The fuzzer starts from there.
 * Fails before: the "dyn" listener's tracing is refused. */
static void test_otel_fuzz_seed(void **state)
{
	(void)state;
	FILE *fp = fopen("tests/http/corpus/hcm/dyn_tracing", "rb");
	assert_non_null(fp);
	static uint8_t seed[4096];
	size_t n = fread(seed, 1, sizeof(seed), fp);
	fclose(fp);
	assert_true(n > 1 && n < sizeof(seed));
	hh_begin(1);
	hh_end();
	uint64_t sent0 = otel_stat(ARN_OTEL_spans_sent);
	hh_fuzz_run(seed, n, no_own);
	assert_true(otel_stat(ARN_OTEL_spans_sent) - sent0 >= 5);
}

/* The span ids the upstream's traceparent carries (16 hex after TID). */
static void tp_id(const struct peer *u, char *id)
{
	const char *tp = strstr(u->log, "traceparent: 00-" TID "-");
	assert_non_null(tp);
	memcpy(id, tp + 16 + 33, 16);
	id[16] = 0;
}

static uint64_t span_kind(const struct fld *sp)
{
	struct pbr r = {sp->data, sp->data + sp->len};
	struct fld f;
	while (r_next(&r, &f) > 0)
		if (f.num == 6)
			return f.v;
	return 0;
}

/* spawn_upstream_span: true (Envoy Gateway v1.2's tracing): a request
 * retried once (503, then 200) makes a CLIENT span per attempt, the
 * SERVER span their parent. Each attempt's traceparent carries its own
 * CLIENT span's id (not the server span's); the export holds the three
 * spans: the CLIENT ones named "router dyn egress", kind 3, parent the
 * SERVER span, the first with http.status_code 503 and error, the retry
 * with retry.count 1 and 200, both with upstream_cluster dyn and the
 * custom tag. Fails before: the listener is refused (unknown field
 * spawnUpstreamSpan: hh_apply aborts). */
static void test_otel_upstream_spans(void **state)
{
	(void)state;
	hh_begin(1);
	static char b[32768];
	snprintf(b, sizeof(b), HH_LDYN, HH_ROUTE_DYN);
	char *at = strstr(b, "\"tracing\":{");
	static const char su[] = "\"spawn_upstream_span\":true,";
	assert_non_null(at);
	at += 11;
	memmove(at + sizeof(su) - 1, at, strlen(at) + 1);
	memcpy(at, su, sizeof(su) - 1);
	hh_apply(ARN_TYPE_URL_LISTENER, b);
	hh_cfg_changed = true;
	hh_settle();
	hh_open(0, 82);
	hh_settle();
	uint32_t rx0[N_PEERS];
	snapshot(rx0);
	send_str(hh_client(0), "GET /t/3 HTTP/1.1\r\nHost: a\r\nx-user: bob\r\n"
			       "traceparent: 00-" TID "-" PID "-01\r\n\r\n");
	struct peer *u1 = upstream_that_got(rx0);
	assert_non_null(u1);
	char id1[17], id2[17];
	tp_id(u1, id1);
	snapshot(rx0);
	send_str(u1, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n");
	for (int i = 0; i < 50 && !upstream_that_got(rx0); i++)
		hh_advance(10);
	struct peer *u2 = upstream_that_got(rx0);
	assert_non_null(u2);
	tp_id(u2, id2);
	assert_string_not_equal(id1, id2);
	send_str(u2, OK5);
	assert_non_null(strstr(hh_client(0)->log, "HTTP/1.1 200 OK"));
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
	const char *h = (const char *)cap;
	const char *cl = strstr(h, "\r\ncontent-length: ");
	assert_non_null(cl);
	size_t blen = strtoul(cl + 18, NULL, 10);
	const uint8_t *body = (const uint8_t *)strstr(h, "\r\n\r\n") + 4;
	struct fld rs, ss, sp[3], f, sid;
	char v[512];
	assert_true(field(body + 5, blen - 5, 1, 0, &rs));
	assert_true(field(rs.data, rs.len, 2, 0, &ss));
	for (unsigned i = 0; i < 3; i++)
		assert_true(field(ss.data, ss.len, 2, i, &sp[i]));
	assert_false(field(ss.data, ss.len, 2, 3, &f)); /* three spans */
	/* in the order they ended: the two attempts, then the request */
	assert_int_equal(span_kind(&sp[0]), 3);
	assert_int_equal(span_kind(&sp[1]), 3);
	assert_int_equal(span_kind(&sp[2]), 2);
	assert_true(field(sp[2].data, sp[2].len, 2, 0, &sid) && sid.len == 8);
	assert_true(field(sp[2].data, sp[2].len, 4, 0, &f) && hex_is(f.data, 8, PID));
	const char *ids[2] = {id1, id2};
	for (unsigned i = 0; i < 2; i++) {
		assert_true(field(sp[i].data, sp[i].len, 1, 0, &f) && hex_is(f.data, 16, TID));
		assert_true(field(sp[i].data, sp[i].len, 2, 0, &f) && f.len == 8 &&
			    hex_is(f.data, 8, ids[i]));
		assert_true(field(sp[i].data, sp[i].len, 4, 0, &f) && f.len == 8 &&
			    !memcmp(f.data, sid.data, 8));
		assert_true(field(sp[i].data, sp[i].len, 5, 0, &f) && f.len == 17 &&
			    !memcmp(f.data, "router dyn egress", 17));
		assert_string_equal(attr(&sp[i], "component", v, sizeof(v)), "proxy");
		assert_string_equal(attr(&sp[i], "upstream_cluster", v, sizeof(v)), "dyn");
		assert_string_equal(attr(&sp[i], "upstream_cluster.name", v, sizeof(v)), "dyn");
		assert_string_equal(attr(&sp[i], "http.protocol", v, sizeof(v)), "HTTP/1.1");
		assert_non_null(attr(&sp[i], "upstream_address", v, sizeof(v)));
		assert_string_equal(attr(&sp[i], "u", v, sizeof(v)), "bob");
		assert_null(attr(&sp[i], "http.method", v, sizeof(v)));
	}
	/* the server span's own id went upstream on no attempt */
	assert_false(hex_is(sid.data, 8, id1) || hex_is(sid.data, 8, id2));
	assert_null(attr(&sp[0], "retry.count", v, sizeof(v)));
	assert_string_equal(attr(&sp[0], "http.status_code", v, sizeof(v)), "503");
	assert_string_equal(attr(&sp[0], "error", v, sizeof(v)), "true");
	assert_string_equal(attr(&sp[1], "retry.count", v, sizeof(v)), "1");
	assert_string_equal(attr(&sp[1], "http.status_code", v, sizeof(v)), "200");
	assert_null(attr(&sp[1], "error", v, sizeof(v)));
	assert_string_equal(attr(&sp[2], "http.status_code", v, sizeof(v)), "200");
	send_str(col, "HTTP/1.1 200 OK\r\ncontent-type: application/grpc\r\ngrpc-status: 0\r\n"
		      "content-length: 0\r\n\r\n");
	col->cap = NULL;
	hh_end();
}

/* Insert @p what (JSON members, each with its comma) after @p after in
 * @p b, in place. */
static void json_insert(char *b, size_t cap_, const char *after, const char *what)
{
	char *at = strstr(b, after);
	assert_non_null(at);
	at += strlen(after);
	size_t n = strlen(what);
	assert_true(strlen(b) + n < cap_);
	memmove(at + n, at, strlen(at) + 1);
	memcpy(at, what, n);
}

/* A request that neither went upstream nor was answered here (held by
 * the fault filter's delay, then its client reset) gets its span when it
 * ends, with Envoy's decision at the head: with use_remote_address, a
 * client inside internal_address_config is internal, and an internal
 * request's x-envoy-force-trace is honoured (ConnectionManagerUtility::
 * mutateTracingRequestHeader), so with random_sampling 0 its span is
 * sampled and exported. Failed before: such a request's decision took
 * every use_remote_address request as the edge, ignored force-trace and
 * sent no span. An external client's force-trace is still ignored. */
static void test_otel_span_of_an_abandoned_internal_request(void **state)
{
	(void)state;
	for (int internal = 1; internal >= 0; internal--) {
		hh_begin(1);
		static char b[32768];
		snprintf(b, sizeof(b), HH_LDYN, HH_ROUTE_DYN);
		json_insert(b, sizeof(b), "\"generate_request_id\":false,",
			    internal ? "\"use_remote_address\":true,\"internal_address_config\":{"
				       "\"cidr_ranges\":[{\"address_prefix\":\"198.18.0.0\","
				       "\"prefix_len\":16}]},"
				     : "\"use_remote_address\":true,\"internal_address_config\":{"
				       "\"cidr_ranges\":[{\"address_prefix\":\"10.0.0.0\","
				       "\"prefix_len\":8}]},");
		json_insert(b, sizeof(b), "\"tracing\":{", "\"random_sampling\":{\"value\":0},");
		hh_apply(ARN_TYPE_URL_LISTENER, b);
		hh_cfg_changed = true;
		hh_settle();
		uint64_t sent0 = otel_stat(ARN_OTEL_spans_sent);
		hh_open(0, 82);
		hh_settle();
		uint32_t rx0[N_PEERS];
		snapshot(rx0);
		send_str(hh_client(0), "GET /t/5 HTTP/1.1\r\nHost: a\r\n"
				       "x-request-id: 0000270f-0000-4000-8000-000000000000\r\n"
				       "x-envoy-force-trace: true\r\n"
				       "x-envoy-fault-delay-request: 3000\r\n\r\n");
		hh_advance(100);
		assert_null(upstream_that_got(rx0)); /* held by the delay */
		hh_reset(hh_client(0));
		hh_settle();
		snapshot(rx0);
		for (int i = 0; i < 60; i++) {
			hh_advance(100);
			if (upstream_that_got(rx0))
				break;
		}
		struct peer *col = upstream_that_got(rx0);
		if (!internal) {
			assert_null(col);
			assert_int_equal(otel_stat(ARN_OTEL_spans_sent) - sent0, 0);
			hh_end();
			continue;
		}
		if (!col)
			fail_msg("no span exported for the internal request's force-trace");
		assert_int_equal(otel_stat(ARN_OTEL_spans_sent) - sent0, 1);
		send_str(col, "HTTP/1.1 200 OK\r\ncontent-type: application/grpc\r\n"
			      "grpc-status: 0\r\ncontent-length: 0\r\n\r\n");
		hh_end();
	}
}

int main(void)
{
	hh_init(false);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_otel_export_bytes),
	    cmocka_unit_test(test_otel_fuzz_seed),
	    cmocka_unit_test(test_otel_run_end_with_export_pending),
	    cmocka_unit_test(test_otel_upstream_spans),
	    cmocka_unit_test(test_otel_span_of_an_abandoned_internal_request),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
