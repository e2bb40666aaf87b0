/*
 * The data plane as the control lcore sees it: workers mapped to lcores,
 * mbuf pools per NUMA socket, per-worker state and rings, ports, launch and
 * stop; the RCU hook for lib/config and the control ring.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mbuf_pool_ops.h>
#include <rte_mempool.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "arn_dataplane.h"
#include "arn_log.h"
#include "arn_sb.h"
#include "net_int.h"

static void sleep_us(unsigned us)
{
	struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000};
	nanosleep(&ts, NULL);
}

int arn_net_set_rcu(struct rte_rcu_qsbr *v)
{
	net_rcu_set_wanted(v);
	struct arn_net *net = arn_net_current();
	if (net == NULL || !net->launched)
		return 0;
	for (int waited = 0;; waited++) {
		unsigned w = 0;
		for (; w < net->n_workers; w++) {
			struct arn_lcore *lc = net->lc[w];
			if (__atomic_load_n(&lc->running, __ATOMIC_ACQUIRE) &&
			    __atomic_load_n(&lc->rcu_seen, __ATOMIC_ACQUIRE) != v)
				break;
		}
		if (w == net->n_workers)
			break;
		/* A running worker switches within an iteration (microseconds);
		 * five seconds only covers a machine so loaded that the worker's
		 * thread is not scheduled, as a test machine's can be. */
		if (waited == 50000) {
			ARN_ERR(NET, "a worker did not switch to the new RCU QSBR within 5 s");
			return -ETIMEDOUT;
		}
		sleep_us(100);
	}
	int rc = 0;
	for (unsigned w = 0; w < net->n_workers; w++) {
		struct arn_lcore *lc = net->lc[w];
		if (__atomic_load_n(&lc->running, __ATOMIC_ACQUIRE) &&
		    __atomic_load_n(&lc->rcu_failed, __ATOMIC_ACQUIRE)) {
			ARN_ERR(NET,
				"worker %u (lcore %u) could not register with the new RCU QSBR and "
				"does no work until it can",
				w, lc->lcore_id);
			rc = -EINVAL;
		}
	}
	return rc;
}

/* ---- workers and their state ----------------------------------------------------------- */

static int map_lcores(struct arn_net *net, const struct arn_dataplane *dp, unsigned *ids)
{
	unsigned main_lc = rte_get_main_lcore();
	char have[512] = "";
	unsigned id;
	RTE_LCORE_FOREACH (id) {
		snprintf(have + strlen(have), sizeof(have) - strlen(have), "%s%u%s",
			 *have ? "," : "", id, id == main_lc ? " (control)" : "");
	}
	if (dp->control_lcore >= 0 && (unsigned)dp->control_lcore != main_lc) {
		ARN_ERR(NET,
			"dataplane.control_lcore is %d but the EAL's main lcore is %u; drop "
			"--main-lcore from the EAL arguments or make them agree",
			dp->control_lcore, main_lc);
		return -EINVAL;
	}
	if (dp->n_workers > 0) {
		for (size_t i = 0; i < dp->n_workers; i++) {
			id = dp->worker_lcores[i];
			if (id >= RTE_MAX_LCORE || !rte_lcore_is_enabled(id) || id == main_lc) {
				ARN_ERR(NET,
					"dataplane.worker_lcores[%zu]: lcore %u is %s (EAL lcores: "
					"%s); list it in the EAL's -l/--lcores",
					i, id, id == main_lc ? "the control lcore" : "not enabled",
					have);
				return -EINVAL;
			}
			if (net->n_workers == ARN_NET_MAX_WORKERS)
				break;
			ids[net->n_workers++] = id;
		}
	} else {
		RTE_LCORE_FOREACH_WORKER (id) {
			if (net->n_workers == ARN_NET_MAX_WORKERS)
				break;
			ids[net->n_workers++] = id;
		}
	}
	if (net->n_workers == 0) {
		ARN_ERR(NET,
			"too few lcores: the EAL has lcore %s only, and workers need lcores of "
			"their own. Give at least two (-l 0-1), or for tests on a small machine "
			"map several lcores to one CPU (--lcores 0@0,1@1,2@1)",
			have);
		return -EINVAL;
	}
	if (net->n_workers > ARN_NET_MAX_WORKERS) {
		ARN_ERR(NET, "at most %d workers", ARN_NET_MAX_WORKERS);
		return -EINVAL;
	}
	return 0;
}

/*
 * net_af_xdp registers the mbuf pool itself as the socket's UMEM (DPDK
 * 22.11, drivers/net/af_xdp: xdp_umem_configure): the region from the page
 * holding the pool's first memory chunk, populated_size x object size
 * bytes long. That is the pool only if its objects are packed back to
 * back. rte_pktmbuf_pool_create does not pack them without hugepages: it
 * keeps each object within one 4 KiB page, so 2,368-byte objects take a
 * page each and the pool spans 1.7 times what the PMD registers. The
 * kernel refuses every TX descriptor and fill-ring address of an mbuf past
 * the registered end, without an error: the frame is never sent, the PMD
 * never gets the mbuf back, and under bulk traffic (which cycles through
 * the whole pool) TCP loses segment after segment until the connection and
 * then the port stall. A pool made for net_af_xdp is therefore packed
 * (RTE_MEMPOOL_F_NO_IOVA_CONTIG: objects may cross pages, which neither
 * the PMD's copy into a socket nor a virtual device minds), and checked.
 */
struct rte_mempool *net_pool_create(const char *name, unsigned n, unsigned cache,
				    uint16_t data_room, int socket, bool packed)
{
	if (!packed)
		return rte_pktmbuf_pool_create(name, n, cache, 0, data_room, socket);
	/* rte_pktmbuf_pool_create_by_ops, with the flag it does not take */
	struct rte_pktmbuf_pool_private priv = {.mbuf_data_room_size = data_room};
	struct rte_mempool *mp =
	    rte_mempool_create_empty(name, n, (unsigned)sizeof(struct rte_mbuf) + data_room, cache,
				     sizeof(priv), socket, RTE_MEMPOOL_F_NO_IOVA_CONTIG);
	if (mp == NULL)
		return NULL;
	int rc = rte_mempool_set_ops_byname(mp, rte_mbuf_best_mempool_ops(), NULL);
	if (rc == 0) {
		rte_pktmbuf_pool_init(mp, &priv);
		rc = rte_mempool_populate_default(mp);
		rc = rc < 0 ? rc : 0;
	}
	if (rc != 0) {
		rte_mempool_free(mp);
		rte_errno = -rc;
		return NULL;
	}
	rte_mempool_obj_iter(mp, rte_pktmbuf_init, NULL);
	return mp;
}

struct umem_span {
	uintptr_t lo, hi;
	unsigned outside;
};

static void count_outside(struct rte_mempool *mp, void *arg, void *obj, unsigned idx)
{
	(void)idx;
	struct umem_span *u = arg;
	uintptr_t start = (uintptr_t)obj - mp->header_size; /* the object's header */
	if (start < u->lo ||
	    start + rte_mempool_calc_obj_size(mp->elt_size, mp->flags, NULL) > u->hi)
		u->outside++;
}

unsigned net_pool_outside_umem(struct rte_mempool *mp)
{
	const struct rte_mempool_memhdr *h = STAILQ_FIRST(&mp->mem_list);
	if (h == NULL)
		return mp->populated_size;
	struct umem_span u = {.lo = (uintptr_t)h->addr & ~((uintptr_t)getpagesize() - 1)};
	u.hi = (uintptr_t)h->addr + (uintptr_t)mp->populated_size *
					rte_mempool_calc_obj_size(mp->elt_size, mp->flags, NULL);
	rte_mempool_obj_iter(mp, count_outside, &u);
	return u.outside;
}

bool net_dp_has_af_xdp(const struct arn_dataplane *dp)
{
	for (size_t i = 0; i < dp->n_ports; i++)
		if (strncmp(dp->ports[i].device, "net_af_xdp", 10) == 0)
			return true;
	return false;
}

static struct rte_mempool *pool_for(struct arn_net *net, const struct arn_dataplane *dp,
				    unsigned socket)
{
	if (socket >= RTE_DIM(net->pool))
		socket = 0;
	if (net->pool[socket])
		return net->pool[socket];
	char name[RTE_MEMPOOL_NAMESIZE];
	snprintf(name, sizeof(name), "arn_mbuf_s%u", socket);
	unsigned cache = dp->mbuf_cache_size;
	/* rte_mempool refuses caches above n / 1.5. */
	if (cache > dp->mbufs_per_socket * 2 / 3)
		cache = dp->mbufs_per_socket * 2 / 3;
	if (cache > RTE_MEMPOOL_CACHE_MAX_SIZE)
		cache = RTE_MEMPOOL_CACHE_MAX_SIZE;
	bool xdp = net_dp_has_af_xdp(dp);
	struct rte_mempool *mp = net_pool_create(name, dp->mbufs_per_socket, cache,
						 dp->mbuf_data_room, (int)socket, xdp);
	if (mp == NULL) {
		ARN_ERR(NET,
			"cannot create the mbuf pool of NUMA socket %u (%u mbufs of %u bytes): "
			"%s. Lower dataplane.mbuf_pool.mbufs_per_socket or give DPDK more "
			"memory (hugepages, or -m MB with --no-huge)",
			socket, dp->mbufs_per_socket, dp->mbuf_data_room, rte_strerror(rte_errno));
		return NULL;
	}
	unsigned outside = xdp ? net_pool_outside_umem(mp) : 0;
	if (outside != 0) {
		/* Memory in more than one piece: the PMD would silently lose
		 * every frame in these mbufs (see net_pool_create). */
		ARN_ERR(NET,
			"the mbuf pool of NUMA socket %u is in %u memory chunks, and %u of its %u "
			"mbufs lie outside the region net_af_xdp registers as its UMEM (from the "
			"first chunk, populated mbufs x object size): give DPDK more contiguous "
			"memory (a larger -m, or hugepages) or lower "
			"dataplane.mbuf_pool.mbufs_per_socket",
			socket, mp->nb_mem_chunks, outside, mp->populated_size);
		rte_mempool_free(mp);
		return NULL;
	}
	net->pool[socket] = mp;
	return mp;
}

int net_lcores_create(struct arn_net *net)
{
	for (unsigned w = 0; w < net->n_workers; w++) {
		struct arn_lcore *lc = net->lc[w];
		char name[RTE_RING_NAMESIZE];
		lc->net = net;
		lc->l4_ops = net_l4_registered();
		lc->index = w;
		lc->n_workers = net->n_workers;
		lc->n_ports = (uint16_t)net->n_ports;
		lc->tx_drain = rte_get_tsc_hz() / 1000000 * NET_TX_DRAIN_US;
		lc->ip_id = (uint16_t)(w << 12);
		snprintf(net->worker_name[w], sizeof(net->worker_name[w]), "worker%u", w);
		lc->port = rte_zmalloc_socket("arn_lcore_port",
					      sizeof(struct arn_lcore_port) * (net->n_ports + 1),
					      RTE_CACHE_LINE_SIZE, (int)lc->socket);
		lc->arp = net_arp_create(lc->socket);
		snprintf(name, sizeof(name), "arn_ho%u", w);
		lc->handoff =
		    rte_ring_create(name, NET_HANDOFF_RING, (int)lc->socket, RING_F_SC_DEQ);
		snprintf(name, sizeof(name), "arn_ctl%u", w);
		lc->ctrl = rte_ring_create_elem(name, sizeof(struct net_ctrl_msg), NET_CTRL_RING,
						(int)lc->socket, RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (lc->port == NULL || lc->arp == NULL || lc->handoff == NULL ||
		    lc->ctrl == NULL) {
			ARN_ERR(NET, "worker %u: out of DPDK memory for its state and rings (%s)",
				w, rte_strerror(rte_errno));
			return -ENOMEM;
		}
	}
	return 0;
}

void net_lcores_free(struct arn_net *net)
{
	for (unsigned w = 0; w < net->n_workers; w++) {
		struct arn_lcore *lc = net->lc[w];
		if (lc == NULL)
			continue;
		if (lc->handoff) {
			struct rte_mbuf *m;
			while (rte_ring_dequeue(lc->handoff, (void **)&m) == 0)
				rte_pktmbuf_free(m);
			rte_ring_free(lc->handoff);
		}
		if (lc->arp && lc->port) {
			net_arp_flush(lc);
			for (unsigned p = 0; p < net->n_ports; p++)
				for (unsigned i = 0; i < lc->port[p].n_tx; i++)
					rte_pktmbuf_free(lc->port[p].tx[i]);
		}
		rte_ring_free(lc->ctrl);
		net_arp_free(lc->arp);
		rte_free(lc->port);
		rte_free(lc);
		net->lc[w] = NULL;
	}
}

static void arp_timing_default(void)
{
	uint64_t hz = rte_get_tsc_hz();
	net_arp_timing.retry = hz;	    /* RFC 1122 2.3.2.1: at most one per second */
	net_arp_timing.reachable = 30 * hz; /* Linux's base_reachable_time */
	net_arp_timing.retries = 3;
}

struct arn_net *arn_net_create(const struct arn_dataplane *dp)
{
	if (arn_net_current() != NULL) {
		ARN_ERR(NET, "a data plane already exists in this process");
		errno = EEXIST;
		return NULL;
	}
	if (dp->n_ports == 0) {
		ARN_ERR(NET, "dataplane.ports is empty: give at least one port (device, ipv4)");
		errno = EINVAL;
		return NULL;
	}
	if (dp->n_ports > ARN_NET_MAX_PORTS) {
		ARN_ERR(NET, "at most %d ports", ARN_NET_MAX_PORTS);
		errno = EINVAL;
		return NULL;
	}
	struct arn_net *net = calloc(1, sizeof(*net));
	if (net == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	net->dp = dp;
	net->n_ports = (unsigned)dp->n_ports;
	net_rss_init();
	arp_timing_default();
	unsigned ids[ARN_NET_MAX_WORKERS];
	int rc = map_lcores(net, dp, ids);
	if (rc != 0)
		goto fail;
	for (unsigned w = 0; w < net->n_workers; w++) {
		unsigned id = ids[w];
		unsigned socket = rte_lcore_to_socket_id(id);
		if (socket >= RTE_DIM(net->pool))
			socket = 0;
		struct arn_lcore *lc =
		    rte_zmalloc_socket("arn_lcore", sizeof(*lc), RTE_CACHE_LINE_SIZE, (int)socket);
		net->lc[w] = lc;
		if (lc == NULL) {
			ARN_ERR(NET, "out of DPDK memory for worker %u", w);
			rc = -ENOMEM;
			goto fail;
		}
		lc->lcore_id = id;
		lc->socket = socket;
		lc->pool = pool_for(net, dp, socket);
		if (lc->pool == NULL) {
			rc = -ENOMEM;
			goto fail;
		}
	}
	rc = net_lcores_create(net);
	if (rc != 0)
		goto fail;
	for (unsigned i = 0; i < net->n_ports; i++) {
		rc = net_port_setup(net, i, &dp->ports[i]);
		if (rc != 0)
			goto fail;
		for (unsigned j = 0; j < i; j++)
			if (net->port[j].port_id == net->port[i].port_id) {
				ARN_ERR(NET, "ports %s and %s are the same device",
					net->port[j].name, net->port[i].name);
				rc = -EINVAL;
				goto fail;
			}
	}
	/* One logical RETA for every port: the smallest NIC table (tables are
	 * powers of two, so each NIC's index reduces to it). */
	unsigned reta = NET_RETA_MAX / 4;
	for (unsigned i = 0; i < net->n_ports; i++) {
		struct rte_eth_dev_info info;
		if (net->port[i].rss_hw && rte_eth_dev_info_get(net->port[i].port_id, &info) == 0 &&
		    info.reta_size < reta)
			reta = info.reta_size;
	}
	net_reta_fill(net, reta);
	rc = net_ports_start(net);
	if (rc != 0)
		goto fail;
	rc = net_admin_register(net);
	if (rc != 0)
		goto fail;
	net_set_current(net);
	struct arn_sb s = ARN_SB_INIT;
	for (unsigned w = 0; w < net->n_workers; w++)
		arn_sb_printf(&s, "%s%s=lcore %u", w ? ", " : "", net->worker_name[w],
			      net->lc[w]->lcore_id);
	ARN_INFO(NET, "data plane ready: control lcore %u, %u worker%s (%s), %u port%s",
		 rte_get_main_lcore(), net->n_workers, net->n_workers == 1 ? "" : "s",
		 arn_sb_cstr(&s), net->n_ports, net->n_ports == 1 ? "" : "s");
	arn_sb_free(&s);
	return net;
fail:
	net_ports_close(net);
	net_lcores_free(net);
	for (unsigned k = 0; k < RTE_DIM(net->pool); k++)
		rte_mempool_free(net->pool[k]);
	free(net);
	errno = -rc;
	return NULL;
}

int arn_net_launch(struct arn_net *net)
{
	if (net->launched)
		return -EALREADY;
	return net_workers_launch(net);
}

static void log_stats(struct arn_net *net)
{
	static const char *const pnames[] = {
#define ARN_NET_PCTR(name, help) #name,
#include "arn_net_counters.def"
	};
	static const char *const wnames[] = {
#define ARN_NET_WCTR(name, help) #name,
#include "arn_net_counters.def"
	};
	for (unsigned p = 0; p < net->n_ports; p++) {
		struct arn_sb s = ARN_SB_INIT;
		for (unsigned c = 0; c < ARN_NET_PCTR_COUNT; c++) {
			uint64_t v = arn_net_port_counter(net, p, (enum arn_net_pctr)c);
			if (v)
				arn_sb_printf(&s, " %s=%llu", pnames[c], (unsigned long long)v);
		}
		struct net_nic_stats ns;
		if (net_port_nic_stats(net, p, &ns) == 0)
			arn_sb_printf(
			    &s,
			    " nic_rx_missed=%llu nic_rx_errors=%llu nic_rx_nombuf=%llu "
			    "nic_tx_errors=%llu",
			    (unsigned long long)ns.rx_missed, (unsigned long long)ns.rx_errors,
			    (unsigned long long)ns.rx_nombuf, (unsigned long long)ns.tx_errors);
		ARN_INFO(NET, "stats port %s:%s", net->port[p].name, arn_sb_cstr(&s));
		arn_sb_free(&s);
	}
	for (unsigned w = 0; w < net->n_workers; w++) {
		struct arn_sb s = ARN_SB_INIT;
		for (unsigned c = 0; c < ARN_NET_WCTR_COUNT; c++)
			arn_sb_printf(&s, " %s=%llu", wnames[c],
				      (unsigned long long)arn_net_worker_counter(
					  net, w, (enum arn_net_wctr)c));
		ARN_INFO(NET, "stats %s (lcore %u):%s", net->worker_name[w], net->lc[w]->lcore_id,
			 arn_sb_cstr(&s));
		arn_sb_free(&s);
	}
}

void arn_net_stop(struct arn_net *net)
{
	if (net == NULL || net->stopped)
		return;
	net_workers_join(net);
	net->stopped = true;
	log_stats(net);
}

void arn_net_destroy(struct arn_net *net)
{
	if (net == NULL)
		return;
	arn_net_stop(net);
	net_admin_unregister(net);
	net_ports_close(net);
	net_lcores_free(net);
	for (unsigned s = 0; s < RTE_DIM(net->pool); s++)
		rte_mempool_free(net->pool[s]);
	if (arn_net_current() == net)
		net_set_current(NULL);
	free(net);
}

/* ---- control to workers ------------------------------------------------------------------- */

int arn_net_post(unsigned worker, arn_net_ctrl_fn fn, void *arg)
{
	struct arn_net *net = arn_net_current();
	if (net == NULL)
		return -ENODEV;
	if (worker >= net->n_workers || fn == NULL)
		return -EINVAL;
	struct arn_lcore *lc = net->lc[worker];
	struct net_ctrl_msg msg = {fn, arg};
	if (rte_ring_sp_enqueue_elem(lc->ctrl, &msg, sizeof(msg)) != 0)
		return -ENOBUFS;
	lc->ctrl_posted++;
	return 0;
}

int arn_net_call_all(arn_net_ctrl_fn fn, void *arg, unsigned timeout_ms)
{
	struct arn_net *net = arn_net_current();
	if (net == NULL || !net->launched)
		return -ENODEV;
	uint64_t want[ARN_NET_MAX_WORKERS];
	for (unsigned w = 0; w < net->n_workers; w++) {
		int rc = arn_net_post(w, fn, arg);
		if (rc != 0)
			return rc;
		want[w] = net->lc[w]->ctrl_posted;
	}
	for (unsigned waited = 0;; waited++) {
		unsigned w = 0;
		for (; w < net->n_workers; w++) {
			struct arn_lcore *lc = net->lc[w];
			if (__atomic_load_n(&lc->ctrl_done, __ATOMIC_ACQUIRE) < want[w])
				break;
		}
		if (w == net->n_workers)
			return 0;
		if (waited >= timeout_ms * 10)
			return -ETIMEDOUT;
		sleep_us(100);
	}
}
