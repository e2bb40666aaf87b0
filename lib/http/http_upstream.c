/*
 * Upstream connections and their per-worker pools, one pool per (cluster
 * name, endpoint address): keep-alive reuse, max_requests_per_connection,
 * the idle timeout and connect_timeout, and the cluster's circuit breakers
 * (max_connections, max_pending_requests; max_requests is checked by the
 * router) counted across workers as Envoy does.
 *
 * A pool is keyed by the cluster's name, not its object, so connections
 * survive a cluster update that keeps the endpoint; when a generation drops
 * an endpoint (or the cluster), its pool drains: idle connections close,
 * busy ones finish their request and close.
 *
 * A cluster with an UpstreamTlsContext originates TLS (docs/tls.md,
 * "Upstream"): the connection's h1 peer runs over the TLS transport of
 * http_tls.c, the handshake runs after TCP's connect and before a stream
 * gets the connection (connect_timeout covers both, as Envoy's pool
 * waits for the TLS socket's Connected event), and a failed handshake is a
 * connection failure (503 UF, upstream_cx_connect_fail) whose reason the
 * stream gets for its access log. Pooled and reused like plain ones.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_mbuf.h>

#include "arn_config.h"
#include "arn_l4.h"
#include "arn_log.h"
#include "arn_tcp.h"
#include "http_upstream.h"
#include "http_upstream_h2.h"

static uint64_t pool_key(const char *name, size_t len, uint32_t addr, uint16_t port)
{
	uint64_t h = arn_cfg_hash(name, len);
	h ^= ((uint64_t)addr << 16 | port) * 0x9e3779b97f4a7c15ull;
	return h ? h : 1;
}

static bool pool_is(const struct http_pool *p, uint64_t key, const char *name, size_t len,
		    uint32_t addr, uint16_t port)
{
	return p->key == key && p->addr == addr && p->port == port && p->cluster_len == len &&
	       memcmp(p->cluster, name, len < sizeof(p->cluster) ? len : sizeof(p->cluster) - 1) ==
		   0;
}

struct http_pool *http_pool_find(struct http_worker *w, const char *name, size_t len, uint32_t addr,
				 uint16_t port)
{
	uint64_t key = pool_key(name, len, addr, port);
	for (uint32_t i = 0; i < w->pools_cap; i++) {
		struct http_pool *p = &w->pools[(key + i) & (w->pools_cap - 1)];
		if (!p->used && !p->key)
			return NULL;
		if (p->used && pool_is(p, key, name, len, addr, port))
			return p;
	}
	return NULL;
}

/* The pool's per-host counters: the snapshot's host, referenced for as long
 * as the pool lives (a pool made before the control lcore saw its
 * generation finds it on a later request). */
static void pool_bind_host(struct http_pool *p)
{
	if (p->host || !p->crt)
		return;
	struct http_host *h = http_rt_host(p->crt, p->addr, p->port);
	if (h) {
		http_host_ref(h); /* the snapshot holds one until our next quiescent state */
		p->host = h;
	}
}

struct http_pool *http_pool_get_slow(struct http_worker *w, const struct arn_cfg_ref *cluster,
				     struct http_cluster_rt *crt, uint32_t addr, uint16_t port,
				     struct http_pool **hint)
{
	/* the caller's last pool, when it is the one (no hash, no probe);
	 * its host not bound yet (http_pool_get's test is for a bound one) */
	struct http_pool *p = hint ? *hint : NULL;
	if (p && crt && p->crt == crt && p->used && p->addr == addr && p->port == port) {
		if (!p->host)
			pool_bind_host(p);
		return p;
	}
	if (!p || !p->used || !pool_is(p, p->key, cluster->name, cluster->len, addr, port))
		p = http_pool_find(w, cluster->name, cluster->len, addr, port);
	if (p) {
		if (hint)
			*hint = p;
		if (!p->crt && crt) {
			http_crt_ref(crt); /* the snapshot's covers us until then */
			p->crt = crt;
		}
		if (!p->host)
			pool_bind_host(p);
		return p;
	}
	uint64_t key = pool_key(cluster->name, cluster->len, addr, port);
	for (uint32_t i = 0; i < w->pools_cap; i++) {
		p = &w->pools[(key + i) & (w->pools_cap - 1)];
		if (p->used)
			continue;
		/* a free slot or a tombstone (key kept so lookups probe past it) */
		memset(p, 0, sizeof(*p));
		p->used = true;
		p->key = key;
		size_t n =
		    cluster->len < sizeof(p->cluster) - 1 ? cluster->len : sizeof(p->cluster) - 1;
		memcpy(p->cluster, cluster->name, n);
		p->cluster_len = cluster->len;
		p->addr = addr;
		p->port = port;
		p->crt = crt;
		if (crt)
			http_crt_ref(crt);
		pool_bind_host(p);
		w->n_pools++;
		if (hint)
			*hint = p;
		return p;
	}
	return NULL;
}

static struct arn_stats_scope *cl_stats(const struct http_pool *p)
{
	return p->crt ? p->crt->stats : NULL;
}

#define HOST_ADD(w, p, field, d) HTTP_HOST_ADD(http_host_ctr((p)->host, (w)->idx), field, d)

static void pool_forget_session(struct http_pool *p)
{
	arn_tls_session_slot_clear(&p->sess);
	if (p->sess_ctx)
		arn_tls_ctx_unref(p->sess_ctx); /* the control lcore frees it */
	p->sess_ctx = NULL;
}

void http_pool_maybe_retire(struct http_worker *w, struct http_pool *p)
{
	if (!p->used || !p->draining || p->n_conns || p->pend_head || p->n_counted)
		return;
	pool_forget_session(p);
	/* nothing counts into the host or the cluster any more: drop our references */
	http_host_put(p->host);
	p->host = NULL;
	http_crt_put(p->crt);
	p->crt = NULL;
	/* tombstone: key kept so probes continue past it */
	p->used = false;
	w->n_pools--;
}

#define POOL_INC(w, p, name)                                                                       \
	do {                                                                                       \
		struct arn_stats_scope *sc_ = cl_stats(p);                                         \
		if (sc_)                                                                           \
			arn_stats_inc(sc_, (w)->slot, ARN_CL_##name);                              \
	} while (0)
#define POOL_GAUGE(w, p, name, d)                                                                  \
	do {                                                                                       \
		struct arn_stats_scope *sc_ = cl_stats(p);                                         \
		if (sc_)                                                                           \
			arn_stats_gauge_add(sc_, (w)->slot, ARN_CL_##name, (d));                   \
	} while (0)

/* ---- connection objects ------------------------------------------------------------- */

static struct http_upconn *up_alloc(struct http_worker *w)
{
	struct http_upconn *u = w->up_free;
	if (!u)
		return NULL;
	w->up_free = u->next;
	memset(u, 0, sizeof(*u));
	u->w = w;
	return u;
}

static void idle_unlink(struct http_upconn *u)
{
	struct http_pool *p = u->pool;
	if (u->state != HTTP_UP_IDLE)
		return;
	if (u->prev)
		u->prev->next = u->next;
	else
		p->idle = u->next;
	if (u->next)
		u->next->prev = u->prev;
	u->next = u->prev = NULL;
	p->n_idle--;
}

static void up_connect_timeout(struct http_timer *t);
static void up_idle_timeout(struct http_timer *t);
static void up_close(struct http_upconn *u, bool abort);

static struct http_upconn *up_open(struct http_worker *w, struct http_pool *p, uint32_t laddr,
				   const struct http_stream *st, bool h2, int *err);
static bool up_current(struct http_upconn *u, const struct http_stream *st);

static uint32_t max_requests_per_cx(const struct arn_cfg_cluster *c)
{
	if (!c)
		return 0;
	return c->max_requests_per_connection ? c->max_requests_per_connection
					      : c->http.max_requests_per_connection;
}

static const struct arn_cfg_thresholds *thresholds(const struct http_stream *st)
{
	return st->cluster ? &st->cluster->thresholds[0] : NULL;
}

/* circuit_breakers.per_host_thresholds: is the pool's host at its
 * max_connections, counted on every worker (each worker's own slot,
 * read relaxed; only for a cluster that sets it, at a connection's
 * opening, not a request's)? */
static bool host_full(const struct http_pool *p, const struct arn_cfg_cluster *c)
{
	if (!c || c->host_max_connections == UINT32_MAX || !p->host)
		return false;
	uint64_t n = 0;
	for (unsigned i = 0; i < p->host->n_slots; i++)
		n += __atomic_load_n(&p->host->slots[i].cx_active, __ATOMIC_RELAXED);
	return n >= c->host_max_connections;
}

/* Bind stream @p st to connection @p u: the connection's codec decodes
 * the response into the stream's message buffer. Inline where a
 * keep-alive connection is taken from the pool (bind below elsewhere). */
static inline __attribute__((always_inline)) void bind_(struct http_upconn *u,
							struct http_stream *st)
{
	u->st = st;
	u->state = HTTP_UP_BUSY;
	st->up = u;
	u->pool->n_active++;
	uint16_t max_headers = HTTP_MAX_HDRS;
	if (st->cluster && st->cluster->http.max_headers_count &&
	    st->cluster->http.max_headers_count < HTTP_MAX_HDRS)
		max_headers = (uint16_t)st->cluster->http.max_headers_count;
	/* A stream's first attempt finds its response message as the
	 * stream's reset left it, zeroed (nothing decodes into it before a
	 * bind; a sub-request's stream is zeroed whole): the header array and
	 * the two "none" indexes are all that arn_h1_msg_init would add. A
	 * later attempt's holds what an earlier one decoded (every attempt
	 * counts in attempts, a reused connection's replay too). Saves the
	 * message's clearing for most requests (issue 17). */
	struct arn_h1_msg *m = &st->resp.m;
	if (st->attempts > 1) {
		arn_h1_msg_init(m, st->res->resp_hdrs, HTTP_MAX_HDRS);
	} else {
		m->hdrs = st->res->resp_hdrs;
		m->hdr_cap = HTTP_MAX_HDRS;
		m->host_idx = -1;
		m->upgrade_idx = -1;
	}
	if (u->xs) {
		/* an HTTP/2 stream: at most max_headers_count fields in the
		 * head, and as many in the trailers (the array's 128 slots
		 * stay: the trailers take those the head left) */
		http_uph2_bind(u, st, max_headers);
		return;
	}
	/* (the parser's re-arm last: nothing is kept across its call) */
	u->h1.trailers = st->cluster && st->cluster->http.enable_trailers;
	http_h1_expect(&u->h1, &st->resp.m, max_headers, (enum arn_h1_method)st->method);
}

static void bind(struct http_upconn *u, struct http_stream *st)
{
	bind_(u, st);
}

void http_up_bind(struct http_upconn *s, struct http_stream *st)
{
	bind(s, st);
}

/* The first waiting stream that goes over HTTP/2 (@p h2) or not. */
static struct http_stream *pending_first(struct http_pool *p, bool h2)
{
	for (struct http_stream *st = p->pend_head; st; st = st->pnext)
		if (http_uph2_wanted(st) == h2)
			return st;
	return NULL;
}

static void pending_remove(struct http_stream *st)
{
	struct http_pool *p = st->pool;
	if (!(st->state & HTTP_S_PENDING) || !p)
		return;
	if (st->pprev)
		st->pprev->pnext = st->pnext;
	else
		p->pend_head = st->pnext;
	if (st->pnext)
		st->pnext->pprev = st->pprev;
	else
		p->pend_tail = st->pprev;
	st->pnext = st->pprev = NULL;
	st->state &= ~HTTP_S_PENDING;
	if (p->crt)
		__atomic_fetch_sub(&p->crt->rq_pending, 1, __ATOMIC_RELAXED);
}

/* up_make_available's connection for the pool's first waiting stream
 * @p st, out of line (the usual release finds none waiting). */
static __attribute__((noinline)) void up_give_waiting(struct http_upconn *u,
						      struct http_stream *st)
{
	if (!up_current(u, st)) {
		/* made under another TLS than the waiting stream's cluster asks
		 * for now (it turned to TLS, or its context changed), or with
		 * another downstream's PROXY header: never given to it, as
		 * up_acquire gives it no such idle one. It closes; its end
		 * opens the stream's own (pool_kick). */
		up_close(u, false);
		return;
	}
	pending_remove(st);
	POOL_GAUGE(u->w, u->pool, upstream_rq_pending_active, -1);
	bind(u, st);
	if (u->connected)
		st->up_ops->on_ready(st);
}

/* A connection is free for the pool's waiting streams, or goes idle.
 * Inline into http_up_release, where a keep-alive connection goes back
 * after every response. */
static inline void up_make_available(struct http_upconn *u)
{
	struct http_pool *p = u->pool;
	struct http_worker *w = u->w;
	struct http_stream *st = pending_first(p, false);
	if (st) {
		up_give_waiting(u, st);
		return;
	}
	u->state = HTTP_UP_IDLE;
	u->next = p->idle;
	u->prev = NULL;
	if (p->idle)
		p->idle->prev = u;
	p->idle = u;
	p->n_idle++;
	/* the cluster's idle_timeout (1 h by default), as of the last stream
	 * that used the connection (it had the cluster pinned). A timer still
	 * armed from an earlier idle time, due before this one would end,
	 * stays: up_idle_timeout then arms it for what is left. A keep-alive
	 * connection reused for every request saves an arm and a cancel per
	 * request (issue 17). */
	uint64_t idle = u->idle_ms ? u->idle_ms : 3600000;
	u->idle_since_ms = w->now_ms;
	if (!u->timer.armed || u->timer.fn != up_idle_timeout ||
	    u->timer.due_ms > w->now_ms + idle) {
		u->timer.fn = up_idle_timeout;
		http_timer_arm(w, &u->timer, idle);
	}
}

static void up_close(struct http_upconn *u, bool abort)
{
	if (u->xs)
		return; /* a stream block: its stream ends, not a connection */
	if (u->state == HTTP_UP_CLOSED)
		return;
	idle_unlink(u);
	http_timer_cancel(&u->timer);
	u->state = HTTP_UP_CLOSED;
	if (u->h1.tc) {
		struct arn_tcp_conn *tc = u->h1.tc;
		if (abort) {
			arn_tcp_abort(tc);
		} else {
			arn_tcp_rx_consume(tc, arn_tcp_rx_pending(tc));
			/* close_notify before the FIN, as Envoy sends it */
			if (u->tls.on && arn_tls_is_open(&u->tls.tls))
				(void)arn_tls_shutdown(&u->tls.tls);
			arn_tcp_close(tc);
		}
		/* on_close follows from the TCP poll and frees the block */
	}
}

/* ---- HTTP/2 connections ------------------------------------------------------------- */

/* An HTTP/2 connection of the pool with room for one more stream for
 * @p st. */
static struct http_upconn *h2_find(struct http_pool *p, const struct http_stream *st)
{
	for (struct http_upconn *u = p->h2; u; u = u->next)
		if (http_uph2_room(u) && up_current(u, st))
			return u;
	return NULL;
}

static void h2_unlink(struct http_upconn *u)
{
	struct http_pool *p = u->pool;
	if (!u->h2 || !p)
		return;
	if (u->prev)
		u->prev->next = u->next;
	else if (p->h2 == u)
		p->h2 = u->next;
	if (u->next)
		u->next->prev = u->prev;
	u->next = u->prev = NULL;
}

/* A stream of connection @p u for @p st. @return 0 or -ENOBUFS. */
static int h2_bind_on(struct http_upconn *u, struct http_stream *st)
{
	struct http_upconn *s = http_uph2_stream_new(u);
	if (!s)
		return -ENOBUFS;
	if (u->connected)
		http_timer_cancel(&u->timer); /* its idle timeout */
	bind(s, st);
	return 0;
}

/* A stream for @p st on a connection with room, or on a new one. */
static int h2_take(struct http_worker *w, struct http_pool *p, struct http_stream *st,
		   uint32_t laddr)
{
	struct http_upconn *u = h2_find(p, st);
	if (u)
		return h2_bind_on(u, st);
	int err = 0;
	u = up_open(w, p, laddr, st, true, &err);
	if (!u)
		return err ? err : -ENOBUFS;
	return h2_bind_on(u, st);
}

/* A stream of HTTP/2 connection @p u ended: serve the pool's waiting
 * streams from it, or let it idle, drain or close. */
static void up_h2_slot(struct http_upconn *u)
{
	struct http_pool *p = u->pool;
	struct http_worker *w = u->w;
	if (u->state == HTTP_UP_CLOSED || !u->h1.tc || !u->h2)
		return;
	/* streams waiting for a place take it (their own TLS permitting) */
	while (!p->draining && http_uph2_room(u)) {
		struct http_stream *st = pending_first(p, true);
		if (st && u->pp_version && !http_uph2_streams(u) && !up_current(u, st)) {
			/* another downstream's stream waits (the pool was at
			 * its limit) and this connection, idle now, carried
			 * another's PROXY header: it gives way, as
			 * up_give_waiting's HTTP/1 one does; its end opens the
			 * stream's own (pool_kick) */
			http_uph2_goaway(u);
			up_close(u, false);
			return;
		}
		if (!st || !up_current(u, st))
			break;
		pending_remove(st);
		POOL_GAUGE(w, p, upstream_rq_pending_active, -1);
		if (h2_bind_on(u, st) != 0) {
			st->up_ops->on_failed(st, -ENOBUFS, false, false, NULL);
			continue;
		}
		if (u->connected)
			st->up_ops->on_ready(st);
		if (u->state == HTTP_UP_CLOSED || !u->h2)
			return;
	}
	if (http_uph2_streams(u) || !u->connected)
		return;
	if (p->draining || !http_uph2_room(u)) {
		ARN_DEBUG(HTTP, "upstream HTTP/2: no more streams (draining %d)", p->draining);
		/* its endpoint left, the upstream's GOAWAY, or
		 * max_requests_per_connection: nothing more goes here */
		http_uph2_goaway(u);
		up_close(u, false);
		return;
	}
	u->timer.fn = up_idle_timeout;
	http_timer_arm(w, &u->timer, u->idle_ms ? u->idle_ms : 3600000);
}

/* Try to serve the pool's waiting streams after a connection went away. */
static void pool_kick(struct http_worker *w, struct http_pool *p)
{
	while (p->pend_head) {
		struct http_stream *st = p->pend_head;
		const struct arn_cfg_thresholds *th = thresholds(st);
		if (p->crt && th && p->n_conns &&
		    (__atomic_load_n(&p->crt->cx_active, __ATOMIC_RELAXED) >=
			 (int32_t)th->max_connections ||
		     host_full(p, st->cluster)))
			return;
		pending_remove(st);
		POOL_GAUGE(w, p, upstream_rq_pending_active, -1);
		int err = 0;
		if (http_uph2_wanted(st)) {
			err = h2_take(w, p, st, st->hc->sladdr);
			if (err)
				st->up_ops->on_failed(st, err, false, false, NULL);
			else if (st->up && st->up->connected)
				st->up_ops->on_ready(st);
			continue;
		}
		struct http_upconn *u = up_open(w, p, st->hc->sladdr, st, false, &err);
		if (!u) {
			st->up_ops->on_failed(st, err, false, false, NULL);
			continue;
		}
		bind(u, st);
	}
}

static void up_block_free(struct http_upconn *u)
{
	struct http_worker *w = u->w;
	struct http_pool *p = u->pool;
	http_h1_peer_free(&u->h1);
	http_tls_stop(&u->tls);
	http_timer_cancel(&u->timer);
	if (p) {
		p->n_conns--;
		if (p->crt)
			__atomic_fetch_sub(&p->crt->cx_active, 1, __ATOMIC_RELAXED);
		POOL_GAUGE(w, p, upstream_cx_active, -1);
		HOST_ADD(w, p, cx_active, -1);
		POOL_INC(w, p, upstream_cx_destroy);
		struct arn_stats_scope *sc = cl_stats(p);
		if (sc && u->open_tsc)
			arn_stats_hist_record(sc, w->slot, ARN_CL_upstream_cx_length_ms,
					      (http_tsc(w) - u->open_tsc) / w->tsc_per_us);
	}
	u->state = HTTP_UP_CLOSED;
	u->h1.tc = NULL;
	u->next = w->up_free;
	w->up_free = u;
	if (p) {
		pool_kick(w, p);
		http_pool_maybe_retire(w, p);
	}
}

/* What an HTTP/2 session asks of its pool (http_upstream_h2.h). */
static const struct http_uph2_pool_ops uph2_pool_ops = {
    .slot_freed = up_h2_slot,
    .close = up_close,
};

static void up_tls_resume(void *arg);

/* cluster.<name>.ssl.* of this worker (the worker's own block until the
 * control lcore made the cluster's). */
static struct arn_tls_stats *up_ssl(struct http_worker *w, const struct http_pool *p)
{
	return p->crt && p->crt->ssl && w->idx < ARN_STATS_MAX_WORKERS ? &p->crt->ssl[w->idx]
								       : &w->tls_stats;
}

/* TLS on a connection being opened with the cluster's context @p ctx: the
 * host's last session offered if it came from the same context. A start
 * that fails (out of memory) resets the connection: on_close reports it. */
static void up_tls_start(struct http_upconn *u, struct arn_tcp_conn *tc, struct arn_tls_ctx *ctx)
{
	struct http_pool *p = u->pool;
	if (p->sess_ctx != ctx) {
		pool_forget_session(p);
		arn_tls_ctx_ref(ctx);
		p->sess_ctx = ctx;
	}
	struct arn_tls_conn_opts o = {.session = &p->sess};
	if (http_tls_start(&u->tls, u->w, tc, ctx, up_ssl(u->w, p), &u->h1.peer.eof, up_tls_resume,
			   u, &o) < 0) {
		arn_tcp_abort(tc);
		return;
	}
	u->h1.tp = &u->tls.t;
}

/*
 * The TLS pool @p p's connections take for cluster @p c (of a stream on
 * endpoints @p eps, or NULL): *@p want whether any, and its context (NULL
 * with *@p want: it could not be built); *@p pp the PROXY header's
 * version (0: none). The cluster's upstream_tls, or, with
 * transport_socket_matches, the entry its host resolves to.
 */
static struct arn_tls_ctx *up_tls_ctx(const struct arn_cfg_cluster *c, const struct http_pool *p,
				      const struct arn_cfg_endpoints *eps, bool *want, uint8_t *pp)
{
	const struct arn_cfg_ts_match *m =
	    http_rt_host_tsm(c, p->crt, eps, p->host, p->addr, p->port);
	if (!m) {
		*want = c && c->upstream_tls;
		*pp = c ? c->upstream_pp : 0;
		return *want ? http_rt_upstream_tls(c, p->crt) : NULL;
	}
	*want = m->tls != NULL;
	*pp = m->pp_version;
	return *want ? http_rt_tsm_tls(m, p->crt) : NULL;
}

/* The downstream addresses a PROXY header for @p st says (Envoy's
 * ProxyProtocolFilterState: the connection's remote and local address,
 * a listener PROXY header's when it had one). @return false when it has
 * none (a sub-request of no connection): a LOCAL header. */
static bool up_pp_addrs(const struct http_stream *st, struct arn_pp_addrs *a)
{
	const struct http_conn *hc = st->hc;
	if (!hc || !hc->raddr)
		return false;
	*a = (struct arn_pp_addrs){hc->raddr, hc->laddr, hc->rport, hc->lport};
	return true;
}

/* Did the PROXY header of connection @p u (one was sent) say @p a (NULL:
 * LOCAL)? */
static bool up_pp_names(const struct http_upconn *u, const struct arn_pp_addrs *a)
{
	if (!a)
		return u->pp_local;
	return !u->pp_local && u->pp.src == a->src && u->pp.sport == a->sport &&
	       u->pp.dst == a->dst && u->pp.dport == a->dport;
}

/* Did connection @p u's PROXY header (version @p pp wanted) say @p st's
 * downstream? */
static bool up_pp_is(const struct http_upconn *u, uint8_t pp, const struct http_stream *st)
{
	if (u->pp_version != pp)
		return false;
	if (!pp)
		return true;
	struct arn_pp_addrs a;
	return up_pp_names(u, up_pp_addrs(st, &a) ? &a : NULL);
}

static struct http_upconn *up_open(struct http_worker *w, struct http_pool *p, uint32_t laddr,
				   const struct http_stream *st, bool h2, int *err)
{
	const struct arn_cfg_cluster *c = st->cluster;
	/* a cluster whose TLS context could not be built (logged, naming the
	 * cluster and the Secret) has no connection to open */
	bool want;
	uint8_t pp;
	struct arn_tls_ctx *tctx = up_tls_ctx(c, p, st->endpoints, &want, &pp);
	if (want && !tctx) {
		POOL_INC(w, p, upstream_cx_connect_fail);
		HOST_ADD(w, p, cx_connect_fail, 1);
		*err = -EPROTO;
		return NULL;
	}
	struct http_upconn *u = up_alloc(w);
	if (!u) {
		*err = -ENOBUFS;
		return NULL;
	}
	u->pool = p;
	u->state = HTTP_UP_CONNECTING;
	u->want_tls = want;
	if (pp) {
		/* written on connect (up_connected), before any other byte */
		u->pp_version = pp;
		u->pp_local = !up_pp_addrs(st, &u->pp);
	}
	if (h2 && http_uph2_start(u, c, &uph2_pool_ops) != 0) {
		u->next = w->up_free;
		w->up_free = u;
		*err = -ENOMEM;
		return NULL;
	}
	struct arn_tcp_conn *tc = arn_tcp_connect(w->lc, laddr, p->addr, p->port, &http_up_ops, u,
						  ARN_TCP_CC_DEFAULT, err);
	if (!tc) {
		http_uph2_shutdown(u);
		u->next = w->up_free;
		w->up_free = u;
		POOL_INC(w, p, upstream_cx_connect_fail);
		HOST_ADD(w, p, cx_connect_fail, 1);
		return NULL;
	}
	if (c && c->keepalive)
		arn_tcp_set_keepalive(tc, c->keepalive_time_s, c->keepalive_intvl_s,
				      c->keepalive_probes);
	http_h1_peer_init(&u->h1, w, tc);
	if (tctx)
		up_tls_start(u, tc, tctx);
	u->open_tsc = http_tsc(w);
	p->n_conns++;
	if (p->crt)
		__atomic_fetch_add(&p->crt->cx_active, 1, __ATOMIC_RELAXED);
	HOST_ADD(w, p, cx_total, 1);
	HOST_ADD(w, p, cx_active, 1);
	POOL_INC(w, p, upstream_cx_total);
	if (h2) {
		POOL_INC(w, p, upstream_cx_http2_total);
		/* on the pool's HTTP/2 list until lib/tcp closes it */
		u->next = p->h2;
		u->prev = NULL;
		if (p->h2)
			p->h2->prev = u;
		p->h2 = u;
	} else if (c && c->http.upstream == 3 && tctx) {
		/* auto_config: counted once ALPN chose (up_tls_step) */
		u->alpn_auto = true;
	} else {
		POOL_INC(w, p, upstream_cx_http1_total);
	}
	POOL_GAUGE(w, p, upstream_cx_active, 1);
	u->timer.fn = up_connect_timeout;
	u->connect_ms = c && c->connect_timeout_ms ? c->connect_timeout_ms : 5000;
	http_timer_arm(w, &u->timer, u->connect_ms);
	return u;
}

/* Was idle connection @p u made under the TLS stream @p st's cluster
 * asks for now, and with its PROXY header? A pool outlives cluster
 * updates that keep its endpoint: a cluster that turned to TLS must not
 * reuse its plain connections, and one whose context changed (another
 * CA, SAN matchers, client certificate) not those validated under the old
 * one. A connection that sent a PROXY header serves only requests of the
 * downstream it named (Envoy keys its pools by it: the upstream took
 * every byte on it to come from that client). */
static bool up_current(struct http_upconn *u, const struct http_stream *st)
{
	bool want;
	uint8_t pp;
	struct arn_tls_ctx *ctx = up_tls_ctx(st->cluster, u->pool, NULL, &want, &pp);
	if (want != u->tls.on || !up_pp_is(u, pp, st))
		return false;
	return !want || u->tls.tls.ctx == ctx;
}

/* At the connection limit: close an HTTP/2 connection of @p p that carried
 * another downstream's PROXY header and has no stream (its streams are
 * only that downstream's to take, as up_idle_for's HTTP/1 ones).
 * @return whether one went. */
static bool up_evict_h2(struct http_pool *p, const struct http_stream *st)
{
	for (struct http_upconn *u = p->h2; u; u = u->next)
		if (u->pp_version && u->connected && !http_uph2_streams(u) && !up_current(u, st)) {
			http_uph2_goaway(u);
			up_close(u, false);
			return true;
		}
	return false;
}

/* The first idle connection of @p p a PROXY header does not keep from
 * @p st (another downstream's header): NULL when all are. */
static struct http_upconn *up_idle_for(struct http_pool *p, const struct http_stream *st)
{
	struct arn_pp_addrs a;
	const struct arn_pp_addrs *pa = up_pp_addrs(st, &a) ? &a : NULL;
	for (struct http_upconn *u = p->idle; u; u = u->next)
		if (!u->pp_version || up_pp_names(u, pa))
			return u;
	return NULL;
}

/*
 * May HTTP/1 connection @p u, between exchanges, take a request? Not if
 * the upstream said anything since its last response: any byte in our
 * input or in TCP's queue (a close is on its way, or it would be the
 * request's answer), or its close. Over TLS, records that came with the
 * handshake's end (TLS 1.3 session tickets) may wait in TCP: they are
 * read first, and only plaintext counts; a record of which only a part
 * came (OpenSSL holds it, TCP's queue is empty) is plaintext to come, as
 * are bytes TCP still holds after the read. The one test both for a
 * connection taken from the idle list (http_up_acquire, up_acquire) and
 * for one given back (http_up_release: a stream waiting in the pool takes
 * it at once); the two used to differ, and the release let a connection
 * with part of a record pending go to a waiting request, that record's
 * plaintext its answer. Inline: plaintext, it is the usual checkout's
 * and release's test.
 */
static inline bool up_quiet(struct http_upconn *u)
{
	struct arn_tcp_conn *tc = u->h1.tc;
	if (!tc)
		return false;
	if (__builtin_expect(u->tls.on, 0)) {
		if (arn_tcp_rx_pending(tc))
			http_tp_fill(u->h1.tp, tc, &u->h1.in);
		tc = u->h1.tc; /* a failed read aborts it */
		if (!tc || arn_tls_read_pending(&u->tls.tls))
			return false;
	}
	return !u->h1.in.bytes && !u->h1.peer.eof && !arn_tcp_rx_pending(tc);
}

static __attribute__((noinline)) int up_acquire(struct http_worker *w, struct http_pool *p,
						struct http_stream *st, uint32_t laddr);

int http_up_acquire(struct http_worker *w, struct http_pool *p, struct http_stream *st,
		    uint32_t laddr, const struct http_upstream_ops *ops)
{
	st->pool = p;
	st->up_ops = ops;
	/* The usual checkout, a keep-alive HTTP/1.1 connection without TLS
	 * (nor a PROXY header: a cluster that dropped its
	 * upstream_proxy_protocol keeps its pools, and another client's
	 * request must not go where the upstream took every byte to be one
	 * downstream's) that heard nothing while idle, taken here: its path sets up no
	 * frame for up_acquire's (bench_hcm: 18 instructions a request). Any
	 * other case goes there from the start. */
	const struct arn_cfg_cluster *c = st->cluster;
	struct http_upconn *u = p->idle;
	if (u && !(st->state & HTTP_S_FRESH_UP) && (!c || c->plain_h1) && !u->tls.on &&
	    !u->pp_version && up_quiet(u)) {
		idle_unlink(u);
		/* its idle timer stays armed, as up_acquire's reuse leaves it */
		bind_(u, st);
		return 0;
	}
	return up_acquire(w, p, st, laddr);
}

/* http_up_acquire past its usual case. */
static int up_acquire(struct http_worker *w, struct http_pool *p, struct http_stream *st,
		      uint32_t laddr)
{
	/* HTTP/1.1 (0) and auto_config (3) never want HTTP/2 yet: no call
	 * for the usual cluster */
	uint8_t proto = st->cluster ? st->cluster->http.upstream : 0;
	bool h2 = proto != 0 && proto != 3 && http_uph2_wanted(st);
	if (h2 || proto == 3) {
		/* (auto_config: a connection whose ALPN chose h2 may have room) */
		/* a place on an HTTP/2 connection that has one */
		struct http_upconn *u = h2_find(p, st);
		if (u)
			return h2_bind_on(u, st);
	}
	/* keep-alive reuse: the most recently used idle connection first
	 * (not for a replay after a reused connection closed under it) */
	bool evict = false;
	while (!h2 && p->idle && !(st->state & HTTP_S_FRESH_UP)) {
		struct http_upconn *u = p->idle;
		if (u->pp_version) {
			/* one that carried this downstream's PROXY header (or
			 * none: it closes below, not current) */
			u = up_idle_for(p, st);
			if (!u) {
				POOL_INC(w, p, upstream_cx_pp_key_miss);
				evict = true;
				break;
			}
		}
		idle_unlink(u);
		/* its idle timer stays armed: it does nothing to a busy
		 * connection, and the next idle time takes it over */
		if (!up_quiet(u)) {
			/* the upstream said something while idle (a close is on
			 * its way): not reusable */
			up_close(u, true);
			continue;
		}
		if (!up_current(u, st)) {
			up_close(u, false);
			continue;
		}
		bind_(u, st);
		return 0;
	}
	/* max_connections counts the cluster's connections on every worker
	 * and host, but a pool that has none opens one all the same (as
	 * Envoy's pools do): its requests would otherwise wait for one of its
	 * own connections to close, which never comes, while other hosts'
	 * idle connections hold the count for their idle timeout. */
	const struct arn_cfg_thresholds *th = thresholds(st);
	if (p->crt && th && p->n_conns &&
	    (__atomic_load_n(&p->crt->cx_active, __ATOMIC_RELAXED) >= (int32_t)th->max_connections ||
	     host_full(p, st->cluster))) {
		if (evict) {
			/* at the limit, with idle connections that only other
			 * downstreams may reuse: the least recently used goes
			 * and ours takes its place (its count leaves when lib/tcp
			 * closes it), so that they never hold the limit against
			 * new clients for their idle_timeout */
			struct http_upconn *v = p->idle;
			while (v->next)
				v = v->next;
			POOL_INC(w, p, upstream_cx_pp_evict);
			up_close(v, false);
			goto open;
		}
		if (h2 && p->h2 && up_evict_h2(p, st)) {
			POOL_INC(w, p, upstream_cx_pp_evict); /* the same, for HTTP/2 */
			goto open;
		}
		POOL_INC(w, p, upstream_cx_overflow);
		if (__atomic_load_n(&p->crt->rq_pending, __ATOMIC_RELAXED) >=
		    (int32_t)th->max_pending_requests) {
			POOL_INC(w, p, upstream_rq_pending_overflow);
			return -EBUSY;
		}
		__atomic_fetch_add(&p->crt->rq_pending, 1, __ATOMIC_RELAXED);
		st->state |= HTTP_S_PENDING;
		st->pnext = NULL;
		st->pprev = p->pend_tail;
		if (p->pend_tail)
			p->pend_tail->pnext = st;
		else
			p->pend_head = st;
		p->pend_tail = st;
		POOL_INC(w, p, upstream_rq_pending_total);
		POOL_GAUGE(w, p, upstream_rq_pending_active, 1);
		return 0;
	}
open:
	if (h2)
		return h2_take(w, p, st, laddr);
	int err = 0;
	struct http_upconn *u = up_open(w, p, laddr, st, false, &err);
	if (!u)
		return err ? err : -ENOBUFS;
	bind(u, st);
	return 0;
}

void http_up_release(struct http_upconn *u, bool reusable)
{
	struct http_pool *p = u->pool;
	struct http_stream *st = u->st;
	const struct arn_cfg_cluster *c = st ? st->cluster : NULL;
	u->st = NULL;
	if (st)
		st->up = NULL;
	if (p->n_active)
		p->n_active--;
	if (u->xs) {
		/* an HTTP/2 stream: it ends, its connection goes on */
		http_uph2_stream_end(u, !reusable);
		return;
	}
	uint32_t maxr = max_requests_per_cx(c);
	if (maxr && u->n_req >= maxr)
		reusable = false;
	/* Bytes after the complete response that the codec did not read
	 * (still in TCP's queue: they came while the client's output was
	 * full, and the response's end was decoded without another fill) are
	 * no answer to a request of ours. A stream waiting in the pool takes
	 * the connection at once (up_make_available, which reads nothing) and
	 * would take them for its own response: the connection goes, as
	 * up_acquire would close it (up_quiet). */
	if (reusable && !up_quiet(u))
		reusable = false;
	ARN_DEBUG(HTTP,
		  "upstream %u.%u.%u.%u:%u: released (reusable %d draining %d in %u out %d idle %d "
		  "n_req %u)",
		  p->addr >> 24, (p->addr >> 16) & 255, (p->addr >> 8) & 255, p->addr & 255,
		  p->port, reusable, p->draining, u->h1.in.bytes, http_out_busy(&u->h1.out),
		  arn_h1_parser_idle(&u->h1.p), u->n_req);
	/* (reusable: up_quiet found it has a TCP connection and no input) */
	if (p->draining && reusable && !http_out_busy(&u->h1.out) && arn_h1_parser_idle(&u->h1.p)) {
		/* its endpoint left: the exchange is over and the connection
		 * would have been reused, so a RST loses nothing where TCP
		 * finds it safe (no TIME_WAIT per EDS change under load) */
		struct arn_tcp_conn *tc = u->h1.tc;
		idle_unlink(u);
		http_timer_cancel(&u->timer);
		u->state = HTTP_UP_CLOSED;
		arn_tcp_close_quiet(tc); /* on_close frees the block */
		return;
	}
	if (!reusable || p->draining || http_out_busy(&u->h1.out) ||
	    !arn_h1_parser_idle(&u->h1.p)) {
		up_close(u, !reusable || u->h1.in.bytes);
		return;
	}
	/* used-up input (the segment a fused END left) and the parser's
	 * scratch, which belongs to the stream's http_res, go */
	http_h1_reuse(&u->h1);
	if (c)
		u->idle_ms = c->http.idle_timeout_ms ? c->http.idle_timeout_ms : 0;
	u->timer.fn = up_idle_timeout;
	up_make_available(u);
}

void http_up_detach(struct http_stream *st)
{
	if (st->state & HTTP_S_PENDING) {
		struct http_pool *p = st->pool;
		pending_remove(st);
		POOL_GAUGE(st->hc->w, p, upstream_rq_pending_active, -1);
	}
	struct http_upconn *u = st->up;
	if (!u)
		return;
	st->up = NULL;
	u->st = NULL;
	if (u->pool->n_active)
		u->pool->n_active--;
	if (u->xs) {
		/* an HTTP/2 stream: reset, the connection goes on */
		http_uph2_stream_end(u, true);
		return;
	}
	/* mid-exchange: the connection's state is unknown; never reuse it */
	up_close(u, true);
}

/* ---- timers -------------------------------------------------------------------------- */

static void up_connect_timeout(struct http_timer *t)
{
	struct http_upconn *u =
	    (struct http_upconn *)((char *)t - offsetof(struct http_upconn, timer));
	if (u->connected || u->state == HTTP_UP_CLOSED)
		return;
	/* Issue 22: connect_timeout counts from when the first SYN left, not
	 * while it waited for the next hop's ARP answer (a switch to endpoints
	 * never contacted sends many SYNs at once toward an unresolved next
	 * hop; with connect_timeout equal to the SYN RTO they all failed).
	 * Still waiting: wait on (ARP gives up after its retries and drops
	 * the SYN; TCP's SYN retries then end the attempt as a connect
	 * failure). Resolved after this connection opened: the SYN left then,
	 * and the timeout runs from there. */
	struct http_worker *w = u->w;
	uint64_t since = arn_net_nexthop_since(w->lc, u->pool->addr);
	if (since == UINT64_MAX) {
		POOL_INC(w, u->pool, upstream_cx_connect_arp_wait);
		http_timer_arm(w, &u->timer, u->connect_ms);
		return;
	}
	uint64_t now = http_tsc(w);
	if (since > u->open_tsc && since <= now) {
		uint64_t waited = (now - since) / w->tsc_per_ms;
		if (waited < u->connect_ms) {
			POOL_INC(w, u->pool, upstream_cx_connect_arp_wait);
			http_timer_arm(w, &u->timer, u->connect_ms - waited);
			return;
		}
	}
	u->connect_timed_out = true;
	POOL_INC(u->w, u->pool, upstream_cx_connect_timeout);
	if (u->h1.tc)
		arn_tcp_abort(u->h1.tc); /* on_close reports the failure */
}

static void up_idle_timeout(struct http_timer *t)
{
	struct http_upconn *u =
	    (struct http_upconn *)((char *)t - offsetof(struct http_upconn, timer));
	if (u->state == HTTP_UP_IDLE) {
		/* armed in an earlier idle time, maybe (up_make_available) */
		struct http_worker *w = u->w;
		uint64_t idle = u->idle_ms ? u->idle_ms : 3600000;
		if (w->now_ms - u->idle_since_ms < idle) {
			http_timer_arm(w, &u->timer, idle - (w->now_ms - u->idle_since_ms));
			return;
		}
		up_close(u, false);
	} else if (u->h2 && u->state != HTTP_UP_CLOSED && !http_uph2_streams(u)) {
		http_uph2_goaway(u); /* the upstream's idle_timeout: GOAWAY, then close */
		up_close(u, false);
	}
}

/* ---- TCP callbacks -------------------------------------------------------------------- */

/* The connection can carry requests: the stream bound to it sends its
 * own, or it serves the pool's queue or goes idle. */
static void up_ready(struct http_upconn *u)
{
	u->connected = true;
	http_timer_cancel(&u->timer);
	u->timer.fn = up_idle_timeout;
	if (u->state == HTTP_UP_CLOSED)
		return;
	if (u->h2) {
		u->state = HTTP_UP_BUSY; /* never on the idle list: its streams are */
		http_uph2_ready(u);
		if (u->h2)
			up_h2_slot(u);
		return;
	}
	if (u->st)
		u->st->up_ops->on_ready(u->st);
	else
		up_make_available(u);
}

/*
 * The TLS handshake failed (its alert, if any, is with TCP): the stream
 * bound to it fails now as a connection failure, with the reason, and the
 * connection closes (FIN after the alert; on_close counts it as
 * upstream_cx_connect_fail and frees it).
 */
static void up_tls_failed(struct http_upconn *u, int rc, const char *text)
{
	char why[256];
	size_t n = text ? 0 : arn_tls_failure_reason(&u->tls.tls, why, sizeof(why));
	if (text)
		snprintf(why, sizeof(why), "%s", text);
	else if (!n)
		snprintf(why, sizeof(why), "TLS handshake: %s",
			 rc == -EPIPE ? "connection closed" : "failed");
	struct http_pool *p = u->pool;
	ARN_DEBUG(HTTP, "upstream %u.%u.%u.%u:%u: TLS handshake failed (%d): %s", p->addr >> 24,
		  (p->addr >> 16) & 255, (p->addr >> 8) & 255, p->addr & 255, p->port, rc, why);
	struct http_stream *st = u->st;
	up_close(u, false);
	if (st) {
		u->st = NULL;
		st->up = NULL;
		if (p->n_active)
			p->n_active--;
		st->up_ops->on_failed(st, rc, false, false, why);
	}
}

/*
 * auto_config: the host chose h2 for a connection opened with the stream
 * that waits on it as HTTP/1.1's: the connection turns to HTTP/2 (its
 * session, the pool's HTTP/2 list) and that stream becomes its first.
 */
static void up_turn_h2(struct http_upconn *u)
{
	struct http_pool *p = u->pool;
	struct http_worker *w = u->w;
	struct http_stream *st = u->st;
	if (http_uph2_start(u, st ? st->cluster : NULL, &uph2_pool_ops) != 0) {
		up_tls_failed(u, -ENOMEM, "HTTP/2: out of memory for the session");
		return;
	}
	POOL_INC(w, p, upstream_cx_http2_total);
	u->next = p->h2;
	u->prev = NULL;
	if (p->h2)
		p->h2->prev = u;
	p->h2 = u;
	if (st) {
		u->st = NULL;
		st->up = NULL;
		if (p->n_active)
			p->n_active--;
		struct http_upconn *s = http_uph2_stream_new(u);
		if (!s) {
			up_ready(u);
			st->up_ops->on_failed(st, -ENOBUFS, false, false, NULL);
			return;
		}
		bind(s, st);
	}
	up_ready(u);
}

/* The handshake as far as the bytes allow; open, it makes the connection
 * ready. */
static void up_tls_step(struct http_upconn *u)
{
	if (u->state == HTTP_UP_CLOSED || !u->h1.tc || u->connected)
		return;
	int rc = http_tls_handshake(&u->tls);
	if (rc == 0) {
		/* the codec is HTTP/1.1: an upstream that chose another
		 * protocol from the cluster's alpn_protocols cannot be spoken to */
		size_t alen = 0;
		const char *alpn = arn_tls_alpn(&u->tls.tls, &alen);
		if (u->h2) {
			/* HTTP/2 to this cluster: h2, or no ALPN (prior knowledge) */
			if (alpn && !(alen == 2 && memcmp(alpn, "h2", 2) == 0)) {
				up_tls_failed(u, -EPROTO,
					      "ALPN: the upstream chose a protocol other than h2");
				return;
			}
			up_ready(u);
			return;
		}
		if (u->alpn_auto) {
			/* auto_config: the host chose (or did not: HTTP/1.1) */
			u->alpn_auto = false;
			if (alpn && alen == 2 && memcmp(alpn, "h2", 2) == 0) {
				up_turn_h2(u);
				return;
			}
			POOL_INC(u->w, u->pool, upstream_cx_http1_total);
		}
		if (alpn && !(alen == 8 && memcmp(alpn, "http/1.1", 8) == 0)) {
			up_tls_failed(u, -EPROTO,
				      "ALPN: the upstream chose a protocol other than http/1.1");
			return;
		}
		up_ready(u);
		return;
	}
	if ((rc == -EAGAIN || rc == -EBUSY) && !u->h1.peer.eof)
		return;
	up_tls_failed(u, rc == -EAGAIN || rc == -EBUSY ? -EPIPE : rc, NULL);
}

/* lib/tls: a handshake the worker's budget deferred may go on. */
static void up_tls_resume(void *arg)
{
	up_tls_step(arg);
}

static void up_connected(struct arn_tcp_conn *c, int status)
{
	struct http_upconn *u = arn_tcp_user(c);
	if (!u || status != 0)
		return; /* on_close follows with the reason */
	struct http_worker *w = u->w;
	struct arn_stats_scope *sc = cl_stats(u->pool);
	if (sc)
		arn_stats_hist_record(sc, w->slot, ARN_CL_upstream_cx_connect_ms,
				      (http_tsc(w) - u->open_tsc) / w->tsc_per_us);
	/* the PROXY header before any other byte (TLS's ClientHello) */
	if (u->pp_version && !http_upp_send(c, u->pp_version, u->pp_local ? NULL : &u->pp)) {
		arn_tcp_abort(c); /* on_close reports it */
		return;
	}
	if (u->tls.on)
		up_tls_step(u); /* the ClientHello goes out */
	else
		up_ready(u);
}

static void up_pump(struct http_upconn *u)
{
	if (u->h2) {
		http_uph2_pump(u);
		return;
	}
	if (u->st) {
		u->st->up_ops->on_data(u->st);
		return;
	}
	/* idle (or closing): anything from the upstream now is not a response
	 * to a request of ours, so the connection cannot be reused; over TLS
	 * only plaintext counts (a TLS 1.3 server's session tickets may come
	 * after the response: read, they go to the pool's session slot) */
	if (u->state == HTTP_UP_IDLE && u->tls.on && u->h1.tc) {
		http_tp_fill(u->h1.tp, u->h1.tc, &u->h1.in);
		if (u->h1.in.bytes || u->h1.peer.eof) {
			if (u->h1.tc)
				up_close(u, true);
		}
		return;
	}
	if (u->state == HTTP_UP_IDLE)
		up_close(u, true);
	else if (u->h1.tc)
		arn_tcp_rx_consume(u->h1.tc, arn_tcp_rx_pending(u->h1.tc));
}

static void up_data(struct arn_tcp_conn *c, struct rte_mbuf *head, uint32_t len)
{
	(void)head;
	(void)len;
	struct http_upconn *u = arn_tcp_user(c);
	if (!u)
		return;
	if (u->tls.on && !u->connected) {
		up_tls_step(u);
		return;
	}
	up_pump(u);
	/* A response still in progress: the server may hold the rest behind
	 * Nagle until what it sent is ACKed. A complete one's ACK can wait and
	 * ride on the next request (lib/tcp leaves that choice to us). */
	if ((u->st || (u->h2 && http_uph2_streams(u))) && u->h1.tc)
		arn_tcp_ack_now(u->h1.tc);
}

bool http_up_heard(const struct http_upconn *u)
{
	/* over TLS only plaintext counts: a server closing an idle
	 * connection sends close_notify before its FIN. TCP's queue first:
	 * a response's bytes wait there when the stream hears of them
	 * (upstream_data), before the codec read them. */
	return (!u->tls.on && u->h1.tc && arn_tcp_rx_pending(u->h1.tc)) || u->h1.in.bytes ||
	       !arn_h1_parser_idle(&u->h1.p);
}

static void up_eof(struct arn_tcp_conn *c)
{
	struct http_upconn *u = arn_tcp_user(c);
	if (!u)
		return;
	u->h1.peer.eof = true;
	http_tp_eof(u->h1.tp, c);
	if (u->tls.on && !u->connected) {
		up_tls_step(u); /* the records before the FIN, then the failure */
		return;
	}
	if (u->h2) {
		http_uph2_pump(u); /* what came before the FIN, then the close */
		return;
	}
	if (u->st) {
		u->st->up_ops->on_data(u->st);
		return;
	}
	up_close(u, false);
}

static void up_writable(struct arn_tcp_conn *c)
{
	struct http_upconn *u = arn_tcp_user(c);
	if (!u)
		return;
	http_tp_writable(u->h1.tp, c);
	if (u->tls.on && !u->connected) {
		up_tls_step(u);
		return;
	}
	if (u->h2)
		http_uph2_writable(u);
	else if (u->st)
		u->st->up_ops->on_writable(u->st);
}

size_t http_up_failure_reason(const struct http_upconn *u, char *buf, size_t len)
{
	/* the handshake's failure, or an alert after it (a TLS 1.3 upstream
	 * refuses a client certificate once our side of the handshake is
	 * done); not a mere end of input */
	if (!u->tls.on || !(!u->connected || arn_tls_alert_received(&u->tls.tls) ||
			    arn_tls_alert_sent(&u->tls.tls)))
		return 0;
	return arn_tls_failure_reason(&u->tls.tls, buf, len);
}

static void up_closed(struct arn_tcp_conn *c, int reason)
{
	struct http_upconn *u = arn_tcp_user(c);
	if (!u)
		return;
	arn_tcp_set_user(c, NULL);
	u->h1.tc = NULL;
	u->tls.tc = NULL;
	struct http_stream *st = u->st;
	struct http_worker *w = u->w;
	idle_unlink(u);
	if (!u->connected) {
		POOL_INC(w, u->pool, upstream_cx_connect_fail);
		HOST_ADD(w, u->pool, cx_connect_fail, 1);
	} else if (reason == 0 || reason == -ECONNRESET)
		POOL_INC(w, u->pool, upstream_cx_destroy_remote);
	else
		POOL_INC(w, u->pool, upstream_cx_destroy_local);
	if (u->h2) {
		char why[256];
		size_t n = http_up_failure_reason(u, why, sizeof(why));
		h2_unlink(u);
		http_uph2_closed(u, reason, n ? why : NULL);
	}
	if (st) {
		u->st = NULL;
		st->up = NULL;
		if (u->pool->n_active)
			u->pool->n_active--;
		/* the response may still sit in our input: let the stream take
		 * it before it learns the connection is gone */
		char why[256];
		size_t n = http_up_failure_reason(u, why, sizeof(why));
		st->up_ops->on_failed(st, reason, u->connected, u->connect_timed_out,
				      n ? why : NULL);
	}
	up_block_free(u);
}

const struct arn_tcp_ops http_up_ops = {
    .on_connected = up_connected,
    .on_data = up_data,
    .on_eof = up_eof,
    .on_writable = up_writable,
    .on_close = up_closed,
};

/* ---- generations ----------------------------------------------------------------------- */

static bool endpoint_in(const struct arn_cfg_endpoints *e, uint32_t addr, uint16_t port)
{
	for (size_t p = 0; e && p < e->n_priorities; p++)
		for (size_t l = 0; l < e->priorities[p].n_localities; l++) {
			const struct arn_cfg_locality *lo = &e->priorities[p].localities[l];
			for (size_t i = 0; i < lo->n_endpoints; i++)
				if (lo->endpoints[i].addr == addr && lo->endpoints[i].port == port)
					return true;
		}
	return false;
}

void http_pools_sweep(struct http_worker *w, const struct arn_cfg_gen *g)
{
	for (uint32_t i = 0; i < w->pools_cap; i++) {
		struct http_pool *p = &w->pools[i];
		if (!p->used)
			continue;
		/* the pool keeps the first 127 bytes of its cluster's name: a
		 * longer one (Istio's outbound|port|subset|FQDN) is its runtime
		 * object's, else every generation drained the pool */
		const char *name = p->cluster;
		if (p->cluster_len >= sizeof(p->cluster))
			name = p->crt && p->crt->len == p->cluster_len ? p->crt->name : NULL;
		struct arn_cfg_ref ref = {name, p->cluster_len,
					  name ? arn_cfg_hash(name, p->cluster_len) : 0};
		struct arn_cfg_cluster_view v;
		bool keep = name && arn_cfg_cluster_resolve(g, &ref, &v) == 0 &&
			    endpoint_in(v.endpoints, p->addr, p->port);
		p->draining = !keep;
		if (keep)
			continue;
		/* idle: nothing in flight, so a RST loses nothing and spares
		 * both sides TIME_WAIT where TCP finds that safe (issue 22:
		 * EDS churn under load filled the pool with TIME_WAIT) */
		while (p->idle) {
			struct http_upconn *u = p->idle;
			struct arn_tcp_conn *tc = u->h1.tc;
			if (!tc) {
				up_close(u, false);
				continue;
			}
			idle_unlink(u);
			http_timer_cancel(&u->timer);
			u->state = HTTP_UP_CLOSED;
			arn_tcp_rx_consume(tc, arn_tcp_rx_pending(tc));
			arn_tcp_close_quiet(tc); /* on_close frees the block */
		}
		/* HTTP/2 connections without streams go now, the others with
		 * their last stream (up_h2_slot) */
		for (struct http_upconn *u = p->h2, *n; u; u = n) {
			n = u->next;
			if (!http_uph2_streams(u) && u->state != HTTP_UP_CLOSED) {
				http_uph2_goaway(u);
				up_close(u, false);
			}
		}
		http_pool_maybe_retire(w, p);
	}
}

void http_pools_close_all(struct http_worker *w)
{
	static const struct arn_tcp_ops none = {0};
	for (uint32_t i = 0; i < w->n_ups; i++) {
		struct http_upconn *u = &w->ups[i];
		if (u->xs || u->h2) {
			if (u->h1.tc) {
				arn_tcp_set_ops(u->h1.tc, &none);
				arn_tcp_set_user(u->h1.tc, NULL);
				arn_tcp_abort(u->h1.tc);
				u->h1.tc = NULL;
				u->tls.tc = NULL;
				http_h1_peer_free(&u->h1);
				http_tls_stop(&u->tls);
			}
			http_uph2_shutdown(u);
			continue;
		}
		if (!u->h1.tc)
			continue;
		arn_tcp_set_ops(u->h1.tc, &none);
		arn_tcp_set_user(u->h1.tc, NULL);
		arn_tcp_abort(u->h1.tc);
		u->h1.tc = NULL;
		u->tls.tc = NULL;
		http_h1_peer_free(&u->h1);
		http_tls_stop(&u->tls);
	}
	for (uint32_t i = 0; i < w->pools_cap; i++)
		pool_forget_session(&w->pools[i]);
}
