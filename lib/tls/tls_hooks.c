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
	int n = c->io->read(c->io_arg, buf, len > UINT32_MAX ? UINT32_MAX : (uint32_t)len);
	if (n > 0) {
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
