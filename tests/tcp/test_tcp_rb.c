/*
 * lib/tcp/tcp_rb.c, the red-black tree under the out-of-order queue's
 * indexes: random insertions and erasures against a sorted reference
 * array, every invariant checked after each step (order and parent links,
 * no red node with a red child, the same number of black nodes on every
 * path, a black root, height within 2 log2(n + 1)), and next/prev/first/
 * last against the array.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tcp_rb.h"

struct knode {
	struct tcp_rb_node rb; /* first */
	int key;
};

#define NMAX 600

static struct knode nodes[NMAX];
static int ref[NMAX]; /* the keys in the tree, sorted */
static int nref;

static uint32_t rng = 12345;
static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

static int key(const struct tcp_rb_node *n)
{
	return ((const struct knode *)n)->key;
}

/* black height of @p n's subtree; checks order within (lo, hi) and links */
static int check(const struct tcp_rb_node *n, const struct tcp_rb_node *parent, long lo, long hi,
		 int *count, int depth, int *maxdepth)
{
	if (n == NULL)
		return 1;
	assert_ptr_equal(n->parent, parent);
	assert_true(key(n) > lo && key(n) < hi);
	if (n->red) {
		assert_false(n->left && n->left->red);
		assert_false(n->right && n->right->red);
	}
	(*count)++;
	if (depth > *maxdepth)
		*maxdepth = depth;
	int l = check(n->left, n, lo, key(n), count, depth + 1, maxdepth);
	int r = check(n->right, n, key(n), hi, count, depth + 1, maxdepth);
	assert_int_equal(l, r);
	return l + !n->red;
}

static void check_all(const struct tcp_rb_root *t)
{
	int count = 0, maxdepth = 0;
	assert_true(t->root == NULL || !t->root->red);
	check(t->root, NULL, -1, 1L << 40, &count, 1, &maxdepth);
	assert_int_equal(count, nref);
	int lg = 0;
	while ((1 << lg) < nref + 1)
		lg++;
	assert_true(maxdepth <= 2 * lg);
	/* in order, both ways */
	const struct tcp_rb_node *x = tcp_rb_first(t);
	for (int i = 0; i < nref; i++, x = tcp_rb_next(x))
		assert_int_equal(key(x), ref[i]);
	assert_null(x);
	x = tcp_rb_last(t);
	for (int i = nref - 1; i >= 0; i--, x = tcp_rb_prev(x))
		assert_int_equal(key(x), ref[i]);
	assert_null(x);
}

/* the node with the greatest key <= k, or NULL */
static struct tcp_rb_node *floor_of(const struct tcp_rb_root *t, int k)
{
	struct tcp_rb_node *x = t->root, *best = NULL;
	while (x) {
		if (key(x) <= k) {
			best = x;
			x = x->right;
		} else {
			x = x->left;
		}
	}
	return best;
}

static void ref_insert(int k)
{
	int i = nref;
	while (i > 0 && ref[i - 1] > k) {
		ref[i] = ref[i - 1];
		i--;
	}
	ref[i] = k;
	nref++;
}

static void ref_erase(int k)
{
	int i = 0;
	while (ref[i] != k)
		i++;
	memmove(&ref[i], &ref[i + 1], (size_t)(nref - i - 1) * sizeof(ref[0]));
	nref--;
}

static bool in_ref(int k)
{
	for (int i = 0; i < nref; i++)
		if (ref[i] == k)
			return true;
	return false;
}

/* @p range keys; inserts (by a descent, or after the floor node) and
 * erasures at random, @p steps of them, biased to grow then shrink */
static void run(int range, int steps, bool append_bias)
{
	struct tcp_rb_root t = {NULL};
	nref = 0;
	bool used[NMAX] = {false};
	for (int s = 0; s < steps; s++) {
		bool grow = (s / (steps / 4)) % 2 == 0;
		bool ins = (int)(rnd() % 100) < (grow ? 70 : 30);
		if (ins && nref < range) {
			int k = append_bias && nref && rnd() % 2 ? ref[nref - 1] + 1
								 : (int)(rnd() % range);
			if (k >= range || in_ref(k))
				continue;
			struct knode *n = &nodes[k];
			assert_false(used[k]);
			n->key = k;
			if (rnd() % 2) {
				tcp_rb_insert_after(&t, &n->rb, floor_of(&t, k));
			} else {
				struct tcp_rb_node *p = NULL, *x = t.root;
				bool right = false;
				while (x) {
					p = x;
					right = k > key(x);
					x = right ? x->right : x->left;
				}
				tcp_rb_insert(&t, &n->rb, p, right);
			}
			used[k] = true;
			ref_insert(k);
		} else if (nref) {
			int k = ref[rnd() % nref];
			if (rnd() % 4 == 0)
				k = ref[0]; /* the queue's usual erasure: its first */
			tcp_rb_erase(&t, &nodes[k].rb);
			used[k] = false;
			ref_erase(k);
		}
		check_all(&t);
	}
	while (nref) {
		tcp_rb_erase(&t, &nodes[ref[0]].rb);
		ref_erase(ref[0]);
		check_all(&t);
	}
	assert_null(t.root);
}

static void test_rb_random_small(void **state)
{
	(void)state;
	for (int i = 0; i < 50; i++)
		run(16, 200, false);
}

static void test_rb_random_large(void **state)
{
	(void)state;
	run(NMAX, 4000, false);
	run(NMAX, 4000, true);
}

/* ascending insertions at the last node (a bulk flight above a hole),
 * then erasures from the first (the hole filled) */
static void test_rb_append_then_pop(void **state)
{
	(void)state;
	struct tcp_rb_root t = {NULL};
	nref = 0;
	struct tcp_rb_node *last = NULL;
	for (int k = 0; k < NMAX; k++) {
		nodes[k].key = k;
		tcp_rb_insert_after(&t, &nodes[k].rb, last);
		last = &nodes[k].rb;
		ref_insert(k);
		check_all(&t);
	}
	for (int k = 0; k < NMAX; k++) {
		assert_ptr_equal(tcp_rb_first(&t), &nodes[k].rb);
		tcp_rb_erase(&t, &nodes[k].rb);
		ref_erase(k);
		check_all(&t);
	}
	assert_null(t.root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rb_random_small),
	    cmocka_unit_test(test_rb_random_large),
	    cmocka_unit_test(test_rb_append_then_pop),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
