/*
 * envoy.filters.http.fault on the data path (Envoy's FaultFilter): a
 * request the fault's selection takes (its route's cluster, the
 * x-envoy-downstream-service-node, its header matchers) is delayed, then
 * aborted, each with its percentage, fixed or asked for by the request's
 * x-envoy-fault-* headers when the configuration lets them. Counted in
 * http.<prefix>.fault.* (Envoy's names: delays_injected, aborts_injected,
 * faults_overflow, active_faults).
 *
 * A delay holds the request (its buffer; the stream's idle timer runs on)
 * on the request's retry timer, unused before the router; when it ends the
 * connection manager's head walk goes on after the filter
 * (http_hcm_resume_head). max_active_faults bounds the delays and aborts
 * in progress over every worker (a relaxed count in the HCM's runtime
 * object; past it, counted in faults_overflow, the request goes on).
 */
#ifndef ARN_HTTP_FAULT_H
#define ARN_HTTP_FAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct http_stream;
struct arn_cfg_fault;
struct arn_cfg_request;
struct arn_cfg_route_match;
struct arn_h1_msg;
struct arn_stats_scope;

/* A delayed request's planned abort keeps a gRPC status above this
 * (http_xreq.fault_abort): HTTP statuses are below. */
#define HTTP_FAULT_GRPC 1000

/* What the fault does to one request. */
struct http_fault_plan {
	uint32_t delay_ms;     /* 0: no delay */
	uint16_t abort_status; /* HTTP status; 0: no abort */
	int16_t abort_grpc;    /* gRPC status, or -1 */
};

/**
 * Envoy's decision for the request @p m (@p req: as the route matcher
 * sees it) routed to @p cluster (@p clen bytes; NULL: no route) under
 * @p f, with two random numbers. @return false when the fault does not
 * take the request (upstream_cluster, downstream_nodes, headers); else
 * true with the plan (maybe nothing: a percentage missed).
 */
bool http_fault_plan(const struct arn_cfg_fault *f, const struct arn_h1_msg *m,
		     const struct arn_cfg_request *req, const char *cluster, size_t clen,
		     uint64_t r_delay, uint64_t r_abort, struct http_fault_plan *out);

#endif
