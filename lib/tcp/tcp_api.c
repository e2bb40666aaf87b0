/*
 * What arn_tcp.h promises the layers above: listeners, active opens, the
 * send and receive buffers, shutdown / close / abort, handles.
 */
#include <errno.h>
#include <string.h>

#include "arn_log.h"
#include "tcp_int.h"
#include "tcp_stash.h"
#include "tcp_timer.h"

/* ---- listeners ------------------------------------------------------------------ */

struct arn_tcp_listener *arn_tcp_listen(struct arn_lcore *lc, uint32_t addr, uint16_t port,
					const struct arn_tcp_ops *ops, void *user,
					const struct arn_tcp_listen_opts *opts, int *err)
{
	struct arn_tcp_worker *wk = tcp_wk(lc);
	int e = 0;
	struct arn_tcp_listener *free_slot = NULL;
	if (wk == NULL || port == 0) {
		e = -EINVAL;
		goto fail;
	}
	for (unsigned i = 0; i < TCP_LISTENERS_MAX; i++) {
		struct arn_tcp_listener *l = &wk->lsn[i];
		if (!l->used) {
			if (free_slot == NULL)
				free_slot = l;
			continue;
		}
		if (l->port == port && l->addr == addr) {
			e = -EADDRINUSE;
			goto fail;
		}
	}
	if (free_slot == NULL) {
		e = -ENOSPC;
		goto fail;
	}
	memset(free_slot, 0, sizeof(*free_slot));
	free_slot->used = true;
	free_slot->addr = addr;
	free_slot->port = port;
	free_slot->ops = ops;
	free_slot->user = user;
	free_slot->backlog = opts && opts->backlog ? opts->backlog : 1024;
	free_slot->cc = opts ? opts->cc : ARN_TCP_CC_DEFAULT;
	free_slot->keepalive = opts && opts->keepalive;
	return free_slot;
fail:
	if (err)
		*err = e;
	return NULL;
}

void arn_tcp_unlisten(struct arn_lcore *lc, struct arn_tcp_listener *l)
{
	struct arn_tcp_worker *wk = tcp_wk(lc);
	if (wk == NULL || l == NULL)
		return;
	/* Half-open connections of this listener can no longer be accepted. */
	for (uint32_t i = 0; i < wk->max_conns; i++) {
		struct arn_tcp_conn *c = &wk->conns[i];
		if (!(c->flags & TF_FREE) && c->lsn == l && c->state == TCPS_SYN_RECEIVED) {
			tcp_send_rst_conn(c);
			tcp_conn_drop(c, 0);
		}
	}
	memset(l, 0, sizeof(*l));
}

/* ---- active open ------------------------------------------------------------------ */

struct arn_tcp_conn *arn_tcp_connect(struct arn_lcore *lc, uint32_t laddr, uint32_t raddr,
				     uint16_t rport, const struct arn_tcp_ops *ops, void *user,
				     enum arn_tcp_cc cc, int *err)
{
	struct arn_tcp_worker *wk = tcp_wk(lc);
	int e;
	if (wk == NULL || rport == 0 || raddr == 0) {
		e = -EINVAL;
		goto fail;
	}
	if (!arn_net_is_local(lc, laddr)) {
		e = -EADDRNOTAVAIL;
		goto fail;
	}
	tcp_clock(wk);
	const uint32_t range = TCP_PORT_HI - TCP_PORT_LO + 1;
	uint32_t start = wk->port_hint % range;
	uint16_t port = 0;
	for (uint32_t i = 0; i < range; i++) {
		uint16_t p = (uint16_t)(TCP_PORT_LO + (start + i) % range);
		/* replies must come back to this worker (mTCP's rss.c idea) */
		if (arn_net_flow_worker(lc, laddr, raddr, p, rport) != wk->index)
			continue;
		if (tcp_lookup(wk, laddr, p, raddr, rport) != NULL ||
		    tcp_tw_lookup(wk, laddr, p, raddr, rport) != NULL)
			continue;
		port = p;
		wk->port_hint = start + i + 1;
		break;
	}
	if (port == 0) {
		e = -EADDRNOTAVAIL;
		goto fail;
	}
	struct arn_tcp_conn *c = tcp_conn_alloc(wk, false);
	if (c == NULL) {
		e = -ENOBUFS;
		goto fail;
	}
	tcp_conn_init_common(wk, c, laddr, port, raddr, rport, cc);
	c->flags |= TF_ACCEPTED;
	c->ops = ops;
	c->user = user;
	c->iss = tcp_isn(wk, laddr, port, raddr, rport);
	c->snd_una = c->iss;
	c->snd_nxt = c->snd_max = c->iss + 1;
	c->recover = c->iss;
	c->mss = tcp_mss_clamp(wk, 0xffff, raddr, true); /* until the SYN-ACK says */
	c->rtt_start = wk->now_ms;
	tcp_set_state(c, TCPS_SYN_SENT);
	tcp_hash_insert(wk, c);
	tcp_send_syn(c);
	tcp_rexmt_arm(c);
	return c;
fail:
	if (err)
		*err = e;
	return NULL;
}

/* ---- per connection ------------------------------------------------------------------ */

void arn_tcp_set_user(struct arn_tcp_conn *c, void *user)
{
	c->user = user;
}

void arn_tcp_set_ops(struct arn_tcp_conn *c, const struct arn_tcp_ops *ops)
{
	c->ops = ops;
}

void arn_tcp_endpoints(const struct arn_tcp_conn *c, uint32_t *laddr, uint16_t *lport,
		       uint32_t *raddr, uint16_t *rport)
{
	if (laddr)
		*laddr = c->laddr;
	if (lport)
		*lport = c->lport;
	if (raddr)
		*raddr = c->raddr;
	if (rport)
		*rport = c->rport;
}

static int writable_state(const struct arn_tcp_conn *c)
{
	if (c->flags & (TF_APP_CLOSED | TF_FIN_QUEUED))
		return -EPIPE;
	switch (c->state) {
	case TCPS_SYN_SENT:
	case TCPS_SYN_RECEIVED:
	case TCPS_ESTABLISHED:
	case TCPS_CLOSE_WAIT:
		return 0;
	default:
		return -ENOTCONN;
	}
}

/* arn_tcp_sndbuf_space, inline for arn_tcp_write (once a proxied request) */
static inline uint32_t sndbuf_space(const struct arn_tcp_conn *c)
{
	return c->sndq.bytes < c->sndbuf ? c->sndbuf - c->sndq.bytes : 0;
}

uint32_t arn_tcp_sndbuf_space(const struct arn_tcp_conn *c)
{
	return sndbuf_space(c);
}

void arn_tcp_want_writable(struct arn_tcp_conn *c)
{
	c->flags |= TF_WANT_WRITE;
}

/* arn_tcp_write's usual case for a few bytes after a head (a small body
 * by arn_tcp_write_ref): all of them into the send queue's tail, ours to
 * write into. @return false, having done nothing, when they do not fit
 * so (arn_tcp_write then). */
static inline bool write_tail(struct arn_tcp_conn *c, const void *buf, uint32_t len)
{
	struct tcp_q *q = &c->sndq;
	struct rte_mbuf *t = q->tail;
	if (!t || len == 0 || len > sndbuf_space(c) || !RTE_MBUF_DIRECT(t) ||
	    rte_mbuf_refcnt_read(t) != 1 || len > rte_pktmbuf_tailroom(t) || writable_state(c) != 0)
		return false;
	memcpy(rte_pktmbuf_mtod_offset(t, uint8_t *, t->data_len), buf, len);
	t->data_len = (uint16_t)(t->data_len + len);
	t->pkt_len = t->data_len;
	q->bytes += len;
	tcp_want_output(c);
	return true;
}

int arn_tcp_write(struct arn_tcp_conn *c, const void *buf, uint32_t len)
{
	int rc = writable_state(c);
	if (rc != 0)
		return rc;
	uint32_t space = sndbuf_space(c);
	uint32_t n = RTE_MIN(len, space);
	const uint8_t *src = buf;
	uint32_t done = 0;
	struct tcp_q *q = &c->sndq;
	/* fill the tail first if it is ours to write into */
	struct rte_mbuf *t = q->tail;
	if (t && RTE_MBUF_DIRECT(t) && rte_mbuf_refcnt_read(t) == 1) {
		uint32_t room = RTE_MIN((uint32_t)rte_pktmbuf_tailroom(t), n);
		if (room) {
			memcpy(rte_pktmbuf_mtod_offset(t, uint8_t *, t->data_len), src, room);
			t->data_len = (uint16_t)(t->data_len + room);
			t->pkt_len = t->data_len;
			q->bytes += room;
			done += room;
		}
	}
	while (done < n) {
		struct rte_mbuf *m = tcp_mbuf_alloc(c->wk);
		if (m == NULL) {
			TCP_INC(c->wk, OUT_NOMBUF);
			break;
		}
		/* no headroom needed: segments are built in fresh mbufs */
		m->data_off = 0;
		uint32_t k = RTE_MIN(n - done, (uint32_t)rte_pktmbuf_tailroom(m));
		memcpy(rte_pktmbuf_mtod(m, uint8_t *), src + done, k);
		m->data_len = (uint16_t)k;
		m->pkt_len = k;
		tcp_q_append(q, m);
		done += k;
	}
	if (done < len)
		c->flags |= TF_WANT_WRITE;
	if (done)
		tcp_want_output(c);
	if (done == 0 && n > 0 && q->bytes == 0)
		return -ENOBUFS; /* no mbufs and nothing in flight to wake us */
	return (int)done;
}

static void write_mbuf_chain(struct arn_tcp_conn *c, struct rte_mbuf *m);

int arn_tcp_write_mbuf(struct arn_tcp_conn *c, struct rte_mbuf *m)
{
	int rc = writable_state(c);
	if (rc != 0)
		return rc;
	if (c->sndq.bytes >= c->sndbuf) {
		c->flags |= TF_WANT_WRITE;
		return -EAGAIN;
	}
	struct tcp_q *q = &c->sndq;
	/* One mbuf into an empty queue (an HTTP head of one mbuf, the last
	 * response ACKed): nothing to copy into, no loop, no frame for it. */
	if (m->next == NULL && q->tail == NULL) {
		m->nb_segs = 1;
		m->pkt_len = m->data_len;
		tcp_q_append(q, m);
		if (m->data_len)
			tcp_want_output(c);
		return 0;
	}
	write_mbuf_chain(c, m);
	return 0;
}

/* arn_tcp_write_mbuf's chain, or an mbuf joining a queue that holds some. */
static __attribute__((noinline)) void write_mbuf_chain(struct arn_tcp_conn *c, struct rte_mbuf *m)
{
	struct tcp_q *q = &c->sndq;
	uint32_t bytes = 0;
	/* Linked as they are, except small ones (a peer's one-byte segments
	 * passed on by echo or a proxy), whose bytes are copied into the tail
	 * when it has room and is ours alone: the send queue is bounded in
	 * bytes, and this keeps it bounded in mbufs too (issue 12, item 2). */
	for (struct rte_mbuf *x = m, *nx; x; x = nx) {
		nx = x->next;
		x->next = NULL;
		x->nb_segs = 1;
		x->pkt_len = x->data_len;
		bytes += x->data_len;
		struct rte_mbuf *t = q->tail;
		if (t && x->data_len < c->wk->seg_max / 2 && RTE_MBUF_DIRECT(t) &&
		    rte_mbuf_refcnt_read(t) == 1 && rte_pktmbuf_tailroom(t) >= x->data_len) {
			memcpy(rte_pktmbuf_mtod_offset(t, uint8_t *, t->data_len),
			       rte_pktmbuf_mtod(x, uint8_t *), x->data_len);
			t->data_len = (uint16_t)(t->data_len + x->data_len);
			t->pkt_len = t->data_len;
			q->bytes += x->data_len;
			rte_pktmbuf_free_seg(x);
			continue;
		}
		tcp_q_append(q, x);
	}
	if (bytes)
		tcp_want_output(c);
}

int arn_tcp_write_ref(struct arn_tcp_conn *c, struct rte_mbuf *m, const void *data, uint32_t len)
{
	const char *d = data;
	const char *b = rte_pktmbuf_mtod(m, const char *);
	if (d < b || len > m->data_len || (size_t)(d - b) > (size_t)(m->data_len - len))
		return -EINVAL;
	/* Below half a segment a reference would pin more pool than it saves
	 * copying: the bytes join the queue's tail instead. And a reference
	 * costs about three times the pool per byte queued that a copy does
	 * (the received mbuf holds one segment, the indirect one nothing):
	 * under pool pressure (tcp_rmem.c: under a quarter free, e.g. slow
	 * readers holding full send queues) the bytes are copied, densely. */
	if (len < c->wk->seg_max / 2 || c->wk->pressure)
		return write_tail(c, data, len) ? (int)len : arn_tcp_write(c, data, len);
	int rc = writable_state(c);
	if (rc != 0)
		return rc;
	if (c->sndq.bytes >= c->sndbuf) {
		c->flags |= TF_WANT_WRITE;
		return 0;
	}
	struct rte_mbuf *r = arn_net_alloc(c->wk->lc);
	if (r == NULL)
		return arn_tcp_write(c, data, len); /* which counts the shortage */
	/* attached to m's buffer (to its direct mbuf's if m is indirect):
	 * the bytes live as long as the reference, whoever frees m */
	rte_pktmbuf_attach(r, m);
	r->data_off = (uint16_t)(d - (const char *)r->buf_addr);
	r->data_len = (uint16_t)len;
	r->pkt_len = len;
	r->nb_segs = 1;
	r->next = NULL;
	tcp_q_append(&c->sndq, r);
	c->wk->cnt[ARN_TCP_C_SND_BYREF] += len;
	tcp_want_output(c);
	return (int)len;
}

/* tcp_rcv_space_adjust (tcp_rmem.c) for a read, inline: the reads that
 * can do nothing (tcp_rcv_space_too_soon) return without a call; a
 * clamped buffer always calls (what it read goes back). Every read of a keep-alive request paid the
 * call (bench/cost/run: 27 instructions each, 2 a request). Here, not in tcp_int.h: the header
 * would call into tcp_rmem.c, which includes it. */
static inline void tcp_rcv_space_adjust(struct arn_tcp_conn *c)
{
	if (!c->rmem_clamped && tcp_rcv_space_too_soon(c))
		return;
	tcp_rcv_space_adjust_slow(c);
}

static inline void window_update_check(struct arn_tcp_conn *c)
{
	if (c->state == TCPS_CLOSED || c->state == TCPS_TIME_WAIT)
		return;
	/* what it read may grow the buffer, and the window with it (no call
	 * when it cannot: autotuning off, or the buffer at its ceiling) */
	if (c->rcvbuf < c->wk->rcvbuf_max)
		tcp_rcv_space_adjust(c);
	uint32_t old = seq_gt(c->rcv_adv, c->rcv_nxt) ? c->rcv_adv - c->rcv_nxt : 0;
	uint32_t now = c->rcvbuf > c->rcvq.bytes ? c->rcvbuf - c->rcvq.bytes : 0;
	uint32_t step = RTE_MIN(c->rcvbuf / 2, 2u * c->mss);
	if (now > old && now - old >= step) {
		c->flags |= TF_ACK_NOW;
		tcp_want_output(c);
	}
	/* Linux's tcp_cleanup_rbuf: the application drained what a pushed
	 * segment brought and the exchange is not interactive, so no data of
	 * ours will carry the owed ACK soon: send it now. On accepted
	 * connections only: on ours the application knows better whether the
	 * peer waits (a response still incomplete) and says so with
	 * arn_tcp_ack_now(); a complete response's ACK may wait for the next
	 * request. */
	if ((c->flags & (TF_DELACK | TF_PUSHED | TF_PASSIVE)) ==
		(TF_DELACK | TF_PUSHED | TF_PASSIVE) &&
	    !(c->flags & TF_PINGPONG) && c->rcvq.bytes == 0) {
		c->flags |= TF_ACK_NOW;
		tcp_want_output(c);
	}
}

void arn_tcp_ack_now(struct arn_tcp_conn *c)
{
	/* Only for pushed data, as Linux's ICSK_ACK_PUSHED: a bulk sender
	 * pushes at the end of each write, not every segment, so a download
	 * keeps its every-second-segment ACKs. */
	if ((c->flags & (TF_DELACK | TF_PUSHED)) == (TF_DELACK | TF_PUSHED)) {
		c->flags |= TF_ACK_NOW;
		tcp_want_output(c);
	}
}

void arn_tcp_rx_consume(struct arn_tcp_conn *c, uint32_t n)
{
	struct tcp_q *q = &c->rcvq;
	while (n > 0 && q->head) {
		struct rte_mbuf *m = q->head;
		if (m->data_len <= n) {
			n -= m->data_len;
			q->bytes -= m->data_len;
			q->n--;
			q->head = m->next;
			if (q->head == NULL)
				q->tail = NULL;
			m->next = NULL;
			rte_pktmbuf_free_seg(m);
		} else {
			rte_pktmbuf_adj(m, (uint16_t)n);
			q->bytes -= n;
			n = 0;
			c->rmem_queued++; /* a head maybe small: tcp_rmem.c's collapse() */
		}
	}
	window_update_check(c);
}

uint32_t arn_tcp_read(struct arn_tcp_conn *c, void *buf, uint32_t len)
{
	uint8_t *dst = buf;
	uint32_t done = 0;
	for (struct rte_mbuf *m = c->rcvq.head; m && done < len; m = m->next) {
		uint32_t k = RTE_MIN((uint32_t)m->data_len, len - done);
		memcpy(dst + done, rte_pktmbuf_mtod(m, uint8_t *), k);
		done += k;
	}
	arn_tcp_rx_consume(c, done);
	return done;
}

/* arn_tcp_rx_take's loop: @p n (0 < n <= the queue's bytes) over more
 * than one mbuf, or part of one. Out of line, so that the usual take of
 * one whole mbuf saves no registers for it. */
static __attribute__((noinline)) struct rte_mbuf *rx_take_loop(struct arn_tcp_conn *c, uint32_t n)
{
	struct tcp_q *q = &c->rcvq;
	struct rte_mbuf *head = NULL, *tail = NULL;
	uint32_t got = 0;
	uint16_t segs = 0;
	while (got < n) {
		struct rte_mbuf *m = q->head;
		uint32_t want = n - got;
		if (m->data_len > want) {
			/* split: an indirect mbuf takes the first part */
			/* clone this mbuf only, not the rest of the queue */
			struct rte_mbuf *rest = m->next;
			m->next = NULL;
			m->nb_segs = 1;
			m->pkt_len = m->data_len;
			struct rte_mbuf *part = rte_pktmbuf_clone(m, m->pool);
			m->next = rest;
			if (part == NULL)
				break;
			part->data_len = (uint16_t)want;
			part->pkt_len = want;
			rte_pktmbuf_adj(m, (uint16_t)want);
			q->bytes -= want;
			c->rmem_queued++; /* a head maybe small: tcp_rmem.c's collapse() */
			m = part;
		} else {
			q->head = m->next;
			if (q->head == NULL)
				q->tail = NULL;
			q->bytes -= m->data_len;
			q->n--;
		}
		m->next = NULL;
		if (tail)
			tail->next = m;
		else
			head = m;
		tail = m;
		got += m->data_len;
		segs++;
	}
	if (head) {
		head->pkt_len = got;
		head->nb_segs = segs;
	}
	window_update_check(c);
	return head;
}

struct rte_mbuf *arn_tcp_rx_take(struct arn_tcp_conn *c, uint32_t n)
{
	struct tcp_q *q = &c->rcvq;
	if (n > q->bytes)
		n = q->bytes;
	if (n == 0)
		return NULL;
	if (n != q->bytes || q->head != q->tail)
		return rx_take_loop(c, n);
	/* the whole queue in one mbuf (a request or a response in one
	 * segment): the loop's one round without the loop */
	struct rte_mbuf *head = q->head;
	q->head = q->tail = NULL;
	q->bytes = 0;
	q->n--;
	head->next = NULL;
	head->pkt_len = head->data_len;
	head->nb_segs = 1;
	window_update_check(c);
	return head;
}

int arn_tcp_shutdown(struct arn_tcp_conn *c)
{
	if (c->flags & TF_FIN_QUEUED)
		return 0;
	switch (c->state) {
	case TCPS_SYN_SENT:
	case TCPS_SYN_RECEIVED:
	case TCPS_ESTABLISHED:
	case TCPS_CLOSE_WAIT:
		c->flags |= TF_FIN_QUEUED;
		tcp_want_output(c);
		return 0;
	default:
		return -ENOTCONN;
	}
}

void arn_tcp_close(struct arn_tcp_conn *c)
{
	if (c->state == TCPS_CLOSED || (c->flags & TF_APP_CLOSED))
		return;
	c->flags |= TF_APP_CLOSED;
	c->flags &= ~TF_WANT_WRITE;
	if (c->state == TCPS_SYN_SENT) {
		tcp_conn_drop(c, -ECONNABORTED);
		return;
	}
	if (c->rcvq.bytes || c->oooq.bytes) {
		TCP_INC(c->wk, RST_ABORT);
		tcp_send_rst_conn(c);
		tcp_conn_drop(c, -ECONNABORTED);
		return;
	}
	arn_tcp_shutdown(c);
	if (c->state == TCPS_FIN_WAIT_2) {
		c->t_2msl = c->wk->now_ms + TCP_FIN_WAIT2_MS;
		tcp_timer_update(c);
	}
}

bool arn_tcp_close_quiet(struct arn_tcp_conn *c)
{
	if (c->state == TCPS_ESTABLISHED && !(c->flags & (TF_APP_CLOSED | TF_FIN_QUEUED)) &&
	    (c->flags & TF_TS_OK) && c->snd_una == c->snd_max && !c->sndq.bytes && !c->rcvq.bytes &&
	    !c->oooq.bytes) {
		c->flags |= TF_APP_CLOSED;
		TCP_INC(c->wk, RST_QUIET_CLOSE);
		tcp_send_rst_conn(c);
		tcp_conn_drop(c, -ECONNABORTED);
		return true;
	}
	arn_tcp_close(c);
	return false;
}

void arn_tcp_abort(struct arn_tcp_conn *c)
{
	if (c->state == TCPS_CLOSED)
		return;
	c->flags |= TF_APP_CLOSED;
	if (c->state != TCPS_SYN_SENT && c->state != TCPS_TIME_WAIT) {
		TCP_INC(c->wk, RST_ABORT);
		tcp_send_rst_conn(c);
	}
	tcp_conn_drop(c, -ECONNABORTED);
}

void arn_tcp_set_keepalive(struct arn_tcp_conn *c, uint32_t idle_s, uint32_t intvl_s,
			   uint32_t count)
{
	if (idle_s == 0 || intvl_s == 0 || count == 0) {
		c->flags &= ~TF_KEEPALIVE;
		if (c->state >= TCPS_ESTABLISHED)
			c->t_keep = 0;
		return;
	}
	c->flags |= TF_KEEPALIVE;
	c->keep_idle_ms = idle_s * 1000;
	c->keep_intvl_ms = intvl_s * 1000;
	c->keep_cnt = (uint8_t)RTE_MIN(count, 255u);
	if (c->state == TCPS_ESTABLISHED) {
		c->t_keep = c->wk->now_ms + c->keep_idle_ms;
		tcp_timer_update(c);
	}
}

/* ---- handles ------------------------------------------------------------------------- */

uint64_t arn_tcp_handle(const struct arn_tcp_conn *c)
{
	return ((uint64_t)c->wk->index << 56) | ((uint64_t)(c->gen & 0xffffff) << 32) | c->index;
}

struct arn_tcp_conn *arn_tcp_lookup(struct arn_lcore *lc, uint64_t h)
{
	struct arn_tcp_worker *wk = tcp_wk(lc);
	if (wk == NULL || arn_tcp_handle_worker(h) != wk->index)
		return NULL;
	uint32_t idx = (uint32_t)h;
	if (idx >= wk->max_conns)
		return NULL;
	struct arn_tcp_conn *c = &wk->conns[idx];
	if ((c->flags & TF_FREE) || c->gen != ((h >> 32) & 0xffffff) || !(c->flags & TF_ACCEPTED) ||
	    c->state == TCPS_CLOSED)
		return NULL;
	return c;
}
