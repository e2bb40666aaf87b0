/*
 * envoy.filters.http.local_ratelimit's decision for one request, as
 * Envoy's filter makes it (pure: the data path sends the reply, adds the
 * headers and counts):
 *
 *   1. the configuration: the route's (or virtual host's)
 *      typed_per_filter_config for the filter's name, else the filter's;
 *   2. filter_enabled: the fraction of requests looked at (stat enabled);
 *   3. descriptors, only when the configuration has some: one per
 *      RateLimit of the route with the configuration's stage, and of the
 *      virtual host's per include_vh_rate_limits / vh_rate_limits
 *      (OVERRIDE: when the route has none; INCLUDE; IGNORE);
 *   4. the configuration's descriptors those match, slowest fill rate
 *      first, each take a token (the first that has none limits the
 *      request); then the default bucket, when none matched or with
 *      always_consume_default_token_bucket (stats ok / rate_limited);
 *   5. filter_enforced: the fraction of limited requests refused with
 *      the configured status and the RL response flag (stat enforced);
 *      the others go on with request_headers_to_add_when_not_enforced.
 */
#ifndef ARN_HTTP_RATELIMIT_H
#define ARN_HTTP_RATELIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arn_config_model.h"
#include "arn_rldesc.h"

/** Most descriptors a request may produce and match here (lib/config
 * refuses a route whose rate_limits and its virtual host's are more). */
#define ARN_HLRL_MAX_DESCRIPTORS ARN_CFG_RL_MAX_DESCRIPTORS

struct arn_hlrl_input {
	const struct arn_cfg_http_ratelimit *filter; /* the HCM's filter configuration */
	const char *filter_name;		     /* its HttpFilter.name */
	size_t filter_name_len;
	const struct arn_cfg_vhost *vhost; /* the request's, or NULL */
	const struct arn_cfg_route *route; /* the request's, or NULL */
	struct arn_rl_input rl;		   /* what the rate limit actions read */
	uint64_t now, hz;		   /* TSC ticks and ticks per second */
	uint64_t random;		   /* fresh per request: filter_enabled's draw */
	uint64_t random_enforced;	   /* fresh per request: filter_enforced's draw */
	/*
	 * local_rate_limit_per_downstream_connection: the connection's own
	 * buckets, [0] the default one, [1 + i] the configuration's
	 * descriptor i; zeroed when the connection opens. Unused otherwise.
	 * One set per connection and filter, whatever configuration (the
	 * filter's or a route's) applies: Envoy too keeps one limiter per
	 * connection, made by the first configuration that asks for it.
	 */
	struct arn_cfg_bucket_state *conn_states;
	size_t n_conn_states;
};

struct arn_hlrl_decision {
	const struct arn_cfg_http_ratelimit *config; /* the one that applied */
	bool enabled;  /* filter_enabled chose this request (stat enabled) */
	bool limited;  /* no token (stat rate_limited; else ok) */
	bool enforced; /* refuse it: config->status, RL (stat enforced) */
	/* x-ratelimit-* (enable_x_ratelimit_headers): the bucket that decided */
	bool has_bucket;
	uint32_t limit;	      /* its max_tokens */
	uint32_t remaining;   /* tokens left */
	uint64_t reset_ticks; /* ticks to its next fill */
};

/**
 * Decide for one request. A descriptor whose values do not fit in
 * ARN_RL_DESC_BYTES matches none of the configuration's (none that long
 * is accepted), so the default bucket decides, as in Envoy.
 * @return 0 with *@p out, or -ENOSPC: more descriptors than
 *   ARN_HLRL_MAX_DESCRIPTORS, or fewer conn_states than the configuration
 *   needs (lib/config refuses both shapes; the request is then not
 *   limited).
 */
int arn_hlrl_decide(const struct arn_hlrl_input *in, struct arn_hlrl_decision *out);

/** Whether @p random falls in fraction @p f (Envoy: random % denominator < numerator). */
bool arn_fraction_hit(const struct arn_cfg_fraction *f, uint64_t random);

#endif
