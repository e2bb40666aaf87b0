/*
 * lib/net's control-plane interface: start and stop the data plane, read its
 * counters, talk to its workers. Everything here runs on the control lcore
 * (the EAL main lcore) unless a function says otherwise. The worker-side
 * contract with the L4 layer is arn_l4.h; a worker's state is arn_lcore.h.
 *
 * Life cycle (app/arion/app_net.c):
 *
 *     arn_net_eal_init(dp, argc, argv)   EAL, with dataplane.eal_args + CLI args
 *     net = arn_net_create(dp)           lcores, mbuf pools, ports, rings
 *     arn_net_launch(net)                workers run their loops
 *     ...                                control lcore serves xDS / admin
 *     arn_net_stop(net)                  workers stop and drain; counters logged
 *     arn_net_destroy(net)               ports stopped and closed, memory freed
 *     arn_net_eal_cleanup()
 *
 * One data plane per process (DPDK's EAL is per process); arn_net_current()
 * returns it for modules that have no pointer to it (admin, config).
 */
#ifndef ARN_NET_H
#define ARN_NET_H

#include <stdbool.h>
#include <stdint.h>

#include "arn_lcore.h"

struct arn_dataplane;
struct rte_rcu_qsbr;

/* At most this many ports and workers (bootstrap accepts 32 ports). */
#define ARN_NET_MAX_PORTS 32
#define ARN_NET_MAX_WORKERS 64

/* ---- life cycle ------------------------------------------------------------ */

/**
 * Initialise DPDK's EAL with "arion", then @p dp->eal_args, then @p argv
 * (the command line's arguments after "--"). When neither names lcores
 * (-l, -c, --lcores) and @p dp lists worker_lcores, "-l CONTROL,WORKERS"
 * and "--main-lcore CONTROL" are added; --main-lcore is added when
 * dataplane.control_lcore is set and the arguments do not choose one.
 *
 * @return 0; -EALREADY if the EAL was initialised before; a negative errno
 *   from rte_eal_init, after logging what failed and what to do (no
 *   hugepages: reserve some or pass --no-huge; bad arguments: which).
 */
int arn_net_eal_init(const struct arn_dataplane *dp, int argc, char **argv);

/**
 * Build the data plane of @p dp after arn_net_eal_init(): map workers to
 * lcores, create one mbuf pool per NUMA socket that has workers, probe and
 * configure every port (one RX and one TX queue per worker, MTU, checksum
 * offloads and symmetric RSS where the port has them) and start it, and
 * create the per-worker rings.
 *
 * @p dp is borrowed: it must outlive the data plane (the L4 layer's
 * worker_init reads it at launch).
 * @return the data plane (owned by the caller, freed by arn_net_destroy), or
 *   NULL with the reason logged (port not found or not configurable, too few
 *   lcores, out of memory). Sets errno to the cause.
 */
struct arn_net *arn_net_create(const struct arn_dataplane *dp);

/**
 * Start a loop on every worker lcore. Each worker first registers with the
 * RCU QSBR (arn_net_set_rcu), then calls the L4 layer's worker_init
 * (arn_net_set_l4; none registered: TCP segments are dropped); if any
 * fails, all workers are stopped again.
 * @return 0, or the first worker's negative errno (-EINVAL: it could not
 *   register with the QSBR).
 */
int arn_net_launch(struct arn_net *net);

/**
 * Stop the workers: each finishes its iteration, calls the L4 layer's worker_fini,
 * flushes its TX buffers, frees packets still waiting (ARP, hand-off rings)
 * and leaves the RCU QSBR. Waits for all of them, then logs one line of
 * counters per port and per worker at info level. Safe to call when not
 * launched, and twice.
 */
void arn_net_stop(struct arn_net *net);

/** Stop and close the ports and free everything; @p net may be NULL. */
void arn_net_destroy(struct arn_net *net);

/** rte_eal_cleanup() if arn_net_eal_init() succeeded. */
void arn_net_eal_cleanup(void);

/** The data plane of this process, or NULL before create / after destroy. */
struct arn_net *arn_net_current(void);

/* ---- configuration's RCU ------------------------------------------------------ */

/**
 * The QSBR variable that workers report quiescent states to (lib/config owns
 * it). Each worker registers with thread id = its EAL lcore id (so size the
 * variable with rte_rcu_qsbr_get_memsize(RTE_MAX_LCORE)), goes online before
 * its loop, reports once per loop iteration (after it has dropped every
 * pointer into the configuration it read in that iteration) and goes offline
 * when it stops.
 *
 * A worker that cannot register (a QSBR sized for fewer threads than its
 * lcore id) is not protected by it, so it must read no configuration: at
 * launch it is not started and arn_net_launch fails; while running it does
 * no work at all (no packets, no control messages) until a later switch
 * succeeds.
 *
 * Call it before arn_net_launch (serve.c starts config before net). Called
 * while workers run, it waits (up to a second) until every worker has
 * switched to @p v. NULL detaches.
 * @return 0; -ETIMEDOUT if a running worker did not switch in time;
 *   -EINVAL if a running worker could not register with @p v (logged).
 */
int arn_net_set_rcu(struct rte_rcu_qsbr *v);

/* ---- control to workers ----------------------------------------------------------- */

/** A function the control lcore asks a worker to run on its lcore. */
typedef void (*arn_net_ctrl_fn)(struct arn_lcore *lc, void *arg);

/**
 * Queue @p fn(lc, @p arg) on worker @p worker's control ring; the worker
 * runs it between iterations (never concurrently with its packet work).
 * Does not wait. @p arg stays owned by the caller, who must keep it valid
 * until the function has run (see arn_net_call_all to wait).
 * @return 0; -ENODEV no data plane; -EINVAL bad worker; -ENOBUFS ring full.
 */
int arn_net_post(unsigned worker, arn_net_ctrl_fn fn, void *arg);

/**
 * Run @p fn on every running worker and wait until all have run it (up to
 * @p timeout_ms).
 * @return 0; -ENODEV; -ENOBUFS; -ETIMEDOUT (some worker has not run it yet:
 *   @p arg must then stay valid).
 */
int arn_net_call_all(arn_net_ctrl_fn fn, void *arg, unsigned timeout_ms);

/* ---- flows (worker side) ------------------------------------------------------------ */

/**
 * A local port in [@p lo, @p hi] for a connection from @p local to
 * @p remote:@p rport whose packets hash to this worker (so the replies come
 * back to it), searching upward from @p start (wrapping). The caller still
 * checks that the 4-tuple is free and calls again from the next port if not.
 * Runs on the worker; no side effects.
 * @return the port, or 0 if none in the range hashes to this worker.
 */
uint16_t arn_net_flow_pick_lport(const struct arn_lcore *lc, uint32_t local, uint32_t remote,
				 uint16_t rport, uint16_t lo, uint16_t hi, uint16_t start);

/**
 * Symmetric Toeplitz hash of an IPv4/TCP 4-tuple (host byte order), as a NIC
 * programmed by lib/net computes it; the same for both directions.
 */
uint32_t arn_net_rss_hash(uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport);

/* ---- counters (for lib/admin) ----------------------------------------------------------- */

enum arn_net_stat_scope {
	ARN_NET_SCOPE_PORT = 0,	  /* one port, summed over workers */
	ARN_NET_SCOPE_WORKER = 1, /* one worker: its own counters, and per-port sums */
};

/** One counter value, valid only during the callback. */
struct arn_net_stat {
	enum arn_net_stat_scope scope;
	const char *owner; /* port name ("wan") or worker name ("worker0") */
	unsigned index;	   /* port index or worker index */
	const char *name;  /* counter ("rx_packets"), from arn_net_counters.def */
	const char *help;  /* one-line description */
	uint64_t value;
};

typedef void (*arn_net_stat_cb)(void *ctx, const struct arn_net_stat *s);

/**
 * Call @p cb for every counter: first per port (every ARN_NET_PCTR summed
 * over workers), then per worker (every ARN_NET_WCTR, then every
 * ARN_NET_PCTR summed over ports). Reads without locks while workers run:
 * each value is exact at some instant, the set is not a snapshot.
 * Names are stable: admin may export them as
 * "arion.net.port.<owner>.<name>" and "arion.net.worker.<owner>.<name>".
 * @return 0, or -ENODEV if there is no data plane.
 */
int arn_net_stats_foreach(arn_net_stat_cb cb, void *ctx);

/** Port @p port's counter @p c summed over workers (0 if out of range). */
uint64_t arn_net_port_counter(const struct arn_net *net, unsigned port, enum arn_net_pctr c);

/** Worker @p worker's counter @p c (0 if out of range). */
uint64_t arn_net_worker_counter(const struct arn_net *net, unsigned worker, enum arn_net_wctr c);

/** Number of ports and workers; a port's name (NULL out of range). */
unsigned arn_net_n_ports(const struct arn_net *net);
unsigned arn_net_n_workers(const struct arn_net *net);
const char *arn_net_port_name(const struct arn_net *net, unsigned port);

/** The worker state of worker @p worker (tests, diagnostics). */
struct arn_lcore *arn_net_lcore(const struct arn_net *net, unsigned worker);

#endif
