/*
 * The configuration file: one YAML document whose `envoy_bootstrap:` key is a
 * plain Envoy v3 Bootstrap and whose `dataplane:` key describes Arion's DPDK
 * side (docs/configuration.md).
 *
 * The Envoy part goes YAML -> JSON -> envoy.config.bootstrap.v3.Bootstrap
 * with upb's JSON decoder, so every field means what it means in Envoy;
 * unknown fields, wrong kinds and unsupported features are refused. Errors
 * are lines of the form
 *
 *     FILE:LINE:COL: FIELD.PATH: what is wrong (and what to do)
 *
 * Everything here runs on the control lcore at start (or in --mode
 * validate); nothing here is used by workers.
 */
#ifndef ARN_BOOTSTRAP_H
#define ARN_BOOTSTRAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "upb/upb.h"

#include "arn_dataplane.h"
#include "arn_sb.h"

struct envoy_config_bootstrap_v3_Bootstrap;

/**
 * Arion's `xds:` section: how the xDS client may reach its control plane
 * (docs/configuration.md).
 */
struct arn_bootstrap_xds {
	bool present;	      /* the file had an xds: key */
	bool allow_plaintext; /* xds.allow_plaintext: plaintext to a non-loopback control plane */
};

/** Command-line values that win over the file (X7). NULL: not given. */
/* A listener's connection limit: the runtime key
 * envoy.resource_limits.listener.<listener>.connection_limit */
struct arn_bootstrap_cx_limit {
	char *listener;
	uint64_t max;
};

struct arn_bootstrap_overrides {
	const char *service_node;
	const char *service_cluster;
};

struct arn_bootstrap {
	char *file;                 /* as given, for messages */
	upb_Arena *arena;           /* owns pb */
	const struct envoy_config_bootstrap_v3_Bootstrap *pb;
	char *node_id;              /* after overrides; "" if none */
	char *node_cluster;
	bool ads;                   /* dynamic_resources.ads_config is set */
	char **xds_clusters;        /* ads_config.grpc_services[*].envoy_grpc.cluster_name, in order (X9) */
	size_t n_xds_clusters;
	bool has_admin;
	char *admin_address;        /* admin.address.socket_address */
	uint16_t admin_port;
	struct arn_dataplane dp;
	struct arn_bootstrap_xds xds;
	/* downstream connection limits (docs/configuration.md): the global
	 * one (the overload manager's global_downstream_max_connections
	 * monitor, else the runtime key overload.global_downstream_max_connections)
	 * and the listeners' (runtime keys, the last layer's value of each) */
	bool has_global_cx_limit;
	uint64_t global_cx_limit;
	struct arn_bootstrap_cx_limit *cx_limits;
	size_t n_cx_limits;
	struct arn_sb warnings;     /* one line per warning, already formatted */
	void *yaml;                 /* the parsed document, for arn_bootstrap_where() */
};

/**
 * Load and check a configuration file.
 *
 * @param path  file to read
 * @param ov    command-line overrides, or NULL
 * @param out   receives the result (caller frees with arn_bootstrap_free)
 * @param err   receives one line per error found
 * @return 0; -EINVAL if the file is not a valid configuration (details in
 *   @p err); -ENOENT, -EACCES, ... if it cannot be read; -ENOMEM.
 */
int arn_bootstrap_load_file(const char *path, const struct arn_bootstrap_overrides *ov,
			    struct arn_bootstrap **out, struct arn_sb *err);

/** As arn_bootstrap_load_file(), from memory; @p name is used in messages. */
int arn_bootstrap_load_buf(const char *name, const char *buf, size_t len,
			   const struct arn_bootstrap_overrides *ov, struct arn_bootstrap **out,
			   struct arn_sb *err);

void arn_bootstrap_free(struct arn_bootstrap *b);

/**
 * Where a field of the file is: @p path as in error messages, starting with
 * "envoy_bootstrap." or "dataplane.". Sets 1-based line and column of the
 * deepest node found on that path.
 * @return 0, or -ENOENT if not even the first component exists.
 */
int arn_bootstrap_where(const struct arn_bootstrap *b, const char *path, size_t *line,
			size_t *col);

/**
 * Where static_resources' listeners first name cluster @p cluster (a
 * route's `cluster:`, else a weighted cluster's `name:`), for messages about
 * a reference rather than a field. Sets 1-based line and column.
 * @return 0, or -ENOENT.
 */
int arn_bootstrap_where_cluster_ref(const struct arn_bootstrap *b, const char *cluster,
				    size_t *line, size_t *col);

struct envoy_config_core_v3_ConfigSource;

/**
 * Arion receives every resource on the one ADS stream that the bootstrap's
 * ads_config opens, so a config source, wherever it appears
 * (dynamic_resources' lds_config and cds_config, X10; a resource's RDS or
 * EDS source, X11, X12), must be absent or exactly `ads: {}`.
 * @return NULL if @p cs is; else why not, a static sentence to which the
 *   caller appends the rule (" (X10)").
 */
const char *arn_bootstrap_ads_only(const struct envoy_config_core_v3_ConfigSource *cs);

/**
 * Append a human-readable summary (node, xDS target, admin, static
 * resources, data plane) to @p out, as `arion --mode validate` prints it.
 */
void arn_bootstrap_summary(const struct arn_bootstrap *b, struct arn_sb *out);

#endif
