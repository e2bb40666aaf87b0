/*
 * envoy.filters.http.header_mutation (Envoy's header_mutation.cc): the
 * filter's request_mutations, then each route level's
 * HeaderMutationPerRoute's (most specific first; least specific first with
 * most_specific_header_mutations_wins), on the request's head before it
 * goes upstream; the same order of response_mutations on the response's
 * head, the upstream's and local replies. docs/http.md.
 *
 * The mutations act one after the other on the head as Envoy's header map
 * would (a name removed then appended has the appended value alone; an
 * ADD_IF_ABSENT sees what an earlier mutation added); what they leave is
 * written as Arion's header edits: a removal of the head's lines of a
 * name they dropped, then each value they added. Values are formatted
 * (%REQ(...)% and the rest of http_subst) into the stream's text.
 */
#ifndef ARN_HTTP_HM_H
#define ARN_HTTP_HM_H

#include <stdbool.h>
#include <stddef.h>

struct arn_cfg_header_mutation;
struct arn_cfg_route_match;
struct arn_h1_edit;
struct http_stream;

/**
 * The filter at index @p i of the stream's connection manager, config
 * @p f, on @p st's request (route @p mt, NULL if none matched): its edits
 * kept for the request upstream (http_req_edits_keep). @return true when
 * it answered (500 header_edits_overflow: more edits than the stream
 * holds; never a request without them upstream).
 */
bool http_hm_step(struct http_stream *st, size_t i, const struct arn_cfg_header_mutation *f,
		  const struct arn_cfg_route_match *mt);

/**
 * Every header_mutation filter's response edits (those HttpFilter
 * disabled / FilterConfig leave on for the stream's route) into @p e.
 * @return how many, or -ENOSPC.
 */
int http_hm_resp_edits(struct http_stream *st, struct arn_h1_edit *e, unsigned cap);

#endif
