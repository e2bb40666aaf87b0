/*
 * The out-of-order queue's index: two red-black trees over c->oooq and
 * the worker's pool of their nodes. A layer of its own, below what uses
 * it (tcp_sack.c's insert and pull, tcp_rmem.c's collapse, tcp_conn.c's
 * prune and free): it calls tcp_rb.c and nothing else of lib/tcp, so no
 * file that calls it is called back (tcp_int.h's layers). Its hot
 * helpers are tcp_ooo.h's inlines.
 */
#include <errno.h>
#include <stdlib.h>

#include "arn_table.h"
#include "tcp_int.h"
#include "tcp_ooo.h"

/*
 * The queue (c->oooq) is a list of single-segment mbufs sorted by
 * sequence (m->hash.usr) and disjoint: what reads it in order (the pull,
 * collapse, a prune, the tests) walks the list. Two red-black trees
 * (tcp_rb.c) index it, so that no arrival order a peer may choose makes a
 * segment cost more than O(log n) (Linux keeps its out_of_order_queue in
 * an rbtree, tcp_data_queue_ofo): c->ooo_mbufs, its mbufs by sequence
 * (where a segment goes, and the queued mbufs it overlaps), and
 * c->ooo_runs, its runs of contiguous data by start (a segment's SACK
 * block is its run). The list walked for each segment below the tail
 * (several times: to place it, again after admission, and for its run)
 * cost a peer's one-byte segments, each just below the tail, up to 36,583
 * instructions a segment with 2,047 mbufs queued (tests/tcp/
 * bench_tcp_ooo). A search now visits at most 2 log2(n + 1) nodes, and
 * a segment takes three searches at most (37 steps a segment in that
 * pattern), counted in out_of_order_walk_steps.
 *
 * Keys compare mod 2^32: what is queued lies within the window above
 * rcv_nxt, less than 2^31 wide.
 */

int tcp_ooo_nodes_init(struct arn_tcp_worker *wk)
{
	/* The queues hold at most ooo_max mbufs together, and one
	 * connection's its grant more (tcp_rmem_admit), which the growth
	 * bound caps; each mbuf has a node, each run (one mbuf at least)
	 * one; and tcp_ooo_insert takes two before it looks. */
	uint64_t n = 2 * ((uint64_t)wk->ooo_max + wk->rmem_grow_max) + 4;
	wk->ooo_nodes = arn_table_zalloc(sizeof(*wk->ooo_nodes) * (size_t)n);
	if (wk->ooo_nodes == NULL)
		return -ENOMEM;
	wk->ooo_nodes_n = (uint32_t)n;
	wk->ooo_node_free = NULL;
	wk->ooo_nodes_free_n = 0;
	for (uint64_t i = n; i-- > 0;)
		tcp_ooo_node_put(wk, &wk->ooo_nodes[i]);
	return 0;
}

/* Every node of @p t back to the pool, in one walk (no rebalancing). */
static void tree_drop(struct arn_tcp_worker *wk, struct tcp_rb_root *t)
{
	struct tcp_rb_node *x = tcp_rb_first(t);
	while (x) {
		struct tcp_rb_node *nx = tcp_rb_next(x);
		tcp_ooo_node_put(wk, tcp_ooo_onode(x));
		x = nx;
	}
	t->root = NULL;
}

void tcp_ooo_clear(struct arn_tcp_conn *c)
{
	tree_drop(c->wk, &c->ooo_mbufs);
	tree_drop(c->wk, &c->ooo_runs);
	c->ooo_mlast = c->ooo_rlast = NULL;
}

bool tcp_ooo_unindex(struct arn_tcp_conn *c, struct rte_mbuf *first, struct rte_mbuf *after)
{
	struct tcp_ooo_node *n =
	    tcp_ooo_floor(c->wk, &c->ooo_mbufs, c->ooo_mlast, tcp_ooo_mseq(first));
	if (n == NULL || n->m != first)
		return false; /* not indexed, nor what follows */
	while (n && n->m != after) {
		struct tcp_ooo_node *nx = tcp_ooo_onode(tcp_rb_next(&n->rb));
		tcp_ooo_tree_erase(c->wk, &c->ooo_mbufs, &c->ooo_mlast, n);
		n = nx;
	}
	return true;
}

void tcp_ooo_index_run(struct arn_tcp_conn *c, struct rte_mbuf *first_new, struct rte_mbuf *after)
{
	/* the node before them: their first's place's floor */
	struct tcp_ooo_node *pn =
	    tcp_ooo_floor(c->wk, &c->ooo_mbufs, c->ooo_mlast, tcp_ooo_mseq(first_new));
	for (struct rte_mbuf *x = first_new; x != after; x = x->next) {
		struct tcp_ooo_node *n = tcp_ooo_node_get(c->wk);
		n->start = tcp_ooo_mseq(x);
		n->end = tcp_ooo_mseq(x) + x->data_len;
		n->m = x;
		tcp_ooo_tree_insert_after(&c->ooo_mbufs, &c->ooo_mlast, n, pn);
		pn = n;
	}
}

static void tail_run_sync(struct arn_tcp_conn *c)
{
	if (c->ooo_rlast)
		c->ooo_tail_run = c->ooo_rlast->start;
}

/* [s, e) is queued now (what the queue held of it already counts once):
 * the run that holds it, which it extends or bridges. @return that run. */
struct tcp_ooo_node *tcp_ooo_runs_add(struct arn_tcp_conn *c, uint32_t s, uint32_t e)
{
	struct tcp_ooo_node *r = tcp_ooo_floor(c->wk, &c->ooo_runs, c->ooo_rlast, s);
	if (r && seq_geq(r->end, s)) {
		if (seq_lt(r->end, e))
			r->end = e;
	} else {
		struct tcp_ooo_node *n = tcp_ooo_node_get(c->wk);
		n->start = s;
		n->end = e;
		n->m = NULL;
		tcp_ooo_tree_insert_after(&c->ooo_runs, &c->ooo_rlast, n, r);
		r = n;
	}
	/* the runs it reaches join it */
	struct tcp_ooo_node *x;
	while (r != c->ooo_rlast &&
	       seq_leq((x = tcp_ooo_onode(tcp_rb_next(&r->rb)))->start, r->end)) {
		if (seq_gt(x->end, r->end))
			r->end = x->end;
		tcp_ooo_tree_erase(c->wk, &c->ooo_runs, &c->ooo_rlast, x);
	}
	tail_run_sync(c);
	return r;
}

/* No queued mbuf holds a byte of [s, e) any more (a refused segment
 * freed those it covered): the runs lose it. */
void tcp_ooo_runs_remove(struct arn_tcp_conn *c, uint32_t s, uint32_t e)
{
	struct arn_tcp_worker *wk = c->wk;
	struct tcp_ooo_node *r = tcp_ooo_floor(wk, &c->ooo_runs, c->ooo_rlast, s), *x;
	if (r && seq_gt(r->end, s)) {
		if (seq_gt(r->end, e)) {
			/* a hole in r: its part above moves on (a key that
			 * grows within its place), or becomes a run */
			if (r->start == s) {
				r->start = e;
			} else {
				struct tcp_ooo_node *n = tcp_ooo_node_get(wk);
				n->start = e;
				n->end = r->end;
				n->m = NULL;
				r->end = s;
				tcp_ooo_tree_insert_after(&c->ooo_runs, &c->ooo_rlast, n, r);
			}
			tail_run_sync(c);
			return;
		}
		x = tcp_ooo_onode(tcp_rb_next(&r->rb));
		if (r->start == s)
			tcp_ooo_tree_erase(wk, &c->ooo_runs, &c->ooo_rlast, r);
		else
			r->end = s;
		r = x;
	} else {
		r = r ? tcp_ooo_onode(tcp_rb_next(&r->rb))
		      : tcp_ooo_onode(tcp_rb_first(&c->ooo_runs));
	}
	while (r && seq_lt(r->start, e)) {
		if (seq_gt(r->end, e)) {
			r->start = e;
			break;
		}
		x = tcp_ooo_onode(tcp_rb_next(&r->rb));
		tcp_ooo_tree_erase(wk, &c->ooo_runs, &c->ooo_rlast, r);
		r = x;
	}
	tail_run_sync(c);
}

bool tcp_ooo_consistent(const struct arn_tcp_conn *c)
{
	const struct tcp_rb_node *n = tcp_rb_first(&c->ooo_mbufs), *last = NULL;
	const struct tcp_rb_node *r = tcp_rb_first(&c->ooo_runs), *rlast = NULL;
	const struct rte_mbuf *x = c->oooq.head;
	bool indexed = n != NULL; /* a head of the list is (tcp_ooo_index_all) */
	while (x) {
		/* x starts a run: its node, and the run's */
		if (r == NULL || tcp_ooo_onode(r)->start != tcp_ooo_mseq(x))
			return false;
		uint32_t e = tcp_ooo_mseq(x);
		do {
			if (indexed) {
				if (tcp_ooo_onode(n)->m != x ||
				    tcp_ooo_onode(n)->start != tcp_ooo_mseq(x) ||
				    tcp_ooo_onode(n)->end != tcp_ooo_mseq(x) + x->data_len)
					return false;
				last = n;
				n = tcp_rb_next(n);
				indexed = n != NULL;
			}
			e = tcp_ooo_mseq(x) + x->data_len;
			x = x->next;
		} while (x && tcp_ooo_mseq(x) == e);
		if (tcp_ooo_onode(r)->end != e)
			return false;
		rlast = r;
		r = tcp_rb_next(r);
	}
	return n == NULL && r == NULL && tcp_ooo_onode(last) == c->ooo_mlast &&
	       tcp_ooo_onode(rlast) == c->ooo_rlast &&
	       (!rlast || c->ooo_tail_run == tcp_ooo_onode(rlast)->start);
}
