/*
 * The configuration loader: examples load, every refusal and every YAML
 * error names the right place, command-line overrides win. Rule ids from
 * spec/RULES.md are in the test names.
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "arn_bootstrap.h"
#include "arn_sb.h"
#include "tboot.h"

static struct tboot tb;

static int teardown(void **state)
{
	(void)state;
	tboot_reset(&tb);
	return 0;
}

static int load(const char *yaml)
{
	return tboot_load(&tb, yaml, NULL);
}

/* The error text must contain @p want (position and path included). */
#define assert_error(yaml, want) TBOOT_ASSERT_REFUSED(load(yaml), &tb, (want))
#define assert_loads(yaml) TBOOT_ASSERT_OK(load(yaml), &tb)

/* The example from spec/arion-xds.txt ("Enabling xDS"), byte for byte. */
static const char spec_example[] =
    "envoy_bootstrap:\n"
    "  node:\n"
    "    id: arion-1\n"
    "    cluster: edge\n"
    "  dynamic_resources:\n"
    "    ads_config:\n"
    "      grpc_services:\n"
    "        - envoy_grpc:\n"
    "            cluster_name: xds_cluster\n"
    "  static_resources:\n"
    "    clusters:\n"
    "      - name: xds_cluster\n"
    "        type: STATIC\n"
    "        connect_timeout: 0.25s\n"
    "        lb_policy: ROUND_ROBIN\n"
    "        typed_extension_protocol_options:\n"
    "          envoy.extensions.upstreams.http.v3.HttpProtocolOptions:\n"
    "            \"@type\": "
    "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions\n"
    "            explicit_http_config:\n"
    "              http2_protocol_options: {}\n"
    "        load_assignment:\n"
    "          cluster_name: xds_cluster\n"
    "          endpoints:\n"
    "            - lb_endpoints:\n"
    "                - endpoint:\n"
    "                    address:\n"
    "                      socket_address: { address: 127.0.0.1, port_value: 50051 }\n";

/* A bootstrap with the spec example's shape; %s slots let a test vary it. */
static char *xds_with(const char *grpc_services, const char *extra_cluster)
{
	static char buf[8192];
	snprintf(buf, sizeof(buf),
		 "envoy_bootstrap:\n"
		 "  node: {id: n1, cluster: c1}\n"
		 "  dynamic_resources:\n"
		 "    ads_config:\n"
		 "      grpc_services:\n"
		 "%s"
		 "  static_resources:\n"
		 "    clusters:\n"
		 "      - name: xds_cluster\n"
		 "        type: STATIC\n"
		 "        connect_timeout: 0.25s\n"
		 "        http2_protocol_options: {}\n"
		 "        load_assignment:\n"
		 "          cluster_name: xds_cluster\n"
		 "          endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: "
		 "{address: 127.0.0.1, port_value: 50051}}}}]}]\n"
		 "%s",
		 grpc_services, extra_cluster);
	return buf;
}

static void test_spec_example_loads_unchanged(void **state)
{
	(void)state;
	assert_loads(spec_example);
	assert_string_equal(tb.bs->node_id, "arion-1");
	assert_string_equal(tb.bs->node_cluster, "edge");
	assert_true(tb.bs->ads);
	assert_int_equal(tb.bs->n_xds_clusters, 1);
	assert_string_equal(tb.bs->xds_clusters[0], "xds_cluster");
	/* G9: HTTP/2 is enabled there, so no warning. */
	assert_int_equal(tb.bs->warnings.len, 0);
	assert_false(tb.bs->dp.present);
}

static void test_every_example_in_config_loads(void **state)
{
	(void)state;
	const char *src = getenv("ARION_SRC");
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s/config", src ? src : ".");
	DIR *d = opendir(dir);
	assert_non_null(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		size_t l = strlen(e->d_name);
		if (l < 6 || strcmp(e->d_name + l - 5, ".yaml") != 0)
			continue;
		char path[8192];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		tboot_reset(&tb);
		int rc = arn_bootstrap_load_file(path, NULL, &tb.bs, &tb.err);
		if (rc != 0)
			fail_msg("%s: rc=%d\n%s", path, rc, arn_sb_cstr(&tb.err));
		n++;
	}
	closedir(d);
	assert_true(n >= 2);
}

static void test_x7_service_node_and_cluster_override_file(void **state)
{
	(void)state;
	struct arn_bootstrap_overrides ov = {.service_node = "from-cli"};
	assert_int_equal(tboot_load(&tb, spec_example, &ov), 0);
	assert_string_equal(tb.bs->node_id, "from-cli");
	assert_string_equal(tb.bs->node_cluster, "edge");
	ov = (struct arn_bootstrap_overrides){.service_cluster = "cl-cli"};
	assert_int_equal(tboot_load(&tb, spec_example, &ov), 0);
	assert_string_equal(tb.bs->node_id, "arion-1");
	assert_string_equal(tb.bs->node_cluster, "cl-cli");
	struct arn_sb s = ARN_SB_INIT;
	arn_bootstrap_summary(tb.bs, &s);
	assert_non_null(strstr(arn_sb_cstr(&s), "node: id=arion-1 cluster=cl-cli"));
	arn_sb_free(&s);
}

static void test_x7_ads_needs_node_id_and_cluster(void **state)
{
	(void)state;
	const char *y = "envoy_bootstrap:\n"
			"  dynamic_resources:\n"
			"    ads_config:\n"
			"      grpc_services: [{envoy_grpc: {cluster_name: xds_cluster}}]\n"
			"  static_resources:\n"
			"    clusters:\n"
			"      - name: xds_cluster\n"
			"        http2_protocol_options: {}\n"
			"        load_assignment: {cluster_name: xds_cluster, endpoints: "
			"[{lb_endpoints: [{endpoint: {address: {socket_address: {address: "
			"127.0.0.1, port_value: 1}}}}]}]}\n";
	assert_error(y, "envoy_bootstrap.node: node id and cluster are required");
	/* ... and the command line can supply them. */
	struct arn_bootstrap_overrides ov = {.service_node = "a", .service_cluster = "b"};
	int rc = tboot_load(&tb, y, &ov);
	if (rc != 0)
		fail_msg("%s", arn_sb_cstr(&tb.err));
}

static void test_x7_ads_cluster_must_be_static_resource(void **state)
{
	(void)state;
	assert_error(xds_with("        - envoy_grpc: {cluster_name: nope}\n", ""),
		     "t.yaml:6:38: envoy_bootstrap.dynamic_resources.ads_config.grpc_services[0]."
		     "envoy_grpc.cluster_name: names cluster 'nope', which static_resources."
		     "clusters does not define");
}

static void test_x8_google_grpc_refused(void **state)
{
	(void)state;
	assert_error(xds_with("        - google_grpc: {target_uri: 'cp:1', stat_prefix: x}\n", ""),
		     "t.yaml:6:11: envoy_bootstrap.dynamic_resources.ads_config.grpc_services[0]."
		     "google_grpc: google_grpc is refused");
	assert_non_null(strstr(arn_sb_cstr(&tb.err), "(X8)"));
}

static void test_x9_several_grpc_services_kept_in_order(void **state)
{
	(void)state;
	const char *second = "      - name: backup_xds\n"
			     "        http2_protocol_options: {}\n"
			     "        load_assignment: {cluster_name: backup_xds, endpoints: "
			     "[{lb_endpoints: [{endpoint: {address: {socket_address: {address: "
			     "127.0.0.2, port_value: 50052}}}}]}]}\n";
	assert_loads(xds_with("        - envoy_grpc: {cluster_name: backup_xds}\n"
			      "        - envoy_grpc: {cluster_name: xds_cluster}\n",
			      second));
	assert_int_equal(tb.bs->n_xds_clusters, 2);
	assert_string_equal(tb.bs->xds_clusters[0], "backup_xds");
	assert_string_equal(tb.bs->xds_clusters[1], "xds_cluster");
}

/* X7: the xDS cluster may name the control plane (STRICT_DNS or
 * LOGICAL_DNS), as most hand-written bootstraps and Envoy Gateway's do;
 * one whose endpoints would have to come from the control plane (EDS)
 * is refused, naming the field. Before, anything but STATIC was. */
static void test_x7_xds_cluster_by_name(void **state)
{
	(void)state;
	static const char *const types[] = {"STRICT_DNS", "LOGICAL_DNS"};
	for (size_t i = 0; i < 2; i++) {
		char y[2048];
		snprintf(
		    y, sizeof(y),
		    "envoy_bootstrap:\n"
		    "  node: {id: n1, cluster: c1}\n"
		    "  dynamic_resources:\n"
		    "    ads_config:\n"
		    "      grpc_services: [{envoy_grpc: {cluster_name: xds_cluster}}]\n"
		    "  static_resources:\n"
		    "    clusters:\n"
		    "      - name: xds_cluster\n"
		    "        type: %s\n"
		    "        connect_timeout: 0.25s\n"
		    "        http2_protocol_options: {}\n"
		    "        load_assignment:\n"
		    "          cluster_name: xds_cluster\n"
		    "          endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: "
		    "{address: envoy-gateway.envoy-gateway-system, port_value: 18000}}}}]}]\n"
		    "xds: {allow_plaintext: true}\n",
		    types[i]);
		assert_loads(y);
		tboot_reset(&tb);
	}
	char *e = xds_with("        - envoy_grpc: {cluster_name: xds_cluster}\n", "");
	char *t = strstr(e, "type: STATIC");
	assert_non_null(t);
	memcpy(t, "type: EDS   ", 12);
	assert_error(e, "envoy_bootstrap.static_resources.clusters[0].type: the xDS cluster must "
			"be of type STATIC");
	assert_non_null(strstr(arn_sb_cstr(&tb.err), "STRICT_DNS or LOGICAL_DNS"));
	assert_non_null(strstr(arn_sb_cstr(&tb.err), "(X7)"));
}

static void test_x1_sotw_api_type_refused(void **state)
{
	(void)state;
	const char *y = "envoy_bootstrap:\n"
			"  node: {id: a, cluster: b}\n"
			"  dynamic_resources:\n"
			"    ads_config:\n"
			"      api_type: GRPC\n"
			"      grpc_services: [{envoy_grpc: {cluster_name: x}}]\n"
			"  static_resources:\n"
			"    clusters: [{name: x, http2_protocol_options: {}, load_assignment: "
			"{cluster_name: x, endpoints: [{lb_endpoints: [{endpoint: {address: "
			"{socket_address: {address: 127.0.0.1, port_value: 1}}}}]}]}}]\n";
	assert_error(y, "t.yaml:5:17: envoy_bootstrap.dynamic_resources.ads_config.api_type: "
			"Arion speaks only the incremental (delta)");
	/* DELTA_GRPC is what Arion does anyway. */
	char buf[2048];
	snprintf(buf, sizeof(buf), "%s", y);
	char *p = strstr(buf, "api_type: GRPC");
	memcpy(p, "api_type: DELTA_GRPC", strlen("api_type: DELTA_GRPC"));
	strcpy(p + strlen("api_type: DELTA_GRPC"), strstr(y, "\n      grpc_services"));
	assert_loads(buf);
}

static void test_x10_lds_config_must_be_ads(void **state)
{
	(void)state;
	const char *y = "envoy_bootstrap:\n"
			"  dynamic_resources:\n"
			"    lds_config:\n"
			"      path_config_source: {path: /etc/lds.yaml}\n";
	assert_error(y, "t.yaml:4:7: envoy_bootstrap.dynamic_resources.lds_config: only `ads: {}` "
			"is accepted here");
}

/* A negative Duration anywhere in the bootstrap is refused where it is
 * written, as Envoy refuses every one ("Expected positive duration").
 * upb's JSON decoder dropped the sign of one under a second, so
 * connect_timeout: -0.25s was read as 250 ms (-1.25s was refused), and
 * lib/config read a negative initial_fetch_timeout into unsigned ms:
 * -1s waited 49 days for the first response. */
static void test_negative_durations_refused(void **state)
{
	(void)state;
	static char y[sizeof(spec_example) + 128];
	const char *at = strstr(spec_example, "    ads_config:\n");
	assert_non_null(at);
	snprintf(y, sizeof(y), "%.*s    cds_config: {ads: {}, initial_fetch_timeout: -1s}\n%s",
		 (int)(at - spec_example), spec_example, at);
	assert_error(y, "t.yaml:6:50: envoy_bootstrap.dynamic_resources.cds_config."
			"initial_fetch_timeout: '-1s': a duration must not be negative");
	snprintf(y, sizeof(y), "%.*s    lds_config: {ads: {}, initial_fetch_timeout: -0.5s}\n%s",
		 (int)(at - spec_example), spec_example, at);
	assert_error(y, "'-0.5s': a duration must not be negative");
	const char *ct = strstr(spec_example, "connect_timeout: 0.25s");
	assert_non_null(ct);
	snprintf(y, sizeof(y), "%.*sconnect_timeout: -0.25s%s", (int)(ct - spec_example),
		 spec_example, ct + strlen("connect_timeout: 0.25s"));
	assert_error(y, "static_resources.clusters[0].connect_timeout: '-0.25s': a duration "
			"must not be negative");
	/* zero, however written, is not negative */
	snprintf(y, sizeof(y), "%.*s    cds_config: {ads: {}, initial_fetch_timeout: -0.0s}\n%s",
		 (int)(at - spec_example), spec_example, at);
	assert_loads(y);
}

static void test_g9_xds_cluster_without_http2_warns(void **state)
{
	(void)state;
	const char *y = "envoy_bootstrap:\n"
			"  node: {id: a, cluster: b}\n"
			"  dynamic_resources:\n"
			"    ads_config:\n"
			"      grpc_services: [{envoy_grpc: {cluster_name: x}}]\n"
			"  static_resources:\n"
			"    clusters:\n"
			"      - name: x\n"
			"        load_assignment: {cluster_name: x, endpoints: [{lb_endpoints: "
			"[{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: "
			"1}}}}]}]}\n";
	assert_loads(y);
	const char *w = arn_sb_cstr(&tb.bs->warnings);
	assert_non_null(strstr(w, "t.yaml:8:9: envoy_bootstrap.static_resources.clusters[0]: "
				  "xDS cluster 'x' does not enable HTTP/2"));
	assert_non_null(strstr(w, "explicit_http_config: {http2_protocol_options: {}}"));
	assert_non_null(strstr(w, "(G9)"));
}

static const char *listener_with_hcm(const char *hcm_extra)
{
	static char buf[4096];
	snprintf(buf, sizeof(buf), "%s%s", TBOOT_LISTENER_HCM, hcm_extra);
	return buf;
}

static void test_yaml_error_line_and_column(void **state)
{
	(void)state;
	assert_error("envoy_bootstrap:\n"
		     "  node:\n"
		     "    id: x\n"
		     "   cluster: y\n",
		     "t.yaml:4:4: YAML error: did not find expected key");
	assert_error("envoy_bootstrap:\n"
		     "  node: {id: x\n",
		     "t.yaml:3:1: YAML error:");
	assert_error("envoy_bootstrap:\n\tnode: {}\n", "t.yaml:2:1: YAML error:");
	assert_non_null(
	    strstr(arn_sb_cstr(&tb.err), "that is a tab: YAML indents with spaces only"));
}

static void test_unknown_field_with_hint_and_position(void **state)
{
	(void)state;
	assert_error("envoy_bootstrap:\n"
		     "  static_resources:\n"
		     "    clusters:\n"
		     "      - name: a\n"
		     "        conect_timeout: 1s\n",
		     "t.yaml:5:9: envoy_bootstrap.static_resources.clusters[0].conect_timeout: "
		     "unknown field 'conect_timeout' in envoy.config.cluster.v3.Cluster (did you "
		     "mean 'connect_timeout'?)");
}

/*
 * Issue 21 item 4: the connection limits Envoy reads from layered_runtime
 * (overload.global_downstream_max_connections, nested or dotted, and
 * envoy.resource_limits.listener.<name>.connection_limit) are kept for
 * lib/http, a later layer's value winning; a value that is not a count is
 * refused rather than dropped.
 */
static void test_runtime_connection_limits(void **state)
{
	(void)state;
	assert_loads("envoy_bootstrap:\n  layered_runtime: {layers: [{name: s, static_layer: "
		     "{overload: {global_downstream_max_connections: 50000}}}]}\n");
	assert_true(tb.bs->has_global_cx_limit);
	assert_int_equal(tb.bs->global_cx_limit, 50000);
	teardown(NULL);
	assert_loads("envoy_bootstrap:\n  layered_runtime: {layers: [{name: s, static_layer: "
		     "{envoy.resource_limits.listener.l1.connection_limit: 10, "
		     "envoy: {resource_limits: {listener: {l.two: {connection_limit: 20}}}}}}, "
		     "{name: t, static_layer: {envoy.resource_limits.listener.l1.connection_limit: "
		     "11}}]}\n");
	assert_false(tb.bs->has_global_cx_limit);
	assert_int_equal(tb.bs->n_cx_limits, 2);
	assert_string_equal(tb.bs->cx_limits[0].listener, "l1");
	assert_int_equal(tb.bs->cx_limits[0].max, 11);
	assert_string_equal(tb.bs->cx_limits[1].listener, "l.two");
	assert_int_equal(tb.bs->cx_limits[1].max, 20);
	struct arn_sb sum = ARN_SB_INIT;
	arn_bootstrap_summary(tb.bs, &sum);
	assert_non_null(
	    strstr(arn_sb_cstr(&sum), "connection limits: listener l1 11, listener l.two 20\n"));
	arn_sb_free(&sum);
	teardown(NULL);
	assert_error(
	    "envoy_bootstrap:\n  layered_runtime: {layers: [{name: s, static_layer: "
	    "{overload: {global_downstream_max_connections: -1}}}]}\n",
	    "t.yaml:2:101: envoy_bootstrap.layered_runtime.layers[0].static_layer.overload."
	    "global_downstream_max_connections: the runtime key "
	    "'overload.global_downstream_max_connections' is a connection limit: its value "
	    "must be a whole number");
	assert_error("envoy_bootstrap:\n  layered_runtime: {layers: [{name: s, static_layer: "
		     "{envoy.resource_limits.listener.l1.connection_limit: 1.5}}]}\n",
		     "'envoy.resource_limits.listener.l1.connection_limit' is a connection limit");
}

/*
 * Issue 21 item 4: overload_manager with Envoy's
 * global_downstream_max_connections monitor sets the global limit, and
 * wins over the runtime key (a warning says so); its other monitors,
 * actions and a limit that is not positive are refused by name.
 */
static void test_overload_manager_global_connections(void **state)
{
	(void)state;
#define OM_MON(max)                                                                                \
	"  overload_manager:\n"                                                                    \
	"    resource_monitors:\n"                                                                 \
	"      - name: envoy.resource_monitors.global_downstream_max_connections\n"                \
	"        typed_config:\n"                                                                  \
	"          \"@type\": type.googleapis.com/envoy.extensions.resource_monitors."             \
	"downstream_connections.v3.DownstreamConnectionsConfig\n"                                  \
	"          max_active_downstream_connections: " max "\n"
	assert_loads("envoy_bootstrap:\n" OM_MON("1000"));
	assert_true(tb.bs->has_global_cx_limit);
	assert_int_equal(tb.bs->global_cx_limit, 1000);
	assert_int_equal(tb.bs->warnings.len, 0);
	teardown(NULL);
	assert_loads("envoy_bootstrap:\n" OM_MON(
	    "1000") "  layered_runtime: {layers: [{name: s, "
		    "static_layer: {overload.global_downstream_max_connections: 5}}]}\n");
	assert_int_equal(tb.bs->global_cx_limit, 1000);
	assert_non_null(strstr(arn_sb_cstr(&tb.bs->warnings), "wins over this runtime key"));
	teardown(NULL);
	assert_error(
	    "envoy_bootstrap:\n" OM_MON("0"),
	    "envoy_bootstrap.overload_manager.resource_monitors[0].typed_config.max_active_"
	    "downstream_connections: must be greater than 0");
	assert_error("envoy_bootstrap:\n  overload_manager:\n    resource_monitors:\n"
		     "      - name: envoy.resource_monitors.fixed_heap\n",
		     "envoy_bootstrap.overload_manager.resource_monitors[0]: the resource monitor "
		     "'envoy.resource_monitors.fixed_heap' is not supported by Arion");
	assert_error("envoy_bootstrap:\n" OM_MON(
			 "1") "    actions:\n"
			      "      - name: envoy.overload_actions.stop_accepting_requests\n",
		     "envoy_bootstrap.overload_manager.actions: not supported by Arion");
#undef OM_MON
}

static void test_wrong_kinds_and_values(void **state)
{
	(void)state;
	assert_error("envoy_bootstrap:\n  node: [a]\n",
		     "t.yaml:2:9: envoy_bootstrap.node: expected a mapping (envoy.config.core.v3."
		     "Node), found a list");
	assert_error("envoy_bootstrap:\n  static_resources: {clusters: [{name: a, "
		     "connect_timeout: 5}]}\n",
		     "envoy_bootstrap.static_resources.clusters[0].connect_timeout: '5' is not a "
		     "duration");
	assert_error("envoy_bootstrap:\n  static_resources: {clusters: [{name: a, lb_policy: "
		     "FASTEST}]}\n",
		     "'FASTEST' is not a value of envoy.config.cluster.v3.Cluster.LbPolicy");
	/* layered_runtime is accepted; other keys than the connection limits
	 * change nothing */
	assert_loads("envoy_bootstrap:\n  layered_runtime: {layers: [{name: s, static_layer: "
		     "{re2: {max_program_size: {error_level: 200}}}}]}\n");
	assert_false(tb.bs->has_global_cx_limit);
	assert_int_equal(tb.bs->n_cx_limits, 0);
	/* as Envoy (protobuf's case_insensitive_enum_parsing): a lower-case
	 * name is tried in upper case, as Envoy's examples write them */
	assert_loads("envoy_bootstrap:\n  static_resources: {clusters: [{name: a, type: static, "
		     "lb_policy: round_robin}]}\n");
	assert_error("envoy_bootstrap:\n  static_resources: {clusters: [{name: a, lb_policy: "
		     "fastest}]}\n",
		     "'fastest' is not a value of envoy.config.cluster.v3.Cluster.LbPolicy");
	assert_error("envoy_bootstrap:\n  admin: {address: {socket_address: {address: 127.0.0.1, "
		     "port_value: -1}}}\n",
		     "port_value: expected an unsigned 32-bit integer, got '-1'");
}

/* Issue 15: --mode validate refuses what serve would refuse later, with the
 * file's line, and each mistake gets one error, not a second wrong one. */
static void test_serve_time_refusals_found_at_load(void **state)
{
	(void)state;
	unsetenv("ARION_ADMIN_ALLOW_REMOTE");
	const char *remote = "envoy_bootstrap:\n  admin: {address: {socket_address: {address: "
			     "0.0.0.0, port_value: 9901}}}\n";
	assert_error(remote, "t.yaml:2:");
	assert_error(remote, "0.0.0.0 is not a loopback address");
	assert_error(remote, "ARION_ADMIN_ALLOW_REMOTE=1");
	setenv("ARION_ADMIN_ALLOW_REMOTE", "1", 1);
	assert_loads(remote);
	unsetenv("ARION_ADMIN_ALLOW_REMOTE");
	assert_loads("envoy_bootstrap:\n  admin: {address: {socket_address: {address: '::1', "
		     "port_value: 9901}}}\n");
	assert_error("envoy_bootstrap:\n  admin: {address: {socket_address: {address: localhost, "
		     "port_value: 9901}}}\n",
		     "'localhost' is not an IP address");
	/* a frame of the port's MTU must fit an mbuf */
	const char *jumbo = "envoy_bootstrap: {}\n"
			    "dataplane:\n"
			    "  ports:\n"
			    "    - device: net_tap0,iface=t0\n"
			    "      ipv4: 198.18.0.2/24\n"
			    "      mtu: 9000\n";
	assert_error(jumbo, "t.yaml:6:");
	assert_error(jumbo, "raise mbuf_pool.data_room_size to 9150");
	/* ipv4 with a bad prefix: that error, and not "ipv4: is missing" */
	const char *bad_prefix = "envoy_bootstrap: {}\n"
				 "dataplane:\n"
				 "  ports:\n"
				 "    - device: net_tap0,iface=t0\n"
				 "      ipv4: 198.18.0.1/33\n";
	assert_error(bad_prefix, "ipv4");
	assert_null(strstr(arn_sb_cstr(&tb.err), "is missing"));
}

/* Arion's own kernel exchange is a device like DPDK's virtual ones */
static void test_arn_af_packet_device(void **state)
{
	(void)state;
	assert_loads("envoy_bootstrap: {}\n"
		     "dataplane:\n"
		     "  ports: [{device: \"arn_af_packet,iface=v0\", ipv4: 198.18.0.2/24}]\n");
	assert_false(tb.bs->dp.ports[0].is_pci);
	assert_string_equal(tb.bs->dp.ports[0].device, "arn_af_packet,iface=v0");
}

static void test_oneof_both_set_refused(void **state)
{
	(void)state;
	assert_error(
	    "envoy_bootstrap:\n"
	    "  static_resources:\n"
	    "    clusters:\n"
	    "      - name: a\n"
	    "        type: STATIC\n"
	    "        cluster_type: {name: x}\n",
	    "t.yaml:6:9: envoy_bootstrap.static_resources.clusters[0].cluster_type: 'type' "
	    "and 'cluster_type' are both set");
}

static void test_duplicate_keys_refused(void **state)
{
	(void)state;
	assert_error("envoy_bootstrap:\n"
		     "  node:\n"
		     "    id: a\n"
		     "    id: b\n",
		     "t.yaml:4:5: envoy_bootstrap.node.id: 'id' is set twice (also at line 3)");
	/* The same field by its proto name and its JSON name is also twice. */
	assert_error("envoy_bootstrap:\n"
		     "  static_resources: {clusters: [{name: a, connect_timeout: 1s, "
		     "connectTimeout: 2s}]}\n",
		     "'connectTimeout' is set twice");
	assert_error("envoy_bootstrap: {}\nenvoy_bootstrap: {}\n",
		     "t.yaml:2:1: 'envoy_bootstrap' appears twice");
	/* In a Struct and in a proto map too. */
	assert_error("envoy_bootstrap:\n"
		     "  node: {id: a, metadata: {k: 1, k: 2}}\n",
		     "t.yaml:2:34: envoy_bootstrap.node.metadata[\"k\"]: duplicate key 'k'");
	assert_error("envoy_bootstrap:\n"
		     "  static_resources: {clusters: [{name: a, typed_extension_protocol_options: "
		     "{x: {\"@type\": type.googleapis.com/envoy.extensions.filters.network.echo.v3."
		     "Echo}, x: {\"@type\": type.googleapis.com/envoy.extensions.filters.network."
		     "echo.v3.Echo}}}]}\n",
		     "duplicate key 'x'");
}

static void test_json_names_accepted(void **state)
{
	(void)state;
	assert_loads("envoy_bootstrap:\n"
		     "  staticResources:\n"
		     "    clusters: [{name: a, connectTimeout: 1.5s, lbPolicy: LEAST_REQUEST}]\n");
}

static void test_unknown_any_type(void **state)
{
	(void)state;
	assert_error(
	    listener_with_hcm("                  http_filters:\n"
			      "                    - name: f\n"
			      "                      typed_config:\n"
			      "                        \"@type\": type.googleapis.com/acme."
			      "Magic\n"),
	    "t.yaml:15:34: envoy_bootstrap.static_resources.listeners[0].filter_chains[0]."
	    "filters[0].typed_config.http_filters[0].typed_config.@type: unknown type "
	    "'type.googleapis.com/acme.Magic'");
}

static void test_unsupported_bootstrap_field_refused(void **state)
{
	(void)state;
	assert_error("envoy_bootstrap:\n"
		     "  stats_flush_interval: 5s\n",
		     "t.yaml:2:25: envoy_bootstrap.stats_flush_interval: not supported by Arion");
}

static void test_alias_cycle_and_bomb_end_in_errors(void **state)
{
	(void)state;
	assert_error("envoy_bootstrap:\n"
		     "  node: &a {metadata: {x: *a}}\n",
		     "nested more than");
	/* 10 levels of 10x expansion: 10^10 nodes if expanded naively. */
	struct arn_sb y = ARN_SB_INIT;
	arn_sb_puts(&y, "a0: &a0 [x,x,x,x,x,x,x,x,x,x]\n");
	for (int i = 1; i < 10; i++)
		arn_sb_printf(&y, "a%d: &a%d [*a%d,*a%d,*a%d,*a%d,*a%d,*a%d,*a%d,*a%d,*a%d,*a%d]\n",
			      i, i, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1,
			      i - 1);
	char *bomb = malloc(y.len + 200);
	snprintf(bomb, y.len + 200, "envoy_bootstrap:\n  node:\n    metadata:\n      %s",
		 arn_sb_cstr(&y));
	/* indent the continuation lines */
	struct arn_sb z = ARN_SB_INIT;
	for (const char *p = bomb; *p; p++) {
		arn_sb_putc(&z, *p);
		if (*p == '\n' && p[1] && strncmp(p + 1, "a", 1) == 0)
			arn_sb_puts(&z, "      ");
	}
	assert_error(arn_sb_cstr(&z), "document too large once aliases are expanded");
	free(bomb);
	arn_sb_free(&y);
	arn_sb_free(&z);
}

static void test_file_level_errors(void **state)
{
	(void)state;
	assert_error("", "t.yaml: the file is empty");
	assert_error("envoy_bootstrap: {}\n---\nenvoy_bootstrap: {}\n",
		     "t.yaml:3:1: a second YAML document");
	assert_error("- a\n", "t.yaml:1:1: the file must be a mapping");
	assert_error("dataplane: {}\n", "envoy_bootstrap: is missing");
	assert_error("envoy_bootstrap: {}\nextra: 1\n",
		     "t.yaml:2:1: unknown top-level key 'extra'");
	arn_sb_free(&tb.err);
	assert_int_equal(arn_bootstrap_load_file("/nonexistent/arion.yaml", NULL, &tb.bs, &tb.err),
			 -ENOENT);
	assert_non_null(strstr(arn_sb_cstr(&tb.err), "/nonexistent/arion.yaml: cannot open"));
}

static void test_dataplane_section(void **state)
{
	(void)state;
	assert_loads("envoy_bootstrap: {}\n"
		     "dataplane:\n"
		     "  eal_args: [--no-huge]\n"
		     "  control_lcore: 0\n"
		     "  worker_lcores: [1, 2]\n"
		     "  ports:\n"
		     "    - device: 0000:03:00.0\n"
		     "      ipv4: 198.18.0.2/24\n"
		     "      gateway: 198.18.0.1\n"
		     "      mtu: 9000\n"
		     "    - device: net_tap0,iface=t0\n"
		     "      ipv4: 198.19.0.2/16\n"
		     "      gateway: 198.19.0.1\n"
		     "      routes: [16.0.0.0/16, 48.0.0.0/8]\n"
		     "  mbuf_pool: {mbufs_per_socket: 4095, data_room_size: 9216}\n"
		     "  tcp: {max_connections_per_worker: 1024, congestion_control: newreno}\n"
		     "  http: {max_requests_in_flight: 64}\n");
	const struct arn_dataplane *dp = &tb.bs->dp;
	assert_true(dp->present);
	assert_int_equal(dp->n_workers, 2);
	assert_int_equal(dp->worker_lcores[1], 2);
	assert_int_equal(dp->n_ports, 2);
	assert_true(dp->ports[0].is_pci);
	assert_false(dp->ports[1].is_pci);
	assert_int_equal(dp->ports[0].ipv4, 0xc6120002);
	assert_int_equal(dp->ports[0].prefix_len, 24);
	assert_int_equal(dp->ports[0].gateway, 0xc6120001);
	assert_int_equal(dp->ports[0].mtu, 9000);
	assert_int_equal(dp->ports[1].mtu, 1500);
	assert_string_equal(dp->ports[1].name, "port1");
	assert_int_equal(dp->ports[0].n_routes, 0);
	assert_int_equal(dp->ports[1].n_routes, 2);
	assert_int_equal(dp->ports[1].routes[0].prefix, 0x10000000);
	assert_int_equal(dp->ports[1].routes[0].len, 16);
	assert_int_equal(dp->ports[1].routes[1].len, 8);
	assert_int_equal(dp->mbufs_per_socket, 4095);
	assert_int_equal(dp->mbuf_cache_size, 256);
	assert_int_equal(dp->tcp_max_connections, 1024);
	assert_int_equal(dp->tcp_cc, ARN_DP_TCP_CC_NEWRENO);
	assert_int_equal(dp->tcp_rcvbuf, 256 * 1024);
	assert_int_equal(dp->http_max_requests_in_flight, 64);
	assert_int_equal(dp->http_max_client_connections, 16384);
	assert_error(
	    "envoy_bootstrap: {}\n"
	    "dataplane:\n"
	    "  http: {max_requests_in_flight: 2}\n",
	    "dataplane.http.max_requests_in_flight: expected an integer from 4 to 1048576, "
	    "got '2'");

	assert_loads("envoy_bootstrap: {}\n"
		     "dataplane:\n"
		     "  tcp: {congestion_control: bbr}\n");
	assert_int_equal(tb.bs->dp.tcp_cc, ARN_DP_TCP_CC_BBR);
	assert_error("envoy_bootstrap: {}\n"
		     "dataplane:\n"
		     "  tcp: {congestion_control: bbr2}\n",
		     "t.yaml:3:29: dataplane.tcp.congestion_control: expected one of cubic, "
		     "newreno, bbr, got 'bbr2'");
	assert_error("envoy_bootstrap: {}\n"
		     "dataplane:\n"
		     "  tcp: {sndbuf: 1k}\n",
		     "dataplane.tcp.sndbuf: expected an integer from 4096 to 1073741824, got '1k'");
	/* dataplane.tcp.reordering_window_max_ms: off (0, RFC 8985's window)
	 * unless set, at most the RTO's floor */
	assert_loads("envoy_bootstrap: {}\n"
		     "dataplane:\n"
		     "  tcp: {congestion_control: cubic}\n");
	assert_int_equal(tb.bs->dp.tcp_reo_max_ms, 0);
	assert_loads("envoy_bootstrap: {}\n"
		     "dataplane:\n"
		     "  tcp: {reordering_window_max_ms: 50}\n");
	assert_int_equal(tb.bs->dp.tcp_reo_max_ms, 50);
	assert_loads("envoy_bootstrap: {}\n"
		     "dataplane:\n"
		     "  tcp: {reordering_window_max_ms: 200}\n");
	assert_int_equal(tb.bs->dp.tcp_reo_max_ms, 200);
	assert_error("envoy_bootstrap: {}\n"
		     "dataplane:\n"
		     "  tcp: {reordering_window_max_ms: 201}\n",
		     "t.yaml:3:35: dataplane.tcp.reordering_window_max_ms: expected an integer "
		     "from 0 to 200, got '201'");
	assert_error("envoy_bootstrap: {}\n"
		     "dataplane:\n"
		     "  tcp: {reordering_window_max_ms: -1}\n",
		     "dataplane.tcp.reordering_window_max_ms: expected an integer from 0 to 200, "
		     "got '-1'");

	assert_error("envoy_bootstrap: {}\n"
		     "dataplane:\n"
		     "  ports:\n"
		     "    - device: eth0\n"
		     "      ipv4: 198.18.0.2\n",
		     "t.yaml:4:15: dataplane.ports[0].device: 'eth0' is neither a PCI address");
	assert_non_null(strstr(arn_sb_cstr(&tb.err), "t.yaml:5:13: dataplane.ports[0].ipv4: "
						     "'198.18.0.2': write address/prefix"));
	/* Arion's own port takes its arguments after a comma, as a vdev does */
	assert_error("envoy_bootstrap: {}\n"
		     "dataplane:\n"
		     "  ports: [{device: arn_af_packet, ipv4: 198.18.0.2/24}]\n",
		     "'arn_af_packet' is neither a PCI address");
	assert_error("envoy_bootstrap: {}\n"
		     "dataplane:\n"
		     "  ports: [{device: \"arn_af_packetx,iface=v0\", ipv4: 198.18.0.2/24}]\n",
		     "Arion's own arn_af_packet,iface=veth0");
	assert_error("envoy_bootstrap: {}\n"
		     "dataplane:\n"
		     "  ports: [{device: net_tap0, ipv4: 198.18.0.2/24, gateway: 10.0.0.1}]\n",
		     "dataplane.ports[0].gateway: the gateway is not on this port's subnet");
	assert_error("envoy_bootstrap: {}\n"
		     "dataplane:\n"
		     "  ports: [{device: net_tap0, ipv4: 198.18.0.2/24, routes: [16.0.0.1/16]}]\n",
		     "dataplane.ports[0].routes[0]: host bits are set");
	assert_error("envoy_bootstrap: {}\n"
		     "dataplane:\n"
		     "  ports: [{device: net_tap0, ipv4: 198.18.0.2/24, routes: [16.0.0.0/16]}]\n",
		     "dataplane.ports[0].routes: routes go through a gateway");
	assert_error("envoy_bootstrap: {}\n"
		     "dataplane:\n"
		     "  control_lcore: 1\n"
		     "  worker_lcores: [1]\n",
		     "dataplane.worker_lcores: lcore 1 is the control lcore");
	assert_error("envoy_bootstrap: {}\n"
		     "dataplane:\n"
		     "  wokers: [1]\n",
		     "t.yaml:3:11: dataplane.wokers: unknown key 'wokers'");
	assert_error("envoy_bootstrap: {}\n"
		     "dataplane:\n"
		     "  mbuf_pool: {cache_size: 100000}\n",
		     "dataplane.mbuf_pool.cache_size: expected an integer from 0 to 512");
	assert_error("envoy_bootstrap: {}\n"
		     "dataplane:\n"
		     "  worker_lcores: [1]\n"
		     "  worker_lcores: [2]\n",
		     "t.yaml:4:3: dataplane.worker_lcores: 'worker_lcores' is set twice (also at "
		     "line 3)");
}

/* ---- the channel to the control plane (xds_channel.c) ---------------------- */

/*
 * An xDS bootstrap whose cluster reaches @p address, with @p tls as its
 * transport_socket.typed_config body (after @type; NULL: none), @p secrets
 * as static_resources.secrets items and @p tail after envoy_bootstrap:.
 */
static const char *chan(const char *address, const char *tls, const char *secrets, const char *tail)
{
	static char buf[8192];
	snprintf(buf, sizeof(buf),
		 "envoy_bootstrap:\n"
		 "  node: {id: n1, cluster: c1}\n"
		 "  dynamic_resources:\n"
		 "    ads_config: {grpc_services: [{envoy_grpc: {cluster_name: xds_cluster}}]}\n"
		 "  static_resources:\n"
		 "    secrets:\n"
		 "      - {name: ca, validation_context: {trusted_ca: {inline_string: x}}}\n"
		 "      - name: client\n"
		 "        tls_certificate: {certificate_chain: {inline_string: x}, private_key: "
		 "{inline_string: y}}\n"
		 "%s"
		 "    clusters:\n"
		 "      - name: xds_cluster\n"
		 "        type: STATIC\n"
		 "        http2_protocol_options: {}\n"
		 "        load_assignment: {cluster_name: xds_cluster, endpoints: [{lb_endpoints: "
		 "[{endpoint: {address: {socket_address: {address: \"%s\", port_value: "
		 "18000}}}}]}]}\n"
		 "%s%s%s"
		 "%s",
		 secrets ? secrets : "", address,
		 tls ? "        transport_socket:\n          name: envoy.transport_sockets.tls\n"
		       "          typed_config:\n            \"@type\": type.googleapis.com/"
		       "envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext\n"
		     : "",
		 tls ? tls : "", tls && *tls ? "\n" : "", tail ? tail : "");
	return buf;
}

#define CA_REF "            common_tls_context: {validation_context_sds_secret_config: {name: ca}"

static void summary_has(const char *want)
{
	struct arn_sb sum = ARN_SB_INIT;
	arn_bootstrap_summary(tb.bs, &sum);
	if (strstr(arn_sb_cstr(&sum), want) == NULL)
		fail_msg("summary lacks '%s':\n%s", want, arn_sb_cstr(&sum));
	arn_sb_free(&sum);
}

/* The summary says whether receive buffers are autotuned and how far
 * (dataplane.tcp.rcvbuf_max; 0 or not above rcvbuf: off). */
static void test_summary_says_rcvbuf_autotuning(void **state)
{
	(void)state;
	assert_loads("envoy_bootstrap: {}\n"
		     "dataplane:\n"
		     "  ports: [{device: net_tap0, ipv4: 198.18.0.2/24}]\n");
	summary_has("rcvbuf 262144 (autotuned up to 4194304), sndbuf 262144 (autotuned up to "
		    "4194304)\n");
	assert_loads("envoy_bootstrap: {}\n"
		     "dataplane:\n"
		     "  ports: [{device: net_tap0, ipv4: 198.18.0.2/24}]\n"
		     "  tcp: {rcvbuf_max: 0}\n");
	summary_has("rcvbuf 262144 (not autotuned), sndbuf 262144 (autotuned up to 4194304)\n");
}

/* The same for send buffers (dataplane.tcp.sndbuf_max, 4 MiB unless
 * set, as Linux's tcp_wmem[2]; 0 or not above sndbuf: off), parsed as
 * rcvbuf_max is. */
static void test_summary_says_sndbuf_autotuning(void **state)
{
	(void)state;
	assert_loads("envoy_bootstrap: {}\n"
		     "dataplane:\n"
		     "  ports: [{device: net_tap0, ipv4: 198.18.0.2/24}]\n");
	assert_int_equal(tb.bs->dp.tcp_sndbuf_max, 4u << 20);
	summary_has(", sndbuf 262144 (autotuned up to 4194304)\n");
	assert_loads("envoy_bootstrap: {}\n"
		     "dataplane:\n"
		     "  ports: [{device: net_tap0, ipv4: 198.18.0.2/24}]\n"
		     "  tcp: {sndbuf_max: 8388608}\n");
	assert_int_equal(tb.bs->dp.tcp_sndbuf_max, 8u << 20);
	summary_has(", sndbuf 262144 (autotuned up to 8388608)\n");
	assert_loads("envoy_bootstrap: {}\n"
		     "dataplane:\n"
		     "  ports: [{device: net_tap0, ipv4: 198.18.0.2/24}]\n"
		     "  tcp: {sndbuf_max: 0}\n");
	assert_int_equal(tb.bs->dp.tcp_sndbuf_max, 0);
	summary_has("rcvbuf 262144 (autotuned up to 4194304), sndbuf 262144 (not autotuned)\n");
	/* no more than sndbuf: off as well */
	assert_loads("envoy_bootstrap: {}\n"
		     "dataplane:\n"
		     "  ports: [{device: net_tap0, ipv4: 198.18.0.2/24}]\n"
		     "  tcp: {sndbuf: 1048576, sndbuf_max: 1048576}\n");
	summary_has(", sndbuf 1048576 (not autotuned)\n");
	assert_error("envoy_bootstrap: {}\n"
		     "dataplane:\n"
		     "  tcp: {sndbuf_max: 2147483648}\n",
		     "t.yaml:3:21: dataplane.tcp.sndbuf_max: expected an integer from 0 to "
		     "1073741824, got '2147483648'");
	assert_error("envoy_bootstrap: {}\n"
		     "dataplane:\n"
		     "  tcp: {sndbuf_max: 4m}\n",
		     "dataplane.tcp.sndbuf_max: expected an integer from 0 to 1073741824, "
		     "got '4m'");
}

/* The summary names the opt-in reordering window beyond SRTT
 * (dataplane.tcp.reordering_window_max_ms) when it is set, and nothing
 * for the default (RFC 8985's window). */
static void test_summary_says_reordering_window(void **state)
{
	(void)state;
	assert_loads("envoy_bootstrap: {}\n"
		     "dataplane:\n"
		     "  ports: [{device: net_tap0, ipv4: 198.18.0.2/24}]\n"
		     "  tcp: {reordering_window_max_ms: 50}\n");
	summary_has(", sndbuf 262144 (autotuned up to 4194304), reordering window up to 50 ms on "
		    "DSACK evidence\n");
	assert_loads("envoy_bootstrap: {}\n"
		     "dataplane:\n"
		     "  ports: [{device: net_tap0, ipv4: 198.18.0.2/24}]\n");
	summary_has(", sndbuf 262144 (autotuned up to 4194304)\n");
}

/* TLS and mTLS to the control plane, as Envoy writes them. */
static void test_xds_channel_tls_accepted(void **state)
{
	(void)state;
	assert_loads(chan("10.0.0.1", CA_REF "}", NULL, NULL));
	summary_has("cluster xds_cluster [10.0.0.1:18000] TLS\n");
	assert_loads(
	    chan("10.0.0.1",
		 "            sni: cp.example.com\n"
		 "            common_tls_context:\n"
		 "              tls_params: {tls_minimum_protocol_version: TLSv1_2, "
		 "tls_maximum_protocol_version: TLSv1_3}\n"
		 "              alpn_protocols: [h2]\n"
		 "              tls_certificate_sds_secret_configs: [{name: client}]\n"
		 "              combined_validation_context:\n"
		 "                validation_context_sds_secret_config: {name: ca}\n"
		 "                default_validation_context:\n"
		 "                  match_subject_alt_names: [{exact: cp.example.com}]\n"
		 "                  match_typed_subject_alt_names:\n"
		 "                    - {san_type: DNS, matcher: {suffix: .example.com, "
		 "ignore_case: true}}\n"
		 "                    - {san_type: URI, matcher: {prefix: \"spiffe://\"}}\n"
		 "                    - {san_type: IP_ADDRESS, matcher: {exact: 10.0.0.1}}\n"
		 "                    - {san_type: EMAIL, matcher: {contains: \"@\"}}",
		 NULL, NULL));
	summary_has("cluster xds_cluster [10.0.0.1:18000] mTLS\n");
	assert_int_equal(tb.bs->warnings.len, 0);
	/* SAN matchers in the CA's secret */
	assert_loads(
	    chan("10.0.0.1", CA_REF ", tls_certificate_sds_secret_configs: [{name: c2}]}",
		 "      - name: c2\n"
		 "        tls_certificate: {certificate_chain: {filename: /c.pem}, "
		 "private_key: {environment_variable: KEY}}\n"
		 "      - name: ca2\n"
		 "        validation_context: {trusted_ca: {filename: /ca.pem}, "
		 "match_typed_subject_alt_names: [{san_type: DNS, matcher: {exact: a}}]}\n",
		 NULL));
}

/* Whatever of UpstreamTlsContext gRPC's TLS client cannot do is refused by field. */
static void test_xds_channel_refusals_name_the_field(void **state)
{
	(void)state;
	const char *ts =
	    "envoy_bootstrap.static_resources.clusters[0].transport_socket.typed_config";
	char want[512];
#define REFUSED(tls, secrets, field, text)                                                         \
	do {                                                                                       \
		snprintf(want, sizeof(want), "%s%s: %s", ts, field, text);                         \
		assert_error(chan("10.0.0.1", tls, secrets, NULL), want);                          \
	} while (0)
	/* X13 and the xDS cluster: inline material is refused, naming the way */
	REFUSED(CA_REF ", tls_certificates: [{certificate_chain: {inline_string: x}}]}", NULL,
		".common_tls_context.tls_certificates",
		"inline certificates are refused (X13): put certificate_chain and private_key in a "
		"static_resources.secrets entry");
	REFUSED("            common_tls_context: {validation_context: {trusted_ca: {filename: "
		"/ca.pem}}}",
		NULL, ".common_tls_context.validation_context.trusted_ca",
		"an inline trusted CA is refused (X13)");
	/* no CA: Envoy would not verify the peer; refused */
	REFUSED("            common_tls_context: {tls_certificate_sds_secret_configs: [{name: "
		"client}]}",
		NULL, ".common_tls_context", "no trusted CA: Envoy would not verify");
	REFUSED("            sni: x", NULL, "", "common_tls_context is missing");
	REFUSED("            common_tls_context: {validation_context: {match_subject_alt_names: "
		"[{exact: a}]}}",
		NULL, ".common_tls_context.validation_context", "no trusted CA");
	/* secrets: static, of the right kind, no sds_config */
	REFUSED("            common_tls_context: {validation_context_sds_secret_config: {name: "
		"nope}}",
		NULL, ".common_tls_context.validation_context_sds_secret_config.name",
		"secret 'nope' is not in static_resources.secrets");
	REFUSED("            common_tls_context: {validation_context_sds_secret_config: {name: "
		"client}}",
		NULL, ".common_tls_context.validation_context_sds_secret_config.name",
		"secret 'client' (static_resources.secrets[1]) has no validation_context");
	REFUSED(CA_REF ", tls_certificate_sds_secret_configs: [{name: ca}]}", NULL,
		".common_tls_context.tls_certificate_sds_secret_configs[0].name",
		"secret 'ca' (static_resources.secrets[0]) has no tls_certificate");
	REFUSED(CA_REF ", tls_certificate_sds_secret_configs: [{name: client, sds_config: {ads: "
		       "{}}}]}",
		NULL, ".common_tls_context.tls_certificate_sds_secret_configs[0].sds_config",
		"the xDS cluster's own secrets cannot come over the ADS stream that they "
		"protect: remove sds_config and define secret 'client' in "
		"static_resources.secrets");
	REFUSED(CA_REF ", tls_certificate_sds_secret_configs: [{name: client}, {name: client}]}",
		NULL, ".common_tls_context.tls_certificate_sds_secret_configs",
		"the xDS channel presents one client certificate");
	REFUSED("            common_tls_context: {combined_validation_context: "
		"{default_validation_context: {}}}",
		NULL,
		".common_tls_context.combined_validation_context.validation_context_sds_"
		"secret_config",
		"missing");
	/* fields gRPC cannot honour */
	REFUSED(CA_REF "}\n            max_session_keys: 4", NULL, ".max_session_keys",
		"not supported by Arion");
	REFUSED(CA_REF "}\n            allow_renegotiation: true", NULL, ".allow_renegotiation",
		"not supported by Arion");
	REFUSED(CA_REF ", tls_params: {cipher_suites: [AES128]}}", NULL,
		".common_tls_context.tls_params.cipher_suites", "not supported by Arion");
	REFUSED(CA_REF ", tls_params: {tls_minimum_protocol_version: TLSv1_1}}", NULL,
		".common_tls_context.tls_params.tls_minimum_protocol_version",
		"the xDS channel (gRPC) speaks TLS 1.2 and 1.3");
	REFUSED(CA_REF ", tls_params: {tls_maximum_protocol_version: TLSv1_2}}", NULL,
		".common_tls_context.tls_params.tls_maximum_protocol_version",
		"the xDS channel (gRPC) speaks TLS 1.2 and 1.3");
	REFUSED(CA_REF ", alpn_protocols: [h2, http/1.1]}", NULL,
		".common_tls_context.alpn_protocols[1]", "gRPC offers h2 and only h2");
	REFUSED("            common_tls_context:\n"
		"              combined_validation_context:\n"
		"                validation_context_sds_secret_config: {name: ca}\n"
		"                default_validation_context:\n"
		"                  match_subject_alt_names: [{safe_regex: {regex: a.*}}]",
		NULL,
		".common_tls_context.combined_validation_context.default_validation_context."
		"match_subject_alt_names[0].safe_regex",
		"not supported for the xDS channel's SAN check");
	REFUSED("            common_tls_context:\n"
		"              combined_validation_context:\n"
		"                validation_context_sds_secret_config: {name: ca}\n"
		"                default_validation_context: {allow_expired_certificate: true}",
		NULL,
		".common_tls_context.combined_validation_context.default_validation_context."
		"allow_expired_certificate",
		"not supported by Arion");
#undef REFUSED
	/* in the secrets themselves */
	assert_error(chan("10.0.0.1", CA_REF ", tls_certificate_sds_secret_configs: [{name: k}]}",
			  "      - name: k\n"
			  "        tls_certificate: {certificate_chain: {inline_string: x}, "
			  "private_key: {inline_string: y}, password: {inline_string: z}}\n",
			  NULL),
		     "envoy_bootstrap.static_resources.secrets[2].tls_certificate.password: not "
		     "supported by Arion");
	assert_error(chan("10.0.0.1",
			  "            common_tls_context: {validation_context_sds_secret_config: "
			  "{name: v}}",
			  "      - {name: v, validation_context: {trusted_ca: {inline_string: x}, "
			  "max_verify_depth: 3}}\n",
			  NULL),
		     "envoy_bootstrap.static_resources.secrets[2].validation_context.max_verify_"
		     "depth: not supported by Arion");
	assert_error(
	    chan("10.0.0.1",
		 "            common_tls_context: {validation_context_sds_secret_config: "
		 "{name: v}}",
		 "      - {name: v, validation_context: {match_subject_alt_names: [{exact: "
		 "a}]}}\n",
		 NULL),
	    "envoy_bootstrap.static_resources.secrets[2].validation_context: trusted_ca "
	    "is missing");
	/* other transport sockets */
	assert_error("envoy_bootstrap:\n"
		     "  node: {id: n1, cluster: c1}\n"
		     "  dynamic_resources:\n"
		     "    ads_config: {grpc_services: [{envoy_grpc: {cluster_name: x}}]}\n"
		     "  static_resources:\n"
		     "    clusters:\n"
		     "      - name: x\n"
		     "        http2_protocol_options: {}\n"
		     "        load_assignment: {cluster_name: x, endpoints: [{lb_endpoints: "
		     "[{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: "
		     "1}}}}]}]}\n"
		     "        transport_socket_matches: [{name: m, transport_socket: {name: t}}]\n",
		     "envoy_bootstrap.static_resources.clusters[0].transport_socket_matches: not "
		     "supported on the xDS cluster");
}

/*
 * Plaintext to a control plane that is not on loopback is refused at load
 * (so in --mode validate too) unless xds.allow_plaintext says so.
 */
static void test_xds_plaintext_to_remote_refused_unless_allowed(void **state)
{
	(void)state;
	assert_error(
	    chan("198.18.0.1", NULL, NULL, NULL),
	    "t.yaml:11:9: envoy_bootstrap.static_resources.clusters[0]: xDS cluster "
	    "'xds_cluster' would reach its control plane at 198.18.0.1:18000 in plaintext, "
	    "and that address is not loopback");
	assert_non_null(strstr(arn_sb_cstr(&tb.err), "set `xds: {allow_plaintext: true}`"));
	assert_non_null(strstr(arn_sb_cstr(&tb.err), "envoy.transport_sockets.tls"));
	assert_error(chan("2001:db8::1", NULL, NULL, NULL),
		     "would reach its control plane at 2001:db8::1:18000 in plaintext");
	/* a raw_buffer socket is plaintext said explicitly: the same rule */
	const char *raw = "        transport_socket: {name: envoy.transport_sockets.raw_buffer}\n";
	assert_error(chan("10.0.0.1", NULL, NULL, raw), "would reach its control plane at "
							"10.0.0.1:18000 in plaintext");
	/* loopback needs nothing */
	assert_loads(chan("127.0.0.1", NULL, NULL, NULL));
	summary_has("[127.0.0.1:18000] plaintext\n");
	assert_loads(chan("127.3.4.5", NULL, NULL, NULL));
	assert_loads(chan("::1", NULL, NULL, NULL));
	assert_loads(chan("::ffff:127.0.0.1", NULL, NULL, NULL));
	assert_loads(chan("127.0.0.1", NULL, NULL, raw));
	/* the operator's explicit yes, with a warning that says what it costs */
	assert_loads(chan("198.18.0.1", NULL, NULL, "xds: {allow_plaintext: true}\n"));
	assert_true(tb.bs->xds.allow_plaintext);
	assert_non_null(strstr(tb.bs->warnings.buf, "reaches 198.18.0.1:18000 in plaintext "
						    "(xds.allow_plaintext)"));
	assert_error(chan("198.18.0.1", NULL, NULL, "xds: {allow_plaintext: false}\n"),
		     "in plaintext, and that address is not loopback");
	/* the section itself */
	assert_error(chan("127.0.0.1", NULL, NULL, "xds: {allow_plaintext: yes}\n"),
		     "xds.allow_plaintext: expected true or false, got 'yes'");
	assert_error(chan("127.0.0.1", NULL, NULL, "xds: {allow_plain: true}\n"),
		     "xds.allow_plain: unknown key 'allow_plain' (allow_plaintext)");
	assert_error(chan("127.0.0.1", NULL, NULL, "xds: [1]\n"), "xds: expected a mapping");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_spec_example_loads_unchanged, teardown),
	    cmocka_unit_test_teardown(test_every_example_in_config_loads, teardown),
	    cmocka_unit_test_teardown(test_x7_service_node_and_cluster_override_file, teardown),
	    cmocka_unit_test_teardown(test_x7_ads_needs_node_id_and_cluster, teardown),
	    cmocka_unit_test_teardown(test_x7_ads_cluster_must_be_static_resource, teardown),
	    cmocka_unit_test_teardown(test_x8_google_grpc_refused, teardown),
	    cmocka_unit_test_teardown(test_x9_several_grpc_services_kept_in_order, teardown),
	    cmocka_unit_test_teardown(test_x7_xds_cluster_by_name, teardown),
	    cmocka_unit_test_teardown(test_x1_sotw_api_type_refused, teardown),
	    cmocka_unit_test_teardown(test_x10_lds_config_must_be_ads, teardown),
	    cmocka_unit_test_teardown(test_negative_durations_refused, teardown),
	    cmocka_unit_test_teardown(test_g9_xds_cluster_without_http2_warns, teardown),
	    cmocka_unit_test_teardown(test_yaml_error_line_and_column, teardown),
	    cmocka_unit_test_teardown(test_unknown_field_with_hint_and_position, teardown),
	    cmocka_unit_test_teardown(test_wrong_kinds_and_values, teardown),
	    cmocka_unit_test_teardown(test_runtime_connection_limits, teardown),
	    cmocka_unit_test_teardown(test_overload_manager_global_connections, teardown),
	    cmocka_unit_test_teardown(test_arn_af_packet_device, teardown),
	    cmocka_unit_test_teardown(test_oneof_both_set_refused, teardown),
	    cmocka_unit_test_teardown(test_duplicate_keys_refused, teardown),
	    cmocka_unit_test_teardown(test_json_names_accepted, teardown),
	    cmocka_unit_test_teardown(test_unknown_any_type, teardown),
	    cmocka_unit_test_teardown(test_unsupported_bootstrap_field_refused, teardown),
	    cmocka_unit_test_teardown(test_alias_cycle_and_bomb_end_in_errors, teardown),
	    cmocka_unit_test_teardown(test_file_level_errors, teardown),
	    cmocka_unit_test_teardown(test_dataplane_section, teardown),
	    cmocka_unit_test_teardown(test_serve_time_refusals_found_at_load, teardown),
	    cmocka_unit_test_teardown(test_summary_says_rcvbuf_autotuning, teardown),
	    cmocka_unit_test_teardown(test_summary_says_sndbuf_autotuning, teardown),
	    cmocka_unit_test_teardown(test_summary_says_reordering_window, teardown),
	    cmocka_unit_test_teardown(test_xds_channel_tls_accepted, teardown),
	    cmocka_unit_test_teardown(test_xds_channel_refusals_name_the_field, teardown),
	    cmocka_unit_test_teardown(test_xds_plaintext_to_remote_refused_unless_allowed,
				      teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
