/*
 * envoy.filters.http.custom_response over the HCM harness (a real TCP
 * stack, HTTP/1.1 upstreams): a response whose head matches the filter's
 * (or a route level's) matcher reaches the client as the policy's reply,
 * head and body, with none of the upstream's framing; the rest pass as
 * they came. HTTP/1.1 and HTTP/2 clients.
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

#include "hcm_harness.h"

#define AT_(t) "\"@type\":\"type.googleapis.com/" t "\""
#define CR_T "envoy.extensions.filters.http.custom_response.v3.CustomResponse"
#define LRP_T "envoy.extensions.http.custom_response.local_response_policy.v3.LocalResponsePolicy"
#define IN_(t) "{\"name\":\"in\",\"typed_config\":{" AT_("envoy.type.matcher.v3." t) "}}"
#define STATUS(code)                                                                               \
	"{\"single_predicate\":{\"input\":" IN_(                                                   \
	    "HttpResponseStatusCodeMatchInput") ",\"value_match\":{\"exact\":\"" code "\"}}}"
#define CLASS(cl)                                                                                  \
	"{\"single_predicate\":{\"input\":" IN_(                                                   \
	    "HttpResponseStatusCodeClassMatchInput") ",\"value_match\":{\"exact\":\"" cl "\"}}}"
#define LOCAL(v)                                                                                   \
	"{\"single_predicate\":{\"input\":" IN_(                                                   \
	    "HttpResponseLocalReplyMatchInput") ",\"value_match\":{\"exact\":\"" v "\"}}}"
#define HEADER(n, v)                                                                               \
	"{\"single_predicate\":{\"input\":{\"name\":\"in\",\"typed_config\":{" AT_(                \
	    "envoy.type.matcher.v3.HttpResponseHeaderMatchInput") ",\"header_name\":\"" n "\"}},"  \
								  "\"value_match\":{\"exact\":"    \
								  "\"" v "\"}}}"
#define ACTION(policy)                                                                             \
	"\"on_match\":{\"action\":{\"name\":\"a\",\"typed_config\":{" AT_(LRP_T) policy "}}}"

/* clang-format off */
/* The filter "cr": an upstream 404 becomes "custom 404" (text/html, the
 * status kept); a 5xx with x-fail: yes becomes a 502 whose body_format
 * says the upstream's status; a local 503 (no healthy upstream) becomes
 * "local 503". Route /route has its own CustomResponse (404: 410 "route
 * 404"); /off has the filter off (FilterConfig disabled). */
#define CR_FILTER_MATCHER                                                                          \
	"\"custom_response_matcher\":{\"matcher_list\":{\"matchers\":["                          \
	"{\"predicate\":" STATUS("404") "," ACTION(",\"body\":{\"inline_string\":\"custom 404\"},"  \
	"\"response_headers_to_add\":[{\"header\":{\"key\":\"Content-Type\",\"value\":"           \
	"\"text/html\"},\"append_action\":\"OVERWRITE_IF_EXISTS_OR_ADD\"},"                         \
	"{\"header\":{\"key\":\"x-custom\",\"value\":\"1\"}}]") "},"                                 \
	"{\"predicate\":{\"and_matcher\":{\"predicate\":[" CLASS("5xx") ","                         \
	HEADER("x-fail", "yes") "]}}," ACTION(",\"status_code\":502,\"body\":{\"inline_string\":"    \
	"\"b\"},\"body_format\":{\"text_format\":\"oops %RESPONSE_CODE% %LOCAL_REPLY_BODY%\"}") "}," \
	"{\"predicate\":{\"and_matcher\":{\"predicate\":[" STATUS("503") "," LOCAL("true") "]}},"   \
	ACTION(",\"body\":{\"inline_string\":\"local 503\"}") "},"                              \
	"{\"predicate\":{\"and_matcher\":{\"predicate\":[{\"or_matcher\":{\"predicate\":["          \
	STATUS("418") "," STATUS("419") "]}},{\"not_matcher\":" HEADER("x-keep", "1") "}]}},"       \
	ACTION(",\"body\":{\"inline_string\":\"teapot\"}") "}]}}"
#define CR_ROUTE_MATCHER                                                                           \
	"\"custom_response_matcher\":{\"matcher_list\":{\"matchers\":["                          \
	"{\"predicate\":" STATUS("404") "," ACTION(",\"status_code\":410,\"body\":"               \
	"{\"inline_string\":\"route 404\"}") "}]}}"
#define CR_LISTENER                                                                                \
	"{\"name\":\"dyn\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","              \
	"\"port_value\":82}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","                  \
	"\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.filters.network."      \
	"http_connection_manager.v3.HttpConnectionManager\",\"stat_prefix\":\"cr\","               \
	"\"route_config\":{\"name\":\"dyn\",\"virtual_hosts\":[{\"name\":\"all\",\"domains\":"     \
	"[\"*\"],\"routes\":["                                                                     \
	"{\"match\":{\"prefix\":\"/empty\"},\"route\":{\"cluster\":\"empty\"}},"                   \
	"{\"match\":{\"prefix\":\"/off\"},\"route\":{\"cluster\":\"web\"},"                        \
	"\"typed_per_filter_config\":{\"cr\":{" AT_("envoy.config.route.v3.FilterConfig")         \
	",\"disabled\":true}}},"                                                                   \
	"{\"match\":{\"prefix\":\"/route\"},\"route\":{\"cluster\":\"web\"},"                      \
	"\"typed_per_filter_config\":{\"cr\":{" AT_(CR_T) "," CR_ROUTE_MATCHER "}}},"          \
	"{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}]}]},"                      \
	"\"http_filters\":[{\"name\":\"cr\",\"typed_config\":{" AT_(CR_T) ","                     \
	CR_FILTER_MATCHER "}},"                                                                 \
	"{\"name\":\"envoy.filters.http.router\",\"typed_config\":{"                               \
	AT_("envoy.extensions.filters.http.router.v3.Router") "}}]}}]}]}"
/* Envoy Gateway's shape (custom_response.go): the filter disabled in the
 * manager, a CEL status range [500, 599], its LocalResponsePolicy a
 * body_format, a status and a Content-Type; turned on by /eg's
 * FilterConfig (an optional Empty for EG's empty Any), off elsewhere. */
#define CEL_CMP(fn, k)                                                                             \
	"{\"call_expr\":{\"function\":\"" fn "\",\"args\":[{\"select_expr\":{\"operand\":"       \
	"{\"ident_expr\":{\"name\":\"response\"}},\"field\":\"code\"}},"                          \
	"{\"const_expr\":{\"int64_value\":" k "}}]}}"
#define EG_FILTER "envoy.filters.http.custom_response/backendtrafficpolicy/default/p"
#define EG_LISTENER                                                                                \
	"{\"name\":\"dyn\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","              \
	"\"port_value\":82}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","                  \
	"\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.filters.network."      \
	"http_connection_manager.v3.HttpConnectionManager\",\"stat_prefix\":\"cr\","               \
	"\"route_config\":{\"name\":\"dyn\",\"virtual_hosts\":[{\"name\":\"all\",\"domains\":"     \
	"[\"*\"],\"routes\":["                                                                     \
	"{\"match\":{\"prefix\":\"/eg\"},\"route\":{\"cluster\":\"web\"},"                      \
	"\"typed_per_filter_config\":{\"" EG_FILTER "\":{" AT_("envoy.config.route.v3.FilterConfig")  \
	",\"is_optional\":true,\"config\":{" AT_("google.protobuf.Empty") "}}}},"                   \
	"{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}]}]},"                      \
	"\"http_filters\":[{\"name\":\"" EG_FILTER "\",\"disabled\":true,\"typed_config\":{"       \
	AT_(CR_T) ",\"custom_response_matcher\":{\"matcher_list\":{\"matchers\":[{\"predicate\":"  \
	"{\"single_predicate\":{\"input\":{\"name\":\"http-attributes-cel-match-input\","         \
	"\"typed_config\":{" AT_("xds.type.matcher.v3.HttpAttributesCelMatchInput") "}},"          \
	"\"custom_match\":{\"name\":\"cel-matcher\",\"typed_config\":{"                          \
	AT_("xds.type.matcher.v3.CelMatcher") ",\"expr_match\":{\"cel_expr_parsed\":{\"expr\":"    \
	"{\"call_expr\":{\"function\":\"_&&_\",\"args\":[" CEL_CMP("_>=_", "500") ","             \
	CEL_CMP("_<=_", "599") "]}}}}}}}},"                                                          \
	ACTION(",\"body_format\":{\"text_format\":\"{\\\"error\\\": %RESPONSE_CODE%}\"},"           \
	"\"status_code\":503,\"response_headers_to_add\":[{\"header\":{\"key\":\"Content-Type\","  \
	"\"value\":\"application/json\"},\"append_action\":\"OVERWRITE_IF_EXISTS_OR_ADD\"}]") "}]}}}}," \
	"{\"name\":\"envoy.filters.http.router\",\"typed_config\":{"                               \
	AT_("envoy.extensions.filters.http.router.v3.Router") "}}]}}]}]}"
/* clang-format on */

static void send_str(struct peer *p, const char *s)
{
	assert_non_null(p);
	hh_send(p, s, (uint32_t)strlen(s), 0);
	hh_settle();
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

/* One request on client 0 (@p head, without its empty line); the upstream
 * that got it answers @p resp. What the client received for it goes to
 * @p out. @return whether an upstream got the request. */
static bool exchange(const char *head, const char *resp, char *out, size_t cap)
{
	static char req[4096];
	snprintf(req, sizeof(req), "%s\r\n\r\n", head);
	struct peer *c = hh_client(0);
	uint32_t mark = c->log_len, rx0[N_PEERS];
	for (int i = 0; i < N_PEERS; i++)
		rx0[i] = peers[i].rx;
	send_str(c, req);
	struct peer *u = upstream_that_got(rx0);
	if (u)
		send_str(u, resp);
	hh_settle();
	size_t n = c->log_len - mark < cap - 1 ? c->log_len - mark : cap - 1;
	memcpy(out, c->log + mark, n);
	out[n] = 0;
	return u != NULL;
}

static void expect(const char *in, const char *s, bool present)
{
	if ((strstr(in, s) != NULL) != present)
		fail_msg("the client %s '%s': %s", present ? "lacks" : "has", s, in);
}

/* What follows the head (the body), NUL-terminated. */
static const char *body_of(const char *r)
{
	const char *b = strstr(r, "\r\n\r\n");
	assert_non_null(b);
	return b + 4;
}

static uint64_t replaced(void)
{
	struct arn_stats_scope *sc =
	    arn_stats_scope_get_named(&arn_stats_http_schema, "http.cr", NULL, NULL);
	assert_non_null(sc);
	uint64_t v = arn_stats_counter_value(sc, ARN_HTTP_custom_response_replaced);
	arn_stats_scope_put(sc);
	return v;
}

static void cr_begin_with(const char *listener)
{
	hh_begin(1);
	hh_apply(ARN_TYPE_URL_LISTENER, listener);
	hh_cfg_changed = true;
	hh_settle();
	hh_open(0, 82);
	hh_settle();
}

static void cr_begin(void)
{
	cr_begin_with(CR_LISTENER);
}

/* An upstream 404 (chunked, gzip-encoded, a body of its own) reaches the
 * client as the policy's reply: its status kept, its body, content-length
 * of that body, its headers, and nothing of the upstream's head or body
 * (no transfer-encoding, content-encoding, x-up). The connection goes on:
 * the next response, a 200 that matches nothing, passes as it came. */
static void test_cresp_upstream_404(void **state)
{
	(void)state;
	cr_begin();
	char r[4096];
	uint64_t before = replaced();
	assert_true(exchange("GET /a HTTP/1.1\r\nHost: a",
			     "HTTP/1.1 404 Not Found\r\nx-up: 1\r\nContent-Encoding: gzip\r\n"
			     "Transfer-Encoding: chunked\r\n\r\n"
			     "5\r\nupstr\r\n7\r\neam bod\r\n0\r\n\r\n",
			     r, sizeof(r)));
	expect(r, "HTTP/1.1 404 Not Found\r\n", true);
	expect(r, "content-length: 10\r\n", true);
	expect(r, "content-type: text/html\r\n", true);
	expect(r, "x-custom: 1\r\n", true);
	expect(r, "text/plain", false);
	expect(r, "x-up", false);
	expect(r, "ncoding", false);
	expect(r, "chunked", false);
	expect(r, "upstr", false);
	assert_string_equal(body_of(r), "custom 404");
	assert_int_equal(replaced(), before + 1);

	static const char ok[] = "HTTP/1.1 200 OK\r\nx-up: 2\r\nContent-Length: 5\r\n\r\nhello";
	assert_true(exchange("GET /b HTTP/1.1\r\nHost: a", ok, r, sizeof(r)));
	expect(r, "HTTP/1.1 200 OK\r\n", true);
	expect(r, "x-up: 2\r\n", true);
	expect(r, "Content-Length: 5\r\n", true);
	expect(r, "x-custom", false);
	assert_string_equal(body_of(r), "hello");
	assert_int_equal(replaced(), before + 1);

	/* a 404 whose body is 1 MB: the reply goes at its head, the body is
	 * never waited for nor buffered (the upstream connection is dropped,
	 * hh_end finds every mbuf back) */
	assert_true(exchange("GET /c HTTP/1.1\r\nHost: a",
			     "HTTP/1.1 404 Not Found\r\nContent-Length: 1048576\r\n\r\nxxxx", r,
			     sizeof(r)));
	expect(r, "HTTP/1.1 404 Not Found\r\n", true);
	assert_string_equal(body_of(r), "custom 404");
	assert_int_equal(replaced(), before + 2);
	hh_end();
}

/* A 5xx with x-fail: yes takes the second entry (and_matcher of the
 * status class and a response header): status 502, body_format with the
 * upstream's status and the policy's body. Without the header it passes.
 * A 418 or 419 takes the fourth unless x-keep is "1". */
static void test_cresp_and_header(void **state)
{
	(void)state;
	cr_begin();
	char r[4096];
	assert_true(exchange("GET /a HTTP/1.1\r\nHost: a",
			     "HTTP/1.1 500 Internal Server Error\r\nx-fail: yes\r\n"
			     "Content-Length: 3\r\n\r\nbad",
			     r, sizeof(r)));
	expect(r, "HTTP/1.1 502 Bad Gateway\r\n", true);
	expect(r, "x-fail", false);
	assert_string_equal(body_of(r), "oops 500 b");
	expect(r, "content-length: 10\r\n", true);
	assert_true(exchange("GET /a HTTP/1.1\r\nHost: a",
			     "HTTP/1.1 500 Internal Server Error\r\nx-fail: no\r\n"
			     "Content-Length: 3\r\n\r\nbad",
			     r, sizeof(r)));
	expect(r, "HTTP/1.1 500 Internal Server Error\r\n", true);
	expect(r, "x-fail: no\r\n", true);
	assert_string_equal(body_of(r), "bad");
	/* or_matcher of two codes and a not_matcher of a header (values
	 * joined: x-keep: 0, 1 is not "1") */
	assert_true(
	    exchange("GET /a HTTP/1.1\r\nHost: a",
		     "HTTP/1.1 419 x\r\nx-keep: 0\r\nx-keep: 1\r\nContent-Length: 1\r\n\r\nk", r,
		     sizeof(r)));
	expect(r, "HTTP/1.1 419 ", true);
	assert_string_equal(body_of(r), "teapot");
	assert_true(exchange("GET /a HTTP/1.1\r\nHost: a",
			     "HTTP/1.1 418 x\r\nx-keep: 1\r\nContent-Length: 1\r\n\r\nk", r,
			     sizeof(r)));
	expect(r, "HTTP/1.1 418 ", true);
	assert_string_equal(body_of(r), "k");
	hh_end();
}

/* A local reply (the router's 503, no healthy upstream in "empty") is
 * matched too (Envoy's encodeHeaders sees it), with the local-reply
 * input; the custom reply is not matched again. */
static void test_cresp_local_reply(void **state)
{
	(void)state;
	cr_begin();
	char r[4096];
	uint64_t before = replaced();
	assert_false(exchange("GET /empty HTTP/1.1\r\nHost: a", "", r, sizeof(r)));
	expect(r, "HTTP/1.1 503 Service Unavailable\r\n", true);
	expect(r, "no healthy upstream", false);
	assert_string_equal(body_of(r), "local 503");
	assert_int_equal(replaced(), before + 1);
	/* an upstream's 503 is not a local reply: it passes */
	assert_true(exchange("GET /a HTTP/1.1\r\nHost: a",
			     "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy", r,
			     sizeof(r)));
	expect(r, "HTTP/1.1 503 Service Unavailable\r\n", true);
	assert_string_equal(body_of(r), "busy");
	assert_int_equal(replaced(), before + 1);
	hh_end();
}

/* Per route: /route's own CustomResponse answers its 404 (410, "route
 * 404") before the filter's; a response its matcher does not match falls
 * to the filter's (Envoy: the route levels, then the filter); /off has the
 * filter off (FilterConfig disabled): the upstream's 404 passes. */
static void test_cresp_per_route(void **state)
{
	(void)state;
	cr_begin();
	char r[4096];
	static const char nf[] = "HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\n\r\nnope";
	assert_true(exchange("GET /route HTTP/1.1\r\nHost: a", nf, r, sizeof(r)));
	expect(r, "HTTP/1.1 410 Gone\r\n", true);
	assert_string_equal(body_of(r), "route 404");
	assert_true(exchange("GET /route HTTP/1.1\r\nHost: a",
			     "HTTP/1.1 500 Internal Server Error\r\nx-fail: yes\r\n"
			     "Content-Length: 3\r\n\r\nbad",
			     r, sizeof(r)));
	expect(r, "HTTP/1.1 502 Bad Gateway\r\n", true);
	assert_true(exchange("GET /off HTTP/1.1\r\nHost: a", nf, r, sizeof(r)));
	expect(r, "HTTP/1.1 404 Not Found\r\n", true);
	assert_string_equal(body_of(r), "nope");
	hh_end();
}

/* Envoy Gateway's shape: on /eg (its FilterConfig turns the disabled
 * filter on) an upstream 5xx in the CEL range [500, 599] is replaced by
 * the JSON body with the 503 and the Content-Type; a 404 passes; on /
 * (the filter disabled) the 502 passes. */
static void test_cresp_envoy_gateway(void **state)
{
	(void)state;
	cr_begin_with(EG_LISTENER);
	char r[4096];
	static const char bad[] = "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 3\r\n\r\nbad";
	assert_true(exchange("GET /eg HTTP/1.1\r\nHost: a", bad, r, sizeof(r)));
	expect(r, "HTTP/1.1 503 Service Unavailable\r\n", true);
	expect(r, "content-type: application/json\r\n", true);
	assert_string_equal(body_of(r), "{\"error\": 502}");
	assert_true(exchange("GET /eg HTTP/1.1\r\nHost: a",
			     "HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\n\r\nnope", r,
			     sizeof(r)));
	expect(r, "HTTP/1.1 404 Not Found\r\n", true);
	assert_string_equal(body_of(r), "nope");
	assert_true(exchange("GET /x HTTP/1.1\r\nHost: a", bad, r, sizeof(r)));
	expect(r, "HTTP/1.1 502 Bad Gateway\r\n", true);
	assert_string_equal(body_of(r), "bad");
	hh_end();
}

static void no_own(struct hh_rd *r, uint8_t op)
{
	(void)r;
	(void)op;
}

static uint64_t dyn_replaced(void)
{
	struct arn_stats_scope *sc =
	    arn_stats_scope_get_named(&arn_stats_http_schema, "http.dyn", NULL, NULL);
	assert_non_null(sc);
	uint64_t v = arn_stats_counter_value(sc, ARN_HTTP_custom_response_replaced);
	arn_stats_scope_put(sc);
	return v;
}

/* fuzz_hcm's "dyn" listener (HH_LDYN) has the filter (HH_FILTER_CR: an
 * upstream 5xx with x-cr: 1 becomes "cr <status>", 503), behind the
 * route's retry on 5xx: the seed dyn_custom_response, played as the
 * fuzzer plays it, has two responses replaced (after their retries) and
 * one passed. */
static void test_cresp_fuzz_seed(void **state)
{
	(void)state;
	hh_begin(1);
	hh_config(0);
	hh_settle();
	uint64_t before = dyn_replaced();
	hh_end();
	FILE *f = fopen("tests/http/corpus/hcm/dyn_custom_response", "rb");
	assert_non_null(f);
	static uint8_t seed[4096];
	size_t n = fread(seed, 1, sizeof(seed), f);
	fclose(f);
	assert_true(n > 1 && n < sizeof(seed));
	hh_fuzz_run(seed, n, no_own);
	assert_int_equal(dyn_replaced() - before, 2);
}

#include "hh_h2c.h"

static char h2_body[256];
static size_t h2_bl;

static int on_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *d, size_t n,
		   void *u)
{
	(void)s, (void)flags, (void)id, (void)u;
	if (h2_bl + n < sizeof(h2_body)) {
		memcpy(h2_body + h2_bl, d, n);
		h2_bl += n;
	}
	return 0;
}

/* An HTTP/2 client: the upstream's 404 becomes the policy's reply, framed
 * by HTTP/2 (content-length of the new body, none of the upstream's
 * headers), its body in DATA. */
static void test_cresp_http2(void **state)
{
	(void)state;
	(void)h2c_open; /* this session also takes DATA (on_data) */
	hh_clients_h2 = true;
	cr_begin();
	static struct h2c c;
	c = (struct h2c){.p = hh_client(0)};
	c.p->cap = c.cap;
	c.p->cap_len = 0;
	c.p->cap_max = sizeof(c.cap);
	nghttp2_session_callbacks *cb;
	nghttp2_session_callbacks_new(&cb);
	nghttp2_session_callbacks_set_send_callback(cb, h2c_send);
	nghttp2_session_callbacks_set_on_header_callback(cb, h2c_header);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, h2c_close);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
	nghttp2_session *s;
	assert_int_equal(nghttp2_session_client_new(&s, cb, &c), 0);
	nghttp2_session_callbacks_del(cb);
	nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, NULL, 0);
	h2_bl = 0;
#define NV(a, b)                                                                                   \
	{(uint8_t *)(a), (uint8_t *)(b), sizeof(a) - 1, sizeof(b) - 1, NGHTTP2_NV_FLAG_NONE}
	nghttp2_nv nv[] = {NV(":method", "GET"), NV(":path", "/t"), NV(":scheme", "http"),
			   NV(":authority", "a")};
#undef NV
	assert_true(nghttp2_submit_request(s, NULL, nv, 4, NULL, NULL) > 0);
	h2c_pump(s, &c);
	struct peer *u = hh_upstream(0);
	assert_non_null(u);
	static const char nf[] = "HTTP/1.1 404 Not Found\r\nx-up: 1\r\nContent-Length: 4\r\n"
				 "Content-Encoding: gzip\r\n\r\nnope";
	hh_send(u, nf, sizeof(nf) - 1, 0);
	for (int i = 0; i < 20 && !c.closed; i++)
		h2c_pump(s, &c);
	assert_true(c.closed);
	c.head[c.hl] = 0;
	h2_body[h2_bl] = 0;
	if (!strstr(c.head, ":status: 404\n") || !strstr(c.head, "content-length: 10\n") ||
	    !strstr(c.head, "content-type: text/html\n") || strstr(c.head, "x-up") ||
	    strstr(c.head, "content-encoding"))
		fail_msg("the head: %s", c.head);
	assert_string_equal(h2_body, "custom 404");
	nghttp2_session_del(s);
	hh_end();
	hh_clients_h2 = false;
}

int main(void)
{
	hh_init(false);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cresp_upstream_404), cmocka_unit_test(test_cresp_and_header),
	    cmocka_unit_test(test_cresp_local_reply),  cmocka_unit_test(test_cresp_per_route),
	    cmocka_unit_test(test_cresp_http2),	       cmocka_unit_test(test_cresp_envoy_gateway),
	    cmocka_unit_test(test_cresp_fuzz_seed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
