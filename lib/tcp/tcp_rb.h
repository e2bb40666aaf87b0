/*
 * A small intrusive red-black tree (CLRS, with parent links and NULL
 * leaves), for the out-of-order queue's indexes (tcp_sack.c): DPDK has
 * none, and Linux keeps its out_of_order_queue in one (tcp_data_queue_ofo)
 * so that a peer's arrival order cannot make each segment cost the
 * queue's length.
 *
 * The tree knows structure only: the caller embeds a struct tcp_rb_node
 * in its nodes, searches by its own key (descending from root->root), and
 * links a new node where its search ended (tcp_rb_insert), which keeps
 * insertion next to a known node (the last one, Linux's ooo_last_skb)
 * O(1) amortized. Nodes are never copied or moved: erasing one leaves
 * every other node where it was, so pointers to them (tcp_rb_next taken
 * before an erase) stay good. The caller owns the nodes' memory. Height
 * at most 2 log2(n + 1).
 */
#ifndef ARN_TCP_RB_H
#define ARN_TCP_RB_H

#include <stdbool.h>
#include <stddef.h>

struct tcp_rb_node {
	struct tcp_rb_node *parent, *left, *right;
	bool red;
};

struct tcp_rb_root {
	struct tcp_rb_node *root; /* NULL: empty */
};

/* Link @p n (not in a tree) as @p parent's left (@p right false) or
 * right child, which must be NULL, or as the root of an empty tree when
 * @p parent is NULL; then rebalance. */
void tcp_rb_insert(struct tcp_rb_root *t, struct tcp_rb_node *n, struct tcp_rb_node *parent,
		   bool right);
/* Take @p n out of @p t. */
void tcp_rb_erase(struct tcp_rb_root *t, struct tcp_rb_node *n);

/* In key order: the first (last) node of @p t, NULL if empty; the node
 * after (before) @p n, NULL at the end. O(log n), O(1) amortized over a
 * walk. */
struct tcp_rb_node *tcp_rb_first(const struct tcp_rb_root *t);
struct tcp_rb_node *tcp_rb_last(const struct tcp_rb_root *t);
struct tcp_rb_node *tcp_rb_next(const struct tcp_rb_node *n);
struct tcp_rb_node *tcp_rb_prev(const struct tcp_rb_node *n);

/* Link @p n right after @p at in key order (@p at NULL: before every
 * node), which the caller's key must allow: O(1) when @p at has no right
 * child (the last node, or a leaf), else O(log n). */
static inline void tcp_rb_insert_after(struct tcp_rb_root *t, struct tcp_rb_node *n,
				       struct tcp_rb_node *at)
{
	if (at == NULL) {
		struct tcp_rb_node *p = t->root;
		while (p && p->left)
			p = p->left;
		tcp_rb_insert(t, n, p, false);
		return;
	}
	if (at->right == NULL) {
		tcp_rb_insert(t, n, at, true);
		return;
	}
	struct tcp_rb_node *p = at->right;
	while (p->left)
		p = p->left;
	tcp_rb_insert(t, n, p, false);
}

#endif
