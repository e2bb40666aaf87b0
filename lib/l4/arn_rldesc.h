/*
 * Rate limit descriptors as Envoy builds them from a route's and its
 * virtual host's rate_limits (arn_config_l4.h), and the HTTP
 * local_ratelimit filter's choice of bucket among its descriptors. Pure
 * functions of the model and a small request description, like arn_rbac.h.
 */
#ifndef ARN_RLDESC_H
#define ARN_RLDESC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arn_config_model.h"
#include "arn_rbac.h"

/** Most entries a descriptor may have here (lib/config refuses a
 * RateLimit with more actions). */
#define ARN_RL_MAX_ENTRIES ARN_CFG_RL_MAX_ACTIONS
/** The values of a descriptor together: a caller's buffer of this size
 * holds any descriptor the configuration can name (lib/config refuses a
 * configured descriptor whose values are longer). */
#define ARN_RL_DESC_BYTES ARN_CFG_RL_DESC_BYTES

/** What the actions read. Pointers are borrowed for the call. */
struct arn_rl_input {
	uint32_t remote_addr;		   /* the client address (after XFF), host order */
	struct arn_rbac_str route_cluster; /* destination_cluster: the route's cluster */
	arn_rbac_header_fn header;	   /* request headers, as for RBAC */
	void *header_ctx;
	/* header_value_match's joined header values, as arn_rbac_input's:
	 * >= the largest request head so that every value fits; NULL: 4 KiB
	 * on the stack (a longer joined value: that RateLimit yields no
	 * descriptor) */
	char *scratch;
	size_t scratch_len;
};

/** A descriptor built for a request; its strings live in the caller's buffer. */
struct arn_rl_desc {
	struct arn_cfg_rl_entry entries[ARN_RL_MAX_ENTRIES];
	size_t n_entries;
};

/**
 * The descriptor @p rl produces for @p in, Envoy's rules: one entry per
 * action, in order; request_headers without its header yields none (or
 * is left out with skip_if_absent); header_value_match yields only when
 * its headers match as expect_match says (and none when their joined
 * value does not fit in in->scratch: it could not be matched). Values are
 * copied to @p buf (@p cap bytes), which *@p out then points into.
 * @return 1 with *@p out, 0 when the RateLimit yields no descriptor,
 *   -ENOSPC when @p buf or ARN_RL_MAX_ENTRIES is too small. With @p cap
 *   ARN_RL_DESC_BYTES, -ENOSPC means a descriptor that no configured one
 *   equals (lib/config's limits): it matches nothing.
 */
int arn_rl_descriptor(const struct arn_cfg_rate_limit *rl, const struct arn_rl_input *in,
		      struct arn_rl_desc *out, char *buf, size_t cap);

/**
 * The filter's descriptor whose entries equal @p d's (same keys and
 * values, in order), or NULL: the filter's own bucket applies.
 */
const struct arn_cfg_rl_descriptor *arn_rl_match(const struct arn_cfg_http_ratelimit *f,
						 const struct arn_rl_desc *d);

#endif
