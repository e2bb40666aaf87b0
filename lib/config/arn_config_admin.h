/*
 * lib/config on the admin endpoint (docs/admin.md): what the configuration
 * store shows operators through lib/admin's registries.
 *
 *   /config_dump  ClustersConfigDump, EndpointsConfigDump (?include_eds),
 *                 ListenersConfigDump, RoutesConfigDump, SecretsConfigDump in
 *                 Envoy's shape, each resource with version_info,
 *                 last_updated and, after a refused update, error_state
 *   /ready        condition "config": the initial xDS fetch (first Cluster
 *                 and Listener responses or their initial_fetch_timeout) and
 *                 nothing from it still warming (arn_config_ready())
 *   /clusters     the current generation's clusters and their endpoints,
 *                 per-host counters from arn_config_admin_set_host_stats()
 *   /listeners    the current generation's listeners
 *   /stats        config.* (arn_config_stats.def)
 *   deferred free lib/admin frees stats slabs through the store's RCU
 *                 (arn_admin_set_deferred_free): after every worker
 *                 registered on arn_config_rcu() passed a quiescent state
 *
 * Control lcore only. One instance per process (lib/admin's registries and
 * its deferred-free hook are process-wide).
 */
#ifndef ARN_CONFIG_ADMIN_H
#define ARN_CONFIG_ADMIN_H

#include <stdbool.h>
#include <stdint.h>

#include "arn_sb.h"

struct arn_config_store;
struct arn_config_admin;

/**
 * Register everything above for store @p s (borrowed: it must outlive the
 * returned object). Works whether or not an admin server runs.
 * @return the registration (arn_config_admin_stop()), or NULL with the
 *   reason logged (-ENOMEM, or -EEXIST: another instance is registered).
 */
struct arn_config_admin *arn_config_admin_start(struct arn_config_store *s);

/**
 * Run the deferred frees whose grace period ended. Cheap; call from the
 * control lcore's loop (app_config's poll hook).
 */
void arn_config_admin_poll(struct arn_config_admin *a);

/**
 * Unregister everything, run every deferred free still pending and restore
 * lib/admin's immediate free. Workers must be stopped (or unregistered from
 * the store's RCU). NULL is a no-op.
 */
void arn_config_admin_stop(struct arn_config_admin *a);

/**
 * One /config_dump section for @p type_name ("envoy.admin.v3.ClustersConfigDump",
 * "...EndpointsConfigDump", "...ListenersConfigDump", "...RoutesConfigDump",
 * "...SecretsConfigDump") as one JSON object appended to @p out; what the
 * registered providers call, exposed for tests.
 * @return 0, -EINVAL (unknown type name), -ENOMEM.
 */
int arn_config_admin_dump(struct arn_config_store *s, const char *type_name, struct arn_sb *out);

struct arn_admin_host_info;

/**
 * Fills the per-host counters of one /clusters host (cx_total, cx_active,
 * rq_total, rq_active, rq_success, rq_error, rq_timeout, cx_connect_fail)
 * of endpoint @p addr:@p port (IPv4, host order) of cluster @p cluster;
 * leaves @p h's other fields alone. Control lcore.
 */
typedef void (*arn_config_host_stats_fn)(void *arg, const char *cluster, uint32_t addr,
					 uint16_t port, struct arn_admin_host_info *h);

/**
 * Who keeps per-host counters: lib/http, which comes after lib/config, so it
 * plugs in here (arn_http_start) rather than being called. Without one the
 * counters read 0. Process-wide, like the rest of this header; NULL
 * unregisters. @p arg is borrowed until unregistered.
 */
void arn_config_admin_set_host_stats(arn_config_host_stats_fn fn, void *arg);

/**
 * The /ready condition: true when arn_config_ready(@p s); otherwise false
 * with the reason appended to @p why (what is warming, or that the first
 * Cluster/Listener responses have not arrived).
 */
bool arn_config_admin_ready(struct arn_config_store *s, struct arn_sb *why);

#endif
