/*
 * lib/tls test harness (see tls_harness.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ocsp.h>
#include <openssl/x509v3.h>

#include "tls_harness.h"

static void die(const char *what)
{
	fprintf(stderr, "tls_harness: %s\n", what);
	ERR_print_errors_fp(stderr);
	abort();
}

/* ---- keys ------------------------------------------------------------------- */

EVP_PKEY *tt_key_new(enum tt_kt kt)
{
	EVP_PKEY *k = NULL;
	switch (kt) {
	case TT_EC:
		k = EVP_EC_gen("P-256");
		break;
	case TT_EC384:
		k = EVP_EC_gen("P-384");
		break;
	case TT_RSA:
		k = EVP_RSA_gen(2048);
		break;
	case TT_RSA1024:
		k = EVP_RSA_gen(1024);
		break;
	case TT_ED25519:
		k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
		break;
	}
	if (!k)
		die("key generation failed");
	return k;
}

EVP_PKEY *tt_key(enum tt_kt kt)
{
	static EVP_PKEY *rsa, *rsa1024;
	EVP_PKEY **slot = kt == TT_RSA ? &rsa : kt == TT_RSA1024 ? &rsa1024 : NULL;
	if (!slot)
		return tt_key_new(kt);
	if (!*slot)
		*slot = tt_key_new(kt);
	EVP_PKEY_up_ref(*slot);
	return *slot;
}

/* ---- certificates ----------------------------------------------------------------- */

static void add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX v3;
	X509V3_set_ctx_nodb(&v3);
	X509V3_set_ctx(&v3, issuer ? issuer : x, x, NULL, NULL, 0);
	X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &v3, nid, value);
	if (!e || !X509_add_ext(x, e, -1))
		die("extension");
	X509_EXTENSION_free(e);
}

X509 *tt_cert(EVP_PKEY *key, const struct tt_cert_opts *o, X509 *issuer, EVP_PKEY *issuer_key)
{
	X509 *x = X509_new();
	if (!x)
		die("X509_new");
	X509_set_version(x, X509_VERSION_3);
	ASN1_INTEGER_set(X509_get_serialNumber(x), o->serial ? o->serial : 1);
	X509_gmtime_adj(X509_getm_notBefore(x),
			(o->not_before_days ? o->not_before_days : -1) * 86400L);
	X509_gmtime_adj(X509_getm_notAfter(x),
			(o->not_after_days ? o->not_after_days : 30) * 86400L);
	X509_set_pubkey(x, key);
	X509_NAME *n = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(n, "O", MBSTRING_ASC, (const unsigned char *)"Arion tests", -1,
				   -1, 0);
	X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)o->cn, -1, -1, 0);
	X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : n);
	if (o->ca) {
		add_ext(x, issuer, NID_basic_constraints, "critical,CA:TRUE");
		add_ext(x, issuer, NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature");
	} else {
		add_ext(x, issuer, NID_basic_constraints, "critical,CA:FALSE");
		add_ext(x, issuer, NID_ext_key_usage, "serverAuth,clientAuth");
	}
	char san[1024] = "";
	size_t l = 0;
	for (size_t i = 0; o->dns && o->dns[i]; i++)
		l +=
		    (size_t)snprintf(san + l, sizeof(san) - l, "%sDNS:%s", l ? "," : "", o->dns[i]);
	if (o->uri)
		l += (size_t)snprintf(san + l, sizeof(san) - l, "%sURI:%s", l ? "," : "", o->uri);
	if (l)
		add_ext(x, issuer, NID_subject_alt_name, san);
	add_ext(x, issuer, NID_subject_key_identifier, "hash");
	if (issuer)
		add_ext(x, issuer, NID_authority_key_identifier, "keyid:always");
	EVP_PKEY *sk = issuer_key ? issuer_key : key;
	const EVP_MD *md = EVP_PKEY_get_base_id(sk) == EVP_PKEY_ED25519 ? NULL : EVP_sha256();
	if (!X509_sign(x, sk, md))
		die("X509_sign");
	return x;
}

X509_STORE *tt_store(X509 *ca)
{
	X509_STORE *s = X509_STORE_new();
	if (!s || X509_STORE_add_cert(s, ca) != 1)
		die("store");
	return s;
}

X509_CRL *tt_crl(X509 *ca, EVP_PKEY *ca_key, const long *serials, size_t n)
{
	X509_CRL *crl = X509_CRL_new();
	X509_CRL_set_version(crl, 1);
	X509_CRL_set_issuer_name(crl, X509_get_subject_name(ca));
	ASN1_TIME *t = X509_gmtime_adj(NULL, -3600);
	X509_CRL_set1_lastUpdate(crl, t);
	X509_gmtime_adj(t, 30 * 86400L);
	X509_CRL_set1_nextUpdate(crl, t);
	for (size_t i = 0; i < n; i++) {
		X509_REVOKED *r = X509_REVOKED_new();
		ASN1_INTEGER *s = ASN1_INTEGER_new();
		ASN1_INTEGER_set(s, serials[i]);
		X509_REVOKED_set_serialNumber(r, s);
		X509_gmtime_adj(t, -60);
		X509_REVOKED_set_revocationDate(r, t);
		X509_CRL_add0_revoked(crl, r);
		ASN1_INTEGER_free(s);
	}
	ASN1_TIME_free(t);
	X509_CRL_sort(crl);
	if (!X509_CRL_sign(crl, ca_key, EVP_sha256()))
		die("CRL sign");
	return crl;
}

uint8_t *tt_ocsp(X509 *cert, X509 *ca, EVP_PKEY *ca_key, long next_update_s, size_t *len)
{
	OCSP_BASICRESP *bs = OCSP_BASICRESP_new();
	OCSP_CERTID *id = OCSP_cert_to_id(EVP_sha1(), cert, ca);
	ASN1_TIME *thisupd = X509_gmtime_adj(NULL, -60);
	ASN1_TIME *nextupd = X509_gmtime_adj(NULL, next_update_s);
	if (!bs || !id ||
	    !OCSP_basic_add1_status(bs, id, V_OCSP_CERTSTATUS_GOOD, 0, NULL, thisupd, nextupd) ||
	    !OCSP_basic_sign(bs, ca, ca_key, EVP_sha256(), NULL, 0))
		die("OCSP response");
	OCSP_RESPONSE *r = OCSP_response_create(OCSP_RESPONSE_STATUS_SUCCESSFUL, bs);
	unsigned char *der = NULL;
	int l = i2d_OCSP_RESPONSE(r, &der);
	if (l <= 0)
		die("OCSP encode");
	uint8_t *out = malloc((size_t)l);
	memcpy(out, der, (size_t)l);
	*len = (size_t)l;
	OPENSSL_free(der);
	OCSP_RESPONSE_free(r);
	OCSP_CERTID_free(id);
	OCSP_BASICRESP_free(bs);
	ASN1_TIME_free(thisupd);
	ASN1_TIME_free(nextupd);
	return out;
}

static struct tt_pki *pki;

struct tt_pki *tt_pki(void)
{
	if (pki)
		return pki;
	struct tt_pki *p = calloc(1, sizeof(*p));
	p->ca_key = tt_key_new(TT_EC);
	p->ca = tt_cert(p->ca_key, &(struct tt_cert_opts){.cn = "Arion Test CA", .ca = true}, NULL,
			NULL);
	p->ca2_key = tt_key_new(TT_EC);
	p->ca2 =
	    tt_cert(p->ca2_key, &(struct tt_cert_opts){.cn = "Rogue CA", .ca = true}, NULL, NULL);
	p->store = tt_store(p->ca);
	static const char *const a_names[] = {"a.example.com", "www.example.com", NULL};
	static const char *const b_names[] = {"*.b.example.com", NULL};
	static const char *const cli_names[] = {"client.example.com", NULL};
	static const char *const evil_names[] = {"evil.example.com", NULL};
	p->srv_ec_key = tt_key_new(TT_EC);
	p->srv_ec =
	    tt_cert(p->srv_ec_key,
		    &(struct tt_cert_opts){.cn = "a.example.com", .dns = a_names, .serial = 10},
		    p->ca, p->ca_key);
	p->srv_rsa_key = tt_key(TT_RSA);
	p->srv_rsa =
	    tt_cert(p->srv_rsa_key,
		    &(struct tt_cert_opts){.cn = "a.example.com", .dns = a_names, .serial = 11},
		    p->ca, p->ca_key);
	p->b_key = tt_key_new(TT_EC);
	p->b_wild = tt_cert(
	    p->b_key, &(struct tt_cert_opts){.cn = "b.example.com", .dns = b_names, .serial = 12},
	    p->ca, p->ca_key);
	p->cli_key = tt_key_new(TT_EC);
	p->cli = tt_cert(p->cli_key,
			 &(struct tt_cert_opts){.cn = "client",
						.dns = cli_names,
						.uri = "spiffe://example.com/client",
						.serial = 20},
			 p->ca, p->ca_key);
	p->evil_key = tt_key_new(TT_EC);
	p->evil = tt_cert(p->evil_key,
			  &(struct tt_cert_opts){.cn = "evil", .dns = evil_names, .serial = 21},
			  p->ca, p->ca_key);
	p->rogue_key = tt_key_new(TT_EC);
	p->rogue = tt_cert(p->rogue_key,
			   &(struct tt_cert_opts){.cn = "client", .dns = cli_names, .serial = 22},
			   p->ca2, p->ca2_key);
	p->rev_key = tt_key_new(TT_EC);
	p->revoked = tt_cert(
	    p->rev_key, &(struct tt_cert_opts){.cn = "client", .dns = cli_names, .serial = 666},
	    p->ca, p->ca_key);
	long rev = 666;
	p->crl = tt_crl(p->ca, p->ca_key, &rev, 1);
	pki = p;
	return p;
}

void tt_pki_free(void)
{
	struct tt_pki *p = pki;
	if (!p)
		return;
	EVP_PKEY *keys[] = {p->ca_key,	p->ca2_key,  p->srv_ec_key, p->srv_rsa_key, p->b_key,
			    p->cli_key, p->evil_key, p->rogue_key,  p->rev_key};
	X509 *certs[] = {p->ca,	 p->ca2,  p->srv_ec, p->srv_rsa, p->b_wild,
			 p->cli, p->evil, p->rogue,  p->revoked};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		EVP_PKEY_free(keys[i]);
	for (size_t i = 0; i < sizeof(certs) / sizeof(certs[0]); i++)
		X509_free(certs[i]);
	X509_STORE_free(p->store);
	X509_CRL_free(p->crl);
	free(p);
	pki = NULL;
}

struct arn_tls_cert tt_tc(X509 *cert, EVP_PKEY *key, const char *name)
{
	return (struct arn_tls_cert){.cert = cert, .key = key, .name = name};
}

/* ---- transport ------------------------------------------------------------------- */

static void q_push(struct tt_queue *q, const void *p, size_t n)
{
	memcpy(q->buf + q->len, p, n);
	q->len += n;
}

static void q_pop(struct tt_queue *q, size_t n)
{
	memmove(q->buf, q->buf + n, q->len - n);
	q->len -= n;
}

static int io_read(void *arg, void *buf, uint32_t len)
{
	struct tt_io *io = arg;
	size_t n = io->in->len < len ? io->in->len : len;
	if (io->read_max && n > io->read_max)
		n = io->read_max;
	memcpy(buf, io->in->buf, n);
	q_pop(io->in, n);
	return (int)n;
}

static int io_write(void *arg, const void *buf, uint32_t len)
{
	struct tt_io *io = arg;
	size_t room = io->out->cap - io->out->len;
	size_t n = len < room ? len : room;
	q_push(io->out, buf, n);
	return (int)n;
}

static uint32_t io_space(void *arg)
{
	struct tt_io *io = arg;
	return (uint32_t)(io->out->cap - io->out->len);
}

static void io_resume(void *arg)
{
	struct tt_io *io = arg;
	io->resumes++;
}

const struct arn_tls_io tt_io_ops = {io_read, io_write, io_space, io_resume};

static void q_init(struct tt_queue *q, size_t cap)
{
	q->cap = cap ? cap : (1u << 20);
	q->len = 0;
	q->buf = malloc(q->cap);
}

void tt_link(struct tt_side *a, struct tt_side *b, size_t cap)
{
	memset(a, 0, sizeof(*a));
	memset(b, 0, sizeof(*b));
	q_init(&a->q_in, cap);
	q_init(&b->q_in, cap);
	a->io = (struct tt_io){.in = &a->q_in, .out = &b->q_in, .owner = a};
	b->io = (struct tt_io){.in = &b->q_in, .out = &a->q_in, .owner = b};
}

void tt_side_free(struct tt_side *s)
{
	arn_tls_conn_free(&s->c);
	free(s->q_in.buf);
	s->q_in.buf = NULL;
}

int tt_start(struct tt_side *s, struct arn_tls_worker *w, struct arn_tls_ctx *ctx,
	     const struct arn_tls_conn_opts *opts)
{
	return arn_tls_conn_init(&s->c, w, ctx, &s->st, &tt_io_ops, &s->io, opts);
}

int tt_handshake(struct tt_side *a, struct tt_side *b, int *which)
{
	int ra = -EAGAIN, rb = -EAGAIN;
	for (int i = 0; i < 64; i++) {
		size_t la = a->q_in.len, lb = b->q_in.len;
		if (ra != 0)
			ra = arn_tls_handshake(&a->c);
		if (rb != 0)
			rb = arn_tls_handshake(&b->c);
		if (ra != 0 && ra != -EAGAIN && ra != -EBUSY) {
			if (which)
				*which = 0;
			return ra;
		}
		if (rb != 0 && rb != -EAGAIN && rb != -EBUSY) {
			if (which)
				*which = 1;
			return rb;
		}
		if (ra == 0 && rb == 0)
			return 0;
		if (la == a->q_in.len && lb == b->q_in.len && i > 4 && ra != -EBUSY && rb != -EBUSY)
			break;
	}
	if (which)
		*which = ra ? 0 : 1;
	return ra ? ra : rb;
}

int tt_exchange(struct tt_side *from, struct tt_side *to, const void *data, size_t len)
{
	const uint8_t *p = data;
	uint8_t *got = malloc(len + 1);
	size_t sent = 0, recvd = 0;
	for (int guard = 0; (sent < len || recvd < len) && guard < 100000; guard++) {
		if (sent < len) {
			ssize_t w = arn_tls_write(&from->c, p + sent, len - sent);
			if (w > 0)
				sent += (size_t)w;
			else if (w != -EAGAIN) {
				free(got);
				return (int)w;
			}
		}
		for (;;) {
			ssize_t r = arn_tls_read(&to->c, got + recvd, len + 1 - recvd);
			if (r > 0) {
				recvd += (size_t)r;
				continue;
			}
			if (r != -EAGAIN) {
				free(got);
				return r ? (int)r : -EPIPE;
			}
			break;
		}
	}
	int ok = recvd == len && memcmp(got, data, len) == 0 ? 0 : -EIO;
	free(got);
	return ok;
}

/* ---- raw OpenSSL peer ------------------------------------------------------------- */

void tt_raw_client(struct tt_raw *r, SSL_CTX *cctx, struct tt_side *srv, size_t cap)
{
	memset(r, 0, sizeof(*r));
	memset(srv, 0, sizeof(*srv));
	q_init(&srv->q_in, cap);
	/* the raw peer's incoming bytes: a queue the server writes into */
	r->from_peer = calloc(1, sizeof(*r->from_peer));
	q_init(r->from_peer, cap);
	r->to_peer = &srv->q_in;
	srv->io = (struct tt_io){.in = &srv->q_in, .out = r->from_peer, .owner = srv};
	r->ssl = SSL_new(cctx);
	r->rb = BIO_new(BIO_s_mem());
	r->wb = BIO_new(BIO_s_mem());
	SSL_set_bio(r->ssl, r->rb, r->wb);
	SSL_set_connect_state(r->ssl);
}

void tt_raw_free(struct tt_raw *r)
{
	SSL_free(r->ssl);
	if (r->from_peer) {
		free(r->from_peer->buf);
		free(r->from_peer);
	}
	memset(r, 0, sizeof(*r));
}

void tt_raw_pump(struct tt_raw *r)
{
	/* the peer's output into our read BIO */
	if (r->from_peer->len) {
		BIO_write(r->rb, r->from_peer->buf, (int)r->from_peer->len);
		r->from_peer->len = 0;
	}
	/* what we wrote, to the peer, as far as its queue takes it */
	char buf[4096];
	for (;;) {
		size_t room = r->to_peer->cap - r->to_peer->len;
		if (!room || BIO_ctrl_pending(r->wb) == 0)
			break;
		int n = BIO_read(r->wb, buf, (int)(room < sizeof(buf) ? room : sizeof(buf)));
		if (n <= 0)
			break;
		q_push(r->to_peer, buf, (size_t)n);
	}
}

int tt_raw_handshake(struct tt_raw *r, struct tt_side *srv, int *srv_err)
{
	int rc = 0, sr = -EAGAIN;
	*srv_err = 0;
	for (int i = 0; i < 64; i++) {
		rc = SSL_do_handshake(r->ssl);
		/* before pumping: writing to its BIO clears the retry flags */
		int ce = rc == 1 ? SSL_ERROR_NONE : SSL_get_error(r->ssl, rc);
		tt_raw_pump(r);
		if (sr != 0)
			sr = arn_tls_handshake(&srv->c);
		tt_raw_pump(r);
		if (sr != 0 && sr != -EAGAIN && sr != -EBUSY) {
			*srv_err = sr;
			/* let the client see the alert */
			SSL_do_handshake(r->ssl);
			return sr;
		}
		if (rc == 1 && sr == 0)
			return 1;
		if (rc <= 0 && ce != SSL_ERROR_WANT_READ && ce != SSL_ERROR_WANT_WRITE) {
			if (getenv("TT_DEBUG")) {
				fprintf(stderr, "raw client: SSL_get_error %d\n", ce);
				ERR_print_errors_fp(stderr);
			}
			/* the client gave up: let the server read its alert */
			tt_raw_pump(r);
			if (sr != 0)
				*srv_err = arn_tls_handshake(&srv->c);
			return rc;
		}
	}
	return rc;
}

SSL_CTX *tt_raw_client_ctx(bool verify, int min_version, int max_version)
{
	SSL_CTX *c = SSL_CTX_new(TLS_client_method());
	if (min_version)
		SSL_CTX_set_min_proto_version(c, min_version);
	if (max_version)
		SSL_CTX_set_max_proto_version(c, max_version);
	if (verify) {
		X509_STORE *s = tt_store(tt_pki()->ca);
		SSL_CTX_set_cert_store(c, s);
		SSL_CTX_set_verify(c, SSL_VERIFY_PEER, NULL);
	}
	return c;
}

/* ---- contexts ------------------------------------------------------------------------- */

struct arn_tls_ctx *tt_server_ctx(const struct arn_tls_cert *certs, size_t n,
				  void (*tweak)(struct arn_tls_ctx_conf *, void *), void *arg)
{
	struct arn_tls_ctx_conf cf = {
	    .name = "test server", .server = true, .certs = certs, .n_certs = n};
	if (tweak)
		tweak(&cf, arg);
	char err[512];
	struct arn_tls_ctx *x = arn_tls_ctx_new(&cf, err, sizeof(err));
	if (!x)
		fprintf(stderr, "tt_server_ctx: %s\n", err);
	return x;
}

struct arn_tls_ctx *tt_client_ctx(void (*tweak)(struct arn_tls_ctx_conf *, void *), void *arg)
{
	struct arn_tls_ctx_conf cf = {.name = "test client", .server = false};
	if (tweak)
		tweak(&cf, arg);
	char err[512];
	struct arn_tls_ctx *x = arn_tls_ctx_new(&cf, err, sizeof(err));
	if (!x)
		fprintf(stderr, "tt_client_ctx: %s\n", err);
	return x;
}
