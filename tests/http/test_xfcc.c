/*
 * x-forwarded-client-cert (forward_client_cert_details) end to end on the
 * real TCP stack over the fake lib/net, with hcm_harness.h's peers, as
 * test_router_edits_kept.c: what the upstream gets for a request that
 * carries the header, on a fresh list of edits and on a kept one.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "arn_stats_envoy.h"
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

/* Listener "dyn" as LSN, whose route adds what a filter or a route reads
 * of the client's x-forwarded-client-cert and x-envoy-max-retries. */
/* clang-format off */
#define LSN_SEEN                                                                                   \
	"{\"name\":\"dyn\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","              \
	"\"port_value\":82}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","                  \
	"\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.filters.network."      \
	"http_connection_manager.v3.HttpConnectionManager\",\"stat_prefix\":\"dyn\","             \
	"\"generate_request_id\":false,%s"                                                          \
	"\"route_config\":{\"name\":\"dyn\",\"virtual_hosts\":[{\"name\":\"all\",\"domains\":"     \
	"[\"*\"],\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"},"      \
	"\"request_headers_to_add\":[{\"header\":{\"key\":\"x-seen-xfcc\",\"value\":"            \
	"\"[%%REQ(x-forwarded-client-cert)%%]\"}},{\"header\":{\"key\":\"x-seen-retries\","      \
	"\"value\":\"[%%REQ(x-envoy-max-retries)%%]\"}}]}]}]},"                                     \
	"\"http_filters\":[{\"name\":\"envoy.filters.http.router\","                               \
	"\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.filters.http."         \
	"router.v3.Router\"}}]}}]}]}"
/* clang-format on */

/* What Envoy's mutateRequestHeaders takes out of a request's head goes
 * before anything reads the head: a route's %REQ()% (as RBAC's header
 * matchers, ext_authz's check, ext_proc and Lua) sees no forged
 * x-forwarded-client-cert (SANITIZE) and no forged x-envoy-max-retries
 * from an external client, on HTTP/1 lines of any case. Fails before: the
 * route's substitution read the client's SPIFFE identity and retries
 * while the upstream got neither header (a filter that trusts XFCC, as
 * an authorization service behind mTLS does, took the client for it). */
static void test_forged_fields_unseen_by_filters(void **state)
{
	(void)state;
	char b[8192];
	hh_begin(1);
	snprintf(b, sizeof(b), LSN_SEEN, "");
	hh_apply(ARN_TYPE_URL_LISTENER, b);
	hh_cfg_changed = true;
	hh_settle();
	hh_open(0, 82);
	hh_settle();
	const char *t = proxied("GET /f HTTP/1.1\r\nHost: a\r\nX-Forwarded-Client-Cert: " SPOOF
				"\r\nX-Envoy-Max-Retries: 9\r\nx-a: 1\r\n\r\n");
	assert_non_null(strstr(t, "GET /f"));
	assert_non_null(strstr(t, "x-a: 1\r\n"));
	if (strstr(t, "spiffe") || strstr(t, "[9]") || find_ci(t, "x-envoy-max-retries") ||
	    find_ci(t, "x-forwarded-client-cert"))
		fail_msg("a filter or route saw the client's forged fields:\n%s", t);
	/* a request without them takes the usual path (no flag) */
	t = proxied(GET("/g"));
	assert_non_null(strstr(t, "GET /g"));
	hh_end();
	hh_abandon();
	/* ALWAYS_FORWARD_ONLY: the client's header is kept, and seen */
	hh_begin(1);
	snprintf(b, sizeof(b), LSN_SEEN,
		 "\"forward_client_cert_details\":\"ALWAYS_FORWARD_ONLY\",");
	hh_apply(ARN_TYPE_URL_LISTENER, b);
	hh_cfg_changed = true;
	hh_settle();
	hh_open(0, 82);
	hh_settle();
	t = proxied(REQ_XFCC("/h", "x-forwarded-client-cert"));
	assert_non_null(strstr(t, "x-seen-xfcc: [" SPOOF "]\r\n"));
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

/* clang-format off */
#define AT_(t) "\"@type\":\"type.googleapis.com/envoy.extensions." t "\""
/* Listener "dyn" on port 82: detection by x-real-ip (refused 421 without
 * one), then RBAC denying 203.0.113.9 (remote_ip), then the router. */
#define LSN_IPD                                                                                    \
	"{\"name\":\"dyn\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","              \
	"\"port_value\":82}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","                  \
	"\"typed_config\":{" AT_("filters.network.http_connection_manager.v3."                     \
	"HttpConnectionManager") ",\"stat_prefix\":\"ipd\",\"generate_request_id\":false,"           \
	"\"access_log\":[{\"name\":\"f\",\"typed_config\":{"                                          \
	AT_("access_loggers.file.v3.FileAccessLog") ",\"path\":\"%s\",\"log_format\":{"               \
	"\"text_format_source\":{\"inline_string\":\"%%DOWNSTREAM_REMOTE_ADDRESS%% "                    \
	"%%DOWNSTREAM_DIRECT_REMOTE_ADDRESS_WITHOUT_PORT%% %%RESPONSE_CODE%%\\n\"}}}}],"             \
	"\"original_ip_detection_extensions\":[{\"name\":\"envoy.extensions.http.original_ip_"      \
	"detection.custom_header\",\"typed_config\":{"                                              \
	AT_("http.original_ip_detection.custom_header.v3.CustomHeaderConfig") ","                  \
	"\"header_name\":\"x-real-ip\",\"reject_with_status\":{\"code\":\"MisdirectedRequest\"}}}],"  \
	"\"route_config\":{\"name\":\"dyn\",\"virtual_hosts\":[{\"name\":\"all\",\"domains\":"     \
	"[\"*\"],\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}]}]},"  \
	"\"http_filters\":[{\"name\":\"authz\",\"typed_config\":{"                                  \
	AT_("filters.http.rbac.v3.RBAC") ",\"rules\":{\"action\":\"DENY\",\"policies\":{\"bad\":{"     \
	"\"permissions\":[{\"any\":true}],\"principals\":[{\"remote_ip\":{\"address_prefix\":"      \
	"\"203.0.113.9\",\"prefix_len\":32}}]}}}}},"                                                   \
	"{\"name\":\"envoy.filters.http.router\",\"typed_config\":{"                                 \
	AT_("filters.http.router.v3.Router") "}}]}}]}]}"
/* clang-format on */

/* The detected address is the one RBAC's remote_ip sees; a request whose
 * extension finds none is refused with reject_with_status before any
 * filter or upstream, counted as Envoy counts it. */
static void test_ipd_on_the_listener(void **state)
{
	(void)state;
	char path[64], json[8192];
	snprintf(path, sizeof(path), "/tmp/arn_test_xfcc.%d.log", (int)getpid());
	unlink(path);
	snprintf(json, sizeof(json), LSN_IPD, path);
	hh_begin(1);
	hh_apply(ARN_TYPE_URL_LISTENER, json);
	hh_cfg_changed = true;
	hh_settle();
	hh_open(0, 82);
	hh_settle();
	struct peer *c = hh_client(0);
	const char *t = proxied("GET /ok HTTP/1.1\r\nHost: a\r\nx-real-ip: 198.51.100.4\r\n\r\n");
	assert_non_null(strstr(t, "GET /ok"));
	uint32_t l0 = c->log_len;
	t = proxied("GET /no HTTP/1.1\r\nHost: a\r\n\r\n");
	assert_string_equal(t, "");
	if (!memmem(c->log + l0, c->log_len - l0, "HTTP/1.1 421 ", 13))
		fail_msg("the client got: %.*s", (int)(c->log_len - l0), c->log + l0);
	l0 = c->log_len;
	t = proxied("GET /bad HTTP/1.1\r\nHost: a\r\nx-real-ip: 203.0.113.9\r\n\r\n");
	assert_string_equal(t, "");
	if (!memmem(c->log + l0, c->log_len - l0, "HTTP/1.1 403 ", 13))
		fail_msg("the client got: %.*s", (int)(c->log_len - l0), c->log + l0);
	hh_end();
	/* the access log: the detected address (port 0, as Envoy's), the
	 * peer as the direct one; the refused request has none detected */
	arn_access_log_drain();
	char log[1024];
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	size_t n = fread(log, 1, sizeof(log) - 1, f);
	fclose(f);
	unlink(path);
	log[n] = 0;
	if (!strstr(log, "198.51.100.4:0 198.18.0.100 200\n") || !strstr(log, "198.18.0.100:") ||
	    !strstr(log, " 421\n") || !strstr(log, "203.0.113.9:0 198.18.0.100 403\n"))
		fail_msg("the access log:\n%s", log);
}

/* clang-format off */
/* Listener "dyn" on port 82 behind a trusted proxy (no
 * use_remote_address, no detection extension), logging its addresses. */
#define LSN_XFFLOG                                                                                 \
	"{\"name\":\"dyn\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","              \
	"\"port_value\":82}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","                  \
	"\"typed_config\":{" AT_("filters.network.http_connection_manager.v3."                     \
	"HttpConnectionManager") ",\"stat_prefix\":\"xl\",\"generate_request_id\":false,"            \
	"\"access_log\":[{\"name\":\"f\",\"typed_config\":{"                                          \
	AT_("access_loggers.file.v3.FileAccessLog") ",\"path\":\"%s\",\"log_format\":{"               \
	"\"text_format_source\":{\"inline_string\":\"%%DOWNSTREAM_REMOTE_ADDRESS%% "                    \
	"%%DOWNSTREAM_DIRECT_REMOTE_ADDRESS_WITHOUT_PORT%% %%REQ(:PATH)%%\\n\"}}}}],"                \
	"\"route_config\":{\"name\":\"dyn\",\"virtual_hosts\":[{\"name\":\"all\",\"domains\":"     \
	"[\"*\"],\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}]}]},"  \
	"\"http_filters\":[{\"name\":\"envoy.filters.http.router\",\"typed_config\":{"                 \
	AT_("filters.http.router.v3.Router") "}}]}}]}]}"
/* clang-format on */

/* Behind a trusted proxy Envoy's connection manager takes the client from
 * X-Forwarded-For (its default XFF detection) and makes it the stream's
 * remote address: the access log's %DOWNSTREAM_REMOTE_ADDRESS% is it
 * (port 0), the peer the direct one; a request without X-Forwarded-For
 * logs the peer. Fails before: the log showed the proxy's address, where
 * RBAC's remote_ip saw the client. */
static void test_xff_client_logged_behind_proxy(void **state)
{
	(void)state;
	char path[64], json[8192];
	snprintf(path, sizeof(path), "/tmp/arn_test_xfcc_xl.%d.log", (int)getpid());
	unlink(path);
	snprintf(json, sizeof(json), LSN_XFFLOG, path);
	hh_begin(1);
	hh_apply(ARN_TYPE_URL_LISTENER, json);
	hh_cfg_changed = true;
	hh_settle();
	hh_open(0, 82);
	hh_settle();
	const char *t =
	    proxied("GET /a HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 198.51.100.7\r\n\r\n");
	assert_non_null(strstr(t, "GET /a"));
	t = proxied(GET("/b"));
	assert_non_null(strstr(t, "GET /b"));
	hh_end();
	arn_access_log_drain();
	char log[1024];
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	size_t n = fread(log, 1, sizeof(log) - 1, f);
	fclose(f);
	unlink(path);
	log[n] = 0;
	if (!strstr(log, "198.51.100.7:0 198.18.0.100 /a\n") || !strstr(log, "198.18.0.100:") ||
	    !strstr(log, " 198.18.0.100 /b\n"))
		fail_msg("the access log:\n%s", log);
}

static void no_own(struct hh_rd *r, uint8_t op)
{
	(void)r, (void)op;
}

/* fuzz_hcm's "dyn" listener of config 9 has the client identity fields;
 * the seed dyn_client_identity replays through the fuzzer's run (every
 * request answered 200 by cluster "web"; hh_end finds nothing left). */
static void test_fuzz_seed_replays(void **state)
{
	(void)state;
	FILE *f = fopen("tests/http/corpus/hcm/dyn_client_identity", "rb");
	assert_non_null(f);
	static uint8_t seed[4096];
	size_t n = fread(seed, 1, sizeof(seed), f);
	fclose(f);
	assert_true(n > 1 && n < sizeof(seed));
	hh_fuzz_run(seed, n, no_own);
	struct arn_stats_scope *sc =
	    arn_stats_scope_get_named(&arn_stats_http_schema, "http.dyn", NULL, NULL);
	assert_non_null(sc);
	assert_int_equal(arn_stats_counter_value(sc, ARN_HTTP_downstream_rq_2xx), 9);
	arn_stats_scope_put(sc);
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

/* ---- the element (http_xfcc_value): Envoy's test vectors ----------------------- */

/* Envoy's conn_manager_utility_test.cc (MtlsAppendForwardClientCert,
 * ...LocalSanEmpty, MtlsSanitizeSetClientCert, ...PeerSanEmpty). Their
 * mocks list the details in the test's own order; a configuration gives
 * them in Envoy's (convertSetCurrentClientCertDetails: Cert, Chain,
 * Subject, URI, DNS), which is the order here. */
static void test_xfcc_element_envoy_vectors(void **state)
{
	(void)state;
	static const char *const by[] = {"test://foo.com/be"};
	static const char *const uri[] = {"test://foo.com/fe"};
	static const char *const dns[] = {"www.example.com"};
	static const char pem[] = "==abc\nde=";
	static const char subject[] = "/C=US/ST=CA/L=San Francisco/OU=Lyft/CN=test.lyft.com";
	char out[512];
	struct http_xfcc_src s = {.by = by,
				  .n_by = 1,
				  .hash = "abcdefg",
				  .cert = pem,
				  .cert_len = sizeof(pem) - 1,
				  .subject = subject,
				  .uri = uri,
				  .n_uri = 1,
				  .dns = dns,
				  .n_dns = 1};
	int k = http_xfcc_value(&s, ARN_CFG_FCC_D_URI | ARN_CFG_FCC_D_CERT | ARN_CFG_FCC_D_DNS, out,
				sizeof(out));
	static const char want1[] = "By=test://foo.com/be;Hash=abcdefg;Cert=\"%3D%3Dabc%0Ade%3D\";"
				    "URI=test://foo.com/fe;DNS=www.example.com";
	assert_int_equal(k, sizeof(want1) - 1);
	assert_memory_equal(out, want1, (size_t)k);
	/* no local URI SAN: no By= */
	s.n_by = 0;
	k = http_xfcc_value(&s, ARN_CFG_FCC_D_URI, out, sizeof(out));
	assert_int_equal(k, 34);
	assert_memory_equal(out, "Hash=abcdefg;URI=test://foo.com/fe", 34);
	s.n_by = 1;
	k = http_xfcc_value(&s, ARN_CFG_FCC_D_SUBJECT | ARN_CFG_FCC_D_URI, out, sizeof(out));
	static const char want3[] = "By=test://foo.com/be;Hash=abcdefg;Subject=\"/C=US/ST=CA/L=San "
				    "Francisco/OU=Lyft/CN=test.lyft.com\";URI=test://foo.com/fe";
	assert_int_equal(k, sizeof(want3) - 1);
	assert_memory_equal(out, want3, (size_t)k);
	/* no peer URI SAN: "URI=" all the same; an empty subject quoted */
	s.n_uri = 0;
	s.subject = "";
	k = http_xfcc_value(&s, ARN_CFG_FCC_D_SUBJECT | ARN_CFG_FCC_D_URI, out, sizeof(out));
	static const char want4[] = "By=test://foo.com/be;Hash=abcdefg;Subject=\"\";URI=";
	assert_int_equal(k, sizeof(want4) - 1);
	assert_memory_equal(out, want4, (size_t)k);
	/* one By= and one URI=/DNS= per name (Envoy since multiple SANs) */
	static const char *const two[] = {"spiffe://a/x", "spiffe://a/y"};
	s.by = two;
	s.n_by = 2;
	s.uri = two;
	s.n_uri = 2;
	s.dns = two;
	s.n_dns = 2;
	s.hash = NULL;
	k = http_xfcc_value(&s, ARN_CFG_FCC_D_URI | ARN_CFG_FCC_D_DNS, out, sizeof(out));
	static const char want5[] =
	    "By=spiffe://a/x;By=spiffe://a/y;URI=spiffe://a/x;URI=spiffe://a/y;"
	    "DNS=spiffe://a/x;DNS=spiffe://a/y";
	assert_int_equal(k, sizeof(want5) - 1);
	assert_memory_equal(out, want5, (size_t)k);
	/* the bound, and a name that would split the header */
	assert_int_equal(http_xfcc_value(&s, ARN_CFG_FCC_D_URI, out, 20), -ENOSPC);
	static const char *const bad[] = {"a\r\nx-admin: 1"};
	s.uri = bad;
	s.n_uri = 1;
	assert_int_equal(http_xfcc_value(&s, ARN_CFG_FCC_D_URI, out, sizeof(out)), -EINVAL);
	/* the five bytes Envoy encodes, and nothing else */
	char enc[64];
	size_t n = http_xfcc_urlenc("a+b/c=d e\n%\"", 12, enc);
	assert_int_equal(n, 22);
	assert_memory_equal(enc, "a%2Bb%2Fc%3Dd%20e%0A%\"", 22);
}

/* APPEND_FORWARD after the client's header (Envoy's "," join),
 * SANITIZE_SET over it, and both where it has none. */
static void test_xfcc_append_and_set(void **state)
{
	(void)state;
	static const char req[] = "GET / HTTP/1.1\r\nHost: a\r\nx-forwarded-client-cert: "
				  "By=test://foo.com/fe;Hash=xyz;URI=test://bar.com/be\r\n\r\n";
	static const char el[] = "Hash=abcdefg;URI=test://foo.com/fe";
	struct req r;
	snprintf(r.buf, sizeof(r.buf), "%s", req);
	for (int mode = ARN_CFG_FCC_APPEND_FORWARD; mode <= ARN_CFG_FCC_SANITIZE_SET; mode++) {
		for (int with = 0; with < 2; with++) {
			snprintf(r.buf, sizeof(r.buf), "%s",
				 with ? req : "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
			arn_h1_msg_init(&r.m, r.h, 16);
			arn_h1_parser_init(&r.p, ARN_H1_REQUEST, NULL, &r.m);
			struct arn_h1_ev ev;
			assert_true(arn_h1_parse(&r.p, r.buf, strlen(r.buf), &ev) > 0);
			struct arn_cfg_hcm h;
			memset(&h, 0, sizeof(h));
			h.fcc = (uint8_t)mode;
			struct http_req_ctx x = {.hcm = &h,
						 .tls = true,
						 .mtls = true,
						 .xfcc = el,
						 .xfcc_len = sizeof(el) - 1,
						 .text = text,
						 .text_cap = sizeof(text)};
			struct arn_h1_edit e[ARN_H1_MAX_EDITS];
			int n = http_req_edits(&x, &r.m, e, ARN_H1_MAX_EDITS);
			assert_true(n >= 0);
			char out[1024];
			struct arn_h1_wbuf w;
			arn_h1_wbuf_init(&w, out, sizeof(out) - 1, NULL, NULL);
			assert_int_equal(
			    arn_h1_write_headers(&w, &r.m, e, (unsigned)n, ARN_H1_W_DROP_HOP), 0);
			out[w.len] = 0;
			const char *want =
			    mode == ARN_CFG_FCC_APPEND_FORWARD && with
				? "\r\nx-forwarded-client-cert: By=test://foo.com/fe;Hash=xyz;"
				  "URI=test://bar.com/be,Hash=abcdefg;URI=test://foo.com/fe\r\n"
				: "\r\nx-forwarded-client-cert: "
				  "Hash=abcdefg;URI=test://foo.com/fe\r\n";
			const char *at = strstr(out, want);
			if (!at || strstr(at + strlen(want), "client-cert") ||
			    find_ci(out, "client-cert") != at + 14)
				fail_msg("mode %d, header %d:\n%s", mode, with, out);
		}
	}
}

/* ---- internal addresses (internal_address_config) ------------------------ */

/* The edits for @p req from peer @p raddr on an edge manager
 * (use_remote_address) whose internal_address_config is @p cfg (with
 * @p n ranges), into @p out; *@p internal as the router found it. */
static const char *edits_out(bool ura, bool cfg, const struct arn_cfg_cidr *cidrs, size_t n,
			     uint32_t raddr, const char *req, bool *internal, char *out, size_t cap)
{
	struct req r;
	snprintf(r.buf, sizeof(r.buf), "%s", req);
	arn_h1_msg_init(&r.m, r.h, 16);
	arn_h1_parser_init(&r.p, ARN_H1_REQUEST, NULL, &r.m);
	struct arn_h1_ev ev;
	assert_true(arn_h1_parse(&r.p, r.buf, strlen(r.buf), &ev) > 0);
	struct arn_cfg_hcm h;
	memset(&h, 0, sizeof(h));
	h.use_remote_address = ura;
	h.internal_cfg = cfg;
	h.internal_cidrs = (struct arn_cfg_cidr *)cidrs;
	h.n_internal_cidrs = n;
	struct http_req_ctx x = {.hcm = &h, .raddr = raddr, .text = text, .text_cap = sizeof(text)};
	struct arn_h1_edit e[ARN_H1_MAX_EDITS];
	/* as the connection manager's head does (on_head), then the router */
	if (r.m.flags & ARN_H1_F_PROXY_FIELDS)
		http_req_sanitize(&h, &r.m, raddr, false);
	int k = http_req_edits(&x, &r.m, e, ARN_H1_MAX_EDITS);
	assert_true(k >= 0);
	struct arn_h1_wbuf w;
	arn_h1_wbuf_init(&w, out, (uint32_t)cap - 1, NULL, NULL);
	assert_int_equal(arn_h1_write_headers(&w, &r.m, e, (unsigned)k, ARN_H1_W_DROP_HOP), 0);
	out[w.len] = 0;
	*internal = x.internal;
	/* the filters' view (RBAC remote_ip, rate limits) agrees */
	bool fi;
	http_client_addr(&h, &r.m, raddr, &fi);
	assert_int_equal(fi, x.internal);
	return out;
}

static const char *edge(bool cfg, const struct arn_cfg_cidr *cidrs, size_t n, uint32_t raddr,
			const char *req, bool *internal, char *out, size_t cap)
{
	return edits_out(true, cfg, cidrs, n, raddr, req, internal, out, cap);
}

#define FORGED                                                                                     \
	"GET / HTTP/1.1\r\nHost: a\r\nx-envoy-max-retries: 9\r\nx-envoy-retry-on: 5xx\r\n"         \
	"x-envoy-internal: true\r\n\r\n"

/* Envoy 1.36 (CVE-2024-45806; explicit_internal_address_config's true
 * made the only behaviour): without internal_address_config no peer is
 * internal, so an RFC 1918 client at the edge (behind a cloud load
 * balancer, a NAT) is external: its x-envoy-* are removed, not trusted. */
static void test_rfc1918_peer_is_external_by_default(void **state)
{
	(void)state;
	char out[2048];
	bool internal;
	edge(false, NULL, 0, 0x0a000005, FORGED, &internal, out, sizeof(out));
	if (internal || strstr(out, "x-envoy-max-retries") || strstr(out, "x-envoy-retry-on") ||
	    strstr(out, "x-envoy-internal"))
		fail_msg("a 10.0.0.5 client was trusted as internal:\n%s", out);
	assert_non_null(strstr(out, "x-envoy-external-address: 10.0.0.5\r\n"));
}

/* Envoy's mutateRequestHeaders runs cleanInternalHeaders on every request
 * that is not internal, with use_remote_address or without: behind a
 * trusted proxy (its default XFF detection) a client's x-envoy-* retry,
 * timeout and trace headers must not reach the upstream either, and its
 * own x-envoy-internal goes always. The edge-only three (decorator,
 * downstream service cluster and node) stay off the edge. Fails before:
 * x-envoy-max-retries: 9 went upstream from 203.0.113.7 behind a proxy,
 * and x-envoy-retriable-status-codes from the edge. */
static void test_not_internal_requests_lose_envoy_headers(void **state)
{
	(void)state;
	char out[2048];
	bool internal;
	static const char forged[] =
	    "GET / HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: %s\r\n"
	    "x-envoy-max-retries: 9\r\nx-envoy-retry-on: 5xx\r\nx-envoy-internal: true\r\n"
	    "x-envoy-retriable-status-codes: 418\r\nx-envoy-original-url: http://x/\r\n"
	    "x-envoy-force-trace: 1\r\nx-envoy-upstream-rq-timeout-ms: 1\r\n"
	    "x-envoy-decorator-operation: op\r\nx-envoy-downstream-service-node: n\r\n\r\n";
	static const char *const cleaned[] = {
	    "x-envoy-max-retries",  "x-envoy-retry-on",	   "x-envoy-retriable-status-codes",
	    "x-envoy-original-url", "x-envoy-force-trace", "x-envoy-upstream-rq-timeout-ms"};
	char req[1024];
	/* behind a proxy: the last XFF address, external */
	snprintf(req, sizeof(req), forged, "203.0.113.7");
	edits_out(false, true, NULL, 0, 0x0a000005, req, &internal, out, sizeof(out));
	assert_false(internal);
	for (size_t i = 0; i < sizeof(cleaned) / sizeof(cleaned[0]); i++)
		if (strstr(out, cleaned[i]))
			fail_msg("%s went upstream from an external client behind a proxy:\n%s",
				 cleaned[i], out);
	assert_null(strstr(out, "x-envoy-internal"));
	assert_null(strstr(out, "x-envoy-external-address")); /* not the edge */
	assert_non_null(strstr(out, "x-envoy-decorator-operation: op\r\n"));
	assert_non_null(strstr(out, "x-envoy-downstream-service-node: n\r\n"));
	/* behind a proxy, one internal XFF address: trusted, and said so */
	snprintf(req, sizeof(req), forged, "10.1.2.3");
	edits_out(false, true, NULL, 0, 0xc6120005, req, &internal, out, sizeof(out));
	assert_true(internal);
	assert_non_null(strstr(out, "x-envoy-max-retries: 9\r\n"));
	assert_non_null(strstr(out, "x-envoy-internal: true\r\n"));
	/* two addresses: not internal, its claim removed */
	snprintf(req, sizeof(req), forged, "10.1.2.3, 10.1.2.4");
	edits_out(false, true, NULL, 0, 0xc6120005, req, &internal, out, sizeof(out));
	assert_false(internal);
	assert_null(strstr(out, "x-envoy-internal"));
	assert_null(strstr(out, "x-envoy-max-retries"));
	/* the edge: all of them, the edge-only three too */
	snprintf(req, sizeof(req), forged, "203.0.113.7");
	edge(true, NULL, 0, 0xc6120005, req, &internal, out, sizeof(out));
	assert_false(internal);
	for (size_t i = 0; i < sizeof(cleaned) / sizeof(cleaned[0]); i++)
		if (strstr(out, cleaned[i]))
			fail_msg("%s went upstream from the edge:\n%s", cleaned[i], out);
	assert_null(strstr(out, "x-envoy-decorator-operation"));
	assert_null(strstr(out, "x-envoy-downstream-service-node"));
	assert_null(strstr(out, "x-envoy-internal"));
	assert_non_null(strstr(out, "x-envoy-external-address: 198.18.0.5\r\n"));
}

/* internal_address_config {}: RFC 1918 and loopback; with cidr_ranges,
 * exactly those. */
static void test_internal_address_config(void **state)
{
	(void)state;
	char out[2048];
	bool internal;
	edge(true, NULL, 0, 0x0a000005, FORGED, &internal, out, sizeof(out));
	assert_true(internal);
	assert_non_null(strstr(out, "x-envoy-max-retries: 9\r\n"));
	assert_non_null(strstr(out, "x-envoy-internal: true\r\n"));
	edge(true, NULL, 0, 0xc6120005, FORGED, &internal, out, sizeof(out));
	assert_false(internal);
	static const struct arn_cfg_cidr nets[] = {{.addr = 0xc6120000, .len = 24},
						   {.addr = 0x64400000, .len = 10}};
	edge(true, nets, 2, 0xc6120005, FORGED, &internal, out, sizeof(out));
	assert_true(internal);
	edge(true, nets, 2, 0x64412345, FORGED, &internal, out, sizeof(out)); /* 100.65.x */
	assert_true(internal);
	edge(true, nets, 2, 0xc6120105, FORGED, &internal, out, sizeof(out)); /* 198.18.1.5 */
	assert_false(internal);
	assert_null(strstr(out, "x-envoy-max-retries"));
	edge(true, nets, 2, 0x0a000005, FORGED, &internal, out, sizeof(out)); /* RFC 1918: no */
	assert_false(internal);
	/* ranges of only IPv6 (fd00::/8, ::/0): no IPv4 peer is internal
	 * (CidrRange::isInRange), and they are not "no ranges" (RFC 1918) */
	static const struct arn_cfg_cidr v6[] = {{.len = 8, .v6 = true, .addr6 = {0xfd}},
						 {.len = 0, .v6 = true}};
	edge(true, v6, 2, 0x0a000005, FORGED, &internal, out, sizeof(out));
	assert_false(internal);
	assert_null(strstr(out, "x-envoy-max-retries"));
	/* without use_remote_address, the XFF address is the one asked */
	assert_true(
	    http_addr_internal(&(struct arn_cfg_hcm){.internal_cfg = true,
						     .internal_cidrs = (struct arn_cfg_cidr *)nets,
						     .n_internal_cidrs = 2},
			       0xc61200ff));
}

/* skip_xff_append with use_remote_address: X-Forwarded-For goes as the
 * client sent it (Envoy's transparent mode), the peer still the client
 * address and x-forwarded-proto still set. */
static void test_skip_xff_append(void **state)
{
	(void)state;
	for (int skip = 0; skip < 2; skip++) {
		const struct arn_h1_msg *m = NULL;
		struct req r;
		snprintf(r.buf, sizeof(r.buf), "%s",
			 "GET / HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 203.0.113.7\r\n\r\n");
		arn_h1_msg_init(&r.m, r.h, 16);
		arn_h1_parser_init(&r.p, ARN_H1_REQUEST, NULL, &r.m);
		struct arn_h1_ev ev;
		assert_true(arn_h1_parse(&r.p, r.buf, strlen(r.buf), &ev) > 0);
		m = &r.m;
		struct arn_cfg_hcm h;
		memset(&h, 0, sizeof(h));
		h.use_remote_address = true;
		h.skip_xff_append = skip;
		struct http_req_ctx x = {
		    .hcm = &h, .raddr = 0xc6120001, .text = text, .text_cap = sizeof(text)};
		struct arn_h1_edit e[ARN_H1_MAX_EDITS];
		int n = http_req_edits(&x, m, e, ARN_H1_MAX_EDITS);
		assert_true(n >= 0);
		char out[2048];
		struct arn_h1_wbuf w;
		arn_h1_wbuf_init(&w, out, sizeof(out) - 1, NULL, NULL);
		assert_int_equal(arn_h1_write_headers(&w, m, e, (unsigned)n, ARN_H1_W_DROP_HOP), 0);
		out[w.len] = 0;
		const char *want = skip ? "X-Forwarded-For: 203.0.113.7\r\n"
					: "X-Forwarded-For: 203.0.113.7,198.18.0.1\r\n";
		if (!strstr(out, want) || !strstr(out, "x-forwarded-proto: http\r\n"))
			fail_msg("skip_xff_append %d:\n%s", skip, out);
		assert_int_equal(x.client_addr, 0xc6120001);
		assert_int_equal(x.xff_len,
				 skip ? 11 : 10); /* the received one, or the address appended */
	}
}

/* ---- original_ip_detection_extensions (http_ip_detect) ------------------ */

static struct req ipd_req;

static const struct arn_h1_msg *ipd_parse(const char *hdrs)
{
	snprintf(ipd_req.buf, sizeof(ipd_req.buf), "GET / HTTP/1.1\r\nHost: a\r\n%s\r\n", hdrs);
	arn_h1_msg_init(&ipd_req.m, ipd_req.h, 16);
	arn_h1_parser_init(&ipd_req.p, ARN_H1_REQUEST, NULL, &ipd_req.m);
	struct arn_h1_ev ev;
	assert_true(arn_h1_parse(&ipd_req.p, ipd_req.buf, strlen(ipd_req.buf), &ev) > 0);
	return &ipd_req.m;
}

#define IP(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (d))

/* @p hdrs from @p raddr through @p d (@p n extensions): the address found
 * and whether it is internal (internal_address_config {}), or the status
 * it is refused with. */
static int detect(const struct arn_cfg_ipdetect *d, size_t n, uint32_t raddr, const char *hdrs,
		  uint32_t *client, bool *internal)
{
	struct arn_cfg_hcm h;
	memset(&h, 0, sizeof(h));
	h.ip_detect = d;
	h.n_ip_detect = n;
	h.internal_cfg = true;
	const struct arn_h1_msg *m = ipd_parse(hdrs);
	int r = http_ip_detect(&h, m, raddr, client, internal);
	if (!r) { /* http_client_addr (RBAC, rate limits, ext_authz) agrees */
		bool in;
		assert_int_equal(http_client_addr(&h, m, raddr, &in), *client);
		assert_int_equal(in, *internal);
	}
	return r;
}

/* Envoy's test/extensions/http/original_ip_detection/xff/xff_test.cc */
static void test_ipd_xff_envoy_vectors(void **state)
{
	(void)state;
	uint32_t a;
	bool in;
	const uint32_t peer = IP(10, 10, 11, 11);
	struct arn_cfg_ipdetect hops = {.kind = ARN_CFG_IPD_XFF, .hops = 1};
	/* XffNumTrustedHopsTest: header missing; good request */
	assert_int_equal(detect(&hops, 1, peer, "x-other: abc\r\n", &a, &in), 0);
	assert_int_equal(a, peer);
	assert_false(in);
	assert_int_equal(detect(&hops, 1, peer, "x-forwarded-for: 1.2.3.4,2.2.2.2\r\n", &a, &in),
			 0);
	assert_int_equal(a, IP(1, 2, 3, 4));
	assert_false(in);
	/* XffTrustedCidrsTest (its IPv6 range aside: Arion is IPv4) */
	struct arn_cfg_cidr nets[] = {{IP(192, 0, 2, 0), 24}, {IP(198, 51, 100, 0), 24}};
	struct arn_cfg_ipdetect tc = {.kind = ARN_CFG_IPD_XFF, .cidrs = nets, .n_cidrs = 2};
	const char *two = "x-forwarded-for: 1.2.3.4,2.2.2.2\r\n";
	detect(&tc, 1, peer, two, &a, &in); /* RemoteNotTrusted */
	assert_int_equal(a, peer);
	detect(&tc, 1, IP(192, 0, 2, 11), two, &a, &in); /* RemoteIPv4IsTrusted */
	assert_int_equal(a, IP(2, 2, 2, 2));
	detect(&tc, 1, IP(192, 0, 2, 11),
	       "x-forwarded-for: 1.2.3.4,2.2.2.2,192.0.2.5, 198.51.100.1\r\n", &a, &in);
	assert_int_equal(a, IP(2, 2, 2, 2)); /* Recurse */
	detect(&tc, 1, IP(192, 0, 2, 11), "x-forwarded-for: 192.0.2.4,192.0.2.5, 198.51.100.1\r\n",
	       &a, &in);
	assert_int_equal(a, IP(192, 0, 2, 4)); /* RecurseAllAddressesTrusted */
	detect(&tc, 1, IP(192, 0, 2, 11), "x-forwarded-for: 192.0.2.4,, 198.51.100.1\r\n", &a, &in);
	assert_int_equal(a, IP(192, 0, 2, 11)); /* EmptyXFFEntry: none, the peer */
	detect(&tc, 1, IP(192, 0, 2, 11),
	       "x-forwarded-for: 10.1.1.1, 10.2.2.2, 10.3.3.3, 10.4.4.4, 10.5.5.5, 10.6.6.6, "
	       "10.7.7.7,10.8.8.8,10.9.9.9, 10.10.10.10, 10.11.11.11\r\n"
	       "x-forwarded-for: 10.12.12.12, 10.13.13.13, 10.14.14.14, 10.15.15.15, "
	       "10.16.16.16, 10.17.17.17, 10.18.18.18, 10.19.19.19, 10.20.20.20, 10.21.21.21\r\n",
	       &a, &in);
	assert_int_equal(a, IP(192, 0, 2, 11)); /* XFFHasTooManyEntries (21, two lines) */
	/* 20 are not too many; a single trusted-walk element is internal
	 * when it is (RFC 1918 with internal_address_config {}) */
	detect(&tc, 1, IP(192, 0, 2, 11), "x-forwarded-for: 10.0.0.7\r\n", &a, &in);
	assert_int_equal(a, IP(10, 0, 0, 7));
	assert_true(in);
}

/*
 * Envoy's XffTrustedCidrsTest with its IPv6 range 2001:db8:7e57:1::/64
 * beside the IPv4 ones. getLastNonTrustedAddressFromXFF parses IPv6
 * elements (parseInternetAddressNoThrow), so a trusted IPv6 hop is skipped
 * in the walk from the right, whatever its spelling. The first untrusted
 * element, when IPv6, is Envoy's remote address; Arion's addresses are
 * IPv4, so the extension finds none and the peer stays (docs/http.md
 * "Original client address detection"), as for an element that is no
 * address: so also a leftmost IPv6 element when all are trusted, and an
 * IPv4-mapped one (an IPv6 address to Envoy too).
 */
static void test_ipd_xff_ipv6(void **state)
{
	(void)state;
	uint32_t a;
	bool in;
	const uint32_t peer = IP(192, 0, 2, 11);
	struct arn_cfg_cidr nets[] = {
	    {IP(192, 0, 2, 0), 24},
	    {IP(198, 51, 100, 0), 24},
	    {.len = 64, .v6 = true, .addr6 = {0x20, 0x01, 0x0d, 0xb8, 0x7e, 0x57, 0x00, 0x01}}};
	struct arn_cfg_ipdetect tc = {.kind = ARN_CFG_IPD_XFF, .cidrs = nets, .n_cidrs = 3};
	const char *hop = "x-forwarded-for: 1.2.3.4,2.2.2.2, 2001:db8:7e57:1::5,198.51.100.1\r\n";
	detect(&tc, 1, peer, hop, &a, &in);
	assert_int_equal(a, IP(2, 2, 2, 2));
	/* the same hop in full, with a numeric scope, and as the
	 * longest text taken (45 bytes and a scope) */
	detect(&tc, 1, peer, "x-forwarded-for: 2.2.2.2,\t2001:0db8:7e57:0001:0:0:0:5%3 \r\n", &a,
	       &in);
	assert_int_equal(a, IP(2, 2, 2, 2));
	detect(&tc, 1, peer,
	       "x-forwarded-for: 2.2.2.2, "
	       "2001:0db8:7e57:0001:ffff:ffff:255.255.255.255%4294967295\r\n",
	       &a, &in);
	assert_int_equal(a, IP(2, 2, 2, 2));
	/* a scope past 32 bits, or an interface name (which a worker cannot
	 * look up), is no address: none */
	detect(&tc, 1, peer,
	       "x-forwarded-for: 2.2.2.2, "
	       "2001:0db8:7e57:0001:ffff:ffff:255.255.255.255%4294967296\r\n",
	       &a, &in);
	assert_int_equal(a, peer);
	detect(&tc, 1, peer, "x-forwarded-for: 2.2.2.2, 2001:db8:7e57:1::5%eth0\r\n", &a, &in);
	assert_int_equal(a, peer);
	/* an IPv6 client: none, the peer, not internal */
	detect(&tc, 1, peer, "x-forwarded-for: 1.2.3.4, 2001:db8::9, 198.51.100.1\r\n", &a, &in);
	assert_int_equal(a, peer);
	assert_false(in);
	detect(&tc, 1, peer, "x-forwarded-for: ::ffff:203.0.113.9, 198.51.100.1\r\n", &a, &in);
	assert_int_equal(a, peer);
	/* all trusted, the leftmost IPv6 (Envoy's answer): none */
	detect(&tc, 1, peer, "x-forwarded-for: 2001:db8:7e57:1::7, 192.0.2.5\r\n", &a, &in);
	assert_int_equal(a, peer);
	detect(&tc, 1, peer, "x-forwarded-for: 2001:db8:7e57:1::7\r\n", &a, &in);
	assert_int_equal(a, peer);
	/* without the IPv6 range the hop is the client: none */
	tc.n_cidrs = 2;
	detect(&tc, 1, peer, hop, &a, &in);
	assert_int_equal(a, peer);
	/* an IPv6 range, ::/0 included, never trusts an IPv4 peer */
	struct arn_cfg_cidr all6 = {.len = 0, .v6 = true};
	tc.cidrs = &all6;
	tc.n_cidrs = 1;
	detect(&tc, 1, peer, "x-forwarded-for: 1.2.3.4\r\n", &a, &in);
	assert_int_equal(a, peer);
}

/* Envoy's custom_header_test.cc: the header's address; none (absent or
 * not an address): the next extension, or the refusal with its status. */
static void test_ipd_custom_header(void **state)
{
	(void)state;
	uint32_t a;
	bool in;
	const uint32_t peer = IP(198, 18, 0, 9);
	struct arn_cfg_ipdetect d[2] = {
	    {.kind = ARN_CFG_IPD_CUSTOM_HEADER, .header = "x-real-ip", .header_len = 9},
	    {.kind = ARN_CFG_IPD_XFF},
	};
	assert_int_equal(detect(d, 1, peer, "X-Real-IP: 1.2.3.4\r\n", &a, &in), 0);
	assert_int_equal(a, IP(1, 2, 3, 4));
	assert_false(in);
	/* trusted: internal when the address is (allow_extension_to_set_...) */
	d[0].trusted = true;
	detect(d, 1, peer, "x-real-ip: 10.1.2.3\r\n", &a, &in);
	assert_int_equal(a, IP(10, 1, 2, 3));
	assert_true(in);
	d[0].trusted = false;
	detect(d, 1, peer, "x-real-ip: 10.1.2.3\r\n", &a, &in);
	assert_false(in);
	/* not an address (a port, a list): the next one, XFF's last */
	detect(d, 2, peer, "x-real-ip: 1.2.3.4:80\r\nx-forwarded-for: 5.6.7.8\r\n", &a, &in);
	assert_int_equal(a, IP(5, 6, 7, 8));
	detect(d, 2, peer, "x-forwarded-for: 5.6.7.8\r\n", &a, &in);
	assert_int_equal(a, IP(5, 6, 7, 8));
	/* none at all: the peer */
	detect(d, 2, peer, "x-real-ip: nope\r\n", &a, &in);
	assert_int_equal(a, peer);
	/* reject_with_status: refused at once, the XFF extension after it
	 * not asked (Envoy returns on the first reject) */
	d[0].reject_status = 403;
	assert_int_equal(detect(d, 2, peer, "x-forwarded-for: 5.6.7.8\r\n", &a, &in), 403);
	assert_int_equal(detect(d, 2, peer, "x-real-ip: 1.2.3.4\r\n", &a, &in), 0);
	assert_int_equal(a, IP(1, 2, 3, 4));
}

/* A listener with detection (never use_remote_address): a trusted
 * internal address gets x-envoy-internal: true; any other request has
 * the client's x-envoy-internal and x-envoy-* removed (Envoy's
 * cleanInternalHeaders). */
static void test_ipd_internal_edits(void **state)
{
	(void)state;
	struct arn_cfg_ipdetect d = {.kind = ARN_CFG_IPD_CUSTOM_HEADER,
				     .header = "x-real-ip",
				     .header_len = 9,
				     .trusted = true};
	struct arn_cfg_hcm h;
	memset(&h, 0, sizeof(h));
	h.ip_detect = &d;
	h.n_ip_detect = 1;
	h.internal_cfg = true;
	const char *reqs[] = {"x-real-ip: 10.0.0.1\r\nx-envoy-retry-on: 5xx\r\n",
			      "x-real-ip: 203.0.113.1\r\nx-envoy-retry-on: 5xx\r\n"
			      "x-envoy-internal: true\r\n"};
	for (int i = 0; i < 2; i++) {
		struct arn_h1_msg *m = (struct arn_h1_msg *)ipd_parse(reqs[i]);
		struct http_req_ctx x = {
		    .hcm = &h, .raddr = IP(198, 18, 0, 9), .text = text, .text_cap = sizeof(text)};
		/* as the connection manager's head does (on_head), then the router */
		assert_true(m->flags & ARN_H1_F_PROXY_FIELDS);
		http_req_sanitize(&h, m, x.raddr, false);
		struct arn_h1_edit e[ARN_H1_MAX_EDITS];
		int n = http_req_edits(&x, m, e, ARN_H1_MAX_EDITS);
		assert_true(n >= 0);
		char out[2048];
		struct arn_h1_wbuf w;
		arn_h1_wbuf_init(&w, out, sizeof(out) - 1, NULL, NULL);
		assert_int_equal(arn_h1_write_headers(&w, m, e, (unsigned)n, ARN_H1_W_DROP_HOP), 0);
		out[w.len] = 0;
		assert_int_equal(x.client_addr, i ? IP(203, 0, 113, 1) : IP(10, 0, 0, 1));
		if (i == 0 && (!strstr(out, "x-envoy-internal: true\r\n") ||
			       !strstr(out, "x-envoy-retry-on: 5xx\r\n")))
			fail_msg("trusted internal:\n%s", out);
		if (i == 1 && (strstr(out, "x-envoy-internal") || strstr(out, "x-envoy-retry-on")))
			fail_msg("external:\n%s", out);
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
	    T(test_forged_fields_unseen_by_filters),
	    T(test_ipd_on_the_listener),
	    T(test_xff_client_logged_behind_proxy),
	    T(test_fuzz_seed_replays),
	    cmocka_unit_test(test_xfcc_modes_without_details),
	    cmocka_unit_test(test_xfcc_element_envoy_vectors),
	    cmocka_unit_test(test_xfcc_append_and_set),
	    cmocka_unit_test(test_rfc1918_peer_is_external_by_default),
	    cmocka_unit_test(test_internal_address_config),
	    cmocka_unit_test(test_not_internal_requests_lose_envoy_headers),
	    cmocka_unit_test(test_skip_xff_append),
	    cmocka_unit_test(test_ipd_xff_envoy_vectors),
	    cmocka_unit_test(test_ipd_xff_ipv6),
	    cmocka_unit_test(test_ipd_custom_header),
	    cmocka_unit_test(test_ipd_internal_edits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
