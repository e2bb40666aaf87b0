/*
 * envoy.filters.http.basic_auth's BasicAuth and BasicAuthPerRoute ->
 * struct arn_cfg_basic_auth / arn_cfg_basic_auth_users: the users'
 * htpasswd text (a DataSource: inline, or a file read now) parsed as
 * Envoy's readHtpasswd does, with its errors, then sorted by name for the
 * data path's binary search (arn_cfg_basic_auth_find).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_int.h"

/* A user while the text is read: its line, for the duplicate Envoy
 * reports (the first line that repeats a name). */
struct ba_line {
	struct arn_cfg_basic_auth_user u;
	size_t line;
};

static int ba_line_cmp(const void *a, const void *b)
{
	const struct ba_line *x = a, *y = b;
	int k = arn_cfg_basic_auth_cmp(x->u.name, x->u.name_len, y->u.name, y->u.name_len);
	if (k)
		return k;
	return x->line < y->line ? -1 : x->line > y->line;
}

/*
 * Envoy's readHtpasswd on @p text: lines split at '\n'; empty ones and
 * those starting with '#' skipped; each "name:{SHA}<28 characters>".
 * Envoy stops at the first error; so does this, and a duplicate name on
 * an earlier line than that error is the one reported, as in Envoy.
 * Arion's own refusals: more than ARN_CFG_BASIC_AUTH_MAX_USERS users, a
 * name longer than ARN_CFG_BASIC_AUTH_MAX_NAME or with a control byte (it
 * may go upstream as a header value).
 */
static void ba_parse(struct conv *c, const char *f, const char *text, size_t len,
		     struct arn_cfg_basic_auth_users *out)
{
	struct ba_line *v = NULL;
	size_t n = 0, cap = 0, line = 0, err_line = 0;
	bool err_dup = false; /* the line in error repeats a name */
	char err[160] = "";
	for (size_t at = 0; at < len;) {
		const char *s = text + at;
		const char *nl = memchr(s, '\n', len - at);
		size_t l = nl ? (size_t)(nl - s) : len - at;
		at += l + (nl ? 1 : 0);
		line++;
		if (l == 0 || s[0] == '#')
			continue;
		const char *colon = memchr(s, ':', l);
		const char *why = NULL;
		size_t nlen = colon ? (size_t)(colon - s) : 0;
		const char *hash = colon ? colon + 1 : NULL;
		size_t hlen = colon ? l - nlen - 1 : 0;
		if (!colon)
			why = "basic auth: invalid htpasswd format, username:password is expected";
		else if (nlen == 0 || hlen == 0)
			why = "basic auth: empty user name or password";
		else if (hlen < 5 || memcmp(hash, "{SHA}", 5) != 0)
			why = "basic auth: unsupported htpasswd format: please use {SHA}";
		else if (hlen - 5 != ARN_CFG_BASIC_AUTH_HASH_LEN)
			why = "basic auth: invalid htpasswd format, invalid SHA hash length";
		else if (nlen > ARN_CFG_BASIC_AUTH_MAX_NAME)
			why = "a user name longer than Arion's bound (ARN_CFG_BASIC_AUTH_MAX_NAME, "
			      "256 bytes)";
		else if (n >= ARN_CFG_BASIC_AUTH_MAX_USERS)
			why = "more users than Arion's bound (ARN_CFG_BASIC_AUTH_MAX_USERS, 65536)";
		for (size_t i = 0; !why && i < nlen; i++)
			if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
				why = "a control byte in the user name (it may go upstream as a "
				      "header value)";
		if (why) {
			snprintf(err, sizeof(err), "%s", why);
			err_line = line;
			/* Envoy looks for a duplicate once the line has a
			 * name and a hash, before the hash's own checks */
			for (size_t i = 0; nlen && hlen && i < n && !err_dup; i++)
				err_dup = arn_cfg_basic_auth_cmp(s, nlen, v[i].u.name,
								 v[i].u.name_len) == 0;
			break;
		}
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 16;
			struct ba_line *nv = realloc(v, nc * sizeof(*v));
			if (!nv) {
				conv_err(c, f, "out of memory");
				free(v);
				return;
			}
			v = nv;
			cap = nc;
		}
		v[n].u.name = s;
		v[n].u.name_len = (uint32_t)nlen;
		memcpy(v[n].u.hash, hash + 5, ARN_CFG_BASIC_AUTH_HASH_LEN);
		v[n].line = line;
		n++;
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), ba_line_cmp);
	/* Envoy's "duplicate users" comes at the first line that repeats a
	 * name: the second of each run of equal names, the earliest of them */
	size_t dup = err_dup ? err_line : 0;
	for (size_t i = 1; i < n; i++)
		if (arn_cfg_basic_auth_cmp(v[i].u.name, v[i].u.name_len, v[i - 1].u.name,
					   v[i - 1].u.name_len) == 0 &&
		    (!dup || v[i].line < dup))
			dup = v[i].line;
	if (dup) {
		conv_err(c, f, "line %zu: basic auth: duplicate users", dup);
	} else if (err_line) {
		conv_err(c, f, "line %zu: %s", err_line, err);
	} else if (n) {
		struct arn_cfg_basic_auth_user *u = CONV_NEW(c, struct arn_cfg_basic_auth_user, n);
		if (u) {
			for (size_t i = 0; i < n; i++)
				u[i] = v[i].u;
			out->users = u;
			out->n = n;
		}
	}
	free(v);
}

/* users: a DataSource read now (a file: at most ARN_CFG_BASIC_AUTH_MAX_HTPASSWD
 * bytes, as an inline one), parsed; the names point into its pool copy. */
static void ba_users(struct conv *c, struct pb p, bool allow_empty,
		     struct arn_cfg_basic_auth_users *out)
{
	struct pb ds = pb_msg(p, "users");
	if (!ds.m) {
		conv_err(c, "users", "missing (Envoy requires it)");
		return;
	}
	size_t m = conv_push(c, "users");
	const char *text = NULL;
	size_t len = 0;
	int rc = conv_data_source(c, ds, ARN_CFG_BASIC_AUTH_MAX_HTPASSWD,
				  "Arion's bound on an htpasswd (ARN_CFG_BASIC_AUTH_MAX_HTPASSWD)",
				  &text, &len);
	const char *w = pb_which(ds, "specifier");
	if (rc == -ENOENT)
		conv_err(c, "", "set inline_string, inline_bytes or filename");
	else if (rc == 0 && text && len <= ARN_CFG_BASIC_AUTH_MAX_HTPASSWD) {
		if (len == 0 && !allow_empty)
			conv_err(c, w, "empty (Envoy: DataSource cannot be empty)");
		else
			ba_parse(c, w, text, len, out);
	}
	conv_pop(c, m);
}

/* A header name Arion sets on the upstream request: never one that frames
 * the request or names its authority. */
static const char *ba_header(struct conv *c, struct pb p, const char *f, size_t *len)
{
	upb_StringView s = pb_str(p, f);
	if (s.size == 0)
		return NULL;
	const char *h = conv_hdr_name(c, f, s, len);
	static const char *const framing[] = {"content-length", "transfer-encoding", "host",
					      "connection",	"upgrade",	     "te"};
	for (size_t i = 0; h && i < sizeof(framing) / sizeof(framing[0]); i++)
		if (strcmp(h, framing[i]) == 0)
			conv_err(c, f,
				 "'%s' frames or routes the request: Arion does not let a user "
				 "name set it",
				 h);
	return h;
}

const struct arn_cfg_basic_auth *conv_basic_auth(struct conv *c, struct pb p)
{
	conv_only(c, p, "users,forward_username_header,authentication_header");
	struct arn_cfg_basic_auth *o = CONV_NEW(c, struct arn_cfg_basic_auth, 1);
	if (!o)
		return NULL;
	ba_users(c, p, false, &o->users);
	o->forward_username_header =
	    ba_header(c, p, "forward_username_header", &o->forward_username_header_len);
	upb_StringView ah = pb_str(p, "authentication_header");
	if (ah.size)
		o->authentication_header =
		    conv_hdr_name(c, "authentication_header", ah, &o->authentication_header_len);
	return o;
}

const struct arn_cfg_basic_auth_users *conv_basic_auth_route(struct conv *c, struct pb p)
{
	conv_only(c, p, "users");
	struct arn_cfg_basic_auth_users *o = CONV_NEW(c, struct arn_cfg_basic_auth_users, 1);
	if (o)
		ba_users(c, p, true, o);
	return o;
}
