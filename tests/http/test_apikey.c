/*
 * envoy.filters.http.api_key_auth on the wire (lib/http/http_apikey.c): the
 * connection manager on the real TCP stack over the fake lib/net
 * (hcm_harness.h) with a listener "dyn" (port 82) of Envoy's shape; what
 * the client gets (status, body), what the upstream gets (the client id,
 * the key hidden from headers, the query and cookies), the details in the
 * access log and the counters, as Envoy's ApiKeyAuthFilter.
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

#include "tjwt.h" /* before the harness, whose macros OpenSSL's headers would meet */

#include "hcm_harness.h"
#include "arn_stats_envoy.h"

#define AT_(t) "\"@type\":\"type.googleapis.com/envoy.extensions.filters.http." t "\""
#define CRED(k, c) "{\"key\":\"" k "\",\"client\":\"" c "\"}"

/* clang-format off */
/* Listener "dyn" (port 82), stat_prefix ak, access log "code details
 * path" at %s: api_key_auth "ak" (keys k1 alice, k2 bob, a 1024-byte key
 * of "long"; sources header X-API-KEY, query api_key, cookie key;
 * forwarding %s) before the router to cluster web. Routes: /bob allows
 * bob only; /other has its own credentials (k3 carol), source (header
 * x-other) and forwarding (x-who, nothing hidden); /off turns the filter
 * off (FilterConfig disabled); / the filter's. */
#define AK_LISTENER                                                                                \
	"{\"name\":\"dyn\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","              \
	"\"port_value\":82}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","                  \
	"\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.filters.network."      \
	"http_connection_manager.v3.HttpConnectionManager\",\"stat_prefix\":\"ak\","               \
	"\"access_log\":[{\"name\":\"f\",\"typed_config\":{\"@type\":\"type.googleapis.com/"       \
	"envoy.extensions.access_loggers.file.v3.FileAccessLog\",\"path\":\"%s\",\"log_format\":"  \
	"{\"text_format\":\"%%RESPONSE_CODE%% %%RESPONSE_CODE_DETAILS%% %%REQ(:PATH)%%\\n\"}}}],"  \
	"\"route_config\":{\"name\":\"dyn\",\"virtual_hosts\":[{\"name\":\"all\",\"domains\":"     \
	"[\"*\"],\"routes\":["                                                                     \
	"{\"match\":{\"prefix\":\"/bob\"},\"route\":{\"cluster\":\"web\"},"                        \
	"\"typed_per_filter_config\":{\"ak\":{" AT_("api_key_auth.v3.ApiKeyAuthPerRoute")         \
	",\"allowed_clients\":[\"bob\"]}}},"                                                       \
	"{\"match\":{\"prefix\":\"/other\"},\"route\":{\"cluster\":\"web\"},"                      \
	"\"typed_per_filter_config\":{\"ak\":{" AT_("api_key_auth.v3.ApiKeyAuthPerRoute")         \
	",\"credentials\":[" CRED("k3", "carol") "],\"key_sources\":[{\"header\":\"x-other\"}],"   \
	"\"forwarding\":{\"header\":\"x-who\"}}}},"                                                \
	"{\"match\":{\"prefix\":\"/off\"},\"route\":{\"cluster\":\"web\"},"                        \
	"\"typed_per_filter_config\":{\"ak\":{\"@type\":\"type.googleapis.com/"                    \
	"envoy.config.route.v3.FilterConfig\",\"disabled\":true}}},"                               \
	"{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}]}]},"                      \
	"\"http_filters\":[{\"name\":\"ak\",\"typed_config\":{" AT_("api_key_auth.v3.ApiKeyAuth")  \
	",\"credentials\":[" CRED("k1", "alice") "," CRED("k2", "bob") ",{\"key\":\"%s\","         \
	"\"client\":\"long\"}],\"key_sources\":[{\"header\":\"X-API-KEY\"},"                       \
	"{\"query\":\"api_key\"},{\"cookie\":\"key\"}]%s}},"                                       \
	"{\"name\":\"envoy.filters.http.router\",\"typed_config\":{" AT_("router.v3.Router") "}}]}}]}]}"
/* clang-format on */

/* Listener "dyn" (port 82), stat_prefix ci: credential_injector "ci"
 * (its generic credential the SDS generic_secret "dyn", the header %s,
 * then more CredentialInjector fields %s) before the router to web. */
#define CI_LISTENER                                                                                \
	"{\"name\":\"dyn\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","              \
	"\"port_value\":82}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","                  \
	"\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.filters.network."      \
	"http_connection_manager.v3.HttpConnectionManager\",\"stat_prefix\":\"ci\","               \
	"\"route_config\":{\"name\":\"dyn\",\"virtual_hosts\":[{\"name\":\"all\",\"domains\":"     \
	"[\"*\"],\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}]}]},"  \
	"\"http_filters\":[{\"name\":\"ci\",\"typed_config\":{" AT_(                               \
	    "credential_injector.v3.CredentialInjector") ",\"credential\":{\"name\":"              \
							 "\"envoy.http.injected_credentials."      \
							 "generic\",\"typed_config\":{\"@type\":"  \
							 "\"type.googleapis.com/"                  \
							 "envoy.extensions.http.injected_"         \
							 "credentials.generic.v3.Generic\","       \
							 "\"credential\":{\"name\":\"dyn\"}%s}}%"  \
							 "s}},"                                    \
							 "{\"name\":\"envoy.filters.http."         \
							 "router\",\"typed_config\":{" AT_(        \
							     "router.v3.Router") "}}]}}]}]}"
#define CI_SECRET(v)                                                                               \
	"{\"name\":\"dyn\",\"generic_secret\":{\"secret\":{\"inline_string\":\"" v "\"}}}"
/* clang-format on */

static char log_path[64];
static char long_key[1025];
static uint8_t ucap[N_UPSTREAMS][1 << 16];

static void send_str(struct peer *p, const char *s)
{
	assert_non_null(p);
	hh_send(p, s, (uint32_t)strlen(s), 0);
	hh_settle();
}

/* A run with AK_LISTENER (forwarding @p fwd, a JSON member with its
 * leading comma, or "") and client 0 connected. */
static void ak_begin(const char *fwd)
{
	static char json[16384];
	memset(long_key, 'L', 1024);
	long_key[1024] = 0;
	snprintf(log_path, sizeof(log_path), "/tmp/arn_test_apikey.%d.log", (int)getpid());
	snprintf(json, sizeof(json), AK_LISTENER, log_path, long_key, fwd);
	hh_begin(1);
	hh_apply(ARN_TYPE_URL_LISTENER, json);
	hh_cfg_changed = true;
	hh_open(0, 82);
	hh_settle();
}

static uint64_t ak_stat(unsigned id)
{
	struct arn_stats_scope *sc = arn_stats_scope_get_named(&arn_stats_api_key_auth_schema,
							       "http.ak.api_key_auth", NULL, NULL);
	assert_non_null(sc);
	uint64_t v = arn_stats_counter_value(sc, id);
	arn_stats_scope_put(sc);
	return v;
}

/* Request @p head (without its empty line) from client 0: what the
 * client got into @p out, and what the upstream got (if one did) into
 * @p up, answered 200. @return whether an upstream got it. */
static bool exchange(const char *head, char *out, size_t cap, char *up, size_t upcap)
{
	static char req[8192];
	snprintf(req, sizeof(req), "%s\r\n\r\n", head);
	struct peer *c = hh_client(0);
	uint32_t mark = c->log_len;
	uint32_t rx0[N_UPSTREAMS], um[N_UPSTREAMS];
	for (unsigned i = 0; i < N_UPSTREAMS; i++) {
		struct peer *u = hh_upstream(i);
		rx0[i] = u ? u->rx : 0;
		um[i] = u ? u->cap_len : 0;
	}
	send_str(c, req);
	struct peer *got = NULL;
	unsigned gi = 0;
	for (unsigned i = 0; i < N_UPSTREAMS && !got; i++) {
		struct peer *u = hh_upstream(i);
		if (u && u->rx != rx0[i]) {
			got = u;
			gi = i;
		}
	}
	if (got && !got->cap) {
		/* a new connection: what it got so far is in its log */
		got->cap = ucap[gi];
		got->cap_max = sizeof(ucap[gi]);
		got->cap_len = got->log_len;
		memcpy(got->cap, got->log, got->log_len);
		um[gi] = 0;
	}
	if (got && up) {
		size_t n = got->cap_len - um[gi] < upcap - 1 ? got->cap_len - um[gi] : upcap - 1;
		memcpy(up, got->cap + um[gi], n);
		up[n] = 0;
	}
	if (got)
		send_str(got, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
	hh_settle();
	size_t n = c->log_len - mark < cap - 1 ? c->log_len - mark : cap - 1;
	memcpy(out, c->log + mark, n);
	out[n] = 0;
	return got != NULL;
}

static void log_take(char *log, size_t cap)
{
	arn_access_log_drain();
	FILE *f = fopen(log_path, "r");
	assert_non_null(f);
	size_t n = fread(log, 1, cap - 1, f);
	fclose(f);
	unlink(log_path);
	log[n] = 0;
}

/* @p head is answered @p status with Envoy's body and never reaches the
 * upstream. */
static void denied(const char *head, unsigned status)
{
	char r[4096];
	if (exchange(head, r, sizeof(r), NULL, 0))
		fail_msg("%s reached the upstream", head);
	const char *want =
	    status == 401 ? "HTTP/1.1 401 Unauthorized\r\n" : "HTTP/1.1 403 Forbidden\r\n";
	const char *body = status == 401 ? "Client authentication failed." : "Client is forbidden.";
	if (!strstr(r, want) || !strstr(r, body))
		fail_msg("for %s the client got: %s", head, r);
}

/* The first source with a non-empty key wins (a header's "Bearer "
 * dropped, a query value percent-decoded, a cookie's quotes dropped);
 * the client id goes upstream (a client's own replaced) and the key is
 * hidden from every source; each of Envoy's denials with its status,
 * body and details; a route's allowed_clients (403), its own
 * credentials, source and forwarding; FilterConfig disabled; counters. */
static void test_api_key_auth(void **state)
{
	(void)state;
	ak_begin(",\"forwarding\":{\"header\":\"X-Client-Id\",\"hide_credentials\":true}");
	uint64_t a0 = ak_stat(ARN_API_KEY_AUTH_allowed),
		 u0 = ak_stat(ARN_API_KEY_AUTH_unauthorized),
		 f0 = ak_stat(ARN_API_KEY_AUTH_forbidden);
	char r[4096], up[8192], h[4096];
	/* a header, with a forged client id */
	assert_true(exchange("GET /x HTTP/1.1\r\nHost: a\r\nx-client-id: mallory\r\n"
			     "X-API-KEY: k1",
			     r, sizeof(r), up, sizeof(up)));
	assert_non_null(strstr(r, "HTTP/1.1 200 OK"));
	if (!strstr(up, "x-client-id: alice\r\n") || strstr(up, "mallory") || strstr(up, "k1") ||
	    strcasestr(up, "x-api-key"))
		fail_msg("the upstream got: %s", up);
	/* Bearer dropped */
	assert_true(exchange("GET /x HTTP/1.1\r\nHost: a\r\nX-API-KEY: Bearer k2", r, sizeof(r), up,
			     sizeof(up)));
	if (!strstr(up, "x-client-id: bob\r\n") || strstr(up, "Bearer"))
		fail_msg("the upstream got: %s", up);
	/* a query, percent-decoded (name and value); the parameter goes,
	 * every other stays as it came */
	assert_true(exchange("GET /x?a=1&api%5Fkey=%6B2&b=%20&api_key=zz HTTP/1.1\r\nHost: a", r,
			     sizeof(r), up, sizeof(up)));
	if (!strstr(up, "GET /x?a=1&b=%20 HTTP/1.1\r\n") || !strstr(up, "x-client-id: bob\r\n"))
		fail_msg("the upstream got: %s", up);
	/* asterisk-form: no query to look at, the path left alone (Envoy's
	 * GHSA-47vj-9r25-wv5j: a path-less request with a query source to
	 * hide crashed it); allowed, then no route takes it */
	if (exchange("OPTIONS * HTTP/1.1\r\nHost: a\r\nX-API-KEY: k1", r, sizeof(r), up,
		     sizeof(up)) ||
	    !strstr(r, "HTTP/1.1 404 Not Found\r\n"))
		fail_msg("OPTIONS *: %s", r);
	/* the query's only parameter: no '?' left */
	assert_true(
	    exchange("GET /q?api_key=k1 HTTP/1.1\r\nHost: a", r, sizeof(r), up, sizeof(up)));
	if (!strstr(up, "GET /q HTTP/1.1\r\n"))
		fail_msg("the upstream got: %s", up);
	/* a cookie, quoted; the others kept in one line */
	assert_true(exchange("GET /x HTTP/1.1\r\nHost: a\r\nCookie: a=1; key=\"k2\"\r\n"
			     "Cookie: b=2; bad",
			     r, sizeof(r), up, sizeof(up)));
	if (!strstr(up, "x-client-id: bob\r\n") || !strstr(up, "cookie: a=1; b=2\r\n") ||
	    strstr(up, "k2") || strstr(up, "bad"))
		fail_msg("the upstream got: %s", up);
	/* the only cookie: no Cookie line left */
	assert_true(
	    exchange("GET /x HTTP/1.1\r\nHost: a\r\nCookie: key=k1", r, sizeof(r), up, sizeof(up)));
	if (strcasestr(up, "cookie"))
		fail_msg("the upstream got: %s", up);
	/* an empty header value is no key: the query's is taken */
	assert_true(exchange("GET /x?api_key=k1 HTTP/1.1\r\nHost: a\r\nX-API-KEY: ", r, sizeof(r),
			     up, sizeof(up)));
	if (!strstr(up, "x-client-id: alice\r\n") || !strstr(up, "GET /x HTTP/1.1\r\n"))
		fail_msg("the upstream got: %s", up);
	/* a 1024-byte key, percent-encoded in the query */
	char *p = h + sprintf(h, "GET /x?api_key=");
	for (int i = 0; i < 1024; i++)
		p += sprintf(p, "%%4C");
	strcpy(p, " HTTP/1.1\r\nHost: a");
	assert_true(exchange(h, r, sizeof(r), up, sizeof(up)));
	if (!strstr(up, "x-client-id: long\r\n"))
		fail_msg("the upstream got: %.200s", up);
	assert_int_equal(ak_stat(ARN_API_KEY_AUTH_allowed) - a0, 9);

	/* denials */
	denied("GET /x HTTP/1.1\r\nHost: a", 401);
	denied("GET /x HTTP/1.1\r\nHost: a\r\nX-API-KEY: k9", 401);
	denied("GET /x HTTP/1.1\r\nHost: a\r\nX-API-KEY: K1", 401);
	denied("GET /x HTTP/1.1\r\nHost: a\r\nX-API-KEY: k", 401);
	denied("GET /x?api_key= HTTP/1.1\r\nHost: a\r\nCookie: key=", 401);
	/* the first non-empty source decides: a wrong header, a right query */
	denied("GET /x?api_key=k1 HTTP/1.1\r\nHost: a\r\nX-API-KEY: nope", 401);
	/* 1025 bytes decoded: no key's */
	p = h + sprintf(h, "GET /x?api_key=");
	for (int i = 0; i < 1025; i++)
		*p++ = 'L';
	strcpy(p, " HTTP/1.1\r\nHost: a");
	denied(h, 401);
	/* /bob: alice is known but not allowed */
	denied("GET /bob HTTP/1.1\r\nHost: a\r\nX-API-KEY: k1", 403);
	assert_true(exchange("GET /bob HTTP/1.1\r\nHost: a\r\nX-API-KEY: k2", r, sizeof(r), up,
			     sizeof(up)));
	/* /other: its credentials and source, its forwarding (nothing hidden) */
	denied("GET /other HTTP/1.1\r\nHost: a\r\nX-API-KEY: k1", 401);
	denied("GET /other HTTP/1.1\r\nHost: a\r\nx-other: k1", 401);
	assert_true(exchange("GET /other HTTP/1.1\r\nHost: a\r\nx-other: k3", r, sizeof(r), up,
			     sizeof(up)));
	if (!strstr(up, "x-who: carol\r\n") || !strstr(up, "x-other: k3\r\n") ||
	    strstr(up, "x-client-id"))
		fail_msg("the upstream got: %s", up);
	/* /off: the filter is off */
	assert_true(exchange("GET /off HTTP/1.1\r\nHost: a", r, sizeof(r), up, sizeof(up)));
	assert_int_equal(ak_stat(ARN_API_KEY_AUTH_allowed) - a0, 11);
	assert_int_equal(ak_stat(ARN_API_KEY_AUTH_unauthorized) - u0, 9);
	assert_int_equal(ak_stat(ARN_API_KEY_AUTH_forbidden) - f0, 1);
	hh_end();
	char log[8192];
	log_take(log, sizeof(log));
	static const char want_head[] =
	    "200 via_upstream /x\n200 via_upstream /x\n200 via_upstream /x?a=1&b=%20\n"
	    "404 route_not_found *\n200 via_upstream /q\n200 via_upstream /x\n200 via_upstream /x\n"
	    "200 via_upstream /x\n200 via_upstream /x\n"
	    "401 missing_api_key /x\n401 unkonwn_api_key /x\n401 unkonwn_api_key /x\n"
	    "401 unkonwn_api_key /x\n401 missing_api_key /x?api_key=\n"
	    "401 unkonwn_api_key /x?api_key=k1\n";
	if (strncmp(log, want_head, sizeof(want_head) - 1) != 0)
		fail_msg("access log: %s", log);
	static const char want_tail[] =
	    "403 client_not_allowed /bob\n200 via_upstream /bob\n401 missing_api_key /other\n"
	    "401 unkonwn_api_key /other\n200 via_upstream /other\n200 via_upstream /off\n";
	size_t ll = strlen(log), tl = sizeof(want_tail) - 1;
	if (ll < tl || strcmp(log + ll - tl, want_tail) != 0)
		fail_msg("access log: %s", log);
}

/* No forwarding: nothing added, nothing hidden; no credentials or no key
 * sources at any level: Envoy's missing_credentials / missing_key_sources. */
static void test_api_key_auth_no_forwarding(void **state)
{
	(void)state;
	ak_begin("");
	char r[4096], up[4096];
	assert_true(exchange("GET /x?api_key=k1 HTTP/1.1\r\nHost: a\r\nCookie: key=k2", r,
			     sizeof(r), up, sizeof(up)));
	if (!strstr(up, "GET /x?api_key=k1 HTTP/1.1\r\n") || !strstr(up, "Cookie: key=k2\r\n") ||
	    strstr(up, "x-client-id"))
		fail_msg("the upstream got: %s", up);
	hh_end();
	char log[1024];
	log_take(log, sizeof(log));

	/* a filter with nothing (Envoy Gateway's is never so, but Envoy
	 * takes it) */
	static char json[4096];
	snprintf(log_path, sizeof(log_path), "/tmp/arn_test_apikey.%d.log", (int)getpid());
	static const char lst[] =
	    "{\"name\":\"dyn\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
	    "\"port_value\":82}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","
	    "\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.filters.network."
	    "http_connection_manager.v3.HttpConnectionManager\",\"stat_prefix\":\"ak\","
	    "\"access_log\":[{\"name\":\"f\",\"typed_config\":{\"@type\":\"type.googleapis.com/"
	    "envoy.extensions.access_loggers.file.v3.FileAccessLog\",\"path\":\"%s\",\"log_"
	    "format\":"
	    "{\"text_format\":\"%%RESPONSE_CODE%% %%RESPONSE_CODE_DETAILS%%\\n\"}}}],"
	    "\"route_config\":{\"name\":\"dyn\",\"virtual_hosts\":[{\"name\":\"all\",\"domains\":"
	    "[\"*\"],\"routes\":[{\"match\":{\"prefix\":\"/k\"},\"route\":{\"cluster\":\"web\"},"
	    "\"typed_per_filter_config\":{\"ak\":{" AT_(
		"api_key_auth.v3.ApiKeyAuthPerRoute") ",\"key_sources\":[{\"header\":\"k\"}]}}},"
						      "{\"match\":{\"prefix\":\"/"
						      "\"},\"route\":{\"cluster\":\"web\"}}]}]},"
						      "\"http_filters\":[{\"name\":\"ak\",\"typed_"
						      "config\":{" AT_(
							  "api_key_auth.v3.ApiKeyAuth") "}},{"
											"\"name\":"
											"\"envoy."
											"filters."
											"http."
											"router\","
											"\"typed_"
											"config\":"
											"{" AT_(
											    "ro"
											    "ut"
											    "er"
											    ".v"
											    "3."
											    "Ro"
											    "ut"
											    "e"
											    "r") "}"
												 "}"
												 "]"
												 "}"
												 "}"
												 "]"
												 "}"
												 "]"
												 "}";
	snprintf(json, sizeof(json), lst, log_path);
	hh_begin(1);
	hh_apply(ARN_TYPE_URL_LISTENER, json);
	hh_cfg_changed = true;
	hh_open(0, 82);
	hh_settle();
	denied("GET /x HTTP/1.1\r\nHost: a\r\nk: k1", 401);
	denied("GET /k HTTP/1.1\r\nHost: a\r\nk: k1", 401);
	hh_end();
	log_take(log, sizeof(log));
	if (strcmp(log, "401 missing_key_sources\n401 missing_credentials\n") != 0)
		fail_msg("access log: %s", log);
}

/* Envoy Gateway's shape (api_key_auth.go): the filter disabled in the
 * connection manager, on for a route by its ApiKeyAuthPerRoute (its own
 * credentials, sources and forwarding with a query hidden). */
static void test_api_key_auth_envoy_gateway(void **state)
{
	(void)state;
	static char json[8192];
	static const char
	    lst[] =
		"{\"name\":\"dyn\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
		"\"port_value\":82}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","
		"\"typed_config\":{\"@type\":\"type.googleapis.com/"
		"envoy.extensions.filters.network."
		"http_connection_manager.v3.HttpConnectionManager\",\"stat_prefix\":\"ak\","
		"\"route_config\":{\"name\":\"dyn\",\"virtual_hosts\":[{\"name\":\"all\","
		"\"domains\":"
		"[\"*\"],\"routes\":[{\"match\":{\"prefix\":\"/"
		"secure\"},\"route\":{\"cluster\":\"web\"},"
		"\"typed_per_filter_config\":{\"envoy.filters.http.api_key_auth\":{" AT_(
		    "api_"
		    "key_"
		    "auth."
		    "v3."
		    "ApiKe"
		    "yAuth"
		    "PerRo"
		    "ute") ",\"credentials\":[" CRED("s3cr3t",
						     "client1") "],\"key_sources\":[{"
								"\"header\":\"x-api-key\"},{"
								"\"query\":\"key\"}],"
								"\"forwarding\":{"
								"\"header\":\"x-client-id\","
								"\"hide_credentials\":true}"
								"}}},"
								"{\"match\":{\"prefix\":\"/"
								"\"},\"route\":{\"cluster\":"
								"\"web\"}}]}]},"
								"\"http_filters\":[{\"name\":"
								"\"envoy.filters.http.api_"
								"key_auth\",\"disabled\":true,"
								"\"typed_config\":{" AT_(
								    "api_"
								    "key_"
								    "auth."
								    "v3."
								    "ApiKe"
								    "yAut"
								    "h") ",\"credentials\":"
									 "[" CRED(
									     "s3cr3t",
									     "client1") "]"
											","
											"\"key_"
											"s"
											"o"
											"u"
											"r"
											"c"
											"e"
											"s"
											"\":[{"
											"\"header\""
											":\"x-"
											"a"
											"p"
											"i"
											"-"
											"k"
											"e"
											"y"
											"\"},{"
											"\"query\":"
											"\"key\"}],"
											"\"forwardi"
											"ng\":"
											"{"
											"\"header\""
											":"
											"\"x-"
											"client-"
											"i"
											"d"
											"\",\"hide_"
											"c"
											"r"
											"e"
											"d"
											"e"
											"n"
											"t"
											"i"
											"a"
											"l"
											"s"
											"\":"
											"t"
											"r"
											"u"
											"e"
											"}"
											"}"
											"}"
											","
											"{"
											"\"name\":"
											"\"envoy."
											"f"
											"i"
											"l"
											"t"
											"e"
											"r"
											"s"
											"."
											"h"
											"t"
											"t"
											"p"
											"."
											"r"
											"o"
											"u"
											"t"
											"e"
											"r"
											"\","
											"\"typed_"
											"c"
											"o"
											"n"
											"f"
											"i"
											"g"
											"\":{" AT_(
											    "router"
											    ".v3."
											    "Route"
											    "r") "}"
												 "}"
												 "]"
												 "}"
												 "}"
												 "]"
												 "}"
												 "]"
												 "}";
	snprintf(json, sizeof(json), "%s", lst);
	hh_begin(1);
	hh_apply(ARN_TYPE_URL_LISTENER, json);
	hh_cfg_changed = true;
	hh_open(0, 82);
	hh_settle();
	char r[4096], up[4096];
	/* the filter is off where no route turns it on */
	assert_true(exchange("GET /open HTTP/1.1\r\nHost: a", r, sizeof(r), up, sizeof(up)));
	denied("GET /secure HTTP/1.1\r\nHost: a", 401);
	assert_true(exchange("GET /secure/a?key=s3cr3t&x=1 HTTP/1.1\r\nHost: a", r, sizeof(r), up,
			     sizeof(up)));
	if (!strstr(up, "GET /secure/a?x=1 HTTP/1.1\r\n") ||
	    !strstr(up, "x-client-id: client1\r\n"))
		fail_msg("the upstream got: %s", up);
	hh_end();
}

/* CONNECT has no path (authority-form): Envoy's GHSA-47vj-9r25-wv5j, a
 * path-less request authenticated by a header while hide_credentials has
 * a query source to clean, crashed it. Here the filter allows it (the
 * query is not looked for) and the router refuses CONNECT (403). */
static void test_api_key_auth_connect(void **state)
{
	(void)state;
	ak_begin(",\"forwarding\":{\"header\":\"X-Client-Id\",\"hide_credentials\":true}");
	uint64_t a0 = ak_stat(ARN_API_KEY_AUTH_allowed);
	char r[4096];
	if (exchange("CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\nX-API-KEY: k1", r, sizeof(r), NULL,
		     0) ||
	    !strstr(r, "HTTP/1.1 403 Forbidden\r\n"))
		fail_msg("CONNECT: %s", r);
	assert_int_equal(ak_stat(ARN_API_KEY_AUTH_allowed) - a0, 1);
	hh_end();
	char log[1024];
	log_take(log, sizeof(log));
}

/* ---- an HTTP/2 client (nghttp2) ---------------------------------------------------------- */

#include "hh_h2c.h"

/* Over an HTTP/2 client: the key in a query (:path rewritten without it
 * for the HTTP/1.1 upstream) and in two cookie fields (RFC 9113 8.2.3's
 * split crumbs; the others joined in one line), the client id
 * forwarded; an unknown key 401 with Envoy's body, never upstream. */
static void test_http2_api_key_auth(void **state)
{
	(void)state;
	hh_clients_h2 = true;
	ak_begin(",\"forwarding\":{\"header\":\"X-Client-Id\",\"hide_credentials\":true}");
	static struct h2c c;
	nghttp2_session *s = h2c_open(&c);
#define NV(a, b)                                                                                   \
	{(uint8_t *)(a), (uint8_t *)(b), sizeof(a) - 1, sizeof(b) - 1, NGHTTP2_NV_FLAG_NONE}
	nghttp2_nv nv0[] = {NV(":method", "GET"), NV(":path", "/t"), NV(":scheme", "http"),
			    NV(":authority", "a"), NV("x-api-key", "nope")};
	assert_true(nghttp2_submit_request(s, NULL, nv0, 5, NULL, NULL) > 0);
	h2c_pump(s, &c);
	assert_true(c.closed);
	assert_null(hh_upstream(0));
	c.head[c.hl] = 0;
	if (!strstr(c.head, ":status: 401\n"))
		fail_msg("the head: %s", c.head);
	c.closed = false;
	c.hl = 0;
	nghttp2_nv nv[] = {NV(":method", "GET"),	NV(":path", "/t?x=1&api_key=k1"),
			   NV(":scheme", "http"),	NV(":authority", "a"),
			   NV("cookie", "a=1; key=k2"), NV("cookie", "b=2")};
#undef NV
	assert_true(nghttp2_submit_request(s, NULL, nv, 6, NULL, NULL) > 0);
	h2c_pump(s, &c);
	struct peer *u = hh_upstream(0);
	assert_non_null(u);
	/* the query's key comes first: alice */
#define HAS(t) (memmem(u->log, u->log_len, t, sizeof(t) - 1) != NULL)
	if (!HAS("GET /t?x=1 HTTP/1.1\r\n") || !HAS("x-client-id: alice\r\n") ||
	    !HAS("cookie: a=1; b=2\r\n") || HAS("k1") || HAS("k2"))
		fail_msg("the upstream got: %.*s", (int)u->log_len, u->log);
#undef HAS
	static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	hh_send(u, ok, sizeof(ok) - 1, 0);
	for (int i = 0; i < 20 && !c.closed; i++)
		h2c_pump(s, &c);
	assert_true(c.closed);
	c.head[c.hl] = 0;
	if (!strstr(c.head, ":status: 200\n"))
		fail_msg("the head: %s", c.head);
	nghttp2_session_del(s);
	hh_end();
	hh_clients_h2 = false;
	char log[1024];
	log_take(log, sizeof(log));
	if (strcmp(log, "401 unkonwn_api_key /t\n200 via_upstream /t?x=1\n") != 0)
		fail_msg("access log: %s", log);
}

static void no_own(struct hh_rd *r, uint8_t op)
{
	(void)r;
	(void)op;
}

/* fuzz_hcm's "dyn" listener (HH_LDYN) runs api_key_auth as Envoy Gateway
 * writes it (HH_FILTER_AK: disabled, on for /ak): each source's key,
 * the key hidden, the forged client id replaced; bob 403 on /ak; no key
 * 401; elsewhere the filter is off. Then the seed dyn_api_key replayed
 * as the fuzzer plays it reaches the filter the same way (the counters
 * move as its requests say). */
static void test_api_key_auth_fuzz_listener(void **state)
{
	(void)state;
	uint64_t a0 = 0, u0 = 0, f0 = 0;
	hh_begin(1);
	hh_config(0);
	hh_open(0, 82);
	hh_settle();
	char r[4096], up[4096];
	assert_true(exchange("GET /ak HTTP/1.1\r\nHost: a\r\nx-api-key: Bearer k1\r\n"
			     "x-client-id: forged",
			     r, sizeof(r), up, sizeof(up)));
	if (!strstr(up, "x-client-id: alice\r\n") || strstr(up, "forged") || strstr(up, "k1"))
		fail_msg("the upstream got: %s", up);
	assert_true(exchange("GET /ak/q?a=1&api%5fkey=%6b1&b HTTP/1.1\r\nHost: a", r, sizeof(r), up,
			     sizeof(up)));
	if (!strstr(up, "GET /ak/q?a=1&b HTTP/1.1\r\n"))
		fail_msg("the upstream got: %s", up);
	assert_true(exchange("GET /ak HTTP/1.1\r\nHost: a\r\nCookie: x=1; ak=\"k1\"; y\r\n"
			     "Cookie: z=2",
			     r, sizeof(r), up, sizeof(up)));
	if (!strstr(up, "cookie: x=1; z=2\r\n") || strstr(up, "k1"))
		fail_msg("the upstream got: %s", up);
	if (exchange("GET /ak HTTP/1.1\r\nHost: a\r\nx-api-key: k2", r, sizeof(r), NULL, 0) ||
	    !strstr(r, "HTTP/1.1 403 Forbidden\r\n"))
		fail_msg("bob on /ak: %s", r);
	if (exchange("GET /ak HTTP/1.1\r\nHost: a", r, sizeof(r), NULL, 0) ||
	    !strstr(r, "HTTP/1.1 401 Unauthorized\r\n"))
		fail_msg("no key on /ak: %s", r);
	assert_true(exchange("GET /x HTTP/1.1\r\nHost: a\r\nx-api-key: nope", r, sizeof(r), up,
			     sizeof(up)));
	struct arn_stats_scope *sc = arn_stats_scope_get_named(&arn_stats_api_key_auth_schema,
							       "http.dyn.api_key_auth", NULL, NULL);
	assert_non_null(sc);
	assert_int_equal(arn_stats_counter_value(sc, ARN_API_KEY_AUTH_allowed), 3);
	assert_int_equal(arn_stats_counter_value(sc, ARN_API_KEY_AUTH_forbidden), 1);
	assert_int_equal(arn_stats_counter_value(sc, ARN_API_KEY_AUTH_unauthorized), 1);
	a0 = arn_stats_counter_value(sc, ARN_API_KEY_AUTH_allowed);
	u0 = arn_stats_counter_value(sc, ARN_API_KEY_AUTH_unauthorized);
	f0 = arn_stats_counter_value(sc, ARN_API_KEY_AUTH_forbidden);
	hh_end();

	FILE *f = fopen("tests/http/corpus/hcm/dyn_api_key", "rb");
	assert_non_null(f);
	static uint8_t seed[4096];
	size_t n = fread(seed, 1, sizeof(seed), f);
	fclose(f);
	assert_true(n > 1 && n < sizeof(seed));
	hh_fuzz_run(seed, n, no_own);
	assert_int_equal(arn_stats_counter_value(sc, ARN_API_KEY_AUTH_allowed) - a0, 3);
	assert_int_equal(arn_stats_counter_value(sc, ARN_API_KEY_AUTH_forbidden) - f0, 1);
	assert_int_equal(arn_stats_counter_value(sc, ARN_API_KEY_AUTH_unauthorized) - u0, 1);
	arn_stats_scope_put(sc);
}

static uint64_t ci_stat(unsigned id)
{
	struct arn_stats_scope *sc = arn_stats_scope_get_named(
	    &arn_stats_cred_injector_schema, "http.ci.credential_injector", NULL, NULL);
	assert_non_null(sc);
	uint64_t v = arn_stats_counter_value(sc, id);
	arn_stats_scope_put(sc);
	return v;
}

static void ci_begin(const char *secret, const char *hdr, const char *fields)
{
	static char json[8192];
	snprintf(json, sizeof(json), CI_LISTENER, hdr, fields);
	hh_begin(1);
	hh_apply(ARN_TYPE_URL_SECRET, secret);
	hh_apply(ARN_TYPE_URL_LISTENER, json);
	hh_cfg_changed = true;
	hh_open(0, 82);
	hh_settle();
}

/* credential_injector with an SDS generic_secret (Envoy Gateway's
 * HTTPRouteFilter credentialInjection): the secret's bytes go upstream in
 * the header (authorization by default); a client's own stays unless
 * overwrite; a secret update reaches the next request; a secret that
 * cannot be a header value (CR, LF) is none: 401
 * failed_to_inject_credential, or the request goes on without it with
 * allow_request_without_credential. Refused before (no generic_secret). */
static void test_credential_injector(void **state)
{
	(void)state;
	char r[4096], up[4096];
	ci_begin(CI_SECRET("Bearer s3cr3t"), "", "");
	assert_true(exchange("GET /a HTTP/1.1\r\nHost: a", r, sizeof(r), up, sizeof(up)));
	if (!strstr(up, "\r\nauthorization: Bearer s3cr3t\r\n"))
		fail_msg("the upstream got: %s", up);
	/* the client's own stays (overwrite false) */
	assert_true(exchange("GET /a HTTP/1.1\r\nHost: a\r\nAuthorization: Basic bWU6cHc=", r,
			     sizeof(r), up, sizeof(up)));
	if (!strstr(up, "Authorization: Basic bWU6cHc=\r\n") || strstr(up, "s3cr3t"))
		fail_msg("the upstream got: %s", up);
	assert_int_equal(ci_stat(ARN_CRED_INJECTOR_injected), 1);
	assert_int_equal(ci_stat(ARN_CRED_INJECTOR_already_exists), 1);
	/* a secret update reaches the next request */
	hh_apply(ARN_TYPE_URL_SECRET, CI_SECRET("Bearer n3w"));
	hh_settle();
	assert_true(exchange("GET /a HTTP/1.1\r\nHost: a", r, sizeof(r), up, sizeof(up)));
	if (!strstr(up, "\r\nauthorization: Bearer n3w\r\n"))
		fail_msg("the upstream got: %s", up);
	/* a value that cannot be a header's: none, 401 */
	hh_apply(ARN_TYPE_URL_SECRET, CI_SECRET("Bearer a\\r\\nx-evil: 1"));
	hh_settle();
	assert_false(exchange("GET /a HTTP/1.1\r\nHost: a", r, sizeof(r), NULL, 0));
	if (!strstr(r, "HTTP/1.1 401 Unauthorized\r\n") ||
	    !strstr(r, "Failed to inject credential."))
		fail_msg("the client got: %s", r);
	assert_int_equal(ci_stat(ARN_CRED_INJECTOR_failed), 1);
	hh_end();

	/* overwrite, another header; allow_request_without_credential */
	ci_begin(CI_SECRET("k-1"), ",\"header\":\"X-Api-Token\"",
		 ",\"overwrite\":true,\"allow_request_without_credential\":true");
	assert_true(exchange("GET /a HTTP/1.1\r\nHost: a\r\nx-api-token: mine", r, sizeof(r), up,
			     sizeof(up)));
	if (!strstr(up, "\r\nx-api-token: k-1\r\n") || strstr(up, "mine"))
		fail_msg("the upstream got: %s", up);
	hh_apply(ARN_TYPE_URL_SECRET, CI_SECRET("bad\\nvalue"));
	hh_settle();
	assert_true(exchange("GET /a HTTP/1.1\r\nHost: a", r, sizeof(r), up, sizeof(up)));
	if (strstr(up, "x-api-token") || strstr(up, "value"))
		fail_msg("the upstream got: %s", up);
	assert_int_equal(ci_stat(ARN_CRED_INJECTOR_failed), 1);
	hh_end();
}

int main(void)
{
	hh_init(false);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_api_key_auth),
	    cmocka_unit_test(test_api_key_auth_no_forwarding),
	    cmocka_unit_test(test_api_key_auth_envoy_gateway),
	    cmocka_unit_test(test_api_key_auth_connect),
	    cmocka_unit_test(test_api_key_auth_fuzz_listener),
	    cmocka_unit_test(test_http2_api_key_auth),
	    cmocka_unit_test(test_credential_injector),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
