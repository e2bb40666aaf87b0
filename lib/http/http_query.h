/*
 * A request path's query rewritten as Envoy's Http::Utility::
 * QueryParamsMulti rewrites it (ext_authz's query_parameters_to_set and
 * query_parameters_to_remove): the query parsed raw (no decoding) into
 * key/value pairs at '&' and the first '='; each key to set given that
 * one value (all its values replaced), each key to remove dropped, and
 * the query written back with its keys in byte order (Envoy's btree_map;
 * a key's values in their order), each pair as "key=value" (a parameter
 * without '=' gets one), no '?' when none is left. Pure: no allocation,
 * the caller's buffers.
 */
#ifndef ARN_HTTP_QUERY_H
#define ARN_HTTP_QUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Parameters a rewritten query may have: a path with more is not
 * rewritten (-E2BIG), never cut. */
#define HTTP_QUERY_MAX_PARAMS 256

/* One parameter: a key, and its value (set) or none (remove). */
struct http_qkv {
	const char *k, *v;
	uint32_t kl, vl;
};

/**
 * Envoy's x-www-form-urlencoded check (PercentEncoding::
 * queryParameterIsUrlEncoded): ALPHA, DIGIT, '*', '-', '.', '_', and
 * '%' followed by two hex digits (Arion's addition: a lone '%' is not an
 * encoding). What may be written into a query without changing how it
 * splits or what the request line is.
 */
bool http_query_is_encoded(const char *p, size_t n);

/**
 * @p path (@p plen bytes: the path, then '?' and the query, if any)
 * with @p nset keys set and @p nrm removed, written to @p out (@p cap
 * bytes, not NUL-terminated). Setting a key twice leaves the last
 * value; a key both set and removed is removed (Envoy sets first).
 * @return the new length; -ENOSPC when it does not fit in @p cap;
 * -E2BIG when the query has (or would have) more than
 * HTTP_QUERY_MAX_PARAMS parameters. With @p out NULL nothing is written
 * and the new length is returned (a parameter without '=' gains one, so
 * the new path may be longer than the old and the values set together).
 */
long http_query_rewrite(const char *path, size_t plen, const struct http_qkv *set, size_t nset,
			const struct http_qkv *rm, size_t nrm, char *out, size_t cap);

#endif
