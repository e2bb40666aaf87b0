/*
 * Peer certificate checks: OpenSSL verifies the chain against the
 * context's trusted CAs (and CRLs); this callback records why a chain was
 * refused, for the ssl.fail_verify_* counters, and adds Envoy's
 * match_subject_alt_names check on the leaf.
 *
 * SAN matching as Envoy's default validator: a certificate passes when any
 * of its subject alt names (DNS, URI, e-mail, IP address as text) matches
 * any matcher. For DNS names an exact matcher also accepts a wildcard SAN
 * covering it ("*.example.com" covers "a.example.com", one label), as
 * Envoy's dnsNameMatch does. A matcher of match_typed_subject_alt_names
 * is tried only on SANs of its type (its san_type), as Envoy's
 * DefaultCertValidator does: a DNS matcher for "api.example.com" is not
 * satisfied by an e-mail or URI SAN with those bytes; a matcher of
 * match_subject_alt_names (san_type 0) is tried on every type.
 *
 * A SAN mismatch is reported to OpenSSL as X509_V_ERR_HOSTNAME_MISMATCH,
 * which it answers with a bad_certificate alert, the alert Envoy sends.
 */
#include <arpa/inet.h>
#include <string.h>
#include <strings.h>

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "arn_config_model.h"
#include "tls_int.h"

/* "*.example.com" (a certificate's SAN) covers @p name ("a.example.com"). */
static bool dns_wildcard_covers(const char *san, size_t sl, const char *name, size_t nl)
{
	if (sl < 3 || san[0] != '*' || san[1] != '.')
		return false;
	const char *dot = memchr(name, '.', nl);
	if (!dot || dot == name)
		return false;
	size_t rest = nl - (size_t)(dot - name);
	return rest == sl - 1 && strncasecmp(dot, san + 1, rest) == 0;
}

static bool one_san(const struct arn_cfg_str_match *m, size_t n, const char *v, size_t vl,
		    uint8_t type)
{
	bool dns = type == ARN_CFG_SAN_DNS;
	for (size_t i = 0; i < n; i++) {
		if (m[i].san_type && m[i].san_type != type)
			continue;
		if (arn_cfg_str_match(&m[i], v, vl))
			return true;
		if (dns && m[i].kind == ARN_CFG_STR_EXACT &&
		    dns_wildcard_covers(v, vl, m[i].s, m[i].len))
			return true;
	}
	return false;
}

bool tls_san_match(const struct arn_cfg_str_match *m, size_t n, X509 *leaf)
{
	GENERAL_NAMES *gens = X509_get_ext_d2i(leaf, NID_subject_alt_name, NULL, NULL);
	bool ok = false;
	for (int i = 0; gens && !ok && i < sk_GENERAL_NAME_num(gens); i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
		const ASN1_STRING *s = NULL;
		uint8_t type;
		switch (g->type) {
		case GEN_DNS:
			s = g->d.dNSName;
			type = ARN_CFG_SAN_DNS;
			break;
		case GEN_URI:
			s = g->d.uniformResourceIdentifier;
			type = ARN_CFG_SAN_URI;
			break;
		case GEN_EMAIL:
			s = g->d.rfc822Name;
			type = ARN_CFG_SAN_EMAIL;
			break;
		case GEN_IPADD: {
			char txt[INET6_ADDRSTRLEN];
			int l = ASN1_STRING_length(g->d.iPAddress);
			const unsigned char *d = ASN1_STRING_get0_data(g->d.iPAddress);
			if ((l == 4 && inet_ntop(AF_INET, d, txt, sizeof(txt))) ||
			    (l == 16 && inet_ntop(AF_INET6, d, txt, sizeof(txt))))
				ok = one_san(m, n, txt, strlen(txt), ARN_CFG_SAN_IP);
			continue;
		}
		default:
			continue;
		}
		int l = ASN1_STRING_length(s);
		const char *d = (const char *)ASN1_STRING_get0_data(s);
		/* a NUL inside a name is an attack on C string handling */
		if (l > 0 && !memchr(d, 0, (size_t)l))
			ok = one_san(m, n, d, (size_t)l, type);
	}
	GENERAL_NAMES_free(gens);
	return ok;
}

int tls_verify_cb(int ok, X509_STORE_CTX *xs)
{
	SSL *ssl = X509_STORE_CTX_get_ex_data(xs, SSL_get_ex_data_X509_STORE_CTX_idx());
	struct arn_tls_conn *c = ssl ? SSL_get_app_data(ssl) : NULL;
	if (!c)
		return ok;
	if (!ok) {
		if (c->verify_fail == ARN_TLS_VF_NONE) {
			c->verify_fail = ARN_TLS_VF_ERROR;
			c->verify_err = X509_STORE_CTX_get_error(xs);
		}
		return 0;
	}
	/* max_verify_depth as Envoy counts it (OpenSSL's own limit, one
	 * less, lets a trust anchor one deeper through: see tls_ctx.c) */
	if (c->ctx->max_depth >= 0 && X509_STORE_CTX_get_error_depth(xs) > c->ctx->max_depth) {
		X509_STORE_CTX_set_error(xs, X509_V_ERR_CERT_CHAIN_TOO_LONG);
		if (c->verify_fail == ARN_TLS_VF_NONE) {
			c->verify_fail = ARN_TLS_VF_ERROR;
			c->verify_err = X509_V_ERR_CERT_CHAIN_TOO_LONG;
		}
		return 0;
	}
	if (X509_STORE_CTX_get_error_depth(xs) == 0 && c->ctx->n_san &&
	    !tls_san_match(c->ctx->san, c->ctx->n_san, X509_STORE_CTX_get_current_cert(xs))) {
		X509_STORE_CTX_set_error(xs, X509_V_ERR_HOSTNAME_MISMATCH);
		c->verify_fail = ARN_TLS_VF_SAN;
		c->verify_err = X509_V_ERR_HOSTNAME_MISMATCH;
		return 0;
	}
	return 1;
}
