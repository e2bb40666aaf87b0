/*
 * envoy.filters.http.ratelimit's gRPC messages by hand (http_rls.h): the
 * envoy.service.ratelimit.v3.RateLimitRequest encoded, the
 * RateLimitResponse decoded, both bounded; and the draft-03 x-ratelimit-*
 * values Envoy's XRateLimitHeaderUtils makes of an answer's statuses.
 *
 * Why by hand: as ext_authz's (http_authz_grpc.h), the request is a few
 * strings written once per call into one buffer, the answer is read in
 * place with a bound on each list (the reader is http_pb.h, shared with
 * ext_authz). The request is written forwards: a descriptor's size is
 * known once it is built, so no backwards pass is needed. Field numbers
 * are Envoy's (envoy/service/ratelimit/v3/rls.proto,
 * envoy/extensions/common/ratelimit/v3/ratelimit.proto,
 * envoy/config/core/v3/base.proto's HeaderValue).
 *
 * Ownership: the caller's buffers; decoded slices point into the message.
 */
#ifndef ARN_HTTP_RLS_GRPC_H
#define ARN_HTTP_RLS_GRPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arn_rldesc.h"

/* Headers taken from a RateLimitResponse per list (response_headers_to_add,
 * request_headers_to_add), and its statuses (one per descriptor sent, at
 * most ARN_CFG_RL_MAX_DESCRIPTORS): more fails the call. */
#define HTTP_RLS_GRPC_HDRS 16
#define HTTP_RLS_GRPC_STATUSES 16

enum http_rls_code {
	HTTP_RLS_UNKNOWN = 0,
	HTTP_RLS_OK = 1,
	HTTP_RLS_OVER_LIMIT = 2,
};

/* A HeaderValue {key, value}: the key an HTTP token, lower-cased. */
struct http_rls_hv {
	const char *name, *value;
	uint32_t name_len, value_len;
};

/* A DescriptorStatus: what the x-ratelimit-* headers read. */
struct http_rls_status {
	bool has_limit;	  /* current_limit set */
	uint32_t rpu;	  /* current_limit.requests_per_unit */
	uint32_t unit;	  /* current_limit.unit */
	const char *name; /* current_limit.name */
	uint32_t name_len;
	uint32_t remaining; /* limit_remaining */
	int64_t reset_s;    /* duration_until_reset.seconds */
};

struct http_rls_resp {
	uint32_t code; /* overall_code (enum http_rls_code; another value: as read) */
	struct http_rls_status st[HTTP_RLS_GRPC_STATUSES];
	struct http_rls_hv rsp[HTTP_RLS_GRPC_HDRS]; /* response_headers_to_add */
	struct http_rls_hv req[HTTP_RLS_GRPC_HDRS]; /* request_headers_to_add */
	uint8_t n_st, n_rsp, n_req;
	const char *body; /* raw_body */
	uint32_t body_len;
};

/**
 * Decode RateLimitResponse @p msg (@p len bytes, the gRPC message without
 * its prefix) into @p out. Header names must be HTTP tokens (lower-cased
 * in place: @p msg is written), values free of CR, LF and NUL.
 * dynamic_metadata and quota are skipped (Arion keeps no metadata).
 * @return 0; -EBADMSG (not a RateLimitResponse, or a header that is not
 * one), -E2BIG (more than HTTP_RLS_GRPC_HDRS headers in a list or
 * HTTP_RLS_GRPC_STATUSES statuses).
 */
int http_rls_grpc_decode(uint8_t *msg, size_t len, struct http_rls_resp *out);

/* A RateLimitRequest being written into the caller's buffer. */
struct http_rls_req {
	uint8_t *b;
	size_t cap, len;
	bool err; /* did not fit */
};

/** Start the gRPC message (its 5-byte prefix, then domain) in @p buf
 * (@p cap bytes). */
void http_rls_req_start(struct http_rls_req *w, uint8_t *buf, size_t cap, const char *domain,
			size_t dlen);
/** One descriptor (its entries, in order). */
void http_rls_req_desc(struct http_rls_req *w, const struct arn_rl_desc *d);
/** The message's prefix written. @return its whole length (prefix
 * included), or -E2BIG when it did not fit. */
long http_rls_req_end(struct http_rls_req *w);

/* draft 03's x-ratelimit-limit, -remaining and -reset of an answer
 * (Envoy's XRateLimitHeaderUtils::create): the status with current_limit
 * and the least limit_remaining (the first of equals), and the quota
 * policy of every status whose unit has a window. */
#define HTTP_RLS_XRL_LIMIT 1024 /* x-ratelimit-limit's value, at most */
struct http_rls_xrl {
	char limit[HTTP_RLS_XRL_LIMIT];
	char remaining[12], reset[24];
	uint32_t limit_len, remaining_len, reset_len;
};

/** @return 1 with @p x filled, 0 when no status has a current_limit,
 * -E2BIG when x-ratelimit-limit would pass HTTP_RLS_XRL_LIMIT bytes. */
int http_rls_xrl(const struct http_rls_resp *r, struct http_rls_xrl *x);

#endif
