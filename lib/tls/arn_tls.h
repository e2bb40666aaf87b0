/*
 * lib/tls: TLS over Arion's user-space TCP byte stream, with OpenSSL 3.0.
 *
 * Four parts, each usable alone:
 *
 *   1. ClientHello inspection (the tls_inspector listener filter's core): a
 *      resumable parser over the first bytes of a connection that reads SNI,
 *      ALPN, supported_versions and signature_algorithms without consuming
 *      anything. No OpenSSL, no allocation.
 *   2. Contexts (struct arn_tls_ctx): built on the control lcore from a
 *      struct arn_tls_ctx_conf (arn_tls_ctx_conf_from_cfg() fills one from
 *      lib/config's model), immutable afterwards, reference counted, shared
 *      read-only by workers. A Secret update builds a new context; a
 *      connection keeps the one it started with.
 *   3. Connections (struct arn_tls_conn): an OpenSSL SSL object over a BIO
 *      that pulls ciphertext from, and pushes ciphertext to, the caller's
 *      transport through struct arn_tls_io (for Arion: arn_tcp_read and
 *      arn_tcp_write). Server and client side.
 *   4. Workers (struct arn_tls_worker): per worker lcore, the handshake
 *      budget (how many handshake steps one loop iteration may run) and the
 *      queue of handshakes deferred to the next iteration.
 *
 * Threading: contexts, SNI maps and arn_tls_reclaim() belong to the control
 * lcore; a context is read by any number of workers at once (each worker
 * uses its own replica of the OpenSSL SSL_CTX, see arn_tls_ctx_conf.replicas,
 * so that workers do not share even OpenSSL's reference counts and
 * statistics). A connection, its worker struct and its statistics block
 * belong to one worker lcore for their whole life and are not thread-safe.
 * Nothing here blocks, sleeps, locks (OpenSSL 3.0 itself still takes a few
 * internal read locks: see docs/tls.md) or makes a system call.
 *
 * Memory: lib/tls allocates nothing per connection itself: struct
 * arn_tls_conn is embedded in the caller's connection object. OpenSSL
 * allocates the SSL object and its record buffers with malloc (glibc's
 * per-thread arena); handshake buffers are released when the handshake ends
 * and record buffers whenever they are empty (SSL_MODE_RELEASE_BUFFERS), so
 * an idle connection holds only its SSL object and session (docs/tls.md
 * states the measured numbers; arn_tls_mem_* measures them).
 *
 * Errors: functions return 0 or a byte count, or a negative errno:
 *   -EAGAIN       more ciphertext is needed (or the transport's send buffer is
 *                 full: arn_tls_want_write() says so; call again once writable)
 *   -EBUSY        the handshake was deferred by the worker's budget; the
 *                 worker calls io->resume() in a later iteration
 *   -EPROTO       TLS protocol error: the peer sent something invalid or
 *                 nothing both sides support (a fatal alert was sent)
 *   -EACCES       the peer's certificate was refused (missing, untrusted,
 *                 revoked, SAN mismatch); the alert was sent
 *   -ECONNABORTED the peer sent a fatal alert (arn_tls_alert_received()),
 *                 or close_notify before the handshake completed
 *   -EPIPE        the transport ended without close_notify (truncation), or
 *                 write after shutdown
 *   -ENOTCONN     the handshake has not completed (arn_tls_write)
 *   -EIO          the transport failed (io->write returned an error)
 *   -ENOMEM       OpenSSL could not allocate
 * After an error other than -EAGAIN / -EBUSY the connection is dead: every
 * later call returns the same error; free it and close the transport.
 */
#ifndef ARN_TLS_H
#define ARN_TLS_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/** Parsers return this when they took all of their input and need more. */
#ifndef ARN_AGAIN
#define ARN_AGAIN (-EAGAIN)
#endif

/* OpenSSL and lib/config types, opaque here so that users need not include
 * OpenSSL (the same forward declarations as arn_config_model.h). */
struct x509_st;
struct evp_pkey_st;
struct stack_st_X509;
struct stack_st_X509_CRL;
struct x509_store_st;
struct ssl_session_st;
struct ssl_st;
struct arn_cfg_str_match;

/* ===========================================================================
 * 1. ClientHello inspection
 *
 * The listener feeds the first bytes of a connection, in order, as they
 * arrive (any split, down to one byte per call), without consuming them from
 * TCP: the TLS handshake reads the same bytes again afterwards. The parser
 * needs the whole ClientHello message (extensions come last), which may span
 * several TLS records (any number of them, down to one byte each, as
 * BoringSSL and OpenSSL take it). It reads at most max_hello bytes, record
 * headers included, as Envoy's max_client_hello_size counts them: a
 * ClientHello that needs more is ARN_TLS_HELLO_TOO_LARGE (decided as soon
 * as its declared length and the record headers seen exceed the bound),
 * which Envoy's tls_inspector counts as client_hello_too_large and closes
 * on. How long it waits in time is the listener's business (Envoy's
 * listener_filters_timeout).
 *
 * Anything that is not a well-formed TLS ClientHello (another first byte, a
 * bad record header, lengths that disagree, a duplicate extension among
 * those read here, an empty ALPN name, a NUL in the server name) is
 * ARN_TLS_HELLO_NOT_TLS: Envoy's tls_inspector then carries on with
 * transport_protocol "raw_buffer" (tls_not_found), and so should the caller.
 * The parser never reads past the bytes it is given and keeps nothing but
 * its own fields (values that cross a call are copied into them), so the
 * caller may reuse its buffers between calls.
 * ========================================================================= */

/** Sessions a server SSL_CTX replica caches (per worker); the oldest goes first. */
#define ARN_TLS_SESSION_CACHE 1024u
/** TLS 1.3 KeyUpdates a connection reads in a row, without application
 * data between them; one more fails it (BoringSSL's kMaxKeyUpdates, so
 * Envoy's bound: each costs a key derivation, and one read would
 * otherwise go through as many as the receive queue holds). */
#define ARN_TLS_MAX_KEY_UPDATES 32u
#define ARN_TLS_HELLO_DEFAULT_MAX 16384u /* Envoy's former default, 16 KiB */
#define ARN_TLS_HELLO_HARD_MAX 65536u	 /* Envoy's TLS_MAX_CLIENT_HELLO */
#define ARN_TLS_HELLO_SNI_MAX 255u	 /* longer host names are NOT_TLS (OpenSSL refuses them) */
#define ARN_TLS_HELLO_MAX_ALPN 16u	 /* protocols kept; more set alpn_truncated */
#define ARN_TLS_HELLO_ALPN_BYTES 256u	 /* bytes of protocol names kept */
#define ARN_TLS_HELLO_MAX_VERSIONS 16u	 /* supported_versions entries kept */
#define ARN_TLS_HELLO_MAX_SIGALGS 64u	 /* signature_algorithms entries kept */

enum arn_tls_hello_status {
	ARN_TLS_HELLO_AGAIN = 0, /* undecided: feed more bytes */
	ARN_TLS_HELLO_DONE,	 /* a whole ClientHello was read: arn_tls_hello_result() */
	ARN_TLS_HELLO_NOT_TLS,	 /* not a (well-formed) TLS ClientHello: plain text */
	ARN_TLS_HELLO_TOO_LARGE, /* needs more than max_hello bytes read: close */
};

/** What a ClientHello said. Strings are NUL-terminated copies. */
struct arn_tls_hello {
	uint16_t record_version; /* of the first record (0x0301 for most clients) */
	uint16_t legacy_version; /* ClientHello.legacy_version (0x0303 for TLS 1.2 and 1.3) */
	bool has_sni;		 /* a server_name extension with a host_name */
	bool has_alpn;
	bool has_versions; /* supported_versions present (a TLS 1.3 client) */
	bool has_sigalgs;
	bool alpn_truncated; /* more protocols than kept: the first ones are here */
	bool sigalgs_truncated;
	bool versions_truncated;
	uint8_t sni_len;
	uint8_t n_alpn;
	uint8_t n_versions;
	uint8_t n_sigalgs;
	char sni[ARN_TLS_HELLO_SNI_MAX + 1]; /* as sent (not lower-cased) */
	uint16_t alpn_off[ARN_TLS_HELLO_MAX_ALPN];
	uint8_t alpn_len[ARN_TLS_HELLO_MAX_ALPN];
	char alpn_buf[ARN_TLS_HELLO_ALPN_BYTES + ARN_TLS_HELLO_MAX_ALPN]; /* NUL after each */
	uint16_t versions[ARN_TLS_HELLO_MAX_VERSIONS]; /* in the client's order */
	uint16_t sigalgs[ARN_TLS_HELLO_MAX_SIGALGS];   /* in the client's order */
	uint32_t hello_len; /* the ClientHello message, handshake header included */
};

/** The parser; the caller owns it (816 bytes: keep it only while inspecting). */
struct arn_tls_hello_parser {
	/* private */
	uint32_t max_hello;
	uint32_t fed;	  /* bytes taken so far */
	uint32_t rec_rem; /* payload bytes left in the current record */
	uint32_t n_records;
	uint8_t rec_hdr[5];
	uint8_t rec_hdr_n;
	uint8_t status;	   /* enum arn_tls_hello_status */
	uint8_t st;	   /* ClientHello state */
	uint8_t depth;	   /* nested length containers in use */
	uint8_t seen;	   /* extensions read here, for duplicates */
	uint8_t name_type; /* server_name entry being read */
	uint16_t ext_type;
	uint16_t alpn_used; /* bytes of alpn_buf used */
	uint32_t need;	    /* bytes left in the current field */
	uint32_t acc;	    /* big-endian integer being read */
	uint32_t rem[4];    /* bytes left in each container: message, extensions, extension, list */
	uint32_t body_seen; /* handshake bytes taken (header included) */
	struct arn_tls_hello h;
};

/** Start (or restart) inspecting a connection. @p max_hello: 0 for
 * ARN_TLS_HELLO_DEFAULT_MAX; values above ARN_TLS_HELLO_HARD_MAX are capped. */
void arn_tls_hello_init(struct arn_tls_hello_parser *p, uint32_t max_hello);

/**
 * Feed the next @p len bytes of the connection (those after every byte fed
 * before). Reads exactly @p len bytes of @p buf, keeps no pointer into it.
 * @return ARN_TLS_HELLO_AGAIN: feed more; any other status is final and is
 *   returned again by every later call (bytes after the ClientHello are not
 *   looked at).
 */
enum arn_tls_hello_status arn_tls_hello_parse(struct arn_tls_hello_parser *p, const void *buf,
					      size_t len);

/** Bytes taken so far (the caller feeds from this offset of its queue). */
static inline uint32_t arn_tls_hello_fed(const struct arn_tls_hello_parser *p)
{
	return p->fed;
}

/** The result: complete after ARN_TLS_HELLO_DONE, owned by @p p. */
static inline const struct arn_tls_hello *arn_tls_hello_result(const struct arn_tls_hello_parser *p)
{
	return &p->h;
}

/** Protocol @p i (< n_alpn) of @p h, NUL-terminated. */
static inline const char *arn_tls_hello_alpn(const struct arn_tls_hello *h, unsigned i)
{
	return h->alpn_buf + h->alpn_off[i];
}

/**
 * Parse the body of a server_name extension (as OpenSSL's
 * SSL_client_hello_get0_ext returns it) for its host_name.
 * @return the name's length (1 .. ARN_TLS_HELLO_SNI_MAX) with *@p name
 *   pointing into @p ext, or -EINVAL (malformed, no host_name, too long,
 *   contains a NUL).
 */
int arn_tls_sni_from_ext(const uint8_t *ext, size_t len, const uint8_t **name);

/* ===========================================================================
 * Statistics, with Envoy's names.
 *
 * struct arn_tls_stats is one block of counters with Envoy's ssl.* names, as
 * Envoy keeps them per listener (listener.<address>.ssl.*) and per cluster
 * (cluster.<name>.ssl.*). The caller owns one block per worker per scope and
 * passes it to each connection; the block outlives context rotations, so a
 * Secret update does not reset counters. Exactly one worker writes a block
 * (plain relaxed stores); any thread may read it (arn_tls_stats_read).
 *
 * Besides the fixed counters (arn_tls_stats.def) there is one counter per
 * negotiated cipher, curve, version and peer signature algorithm, named as
 * Envoy names them (ssl.ciphers.ECDHE-RSA-AES128-GCM-SHA256,
 * ssl.curves.X25519, ssl.versions.TLSv1.3, ssl.sigalgs.rsa_pss_rsae_sha256)
 * from the fixed lists in arn_tls_names.def; a value outside them counts
 * under Envoy's fallback names (ssl.ciphers.unknown_ssl_cipher, ...).
 *
 * The tls_inspector's counters (arn_tls_inspector_stats.def, Envoy's
 * tls_inspector.* names under the listener's scope) and the per-worker
 * counters (arn_tls_worker_counters.def: the handshake budget) are separate
 * blocks.
 * ========================================================================= */

enum arn_tls_stat {
#define ARN_TLS_STAT(id, name, help) ARN_TLS_S_##id,
#include "arn_tls_stats.def"
#undef ARN_TLS_STAT
#define ARN_TLS_CIPHER(id, iana, name) ARN_TLS_S_CIPHER_##id,
#define ARN_TLS_CURVE(id, nid, name)
#define ARN_TLS_VERSION(id, v, name)
#define ARN_TLS_SIGALG(id, type, md, name)
#include "arn_tls_names.def"
#undef ARN_TLS_CIPHER
#undef ARN_TLS_CURVE
#undef ARN_TLS_VERSION
#undef ARN_TLS_SIGALG
#define ARN_TLS_CIPHER(id, iana, name)
#define ARN_TLS_CURVE(id, nid, name) ARN_TLS_S_CURVE_##id,
#define ARN_TLS_VERSION(id, v, name)
#define ARN_TLS_SIGALG(id, type, md, name)
#include "arn_tls_names.def"
#undef ARN_TLS_CIPHER
#undef ARN_TLS_CURVE
#undef ARN_TLS_VERSION
#undef ARN_TLS_SIGALG
#define ARN_TLS_CIPHER(id, iana, name)
#define ARN_TLS_CURVE(id, nid, name)
#define ARN_TLS_VERSION(id, v, name) ARN_TLS_S_VERSION_##id,
#define ARN_TLS_SIGALG(id, type, md, name)
#include "arn_tls_names.def"
#undef ARN_TLS_CIPHER
#undef ARN_TLS_CURVE
#undef ARN_TLS_VERSION
#undef ARN_TLS_SIGALG
#define ARN_TLS_CIPHER(id, iana, name)
#define ARN_TLS_CURVE(id, nid, name)
#define ARN_TLS_VERSION(id, v, name)
#define ARN_TLS_SIGALG(id, type, md, name) ARN_TLS_S_SIGALG_##id,
#include "arn_tls_names.def"
#undef ARN_TLS_CIPHER
#undef ARN_TLS_CURVE
#undef ARN_TLS_VERSION
#undef ARN_TLS_SIGALG
	ARN_TLS_S_COUNT,
};

/** One scope's ssl.* counters on one worker (caller-owned, zero it first). */
struct arn_tls_stats {
	uint64_t v[ARN_TLS_S_COUNT];
};

/** Envoy's name of @p id without the scope ("ssl.handshake",
 * "ssl.ciphers.TLS_AES_128_GCM_SHA256"), and its help text. */
const char *arn_tls_stat_name(enum arn_tls_stat id);
const char *arn_tls_stat_help(enum arn_tls_stat id);

/** Copy @p s into @p out[ARN_TLS_S_COUNT] (any thread; each value is one
 * 64-bit load, the set is not atomic). */
void arn_tls_stats_read(const struct arn_tls_stats *s, uint64_t *out);

enum arn_tls_inspector_stat {
#define ARN_TLS_INSPECTOR_STAT(id, name, help) ARN_TLS_I_##id,
#include "arn_tls_inspector_stats.def"
#undef ARN_TLS_INSPECTOR_STAT
	ARN_TLS_I_COUNT,
};

/** One listener's tls_inspector.* counters on one worker. */
struct arn_tls_inspector_stats {
	uint64_t v[ARN_TLS_I_COUNT];
};

const char *arn_tls_inspector_stat_name(enum arn_tls_inspector_stat id);
const char *arn_tls_inspector_stat_help(enum arn_tls_inspector_stat id);

/** Count a final inspection outcome as Envoy's tls_inspector does
 * (tls_found / tls_not_found / client_hello_too_large, sni_found /
 * sni_not_found, alpn_found / alpn_not_found). */
void arn_tls_inspector_count(struct arn_tls_inspector_stats *s, enum arn_tls_hello_status st,
			     const struct arn_tls_hello *h);

/* ===========================================================================
 * 2. Contexts
 * ========================================================================= */

/** One certificate with its key (a TLS_CERT Secret). */
struct arn_tls_cert {
	struct x509_st *cert;	     /* leaf */
	struct stack_st_X509 *chain; /* intermediates, or NULL */
	struct evp_pkey_st *key;     /* must match cert */
	const uint8_t *ocsp_staple;  /* DER OCSPResponse (TlsCertificate.ocsp_staple), or NULL */
	size_t ocsp_staple_len;
	const char *name; /* the Secret's name, for errors ("web-cert") */
};

/** DownstreamTlsContext.ocsp_staple_policy. */
enum arn_tls_ocsp_policy {
	ARN_TLS_OCSP_LENIENT = 0, /* LENIENT_STAPLING: staple when there is a valid response */
	ARN_TLS_OCSP_STRICT,	  /* STRICT_STAPLING: fail if a response exists but expired */
	ARN_TLS_OCSP_MUST_STAPLE, /* MUST_STAPLE: every certificate needs a valid response */
};

/** Session ticket key, Envoy's TlsSessionTicketKeys format: name (16),
 * HMAC-SHA256 key (32), AES-256-CBC key (32). */
#define ARN_TLS_TICKET_KEY_LEN 80u

/* Envoy's defaults (ServerContextConfigImpl / ClientContextConfigImpl,
 * non-FIPS), in OpenSSL's syntax: OpenSSL has no equal-preference groups
 * ("[A|B]"), so each pair is written in order and SSL_OP_PRIORITIZE_CHACHA
 * lets a client that prefers ChaCha20 have it, which is what BoringSSL's
 * groups achieve. TLS 1.3 suites are not configurable in Envoy; ours are
 * BoringSSL's order. */
#define ARN_TLS_DEFAULT_CIPHERS                                                                    \
	"ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-CHACHA20-POLY1305:"                             \
	"ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-CHACHA20-POLY1305:"                                 \
	"ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384"
#define ARN_TLS_DEFAULT_CIPHERSUITES_13                                                            \
	"TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"
#define ARN_TLS_DEFAULT_CURVES "X25519:P-256"

/**
 * What a context is built from: DownstreamTlsContext (server) or
 * UpstreamTlsContext (client) with its Secrets resolved. Zero-initialise
 * and fill; every pointer is borrowed for the duration of arn_tls_ctx_new()
 * only, except @p san_matchers, which the context keeps: pin their owner
 * through @p pins.
 */
struct arn_tls_ctx_conf {
	const char *name; /* where it comes from, for errors and logs */
	bool quiet;	  /* a failure is not logged: the caller reports it */
	bool server;
	/* Certificates: a server needs at least one; a client uses the first
	 * (Envoy: one client certificate). Several server certificates: at
	 * most one per key type (RSA, ECDSA, Ed25519) for a given set of
	 * names; the client's signature algorithms choose among key types,
	 * its SNI among names (exact, then wildcard; else the first). */
	const struct arn_tls_cert *certs;
	size_t n_certs;
	/* Validation (CertificateValidationContext): NULL trusted_ca means no
	 * validation (a server then asks for no client certificate; a client
	 * accepts any server certificate, as Envoy does), and then no SAN
	 * matchers either (refused: Envoy's "SAN-based verification of peer
	 * certificates without trusted CA is insecure"). The CAs are copied. */
	struct x509_store_st *trusted_ca;
	struct stack_st_X509_CRL *crls;		      /* checked for the whole chain, or NULL */
	const struct arn_cfg_str_match *san_matchers; /* match_subject_alt_names (any SAN type) */
	size_t n_san_matchers;
	/* the validation Secret's matchers: Envoy merges a
	 * combined_validation_context's default and dynamic parts */
	const struct arn_cfg_str_match *more_san_matchers;
	size_t n_more_san_matchers;
	/* CertificateValidationContext.max_verify_depth, counted as Envoy
	 * counts it: the certificates after the leaf, the trust anchor
	 * included (1: the leaf and one CA; 0: only a leaf that is itself
	 * trusted). OpenSSL 3.0's own depth leaves the trust anchor out.
	 * Only when has_max_verify_depth; else 100, as Envoy. */
	bool has_max_verify_depth;
	uint32_t max_verify_depth;
	bool require_client_certificate;
	bool require_sni;
	/* tls_params: 0 means Envoy's default (TLS 1.2 .. TLS 1.3); NULL
	 * lists mean ARN_TLS_DEFAULT_CIPHERS / ARN_TLS_DEFAULT_CURVES. */
	uint16_t min_version, max_version; /* TLS1_2_VERSION (0x0303) etc. */
	const char *cipher_suites;	   /* OpenSSL list for TLS <= 1.2, ':'-joined */
	const char *ecdh_curves;	   /* ':'-joined, OpenSSL names (P-256, X25519) */
	/* alpn_protocols: a server picks the first of its list that the
	 * client offers (none in common: no ALPN); a client offers them. */
	const char *const *alpn;
	size_t n_alpn;
	const char *sni; /* client: UpstreamTlsContext.sni, or NULL */
	/* Session resumption (server): stateless tickets encrypted with the
	 * first key, any key decrypts (a ticket under an older key is renewed).
	 * No keys: one random key per process, shared by every such context.
	 * Sessions are also cached server-side, per replica (so per worker,
	 * never a contended lock), at most ARN_TLS_SESSION_CACHE each, oldest
	 * evicted: TLS 1.2 clients that send no ticket resume by session id
	 * on the worker that saw them. */
	const uint8_t *ticket_keys; /* n_ticket_keys * ARN_TLS_TICKET_KEY_LEN bytes */
	size_t n_ticket_keys;
	bool disable_stateless_resumption;
	uint32_t session_timeout_s; /* 0: 7200 (BoringSSL's and OpenSSL's) */
	uint8_t ocsp_policy;	    /* enum arn_tls_ocsp_policy */
	/* OpenSSL SSL_CTX replicas: connections on worker w use replica
	 * w % replicas. One per worker keeps workers from sharing the
	 * SSL_CTX's reference count and statistics cache lines; 0 means 1. */
	unsigned replicas;
	/* lib/config objects (struct arn_cfg_obj) pinned for the context's
	 * life: the owners of san_matchers. */
	const void *const *pins;
	size_t n_pins;
};

struct arn_tls_ctx;

/**
 * Build a context (control lcore). Checks every certificate against its key
 * and the lists against OpenSSL, so that a bad Secret is refused here, by
 * name, never at handshake time.
 * @return the context with one reference, or NULL with the reason (naming
 *   the certificate or field) in @p err (@p errlen bytes, may be 0) and in
 *   the log.
 */
struct arn_tls_ctx *arn_tls_ctx_new(const struct arn_tls_ctx_conf *conf, char *err, size_t errlen);

/** Take a reference (any thread; one atomic add). */
void arn_tls_ctx_ref(struct arn_tls_ctx *ctx);

/**
 * Drop a reference (any thread). The last one queues the context for
 * arn_tls_reclaim(), which frees it on the control lcore: a worker never
 * frees a context. NULL is a no-op.
 */
void arn_tls_ctx_unref(struct arn_tls_ctx *ctx);

/** Free the contexts whose last reference went (control lcore).
 * @return how many were freed. */
unsigned arn_tls_reclaim(void);

/** The name given in the configuration. */
const char *arn_tls_ctx_name(const struct arn_tls_ctx *ctx);
bool arn_tls_ctx_is_server(const struct arn_tls_ctx *ctx);

struct arn_cfg_tls;
struct arn_cfg_secret;

/**
 * Fill @p out from lib/config's model: @p t (a filter chain's or a
 * cluster's arn_cfg_tls, @p server for a DownstreamTlsContext) owned by
 * @p owner (the arn_cfg_listener or arn_cfg_cluster, pinned for the
 * context's life because the context keeps @p t's SAN matchers), the
 * TLS_CERT secrets its cert_secrets name, resolved in order (@p certs_out
 * has room for @p n_certs; their OCSP staples come along), its validation
 * secret (or NULL, pinned too; its CRLs and max_verify_depth come along)
 * and the session_ticket_keys secret its ticket_keys_secret names (or
 * NULL; a server only). @p pins_out has room for 2. Pointers in @p out
 * point into the arguments (arn_tls_ctx_new() copies the ticket keys and
 * staples and references the CRLs).
 * @return 0; -EINVAL if a secret is missing or of the wrong kind (named in
 *   @p err).
 */
int arn_tls_ctx_conf_from_cfg(struct arn_tls_ctx_conf *out, const struct arn_cfg_tls *t,
			      bool server, const void *owner,
			      const struct arn_cfg_secret *const *certs, size_t n_certs,
			      struct arn_tls_cert *certs_out,
			      const struct arn_cfg_secret *validation,
			      const struct arn_cfg_secret *ticket_keys, const void **pins_out,
			      char *err, size_t errlen);

/**
 * Build and drop the context @p t would give with these Secrets (as
 * arn_tls_ctx_conf_from_cfg takes them), one replica: lib/config's check
 * of a resource before it is applied (arn_config_set_tls_check; X16).
 * Control lcore. @return 0, or a negative errno with the reason in @p err.
 */
int arn_tls_cfg_check(const struct arn_cfg_tls *t, bool server, const void *owner,
		      const struct arn_cfg_secret *const *certs, size_t n_certs,
		      const struct arn_cfg_secret *validation,
		      const struct arn_cfg_secret *ticket_keys, char *err, size_t errlen);

struct arn_json;

/**
 * Certificate @p x as Envoy's admin /certs shows one (CertificateDetails:
 * path, or "<inline>" when @p path is NULL; serial_number, lower-case hex;
 * subject_alt_names; days_until_expiration at @p now_s, 0 once expired;
 * valid_from, expiration_time). @return a new JSON object (the caller frees
 * it with arn_json_free), or NULL (out of memory).
 */
struct arn_json *arn_tls_cert_details(const struct x509_st *x, const char *path, int64_t now_s);

/* ---- choosing a context by SNI ---------------------------------------------- */

/** One context and the server names it serves ("a.example.com",
 * "*.example.com"), as filter_chain_match.server_names. */
struct arn_tls_sni_entry {
	const char *const *server_names;
	size_t n_server_names;
	struct arn_tls_ctx *ctx;
};

struct arn_tls_sni_map;

/**
 * Build a map (control lcore): names are matched case-insensitively, an
 * exact name first, then the longest "*." suffix (any number of labels in
 * its place, as Envoy's server_names), then @p default_ctx (may be NULL).
 * Takes a reference to each context.
 * @return the map, or NULL with the reason in @p err: a name given twice,
 *   a malformed wildcard, out of memory.
 */
struct arn_tls_sni_map *arn_tls_sni_map_new(const struct arn_tls_sni_entry *e, size_t n,
					    struct arn_tls_ctx *default_ctx, char *err,
					    size_t errlen);

/** The context for @p sni (@p len bytes, NULL or 0: no SNI), or the default.
 * Any thread; no allocation. The result is borrowed from the map. */
struct arn_tls_ctx *arn_tls_sni_map_select(const struct arn_tls_sni_map *m, const char *sni,
					   size_t len);

/** Free a map and its references (control lcore). NULL is a no-op. */
void arn_tls_sni_map_free(struct arn_tls_sni_map *m);

/* ===========================================================================
 * 4. Workers
 * ========================================================================= */

/* Handshake steps one loop iteration may run on a worker, by default. With
 * OpenSSL 3.0 a full handshake costs the server about 0.5 ms of CPU with
 * RSA-2048 and 0.28 ms with ECDSA P-256 (bench/tls, docs/tls.md), so 8
 * steps hold an iteration for 4 ms at worst, while established connections
 * are served in every iteration; handshake throughput is not lowered when
 * handshakes are all the worker has to do. */
#define ARN_TLS_DEFAULT_HANDSHAKES_PER_ITER 8u

enum arn_tls_worker_counter {
#define ARN_TLS_WORKER_COUNTER(id, name, help) ARN_TLS_W_##id,
#include "arn_tls_worker_counters.def"
#undef ARN_TLS_WORKER_COUNTER
	ARN_TLS_W_COUNT,
};

const char *arn_tls_worker_counter_name(enum arn_tls_worker_counter id);
const char *arn_tls_worker_counter_help(enum arn_tls_worker_counter id);
bool arn_tls_worker_counter_is_gauge(enum arn_tls_worker_counter id);

struct arn_tls_conn;

/** Per worker lcore (caller-owned, e.g. in its per-worker state). */
struct arn_tls_worker {
	unsigned index;	      /* the worker's number: picks context replicas */
	uint32_t budget;      /* handshake steps per iteration */
	uint32_t budget_left; /* in this iteration */
	uint32_t now_s;	      /* wall clock (s), for OCSP staple expiry; 0: unknown */
	struct arn_tls_conn *deferred_head, *deferred_tail;
	uint64_t c[ARN_TLS_W_COUNT];
};

/** @p handshakes_per_iter: 0 for ARN_TLS_DEFAULT_HANDSHAKES_PER_ITER. */
void arn_tls_worker_init(struct arn_tls_worker *w, unsigned index, uint32_t handshakes_per_iter);

/**
 * Once per loop iteration, before receiving: refill the budget and resume
 * deferred handshakes in the order they were deferred, calling each one's
 * io->resume() while budget is left. Each resumed connection is granted
 * one step out of the budget, whether its resume callback runs the step at
 * once or later in the iteration, so that connections deferred first go
 * first. @p now_s: the worker's cached wall clock in seconds (0 if
 * unknown). A resume callback may free its connection.
 */
void arn_tls_worker_begin(struct arn_tls_worker *w, uint32_t now_s);

/** Copy the counters (any thread, as arn_tls_stats_read). */
void arn_tls_worker_read(const struct arn_tls_worker *w, uint64_t *out);

/* ===========================================================================
 * 3. Connections
 * ========================================================================= */

/**
 * The transport under a connection, supplied by the caller (for Arion's
 * TCP: arn_tcp_read, arn_tcp_write, arn_tcp_sndbuf_space). Called only from
 * inside arn_tls_* calls on the same worker; @p arg is the caller's.
 */
struct arn_tls_io {
	/** Copy up to @p len received bytes into @p buf and consume them.
	 * @return bytes copied, 0 when none is available now. */
	int (*read)(void *arg, void *buf, uint32_t len);
	/** Take up to @p len bytes to send. @return bytes taken (0: the send
	 * buffer is full), or a negative errno (the transport is gone).
	 * Should take everything when @p len <= space(); when it takes less
	 * (Arion's TCP out of mbufs) the rest of the record waits in OpenSSL
	 * for the next arn_tls_write(). */
	int (*write)(void *arg, const void *buf, uint32_t len);
	/** Free space in the send buffer, in bytes. */
	uint32_t (*space)(void *arg);
	/** A handshake deferred by the worker's budget may go on: call
	 * arn_tls_handshake() (or arn_tls_read()). NULL: the caller polls. */
	void (*resume)(void *arg);
};

/** A slot keeping one client session per upstream host and worker
 * (Envoy's max_session_keys 1). Zero-initialised by the caller; freed with
 * arn_tls_session_slot_clear(). */
struct arn_tls_session_slot {
	struct ssl_session_st *sess;
	uint64_t stored; /* sessions stored (tests, stats) */
};

/** Forget the session (the owner's worker). */
void arn_tls_session_slot_clear(struct arn_tls_session_slot *s);

/** Per-connection options; zero-initialise. */
struct arn_tls_conn_opts {
	uint16_t mss; /* TCP MSS, to size records to whole segments; 0: 1460 */
	/* Client: the session to offer (if the slot holds one) and where the
	 * server's new sessions go. Must outlive the connection. */
	struct arn_tls_session_slot *session;
	const char *sni; /* client: overrides the context's sni (NULL: keep) */
};

enum arn_tls_conn_state {
	ARN_TLS_ST_HANDSHAKE = 0,
	ARN_TLS_ST_OPEN,
	ARN_TLS_ST_FAILED,
};

/** Which check refused the peer's certificate (ssl.fail_verify_*). */
enum arn_tls_verify_fail {
	ARN_TLS_VF_NONE = 0,
	ARN_TLS_VF_NO_CERT, /* required and not sent */
	ARN_TLS_VF_ERROR,   /* chain: untrusted, expired, revoked, ... */
	ARN_TLS_VF_SAN,	    /* no SAN matched match_subject_alt_names */
};

/** A TLS connection; embed it in the caller's connection object, which
 * must not move while the connection is initialised (OpenSSL keeps its
 * address). All fields are private; use the functions below. */
struct arn_tls_conn {
	struct ssl_st *ssl;
	struct arn_tls_ctx *ctx; /* one reference, for the connection's life */
	const struct arn_tls_io *io;
	void *io_arg;
	struct arn_tls_worker *w;
	struct arn_tls_stats *st;
	struct arn_tls_session_slot *session;
	struct arn_tls_conn *dnext, *dprev; /* the worker's deferred queue */
	uint64_t bytes_in, bytes_out;	    /* ciphertext */
	unsigned long ossl_err;		    /* the first OpenSSL error of a failure */
	int err;			    /* the error every call returns once failed */
	uint16_t mss;
	uint16_t frag;	  /* plaintext bytes per record, once open */
	uint16_t replica; /* the context replica (the worker's index) */
	uint8_t overhead;
	uint8_t state;			/* enum arn_tls_conn_state */
	uint8_t alert_sent, alert_recv; /* last fatal alert codes, 0 if none */
	uint8_t verify_fail;		/* enum arn_tls_verify_fail */
	bool server;
	bool deferred;
	bool granted;	       /* resumed by the worker: its next step is paid for */
	bool eof;	       /* the transport ended */
	bool want_write;       /* output waits for send buffer space */
	bool shut;	       /* close_notify sent */
	bool reneg;	       /* the peer tried to renegotiate */
	bool key_update_flood; /* more than ARN_TLS_MAX_KEY_UPDATES in a row */
	bool hello_too_large;  /* a ClientHello declared over ARN_TLS_HELLO_DEFAULT_MAX */
	uint8_t key_updates;   /* KeyUpdates read since application data was */
	/* server, during the handshake: where the bytes OpenSSL reads stand in
	 * the plaintext records' framing (tls_hooks.c, hs_watch) */
	struct {
		uint16_t rec_left; /* bytes left in the record (0: a header next) */
		uint8_t rec_type;
		bool off;	    /* TLS 1.2's ChangeCipherSpec came: encrypted next */
		bool hello_seen;    /* a ClientHello's header went by */
		uint8_t rh_n, mh_n; /* record and message header bytes seen */
		uint8_t rh[5], mh[4];
		uint32_t msg_left; /* bytes left in the handshake message */
	} hs;
	/* plaintext bytes of the record OpenSSL holds in part (the transport
	 * took less than space() promised): the next SSL_write passes
	 * exactly as many */
	uint16_t wpending;
	int32_t verify_err; /* X509_V_ERR_* of a refused chain */
};

/**
 * Start a connection (on its worker): server or client as @p ctx is.
 * Takes a reference to @p ctx; @p w, @p st, @p io must outlive the
 * connection. A client starts its handshake at the first
 * arn_tls_handshake().
 * @return 0, -ENOMEM (nothing to free).
 */
int arn_tls_conn_init(struct arn_tls_conn *c, struct arn_tls_worker *w, struct arn_tls_ctx *ctx,
		      struct arn_tls_stats *st, const struct arn_tls_io *io, void *io_arg,
		      const struct arn_tls_conn_opts *opts);

/** Free the SSL object and drop the context reference; @p c may be reused.
 * No alert is sent (call arn_tls_shutdown() before for an orderly close). */
void arn_tls_conn_free(struct arn_tls_conn *c);

/**
 * Run the handshake as far as the input allows.
 * @return 0 when it is complete (also on every later call); -EAGAIN (more
 *   input, or output blocked: arn_tls_want_write()); -EBUSY (deferred by
 *   the worker's budget: io->resume() follows); or an error (above). On
 *   completion the ssl.* counters have been updated.
 */
int arn_tls_handshake(struct arn_tls_conn *c);

/**
 * Decrypt received data into @p buf (finishing the handshake first).
 * Records are taken from the transport one at a time, so unread
 * ciphertext stays in the transport (its receive window closes, which is
 * the back-pressure).
 * @return bytes (> 0); 0: the peer sent close_notify; -EAGAIN; -EBUSY;
 *   an error.
 */
ssize_t arn_tls_read(struct arn_tls_conn *c, void *buf, size_t cap);

/**
 * Encrypt @p len bytes and hand the records to the transport. Records hold
 * up to the fragment that fills whole TCP segments; a record is written
 * only when the transport has room for all of it, so the transport takes
 * a record in part only when its write() takes less than its space()
 * promised (Arion's TCP out of mbufs).
 * @return bytes taken (<= len; the rest waits: arn_tls_want_write() is
 *   set, call again with the rest once writable); -EAGAIN (nothing taken);
 *   -ENOTCONN (handshake not complete); -EPIPE (after shutdown); -EINVAL
 *   (fewer bytes than a record the transport took in part); an error.
 *   After -EAGAIN the next call must offer the same bytes again first (the
 *   same content; they may have moved): OpenSSL may hold part of a record
 *   made of them, which that call finishes.
 */
ssize_t arn_tls_write(struct arn_tls_conn *c, const void *buf, size_t len);

/**
 * Push out what OpenSSL holds (a handshake flight, tickets, an alert, a
 * close_notify) after the transport became writable.
 * @return 0 (nothing left), -EAGAIN (still blocked), an error.
 */
int arn_tls_flush(struct arn_tls_conn *c);

/** True when output waits for send buffer space (ask the transport for
 * on_writable, then arn_tls_flush / arn_tls_write / arn_tls_handshake). */
static inline bool arn_tls_want_write(const struct arn_tls_conn *c)
{
	return c->want_write;
}

/** The transport received FIN: a read without close_notify first is then
 * -EPIPE (truncation). */
void arn_tls_set_eof(struct arn_tls_conn *c);

/**
 * Send close_notify (once). Does not wait for the peer's (as Envoy).
 * @return 0, -EAGAIN (blocked: arn_tls_flush later), an error.
 */
int arn_tls_shutdown(struct arn_tls_conn *c);

/* ---- what was negotiated (valid once open; strings are static or owned by
 * the connection, valid until arn_tls_conn_free) ---------------------------- */

static inline bool arn_tls_is_open(const struct arn_tls_conn *c)
{
	return c->state == ARN_TLS_ST_OPEN;
}
/** "TLSv1.3"; NULL before the handshake. */
const char *arn_tls_version(const struct arn_tls_conn *c);
/** OpenSSL's cipher name ("TLS_AES_128_GCM_SHA256"), as Envoy's
 * %DOWNSTREAM_TLS_CIPHER%; NULL before the handshake. */
const char *arn_tls_cipher(const struct arn_tls_conn *c);
/** The SNI the client sent (server) or sends (client), or NULL. */
const char *arn_tls_sni(const struct arn_tls_conn *c);
/** The negotiated ALPN protocol (not NUL-terminated) and its length; NULL if none. */
const char *arn_tls_alpn(const struct arn_tls_conn *c, size_t *len);
bool arn_tls_session_reused(const struct arn_tls_conn *c);
/** Has the connection read bytes from the transport that no arn_tls_read
 * gave yet: plaintext, or part of a record whose rest has not come (read
 * record by record, OpenSSL takes what TCP has of one and waits)? */
bool arn_tls_read_pending(const struct arn_tls_conn *c);
/** The peer presented a certificate. */
bool arn_tls_peer_cert_presented(const struct arn_tls_conn *c);
/** The peer's subject in RFC 2253 form into @p buf (%DOWNSTREAM_PEER_SUBJECT%).
 * @return its length, or -ENOENT (no certificate), -ENOSPC. */
int arn_tls_peer_subject(const struct arn_tls_conn *c, char *buf, size_t len);
/** Lower-case hex SHA-256 of the peer's certificate (65 bytes with NUL:
 * %DOWNSTREAM_PEER_FINGERPRINT_256%). @return 64, -ENOENT, -ENOSPC. */
int arn_tls_peer_fingerprint(const struct arn_tls_conn *c, char *buf, size_t len);
/** The peer's issuer in RFC 2253 form (%DOWNSTREAM_PEER_ISSUER%).
 * @return its length, or -ENOENT (no certificate), -ENOSPC. */
int arn_tls_peer_issuer(const struct arn_tls_conn *c, char *buf, size_t len);
/** The peer's URI SANs, joined by ',' (%DOWNSTREAM_PEER_URI_SAN%).
 * @return the length, or -ENOENT (no certificate, or no URI SAN), -ENOSPC. */
int arn_tls_peer_uri_san(const struct arn_tls_conn *c, char *buf, size_t len);
/** The peer's URI (@p uri) or DNS SANs, each copied into @p buf (not
 * NUL-terminated) at @p off[i], @p len[i] bytes (RBAC's principal_name).
 * @return how many (0: none), or -ENOENT (no certificate), -ENOSPC (more
 * than @p max names or @p cap bytes: the caller must not decide on a part). */
int arn_tls_peer_san_list(const struct arn_tls_conn *c, bool uri, char *buf, size_t cap,
			  size_t *off, size_t *len, size_t max);
/** The peer's serial number, lower-case hex (%DOWNSTREAM_PEER_SERIAL%).
 * @return its length, or -ENOENT, -ENOSPC. */
int arn_tls_peer_serial(const struct arn_tls_conn *c, char *buf, size_t len);
/** The peer certificate's validity, epoch seconds
 * (%DOWNSTREAM_PEER_CERT_V_START% / V_END). @return 0, -ENOENT. */
int arn_tls_peer_validity(const struct arn_tls_conn *c, int64_t *start_s, int64_t *end_s);
/** The leaf certificate this side presented (server: the one chosen), or NULL. */
const struct x509_st *arn_tls_local_cert(const struct arn_tls_conn *c);
/** The peer's leaf certificate (borrowed), or NULL. */
const struct x509_st *arn_tls_peer_cert(const struct arn_tls_conn *c);
/** The certificates the peer sent after its leaf (borrowed; a server's
 * OpenSSL keeps the leaf apart), or NULL (x-forwarded-client-cert Chain=). */
const struct stack_st_X509 *arn_tls_peer_chain(const struct arn_tls_conn *c);
/** Plaintext bytes per record this connection writes. */
static inline unsigned arn_tls_record_size(const struct arn_tls_conn *c)
{
	return c->frag;
}

/* ---- why it failed ------------------------------------------------------------ */

/** The fatal alert this side sent / received (TLS AlertDescription), 0 if none. */
static inline unsigned arn_tls_alert_sent(const struct arn_tls_conn *c)
{
	return c->alert_sent;
}
static inline unsigned arn_tls_alert_received(const struct arn_tls_conn *c)
{
	return c->alert_recv;
}
/** Which certificate check failed, if one did. */
static inline enum arn_tls_verify_fail arn_tls_verify_failure(const struct arn_tls_conn *c)
{
	return (enum arn_tls_verify_fail)c->verify_fail;
}
/**
 * The failure in Envoy's %DOWNSTREAM_TRANSPORT_FAILURE_REASON% shape
 * ("TLS_error:|<code>:<lib>:<func>:<reason>:TLS_error_end"), or a short
 * text for failures without an OpenSSL error ("peer alert: bad_certificate",
 * "truncated"). @return the length written (truncated to @p len - 1), 0 if
 * the connection has not failed.
 */
size_t arn_tls_failure_reason(const struct arn_tls_conn *c, char *buf, size_t len);

/* ===========================================================================
 * Memory accounting (measurement; not needed to use the rest)
 *
 * arn_tls_mem_init() routes OpenSSL's allocations through counters: each
 * allocation is charged to the calling thread's current account (or to
 * the default one) and credited back to that account when freed. It must be
 * called before OpenSSL allocates anything in the process (first thing in
 * main); afterwards it fails with -EALREADY and nothing is counted.
 * ========================================================================= */

struct arn_tls_mem_account {
	int64_t live;	 /* bytes allocated and not freed */
	int64_t peak;	 /* highest live */
	uint64_t allocs; /* allocations */
};

/** @return 0, or -EALREADY (OpenSSL already allocated: not installed). */
int arn_tls_mem_init(void);
/** Charge this thread's OpenSSL allocations to @p a (NULL: the default
 * account) until the next call. @return the previous account. */
struct arn_tls_mem_account *arn_tls_mem_use(struct arn_tls_mem_account *a);
/** The default account: allocations made while no account was in use. */
struct arn_tls_mem_account *arn_tls_mem_default(void);

#endif
