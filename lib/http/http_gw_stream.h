/*
 * What the router and local replies read of a stream the grpc_web filter
 * took (st->grpc_web, http_grpc_web.h): its flags byte, the request edits
 * that make it gRPC, the content-type of its local replies. Inline and
 * here, so that they need not call into the filter, which sits above them.
 */
#ifndef ARN_HTTP_GW_STREAM_H
#define ARN_HTTP_GW_STREAM_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arn_h1.h"
#include "http_stream.h"

/* The state's first byte (in res->text at st->grpc_web - 1) is its
 * flags; this one: the response body goes base64 (Accept asked for it). */
#define HTTP_GW_TEXT_RESP 2u

/**
 * The request edits of a gRPC-Web stream (@p st->grpc_web set) into @p e
 * (at most @p cap), for the router: content-length removed, content-type
 * application/grpc, te: trailers, grpc-accept-encoding when the client
 * sent none. Inline, so that the router and local replies read a stream
 * the filter took without calling into the filter, which sits above them.
 * @return how many, or -ENOSPC.
 */
static inline int http_grpc_web_req_edits(const struct http_stream *st, struct arn_h1_edit *e,
					  unsigned cap)
{
	bool gae = arn_h1_find(&st->req.m, "grpc-accept-encoding", 20, 0) >= 0;
	unsigned n = gae ? 3 : 4;
	if (cap < n)
		return -ENOSPC;
	e[0] = (struct arn_h1_edit){
	    .name = "content-length", .name_len = 14, .op = ARN_H1_EDIT_REMOVE};
	e[1] = (struct arn_h1_edit){.name = "content-type",
				    .name_len = 12,
				    .value = "application/grpc",
				    .value_len = 16,
				    .op = ARN_H1_EDIT_SET};
	e[2] = (struct arn_h1_edit){.name = "te",
				    .name_len = 2,
				    .value = "trailers",
				    .value_len = 8,
				    .op = ARN_H1_EDIT_SET};
	if (!gae)
		e[3] = (struct arn_h1_edit){.name = "grpc-accept-encoding",
					    .name_len = 20,
					    .value = "identity,deflate,gzip",
					    .value_len = 21,
					    .op = ARN_H1_EDIT_SET};
	return (int)n;
}

/**
 * The content-type a local reply to @p st takes in its gRPC form:
 * the gRPC-Web one for a gRPC-Web stream (its length in *@p len), else
 * NULL.
 */
static inline const char *http_grpc_web_ctype(const struct http_stream *st, uint32_t *len)
{
	if (!st->grpc_web || !st->res)
		return NULL;
	if ((uint8_t)st->res->text[st->grpc_web - 1] & HTTP_GW_TEXT_RESP) {
		*len = 31;
		return "application/grpc-web-text+proto";
	}
	*len = 26;
	return "application/grpc-web+proto";
}

#endif
