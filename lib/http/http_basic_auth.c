/*
 * envoy.filters.http.basic_auth (http_basic_auth.h), as Envoy's
 * BasicAuthFilter: no credential header -> no_credential_for_basic_auth;
 * a value not starting with "Basic " (case-sensitive) ->
 * invalid_scheme_for_basic_auth; the rest decoded as Envoy's
 * Base64::decodeWithoutPadding (up to two '=' dropped, then strict base64:
 * anything else decodes to nothing) with no ':' in it ->
 * invalid_format_for_basic_auth; an unknown name or a password whose
 * SHA-1 (base64) is not the user's -> invalid_credential_for_basic_auth.
 * Every denial is a 401 with Envoy's body and www-authenticate Basic
 * realm="<original URI>"; an allowed request gets forward_username_header
 * (the client's own replaced). Stats http.<prefix>.basic_auth.allowed /
 * .denied.
 */
/* SHA1_Init / _Update / _Final: a context on the stack, no allocation and
 * no provider fetch per request on a worker (EVP_MD_CTX_new allocates) */
#define OPENSSL_SUPPRESS_DEPRECATED

#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

#include "arn_config.h"
#include "arn_jwt.h"
#include "http_basic_auth.h"
#include "http_int.h"
#include "http_req_kept.h"
#include "http_local.h"
#include "http_stream.h"
#include "http_worker.h"

/* base64 characters decoded at a time (a multiple of 4: every piece but
 * the last leaves no bits over) */
#define BA_PIECE 256

enum ba_result {
	BA_OK = 0,
	BA_NO_CREDENTIAL,
	BA_INVALID_SCHEME,
	BA_INVALID_FORMAT,
	BA_INVALID_CREDENTIAL,
};

static const char *const ba_body[] = {
    [BA_NO_CREDENTIAL] = "User authentication failed. Missing username and password.",
    [BA_INVALID_SCHEME] = "User authentication failed. Expected 'Basic' authentication scheme.",
    [BA_INVALID_FORMAT] = "User authentication failed. Invalid basic credential format.",
    [BA_INVALID_CREDENTIAL] = "User authentication failed. Invalid username/password combination.",
};

static const char *const ba_details[] = {
    [BA_NO_CREDENTIAL] = "no_credential_for_basic_auth",
    [BA_INVALID_SCHEME] = "invalid_scheme_for_basic_auth",
    [BA_INVALID_FORMAT] = "invalid_format_for_basic_auth",
    [BA_INVALID_CREDENTIAL] = "invalid_credential_for_basic_auth",
};

/* The credential decoded: the name (up to the first ':', kept when at
 * most ARN_CFG_BASIC_AUTH_MAX_NAME bytes: a longer one is no user's) and
 * the password's SHA-1, hashed as it is decoded. */
struct ba_cred {
	SHA_CTX sha;
	bool colon, name_long;
	size_t name_len;
	char name[ARN_CFG_BASIC_AUTH_MAX_NAME];
};

static void ba_take(struct ba_cred *c, const unsigned char *b, size_t n)
{
	size_t i = 0;
	for (; !c->colon && i < n; i++) {
		if (b[i] == ':')
			c->colon = true;
		else if (c->name_len < sizeof(c->name))
			c->name[c->name_len++] = (char)b[i];
		else
			c->name_long = true;
	}
	if (i < n)
		SHA1_Update(&c->sha, b + i, n - i);
}

/* Envoy's decodeWithoutPadding of @p s into @p c, piece by piece.
 * @return false where Envoy's would decode to nothing. */
static bool ba_decode(struct ba_cred *c, const char *s, size_t n)
{
	if (n && s[n - 1] == '=')
		n--;
	if (n && s[n - 1] == '=')
		n--;
	/* a length of 1 mod 4, a character out of the alphabet (a third
	 * '=' too) or nonzero bits left over: arn_b64_decode refuses */
	if (n == 0)
		return false;
	unsigned char out[BA_PIECE / 4 * 3];
	for (size_t at = 0; at < n; at += BA_PIECE) {
		size_t k = n - at < BA_PIECE ? n - at : BA_PIECE;
		long d = arn_b64_decode(s + at, k, out, sizeof(out));
		if (d < 0)
			return false;
		ba_take(c, out, (size_t)d);
	}
	return true;
}

static enum ba_result ba_check(struct http_stream *st, const struct arn_cfg_basic_auth *f,
			       const struct arn_cfg_basic_auth_users *users, struct ba_cred *c)
{
	const char *hn = f->authentication_header ? f->authentication_header : "authorization";
	size_t hl = f->authentication_header ? f->authentication_header_len : 13;
	int k = arn_h1_find(&st->req.m, hn, hl, 0);
	if (k < 0)
		return BA_NO_CREDENTIAL;
	const char *v = st->req.m.hdrs[k].value;
	size_t vl = st->req.m.hdrs[k].value_len;
	if (vl < 6 || memcmp(v, "Basic ", 6) != 0)
		return BA_INVALID_SCHEME;
	SHA1_Init(&c->sha);
	c->colon = c->name_long = false;
	c->name_len = 0;
	if (!ba_decode(c, v + 6, vl - 6) || !c->colon)
		return BA_INVALID_FORMAT;
	unsigned char md[SHA_DIGEST_LENGTH];
	SHA1_Final(md, &c->sha);
	/* Envoy compares the base64 of the digest with the file's text */
	unsigned char b64[ARN_CFG_BASIC_AUTH_HASH_LEN + 1];
	EVP_EncodeBlock(b64, md, SHA_DIGEST_LENGTH);
	const struct arn_cfg_basic_auth_user *u =
	    c->name_long ? NULL : arn_cfg_basic_auth_find(users, c->name, c->name_len);
	if (!u || CRYPTO_memcmp(b64, u->hash, ARN_CFG_BASIC_AUTH_HASH_LEN) != 0)
		return BA_INVALID_CREDENTIAL;
	return BA_OK;
}

static void ba_count(struct http_stream *st, size_t i, unsigned id)
{
	struct http_hcm_rt *hr = st->hc->hrt;
	struct arn_stats_scope *sc = hr && i < HTTP_MAX_FILTER_STATS ? hr->fstats[i] : NULL;
	if (sc)
		arn_stats_inc(sc, st->hc->w->slot, id);
}

bool http_basic_auth_step(struct http_stream *st, size_t i, const struct arn_cfg_basic_auth *f,
			  const struct arn_cfg_route_match *mt)
{
	const struct arn_cfg_hcm *h = st->hc->hcm;
	const char *name = h->http_filter_names ? h->http_filter_names[i] : NULL;
	/* the route's (or virtual host's) BasicAuthPerRoute replaces the users */
	const struct arn_cfg_basic_auth_users *pr =
	    mt && name ? arn_cfg_per_filter_find(mt->vhost, mt->route, name, strlen(name),
						 ARN_CFG_PF_BASIC_AUTH)
		       : NULL;
	struct ba_cred c;
	enum ba_result r = ba_check(st, f, pr ? pr : &f->users, &c);
	if (r != BA_OK) {
		ba_count(st, i, ARN_BASIC_AUTH_denied);
		struct arn_h1_edit e[1];
		unsigned n = http_www_authenticate(st, "Basic", "", e);
		http_local_reply(st, 401, ba_body[r], strlen(ba_body[r]), 0, ba_details[r], e, n);
		return true;
	}
	if (f->forward_username_header) {
		/* Envoy's setCopy: the client's own value replaced */
		char *t =
		    st->res && st->text_len <= HTTP_TEXT && c.name_len <= HTTP_TEXT - st->text_len
			? st->res->text + st->text_len
			: NULL;
		struct arn_h1_edit e = {.name = f->forward_username_header,
					.name_len = (uint16_t)f->forward_username_header_len,
					.value = t,
					.value_len = (uint32_t)c.name_len,
					.op = ARN_H1_EDIT_SET};
		if (t) {
			memcpy(t, c.name, c.name_len);
			st->text_len += (uint32_t)c.name_len;
		}
		if (!t || http_req_edits_keep(st, &e, 1) < 0) {
			/* never the request upstream without it (issue 12) */
			HTTP_INC(st->hc, rq_edit_overflow);
			http_local_reply(st, 500, NULL, 0, 0, "header_edits_overflow", NULL, 0);
			return true;
		}
	}
	ba_count(st, i, ARN_BASIC_AUTH_allowed);
	return false;
}
