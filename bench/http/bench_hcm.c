/*
 * The connection manager's cost per proxied keep-alive request, without
 * namespaces: lib/http and lib/tcp over the fake lib/net of
 * tests/tcp/tcp_fake_net.h (tests/http/hcm_harness.h plays the client and
 * the upstream). One client connection sends N requests one after the
 * other, each answered by the upstream before the next, as wrk's one
 * connection does in bench/cost/run. Instructions are the figure:
 *
 *   valgrind --tool=callgrind --toggle-collect=bench_round \
 *       --callgrind-out-file=/tmp/cg.hcm build/bench/http/bench_hcm 1000
 *   callgrind_annotate --inclusive=no /tmp/cg.hcm | head -40
 *
 * and divide by N. `bench_hcm -r N` does the same with
 * generate_request_id: true, Envoy's default (every request gets an
 * x-request-id generated; the cost run's configuration, and the plain
 * bench_hcm, have it false). `bench_hcm -d M` downloads one body of M MiB
 * instead (--toggle-collect=bench_download, divide by M: instructions per
 * MiB).
 * The peers' own work (the harness's TCP) is in the
 * total; per function the lib/http and lib/tcp lines are the stack's. No
 * lib/net, no DPDK PMD, no worker loop: bench/cost/run measures those.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One listener of proxies.sh's configuration: the connection manager
 * with one route to cluster web, and the router. */
#define BENCH_LISTENER(name, port, rid)                                                            \
	"      - name: " name "\n"                                                                 \
	"        address: {socket_address: {address: 0.0.0.0, port_value: " port "}}\n"            \
	"        filter_chains:\n"                                                                 \
	"          - filters:\n"                                                                   \
	"              - name: envoy.filters.network.http_connection_manager\n"                    \
	"                typed_config:\n"                                                          \
	"                  \"@type\": "                                                            \
	"type.googleapis.com/"                                                                     \
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager\n"      \
	"                  stat_prefix: bench\n"                                                   \
	"                  generate_request_id: " rid "\n"                                         \
	"                  route_config:\n"                                                        \
	"                    virtual_hosts: [{name: all, domains: [\"*\"], routes: [{match: "      \
	"{prefix: "                                                                                \
	"\"/\"}, route: {cluster: web}}]}]\n"                                                      \
	"                  http_filters:\n"                                                        \
	"                    - name: envoy.filters.http.router\n"                                  \
	"                      typed_config: {\"@type\": "                                         \
	"type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}\n"

/* bench/proxy/proxies.sh's configuration for Arion (one route, one
 * cluster, no access log, no request ids), under the names the harness
 * checks for: listeners main and strict, clusters web, two and empty.
 * strict (port 81) is the same with generate_request_id: true (-r). */
static const char bench_yaml[] =
    "envoy_bootstrap:\n"
    "  static_resources:\n"
    "    listeners:\n" BENCH_LISTENER("main", "80", "false")
	BENCH_LISTENER("strict", "81", "true") "    clusters:\n"
				       "      - name: web\n"
				       "        type: STATIC\n"
				       "        connect_timeout: 1s\n"
				       "        load_assignment:\n"
				       "          cluster_name: web\n"
				       "          endpoints: [{lb_endpoints: [{endpoint: {address: "
				       "{socket_address: {address: "
				       "198.18.0.200, port_value: 8080}}}}]}]\n"
				       "      - name: two\n"
				       "        type: STATIC\n"
				       "        connect_timeout: 1s\n"
				       "        load_assignment:\n"
				       "          cluster_name: two\n"
				       "          endpoints: [{lb_endpoints: [{endpoint: {address: "
				       "{socket_address: {address: "
				       "198.18.0.201, port_value: 8080}}}}]}]\n"
				       "      - name: empty\n"
				       "        type: STATIC\n"
				       "        connect_timeout: 1s\n"
				       "        load_assignment:\n"
				       "          cluster_name: empty\n";
#define HH_CONFIG_YAML bench_yaml
#include "hcm_harness.h"

static const char req[] = "GET /small HTTP/1.1\r\nHost: 198.18.0.2\r\n\r\n";
static const char resp[] = "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\n"
			   "Date: Wed, 02 Dec 2026 09:00:00 GMT\r\n"
			   "Content-Type: application/octet-stream\r\nContent-Length: 16\r\n"
			   "Connection: keep-alive\r\n\r\n0123456789abcdef";

/* One request and its response. */
static void __attribute__((noinline)) bench_round(struct peer *c, struct peer *u)
{
	hh_send(c, req, sizeof(req) - 1, 0);
	hh_settle();
	hh_send(u, resp, sizeof(resp) - 1, 0);
	hh_settle();
}

/* One GET of a body of @p mib MiB with a Content-Length, sent by the
 * upstream 64 KiB at a time, as a bulk server does (bench_hcm -d N). */
static const char dreq[] = "GET /big HTTP/1.1\r\nHost: 198.18.0.2\r\n\r\n";

static void __attribute__((noinline)) bench_download(struct peer *c, struct peer *u, long mib)
{
	char head[160];
	int hl = snprintf(head, sizeof(head),
			  "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\n"
			  "Content-Type: application/octet-stream\r\nContent-Length: %ld\r\n\r\n",
			  mib << 20);
	hh_send(c, dreq, sizeof(dreq) - 1, 0);
	hh_settle();
	hh_send(u, head, (uint32_t)hl, 0);
	hh_settle();
	for (long k = 0; k < mib * 16; k++) {
		hh_budget = HH_SEND_BUDGET;
		/* what the stack has not acknowledged yet stays in the peer's buffer */
		while (u->len > PEER_BUF - 64 * 1024)
			hh_advance(1);
		hh_send(u, NULL, 64 * 1024, 0);
		hh_settle();
	}
	while (u->len)
		hh_advance(1);
}

/* The listener up and one request answered: the first request opens
 * the upstream connection that the measured ones reuse. @return that
 * connection's peer, or NULL (said on stderr). */
static struct peer *first_exchange(uint16_t port)
{
	hh_init(false);
	hh_begin(1);
	hh_open(0, port);
	hh_settle();
	hh_send(hh_client(0), req, sizeof(req) - 1, 0);
	hh_settle();
	struct peer *u = hh_upstream(0);
	if (!u) {
		fprintf(stderr, "bench_hcm: no upstream connection\n");
		return NULL;
	}
	hh_send(u, resp, sizeof(resp) - 1, 0);
	hh_settle();
	return u;
}

static int download(long mib)
{
	struct peer *u = first_exchange(80);
	if (!u)
		return 1;
	struct peer *c = hh_client(0);
	uint32_t before = c->rx;
	bench_download(c, u, mib);
	uint32_t got = c->rx - before;
	hh_end();
	if (got < (uint32_t)(mib << 20)) {
		fprintf(stderr, "bench_hcm: the client received %u bytes of %ld MiB\n", got, mib);
		return 1;
	}
	printf("bench_hcm: %ld MiB downloaded (%u bytes with the head)\n", mib, got);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 2 && strcmp(argv[1], "-d") == 0) {
		long mib = atol(argv[2]);
		if (mib < 1 || mib > 64) {
			fprintf(stderr, "bench_hcm: -d 1 to 64 MiB\n");
			return 2;
		}
		return download(mib);
	}
	bool rid = argc > 1 && strcmp(argv[1], "-r") == 0;
	if (rid) {
		argc--;
		argv++;
	}
	long n = argc > 1 ? atol(argv[1]) : 1000;
	if (n < 1 || n > 2000) {
		fprintf(stderr, "bench_hcm: 1 to 2000 requests (the harness's send budget)\n");
		return 2;
	}
	struct peer *u = first_exchange(rid ? 81 : 80);
	if (!u)
		return 1;
	for (long i = 0; i < n; i++)
		bench_round(hh_client(0), u);
	if (hh_upstream(1)) {
		fprintf(stderr, "bench_hcm: the upstream connection was not reused\n");
		return 1;
	}
	/* one more round, outside bench_round: the upstream gets an
	 * x-request-id with -r and none without (the configuration measured
	 * is the one asked for) */
	static uint8_t seen[1024];
	u->cap = seen;
	u->cap_len = 0;
	u->cap_max = sizeof(seen);
	hh_send(hh_client(0), req, sizeof(req) - 1, 0);
	hh_settle();
	u->cap = NULL;
	bool has_rid = memmem(seen, u->cap_len, "\r\nx-request-id: ", 16) != NULL;
	if (has_rid != rid) {
		fprintf(stderr, "bench_hcm: the upstream's request %s an x-request-id\n",
			has_rid ? "has" : "lacks");
		return 1;
	}
	hh_send(u, resp, sizeof(resp) - 1, 0);
	hh_settle();
	hh_end();
	printf("bench_hcm: %ld requests%s\n", n, rid ? " (generate_request_id)" : "");
	return 0;
}
