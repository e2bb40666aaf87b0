/*
 * The request edits a keep-alive connection keeps (http_router_filter.c's
 * edits_kept): end to end on the real TCP stack over the fake lib/net,
 * with hcm_harness.h's peers, as test_router_match.c. Each test changes
 * one thing the kept list depends on between requests of one connection
 * and checks that the upstream gets what a list made anew gives; values
 * differ in length, so that a stale pointer whose bytes happen to be
 * rewritten in place is still seen.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "hcm_harness.h"
#include "http_conn_blk.h"

#define OK5 "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
#define ADDR(last) (0xc6120000u | (last)) /* 198.18.0.last */
#define WEB ADDR(200)			  /* cluster web */

/* clang-format off */
/* Listener "dyn" on port 82, its routes by RDS (RouteConfiguration "dyn",
 * apply_routes), with @p extra (JSON members and a comma) in its
 * connection manager. */
#define LSN                                                                                        \
	"{\"name\":\"dyn\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","              \
	"\"port_value\":82}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","                  \
	"\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.filters.network."      \
	"http_connection_manager.v3.HttpConnectionManager\",\"stat_prefix\":\"dyn\",%s"            \
	"\"rds\":{\"route_config_name\":\"dyn\",\"config_source\":{\"ads\":{}}},"                  \
	"\"http_filters\":[{\"name\":\"envoy.filters.http.router\","                               \
	"\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.filters.http."         \
	"router.v3.Router\"}}]}}]}]}"
#define RT                                                                                         \
	"{\"name\":\"dyn\",\"virtual_hosts\":[{\"name\":\"all\",\"domains\":[\"*\"],"              \
	"\"routes\":[%s]}]}"
/* a route of @p prefix to cluster web adding x-r: @p value */
#define ROUTE_ADD(prefix, key, value)                                                              \
	"{\"match\":{\"prefix\":\"" prefix "\"},\"route\":{\"cluster\":\"web\"},"                  \
	"\"request_headers_to_add\":[{\"header\":{\"key\":\"" key "\",\"value\":\"" value "\"}}]}"
#define AT_(t) "\"@type\":\"type.googleapis.com/envoy.extensions.filters.http." t "\""
/* Listener "dyn": a local rate limit of 1 token a minute that is enabled
 * but never enforced, adding a request header when it would have limited
 * (as test_hcm_tcp.c's). */
#define LSN_UNENFORCED                                                                             \
	"{\"name\":\"dyn\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","              \
	"\"port_value\":82}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","                  \
	"\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.filters.network."      \
	"http_connection_manager.v3.HttpConnectionManager\",\"stat_prefix\":\"rek\","              \
	"\"generate_request_id\":false,"                                                          \
	"\"route_config\":{\"name\":\"dyn\",\"virtual_hosts\":[{\"name\":\"all\",\"domains\":"     \
	"[\"*\"],\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}]}]},"  \
	"\"http_filters\":["                                                                       \
	"{\"name\":\"limit\",\"typed_config\":{" AT_("local_ratelimit.v3.LocalRateLimit") ","      \
	"\"stat_prefix\":\"rek\",\"token_bucket\":{\"max_tokens\":1,\"fill_interval\":\"60s\"},"   \
	"\"request_headers_to_add_when_not_enforced\":[{\"header\":{\"key\":\"x-rl\","             \
	"\"value\":\"would-limit\"}}],"                                                            \
	"\"filter_enabled\":{\"default_value\":{\"numerator\":100},\"runtime_key\":\"e\"},"        \
	"\"filter_enforced\":{\"default_value\":{\"numerator\":0},\"runtime_key\":\"f\"}}},"       \
	"{\"name\":\"envoy.filters.http.router\",\"typed_config\":{" AT_("router.v3.Router") "}}]}}]}]}"
/* clang-format on */

static void apply_routes(const char *routes)
{
	char b[4096];
	snprintf(b, sizeof(b), RT, routes);
	hh_apply(ARN_TYPE_URL_ROUTE, b);
}

/* A run with listener "dyn" (@p extra in its connection manager, NULL:
 * generate_request_id off, as bench/proxy's, so that lists are kept)
 * routing by @p routes, and client 0 connected to it. */
static void start(const char *extra, const char *routes)
{
	char b[4096];
	hh_begin(1);
	apply_routes(routes);
	snprintf(b, sizeof(b), LSN, extra ? extra : "\"generate_request_id\":false,");
	hh_apply(ARN_TYPE_URL_LISTENER, b);
	hh_cfg_changed = true; /* the next run puts listener "dyn" back */
	hh_settle();
	hh_open(0, 82);
	hh_settle();
}

/* What the upstream got for the last request (NUL-terminated), and its
 * address. */
static char got[PEER_LOG + 1];
static uint32_t got_addr;

/* Send @p req on client 0, answer it from the upstream that gets it:
 * @return what that upstream got for it (got; "" when none did). */
static const char *proxied(const char *req)
{
	uint32_t len0[N_PEERS];
	for (int i = 0; i < N_PEERS; i++)
		len0[i] = peers[i].log_len;
	struct peer *c = hh_client(0);
	assert_non_null(c);
	hh_send(c, req, (uint32_t)strlen(req), 0);
	hh_settle();
	got[0] = 0;
	got_addr = 0;
	for (unsigned u = 0; u < N_UPSTREAMS; u++) {
		struct peer *p = hh_upstream(u);
		if (!p || p->log_len == len0[p - peers])
			continue;
		uint32_t k = p->log_len - len0[p - peers];
		memcpy(got, p->log + len0[p - peers], k);
		got[k] = 0;
		got_addr = p->addr;
		hh_send(p, OK5, (uint32_t)strlen(OK5), 0);
		hh_settle();
		break;
	}
	return got;
}

/* @p req went upstream with line @p line ("name: value") and without
 * @p absent (NULL: no such check). */
static void expect_line(const char *req, const char *line, const char *absent)
{
	const char *t = proxied(req);
	char l[256];
	snprintf(l, sizeof(l), "\r\n%s\r\n", line);
	if (!strstr(t, l) || (absent && strstr(t, absent)))
		fail_msg("for %s the upstream got:\n%s", req, t);
}

#define GET(path) "GET " path " HTTP/1.1\r\nHost: a\r\n\r\n"

/* Another route: its own edits (the key's route, virtual host and table). */
static void test_kept_edits_follow_the_route(void **state)
{
	(void)state;
	start(NULL, ROUTE_ADD("/a", "x-r", "aaa") "," ROUTE_ADD("/bb", "x-r", "b"));
	expect_line(GET("/a"), "x-r: aaa", "x-r: b\r");
	expect_line(GET("/a"), "x-r: aaa", "x-r: b\r");
	expect_line(GET("/bb"), "x-r: b", "x-r: aaa");
	expect_line(GET("/a"), "x-r: aaa", "x-r: b\r");
	hh_end();
}

/* A new generation's table, the request the same: its edits (the key's
 * generation; its route is another object too). */
static void test_kept_edits_follow_the_generation(void **state)
{
	(void)state;
	start(NULL, ROUTE_ADD("/", "x-g", "one"));
	expect_line(GET("/x"), "x-g: one", NULL);
	expect_line(GET("/x"), "x-g: one", NULL);
	apply_routes(ROUTE_ADD("/", "x-g", "three"));
	hh_settle();
	hh_advance(2); /* the worker's next polls see the generation */
	expect_line(GET("/x"), "x-g: three", "x-g: one");
	expect_line(GET("/x"), "x-g: three", "x-g: one");
	hh_end();
}

/* A weighted cluster's own edits, whichever the request drew (the key's
 * weighted cluster). */
static void test_kept_edits_follow_the_weighted_cluster(void **state)
{
	(void)state;
	start(NULL, "{\"match\":{\"prefix\":\"/\"},\"route\":{\"weighted_clusters\":{\"clusters\":["
		    "{\"name\":\"web\",\"weight\":1,\"request_headers_to_add\":[{\"header\":"
		    "{\"key\":\"x-w\",\"value\":\"web\"}}]},"
		    "{\"name\":\"two\",\"weight\":1,\"request_headers_to_add\":[{\"header\":"
		    "{\"key\":\"x-w\",\"value\":\"second\"}}]}]}}}");
	unsigned web = 0, two = 0;
	for (unsigned i = 0; i < 16; i++) {
		const char *t = proxied(GET("/x"));
		bool is_web = got_addr == WEB;
		web += is_web;
		two += !is_web && got_addr;
		if (!strstr(t, is_web ? "\r\nx-w: web\r\n" : "\r\nx-w: second\r\n") ||
		    strstr(t, is_web ? "x-w: second" : "x-w: web"))
			fail_msg("request %u to %x got:\n%s", i, got_addr, t);
	}
	assert_true(web > 0 && two > 0);
	hh_end();
}

/* grpc-timeout makes the announced timeout per request (the key's
 * timeout; its line is the connection's, rewritten by a list made anew). */
static void test_kept_edits_follow_the_timeout(void **state)
{
	(void)state;
	start(NULL, "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\","
		    "\"max_grpc_timeout\":\"10s\"}}");
#define GRPC(t)                                                                                    \
	"POST /s/m HTTP/1.1\r\nHost: a\r\ncontent-type: application/grpc\r\ngrpc-timeout: " t      \
	"\r\nContent-Length: 0\r\n\r\n"
	expect_line(GRPC("5S"), "x-envoy-expected-rq-timeout-ms: 5000", NULL);
	expect_line(GRPC("5S"), "x-envoy-expected-rq-timeout-ms: 5000", NULL);
	expect_line(GRPC("300m"), "x-envoy-expected-rq-timeout-ms: 300", NULL);
	expect_line(GET("/x"), "x-envoy-expected-rq-timeout-ms: 15000", NULL);
	expect_line(GRPC("5S"), "x-envoy-expected-rq-timeout-ms: 5000", NULL);
	/* 0 is no deadline (Envoy's finalTimeout): the cap, not 1 ms */
	expect_line(GRPC("0m"), "x-envoy-expected-rq-timeout-ms: 10000", NULL);
	expect_line(GRPC("0n"), "x-envoy-expected-rq-timeout-ms: 10000", NULL);
	expect_line(GRPC("1n"), "x-envoy-expected-rq-timeout-ms: 1", NULL);
#undef GRPC
	hh_end();
}

/* Expect: 100-continue is answered here and removed (the key's Expect). */
static void test_kept_edits_follow_expect(void **state)
{
	(void)state;
	start(NULL, ROUTE_ADD("/", "x-e", "e"));
	expect_line(GET("/x"), "x-e: e", NULL);
	expect_line(GET("/x"), "x-e: e", NULL);
	expect_line("POST /x HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: "
		    "5\r\n\r\nhello",
		    "x-e: e", "100-continue");
	expect_line(GET("/x"), "x-e: e", NULL);
	hh_end();
}

/* An absolute-form target's authority replaces Host, and an HTTP/1.0
 * request without one gets one: a list with a Host is never kept, one
 * without is not used for them. */
static void test_kept_edits_follow_the_host(void **state)
{
	(void)state;
	start(NULL, ROUTE_ADD("/", "x-h", "h"));
	expect_line(GET("/x"), "Host: a", NULL);
	expect_line(GET("/x"), "Host: a", NULL);
	expect_line("GET http://bbb/x HTTP/1.1\r\nHost: a\r\n\r\n", "host: bbb", "Host: a");
	expect_line("GET http://cc/x HTTP/1.1\r\nHost: a\r\n\r\n", "host: cc", "bbb");
	expect_line(GET("/x"), "Host: a", "host: cc");
	/* HTTP/1.0 without Host: the upstream gets one (the endpoint's), not
	 * the kept list that has none */
	expect_line("GET /x HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", "host: 198.18.0.200:8080",
		    "Host: a");
	expect_line(GET("/x"), "Host: a", "198.18.0.200:8080");
	hh_end();
}

/* A value substituted from the request (%REQ(...)%) is the request's own:
 * a list with one is never kept. */
static void test_kept_edits_never_hold_request_values(void **state)
{
	(void)state;
	start(NULL, ROUTE_ADD("/", "x-c", "%REQ(x-src)%"));
	expect_line("GET /x HTTP/1.1\r\nHost: a\r\nx-src: 1\r\n\r\n", "x-c: 1", NULL);
	expect_line("GET /x HTTP/1.1\r\nHost: a\r\nx-src: 22\r\n\r\n", "x-c: 22", NULL);
	expect_line("GET /x HTTP/1.1\r\nHost: a\r\nx-src: 333\r\n\r\n", "x-c: 333", NULL);
	hh_end();
}

/* x-envoy-original-path is the request's path: a rewriting route's list
 * is never kept. */
static void test_kept_edits_never_hold_a_rewritten_path(void **state)
{
	(void)state;
	start(NULL, "{\"match\":{\"prefix\":\"/p/\"},\"route\":{\"cluster\":\"web\","
		    "\"prefix_rewrite\":\"/q/\"}}");
	expect_line(GET("/p/1"), "x-envoy-original-path: /p/1", NULL);
	expect_line(GET("/p/333"), "x-envoy-original-path: /p/333", NULL);
	expect_line(GET("/p/22"), "x-envoy-original-path: /p/22", NULL);
	hh_end();
}

/* The lists made for requests on the connections of listener "dyn"
 * (struct http_conn.re_made): a request that used the kept list made
 * none. */
static uint32_t lists_made(void)
{
	struct arn_tcp_worker *wk = tcp_wk(lc);
	struct http_worker *w = NULL;
	for (int i = 0; i < TCP_LISTENERS_MAX && !w; i++)
		if (wk->lsn[i].used && wk->lsn[i].port == 82)
			w = wk->lsn[i].user;
	assert_non_null(w);
	uint32_t n = 0;
	for (uint32_t i = 0; i < w->n_conns; i++)
		n += w->conns[i].c.re_made;
	return n;
}

/* The x-request-id @p t went upstream with (@p own: the request's own,
 * else a generated one of 36 characters) into @p id, checking that it is
 * there once; and the route's x-i line. */
static void id_of(const char *t, bool own, char id[64])
{
	const char *p = strstr(t, "\r\nx-request-id: ");
	if (!p || strstr(p + 1, "\r\nx-request-id: ") || !strstr(t, "\r\nx-i: i\r\n"))
		fail_msg("one x-request-id and x-i wanted:\n%s", t);
	p += 16;
	size_t k = strcspn(p, "\r");
	if (k >= 64 || (!own && (k != 36 || p[14] != '4')))
		fail_msg("not a generated id:\n%s", t);
	memcpy(id, p, k);
	id[k] = 0;
}

/* With generate_request_id (Envoy's default) the list is kept without the
 * id, and each request that brings none gets its own in the kept list's
 * edit, where its text has it (a merged path before it moves it: the
 * edit's value is set per request, not left where the first one's was);
 * one that brings its own sends it and no generated one (a list made
 * anew: that one has no edit for an id), and then the reverse. */
static void test_kept_edits_generate_each_request_its_id(void **state)
{
	(void)state;
	start("\"generate_request_id\":true,\"merge_slashes\":true,", ROUTE_ADD("/", "x-i", "i"));
	char ids[8][64];
	uint32_t made0 = lists_made();
	id_of(proxied(GET("/x")), false, ids[0]);
	assert_int_equal(lists_made() - made0, 1);
	static const char *const again[] = {GET("//x"), GET("/x"), GET("///x")};
	for (unsigned i = 1; i < 4; i++) {
		id_of(proxied(again[i - 1]), false, ids[i]);
		for (unsigned j = 0; j < i; j++)
			if (strcmp(ids[i], ids[j]) == 0)
				fail_msg("request %u's id is request %u's: %s", i, j, ids[i]);
	}
	/* the three after the first took the kept list */
	assert_int_equal(lists_made() - made0, 1);
	/* the request's own id: no generated one, and a list of its own,
	 * kept for the next that brings one */
	id_of(proxied("GET /x HTTP/1.1\r\nHost: a\r\nx-request-id: abc\r\n\r\n"), true, ids[4]);
	assert_string_equal(ids[4], "abc");
	id_of(proxied("GET /x HTTP/1.1\r\nHost: a\r\nx-request-id: d-e\r\n\r\n"), true, ids[5]);
	assert_string_equal(ids[5], "d-e");
	assert_int_equal(lists_made() - made0, 2);
	/* and none again: generated, never "d-e" */
	id_of(proxied(GET("/x")), false, ids[6]);
	id_of(proxied(GET("/x")), false, ids[7]);
	assert_int_equal(lists_made() - made0, 3);
	for (unsigned i = 6; i < 8; i++)
		for (unsigned j = 0; j < i; j++)
			if (strcmp(ids[i], ids[j]) == 0)
				fail_msg("request %u's id is request %u's: %s", i, j, ids[i]);
	hh_end();
}

/* What an upstream got since @p len0 (the peers' log lengths), into
 * @p out: @return that upstream, or NULL. */
static struct peer *got_since(const uint32_t *len0, char *out)
{
	for (unsigned u = 0; u < N_UPSTREAMS; u++) {
		struct peer *p = hh_upstream(u);
		if (!p || p->log_len == len0[p - peers])
			continue;
		uint32_t k = p->log_len - len0[p - peers];
		memcpy(out, p->log + len0[p - peers], k);
		out[k] = 0;
		return p;
	}
	return NULL;
}

/* A retried request's attempts send one id, the request's (each attempt
 * takes the kept list and generates it anew from the request's words),
 * another than the request's before. */
static void test_kept_edits_send_one_id_for_every_attempt(void **state)
{
	(void)state;
	start("\"generate_request_id\":true,",
	      "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\",\"retry_policy\":"
	      "{\"retry_on\":\"5xx\",\"num_retries\":1}},\"request_headers_to_add\":[{\"header\":"
	      "{\"key\":\"x-i\",\"value\":\"i\"}}]}");
	char first[64], a1[64], a2[64];
	static char t[PEER_LOG + 1];
	uint32_t made0 = lists_made();
	id_of(proxied(GET("/x")), false, first);
	uint32_t len0[N_PEERS];
	for (int i = 0; i < N_PEERS; i++)
		len0[i] = peers[i].log_len;
	hh_send(hh_client(0), GET("/x"), (uint32_t)strlen(GET("/x")), 0);
	hh_settle();
	struct peer *u = got_since(len0, t);
	assert_non_null(u);
	id_of(t, false, a1);
	for (int i = 0; i < N_PEERS; i++)
		len0[i] = peers[i].log_len;
	static const char e503[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n";
	hh_send(u, e503, (uint32_t)strlen(e503), 0);
	hh_settle();
	hh_advance(300); /* the back-off */
	u = got_since(len0, t);
	if (!u)
		fail_msg("no second attempt");
	id_of(t, false, a2);
	hh_send(u, OK5, (uint32_t)strlen(OK5), 0);
	hh_settle();
	assert_string_equal(a1, a2);
	assert_string_not_equal(first, a1);
	assert_int_equal(lists_made() - made0, 1);
	hh_end();
}

/* A local rate limit that does not enforce adds its headers to the
 * request it would have limited, after a request it did not (the
 * connection's kept list is not that request's). */
static void test_kept_edits_follow_an_unenforced_limit(void **state)
{
	(void)state;
	hh_begin(1);
	hh_apply(ARN_TYPE_URL_LISTENER, LSN_UNENFORCED);
	hh_cfg_changed = true;
	hh_settle();
	hh_open(0, 82);
	hh_settle();
	const char *t = proxied(GET("/first"));
	assert_non_null(strstr(t, "GET /first"));
	assert_null(strstr(t, "x-rl:"));
	expect_line(GET("/second"), "x-rl: would-limit", NULL);
	hh_end();
}

static int teardown(void **state)
{
	(void)state;
	hh_abandon();
	return 0;
}

#define T(f) cmocka_unit_test_teardown(f, teardown)

int main(void)
{
	arn_config_set_features(ARN_CONFIG_FEATURE_L4 | ARN_CONFIG_FEATURE_HTTP_L4);
	hh_init(false);
	const struct CMUnitTest tests[] = {
	    T(test_kept_edits_follow_the_route),
	    T(test_kept_edits_follow_the_generation),
	    T(test_kept_edits_follow_the_weighted_cluster),
	    T(test_kept_edits_follow_the_timeout),
	    T(test_kept_edits_follow_expect),
	    T(test_kept_edits_follow_the_host),
	    T(test_kept_edits_never_hold_request_values),
	    T(test_kept_edits_never_hold_a_rewritten_path),
	    T(test_kept_edits_generate_each_request_its_id),
	    T(test_kept_edits_send_one_id_for_every_attempt),
	    T(test_kept_edits_follow_an_unenforced_limit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
