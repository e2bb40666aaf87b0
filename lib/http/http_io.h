/*
 * Bytes between lib/tcp and a codec, for one peer of a stream (the client
 * or an upstream): what the proxy took from TCP's receive queue and has not
 * finished with (struct http_in, and the pins that keep a head's segments
 * alive), and what could not be handed to TCP's send buffer yet (struct
 * http_out). Flow control lives here: each direction holds at most
 * HTTP_IN_MAX bytes taken from TCP, and a body piece is handed on only
 * once the previous one left the other side's http_out, so a slow reader
 * closes the writer's TCP window instead of growing memory.
 *
 * Ownership: the structs are embedded in their connection; the mbufs they
 * list are theirs (http_in_free, http_out_reset give them back). Worker
 * lcore only.
 */
#ifndef ARN_HTTP_IO_H
#define ARN_HTTP_IO_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <rte_mbuf.h>

#include "arn_h1.h"
#include "arn_tcp.h"

struct arn_tcp_conn;
struct http_worker;

/* ---- owned input: segments taken from TCP ---------------------------------- */

/*
 * Bytes of one direction that the proxy took from the TCP receive queue
 * (arn_tcp_rx_take) and has not finished with: a singly linked list of
 * one-segment mbufs and a parse cursor in the first one. Bounded by
 * HTTP_IN_MAX: what exceeds it stays in TCP, whose window then closes
 * (back-pressure).
 */
struct http_in {
	struct rte_mbuf *head, *tail;
	uint32_t off;	/* parse cursor within head */
	uint32_t bytes; /* unparsed bytes from the cursor on */
};

#define HTTP_IN_MAX (64u * 1024)

/* Head segments kept alive (an extra mbuf reference each) while a
 * message's header slices are in use. */
#define HTTP_PIN_MAX 64
struct http_pins {
	struct rte_mbuf *seg[HTTP_PIN_MAX];
	uint8_t n;
	bool overflow;
};

/** Free one segment taken from TCP (unlinked from its chain). */
static inline void http_seg_free(struct rte_mbuf *m)
{
	m->next = NULL;
	m->nb_segs = 1;
	rte_pktmbuf_free_seg(m);
}

/** Append @p chain (owned from now on) to @p in, one segment at a time. */
void http_in_append(struct http_in *in, struct rte_mbuf *chain);
/* http_in_free's walk of a chain of two segments or more, out of line. */
void http_in_free_chain(struct rte_mbuf *m);
/** Free what @p in holds; @p in is empty after. Inline: a keep-alive
 * upstream connection lets go of the one used-up segment a fused END left
 * (http_h1_reuse) once a response, which the call and the loop cost more
 * than (bench_hcm: 13 instructions a request). */
static inline void http_in_free(struct http_in *in)
{
	struct rte_mbuf *m = in->head;
	if (m) {
		if (__builtin_expect(m->next != NULL, 0))
			http_in_free_chain(m);
		else
			http_seg_free(m);
	}
	*in = (struct http_in){0};
}
/* Take @p n bytes (at most what TCP holds) from @p tc into @p in.
 * @return bytes taken. A single segment into an empty input goes in
 * without http_in_append's call and loop: the usual case of both fills. */
static inline __attribute__((always_inline)) uint32_t
http_in_take(struct http_in *in, struct arn_tcp_conn *tc, uint32_t n)
{
	struct rte_mbuf *m = arn_tcp_rx_take(tc, n);
	if (!m)
		return 0;
	uint32_t got = m->pkt_len;
	if (!in->tail && !m->next && m->data_len) {
		m->nb_segs = 1;
		m->pkt_len = m->data_len;
		in->bytes += m->data_len;
		in->head = in->tail = m;
		return got;
	}
	http_in_append(in, m);
	return got;
}
/* http_in_fill past its usual case, out of line. */
uint32_t http_in_fill_any(struct http_in *in, struct arn_tcp_conn *tc);
/** Take what TCP holds, up to HTTP_IN_MAX buffered. @return bytes taken.
 * Inline: its usual case, a segment or a few into an empty input, once
 * for each message a request (bench_hcm: its call and frame, about 10
 * instructions each). */
static inline uint32_t http_in_fill(struct http_in *in, struct arn_tcp_conn *tc)
{
	if (!tc)
		return 0;
	uint32_t pend = arn_tcp_rx_pending(tc);
	if (pend == 0)
		return 0;
	if (in->bytes || pend >= HTTP_IN_MAX)
		return http_in_fill_any(in, tc);
	/* all of it (under HTTP_IN_MAX) into an empty input */
	return http_in_take(in, tc, pend);
}
/** Drop @p n bytes from the front of @p in (fewer if it holds fewer),
 * freeing the segments it empties. */
void http_in_drop(struct http_in *in, uint32_t n);
/** Keep @p m alive (one reference) until http_pins_release; past
 * HTTP_PIN_MAX segments only p->overflow is set. */
void http_pins_add_any(struct http_pins *p, struct rte_mbuf *m);
void http_pins_release(struct http_pins *p);
/** http_pins_release of @p a and @p b, their segments put back together. */
void http_pins_release2(struct http_pins *a, struct http_pins *b);
/* http_pins_add_any with its usual cases inline (a head's first segment
 * into empty pins, or the segment pinned last again): the codec pins
 * every head it decodes */
static inline void http_pins_add(struct http_pins *p, struct rte_mbuf *m)
{
	if (p->n == 0) {
		rte_mbuf_refcnt_update(m, 1);
		p->seg[0] = m;
		p->n = 1;
		return;
	}
	if (p->seg[p->n - 1] != m)
		http_pins_add_any(p, m);
}

/* ---- output toward one peer --------------------------------------------- */

/*
 * What could not be handed to TCP yet: a serialized head (mbuf chain, queued
 * whole with arn_tcp_write_mbuf), then a few framing bytes (a chunk size
 * line, the last chunk), then body bytes that still live in the input
 * segments of the other side (their owner does not advance past them until
 * this drains), then the CRLF that closes a chunk's data. Written in that
 * order. On a raw transport body bytes of at least half a segment go to
 * TCP's send queue by reference to the other side's input segment
 * (arn_tcp_write_ref: no copy; the queue's reference keeps the segment,
 * so the other side may go on at once); TLS encrypts, so copies. A few
 * body bytes that follow a head still queued whole are copied into the
 * head's last mbuf instead (HTTP/1: http_codec_h1.c's body_join), so the
 * two go as one.
 */
struct http_out {
	struct rte_mbuf *chain;
	char stage[48];
	uint8_t stage_off, stage_len;
	uint8_t crlf; /* bytes of the closing CRLF still to write (0..2) */
	const char *data;
	uint32_t data_len;
	/* the input segment of the other side that holds data, when the
	 * codec knows it and the bytes may go by reference
	 * (arn_tcp_write_ref, raw transport only); NULL: copied */
	struct rte_mbuf *seg;
};

/* Output helpers. @return 0 when everything is with TCP, -EAGAIN when a
 * part waits for on_writable, another negative errno when the connection
 * cannot take data any more. */
int http_out_flush(struct http_out *o, struct arn_tcp_conn *tc);
/* Is anything queued that TCP did not take yet? (Asked before every event
 * a stream takes: kept inline.) */
static inline bool http_out_busy(const struct http_out *o)
{
	return o->chain || o->stage_len || o->data_len || o->crlf;
}
void http_out_reset(struct http_out *o);
/*
 * The part of a flush that every transport shares: @p o's small pieces
 * (the staged bytes, the data by reference, the chunk's closing CRLF), in
 * that order, to @p put, which returns the bytes it took (0: none fit
 * now) or a negative errno. @return 0 when all went, -EAGAIN when the
 * rest waits, or put's errno. Inline, so that a constant @p put (raw TCP)
 * costs no indirect call.
 */
static inline int http_out_put_pieces(struct http_out *o,
				      ssize_t (*put)(void *ctx, const void *p, size_t n), void *ctx)
{
	while (o->stage_len) {
		ssize_t n = put(ctx, o->stage + o->stage_off, o->stage_len);
		if (n <= 0)
			return n < 0 ? (int)n : -EAGAIN;
		o->stage_off = (uint8_t)(o->stage_off + n);
		o->stage_len = (uint8_t)(o->stage_len - n);
	}
	o->stage_off = 0;
	while (o->data_len) {
		ssize_t n = put(ctx, o->data, o->data_len);
		if (n <= 0)
			return n < 0 ? (int)n : -EAGAIN;
		o->data += n;
		o->data_len -= (uint32_t)n;
	}
	o->seg = NULL;
	static const char crlf[2] = {'\r', '\n'};
	while (o->crlf) {
		ssize_t n = put(ctx, crlf + 2 - o->crlf, o->crlf);
		if (n <= 0)
			return n < 0 ? (int)n : -EAGAIN;
		o->crlf = (uint8_t)(o->crlf - n);
	}
	return 0;
}

/* ---- the transport under a peer ---------------------------------------------- */

/*
 * What carries a peer's bytes over its TCP connection (docs/tls.md,
 * "Integration plan" 1): raw, today's zero-copy path (http_in_fill,
 * http_out_flush), or TLS, where lib/tls decrypts into mbufs of the
 * worker's pool and encrypts what is flushed. The codec and the connection
 * reach TCP's bytes only through these, so a codec never knows whether its
 * bytes were encrypted. The 64 KiB bound per direction (HTTP_IN_MAX) and
 * the output's pacing are the callers', for every transport.
 *
 * A transport object is embedded in its connection (a TLS one holds a
 * struct arn_tls_conn, which must not move); the raw one is shared and
 * stateless.
 */
struct http_transport;
struct http_transport_ops {
	/** Plaintext in: append what the transport has to @p in while it
	 * holds less than HTTP_IN_MAX. @return bytes appended (0: none now). */
	uint32_t (*fill)(struct http_transport *t, struct arn_tcp_conn *tc, struct http_in *in);
	/** Plaintext out: hand @p o on, as http_out_flush (0, -EAGAIN: the
	 * rest waits for on_writable, another negative errno: gone). */
	int (*flush)(struct http_transport *t, struct arn_tcp_conn *tc, struct http_out *o);
	/** Before the FIN (TLS: close_notify first). */
	void (*shutdown)(struct http_transport *t, struct arn_tcp_conn *tc);
	/** lib/tcp's on_writable, before the connection runs; NULL: nothing. */
	void (*writable)(struct http_transport *t, struct arn_tcp_conn *tc);
	/** lib/tcp's on_eof, before the connection runs; NULL: nothing. */
	void (*eof)(struct http_transport *t, struct arn_tcp_conn *tc);
};

struct http_transport {
	const struct http_transport_ops *ops;
};

/** TCP's bytes as they are (shared by every plain connection). */
extern struct http_transport http_transport_raw;

/* The raw transport is called directly (every plain request goes through
 * these twice): a predictable branch instead of an indirect call. */
static inline uint32_t http_tp_fill(struct http_transport *t, struct arn_tcp_conn *tc,
				    struct http_in *in)
{
	return t == &http_transport_raw ? http_in_fill(in, tc) : t->ops->fill(t, tc, in);
}

static inline int http_tp_flush(struct http_transport *t, struct arn_tcp_conn *tc,
				struct http_out *o)
{
	return t == &http_transport_raw ? http_out_flush(o, tc) : t->ops->flush(t, tc, o);
}

static inline void http_tp_shutdown(struct http_transport *t, struct arn_tcp_conn *tc)
{
	t->ops->shutdown(t, tc);
}

static inline void http_tp_writable(struct http_transport *t, struct arn_tcp_conn *tc)
{
	if (t->ops->writable)
		t->ops->writable(t, tc);
}

static inline void http_tp_eof(struct http_transport *t, struct arn_tcp_conn *tc)
{
	if (t->ops->eof)
		t->ops->eof(t, tc);
}

/* Serialize into a fresh mbuf chain from the worker's pool. */
struct http_wchain {
	struct arn_h1_wbuf wb;
	struct rte_mbuf *head, *tail;
	struct http_worker *w;
};
void http_wchain_init(struct http_wchain *c, struct http_worker *w);
/* The chain's refill (its next mbuf), for http_wchain_init_head. */
int http_wchain_refill(struct arn_h1_wbuf *wb);
/* declared in http_worker.h too (not included here: this header stays
 * below the worker's): an mbuf of the worker's pool */
struct rte_mbuf *http_mbuf(struct http_worker *w);
/** The same with its first mbuf taken now, for a writer that always
 * writes (an HTTP/1 head): the first line then fits without the refill
 * path (the status line's fallback through arn_h1_put cost ~65
 * instructions a response). Inline, and the mbuf taken in place, not
 * by a refill with its test of a tail to link (twice a request). */
static inline void http_wchain_init_head(struct http_wchain *c, struct http_worker *w)
{
	struct rte_mbuf *m = http_mbuf(w);
	c->w = w;
	c->head = c->tail = m;
	c->wb.len = 0;
	c->wb.err = 0;
	c->wb.refill = http_wchain_refill;
	c->wb.arg = c;
	c->wb.total = 0;
	if (m) {
		c->wb.p = rte_pktmbuf_mtod(m, char *);
		c->wb.cap = rte_pktmbuf_tailroom(m);
	} else {
		/* out of mbufs: the chain stays empty and the first write
		 * refills (and fails) as an empty chain's would */
		c->wb.p = NULL;
		c->wb.cap = 0;
	}
}
/** The chain written (owned by the caller), or NULL on error (out of
 * mbufs; what was written is freed). */
struct rte_mbuf *http_wchain_finish(struct http_wchain *c);

#endif
