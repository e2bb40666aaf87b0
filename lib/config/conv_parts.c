/*
 * The pieces several converters share, below all of them: header matchers
 * (routes, health checks, RBAC, the MCP gateway's access rules), CIDR
 * ranges (filter chains, RBAC) and access logs (the HCM, tcp_proxy).
 * Nothing here calls a converter of a resource type.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arn_access_log.h"
#include "arn_ip6.h"
#include "arn_proto.h"
#include "config_int.h"

void conv_header_matcher(struct conv *c, struct pb hm, struct arn_cfg_header_match *out)
{
	conv_only(c, hm,
		  "name,exact_match,safe_regex_match,range_match,present_match,prefix_match,"
		  "suffix_match,contains_match,string_match,invert_match,treat_missing_header_as_"
		  "empty");
	upb_StringView name = pb_str(hm, "name");
	if (name.size == 0)
		conv_err(c, "name", "missing");
	out->name = conv_lstr(c, name);
	out->name_len = name.size;
	out->invert = pb_bool(hm, "invert_match");
	out->missing_as_empty = pb_bool(hm, "treat_missing_header_as_empty");
	const char *w = pb_which(hm, "header_match_specifier");
	if (!w) {
		/* no specifier: presence */
		out->kind = ARN_CFG_HDR_PRESENT;
		out->present = true;
		return;
	}
	if (strcmp(w, "present_match") == 0) {
		out->kind = ARN_CFG_HDR_PRESENT;
		out->present = pb_bool(hm, "present_match");
	} else if (strcmp(w, "range_match") == 0) {
		struct pb r = pb_msg(hm, "range_match");
		out->kind = ARN_CFG_HDR_RANGE;
		out->start = pb_i64(r, "start");
		out->end = pb_i64(r, "end");
		if (out->end <= out->start)
			conv_err(c, "range_match", "end must be greater than start");
	} else if (strcmp(w, "string_match") == 0) {
		size_t m = conv_push(c, "string_match");
		out->kind = ARN_CFG_HDR_STRING;
		conv_string_matcher(c, pb_msg(hm, "string_match"), &out->str);
		conv_pop(c, m);
	} else if (strcmp(w, "safe_regex_match") == 0) {
		size_t m = conv_push(c, "safe_regex_match");
		out->kind = ARN_CFG_HDR_STRING;
		out->str.kind = ARN_CFG_STR_REGEX;
		out->str.re = conv_regex(c, pb_msg(hm, "safe_regex_match"));
		conv_pop(c, m);
	} else {
		/* the deprecated exact_match / prefix_match / suffix_match / contains_match */
		upb_StringView s = pb_str(hm, w);
		out->kind = ARN_CFG_HDR_STRING;
		out->str.kind = w[0] == 'e'   ? ARN_CFG_STR_EXACT
				: w[0] == 'p' ? ARN_CFG_STR_PREFIX
				: w[0] == 's' ? ARN_CFG_STR_SUFFIX
					      : ARN_CFG_STR_CONTAINS;
		if (s.size == 0 && out->str.kind != ARN_CFG_STR_EXACT)
			conv_err(c, w, "must not be empty");
		out->str.s = conv_str(c, s);
		out->str.len = s.size;
	}
}

/*
 * Envoy's CidrRange::create(const envoy::config::core::v3::CidrRange&):
 * the address is IPv4 (inet_pton) or else IPv6 (arn_ip6_parse, Envoy's
 * parseV6Address); prefix_len at most 128 (the proto's validation rule),
 * and truncateIpAddressAndLength's treatment of the rest: an IPv4 length
 * above 32 is 32, the bits past the length are cleared. Unlike Envoy, an
 * unset prefix_len is 32 (an address alone), not 0 (every address).
 */
void conv_cidr(struct conv *c, struct pb cr, struct arn_cfg_cidr *out)
{
	conv_only(c, cr, "address_prefix,prefix_len");
	upb_StringView a = pb_str(cr, "address_prefix");
	char buf[64];
	struct in_addr in;
	snprintf(buf, sizeof(buf), "%.*s", (int)a.size, a.data);
	uint32_t pl = 32;
	bool has_len = pb_wrapped_u32(cr, "prefix_len", &pl);
	memset(out, 0, sizeof(*out));
	if (pl > 128) {
		conv_err(c, "prefix_len", "%u is more than 128", pl);
	} else if (a.size < sizeof(buf) && !memchr(a.data, 0, a.size) &&
		   inet_pton(AF_INET, buf, &in) == 1) {
		if (pl > 32)
			pl = 32;
		uint32_t mask = pl ? ~0u << (32 - pl) : 0;
		out->addr = ntohl(in.s_addr) & mask;
		out->len = (uint8_t)pl;
	} else if (arn_ip6_parse(a.data, a.size, out->addr6) == 0) {
		/* an address alone is all of its bits, as for IPv4 */
		if (!has_len)
			pl = 128;
		out->v6 = true;
		out->len = (uint8_t)pl;
		for (unsigned i = 0; i < 16; i++) {
			unsigned keep = pl >= 8 * (i + 1) ? 8 : pl > 8 * i ? pl - 8 * i : 0;
			out->addr6[i] &= (uint8_t)(0xff00u >> keep);
		}
	} else {
		conv_err(c, "address_prefix", "'%s' is not an IPv4 or IPv6 address", buf);
	}
}

/* An envoy.config.accesslog.v3.AccessLogFilter @p fl as the JSON lib/accesslog
 * compiles (at the runtime, from the model), checked here so that a filter
 * it cannot evaluate refuses the resource. @return the JSON, or NULL. */
static const char *access_filter(struct conv *c, struct pb fl)
{
	const char *out = NULL;
	struct arn_sb js = ARN_SB_INIT, e = ARN_SB_INIT;
	arn_proto_to_json(fl.m, fl.d, &js);
	struct arn_access_filter *af =
	    arn_access_filter_json(js.buf ? js.buf : "{}", js.len ? js.len : 2, "", &e);
	if (af == NULL) {
		/* lib/accesslog's text: ".filter.<path>: reason\n" */
		const char *t = arn_sb_cstr(&e);
		size_t tl = strlen(t);
		while (tl && t[tl - 1] == '\n')
			tl--;
		if (tl && *t == '.')
			t++, tl--;
		conv_err(c, "", "%.*s", (int)tl, t);
	} else {
		arn_access_filter_free(af);
		upb_StringView v = {arn_sb_cstr(&js), js.len};
		out = conv_str(c, v);
	}
	arn_sb_free(&js);
	arn_sb_free(&e);
	return out;
}

/* The SubstitutionFormatString @p fmt (field @p name of the current
 * message) into @p out. @return the path of the format within the current
 * message ("<name>.text_format", ...), or NULL when it has none. */
static const char *subst_format(struct conv *c, struct pb fmt, const char *name,
				struct arn_cfg_subst_format *out)
{
	const char *field = NULL;
	size_t m = conv_push(c, "%s", name);
	conv_only(c, fmt,
		  "text_format,json_format,text_format_source,omit_empty_values,content_type");
	out->omit_empty_values = pb_bool(fmt, "omit_empty_values");
	if (pb_has(fmt, "content_type"))
		out->content_type = conv_hdr_str(c, "content_type", pb_str(fmt, "content_type"));
	const char *w = pb_which(fmt, "format");
	if (w && strcmp(w, "text_format") == 0) {
		out->text = conv_str(c, pb_str(fmt, "text_format"));
		field = "text_format";
	} else if (w && strcmp(w, "json_format") == 0) {
		struct pb st = pb_msg(fmt, "json_format");
		struct arn_sb sb = ARN_SB_INIT;
		arn_proto_to_json(st.m, st.d, &sb);
		upb_StringView v = {arn_sb_cstr(&sb), sb.len};
		out->json = conv_str(c, v);
		arn_sb_free(&sb);
		field = "json_format";
	} else if (w) {
		struct pb ds = pb_msg(fmt, "text_format_source");
		const char *k = pb_which(ds, "specifier");
		if (k && strcmp(k, "inline_string") == 0) {
			out->text = conv_str(c, pb_str(ds, "inline_string"));
			field = "text_format_source.inline_string";
		} else
			conv_err(c, "text_format_source", "only inline_string is supported");
	}
	conv_pop(c, m);
	if (!field)
		return NULL;
	/* the path for check_access_format's messages */
	char buf[128];
	snprintf(buf, sizeof(buf), "%s.%s", name, field);
	return conv_str(c, (upb_StringView){buf, strlen(buf)});
}

const char *conv_subst_format(struct conv *c, struct pb fmt, const char *name,
			      struct arn_cfg_subst_format *out)
{
	return subst_format(c, fmt, name, out);
}

void conv_access_logs(struct conv *c, struct pb p, const char *f, struct arn_cfg_access_log **out,
		      size_t *n)
{
	size_t len = pb_len(p, f);
	if (!len)
		return;
	*out = CONV_NEW(c, struct arn_cfg_access_log, len);
	if (!*out)
		return;
	*n = len;
	for (size_t i = 0; i < len; i++) {
		struct pb al = pb_at(p, f, i);
		struct arn_cfg_access_log *a = &(*out)[i];
		size_t m = conv_push(c, "%s[%zu]", f, i);
		conv_only(c, al, "name,typed_config,filter");
		if (pb_has(al, "filter"))
			a->filter_json = access_filter(c, pb_msg(al, "filter"));
		struct pb any = pb_msg(al, "typed_config");
		if (!any.m) {
			conv_err(c, "typed_config", "missing");
			conv_pop(c, m);
			continue;
		}
		upb_StringView tn = arn_proto_any_type_name(any.m);
		size_t m1 = conv_push(c, "typed_config");
		struct pb cfg, fmt = {NULL, NULL};
		const char *fmt_field = NULL; /* where the format came from */
		if (arn_sv_eq(tn, ARN_TYPE_FILE_ACCESS_LOG)) {
			cfg = conv_any(c, any, ARN_TYPE_FILE_ACCESS_LOG);
			a->kind = ARN_CFG_LOG_FILE;
			if (cfg.m) {
				conv_only(c, cfg,
					  "path,format,json_format,typed_json_format,log_format");
				upb_StringView path = pb_str(cfg, "path");
				if (path.size == 0)
					conv_err(c, "path", "missing");
				a->path = conv_str(c, path);
				if (pb_has(cfg, "format")) {
					a->format = conv_str(c, pb_str(cfg, "format"));
					fmt_field = "format";
				}
				const char *jf = pb_has(cfg, "json_format") ? "json_format"
						 : pb_has(cfg, "typed_json_format")
						     ? "typed_json_format"
						     : NULL;
				if (jf) {
					struct pb st = pb_msg(cfg, jf);
					struct arn_sb sb = ARN_SB_INIT;
					arn_proto_to_json(st.m, st.d, &sb);
					upb_StringView v = {arn_sb_cstr(&sb), sb.len};
					a->json_format = conv_str(c, v);
					arn_sb_free(&sb);
					fmt_field = jf;
				}
				fmt = pb_msg(cfg, "log_format");
			}
		} else if (arn_sv_eq(tn, ARN_TYPE_STDOUT_ACCESS_LOG) ||
			   arn_sv_eq(tn, ARN_TYPE_STDERR_ACCESS_LOG)) {
			bool out_ = arn_sv_eq(tn, ARN_TYPE_STDOUT_ACCESS_LOG);
			cfg = conv_any(
			    c, any, out_ ? ARN_TYPE_STDOUT_ACCESS_LOG : ARN_TYPE_STDERR_ACCESS_LOG);
			a->kind = out_ ? ARN_CFG_LOG_STDOUT : ARN_CFG_LOG_STDERR;
			if (cfg.m) {
				conv_only(c, cfg, "log_format");
				fmt = pb_msg(cfg, "log_format");
			}
		} else if (!conv_grpc_access_log(c, any, tn, a)) {
			conv_err(c, "",
				 "access logger type '%.*s' is not supported (file, stdout, "
				 "stderr, open_telemetry, http_grpc, tcp_grpc are)",
				 (int)tn.size, tn.data);
		}
		if (fmt.m) {
			/* content_type is read and of no use to a log line */
			struct arn_cfg_subst_format sf = {0};
			const char *w = subst_format(c, fmt, "log_format", &sf);
			if (w) {
				a->format = sf.text;
				a->json_format = sf.json;
				a->omit_empty_values = sf.omit_empty_values;
				fmt_field = w;
			}
		}
		if (fmt_field)
			conv_check_access_format(c, a->json_format, a->format, a->omit_empty_values,
					    fmt_field);
		conv_pop(c, m1);
		conv_pop(c, m);
	}
}

int conv_data_source(struct conv *c, struct pb b, size_t max, const char *what, const char **out,
		     size_t *len)
{
	conv_only(c, b, "inline_string,inline_bytes,filename");
	const char *w = pb_which(b, "specifier");
	if (w && strcmp(w, "filename") == 0) {
		upb_StringView fn = pb_str(b, "filename");
		char *path = strndup(fn.data, fn.size);
		char *buf = NULL;
		size_t n = 0;
		if (path && conv_read_file(c, "filename", path, max, &buf, &n) == 0) {
			*out = arn_pool_strndup(c->pool, buf, n);
			*len = n;
		}
		free(buf);
		free(path);
		return *out ? 0 : -EINVAL;
	}
	if (!w)
		return -ENOENT;
	upb_StringView s = pb_str(b, w);
	if (s.size > max)
		conv_err(c, w, "%zu bytes: longer than %s (%zu)", s.size, what, max);
	*out = conv_str(c, s);
	*len = s.size;
	return 0;
}

/* One ResponseMapper of local_reply_config. */
static void lr_mapper(struct conv *c, struct pb mp, struct arn_cfg_lr_mapper *o)
{
	conv_only(c, mp, "filter,status_code,body,body_format_override,headers_to_add");
	if (!pb_has(mp, "filter"))
		conv_err(c, "filter", "missing (Envoy requires it)");
	else
		o->filter_json = access_filter(c, pb_msg(mp, "filter"));
	uint32_t sc;
	if (pb_wrapped_u32(mp, "status_code", &sc)) {
		if (sc < 200 || sc > 599)
			conv_err(c, "status_code", "%u is not in [200, 600) (Envoy's bounds)", sc);
		o->status = (uint16_t)sc;
	}
	struct pb b = pb_msg(mp, "body");
	if (b.m) {
		size_t m = conv_push(c, "body");
		o->has_body = conv_data_source(c, b, ARN_CFG_LR_BODY_MAX,
					       "Arion's bound on a local reply body", &o->body,
					       &o->body_len) == 0;
		conv_pop(c, m);
	}
	struct pb fo = pb_msg(mp, "body_format_override");
	if (fo.m) {
		const char *fw = subst_format(c, fo, "body_format_override", &o->format);
		if (fw)
			conv_check_access_format(c, o->format.json, o->format.text,
					    o->format.omit_empty_values, fw);
	}
	size_t nh = pb_len(mp, "headers_to_add");
	if (nh > ARN_CFG_LR_HEADERS_MAX) {
		conv_err(
		    c, "headers_to_add",
		    "%zu headers: Arion takes at most %d (they take a local reply's edit slots)",
		    nh, ARN_CFG_LR_HEADERS_MAX);
		return;
	}
	conv_header_add_list(c, mp, "headers_to_add", &o->headers, &o->n_headers);
	for (size_t i = 0; i < o->n_headers; i++)
		if (o->headers[i].value &&
		    memchr(o->headers[i].value, '%', o->headers[i].value_len)) {
			size_t m = conv_push(c, "headers_to_add[%zu]", i);
			conv_err(c, "header.value",
				 "'%%' (a substitution) is not supported by Arion in a local reply "
				 "mapper's headers: literal values only");
			conv_pop(c, m);
		}
}

void conv_local_reply(struct conv *c, struct pb lrc, const struct arn_cfg_local_reply **out)
{
	size_t m0 = conv_push(c, "local_reply_config");
	conv_only(c, lrc, "mappers,body_format");
	struct arn_cfg_local_reply *lr = CONV_NEW(c, struct arn_cfg_local_reply, 1);
	size_t n = pb_len(lrc, "mappers");
	if (n > ARN_CFG_LR_MAPPERS_MAX) {
		conv_err(c, "mappers",
			 "%zu mappers: Arion takes at most %d (each local reply tries them in "
			 "order)",
			 n, ARN_CFG_LR_MAPPERS_MAX);
		n = 0;
	}
	if (lr && n)
		lr->mappers = CONV_NEW(c, struct arn_cfg_lr_mapper, n);
	for (size_t i = 0; lr && lr->mappers && i < n; i++) {
		size_t m = conv_push(c, "mappers[%zu]", i);
		lr_mapper(c, pb_at(lrc, "mappers", i), &lr->mappers[i]);
		lr->n_mappers = i + 1;
		conv_pop(c, m);
	}
	struct pb bf = pb_msg(lrc, "body_format");
	if (lr && bf.m) {
		const char *fw = subst_format(c, bf, "body_format", &lr->format);
		if (fw)
			conv_check_access_format(c, lr->format.json, lr->format.text,
					    lr->format.omit_empty_values, fw);
	}
	*out = lr;
	conv_pop(c, m0);
}
