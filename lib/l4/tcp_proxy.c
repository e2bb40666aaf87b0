/*
 * tcp_proxy's configuration-only choices (arn_tcp_proxy.h).
 */
#include "arn_tcp_proxy.h"

const struct arn_cfg_ref *arn_tcp_proxy_cluster(const struct arn_cfg_tcp_proxy *tp, uint64_t random)
{
	if (tp->n_weighted == 0 || tp->total_weight == 0)
		return &tp->cluster;
	uint64_t r = random % tp->total_weight, acc = 0;
	for (size_t i = 0; i < tp->n_weighted; i++) {
		acc += tp->weighted[i].weight;
		if (r < acc)
			return &tp->weighted[i].cluster;
	}
	return &tp->weighted[tp->n_weighted - 1].cluster;
}
