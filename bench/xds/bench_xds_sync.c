/*
 * The control lcore's work for one changed cluster among N (issue 17
 * item 5), without namespaces, DPDK ports or a control plane: the
 * configuration store (lib/config) and lib/http's runtime snapshot
 * (http_rt_sync) over the fake lib/net of the unit tests. One listener
 * whose route table has N routes (route i to cluster c<i>), N STATIC
 * clusters of one endpoint each; then, R times, one cluster changes its
 * endpoint's port. bench_change() is one change: the store's conversion,
 * its publication (and the TLS table's prepare callback) and the
 * snapshot's sync, i.e. what the control lcore does before the ACK.
 * Instructions are the figure:
 *
 *   valgrind --tool=callgrind --toggle-collect=bench_change \
 *       --callgrind-out-file=/tmp/cg.xds build/bench/xds/bench_xds_sync 10000 5
 *   callgrind_annotate --inclusive=yes /tmp/cg.xds | head -40
 *
 * and divide by R. It prints how many clusters each sync walked and built.
 */
#include <stdio.h>
#include <stdlib.h>

static const char bench_yaml[] =
    "envoy_bootstrap:\n"
    "  static_resources:\n"
    "    clusters:\n"
    "      - name: web\n"
    "        type: STATIC\n"
    "        load_assignment:\n"
    "          cluster_name: web\n"
    "          endpoints: [{lb_endpoints: [{endpoint: {address: "
    "{socket_address: {address: 198.18.0.200, port_value: 8080}}}}]}]\n"
    "      - name: two\n"
    "        type: STATIC\n"
    "      - name: empty\n"
    "        type: STATIC\n";
#define HH_CONFIG_YAML bench_yaml
#include "hcm_harness.h"

/* Cluster c<i>'s endpoint (198.18.x.y:port) as a Cluster message. */
static void cluster_in(struct arn_config_resource_in *in, char *name, size_t cap, unsigned i,
		       unsigned port, const char *version, upb_Arena *a)
{
	const upb_MessageDef *md = arn_proto_msgdef("envoy.config.cluster.v3.Cluster");
	char j[512];
	snprintf(name, cap, "c%u", i);
	snprintf(j, sizeof(j),
		 "{\"name\":\"%s\",\"type\":\"STATIC\",\"load_assignment\":{\"cluster_name\":"
		 "\"%s\",\"endpoints\":[{\"lb_endpoints\":[{\"endpoint\":{\"address\":{"
		 "\"socket_address\":{\"address\":\"198.18.%u.%u\",\"port_value\":%u}}}}]}]}}",
		 name, name, i / 250, i % 250 + 1, port);
	struct arn_sb err = ARN_SB_INIT;
	upb_Message *m = arn_proto_from_json(j, strlen(j), md, a, &err);
	if (!m) {
		fprintf(stderr, "bench_xds_sync: %s\n", arn_sb_cstr(&err));
		exit(1);
	}
	arn_sb_free(&err);
	in->name = name;
	in->version = version;
	in->bytes = arn_proto_encode(m, md, a, &in->len);
}

static void apply_in(const char *type, struct arn_config_resource_in *in, size_t n)
{
	struct arn_config_result res = {0};
	if (arn_config_apply(store, type, in, n, NULL, 0, 0, &res) != 0 || !res.accepted ||
	    res.n_errors) {
		fprintf(stderr, "bench_xds_sync: refused: %s\n",
			res.n_errors ? res.errors[0].message : "?");
		exit(1);
	}
	arn_config_result_free(&res);
}

/* One listener, its route table of @p n routes: /r<i> to c<i>. */
static void apply_listener(unsigned n)
{
	size_t cap = 256 + (size_t)n * 96;
	char *j = malloc(cap);
	if (!j)
		exit(1);
	size_t o = (size_t)snprintf(
	    j, cap,
	    "{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
	    "\"port_value\":80}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","
	    "\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.filters.network."
	    "http_connection_manager.v3.HttpConnectionManager\",\"stat_prefix\":\"in\","
	    "\"route_config\":{\"name\":\"r\",\"virtual_hosts\":[{\"name\":\"vh\",\"domains\":"
	    "[\"*\"],\"routes\":[");
	for (unsigned i = 0; i < n; i++)
		o += (size_t)snprintf(j + o, cap - o,
				      "%s{\"match\":{\"prefix\":\"/r%u\"},\"route\":{\"cluster\":"
				      "\"c%u\"}}",
				      i ? "," : "", i, i);
	snprintf(j + o, cap - o,
		 "]}]},\"http_filters\":[{\"name\":\"envoy.filters.http.router\",\"typed_config\":"
		 "{\"@type\":\"type.googleapis.com/envoy.extensions.filters.http.router.v3."
		 "Router\"}}]}}]}]}");
	upb_Arena *a = upb_Arena_New();
	const upb_MessageDef *md = arn_proto_msgdef("envoy.config.listener.v3.Listener");
	struct arn_sb err = ARN_SB_INIT;
	upb_Message *m = arn_proto_from_json(j, strlen(j), md, a, &err);
	if (!m) {
		fprintf(stderr, "bench_xds_sync: %s\n", arn_sb_cstr(&err));
		exit(1);
	}
	arn_sb_free(&err);
	struct arn_config_resource_in in = {"l", "1", NULL, 0};
	in.bytes = arn_proto_encode(m, md, a, &in.len);
	apply_in(ARN_TYPE_URL_LISTENER, &in, 1);
	upb_Arena_Free(a);
	free(j);
}

/* One change: cluster c<i> to port @p port, applied and synced. */
static void __attribute__((noinline)) bench_change(struct arn_config_resource_in *in)
{
	apply_in(ARN_TYPE_URL_CLUSTER, in, 1);
	arn_http_poll();
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10000;
	long rounds = argc > 2 ? atol(argv[2]) : 5;
	if (n < 2 || n > 60000 || rounds < 1 || rounds > 1000) {
		fprintf(stderr, "usage: bench_xds_sync [N 2..60000] [ROUNDS 1..1000]\n");
		return 2;
	}
	fake_eal_init();
	atexit(fake_eal_fini);
	arn_log_set_spec("off", NULL);
	store = arn_config_create(NULL);
	struct arn_http_options o = {.max_streams = 4};
	if (!store || arn_stats_set_workers(1) != 0 || arn_http_start(store, &o) != 0)
		return 1;
	upb_Arena *a = upb_Arena_New();
	struct arn_config_resource_in *in = calloc((size_t)n, sizeof(*in));
	char(*names)[16] = calloc((size_t)n, sizeof(*names));
	if (!in || !names)
		return 1;
	for (long i = 0; i < n; i++)
		cluster_in(&in[i], names[i], sizeof(names[i]), (unsigned)i, 80, "1", a);
	apply_in(ARN_TYPE_URL_CLUSTER, in, (size_t)n);
	apply_listener((unsigned)n);
	arn_http_poll();
	printf("bench_xds_sync: %ld clusters, %zu walked, %zu built\n", n,
	       http_rt_clusters_walked(), http_rt_clusters_built());
	for (long r = 0; r < rounds; r++) {
		char name[16], ver[16];
		snprintf(ver, sizeof(ver), "%ld", r + 2);
		struct arn_config_resource_in one;
		cluster_in(&one, name, sizeof(name), (unsigned)(n / 2 + r) % (unsigned)n,
			   81 + (unsigned)r, ver, a);
		bench_change(&one);
		printf("bench_xds_sync: change %ld: %zu walked, %zu built\n", r + 1,
		       http_rt_clusters_walked(), http_rt_clusters_built());
	}
	free(in);
	free(names);
	upb_Arena_Free(a);
	return 0;
}
