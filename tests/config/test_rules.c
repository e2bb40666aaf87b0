/*
 * The xDS contract's rules on static_resources (X11-X13), as arion checks
 * them right after loading the file, in both modes: every refusal names the
 * file, line, column, field and resource, as the loader's own errors do.
 * (The same rules on resources from xDS: test_conv.c.)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arn_bootstrap.h"
#include "arn_rules.h"
#include "tboot.h"
#include "tc.h"

static struct tboot tb;

static int teardown(void **state)
{
	(void)state;
	tboot_reset(&tb);
	return 0;
}

/* What arion does with a file before either mode: load, then the rules. */
static int check(const char *yaml)
{
	int rc = tboot_load(&tb, yaml, NULL);
	return rc != 0 ? rc : arn_rules_static(tb.bs, &tb.err);
}

static void assert_valid(const char *yaml)
{
	TBOOT_ASSERT_OK(check(yaml), &tb);
}

/* The error text must contain @p want (position and path included). */
static void assert_refused(const char *yaml, const char *want)
{
	TBOOT_ASSERT_REFUSED(check(yaml), &tb, want);
}

static void test_x11_rds_only_from_ads(void **state)
{
	(void)state;
	static const char hcm[] = TBOOT_LISTENER_HCM;
	char buf[4096];
	snprintf(buf, sizeof(buf),
		 "%s                  rds: {route_config_name: main, config_source: {ads: {}}}\n",
		 hcm);
	assert_valid(buf);
	snprintf(buf, sizeof(buf),
		 "%s                  rds:\n"
		 "                    route_config_name: main\n"
		 "                    config_source:\n"
		 "                      path_config_source: {path: /x}\n",
		 hcm);
	assert_refused(
	    buf,
	    "t.yaml:15:23: envoy_bootstrap.static_resources.listeners[0].filter_chains[0]."
	    "filters[0].typed_config.rds.config_source: Listener 'l': only `ads: {}` is accepted "
	    "here");
	assert_non_null(strstr(arn_sb_cstr(&tb.err), "(X11)"));
}

static void test_x12_eds_cluster_rules(void **state)
{
	(void)state;
	assert_valid("envoy_bootstrap:\n"
		     "  static_resources:\n"
		     "    clusters:\n"
		     "      - name: api\n"
		     "        type: EDS\n"
		     "        connect_timeout: 0.25s\n"
		     "        lb_policy: ROUND_ROBIN\n");
	assert_refused(
	    "envoy_bootstrap:\n"
	    "  static_resources:\n"
	    "    clusters:\n"
	    "      - name: api\n"
	    "        type: EDS\n"
	    "        eds_cluster_config:\n"
	    "          service_name: other\n",
	    "t.yaml:7:25: envoy_bootstrap.static_resources.clusters[0].eds_cluster_config."
	    "service_name: Cluster 'api': refused"); /* named as every refusal is */
	assert_refused("envoy_bootstrap:\n"
		       "  static_resources:\n"
		       "    clusters:\n"
		       "      - name: api\n"
		       "        type: EDS\n"
		       "        load_assignment: {cluster_name: api}\n",
		       "t.yaml:6:26: envoy_bootstrap.static_resources.clusters[0].load_assignment: "
		       "Cluster 'api': an EDS cluster has no load_assignment");
}

static void test_x13_sds_config_source_refused(void **state)
{
	(void)state;
	const char *base =
	    "envoy_bootstrap:\n"
	    "  static_resources:\n"
	    "    listeners:\n"
	    "      - name: l\n"
	    "        address: {socket_address: {address: 198.18.0.2, port_value: 443}}\n"
	    "        filter_chains:\n"
	    "          - transport_socket:\n"
	    "              name: envoy.transport_sockets.tls\n"
	    "              typed_config:\n"
	    "                \"@type\": type.googleapis.com/envoy.extensions.transport_sockets."
	    "tls.v3.DownstreamTlsContext\n"
	    "                common_tls_context:\n"
	    "                  tls_certificate_sds_secret_configs:\n"
	    "                    - name: server-cert\n";
	assert_valid(base);
	char buf[4096];
	snprintf(buf, sizeof(buf),
		 "%s                      sds_config:\n"
		 "                        api_config_source: {api_type: GRPC}\n",
		 base);
	assert_refused(
	    buf,
	    "t.yaml:15:25: envoy_bootstrap.static_resources.listeners[0]."
	    "filter_chains[0].transport_socket.typed_config.common_tls_context."
	    "tls_certificate_sds_secret_configs[0].sds_config: Listener 'l': an sds_config source "
	    "is refused");
	assert_non_null(strstr(arn_sb_cstr(&tb.err), "(X13)"));
}

const struct CMUnitTest rules_tests[] = {
    cmocka_unit_test_teardown(test_x11_rds_only_from_ads, teardown),
    cmocka_unit_test_teardown(test_x12_eds_cluster_rules, teardown),
    cmocka_unit_test_teardown(test_x13_sds_config_source_refused, teardown),
};
const size_t n_rules_tests = sizeof(rules_tests) / sizeof(rules_tests[0]);
