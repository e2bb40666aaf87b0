/*
 * Connections: one OpenSSL SSL object over a BIO that reads from and
 * writes to the caller's transport (struct arn_tls_io) directly.
 *
 * Why a BIO of our own and not memory BIOs: with memory BIOs every
 * ciphertext byte is copied twice on the way in (transport -> BIO ->
 * OpenSSL's record buffer) and twice on the way out, and the BIO pair
 * holds its own copy of everything not yet taken. Our BIO's read copies
 * from the TCP receive queue straight into OpenSSL's record buffer and
 * consumes it there; its write copies a finished record straight into the
 * TCP send buffer. OpenSSL reads a record header, then exactly that
 * record (read_ahead off), so ciphertext beyond the record being decrypted
 * stays in TCP, whose window then closes: TCP's flow control is TLS's
 * back-pressure, and lib/tls keeps no ciphertext of its own.
 *
 * Writes: a record is produced only when the transport's free space holds
 * it whole (plus room for a KeyUpdate OpenSSL may send first), so the
 * transport takes part of an application record only when it takes less
 * than it said it had room for (Arion's TCP out of mbufs). OpenSSL then
 * keeps the rest of the record, and SSL_write must be called again with
 * exactly as many bytes (wpending). Handshake flights, tickets, alerts and
 * close_notify may stop half-way in a full send buffer: OpenSSL keeps the
 * rest and the next arn_tls_handshake / arn_tls_flush sends it.
 *
 * Records are sized to fill whole TCP segments: k * MSS minus the record
 * overhead of the negotiated cipher, with k as large as a record allows
 * (16 KiB of plaintext).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "arn_log.h"
#include "tls_int.h"

/* Room kept beside a record for a TLS 1.3 KeyUpdate OpenSSL writes before
 * application data when the peer asked for one (27 bytes on the wire). */
#define KEYUPDATE_ROOM 64u

/* ---- set-up ------------------------------------------------------------------------ */

int arn_tls_conn_init(struct arn_tls_conn *c, struct arn_tls_worker *w, struct arn_tls_ctx *ctx,
		      struct arn_tls_stats *st, const struct arn_tls_io *io, void *io_arg,
		      const struct arn_tls_conn_opts *opts)
{
	memset(c, 0, sizeof(*c));
	c->ctx = ctx;
	c->io = io;
	c->io_arg = io_arg;
	c->w = w;
	c->st = st;
	c->server = ctx->server;
	c->replica = (uint16_t)(w->index % ctx->replicas);
	c->mss = opts && opts->mss ? opts->mss : 1460;
	c->session = opts ? opts->session : NULL;
	ERR_clear_error();
	SSL *ssl = SSL_new(tls_ctx_sctx(ctx, c->replica, 0));
	BIO *bio = ssl ? BIO_new(tls_bio_method) : NULL;
	if (!bio) {
		SSL_free(ssl);
		ERR_clear_error();
		return -ENOMEM;
	}
	BIO_set_data(bio, c);
	SSL_set_bio(ssl, bio, bio); /* one BIO both ways: SSL_free frees it once */
	SSL_set_app_data(ssl, c);
	if (ctx->server) {
		SSL_set_accept_state(ssl);
	} else {
		SSL_set_connect_state(ssl);
		const char *sni = opts && opts->sni ? opts->sni : ctx->sni;
		if ((sni && SSL_set_tlsext_host_name(ssl, sni) != 1) ||
		    (c->session && c->session->sess &&
		     SSL_set_session(ssl, c->session->sess) != 1)) {
			SSL_free(ssl);
			ERR_clear_error();
			return -ENOMEM;
		}
	}
	c->ssl = ssl;
	arn_tls_ctx_ref(ctx);
	tls_add(&w->c[ARN_TLS_W_CONNS_ACTIVE], 1);
	return 0;
}

void arn_tls_conn_free(struct arn_tls_conn *c)
{
	if (!c->ssl)
		return;
	if (c->deferred)
		tls_worker_undefer(c->w, c);
	/* OpenSSL marks the session of a connection freed without
	 * close_notify not resumable (and removes it from the SSL_CTX's cache,
	 * under the SSL_CTX's lock). Peers rarely send close_notify and
	 * Arion's HTTP closes without waiting for one; a session that did
	 * complete its handshake stays good (BoringSSL, Envoy's, keeps it
	 * too). A failed connection's session is dropped. */
	if (c->state == ARN_TLS_ST_OPEN)
		SSL_set_shutdown(c->ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
	SSL_free(c->ssl);
	c->ssl = NULL;
	ERR_clear_error();
	tls_add(&c->w->c[ARN_TLS_W_CONNS_ACTIVE], (uint64_t)-1);
	arn_tls_ctx_unref(c->ctx);
	c->ctx = NULL;
}

void arn_tls_session_slot_clear(struct arn_tls_session_slot *s)
{
	SSL_SESSION_free(s->sess);
	s->sess = NULL;
}

/* ---- outcomes ----------------------------------------------------------------------- */

static int fail(struct arn_tls_conn *c, int err)
{
	if (c->state == ARN_TLS_ST_FAILED)
		return c->err;
	c->state = ARN_TLS_ST_FAILED;
	c->err = err;
	c->want_write = false;
	if (c->deferred)
		tls_worker_undefer(c->w, c);
	if (err == -EPIPE && c->eof) {
		/* the peer closed without close_notify: Envoy takes it as the
		 * end of the stream (HTTP framing finds a cut message), not as
		 * a TLS error */
		tls_inc(&c->w->c[ARN_TLS_W_TRUNCATED]);
		return err;
	}
	tls_inc(&c->st->v[ARN_TLS_S_CONNECTION_ERROR]);
	switch (c->verify_fail) {
	case ARN_TLS_VF_NO_CERT:
		tls_inc(&c->st->v[ARN_TLS_S_FAIL_VERIFY_NO_CERT]);
		break;
	case ARN_TLS_VF_ERROR:
		tls_inc(&c->st->v[ARN_TLS_S_FAIL_VERIFY_ERROR]);
		break;
	case ARN_TLS_VF_SAN:
		tls_inc(&c->st->v[ARN_TLS_S_FAIL_VERIFY_SAN]);
		break;
	default:
		break;
	}
	return err;
}

/* After an SSL_* call that did not succeed. */
static int classify(struct arn_tls_conn *c, int r)
{
	if (c->reneg) {
		ERR_clear_error();
		tls_inc(&c->w->c[ARN_TLS_W_RENEGOTIATION_REFUSED]);
		return fail(c, -EPROTO);
	}
	int e = SSL_get_error(c->ssl, r);
	unsigned long oe = ERR_peek_error();
	switch (e) {
	case SSL_ERROR_WANT_READ:
		return -EAGAIN;
	case SSL_ERROR_WANT_WRITE:
		c->want_write = true;
		return -EAGAIN;
	case SSL_ERROR_ZERO_RETURN:
		return 0;
	case SSL_ERROR_SSL:
	case SSL_ERROR_SYSCALL:
		break;
	default:
		ERR_clear_error();
		return fail(c, -EPROTO);
	}
	if (oe && !c->ossl_err)
		c->ossl_err = oe;
	ERR_clear_error();
	int reason = oe ? ERR_GET_REASON(oe) : 0;
	if (e == SSL_ERROR_SYSCALL && !oe)
		return fail(c, c->eof ? -EPIPE : -EIO);
	if (reason == SSL_R_UNEXPECTED_EOF_WHILE_READING)
		return fail(c, -EPIPE);
	if (reason == ERR_R_MALLOC_FAILURE)
		return fail(c, -ENOMEM);
	if (reason == SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE) {
		c->verify_fail = ARN_TLS_VF_NO_CERT;
		return fail(c, -EACCES);
	}
	if (c->alert_recv)
		return fail(c, -ECONNABORTED);
	if (c->verify_fail || reason == SSL_R_CERTIFICATE_VERIFY_FAILED)
		return fail(c, -EACCES);
	return fail(c, -EPROTO);
}

static int find_cipher(uint16_t id)
{
	static const uint16_t ids[] = {
#define ARN_TLS_CIPHER(sym, iana, name) iana,
#define ARN_TLS_CURVE(sym, nid, name)
#define ARN_TLS_VERSION(sym, v, name)
#define ARN_TLS_SIGALG(sym, type, md, name)
#include "arn_tls_names.def"
#undef ARN_TLS_CIPHER
#undef ARN_TLS_CURVE
#undef ARN_TLS_VERSION
#undef ARN_TLS_SIGALG
	};
	for (size_t i = 0; i + 1 < sizeof(ids) / sizeof(ids[0]); i++)
		if (ids[i] == id)
			return ARN_TLS_S_CIPHER_TLS_AES_128_GCM_SHA256 + (int)i;
	return ARN_TLS_S_CIPHER_UNKNOWN;
}

static int find_curve(int nid)
{
	static const int nids[] = {
#define ARN_TLS_CIPHER(sym, iana, name)
#define ARN_TLS_CURVE(sym, nid, name) nid,
#define ARN_TLS_VERSION(sym, v, name)
#define ARN_TLS_SIGALG(sym, type, md, name)
#include "arn_tls_names.def"
#undef ARN_TLS_CIPHER
#undef ARN_TLS_CURVE
#undef ARN_TLS_VERSION
#undef ARN_TLS_SIGALG
	};
	for (size_t i = 0; i + 1 < sizeof(nids) / sizeof(nids[0]); i++)
		if (nids[i] == nid)
			return ARN_TLS_S_CURVE_X25519 + (int)i;
	return ARN_TLS_S_CURVE_UNKNOWN;
}

static int find_version(int v)
{
	static const int vs[] = {
#define ARN_TLS_CIPHER(sym, iana, name)
#define ARN_TLS_CURVE(sym, nid, name)
#define ARN_TLS_VERSION(sym, v, name) v,
#define ARN_TLS_SIGALG(sym, type, md, name)
#include "arn_tls_names.def"
#undef ARN_TLS_CIPHER
#undef ARN_TLS_CURVE
#undef ARN_TLS_VERSION
#undef ARN_TLS_SIGALG
	};
	for (size_t i = 0; i + 1 < sizeof(vs) / sizeof(vs[0]); i++)
		if (vs[i] == v)
			return ARN_TLS_S_VERSION_TLS1 + (int)i;
	return ARN_TLS_S_VERSION_UNKNOWN;
}

static int find_sigalg(int type, int md)
{
	static const int v[][2] = {
#define ARN_TLS_CIPHER(sym, iana, name)
#define ARN_TLS_CURVE(sym, nid, name)
#define ARN_TLS_VERSION(sym, v, name)
#define ARN_TLS_SIGALG(sym, type, md, name) {type, md},
#include "arn_tls_names.def"
#undef ARN_TLS_CIPHER
#undef ARN_TLS_CURVE
#undef ARN_TLS_VERSION
#undef ARN_TLS_SIGALG
	};
	for (size_t i = 0; i + 1 < sizeof(v) / sizeof(v[0]); i++)
		if (v[i][0] == type && v[i][1] == md)
			return ARN_TLS_S_SIGALG_RSA_PKCS1_MD5_SHA1 + (int)i;
	return ARN_TLS_S_SIGALG_UNKNOWN;
}

/* Plaintext per record so that a full record fills whole segments. */
static void size_records(struct arn_tls_conn *c)
{
	const SSL_CIPHER *ci = SSL_get_current_cipher(c->ssl);
	unsigned oh;
	if (SSL_version(c->ssl) >= TLS1_3_VERSION) {
		/* header 5, content type 1, AEAD tag 16 (8 for CCM_8) */
		oh = ci && SSL_CIPHER_get_id(ci) == 0x03001305 /* TLS_AES_128_CCM_8_SHA256 */
			 ? 14
			 : 22;
	} else if (ci && SSL_CIPHER_is_aead(ci)) {
		/* GCM and CCM carry an 8-byte explicit nonce; ChaCha20 none */
		oh = SSL_CIPHER_get_cipher_nid(ci) == NID_chacha20_poly1305 ? 21 : 29;
	} else {
		/* CBC: header, IV, MAC (SHA-384 at most), padding */
		oh = 5 + 16 + 48 + 16;
	}
	unsigned mss = c->mss >= 536 ? c->mss : 536;
	unsigned k = (16384 + oh) / mss;
	unsigned frag = k ? k * mss - oh : 16384;
	if (frag > 16384)
		frag = 16384;
	if (frag < 512)
		frag = 512;
	/* A client that negotiated max_fragment_length (RFC 6066: 512 to
	 * 4096 bytes; OpenSSL honours it) gets no larger records: OpenSSL
	 * would split a larger write into several records, the send buffer
	 * check below would count one, and the transport would take part of
	 * a record. */
	uint8_t mfl = SSL_SESSION_get_max_fragment_length(SSL_get_session(c->ssl));
	if (mfl >= TLSEXT_max_fragment_length_512 && mfl <= TLSEXT_max_fragment_length_4096 &&
	    frag > 512u << (mfl - TLSEXT_max_fragment_length_512))
		frag = 512u << (mfl - TLSEXT_max_fragment_length_512);
	c->overhead = (uint8_t)oh;
	c->frag = (uint16_t)frag;
	SSL_set_max_send_fragment(c->ssl, frag);
}

static int opened(struct arn_tls_conn *c)
{
	struct arn_tls_stats *st = c->st;
	SSL *s = c->ssl;
	c->state = ARN_TLS_ST_OPEN;
	tls_inc(&st->v[ARN_TLS_S_HANDSHAKE]);
	if (SSL_session_reused(s))
		tls_inc(&st->v[ARN_TLS_S_SESSION_REUSED]);
	const SSL_CIPHER *ci = SSL_get_current_cipher(s);
	tls_inc(&st->v[find_cipher(ci ? SSL_CIPHER_get_protocol_id(ci) : 0)]);
	tls_inc(&st->v[find_version(SSL_version(s))]);
	int g = SSL_get_negotiated_group(s);
	if (g > 0)
		tls_inc(&st->v[find_curve((g & TLSEXT_nid_unknown) ? 0 : g)]);
	int type, md = 0;
	if (SSL_get_peer_signature_type_nid(s, &type) == 1) {
		if (SSL_get_peer_signature_nid(s, &md) != 1 || type == EVP_PKEY_ED25519)
			md = 0;
		tls_inc(&st->v[find_sigalg(type, md)]);
	}
	if (!SSL_get0_peer_certificate(s))
		tls_inc(&st->v[ARN_TLS_S_NO_CERTIFICATE]);
	size_records(c);
	ERR_clear_error();
	return 0;
}

/* ---- the handshake ------------------------------------------------------------------ */

int arn_tls_handshake(struct arn_tls_conn *c)
{
	if (c->state == ARN_TLS_ST_OPEN)
		return 0;
	if (c->state == ARN_TLS_ST_FAILED)
		return c->err;
	if (c->deferred)
		return -EBUSY;
	struct arn_tls_worker *w = c->w;
	if (!c->granted && w->budget_left == 0) {
		tls_worker_defer(w, c);
		return -EBUSY;
	}
	uint64_t out0 = c->bytes_out;
	OSSL_HANDSHAKE_STATE s0 = SSL_get_state(c->ssl);
	c->want_write = false;
	ERR_clear_error();
	int r = SSL_do_handshake(c->ssl);
	/* a step that moved the handshake on (it read a whole flight, or
	 * wrote one) costs one unit of the budget; waiting for the rest of
	 * a flight costs nothing */
	if (SSL_get_state(c->ssl) != s0 || c->bytes_out != out0) {
		if (!c->granted) /* else paid when the worker resumed it */
			w->budget_left--;
		tls_inc(&w->c[ARN_TLS_W_HANDSHAKE_STEPS]);
	}
	c->granted = false;
	if (c->hello_too_large) {
		/* the BIO kept an oversized ClientHello from OpenSSL (hs_watch) */
		ERR_clear_error();
		tls_inc(&w->c[ARN_TLS_W_CLIENT_HELLO_TOO_LARGE]);
		return fail(c, -EMSGSIZE);
	}
	if (r == 1)
		return opened(c);
	int rc = classify(c, r);
	if (rc == 0) {
		/* close_notify before the handshake ended: the peer gave up (a
		 * hostile upstream may send one in place of its ServerHello).
		 * 0 would read as "open", with no peer verified. */
		return fail(c, -ECONNABORTED);
	}
	return rc;
}

ssize_t arn_tls_read(struct arn_tls_conn *c, void *buf, size_t cap)
{
	if (c->state != ARN_TLS_ST_OPEN) {
		int r = arn_tls_handshake(c);
		if (r)
			return r;
	}
	if (cap == 0)
		return -EINVAL;
	size_t n = 0;
	ERR_clear_error();
	int r = SSL_read_ex(c->ssl, buf, cap > INT_MAX ? INT_MAX : cap, &n);
	if (c->reneg)
		return classify(c, r);
	if (c->key_update_flood) {
		/* the BIO stopped OpenSSL after the one too many (tls_msg_cb) */
		ERR_clear_error();
		tls_inc(&c->w->c[ARN_TLS_W_KEY_UPDATE_FLOOD]);
		return fail(c, -EPROTO);
	}
	if (r == 1) {
		/* application data: KeyUpdates count again from none. Not on
		 * every application data record: empty ones return nothing,
		 * and OpenSSL's own bound on those (32 in a row) starts again
		 * at every record that is not empty, a KeyUpdate's too. */
		c->key_updates = 0;
		return (ssize_t)n;
	}
	return classify(c, r);
}

ssize_t arn_tls_write(struct arn_tls_conn *c, const void *buf, size_t len)
{
	if (c->state == ARN_TLS_ST_FAILED)
		return c->err;
	if (c->state != ARN_TLS_ST_OPEN)
		return -ENOTCONN;
	if (c->shut)
		return -EPIPE;
	if (len < c->wpending)
		return -EINVAL;
	const uint8_t *p = buf;
	size_t done = 0;
	c->want_write = false;
	while (done < len) {
		size_t chunk = len - done < c->frag ? len - done : c->frag;
		uint32_t room = c->io->space(c->io_arg);
		uint32_t extra = c->overhead + KEYUPDATE_ROOM;
		if (c->wpending) {
			/* the transport took part of the record made of these
			 * bytes: OpenSSL sends the rest only for a write of
			 * exactly its length (fewer: SSL_R_BAD_LENGTH, which
			 * fails the connection; more: it would go on to make
			 * records without the room check). Where the bytes are
			 * now does not matter (SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER). */
			chunk = c->wpending;
		} else if (room < chunk + extra) {
			/* a shorter record when 512 bytes of it fit, else wait
			 * for room: tiny records waste bytes and the peer's CPU,
			 * but a send buffer smaller than a segment must still
			 * make progress */
			size_t min = chunk < 512 ? chunk : 512;
			if (room < extra || room - extra < min) {
				c->want_write = true;
				break;
			}
			chunk = room - extra;
		}
		size_t n = 0;
		ERR_clear_error();
		int r = SSL_write_ex(c->ssl, p + done, chunk, &n);
		if (r != 1) {
			int e = classify(c, r);
			if (e == -EAGAIN) {
				/* stopped in the transport: part of the record, or
				 * of a KeyUpdate before it, is out; either way the
				 * retry passes this length again */
				if (c->want_write)
					c->wpending = (uint16_t)chunk;
				break;
			}
			return e;
		}
		c->wpending = 0;
		done += n;
	}
	return done ? (ssize_t)done : -EAGAIN;
}

int arn_tls_flush(struct arn_tls_conn *c)
{
	if (c->state == ARN_TLS_ST_FAILED)
		return c->err;
	if (!c->want_write)
		return 0;
	if (c->state == ARN_TLS_ST_HANDSHAKE) {
		int r = arn_tls_handshake(c);
		return r == -EAGAIN && !c->want_write ? 0 : r;
	}
	if (c->shut) {
		c->want_write = false;
		ERR_clear_error();
		int r = SSL_shutdown(c->ssl);
		if (r >= 0)
			return 0;
		return classify(c, r);
	}
	/* an application record stopped in the transport: the next
	 * arn_tls_write with the same bytes sends it (see arn_tls_write) */
	return -EAGAIN;
}

void arn_tls_set_eof(struct arn_tls_conn *c)
{
	c->eof = true;
}

int arn_tls_shutdown(struct arn_tls_conn *c)
{
	if (c->state != ARN_TLS_ST_OPEN)
		return c->state == ARN_TLS_ST_FAILED ? c->err : 0;
	if (c->shut)
		return c->want_write ? arn_tls_flush(c) : 0;
	c->shut = true;
	c->want_write = false;
	ERR_clear_error();
	int r = SSL_shutdown(c->ssl);
	if (r >= 0)
		return 0;
	return classify(c, r);
}

/* ---- what was negotiated ------------------------------------------------------------------ */

const char *arn_tls_version(const struct arn_tls_conn *c)
{
	return c->ssl && c->state == ARN_TLS_ST_OPEN ? SSL_get_version(c->ssl) : NULL;
}

const char *arn_tls_cipher(const struct arn_tls_conn *c)
{
	return c->ssl && c->state == ARN_TLS_ST_OPEN ? SSL_get_cipher_name(c->ssl) : NULL;
}

const char *arn_tls_sni(const struct arn_tls_conn *c)
{
	return c->ssl ? SSL_get_servername(c->ssl, TLSEXT_NAMETYPE_host_name) : NULL;
}

const char *arn_tls_alpn(const struct arn_tls_conn *c, size_t *len)
{
	const unsigned char *p = NULL;
	unsigned l = 0;
	if (c->ssl)
		SSL_get0_alpn_selected(c->ssl, &p, &l);
	*len = l;
	return l ? (const char *)p : NULL;
}

bool arn_tls_session_reused(const struct arn_tls_conn *c)
{
	return c->ssl && SSL_session_reused(c->ssl);
}

bool arn_tls_read_pending(const struct arn_tls_conn *c)
{
	return c->ssl && SSL_has_pending(c->ssl);
}

bool arn_tls_peer_cert_presented(const struct arn_tls_conn *c)
{
	return c->ssl && SSL_get0_peer_certificate(c->ssl) != NULL;
}

const struct x509_st *arn_tls_peer_cert(const struct arn_tls_conn *c)
{
	return c->ssl ? SSL_get0_peer_certificate(c->ssl) : NULL;
}

const struct stack_st_X509 *arn_tls_peer_chain(const struct arn_tls_conn *c)
{
	return c->ssl ? SSL_get_peer_cert_chain(c->ssl) : NULL;
}

const struct x509_st *arn_tls_local_cert(const struct arn_tls_conn *c)
{
	return c->ssl ? SSL_get_certificate(c->ssl) : NULL;
}

int arn_tls_peer_subject(const struct arn_tls_conn *c, char *buf, size_t len)
{
	X509 *x = c->ssl ? SSL_get0_peer_certificate(c->ssl) : NULL;
	if (!x)
		return -ENOENT;
	BIO *m = BIO_new(BIO_s_mem());
	if (!m)
		return -ENOMEM;
	X509_NAME_print_ex(m, X509_get_subject_name(x), 0, XN_FLAG_RFC2253);
	char *p;
	long n = BIO_get_mem_data(m, &p);
	int r = -ENOSPC;
	if (n >= 0 && (size_t)n < len) {
		memcpy(buf, p, (size_t)n);
		buf[n] = 0;
		r = (int)n;
	}
	BIO_free(m);
	ERR_clear_error();
	return r;
}

int arn_tls_peer_fingerprint(const struct arn_tls_conn *c, char *buf, size_t len)
{
	X509 *x = c->ssl ? SSL_get0_peer_certificate(c->ssl) : NULL;
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned dl = 0;
	if (!x)
		return -ENOENT;
	if (len < 65)
		return -ENOSPC;
	if (X509_digest(x, EVP_sha256(), d, &dl) != 1 || dl != 32)
		return -ENOMEM;
	for (unsigned i = 0; i < dl; i++)
		snprintf(buf + 2 * i, 3, "%02x", d[i]);
	return 64;
}

static const char *alert_name(unsigned code)
{
	return SSL_alert_desc_string_long((int)code);
}

size_t arn_tls_failure_reason(const struct arn_tls_conn *c, char *buf, size_t len)
{
	int n = 0;
	if (len == 0 || c->state != ARN_TLS_ST_FAILED)
		return 0;
	if (c->ossl_err) {
		char e[256];
		ERR_error_string_n(c->ossl_err, e, sizeof(e));
		n = snprintf(buf, len, "TLS_error:|%s:TLS_error_end", e);
	} else if (c->err == -EPIPE) {
		n = snprintf(buf, len, "truncated: the transport ended without close_notify");
	} else if (c->reneg) {
		n = snprintf(buf, len, "renegotiation refused");
	} else if (c->key_update_flood) {
		n = snprintf(buf, len, "more than %u KeyUpdates in a row without application data",
			     ARN_TLS_MAX_KEY_UPDATES);
	} else if (c->hello_too_large) {
		n = snprintf(buf, len, "ClientHello declared over %u bytes",
			     ARN_TLS_HELLO_DEFAULT_MAX);
	} else if (c->alert_recv) {
		n = snprintf(buf, len, "peer alert: %s", alert_name(c->alert_recv));
	} else if (c->err == -ECONNABORTED) {
		n = snprintf(buf, len, "peer sent close_notify during the handshake");
	} else {
		n = snprintf(buf, len, "TLS error %d", c->err);
	}
	if (n < 0)
		return 0;
	return (size_t)n < len ? (size_t)n : len - 1;
}
