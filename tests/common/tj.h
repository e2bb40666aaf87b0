/*
 * JSON builders for xDS resources in the C unit tests: the clusters,
 * endpoint assignments, listeners (with an HTTP connection manager) and
 * route tables that several suites would otherwise each write again. Pure
 * string building: no library below it, so any test can link it.
 *
 * Ownership: every builder returns one of 16 static buffers (4 KiB each)
 * taken in turn, good until 16 more builder calls: enough for a batch, not
 * to keep. Not thread safe (tests build on one thread).
 */
#ifndef TJ_H
#define TJ_H

/* The "@type" member of an HttpConnectionManager's typed_config, and the
 * router filter an HCM's http_filters end with, to splice into JSON. */
#define TJ_HCM_AT                                                                                  \
	"\"@type\":\"type.googleapis.com/"                                                         \
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager\""
#define TJ_ROUTER                                                                                  \
	"{\"name\":\"envoy.filters.http.router\",\"typed_config\":{\"@type\":\"type.googleapis."   \
	"com/envoy.extensions.filters.http.router.v3.Router\"}}"

/* The "@type" member of a DownstreamTlsContext (a listener's transport socket). */
#define TJ_DTC_AT                                                                                  \
	"\"@type\":\"type.googleapis.com/"                                                         \
	"envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext\""

/** A STATIC Cluster @p name (connect_timeout 0.25s) with one endpoint @p ip:@p port. */
const char *tj_cluster_static(const char *name, const char *ip, unsigned port);
/** An EDS Cluster @p name over ADS with connect_timeout @p timeout ("1s"). */
const char *tj_cluster_eds(const char *name, const char *timeout);
/** A ClusterLoadAssignment for cluster @p name with one endpoint @p ip:@p port. */
const char *tj_cla(const char *name, const char *ip, unsigned port);
/** A Listener @p name on 0.0.0.0:@p port whose one filter is an HCM with
 * stat_prefix "in", then @p hcm_fields (JSON members, no braces: how it
 * finds its routes, and any other HCM field), then the router filter. */
const char *tj_listener_hcm(const char *name, unsigned port, const char *hcm_fields);
/** A Listener @p name on 0.0.0.0:@p port whose HCM (stat_prefix "in") takes
 * route table @p rds over ADS. */
const char *tj_listener_rds(const char *name, unsigned port, const char *rds);
/** A Listener @p name on 0.0.0.0:@p port whose HCM carries an inline route
 * table @p route_name answering every request with a direct 200. */
const char *tj_listener_inline(const char *name, unsigned port, const char *route_name);
/** A Listener @p name on 0.0.0.0:@p port with one filter chain: the echo
 * filter behind a TLS transport socket whose DownstreamTlsContext has
 * @p tls_fields (JSON members, no braces). */
const char *tj_listener_tls(const char *name, unsigned port, const char *tls_fields);
/** A Listener @p name on 0.0.0.0:@p port whose HCM (an empty inline route
 * table "r") runs the MCP gateway filter on ToolSet @p toolset (X14), then
 * the router; @p extra: more McpGateway members ("\"path\":\"/x\"") or NULL. */
const char *tj_listener_mcp(const char *name, unsigned port, const char *toolset,
			    const char *extra);
/** A RouteConfiguration @p name sending every path ("/" prefix, any host) to @p cluster. */
const char *tj_route(const char *name, const char *cluster);
/** A Secret @p name holding a TLS certificate: @p cert_json and @p key_json
 * are PEM already escaped for a JSON string. The one builder whose result
 * is malloc'd (certificates outgrow the static buffers): the caller frees it. */
char *tj_secret_tls(const char *name, const char *cert_json, const char *key_json);

#endif
