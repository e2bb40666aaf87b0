/*
 * The gRPC access loggers' encoders (http_glog.h): one OpenTelemetry
 * record's exact bytes, and the export around it decoded back field by
 * field (OTLP's ExportLogsServiceRequest, logs.proto's field numbers).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

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
	size_t n =
	    http_glog_otel_record(out, sizeof(out), 0x0102030405060708ull, "GET / 200", 9, &kv, 1);
	assert_int_equal(n, sizeof(want));
	assert_memory_equal(out, want, sizeof(want));
	/* one byte short: nothing */
	assert_int_equal(http_glog_otel_record(out, sizeof(want) - 1, 0x0102030405060708ull,
					       "GET / 200", 9, &kv, 1),
			 0);
	/* no body: no field 5 */
	n = http_glog_otel_record(out, sizeof(out), 1, NULL, 0, NULL, 0);
	static const uint8_t bare[] = {0x12, 0x09, 0x09, 1, 0, 0, 0, 0, 0, 0, 0};
	assert_int_equal(n, sizeof(bare));
	assert_memory_equal(out, bare, sizeof(bare));
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
	size_t rl = http_glog_otel_record(rec, sizeof(rec), 7, "b", 1, NULL, 0);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_otel_record_bytes),
	    cmocka_unit_test(test_otel_export_decoded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
