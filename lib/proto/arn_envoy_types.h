/*
 * The Envoy message types that Arion names in code, each spelled once: the
 * full name (arn_proto_msgdef(), an Any's type name) and, for the six
 * resource families that xDS delivers (X2: five of Envoy's and Arion's TDS),
 * the type URL.
 *
 * Plain string macros and nothing else, so that any module may include this
 * without pulling in upb (the data plane's headers must not).
 */
#ifndef ARN_ENVOY_TYPES_H
#define ARN_ENVOY_TYPES_H

/* Type URL prefix that Envoy and every control plane use. */
#define ARN_TYPE_URL_PREFIX "type.googleapis.com/"

/* The resource families. */
#define ARN_TYPE_LISTENER "envoy.config.listener.v3.Listener"
#define ARN_TYPE_ROUTE "envoy.config.route.v3.RouteConfiguration"
#define ARN_TYPE_CLUSTER "envoy.config.cluster.v3.Cluster"
#define ARN_TYPE_CLA "envoy.config.endpoint.v3.ClusterLoadAssignment"
#define ARN_TYPE_SECRET "envoy.extensions.transport_sockets.tls.v3.Secret"

#define ARN_TYPE_URL_LISTENER ARN_TYPE_URL_PREFIX ARN_TYPE_LISTENER
#define ARN_TYPE_URL_ROUTE ARN_TYPE_URL_PREFIX ARN_TYPE_ROUTE
#define ARN_TYPE_URL_CLUSTER ARN_TYPE_URL_PREFIX ARN_TYPE_CLUSTER
#define ARN_TYPE_URL_CLA ARN_TYPE_URL_PREFIX ARN_TYPE_CLA
#define ARN_TYPE_URL_SECRET ARN_TYPE_URL_PREFIX ARN_TYPE_SECRET

/* The sixth family (X2): Arion's own TDS resource, subscribed on demand by
 * name (X4, X14), and the HTTP filter that names it. */
#define ARN_TYPE_TOOLSET "arion.extensions.mcp.v3.ToolSet"
#define ARN_TYPE_URL_TOOLSET ARN_TYPE_URL_PREFIX ARN_TYPE_TOOLSET
#define ARN_TYPE_MCP_GATEWAY "arion.extensions.filters.http.mcp_gateway.v3.McpGateway"

/* The configuration file's envoy_bootstrap: */
#define ARN_TYPE_BOOTSTRAP "envoy.config.bootstrap.v3.Bootstrap"

/* Types that arrive inside an Any of those resources (or of the bootstrap). */
#define ARN_TYPE_HCM                                                                               \
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
#define ARN_TYPE_DOWNSTREAM_TLS "envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext"
#define ARN_TYPE_UPSTREAM_TLS "envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext"
#define ARN_TYPE_HTTP_PROTOCOL_OPTIONS "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
#define ARN_TYPE_DOWNSTREAM_CONNECTIONS                                                            \
	"envoy.extensions.resource_monitors.downstream_connections.v3.DownstreamConnectionsConfig"
#define ARN_TYPE_RAW_BUFFER "envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer"
#define ARN_TYPE_FILE_ACCESS_LOG "envoy.extensions.access_loggers.file.v3.FileAccessLog"
#define ARN_TYPE_STDOUT_ACCESS_LOG "envoy.extensions.access_loggers.stream.v3.StdoutAccessLog"
#define ARN_TYPE_STDERR_ACCESS_LOG "envoy.extensions.access_loggers.stream.v3.StderrAccessLog"

#endif
