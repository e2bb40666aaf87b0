/*
 * The HTTP proxy's per-worker state and the services every part of it uses
 * on the worker: the clock, random numbers, the Date value, mbufs, the
 * timer wheel and the pool of large head scratch buffers.
 *
 * Ownership: http_module.c allocates one struct http_worker per worker
 * lcore (on the worker's NUMA socket, cache aligned) in lib/tcp's
 * worker_init and frees it in worker_fini; lib/tcp keeps the pointer for
 * the module (arn_tcp_app_state) and listeners hand it to accepted
 * connections as their listener user. Everything hanging off it
 * (connections, streams, upstream connections, pools, timers) belongs to
 * that worker alone: no locks, and nothing is allocated after start but
 * mbufs.
 */
#ifndef ARN_HTTP_WORKER_H
#define ARN_HTTP_WORKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arn_access_log.h"
#include "arn_config_model.h"
#include "arn_h1.h"
#include "arn_l4.h"
#include "arn_tls.h"

struct http_cx_adm;

struct rte_mbuf;
struct arn_lcore;
struct arn_tcp_listener;
struct arn_config_store;
struct http_conn;
struct http_h1_conn;
struct http_upconn;
struct http_res;
struct http_pool;
struct http_tcpp;
struct http_mcp_worker;
struct http_hc_worker;

/* The most header lines a message may have: the size of every header
 * array the proxy keeps for one (a request's, a response's, the route
 * matcher's, an access log record's). */
#define HTTP_MAX_HDRS 128
_Static_assert(ARN_CFG_MAX_HEADERS_COUNT < HTTP_MAX_HDRS,
	       "every max_headers_count the configuration takes is honoured");

/* ---- timers ----------------------------------------------------------------------- */

struct http_worker;
struct http_timer;
typedef void (*http_timer_fn)(struct http_timer *t);

/*
 * A timer, embedded in its owner (a connection, a stream, a request); the
 * owner sets fn once and finds itself from @p t in it (offsetof). fn is
 * called from the worker's poll (http_timers_run), never from inside
 * http_timer_arm; a timer is not armed any more when fn runs, and fn may
 * arm it (or any other) again.
 */
struct http_timer {
	struct http_timer *next, *prev;
	uint64_t due_ms;
	http_timer_fn fn;
	bool armed;
};

/** Arm @p t to fire @p delay_ms (at least 1) from the worker's clock; an
 * armed timer is moved. */
void http_timer_arm(struct http_worker *w, struct http_timer *t, uint64_t delay_ms);
/** Disarm @p t (nothing if it is not armed). */
void http_timer_cancel(struct http_timer *t);
/** Empty the wheel (worker start). */
void http_timers_init(struct http_worker *w);
/** Fire every timer due by w->now_ms. */
void http_timers_run(struct http_worker *w);

/* ---- the worker ------------------------------------------------------------------- */

#define HTTP_LISTENERS_MAX 64
/* A listener this worker listens on (it follows the configuration). */
struct http_wlistener {
	bool used, seen;
	uint32_t addr;
	uint16_t port;
	struct arn_tcp_listener *tl;
	/* pinned: the version of the listener the worker last saw here; a
	 * different one in a new generation starts the drain of this one */
	const struct arn_cfg_listener *l;
};

/*
 * A listener version replaced (or removed) by a newer generation, whose
 * connections drain as Envoy's drain manager makes them: each response
 * closes its connection with a probability rising from 0 to 1 between
 * start_ms (when this worker first saw the change) and end_ms
 * (--drain-time-s later; at once with --drain-strategy immediate), and at
 * end_ms the idle ones are closed. Connections whose filter chain the new
 * version kept (in-place filter chain update) stay open.
 */
struct http_drain {
	const struct arn_cfg_listener *l; /* pinned; NULL: a free slot */
	uint64_t start_ms, end_ms;
	/* in listener_manager.total_*_draining (worker 0 counts them) */
	uint32_t n_chains;
	bool whole;
};
#define HTTP_DRAINS_MAX 64

#define HTTP_WHEEL 4096 /* 1 ms slots */
#define HTTP_POOLS 4096 /* (cluster, endpoint) pools per worker by default (pools_cap) */
#define HTTP_LB_SLOTS 1024

/* Per-worker load balancer state, by cluster name. */
struct http_lb_state {
	uint64_t key;
	uint64_t rr;
};

struct http_worker {
	struct arn_lcore *lc;
	unsigned idx;
	unsigned slot; /* ARN_STATS_SLOT_WORKER(idx) */
	struct arn_config_store *store;
	/* the store's generation slot (arn_config_gen_slot; NULL without a
	 * store): arn_config_gen(store) read inline, without a call */
	struct arn_cfg_gen *const *gen_slot;
	uint64_t hz, tsc_per_ms, tsc_per_us, now_ms;
	uint64_t next_ms_tsc; /* the TSC at which now_ms next ticks */
	/* the id of the generation last seen; UINT64_MAX: none yet */
	uint64_t gen_id;
	/* the circuit breaker's count of cluster rq_others_crt's requests on
	 * the other workers, as summed at rq_others_ms (http_router_filter.c) */
	const void *rq_others_crt;
	uint64_t rq_others_ms;
	int64_t rq_others;
	/* connections that keep pins between their streams (http_stream.h) */
	struct http_conn *kept_head;
	/* pins and references taken for streams (not borrowed from their
	 * connection's kept ones): what a test reads */
	uint64_t pins_taken;
	uint64_t rng[2];
	uint64_t next_conn_id;
	uint32_t rb_segs; /* mbufs holding request bodies kept for retries */
	/* the bound on rb_segs: 0 is HTTP_RB_WORKER_SEGS (a test lowers it) */
	uint32_t rb_segs_max;
	/* The input segment of the last HTTP/1 body event decoded and where
	 * its bytes begin, so that the other side's encoder can queue them by
	 * reference (http_codec_h1.c): cleared at every HTTP/1 decode, so it
	 * never outlives the event's own "valid until the next decode". */
	struct rte_mbuf *body_seg;
	const char *body_at;

	struct http_wlistener lsn[HTTP_LISTENERS_MAX];
	struct http_drain drains[HTTP_DRAINS_MAX];
	uint32_t n_drains;	    /* slots in use */
	uint64_t drain_ms;	    /* --drain-time-s */
	bool drain_immediate;	    /* --drain-strategy immediate */
	struct arn_stats_scope *lm; /* listener_manager.* (the process's) */

	struct http_timer wheel[HTTP_WHEEL]; /* list heads */
	uint64_t wheel_ms;

	struct http_h1_conn *conns; /* the connection blocks (http_conn_blk.h) */
	struct http_conn *conn_free;
	uint32_t n_conns;
	struct http_upconn *ups, *up_free;
	uint32_t n_ups;
	/* tcp_proxy sessions (http_tcpp.h): as many as upstream connections,
	 * one each */
	struct http_tcpp *tcpps, *tcpp_free;
	uint32_t n_tcpps;
	struct http_res *res_mem, *res_free;
	/* connections whose next request (its head complete in the input)
	 * waits for a free http_res, oldest first; woken by the poll, and
	 * none is served before those ahead of it */
	struct http_conn *res_wait_head, *res_wait_tail;
	char *big_mem;	 /* n_big buffers of HTTP_BIG_SCRATCH bytes */
	char **big_free; /* free list through each buffer's first bytes */
	uint32_t n_res;
	uint32_t n_big;
	struct http_trl *trl_mem, *trl_free; /* n_trl trailer arrays */
	uint32_t n_trl;

	/* TLS: the handshake budget and deferred handshakes (lib/tls), and
	 * the ssl.* counters of this worker's downstream TLS connections */
	struct arn_tls_worker tls;
	struct arn_tls_stats tls_stats;

	struct http_pool *pools; /* [pools_cap], open addressing */
	uint32_t pools_cap;	 /* a power of 2 */
	uint32_t n_pools;	 /* in use */
	struct http_lb_state lb[HTTP_LB_SLOTS];

	int64_t date_sec;
	char date[40]; /* "Sun, 06 Nov 1994 08:49:37 GMT" */
	uint32_t date_len;

	/* Scratch for one call at a time on this worker (no thread-locals):
	 * a request's headers as the route matcher reads them, and the
	 * header lists of an access log record. */
	struct arn_cfg_header route_hdrs[HTTP_MAX_HDRS];
	struct arn_access_header log_req[HTTP_MAX_HDRS + 2];
	struct arn_access_header log_resp[HTTP_MAX_HDRS + 1];
	struct arn_access_header log_trl[HTTP_MAX_HDRS]; /* the response's trailers */

	/* the MCP gateway filter's sessions and request contexts (http_mcp.c) */
	struct http_mcp_worker *mcp;
	/* the active health checker (http_hc.c): worker 0's, NULL elsewhere */
	struct http_hc_worker *hc;

	/* request mirroring's slots (http_shadow.c): HTTP_SHADOW_MAX */
	struct http_shadow *shadows, *shadow_free;

	/* the admission of the connection dc_accept is accepting, for the
	 * block that keeps it (http_cx_take); NULL outside dc_accept */
	struct http_cx_adm *cx_pending;
	/* the addresses a PROXY header gave the connection being opened on
	 * a tcp_proxy chain (http_tcpp_open); NULL outside, or without one */
	const struct http_dc_addrs *dc_addrs;

	/* a local reply's body written by local_reply_config's body format
	 * (http_local.c), read by the codec during the same call; last, out
	 * of the way of the fields above */
	char lr_body[ARN_CFG_LR_BODY_MAX];
	/* a custom_response policy's body_format output (http_cresp.c), read
	 * by the codec during the same call */
	char cresp_body[ARN_CFG_LR_BODY_MAX];
	/* HCM tracing's queue of finished spans and exporter (http_otel.c) */
	struct http_otel_worker *otel;
	/* the gRPC access loggers' queue of records and exporter (http_glog.c) */
	struct http_glog_worker *glog;
};

/* ---- services ------------------------------------------------------------------------ */

/** A random number (xorshift128+, per worker: balancing, ids, back-off).
 * Inline: a request draws several. */
static inline uint64_t http_rand(struct http_worker *w)
{
	uint64_t s1 = w->rng[0];
	const uint64_t s0 = w->rng[1];
	w->rng[0] = s0;
	s1 ^= s1 << 23;
	w->rng[1] = s1 ^ s0 ^ (s1 >> 17) ^ (s0 >> 26);
	return w->rng[1] + s0;
}
/**
 * The worker's round-robin position for the cluster whose name hashes to
 * @p key (open addressing in w->lb; the router, sub-requests and tcp_proxy
 * share it, so a cluster is balanced alike by all). NULL when the table is
 * full (the balancer then starts from 0). http_lb_rr_probe: the same from
 * the probe's start.
 */
uint64_t *http_lb_rr_probe(struct http_worker *w, uint64_t key);
/* The usual find inline, the cluster's slot at its first probe (every
 * attempt's start asks); the probe and the insert out of line. */
static inline uint64_t *http_lb_rr(struct http_worker *w, uint64_t key)
{
	struct http_lb_state *s = &w->lb[(key | 1) & (HTTP_LB_SLOTS - 1)];
	if (s->key == (key | 1))
		return &s->rr;
	return http_lb_rr_probe(w, key);
}
/** The Date header's value for now, formatted once a second. */
const char *http_date(struct http_worker *w, uint32_t *len);
/** The worker's TSC as lib/net read it for this loop iteration. Inline:
 * a proxied request asks about seven times. */
static inline uint64_t http_tsc(struct http_worker *w)
{
	return arn_net_now(w->lc);
}
/** An mbuf from the worker's pool, or NULL. */
struct rte_mbuf *http_mbuf(struct http_worker *w);

/* Scratch for heads with long lines across segments: max_request_headers_kb
 * defaults to 60 KB, which must not fail for a long cookie where Envoy
 * takes it. Per worker, HTTP_BIG_SCRATCH_N of them by default (4 MB; n_big). */
#define HTTP_BIG_SCRATCH (64u * 1024)
#define HTTP_BIG_SCRATCH_N 64
/*
 * A message's trailer fields when the slots its head left in the stream's
 * header array are too few (arn_h1_msg.trailers): the trailers' budget is
 * max_headers_count of their own, as Envoy's, but most messages have no
 * trailers, and a small head leaves room for a gRPC call's, so no stream
 * keeps an array for them; it takes one from its worker's pool only when
 * its trailers outgrow that room, and gives it back at its end (HTTP/1:
 * with its request buffer, struct http_res; HTTP/2: with the stream, rc
 * holding its references to the trailers' bytes once the stream's own
 * are full). HTTP_TRL_N per worker by default (about 1.3 MB; n_trl, the
 * trailer_arrays option); none free: the trailers are refused as ones
 * over max_headers_count are (http.<prefix>.trailer_slots_exhausted).
 */
#define HTTP_TRL_N 256
struct http_trl {
	struct http_trl *next; /* the worker's free list */
	uint16_t n_rc;
	struct arn_h1_header f[HTTP_MAX_HDRS];
	void *rc[2 * HTTP_MAX_HDRS]; /* nghttp2_rcbuf *: names and values */
};
/* the details of a stream failed for want of one (decode's -ENOBUFS) */
#define HTTP_TRL_DETAILS "trailer_slots_exhausted"
/** A free trailer array (its n_rc 0), or NULL. */
static inline struct http_trl *http_trl_get(struct http_worker *w)
{
	struct http_trl *t = w->trl_free;
	if (t) {
		w->trl_free = t->next;
		t->n_rc = 0;
	}
	return t;
}
/** Give @p t back (NULL: nothing); its references are dropped already. */
static inline void http_trl_put(struct http_worker *w, struct http_trl *t)
{
	if (!t)
		return;
	t->next = w->trl_free;
	w->trl_free = t;
}

/** A free large scratch buffer (HTTP_BIG_SCRATCH bytes), or NULL. */
char *http_big_get(struct http_worker *w);
/** Give @p b back (NULL: nothing). */
void http_big_put(struct http_worker *w, char *b);

#endif
