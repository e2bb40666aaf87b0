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
 * its connection manager: /a goes to cluster web, anything else is 404. */
#define LSN                                                                                        \
	"{\"name\":\"dyn\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","              \
	"\"port_value\":82}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","                  \
	"\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.filters.network."      \
	"http_connection_manager.v3.HttpConnectionManager\",\"stat_prefix\":\"rid\",%s"            \
	"\"access_log\":[{\"name\":\"f\",\"typed_config\":{\"@type\":\"type.googleapis.com/"       \
	"envoy.extensions.access_loggers.file.v3.FileAccessLog\",\"path\":\"%s\",\"log_format\":"  \
	"{\"text_format_source\":{\"inline_string\":\"%%RESPONSE_CODE%% %%REQ(X-REQUEST-ID)%%\\n\"}}}}],"\
	"\"route_config\":{\"name\":\"dyn\",\"virtual_hosts\":[{\"name\":\"all\",\"domains\":"     \
	"[\"*\"],\"routes\":[{\"match\":{\"prefix\":\"/a\"},\"route\":{\"cluster\":\"web\"}}]}]},"  \
	"\"http_filters\":[{\"name\":\"envoy.filters.http.router\","                               \
	"\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.filters.http."         \
	"router.v3.Router\"}}]}}]}]}"
#define ALWAYS "\"always_set_request_id_in_response\":true,"
#define EDGE "\"use_remote_address\":true,"
/* the harness's client (198.18.0.100) internal, or not */
#define INTERNAL                                                                                   \
	EDGE "\"internal_address_config\":{\"cidr_ranges\":[{\"address_prefix\":\"198.18.0.0\","   \
	"\"prefix_len\":16}]},"
#define EXTERNAL                                                                                   \
	EDGE "\"internal_address_config\":{\"cidr_ranges\":[{\"address_prefix\":\"10.0.0.0\","     \
	"\"prefix_len\":8}]},"
/* clang-format on */

static char log_path[64];

/* A run with listener "dyn" (@p extra in its connection manager), client
 * 0 connected to it. */
static void start(const char *extra)
{
	char b[4096];
	snprintf(log_path, sizeof(log_path), "/tmp/arn_test_rid.%d.log", (int)getpid());
	unlink(log_path);
	hh_begin(1);
	snprintf(b, sizeof(b), LSN, extra, log_path);
	hh_apply(ARN_TYPE_URL_LISTENER, b);
	hh_cfg_changed = true; /* the next run puts listener "dyn" back */
	hh_settle();
	hh_open(0, 82);
	hh_settle();
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
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
