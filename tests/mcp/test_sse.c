/*
 * Server-sent events from backends: the HTML standard's stream rules, fed
 * whole and one byte at a time, and the buffer's bound.
 */
#include <stdio.h>
#include <string.h>

#include "mcp_test.h"

struct evs {
	int n;
	char text[1024]; /* "event|id|data;" per event */
};

/* Feed @p s in pieces of @p step bytes; collect the events. @return the
 * last feed's result when it failed, else 0. */
static int run(const char *s, size_t step, size_t cap, struct evs *out)
{
	char buf[256];
	struct arn_mcp_sse p;
	arn_mcp_sse_init(&p, buf, cap);
	memset(out, 0, sizeof(*out));
	size_t n = strlen(s);
	for (size_t off = 0; off < n;) {
		size_t len = n - off < step ? n - off : step;
		struct arn_mcp_sse_ev ev;
		ssize_t k = arn_mcp_sse_feed(&p, s + off, len, &ev);
		if (k == ARN_AGAIN) {
			off += len;
			continue;
		}
		if (k < 0)
			return (int)k;
		assert_true(k > 0 && (size_t)k <= len);
		off += (size_t)k;
		out->n++;
		size_t t = strlen(out->text);
		snprintf(out->text + t, sizeof(out->text) - t, "%.*s|%.*s|%.*s;", (int)ev.event_len,
			 ev.event, (int)ev.id_len, ev.id, (int)ev.data_len, ev.data);
	}
	return 0;
}

static void check(const char *s, int n, const char *text)
{
	for (size_t step = 1; step <= strlen(s); step = step == 1 ? 3 : step * 2) {
		struct evs e;
		assert_int_equal(run(s, step, 256, &e), 0);
		if (e.n != n || strcmp(e.text, text) != 0)
			fail_msg("step %zu: got %d events '%s', want %d '%s'", step, e.n, e.text, n,
				 text);
	}
	struct evs e;
	assert_int_equal(run(s, strlen(s), 256, &e), 0);
	assert_string_equal(e.text, text);
}

static void test_sse_streams(void **state)
{
	(void)state;
	/* a Streamable HTTP answer: a progress notification, then the result */
	check("event: message\nid: 1\ndata: {\"method\":\"notifications/progress\"}\n\n"
	      "id: 2\ndata: {\"result\":{}}\n\n",
	      2, "message|1|{\"method\":\"notifications/progress\"};message|2|{\"result\":{}};");
	/* 2024-11-05: the endpoint event */
	check("event: endpoint\r\ndata: /messages?sessionId=abc\r\n\r\n", 1,
	      "endpoint||/messages?sessionId=abc;");
	/* CR alone ends lines; data lines join with LF; no space after the
	 * colon is fine, only one is dropped */
	check("data:a\rdata:  b\r\r", 1, "message||a\n b;");
	/* comments and unknown fields are ignored; retry too */
	check(": keep-alive\n\nretry: 1000\nfoo: bar\ndata: x\n\n", 1, "message||x;");
	/* no data: nothing dispatched, and the event type does not carry over */
	check("event: endpoint\n\ndata: y\n\n", 1, "message||y;");
	/* "data" alone is an empty data line */
	check("data\ndata\n\n", 1, "message||\n;");
	/* the id persists across events; a BOM first is skipped */
	check("\xef\xbb\xbfid: 7\ndata: a\n\ndata: b\n\nid: 8\ndata: c\n\n", 3,
	      "message|7|a;message|7|b;message|8|c;");
	/* an event without the final blank line is not dispatched */
	check("data: partial\n", 0, "");
}

static void test_sse_bounded(void **state)
{
	(void)state;
	struct evs e;
	assert_int_equal(run("data: 12345\n\n", 1, 5, &e), 0);
	assert_string_equal(e.text, "message||12345;");
	assert_int_equal(run("data: 123456\n\n", 1, 5, &e), -E2BIG);
	assert_int_equal(run("data: 1234\ndata: 5\n\n", 4, 5, &e), -E2BIG); /* the LF counts */
	/* an over-long event type reads as no known type */
	assert_int_equal(
	    run("event: 0123456789012345678901234567890123456789\ndata: x\n\n", 7, 5, &e), 0);
	assert_string_equal(e.text, "||x;");
}

/* An id with NUL is ignored (the standard's rule): the last one stays. */
static void test_sse_id_nul(void **state)
{
	(void)state;
	static const char s[] = "id: 1\ndata: a\n\nid: x\0y\ndata: b\n\n";
	char buf[64];
	struct arn_mcp_sse p;
	struct arn_mcp_sse_ev ev;
	arn_mcp_sse_init(&p, buf, sizeof(buf));
	ssize_t k = arn_mcp_sse_feed(&p, s, sizeof(s) - 1, &ev);
	assert_true(k > 0);
	assert_memory_equal(ev.id, "1", 1);
	assert_true(arn_mcp_sse_feed(&p, s + k, sizeof(s) - 1 - (size_t)k, &ev) > 0);
	assert_int_equal(ev.id_len, 1);
	assert_memory_equal(ev.id, "1", 1);
	assert_memory_equal(ev.data, "b", 1);
}

const struct CMUnitTest mt_sse_tests[] = {
    cmocka_unit_test(test_sse_id_nul),
    cmocka_unit_test(test_sse_streams),
    cmocka_unit_test(test_sse_bounded),
};
const size_t mt_sse_n = sizeof(mt_sse_tests) / sizeof(mt_sse_tests[0]);
