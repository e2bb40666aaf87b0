/*
 * envoy.filters.http.lua's configuration (conv_lua.c): Lua in
 * http_filters (inline_code, default_source_code, source_codes), each
 * script compiled and its chunk run at conversion; LuaPerRoute on routes
 * and virtual hosts (disabled, name, source_code); every
 * refusal naming its field, a syntax error with Lua's message. Refused
 * whole before (unknown filter type).
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
#define HCM(hfilters, vh_extra, route_extra)                                                       \
	"{\"name\":\"hcm\",\"typed_config\":{" HCM_AT ",\"stat_prefix\":\"ing\","                  \
	"\"route_config\":{\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"]," vh_extra       \
	"\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\"}" route_extra      \
	"}]}]},\"http_filters\":[" hfilters ROUTER "]}}"

#define LUA_AT AT("envoy.extensions.filters.http.lua.v3.Lua")
#define LUA_ROUTE_AT AT("envoy.extensions.filters.http.lua.v3.LuaPerRoute")
#define LUA(fields) "{\"name\":\"lua\",\"typed_config\":{" LUA_AT fields "}},"
#define LUA_ROUTE(fields) "\"typed_per_filter_config\":{\"lua\":{" LUA_ROUTE_AT fields "}}"

#define REQ_FN "function envoy_on_request(h) h:headers():add('x-a', '1') end"
#define RESP_FN "function envoy_on_response(h) end"

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

/* default_source_code with one direction; source_codes sorted by name,
 * found by name; stat_prefix; a route naming a script turns a disabled
 * filter on (Envoy Gateway's shape), a virtual host's disabled turns it
 * off. */
static void test_lua_model(void **state)
{
	(void)state;
	tc_ok(L, LISTENER(HCM(LUA(",\"stat_prefix\":\"sp\",\"default_source_code\":{"
				  "\"inline_string\":\"" REQ_FN "\"},\"source_codes\":{"
				  "\"b.lua\":{\"inline_string\":\"" RESP_FN "\"},"
				  "\"a.lua\":{\"inline_bytes\":\"LS0gbm90aGluZw==\"}}"),
			      LUA_ROUTE(",\"disabled\":true") ",",
			      "," LUA_ROUTE(",\"name\":\"b.lua\""))));
	const struct arn_cfg_hcm *h = hcm0();
	assert_int_equal(h->http_filters[0], ARN_CFG_HF_LUA);
	const struct arn_cfg_lua *f = h->http_filter_cfgs[0];
	assert_string_equal(f->stat_prefix, "sp");
	assert_non_null(f->dflt);
	assert_true(f->dflt->on_request);
	assert_false(f->dflt->on_response);
	assert_int_equal(f->n_named, 2);
	assert_int_equal(f->n_scripts, 3);
	assert_string_equal(f->named[0].name, "a.lua"); /* "-- nothing" */
	assert_false(f->named[0].on_request);
	assert_false(f->named[0].on_response);
	const struct arn_cfg_lua_script *b = arn_cfg_lua_find(f, "b.lua", 5);
	assert_ptr_equal(b, &f->named[1]);
	assert_true(b->on_response);
	assert_false(b->on_request);
	assert_null(arn_cfg_lua_find(f, "b.lu", 4));
	assert_null(arn_cfg_lua_find(f, "c.lua", 5));
	const struct arn_cfg_vhost *vh = &h->inline_routes->vhosts[0];
	const struct arn_cfg_route *r = &vh->routes[0];
	const struct arn_cfg_lua_route *pr =
	    arn_cfg_per_filter_find(vh, r, "lua", 3, ARN_CFG_PF_LUA);
	assert_non_null(pr);
	assert_int_equal(pr->name_len, 5);
	assert_memory_equal(pr->name, "b.lua", 5);
	assert_false(arn_cfg_filter_off(vh, r, "lua", 3, true));
	assert_true(arn_cfg_filter_off(vh, NULL, "lua", 3, false));

	/* a route's own source_code: compiled at conversion, an id of its own
	 * each time (its workers' states are found by it) */
	tc_ok(L,
	      LISTENER(HCM(LUA(""), "",
			   "," LUA_ROUTE(",\"source_code\":{\"inline_string\":\"" REQ_FN "\"}"))));
	vh = &hcm0()->inline_routes->vhosts[0];
	pr = arn_cfg_per_filter_find(vh, &vh->routes[0], "lua", 3, ARN_CFG_PF_LUA);
	assert_non_null(pr);
	assert_null(pr->name);
	assert_non_null(pr->script);
	assert_true(pr->script->on_request);
	assert_false(pr->script->on_response);
	uint64_t uid = pr->script->uid;
	assert_true(uid != 0);
	tc_ok(L,
	      LISTENER(HCM(LUA(""), "",
			   "," LUA_ROUTE(",\"source_code\":{\"inline_string\":\"" REQ_FN "\"}"))));
	vh = &hcm0()->inline_routes->vhosts[0];
	pr = arn_cfg_per_filter_find(vh, &vh->routes[0], "lua", 3, ARN_CFG_PF_LUA);
	assert_true(pr->script->uid > uid);

	/* the deprecated inline_code; no script at all (a route must name one) */
	tc_ok(L, LISTENER(HCM(LUA(",\"inline_code\":\"" RESP_FN "\""), "", "")));
	f = hcm0()->http_filter_cfgs[0];
	assert_true(f->dflt->on_response);
	assert_int_equal(f->n_scripts, 1);
	tc_ok(L, LISTENER(HCM(LUA(""), "", "")));
	f = hcm0()->http_filter_cfgs[0];
	assert_null(f->dflt);
	assert_int_equal(f->n_scripts, 0);
}

/* Every refusal names its field: Lua's own message for a syntax error and
 * for a chunk that fails; a chunk that loops or allocates past the bounds
 * refused at conversion, not run by a worker; both inline_code and
 * default_source_code; LuaPerRoute empty, disabled false, a source_code
 * with a syntax error or no source, filter_context (not built). */
static void test_lua_refusals(void **state)
{
	(void)state;
	tc_refused(L,
		   LISTENER(HCM(LUA(",\"default_source_code\":{\"inline_string\":"
				    "\"function envoy_on_request(h) h:headers(:add() end\"}"),
				"", "")),
		   "typed_config.default_source_code: Lua: default_source_code:1:");
	tc_refused(L,
		   LISTENER(HCM(LUA(",\"source_codes\":{\"x.lua\":{\"inline_string\":"
				    "\"error('nope')\"}}"),
				"", "")),
		   "typed_config.source_codes[x.lua]: Lua: x.lua:1: nope");
	tc_refused(L, LISTENER(HCM(LUA(",\"inline_code\":\"while true do end\""), "", "")),
		   "typed_config.inline_code: Lua: instruction limit reached (1000000)");
	tc_refused(L,
		   LISTENER(HCM(LUA(",\"inline_code\":\"local t = {} for i = 1, 1e9 do t[i] = "
				    "string.rep('x', 64) .. i end\""),
				"", "")),
		   "typed_config.inline_code: Lua: not enough memory");
	tc_refused(
	    L,
	    LISTENER(HCM(LUA(",\"inline_code\":\"" RESP_FN
			     "\",\"default_source_code\":{\"inline_string\":\"" RESP_FN "\"}"),
			 "", "")),
	    "typed_config.inline_code: set with default_source_code: only one of them");
	/* an error object that is not a string: no metamethod of the
	 * script's runs to print it */
	tc_refused(L,
		   LISTENER(HCM(LUA(",\"inline_code\":\"error(setmetatable({}, {__tostring = "
				    "function() while true do end end}))\""),
				"", "")),
		   "typed_config.inline_code: Lua: an error object that is not a string");
	/* no file, no bytecode */
	tc_refused(L, LISTENER(HCM(LUA(",\"inline_code\":\"dofile('/etc/passwd')\""), "", "")),
		   "attempt to call a nil value (global 'dofile')");
	tc_refused(L, LISTENER(HCM(LUA(",\"inline_code\":\"io.open('/etc/passwd')\""), "", "")),
		   "attempt to index a nil value (global 'io')");
	tc_refused(L, LISTENER(HCM(LUA(",\"inline_code\":\"os.execute('true')\""), "", "")),
		   "attempt to call a nil value (field 'execute')");
	tc_refused(L, LISTENER(HCM(LUA(""), "", "," LUA_ROUTE(""))),
		   "typed_per_filter_config[lua].override: missing: disabled, name or source_code");
	tc_refused(L, LISTENER(HCM(LUA(""), "", "," LUA_ROUTE(",\"disabled\":false"))),
		   "typed_per_filter_config[lua].disabled: must be true (Envoy's only value)");
	tc_refused(
	    L,
	    LISTENER(HCM(LUA(""), "",
			 "," LUA_ROUTE(",\"source_code\":{\"inline_string\":\"x = = 1\"}"))),
	    "typed_per_filter_config[lua].source_code: Lua: source_code:1: unexpected symbol");
	tc_refused(L, LISTENER(HCM(LUA(""), "", "," LUA_ROUTE(",\"source_code\":{}"))),
		   "typed_per_filter_config[lua].source_code: no source");
	tc_refused(
	    L, LISTENER(HCM(LUA(""), "", "," LUA_ROUTE(",\"name\":\"a\",\"filter_context\":{}"))),
	    "filter_context");
}

/* The 5.1 shims a LuaJIT-era script uses: unpack and the bit module. */
static void test_lua_shims(void **state)
{
	(void)state;
	tc_ok(L,
	      LISTENER(HCM(LUA(",\"inline_code\":\"assert(unpack({1, 2}) == 1) "
			       "assert(bit.band(0xff, 0x0f) == 15) "
			       "assert(bit.bor(1, 2, 4) == 7) assert(bit.bnot(0) == -1) "
			       "assert(bit.lshift(1, 31) == -2147483648) "
			       "assert(bit.rshift(-1, 28) == 15) assert(bit.arshift(-16, 2) == -4) "
			       "assert(bit.tohex(255) == '000000ff') " RESP_FN "\""),
			   "", "")));
	tc_refused(L,
		   LISTENER(HCM(LUA(",\"inline_code\":\"assert(bit.band(1, 1) == 2)\""), "", "")),
		   "assertion failed!");
}

/* fuzz_config's seed listener_lua (a type byte, then a Listener with the
 * filter: a default script, source_codes of two, a route naming one, a
 * virtual host's disabled) converts without error, so the fuzzer starts
 * inside conv_lua.c and mutates the scripts Lua compiles at conversion. */
static void test_lua_fuzz_seed(void **state)
{
	(void)state;
	char buf[4096];
	FILE *f = fopen("tests/config/corpus/config/listener_lua", "rb");
	assert_non_null(f);
	size_t n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	assert_true(n > 1 && n < sizeof(buf) && buf[0] == 0);
	struct arn_config_resource_in in = {"l", "v", buf + 1, n - 1};
	struct arn_config_result r;
	assert_int_equal(arn_config_apply(st, L, &in, 1, NULL, 0, 0, &r), 0);
	for (size_t j = 0; j < r.n_errors; j++)
		print_message("  listener_lua: %s\n", r.errors[j].message);
	assert_true(r.accepted);
	assert_int_equal(r.n_errors, 0);
	arn_config_result_free(&r);
	const struct arn_cfg_lua *lf = hcm0()->http_filter_cfgs[0];
	assert_int_equal(lf->n_scripts, 3);
	assert_true(lf->dflt->on_request && lf->dflt->on_response);
}

const struct CMUnitTest conv_lua_tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    T(test_lua_model),
    T(test_lua_refusals),
    T(test_lua_shims),
    T(test_lua_fuzz_seed),
};
const size_t n_conv_lua_tests = sizeof(conv_lua_tests) / sizeof(conv_lua_tests[0]);
