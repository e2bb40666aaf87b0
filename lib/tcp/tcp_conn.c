/*
 * The bottom of lib/tcp: the pools (connection blocks, RACK's transmission
 * records), the flow table, listeners, mbuf queues, the worker's lists of
 * connections (output pending, close notifications, TIME_WAIT oldest
 * first, out-of-order queues oldest first) and the connection lifecycle
 * (drop, TIME_WAIT, deferred close notification and free). Everything
 * else in lib/tcp builds on it; it calls only the timer wheel below it.
 * The worker's entry points (init, poll, fini) are tcp_worker.c's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "arn_log.h"
#include "arn_table.h"
#include "tcp_int.h"

static const char *const state_names[TCPS_COUNT] = {
    "CLOSED",	  "LISTEN",	"SYN_SENT", "SYN_RECEIVED", "ESTABLISHED", "FIN_WAIT_1",
    "FIN_WAIT_2", "CLOSE_WAIT", "CLOSING",  "LAST_ACK",	    "TIME_WAIT",
};

const char *tcp_state_name(int s)
{
	return s >= 0 && s < TCPS_COUNT ? state_names[s] : "?";
}

/* ---- RACK transmission records (tcp_rack.c uses them) ------------------------- */
void tcp_txr_pool_init(struct arn_tcp_worker *wk)
{
	wk->txr_free = TXR_NIL;
	for (uint32_t i = wk->txr_n; i-- > 0;) {
		wk->txr[i].next = wk->txr_free;
		wk->txr_free = i;
	}
}

void tcp_txr_free_all(struct arn_tcp_conn *c)
{
	struct arn_tcp_worker *wk = c->wk;
	uint32_t i = c->txr_head;
	while (i != TXR_NIL) {
		uint32_t n = wk->txr[i].next;
		tcp_txr_put(wk, i);
		i = n;
	}
	c->txr_head = c->txr_tail = TXR_NIL;
	c->lost_bytes = c->retrans_bytes = 0;
}

/* ---- the worker's lists ---------------------------------------------------------- */

void tcp_pace_wait(struct arn_tcp_conn *c)
{
	if (c->paced_listed)
		return;
	c->paced_listed = true;
	c->pnext = c->wk->paced;
	c->wk->paced = c;
}

void tcp_rack_wait(struct arn_tcp_conn *c)
{
	if (c->rack_listed)
		return;
	c->rack_listed = true;
	c->rknext = c->wk->rack_wait;
	c->wk->rack_wait = c;
}

/* The link of @p c at byte offset @p off: one list's code for both lists */
static inline struct tcp_link *link_at(struct arn_tcp_conn *c, size_t off)
{
	return (struct tcp_link *)((char *)c + off);
}

static void list_append(struct tcp_list *l, struct arn_tcp_conn *c, size_t off)
{
	struct tcp_link *k = link_at(c, off);
	k->next = NULL;
	k->prev = l->tail;
	if (l->tail)
		link_at(l->tail, off)->next = c;
	else
		l->head = c;
	l->tail = c;
}

static void list_remove(struct tcp_list *l, struct arn_tcp_conn *c, size_t off)
{
	struct tcp_link *k = link_at(c, off);
	if (k->prev)
		link_at(k->prev, off)->next = k->next;
	else
		l->head = k->next;
	if (k->next)
		link_at(k->next, off)->prev = k->prev;
	else
		l->tail = k->prev;
	k->prev = k->next = NULL;
}

void tcp_ooo_track(struct arn_tcp_conn *c)
{
	if (c->ooo_listed)
		return;
	c->ooo_listed = true;
	list_append(&c->wk->ooo, c, offsetof(struct arn_tcp_conn, ooo_link));
}

void tcp_ooo_untrack(struct arn_tcp_conn *c)
{
	if (!c->ooo_listed)
		return;
	c->ooo_listed = false;
	list_remove(&c->wk->ooo, c, offsetof(struct arn_tcp_conn, ooo_link));
}

void tcp_rmem_track(struct arn_tcp_conn *c)
{
	if (c->rmem_listed)
		return;
	c->rmem_listed = true;
	list_append(&c->wk->rmem, c, offsetof(struct arn_tcp_conn, rmem_link));
}

void tcp_rmem_untrack(struct arn_tcp_conn *c)
{
	if (!c->rmem_listed)
		return;
	c->rmem_listed = false;
	list_remove(&c->wk->rmem, c, offsetof(struct arn_tcp_conn, rmem_link));
}

uint32_t tcp_rmem_budget(const struct arn_tcp_worker *wk, uint32_t rcvbuf)
{
	/* twice what a full window of full segments takes */
	uint32_t full = (rcvbuf + wk->seg_max - 1) / wk->seg_max;
	return RTE_MAX(2 * full + 8, 32u);
}

void tcp_ooo_prune(struct arn_tcp_conn *c)
{
	struct arn_tcp_worker *wk = c->wk;
	uint32_t n = c->oooq.n;
	if (n == 0) {
		/* Off the worker's list even so: the callers that prune the
		 * list's head until the bound holds (tcp_rmem.c) would spin on
		 * a connection listed with nothing queued. No path is known to
		 * leave one listed so (tcp_ooo_insert refusing a segment after
		 * it freed every mbuf the segment covered comes closest), and
		 * a loop must not depend on that. */
		tcp_ooo_untrack(c);
		return;
	}
	wk->cnt[ARN_TCP_C_OOO_PRUNED] += n;
	wk->cnt[ARN_TCP_C_OOO_MBUFS] -= n;
	tcp_ooo_clear(c);
	tcp_q_free(&c->oooq);
	tcp_ooo_untrack(c);
	/* what we no longer hold is no longer reported (Linux's
	 * tcp_sack_reset after tcp_prune_ofo_queue) */
	c->n_rsack = 0;
	c->flags &= ~TF_OOO_FIN;
	c->flags |= TF_ACK_NOW;
	tcp_want_output(c);
}

/* ---- queues ------------------------------------------------------------------ */

void tcp_q_free(struct tcp_q *q)
{
	struct rte_mbuf *m = q->head;
	while (m) {
		struct rte_mbuf *n = m->next;
		m->next = NULL;
		m->nb_segs = 1;
		rte_pktmbuf_free_seg(m);
		m = n;
	}
	memset(q, 0, sizeof(*q));
}

/* ---- flow table ----------------------------------------------------------------- */

struct arn_tcp_conn *tcp_lookup(struct arn_tcp_worker *wk, uint32_t laddr, uint16_t lport,
				uint32_t raddr, uint16_t rport)
{
	return tcp_lookup_inline(wk, laddr, lport, raddr, rport);
}

void tcp_hash_insert(struct arn_tcp_worker *wk, struct arn_tcp_conn *c)
{
	struct arn_tcp_conn **b =
	    &wk->htab[tcp_flow_hash(wk, c->laddr, c->lport, c->raddr, c->rport) & wk->hmask];
	c->hnext = *b;
	*b = c;
}

static void hash_remove(struct arn_tcp_worker *wk, struct arn_tcp_conn *c)
{
	struct arn_tcp_conn **p =
	    &wk->htab[tcp_flow_hash(wk, c->laddr, c->lport, c->raddr, c->rport) & wk->hmask];
	for (; *p; p = &(*p)->hnext)
		if (*p == c) {
			*p = c->hnext;
			c->hnext = NULL;
			return;
		}
}

struct arn_tcp_listener *tcp_listener_find(struct arn_tcp_worker *wk, uint32_t addr, uint16_t port)
{
	struct arn_tcp_listener *any = NULL;
	for (unsigned i = 0; i < TCP_LISTENERS_MAX; i++) {
		struct arn_tcp_listener *l = &wk->lsn[i];
		if (!l->used || l->port != port)
			continue;
		if (l->addr == addr)
			return l;
		if (l->addr == 0)
			any = l;
	}
	return any;
}

/* ---- pool ---------------------------------------------------------------------- */

/* The out-of-order queue goes: its mbufs, its place on the worker's list
 * and its share of the worker's gauge, always together. */
static void ooo_free(struct arn_tcp_worker *wk, struct arn_tcp_conn *c)
{
	wk->cnt[ARN_TCP_C_OOO_MBUFS] -= c->oooq.n;
	tcp_ooo_clear(c);
	tcp_q_free(&c->oooq);
	tcp_ooo_untrack(c);
}

static void conn_release(struct arn_tcp_worker *wk, struct arn_tcp_conn *c)
{
	if (c->rmem_grant)
		tcp_rmem_ungrant(c);
	if (c->smem_grant)
		tcp_smem_ungrant(c);
	tcp_rmem_untrack(c);
	tcp_q_free(&c->sndq);
	tcp_q_free(&c->rcvq);
	ooo_free(wk, c);
	tcp_txr_free_all(c);
	if (c->paced_listed) {
		struct arn_tcp_conn **pp = &wk->paced;
		while (*pp && *pp != c)
			pp = &(*pp)->pnext;
		if (*pp)
			*pp = c->pnext;
	}
	if (c->rack_listed) {
		struct arn_tcp_conn **pp = &wk->rack_wait;
		while (*pp && *pp != c)
			pp = &(*pp)->rknext;
		if (*pp)
			*pp = c->rknext;
	}
	uint32_t gen = c->gen + 1;
	uint32_t idx = c->index;
	memset(c, 0, sizeof(*c));
	c->txr_head = c->txr_tail = TXR_NIL;
	c->gen = gen & 0xffffff;
	c->index = idx;
	c->wk = wk;
	c->flags = TF_FREE;
	c->hnext = wk->free;
	wk->free = c;
	wk->n_free++;
}

struct arn_tcp_conn *tcp_conn_alloc(struct arn_tcp_worker *wk, bool passive)
{
	/* The last blocks are kept for active opens: a flood of clients must
	 * not leave the requests of connected ones without an upstream
	 * connection (they would fail with 503 while the flood waits). */
	uint32_t keep = passive ? wk->reserve : 0;
	/* (TIME_WAIT holds no block: the blocks counted here are live.) */
	struct arn_tcp_conn *c = wk->free;
	if (c == NULL || wk->n_free <= keep) {
		TCP_INC(wk, POOL_EXHAUSTED);
		return NULL;
	}
	wk->n_free--;
	if (wk->max_conns - wk->n_free > wk->cnt[ARN_TCP_C_BLOCKS_HIGH_WATER])
		wk->cnt[ARN_TCP_C_BLOCKS_HIGH_WATER] = wk->max_conns - wk->n_free;
	wk->free = c->hnext;
	c->hnext = NULL;
	c->flags = 0;
	return c;
}

void tcp_conn_init_common(struct arn_tcp_worker *wk, struct arn_tcp_conn *c, uint32_t laddr,
			  uint16_t lport, uint32_t raddr, uint16_t rport, enum arn_tcp_cc cc)
{
	c->wk = wk;
	c->laddr = laddr;
	c->lport = lport;
	c->raddr = raddr;
	c->rport = rport;
	c->rcvbuf = wk->rcvbuf;
	c->sndbuf = wk->sndbuf;
	c->rmem_max = tcp_rmem_budget(wk, c->rcvbuf);
	c->rto = TCP_RTO_INIT_MS;
	c->peer_mss = TCP_DEFAULT_MSS;
	c->mss = TCP_DEFAULT_MSS;
	if (cc == ARN_TCP_CC_DEFAULT)
		cc = wk->cc_default;
	c->cc = cc == ARN_TCP_CC_NEWRENO ? &tcp_cc_newreno
		: cc == ARN_TCP_CC_BBR	 ? &tcp_cc_bbr
					 : &tcp_cc_cubic;
	c->ssthresh = UINT32_MAX;
	c->txr_head = c->txr_tail = TXR_NIL;
	c->reo_wnd_mult = 1;
	c->rcv_ws = tcp_rcv_wscale(wk);
	tcp_random(&c->ts_offset, sizeof(c->ts_offset));
	TCP_INC(wk, ACTIVE);
}

void tcp_set_state(struct arn_tcp_conn *c, int state)
{
	ARN_TRACE(TCP, "%u.%u.%u.%u:%u %s -> %s", c->raddr >> 24, (c->raddr >> 16) & 255,
		  (c->raddr >> 8) & 255, c->raddr & 255, c->rport, tcp_state_name(c->state),
		  tcp_state_name(state));
	c->state = (uint8_t)state;
}

/* ---- lifecycle -------------------------------------------------------------------- */

void tcp_schedule_close(struct arn_tcp_conn *c, int reason)
{
	if (c->flags & TF_NOTIFIED)
		return;
	c->flags |= TF_NOTIFIED;
	c->close_reason = reason;
	if (!(c->flags & TF_IN_CLOSEQ)) {
		c->flags |= TF_IN_CLOSEQ;
		c->cnext = c->wk->closeq;
		c->wk->closeq = c;
	}
}

static void syn_queue_leave(struct arn_tcp_conn *c)
{
	if (c->lsn) {
		if (c->lsn->syn_queued)
			c->lsn->syn_queued--;
		c->lsn = NULL;
	}
}

void tcp_conn_drop(struct arn_tcp_conn *c, int reason)
{
	struct arn_tcp_worker *wk = c->wk;
	if (c->state == TCPS_CLOSED)
		return;
	TCP_DEC(wk, ACTIVE);
	syn_queue_leave(c);
	tcp_set_state(c, TCPS_CLOSED);
	tcp_timer_cancel_all(c);
	hash_remove(wk, c);
	/* Buffers go back to the pool now; the block itself waits for the
	 * close queue so that callers up the stack may still look at it. */
	tcp_q_free(&c->sndq);
	tcp_q_free(&c->rcvq);
	ooo_free(wk, c);
	tcp_txr_free_all(c);
	c->snd_cur = NULL;
	/* on_close if the application knows the connection (once); either way
	 * the block is released from the close queue. */
	if (c->flags & TF_ACCEPTED)
		tcp_schedule_close(c, reason);
	if (!(c->flags & TF_IN_CLOSEQ)) {
		c->flags |= TF_IN_CLOSEQ;
		c->cnext = wk->closeq;
		wk->closeq = c;
	}
}

/* ---- TIME_WAIT records ---------------------------------------------------------- */

int tcp_tw_pool_init(struct arn_tcp_worker *wk, uint32_t n)
{
	uint32_t hsize = 1;
	while (hsize < n && hsize < (1u << 30))
		hsize <<= 1;
	wk->tw = arn_table_zalloc(sizeof(*wk->tw) * (size_t)n);
	wk->tw_htab = arn_table_zalloc(sizeof(*wk->tw_htab) * (size_t)hsize);
	if (wk->tw == NULL || wk->tw_htab == NULL) {
		arn_table_free(wk->tw);
		arn_table_free(wk->tw_htab);
		wk->tw = NULL;
		wk->tw_htab = NULL;
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < hsize; i++)
		wk->tw_htab[i] = TW_NIL;
	wk->tw_hmask = hsize - 1;
	wk->tw_n = n;
	wk->tw_free = TW_NIL;
	for (uint32_t i = n; i-- > 0;) {
		wk->tw[i].next = wk->tw_free;
		wk->tw_free = i;
	}
	wk->tw_head = wk->tw_tail = TW_NIL;
	return 0;
}

static uint32_t *tw_slot(struct arn_tcp_worker *wk, uint32_t laddr, uint16_t lport, uint32_t raddr,
			 uint16_t rport)
{
	return &wk->tw_htab[tcp_flow_hash(wk, laddr, lport, raddr, rport) & wk->tw_hmask];
}

struct tcp_tw *tcp_tw_lookup(struct arn_tcp_worker *wk, uint32_t laddr, uint16_t lport,
			     uint32_t raddr, uint16_t rport)
{
	if (wk->cnt[ARN_TCP_C_TIME_WAIT] == 0)
		return NULL; /* the common case costs one load */
	for (uint32_t i = *tw_slot(wk, laddr, lport, raddr, rport); i != TW_NIL;
	     i = wk->tw[i].hnext) {
		struct tcp_tw *t = &wk->tw[i];
		if (t->raddr == raddr && t->rport == rport && t->lport == lport &&
		    t->laddr == laddr)
			return t;
	}
	return NULL;
}

static void tw_list_unlink(struct arn_tcp_worker *wk, struct tcp_tw *t)
{
	if (t->prev != TW_NIL)
		wk->tw[t->prev].next = t->next;
	else
		wk->tw_head = t->next;
	if (t->next != TW_NIL)
		wk->tw[t->next].prev = t->prev;
	else
		wk->tw_tail = t->prev;
	t->prev = t->next = TW_NIL;
}

static void tw_list_append(struct arn_tcp_worker *wk, struct tcp_tw *t)
{
	uint32_t i = (uint32_t)(t - wk->tw);
	t->next = TW_NIL;
	t->prev = wk->tw_tail;
	if (wk->tw_tail != TW_NIL)
		wk->tw[wk->tw_tail].next = i;
	else
		wk->tw_head = i;
	wk->tw_tail = i;
}

void tcp_tw_free(struct arn_tcp_worker *wk, struct tcp_tw *t)
{
	uint32_t i = (uint32_t)(t - wk->tw);
	for (uint32_t *p = tw_slot(wk, t->laddr, t->lport, t->raddr, t->rport); *p != TW_NIL;
	     p = &wk->tw[*p].hnext)
		if (*p == i) {
			*p = t->hnext;
			break;
		}
	tw_list_unlink(wk, t);
	t->used = 0;
	t->next = wk->tw_free;
	wk->tw_free = i;
	TCP_DEC(wk, TIME_WAIT);
}

void tcp_tw_restart(struct arn_tcp_worker *wk, struct tcp_tw *t)
{
	t->expire_ms = wk->now_ms + 2 * TCP_MSL_MS;
	tw_list_unlink(wk, t);
	tw_list_append(wk, t);
}

void tcp_tw_expire(struct arn_tcp_worker *wk)
{
	/* every record lives 2 MSL from its last FIN, so the list is in
	 * expiry order and the head is the next to go */
	while (wk->tw_head != TW_NIL && wk->tw[wk->tw_head].expire_ms <= wk->now_ms)
		tcp_tw_free(wk, &wk->tw[wk->tw_head]);
}

/* A record for @p c; when the pool is full, the oldest record is recycled
 * (never refused: a connection must be able to end). */
static struct tcp_tw *tw_alloc(struct arn_tcp_worker *wk)
{
	if (wk->tw_free == TW_NIL) {
		if (wk->tw_head == TW_NIL)
			return NULL; /* a pool of 0 records */
		tcp_tw_free(wk, &wk->tw[wk->tw_head]);
		TCP_INC(wk, TW_RECYCLED);
	}
	uint32_t i = wk->tw_free;
	wk->tw_free = wk->tw[i].next;
	return &wk->tw[i];
}

void tcp_enter_time_wait(struct arn_tcp_conn *c)
{
	struct arn_tcp_worker *wk = c->wk;
	struct tcp_tw *t = tw_alloc(wk);
	if (t != NULL) {
		t->laddr = c->laddr;
		t->raddr = c->raddr;
		t->lport = c->lport;
		t->rport = c->rport;
		t->snd_nxt = c->snd_max;
		t->rcv_nxt = c->rcv_nxt;
		t->ts_ok = (c->flags & TF_TS_OK) != 0;
		t->ts_recent = c->ts_recent;
		t->ts_offset = c->ts_offset;
		uint32_t wnd = seq_gt(c->rcv_adv, c->rcv_nxt) ? c->rcv_adv - c->rcv_nxt : 0;
		t->wnd = (uint16_t)RTE_MIN(wnd >> c->rcv_ws, 65535u);
		t->used = 1;
		t->ack_ms = 0;
		t->expire_ms = wk->now_ms + 2 * TCP_MSL_MS;
		uint32_t *slot = tw_slot(wk, t->laddr, t->lport, t->raddr, t->rport);
		t->hnext = *slot;
		*slot = (uint32_t)(t - wk->tw);
		tw_list_append(wk, t);
		TCP_INC(wk, TIME_WAIT);
	}
	/* The block goes now: an orderly close for the application, and its
	 * receive queue stays readable until on_close has run. */
	TCP_DEC(wk, ACTIVE);
	syn_queue_leave(c);
	tcp_set_state(c, TCPS_CLOSED);
	tcp_timer_cancel_all(c);
	hash_remove(wk, c);
	tcp_q_free(&c->sndq);
	ooo_free(wk, c);
	tcp_txr_free_all(c);
	c->snd_cur = NULL;
	if (c->flags & TF_ACCEPTED)
		tcp_schedule_close(c, 0);
	if (!(c->flags & TF_IN_CLOSEQ)) {
		c->flags |= TF_IN_CLOSEQ;
		c->cnext = wk->closeq;
		wk->closeq = c;
	}
}

void tcp_process_closeq(struct arn_tcp_worker *wk)
{
	while (wk->closeq) {
		struct arn_tcp_conn *c = wk->closeq;
		wk->closeq = c->cnext;
		c->cnext = NULL;
		c->flags &= ~TF_IN_CLOSEQ;
		if ((c->flags & TF_ACCEPTED) && c->ops && c->ops->on_close) {
			const struct arn_tcp_ops *ops = c->ops;
			c->flags &= ~TF_ACCEPTED;
			ops->on_close(c, c->close_reason);
		}
		c->flags &= ~TF_ACCEPTED;
		c->ops = NULL;
		c->user = NULL;
		tcp_q_free(&c->rcvq);
		if (c->state == TCPS_CLOSED)
			conn_release(wk, c);
	}
}
