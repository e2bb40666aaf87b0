/*
 * The HTTP module: its life cycle on the control lcore (arn_http.h), and on
 * each worker the hooks lib/tcp calls (arn_tcp_app). worker_init allocates
 * the worker's state and pools before traffic (the fast path allocates
 * nothing but mbufs); worker_fini closes everything. worker_poll runs once
 * per loop iteration of the worker, after lib/tcp's input and timers:
 *
 *   1. the clock: the worker's milliseconds from lib/net's TSC
 *   2. TLS: the handshake budget refilled, handshakes the last
 *      iteration's budget deferred resumed, oldest first
 *   3. requests whose head waited for a request buffer, oldest first,
 *      while buffers are free
 *   4. the timers that are due (connections, streams, attempts, upstream
 *      connections)
 *   5. drains of replaced listeners that ended (--drain-time-s): their
 *      idle connections closed
 *   6. a new configuration generation: listeners opened and closed (a
 *      replaced one starts draining), pools of endpoints that left their
 *      cluster drained
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_malloc.h>

#include "arn_config.h"
#include "arn_l4.h"
#include "arn_log.h"
#include "arn_table.h"
#include "arn_tcp.h"
#include "http_authz.h"
#include "http_rls.h"
#include "http_jwks.h"
#include "http_oauth2.h"
#include "http_ext_proc.h"
#include "http_conn.h"
#include "http_filter.h"
#include "http_drain.h"
#include "http_stream.h"
#include "http_hc.h"
#include "http_compressor.h"
#include "http_decompressor.h"
#include "http_grpc_stats.h"
#include "http_mcp_tools.h"
#include "http_mcp.h"
#include "http_tcpp.h"
#include "http_shadow.h"
#include "http_upstream.h"
#include "http_otel.h"
#include "http_glog.h"

static struct arn_config_store *g_store;
/* where g_store keeps its current generation: read inline by every poll */
static struct arn_cfg_gen *const *g_gen_slot;
/* the module's slot among lib/tcp's (arn_tcp_app_slot), found by the first
 * worker_init: the poll reads its state there without the search */
static unsigned g_app_slot = ARN_TCP_APPS_MAX;
static uint32_t cfg_conns = 16384, cfg_ups = 8192, cfg_res = 1024;
/* arn_http_options' table sizes, 0 for the defaults: set at each start */
static uint32_t cfg_big, cfg_pools, cfg_trl, cfg_rb;
static struct http_mcp_caps cfg_mcp;
/* Envoy's --drain-time-s default (600 s) and --drain-strategy gradual */
static uint64_t cfg_drain_ms = 600 * 1000;
static bool cfg_drain_immediate;
static struct arn_stats_scope *g_lm_stats; /* listener_manager.* */

/* The HTTP filters in the order the HCM runs them (http_filter.h): the
 * health check / RBAC / local_ratelimit filters (in the HCM's own order)
 * and the MCP gateway before the router; grpc_stats counts responses;
 * the compressor takes the bodies of the responses it compresses. grpc_web
 * first: Envoy's comes first in the chains that have it (Contour's,
 * Istio's), so the filters after it see a gRPC request and their local
 * replies are gRPC's, and its response edits take the body before the
 * compressor's. The decompressor after the compressor: the compressor
 * sees the upstream's content-encoding (and leaves such a response
 * alone, as Envoy's before a decompressor in the chain does), and the
 * decompressor reads a request body only an earlier filter did not
 * (buffer, ext_authz). */
static const struct http_filter_ops *const filter_chain[] = {
    &http_grpc_web_filter_ops, /* first: see above */
    &http_l4_filter_ops,
    &http_mcp_filter_ops,
    &http_grpc_stats_filter_ops,
    &http_compressor_filter_ops,
    &http_decompressor_filter_ops,
    &http_otel_filter_ops, /* HCM tracing: the span at the stream's end, the decorator's header */
};

/* Requests that waited for an http_res go on, oldest first, while there
 * are free ones (run from the poll, never from inside another stream). */
static void res_waiters_run(struct http_worker *w)
{
	unsigned n = 0;
	while (w->res_free && w->res_wait_head && n++ < 64) {
		struct http_conn *hc = w->res_wait_head;
		http_conn_run(hc);
		/* still first in line: it wants no buffer now (it is closing,
		 * or went away); the next one's turn */
		if (w->res_wait_head == hc)
			http_res_unwait(w, hc);
	}
}

/* ---- listeners follow the configuration ---------------------------------------- */

struct lsn_walk {
	struct http_worker *w;
};

static void want_listener(void *ctx, const struct arn_cfg_listener *l)
{
	struct http_worker *w = ((struct lsn_walk *)ctx)->w;
	int free_slot = -1;
	for (int i = 0; i < HTTP_LISTENERS_MAX; i++) {
		struct http_wlistener *x = &w->lsn[i];
		if (x->used && x->addr == l->addr && x->port == l->port) {
			x->seen = true;
			if (x->l != l) {
				/* a new version: the old one's connections drain */
				arn_cfg_pin(l);
				if (x->l)
					http_drain_begin(w, x->l);
				x->l = l;
			}
			return;
		}
		if (!x->used && free_slot < 0)
			free_slot = i;
	}
	if (free_slot < 0) {
		if (w->idx == 0)
			ARN_ERR(HTTP, "listener '%s': more than %d listeners; not opened",
				l->obj.name, HTTP_LISTENERS_MAX);
		return;
	}
	int err = 0;
	struct arn_tcp_listen_opts o = {.backlog = l->backlog};
	struct arn_tcp_listener *tl =
	    arn_tcp_listen(w->lc, l->addr, l->port, &http_dc_ops, w, &o, &err);
	if (!tl) {
		if (w->idx == 0)
			ARN_ERR(HTTP, "listener '%s': cannot listen on %u.%u.%u.%u:%u: %s",
				l->obj.name, l->addr >> 24, (l->addr >> 16) & 255,
				(l->addr >> 8) & 255, l->addr & 255, l->port, strerror(-err));
		return;
	}
	struct http_wlistener *x = &w->lsn[free_slot];
	x->used = x->seen = true;
	x->addr = l->addr;
	x->port = l->port;
	x->tl = tl;
	arn_cfg_pin(l);
	x->l = l;
	if (w->idx == 0)
		ARN_INFO(HTTP, "listener '%s' on %u.%u.%u.%u:%u", l->obj.name, l->addr >> 24,
			 (l->addr >> 16) & 255, (l->addr >> 8) & 255, l->addr & 255, l->port);
}

static void listeners_sync(struct http_worker *w, const struct arn_cfg_gen *g)
{
	for (int i = 0; i < HTTP_LISTENERS_MAX; i++)
		w->lsn[i].seen = false;
	struct lsn_walk lw = {w};
	arn_cfg_listener_foreach(g, want_listener, &lw);
	for (int i = 0; i < HTTP_LISTENERS_MAX; i++) {
		struct http_wlistener *x = &w->lsn[i];
		if (x->used && !x->seen) {
			/* Envoy stops accepting at once; accepted connections drain */
			arn_tcp_unlisten(w->lc, x->tl);
			if (w->idx == 0)
				ARN_INFO(HTTP, "stopped listening on %u.%u.%u.%u:%u", x->addr >> 24,
					 (x->addr >> 16) & 255, (x->addr >> 8) & 255, x->addr & 255,
					 x->port);
			if (x->l)
				http_drain_begin(w, x->l);
			memset(x, 0, sizeof(*x));
		}
	}
}

/* ---- module hooks ---------------------------------------------------------------------- */

/* A per-worker array: cache-line aligned, and zeroed here, on the worker's
 * own lcore, so that its pages are placed on the worker's NUMA socket
 * (first touch), as lib/tcp places its connection blocks. */
/* A worker's table of @p n entries, zeroed and faulted in now (in huge
 * pages where the kernel gives them: arn_table.h); NULL when out of
 * memory or when @p n * @p size overflows. */
static void *worker_array(size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		return NULL;
	return arn_table_zalloc(n * size);
}

static void worker_free(struct http_worker *w)
{
	arn_table_free(w->conns);
	arn_table_free(w->ups);
	http_mcp_worker_fini(w);
	http_mcp_tools_worker_fini(w);
	http_grpc_stats_worker_fini(w);
	http_cmp_worker_fini(w);
	http_dcmp_worker_fini(w);
	http_authz_worker_fini(w);
	http_jwks_worker_fini(w);
	http_rls_worker_fini(w);
	http_oauth2_worker_fini(w);
	http_ext_proc_worker_fini(w);
	http_otel_worker_fini(w);
	http_glog_worker_fini(w);
	arn_table_free(w->res_mem);
	arn_table_free(w->big_mem);
	arn_table_free(w->trl_mem);
	arn_table_free(w->pools);
	http_tcpp_worker_fini(w);
	http_hc_worker_fini(w);
	http_shadow_worker_fini(w);
	rte_free(w);
}

static struct arn_tcp_app http_app;

/* /stats' tls.<worker>.*: each worker's lib/tls counters (the handshake
 * budget, truncations, renegotiations refused), read by the control
 * lcore's pull as tcp.<worker>.* are (a worker writes its own, aligned
 * 64-bit words). Set and cleared with the worker. */
static struct arn_tls_worker *tls_workers[ARN_STATS_MAX_WORKERS];

static void tls_worker_stats_pull(struct arn_stats_emitter *e, void *arg)
{
	(void)arg;
	char tag[16];
	for (unsigned i = 0; i < ARN_STATS_MAX_WORKERS; i++) {
		const struct arn_tls_worker *t = __atomic_load_n(&tls_workers[i], __ATOMIC_ACQUIRE);
		if (!t)
			continue;
		snprintf(tag, sizeof(tag), "%u", i);
		for (unsigned k = 0; k < ARN_TLS_W_COUNT; k++)
			arn_stats_emit(
			    e,
			    arn_tls_worker_counter_is_gauge(k) ? ARN_STAT_GAUGE : ARN_STAT_COUNTER,
			    "tls", ARN_STATS_TAG_WORKER, tag, arn_tls_worker_counter_name(k),
			    (int64_t)__atomic_load_n(&t->c[k], __ATOMIC_RELAXED));
	}
}

static int worker_init(struct arn_lcore *lc, void *arg)
{
	(void)arg;
	unsigned idx = arn_net_worker_index(lc);
	/* on the worker's NUMA socket, cache aligned; found again through the
	 * TCP worker (arn_tcp_app_state), never through a global array */
	struct http_worker *w = rte_zmalloc_socket("arn_http_worker", sizeof(*w),
						   RTE_CACHE_LINE_SIZE, (int)rte_socket_id());
	if (!w)
		return -ENOMEM;
	w->lc = lc;
	w->idx = idx;
	w->slot = ARN_STATS_SLOT_WORKER(idx);
	arn_tls_worker_init(&w->tls, idx, 0);
	w->store = g_store;
	w->gen_slot = g_gen_slot;
	w->hz = arn_net_hz();
	w->tsc_per_ms = w->hz / 1000 ? w->hz / 1000 : 1;
	w->tsc_per_us = w->hz / 1000000 ? w->hz / 1000000 : 1;
	w->now_ms = arn_net_now(lc) / w->tsc_per_ms;
	w->next_ms_tsc = (w->now_ms + 1) * w->tsc_per_ms;
	http_timers_init(w);
	if (getrandom(w->rng, sizeof(w->rng), 0) != (ssize_t)sizeof(w->rng)) {
		w->rng[0] = rte_rdtsc() ^ ((uint64_t)getpid() << 32);
		w->rng[1] = ~w->rng[0] * 0x9e3779b97f4a7c15ull;
	}
	w->rng[0] |= 1;
	w->n_conns = cfg_conns;
	w->n_ups = cfg_ups;
	w->n_res = cfg_res;
	w->n_big = cfg_big ? cfg_big : HTTP_BIG_SCRATCH_N;
	w->n_trl = cfg_trl ? cfg_trl : HTTP_TRL_N;
	w->rb_segs_max = cfg_rb; /* 0: HTTP_RB_WORKER_SEGS */
	w->pools_cap = cfg_pools ? (uint32_t)rte_align32pow2(cfg_pools) : HTTP_POOLS;
	w->drain_ms = cfg_drain_ms;
	w->drain_immediate = cfg_drain_immediate;
	w->lm = g_lm_stats;
	w->conns = worker_array(w->n_conns, sizeof(*w->conns));
	w->ups = worker_array(w->n_ups, sizeof(*w->ups));
	w->res_mem = worker_array(w->n_res, sizeof(*w->res_mem));
	w->pools = worker_array(w->pools_cap, sizeof(*w->pools));
	w->big_mem = worker_array(w->n_big, HTTP_BIG_SCRATCH);
	w->trl_mem = worker_array(w->n_trl, sizeof(*w->trl_mem));
	if (!w->conns || !w->ups || !w->res_mem || !w->pools || !w->big_mem || !w->trl_mem ||
	    http_tcpp_worker_init(w, w->n_ups) != 0 || http_mcp_worker_init(w, &cfg_mcp) != 0 ||
	    http_grpc_stats_worker_init(w) != 0 || http_mcp_tools_worker_init(w) != 0 ||
	    http_cmp_worker_init(w) != 0 || http_dcmp_worker_init(w) != 0 ||
	    http_hc_worker_init(w) != 0 || http_shadow_worker_init(w) != 0) {
		ARN_ERR(HTTP, "worker %u: out of memory for the HTTP pools", idx);
		worker_free(w);
		return -ENOMEM;
	}
	if (http_authz_worker_init(w) != 0) { /* ext_authz's check contexts */
		ARN_ERR(HTTP, "worker %u: out of memory for the ext_authz checks", idx);
		worker_free(w);
		return -ENOMEM;
	}
	if (http_rls_worker_init(w) != 0) { /* the ratelimit filter's call contexts */
		ARN_ERR(HTTP, "worker %u: out of memory for the ratelimit calls", idx);
		worker_free(w);
		return -ENOMEM;
	}
	if (http_ext_proc_worker_init(w) != 0) { /* the ext_proc filter's streams */
		ARN_ERR(HTTP, "worker %u: out of memory for the ext_proc streams", idx);
		worker_free(w);
		return -ENOMEM;
	}
	if (http_jwks_worker_init(w) != 0) { /* jwt_authn's remote_jwks cache */
		ARN_ERR(HTTP, "worker %u: out of memory for the jwt_authn JWKS cache", idx);
		worker_free(w);
		return -ENOMEM;
	}
	if (http_oauth2_worker_init(w) != 0) { /* oauth2's token exchanges */
		ARN_ERR(HTTP, "worker %u: out of memory for the oauth2 exchanges", idx);
		worker_free(w);
		return -ENOMEM;
	}
	if (http_otel_worker_init(w) != 0) { /* HCM tracing's span queue */
		ARN_ERR(HTTP, "worker %u: out of memory for the tracing span queue", idx);
		worker_free(w);
		return -ENOMEM;
	}
	if (http_glog_worker_init(w) != 0) { /* the gRPC access loggers' queue */
		ARN_ERR(HTTP, "worker %u: out of memory for the gRPC access log queue", idx);
		worker_free(w);
		return -ENOMEM;
	}
	int rc = arn_tcp_app_set_state(lc, &http_app, w);
	if (rc != 0) {
		worker_free(w);
		return rc;
	}
	/* the same slot on every worker: each stores the same value */
	__atomic_store_n(&g_app_slot, arn_tcp_app_slot(lc, &http_app), __ATOMIC_RELAXED);
	for (uint32_t i = w->n_conns; i-- > 0;) {
		w->conns[i].c.next = w->conn_free;
		w->conn_free = &w->conns[i].c;
	}
	for (uint32_t i = w->n_ups; i-- > 0;) {
		w->ups[i].next = w->up_free;
		w->up_free = &w->ups[i];
	}
	for (uint32_t i = w->n_res; i-- > 0;) {
		w->res_mem[i].next = w->res_free;
		w->res_free = &w->res_mem[i];
	}
	for (uint32_t i = w->n_big; i-- > 0;)
		http_big_put(w, w->big_mem + (size_t)i * HTTP_BIG_SCRATCH);
	for (uint32_t i = w->n_trl; i-- > 0;)
		http_trl_put(w, &w->trl_mem[i]);
	if (idx < ARN_STATS_MAX_WORKERS)
		__atomic_store_n(&tls_workers[idx], &w->tls, __ATOMIC_RELEASE);
	/* no generation seen yet: an id no generation has (they count up
	 * from 0), so that the first poll with a store takes its generation */
	w->gen_id = UINT64_MAX;
	if (g_store) {
		const struct arn_cfg_gen *g = arn_config_gen(g_store);
		listeners_sync(w, g);
		http_hc_gen(w, g);
		w->gen_id = arn_cfg_gen_id(g);
	}
	return 0;
}

/* The tests of steps 2, 3 and 6 of the poll, which worker_poll makes
 * inline for all steps and worker_poll_work again for each. */
static inline bool tls_due(const struct http_worker *w)
{
	return w->tls.deferred_head || w->tls.budget_left != w->tls.budget;
}
static inline bool res_due(const struct http_worker *w)
{
	return w->res_wait_head && w->res_free;
}
/* The store's generation when it is not the worker's (NULL: the same),
 * its pointer and id read inline, no call. */
static inline const struct arn_cfg_gen *gen_moved(const struct http_worker *w)
{
	if (!g_gen_slot)
		return NULL;
	const struct arn_cfg_gen *g = arn_config_gen_at(g_gen_slot);
	return arn_cfg_gen_id_fast(g) != w->gen_id ? g : NULL;
}

/* Steps 2 to 6 of the poll (the top of this file), each under its own
 * test, for an iteration where worker_poll found one of them due. */
static __attribute__((noinline)) void worker_poll_work(struct http_worker *w)
{
	/* 2. TLS handshakes deferred by the last iteration's budget */
	if (tls_due(w))
		arn_tls_worker_begin(&w->tls, 0);
	/* 3. requests waiting for a buffer */
	if (res_due(w))
		res_waiters_run(w);
	/* 4. due timers, and 5. drains of replaced listeners that ended
	 * (they close their idle connections): both only when the
	 * millisecond moved. http_timers_run always brings wheel_ms to
	 * now_ms, which changes only in worker_poll, and a drain ends at
	 * least a millisecond after it began: one test for the two, not one
	 * each. */
	if (w->wheel_ms != w->now_ms) {
		http_timers_run(w);
		if (w->n_drains)
			http_drains_poll(w);
	}
	/* 5b. the MCP gateway: other workers' messages, idle sessions */
	http_mcp_poll(w, w->mcp, w->now_ms);
	/* 6. a new generation */
	const struct arn_cfg_gen *g = gen_moved(w);
	if (g) {
		listeners_sync(w, g);
		http_pools_sweep(w, g);
		http_grpc_stats_sweep(w, g);
		http_cmp_sweep(w, g);
		http_dcmp_sweep(w, g);
		http_mcp_tools_sweep(w, g);
		http_mcp_gen(w, g);
		http_hc_gen(w, g);
		w->gen_id = arn_cfg_gen_id_fast(g);
		/* what connections keep between their streams is of the
		 * older one (http_stream.h) */
		http_kept_drop_all(w);
	}
}

/*
 * Once per loop iteration: the clock, then whether any of steps 2 to 6 is
 * due, all tested here with no call (the store's generation pointer and
 * id, and the MCP state's head, read inline), so that the usual
 * iteration, with none due, is a leaf without a frame (bench/cost/run:
 * about three iterations a request); worker_poll_work does what is due,
 * each step under its own test as before.
 */
static void worker_poll(struct arn_lcore *lc, void *arg)
{
	(void)arg;
	struct http_worker *w =
	    arn_tcp_app_state_at(lc, __atomic_load_n(&g_app_slot, __ATOMIC_RELAXED));
	if (!w)
		return;
	/* 1. the clock: divided only once the TSC reached the next
	 * millisecond's first tick (one compare, not a 64-bit division, in
	 * the iterations between) */
	uint64_t tsc = arn_net_now(lc);
	if (tsc >= w->next_ms_tsc) {
		w->now_ms = tsc / w->tsc_per_ms;
		w->next_ms_tsc = (w->now_ms + 1) * w->tsc_per_ms;
	}
	if (unlikely(tls_due(w) || res_due(w) || w->wheel_ms != w->now_ms ||
		     http_mcp_due(w->mcp, w->now_ms) || gen_moved(w)))
		worker_poll_work(w);
}

static void worker_fini(struct arn_lcore *lc, void *arg)
{
	(void)arg;
	struct http_worker *w = arn_tcp_app_state(lc, &http_app);
	if (!w)
		return;
	http_hc_worker_fini(w); /* its connections first: they are worker 0's */
	http_conns_shutdown(w);
	http_shadow_shutdown(w);
	http_mcp_shutdown(w);
	http_tcpp_shutdown(w);
	http_pools_close_all(w);
	http_drains_fini(w);
	for (int i = 0; i < HTTP_LISTENERS_MAX; i++)
		if (w->lsn[i].used) {
			arn_tcp_unlisten(lc, w->lsn[i].tl);
			if (w->lsn[i].l)
				arn_cfg_unpin(w->lsn[i].l);
		}
	arn_tcp_app_set_state(lc, &http_app, NULL);
	if (w->idx < ARN_STATS_MAX_WORKERS)
		__atomic_store_n(&tls_workers[w->idx], NULL, __ATOMIC_RELEASE);
	worker_free(w);
}

static struct arn_tcp_app http_app = {
    .name = "http",
    .worker_init = worker_init,
    .worker_poll = worker_poll,
    .worker_fini = worker_fini,
};

int arn_http_start(struct arn_config_store *s, const struct arn_http_options *o)
{
	g_store = s;
	g_gen_slot = s ? arn_config_gen_slot(s) : NULL;
	if (o) {
		if (o->max_connections)
			cfg_conns = o->max_connections;
		if (o->max_upstream_connections)
			cfg_ups = o->max_upstream_connections;
		if (o->max_streams)
			cfg_res = o->max_streams;
		if (o->drain_time_set)
			cfg_drain_ms = (uint64_t)o->drain_time_s * 1000;
		cfg_drain_immediate = o->drain_immediate;
	}
	/* (unlike the limits above, which keep an earlier start's value) */
	cfg_big = o ? o->large_buffers : 0;
	cfg_trl = o ? o->trailer_arrays : 0;
	cfg_rb = o ? o->kept_body_mbufs : 0;
	cfg_pools = o && o->upstream_pools <= (1u << 31) ? o->upstream_pools : 0;
	cfg_mcp = (struct http_mcp_caps){0};
	if (o)
		cfg_mcp = (struct http_mcp_caps){
		    .sessions = o->mcp_sessions, .legs = o->mcp_legs, .detached = o->mcp_detached};
	int rc = http_filters_set(filter_chain, RTE_DIM(filter_chain));
	if (rc)
		return rc;
	rc = http_rt_init(s);
	if (rc)
		return rc;
	if (!g_lm_stats)
		g_lm_stats = arn_stats_scope_get(&arn_stats_listener_manager_schema, NULL, NULL);
	http_otel_module_init(o ? o->node_id : NULL, o ? o->zone : NULL, o ? o->zone_len : 0);
	http_glog_module_init(o ? o->node_id : NULL, o ? o->node_cluster : NULL, o ? o->zone : NULL,
			      o ? o->zone_len : 0);
	http_rt_glog_ops(&http_glog_ops);
	rc = arn_tcp_app_register(&http_app);
	if (rc) {
		ARN_ERR(HTTP, "cannot register with the TCP stack: %s", strerror(-rc));
		http_rt_fini();
		return rc;
	}
	arn_stats_pull_register(tls_worker_stats_pull, NULL);
	http_grpc_stats_start();
	http_cmp_start();
	http_dcmp_start();
	http_mcp_tools_start();
	return 0;
}

void arn_http_poll(void)
{
	if (g_store)
		http_rt_sync(g_store);
}

void arn_http_stop(void)
{
	arn_stats_pull_unregister(tls_worker_stats_pull, NULL);
	http_grpc_stats_stop();
	http_cmp_stop();
	http_dcmp_stop();
	http_mcp_tools_stop();
	http_mcp_stop();
	http_rt_fini();
	arn_stats_scope_put(g_lm_stats);
	g_lm_stats = NULL;
	g_store = NULL;
	g_gen_slot = NULL;
}
