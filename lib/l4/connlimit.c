/*
 * connection_limit's shared count (arn_connlimit.h).
 */
#include "arn_connlimit.h"

bool arn_connlimit_acquire(const struct arn_cfg_connection_limit *cl)
{
	if (!cl->enabled)
		return true;
	uint64_t n = __atomic_load_n(cl->count, __ATOMIC_RELAXED);
	do {
		if (n >= cl->max_connections)
			return false;
	} while (!__atomic_compare_exchange_n(cl->count, &n, n + 1, true, __ATOMIC_ACQ_REL,
					      __ATOMIC_RELAXED));
	return true;
}

void arn_connlimit_release(const struct arn_cfg_connection_limit *cl)
{
	if (cl->enabled)
		__atomic_fetch_sub(cl->count, 1, __ATOMIC_ACQ_REL);
}

uint64_t arn_connlimit_active(const struct arn_cfg_connection_limit *cl)
{
	return __atomic_load_n(cl->count, __ATOMIC_RELAXED);
}
