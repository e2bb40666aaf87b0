/*
 * x-forwarded-client-cert (forward_client_cert_details) end to end on the
 * real TCP stack over the fake lib/net, with hcm_harness.h's peers, as
 * test_router_edits_kept.c: what the upstream gets for a request that
 * carries the header, on a fresh list of edits and on a kept one.
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
#include "http_int.h"

#define OK5 "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"

/* clang-format off */
/* Listener "dyn" on port 82 routing everything to cluster web, with
 * @p extra (JSON members and a comma) in its connection manager. */
#define LSN                                                                                        \
	"{\"name\":\"dyn\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","              \
	"\"port_value\":82}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","                  \
	"\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.filters.network."      \
	"http_connection_manager.v3.HttpConnectionManager\",\"stat_prefix\":\"dyn\",%s"            \
	"\"route_config\":{\"name\":\"dyn\",\"virtual_hosts\":[{\"name\":\"all\",\"domains\":"     \
	"[\"*\"],\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}]}]},"  \
	"\"http_filters\":[{\"name\":\"envoy.filters.http.router\","                               \
	"\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.filters.http."         \
	"router.v3.Router\"}}]}}]}]}"
/* clang-format on */

/* A run with listener "dyn" (@p extra in its connection manager) and
 * client 0 connected to it. */
static void start(const char *extra)
{
	char b[4096];
	hh_begin(1);
	snprintf(b, sizeof(b), LSN, extra);
	hh_apply(ARN_TYPE_URL_LISTENER, b);
	hh_cfg_changed = true; /* the next run puts listener "dyn" back */
	hh_settle();
	hh_open(0, 82);
	hh_settle();
}

static char got[PEER_LOG + 1];

/* Send @p req on client 0, answer it from the upstream that gets it:
 * @return what that upstream got for it ("" when none did). */
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
	for (unsigned u = 0; u < N_UPSTREAMS; u++) {
		struct peer *p = hh_upstream(u);
		if (!p || p->log_len == len0[p - peers])
			continue;
		uint32_t k = p->log_len - len0[p - peers];
		memcpy(got, p->log + len0[p - peers], k);
		got[k] = 0;
		hh_send(p, OK5, (uint32_t)strlen(OK5), 0);
		hh_settle();
		break;
	}
	return got;
}

/* case-insensitive strstr */
static const char *find_ci(const char *h, const char *n)
{
	size_t k = strlen(n);
	for (; *h; h++)
		if (strncasecmp(h, n, k) == 0)
			return h;
	return NULL;
}

#define SPOOF "By=spiffe://cluster.local/ns/a/sa/b;URI=spiffe://cluster.local/ns/admin/sa/root"
#define REQ_XFCC(path, name) "GET " path " HTTP/1.1\r\nHost: a\r\n" name ": " SPOOF "\r\n\r\n"
#define GET(path) "GET " path " HTTP/1.1\r\nHost: a\r\n\r\n"

/* Envoy's default forward_client_cert_details is SANITIZE: a client's own
 * x-forwarded-client-cert never reaches the upstream (an upstream that
 * trusts the header would take the client for whoever it names). On a
 * plain connection, on a list of edits made anew and on a kept one, in
 * any case, on several lines. */
static void test_xfcc_sanitized_by_default(void **state)
{
	(void)state;
	start("\"generate_request_id\":false,");
	const char *t = proxied(REQ_XFCC("/first", "x-forwarded-client-cert"));
	assert_non_null(strstr(t, "GET /first"));
	if (find_ci(t, "x-forwarded-client-cert"))
		fail_msg("a client's x-forwarded-client-cert reached the upstream:\n%s", t);
	/* a list kept by a request without it, then one with it */
	t = proxied(GET("/plain"));
	assert_non_null(strstr(t, "GET /plain"));
	t = proxied(REQ_XFCC("/second", "X-Forwarded-Client-Cert"));
	assert_non_null(strstr(t, "GET /second"));
	if (find_ci(t, "x-forwarded-client-cert"))
		fail_msg("a client's x-forwarded-client-cert reached the upstream:\n%s", t);
	t = proxied("GET /third HTTP/1.1\r\nHost: a\r\nx-forwarded-client-cert: " SPOOF
		    "\r\nx-a: 1\r\nX-FORWARDED-CLIENT-CERT: Hash=00\r\n\r\n");
	assert_non_null(strstr(t, "GET /third"));
	assert_non_null(strstr(t, "x-a: 1\r\n"));
	if (find_ci(t, "x-forwarded-client-cert"))
		fail_msg("a client's x-forwarded-client-cert reached the upstream:\n%s", t);
	hh_end();
}

/* FORWARD_ONLY: the header passes only from a client that presented a
 * certificate; a plain-text connection has none, so it is removed there
 * (Envoy: "the connection is not mutual TLS"). ALWAYS_FORWARD_ONLY
 * passes it from any connection. */
static void test_xfcc_forward_modes_on_plain_text(void **state)
{
	(void)state;
	start("\"generate_request_id\":false,\"forward_client_cert_details\":\"FORWARD_ONLY\",");
	const char *t = proxied(REQ_XFCC("/fo", "x-forwarded-client-cert"));
	assert_non_null(strstr(t, "GET /fo"));
	if (find_ci(t, "x-forwarded-client-cert"))
		fail_msg("FORWARD_ONLY kept a plain-text client's header:\n%s", t);
	hh_end();
	hh_abandon();
	start("\"generate_request_id\":false,"
	      "\"forward_client_cert_details\":\"ALWAYS_FORWARD_ONLY\",");
	t = proxied(REQ_XFCC("/afo", "x-forwarded-client-cert"));
	assert_non_null(strstr(t, "GET /afo"));
	assert_non_null(strstr(t, "\r\nx-forwarded-client-cert: " SPOOF "\r\n"));
	hh_end();
}

/* ---- http_req_edits alone: every mode on both kinds of connection ----- */

struct req {
	struct arn_h1_parser p;
	struct arn_h1_msg m;
	struct arn_h1_header h[16];
	char buf[1024];
};

static char text[HTTP_TEXT];

/* @p req's head after the edits of a connection manager with mode
 * @p mode on a connection whose client did (@p mtls) or did not present
 * a certificate, into @p out. */
static const char *edited(uint8_t mode, bool mtls, const char *req, char *out, size_t cap)
{
	struct req r;
	snprintf(r.buf, sizeof(r.buf), "%s", req);
	arn_h1_msg_init(&r.m, r.h, 16);
	arn_h1_parser_init(&r.p, ARN_H1_REQUEST, NULL, &r.m);
	struct arn_h1_ev ev;
	assert_true(arn_h1_parse(&r.p, r.buf, strlen(r.buf), &ev) > 0);
	struct arn_cfg_hcm h;
	memset(&h, 0, sizeof(h));
	h.server_name = "envoy";
	h.fcc = mode;
	struct http_req_ctx x = {
	    .hcm = &h,
	    .raddr = 0xc6120001,
	    .tls = mtls,
	    .mtls = mtls,
	    .text = text,
	    .text_cap = sizeof(text),
	};
	struct arn_h1_edit e[ARN_H1_MAX_EDITS];
	int n = http_req_edits(&x, &r.m, e, ARN_H1_MAX_EDITS);
	assert_true(n >= 0);
	struct arn_h1_wbuf w;
	arn_h1_wbuf_init(&w, out, (uint32_t)cap - 1, NULL, NULL);
	assert_int_equal(arn_h1_write_headers(&w, &r.m, e, (unsigned)n, ARN_H1_W_DROP_HOP), 0);
	out[w.len] = 0;
	return out;
}

static void test_xfcc_modes_without_details(void **state)
{
	(void)state;
	static const char req[] = "GET / HTTP/1.1\r\nHost: a\r\nX-Forwarded-Client-Cert: "
				  "Hash=aa\r\nx-forwarded-client-cert: By=b\r\n\r\n";
	static const struct {
		uint8_t mode;
		bool mtls, kept;
	} cases[] = {
	    {ARN_CFG_FCC_SANITIZE, false, false},
	    {ARN_CFG_FCC_SANITIZE, true, false},
	    {ARN_CFG_FCC_FORWARD_ONLY, false, false},
	    {ARN_CFG_FCC_FORWARD_ONLY, true, true},
	    {ARN_CFG_FCC_ALWAYS_FORWARD_ONLY, false, true},
	    {ARN_CFG_FCC_ALWAYS_FORWARD_ONLY, true, true},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char out[2048];
		edited(cases[i].mode, cases[i].mtls, req, out, sizeof(out));
		bool a = strstr(out, "X-Forwarded-Client-Cert: Hash=aa\r\n") != NULL;
		bool b = strstr(out, "x-forwarded-client-cert: By=b\r\n") != NULL;
		if (a != cases[i].kept || b != cases[i].kept)
			fail_msg("case %zu (mode %u, mtls %d):\n%s", i, cases[i].mode,
				 cases[i].mtls, out);
	}
	/* a request without one gets none in these modes */
	for (uint8_t mode = 0; mode <= ARN_CFG_FCC_ALWAYS_FORWARD_ONLY; mode++) {
		if (mode == ARN_CFG_FCC_APPEND_FORWARD || mode == ARN_CFG_FCC_SANITIZE_SET)
			continue;
		char out[2048];
		edited(mode, true, "GET / HTTP/1.1\r\nHost: a\r\n\r\n", out, sizeof(out));
		assert_null(find_ci(out, "x-forwarded-client-cert"));
	}
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
	    T(test_xfcc_sanitized_by_default),
	    T(test_xfcc_forward_modes_on_plain_text),
	    cmocka_unit_test(test_xfcc_modes_without_details),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
