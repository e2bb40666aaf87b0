/*
 * The TLS transport (http_tls.h): lib/tls between a peer's http_in /
 * http_out and its TCP connection.
 */
#include <errno.h>
#include <string.h>

#include <rte_mbuf.h>

#include "arn_tcp.h"
#include "http_tls.h"
#include "http_worker.h"

static struct http_tls_tp *tp_of(struct http_transport *t)
{
	return (struct http_tls_tp *)(void *)t; /* t is its first member */
}

/* ---- lib/tls's view of TCP ------------------------------------------------------------- */

static int io_read(void *arg, void *buf, uint32_t len)
{
	struct http_tls_tp *t = arg;
	return t->tc ? (int)arn_tcp_read(t->tc, buf, len) : 0;
}

static int io_write(void *arg, const void *buf, uint32_t len)
{
	struct http_tls_tp *t = arg;
	return t->tc ? arn_tcp_write(t->tc, buf, len) : -ENOTCONN;
}

static uint32_t io_space(void *arg)
{
	struct http_tls_tp *t = arg;
	return t->tc ? arn_tcp_sndbuf_space(t->tc) : 0;
}

static void io_resume(void *arg)
{
	struct http_tls_tp *t = arg;
	if (t->resume)
		t->resume(t->resume_arg);
}

static const struct arn_tls_io tls_io = {
    .read = io_read,
    .write = io_write,
    .space = io_space,
    .resume = io_resume,
};

/* ---- the transport ops ----------------------------------------------------------------- */

/* A failed read or write ends the connection: the peer's input ends (the
 * codec then finishes or resets the exchange) and TCP is reset, since
 * nothing more can be said over this TLS connection. */
static void tls_fail(struct http_tls_tp *t)
{
	*t->peer_eof = true;
	if (t->tc)
		arn_tcp_abort(t->tc); /* on_close follows */
}

static uint32_t tls_fill(struct http_transport *tp, struct arn_tcp_conn *tc, struct http_in *in)
{
	struct http_tls_tp *t = tp_of(tp);
	uint32_t got = 0;
	if (!tc)
		return 0;
	while (in->bytes < HTTP_IN_MAX) {
		struct rte_mbuf *m = http_mbuf(t->w);
		if (!m)
			break; /* the records wait in TCP */
		uint32_t cap = RTE_MIN((uint32_t)rte_pktmbuf_tailroom(m), HTTP_IN_MAX - in->bytes);
		ssize_t n = arn_tls_read(&t->tls, rte_pktmbuf_mtod(m, char *), cap);
		if (n <= 0) {
			rte_pktmbuf_free(m);
			if (n == 0 || n == -EPIPE)
				*t->peer_eof = true; /* close_notify, or FIN without it */
			else if (n == -EAGAIN && arn_tls_want_write(&t->tls))
				arn_tcp_want_writable(tc); /* a post-handshake message waits */
			else if (n != -EAGAIN && n != -EBUSY)
				tls_fail(t);
			break;
		}
		m->data_len = (uint16_t)n;
		m->pkt_len = (uint32_t)n;
		http_in_append(in, m);
		got += (uint32_t)n;
	}
	return got;
}

/* Encrypt what of @p p[0..len) TLS takes. @return bytes taken (less than
 * @p len: the rest waits for on_writable, which was asked for), or a
 * negative errno (the connection failed). */
static ssize_t tls_put(void *ctx, const void *p, size_t len)
{
	struct http_tls_tp *t = ctx;
	ssize_t n = arn_tls_write(&t->tls, p, len);
	if (n == -EAGAIN)
		n = 0;
	if (n < 0) {
		tls_fail(t);
		return n;
	}
	if ((size_t)n < len && t->tc)
		arn_tcp_want_writable(t->tc);
	return n;
}

static int tls_flush(struct http_transport *tp, struct arn_tcp_conn *tc, struct http_out *o)
{
	struct http_tls_tp *t = tp_of(tp);
	if (!tc)
		return -ENOTCONN;
	while (o->chain) {
		struct rte_mbuf *m = o->chain;
		uint32_t len = m->data_len - t->out_off;
		if (len) {
			ssize_t n = tls_put(t, rte_pktmbuf_mtod_offset(m, char *, t->out_off), len);
			if (n < 0)
				return (int)n;
			t->out_off += (uint32_t)n;
			if ((uint32_t)n < len)
				return -EAGAIN;
		}
		o->chain = m->next;
		if (o->chain) {
			o->chain->nb_segs = (uint16_t)(m->nb_segs - 1);
			o->chain->pkt_len = m->pkt_len - m->data_len;
		}
		http_seg_free(m);
		t->out_off = 0;
	}
	return http_out_put_pieces(o, tls_put, t);
}

/* close_notify before the FIN, as Envoy sends it (it does not wait for the
 * peer's). */
static void tls_shutdown(struct http_transport *tp, struct arn_tcp_conn *tc)
{
	struct http_tls_tp *t = tp_of(tp);
	if (!tc)
		return;
	if (arn_tls_is_open(&t->tls))
		(void)arn_tls_shutdown(&t->tls);
	arn_tcp_shutdown(tc);
}

/* A handshake flight, a ticket or an alert that waited for room first;
 * the connection's run then flushes its own output. */
static void tls_writable(struct http_transport *tp, struct arn_tcp_conn *tc)
{
	struct http_tls_tp *t = tp_of(tp);
	if (tc && arn_tls_flush(&t->tls) == -EAGAIN && arn_tls_want_write(&t->tls))
		arn_tcp_want_writable(tc);
}

/* TCP's FIN: records still in TCP's queue are read first; after them a
 * missing close_notify is a truncation (-EPIPE from arn_tls_read). */
static void tls_eof(struct http_transport *tp, struct arn_tcp_conn *tc)
{
	(void)tc;
	arn_tls_set_eof(&tp_of(tp)->tls);
}

static const struct http_transport_ops tls_ops = {
    .fill = tls_fill,
    .flush = tls_flush,
    .shutdown = tls_shutdown,
    .writable = tls_writable,
    .eof = tls_eof,
};

/* ---- life cycle ------------------------------------------------------------------------ */

int http_tls_start(struct http_tls_tp *t, struct http_worker *w, struct arn_tcp_conn *tc,
		   struct arn_tls_ctx *ctx, struct arn_tls_stats *st, bool *peer_eof,
		   void (*resume)(void *), void *resume_arg, const struct arn_tls_conn_opts *opts)
{
	memset(t, 0, sizeof(*t));
	t->t.ops = &tls_ops;
	t->w = w;
	t->tc = tc;
	t->peer_eof = peer_eof;
	t->resume = resume;
	t->resume_arg = resume_arg;
	struct arn_tls_conn_opts o = opts ? *opts : (struct arn_tls_conn_opts){0};
	int rc = arn_tls_conn_init(&t->tls, &w->tls, ctx, st, &tls_io, t, &o);
	if (rc < 0)
		return rc;
	t->on = true;
	return 0;
}

int http_tls_handshake(struct http_tls_tp *t)
{
	int rc = arn_tls_handshake(&t->tls);
	if (rc == -EAGAIN && arn_tls_want_write(&t->tls) && t->tc)
		arn_tcp_want_writable(t->tc);
	return rc;
}

void http_tls_stop(struct http_tls_tp *t)
{
	if (!t->on)
		return;
	arn_tls_conn_free(&t->tls);
	t->on = false;
	t->tc = NULL;
}
