/*
 * Deferred free: run fn(arg) once every reader registered on an
 * rte_rcu_qsbr variable has reported a quiescent state after the call.
 * One helper for everything the control lcore retires while workers may
 * still read it: configuration generations (lib/config), the proxy's
 * lookup tables (lib/http), statistics scopes (lib/stats) and access
 * loggers (lib/accesslog).
 *
 * It is rte_rcu_qsbr_dq's idea (a FIFO of (token, what to free) drained
 * from the head while tokens are acknowledged) without its two limits
 * here: rte_rcu_qsbr_dq_create() allocates from EAL memory (rte_zmalloc,
 * rte_ring_create), which a control-plane-only arion (no dataplane:
 * section, no EAL) and the unit tests (pthread readers) do not have, and
 * its ring has a fixed size, so a burst of frees (a CDS update removing
 * 10,000 clusters) would have to block the control lcore. This queue lives
 * in ordinary memory and grows. It is also experimental API in DPDK 22.11.
 *
 * Tokens from rte_rcu_qsbr_start() only grow, so entries are acknowledged
 * in queue order and arn_defer_reclaim() stops at the first that is not.
 *
 * Control lcore only (one thread enqueues and reclaims); readers never
 * touch the queue.
 */
#ifndef ARN_DEFER_H
#define ARN_DEFER_H

#include <stddef.h>

struct rte_rcu_qsbr;
struct arn_defer;

/** What to run once readers are done: frees @p arg (owned by the queue until then). */
typedef void (*arn_defer_fn)(void *arg);

/**
 * A queue over @p v (borrowed; it must outlive the queue). @p v NULL: no
 * readers, every free runs at once.
 * @return the queue, or NULL (out of memory).
 */
struct arn_defer *arn_defer_create(struct rte_rcu_qsbr *v);

/**
 * Free @p arg with @p fn once every reader registered on the queue's
 * variable has passed a quiescent state. @p d NULL, or a queue without a
 * variable, runs fn(arg) at once: right while no reader runs. Without
 * memory to queue the entry it waits for the readers in place
 * (rte_rcu_qsbr_synchronize: microseconds, workers report every loop)
 * rather than free early or leak.
 */
void arn_defer_free(struct arn_defer *d, arn_defer_fn fn, void *arg);

/** Run the frees whose grace period ended. @return how many ran. NULL: 0. */
size_t arn_defer_reclaim(struct arn_defer *d);

/** Frees queued and not yet run. NULL: 0. */
size_t arn_defer_pending(const struct arn_defer *d);

/**
 * Run every pending free without waiting, then free @p d. Readers must be
 * gone (workers stopped or unregistered). NULL is a no-op.
 */
void arn_defer_destroy(struct arn_defer *d);

/*
 * The process's queue, for modules that free what workers read but own no
 * RCU variable (lib/stats, lib/accesslog). The application installs one
 * over the configuration store's variable, which the workers report on,
 * and reclaims it from the control loop; until then (and after NULL) their
 * frees run at once, which is right while no worker runs.
 */
void arn_defer_set_default(struct arn_defer *d);

/** The process's queue (NULL: none; arn_defer_free then frees at once). */
struct arn_defer *arn_defer_default(void);

#endif
