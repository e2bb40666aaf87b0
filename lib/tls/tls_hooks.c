/*
 * What OpenSSL calls back into a connection, below the connections
 * (tls_conn.c) and the contexts (tls_ctx.c) that install it: the BIO
 * over the caller's transport (struct arn_tls_io; tls_conn.c's header says
 * why a BIO of our own rather than memory BIOs), the info callback that
 * sees alerts and renegotiation, and the message callback that counts the
 * peer's KeyUpdates.
 */
#include <limits.h>

#include <openssl/bio.h>
#include <openssl/ssl.h>

#include "tls_int.h"

struct bio_method_st *tls_bio_method;

/* ---- the BIO ----------------------------------------------------------------------- */

/*
 * A server's handshake: OpenSSL grows its message buffer to the length a
 * handshake message's header declares as soon as it has read the header,
 * and takes up to 131,396 bytes for a ClientHello (CLIENT_HELLO_MAX_LENGTH).
 * Nine bytes (a record of four, that header) made it hold 128 KiB until
 * the connection's idle timeout, for every connection a client opened:
 * 16,384 connections a worker, 2 GiB. BoringSSL, so Envoy, refuses a
 * ClientHello over 16 KiB. The bytes OpenSSL reads pass here first, so
 * the plaintext records' framing is followed (record headers, the
 * handshake messages in records of type 22, which may span records or
 * share one) and a ClientHello header that declares more than
 * ARN_TLS_HELLO_DEFAULT_MAX (the tls_inspector's default, which counts
 * its record headers too, so nothing it accepts is refused here) is kept
 * from OpenSSL: the connection fails (arn_tls_handshake). Only headers
 * are looked at byte by byte; payloads are skipped by length.
 * Encrypted records are not looked into: TLS 1.3's go as type 23 (its
 * second ClientHello, after a HelloRetryRequest, is plaintext of type
 * 22, and is watched), TLS 1.2's follow the client's ChangeCipherSpec as
 * type 22, so the watch ends there, once a ClientHello went by, unless
 * 1.3 was chosen (whose CCS is the compatibility mode's dummy; OpenSSL
 * reads record by record, read_ahead off, so the version is chosen by
 * the time a CCS after the ClientHello is read). Their messages are
 * OpenSSL's, bounded by max_cert_list. @return false when @p p holds a
 * ClientHello header over the bound.
 */
static bool hs_watch(struct arn_tls_conn *c, const uint8_t *p, size_t n)
{
	size_t i = 0;
	while (i < n && !c->hs.off) {
		if (c->hs.rec_left == 0) {
			c->hs.rh[c->hs.rh_n++] = p[i++];
			if (c->hs.rh_n == 5) {
				c->hs.rh_n = 0;
				c->hs.rec_type = c->hs.rh[0];
				c->hs.rec_left = (uint16_t)(c->hs.rh[3] << 8 | c->hs.rh[4]);
				if (c->hs.rec_type == 20 /* change_cipher_spec */ &&
				    c->hs.hello_seen && SSL_version(c->ssl) != TLS1_3_VERSION)
					c->hs.off = true;
			}
			continue;
		}
		size_t take = n - i < c->hs.rec_left ? n - i : c->hs.rec_left;
		if (c->hs.rec_type != 22) { /* not a handshake record: skipped */
			i += take;
			c->hs.rec_left = (uint16_t)(c->hs.rec_left - take);
			continue;
		}
		while (take) {
			if (c->hs.msg_left == 0) {
				c->hs.mh[c->hs.mh_n++] = p[i++];
				take--;
				c->hs.rec_left--;
				if (c->hs.mh_n < 4)
					continue;
				c->hs.mh_n = 0;
				uint32_t mlen = (uint32_t)c->hs.mh[1] << 16 |
						(uint32_t)c->hs.mh[2] << 8 | c->hs.mh[3];
				if (c->hs.mh[0] == 1 /* client_hello */) {
					if (mlen + 4 > ARN_TLS_HELLO_DEFAULT_MAX)
						return false;
					c->hs.hello_seen = true;
				}
				c->hs.msg_left = mlen;
				continue;
			}
			size_t k = take < c->hs.msg_left ? take : c->hs.msg_left;
			i += k;
			take -= k;
			c->hs.rec_left = (uint16_t)(c->hs.rec_left - k);
			c->hs.msg_left -= (uint32_t)k;
		}
	}
	return true;
}

static int bio_read(BIO *b, char *buf, size_t len, size_t *got)
{
	struct arn_tls_conn *c = BIO_get_data(b);
	BIO_clear_retry_flags(b);
	*got = 0;
	if (c->key_update_flood) {
		/* OpenSSL reads record after record within one SSL_read while
		 * they are post-handshake messages: stop it here, and
		 * arn_tls_read fails the connection */
		BIO_set_retry_read(b);
		return 0;
	}
	if (c->hello_too_large) {
		BIO_set_retry_read(b);
		return 0;
	}
	int n = c->io->read(c->io_arg, buf, len > UINT32_MAX ? UINT32_MAX : (uint32_t)len);
	if (n > 0) {
		if (c->server && c->state == ARN_TLS_ST_HANDSHAKE &&
		    !hs_watch(c, (const uint8_t *)buf, (size_t)n)) {
			/* arn_tls_handshake fails the connection */
			c->hello_too_large = true;
			BIO_set_retry_read(b);
			return 0;
		}
		c->bytes_in += (uint64_t)n;
		*got = (size_t)n;
		return 1;
	}
	if (c->eof)
		return 0; /* end of stream: OpenSSL reports an unexpected EOF */
	BIO_set_retry_read(b);
	return 0;
}

static int bio_write(BIO *b, const char *buf, size_t len, size_t *put)
{
	struct arn_tls_conn *c = BIO_get_data(b);
	BIO_clear_retry_flags(b);
	*put = 0;
	int n = c->io->write(c->io_arg, buf, len > UINT32_MAX ? UINT32_MAX : (uint32_t)len);
	if (n > 0) {
		c->bytes_out += (uint64_t)n;
		*put = (size_t)n;
		if ((size_t)n < len)
			c->want_write = true;
		return 1;
	}
	if (n < 0)
		return 0; /* the transport is gone: an error, not a retry */
	c->want_write = true;
	BIO_set_retry_write(b);
	return 0;
}

static long bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
	(void)num;
	(void)ptr;
	switch (cmd) {
	case BIO_CTRL_FLUSH:
		return 1; /* records go to the transport as they are written */
	case BIO_CTRL_EOF: {
		/* OpenSSL asks after a read of nothing: a truncation or a wait */
		const struct arn_tls_conn *c = BIO_get_data(b);
		return c && c->eof;
	}
	default:
		return 0;
	}
}

static int bio_create(BIO *b)
{
	BIO_set_init(b, 1);
	return 1;
}

int tls_bio_create_method(void)
{
	BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "arion transport");
	if (!m || !BIO_meth_set_read_ex(m, bio_read) || !BIO_meth_set_write_ex(m, bio_write) ||
	    !BIO_meth_set_ctrl(m, bio_ctrl) || !BIO_meth_set_create(m, bio_create)) {
		BIO_meth_free(m);
		return -ENOMEM;
	}
	tls_bio_method = m;
	return 0;
}

/* ---- callbacks ------------------------------------------------------------------------ */

void tls_info_cb(const SSL *ssl, int where, int ret)
{
	struct arn_tls_conn *c = SSL_get_app_data(ssl);
	if (!c)
		return;
	if (where & SSL_CB_ALERT) {
		unsigned level = ((unsigned)ret >> 8) & 0xff, code = (unsigned)ret & 0xff;
		if (where & SSL_CB_WRITE) {
			if (level == SSL3_AL_FATAL)
				c->alert_sent = (uint8_t)code;
			else if (code == SSL_AD_NO_RENEGOTIATION)
				c->reneg = true; /* we refused the peer's renegotiation */
		} else if (level == SSL3_AL_FATAL) {
			c->alert_recv = (uint8_t)code;
		}
	}
	/* a new handshake on an open TLS 1.2 connection: renegotiation, which
	 * Arion never does (TLS 1.3 reports its post-handshake messages, which
	 * are not renegotiation, through this too) */
	if ((where & SSL_CB_HANDSHAKE_START) && c->state == ARN_TLS_ST_OPEN &&
	    SSL_version(ssl) <= TLS1_2_VERSION)
		c->reneg = true;
}

/*
 * Message callback: KeyUpdates the peer sent, counted as they are read.
 * TLS 1.3 lets a peer send them at any time, each costs a key derivation
 * (12 to 18 us measured), and one SSL_read handles every one the receive
 * queue holds: BoringSSL (Envoy's) refuses the 33rd in a row without
 * application data between them, and so does lib/tls
 * (ARN_TLS_MAX_KEY_UPDATES): OpenSSL still processes that one (a callback
 * cannot refuse a message), then the BIO reads nothing more and
 * arn_tls_read fails the connection. arn_tls_read resets the count when it
 * returns data.
 */
void tls_msg_cb(int write_p, int version, int content_type, const void *buf, size_t len, SSL *ssl,
		void *arg)
{
	(void)version;
	(void)arg;
	if (write_p || content_type != SSL3_RT_HANDSHAKE || len < 1 ||
	    *(const unsigned char *)buf != SSL3_MT_KEY_UPDATE)
		return;
	struct arn_tls_conn *c = SSL_get_app_data(ssl);
	if (c && !c->key_update_flood && ++c->key_updates > ARN_TLS_MAX_KEY_UPDATES)
		c->key_update_flood = true;
}
