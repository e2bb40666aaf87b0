/*
 * The L4 filters in the model, field for field as Envoy reads them:
 * tcp_proxy, the network and HTTP RBAC filters with their policies, the
 * network and HTTP local_ratelimit filters, connection_limit, routes'
 * typed_per_filter_config, and the filter chain match fields they come
 * with (direct_source_prefix_ranges, source_type). Each malformed or
 * unsupported field is refused naming the resource and the field.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tjwt.h" /* before tc.h, whose short macros OpenSSL's headers would meet */
#include "tc.h"

#include "arn_proto.h"
#include "arn_bootstrap.h"

#define ADDR "\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\",\"port_value\":9000}}"
#define AT(t) "\"@type\":\"type.googleapis.com/" t "\""
#define TCP_AT AT("envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy")
#define NRBAC_AT AT("envoy.extensions.filters.network.rbac.v3.RBAC")
#define NLRL_AT AT("envoy.extensions.filters.network.local_ratelimit.v3.LocalRateLimit")
#define CXL_AT AT("envoy.extensions.filters.network.connection_limit.v3.ConnectionLimit")
#define HRBAC_AT AT("envoy.extensions.filters.http.rbac.v3.RBAC")
#define HLRL_AT AT("envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit")
#define HCM_AT                                                                                     \
	AT("envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager")
#define ROUTER                                                                                     \
	"{\"name\":\"envoy.filters.http.router\",\"typed_config\":{" AT(                           \
	    "envoy.extensions.filters.http.router.v3.Router") "}}"

/* A listener "l" whose one chain has these filters (JSON array body). */
#define LISTENER(filters)                                                                          \
	"{\"name\":\"l\"," ADDR ",\"filter_chains\":[{\"filters\":[" filters "]}]}"
/* A tcp_proxy filter with these TcpProxy fields. */
#define TCP(fields) "{\"name\":\"tcp\",\"typed_config\":{" TCP_AT "," fields "}}"
#define TCP_OK TCP("\"stat_prefix\":\"t\",\"cluster\":\"db\"")
/* A network filter before tcp_proxy. */
#define NF(name, at, fields) "{\"name\":\"" name "\",\"typed_config\":{" at "," fields "}}," TCP_OK
/* An HCM with these HTTP filters before the router, and this route table body. */
#define HCM(hfilters, vhost_extra)                                                                 \
	"{\"name\":\"hcm\",\"typed_config\":{" HCM_AT ",\"stat_prefix\":\"ing\","                  \
	"\"route_config\":{\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"]," vhost_extra    \
	"\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\"}}]}]},"            \
	"\"http_filters\":[" hfilters ROUTER "]}}"

/* A single_predicate on request header @p h, exact "v"; an OnMatch with an
 * RBAC Action named @p n. */
#define SP_HDR(h)                                                                                  \
	"{\"input\":{\"name\":\"i\",\"typed_config\":{" AT(                                        \
	    "envoy.type.matcher.v3.HttpRequestHeaderMatchInput") ",\"header_name\":\"" h "\"}},"   \
								 "\"value_match\":{\"exact\":"     \
								 "\"v\"}}"
#define ON_MATCH(n, a)                                                                             \
	"{\"action\":{\"name\":\"a\",\"typed_config\":{" AT(                                       \
	    "envoy.config.rbac.v3.Action") ",\"name\":\"" n "\",\"action\":\"" a "\"}}}"

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

static const struct arn_cfg_filter_chain *chain0(void)
{
	const struct arn_cfg_listener *l = listener("l");
	assert_non_null(l);
	return &l->chains[0];
}

static void test_tcp_proxy_fields(void **state)
{
	(void)state;
	/* the TCP proxy of Envoy's documentation, with every field Arion runs */
	tc_ok(L, LISTENER(TCP("\"stat_prefix\":\"redis\",\"cluster\":\"redis_cluster\","
			      "\"idle_timeout\":\"30s\",\"max_connect_attempts\":3,"
			      "\"max_downstream_connection_duration\":\"600s\","
			      "\"hash_policy\":[{\"source_ip\":{}}],"
			      "\"access_log_options\":{\"access_log_flush_interval\":\"5s\","
			      "\"flush_access_log_on_connected\":true},"
			      "\"access_log\":[{\"name\":\"envoy.access_loggers.stdout\","
			      "\"typed_config\":{" AT("envoy.extensions.access_loggers.stream.v3."
						      "StdoutAccessLog") "}}]")));
	const struct arn_cfg_filter_chain *fc = chain0();
	assert_int_equal(fc->kind, ARN_CFG_NF_TCP_PROXY);
	const struct arn_cfg_tcp_proxy *t = fc->tcp_proxy;
	assert_string_equal(t->stat_prefix, "redis");
	assert_int_equal(t->cluster.len, strlen("redis_cluster"));
	assert_memory_equal(t->cluster.name, "redis_cluster", t->cluster.len);
	assert_int_equal(t->idle_timeout_ms, 30000);
	assert_int_equal(t->max_connect_attempts, 3);
	assert_int_equal(t->max_downstream_connection_duration_ms, 600000);
	assert_true(t->hash_source_ip);
	assert_int_equal(t->access_log_flush_interval_ms, 5000);
	assert_true(t->flush_access_log_on_connected);
	assert_int_equal(t->n_access_logs, 1);
	assert_int_equal(t->access_logs[0].kind, ARN_CFG_LOG_STDOUT);
	assert_int_equal(fc->n_l4_filters, 0);

	/* Envoy's defaults: 1 h idle timeout, one connect attempt, no limit */
	tc_ok(L, LISTENER(TCP_OK));
	t = chain0()->tcp_proxy;
	assert_int_equal(t->idle_timeout_ms, 3600 * 1000);
	assert_int_equal(t->max_connect_attempts, 1);
	assert_int_equal(t->max_downstream_connection_duration_ms, 0);
	assert_int_equal(t->access_log_flush_interval_ms, 0);
	/* 0s turns the idle timeout off */
	tc_ok(L, LISTENER(TCP("\"stat_prefix\":\"t\",\"cluster\":\"db\",\"idle_timeout\":\"0s\"")));
	assert_int_equal(chain0()->tcp_proxy->idle_timeout_ms, 0);
	/* the deprecated top-level access log options */
	tc_ok(L, LISTENER(TCP("\"stat_prefix\":\"t\",\"cluster\":\"db\","
			      "\"access_log_flush_interval\":\"1s\"")));
	assert_int_equal(chain0()->tcp_proxy->access_log_flush_interval_ms, 1000);
}

static void test_tcp_proxy_weighted_clusters(void **state)
{
	(void)state;
	tc_ok(L, LISTENER(TCP("\"stat_prefix\":\"t\",\"weighted_clusters\":{\"clusters\":["
			      "{\"name\":\"a\",\"weight\":1},{\"name\":\"b\",\"weight\":3}]}")));
	const struct arn_cfg_tcp_proxy *t = chain0()->tcp_proxy;
	assert_int_equal(t->cluster.len, 0);
	assert_int_equal(t->n_weighted, 2);
	assert_int_equal(t->total_weight, 4);
	assert_memory_equal(t->weighted[1].cluster.name, "b", 1);
	assert_int_equal(t->weighted[1].weight, 3);
	tc_refused(L,
		   LISTENER(TCP("\"stat_prefix\":\"t\",\"weighted_clusters\":{\"clusters\":["
				"{\"name\":\"a\",\"weight\":0}]}")),
		   "Listener 'l': filter_chains[0].filters[0].typed_config.weighted_clusters."
		   "clusters[0].weight: must be at least 1");
	tc_refused(L, LISTENER(TCP("\"stat_prefix\":\"t\",\"weighted_clusters\":{}")),
		   "weighted_clusters.clusters: empty");
}

/* TLS termination before tcp_proxy (Envoy's DownstreamTlsContext on a
 * chain whose filter is tcp_proxy): the chain keeps its TLS context, and
 * the relay runs over it (the refusal that stood while it did not is
 * gone). */
static void test_tcp_proxy_tls_termination(void **state)
{
	(void)state;
	struct tcert cert;
	tcert_make(&cert, "db.test");
	char *j = tj_secret_tls("cert", cert.cert_json, cert.key_json);
	assert_non_null(j);
	tc_ok(S, j); /* so that the listener is active, not warming */
	free(j);
	tcert_free(&cert);
	tc_ok(L, "{\"name\":\"l\"," ADDR ",\"filter_chains\":[{\"filters\":[" TCP_OK
		 "],\"transport_socket\":{\"name\":\"envoy.transport_sockets.tls\","
		 "\"typed_config\":{" AT(
		     "envoy.extensions.transport_sockets.tls.v3."
		     "DownstreamTlsContext") ",\"common_tls_context\":{"
					     "\"tls_certificate_sds_secret_configs\":[{\"name\":"
					     "\"cert\"}]}}}}]}");
	const struct arn_cfg_filter_chain *fc = chain0();
	assert_int_equal(fc->kind, ARN_CFG_NF_TCP_PROXY);
	assert_non_null(fc->tcp_proxy);
	assert_non_null(fc->tls);
}

static void test_tcp_proxy_refusals(void **state)
{
	(void)state;
	tc_refused(L, LISTENER(TCP("\"cluster\":\"db\"")),
		   "Listener 'l': filter_chains[0].filters[0].typed_config.stat_prefix: missing");
	tc_refused(L, LISTENER(TCP("\"stat_prefix\":\"t\"")),
		   "typed_config: no upstream: set cluster or weighted_clusters");
	tc_refused(L,
		   LISTENER(TCP("\"stat_prefix\":\"t\",\"cluster\":\"db\","
				"\"tunneling_config\":{\"hostname\":\"h\"}")),
		   "typed_config.tunneling_config: not supported by Arion");
	tc_refused(L,
		   LISTENER(TCP("\"stat_prefix\":\"t\",\"cluster\":\"db\","
				"\"on_demand\":{}")),
		   "typed_config.on_demand: not supported by Arion");
	tc_refused(L,
		   LISTENER(TCP("\"stat_prefix\":\"t\",\"cluster\":\"db\","
				"\"max_connect_attempts\":0")),
		   "typed_config.max_connect_attempts: must be at least 1");
	tc_refused(L,
		   LISTENER(TCP("\"stat_prefix\":\"t\",\"cluster\":\"db\","
				"\"max_downstream_connection_duration\":\"0s\"")),
		   "max_downstream_connection_duration: must be at least 1ms");
	tc_refused(L,
		   LISTENER(TCP("\"stat_prefix\":\"t\",\"cluster\":\"db\","
				"\"hash_policy\":[{\"source_ip\":{}},{\"source_ip\":{}}]")),
		   "typed_config.hash_policy: 2 policies");
	tc_refused(L,
		   LISTENER(TCP("\"stat_prefix\":\"t\",\"cluster\":\"db\","
				"\"access_log_flush_interval\":\"1s\","
				"\"access_log_options\":{}")),
		   "access_log_options: set either");
	/* tcp_proxy is terminal */
	tc_refused(L, LISTENER(TCP_OK "," TCP_OK),
		   "filters[0]: envoy.filters.network.tcp_proxy is a terminal filter");
	/* a filter that is not terminal cannot be last */
	tc_refused(L,
		   LISTENER("{\"name\":\"rl\",\"typed_config\":{" CXL_AT
			    ",\"stat_prefix\":\"c\",\"max_connections\":1}}"),
		   "filters[0]: envoy.filters.network.connection_limit is not a terminal filter");
	/* by name without typed_config: Envoy needs the typed_config */
	tc_refused(L, LISTENER("{\"name\":\"envoy.filters.network.tcp_proxy\"}"),
		   "filters[0].typed_config: missing typed_config");
}

static void test_feature_gate(void **state)
{
	(void)state;
	/* until the data plane runs them, the filters are refused, not ignored */
	arn_config_set_features(0);
	tc_refused(L, LISTENER(TCP_OK),
		   "filters[0]: envoy.filters.network.tcp_proxy is not run by this Arion's "
		   "data plane yet");
	tc_refused(L, LISTENER(NF("r", NRBAC_AT, "\"stat_prefix\":\"r\",\"rules\":{}")),
		   "envoy.filters.network.rbac is not run by this Arion's data plane yet");
	tc_refused(
	    R,
	    "{\"name\":\"rt\",\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],"
	    "\"typed_per_filter_config\":{\"rbac\":{" AT(
		"envoy.extensions.filters.http.rbac.v3.RBACPerRoute") "}}}]}",
	    "RouteConfiguration 'rt': virtual_hosts[0].typed_per_filter_config: not supported "
	    "by Arion: the HTTP filters it configures (rbac, local_ratelimit, cors) are not run");
	arn_config_set_features(ARN_CONFIG_FEATURE_L4);
	tc_refused(L, LISTENER(HCM("{\"name\":\"rbac\",\"typed_config\":{" HRBAC_AT "}},", "")),
		   "http_filters[0]: envoy.filters.http.rbac is not run by this Arion's data "
		   "plane yet");
}

/* An allow policy on the network filter (Envoy's documentation's example,
 * extended to every network permission and principal). */
static void test_network_rbac(void **state)
{
	(void)state;
	tc_ok(L,
	      LISTENER(NF(
		  "envoy.filters.network.rbac", NRBAC_AT,
		  "\"stat_prefix\":\"tcp.\",\"shadow_rules_stat_prefix\":\"sh_\","
		  "\"enforcement_type\":\"CONTINUOUS\",\"delay_deny\":\"2s\","
		  "\"rules\":{\"action\":\"ALLOW\",\"policies\":{"
		  "\"z-last\":{\"permissions\":[{\"any\":true}],\"principals\":[{\"any\":true}]},"
		  "\"a-first\":{\"permissions\":[{\"and_rules\":{\"rules\":["
		  "{\"destination_port\":6379},{\"destination_ip\":{\"address_prefix\":"
		  "\"10.1.0.0\",\"prefix_len\":16}},"
		  "{\"destination_port_range\":{\"start\":6000,\"end\":7000}},"
		  "{\"not_rule\":{\"requested_server_name\":{\"exact\":\"x.test\"}}}]}}],"
		  "\"principals\":[{\"or_ids\":{\"ids\":["
		  "{\"source_ip\":{\"address_prefix\":\"198.18.0.0\",\"prefix_len\":15}},"
		  "{\"direct_remote_ip\":{\"address_prefix\":\"127.0.0.1\"}},"
		  "{\"remote_ip\":{\"address_prefix\":\"192.0.2.0\",\"prefix_len\":24}},"
		  "{\"authenticated\":{\"principal_name\":{\"exact\":\"spiffe://a/b\"}}},"
		  "{\"not_id\":{\"authenticated\":{}}}]}}]}}},"
		  "\"shadow_rules\":{\"action\":\"DENY\",\"policies\":{\"p\":{"
		  "\"permissions\":[{\"any\":true}],\"principals\":[{\"any\":true}]}}}")));
	const struct arn_cfg_filter_chain *fc = chain0();
	assert_int_equal(fc->kind, ARN_CFG_NF_TCP_PROXY);
	assert_int_equal(fc->n_l4_filters, 1);
	assert_int_equal(fc->l4_filters[0].kind, ARN_CFG_L4_RBAC);
	assert_string_equal(fc->l4_filters[0].name, "envoy.filters.network.rbac");
	const struct arn_cfg_rbac_filter *f = fc->l4_filters[0].rbac;
	assert_string_equal(f->stat_prefix, "tcp.");
	assert_string_equal(f->shadow_stat_prefix, "sh_");
	assert_int_equal(f->enforcement, ARN_CFG_RBAC_CONTINUOUS);
	assert_int_equal(f->delay_deny_ms, 2000);
	assert_int_equal(f->rules->action, ARN_CFG_RBAC_ALLOW);
	assert_int_equal(f->shadow->action, ARN_CFG_RBAC_DENY);
	/* policies in name order, as Envoy's std::map holds them */
	assert_int_equal(f->rules->n_policies, 2);
	const struct arn_cfg_rbac_policy *p = &f->rules->policies[0];
	assert_memory_equal(p->name, "a-first", 7);
	const struct arn_cfg_rbac_rule *and = &p->permissions[0];
	assert_int_equal(and->kind, ARN_CFG_RBAC_AND);
	assert_int_equal(and->n_kids, 4);
	assert_int_equal(and->kids[0].kind, ARN_CFG_RBAC_DST_PORT);
	assert_int_equal(and->kids[0].port_lo, 6379);
	assert_int_equal(and->kids[1].kind, ARN_CFG_RBAC_DST_IP);
	assert_int_equal(and->kids[1].cidr.addr, 0x0a010000);
	assert_int_equal(and->kids[1].cidr.len, 16);
	assert_int_equal(and->kids[2].kind, ARN_CFG_RBAC_DST_PORT_RANGE);
	assert_int_equal(and->kids[2].port_lo, 6000);
	assert_int_equal(and->kids[2].port_hi, 7000);
	assert_int_equal(and->kids[3].kind, ARN_CFG_RBAC_NOT);
	assert_int_equal(and->kids[3].kids[0].kind, ARN_CFG_RBAC_SNI);
	const struct arn_cfg_rbac_rule * or = &p->principals[0];
	assert_int_equal(or->kind, ARN_CFG_RBAC_OR);
	assert_int_equal(or->n_kids, 5);
	assert_int_equal(or->kids[0].kind, ARN_CFG_RBAC_SOURCE_IP);
	assert_int_equal(or->kids[0].cidr.len, 15);
	assert_int_equal(or->kids[1].kind, ARN_CFG_RBAC_DIRECT_REMOTE_IP);
	assert_int_equal(or->kids[1].cidr.len, 32);
	assert_int_equal(or->kids[2].kind, ARN_CFG_RBAC_REMOTE_IP);
	assert_int_equal(or->kids[3].kind, ARN_CFG_RBAC_AUTHENTICATED);
	assert_true(or->kids[3].has_str);
	assert_false(or->kids[4].kids[0].has_str);
	assert_memory_equal(f->rules->policies[1].name, "z-last", 6);
	/* rules absent: nothing enforced; an empty rules: ALLOW with no policy */
	tc_ok(L, LISTENER(NF("r", NRBAC_AT, "\"stat_prefix\":\"r\",\"rules\":{}")));
	f = chain0()->l4_filters[0].rbac;
	assert_non_null(f->rules);
	assert_int_equal(f->rules->n_policies, 0);
	assert_null(f->shadow);
}

#define POLICY(perm, princ)                                                                        \
	"\"stat_prefix\":\"r\",\"rules\":{\"policies\":{\"p\":{\"permissions\":[" perm             \
	"],\"principals\":[" princ "]}}}"

static void test_rbac_refusals(void **state)
{
	(void)state;
	const char *pre = "Listener 'l': filter_chains[0].filters[0].typed_config.rules."
			  "policies[p].";
	char want[512];
	tc_refused(L, LISTENER(NF("r", NRBAC_AT, "\"rules\":{}")),
		   "filters[0].typed_config.stat_prefix: missing");
	/* the network filter has no request: header and url_path refused */
	snprintf(want, sizeof(want), "%spermissions[0].header: the network RBAC filter", pre);
	tc_refused(L,
		   LISTENER(NF("r", NRBAC_AT,
			       POLICY("{\"header\":{\"name\":\"x\",\"present_match\":true}}",
				      "{\"any\":true}"))),
		   want);
	tc_refused(
	    L,
	    LISTENER(NF("r", NRBAC_AT,
			POLICY("{\"any\":true}", "{\"url_path\":{\"path\":{\"prefix\":\"/a\"}}}"))),
	    "principals[0].url_path: the network RBAC filter has no HTTP request");
	snprintf(want, sizeof(want),
		 "%spermissions[0].metadata: this RBAC permission is not "
		 "supported",
		 pre);
	tc_refused(L,
		   LISTENER(NF("r", NRBAC_AT,
			       POLICY("{\"metadata\":{\"filter\":\"f\"}}", "{\"any\":true}"))),
		   want);
	tc_refused(L, LISTENER(NF("r", NRBAC_AT, POLICY("", "{\"any\":true}"))),
		   "policies[p].permissions: empty");
	tc_refused(L, LISTENER(NF("r", NRBAC_AT, POLICY("{\"any\":true}", ""))),
		   "policies[p].principals: empty");
	tc_refused(L, LISTENER(NF("r", NRBAC_AT, POLICY("{\"any\":false}", "{\"any\":true}"))),
		   "permissions[0].any: must be true");
	tc_refused(L,
		   LISTENER(NF("r", NRBAC_AT,
			       "\"stat_prefix\":\"r\",\"rules\":{\"policies\":{\"p\":{"
			       "\"permissions\":[{\"any\":true}],\"principals\":[{\"any\":true}],"
			       "\"condition\":{}}}}")),
		   "policies[p].condition: not supported by Arion");
	/* IPv6 ranges are kept (test_rbac_ipv6_ranges); a length past 128 or
	 * an address of neither family is refused by field */
	tc_refused(L,
		   LISTENER(NF("r", NRBAC_AT,
			       POLICY("{\"destination_ip\":{\"address_prefix\":\"::1\","
				      "\"prefix_len\":129}}",
				      "{\"any\":true}"))),
		   "permissions[0].destination_ip.prefix_len: 129 is more than 128");
	tc_refused(
	    L,
	    LISTENER(NF("r", NRBAC_AT,
			POLICY("{\"any\":true}",
			       "{\"remote_ip\":{\"address_prefix\":\"2001:db8::1::2\"}}"))),
	    "principals[0].remote_ip.address_prefix: '2001:db8::1::2' is not an IPv4 or IPv6 "
	    "address");
	tc_refused(
	    L,
	    LISTENER(NF("r", NRBAC_AT, POLICY("{\"destination_port\":70000}", "{\"any\":true}"))),
	    "permissions[0].destination_port: 70000 is not a port");
	tc_refused(L,
		   LISTENER(NF("r", NRBAC_AT,
			       POLICY("{\"destination_port_range\":{\"start\":9,\"end\":3}}",
				      "{\"any\":true}"))),
		   "destination_port_range: [9, 3) is not a range of ports");
	tc_refused(L, LISTENER(NF("r", NRBAC_AT, POLICY("{}", "{\"any\":true}"))),
		   "permissions[0]: empty permission");
	/* a matcher on the network filter: no input Arion reads there */
	tc_refused(
	    L,
	    LISTENER(NF("r", NRBAC_AT,
			"\"stat_prefix\":\"r\",\"matcher\":{\"matcher_list\":{\"matchers\":[{"
			"\"predicate\":{\"single_predicate\":" SP_HDR(
			    "x") "},"
				 "\"on_match\":" ON_MATCH("d", "DENY") "}]}}")),
	    "typed_config.matcher.matcher_list.matchers[0].predicate.single_predicate.input."
	    "typed_config: envoy.type.matcher.v3.HttpRequestHeaderMatchInput is not "
	    "supported as an RBAC matcher input: Arion reads none on the network filter");
	/* only on_no_match: every connection gets its action */
	tc_ok(L, LISTENER(NF("r", NRBAC_AT,
			     "\"stat_prefix\":\"r\",\"matcher\":{\"on_no_match\":" ON_MATCH(
				 "all", "ALLOW") "}")));
	/* nesting is bounded: the evaluator recurses */
	char deep[4096] = "";
	char *o = deep;
	for (int i = 0; i < 40; i++)
		o += sprintf(o, "{\"not_rule\":");
	o += sprintf(o, "{\"any\":true}");
	for (int i = 0; i < 40; i++)
		*o++ = '}';
	*o = 0;
	char json[8192];
	snprintf(json, sizeof(json),
		 LISTENER(NF("r", NRBAC_AT,
			     "\"stat_prefix\":\"r\",\"rules\":{\"policies\":{\"p\":{"
			     "\"permissions\":[%s],\"principals\":[{\"any\":true}]}}}")),
		 deep);
	tc_refused(L, json, "nested more than 32 deep");
}

/* Envoy Gateway's SecurityPolicy clientCIDRs and authorization rules mix
 * IPv4 and IPv6 ranges: an IPv6 range (here under not_id, and ::/0) is
 * converted with its family instead of refusing the listener. */
static void test_rbac_ipv6_ranges(void **state)
{
	(void)state;
	tc_ok(L,
	      LISTENER(NF("r", NRBAC_AT,
			  POLICY("{\"destination_ip\":{\"address_prefix\":\"::1\"}}",
				 "{\"not_id\":{\"remote_ip\":{\"address_prefix\":\"2001:db8::\","
				 "\"prefix_len\":32}}},{\"source_ip\":{\"address_prefix\":\"::\","
				 "\"prefix_len\":0}}"))));
	const struct arn_cfg_rbac_policy *p = &chain0()->l4_filters[0].rbac->rules->policies[0];
	assert_true(p->permissions[0].cidr.v6);
	assert_int_equal(p->permissions[0].cidr.len, 128);
	assert_int_equal(p->permissions[0].cidr.addr6[15], 1);
	const struct arn_cfg_rbac_rule *n = &p->principals[0];
	assert_int_equal(n->kind, ARN_CFG_RBAC_NOT);
	assert_int_equal(n->kids[0].kind, ARN_CFG_RBAC_REMOTE_IP);
	assert_true(n->kids[0].cidr.v6);
	assert_int_equal(n->kids[0].cidr.len, 32);
	assert_int_equal(n->kids[0].cidr.addr6[3], 0xb8);
	assert_true(p->principals[1].cidr.v6);
	assert_int_equal(p->principals[1].cidr.len, 0);
}

static void test_http_rbac_and_per_route(void **state)
{
	(void)state;
	tc_ok(L, LISTENER(HCM(
		     "{\"name\":\"envoy.filters.http.rbac\",\"typed_config\":{" HRBAC_AT
		     ",\"shadow_rules_stat_prefix\":\"s_\","
		     "\"rules\":{\"action\":\"DENY\",\"policies\":{\"admin\":{"
		     "\"permissions\":[{\"url_path\":{\"path\":{\"prefix\":\"/admin\"}}},"
		     "{\"header\":{\"name\":\":method\",\"string_match\":{\"exact\":\"DELETE\"}}}],"
		     "\"principals\":[{\"not_id\":{\"header\":{\"name\":\"X-Admin\","
		     "\"present_match\":true}}}]}}}}},",
		     "\"typed_per_filter_config\":{\"envoy.filters.http.rbac\":{" AT(
			 "envoy.extensions.filters.http.rbac.v3.RBACPerRoute") "}},")));
	const struct arn_cfg_hcm *h = chain0()->hcm;
	assert_int_equal(h->n_http_filters, 2);
	assert_int_equal(h->http_filters[0], ARN_CFG_HF_RBAC);
	assert_string_equal(h->http_filter_names[0], "envoy.filters.http.rbac");
	assert_int_equal(h->http_filters[1], ARN_CFG_HF_ROUTER);
	const struct arn_cfg_rbac_filter *f = h->http_filter_cfgs[0];
	assert_string_equal(f->shadow_stat_prefix, "s_");
	assert_int_equal(f->rules->action, ARN_CFG_RBAC_DENY);
	const struct arn_cfg_rbac_policy *p = &f->rules->policies[0];
	assert_int_equal(p->permissions[0].kind, ARN_CFG_RBAC_URL_PATH);
	assert_int_equal(p->permissions[0].str.kind, ARN_CFG_STR_PREFIX);
	assert_int_equal(p->permissions[1].kind, ARN_CFG_RBAC_HEADER);
	assert_string_equal(p->permissions[1].header->name, ":method");
	assert_string_equal(p->principals[0].kids[0].header->name, "x-admin");
	/* RBACPerRoute without rbac: RBAC is off on that virtual host */
	const struct arn_cfg_vhost *vh = &h->inline_routes->vhosts[0];
	const struct arn_cfg_rbac_filter *pr = arn_cfg_per_filter_find(
	    vh, &vh->routes[0], "envoy.filters.http.rbac", 23, ARN_CFG_PF_RBAC);
	assert_non_null(pr);
	assert_null(pr->rules);
	assert_null(pr->shadow);
	assert_null(arn_cfg_per_filter_find(vh, &vh->routes[0], "other", 5, ARN_CFG_PF_RBAC));
	assert_null(arn_cfg_per_filter_find(vh, &vh->routes[0], "envoy.filters.http.rbac", 23,
					    ARN_CFG_PF_LOCAL_RATELIMIT));

	/* a route's RBACPerRoute replaces the rules, and wins over the vhost's */
	tc_ok(
	    R,
	    "{\"name\":\"rt\",\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],"
	    "\"typed_per_filter_config\":{\"rbac\":{" AT(
		"envoy.extensions.filters.http.rbac.v3.RBACPerRoute") "}},"
								      "\"routes\":[{\"match\":{"
								      "\"prefix\":\"/"
								      "\"},\"route\":{\"cluster\":"
								      "\"c\"},"
								      "\"typed_per_filter_config\":"
								      "{\"rbac\":{" AT(
									  "envoy.extensions."
									  "filters.http.rbac.v3."
									  "RBACPerRoute") ",\"rbac"
											  "\":{"
											  "\"rules"
											  "\":{"
											  "\"polici"
											  "es\":{}}"
											  "}}}}]}]"
											  "}");
	const struct arn_cfg_route_table *rt = route_table("rt");
	pr = arn_cfg_per_filter_find(&rt->vhosts[0], &rt->vhosts[0].routes[0], "rbac", 4,
				     ARN_CFG_PF_RBAC);
	assert_non_null(pr->rules);
	assert_int_equal(pr->rules->action, ARN_CFG_RBAC_ALLOW);
	pr = arn_cfg_per_filter_find(&rt->vhosts[0], NULL, "rbac", 4, ARN_CFG_PF_RBAC);
	assert_null(pr->rules);
	/* an empty key names no filter, and a caller without a name finds nothing */
	tc_ok(R, "{\"name\":\"rt\",\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],"
		 "\"typed_per_filter_config\":{\"\":{" AT(
		     "envoy.extensions.filters.http.rbac.v3.RBACPerRoute") "}}}]}");
	rt = route_table("rt");
	assert_null(arn_cfg_per_filter_find(&rt->vhosts[0], NULL, NULL, 0, ARN_CFG_PF_RBAC));

	tc_refused(
	    R,
	    "{\"name\":\"rt\",\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],"
	    "\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\"},"
	    "\"typed_per_filter_config\":{\"f\":{" AT(
		"envoy.extensions.filters.http.router.v3.Router") "}}}]}]}",
	    "RouteConfiguration 'rt': virtual_hosts[0].routes[0].typed_per_filter_config[f]: "
	    "per-filter configuration of type "
	    "'envoy.extensions.filters.http.router.v3.Router' is not supported");
}

/* envoy.filters.http.ext_authz with an HTTP service: every field Arion
 * acts on lands in the model, ExtAuthzPerRoute per route, and what it
 * does not run (a gRPC service, the request body, route cache clearing,
 * context_extensions, a second filter) is refused by name. */
static void test_http_ext_authz(void **state)
{
	(void)state;
#define XA_AT AT("envoy.extensions.filters.http.ext_authz.v3.ExtAuthz")
#define XAR_AT AT("envoy.extensions.filters.http.ext_authz.v3.ExtAuthzPerRoute")
#define XA_SVC                                                                                     \
	"\"http_service\":{\"server_uri\":{\"uri\":\"http://authz\",\"cluster\":\"authz\","        \
	"\"timeout\":\"0.25s\"}"
#define XA(fields) "{\"name\":\"xa\",\"typed_config\":{" XA_AT "," fields "}},"
	tc_ok(L, LISTENER(HCM(
		     XA(XA_SVC ",\"path_prefix\":\"/auth\",\"authorization_request\":{"
			       "\"headers_to_add\":[{\"key\":\"X-Svc\",\"value\":\"arion\"}]},"
			       "\"authorization_response\":{\"allowed_upstream_headers\":{"
			       "\"patterns\":[{\"exact\":\"x-user\"}]},"
			       "\"allowed_upstream_headers_to_append\":{\"patterns\":[{\"prefix\":"
			       "\"x-add\"}]},\"allowed_client_headers\":{\"patterns\":[{\"exact\":"
			       "\"x-why\"}]},\"allowed_client_headers_on_success\":{\"patterns\":[{"
			       "\"exact\":\"x-ok\"}]}}},"
			       "\"failure_mode_allow\":true,\"failure_mode_allow_header_add\":true,"
			       "\"status_on_error\":{\"code\":503},\"stat_prefix\":\"front\","
			       "\"allowed_headers\":{\"patterns\":[{\"exact\":\"cookie\"}]},"
			       "\"disallowed_headers\":{\"patterns\":[{\"exact\":\"x-secret\"}]},"
			       "\"filter_enabled\":{\"default_value\":{\"numerator\":50}},"
			       "\"deny_at_disable\":{\"default_value\":true},"
			       "\"transport_api_version\":\"V3\""),
		     "\"typed_per_filter_config\":{\"xa\":{" XAR_AT ",\"disabled\":true}},")));
	const struct arn_cfg_hcm *h = chain0()->hcm;
	assert_int_equal(h->http_filters[0], ARN_CFG_HF_EXT_AUTHZ);
	const struct arn_cfg_ext_authz *f = h->http_filter_cfgs[0];
	assert_memory_equal(f->cluster.name, "authz", 5);
	assert_int_equal(f->timeout_ms, 250);
	assert_int_equal(f->path_prefix_len, 5);
	assert_memory_equal(f->path_prefix, "/auth", 5);
	assert_int_equal(f->status_on_error, 503);
	assert_true(f->failure_mode_allow && f->failure_mode_allow_header_add);
	assert_true(f->deny_at_disable);
	assert_int_equal(f->enabled.numerator, 50);
	assert_string_equal(f->stat_prefix, "front");
	assert_int_equal(f->n_allowed, 1);
	assert_true(arn_cfg_str_match(&f->allowed[0], "cookie", 6));
	assert_int_equal(f->n_disallowed, 1);
	assert_int_equal(f->n_add, 1);
	assert_memory_equal(f->add[0].name, "x-svc", 5); /* lower-cased */
	assert_true(f->n_up_set == 1 && f->n_up_append == 1 && f->n_client == 1 &&
		    f->n_client_ok == 1);
	assert_true(arn_cfg_str_match(&f->up_append[0], "x-add-1", 7));
	const struct arn_cfg_vhost *vh = &h->inline_routes->vhosts[0];
	const struct arn_cfg_ext_authz_route *pr =
	    arn_cfg_per_filter_find(vh, &vh->routes[0], "xa", 2, ARN_CFG_PF_EXT_AUTHZ);
	assert_non_null(pr);
	assert_true(pr->disabled);
	/* defaults: 403 on error, every request checked */
	tc_ok(L, LISTENER(HCM(XA(XA_SVC "}"), "")));
	f = chain0()->hcm->http_filter_cfgs[0];
	assert_int_equal(f->status_on_error, 403);
	assert_int_equal(f->enabled.numerator, 100);
	assert_false(f->failure_mode_allow || f->deny_at_disable);
	assert_int_equal(f->path_prefix_len, 0);
	/* check_settings re-enables; only disable_request_body_buffering */
	tc_ok(L, LISTENER(HCM(XA(XA_SVC "}"),
			      "\"typed_per_filter_config\":{\"xa\":{" XAR_AT ",\"check_settings\":{"
			      "\"disable_request_body_buffering\":true}}},")));
	vh = &chain0()->hcm->inline_routes->vhosts[0];
	pr = arn_cfg_per_filter_find(vh, &vh->routes[0], "xa", 2, ARN_CFG_PF_EXT_AUTHZ);
	assert_non_null(pr);
	assert_false(pr->disabled);
	tc_refused(L, LISTENER(HCM(XA("\"failure_mode_allow\":true"), "")),
		   "typed_config.http_service: missing");
	/* with_request_body; disable_request_body_buffering per route */
	tc_ok(L, LISTENER(HCM(XA(XA_SVC "},\"with_request_body\":{\"max_request_bytes\":10,"
					"\"allow_partial_message\":true,\"pack_as_bytes\":true}"),
			      "\"typed_per_filter_config\":{\"xa\":{" XAR_AT ",\"check_settings\":{"
			      "\"disable_request_body_buffering\":true}}},")));
	f = chain0()->hcm->http_filter_cfgs[0];
	assert_true(f->with_body && f->partial_body && f->pack_as_bytes);
	assert_int_equal(f->max_body, 10);
	vh = &chain0()->hcm->inline_routes->vhosts[0];
	pr = arn_cfg_per_filter_find(vh, &vh->routes[0], "xa", 2, ARN_CFG_PF_EXT_AUTHZ);
	assert_true(pr && pr->no_body);
	tc_refused(
	    L, LISTENER(HCM(XA(XA_SVC "},\"with_request_body\":{\"max_request_bytes\":0}"), "")),
	    "with_request_body.max_request_bytes: must be at least 1");
	tc_refused(
	    L,
	    LISTENER(HCM(XA(XA_SVC "},\"with_request_body\":{\"max_request_bytes\":40000}"), "")),
	    "with_request_body.max_request_bytes: 40000: more than Arion holds");
	tc_refused(L, LISTENER(HCM(XA(XA_SVC "},\"clear_route_cache\":true"), "")),
		   "clear_route_cache");
	tc_refused(L,
		   LISTENER(HCM(XA("\"http_service\":{\"server_uri\":{\"uri\":\"http://a\","
				   "\"cluster\":\"authz\"}}"),
				"")),
		   "http_service.server_uri.timeout: missing");
	tc_refused(L,
		   LISTENER(HCM(XA(XA_SVC ",\"authorization_request\":{\"headers_to_add\":[{"
					  "\"key\":\"x-a\",\"value\":\"1\\r\\nx-evil: 1\"}]}}"),
				"")),
		   "headers_to_add[0].value: contains CR, LF or NUL");
	tc_refused(L,
		   LISTENER(HCM(XA(XA_SVC ",\"authorization_request\":{\"headers_to_add\":[{"
					  "\"key\":\"host\",\"value\":\"a\"}]}}"),
				"")),
		   "headers_to_add[0].key: 'host'");
	/* Envoy formats these (ClientConfig's HeaderParser::configure);
	 * Arion sends them as written: a value with '%' is refused, not sent
	 * as its text (accepted before) */
	tc_refused(
	    L,
	    LISTENER(HCM(XA(XA_SVC ",\"authorization_request\":{\"headers_to_add\":[{"
				   "\"key\":\"x-a\",\"value\":\"%DOWNSTREAM_REMOTE_ADDRESS%\"}]}}"),
			 "")),
	    "authorization_request.headers_to_add[0].value: '%' (a command operator) is not "
	    "supported by Arion in the check's headers");
	tc_refused(L,
		   LISTENER(HCM(XA(XA_SVC ",\"authorization_response\":{"
					  "\"dynamic_metadata_from_headers\":{\"patterns\":[{"
					  "\"exact\":\"a\"}]}}}"),
				"")),
		   "dynamic_metadata_from_headers");
	tc_refused(L, LISTENER(HCM(XA(XA_SVC "},\"status_on_error\":{\"code\":700}"), "")),
		   "status_on_error.code: 700");
	tc_refused(L, LISTENER(HCM(XA(XA_SVC "}") XA(XA_SVC "}"), "")),
		   "a second ext_authz filter");
	/* Envoy's own HTTP example (ext-authz-http-filter.yaml) sets it */
	tc_refused(L, LISTENER(HCM(XA(XA_SVC "},\"include_peer_certificate\":true"), "")),
		   "typed_config.include_peer_certificate: only a gRPC CheckRequest carries it, "
		   "which Arion does not fill in");
	tc_refused(L, LISTENER(HCM(XA(XA_SVC "},\"metadata_context_namespaces\":[\"a\"]"), "")),
		   "metadata_context_namespaces: only a gRPC");
	tc_refused(
	    L,
	    LISTENER(HCM(XA(XA_SVC "}"),
			 "\"typed_per_filter_config\":{\"xa\":{" XAR_AT ",\"check_settings\":{"
			 "\"with_request_body\":{\"max_request_bytes\":1}}}},")),
	    "with_request_body");
	/* grpc_service (envoy_grpc): the cluster, :authority, timeout,
	 * initial_metadata; context_extensions per route */
#define XG_SVC "\"grpc_service\":{\"envoy_grpc\":{\"cluster_name\":\"authz\""
	tc_ok(L, LISTENER(HCM(XA(XG_SVC
				 ",\"authority\":\"authz.example\"},\"timeout\":\"0.5s\","
				 "\"initial_metadata\":[{\"key\":\"X-Tenant\",\"value\":\"t1\"}]},"
				 "\"allowed_headers\":{\"patterns\":[{\"exact\":\"x-a\"}]}"),
			      "\"typed_per_filter_config\":{\"xa\":{" XAR_AT ",\"check_settings\":{"
			      "\"context_extensions\":{\"k\":\"v\"}}}},")));
	f = chain0()->hcm->http_filter_cfgs[0];
	assert_true(f->grpc);
	assert_memory_equal(f->cluster.name, "authz", 5);
	assert_int_equal(f->authority_len, 13);
	assert_memory_equal(f->authority, "authz.example", 13);
	assert_int_equal(f->timeout_ms, 500);
	assert_int_equal(f->n_md, 1);
	assert_memory_equal(f->md[0].name, "x-tenant", 8);
	assert_memory_equal(f->md[0].value, "t1", 2);
	assert_int_equal(f->n_allowed, 1);
	vh = &chain0()->hcm->inline_routes->vhosts[0];
	pr = arn_cfg_per_filter_find(vh, &vh->routes[0], "xa", 2, ARN_CFG_PF_EXT_AUTHZ);
	assert_non_null(pr);
	assert_false(pr->disabled);
	assert_int_equal(pr->n_ctx, 1);
	assert_memory_equal(pr->ctx[0].name, "k", 1);
	assert_memory_equal(pr->ctx[0].value, "v", 1);
	/* Envoy's default timeout: 200 ms; no authority: the cluster's */
	tc_ok(L, LISTENER(HCM(XA(XG_SVC "}}"), "")));
	f = chain0()->hcm->http_filter_cfgs[0];
	assert_true(f->grpc);
	assert_int_equal(f->timeout_ms, 200);
	assert_null(f->authority);
	tc_refused(L,
		   LISTENER(HCM(XA("\"grpc_service\":{\"google_grpc\":{\"target_uri\":\"a:1\","
				   "\"stat_prefix\":\"g\"}}"),
				"")),
		   "grpc_service.google_grpc: not supported by Arion");
	tc_refused(L, LISTENER(HCM(XA("\"grpc_service\":{\"envoy_grpc\":{}}"), "")),
		   "grpc_service.envoy_grpc.cluster_name: missing");
	tc_refused(L,
		   LISTENER(HCM(XA(XG_SVC "},\"initial_metadata\":[{\"key\":\"te\","
					  "\"value\":\"x\"}]}"),
				"")),
		   "initial_metadata[0].key: 'te'");
	tc_refused(L,
		   LISTENER(HCM(XA(XG_SVC "},\"initial_metadata\":[{\"key\":\"x-a\","
					  "\"value\":\"1\\r\\nx: 2\"}]}"),
				"")),
		   "initial_metadata[0].value: contains CR, LF or NUL");
	tc_ok(L,
	      LISTENER(HCM(XA(XG_SVC "}},\"with_request_body\":{\"max_request_bytes\":9}"), "")));
	f = chain0()->hcm->http_filter_cfgs[0];
	assert_true(f->grpc && f->with_body && !f->partial_body && !f->pack_as_bytes);
	/* 30 entries: more headers than a check carries */
	char md[2048] = XG_SVC "},\"initial_metadata\":[";
	for (int i = 0; i < 30; i++)
		snprintf(md + strlen(md), sizeof(md) - strlen(md),
			 "%s{\"key\":\"x-m%d\",\"value\":\"v\"}", i ? "," : "", i);
	strcat(md, "]}");
	char full[8192];
	snprintf(full, sizeof(full), LISTENER(HCM(XA("%s"), "")), md);
	tc_refused(L, full, "initial_metadata: 30 entries: at most 29");
	tc_refused(L, LISTENER(HCM(XA(XG_SVC "}},\"include_peer_certificate\":true"), "")),
		   "include_peer_certificate: only a gRPC CheckRequest carries it");
#undef XG_SVC
#undef XA
#undef XA_SVC
#undef XAR_AT
#undef XA_AT
}

/* envoy.filters.http.fault: HTTPFault converted (delays and aborts, fixed
 * or header-asked, their percentages, the selection, max_active_faults;
 * runtime key names accepted, not read), per route too; what Arion does
 * not do refused by name. */
#define FAULT_AT AT("envoy.extensions.filters.http.fault.v3.HTTPFault")
#define FAULT(fields) "{\"name\":\"fault\",\"typed_config\":{" FAULT_AT "," fields "}},"
static void test_http_fault_filter(void **state)
{
	(void)state;
	tc_ok(L,
	      LISTENER(HCM(FAULT("\"delay\":{\"fixed_delay\":\"0.25s\",\"percentage\":{"
				 "\"numerator\":5,\"denominator\":\"TEN_THOUSAND\"}},"
				 "\"abort\":{\"http_status\":503,\"percentage\":{\"numerator\":"
				 "10}},\"upstream_cluster\":\"c\",\"headers\":[{\"name\":\"x-f\","
				 "\"present_match\":true}],\"downstream_nodes\":[\"edge\"],"
				 "\"max_active_faults\":7,\"delay_percent_runtime\":\"k\","
				 "\"disable_downstream_cluster_stats\":true"),
			   "")));
	const struct arn_cfg_hcm *h = listener("l")->chains[0].hcm;
	assert_int_equal(h->http_filters[0], ARN_CFG_HF_FAULT);
	const struct arn_cfg_fault *f = h->http_filter_cfgs[0];
	assert_true(f->delay);
	assert_false(f->delay_header);
	assert_int_equal(f->delay_ms, 250);
	assert_int_equal(f->delay_pct.numerator, 5);
	assert_int_equal(f->delay_pct.denominator, 10000);
	assert_int_equal(f->abort, ARN_CFG_FAULT_ABORT_HTTP);
	assert_int_equal(f->abort_status, 503);
	assert_int_equal(f->abort_pct.numerator, 10);
	assert_string_equal(f->upstream_cluster, "c");
	assert_int_equal(f->n_headers, 1);
	assert_int_equal(f->n_downstream_nodes, 1);
	assert_int_equal(f->max_active, 7);
	/* an empty one (Istio's) is a filter that does nothing */
	tc_ok(L, LISTENER(HCM(FAULT("\"max_active_faults\":0"), "")));
	/* per route */
	tc_ok(L, LISTENER(HCM(FAULT("\"abort\":{\"header_abort\":{}}"),
			      "\"typed_per_filter_config\":{\"fault\":{" FAULT_AT ",\"abort\":{"
			      "\"grpc_status\":14}}},")));
	tc_refused(L,
		   LISTENER(HCM(FAULT("\"response_rate_limit\":{\"fixed_limit\":{"
				      "\"limit_kbps\":1}}"),
				"")),
		   "response_rate_limit");
	tc_refused(L, LISTENER(HCM(FAULT("\"abort\":{\"http_status\":600}"), "")),
		   "abort.http_status");
	tc_refused(L, LISTENER(HCM(FAULT("\"abort\":{\"grpc_status\":17}"), "")),
		   "abort.grpc_status: 17 is not a gRPC status code");
	tc_refused(L, LISTENER(HCM(FAULT("\"delay\":{\"fixed_delay\":\"301s\"}"), "")),
		   "delay.fixed_delay: 301000 ms: Arion delays a request 300000 ms at most");
	tc_refused(L, LISTENER(HCM(FAULT("\"delay\":{\"percentage\":{\"numerator\":1}}"), "")),
		   "delay: set fixed_delay or header_delay");
}

#define CSRF_F(fields)                                                                             \
	"{\"name\":\"cs\",\"typed_config\":{" AT(                                                  \
	    "envoy.extensions.filters.http.csrf.v3.CsrfPolicy") "," fields "}},"

/* envoy.filters.http.csrf: its policy (filter_enabled required,
 * shadow_enabled, additional_origins), a route's; Arion's bound on
 * additional_origins. Refused whole before (unknown filter type). */
static void test_http_csrf(void **state)
{
	(void)state;
	tc_ok(L, LISTENER(HCM(CSRF_F("\"filter_enabled\":{\"default_value\":{\"numerator\":50}},"
				     "\"shadow_enabled\":{\"default_value\":{\"numerator\":100}},"
				     "\"additional_origins\":[{\"exact\":\"a.example\"},"
				     "{\"suffix\":\".b.example\"}]"),
			      "\"typed_per_filter_config\":{\"cs\":{" AT(
				  "envoy.extensions.filters.http.csrf.v3."
				  "CsrfPolicy") ",\"filter_enabled\":{\"default_value\":{}}}},")));
	const struct arn_cfg_hcm *h = chain0()->hcm;
	assert_int_equal(h->http_filters[0], ARN_CFG_HF_CSRF);
	const struct arn_cfg_csrf *f = h->http_filter_cfgs[0];
	assert_int_equal(f->enabled.numerator, 50);
	assert_int_equal(f->enabled.denominator, 100);
	assert_int_equal(f->shadow.numerator, 100);
	assert_int_equal(f->n_origins, 2);
	assert_true(arn_cfg_str_match(&f->origins[1], "x.b.example", 11));
	assert_false(arn_cfg_str_match(&f->origins[1], "b.example", 9));
	const struct arn_cfg_vhost *vh = &h->inline_routes->vhosts[0];
	const struct arn_cfg_csrf *pr =
	    arn_cfg_per_filter_find(vh, &vh->routes[0], "cs", 2, ARN_CFG_PF_CSRF);
	assert_non_null(pr);
	assert_int_equal(pr->enabled.numerator, 0);
	assert_int_equal(pr->n_origins, 0);

	tc_refused(L, LISTENER(HCM(CSRF_F("\"additional_origins\":[]"), "")),
		   "typed_config.filter_enabled: missing (Envoy requires it)");
	char big[8192];
	int k = snprintf(
	    big, sizeof(big),
	    "{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
	    "\"port_value\":80}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","
	    "\"typed_config\":{" HCM_AT ",\"stat_prefix\":\"ing\",\"route_config\":{"
	    "\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],\"routes\":[{"
	    "\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\"}}]}]},"
	    "\"http_filters\":[{\"name\":\"cs\",\"typed_config\":{" AT(
		"envoy.extensions.filters.http.csrf.v3.CsrfPolicy") ",\"filter_enabled\":{"
								    "\"default_value\":{}},"
								    "\"additional_origins\":[");
	for (int i = 0; i <= ARN_CFG_CSRF_MAX_ORIGINS; i++)
		k += snprintf(big + k, sizeof(big) - (size_t)k, "%s{\"exact\":\"o%d\"}",
			      i ? "," : "", i);
	snprintf(big + k, sizeof(big) - (size_t)k, "]}}," ROUTER "]}}]}]}");
	tc_refused(L, big, "additional_origins: 65 entries: more than 64");
}

#define HM_F(fields)                                                                               \
	"{\"name\":\"hm\",\"typed_config\":{" AT(                                                  \
	    "envoy.extensions.filters.http.header_mutation.v3.HeaderMutation") "," fields "}},"
#define HM_REQ(muts) HM_F("\"mutations\":{\"request_mutations\":[" muts "]}")

/* envoy.filters.http.header_mutation: the model of each mutation kind, the
 * per-route HeaderMutationPerRoute, most_specific_header_mutations_wins;
 * every refusal names its field (parameter_mutations, regex_copy, a
 * pseudo-header, a framing header, no action, the bound). Refused whole
 * before (unknown filter type). */
static void test_http_header_mutation(void **state)
{
	(void)state;
	tc_ok(L, LISTENER(
		     HCM(HM_F("\"most_specific_header_mutations_wins\":true,\"mutations\":{"
			      "\"request_mutations\":[{\"remove\":\"X-A\"},{\"append\":{\"header\":"
			      "{\"key\":\"x-b\",\"value\":\"%REQ(x-a)%\"},\"append_action\":"
			      "\"ADD_IF_ABSENT\",\"keep_empty_value\":true}},{\"remove_on_match\":"
			      "{\"key_matcher\":{\"prefix\":\"x-c\"}}}],\"response_mutations\":["
			      "{\"remove\":\"server\"}]}"),
			 "\"typed_per_filter_config\":{\"hm\":{" AT(
			     "envoy.extensions.filters.http.header_mutation.v3."
			     "HeaderMutationPerRoute") ",\"mutations\":{\"response_mutations\":[{"
						       "\"remove\":\"x-d\"}]}}},")));
	const struct arn_cfg_hcm *h = chain0()->hcm;
	assert_int_equal(h->http_filters[0], ARN_CFG_HF_HEADER_MUTATION);
	const struct arn_cfg_header_mutation *f = h->http_filter_cfgs[0];
	assert_true(f->most_specific_wins);
	assert_int_equal(f->n_req, 3);
	assert_int_equal(f->n_resp, 1);
	assert_int_equal(f->req[0].kind, ARN_CFG_HM_REMOVE);
	assert_memory_equal(f->req[0].name, "x-a", 3);
	assert_int_equal(f->req[1].kind, ARN_CFG_HM_APPEND);
	assert_int_equal(f->req[1].add.append, ARN_CFG_ADD_IF_ABSENT);
	assert_true(f->req[1].add.keep_empty_value);
	assert_int_equal(f->req[1].add.value_len, 10);
	assert_int_equal(f->req[2].kind, ARN_CFG_HM_REMOVE_MATCH);
	assert_true(arn_cfg_str_match(&f->req[2].key, "x-cd", 4));
	const struct arn_cfg_vhost *vh = &h->inline_routes->vhosts[0];
	const struct arn_cfg_header_mutation *pr =
	    arn_cfg_per_filter_find(vh, NULL, "hm", 2, ARN_CFG_PF_HEADER_MUTATION);
	assert_non_null(pr);
	assert_int_equal(pr->n_resp, 1);
	assert_int_equal(pr->n_req, 0);

	tc_refused(
	    L,
	    LISTENER(HCM(HM_F("\"mutations\":{\"parameter_mutations\":[{\"remove\":\"q\"}]}"), "")),
	    "typed_config.mutations.parameter_mutations: not supported by Arion");
	tc_refused(L,
		   LISTENER(HCM(HM_REQ("{\"regex_copy\":{\"source_header\":\"a\","
				       "\"target_header\":\"b\"}}"),
				"")),
		   "request_mutations[0].regex_copy: not supported by Arion");
	tc_refused(L, LISTENER(HCM(HM_REQ("{}"), "")),
		   "request_mutations[0]: no action (Envoy requires one)");
	tc_refused(L, LISTENER(HCM(HM_REQ("{\"remove\":\"host\"}"), "")),
		   "request_mutations[0].remove: 'host' frames or routes the message");
	tc_refused(L,
		   LISTENER(HCM(HM_REQ("{\"append\":{\"header\":{\"key\":\"content-length\","
				       "\"value\":\"1\"}}}"),
				"")),
		   "append.header.key: 'content-length' frames or routes the message");
	tc_refused(L,
		   LISTENER(HCM(HM_REQ("{\"append\":{\"header\":{\"key\":\":path\","
				       "\"value\":\"/\"}}}"),
				"")),
		   "append.header.key: byte 0x3a at 0 is not a header name character");
	tc_refused(L,
		   LISTENER(HCM(HM_REQ("{\"append\":{\"header\":{\"key\":\"x\","
				       "\"value\":\"a\\r\\nb\"}}}"),
				"")),
		   "append.header.value");
	tc_refused(L, LISTENER(HCM(HM_REQ("{\"remove_on_match\":{}}"), "")),
		   "remove_on_match.key_matcher: missing (Envoy requires it)");
	tc_refused(
	    L,
	    LISTENER(HCM(HM_F("\"mutations\":{}"),
			 "\"typed_per_filter_config\":{\"hm\":{" AT(
			     "envoy.extensions.filters.http.header_mutation.v3."
			     "HeaderMutationPerRoute") ",\"mutations\":{\"request_mutations\":"
						       "[{\"remove\":\":authority\"}]}}},")),
	    "request_mutations[0].remove");
	char big[8192];
	int k = snprintf(
	    big, sizeof(big),
	    "{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
	    "\"port_value\":80}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","
	    "\"typed_config\":{" HCM_AT ",\"stat_prefix\":\"ing\",\"route_config\":{"
	    "\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],\"routes\":[{"
	    "\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\"}}]}]},"
	    "\"http_filters\":[{\"name\":\"hm\",\"typed_config\":{" AT(
		"envoy.extensions.filters.http.header_mutation.v3.HeaderMutation") ","
										   "\"mutations\":{"
										   "\"response_"
										   "mutations\":[");
	for (int i = 0; i <= ARN_CFG_HM_MAX_OPS; i++)
		k += snprintf(big + k, sizeof(big) - (size_t)k, "%s{\"remove\":\"x-%d\"}",
			      i ? "," : "", i);
	snprintf(big + k, sizeof(big) - (size_t)k, "]}}}," ROUTER "]}}]}]}");
	tc_refused(L, big, "response_mutations: 33 mutations: more than 32");
}

/* clang-format off */
#define CMP_F                                                                                      \
	"{\"name\":\"gz\",\"typed_config\":{"                                                       \
	AT("envoy.extensions.filters.http.compressor.v3.Compressor")                               \
	",\"compressor_library\":{\"name\":\"g\",\"typed_config\":{"                                \
	AT("envoy.extensions.compression.gzip.compressor.v3.Gzip") "}}}},"
/* clang-format on */
#define CMP_PR(fields)                                                                             \
	"\"typed_per_filter_config\":{\"gz\":{" AT(                                                \
	    "envoy.extensions.filters.http.compressor.v3.CompressorPerRoute") "," fields "}},"

/* A compressor's CompressorPerRoute (Envoy Gateway turns compression on
 * per route with it): overrides with remove_accept_encoding_header and a
 * compressor_library (Envoy 1.37), disabled; Envoy's validation of the
 * oneof refused naming the field. It was refused whole before. */
static void test_http_compressor_per_route(void **state)
{
	(void)state;
	tc_ok(L,
	      LISTENER(HCM(CMP_F, CMP_PR("\"overrides\":{\"response_direction_config\":{"
					 "\"remove_accept_encoding_header\":true},"
					 "\"compressor_library\":{\"name\":\"b\","
					 "\"typed_config\":{" AT(
					     "envoy.extensions.compression."
					     "brotli.compressor.v3.Brotli") ","
									    "\"quality\":5}}}"))));
	const struct arn_cfg_hcm *h = chain0()->hcm;
	const struct arn_cfg_vhost *vh = &h->inline_routes->vhosts[0];
	const struct arn_cfg_compressor_route *pr =
	    arn_cfg_per_filter_find(vh, &vh->routes[0], "gz", 2, ARN_CFG_PF_COMPRESSOR);
	assert_non_null(pr);
	assert_int_equal(pr->enable, 1);
	assert_int_equal(pr->remove_ae, 1);
	assert_true(pr->has_lib);
	assert_int_equal(pr->lib.lib, ARN_CFG_CMP_BROTLI);
	assert_int_equal(pr->lib.br_quality, 5);
	/* the filter's own says no removal; the route's yes */
	assert_false(h->cmp_strip_accept_encoding);
	assert_true(arn_cfg_cmp_strip_accept_encoding(h, h->inline_routes, vh, &vh->routes[0]));

	tc_ok(L, LISTENER(HCM(CMP_F, CMP_PR("\"overrides\":{}"))));
	h = chain0()->hcm;
	vh = &h->inline_routes->vhosts[0];
	pr = arn_cfg_per_filter_find(vh, &vh->routes[0], "gz", 2, ARN_CFG_PF_COMPRESSOR);
	assert_non_null(pr);
	assert_int_equal(pr->enable, -1); /* no response_direction_config: the filter's */
	assert_int_equal(pr->remove_ae, -1);
	assert_false(pr->has_lib);

	tc_ok(L, LISTENER(HCM(CMP_F, CMP_PR("\"disabled\":true"))));
	h = chain0()->hcm;
	vh = &h->inline_routes->vhosts[0];
	pr = arn_cfg_per_filter_find(vh, &vh->routes[0], "gz", 2, ARN_CFG_PF_COMPRESSOR);
	assert_non_null(pr);
	assert_int_equal(pr->enable, 0);

	tc_refused(L, LISTENER(HCM(CMP_F, CMP_PR("\"disabled\":false"))),
		   "typed_per_filter_config[gz].disabled: must be true");
	tc_refused(L,
		   LISTENER(HCM(CMP_F, CMP_PR("\"overrides\":{\"compressor_library\":{"
					      "\"name\":\"x\",\"typed_config\":{" AT(
						  "google.protobuf.Empty") "}}}"))),
		   "overrides.compressor_library.typed_config: compressor library "
		   "'google.protobuf.Empty' is not supported");
	tc_refused(L,
		   LISTENER(HCM(CMP_F, "\"typed_per_filter_config\":{\"gz\":{" AT(
					   "envoy.extensions.filters.http.compressor.v3."
					   "CompressorPerRoute") "}},")),
		   "set disabled or overrides");
}

#define RLS_AT AT("envoy.extensions.filters.http.ratelimit.v3.RateLimit")
#define RLS_ROUTE_AT AT("envoy.extensions.filters.http.ratelimit.v3.RateLimitPerRoute")
#define RLS_SVC                                                                                    \
	"\"rate_limit_service\":{\"grpc_service\":{\"envoy_grpc\":{\"cluster_name\":\"rls\"}},"    \
	"\"transport_api_version\":\"V3\"}"
#define RLS(fields) "{\"name\":\"rl\",\"typed_config\":{" RLS_AT "," fields "}},"

/* envoy.filters.http.ratelimit: Envoy Gateway's shape (domain, the
 * service's envoy_grpc cluster, V3, x-ratelimit-* headers) and Envoy's
 * defaults (timeout 20 ms, 429, 500); every field converted; a
 * RateLimitPerRoute's rate_limits, vh_rate_limits and domain; what
 * Arion does not do refused naming the field: google_grpc, the service's
 * own timeout (Envoy uses the filter's), stat_prefix, override_option,
 * and a RateLimit field newer than Arion's copy (filter_enabled, 14)
 * as unknown. Fails before: the filter's type is unknown. */
static void test_http_ratelimit(void **state)
{
	(void)state;
	tc_ok(L, LISTENER(HCM(RLS("\"domain\":\"eg\"," RLS_SVC
				  ",\"enable_x_ratelimit_headers\":\"DRAFT_VERSION_03\""),
			      "\"typed_per_filter_config\":{\"rl\":{" RLS_ROUTE_AT
			      ",\"vh_rate_limits\":\"INCLUDE\",\"domain\":\"d2\","
			      "\"rate_limits\":[{\"actions\":[{\"remote_address\":{}}]}]}},")));
	const struct arn_cfg_hcm *h = chain0()->hcm;
	assert_int_equal(h->http_filters[0], ARN_CFG_HF_RATELIMIT);
	const struct arn_cfg_rls *f = h->http_filter_cfgs[0];
	assert_int_equal(f->domain_len, 2);
	assert_memory_equal(f->domain, "eg", 2);
	assert_int_equal(f->timeout_ms, 20);
	assert_int_equal(f->rate_limited_status, 429);
	assert_int_equal(f->status_on_error, 500);
	assert_true(f->x_ratelimit_headers);
	assert_false(f->failure_mode_deny);
	assert_int_equal(f->cluster.len, 3);
	assert_memory_equal(f->cluster.name, "rls", 3);
	const struct arn_cfg_vhost *vh = &h->inline_routes->vhosts[0];
	const struct arn_cfg_rls_route *pr =
	    arn_cfg_per_filter_find(vh, NULL, "rl", 2, ARN_CFG_PF_RATELIMIT);
	assert_non_null(pr);
	assert_int_equal(pr->vh_rate_limits, ARN_CFG_VH_RL_INCLUDE);
	assert_int_equal(pr->n_rate_limits, 1);
	assert_int_equal(pr->rate_limits[0].actions[0].kind, ARN_CFG_RL_REMOTE_ADDRESS);
	assert_memory_equal(pr->domain, "d2", 2);
	tc_ok(L, LISTENER(HCM(RLS("\"domain\":\"eg\",\"stage\":2,\"request_type\":\"external\","
				  "\"timeout\":\"0.1s\",\"failure_mode_deny\":true,"
				  "\"rate_limited_as_resource_exhausted\":true,"
				  "\"disable_x_envoy_ratelimited_header\":true,"
				  "\"rate_limited_status\":{\"code\":399},"
				  "\"status_on_error\":{\"code\":503},"
				  "\"response_headers_to_add\":[{\"header\":{\"key\":\"X-A\","
				  "\"value\":\"1\"}}]," RLS_SVC),
			      "")));
	f = chain0()->hcm->http_filter_cfgs[0];
	assert_int_equal(f->stage, 2);
	assert_int_equal(f->request_type, ARN_CFG_RLS_EXTERNAL);
	assert_int_equal(f->timeout_ms, 100);
	assert_true(f->failure_mode_deny && f->resource_exhausted && f->no_x_envoy_ratelimited);
	assert_int_equal(f->rate_limited_status, 429); /* below 400: Envoy's 429 */
	assert_int_equal(f->status_on_error, 503);
	assert_int_equal(f->n_resp_add, 1);
	assert_string_equal(f->resp_add[0].key, "x-a");

	tc_refused(L, LISTENER(HCM(RLS(RLS_SVC), "")), "domain: missing");
	tc_refused(L, LISTENER(HCM(RLS("\"domain\":\"d\""), "")), "rate_limit_service: missing");
	tc_refused(L,
		   LISTENER(HCM(RLS("\"domain\":\"d\",\"rate_limit_service\":{\"grpc_service\":{"
				    "\"google_grpc\":{\"target_uri\":\"x\",\"stat_prefix\":\"s\"}}}"),
				"")),
		   "google_grpc: not supported by Arion");
	tc_refused(L,
		   LISTENER(HCM(RLS("\"domain\":\"d\",\"rate_limit_service\":{\"grpc_service\":{"
				    "\"envoy_grpc\":{\"cluster_name\":\"rls\"},\"timeout\":\"1s\"}}"),
				"")),
		   "timeout");
	tc_refused(L, LISTENER(HCM(RLS("\"domain\":\"d\",\"stat_prefix\":\"p\"," RLS_SVC), "")),
		   "stat_prefix");
	tc_refused(L, LISTENER(HCM(RLS("\"domain\":\"d\",\"stage\":11," RLS_SVC), "")),
		   "stage: 11 is more than 10");
	tc_refused(L, LISTENER(HCM(RLS("\"domain\":\"d\",\"request_type\":\"x\"," RLS_SVC), "")),
		   "request_type");
	tc_refused(L,
		   LISTENER(HCM(RLS("\"domain\":\"d\"," RLS_SVC),
				"\"typed_per_filter_config\":{\"rl\":{" RLS_ROUTE_AT
				",\"override_option\":\"INCLUDE_POLICY\"}},")),
		   "override_option");
}

#define BA_AT AT("envoy.extensions.filters.http.basic_auth.v3.BasicAuth")
#define BA_ROUTE_AT AT("envoy.extensions.filters.http.basic_auth.v3.BasicAuthPerRoute")
#define BA(fields) "{\"name\":\"ba\",\"typed_config\":{" BA_AT "," fields "}},"
#define BA_USERS(text) "\"users\":{\"inline_string\":\"" text "\"}"
#define BA_ALICE "alice:{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ="
#define BA_BOB "bob:{SHA}87u9ZqY9S/F0eUBXjsPQEDUw4h0="

/* envoy.filters.http.basic_auth: an htpasswd (comments, empty lines, a
 * last line without newline) sorted by name, forward_username_header and
 * authentication_header lower cased, a route's BasicAuthPerRoute, a file
 * read at conversion; each of Envoy's htpasswd errors and Arion's bounds
 * refused naming the line. */
static void test_http_basic_auth(void **state)
{
	(void)state;
#define BA_FIELDS                                                                                  \
	BA_USERS("# users\\n\\n" BA_BOB "\\n" BA_ALICE)                                            \
	",\"forward_username_header\":\"X-User\","                                                 \
	"\"authentication_header\":\"X-Auth\""
	tc_ok(L, LISTENER(HCM(BA(BA_FIELDS),
			      "\"typed_per_filter_config\":{\"ba\":{" BA_ROUTE_AT
			      "," BA_USERS("carol:{SHA}hsAaMBat8aKiQgxhKhAqvbXOPbw=\\n") "}},")));
	const struct arn_cfg_hcm *h = chain0()->hcm;
	assert_int_equal(h->http_filters[0], ARN_CFG_HF_BASIC_AUTH);
	const struct arn_cfg_basic_auth *f = h->http_filter_cfgs[0];
	assert_int_equal(f->users.n, 2);
	/* sorted: bob (3 bytes) before alice (5) */
	assert_memory_equal(f->users.users[0].name, "bob", 3);
	assert_memory_equal(f->users.users[1].name, "alice", 5);
	const struct arn_cfg_basic_auth_user *u = arn_cfg_basic_auth_find(&f->users, "alice", 5);
	assert_non_null(u);
	assert_memory_equal(u->hash, "5en6G6MezRroT3XKqkdPOmY/BfQ=", 28);
	assert_null(arn_cfg_basic_auth_find(&f->users, "alic", 4));
	assert_null(arn_cfg_basic_auth_find(&f->users, "carol", 5));
	assert_string_equal(f->forward_username_header, "x-user");
	assert_int_equal(f->forward_username_header_len, 6);
	assert_string_equal(f->authentication_header, "x-auth");
	const struct arn_cfg_vhost *vh = &h->inline_routes->vhosts[0];
	const struct arn_cfg_basic_auth_users *pr =
	    arn_cfg_per_filter_find(vh, &vh->routes[0], "ba", 2, ARN_CFG_PF_BASIC_AUTH);
	assert_non_null(pr);
	assert_int_equal(pr->n, 1);
	assert_non_null(arn_cfg_basic_auth_find(pr, "carol", 5));
	/* neither header set: Authorization, nothing forwarded */
	tc_ok(L, LISTENER(HCM(BA(BA_USERS(BA_ALICE)), "")));
	f = chain0()->hcm->http_filter_cfgs[0];
	assert_null(f->forward_username_header);
	assert_null(f->authentication_header);
	/* a route's users may be empty (Envoy reads them allowing it) */
	tc_ok(L, LISTENER(HCM(BA(BA_USERS(BA_ALICE)),
			      "\"typed_per_filter_config\":{\"ba\":{" BA_ROUTE_AT
			      "," BA_USERS("") "}},")));

	/* users from a file, read at conversion */
	char path[] = "/tmp/arion-htpasswd-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	static const char file[] = BA_ALICE "\n" BA_BOB "\n";
	assert_int_equal(write(fd, file, strlen(file)), (ssize_t)strlen(file));
	close(fd);
	char fl[1024];
	snprintf(fl, sizeof(fl),
		 LISTENER(HCM("{\"name\":\"ba\",\"typed_config\":{" BA_AT
			      ",\"users\":{\"filename\":\"%s\"}}},",
			      "")),
		 path);
	tc_ok(L, fl);
	assert_int_equal(
	    ((const struct arn_cfg_basic_auth *)chain0()->hcm->http_filter_cfgs[0])->users.n, 2);
	unlink(path);
	tc_refused(L, fl, "users.filename: cannot open");

	static const struct {
		const char *l, *want;
	} bad[] = {
	    {LISTENER(HCM(BA(BA_USERS(BA_ALICE "\\nbob")), "")),
	     "users.inline_string: line 2: basic auth: invalid htpasswd format, username:password "
	     "is expected"},
	    {LISTENER(HCM(BA(BA_USERS(":{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ=")), "")),
	     "line 1: basic auth: empty user name or password"},
	    {LISTENER(HCM(BA(BA_USERS("bob:")), "")),
	     "line 1: basic auth: empty user name or password"},
	    {LISTENER(HCM(BA(BA_USERS(BA_ALICE "\\n" BA_BOB "\\n" BA_ALICE)), "")),
	     "line 3: basic auth: duplicate users"},
	    /* a duplicate before its hash is looked at, as in Envoy */
	    {LISTENER(HCM(BA(BA_USERS(BA_ALICE "\\nalice:{MD5}x")), "")),
	     "line 2: basic auth: duplicate users"},
	    /* the duplicate on line 2 comes before line 3's error, as in Envoy */
	    {LISTENER(HCM(BA(BA_USERS(BA_ALICE "\\n" BA_ALICE "\\nbad")), "")),
	     "line 2: basic auth: duplicate users"},
	    {LISTENER(HCM(BA(BA_USERS("bob:$apr1$xyz$0123456789012345678901")), "")),
	     "line 1: basic auth: unsupported htpasswd format: please use {SHA}"},
	    {LISTENER(HCM(BA(BA_USERS("bob:{SHA}87u9ZqY9S/F0eUBXjsPQEDUw4h0")), "")),
	     "line 1: basic auth: invalid htpasswd format, invalid SHA hash length"},
	    /* a CRLF file: the CR is in the hash (Envoy's length error) */
	    {LISTENER(HCM(BA(BA_USERS(BA_BOB "\\r\\n")), "")),
	     "line 1: basic auth: invalid htpasswd format, invalid SHA hash length"},
	    {LISTENER(HCM(BA(BA_USERS("b\\u0001b:{SHA}87u9ZqY9S/F0eUBXjsPQEDUw4h0=")), "")),
	     "line 1: a control byte in the user name"},
	    {LISTENER(HCM(BA("\"forward_username_header\":\"x-u\""), "")),
	     "typed_config.users: missing (Envoy requires it)"},
	    {LISTENER(HCM(BA(BA_USERS("")), "")),
	     "users.inline_string: empty (Envoy: DataSource cannot be empty)"},
	    {LISTENER(HCM(BA(BA_USERS(BA_BOB) ",\"forward_username_header\":\"x u\""), "")),
	     "forward_username_header: byte 0x20 at 1 is not a header name character"},
	    {LISTENER(
		 HCM(BA(BA_USERS(BA_BOB) ",\"forward_username_header\":\"Content-Length\""), "")),
	     "forward_username_header: 'content-length' frames or routes the request"},
	    {LISTENER(HCM(BA(BA_USERS(BA_BOB) ",\"authentication_header\":\"a:b\""), "")),
	     "authentication_header: byte 0x3a at 1"},
	    {LISTENER(HCM(BA(BA_USERS(BA_BOB)),
			  "\"typed_per_filter_config\":{\"ba\":{" BA_ROUTE_AT "}},")),
	     "typed_per_filter_config[ba].users: missing (Envoy requires it)"},
	    {LISTENER(HCM(BA(BA_USERS(BA_BOB)), "\"typed_per_filter_config\":{\"ba\":{" BA_ROUTE_AT
						"," BA_USERS("x") "}},")),
	     "typed_per_filter_config[ba].users.inline_string: line 1: basic auth: invalid "
	     "htpasswd format"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		tc_refused(L, bad[i].l, bad[i].want);
}

#define OA_AT AT("envoy.extensions.filters.http.oauth2.v3.OAuth2")
#define OA_TE                                                                                      \
	"\"token_endpoint\":{\"uri\":\"https://idp.example:8443/t/token\",\"cluster\":\"idp\","    \
	"\"timeout\":\"3s\"},"
#define OA_AE "\"authorization_endpoint\":\"https://idp.example/auth?z=1&a=b&scope=x\","
#define OA_CR                                                                                      \
	"\"credentials\":{\"client_id\":\"my-client\",\"token_secret\":{\"name\":\"cs\","          \
	"\"sds_config\":{\"ads\":{}}},\"hmac_secret\":{\"name\":\"hm\"}},"
#define OA_RU "\"redirect_uri\":\"%REQ(x-forwarded-proto)%://%REQ(:authority)%/oauth2/callback\","
#define OA_PM                                                                                      \
	"\"redirect_path_matcher\":{\"path\":{\"exact\":\"/oauth2/callback\"}},"                   \
	"\"signout_path\":{\"path\":{\"exact\":\"/signout\"}}"
#define OA_BASE OA_TE OA_AE OA_CR OA_RU OA_PM
#define OA(fields) "{\"name\":\"oa\",\"typed_config\":{" OA_AT ",\"config\":{" fields "}}},"

/* envoy.filters.http.oauth2 converted as Envoy's FilterConfig reads it:
 * the token endpoint's Host and path from its uri, the authorization
 * endpoint's parameters (its own, client_id, response_type, the scopes
 * joined and encoded, Envoy's "user" without any) sorted by name, the
 * resources encoded, Envoy's default cookie names, both secrets by name;
 * each refusal names its field (use_refresh_token true, an sds_config
 * other than ADS, the required fields, a bad URL, format or cookie name). */
static void test_http_oauth2(void **state)
{
	(void)state;
	/* the secrets first: a listener naming them warms until they are in */
	tc_ok(S, "{\"name\":\"cs\",\"generic_secret\":{\"secret\":{\"inline_string\":\"c\"}}}");
	tc_ok(S, "{\"name\":\"hm\",\"generic_secret\":{\"secret\":{\"inline_string\":\"h\"}}}");
	tc_ok(L, LISTENER(
		     HCM(OA(OA_TE OA_AE OA_RU OA_PM
			    ",\"auth_scopes\":[\"openid\",\"e mail\"],"
			    "\"resources\":[\"https://r/\"],\"forward_bearer_token\":true,"
			    "\"auth_type\":\"BASIC_AUTH\",\"default_expires_in\":\"30s\","
			    "\"use_refresh_token\":false,"
			    "\"credentials\":{\"client_id\":\"my-client\","
			    "\"token_secret\":{\"name\":\"cs\"},\"hmac_secret\":{\"name\":\"hm\"},"
			    "\"cookie_names\":{\"bearer_token\":\"BT\"}}"),
			 "")));
	const struct arn_cfg_hcm *h = chain0()->hcm;
	assert_int_equal(h->http_filters[0], ARN_CFG_HF_OAUTH2);
	const struct arn_cfg_oauth2 *f = h->http_filter_cfgs[0];
	assert_false(f->inert);
	assert_memory_equal(f->token_host, "idp.example:8443", f->token_host_len);
	assert_int_equal(f->token_host_len, 16);
	assert_memory_equal(f->token_path, "/t/token", 8);
	assert_int_equal(f->timeout_ms, 3000);
	assert_memory_equal(f->cluster.name, "idp", 3);
	assert_memory_equal(f->auth_base, "https://idp.example/auth", f->auth_base_len);
	const char *want[][2] = {{"a", "b"},
				 {"client_id", "my-client"},
				 {"response_type", "code"},
				 {"scope", "openid%20e%20mail"},
				 {"z", "1"}};
	assert_int_equal(f->n_params, 5);
	for (size_t i = 0; i < 5; i++) {
		assert_int_equal(f->params[i].kl, strlen(want[i][0]));
		assert_memory_equal(f->params[i].k, want[i][0], f->params[i].kl);
		assert_int_equal(f->params[i].vl, strlen(want[i][1]));
		assert_memory_equal(f->params[i].v, want[i][1], f->params[i].vl);
	}
	assert_memory_equal(f->resources, "&resource=https%3A%2F%2Fr%2F", f->resources_len);
	assert_memory_equal(f->ck_bearer, "BT", f->ck_bearer_len);
	assert_memory_equal(f->ck_hmac, "OauthHMAC", f->ck_hmac_len);
	assert_memory_equal(f->ck_expires, "OauthExpires", f->ck_expires_len);
	assert_memory_equal(f->ck_id, "IdToken", f->ck_id_len);
	assert_memory_equal(f->ck_refresh, "RefreshToken", f->ck_refresh_len);
	assert_memory_equal(f->token_secret.name, "cs", 2);
	assert_memory_equal(f->hmac_secret.name, "hm", 2);
	assert_true(f->basic_auth && f->forward_bearer_token);
	assert_int_equal(f->default_expires_in_s, 30);
	assert_non_null(f->redirect_uri);
	/* no scopes: Envoy's "user"; no config: a filter doing nothing */
	tc_ok(L, LISTENER(HCM(OA(OA_BASE), "")));
	f = chain0()->hcm->http_filter_cfgs[0];
	assert_memory_equal(f->params[3].v, "user", 4);
	tc_ok(L, LISTENER(HCM("{\"name\":\"oa\",\"typed_config\":{" OA_AT "}},", "")));
	f = chain0()->hcm->http_filter_cfgs[0];
	assert_true(f->inert);
	/* refusals, by field */
	tc_refused(L, LISTENER(HCM(OA(OA_BASE ",\"use_refresh_token\":true"), "")),
		   "config.use_refresh_token: true is not supported by Arion");
	tc_refused(L,
		   LISTENER(HCM(OA(OA_TE OA_AE OA_RU OA_PM
				   ",\"credentials\":{\"client_id\":\"c\",\"token_secret\":"
				   "{\"name\":\"cs\",\"sds_config\":{\"path_config_source\":{"
				   "\"path\":\"/x\"}}},\"hmac_secret\":{\"name\":\"hm\"}}"),
				"")),
		   "config.credentials.token_secret.sds_config: an sds_config source is refused");
	tc_refused(L,
		   LISTENER(HCM(OA(OA_TE OA_AE OA_RU OA_PM
				   ",\"credentials\":{\"client_id\":\"c\",\"token_secret\":"
				   "{\"name\":\"cs\"}}"),
				"")),
		   "config.credentials.hmac_secret: missing");
	tc_refused(
	    L,
	    LISTENER(
		HCM(OA(OA_TE OA_CR OA_RU OA_PM ",\"authorization_endpoint\":\"/relative\""), "")),
	    "config.authorization_endpoint: '/relative' is not an http:// or https:// URL");
	tc_refused(L, LISTENER(HCM(OA(OA_TE OA_AE OA_CR OA_PM ",\"redirect_uri\":\"%NOPE%\""), "")),
		   "config.redirect_uri: ");
	tc_refused(L, LISTENER(HCM(OA(OA_BASE ",\"auth_type\":7"), "")),
		   "config.auth_type: 7 is not URL_ENCODED_BODY (0) or BASIC_AUTH (1)");
	tc_refused(
	    L,
	    LISTENER(HCM(OA("\"authorization_endpoint\":\"https://i/\","
			    "\"credentials\":{\"client_id\":\"c\",\"token_secret\":{\"name\":"
			    "\"cs\"},\"hmac_secret\":{\"name\":\"hm\"}},\"redirect_uri\":\"x\","
			    "\"redirect_path_matcher\":{\"path\":{\"exact\":\"/cb\"}},"
			    "\"signout_path\":{\"path\":{\"exact\":\"/so\"}}"),
			 "")),
	    "config.token_endpoint: missing");
	tc_refused(L,
		   LISTENER(HCM(OA(OA_TE OA_AE OA_RU OA_PM
				   ",\"credentials\":{\"client_id\":\"c\",\"token_secret\":"
				   "{\"name\":\"cs\"},\"hmac_secret\":{\"name\":\"hm\"},"
				   "\"cookie_names\":{\"oauth_hmac\":\"a;b\"}}"),
				"")),
		   "config.credentials.cookie_names.oauth_hmac");
}

/* Arion's bounds: a name of 257 bytes; 65537 users. */
static void test_http_basic_auth_limits(void **state)
{
	(void)state;
	static const char hash[] = ":{SHA}87u9ZqY9S/F0eUBXjsPQEDUw4h0=\\n";
	size_t per = 8 + sizeof(hash) - 1;
	size_t cap = 256 + (ARN_CFG_BASIC_AUTH_MAX_USERS + 1) * per + 512;
	char *l = malloc(cap), *p = l;
	assert_non_null(l);
	p += sprintf(p, "%s",
		     "{\"name\":\"l\"," ADDR ",\"filter_chains\":[{\"filters\":["
		     "{\"name\":\"hcm\",\"typed_config\":{" HCM_AT ",\"stat_prefix\":\"ing\","
		     "\"route_config\":{\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],"
		     "\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\"}}]}]},"
		     "\"http_filters\":[{\"name\":\"ba\",\"typed_config\":{" BA_AT
		     ",\"users\":{\"inline_string\":\"");
	char *users = p;
	for (unsigned i = 0; i < ARN_CFG_BASIC_AUTH_MAX_USERS; i++)
		p += sprintf(p, "u%06x%s", i, hash);
	static const char tail[] = "\"}}}," ROUTER "]}}]}]}";
	strcpy(p, tail);
	tc_ok(L, l);
	assert_int_equal(
	    ((const struct arn_cfg_basic_auth *)chain0()->hcm->http_filter_cfgs[0])->users.n,
	    ARN_CFG_BASIC_AUTH_MAX_USERS);
	p += sprintf(p, "u%06x%s", ARN_CFG_BASIC_AUTH_MAX_USERS, hash);
	strcpy(p, tail);
	tc_refused(L, l, "line 65537: more users than Arion's bound");
	/* a name of 257 bytes */
	p = users;
	memset(p, 'n', 257);
	p += 257;
	p += sprintf(p, "%s", hash);
	strcpy(p, tail);
	tc_refused(L, l, "line 1: a user name longer than Arion's bound");
	p = users + 1; /* 256 bytes */
	memmove(p, p + 1, strlen(p + 1) + 1);
	tc_ok(L, l);
	free(l);
}

/* envoy.filters.http.stateful_session: a cookie (name, ttl, path) and a
 * header session state, strict, a route's StatefulSessionPerRoute
 * (disabled, or its own); an empty one does nothing; a missing name, a
 * name or path a Set-Cookie line cannot carry, another session state
 * type and disabled false are refused naming the field. */
#define SS_AT AT("envoy.extensions.filters.http.stateful_session.v3.StatefulSession")
#define SSR_AT AT("envoy.extensions.filters.http.stateful_session.v3.StatefulSessionPerRoute")
#define SS_COOKIE_AT AT("envoy.extensions.http.stateful_session.cookie.v3.CookieBasedSessionState")
#define SS_HEADER_AT AT("envoy.extensions.http.stateful_session.header.v3.HeaderBasedSessionState")
#define SS(fields) "{\"name\":\"ss\",\"typed_config\":{" SS_AT fields "}},"
#define SS_STATE(at, fields)                                                                       \
	",\"session_state\":{\"name\":\"s\",\"typed_config\":{" at "," fields "}}"
static void test_http_stateful_session(void **state)
{
	(void)state;
	tc_ok(L, LISTENER(HCM(
		     SS(SS_STATE(SS_COOKIE_AT, "\"cookie\":{\"name\":\"sess\",\"ttl\":"
					       "\"120s\",\"path\":\"/app\"}") ",\"strict\":true"),
		     "\"typed_per_filter_config\":{\"ss\":{" SSR_AT ",\"disabled\":true}},")));
	const struct arn_cfg_hcm *h = chain0()->hcm;
	assert_int_equal(h->http_filters[0], ARN_CFG_HF_STATEFUL_SESSION);
	const struct arn_cfg_stateful_session *s = h->http_filter_cfgs[0];
	assert_int_equal(s->mode, ARN_CFG_SS_COOKIE);
	assert_true(s->strict);
	assert_false(s->disabled);
	assert_memory_equal(s->name, "sess", 4);
	assert_int_equal(s->name_len, 4);
	assert_int_equal(s->ttl_s, 120);
	assert_int_equal(s->path_len, 4);
	assert_memory_equal(s->path, "/app", 4);
	const struct arn_cfg_vhost *vh = &h->inline_routes->vhosts[0];
	const struct arn_cfg_stateful_session *r =
	    arn_cfg_per_filter_find(vh, &vh->routes[0], "ss", 2, ARN_CFG_PF_STATEFUL_SESSION);
	assert_non_null(r);
	assert_true(r->disabled);
	/* a header, lower-cased; a route's own configuration */
	tc_ok(L, LISTENER(HCM(SS(SS_STATE(SS_HEADER_AT, "\"name\":\"X-Session\"")),
			      "\"typed_per_filter_config\":{\"ss\":{" SSR_AT
			      ",\"stateful_session\":{\"strict\":false" SS_STATE(
				  SS_COOKIE_AT, "\"cookie\":{\"name\":\"c\"}") "}}},")));
	h = chain0()->hcm;
	s = h->http_filter_cfgs[0];
	assert_int_equal(s->mode, ARN_CFG_SS_HEADER);
	assert_false(s->strict);
	assert_memory_equal(s->name, "x-session", 9);
	vh = &h->inline_routes->vhosts[0];
	r = arn_cfg_per_filter_find(vh, &vh->routes[0], "ss", 2, ARN_CFG_PF_STATEFUL_SESSION);
	assert_non_null(r);
	assert_false(r->disabled);
	assert_int_equal(r->mode, ARN_CFG_SS_COOKIE);
	assert_int_equal(r->ttl_s, 0);
	assert_null(r->path);
	/* no session_state: Envoy's empty session state, nothing done */
	tc_ok(L, LISTENER(HCM(SS(""), "")));
	assert_int_equal(
	    ((const struct arn_cfg_stateful_session *)chain0()->hcm->http_filter_cfgs[0])->mode,
	    ARN_CFG_SS_NONE);
	tc_refused(L, LISTENER(HCM(SS(SS_STATE(SS_COOKIE_AT, "\"cookie\":{\"ttl\":\"1s\"}")), "")),
		   "cookie.name: missing");
	tc_refused(L,
		   LISTENER(HCM(SS(SS_STATE(SS_COOKIE_AT, "\"cookie\":{\"name\":\"a;b\"}")), "")),
		   "cookie.name: byte 0x3b at 1 is not a cookie name character");
	tc_refused(
	    L,
	    LISTENER(HCM(
		SS(SS_STATE(SS_COOKIE_AT, "\"cookie\":{\"name\":\"a\",\"path\":\"/a;b\"}")), "")),
	    "cookie.path: byte 0x3b at 2 is not a cookie path character");
	tc_refused(
	    L, LISTENER(HCM(SS(",\"session_state\":{\"typed_config\":{" SS_COOKIE_AT "}}"), "")),
	    "cookie: missing");
	tc_refused(L, LISTENER(HCM(SS(SS_STATE(SS_HEADER_AT, "\"name\":\"\"")), "")),
		   "name: missing");
	tc_refused(L, LISTENER(HCM(SS(SS_STATE(SS_HEADER_AT, "\"name\":\"a b\"")), "")),
		   "name: byte 0x20 at 1 is not a header name character");
	tc_refused(L, LISTENER(HCM(SS(SS_STATE(HRBAC_AT, "\"rules\":{}")), "")),
		   "is not supported by Arion (CookieBasedSessionState and "
		   "HeaderBasedSessionState are)");
	tc_refused(L,
		   LISTENER(HCM(SS(""), "\"typed_per_filter_config\":{\"ss\":{" SSR_AT
					",\"disabled\":false}},")),
		   "disabled: must be true");
}

/* envoy.filters.http.cors: the filter, a virtual host's per-filter
 * CorsPolicy with every field, and the deprecated virtual host `cors`;
 * a value with CR or LF and a bad matcher are refused naming the field. */
static void test_http_cors(void **state)
{
	(void)state;
#define CORS_AT AT("envoy.extensions.filters.http.cors.v3.Cors")
#define CORSP_AT AT("envoy.extensions.filters.http.cors.v3.CorsPolicy")
	tc_ok(L, LISTENER(HCM(
		     "{\"name\":\"cors\",\"typed_config\":{" CORS_AT "}},",
		     "\"cors\":{\"allow_origin_string_match\":[{\"exact\":\"https://a\"}]},"
		     "\"typed_per_filter_config\":{\"cors\":{" CORSP_AT
		     ",\"allow_origin_string_match\":[{\"suffix\":\".example\"},{\"safe_regex\":"
		     "{\"regex\":\"https://[a-z]+\\\\.test\"}}],\"allow_methods\":\"GET, PUT\","
		     "\"allow_headers\":\"*\",\"expose_headers\":\"x-t\",\"max_age\":\"60\","
		     "\"allow_credentials\":false,\"allow_private_network_access\":true,"
		     "\"forward_not_matching_preflights\":false,"
		     "\"filter_enabled\":{\"default_value\":{\"numerator\":50}},"
		     "\"shadow_enabled\":{\"default_value\":{\"numerator\":25}}}},")));
	const struct arn_cfg_hcm *h = chain0()->hcm;
	assert_int_equal(h->http_filters[0], ARN_CFG_HF_CORS);
	const struct arn_cfg_vhost *vh = &h->inline_routes->vhosts[0];
	const struct arn_cfg_cors *p[3];
	assert_int_equal(arn_cfg_cors_policies(vh, &vh->routes[0], "cors", 4, p), 1);
	assert_int_equal(p[0]->n_origins, 2);
	assert_true(arn_cfg_str_match(&p[0]->origins[0], "https://b.example", 17));
	assert_true(arn_cfg_str_match(&p[0]->origins[1], "https://x.test", 14));
	assert_memory_equal(p[0]->allow_methods, "GET, PUT", 8);
	assert_int_equal(p[0]->allow_methods_len, 8);
	assert_memory_equal(p[0]->max_age, "60", 2);
	assert_int_equal(p[0]->allow_credentials, 0);
	assert_int_equal(p[0]->allow_private_network, 1);
	assert_int_equal(p[0]->forward_not_matching, 0);
	assert_int_equal(p[0]->enabled.numerator, 50);
	assert_int_equal(p[0]->shadow.numerator, 25);
	/* another filter's name finds none; the deprecated field then */
	assert_int_equal(arn_cfg_cors_policies(vh, &vh->routes[0], "other", 5, p), 1);
	assert_int_equal(p[0]->n_origins, 1);
	assert_int_equal(p[0]->allow_credentials, -1);
	assert_int_equal(p[0]->enabled.numerator, 100); /* unset: every request */
	assert_int_equal(p[0]->shadow.numerator, 0);
	tc_refused(L,
		   LISTENER(HCM("{\"name\":\"cors\",\"typed_config\":{" CORS_AT "}},",
				"\"typed_per_filter_config\":{\"cors\":{" CORSP_AT
				",\"allow_methods\":\"GET\\r\\nx-evil: 1\"}},")),
		   "typed_per_filter_config[cors].allow_methods: contains CR, LF or NUL");
	tc_refused(L,
		   LISTENER(HCM("{\"name\":\"cors\",\"typed_config\":{" CORS_AT "}},",
				"\"cors\":{\"allow_origin_string_match\":[{\"safe_regex\":"
				"{\"regex\":\"(\"}}]},")),
		   "virtual_hosts[0].cors.allow_origin_string_match[0]");
#undef CORS_AT
#undef CORSP_AT
}

/* A JSON string literal's body for @p s (quotes and backslashes escaped). */
static const char *jwt_json_str(const char *s)
{
	static char buf[4][8192];
	static int k;
	char *o = buf[k++ % 4];
	size_t n = 0;
	for (; *s && n < sizeof(buf[0]) - 2; s++) {
		if (*s == '"' || *s == '\\')
			o[n++] = '\\';
		o[n++] = *s;
	}
	o[n] = 0;
	return o;
}

#define JWT_AT AT("envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication")
#define JWTPR_AT AT("envoy.extensions.filters.http.jwt_authn.v3.PerRouteConfig")

/* A listener with a jwt_authn filter "jwt" whose JwtAuthentication fields
 * are @p fields, and @p vhost_extra on its virtual host. */
static const char *jwt_listener(const char *fields, const char *vhost_extra)
{
	static char buf[32768];
	snprintf(
	    buf, sizeof(buf),
	    LISTENER("{\"name\":\"hcm\",\"typed_config\":{" HCM_AT ",\"stat_prefix\":\"ing\","
		     "\"route_config\":{\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],"
		     "%s\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":"
		     "\"c\"}}]}]},\"http_filters\":[{\"name\":\"jwt\",\"typed_config\":{" JWT_AT
		     ",%s}}," ROUTER "]}}"),
	    vhost_extra, fields);
	return buf;
}

/* envoy.filters.http.jwt_authn's conversion: providers with local_jwks
 * (inline and from a file), Envoy's default token locations, rules whose
 * match is a RouteMatch, requirement trees and requirement_map, and the
 * per-route config; what Arion does not run is refused by name. */
static void test_http_jwt_authn(void **state)
{
	(void)state;
	struct tjwt_key k;
	tjwt_gen(&k, ARN_JWT_ES256, "e1");
	char jwk[512], jwks[1024], prov[4096], f[8192];
	tjwt_jwk(&k, true, jwk, sizeof(jwk));
	snprintf(jwks, sizeof(jwks), "{\"keys\":[%s,{\"kty\":\"XYZ\"}]}", jwk);
	const char *js = jwt_json_str(jwks);
	snprintf(prov, sizeof(prov),
		 "\"providers\":{\"p1\":{\"issuer\":\"https://iss\",\"audiences\":[\"a1\"],"
		 "\"local_jwks\":{\"inline_string\":\"%s\"},\"from_headers\":[{\"name\":\"X-Jwt\","
		 "\"value_prefix\":\"T \"}],\"forward_payload_header\":\"X-Payload\","
		 "\"claim_to_headers\":[{\"header_name\":\"x-sub\",\"claim_name\":\"sub\"}],"
		 "\"clock_skew_seconds\":5,\"require_expiration\":true,\"forward\":true},"
		 "\"p2\":{\"local_jwks\":{\"inline_string\":\"%s\"}}}",
		 js, js);
	snprintf(
	    f, sizeof(f),
	    "%s,\"rules\":[{\"match\":{\"prefix\":\"/api\",\"headers\":[{\"name\":\"x-a\","
	    "\"present_match\":true}]},\"requires\":{\"requires_any\":{\"requirements\":["
	    "{\"provider_name\":\"p1\"},{\"provider_and_audiences\":{\"provider_name\":\"p2\","
	    "\"audiences\":[\"z\"]}}]}}},{\"match\":{\"path\":\"/named\"},"
	    "\"requirement_name\":\"r\"},{\"match\":{\"prefix\":\"/\"},\"requires\":{}}],"
	    "\"requirement_map\":{\"r\":{\"allow_missing\":{}}},\"bypass_cors_preflight\":true",
	    prov);
	tc_ok(L, jwt_listener(f, "\"typed_per_filter_config\":{\"jwt\":{" JWTPR_AT
				 ",\"requirement_name\":\"r\"}},"));
	const struct arn_cfg_hcm *h = chain0()->hcm;
	assert_int_equal(h->http_filters[0], ARN_CFG_HF_JWT_AUTHN);
	const struct arn_cfg_jwt_authn *ja = h->http_filter_cfgs[0];
	assert_int_equal(ja->n_providers, 2);
	assert_true(ja->bypass_cors_preflight);
	const struct arn_cfg_jwt_provider *p1 = &ja->providers[0], *p2 = &ja->providers[1];
	if (strcmp(p1->name, "p1") != 0) {
		const struct arn_cfg_jwt_provider *t = p1;
		p1 = p2;
		p2 = t;
	}
	assert_string_equal(p1->issuer, "https://iss");
	assert_int_equal(arn_jwks_count(p1->jwks), 1); /* the unknown kty skipped */
	assert_int_equal(p1->n_headers, 1);
	assert_string_equal(p1->headers[0].name, "x-jwt");
	assert_string_equal(p1->headers[0].prefix, "T ");
	assert_int_equal(p1->n_params, 0);
	assert_string_equal(p1->payload_header, "x-payload");
	assert_int_equal(p1->n_claims, 1);
	assert_int_equal(p1->clock_skew_s, 5);
	assert_true(p1->require_exp && p1->forward);
	/* Envoy's defaults: Authorization "Bearer ", access_token, 60 s */
	assert_string_equal(p2->headers[0].name, "authorization");
	assert_string_equal(p2->headers[0].prefix, "Bearer ");
	assert_string_equal(p2->params[0], "access_token");
	assert_int_equal(p2->clock_skew_s, 60);
	assert_false(p2->forward);
	assert_int_equal(ja->n_rules, 3);
	assert_int_equal(ja->rules[0].req->kind, ARN_CFG_JWT_REQ_ANY);
	assert_int_equal(ja->rules[0].req->n_subs, 2);
	assert_true(ja->rules[0].req->subs[1].aud_override);
	assert_int_equal(ja->rules[0].match.n_headers, 1);
	assert_int_equal(ja->rules[1].req->kind, ARN_CFG_JWT_REQ_ALLOW_MISSING);
	assert_null(ja->rules[2].req); /* an empty requirement: none */
	struct arn_cfg_request rq = {.path = "/api/x", .path_len = 6};
	assert_false(arn_cfg_route_matches(&ja->rules[0].match, &rq)); /* no x-a */
	assert_true(arn_cfg_route_matches(&ja->rules[2].match, &rq));
	const struct arn_cfg_vhost *vh = &h->inline_routes->vhosts[0];
	const struct arn_cfg_jwt_per_route *pr =
	    arn_cfg_per_filter_find(vh, &vh->routes[0], "jwt", 3, ARN_CFG_PF_JWT_AUTHN);
	assert_non_null(pr);
	assert_string_equal(pr->name, "r");

	/* local_jwks from a file, read at conversion */
	char path[] = "/tmp/arion-jwks-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, jwks, strlen(jwks)), (ssize_t)strlen(jwks));
	close(fd);
	snprintf(f, sizeof(f),
		 "\"providers\":{\"p\":{\"local_jwks\":{\"filename\":\"%s\"},"
		 "\"payload_in_metadata\":\"m\",\"normalize_payload_in_metadata\":{\"space_"
		 "delimited_claims\":[\"scope\"]}}},\"rules\":[{\"match\":"
		 "{\"prefix\":\"/\"},\"requires\":{\"provider_name\":\"p\"}}]",
		 path);
	/* payload_in_metadata (Istio's) accepted: nothing in Arion reads
	 * dynamic metadata */
	tc_ok(L, jwt_listener(f, ""));
	unlink(path);
	tc_refused(L, jwt_listener(f, ""), "providers[p].local_jwks.filename: cannot open");

	/* remote_jwks as Envoy Gateway writes it (async_fetch, retry_policy
	 * empty): the Host and path from the uri, Envoy's defaults */
	tc_ok(L, jwt_listener("\"providers\":{\"p\":{\"remote_jwks\":{\"http_uri\":{"
			      "\"uri\":\"https://keys.example:8443/a/jwks.json?v=1\","
			      "\"cluster\":\"c\",\"timeout\":\"1.5s\"},\"async_fetch\":{},"
			      "\"retry_policy\":{}}}},\"rules\":[{\"match\":{\"prefix\":\"/\"},"
			      "\"requires\":{\"provider_name\":\"p\"}}]",
			      ""));
	ja = chain0()->hcm->http_filter_cfgs[0];
	const struct arn_cfg_jwt_remote *rj = ja->providers[0].remote;
	assert_non_null(rj);
	assert_null(ja->providers[0].jwks);
	assert_string_equal(rj->host, "keys.example:8443");
	assert_string_equal(rj->path, "/a/jwks.json?v=1");
	assert_string_equal(rj->cluster_name, "c");
	assert_string_equal(rj->provider, "p");
	assert_int_equal(rj->timeout_ms, 1500);
	assert_int_equal(rj->cache_ms, 600000); /* Envoy's 600 s */
	assert_int_equal(rj->num_retries, 1);	/* Envoy's default with a retry_policy */
	assert_int_equal(rj->backoff_base_ms, 25);
	assert_int_equal(rj->backoff_max_ms, 250);
	assert_true(rj->async_fetch);
	tc_ok(L, jwt_listener("\"providers\":{\"p\":{\"remote_jwks\":{\"http_uri\":{"
			      "\"uri\":\"http://k\",\"cluster\":\"c\",\"timeout\":\"1s\"},"
			      "\"cache_duration\":\"30s\",\"retry_policy\":{\"num_retries\":3,"
			      "\"retry_back_off\":{\"base_interval\":\"0.1s\"}}}}}",
			      ""));
	rj = ((const struct arn_cfg_jwt_authn *)chain0()->hcm->http_filter_cfgs[0])
		 ->providers[0]
		 .remote;
	assert_string_equal(rj->path, "/");
	assert_int_equal(rj->cache_ms, 30000);
	assert_int_equal(rj->num_retries, 3);
	assert_int_equal(rj->backoff_max_ms, 1000);
	assert_false(rj->async_fetch);

	/* refusals, each naming its field */
#define RJ(x) "\"providers\":{\"p\":{\"remote_jwks\":{" x "}}}"
#define RJU "\"http_uri\":{\"uri\":\"https://x/k\",\"cluster\":\"c\",\"timeout\":\"1s\"}"
	static const struct {
		const char *fields, *want;
	} bad[] = {
	    {RJ(RJU ",\"async_fetch\":{\"failed_refetch_duration\":\"2s\"}"),
	     "providers[p].remote_jwks.async_fetch.failed_refetch_duration: not supported by "
	     "Arion"},
	    {RJ(RJU ",\"retry_policy\":{\"num_retries\":6}"),
	     "remote_jwks.retry_policy.num_retries: 6: more than 5"},
	    {RJ(RJU ",\"retry_policy\":{\"retry_back_off\":{\"base_interval\":\"1s\","
		    "\"max_interval\":\"0.5s\"}}"),
	     "retry_back_off.max_interval: less than base_interval"},
	    {RJ("\"http_uri\":{\"uri\":\"ftp://x/k\",\"cluster\":\"c\",\"timeout\":\"1s\"}"),
	     "remote_jwks.http_uri.uri: 'ftp://x/k': not an http:// or https:// URI"},
	    {RJ("\"http_uri\":{\"uri\":\"https://u@x/k\",\"cluster\":\"c\",\"timeout\":\"1s\"}"),
	     "remote_jwks.http_uri.uri: 'https://u@x/k': no host"},
	    {RJ("\"http_uri\":{\"uri\":\"https:///k\",\"cluster\":\"c\",\"timeout\":\"1s\"}"),
	     "remote_jwks.http_uri.uri"},
	    {RJ("\"http_uri\":{\"uri\":\"https://x/k\",\"timeout\":\"1s\"}"),
	     "remote_jwks.http_uri.cluster: missing"},
	    {RJ("\"http_uri\":{\"uri\":\"https://x/k\",\"cluster\":\"c\"}"),
	     "remote_jwks.http_uri.timeout: missing"},
	    {RJ("\"cache_duration\":\"1s\""), "remote_jwks.http_uri: missing"},
	    {"\"providers\":{\"p\":{\"local_jwks\":{\"inline_string\":\"{\\\"keys\\\":[{"
	     "\\\"kty\\\":"
	     "\\\"XYZ\\\"}]}\"}}}",
	     "providers[p].local_jwks.inline_string: provider 'p': no usable JWKS: Jwks doesn't "
	     "have any valid public key"},
	    {"\"providers\":{\"p\":{\"local_jwks\":{\"inline_string\":\"[]\"}}}",
	     "provider 'p': no usable JWKS"},
	    {"\"providers\":{\"p\":{\"jwt_cache_config\":{\"jwt_cache_size\":10}}}",
	     "jwt_cache_config"},
	    {"\"providers\":{\"p\":{\"subjects\":{\"exact\":\"s\"}}}", "subjects"},
	    {"\"filter_state_rules\":{\"name\":\"x\"}", "filter_state_rules"},
	    {"\"providers\":{\"p\":{\"claim_to_headers\":[{\"header_name\":\"x y\","
	     "\"claim_name\":\"c\"}]}}",
	     "claim_to_headers[0].header_name: byte 0x20"},
	    {"\"providers\":{\"p\":{\"from_headers\":[{\"name\":\"a\",\"value_prefix\":\"b\\r\\n\"}"
	     "]}}",
	     "from_headers[0].value_prefix: contains CR, LF or NUL"},
	    {"\"rules\":[{\"match\":{\"prefix\":\"/\"},\"requires\":{\"provider_name\":\"nope\"}}]",
	     "rules[0].requires.provider_name: no provider named 'nope'"},
	    {"\"rules\":[{\"match\":{\"prefix\":\"/\"},\"requirement_name\":\"nope\"}]",
	     "rules[0].requirement_name: 'nope' is not in requirement_map"},
	    {"\"rules\":[{\"match\":{\"prefix\":\"/\"},\"requires\":{\"requires_all\":{"
	     "\"requirements\":[{\"allow_missing\":{}}]}}}]",
	     "requires_all.requirements: 1: at least 2"},
	    {"\"rules\":[{\"requires\":{\"allow_missing\":{}}}]", "rules[0].match: missing"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		tc_refused(L, jwt_listener(bad[i].fields, ""), bad[i].want);
#undef RJ
#undef RJU
	/* requirement nesting past ARN_CFG_JWT_MAX_REQ_DEPTH */
	char deep[4096] = "\"rules\":[{\"match\":{\"prefix\":\"/\"},\"requires\":";
	for (int d = 0; d <= ARN_CFG_JWT_MAX_REQ_DEPTH; d++)
		strcat(deep, "{\"requires_any\":{\"requirements\":[{\"allow_missing\":{}},");
	strcat(deep, "{\"allow_missing\":{}}");
	for (int d = 0; d <= ARN_CFG_JWT_MAX_REQ_DEPTH; d++)
		strcat(deep, "]}}");
	strcat(deep, "}]");
	tc_refused(L, jwt_listener(deep, ""), "nested more than 8 levels deep");
	tc_refused(L,
		   jwt_listener("\"providers\":{}",
				"\"typed_per_filter_config\":{\"jwt\":{" JWTPR_AT
				",\"disabled\":false}},"),
		   "disabled: must be true");
	tjwt_free(&k);
}
#undef JWT_AT
#undef JWTPR_AT

/* HTTP RBAC's matcher (Envoy's RBAC sandbox uses one): matcher_list over
 * request headers with and/or/not predicates, Action names and
 * on_no_match; what Arion does not run is refused by name. */
static void test_http_rbac_matcher(void **state)
{
	(void)state;
#define HM(m) LISTENER(HCM("{\"name\":\"r\",\"typed_config\":{" HRBAC_AT "," m "}},", ""))
#define ML(pred, act)                                                                              \
	"{\"matcher_list\":{\"matchers\":[{\"predicate\":" pred ",\"on_match\":" act "}]}"
	/* clang-format off */
	tc_ok(L, HM("\"matcher\":" ML(
		"{\"or_matcher\":{\"predicate\":["
		    "{\"single_predicate\":" SP_HDR("X-A") "},"
		    "{\"and_matcher\":{\"predicate\":["
			"{\"single_predicate\":" SP_HDR("b") "},"
			"{\"not_matcher\":{\"single_predicate\":" SP_HDR("c") "}}]}}]}}",
		ON_MATCH("deny-a", "DENY"))
		",\"on_no_match\":" ON_MATCH("log", "LOG") "},"
		"\"shadow_matcher\":" ML("{\"single_predicate\":" SP_HDR("d") "}",
					 ON_MATCH("s", "ALLOW")) "}"));
	/* clang-format on */
	const struct arn_cfg_rbac_filter *f = chain0()->hcm->http_filter_cfgs[0];
	assert_non_null(f);
	const struct arn_cfg_rbac_rules *r = f->rules;
	assert_true(r->matcher);
	assert_int_equal(r->action, ARN_CFG_RBAC_LOG); /* one of its actions logs */
	assert_int_equal(r->n_entries, 1);
	assert_int_equal(r->entries[0].action, ARN_CFG_RBAC_DENY);
	assert_string_equal(r->entries[0].policy.name, "deny-a");
	const struct arn_cfg_rbac_rule *p = &r->entries[0].predicate;
	assert_int_equal(p->kind, ARN_CFG_RBAC_OR);
	assert_int_equal(p->n_kids, 2);
	assert_int_equal(p->kids[0].kind, ARN_CFG_RBAC_HEADER);
	assert_string_equal(p->kids[0].header->name, "x-a");
	assert_int_equal(p->kids[1].kind, ARN_CFG_RBAC_AND);
	assert_int_equal(p->kids[1].kids[1].kind, ARN_CFG_RBAC_NOT);
	assert_true(r->has_no_match);
	assert_string_equal(r->no_match.policy.name, "log");
	assert_true(f->shadow->matcher);

	const char *pre = "http_filters[0].typed_config.matcher.";
	char want[512];
	snprintf(want, sizeof(want), "%smatcher_tree: not supported by Arion", pre);
	tc_refused(L, HM("\"matcher\":{\"matcher_tree\":{\"input\":{\"name\":\"i\"}}}"), want);
	snprintf(want, sizeof(want), "%smatcher_list.matchers[0].on_match.matcher: not supported",
		 pre);
	tc_refused(
	    L,
	    HM("\"matcher\":" ML("{\"single_predicate\":" SP_HDR("x") "}",
				 "{\"matcher\":{\"on_no_match\":" ON_MATCH("a", "ALLOW") "}}") "}"),
	    want);
	snprintf(want, sizeof(want),
		 "%smatcher_list.matchers[0].predicate.single_predicate.value_match: missing "
		 "(custom_match is not supported by Arion)",
		 pre);
	tc_refused(L,
		   HM("\"matcher\":" ML(
		       "{\"single_predicate\":{\"input\":{\"name\":\"i\","
		       "\"typed_config\":{" AT(
			   "envoy.type.matcher.v3."
			   "HttpRequestHeaderMatchInput") ","
							  "\"header_name\":\"x\"}},\"custom_"
							  "match\":{\"name\":\"c\"}}}",
		       ON_MATCH("a", "ALLOW")) "}"),
		   want);
	tc_refused(L,
		   HM("\"matcher\":" ML(
		       "{\"or_matcher\":{\"predicate\":[{\"single_predicate\":" SP_HDR("x") "}]}}",
		       ON_MATCH("a", "ALLOW")) "}"),
		   "or_matcher.predicate: 1 predicate(s): Envoy requires at least two");
	tc_refused(L, HM("\"rules\":{},\"matcher\":{\"on_no_match\":" ON_MATCH("a", "ALLOW") "}"),
		   "typed_config.matcher: rules and matcher are exclusive");
	tc_refused(L, HM("\"matcher\":{\"on_no_match\":" ON_MATCH("", "ALLOW") "}"),
		   "on_no_match.action.typed_config.name: missing");
#undef HM
#undef ML
}

static void test_network_local_ratelimit(void **state)
{
	(void)state;
	tc_ok(L,
	      LISTENER(NF("rl", NLRL_AT,
			  "\"stat_prefix\":\"rl\",\"token_bucket\":{\"max_tokens\":5,"
			  "\"tokens_per_fill\":2,\"fill_interval\":\"0.25s\"},"
			  "\"runtime_enabled\":{\"default_value\":false,\"runtime_key\":\"k\"}")));
	const struct arn_cfg_l4_filter *lf = &chain0()->l4_filters[0];
	assert_int_equal(lf->kind, ARN_CFG_L4_LOCAL_RATELIMIT);
	assert_string_equal(lf->ratelimit->stat_prefix, "rl");
	assert_int_equal(lf->ratelimit->bucket.max_tokens, 5);
	assert_int_equal(lf->ratelimit->bucket.tokens_per_fill, 2);
	assert_int_equal(lf->ratelimit->bucket.fill_interval_ms, 250);
	assert_false(lf->ratelimit->enabled);
	assert_non_null(lf->ratelimit->state);
	assert_int_equal(lf->ratelimit->state->word, 0);
	/* tokens_per_fill defaults to 1; enabled without runtime_enabled */
	tc_ok(L, LISTENER(NF("rl", NLRL_AT,
			     "\"stat_prefix\":\"rl\",\"token_bucket\":{\"max_tokens\":1,"
			     "\"fill_interval\":\"1s\"}")));
	lf = &chain0()->l4_filters[0];
	assert_int_equal(lf->ratelimit->bucket.tokens_per_fill, 1);
	assert_true(lf->ratelimit->enabled);
	tc_refused(L,
		   LISTENER(NF("rl", NLRL_AT,
			       "\"stat_prefix\":\"rl\",\"token_bucket\":{\"max_tokens\":1,"
			       "\"fill_interval\":\"0.01s\"}")),
		   "token_bucket.fill_interval: 10 ms: the fill timer must be at least 50 ms");
	tc_refused(L,
		   LISTENER(NF("rl", NLRL_AT,
			       "\"stat_prefix\":\"rl\",\"token_bucket\":{\"fill_interval\":"
			       "\"1s\"}")),
		   "token_bucket.max_tokens: must be greater than 0");
	tc_refused(L, LISTENER(NF("rl", NLRL_AT, "\"stat_prefix\":\"rl\"")),
		   "typed_config.token_bucket: missing");
	tc_refused(L,
		   LISTENER(NF("rl", NLRL_AT,
			       "\"stat_prefix\":\"rl\",\"share_key\":\"s\",\"token_bucket\":{"
			       "\"max_tokens\":1,\"fill_interval\":\"1s\"}")),
		   "typed_config.share_key: not supported by Arion");
}

static void test_connection_limit(void **state)
{
	(void)state;
	tc_ok(L, LISTENER(NF("cl", CXL_AT,
			     "\"stat_prefix\":\"cl\",\"max_connections\":100,\"delay\":\"0.5s\"")));
	const struct arn_cfg_l4_filter *lf = &chain0()->l4_filters[0];
	assert_int_equal(lf->kind, ARN_CFG_L4_CONNECTION_LIMIT);
	assert_int_equal(lf->connection_limit->max_connections, 100);
	assert_int_equal(lf->connection_limit->delay_ms, 500);
	assert_true(lf->connection_limit->enabled);
	assert_int_equal(*lf->connection_limit->count, 0);
	tc_refused(L, LISTENER(NF("cl", CXL_AT, "\"stat_prefix\":\"cl\"")),
		   "typed_config.max_connections: missing");
	tc_refused(L, LISTENER(NF("cl", CXL_AT, "\"stat_prefix\":\"cl\",\"max_connections\":0")),
		   "typed_config.max_connections: must be at least 1");
	/* filters in front of the HCM too, in their order */
	tc_ok(L, LISTENER("{\"name\":\"cl\",\"typed_config\":{" CXL_AT
			  ",\"stat_prefix\":\"cl\",\"max_connections\":1}},"
			  "{\"name\":\"r\",\"typed_config\":{" NRBAC_AT
			  ",\"stat_prefix\":\"r\"}}," HCM("", "")));
	const struct arn_cfg_filter_chain *fc = chain0();
	assert_int_equal(fc->kind, ARN_CFG_NF_HCM);
	assert_int_equal(fc->n_l4_filters, 2);
	assert_int_equal(fc->l4_filters[0].kind, ARN_CFG_L4_CONNECTION_LIMIT);
	assert_int_equal(fc->l4_filters[1].kind, ARN_CFG_L4_RBAC);
	assert_null(fc->l4_filters[1].rbac->rules);
}

static void test_http_local_ratelimit(void **state)
{
	(void)state;
	/* Envoy's documentation's example, with descriptors */
	tc_ok(L,
	      LISTENER(HCM(
		  "{\"name\":\"envoy.filters.http.local_ratelimit\",\"typed_config\":{" HLRL_AT
		  ",\"stat_prefix\":\"http_local_rate_limiter\","
		  "\"status\":{\"code\":\"ServiceUnavailable\"},"
		  "\"token_bucket\":{\"max_tokens\":10000,\"tokens_per_fill\":1000,"
		  "\"fill_interval\":\"1s\"},"
		  "\"filter_enabled\":{\"runtime_key\":\"e\",\"default_value\":{"
		  "\"numerator\":100,\"denominator\":\"HUNDRED\"}},"
		  "\"filter_enforced\":{\"runtime_key\":\"f\",\"default_value\":{"
		  "\"numerator\":50,\"denominator\":\"TEN_THOUSAND\"}},"
		  "\"response_headers_to_add\":[{\"append_action\":\"OVERWRITE_IF_EXISTS_OR_ADD\","
		  "\"header\":{\"key\":\"x-local-rate-limit\",\"value\":\"true\"}}],"
		  "\"descriptors\":[{\"entries\":[{\"key\":\"client_id\",\"value\":\"foo\"},"
		  "{\"key\":\"path\",\"value\":\"/foo/bar\"}],\"token_bucket\":{"
		  "\"max_tokens\":10,\"tokens_per_fill\":10,\"fill_interval\":\"60s\"}}],"
		  "\"stage\":2,\"local_rate_limit_per_downstream_connection\":true,"
		  "\"enable_x_ratelimit_headers\":\"DRAFT_VERSION_03\","
		  "\"vh_rate_limits\":\"INCLUDE\",\"always_consume_default_token_bucket\":false}},",
		  "")));
	const struct arn_cfg_hcm *h = chain0()->hcm;
	assert_int_equal(h->http_filters[0], ARN_CFG_HF_LOCAL_RATELIMIT);
	const struct arn_cfg_http_ratelimit *r = h->http_filter_cfgs[0];
	assert_string_equal(r->stat_prefix, "http_local_rate_limiter");
	assert_int_equal(r->status, 503);
	assert_true(r->has_bucket);
	assert_int_equal(r->bucket.max_tokens, 10000);
	assert_int_equal(r->bucket.tokens_per_fill, 1000);
	assert_int_equal(r->bucket.fill_interval_ms, 1000);
	assert_non_null(r->state);
	assert_int_equal(r->enabled.numerator, 100);
	assert_int_equal(r->enabled.denominator, 100);
	assert_int_equal(r->enforced.numerator, 50);
	assert_int_equal(r->enforced.denominator, 10000);
	assert_int_equal(r->headers.n_resp_add, 1);
	assert_string_equal(r->headers.resp_add[0].key, "x-local-rate-limit");
	assert_int_equal(r->n_descriptors, 1);
	assert_int_equal(r->descriptors[0].n_entries, 2);
	assert_memory_equal(r->descriptors[0].entries[1].value, "/foo/bar", 8);
	assert_int_equal(r->descriptors[0].bucket.fill_interval_ms, 60000);
	assert_int_equal(r->stage, 2);
	assert_true(r->per_connection);
	assert_true(r->x_ratelimit_headers);
	assert_int_equal(r->vh_rate_limits, ARN_CFG_VH_RL_INCLUDE);
	assert_false(r->always_consume_default);

	/* a connection keeps ARN_CFG_HLRL_CONN_BUCKETS buckets of its own:
	 * seven descriptors and the default one fit, eight do not */
#define D(n)                                                                                       \
	"{\"entries\":[{\"key\":\"k\",\"value\":\"" #n "\"}],\"token_bucket\":{"                   \
	"\"max_tokens\":1,\"fill_interval\":\"1s\"}}"
#define PC_RL(descs)                                                                               \
	LISTENER(HCM("{\"name\":\"rl\",\"typed_config\":{" HLRL_AT                                 \
		     ",\"stat_prefix\":\"s\",\"local_rate_limit_per_downstream_connection\":true," \
		     "\"descriptors\":[" descs "]}},",                                             \
		     ""))
	tc_ok(L, PC_RL(D(1) "," D(2) "," D(3) "," D(4) "," D(5) "," D(6) "," D(7)));
	tc_refused(L, PC_RL(D(1) "," D(2) "," D(3) "," D(4) "," D(5) "," D(6) "," D(7) "," D(8)),
		   "typed_config.local_rate_limit_per_downstream_connection: 8 descriptors: a "
		   "connection keeps at most 8 buckets of its own");
#undef PC_RL
#undef D

	/* defaults: 429, nothing enabled nor enforced without the fractions */
	tc_ok(L, LISTENER(HCM("{\"name\":\"rl\",\"typed_config\":{" HLRL_AT
			      ",\"stat_prefix\":\"s\",\"status\":{\"code\":\"OK\"}}},",
			      "")));
	r = chain0()->hcm->http_filter_cfgs[0];
	assert_int_equal(r->status, 429);
	assert_false(r->has_bucket);
	assert_int_equal(r->enabled.numerator, 0);
	assert_true(r->always_consume_default);

	tc_refused(L,
		   LISTENER(HCM("{\"name\":\"rl\",\"typed_config\":{" HLRL_AT
				",\"stat_prefix\":\"s\",\"descriptors\":["
				"{\"entries\":[{\"key\":\"k\",\"value\":\"v\"}],\"token_bucket\":{"
				"\"max_tokens\":1,\"fill_interval\":\"1s\"}},"
				"{\"entries\":[{\"key\":\"k\",\"value\":\"v\"}],\"token_bucket\":{"
				"\"max_tokens\":2,\"fill_interval\":\"1s\"}}]}},",
				"")),
		   "typed_config.descriptors[1]: the same entries as descriptors[0]");
	tc_refused(L,
		   LISTENER(HCM("{\"name\":\"rl\",\"typed_config\":{" HLRL_AT
				",\"stat_prefix\":\"s\",\"stage\":11}},",
				"")),
		   "typed_config.stage: 11 is more than 10");
	tc_refused(L,
		   LISTENER(HCM("{\"name\":\"rl\",\"typed_config\":{" HLRL_AT
				",\"stat_prefix\":\"s\",\"local_cluster_rate_limit\":{}}},",
				"")),
		   "typed_config.local_cluster_rate_limit: not supported by Arion");
	/* per route, the token bucket is required */
	tc_refused(R,
		   "{\"name\":\"rt\",\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],"
		   "\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\"},"
		   "\"typed_per_filter_config\":{\"rl\":{" HLRL_AT ",\"stat_prefix\":\"p\"}}}]}]}",
		   "routes[0].typed_per_filter_config[rl].token_bucket: missing (Envoy requires "
		   "it per route)");
	tc_ok(R, "{\"name\":\"rt\",\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],"
		 "\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\"},"
		 "\"typed_per_filter_config\":{\"rl\":{" HLRL_AT ",\"stat_prefix\":\"p\","
		 "\"token_bucket\":{\"max_tokens\":3,\"fill_interval\":\"1s\"}}}}]}]}");
	const struct arn_cfg_route_table *rt = route_table("rt");
	r = arn_cfg_per_filter_find(NULL, &rt->vhosts[0].routes[0], "rl", 2,
				    ARN_CFG_PF_LOCAL_RATELIMIT);
	assert_non_null(r);
	assert_int_equal(r->bucket.max_tokens, 3);
}

static void test_fc_match_fields(void **state)
{
	(void)state;
	tc_ok(L, "{\"name\":\"l\"," ADDR ",\"filter_chains\":[{\"filter_chain_match\":{"
		 "\"direct_source_prefix_ranges\":[{\"address_prefix\":\"198.18.0.0\","
		 "\"prefix_len\":15}],\"source_type\":\"SAME_IP_OR_LOOPBACK\"},"
		 "\"filters\":[" TCP_OK "]},{\"filter_chain_match\":{\"source_type\":\"EXTERNAL\"},"
		 "\"filters\":[" TCP_OK "]}]}");
	const struct arn_cfg_listener *l = listener("l");
	assert_int_equal(l->chains[0].match.n_direct_src_prefixes, 1);
	assert_int_equal(l->chains[0].match.direct_src_prefixes[0].addr, 0xc6120000);
	assert_int_equal(l->chains[0].match.source_type, ARN_CFG_SOURCE_LOCAL);
	assert_int_equal(l->chains[1].match.source_type, ARN_CFG_SOURCE_EXTERNAL);
	/* after a PROXY header, direct_source_prefix_ranges is the TCP peer's:
	 * a loopback source (the header's) through a balancer 198.18.0.9
	 * takes chain 0; the same source direct matches no chain (chain 0's
	 * direct range excludes it, and chain 1 wants EXTERNAL). Fails
	 * before: the header's source was matched (NULL both times). */
	struct arn_cfg_fc_input in = {.dst_addr = 0x7f000001,
				      .dst_port = 9000,
				      .src_addr = 0x7f000001,
				      .src_port = 1,
				      .direct_src_addr = 0xc6120009};
	assert_ptr_equal(arn_cfg_filter_chain_select(l, &in), &l->chains[0]);
	in.direct_src_addr = 0;
	assert_null(arn_cfg_filter_chain_select(l, &in));
}

/* Routes' and virtual hosts' rate_limits: the descriptors the HTTP
 * local_ratelimit filter matches (Envoy's documentation's example). */
static void test_route_rate_limits(void **state)
{
	(void)state;
	tc_ok(R, "{\"name\":\"rt\",\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],"
		 "\"rate_limits\":[{\"actions\":[{\"remote_address\":{}}]}],"
		 "\"routes\":[{\"match\":{\"prefix\":\"/foo\"},\"route\":{\"cluster\":\"c\","
		 "\"include_vh_rate_limits\":true,\"rate_limits\":[{\"stage\":3,\"disable_key\":"
		 "\"d\",\"actions\":["
		 "{\"request_headers\":{\"header_name\":\"X-Client-Id\",\"descriptor_key\":"
		 "\"client_id\",\"skip_if_absent\":true}},"
		 "{\"generic_key\":{\"descriptor_value\":\"foo\"}},"
		 "{\"header_value_match\":{\"descriptor_value\":\"get\",\"expect_match\":false,"
		 "\"headers\":[{\"name\":\":method\",\"string_match\":{\"exact\":\"GET\"}}]}},"
		 "{\"source_cluster\":{}},{\"destination_cluster\":{}},"
		 "{\"masked_remote_address\":{\"v4_prefix_mask_len\":24}}]}]}}]}]}");
	const struct arn_cfg_route_table *rt = route_table("rt");
	const struct arn_cfg_vhost *vh = &rt->vhosts[0];
	assert_int_equal(vh->n_rate_limits, 1);
	assert_int_equal(vh->rate_limits[0].actions[0].kind, ARN_CFG_RL_REMOTE_ADDRESS);
	assert_string_equal(vh->rate_limits[0].actions[0].key, "remote_address");
	const struct arn_cfg_route_action *a = &vh->routes[0].route;
	assert_true(a->include_vh_rate_limits);
	assert_int_equal(a->n_rate_limits, 1);
	const struct arn_cfg_rate_limit *rl = &a->rate_limits[0];
	assert_int_equal(rl->stage, 3);
	assert_int_equal(rl->n_actions, 6);
	assert_int_equal(rl->actions[0].kind, ARN_CFG_RL_REQUEST_HEADERS);
	assert_string_equal(rl->actions[0].header, "x-client-id");
	assert_string_equal(rl->actions[0].key, "client_id");
	assert_true(rl->actions[0].skip_if_absent);
	assert_int_equal(rl->actions[1].kind, ARN_CFG_RL_GENERIC_KEY);
	assert_string_equal(rl->actions[1].key, "generic_key");
	assert_string_equal(rl->actions[1].value, "foo");
	assert_int_equal(rl->actions[2].kind, ARN_CFG_RL_HEADER_VALUE_MATCH);
	assert_string_equal(rl->actions[2].key, "header_match");
	assert_false(rl->actions[2].expect_match);
	assert_int_equal(rl->actions[2].n_headers, 1);
	assert_int_equal(rl->actions[3].kind, ARN_CFG_RL_SOURCE_CLUSTER);
	assert_int_equal(rl->actions[3].value_len, 0); /* no node.cluster in this store's bootstrap */
	assert_int_equal(rl->actions[4].kind, ARN_CFG_RL_DESTINATION_CLUSTER);
	assert_int_equal(rl->actions[5].kind, ARN_CFG_RL_MASKED_REMOTE_ADDRESS);
	assert_int_equal(rl->actions[5].mask_len, 24);

#define RL_ROUTE(actions)                                                                          \
	"{\"name\":\"rt\",\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],"                 \
	"\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\","                  \
	"\"rate_limits\":[" actions "]}}]}]}"
	tc_refused(R, RL_ROUTE("{\"actions\":[{\"metadata\":{\"descriptor_key\":\"k\"}}]}"),
		   "RouteConfiguration 'rt': virtual_hosts[0].routes[0].route.rate_limits[0]."
		   "actions[0].metadata: this rate limit action is not supported");
	tc_refused(R, RL_ROUTE("{\"actions\":[{\"request_headers\":{\"header_name\":\"x\"}}]}"),
		   "actions[0].request_headers.descriptor_key: missing");
	tc_refused(R, RL_ROUTE("{\"actions\":[{\"generic_key\":{}}]}"),
		   "actions[0].generic_key.descriptor_value: missing");
	tc_refused(R, RL_ROUTE("{\"actions\":[]}"), "rate_limits[0].actions: empty");
	tc_refused(R, RL_ROUTE("{\"stage\":11,\"actions\":[{\"remote_address\":{}}]}"),
		   "rate_limits[0].stage: 11 is more than 10");
	tc_refused(R,
		   RL_ROUTE("{\"actions\":[{\"remote_address\":{}}],\"limit\":{\"dynamic_"
			    "metadata\":{\"metadata_key\":{\"key\":\"k\",\"path\":[{\"key\":"
			    "\"p\"}]}}}}"),
		   "rate_limits[0].limit: not supported by Arion");
#undef RL_ROUTE
}

/* fuzz_config's L4 seeds (a type byte, then the resource) convert without
 * error, so the fuzzer starts from inside these converters. */
static void test_fuzz_seeds_accepted(void **state)
{
	(void)state;
	static const char *const seeds[][2] = {{"listener_tcp_proxy", "tcp"},
					       {"listener_network_rbac", "rbac"},
					       {"listener_http_rbac_ratelimit", "web"},
					       {"listener_http_rbac_matcher", "l"},
					       {"listener_filter_toggles", "l"},
					       {"route_filter_toggles", "r"}};
	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		char path[256], buf[8192];
		snprintf(path, sizeof(path), "tests/config/corpus/config/%s", seeds[i][0]);
		FILE *f = fopen(path, "rb");
		assert_non_null(f);
		size_t n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		assert_true(n > 1 && n < sizeof(buf) && (buf[0] == 0 || buf[0] == 1));
		struct arn_config_resource_in in = {seeds[i][1], "v", buf + 1, n - 1};
		struct arn_config_result r;
		assert_int_equal(arn_config_apply(st, buf[0] ? R : L, &in, 1, NULL, 0, 0, &r), 0);
		for (size_t j = 0; j < r.n_errors; j++)
			print_message("  %s: %s\n", seeds[i][0], r.errors[j].message);
		assert_true(r.accepted);
		assert_int_equal(r.n_errors, 0);
		arn_config_result_free(&r);
	}
}

/* @p n RateLimits of these actions, comma-separated. */
static void rl_list(char *out, size_t cap, size_t n, const char *actions)
{
	size_t o = 0;
	out[0] = 0;
	for (size_t i = 0; i < n; i++)
		o += (size_t)snprintf(out + o, cap - o, "%s{\"actions\":[%s]}", i ? "," : "",
				      actions);
}

/* A route table "rt" whose virtual host has @p vh_n rate_limits and whose
 * one route has @p route_n, each RateLimit of @p n_actions generic_key
 * actions. */
static void rl_table(char *buf, size_t cap, size_t vh_n, size_t route_n, size_t n_actions)
{
	char actions[1024];
	static char vh[8192], rt[8192];
	size_t u = 0;
	actions[0] = 0;
	for (size_t a = 0; a < n_actions; a++)
		u += (size_t)snprintf(actions + u, sizeof(actions) - u,
				      "%s{\"generic_key\":{\"descriptor_value\":\"v%zu\"}}",
				      a ? "," : "", a);
	rl_list(vh, sizeof(vh), vh_n, actions);
	rl_list(rt, sizeof(rt), route_n, actions);
	snprintf(buf, cap,
		 "{\"name\":\"rt\",\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],"
		 "\"rate_limits\":[%s],\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{"
		 "\"cluster\":\"c\",\"rate_limits\":[%s]}}]}]}",
		 vh, rt);
}

/*
 * lib/l4 builds a request's descriptors in fixed room (8 entries, 16 a
 * request): rate_limits beyond it, which would pass requests unlimited,
 * are refused naming the field.
 */
/* The source_cluster action's value is the local service cluster, the
 * bootstrap's node.cluster (Envoy's SourceClusterAction): a descriptor
 * naming it matches. Before, it was empty whatever the bootstrap said. */
static void test_rate_limit_source_cluster_is_node_cluster(void **state)
{
	(void)state;
	arn_config_destroy(st);
	struct arn_bootstrap b = {.node_cluster = (char *)"edge-gw"};
	st = arn_config_create(&b);
	assert_non_null(st);
	tc_ok(R, "{\"name\":\"rt\",\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],"
		 "\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\","
		 "\"rate_limits\":[{\"actions\":[{\"source_cluster\":{}}]}]}}]}]}");
	const struct arn_cfg_rate_limit *rl = &route_table("rt")->vhosts[0].routes[0].route.rate_limits[0];
	assert_int_equal(rl->actions[0].kind, ARN_CFG_RL_SOURCE_CLUSTER);
	assert_int_equal(rl->actions[0].value_len, 7);
	assert_memory_equal(rl->actions[0].value, "edge-gw", 7);
	/* lib/l4's descriptor takes it from here (test_l4's test_rl_descriptors) */
}

static void test_rate_limits_beyond_descriptor_room_refused(void **state)
{
	(void)state;
	static char json[32768];
	rl_table(json, sizeof(json), 1, 1, 8);
	tc_ok(R, json);
	rl_table(json, sizeof(json), 0, 1, 9);
	tc_refused(R, json,
		   "routes[0].route.rate_limits[0].actions: 9 actions: Arion builds descriptors of "
		   "at most 8 entries");
	rl_table(json, sizeof(json), 9, 0, 9);
	tc_refused(R, json, "virtual_hosts[0].rate_limits[0].actions: 9 actions");
	/* 16 descriptors a request: the route's and its virtual host's */
	rl_table(json, sizeof(json), 6, 10, 1);
	tc_ok(R, json);
	rl_table(json, sizeof(json), 6, 11, 1);
	tc_refused(R, json,
		   "virtual_hosts[0].routes[0].route.rate_limits: 11 rate limits, and 6 on the "
		   "virtual host: Arion matches at most 16 descriptors a request");
	rl_table(json, sizeof(json), 17, 0, 1);
	tc_refused(R, json,
		   "virtual_hosts[0].rate_limits: 17 rate limits: Arion matches at most 16");
}

/*
 * A configured descriptor longer than lib/l4 builds a request's (8
 * entries, 1 KiB of values) could never match: refused, so that a
 * request's descriptor that does not fit is exactly one that matches
 * nothing.
 */
static void test_rate_limit_descriptors_beyond_descriptor_room_refused(void **state)
{
	(void)state;
	static char json[32768];
	char entries[4096];
	size_t u = 0;
	for (int i = 0; i < 9; i++)
		u += (size_t)snprintf(entries + u, sizeof(entries) - u,
				      "%s{\"key\":\"k%d\",\"value\":\"v\"}", i ? "," : "", i);
	snprintf(json, sizeof(json),
		 LISTENER(HCM("{\"name\":\"rl\",\"typed_config\":{" HLRL_AT
			      ",\"stat_prefix\":\"s\",\"descriptors\":[{\"entries\":[%s],"
			      "\"token_bucket\":{\"max_tokens\":1,\"fill_interval\":\"1s\"}}]}},",
			      "")),
		 entries);
	tc_refused(L, json,
		   "typed_config.descriptors[0].entries: 9 entries: Arion builds a request's "
		   "descriptors of at most 8");
	char big[1100];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	for (size_t n = 1024; n <= 1025; n++) {
		snprintf(entries, sizeof(entries),
			 "{\"key\":\"a\",\"value\":\"%.*s\"},{\"key\":\"b\",\"value\":\"%.*s\"}",
			 (int)(n - 24), big, 24, big);
		snprintf(json, sizeof(json),
			 LISTENER(HCM(
			     "{\"name\":\"rl\",\"typed_config\":{" HLRL_AT
			     ",\"stat_prefix\":\"s\",\"descriptors\":[{\"entries\":[%s],"
			     "\"token_bucket\":{\"max_tokens\":1,\"fill_interval\":\"1s\"}}]}},",
			     "")),
			 entries);
		if (n == 1024)
			tc_ok(L, json);
		else
			tc_refused(L, json,
				   "typed_config.descriptors[0].entries: values of 1025 bytes "
				   "together: Arion builds a request's descriptors of at most "
				   "1024 bytes of values");
	}
}

/* Network filters of listener tests: an RBAC filter without rules (allows
 * all) named r<n>, a connection_limit of 1 named c<n>. */
#define RB(n) "{\"name\":\"r" #n "\",\"typed_config\":{" NRBAC_AT ",\"stat_prefix\":\"r\"}},"
#define CL(n)                                                                                      \
	"{\"name\":\"c" #n "\",\"typed_config\":{" CXL_AT                                          \
	",\"stat_prefix\":\"c\",\"max_connections\":1}},"
#define RB8 RB(1) RB(2) RB(3) RB(4) RB(5) RB(6) RB(7) RB(8)
#define CL8 CL(1) CL(2) CL(3) CL(4) CL(5) CL(6) CL(7) CL(8)

/*
 * A connection remembers which connection_limit filters count it in one
 * byte, by their rank among connection_limit filters (not their index in
 * the chain): eight after eight RBAC filters are accepted, a ninth is
 * refused.
 */
static void test_connection_limit_filters_beyond_eight_refused(void **state)
{
	(void)state;
	tc_ok(L, LISTENER(RB8 CL8 TCP_OK));
	assert_int_equal(chain0()->n_l4_filters, 16);
	tc_refused(L, LISTENER(RB8 CL8 CL(9) TCP_OK),
		   "filters: 9 connection_limit filters: Arion runs at most 8 in one filter chain");
}

/* Network filters before echo would never run (echo runs none): refused,
 * naming them. */
static void test_network_filters_before_echo_refused(void **state)
{
	(void)state;
#define ECHO                                                                                       \
	"{\"name\":\"e\",\"typed_config\":{" AT(                                                   \
	    "envoy.extensions.filters.network.echo.v3.Echo") "}}"
	tc_ok(L, LISTENER(ECHO));
	tc_refused(L, LISTENER(RB(1) CL(1) ECHO),
		   "filters: 'r1' (rbac), 'c1' (connection_limit) before echo: Arion runs no "
		   "network filter ahead of echo");
#undef ECHO
}
#undef CL8
#undef RB8
#undef CL
#undef RB

/* HttpFilter.disabled and envoy.config.route.v3.FilterConfig, fields
 * newer than gRPC 1.51's Envoy API copy (lib/proto/newer.c), as Envoy
 * Gateway writes them: a filter off in the HCM, turned on by a route's
 * per-filter configuration (its own type, or FilterConfig), turned off
 * by FilterConfig.disabled; the route table's own typed_per_filter_config
 * as the least specific level. From JSON, which reaches the store as the
 * bytes a control plane would send (unknown fields of the main pool). */
static void test_filter_disabled_and_filter_config(void **state)
{
	(void)state;
#define RBAC_OFF "{\"name\":\"authz\",\"disabled\":true,\"typed_config\":{" HRBAC_AT "}},"
#define FC_AT AT("envoy.config.route.v3.FilterConfig")
#define CORSP_AT AT("envoy.extensions.filters.http.cors.v3.CorsPolicy")
	/* a config of a type Arion lacks, optional: on with the filter's own
	 * configuration (Envoy's createRouteSpecificFilterConfig) */
	tc_ok(L, LISTENER(HCM(RBAC_OFF "{\"name\":\"cors\",\"typed_config\":{" AT(
				  "envoy.extensions.filters.http.cors.v3.Cors") "}},",
			      "\"typed_per_filter_config\":{\"authz\":{" FC_AT
			      ",\"is_optional\":true,\"config\":{" AT(
				  "google.protobuf.Empty") "}},"
							   "\"cors\":{" FC_AT
							   ",\"disabled\":true}},")));
	const struct arn_cfg_hcm *h = chain0()->hcm;
	assert_int_equal(h->http_filters[0], ARN_CFG_HF_RBAC);
	assert_non_null(h->http_filter_off);
	assert_true(h->http_filter_off[0]);
	assert_false(h->http_filter_off[1]);
	const struct arn_cfg_route_table *rt = h->inline_routes;
	const struct arn_cfg_vhost *vh = &rt->vhosts[0];
	assert_true(rt->filter_toggles);
	assert_int_equal(vh->n_per_filter, 2);
	for (size_t k = 0; k < vh->n_per_filter; k++)
		assert_int_equal(vh->per_filter[k].kind, vh->per_filter[k].name_len == 5
							     ? ARN_CFG_PF_ENABLED
							     : ARN_CFG_PF_DISABLED);
	/* the virtual host turns RBAC on and CORS off; a name it does not
	 * name keeps its HttpFilter's setting */
	assert_false(arn_cfg_filter_off(vh, &vh->routes[0], "authz", 5, true));
	assert_true(arn_cfg_filter_off(vh, &vh->routes[0], "cors", 4, false));
	assert_true(arn_cfg_filter_off(vh, &vh->routes[0], "other", 5, true));
	assert_false(arn_cfg_filter_off(vh, &vh->routes[0], "other", 5, false));
	/* without a route (none matched) the HttpFilter decides */
	assert_true(arn_cfg_filter_off(NULL, NULL, "authz", 5, true));

	/* a per-filter config of the filter's own type turns it on too
	 * (Envoy: "a filter explicitly configured is enabled"), and a
	 * FilterConfig's config is that config */
	tc_ok(L, LISTENER(HCM("{\"name\":\"cors\",\"disabled\":true,\"typed_config\":{" AT(
				  "envoy.extensions.filters.http.cors.v3.Cors") "}},",
			      "\"typed_per_filter_config\":{\"cors\":{" FC_AT
			      ",\"config\":{" CORSP_AT ",\"allow_methods\":\"GET\"}}},")));
	h = chain0()->hcm;
	vh = &h->inline_routes->vhosts[0];
	assert_false(h->inline_routes->filter_toggles);
	assert_false(arn_cfg_filter_off(vh, &vh->routes[0], "cors", 4, true));
	const struct arn_cfg_cors *p[3];
	assert_int_equal(arn_cfg_cors_policies(vh, &vh->routes[0], "cors", 4, p), 1);
	assert_memory_equal(p[0]->allow_methods, "GET", 3);

	/* Envoy's errors: a FilterConfig with neither config nor disabled,
	 * a disabled router, a field newer than the copy that Arion does not
	 * act on */
	tc_refused(L, LISTENER(HCM("", "\"typed_per_filter_config\":{\"x\":{" FC_AT "}},")),
		   "Empty route/virtual host per filter configuration for x filter");
	tc_refused(L,
		   LISTENER(HCM("", "\"typed_per_filter_config\":{\"x\":{" FC_AT
				    ",\"config\":{" AT("google.protobuf.Empty") "}}},")),
		   "per-filter configuration of type 'google.protobuf.Empty' is not supported");
	tc_refused(L,
		   "{\"name\":\"l\"," ADDR ",\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","
		   "\"typed_config\":{" HCM_AT ",\"stat_prefix\":\"ing\",\"route_config\":{},"
		   "\"http_filters\":[{\"name\":\"envoy.filters.http.router\",\"disabled\":true,"
		   "\"typed_config\":{" AT("envoy.extensions.filters.http.router.v3.Router") "}}]}}"
											     "]}]}",
		   "the router is the terminal filter: it cannot be disabled");
#undef RBAC_OFF
#undef FC_AT
#undef CORSP_AT
}

/* FilterConfig { config: {} } as a control plane sends it (an Any with no
 * type URL; upb's JSON has no way to write one): the filter is on. The
 * JSON's FilterConfig {is_optional: true} (bytes 10 01) is swapped for
 * {config: {}} (0a 00) in the encoded table, lengths unchanged. */
static void test_filter_config_empty_config(void **state)
{
	(void)state;
	const char *json =
	    "{\"name\":\"rt\",\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],"
	    "\"typed_per_filter_config\":{\"x\":{\"@type\":\"type.googleapis.com/"
	    "envoy.config.route.v3.FilterConfig\",\"is_optional\":true}},"
	    "\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\"}}]}]}";
	const upb_MessageDef *md = arn_proto_msgdef("envoy.config.route.v3.RouteConfiguration");
	upb_Arena *a = upb_Arena_New();
	struct arn_sb err = ARN_SB_INIT;
	upb_Message *m = arn_proto_from_json(json, strlen(json), md, a, &err);
	assert_non_null(m);
	size_t len = 0;
	char *b = arn_proto_encode(m, md, a, &len);
	assert_non_null(b);
	char *at = memmem(b, len, "\x12\x02\x10\x01", 4);
	assert_non_null(at);
	memcpy(at, "\x12\x02\x0a\x00", 4);
	struct arn_config_resource_in in = {"rt", "v1", b, len};
	assert_int_equal(arn_config_apply(st, R, &in, 1, NULL, 0, 0, &tc_res), 0);
	assert_true(tc_res.accepted);
	const struct arn_cfg_vhost *vh = &route_table("rt")->vhosts[0];
	assert_false(arn_cfg_filter_off(vh, &vh->routes[0], "x", 1, true));
	arn_sb_free(&err);
	upb_Arena_Free(a);
}

/* RouteConfiguration.typed_per_filter_config (newer than the API copy):
 * the least specific level, after the route's and the virtual host's. */
static void test_route_table_per_filter_config(void **state)
{
	(void)state;
#define FC_AT AT("envoy.config.route.v3.FilterConfig")
	tc_ok(R,
	      "{\"name\":\"rt\",\"typed_per_filter_config\":{\"a\":{" FC_AT
	      ",\"disabled\":true},\"b\":{" FC_AT ",\"disabled\":true}},"
	      "\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],"
	      "\"typed_per_filter_config\":{\"b\":{" FC_AT ",\"is_optional\":true,"
	      "\"config\":{" AT("google.protobuf.Empty") "}}},"
							 "\"routes\":[{\"match\":{\"prefix\":\"/"
							 "\"},\"route\":{\"cluster\":\"c\"}}]}]}");
	const struct arn_cfg_route_table *rt = route_table("rt");
	assert_non_null(rt);
	assert_int_equal(rt->n_per_filter, 2);
	assert_true(rt->filter_toggles);
	const struct arn_cfg_vhost *vh = &rt->vhosts[0];
	assert_true(arn_cfg_filter_off(vh, &vh->routes[0], "a", 1, false));
	/* the virtual host's entry is more specific than the table's */
	assert_false(arn_cfg_filter_off(vh, &vh->routes[0], "b", 1, false));
	assert_false(arn_cfg_filter_off(vh, &vh->routes[0], "c", 1, false));
	/* an entry the table may not carry is refused naming it */
	tc_refused(R,
		   "{\"name\":\"rt2\",\"typed_per_filter_config\":{\"a\":{" AT(
		       "envoy.extensions.filters.http.router.v3.Router") "}}}",
		   "typed_per_filter_config[a]: per-filter configuration of type "
		   "'envoy.extensions.filters.http.router.v3.Router' is not supported");
	/* at most ARN_CFG_MAX_PER_FILTER entries a level (a table's, a
	 * virtual host's): a hostile count is refused, not walked per request */
	for (int lvl = 0; lvl < 2; lvl++) {
		struct arn_sb j = ARN_SB_INIT;
		arn_sb_puts(&j, "{\"name\":\"rt3\",");
		if (lvl)
			arn_sb_puts(&j, "\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],");
		arn_sb_puts(&j, "\"typed_per_filter_config\":{");
		for (int k = 0; k <= ARN_CFG_MAX_PER_FILTER; k++)
			arn_sb_printf(&j, "%s\"f%d\":{" FC_AT ",\"disabled\":true}", k ? "," : "",
				      k);
		arn_sb_puts(&j, lvl ? "}}]}" : "}}");
		tc_refused(R, arn_sb_cstr(&j), "more than 64 entries");
		arn_sb_free(&j);
	}
#undef FC_AT
}

/* A header value with this operator, as a HeaderValueOption list's first entry. */
#define HVO(v) "[{\"header\":{\"key\":\"x-o\",\"value\":\"" v "\"}}]"
#define RC(fields) "{\"name\":\"r\"," fields "}"
#define VH(fields) "\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"]," fields "}]"
#define RT(fields) VH("\"routes\":[{\"match\":{\"prefix\":\"/\"}," fields "}]")

/*
 * Every header value Arion formats is checked as Envoy's HeaderParser
 * checks it when it builds the formatter (SubstitutionFormatParser::
 * parse): an operator no formatter knows is refused with Envoy's "Not
 * supported field in StreamInfo: FOO", one Envoy knows and Arion has not
 * built (START_TIME, UPSTREAM_METADATA, DYNAMIC_METADATA, FILTER_STATE)
 * by name as not supported by Arion, at the field's path: the route
 * configuration's, virtual host's, route's and weighted cluster's
 * request_headers_to_add / response_headers_to_add, header_mutation's
 * appends, local_ratelimit's two lists and ratelimit's. Before, each was
 * accepted and the operator sent as its text.
 */
static void test_header_value_operators_refused_where_formatted(void **state)
{
	(void)state;
	tc_refused(R, RC("\"request_headers_to_add\":" HVO("%FOO%")),
		   "RouteConfiguration 'r': request_headers_to_add[0].header.value: Not supported "
		   "field in StreamInfo: FOO");
	tc_refused(R, RC("\"response_headers_to_add\":" HVO("a %START_TIME% b")),
		   "response_headers_to_add[0].header.value: %START_TIME%: Envoy's command "
		   "operator is not supported by Arion");
	tc_refused(R, RC(VH("\"request_headers_to_add\":" HVO("%UPSTREAM_METADATA(a:b)%"))),
		   "virtual_hosts[0].request_headers_to_add[0].header.value: "
		   "%UPSTREAM_METADATA%: Envoy's command operator is not supported by Arion");
	tc_refused(R, RC(VH("\"response_headers_to_add\":" HVO("%BAR%"))),
		   "virtual_hosts[0].response_headers_to_add[0].header.value: Not supported field "
		   "in StreamInfo: BAR");
	tc_refused(R,
		   RC(RT("\"route\":{\"cluster\":\"c\"},\"request_headers_to_add\":" HVO(
		       "%DYNAMIC_METADATA(ns:k)%"))),
		   "routes[0].request_headers_to_add[0].header.value: %DYNAMIC_METADATA%: Envoy's "
		   "command operator is not supported by Arion");
	tc_refused(R,
		   RC(RT("\"route\":{\"cluster\":\"c\"},\"response_headers_to_add\":" HVO(
		       "%FILTER_STATE(k)%"))),
		   "routes[0].response_headers_to_add[0].header.value: %FILTER_STATE%: Envoy's "
		   "command operator is not supported by Arion");
	tc_refused(R,
		   RC(RT("\"direct_response\":{\"status\":200},\"response_headers_to_add\":" HVO(
		       "%NOPE%"))),
		   "routes[0].response_headers_to_add[0].header.value: Not supported field in "
		   "StreamInfo: NOPE");
	tc_refused(R,
		   RC(RT("\"route\":{\"weighted_clusters\":{\"clusters\":[{\"name\":\"a\","
			 "\"weight\":1,\"request_headers_to_add\":" HVO("%FOO%") "}]}}")),
		   "weighted_clusters.clusters[0].request_headers_to_add[0].header.value: Not "
		   "supported field in StreamInfo: FOO");
	tc_refused(R,
		   RC(RT("\"route\":{\"weighted_clusters\":{\"clusters\":[{\"name\":\"a\","
			 "\"weight\":1,\"response_headers_to_add\":" HVO("%START_TIME%") "}]}}")),
		   "weighted_clusters.clusters[0].response_headers_to_add[0].header.value: "
		   "%START_TIME%: Envoy's command operator is not supported by Arion");
	/* header_mutation: the filter's and a route's HeaderMutationPerRoute */
	tc_refused(L,
		   LISTENER(HCM(HM_REQ("{\"append\":{\"header\":{\"key\":\"x\","
				       "\"value\":\"%FOO%\"}}}"),
				"")),
		   "request_mutations[0].append.header.value: Not supported field in StreamInfo: "
		   "FOO");
	tc_refused(
	    L,
	    LISTENER(HCM(HM_F("\"mutations\":{}"),
			 "\"typed_per_filter_config\":{\"hm\":{" AT(
			     "envoy.extensions.filters.http.header_mutation.v3."
			     "HeaderMutationPerRoute") ",\"mutations\":{\"response_mutations\":"
						       "[{\"append\":{\"header\":{\"key\":\"x\","
						       "\"value\":\"%START_TIME%\"}}}]}}},")),
	    "response_mutations[0].append.header.value: %START_TIME%: Envoy's command operator "
	    "is not supported by Arion");
	/* local_ratelimit's two lists, ratelimit's one */
	tc_refused(
	    L,
	    LISTENER(HCM("{\"name\":\"rl\",\"typed_config\":{" HLRL_AT
			 ",\"stat_prefix\":\"s\",\"response_headers_to_add\":" HVO("%FOO%") "}},",
			 "")),
	    "typed_config.response_headers_to_add[0].header.value: Not supported field in "
	    "StreamInfo: FOO");
	tc_refused(
	    L,
	    LISTENER(HCM("{\"name\":\"rl\",\"typed_config\":{" HLRL_AT ",\"stat_prefix\":\"s\","
			 "\"request_headers_to_add_when_not_enforced\":" HVO("%START_TIME%") "}},",
			 "")),
	    "typed_config.request_headers_to_add_when_not_enforced[0].header.value: "
	    "%START_TIME%: Envoy's command operator is not supported by Arion");
	tc_refused(L,
		   LISTENER(HCM(RLS("\"domain\":\"eg\"," RLS_SVC
				    ",\"response_headers_to_add\":" HVO("%RESPONSE_CODE%")),
				"")),
		   "typed_config.response_headers_to_add[0].header.value: %RESPONSE_CODE%: Envoy's "
		   "command operator is not supported by Arion");

	/* what Arion substitutes, and %% (a literal %), are taken everywhere */
	static const char ok_table[] = "\"request_headers_to_add\":" HVO(
	    "100%% %DOWNSTREAM_REMOTE_ADDRESS% %REQ(x-a?x-b):4% %HOSTNAME%") ",";
	static const char ok_resp[] =
	    "\"response_headers_to_add\":" HVO("%PROTOCOL% %UPSTREAM_HOST%") ",";
	static const char ok_route[] =
	    RT("\"route\":{\"cluster\":\"c\"},\"request_headers_to_add\":" HVO(
		"%DOWNSTREAM_DIRECT_REMOTE_ADDRESS% %DOWNSTREAM_DIRECT_REMOTE_PORT%"));
	char ok[2048];
	snprintf(ok, sizeof(ok), "{\"name\":\"r\",%s%s%s}", ok_table, ok_resp, ok_route);
	tc_ok(R, ok);
	tc_ok(L, LISTENER(HCM(HM_REQ("{\"append\":{\"header\":{\"key\":\"x\","
				     "\"value\":\"%REQ(x-a)% 5%%\"}}}"),
			      "")));
}

/*
 * The grammar is Envoy's (commandWithArgsRegex, CommandSyntaxChecker::
 * verifySyntax), with its messages: a % that starts no operator (an
 * unescaped "50%"), an argument where the operator takes none, none
 * where it needs one, a length where none is allowed; two alternatives
 * in %REQ()%. %REQ()% of a pseudo-header is refused: Arion's %REQ()% reads
 * the header list, which has none (Envoy's reads its :path, :authority).
 */
static void test_header_value_operator_syntax(void **state)
{
	(void)state;
	tc_refused(R, RC("\"request_headers_to_add\":" HVO("50%")),
		   "request_headers_to_add[0].header.value: Incorrect configuration: 50%. Couldn't "
		   "find valid command at position 2");
	tc_refused(R, RC("\"request_headers_to_add\":" HVO("%protocol%")),
		   "Couldn't find valid command at position 0");
	tc_refused(R, RC("\"request_headers_to_add\":" HVO("%PROTOCOL(x)%")),
		   "header.value: PROTOCOL does not take any parameters or length");
	tc_refused(R, RC("\"request_headers_to_add\":" HVO("%HOSTNAME:3%")),
		   "header.value: HOSTNAME does not take any parameters or length");
	tc_refused(R, RC("\"request_headers_to_add\":" HVO("%REQ%")),
		   "header.value: REQ requires parameters");
	tc_refused(R, RC("\"request_headers_to_add\":" HVO("%REQ()%")),
		   "header.value: REQ requires parameters");
	tc_refused(R, RC("\"request_headers_to_add\":" HVO("%REQ(a?b?c)%")),
		   "header.value: More than 1 alternative header specified in token: a?b?c");
	tc_refused(R, RC("\"request_headers_to_add\":" HVO("%REQ(a b)%")),
		   "header.value: Invalid header configuration. Format string contains invalid "
		   "characters.");
	tc_refused(R, RC("\"request_headers_to_add\":" HVO("%REQ(:path)%")),
		   "header.value: %REQ(:path)%: a pseudo-header in %REQ()% is not supported by "
		   "Arion");
}
#undef HVO
#undef RC
#undef VH
#undef RT

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
const struct CMUnitTest conv_l4_tests[] = {
    T(test_header_value_operators_refused_where_formatted),
    T(test_header_value_operator_syntax),
    T(test_tcp_proxy_fields),
    T(test_tcp_proxy_weighted_clusters),
    T(test_tcp_proxy_tls_termination),
    T(test_tcp_proxy_refusals),
    T(test_feature_gate),
    T(test_network_rbac),
    T(test_rbac_refusals),
    T(test_rbac_ipv6_ranges),
    T(test_http_rbac_and_per_route),
    T(test_http_ext_authz),
    T(test_http_cors),
    T(test_http_fault_filter),
    T(test_http_basic_auth),
    T(test_http_basic_auth_limits),
    T(test_http_compressor_per_route),
    T(test_http_csrf),
    T(test_http_header_mutation),
    T(test_http_oauth2),
    T(test_http_jwt_authn),
    T(test_http_rbac_matcher),
    T(test_network_local_ratelimit),
    T(test_connection_limit),
    T(test_http_local_ratelimit),
    T(test_fc_match_fields),
    T(test_route_rate_limits),
    T(test_rate_limits_beyond_descriptor_room_refused),
    T(test_rate_limit_source_cluster_is_node_cluster),
    T(test_rate_limit_descriptors_beyond_descriptor_room_refused),
    T(test_connection_limit_filters_beyond_eight_refused),
    T(test_network_filters_before_echo_refused),
    T(test_fuzz_seeds_accepted),
    T(test_filter_disabled_and_filter_config),
    T(test_route_table_per_filter_config),
    T(test_filter_config_empty_config),
    T(test_http_stateful_session),
    T(test_http_ratelimit),
};
const size_t n_conv_l4_tests = sizeof(conv_l4_tests) / sizeof(conv_l4_tests[0]);
