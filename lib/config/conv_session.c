/*
 * envoy.filters.http.stateful_session's StatefulSession (and a route's
 * StatefulSessionPerRoute) -> struct arn_cfg_stateful_session: the
 * session_state extension (a cookie, CookieBasedSessionState, or a
 * header, HeaderBasedSessionState) and strict. Every field is converted
 * or refused naming it (conv_only refuses the newer Envoy's fields this
 * API copy lacks, such as stat_prefix and Cookie.attributes).
 */
#include <string.h>

#include "arn_proto.h"
#include "config_int.h"

#define SS_COOKIE_TYPE "envoy.extensions.http.stateful_session.cookie.v3.CookieBasedSessionState"
#define SS_HEADER_TYPE "envoy.extensions.http.stateful_session.header.v3.HeaderBasedSessionState"

static void ss_cookie(struct conv *c, struct pb p, struct arn_cfg_stateful_session *o)
{
	conv_only(c, p, "cookie");
	struct pb ck = pb_msg(p, "cookie");
	if (!ck.m) {
		conv_err(c, "cookie", "missing (Envoy requires it)");
		return;
	}
	size_t m = conv_push(c, "cookie");
	conv_only(c, ck, "name,ttl,path");
	upb_StringView nm = pb_str(ck, "name");
	/* Envoy: "Cookie key cannot be empty for cookie based stateful
	 * sessions"; the name and path go into Set-Cookie as they are */
	if (!nm.size)
		conv_err(c, "name", "missing (Envoy: the cookie key cannot be empty)");
	else if (cookie_octets_ok(c, "name", nm, true, ARN_CFG_COOKIE_NAME_MAX)) {
		o->mode = ARN_CFG_SS_COOKIE;
		o->name = conv_str(c, nm);
		o->name_len = nm.size;
	}
	uint32_t ms;
	if (conv_duration(c, ck, "ttl", &ms, false)) {
		int64_t s = pb_i64(pb_msg(ck, "ttl"), "seconds");
		o->ttl_s = s > UINT32_MAX ? UINT32_MAX : s < 0 ? 0 : (uint32_t)s;
	}
	upb_StringView path = pb_str(ck, "path");
	if (path.size && cookie_octets_ok(c, "path", path, false, ARN_CFG_COOKIE_PATH_MAX)) {
		o->path = conv_str(c, path);
		o->path_len = path.size;
	}
	conv_pop(c, m);
}

static void ss_header(struct conv *c, struct pb p, struct arn_cfg_stateful_session *o)
{
	conv_only(c, p, "name");
	upb_StringView nm = pb_str(p, "name");
	if (!nm.size) {
		conv_err(c, "name", "missing (Envoy: the header name cannot be empty)");
		return;
	}
	if (nm.size > ARN_CFG_SS_HEADER_MAX) {
		conv_err(c, "name", "longer than %d bytes", ARN_CFG_SS_HEADER_MAX);
		return;
	}
	for (size_t i = 0; i < nm.size; i++) {
		unsigned char ch = (unsigned char)nm.data[i];
		if (ch <= 0x20 || ch >= 0x7f || strchr("\"(),/:;<=>?@[\\]{}", ch)) {
			conv_err(c, "name", "byte 0x%02x at %zu is not a header name character", ch,
				 i);
			return;
		}
	}
	o->mode = ARN_CFG_SS_HEADER;
	o->name = conv_lstr(c, nm);
	o->name_len = nm.size;
}

static void ss_config(struct conv *c, struct pb p, struct arn_cfg_stateful_session *o)
{
	conv_only(c, p, "session_state,strict");
	o->strict = pb_bool(p, "strict");
	struct pb ss = pb_msg(p, "session_state");
	if (!ss.m)
		return; /* Envoy's EmptySessionStateFactory: no session */
	size_t m = conv_push(c, "session_state");
	conv_only(c, ss, "name,typed_config");
	struct pb any = pb_msg(ss, "typed_config");
	if (!any.m) {
		conv_err(c, "typed_config", "missing");
	} else {
		upb_StringView tn = arn_proto_any_type_name(any.m);
		size_t m2 = conv_push(c, "typed_config");
		if (arn_sv_eq(tn, SS_COOKIE_TYPE)) {
			struct pb q = conv_any(c, any, SS_COOKIE_TYPE);
			if (q.m)
				ss_cookie(c, q, o);
		} else if (arn_sv_eq(tn, SS_HEADER_TYPE)) {
			struct pb q = conv_any(c, any, SS_HEADER_TYPE);
			if (q.m)
				ss_header(c, q, o);
		} else {
			conv_err(c, "",
				 "session state of type '%.*s' is not supported by Arion "
				 "(CookieBasedSessionState and HeaderBasedSessionState are)",
				 (int)tn.size, tn.data);
		}
		conv_pop(c, m2);
	}
	conv_pop(c, m);
}

const struct arn_cfg_stateful_session *conv_stateful_session(struct conv *c, struct pb p,
							     bool per_route)
{
	struct arn_cfg_stateful_session *o = CONV_NEW(c, struct arn_cfg_stateful_session, 1);
	if (!o)
		return NULL;
	if (!per_route) {
		ss_config(c, p, o);
		return o;
	}
	conv_only(c, p, "disabled,stateful_session");
	const char *w = pb_which(p, "override");
	if (!w) {
		conv_err(c, "", "set disabled or stateful_session (Envoy requires one)");
	} else if (strcmp(w, "disabled") == 0) {
		if (!pb_bool(p, "disabled"))
			conv_err(c, "disabled", "must be true (Envoy)");
		o->disabled = true;
	} else {
		size_t m = conv_push(c, "stateful_session");
		ss_config(c, pb_msg(p, "stateful_session"), o);
		conv_pop(c, m);
	}
	return o;
}
