/*
 * Token buckets as Envoy's local rate limiters run them, counted in whole
 * tokens and refilled by the TSC: a bucket starts full (max_tokens), and
 * every fill_interval after its first use it gains tokens_per_fill, up to
 * max_tokens. Fills are discrete (the k-th fill happens at epoch + k *
 * interval), as Envoy's fill timer makes them, so a test that controls the
 * clock counts exactly how many of N requests pass.
 *
 * The state (struct arn_cfg_bucket_state) may be shared by every worker
 * (Envoy's per-filter buckets) or private to a connection
 * (local_rate_limit_per_downstream_connection): it is changed with
 * compare-and-swap only, no lock. Its encoding:
 *   epoch1: the tick of the first use + 1 (0: never used);
 *   word:   (fills applied, mod 2^32) << 32 | tokens taken (the deficit
 *           below max_tokens), so that the all-zero state is a full bucket.
 * 2^32 fills of at least 50 ms are 6.8 years: a bucket idle that long may
 * see too few fills, never too many.
 */
#ifndef ARN_TBUCKET_H
#define ARN_TBUCKET_H

#include <stdbool.h>
#include <stdint.h>

#include "arn_config_model.h"

/** A bucket's configuration in ticks (per worker, computed once). */
struct arn_tbucket {
	uint64_t interval; /* ticks per fill, >= 1 */
	uint32_t max_tokens;
	uint32_t per_fill;
};

/**
 * @p cfg at @p hz ticks per second (rte_get_tsc_hz() on workers).
 * @return 0, or -EINVAL if @p cfg is not a valid bucket (max_tokens or
 *   tokens_per_fill 0, or an interval under one tick).
 */
int arn_tbucket_init(struct arn_tbucket *b, const struct arn_cfg_token_bucket *cfg, uint64_t hz);

/**
 * Take @p n tokens at tick @p now, after applying the fills due. Ticks
 * before the bucket's epoch (another worker's TSC slightly behind) count
 * as the epoch.
 * @return true if they were taken, false (nothing taken) if fewer are left.
 */
bool arn_tbucket_take(const struct arn_tbucket *b, struct arn_cfg_bucket_state *st, uint64_t now,
		      uint32_t n);

/**
 * The tokens left at @p now (fills due included, nothing taken): Envoy's
 * x-ratelimit-remaining.
 */
uint32_t arn_tbucket_remaining(const struct arn_tbucket *b, const struct arn_cfg_bucket_state *st,
			       uint64_t now);

/**
 * Ticks from @p now to the next fill (Envoy's x-ratelimit-reset, in the
 * caller's units): the whole interval for a bucket never used.
 */
uint64_t arn_tbucket_next_fill(const struct arn_tbucket *b, const struct arn_cfg_bucket_state *st,
			       uint64_t now);

#endif
