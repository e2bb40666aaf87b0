/*
 * TLS to the control plane, the parts that are not gRPC: the SAN check with
 * Envoy's meaning (DefaultCertValidator), and deep copies of struct
 * arn_xds_tls whose key material is wiped when freed.
 *
 * The SAN check runs on a gRPC thread (the custom verifier of xds_grpc.c);
 * it only reads its arguments.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "arn_sb.h"
#include "xds_int.h"

static bool eq_n(const char *a, const char *b, size_t n, bool nocase)
{
	return nocase ? strncasecmp(a, b, n) == 0 : memcmp(a, b, n) == 0;
}

static bool contains(const char *hay, const char *needle, bool nocase)
{
	size_t hl = strlen(hay), nl = strlen(needle);
	for (size_t i = 0; i + nl <= hl; i++)
		if (eq_n(hay + i, needle, nl, nocase))
			return true;
	return false;
}

/* StringMatcher on one value. */
static bool string_match(const struct arn_xds_san_matcher *m, const char *v)
{
	size_t vl = strlen(v), ml = strlen(m->value);
	switch (m->how) {
	case ARN_XDS_MATCH_EXACT:
		return vl == ml && eq_n(v, m->value, vl, m->ignore_case);
	case ARN_XDS_MATCH_PREFIX:
		return vl >= ml && eq_n(v, m->value, ml, m->ignore_case);
	case ARN_XDS_MATCH_SUFFIX:
		return vl >= ml && eq_n(v + vl - ml, m->value, ml, m->ignore_case);
	case ARN_XDS_MATCH_CONTAINS:
		return contains(v, m->value, m->ignore_case);
	}
	return false;
}

/*
 * Envoy's dnsNameMatch: a certificate name "*.example.com" covers exactly
 * one label under example.com; DNS names compare without case.
 */
static bool dns_exact(const char *want, const char *san)
{
	size_t wl = strlen(want), sl = strlen(san);
	if (wl == sl && strcasecmp(want, san) == 0)
		return true;
	if (sl > 1 && san[0] == '*' && san[1] == '.' && wl > sl - 1) {
		size_t off = wl - (sl - 1);
		return memchr(want, '.', off) == NULL && strcasecmp(want + off, san + 1) == 0;
	}
	return false;
}

static bool one_type(const struct arn_xds_san_matcher *m, enum arn_xds_san_type t,
		     const char *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (v[i] == NULL)
			continue;
		if (t == ARN_XDS_SAN_DNS && m->how == ARN_XDS_MATCH_EXACT
			? dns_exact(m->value, v[i])
			: string_match(m, v[i]))
			return true;
	}
	return false;
}

bool arn_xds_tls_san_ok(const struct arn_xds_tls *tls, const struct arn_xds_peer_sans *p)
{
	if (tls->n_san == 0)
		return true;
	for (size_t i = 0; i < tls->n_san; i++) {
		const struct arn_xds_san_matcher *m = &tls->san[i];
		bool any = m->type == ARN_XDS_SAN_ANY;
		if ((any || m->type == ARN_XDS_SAN_DNS) &&
		    one_type(m, ARN_XDS_SAN_DNS, p->dns, p->n_dns))
			return true;
		if ((any || m->type == ARN_XDS_SAN_URI) &&
		    one_type(m, ARN_XDS_SAN_URI, p->uri, p->n_uri))
			return true;
		if ((any || m->type == ARN_XDS_SAN_EMAIL) &&
		    one_type(m, ARN_XDS_SAN_EMAIL, p->email, p->n_email))
			return true;
		if ((any || m->type == ARN_XDS_SAN_IP) &&
		    one_type(m, ARN_XDS_SAN_IP, p->ip, p->n_ip))
			return true;
	}
	return false;
}

static const char *type_name(enum arn_xds_san_type t)
{
	switch (t) {
	case ARN_XDS_SAN_ANY:
		return "any";
	case ARN_XDS_SAN_EMAIL:
		return "EMAIL";
	case ARN_XDS_SAN_DNS:
		return "DNS";
	case ARN_XDS_SAN_URI:
		return "URI";
	case ARN_XDS_SAN_IP:
		return "IP";
	}
	return "?";
}

static const char *how_name(enum arn_xds_match h)
{
	switch (h) {
	case ARN_XDS_MATCH_EXACT:
		return "exact";
	case ARN_XDS_MATCH_PREFIX:
		return "prefix";
	case ARN_XDS_MATCH_SUFFIX:
		return "suffix";
	case ARN_XDS_MATCH_CONTAINS:
		return "contains";
	}
	return "?";
}

static void put_list(struct arn_sb *o, const char *type, const char *const *v, size_t n,
		     bool *first)
{
	for (size_t i = 0; i < n; i++) {
		arn_sb_printf(o, "%s%s:%s", *first ? "" : ", ", type, v[i] ? v[i] : "");
		*first = false;
	}
}

void xds_tls_san_mismatch(const struct arn_xds_tls *tls, const struct arn_xds_peer_sans *p,
			  struct arn_sb *o)
{
	arn_sb_puts(o, "the control plane's certificate (SANs: ");
	bool first = true;
	put_list(o, "DNS", p->dns, p->n_dns, &first);
	put_list(o, "URI", p->uri, p->n_uri, &first);
	put_list(o, "EMAIL", p->email, p->n_email, &first);
	put_list(o, "IP", p->ip, p->n_ip, &first);
	if (first)
		arn_sb_puts(o, "none");
	arn_sb_puts(o, ") matches none of the SAN matchers (");
	for (size_t i = 0; i < tls->n_san; i++)
		arn_sb_printf(o, "%s%s %s '%s'%s", i ? ", " : "", type_name(tls->san[i].type),
			      how_name(tls->san[i].how), tls->san[i].value,
			      tls->san[i].ignore_case ? " ignore_case" : "");
	arn_sb_puts(o, ") of the xDS cluster's validation context");
}

const char *xds_tls_kind(const struct arn_xds_tls *t)
{
	return t == NULL ? "plaintext" : t->cert_pem ? "mTLS" : "TLS";
}

static char *dup_or_null(const char *s, bool *oom)
{
	if (s == NULL)
		return NULL;
	char *d = strdup(s);
	if (d == NULL)
		*oom = true;
	return d;
}

static void wipe_free(const char *s)
{
	if (s == NULL)
		return;
	explicit_bzero((char *)s, strlen(s));
	free((char *)s);
}

struct arn_xds_tls *xds_tls_dup(const struct arn_xds_tls *in)
{
	if (in == NULL)
		return NULL;
	struct arn_xds_tls *t = calloc(1, sizeof(*t));
	if (t == NULL)
		return NULL;
	bool oom = false;
	t->ca_pem = dup_or_null(in->ca_pem, &oom);
	t->cert_pem = dup_or_null(in->cert_pem, &oom);
	t->key_pem = dup_or_null(in->key_pem, &oom);
	t->sni = dup_or_null(in->sni, &oom);
	if (in->n_san) {
		struct arn_xds_san_matcher *m = calloc(in->n_san, sizeof(*m));
		t->san = m;
		if (m == NULL)
			oom = true;
		for (size_t i = 0; m && i < in->n_san; i++) {
			m[i] = in->san[i];
			m[i].value = dup_or_null(in->san[i].value ? in->san[i].value : "", &oom);
			t->n_san++;
		}
	}
	if (oom) {
		xds_tls_free(t);
		return NULL;
	}
	return t;
}

void xds_tls_free(struct arn_xds_tls *t)
{
	if (t == NULL)
		return;
	wipe_free(t->ca_pem);
	wipe_free(t->cert_pem);
	wipe_free(t->key_pem);
	wipe_free(t->sni);
	for (size_t i = 0; i < t->n_san; i++)
		free((char *)t->san[i].value);
	free((void *)t->san);
	free(t);
}
