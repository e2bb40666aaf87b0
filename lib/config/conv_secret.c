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
 * Session ticket keys are bytes that lib/tls copies: the model's copy
 * lives in the Secret's pool and is cleansed when the Secret is freed.
 *
 * What Envoy checks when it builds a context from a Secret is checked here,
 * when the Secret is converted, so that an SDS update that would not build
 * is refused by name (X15) and the old Secret stays in force: an OCSP
 * staple that does not parse, is not successful, is for several
 * certificates or for another one (Envoy compares serial numbers), a
 * must-staple certificate without a staple, a CRL that does not parse, a
 * ticket key that is not 80 bytes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ocsp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include "config_int.h"

#define MAX_PEM (1u << 20)

/* The file a DataSource names (/certs' "path"), or NULL: inline or from
 * the environment (Envoy's "<inline>"). */
static const char *ds_path(struct conv *c, struct pb ds)
{
	const char *w = ds.m ? pb_which(ds, "specifier") : NULL;
	return w && strcmp(w, "filename") == 0 ? conv_str(c, pb_str(ds, w)) : NULL;
}

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
static void crls_free_cb(void *p)
{
	sk_X509_CRL_pop_free(p, X509_CRL_free);
}

/* Key bytes kept in a pool: cleansed when the pool is freed. */
struct kept_key {
	size_t len;
	uint8_t b[];
};
static void kept_key_wipe_cb(void *p)
{
	struct kept_key *k = p;
	conv_wipe(k->b, k->len);
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

/* The certificate carries the TLS feature extension with status_request
 * (RFC 7633, "must-staple"): Envoy then requires an OCSP staple, whatever
 * the context's ocsp_staple_policy. */
static bool must_staple(X509 *x)
{
	TLS_FEATURE *f = X509_get_ext_d2i(x, NID_tlsfeature, NULL, NULL);
	bool yes = false;
	for (int i = 0; f && i < sk_ASN1_INTEGER_num(f); i++)
		yes |= ASN1_INTEGER_get(sk_ASN1_INTEGER_value(f, i)) == 5; /* status_request */
	TLS_FEATURE_free(f);
	ERR_clear_error();
	return yes;
}

/* A serial number in hex for messages ("?" if it cannot be printed). */
static void serial_hex(const ASN1_INTEGER *a, char *buf, size_t len)
{
	BIGNUM *bn = a ? ASN1_INTEGER_to_BN(a, NULL) : NULL;
	char *h = bn ? BN_bn2hex(bn) : NULL;
	snprintf(buf, len, "%s", h ? h : "?");
	OPENSSL_free(h);
	BN_free(bn);
}

/*
 * TlsCertificate.ocsp_staple: a DER OCSPResponse, given as inline_bytes or
 * a file (Envoy refuses inline_string). Checked as Envoy checks it when it
 * loads one: it parses (all of it), its status is successful, it has a
 * basic response for exactly one certificate, and that certificate's
 * serial number is the leaf's. Whether it has expired is a matter of time,
 * left to lib/tls (at context build and at each handshake, under
 * ocsp_staple_policy).
 */
static void ocsp_staple(struct conv *c, struct pb ds, struct arn_cfg_secret *s)
{
	const char *w = pb_which(ds, "specifier");
	if (w && strcmp(w, "inline_string") == 0) {
		conv_err(c, "ocsp_staple.inline_string",
			 "an OCSP staple is DER: give it as inline_bytes or filename");
		return;
	}
	char *der = NULL;
	size_t len = 0;
	if (datasource(c, ds, "ocsp_staple", &der, &len) != 0)
		return;
	const unsigned char *p = (const unsigned char *)der;
	OCSP_RESPONSE *r = len <= INT32_MAX ? d2i_OCSP_RESPONSE(NULL, &p, (long)len) : NULL;
	OCSP_BASICRESP *bs = NULL;
	int st;
	if (!r || p != (const unsigned char *)der + len) {
		conv_err(c, "ocsp_staple", "not a DER OCSP response (%s)",
			 r ? "bytes after it" : ssl_reason());
	} else if ((st = OCSP_response_status(r)) != OCSP_RESPONSE_STATUS_SUCCESSFUL) {
		conv_err(c, "ocsp_staple", "the OCSP response is not successful (%s)",
			 OCSP_response_status_str(st));
	} else if (!(bs = OCSP_response_get1_basic(r))) {
		conv_err(c, "ocsp_staple", "the OCSP response has no basic response body");
	} else if (OCSP_resp_count(bs) != 1) {
		conv_err(c, "ocsp_staple",
			 "the OCSP response is for %d certificates: it must be for this "
			 "certificate only",
			 OCSP_resp_count(bs));
	} else if (s->cert) {
		ASN1_INTEGER *serial = NULL;
		OCSP_id_get0_info(NULL, NULL, NULL, &serial,
				  (OCSP_CERTID *)OCSP_SINGLERESP_get0_id(OCSP_resp_get0(bs, 0)));
		const ASN1_INTEGER *mine = X509_get0_serialNumber(s->cert);
		if (!serial || ASN1_INTEGER_cmp(serial, mine) != 0) {
			char a[80], b[80];
			serial_hex(serial, a, sizeof(a));
			serial_hex(mine, b, sizeof(b));
			conv_err(c, "ocsp_staple",
				 "the OCSP response is for another certificate (serial %s; "
				 "certificate_chain's is %s)",
				 a, b);
		} else {
			uint8_t *keep = arn_pool_alloc(c->pool, len);
			if (keep) {
				memcpy(keep, der, len);
				s->ocsp_staple = keep;
				s->ocsp_staple_len = len;
			}
		}
	}
	OCSP_BASICRESP_free(bs);
	OCSP_RESPONSE_free(r);
	ERR_clear_error();
	free(der);
}

static void tls_certificate(struct conv *c, struct pb tc, struct arn_cfg_secret *s)
{
	size_t m0 = conv_push(c, "tls_certificate");
	conv_only(c, tc, "certificate_chain,private_key,password,ocsp_staple");
	char *pem = NULL, *key = NULL, *pass = NULL;
	size_t plen = 0, klen = 0, passlen = 0;
	if (!pb_has(tc, "certificate_chain"))
		conv_err(c, "certificate_chain", "missing");
	if (!pb_has(tc, "private_key"))
		conv_err(c, "private_key", "missing");
	if (pb_has(tc, "certificate_chain"))
		s->path = ds_path(c, pb_msg(tc, "certificate_chain"));
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
	if (pb_has(tc, "ocsp_staple"))
		ocsp_staple(c, pb_msg(tc, "ocsp_staple"), s);
	else if (s->cert && must_staple(s->cert))
		conv_err(c, "ocsp_staple",
			 "missing: the certificate in certificate_chain is must-staple (TLS "
			 "feature status_request), so it needs an OCSP staple");
	wipe(pem, plen);
	wipe(key, klen);
	wipe(pass, passlen);
	conv_pop(c, m0);
}

/*
 * Every PEM CRL in @p pem (other PEM blocks are skipped) onto s->crls.
 * Problems are reported at @p f: a CRL that does not parse, or none at all
 * when @p need_one. @return the number added.
 */
static int read_crls(struct conv *c, const char *pem, size_t len, const char *f,
		     struct arn_cfg_secret *s, bool need_one)
{
	BIO *bio = BIO_new_mem_buf(pem, (int)len);
	int n = 0;
	X509_CRL *x;
	while (bio && (x = PEM_read_bio_X509_CRL(bio, NULL, NULL, NULL)) != NULL) {
		if (!s->crls && (s->crls = sk_X509_CRL_new_null()) != NULL &&
		    arn_pool_on_free(c->pool, crls_free_cb, s->crls) != 0)
			s->crls = NULL; /* already freed by arn_pool_on_free */
		if (!s->crls || !sk_X509_CRL_push(s->crls, x)) {
			X509_CRL_free(x);
			conv_err(c, f, "out of memory");
			break;
		}
		n++;
	}
	unsigned long e = ERR_peek_last_error();
	if (!bio)
		conv_err(c, f, "out of memory");
	else if (e && ERR_GET_REASON(e) != PEM_R_NO_START_LINE)
		conv_err(c, f, "a CRL is bad (%s)", ssl_reason());
	else if (need_one && n == 0)
		conv_err(c, f, "no PEM CRL (X509 CRL) could be read");
	ERR_clear_error();
	BIO_free(bio);
	return n;
}

static void validation_context(struct conv *c, struct pb vc, struct arn_cfg_secret *s)
{
	size_t m0 = conv_push(c, "validation_context");
	conv_only(c, vc,
		  "trusted_ca,match_subject_alt_names,match_typed_subject_alt_names,"
		  "max_verify_depth,crl");
	char *pem = NULL;
	size_t plen = 0;
	if (!pb_has(vc, "trusted_ca")) {
		conv_err(c, "trusted_ca", "missing");
	} else if (datasource(c, pb_msg(vc, "trusted_ca"), "trusted_ca", &pem, &plen) == 0) {
		s->path = ds_path(c, pb_msg(vc, "trusted_ca"));
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
			else /* Envoy takes the CRLs a trusted_ca file holds too */
				read_crls(c, pem, plen, "trusted_ca", s, false);
			ERR_clear_error();
		}
		BIO_free(bio);
	}
	wipe(pem, plen);
	if (pb_has(vc, "crl")) {
		char *crl = NULL;
		size_t clen = 0;
		if (datasource(c, pb_msg(vc, "crl"), "crl", &crl, &clen) == 0)
			read_crls(c, crl, clen, "crl", s, true);
		free(crl);
	}
	if (pb_wrapped_u32(vc, "max_verify_depth", &s->max_verify_depth)) {
		s->has_max_verify_depth = true;
		if (s->max_verify_depth > ARN_CFG_MAX_VERIFY_DEPTH)
			conv_err(c, "max_verify_depth", "%u is more than %u", s->max_verify_depth,
				 ARN_CFG_MAX_VERIFY_DEPTH);
	}
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
			struct arn_cfg_str_match *o = &s->san_matchers[s->n_san_matchers++];
			conv_san_type(c, sm, o);
			size_t m2 = conv_push(c, "matcher");
			conv_string_matcher(c, pb_msg(sm, "matcher"), o);
			conv_pop(c, m2);
			conv_pop(c, m);
		}
	}
	conv_pop(c, m0);
}

/*
 * TlsSessionTicketKeys: at least one key, each exactly 80 bytes (any
 * DataSource; inline_bytes is the usual one). The keys are copied into the
 * Secret's pool in order, and every buffer that held them on the way is
 * cleansed.
 */
static void ticket_keys(struct conv *c, struct pb tk, struct arn_cfg_secret *s)
{
	size_t m0 = conv_push(c, "session_ticket_keys");
	conv_only(c, tk, "keys");
	size_t n = pb_len(tk, "keys");
	struct kept_key *k = NULL;
	if (n == 0)
		conv_err(c, "keys", "empty: give at least one key of %u bytes",
			 ARN_CFG_TICKET_KEY_LEN);
	else if (n <= SIZE_MAX / ARN_CFG_TICKET_KEY_LEN - 1)
		k = arn_pool_alloc(c->pool, sizeof(*k) + n * ARN_CFG_TICKET_KEY_LEN);
	if (k) {
		k->len = n * ARN_CFG_TICKET_KEY_LEN;
		if (arn_pool_on_free(c->pool, kept_key_wipe_cb, k) != 0)
			k = NULL;
	}
	for (size_t i = 0; k && i < n; i++) {
		char f[32], *buf = NULL;
		size_t len = 0;
		snprintf(f, sizeof(f), "keys[%zu]", i);
		if (datasource(c, pb_at(tk, "keys", i), f, &buf, &len) != 0)
			continue;
		if (len != ARN_CFG_TICKET_KEY_LEN)
			conv_err(c, f,
				 "%zu bytes: a session ticket key is exactly %u bytes "
				 "(make one with `openssl rand 80`)",
				 len, ARN_CFG_TICKET_KEY_LEN);
		else
			memcpy(k->b + i * ARN_CFG_TICKET_KEY_LEN, buf, len);
		wipe(buf, len);
	}
	if (k) {
		s->ticket_keys = k->b;
		s->n_ticket_keys = n;
	}
	conv_pop(c, m0);
}

/*
 * GenericSecret (Envoy Gateway's OIDC client secret and HMAC key for
 * envoy.filters.http.oauth2): the secret DataSource's bytes, 1 to
 * ARN_CFG_GENERIC_SECRET_MAX, kept in the Secret's pool and cleansed with
 * it, as the ticket keys are.
 */
static void generic_secret(struct conv *c, struct pb gs, struct arn_cfg_secret *s)
{
	size_t m0 = conv_push(c, "generic_secret");
	conv_only(c, gs, "secret");
	char *buf = NULL;
	size_t len = 0;
	if (datasource(c, pb_msg(gs, "secret"), "secret", &buf, &len) == 0) {
		struct kept_key *k = NULL;
		if (len > ARN_CFG_GENERIC_SECRET_MAX)
			conv_err(c, "secret",
				 "%zu bytes: Arion keeps a generic secret of at most %u", len,
				 ARN_CFG_GENERIC_SECRET_MAX);
		else
			k = arn_pool_alloc(c->pool, sizeof(*k) + len);
		if (k) {
			k->len = len;
			if (arn_pool_on_free(c->pool, kept_key_wipe_cb, k) != 0) {
				k = NULL;
			} else {
				memcpy(k->b, buf, len);
				s->generic = k->b;
				s->generic_len = len;
			}
		}
		wipe(buf, len);
	}
	conv_pop(c, m0);
}

struct arn_cfg_obj *arn_conv_secret(struct conv *c, struct pb sp)
{
	upb_StringView name = pb_str(sp, "name");
	struct arn_cfg_secret *s = conv_obj_new(c, sizeof(*s), ARN_CFG_SECRET, name);
	if (!s)
		return NULL;
	conv_only(c, sp,
		  "name,tls_certificate,validation_context,session_ticket_keys,generic_secret");
	if (name.size == 0)
		conv_err(c, "name", "missing");
	const char *w = pb_which(sp, "type");
	if (!w) {
		conv_err(c, "",
			 "empty: set tls_certificate, validation_context, session_ticket_keys or "
			 "generic_secret");
	} else if (strcmp(w, "tls_certificate") == 0) {
		s->kind = ARN_CFG_SECRET_TLS_CERT;
		tls_certificate(c, pb_msg(sp, "tls_certificate"), s);
	} else if (strcmp(w, "validation_context") == 0) {
		s->kind = ARN_CFG_SECRET_VALIDATION;
		validation_context(c, pb_msg(sp, "validation_context"), s);
	} else if (strcmp(w, "session_ticket_keys") == 0) {
		s->kind = ARN_CFG_SECRET_TICKET_KEYS;
		ticket_keys(c, pb_msg(sp, "session_ticket_keys"), s);
	} else if (strcmp(w, "generic_secret") == 0) {
		s->kind = ARN_CFG_SECRET_GENERIC;
		generic_secret(c, pb_msg(sp, "generic_secret"), s);
	}
	return &s->obj;
}
