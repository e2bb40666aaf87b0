/*
 * The current client's x-forwarded-client-cert element from its TLS
 * connection (Envoy's Ssl::ConnectionInfo accessors): the parts read with
 * OpenSSL, the element made by http_xfcc_value (http_xfcc.c). Only
 * APPEND_FORWARD and SANITIZE_SET on a connection whose client presented
 * a certificate come here, once a request (the router's edits_make).
 */
#include <errno.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "arn_tls.h"
#include "http_int.h"
#include "http_xfcc_tls.h"

#define NAMES_MAX 32	   /* SANs of one kind in one certificate */
#define NAMES_BYTES 2048   /* their bytes with a NUL each */
#define SUBJECT_BYTES 1024 /* an RFC 2253 subject */

struct names {
	const char *v[NAMES_MAX];
	size_t n;
	char buf[NAMES_BYTES];
	size_t used;
};

/* @p x's SANs of @p type (GEN_URI, GEN_DNS) NUL-terminated into @p out.
 * @return 0, or -ENOSPC past the bounds (the element is not made from a
 * part of them). */
static int sans(const X509 *x, int type, struct names *out)
{
	out->n = 0;
	out->used = 0;
	if (!x)
		return 0;
	GENERAL_NAMES *gn = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	int r = 0;
	for (int i = 0; gn && i < sk_GENERAL_NAME_num(gn); i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(gn, i);
		if (g->type != type)
			continue;
		const ASN1_IA5STRING *s =
		    type == GEN_URI ? g->d.uniformResourceIdentifier : g->d.dNSName;
		size_t k = (size_t)ASN1_STRING_length(s);
		if (out->n == NAMES_MAX || out->used + k + 1 > NAMES_BYTES) {
			r = -ENOSPC;
			break;
		}
		char *d = out->buf + out->used;
		memcpy(d, ASN1_STRING_get0_data(s), k);
		d[k] = 0;
		out->v[out->n++] = d;
		out->used += k + 1;
	}
	GENERAL_NAMES_free(gn);
	ERR_clear_error();
	return r;
}

/* PEM of the peer's leaf, and with @p chain of what it sent after it,
 * into @p m. @return 0 or -ENOMEM. */
static int pem(const struct arn_tls_conn *t, bool chain, BIO *m)
{
	X509 *leaf = (X509 *)arn_tls_peer_cert(t);
	if (!leaf || PEM_write_bio_X509(m, leaf) != 1)
		return -ENOMEM;
	const STACK_OF(X509) *sk = (const STACK_OF(X509) *)arn_tls_peer_chain(t);
	for (int i = 0; chain && sk && i < sk_X509_num(sk); i++) {
		X509 *x = sk_X509_value(sk, i);
		if (X509_cmp(x, leaf) == 0) /* a client's OpenSSL keeps it in */
			continue;
		if (PEM_write_bio_X509(m, x) != 1)
			return -ENOMEM;
	}
	return 0;
}

int http_xfcc_tls_value(const struct arn_tls_conn *t, unsigned details, char *out, size_t cap)
{
	struct names by, uri, dns;
	char hash[65], subject[SUBJECT_BYTES];
	struct http_xfcc_src s = {0};
	int r = sans(arn_tls_local_cert(t), GEN_URI, &by);
	if (r)
		return r;
	s.by = by.v;
	s.n_by = by.n;
	if (arn_tls_peer_fingerprint(t, hash, sizeof(hash)) == 64) {
		hash[64] = 0;
		s.hash = hash;
	}
	if (details & ARN_CFG_FCC_D_SUBJECT) {
		int k = arn_tls_peer_subject(t, subject, sizeof(subject));
		if (k == -ENOSPC)
			return k;
		s.subject = k >= 0 ? subject : "";
	}
	if ((details & ARN_CFG_FCC_D_URI) && (r = sans(arn_tls_peer_cert(t), GEN_URI, &uri)) == 0) {
		s.uri = uri.v;
		s.n_uri = uri.n;
	}
	if (!r && (details & ARN_CFG_FCC_D_DNS) &&
	    (r = sans(arn_tls_peer_cert(t), GEN_DNS, &dns)) == 0) {
		s.dns = dns.v;
		s.n_dns = dns.n;
	}
	if (r)
		return r;
	BIO *cm = NULL, *chm = NULL;
	if (details & ARN_CFG_FCC_D_CERT) {
		char *p;
		cm = BIO_new(BIO_s_mem());
		if (!cm || pem(t, false, cm)) {
			r = -ENOMEM;
			goto out;
		}
		long n = BIO_get_mem_data(cm, &p);
		s.cert = p;
		s.cert_len = n > 0 ? (size_t)n : 0;
	}
	if (details & ARN_CFG_FCC_D_CHAIN) {
		char *p;
		chm = BIO_new(BIO_s_mem());
		if (!chm || pem(t, true, chm)) {
			r = -ENOMEM;
			goto out;
		}
		long n = BIO_get_mem_data(chm, &p);
		s.chain = p;
		s.chain_len = n > 0 ? (size_t)n : 0;
	}
	r = http_xfcc_value(&s, details, out, cap);
out:
	BIO_free(cm);
	BIO_free(chm);
	ERR_clear_error();
	return r;
}
