/*
 * The lifetime of the model's objects (arn_config_model.h): the control
 * lcore's references, a worker's last unpin, and the stack that carries
 * such objects back to the control lcore to be freed. An object lives in
 * its own pool (pool.h); freeing it is freeing that pool.
 *
 * Below the converters and the store: both use it, it uses neither.
 */
#include "arn_config_model.h"
#include "pool.h"

static void obj_free(struct arn_cfg_obj *o)
{
	arn_pool_free(o->pool); /* the object lives in its own pool */
}

void arn_cfg_obj_unref(struct arn_cfg_obj *o)
{
	if (o && __atomic_sub_fetch(&o->refs, 1, __ATOMIC_ACQ_REL) == 0)
		obj_free(o);
}

void arn_cfg_obj_last_unpin(struct arn_cfg_obj *o)
{
	/* A worker dropped the last reference: hand the object to the control
	 * lcore (Treiber stack; the consumer takes the whole list at once, so
	 * there is no ABA problem). */
	struct arn_cfg_reclaim *r = o->reclaim;
	if (!r) {
		obj_free(o); /* objects made outside a store (tests) */
		return;
	}
	struct arn_cfg_obj *head = __atomic_load_n(&r->head, __ATOMIC_RELAXED);
	do {
		o->reclaim_next = head;
	} while (!__atomic_compare_exchange_n(&r->head, &head, o, true, __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
}

void arn_cfg_reclaim_drain(struct arn_cfg_reclaim *r)
{
	struct arn_cfg_obj *o = __atomic_exchange_n(&r->head, NULL, __ATOMIC_ACQUIRE);
	while (o) {
		struct arn_cfg_obj *n = o->reclaim_next;
		obj_free(o);
		o = n;
	}
}
