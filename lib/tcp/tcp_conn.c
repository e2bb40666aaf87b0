/*
 * Per-worker TCP state: connection pool, flow table, listeners, the
 * connection lifecycle (drop, TIME_WAIT, deferred close notification and
 * free), and the arn_tcp_worker_* entry points of the lib/net contract.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_hash_crc.h>

#include "arn_bootstrap.h"
#include "arn_log.h"
#include "arn_stats.h"
#include "tcp_int.h"

struct arn_tcp_worker *tcp_workers[TCP_MAX_WORKERS];

static const struct arn_tcp_app *apps[TCP_APPS_MAX];
static unsigned n_apps;

static const char *const state_names[TCPS_COUNT] = {
    "CLOSED",	  "LISTEN",	"SYN_SENT", "SYN_RECEIVED", "ESTABLISHED", "FIN_WAIT_1",
    "FIN_WAIT_2", "CLOSE_WAIT", "CLOSING",  "LAST_ACK",	    "TIME_WAIT",
};

const char *tcp_state_name(int s)
{
	return s >= 0 && s < TCPS_COUNT ? state_names[s] : "?";
}

int arn_tcp_app_register(const struct arn_tcp_app *app)
{
	for (unsigned i = 0; i < n_apps; i++)
		if (apps[i] == app)
			return 0;
	if (n_apps == TCP_APPS_MAX)
		return -ENOSPC;
	apps[n_apps++] = app;
	return 0;
}

/* ---- queues ------------------------------------------------------------------ */

void tcp_q_append(struct tcp_q *q, struct rte_mbuf *m)
{
	m->next = NULL;
	if (q->tail)
		q->tail->next = m;
	else
		q->head = m;
	q->tail = m;
	q->bytes += m->data_len;
	q->n++;
}

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

static inline uint32_t flow_hash(uint32_t laddr, uint16_t lport, uint32_t raddr, uint16_t rport)
{
	uint32_t h = rte_hash_crc_4byte(raddr, laddr);
	return rte_hash_crc_4byte(((uint32_t)lport << 16) | rport, h);
}

struct arn_tcp_conn *tcp_lookup(struct arn_tcp_worker *wk, uint32_t laddr, uint16_t lport,
				uint32_t raddr, uint16_t rport)
{
	struct arn_tcp_conn *c = wk->htab[flow_hash(laddr, lport, raddr, rport) & wk->hmask];
	for (; c; c = c->hnext)
		if (c->raddr == raddr && c->rport == rport && c->lport == lport &&
		    c->laddr == laddr)
			return c;
	return NULL;
}

void tcp_hash_insert(struct arn_tcp_worker *wk, struct arn_tcp_conn *c)
{
	struct arn_tcp_conn **b =
	    &wk->htab[flow_hash(c->laddr, c->lport, c->raddr, c->rport) & wk->hmask];
	c->hnext = *b;
	*b = c;
}

static void hash_remove(struct arn_tcp_worker *wk, struct arn_tcp_conn *c)
{
	struct arn_tcp_conn **p =
	    &wk->htab[flow_hash(c->laddr, c->lport, c->raddr, c->rport) & wk->hmask];
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

static void tw_unlink(struct arn_tcp_worker *wk, struct arn_tcp_conn *c)
{
	if (c->twprev)
		c->twprev->twnext = c->twnext;
	else if (wk->tw_head == c)
		wk->tw_head = c->twnext;
	else
		return; /* not on the list */
	if (c->twnext)
		c->twnext->twprev = c->twprev;
	else
		wk->tw_tail = c->twprev;
	c->twprev = c->twnext = NULL;
}

static void conn_release(struct arn_tcp_worker *wk, struct arn_tcp_conn *c)
{
	tcp_q_free(&c->sndq);
	tcp_q_free(&c->rcvq);
	wk->cnt[ARN_TCP_C_OOO_MBUFS] -= c->oooq.n;
	tcp_q_free(&c->oooq);
	tcp_ooo_untrack(c);
	tcp_txr_free_all(c);
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
	if (wk->n_free <= keep && wk->tw_head != NULL && !(wk->tw_head->flags & TF_IN_CLOSEQ)) {
		/* Out of blocks: the oldest TIME_WAIT connection is the cheapest
		 * to give up (RFC 6191-style reuse is safe with timestamps, and
		 * without them it is what Linux's tw bucket limit does too). */
		struct arn_tcp_conn *tw = wk->tw_head;
		tw_unlink(wk, tw);
		tcp_timer_cancel_all(tw);
		hash_remove(wk, tw);
		TCP_DEC(wk, TIME_WAIT);
		TCP_INC(wk, TW_RECYCLED);
		conn_release(wk, tw);
	}
	struct arn_tcp_conn *c = wk->free;
	if (c == NULL || wk->n_free <= keep) {
		TCP_INC(wk, POOL_EXHAUSTED);
		return NULL;
	}
	wk->n_free--;
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
	c->cc = cc == ARN_TCP_CC_NEWRENO ? &tcp_cc_newreno : &tcp_cc_cubic;
	c->ssthresh = UINT32_MAX;
	c->txr_head = c->txr_tail = TXR_NIL;
	c->reo_wnd_mult = 1;
	/* Smallest window scale that lets the whole buffer be advertised. */
	uint8_t ws = 0;
	while (ws < 14 && (c->rcvbuf >> ws) > 65535)
		ws++;
	c->rcv_ws = ws;
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
	if (c->state == TCPS_TIME_WAIT) {
		tw_unlink(wk, c);
		TCP_DEC(wk, TIME_WAIT);
	} else {
		TCP_DEC(wk, ACTIVE);
	}
	syn_queue_leave(c);
	tcp_set_state(c, TCPS_CLOSED);
	tcp_timer_cancel_all(c);
	hash_remove(wk, c);
	/* Buffers go back to the pool now; the block itself waits for the
	 * close queue so that callers up the stack may still look at it. */
	tcp_q_free(&c->sndq);
	tcp_q_free(&c->rcvq);
	tcp_q_free(&c->oooq);
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

void tcp_enter_time_wait(struct arn_tcp_conn *c)
{
	struct arn_tcp_worker *wk = c->wk;
	tcp_set_state(c, TCPS_TIME_WAIT);
	TCP_DEC(wk, ACTIVE);
	TCP_INC(wk, TIME_WAIT);
	c->t_rexmt = c->t_keep = c->t_delack = 0;
	c->flags &= ~(TF_PERSIST | TF_DELACK);
	c->t_2msl = wk->now_ms + 2 * TCP_MSL_MS;
	tcp_timer_update(c);
	/* the receive queue stays readable until on_close has run */
	tcp_q_free(&c->sndq);
	tcp_q_free(&c->oooq);
	tcp_txr_free_all(c);
	c->snd_cur = NULL;
	c->twnext = NULL;
	c->twprev = wk->tw_tail;
	if (wk->tw_tail)
		wk->tw_tail->twnext = c;
	else
		wk->tw_head = c;
	wk->tw_tail = c;
	/* The application is done with it: an orderly close. */
	if (c->flags & TF_ACCEPTED)
		tcp_schedule_close(c, 0);
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
		/* TIME_WAIT blocks stay until their timer or recycling. */
	}
}

static const char *const counter_names[] = {
#define ARN_TCP_COUNTER(id, name, help) name,
#include "arn_tcp_counters.def"
#undef ARN_TCP_COUNTER
};

/* ---- the lib/net contract ---------------------------------------------------------- */

int arn_tcp_worker_init(struct arn_lcore *lc, const struct arn_dataplane *conf)
{
	unsigned idx = arn_net_worker_index(lc);
	if (idx >= TCP_MAX_WORKERS) {
		ARN_ERR(TCP, "worker %u: at most %u workers are supported", idx, TCP_MAX_WORKERS);
		return -EINVAL;
	}
	if (tcp_workers[idx] != NULL) {
		ARN_ERR(TCP, "worker %u: TCP state already exists", idx);
		return -EEXIST;
	}
	uint32_t maxc = conf && conf->tcp_max_connections ? conf->tcp_max_connections : 16384;
	struct arn_tcp_worker *wk =
	    aligned_alloc(RTE_CACHE_LINE_SIZE, RTE_ALIGN_CEIL(sizeof(*wk), RTE_CACHE_LINE_SIZE));
	if (wk == NULL)
		return -ENOMEM;
	memset(wk, 0, sizeof(*wk));
	wk->lc = lc;
	wk->index = idx;
	wk->hz = arn_net_hz();
	wk->tsc_per_ms = wk->hz / 1000 ? wk->hz / 1000 : 1;
	wk->tsc_per_us = wk->hz / 1000000 ? wk->hz / 1000000 : 1;
	wk->max_conns = maxc;
	wk->rcvbuf = conf && conf->tcp_rcvbuf ? conf->tcp_rcvbuf : 256 * 1024;
	wk->sndbuf = conf && conf->tcp_sndbuf ? conf->tcp_sndbuf : 256 * 1024;
	wk->cc_default =
	    conf && conf->tcp_cc == ARN_DP_TCP_CC_NEWRENO ? ARN_TCP_CC_NEWRENO : ARN_TCP_CC_CUBIC;
	if (wk->rcvbuf < 4096)
		wk->rcvbuf = 4096;
	if (wk->sndbuf < 4096)
		wk->sndbuf = 4096;
	size_t csz =
	    RTE_ALIGN_CEIL(sizeof(struct arn_tcp_conn) * (size_t)maxc, RTE_CACHE_LINE_SIZE);
	wk->conns = aligned_alloc(RTE_CACHE_LINE_SIZE, csz);
	uint32_t hsize = 1;
	while (hsize < maxc && hsize < (1u << 30))
		hsize <<= 1;
	wk->htab = calloc(hsize, sizeof(*wk->htab));
	/* RACK records: 8 segments in flight per connection on average;
	 * a connection that finds none left falls back to RFC 6675 */
	uint64_t nrec = (uint64_t)maxc * 8;
	if (nrec < 8192)
		nrec = 8192;
	if (nrec > (1u << 20))
		nrec = 1u << 20;
	wk->txr_n = (uint32_t)nrec;
	wk->txr = malloc(sizeof(*wk->txr) * wk->txr_n);
	if (wk->conns == NULL || wk->htab == NULL || wk->txr == NULL) {
		ARN_ERR(TCP, "worker %u: no memory for %u connections", idx, maxc);
		free(wk->conns);
		free(wk->htab);
		free(wk->txr);
		free(wk);
		return -ENOMEM;
	}
	memset(wk->conns, 0, csz);
	wk->hmask = hsize - 1;
	tcp_txr_pool_init(wk);
	for (uint32_t i = maxc; i-- > 0;) {
		struct arn_tcp_conn *c = &wk->conns[i];
		c->txr_head = c->txr_tail = TXR_NIL;
		c->index = i;
		c->wk = wk;
		c->flags = TF_FREE;
		c->hnext = wk->free;
		wk->free = c;
	}
	wk->n_free = maxc;
	wk->reserve = maxc / 8;
	/* What one mbuf of this worker's pool carries after the headroom:
	 * every segment is built in one. Asked of a real mbuf, so it holds
	 * whatever dataplane.mbuf_pool.data_room_size says. */
	struct rte_mbuf *probe = arn_net_alloc(lc);
	uint32_t room = probe ? rte_pktmbuf_tailroom(probe) : 0;
	struct rte_mempool *pool = probe ? probe->pool : NULL;
	if (probe)
		rte_pktmbuf_free(probe);
	if (room < TCP_HDR_LEN + TCP_MAX_OPT + TCP_DEFAULT_MSS) {
		ARN_ERR(TCP, "worker %u: mbufs hold %u bytes after the headroom; TCP needs %u", idx,
			room, TCP_HDR_LEN + TCP_MAX_OPT + TCP_DEFAULT_MSS);
		free(wk->conns);
		free(wk->htab);
		free(wk->txr);
		free(wk);
		return -ENOBUFS;
	}
	wk->seg_max = room - TCP_HDR_LEN - TCP_MAX_OPT;
	tcp_rmem_init(wk, pool);
	tcp_random(wk->key, sizeof(wk->key));
	tcp_random(wk->cookie_key, sizeof(wk->cookie_key));
	tcp_random(&wk->rng, sizeof(wk->rng));
	wk->rng |= 1;		    /* xorshift's state must not be 0 */
	wk->chack_sec = UINT64_MAX; /* the first challenge draws a budget */
	tcp_random(&wk->port_hint, sizeof(wk->port_hint));
	tcp_clock_set(wk, arn_net_now(lc));
	wk->wheel_ms = wk->now_ms;
	tcp_workers[idx] = wk;

	int rc = 0;
	for (unsigned i = 0; rc == 0 && i < n_apps; i++)
		if (apps[i]->worker_init)
			rc = apps[i]->worker_init(lc, apps[i]->arg);
	if (rc != 0) {
		arn_tcp_worker_fini(lc);
		return rc;
	}
	ARN_DEBUG(TCP, "worker %u: %u connection blocks, rcvbuf %u, sndbuf %u", idx, maxc,
		  wk->rcvbuf, wk->sndbuf);
	return 0;
}

void arn_tcp_worker_poll(struct arn_lcore *lc, uint64_t now_tsc)
{
	struct arn_tcp_worker *wk = tcp_wk(lc);
	if (wk == NULL)
		return;
	tcp_clock_set(wk, now_tsc);
	if (wk->now_ms != wk->wheel_ms)
		tcp_timer_run(wk, wk->now_ms);
	for (unsigned i = 0; i < n_apps; i++)
		if (apps[i]->worker_poll)
			apps[i]->worker_poll(lc, apps[i]->arg);
	tcp_rmem_poll(wk);
	tcp_process_outq(wk);
	tcp_process_closeq(wk);
}

void arn_tcp_worker_fini(struct arn_lcore *lc)
{
	unsigned idx = arn_net_worker_index(lc);
	struct arn_tcp_worker *wk = idx < TCP_MAX_WORKERS ? tcp_workers[idx] : NULL;
	if (wk == NULL)
		return;
	for (unsigned i = n_apps; i-- > 0;)
		if (apps[i]->worker_fini)
			apps[i]->worker_fini(lc, apps[i]->arg);
	/* Reset what is still open so peers do not wait for a timeout. */
	for (uint32_t i = 0; i < wk->max_conns; i++) {
		struct arn_tcp_conn *c = &wk->conns[i];
		if (c->flags & TF_FREE)
			continue;
		if (c->state != TCPS_CLOSED && c->state != TCPS_TIME_WAIT &&
		    c->state != TCPS_SYN_SENT)
			tcp_send_rst_conn(c);
		if (c->state != TCPS_CLOSED)
			tcp_conn_drop(c, -ECONNABORTED);
	}
	tcp_process_closeq(wk);
	/* one line of counters, as lib/net logs its own at shutdown */
	char line[2048];
	int n = snprintf(line, sizeof(line), "stats tcp worker%u:", idx);
	for (unsigned i = 0; i < ARN_TCP_C_COUNT && n > 0 && (size_t)n < sizeof(line); i++)
		n += snprintf(line + n, sizeof(line) - (size_t)n, " %s=%lu", counter_names[i],
			      (unsigned long)wk->cnt[i]);
	ARN_INFO(TCP, "%s", line);
	__atomic_store_n(&tcp_workers[idx], NULL, __ATOMIC_RELEASE);
	free(wk->conns);
	free(wk->htab);
	free(wk->txr);
	free(wk);
}

/* ---- statistics ------------------------------------------------------------------------ */
static const char *const counter_help[] = {
#define ARN_TCP_COUNTER(id, name, help) help,
#include "arn_tcp_counters.def"
#undef ARN_TCP_COUNTER
};

const char *arn_tcp_counter_name(enum arn_tcp_counter id)
{
	return (unsigned)id < ARN_TCP_C_COUNT ? counter_names[id] : "?";
}

const char *arn_tcp_counter_help(enum arn_tcp_counter id)
{
	return (unsigned)id < ARN_TCP_C_COUNT ? counter_help[id] : "?";
}

bool arn_tcp_counter_is_gauge(enum arn_tcp_counter id)
{
	return id == ARN_TCP_C_ACTIVE || id == ARN_TCP_C_TIME_WAIT || id == ARN_TCP_C_OOO_MBUFS;
}

int arn_tcp_stats(unsigned worker, uint64_t *out)
{
	if (worker >= TCP_MAX_WORKERS)
		return -ENOENT;
	struct arn_tcp_worker *wk = __atomic_load_n(&tcp_workers[worker], __ATOMIC_ACQUIRE);
	if (wk == NULL)
		return -ENOENT;
	for (unsigned i = 0; i < ARN_TCP_C_COUNT; i++)
		out[i] = __atomic_load_n(&wk->cnt[i], __ATOMIC_RELAXED);
	return 0;
}

unsigned arn_tcp_stats_workers(void)
{
	unsigned n = 0;
	for (unsigned i = 0; i < TCP_MAX_WORKERS; i++)
		if (tcp_workers[i])
			n = i + 1;
	return n;
}

/* /stats and /stats/prometheus: pulled at read time from the per-worker
 * counters (tcp.<worker>.<name>). Registered before main() runs because no
 * serve-mode hook exists for lib/tcp on the control lcore; the registry is
 * plain static data, so this is safe at that point. */
static void tcp_stats_pull(struct arn_stats_emitter *e, void *arg)
{
	(void)arg;
	uint64_t v[ARN_TCP_C_COUNT];
	char tag[16];
	for (unsigned w = 0; w < TCP_MAX_WORKERS; w++) {
		if (arn_tcp_stats(w, v) != 0)
			continue;
		snprintf(tag, sizeof(tag), "%u", w);
		for (unsigned i = 0; i < ARN_TCP_C_COUNT; i++)
			arn_stats_emit(
			    e, arn_tcp_counter_is_gauge(i) ? ARN_STAT_GAUGE : ARN_STAT_COUNTER,
			    "tcp", ARN_STATS_TAG_WORKER, tag, counter_names[i], (int64_t)v[i]);
	}
}

__attribute__((constructor)) static void tcp_stats_register(void)
{
	arn_stats_pull_register(tcp_stats_pull, NULL);
}
