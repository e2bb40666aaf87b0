/*
 * Bytes between lib/tcp and a codec (http_io.h): the input a connection
 * took from TCP, the segments a head's slices pin, the output TCP could not
 * take yet, and mbuf chains for the serializer.
 */
#include <errno.h>
#include <string.h>

#include <rte_common.h>
#include <rte_mbuf.h>

#include "arn_tcp.h"
#include "http_io.h"
#include "http_worker.h"

/* ---- owned input --------------------------------------------------------------------- */

void http_in_append(struct http_in *in, struct rte_mbuf *chain)
{
	while (chain) {
		struct rte_mbuf *m = chain;
		chain = m->next;
		m->next = NULL;
		m->nb_segs = 1;
		m->pkt_len = m->data_len;
		if (m->data_len == 0) {
			rte_pktmbuf_free_seg(m);
			continue;
		}
		in->bytes += m->data_len;
		/* A small segment joins the tail's free room: bytes before it do
		 * not move (slices stay valid), and a head typed or trickled a few
		 * bytes at a time does not pin one mbuf per byte. */
		struct rte_mbuf *t = in->tail;
		if (t && RTE_MBUF_DIRECT(t) && rte_mbuf_refcnt_read(t) == 1 &&
		    rte_pktmbuf_tailroom(t) >= m->data_len && m->data_len <= 512) {
			memcpy(rte_pktmbuf_mtod_offset(t, char *, t->data_len),
			       rte_pktmbuf_mtod(m, char *), m->data_len);
			t->data_len = (uint16_t)(t->data_len + m->data_len);
			t->pkt_len = t->data_len;
			rte_pktmbuf_free_seg(m);
			continue;
		}
		if (in->tail)
			in->tail->next = m;
		else
			in->head = m;
		in->tail = m;
	}
}

void http_in_free_chain(struct rte_mbuf *m)
{
	while (m) {
		struct rte_mbuf *n = m->next;
		http_seg_free(m);
		m = n;
	}
}

uint32_t http_in_fill_any(struct http_in *in, struct arn_tcp_conn *tc)
{
	if (!tc)
		return 0;
	uint32_t pend = arn_tcp_rx_pending(tc);
	if (pend == 0 || in->bytes >= HTTP_IN_MAX)
		return 0;
	/* up to the room left, but whole mbufs are cheapest: everything when
	 * it passes the room by less than 2 KiB (then at most 2 *
	 * HTTP_IN_MAX is taken) */
	uint32_t room = HTTP_IN_MAX - in->bytes;
	return http_in_take(in, tc, pend < room + 2048 ? pend : room);
}

void http_pins_add_any(struct http_pins *p, struct rte_mbuf *m)
{
	if (p->n && p->seg[p->n - 1] == m)
		return;
	for (unsigned i = 0; i < p->n; i++)
		if (p->seg[i] == m)
			return;
	if (p->n == HTTP_PIN_MAX) {
		p->overflow = true;
		return;
	}
	rte_mbuf_refcnt_update(m, 1);
	p->seg[p->n++] = m;
}

/* The segments whose last reference @p p held, into @p done from @p k on;
 * rte_pktmbuf_prefree_seg detaches indirect and external ones and leaves
 * the shared ones to their other holders. @return the new count. */
static unsigned pins_take(struct http_pins *p, struct rte_mbuf **done, unsigned k)
{
	for (unsigned i = 0; i < p->n; i++) {
		struct rte_mbuf *m = rte_pktmbuf_prefree_seg(p->seg[i]);
		if (m)
			done[k++] = m;
	}
	p->n = 0;
	p->overflow = false;
	return k;
}

/* One put per run of segments from the same pool rather than one
 * rte_pktmbuf_free_seg each: a put is most of what a free costs. */
static void pins_put(struct rte_mbuf **m, unsigned n)
{
	unsigned s = 0;
	for (unsigned i = 1; i <= n; i++)
		if (i == n || m[i]->pool != m[s]->pool) {
			rte_mempool_put_bulk(m[s]->pool, (void **)&m[s], i - s);
			s = i;
		}
}

void http_pins_release(struct http_pins *p)
{
	for (unsigned i = 0; i < p->n; i++)
		rte_pktmbuf_free_seg(p->seg[i]);
	p->n = 0;
	p->overflow = false;
}

void http_pins_release2(struct http_pins *a, struct http_pins *b)
{
	/* the usual end: one head segment pinned a side, the pins their last
	 * holders, from the same pool */
	if (a->n == 1 && b->n == 1) { /* (overflow only past HTTP_PIN_MAX) */
		struct rte_mbuf *two[2] = {rte_pktmbuf_prefree_seg(a->seg[0]),
					   rte_pktmbuf_prefree_seg(b->seg[0])};
		a->n = b->n = 0;
		if (two[0] && two[1] && two[0]->pool == two[1]->pool) {
			rte_mempool_put_bulk(two[0]->pool, (void **)two, 2);
			return;
		}
		pins_put(two[0] ? two : two + 1, (unsigned)(two[0] != NULL) + (two[1] != NULL));
		return;
	}
	struct rte_mbuf *done[2 * HTTP_PIN_MAX];
	pins_put(done, pins_take(b, done, pins_take(a, done, 0)));
}

/* ---- output --------------------------------------------------------------------------- */

void http_out_reset(struct http_out *o)
{
	if (o->chain)
		rte_pktmbuf_free(o->chain);
	memset(o, 0, sizeof(*o));
}

struct raw_put {
	struct arn_tcp_conn *tc;
	struct http_out *o;
};

static inline __attribute__((always_inline)) ssize_t tcp_put(void *ctx, const void *p, size_t n)
{
	struct raw_put *r = ctx;
	/* body bytes whose segment is known move by reference */
	if (r->o->seg && p == r->o->data) {
		int rc = arn_tcp_write_ref(r->tc, r->o->seg, p, (uint32_t)n);
		if (rc != -EINVAL)
			return rc;
		r->o->seg = NULL; /* not that segment's bytes after all: copied */
	}
	return arn_tcp_write(r->tc, p, (uint32_t)n);
}

int http_out_flush(struct http_out *o, struct arn_tcp_conn *tc)
{
	if (!tc)
		return -ENOTCONN;
	if (o->chain) {
		int rc = arn_tcp_write_mbuf(tc, o->chain);
		if (rc == -EAGAIN)
			return -EAGAIN;
		if (rc < 0) {
			rte_pktmbuf_free(o->chain);
			o->chain = NULL;
			return rc;
		}
		o->chain = NULL;
	}
	struct raw_put r = {tc, o};
	return http_out_put_pieces(o, tcp_put, &r);
}

/* ---- the raw transport ---------------------------------------------------------------- */

static uint32_t raw_fill(struct http_transport *t, struct arn_tcp_conn *tc, struct http_in *in)
{
	(void)t;
	return http_in_fill(in, tc);
}

static int raw_flush(struct http_transport *t, struct arn_tcp_conn *tc, struct http_out *o)
{
	(void)t;
	return http_out_flush(o, tc);
}

static void raw_shutdown(struct http_transport *t, struct arn_tcp_conn *tc)
{
	(void)t;
	if (tc)
		arn_tcp_shutdown(tc);
}

static const struct http_transport_ops raw_ops = {
    .fill = raw_fill,
    .flush = raw_flush,
    .shutdown = raw_shutdown,
};

struct http_transport http_transport_raw = {.ops = &raw_ops};

int http_wchain_refill(struct arn_h1_wbuf *wb)
{
	struct http_wchain *c = wb->arg;
	struct rte_mbuf *m = http_mbuf(c->w);
	if (!m)
		return -ENOBUFS;
	if (c->tail) {
		c->tail->data_len = (uint16_t)wb->len;
		c->tail->next = m;
	} else {
		c->head = m;
	}
	c->tail = m;
	wb->p = rte_pktmbuf_mtod(m, char *);
	wb->len = 0;
	wb->cap = rte_pktmbuf_tailroom(m);
	return 0;
}

void http_wchain_init(struct http_wchain *c, struct http_worker *w)
{
	memset(c, 0, sizeof(*c));
	c->w = w;
	arn_h1_wbuf_init(&c->wb, NULL, 0, http_wchain_refill, c);
}

struct rte_mbuf *http_wchain_finish(struct http_wchain *c)
{
	struct rte_mbuf *h = c->head;
	if (c->wb.err || !h) {
		if (h)
			rte_pktmbuf_free(h);
		c->head = NULL;
		return NULL;
	}
	c->tail->data_len = (uint16_t)c->wb.len;
	c->head = c->tail = NULL;
	if (!h->next) {
		/* the usual head: one mbuf, no walk */
		h->pkt_len = h->data_len;
		h->nb_segs = 1;
		return h;
	}
	uint32_t total = 0;
	uint16_t segs = 0;
	for (struct rte_mbuf *m = h; m; m = m->next) {
		total += m->data_len;
		segs++;
	}
	h->pkt_len = total;
	h->nb_segs = segs;
	return h;
}

/* ---- owned input, once parsed -------------------------------------------------------- */

void http_in_drop(struct http_in *in, uint32_t n)
{
	while (n && in->head) {
		struct rte_mbuf *m = in->head;
		uint32_t avail = m->data_len - in->off;
		uint32_t k = n < avail ? n : avail;
		in->off += k;
		in->bytes -= k;
		n -= k;
		if (in->off == m->data_len) {
			in->head = m->next;
			if (!in->head)
				in->tail = NULL;
			in->off = 0;
			http_seg_free(m);
		}
	}
}
