/*
 * A worker's main loop. One iteration:
 *
 *   1. RX burst from its queue of every port -> Ethernet / ARP / IPv4 /
 *      ICMP -> TCP segments gathered (or sent to their owner's ring)
 *   2. packets other workers handed over (same path, ownership settled),
 *      then every gathered segment to the L4 layer in one call
 *      (l4_ops->input): one indirect call per burst, not per segment
 *   3. l4_ops->worker_poll: TCP timers and queued output
 *   4. ARP retries and expiry
 *   5. TX flush: buffers past their deadline, or all when the RX queues
 *      were drained (nothing more is waiting to batch with)
 *   6. control ring: functions the control lcore asked this worker to run
 *   7. RCU quiescent report: nothing read from the configuration in this
 *      iteration is held any more
 *
 * Each iteration is timed with the TSC and counted as busy (it received,
 * transmitted or ran something) or idle; busy cycles / requests is the CPU cost per request
 * that DESIGN.md "What fast means" compares against kernel proxies.
 */
#include <errno.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_pause.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "arn_l4.h"
#include "arn_log.h"
#include "net_int.h"
#include "tx.h"
#include "vpkt.h"
#include "arp.h"

/*
 * Switch to the QSBR the configuration asked for, if it changed. A worker
 * that cannot register with it is not protected by it: the configuration
 * may free a generation while the worker still reads it. So it must read
 * none: rcu_failed tells net_worker_begin not to start it and a running
 * worker to stop all work but following the next switch, and
 * arn_net_set_rcu reports the failure.
 * @return 0, or -EINVAL while registration with the wanted QSBR failed.
 */
static int rcu_follow(struct arn_lcore *lc)
{
	struct rte_rcu_qsbr *want = net_rcu_wanted();
	if (likely(want == lc->rcu_seen))
		return lc->rcu_failed ? -EINVAL : 0;
	if (lc->rcu) {
		rte_rcu_qsbr_thread_offline(lc->rcu, lc->lcore_id);
		rte_rcu_qsbr_thread_unregister(lc->rcu, lc->lcore_id);
		lc->rcu = NULL;
	}
	int failed = 0;
	if (want) {
		if (rte_rcu_qsbr_thread_register(want, lc->lcore_id) != 0) {
			/* Once per switch: a QSBR sized below RTE_MAX_LCORE. */
			ARN_ERR(NET,
				"worker %u: cannot register lcore %u with the configuration's RCU "
				"QSBR (%s): it must be sized for RTE_MAX_LCORE threads",
				lc->index, lc->lcore_id, rte_strerror(rte_errno));
			failed = 1;
		} else {
			rte_rcu_qsbr_thread_online(want, lc->lcore_id);
			lc->rcu = want;
		}
	}
	/* rcu_failed before rcu_seen: whoever sees the switch sees its outcome. */
	__atomic_store_n(&lc->rcu_failed, failed, __ATOMIC_RELEASE);
	__atomic_store_n(&lc->rcu_seen, want, __ATOMIC_RELEASE);
	return failed ? -EINVAL : 0;
}

static void rcu_follow_leave(struct arn_lcore *lc)
{
	if (lc->rcu) {
		rte_rcu_qsbr_thread_offline(lc->rcu, lc->lcore_id);
		rte_rcu_qsbr_thread_unregister(lc->rcu, lc->lcore_id);
	}
	lc->rcu = NULL;
	__atomic_store_n(&lc->rcu_failed, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&lc->rcu_seen, NULL, __ATOMIC_RELEASE);
}

static void announce(struct arn_lcore *lc)
{
	for (uint16_t p = 0; p < lc->n_ports; p++)
		net_arp_announce(lc, p);
	lc->garp_next = lc->now + rte_get_tsc_hz();
}

static unsigned ctrl_run(struct arn_lcore *lc, unsigned max)
{
	struct net_ctrl_msg msg[8];
	unsigned n =
	    rte_ring_sc_dequeue_burst_elem(lc->ctrl, msg, sizeof(msg[0]), RTE_MIN(max, 8u), NULL);
	for (unsigned i = 0; i < n; i++)
		msg[i].fn(lc, msg[i].arg);
	if (n) {
		ARN_NET_WADD(lc, ctrl_msgs, n);
		__atomic_store_n(&lc->ctrl_done, lc->ctrl_done + n, __ATOMIC_RELEASE);
	}
	return n;
}

/* RX bursts per port per iteration while the queue stays full. */
#define NET_RX_DRAIN 4

/* Port @p p's RX queue of this worker: up to NET_RX_DRAIN bursts while
 * they come back full, each through net_input and the L4 layer. Adds the
 * frames to @p work. @return true if the last burst was short (the queue
 * is drained). Inline in both its callers, the one-port iteration's with
 * @p p a constant. */
static inline __attribute__((always_inline)) bool rx_port(struct arn_lcore *lc, uint16_t p,
							  struct rte_mbuf **pkts, unsigned *work)
{
	const struct net_port *np = &lc->net->port[p];
	uint16_t port_id = np->port_id;
	unsigned b = 0;
	uint16_t n;
	do {
		n = np->vpkt
			? net_vpkt_rx(lc, p, pkts, ARN_NET_RX_BURST)
			: rte_eth_rx_burst(port_id, (uint16_t)lc->index, pkts, ARN_NET_RX_BURST);
		if (n == 0)
			break;
		*work += n;
		/* A veth's TCP checksums, which the kernel vouches for (port.c,
		 * if_l4_cksum_vouched): marked here, per burst, rather than by an
		 * RX callback, which DPDK calls on every poll, empty ones too
		 * (+44 instructions an idle iteration). */
		if (np->l4_cksum_vouched)
			for (uint16_t i = 0; i < n; i++)
				pkts[i]->ol_flags =
				    (pkts[i]->ol_flags & ~RTE_MBUF_F_RX_L4_CKSUM_MASK) |
				    RTE_MBUF_F_RX_L4_CKSUM_GOOD;
		net_input(lc, p, pkts, n, false);
		net_l4_flush(lc);
	} while (n == ARN_NET_RX_BURST && ++b < NET_RX_DRAIN);
	return n != ARN_NET_RX_BURST;
}

int net_worker_iteration(struct arn_lcore *lc)
{
	/* Not registered with the configuration's QSBR: touch nothing that
	 * could read it (packets, TCP, control messages) until a switch works. */
	if (unlikely(lc->rcu_failed) && rcu_follow(lc) != 0)
		return 0;
	struct rte_mbuf *pkts[ARN_NET_RX_BURST];
	/* Read the clock here rather than reuse the last iteration's end: a
	 * worker preempted between iterations must not run on a stale clock.
	 * It stays in lc->now (not in a local of its own, which the calls
	 * below would make the compiler keep on the stack). */
	lc->now = rte_rdtsc();
	unsigned work = 0;
	/* every queue read this iteration came back short of a full burst */
	bool drained = true;

	/* A full burst means input is queued: take up to NET_RX_DRAIN bursts
	 * before the TCP timers run, so that timers (RACK, tail loss probes)
	 * act on ACKs that have arrived rather than on ones still waiting in
	 * the queue. (The thousands of spurious retransmissions once blamed
	 * on that wait were RACK's clock-wrap bug, fixed in lib/tcp; see
	 * docs/benchmarks/proxy.md.) */
	/* One port, nearly always: its queue without the loop's index kept
	 * (and spilled) across the calls, two busy iterations a proxied
	 * request. */
	if (likely(lc->n_ports == 1)) {
		drained = rx_port(lc, 0, pkts, &work);
	} else {
		for (uint16_t p = 0; p < lc->n_ports; p++)
			if (!rx_port(lc, p, pkts, &work))
				drained = false;
	}
	/* Only other workers fill the hand-off ring: with one worker, one
	 * load instead of the ring's two. */
	unsigned n =
	    lc->n_workers == 1 || rte_ring_empty(lc->handoff)
		? 0
		: rte_ring_sc_dequeue_burst(lc->handoff, (void **)pkts, ARN_NET_RX_BURST, NULL);
	if (n == ARN_NET_RX_BURST)
		drained = false;
	if (n) {
		work += n;
		ARN_NET_WADD(lc, handoff_in, n);
		for (unsigned i = 0; i < n; i++) {
			uint16_t port = pkts[i]->port;
			if (unlikely(port >= lc->n_ports)) {
				rte_pktmbuf_free(pkts[i]);
				continue;
			}
			net_input(lc, port, &pkts[i], 1, true);
		}
		net_l4_flush(lc);
	}
	if (lc->l4_ops)
		lc->l4_ops->worker_poll(lc, lc->now);
	net_arp_poll(lc, lc->now);
	if (unlikely(lc->garp_left) && lc->now >= lc->garp_next) {
		lc->garp_left--;
		announce(lc);
	}
	/* Everything queued goes out once the input is drained: no more input
	 * is waiting to batch with, and the next iteration would only send
	 * it later (a request forwarded, or a response written, one loop
	 * iteration after it arrived: two busy iterations more per proxied
	 * request). With input still queued, frames wait for their drain
	 * deadline or a full buffer. Frames handed to the port are work too:
	 * an iteration that received nothing may send what an earlier one
	 * queued. */
	work += net_tx_flush(lc, drained);
	/* The control ring is nearly always empty and the QSBR nearly never
	 * switches: two loads each here rather than a call (with its frame)
	 * and a dequeue in every iteration. */
	if (!rte_ring_empty(lc->ctrl))
		work += ctrl_run(lc, 8);
	if (unlikely(net_rcu_wanted() != lc->rcu_seen))
		rcu_follow(lc);
	if (lc->rcu)
		rte_rcu_qsbr_quiescent(lc->rcu, lc->lcore_id);

	uint64_t cycles = rte_rdtsc() - lc->now;
	if (work) {
		ARN_NET_WINC(lc, loop_busy_iterations);
		ARN_NET_WADD(lc, loop_busy_cycles, cycles);
	} else {
		ARN_NET_WINC(lc, loop_idle_iterations);
		ARN_NET_WADD(lc, loop_idle_cycles, cycles);
		rte_pause();
	}
	return work != 0;
}

int net_worker_begin(struct arn_lcore *lc)
{
	lc->now = rte_rdtsc();
	/* the thread that runs the loop from here on is this one */
	lc->mcache = rte_mempool_default_cache(lc->pool, rte_lcore_id());
	/* Registered before anything runs that may read the configuration
	 * (the TCP layer's and its applications' init), or not started. */
	int rc = rcu_follow(lc);
	if (rc != 0) {
		rcu_follow_leave(lc);
		lc->mcache = NULL;
		return rc;
	}
	if (lc->l4_ops == NULL && lc->index == 0)
		ARN_INFO(NET, "no L4 layer is registered: TCP segments are counted (tcp_rx) and "
			      "dropped");
	rc = lc->l4_ops ? lc->l4_ops->worker_init(lc, lc->net->dp) : 0;
	if (rc != 0) {
		rcu_follow_leave(lc);
		lc->mcache = NULL;
		return rc;
	}
	/* Tell the segment our address is here (and our MAC, if it changed):
	 * now and twice more a second apart, because a NIC's link often comes
	 * up a moment after the port starts (RFC 5227 announces twice too). */
	if (lc->index == 0) {
		announce(lc);
		lc->garp_left = NET_GARP_COUNT - 1;
	}
	net_tx_flush(lc, true);
	lc->running = 1;
	return 0;
}

void net_worker_end(struct arn_lcore *lc)
{
	lc->now = rte_rdtsc();
	if (lc->l4_ops)
		lc->l4_ops->worker_fini(lc);
	net_tx_flush(lc, true);
	net_tx_drop_all(lc);
	net_arp_flush(lc);
	struct rte_mbuf *m;
	while (rte_ring_sc_dequeue(lc->handoff, (void **)&m) == 0) {
		ARN_NET_WINC(lc, handoff_drop_stop);
		rte_pktmbuf_free(m);
	}
	/* Run what the control lcore still queued so that nobody waits forever. */
	while (ctrl_run(lc, 8) != 0)
		;
	rcu_follow_leave(lc);
	lc->mcache = NULL;
	lc->running = 0;
}

static int worker_main(void *arg)
{
	struct arn_lcore *lc = arg;
	struct arn_net *net = lc->net;
	int rc = net_worker_begin(lc);
	net->init_rc[lc->index] = rc;
	__atomic_store_n(&net->init_done[lc->index], 1, __ATOMIC_RELEASE);
	if (rc != 0)
		return rc;
	while (!__atomic_load_n(&net->stop, __ATOMIC_ACQUIRE))
		net_worker_iteration(lc);
	/* Only hand-off rings are written by other workers, and only from their
	 * RX path: wait until every running worker has left its loop, so that
	 * what net_worker_end drains from this worker's ring is all there will
	 * ever be (nothing lands in a ring nobody reads). Every worker finished
	 * its start before stop was set, so init_rc says who is running. */
	unsigned running = 0;
	for (unsigned w = 0; w < net->n_workers; w++)
		running += net->init_rc[w] == 0;
	__atomic_add_fetch(&net->rx_left, 1, __ATOMIC_ACQ_REL);
	while (__atomic_load_n(&net->rx_left, __ATOMIC_ACQUIRE) < running)
		rte_pause();
	net_worker_end(lc);
	return 0;
}

int net_workers_launch(struct arn_net *net)
{
	for (unsigned w = 0; w < net->n_workers; w++) {
		net->init_done[w] = 0;
		net->init_rc[w] = 0;
	}
	net->stop = 0;
	net->rx_left = 0;
	unsigned launched = 0;
	int rc = 0;
	for (; launched < net->n_workers; launched++) {
		struct arn_lcore *lc = net->lc[launched];
		int r = rte_eal_remote_launch(worker_main, lc, lc->lcore_id);
		if (r != 0) {
			ARN_ERR(NET, "cannot launch worker %u on lcore %u: %s", launched,
				lc->lcore_id, rte_strerror(-r));
			rc = r;
			break;
		}
	}
	/* Wait until every launched worker has initialised (or failed). */
	for (unsigned w = 0; w < launched; w++) {
		while (!__atomic_load_n(&net->init_done[w], __ATOMIC_ACQUIRE))
			rte_delay_us_sleep(100);
		if (net->init_rc[w] != 0 && rc == 0) {
			rc = net->init_rc[w];
			ARN_ERR(NET,
				"worker %u (lcore %u) failed to start (%s; the reason is logged "
				"above); stopping the workers that did",
				w, net->lc[w]->lcore_id, strerror(-rc));
		}
	}
	net->launched = launched > 0;
	if (rc != 0) {
		__atomic_store_n(&net->stop, 1, __ATOMIC_RELEASE);
		for (unsigned w = 0; w < launched; w++)
			rte_eal_wait_lcore(net->lc[w]->lcore_id);
		net->launched = false;
	}
	return rc;
}

void net_workers_join(struct arn_net *net)
{
	if (!net->launched)
		return;
	__atomic_store_n(&net->stop, 1, __ATOMIC_RELEASE);
	for (unsigned w = 0; w < net->n_workers; w++)
		rte_eal_wait_lcore(net->lc[w]->lcore_id);
	net->launched = false;
}
