/*
 * A certificate as Envoy's admin /certs shows it (envoy.admin.v3.
 * CertificateDetails): path, serial number, subject alt names, days until
 * expiration, validity. Control lcore (the admin's).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <openssl/asn1.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "arn_json.h"
#include "arn_tls.h"

static struct arn_json *jstr(const char *s)
{
	return arn_json_new_string(s);
}

/* A Timestamp in proto3 JSON (RFC 3339, UTC). */
static struct arn_json *jtime(const ASN1_TIME *t)
{
	struct tm tm;
	char buf[32];
	if (!t || ASN1_TIME_to_tm(t, &tm) != 1)
		return NULL;
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return jstr(buf);
}

/* Envoy's getSerialNumberFromCertificate: lower-case hex. */
static struct arn_json *jserial(const X509 *x)
{
	BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
	char *hex = bn ? BN_bn2hex(bn) : NULL;
	BN_free(bn);
	if (!hex)
		return NULL;
	for (char *p = hex; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
	struct arn_json *j = jstr(hex);
	OPENSSL_free(hex);
	return j;
}

/* [{"dns": ...}, {"uri": ...}, {"ip_address": ...}], as Envoy's
 * SubjectAlternateName. */
static struct arn_json *jsans(const X509 *x)
{
	struct arn_json *a = arn_json_parse("[]", 2);
	if (!a)
		return NULL;
	GENERAL_NAMES *names = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	for (int i = 0; names && i < sk_GENERAL_NAME_num(names); i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(names, i);
		const char *kind = NULL;
		char buf[256];
		if (g->type == GEN_DNS || g->type == GEN_URI) {
			const ASN1_IA5STRING *s =
			    g->type == GEN_DNS ? g->d.dNSName : g->d.uniformResourceIdentifier;
			kind = g->type == GEN_DNS ? "dns" : "uri";
			snprintf(buf, sizeof(buf), "%.*s", ASN1_STRING_length(s),
				 (const char *)ASN1_STRING_get0_data(s));
		} else if (g->type == GEN_IPADD) {
			const unsigned char *ip = ASN1_STRING_get0_data(g->d.iPAddress);
			int n = ASN1_STRING_length(g->d.iPAddress);
			kind = "ip_address";
			if (n == 4) {
				snprintf(buf, sizeof(buf), "%u.%u.%u.%u", ip[0], ip[1], ip[2],
					 ip[3]);
			} else if (n == 16) {
				size_t o = 0;
				for (int k = 0; k < 16; k += 2)
					o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%x",
							      k ? ":" : "", ip[k] << 8 | ip[k + 1]);
			} else {
				continue;
			}
		}
		if (!kind)
			continue;
		struct arn_json *o = arn_json_parse("{}", 2);
		if (o && arn_json_set(o, kind, jstr(buf)) == 0)
			arn_json_push(a, o);
		else
			arn_json_free(o);
	}
	GENERAL_NAMES_free(names);
	return a;
}

struct arn_json *arn_tls_cert_details(const struct x509_st *x, const char *path, int64_t now_s)
{
	struct arn_json *o = arn_json_parse("{}", 2);
	if (!o)
		return NULL;
	arn_json_set(o, "path", jstr(path && *path ? path : "<inline>"));
	struct arn_json *sn = jserial(x);
	if (sn)
		arn_json_set(o, "serial_number", sn);
	struct arn_json *sans = jsans(x);
	if (sans)
		arn_json_set(o, "subject_alt_names", sans);
	/* whole days left, 0 once expired (Envoy's getDaysUntilExpiration);
	 * a uint64 is a string in proto3 JSON */
	int days = 0, secs = 0;
	ASN1_TIME *now = ASN1_TIME_set(NULL, (time_t)now_s);
	if (now && ASN1_TIME_diff(&days, &secs, now, X509_get0_notAfter(x)) == 1 &&
	    (days < 0 || secs < 0))
		days = 0;
	ASN1_TIME_free(now);
	char d[24];
	snprintf(d, sizeof(d), "%d", days);
	arn_json_set(o, "days_until_expiration", jstr(d));
	struct arn_json *t = jtime(X509_get0_notBefore(x));
	if (t)
		arn_json_set(o, "valid_from", t);
	t = jtime(X509_get0_notAfter(x));
	if (t)
		arn_json_set(o, "expiration_time", t);
	return o;
}

/* ---- the peer's certificate for access logs (%DOWNSTREAM_PEER_*%) ------------------------ */

static int put_str(char *buf, size_t len, const char *s, size_t n)
{
	if (n >= len)
		return -ENOSPC;
	memcpy(buf, s, n);
	buf[n] = 0;
	return (int)n;
}

int arn_tls_peer_issuer(const struct arn_tls_conn *c, char *buf, size_t len)
{
	const X509 *x = arn_tls_peer_cert(c);
	if (!x)
		return -ENOENT;
	BIO *m = BIO_new(BIO_s_mem());
	if (!m)
		return -ENOMEM;
	X509_NAME_print_ex(m, X509_get_issuer_name(x), 0, XN_FLAG_RFC2253);
	char *p;
	long n = BIO_get_mem_data(m, &p);
	int r = n >= 0 ? put_str(buf, len, p, (size_t)n) : -ENOMEM;
	BIO_free(m);
	ERR_clear_error();
	return r;
}

int arn_tls_peer_san_list(const struct arn_tls_conn *c, bool uri, char *buf, size_t cap,
			  size_t *off, size_t *len, size_t max)
{
	const X509 *x = arn_tls_peer_cert(c);
	if (!x)
		return -ENOENT;
	GENERAL_NAMES *names = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	size_t o = 0, n = 0;
	int r = 0;
	for (int i = 0; names && i < sk_GENERAL_NAME_num(names); i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(names, i);
		if (g->type != (uri ? GEN_URI : GEN_DNS))
			continue;
		const ASN1_IA5STRING *s = uri ? g->d.uniformResourceIdentifier : g->d.dNSName;
		size_t k = (size_t)ASN1_STRING_length(s);
		/* a name left out could be the one a DENY rule names: say so */
		if (n == max || o + k > cap) {
			r = -ENOSPC;
			break;
		}
		memcpy(buf + o, ASN1_STRING_get0_data(s), k);
		off[n] = o;
		len[n++] = k;
		o += k;
	}
	GENERAL_NAMES_free(names);
	ERR_clear_error();
	return r < 0 ? r : (int)n;
}

int arn_tls_peer_uri_san(const struct arn_tls_conn *c, char *buf, size_t len)
{
	const X509 *x = arn_tls_peer_cert(c);
	if (!x)
		return -ENOENT;
	GENERAL_NAMES *names = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	size_t o = 0;
	int r = 0;
	for (int i = 0; names && i < sk_GENERAL_NAME_num(names); i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(names, i);
		if (g->type != GEN_URI)
			continue;
		const ASN1_IA5STRING *s = g->d.uniformResourceIdentifier;
		size_t n = (size_t)ASN1_STRING_length(s);
		if (o + (o ? 1 : 0) + n >= len) {
			r = -ENOSPC;
			break;
		}
		if (o)
			buf[o++] = ',';
		memcpy(buf + o, ASN1_STRING_get0_data(s), n);
		o += n;
	}
	GENERAL_NAMES_free(names);
	ERR_clear_error();
	if (r < 0)
		return r;
	if (!o)
		return -ENOENT;
	buf[o] = 0;
	return (int)o;
}

int arn_tls_peer_serial(const struct arn_tls_conn *c, char *buf, size_t len)
{
	const X509 *x = arn_tls_peer_cert(c);
	if (!x)
		return -ENOENT;
	struct arn_json *j = jserial(x);
	int r = j && j->str ? put_str(buf, len, j->str, strlen(j->str)) : -ENOMEM;
	arn_json_free(j);
	return r;
}

int arn_tls_peer_validity(const struct arn_tls_conn *c, int64_t *start_s, int64_t *end_s)
{
	const X509 *x = arn_tls_peer_cert(c);
	if (!x)
		return -ENOENT;
	struct tm tm;
	if (ASN1_TIME_to_tm(X509_get0_notBefore(x), &tm) != 1)
		return -EINVAL;
	*start_s = (int64_t)timegm(&tm);
	if (ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm) != 1)
		return -EINVAL;
	*end_s = (int64_t)timegm(&tm);
	return 0;
}
