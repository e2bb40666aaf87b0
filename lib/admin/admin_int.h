/*
 * lib/admin's private interfaces between its files (registries, endpoints,
 * server, access logs). Control lcore only.
 */
#ifndef ARN_ADMIN_INT_H
#define ARN_ADMIN_INT_H

#include "arn_admin.h"

/* A registered handler (built-ins are registered the same way). */
struct arn_admin_handler {
	char *path;
	unsigned methods;
	char *help;
	arn_admin_handler_fn fn;
	void *arg;
	struct arn_admin_handler *next;
};

/** Handlers in path order (for the endpoint list). */
const struct arn_admin_handler *arn_admin_handlers_(void);
const struct arn_admin_handler *arn_admin_handler_find_(const char *path);

/** Register the built-in endpoints (idempotent). */
void arn_admin_builtins_register_(void);

/** The /config_dump document (unfiltered) into @p out. */
int arn_admin_config_dump_build_(struct arn_sb *out, bool include_eds);

/** Walk the /clusters and /listeners providers, appending Envoy's text or JSON form. */
void arn_admin_clusters_write_(struct arn_sb *out, bool json);
void arn_admin_listeners_write_(struct arn_sb *out, bool json);

/** Set by arn_admin_start()/stop(): PRE_INITIALIZING until then. */
void arn_admin_set_started_(bool started);

/** Resize access-log rings for @p n workers (arn_stats_set_workers). */
int arn_access_log_set_workers_(unsigned n);

/** Free every registration (tests). */
void arn_admin_reset_for_tests(void);

#endif
