/*
 * envoy.filters.http.api_key_auth and envoy.filters.http.credential_injector
 * (http_apikey.h), as Envoy's filters (api_key_auth.cc with Forwarding,
 * credential_injector_filter.cc with the generic injector).
 *
 * api_key_auth: the route's (or virtual host's) ApiKeyAuthPerRoute
 * replaces the credentials and key sources it gives and the forwarding
 * it has; no key source -> 401 missing_key_sources; no credentials -> 401
 * missing_credentials; the first source with a non-empty key wins
 * (a header's first line, "Bearer " dropped; a query parameter's first
 * value, percent-decoded; a cookie's value, quotes dropped); none -> 401
 * missing_api_key; a key of no credential -> 401 unkonwn_api_key (Envoy's
 * spelling); a client the route's allowed_clients does not name -> 403
 * client_not_allowed. Stats http.<prefix>.api_key_auth.allowed /
 * unauthorized / forbidden.
 *
 * The lookup: the key's SHA-256 searched among the credentials' digests
 * (sorted at conversion), then the key compared with CRYPTO_memcmp. What
 * the search's timing shows is where a digest falls among the configured
 * digests, nothing of the bytes of any key; Envoy's flat_hash_map compares
 * the key with memcmp in the bucket its hash picks.
 */
/* SHA256_Init / _Update / _Final: a context on the stack, no allocation
 * and no provider fetch per request on a worker */
#define OPENSSL_SUPPRESS_DEPRECATED

#include <string.h>

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "arn_config.h"
#include "arn_config_apikey.h"
#include "http_apikey.h"
#include "http_int.h"
#include "http_local.h"
#include "http_req_kept.h"
#include "http_stream.h"
#include "http_worker.h"

/* at most this many edits: the client id, one removal per source, the
 * rebuilt cookie line */
#define AK_MAX_EDITS (ARN_CFG_API_KEY_MAX_SOURCES + 2)

static const char AK_401[] = "Client authentication failed.";
static const char AK_403[] = "Client is forbidden.";

static void ak_count(struct http_stream *st, size_t i, unsigned id)
{
	struct http_hcm_rt *hr = st->hc->hrt;
	struct arn_stats_scope *sc = hr && i < HTTP_MAX_FILTER_STATS ? hr->fstats[i] : NULL;
	if (sc)
		arn_stats_inc(sc, st->hc->w->slot, id);
}

static int hexv(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The next byte of percent-encoded @p s at *@p at (a "%XX" with two hex
 * digits decoded, anything else as it is, '+' too: Envoy's
 * urlDecodeQueryParameter). */
static unsigned char pct_next(const char *s, size_t n, size_t *at)
{
	size_t i = *at;
	if (s[i] == '%' && i + 2 < n && hexv((unsigned char)s[i + 1]) >= 0 &&
	    hexv((unsigned char)s[i + 2]) >= 0) {
		*at = i + 3;
		return (unsigned char)(hexv((unsigned char)s[i + 1]) * 16 +
				       hexv((unsigned char)s[i + 2]));
	}
	*at = i + 1;
	return (unsigned char)s[i];
}

/* Does percent-encoded @p s (@p n bytes) decode to @p name? */
static bool pct_eq(const char *s, size_t n, const char *name, size_t nl)
{
	size_t at = 0, k = 0;
	while (at < n) {
		if (k == nl || pct_next(s, n, &at) != (unsigned char)name[k])
			return false;
		k++;
	}
	return k == nl;
}

/* The query of @p m's path (up to a '#'), or NULL. */
static const char *ak_query(const struct arn_h1_msg *m, size_t *qn)
{
	/* a request without a path (Envoy's GHSA-47vj-9r25-wv5j: CONNECT
	 * with hide_credentials and a query source crashed it) has none */
	if (!m->path.p || !m->path.len)
		return NULL;
	const char *q = memchr(m->path.p, '?', m->path.len);
	if (!q)
		return NULL;
	q++;
	size_t n = m->path.len - (size_t)(q - m->path.p);
	const char *h = memchr(q, '#', n);
	*qn = h ? (size_t)(h - q) : n;
	return q;
}

/* The first value of query parameter @p name (decoded names compared),
 * still encoded, or false when the query has none. */
static bool ak_query_find(const struct arn_h1_msg *m, const char *name, size_t nl,
			  struct arn_h1_slice *out)
{
	size_t qn = 0;
	const char *q = ak_query(m, &qn);
	for (size_t i = 0; q && i < qn;) {
		size_t j = i;
		while (j < qn && q[j] != '&')
			j++;
		size_t eq = i;
		while (eq < j && q[eq] != '=')
			eq++;
		if (pct_eq(q + i, eq - i, name, nl)) {
			out->p = eq < j ? q + eq + 1 : q + j;
			out->len = (uint32_t)(eq < j ? j - eq - 1 : 0);
			return true;
		}
		i = j + 1;
	}
	return false;
}

/* The key the request presents: the first source's that is not empty.
 * A query value is decoded into @p buf (ARN_CFG_API_KEY_MAX_KEY bytes);
 * one that decodes longer is no key's (*@p long_key). */
static bool ak_key(const struct http_stream *st, const struct arn_cfg_api_key_sources *src,
		   char *buf, const char **key, size_t *kl, bool *long_key)
{
	const struct arn_h1_msg *m = &st->req.m;
	*long_key = false;
	for (size_t i = 0; i < src->n; i++) {
		const struct arn_cfg_api_key_source *s = &src->v[i];
		struct arn_h1_slice v = {NULL, 0};
		if (s->kind == ARN_CFG_AK_HEADER) {
			int k = arn_h1_find(m, s->name, s->name_len, 0);
			if (k < 0)
				continue;
			v.p = m->hdrs[k].value;
			v.len = m->hdrs[k].value_len;
			if (v.len >= 7 && memcmp(v.p, "Bearer ", 7) == 0) {
				v.p += 7;
				v.len -= 7;
			}
		} else if (s->kind == ARN_CFG_AK_COOKIE) {
			if (!http_lb_cookie_find(m, s->name, s->name_len, &v))
				continue;
		} else {
			if (!ak_query_find(m, s->name, s->name_len, &v) || !v.len)
				continue;
			size_t at = 0, n = 0;
			while (at < v.len && n <= ARN_CFG_API_KEY_MAX_KEY) {
				unsigned char ch = pct_next(v.p, v.len, &at);
				if (n < ARN_CFG_API_KEY_MAX_KEY)
					buf[n] = (char)ch;
				n++;
			}
			if (n > ARN_CFG_API_KEY_MAX_KEY) {
				*long_key = true;
				*key = NULL;
				*kl = 0;
				return true;
			}
			*key = buf;
			*kl = n;
			return true;
		}
		if (v.len) {
			*key = v.p;
			*kl = v.len;
			*long_key = v.len > ARN_CFG_API_KEY_MAX_KEY;
			return true;
		}
	}
	return false;
}

static const struct arn_cfg_api_key_cred *ak_find(const struct arn_cfg_api_key_creds *c,
						  const char *key, size_t kl)
{
	unsigned char d[SHA256_DIGEST_LENGTH];
	SHA256_CTX sh;
	SHA256_Init(&sh);
	SHA256_Update(&sh, key, kl);
	SHA256_Final(d, &sh);
	size_t lo = 0, hi = c->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int k = memcmp(d, c->v[mid].digest, ARN_CFG_API_KEY_DIGEST);
		if (k == 0) {
			const struct arn_cfg_api_key_cred *x = &c->v[mid];
			return x->key_len == kl && CRYPTO_memcmp(x->key, key, kl) == 0 ? x : NULL;
		}
		if (k < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

static bool ak_allowed(const struct arn_cfg_api_key_auth *r, const char *c, size_t cl)
{
	size_t lo = 0, hi = r->n_allowed;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int k =
		    arn_cfg_api_key_client_cmp(c, cl, r->allowed[mid].name, r->allowed[mid].len);
		if (k == 0)
			return true;
		if (k < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return false;
}

/* Envoy's removeCookieValue for cookie @p name: the request's cookies but
 * that one (and those without '=', which it drops too), joined with "; "
 * into one line in the stream's text. @return 1 with the edit (SET, or
 * REMOVE when none is left), 0 when the request has no such cookie,
 * -ENOSPC when the line does not fit the text. */
static int ak_cookie_edit(struct http_stream *st, const char *name, size_t nl,
			  struct arn_h1_edit *e)
{
	const struct arn_h1_msg *m = &st->req.m;
	struct arn_h1_slice v;
	if (!http_lb_cookie_find(m, name, nl, &v))
		return 0;
	char *t = st->res && st->text_len < HTTP_TEXT ? st->res->text + st->text_len : NULL;
	size_t room = t ? HTTP_TEXT - st->text_len : 0, used = 0;
	for (int i = arn_h1_find(m, "cookie", 6, 0); i >= 0;
	     i = arn_h1_find(m, "cookie", 6, i + 1)) {
		const char *p = m->hdrs[i].value, *end = p + m->hdrs[i].value_len;
		while (p < end) {
			const char *semi = memchr(p, ';', (size_t)(end - p));
			if (!semi)
				semi = end;
			const char *s = p;
			while (s < semi && *s == ' ')
				s++;
			const char *eq = memchr(s, '=', (size_t)(semi - s));
			p = semi + (semi < end);
			if (!eq || ((size_t)(eq - s) == nl && memcmp(s, name, nl) == 0))
				continue;
			size_t l = (size_t)(semi - s), sep = used ? 2 : 0;
			if (!t || l + sep > room - used)
				return -ENOSPC;
			memcpy(t + used, "; ", sep);
			memcpy(t + used + sep, s, l);
			used += sep + l;
		}
	}
	*e = (struct arn_h1_edit){.name = "cookie",
				  .name_len = 6,
				  .value = t,
				  .value_len = (uint32_t)used,
				  .op = used ? ARN_H1_EDIT_SET : ARN_H1_EDIT_REMOVE};
	st->text_len += (uint32_t)used;
	return 1;
}

/* Envoy's removeKey for query parameter @p name: the request's path
 * without any parameter of that (decoded) name, into the stream's text,
 * as the path the request goes upstream with (and is logged with), as
 * path normalization replaces it. The other parameters are kept as they
 * came, in their order (Envoy's replaceQueryString writes them sorted by
 * name and decoded). @return 0 (replaced, or no such parameter), or
 * -ENOSPC when the path does not fit the stream's text. */
static int ak_query_strip(struct http_stream *st, const char *name, size_t nl)
{
	struct arn_h1_msg *m = &st->req.m;
	struct arn_h1_slice v;
	if (!ak_query_find(m, name, nl, &v))
		return 0;
	size_t qn = 0;
	const char *q = ak_query(m, &qn);
	size_t head = (size_t)(q - 1 - m->path.p); /* up to the '?' */
	const char *tail = q + qn;		   /* a '#' on, if any */
	size_t tl = m->path.len - (size_t)(tail - m->path.p);
	if (!st->res || st->text_len >= HTTP_TEXT || m->path.len + 1 > HTTP_TEXT - st->text_len)
		return -ENOSPC;
	char *t = st->res->text + st->text_len;
	memcpy(t, m->path.p, head);
	size_t at = head;
	bool first = true;
	for (size_t i = 0; i < qn;) {
		size_t j = i;
		while (j < qn && q[j] != '&')
			j++;
		size_t eq = i;
		while (eq < j && q[eq] != '=')
			eq++;
		if (!pct_eq(q + i, eq - i, name, nl)) {
			t[at++] = first ? '?' : '&';
			memcpy(t + at, q + i, j - i);
			at += j - i;
			first = false;
		}
		i = j + 1;
	}
	memcpy(t + at, tail, tl);
	at += tl;
	t[at] = 0;
	m->path = (struct arn_h1_slice){t, (uint32_t)at};
	st->text_len += (uint32_t)at + 1;
	return 0;
}

static bool ak_deny(struct http_stream *st, size_t i, unsigned status, const char *details)
{
	ak_count(st, i, status == 401 ? ARN_API_KEY_AUTH_unauthorized : ARN_API_KEY_AUTH_forbidden);
	const char *b = status == 401 ? AK_401 : AK_403;
	http_local_reply(st, status, b, strlen(b), 0, details, NULL, 0);
	return true;
}

static bool ak_overflow(struct http_stream *st, const char *details)
{
	/* never the request upstream without its edits (issue 12) */
	HTTP_INC(st->hc, rq_edit_overflow);
	http_local_reply(st, 500, NULL, 0, 0, details, NULL, 0);
	return true;
}

bool http_api_key_step(struct http_stream *st, size_t i, const struct arn_cfg_api_key_auth *f,
		       const struct arn_cfg_route_match *mt)
{
	const struct arn_cfg_hcm *h = st->hc->hcm;
	const char *name = h->http_filter_names ? h->http_filter_names[i] : NULL;
	const struct arn_cfg_api_key_auth *r =
	    mt && name ? arn_cfg_per_filter_find(mt->vhost, mt->route, name, strlen(name),
						 ARN_CFG_PF_API_KEY_AUTH)
		       : NULL;
	const struct arn_cfg_api_key_creds *creds = r && r->creds.n ? &r->creds : &f->creds;
	const struct arn_cfg_api_key_sources *src = r && r->sources.n ? &r->sources : &f->sources;
	const struct arn_cfg_api_key_fwd *fwd = r && r->fwd.present ? &r->fwd : &f->fwd;
	if (!src->n)
		return ak_deny(st, i, 401, "missing_key_sources");
	if (!creds->n)
		return ak_deny(st, i, 401, "missing_credentials");
	char buf[ARN_CFG_API_KEY_MAX_KEY];
	const char *key = NULL;
	size_t kl = 0;
	bool long_key = false;
	if (!ak_key(st, src, buf, &key, &kl, &long_key))
		return ak_deny(st, i, 401, "missing_api_key");
	const struct arn_cfg_api_key_cred *c = long_key ? NULL : ak_find(creds, key, kl);
	if (!c)
		return ak_deny(st, i, 401, "unkonwn_api_key");
	if (r && r->n_allowed && !ak_allowed(r, c->client, c->client_len))
		return ak_deny(st, i, 403, "client_not_allowed");
	struct arn_h1_edit e[AK_MAX_EDITS];
	unsigned n = 0;
	if (fwd->header)
		/* Envoy's setCopy: the client's own value replaced */
		e[n++] = (struct arn_h1_edit){.name = fwd->header,
					      .name_len = (uint16_t)fwd->header_len,
					      .value = c->client,
					      .value_len = c->client_len,
					      .op = ARN_H1_EDIT_SET};
	if (fwd->hide) {
		/* Envoy's removeKey: every source's key, wherever it was found */
		bool cookie_done = false;
		for (size_t k = 0; k < src->n; k++) {
			const struct arn_cfg_api_key_source *s = &src->v[k];
			if (s->kind == ARN_CFG_AK_HEADER) {
				e[n++] = (struct arn_h1_edit){.name = s->name,
							      .name_len = (uint16_t)s->name_len,
							      .op = ARN_H1_EDIT_REMOVE};
			} else if (s->kind == ARN_CFG_AK_QUERY) {
				if (ak_query_strip(st, s->name, s->name_len) < 0)
					return ak_overflow(st, "path_rewrite_overflow");
			} else if (!cookie_done) {
				/* one rebuilt line for all the cookie sources */
				int w = ak_cookie_edit(st, s->name, s->name_len, &e[n]);
				if (w < 0)
					return ak_overflow(st, "header_edits_overflow");
				if (w > 0) {
					n++;
					cookie_done = true;
				}
			}
		}
	}
	if (n && http_req_edits_keep(st, e, n) < 0)
		return ak_overflow(st, "header_edits_overflow");
	ak_count(st, i, ARN_API_KEY_AUTH_allowed);
	return false;
}

/* The generic credential's value: the bytes of generic_secret
 * @p f->secret in the request's configuration generation @p g (the
 * listener warmed on it: only a secret removed since, or one of another
 * kind, is missing), as they are, if they can be a header value (at most
 * ARN_CFG_CRED_MAX_VALUE, no CR, LF or NUL). None: Envoy's generic
 * injector's "Failed to get credential from secret". */
static bool cred_value(const struct arn_cfg_gen *g, const struct arn_cfg_cred_injector *f,
		       const char **v, size_t *len)
{
	*v = NULL;
	*len = 0;
	const struct arn_cfg_secret *s = g ? arn_cfg_secret_find(g, &f->secret) : NULL;
	if (!s || s->kind != ARN_CFG_SECRET_GENERIC || !s->generic_len ||
	    s->generic_len > ARN_CFG_CRED_MAX_VALUE)
		return false;
	for (size_t i = 0; i < s->generic_len; i++)
		if (s->generic[i] == '\r' || s->generic[i] == '\n' || s->generic[i] == 0)
			return false;
	*v = (const char *)s->generic;
	*len = s->generic_len;
	return true;
}

bool http_cred_inject_step(struct http_stream *st, size_t i, const struct arn_cfg_cred_injector *f,
			   const struct arn_cfg_gen *g)
{
	struct http_hcm_rt *hr = st->hc->hrt;
	struct arn_stats_scope *sc = hr && i < HTTP_MAX_FILTER_STATS ? hr->fstats[i] : NULL;
	unsigned id;
	bool ok = true;
	const char *val = NULL;
	size_t vl = 0;
	if (!cred_value(g, f, &val, &vl) || !vl) {
		/* Envoy's generic injector: "Failed to get credential from
		 * secret" */
		id = ARN_CRED_INJECTOR_failed;
		ok = false;
	} else if (!f->overwrite && arn_h1_find(&st->req.m, f->header, f->header_len, 0) >= 0) {
		id = ARN_CRED_INJECTOR_already_exists;
	} else {
		struct arn_h1_edit e = {.name = f->header,
					.name_len = (uint16_t)f->header_len,
					.value = val,
					.value_len = (uint32_t)vl,
					.op = ARN_H1_EDIT_SET};
		if (http_req_edits_keep(st, &e, 1) < 0)
			return ak_overflow(st, "header_edits_overflow");
		id = ARN_CRED_INJECTOR_injected;
	}
	if (sc)
		arn_stats_inc(sc, st->hc->w->slot, id);
	if (!ok && !f->allow_without) {
		static const char b[] = "Failed to inject credential.";
		http_local_reply(st, 401, b, sizeof(b) - 1, 0, "failed_to_inject_credential", NULL,
				 0);
		return true;
	}
	return false;
}
