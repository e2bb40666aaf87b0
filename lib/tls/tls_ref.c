/*
 * A context's references, at the bottom of lib/tls: connections
 * (tls_conn.c), the SNI table (tls_names.c) and the configuration's
 * runtime take and drop them on any lcore; the last one queues the
 * context for the control lcore, which frees it in arn_tls_reclaim()
 * (tls_ctx.c), since a worker never frees what OpenSSL and the control
 * lcore built.
 */
#include "tls_int.h"

static struct arn_tls_ctx *reclaim_head; /* atomic: a Treiber stack */

void arn_tls_ctx_ref(struct arn_tls_ctx *x)
{
	__atomic_fetch_add(&x->refs, 1, __ATOMIC_RELAXED);
}

void arn_tls_ctx_unref(struct arn_tls_ctx *x)
{
	if (!x || __atomic_sub_fetch(&x->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	/* the last reference: queue it for the control lcore (a worker
	 * never frees what OpenSSL and the control lcore built) */
	struct arn_tls_ctx *h = __atomic_load_n(&reclaim_head, __ATOMIC_RELAXED);
	do {
		x->reclaim_next = h;
	} while (!__atomic_compare_exchange_n(&reclaim_head, &h, x, true, __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
}

struct arn_tls_ctx *tls_reclaim_take(void)
{
	return __atomic_exchange_n(&reclaim_head, NULL, __ATOMIC_ACQUIRE);
}
