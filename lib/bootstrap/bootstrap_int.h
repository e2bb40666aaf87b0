/* Private to lib/bootstrap. */
#ifndef ARN_BOOTSTRAP_INT_H
#define ARN_BOOTSTRAP_INT_H

#include <yaml.h>

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

/** "FILE:LINE:COL: PATH: msg" into c->err (line of the node at PATH). */
void arn_bs_error(struct arn_bs_ctx *c, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void arn_bs_warn(struct arn_bs_ctx *c, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void arn_bs_report(struct arn_bs_ctx *c, struct arn_sb *to, const char *path, const char *msg);

/** Parse `dataplane:`; returns the number of errors reported. */
int arn_dataplane_parse(struct arn_bs_ctx *c, yaml_node_t *node, struct arn_dataplane *dp);
void arn_dataplane_defaults(struct arn_dataplane *dp);
void arn_dataplane_free(struct arn_dataplane *dp);

#endif
