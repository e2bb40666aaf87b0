/*
 * lib/http/http_io.c's pins: http_pins_release2, which puts the segments of
 * both sides' pins back together, against what one rte_pktmbuf_free_seg a
 * segment does (shared, indirect, other pools' segments); and the owned
 * input's http_in_free. Needs EAL (mbufs) without hugepages.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include <cmocka.h>

#include <rte_eal.h>
#include <rte_mbuf.h>

#include "http_io.h"

static struct rte_mempool *pool, *pool2;

/* @p m pinned, its owner done with it: the pins hold the last reference */
static struct rte_mbuf *pinned(struct http_pins *p, struct rte_mempool *mp)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
	assert_non_null(m);
	http_pins_add(p, m);
	rte_pktmbuf_free(m);
	return m;
}

static void test_release2_usual(void **state)
{
	(void)state;
	struct http_pins a = {0}, b = {0};
	pinned(&a, pool);
	pinned(&b, pool);
	assert_int_equal(rte_mempool_in_use_count(pool), 2);
	http_pins_release2(&a, &b);
	assert_int_equal(a.n, 0);
	assert_int_equal(b.n, 0);
	assert_int_equal(rte_mempool_in_use_count(pool), 0);
}

/* a segment someone else still holds stays theirs, with their reference */
static void test_release2_shared(void **state)
{
	(void)state;
	for (int side = 0; side < 2; side++) {
		struct http_pins a = {0}, b = {0};
		struct rte_mbuf *ma = pinned(&a, pool), *mb = pinned(&b, pool);
		struct rte_mbuf *kept = side ? mb : ma;
		rte_mbuf_refcnt_update(kept, 1);
		http_pins_release2(&a, &b);
		assert_int_equal(rte_mempool_in_use_count(pool), 1);
		assert_int_equal(rte_mbuf_refcnt_read(kept), 1);
		rte_pktmbuf_free(kept);
		assert_int_equal(rte_mempool_in_use_count(pool), 0);
	}
	struct http_pins a = {0}, b = {0};
	struct rte_mbuf *ma = pinned(&a, pool), *mb = pinned(&b, pool);
	rte_mbuf_refcnt_update(ma, 1);
	rte_mbuf_refcnt_update(mb, 1);
	http_pins_release2(&a, &b);
	assert_int_equal(rte_mempool_in_use_count(pool), 2);
	rte_pktmbuf_free(ma);
	rte_pktmbuf_free(mb);
	assert_int_equal(rte_mempool_in_use_count(pool), 0);
}

/* each segment back to its own pool */
static void test_release2_two_pools(void **state)
{
	(void)state;
	struct http_pins a = {0}, b = {0};
	pinned(&a, pool);
	pinned(&b, pool2);
	http_pins_release2(&a, &b);
	assert_int_equal(rte_mempool_in_use_count(pool), 0);
	assert_int_equal(rte_mempool_in_use_count(pool2), 0);
	assert_int_equal(rte_mempool_avail_count(pool2), pool2->size);

	/* more segments a side, the pools interleaved, a shared one among them */
	struct rte_mbuf *m[5];
	m[0] = pinned(&a, pool);
	m[1] = pinned(&a, pool2);
	m[2] = pinned(&a, pool);
	m[3] = pinned(&b, pool2);
	m[4] = pinned(&b, pool2);
	rte_mbuf_refcnt_update(m[3], 1);
	a.overflow = true;
	http_pins_release2(&a, &b);
	assert_int_equal(a.n + b.n, 0);
	assert_false(a.overflow);
	assert_int_equal(rte_mempool_in_use_count(pool), 0);
	assert_int_equal(rte_mempool_in_use_count(pool2), 1);
	rte_pktmbuf_free(m[3]);
	assert_int_equal(rte_mempool_in_use_count(pool2), 0);
	assert_int_equal(rte_mempool_avail_count(pool), pool->size);
}

/* an indirect segment is detached: its direct one loses the reference */
static void test_release2_indirect(void **state)
{
	(void)state;
	struct http_pins a = {0}, b = {0};
	struct rte_mbuf *d = rte_pktmbuf_alloc(pool2);
	struct rte_mbuf *i = rte_pktmbuf_alloc(pool);
	assert_non_null(d);
	assert_non_null(i);
	rte_pktmbuf_attach(i, d);
	assert_int_equal(rte_mbuf_refcnt_read(d), 2);
	http_pins_add(&a, i);
	rte_pktmbuf_free_seg(i);
	pinned(&b, pool);
	http_pins_release2(&a, &b);
	assert_int_equal(rte_mempool_in_use_count(pool), 0);
	assert_int_equal(rte_mbuf_refcnt_read(d), 1);
	rte_pktmbuf_free(d);
	assert_int_equal(rte_mempool_in_use_count(pool2), 0);
}

/* a segment of @p len bytes from @p mp */
static struct rte_mbuf *seg(struct rte_mempool *mp, uint16_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
	assert_non_null(m);
	assert_non_null(rte_pktmbuf_append(m, len));
	return m;
}

/* http_in_free (inline, http_io.h): an empty input stays empty; one
 * segment, which a head's pins may share (the fused END's segment that
 * http_h1_reuse lets go), loses the input's reference only; a chain goes
 * whole (http_in_free_chain); the input is empty after each. */
static void test_in_free(void **state)
{
	(void)state;
	struct http_in in = {0};
	http_in_free(&in);
	assert_null(in.head);

	struct http_pins p = {0};
	struct rte_mbuf *m = seg(pool, 100);
	http_in_append(&in, m);
	http_pins_add(&p, m);
	in.off = 40;
	in.bytes = 60;
	http_in_free(&in);
	assert_null(in.head);
	assert_null(in.tail);
	assert_int_equal(in.off, 0);
	assert_int_equal(in.bytes, 0);
	assert_int_equal(rte_mbuf_refcnt_read(m), 1); /* the pins' */
	assert_int_equal(rte_mempool_in_use_count(pool), 1);
	http_pins_release(&p);
	assert_int_equal(rte_mempool_in_use_count(pool), 0);

	/* segments too large to join the tail: three in the input */
	struct rte_mbuf *a = seg(pool, 600), *b = seg(pool, 600), *c = seg(pool2, 600);
	a->next = b;
	b->next = c;
	a->nb_segs = 3;
	a->pkt_len = 1800;
	http_in_append(&in, a);
	assert_ptr_equal(in.head, a);
	assert_ptr_equal(in.tail, c);
	assert_int_equal(in.bytes, 1800);
	http_in_free(&in);
	assert_null(in.head);
	assert_null(in.tail);
	assert_int_equal(in.bytes, 0);
	assert_int_equal(rte_mempool_in_use_count(pool), 0);
	assert_int_equal(rte_mempool_in_use_count(pool2), 0);
}

int main(void)
{
	char prefix[64];
	snprintf(prefix, sizeof(prefix), "--file-prefix=arn-t-hio-%d", (int)getpid());
	char *argv[] = {
	    "test_http_io", "--no-huge", "--no-pci",	   "--no-shconf",	"-m",	"64",
	    "-l",	    "0",	 "--no-telemetry", "--log-level=error", prefix, NULL};
	if (rte_eal_init((int)(sizeof(argv) / sizeof(argv[0])) - 1, argv) < 0) {
		fprintf(stderr, "EAL init failed\n");
		return 1;
	}
	pool = rte_pktmbuf_pool_create("arn_t_hio", 63, 0, 0, 2176, 0);
	pool2 = rte_pktmbuf_pool_create("arn_t_hio2", 63, 0, 0, 2176, 0);
	if (!pool || !pool2) {
		fprintf(stderr, "no mbuf pool\n");
		return 1;
	}
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_release2_usual),
	    cmocka_unit_test(test_release2_shared),
	    cmocka_unit_test(test_release2_two_pools),
	    cmocka_unit_test(test_release2_indirect),
	    cmocka_unit_test(test_in_free),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	rte_eal_cleanup();
	return rc;
}
