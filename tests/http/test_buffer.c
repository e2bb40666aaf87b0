/*
 * envoy.filters.http.buffer over the hcm harness (HTTP/1.1 and HTTP/2
 * clients, an HTTP/1.1 upstream): the request's body read whole before
 * the upstream sees a byte, then one framing on the wire (content-length
 * the bytes kept, never with transfer-encoding), the bounds (413 by
 * content-length at once or past max_request_bytes, 503 past the worker's
 * kept-body mbufs), per-route settings, and what a stalled client holds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <nghttp2/nghttp2.h>

#include "arn_stats_envoy.h"
#include "hcm_harness.h"
#include "hh_h2c.h"

#define AT_(t) "\"@type\":\"type.googleapis.com/envoy.extensions.filters.http." t "\""
#define BUF_(n) "{" AT_("buffer.v3.Buffer") ",\"max_request_bytes\":" #n "}"

/* Listener "dyn" (port 82): the buffer filter (16 bytes) before the
 * router to "web"; /big has 64 bytes (BufferPerRoute buffer), /off the
 * filter off (BufferPerRoute disabled), /fc off by a FilterConfig, /retry
 * retried once on a 5xx to cluster "two", /mir mirrored to "two". */
/* clang-format off */
#define BUF_LISTENER                                                                               \
	"{\"name\":\"dyn\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","              \
	"\"port_value\":82}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","                  \
	"\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.filters.network."      \
	"http_connection_manager.v3.HttpConnectionManager\",\"stat_prefix\":\"buf\","              \
	"\"stream_idle_timeout\":\"1s\",\"generate_request_id\":false,"                              \
	"\"route_config\":{\"name\":\"dyn\",\"virtual_hosts\":[{\"name\":\"all\",\"domains\":"     \
	"[\"*\"],\"routes\":["                                                                     \
	"{\"match\":{\"prefix\":\"/big\"},\"route\":{\"cluster\":\"web\"},"                        \
	"\"typed_per_filter_config\":{\"buf\":{" AT_("buffer.v3.BufferPerRoute")                  \
	",\"buffer\":{\"max_request_bytes\":64}}}},"                                               \
	"{\"match\":{\"prefix\":\"/huge\"},\"route\":{\"cluster\":\"web\"},"                       \
	"\"typed_per_filter_config\":{\"buf\":{" AT_("buffer.v3.BufferPerRoute")                  \
	",\"buffer\":{\"max_request_bytes\":1000000}}}},"                                          \
	"{\"match\":{\"prefix\":\"/off\"},\"route\":{\"cluster\":\"web\"},"                        \
	"\"typed_per_filter_config\":{\"buf\":{" AT_("buffer.v3.BufferPerRoute")                  \
	",\"disabled\":true}}},"                                                                   \
	"{\"match\":{\"prefix\":\"/fc\"},\"route\":{\"cluster\":\"web\"},"                         \
	"\"typed_per_filter_config\":{\"buf\":{\"@type\":\"type.googleapis.com/"                  \
	"envoy.config.route.v3.FilterConfig\",\"disabled\":true}}},"                               \
	"{\"match\":{\"prefix\":\"/mir\"},\"route\":{\"cluster\":\"web\","                          \
	"\"request_mirror_policies\":[{\"cluster\":\"two\"}]}},"                                      \
	"{\"match\":{\"prefix\":\"/retry\"},\"route\":{\"cluster\":\"two\",\"retry_policy\":"      \
	"{\"retry_on\":\"5xx\",\"num_retries\":1}}},"                                              \
	"{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}]}]},"                      \
	"\"http_filters\":[{\"name\":\"buf\",\"typed_config\":" BUF_(16) "},"                      \
	"{\"name\":\"envoy.filters.http.router\",\"typed_config\":{" AT_("router.v3.Router") "}}]}}]}]}"
/* clang-format on */

#define OK5 "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"

static void send_str(struct peer *p, const char *s)
{
	assert_non_null(p);
	hh_send(p, s, (uint32_t)strlen(s), 0);
	hh_settle();
}

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

/* What @p p logged from @p from on, as a string in @p out. */
static const char *log_from(const struct peer *p, uint32_t from, char *out, size_t cap)
{
	size_t n = p->log_len > from ? p->log_len - from : 0;
	if (n > cap - 1)
		n = cap - 1;
	memcpy(out, p->log + from, n);
	out[n] = 0;
	return out;
}

static uint64_t http_stat(unsigned id)
{
	struct arn_stats_scope *sc =
	    arn_stats_scope_get_named(&arn_stats_http_schema, "http.buf", NULL, NULL);
	assert_non_null(sc);
	uint64_t v = arn_stats_counter_value(sc, id);
	arn_stats_scope_put(sc);
	return v;
}

static struct http_worker *worker(void)
{
	struct arn_tcp_worker *wk = tcp_wk(lc);
	for (int i = 0; i < TCP_LISTENERS_MAX; i++)
		if (wk->lsn[i].used && wk->lsn[i].port == 80)
			return wk->lsn[i].user;
	fail_msg("no HTTP worker");
	return NULL;
}

static void buf_begin(void)
{
	hh_begin(1);
	hh_apply(ARN_TYPE_URL_LISTENER, BUF_LISTENER);
	hh_cfg_changed = true;
	hh_settle();
}

/* Client @p c's request in @p parts (NULL-ended): nothing reaches an
 * upstream before the last part; then the bytes the upstream got are
 * exactly @p want. The upstream answers OK5, the client gets it. */
static void exact_upstream(unsigned c, const char *const *parts, const char *want)
{
	struct peer *cl = hh_client(c);
	uint32_t mark = cl->log_len;
	uint32_t rx0[N_PEERS];
	snapshot(rx0);
	for (const char *const *p = parts; *p; p++) {
		if (p[1] == NULL) {
			assert_null(upstream_that_got(rx0));
			snapshot(rx0);
		}
		send_str(cl, *p);
	}
	struct peer *u = upstream_that_got(rx0);
	if (!u) {
		char r[4096];
		fail_msg("no upstream; the client got: %s", log_from(cl, mark, r, sizeof(r)));
	}
	char got[4096];
	uint32_t um = u->log_len - (u->rx - rx0[u - peers]);
	log_from(u, um, got, sizeof(got));
	if (strcmp(got, want) != 0)
		fail_msg("the upstream got:\n%s\nnot:\n%s", got, want);
	send_str(u, OK5);
	char r[4096];
	log_from(cl, mark, r, sizeof(r));
	if (!strstr(r, "HTTP/1.1 200 OK\r\n") || !strstr(r, "hello"))
		fail_msg("the client got: %s", r);
}

/* A request head as the upstream gets it from this listener: what Arion
 * adds to every request after the client's fields */
#define ADDED "x-forwarded-proto: http\r\nx-envoy-expected-rq-timeout-ms: 15000\r\n"
#define UP(line) line "\r\nHost: a\r\n" ADDED

/* A chunked HTTP/1.1 request (chunk extensions, three chunks, a trailer)
 * is read whole, then goes upstream with content-length the decoded
 * bytes, no transfer-encoding and no chunk framing, its trailer dropped
 * (Envoy's HTTP/1 codec writes none after a content-length); one with a
 * content-length keeps it; an empty chunked body goes as content-length 0.
 * Fails before: the listener is refused (the buffer filter's type is
 * unknown to Arion). */
static void test_buffer_chunked_request_goes_with_its_length(void **state)
{
	(void)state;
	buf_begin();
	hh_open(0, 82);
	hh_settle();
	const char *chunked[] = {
	    "POST /u HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
	    "3;ext=\"x\"\r\nabc\r\n", "4\r\ndefg\r\n", "2;q\r\nhi\r\n0\r\nx-trailer: t\r\n\r\n",
	    NULL};
	uint32_t before = worker()->rb_segs;
	exact_upstream(0, chunked, UP("POST /u HTTP/1.1") "content-length: 9\r\n\r\nabcdefghi");
	assert_int_equal(worker()->rb_segs, before);
	const char *cl[] = {"POST /u HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhe", "llo",
			    NULL};
	exact_upstream(0, cl,
		       "POST /u HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n" ADDED "\r\nhello");
	const char *empty[] = {"POST /u HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
			       "0\r\n\r\n", NULL};
	exact_upstream(0, empty, UP("POST /u HTTP/1.1") "content-length: 0\r\n\r\n");
	/* a head-only GET is not held */
	const char *get[] = {"GET /u HTTP/1.1\r\nHost: a\r\n\r\n", NULL};
	exact_upstream(0, get, UP("GET /u HTTP/1.1") "\r\n");
	hh_end();
}

/* The bounds: a content-length past max_request_bytes (16) is answered
 * 413 before a byte of the body is read; a chunked body is answered once
 * it passes 16 bytes; 16 bytes exactly go; each 413 counted in
 * downstream_rq_too_large, Envoy's body and no upstream byte. A route's
 * BufferPerRoute buffer (64) replaces the filter's bound. */
static void test_buffer_bounds(void **state)
{
	(void)state;
	buf_begin();
	uint64_t tl0 = http_stat(ARN_HTTP_downstream_rq_too_large);
	char r[4096];
	uint32_t rx0[N_PEERS];
	/* 17 by its content-length: at once */
	hh_open(0, 82);
	hh_settle();
	snapshot(rx0);
	send_str(hh_client(0), "POST /u HTTP/1.1\r\nHost: a\r\nContent-Length: 17\r\n\r\n");
	assert_null(upstream_that_got(rx0));
	log_from(hh_client(0), 0, r, sizeof(r));
	if (!strstr(r, "HTTP/1.1 413 Payload Too Large\r\n") ||
	    !strstr(r, "\r\n\r\nPayload Too Large"))
		fail_msg("the client got: %s", r);
	assert_int_equal(http_stat(ARN_HTTP_downstream_rq_too_large), tl0 + 1);
	/* chunked: refused once it passes 16 */
	hh_open(1, 82);
	hh_settle();
	snapshot(rx0);
	send_str(hh_client(1), "POST /u HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
			       "a\r\n0123456789\r\n");
	log_from(hh_client(1), 0, r, sizeof(r));
	assert_string_equal(r, "");
	send_str(hh_client(1), "7\r\nabcdefg\r\n");
	assert_null(upstream_that_got(rx0));
	log_from(hh_client(1), 0, r, sizeof(r));
	if (!strstr(r, "HTTP/1.1 413 Payload Too Large\r\n"))
		fail_msg("the client got: %s", r);
	assert_int_equal(http_stat(ARN_HTTP_downstream_rq_too_large), tl0 + 2);
	/* (each closes: a refused request's stream holds its http_res until
	 * the client sends the rest or leaves, and the harness has two) */
	hh_fin(hh_client(0));
	hh_fin(hh_client(1));
	hh_settle();
	/* 16 exactly, chunked: goes */
	hh_open(2, 82);
	hh_settle();
	const char *at[] = {"POST /u HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
			    "10\r\n0123456789abcdef\r\n0\r\n\r\n", NULL};
	exact_upstream(2, at, UP("POST /u HTTP/1.1") "content-length: 16\r\n\r\n0123456789abcdef");
	/* /big: 40 bytes under its own 64 */
	const char *big[] = {"POST /big HTTP/1.1\r\nHost: a\r\nContent-Length: 40\r\n\r\n",
			     "0123456789012345678901234567890123456789", NULL};
	exact_upstream(2, big,
		       "POST /big HTTP/1.1\r\nHost: a\r\nContent-Length: 40\r\n" ADDED "\r\n"
		       "0123456789012345678901234567890123456789");
	assert_int_equal(http_stat(ARN_HTTP_downstream_rq_too_large), tl0 + 2);
	hh_end();
}

/* BufferPerRoute disabled and a FilterConfig disabled turn the filter
 * off for their route: the head goes upstream before the body is in, the
 * body as the client framed it (chunked, re-chunked by Arion). */
static void test_buffer_off_per_route(void **state)
{
	(void)state;
	static const char *const paths[] = {"/off", "/fc"};
	for (unsigned k = 0; k < 2; k++) {
		buf_begin();
		hh_open(0, 82);
		hh_settle();
		uint32_t rx0[N_PEERS];
		snapshot(rx0);
		char req[256], r[4096];
		snprintf(req, sizeof(req),
			 "POST %s HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
			 "3\r\nabc\r\n",
			 paths[k]);
		send_str(hh_client(0), req);
		struct peer *u = upstream_that_got(rx0);
		assert_non_null(u);
		log_from(u, 0, r, sizeof(r));
		if (!strstr(r, "transfer-encoding: chunked\r\n") || strstr(r, "content-length") ||
		    !strstr(r, "\r\n\r\n3\r\nabc\r\n"))
			fail_msg("%s: the upstream got: %s", paths[k], r);
		send_str(hh_client(0), "0\r\n\r\n");
		send_str(u, OK5);
		hh_end();
	}
}

/* A client that sends part of its body and stops holds its kept mbufs
 * until the stream's idle timeout (1 s) ends the stream: then none. */
static void test_buffer_stalled_client_freed_by_idle_timeout(void **state)
{
	(void)state;
	buf_begin();
	hh_open(0, 82);
	hh_settle();
	uint32_t rx0[N_PEERS];
	snapshot(rx0);
	send_str(hh_client(0), "POST /huge HTTP/1.1\r\nHost: a\r\nContent-Length: 100000\r\n\r\n");
	hh_send(hh_client(0), NULL, 20000, 0);
	hh_settle();
	assert_null(upstream_that_got(rx0));
	assert_true(worker()->rb_segs >= 20000 / 2048);
	for (int i = 0; i < 15; i++)
		hh_advance(100);
	assert_int_equal(worker()->rb_segs, 0);
	assert_null(upstream_that_got(rx0));
	char r[4096];
	log_from(hh_client(0), 0, r, sizeof(r));
	if (!strstr(r, "HTTP/1.1 408 "))
		fail_msg("the client got: %s", r);
	hh_end();
}

/* The worker's bound on kept bodies (lowered to 16 mbufs for the test:
 * the harness's worker has two request buffers, so two clients): a slow
 * client holds 12 mbufs of a body it has not finished; the next one's body
 * finds the bound and is answered 503 (rq_buffer_overflow), while the
 * first one's stays whole: it goes upstream with its full length once it
 * ends, and every kept mbuf comes back. */
static void test_buffer_worker_bound(void **state)
{
	(void)state;
	buf_begin();
	uint64_t ov0 = http_stat(ARN_HTTP_rq_buffer_overflow);
	struct http_worker *w = worker();
	enum { BODY = 12 * 2048 };
	char head[256], r[4096];
	snprintf(head, sizeof(head), "POST /huge HTTP/1.1\r\nHost: a\r\nContent-Length: %u\r\n\r\n",
		 BODY + 1);
	uint32_t rx0[N_PEERS];
	snapshot(rx0);
	w->rb_segs_max = 16;
	hh_open(0, 82);
	hh_settle();
	send_str(hh_client(0), head);
	hh_send(hh_client(0), NULL, BODY, 0);
	hh_settle();
	assert_null(upstream_that_got(rx0));
	assert_int_equal(w->rb_segs, 12);
	hh_open(1, 82);
	hh_settle();
	send_str(hh_client(1), head);
	hh_send(hh_client(1), NULL, BODY, 0);
	hh_settle();
	assert_null(upstream_that_got(rx0));
	log_from(hh_client(1), 0, r, sizeof(r));
	if (!strstr(r, "HTTP/1.1 503 Service Unavailable\r\n"))
		fail_msg("the second client got: %s", r);
	assert_int_equal(http_stat(ARN_HTTP_rq_buffer_overflow), ov0 + 1);
	/* the refused one's mbufs are back: the first one's alone */
	assert_int_equal(w->rb_segs, 12);
	/* the first ends its body: whole upstream */
	for (unsigned c = 0; c < 1; c++) {
		snapshot(rx0);
		send_str(hh_client(c), "z");
		struct peer *u = upstream_that_got(rx0);
		assert_non_null(u);
		log_from(u, 0, r, sizeof(r));
		char cl[64];
		snprintf(cl, sizeof(cl), "Content-Length: %u\r\n", BODY + 1);
		if (!strstr(r, cl) || !strstr(r, "\r\n\r\nxxxx"))
			fail_msg("the upstream got: %s", r);
		uint32_t hl = (uint32_t)(strstr(r, "\r\n\r\n") + 4 - r);
		assert_int_equal(u->rx - rx0[u - peers], hl + BODY + 1);
		send_str(u, OK5);
	}
	w->rb_segs_max = 0;
	assert_int_equal(w->rb_segs, 0);
	hh_end();
}

/* A retried request (5xx, then the second host of "two") sends the body
 * the filter kept, with the same content-length, to both attempts: one
 * copy, read once from the client. */
static void test_buffer_retry_sends_the_kept_body(void **state)
{
	(void)state;
	buf_begin();
	hh_open(0, 82);
	hh_settle();
	uint32_t rx0[N_PEERS];
	snapshot(rx0);
	send_str(hh_client(0),
		 "POST /retry HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
		 "5\r\nhello\r\n0\r\n\r\n");
	struct peer *u1 = upstream_that_got(rx0);
	assert_non_null(u1);
	char r[4096];
	log_from(u1, 0, r, sizeof(r));
	if (!strstr(r, "content-length: 5\r\n") || !strstr(r, "\r\n\r\nhello") ||
	    strstr(r, "chunked"))
		fail_msg("the first attempt got: %s", r);
	snapshot(rx0);
	send_str(u1, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n");
	for (int i = 0; i < 20 && !upstream_that_got(rx0); i++)
		hh_advance(20);
	struct peer *u2 = upstream_that_got(rx0);
	assert_non_null(u2);
	assert_true(u2 != u1);
	log_from(u2, 0, r, sizeof(r));
	if (!strstr(r, "content-length: 5\r\n") || !strstr(r, "\r\n\r\nhello") ||
	    strstr(r, "chunked"))
		fail_msg("the retry got: %s", r);
	send_str(u2, OK5);
	log_from(hh_client(0), 0, r, sizeof(r));
	if (!strstr(r, "HTTP/1.1 200 OK\r\n"))
		fail_msg("the client got: %s", r);
	hh_end();
}

/* The upstream connection to 198.18.0.<last>, or NULL. */
static struct peer *upstream_at(unsigned last)
{
	for (unsigned u = 0; u < N_UPSTREAMS; u++) {
		struct peer *p = hh_upstream(u);
		if (p && p->addr == (0xc6120000u | last))
			return p;
	}
	return NULL;
}

/* A mirrored request whose body the filter read whole: the mirror gets
 * the same body and length as the request (the kept body, which went by
 * no body path once the route was chosen). Fails before: the mirror went
 * with content-length 0 and no body. */
static void test_buffer_mirror_gets_the_body(void **state)
{
	(void)state;
	buf_begin();
	hh_open(0, 82);
	hh_settle();
	send_str(hh_client(0), "POST /mir HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
			       "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n");
	struct peer *u = upstream_at(200);
	struct peer *m = upstream_at(201) ? upstream_at(201) : upstream_at(202);
	assert_non_null(u);
	if (!m)
		fail_msg("no mirror connection");
	char r[4096];
	log_from(u, 0, r, sizeof(r));
	if (!strstr(r, "content-length: 5\r\n") || !strstr(r, "\r\n\r\nabcde"))
		fail_msg("the upstream got: %s", r);
	log_from(m, 0, r, sizeof(r));
	if (!strstr(r, "POST /mir HTTP/1.1\r\n") || !strstr(r, "content-length: 5\r\n") ||
	    strstr(r, "chunked") || !strstr(r, "\r\n\r\nabcde"))
		fail_msg("the mirror got: %s", r);
	send_str(m, OK5);
	send_str(u, OK5);
	log_from(hh_client(0), 0, r, sizeof(r));
	if (!strstr(r, "HTTP/1.1 200 OK\r\n"))
		fail_msg("the client got: %s", r);
	hh_end();
}

static void no_own(struct hh_rd *r, uint8_t op)
{
	(void)r, (void)op;
}

/* fuzz_hcm's "dyn" listener has the filter as Envoy Gateway writes it
 * (disabled, on for /buf by its BufferPerRoute, 64 bytes; the route
 * retried and mirrored): a chunked request goes whole with its length to
 * the upstream and the mirror; a request elsewhere streams. The seed
 * dyn_buffer replays through the fuzzer's run (a retried body, two 413s,
 * a client reset mid-body; hh_end finds every mbuf back). Fails before:
 * HH_LDYN had no buffer filter, /buf's body went chunked as it came. */
static void test_buffer_fuzz_listener(void **state)
{
	(void)state;
	hh_begin(1);
	hh_config(0);
	hh_open(0, 82);
	hh_settle();
	uint32_t rx0[N_PEERS];
	snapshot(rx0);
	send_str(hh_client(0), "POST /buf HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
			       "3;e=1\r\nabc\r\n");
	assert_null(upstream_that_got(rx0));
	send_str(hh_client(0), "2\r\nde\r\n0\r\nx-t: 1\r\n\r\n");
	struct peer *u = upstream_at(203);
	struct peer *m = upstream_at(201) ? upstream_at(201) : upstream_at(202);
	assert_non_null(u);
	assert_non_null(m);
	char r[4096];
	log_from(u, 0, r, sizeof(r));
	if (!strstr(r, "content-length: 5\r\n") || strstr(r, "chunked") ||
	    !strstr(r, "\r\n\r\nabcde") || strstr(r, "x-t"))
		fail_msg("the upstream got: %s", r);
	log_from(m, 0, r, sizeof(r));
	if (!strstr(r, "content-length: 5\r\n") || !strstr(r, "\r\n\r\nabcde"))
		fail_msg("the mirror got: %s", r);
	send_str(m, OK5);
	send_str(u, OK5);
	hh_end();

	struct arn_stats_scope *sc =
	    arn_stats_scope_get_named(&arn_stats_http_schema, "http.dyn", NULL, NULL);
	assert_non_null(sc);
	uint64_t tl0 = arn_stats_counter_value(sc, ARN_HTTP_downstream_rq_too_large);
	FILE *f = fopen("tests/http/corpus/hcm/dyn_buffer", "rb");
	assert_non_null(f);
	static uint8_t seed[4096];
	size_t n = fread(seed, 1, sizeof(seed), f);
	fclose(f);
	assert_true(n > 1 && n < sizeof(seed));
	hh_fuzz_run(seed, n, no_own);
	assert_int_equal(arn_stats_counter_value(sc, ARN_HTTP_downstream_rq_too_large) - tl0, 2);
	arn_stats_scope_put(sc);
}

/* An HTTP/2 request body from a static buffer (nghttp2's data source). */
struct h2body {
	const char *p;
	size_t left;
};

static ssize_t h2body_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len,
			   uint32_t *flags, nghttp2_data_source *src, void *u)
{
	(void)s, (void)id, (void)u;
	struct h2body *b = src->ptr;
	size_t n = b->left < len ? b->left : len;
	if (n > 3 && b->left < 100)
		n = 3; /* a short body in several DATA frames */
	memcpy(buf, b->p, n);
	b->p += n;
	b->left -= n;
	if (!b->left)
		*flags |= NGHTTP2_DATA_FLAG_EOF;
	return (ssize_t)n;
}

/* HTTP/2 clients: a request without content-length (DATA frames to
 * END_STREAM) goes to the HTTP/1.1 upstream with content-length the
 * bytes and no chunked framing (before the filter: chunked); one with a
 * content-length keeps it; both bodies exact. */
static void test_buffer_http2_requests(void **state)
{
	(void)state;
	hh_clients_h2 = true;
	for (unsigned k = 0; k < 2; k++) {
		buf_begin();
		hh_open(0, 82);
		hh_settle();
		static struct h2c c;
		nghttp2_session *s = h2c_open(&c);
#define NV(a, b)                                                                                   \
	{(uint8_t *)(a), (uint8_t *)(b), sizeof(a) - 1, sizeof(b) - 1, NGHTTP2_NV_FLAG_NONE}
		nghttp2_nv nv[] = {NV(":method", "POST"), NV(":path", "/u"), NV(":scheme", "http"),
				   NV(":authority", "a"), NV("content-length", "11")};
#undef NV
		struct h2body b = {"hello world", 11};
		nghttp2_data_provider dp = {.source = {.ptr = &b}, .read_callback = h2body_read};
		uint32_t rx0[N_PEERS];
		snapshot(rx0);
		assert_true(nghttp2_submit_request(s, NULL, nv, k ? 5 : 4, &dp, NULL) > 0);
		h2c_pump(s, &c);
		struct peer *u = upstream_that_got(rx0);
		assert_non_null(u);
		char got[4096];
		log_from(u, 0, got, sizeof(got));
		const char *want = k ? "POST /u HTTP/1.1\r\ncontent-length: 11\r\nhost: a\r\n" ADDED
				       "\r\nhello world"
				     : "POST /u HTTP/1.1\r\nhost: a\r\n" ADDED
				       "content-length: 11\r\n\r\nhello world";
		if (strcmp(got, want) != 0)
			fail_msg("the upstream got:\n%s\nnot:\n%s", got, want);
		hh_send(u, OK5, sizeof(OK5) - 1, 0);
		for (int i = 0; i < 20 && !c.closed; i++)
			h2c_pump(s, &c);
		assert_true(c.closed);
		c.head[c.hl] = 0;
		if (!strstr(c.head, ":status: 200\n"))
			fail_msg("the head: %s", c.head);
		nghttp2_session_del(s);
		hh_end();
	}
	hh_clients_h2 = false;
}

/* An HTTP/2 body larger than the stream's initial window (100000 bytes,
 * no content-length) is read whole: the client's window opens as the
 * filter keeps the bytes, and the upstream gets content-length 100000
 * and every byte. */
static void test_buffer_http2_body_past_the_window(void **state)
{
	(void)state;
	hh_clients_h2 = true;
	buf_begin();
	hh_open(0, 82);
	hh_settle();
	static struct h2c c;
	nghttp2_session *s = h2c_open(&c);
	static char body[100000];
	for (size_t i = 0; i < sizeof(body); i++)
		body[i] = (char)('a' + i % 23);
#define NV(a, b)                                                                                   \
	{(uint8_t *)(a), (uint8_t *)(b), sizeof(a) - 1, sizeof(b) - 1, NGHTTP2_NV_FLAG_NONE}
	nghttp2_nv nv[] = {NV(":method", "POST"), NV(":path", "/huge"), NV(":scheme", "http"),
			   NV(":authority", "a")};
#undef NV
	struct h2body b = {body, sizeof(body)};
	nghttp2_data_provider dp = {.source = {.ptr = &b}, .read_callback = h2body_read};
	uint32_t rx0[N_PEERS];
	snapshot(rx0);
	assert_true(nghttp2_submit_request(s, NULL, nv, 4, &dp, NULL) > 0);
	for (int i = 0; i < 10 && b.left; i++)
		h2c_pump(s, &c);
	assert_int_equal(b.left, 0);
	for (int i = 0; i < 5; i++)
		h2c_pump(s, &c);
	struct peer *u = upstream_that_got(rx0);
	assert_non_null(u);
	char head[4096];
	log_from(u, 0, head, sizeof(head));
	char *e = strstr(head, "\r\n\r\n");
	assert_non_null(e);
	if (!strstr(head, "content-length: 100000\r\n") || strstr(head, "chunked"))
		fail_msg("the upstream got: %.*s", (int)(e - head), head);
	uint32_t hl = (uint32_t)(e + 4 - head);
	assert_int_equal(u->rx - rx0[u - peers], hl + sizeof(body));
	/* the body's first bytes as sent (the log keeps the first 4 KiB) */
	assert_memory_equal(u->log + hl, body, u->log_len - hl);
	hh_send(u, OK5, sizeof(OK5) - 1, 0);
	for (int i = 0; i < 20 && !c.closed; i++)
		h2c_pump(s, &c);
	assert_true(c.closed);
	nghttp2_session_del(s);
	hh_end();
	hh_clients_h2 = false;
}

int main(void)
{
	arn_config_set_features(ARN_CONFIG_FEATURE_L4 | ARN_CONFIG_FEATURE_HTTP_L4);
	hh_init(false);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_buffer_chunked_request_goes_with_its_length),
	    cmocka_unit_test(test_buffer_bounds),
	    cmocka_unit_test(test_buffer_off_per_route),
	    cmocka_unit_test(test_buffer_stalled_client_freed_by_idle_timeout),
	    cmocka_unit_test(test_buffer_worker_bound),
	    cmocka_unit_test(test_buffer_retry_sends_the_kept_body),
	    cmocka_unit_test(test_buffer_http2_requests),
	    cmocka_unit_test(test_buffer_mirror_gets_the_body),
	    cmocka_unit_test(test_buffer_fuzz_listener),
	    cmocka_unit_test(test_buffer_http2_body_past_the_window),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
