/*
 * TDS, the sixth family (X2): arion.extensions.mcp.v3.ToolSet ->
 * struct arn_cfg_toolset, and the HTTP filter that names one
 * (arion.extensions.filters.http.mcp_gateway.v3.McpGateway, X14) ->
 * struct arn_cfg_mcp_filter.
 *
 * A ToolSet references clusters by name and does not warm on them (G5: as
 * routes, it is installed and its calls fail naming the backend until the
 * cluster exists). A listener whose connection manager carries the filter
 * warms on its ToolSet as on an RDS route table (G6), and that reference is
 * what makes the store report the name to the xDS client (X4).
 */
#include <stdio.h>
#include <string.h>

#include "arn_bootstrap.h"
#include "arn_proto.h"
#include "config_int.h"

/* The tool name alphabet of MCP's 2025-11-25 revision (SEP-986) less '/':
 * backend names become tool-name prefixes, so they must be tool-name
 * characters; '/' is kept out of names to leave it to separators and
 * tools' own hierarchies. */
static bool name_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '_' || ch == '-' || ch == '.';
}

static void check_name(struct conv *c, const char *field, upb_StringView n, const char *what)
{
	if (n.size == 0) {
		conv_err(c, field, "missing: a %s needs a name", what);
		return;
	}
	if (n.size > ARN_CFG_MCP_MAX_NAME) {
		conv_err(c, field, "'%.*s...' is longer than %u characters", 32, n.data,
			 ARN_CFG_MCP_MAX_NAME);
		return;
	}
	for (size_t i = 0; i < n.size; i++)
		if (!name_char(n.data[i])) {
			conv_err(c, field,
				 "'%.*s': only A-Z a-z 0-9 _ - . may appear (it becomes part of "
				 "tool names)",
				 (int)n.size, n.data);
			return;
		}
}

/* An HTTP path for a backend's or the gateway's MCP endpoint. */
static void check_path(struct conv *c, const char *field, upb_StringView p)
{
	if (p.size == 0)
		return; /* the default */
	if (p.data[0] != '/') {
		conv_err(c, field, "'%.*s' must start with '/'", (int)p.size, p.data);
		return;
	}
	for (size_t i = 0; i < p.size; i++)
		if ((unsigned char)p.data[i] <= ' ' || p.data[i] == 127 || p.data[i] == '?' ||
		    p.data[i] == '#') {
			conv_err(c, field,
				 "'%.*s' is not a plain path (no spaces, controls, '?' or '#')",
				 (int)p.size, p.data);
			return;
		}
}

static const char *path_or_default(struct conv *c, upb_StringView p, size_t *len)
{
	if (p.size == 0) {
		*len = strlen(ARN_CFG_MCP_DEFAULT_PATH);
		return ARN_CFG_MCP_DEFAULT_PATH;
	}
	*len = p.size;
	return conv_str(c, p);
}

static void tool_matchers(struct conv *c, struct pb p, const char *f,
			  struct arn_cfg_mcp_tool_match **out, size_t *n,
			  const struct arn_cfg_toolset *ts, bool required)
{
	size_t len = pb_len(p, f);
	if (len == 0) {
		if (required)
			conv_err(c, f, "empty: name at least one tool");
		return;
	}
	*out = CONV_NEW(c, struct arn_cfg_mcp_tool_match, len);
	if (*out == NULL)
		return;
	*n = len;
	for (size_t i = 0; i < len; i++) {
		struct pb tm = pb_at(p, f, i);
		struct arn_cfg_mcp_tool_match *m = &(*out)[i];
		size_t mark = conv_push(c, "%s[%zu]", f, i);
		conv_only(c, tm, "name,backend");
		struct pb sm = pb_msg(tm, "name");
		if (sm.m == NULL) {
			conv_err(c, "name", "missing: a StringMatcher for the tool's name");
		} else {
			size_t m2 = conv_push(c, "name");
			conv_string_matcher(c, sm, &m->name);
			conv_pop(c, m2);
		}
		upb_StringView b = pb_str(tm, "backend");
		if (b.size) {
			bool known = false;
			for (size_t k = 0; k < ts->n_backends && !known; k++)
				known = ts->backends[k].name_len == b.size &&
					memcmp(ts->backends[k].name, b.data, b.size) == 0;
			if (!known)
				conv_err(c, "backend",
					 "'%.*s' is not one of the ToolSet's backends", (int)b.size,
					 b.data);
			m->backend = conv_str(c, b);
			m->backend_len = b.size;
		}
		conv_pop(c, mark);
	}
}

static void backend(struct conv *c, struct pb b, struct arn_cfg_mcp_backend *out)
{
	conv_only(c, b, "name,cluster,path,timeout,request_headers_to_add");
	upb_StringView n = pb_str(b, "name");
	check_name(c, "name", n, "backend");
	out->name = conv_str(c, n);
	out->name_len = n.size;
	upb_StringView cl = pb_str(b, "cluster");
	if (cl.size == 0)
		conv_err(c, "cluster", "missing: the cluster that reaches this MCP server");
	conv_refs(c, &out->cluster, cl);
	upb_StringView p = pb_str(b, "path");
	check_path(c, "path", p);
	out->path = path_or_default(c, p, &out->path_len);
	out->timeout_ms = ARN_CFG_MCP_DEFAULT_BACKEND_TIMEOUT_MS;
	conv_duration(c, b, "timeout", &out->timeout_ms, false);
	conv_header_add_list(c, b, "request_headers_to_add", &out->headers, &out->n_headers);
	/* more would not fit in a backend request's headers: every request
	 * to the backend would fail ("too many headers"), tools/list included */
	if (out->n_headers > ARN_CFG_MCP_MAX_BACKEND_HEADERS)
		conv_err(c, "request_headers_to_add", "%zu headers; at most %u", out->n_headers,
			 ARN_CFG_MCP_MAX_BACKEND_HEADERS);
	/* the gateway sets these itself, per request and per backend session
	 * (accept too: a second one, and the backend's answer depends on
	 * which it reads) */
	for (size_t i = 0; i < out->n_headers; i++) {
		const char *k = out->headers[i].key;
		if (k &&
		    (strcmp(k, "mcp-session-id") == 0 || strcmp(k, "mcp-protocol-version") == 0 ||
		     strcmp(k, "mcp-method") == 0 || strcmp(k, "mcp-name") == 0 ||
		     strcmp(k, "content-length") == 0 || strcmp(k, "content-type") == 0 ||
		     strcmp(k, "transfer-encoding") == 0 || strcmp(k, "host") == 0 ||
		     strcmp(k, "accept") == 0)) {
			size_t m = conv_push(c, "request_headers_to_add[%zu]", i);
			conv_err(c, "header.key",
				 "'%s' is set by the gateway for each request and cannot be added",
				 k);
			conv_pop(c, m);
		}
	}
}

static void principal(struct conv *c, struct pb p, struct arn_cfg_mcp_principal *out)
{
	conv_only(c, p, "header,client_cert_san");
	const char *w = pb_which(p, "identifier");
	if (w == NULL) {
		conv_err(c, "", "empty: set header or client_cert_san");
	} else if (strcmp(w, "header") == 0) {
		out->kind = ARN_CFG_MCP_PRINCIPAL_HEADER;
		size_t m = conv_push(c, "header");
		conv_header_matcher(c, pb_msg(p, "header"), &out->header);
		conv_pop(c, m);
	} else {
		out->kind = ARN_CFG_MCP_PRINCIPAL_SAN;
		size_t m = conv_push(c, "client_cert_san");
		conv_string_matcher(c, pb_msg(p, "client_cert_san"), &out->san);
		conv_pop(c, m);
	}
}

struct arn_cfg_obj *arn_conv_toolset(struct conv *c, struct pb p)
{
	upb_StringView name = pb_str(p, "name");
	struct arn_cfg_toolset *ts = conv_obj_new(c, sizeof(*ts), ARN_CFG_TOOLSET, name);
	if (ts == NULL)
		return NULL;
	conv_only(c, p,
		  "name,backends,tool_filter,prefix_mode,prefix_separator,access_rules,"
		  "tools_list_cache_ttl");
	if (name.size == 0)
		conv_err(c, "name", "missing");

	size_t nb = pb_len(p, "backends");
	if (nb == 0)
		conv_err(c, "backends", "empty: a ToolSet needs at least one MCP server");
	else if (nb > ARN_CFG_MCP_MAX_BACKENDS)
		conv_err(c, "backends", "%zu backends; at most %u", nb, ARN_CFG_MCP_MAX_BACKENDS);
	if (nb && nb <= ARN_CFG_MCP_MAX_BACKENDS) {
		ts->backends = CONV_NEW(c, struct arn_cfg_mcp_backend, nb);
		for (size_t i = 0; ts->backends && i < nb; i++) {
			size_t m = conv_push(c, "backends[%zu]", i);
			backend(c, pb_at(p, "backends", i), &ts->backends[i]);
			for (size_t k = 0; k < i; k++)
				if (ts->backends[k].name_len == ts->backends[i].name_len &&
				    ts->backends[i].name_len &&
				    memcmp(ts->backends[k].name, ts->backends[i].name,
					   ts->backends[i].name_len) == 0)
					conv_err(c, "name", "'%s' is also backends[%zu]'s name",
						 ts->backends[i].name, k);
			conv_pop(c, m);
		}
		ts->n_backends = ts->backends ? nb : 0;
	}

	struct pb tf = pb_msg(p, "tool_filter");
	if (tf.m) {
		size_t m = conv_push(c, "tool_filter");
		conv_only(c, tf, "allow,deny");
		tool_matchers(c, tf, "allow", &ts->allow, &ts->n_allow, ts, false);
		tool_matchers(c, tf, "deny", &ts->deny, &ts->n_deny, ts, false);
		conv_pop(c, m);
	}

	int32_t mode = pb_i32(p, "prefix_mode");
	if (mode < ARN_CFG_MCP_PREFIX_ALWAYS || mode > ARN_CFG_MCP_PREFIX_NEVER)
		conv_err(c, "prefix_mode", "unknown value %d", mode);
	ts->prefix_mode = (uint8_t)mode;
	upb_StringView sep = pb_str(p, "prefix_separator");
	if (sep.size == 0) {
		ts->separator = ARN_CFG_MCP_DEFAULT_SEPARATOR;
		ts->separator_len = strlen(ARN_CFG_MCP_DEFAULT_SEPARATOR);
	} else {
		if (sep.size > 8)
			conv_err(c, "prefix_separator", "longer than 8 characters");
		for (size_t i = 0; i < sep.size; i++)
			if (!name_char(sep.data[i]) && sep.data[i] != '/') {
				conv_err(c, "prefix_separator",
					 "'%.*s': only A-Z a-z 0-9 _ - . / may appear (tool names' "
					 "characters)",
					 (int)sep.size, sep.data);
				break;
			}
		ts->separator = conv_str(c, sep);
		ts->separator_len = sep.size;
	}

	size_t nr = pb_len(p, "access_rules");
	if (nr) {
		ts->rules = CONV_NEW(c, struct arn_cfg_mcp_access_rule, nr);
		for (size_t i = 0; ts->rules && i < nr; i++) {
			struct pb r = pb_at(p, "access_rules", i);
			struct arn_cfg_mcp_access_rule *o = &ts->rules[i];
			size_t m = conv_push(c, "access_rules[%zu]", i);
			conv_only(c, r, "tools,principals");
			tool_matchers(c, r, "tools", &o->tools, &o->n_tools, ts, true);
			size_t np = pb_len(r, "principals");
			if (np == 0)
				conv_err(c, "principals",
					 "empty: a rule admits the clients one of its principals "
					 "matches (use tool_filter.deny to hide a tool from all)");
			o->principals = CONV_NEW(c, struct arn_cfg_mcp_principal, np ? np : 1);
			for (size_t k = 0; o->principals && k < np; k++) {
				size_t m2 = conv_push(c, "principals[%zu]", k);
				principal(c, pb_at(r, "principals", k), &o->principals[k]);
				conv_pop(c, m2);
			}
			o->n_principals = o->principals ? np : 0;
			conv_pop(c, m);
		}
		ts->n_rules = ts->rules ? nr : 0;
	}

	if (conv_duration(c, p, "tools_list_cache_ttl", &ts->tools_list_cache_ttl_ms, false) &&
	    ts->tools_list_cache_ttl_ms > ARN_CFG_MCP_MAX_CACHE_TTL_MS)
		conv_err(c, "tools_list_cache_ttl", "more than 1 h");
	return &ts->obj;
}

struct arn_cfg_mcp_filter *conv_mcp_filter(struct conv *c, struct pb any)
{
	struct pb g = conv_any(c, any, ARN_TYPE_MCP_GATEWAY);
	struct arn_cfg_mcp_filter *out = CONV_NEW(c, struct arn_cfg_mcp_filter, 1);
	if (g.m == NULL || out == NULL)
		return NULL;
	conv_only(c, g, "tds,path,max_request_bytes,max_response_bytes,session_idle_timeout");
	struct pb tds = pb_msg(g, "tds");
	upb_StringView tn = pb_str(tds, "config_name");
	if (tds.m) {
		size_t m = conv_push(c, "tds");
		conv_only(c, tds, "config_source,config_name");
		conv_pop(c, m);
	}
	if (tn.size == 0) {
		conv_err(c, "tds.config_name",
			 "missing: name the ToolSet (TDS resource) this gateway serves (X14)");
	} else {
		struct pb cs = pb_msg(tds, "config_source");
		const char *why = cs.m ? arn_bootstrap_ads_only(
					     (const struct envoy_config_core_v3_ConfigSource *)cs.m)
				       : NULL;
		if (why)
			conv_err(c, "tds.config_source", "%s (X14)", why);
		conv_refs(c, &out->toolset, tn);
		/* G6: the listener warms until its ToolSet arrives, as on RDS;
		 * X4: the reference is the on-demand subscription */
		size_t m = conv_push(c, "tds.config_source");
		uint32_t timeout = conv_fetch_timeout(c, cs);
		conv_pop(c, m);
		conv_dep(c, ARN_CFG_TOOLSET, tn.data, tn.size, true, timeout);
	}
	upb_StringView path = pb_str(g, "path");
	check_path(c, "path", path);
	out->path = path_or_default(c, path, &out->path_len);
	out->max_request_bytes = ARN_CFG_MCP_DEFAULT_MAX_REQUEST;
	if (pb_wrapped_u32(g, "max_request_bytes", &out->max_request_bytes) &&
	    (out->max_request_bytes == 0 || out->max_request_bytes > ARN_CFG_MCP_MAX_MAX_REQUEST))
		conv_err(c, "max_request_bytes", "must be 1 to %u", ARN_CFG_MCP_MAX_MAX_REQUEST);
	out->max_response_bytes = ARN_CFG_MCP_DEFAULT_MAX_RESPONSE;
	if (pb_wrapped_u32(g, "max_response_bytes", &out->max_response_bytes) &&
	    (out->max_response_bytes == 0 ||
	     out->max_response_bytes > ARN_CFG_MCP_MAX_MAX_RESPONSE))
		conv_err(c, "max_response_bytes", "must be 1 to %u", ARN_CFG_MCP_MAX_MAX_RESPONSE);
	out->session_idle_timeout_ms = ARN_CFG_MCP_DEFAULT_SESSION_IDLE_MS;
	conv_duration(c, g, "session_idle_timeout", &out->session_idle_timeout_ms, false);
	return out;
}
