/*
 * x-request-id as Envoy's connection manager makes it: at the head
 * (mutateRequestHeaders), so that a request answered locally (no route, a
 * filter's reply) has one for its access log, its span and its response;
 * and on the response (mutateResponseHeaders) with
 * always_set_request_id_in_response or an internal request's
 * x-envoy-force-trace, upstream responses and local replies alike. End to
 * end on the real TCP stack over the fake lib/net, with hcm_harness.h's
 * peers, as test_router_edits_kept.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "arn_access_log.h"
#include "hcm_harness.h"

#define OK5 "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"

/* clang-format off */
/* Listener "dyn" on port 82 with @p extra (JSON members and a comma) in
 * its connection manager and the filters @p f (JSON objects, each with a
 * comma) before its router: /a goes to cluster web, so does /m with an
 * x-request-id (a header matcher), anything else is 404. */
#define LSN_WITH(f)                                                                                \
	"{\"name\":\"dyn\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","              \
	"\"port_value\":82}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","                  \
	"\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.filters.network."      \
	"http_connection_manager.v3.HttpConnectionManager\",\"stat_prefix\":\"rid\",%s"            \
	"\"access_log\":[{\"name\":\"f\",\"typed_config\":{\"@type\":\"type.googleapis.com/"       \
	"envoy.extensions.access_loggers.file.v3.FileAccessLog\",\"path\":\"%s\",\"log_format\":"  \
	"{\"text_format_source\":{\"inline_string\":\"%%RESPONSE_CODE%% %%REQ(X-REQUEST-ID)%%\\n\"}}}}],"\
	"\"route_config\":{\"name\":\"dyn\",\"virtual_hosts\":[{\"name\":\"all\",\"domains\":"     \
	"[\"*\"],\"routes\":[{\"match\":{\"prefix\":\"/a\"},\"route\":{\"cluster\":\"web\"}},"     \
	"{\"match\":{\"prefix\":\"/m\",\"headers\":[{\"name\":\"x-request-id\","                 \
	"\"present_match\":true}]},\"route\":{\"cluster\":\"web\"}}]}]},"                          \
	"\"http_filters\":[" f "{\"name\":\"envoy.filters.http.router\","                         \
	"\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.filters.http."         \
	"router.v3.Router\"}}]}}]}]}"
#define LSN LSN_WITH("")
/* A Lua filter that reads the request's x-request-id as every filter
 * reads the head: it sends it on as x-seen, or answers /deny with 403
 * and it as the body. */
#define LUA_SEEN                                                                                   \
	"{\"name\":\"lua\",\"typed_config\":{\"@type\":\"type.googleapis.com/"                    \
	"envoy.extensions.filters.http.lua.v3.Lua\",\"default_source_code\":{\"inline_string\":"     \
	"\"function envoy_on_request(h) local hd = h:headers() "                                   \
	"local id = hd:get('x-request-id') or 'none' "                                             \
	"if hd:get(':path') == '/deny' then h:respond({[':status'] = '403'}, id) return end "       \
	"hd:add('x-seen', id) end\"}}},"
#define ALWAYS "\"always_set_request_id_in_response\":true,"
#define EDGE "\"use_remote_address\":true,"
/* the harness's client (198.18.0.100) internal, or not */
#define INTERNAL                                                                                   \
	EDGE "\"internal_address_config\":{\"cidr_ranges\":[{\"address_prefix\":\"198.18.0.0\","   \
	"\"prefix_len\":16}]},"
#define EXTERNAL                                                                                   \
	EDGE "\"internal_address_config\":{\"cidr_ranges\":[{\"address_prefix\":\"10.0.0.0\","     \
	"\"prefix_len\":8}]},"
/* RBAC (ALLOW) that lets through only a request with an x-request-id,
 * and (DENY) one that refuses a request whose id is "evil", by header
 * matchers as Envoy's Permission.header. */
#define RBAC_(action, hm)                                                                          \
	"{\"name\":\"rbac\",\"typed_config\":{\"@type\":\"type.googleapis.com/"                   \
	"envoy.extensions.filters.http.rbac.v3.RBAC\",\"rules\":{\"action\":\"" action "\","       \
	"\"policies\":{\"id\":{\"permissions\":[{\"header\":{\"name\":\"x-request-id\","       \
	hm "}}],\"principals\":[{\"any\":true}]}}}}},"
#define RBAC_NEEDS_ID RBAC_("ALLOW", "\"present_match\":true")
#define RBAC_NOT_EVIL RBAC_("DENY", "\"string_match\":{\"exact\":\"evil\"}")
/* clang-format on */

static char log_path[64];

/* A run with listener "dyn" (@p extra in its connection manager), client
 * 0 connected to it. */
enum chain { ROUTER = 0, WITH_LUA, WITH_RBAC_NEEDS_ID, WITH_RBAC_NOT_EVIL };

static void start_with(enum chain f, const char *extra)
{
	char b[8192];
	snprintf(log_path, sizeof(log_path), "/tmp/arn_test_rid.%d.log", (int)getpid());
	unlink(log_path);
	hh_begin(1);
	switch (f) {
	case WITH_LUA:
		snprintf(b, sizeof(b), LSN_WITH(LUA_SEEN), extra, log_path);
		break;
	case WITH_RBAC_NEEDS_ID:
		snprintf(b, sizeof(b), LSN_WITH(RBAC_NEEDS_ID), extra, log_path);
		break;
	case WITH_RBAC_NOT_EVIL:
		snprintf(b, sizeof(b), LSN_WITH(RBAC_NOT_EVIL), extra, log_path);
		break;
	default:
		snprintf(b, sizeof(b), LSN, extra, log_path);
	}
	hh_apply(ARN_TYPE_URL_LISTENER, b);
	hh_cfg_changed = true; /* the next run puts listener "dyn" back */
	hh_settle();
	hh_open(0, 82);
	hh_settle();
}

static void start(const char *extra)
{
	start_with(ROUTER, extra);
}

/* The same with the Lua filter LUA_SEEN before the router. */
static void start_lua(const char *extra)
{
	start_with(WITH_LUA, extra);
}

/* What the upstream got for the last request, and what the client got. */
static char up[PEER_LOG + 1], down[PEER_LOG + 1];

/* Send @p req on client 0, answered by the upstream that gets it (if
 * one does): the client's answer in down, the upstream's request in up. */
static void exchange(const char *req)
{
	uint32_t len0[N_PEERS];
	for (int i = 0; i < N_PEERS; i++)
		len0[i] = peers[i].log_len;
	struct peer *c = hh_client(0);
	assert_non_null(c);
	hh_send(c, req, (uint32_t)strlen(req), 0);
	hh_settle();
	up[0] = 0;
	for (unsigned u = 0; u < N_UPSTREAMS; u++) {
		struct peer *p = hh_upstream(u);
		if (!p || p->log_len == len0[p - peers])
			continue;
		uint32_t k = p->log_len - len0[p - peers];
		memcpy(up, p->log + len0[p - peers], k);
		up[k] = 0;
		hh_send(p, OK5, (uint32_t)strlen(OK5), 0);
		hh_settle();
		break;
	}
	uint32_t k = c->log_len - len0[c - peers];
	memcpy(down, c->log + len0[c - peers], k);
	down[k] = 0;
}

/* The value of @p name in head @p h (after "\r\n"), into @p v (NUL
 * terminated, 64 bytes): false when absent. */
static bool field(const char *h, const char *name, char v[64])
{
	char l[64];
	snprintf(l, sizeof(l), "\r\n%s: ", name);
	const char *at = strstr(h, l);
	if (!at)
		return false;
	at += strlen(l);
	size_t n = strcspn(at, "\r");
	if (n >= 64)
		n = 63;
	memcpy(v, at, n);
	v[n] = 0;
	return true;
}

/* Is @p v a generated id: a UUID 4 (8-4-4-4-12 lowercase hex)? */
static bool is_uuid(const char *v)
{
	if (strlen(v) != 36 || v[14] != '4')
		return false;
	for (int i = 0; i < 36; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? v[i] != '-'
			 : !((v[i] >= '0' && v[i] <= '9') || (v[i] >= 'a' && v[i] <= 'f')))
			return false;
	}
	return true;
}

/* The access log's lines, once drained (the file goes). */
static char logged[4096];
static const char *read_log(void)
{
	arn_access_log_drain();
	FILE *f = fopen(log_path, "r");
	assert_non_null(f);
	size_t n = fread(logged, 1, sizeof(logged) - 1, f);
	fclose(f);
	unlink(log_path);
	logged[n] = 0;
	return logged;
}

#define GET(path) "GET " path " HTTP/1.1\r\nHost: a\r\n\r\n"
#define GET_ID(path, id) "GET " path " HTTP/1.1\r\nHost: a\r\nx-request-id: " id "\r\n\r\n"

/* A 404 (no route) is logged with the id generated for it, as Envoy's
 * mutateRequestHeaders gives every request at its head (the default
 * generate_request_id); one that brought its own, with its own. */
static void test_local_reply_is_logged_with_a_request_id(void **state)
{
	(void)state;
	start("");
	exchange(GET("/none"));
	assert_non_null(strstr(down, "HTTP/1.1 404"));
	exchange(GET_ID("/none", "client-id-1"));
	assert_non_null(strstr(down, "HTTP/1.1 404"));
	hh_end();
	const char *l = read_log();
	char id[64];
	if (sscanf(l, "404 %63s\n", id) != 1 || !is_uuid(id))
		fail_msg("the 404's log line is not a generated id: %s", l);
	if (!strstr(l, "\n404 client-id-1\n"))
		fail_msg("the second 404 is not logged with its own id: %s", l);
	/* without the option no response carries it */
	char v[64];
	assert_false(field(down, "x-request-id", v));
}

/* always_set_request_id_in_response: the upstream's response and a local
 * reply carry the id the request has, generated (the one the upstream
 * got) or its own. */
static void test_always_set_request_id_in_response(void **state)
{
	(void)state;
	char v[64], u[64];
	start(ALWAYS);
	exchange(GET("/a"));
	assert_non_null(strstr(down, "HTTP/1.1 200"));
	if (!field(up, "x-request-id", u) || !is_uuid(u))
		fail_msg("the upstream got no generated id:\n%s", up);
	if (!field(down, "x-request-id", v) || strcmp(u, v) != 0)
		fail_msg("the response does not carry the upstream's id %s:\n%s", u, down);
	exchange(GET_ID("/a", "client-id-2"));
	if (!field(down, "x-request-id", v) || strcmp(v, "client-id-2") != 0)
		fail_msg("the response does not carry the client's id:\n%s", down);
	exchange(GET("/none"));
	assert_non_null(strstr(down, "HTTP/1.1 404"));
	if (!field(down, "x-request-id", v) || !is_uuid(v))
		fail_msg("the 404 carries no generated id:\n%s", down);
	exchange(GET_ID("/none", "client-id-3"));
	if (!field(down, "x-request-id", v) || strcmp(v, "client-id-3") != 0)
		fail_msg("the 404 does not carry the client's id:\n%s", down);
	hh_end();
	const char *l = read_log();
	char want[96];
	snprintf(want, sizeof(want), "200 %s\n", u);
	if (strncmp(l, want, strlen(want)) != 0)
		fail_msg("the log's first line is not the upstream's id %s: %s", u, l);
}

/* At the edge the client's id is replaced by a generated one unless
 * preserve_external_request_id: the response carries whichever the
 * request has (the upstream got), for a local reply too. */
static void test_edge_id_in_response_follows_preserve(void **state)
{
	(void)state;
	char v[64], u[64];
	start(ALWAYS EXTERNAL "\"preserve_external_request_id\":true,");
	exchange(GET_ID("/a", "client-id-4"));
	if (!field(up, "x-request-id", u) || strcmp(u, "client-id-4") != 0)
		fail_msg("the upstream did not get the client's id:\n%s", up);
	if (!field(down, "x-request-id", v) || strcmp(v, "client-id-4") != 0)
		fail_msg("the response does not carry the client's id:\n%s", down);
	exchange(GET_ID("/none", "client-id-5"));
	if (!field(down, "x-request-id", v) || strcmp(v, "client-id-5") != 0)
		fail_msg("the 404 does not carry the client's id:\n%s", down);
	hh_end();

	start(ALWAYS EXTERNAL);
	exchange(GET_ID("/a", "client-id-6"));
	if (!field(up, "x-request-id", u) || !is_uuid(u))
		fail_msg("the upstream did not get a generated id:\n%s", up);
	if (!field(down, "x-request-id", v) || strcmp(v, u) != 0)
		fail_msg("the response does not carry the upstream's id %s:\n%s", u, down);
	exchange(GET_ID("/none", "client-id-7"));
	if (!field(down, "x-request-id", v) || !is_uuid(v))
		fail_msg("the 404 does not carry a generated id:\n%s", down);
	hh_end();
	read_log();
}

/* Without the option, neither an upstream's response nor a local reply
 * gets the id (the upstream's own passes as it is). */
static void test_no_request_id_in_response_without_the_option(void **state)
{
	(void)state;
	char v[64];
	start("");
	exchange(GET("/a"));
	assert_non_null(strstr(down, "HTTP/1.1 200"));
	assert_true(field(up, "x-request-id", v));
	assert_false(field(down, "x-request-id", v));
	exchange(GET_ID("/none", "client-id-8"));
	assert_false(field(down, "x-request-id", v));
	hh_end();
	read_log();
}

/* x-envoy-force-trace on an internal request puts its id on the response
 * (Envoy's mutateResponseHeaders); an external request's is taken out
 * with the other x-envoy-* (cleanInternalHeaders), and puts none. */
static void test_force_trace_sets_the_id_on_an_internal_request(void **state)
{
	(void)state;
	char v[64], u[64];
#define FORCE(path) "GET " path " HTTP/1.1\r\nHost: a\r\nx-envoy-force-trace: true\r\n\r\n"
	start(INTERNAL);
	exchange(FORCE("/a"));
	if (!field(up, "x-request-id", u) || !is_uuid(u))
		fail_msg("the upstream got no generated id:\n%s", up);
	if (!field(down, "x-request-id", v) || strcmp(u, v) != 0)
		fail_msg("the response does not carry the upstream's id %s:\n%s", u, down);
	exchange(FORCE("/none"));
	if (!field(down, "x-request-id", v) || !is_uuid(v))
		fail_msg("the 404 carries no generated id:\n%s", down);
	/* the next request of the connection without it: none */
	exchange(GET("/a"));
	assert_false(field(down, "x-request-id", v));
	hh_end();

	start(EXTERNAL);
	exchange(FORCE("/a"));
	assert_non_null(strstr(down, "HTTP/1.1 200"));
	assert_null(strstr(up, "x-envoy-force-trace"));
	assert_false(field(down, "x-request-id", v));
	exchange(FORCE("/none"));
	assert_false(field(down, "x-request-id", v));
	hh_end();
	read_log();
}

/* How many lines named @p name head @p h has. */
static int lines(const char *h, const char *name)
{
	char l[64];
	snprintf(l, sizeof(l), "\r\n%s: ", name);
	int n = 0;
	for (const char *at = strstr(h, l); at; at = strstr(at + 1, l))
		n++;
	return n;
}

/* The body of response @p r (after its head), NUL terminated. */
static const char *body_of(const char *r)
{
	const char *b = strstr(r, "\r\n\r\n");
	return b ? b + 4 : "";
}

/* Envoy's mutateRequestHeaders gives a request its x-request-id before
 * any filter runs: a filter (Lua's headers():get, as ext_authz's check
 * and ext_proc's headers read the head) sees the generated id, and it is
 * the one the upstream gets, the response carries
 * (always_set_request_id_in_response) and the access log writes. A
 * filter's own reply carries the id the filter saw. On one keep-alive
 * connection each request gets its own (the router's kept edits). Fails
 * before: the filter saw none ("none"), the id being made after it. */
static void test_filter_sees_the_generated_id(void **state)
{
	(void)state;
	char v[64], u[64], seen[64], first[64];
	start_lua(ALWAYS);
	exchange(GET("/a"));
	assert_non_null(strstr(down, "HTTP/1.1 200"));
	if (!field(up, "x-request-id", u) || !is_uuid(u))
		fail_msg("the upstream got no generated id:\n%s", up);
	if (!field(up, "x-seen", seen) || strcmp(seen, u) != 0)
		fail_msg("the filter did not see the upstream's id %s:\n%s", u, up);
	assert_int_equal(lines(up, "x-request-id"), 1);
	if (!field(down, "x-request-id", v) || strcmp(v, u) != 0)
		fail_msg("the response does not carry the upstream's id %s:\n%s", u, down);
	strcpy(first, u);
	/* the next request of the connection: an id of its own, seen */
	exchange(GET("/a"));
	if (!field(up, "x-request-id", u) || !is_uuid(u) || strcmp(u, first) == 0)
		fail_msg("the second request got no id of its own:\n%s", up);
	if (!field(up, "x-seen", seen) || strcmp(seen, u) != 0)
		fail_msg("the filter did not see the second upstream id %s:\n%s", u, up);
	/* the filter's reply: the id it saw is the reply's */
	exchange(GET("/deny"));
	assert_non_null(strstr(down, "HTTP/1.1 403"));
	if (!is_uuid(body_of(down)))
		fail_msg("the filter saw no generated id before its reply:\n%s", down);
	if (!field(down, "x-request-id", v) || strcmp(v, body_of(down)) != 0)
		fail_msg("the 403 does not carry the id the filter saw:\n%s", down);
	hh_end();
	const char *l = read_log();
	char want[256];
	snprintf(want, sizeof(want), "200 %s\n200 %s\n403 %s\n", first, u, v);
	if (strcmp(l, want) != 0)
		fail_msg("the log is not the ids the filter saw:\n%s\nwanted\n%s", l, want);
}

/* At the edge without preserve_external_request_id, the client's id is
 * replaced before any filter reads the head (every line of it: Envoy's
 * setRequestId); with preserve_external_request_id it is kept, and so is
 * an internal request's. Fails before: the filter saw the client's. */
static void test_filter_sees_the_edge_id(void **state)
{
	(void)state;
	char u[64], seen[64];
	start_lua(EXTERNAL);
	exchange("GET /a HTTP/1.1\r\nHost: a\r\nx-request-id: client-1\r\nx-b: 1\r\n"
		 "x-request-id: client-2\r\n\r\n");
	assert_non_null(strstr(down, "HTTP/1.1 200"));
	if (!field(up, "x-request-id", u) || !is_uuid(u))
		fail_msg("the upstream did not get a generated id:\n%s", up);
	assert_int_equal(lines(up, "x-request-id"), 1);
	assert_non_null(strstr(up, "\r\nx-b: 1\r\n"));
	if (!field(up, "x-seen", seen) || strcmp(seen, u) != 0)
		fail_msg("the filter did not see the upstream's id %s:\n%s", u, up);
	hh_end();

	start_lua(EXTERNAL "\"preserve_external_request_id\":true,");
	exchange(GET_ID("/a", "client-3"));
	if (!field(up, "x-request-id", u) || strcmp(u, "client-3") != 0)
		fail_msg("the upstream did not get the client's id:\n%s", up);
	if (!field(up, "x-seen", seen) || strcmp(seen, "client-3") != 0)
		fail_msg("the filter did not see the client's id:\n%s", up);
	hh_end();

	start_lua(INTERNAL);
	exchange(GET_ID("/a", "client-4"));
	if (!field(up, "x-request-id", u) || strcmp(u, "client-4") != 0)
		fail_msg("the upstream did not get the internal request's id:\n%s", up);
	if (!field(up, "x-seen", seen) || strcmp(seen, "client-4") != 0)
		fail_msg("the filter did not see the internal request's id:\n%s", up);
	assert_int_equal(lines(up, "x-request-id"), 1);
	hh_end();
	read_log();
}

/* A route's header matcher sees the generated id too (Envoy routes after
 * mutateRequestHeaders), with no filter but the router: /m matches only
 * a request with an x-request-id. Fails before: 404. */
static void test_route_matcher_sees_the_generated_id(void **state)
{
	(void)state;
	char u[64], v[64];
	start(ALWAYS);
	exchange(GET("/m"));
	assert_non_null(strstr(down, "HTTP/1.1 200"));
	if (!field(up, "x-request-id", u) || !is_uuid(u))
		fail_msg("the upstream got no generated id:\n%s", up);
	assert_int_equal(lines(up, "x-request-id"), 1);
	if (!field(down, "x-request-id", v) || strcmp(v, u) != 0)
		fail_msg("the response does not carry the upstream's id %s:\n%s", u, down);
	hh_end();
	read_log();
}

/* RBAC's header matchers read the head with the id in it, as Envoy's
 * RBAC filter runs after mutateRequestHeaders: a policy that allows only
 * requests with an x-request-id lets one without through (it has the
 * generated one); a policy that denies the client id "evil" does not
 * deny it at the edge (replaced before RBAC reads it), and does for an
 * internal request (kept). Fails before: 403, and 403. */
static void test_rbac_sees_the_request_id(void **state)
{
	(void)state;
	char u[64];
	start_with(WITH_RBAC_NEEDS_ID, "");
	exchange(GET("/a"));
	assert_non_null(strstr(down, "HTTP/1.1 200"));
	if (!field(up, "x-request-id", u) || !is_uuid(u))
		fail_msg("the upstream got no generated id:\n%s", up);
	hh_end();

	start_with(WITH_RBAC_NOT_EVIL, EXTERNAL);
	exchange(GET_ID("/a", "evil"));
	assert_non_null(strstr(down, "HTTP/1.1 200"));
	if (!field(up, "x-request-id", u) || !is_uuid(u))
		fail_msg("the upstream did not get a generated id:\n%s", up);
	hh_end();

	start_with(WITH_RBAC_NOT_EVIL, INTERNAL);
	exchange(GET_ID("/a", "evil"));
	assert_non_null(strstr(down, "HTTP/1.1 403"));
	hh_end();
	read_log();
}

/* The bound: a head at max_headers_count's highest (127 lines) still has
 * the line for the generated id (HTTP_MAX_HDRS is one more), which the
 * filter sees: its reply (/deny) carries it as its body and as the
 * response's x-request-id. (Answered by the filter: the harness's
 * upstream reads no head of 128 lines and more.) */
static void test_full_head_gets_the_id(void **state)
{
	(void)state;
	char v[64];
	static char req[8192];
	start_lua(ALWAYS "\"common_http_protocol_options\":{\"max_headers_count\":127},");
	int k = snprintf(req, sizeof(req), "GET /deny HTTP/1.1\r\nHost: a\r\n");
	for (int i = 0; i < 126; i++)
		k += snprintf(req + k, sizeof(req) - (size_t)k, "x-h%d: %d\r\n", i, i);
	snprintf(req + k, sizeof(req) - (size_t)k, "\r\n");
	exchange(req);
	assert_non_null(strstr(down, "HTTP/1.1 403"));
	if (!is_uuid(body_of(down)))
		fail_msg("the filter saw no generated id in a full head:\n%s", down);
	if (!field(down, "x-request-id", v) || strcmp(v, body_of(down)) != 0)
		fail_msg("the 403 does not carry the id the filter saw:\n%s", down);
	/* one line more is refused (431), as before */
	snprintf(req + k, sizeof(req) - (size_t)k, "x-h126: 126\r\n\r\n");
	exchange(req);
	assert_non_null(strstr(down, "HTTP/1.1 431"));
	hh_end();
	read_log();
}

/* A local reply's id carries the trace decision as the upstream's does
 * (UUIDRequestIDExtension::setTraceReason, Envoy's pack_trace_reason
 * default: mutateTracingRequestHeader runs at the head): with the HCM's
 * tracing (100 % random sampling) the 404's generated id, and a client's
 * UUID, get '9' (sampled) in their 15th character, in the response
 * (always_set_request_id_in_response) and the access log. Fails before:
 * the local reply's id kept its '4'. */
static void test_local_reply_id_carries_the_trace_decision(void **state)
{
	(void)state;
	char v[64], u[64];
#define CLIENT_UUID "0af76519-16cd-43dd-8448-eb211c80319c"
	start(ALWAYS HH_TRACING);
	exchange(GET("/a"));
	if (!field(up, "x-request-id", u) || strlen(u) != 36 || u[14] != '9')
		fail_msg("the upstream's id carries no sampled decision:\n%s", up);
	if (!field(down, "x-request-id", v) || strcmp(u, v) != 0)
		fail_msg("the response does not carry the upstream's id %s:\n%s", u, down);
	exchange(GET("/none"));
	assert_non_null(strstr(down, "HTTP/1.1 404"));
	if (!field(down, "x-request-id", v) || strlen(v) != 36 || v[14] != '9')
		fail_msg("the 404's id carries no sampled decision:\n%s", down);
	strcpy(u, v);
	exchange(GET_ID("/none", CLIENT_UUID));
	if (!field(down, "x-request-id", v) ||
	    strcmp(v, "0af76519-16cd-93dd-8448-eb211c80319c") != 0)
		fail_msg("the 404's client id carries no sampled decision:\n%s", down);
	hh_end();
	const char *l = read_log();
	char want[256];
	snprintf(want, sizeof(want), "404 %s\n404 %s\n", u, v);
	if (!strstr(l, want))
		fail_msg("the log's ids are not the replies':\n%s\nwanted\n%s", l, want);
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
	hh_init(false);
	const struct CMUnitTest tests[] = {
	    T(test_local_reply_is_logged_with_a_request_id),
	    T(test_always_set_request_id_in_response),
	    T(test_edge_id_in_response_follows_preserve),
	    T(test_no_request_id_in_response_without_the_option),
	    T(test_force_trace_sets_the_id_on_an_internal_request),
	    T(test_filter_sees_the_generated_id),
	    T(test_filter_sees_the_edge_id),
	    T(test_route_matcher_sees_the_generated_id),
	    T(test_rbac_sees_the_request_id),
	    T(test_full_head_gets_the_id),
	    T(test_local_reply_id_carries_the_trace_decision),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
