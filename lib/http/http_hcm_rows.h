/*
 * The generation sweep of a per-connection-manager filter's pulled stats
 * rows (lib/stats/arn_stats_rows.h), keyed (the manager's stat prefix,
 * the filter's own key): a row stays while the generation has a manager
 * of that prefix whose filters @p has says include that key. The
 * compressor's and the decompressor's rows are swept so.
 */
#ifndef ARN_HTTP_HCM_ROWS_H
#define ARN_HTTP_HCM_ROWS_H

#include <stdbool.h>
#include <stddef.h>

struct arn_cfg_gen;
struct arn_cfg_hcm;
struct arn_stats_rows_table;

/** Does manager @p h have a filter whose row key is @p key (@p len bytes)? */
typedef bool (*http_hcm_rows_has_fn)(const struct arn_cfg_hcm *h, const char *key, size_t len);

/** Sweep @p t against generation @p g (NULL: every row goes). */
void http_hcm_rows_sweep(struct arn_stats_rows_table *t, const struct arn_cfg_gen *g,
			 http_hcm_rows_has_fn has);

#endif
