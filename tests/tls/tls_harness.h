/*
 * Test harness for lib/tls: certificates, CRLs and OCSP responses made at
 * run time with OpenSSL's API (nothing on disk, nothing that expires
 * between runs), an in-memory transport (two bounded byte queues standing
 * for TCP), and drivers that run a handshake between two lib/tls
 * connections or between one and a plain OpenSSL SSL.
 */
#ifndef TLS_HARNESS_H
#define TLS_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/ocsp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "arn_tls.h"

/* ---- keys and certificates ------------------------------------------------ */

enum tt_kt { TT_EC = 0, TT_RSA, TT_ED25519, TT_RSA1024, TT_EC384 };

/* A fresh key (RSA keys are made once per type and handed out again: they
 * cost a tenth of a second each). The caller owns a reference. */
EVP_PKEY *tt_key(enum tt_kt kt);
EVP_PKEY *tt_key_new(enum tt_kt kt);

struct tt_cert_opts {
	const char *cn;
	const char *const *dns; /* subject alt names, NULL-terminated */
	const char *uri;	/* one URI SAN, or NULL */
	bool ca;
	long serial;
	long not_before_days; /* relative to now */
	long not_after_days;  /* 0: 30 */
};

/* A certificate for @p key, signed by @p issuer / @p issuer_key (NULL:
 * self-signed). The caller owns it. */
X509 *tt_cert(EVP_PKEY *key, const struct tt_cert_opts *o, X509 *issuer, EVP_PKEY *issuer_key);

/* A CA, a store trusting it, and a CRL revoking @p n serials. */
X509_STORE *tt_store(X509 *ca);
X509_CRL *tt_crl(X509 *ca, EVP_PKEY *ca_key, const long *serials, size_t n);
/* A DER OCSP response (good) for @p cert issued by @p ca; *len set; malloc'd. */
uint8_t *tt_ocsp(X509 *cert, X509 *ca, EVP_PKEY *ca_key, long next_update_s, size_t *len);

/* The test PKI: one CA, server certificates, client certificates. */
struct tt_pki {
	EVP_PKEY *ca_key, *ca2_key;
	X509 *ca, *ca2; /* ca2: a CA nobody trusts */
	X509_STORE *store;
	EVP_PKEY *srv_ec_key, *srv_rsa_key, *b_key, *cli_key, *evil_key, *rogue_key, *rev_key;
	X509 *srv_ec;  /* a.example.com, www.example.com (ECDSA) */
	X509 *srv_rsa; /* a.example.com, www.example.com (RSA) */
	X509 *b_wild;  /* *.b.example.com (ECDSA) */
	X509 *cli;     /* client.example.com, URI spiffe://example.com/client */
	X509 *evil;    /* evil.example.com, signed by the CA */
	X509 *rogue;   /* client.example.com, signed by ca2 */
	X509 *revoked; /* client.example.com, serial 666, revoked by crl */
	X509_CRL *crl;
};

/* Made once, on first use; freed by tt_pki_free (tests' teardown). */
struct tt_pki *tt_pki(void);
void tt_pki_free(void);

/* ---- the in-memory transport ------------------------------------------------- */

struct tt_queue {
	uint8_t *buf;
	size_t len, cap;
};

/* One side's view: it reads @p in and writes @p out. */
struct tt_io {
	struct tt_queue *in, *out;
	uint32_t read_max; /* bytes one read may return (0: any): segment boundaries */
	int resumes;	   /* io->resume calls */
	void *owner;	   /* struct tt_side */
};

extern const struct arn_tls_io tt_io_ops;

struct tt_side {
	struct arn_tls_conn c;
	struct tt_io io;
	struct tt_queue q_in; /* what this side receives */
	struct arn_tls_stats st;
};

/* A connected pair: @p a and @p b exchange through each other's q_in,
 * each queue bounded to @p cap bytes (0: 1 MiB). */
void tt_link(struct tt_side *a, struct tt_side *b, size_t cap);
void tt_side_free(struct tt_side *s); /* conn and queue */

/* Start side @p s on worker @p w with @p ctx (opts may be NULL). */
int tt_start(struct tt_side *s, struct arn_tls_worker *w, struct arn_tls_ctx *ctx,
	     const struct arn_tls_conn_opts *opts);

/* Run both handshakes until both are open, or one fails, or nothing moves.
 * @return 0 (both open), or the first error seen (*which: 0 a, 1 b). */
int tt_handshake(struct tt_side *a, struct tt_side *b, int *which);

/* Send @p len bytes from @p from to @p to and read them back; @return 0 if
 * they arrived intact. */
int tt_exchange(struct tt_side *from, struct tt_side *to, const void *data, size_t len);

/* ---- a plain OpenSSL peer over the same transport ---------------------------------- */

struct tt_raw {
	SSL *ssl;
	BIO *rb, *wb;		  /* memory BIOs: what it reads, what it wrote */
	struct tt_queue *to_peer; /* where its output goes (the lib/tls side's q_in) */
	struct tt_queue *from_peer;
};

/* A raw client on @p cctx talking to @p srv (whose output it reads). */
void tt_raw_client(struct tt_raw *r, SSL_CTX *cctx, struct tt_side *srv, size_t cap);
void tt_raw_free(struct tt_raw *r);
/* Move bytes both ways between the raw peer's BIOs and the queues. */
void tt_raw_pump(struct tt_raw *r);
/* Drive a raw client and a lib/tls server to the end of their handshakes.
 * @return 1: both done; otherwise SSL_do_handshake's result, or the
 * server's error (< 0, *srv_err). */
int tt_raw_handshake(struct tt_raw *r, struct tt_side *srv, int *srv_err);

/* A plain OpenSSL client context trusting the test CA (verify on/off). */
SSL_CTX *tt_raw_client_ctx(bool verify, int min_version, int max_version);

/* ---- contexts ----------------------------------------------------------------------- */

/* A server context with @p n certificates (NULL-terminated lists allowed
 * via n = count) and the defaults; more settings through @p tweak. */
struct arn_tls_ctx *tt_server_ctx(const struct arn_tls_cert *certs, size_t n,
				  void (*tweak)(struct arn_tls_ctx_conf *, void *), void *arg);
struct arn_tls_ctx *tt_client_ctx(void (*tweak)(struct arn_tls_ctx_conf *, void *), void *arg);

/* A certificate entry for pki objects. */
struct arn_tls_cert tt_tc(X509 *cert, EVP_PKEY *key, const char *name);

#endif
