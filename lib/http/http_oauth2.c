/*
 * envoy.filters.http.oauth2 on the data path: Envoy's OAuth2Filter and
 * OAuth2ClientImpl as Envoy 1.31/1.32 have them (the state parameter
 * "url=<url>&nonce=<nonce>", the OauthNonce cookie, cookies
 * "<name>=<value>;path=/;Max-Age=<s>;secure;HttpOnly"). See http_oauth2.h.
 *
 * The low-level SHA256 calls keep the HMAC on the stack (HMAC() would
 * allocate on a worker for every request).
 */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include "arn_access_log.h"
#include "arn_config.h"
#include "arn_jwt.h"
#include "arn_log.h"
#include "arn_stats_envoy.h"
#include "http_access_log.h"
#include "http_filter.h"
#include "http_int.h"
#include "http_local.h"
#include "http_ctxpool.h"
#include "http_oauth2.h"
#include "http_req_kept.h"
#include "http_stream.h"
#include "http_subreq.h"
#include "http_worker.h"

#define UNAUTHORIZED_BODY "OAuth flow failed."
#define NONCE_COOKIE "OauthNonce"
#define COOKIE_TAIL ";path=/;Max-Age=%s;secure;HttpOnly"

/* The large buffer of an exchange: the answer, then the request's body
 * and Authorization, the original URL, the HMAC key, the reply */
#define OFF_BODY HTTP_OAUTH2_ANSWER_MAX
#define BODY_MAX (8u * 1024)
#define OFF_URL (OFF_BODY + BODY_MAX)
#define URL_MAX (8u * 1024)
#define OFF_KEY (OFF_URL + URL_MAX)
#define OFF_OUT (OFF_KEY + ARN_CFG_GENERIC_SECRET_MAX)
_Static_assert(OFF_OUT + 3 * HTTP_OAUTH2_TOKEN_MAX + 1024 <= HTTP_BIG_SCRATCH,
	       "an exchange fits a large scratch buffer");

struct http_oauth2 {
	struct http_subreq sr;
	struct http_stream *st;
	struct http_oauth2 *next;
	const struct arn_cfg_oauth2 *cfg;
	char *big;
	uint32_t alen, url_len, key_len;
	uint16_t status;
	uint8_t idx;
	bool overflow;
	struct http_subreq_header h[3];
	unsigned n_h;
};

static struct http_ctxpools pools;

int http_oauth2_worker_init(struct http_worker *w)
{
	/* (a worker without a pool: every call fails, counted) */
	return http_ctxpools_init(&pools, w->idx, HTTP_OAUTH2_N, sizeof(struct http_oauth2),
				  offsetof(struct http_oauth2, next));
}

void http_oauth2_worker_fini(struct http_worker *w)
{
	http_ctxpools_fini(&pools, w->idx);
}

unsigned http_oauth2_in_use(const struct http_worker *w)
{
	return http_ctxpools_in_use(&pools, w->idx);
}

static struct http_oauth2 *oa_at(const struct http_stream *st)
{
	return http_ctxpools_at(&pools, st->hc->w->idx, st->oauth2);
}

static void oa_put(struct http_worker *w, struct http_oauth2 *a)
{
	if (a->big) {
		OPENSSL_cleanse(a->big + OFF_BODY, OFF_OUT - OFF_BODY);
		http_big_put(w, a->big);
	}
	a->big = NULL;
	a->st = NULL;
	http_ctxpool_put(&pools.w[w->idx], a);
}

static void oa_count(struct http_stream *st, size_t i, unsigned id)
{
	struct http_hcm_rt *r = st->hc->hrt;
	struct arn_stats_scope *sc = r && i < HTTP_MAX_FILTER_STATS ? r->fstats[i] : NULL;
	if (sc)
		arn_stats_inc(sc, st->hc->w->slot, id);
}

/* ---- pieces (exposed for the tests and the fuzzer) ----------------------------------- */

static int hexv(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* Percent-decode @p s into @p out (as long at most): a '%' not followed
 * by two hex digits stays as it is (Envoy's PercentEncoding::decode). */
static size_t pct_decode(const char *s, size_t n, char *out)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		int a, b;
		if (s[i] == '%' && i + 2 < n && (a = hexv((unsigned char)s[i + 1])) >= 0 &&
		    (b = hexv((unsigned char)s[i + 2])) >= 0) {
			out[k++] = (char)(a * 16 + b);
			i += 2;
		} else {
			out[k++] = s[i];
		}
	}
	return k;
}

/* The first value of @p key in "k=v&k=v" @p q (raw), or NULL. */
static const char *param(const char *q, size_t n, const char *key, size_t kl, size_t *vl)
{
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j < n && q[j] != '&')
			j++;
		size_t eq = i;
		while (eq < j && q[eq] != '=')
			eq++;
		if (eq - i == kl && !memcmp(q + i, key, kl)) {
			*vl = eq < j ? j - eq - 1 : 0;
			return eq < j ? q + eq + 1 : q + j;
		}
		i = j + 1;
	}
	return NULL;
}

static bool url_ok(const char *u, size_t n)
{
	size_t at;
	if (n > 7 && !memcmp(u, "http://", 7))
		at = 7;
	else if (n > 8 && !memcmp(u, "https://", 8))
		at = 8;
	else
		return false;
	if (at >= n || u[at] == '/' || u[at] == '?' || u[at] == '#')
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)u[i] < 0x21 || (unsigned char)u[i] == 0x7f)
			return false; /* never into a Location header */
	return true;
}

int http_oauth2_parse_callback(const char *q, size_t qlen, char *buf, size_t cap, const char **code,
			       size_t *code_len, const char **url, size_t *url_len,
			       const char **nonce, size_t *nonce_len)
{
	size_t vl;
	if (param(q, qlen, "error", 5, &vl))
		return -EINVAL;
	const char *c = param(q, qlen, "code", 4, code_len);
	const char *s = param(q, qlen, "state", 5, &vl);
	if (!c || !s || 2 * vl > cap)
		return -EINVAL;
	*code = c;
	/* urlDecodeQueryParameter, then parseParameters with decoding */
	size_t sl = pct_decode(s, vl, buf);
	const char *u = param(buf, sl, "url", 3, url_len);
	const char *nn = param(buf, sl, "nonce", 5, nonce_len);
	if (!u || !nn)
		return -EINVAL;
	char *ud = buf + sl;
	*url_len = pct_decode(u, *url_len, ud);
	char *nd = ud + *url_len;
	*nonce_len = pct_decode(nn, *nonce_len, nd);
	*url = ud;
	*nonce = nd;
	return url_ok(ud, *url_len) ? 0 : -EINVAL;
}

const char *http_oauth2_cookie_in(const char *v, size_t n, const char *name, size_t nlen,
				  size_t *vlen)
{
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j < n && v[j] != ';')
			j++;
		size_t a = i;
		while (a < j && v[a] == ' ')
			a++;
		size_t eq = a;
		while (eq < j && v[eq] != '=')
			eq++;
		if (eq < j && eq - a == nlen && !memcmp(v + a, name, nlen)) {
			const char *x = v + eq + 1;
			size_t xl = j - eq - 1;
			if (xl >= 2 && x[0] == '"' && x[xl - 1] == '"') {
				x++;
				xl -= 2;
			}
			*vlen = xl;
			return x;
		}
		i = j + 1;
	}
	return NULL;
}

const char *http_oauth2_cookie(const struct http_stream *st, const char *name, size_t nlen,
			       size_t *vlen)
{
	const struct arn_h1_msg *m = &st->req.m;
	for (int k = arn_h1_find(m, "cookie", 6, 0); k >= 0;
	     k = arn_h1_find(m, "cookie", 6, k + 1)) {
		const char *x =
		    http_oauth2_cookie_in(m->hdrs[k].value, m->hdrs[k].value_len, name, nlen, vlen);
		if (x)
			return x;
	}
	return NULL;
}

static void hmac_sha256(const uint8_t *key, size_t klen, const char *const *parts,
			const size_t *lens, size_t n, unsigned char md[32])
{
	unsigned char k[64] = {0}, pad[64];
	SHA256_CTX c;
	if (klen > 64) {
		SHA256_Init(&c);
		SHA256_Update(&c, key, klen);
		SHA256_Final(k, &c);
	} else {
		memcpy(k, key, klen);
	}
	for (int i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x36;
	SHA256_Init(&c);
	SHA256_Update(&c, pad, 64);
	for (size_t i = 0; i < n; i++) {
		if (i)
			SHA256_Update(&c, "\n", 1);
		SHA256_Update(&c, parts[i], lens[i]);
	}
	unsigned char inner[32];
	SHA256_Final(inner, &c);
	for (int i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x5c;
	SHA256_Init(&c);
	SHA256_Update(&c, pad, 64);
	SHA256_Update(&c, inner, 32);
	SHA256_Final(md, &c);
	OPENSSL_cleanse(k, sizeof(k));
	OPENSSL_cleanse(pad, sizeof(pad));
}

void http_oauth2_hmac(const uint8_t *key, size_t klen, const char *const *parts, const size_t *lens,
		      char out[45])
{
	unsigned char md[32];
	hmac_sha256(key, klen, parts, lens, 5, md);
	EVP_EncodeBlock((unsigned char *)out, md, 32);
}

/* Envoy's older form: the base64 of the HMAC's hex (still accepted). */
static size_t hmac_hex_b64(const uint8_t *key, size_t klen, const char *const *parts,
			   const size_t *lens, char out[92])
{
	static const char hx[] = "0123456789abcdef";
	unsigned char md[32], h[64];
	hmac_sha256(key, klen, parts, lens, 5, md);
	for (int i = 0; i < 32; i++) {
		h[2 * i] = (unsigned char)hx[md[i] >> 4];
		h[2 * i + 1] = (unsigned char)hx[md[i] & 15];
	}
	return (size_t)EVP_EncodeBlock((unsigned char *)out, h, 64);
}

/* ---- the token endpoint's JSON ------------------------------------------------------- */

struct js {
	const char *s;
	size_t n, i;
	char *buf;
	size_t cap, used;
};

static void js_ws(struct js *j)
{
	while (j->i < j->n && (j->s[j->i] == ' ' || j->s[j->i] == '\t' || j->s[j->i] == '\n' ||
			       j->s[j->i] == '\r'))
		j->i++;
}

static int js_put(struct js *j, uint32_t cp)
{
	char t[4];
	size_t k;
	if (cp < 0x80) {
		t[0] = (char)cp;
		k = 1;
	} else if (cp < 0x800) {
		t[0] = (char)(0xc0 | (cp >> 6));
		t[1] = (char)(0x80 | (cp & 0x3f));
		k = 2;
	} else if (cp < 0x10000) {
		t[0] = (char)(0xe0 | (cp >> 12));
		t[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		t[2] = (char)(0x80 | (cp & 0x3f));
		k = 3;
	} else {
		t[0] = (char)(0xf0 | (cp >> 18));
		t[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		t[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		t[3] = (char)(0x80 | (cp & 0x3f));
		k = 4;
	}
	if (!j->buf)
		return 0;
	if (k > j->cap - j->used)
		return -ENOSPC;
	memcpy(j->buf + j->used, t, k);
	j->used += k;
	return 0;
}

static int js_hex4(struct js *j, uint32_t *v)
{
	if (j->n - j->i < 4)
		return -EINVAL;
	*v = 0;
	for (int k = 0; k < 4; k++) {
		int h = hexv((unsigned char)j->s[j->i++]);
		if (h < 0)
			return -EINVAL;
		*v = *v * 16 + (uint32_t)h;
	}
	return 0;
}

/* A string at j->i ('"'), decoded into the buffer when @p keep. */
static int js_string(struct js *j, bool keep, const char **out, uint32_t *len)
{
	char *save = j->buf;
	if (!keep)
		j->buf = NULL;
	size_t start = j->used;
	int rc = -EINVAL;
	j->i++;
	while (j->i < j->n) {
		unsigned char ch = (unsigned char)j->s[j->i++];
		if (ch == '"') {
			rc = 0;
			break;
		}
		if (ch < 0x20)
			goto out;
		if (ch != '\\') {
			if ((rc = js_put(j, ch)) < 0)
				goto out;
			rc = -EINVAL;
			continue;
		}
		if (j->i >= j->n)
			goto out;
		ch = (unsigned char)j->s[j->i++];
		uint32_t cp;
		switch (ch) {
		case '"':
		case '\\':
		case '/':
			cp = ch;
			break;
		case 'b':
			cp = 8;
			break;
		case 'f':
			cp = 12;
			break;
		case 'n':
			cp = 10;
			break;
		case 'r':
			cp = 13;
			break;
		case 't':
			cp = 9;
			break;
		case 'u':
			if (js_hex4(j, &cp) < 0)
				goto out;
			if (cp >= 0xd800 && cp < 0xdc00) {
				uint32_t lo;
				if (j->n - j->i < 6 || j->s[j->i] != '\\' || j->s[j->i + 1] != 'u')
					goto out;
				j->i += 2;
				if (js_hex4(j, &lo) < 0 || lo < 0xdc00 || lo >= 0xe000)
					goto out;
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			} else if (cp >= 0xdc00 && cp < 0xe000) {
				goto out;
			}
			break;
		default:
			goto out;
		}
		if ((rc = js_put(j, cp)) < 0)
			goto out;
		rc = -EINVAL;
	}
out:
	j->buf = save;
	if (rc == 0 && keep) {
		*out = j->buf + start;
		*len = (uint32_t)(j->used - start);
	}
	return rc;
}

static int js_value(struct js *j, int depth);

static int js_number(struct js *j, bool *integral, uint64_t *v, bool *neg)
{
	size_t st = j->i;
	*neg = false;
	*integral = true;
	*v = 0;
	if (j->i < j->n && j->s[j->i] == '-') {
		*neg = true;
		j->i++;
	}
	size_t d0 = j->i;
	while (j->i < j->n && j->s[j->i] >= '0' && j->s[j->i] <= '9') {
		unsigned dg = (unsigned)(j->s[j->i] - '0');
		*v = *v > (UINT64_MAX - dg) / 10 ? UINT64_MAX : *v * 10 + dg;
		j->i++;
	}
	if (j->i == d0 || (j->s[d0] == '0' && j->i - d0 > 1))
		return -EINVAL;
	if (j->i < j->n && j->s[j->i] == '.') {
		*integral = false;
		j->i++;
		size_t f0 = j->i;
		while (j->i < j->n && j->s[j->i] >= '0' && j->s[j->i] <= '9')
			j->i++;
		if (j->i == f0)
			return -EINVAL;
	}
	if (j->i < j->n && (j->s[j->i] == 'e' || j->s[j->i] == 'E')) {
		*integral = false;
		j->i++;
		if (j->i < j->n && (j->s[j->i] == '+' || j->s[j->i] == '-'))
			j->i++;
		size_t e0 = j->i;
		while (j->i < j->n && j->s[j->i] >= '0' && j->s[j->i] <= '9')
			j->i++;
		if (j->i == e0)
			return -EINVAL;
	}
	return j->i > st ? 0 : -EINVAL;
}

static int js_lit(struct js *j, const char *w, size_t n)
{
	if (j->n - j->i < n || memcmp(j->s + j->i, w, n))
		return -EINVAL;
	j->i += n;
	return 0;
}

static int js_value(struct js *j, int depth)
{
	js_ws(j);
	if (j->i >= j->n)
		return -EINVAL;
	char ch = j->s[j->i];
	if (ch == '"') {
		const char *o;
		uint32_t l;
		return js_string(j, false, &o, &l);
	}
	if (ch == '{' || ch == '[') {
		if (depth >= HTTP_OAUTH2_JSON_DEPTH)
			return -EINVAL;
		char close = ch == '{' ? '}' : ']';
		j->i++;
		js_ws(j);
		if (j->i < j->n && j->s[j->i] == close) {
			j->i++;
			return 0;
		}
		for (;;) {
			if (close == '}') {
				js_ws(j);
				const char *o;
				uint32_t l;
				if (j->i >= j->n || j->s[j->i] != '"' ||
				    js_string(j, false, &o, &l) < 0)
					return -EINVAL;
				js_ws(j);
				if (j->i >= j->n || j->s[j->i++] != ':')
					return -EINVAL;
			}
			if (js_value(j, depth + 1) < 0)
				return -EINVAL;
			js_ws(j);
			if (j->i >= j->n)
				return -EINVAL;
			char c2 = j->s[j->i++];
			if (c2 == close)
				return 0;
			if (c2 != ',')
				return -EINVAL;
		}
	}
	if (ch == 't')
		return js_lit(j, "true", 4);
	if (ch == 'f')
		return js_lit(j, "false", 5);
	if (ch == 'n')
		return js_lit(j, "null", 4);
	bool integral, neg;
	uint64_t v;
	return js_number(j, &integral, &v, &neg);
}

static bool key_is(const char *k, uint32_t kl, const char *s)
{
	return kl == strlen(s) && !memcmp(k, s, kl);
}

int http_oauth2_parse_answer(const char *s, size_t len, char *buf, size_t cap,
			     struct http_oauth2_answer *out)
{
	memset(out, 0, sizeof(*out));
	struct js j = {.s = s, .n = len, .buf = buf, .cap = cap};
	js_ws(&j);
	if (j.i >= j.n || s[j.i] != '{')
		return -EINVAL;
	j.i++;
	js_ws(&j);
	if (j.i < j.n && s[j.i] == '}') {
		j.i++;
		goto tail;
	}
	for (;;) {
		js_ws(&j);
		/* the key decoded too (an escaped name is the same name), into
		 * a small buffer: a longer one is none of ours */
		char kbuf[16];
		const char *k = NULL;
		uint32_t kl = 0;
		if (j.i >= j.n || s[j.i] != '"')
			return -EINVAL;
		struct js kj = {.s = s, .n = len, .i = j.i, .buf = kbuf, .cap = sizeof(kbuf)};
		int rc = js_string(&kj, true, &k, &kl);
		if (rc == -ENOSPC) {
			kl = 0;
			rc = js_string(&j, false, &k, &kl);
			k = NULL;
		} else {
			j.i = kj.i;
		}
		if (rc < 0)
			return rc;
		js_ws(&j);
		if (j.i >= j.n || s[j.i++] != ':')
			return -EINVAL;
		js_ws(&j);
		if (j.i >= j.n)
			return -EINVAL;
		const char **dst = NULL;
		uint32_t *dl = NULL;
		bool *has = NULL;
		size_t klen = k ? kl : 0;
		if (key_is(kbuf, (uint32_t)klen, "access_token") && kl == klen) {
			dst = &out->access;
			dl = &out->access_len;
			has = &out->has_access;
		} else if (key_is(kbuf, (uint32_t)klen, "id_token") && kl == klen) {
			dst = &out->id;
			dl = &out->id_len;
		} else if (key_is(kbuf, (uint32_t)klen, "refresh_token") && kl == klen) {
			dst = &out->refresh;
			dl = &out->refresh_len;
		}
		bool is_exp = kl == klen && key_is(kbuf, (uint32_t)klen, "expires_in");
		if (s[j.i] == 'n' && (dst || is_exp)) {
			/* JSON null: a wrapper left unset */
			if (js_lit(&j, "null", 4) < 0)
				return -EINVAL;
			if (dst) {
				*dst = NULL;
				*dl = 0;
				if (has)
					*has = false;
			}
			if (is_exp)
				out->has_expires = false;
		} else if (dst) {
			if (s[j.i] != '"')
				return -EINVAL; /* a StringValue is a JSON string */
			if ((rc = js_string(&j, true, dst, dl)) < 0)
				return rc;
			if (has)
				*has = true;
		} else if (is_exp) {
			/* UInt64Value: a number, or a string holding one */
			bool integral = true, neg = false;
			uint64_t v = 0;
			if (s[j.i] == '"') {
				j.i++;
				size_t e = j.i;
				while (e < j.n && s[e] != '"')
					e++;
				if (e >= j.n)
					return -EINVAL;
				struct js t = {.s = s, .n = e, .i = j.i};
				if (js_number(&t, &integral, &v, &neg) < 0 || t.i != e)
					return -EINVAL;
				j.i = e + 1;
			} else if (js_number(&j, &integral, &v, &neg) < 0) {
				return -EINVAL;
			}
			if (!integral || neg || v == UINT64_MAX)
				return -EINVAL;
			out->expires_in = v;
			out->has_expires = true;
		} else if ((rc = js_value(&j, 1)) < 0) {
			return rc;
		}
		js_ws(&j);
		if (j.i >= j.n)
			return -EINVAL;
		char c2 = s[j.i++];
		if (c2 == '}')
			break;
		if (c2 != ',')
			return -EINVAL;
	}
tail:
	js_ws(&j);
	return j.i == j.n ? 0 : -EINVAL;
}

/* ---- replies ------------------------------------------------------------------------- */

static void unauthorized(struct http_stream *st, size_t i)
{
	oa_count(st, i, ARN_OAUTH2_oauth_failure);
	http_local_reply(st, 401, UNAUTHORIZED_BODY, sizeof(UNAUTHORIZED_BODY) - 1, 0, "", NULL, 0);
}

static bool is_http(const struct http_stream *st)
{
	return !st->hc->tls;
}

/* The path without its query or fragment (Envoy's PathMatcher). */
static size_t path_only(const struct http_stream *st)
{
	const struct arn_h1_slice *p = &st->req.m.path;
	size_t n = 0;
	while (n < p->len && p->p[n] != '?' && p->p[n] != '#')
		n++;
	return n;
}

/* A Set-Cookie edit whose value was written at @p v. */
static struct arn_h1_edit set_cookie(const char *v, size_t n)
{
	return (struct arn_h1_edit){.name = "set-cookie",
				    .name_len = 10,
				    .value = v,
				    .value_len = (uint32_t)n,
				    .op = ARN_H1_EDIT_ADD};
}

/* Envoy's signOutUser: 302 to scheme://host/, the four cookies deleted. */
static void sign_out(struct http_stream *st, const struct arn_cfg_oauth2 *f)
{
	char *b = http_st_text(st, 1024);
	const struct arn_h1_slice *host = &st->req.m.authority;
	if (!b || host->len > 512) {
		http_local_reply(st, 500, NULL, 0, 0, "oauth2_overflow", NULL, 0);
		return;
	}
	struct arn_h1_edit e[5];
	size_t at = 0;
	const char *names[4] = {f->ck_hmac, f->ck_bearer, f->ck_id, f->ck_refresh};
	const uint8_t lens[4] = {f->ck_hmac_len, f->ck_bearer_len, f->ck_id_len, f->ck_refresh_len};
	for (int i = 0; i < 4; i++) {
		int k = snprintf(b + at, 1024 - at,
				 "%.*s=deleted; path=/; expires=Thu, 01 Jan 1970 00:00:00 GMT",
				 (int)lens[i], names[i]);
		e[i] = set_cookie(b + at, (size_t)k);
		at += (size_t)k;
	}
	/* Envoy writes the request's :scheme as it is here */
	int k = snprintf(b + at, 1024 - at, "%s://%.*s/", is_http(st) ? "http" : "https",
			 (int)host->len, host->p);
	e[4] = (struct arn_h1_edit){.name = "location",
				    .name_len = 8,
				    .value = b + at,
				    .value_len = (uint32_t)k,
				    .op = ARN_H1_EDIT_SET};
	http_local_reply(st, 302, NULL, 0, 0, "oauth.sign_out", e, 5);
}

/* redirect_uri formatted for @p st into @p out. @return its length. */
static size_t redirect_uri(struct http_stream *st, const struct arn_cfg_oauth2 *f, char *out,
			   size_t cap)
{
	struct arn_access_record rec;
	http_access_record(st, &rec);
	return arn_access_format_apply(f->redirect_uri, &rec, out, cap);
}

/* std::string's order of @p k against @p s (Envoy's sorted map). */
static int kcmp(const char *k, size_t kl, const char *s)
{
	size_t sl = strlen(s);
	int c = memcmp(k, s, kl < sl ? kl : sl);
	if (c)
		return c;
	return kl < sl ? -1 : kl > sl;
}

/* Envoy's redirectToOAuthServer, into the large buffer @p b. */
static void to_server(struct http_stream *st, size_t i, const struct arn_cfg_oauth2 *f, char *b)
{
	const struct arn_h1_msg *m = &st->req.m;
	size_t at = 0, cap = HTTP_BIG_SCRATCH;
	struct arn_h1_edit e[2];
	unsigned ne = 0;
	/* the nonce: the client's cookie, else a new one (Envoy: 16
	 * characters; random here, not the clock) */
	size_t nl = 0;
	const char *nonce = http_oauth2_cookie(st, NONCE_COOKIE, sizeof(NONCE_COOKIE) - 1, &nl);
	char fresh[17];
	if (!nonce || nl > 256) {
		unsigned char r[8];
		if (RAND_bytes(r, sizeof(r)) != 1) {
			http_local_reply(st, 500, NULL, 0, 0, "oauth2_no_random", NULL, 0);
			return;
		}
		for (int k = 0; k < 8; k++)
			snprintf(fresh + 2 * k, 3, "%02x", r[k]);
		nonce = fresh;
		nl = 16;
		int k = snprintf(b, cap, NONCE_COOKIE "=%s" COOKIE_TAIL, fresh, "600");
		e[ne++] = set_cookie(b, (size_t)k);
		at += (size_t)k;
	}
	/* full URL, encoded; state "url=<it>&nonce=<nonce>", encoded */
	char *full = b + at;
	size_t fl = (size_t)snprintf(full, cap - at, "%s://%.*s", is_http(st) ? "http" : "https",
				     (int)m->authority.len, m->authority.p);
	if (m->path.len > 8192 || m->authority.len > 1024) {
		unauthorized(st, i);
		return;
	}
	memcpy(full + fl, m->path.p, m->path.len);
	fl += m->path.len;
	at += fl;
	char *st1 = b + at;
	size_t sl = 4;
	memcpy(st1, "url=", 4);
	sl += arn_cfg_oauth2_qencode(full, fl, st1 + sl);
	sl += (size_t)snprintf(st1 + sl, cap - at - sl, "&nonce=%.*s", (int)nl, nonce);
	at += sl;
	char *ru = b + at;
	size_t rl = redirect_uri(st, f, ru, 4096);
	at += rl + 1;
	/* the Location */
	char *loc = b + at;
	size_t ll = 0;
	memcpy(loc, f->auth_base, f->auth_base_len);
	ll += f->auth_base_len;
	bool first = true, put_r = false, put_s = false;
	for (size_t k = 0; k <= f->n_params; k++) {
		const struct arn_cfg_oauth2_param *p = k < f->n_params ? &f->params[k] : NULL;
		/* redirect_uri and state in their sorted places */
		int cr = p ? kcmp(p->k, p->kl, "redirect_uri") : 1;
		if (!put_r && cr >= 0) {
			loc[ll++] = first ? '?' : '&';
			first = false;
			memcpy(loc + ll, "redirect_uri=", 13);
			ll += 13;
			ll += arn_cfg_oauth2_qencode(ru, rl, loc + ll);
			put_r = true;
		}
		int cs = p ? kcmp(p->k, p->kl, "state") : 1;
		if (!put_s && cs >= 0) {
			loc[ll++] = first ? '?' : '&';
			first = false;
			memcpy(loc + ll, "state=", 6);
			ll += 6;
			ll += arn_cfg_oauth2_qencode(st1, sl, loc + ll);
			put_s = true;
		}
		if (!p || cr == 0 || cs == 0)
			continue;
		loc[ll++] = first ? '?' : '&';
		first = false;
		memcpy(loc + ll, p->k, p->kl);
		ll += p->kl;
		loc[ll++] = '=';
		if (p->vl) /* (an empty value may have no bytes behind it) */
			memcpy(loc + ll, p->v, p->vl);
		ll += p->vl;
	}
	if (f->resources_len) /* NULL without resources */
		memcpy(loc + ll, f->resources, f->resources_len);
	ll += f->resources_len;
	e[ne++] = (struct arn_h1_edit){.name = "location",
				       .name_len = 8,
				       .value = loc,
				       .value_len = (uint32_t)ll,
				       .op = ARN_H1_EDIT_SET};
	oa_count(st, i, ARN_OAUTH2_oauth_unauthorized_rq);
	http_local_reply(st, 302, NULL, 0, 0, "oauth.missing_credentials", e, ne);
}

/* ---- the token exchange --------------------------------------------------------------- */

/* Envoy's PercentEncoding::encode(s, ":/=&?"): '%', those, and bytes
 * outside printable ASCII. */
static size_t form_encode(const char *s, size_t n, char *out)
{
	static const char hx[] = "0123456789ABCDEF";
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch < 0x20 || ch >= 0x7f || strchr("%:/=&?", ch)) {
			out[k++] = '%';
			out[k++] = hx[ch >> 4];
			out[k++] = hx[ch & 15];
		} else {
			out[k++] = (char)ch;
		}
	}
	return k;
}

static bool cookie_octets(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch < 0x21 || ch > 0x7e || ch == '"' || ch == ',' || ch == ';' || ch == '\\')
			return false;
	}
	return true;
}

/* The id token's exp (a JWT's payload "exp"), or 0. */
uint64_t http_oauth2_jwt_exp(const char *t, size_t n)
{
	const char *d1 = memchr(t, '.', n);
	const char *d2 = d1 ? memchr(d1 + 1, '.', (size_t)(t + n - d1 - 1)) : NULL;
	if (!d1 || !d2 || memchr(d2 + 1, '.', (size_t)(t + n - d2 - 1)))
		return 0;
	size_t pl = (size_t)(d2 - d1 - 1);
	unsigned char pay[HTTP_OAUTH2_TOKEN_MAX];
	long k = arn_b64url_decode(d1 + 1, pl, pay, sizeof(pay));
	if (k <= 0)
		return 0;
	/* "exp" read by the answer's parser's rules: a number at the top */
	const char *s = (const char *)pay;
	size_t len = (size_t)k;
	struct js j = {.s = s, .n = len};
	js_ws(&j);
	if (j.i >= j.n || s[j.i] != '{')
		return 0;
	j.i++;
	for (;;) {
		js_ws(&j);
		if (j.i >= j.n || s[j.i] != '"')
			return 0;
		size_t k0 = j.i + 1;
		const char *o;
		uint32_t l;
		if (js_string(&j, false, &o, &l) < 0)
			return 0;
		bool exp = j.i - k0 == 4 && !memcmp(s + k0, "exp\"", 4);
		js_ws(&j);
		if (j.i >= j.n || s[j.i++] != ':')
			return 0;
		js_ws(&j);
		if (exp && j.i < j.n && s[j.i] != '"') {
			bool integral, neg;
			uint64_t v;
			if (js_number(&j, &integral, &v, &neg) < 0 || neg)
				return 0;
			return v;
		}
		if (js_value(&j, 1) < 0)
			return 0;
		js_ws(&j);
		if (j.i >= j.n || s[j.i++] != ',')
			return 0;
	}
}

static void oa_done(struct http_oauth2 *a)
{
	struct http_stream *st = a->st;
	const struct arn_cfg_oauth2 *f = a->cfg;
	char *b = a->big;
	if (a->overflow || a->status != 200) {
		oa_count(st, a->idx,
			 a->overflow ? ARN_OAUTH2_oauth_overflow : ARN_OAUTH2_oauth_failure);
		if (a->overflow)
			oa_count(st, a->idx, ARN_OAUTH2_oauth_failure);
		http_local_reply(st, 401, UNAUTHORIZED_BODY, sizeof(UNAUTHORIZED_BODY) - 1, 0, "",
				 NULL, 0);
		return;
	}
	struct http_oauth2_answer ans;
	char *dec = b + OFF_OUT;
	size_t dcap = 3 * HTTP_OAUTH2_TOKEN_MAX + 3;
	if (http_oauth2_parse_answer(b, a->alen, dec, dcap, &ans) < 0 || !ans.has_access ||
	    ans.access_len > HTTP_OAUTH2_TOKEN_MAX || ans.id_len > HTTP_OAUTH2_TOKEN_MAX ||
	    ans.refresh_len > HTTP_OAUTH2_TOKEN_MAX || !cookie_octets(ans.access, ans.access_len) ||
	    (ans.id && !cookie_octets(ans.id, ans.id_len)) ||
	    (ans.refresh && !cookie_octets(ans.refresh, ans.refresh_len))) {
		unauthorized(st, a->idx);
		return;
	}
	uint64_t exp_in = ans.has_expires ? ans.expires_in : f->default_expires_in_s;
	if (exp_in == 0 || exp_in > 100u * 365 * 86400) {
		unauthorized(st, a->idx);
		return;
	}
	if (f->disable_id_token_set_cookie)
		ans.id_len = 0;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t now = ts.tv_sec > 0 ? (uint64_t)ts.tv_sec : 0;
	char expires[24], exp_s[24], id_s[24];
	snprintf(expires, sizeof(expires), "%llu", (unsigned long long)(now + exp_in));
	snprintf(exp_s, sizeof(exp_s), "%llu", (unsigned long long)exp_in);
	snprintf(id_s, sizeof(id_s), "%s", exp_s);
	if (ans.id_len) {
		uint64_t e = http_oauth2_jwt_exp(ans.id, ans.id_len);
		if (e)
			snprintf(id_s, sizeof(id_s), "%llu",
				 (unsigned long long)(e > now ? e - now : 0));
	}
	const struct arn_h1_slice *host = &st->req.m.authority;
	const char *parts[5] = {host->p, expires, ans.access ? ans.access : "",
				ans.id_len ? ans.id : "", ans.refresh ? ans.refresh : ""};
	size_t lens[5] = {host->len, strlen(expires), ans.access_len, ans.id_len, ans.refresh_len};
	char mac[45];
	http_oauth2_hmac((const uint8_t *)b + OFF_KEY, a->key_len, parts, lens, mac);
	/* the cookies, after the decoded tokens */
	char *o = dec + dcap;
	size_t cap = HTTP_BIG_SCRATCH - OFF_OUT - dcap, at = 0;
	struct arn_h1_edit e[6];
	unsigned ne = 0;
	const char *cn[5] = {f->ck_hmac, f->ck_expires, f->ck_bearer, f->ck_id, f->ck_refresh};
	const uint8_t cl[5] = {f->ck_hmac_len, f->ck_expires_len, f->ck_bearer_len, f->ck_id_len,
			       f->ck_refresh_len};
	const char *cv[5] = {mac, expires, parts[2], parts[3], parts[4]};
	const size_t cvl[5] = {strlen(mac), lens[1], lens[2], lens[3], lens[4]};
	const char *age[5] = {exp_s, exp_s, exp_s, id_s, exp_s};
	for (int k = 0; k < 5; k++) {
		if (k >= 2 && !cvl[k])
			continue;
		int w = snprintf(o + at, cap - at, "%.*s=%.*s" COOKIE_TAIL, (int)cl[k], cn[k],
				 (int)cvl[k], cv[k], age[k]);
		e[ne++] = set_cookie(o + at, (size_t)w);
		at += (size_t)w;
	}
	e[ne++] = (struct arn_h1_edit){.name = "location",
				       .name_len = 8,
				       .value = b + OFF_URL,
				       .value_len = a->url_len,
				       .op = ARN_H1_EDIT_SET};
	oa_count(st, a->idx, ARN_OAUTH2_oauth_success);
	http_local_reply(st, 302, NULL, 0, 0, "oauth.logged_in", e, ne);
}

/* Has the stream moved on without the exchange (a timeout's reply, a reset)? */
static bool oa_orphan(const struct http_oauth2 *a)
{
	return !a->st || (a->st->state & HTTP_S_LOCAL) || oa_at(a->st) != a;
}

static void oa_head(struct http_subreq *sr, const struct arn_h1_msg *m)
{
	struct http_oauth2 *a = OWNER(sr, struct http_oauth2, sr);
	a->status = m->status;
}

static void oa_body(struct http_subreq *sr, const char *data, size_t len)
{
	struct http_oauth2 *a = OWNER(sr, struct http_oauth2, sr);
	if (a->status != 200 || a->overflow)
		return;
	if (len > HTTP_OAUTH2_ANSWER_MAX - a->alen) {
		a->overflow = true;
		return;
	}
	memcpy(a->big + a->alen, data, len);
	a->alen += (uint32_t)len;
}

static void oa_end(struct http_subreq *sr)
{
	struct http_oauth2 *a = OWNER(sr, struct http_oauth2, sr);
	if (oa_orphan(a))
		return;
	struct http_conn *hc = a->st->hc;
	oa_done(a);
	http_conn_run(hc);
}

static void oa_failed(struct http_subreq *sr, const char *why)
{
	struct http_oauth2 *a = OWNER(sr, struct http_oauth2, sr);
	if (oa_orphan(a))
		return;
	ARN_DEBUG(HTTP, "oauth2: token request failed: %s", why);
	struct http_conn *hc = a->st->hc;
	unauthorized(a->st, a->idx);
	http_conn_run(hc);
}

static const struct http_subreq_ops oa_ops = {
    .on_head = oa_head,
    .on_body = oa_body,
    .on_end = oa_end,
    .on_failed = oa_failed,
};

/* The callback: Envoy's validateOAuthCallback, then the token request. */
static bool callback(struct http_stream *st, size_t i, const struct arn_cfg_oauth2 *f,
		     const struct arn_cfg_secret *tok, const struct arn_cfg_secret *hm)
{
	struct http_conn *hc = st->hc;
	struct http_worker *w = hc->w;
	const struct arn_h1_msg *m = &st->req.m;
	struct http_ctxpool *pool = http_ctxpools_of(&pools, w->idx);
	struct http_oauth2 *a = pool ? http_ctxpool_get(pool) : NULL;
	char *big = a ? http_big_get(w) : NULL;
	if (!big) {
		if (a)
			http_ctxpool_put(pool, a);
		oa_count(st, i, ARN_OAUTH2_oauth_overflow);
		unauthorized(st, i);
		return true;
	}
	*a = (struct http_oauth2){.st = st, .cfg = f, .big = big, .idx = (uint8_t)i};
	st->oauth2 = (uint16_t)http_ctxpool_id(pool, a);
	size_t pl = path_only(st);
	const char *q = pl < m->path.len && m->path.p[pl] == '?' ? m->path.p + pl + 1 : "";
	size_t ql = pl < m->path.len && m->path.p[pl] == '?' ? m->path.len - pl - 1 : 0;
	/* a fragment is not sent; a query ends the path as sent */
	const char *code, *url, *nonce;
	size_t cl, ul, nl, ckl = 0;
	/* the decoded state goes where the reply will be (unused yet) */
	char *tmp = big + OFF_OUT;
	int rc = ql <= URL_MAX ? http_oauth2_parse_callback(q, ql, tmp, 2 * URL_MAX, &code, &cl,
							    &url, &ul, &nonce, &nl)
			       : -EINVAL;
	const char *ck =
	    rc == 0 ? http_oauth2_cookie(st, NONCE_COOKIE, sizeof(NONCE_COOKIE) - 1, &ckl) : NULL;
	/* Envoy: the nonce cookie equals the state's nonce (CSRF) */
	if (rc < 0 || !ck || ckl != nl || memcmp(ck, nonce, nl) != 0 || ul > URL_MAX || cl > 2048) {
		unauthorized(st, i);
		return true;
	}
	memcpy(big + OFF_URL, url, ul);
	a->url_len = (uint32_t)ul;
	memcpy(big + OFF_KEY, hm->generic, hm->generic_len);
	a->key_len = (uint32_t)hm->generic_len;
	/* the body: Envoy's templates; the secret and client_id encoded */
	char *body = big + OFF_BODY;
	size_t bl = 0;
	char ru[4096];
	size_t rl = redirect_uri(st, f, ru, sizeof(ru));
	if (3 * (rl + f->client_id_len + tok->generic_len) + cl + 128 > BODY_MAX / 2) {
		unauthorized(st, i);
		return true;
	}
	bl += (size_t)snprintf(body, BODY_MAX, "grant_type=authorization_code&code=%.*s", (int)cl,
			       code);
	if (!f->basic_auth) {
		memcpy(body + bl, "&client_id=", 11);
		bl += 11;
		bl += form_encode(f->client_id, f->client_id_len, body + bl);
		memcpy(body + bl, "&client_secret=", 15);
		bl += 15;
		bl += form_encode((const char *)tok->generic, tok->generic_len, body + bl);
	}
	memcpy(body + bl, "&redirect_uri=", 14);
	bl += 14;
	bl += form_encode(ru, rl, body + bl);
	unsigned n = 0;
	a->h[n++] = (struct http_subreq_header){"content-type", "application/x-www-form-urlencoded",
						12, 33};
	a->h[n++] = (struct http_subreq_header){"accept", "application/json", 6, 16};
	if (f->basic_auth) {
		/* "Basic " base64(client_id ":" secret), after the body */
		char *raw = body + bl + 1;
		size_t rawl = 0;
		memcpy(raw, f->client_id, f->client_id_len);
		rawl += f->client_id_len;
		raw[rawl++] = ':';
		memcpy(raw + rawl, tok->generic, tok->generic_len);
		rawl += tok->generic_len;
		char *hv = raw + rawl;
		memcpy(hv, "Basic ", 6);
		int k =
		    EVP_EncodeBlock((unsigned char *)hv + 6, (const unsigned char *)raw, (int)rawl);
		a->h[n++] = (struct http_subreq_header){"authorization", hv, 13, 6 + (size_t)k};
	}
	a->sr.host = f->token_host;
	a->sr.host_len = f->token_host_len;
	const struct arn_cfg_gen *g = w->gen_slot ? arn_config_gen_at(w->gen_slot) : NULL;
	rc = http_subreq_start(&a->sr, hc, g, &f->cluster, f->token_path, f->token_path_len, a->h,
			       n, body, bl, f->timeout_ms, &oa_ops, a);
	if (rc != 0) {
		if (rc == -EBUSY)
			oa_count(st, i, ARN_OAUTH2_oauth_overflow);
		unauthorized(st, i);
	}
	return true;
}

/* ---- the filter ---------------------------------------------------------------------- */

static bool any_match(const struct arn_cfg_header_match *m, size_t n,
		      const struct arn_cfg_request *req)
{
	for (size_t k = 0; k < n; k++)
		if (arn_cfg_headers_match(&m[k], 1, req))
			return true;
	return false;
}

bool http_oauth2_step(struct http_stream *st, size_t i, const struct arn_cfg_oauth2 *f,
		      const struct arn_cfg_route_match *mt, const struct arn_cfg_request *req)
{
	(void)mt;
	if (f->inert || st->oauth2)
		return false;
	if (any_match(f->pass_through, f->n_pass_through, req)) {
		oa_count(st, i, ARN_OAUTH2_oauth_passthrough);
		return false;
	}
	const struct arn_h1_msg *m = &st->req.m;
	size_t pl = path_only(st);
	if (arn_cfg_str_match(&f->signout_path, m->path.p, pl)) {
		sign_out(st, f);
		return true;
	}
	struct http_worker *w = st->hc->w;
	const struct arn_cfg_gen *g = w->gen_slot ? arn_config_gen_at(w->gen_slot) : NULL;
	const struct arn_cfg_secret *tok = g ? arn_cfg_secret_find(g, &f->token_secret) : NULL;
	const struct arn_cfg_secret *hm = g ? arn_cfg_secret_find(g, &f->hmac_secret) : NULL;
	if (!tok || !hm || tok->kind != ARN_CFG_SECRET_GENERIC ||
	    hm->kind != ARN_CFG_SECRET_GENERIC) {
		/* Envoy's listener waits for its secrets (a warming
		 * dependency here too); one of another kind cannot serve */
		http_local_reply(st, 503, NULL, 0, 0, "oauth2_secret_missing", NULL, 0);
		return true;
	}
	/* canSkipOAuth: the HMAC of the cookies, and OauthExpires ahead */
	size_t el = 0, tl = 0, il = 0, rl = 0, hl = 0;
	const char *ex = http_oauth2_cookie(st, f->ck_expires, f->ck_expires_len, &el);
	const char *tk = http_oauth2_cookie(st, f->ck_bearer, f->ck_bearer_len, &tl);
	const char *id = http_oauth2_cookie(st, f->ck_id, f->ck_id_len, &il);
	const char *rf = http_oauth2_cookie(st, f->ck_refresh, f->ck_refresh_len, &rl);
	const char *hc = http_oauth2_cookie(st, f->ck_hmac, f->ck_hmac_len, &hl);
	bool valid = false;
	if (hc && (hl == 44 || hl == 88)) {
		const char *parts[5] = {m->authority.p, ex ? ex : "", tk ? tk : "", id ? id : "",
					rf ? rf : ""};
		size_t lens[5] = {m->authority.len, el, tl, il, rl};
		char mac[92];
		if (hl == 44)
			http_oauth2_hmac(hm->generic, hm->generic_len, parts, lens, mac);
		else
			hmac_hex_b64(hm->generic, hm->generic_len, parts, lens, mac);
		if (CRYPTO_memcmp(mac, hc, hl) == 0 && el && el <= 20) {
			uint64_t e = 0;
			bool digits = true;
			for (size_t k = 0; k < el; k++) {
				if (ex[k] < '0' || ex[k] > '9') {
					digits = false;
					break;
				}
				e = e * 10 + (uint64_t)(ex[k] - '0');
			}
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			valid = digits && el < 20 && e > (uint64_t)ts.tv_sec;
		}
	}
	bool on_callback = arn_cfg_str_match(&f->redirect_path, m->path.p, pl);
	if (valid) {
		oa_count(st, i, ARN_OAUTH2_oauth_success);
		if (on_callback) {
			/* logged in already: back to the state's URL (Envoy's
			 * REDIRECT_RACE), 401 if it is the callback again */
			char *b = http_big_get(w);
			const char *q = pl < m->path.len ? m->path.p + pl + 1 : "";
			size_t ql = pl < m->path.len ? m->path.len - pl - 1 : 0;
			const char *code, *url, *nonce;
			size_t cl, ul, nl, ckl = 0;
			int rc = b && ql <= URL_MAX
				     ? http_oauth2_parse_callback(q, ql, b, 2 * URL_MAX, &code, &cl,
								  &url, &ul, &nonce, &nl)
				     : -EINVAL;
			const char *ck = rc == 0
					     ? http_oauth2_cookie(st, NONCE_COOKIE,
								  sizeof(NONCE_COOKIE) - 1, &ckl)
					     : NULL;
			size_t up = 0;
			if (rc == 0) {
				/* the URL's path, for the matcher */
				size_t s0 = (size_t)(strstr(url, "://") - url) + 3;
				while (s0 < ul && url[s0] != '/' && url[s0] != '?')
					s0++;
				up = s0;
			}
			size_t upl = up;
			while (rc == 0 && upl < ul && url[upl] != '?' && url[upl] != '#')
				upl++;
			if (rc < 0 || !ck || ckl != nl || memcmp(ck, nonce, nl) != 0 ||
			    arn_cfg_str_match(&f->redirect_path, url + up, upl - up)) {
				if (b)
					http_big_put(w, b);
				unauthorized(st, i);
				return true;
			}
			struct arn_h1_edit e = {.name = "location",
						.name_len = 8,
						.value = url,
						.value_len = (uint32_t)ul,
						.op = ARN_H1_EDIT_SET};
			http_local_reply(st, 302, NULL, 0, 0, "oauth.race_redirect", &e, 1);
			http_big_put(w, b);
			return true;
		}
		if (f->forward_bearer_token && tl) {
			char *t = http_st_text(st, 7 + tl);
			struct arn_h1_edit e = {.name = "authorization",
						.name_len = 13,
						.value = t,
						.value_len = (uint32_t)(7 + tl),
						.op = ARN_H1_EDIT_SET};
			if (t) {
				memcpy(t, "Bearer ", 7);
				memcpy(t + 7, tk, tl);
			}
			if (!t || http_req_edits_keep(st, &e, 1) < 0) {
				HTTP_INC(st->hc, rq_edit_overflow);
				http_local_reply(st, 500, NULL, 0, 0, "header_edits_overflow", NULL,
						 0);
				return true;
			}
			return false;
		}
	}
	if (!f->preserve_authorization_header && !(valid && f->forward_bearer_token && tl)) {
		/* Envoy removes the client's Authorization (it cannot be
		 * validated) before anything else */
		struct arn_h1_edit e = {
		    .name = "authorization", .name_len = 13, .op = ARN_H1_EDIT_REMOVE};
		if (arn_h1_find(m, "authorization", 13, 0) >= 0 &&
		    http_req_edits_keep(st, &e, 1) < 0) {
			HTTP_INC(st->hc, rq_edit_overflow);
			http_local_reply(st, 500, NULL, 0, 0, "header_edits_overflow", NULL, 0);
			return true;
		}
	}
	if (valid)
		return false;
	if (!on_callback) {
		if (any_match(f->deny_redirect, f->n_deny_redirect, req)) {
			unauthorized(st, i);
			return true;
		}
		char *b = http_big_get(w);
		if (!b) {
			oa_count(st, i, ARN_OAUTH2_oauth_overflow);
			unauthorized(st, i);
			return true;
		}
		to_server(st, i, f, b);
		http_big_put(w, b);
		return true;
	}
	return callback(st, i, f, tok, hm);
}

void http_oauth2_stream_end(struct http_stream *st)
{
	struct http_oauth2 *a = oa_at(st);
	if (!a)
		return;
	http_subreq_cancel(&a->sr);
	st->oauth2 = 0;
	oa_put(st->hc->w, a);
}
