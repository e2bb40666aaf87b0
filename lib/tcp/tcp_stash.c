/*
 * The worker's kept mbufs: what tcp_stash.h's inlines do not do inline.
 */
#include <rte_mempool.h>

#include "tcp_stash.h"

/* Out of line: the test of the stash stays on the send path, the reset
 * (a dozen stores) does not weigh on its register allocation. */
struct rte_mbuf *tcp_stash_take(struct arn_tcp_worker *wk)
{
	struct rte_mbuf *m = wk->stash[--wk->n_stash];
	rte_pktmbuf_reset(m);
	return m;
}

void tcp_stash_drain(struct arn_tcp_worker *wk)
{
	rte_mempool_put_bulk(wk->pool, (void **)wk->stash, wk->n_stash);
	wk->n_stash = 0;
}
