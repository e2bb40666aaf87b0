/*
 * Red-black tree (tcp_rb.h): CLRS's insertion and deletion, NULL leaves
 * (black), the parent of a NULL child carried beside it in the deletion's
 * fix-up.
 */
#include "tcp_rb.h"

static void replace_child(struct tcp_rb_root *t, struct tcp_rb_node *p, struct tcp_rb_node *old,
			  struct tcp_rb_node *n)
{
	if (p == NULL)
		t->root = n;
	else if (p->left == old)
		p->left = n;
	else
		p->right = n;
}

static void rotate_left(struct tcp_rb_root *t, struct tcp_rb_node *x)
{
	struct tcp_rb_node *y = x->right;
	x->right = y->left;
	if (y->left)
		y->left->parent = x;
	y->parent = x->parent;
	replace_child(t, x->parent, x, y);
	y->left = x;
	x->parent = y;
}

static void rotate_right(struct tcp_rb_root *t, struct tcp_rb_node *x)
{
	struct tcp_rb_node *y = x->left;
	x->left = y->right;
	if (y->right)
		y->right->parent = x;
	y->parent = x->parent;
	replace_child(t, x->parent, x, y);
	y->right = x;
	x->parent = y;
}

static inline bool is_red(const struct tcp_rb_node *n)
{
	return n && n->red;
}

void tcp_rb_insert(struct tcp_rb_root *t, struct tcp_rb_node *z, struct tcp_rb_node *parent,
		   bool right)
{
	z->parent = parent;
	z->left = z->right = NULL;
	z->red = true;
	if (parent == NULL)
		t->root = z;
	else if (right)
		parent->right = z;
	else
		parent->left = z;
	struct tcp_rb_node *p;
	while ((p = z->parent) != NULL && p->red) {
		struct tcp_rb_node *g = p->parent; /* a red node is not the root */
		if (p == g->left) {
			struct tcp_rb_node *u = g->right;
			if (is_red(u)) {
				p->red = u->red = false;
				g->red = true;
				z = g;
				continue;
			}
			if (z == p->right) {
				rotate_left(t, p);
				z = p;
				p = z->parent;
			}
			p->red = false;
			g->red = true;
			rotate_right(t, g);
		} else {
			struct tcp_rb_node *u = g->left;
			if (is_red(u)) {
				p->red = u->red = false;
				g->red = true;
				z = g;
				continue;
			}
			if (z == p->left) {
				rotate_right(t, p);
				z = p;
				p = z->parent;
			}
			p->red = false;
			g->red = true;
			rotate_left(t, g);
		}
	}
	t->root->red = false;
}

/* @p v (may be NULL) takes @p u's place under u's parent. */
static void transplant(struct tcp_rb_root *t, struct tcp_rb_node *u, struct tcp_rb_node *v)
{
	replace_child(t, u->parent, u, v);
	if (v)
		v->parent = u->parent;
}

/* @p x (NULL: a leaf) under @p xp carries an extra black. */
static void erase_fixup(struct tcp_rb_root *t, struct tcp_rb_node *x, struct tcp_rb_node *xp)
{
	while (x != t->root && !is_red(x)) {
		/* x's sibling w is not NULL: x's side is a black short */
		if (x == xp->left) {
			struct tcp_rb_node *w = xp->right;
			if (w->red) {
				w->red = false;
				xp->red = true;
				rotate_left(t, xp);
				w = xp->right;
			}
			if (!is_red(w->left) && !is_red(w->right)) {
				w->red = true;
				x = xp;
				xp = x->parent;
				continue;
			}
			if (!is_red(w->right)) {
				w->left->red = false;
				w->red = true;
				rotate_right(t, w);
				w = xp->right;
			}
			w->red = xp->red;
			xp->red = false;
			w->right->red = false;
			rotate_left(t, xp);
		} else {
			struct tcp_rb_node *w = xp->left;
			if (w->red) {
				w->red = false;
				xp->red = true;
				rotate_right(t, xp);
				w = xp->left;
			}
			if (!is_red(w->left) && !is_red(w->right)) {
				w->red = true;
				x = xp;
				xp = x->parent;
				continue;
			}
			if (!is_red(w->left)) {
				w->right->red = false;
				w->red = true;
				rotate_left(t, w);
				w = xp->left;
			}
			w->red = xp->red;
			xp->red = false;
			w->left->red = false;
			rotate_right(t, xp);
		}
		x = t->root;
		break;
	}
	if (x)
		x->red = false;
}

void tcp_rb_erase(struct tcp_rb_root *t, struct tcp_rb_node *z)
{
	struct tcp_rb_node *x, *xp;
	bool black = !z->red;
	if (z->left == NULL) {
		x = z->right;
		xp = z->parent;
		transplant(t, z, x);
	} else if (z->right == NULL) {
		x = z->left;
		xp = z->parent;
		transplant(t, z, x);
	} else {
		/* z's successor y takes z's place and colour */
		struct tcp_rb_node *y = z->right;
		while (y->left)
			y = y->left;
		black = !y->red;
		x = y->right;
		if (y->parent == z) {
			xp = y;
		} else {
			xp = y->parent;
			transplant(t, y, x);
			y->right = z->right;
			y->right->parent = y;
		}
		transplant(t, z, y);
		y->left = z->left;
		y->left->parent = y;
		y->red = z->red;
	}
	z->parent = z->left = z->right = NULL;
	if (black)
		erase_fixup(t, x, xp);
}

struct tcp_rb_node *tcp_rb_first(const struct tcp_rb_root *t)
{
	struct tcp_rb_node *n = t->root;
	while (n && n->left)
		n = n->left;
	return n;
}

struct tcp_rb_node *tcp_rb_last(const struct tcp_rb_root *t)
{
	struct tcp_rb_node *n = t->root;
	while (n && n->right)
		n = n->right;
	return n;
}

struct tcp_rb_node *tcp_rb_next(const struct tcp_rb_node *n)
{
	if (n->right) {
		n = n->right;
		while (n->left)
			n = n->left;
		return (struct tcp_rb_node *)n;
	}
	while (n->parent && n == n->parent->right)
		n = n->parent;
	return n->parent;
}

struct tcp_rb_node *tcp_rb_prev(const struct tcp_rb_node *n)
{
	if (n->left) {
		n = n->left;
		while (n->right)
			n = n->right;
		return (struct tcp_rb_node *)n;
	}
	while (n->parent && n == n->parent->left)
		n = n->parent;
	return n->parent;
}
