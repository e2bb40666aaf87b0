/*
 * envoy.filters.http.header_mutation over an HTTP/2 client (the HCM
 * harness, an nghttp2 client): the request's mutations reach the
 * HTTP/1.1 upstream, the response's reach the client through the HTTP/2
 * encoder (which takes the edits' names and values, not wire lines).
 * test_hcm_tcp's test_http_header_mutation covers each mutation over
 * HTTP/1.1.
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

#define AT_(t) "\"@type\":\"type.googleapis.com/envoy.extensions.filters.http." t "\""
#define APPEND(k, v, act)                                                                          \
	"{\"append\":{\"header\":{\"key\":\"" k "\",\"value\":\"" v "\"},\"append_action\":\"" act \
	"\"}}"

/* clang-format off */
#define HM_LISTENER                                                                                \
	"{\"name\":\"dyn\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","              \
	"\"port_value\":82}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","                  \
	"\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.filters.network."      \
	"http_connection_manager.v3.HttpConnectionManager\",\"stat_prefix\":\"hm\","               \
	"\"route_config\":{\"name\":\"dyn\",\"virtual_hosts\":[{\"name\":\"all\",\"domains\":"     \
	"[\"*\"],\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}]}]},"  \
	"\"http_filters\":[{\"name\":\"hm\",\"typed_config\":{" AT_("header_mutation.v3.HeaderMutation") \
	",\"mutations\":{\"request_mutations\":[{\"remove\":\"x-drop\"},"                           \
	APPEND("x-copy", "%REQ(x-in)%", "OVERWRITE_IF_EXISTS_OR_ADD") ","                          \
	"{\"remove_on_match\":{\"key_matcher\":{\"prefix\":\"x-secret\"}}}],"                       \
	"\"response_mutations\":[{\"remove\":\"x-up-drop\"},"                                       \
	APPEND("x-resp", "filter", "APPEND_IF_EXISTS_OR_ADD") ","                                  \
	APPEND("x-set", "%REQ(x-in)%", "OVERWRITE_IF_EXISTS_OR_ADD") ","                        \
	APPEND("x-proto", "%PROTOCOL%", "APPEND_IF_EXISTS_OR_ADD") "]}}},"                       \
	"{\"name\":\"envoy.filters.http.router\",\"typed_config\":{" AT_("router.v3.Router") "}}]}}]}]}"
/* clang-format on */

#include "hh_h2c.h"

/* An HTTP/2 client's request and its response, each mutated. */
static void test_http2_header_mutation(void **state)
{
	(void)state;
	hh_clients_h2 = true;
	hh_begin(1);
	hh_apply(ARN_TYPE_URL_LISTENER, HM_LISTENER);
	hh_cfg_changed = true;
	hh_open(0, 82);
	hh_settle();
	static struct h2c c;
	nghttp2_session *s = h2c_open(&c);
#define NV(a, b)                                                                                   \
	{(uint8_t *)(a), (uint8_t *)(b), sizeof(a) - 1, sizeof(b) - 1, NGHTTP2_NV_FLAG_NONE}
	nghttp2_nv nv[] = {NV(":method", "GET"),  NV(":path", "/t"),	 NV(":scheme", "http"),
			   NV(":authority", "a"), NV("x-drop", "1"),	 NV("x-in", "v1"),
			   NV("x-copy", "old"),	  NV("x-secret-a", "s"), NV("x-keep", "k")};
#undef NV
	assert_true(nghttp2_submit_request(s, NULL, nv, 9, NULL, NULL) > 0);
	h2c_pump(s, &c);
	struct peer *u = hh_upstream(0);
	assert_non_null(u);
#define HAS(t) (memmem(u->log, u->log_len, t, sizeof(t) - 1) != NULL)
	if (!HAS("GET /t HTTP/1.1\r\n") || !HAS("x-copy: v1\r\n") || !HAS("x-keep: k\r\n") ||
	    HAS("x-drop") || HAS("old") || HAS("x-secret"))
		fail_msg("the upstream got: %.*s", (int)u->log_len, u->log);
#undef HAS
	static const char ok[] = "HTTP/1.1 200 OK\r\nx-up-drop: 1\r\nx-resp: up\r\nx-set: a\r\n"
				 "x-set: b\r\nContent-Length: 2\r\n\r\nok";
	hh_send(u, ok, sizeof(ok) - 1, 0);
	for (int i = 0; i < 20 && !c.closed; i++)
		h2c_pump(s, &c);
	assert_true(c.closed);
	c.head[c.hl] = 0;
	if (!strstr(c.head, ":status: 200\n") || !strstr(c.head, "x-resp: up\n") ||
	    !strstr(c.head, "x-resp: filter\n") || !strstr(c.head, "x-set: v1\n") ||
	    !strstr(c.head, "x-proto: HTTP/2\n") || strstr(c.head, "x-set: a") ||
	    strstr(c.head, "x-set: b") || strstr(c.head, "x-up-drop"))
		fail_msg("the head: %s", c.head);
	nghttp2_session_del(s);
	hh_end();
	hh_clients_h2 = false;
}

int main(void)
{
	hh_init(false);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_http2_header_mutation),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
