/*
 * Real ClientHellos from an OpenSSL client (see hello_gen.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "hello_gen.h"

uint8_t *hg_client_hello(const struct hg_opts *o, size_t *len)
{
	SSL_CTX *cx = SSL_CTX_new(TLS_client_method());
	if (!cx)
		abort();
	if (o->min_version)
		SSL_CTX_set_min_proto_version(cx, o->min_version);
	if (o->max_version)
		SSL_CTX_set_max_proto_version(cx, o->max_version);
	if (o->sigalgs && SSL_CTX_set1_sigalgs_list(cx, o->sigalgs) != 1)
		abort();
	if (o->groups && SSL_CTX_set1_groups_list(cx, o->groups) != 1)
		abort();
	if (o->ciphers && SSL_CTX_set_cipher_list(cx, o->ciphers) != 1)
		abort();
	if (o->padding)
		SSL_CTX_set_options(cx, SSL_OP_TLSEXT_PADDING);
	SSL *s = SSL_new(cx);
	BIO *rb = BIO_new(BIO_s_mem()), *wb = BIO_new(BIO_s_mem());
	SSL_set_bio(s, rb, wb);
	SSL_set_connect_state(s);
	if (o->sni)
		SSL_set_tlsext_host_name(s, o->sni);
	if (o->alpn) {
		unsigned char wire[4096];
		size_t n = 0;
		for (size_t i = 0; o->alpn[i]; i++) {
			size_t l = strlen(o->alpn[i]);
			wire[n++] = (unsigned char)l;
			memcpy(wire + n, o->alpn[i], l);
			n += l;
		}
		if (SSL_set_alpn_protos(s, wire, (unsigned)n) != 0)
			abort();
	}
	if (o->status_request)
		SSL_set_tlsext_status_type(s, TLSEXT_STATUSTYPE_ocsp);
	SSL_do_handshake(s);
	char *p;
	long n = BIO_get_mem_data(wb, &p);
	if (n <= 0)
		abort();
	uint8_t *out = malloc((size_t)n);
	memcpy(out, p, (size_t)n);
	*len = (size_t)n;
	SSL_free(s);
	SSL_CTX_free(cx);
	ERR_clear_error();
	return out;
}
