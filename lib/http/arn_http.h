/*
 * Arion's HTTP proxy: Envoy's HTTP connection manager and router filter on
 * lib/tcp, routed by lib/config's compiled tables, with per-worker upstream
 * connection pools and load balancers (docs/http.md describes the
 * behaviour). The HTTP/1 codec underneath is arn_h1.h.
 *
 * Life cycle (app/arion/app_http.c), all on the control lcore:
 *
 *     arn_http_start(store, opts)   after the configuration store exists and
 *                                   BEFORE lib/net starts the workers: it
 *                                   registers the per-worker module with
 *                                   lib/tcp (arn_tcp_app_register)
 *     arn_http_poll()               every control loop iteration: frees what
 *                                   workers are done with (a new generation's
 *                                   statistics scopes, access loggers and
 *                                   circuit breaker counters are built while
 *                                   the store prepares it, before workers see
 *                                   it; here only when that had to wait for
 *                                   the workers to be known)
 *     arn_http_stop()               after the workers stopped
 *
 * On each worker the module listens on every active listener of the current
 * generation (and follows later generations: new listeners are opened,
 * removed ones closed, connections accepted on an updated one finish their
 * current request and close), serves HCM filter chains itself and hands
 * envoy.filters.network.echo chains to lib/tcp's echo filter.
 *
 * Configuration objects that a request uses (route table, cluster,
 * endpoints) are pinned for the request's life (arn_cfg_pin), so a new
 * generation changes new requests only.
 *
 * HTTP filters: envoy.filters.http.health_check (answers health checks
 * itself; 503 while arn_http_set_healthcheck_failed(true) holds) and the
 * router. While health checks fail every response carries
 * "connection: close".
 *
 * Statistics (registered by arn_http_start, control lcore): Envoy's
 * per-endpoint stats (cluster.<c>.endpoint.<address>.*) in /stats; the
 * per-host counters that /clusters shows are read with
 * arn_http_host_counts(), which the application hands to the admin.
 */
#ifndef ARN_HTTP_H
#define ARN_HTTP_H

#include <stdbool.h>
#include <stdint.h>

struct arn_config_store;

/** Sizes per worker; zero fields take the defaults shown. */
struct arn_http_options {
	uint32_t max_connections;	   /* downstream connection blocks: 16384 */
	uint32_t max_upstream_connections; /* upstream connection blocks: 8192 */
	uint32_t max_streams;		   /* requests in flight (header buffers): 1024 */
	/* Envoy's --drain-time-s: how long a replaced listener's connections
	 * take to drain (600 unless drain_time_set) */
	uint32_t drain_time_s;
	bool drain_time_set;
	bool drain_immediate; /* --drain-strategy immediate (default gradual) */
	/* Per-worker tables that no configuration key sizes; 0 takes the
	 * default. Each is allocated when a worker starts, most of them
	 * zeroed there so that the worker takes no page fault later: with
	 * the defaults about 7 MB a worker touched at start, and 8 MB more
	 * for the MCP sessions' backend ids. Tests ask for small ones, so
	 * that a worker (one per fuzz input) starts fast and each table's
	 * limit is reachable. */
	uint32_t large_buffers;	 /* 64 KiB scratch, long head lines and MCP bodies: 64 */
	uint32_t upstream_pools; /* (cluster, endpoint) pool slots, a power of 2: 4096 */
	uint32_t mcp_sessions;	 /* MCP gateway sessions: 1024 */
	uint32_t mcp_legs;	 /* MCP backend POSTs, GET streams, DELETEs at once: 256 */
	uint32_t mcp_detached;	 /* MCP requests without a client stream here: 128 */
	uint32_t trailer_arrays; /* trailers past the head's slots (struct http_trl): 256 */
	/* mbufs a worker's kept request bodies may hold together (the buffer
	 * filter's, ext_authz's with_request_body, retries' and mirrors'):
	 * HTTP_RB_WORKER_SEGS, 2048 (dataplane http.kept_body_mbufs) */
	uint32_t kept_body_mbufs;
	/* the bootstrap's node.id and node.locality.zone (NULL: ""), the
	 * tracing spans' node_id and zone tags; copied */
	const char *node_id, *zone;
	size_t zone_len;
	/* the bootstrap's node.cluster (NULL: ""): the gRPC access logs'
	 * cluster_name resource label; copied */
	const char *node_cluster;
};

/**
 * Register the HTTP module with lib/tcp and build the runtime objects of the
 * current generation of @p s (borrowed; must outlive arn_http_stop).
 * @p opts may be NULL. Control lcore, before workers start.
 * @return 0; -ENOSPC (lib/tcp's module table is full); -ENOMEM.
 */
int arn_http_start(struct arn_config_store *s, const struct arn_http_options *opts);

/** Control lcore housekeeping; cheap when no generation changed. */
void arn_http_poll(void);

/** Free the runtime objects; workers must have stopped. */
void arn_http_stop(void);

/**
 * Fail (or pass again) the health_check filters and drain: Envoy's
 * POST /healthcheck/fail and /healthcheck/ok. Control lcore; workers see
 * it on their next request (one relaxed load).
 */
void arn_http_set_healthcheck_failed(bool failed);

/** A listener's connection limit (Envoy's runtime key
 * envoy.resource_limits.listener.<listener>.connection_limit). */
struct arn_http_cx_limit {
	const char *listener; /* the listener's name */
	uint64_t max;	      /* open connections at most */
};

/**
 * Set the downstream connection limits, as Envoy enforces them at accept:
 * with @p has_global, at most @p global_max connections open on all
 * listeners but those with ignore_global_conn_limit (the overload
 * manager's global_downstream_max_connections), and at most max on
 * each listener of @p listeners (@p n, copied). Over one, a new
 * connection is reset at once and listener.<address>.downstream_global_cx_overflow
 * or downstream_cx_overflow counts it. Control lcore, before the workers
 * accept. @return 0 or -ENOMEM.
 */
int arn_http_set_cx_limits(bool has_global, uint64_t global_max,
			   const struct arn_http_cx_limit *listeners, size_t n);

/** Envoy's per-host counters of one endpoint of a cluster (/clusters). */
struct arn_http_host_counts {
	uint64_t cx_total, cx_connect_fail, rq_total, rq_success, rq_error, rq_timeout;
	uint64_t cx_active, rq_active; /* gauges */
	/* Envoy's FAILED_ACTIVE_HC: its cluster's active health checks failed
	 * it, or it is new and has not passed its first check */
	bool failed_active_hc;
	/* Envoy's FAILED_OUTLIER_CHECK: outlier detection ejected it (an
	 * ejection whose time ended shows until a worker's balancer or
	 * detector next looks at the host) */
	bool failed_outlier_check;
};

struct arn_sb;

/**
 * Admin /certs, as Envoy writes it: {"certificates": [{"ca_cert": [...],
 * "cert_chain": [...]}]}, one entry per TLS context in force (each filter
 * chain's DownstreamTlsContext, each cluster's UpstreamTlsContext), its
 * trusted CAs and its certificates' leaves as CertificateDetails
 * (arn_tls_cert_details), days counted at @p now_s. Control lcore.
 * @return 0, -ENOMEM.
 */
int arn_http_certs_write(struct arn_sb *out, int64_t now_s);

/**
 * The counters of endpoint @p addr:@p port (IPv4, host order) of cluster
 * @p cluster, summed over workers. Control lcore.
 * @return 0, or -ENOENT (no such host: @p out zeroed).
 */
int arn_http_host_counts(const char *cluster, uint32_t addr, uint16_t port,
			 struct arn_http_host_counts *out);

#endif
