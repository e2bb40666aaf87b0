/*
 * What the request-head filters share, below them all (http_l4.c's
 * jwt_authn, http_basic_auth.c): room in a stream's text, the request
 * edits they keep for the upstream request (st->jwt_edits, which
 * http_l4_req_edits hands the router), and the www-authenticate header of
 * an authentication failure.
 *
 * Ownership: everything lives in the stream's http_res text, from the
 * request head to the stream's end.
 */
#ifndef ARN_HTTP_REQ_KEPT_H
#define ARN_HTTP_REQ_KEPT_H

#include <stddef.h>

#include <stdbool.h>

struct arn_cfg_header;
struct arn_h1_slice;
struct arn_cfg_ref;
struct arn_cfg_request;
struct arn_cfg_route_action;
struct arn_h1_edit;
struct http_stream;

/* The kept request edits: a block in the stream's text at
 * st->jwt_edits - 1 (8-aligned). */
struct http_req_edits {
	unsigned n;
	struct arn_h1_edit e[];
};

/** Room for @p n bytes in @p st's text, or NULL when it has none. */
char *http_st_text(struct http_stream *st, size_t n);

/** The request edits kept for @p st, or NULL. */
const struct http_req_edits *http_req_edits_kept(const struct http_stream *st);

/**
 * Keep @p n request edits @p e (values that outlive the call: the
 * configuration's, or the stream's text) for @p st's upstream request,
 * after those a filter kept before (st->jwt_edits, which
 * http_l4_req_edits adds). @return 0, or -ENOSPC when the stream's text
 * has no room (the caller must not let the request go on without them).
 */
int http_req_edits_keep(struct http_stream *st, const struct arn_h1_edit *e, unsigned n);

/**
 * The kept request edits of @p st applied to the header view @p h (*@p n
 * entries, room for @p cap), as the upstream request's writer applies
 * them (arn_h1_edit_op): a removal drops every line, a set replaces the
 * first and drops the others, an add appends one (an append of values
 * too: the view has a line more where the writer joins it). Views point
 * into the edits (the stream's text or the configuration). @return false
 * when an added line found no room (the view holds what fitted).
 */
bool http_req_edits_view(const struct http_stream *st, struct arn_cfg_header *h, size_t *n,
			 size_t cap);

/**
 * Keep the path @p st's route is matched on (the request's, before a
 * filter rewrites it: Envoy's cached route), once: a rewrite of the path
 * then does not move the request unless the route cache is cleared
 * (st->route_edited). @return 0, or -ENOSPC when the stream's text has
 * no room (the caller must not rewrite the path then).
 */
int http_route_path_keep(struct http_stream *st);

/** The path kept by http_route_path_keep, or NULL (in @p st's text). */
const struct arn_h1_slice *http_route_path(const struct http_stream *st);

/**
 * The www-authenticate header of an authentication filter's 401 into
 * @p e[0]: "<scheme> realm=\"<URI>\"<suffix>", the URI Envoy's
 * buildOriginalUri (x-forwarded-proto, host, the path cut at 256 bytes),
 * the value in the stream's text. @return 1, or 0 when the text had no
 * room or the value would carry a CR or LF (no header then).
 */
unsigned http_www_authenticate(struct http_stream *st, const char *scheme, const char *suffix,
			       struct arn_h1_edit *e);

/**
 * The cluster of route action @p ra as the filters see it (Envoy's
 * clusterInfo(), the rate limit filters' destination_cluster): the name,
 * cluster_header's first value, or a weighted cluster drawn by the
 * weights with the request's draw (the router draws again when it
 * routes, so its pick may differ: Envoy picks once). @return false when
 * there is none. The name is the configuration's or the request's.
 */
bool http_route_cluster(const struct arn_cfg_route_action *ra, const struct arn_cfg_request *req,
			struct arn_cfg_ref *out);

#endif
