/*
 * A unary gRPC call whose answer counts only by its grpc-status: an
 * export to a collector (the OpenTelemetry tracer's spans, the gRPC
 * access loggers' records). The sub-request's ops (http_grpc_unary_ops,
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

#include "http_subreq.h"

struct http_grpc_unary {
	int status; /* -1: none yet; 0: OK; 1: another */
	void (*done)(struct http_grpc_unary *u, bool ok);
};

/** Ready @p u for a call (before http_subreq_start with
 * http_grpc_unary_ops and @p u as its user). */
static inline void http_grpc_unary_init(struct http_grpc_unary *u,
					void (*done)(struct http_grpc_unary *u, bool ok))
{
	u->status = -1;
	u->done = done;
}

extern const struct http_subreq_ops http_grpc_unary_ops;

#endif
