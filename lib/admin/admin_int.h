/*
 * lib/admin's private interfaces between its files (registries, endpoints,
 * server, access logs). Control lcore only.
 */
#ifndef ARN_ADMIN_INT_H
#define ARN_ADMIN_INT_H

#include <signal.h>
#include <stdint.h>

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

/* What the built-in endpoints need from the process. */
struct arn_admin_ctx {
	const struct arn_bootstrap *bs; /* borrowed */
	int argc;
	char **argv;
	volatile sig_atomic_t *stop;
	void (*healthcheck_changed)(bool failed, void *arg);
	void *healthcheck_arg;
	int64_t start_ms;      /* wall clock at start */
	int64_t start_mono_ms; /* for uptime */
};

/** Register the built-in endpoints, the bootstrap section and server.* stats. */
int arn_admin_builtins_register_(struct arn_admin_ctx *ctx);
void arn_admin_builtins_unregister_(struct arn_admin_ctx *ctx);

/** The endpoint list (404 and / pages). */
void arn_admin_help_(struct arn_sb *out);

/** Wall clock, Unix ms. */
int64_t arn_admin_now_ms_(void);

/** The /config_dump document (unfiltered) into @p out. */
int arn_admin_config_dump_build_(struct arn_sb *out, bool include_eds);

/** Walk the /clusters and /listeners providers, appending Envoy's text or JSON form. */
void arn_admin_clusters_write_(struct arn_sb *out, bool json);
void arn_admin_listeners_write_(struct arn_sb *out, bool json);

/* /stats output (stats_out.c) of a snapshot (arn_stats_snapshot.h). A
 * filter is opaque; NULL keeps everything. */
struct arn_stats_snapshot;
struct arn_admin_stats_filter_opts {
	const char *regex; /* ?filter=, RE2 (arn_regex.h), searched anywhere in the name */
	const char *type;  /* ?type=Counters|Gauges|Histograms|All */
	bool used_only;	   /* ?usedonly */
};
/** @return 0, -EINVAL (reason in @p err), -ENOMEM. */
int arn_admin_stats_filter_init_(struct arn_admin_stats_filter_opts *o, struct arn_sb *err,
				 void **out);
void arn_admin_stats_filter_free_(void *f);
void arn_admin_stats_text_(const struct arn_stats_snapshot *s, void *f, struct arn_sb *out);
void arn_admin_stats_json_(const struct arn_stats_snapshot *s, void *f, struct arn_sb *out);
int arn_admin_stats_prometheus_(const struct arn_stats_snapshot *s, void *f, struct arn_sb *out);

/** Set by arn_admin_start()/stop(): PRE_INITIALIZING until then. */
void arn_admin_set_started_(bool started);

/** Free every registration (tests). */
void arn_admin_reset_for_tests(void);

#endif
