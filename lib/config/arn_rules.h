/*
 * Arion's xDS contract rules that can be checked on a single decoded
 * resource, wherever it comes from (static_resources or the ADS stream):
 *
 *   X11  an HCM's rds.config_source must be `ads: {}`
 *   X12  an EDS cluster has no load_assignment and no
 *        eds_cluster_config.service_name; its eds_config is `ads: {}`
 *   X13  TLS contexts name secrets only; an sds_config source is refused
 *
 * Each violation is reported through @p report with a field path relative
 * to the resource (prefixed by @p path) and a message that names the rule.
 * The functions return the number of violations reported.
 *
 * The converters check every resource they convert; arn_rules_static()
 * checks the bootstrap's static_resources as soon as the file is loaded,
 * so that an invalid file is refused (exit 1) before anything starts.
 * Whether a config source is `ads: {}` is the bootstrap's to say
 * (arn_bootstrap_ads_only(): it checks its own lds_config and cds_config
 * the same way, X10).
 */
#ifndef ARN_RULES_H
#define ARN_RULES_H

#include <stddef.h>

#include "upb/msg.h"
#include "upb/upb.h"

#include "arn_sb.h"

struct arn_bootstrap;
struct envoy_config_cluster_v3_Cluster;
struct envoy_config_listener_v3_Listener;
struct envoy_config_core_v3_ConfigSource;
struct envoy_extensions_transport_sockets_tls_v3_CommonTlsContext;
struct envoy_extensions_filters_network_http_connection_manager_v3_HttpConnectionManager;

/** Called once per violation; @p path and @p msg are valid during the call. */
typedef void (*arn_rule_report_fn)(void *ctx, const char *path, const char *msg);

struct arn_rule_sink {
	arn_rule_report_fn fn;
	void *ctx;
};

/** Report through @p sink with a printf-style message. */
void arn_rule_report(const struct arn_rule_sink *sink, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/**
 * Is @p cs absent or exactly `ads: {}`? If not, report "@p path: @p what
 * must be `ads: {}`" naming @p rule.
 */
int arn_rules_ads_only(const struct envoy_config_core_v3_ConfigSource *cs, const char *path,
		       const char *rule, const struct arn_rule_sink *sink);

/** X12 (and X13 for its transport socket). */
int arn_rules_cluster(const struct envoy_config_cluster_v3_Cluster *c, const char *path,
		      upb_Arena *arena, const struct arn_rule_sink *sink);

/** X11 for every HCM in its filter chains, X13 for its transport sockets. */
int arn_rules_listener(const struct envoy_config_listener_v3_Listener *l, const char *path,
		       upb_Arena *arena, const struct arn_rule_sink *sink);

/** X11 on one HttpConnectionManager. */
int arn_rules_hcm(
    const struct envoy_extensions_filters_network_http_connection_manager_v3_HttpConnectionManager
	*hcm,
    const char *path, const struct arn_rule_sink *sink);

/** X13 on a CommonTlsContext. */
int arn_rules_common_tls(const struct envoy_extensions_transport_sockets_tls_v3_CommonTlsContext *t,
			 const char *path, const struct arn_rule_sink *sink);

/**
 * X13 on a transport_socket's typed_config (DownstreamTlsContext or
 * UpstreamTlsContext; other types are not this function's business).
 */
int arn_rules_transport_socket(const upb_Message *any, const char *path, upb_Arena *arena,
			       const struct arn_rule_sink *sink);

/**
 * X11-X13 on every static listener and cluster of @p b (loaded by
 * arn_bootstrap_load_file()), one line per violation appended to @p err as
 * the loader writes its errors: "FILE:LINE:COL: FIELD.PATH: Cluster 'api':
 * reason".
 * @return 0, -EINVAL if any rule is broken, -ENOMEM.
 */
int arn_rules_static(const struct arn_bootstrap *b, struct arn_sb *err);

#endif
