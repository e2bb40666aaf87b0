/*
 * The top of lib/tcp: a worker's TCP state from start to stop (the
 * arn_tcp_worker_* entry points of the lib/net contract), the loop step
 * that runs timers, the modules above TCP and deferred output, the
 * application registry, and the counters the control lcore reads.
 *
 * Per-worker state hangs on struct arn_lcore's L4 slot (arn_l4.h); the
 * table below exists only for the control lcore, which reads counters by
 * worker index and never touches a worker's connections.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>

#include "arn_dataplane.h"
#include "arn_log.h"
#include "arn_table.h"
#include "arn_stats.h"
#include "tcp_int.h"
#include "tcp_stash.h"

/* Read by the control lcore only (arn_tcp_stats); workers use lc's slot. */
static struct arn_tcp_worker *stats_workers[TCP_MAX_WORKERS];

static const struct arn_tcp_app *apps[TCP_APPS_MAX];
static unsigned n_apps;
/* The registered modules' worker_poll hooks, in registration order, with
 * their arguments: every loop iteration calls them, without a test of
 * each module for a hook or a load of its table. */
static struct {
	void (*fn)(struct arn_lcore *lc, void *arg);
	void *arg;
} polls[TCP_APPS_MAX];
static unsigned n_polls;

int arn_tcp_app_register(const struct arn_tcp_app *app)
{
	for (unsigned i = 0; i < n_apps; i++)
		if (apps[i] == app)
			return 0;
	if (n_apps == TCP_APPS_MAX)
		return -ENOSPC;
	apps[n_apps++] = app;
	if (app->worker_poll) {
		polls[n_polls].fn = app->worker_poll;
		polls[n_polls].arg = app->arg;
		n_polls++;
	}
	return 0;
}

static int app_index(const struct arn_tcp_app *app)
{
	for (unsigned i = 0; i < n_apps; i++)
		if (apps[i] == app)
			return (int)i;
	return -1;
}

int arn_tcp_app_set_state(struct arn_lcore *lc, const struct arn_tcp_app *app, void *state)
{
	struct arn_tcp_worker *wk = tcp_wk(lc);
	int i = app_index(app);
	if (wk == NULL || i < 0)
		return -ENOENT;
	wk->apps.slot[i].app = app;
	wk->apps.slot[i].state = state;
	return 0;
}

struct arn_lcore *arn_tcp_lcore(const struct arn_tcp_conn *c)
{
	return c->wk->lc;
}

/* Paced connections whose next send time has come go to the output list.
 * Checked on every poll (microseconds apart), where the 1 ms wheel would
 * release a millisecond's segments at once. */
static void tcp_process_paced(struct arn_tcp_worker *wk)
{
	struct arn_tcp_conn **pp = &wk->paced;
	while (*pp) {
		struct arn_tcp_conn *c = *pp;
		if ((int64_t)(c->next_send_us - wk->now_us) > 0 && c->state != TCPS_CLOSED) {
			pp = &c->pnext;
			continue;
		}
		*pp = c->pnext;
		c->pnext = NULL;
		c->paced_listed = false;
		if (c->state != TCPS_CLOSED)
			tcp_want_output(c);
	}
}

/* Reordering timers that have passed (RFC 8985 6.3), to the microsecond:
 * a timer stopped since (t_rack_us 0) just leaves the list. A connection
 * the timeout lists again (a later deadline) goes to the list's head,
 * behind the walk. */
static void tcp_process_rack(struct arn_tcp_worker *wk)
{
	struct arn_tcp_conn **pp = &wk->rack_wait;
	while (*pp) {
		struct arn_tcp_conn *c = *pp;
		if (c->t_rack_us && (int64_t)(c->t_rack_us - wk->now_us) > 0 &&
		    c->state != TCPS_CLOSED) {
			pp = &c->rknext;
			continue;
		}
		*pp = c->rknext;
		c->rknext = NULL;
		c->rack_listed = false;
		if (c->t_rack_us && c->state != TCPS_CLOSED)
			tcp_rack_timeout(c);
	}
}

static void tcp_process_outq(struct arn_tcp_worker *wk)
{
	/* Connections added while we run (on_writable writing more) are
	 * served in this same pass. */
	while (wk->outq) {
		struct arn_tcp_conn *c = wk->outq;
		wk->outq = c->onext;
		if (wk->outq == NULL)
			wk->outq_tail = NULL;
		c->onext = NULL;
		c->flags &= ~TF_IN_OUTQ;
		if (c->state != TCPS_CLOSED)
			tcp_output(c);
	}
}

static const char *const counter_names[] = {
#define ARN_TCP_COUNTER(id, name, help) name,
#include "arn_tcp_counters.def"
#undef ARN_TCP_COUNTER
};

/* ---- the lib/net contract ---------------------------------------------------------- */

static void wk_free(struct arn_tcp_worker *wk)
{
	arn_table_free(wk->conns);
	arn_table_free(wk->htab);
	arn_table_free(wk->txr);
	arn_table_free(wk->tw);
	arn_table_free(wk->tw_htab);
	arn_table_free(wk->ooo_nodes);
	free(wk);
}

int arn_tcp_worker_init(struct arn_lcore *lc, const struct arn_dataplane *conf)
{
	unsigned idx = arn_net_worker_index(lc);
	if (idx >= TCP_MAX_WORKERS) {
		ARN_ERR(TCP, "worker %u: at most %u workers are supported", idx, TCP_MAX_WORKERS);
		return -EINVAL;
	}
	if (stats_workers[idx] != NULL || arn_l4_state(lc) != NULL) {
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
	wk->rcvbuf_max = conf ? conf->tcp_rcvbuf_max : 4u << 20;       /* 0: off (tcp_rmem_init) */
	wk->sndbuf_max = conf ? conf->tcp_sndbuf_max : 0; /* 0: off (tcp_rmem_init) */
	wk->reo_late_max_us = conf ? conf->tcp_reo_max_ms * 1000u : 0; /* 0: off */
	wk->cc_default = !conf					 ? ARN_TCP_CC_CUBIC
			 : conf->tcp_cc == ARN_DP_TCP_CC_NEWRENO ? ARN_TCP_CC_NEWRENO
			 : conf->tcp_cc == ARN_DP_TCP_CC_BBR	 ? ARN_TCP_CC_BBR
								 : ARN_TCP_CC_CUBIC;
	if (wk->rcvbuf < 4096)
		wk->rcvbuf = 4096;
	if (wk->sndbuf < 4096)
		wk->sndbuf = 4096;
	size_t csz =
	    RTE_ALIGN_CEIL(sizeof(struct arn_tcp_conn) * (size_t)maxc, RTE_CACHE_LINE_SIZE);
	/* the big tables zeroed and faulted in now, in huge pages where the
	 * kernel gives them (arn_table.h) */
	wk->conns = arn_table_zalloc(csz);
	uint32_t hsize = 1;
	while (hsize < maxc && hsize < (1u << 30))
		hsize <<= 1;
	wk->htab = arn_table_zalloc(sizeof(*wk->htab) * (size_t)hsize);
	/* RACK records: 8 segments in flight per connection on average;
	 * a connection that finds none left falls back to RFC 6675 */
	uint64_t nrec = (uint64_t)maxc * 8;
	if (nrec < 8192)
		nrec = 8192;
	if (nrec > (1u << 20))
		nrec = 1u << 20;
	wk->txr_n = (uint32_t)nrec;
	wk->txr = arn_table_zalloc(sizeof(*wk->txr) * wk->txr_n);
	/* TIME_WAIT records (48 bytes each): twice the connection blocks, so
	 * that a worker closing as fast as it opens keeps 2 MSL of history;
	 * past that the oldest is recycled, as Linux's tw bucket limit does */
	uint32_t ntw = maxc > (1u << 21) ? (1u << 22) : RTE_MAX(2 * maxc, 1024u);
	if (wk->conns == NULL || wk->htab == NULL || wk->txr == NULL ||
	    tcp_tw_pool_init(wk, ntw) != 0) {
		ARN_ERR(TCP, "worker %u: no memory for %u connections", idx, maxc);
		wk_free(wk);
		return -ENOMEM;
	}
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
		wk_free(wk);
		return -ENOBUFS;
	}
	wk->seg_max = room - TCP_HDR_LEN - TCP_MAX_OPT;
	/* the retransmission mark ports that merge segments look for
	 * (arn_l4.h); without it, retransmissions go as any segment */
	wk->rexmit_flag = arn_l4_rexmit_flag();
	if (wk->rexmit_flag == 0)
		ARN_WARN(TCP, "worker %u: cannot register the mbuf flag %s (%s)", idx,
			 ARN_L4_DYNFLAG_REXMIT, rte_strerror(rte_errno));
	tcp_rmem_init(wk, pool);
	if (tcp_ooo_nodes_init(wk) != 0) {
		ARN_ERR(TCP, "worker %u: no memory for the out-of-order queues' indexes", idx);
		wk_free(wk);
		return -ENOMEM;
	}
	tcp_random(wk->key, sizeof(wk->key));
	tcp_random(wk->hkey, sizeof(wk->hkey));
	tcp_random(wk->cookie_key, sizeof(wk->cookie_key));
	tcp_random(&wk->rng, sizeof(wk->rng));
	wk->rng |= 1;		    /* xorshift's state must not be 0 */
	wk->chack_sec = UINT64_MAX; /* the first challenge draws a budget */
	tcp_random(&wk->port_hint, sizeof(wk->port_hint));
	tcp_clock_set(wk, arn_net_now(lc));
	wk->wheel_ms = wk->now_ms;
	arn_l4_set_state(lc, wk);
	__atomic_store_n(&stats_workers[idx], wk, __ATOMIC_RELEASE);

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
	/* Once a millisecond: the timer wheel, TIME_WAIT expiry and the
	 * receive memory check. Only this poll moves wheel_ms and
	 * rmem_checked_ms, both to now_ms, so they change together and one
	 * test serves both (the first rmem check waits for the first tick).
	 * The rmem check runs before the applications' polls, not after:
	 * nothing is kept in a register across their calls (one push less),
	 * and a sample of the pool once a millisecond is as good either side. */
	if (unlikely(wk->now_ms != wk->wheel_ms)) {
		tcp_timer_run(wk, wk->now_ms);
		tcp_tw_expire(wk);
		/* what an ACK left in the stash waits a millisecond at most,
		 * and the pool is counted without it */
		if (wk->n_stash)
			tcp_stash_drain(wk);
		if (wk->now_ms != wk->rmem_checked_ms)
			tcp_rmem_poll(wk);
	}
	/* Nearly always one module (lib/http) polls: its call without the
	 * loop's counter and reloads, then any others. */
	if (n_polls) {
		polls[0].fn(lc, polls[0].arg);
		for (unsigned i = 1; i < n_polls; i++)
			polls[i].fn(lc, polls[i].arg);
	}
	/* Four lists nearly always empty in an idle iteration: one test of
	 * their heads ORed, then each in the order they always ran. */
	if (((uintptr_t)wk->paced | (uintptr_t)wk->rack_wait | (uintptr_t)wk->outq |
	     (uintptr_t)wk->closeq) == 0)
		return;
	if (wk->paced)
		tcp_process_paced(wk);
	if (wk->rack_wait)
		tcp_process_rack(wk);
	tcp_process_outq(wk);
	if (wk->closeq)
		tcp_process_closeq(wk);
	/* The output that the stash was kept for has been built: what is
	 * left goes back, rather than waiting for the tick. */
	if (wk->n_stash)
		tcp_stash_drain(wk);
}

void arn_tcp_worker_fini(struct arn_lcore *lc)
{
	unsigned idx = arn_net_worker_index(lc);
	struct arn_tcp_worker *wk = idx < TCP_MAX_WORKERS ? tcp_wk(lc) : NULL;
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
	if (wk->n_stash)
		tcp_stash_drain(wk);
	/* one line of counters, as lib/net logs its own at shutdown */
	char line[2048];
	int n = snprintf(line, sizeof(line), "stats tcp worker%u:", idx);
	for (unsigned i = 0; i < ARN_TCP_C_COUNT && n > 0 && (size_t)n < sizeof(line); i++)
		n += snprintf(line + n, sizeof(line) - (size_t)n, " %s=%lu", counter_names[i],
			      (unsigned long)wk->cnt[i]);
	ARN_INFO(TCP, "%s", line);
	__atomic_store_n(&stats_workers[idx], NULL, __ATOMIC_RELEASE);
	arn_l4_set_state(lc, NULL);
	wk_free(wk);
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
	return id == ARN_TCP_C_ACTIVE || id == ARN_TCP_C_TIME_WAIT || id == ARN_TCP_C_OOO_MBUFS ||
	       id == ARN_TCP_C_BLOCKS_HIGH_WATER || id == ARN_TCP_C_RCVBUF_GROWN_MBUFS ||
	       id == ARN_TCP_C_SNDBUF_GROWN_MBUFS;
}

int arn_tcp_stats(unsigned worker, uint64_t *out)
{
	if (worker >= TCP_MAX_WORKERS)
		return -ENOENT;
	struct arn_tcp_worker *wk = __atomic_load_n(&stats_workers[worker], __ATOMIC_ACQUIRE);
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
		if (stats_workers[i])
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

/* ---- the ops table lib/net calls (arn_l4.h) ----------------------------------------- */

static void l4_input(struct arn_lcore *lc, struct rte_mbuf **m, unsigned n)
{
	struct arn_tcp_worker *wk = tcp_wk(lc);
	if (unlikely(wk == NULL)) {
		rte_pktmbuf_free_bulk(m, n);
		return;
	}
	tcp_clock(wk);
	for (unsigned i = 0; i < n; i++) {
		/* the next segment's header while this one is processed */
		if (i + 1 < n)
			rte_prefetch0(rte_pktmbuf_mtod(m[i + 1], void *));
		tcp_input(wk, m[i]);
	}
}

const struct arn_l4_ops arn_tcp_l4_ops = {
    .name = "tcp",
    .input = l4_input,
    .icmp_unreach = arn_tcp_icmp_unreach,
    .worker_init = arn_tcp_worker_init,
    .worker_poll = arn_tcp_worker_poll,
    .worker_fini = arn_tcp_worker_fini,
};
