/*
 * A route's RouteMatch (path, case, headers, query parameters, gRPC) ->
 * struct arn_cfg_route's match fields. Used by route tables (conv_route.c)
 * and by filters that match requests as routes do (jwt_authn's rules,
 * conv_l4.c): below both, it calls only the common matchers.
 */
#include <string.h>

#include "config_int.h"

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

void conv_route_match(struct conv *c, struct pb rm, struct arn_cfg_route *r)
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
