/* Envoy's standard statistic sets (arn_stats_envoy.h). */
#include "arn_stats_envoy.h"

static const struct arn_stat_def cluster_defs[] = {
#define ARN_STAT(kind, name, help) ARN_STAT_DEF(kind, name, help),
#include "envoy_cluster_stats.def"
#undef ARN_STAT
/* Envoy's client codec statistics, under the cluster: "http2.rx_reset" */
#define ARN_STAT(kind, name, help) {"http2." #name, ARN_STAT_##kind, help},
#include "envoy_cluster_http2_stats.def"
#undef ARN_STAT
/* Envoy's active health checks, under the cluster: "health_check.attempt" */
#define ARN_STAT(kind, name, help) {"health_check." #name, ARN_STAT_##kind, help},
#include "envoy_cluster_hc_stats.def"
#undef ARN_STAT
/* Envoy's outlier detection: "outlier_detection.ejections_active" */
#define ARN_STAT(kind, name, help) {"outlier_detection." #name, ARN_STAT_##kind, help},
#include "envoy_cluster_od_stats.def"
#undef ARN_STAT
/* Envoy's global rate limit filter, under the route's cluster: "ratelimit.ok" */
#define ARN_STAT(kind, name, help) {"ratelimit." #name, ARN_STAT_##kind, help},
#include "envoy_cluster_ratelimit_stats.def"
#undef ARN_STAT
};
static const struct arn_stat_def http_defs[] = {
#define ARN_STAT(kind, name, help) ARN_STAT_DEF(kind, name, help),
#include "envoy_http_stats.def"
#undef ARN_STAT
};
static const struct arn_stat_def http1_defs[] = {
#define ARN_STAT(kind, name, help) ARN_STAT_DEF(kind, name, help),
#include "envoy_http1_stats.def"
#undef ARN_STAT
};
static const struct arn_stat_def http2_defs[] = {
#define ARN_STAT(kind, name, help) ARN_STAT_DEF(kind, name, help),
#include "envoy_http2_stats.def"
#undef ARN_STAT
};
static const struct arn_stat_def listener_defs[] = {
#define ARN_STAT(kind, name, help) ARN_STAT_DEF(kind, name, help),
#include "envoy_listener_stats.def"
#undef ARN_STAT
};
static const struct arn_stat_def lm_defs[] = {
#define ARN_STAT(kind, name, help) ARN_STAT_DEF(kind, name, help),
#include "envoy_listener_manager_stats.def"
#undef ARN_STAT
};
static const struct arn_stat_def xds_defs[] = {
#define ARN_STAT(kind, name, help) ARN_STAT_DEF(kind, name, help),
#include "envoy_xds_stats.def"
#undef ARN_STAT
};
static const struct arn_stat_def cp_defs[] = {
#define ARN_STAT(kind, name, help) ARN_STAT_DEF(kind, name, help),
#include "envoy_control_plane_stats.def"
#undef ARN_STAT
};

static const struct arn_stat_def tcp_proxy_defs[] = {
#define ARN_STAT(kind, name, help) ARN_STAT_DEF(kind, name, help),
#include "envoy_tcp_proxy_stats.def"
#undef ARN_STAT
};
static const struct arn_stat_def rbac_defs[] = {
#define ARN_STAT(kind, name, help) ARN_STAT_DEF(kind, name, help),
#include "envoy_rbac_stats.def"
#undef ARN_STAT
};
static const struct arn_stat_def ext_authz_defs[] = {
#define ARN_STAT(kind, name, help) ARN_STAT_DEF(kind, name, help),
#include "envoy_ext_authz_stats.def"
#undef ARN_STAT
};
static const struct arn_stat_def cors_defs[] = {
#define ARN_STAT(kind, name, help) ARN_STAT_DEF(kind, name, help),
#include "envoy_cors_stats.def"
#undef ARN_STAT
};
static const struct arn_stat_def fault_defs[] = {
#define ARN_STAT(kind, name, help) ARN_STAT_DEF(kind, name, help),
#include "envoy_fault_stats.def"
#undef ARN_STAT
};
static const struct arn_stat_def basic_auth_defs[] = {
#define ARN_STAT(kind, name, help) ARN_STAT_DEF(kind, name, help),
#include "envoy_basic_auth_stats.def"
#undef ARN_STAT
};
static const struct arn_stat_def csrf_defs[] = {
#define ARN_STAT(kind, name, help) ARN_STAT_DEF(kind, name, help),
#include "envoy_csrf_stats.def"
#undef ARN_STAT
};
static const struct arn_stat_def oauth2_defs[] = {
#define ARN_STAT(kind, name, help) ARN_STAT_DEF(kind, name, help),
#include "envoy_oauth2_stats.def"
#undef ARN_STAT
};
static const struct arn_stat_def jwt_authn_defs[] = {
#define ARN_STAT(kind, name, help) ARN_STAT_DEF(kind, name, help),
#include "envoy_jwt_authn_stats.def"
#undef ARN_STAT
};
static const struct arn_stat_def rbac_shadow_defs[] = {
#define ARN_STAT(kind, name, help) ARN_STAT_DEF(kind, name, help),
#include "envoy_rbac_shadow_stats.def"
#undef ARN_STAT
};
static const struct arn_stat_def lrl_defs[] = {
#define ARN_STAT(kind, name, help) ARN_STAT_DEF(kind, name, help),
#include "envoy_local_ratelimit_stats.def"
#undef ARN_STAT
};
static const struct arn_stat_def hlrl_defs[] = {
#define ARN_STAT(kind, name, help) ARN_STAT_DEF(kind, name, help),
#include "envoy_http_local_ratelimit_stats.def"
#undef ARN_STAT
};
static const struct arn_stat_def mcpb_defs[] = {
#define ARN_STAT(kind, name, help) ARN_STAT_DEF(kind, name, help),
#include "envoy_mcp_backend_stats.def"
#undef ARN_STAT
};
static const struct arn_stat_def cxl_defs[] = {
#define ARN_STAT(kind, name, help) ARN_STAT_DEF(kind, name, help),
#include "envoy_connection_limit_stats.def"
#undef ARN_STAT
};

_Static_assert(ARN_CL_upstream_rq_5xx == ARN_CL_upstream_rq_1xx + 4, "code classes in order");
_Static_assert(ARN_HTTP_downstream_rq_5xx == ARN_HTTP_downstream_rq_1xx + 4,
	       "code classes in order");

struct arn_stats_schema arn_stats_cluster_schema = ARN_STATS_SCHEMA("cluster", cluster_defs);
struct arn_stats_schema arn_stats_http_schema = ARN_STATS_SCHEMA("http", http_defs);
struct arn_stats_schema arn_stats_http1_schema = ARN_STATS_SCHEMA("http1", http1_defs);
struct arn_stats_schema arn_stats_http2_schema = ARN_STATS_SCHEMA("http2", http2_defs);
struct arn_stats_schema arn_stats_listener_schema = ARN_STATS_SCHEMA("listener", listener_defs);
struct arn_stats_schema arn_stats_cds_schema = ARN_STATS_SCHEMA("cluster_manager.cds", xds_defs);
struct arn_stats_schema arn_stats_lds_schema = ARN_STATS_SCHEMA("listener_manager.lds", xds_defs);
struct arn_stats_schema arn_stats_listener_manager_schema =
    ARN_STATS_SCHEMA("listener_manager", lm_defs);
struct arn_stats_schema arn_stats_rds_schema = ARN_STATS_SCHEMA("cluster_manager.rds", xds_defs);
struct arn_stats_schema arn_stats_eds_schema = ARN_STATS_SCHEMA("cluster_manager.eds", xds_defs);
struct arn_stats_schema arn_stats_sds_schema = ARN_STATS_SCHEMA("cluster_manager.sds", xds_defs);
struct arn_stats_schema arn_stats_control_plane_schema = ARN_STATS_SCHEMA("control_plane", cp_defs);
struct arn_stats_schema arn_stats_tcp_proxy_schema = ARN_STATS_SCHEMA("tcp", tcp_proxy_defs);
/* proxy_proto.[<prefix>.]*: Envoy's counters, then one per refusal reason */
static const struct arn_stat_def proxy_proto_defs[] = {
#define ARN_PP_STAT(id, name, help) {name, ARN_STAT_COUNTER, help},
#include "envoy_proxy_proto_stats.def"
#undef ARN_PP_STAT
#define ARN_PP_ERR(id, name, what) {"error." #name, ARN_STAT_COUNTER, what},
#include "../l4/arn_proxy_proto_err.def"
#undef ARN_PP_ERR
};
struct arn_stats_schema arn_stats_proxy_proto_schema =
    ARN_STATS_SCHEMA("proxy_proto", proxy_proto_defs);
/* the families of these two come from configuration (arn_stats_scope_get_named) */
struct arn_stats_schema arn_stats_rbac_schema = ARN_STATS_SCHEMA("rbac", rbac_defs);
struct arn_stats_schema arn_stats_ext_authz_schema = ARN_STATS_SCHEMA("ext_authz", ext_authz_defs);
struct arn_stats_schema arn_stats_cors_schema = ARN_STATS_SCHEMA("cors", cors_defs);
struct arn_stats_schema arn_stats_fault_schema = ARN_STATS_SCHEMA("fault", fault_defs);
struct arn_stats_schema arn_stats_basic_auth_schema =
    ARN_STATS_SCHEMA("basic_auth", basic_auth_defs);
struct arn_stats_schema arn_stats_csrf_schema = ARN_STATS_SCHEMA("csrf", csrf_defs);
struct arn_stats_schema arn_stats_oauth2_schema = ARN_STATS_SCHEMA("oauth2", oauth2_defs);
struct arn_stats_schema arn_stats_jwt_authn_schema = ARN_STATS_SCHEMA("jwt_authn", jwt_authn_defs);
struct arn_stats_schema arn_stats_rbac_shadow_schema =
    ARN_STATS_SCHEMA("rbac_shadow", rbac_shadow_defs);
struct arn_stats_schema arn_stats_local_ratelimit_schema =
    ARN_STATS_SCHEMA("local_rate_limit", lrl_defs);
struct arn_stats_schema arn_stats_http_local_ratelimit_schema =
    ARN_STATS_SCHEMA("http_local_rate_limit", hlrl_defs);
struct arn_stats_schema arn_stats_mcp_backend_schema = ARN_STATS_SCHEMA("mcp_backend", mcpb_defs);
struct arn_stats_schema arn_stats_connection_limit_schema =
    ARN_STATS_SCHEMA("connection_limit", cxl_defs);
static const struct arn_stat_def api_key_auth_defs[] = {
#define ARN_STAT(kind, name, help) ARN_STAT_DEF(kind, name, help),
#include "envoy_api_key_auth_stats.def"
#undef ARN_STAT
};
static const struct arn_stat_def cred_injector_defs[] = {
#define ARN_STAT(kind, name, help) ARN_STAT_DEF(kind, name, help),
#include "envoy_cred_injector_stats.def"
#undef ARN_STAT
};
struct arn_stats_schema arn_stats_api_key_auth_schema =
    ARN_STATS_SCHEMA("api_key_auth", api_key_auth_defs);
struct arn_stats_schema arn_stats_cred_injector_schema =
    ARN_STATS_SCHEMA("credential_injector", cred_injector_defs);
static const struct arn_stat_def ext_proc_defs[] = {
#define ARN_STAT(kind, name, help) ARN_STAT_DEF(kind, name, help),
#include "envoy_ext_proc_stats.def"
#undef ARN_STAT
};
struct arn_stats_schema arn_stats_ext_proc_schema = ARN_STATS_SCHEMA("ext_proc", ext_proc_defs);
static const struct arn_stat_def otel_defs[] = {
#define ARN_STAT(kind, name, help) ARN_STAT_DEF(kind, name, help),
#include "envoy_otel_stats.def"
#undef ARN_STAT
};
struct arn_stats_schema arn_stats_otel_schema = ARN_STATS_SCHEMA("tracing.opentelemetry", otel_defs);
static const struct arn_stat_def zipkin_defs[] = {
#define ARN_STAT(kind, name, help) ARN_STAT_DEF(kind, name, help),
#include "envoy_zipkin_stats.def"
#undef ARN_STAT
};
struct arn_stats_schema arn_stats_zipkin_schema = ARN_STATS_SCHEMA("tracing.zipkin", zipkin_defs);
static const struct arn_stat_def lua_defs[] = {
#define ARN_STAT(kind, name, help) ARN_STAT_DEF(kind, name, help),
#include "envoy_lua_stats.def"
#undef ARN_STAT
};
struct arn_stats_schema arn_stats_lua_schema = ARN_STATS_SCHEMA("lua", lua_defs);
static const struct arn_stat_def glog_defs[] = {
#define ARN_STAT(kind, name, help) ARN_STAT_DEF(kind, name, help),
#include "envoy_glog_stats.def"
#undef ARN_STAT
};
struct arn_stats_schema arn_stats_glog_otel_schema =
    ARN_STATS_SCHEMA("access_logs.open_telemetry_access_log", glog_defs);
struct arn_stats_schema arn_stats_glog_als_schema =
    ARN_STATS_SCHEMA("access_logs.grpc_access_log", glog_defs);
