/*
 * Active health checks (lib/http/http_hc.c), the parts that need no data
 * plane: Envoy's state machine (thresholds, the first check, which
 * failures count and which fail at once), the intervals and their jitter,
 * expected_statuses, TCP receive matching, the verdict of an HTTP check's
 * response head (whole, cut at every byte, hostile), the request, and the
 * balancer's combined health (http_lb_pick with a cluster's hosts). The
 * checks on the wire: tests/http/e2e_active_hc.sh.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "http_hc.h"
#include "http_int.h"

static struct arn_cfg_health_check hc_cfg(uint32_t unhealthy, uint32_t healthy)
{
	struct arn_cfg_health_check c = {
	    .kind = ARN_CFG_HC_HTTP,
	    .timeout_ms = 1000,
	    .interval_ms = 5000,
	    .unhealthy_threshold = unhealthy,
	    .healthy_threshold = healthy,
	    .no_traffic_interval_ms = 60000,
	    .unhealthy_interval_ms = 5000,
	    .path = "/healthz",
	};
	return c;
}

/* A new host starts failed; its first passing check admits it at once,
 * whatever healthy_threshold says (Envoy's faster start). */
static void test_sm_initial_and_first_check(void **state)
{
	(void)state;
	struct arn_cfg_health_check c = hc_cfg(3, 3);
	struct http_hc_sm s;
	http_hc_sm_init(&s, true);
	assert_true(s.failed);
	assert_true(http_hc_sm_apply(&c, &s, HTTP_HC_SUCCESS));
	assert_false(s.failed);
	/* a first check that fails keeps it failed: later passes need the
	 * threshold */
	http_hc_sm_init(&s, true);
	assert_false(http_hc_sm_apply(&c, &s, HTTP_HC_FAIL_NETWORK));
	assert_true(s.failed);
	assert_false(http_hc_sm_apply(&c, &s, HTTP_HC_SUCCESS));
	assert_false(http_hc_sm_apply(&c, &s, HTTP_HC_SUCCESS));
	assert_true(s.failed);
	assert_true(http_hc_sm_apply(&c, &s, HTTP_HC_SUCCESS));
	assert_false(s.failed);
}

/* Network failures and timeouts count up to unhealthy_threshold, a success
 * in between starts the count again; a wrong answer (or the immediate
 * failure header) fails the host at once. */
static void test_sm_thresholds(void **state)
{
	(void)state;
	struct arn_cfg_health_check c = hc_cfg(3, 2);
	struct http_hc_sm s;
	http_hc_sm_init(&s, false);
	assert_false(http_hc_sm_apply(&c, &s, HTTP_HC_FAIL_NETWORK));
	assert_false(http_hc_sm_apply(&c, &s, HTTP_HC_FAIL_TIMEOUT));
	assert_false(http_hc_sm_apply(&c, &s, HTTP_HC_SUCCESS)); /* resets */
	assert_false(http_hc_sm_apply(&c, &s, HTTP_HC_FAIL_TIMEOUT));
	assert_false(http_hc_sm_apply(&c, &s, HTTP_HC_FAIL_NETWORK));
	assert_false(s.failed);
	assert_true(http_hc_sm_apply(&c, &s, HTTP_HC_FAIL_TIMEOUT));
	assert_true(s.failed);
	/* failed: more failures change nothing; healthy_threshold passes,
	 * a failure in between starts them again */
	assert_false(http_hc_sm_apply(&c, &s, HTTP_HC_FAIL_ACTIVE));
	assert_false(http_hc_sm_apply(&c, &s, HTTP_HC_SUCCESS));
	assert_false(http_hc_sm_apply(&c, &s, HTTP_HC_FAIL_NETWORK));
	assert_false(http_hc_sm_apply(&c, &s, HTTP_HC_SUCCESS));
	assert_true(s.failed);
	assert_true(http_hc_sm_apply(&c, &s, HTTP_HC_SUCCESS));
	assert_false(s.failed);
	/* a 503 (not an expected status): out at once */
	assert_true(http_hc_sm_apply(&c, &s, HTTP_HC_FAIL_ACTIVE));
	assert_true(s.failed);
	http_hc_sm_init(&s, false);
	assert_true(http_hc_sm_apply(&c, &s, HTTP_HC_FAIL_IMMEDIATE));
	assert_true(s.failed);
	/* unhealthy_threshold 1: the first network failure */
	c = hc_cfg(1, 1);
	http_hc_sm_init(&s, false);
	assert_true(http_hc_sm_apply(&c, &s, HTTP_HC_FAIL_NETWORK));
}

/* interval (healthy), unhealthy_interval (failed), no_traffic_interval (no
 * connection yet), each plus a jitter within [0, interval_jitter). */
static void test_next_interval_and_jitter(void **state)
{
	(void)state;
	struct arn_cfg_health_check c = hc_cfg(2, 2);
	c.interval_ms = 1000;
	c.unhealthy_interval_ms = 300;
	c.no_traffic_interval_ms = 7000;
	struct http_hc_sm s;
	http_hc_sm_init(&s, false);
	assert_int_equal(http_hc_next_ms(&c, &s, true, 12345), 1000);
	assert_int_equal(http_hc_next_ms(&c, &s, false, 12345), 7000);
	s.failed = s.last_failed = true;
	assert_int_equal(http_hc_next_ms(&c, &s, true, 12345), 300);
	c.unhealthy_interval_ms = 0; /* unset: interval */
	assert_int_equal(http_hc_next_ms(&c, &s, true, 1), 1000);
	s.failed = s.last_failed = false;
	c.interval_jitter_ms = 200;
	uint64_t lo = UINT64_MAX, hi = 0, x = 0x9e3779b97f4a7c15ull;
	for (int i = 0; i < 10000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint64_t n = http_hc_next_ms(&c, &s, true, x);
		lo = n < lo ? n : lo;
		hi = n > hi ? n : hi;
	}
	assert_true(lo >= 1000 && lo < 1010);
	assert_true(hi <= 1199 && hi > 1190);
	/* never 0: the timer wheel needs a millisecond */
	c.interval_ms = 0;
	c.interval_jitter_ms = 0;
	assert_int_equal(http_hc_next_ms(&c, &s, true, 0), 1);
}

/* The interval follows the last check's result, not the host's health, as
 * Envoy's interval(): a healthy host whose check failed (short of
 * unhealthy_threshold) is checked again after unhealthy_interval (its
 * unhealthy_edge_interval's default), a failed host whose check passed
 * (short of healthy_threshold) after interval (healthy_edge_interval's). */
static void test_next_interval_follows_last_check(void **state)
{
	(void)state;
	struct arn_cfg_health_check c = hc_cfg(3, 3);
	c.interval_ms = 1000;
	c.unhealthy_interval_ms = 300;
	struct http_hc_sm s;
	http_hc_sm_init(&s, false);
	assert_int_equal(http_hc_next_ms(&c, &s, true, 0), 1000);
	assert_false(http_hc_sm_apply(&c, &s, HTTP_HC_FAIL_NETWORK));
	assert_false(s.failed);
	assert_int_equal(http_hc_next_ms(&c, &s, true, 0), 300);
	assert_false(http_hc_sm_apply(&c, &s, HTTP_HC_FAIL_TIMEOUT));
	assert_true(http_hc_sm_apply(&c, &s, HTTP_HC_FAIL_NETWORK));
	assert_true(s.failed);
	assert_int_equal(http_hc_next_ms(&c, &s, true, 0), 300);
	assert_false(http_hc_sm_apply(&c, &s, HTTP_HC_FAIL_ACTIVE));
	assert_int_equal(http_hc_next_ms(&c, &s, true, 0), 300);
	/* failed, passing: interval from the first pass on */
	assert_false(http_hc_sm_apply(&c, &s, HTTP_HC_SUCCESS));
	assert_true(s.failed);
	assert_int_equal(http_hc_next_ms(&c, &s, true, 0), 1000);
	assert_false(http_hc_sm_apply(&c, &s, HTTP_HC_SUCCESS));
	assert_true(http_hc_sm_apply(&c, &s, HTTP_HC_SUCCESS));
	assert_int_equal(http_hc_next_ms(&c, &s, true, 0), 1000);
	/* no traffic yet: no_traffic_interval whatever the result */
	assert_false(http_hc_sm_apply(&c, &s, HTTP_HC_FAIL_NETWORK));
	assert_int_equal(http_hc_next_ms(&c, &s, false, 0), 60000);
	/* a new host starts failed: its first check at once, then as above */
	http_hc_sm_init(&s, true);
	assert_int_equal(http_hc_next_ms(&c, &s, true, 0), 300);
}

/* Envoy's edge intervals (for a check that counted toward a change still
 * pending), interval_jitter_percent and initial_jitter. */
static void test_edge_intervals_and_jitters(void **state)
{
	(void)state;
	struct arn_cfg_health_check c = hc_cfg(2, 2);
	c.interval_ms = 1000;
	c.unhealthy_interval_ms = 300;
	c.unhealthy_edge_interval_ms = 50;
	c.healthy_edge_interval_ms = 70;
	struct http_hc_sm s;
	http_hc_sm_init(&s, false);
	assert_false(http_hc_sm_apply(&c, &s, HTTP_HC_FAIL_NETWORK)); /* pending */
	assert_int_equal(http_hc_next_ms(&c, &s, true, 0), 50);
	assert_true(http_hc_sm_apply(&c, &s, HTTP_HC_FAIL_NETWORK)); /* changed */
	assert_int_equal(http_hc_next_ms(&c, &s, true, 0), 300);
	assert_false(http_hc_sm_apply(&c, &s, HTTP_HC_FAIL_NETWORK)); /* unchanged */
	assert_int_equal(http_hc_next_ms(&c, &s, true, 0), 300);
	assert_false(http_hc_sm_apply(&c, &s, HTTP_HC_SUCCESS)); /* pending */
	assert_int_equal(http_hc_next_ms(&c, &s, true, 0), 70);
	assert_true(http_hc_sm_apply(&c, &s, HTTP_HC_SUCCESS)); /* changed */
	assert_int_equal(http_hc_next_ms(&c, &s, true, 0), 1000);
	assert_false(http_hc_sm_apply(&c, &s, HTTP_HC_SUCCESS)); /* unchanged */
	assert_int_equal(http_hc_next_ms(&c, &s, true, 0), 1000);
	/* interval_jitter_percent: [0, 10 % of 1000) more, with interval_jitter */
	c.interval_jitter_percent = 10;
	c.interval_jitter_ms = 20;
	uint64_t lo = UINT64_MAX, hi = 0, x = 0x9e3779b97f4a7c15ull;
	for (int i = 0; i < 20000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint64_t n = http_hc_next_ms(&c, &s, true, x);
		lo = n < lo ? n : lo;
		hi = n > hi ? n : hi;
	}
	assert_true(lo >= 1000 && lo < 1010);
	assert_true(hi <= 1000 + 99 + 19 && hi > 1100);
	/* initial_jitter: the first check within [1, initial_jitter] ms; at
	 * once without it */
	assert_int_equal(http_hc_first_ms(&c, 12345), 1);
	c.initial_jitter_ms = 500;
	lo = UINT64_MAX, hi = 0;
	for (int i = 0; i < 20000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint64_t n = http_hc_first_ms(&c, x);
		lo = n < lo ? n : lo;
		hi = n > hi ? n : hi;
	}
	assert_true(lo >= 1 && lo < 10);
	assert_true(hi <= 500 && hi > 490);
}

static void test_expected_statuses(void **state)
{
	(void)state;
	struct arn_cfg_health_check c = hc_cfg(2, 2);
	assert_true(http_hc_status_ok(&c, 200)); /* default: 200 only */
	assert_false(http_hc_status_ok(&c, 201));
	assert_false(http_hc_status_ok(&c, 503));
	uint32_t r[] = {200, 300, 404, 405};
	c.expected_statuses = r;
	c.n_expected_statuses = 2;
	assert_true(http_hc_status_ok(&c, 204));
	assert_true(http_hc_status_ok(&c, 299));
	assert_false(http_hc_status_ok(&c, 300)); /* end exclusive */
	assert_true(http_hc_status_ok(&c, 404));
	assert_false(http_hc_status_ok(&c, 503));
}

/* Envoy's TcpHealthCheckMatcher: every receive block, in order, each after
 * the previous one's end. */
static void test_tcp_receive_match(void **state)
{
	(void)state;
	struct arn_cfg_health_check c = hc_cfg(2, 2);
	c.kind = ARN_CFG_HC_TCP;
	assert_true(http_hc_tcp_match(&c, (const uint8_t *)"", 0)); /* no block */
	uint8_t b1[] = {'P', 'O'}, b2[] = {'N', 'G'};
	uint8_t *blocks[] = {b1, b2};
	size_t lens[] = {2, 2};
	c.receive = blocks;
	c.receive_len = lens;
	c.n_receive = 2;
	assert_true(http_hc_tcp_match(&c, (const uint8_t *)"PONG", 4));
	assert_true(http_hc_tcp_match(&c, (const uint8_t *)"xxPOyyNGzz", 10));
	assert_false(http_hc_tcp_match(&c, (const uint8_t *)"NGPO", 4)); /* order */
	assert_false(http_hc_tcp_match(&c, (const uint8_t *)"PON", 3));	 /* not yet */
	assert_false(http_hc_tcp_match(&c, (const uint8_t *)"PPO", 3));
	/* the second block must start after the first one's end */
	uint8_t b3[] = {'O', 'N'};
	blocks[1] = b3;
	assert_false(http_hc_tcp_match(&c, (const uint8_t *)"PON", 3));
	assert_true(http_hc_tcp_match(&c, (const uint8_t *)"POON", 4));
}

static int verdict(const struct arn_cfg_health_check *c, const char *s, struct http_hc_verdict *v)
{
	return http_hc_http_verdict(c, s, strlen(s), v);
}

static void test_http_verdict(void **state)
{
	(void)state;
	struct arn_cfg_health_check c = hc_cfg(2, 2);
	struct http_hc_verdict v;
	const char *ok = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
	assert_int_equal(verdict(&c, ok, &v), 1);
	assert_int_equal(v.r, HTTP_HC_SUCCESS);
	assert_int_equal(v.status, 200);
	/* cut at every byte before the head's end: read more; the head alone
	 * decides (the body is never needed) */
	size_t head = strstr(ok, "\r\n\r\n") + 4 - ok;
	for (size_t n = 0; n < head; n++)
		assert_int_equal(http_hc_http_verdict(&c, ok, n, &v), 0);
	assert_int_equal(http_hc_http_verdict(&c, ok, head, &v), 1);
	assert_int_equal(v.r, HTTP_HC_SUCCESS);
	assert_int_equal(verdict(&c, "HTTP/1.1 503 Unavailable\r\ncontent-length: 0\r\n\r\n", &v),
			 1);
	assert_int_equal(v.r, HTTP_HC_FAIL_ACTIVE);
	assert_int_equal(v.status, 503);
	/* the header fails the host at once, even with a 200 */
	assert_int_equal(verdict(&c,
				 "HTTP/1.1 200 OK\r\nx-envoy-immediate-health-check-fail: true\r\n"
				 "content-length: 0\r\n\r\n",
				 &v),
			 1);
	assert_int_equal(v.r, HTTP_HC_FAIL_IMMEDIATE);
	/* an interim 100 is not the answer */
	assert_int_equal(verdict(&c, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n", &v),
			 1);
	assert_int_equal(v.status, 200);
	assert_int_equal(verdict(&c, "HTTP/1.1 100 Continue\r\n\r\n", &v), 0);
	/* hostile answers: not HTTP, a bad status, a head over the bound */
	assert_int_equal(verdict(&c, "SSH-2.0-OpenSSH\r\n\r\n", &v), -EBADMSG);
	assert_int_equal(v.r, HTTP_HC_FAIL_ACTIVE);
	assert_int_equal(verdict(&c, "HTTP/1.1 2000 OK\r\n\r\n", &v), -EBADMSG);
	static char big[HTTP_HC_RX_MAX + 64];
	int n = snprintf(big, sizeof(big), "HTTP/1.1 200 OK\r\nx-big: ");
	memset(big + n, 'a', sizeof(big) - (size_t)n - 1);
	assert_int_equal(http_hc_http_verdict(&c, big, sizeof(big) - 1, &v), -EBADMSG);
	/* the bound is the whole answer's: interim heads that fill it leave
	 * no room for the final one, which is not read however much more
	 * the caller holds (each 1xx head is far under the parser's own
	 * per-head bound) */
	static char cont[2 * HTTP_HC_RX_MAX];
	size_t k = 0;
	while (k + 25 < HTTP_HC_RX_MAX) {
		memcpy(cont + k, "HTTP/1.1 100 Continue\r\n\r\n", 25);
		k += 25;
	}
	const char *fin = "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
	memcpy(cont + k, fin, strlen(fin));
	assert_int_equal(http_hc_http_verdict(&c, cont, k + strlen(fin), &v), -EBADMSG);
	assert_int_equal(v.r, HTTP_HC_FAIL_ACTIVE);
	assert_int_equal(http_hc_http_verdict(&c, cont, HTTP_HC_RX_MAX, &v), -EBADMSG);
	assert_int_equal(http_hc_http_verdict(&c, cont, HTTP_HC_RX_MAX - 1, &v), 0);
	/* a 204 or 404 with expected_statuses [200, 300) */
	uint32_t r[] = {200, 300};
	c.expected_statuses = r;
	c.n_expected_statuses = 1;
	assert_int_equal(verdict(&c, "HTTP/1.1 204 No Content\r\n\r\n", &v), 1);
	assert_int_equal(v.r, HTTP_HC_SUCCESS);
	assert_int_equal(verdict(&c, "HTTP/1.1 404 Not Found\r\n\r\n", &v), 1);
	assert_int_equal(v.r, HTTP_HC_FAIL_ACTIVE);
}

/* What worker 0 does with the bytes as they come (http_hc_judge): an HTTP
 * head is parsed again only once a line ended; a full buffer without a
 * verdict is an active failure; TCP blocks are matched at once. */
static void test_judge(void **state)
{
	(void)state;
	struct arn_cfg_health_check c = hc_cfg(2, 2);
	enum http_hc_result r = HTTP_HC_FAIL_TIMEOUT;
	const char *ok = "HTTP/1.1 200 OK\r\n\r\n";
	assert_int_equal(http_hc_judge(&c, ok, 0, 10, &r), 0);
	assert_int_equal(http_hc_judge(&c, ok, 10, strlen(ok), &r), 1);
	assert_int_equal(r, HTTP_HC_SUCCESS);
	/* a bad byte decides at the next line's end, or with the buffer full */
	assert_int_equal(http_hc_judge(&c, "XTTP/1.1", 0, 8, &r), 0);
	assert_int_equal(http_hc_judge(&c, "XTTP/1.1\r\n", 8, 10, &r), 1);
	assert_int_equal(r, HTTP_HC_FAIL_ACTIVE);
	static char big[HTTP_HC_RX_MAX];
	memset(big, 'a', sizeof(big));
	memcpy(big, "HTTP/1.1 200 OK\r\nx: ", strlen("HTTP/1.1 200 OK\r\nx: "));
	r = HTTP_HC_SUCCESS;
	assert_int_equal(http_hc_judge(&c, big, 100, sizeof(big), &r), 1);
	assert_int_equal(r, HTTP_HC_FAIL_ACTIVE);
	c.kind = ARN_CFG_HC_TCP;
	uint8_t b1[] = {'O', 'K'};
	uint8_t *blocks[] = {b1};
	size_t lens[] = {2};
	c.receive = blocks;
	c.receive_len = lens;
	c.n_receive = 1;
	assert_int_equal(http_hc_judge(&c, "xO", 0, 2, &r), 0);
	assert_int_equal(http_hc_judge(&c, "xOK", 2, 3, &r), 1);
	assert_int_equal(r, HTTP_HC_SUCCESS);
	/* a full buffer without the block */
	b1[0] = 'Z';
	r = HTTP_HC_SUCCESS;
	assert_int_equal(http_hc_judge(&c, big, 0, sizeof(big), &r), 1);
	assert_int_equal(r, HTTP_HC_FAIL_ACTIVE);
}

static void test_http_request(void **state)
{
	(void)state;
	char b[256];
	int n = http_hc_http_request(NULL, "/healthz", "web", b, sizeof(b));
	assert_true(n > 0);
	assert_string_equal(b, "GET /healthz HTTP/1.1\r\nhost: web\r\nuser-agent: Envoy/HC\r\n"
			       "connection: close\r\n\r\n");
	assert_int_equal(http_hc_http_request(NULL, "/healthz", "web", b, 20), -ENOSPC);
	/* request_headers_to_add / _remove (they were accepted and not
	 * sent): user-agent overwritten, x-a appended twice, x-b added only
	 * if absent (the second one is not), an empty value left out unless
	 * keep_empty_value; then user-agent removed */
	struct arn_cfg_header_add add[] = {
	    {"user-agent", 10, "probe/1", 7, ARN_CFG_OVERWRITE_IF_EXISTS_OR_ADD, false},
	    {"x-a", 3, "1", 1, ARN_CFG_APPEND_IF_EXISTS_OR_ADD, false},
	    {"x-a", 3, "2", 1, ARN_CFG_APPEND_IF_EXISTS_OR_ADD, false},
	    {"x-b", 3, "first", 5, ARN_CFG_ADD_IF_ABSENT, false},
	    {"x-b", 3, "second", 6, ARN_CFG_ADD_IF_ABSENT, false},
	    {"x-e", 3, "", 0, ARN_CFG_APPEND_IF_EXISTS_OR_ADD, false},
	    {"x-k", 3, "", 0, ARN_CFG_APPEND_IF_EXISTS_OR_ADD, true},
	};
	struct arn_cfg_ref rm[] = {{.name = "user-agent", .len = 10}};
	struct arn_cfg_health_check c = {.kind = ARN_CFG_HC_HTTP,
					 .headers = {.req_add = add, .n_req_add = 7}};
	char big[512];
	n = http_hc_http_request(&c, "/healthz", "web", big, sizeof(big));
	assert_true(n > 0);
	assert_string_equal(big, "GET /healthz HTTP/1.1\r\nhost: web\r\nuser-agent: probe/1\r\n"
				 "x-a: 1\r\nx-a: 2\r\nx-b: first\r\nx-k: \r\n"
				 "connection: close\r\n\r\n");
	assert_int_equal(http_hc_http_request(&c, "/healthz", "web", big, 60), -ENOSPC);
	struct arn_cfg_health_check c2 = {.kind = ARN_CFG_HC_HTTP,
					  .headers = {.req_remove = rm, .n_req_remove = 1}};
	n = http_hc_http_request(&c2, "/healthz", "web", big, sizeof(big));
	assert_true(n > 0);
	assert_string_equal(big, "GET /healthz HTTP/1.1\r\nhost: web\r\nconnection: close\r\n\r\n");
	/* reuse_connection: keep-alive, HTTP/1.1's default, so nothing said
	 * (fails before: connection: close was always sent) */
	c2.reuse_connection = true;
	n = http_hc_http_request(&c2, "/healthz", "web", big, sizeof(big));
	assert_true(n > 0);
	assert_string_equal(big, "GET /healthz HTTP/1.1\r\nhost: web\r\n\r\n");
}

/* What a final head says of its body and connection, for a check that
 * keeps its connection: its length (interim heads included), the body's
 * framing, and Envoy's shouldCloseConnection (HTTP/1.0 without
 * keep-alive, connection: close, proxy-connection: close). */
static void test_verdict_framing(void **state)
{
	(void)state;
	struct arn_cfg_health_check c = hc_cfg(1, 1);
	struct http_hc_verdict v;
	static const char *cl = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
	assert_int_equal(http_hc_http_verdict(&c, cl, strlen(cl), &v), 1);
	assert_int_equal(v.head_len, strlen(cl) - 2);
	assert_int_equal(v.framing, HTTP_HC_BODY_LENGTH);
	assert_int_equal(v.content_length, 2);
	assert_true(v.keep);
	static const char *ch =
	    "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 X\r\ntransfer-encoding: chunked\r\n\r\n";
	assert_int_equal(http_hc_http_verdict(&c, ch, strlen(ch), &v), 1);
	assert_int_equal(v.r, HTTP_HC_FAIL_ACTIVE);
	assert_int_equal(v.head_len, strlen(ch));
	assert_int_equal(v.framing, HTTP_HC_BODY_CHUNKED);
	assert_true(v.keep); /* a wrong status keeps it, as Envoy */
	static const char *none = "HTTP/1.1 204 N\r\n\r\n";
	assert_int_equal(http_hc_http_verdict(&c, none, strlen(none), &v), 1);
	assert_int_equal(v.framing, HTTP_HC_BODY_NONE);
	assert_true(v.keep);
	static const char *until = "HTTP/1.1 200 OK\r\n\r\nok";
	assert_int_equal(http_hc_http_verdict(&c, until, strlen(until), &v), 1);
	assert_int_equal(v.framing, HTTP_HC_BODY_CLOSE);
	static const char *const closes[] = {
	    "HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
	    "HTTP/1.1 200 OK\r\ncontent-length: 0\r\nproxy-connection: Close\r\n\r\n",
	    "HTTP/1.0 200 OK\r\ncontent-length: 0\r\n\r\n",
	};
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(http_hc_http_verdict(&c, closes[i], strlen(closes[i]), &v), 1);
		assert_int_equal(v.r, HTTP_HC_SUCCESS);
		assert_false(v.keep);
	}
	static const char *ka =
	    "HTTP/1.0 200 OK\r\ncontent-length: 0\r\nconnection: keep-alive\r\n\r\n";
	assert_int_equal(http_hc_http_verdict(&c, ka, strlen(ka), &v), 1);
	assert_true(v.keep);
	assert_int_equal(v.framing, HTTP_HC_BODY_NONE);
	/* not a response: no head */
	assert_int_equal(http_hc_http_verdict(&c, "SSH-2.0\r\n", 9, &v), -EBADMSG);
	assert_int_equal(v.head_len, 0);
}

/* Feed @p s to a body of @p framing in pieces of @p step bytes: the bytes
 * it used (SIZE_MAX: malformed; used + 1 << 32: not ended). */
static size_t eat(enum http_hc_framing framing, uint64_t cl, const char *s, size_t step)
{
	struct http_hc_body b;
	http_hc_body_init(&b, framing, cl);
	size_t len = strlen(s), at = 0;
	while (at < len) {
		size_t n = len - at < step ? len - at : step, used = 0;
		int rc = http_hc_body_eat(&b, s + at, n, &used);
		assert_true(used <= n);
		if (rc < 0)
			return SIZE_MAX;
		at += used;
		if (rc == 1)
			return at;
	}
	size_t used = 1;
	int rc = http_hc_body_eat(&b, "", 0, &used); /* nothing: nothing used */
	assert_int_equal(used, 0);
	return rc == 1 ? at : at + (1ull << 32);
}

/* A body is consumed whole, and only it, however it is cut: content-length
 * bytes, or a chunked coding with extensions and trailers; what follows
 * (the upstream's next, unasked bytes) is left; a coding that is not one
 * is refused, as a chunk size over 60 bits. */
static void test_body_consumed(void **state)
{
	(void)state;
	static const char *chunked = "2;ext=1\r\nok\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n"
				     "0\r\nx-t: 1\r\n\r\n";
	char buf[256];
	for (size_t step = 1; step <= 80; step++) {
		assert_int_equal(eat(HTTP_HC_BODY_LENGTH, 5, "hello", step), 5);
		assert_int_equal(eat(HTTP_HC_BODY_LENGTH, 3, "hello", step), 3);
		assert_int_equal(eat(HTTP_HC_BODY_LENGTH, 9, "hello", step), 5 + (1ull << 32));
		assert_int_equal(eat(HTTP_HC_BODY_CHUNKED, 0, chunked, step), strlen(chunked));
		snprintf(buf, sizeof(buf), "%sHTTP/1.1 200 OK\r\n", chunked);
		assert_int_equal(eat(HTTP_HC_BODY_CHUNKED, 0, buf, step), strlen(chunked));
		assert_int_equal(eat(HTTP_HC_BODY_CHUNKED, 0, "0\r\n\r\n", step), 5);
		/* cut short: goes on */
		assert_int_equal(eat(HTTP_HC_BODY_CHUNKED, 0, "5\r\nab", step), 5 + (1ull << 32));
		assert_int_equal(eat(HTTP_HC_BODY_CHUNKED, 0, "0\r\n\r", step), 4 + (1ull << 32));
	}
	static const char *const bad[] = {
	    "\r\n",		     /* no size */
	    "x\r\n",		     /* not hex */
	    "2\nok\r\n0\r\n\r\n",    /* bare LF */
	    "2\r\nokX\r\n0\r\n\r\n", /* no CRLF after the data */
	    "0\r\n\n",		     /* bare LF at the end */
	    "10000000000000000\r\n", /* over 60 bits */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(eat(HTTP_HC_BODY_CHUNKED, 0, bad[i], 1), SIZE_MAX);
	/* no body: nothing used; until close: never ends */
	assert_int_equal(eat(HTTP_HC_BODY_NONE, 0, "abc", 2), 0);
	assert_int_equal(eat(HTTP_HC_BODY_CLOSE, 0, "abc", 2), 3 + (1ull << 32));
}

/* ---- the balancer's combined health -------------------------------------- */

struct fix {
	struct arn_cfg_endpoint ep[3];
	struct arn_cfg_locality loc;
	struct arn_cfg_priority prio;
	struct arn_cfg_endpoints eps;
	struct arn_cfg_cluster cl;
	struct http_host h[3];
	struct http_host *hosts[3];
};

static void fix_setup(struct fix *f, unsigned n)
{
	memset(f, 0, sizeof(*f));
	for (unsigned i = 0; i < n; i++) {
		f->ep[i].addr = 0xc6120300 + 10 + i;
		f->ep[i].port = 8080;
		f->ep[i].weight = 1;
		f->h[i].addr = f->ep[i].addr;
		f->h[i].port = 8080;
		f->hosts[i] = &f->h[i]; /* sorted: addresses ascend */
	}
	f->loc.endpoints = f->ep;
	f->loc.n_endpoints = n;
	f->prio.localities = &f->loc;
	f->prio.n_localities = 1;
	f->prio.n_endpoints = n;
	f->eps.priorities = &f->prio;
	f->eps.n_priorities = 1;
	f->eps.n_endpoints = n;
	f->cl.lb = ARN_CFG_LB_ROUND_ROBIN;
	f->cl.healthy_panic_threshold = 5000;
	f->cl.n_health_checks = 1;
}

/* @return the endpoint index picked, or the error. */
static int pick(struct fix *f, unsigned n_hosts, uint64_t *rr, bool *panic)
{
	struct http_lb_in in = {.cluster = &f->cl,
				.eps = &f->eps,
				.rr = rr,
				.rand = *rr * 7919,
				.hosts = n_hosts ? f->hosts : NULL,
				.n_hosts = n_hosts};
	struct http_lb_out out;
	int rc = http_lb_pick(&in, &out);
	if (panic)
		*panic = out.panic;
	return rc ? rc : (int)(out.ep - f->ep);
}

static void test_lb_excludes_failed_hosts(void **state)
{
	(void)state;
	struct fix f;
	fix_setup(&f, 3);
	uint64_t rr = 0;
	f.h[1].hc_flags = HTTP_HOST_FAILED_ACTIVE_HC;
	bool panic = true;
	for (int i = 0; i < 12; i++) {
		int k = pick(&f, 3, &rr, &panic);
		assert_true(k == 0 || k == 2);
		assert_false(panic); /* 2 of 3 healthy: over 50% */
	}
	/* without the hosts (a cluster without checks) the flags are not read */
	int seen1 = 0;
	for (int i = 0; i < 12; i++)
		seen1 += pick(&f, 0, &rr, NULL) == 1;
	assert_int_equal(seen1, 4);
	/* EDS UNHEALTHY stays out whatever the checks say; EDS HEALTHY and
	 * checks failed is out too: only host 2 is left, 1 of 3 is under the
	 * panic threshold, so every host serves, as Envoy's panic mode */
	f.ep[0].health = ARN_CFG_HEALTH_UNHEALTHY;
	pick(&f, 3, &rr, &panic);
	assert_true(panic);
	f.cl.healthy_panic_threshold = 0; /* no panic mode */
	for (int i = 0; i < 6; i++)
		assert_int_equal(pick(&f, 3, &rr, &panic), 2);
	f.h[2].hc_flags = HTTP_HOST_FAILED_ACTIVE_HC;
	assert_int_equal(pick(&f, 3, &rr, &panic), -ENOENT);
	/* a host the snapshot lacks (a generation apart) is not failed by checks */
	f.h[2].hc_flags = 0;
	f.h[2].port = 9999;
	assert_int_equal(pick(&f, 3, &rr, &panic), 2);
}

/* A cluster of one host takes no shortcut past its checks: failed, it is
 * served in panic mode, or not at all without one. */
static void test_lb_one_host_failed(void **state)
{
	(void)state;
	struct fix f;
	fix_setup(&f, 1);
	uint64_t rr = 0;
	bool panic = false;
	assert_int_equal(pick(&f, 1, &rr, &panic), 0);
	assert_false(panic);
	f.h[0].hc_flags = HTTP_HOST_FAILED_ACTIVE_HC;
	assert_int_equal(pick(&f, 1, &rr, &panic), 0);
	assert_true(panic);
	f.cl.healthy_panic_threshold = 0;
	assert_int_equal(pick(&f, 1, &rr, &panic), -ENOENT);
}

/* Worker 0's checker holds a few words while no cluster has checks: the
 * targets' table (4 KiB of head buffer per target) waits for a generation
 * that has some; worker 1 has no checker at all. */
static void test_checker_memory_is_lazy(void **state)
{
	(void)state;
	struct http_worker *w = calloc(1, sizeof(*w));
	assert_non_null(w);
	for (size_t i = 0; i < HTTP_WHEEL; i++)
		w->wheel[i].next = w->wheel[i].prev = &w->wheel[i];
	assert_int_equal(http_hc_worker_init(w), 0);
	assert_non_null(w->hc);
	assert_true(http_hc_mem(w) < 1024);
	http_hc_gen(w, NULL); /* a generation without clusters with checks */
	assert_true(http_hc_mem(w) < 1024);
	assert_int_equal(http_hc_targets(w), 0);
	http_hc_worker_fini(w);
	assert_null(w->hc);
	w->idx = 1;
	assert_int_equal(http_hc_worker_init(w), 0);
	assert_null(w->hc);
	assert_int_equal(http_hc_mem(w), 0);
	free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sm_initial_and_first_check),
	    cmocka_unit_test(test_sm_thresholds),
	    cmocka_unit_test(test_next_interval_and_jitter),
	    cmocka_unit_test(test_next_interval_follows_last_check),
	    cmocka_unit_test(test_edge_intervals_and_jitters),
	    cmocka_unit_test(test_expected_statuses),
	    cmocka_unit_test(test_tcp_receive_match),
	    cmocka_unit_test(test_http_verdict),
	    cmocka_unit_test(test_judge),
	    cmocka_unit_test(test_http_request),
	    cmocka_unit_test(test_verdict_framing),
	    cmocka_unit_test(test_body_consumed),
	    cmocka_unit_test(test_lb_excludes_failed_hosts),
	    cmocka_unit_test(test_lb_one_host_failed),
	    cmocka_unit_test(test_checker_memory_is_lazy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
