/*
 * Envoy's RBAC engine (arn_rbac.h): permissions and principals evaluated
 * recursively over the model's rule trees (their depth is bounded by
 * lib/config, 32 levels).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "arn_rbac.h"

/* Envoy's IPMatcher: CidrRange::isInRange on the address the rule names.
 * Every address Arion has is IPv4, so an IPv6 range matches none of them
 * and its not_id / not_rule matches all of them, as in Envoy for an IPv4
 * peer. */
static bool in_cidr(const struct arn_cfg_cidr *c, uint32_t addr)
{
	return arn_cfg_cidr_has4(c, addr);
}

/* The path without query and fragment, as Envoy's PathMatcher sees it. */
static size_t path_only(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] == '?' || p[i] == '#')
			return i;
	return n;
}

static bool header_rule(const struct arn_cfg_header_match *m, const struct arn_rbac_input *in,
			bool *error)
{
	char local[4096];
	char *buf = in->scratch ? in->scratch : local;
	size_t cap = in->scratch ? in->scratch_len : sizeof(local);
	const char *v = NULL;
	size_t vlen = 0;
	int r =
	    in->header ? in->header(in->header_ctx, m->name, m->name_len, buf, cap, &v, &vlen) : 0;
	if (r < 0) {
		*error = true;
		return false;
	}
	return arn_cfg_header_match_value(m, r > 0, v, vlen);
}

static bool authenticated(const struct arn_cfg_rbac_rule *r, const struct arn_rbac_input *in,
			  bool *error)
{
	if (!in->tls)
		return false;
	if (!r->has_str)
		return true;
	/* a name that was left out could be the one the rule names: deny,
	 * as for a header that did not fit */
	if (in->peer_names_truncated) {
		*error = true;
		return false;
	}
	/* Envoy: the URI SANs if there are any, then the DNS SANs, then the
	 * subject */
	for (size_t i = 0; i < in->n_uri_sans; i++)
		if (arn_cfg_str_match(&r->str, in->uri_sans[i].s, in->uri_sans[i].len))
			return true;
	for (size_t i = 0; i < in->n_dns_sans; i++)
		if (arn_cfg_str_match(&r->str, in->dns_sans[i].s, in->dns_sans[i].len))
			return true;
	return arn_cfg_str_match(&r->str, in->subject.s ? in->subject.s : "", in->subject.len);
}

bool arn_rbac_rule_match(const struct arn_cfg_rbac_rule *r, const struct arn_rbac_input *in,
			 bool *error)
{
	switch (r->kind) {
	case ARN_CFG_RBAC_ANY:
		return true;
	case ARN_CFG_RBAC_AND:
		for (size_t i = 0; i < r->n_kids; i++)
			if (!arn_rbac_rule_match(&r->kids[i], in, error))
				return false;
		return true;
	case ARN_CFG_RBAC_OR:
		for (size_t i = 0; i < r->n_kids; i++)
			if (arn_rbac_rule_match(&r->kids[i], in, error))
				return true;
		return false;
	case ARN_CFG_RBAC_NOT:
		return r->n_kids == 1 && !arn_rbac_rule_match(&r->kids[0], in, error);
	case ARN_CFG_RBAC_DST_IP:
		return in_cidr(&r->cidr, in->dst_addr);
	case ARN_CFG_RBAC_DST_PORT:
		return in->dst_port == r->port_lo;
	case ARN_CFG_RBAC_DST_PORT_RANGE:
		return in->dst_port >= r->port_lo && in->dst_port < r->port_hi;
	case ARN_CFG_RBAC_SNI:
		return arn_cfg_str_match(&r->str, in->sni.s ? in->sni.s : "", in->sni.len);
	case ARN_CFG_RBAC_URL_PATH:
		return in->path &&
		       arn_cfg_str_match(&r->str, in->path, path_only(in->path, in->path_len));
	case ARN_CFG_RBAC_HEADER:
		return r->header && header_rule(r->header, in, error);
	case ARN_CFG_RBAC_SOURCE_IP:
		return in_cidr(&r->cidr, in->src_addr);
	case ARN_CFG_RBAC_DIRECT_REMOTE_IP: /* Envoy: the physical peer, even after PROXY */
		return in_cidr(&r->cidr, in->direct_addr ? in->direct_addr : in->src_addr);
	case ARN_CFG_RBAC_REMOTE_IP:
		return in_cidr(&r->cidr, in->remote_addr);
	case ARN_CFG_RBAC_AUTHENTICATED:
		return authenticated(r, in, error);
	default:
		return false; /* a kind this build does not know never matches */
	}
}

static bool any_of(const struct arn_cfg_rbac_rule *r, size_t n, const struct arn_rbac_input *in,
		   bool *error)
{
	for (size_t i = 0; i < n; i++)
		if (arn_rbac_rule_match(&r[i], in, error))
			return true;
	return false;
}

/* Envoy's RoleBasedAccessControlMatcherEngineImpl: the first field
 * matcher that matches, or on_no_match, names the action; nothing: deny. */
static bool matcher_eval(const struct arn_cfg_rbac_rules *rules, const struct arn_rbac_input *in,
			 struct arn_rbac_decision *out)
{
	bool error = false;
	const struct arn_cfg_rbac_mentry *hit = NULL;
	for (size_t i = 0; i < rules->n_entries && !hit; i++)
		if (arn_rbac_rule_match(&rules->entries[i].predicate, in, &error))
			hit = &rules->entries[i];
	if (!hit && rules->has_no_match)
		hit = &rules->no_match;
	out->policy = hit ? &hit->policy : NULL;
	out->allowed = hit && hit->action != ARN_CFG_RBAC_DENY;
	out->log = hit && hit->action == ARN_CFG_RBAC_LOG;
	if (error) {
		/* a header value did not fit: fail closed */
		out->error = true;
		out->allowed = false;
	}
	return out->allowed;
}

bool arn_rbac_eval(const struct arn_cfg_rbac_rules *rules, const struct arn_rbac_input *in,
		   struct arn_rbac_decision *out)
{
	*out = (struct arn_rbac_decision){.allowed = true};
	if (!rules)
		return true;
	if (rules->matcher)
		return matcher_eval(rules, in, out);
	bool error = false;
	for (size_t i = 0; i < rules->n_policies && !out->policy; i++) {
		const struct arn_cfg_rbac_policy *p = &rules->policies[i];
		/* principals last: Envoy checks permissions first, and headers
		 * are looked up only when needed */
		if (any_of(p->permissions, p->n_permissions, in, &error) &&
		    any_of(p->principals, p->n_principals, in, &error))
			out->policy = p;
	}
	switch (rules->action) {
	case ARN_CFG_RBAC_ALLOW:
		out->allowed = out->policy != NULL;
		break;
	case ARN_CFG_RBAC_DENY:
		out->allowed = out->policy == NULL;
		break;
	default: /* LOG */
		out->allowed = true;
		out->log = out->policy != NULL;
		break;
	}
	if (error) {
		/* a header value did not fit: fail closed (LOG never denies) */
		out->error = true;
		if (rules->action != ARN_CFG_RBAC_LOG)
			out->allowed = false;
	}
	return out->allowed;
}

bool arn_rbac_filter_eval(const struct arn_cfg_rbac_filter *f,
			  const struct arn_cfg_rbac_filter *per_route,
			  const struct arn_rbac_input *in, struct arn_rbac_result *out)
{
	const struct arn_cfg_rbac_filter *c = per_route ? per_route : f;
	*out = (struct arn_rbac_result){0};
	out->ran = c && c->rules;
	out->shadow_ran = c && c->shadow;
	arn_rbac_eval(out->ran ? c->rules : NULL, in, &out->enforced);
	arn_rbac_eval(out->shadow_ran ? c->shadow : NULL, in, &out->shadow);
	return out->enforced.allowed;
}

size_t arn_rbac_details(const struct arn_rbac_decision *d, char *buf, size_t cap)
{
	int n = d->policy ? snprintf(buf, cap, "rbac_access_denied_matched_policy[%.*s]",
				     (int)d->policy->name_len, d->policy->name)
			  : snprintf(buf, cap, "rbac_access_denied_matched_policy[none]");
	return n < 0 ? 0 : (size_t)n;
}

int arn_rbac_request_header(void *ctx, const char *name, size_t nlen, char *buf, size_t cap,
			    const char **v, size_t *vlen)
{
	const struct arn_cfg_request *req = ctx;
	if (nlen && name[0] == ':') {
		const char *s = NULL;
		size_t l = 0;
		if (nlen == 7 && memcmp(name, ":method", 7) == 0)
			s = req->method, l = req->method_len;
		else if (nlen == 10 && memcmp(name, ":authority", 10) == 0)
			s = req->authority, l = req->authority_len;
		else if (nlen == 5 && memcmp(name, ":path", 5) == 0)
			s = req->path, l = req->path_len;
		if (!s)
			return 0;
		*v = s;
		*vlen = l;
		return 1;
	}
	size_t found = 0, used = 0;
	for (size_t i = 0; i < req->n_headers; i++) {
		const struct arn_cfg_header *h = &req->headers[i];
		if (h->name_len != nlen || strncasecmp(h->name, name, nlen) != 0)
			continue;
		if (found++ == 0) {
			*v = h->value;
			*vlen = h->value_len;
			if (!buf)
				return 1;
			continue;
		}
		/* a second occurrence: join into buf, refusing to truncate */
		if (found == 2) {
			if (*vlen > cap)
				return -ENOSPC;
			memcpy(buf, *v, *vlen);
			used = *vlen;
		}
		if (used + 1 + h->value_len > cap)
			return -ENOSPC;
		buf[used++] = ',';
		memcpy(buf + used, h->value, h->value_len);
		used += h->value_len;
		*v = buf;
		*vlen = used;
	}
	return found ? 1 : 0;
}
