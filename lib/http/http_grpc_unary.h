/*
 * A gRPC call whose answer counts only by its grpc-status: an export to
 * a collector (the OpenTelemetry tracer's spans, the OpenTelemetry access
 * logger's records: unary calls) or Envoy's ALS (StreamAccessLogs: a
 * client-streaming call kept open, its messages given with
 * http_subreq_send). The sub-request's ops (http_grpc_unary_ops,
 * whose user is the struct http_grpc_unary) read the status from the
 * head (a trailers-only answer) or the trailers and tell @c done once:
 * ok when it was 0; an HTTP status other than 200, no grpc-status, a
 * failed or timed-out sub-request are not. The answer's message is not
 * read (ExportTraceServiceResponse, ExportLogsServiceResponse,
 * StreamAccessLogsResponse: partial_success at most).
 */
#ifndef ARN_HTTP_GRPC_UNARY_H
#define ARN_HTTP_GRPC_UNARY_H

#include <stdbool.h>
#include <stdint.h>

#include "http_subreq.h"

struct arn_cfg_ext_authz_hdr;
struct arn_cfg_ref;

struct http_grpc_unary {
	int status; /* -1: none yet; 0: OK; 1: another */
	void (*done)(struct http_grpc_unary *u, bool ok);
	/* optional (NULL: none), a client-streaming call's: the transport
	 * holds none of the messages given any more (on_sent) */
	void (*sent)(struct http_grpc_unary *u);
};

/** Ready @p u for a call (before http_subreq_start with
 * http_grpc_unary_ops and @p u as its user). */
static inline void http_grpc_unary_init(struct http_grpc_unary *u,
					void (*done)(struct http_grpc_unary *u, bool ok))
{
	u->status = -1;
	u->done = done;
	u->sent = NULL;
}

extern const struct http_subreq_ops http_grpc_unary_ops;

/* Where a collector's call goes: an envoy_grpc grpc_service's fields
 * (the tracer's and the gRPC access loggers' configurations); all the
 * caller's, valid until the call is over. */
struct http_grpc_target {
	const struct arn_cfg_ref *cluster;
	const char *authority; /* envoy_grpc.authority; NULL: the cluster's name */
	uint32_t authority_len;
	uint32_t timeout_ms; /* grpc_service.timeout, sent as grpc-timeout; 0: none */
	const struct arn_cfg_ext_authz_hdr *md; /* initial_metadata */
	size_t n_md;
};

/* the headers a call sends: content-type, te, grpc-timeout, the metadata */
#define HTTP_GRPC_CALL_HDRS(n_md) (3 + (n_md))

/* The caller's part of a call's head, valid until the call is over. */
struct http_grpc_head {
	struct http_subreq_header *h; /* room for HTTP_GRPC_CALL_HDRS(n_md) */
	char tmo[16];		      /* grpc-timeout's value */
};

/**
 * Start a gRPC call (Envoy's Grpc::AsyncClientImpl over envoy_grpc) to
 * @p path on @p t's cluster, in the worker's generation, for @p hc (its
 * worker and local address): the head is gRPC's (content-type
 * application/grpc, te: trailers, grpc-timeout when t->timeout_ms, the
 * initial metadata, Host the authority else the cluster's name) made in
 * @p hd; @p msg (@p len bytes, its gRPC prefix included) its first body.
 * @p stream: a client-streaming call that stays open for
 * http_subreq_send (no content-length), else a unary one (END_STREAM
 * after @p msg). The sub-request fails after @p deadline_ms (0: never).
 * @return http_subreq_start's (0: @p ops follow; else none does).
 */
int http_grpc_call_start(struct http_subreq *sr, struct http_conn *hc,
			 const struct http_grpc_target *t, const char *path, size_t path_len,
			 struct http_grpc_head *hd, const char *msg, size_t len, bool stream,
			 uint32_t deadline_ms, const struct http_subreq_ops *ops, void *user);

#endif
