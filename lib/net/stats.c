/*
 * Counters for the control lcore: sums over workers (per port) and over
 * ports (per worker), read without locks while the workers write them.
 * Each counter has one writer; a 64-bit aligned load sees either the old or
 * the new value, so sums are exact per counter, not a snapshot of the set.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>

#include "arn_log.h"
#include "arn_stats.h"
#include <rte_cycles.h>

#include "net_int.h"

static const char *const pctr_name[ARN_NET_PCTR_COUNT] = {
#define ARN_NET_PCTR(name, help) #name,
#include "arn_net_counters.def"
};
static const char *const pctr_help[ARN_NET_PCTR_COUNT] = {
#define ARN_NET_PCTR(name, help) help,
#include "arn_net_counters.def"
};
static const char *const wctr_name[ARN_NET_WCTR_COUNT] = {
#define ARN_NET_WCTR(name, help) #name,
#include "arn_net_counters.def"
};
static const char *const wctr_help[ARN_NET_WCTR_COUNT] = {
#define ARN_NET_WCTR(name, help) help,
#include "arn_net_counters.def"
};

static inline uint64_t rd(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

uint64_t arn_net_port_counter(const struct arn_net *net, unsigned port, enum arn_net_pctr c)
{
	if (net == NULL || port >= net->n_ports || (unsigned)c >= ARN_NET_PCTR_COUNT)
		return 0;
	uint64_t sum = 0;
	for (unsigned w = 0; w < net->n_workers; w++)
		sum += rd(&net->lc[w]->port[port].ctr[c]);
	return sum;
}

uint64_t arn_net_worker_counter(const struct arn_net *net, unsigned worker, enum arn_net_wctr c)
{
	if (net == NULL || worker >= net->n_workers || (unsigned)c >= ARN_NET_WCTR_COUNT)
		return 0;
	return rd(&net->lc[worker]->ctr[c]);
}

int net_port_nic_stats(struct arn_net *net, unsigned p, struct net_nic_stats *out)
{
	struct rte_eth_stats es;
	if (net->port[p].vpkt) {
		/* the sockets' drops are all the kernel counts for them */
		memset(out, 0, sizeof(*out));
		out->rx_missed = net_port_afp_drops(&net->port[p]);
		return 0;
	}
	int rc = rte_eth_stats_get(net->port[p].port_id, &es);
	if (rc != 0)
		return rc;
	/* A PMD that counts its own misses (NICs) has no af_packet sockets,
	 * and net_af_packet counts none itself: the sum counts each drop once. */
	out->rx_missed = es.imissed + net_port_afp_drops(&net->port[p]);
	out->rx_errors = es.ierrors;
	out->rx_nombuf = es.rx_nombuf;
	out->tx_errors = es.oerrors;
	return 0;
}

int arn_net_stats_foreach(arn_net_stat_cb cb, void *ctx)
{
	struct arn_net *net = arn_net_current();
	if (net == NULL)
		return -ENODEV;
	struct arn_net_stat s;
	s.scope = ARN_NET_SCOPE_PORT;
	for (unsigned p = 0; p < net->n_ports; p++) {
		s.owner = net->port[p].name;
		s.index = p;
		for (unsigned c = 0; c < ARN_NET_PCTR_COUNT; c++) {
			s.name = pctr_name[c];
			s.help = pctr_help[c];
			s.value = arn_net_port_counter(net, p, (enum arn_net_pctr)c);
			cb(ctx, &s);
		}
		/* What the device itself counted: drops before any worker saw them. */
		struct net_nic_stats ns;
		if (net_port_nic_stats(net, p, &ns) == 0) {
			static const char *const nic[][2] = {
			    {"nic_rx_missed", "frames the device dropped: RX queue full"},
			    {"nic_rx_errors", "erroneous frames the device dropped"},
			    {"nic_rx_nombuf", "frames the device dropped: no mbuf"},
			    {"nic_tx_errors", "frames the device failed to send"},
			};
			uint64_t v[] = {ns.rx_missed, ns.rx_errors, ns.rx_nombuf, ns.tx_errors};
			for (unsigned i = 0; i < RTE_DIM(v); i++) {
				s.name = nic[i][0];
				s.help = nic[i][1];
				s.value = v[i];
				cb(ctx, &s);
			}
		}
	}
	s.scope = ARN_NET_SCOPE_WORKER;
	for (unsigned w = 0; w < net->n_workers; w++) {
		s.owner = net->worker_name[w];
		s.index = w;
		for (unsigned c = 0; c < ARN_NET_WCTR_COUNT; c++) {
			s.name = wctr_name[c];
			s.help = wctr_help[c];
			s.value = rd(&net->lc[w]->ctr[c]);
			cb(ctx, &s);
		}
		for (unsigned c = 0; c < ARN_NET_PCTR_COUNT; c++) {
			uint64_t sum = 0;
			for (unsigned p = 0; p < net->n_ports; p++)
				sum += rd(&net->lc[w]->port[p].ctr[c]);
			s.name = pctr_name[c];
			s.help = pctr_help[c];
			s.value = sum;
			cb(ctx, &s);
		}
	}
	return 0;
}

unsigned arn_net_n_ports(const struct arn_net *net)
{
	return net ? net->n_ports : 0;
}

unsigned arn_net_n_workers(const struct arn_net *net)
{
	return net ? net->n_workers : 0;
}

const char *arn_net_port_name(const struct arn_net *net, unsigned port)
{
	return net && port < net->n_ports ? net->port[port].name : NULL;
}

struct arn_lcore *arn_net_lcore(const struct arn_net *net, unsigned worker)
{
	return net && worker < net->n_workers ? net->lc[worker] : NULL;
}

/* ---- lib/admin's /stats ------------------------------------------------------------------- */

/* Pulled at read time: dpdk.port.<name>.<counter> and
 * dpdk.worker.<index>.<counter> (Prometheus: arion_dpdk_port_rx_packets_total
 * {arion_port="wan"}, arion_dpdk_worker_loop_busy_cycles_total{envoy_worker_id="0"}). */
struct admin_pull_ctx {
	struct arn_stats_emitter *e;
	char idx[16];
};

static void admin_emit(void *ctx, const struct arn_net_stat *s)
{
	struct admin_pull_ctx *c = ctx;
	if (s->scope == ARN_NET_SCOPE_PORT) {
		arn_stats_emit(c->e, ARN_STAT_COUNTER, "dpdk.port", "arion_port", s->owner, s->name,
			       (int64_t)s->value);
	} else {
		snprintf(c->idx, sizeof(c->idx), "%u", s->index);
		arn_stats_emit(c->e, ARN_STAT_COUNTER, "dpdk.worker", ARN_STATS_TAG_WORKER, c->idx,
			       s->name, (int64_t)s->value);
	}
}

struct nh_sum {
	struct {
		uint32_t nh;
		uint64_t waiting, drops;
	} * v;
	unsigned n, cap;
};

static void nh_add(void *ctx, uint32_t nh, unsigned waiting, uint32_t drops)
{
	struct nh_sum *s = ctx;
	for (unsigned i = 0; i < s->n; i++)
		if (s->v[i].nh == nh) {
			s->v[i].waiting += waiting;
			s->v[i].drops += drops;
			return;
		}
	if (s->n == s->cap) {
		unsigned cap = s->cap ? s->cap * 2 : 16;
		void *v = realloc(s->v, cap * sizeof(*s->v));
		if (v == NULL)
			return; /* this read shows fewer next hops */
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n].nh = nh;
	s->v[s->n].waiting = waiting;
	s->v[s->n].drops = drops;
	s->n++;
}

static void admin_pull(struct arn_stats_emitter *e, void *arg)
{
	const struct arn_net *net = arg;
	struct admin_pull_ctx c = {.e = e};
	arn_net_stats_foreach(admin_emit, &c);
	/* The mbuf pools: what is held (TCP queues, frames in flight, the
	 * workers' caches) against the size. Read without stopping the
	 * workers, so in_use is approximate by up to the per-lcore caches'
	 * movement during the read; it is a gauge for back-pressure and
	 * leaks, not an exact count. */
	for (unsigned k = 0; k < RTE_DIM(net->pool); k++) {
		const struct rte_mempool *mp = net->pool[k];
		if (mp == NULL)
			continue;
		arn_stats_emit(e, ARN_STAT_GAUGE, "dpdk.mempool", "arion_mempool", mp->name, "size",
			       (int64_t)mp->size);
		arn_stats_emit(e, ARN_STAT_GAUGE, "dpdk.mempool", "arion_mempool", mp->name,
			       "in_use", (int64_t)rte_mempool_in_use_count(mp));
	}
	/* Each worker's ARP cache: entries, and packets waiting for an answer
	 * (bounded per next hop and per worker; drops count per port). Read
	 * while the worker writes them: each is one aligned word. */
	for (unsigned w = 0; w < net->n_workers; w++) {
		char idx[16];
		snprintf(idx, sizeof(idx), "%u", w);
		arn_stats_emit(e, ARN_STAT_GAUGE, "dpdk.worker", ARN_STATS_TAG_WORKER, idx,
			       "arp_entries", (int64_t)net_arp_n_entries(net->lc[w]));
		arn_stats_emit(e, ARN_STAT_GAUGE, "dpdk.worker", ARN_STATS_TAG_WORKER, idx,
			       "arp_waiting", (int64_t)net_arp_n_waiting(net->lc[w]));
	}
	/* Per next hop (issue 22): packets waiting for its ARP answer and
	 * packets dropped from its full queue, summed over workers; only next
	 * hops that have either (resolved ones with no drops would fill
	 * /stats with nothing to say). */
	struct nh_sum sum = {0};
	for (unsigned w = 0; w < net->n_workers; w++)
		net_arp_foreach_queue(net->lc[w], nh_add, &sum);
	for (unsigned i = 0; i < sum.n; i++) {
		char ip[16];
		uint32_t a = sum.v[i].nh;
		snprintf(ip, sizeof(ip), "%u.%u.%u.%u", a >> 24, (a >> 16) & 255, (a >> 8) & 255,
			 a & 255);
		arn_stats_emit(e, ARN_STAT_GAUGE, "dpdk.arp", "arion_next_hop", ip, "queue_depth",
			       (int64_t)sum.v[i].waiting);
		arn_stats_emit(e, ARN_STAT_COUNTER, "dpdk.arp", "arion_next_hop", ip, "queue_drops",
			       (int64_t)sum.v[i].drops);
	}
	free(sum.v);
	/* The TSC rate turns loop_busy_cycles into CPU time (bench/proxy/run,
	 * DESIGN.md "What fast means"). */
	arn_stats_emit(e, ARN_STAT_GAUGE, "dpdk", NULL, NULL, "tsc_hz", (int64_t)rte_get_tsc_hz());
}

int net_admin_register(struct arn_net *net)
{
	int rc = arn_stats_set_workers(net->n_workers);
	if (rc != 0) {
		ARN_ERR(NET, "cannot size the admin's statistics for %u workers: %s",
			net->n_workers, strerror(-rc));
		return rc;
	}
	rc = arn_stats_pull_register(admin_pull, net);
	if (rc != 0 && rc != -EEXIST) {
		ARN_ERR(NET, "cannot register the data plane's statistics: %s", strerror(-rc));
		return rc;
	}
	return 0;
}

void net_admin_unregister(struct arn_net *net)
{
	arn_stats_pull_unregister(admin_pull, net);
}
