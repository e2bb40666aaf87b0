/*
 * envoy.filters.http.csrf (http_csrf.h), as Envoy's csrf_filter.cc:
 * isModifyMethod, sourceOriginValue (Origin, else Referer), targetOriginValue
 * (the Host as "<scheme>://<host>"), both through hostAndPort (Envoy's
 * Http::Utility::Url::initialize over http_parser_parse_url: the host and,
 * when written, ":port"); a missing source counts missing_source_origin
 * and is invalid, a source that is not the target and matches none of
 * additional_origins counts request_invalid; valid counts request_valid.
 * Stats http.<prefix>.csrf.*.
 */
#include <string.h>

#include "arn_config.h"
#include "arn_http_ratelimit.h"
#include "http_csrf.h"
#include "http_int.h"
#include "http_local.h"
#include "http_stream.h"
#include "http_worker.h"

/* a repeated Origin or Referer joined, at most this long (longer: the
 * joined value is not built and the request is refused as invalid) */
#define CSRF_JOIN_MAX 2048

static bool is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* http_parser's host characters (its IS_HOST_CHAR, with the IPv6
 * literal's ':' and hex inside brackets handled by the caller) */
static bool host_char(char c)
{
	return is_alpha(c) || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_' ||
	       c == '~';
}

const char *http_csrf_host_and_port(const char *v, size_t n, size_t *out_len)
{
	*out_len = n;
	size_t i = 0;
	while (i < n && is_alpha(v[i]))
		i++;
	if (i == 0 || n - i < 3 || memcmp(v + i, "://", 3) != 0)
		return v; /* not an absolute URL: the value itself */
	size_t a = i + 3, e = a;
	while (e < n && v[e] != '/' && v[e] != '?' && v[e] != '#')
		e++;
	/* userinfo: up to the last '@' of the authority */
	for (size_t k = e; k > a; k--)
		if (v[k - 1] == '@') {
			a = k;
			break;
		}
	size_t h = a, he;
	if (h < e && v[h] == '[') {
		/* an IPv6 literal: http_parser's host field is inside the
		 * brackets, the port after them */
		h++;
		he = h;
		while (he < e && v[he] != ']') {
			char c = v[he];
			if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
			      (c >= 'A' && c <= 'F') || c == ':' || c == '.'))
				return v;
			he++;
		}
		if (he == e || he == h)
			return v;
		he++; /* the ']' */
	} else {
		he = h;
		while (he < e && host_char(v[he]))
			he++;
		if (he == h)
			return v; /* no host */
	}
	if (he < e) {
		if (v[he] != ':')
			return v;
		size_t p = he + 1;
		if (p == e)
			return v;
		while (p < e && v[p] >= '0' && v[p] <= '9')
			p++;
		if (p != e)
			return v;
	}
	/* anything after the authority must be URL characters (http_parser
	 * refuses controls and spaces) */
	for (size_t k = e; k < n; k++)
		if ((unsigned char)v[k] <= ' ' || v[k] == 0x7f)
			return v;
	*out_len = e - h;
	return v + h;
}

/* Header @p name's value: the first line's, or every line's joined with
 * ',' into @p buf (Envoy's inline header); NULL without one (or empty),
 * and with *@p over set when the joined value does not fit. */
static const char *hdr_value(const struct arn_h1_msg *m, const char *name, size_t nl, char *buf,
			     size_t *len, bool *over)
{
	int i = arn_h1_find(m, name, nl, 0);
	if (i < 0)
		return NULL;
	int j = arn_h1_find(m, name, nl, i + 1);
	if (j < 0) {
		*len = m->hdrs[i].value_len;
		return *len ? m->hdrs[i].value : NULL;
	}
	size_t k = 0;
	for (; i >= 0; i = arn_h1_find(m, name, nl, i + 1)) {
		size_t vl = m->hdrs[i].value_len;
		if (k + (k ? 1 : 0) + vl > CSRF_JOIN_MAX) {
			*over = true;
			return NULL;
		}
		if (k)
			buf[k++] = ',';
		memcpy(buf + k, m->hdrs[i].value, vl);
		k += vl;
	}
	*len = k;
	return k ? buf : NULL;
}

/* A fraction's draw; none for 0 % and 100 % (the usual values: the
 * worker's random sequence is left to what needs it) */
static bool frac_hit(const struct arn_cfg_fraction *f, struct http_worker *w)
{
	if (!f->numerator)
		return false;
	if (f->numerator >= f->denominator)
		return true;
	return arn_fraction_hit(f, http_rand(w));
}

static void count(struct http_stream *st, size_t i, unsigned id)
{
	struct http_hcm_rt *hr = st->hc->hrt;
	struct arn_stats_scope *sc = hr && i < HTTP_MAX_FILTER_STATS ? hr->fstats[i] : NULL;
	if (sc)
		arn_stats_inc(sc, st->hc->w->slot, id);
}

bool http_csrf_step(struct http_stream *st, size_t i, const struct arn_cfg_csrf *f,
		    const struct arn_cfg_route_match *mt)
{
	const struct arn_cfg_hcm *h = st->hc->hcm;
	const char *name = h->http_filter_names ? h->http_filter_names[i] : NULL;
	const struct arn_cfg_csrf *pr =
	    mt && name
		? arn_cfg_per_filter_find(mt->vhost, mt->route, name, strlen(name), ARN_CFG_PF_CSRF)
		: NULL;
	const struct arn_cfg_csrf *p = pr ? pr : f;
	struct http_worker *w = st->hc->w;
	bool enabled = frac_hit(&p->enabled, w);
	bool shadow = frac_hit(&p->shadow, w);
	if (!enabled && !shadow)
		return false;
	const struct arn_h1_msg *m = &st->req.m;
	if (m->method != ARN_H1_M_POST && m->method != ARN_H1_M_PUT &&
	    m->method != ARN_H1_M_DELETE && m->method != ARN_H1_M_PATCH)
		return false;

	char buf[CSRF_JOIN_MAX];
	bool over = false;
	size_t rl = 0, sl = 0;
	const char *raw = hdr_value(m, "origin", 6, buf, &rl, &over);
	const char *src = raw ? http_csrf_host_and_port(raw, rl, &sl) : NULL;
	if (!over && (!src || sl == 0)) {
		raw = hdr_value(m, "referer", 7, buf, &rl, &over);
		src = raw ? http_csrf_host_and_port(raw, rl, &sl) : NULL;
	}
	bool valid = true;
	if (!src || sl == 0) {
		valid = false;
		src = "";
		sl = 0;
		if (!over)
			count(st, i, ARN_CSRF_missing_source_origin);
	}
	/* the target: "<scheme>://" the Host, through the same parse (a Host
	 * that does not parse is compared as "http://<Host>", as Envoy's) */
	bool ok = false;
	if (!over && m->authority.len) {
		char t[CSRF_JOIN_MAX + 8];
		size_t al = m->authority.len < CSRF_JOIN_MAX ? m->authority.len : CSRF_JOIN_MAX;
		memcpy(t, "http://", 7);
		memcpy(t + 7, m->authority.p, al);
		size_t tl = 0;
		const char *tgt = http_csrf_host_and_port(t, al + 7, &tl);
		ok = tl == sl && memcmp(tgt, src, sl) == 0;
	} else if (!over) {
		ok = sl == 0; /* Envoy: an empty target equals an empty source */
	}
	for (size_t k = 0; !ok && !over && k < p->n_origins; k++)
		ok = arn_cfg_str_match(&p->origins[k], src, sl);
	if (!ok) {
		valid = false;
		count(st, i, ARN_CSRF_request_invalid);
	}
	if (valid) {
		count(st, i, ARN_CSRF_request_valid);
		return false;
	}
	if (!enabled)
		return false; /* shadow mode: counted only */
	static const char body[] = "Invalid origin";
	http_local_reply(st, 403, body, sizeof(body) - 1, 0, "csrf_origin_mismatch", NULL, 0);
	return true;
}
