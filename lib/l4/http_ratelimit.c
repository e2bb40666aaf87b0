/*
 * The HTTP local_ratelimit filter's decision (arn_http_ratelimit.h).
 */
#include <errno.h>

#include "arn_http_ratelimit.h"
#include "arn_tbucket.h"

bool arn_fraction_hit(const struct arn_cfg_fraction *f, uint64_t random)
{
	return arn_cfg_fraction_hit(f, random);
}

/* A bucket in use: its configuration in ticks and its state. */
struct bucket {
	struct arn_tbucket tb;
	struct arn_cfg_bucket_state *st;
};

static int bucket(const struct arn_hlrl_input *in, const struct arn_cfg_http_ratelimit *c,
		  const struct arn_cfg_token_bucket *cfg, struct arn_cfg_bucket_state *shared,
		  size_t conn_idx, struct bucket *b)
{
	if (arn_tbucket_init(&b->tb, cfg, in->hz) < 0)
		return -EINVAL;
	if (!c->per_connection) {
		b->st = shared;
		return 0;
	}
	if (conn_idx >= in->n_conn_states)
		return -ENOSPC;
	b->st = &in->conn_states[conn_idx];
	return 0;
}

/* Descriptors of @p rls with @p stage, matched against @p c's. */
static int collect(const struct arn_hlrl_input *in, const struct arn_cfg_http_ratelimit *c,
		   const struct arn_cfg_rate_limit *rls, size_t n,
		   const struct arn_cfg_rl_descriptor **matched, size_t *nm)
{
	for (size_t i = 0; i < n; i++) {
		if (rls[i].stage != c->stage)
			continue;
		struct arn_rl_desc d;
		char buf[ARN_RL_DESC_BYTES];
		int r = arn_rl_descriptor(&rls[i], &in->rl, &d, buf, sizeof(buf));
		/* one that does not fit equals none of the configuration's
		 * (lib/config refuses longer ones): it matches nothing, as in
		 * Envoy, and the default bucket still counts the request */
		if (r <= 0)
			continue;
		const struct arn_cfg_rl_descriptor *m = arn_rl_match(c, &d);
		if (!m)
			continue;
		if (*nm == ARN_HLRL_MAX_DESCRIPTORS)
			return -ENOSPC;
		matched[(*nm)++] = m;
	}
	return 0;
}

/* Slower fill rate first: per_fill / interval, compared without division. */
static bool slower(const struct arn_cfg_token_bucket *a, const struct arn_cfg_token_bucket *b)
{
	return (uint64_t)a->tokens_per_fill * b->fill_interval_ms <
	       (uint64_t)b->tokens_per_fill * a->fill_interval_ms;
}

static void report(const struct arn_hlrl_input *in, const struct bucket *b,
		   struct arn_hlrl_decision *out)
{
	out->has_bucket = true;
	out->limit = b->tb.max_tokens;
	out->remaining = arn_tbucket_remaining(&b->tb, b->st, in->now);
	out->reset_ticks = arn_tbucket_next_fill(&b->tb, b->st, in->now);
}

int arn_hlrl_decide(const struct arn_hlrl_input *in, struct arn_hlrl_decision *out)
{
	*out = (struct arn_hlrl_decision){0};
	const struct arn_cfg_http_ratelimit *c = arn_cfg_per_filter_find(
	    in->vhost, in->route, in->filter_name, in->filter_name_len, ARN_CFG_PF_LOCAL_RATELIMIT);
	if (!c)
		c = in->filter;
	out->config = c;
	if (!c || !arn_fraction_hit(&c->enabled, in->random))
		return 0;
	out->enabled = true;

	const struct arn_cfg_rl_descriptor *matched[ARN_HLRL_MAX_DESCRIPTORS];
	size_t nm = 0;
	if (c->n_descriptors && in->route && in->route->action == ARN_CFG_ACTION_ROUTE) {
		const struct arn_cfg_route_action *ra = &in->route->route;
		int r = collect(in, c, ra->rate_limits, ra->n_rate_limits, matched, &nm);
		uint8_t vh = ra->include_vh_rate_limits ? ARN_CFG_VH_RL_INCLUDE : c->vh_rate_limits;
		if (r == 0 && in->vhost &&
		    (vh == ARN_CFG_VH_RL_INCLUDE ||
		     (vh == ARN_CFG_VH_RL_OVERRIDE && ra->n_rate_limits == 0)))
			r = collect(in, c, in->vhost->rate_limits, in->vhost->n_rate_limits,
				    matched, &nm);
		if (r < 0)
			return r;
	}
	/* insertion sort: a handful at most; stable, so equal rates keep
	 * their order */
	for (size_t i = 1; i < nm; i++)
		for (size_t j = i; j > 0 && slower(&matched[j]->bucket, &matched[j - 1]->bucket);
		     j--) {
			const struct arn_cfg_rl_descriptor *t = matched[j];
			matched[j] = matched[j - 1];
			matched[j - 1] = t;
		}
	struct bucket first = {0};
	for (size_t i = 0; i < nm; i++) {
		struct bucket b;
		int r = bucket(in, c, &matched[i]->bucket, matched[i]->state,
			       1 + (size_t)(matched[i] - c->descriptors), &b);
		if (r < 0)
			return r;
		if (i == 0)
			first = b;
		if (!arn_tbucket_take(&b.tb, b.st, in->now, 1)) {
			out->limited = true;
			report(in, &b, out);
			break;
		}
	}
	if (!out->limited && (nm == 0 || c->always_consume_default)) {
		if (c->has_bucket) {
			struct bucket b;
			int r = bucket(in, c, &c->bucket, c->state, 0, &b);
			if (r < 0)
				return r;
			out->limited = !arn_tbucket_take(&b.tb, b.st, in->now, 1);
			report(in, nm ? &first : &b, out);
		} else if (nm) {
			report(in, &first, out);
		}
	} else if (!out->limited) {
		report(in, &first, out);
	}
	out->enforced = out->limited && arn_fraction_hit(&c->enforced, in->random_enforced);
	return 0;
}
