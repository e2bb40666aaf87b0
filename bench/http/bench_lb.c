/*
 * The balancer's cost per pick (http_lb_pick), for a cluster of N hosts
 * in one priority, without the connection manager. Instructions are the
 * figure:
 *
 *   valgrind --tool=callgrind --toggle-collect=bench_round \
 *       --callgrind-out-file=/tmp/cg.lb build/bench/http/bench_lb rr 1000 10 hc 10000
 *
 * and divide the total by the picks (the last argument). Arguments: the
 * policy (rr, lr, random, ring, maglev), the hosts, the percentage of them
 * failed, what fails them and what the cluster has:
 *   plain  no health checks, no outlier detection: EDS says UNHEALTHY
 *   hc     active health checks failed them (hc_flags)
 *   od     outlier detection ejected them (until long after the run)
 * then the picks, and optionally "walk" or "heavy" (the first host's
 * weight is the host count, the others' 1) or "locality" (the hosts in 4
 * localities weighted 1 to 4, locality_weighted_lb_config: Envoy's EDF
 * picks the locality, then the policy). Each pick gets a new random
 * number and, for ring and maglev, a new request hash (the configuration's
 * default ring_hash_lb_config and maglev_lb_config); least request reads
 * 0 active requests for every host. The picks use a worker's candidate cache
 * (struct http_lb_cache) and the endpoints' resolved hosts as the router
 * does (a cluster without checks or outlier detection above
 * HTTP_LB_CACHE_MIN endpoints, and always for ring and maglev, whose
 * tables it holds); "walk" measures the walk without them. The first
 * pick builds the list and the table: it is in the total.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_int.h"
#include "http_od.h"

static uint32_t no_active(void *ctx, const struct arn_cfg_endpoint *ep)
{
	(void)ctx;
	(void)ep;
	return 0;
}

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The measured part: @p picks picks. @return a checksum of the picks. */
uint64_t __attribute__((noinline)) bench_round(struct http_lb_in *in, unsigned picks);
uint64_t bench_round(struct http_lb_in *in, unsigned picks)
{
	uint64_t s = 0x9e3779b97f4a7c15ull, sum = 0;
	struct http_lb_out out;
	for (unsigned i = 0; i < picks; i++) {
		in->rand = next(&s);
		in->hash = in->rand;
		if (http_lb_pick(in, &out) == 0)
			sum += out.ep->addr;
	}
	return sum;
}

int main(int argc, char **argv)
{
	bool walk = argc == 7 && !strcmp(argv[6], "walk");
	bool heavy = argc == 7 && !strcmp(argv[6], "heavy");
	bool lw = argc == 7 && !strcmp(argv[6], "locality");
	if (argc != 6 && !walk && !heavy && !lw) {
		fprintf(stderr,
			"usage: %s rr|lr|random|ring|maglev HOSTS FAILED_PERCENT plain|hc|od PICKS "
			"[walk|heavy|locality]\n",
			argv[0]);
		return 2;
	}
	const char *pol = argv[1], *mode = argv[4];
	size_t n = strtoul(argv[2], NULL, 10);
	unsigned failed_pct = (unsigned)strtoul(argv[3], NULL, 10);
	unsigned picks = (unsigned)strtoul(argv[5], NULL, 10);
	if (n == 0 || failed_pct > 100)
		return 2;
	struct arn_cfg_cluster cl;
	memset(&cl, 0, sizeof(cl));
	cl.healthy_panic_threshold = 5000;
	cl.ring_min_size = 1024; /* the configuration's defaults */
	cl.ring_max_size = 8 * 1024 * 1024;
	cl.maglev_table_size = 65537;
	if (!strcmp(pol, "rr"))
		cl.lb = ARN_CFG_LB_ROUND_ROBIN;
	else if (!strcmp(pol, "lr"))
		cl.lb = ARN_CFG_LB_LEAST_REQUEST;
	else if (!strcmp(pol, "random"))
		cl.lb = ARN_CFG_LB_RANDOM;
	else if (!strcmp(pol, "ring"))
		cl.lb = ARN_CFG_LB_RING_HASH;
	else if (!strcmp(pol, "maglev"))
		cl.lb = ARN_CFG_LB_MAGLEV;
	else
		return 2;
	struct arn_cfg_endpoint *ep = calloc(n, sizeof(*ep));
	struct http_host *h = calloc(n, sizeof(*h));
	struct http_host **hosts = calloc(n, sizeof(*hosts));
	static struct http_cluster_rt crt;
	if (!ep || !h || !hosts)
		return 1;
	/* failed hosts spread evenly: every (100 / failed_pct)th */
	size_t n_failed = n * failed_pct / 100;
	for (size_t i = 0; i < n; i++) {
		ep[i].addr = 0x0a000000 + (uint32_t)i;
		ep[i].port = 8080;
		ep[i].weight = heavy && i == 0 ? (uint32_t)n : 1;
		ep[i].health = ARN_CFG_HEALTH_HEALTHY;
		h[i].addr = ep[i].addr;
		h[i].port = ep[i].port;
		h[i].crt = &crt;
		hosts[i] = &h[i];
		bool failed = n_failed && i * n_failed / n != (i + 1) * n_failed / n;
		if (!failed)
			continue;
		if (!strcmp(mode, "plain"))
			ep[i].health = ARN_CFG_HEALTH_UNHEALTHY;
		else if (!strcmp(mode, "hc"))
			h[i].hc_flags = HTTP_HOST_FAILED_ACTIVE_HC;
		else {
			h[i].od_ejected = HTTP_HOST_FAILED_OUTLIER;
			h[i].od_until_ms = UINT64_MAX;
			crt.od_ejected++;
		}
	}
	struct arn_cfg_locality loc[4] = {{.endpoints = ep, .n_endpoints = n}};
	struct arn_cfg_priority pr = {.localities = loc, .n_localities = 1, .n_endpoints = n};
	struct arn_cfg_endpoints eps = {
	    .priorities = &pr, .n_priorities = 1, .n_endpoints = n, .overprovisioning_factor = 140};
	if (lw) {
		if (n < 4)
			return 2;
		static const char *const reg[4] = {"r0", "r1", "r2", "r3"};
		for (size_t l = 0; l < 4; l++)
			loc[l] =
			    (struct arn_cfg_locality){.region = reg[l],
						      .weight = (uint32_t)l + 1,
						      .endpoints = ep + l * n / 4,
						      .n_endpoints = (l + 1) * n / 4 - l * n / 4};
		pr.n_localities = 4;
		cl.locality_weighted = true;
	}
	uint64_t rr = 0;
	struct http_lb_in in = {
	    .cluster = &cl, .eps = &eps, .rr = &rr, .has_hash = true, .active = no_active};
	if (!strcmp(mode, "hc")) {
		cl.n_health_checks = 1;
		in.hosts = hosts;
		in.n_hosts = n;
	} else if (!strcmp(mode, "od")) {
		cl.outlier.present = true;
		in.hosts = hosts;
		in.n_hosts = n;
		in.od_crt = &crt;
		in.now_ms = 1000;
	} else if (strcmp(mode, "plain")) {
		return 2;
	}
	struct http_lb_cache cache = {.cap = n};
	cache.cand = calloc(n, sizeof(*cache.cand));
	cache.cum = calloc(n, sizeof(*cache.cum));
	if (!cache.cand || !cache.cum)
		return 1;
	struct http_lb_loc lo[4];
	uint32_t heap[4];
	uint64_t tmp[8];
	if (lw) {
		cache.loc_cap = 4;
		cache.loc = lo;
		cache.loc_heap = heap;
		cache.loc_tmp = tmp;
	}
	bool clipped;
	size_t tab = http_lb_table_entries(&cl, &eps, &clipped);
	if (cl.lb == ARN_CFG_LB_RING_HASH) {
		cache.ring = calloc(tab, sizeof(*cache.ring));
		cache.tab_cap = tab;
	} else if (cl.lb == ARN_CFG_LB_MAGLEV) {
		cache.mag = calloc(tab, sizeof(*cache.mag));
		cache.scratch = calloc(3 * n, sizeof(*cache.scratch));
		cache.tab_cap = tab;
	}
	bool hashed = cl.lb == ARN_CFG_LB_RING_HASH || cl.lb == ARN_CFG_LB_MAGLEV;
	if (!walk && (in.hosts || hashed || lw || n > HTTP_LB_CACHE_MIN)) {
		in.cache = &cache;
		in.ep_hosts = hosts; /* the endpoints are in the hosts' order */
		in.n_ep_hosts = n;
	}
	uint64_t sum = bench_round(&in, picks);
	printf("%s %zu hosts, %zu failed (%s): %u picks, checksum %llx\n", pol, n, n_failed, mode,
	       picks, (unsigned long long)sum);
	free(cache.cand);
	free(cache.cum);
	free(cache.ring);
	free(cache.mag);
	free(cache.scratch);
	free(ep);
	free(h);
	free(hosts);
	return 0;
}
