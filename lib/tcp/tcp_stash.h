/*
 * The worker's kept mbufs (struct arn_tcp_worker's stash): an mbuf an ACK
 * lets go carries the next segment the worker builds, instead of a free
 * now and an alloc then. Apart from tcp_int.h, as tcp_rack.h is: its
 * usual case is inline and its other case is tcp_stash.c's, and an inline
 * in tcp_int.h calling into a .c file would make every file of lib/tcp
 * depend on that file through the header they all include. Used by
 * tcp_in.c (what an ACK frees), tcp_out.c and tcp_api.c (what a segment
 * or a copy takes), tcp_worker.c (when the stash goes back). Worker lcore
 * only.
 */
#ifndef ARN_TCP_STASH_H
#define ARN_TCP_STASH_H

#include <rte_mbuf.h>

#include "tcp_int.h"

/* Free @p m, one mbuf (m->next NULL) the stack is done with, or keep it
 * in the worker's stash when the next segment can be built in it
 * (arn_tcp_worker's stash). Inline, and rte_pktmbuf_free_seg's inline
 * free otherwise: nearly every ACK lets one go. */
static inline __attribute__((always_inline)) void tcp_mbuf_done(struct arn_tcp_worker *wk,
								struct rte_mbuf *m)
{
	if (wk->n_stash < TCP_STASH_MAX && m->pool == wk->pool && RTE_MBUF_DIRECT(m) &&
	    rte_mbuf_refcnt_read(m) == 1) {
		wk->stash[wk->n_stash++] = m;
		return;
	}
	rte_pktmbuf_free_seg(m);
}
/* tcp_mbuf_done for a received packet the stack is done with (a pure
 * ACK, data it did not queue), which may be a chain. */
static inline void tcp_pkt_done(struct arn_tcp_worker *wk, struct rte_mbuf *m)
{
	if (m->next == NULL)
		tcp_mbuf_done(wk, m);
	else
		rte_pktmbuf_free(m);
}
/* Give the stash back to the pool. */
void tcp_stash_drain(struct arn_tcp_worker *wk);
/* An mbuf of the worker's pool: the last one an ACK let go, if the stash
 * holds one (reset as an alloc would), else the pool's; NULL when the
 * pool is empty too. */
struct rte_mbuf *tcp_stash_take(struct arn_tcp_worker *wk);
static inline struct rte_mbuf *tcp_mbuf_alloc(struct arn_tcp_worker *wk)
{
	return wk->n_stash ? tcp_stash_take(wk) : arn_net_alloc(wk->lc);
}

#endif
