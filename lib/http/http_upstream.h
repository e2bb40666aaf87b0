/*
 * Upstream connections and their per-worker pools, one pool per (cluster
 * name, endpoint address): HTTP/1 connections (struct http_h1_peer) with
 * keep-alive reuse, the cluster's circuit breakers and idle and connect
 * timeouts.
 *
 * Ownership: upstream connections belong to the worker's blocks (w->ups)
 * and, while open, to their pool; a stream borrows one from
 * http_up_acquire until it gives it back (http_up_release) or drops it
 * (http_up_detach), or the connection fails (on_failed: it is gone from
 * the stream then). A pool lives in the worker's table while it has
 * connections, waiting streams or counted requests.
 *
 * Calls: the stream's owner calls down into these; what happens to the
 * connection reaches the stream only through its struct
 * http_upstream_ops, never by name.
 */
#ifndef ARN_HTTP_UPSTREAM_H
#define ARN_HTTP_UPSTREAM_H

#include "arn_tls.h"
#include "http_codec_h1.h"
#include "http_stream.h"
#include "http_tls.h"
#include "http_upp.h"

/*
 * What an upstream connection tells the stream it serves, or that waits in
 * its pool's queue, as arn_tcp_ops tells a connection's user: given to
 * http_up_acquire and kept with the stream. Every member runs from one of
 * lib/tcp's callbacks, except that on_ready and on_failed may also come
 * from inside another stream's http_up_release (a queued stream gets the
 * connection that stream gave back, or fails to get one).
 */
struct http_upstream_ops {
	/* Connected (or bound to a connection that is): send the request. */
	void (*on_ready)(struct http_stream *st);
	/* Response bytes, or the upstream's end of input, arrived. */
	void (*on_data)(struct http_stream *st);
	/* The connection's send buffer has room again. */
	void (*on_writable)(struct http_stream *st);
	/* The connection is gone, or none could be opened for a queued
	 * stream: the stream holds it no more (st->up is NULL). @p reason as
	 * arn_tcp_ops.on_close; @p connected: it had been established (TLS:
	 * its handshake done); @p timed_out: connect_timeout ran out; @p why:
	 * the transport's failure (a TLS handshake's, Envoy's
	 * %UPSTREAM_TRANSPORT_FAILURE_REASON%), or NULL, valid for the call. */
	void (*on_failed)(struct http_stream *st, int reason, bool connected, bool timed_out,
			  const char *why);
};

enum http_up_state {
	HTTP_UP_CONNECTING = 0,
	HTTP_UP_IDLE,
	HTTP_UP_BUSY,
	HTTP_UP_CLOSED,
};

/* An upstream connection, owned by its pool: HTTP/1 to the endpoint, in
 * plain text or over TLS (the cluster's UpstreamTlsContext: the handshake
 * runs once TCP is connected, before the connection serves a stream). */
struct http_upconn {
	struct http_upconn *next, *prev; /* pool's idle list, or the free list */
	struct http_worker *w;
	struct http_pool *pool;
	uint8_t state;	/* enum http_up_state */
	bool connected; /* usable: TCP connected and, with TLS, the handshake done */
	bool connect_timed_out;
	bool alpn_auto;	  /* auto_config over TLS: the handshake's ALPN picks the codec */
	bool want_tls;	  /* opened for TLS (its endpoint's transport socket: :scheme https) */
	uint32_t idle_ms; /* the cluster's idle_timeout when it was last used */
	uint64_t idle_since_ms; /* HTTP/1: went idle (w->now_ms), for up_idle_timeout */
	uint32_t connect_ms;	/* the cluster's connect_timeout when it was opened */
	struct http_stream *st; /* the stream it serves, or NULL */
	uint32_t n_req;
	uint64_t open_tsc;
	struct http_h1_peer h1;	 /* its transport and codec (h1.tc: NULL once closed) */
	struct http_timer timer; /* connect timeout (TLS: handshake included), then idle */
	struct http_tls_tp tls;	 /* the TLS transport (tls.on), h1.tp's when on */
	/* HTTP/2 (http_upstream_h2.h): a connection block that speaks it
	 * keeps its transport in h1 (tc, tp, in, out; not its parser) and its
	 * session in h2, and is on its pool's h2 list (next, prev); each of
	 * its streams is a block of its own (xs set, h1 unused) that a stream
	 * borrows as it would an HTTP/1 connection, its peer being h2peer */
	struct http_uph2 *h2;
	struct http_uph2s *xs;
	struct http_peer h2peer;
	/* envoy.transport_sockets.upstream_proxy_protocol: the header's
	 * version (0: none) and the downstream addresses it said (pp_local:
	 * none, a LOCAL header); only requests from that downstream reuse
	 * it, as Envoy's pool key */
	uint8_t pp_version;
	bool pp_local;
	struct arn_pp_addrs pp;
};

/* The upstream connection's peer, as a stream's codec calls see it. */
static inline struct http_peer *http_up_peer(struct http_upconn *u)
{
	return u->xs ? &u->h2peer : &u->h1.peer;
}

bool http_uph2_alive(const struct http_upconn *s);

/* Is its transport still there (lib/tcp has not closed it)? */
static inline bool http_up_alive(const struct http_upconn *u)
{
	return u->xs ? http_uph2_alive(u) : u->h1.tc != NULL;
}

/* Connections of one worker to one (cluster, endpoint). */
struct http_pool {
	bool used;
	bool draining; /* endpoint left its cluster: no new requests */
	uint64_t key;
	char cluster[128];
	size_t cluster_len;
	uint32_t addr;
	uint16_t port;
	struct http_cluster_rt *crt;
	struct http_host *host;	  /* per-host counters (referenced), or NULL */
	struct http_upconn *idle; /* idle, connected */
	struct http_upconn *h2;	  /* HTTP/2 connections (open, connecting or going away) */
	uint32_t n_idle, n_conns, n_active;
	uint32_t n_counted; /* streams counted in host->rq_active: keep the pool */
	struct http_stream *pend_head, *pend_tail;
	/* TLS session resumption, per host and worker as Envoy's
	 * max_session_keys 1: the last session the host gave, offered by the
	 * next connection while the cluster's context stays the same one
	 * (sess_ctx, referenced; a new context forgets it, so a session never
	 * skips a validation it was not made under) */
	struct arn_tls_session_slot sess;
	struct arn_tls_ctx *sess_ctx;
};

/* http_upstream.c */
extern const struct arn_tcp_ops http_up_ops;
/* http_pool_get's every case but the hint's (the lookup, a new pool). */
struct http_pool *http_pool_get_slow(struct http_worker *w, const struct arn_cfg_ref *cluster,
				     struct http_cluster_rt *crt, uint32_t addr, uint16_t port,
				     struct http_pool **hint);
/* The pool of (@p cluster, @p addr, @p port), made if there is none.
 * @p hint (or NULL): the caller's last pool, tried first and set to the
 * answer, so that a connection's requests to one host skip the lookup.
 * The hint's test inline: a keep-alive connection's requests nearly all
 * end there (bench_hcm: the call's frame, about 20 instructions). */
static inline struct http_pool *http_pool_get(struct http_worker *w,
					      const struct arn_cfg_ref *cluster,
					      struct http_cluster_rt *crt, uint32_t addr,
					      uint16_t port, struct http_pool **hint)
{
	/* its cluster by the runtime object: one object per name while
	 * referenced (the pool holds one), so the same object is the same
	 * name and the bytes need no compare (bench_hcm: ~25 instructions) */
	struct http_pool *p = hint ? *hint : NULL;
	if (p && crt && p->crt == crt && p->used && p->addr == addr && p->port == port && p->host)
		return p;
	return http_pool_get_slow(w, cluster, crt, addr, port, hint);
}
struct http_pool *http_pool_find(struct http_worker *w, const char *cluster, size_t len,
				 uint32_t addr, uint16_t port);
/* Give @p st a connection of @p pool: an idle one, a new one, or a place in
 * the queue. @return 0 (bound or queued), -EBUSY (circuit breaker: 503 UO),
 * or another negative errno (could not open: 503 UF). */
int http_up_acquire(struct http_worker *w, struct http_pool *pool, struct http_stream *st,
		    uint32_t laddr, const struct http_upstream_ops *ops);
/* The stream is done with its connection: reuse it (@p reusable, and the
 * connection is between messages, not draining, under
 * max_requests_per_connection) or close it. A stream waiting in the pool
 * may get it at once (its on_ready runs inside this call). */
void http_up_release(struct http_upconn *up, bool reusable);
/* Has the upstream sent a byte since its last complete response (in TCP's
 * queue, our input, or a response begun)? A FIN alone is not a byte, nor,
 * over TLS, records that carry no plaintext yet (close_notify). */
bool http_up_heard(const struct http_upconn *u);

/* Abort the stream's connection mid-exchange (never reused), or take the
 * stream out of its pool's queue. No callback follows for the stream. */
void http_up_detach(struct http_stream *st);
/* A new generation: pools whose endpoint left its cluster drain (idle
 * connections close, busy ones finish their request). */
void http_pools_sweep(struct http_worker *w, const struct arn_cfg_gen *g);
/* Retire a draining pool once nothing uses it (its host reference goes). */
void http_pool_maybe_retire(struct http_worker *w, struct http_pool *p);
/* The TLS failure of @p u (Envoy's %UPSTREAM_TRANSPORT_FAILURE_REASON%):
 * its handshake's, or a TLS alert's after it, into @p buf. @return its
 * length, 0 when its transport did not fail. */
size_t http_up_failure_reason(const struct http_upconn *u, char *buf, size_t len);
/* HTTP/2 (http_upstream.c's part): stream block @p s of @p conn took a
 * place; bind it to @p st. */
void http_up_bind(struct http_upconn *s, struct http_stream *st);
/* Worker shutdown: reset every upstream connection, no callbacks. */
void http_pools_close_all(struct http_worker *w);

#endif
