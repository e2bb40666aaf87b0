/*
 * The router's route match as a keep-alive connection keeps it
 * (http_router_filter.c's route_match): end to end on the real TCP stack
 * over the fake lib/net, with hcm_harness.h's configuration and peers, as
 * test_hcm_tcp.c. A kept match must be the one a fresh match gives.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "hcm_harness.h"

#define OK5 "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"

static void send_str(struct peer *p, const char *s)
{
	assert_non_null(p);
	hh_send(p, s, (uint32_t)strlen(s), 0);
	hh_settle();
}

static unsigned count(const struct peer *p, const char *s)
{
	unsigned n = 0;
	size_t k = strlen(s);
	for (uint32_t i = 0; p && i + k <= p->log_len; i++)
		n += memcmp(p->log + i, s, k) == 0;
	return n;
}

static void snapshot(uint32_t *rx0)
{
	for (int i = 0; i < N_PEERS; i++)
		rx0[i] = peers[i].rx;
}

/* The upstream connection that received bytes since @p rx0, or NULL. */
static struct peer *upstream_that_got(const uint32_t *rx0)
{
	for (unsigned u = 0; u < N_UPSTREAMS; u++) {
		struct peer *p = hh_upstream(u);
		if (p && p->rx != rx0[p - peers])
			return p;
	}
	return NULL;
}

/* Send @p req on client 0 and answer it from the upstream that gets it:
 * @return that upstream's address (0: none got it). */
static uint32_t proxied_to(const char *req)
{
	uint32_t rx0[N_PEERS];
	snapshot(rx0);
	send_str(hh_client(0), req);
	struct peer *u = upstream_that_got(rx0);
	if (!u)
		return 0;
	send_str(u, OK5);
	return u->addr;
}

#define ADDR(last) (0xc6120000u | (last)) /* 198.18.0.last */
#define WEB ADDR(200)			  /* cluster web */

/* A listener "dyn" on port 82 whose routes come by RDS, as RouteConfiguration
 * "dyn": a new table is a new generation with the listener unchanged, so
 * that a connection sees the table change under it. */
#define LDYN_RDS                                                                                   \
	"{\"name\":\"dyn\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","              \
	"\"port_value\":82}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","                  \
	"\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.filters.network."      \
	"http_connection_manager.v3.HttpConnectionManager\",\"stat_prefix\":\"dyn\","              \
	"\"rds\":{\"route_config_name\":\"dyn\",\"config_source\":{\"ads\":{}}},"                  \
	"\"http_filters\":[{\"name\":\"envoy.filters.http.router\","                               \
	"\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.filters.http."         \
	"router.v3.Router\"}}]}}]}]}"
#define RDYN                                                                                       \
	"{\"name\":\"dyn\",\"virtual_hosts\":[{\"name\":\"all\",\"domains\":[\"*\"],"              \
	"\"routes\":[%s]}]}"

static void apply_routes(const char *routes)
{
	char b[2048];
	snprintf(b, sizeof(b), RDYN, routes);
	hh_apply(ARN_TYPE_URL_ROUTE, b);
}

/*
 * Each thing the kept match depends on, changed alone, gives a fresh match:
 * the authority (secure.example redirects plain text), the path (/direct
 * answers itself), a route table of a new generation (/direct became a
 * direct response); and a route after one with a header matcher is never
 * kept: the same path with the header goes elsewhere. Fails with a key
 * without the authority, the path, the generation and table, or a match
 * kept past a header matcher.
 */
static void test_kept_route_match_is_never_stale(void **state)
{
	(void)state;
	hh_begin(1);
	hh_open(0, 80);
	hh_settle();
	/* /retry: its route and the two before it match on the path alone */
	for (unsigned i = 0; i < 2; i++)
		assert_int_equal(proxied_to("GET /retry HTTP/1.1\r\nHost: secure.exampla\r\n\r\n"),
				 WEB);
	/* another authority of the same length: the virtual host that
	 * requires TLS redirects plain text */
	send_str(hh_client(0), "GET /retry HTTP/1.1\r\nHost: secure.example\r\n\r\n");
	assert_int_equal(count(hh_client(0), "HTTP/1.1 301 "), 1);
	assert_int_equal(proxied_to("GET /retry HTTP/1.1\r\nHost: secure.exampla\r\n\r\n"), WEB);
	/* another path of the same length: a redirect */
	send_str(hh_client(0), "GET /redir HTTP/1.1\r\nHost: secure.exampla\r\n\r\n");
	assert_int_equal(count(hh_client(0), "HTTP/1.1 301 "), 2);
	assert_int_equal(count(hh_client(0), "http://example.com/new"), 1);
	/* and of another length: a direct response */
	assert_int_equal(proxied_to("GET /retry HTTP/1.1\r\nHost: secure.exampla\r\n\r\n"), WEB);
	send_str(hh_client(0), "GET /direct HTTP/1.1\r\nHost: secure.exampla\r\n\r\n");
	assert_int_equal(count(hh_client(0), "hello\n"), 1);
	/* "/" to web comes after the header match to cluster two: the header
	 * decides, each time */
	for (unsigned i = 0; i < 2; i++) {
		assert_int_equal(proxied_to("GET /x HTTP/1.1\r\nHost: a\r\n\r\n"), WEB);
		uint32_t two = proxied_to("GET /x HTTP/1.1\r\nHost: a\r\nx-cluster: two\r\n\r\n");
		assert_true(two == ADDR(201) || two == ADDR(202));
	}
	hh_end();

	/* a new generation's table, the connection and its request the same */
	hh_begin(1);
	apply_routes(HH_ROUTE_DYN);
	hh_apply(ARN_TYPE_URL_LISTENER, LDYN_RDS);
	hh_cfg_changed = true; /* the next run puts listener "dyn" back */
	hh_settle();
	hh_open(0, 82);
	hh_settle();
	for (unsigned i = 0; i < 2; i++)
		assert_int_equal(proxied_to("GET /direct HTTP/1.1\r\nHost: a\r\n\r\n"), ADDR(203));
	apply_routes(HH_ROUTE_DIRECT "," HH_ROUTE_DYN);
	hh_settle();
	hh_advance(2); /* the worker's next polls see the generation */
	send_str(hh_client(0), "GET /direct HTTP/1.1\r\nHost: a\r\n\r\n");
	assert_int_equal(count(hh_client(0), "HTTP/1.1 202 "), 1);
	assert_int_equal(count(hh_client(0), "HTTP/1.1 200 OK\r\n"), 2);
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
	hh_init(false);
	const struct CMUnitTest tests[] = {
	    T(test_kept_route_match_is_never_stale),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
