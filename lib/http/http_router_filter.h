/*
 * Envoy's router filter: route, cluster, attempts and retries.
 */
#ifndef ARN_HTTP_ROUTER_FILTER_H
#define ARN_HTTP_ROUTER_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct http_conn;
struct http_res;
struct http_timer;
struct arn_cfg_gen;
struct arn_cfg_request;
struct arn_cfg_route_table;

void http_route(struct http_conn *hc, const struct arn_cfg_gen *g,
		const struct arn_cfg_route_table *rt, const struct arn_cfg_request *req);
void http_xreq_init(struct http_conn *hc, struct http_res *r);
void http_rb_free(struct http_conn *hc);
bool http_rb_append(struct http_conn *hc, const char *p, size_t n);
void http_rb_abandon(struct http_conn *hc);
void http_host_rq_done(struct http_conn *hc, int outcome);
bool http_maybe_retry(struct http_conn *hc, bool would, int outcome);
void http_upstream_lost(struct http_conn *hc, bool reset);
void http_route_timeout(struct http_timer *t);

#endif
