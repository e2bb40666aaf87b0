/*
 * envoy.filters.http.oauth2's OAuth2 -> struct arn_cfg_oauth2, as Envoy's
 * FilterConfig reads its OAuth2Config (Envoy 1.31/1.32, the url=&nonce=
 * state): the token endpoint's cluster, path and Host, the authorization
 * endpoint's query parameters built once (Envoy's
 * buildAutorizationQueryParams), redirect_uri compiled as the access log
 * formatter compiles a format (%REQ(...)%), the matchers, the cookie
 * names, the two SDS secrets as names in the generation (a warming
 * dependency each, as TLS contexts name theirs).
 *
 * Every field of the proto is read or refused by name: use_refresh_token
 * true is refused (the refresh flow is not built); the fields Envoy added
 * after the API copy Arion carries are unknown to the proto and refused.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arn_access_log.h"
#include "arn_sb.h"
#include "config_int.h"

#define OA_COOKIE_NAME_MAX 64

static void fmt_free_cb(void *p)
{
	arn_access_format_free(p);
}

/* Envoy's urlEncodeQueryParameter: all but ALPHA, DIGIT, '*', '-', '.',
 * '_' percent-encoded (upper-case hex). @return the length written
 * (3 * n at most). */
size_t arn_cfg_oauth2_qencode(const char *s, size_t n, char *out)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || ch == '*' || ch == '-' || ch == '.' || ch == '_') {
			out[k++] = (char)ch;
		} else {
			out[k++] = '%';
			out[k++] = hex[ch >> 4];
			out[k++] = hex[ch & 15];
		}
	}
	return k;
}

static const char *qencoded(struct conv *c, const char *s, size_t n, uint32_t *len)
{
	char *o = conv_alloc(c, 3 * n + 1);
	if (!o)
		return NULL;
	*len = (uint32_t)arn_cfg_oauth2_qencode(s, n, o);
	o[*len] = 0;
	return o;
}

/* An http(s) URL with a host (Envoy's Url::initialize). @return the
 * length of "scheme://host" or 0. */
static size_t url_authority_end(upb_StringView u)
{
	size_t at;
	if (u.size > 7 && !memcmp(u.data, "http://", 7))
		at = 7;
	else if (u.size > 8 && !memcmp(u.data, "https://", 8))
		at = 8;
	else
		return 0;
	size_t e = at;
	while (e < u.size && u.data[e] != '/' && u.data[e] != '?' && u.data[e] != '#')
		e++;
	return e > at ? e : 0;
}

static bool url_bytes_ok(struct conv *c, const char *f, upb_StringView u)
{
	if (u.size > ARN_CFG_OAUTH2_MAX_URL) {
		conv_err(c, f, "longer than %d bytes", ARN_CFG_OAUTH2_MAX_URL);
		return false;
	}
	for (size_t i = 0; i < u.size; i++)
		if ((unsigned char)u.data[i] <= 0x20 || u.data[i] == 0x7f) {
			conv_err(c, f, "byte 0x%02x at %zu: a URL has no space or control byte",
				 (unsigned char)u.data[i], i);
			return false;
		}
	return true;
}

static void oa_cookie(struct conv *c, struct pb cn, const char *f, const char *dflt,
		      const char **out, uint8_t *len)
{
	upb_StringView v = cn.m ? pb_str(cn, f) : (upb_StringView){0};
	if (!v.size) {
		*out = dflt;
		*len = (uint8_t)strlen(dflt);
		return;
	}
	if (!cookie_octets_ok(c, f, v, true, OA_COOKIE_NAME_MAX))
		return;
	*out = conv_str(c, v);
	*len = (uint8_t)v.size;
}

static void oa_path_matcher(struct conv *c, struct pb p, const char *f, struct arn_cfg_str_match *o)
{
	size_t m = conv_push(c, "%s", f);
	struct pb pm = pb_msg(p, f);
	if (!pm.m) {
		conv_err(c, "", "missing (Envoy requires it)");
	} else {
		conv_only(c, pm, "path");
		struct pb sm = pb_msg(pm, "path");
		if (!sm.m) {
			conv_err(c, "path", "missing (Envoy requires it)");
		} else {
			size_t k = conv_push(c, "path");
			conv_string_matcher(c, sm, o);
			conv_pop(c, k);
		}
	}
	conv_pop(c, m);
}

static void oa_headers(struct conv *c, struct pb p, const char *f,
		       const struct arn_cfg_header_match **out, size_t *n)
{
	size_t k = pb_len(p, f);
	if (!k)
		return;
	struct arn_cfg_header_match *h = CONV_NEW(c, struct arn_cfg_header_match, k);
	if (!h)
		return;
	for (size_t i = 0; i < k; i++) {
		size_t m = conv_push(c, "%s[%zu]", f, i);
		conv_header_matcher(c, pb_at(p, f, i), &h[i]);
		conv_pop(c, m);
	}
	*out = h;
	*n = k;
}

static int param_cmp(const void *a, const void *b)
{
	const struct arn_cfg_oauth2_param *x = a, *y = b;
	size_t n = x->kl < y->kl ? x->kl : y->kl;
	int k = memcmp(x->k, y->k, n);
	if (k)
		return k;
	if (x->kl != y->kl)
		return x->kl < y->kl ? -1 : 1;
	/* equal keys keep their order (a stable sort by position) */
	return x < y ? -1 : x > y;
}

/*
 * authorization_endpoint: Envoy's QueryParamsMulti over its query (no
 * decoding: values as written; a name without '=' has an empty value),
 * client_id, response_type and scope overwritten, kept sorted by name
 * (Envoy's map); the base is the URL up to its '?'.
 */
static void oa_auth_endpoint(struct conv *c, struct pb p, struct arn_cfg_oauth2 *o)
{
	upb_StringView ae = pb_str(p, "authorization_endpoint");
	if (!ae.size) {
		conv_err(c, "authorization_endpoint", "missing (Envoy requires it)");
		return;
	}
	if (!url_bytes_ok(c, "authorization_endpoint", ae))
		return;
	if (!url_authority_end(ae)) {
		conv_err(c, "authorization_endpoint",
			 "'%.*s' is not an http:// or https:// URL with a host (Envoy: invalid "
			 "authorization endpoint URL)",
			 (int)ae.size, ae.data);
		return;
	}
	size_t q = 0;
	while (q < ae.size && ae.data[q] != '?' && ae.data[q] != '#')
		q++;
	o->auth_base = conv_str(c, (upb_StringView){ae.data, q});
	o->auth_base_len = (uint32_t)q;
	struct arn_cfg_oauth2_param *pv =
	    CONV_NEW(c, struct arn_cfg_oauth2_param, ARN_CFG_OAUTH2_MAX_PARAMS + 3);
	if (!pv)
		return;
	size_t n = 0;
	size_t end = q;
	while (end < ae.size && ae.data[end] != '#')
		end++;
	for (size_t i = q < ae.size && ae.data[q] == '?' ? q + 1 : end; i < end;) {
		size_t j = i;
		while (j < end && ae.data[j] != '&')
			j++;
		if (j > i) {
			size_t eq = i;
			while (eq < j && ae.data[eq] != '=')
				eq++;
			upb_StringView k = {ae.data + i, eq - i};
			bool ours = (k.size == 9 && !memcmp(k.data, "client_id", 9)) ||
				    (k.size == 13 && !memcmp(k.data, "response_type", 13)) ||
				    (k.size == 5 && !memcmp(k.data, "scope", 5));
			if (!ours && n == ARN_CFG_OAUTH2_MAX_PARAMS) {
				conv_err(c, "authorization_endpoint",
					 "more than %d query parameters",
					 ARN_CFG_OAUTH2_MAX_PARAMS);
				return;
			}
			if (!ours)
				pv[n++] = (struct arn_cfg_oauth2_param){
				    ae.data + i, eq < j ? ae.data + eq + 1 : "", (uint32_t)k.size,
				    eq < j ? (uint32_t)(j - eq - 1) : 0};
		}
		i = j + 1;
	}
	/* the strings point into the pool's copy */
	const char *copy = conv_str(c, ae);
	if (!copy)
		return;
	for (size_t i = 0; i < n; i++) {
		pv[i].k = copy + (pv[i].k - ae.data);
		if (pv[i].vl)
			pv[i].v = copy + (pv[i].v - ae.data);
	}
	upb_StringView cid = pb_str(pb_msg(p, "credentials"), "client_id");
	pv[n++] =
	    (struct arn_cfg_oauth2_param){"client_id", conv_str(c, cid), 9, (uint32_t)cid.size};
	pv[n++] = (struct arn_cfg_oauth2_param){"response_type", "code", 13, 4};
	/* scope: the scopes joined with ' ' (Envoy's default "user"), encoded */
	struct arn_sb sb = ARN_SB_INIT;
	size_t ns = pb_len(p, "auth_scopes");
	if (!ns)
		arn_sb_puts(&sb, "user");
	for (size_t i = 0; i < ns; i++) {
		upb_StringView s = pb_str_at(p, "auth_scopes", i);
		if (i)
			arn_sb_puts(&sb, " ");
		arn_sb_append(&sb, s.data, s.size);
	}
	uint32_t sl = 0;
	const char *sc = qencoded(c, sb.buf ? sb.buf : "", sb.len, &sl);
	arn_sb_free(&sb);
	pv[n++] = (struct arn_cfg_oauth2_param){"scope", sc, 5, sl};
	qsort(pv, n, sizeof(*pv), param_cmp);
	o->params = pv;
	o->n_params = n;
}

static void oa_token_endpoint(struct conv *c, struct pb p, struct arn_cfg_oauth2 *o)
{
	struct pb su = pb_msg(p, "token_endpoint");
	size_t m = conv_push(c, "token_endpoint");
	if (!su.m) {
		conv_err(c, "", "missing (Envoy requires it)");
		conv_pop(c, m);
		return;
	}
	conv_only(c, su, "uri,cluster,timeout");
	upb_StringView u = pb_str(su, "uri");
	if (!u.size) {
		conv_err(c, "uri", "missing (Envoy requires it)");
	} else if (url_bytes_ok(c, "uri", u)) {
		/* Envoy's extractHostPathFromUri: past "://" if any, the host up
		 * to the first '/', the rest the path ("/" when none) */
		size_t at = 0;
		for (size_t i = 0; i + 2 < u.size; i++)
			if (!memcmp(u.data + i, "://", 3)) {
				at = i + 3;
				break;
			}
		size_t e = at;
		while (e < u.size && u.data[e] != '/')
			e++;
		if (e == at) {
			conv_err(c, "uri", "'%.*s' has no host", (int)u.size, u.data);
		} else {
			o->token_host = conv_str(c, (upb_StringView){u.data + at, e - at});
			o->token_host_len = (uint32_t)(e - at);
			if (e < u.size) {
				o->token_path =
				    conv_str(c, (upb_StringView){u.data + e, u.size - e});
				o->token_path_len = (uint32_t)(u.size - e);
			} else {
				o->token_path = "/";
				o->token_path_len = 1;
			}
		}
	}
	upb_StringView cn = pb_str(su, "cluster");
	if (!pb_which(su, "http_upstream_type") || !cn.size) {
		conv_err(c, "cluster", "missing: the token endpoint's cluster");
	} else {
		conv_refs(c, &o->cluster, cn);
		conv_dep(c, ARN_CFG_CLUSTER, cn.data, cn.size, false, 0);
	}
	if (!pb_has(su, "timeout"))
		conv_err(c, "timeout", "missing (Envoy requires it)");
	else
		conv_duration(c, su, "timeout", &o->timeout_ms, false);
	conv_pop(c, m);
}

static void oa_resources(struct conv *c, struct pb p, struct arn_cfg_oauth2 *o)
{
	size_t n = pb_len(p, "resources");
	if (n > ARN_CFG_OAUTH2_MAX_LIST) {
		conv_err(c, "resources", "more than %d", ARN_CFG_OAUTH2_MAX_LIST);
		return;
	}
	struct arn_sb sb = ARN_SB_INIT;
	for (size_t i = 0; i < n; i++) {
		upb_StringView r = pb_str_at(p, "resources", i);
		if (r.size > ARN_CFG_OAUTH2_MAX_URL) {
			conv_err(c, "resources", "entry %zu longer than %d bytes", i,
				 ARN_CFG_OAUTH2_MAX_URL);
			break;
		}
		char *e = malloc(3 * r.size + 1);
		if (!e)
			break;
		size_t k = arn_cfg_oauth2_qencode(r.data, r.size, e);
		arn_sb_puts(&sb, "&resource=");
		arn_sb_append(&sb, e, k);
		free(e);
	}
	if (sb.len) {
		o->resources = conv_str(c, (upb_StringView){sb.buf, sb.len});
		o->resources_len = (uint32_t)sb.len;
	}
	arn_sb_free(&sb);
}

const struct arn_cfg_oauth2 *conv_oauth2(struct conv *c, struct pb f)
{
	struct arn_cfg_oauth2 *o = CONV_NEW(c, struct arn_cfg_oauth2, 1);
	if (!o)
		return NULL;
	conv_only(c, f, "config");
	struct pb p = pb_msg(f, "config");
	if (!p.m) {
		o->inert = true; /* Envoy: a filter that does nothing */
		return o;
	}
	size_t m0 = conv_push(c, "config");
	conv_only(c, p,
		  "token_endpoint,authorization_endpoint,credentials,redirect_uri,"
		  "redirect_path_matcher,signout_path,forward_bearer_token,"
		  "preserve_authorization_header,pass_through_matcher,auth_scopes,resources,"
		  "auth_type,use_refresh_token,default_expires_in,deny_redirect_matcher,"
		  "default_refresh_token_expires_in,disable_id_token_set_cookie");
	oa_token_endpoint(c, p, o);
	size_t ns = pb_len(p, "auth_scopes");
	if (ns > ARN_CFG_OAUTH2_MAX_LIST)
		conv_err(c, "auth_scopes", "more than %d", ARN_CFG_OAUTH2_MAX_LIST);
	for (size_t i = 0; i < ns; i++) {
		upb_StringView s = pb_str_at(p, "auth_scopes", i);
		if (s.size > ARN_CFG_OAUTH2_MAX_URL) {
			conv_err(c, "auth_scopes", "entry %zu longer than %d bytes", i,
				 ARN_CFG_OAUTH2_MAX_URL);
			break;
		}
	}
	struct pb cr = pb_msg(p, "credentials");
	size_t m = conv_push(c, "credentials");
	if (!cr.m) {
		conv_err(c, "", "missing (Envoy requires it)");
	} else {
		conv_only(c, cr, "client_id,token_secret,hmac_secret,cookie_names");
		upb_StringView cid = pb_str(cr, "client_id");
		if (!cid.size)
			conv_err(c, "client_id", "missing (Envoy requires it)");
		else if (url_bytes_ok(c, "client_id", cid))
			o->client_id = conv_str(c, cid);
		o->client_id_len = (uint32_t)cid.size;
		conv_sds_secret(c, pb_msg(cr, "token_secret"), "token_secret", &o->token_secret);
		conv_sds_secret(c, pb_msg(cr, "hmac_secret"), "hmac_secret", &o->hmac_secret);
		struct pb cn = pb_msg(cr, "cookie_names");
		size_t k = conv_push(c, "cookie_names");
		if (cn.m)
			conv_only(c, cn,
				  "bearer_token,oauth_hmac,oauth_expires,id_token,refresh_token");
		oa_cookie(c, cn, "bearer_token", "BearerToken", &o->ck_bearer, &o->ck_bearer_len);
		oa_cookie(c, cn, "oauth_hmac", "OauthHMAC", &o->ck_hmac, &o->ck_hmac_len);
		oa_cookie(c, cn, "oauth_expires", "OauthExpires", &o->ck_expires,
			  &o->ck_expires_len);
		oa_cookie(c, cn, "id_token", "IdToken", &o->ck_id, &o->ck_id_len);
		oa_cookie(c, cn, "refresh_token", "RefreshToken", &o->ck_refresh,
			  &o->ck_refresh_len);
		conv_pop(c, k);
	}
	conv_pop(c, m);
	if (o->client_id)
		oa_auth_endpoint(c, p, o);
	upb_StringView ru = pb_str(p, "redirect_uri");
	if (!ru.size) {
		conv_err(c, "redirect_uri", "missing (Envoy requires it)");
	} else if (ru.size > ARN_CFG_OAUTH2_MAX_URL) {
		conv_err(c, "redirect_uri", "longer than %d bytes", ARN_CFG_OAUTH2_MAX_URL);
	} else {
		char *t = malloc(ru.size + 1);
		struct arn_sb e = ARN_SB_INIT;
		if (t) {
			memcpy(t, ru.data, ru.size);
			t[ru.size] = 0;
			struct arn_access_format *fm = arn_access_format_text(t, &e);
			if (!fm) {
				const char *why = arn_sb_cstr(&e);
				size_t wl = strlen(why);
				while (wl && why[wl - 1] == '\n')
					wl--;
				conv_err(c, "redirect_uri", "%.*s", (int)wl, why);
			} else if (arn_pool_on_free(c->pool, fmt_free_cb, fm) != 0) {
				arn_access_format_free(fm);
			} else {
				o->redirect_uri = fm;
			}
		}
		free(t);
		arn_sb_free(&e);
	}
	oa_path_matcher(c, p, "redirect_path_matcher", &o->redirect_path);
	oa_path_matcher(c, p, "signout_path", &o->signout_path);
	o->forward_bearer_token = pb_bool(p, "forward_bearer_token");
	o->preserve_authorization_header = pb_bool(p, "preserve_authorization_header");
	o->disable_id_token_set_cookie = pb_bool(p, "disable_id_token_set_cookie");
	oa_headers(c, p, "pass_through_matcher", &o->pass_through, &o->n_pass_through);
	oa_headers(c, p, "deny_redirect_matcher", &o->deny_redirect, &o->n_deny_redirect);
	oa_resources(c, p, o);
	int32_t at = pb_i32(p, "auth_type");
	if (at != 0 && at != 1)
		conv_err(c, "auth_type", "%d is not URL_ENCODED_BODY (0) or BASIC_AUTH (1)", at);
	o->basic_auth = at == 1;
	bool rt = false;
	if (pb_wrapped_bool(p, "use_refresh_token", &rt) && rt)
		conv_err(c, "use_refresh_token",
			 "true is not supported by Arion (the refresh flow is not built): leave "
			 "it unset or false, and the user logs in again when the cookies expire");
	uint32_t ms = 0;
	if (conv_duration(c, p, "default_expires_in", &ms, false))
		o->default_expires_in_s =
		    (uint32_t)pb_i64(pb_msg(p, "default_expires_in"), "seconds");
	/* default_refresh_token_expires_in: read by Envoy only with
	 * use_refresh_token (the refresh cookie's Max-Age then); without it,
	 * as here, Envoy's refresh cookie lives expires_in as Arion's does */
	conv_duration(c, p, "default_refresh_token_expires_in", &ms, false);
	conv_pop(c, m0);
	return o;
}
