/*
 * The TLS transport (http_io.h's struct http_transport over lib/tls): a
 * peer's plaintext in and out of an arn_tls_conn whose ciphertext is TCP's
 * (docs/tls.md, integration plan 1 and 2).
 *
 * Input: records are decrypted into mbufs of the worker's pool and appended
 * to the peer's http_in, so the codec parses them as it parses TCP's own
 * segments; at most HTTP_IN_MAX plaintext bytes are held, and what is not
 * decrypted stays in TCP (its window closes: the same back-pressure as the
 * raw transport). Output: http_out's pieces are encrypted in order; a piece
 * taken in part keeps an offset and waits for on_writable. TLS holds
 * nothing of its own beyond one record in OpenSSL.
 *
 * Ownership: embedded in its connection, which does not move (lib/tls keeps
 * the arn_tls_conn's address); started on accept, stopped (the SSL object
 * freed) before the connection block is reused. Worker lcore only.
 */
#ifndef ARN_HTTP_TLS_H
#define ARN_HTTP_TLS_H

#include <stdbool.h>
#include <stdint.h>

#include "arn_tls.h"
#include "http_io.h"

struct http_tls_tp {
	struct http_transport t; /* first: what the peer points at */
	struct arn_tls_conn tls; /* must not move while on */
	struct http_worker *w;
	struct arn_tcp_conn *tc;   /* NULL once lib/tcp closed it */
	bool *peer_eof;		   /* set when the peer's plaintext ended (close_notify, FIN) */
	void (*resume)(void *arg); /* a handshake deferred by the budget may go on */
	void *resume_arg;
	uint32_t out_off; /* bytes of o->chain's first segment already encrypted */
	bool on;
};

/**
 * Start TLS on @p tc with @p ctx (server or client as it is); the bytes
 * already in TCP's receive queue are the handshake's. @p opts: a client's
 * SNI and session slot (NULL: none).
 * @return 0, -ENOMEM (nothing to stop).
 */
int http_tls_start(struct http_tls_tp *t, struct http_worker *w, struct arn_tcp_conn *tc,
		   struct arn_tls_ctx *ctx, struct arn_tls_stats *st, bool *peer_eof,
		   void (*resume)(void *), void *resume_arg, const struct arn_tls_conn_opts *opts);

/**
 * Run the handshake as far as the input allows.
 * @return 0 once open; -EAGAIN (more input or send space: on_writable was
 *   asked for when needed); -EBUSY (deferred: resume follows); another
 *   negative errno: failed (the alert, if any, is with TCP; close it).
 */
int http_tls_handshake(struct http_tls_tp *t);

/** Free the SSL object (no alert); @p t may be started again. */
void http_tls_stop(struct http_tls_tp *t);

#endif
