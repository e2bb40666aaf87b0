/*
 * Secret -> struct arn_cfg_secret: PEM loaded into OpenSSL objects here,
 * on the control lcore, so that a bad certificate or a key that does not
 * match is refused at configuration time (with the secret's name and the
 * field), never at handshake time.
 *
 * Key material: read into buffers that are cleansed and freed right after
 * parsing (conv_wipe_free(); redact.c says what else held it and what the
 * store keeps); never copied into messages. OpenSSL's error strings name
 * the failure, not the bytes. The model keeps the EVP_PKEY only: lib/tls
 * builds its contexts from it, and EVP_PKEY_free() clears the key.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include "config_int.h"

#define MAX_PEM (1u << 20)

/* Read a DataSource; *buf is malloc'd (caller cleanses and frees). */
static int datasource(struct conv *c, struct pb ds, const char *f, char **buf, size_t *len)
{
	size_t m = conv_push(c, "%s", f);
	int rc = -EINVAL;
	*buf = NULL;
	*len = 0;
	conv_only(c, ds, "filename,inline_bytes,inline_string,environment_variable");
	const char *w = pb_which(ds, "specifier");
	if (!ds.m || !w) {
		conv_err(c, "", "missing");
		goto out;
	}
	upb_StringView v = pb_str(ds, w);
	if (strcmp(w, "filename") == 0 || strcmp(w, "environment_variable") == 0) {
		char name[4096];
		snprintf(name, sizeof(name), "%.*s", (int)v.size, v.data);
		if (w[0] == 'e') {
			const char *e = getenv(name);
			if (!e) {
				conv_err(c, w, "environment variable '%s' is not set", name);
				goto out;
			}
			*len = strlen(e);
			*buf = malloc(*len + 1);
			if (*buf)
				memcpy(*buf, e, *len + 1);
		} else {
			char f2[64];
			snprintf(f2, sizeof(f2), "%s", w);
			if (conv_read_file(c, f2, name, MAX_PEM, buf, len) != 0)
				goto out;
		}
	} else {
		*buf = malloc(v.size + 1);
		if (*buf) {
			memcpy(*buf, v.data, v.size);
			(*buf)[v.size] = 0;
		}
		*len = v.size;
	}
	if (!*buf) {
		conv_err(c, "", "out of memory");
		goto out;
	}
	if (*len == 0) {
		conv_err(c, w, "empty");
		free(*buf);
		*buf = NULL;
		goto out;
	}
	rc = 0;
out:
	conv_pop(c, m);
	return rc;
}

static void wipe(char *buf, size_t len)
{
	conv_wipe_free(buf, len + 1); /* the NUL datasource() added too */
}

static const char *ssl_reason(void)
{
	unsigned long e = ERR_peek_last_error();
	const char *r = e ? ERR_reason_error_string(e) : NULL;
	ERR_clear_error();
	return r ? r : "not PEM";
}

static void x509_free_cb(void *p)
{
	X509_free(p);
}
static void chain_free_cb(void *p)
{
	sk_X509_pop_free(p, X509_free);
}
static void pkey_free_cb(void *p)
{
	EVP_PKEY_free(p);
}
static void store_free_cb(void *p)
{
	X509_STORE_free(p);
}

struct pwd {
	const char *p;
	size_t n;
};

static int pwd_cb(char *buf, int size, int rwflag, void *u)
{
	(void)rwflag;
	struct pwd *pw = u;
	if (!pw || !pw->p || pw->n >= (size_t)size)
		return -1;
	memcpy(buf, pw->p, pw->n);
	return (int)pw->n;
}

static void tls_certificate(struct conv *c, struct pb tc, struct arn_cfg_secret *s)
{
	size_t m0 = conv_push(c, "tls_certificate");
	conv_only(c, tc, "certificate_chain,private_key,password");
	char *pem = NULL, *key = NULL, *pass = NULL;
	size_t plen = 0, klen = 0, passlen = 0;
	if (!pb_has(tc, "certificate_chain"))
		conv_err(c, "certificate_chain", "missing");
	if (!pb_has(tc, "private_key"))
		conv_err(c, "private_key", "missing");
	if (pb_has(tc, "certificate_chain") &&
	    datasource(c, pb_msg(tc, "certificate_chain"), "certificate_chain", &pem, &plen) == 0) {
		BIO *bio = BIO_new_mem_buf(pem, (int)plen);
		s->cert = bio ? PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;
		if (!s->cert) {
			conv_err(c, "certificate_chain", "no PEM certificate could be read (%s)",
				 ssl_reason());
		} else {
			arn_pool_on_free(c->pool, x509_free_cb, s->cert);
			s->chain = sk_X509_new_null();
			if (s->chain)
				arn_pool_on_free(c->pool, chain_free_cb, s->chain);
			X509 *x;
			while (s->chain && (x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL)
				if (!sk_X509_push(s->chain, x))
					X509_free(x);
			unsigned long e = ERR_peek_last_error();
			if (e && ERR_GET_REASON(e) != PEM_R_NO_START_LINE)
				conv_err(c, "certificate_chain",
					 "a certificate after the first is bad "
					 "(%s)",
					 ssl_reason());
			ERR_clear_error();
		}
		BIO_free(bio);
	}
	if (pb_has(tc, "password"))
		datasource(c, pb_msg(tc, "password"), "password", &pass, &passlen);
	if (pb_has(tc, "private_key") &&
	    datasource(c, pb_msg(tc, "private_key"), "private_key", &key, &klen) == 0) {
		BIO *bio = BIO_new_mem_buf(key, (int)klen);
		struct pwd pw = {pass, passlen};
		s->key = bio ? PEM_read_bio_PrivateKey(bio, NULL, pwd_cb, &pw) : NULL;
		BIO_free(bio);
		if (!s->key) {
			/* never print the key; OpenSSL's reason is about its format */
			conv_err(c, "private_key", "the private key could not be read (%s%s)",
				 ssl_reason(), pass ? "" : "; if it is encrypted, give password");
		} else {
			arn_pool_on_free(c->pool, pkey_free_cb, s->key);
		}
	}
	if (s->cert && s->key && X509_check_private_key(s->cert, s->key) != 1) {
		ERR_clear_error();
		conv_err(c, "private_key", "does not match the certificate in certificate_chain");
	}
	wipe(pem, plen);
	wipe(key, klen);
	wipe(pass, passlen);
	conv_pop(c, m0);
}

static void validation_context(struct conv *c, struct pb vc, struct arn_cfg_secret *s)
{
	size_t m0 = conv_push(c, "validation_context");
	conv_only(c, vc,
		  "trusted_ca,match_subject_alt_names,match_typed_subject_alt_names,"
		  "max_verify_depth");
	char *pem = NULL;
	size_t plen = 0;
	if (!pb_has(vc, "trusted_ca")) {
		conv_err(c, "trusted_ca", "missing");
	} else if (datasource(c, pb_msg(vc, "trusted_ca"), "trusted_ca", &pem, &plen) == 0) {
		s->ca = X509_STORE_new();
		BIO *bio = BIO_new_mem_buf(pem, (int)plen);
		if (s->ca && bio) {
			arn_pool_on_free(c->pool, store_free_cb, s->ca);
			X509 *x;
			while ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
				if (X509_STORE_add_cert(s->ca, x) == 1)
					s->n_ca++;
				X509_free(x);
			}
			unsigned long e = ERR_peek_last_error();
			if (s->n_ca == 0)
				conv_err(c, "trusted_ca", "no PEM certificate could be read (%s)",
					 ssl_reason());
			else if (e && ERR_GET_REASON(e) != PEM_R_NO_START_LINE)
				conv_err(c, "trusted_ca", "a certificate is bad (%s)",
					 ssl_reason());
			ERR_clear_error();
		}
		BIO_free(bio);
	}
	wipe(pem, plen);
	size_t n = pb_len(vc, "match_subject_alt_names");
	size_t nt = pb_len(vc, "match_typed_subject_alt_names");
	if (n + nt) {
		s->san_matchers = CONV_NEW(c, struct arn_cfg_str_match, n + nt);
		for (size_t i = 0; s->san_matchers && i < n; i++) {
			size_t m = conv_push(c, "match_subject_alt_names[%zu]", i);
			conv_string_matcher(c, pb_at(vc, "match_subject_alt_names", i),
					    &s->san_matchers[s->n_san_matchers++]);
			conv_pop(c, m);
		}
		for (size_t i = 0; s->san_matchers && i < nt; i++) {
			struct pb sm = pb_at(vc, "match_typed_subject_alt_names", i);
			size_t m = conv_push(c, "match_typed_subject_alt_names[%zu]", i);
			conv_only(c, sm, "san_type,matcher");
			size_t m2 = conv_push(c, "matcher");
			conv_string_matcher(c, pb_msg(sm, "matcher"),
					    &s->san_matchers[s->n_san_matchers++]);
			conv_pop(c, m2);
			conv_pop(c, m);
		}
	}
	conv_pop(c, m0);
}

struct arn_cfg_obj *arn_conv_secret(struct conv *c, struct pb sp)
{
	upb_StringView name = pb_str(sp, "name");
	struct arn_cfg_secret *s = conv_obj_new(c, sizeof(*s), ARN_CFG_SECRET, name);
	if (!s)
		return NULL;
	conv_only(c, sp, "name,tls_certificate,validation_context");
	if (name.size == 0)
		conv_err(c, "name", "missing");
	const char *w = pb_which(sp, "type");
	if (!w) {
		conv_err(c, "", "empty: set tls_certificate or validation_context");
	} else if (strcmp(w, "tls_certificate") == 0) {
		s->kind = ARN_CFG_SECRET_TLS_CERT;
		tls_certificate(c, pb_msg(sp, "tls_certificate"), s);
	} else if (strcmp(w, "validation_context") == 0) {
		s->kind = ARN_CFG_SECRET_VALIDATION;
		validation_context(c, pb_msg(sp, "validation_context"), s);
	}
	return &s->obj;
}
