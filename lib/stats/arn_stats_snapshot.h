/*
 * Reading statistics: a snapshot of every stat (scopes, pulls) summed over
 * slots, which lib/admin's /stats, /stats?format=json and /stats/prometheus
 * writers format. Control lcore only.
 */
#ifndef ARN_STATS_SNAPSHOT_H
#define ARN_STATS_SNAPSHOT_H

#include "arn_stats.h"

struct arn_stat_sample {
	char *strs;	      /* owns the strings below (one allocation) */
	const char *name;     /* full dotted name: "cluster.web.upstream_rq_total" */
	const char *family;   /* "cluster" */
	const char *stat;     /* "upstream_rq_total" */
	const char *tag_name; /* NULL if untagged */
	const char *tag_value;
	/* arn_stats_emit_sub(): a second tag, and the Prometheus family and stat
	 * without the tag values ("cluster.endpoint", "rq_total"); owned by strs2 */
	char *strs2;
	const char *tag2_name, *tag2_value;
	const char *prom_family, *prom_stat;
	const char *help; /* static, may be NULL */
	enum arn_stat_kind kind;
	uint64_t counter;
	int64_t gauge;
	struct arn_stats_hist hist;
};

struct arn_stats_snapshot {
	struct arn_stat_sample *v;
	size_t n, cap;
	bool oom;
};

/** Collect every stat, sorted by name. @return 0 or -ENOMEM (partial). */
int arn_stats_snapshot_take(struct arn_stats_snapshot *s);
void arn_stats_snapshot_free(struct arn_stats_snapshot *s);

/** Quantile @p q (0..1) of a summed histogram in ms, interpolated in its bucket; NAN if empty. */
double arn_stats_hist_quantile(const struct arn_stats_hist *h, double q);

/** Free every scope and pull (tests; no reference may be held). */
void arn_stats_reset_for_tests(void);

#endif
