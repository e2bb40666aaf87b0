/*
 * The configuration store on the admin endpoint (docs/admin.md): what
 * lib/admin shows operators of lib/config's store, through its own
 * registries (arn_admin.h).
 *
 *   /config_dump  ClustersConfigDump, EndpointsConfigDump (?include_eds),
 *                 ListenersConfigDump, RoutesConfigDump, SecretsConfigDump in
 *                 Envoy's shape, then Arion's arion.admin.v3.ToolSetsConfigDump
 *                 (TDS) in the same shape, each resource with version_info,
 *                 last_updated and, after a refused update, error_state
 *   /ready        condition "config": the initial xDS fetch (first Cluster
 *                 and Listener responses or their initial_fetch_timeout) and
 *                 nothing from it still warming (arn_config_ready())
 *   /clusters     the current generation's clusters and their endpoints,
 *                 per-host counters from arn_admin_set_host_stats()
 *   /listeners    the current generation's listeners
 *   /stats        config.* (arn_config_stats.def)
 *
 * Control lcore only. One instance per process (lib/admin's registries are
 * process-wide).
 */
#ifndef ARN_ADMIN_CONFIG_H
#define ARN_ADMIN_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "arn_sb.h"

struct arn_config_store;
struct arn_admin_config;
struct arn_admin_host_info;

/**
 * Register everything above for store @p s (borrowed: it must outlive the
 * returned object). Works whether or not an admin server runs.
 * @return the registration (arn_admin_config_stop()), or NULL with the
 *   reason logged (-ENOMEM, or -EEXIST: another instance is registered).
 */
struct arn_admin_config *arn_admin_config_start(struct arn_config_store *s);

/** Unregister everything. NULL is a no-op. */
void arn_admin_config_stop(struct arn_admin_config *a);

/**
 * One /config_dump section for @p type_name ("envoy.admin.v3.ClustersConfigDump",
 * "...EndpointsConfigDump", "...ListenersConfigDump", "...RoutesConfigDump",
 * "...SecretsConfigDump", "arion.admin.v3.ToolSetsConfigDump") as one JSON
 * object appended to @p out; what the
 * registered providers call, exposed for tests.
 * @return 0, -EINVAL (unknown type name), -ENOMEM.
 */
int arn_admin_config_dump(struct arn_config_store *s, const char *type_name, struct arn_sb *out);

/**
 * Fills the per-host counters of one /clusters host (cx_total, cx_active,
 * rq_total, rq_active, rq_success, rq_error, rq_timeout, cx_connect_fail)
 * of endpoint @p addr:@p port (IPv4, host order) of cluster @p cluster;
 * leaves @p h's other fields alone. Control lcore.
 */
typedef void (*arn_admin_host_stats_fn)(void *arg, const char *cluster, uint32_t addr,
					uint16_t port, struct arn_admin_host_info *h);

/**
 * Who keeps per-host counters: lib/http, which the application plugs in
 * here (app_http.c) since lib/admin does not call the data plane. Without
 * one the counters read 0. Process-wide; NULL unregisters. @p arg is
 * borrowed until unregistered.
 */
void arn_admin_set_host_stats(arn_admin_host_stats_fn fn, void *arg);

/**
 * The /ready condition: true when arn_config_ready(@p s); otherwise false
 * with the reason appended to @p why (what is warming, or that the first
 * Cluster/Listener responses have not arrived).
 */
bool arn_admin_config_ready(struct arn_config_store *s, struct arn_sb *why);

#endif
