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

#include "arn_regex.h"
#include "config_int.h"

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
	};
	conv_only(
	    c, rp,
	    "retry_on,num_retries,per_try_timeout,per_try_idle_timeout,retriable_status_codes,"
	    "retry_back_off,host_selection_retry_max_attempts");
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
			else if (b - a == 17 && memcmp(on.data + a, "retriable-headers", 17) == 0)
				/* it matches retriable_headers, which is refused */
				conv_err(c, "retry_on",
					 "'retriable-headers' is not supported yet (it needs "
					 "retriable_headers)");
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

static void query_matcher(struct conv *c, struct pb qm, struct arn_cfg_query_match *out)
{
	conv_only(c, qm, "name,string_match,present_match");
	upb_StringView name = pb_str(qm, "name");
	if (name.size == 0)
		conv_err(c, "name", "missing");
	out->name = conv_str(c, name);
	out->name_len = name.size;
	const char *w = pb_which(qm, "query_parameter_match_specifier");
	if (!w) {
		conv_err(c, "", "set string_match or present_match");
	} else if (strcmp(w, "present_match") == 0) {
		out->present_only = true;
		if (!pb_bool(qm, "present_match"))
			conv_err(c, "present_match", "must be true (Envoy matches presence only)");
	} else {
		size_t m = conv_push(c, "string_match");
		conv_string_matcher(c, pb_msg(qm, "string_match"), &out->str);
		conv_pop(c, m);
	}
}

static void route_match(struct conv *c, struct pb rm, struct arn_cfg_route *r)
{
	size_t m0 = conv_push(c, "match");
	if (!rm.m) {
		conv_err(c, "", "missing");
		conv_pop(c, m0);
		return;
	}
	conv_only(c, rm,
		  "prefix,path,safe_regex,path_separated_prefix,case_sensitive,headers,query_"
		  "parameters,grpc");
	const char *w = pb_which(rm, "path_specifier");
	r->case_sensitive = true;
	pb_wrapped_bool(rm, "case_sensitive", &r->case_sensitive);
	if (!w) {
		conv_err(c, "",
			 "no path specifier: set prefix, path, safe_regex or "
			 "path_separated_prefix");
	} else if (strcmp(w, "safe_regex") == 0) {
		size_t m = conv_push(c, "safe_regex");
		r->path_kind = ARN_CFG_PATH_REGEX;
		r->path_re = conv_regex(c, pb_msg(rm, "safe_regex"));
		conv_pop(c, m);
	} else {
		upb_StringView s = pb_str(rm, w);
		r->path_kind = strcmp(w, "prefix") == 0 ? ARN_CFG_PATH_PREFIX
			       : strcmp(w, "path") == 0 ? ARN_CFG_PATH_EXACT
							: ARN_CFG_PATH_SEPARATED_PREFIX;
		if (r->path_kind == ARN_CFG_PATH_SEPARATED_PREFIX) {
			if (s.size == 0 || s.data[0] != '/')
				conv_err(c, w, "must start with /");
			else if (s.size > 1 && s.data[s.size - 1] == '/')
				conv_err(c, w, "must not end with /");
			if (memchr(s.data, '?', s.size) || memchr(s.data, '#', s.size))
				conv_err(c, w, "must not contain ? or #");
		}
		r->path = r->case_sensitive ? conv_str(c, s) : conv_lstr(c, s);
		r->path_len = s.size;
	}
	size_t nh = pb_len(rm, "headers");
	if (nh) {
		r->headers = CONV_NEW(c, struct arn_cfg_header_match, nh);
		if (r->headers) {
			r->n_headers = nh;
			for (size_t i = 0; i < nh; i++) {
				size_t m = conv_push(c, "headers[%zu]", i);
				conv_header_matcher(c, pb_at(rm, "headers", i), &r->headers[i]);
				conv_pop(c, m);
			}
		}
	}
	size_t nq = pb_len(rm, "query_parameters");
	if (nq) {
		r->query = CONV_NEW(c, struct arn_cfg_query_match, nq);
		if (r->query) {
			r->n_query = nq;
			for (size_t i = 0; i < nq; i++) {
				size_t m = conv_push(c, "query_parameters[%zu]", i);
				query_matcher(c, pb_at(rm, "query_parameters", i), &r->query[i]);
				conv_pop(c, m);
			}
		}
	}
	if (pb_has(rm, "grpc")) {
		r->grpc_only = true;
	}
	conv_pop(c, m0);
}

static void cluster_ref(struct conv *c, struct arn_cfg_ref *r, upb_StringView name)
{
	conv_refs(c, r, name);
	/* routes reference clusters without warming on them (G5) */
	conv_dep(c, ARN_CFG_CLUSTER, name.data, name.size, false, 0);
}

static void route_action(struct conv *c, struct pb ra, struct arn_cfg_route_action *a,
			 const struct arn_cfg_retry_policy *vh_retry)
{
	size_t m0 = conv_push(c, "route");
	conv_only(c, ra,
		  "cluster,cluster_header,weighted_clusters,cluster_not_found_response_code,"
		  "prefix_rewrite,regex_rewrite,host_rewrite_literal,auto_host_rewrite,timeout,"
		  "idle_timeout,retry_policy,hash_policy,append_x_forwarded_host,upgrade_configs,"
		  "rate_limits,include_vh_rate_limits,max_grpc_timeout,grpc_timeout_offset,"
		  "max_stream_duration");
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
		a->prefix_rewrite = conv_str(c, s);
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
		a->regex_substitution = conv_str(c, sub);
		char err[200];
		if (a->regex_rewrite && a->regex_substitution &&
		    !arn_regex_check_substitution(a->regex_rewrite, a->regex_substitution, err,
						  sizeof(err)))
			conv_err(c, "substitution", "%s", err);
		conv_pop(c, m);
	}
	const char *hw = pb_which(ra, "host_rewrite_specifier");
	if (hw && strcmp(hw, "host_rewrite_literal") == 0) {
		a->host_rewrite_literal = conv_str(c, pb_str(ra, "host_rewrite_literal"));
	} else if (hw && strcmp(hw, "auto_host_rewrite") == 0) {
		bool v = false;
		pb_wrapped_bool(ra, "auto_host_rewrite", &v);
		a->auto_host_rewrite = v;
	}
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
			h->name = conv_str(c, pb_str(x, "name"));
			h->name_len = pb_str(x, "name").size;
			if (!h->name_len)
				conv_err(c, "name", "missing");
			conv_duration(c, x, "ttl", &h->cookie_ttl_ms, false);
			if (pb_has(x, "path"))
				h->cookie_path = conv_str(c, pb_str(x, "path"));
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
	conv_pop(c, m0);
}

static void redirect(struct conv *c, struct pb ra, struct arn_cfg_redirect *r)
{
	size_t m0 = conv_push(c, "redirect");
	conv_only(c, ra,
		  "https_redirect,scheme_redirect,host_redirect,port_redirect,path_redirect,"
		  "prefix_rewrite,response_code,strip_query");
	if (pb_bool(ra, "https_redirect"))
		r->scheme = "https";
	else if (pb_has(ra, "scheme_redirect"))
		r->scheme = conv_lstr(c, pb_str(ra, "scheme_redirect"));
	if (pb_has(ra, "host_redirect"))
		r->host = conv_str(c, pb_str(ra, "host_redirect"));
	r->port = pb_u32(ra, "port_redirect");
	if (r->port > 65535)
		conv_err(c, "port_redirect", "not a port");
	if (pb_has(ra, "path_redirect")) {
		upb_StringView p = pb_str(ra, "path_redirect");
		if (p.size == 0 || p.data[0] != '/')
			conv_err(c, "path_redirect", "must start with /");
		r->path = conv_str(c, p);
	}
	if (pb_has(ra, "prefix_rewrite"))
		r->prefix_rewrite = conv_str(c, pb_str(ra, "prefix_rewrite"));
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
		conv_only(c, b, "inline_string,inline_bytes,filename");
		const char *w = pb_which(b, "specifier");
		if (w && strcmp(w, "filename") == 0) {
			upb_StringView fn = pb_str(b, "filename");
			char *path = strndup(fn.data, fn.size);
			char *buf = NULL;
			size_t n = 0;
			if (path && conv_read_file(c, "filename", path, max_body, &buf, &n) == 0) {
				r->body = arn_pool_strndup(c->pool, buf, n);
				r->body_len = n;
			}
			free(buf);
			free(path);
		} else if (w) {
			upb_StringView s = pb_str(b, w);
			if (s.size > max_body)
				conv_err(c, w,
					 "%zu bytes: longer than "
					 "max_direct_response_body_size_bytes (%u)",
					 s.size, max_body);
			r->body = conv_str(c, s);
			r->body_len = s.size;
		}
		conv_pop(c, m);
	}
	conv_pop(c, m0);
}

static void route(struct conv *c, struct pb rt, struct arn_cfg_route *r,
		  const struct arn_cfg_retry_policy *vh_retry, uint32_t max_body)
{
	conv_only(
	    c, rt,
	    "name,match,route,redirect,direct_response,metadata,decorator,request_headers_to_"
	    "add,request_headers_to_remove,response_headers_to_add,response_headers_to_remove,"
	    "stat_prefix,typed_per_filter_config");
	conv_per_filter(c, rt, &r->per_filter, &r->n_per_filter);
	if (pb_has(rt, "name"))
		r->name = conv_str(c, pb_str(rt, "name"));
	route_match(c, pb_msg(rt, "match"), r);
	const char *w = pb_which(rt, "action");
	if (!w) {
		conv_err(c, "", "no action: set route, redirect or direct_response");
	} else if (strcmp(w, "route") == 0) {
		r->action = ARN_CFG_ACTION_ROUTE;
		route_action(c, pb_msg(rt, "route"), &r->route, vh_retry);
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

struct arn_cfg_obj *arn_conv_route_table(struct conv *c, struct pb rc, bool is_inline)
{
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
	conv_only(c, rc,
		  "name,virtual_hosts,response_headers_to_add,response_headers_to_remove,request_"
		  "headers_to_add,request_headers_to_remove,most_specific_header_mutations_wins,"
		  "validate_clusters,max_direct_response_body_size_bytes,ignore_port_in_host_"
		  "matching");
	bool vc = false;
	if (pb_wrapped_bool(rc, "validate_clusters", &vc) && vc)
		conv_err(c, "validate_clusters",
			 "true is refused: routes naming unknown clusters are installed and answer "
			 "503 NC until the cluster arrives (G5)");
	uint32_t max_body = 4096;
	pb_wrapped_u32(rc, "max_direct_response_body_size_bytes", &max_body);
	t->ignore_port_in_host_matching = pb_bool(rc, "ignore_port_in_host_matching");
	t->most_specific_header_mutations_wins = pb_bool(rc, "most_specific_header_mutations_wins");
	conv_header_ops(c, rc, &t->headers_ops);
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
	for (size_t i = 0; i < nv; i++) {
		struct pb vh = pb_at(rc, "virtual_hosts", i);
		struct arn_cfg_vhost *v = &t->vhosts[i];
		size_t m = conv_push(c, "virtual_hosts[%zu]", i);
		conv_only(
		    c, vh,
		    "name,domains,routes,require_tls,request_headers_to_add,request_headers_to_"
		    "remove,response_headers_to_add,response_headers_to_remove,retry_policy,"
		    "include_request_attempt_count,typed_per_filter_config,rate_limits");
		conv_per_filter(c, vh, &v->per_filter, &v->n_per_filter);
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
				if (!dup)
					t->exact[h] = e;
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
		size_t nr = pb_len(vh, "routes");
		v->routes = CONV_NEW(c, struct arn_cfg_route, nr ? nr : 1);
		if (!v->routes)
			goto fail;
		v->n_routes = nr;
		for (size_t j = 0; j < nr; j++) {
			size_t m2 = conv_push(c, "routes[%zu]", j);
			route(c, pb_at(vh, "routes", j), &v->routes[j], rp.m ? &v->retry : NULL,
			      max_body);
			conv_pop(c, m2);
		}
		conv_route_index(c, v);
		conv_pop(c, m);
	}
	qsort(t->suffix, t->n_suffix, sizeof(*t->suffix), cmp_len_desc);
	qsort(t->prefix, t->n_prefix, sizeof(*t->prefix), cmp_len_desc);
	if (arn_pool_failed(c->pool) || c->nerr > nerr0)
		goto fail;
	c->pool = saved;
	return &t->obj;
fail:
	if (c->nerr == nerr0)
		conv_err(c, "", "out of memory");
	arn_pool_free(c->pool);
	c->pool = saved;
	return NULL;
}
