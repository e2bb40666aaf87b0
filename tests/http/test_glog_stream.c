/*
 * Envoy's ALS stream (envoy.access_loggers.http_grpc, lib/http/http_glog.c)
 * on the real TCP stack over the fake lib/net (hcm_harness.h): a listener
 * on port 82 logs each request to cluster "two" (its collector, HTTP/1.1
 * here: the stream's messages are its chunks). Followed: Envoy's
 * GrpcAccessLoggerImpl / GrpcAccessLogClient (access_loggers/common/
 * grpc_access_logger.h): one StreamAccessLogs stream kept open per logger
 * and worker, the identifier on its first message only, a new stream
 * (identifier again) at the next flush after the collector closed or reset
 * it, and canLogMore's drop once the buffer holds buffer_size_bytes and
 * the stream cannot take it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "hcm_harness.h"
#include "arn_stats_envoy.h"
#include "http_pb.h"

#define OK5 "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
#define ALS_POST "POST /envoy.service.accesslog.v3.AccessLogService/StreamAccessLogs HTTP/1.1\r\n"
#define GRPC_OK                                                                                    \
	"HTTP/1.1 200 OK\r\ncontent-type: application/grpc\r\ngrpc-status: 0\r\n"                  \
	"content-length: 0\r\n\r\n"

/* clang-format off */
#define ALS_LISTENER                                                                               \
	"{\"name\":\"dyn\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","              \
	"\"port_value\":82}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","                  \
	"\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.filters.network."      \
	"http_connection_manager.v3.HttpConnectionManager\",\"stat_prefix\":\"als\","              \
	"\"access_log\":[{\"name\":\"g\",\"typed_config\":{\"@type\":\"type.googleapis.com/"       \
	"envoy.extensions.access_loggers.grpc.v3.HttpGrpcAccessLogConfig\",\"common_config\":{"    \
	"\"log_name\":\"als-t\",\"transport_api_version\":\"V3\",\"grpc_service\":{"               \
	"\"envoy_grpc\":{\"cluster_name\":\"two\"},\"timeout\":\"0.3s\"},"                         \
	"\"buffer_size_bytes\":%u,\"buffer_flush_interval\":\"1s\"}}}],"                          \
	"\"route_config\":{\"name\":\"r\",\"virtual_hosts\":[{\"name\":\"all\",\"domains\":"      \
	"[\"*\"],\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}]}]},"  \
	"\"http_filters\":[{\"name\":\"envoy.filters.http.router\",\"typed_config\":{\"@type\":"  \
	"\"type.googleapis.com/envoy.extensions.filters.http.router.v3.Router\"}}]}}]}]}"
/* clang-format on */

static uint64_t als_stat(unsigned id)
{
	struct arn_stats_scope *sc = arn_stats_scope_get(&arn_stats_glog_als_schema, NULL, NULL);
	assert_non_null(sc);
	uint64_t v = arn_stats_counter_value(sc, id);
	arn_stats_scope_put(sc);
	return v;
}

static void send_str(struct peer *p, const char *s)
{
	assert_non_null(p);
	hh_send(p, s, (uint32_t)strlen(s), 0);
	hh_settle();
}

/* the collector's endpoints: 198.18.0.201 and .202 */
static bool is_collector(const struct peer *p)
{
	return p->used && p->upstream && (p->addr == 0xc61200c9 || p->addr == 0xc61200ca);
}

/* The collector connection that received bytes since @p rx0, or NULL. */
static struct peer *collector_that_got(const uint32_t *rx0)
{
	for (int i = 0; i < N_PEERS; i++)
		if (is_collector(&peers[i]) && peers[i].rx != rx0[i])
			return &peers[i];
	return NULL;
}

static void snapshot(uint32_t *rx0)
{
	for (int i = 0; i < N_PEERS; i++)
		rx0[i] = peers[i].rx;
}

static void als_begin(unsigned buffer_bytes)
{
	char json[4096];
	snprintf(json, sizeof(json), ALS_LISTENER, buffer_bytes);
	hh_begin(1);
	hh_apply(ARN_TYPE_URL_LISTENER, json);
	hh_cfg_changed = true;
	hh_settle();
	hh_open(0, 82);
	hh_settle();
}

/* One request through client 0, answered by "web": its entry is logged. */
static void one_request(const char *path)
{
	char rq[256];
	snprintf(rq, sizeof(rq), "GET %s HTTP/1.1\r\nHost: h\r\nUser-Agent: t/1\r\n\r\n", path);
	struct peer *c = hh_client(0);
	uint32_t before = c->log_len;
	send_str(c, rq);
	struct peer *web = NULL;
	for (int i = 0; i < N_PEERS; i++)
		if (peers[i].used && peers[i].upstream && peers[i].addr == 0xc61200c8 &&
		    !peers[i].dead && peers[i].rx && !web)
			web = &peers[i];
	assert_non_null(web);
	send_str(web, OK5);
	assert_true(c->log_len > before);
}

/* The stream's messages as the collector @p p got them: its head, then
 * one gRPC message a chunk. @return how many (at most @p cap) in @p m, or
 * -1 without a (whole) ALS head. */
struct msg {
	const uint8_t *p;
	size_t n;
};

static int stream_msgs(const struct peer *p, struct msg *m, int cap)
{
	const char *log = (const char *)(p->cap ? p->cap : (const uint8_t *)p->log);
	size_t len = p->cap ? p->cap_len : p->log_len;
	if (len < sizeof(ALS_POST) - 1 || memcmp(log, ALS_POST, sizeof(ALS_POST) - 1) != 0)
		return -1;
	const char *end = memmem(log, len, "\r\n\r\n", 4);
	if (!end)
		return -1;
	/* a stream: chunked, no content-length; gRPC's head */
	size_t hl = (size_t)(end - log) + 4;
	assert_non_null(memmem(log, hl, "\r\ntransfer-encoding: chunked\r\n", 30));
	assert_null(memmem(log, hl, "content-length", 14));
	assert_non_null(memmem(log, hl, "\r\ncontent-type: application/grpc\r\n", 34));
	assert_non_null(memmem(log, hl, "\r\nte: trailers\r\n", 16));
	/* Envoy starts the stream with default StreamOptions: no deadline */
	assert_null(memmem(log, hl, "grpc-timeout", 12));
	size_t at = hl;
	int k = 0;
	while (at < len && k < cap) {
		char *e;
		unsigned long n = strtoul(log + at, &e, 16);
		if (e == log + at || (size_t)(e - log) + 2 > len || memcmp(e, "\r\n", 2) != 0)
			break;
		at = (size_t)(e - log) + 2;
		if (n == 0 || at + n + 2 > len)
			break;
		const uint8_t *d = (const uint8_t *)log + at;
		/* one whole gRPC message: uncompressed, its length */
		assert_int_equal(d[0], 0);
		assert_int_equal((size_t)d[1] << 24 | d[2] << 16 | d[3] << 8 | d[4], n - 5);
		m[k++] = (struct msg){d + 5, n - 5};
		at += n + 2;
	}
	return k;
}

/* The first field's number of StreamAccessLogsMessage @p m: 1 the
 * identifier, 2 http_logs */
static uint32_t first_field(const struct msg *m)
{
	struct pbr r = {(uint8_t *)m->p, (uint8_t *)m->p + m->n};
	struct fld f;
	assert_int_equal(r_next(&r, &f), 1);
	return f.num;
}

/* The log_name of @p m's identifier */
static bool ident_is(const struct msg *m, const char *name)
{
	struct pbr r = {(uint8_t *)m->p, (uint8_t *)m->p + m->n};
	struct fld f, g;
	if (r_next(&r, &f) != 1 || f.num != 1)
		return false;
	struct pbr r2 = {(uint8_t *)f.data, (uint8_t *)f.data + f.len};
	while (r_next(&r2, &g) > 0)
		if (g.num == 2)
			return g.len == strlen(name) && memcmp(g.data, name, g.len) == 0;
	return false;
}

/* How many entries (http_logs.log_entry) @p m holds */
static unsigned entries(const struct msg *m)
{
	struct pbr r = {(uint8_t *)m->p, (uint8_t *)m->p + m->n};
	struct fld f, g;
	unsigned n = 0;
	while (r_next(&r, &f) > 0)
		if (f.num == 2) {
			struct pbr r2 = {(uint8_t *)f.data, (uint8_t *)f.data + f.len};
			while (r_next(&r2, &g) > 0)
				n += g.num == 1;
		}
	return n;
}

/*
 * Envoy keeps one StreamAccessLogs stream open (GrpcAccessLogClient::log
 * starts it once; it is client-streaming): with buffer_size_bytes 1 each
 * entry is flushed at once (GrpcAccessLoggerImpl::log: the buffer reached
 * its size), the first message carries the identifier (initMessage, while
 * the stream is not started), the next ones only http_logs, all on the
 * one request. The collector then closes the stream (its answer, OK):
 * the next entry opens another (onRemoteClose), identifier again; nothing
 * counts as failed or dropped. Fails before: every flush was a stream of
 * its own, its message with the identifier and the request's end.
 */
static void test_als_stream_kept_open(void **state)
{
	(void)state;
	als_begin(1);
	uint64_t w0 = als_stat(ARN_GLOG_logs_written), d0 = als_stat(ARN_GLOG_logs_dropped),
		 f0 = als_stat(ARN_GLOG_exports_failed);
	uint32_t rx0[N_PEERS];
	snapshot(rx0);
	one_request("/a");
	struct peer *col = collector_that_got(rx0);
	assert_non_null(col);
	struct msg m[8];
	assert_int_equal(stream_msgs(col, m, 8), 1);
	assert_int_equal(first_field(&m[0]), 1);
	assert_true(ident_is(&m[0], "als-t"));
	assert_int_equal(entries(&m[0]), 1);
	one_request("/b");
	one_request("/c");
	assert_ptr_equal(collector_that_got(rx0), col);
	assert_int_equal(stream_msgs(col, m, 8), 3);
	assert_int_equal(first_field(&m[1]), 2); /* no identifier */
	assert_int_equal(first_field(&m[2]), 2);
	assert_int_equal(entries(&m[1]), 1);
	assert_null(memmem(col->log + 1, col->log_len - 1, "POST ", 5)); /* one request */
	/* the collector ends the stream: the next entry opens another */
	send_str(col, GRPC_OK);
	snapshot(rx0);
	one_request("/d");
	struct peer *col2 = collector_that_got(rx0);
	assert_non_null(col2);
	assert_true(col2 != col); /* the first one's connection is not reused mid-request */
	assert_int_equal(stream_msgs(col2, m, 8), 1);
	assert_true(ident_is(&m[0], "als-t"));
	assert_int_equal(als_stat(ARN_GLOG_logs_written) - w0, 4);
	assert_int_equal(als_stat(ARN_GLOG_logs_dropped) - d0, 0);
	assert_int_equal(als_stat(ARN_GLOG_exports_failed) - f0, 0);
	hh_end();
}

/* The collector resets the stream's connection: the stream failed
 * (exports_failed); the next flush opens another whose first message has
 * the identifier again (Envoy's onRemoteClose, then log() starting a new
 * stream and flush() calling initMessage). Fails before: there was no
 * kept stream to reopen (each flush a stream of its own). */
static void test_als_stream_reopens_after_reset(void **state)
{
	(void)state;
	als_begin(1);
	uint64_t f0 = als_stat(ARN_GLOG_exports_failed), d0 = als_stat(ARN_GLOG_logs_dropped);
	uint32_t rx0[N_PEERS];
	snapshot(rx0);
	one_request("/a");
	struct peer *col = collector_that_got(rx0);
	assert_non_null(col);
	struct msg m[4];
	assert_int_equal(stream_msgs(col, m, 4), 1);
	one_request("/b");
	assert_int_equal(stream_msgs(col, m, 4), 2);
	assert_int_equal(first_field(&m[1]), 2);
	hh_reset(col);
	hh_settle();
	assert_int_equal(als_stat(ARN_GLOG_exports_failed) - f0, 1);
	snapshot(rx0);
	one_request("/c");
	struct peer *col2 = collector_that_got(rx0);
	assert_non_null(col2);
	assert_true(col2 != col);
	assert_int_equal(stream_msgs(col2, m, 4), 1);
	assert_int_equal(first_field(&m[0]), 1);
	assert_true(ident_is(&m[0], "als-t"));
	assert_int_equal(entries(&m[0]), 1);
	assert_int_equal(als_stat(ARN_GLOG_logs_dropped) - d0, 0);
	hh_end();
}

/*
 * A collector that never takes the stream (its SYN unanswered): the
 * first message waits with the transport, so later entries stay queued
 * until the buffer holds buffer_size_bytes (1000); past it each entry is
 * dropped and counted (Envoy's canLogMore: flush, still full, drop), so
 * the logger never holds more than the one waiting message and that
 * buffer, however many requests come. Every request is answered. When
 * the connect attempt fails (connect_timeout) the stream is over
 * (exports_failed) and the queued entries go on a new stream at the
 * flush interval, the identifier first. Fails before: entries queued up
 * to the worker's 64 KiB while the export waited, and buffer_size_bytes
 * only triggered flushes.
 */
static void test_als_stream_drops_past_buffer(void **state)
{
	(void)state;
	als_begin(1000);
	/* one entry first, at the flush interval, on a stream the collector
	 * then closes: the client's upstream connection is open before the
	 * collector's next SYN goes unanswered */
	uint32_t rx0[N_PEERS];
	snapshot(rx0);
	one_request("/warm");
	hh_advance(1100);
	struct peer *col = collector_that_got(rx0);
	assert_non_null(col);
	send_str(col, GRPC_OK);
	uint64_t w0 = als_stat(ARN_GLOG_logs_written), d0 = als_stat(ARN_GLOG_logs_dropped),
		 f0 = als_stat(ARN_GLOG_exports_failed);
	hh_syn(2); /* the collector's SYN goes unanswered */
	snapshot(rx0);
	char p[16];
	for (int i = 0; i < 40; i++) {
		snprintf(p, sizeof(p), "/r%d", i);
		one_request(p);
	}
	uint64_t written = als_stat(ARN_GLOG_logs_written) - w0,
		 dropped = als_stat(ARN_GLOG_logs_dropped) - d0;
	assert_int_equal(written + dropped, 40);
	/* an entry is about 250 bytes: the waiting message holds the first
	 * ones, the buffer a handful more */
	assert_true(dropped >= 25);
	assert_true(written >= 2 && written <= 15);
	assert_null(collector_that_got(rx0));
	/* the connect attempt fails (0.5 s): the stream is over; the queued
	 * entries go on a new stream at a flush interval */
	hh_syn(0);
	hh_advance(600);
	assert_int_equal(als_stat(ARN_GLOG_exports_failed) - f0, 1);
	hh_advance(1100);
	col = collector_that_got(rx0);
	assert_non_null(col);
	struct msg m[4];
	assert_int_equal(stream_msgs(col, m, 4), 1);
	assert_true(ident_is(&m[0], "als-t"));
	assert_true(entries(&m[0]) >= 1 && entries(&m[0]) < written);
	hh_end();
}

int main(void)
{
	hh_init(false);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_als_stream_kept_open),
	    cmocka_unit_test(test_als_stream_reopens_after_reset),
	    cmocka_unit_test(test_als_stream_drops_past_buffer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
