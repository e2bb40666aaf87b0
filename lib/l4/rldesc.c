/*
 * Rate limit descriptors (arn_rldesc.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "arn_rldesc.h"

struct out {
	char *buf;
	size_t cap, used;
	bool full;
};

static const char *put(struct out *o, const char *s, size_t n)
{
	if (o->cap - o->used < n) {
		o->full = true;
		return NULL;
	}
	char *p = o->buf + o->used;
	memcpy(p, s, n);
	o->used += n;
	return p;
}

/* One action: 1 and the entry, 0 no entry (skip_if_absent), -1 no
 * descriptor, -ENOSPC. */
static int action(const struct arn_cfg_rl_action *a, const struct arn_rl_input *in, struct out *o,
		  struct arn_cfg_rl_entry *e)
{
	const char *v = NULL;
	size_t vlen = 0;
	char ip[32];
	/* a joined header value lands here (header_value_match) */
	char local[4096];
	char *scratch = in->scratch ? in->scratch : local;
	size_t scratch_len = in->scratch ? in->scratch_len : sizeof(local);
	e->key = a->key;
	e->key_len = a->key_len;
	switch (a->kind) {
	case ARN_CFG_RL_SOURCE_CLUSTER: /* the node's cluster, set by lib/config */
		v = a->value, vlen = a->value_len;
		break;
	case ARN_CFG_RL_DESTINATION_CLUSTER:
		v = in->route_cluster.s, vlen = in->route_cluster.len;
		break;
	case ARN_CFG_RL_REQUEST_HEADERS: {
		/* the first value only, as Envoy's RequestHeadersAction
		 * (header_value[0]): joined, a repeated header would make a
		 * value no descriptor names, and a client could add one to
		 * leave its descriptor's bucket for the default one */
		int r = in->header ? in->header(in->header_ctx, a->header, a->header_len, NULL, 0,
						&v, &vlen)
				   : 0;
		if (r < 0)
			return r;
		if (r == 0)
			return a->skip_if_absent ? 0 : -1;
		e->value = put(o, v, vlen);
		e->value_len = vlen;
		return o->full ? -ENOSPC : 1;
	}
	case ARN_CFG_RL_REMOTE_ADDRESS:
	case ARN_CFG_RL_MASKED_REMOTE_ADDRESS: {
		uint32_t x = in->remote_addr;
		int n;
		if (a->kind == ARN_CFG_RL_REMOTE_ADDRESS) {
			n = snprintf(ip, sizeof(ip), "%u.%u.%u.%u", x >> 24, x >> 16 & 255,
				     x >> 8 & 255, x & 255);
		} else {
			x &= a->mask_len ? ~0u << (32 - a->mask_len) : 0;
			n = snprintf(ip, sizeof(ip), "%u.%u.%u.%u/%u", x >> 24, x >> 16 & 255,
				     x >> 8 & 255, x & 255, a->mask_len);
		}
		v = ip, vlen = (size_t)n;
		break;
	}
	case ARN_CFG_RL_GENERIC_KEY:
		v = a->value, vlen = a->value_len;
		break;
	case ARN_CFG_RL_HEADER_VALUE_MATCH: {
		bool all = true;
		for (size_t i = 0; i < a->n_headers && all; i++) {
			const struct arn_cfg_header_match *m = &a->headers[i];
			const char *hv = NULL;
			size_t hl = 0;
			int r = in->header ? in->header(in->header_ctx, m->name, m->name_len,
							scratch, scratch_len, &hv, &hl)
					   : 0;
			/* a joined value longer than the scratch cannot be
			 * matched: no descriptor, so the default bucket decides
			 * as for a request without the header (never an error,
			 * which would let the request past every bucket) */
			if (r < 0)
				return -1;
			all = arn_cfg_header_match_value(m, r > 0, hv, hl);
		}
		if (all != a->expect_match)
			return -1;
		v = a->value, vlen = a->value_len;
		break;
	}
	default:
		return -1;
	}
	if (!v)
		v = "", vlen = 0;
	e->value = put(o, v, vlen);
	e->value_len = vlen;
	return o->full ? -ENOSPC : 1;
}

int arn_rl_descriptor(const struct arn_cfg_rate_limit *rl, const struct arn_rl_input *in,
		      struct arn_rl_desc *out, char *buf, size_t cap)
{
	struct out o = {buf, cap, 0, false};
	out->n_entries = 0;
	for (size_t i = 0; i < rl->n_actions; i++) {
		struct arn_cfg_rl_entry e;
		int r = action(&rl->actions[i], in, &o, &e);
		if (r < 0)
			return r == -ENOSPC ? -ENOSPC : 0;
		if (r == 0)
			continue;
		if (out->n_entries == ARN_RL_MAX_ENTRIES)
			return -ENOSPC;
		out->entries[out->n_entries++] = e;
	}
	/* Envoy sends no descriptor without entries */
	return out->n_entries ? 1 : 0;
}

const struct arn_cfg_rl_descriptor *arn_rl_match(const struct arn_cfg_http_ratelimit *f,
						 const struct arn_rl_desc *d)
{
	for (size_t i = 0; i < f->n_descriptors; i++) {
		const struct arn_cfg_rl_descriptor *c = &f->descriptors[i];
		if (c->n_entries != d->n_entries)
			continue;
		size_t j = 0;
		for (; j < c->n_entries; j++) {
			const struct arn_cfg_rl_entry *x = &c->entries[j], *y = &d->entries[j];
			if (x->key_len != y->key_len || x->value_len != y->value_len ||
			    memcmp(x->key, y->key, x->key_len) ||
			    (x->value_len && memcmp(x->value, y->value, x->value_len)))
				break;
		}
		if (j == c->n_entries)
			return c;
	}
	return NULL;
}
