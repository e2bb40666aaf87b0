/*
 * envoy.filters.http.ext_authz over gRPC (http_authz.h): the
 * Authorization.Check request (envoy.service.auth.v3.CheckRequest) encoded
 * by hand, and the CheckResponse decoded by hand, both bounded.
 *
 * Why by hand, not upb: the request is a handful of nested strings
 * written once per check, backwards into one buffer so every length is
 * known when its prefix is written (no sizing pass, no arena, no copy);
 * the answer is read in place (its slices point into the bytes received)
 * with a bound on each list, which a generated upb decoder would only
 * check after allocating. Field numbers are Envoy's
 * (envoy/service/auth/v3/{attribute_context,external_auth}.proto,
 * envoy/config/core/v3/{address,base}.proto, google/rpc/status.proto).
 *
 * Ownership: the caller's buffers; decoded slices point into the message.
 */
#ifndef ARN_HTTP_AUTHZ_GRPC_H
#define ARN_HTTP_AUTHZ_GRPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "http_query.h"

/* Header mutations taken from a CheckResponse per list (ok_response's
 * headers, headers_to_remove and response_headers_to_add, or
 * denied_response's headers): more fails the check. */
#define HTTP_AUTHZ_GRPC_HDRS 16

/* One HeaderValueOption (op: enum arn_h1_edit_op), or one name to remove. */
struct http_authz_hv {
	const char *name, *value;
	uint32_t name_len, value_len;
	uint8_t op;
};

struct http_authz_grpc_resp {
	int32_t code;	      /* status.code (0: OK) */
	bool denied;	      /* not OK (denied_response, if any, read) */
	uint32_t http_status; /* denied_response.status.code (0: unset) */
	const char *body;     /* denied_response.body */
	uint32_t body_len;
	/* ok_response.query_parameters_to_set (key and value) and
	 * query_parameters_to_remove (key): raw bytes of the answer, checked
	 * by the caller (http_query_is_encoded) */
	struct http_qkv qset[HTTP_AUTHZ_GRPC_HDRS], qrm[HTTP_AUTHZ_GRPC_HDRS];
	uint8_t n_qset, n_qrm;
	/* OK: ok_response.headers; denied: denied_response.headers */
	struct http_authz_hv h[HTTP_AUTHZ_GRPC_HDRS];
	struct http_authz_hv rm[HTTP_AUTHZ_GRPC_HDRS];	/* headers_to_remove */
	struct http_authz_hv rsp[HTTP_AUTHZ_GRPC_HDRS]; /* response_headers_to_add */
	uint8_t n_h, n_rm, n_rsp;
};

/**
 * Decode CheckResponse @p msg (@p len bytes, the gRPC message without its
 * 5-byte prefix) into @p out. Header names must be HTTP tokens (they are
 * lower-cased in place: @p msg is written), values free of CR, LF and
 * NUL. @return 0; -EBADMSG (not a CheckResponse, or a header that is not
 * one), -E2BIG (more than HTTP_AUTHZ_GRPC_HDRS in a list).
 */
int http_authz_grpc_decode(uint8_t *msg, size_t len, struct http_authz_grpc_resp *out);

/**
 * The one message of a unary gRPC response body @p b (@p n bytes): its
 * 5-byte prefix says uncompressed and exactly the rest. @return the
 * message's length and *@p msg, or -EBADMSG.
 */
long http_authz_grpc_unframe(uint8_t *b, size_t n, uint8_t **msg);

/* What a CheckRequest says of its request (the stream's). */
struct http_authz_grpc_req {
	uint32_t saddr, daddr; /* host order */
	uint16_t sport, dport;
	int64_t time_us; /* request.time */
	uint64_t id;
	const char *method, *path, *host, *scheme, *protocol;
	uint32_t method_len, path_len, host_len;
	const struct arn_h1_msg *m; /* its headers */
	/* which of them go: allowed (unset: all) and not disallowed */
	bool (*keep)(const void *ctx, const char *name, size_t len);
	const void *keep_ctx;
	const char *body; /* with_request_body: the bytes buffered */
	uint32_t body_len;
	bool with_body, partial, raw_body;
	/* context_extensions: the route's, then the virtual host's whose
	 * keys the route's do not have (Envoy merges the levels so) */
	const struct arn_cfg_ext_authz_hdr *ctx, *ctx_vh;
	size_t n_ctx, n_ctx_vh;
};

/**
 * Encode the gRPC request message (5-byte prefix and CheckRequest) for
 * @p r into @p buf (@p cap bytes), at its end. @return where it starts
 * (the message is buf[return, cap)), or -E2BIG when it does not fit.
 */
long http_authz_grpc_encode(const struct http_authz_grpc_req *r, uint8_t *buf, size_t cap);

#endif
