/*
 * Test certificates (tcert.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "tcert.h"

char *tcert_json_escape(const char *s)
{
	char *o = malloc(2 * strlen(s) + 1), *p = o;
	assert_non_null(o);
	for (; *s; s++) {
		if (*s == '\n') {
			*p++ = '\\';
			*p++ = 'n';
		} else {
			*p++ = *s;
		}
	}
	*p = 0;
	return o;
}

char *tcert_bio_str(BIO *b)
{
	char *data;
	long n = BIO_get_mem_data(b, &data);
	char *s = malloc((size_t)n + 1);
	assert_non_null(s);
	memcpy(s, data, (size_t)n);
	s[n] = 0;
	return s;
}

void tcert_make(struct tcert *c, const char *cn)
{
	tcert_make_ec(c, cn, "P-256");
}

void tcert_make_ec(struct tcert *c, const char *cn, const char *curve)
{
	EVP_PKEY *k = EVP_EC_gen(curve);
	assert_non_null(k);
	X509 *x = X509_new();
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
	X509_gmtime_adj(X509_getm_notBefore(x), 0);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	X509_set_pubkey(x, k);
	X509_NAME *nm = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(nm, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
	X509_set_issuer_name(x, nm);
	assert_true(X509_sign(x, k, EVP_sha256()) > 0);
	BIO *cb = BIO_new(BIO_s_mem()), *kb = BIO_new(BIO_s_mem());
	PEM_write_bio_X509(cb, x);
	PEM_write_bio_PrivateKey(kb, k, NULL, NULL, 0, NULL, NULL);
	c->cert_pem = tcert_bio_str(cb);
	c->key_pem = tcert_bio_str(kb);
	c->cert_json = tcert_json_escape(c->cert_pem);
	c->key_json = tcert_json_escape(c->key_pem);
	BIO_free(cb);
	BIO_free(kb);
	X509_free(x);
	EVP_PKEY_free(k);
}

void tcert_free(struct tcert *c)
{
	free(c->cert_json);
	free(c->key_json);
	free(c->cert_pem);
	free(c->key_pem);
}
