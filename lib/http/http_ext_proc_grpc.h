/*
 * envoy.filters.http.ext_proc's gRPC messages by hand (http_ext_proc.h):
 * the ProcessingRequest Arion sends (the request's or the response's
 * headers) encoded, the ProcessingResponse a processor answers decoded,
 * both bounded; and the gRPC framing of the answers reassembled across
 * the slices they come in.
 *
 * Why by hand, not upb: as ext_authz's (http_authz_grpc.h), the request
 * is a list of strings written once, and the answer is read in place
 * (its slices point into the bytes received) with a bound on each list
 * before anything is kept. Field numbers are Envoy's
 * (envoy/service/ext_proc/v3/external_processor.proto,
 * envoy/extensions/filters/http/ext_proc/v3/processing_mode.proto,
 * envoy/config/core/v3/base.proto, envoy/type/v3/http_status.proto).
 *
 * Ownership: the caller's buffers; decoded slices point into the message.
 */
#ifndef ARN_HTTP_EXT_PROC_GRPC_H
#define ARN_HTTP_EXT_PROC_GRPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Header mutations taken from one ProcessingResponse per list
 * (set_headers, remove_headers): more fails the message (Envoy's bound is
 * the connection manager's header count). */
#define HTTP_EXT_PROC_GRPC_HDRS 32

/* One header of a ProcessingRequest; both strings the caller's. */
struct http_ext_proc_hdr {
	const char *name, *value;
	uint32_t name_len, value_len;
};

/**
 * Encode the gRPC message (5-byte prefix and ProcessingRequest) carrying
 * @p n headers @p h as request_headers (@p response false) or
 * response_headers, each a HeaderValue {key (lower-cased here),
 * raw_value}, with end_of_stream @p eos and an empty metadata_context (as
 * Envoy's), into @p buf (@p cap bytes) from its start.
 * @return its length, or -E2BIG when it does not fit.
 */
long http_ext_proc_encode_headers(bool response, const struct http_ext_proc_hdr *h, unsigned n,
				  bool eos, uint8_t *buf, size_t cap);

/**
 * The start of the gRPC message carrying a body of @p blen bytes as
 * request_body (@p response false) or response_body, end_of_stream
 * @p eos: its prefix, an empty metadata_context, the HttpBody's
 * end_of_stream, then body's tag and length, into @p buf (@p cap bytes);
 * the @p blen body bytes follow it on the wire, sent by the caller (from
 * the kept body's mbufs, not copied). @return its length, or -E2BIG.
 */
long http_ext_proc_encode_body_head(bool response, size_t blen, bool eos, uint8_t *buf, size_t cap);

/* Which member of the ProcessingResponse's oneof came (the field's
 * number; 0: none). */
enum http_ext_proc_kind {
	HTTP_EXT_PROC_NONE = 0,
	HTTP_EXT_PROC_REQUEST_HEADERS = 1,
	HTTP_EXT_PROC_RESPONSE_HEADERS,
	HTTP_EXT_PROC_REQUEST_BODY,
	HTTP_EXT_PROC_RESPONSE_BODY,
	HTTP_EXT_PROC_REQUEST_TRAILERS,
	HTTP_EXT_PROC_RESPONSE_TRAILERS,
	HTTP_EXT_PROC_IMMEDIATE,
};

/* A HeaderValueOption of set_headers, as sent: @p value is raw_value
 * when set, else value (both set: both_values); @p action its
 * append_action; @p append: the deprecated append (BoolValue) was set,
 * to @p append_value. */
struct http_ext_proc_set {
	const char *name, *value;
	uint32_t name_len, value_len;
	uint32_t action;
	bool has_header, both_values, append, append_value;
};

/* A HeaderMutation: its lists as sent (names not checked yet: the
 * filter's mutation rules decide, as Envoy's MutationUtils does). */
struct http_ext_proc_mut {
	struct http_ext_proc_set set[HTTP_EXT_PROC_GRPC_HDRS];
	struct {
		const char *name;
		uint32_t name_len;
	} rm[HTTP_EXT_PROC_GRPC_HDRS];
	uint8_t n_set, n_rm;
};

struct http_ext_proc_resp {
	uint8_t kind; /* enum http_ext_proc_kind */
	/* request_headers / response_headers: HeadersResponse.response */
	uint32_t status;	/* CommonResponse.status (0 CONTINUE, 1 CONTINUE_AND_REPLACE) */
	bool has_body_mutation; /* CommonResponse.body_mutation */
	/* its BodyMutation: body (@p new_body, set: has_new_body) or
	 * clear_body (streamed_response: neither) */
	bool has_new_body, clear_body;
	const uint8_t *new_body;
	uint32_t new_body_len;
	bool has_trailers; /* CommonResponse.trailers */
	bool clear_route_cache;
	bool has_header_mutation; /* CommonResponse.header_mutation (even empty) */
	/* immediate_response */
	uint32_t http_status; /* status.code (0: unset) */
	const char *body, *details;
	uint32_t body_len, details_len;
	bool has_grpc_status;
	uint32_t grpc_status;
	/* header_mutation (CommonResponse) or headers (ImmediateResponse) */
	struct http_ext_proc_mut mut;
	/* mode_override (ProcessingMode), its six enums */
	bool has_mode_override;
	uint32_t mode[6];
	/* override_message_timeout (Duration), in ms (capped) */
	bool has_timeout_override;
	uint64_t timeout_ms;
	bool has_dynamic_metadata;
};

/**
 * Decode ProcessingResponse @p msg (@p len bytes, the gRPC message without
 * its prefix) into @p out. @return 0; -EBADMSG (not a ProcessingResponse:
 * a wire type proto3 does not use, a length past the end, a varint past
 * ten bytes, a known field of the wrong wire type), -E2BIG (more than
 * HTTP_EXT_PROC_GRPC_HDRS in a list).
 */
int http_ext_proc_decode(const uint8_t *msg, size_t len, struct http_ext_proc_resp *out);

/*
 * gRPC's length-prefixed messages out of a response body that comes in
 * slices of any size: each message, whole, into the caller's buffer of
 * @p cap bytes. Compressed messages (flag 1: Arion asks for none) and
 * messages past @p cap are errors.
 */
struct http_grpc_rd {
	uint8_t *buf;
	uint32_t cap;
	uint32_t have; /* bytes of the current message (prefix included) */
};

/**
 * Take up to @p len bytes of @p data into @p rd. @return how many were
 * taken (then *@p done tells whether a whole message is in rd->buf:
 * its payload is rd->buf + 5, http_grpc_rd_len bytes; the caller
 * handles it, then http_grpc_rd_next, then calls again with the rest),
 * or -EBADMSG (compressed), -E2BIG (past cap).
 */
long http_grpc_rd_take(struct http_grpc_rd *rd, const char *data, size_t len, bool *done);
/** The payload length of the whole message in @p rd. */
uint32_t http_grpc_rd_len(const struct http_grpc_rd *rd);
/** Forget the message handled: the next one starts. */
void http_grpc_rd_next(struct http_grpc_rd *rd);

#endif
