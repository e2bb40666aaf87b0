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

void conv_cidr(struct conv *c, struct pb cr, struct arn_cfg_cidr *out)
{
	conv_only(c, cr, "address_prefix,prefix_len");
	upb_StringView a = pb_str(cr, "address_prefix");
	char buf[64];
	struct in_addr in;
	snprintf(buf, sizeof(buf), "%.*s", (int)a.size, a.data);
	uint32_t pl = 32;
	pb_wrapped_u32(cr, "prefix_len", &pl);
	if (inet_pton(AF_INET, buf, &in) != 1) {
		conv_err(c, "address_prefix", "'%s' is not an IPv4 address", buf);
	} else if (pl > 32) {
		conv_err(c, "prefix_len", "%u is more than 32", pl);
	} else {
		uint32_t mask = pl ? ~0u << (32 - pl) : 0;
		out->addr = ntohl(in.s_addr) & mask;
		out->len = (uint8_t)pl;
	}
}

/* Compile @p a's format (from field @p field of the typed_config) as the
 * runtime will (arn_access_format_of): a format Arion cannot write refuses
 * the resource, as Envoy refuses it, instead of an accepted configuration
 * whose log the runtime turns off. */
static void check_access_format(struct conv *c, const struct arn_cfg_access_log *a,
				const char *field)
{
	if (!a->json_format && !a->format)
		return;
	struct arn_sb e = ARN_SB_INIT;
	struct arn_access_format *f =
	    arn_access_format_of(a->json_format, a->format, a->omit_empty_values, field, &e);
	if (f) {
		arn_access_format_free(f);
	} else {
		/* "<field>[.<key>]: reason\n": the path, then the reason */
		const char *t = arn_sb_cstr(&e), *sep = strstr(t, ": ");
		size_t tl = strlen(t);
		while (tl && t[tl - 1] == '\n')
			tl--;
		if (sep && (size_t)(sep - t) < tl) {
			char path[256];
			snprintf(path, sizeof(path), "%.*s", (int)(sep - t), t);
			conv_err(c, path, "%.*s", (int)(tl - (size_t)(sep + 2 - t)), sep + 2);
		} else {
			conv_err(c, field, "%.*s", (int)tl, t);
		}
	}
	arn_sb_free(&e);
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
		if (pb_has(al, "filter")) {
			/* kept as JSON for the logger (lib/admin evaluates it);
			 * checked here so that a bad filter refuses the resource */
			struct pb fl = pb_msg(al, "filter");
			struct arn_sb js = ARN_SB_INIT, e = ARN_SB_INIT;
			arn_proto_to_json(fl.m, fl.d, &js);
			struct arn_access_filter *af = arn_access_filter_json(
			    js.buf ? js.buf : "{}", js.len ? js.len : 2, "", &e);
			if (af == NULL) {
				/* lib/admin's text: ".filter.<path>: reason\n" */
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
				a->filter_json = conv_str(c, v);
			}
			arn_sb_free(&js);
			arn_sb_free(&e);
		}
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
		} else {
			conv_err(c, "",
				 "access logger type '%.*s' is not supported (file, stdout, "
				 "stderr are)",
				 (int)tn.size, tn.data);
		}
		if (fmt.m) {
			size_t m2 = conv_push(c, "log_format");
			conv_only(c, fmt,
				  "text_format,json_format,text_format_source,omit_empty_values,"
				  "content_type");
			a->omit_empty_values = pb_bool(fmt, "omit_empty_values");
			const char *w = pb_which(fmt, "format");
			if (w && strcmp(w, "text_format") == 0) {
				a->format = conv_str(c, pb_str(fmt, "text_format"));
				fmt_field = "log_format.text_format";
			} else if (w && strcmp(w, "json_format") == 0) {
				struct pb st = pb_msg(fmt, "json_format");
				struct arn_sb sb = ARN_SB_INIT;
				arn_proto_to_json(st.m, st.d, &sb);
				upb_StringView v = {arn_sb_cstr(&sb), sb.len};
				a->json_format = conv_str(c, v);
				arn_sb_free(&sb);
				fmt_field = "log_format.json_format";
			} else if (w) {
				struct pb ds = pb_msg(fmt, "text_format_source");
				const char *k = pb_which(ds, "specifier");
				if (k && strcmp(k, "inline_string") == 0) {
					a->format = conv_str(c, pb_str(ds, "inline_string"));
					fmt_field = "log_format.text_format_source.inline_string";
				} else
					conv_err(c, "text_format_source",
						 "only inline_string is supported");
			}
			conv_pop(c, m2);
		}
		if (fmt_field)
			check_access_format(c, a, fmt_field);
		conv_pop(c, m1);
		conv_pop(c, m);
	}
}
