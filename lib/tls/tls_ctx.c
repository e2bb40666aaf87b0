/*
 * Contexts: struct arn_tls_conf -> OpenSSL SSL_CTXs, built on the control
 * lcore and read-only afterwards.
 *
 * Shape. A context holds replicas x groups SSL_CTXs, all configured alike:
 *   - a *group* is the certificates that serve one set of names (at most
 *     one per key type: OpenSSL keeps one RSA, one ECDSA and one Ed25519
 *     certificate per SSL_CTX and chooses among them from the client's
 *     signature algorithms and cipher list, which is Envoy's choice too:
 *     ECDSA when the client can take it). With several groups, the client
 *     hello callback switches the connection to the group its SNI names
 *     (exact, then wildcard; else the first group), as Envoy's certificate
 *     selector does;
 *   - a *replica* per worker, so that workers never write the same SSL_CTX
 *     (OpenSSL updates its reference count on every SSL_new/SSL_free and
 *     its statistics and X509_STORE lock on every handshake).
 * Ticket keys, ALPN list, SAN matchers and OCSP staples are shared by all
 * SSL_CTXs of a context and never written after the build.
 *
 * Sessions: stateless tickets resume on every worker, and across context
 * rotations: with session_ticket_keys, by those keys; without, by the
 * process's own random key (process_tkey). OpenSSL's session cache serves
 * the clients that resume by session id; it is one locked table per
 * SSL_CTX, so one per replica (per worker, never contended), and it hits
 * only when a client's next connection lands on the same worker (RSS
 * hashes the new source port: one chance in N).
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ocsp.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "arn_config_model.h"
#include "arn_log.h"
#include "tls_int.h"

static EVP_CIPHER *ticket_cipher; /* AES-256-CBC, fetched once: no fetch per ticket */
static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static int global_rc;
/* The session ticket key of every context without session_ticket_keys:
 * one per process, made at first use, so that a ticket survives a
 * context rebuilt for an unrelated change (a listener update makes new
 * filter chain objects, hence new contexts). A ticket still resumes only
 * under the same session id context (names, CAs, CRLs, matchers, depth,
 * client certificate policy), so sharing the key across listeners lets
 * nothing resume where it could not have been made. */
static uint8_t process_tkey[ARN_TLS_TICKET_KEY_LEN];
static bool process_tkey_ok;

/* tls_conn.c */

static void global_init_once(void)
{
	OPENSSL_init_ssl(OPENSSL_INIT_LOAD_SSL_STRINGS | OPENSSL_INIT_LOAD_CRYPTO_STRINGS, NULL);
	ticket_cipher = EVP_CIPHER_fetch(NULL, "AES-256-CBC", NULL);
	global_rc = ticket_cipher && tls_bio_create_method() == 0 ? 0 : -ENOMEM;
	process_tkey_ok = RAND_bytes(process_tkey, sizeof(process_tkey)) == 1;
}

int tls_global_init(void)
{
	pthread_once(&global_once, global_init_once);
	return global_rc;
}

/* ---- errors ------------------------------------------------------------------ */

struct build {
	const struct arn_tls_ctx_conf *conf;
	char *err;
	size_t errlen;
	bool failed;
};

__attribute__((format(printf, 2, 3))) static void fail(struct build *b, const char *fmt, ...)
{
	if (b->failed)
		return; /* the first reason is the one that matters */
	b->failed = true;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	unsigned long e = ERR_peek_last_error();
	char why[160] = "";
	if (e) {
		const char *r = ERR_reason_error_string(e);
		snprintf(why, sizeof(why), " (OpenSSL: %s)", r ? r : "unknown error");
	}
	ERR_clear_error();
	const char *name = b->conf->name ? b->conf->name : "TLS context";
	if (b->err && b->errlen)
		snprintf(b->err, b->errlen, "%s: %s%s", name, msg, why);
	if (!b->conf->quiet)
		ARN_ERR(TLS, "%s: %s%s", name, msg, why);
}

static const char *cert_name(const struct arn_tls_cert *c, size_t i, char *buf, size_t len)
{
	if (c->name)
		snprintf(buf, len, "certificate '%s'", c->name);
	else
		snprintf(buf, len, "certificate %zu", i);
	return buf;
}

/* ---- certificates -------------------------------------------------------------- */

enum key_class { KC_RSA = 0, KC_EC, KC_ED25519, KC_N };
static const char *const kc_name[KC_N] = {"RSA", "ECDSA", "Ed25519"};

struct group {
	char **names; /* sorted, lower case: the group's identity */
	size_t n_names;
	int cert[KC_N]; /* index into conf->certs, or -1 */
};

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A certificate's names: its DNS subject alt names, else its CN (lower case). */
static int cert_names(X509 *x, char ***out, size_t *n)
{
	*out = NULL;
	*n = 0;
	GENERAL_NAMES *gens = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	int cnt = gens ? sk_GENERAL_NAME_num(gens) : 0;
	char **v = calloc((size_t)cnt + 1, sizeof(*v));
	if (!v) {
		GENERAL_NAMES_free(gens);
		return -ENOMEM;
	}
	for (int i = 0; i < cnt; i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
		if (g->type != GEN_DNS)
			continue;
		const unsigned char *d = ASN1_STRING_get0_data(g->d.dNSName);
		int l = ASN1_STRING_length(g->d.dNSName);
		if (l <= 0 || l > (int)ARN_TLS_HELLO_SNI_MAX || memchr(d, 0, (size_t)l))
			continue;
		char *s = strndup((const char *)d, (size_t)l);
		if (!s)
			goto nomem;
		for (char *p = s; *p; p++)
			*p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
		v[(*n)++] = s;
	}
	GENERAL_NAMES_free(gens);
	gens = NULL;
	if (*n == 0) {
		char cn[ARN_TLS_HELLO_SNI_MAX + 1];
		int l = X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn,
						  sizeof(cn));
		if (l > 0 && (size_t)l == strlen(cn)) {
			for (char *p = cn; *p; p++)
				*p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
			if (!(v[(*n)++] = strdup(cn)))
				goto nomem;
		}
		ERR_clear_error();
	}
	qsort(v, *n, sizeof(*v), str_cmp);
	*out = v;
	return 0;
nomem:
	GENERAL_NAMES_free(gens);
	for (size_t i = 0; i < *n; i++)
		free(v[i]);
	free(v);
	*n = 0;
	return -ENOMEM;
}

static void free_names(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* Envoy's key checks: RSA of 2048 bits or more; ECDSA on P-256, P-384 or
 * P-521; (non-FIPS) Ed25519 too. */
static int key_class(struct build *b, const struct arn_tls_cert *c, const char *what)
{
	EVP_PKEY *k = X509_get0_pubkey(c->cert);
	if (!k) {
		fail(b, "%s: its public key cannot be read", what);
		return -1;
	}
	switch (EVP_PKEY_get_base_id(k)) {
	case EVP_PKEY_RSA:
		if (EVP_PKEY_get_bits(k) < 2048) {
			fail(b, "%s: only RSA keys of 2048 bits or more are supported (it has %d)",
			     what, EVP_PKEY_get_bits(k));
			return -1;
		}
		return KC_RSA;
	case EVP_PKEY_EC: {
		char grp[64] = "";
		size_t gl = 0;
		EVP_PKEY_get_utf8_string_param(k, OSSL_PKEY_PARAM_GROUP_NAME, grp, sizeof(grp),
					       &gl);
		if (strcmp(grp, "prime256v1") && strcmp(grp, "secp384r1") &&
		    strcmp(grp, "secp521r1")) {
			fail(b,
			     "%s: only P-256, P-384 or P-521 ECDSA keys are supported (it has %s)",
			     what, grp[0] ? grp : "an unknown curve");
			return -1;
		}
		return KC_EC;
	}
	case EVP_PKEY_ED25519:
		return KC_ED25519;
	default:
		fail(b, "%s: only RSA, ECDSA and Ed25519 certificates are supported", what);
		return -1;
	}
}

/* Group the certificates by their names; one per key type in a group. */
static int make_groups(struct build *b, struct group **out, size_t *n_out)
{
	const struct arn_tls_ctx_conf *cf = b->conf;
	struct group *g = calloc(cf->n_certs ? cf->n_certs : 1, sizeof(*g));
	size_t ng = 0;
	if (!g) {
		fail(b, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < cf->n_certs; i++) {
		const struct arn_tls_cert *c = &cf->certs[i];
		char what[160];
		cert_name(c, i, what, sizeof(what));
		if (!c->cert || !c->key) {
			fail(b, "%s: %s missing", what,
			     c->cert ? "the private key is" : "the certificate is");
			goto bad;
		}
		/* also checked when the Secret was converted: a context built
		 * from other sources must not serve a key that does not match */
		if (X509_check_private_key(c->cert, c->key) != 1) {
			ERR_clear_error();
			fail(b, "%s: the private key does not match the certificate", what);
			goto bad;
		}
		int kc = key_class(b, c, what);
		if (kc < 0)
			goto bad;
		char **names;
		size_t nn;
		if (cert_names(c->cert, &names, &nn)) {
			fail(b, "out of memory");
			goto bad;
		}
		size_t gi;
		for (gi = 0; gi < ng; gi++) {
			if (g[gi].n_names != nn)
				continue;
			size_t k;
			for (k = 0; k < nn && strcmp(g[gi].names[k], names[k]) == 0; k++)
				;
			if (k == nn)
				break;
		}
		if (gi == ng) {
			g[ng].names = names;
			g[ng].n_names = nn;
			for (int k = 0; k < KC_N; k++)
				g[ng].cert[k] = -1;
			ng++;
		} else {
			free_names(names, nn);
		}
		if (g[gi].cert[kc] >= 0) {
			char other[160];
			cert_name(&cf->certs[g[gi].cert[kc]], (size_t)g[gi].cert[kc], other,
				  sizeof(other));
			fail(b,
			     "%s and %s are both %s certificates for the same server names: at "
			     "most one of each key type",
			     other, what, kc_name[kc]);
			goto bad;
		}
		g[gi].cert[kc] = (int)i;
	}
	*out = g;
	*n_out = ng;
	return 0;
bad:
	for (size_t i = 0; i < ng; i++)
		free_names(g[i].names, g[i].n_names);
	free(g);
	return -EINVAL;
}

/* ---- OCSP ---------------------------------------------------------------------- */

static int64_t asn1_time_unix(const ASN1_GENERALIZEDTIME *t)
{
	struct tm tm;
	if (!t || ASN1_TIME_to_tm(t, &tm) != 1)
		return 0;
	return (int64_t)timegm(&tm);
}

/* Check a staple the way Envoy does (a successful response for this
 * certificate's serial, not expired now) and keep it. */
static int add_staple(struct build *b, struct arn_tls_ctx *x, const struct arn_tls_cert *c,
		      const char *what)
{
	const unsigned char *p = c->ocsp_staple;
	OCSP_RESPONSE *r = d2i_OCSP_RESPONSE(NULL, &p, (long)c->ocsp_staple_len);
	OCSP_BASICRESP *bs = NULL;
	int rc = -EINVAL;
	if (!r || p != c->ocsp_staple + c->ocsp_staple_len) {
		fail(b, "%s: ocsp_staple is not a DER OCSP response", what);
		goto out;
	}
	if (OCSP_response_status(r) != OCSP_RESPONSE_STATUS_SUCCESSFUL ||
	    !(bs = OCSP_response_get1_basic(r)) || OCSP_resp_count(bs) < 1) {
		fail(b, "%s: ocsp_staple is not a successful OCSP response", what);
		goto out;
	}
	OCSP_SINGLERESP *single = OCSP_resp_get0(bs, 0);
	ASN1_INTEGER *serial = NULL;
	const OCSP_CERTID *id = OCSP_SINGLERESP_get0_id(single);
	OCSP_id_get0_info(NULL, NULL, NULL, &serial, (OCSP_CERTID *)id);
	if (!serial || ASN1_INTEGER_cmp(serial, X509_get0_serialNumber(c->cert)) != 0) {
		fail(b, "%s: ocsp_staple is for another certificate (serial numbers differ)", what);
		goto out;
	}
	int reason;
	ASN1_GENERALIZEDTIME *rev, *thisupd, *nextupd;
	int status = OCSP_single_get0_status(single, &reason, &rev, &thisupd, &nextupd);
	if (status != V_OCSP_CERTSTATUS_GOOD) {
		fail(b, "%s: ocsp_staple says the certificate is %s", what,
		     status == V_OCSP_CERTSTATUS_REVOKED ? "revoked" : "of unknown status");
		goto out;
	}
	int64_t next = asn1_time_unix(nextupd);
	if (next && next <= (int64_t)time(NULL)) {
		fail(b, "%s: ocsp_staple expired (nextUpdate is in the past)", what);
		goto out;
	}
	struct tls_staple *s = &x->staples[x->n_staples];
	s->der = malloc(c->ocsp_staple_len);
	if (!s->der) {
		fail(b, "out of memory");
		goto out;
	}
	memcpy(s->der, c->ocsp_staple, c->ocsp_staple_len);
	s->len = c->ocsp_staple_len;
	s->next_update = next;
	X509_up_ref(c->cert);
	s->cert = c->cert;
	x->n_staples++;
	rc = 0;
out:
	OCSP_BASICRESP_free(bs);
	OCSP_RESPONSE_free(r);
	ERR_clear_error();
	return rc;
}

/* ---- callbacks (run on workers: read the context only) ----------------------------- */

static int alpn_select_cb(SSL *s, const unsigned char **out, unsigned char *outlen,
			  const unsigned char *in, unsigned int inlen, void *arg)
{
	(void)s;
	const struct arn_tls_ctx *x = arg;
	unsigned char *o;
	/* the server's order: the first of our protocols the client offers */
	if (SSL_select_next_proto(&o, outlen, x->alpn, (unsigned)x->alpn_len, in, inlen) !=
	    OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_NOACK;
	*out = o;
	return SSL_TLSEXT_ERR_OK;
}

/* Before OpenSSL looks at the ClientHello's contents: require_sni, and the
 * certificate group the SNI names. */
static int client_hello_cb(SSL *s, int *al, void *arg)
{
	const struct arn_tls_ctx *x = arg;
	struct arn_tls_conn *c = SSL_get_app_data(s);
	const unsigned char *ext;
	size_t len;
	const uint8_t *name = NULL;
	int nl = -1;
	if (SSL_client_hello_get0_ext(s, TLSEXT_TYPE_server_name, &ext, &len))
		nl = arn_tls_sni_from_ext(ext, len, &name);
	if (nl <= 0) {
		if (x->require_sni) {
			/* Envoy: the handshake fails (BoringSSL sends handshake_failure) */
			*al = SSL_AD_HANDSHAKE_FAILURE;
			return SSL_CLIENT_HELLO_ERROR;
		}
		return SSL_CLIENT_HELLO_SUCCESS;
	}
	if (x->n_groups > 1 && c) {
		int g = tls_names_lookup(&x->names, (const char *)name, (size_t)nl, true);
		if (g > 0 && !SSL_set_SSL_CTX(s, tls_ctx_sctx(x, c->replica, (unsigned)g))) {
			*al = SSL_AD_INTERNAL_ERROR;
			return SSL_CLIENT_HELLO_ERROR;
		}
	}
	return SSL_CLIENT_HELLO_SUCCESS;
}

/* Stateless session tickets (RFC 5077 format, as OpenSSL and Envoy make
 * them): name (16) | IV | AES-256-CBC(state) | HMAC-SHA256. */
static int ticket_cb(SSL *s, unsigned char key_name[16], unsigned char *iv, EVP_CIPHER_CTX *cctx,
		     EVP_MAC_CTX *hctx, int enc)
{
	struct arn_tls_ctx *x = SSL_CTX_get_app_data(SSL_get_SSL_CTX(s));
	const uint8_t *k = NULL;
	int rc = 1;
	if (!x || x->n_tkeys == 0)
		return enc ? 0 : 0;
	if (enc) {
		k = x->tkeys;
		memcpy(key_name, k, 16);
		if (RAND_bytes(iv, EVP_CIPHER_get_iv_length(ticket_cipher)) != 1)
			return -1;
		if (EVP_EncryptInit_ex(cctx, ticket_cipher, NULL, k + 48, iv) != 1)
			return -1;
	} else {
		for (size_t i = 0; i < x->n_tkeys; i++) {
			if (memcmp(key_name, x->tkeys + i * ARN_TLS_TICKET_KEY_LEN, 16) == 0) {
				k = x->tkeys + i * ARN_TLS_TICKET_KEY_LEN;
				/* an older key still decrypts; the client gets a
				 * ticket under the first one. TLS 1.3 clients use a
				 * ticket once (RFC 8446 C.4; OpenSSL's does), so they
				 * get a new one on every resumption, as BoringSSL
				 * (Envoy's) gives them. */
				rc = i == 0 && SSL_version(s) < TLS1_3_VERSION ? 1 : 2;
				break;
			}
		}
		if (!k)
			return 0; /* unknown key: a full handshake */
		if (EVP_DecryptInit_ex(cctx, ticket_cipher, NULL, k + 48, iv) != 1)
			return -1;
	}
	OSSL_PARAM params[3];
	params[0] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, (void *)(k + 16), 32);
	params[1] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0);
	params[2] = OSSL_PARAM_construct_end();
	if (EVP_MAC_CTX_set_params(hctx, params) != 1)
		return -1;
	return rc;
}

/* OCSP stapling: called when the client asked for a staple, after the
 * certificate was chosen (OpenSSL sets it as current before calling). */
static int status_cb(SSL *s, void *arg)
{
	const struct arn_tls_ctx *x = arg;
	struct arn_tls_conn *c = SSL_get_app_data(s);
	if (!c)
		return SSL_TLSEXT_ERR_NOACK;
	tls_inc(&c->st->v[ARN_TLS_S_OCSP_STAPLE_REQUESTS]);
	X509 *cert = SSL_get_certificate(s);
	const struct tls_staple *st = NULL;
	for (size_t i = 0; i < x->n_staples; i++)
		if (x->staples[i].cert == cert)
			st = &x->staples[i];
	bool expired = st && st->next_update && c->w->now_s && st->next_update <= c->w->now_s;
	if (!st || expired) {
		/* LENIENT: go on without; STRICT: only an expired one fails;
		 * MUST_STAPLE: a valid one is required */
		if (x->ocsp_policy == ARN_TLS_OCSP_MUST_STAPLE ||
		    (x->ocsp_policy == ARN_TLS_OCSP_STRICT && st)) {
			tls_inc(&c->st->v[ARN_TLS_S_OCSP_STAPLE_FAILED]);
			return SSL_TLSEXT_ERR_ALERT_FATAL;
		}
		tls_inc(&c->st->v[ARN_TLS_S_OCSP_STAPLE_OMITTED]);
		return SSL_TLSEXT_ERR_NOACK;
	}
	/* OpenSSL takes ownership of the copy */
	unsigned char *der = OPENSSL_malloc(st->len);
	if (!der)
		return SSL_TLSEXT_ERR_ALERT_FATAL;
	memcpy(der, st->der, st->len);
	if (SSL_set_tlsext_status_ocsp_resp(s, der, (long)st->len) != 1) {
		OPENSSL_free(der);
		return SSL_TLSEXT_ERR_ALERT_FATAL;
	}
	tls_inc(&c->st->v[ARN_TLS_S_OCSP_STAPLE_RESPONSES]);
	return SSL_TLSEXT_ERR_OK;
}

/* A client's new session (TLS 1.2 at the end of the handshake, TLS 1.3 when
 * a NewSessionTicket is read): keep it in the connection's slot. */
static int new_session_cb(SSL *s, SSL_SESSION *sess)
{
	struct arn_tls_conn *c = SSL_get_app_data(s);
	if (!c || !c->session || !SSL_SESSION_is_resumable(sess))
		return 0;
	SSL_SESSION_free(c->session->sess);
	c->session->sess = sess;
	c->session->stored++;
	return 1; /* we keep the reference */
}

/* ---- one SSL_CTX --------------------------------------------------------------------- */

/* Envoy refuses a cipher list with an entry it does not know; OpenSSL
 * ignores unknown entries as long as one is known. Check each. */
static int check_cipher_list(struct build *b, SSL_CTX *probe, const char *list)
{
	char *copy = strdup(list), *save = NULL;
	if (!copy) {
		fail(b, "out of memory");
		return -ENOMEM;
	}
	for (char *t = strtok_r(copy, ":", &save); t; t = strtok_r(NULL, ":", &save)) {
		if (SSL_CTX_set_cipher_list(probe, t) != 1) {
			fail(b, "tls_params.cipher_suites: '%s' is not a cipher OpenSSL knows", t);
			free(copy);
			return -EINVAL;
		}
	}
	free(copy);
	return 0;
}

static X509_STORE *make_store(struct build *b)
{
	const struct arn_tls_ctx_conf *cf = b->conf;
	X509_STORE *st = X509_STORE_new();
	if (!st) {
		fail(b, "out of memory");
		return NULL;
	}
	STACK_OF(X509_OBJECT) *objs = X509_STORE_get0_objects(cf->trusted_ca);
	int added = 0;
	for (int i = 0; i < sk_X509_OBJECT_num(objs); i++) {
		X509 *x = X509_OBJECT_get0_X509(sk_X509_OBJECT_value(objs, i));
		if (x && X509_STORE_add_cert(st, x) == 1)
			added++;
	}
	if (added == 0) {
		X509_STORE_free(st);
		fail(b, "validation context: trusted_ca holds no certificate");
		return NULL;
	}
	for (int i = 0; cf->crls && i < sk_X509_CRL_num(cf->crls); i++) {
		if (X509_STORE_add_crl(st, sk_X509_CRL_value(cf->crls, i)) != 1) {
			X509_STORE_free(st);
			fail(b, "validation context: crl %d could not be added", i);
			return NULL;
		}
	}
	/* Envoy: a CRL list is checked for every certificate of the chain */
	if (cf->crls && sk_X509_CRL_num(cf->crls) > 0)
		X509_STORE_set_flags(st, X509_V_FLAG_CRL_CHECK | X509_V_FLAG_CRL_CHECK_ALL);
	ERR_clear_error();
	return st;
}

static SSL_CTX *make_sslctx(struct build *b, struct arn_tls_ctx *x, const struct group *g,
			    const unsigned char *sid, unsigned sid_len, uint16_t minv,
			    uint16_t maxv)
{
	const struct arn_tls_ctx_conf *cf = b->conf;
	SSL_CTX *s = SSL_CTX_new(cf->server ? TLS_server_method() : TLS_client_method());
	if (!s) {
		fail(b, "out of memory");
		return NULL;
	}
	SSL_CTX_set_app_data(s, x);
	if (SSL_CTX_set_min_proto_version(s, minv) != 1 ||
	    SSL_CTX_set_max_proto_version(s, maxv) != 1) {
		fail(b, "tls_params: the protocol versions cannot be set");
		goto bad;
	}
	/* OpenSSL 3's security level 1 forbids the SHA-1 signatures TLS 1.0
	 * and 1.1 need: honour a configuration that asks for them, as Envoy
	 * (BoringSSL) does. */
	if (minv < TLS1_2_VERSION)
		SSL_CTX_set_security_level(s, 0);
	uint64_t opts = SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION;
	if (cf->server)
		opts |= SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_PRIORITIZE_CHACHA;
	if (cf->server && cf->disable_stateless_resumption)
		opts |= SSL_OP_NO_TICKET;
	SSL_CTX_set_options(s, opts);
	SSL_CTX_clear_options(s, SSL_OP_ALLOW_CLIENT_RENEGOTIATION | SSL_OP_LEGACY_SERVER_CONNECT);
	SSL_CTX_set_mode(s, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	const char *ciphers = cf->cipher_suites ? cf->cipher_suites : ARN_TLS_DEFAULT_CIPHERS;
	if (SSL_CTX_set_cipher_list(s, ciphers) != 1) {
		fail(b, "tls_params.cipher_suites: no cipher in '%s' is known", ciphers);
		goto bad;
	}
	if (SSL_CTX_set_ciphersuites(s, ARN_TLS_DEFAULT_CIPHERSUITES_13) != 1) {
		fail(b, "TLS 1.3 cipher suites cannot be set");
		goto bad;
	}
	const char *curves = cf->ecdh_curves ? cf->ecdh_curves : ARN_TLS_DEFAULT_CURVES;
	if (SSL_CTX_set1_groups_list(s, curves) != 1) {
		fail(b, "tls_params.ecdh_curves: '%s' is not a list of curves OpenSSL knows",
		     curves);
		goto bad;
	}
	/* early data off: never advertised in tickets */
	SSL_CTX_set_max_early_data(s, 0);
	SSL_CTX_set_info_callback(s, tls_info_cb);
	SSL_CTX_set_msg_callback(s, tls_msg_cb);
	SSL_CTX_set_timeout(s, cf->session_timeout_s ? (long)cf->session_timeout_s : 7200);
	if (SSL_CTX_set_session_id_context(s, sid, sid_len) != 1) {
		fail(b, "session id context cannot be set");
		goto bad;
	}
	if (cf->server) {
		/* A session cache per replica, so per worker: OpenSSL's cache
		 * lock is then never contended. It serves clients that resume
		 * by session id (TLS 1.2 without tickets, or every TLS 1.2
		 * client under disable_stateless_session_resumption, as
		 * BoringSSL's cache does for Envoy); a client whose next
		 * connection lands on another worker makes a full handshake.
		 * Bounded in sessions (the oldest is evicted when full);
		 * expired ones are flushed every 255 handshakes. */
		SSL_CTX_set_session_cache_mode(s, SSL_SESS_CACHE_SERVER);
		SSL_CTX_sess_set_cache_size(s, ARN_TLS_SESSION_CACHE);
		if (cf->disable_stateless_resumption) {
			SSL_CTX_set_num_tickets(s, 0);
		} else {
			SSL_CTX_set_num_tickets(s, 1);
			SSL_CTX_set_tlsext_ticket_key_evp_cb(s, ticket_cb);
		}
		if (x->alpn_len)
			SSL_CTX_set_alpn_select_cb(s, alpn_select_cb, x);
		if (x->n_groups > 1 || x->require_sni)
			SSL_CTX_set_client_hello_cb(s, client_hello_cb, x);
		if (x->n_staples || x->ocsp_policy == ARN_TLS_OCSP_MUST_STAPLE) {
			SSL_CTX_set_tlsext_status_cb(s, status_cb);
			SSL_CTX_set_tlsext_status_arg(s, x);
		}
	} else {
		SSL_CTX_set_session_cache_mode(s, SSL_SESS_CACHE_CLIENT |
						      SSL_SESS_CACHE_NO_INTERNAL_STORE);
		SSL_CTX_sess_set_new_cb(s, new_session_cb);
		if (x->alpn_len &&
		    SSL_CTX_set_alpn_protos(s, x->alpn, (unsigned)x->alpn_len) != 0) {
			fail(b, "alpn_protocols cannot be set");
			goto bad;
		}
	}
	if (x->verify) {
		X509_STORE *st = make_store(b);
		if (!st)
			goto bad;
		SSL_CTX_set_cert_store(s, st); /* owns it */
		int mode = SSL_VERIFY_PEER;
		if (cf->server && cf->require_client_certificate)
			mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
		SSL_CTX_set_verify(s, mode, tls_verify_cb);
		/* OpenSSL 3.0's depth leaves the trust anchor out, Envoy's
		 * counts it: one less here, and tls_verify_cb refuses a
		 * certificate deeper than Envoy's count (the only case this
		 * cannot express is 0: a leaf that is itself trusted). */
		if (x->max_depth >= 0)
			SSL_CTX_set_verify_depth(s, x->max_depth ? x->max_depth - 1 : 0);
	} else {
		SSL_CTX_set_verify(s, SSL_VERIFY_NONE, NULL);
	}
	for (int k = 0; g && k < KC_N; k++) {
		if (g->cert[k] < 0)
			continue;
		const struct arn_tls_cert *c = &cf->certs[g->cert[k]];
		char what[160];
		if (SSL_CTX_use_cert_and_key(s, c->cert, c->key, c->chain, 1) != 1) {
			fail(b, "%s: cannot be used with its key and chain",
			     cert_name(c, (size_t)g->cert[k], what, sizeof(what)));
			goto bad;
		}
	}
	return s;
bad:
	SSL_CTX_free(s);
	return NULL;
}

static void san_digest(EVP_MD_CTX *md, const struct arn_cfg_str_match *m, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const uint8_t what[3] = {m[i].kind, m[i].ignore_case, m[i].san_type};
		EVP_DigestUpdate(md, what, sizeof(what));
		if (m[i].s)
			EVP_DigestUpdate(md, m[i].s, m[i].len + 1);
	}
}

/* Envoy hashes what a session was verified against into the session id
 * context, so that a session cannot resume under other certificates'
 * names or another validation: the server certificates' subjects and
 * names, the CAs, the CRLs (a client certificate revoked by a new CRL
 * must not resume), the SAN matchers, the verify depth and the client
 * certificate policy. */
static void session_context(const struct arn_tls_ctx_conf *cf, unsigned char *out,
			    unsigned *out_len)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	unsigned char h[EVP_MAX_MD_SIZE];
	unsigned hl = 0;
	if (md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1) {
		EVP_DigestUpdate(md, cf->server ? "s" : "c", 1);
		for (size_t i = 0; i < cf->n_certs; i++) {
			unsigned char *der = NULL;
			int l = i2d_X509_NAME(X509_get_subject_name(cf->certs[i].cert), &der);
			if (l > 0)
				EVP_DigestUpdate(md, der, (size_t)l);
			OPENSSL_free(der);
			char **names;
			size_t nn;
			if (cert_names(cf->certs[i].cert, &names, &nn) == 0) {
				for (size_t k = 0; k < nn; k++)
					EVP_DigestUpdate(md, names[k], strlen(names[k]) + 1);
				free_names(names, nn);
			}
		}
		if (cf->trusted_ca) {
			STACK_OF(X509_OBJECT) *objs = X509_STORE_get0_objects(cf->trusted_ca);
			for (int i = 0; i < sk_X509_OBJECT_num(objs); i++) {
				X509 *x = X509_OBJECT_get0_X509(sk_X509_OBJECT_value(objs, i));
				unsigned char d[EVP_MAX_MD_SIZE];
				unsigned dl;
				if (x && X509_digest(x, EVP_sha256(), d, &dl) == 1)
					EVP_DigestUpdate(md, d, dl);
			}
		}
		for (int i = 0; cf->crls && i < sk_X509_CRL_num(cf->crls); i++) {
			unsigned char d[EVP_MAX_MD_SIZE];
			unsigned dl;
			if (X509_CRL_digest(sk_X509_CRL_value(cf->crls, i), EVP_sha256(), d, &dl) ==
			    1)
				EVP_DigestUpdate(md, d, dl);
		}
		if (cf->has_max_verify_depth) {
			uint32_t dep = cf->max_verify_depth;
			EVP_DigestUpdate(md, &dep, sizeof(dep));
		}
		/* each matcher whole: its kind, case and SAN type as well as
		 * its text (a session verified under "prefix: x" must not
		 * resume under "exact: x", nor a DNS one under a URI one) */
		san_digest(md, cf->san_matchers, cf->n_san_matchers);
		san_digest(md, cf->more_san_matchers, cf->n_more_san_matchers);
		EVP_DigestUpdate(md, cf->require_client_certificate ? "r" : "o", 1);
		EVP_DigestFinal_ex(md, h, &hl);
	}
	EVP_MD_CTX_free(md);
	ERR_clear_error();
	*out_len = hl > SSL_MAX_SID_CTX_LENGTH ? SSL_MAX_SID_CTX_LENGTH : hl;
	memcpy(out, h, *out_len);
	if (*out_len == 0) {
		memcpy(out, "arion", 5);
		*out_len = 5;
	}
}

/* ---- build / free ---------------------------------------------------------------------- */

static void ctx_free(struct arn_tls_ctx *x)
{
	if (!x)
		return;
	for (size_t i = 0; x->sctx && i < (size_t)x->replicas * x->n_groups; i++)
		SSL_CTX_free(x->sctx[i]);
	free(x->sctx);
	tls_names_free(&x->names);
	for (size_t i = 0; i < x->n_staples; i++) {
		X509_free(x->staples[i].cert);
		free(x->staples[i].der);
	}
	free(x->staples);
	free(x->alpn);
	if (x->tkeys)
		OPENSSL_cleanse(x->tkeys, x->n_tkeys * ARN_TLS_TICKET_KEY_LEN);
	free(x->tkeys);
	free(x->san);
	for (size_t i = 0; i < x->n_pins; i++)
		arn_cfg_unpin(x->pins[i]);
	free(x->pins);
	free(x->sni);
	free(x->name);
	free(x);
}

static int check_version(uint16_t v)
{
	return v == TLS1_VERSION || v == TLS1_1_VERSION || v == TLS1_2_VERSION ||
	       v == TLS1_3_VERSION;
}

struct arn_tls_ctx *arn_tls_ctx_new(const struct arn_tls_ctx_conf *cf, char *err, size_t errlen)
{
	struct build b = {.conf = cf, .err = err, .errlen = errlen};
	if (err && errlen)
		err[0] = 0;
	if (tls_global_init()) {
		fail(&b, "OpenSSL could not be initialised");
		return NULL;
	}
	ERR_clear_error();
	struct arn_tls_ctx *x = calloc(1, sizeof(*x));
	if (!x || !(x->name = strdup(cf->name ? cf->name : "TLS context"))) {
		free(x);
		fail(&b, "out of memory");
		return NULL;
	}
	x->refs = 1;
	x->server = cf->server;
	x->require_sni = cf->server && cf->require_sni;
	x->verify = cf->trusted_ca != NULL;
	x->max_depth = cf->has_max_verify_depth ? (int32_t)cf->max_verify_depth : -1;
	x->ocsp_policy = cf->ocsp_policy;
	x->replicas = cf->replicas ? cf->replicas : 1;
	struct group *groups = NULL;
	size_t n_groups = 0;

	if (cf->has_max_verify_depth && cf->max_verify_depth > 100) {
		fail(&b, "validation context: max_verify_depth %u is more than 100 (Envoy's bound)",
		     cf->max_verify_depth);
		goto bad;
	}

	uint16_t minv = cf->min_version ? cf->min_version : TLS1_2_VERSION;
	uint16_t maxv = cf->max_version ? cf->max_version : TLS1_3_VERSION;
	if (!check_version(minv) || !check_version(maxv)) {
		fail(&b, "tls_params: unknown protocol version 0x%04x",
		     check_version(minv) ? maxv : minv);
		goto bad;
	}
	if (minv > maxv) {
		fail(&b, "tls_params: tls_minimum_protocol_version is above the maximum");
		goto bad;
	}
	if (cf->server && cf->n_certs == 0) {
		fail(&b, "a server TLS context needs a certificate");
		goto bad;
	}
	if (!cf->server && cf->n_certs > 1) {
		fail(&b, "a client TLS context takes one certificate (Envoy: multiple TLS "
			 "certificates are not supported for client contexts)");
		goto bad;
	}
	if ((cf->n_san_matchers || cf->n_more_san_matchers) && !cf->trusted_ca) {
		/* no verify callback is installed without a CA, so the matchers
		 * would never be looked at: any certificate would pass */
		fail(&b, "match_subject_alt_names needs a validation context with trusted_ca "
			 "(without a trusted CA no certificate is verified; Envoy refuses it "
			 "too)");
		goto bad;
	}
	if (cf->require_client_certificate && !cf->trusted_ca) {
		fail(&b, "require_client_certificate needs a validation context (trusted_ca)");
		goto bad;
	}
	if (cf->n_ticket_keys && !cf->ticket_keys) {
		fail(&b, "session_ticket_keys: keys missing");
		goto bad;
	}
	if (make_groups(&b, &groups, &n_groups))
		goto bad;
	x->n_groups = n_groups ? (unsigned)n_groups : 1;

	/* certificate groups by name: the first group is the default */
	for (size_t g = 0; g < n_groups; g++)
		for (size_t k = 0; k < groups[g].n_names; k++)
			if (tls_names_add(&x->names, groups[g].names[k], strlen(groups[g].names[k]),
					  (int)g, true) == -ENOMEM) {
				fail(&b, "out of memory");
				goto bad;
			}
	tls_names_seal(&x->names);

	/* ALPN, wire format */
	size_t alen = 0;
	for (size_t i = 0; i < cf->n_alpn; i++) {
		size_t l = cf->alpn[i] ? strlen(cf->alpn[i]) : 0;
		if (l == 0 || l > 255) {
			fail(&b, "alpn_protocols[%zu]: must be 1 to 255 bytes", i);
			goto bad;
		}
		alen += 1 + l;
	}
	if (alen >= 65535) {
		fail(&b, "alpn_protocols: too long");
		goto bad;
	}
	if (alen) {
		if (!(x->alpn = malloc(alen))) {
			fail(&b, "out of memory");
			goto bad;
		}
		for (size_t i = 0, o = 0; i < cf->n_alpn; i++) {
			size_t l = strlen(cf->alpn[i]);
			x->alpn[o++] = (uint8_t)l;
			memcpy(x->alpn + o, cf->alpn[i], l);
			o += l;
		}
		x->alpn_len = alen;
	}

	/* ticket keys: given, or the process's random key */
	if (cf->server && !cf->disable_stateless_resumption) {
		size_t n = cf->n_ticket_keys ? cf->n_ticket_keys : 1;
		if (!(x->tkeys = malloc(n * ARN_TLS_TICKET_KEY_LEN))) {
			fail(&b, "out of memory");
			goto bad;
		}
		if (cf->n_ticket_keys)
			memcpy(x->tkeys, cf->ticket_keys, n * ARN_TLS_TICKET_KEY_LEN);
		else if (process_tkey_ok)
			memcpy(x->tkeys, process_tkey, ARN_TLS_TICKET_KEY_LEN);
		else {
			fail(&b, "no random session ticket key");
			goto bad;
		}
		x->n_tkeys = n;
	}

	/* SAN matchers, copied (their strings and regexes stay with their
	 * owners, pinned below) */
	size_t nsan = cf->n_san_matchers + cf->n_more_san_matchers;
	if (nsan) {
		if (!(x->san = calloc(nsan, sizeof(*x->san)))) {
			fail(&b, "out of memory");
			goto bad;
		}
		if (cf->n_san_matchers)
			memcpy(x->san, cf->san_matchers, cf->n_san_matchers * sizeof(*x->san));
		if (cf->n_more_san_matchers)
			memcpy(x->san + cf->n_san_matchers, cf->more_san_matchers,
			       cf->n_more_san_matchers * sizeof(*x->san));
		x->n_san = nsan;
	}
	if (cf->sni) {
		size_t l = strlen(cf->sni);
		if (l == 0 || l > ARN_TLS_HELLO_SNI_MAX) {
			fail(&b, "sni: must be 1 to %u bytes", ARN_TLS_HELLO_SNI_MAX);
			goto bad;
		}
		if (!(x->sni = strdup(cf->sni))) {
			fail(&b, "out of memory");
			goto bad;
		}
	}

	/* OCSP staples */
	size_t n_st = 0;
	for (size_t i = 0; i < cf->n_certs; i++)
		n_st += cf->certs[i].ocsp_staple != NULL;
	if (cf->server && cf->ocsp_policy == ARN_TLS_OCSP_MUST_STAPLE && n_st < cf->n_certs) {
		for (size_t i = 0; i < cf->n_certs; i++) {
			char what[160];
			if (!cf->certs[i].ocsp_staple)
				fail(&b,
				     "%s: ocsp_staple_policy is MUST_STAPLE and it has no "
				     "ocsp_staple",
				     cert_name(&cf->certs[i], i, what, sizeof(what)));
		}
		goto bad;
	}
	if (n_st && cf->server) {
		if (!(x->staples = calloc(n_st, sizeof(*x->staples)))) {
			fail(&b, "out of memory");
			goto bad;
		}
		for (size_t i = 0; i < cf->n_certs; i++) {
			char what[160];
			if (cf->certs[i].ocsp_staple &&
			    add_staple(&b, x, &cf->certs[i],
				       cert_name(&cf->certs[i], i, what, sizeof(what))))
				goto bad;
		}
	}

	/* the SSL_CTXs */
	unsigned char sid[SSL_MAX_SID_CTX_LENGTH];
	unsigned sid_len;
	session_context(cf, sid, &sid_len);
	size_t nsc = (size_t)x->replicas * x->n_groups;
	if (!(x->sctx = calloc(nsc, sizeof(*x->sctx)))) {
		fail(&b, "out of memory");
		goto bad;
	}
	/* check each cipher once, on a scratch context */
	if (cf->cipher_suites) {
		SSL_CTX *probe = SSL_CTX_new(TLS_method());
		int r = probe ? check_cipher_list(&b, probe, cf->cipher_suites) : -ENOMEM;
		SSL_CTX_free(probe);
		if (r) {
			if (!b.failed)
				fail(&b, "out of memory");
			goto bad;
		}
	}
	for (unsigned r = 0; r < x->replicas; r++)
		for (unsigned g = 0; g < x->n_groups; g++) {
			const struct group *gr = n_groups ? &groups[g] : NULL;
			x->sctx[r * x->n_groups + g] =
			    make_sslctx(&b, x, gr, sid, sid_len, minv, maxv);
			if (!x->sctx[r * x->n_groups + g])
				goto bad;
		}
	if (cf->n_pins) {
		if (!(x->pins = calloc(cf->n_pins, sizeof(*x->pins)))) {
			fail(&b, "out of memory");
			goto bad;
		}
		for (size_t i = 0; i < cf->n_pins; i++) {
			x->pins[i] = cf->pins[i];
			arn_cfg_pin(cf->pins[i]);
		}
		x->n_pins = cf->n_pins;
	}
	for (size_t i = 0; i < n_groups; i++)
		free_names(groups[i].names, groups[i].n_names);
	free(groups);
	ERR_clear_error();
	ARN_DEBUG(TLS, "%s: %s context built: %u certificate group(s), %u replica(s)", x->name,
		  x->server ? "server" : "client", x->n_groups, x->replicas);
	return x;
bad:
	for (size_t i = 0; i < n_groups; i++)
		free_names(groups[i].names, groups[i].n_names);
	free(groups);
	ctx_free(x);
	ERR_clear_error();
	return NULL;
}

/* ---- references and reclaim ------------------------------------------------------------ */

unsigned arn_tls_reclaim(void)
{
	struct arn_tls_ctx *x = tls_reclaim_take();
	unsigned n = 0;
	while (x) {
		struct arn_tls_ctx *next = x->reclaim_next;
		ctx_free(x);
		x = next;
		n++;
	}
	return n;
}

const char *arn_tls_ctx_name(const struct arn_tls_ctx *x)
{
	return x->name;
}

bool arn_tls_ctx_is_server(const struct arn_tls_ctx *x)
{
	return x->server;
}
