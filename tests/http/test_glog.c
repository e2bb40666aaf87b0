/*
 * The gRPC access loggers' encoders (http_glog.h): one OpenTelemetry
 * record's exact bytes, and the export around it decoded back field by
 * field (OTLP's ExportLogsServiceRequest, logs.proto's field numbers);
 * Envoy's ALS: a TCP entry's exact bytes, an HTTP entry and its
 * StreamAccessLogsMessage decoded back (accesslog.proto, als.proto).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "arn_access_log.h"
#include "arn_config.h"
#include "http_glog.h"
#include "http_pb.h"

/* LogRecord{1: time_unix_nano, 5: body{string_value}, 6: attributes} as
 * ScopeLogs.log_records (field 2): a client's byte that is not UTF-8
 * becomes '?', the length unchanged. Fails before: no encoder. */
static void test_otel_record_bytes(void **state)
{
	(void)state;
	static const uint8_t want[] = {
	    0x12, 0x23,						  /* log_records */
	    0x09, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, /* time_unix_nano */
	    0x2a, 0x0b, 0x0a, 0x09, 'G',  'E',	'T',  ' ',  '/',  ' ',	'2', '0', '0', /* body */
	    0x32, 0x0b, 0x0a, 0x02, 'u',  'a',	0x12, 0x05, 0x0a, 0x03, 'c', '?', 'l', /* attr */
	};
	struct http_glog_kv kv = {"ua", "c\xffl", 2, 3};
	uint8_t out[128];
	size_t n = http_glog_otel_record(out, sizeof(out), 0x0102030405060708ull, "GET / 200", 9,
					 &kv, 1, NULL, NULL);
	assert_int_equal(n, sizeof(want));
	assert_memory_equal(out, want, sizeof(want));
	/* one byte short: nothing */
	assert_int_equal(http_glog_otel_record(out, sizeof(want) - 1, 0x0102030405060708ull,
					       "GET / 200", 9, &kv, 1, NULL, NULL),
			 0);
	/* no body: no field 5 */
	n = http_glog_otel_record(out, sizeof(out), 1, NULL, 0, NULL, 0, NULL, NULL);
	static const uint8_t bare[] = {0x12, 0x09, 0x09, 1, 0, 0, 0, 0, 0, 0, 0};
	assert_int_equal(n, sizeof(bare));
	assert_memory_equal(out, bare, sizeof(bare));
}

/* A request with an active span: its LogRecord carries trace_id (9, the
 * 16 bytes) and span_id (10, the 8 bytes) after the attributes, as
 * Envoy's open_telemetry access logger sets them from the stream's active
 * span (access_log_impl.cc's emitLog, otlp_log_utils.cc's
 * populateTraceContext). Fails before: the record had no trace context. */
static void test_otel_record_trace_context(void **state)
{
	(void)state;
	static const uint8_t tid[16] = {0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd,
					0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31, 0x9c};
	static const uint8_t sid[8] = {0xb7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, 0x31};
	uint8_t out[128], want[64];
	size_t k = 0;
	want[k++] = 0x12;
	want[k++] = 9 + 18 + 10;
	want[k++] = 0x09;
	want[k++] = 1;
	memset(want + k, 0, 7);
	k += 7;
	want[k++] = 0x4a; /* 9: trace_id */
	want[k++] = 16;
	memcpy(want + k, tid, 16);
	k += 16;
	want[k++] = 0x52; /* 10: span_id */
	want[k++] = 8;
	memcpy(want + k, sid, 8);
	k += 8;
	size_t n = http_glog_otel_record(out, sizeof(out), 1, NULL, 0, NULL, 0, tid, sid);
	assert_int_equal(n, k);
	assert_memory_equal(out, want, k);
}

static struct fld nth(const uint8_t *m, size_t n, uint32_t num, unsigned idx)
{
	struct pbr r = {(uint8_t *)m, (uint8_t *)m + n};
	struct fld f;
	int rc;
	while ((rc = r_next(&r, &f)) > 0)
		if (f.num == num && idx-- == 0)
			return f;
	assert_int_equal(rc, 0);
	fail_msg("field %u not found", num);
	return f;
}

static void kv_is(const struct fld *kv, const char *k, const char *v)
{
	struct fld key = nth(kv->data, kv->len, 1, 0), av = nth(kv->data, kv->len, 2, 0);
	struct fld sv = nth(av.data, av.len, 1, 0);
	assert_int_equal(key.len, strlen(k));
	assert_memory_equal(key.data, k, key.len);
	assert_int_equal(sv.len, strlen(v));
	assert_memory_equal(sv.data, v, sv.len);
}

/* ExportLogsServiceRequest{1: ResourceLogs{1: Resource{1: log_name,
 * zone_name, cluster_name, node_name (the node's), then
 * resource_attributes}, 2: ScopeLogs{2: the records}}} after gRPC's
 * 5-byte prefix; disable_builtin_labels leaves the labels out. Fails
 * before: no encoder. */
static void test_otel_export_decoded(void **state)
{
	(void)state;
	http_glog_module_init("node-1", "clu", "zone-a", 6);
	struct arn_cfg_glog_kv ra = {"k8s.cluster.name", "east", 16, 4};
	struct arn_cfg_grpc_log cfg = {.log_name = "otel_envoy_accesslog",
				       .log_name_len = 20,
				       .res_attrs = &ra,
				       .n_res_attrs = 1,
				       .builtin_labels = true};
	uint8_t rec[64], out[1024];
	size_t rl = http_glog_otel_record(rec, sizeof(rec), 7, "b", 1, NULL, 0, NULL, NULL);
	assert_true(rl > 0);
	size_t n = http_glog_otel_export(out, sizeof(out), &cfg, rec, rl);
	assert_true(n > 5);
	assert_int_equal(out[0], 0);
	assert_int_equal(
	    ((size_t)out[1] << 24 | (size_t)out[2] << 16 | (size_t)out[3] << 8 | out[4]), n - 5);
	struct fld rs = nth(out + 5, n - 5, 1, 0);
	struct fld res = nth(rs.data, rs.len, 1, 0);
	struct fld kv;
	kv = nth(res.data, res.len, 1, 0), kv_is(&kv, "log_name", "otel_envoy_accesslog");
	kv = nth(res.data, res.len, 1, 1), kv_is(&kv, "zone_name", "zone-a");
	kv = nth(res.data, res.len, 1, 2), kv_is(&kv, "cluster_name", "clu");
	kv = nth(res.data, res.len, 1, 3), kv_is(&kv, "node_name", "node-1");
	kv = nth(res.data, res.len, 1, 4), kv_is(&kv, "k8s.cluster.name", "east");
	struct fld sl = nth(rs.data, rs.len, 2, 0);
	/* the ScopeLogs holds the records as queued, and no scope (field 1) */
	assert_int_equal(sl.len, rl);
	assert_memory_equal(sl.data, rec, rl);
	cfg.builtin_labels = false;
	n = http_glog_otel_export(out, sizeof(out), &cfg, rec, rl);
	rs = nth(out + 5, n - 5, 1, 0);
	res = nth(rs.data, rs.len, 1, 0);
	kv = nth(res.data, res.len, 1, 0), kv_is(&kv, "k8s.cluster.name", "east");
	/* past the buffer: nothing */
	assert_int_equal(http_glog_otel_export(out, n - 1, &cfg, rec, rl), 0);
}

#define S(x) ((struct arn_access_str){x, sizeof(x) - 1})

/* Envoy's TCPAccessLogEntry of a tcp_proxy session, exactly: common
 * properties (the downstream addresses, the direct one the same, the
 * start as a Timestamp, time_to_last_downstream_tx_byte and duration,
 * access_log_type TcpConnectionEnd) and connection_properties, as the
 * entries' log_entry field. The bytes were built by an encoder of the
 * wire format written apart (python, field numbers from Envoy's
 * accesslog.proto). Fails before: no encoder. */
static void test_als_tcp_entry_bytes(void **state)
{
	(void)state;
	static const uint8_t want[] = {
	    0x0a, 0x57, 0x0a, 0x4f, 0x12, 0x0f, 0x0a, 0x0d, 0x12, 0x08, 0x31, 0x30, 0x2e,
	    0x30, 0x2e, 0x30, 0x2e, 0x31, 0x18, 0xd2, 0x09, 0x1a, 0x0e, 0x0a, 0x0c, 0x12,
	    0x08, 0x31, 0x30, 0x2e, 0x30, 0x2e, 0x30, 0x2e, 0x32, 0x18, 0x50, 0x2a, 0x02,
	    0x08, 0x01, 0x62, 0x08, 0x08, 0x02, 0x10, 0x80, 0xca, 0xb5, 0xee, 0x01, 0xa2,
	    0x01, 0x0f, 0x0a, 0x0d, 0x12, 0x08, 0x31, 0x30, 0x2e, 0x30, 0x2e, 0x30, 0x2e,
	    0x31, 0x18, 0xd2, 0x09, 0xba, 0x01, 0x08, 0x08, 0x02, 0x10, 0x80, 0xca, 0xb5,
	    0xee, 0x01, 0x88, 0x02, 0x03, 0x12, 0x04, 0x08, 0x05, 0x10, 0x07,
	};
	struct arn_access_record r = {
	    .start_time_us = 1000000,
	    .duration_us = 2500000,
	    .request_duration_us = UINT64_MAX,
	    .response_duration_us = UINT64_MAX,
	    .response_tx_duration_us = UINT64_MAX,
	    .bytes_received = 5,
	    .bytes_sent = 7,
	    .downstream_remote = {0x0a000001, 1234},
	    .downstream_local = {0x0a000002, 80},
	};
	struct arn_cfg_grpc_log cfg = {.log_name = "t", .log_name_len = 1};
	uint8_t out[256];
	size_t n = http_glog_als_entry(out, sizeof(out), &r, &cfg, true, NULL, 0);
	assert_int_equal(n, sizeof(want));
	assert_memory_equal(out, want, sizeof(want));
	assert_int_equal(http_glog_als_entry(out, sizeof(want) - 1, &r, &cfg, true, NULL, 0), 0);
}

static void str_is(const struct fld *f, const char *v)
{
	assert_int_equal(f->len, strlen(v));
	assert_memory_equal(f->data, v, f->len);
}

static uint64_t varint_of(const uint8_t *m, size_t n, uint32_t num)
{
	struct pbr r = {(uint8_t *)m, (uint8_t *)m + n};
	struct fld f;
	while (r_next(&r, &f) > 0)
		if (f.num == num && f.wt == 0)
			return f.v;
	fail_msg("varint field %u not found", num);
	return 0;
}

/* Envoy's HTTPAccessLogEntry of a request, decoded back: the request's
 * method (enum), scheme, authority, path, user agent, referer,
 * forwarded-for, request id, original path, body bytes and an additional
 * header (its two values joined by ','); the response's code
 * (UInt32Value), body bytes, details, an additional header and trailer;
 * the upstream's address and cluster, the response flags (UF as
 * upstream_connection_failure, UAEX as unauthorized_details), the route,
 * the attempts, protocol HTTP11, access_log_type DownstreamEnd, TLS's
 * version and SNI and the peer's subject; the identifier (node, log_name)
 * first in the StreamAccessLogsMessage, then http_logs; a later message
 * of the stream without the identifier. Fails before: no encoder. */
static void test_als_http_entry_decoded(void **state)
{
	(void)state;
	http_glog_module_init("node-1", "clu", "zone-a", 6);
	struct arn_access_header rq[] = {
	    {S("user-agent"), S("curl/8")},
	    {S("referer"), S("http://r/")},
	    {S("x-forwarded-for"), S("10.9.9.9")},
	    {S("x-request-id"), S("rid-1")},
	    {S("x-envoy-original-path"), S("/o")},
	    {S("x-tenant"), S("a")},
	    {S("X-Tenant"), S("b")},
	};
	struct arn_access_header rs[] = {{S("x-up"), S("u1")}};
	struct arn_access_header tr[] = {{S("grpc-status"), S("0")}};
	struct arn_access_record r = {
	    .start_time_us = 1700000000123456,
	    .duration_us = 1500,
	    .request_duration_us = 10,
	    .response_duration_us = 900,
	    .response_tx_duration_us = 5,
	    .method = S("POST"),
	    .path = S("/p?q=1"),
	    .authority = S("example.com"),
	    .scheme = S("https"),
	    .protocol = S("HTTP/1.1"),
	    .req_headers = rq,
	    .n_req_headers = 7,
	    .resp_headers = rs,
	    .n_resp_headers = 1,
	    .resp_trailers = tr,
	    .n_resp_trailers = 1,
	    .response_code = 503,
	    .response_code_details =
		S("upstream_reset_before_response_started{connection_failure}"),
	    .response_flags =
		ARN_RF_BIT(UPSTREAM_CONNECTION_FAILURE) | ARN_RF_BIT(UNAUTHORIZED_EXTERNAL_SERVICE),
	    .bytes_received = 3,
	    .bytes_sent = 91,
	    .downstream_remote = {0x0a000001, 40000},
	    .downstream_local = {0x0a000002, 443},
	    .upstream_host = {0xc6120b0b, 8080},
	    .upstream_cluster = S("web"),
	    .route_name = S("rt"),
	    .requested_server_name = S("sni.test"),
	    .downstream_tls_version = S("TLSv1.3"),
	    .upstream_request_attempt_count = 2,
	};
	const char *hr[] = {"x-tenant"}, *hs[] = {"x-up"}, *ht[] = {"grpc-status"};
	struct arn_cfg_grpc_log cfg = {.log_name = "als",
				       .log_name_len = 3,
				       .req_hdrs = hr,
				       .n_req_hdrs = 1,
				       .resp_hdrs = hs,
				       .n_resp_hdrs = 1,
				       .resp_trls = ht,
				       .n_resp_trls = 1};
	uint8_t e[2048], out[4096];
	size_t en = http_glog_als_entry(e, sizeof(e), &r, &cfg, false, "CN=client", 9);
	assert_true(en > 0);
	/* a stream's later message: http_logs alone (Envoy's initMessage
	 * runs only while the stream is not started) */
	size_t n = http_glog_als_message(out, sizeof(out), &cfg, false, false, e, en);
	assert_int_equal(n, 5 + 1 + (en < 128 ? 1 : 2) + en);
	assert_int_equal(out[5], 2 << 3 | 2);
	assert_memory_equal(out + n - en, e, en);
	n = http_glog_als_message(out, sizeof(out), &cfg, false, true, e, en);
	assert_true(n > 5);
	assert_int_equal(
	    ((size_t)out[1] << 24 | (size_t)out[2] << 16 | (size_t)out[3] << 8 | out[4]), n - 5);
	const uint8_t *m = out + 5;
	size_t ml = n - 5;
	/* the identifier first */
	struct pbr rd = {(uint8_t *)m, (uint8_t *)m + ml};
	struct fld first;
	assert_int_equal(r_next(&rd, &first), 1);
	assert_int_equal(first.num, 1);
	struct fld node = nth(first.data, first.len, 1, 0), f;
	f = nth(node.data, node.len, 1, 0), str_is(&f, "node-1");
	f = nth(node.data, node.len, 2, 0), str_is(&f, "clu");
	struct fld loc = nth(node.data, node.len, 4, 0);
	f = nth(loc.data, loc.len, 2, 0), str_is(&f, "zone-a");
	f = nth(first.data, first.len, 2, 0), str_is(&f, "als");
	struct fld logs = nth(m, ml, 2, 0); /* http_logs */
	struct fld ent = nth(logs.data, logs.len, 1, 0);
	assert_int_equal(varint_of(ent.data, ent.len, 2), 2); /* HTTP11 */
	struct fld cm = nth(ent.data, ent.len, 1, 0);
	struct fld rq_ = nth(ent.data, ent.len, 3, 0), rp = nth(ent.data, ent.len, 4, 0);
	/* common properties */
	struct fld up = nth(cm.data, cm.len, 13, 0), sa = nth(up.data, up.len, 1, 0);
	f = nth(sa.data, sa.len, 2, 0), str_is(&f, "198.18.11.11");
	assert_int_equal(varint_of(sa.data, sa.len, 3), 8080);
	f = nth(cm.data, cm.len, 15, 0), str_is(&f, "web");
	f = nth(cm.data, cm.len, 19, 0), str_is(&f, "rt");
	assert_int_equal(varint_of(cm.data, cm.len, 24), 2);
	assert_int_equal(varint_of(cm.data, cm.len, 33), 6); /* DownstreamEnd */
	struct fld st = nth(cm.data, cm.len, 5, 0);
	assert_int_equal(varint_of(st.data, st.len, 1), 1700000000);
	assert_int_equal(varint_of(st.data, st.len, 2), 123456000);
	struct fld fl = nth(cm.data, cm.len, 16, 0);
	assert_int_equal(varint_of(fl.data, fl.len, 6), 1); /* upstream_connection_failure */
	struct fld ua = nth(fl.data, fl.len, 13, 0);
	assert_int_equal(varint_of(ua.data, ua.len, 1), 1); /* EXTERNAL_SERVICE */
	struct fld tls = nth(cm.data, cm.len, 4, 0);
	assert_int_equal(varint_of(tls.data, tls.len, 1), 4); /* TLSv1_3 */
	f = nth(tls.data, tls.len, 3, 0), str_is(&f, "sni.test");
	struct fld pc = nth(tls.data, tls.len, 5, 0);
	f = nth(pc.data, pc.len, 2, 0), str_is(&f, "CN=client");
	/* request */
	assert_int_equal(varint_of(rq_.data, rq_.len, 1), 3); /* POST */
	f = nth(rq_.data, rq_.len, 2, 0), str_is(&f, "https");
	f = nth(rq_.data, rq_.len, 3, 0), str_is(&f, "example.com");
	f = nth(rq_.data, rq_.len, 5, 0), str_is(&f, "/p?q=1");
	f = nth(rq_.data, rq_.len, 6, 0), str_is(&f, "curl/8");
	f = nth(rq_.data, rq_.len, 7, 0), str_is(&f, "http://r/");
	f = nth(rq_.data, rq_.len, 8, 0), str_is(&f, "10.9.9.9");
	f = nth(rq_.data, rq_.len, 9, 0), str_is(&f, "rid-1");
	f = nth(rq_.data, rq_.len, 10, 0), str_is(&f, "/o");
	assert_int_equal(varint_of(rq_.data, rq_.len, 12), 3);
	struct fld me = nth(rq_.data, rq_.len, 13, 0);
	f = nth(me.data, me.len, 1, 0), str_is(&f, "x-tenant");
	f = nth(me.data, me.len, 2, 0), str_is(&f, "a,b");
	/* response */
	struct fld code = nth(rp.data, rp.len, 1, 0);
	assert_int_equal(varint_of(code.data, code.len, 1), 503);
	assert_int_equal(varint_of(rp.data, rp.len, 3), 91);
	f = nth(rp.data, rp.len, 6, 0),
	str_is(&f, "upstream_reset_before_response_started{connection_failure}");
	me = nth(rp.data, rp.len, 4, 0);
	f = nth(me.data, me.len, 2, 0), str_is(&f, "u1");
	me = nth(rp.data, rp.len, 5, 0);
	f = nth(me.data, me.len, 1, 0), str_is(&f, "grpc-status");
	f = nth(me.data, me.len, 2, 0), str_is(&f, "0");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_otel_record_bytes),
	    cmocka_unit_test(test_otel_record_trace_context),
	    cmocka_unit_test(test_otel_export_decoded),
	    cmocka_unit_test(test_als_tcp_entry_bytes),
	    cmocka_unit_test(test_als_http_entry_decoded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
