/*
 * envoy.filters.network.connection_limit's count: the connections a filter
 * configuration has open, shared by every worker (the model's
 * arn_cfg_connection_limit.count), changed by compare-and-swap only.
 */
#ifndef ARN_CONNLIMIT_H
#define ARN_CONNLIMIT_H

#include <stdbool.h>

#include "arn_config_model.h"

/**
 * Count one more connection if fewer than max_connections are open (or
 * the filter is disabled: runtime_enabled false counts nothing).
 * @return true if the connection may go on; call arn_connlimit_release()
 *   when it closes. false: refuse it (after delay_ms), nothing counted.
 */
bool arn_connlimit_acquire(const struct arn_cfg_connection_limit *cl);

/** A connection arn_connlimit_acquire() let through has closed. */
void arn_connlimit_release(const struct arn_cfg_connection_limit *cl);

/** The connections counted now (Envoy's active_connections gauge). */
uint64_t arn_connlimit_active(const struct arn_cfg_connection_limit *cl);

#endif
