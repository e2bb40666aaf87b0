/*
 * Envoy's standard statistic sets, declared once here so that every module
 * produces them under Envoy's names (dashboards carry over) and nobody
 * spells upstream_rq_2xx twice. Use them with arn_stats.h:
 *
 *   // lib/config, when cluster "web" enters a generation (control lcore):
 *   c->stats = arn_stats_scope_get(&arn_stats_cluster_schema,
 *                                  ARN_STATS_TAG_CLUSTER, "web");
 *   // lib/http, on worker w, per request:
 *   arn_stats_inc(c->stats, ARN_STATS_SLOT_WORKER(w), ARN_CL_upstream_rq_total);
 *   arn_stats_inc(c->stats, ARN_STATS_SLOT_WORKER(w),
 *                 arn_stats_code_class(ARN_CL_upstream_rq_1xx, status));
 *   arn_stats_hist_record(c->stats, ARN_STATS_SLOT_WORKER(w),
 *                         ARN_CL_upstream_rq_time, usec);
 *
 * Families and tags:
 *   arn_stats_cluster_schema   cluster.<name>.*         ARN_STATS_TAG_CLUSTER
 *                              (and cluster.<name>.http2.*: ARN_CL_http2_<stat>)
 *   arn_stats_http_schema      http.<stat_prefix>.*     ARN_STATS_TAG_HCM
 *   arn_stats_http1_schema     http1.*                  untagged (downstream HTTP/1)
 *   arn_stats_http2_schema     http2.*                  untagged (downstream HTTP/2)
 *   arn_stats_listener_schema  listener.<address>.*     ARN_STATS_TAG_LISTENER
 *                              (address "0.0.0.0_80": ':' becomes '_', as Envoy)
 *   arn_stats_cds_schema       cluster_manager.cds.*    untagged
 *   arn_stats_lds_schema       listener_manager.lds.*   untagged
 *   arn_stats_listener_manager_schema listener_manager.*  untagged (drains)
 *   arn_stats_rds_schema       cluster_manager.rds.*    untagged (Arion: all RDS)
 *   arn_stats_eds_schema       cluster_manager.eds.*    untagged (Arion: all EDS)
 *   arn_stats_sds_schema       cluster_manager.sds.*    untagged (Arion: all SDS)
 *   arn_stats_control_plane_schema control_plane.*      untagged
 *   arn_stats_tcp_proxy_schema tcp.<stat_prefix>.*      ARN_STATS_TAG_TCP_PROXY
 *   arn_stats_rbac_schema      <prefix>.rbac.*          untagged, family from config
 *   arn_stats_rbac_shadow_schema <prefix>.rbac.<shadow prefix>.*  likewise
 *   arn_stats_ext_authz_schema http.<prefix>.ext_authz.* untagged, family from config
 *   arn_stats_cors_schema      http.<prefix>.cors.*     untagged, family from config
 *   arn_stats_fault_schema     http.<prefix>.fault.*    untagged, family from config
 *   arn_stats_basic_auth_schema http.<prefix>.basic_auth.* untagged, family from config
 *   arn_stats_csrf_schema      http.<prefix>.csrf.*     untagged, family from config
 *   arn_stats_jwt_authn_schema http.<prefix>.jwt_authn.* untagged, family from config
 *   arn_stats_local_ratelimit_schema local_rate_limit.<stat_prefix>.*
 *                                                       ARN_STATS_TAG_LOCAL_RATELIMIT
 *   arn_stats_http_local_ratelimit_schema <prefix>.http_local_rate_limit.*
 *                                                       untagged, family from config
 *   arn_stats_connection_limit_schema connection_limit.<stat_prefix>.*
 *                                                       ARN_STATS_TAG_CONNECTION_LIMIT
 * Envoy keeps RDS, EDS and SDS update counters per resource
 * (http.<prefix>.rds.<route>.*, cluster.<name>.update_*, sds.<secret>.*);
 * with one ADS stream Arion counts them per type; the cluster schema also
 * carries Envoy's per-cluster update_* counters for EDS.
 */
#ifndef ARN_STATS_ENVOY_H
#define ARN_STATS_ENVOY_H

#include "arn_stats.h"

enum arn_cluster_stat {
#define ARN_STAT(kind, name, help) ARN_CL_##name,
#include "envoy_cluster_stats.def"
#undef ARN_STAT
#define ARN_STAT(kind, name, help) ARN_CL_http2_##name,
#include "envoy_cluster_http2_stats.def"
#undef ARN_STAT
#define ARN_STAT(kind, name, help) ARN_CL_health_check_##name,
#include "envoy_cluster_hc_stats.def"
#undef ARN_STAT
#define ARN_STAT(kind, name, help) ARN_CL_outlier_detection_##name,
#include "envoy_cluster_od_stats.def"
#undef ARN_STAT
#define ARN_STAT(kind, name, help) ARN_CL_ratelimit_##name,
#include "envoy_cluster_ratelimit_stats.def"
#undef ARN_STAT
	ARN_CL__COUNT
};

enum arn_http_stat {
#define ARN_STAT(kind, name, help) ARN_HTTP_##name,
#include "envoy_http_stats.def"
#undef ARN_STAT
	ARN_HTTP__COUNT
};

enum arn_http1_stat {
#define ARN_STAT(kind, name, help) ARN_H1S_##name,
#include "envoy_http1_stats.def"
#undef ARN_STAT
	ARN_H1S__COUNT
};

enum arn_http2_stat {
#define ARN_STAT(kind, name, help) ARN_H2_##name,
#include "envoy_http2_stats.def"
#undef ARN_STAT
	ARN_H2__COUNT
};

enum arn_listener_stat {
#define ARN_STAT(kind, name, help) ARN_LS_##name,
#include "envoy_listener_stats.def"
#undef ARN_STAT
	ARN_LS__COUNT
};

enum arn_listener_manager_stat {
#define ARN_STAT(kind, name, help) ARN_LM_##name,
#include "envoy_listener_manager_stats.def"
#undef ARN_STAT
	ARN_LM__COUNT
};

enum arn_xds_stat {
#define ARN_STAT(kind, name, help) ARN_XDS_##name,
#include "envoy_xds_stats.def"
#undef ARN_STAT
	ARN_XDS__COUNT
};

enum arn_control_plane_stat {
#define ARN_STAT(kind, name, help) ARN_CP_##name,
#include "envoy_control_plane_stats.def"
#undef ARN_STAT
	ARN_CP__COUNT
};

/* The L4 filters' sets (lib/l4; the scopes are taken by lib/config when it
 * converts the filter, and live as long as the filter's configuration). */
enum arn_tcp_proxy_stat {
#define ARN_STAT(kind, name, help) ARN_TCP_PROXY_##name,
#include "envoy_tcp_proxy_stats.def"
#undef ARN_STAT
	ARN_TCP_PROXY__COUNT
};

enum arn_rbac_stat {
#define ARN_STAT(kind, name, help) ARN_RBAC_##name,
#include "envoy_rbac_stats.def"
#undef ARN_STAT
	ARN_RBAC__COUNT
};

enum arn_ext_authz_stat {
#define ARN_STAT(kind, name, help) ARN_EXT_AUTHZ_##name,
#include "envoy_ext_authz_stats.def"
#undef ARN_STAT
	ARN_EXT_AUTHZ__COUNT
};

enum arn_cors_stat {
#define ARN_STAT(kind, name, help) ARN_CORS_##name,
#include "envoy_cors_stats.def"
#undef ARN_STAT
	ARN_CORS__COUNT
};

enum arn_fault_stat {
#define ARN_STAT(kind, name, help) ARN_FAULT_##name,
#include "envoy_fault_stats.def"
#undef ARN_STAT
	ARN_FAULT__COUNT
};

enum arn_basic_auth_stat {
#define ARN_STAT(kind, name, help) ARN_BASIC_AUTH_##name,
#include "envoy_basic_auth_stats.def"
#undef ARN_STAT
	ARN_BASIC_AUTH__COUNT
};

enum arn_csrf_stat {
#define ARN_STAT(kind, name, help) ARN_CSRF_##name,
#include "envoy_csrf_stats.def"
#undef ARN_STAT
	ARN_CSRF__COUNT
};

enum arn_oauth2_stat {
#define ARN_STAT(kind, name, help) ARN_OAUTH2_##name,
#include "envoy_oauth2_stats.def"
#undef ARN_STAT
	ARN_OAUTH2__COUNT
};

enum arn_jwt_authn_stat {
#define ARN_STAT(kind, name, help) ARN_JWT_AUTHN_##name,
#include "envoy_jwt_authn_stats.def"
#undef ARN_STAT
	ARN_JWT_AUTHN__COUNT
};

enum arn_rbac_shadow_stat {
#define ARN_STAT(kind, name, help) ARN_RBAC_SHADOW_##name,
#include "envoy_rbac_shadow_stats.def"
#undef ARN_STAT
	ARN_RBAC_SHADOW__COUNT
};

enum arn_local_ratelimit_stat {
#define ARN_STAT(kind, name, help) ARN_LRL_##name,
#include "envoy_local_ratelimit_stats.def"
#undef ARN_STAT
	ARN_LRL__COUNT
};

enum arn_http_local_ratelimit_stat {
#define ARN_STAT(kind, name, help) ARN_HLRL_##name,
#include "envoy_http_local_ratelimit_stats.def"
#undef ARN_STAT
	ARN_HLRL__COUNT
};

enum arn_mcp_backend_stat {
#define ARN_STAT(kind, name, help) ARN_MCPB_##name,
#include "envoy_mcp_backend_stats.def"
#undef ARN_STAT
	ARN_MCPB__COUNT
};

enum arn_connection_limit_stat {
#define ARN_STAT(kind, name, help) ARN_CXL_##name,
#include "envoy_connection_limit_stats.def"
#undef ARN_STAT
	ARN_CXL__COUNT
};

/* Prometheus tags of the L4 filters' tagged families (Envoy's tag names). */
#define ARN_STATS_TAG_TCP_PROXY "envoy_tcp_prefix"
#define ARN_STATS_TAG_LOCAL_RATELIMIT "envoy_local_network_ratelimit_prefix"
#define ARN_STATS_TAG_CONNECTION_LIMIT "envoy_connection_limit_prefix"

extern struct arn_stats_schema arn_stats_cluster_schema;
extern struct arn_stats_schema arn_stats_http_schema;
extern struct arn_stats_schema arn_stats_http1_schema;
extern struct arn_stats_schema arn_stats_http2_schema;
extern struct arn_stats_schema arn_stats_listener_schema;
extern struct arn_stats_schema arn_stats_cds_schema;
extern struct arn_stats_schema arn_stats_lds_schema;
extern struct arn_stats_schema arn_stats_listener_manager_schema;
extern struct arn_stats_schema arn_stats_rds_schema;
extern struct arn_stats_schema arn_stats_eds_schema;
extern struct arn_stats_schema arn_stats_sds_schema;
extern struct arn_stats_schema arn_stats_control_plane_schema;
/* tcp.<stat_prefix>.* (tag ARN_STATS_TAG_TCP_PROXY) */
extern struct arn_stats_schema arn_stats_tcp_proxy_schema;
/* <prefix>.rbac.* and <prefix>.rbac.<shadow prefix>.* (untagged, arn_stats_scope_get_named) */
extern struct arn_stats_schema arn_stats_rbac_schema;
extern struct arn_stats_schema arn_stats_rbac_shadow_schema;
/* http.<prefix>.ext_authz.* (untagged, arn_stats_scope_get_named) */
extern struct arn_stats_schema arn_stats_ext_authz_schema;
/* http.<prefix>.cors.* (untagged, arn_stats_scope_get_named) */
extern struct arn_stats_schema arn_stats_cors_schema;
/* http.<prefix>.fault.* (untagged, arn_stats_scope_get_named) */
extern struct arn_stats_schema arn_stats_fault_schema;
/* http.<prefix>.basic_auth.* (untagged, arn_stats_scope_get_named) */
extern struct arn_stats_schema arn_stats_basic_auth_schema;
/* http.<prefix>.csrf.* (untagged, arn_stats_scope_get_named) */
extern struct arn_stats_schema arn_stats_csrf_schema;
/* http.<prefix>.oauth2.oauth_* (untagged, arn_stats_scope_get_named) */
extern struct arn_stats_schema arn_stats_oauth2_schema;
/* http.<prefix>.jwt_authn.* (untagged, arn_stats_scope_get_named) */
extern struct arn_stats_schema arn_stats_jwt_authn_schema;
/* local_rate_limit.<stat_prefix>.* (tag ARN_STATS_TAG_LOCAL_RATELIMIT) */
extern struct arn_stats_schema arn_stats_local_ratelimit_schema;
/* <stat_prefix>.http_local_rate_limit.* (untagged, arn_stats_scope_get_named) */
extern struct arn_stats_schema arn_stats_http_local_ratelimit_schema;
/* mcp.<ToolSet>.backend.<backend>.* (untagged, arn_stats_scope_get_named) */
extern struct arn_stats_schema arn_stats_mcp_backend_schema;
/* connection_limit.<stat_prefix>.* (tag ARN_STATS_TAG_CONNECTION_LIMIT) */
extern struct arn_stats_schema arn_stats_connection_limit_schema;

enum arn_api_key_auth_stat {
#define ARN_STAT(kind, name, help) ARN_API_KEY_AUTH_##name,
#include "envoy_api_key_auth_stats.def"
#undef ARN_STAT
	ARN_API_KEY_AUTH__COUNT
};
enum arn_cred_injector_stat {
#define ARN_STAT(kind, name, help) ARN_CRED_INJECTOR_##name,
#include "envoy_cred_injector_stats.def"
#undef ARN_STAT
	ARN_CRED_INJECTOR__COUNT
};
/* http.<prefix>.api_key_auth.* and http.<prefix>.credential_injector.*
 * (untagged, arn_stats_scope_get_named) */
extern struct arn_stats_schema arn_stats_api_key_auth_schema;
extern struct arn_stats_schema arn_stats_cred_injector_schema;
enum arn_ext_proc_stat {
#define ARN_STAT(kind, name, help) ARN_EXT_PROC_##name,
#include "envoy_ext_proc_stats.def"
#undef ARN_STAT
	ARN_EXT_PROC__COUNT
};
/* http.<prefix>.ext_proc[.<its stat_prefix>].* (untagged, arn_stats_scope_get_named) */
extern struct arn_stats_schema arn_stats_ext_proc_schema;
enum arn_lua_stat {
#define ARN_STAT(kind, name, help) ARN_LUA_##name,
#include "envoy_lua_stats.def"
#undef ARN_STAT
	ARN_LUA__COUNT
};
/* http.<prefix>.lua[.<its stat_prefix>].* (untagged, arn_stats_scope_get_named) */
extern struct arn_stats_schema arn_stats_lua_schema;

/* tracing.opentelemetry.* (untagged; the OpenTelemetry tracer's) */
enum arn_otel_stat {
#define ARN_STAT(kind, name, help) ARN_OTEL_##name,
#include "envoy_otel_stats.def"
#undef ARN_STAT
	ARN_OTEL__COUNT
};
extern struct arn_stats_schema arn_stats_otel_schema;
enum arn_zipkin_stat {
#define ARN_STAT(kind, name, help) ARN_ZIPKIN_##name,
#include "envoy_zipkin_stats.def"
#undef ARN_STAT
	ARN_ZIPKIN__COUNT
};
extern struct arn_stats_schema arn_stats_zipkin_schema;

/**
 * The code-class stat for HTTP @p status, given the schema's 1xx stat
 * (ARN_CL_upstream_rq_1xx or ARN_HTTP_downstream_rq_1xx); the 1xx-5xx stats
 * are consecutive in both. A status outside 100-599 counts as 5xx.
 */
static inline unsigned arn_stats_code_class(unsigned stat_1xx, unsigned status)
{
	unsigned c = status / 100;
	return stat_1xx + (c >= 1 && c <= 5 ? c - 1 : 4);
}

/* proxy_proto.[<prefix>.]* (untagged, arn_stats_scope_get_named): Envoy's
 * counters (ARN_PPS_<id>), then ARN_PPS__ERR + enum arn_pp_err - 1 for
 * each refusal reason (error.<name>) */
enum arn_proxy_proto_stat {
#define ARN_PP_STAT(id, name, help) ARN_PPS_##id,
#include "envoy_proxy_proto_stats.def"
#undef ARN_PP_STAT
	ARN_PPS__ERR
};
extern struct arn_stats_schema arn_stats_proxy_proto_schema;

/* access_logs.open_telemetry_access_log.* (untagged; the OpenTelemetry
 * access logger's, lib/http/http_glog.c) */
enum arn_glog_stat {
#define ARN_STAT(kind, name, help) ARN_GLOG_##name,
#include "envoy_glog_stats.def"
#undef ARN_STAT
	ARN_GLOG__COUNT
};
extern struct arn_stats_schema arn_stats_glog_otel_schema;
/* access_logs.grpc_access_log.* (Envoy's ALS, HTTP and TCP): the same */
extern struct arn_stats_schema arn_stats_glog_als_schema;

#endif
