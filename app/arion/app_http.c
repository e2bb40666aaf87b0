/*
 * Serve mode's HTTP hooks: the proxy (lib/http, arn_http.h) registers its
 * per-worker module with lib/tcp before net starts the workers; listeners
 * (HTTP connection manager and echo filter chains alike) come from the
 * configuration model's generations from then on.
 */
#include <errno.h>
#include <stdlib.h>

#include "app.h"
#include "arn_bootstrap.h"
#include "arn_config.h"
#include "arn_http.h"
#include "arn_log.h"
#include "arn_tcp.h"

#include "envoy/config/bootstrap/v3/bootstrap.upb.h"
#include "envoy/config/core/v3/base.upb.h"

int arn_app_http_start(struct arn_app *app)
{
	if (!app->config)
		return 0;
	const struct arn_dataplane *dp = &app->bootstrap->dp;
	struct arn_http_options o = {
	    .max_connections = dp->http_max_client_connections,
	    .max_upstream_connections = dp->http_max_upstream_connections,
	    .max_streams = dp->http_max_requests_in_flight,
	    .kept_body_mbufs = dp->http_kept_body_mbufs,
	    .drain_time_s = app->drain_time_s,
	    .drain_time_set = true,
	    .drain_immediate = app->drain_immediate,
	};
	/* the bootstrap's connection limits (layered_runtime, overload_manager),
	 * checked by the workers at accept */
	const struct arn_bootstrap *b = app->bootstrap;
	/* tracing's node_id and zone tags (Envoy's LocalInfo) */
	const envoy_config_core_v3_Node *nd =
	    b->pb ? envoy_config_bootstrap_v3_Bootstrap_node(b->pb) : NULL;
	const envoy_config_core_v3_Locality *loc = nd ? envoy_config_core_v3_Node_locality(nd) : NULL;
	upb_StringView zone = loc ? envoy_config_core_v3_Locality_zone(loc) : (upb_StringView){0};
	o.node_id = b->node_id;
	o.zone = zone.data;
	o.zone_len = zone.size;
	o.node_cluster = b->node_cluster;
	struct arn_http_cx_limit *cl = b->n_cx_limits ? calloc(b->n_cx_limits, sizeof(*cl)) : NULL;
	if (b->n_cx_limits && !cl)
		return -ENOMEM;
	for (size_t i = 0; i < b->n_cx_limits; i++)
		cl[i] = (struct arn_http_cx_limit){b->cx_limits[i].listener, b->cx_limits[i].max};
	int rc =
	    arn_http_set_cx_limits(b->has_global_cx_limit, b->global_cx_limit, cl, b->n_cx_limits);
	free(cl);
	if (rc != 0)
		return rc;
	rc = arn_http_start(app->config, &o);
	if (rc == 0)
		app->http = app->config;
	return rc;
}

void arn_app_http_poll(struct arn_app *app)
{
	if (app->http)
		arn_http_poll();
}

void arn_app_http_stop(struct arn_app *app)
{
	if (!app->http)
		return;
	arn_http_stop();
	app->http = NULL;
}
