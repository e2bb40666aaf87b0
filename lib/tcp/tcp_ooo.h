/*
 * The out-of-order queue's index (tcp_ooo.c): what lib/tcp's receive
 * path (tcp_sack.c) uses of it on every out-of-order segment, inline, so
 * that placing a segment costs no call more than it did in one file.
 * Private to tcp_ooo.c and tcp_sack.c. Worker lcore only.
 *
 * The index calls nothing above it (tcp_rb.c only): what it changes is
 * its trees and the worker's node pool, never the queue's mbufs, its
 * counts or the connection's lists, which stay its callers'.
 */
#ifndef ARN_TCP_OOO_H
#define ARN_TCP_OOO_H

#include <stdbool.h>
#include <stdint.h>

#include "tcp_int.h"
#include "tcp_rb.h"

static inline uint32_t tcp_ooo_mseq(const struct rte_mbuf *m)
{
	return m->hash.usr;
}

static inline struct tcp_ooo_node *tcp_ooo_onode(const struct tcp_rb_node *n)
{
	return (struct tcp_ooo_node *)(uintptr_t)n; /* rb is first */
}

static inline struct tcp_ooo_node *tcp_ooo_node_get(struct arn_tcp_worker *wk)
{
	struct tcp_ooo_node *n = wk->ooo_node_free;
	wk->ooo_node_free = n->free;
	wk->ooo_nodes_free_n--;
	return n;
}

/* Its tree links are left as they were: a walk in order (tcp_ooo.c's tree_drop) may
 * still read them. */
static inline void tcp_ooo_node_put(struct arn_tcp_worker *wk, struct tcp_ooo_node *n)
{
	n->free = wk->ooo_node_free;
	wk->ooo_node_free = n;
	wk->ooo_nodes_free_n++;
}

/* The node of @p t with the greatest start at or below @p seq, or NULL;
 * @p last, the tree's last node, answers at once for a place above it. */
static inline struct tcp_ooo_node *tcp_ooo_floor(struct arn_tcp_worker *wk,
						 const struct tcp_rb_root *t,
						 struct tcp_ooo_node *last, uint32_t seq)
{
	if (last && seq_leq(last->start, seq))
		return last;
	struct tcp_rb_node *x = t->root;
	struct tcp_ooo_node *best = NULL;
	while (x) {
		TCP_INC(wk, OOO_WALK_STEPS);
		if (seq_leq(tcp_ooo_onode(x)->start, seq)) {
			best = tcp_ooo_onode(x);
			x = x->right;
		} else {
			x = x->left;
		}
	}
	return best;
}

/* Each tree's node goes in after @p at (NULL: first) or out, keeping
 * the tree's last node (ooo_mlast, ooo_rlast). */
static inline void tcp_ooo_tree_insert_after(struct tcp_rb_root *t, struct tcp_ooo_node **last,
					     struct tcp_ooo_node *n, struct tcp_ooo_node *at)
{
	tcp_rb_insert_after(t, &n->rb, at ? &at->rb : NULL);
	if (at == *last)
		*last = n;
}

static inline void tcp_ooo_tree_erase(struct arn_tcp_worker *wk, struct tcp_rb_root *t,
				      struct tcp_ooo_node **last, struct tcp_ooo_node *n)
{
	if (n == *last)
		*last = tcp_ooo_onode(tcp_rb_prev(&n->rb));
	tcp_rb_erase(t, &n->rb);
	tcp_ooo_node_put(wk, n);
}

/* The mbuf tree indexes a head of the list: the mbufs appended at the
 * tail since the last search are not in it (a bulk flight above a hole
 * is mostly delivered, or pruned, without ever being searched: no node
 * for it). Before a search, they join it, in order, each at the last
 * node: O(1) amortized, once per mbuf. */
static inline void tcp_ooo_index_all(struct arn_tcp_conn *c)
{
	struct tcp_ooo_node *ml = c->ooo_mlast;
	for (struct rte_mbuf *x = ml ? ml->m->next : c->oooq.head; x; x = x->next) {
		struct tcp_ooo_node *n = tcp_ooo_node_get(c->wk);
		n->start = tcp_ooo_mseq(x);
		n->end = tcp_ooo_mseq(x) + x->data_len;
		n->m = x;
		tcp_ooo_tree_insert_after(&c->ooo_mbufs, &c->ooo_mlast, n, c->ooo_mlast);
	}
}

/* [s, e) is queued now (what the queue held of it already counts once):
 * the run that holds it, which it extends or bridges. @return that run. */
struct tcp_ooo_node *tcp_ooo_runs_add(struct arn_tcp_conn *c, uint32_t s, uint32_t e);
/* No queued mbuf holds a byte of [s, e) any more (a refused segment
 * freed those it covered): the runs lose it. */
void tcp_ooo_runs_remove(struct arn_tcp_conn *c, uint32_t s, uint32_t e);

#endif
