/*
 * Token buckets (arn_tbucket.h): one 64-bit word per bucket, changed by
 * compare-and-swap, so workers share a bucket without a lock.
 */
#include <errno.h>

#include "arn_tbucket.h"

int arn_tbucket_init(struct arn_tbucket *b, const struct arn_cfg_token_bucket *cfg, uint64_t hz)
{
	if (cfg->max_tokens == 0 || cfg->tokens_per_fill == 0 || cfg->fill_interval_ms == 0)
		return -EINVAL;
	/* ms * hz / 1000 without overflow for any 32-bit ms and a 64-bit hz
	 * below 2^54 (18 PHz) */
	uint64_t t = (uint64_t)cfg->fill_interval_ms * (hz / 1000) +
		     (uint64_t)cfg->fill_interval_ms * (hz % 1000) / 1000;
	if (t == 0)
		return -EINVAL;
	b->interval = t;
	b->max_tokens = cfg->max_tokens;
	b->per_fill = cfg->tokens_per_fill;
	return 0;
}

/* The epoch, set by the first caller (its own now if it wins the race). */
static uint64_t epoch(struct arn_cfg_bucket_state *st, uint64_t now)
{
	uint64_t e = __atomic_load_n(&st->epoch1, __ATOMIC_ACQUIRE);
	if (e)
		return e - 1;
	uint64_t want = now + 1 ? now + 1 : 1;
	if (__atomic_compare_exchange_n(&st->epoch1, &e, want, false, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE))
		return want - 1;
	return e - 1;
}

/* The fill number due at @p now (mod 2^32). */
static uint32_t due(const struct arn_tbucket *b, uint64_t ep, uint64_t now)
{
	return now > ep ? (uint32_t)((now - ep) / b->interval) : 0;
}

/* @p w with the fills due at @p fill applied: its deficit after them. */
static uint64_t refill(const struct arn_tbucket *b, uint64_t w, uint32_t fill)
{
	uint32_t done = (uint32_t)(w >> 32), deficit = (uint32_t)w;
	uint32_t elapsed = fill - done; /* mod 2^32 */
	uint64_t add = (uint64_t)elapsed * b->per_fill;
	uint32_t d = add >= deficit ? 0 : deficit - (uint32_t)add;
	if (d > b->max_tokens) /* a deficit from an older, larger bucket */
		d = b->max_tokens;
	return (uint64_t)fill << 32 | d;
}

bool arn_tbucket_take(const struct arn_tbucket *b, struct arn_cfg_bucket_state *st, uint64_t now,
		      uint32_t n)
{
	uint32_t fill = due(b, epoch(st, now), now);
	uint64_t w = __atomic_load_n(&st->word, __ATOMIC_RELAXED);
	for (;;) {
		/* another worker may have applied a later fill than ours (its
		 * TSC a little ahead): never count fills backwards */
		if ((uint32_t)(w >> 32) - fill < 0x80000000u)
			fill = (uint32_t)(w >> 32);
		uint64_t r = refill(b, w, fill);
		uint32_t d = (uint32_t)r;
		if (n > b->max_tokens - d)
			return false;
		uint64_t nw = (r & ~0xffffffffull) | (d + n);
		if (__atomic_compare_exchange_n(&st->word, &w, nw, true, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED))
			return true;
		/* w now holds the current word: try again from it */
	}
}

uint32_t arn_tbucket_remaining(const struct arn_tbucket *b, const struct arn_cfg_bucket_state *st,
			       uint64_t now)
{
	uint64_t e = __atomic_load_n(&st->epoch1, __ATOMIC_ACQUIRE);
	if (!e)
		return b->max_tokens;
	uint64_t w = __atomic_load_n(&st->word, __ATOMIC_RELAXED);
	uint32_t fill = due(b, e - 1, now);
	if ((uint32_t)(w >> 32) - fill < 0x80000000u)
		fill = (uint32_t)(w >> 32);
	return b->max_tokens - (uint32_t)refill(b, w, fill);
}

uint64_t arn_tbucket_next_fill(const struct arn_tbucket *b, const struct arn_cfg_bucket_state *st,
			       uint64_t now)
{
	uint64_t e = __atomic_load_n(&st->epoch1, __ATOMIC_ACQUIRE);
	if (!e || now < e - 1)
		return b->interval;
	return b->interval - (now - (e - 1)) % b->interval;
}
