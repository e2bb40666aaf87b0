/* Private to lib/bootstrap. */
#ifndef ARN_BOOTSTRAP_INT_H
#define ARN_BOOTSTRAP_INT_H

#include <stdbool.h>
#include <yaml.h>

#include "upb/def.h"
#include "upb/msg.h"
#include "upb/upb.h"

#include "arn_bootstrap.h"
#include "arn_sb.h"

/* Checking context: errors and warnings point into the YAML document. */
struct arn_bs_ctx {
	const char *file;
	yaml_document_t *doc;
	struct arn_sb *err;
	struct arn_sb *warnings;
	upb_Arena *arena;
	int n_errors;
};

/* ---- report.c: every check reports through these ---- */

/** "FILE:LINE:COL: PATH: msg" into c->err (line of the node at PATH). */
void arn_bs_error(struct arn_bs_ctx *c, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void arn_bs_warn(struct arn_bs_ctx *c, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void arn_bs_report(struct arn_bs_ctx *c, struct arn_sb *to, const char *path, const char *msg);

/**
 * Report every field set in @p msg (of type @p m, at @p path) that is not in
 * @p allowed (NULL-terminated) as "not supported by Arion[: why]".
 */
void arn_bs_only_fields(struct arn_bs_ctx *c, const upb_Message *msg, const upb_MessageDef *m,
			const char *path, const char *const *allowed, const char *why);

/** Parse `dataplane:`; returns the number of errors reported. */
int arn_dataplane_parse(struct arn_bs_ctx *c, yaml_node_t *node, struct arn_dataplane *dp);
void arn_dataplane_defaults(struct arn_dataplane *dp);
void arn_dataplane_free(struct arn_dataplane *dp);

/** Parse `xds:`; returns the number of errors reported. */
int arn_xds_section_parse(struct arn_bs_ctx *c, yaml_node_t *node, struct arn_bootstrap_xds *x);

/* ---- xds_channel.c: the xDS cluster's transport ---- */

struct envoy_config_cluster_v3_Cluster;
struct envoy_extensions_transport_sockets_tls_v3_Secret;

/** Is @p host an IPv4/IPv6 loopback literal (127/8, ::1, ::ffff:127/104)? */
bool arn_bs_is_loopback(const char *host);

/** static_resources.secrets entry named @p name (its index in *@p index), or NULL. */
const struct envoy_extensions_transport_sockets_tls_v3_Secret *
arn_bs_static_secret(const struct envoy_config_bootstrap_v3_Bootstrap *bs, upb_StringView name,
		     size_t *index);

/**
 * Check the transport of xDS cluster @p cl (named @p name, at @p path): the
 * UpstreamTlsContext fields the xDS channel honours, its secrets in
 * static_resources.secrets, and no plaintext to a non-loopback address
 * unless b->xds.allow_plaintext.
 */
void arn_bs_check_xds_channel(struct arn_bs_ctx *c, const struct arn_bootstrap *b,
			      const struct envoy_config_cluster_v3_Cluster *cl, const char *path,
			      upb_StringView name);

/** "plaintext", "TLS" or "mTLS", for the summary. */
const char *arn_bs_xds_channel_kind(const struct envoy_config_cluster_v3_Cluster *cl);

#endif
