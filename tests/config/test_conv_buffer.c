/*
 * envoy.filters.http.buffer's configuration (conv_buffer.c): Buffer in
 * http_filters, BufferPerRoute on routes and virtual hosts (disabled: the
 * filter off there; buffer: its settings), and every refusal, each naming
 * its field. Refused whole before (unknown filter type).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tc.h"

#define ADDR "\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\",\"port_value\":9000}}"
#define AT(t) "\"@type\":\"type.googleapis.com/" t "\""
#define HCM_AT                                                                                     \
	AT("envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager")
#define ROUTER                                                                                     \
	"{\"name\":\"envoy.filters.http.router\",\"typed_config\":{" AT(                           \
	    "envoy.extensions.filters.http.router.v3.Router") "}}"
#define LISTENER(filters)                                                                          \
	"{\"name\":\"l\"," ADDR ",\"filter_chains\":[{\"filters\":[" filters "]}]}"
/* an HCM with these filters before the router; @p vh_extra on the virtual
 * host, @p route_extra on its one route */
#define HCM(hfilters, vh_extra, route_extra)                                                       \
	"{\"name\":\"hcm\",\"typed_config\":{" HCM_AT ",\"stat_prefix\":\"ing\","                  \
	"\"route_config\":{\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"]," vh_extra       \
	"\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\"}" route_extra      \
	"}]}]},\"http_filters\":[" hfilters ROUTER "]}}"

#define BUF_AT AT("envoy.extensions.filters.http.buffer.v3.Buffer")
#define BUF_ROUTE_AT AT("envoy.extensions.filters.http.buffer.v3.BufferPerRoute")
#define BUF(fields) "{\"name\":\"buf\",\"typed_config\":{" BUF_AT fields "}},"
#define BUF_ROUTE(fields) "\"typed_per_filter_config\":{\"buf\":{" BUF_ROUTE_AT fields "}}"

static int setup(void **state)
{
	arn_config_set_features(ARN_CONFIG_FEATURE_L4 | ARN_CONFIG_FEATURE_HTTP_L4);
	return tc_setup(state);
}

static int teardown(void **state)
{
	arn_config_set_features(0);
	return tc_teardown(state);
}

static const struct arn_cfg_hcm *hcm0(void)
{
	const struct arn_cfg_listener *l = listener("l");
	assert_non_null(l);
	return l->chains[0].hcm;
}

/* The filter's bound; a route's BufferPerRoute buffer with its own, a
 * virtual host's disabled (the filter off there, as a FilterConfig
 * disabled is); HttpFilter disabled with a route turning it on (Envoy
 * Gateway's shape). */
static void test_buffer_model(void **state)
{
	(void)state;
	tc_ok(L,
	      LISTENER(HCM(BUF(",\"max_request_bytes\":1024"), BUF_ROUTE(",\"disabled\":true") ",",
			   "," BUF_ROUTE(",\"buffer\":{\"max_request_bytes\":10}"))));
	const struct arn_cfg_hcm *h = hcm0();
	assert_int_equal(h->http_filters[0], ARN_CFG_HF_BUFFER);
	const struct arn_cfg_buffer *f = h->http_filter_cfgs[0];
	assert_int_equal(f->max_request_bytes, 1024);
	const struct arn_cfg_vhost *vh = &h->inline_routes->vhosts[0];
	const struct arn_cfg_route *r = &vh->routes[0];
	const struct arn_cfg_buffer *pr =
	    arn_cfg_per_filter_find(vh, r, "buf", 3, ARN_CFG_PF_BUFFER);
	assert_non_null(pr);
	assert_int_equal(pr->max_request_bytes, 10);
	/* the route's settings turn it on; the virtual host alone: off */
	assert_false(arn_cfg_filter_off(vh, r, "buf", 3, false));
	assert_true(arn_cfg_filter_off(vh, NULL, "buf", 3, false));
	assert_null(arn_cfg_per_filter_find(vh, NULL, "buf", 3, ARN_CFG_PF_BUFFER));

	tc_ok(L, LISTENER(HCM("{\"name\":\"buf\",\"disabled\":true,\"typed_config\":{" BUF_AT
			      ",\"max_request_bytes\":4294967295}},",
			      "", "," BUF_ROUTE(",\"buffer\":{\"max_request_bytes\":1}"))));
	h = hcm0();
	f = h->http_filter_cfgs[0];
	assert_int_equal(f->max_request_bytes, 4294967295u);
	vh = &h->inline_routes->vhosts[0];
	assert_true(arn_cfg_filter_off(vh, NULL, "buf", 3, true));
	assert_false(arn_cfg_filter_off(vh, &vh->routes[0], "buf", 3, true));
}

/* Every refusal names its field: max_request_bytes missing or 0 (Envoy's
 * validation), BufferPerRoute empty, disabled false,
 * its buffer without a bound. */
static void test_buffer_refusals(void **state)
{
	(void)state;
	tc_refused(L, LISTENER(HCM(BUF(""), "", "")),
		   "typed_config.max_request_bytes: missing (Envoy requires it)");
	tc_refused(L, LISTENER(HCM(BUF(",\"max_request_bytes\":0"), "", "")),
		   "typed_config.max_request_bytes: must be more than 0");
	tc_refused(L, LISTENER(HCM(BUF(",\"max_request_bytes\":1"), "", "," BUF_ROUTE(""))),
		   "typed_per_filter_config[buf].override: missing: disabled or buffer");
	tc_refused(L,
		   LISTENER(HCM(BUF(",\"max_request_bytes\":1"), "",
				"," BUF_ROUTE(",\"disabled\":false"))),
		   "typed_per_filter_config[buf].disabled: must be true (Envoy's only value)");
	tc_refused(
	    L, LISTENER(HCM(BUF(",\"max_request_bytes\":1"), "", "," BUF_ROUTE(",\"buffer\":{}"))),
	    "typed_per_filter_config[buf].buffer.max_request_bytes: missing");
	tc_refused(L,
		   LISTENER(HCM(BUF(",\"max_request_bytes\":1"),
				BUF_ROUTE(",\"buffer\":{\"max_request_bytes\":0}") ",", "")),
		   "buffer.max_request_bytes: must be more than 0");
}

const struct CMUnitTest conv_buffer_tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    T(test_buffer_model),
    T(test_buffer_refusals),
};
const size_t n_conv_buffer_tests = sizeof(conv_buffer_tests) / sizeof(conv_buffer_tests[0]);
