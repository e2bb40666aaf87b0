/*
 * envoy.filters.http.api_key_auth and envoy.filters.http.credential_injector
 * in the model, field for field as Envoy reads them (conv_apikey.c); each
 * malformed or unsupported field refused naming the resource and field.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tc.h"

#include "arn_config_apikey.h"
#include "arn_sb.h"

#define ADDR "\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\",\"port_value\":9000}}"
#define AT(t) "\"@type\":\"type.googleapis.com/" t "\""
#define HCM_AT                                                                                     \
	AT("envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager")
#define ROUTER                                                                                     \
	"{\"name\":\"envoy.filters.http.router\",\"typed_config\":{" AT(                           \
	    "envoy.extensions.filters.http.router.v3.Router") "}}"
#define LISTENER(filters)                                                                          \
	"{\"name\":\"l\"," ADDR ",\"filter_chains\":[{\"filters\":[" filters "]}]}"
#define HCM(hfilters, route_extra)                                                                 \
	"{\"name\":\"hcm\",\"typed_config\":{" HCM_AT ",\"stat_prefix\":\"ing\","                  \
	"\"route_config\":{\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],"                \
	"\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\"}" route_extra      \
	"}]}]},\"http_filters\":[" hfilters ROUTER "]}}"

#define AK_AT AT("envoy.extensions.filters.http.api_key_auth.v3.ApiKeyAuth")
#define AK_ROUTE_AT AT("envoy.extensions.filters.http.api_key_auth.v3.ApiKeyAuthPerRoute")
#define AK(fields) "{\"name\":\"ak\",\"typed_config\":{" AK_AT "," fields "}},"
#define AK_ROUTE(fields) ",\"typed_per_filter_config\":{\"ak\":{" AK_ROUTE_AT "," fields "}}"
#define CRED(k, c) "{\"key\":\"" k "\",\"client\":\"" c "\"}"
#define AK_OK                                                                                      \
	"\"credentials\":[" CRED("k1", "alice") "," CRED(                                          \
	    "k2", "bob") "],"                                                                      \
			 "\"key_sources\":[{\"header\":\"X-API-KEY\"},{\"query\":\"api_key\"},"    \
			 "{\"cookie\":\"key\"}]"

#define CI_AT AT("envoy.extensions.filters.http.credential_injector.v3.CredentialInjector")
#define GENERIC_AT AT("envoy.extensions.http.injected_credentials.generic.v3.Generic")
#define CI(fields) "{\"name\":\"ci\",\"typed_config\":{" CI_AT "," fields "}},"
#define CI_GENERIC(fields)                                                                         \
	"\"credential\":{\"name\":\"envoy.http.injected_credentials.generic\","                    \
	"\"typed_config\":{" GENERIC_AT "," fields "}}"

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

/* ApiKeyAuth: credentials sorted by their key's SHA-256, key sources in
 * order with header names lower cased, forwarding; the route's
 * ApiKeyAuthPerRoute with allowed_clients sorted. */
static void test_api_key_auth_model(void **state)
{
	(void)state;
	tc_ok(L, LISTENER(HCM(AK(AK_OK ",\"forwarding\":{\"header\":\"X-Client\","
				       "\"hide_credentials\":true}"),
			      AK_ROUTE("\"allowed_clients\":[\"carol\",\"bob\"],"
				       "\"credentials\":[" CRED("k3", "carol") "]"))));
	const struct arn_cfg_hcm *h = hcm0();
	assert_int_equal(h->http_filters[0], ARN_CFG_HF_API_KEY_AUTH);
	const struct arn_cfg_api_key_auth *f = h->http_filter_cfgs[0];
	assert_int_equal(f->creds.n, 2);
	assert_true(memcmp(f->creds.v[0].digest, f->creds.v[1].digest, 32) < 0);
	assert_int_equal(f->sources.n, 3);
	assert_int_equal(f->sources.v[0].kind, ARN_CFG_AK_HEADER);
	assert_memory_equal(f->sources.v[0].name, "x-api-key", 9);
	assert_int_equal(f->sources.v[1].kind, ARN_CFG_AK_QUERY);
	assert_memory_equal(f->sources.v[1].name, "api_key", 7);
	assert_int_equal(f->sources.v[2].kind, ARN_CFG_AK_COOKIE);
	assert_true(f->fwd.present);
	assert_true(f->fwd.hide);
	assert_string_equal(f->fwd.header, "x-client");
	const struct arn_cfg_vhost *vh = &h->inline_routes->vhosts[0];
	const struct arn_cfg_api_key_auth *r =
	    arn_cfg_per_filter_find(vh, &vh->routes[0], "ak", 2, ARN_CFG_PF_API_KEY_AUTH);
	assert_non_null(r);
	assert_int_equal(r->creds.n, 1);
	assert_int_equal(r->sources.n, 0);
	assert_false(r->fwd.present);
	assert_int_equal(r->n_allowed, 2);
	assert_memory_equal(r->allowed[0].name, "bob", 3); /* shorter first */
	/* nothing at all is Envoy's too: every request a 401 */
	tc_ok(L, LISTENER(HCM(AK("\"forwarding\":{}"), "")));
}

/* Every refusal names its field. */
static void test_api_key_auth_refusals(void **state)
{
	(void)state;
	static const struct {
		const char *fields, *want;
	} c[] = {
	    {"\"credentials\":[" CRED("k", "a") "," CRED("k", "b") "]",
	     "credentials: Duplicate API key."},
	    {"\"credentials\":[" CRED("", "a") "]", "credentials[0].key: empty"},
	    {"\"credentials\":[" CRED("k", "") "]", "credentials[0].client: empty"},
	    {"\"credentials\":[" CRED("k", "a\\nb") "]", "credentials[0].client"},
	    {"\"key_sources\":[{}]",
	     "key_sources[0]: One of 'header'/'query'/'cookie' must be set."},
	    {"\"key_sources\":[{\"header\":\"a b\"}]", "key_sources[0].header"},
	    {"\"key_sources\":[{\"cookie\":\"a;b\"}]", "key_sources[0].cookie"},
	    {"\"forwarding\":{\"header\":\"Host\"}", "forwarding.header: 'host' frames"},
	    {"\"forwarding\":{\"header\":\"x:y\"}", "forwarding.header"},
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		char j[2048];
		snprintf(j, sizeof(j), LISTENER(HCM(AK("%s"), "")), c[i].fields);
		tc_refused(L, j, c[i].want);
	}
	/* a route's */
	tc_refused(L, LISTENER(HCM(AK(AK_OK), AK_ROUTE("\"key_sources\":[{\"query\":\"\"}]"))),
		   "key_sources[0]: One of 'header'/'query'/'cookie' must be set.");
}

/* Arion's bounds: keys, clients, credentials, sources, allowed clients. */
static void test_api_key_auth_limits(void **state)
{
	(void)state;
	size_t n = ARN_CFG_API_KEY_MAX_CREDENTIALS + 1;
	size_t cap = n * 40 + 4096;
	char *j = malloc(cap), *p = j;
	assert_non_null(j);
	p += sprintf(p,
		     "{\"name\":\"l\"," ADDR ",\"filter_chains\":[{\"filters\":["
		     "{\"name\":\"hcm\",\"typed_config\":{" HCM_AT ",\"stat_prefix\":\"ing\","
		     "\"route_config\":{\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],"
		     "\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\"}}]}]},"
		     "\"http_filters\":[{\"name\":\"ak\",\"typed_config\":{" AK_AT
		     ",\"key_sources\":[{\"header\":\"k\"}],\"credentials\":[");
	char *start = p;
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "%s{\"key\":\"k%zu\",\"client\":\"c\"}", i ? "," : "", i);
	char *end = p;
	strcpy(p, "]}}," ROUTER "]}}]}]}");
	tc_refused(L, j, "credentials: 65537 entries: more than Arion's bound (65536)");
	/* 65536: the last one dropped */
	p = start;
	for (size_t i = 0; i + 1 < n; i++)
		p += sprintf(p, "%s{\"key\":\"k%zu\",\"client\":\"c\"}", i ? "," : "", i);
	memmove(p, end, strlen(end) + 1);
	tc_ok(L, j);
	assert_int_equal(
	    ((const struct arn_cfg_api_key_auth *)hcm0()->http_filter_cfgs[0])->creds.n,
	    ARN_CFG_API_KEY_MAX_CREDENTIALS);
	free(j);

	char key[ARN_CFG_API_KEY_MAX_KEY + 2], cl[ARN_CFG_API_KEY_MAX_CLIENT + 2];
	char buf[4096];
	memset(key, 'k', sizeof(key));
	memset(cl, 'c', sizeof(cl));
	key[ARN_CFG_API_KEY_MAX_KEY] = 0;
	cl[ARN_CFG_API_KEY_MAX_CLIENT] = 0;
	snprintf(buf, sizeof(buf),
		 LISTENER(HCM(AK("\"key_sources\":[{\"header\":\"k\"}],\"credentials\":[{\"key\":"
				 "\"%s\",\"client\":\"%s\"}]"),
			      "")),
		 key, cl);
	tc_ok(L, buf);
	key[ARN_CFG_API_KEY_MAX_KEY] = 'k';
	key[ARN_CFG_API_KEY_MAX_KEY + 1] = 0;
	snprintf(buf, sizeof(buf),
		 LISTENER(HCM(AK("\"key_sources\":[{\"header\":\"k\"}],\"credentials\":[{\"key\":"
				 "\"%s\",\"client\":\"c\"}]"),
			      "")),
		 key);
	tc_refused(L, buf, "credentials[0].key: 1025 bytes: longer than Arion's bound (1024)");
	cl[ARN_CFG_API_KEY_MAX_CLIENT] = 'c';
	cl[ARN_CFG_API_KEY_MAX_CLIENT + 1] = 0;
	snprintf(buf, sizeof(buf),
		 LISTENER(HCM(AK("\"key_sources\":[{\"header\":\"k\"}],\"credentials\":[{\"key\":"
				 "\"k\",\"client\":\"%s\"}]"),
			      "")),
		 cl);
	tc_refused(L, buf, "credentials[0].client: 257 bytes: longer than Arion's bound (256)");
	/* 17 key sources */
	p = buf;
	p += sprintf(p, "{\"header\":\"h0\"}");
	for (int i = 1; i <= ARN_CFG_API_KEY_MAX_SOURCES; i++)
		p += sprintf(p, ",{\"header\":\"h%d\"}", i);
	char j2[8192];
	snprintf(j2, sizeof(j2), LISTENER(HCM(AK("\"key_sources\":[%s]"), "")), buf);
	tc_refused(L, j2, "key_sources: 17 entries: more than Arion's bound (16)");

	/* names of 1024 bytes, and 1025 */
	static const char *const fields[] = {"header", "query", "cookie"};
	char name[ARN_CFG_API_KEY_MAX_NAME + 2];
	memset(name, 'n', sizeof(name));
	for (size_t i = 0; i < 3; i++) {
		name[ARN_CFG_API_KEY_MAX_NAME] = 0;
		snprintf(j2, sizeof(j2), LISTENER(HCM(AK("\"key_sources\":[{\"%s\":\"%s\"}]"), "")),
			 fields[i], name);
		tc_ok(L, j2);
		name[ARN_CFG_API_KEY_MAX_NAME] = 'n';
		name[ARN_CFG_API_KEY_MAX_NAME + 1] = 0;
		snprintf(j2, sizeof(j2), LISTENER(HCM(AK("\"key_sources\":[{\"%s\":\"%s\"}]"), "")),
			 fields[i], name);
		char want[64];
		snprintf(want, sizeof(want), "key_sources[0].%s: longer than 1024 bytes",
			 fields[i]);
		tc_refused(L, j2, want);
	}
	snprintf(j2, sizeof(j2), LISTENER(HCM(AK("\"forwarding\":{\"header\":\"%s\"}"), "")), name);
	tc_refused(L, j2, "forwarding.header: longer than 1024 bytes");

	/* 1024 allowed clients, and 1025 */
	char *al = malloc(16 * 1100), *q = al;
	assert_non_null(al);
	for (int i = 0; i < ARN_CFG_API_KEY_MAX_ALLOWED; i++)
		q += sprintf(q, "%s\"c%d\"", i ? "," : "", i);
	size_t jl = strlen(al) + 2048;
	char *j3 = malloc(jl);
	assert_non_null(j3);
	snprintf(j3, jl, LISTENER(HCM(AK(AK_OK), AK_ROUTE("\"allowed_clients\":[%s]"))), al);
	tc_ok(L, j3);
	strcpy(q, ",\"one-more\"");
	jl = strlen(al) + 2048;
	free(j3);
	j3 = malloc(jl);
	assert_non_null(j3);
	snprintf(j3, jl, LISTENER(HCM(AK(AK_OK), AK_ROUTE("\"allowed_clients\":[%s]"))), al);
	tc_refused(L, j3, "allowed_clients: 1025 entries: more than Arion's bound (1024)");
	free(j3);
	free(al);
}

/* credential_injector: every field read; the generic credential's SDS
 * secret refused by name until Arion's store holds generic secrets; the
 * oauth2 credential refused naming it. */
static void test_credential_injector(void **state)
{
	(void)state;
	/* the generic credential: an SDS generic_secret by name over ADS (a
	 * warming dependency), the header lower cased */
	tc_ok(ARN_TYPE_URL_SECRET, "{\"name\":\"credential_injector/credential/r\","
				   "\"generic_secret\":{\"secret\":{\"inline_string\":\"t\"}}}");
	tc_ok(L, LISTENER(HCM(CI("\"overwrite\":true," CI_GENERIC(
				  "\"credential\":{\"name\":\"credential_injector/credential/r\","
				  "\"sds_config\":{\"ads\":{}}},\"header\":\"X-Token\"")),
			      "")));
	const struct arn_cfg_cred_injector *ci = hcm0()->http_filter_cfgs[0];
	assert_true(ci->overwrite);
	assert_false(ci->allow_without);
	assert_string_equal(ci->header, "x-token");
	assert_int_equal(ci->secret.len, strlen("credential_injector/credential/r"));
	tc_refused(
	    L,
	    LISTENER(HCM(CI(CI_GENERIC("\"credential\":{\"name\":\"s\",\"sds_config\":{"
				       "\"path_config_source\":{\"path\":\"/x\"}}}")),
			 "")),
	    "credential.typed_config.credential.sds_config: an sds_config source is refused");
	tc_refused(L, LISTENER(HCM(CI("\"overwrite\":true"), "")),
		   "credential: missing (Envoy requires it)");
	tc_refused(L, LISTENER(HCM(CI(CI_GENERIC("\"header\":\"x\"")), "")),
		   "credential.typed_config.credential: missing");
	tc_refused(
	    L,
	    LISTENER(HCM(CI(CI_GENERIC("\"credential\":{\"name\":\"s\"},\"header\":\"a b\"")), "")),
	    "credential.typed_config.header");
	tc_refused(
	    L,
	    LISTENER(
		HCM(CI(CI_GENERIC("\"credential\":{\"name\":\"s\"},\"header\":\"Cookie\"")), "")),
	    "credential.typed_config.header: 'cookie' is not a header a credential goes in");
	tc_refused(L,
		   LISTENER(HCM(
		       CI(CI_GENERIC("\"credential\":{\"name\":\"s\"},\"header\":\"Host\"")), "")),
		   "credential.typed_config.header: 'host' frames or routes the request");
	tc_refused(L, LISTENER(HCM(CI(CI_GENERIC("\"credential\":{}")), "")),
		   "credential.typed_config.credential.name: missing");
	tc_refused(
	    L,
	    LISTENER(HCM(
		CI("\"credential\":{\"name\":\"envoy.http.injected_credentials.oauth2\","
		   "\"typed_config\":{" AT("envoy.extensions.filters.http.router.v3.Router") "}}"),
		"")),
	    "credential.typed_config: credential type "
	    "'envoy.extensions.filters.http.router.v3.Router' is not supported");
}

struct dump {
	char json[16384];
	size_t n;
};

static void dump_fn(void *ctx, const struct arn_config_resource_info *info)
{
	struct dump *d = ctx;
	struct arn_sb sb = ARN_SB_INIT;
	if (arn_config_resource_json(st, info, &sb) == 0)
		snprintf(d->json, sizeof(d->json), "%s", arn_sb_cstr(&sb));
	d->n++;
	arn_sb_free(&sb);
}

/* The API keys are Envoy's sensitive fields (credentials): /config_dump
 * never shows them, in a listener's filter, in its inline route table,
 * or in a RouteConfiguration's ApiKeyAuthPerRoute; the rest of the
 * filter is there. */
static void test_api_key_auth_not_in_dumps(void **state)
{
	(void)state;
	tc_ok(L, LISTENER(HCM(AK("\"credentials\":[" CRED(
				  "sekrit-1", "alice") "],"
						       "\"key_sources\":[{\"header\":\"x-k\"}]"),
			      AK_ROUTE("\"credentials\":[" CRED("sekrit-2", "bob") "]"))));
	struct dump *d = calloc(1, sizeof(*d));
	assert_non_null(d);
	assert_int_equal(arn_config_foreach(st, ARN_CFG_LISTENER, dump_fn, d), 1);
	if (strstr(d->json, "sekrit") || !strstr(d->json, "x-k") ||
	    !strstr(d->json, "api_key_auth.v3.ApiKeyAuthPerRoute"))
		fail_msg("the dump: %s", d->json);
	tc_ok(
	    ARN_TYPE_URL_ROUTE,
	    "{\"name\":\"r\",\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],"
	    "\"typed_per_filter_config\":{\"ak\":{" AK_ROUTE_AT ",\"credentials\":[" CRED(
		"sekrit-3", "carol") "],\"allowed_clients\":[\"carol\"]}},\"routes\":[{\"match\":{"
				     "\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\"}}]}]}");
	memset(d, 0, sizeof(*d));
	assert_int_equal(arn_config_foreach(st, ARN_CFG_ROUTE, dump_fn, d), 1);
	if (strstr(d->json, "sekrit") || !strstr(d->json, "allowed_clients"))
		fail_msg("the dump: %s", d->json);
	free(d);
}

/* The other filters' credentials (Envoy's sensitive fields) are not in
 * dumps either: basic_auth's users (the filter's and a route's
 * BasicAuthPerRoute's: password hashes), ExtAuthzPerRoute's
 * context_extensions. A resource kept redacted still shows the fields
 * newer than gRPC's API copy (HttpFilter.disabled, a RouteConfiguration's
 * own typed_per_filter_config): its unknown fields stay. Fails before:
 * the hashes and the context were in the dumps. */
static void test_credentials_not_in_dumps(void **state)
{
	(void)state;
	tc_ok(L,
	      LISTENER(HCM(
		  "{\"name\":\"ba\",\"disabled\":true,\"typed_config\":{" AT(
		      "envoy.extensions.filters.http.basic_auth.v3.BasicAuth") ","
									       "\"users\":{"
									       "\"inline_string\":"
									       "\"alice:{SHA}"
									       "5en6G6MezRroT3XKqkd"
									       "POmY/BfQ=\"}}},",
		  ",\"typed_per_filter_config\":{\"ba\":{" AT(
		      "envoy.extensions.filters.http.basic_auth.v3."
		      "BasicAuthPerRoute") ",\"users\":{\"inline_string\":\"bob:{SHA}"
					   "87u9ZqY9S/F0eUBXjsPQEDUw4h0=\"}}}")));
	struct dump *d = calloc(1, sizeof(*d));
	assert_non_null(d);
	assert_int_equal(arn_config_foreach(st, ARN_CFG_LISTENER, dump_fn, d), 1);
	if (strstr(d->json, "5en6G6") || strstr(d->json, "87u9Zq") ||
	    !strstr(d->json, "[redacted]") || !strstr(d->json, "\"disabled\":true"))
		fail_msg("the dump: %s", d->json);
	tc_ok(
	    ARN_TYPE_URL_ROUTE,
	    "{\"name\":\"r\",\"typed_per_filter_config\":{\"lr\":{" AT(
		"envoy.config.route.v3.FilterConfig") ",\"disabled\":true}},"
						      "\"virtual_hosts\":[{\"name\":\"v\","
						      "\"domains\":[\"*\"],"
						      "\"typed_per_filter_config\":{\"xa\":{" AT(
							  "envoy.extensions.filters.http.ext_authz."
							  "v3."
							  "ExtAuthzPerRoute") ",\"check_settings\":"
									      "{\"context_"
									      "extensions\":{"
									      "\"tenant\":"
									      "\"ctx-secret\"}}}},"
									      "\"routes\":[{"
									      "\"match\":{"
									      "\"prefix\":\"/"
									      "\"},\"route\":{"
									      "\"cluster\":\"c\"}}]"
									      "}]}");
	memset(d, 0, sizeof(*d));
	assert_int_equal(arn_config_foreach(st, ARN_CFG_ROUTE, dump_fn, d), 1);
	if (strstr(d->json, "ctx-secret") || !strstr(d->json, "check_settings") ||
	    !strstr(d->json, "route.v3.FilterConfig"))
		fail_msg("the dump: %s", d->json);
	free(d);
}

const struct CMUnitTest conv_apikey_tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    T(test_api_key_auth_model),	       T(test_api_key_auth_refusals),
    T(test_api_key_auth_limits),       T(test_credential_injector),
    T(test_api_key_auth_not_in_dumps), T(test_credentials_not_in_dumps),
};
const size_t n_conv_apikey_tests = sizeof(conv_apikey_tests) / sizeof(conv_apikey_tests[0]);
