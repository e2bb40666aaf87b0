/*
 * envoy.filters.http.custom_response (Envoy's custom_response_filter.cc,
 * local_response_policy.cc, 1.28 onwards): a response whose head matches
 * a custom_response_matcher entry is replaced whole by the entry's
 * LocalResponsePolicy, as Envoy's encodeHeaders then sendLocalReply do.
 *
 * Which responses: the upstream's head (before any of its edits: the
 * reply replaces it, head and body; the upstream's body is never read, its
 * connection dropped as for any reply that cuts a response), and local
 * replies (the router's 503, a filter's 403, ...). The reply it sends is
 * direct (Envoy's sendDirectLocalReply, the response headers having been
 * seen): no custom_response matcher sees it again, so a policy cannot
 * recurse.
 *
 * Which matcher: the filters in encode order (the last of the chain
 * first), each skipped where HttpFilter.disabled / FilterConfig turn it
 * off; for each, the most specific route level's CustomResponse whose
 * matcher matches (route, virtual host, route table), else the filter's
 * own. docs/http.md.
 */
#ifndef ARN_HTTP_CRESP_H
#define ARN_HTTP_CRESP_H

#include <stdbool.h>
#include <stddef.h>

#include "arn_config.h"
#include "arn_h1.h"

struct http_stream;

/* The reply a matched policy gives, for the caller to send direct
 * (http_local_reply_direct): its strings are the policy's or the
 * worker's scratch, valid until the stream's next reply. */
struct http_cresp_reply {
	unsigned status;
	const char *body;
	size_t blen;
	const char *details;
	struct arn_h1_edit e[ARN_CFG_CRESP_MAX_HEADERS + 1];
	unsigned n;
};

/**
 * The upstream's response head (st->resp.m) before it goes to the client.
 * @return true when a policy matched: @p r is the reply to send instead
 * (the head is not written; the caller detaches the upstream by sending
 * it).
 */
bool http_cresp_upstream(struct http_stream *st, struct http_cresp_reply *r);

/**
 * A local reply about to go (its status, body and headers as
 * http_local_reply has them). @return true when a policy matched: @p r is
 * the reply to send instead.
 */
bool http_cresp_local(struct http_stream *st, unsigned status, size_t blen,
		      const struct arn_h1_edit *extra, unsigned n_extra,
		      struct http_cresp_reply *r);

#endif
