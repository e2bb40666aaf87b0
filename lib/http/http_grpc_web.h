/*
 * envoy.filters.http.grpc_web on the data path, as Envoy's GrpcWebFilter
 * (source/extensions/filters/http/grpc_web/grpc_web_filter.cc): a request
 * whose content-type is exactly application/grpc-web, application/
 * grpc-web+proto, application/grpc-web-text or application/
 * grpc-web-text+proto goes upstream as gRPC (content-type
 * application/grpc, te: trailers, grpc-accept-encoding
 * identity,deflate,gzip when absent, no content-length; a -text body
 * base64-decoded), and its response comes back as gRPC-Web (content-type
 * application/grpc-web+proto, or -text+proto when Accept asks for it, the
 * body base64-encoded a gRPC frame at a time; the upstream's trailers as a
 * final frame, flag 0x80, "name:value\r\n" lines); a non-gRPC answer with
 * a body has its head held while the body is read, then sent with
 * grpc-status and grpc-message made of them and no body. docs/http.md,
 * "gRPC-Web".
 *
 * Memory: a stream's state (a few hundred bytes: the base64 carries, the
 * frame being encoded, the output piece) lives in its http_res's text,
 * which every request in flight holds already: a client pins nothing more
 * with it. The request body is decoded in place, in the client's own input
 * (the codec's slice), so a huge body takes no more than a binary one.
 *
 * Ownership: the filter's state is the stream's (res->text) from the
 * request head to the stream's end.
 */
#ifndef ARN_HTTP_GRPC_WEB_H
#define ARN_HTTP_GRPC_WEB_H

#include <stddef.h>
#include <stdint.h>

struct arn_h1_edit;
struct http_stream;

/* The response's output piece in the stream's text, at most (bytes). */
#define HTTP_GW_OUT_MAX 1024
/* ... and at least: less text left fails the response head as an edit
 * overflow would (rs_edit_overflow). */
#define HTTP_GW_OUT_MIN 64

/* http_gw_stream.h: what the router and local replies read of a stream
 * this filter took (its flags byte, its request edits, its content-type) */
#include "http_gw_stream.h"

/**
 * Base64-decode @p n chars of @p in (n a multiple of 4) quantum by quantum
 * into @p out as the filter does (a padded quantum anywhere; unused bits
 * zero). @return the bytes written, or -1: not base64. For tests.
 */
long http_grpc_web_b64dec(const char *in, size_t n, uint8_t *out);

#endif
