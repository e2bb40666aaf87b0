/*
 * envoy.filters.http.grpc_stats on the data path: the outcome of each gRPC
 * call (grpc-status in the response's trailers, or in its headers for a
 * trailers-only response) counted under the route's cluster with Envoy's
 * names:
 *   cluster.<c>.grpc.<service>.<method>.{success,failure,total,<status>}
 * with stats_for_all_methods, else cluster.<c>.grpc.{success,...}.
 *
 * The service and method come from the request's path, that is from the
 * client, so the names are bounded: each worker has a table of
 * HTTP_GRPC_STATS_METHODS (cluster, service.method) rows allocated at
 * start; a call whose method does not fit (table full, a name longer than
 * HTTP_GRPC_STATS_NAME_MAX or with characters outside [A-Za-z0-9_.-]) is
 * counted under the cluster's method-less name, as Envoy counts methods it
 * does not track; such calls are counted in grpc_stats.<worker>.rows_overflow
 * (and grpc_stats.<worker>.rows is the rows in use). Local replies to gRPC
 * calls (503 no healthy upstream, a grpc-timeout reached...) are counted
 * with the grpc-status they carry. The table's rows are pulled into /stats
 * (summed over workers) by the control lcore.
 *
 * Rows go when what made them goes: at each new configuration generation
 * the worker frees the rows of clusters the generation no longer has, the
 * per-method rows when no connection manager has stats_for_all_methods,
 * and all of them when none has the filter (http_grpc_stats_sweep).
 *
 * Ownership: the table belongs to its worker (http_grpc_stats_worker_init
 * in worker_init, _fini in worker_fini). It is a pulled row table
 * (lib/stats/arn_stats_rows.h): rows keyed (cluster, method), the method
 * empty for a cluster's row, read by the pull under a seqlock.
 */
#ifndef ARN_HTTP_GRPC_STATS_H
#define ARN_HTTP_GRPC_STATS_H

#include <stdbool.h>
#include <stddef.h>

struct arn_cfg_gen;
struct http_stream;
struct http_worker;

/* Rows with a method per worker; past them, calls count per cluster. */
#define HTTP_GRPC_STATS_METHODS 128
/* Rows without a method (one per cluster) per worker, on top. */
#define HTTP_GRPC_STATS_CLUSTERS 64
/* Longest "<service>.<method>" and cluster name kept, bytes. */
#define HTTP_GRPC_STATS_NAME_MAX 127

/** Allocate @p w's table. @return 0 or -ENOMEM. */
int http_grpc_stats_worker_init(struct http_worker *w);
/** Unpublish and free @p w's table. */
void http_grpc_stats_worker_fini(struct http_worker *w);

/**
 * Count @p st's call if its connection manager has the grpc_stats filter,
 * the request is gRPC, it was routed to a cluster and @p trailers (false:
 * the response head) carry grpc-status; each call counts once.
 */
void http_grpc_stats_response(struct http_stream *st, bool trailers);
/**
 * Count @p st's call answered by a local reply in gRPC: grpc-status
 * @p status (@p len bytes), under the same conditions as
 * http_grpc_stats_response(). Worker lcore.
 */
void http_grpc_stats_local(struct http_stream *st, const char *status, size_t len);
/**
 * Free the rows of worker @p w that generation @p g (NULL: none) no longer
 * makes (see above). Worker lcore, when it takes a new generation.
 */
void http_grpc_stats_sweep(struct http_worker *w, const struct arn_cfg_gen *g);

/** Register / unregister the /stats pull (control lcore). */
void http_grpc_stats_start(void);
void http_grpc_stats_stop(void);

#endif
