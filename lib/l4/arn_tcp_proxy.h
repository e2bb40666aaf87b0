/*
 * tcp_proxy's choices that depend on configuration only (the relaying
 * itself is the data path's): the upstream cluster for a connection.
 */
#ifndef ARN_TCP_PROXY_H
#define ARN_TCP_PROXY_H

#include <stdint.h>

#include "arn_config_model.h"

/**
 * The cluster @p tp sends a new connection to: its cluster, or among its
 * weighted_clusters the one @p random falls in (random % total_weight,
 * clusters in order, as Envoy's WeightedClusterEntry walk).
 * @return the name (borrowed from @p tp; resolve it in the generation).
 */
const struct arn_cfg_ref *arn_tcp_proxy_cluster(const struct arn_cfg_tcp_proxy *tp,
						uint64_t random);

#endif
