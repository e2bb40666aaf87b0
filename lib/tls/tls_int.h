/*
 * lib/tls internals. File layout:
 *   tls_hello.c   ClientHello inspection (no OpenSSL)
 *   tls_names.c   server-name index (exact, then longest wildcard) and the
 *                 public SNI map built on it
 *   tls_ctx.c     contexts: SSL_CTX replicas, certificate groups, tickets,
 *                 OCSP staples, ALPN, the callbacks OpenSSL calls
 *   tls_verify.c  peer certificate checks (SAN matchers)
 *   tls_conn.c    connections: the BIO over struct arn_tls_io, handshake,
 *                 read/write, error classification, statistics
 *   tls_worker.c  the handshake budget and deferred queue
 *   tls_stats.c   counter names
 *   tls_cfg.c     lib/config's model -> struct arn_tls_ctx_conf
 *   tls_mem.c     OpenSSL allocation accounting (measurement)
 */
#ifndef TLS_INT_H
#define TLS_INT_H

#include <stdint.h>
#include <time.h>

#include "arn_tls.h"

/* Single-writer counters: a plain add, stored so that readers on another
 * thread see whole values (as arn_stats_add). */
static inline void tls_add(uint64_t *p, uint64_t n)
{
	__atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}
static inline void tls_inc(uint64_t *p)
{
	tls_add(p, 1);
}

/* ---- tls_names.c ---------------------------------------------------------- */

struct tls_name {
	char *pat; /* lower case; a wildcard is stored as its suffix ".example.com" */
	uint32_t len;
	int idx;
};

/* Server names -> an index (a certificate group, a context). */
struct tls_names {
	struct tls_name *exact, *wild;
	size_t n_exact, n_wild, cap_exact, cap_wild;
};

/* Add @p name (exact, or "*.suffix") for @p idx. @p keep_first: a name
 * already present keeps its index (no error). @return 0, -EEXIST (a
 * duplicate and !keep_first), -EINVAL (bad name), -ENOMEM. */
int tls_names_add(struct tls_names *t, const char *name, size_t len, int idx, bool keep_first);
/* Sort for lookups (after the last add). */
void tls_names_seal(struct tls_names *t);
/* The index for @p name: an exact entry, else the longest wildcard suffix
 * (with @p single_label, only a wildcard standing for the first label, as a
 * certificate's "*.example.com" does), else -1. */
int tls_names_lookup(const struct tls_names *t, const char *name, size_t len, bool single_label);
void tls_names_free(struct tls_names *t);

/* ---- tls_ctx.c ------------------------------------------------------------- */

struct ssl_ctx_st;

/* An OCSP staple for one certificate. */
struct tls_staple {
	struct x509_st *cert; /* the leaf it is for (one reference) */
	uint8_t *der;
	size_t len;
	int64_t next_update; /* unix seconds; 0: none given */
};

struct arn_tls_ctx {
	uint32_t refs; /* atomic */
	struct arn_tls_ctx *reclaim_next;
	char *name;
	bool server;
	bool require_sni;
	bool verify;	   /* a trusted CA was given */
	int32_t max_depth; /* max_verify_depth as Envoy counts it; -1: none */
	uint8_t ocsp_policy;
	unsigned replicas;
	unsigned n_groups;
	struct ssl_ctx_st **sctx; /* [replicas * n_groups]: sctx[r * n_groups + g] */
	struct tls_names names;	  /* server: name -> certificate group */
	struct tls_staple *staples;
	size_t n_staples;
	uint8_t *alpn; /* wire format (length-prefixed names) */
	size_t alpn_len;
	uint8_t *tkeys; /* n_tkeys * ARN_TLS_TICKET_KEY_LEN */
	size_t n_tkeys;
	struct arn_cfg_str_match *san;
	size_t n_san;
	const void **pins;
	size_t n_pins;
	char *sni; /* client */
};

/* The SSL_CTX a connection on replica @p r starts with. */
static inline struct ssl_ctx_st *tls_ctx_sctx(const struct arn_tls_ctx *x, unsigned r, unsigned g)
{
	return x->sctx[(r % x->replicas) * x->n_groups + g];
}

/* The BIO method (made once by tls_global_init). */
struct bio_method_st;
extern struct bio_method_st *tls_bio_method;
/* One-time set-up of process-wide OpenSSL objects (control lcore, before
 * the first context). @return 0, -ENOMEM. */
int tls_global_init(void);

struct x509_store_ctx_st;

/* ---- tls_verify.c ---------------------------------------------------------- */

/* OpenSSL's verify callback for every context that verifies. */
int tls_verify_cb(int ok, struct x509_store_ctx_st *xs);
/* True when a subject alt name of @p leaf matches one of @p m. */
bool tls_san_match(const struct arn_cfg_str_match *m, size_t n, struct x509_st *leaf);

/* ---- tls_conn.c ------------------------------------------------------------ */

/* Info callback (alerts, renegotiation attempts), set on every SSL_CTX. */
void tls_info_cb(const struct ssl_st *ssl, int where, int ret);
/* Message callback (the peer's KeyUpdates counted), set on every SSL_CTX. */
void tls_msg_cb(int write_p, int version, int content_type, const void *buf, size_t len,
		struct ssl_st *ssl, void *arg);
/* tls_hooks.c: the BIO method over struct arn_tls_io, made once */
int tls_bio_create_method(void);
/* tls_ref.c: the contexts whose last reference went, to free (a list
 * through reclaim_next) */
struct arn_tls_ctx *tls_reclaim_take(void);

/* ---- tls_worker.c ---------------------------------------------------------- */

void tls_worker_defer(struct arn_tls_worker *w, struct arn_tls_conn *c);
void tls_worker_undefer(struct arn_tls_worker *w, struct arn_tls_conn *c);

#endif
