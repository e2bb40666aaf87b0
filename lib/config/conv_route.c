/*
 * RouteConfiguration -> struct arn_cfg_route_table.
 *
 * Domains are compiled into Envoy's lookup order (exact in a hash table,
 * then "*.suffix" longest first, then "prefix.*" longest first, then "*");
 * routes stay in order (first match wins), with regexes compiled once.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arn_proto.h"
#include "arn_regex.h"
#include "config_int.h"

/* A retry policy's list of HeaderMatchers @p f (at most
 * ARN_CFG_RETRY_HEADERS_MAX: each is tried on every answer). */
static void retry_header_matchers(struct conv *c, struct pb rp, const char *f,
				  struct arn_cfg_header_match **out, size_t *n)
{
	size_t len = pb_len(rp, f);
	if (!len)
		return;
	if (len > ARN_CFG_RETRY_HEADERS_MAX) {
		conv_err(c, f, "%zu matchers: Arion takes at most %d", len,
			 ARN_CFG_RETRY_HEADERS_MAX);
		return;
	}
	*out = CONV_NEW(c, struct arn_cfg_header_match, len);
	if (!*out)
		return;
	*n = len;
	for (size_t i = 0; i < len; i++) {
		size_t m = conv_push(c, "%s[%zu]", f, i);
		conv_header_matcher(c, pb_at(rp, f, i), &(*out)[i]);
		conv_pop(c, m);
	}
}

/* retry_host_predicate and host_selection_retry_max_attempts. */
static void retry_host_predicates(struct conv *c, struct pb rp, struct arn_cfg_retry_policy *out)
{
	/* the typed_config's type decides, as in Envoy; the name only
	 * without one. Arion has no canary hosts (no endpoint metadata):
	 * omit_canary_hosts omits none, as Envoy with none marked canary. */
	static const struct {
		const char *type, *name;
		bool previous;
	} preds[] = {
	    {"envoy.extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate",
	     "envoy.retry_host_predicates.previous_hosts", true},
	    {"envoy.extensions.retry.host.omit_canary_hosts.v3.OmitCanaryHostsPredicate",
	     "envoy.retry_host_predicates.omit_canary_hosts", false},
	};
	/* Envoy: 1 when unset (or 0); the picks are one more */
	out->host_selection_retries = 1;
	int64_t hs = pb_i64(rp, "host_selection_retry_max_attempts");
	if (hs > 16 || hs < 0)
		conv_err(c, "host_selection_retry_max_attempts",
			 "%lld: Arion picks a retry's host again at most 16 times", (long long)hs);
	else if (hs > 0)
		out->host_selection_retries = (uint32_t)hs;
	size_t n = pb_len(rp, "retry_host_predicate");
	for (size_t i = 0; i < n; i++) {
		struct pb p = pb_at(rp, "retry_host_predicate", i);
		size_t m = conv_push(c, "retry_host_predicate[%zu]", i);
		conv_only(c, p, "name,typed_config");
		upb_StringView name = pb_str(p, "name");
		struct pb any = pb_msg(p, "typed_config");
		upb_StringView tn = any.m ? arn_proto_any_type_name(any.m) : name;
		size_t k = 0;
		while (k < sizeof(preds) / sizeof(preds[0]) && !arn_sv_eq(tn, preds[k].type) &&
		       !arn_sv_eq(tn, preds[k].name))
			k++;
		if (k == sizeof(preds) / sizeof(preds[0])) {
			conv_err(c, "",
				 "retry host predicate '%.*s' is not supported by Arion "
				 "(previous_hosts and omit_canary_hosts are)",
				 (int)tn.size, tn.data);
		} else {
			if (any.m) {
				size_t m2 = conv_push(c, "typed_config");
				conv_any(c, any, preds[k].type);
				conv_pop(c, m2);
			}
			out->previous_hosts |= preds[k].previous;
		}
		conv_pop(c, m);
	}
}

static void retry_policy(struct conv *c, struct pb rp, struct arn_cfg_retry_policy *out)
{
	static const struct {
		const char *name;
		uint32_t bit;
	} conds[] = {
	    {"5xx", ARN_CFG_RETRY_5XX},
	    {"gateway-error", ARN_CFG_RETRY_GATEWAY_ERROR},
	    {"reset", ARN_CFG_RETRY_RESET},
	    {"connect-failure", ARN_CFG_RETRY_CONNECT_FAILURE},
	    {"retriable-4xx", ARN_CFG_RETRY_RETRIABLE_4XX},
	    {"refused-stream", ARN_CFG_RETRY_REFUSED_STREAM},
	    {"retriable-status-codes", ARN_CFG_RETRY_RETRIABLE_STATUS_CODES},
	    {"retriable-headers", ARN_CFG_RETRY_RETRIABLE_HEADERS},
	    {"http3-post-connect-failure", ARN_CFG_RETRY_HTTP3_POST_CONNECT_FAILURE},
	    {"envoy-ratelimited", ARN_CFG_RETRY_ENVOY_RATELIMITED},
	    {"cancelled", ARN_CFG_RETRY_GRPC_CANCELLED},
	    {"deadline-exceeded", ARN_CFG_RETRY_GRPC_DEADLINE_EXCEEDED},
	    {"internal", ARN_CFG_RETRY_GRPC_INTERNAL},
	    {"resource-exhausted", ARN_CFG_RETRY_GRPC_RESOURCE_EXHAUSTED},
	    {"unavailable", ARN_CFG_RETRY_GRPC_UNAVAILABLE},
	};
	conv_only(
	    c, rp,
	    "retry_on,num_retries,per_try_timeout,per_try_idle_timeout,retriable_status_codes,"
	    "retry_back_off,host_selection_retry_max_attempts,retry_host_predicate,"
	    "retriable_headers,retriable_request_headers");
	retry_header_matchers(c, rp, "retriable_headers", &out->retriable_headers,
			      &out->n_retriable_headers);
	retry_header_matchers(c, rp, "retriable_request_headers", &out->retriable_request_headers,
			      &out->n_retriable_request_headers);
	retry_host_predicates(c, rp, out);
	out->present = true;
	upb_StringView on = pb_str(rp, "retry_on");
	for (size_t i = 0; i < on.size;) {
		size_t j = i;
		while (j < on.size && on.data[j] != ',')
			j++;
		size_t a = i, b = j;
		while (a < b && isspace((unsigned char)on.data[a]))
			a++;
		while (b > a && isspace((unsigned char)on.data[b - 1]))
			b--;
		if (b > a) {
			bool found = false;
			for (size_t k = 0; k < sizeof(conds) / sizeof(conds[0]); k++)
				if (strlen(conds[k].name) == b - a &&
				    memcmp(conds[k].name, on.data + a, b - a) == 0) {
					out->retry_on |= conds[k].bit;
					found = true;
				}
			if (!found)
				conv_err(c, "retry_on",
					 "'%.*s' is not a retry condition Arion supports",
					 (int)(b - a), on.data + a);
		}
		i = j + 1;
	}
	out->num_retries = 1;
	pb_wrapped_u32(rp, "num_retries", &out->num_retries);
	conv_duration(c, rp, "per_try_timeout", &out->per_try_timeout_ms, false);
	conv_duration(c, rp, "per_try_idle_timeout", &out->per_try_idle_timeout_ms, false);
	size_t n = pb_len(rp, "retriable_status_codes");
	if (n) {
		out->retriable_status_codes = CONV_NEW(c, uint16_t, n);
		if (out->retriable_status_codes) {
			out->n_retriable_status_codes = n;
			for (size_t i = 0; i < n; i++) {
				uint32_t code = pb_u32_at(rp, "retriable_status_codes", i);
				if (code < 100 || code > 599)
					conv_err(c, "retriable_status_codes",
						 "%u is not an HTTP status", code);
				out->retriable_status_codes[i] = (uint16_t)code;
			}
		}
	}
	out->backoff_base_ms = 25;
	struct pb bo = pb_msg(rp, "retry_back_off");
	if (bo.m) {
		size_t m = conv_push(c, "retry_back_off");
		conv_only(c, bo, "base_interval,max_interval");
		if (!conv_duration(c, bo, "base_interval", &out->backoff_base_ms, true))
			if (!pb_has(bo, "base_interval"))
				conv_err(c, "base_interval", "missing");
		out->backoff_max_ms = 10 * out->backoff_base_ms;
		conv_duration(c, bo, "max_interval", &out->backoff_max_ms, true);
		if (out->backoff_max_ms < out->backoff_base_ms)
			conv_err(c, "max_interval", "must not be less than base_interval");
		conv_pop(c, m);
	} else {
		out->backoff_max_ms = 250;
	}
}

static void cluster_ref(struct conv *c, struct arn_cfg_ref *r, upb_StringView name)
{
	conv_refs(c, r, name);
	/* routes reference clusters without warming on them (G5) */
	conv_dep(c, ARN_CFG_CLUSTER, name.data, name.size, false, 0);
}

/*
 * A request's descriptors come from its route's rate_limits and, per
 * include_vh_rate_limits or a local_ratelimit's vh_rate_limits (which may
 * be set in a filter this table does not see), its virtual host's: lib/l4
 * matches at most ARN_CFG_RL_MAX_DESCRIPTORS, and a request with more
 * would pass unlimited. Checked here, after the routes (a route kept from
 * the previous version may meet new virtual host rate_limits).
 */
static void vhost_rate_limits(struct conv *c, const struct arn_cfg_vhost *v)
{
	if (v->n_rate_limits > ARN_CFG_RL_MAX_DESCRIPTORS) {
		conv_err(c, "rate_limits",
			 "%zu rate limits: Arion matches at most %d descriptors a request",
			 v->n_rate_limits, ARN_CFG_RL_MAX_DESCRIPTORS);
		return;
	}
	for (size_t j = 0; j < v->n_routes; j++) {
		const struct arn_cfg_route *r = &v->routes[j];
		if (r->action != ARN_CFG_ACTION_ROUTE ||
		    r->route.n_rate_limits + v->n_rate_limits <= ARN_CFG_RL_MAX_DESCRIPTORS)
			continue;
		size_t m = conv_push(c, "routes[%zu].route", j);
		conv_err(c, "rate_limits",
			 "%zu rate limits, and %zu on the virtual host: Arion matches at most %d "
			 "descriptors a request, the route's and its virtual host's together",
			 r->route.n_rate_limits, v->n_rate_limits, ARN_CFG_RL_MAX_DESCRIPTORS);
		conv_pop(c, m);
	}
}

/*
 * RouteAction.request_mirror_policies (Envoy's ShadowPolicyImpl): cluster
 * or cluster_header (exactly one), runtime_fraction's default_value (Arion
 * has no runtime: its runtime_key names nothing to read), trace_sampled
 * (Arion has no tracing: it changes nothing).
 */
static void mirror_policies(struct conv *c, struct pb ra, struct arn_cfg_route_action *a)
{
	size_t n = pb_len(ra, "request_mirror_policies");
	if (!n)
		return;
	a->mirrors = CONV_NEW(c, struct arn_cfg_mirror, n);
	if (!a->mirrors)
		return;
	a->n_mirrors = n;
	for (size_t i = 0; i < n; i++) {
		struct pb mp = pb_at(ra, "request_mirror_policies", i);
		struct arn_cfg_mirror *o = &a->mirrors[i];
		size_t m = conv_push(c, "request_mirror_policies[%zu]", i);
		conv_only(c, mp, "cluster,cluster_header,runtime_fraction,trace_sampled");
		upb_StringView cl = pb_str(mp, "cluster"), ch = pb_str(mp, "cluster_header");
		if (cl.size && ch.size) {
			conv_err(c, "cluster_header",
				 "set cluster or cluster_header, not both (Envoy)");
		} else if (ch.size) {
			conv_hdr_ok(c, "cluster_header", ch);
			o->header = true;
			o->cluster.name = conv_lstr(c, ch);
			o->cluster.len = ch.size;
		} else if (cl.size) {
			cluster_ref(c, &o->cluster, cl);
		} else {
			conv_err(c, "", "no cluster: set cluster or cluster_header");
		}
		/* absent: every request (Envoy) */
		struct arn_cfg_fraction fr = {100, 100};
		if (pb_has(mp, "runtime_fraction"))
			conv_runtime_fraction(c, mp, "runtime_fraction", &fr);
		o->numerator = fr.numerator;
		o->denominator = fr.denominator;
		conv_pop(c, m);
	}
}

static void route_action(struct conv *c, struct pb ra, struct arn_cfg_route_action *a,
			 const struct arn_cfg_retry_policy *vh_retry, bool *inherits_retry)
{
	size_t m0 = conv_push(c, "route");
	conv_only(c, ra,
		  "cluster,cluster_header,weighted_clusters,cluster_not_found_response_code,"
		  "prefix_rewrite,regex_rewrite,host_rewrite_literal,auto_host_rewrite,timeout,"
		  "idle_timeout,retry_policy,hash_policy,append_x_forwarded_host,upgrade_configs,"
		  "rate_limits,include_vh_rate_limits,max_grpc_timeout,grpc_timeout_offset,"
		  "max_stream_duration,cors,request_mirror_policies");
	conv_rate_limits(c, ra, &a->rate_limits, &a->n_rate_limits);
	bool ivh = false;
	pb_wrapped_bool(ra, "include_vh_rate_limits", &ivh);
	a->include_vh_rate_limits = ivh;
	const char *w = pb_which(ra, "cluster_specifier");
	if (!w) {
		conv_err(c, "", "no cluster: set cluster, cluster_header or weighted_clusters");
	} else if (strcmp(w, "cluster") == 0) {
		upb_StringView s = pb_str(ra, "cluster");
		if (s.size == 0)
			conv_err(c, "cluster", "empty cluster name");
		a->spec = ARN_CFG_CLUSTER_NAME;
		cluster_ref(c, &a->cluster, s);
	} else if (strcmp(w, "cluster_header") == 0) {
		upb_StringView s = pb_str(ra, "cluster_header");
		if (s.size == 0)
			conv_err(c, "cluster_header", "empty header name");
		a->spec = ARN_CFG_CLUSTER_HEADER;
		a->cluster.name = conv_lstr(c, s);
		a->cluster.len = s.size;
	} else {
		struct pb wc = pb_msg(ra, "weighted_clusters");
		size_t m = conv_push(c, "weighted_clusters");
		conv_only(c, wc, "clusters,total_weight");
		size_t n = pb_len(wc, "clusters");
		a->spec = ARN_CFG_CLUSTER_WEIGHTED;
		if (n == 0)
			conv_err(c, "clusters", "empty");
		a->weighted = CONV_NEW(c, struct arn_cfg_weighted_cluster, n ? n : 1);
		a->n_weighted = n;
		for (size_t i = 0; a->weighted && i < n; i++) {
			struct pb cw = pb_at(wc, "clusters", i);
			size_t m2 = conv_push(c, "clusters[%zu]", i);
			conv_only(c, cw,
				  "name,weight,request_headers_to_add,request_headers_to_remove,"
				  "response_headers_to_add,response_headers_to_remove");
			upb_StringView nm = pb_str(cw, "name");
			if (nm.size == 0)
				conv_err(c, "name", "missing");
			cluster_ref(c, &a->weighted[i].cluster, nm);
			uint32_t wt = 0;
			pb_wrapped_u32(cw, "weight", &wt);
			a->weighted[i].weight = wt;
			a->total_weight += wt;
			conv_header_ops(c, cw, &a->weighted[i].headers);
			conv_pop(c, m2);
		}
		uint32_t tw;
		if (pb_wrapped_u32(wc, "total_weight", &tw) && tw != a->total_weight)
			conv_err(c, "total_weight", "%u, but the weights add up to %llu", tw,
				 (unsigned long long)a->total_weight);
		if (n && a->total_weight == 0)
			conv_err(c, "clusters", "the weights add up to 0");
		conv_pop(c, m);
	}
	switch (pb_i32(ra, "cluster_not_found_response_code")) {
	case 0:
		a->cluster_not_found_status = 503;
		break;
	case 1:
		a->cluster_not_found_status = 404;
		break;
	case 2:
		a->cluster_not_found_status = 500;
		break;
	default:
		conv_err(c, "cluster_not_found_response_code", "unknown value");
	}
	if (pb_has(ra, "prefix_rewrite") && pb_has(ra, "regex_rewrite"))
		conv_err(c, "regex_rewrite", "set prefix_rewrite or regex_rewrite, not both");
	if (pb_has(ra, "prefix_rewrite")) {
		upb_StringView s = pb_str(ra, "prefix_rewrite");
		a->prefix_rewrite = conv_hdr_str(c, "prefix_rewrite", s);
		a->prefix_rewrite_len = s.size;
	}
	struct pb rr = pb_msg(ra, "regex_rewrite");
	if (rr.m) {
		size_t m = conv_push(c, "regex_rewrite");
		conv_only(c, rr, "pattern,substitution");
		size_t m2 = conv_push(c, "pattern");
		a->regex_rewrite = conv_regex(c, pb_msg(rr, "pattern"));
		conv_pop(c, m2);
		upb_StringView sub = pb_str(rr, "substitution");
		a->regex_substitution = conv_hdr_str(c, "substitution", sub);
		char err[200];
		if (a->regex_rewrite && a->regex_substitution &&
		    !arn_regex_check_substitution(a->regex_rewrite, a->regex_substitution, err,
						  sizeof(err)))
			conv_err(c, "substitution", "%s", err);
		conv_pop(c, m);
	}
	const char *hw = pb_which(ra, "host_rewrite_specifier");
	if (hw && strcmp(hw, "host_rewrite_literal") == 0) {
		a->host_rewrite_literal =
		    conv_hdr_str(c, "host_rewrite_literal", pb_str(ra, "host_rewrite_literal"));
	} else if (hw && strcmp(hw, "auto_host_rewrite") == 0) {
		bool v = false;
		pb_wrapped_bool(ra, "auto_host_rewrite", &v);
		a->auto_host_rewrite = v;
	}
	a->append_x_forwarded_host = pb_bool(ra, "append_x_forwarded_host");
	a->timeout_ms = 15000;
	conv_duration(c, ra, "timeout", &a->timeout_ms, false);
	a->idle_timeout_set = conv_duration(c, ra, "idle_timeout", &a->idle_timeout_ms, false);
	/* grpc-timeout: honoured only when a cap is set (0: no cap), as
	 * Envoy's max_stream_duration.grpc_timeout_header_max or the older
	 * max_grpc_timeout */
	a->grpc_timeout_set =
	    conv_duration(c, ra, "max_grpc_timeout", &a->max_grpc_timeout_ms, false);
	conv_duration(c, ra, "grpc_timeout_offset", &a->grpc_timeout_offset_ms, false);
	struct pb msd = pb_msg(ra, "max_stream_duration");
	if (msd.m) {
		size_t m = conv_push(c, "max_stream_duration");
		conv_only(c, msd, "grpc_timeout_header_max,grpc_timeout_header_offset");
		if (conv_duration(c, msd, "grpc_timeout_header_max", &a->max_grpc_timeout_ms,
				  false))
			a->grpc_timeout_set = true;
		conv_duration(c, msd, "grpc_timeout_header_offset", &a->grpc_timeout_offset_ms,
			      false);
		conv_pop(c, m);
	}
	struct pb rp = pb_msg(ra, "retry_policy");
	if (rp.m) {
		size_t m = conv_push(c, "retry_policy");
		retry_policy(c, rp, &a->retry);
		conv_pop(c, m);
	} else if (vh_retry) {
		a->retry = *vh_retry;
		*inherits_retry = true;
	}
	size_t nh = pb_len(ra, "hash_policy");
	if (nh) {
		a->hash_policies = CONV_NEW(c, struct arn_cfg_hash_policy, nh);
		a->n_hash_policies = a->hash_policies ? nh : 0;
	}
	for (size_t i = 0; a->hash_policies && i < nh; i++) {
		struct pb hp = pb_at(ra, "hash_policy", i);
		struct arn_cfg_hash_policy *h = &a->hash_policies[i];
		size_t m = conv_push(c, "hash_policy[%zu]", i);
		conv_only(c, hp, "header,cookie,connection_properties,query_parameter,terminal");
		h->terminal = pb_bool(hp, "terminal");
		const char *k = pb_which(hp, "policy_specifier");
		if (!k) {
			conv_err(c, "",
				 "set header, cookie, connection_properties or query_parameter");
		} else if (strcmp(k, "header") == 0) {
			struct pb x = pb_msg(hp, "header");
			size_t m2 = conv_push(c, "header");
			conv_only(c, x, "header_name");
			conv_pop(c, m2);
			h->kind = ARN_CFG_HASH_HEADER;
			h->name = conv_lstr(c, pb_str(x, "header_name"));
			h->name_len = pb_str(x, "header_name").size;
			if (!h->name_len)
				conv_err(c, "header.header_name", "missing");
		} else if (strcmp(k, "cookie") == 0) {
			struct pb x = pb_msg(hp, "cookie");
			size_t m2 = conv_push(c, "cookie");
			conv_only(c, x, "name,ttl,path");
			h->kind = ARN_CFG_HASH_COOKIE;
			upb_StringView nm = pb_str(x, "name");
			h->name = conv_str(c, nm);
			h->name_len = nm.size;
			if (!h->name_len)
				conv_err(c, "name", "missing");
			else
				cookie_octets_ok(c, "name", nm, true, ARN_CFG_COOKIE_NAME_MAX);
			uint32_t ms;
			if (conv_duration(c, x, "ttl", &ms, false)) {
				int64_t s = pb_i64(pb_msg(x, "ttl"), "seconds");
				h->cookie_ttl_set = true;
				h->cookie_ttl_s = s > UINT32_MAX ? UINT32_MAX : (uint32_t)s;
				if (i >= ARN_CFG_COOKIE_GEN_MAX)
					conv_err(c, "ttl",
						 "a generated cookie is supported in the first %d "
						 "hash_policy entries only; move this one up",
						 ARN_CFG_COOKIE_GEN_MAX);
			}
			upb_StringView path = pb_str(x, "path");
			if (path.size &&
			    cookie_octets_ok(c, "path", path, false, ARN_CFG_COOKIE_PATH_MAX)) {
				h->cookie_path = conv_str(c, path);
				h->cookie_path_len = path.size;
			}
			conv_pop(c, m2);
		} else if (strcmp(k, "connection_properties") == 0) {
			h->kind = ARN_CFG_HASH_SOURCE_IP;
			if (!pb_bool(pb_msg(hp, "connection_properties"), "source_ip"))
				conv_err(c, "connection_properties.source_ip",
					 "must be true (the only connection property)");
		} else {
			struct pb x = pb_msg(hp, "query_parameter");
			h->kind = ARN_CFG_HASH_QUERY_PARAMETER;
			h->name = conv_str(c, pb_str(x, "name"));
			h->name_len = pb_str(x, "name").size;
			if (!h->name_len)
				conv_err(c, "query_parameter.name", "missing");
		}
		conv_pop(c, m);
	}
	conv_upgrades(c, ra, true, &a->upgrades, &a->n_upgrades);
	mirror_policies(c, ra, a);
	conv_pop(c, m0);
}

static void redirect(struct conv *c, struct pb ra, struct arn_cfg_redirect *r)
{
	size_t m0 = conv_push(c, "redirect");
	conv_only(c, ra,
		  "https_redirect,scheme_redirect,host_redirect,port_redirect,path_redirect,"
		  "prefix_rewrite,response_code,strip_query");
	if (pb_bool(ra, "https_redirect")) {
		r->scheme = "https";
	} else if (pb_has(ra, "scheme_redirect")) {
		upb_StringView s = pb_str(ra, "scheme_redirect");
		conv_hdr_ok(c, "scheme_redirect", s);
		r->scheme = conv_lstr(c, s);
	}
	if (pb_has(ra, "host_redirect"))
		r->host = conv_hdr_str(c, "host_redirect", pb_str(ra, "host_redirect"));
	r->port = pb_u32(ra, "port_redirect");
	if (r->port > 65535)
		conv_err(c, "port_redirect", "not a port");
	if (pb_has(ra, "path_redirect")) {
		upb_StringView p = pb_str(ra, "path_redirect");
		if (p.size == 0 || p.data[0] != '/')
			conv_err(c, "path_redirect", "must start with /");
		r->path = conv_hdr_str(c, "path_redirect", p);
	}
	if (pb_has(ra, "prefix_rewrite"))
		r->prefix_rewrite = conv_hdr_str(c, "prefix_rewrite", pb_str(ra, "prefix_rewrite"));
	static const uint16_t codes[] = {301, 302, 303, 307, 308};
	int32_t rc = pb_i32(ra, "response_code");
	if (rc < 0 || rc > 4)
		conv_err(c, "response_code", "unknown value %d", rc);
	else
		r->status = codes[rc];
	r->strip_query = pb_bool(ra, "strip_query");
	conv_pop(c, m0);
}

static void direct(struct conv *c, struct pb d, struct arn_cfg_direct *r, uint32_t max_body)
{
	size_t m0 = conv_push(c, "direct_response");
	conv_only(c, d, "status,body");
	uint32_t st = pb_u32(d, "status");
	if (st < 100 || st > 599)
		conv_err(c, "status", "%u is not an HTTP status (100-599)", st);
	r->status = (uint16_t)st;
	struct pb b = pb_msg(d, "body");
	if (b.m) {
		size_t m = conv_push(c, "body");
		conv_data_source(c, b, max_body, "max_direct_response_body_size_bytes", &r->body,
				 &r->body_len);
		conv_pop(c, m);
	}
	conv_pop(c, m0);
}

/* @p inherits_retry: set when the route copied @p vh_retry. */
static void route(struct conv *c, struct pb rt, struct arn_cfg_route *r,
		  const struct arn_cfg_retry_policy *vh_retry, uint32_t max_body,
		  bool *inherits_retry)
{
	conv_only(
	    c, rt,
	    "name,match,route,redirect,direct_response,metadata,decorator,request_headers_to_"
	    "add,request_headers_to_remove,response_headers_to_add,response_headers_to_remove,"
	    "stat_prefix,typed_per_filter_config,tracing");
	conv_per_filter(c, rt, &r->per_filter, &r->n_per_filter);
	conv_lua_route_md(c, pb_msg(rt, "metadata"), &r->lua_md, &r->lua_md_len);
	r->trace = conv_route_trace(c, rt);
	if (pb_has(rt, "name"))
		r->name = conv_str(c, pb_str(rt, "name"));
	conv_route_match(c, pb_msg(rt, "match"), r);
	const char *w = pb_which(rt, "action");
	if (!w) {
		conv_err(c, "", "no action: set route, redirect or direct_response");
	} else if (strcmp(w, "route") == 0) {
		r->action = ARN_CFG_ACTION_ROUTE;
		struct pb ra = pb_msg(rt, "route");
		route_action(c, ra, &r->route, vh_retry, inherits_retry);
		if (pb_has(ra, "cors")) {
			/* deprecated, as Envoy still reads it: the CORS filter's
			 * policy when no level has a per-filter one */
			size_t m = conv_push(c, "route.cors");
			r->cors = conv_cors(c, pb_msg(ra, "cors"), false);
			conv_pop(c, m);
		}
	} else if (strcmp(w, "redirect") == 0) {
		r->action = ARN_CFG_ACTION_REDIRECT;
		redirect(c, pb_msg(rt, "redirect"), &r->redirect);
	} else {
		r->action = ARN_CFG_ACTION_DIRECT;
		direct(c, pb_msg(rt, "direct_response"), &r->direct, max_body);
	}
	conv_header_ops(c, rt, &r->headers_ops);
}

/* ---- route index (see config_int.h) ------------------------------------ */

struct tnode {
	uint32_t child[2]; /* first child, next sibling */
	uint8_t byte;
	uint32_t *ids;
	uint32_t n, cap;
};

struct tbuild {
	struct tnode *n;
	uint32_t count, cap;
	bool oom;
};

static uint32_t tb_child(struct tbuild *b, uint32_t parent, uint8_t byte)
{
	uint32_t *link = &b->n[parent].child[0];
	while (*link && b->n[*link].byte < byte)
		link = &b->n[*link].child[1];
	if (*link && b->n[*link].byte == byte)
		return *link;
	if (b->count == b->cap) {
		uint32_t cap = b->cap * 2;
		struct tnode *nn = realloc(b->n, cap * sizeof(*nn));
		if (!nn) {
			b->oom = true;
			return 0;
		}
		b->n = nn;
		b->cap = cap;
		link = NULL; /* recompute after realloc */
		link = &b->n[parent].child[0];
		while (*link && b->n[*link].byte < byte)
			link = &b->n[*link].child[1];
	}
	uint32_t id = b->count++;
	memset(&b->n[id], 0, sizeof(b->n[id]));
	b->n[id].byte = byte;
	b->n[id].child[1] = *link; /* siblings stay sorted by byte */
	*link = id;
	return id;
}

static void tb_add(struct tbuild *b, uint32_t node, uint32_t route)
{
	struct tnode *t = &b->n[node];
	if (t->n == t->cap) {
		uint32_t cap = t->cap ? 2 * t->cap : 4;
		uint32_t *ids = realloc(t->ids, cap * sizeof(*ids));
		if (!ids) {
			b->oom = true;
			return;
		}
		t->ids = ids;
		t->cap = cap;
	}
	t->ids[t->n++] = route;
}

void conv_route_index(struct conv *c, struct arn_cfg_vhost *v)
{
	if (v->n_routes < 8 || v->n_routes > ARN_CFG_INDEX_MAX_ROUTES)
		return; /* a short list is scanned faster than indexed */
	struct tbuild b = {calloc(64, sizeof(struct tnode)), 1, 64, false};
	uint32_t *always = calloc(v->n_routes, sizeof(uint32_t));
	uint32_t n_always = 0, n_ids = 0;
	if (!b.n || !always)
		goto out;
	for (uint32_t i = 0; i < v->n_routes && !b.oom; i++) {
		const struct arn_cfg_route *r = &v->routes[i];
		const char *lit = r->path;
		size_t len = r->path_len;
		if (r->path_kind == ARN_CFG_PATH_REGEX)
			lit = r->path_re ? arn_regex_literal_prefix(r->path_re, &len) : "";
		if (r->path_kind == ARN_CFG_PATH_REGEX && !r->path_re)
			len = 0;
		if (len == 0) {
			always[n_always++] = i;
			continue;
		}
		uint32_t node = 0;
		for (size_t k = 0; k < len && !b.oom; k++)
			node = tb_child(&b, node, (uint8_t)tolower((unsigned char)lit[k]));
		if (!b.oom) {
			tb_add(&b, node, i);
			n_ids++;
		}
	}
	if (b.oom)
		goto out;
	struct arn_cfg_route_index *ix = CONV_NEW(c, struct arn_cfg_route_index, 1);
	if (!ix)
		goto out;
	ix->nodes = CONV_NEW(c, struct arn_cfg_rtrie_node, b.count);
	ix->route_ids = CONV_NEW(c, uint32_t, n_ids ? n_ids : 1);
	ix->always = CONV_NEW(c, uint32_t, n_always ? n_always : 1);
	if (!ix->nodes || !ix->route_ids || !ix->always)
		goto out;
	uint32_t off = 0;
	for (uint32_t k = 0; k < b.count; k++) {
		ix->nodes[k] = (struct arn_cfg_rtrie_node){b.n[k].child[0], b.n[k].child[1], off,
							   b.n[k].n, b.n[k].byte};
		if (b.n[k].n)
			memcpy(ix->route_ids + off, b.n[k].ids, b.n[k].n * sizeof(uint32_t));
		off += b.n[k].n;
	}
	ix->n_nodes = b.count;
	memcpy(ix->always, always, n_always * sizeof(uint32_t));
	ix->n_always = n_always;
	v->index = ix;
out:
	for (uint32_t k = 0; b.n && k < b.count; k++)
		free(b.n[k].ids);
	free(b.n);
	free(always);
}

/* ---- routes taken over from the previous version (issue 17) ----------------------- */

/*
 * RDS's unit is the RouteConfiguration: a control plane that changes one
 * route among 10,000 sends all 10,000, and converting each of them again
 * cost about 8k instructions (80M for the table, most of applying it). A
 * route is a function of its own bytes and of two things around it: its
 * virtual host's retry_policy (the default it copies) and the table's
 * max_direct_response_body_size_bytes. So each table keeps, per route, the
 * span of its bytes in a copy of the serialized table, and the next version
 * takes a route over (the struct copied, its parts shared) when its bytes
 * and that context are the same, converting only the others.
 *
 * The parts routes share across versions live in pools of their own ("route
 * data", refcounted by the tables that use them), not in a table's pool,
 * which holds what goes with the table (the object, virtual hosts, route
 * arrays, index). A route data pool lives while one of its routes is in a
 * table; so that dead routes cannot keep much alive, a table whose previous
 * version uses more than ROUTE_DATA_MAX pools, or pools holding more than
 * twice its routes (+ ROUTE_DATA_SLACK), is converted whole again.
 *
 * Never taken over, so that nothing but memory is shared: routes with
 * typed_per_filter_config (a local_ratelimit's token buckets live in its
 * configuration, and start full with every version, as Envoy's do), and
 * routes whose conversion read a file (direct_response's filename, read
 * again as Envoy does).
 */
#define ROUTE_DATA_MAX 32
#define ROUTE_DATA_SLACK 1024

struct rdata {
	long refs; /* tables using it (control lcore only) */
	struct arn_pool *pool;
	size_t n_routes; /* converted into it */
};

struct rent {
	uint64_t hash;	   /* of its bytes */
	uint32_t off, len; /* its bytes in the table's copy */
	uint32_t vh;	   /* its virtual host */
	bool inherits_retry;
	const struct arn_cfg_route *r;
	struct rdata *data; /* where its parts live */
};

struct rvh {
	bool comparable;	       /* at most one retry_policy field */
	uint32_t retry_off, retry_len; /* retry_len 0: none */
	uint32_t first, n;	       /* its routes' spans */
};

struct arn_cfg_route_reuse {
	char *src; /* the serialized RouteConfiguration (malloc'd) */
	size_t src_len;
	uint32_t max_body;
	struct rvh *vhs;
	size_t n_vhs;
	struct rent *ents; /* one per route, in order; hash 0 and r NULL: not reusable */
	size_t n_ents;
	uint32_t *idx; /* open addressing over ents: i + 1; 0 empty */
	size_t idx_mask;
	struct rdata **datas; /* one reference each */
	size_t n_datas, cap_datas;
};

static void rdata_put(struct rdata *d)
{
	if (d && --d->refs == 0) {
		arn_pool_free(d->pool);
		free(d);
	}
}

/* The table's pool is freed: drop its route data and its copy. */
static void reuse_free(void *arg)
{
	struct arn_cfg_route_reuse *x = arg;
	for (size_t i = 0; i < x->n_datas; i++)
		rdata_put(x->datas[i]);
	free(x->src);
}

static bool reuse_hold(struct arn_cfg_route_reuse *x, struct rdata *d)
{
	for (size_t i = x->n_datas; i-- > 0;)
		if (x->datas[i] == d)
			return true;
	if (x->n_datas == x->cap_datas)
		return false; /* cannot happen: sized for the previous version's + 1 */
	d->refs++;
	x->datas[x->n_datas++] = d;
	return true;
}

static uint64_t bytes_hash(const char *p, size_t n)
{
	/* FNV-1a, 8 bytes a step: spans of tens to hundreds of bytes */
	uint64_t h = 0xcbf29ce484222325ull ^ n;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, p + i, 8);
		h = (h ^ w) * 0x100000001b3ull;
		h ^= h >> 29;
	}
	for (; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 0x100000001b3ull;
	return h | 1; /* 0: not reusable */
}

/* Wire format: the next field of [*p, end). false at the end or when
 * malformed (*bad set). */
struct wfield {
	uint32_t num;
	int wt;
	const char *v; /* wire type 2: the value */
	size_t len;
};

static bool wvarint(const char **p, const char *end, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64 && *p < end; shift += 7) {
		uint8_t b = (uint8_t) * (*p)++;
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

static bool wnext(const char **p, const char *end, struct wfield *f, bool *bad)
{
	if (*p >= end)
		return false;
	uint64_t tag, v;
	if (!wvarint(p, end, &tag))
		goto bad;
	f->num = (uint32_t)(tag >> 3);
	f->wt = (int)(tag & 7);
	switch (f->wt) {
	case 0:
		if (!wvarint(p, end, &v))
			goto bad;
		return true;
	case 1:
	case 5: {
		size_t n = f->wt == 1 ? 8 : 4;
		if ((size_t)(end - *p) < n)
			goto bad;
		*p += n;
		return true;
	}
	case 2:
		if (!wvarint(p, end, &v) || v > (uint64_t)(end - *p))
			goto bad;
		f->v = *p;
		f->len = (size_t)v;
		*p += v;
		return true;
	default:
		goto bad;
	}
bad:
	*bad = true;
	return false;
}

static uint32_t field_num(const char *msg, const char *field)
{
	const upb_MessageDef *m = arn_proto_msgdef(msg);
	const upb_FieldDef *f = m ? upb_MessageDef_FindFieldByName(m, field) : NULL;
	return f ? (uint32_t)upb_FieldDef_Number(f) : 0;
}

/*
 * The spans of @p x->src: virtual hosts (their retry_policy) and routes, in
 * the order upb decoded them (a repeated field's elements in wire order).
 * @return false if the bytes do not say what @p nv and @p nroutes say
 * (nothing is then recorded, nothing taken over).
 */
static bool reuse_scan(struct conv *c, struct arn_cfg_route_reuse *x, size_t nv,
		       const size_t *nroutes, size_t total)
{
	const uint32_t f_vh = field_num(ARN_TYPE_ROUTE, "virtual_hosts");
	const uint32_t f_routes = field_num("envoy.config.route.v3.VirtualHost", "routes");
	const uint32_t f_retry = field_num("envoy.config.route.v3.VirtualHost", "retry_policy");
	if (!f_vh || !f_routes || !f_retry)
		return false;
	x->vhs = CONV_NEW(c, struct rvh, nv ? nv : 1);
	x->ents = CONV_NEW(c, struct rent, total ? total : 1);
	size_t cap = 16;
	while (cap < 2 * total)
		cap <<= 1;
	x->idx = CONV_NEW(c, uint32_t, cap);
	if (!x->vhs || !x->ents || !x->idx)
		return false;
	x->idx_mask = cap - 1;
	const char *p = x->src, *end = x->src + x->src_len;
	struct wfield f;
	bool bad = false;
	size_t iv = 0, ir = 0;
	while (wnext(&p, end, &f, &bad)) {
		if (f.num != f_vh || f.wt != 2)
			continue;
		if (iv == nv)
			return false;
		struct rvh *v = &x->vhs[iv];
		v->comparable = true;
		v->first = (uint32_t)ir;
		const char *q = f.v, *qe = f.v + f.len;
		struct wfield g;
		while (wnext(&q, qe, &g, &bad)) {
			if (g.wt != 2)
				continue;
			if (g.num == f_retry) {
				v->comparable = v->retry_len == 0;
				v->retry_off = (uint32_t)(g.v - x->src);
				v->retry_len = (uint32_t)g.len + 1; /* +1: present, maybe empty */
			} else if (g.num == f_routes) {
				if (ir == total)
					return false;
				x->ents[ir].off = (uint32_t)(g.v - x->src);
				x->ents[ir].len = (uint32_t)g.len;
				x->ents[ir].vh = (uint32_t)iv;
				ir++;
			}
		}
		v->n = (uint32_t)ir - v->first;
		if (bad || v->n != nroutes[iv])
			return false;
		iv++;
	}
	return !bad && iv == nv && ir == total && x->src_len <= UINT32_MAX;
}

/* Do the virtual hosts around a route of @p o (virtual host @p ov) and of
 * @p n (@p nv) give it the same context? */
static bool same_context(const struct arn_cfg_route_reuse *o, uint32_t ov,
			 const struct arn_cfg_route_reuse *n, uint32_t nv)
{
	const struct rvh *a = &o->vhs[ov], *b = &n->vhs[nv];
	return o->max_body == n->max_body && a->comparable && b->comparable &&
	       a->retry_len == b->retry_len &&
	       (a->retry_len <= 1 ||
		memcmp(o->src + a->retry_off, n->src + b->retry_off, a->retry_len - 1) == 0);
}

/* The previous version's route with the bytes of route @p e of @p n, in
 * the same context, or NULL. */
static const struct rent *reuse_find(const struct arn_cfg_route_reuse *o,
				     const struct arn_cfg_route_reuse *n, const struct rent *e)
{
	for (size_t i = (size_t)e->hash & o->idx_mask;; i = (i + 1) & o->idx_mask) {
		uint32_t k = o->idx[i];
		if (k == 0)
			return NULL;
		const struct rent *x = &o->ents[k - 1];
		if (x->hash == e->hash && x->len == e->len &&
		    memcmp(o->src + x->off, n->src + e->off, e->len) == 0 &&
		    same_context(o, x->vh, n, e->vh))
			return x;
	}
}

static void reuse_index(struct arn_cfg_route_reuse *x, size_t i)
{
	size_t k = (size_t)x->ents[i].hash & x->idx_mask;
	while (x->idx[k])
		k = (k + 1) & x->idx_mask;
	x->idx[k] = (uint32_t)i + 1;
}

/* May a new version take routes over from @p o (see ROUTE_DATA_MAX)? */
static bool reuse_ok(const struct arn_cfg_route_reuse *o)
{
	if (!o || !o->idx || o->n_datas >= ROUTE_DATA_MAX)
		return false;
	size_t held = 0;
	for (size_t i = 0; i < o->n_datas; i++)
		held += o->datas[i]->n_routes;
	return held <= 2 * o->n_ents + ROUTE_DATA_SLACK;
}

/* What a route taken over references: the clusters it names (X4). */
static void route_deps(struct conv *c, const struct arn_cfg_route *r)
{
	if (r->action != ARN_CFG_ACTION_ROUTE)
		return;
	const struct arn_cfg_route_action *a = &r->route;
	if (a->spec == ARN_CFG_CLUSTER_NAME)
		conv_dep(c, ARN_CFG_CLUSTER, a->cluster.name, a->cluster.len, false, 0);
	else if (a->spec == ARN_CFG_CLUSTER_WEIGHTED)
		for (size_t i = 0; i < a->n_weighted; i++)
			conv_dep(c, ARN_CFG_CLUSTER, a->weighted[i].cluster.name,
				 a->weighted[i].cluster.len, false, 0);
}

static bool valid_domain_char(char ch)
{
	return isalnum((unsigned char)ch) || strchr("-._~:[]*", ch) != NULL;
}

/* Domain classification; returns 0 exact, 1 suffix ("*.x"), 2 prefix ("x.*"), 3 "*", -1 bad. */
static int domain_kind(upb_StringView d)
{
	if (d.size == 1 && d.data[0] == '*')
		return 3;
	size_t stars = 0;
	for (size_t i = 0; i < d.size; i++) {
		if (!valid_domain_char(d.data[i]))
			return -1;
		stars += d.data[i] == '*';
	}
	if (stars == 0)
		return d.size ? 0 : -1;
	if (stars > 1)
		return -1;
	if (d.data[0] == '*')
		return 1;
	if (d.data[d.size - 1] == '*')
		return 2;
	return -1;
}

static int cmp_len_desc(const void *a, const void *b)
{
	const struct arn_cfg_domain *x = a, *y = b;
	return x->len < y->len ? 1 : x->len > y->len ? -1 : 0;
}

/*
 * The route table's record for the next version (see above), with a copy
 * of @p bytes, its route data held from now on; NULL (nothing recorded or
 * taken over) when the bytes do not scan or memory runs out.
 */
/* Routes per virtual host of serialized RouteConfiguration @p b, into
 * @p nr (@p nv of them). false: the bytes say otherwise. */
static bool count_routes(const char *b, size_t len, size_t nv, size_t *nr)
{
	const uint32_t f_vh = field_num(ARN_TYPE_ROUTE, "virtual_hosts");
	const uint32_t f_routes = field_num("envoy.config.route.v3.VirtualHost", "routes");
	const char *p = b, *end = b + len;
	struct wfield f, g;
	bool bad = false;
	size_t iv = 0;
	while (wnext(&p, end, &f, &bad)) {
		if (f.num != f_vh || f.wt != 2)
			continue;
		if (iv == nv)
			return false;
		const char *q = f.v, *qe = f.v + f.len;
		nr[iv] = 0;
		while (wnext(&q, qe, &g, &bad))
			nr[iv] += g.num == f_routes && g.wt == 2;
		iv++;
	}
	return !bad && iv == nv;
}

static struct arn_cfg_route_reuse *reuse_new(struct conv *c, struct pb rc, const char *bytes,
					     size_t len, const struct arn_cfg_route_reuse *old,
					     bool shell)
{
	size_t nv = pb_len(rc, "virtual_hosts"), total = 0;
	size_t *nr = calloc(nv ? nv : 1, sizeof(*nr));
	struct arn_cfg_route_reuse *x = CONV_NEW(c, struct arn_cfg_route_reuse, 1);
	char *src = malloc(len ? len : 1);
	if (!nr || !x || !src) {
		free(nr);
		free(src);
		return NULL;
	}
	memcpy(src, bytes, len);
	x->src = src;
	x->src_len = len;
	x->n_vhs = nv;
	x->cap_datas = (old ? old->n_datas : 0) + 1;
	x->datas = CONV_NEW(c, struct rdata *, x->cap_datas);
	if (!x->datas || arn_pool_on_free(c->pool, reuse_free, x) != 0) {
		free(nr);
		if (x->datas) /* else on_free ran it */
			free(src);
		return NULL;
	}
	/* a shell (conv_route_shell) has no routes: the bytes count them */
	bool ok = !shell || count_routes(bytes, len, nv, nr);
	for (size_t i = 0; i < nv; i++)
		total += shell ? nr[i] : (nr[i] = pb_len(pb_at(rc, "virtual_hosts", i), "routes"));
	ok = ok && reuse_scan(c, x, nv, nr, total);
	free(nr);
	if (!ok) {
		x->idx = NULL; /* offers nothing to the next version */
		x->n_ents = 0;
		return x;
	}
	x->n_ents = total;
	return x;
}

bool conv_route_shell(struct conv *c, const char *bytes, size_t len,
		      const struct arn_cfg_route_table *prev, struct pb *out)
{
	if (!prev || !reuse_ok(prev->reuse))
		return false; /* every route is decoded anyway: at once is cheaper */
	const uint32_t f_vh = field_num(ARN_TYPE_ROUTE, "virtual_hosts");
	const uint32_t f_routes = field_num("envoy.config.route.v3.VirtualHost", "routes");
	char *sh = upb_Arena_Malloc(c->arena, len + 16);
	char *vb = malloc(len ? len : 1);
	if (!f_vh || !f_routes || !sh || !vb) {
		free(vb);
		return false;
	}
	/* the same fields in the same order, less the routes: shorter
	 * lengths never take more varint bytes */
	size_t n = 0;
	const char *p = bytes, *end = bytes + len;
	struct wfield f, g;
	bool bad = false;
	for (const char *at = p; wnext(&p, end, &f, &bad); at = p) {
		if (f.num != f_vh || f.wt != 2) {
			memcpy(sh + n, at, (size_t)(p - at));
			n += (size_t)(p - at);
			continue;
		}
		size_t vn = 0;
		const char *q = f.v, *qe = f.v + f.len;
		for (const char *qat = q; wnext(&q, qe, &g, &bad); qat = q) {
			if (g.num == f_routes && g.wt == 2)
				continue;
			memcpy(vb + vn, qat, (size_t)(q - qat));
			vn += (size_t)(q - qat);
		}
		uint64_t tag = (uint64_t)f_vh << 3 | 2;
		for (uint64_t v = tag; v >= 0x80; v >>= 7)
			sh[n++] = (char)(v | 0x80);
		for (uint64_t v = tag;; v >>= 7)
			if (v < 0x80) {
				sh[n++] = (char)v;
				break;
			}
		for (uint64_t v = vn; v >= 0x80; v >>= 7)
			sh[n++] = (char)(v | 0x80);
		for (uint64_t v = vn;; v >>= 7)
			if (v < 0x80) {
				sh[n++] = (char)v;
				break;
			}
		memcpy(sh + n, vb, vn);
		n += vn;
	}
	free(vb);
	if (bad)
		return false;
	const upb_MessageDef *md = arn_proto_msgdef(ARN_TYPE_ROUTE);
	struct arn_sb err = ARN_SB_INIT;
	/* the bytes were walked (strictly) whole: the shell is a part of them */
	upb_Message *m = arn_proto_decode_walked(sh, n, md, c->arena, &err);
	arn_sb_free(&err);
	if (!m)
		return false;
	*out = (struct pb){m, md};
	return true;
}

/* Each route's no_hdr_edits and path_decides, once the table is whole:
 * the edits' levels are its weighted clusters, itself, its virtual host
 * and the table (http_router.c walks them in that order); path_decides
 * looks at the routes before it. A route taken over from the previous
 * version (its struct copied, flags and all) is looked at again: its
 * virtual host, its neighbours or the table may have changed. */
/* Does a level of @p t turn a filter off by name (FilterConfig.disabled)?
 * Then the HTTP layer asks arn_cfg_filter_off for every filter; else only
 * for the filters an HttpFilter.disabled turned off. */
static bool pf_off(const struct arn_cfg_per_filter *pf, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (pf[i].kind == ARN_CFG_PF_DISABLED)
			return true;
	return false;
}

static bool filter_toggles(const struct arn_cfg_route_table *t)
{
	if (pf_off(t->per_filter, t->n_per_filter))
		return true;
	for (size_t i = 0; i < t->n_vhosts; i++) {
		const struct arn_cfg_vhost *v = &t->vhosts[i];
		if (pf_off(v->per_filter, v->n_per_filter))
			return true;
		for (size_t j = 0; j < v->n_routes; j++)
			if (pf_off(v->routes[j].per_filter, v->routes[j].n_per_filter))
				return true;
	}
	return false;
}

static void table_edit_flags(struct arn_cfg_route_table *t)
{
	for (size_t i = 0; i < t->n_vhosts; i++) {
		const struct arn_cfg_vhost *v = &t->vhosts[i];
		bool by_path = true; /* so far in the virtual host */
		for (size_t j = 0; j < v->n_routes; j++) {
			struct arn_cfg_route *r = &v->routes[j];
			by_path = by_path && !r->n_headers && !r->n_query && !r->grpc_only;
			r->path_decides = by_path;
			uint8_t f = 0;
			for (int req = 0; req < 2; req++) {
				bool any = arn_cfg_header_ops_n(&t->headers_ops, req) ||
					   arn_cfg_header_ops_n(&v->headers_ops, req) ||
					   arn_cfg_header_ops_n(&r->headers_ops, req);
				for (size_t k = 0; k < r->route.n_weighted && !any; k++)
					any = arn_cfg_header_ops_n(&r->route.weighted[k].headers,
								   req);
				if (!any)
					f |= req ? ARN_CFG_NO_REQ_EDITS : ARN_CFG_NO_RESP_EDITS;
			}
			r->no_hdr_edits = f;
		}
	}
}

struct arn_cfg_obj *arn_conv_route_table(struct conv *c, struct pb rc, bool is_inline,
					 struct conv_route_src *src)
{
	const struct arn_cfg_route_table *prev = src ? src->prev : NULL;
	const char *bytes = src ? src->bytes : NULL;
	size_t len = src ? src->len : 0;
	bool shell = src && src->shell;
	const struct rent **hits = NULL;
	const upb_Message **msgs = NULL;
	const upb_MessageDef *route_md = arn_proto_msgdef("envoy.config.route.v3.Route");
	struct arn_pool *saved = c->pool;
	c->pool = arn_pool_new(is_inline ? 1024 : 4096);
	if (!c->pool) {
		c->pool = saved;
		return NULL;
	}
	int nerr0 = c->nerr;
	struct arn_cfg_route_table *t =
	    conv_obj_new(c, sizeof(*t), ARN_CFG_ROUTE, pb_str(rc, "name"));
	if (!t)
		goto fail;
	t->obj.inline_owned = is_inline;
	/* what the previous version offers, and what this one records */
	const struct arn_cfg_route_reuse *old = prev && reuse_ok(prev->reuse) ? prev->reuse : NULL;
	struct arn_cfg_route_reuse *rx =
	    !is_inline && bytes ? reuse_new(c, rc, bytes, len, old, shell) : NULL;
	if (!rx || !rx->idx)
		old = NULL;
	t->reuse = rx;
	uint32_t max_body = 4096;
	pb_wrapped_u32(rc, "max_direct_response_body_size_bytes", &max_body);
	if (rx)
		rx->max_body = max_body;
	if (shell) {
		/* @p rc is a shell: each route is taken over or decoded from
		 * its bytes, all before anything is converted, so that bytes
		 * that do not decode are reported as the whole table's are */
		size_t n = old ? rx->n_ents : 0;
		hits = calloc(n ? n : 1, sizeof(*hits));
		msgs = calloc(n ? n : 1, sizeof(*msgs));
		if (!old || !hits || !msgs || !route_md)
			goto fallback;
		for (size_t k = 0; k < n; k++) {
			struct rent *re = &rx->ents[k];
			re->hash = bytes_hash(rx->src + re->off, re->len);
			if ((hits[k] = reuse_find(old, rx, re)))
				continue;
			struct arn_sb err = ARN_SB_INIT;
			msgs[k] = arn_proto_decode_walked(rx->src + re->off, re->len, route_md,
							  c->arena, &err);
			arn_sb_free(&err);
			if (!msgs[k])
				goto fallback;
		}
	}
	struct rdata *fresh = NULL; /* the parts of the routes converted here */
	conv_only(c, rc,
		  "name,virtual_hosts,response_headers_to_add,response_headers_to_remove,request_"
		  "headers_to_add,request_headers_to_remove,most_specific_header_mutations_wins,"
		  "validate_clusters,max_direct_response_body_size_bytes,ignore_port_in_host_"
		  "matching,typed_per_filter_config");
	bool vc = false;
	if (pb_wrapped_bool(rc, "validate_clusters", &vc) && vc)
		conv_err(c, "validate_clusters",
			 "true is refused: routes naming unknown clusters are installed and answer "
			 "503 NC until the cluster arrives (G5)");
	t->ignore_port_in_host_matching = pb_bool(rc, "ignore_port_in_host_matching");
	t->most_specific_header_mutations_wins = pb_bool(rc, "most_specific_header_mutations_wins");
	conv_header_ops(c, rc, &t->headers_ops);
	conv_per_filter_newer(c, rc, &t->per_filter, &t->n_per_filter);
	t->default_vhost = -1;
	size_t nv = pb_len(rc, "virtual_hosts");
	t->vhosts = CONV_NEW(c, struct arn_cfg_vhost, nv ? nv : 1);
	if (!t->vhosts)
		goto fail;
	t->n_vhosts = nv;
	size_t ndom = 0;
	for (size_t i = 0; i < nv; i++)
		ndom += pb_len(pb_at(rc, "virtual_hosts", i), "domains");
	size_t slots = 4;
	while (slots < 2 * ndom)
		slots *= 2;
	t->exact = CONV_NEW(c, struct arn_cfg_domain, slots);
	t->suffix = CONV_NEW(c, struct arn_cfg_domain, ndom ? ndom : 1);
	t->prefix = CONV_NEW(c, struct arn_cfg_domain, ndom ? ndom : 1);
	if (!t->exact || !t->suffix || !t->prefix)
		goto fail;
	t->n_exact_slots = slots;
	size_t n_exact = 0;
	for (size_t i = 0; i < nv; i++) {
		struct pb vh = pb_at(rc, "virtual_hosts", i);
		struct arn_cfg_vhost *v = &t->vhosts[i];
		size_t m = conv_push(c, "virtual_hosts[%zu]", i);
		conv_only(
		    c, vh,
		    "name,domains,routes,require_tls,request_headers_to_add,request_headers_to_"
		    "remove,response_headers_to_add,response_headers_to_remove,retry_policy,"
		    "include_request_attempt_count,typed_per_filter_config,rate_limits,cors");
		conv_per_filter(c, vh, &v->per_filter, &v->n_per_filter);
		v->rc_per_filter = t->per_filter;
		v->n_rc_per_filter = t->n_per_filter;
		if (pb_has(vh, "cors")) {
			size_t m2 = conv_push(c, "cors");
			v->cors = conv_cors(c, pb_msg(vh, "cors"), false);
			conv_pop(c, m2);
		}
		conv_rate_limits(c, vh, &v->rate_limits, &v->n_rate_limits);
		upb_StringView vname = pb_str(vh, "name");
		if (vname.size == 0)
			conv_err(c, "name", "missing");
		for (size_t j = 0; j < i; j++)
			if (t->vhosts[j].name && strlen(t->vhosts[j].name) == vname.size &&
			    memcmp(t->vhosts[j].name, vname.data, vname.size) == 0 && vname.size)
				conv_err(c, "name", "'%.*s' is used twice", (int)vname.size,
					 vname.data);
		v->name = conv_str(c, vname);
		int32_t tls = pb_i32(vh, "require_tls");
		if (tls < 0 || tls > 2)
			conv_err(c, "require_tls", "unknown value");
		v->require_tls = (uint8_t)tls;
		v->include_request_attempt_count = pb_bool(vh, "include_request_attempt_count");
		conv_header_ops(c, vh, &v->headers_ops);
		struct pb rp = pb_msg(vh, "retry_policy");
		if (rp.m) {
			size_t m2 = conv_push(c, "retry_policy");
			retry_policy(c, rp, &v->retry);
			conv_pop(c, m2);
		}
		size_t nd = pb_len(vh, "domains");
		if (nd == 0)
			conv_err(c, "domains", "empty: a virtual host needs at least one domain");
		for (size_t j = 0; j < nd; j++) {
			upb_StringView d = pb_str_at(vh, "domains", j);
			const char *ld = conv_lstr(c, d);
			if (!ld)
				goto fail;
			int k = domain_kind(d);
			size_t m2 = conv_push(c, "domains[%zu]", j);
			struct arn_cfg_domain e = {ld, d.size, (uint32_t)i};
			bool dup = false;
			switch (k) {
			case 0: {
				size_t h = (size_t)arn_cfg_hash(ld, d.size) & (slots - 1);
				while (t->exact[h].s) {
					if (t->exact[h].len == d.size &&
					    !memcmp(t->exact[h].s, ld, d.size))
						dup = true;
					h = (h + 1) & (slots - 1);
				}
				if (!dup) {
					t->exact[h] = e;
					n_exact++;
				}
				break;
			}
			case 1:
				e.s = ld + 1;
				e.len = d.size - 1;
				for (size_t x = 0; x < t->n_suffix; x++)
					dup |= t->suffix[x].len == e.len &&
					       !memcmp(t->suffix[x].s, e.s, e.len);
				if (!dup)
					t->suffix[t->n_suffix++] = e;
				break;
			case 2:
				e.len = d.size - 1;
				for (size_t x = 0; x < t->n_prefix; x++)
					dup |= t->prefix[x].len == e.len &&
					       !memcmp(t->prefix[x].s, e.s, e.len);
				if (!dup)
					t->prefix[t->n_prefix++] = e;
				break;
			case 3:
				dup = t->default_vhost >= 0;
				t->default_vhost = (int32_t)i;
				break;
			default:
				conv_err(c, "",
					 "'%.*s' is not a domain: one '*' at most, at the start or "
					 "the end",
					 (int)d.size, d.data);
			}
			if (dup)
				conv_err(c, "",
					 "domain '%.*s' appears twice in this route configuration "
					 "(domains must be unique across virtual hosts)",
					 (int)d.size, d.data);
			conv_pop(c, m2);
		}
		size_t nr = shell ? rx->vhs[i].n : pb_len(vh, "routes");
		v->routes = CONV_NEW(c, struct arn_cfg_route, nr ? nr : 1);
		if (!v->routes)
			goto fail;
		v->n_routes = nr;
		for (size_t j = 0; j < nr; j++) {
			struct arn_cfg_route *r = &v->routes[j];
			struct rent *re = rx && rx->idx ? &rx->ents[rx->vhs[i].first + j] : NULL;
			size_t k = rx && rx->idx ? rx->vhs[i].first + j : 0;
			if (re && !shell)
				re->hash = bytes_hash(rx->src + re->off, re->len);
			const struct rent *ro = shell ? hits[k]
						: old ? reuse_find(old, rx, re)
						      : NULL;
			if (ro && reuse_hold(rx, ro->data)) {
				*r = *ro->r;
				/* the virtual host's default: the same bytes, this
				 * version's copy (the previous one goes with it) */
				if (ro->inherits_retry)
					r->route.retry = v->retry;
				route_deps(c, r);
				re->r = r;
				re->data = ro->data;
				re->inherits_retry = ro->inherits_retry;
				reuse_index(rx, (size_t)(re - rx->ents));
				c->routes_reused++;
				continue;
			}
			if (rx && !fresh) {
				fresh = calloc(1, sizeof(*fresh));
				if (fresh && !(fresh->pool = arn_pool_new(4096))) {
					free(fresh);
					fresh = NULL;
				}
				if (!fresh || !reuse_hold(rx, fresh)) {
					if (fresh)
						arn_pool_free(fresh->pool);
					free(fresh);
					goto fail;
				}
			}
			/* its parts in the route data, the route in the table */
			struct arn_pool *tp = c->pool;
			if (fresh)
				c->pool = fresh->pool;
			unsigned files = c->files_read;
			bool inherits = false;
			size_t m2 = conv_push(c, "routes[%zu]", j);
			route(c, shell ? (struct pb){msgs[k], route_md} : pb_at(vh, "routes", j), r,
			      rp.m ? &v->retry : NULL, max_body, &inherits);
			conv_pop(c, m2);
			c->pool = tp;
			c->routes_converted++;
			if (fresh) {
				fresh->n_routes++;
				if (arn_pool_failed(fresh->pool))
					conv_err(c, "", "out of memory");
			}
			if (re && fresh && r->n_per_filter == 0 && c->files_read == files) {
				re->r = r;
				re->data = fresh;
				re->inherits_retry = inherits;
				reuse_index(rx, (size_t)(re - rx->ents));
			} else if (re) {
				re->hash = 0; /* not offered to the next version */
			}
		}
		vhost_rate_limits(c, v);
		conv_route_index(c, v);
		conv_pop(c, m);
	}
	qsort(t->suffix, t->n_suffix, sizeof(*t->suffix), cmp_len_desc);
	qsort(t->prefix, t->n_prefix, sizeof(*t->prefix), cmp_len_desc);
	/* no exact domain (only "*" or wildcards, as many configurations
	 * have): no slots, so a request's Host is not hashed for nothing */
	if (n_exact == 0)
		t->n_exact_slots = 0;
	table_edit_flags(t);
	t->filter_toggles = filter_toggles(t);
	if (arn_pool_failed(c->pool) || c->nerr > nerr0)
		goto fail;
	free(hits);
	free(msgs);
	c->pool = saved;
	return &t->obj;
fallback:
	/* the caller converts the table decoded whole */
	src->fallback = true;
	free(hits);
	free(msgs);
	arn_pool_free(c->pool);
	c->pool = saved;
	return NULL;
fail:
	if (c->nerr == nerr0)
		conv_err(c, "", "out of memory");
	free(hits);
	free(msgs);
	arn_pool_free(c->pool);
	c->pool = saved;
	return NULL;
}
