/*
 * Private to lib/http's proxy: what the data plane and the control lcore
 * share (the runtime objects of http_rt.c and http_host.c: statistics
 * scopes, access loggers, circuit breaker counters, per-host counters) and
 * the pure logic that the unit tests drive without a data plane (retries,
 * path normalization, the router's header edits, load balancing).
 *
 * The data plane's own headers, from the top down (each calls only what
 * is below it; what runs the other way goes through an ops table):
 *
 *   http_module.c        the module (arn_http.h): life cycle, the worker's
 *                        init / numbered poll / fini, listeners
 *   http_conn.h          an HTTP/1 client connection: accept, lib/tcp's
 *                        callbacks, the run, closing
 *   http_conn_blk.h      a client connection's block (its HTTP/1 peer, or
 *                        one HTTP/2 stream's)
 *   http_h2.h            an HTTP/2 client connection and its streams
 *   http_mcp.h           the MCP gateway filter
 *   http_tcpp.h          a tcp_proxy session: a client connection whose
 *                        chain ends in tcp_proxy, relayed to an upstream
 *   http_hcm.h           a stream: its head, its two directions, its end;
 *                        the HTTP filters only through their table
 *                        (http_filter.h)
 *   http_router_filter.h route, cluster, attempts, retries
 *   http_l4.h            network filters; health check, RBAC and
 *                        local_ratelimit as HTTP filters
 *   http_local.h         local replies, the health check filter
 *   http_upstream.h      upstream connections and pools; their ops back to
 *                        the stream (struct http_upstream_ops)
 *   http_upstream_h2.h   an upstream HTTP/2 connection's session and its
 *                        streams; the pool only through its ops
 *                        (struct http_uph2_pool_ops)
 *   http_hc.h            active health checks (worker 0's checker) and
 *                        their state machine
 *   http_od.h            outlier detection: the consecutive detectors and
 *                        ejections, shared by every worker
 *   http_access_log.h    a stream's access log record
 *   http_grpc_stats.h    the grpc_stats filter's counters
 *   (http_drain.c)       does a response close its connection for a drain
 *   http_stream.h        the stream and what it sees of its connection
 *                        (struct http_conn_ops), the request buffers
 *   http_codec_h1.h      HTTP/1 behind the codec ops, for both peers
 *   http_codec.h         the codec contract (struct http_codec_ops)
 *   http_io.h            bytes between lib/tcp and a codec
 *   http_h2_mem.h        nghttp2's counting allocator (both sides)
 *   http_worker.h        the per-worker state, timers, small services
 *   http_filter.h        the HTTP filters' ops and their registered table
 *
 * Threading: struct http_worker and everything hanging off it (connections,
 * streams, pools, timers) belong to one worker lcore. The runtime objects
 * (struct http_cluster_rt, http_hcm_rt) are created by the control lcore and
 * read by workers; the only fields workers write in them are the circuit
 * breaker counters (atomics, shared by all workers as Envoy's are) and the
 * statistics slabs (each worker its own slot).
 */
#ifndef ARN_HTTP_INT_H
#define ARN_HTTP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arn_access_log.h"
#include "arn_config_model.h"
#include "arn_h1.h"
#include "arn_http.h"
#include "arn_stats_envoy.h"

struct rte_mbuf;
struct arn_lcore;
struct arn_tcp_conn;
struct arn_tcp_listener;
struct arn_config_store;
struct arn_tls_ctx;
struct arn_tls_stats;

/* ---- runtime objects (control lcore creates, workers read) ---------------- */

/*
 * Per cluster name: statistics and the circuit breakers' counters.
 *
 * Lifetime, as Envoy frees a removed cluster's stats once nothing uses
 * them: reference counted. The control lcore's registry holds one while
 * the cluster is in the current generation; each snapshot that maps it
 * holds one (dropped after the snapshot's RCU grace period); each stream
 * routed to it, each worker pool and each host counting into it holds one
 * (workers take theirs while the snapshot they found it in holds its own).
 * The last put (any lcore) queues it for the control lcore, which frees it
 * and puts its scope: cluster.<name>.* leaves /stats. A cluster added back
 * while its old object lives gets that object again, counters and all.
 */
struct http_cluster_rt {
	char *name;
	size_t len;
	uint64_t hash;
	struct arn_stats_scope *stats;
	/* shared by workers: __atomic add/sub */
	int32_t cx_active;
	int32_t rq_pending;
	int32_t retries_active; /* max_retries: retries decided and not yet answered */
	uint32_t od_ejected;	/* outlier detection: hosts ejected now (http_od.h) */
	/* moves (atomic add, release) each time a host of the cluster changes
	 * its active health check flag or its outlier ejection: the workers'
	 * cached candidate lists (struct http_lb_cache) are built again */
	uint32_t health_epoch;
	/* cluster.<name>.ssl.*: one block per worker (lib/tls's counters,
	 * pulled into /stats), allocated by the control lcore when the
	 * cluster first has an UpstreamTlsContext, kept for the object's
	 * life (counters survive certificate rotations) */
	struct arn_tls_stats *ssl;
	uint32_t refs; /* atomic */
	/* control lcore */
	bool current;			      /* the registry holds a reference */
	uint64_t seen;			      /* last sync that found it in the generation */
	struct http_cluster_rt *next;	      /* registry chain */
	struct http_cluster_rt *reclaim_next; /* queued by the last put */
	/* outlier detection's interval (http_od_interval): written by the
	 * lcore that runs it only (last: the fields above keep their lines) */
	uint32_t od_round;   /* evaluations so far */
	uint64_t od_next_ms; /* the next one (0: not started) */
};

#define HTTP_MAX_LOGGERS 8
#define HTTP_MAX_FILTER_STATS 16

/* Per HttpConnectionManager object (pointer identity): statistics by
 * stat_prefix and the access loggers. Reference counted: each snapshot and
 * each downstream connection using it holds one; the last put (any lcore)
 * queues it for the control lcore to free. A tcp_proxy filter (its
 * object's identity) has one too, with tp set instead of hcm: the same
 * parts (tcp.<stat_prefix>.* in stats, its access loggers, the network
 * filters before it), so that both terminal filters share one life cycle. */
struct http_worker;
struct arn_access_record;
struct http_hcm_rt {
	const struct arn_cfg_hcm *hcm;	    /* key; the listener is pinned by the snapshot */
	const struct arn_cfg_tcp_proxy *tp; /* key instead of hcm (a tcp_proxy chain) */
	/* key instead of both: the listener's own access_log (its loggers
	 * only), for connections no filter chain takes */
	const struct arn_cfg_listener *lsn;
	struct arn_stats_scope *stats;
	struct arn_stats_scope *h2stats; /* http2.* (one scope for all, referenced) */
	struct arn_stats_scope *h1stats; /* http1.* (the same), with headers_with_underscores */
	struct arn_access_logger *loggers[HTTP_MAX_LOGGERS];
	unsigned n_loggers;
	/* the gRPC access loggers (http_glog.h), after the file ones */
	struct http_glog *glogs[HTTP_MAX_LOGGERS];
	unsigned n_glogs;
	/* http_glog_log, set with the first of them (http_rt.c): the
	 * stream's, the connection's and tcp_proxy's ends log through it,
	 * not by a call into http_glog.c, which exports on sub-requests
	 * that sit above them */
	void (*glog_log)(struct http_worker *w, const struct arn_cfg_listener *l, uint32_t laddr,
			 const struct http_hcm_rt *r, const struct arn_access_record *rec);
	unsigned n_logs; /* n_loggers + n_glogs: a stream end's one test */
	struct http_lr *lr; /* local_reply_config compiled (http_local.c), or NULL */
	/* no HTTP filter acts on this manager's streams (http_filters_idle):
	 * the HCM walks none of their hooks, decided here once per
	 * configuration generation, not by each filter at every request */
	bool filters_idle;
	bool cresp; /* a custom_response filter is in the chain (http_cresp.h) */
	uint32_t refs;
	struct http_hcm_rt *reclaim_next;
	/* the health check filter's pass-through cache (cache_time): the
	 * upstream's last answer, reused until the time (worker ms clock, TSC
	 * based, the same on every worker); written by any worker, relaxed */
	uint64_t hc_cache_until_ms;
	uint16_t hc_cache_status;
	/* per HTTP filter index (RBAC, local_ratelimit): its statistics
	 * (http_l4.c); filters past HTTP_MAX_FILTER_STATS are not counted */
	struct arn_stats_scope *fstats[HTTP_MAX_FILTER_STATS];
	struct arn_stats_scope *fshadow[HTTP_MAX_FILTER_STATS]; /* RBAC shadow prefix */
	/* per network filter index of the chain before this manager */
	struct arn_stats_scope *l4stats[HTTP_MAX_FILTER_STATS];
	struct arn_stats_scope *l4shadow[HTTP_MAX_FILTER_STATS]; /* RBAC shadow prefix */
	/* per HTTP filter index: envoy.filters.http.lua's states (http_lua.c) */
	struct http_lua_frt *lua[HTTP_MAX_FILTER_STATS];
};

/* Per listener address ("198.18.0.2_80"): listener.<address>.* stats.
 * Reference counted as http_cluster_rt is: the registry while a listener
 * of the current generation has the address, each snapshot, and each
 * downstream connection accepted on it. */
struct http_listener_rt {
	uint32_t addr;
	uint16_t port;
	struct arn_stats_scope *stats;
	/* listener.<address>.ssl.*: one block per worker (lib/tls's own
	 * counters, pulled into /stats), allocated by the control lcore with
	 * the address's first TLS filter chain, kept for the object's life
	 * (counters survive certificate rotations) */
	struct arn_tls_stats *ssl;
	/* proxy_proto.[<stat_prefix>.]*: taken by the control lcore with the
	 * address's first listener with the PROXY protocol filter, kept for
	 * the object's life */
	struct arn_stats_scope *pp;
	uint32_t refs; /* atomic */
	bool current;
	uint64_t seen;
	struct http_listener_rt *reclaim_next;
	/* connections open on the address and counted against its listener's
	 * runtime connection_limit, all workers (atomic; http_cx_admit); the
	 * object outlives a listener's versions, so does the count */
	uint64_t cx_open;
};

/*
 * A downstream connection admitted under the connection limits
 * (arn_http_set_cx_limits): what it counts in, given back when it closes.
 * It moves with the connection from block to block (the ClientHello's wait,
 * the HTTP connection, a tcp_proxy session); a zero one counts in nothing.
 */
struct http_worker;
struct http_cx_adm {
	struct http_listener_rt *lrt; /* referenced: counted in its cx_open */
	bool global;		      /* counted in the process-wide count */
};

/**
 * Admit a connection accepted on listener @p l (worker lcore): refuse it
 * over the global limit (unless l->ignore_global_conn_limit) or over its
 * listener's, counting listener.<address>.downstream_global_cx_overflow or
 * downstream_cx_overflow, as Envoy's accept. @return 0 (*@p a holds the
 * counts; http_cx_release gives them back) or -ECONNREFUSED.
 */
int http_cx_admit(struct http_worker *w, const struct arn_cfg_listener *l, struct http_cx_adm *a);
/** Give back what @p a counts in and zero it (any lcore; a zero one: no-op). */
void http_cx_release(struct http_cx_adm *a);
/** Move the admission of the connection being accepted on @p w (none:
 * zero) into @p to, the block that keeps the connection. */
void http_cx_take(struct http_worker *w, struct http_cx_adm *to);

/** One more reference; only while another is held (a snapshot's, a pool's). */
static inline void http_crt_ref(struct http_cluster_rt *c)
{
	__atomic_fetch_add(&c->refs, 1, __ATOMIC_RELAXED);
}
static inline void http_lrt_ref(struct http_listener_rt *l)
{
	__atomic_fetch_add(&l->refs, 1, __ATOMIC_RELAXED);
}

/** Drop a reference (any lcore; NULL: no-op); the last one queues it for the control lcore. */
void http_crt_put(struct http_cluster_rt *c);
void http_lrt_put(struct http_listener_rt *l);

/* Control lcore (http_cluster.c). */
/** The live object of cluster @p name, made current (the registry holds a
 * reference), or a new one; NULL: out of memory. */
struct http_cluster_rt *http_cluster_get(const char *name);
/** The same with the name's length and arn_cfg_hash() (@p name is still
 * NUL-terminated: the statistics scope takes it as a string). */
struct http_cluster_rt *http_cluster_getn(const char *name, size_t len, uint64_t hash);
/** The current object of cluster @p name, or NULL: none is made. */
struct http_cluster_rt *http_cluster_find(const char *name);
/** The same for listener address @p addr:@p port. */
struct http_listener_rt *http_listener_get(uint32_t addr, uint16_t port);
/** The registry lets go of the current clusters not seen in sync @p sync_id. */
void http_cluster_drop_unseen(uint64_t sync_id);
/** The same for listener addresses. */
void http_listener_drop_unseen(uint64_t sync_id);
/** The registry lets go of cluster @p name (removed from the configuration):
 * the object lives on while a snapshot, stream or host holds it. */
void http_cluster_forget(const char *name, size_t len, uint64_t hash);
/** Free the objects whose last reference went. */
void http_cluster_reclaim(void);
/** Free every object (workers stopped). */
void http_cluster_fini(void);
/** Objects alive (tests: removed ones go). */
size_t http_cluster_count(void);
size_t http_listener_count(void);

/*
 * Per-host (cluster, endpoint address) counters: Envoy's host stats that
 * /clusters shows (cx_total, cx_active, rq_total, ...) and /stats lists as
 * cluster.<name>.endpoint.<address>.<stat>.
 *
 * Each worker counts in its own cache line of the host (slots[worker
 * index]) with plain relaxed stores; the control lcore sums the slots.
 *
 * Lifetime: a host is found by (cluster, address, port) in a registry on
 * the control lcore, so a host that stays in its cluster across
 * generations is the same object and keeps its counts. It is reference
 * counted: each statistics snapshot that maps it holds one reference (taken
 * and dropped on the control lcore, the drop after the RCU grace period of
 * the snapshot), and each worker pool (struct http_pool) that counts into it
 * holds one (taken by the worker while the snapshot it found the host in
 * still holds its own, dropped when the pool is retired: no connection, no
 * waiting stream, no counted request). The last put queues the host for
 * the control lcore, which frees it: no worker can write its counters any
 * more, because no pool refers to it and no snapshot can hand it out.
 */
struct http_host_ctr {
	uint64_t cx_total, cx_connect_fail, rq_total, rq_success, rq_error, rq_timeout;
	uint64_t cx_active, rq_active; /* gauges; one worker opens and closes, never below 0 */
} __attribute__((aligned(64)));

struct http_host {
	uint32_t refs; /* atomic */
	uint32_t addr;
	uint16_t port;
	unsigned n_slots;		/* worker slots: counts of workers beyond are dropped */
	uint64_t key;			/* registry hash */
	struct http_cluster_rt *crt;	/* its cluster (a reference) */
	struct http_host *next;		/* registry chain (control lcore) */
	struct http_host *reclaim_next; /* queued by the last put */
	uint64_t mark;			/* control lcore: listed in this walk already */
	struct http_host_ctr *slots;	/* n_slots, cache-line aligned */
	/* Envoy's health flags that active checks set (http_hc.h,
	 * HTTP_HOST_FAILED_ACTIVE_HC): written by the control lcore when it
	 * creates the host for a checked cluster (failed until the first
	 * check passes) and by worker 0, which runs the checks; read by every
	 * worker's balancer, relaxed, only for clusters with health_checks */
	uint8_t hc_flags;
	/* the transport_socket_matches entry (or the cluster's default) its
	 * endpoint resolves to (arn_cfg_tsm_resolve), in the last generation
	 * the control lcore built its cluster's entry with; NULL: a cluster
	 * without matches. Written by the control lcore (release), read by
	 * workers (http_rt_host_tsm), which take it only when it belongs to
	 * the cluster object they connect for */
	const struct arn_cfg_ts_match *tsm;
	/* Outlier detection (http_od.h): written by any worker with atomics,
	 * read by every worker's balancer for clusters with
	 * outlier_detection. Not in hc_flags: worker 0 rewrites that byte
	 * with a plain load and store. */
	uint8_t od_ejected;   /* Envoy's FAILED_OUTLIER_CHECK (HTTP_HOST_FAILED_OUTLIER) */
	uint32_t od_5xx;      /* consecutive 5xx (and local failures) */
	uint32_t od_gw;	      /* consecutive 502/503/504 (and local failures) */
	uint32_t od_times;    /* ejections counted for the next one's time (decays) */
	uint64_t od_until_ms; /* the end of the current or last ejection (worker now_ms) */
	/* the interval's lcore only: the summed rq_success / rq_error at
	 * its crt's evaluation od_round (0: never evaluated) */
	uint32_t od_round;
	uint64_t od_ok, od_err;
	uint64_t od_iv_ok, od_iv_n; /* the last interval's successes and requests */
	/* tcp_proxy's connects to the host in a cluster with outlier
	 * detection, which the interval counts beside rq_success / rq_error
	 * as Envoy's does without split_external_local_origin_errors (a
	 * connect as a 200, a failed one as a 503): atomic adds, any worker.
	 * Not host statistics (Envoy's tcp_proxy counts no rq_*). */
	uint64_t od_cx_ok, od_cx_fail;
	/* split_external_local_origin_errors (http_od_put, atomics, any
	 * worker): consecutive local-origin failures; the statuses (od_x_*)
	 * and the local-origin results (od_lo_*) counted for the interval.
	 * The interval's lcore: od_lo_prev_* as od_ok / od_err, od_lo_iv_* as
	 * od_iv_*, od_split the mode od_ok / od_err were taken in. */
	uint32_t od_lo;
	uint8_t od_split;
	uint64_t od_x_ok, od_x_n, od_lo_ok, od_lo_n;
	uint64_t od_lo_prev_ok, od_lo_prev_n, od_lo_iv_ok, od_lo_iv_n;
};
/* struct http_host's hc_flags: Envoy's FAILED_ACTIVE_HC. */
#define HTTP_HOST_FAILED_ACTIVE_HC 1u
/* struct http_host's od_ejected while ejected: Envoy's FAILED_OUTLIER_CHECK. */
#define HTTP_HOST_FAILED_OUTLIER 1u

/* Worker side. */
static inline struct http_host_ctr *http_host_ctr(struct http_host *h, unsigned worker)
{
	return h && worker < h->n_slots ? &h->slots[worker] : NULL;
}

/* Add @p d to one of a worker's own counters (a single writer per slot). */
static inline void http_host_add(uint64_t *p, int64_t d)
{
	__atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + (uint64_t)d, __ATOMIC_RELAXED);
}

#define HTTP_HOST_ADD(ctr, field, d)                                                               \
	do {                                                                                       \
		struct http_host_ctr *c_ = (ctr);                                                  \
		if (c_)                                                                            \
			http_host_add(&c_->field, (d));                                            \
	} while (0)

/** One more reference; only while another is held (a snapshot's, a pool's). */
static inline void http_host_ref(struct http_host *h)
{
	__atomic_fetch_add(&h->refs, 1, __ATOMIC_RELAXED);
}

/** Drop a reference (any lcore); the last one queues @p h for http_host_reclaim(). */
void http_host_put(struct http_host *h);

/* Control lcore (http_host.c). */
/**
 * The live host for (@p crt, @p addr, @p port), or a new one with zero
 * counts, with one reference for the caller.
 * @return the host, or NULL: out of memory, or no worker slots configured
 *   yet (arn_stats_workers() == 0).
 */
/* *@p created (may be NULL): true when no host of this cluster had
 * @p addr and @p port before (an endpoint this generation adds). */
struct http_host *http_host_get(struct http_cluster_rt *crt, uint32_t addr, uint16_t port,
				bool *created);
/** The live host, without a reference (control lcore readers), or NULL. */
struct http_host *http_host_find(const char *cluster, size_t len, uint32_t addr, uint16_t port);
/** Free the hosts whose last reference went. */
void http_host_reclaim(void);
/** Sum of every worker's slot. */
void http_host_sum(const struct http_host *h, struct http_host_ctr *out);
/** Call @p fn for every live host (references > 0). */
void http_host_foreach(void (*fn)(void *ctx, struct http_host *h), void *ctx);
/** Free every host (workers stopped). */
void http_host_fini(void);
/** Hosts the registry holds (tests). */
size_t http_host_count(void);

/* Worker-side lookups in the current snapshot (NULL: not there yet). To
 * keep a cluster or listener past the next quiescent state, take a
 * reference (http_crt_ref, http_lrt_ref) before it. */
struct http_cluster_rt *http_rt_cluster(const char *name, size_t len, uint64_t hash);
/* The id of the snapshot published last, stored after it: a cluster that
 * http_rt_cluster found after this read a value stays the current
 * snapshot's answer for its name while the value is the same (no id
 * comes back), so a worker may keep it beside the id (the router's
 * per-connection cache: no lookup, hash test and memcmp per request). */
extern uint64_t http_rt_sync_;
static inline uint64_t http_rt_snap_sync(void)
{
	return __atomic_load_n(&http_rt_sync_, __ATOMIC_ACQUIRE);
}
struct http_hcm_rt *http_rt_hcm(const struct arn_cfg_hcm *hcm); /* takes a reference */
/* The runtime object of tcp_proxy filter @p tp (takes a reference). */
struct http_hcm_rt *http_rt_tcpp(const struct arn_cfg_tcp_proxy *tp);
/* The runtime object of listener @p l's own access_log (takes a
 * reference), or NULL when it has none. */
struct http_hcm_rt *http_rt_listener_logs(const struct arn_cfg_listener *l);
/** The server TLS context of filter chain @p fc in the current TLS table
 * (borrowed: a connection takes its own reference with arn_tls_conn_init
 * in the same poll), or NULL when it has no TLS or its context could not
 * be built. The table is published before the generation that has the
 * chain (http_rt.c), so a chain a worker sees has its context. Worker
 * lcore. */
struct arn_tls_ctx *http_rt_tls(const struct arn_cfg_filter_chain *fc);
/*
 * transport_socket_matches: the entry of cluster @p c that host @p h (or
 * NULL) at @p addr:@p port connects with: the host's, chosen once per
 * generation by the control lcore, when it is one of @p c's; else (a
 * stream on another generation of the cluster) resolved from the
 * stream's endpoints @p eps (or NULL: the cluster's default). NULL when
 * @p c has no matches (its upstream_tls is every host's).
 */
const struct arn_cfg_ts_match *http_rt_host_tsm(const struct arn_cfg_cluster *c,
						const struct http_cluster_rt *crt,
						const struct arn_cfg_endpoints *eps,
						const struct http_host *h, uint32_t addr,
						uint16_t port);
/* The context of match @p m (NULL: could not be built; its cluster's
 * upstream_tls for the default). */
struct arn_tls_ctx *http_rt_tsm_tls(const struct arn_cfg_ts_match *m,
				    const struct http_cluster_rt *crt);
/** The client TLS context of cluster @p c (its UpstreamTlsContext) in the
 * current TLS table, borrowed as http_rt_tls's; when the table has
 * another version of the cluster, the context in force under its name
 * (@p crt's, else @p c's). NULL when there is none (it could not be
 * built). Worker lcore. */
struct arn_tls_ctx *http_rt_upstream_tls(const struct arn_cfg_cluster *c,
					 const struct http_cluster_rt *crt);
struct http_listener_rt *http_rt_listener(uint32_t addr, uint16_t port);
/* The <stat_prefix>.http_local_rate_limit.* scope of a route's or virtual
 * host's local_ratelimit configuration @p cfg in the current snapshot
 * (count into it in the same poll), or NULL. */
struct arn_stats_scope *http_rt_rl_scope(const struct arn_cfg_http_ratelimit *cfg);
/* mcp.<ToolSet>.backend.<name>.* of ToolSet @p ts's backend @p b, or NULL
 * (a ToolSet newer than the table: not counted until it is built). */
struct arn_stats_scope *http_rt_mcp_backend(const struct arn_cfg_toolset *ts, uint32_t b);
/* The host of the current snapshot; take a reference before the next
 * quiescent state to keep it (http_host_ref). */
struct http_host *http_rt_host(const struct http_cluster_rt *crt, uint32_t addr, uint16_t port);
/* The hosts of cluster @p crt in the current snapshot, sorted by (address,
 * port), their number in *@p n: what the balancer of a cluster with active
 * health checks reads their flags in (http_lb_in.hosts). Valid until the
 * next quiescent state. NULL (and 0): the snapshot has no such entry. */
struct http_host *const *http_rt_hosts(const struct http_cluster_rt *crt, size_t *n);
/* The host at (@p addr, @p port) among @p n hosts sorted by (address,
 * port), as http_rt_hosts gives them, or NULL: a binary search. */
static inline struct http_host *http_hosts_find(struct http_host *const *hosts, size_t n,
						uint32_t addr, uint16_t port)
{
	uint64_t want = (uint64_t)addr << 16 | port;
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		struct http_host *h = hosts[mid];
		uint64_t k = (uint64_t)h->addr << 16 | h->port;
		if (k == want)
			return h;
		if (k < want)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}
/* What the balancer of cluster @p crt reads in the current snapshot:
 * its sorted hosts, the hosts of its endpoints in their order, and the
 * cached candidates of worker @p worker (NULL past the snapshot's worker
 * count). Valid until the next quiescent state.
 * @return false: the snapshot has no such entry (*@p v zeroed). */
struct http_lb_view {
	const struct arn_cfg_endpoints *eps; /* the endpoints ep_hosts follow */
	struct http_host *const *hosts;
	size_t n_hosts;
	struct http_host *const *ep_hosts;
	size_t n_ep_hosts;
	struct http_lb_cache *cache;
	/* eps' endpoints sorted by (address, port): a session's host is
	 * found in O(log n) (http_lb_override) */
	const struct arn_cfg_endpoint *const *ep_sorted;
	size_t n_ep_sorted;
};
bool http_rt_lb_view(const struct http_cluster_rt *crt, unsigned worker, struct http_lb_view *v);
struct http_lb_in;
/* What every caller of http_lb_pick (the router, tcp_proxy, the MCP
 * gateway's sub-requests) gives it from the current snapshot for cluster
 * @p crt (NULL: nothing) on worker @p worker: in->cluster and in->eps set
 * first; a cluster with active checks or outlier detection gets its hosts
 * (in->hosts), and it or one of more than HTTP_LB_CACHE_MIN endpoints the
 * worker's cached candidates (in->cache, in->epoch) and the endpoints'
 * resolved hosts. Valid until the next quiescent state. */
void http_rt_lb_in(const struct http_cluster_rt *crt, unsigned worker, struct http_lb_in *in);
/* Endpoints above which a cluster without health checks or outlier
 * detection picks from the cache (a walk of fewer costs less than the
 * snapshot lookup). */
#define HTTP_LB_CACHE_MIN 8
/* Clusters with health_checks in the current snapshot: worker 0 walks the
 * generation's clusters for its checks only when there are some. */
size_t http_rt_hc_clusters(void);
/* A cluster of the current snapshot with outlier_detection: what its
 * interval (http_od_tick) reads, without a lookup. */
struct http_rt_od {
	struct http_cluster_rt *crt;
	const struct arn_cfg_outlier *cfg; /* its Cluster's */
	struct http_host *const *hosts;	   /* sorted, as http_rt_hosts */
	size_t n_hosts;
};
/* The current snapshot's clusters with outlier_detection (NULL, 0: none),
 * their number in *@p n; *@p id names the list (another value: another
 * list). Kept per snapshot as its entries change, so reading it costs
 * nothing per cluster without outlier detection. Valid until the next
 * quiescent state. */
const struct http_rt_od *http_rt_od_clusters(size_t *n, uint64_t *id);
void http_rt_hcm_put(struct http_hcm_rt *r);
/** Clusters whose entries the last snapshot built rather than took from
 * the previous one (tests count the work of a generation with it). */
size_t http_rt_clusters_built(void);
/* Clusters the last snapshot visited: all of the generation's when its
 * clusters' part was built from nothing (the first, a new worker count),
 * those whose Cluster or endpoints changed when it was the previous part
 * changed where they differ (one for one changed cluster among 10,000),
 * 0 when it took the previous part as it is (a route or listener change).
 * For the tests (issue 17). */
size_t http_rt_clusters_walked(void);
/* Listeners the last snapshot visited: 0 when it took the previous
 * snapshot's listeners' part (the same listeners, routes and ToolSets:
 * a cluster or endpoints change). For the tests (issue 17). */
size_t http_rt_listeners_walked(void);
/* Clusters the last TLS table looked at: every one when it was built from
 * nothing (or its Secrets changed), else those whose Cluster differs from
 * the previous table's generation. For the tests (issue 17). */
size_t http_rt_tls_clusters_walked(void);

/* True after POST /healthcheck/fail until /healthcheck/ok
 * (arn_http_set_healthcheck_failed): one relaxed load, any lcore, inline
 * (asked at every response). */
extern bool http_hc_failed_;
static inline bool http_healthcheck_failed(void)
{
	return __atomic_load_n(&http_hc_failed_, __ATOMIC_RELAXED);
}

/* The gRPC access loggers (http_glog.c), as the runtime makes, drops and
 * reaches them: registered by http_module.c, so that the runtime, below
 * the sub-requests they export on, calls none of http_glog.c's functions.
 * Without them (a harness that never registered), a gRPC access logger
 * logs nothing. */
struct http_glog;
struct http_glog_ops {
	struct http_glog *(*create)(const struct arn_cfg_access_log *a, const char *lsn,
				    size_t idx);
	void (*destroy)(struct http_glog *g);
	void (*log)(struct http_worker *w, const struct arn_cfg_listener *l, uint32_t laddr,
		    const struct http_hcm_rt *r, const struct arn_access_record *rec);
};
void http_rt_glog_ops(const struct http_glog_ops *ops);

/* Control lcore. */
int http_rt_init(struct arn_config_store *s);
/* each control loop iteration: frees what workers are done with; builds the
 * snapshot of a generation published without the prepare callback */
void http_rt_sync(struct arn_config_store *s);
void http_rt_fini(void);

/* ---- retries (http_retry.c), unit tested ------------------------------------ */

/* How an attempt ended without a response head, for retry_on. */
enum http_reset_kind {
	HTTP_RESET_CONNECT_FAILURE = 0, /* refused, unreachable, connect_timeout, local */
	HTTP_RESET_RESET,		/* closed / reset / protocol error before the head */
	HTTP_RESET_TIMEOUT,		/* per_try_timeout */
	HTTP_RESET_OVERFLOW,		/* a circuit breaker refused it */
};

/* One request's retry state (Envoy's RetryStateImpl). */
struct http_retry {
	const struct arn_cfg_retry_policy *rp; /* NULL: no retries */
	uint32_t left;			       /* retries still allowed (num_retries) */
	uint32_t n;			       /* retries made: the back-off exponent */
	bool holding;			       /* holds a slot of the cluster's max_retries */
	/* hosts this request tried, kept under retry_host_predicate
	 * previous_hosts (http_xreq.tried), at most HTTP_RETRY_TRIED */
	uint8_t n_tried;
};
#define HTTP_RETRY_TRIED 8

enum http_retry_status {
	HTTP_RETRY_NO = 0,   /* the outcome is not retriable: it is final */
	HTTP_RETRY_YES,	     /* retry (after the back-off) */
	HTTP_RETRY_LIMIT,    /* retriable, but num_retries are used up: flag URX */
	HTTP_RETRY_OVERFLOW, /* retriable, but max_retries is reached: flag UO */
};

/** Start @p r for a request routed with @p rp (may be NULL or not present).
 * Inline: every attempt's start (bench_hcm: a call for four stores). */
static inline void http_retry_init(struct http_retry *r, const struct arn_cfg_retry_policy *rp)
{
	r->rp = rp && rp->present && rp->retry_on ? rp : NULL;
	r->left = r->rp ? rp->num_retries : 0;
	r->n = 0;
	r->holding = false;
}
/** Does @p rp retry a final response with @p status? (retry_on 5xx,
 * gateway-error, retriable-4xx, retriable-status-codes; when the upstream
 * said x-envoy-ratelimited, only envoy-ratelimited) */
bool http_retry_on_status(const struct arn_cfg_retry_policy *rp, unsigned status, bool ratelimited);
/** Does @p rp retry an attempt that ended with @p k before a response head? */
/* Whether a response head's grpc-status value @p v (@p len bytes) is one
 * of @p rp's gRPC retry conditions (cancelled, deadline-exceeded,
 * internal, resource-exhausted, unavailable), as Envoy reads it from the
 * response headers (a trailers-only answer). */
bool http_retry_on_grpc(const struct arn_cfg_retry_policy *rp, const char *v, size_t len);
/* Whether one of the @p n matchers @p hm matches @p m (a response for
 * retriable_headers, ":status" its status; the request for
 * retriable_request_headers), as Envoy's HeaderMatcher: repeated fields
 * joined with ','. */
bool http_retry_headers_match(const struct arn_cfg_header_match *hm, size_t n,
			      const struct arn_h1_msg *m);
bool http_retry_on_reset(const struct arn_cfg_retry_policy *rp, enum http_reset_kind k);
/**
 * Envoy's shouldRetry: called with every attempt's outcome (@p would: it is
 * retriable). Releases the max_retries slot the previous retry held (then a
 * non-retriable outcome sets *@p success: the retry succeeded), checks the
 * retry limit, then the breaker (@p active, shared by workers, against
 * @p max_active) and on YES takes a slot.
 */
enum http_retry_status http_retry_should(struct http_retry *r, bool would, int32_t *active,
					 uint32_t max_active, bool *success);
/** The request ends: give back a held max_retries slot. */
void http_retry_release(struct http_retry *r, int32_t *active);
/** Envoy's fully jittered exponential back-off for the @p n-th retry (n >= 1):
 * a time in [0, (2^n - 1) * base) from @p rand, at most @p max_ms. */
uint32_t http_retry_backoff_ms(uint32_t base_ms, uint32_t max_ms, uint32_t n, uint64_t rand);

/* ---- path normalization (http_path.c), unit tested -------------------------- */

#define HTTP_PATH_NORMALIZE 1u	   /* normalize_path: RFC 3986 6.2.2.2 and 6.2.2.3, '\' = '/' */
#define HTTP_PATH_MERGE_SLASHES 2u /* merge_slashes */
/** Could http_path_normalize() change @p p? (a quick scan; false: it cannot) */
bool http_path_needs_normalize(const char *p, size_t n, unsigned flags);
/**
 * Normalize the path part of request target @p p (the query is kept) into
 * @p out, which must hold @p n bytes (the result is never longer).
 * @return the new length, or -ENOSPC when @p cap < @p n.
 */
int http_path_normalize(const char *p, size_t n, unsigned flags, char *out, size_t cap);
/**
 * Envoy's PathUtil::unescapeSlashes (path_with_escaped_slashes_action):
 * "%2F" / "%2f" become "/" and "%5C" / "%5c" become "\" in the path part
 * of @p p (@p n bytes; the query kept byte for byte), into @p out (@p cap
 * bytes; the result is never longer than @p p).
 * @return its length; -ENOENT when there was none (out untouched beyond
 *   what was scanned); -ENOSPC when @p cap < @p n.
 */
int http_path_unescape_slashes(const char *p, size_t n, char *out, size_t cap);

/* ---- pure logic (http_router.c), unit tested ------------------------------- */

/* The text space a stream gives the edits: generated header values, the
 * rewritten path, a redirect's Location (struct http_res). */
#define HTTP_TEXT 4096

/* A number's header line kept for the next request that sends the same
 * number (v 0: nothing kept): "name: " (up to 32 bytes), the number's
 * len digits, CRLF and a NUL. */
struct http_num_text {
	uint32_t v;
	uint8_t len;
	char txt[47]; /* UINT32_MAX's 10 digits after a 32-byte name and ": " */
};

/* What the request edits need to know about the connection and the stream. */
struct http_req_ctx {
	const struct arn_cfg_hcm *hcm;
	const struct arn_cfg_route_table *rt;
	const struct arn_cfg_vhost *vhost;
	const struct arn_cfg_route *route;
	const struct arn_cfg_weighted_cluster *wc;
	uint32_t raddr; /* downstream peer */
	uint16_t rport;
	uint16_t drport; /* see draddr */
	uint32_t laddr;
	uint16_t lport;
	bool tls;
	bool mtls;	  /* the client presented a certificate (x-forwarded-client-cert) */
	const char *host; /* Host to send (after stripping / rewriting), or NULL: keep */
	/* the client's x-forwarded-client-cert element (APPEND_FORWARD,
	 * SANITIZE_SET on mTLS: http_xfcc_tls_value), or NULL */
	const char *xfcc;
	uint32_t xfcc_len;
	uint32_t host_len;
	bool path_rewritten;
	bool host_rewritten; /* host is the route's rewrite (literal, or auto's hostname) */
	/* the head has the request's x-request-id (struct http_stream's
	 * rid_head): taken as its own, never replaced (in a hole) */
	bool rid_head;
	uint32_t timeout_ms; /* route timeout (x-envoy-expected-rq-timeout-ms) */
	/* where that header's value is kept between requests (the caller's,
	 * read until the head is encoded), or NULL: formatted into text */
	struct http_num_text *timeout_text;
	uint32_t attempt; /* x-envoy-attempt-count with include_request_attempt_count */
	uint64_t rand_hi, rand_lo;
	/* where generated values go (NUL-separated), and how much is used */
	char *text;
	uint32_t text_cap, text_len;
	/* results */
	const char *xff;
	uint32_t xff_len;
	const char *request_id;
	uint32_t request_id_len;
	bool internal;
	uint32_t client_addr; /* the trusted client address (XFF rules) */
	/* %DOWNSTREAM_DIRECT_REMOTE_*%: the TCP peer when a PROXY header gave
	 * raddr (struct http_subst's); 0: raddr, rport. In the padding
	 * (the context stays 176 bytes) */
	uint32_t draddr;
};

/**
 * The edits that turn the downstream request @p m into the upstream one:
 * XFF / x-forwarded-proto per use_remote_address and xff_num_trusted_hops,
 * x-request-id, x-envoy-* sanitising and x-envoy-expected-rq-timeout-ms,
 * Host, Expect, and request_headers_to_add / _remove at the route (and
 * weighted cluster), virtual host and route table levels in Envoy's order.
 * @return the number of edits in @p e (at most @p cap), or -ENOSPC.
 */
int http_req_edits(struct http_req_ctx *x, const struct arn_h1_msg *m, struct arn_h1_edit *e,
		   unsigned cap);

/** A generated x-request-id's length: a UUID's 36 characters. */
#define HTTP_REQUEST_ID_LEN 36
/**
 * The x-request-id generated from the random words @p hi and @p lo (a
 * UUID 4: their 16 bytes, lowest first, with the version and variant
 * bits set) into @p out: HTTP_REQUEST_ID_LEN characters, no NUL.
 */
void http_request_id_fmt(uint64_t hi, uint64_t lo, char out[HTTP_REQUEST_ID_LEN]);

/* ---- x-forwarded-client-cert (http_xfcc.c, pure) ------------------------- */

/** The parts of the current client's element; strings NUL-terminated
 * (the PEMs @p cert_len / @p chain_len bytes), all borrowed. */
struct http_xfcc_src {
	const char *const *by; /* the local certificate's URI SANs */
	size_t n_by;
	const char *hash; /* hex SHA-256 of the peer's DER certificate, or NULL */
	const char *cert; /* the peer's certificate, PEM, or NULL */
	size_t cert_len;
	const char *chain; /* the peer's chain as it sent it, PEM, or NULL */
	size_t chain_len;
	const char *subject;	/* RFC 2253, or NULL */
	const char *const *uri; /* the peer's URI SANs */
	size_t n_uri;
	const char *const *dns; /* the peer's DNS SANs */
	size_t n_dns;
};
/**
 * The client's x-forwarded-client-cert element as Envoy writes it: By=
 * per local URI SAN, Hash=, then per @p details (ARN_CFG_FCC_D_*) Cert=
 * and Chain= (quoted, the PEM URL-encoded as Envoy encodes it), Subject=
 * (quoted, even empty), URI= per SAN ("URI=" when none), DNS= per SAN,
 * joined by ';', into @p out (no NUL).
 * @return its length; -ENOSPC past @p cap; -EINVAL when a name has a
 *   byte no header value may carry (NUL, CR, LF).
 */
int http_xfcc_value(const struct http_xfcc_src *s, unsigned details, char *out, size_t cap);
/** @p pem URL-encoded as Envoy encodes certificates ('\n', ' ', '+',
 * '/', '=' as %XX) into @p out (NULL: only measured). @return its length. */
size_t http_xfcc_urlenc(const char *pem, size_t n, char *out);

/**
 * original_ip_detection_extensions of @p h on @p m from peer @p raddr, in
 * their order as Envoy's mutateRequestHeaders runs them: the first that
 * finds an address gives it (*@p client; *@p internal: trusted by it and
 * internal per internal_address_config); one that finds none passes to the
 * next, unless it has reject_with_status. None found: the peer, not
 * internal.
 * @return the status to refuse the request with, or 0.
 */
int http_ip_detect(const struct arn_cfg_hcm *h, const struct arn_h1_msg *m, uint32_t raddr,
		   uint32_t *client, bool *internal);

/** Is @p a internal for @p h (internal_address_config: x-envoy-internal and
 * the x-envoy-* sanitising)? Envoy 1.36: none unless configured; set
 * without cidr_ranges, RFC 1918 and loopback; else the ranges. */
bool http_addr_internal(const struct arn_cfg_hcm *h, uint32_t a);

/** The trusted client address of @p m per the HCM's XFF rules (Envoy's
 * "downstream remote address"); also tells whether the request is internal. */
uint32_t http_client_addr(const struct arn_cfg_hcm *h, const struct arn_h1_msg *m, uint32_t raddr,
			  bool *internal);

/** May @p h's http_client_addr differ from the peer? Envoy's connection
 * manager sets the stream's remote address (the access log's
 * %DOWNSTREAM_REMOTE_ADDRESS%, ext_authz's source) to the address
 * mutateRequestHeaders found: from X-Forwarded-For without
 * use_remote_address (its default XFF detection) or with trusted hops,
 * else from a detection extension. */
static inline bool http_client_from_headers(const struct arn_cfg_hcm *h)
{
	return !h->use_remote_address || h->xff_num_trusted_hops || h->n_ip_detect;
}

/** Envoy's mutateRequestHeaders' removals, on the head itself before any
 * filter, route or log reads it (so that none sees what the upstream
 * will not): a client's x-envoy-internal always; unless the request is
 * internal (http_client_addr), the rest of cleanInternalHeaders' list, the
 * decorator and downstream service headers too at the edge; its
 * x-forwarded-client-cert per forward_client_cert_details (SANITIZE, or
 * any mode but ALWAYS_FORWARD_ONLY on a connection whose client
 * presented no certificate, @p mtls false). For a head with
 * ARN_H1_F_PROXY_FIELDS (cleared here). @return the fields taken out. */
unsigned http_req_sanitize(const struct arn_cfg_hcm *h, struct arn_h1_msg *m, uint32_t raddr,
			   bool mtls);

/** Response edits: server header, x-envoy-upstream-service-time (if
 * @p service_ms >= 0), response_headers_to_add / _remove at every level. */
struct http_subst;
struct http_resp_ctx {
	const struct arn_cfg_hcm *hcm;
	const struct arn_cfg_route_table *rt;
	const struct arn_cfg_vhost *vhost;
	const struct arn_cfg_route *route;
	const struct arn_cfg_weighted_cluster *wc;
	int64_t service_ms;
	uint32_t upstream_addr;
	uint16_t upstream_port;
	uint32_t raddr;
	uint16_t rport;
	/* The substitutions' context for response_headers_to_add, made only
	 * when a level has an edit (the usual response has none, and pays no
	 * store for it): subst_fill(subst_arg, out) (http_stream_subst: the
	 * stream's addresses and request), or NULL: the four fields above */
	void (*subst_fill)(const void *arg, struct http_subst *out);
	const void *subst_arg;
	/* a local reply's: the Server header is the reply's own, not an edit */
	bool no_server;
	/* @p service_ms in decimal (service_len bytes) where the caller keeps
	 * it for as long as the edits are read, or NULL: formatted into text.
	 * The stream keeps it for its access log (st->service_time): one
	 * formatting a response, not two. */
	const char *service_txt;
	uint32_t service_len;
	char *text;
	uint32_t text_cap, text_len;
};
int http_resp_edits(struct http_resp_ctx *x, const struct arn_h1_msg *m, struct arn_h1_edit *e,
		    unsigned cap);

/**
 * The Location of a redirect route for a request to @p authority @p path
 * (scheme http or https per @p tls) into @p buf; @p match_prefix is the
 * route's prefix match (for prefix_rewrite), may be NULL.
 * @return its length, or -ENOSPC.
 */
int http_redirect_location(const struct arn_cfg_redirect *r, bool tls, const char *authority,
			   size_t alen, const char *path, size_t plen, const char *match_prefix,
			   size_t mplen, char *buf, size_t cap);

/**
 * Expand Envoy's header value substitutions (%DOWNSTREAM_REMOTE_ADDRESS%,
 * %REQ(x)%, %PROTOCOL%, ...) in @p v into @p out.
 * @return the length, or -ENOSPC.
 */
struct http_subst {
	uint32_t raddr, laddr, upstream_addr;
	uint16_t rport, lport, upstream_port;
	/* DOWNSTREAM_REMOTE_ADDRESS: the client the connection manager found
	 * (http_client_addr; port 0 when it is not the peer); 0: the peer
	 * (raddr, rport), or with @p hcm the client that manager takes from
	 * @p req (http_client_from_headers), found when an operator asks:
	 * Envoy's formatters read the stream's remote address, which
	 * mutateRequestHeaders set before any filter ran */
	uint32_t caddr;
	const struct arn_cfg_hcm *hcm;
	/* DOWNSTREAM_DIRECT_REMOTE_*: the TCP peer when a PROXY header gave
	 * raddr; 0: raddr (rport) */
	uint32_t draddr;
	uint16_t drport;
	/* the request's head: %REQ()% in both directions (Envoy's formatters
	 * read the request headers for response headers too), and %PROTOCOL%
	 * from its version when @p protocol is NULL */
	const struct arn_h1_msg *req;
	const char *protocol;
};
int http_subst(const struct http_subst *s, const char *v, size_t n, char *out, size_t cap);

/**
 * A local reply's head and body into @p w: Envoy's shape (content-length,
 * content-type text/plain when there is a body, date, server), plus
 * @p extra edits (location, response_headers_to_add) and "connection:
 * close" when @p close. @p minor: the client's HTTP version.
 */
int http_local_reply_write(struct arn_h1_wbuf *w, unsigned status, const char *body, size_t blen,
			   const char *server, const char *date, size_t dlen,
			   const struct arn_h1_edit *extra, unsigned n_extra, bool close,
			   bool head);

/* Envoy's local reply texts. */
#define HTTP_BODY_UH "no healthy upstream"
#define HTTP_BODY_UT "upstream request timeout"
#define HTTP_BODY_RESET "upstream connect error or disconnect/reset before headers. reset reason: "
#define HTTP_BODY_SI "stream timeout"

/* ---- load balancing (http_lb.c), unit tested ---------------------------- */

struct http_lb_in {
	const struct arn_cfg_cluster *cluster;
	const struct arn_cfg_endpoints *eps;
	uint64_t *rr;  /* the worker's round-robin counter for this cluster */
	uint64_t rand; /* a fresh random number */
	bool has_hash; /* RING_HASH / MAGLEV: a hash policy produced a key */
	/* a retry's re-pick under previous_hosts (0: the first pick): RING_HASH
	 * steps that many points on, MAGLEV mutates the hash, as Envoy's
	 * chooseHost(hash, attempt) */
	uint32_t attempt;
	uint64_t hash;
	/* LEAST_REQUEST: active requests to an endpoint (NULL: all 0) */
	uint32_t (*active)(void *ctx, const struct arn_cfg_endpoint *ep);
	void *ctx;
	/* A cluster with active health checks: its hosts (http_rt_hosts),
	 * whose hc_flags exclude an endpoint that EDS calls healthy. NULL
	 * (every other cluster): EDS health alone, and no lookup. */
	struct http_host *const *hosts;
	size_t n_hosts;
	/* A cluster with outlier_detection (hosts set too): its ejected
	 * hosts are not healthy; one whose ejection ended at now_ms is
	 * brought back and counted in *unejected (NULL: not counted). */
	struct http_cluster_rt *od_crt;
	uint64_t now_ms;
	uint32_t *unejected;
	/* The worker's cached candidates of this cluster (NULL: each pick
	 * walks the endpoints), rebuilt when eps, cluster or epoch (the
	 * cluster's health_epoch, read with acquire before the pick) differ
	 * from what it was built for, or an ejection it left out ended by
	 * now_ms. */
	struct http_lb_cache *cache;
	uint32_t epoch;
	/* The hosts of eps' endpoints in their order (priority, locality,
	 * index), as the snapshot resolved them: an entry whose address and
	 * port are not its endpoint's (another generation's) is looked up
	 * in hosts instead. NULL, 0: every one is looked up. */
	struct http_host *const *ep_hosts;
	size_t n_ep_hosts;
};

/* A run of a worker's cached candidates: one priority's hosts of one kind
 * (healthy, degraded, every host in panic) and its share of the load. */
#define HTTP_LB_SEGS 4
struct http_lb_seg {
	uint64_t off, n; /* cand[off .. off + n) */
	uint64_t total_weight, stride;
	uint8_t upto; /* the load line's end of its share (1-100) */
	bool equal, panic;
	uint8_t prio, mode; /* its priority and kind (walk: the pick lists it) */
};

/*
 * A worker's candidates of one cluster, as Envoy precomputes its
 * per-priority healthy host sets when membership or health changes: a
 * pick takes one from the list (O(1), O(log n) with unequal weights)
 * rather than walking every endpoint and its host's flags. Written only
 * by its worker (http_lb_pick, when its key moved); the memory is the
 * snapshot entry's (http_rt.c, http_rt_lb_view), one per worker.
 */
struct http_lb_cache {
	const struct arn_cfg_endpoints *eps; /* built for; NULL: not built */
	const struct arn_cfg_cluster *cluster;
	uint32_t epoch;
	bool panic, equal;
	uint64_t until_ms; /* the first end of an ejection it left out */
	uint64_t n, total_weight, stride;
	size_t cap;			      /* endpoints it has room for */
	const struct arn_cfg_endpoint **cand; /* cap: the candidates in order */
	uint64_t *cum;			      /* cap: their cumulative weights */
	uint64_t builds;		      /* times built (tests count them) */
	uint64_t tab_builds;		      /* tables built (tests count them) */
	/* RING_HASH, MAGLEV (http_lb.c): the table a hashed pick reads,
	 * built with the list from its candidates: the ring's points sorted
	 * by hash, or the Maglev table of candidate indexes. The memory is
	 * the snapshot entry's, sized for its cluster and endpoints
	 * (http_lb_table_entries). */
	uint8_t tab_kind;	    /* HTTP_LB_TAB_*: what is built */
	size_t tab_cap;		    /* entries there is room for */
	size_t tab_n;		    /* entries built */
	struct http_lb_point *ring; /* tab_cap (RING_HASH) */
	uint32_t *mag;		    /* tab_cap (MAGLEV) */
	uint64_t *scratch;	    /* MAGLEV: 4 x cap, a build's state */
	/* locality_weighted_lb_config (http_lb.c): the chosen priority's
	 * localities with an effective weight, each a run of cand (its
	 * cumulative weights from 0), and Envoy's EDF schedule over them;
	 * n_loc 0: none built (panic, no weight, not asked): cand is one
	 * list. The memory is the snapshot entry's, loc_cap = the most
	 * localities a priority of its endpoints has. */
	size_t loc_cap;
	size_t n_loc;
	bool loc_short;		 /* a priority has more localities than loc_cap */
	bool lw;		 /* n_loc or loc_short: the pick's one test */
	struct http_lb_loc *loc; /* loc_cap */
	uint32_t *loc_heap;	 /* loc_cap: the EDF queue, loc indexes */
	uint64_t *loc_tmp;	 /* 2 x loc_cap: a build's state */
	double loc_now;		 /* the EDF's current time */
	uint64_t loc_order;	 /* the EDF's next order offset */
	/* RING_HASH, MAGLEV with locality weighting: the candidates'
	 * normalized weights (cap; NULL without the option), in use when
	 * nw_on */
	double *nw;
	bool nw_on;
	/* Envoy's priority loads (http_lb.c prio_loads) when they share the
	 * traffic among several runs (a priority's healthy, degraded or, in
	 * panic, every host): each a run of cand (its cumulative weights
	 * from 0), the pick choosing one by the load line; n_seg 0: one
	 * list. walk: more runs than seg holds (n_seg 0: each pick walks
	 * the endpoints), or locality weighting over them (n_seg: seg
	 * keeps the runs, not listed: a pick chooses one and walks its
	 * priority's localities). */
	uint8_t n_seg;
	bool walk;
	struct http_lb_seg seg[HTTP_LB_SEGS];
} __attribute__((aligned(64)));

/* A locality of a worker's cached candidates (locality weighting). */
struct http_lb_loc {
	double weight;	 /* effective: Envoy's effectiveLocalityWeight */
	double deadline; /* its next EDF deadline */
	uint64_t order;	 /* ties: FIFO, Envoy's order_offset_ */
	uint64_t off, n; /* its candidates: cand[off .. off + n) */
	uint64_t total_weight, stride;
	uint64_t rr; /* ROUND_ROBIN's counter within the locality */
	bool equal;
};

/* A point of a RING_HASH ring: its hash, and the candidate it is of. */
struct http_lb_point {
	uint64_t hash;
	uint32_t idx;
};

enum { HTTP_LB_TAB_NONE = 0, HTTP_LB_TAB_RING, HTTP_LB_TAB_MAGLEV };
/* A worker's RING_HASH ring holds at most this many points (65,536 x 16
 * bytes: 1 MiB), or one per endpoint when a cluster has more endpoints;
 * Envoy's maximum_ring_size (8M by default) would cost 128 MiB per
 * cluster per worker. A MAGLEV table at most 65,537 entries (Envoy's
 * default table_size; 256 KiB). A cluster whose configuration asks for
 * more is clipped to them (cluster.<c>.lb_hash_table_clipped). */
#define HTTP_LB_RING_MAX 65536
#define HTTP_LB_MAGLEV_MAX 65537
/* The table entries a worker's cache needs for cluster @p cl over
 * endpoints @p eps (0: its policy has none): the ring's points for all
 * of them (a pick's candidates are some of them), or the Maglev table's
 * size. *@p clipped: the limits above cut what @p cl asks for. */
size_t http_lb_table_entries(const struct arn_cfg_cluster *cl, const struct arn_cfg_endpoints *eps,
			     bool *clipped);

struct http_lb_out {
	const struct arn_cfg_endpoint *ep;
	bool panic; /* balanced over every host: too few healthy */
};

/* The one host of a cluster of one healthy host (a STATIC cluster's usual
 * shape), or NULL: every policy's pick, and no panic (1 of 1 is 100%).
 * Inline: the router takes it without building a balancer's input. */
static inline const struct arn_cfg_endpoint *http_lb_one(const struct arn_cfg_endpoints *eps,
							 uint32_t panic_pct)
{
	if (!eps || eps->n_endpoints != 1 || eps->n_priorities != 1 ||
	    eps->priorities[0].n_localities != 1 ||
	    eps->priorities[0].localities[0].n_endpoints != 1 || panic_pct > 10000)
		return NULL;
	const struct arn_cfg_endpoint *ep = &eps->priorities[0].localities[0].endpoints[0];
	return ep->health == ARN_CFG_HEALTH_UNKNOWN || ep->health == ARN_CFG_HEALTH_HEALTHY ? ep
											    : NULL;
}

/* Does policy @p lb advance the worker's round-robin counter on a pick? */
static inline bool http_lb_counts(uint8_t lb)
{
	return lb != ARN_CFG_LB_RANDOM && lb != ARN_CFG_LB_LEAST_REQUEST &&
	       lb != ARN_CFG_LB_RING_HASH && lb != ARN_CFG_LB_MAGLEV;
}

/**
 * Pick an endpoint: the lowest priority with healthy hosts (HEALTHY or
 * UNKNOWN, and not failed by active health checks when in->hosts is set;
 * DEGRADED only when none is), Envoy's panic mode when the healthy
 * share is under healthy_panic_threshold, then the cluster's lb_policy
 * (ROUND_ROBIN honouring weights, LEAST_REQUEST power of two choices,
 * RANDOM, RING_HASH as a ring of hashed points, MAGLEV as a Maglev
 * table, both from the worker's cache: docs/http.md); with the cluster's
 * locality_weighted, a locality of the priority first (Envoy's EDF over
 * effective weights, the worker's cache), the policy within it.
 * @return 0, or -ENOENT: no host (503 UH).
 */
int http_lb_pick(const struct http_lb_in *in, struct http_lb_out *out);

/**
 * Envoy's selectOverrideHost: the endpoint of in->eps at @p addr:@p port
 * (a binary search of @p sorted, eps' endpoints sorted by address and
 * port, http_lb_view.ep_sorted; NULL: a walk of eps) when its health,
 * as active checks (in->hosts) and outlier detection (in->od_crt) leave
 * it, is in the cluster's override_host_status (Envoy's default: UNKNOWN,
 * HEALTHY, DEGRADED), into *@p out. The round-robin counter is not moved.
 * @return 0; -ENOENT: no such endpoint; -EHOSTDOWN: not in those states.
 */
int http_lb_override(const struct http_lb_in *in, const struct arn_cfg_endpoint *const *sorted,
		     size_t n_sorted, uint32_t addr, uint16_t port, struct http_lb_out *out);
/** Value of cookie @p name in the Cookie headers of @p m (the first;
 * quotes dropped, as Envoy's parseCookieValue). */
bool http_lb_cookie_find(const struct arn_h1_msg *m, const char *name, size_t nlen,
			 struct arn_h1_slice *out);

/* The downstream connection a request came on, as the hash policies read
 * it (connection_properties: raddr; a generated cookie: all four). */
struct http_lb_peer {
	uint32_t raddr, laddr;
	uint16_t rport, lport;
};

/** Hash of the request per the route's hash_policy (Envoy's order; a
 * terminal policy that matched stops). A cookie policy with a ttl whose
 * cookie the request lacks (or has empty) hashes on the value
 * http_lb_cookie_value gives for @p p, as Envoy's CookieHashMethod does, and
 * sets its index's bit in *@p gen (bits of other policies are left alone;
 * the caller zeroes it): the response then carries its Set-Cookie
 * (http_set_cookie_edits). @p p and @p gen are the caller's.
 * @return true when a policy applied. */
bool http_lb_hash(const struct arn_cfg_route_action *a, const struct arn_h1_msg *m,
		  const struct http_lb_peer *p, uint64_t *out, uint32_t *gen);

/** Envoy's source_ip hash of remote address @p raddr (host order), for the
 * route's hash policy and tcp_proxy's: XXH64 of "a.b.c.d", seed 0. */
uint64_t http_lb_source_ip_hash(uint32_t raddr);

/** The value of a cookie generated for connection @p p: 16 lower-case hex
 * digits of XXH64 of its remote and local "a.b.c.d:port" (Envoy's
 * generateCookie), the same for every stream of
 * a connection so racing streams get one cookie. Not NUL-terminated. */
void http_lb_cookie_value(const struct http_lb_peer *p, char out[16]);

/** Edits adding a Set-Cookie for each policy of @p a whose bit is set in
 * @p gen, Envoy's makeSetCookieValue: name="value"; Max-Age=ttl (not for a
 * ttl of 0: a session cookie); Path=path (when given); HttpOnly. The lines
 * go into @p text (@p *text_len bytes used of @p text_cap, advanced), which
 * the edits point into: the caller keeps it until the head is encoded.
 * @return the number of edits written to @p e (at most @p cap), or -ENOSPC
 * (too many edits or no room in the text). */
int http_set_cookie_edits(const struct arn_cfg_route_action *a, uint32_t gen,
			  const struct http_lb_peer *p, char *text, uint32_t text_cap,
			  uint32_t *text_len, struct arn_h1_edit *e, unsigned cap);

#endif
