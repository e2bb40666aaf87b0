/*
 * gRPC access loggers (Envoy's envoy.access_loggers.open_telemetry,
 * http_grpc and tcp_grpc): each record an access log passes is encoded at
 * once into its worker's bounded queue (one per kind), which goes to the
 * collector's cluster when it holds buffer_size_bytes or when
 * buffer_flush_interval passes. OpenTelemetry: one unary call
 * (LogsService/Export) per flush, one in flight per worker. ALS: one
 * StreamAccessLogsMessage per flush on the worker's StreamAccessLogs
 * stream, kept open (the identifier on its first message only) and
 * opened again at the next flush once the collector closed or reset it.
 * Records that find the queue full are dropped and counted
 * (logs_dropped).
 */
#ifndef ARN_HTTP_GLOG_H
#define ARN_HTTP_GLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct arn_access_record;
struct arn_cfg_access_log;
struct arn_cfg_grpc_log;
struct arn_cfg_listener;
struct http_hcm_rt;
struct http_worker;

/* A worker's queue of encoded records (per kind of logger): bytes and
 * records; a record past either is dropped. */
#define HTTP_GLOG_QUEUE_BYTES 65536
#define HTTP_GLOG_QUEUE_RECORDS 512
/* One encoded record: a longer one is dropped (counted). */
#define HTTP_GLOG_RECORD_MAX 16384
/* A body's and an attribute's formatted text: cut past it ("...") */
#define HTTP_GLOG_BODY_MAX 4096
#define HTTP_GLOG_ATTR_MAX 512

/* A string attribute of a record or a resource. */
struct http_glog_kv {
	const char *k, *v;
	uint32_t kl, vl;
};

/** One gRPC access logger of a connection manager (its formats and filter
 * compiled); control lcore. @return it, or NULL (logged, naming
 * @p lsn and @p idx: no memory). */
struct http_glog *http_glog_new(const struct arn_cfg_access_log *a, const char *lsn, size_t idx);
void http_glog_free(struct http_glog *g); /* NULL: no-op */

/**
 * Log @p rec to each of @p r's gRPC access loggers whose filter passes it,
 * on worker @p w, for a connection of listener @p l (pinned while its
 * records wait) whose local address @p laddr the export connects from.
 */
void http_glog_log(struct http_worker *w, const struct arn_cfg_listener *l, uint32_t laddr,
		   const struct http_hcm_rt *r, const struct arn_access_record *rec);

/** http_glog_new, http_glog_free and http_glog_log, for the runtime
 * (http_rt_glog_ops). */
extern const struct http_glog_ops http_glog_ops;

int http_glog_worker_init(struct http_worker *w);
void http_glog_worker_fini(struct http_worker *w);
/** The built-in resource labels' node_name, cluster_name and zone_name
 * (the bootstrap's node; NULL: ""); copied. Control lcore, at start. */
void http_glog_module_init(const char *node_id, const char *cluster, const char *zone,
			   size_t zone_len);

/* ---- the encoders (exposed for the tests) ---- */

/** OTLP LogRecord {time_unix_nano @p time_ns, body string @p body (NULL:
 * none), attributes @p kv, trace_id @p trace_id (16 bytes) and span_id
 * @p span_id (8 bytes; either NULL: none)} as ScopeLogs.log_records
 * (field 2, tag and length included) into @p out. @return its bytes, 0
 * if past @p cap. */
size_t http_glog_otel_record(uint8_t *out, size_t cap, uint64_t time_ns, const char *body,
			     size_t body_len, const struct http_glog_kv *kv, unsigned n,
			     const uint8_t *trace_id, const uint8_t *span_id);

/** The gRPC message (prefix included) of an ExportLogsServiceRequest with
 * @p cfg's resource and the queued records @p recs (@p len bytes, from
 * http_glog_otel_record). @return its bytes, 0 if past @p cap. */
size_t http_glog_otel_export(uint8_t *out, size_t cap, const struct arn_cfg_grpc_log *cfg,
			     const uint8_t *recs, size_t len);

/** Envoy's ALS entry of @p r: an HTTPAccessLogEntry (@p tcp false, with
 * @p cfg's additional headers) or a TCPAccessLogEntry, as the entries'
 * log_entry field (1; tag and length included); @p peer the client
 * certificate's subject (NULL: none). @return its bytes, 0 if past @p cap. */
size_t http_glog_als_entry(uint8_t *out, size_t cap, const struct arn_access_record *r,
			   const struct arn_cfg_grpc_log *cfg, bool tcp, const char *peer,
			   size_t peer_len);

/** The gRPC message (prefix included) of a StreamAccessLogsMessage: with
 * @p ident (a stream's first message) the identifier (the node, @p cfg's
 * log_name), then http_logs (or tcp_logs with @p tcp) holding the queued
 * entries @p entries. @return its bytes, 0 if past @p cap. */
size_t http_glog_als_message(uint8_t *out, size_t cap, const struct arn_cfg_grpc_log *cfg, bool tcp,
			     bool ident, const uint8_t *entries, size_t len);

#endif
