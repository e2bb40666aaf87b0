/*
 * The configuration model of the L4 filters and of the HTTP filters that
 * share their engines (lib/l4 runs them; conv_l4.c builds them):
 *
 *   envoy.filters.network.tcp_proxy          struct arn_cfg_tcp_proxy
 *   envoy.filters.network.rbac               struct arn_cfg_rbac_filter
 *   envoy.filters.network.local_ratelimit    struct arn_cfg_local_ratelimit
 *   envoy.filters.network.connection_limit   struct arn_cfg_connection_limit
 *   envoy.filters.http.rbac                  struct arn_cfg_rbac_filter (+ RBACPerRoute)
 *   envoy.filters.http.local_ratelimit       struct arn_cfg_http_ratelimit (+ per route)
 *
 * Everything here lives inside the object that configures it (a listener,
 * a route table) and as long as it, like the rest of the model; pointers
 * point into the same pool.
 *
 * Statistics: the model keeps each filter's stat_prefix as Envoy names it;
 * the data path takes the scopes (lib/stats/arn_stats_envoy.h) when it
 * instantiates the filter, so lib/config stays free of lib/stats.
 *
 * Shared state: the token buckets and connection counts that Envoy shares
 * between the workers of a process, per filter configuration, are the
 * only members written after conversion. They are zero after conversion
 * and only ever changed by lib/l4 with atomic operations, from any worker.
 * A filter configuration replaced by an update starts a fresh bucket, as
 * Envoy's does.
 */
#ifndef ARN_CONFIG_L4_H
#define ARN_CONFIG_L4_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---------------------------------------------------------------------------
 * Which of these filters the store accepts
 */

/*
 * A filter the store accepted but the data plane does not run would let
 * through what the operator meant to refuse (an RBAC policy, a rate
 * limit), so the converters refuse these filters until the data plane
 * says it runs them: the application sets the features its workers
 * implement, once, before any configuration is converted.
 */
enum {
	/* tcp_proxy and the network rbac / local_ratelimit / connection_limit filters */
	ARN_CONFIG_FEATURE_L4 = 1u << 0,
	/* the HTTP rbac and local_ratelimit filters and their per-route
	 * configurations (typed_per_filter_config) */
	ARN_CONFIG_FEATURE_HTTP_L4 = 1u << 1,
};

/** Set the features the data plane runs (control lcore, before conversions). */
void arn_config_set_features(uint32_t features);
/** The features set by arn_config_set_features() (0 by default). */
uint32_t arn_config_features(void);

/* ---------------------------------------------------------------------------
 * Token buckets (envoy.type.v3.TokenBucket) and their shared state
 */

/**
 * A token bucket's state, shared by the workers that use it (lib/l4's
 * arn_tbucket.h owns the encoding): the tick its fill schedule started at
 * (+ 1, so that 0 means "not started") and one word with the number of the
 * last fill applied and the tokens left, changed with compare-and-swap
 * only. Padded to a cache line so that two buckets never share one.
 */
struct arn_cfg_bucket_state {
	uint64_t epoch1;
	uint64_t word;
	uint8_t pad[48];
};

struct arn_cfg_token_bucket {
	uint32_t max_tokens;	   /* > 0; also the tokens a bucket starts with */
	uint32_t tokens_per_fill;  /* 1 unless set */
	uint32_t fill_interval_ms; /* > 0; >= 50 for the filters (Envoy's floor) */
};

/* ---------------------------------------------------------------------------
 * RBAC (envoy.config.rbac.v3.RBAC)
 */
enum arn_cfg_rbac_rule_kind {
	ARN_CFG_RBAC_ANY = 0,
	ARN_CFG_RBAC_AND, /* and_rules / and_ids: every kid */
	ARN_CFG_RBAC_OR,  /* or_rules / or_ids: any kid */
	ARN_CFG_RBAC_NOT, /* not_rule / not_id: kids[0] does not match */
	/* permissions */
	ARN_CFG_RBAC_DST_IP,	     /* destination_ip: cidr on the local address */
	ARN_CFG_RBAC_DST_PORT,	     /* destination_port: port_lo is the local port */
	ARN_CFG_RBAC_DST_PORT_RANGE, /* destination_port_range: [port_lo, port_hi) */
	ARN_CFG_RBAC_SNI,	     /* requested_server_name: str ("" without SNI) */
	/* both (HTTP only) */
	ARN_CFG_RBAC_URL_PATH, /* url_path: str on the path without query and fragment */
	ARN_CFG_RBAC_HEADER,   /* header: as route header matching does */
	/* principals */
	ARN_CFG_RBAC_SOURCE_IP,	       /* source_ip: the connection's peer */
	ARN_CFG_RBAC_DIRECT_REMOTE_IP, /* direct_remote_ip: the connection's peer */
	ARN_CFG_RBAC_REMOTE_IP,	       /* remote_ip: the client address the HCM resolved */
	ARN_CFG_RBAC_AUTHENTICATED,    /* authenticated: see arn_rbac.h */
	/* a custom_response matcher's inputs (the response): str on the
	 * status in decimal, on its class ("5xx"), on "true" / "false" (a
	 * local reply or not); header (its values joined with ',') */
	ARN_CFG_RBAC_RESP_STATUS,
	ARN_CFG_RBAC_RESP_CLASS,
	ARN_CFG_RBAC_RESP_LOCAL,
	ARN_CFG_RBAC_RESP_HEADER,
	/* a CEL custom_match of Envoy Gateway's status range: the status in
	 * [port_lo, port_hi] */
	ARN_CFG_RBAC_RESP_RANGE,
};

struct arn_cfg_rbac_rule {
	uint8_t kind; /* enum arn_cfg_rbac_rule_kind */
	bool has_str; /* AUTHENTICATED: principal_name given */
	uint32_t port_lo, port_hi;
	struct arn_cfg_cidr cidr;
	struct arn_cfg_str_match str;
	struct arn_cfg_header_match *header; /* HEADER */
	struct arn_cfg_rbac_rule *kids;	     /* AND, OR, NOT */
	size_t n_kids;
};

struct arn_cfg_rbac_policy {
	const char *name; /* the policies map's key */
	size_t name_len;
	struct arn_cfg_rbac_rule *permissions; /* any of them */
	size_t n_permissions;
	struct arn_cfg_rbac_rule *principals; /* any of them */
	size_t n_principals;
};

enum arn_cfg_rbac_action {
	ARN_CFG_RBAC_ALLOW = 0, /* allowed when a policy matches */
	ARN_CFG_RBAC_DENY,	/* denied when a policy matches */
	ARN_CFG_RBAC_LOG,	/* always allowed; the matched policy is reported */
};

/*
 * One field matcher of an RBAC `matcher` (xds.type.matcher.v3.Matcher's
 * matcher_list), or its on_no_match: when the predicate matches, the
 * action (an envoy.config.rbac.v3.Action) decides, and its name is the
 * effective policy's (policy.name; policy has no permissions or
 * principals). Predicates are rule trees: single_predicate on
 * HttpRequestHeaderMatchInput is a HEADER rule, or_matcher / and_matcher /
 * not_matcher are OR / AND / NOT.
 */
struct arn_cfg_rbac_mentry {
	struct arn_cfg_rbac_rule predicate; /* unused for on_no_match */
	struct arn_cfg_rbac_policy policy;
	uint8_t action; /* enum arn_cfg_rbac_action */
};

struct arn_cfg_rbac_rules {
	/* enum arn_cfg_rbac_action; for a matcher, LOG when one of its
	 * actions is LOG (Envoy then sets access_log_hint), else ALLOW: the
	 * matched entry's action decides */
	uint8_t action;
	/* by name, byte order: Envoy keeps policies in a std::map and reports
	 * the first match in that order */
	struct arn_cfg_rbac_policy *policies;
	size_t n_policies;
	/* `matcher` instead of `rules` (Envoy's RBAC matcher engine): the
	 * first entry whose predicate matches decides; none matches: the
	 * on_no_match entry if there is one, else denied with no policy */
	bool matcher;
	bool has_no_match;
	struct arn_cfg_rbac_mentry *entries;
	size_t n_entries;
	struct arn_cfg_rbac_mentry no_match;
};

enum arn_cfg_rbac_enforcement {
	ARN_CFG_RBAC_ONE_TIME = 0, /* ONE_TIME_ON_FIRST_BYTE */
	ARN_CFG_RBAC_CONTINUOUS,   /* CONTINUOUS: on every read */
};

/**
 * One RBAC filter (network or HTTP), or an HTTP route's RBACPerRoute
 * (which replaces the filter's rules for that route; rules and shadow both
 * NULL: no RBAC there).
 */
struct arn_cfg_rbac_filter {
	const struct arn_cfg_rbac_rules *rules;	 /* NULL: nothing enforced */
	const struct arn_cfg_rbac_rules *shadow; /* NULL: no shadow rules */
	/* network: stat_prefix (counts under <stat_prefix>.rbac.*); HTTP: ""
	 * (http.<HCM stat_prefix>.rbac.*) */
	const char *stat_prefix;
	const char *shadow_stat_prefix; /* shadow_rules_stat_prefix, "" unless set */
	uint32_t delay_deny_ms;		/* network: delay_deny */
	uint8_t enforcement;		/* network: enum arn_cfg_rbac_enforcement */
};

/* ---------------------------------------------------------------------------
 * envoy.filters.network.local_ratelimit and connection_limit
 */
struct arn_cfg_local_ratelimit {
	const char *stat_prefix; /* local_rate_limit.<stat_prefix>.* */
	bool enabled;		 /* runtime_enabled.default_value (true without it) */
	struct arn_cfg_token_bucket bucket;
	struct arn_cfg_bucket_state *state; /* shared by the workers */
};

/* connection_limit filters in one chain: a connection remembers which of
 * them count it in a byte (lib/http), so a chain with more is refused */
#define ARN_CFG_L4_MAX_CONNECTION_LIMITS 8

struct arn_cfg_connection_limit {
	const char *stat_prefix;  /* connection_limit.<stat_prefix>.* */
	bool enabled;		  /* runtime_enabled.default_value (true without it) */
	uint64_t max_connections; /* >= 1 */
	uint32_t delay_ms;	  /* close a refused connection after this long */
	uint64_t *count;	  /* shared: the connections open now */
};

/* ---------------------------------------------------------------------------
 * envoy.filters.network.tcp_proxy
 */
struct arn_cfg_access_log;

struct arn_cfg_tcp_proxy_cluster {
	struct arn_cfg_ref cluster;
	uint32_t weight; /* >= 1 */
};

struct arn_cfg_tcp_proxy {
	const char *stat_prefix;    /* tcp.<stat_prefix>.* */
	struct arn_cfg_ref cluster; /* len 0 with weighted clusters */
	struct arn_cfg_tcp_proxy_cluster *weighted;
	size_t n_weighted;
	uint64_t total_weight;
	uint32_t idle_timeout_ms;			/* 1 h unless set; 0: none */
	uint32_t max_connect_attempts;			/* 1 unless set */
	uint32_t max_downstream_connection_duration_ms; /* 0: none */
	uint32_t access_log_flush_interval_ms;		/* 0: log at the end only */
	bool flush_access_log_on_connected;
	bool hash_source_ip; /* hash_policy source_ip (for hashing load balancers) */
	struct arn_cfg_access_log *access_logs;
	size_t n_access_logs;
};

/** A network filter that runs before the chain's terminal one. */
enum arn_cfg_l4_filter_kind {
	ARN_CFG_L4_RBAC = 0,
	ARN_CFG_L4_LOCAL_RATELIMIT,
	ARN_CFG_L4_CONNECTION_LIMIT,
};

struct arn_cfg_l4_filter {
	uint8_t kind; /* enum arn_cfg_l4_filter_kind */
	const char *name;
	const struct arn_cfg_rbac_filter *rbac;
	struct arn_cfg_local_ratelimit *ratelimit;
	struct arn_cfg_connection_limit *connection_limit;
};

/* ---------------------------------------------------------------------------
 * envoy.filters.http.local_ratelimit
 */
struct arn_cfg_rl_entry {
	const char *key;
	size_t key_len;
	const char *value;
	size_t value_len;
};

/** LocalRateLimitDescriptor: a descriptor to match exactly and its bucket. */
struct arn_cfg_rl_descriptor {
	struct arn_cfg_rl_entry *entries;
	size_t n_entries;
	struct arn_cfg_token_bucket bucket;
	struct arn_cfg_bucket_state *state; /* shared */
};

/** envoy.type.v3.FractionalPercent: numerator out of denominator. */
struct arn_cfg_fraction {
	uint32_t numerator;
	uint32_t denominator; /* 100, 10000 or 1000000 */
};

/** Whether a request with the uniform @p random falls in @p f. */
static inline bool arn_cfg_fraction_hit(const struct arn_cfg_fraction *f, uint64_t random)
{
	return f->denominator && random % f->denominator < f->numerator;
}

enum arn_cfg_vh_rate_limits {
	ARN_CFG_VH_RL_OVERRIDE = 0, /* the virtual host's only when the route has none */
	ARN_CFG_VH_RL_INCLUDE,
	ARN_CFG_VH_RL_IGNORE,
};

/*
 * local_rate_limit_per_downstream_connection: the buckets each downstream
 * connection keeps for itself (the default one and one per descriptor),
 * inside the connection (no allocation on workers); a configuration that
 * needs more is refused.
 */
#define ARN_CFG_HLRL_CONN_BUCKETS 8

struct arn_cfg_http_ratelimit {
	const char *stat_prefix; /* <stat_prefix>.http_local_rate_limit.* */
	uint16_t status;	 /* 429, or HttpStatus.code when it is 400 or more */
	bool has_bucket;	 /* token_bucket given (required per route) */
	struct arn_cfg_token_bucket bucket;
	struct arn_cfg_bucket_state *state; /* shared by the workers */
	/* filter_enabled / filter_enforced default_value; absent: 0 % (Envoy:
	 * without filter_enabled the filter does nothing) */
	struct arn_cfg_fraction enabled;
	struct arn_cfg_fraction enforced;
	struct arn_cfg_header_ops headers; /* request_headers_to_add_when_not_enforced
					      (request_add), response_headers_to_add */
	struct arn_cfg_rl_descriptor *descriptors;
	size_t n_descriptors;
	uint32_t stage;		     /* 0..10 */
	bool per_connection;	     /* local_rate_limit_per_downstream_connection */
	bool x_ratelimit_headers;    /* enable_x_ratelimit_headers: DRAFT_VERSION_03 */
	uint8_t vh_rate_limits;	     /* enum arn_cfg_vh_rate_limits */
	bool always_consume_default; /* always_consume_default_token_bucket (true) */
	bool resource_exhausted;     /* rate_limited_as_resource_exhausted */
};

/* ---------------------------------------------------------------------------
 * Routes' and virtual hosts' rate_limits (envoy.config.route.v3.RateLimit):
 * the descriptors a request produces, which the local_ratelimit filter
 * matches against its own (lib/l4's arn_rldesc.h builds them)
 */
enum arn_cfg_rl_action_kind {
	ARN_CFG_RL_SOURCE_CLUSTER = 0,	  /* ("source_cluster", the local service cluster) */
	ARN_CFG_RL_DESTINATION_CLUSTER,	  /* ("destination_cluster", the route's cluster) */
	ARN_CFG_RL_REQUEST_HEADERS,	  /* (key, the header's value) */
	ARN_CFG_RL_REMOTE_ADDRESS,	  /* ("remote_address", the client address) */
	ARN_CFG_RL_GENERIC_KEY,		  /* (key, value); key "generic_key" unless set */
	ARN_CFG_RL_HEADER_VALUE_MATCH,	  /* (key, value) when headers match == expect_match;
					     key "header_match" unless set */
	ARN_CFG_RL_MASKED_REMOTE_ADDRESS, /* ("masked_remote_address", "a.b.c.d/len") */
};

struct arn_cfg_rl_action {
	uint8_t kind;	     /* enum arn_cfg_rl_action_kind */
	bool skip_if_absent; /* REQUEST_HEADERS */
	bool expect_match;   /* HEADER_VALUE_MATCH (true unless set) */
	uint8_t mask_len;    /* MASKED_REMOTE_ADDRESS: v4_prefix_mask_len (32 unless set) */
	const char *header;  /* REQUEST_HEADERS: header_name, lower case */
	size_t header_len;
	const char *key; /* the entry's key */
	size_t key_len;
	const char *value; /* GENERIC_KEY, HEADER_VALUE_MATCH: descriptor_value;
			    * SOURCE_CLUSTER: the node's cluster (the bootstrap's) */
	size_t value_len;
	struct arn_cfg_header_match *headers; /* HEADER_VALUE_MATCH: all must match */
	size_t n_headers;
};

/*
 * What lib/l4 builds a request's descriptors in (arn_rldesc.h), without
 * allocating on a worker; lib/config refuses a configuration beyond them,
 * so that a descriptor that does not fit is one no configuration names:
 *   - ARN_CFG_RL_MAX_ACTIONS: a RateLimit's actions (a descriptor's entries);
 *   - ARN_CFG_RL_DESC_BYTES: a descriptor's values, together;
 *   - ARN_CFG_RL_MAX_DESCRIPTORS: the descriptors one request may produce:
 *     a route's rate_limits and its virtual host's, together.
 */
#define ARN_CFG_RL_MAX_ACTIONS 8
#define ARN_CFG_RL_DESC_BYTES 1024
#define ARN_CFG_RL_MAX_DESCRIPTORS 16

/** One RateLimit: a descriptor of one entry per action, if every action yields. */
struct arn_cfg_rate_limit {
	uint32_t stage; /* 0..10 */
	struct arn_cfg_rl_action *actions;
	size_t n_actions;
};

/* ---------------------------------------------------------------------------
 * typed_per_filter_config of routes and virtual hosts
 */
enum arn_cfg_per_filter_kind {
	ARN_CFG_PF_RBAC = 0,	    /* cfg: struct arn_cfg_rbac_filter (RBACPerRoute) */
	ARN_CFG_PF_LOCAL_RATELIMIT, /* cfg: struct arn_cfg_http_ratelimit */
	ARN_CFG_PF_EXT_AUTHZ,	    /* cfg: struct arn_cfg_ext_authz_route (ExtAuthzPerRoute) */
	ARN_CFG_PF_CORS,	    /* cfg: struct arn_cfg_cors (cors.v3.CorsPolicy) */
	ARN_CFG_PF_JWT_AUTHN, /* cfg: struct arn_cfg_jwt_per_route (jwt_authn PerRouteConfig) */
	ARN_CFG_PF_FAULT,     /* cfg: struct arn_cfg_fault (fault.v3.HTTPFault) */
	/* route.v3.FilterConfig: disabled (the filter is off at that level),
	 * or config left empty / of an optional unknown type (on, with the
	 * filter's own configuration); cfg NULL for both */
	ARN_CFG_PF_DISABLED,
	ARN_CFG_PF_ENABLED,
	/* cfg: struct arn_cfg_basic_auth_users (BasicAuthPerRoute) */
	ARN_CFG_PF_BASIC_AUTH,
	ARN_CFG_PF_STATEFUL_SESSION, /* cfg: struct arn_cfg_stateful_session (PerRoute) */
	ARN_CFG_PF_COMPRESSOR,	     /* cfg: struct arn_cfg_compressor_route (CompressorPerRoute) */
	ARN_CFG_PF_CSRF,	     /* cfg: struct arn_cfg_csrf (CsrfPolicy) */
	ARN_CFG_PF_API_KEY_AUTH,     /* cfg: struct arn_cfg_api_key_auth (ApiKeyAuthPerRoute) */
	ARN_CFG_PF_RATELIMIT,	     /* cfg: struct arn_cfg_rls_route (RateLimitPerRoute) */
	/* cfg: struct arn_cfg_header_mutation (HeaderMutationPerRoute) */
	ARN_CFG_PF_HEADER_MUTATION,
	/* cfg: struct arn_cfg_custom_response (custom_response.v3.CustomResponse) */
	ARN_CFG_PF_CUSTOM_RESPONSE,
	/* cfg: struct arn_cfg_buffer (BufferPerRoute's buffer) */
	ARN_CFG_PF_BUFFER,
	/* cfg: struct arn_cfg_ext_proc_route (ExtProcPerRoute) */
	ARN_CFG_PF_EXT_PROC,
	/* cfg: struct arn_cfg_lua_route (LuaPerRoute's name) */
	ARN_CFG_PF_LUA,
};

/* ---------------------------------------------------------------------------
 * envoy.filters.http.cors: one CorsPolicy, the per-filter
 * extensions.filters.http.cors.v3.CorsPolicy of a route or virtual host,
 * or their deprecated `cors` field (config.route.v3.CorsPolicy) when no
 * level has a per-filter one. As in Envoy's filter, each field left unset
 * (empty, or a wrapper absent) is taken from the next level out (the
 * route's, then its virtual host's); enabled and shadow are the most
 * specific policy's. Values are header values (no CR, LF, NUL).
 */
struct arn_cfg_cors {
	struct arn_cfg_str_match *origins; /* allow_origin_string_match */
	size_t n_origins;
	const char *allow_methods, *allow_headers, *expose_headers, *max_age; /* NULL: unset */
	uint32_t allow_methods_len, allow_headers_len, expose_headers_len, max_age_len;
	int8_t allow_credentials;     /* -1 unset, 0, 1 */
	int8_t allow_private_network; /* allow_private_network_access: -1, 0, 1 */
	int8_t forward_not_matching;  /* forward_not_matching_preflights: -1, 0, 1 */
	/* filter_enabled (unset: 100 %) and shadow_enabled (unset: 0), their
	 * default_value (Arion has no runtime) */
	struct arn_cfg_fraction enabled, shadow;
};

/* ---------------------------------------------------------------------------
 * envoy.filters.http.csrf (CsrfPolicy, the filter's or the most specific
 * level's per route): a POST, PUT, DELETE or PATCH whose source origin
 * (Origin's host and port, else Referer's) is not the request's own host
 * and port nor one of additional_origins is refused 403. Values of
 * filter_enabled / shadow_enabled are their default_value (no runtime).
 */
#define ARN_CFG_CSRF_MAX_ORIGINS 64

struct arn_cfg_csrf {
	struct arn_cfg_fraction enabled, shadow;
	struct arn_cfg_str_match *origins; /* additional_origins */
	size_t n_origins;
};

/* ---------------------------------------------------------------------------
 * envoy.filters.http.ext_authz with an http_service (docs/http.md): each
 * request (its head) is sent, as a sub-request with no body, to the
 * authorization cluster; 200 lets it through, any other answer is the
 * client's, a failure is status_on_error unless failure_mode_allow.
 * Header names are lower case; values have no CR, LF or NUL.
 */
/* with_request_body.max_request_bytes at most: what a check's buffer
 * holds besides the CheckRequest's other fields (HTTP_AUTHZ_GRPC_REQ) */
#define ARN_CFG_EXT_AUTHZ_BODY_MAX 32768u

struct arn_cfg_ext_authz_hdr {
	const char *name, *value;
	uint32_t name_len, value_len;
};

struct arn_cfg_ext_authz {
	struct arn_cfg_ref cluster; /* http_service.server_uri.cluster */
	uint32_t timeout_ms;	    /* server_uri.timeout (0: none) */
	const char *path_prefix;    /* "" unless set */
	uint32_t path_prefix_len;
	uint16_t status_on_error; /* 403 unless set */
	bool failure_mode_allow, failure_mode_allow_header_add;
	bool deny_at_disable; /* deny_at_disable's default_value */
	/* filter_enabled's default_value (unset: 100 %) */
	struct arn_cfg_fraction enabled;
	const char *stat_prefix; /* NULL: none (http.<hcm>.ext_authz.<stat_prefix>.*) */
	/* allowed_headers (or authorization_request.allowed_headers): the
	 * client's headers that go to the service besides host, :method /
	 * :path, content-length and authorization; disallowed_headers win */
	struct arn_cfg_str_match *allowed, *disallowed;
	size_t n_allowed, n_disallowed;
	struct arn_cfg_ext_authz_hdr *add; /* authorization_request.headers_to_add */
	size_t n_add;
	/* authorization_response: the service's headers that are set /
	 * appended on the upstream request (200), sent to the client with
	 * the denial (allowed_client_headers; unset: all but host), and added
	 * to the upstream's response (allowed_client_headers_on_success) */
	struct arn_cfg_str_match *up_set, *up_append, *client, *client_ok;
	size_t n_up_set, n_up_append, n_client, n_client_ok;
	/* grpc_service (envoy_grpc) in place of http_service: the check is
	 * Authorization.Check on cluster (HTTP/2), :authority authority
	 * (NULL: the cluster's name), initial_metadata (md) as request
	 * headers, timeout_ms grpc_service.timeout (unset: 200 ms, Envoy's) */
	bool grpc;
#define ARN_CFG_EXT_AUTHZ_MD_MAX 29u /* initial_metadata entries */
	const char *authority;
	uint32_t authority_len;
	struct arn_cfg_ext_authz_hdr *md;
	size_t n_md;
	/* with_request_body: the body waits for the check, which carries its
	 * first max_body bytes; more is a 413 unless partial_body (then the
	 * check goes with those, the rest follows it upstream); gRPC: as
	 * raw_body (pack_as_bytes) or body */
	bool with_body, partial_body, pack_as_bytes;
	uint32_t max_body;
};

/* ExtAuthzPerRoute: disabled, or check_settings (which re-enables the
 * check where a less specific level disabled it). */
struct arn_cfg_ext_authz_route {
	bool disabled;
	bool no_body; /* check_settings.disable_request_body_buffering */
	/* check_settings.context_extensions, sent with a gRPC check */
	struct arn_cfg_ext_authz_hdr *ctx;
	size_t n_ctx;
};

/*
 * envoy.filters.http.fault's HTTPFault (the filter's, or a route's or
 * virtual host's in typed_per_filter_config, the most specific whole).
 * Runtime keys are not read (Arion has no runtime): the values here apply.
 */
enum arn_cfg_fault_abort {
	ARN_CFG_FAULT_ABORT_NONE = 0,
	ARN_CFG_FAULT_ABORT_HTTP,   /* abort_status */
	ARN_CFG_FAULT_ABORT_GRPC,   /* abort_status is a gRPC status */
	ARN_CFG_FAULT_ABORT_HEADER, /* x-envoy-fault-abort-request / -grpc-request */
};
/* Delays longer than this are refused (fixed_delay) or cut (a header's):
 * a delayed request holds its request buffer all along. */
#define ARN_CFG_FAULT_DELAY_MAX_MS 300000u
/* Header matchers an HTTPFault may hold (each tried per request). */
#define ARN_CFG_FAULT_HEADERS_MAX 16
struct arn_cfg_fault {
	bool delay;	   /* a delay is configured */
	bool delay_header; /* header_delay: x-envoy-fault-delay-request, ms */
	uint32_t delay_ms; /* fixed_delay */
	struct arn_cfg_fraction delay_pct;
	uint8_t abort; /* enum arn_cfg_fault_abort */
	uint32_t abort_status;
	struct arn_cfg_fraction abort_pct;
	const char *upstream_cluster; /* the route's cluster must be it, or NULL */
	size_t upstream_cluster_len;
	struct arn_cfg_header_match *headers; /* all must match */
	size_t n_headers;
	const char **downstream_nodes; /* x-envoy-downstream-service-node among them */
	size_t n_downstream_nodes;
	uint32_t max_active; /* max_active_faults, 0: no bound */
};

/* Entries of one level's typed_per_filter_config (a route's, a virtual
 * host's, a route table's): they name HTTP filters, looked up by a walk
 * (docs/security.md). */
#define ARN_CFG_MAX_PER_FILTER 64

/*
 * envoy.filters.http.stateful_session's StatefulSession (the filter's, or
 * a route's or virtual host's StatefulSessionPerRoute, the most specific
 * whole): where a request's session names its upstream host, a cookie or
 * a header, and whether a host that is not there answers 503 (strict).
 */
enum arn_cfg_ss_mode {
	ARN_CFG_SS_NONE = 0, /* no session_state: the filter does nothing */
	ARN_CFG_SS_COOKIE,   /* CookieBasedSessionState */
	ARN_CFG_SS_HEADER,   /* HeaderBasedSessionState */
};
/* A session header's name at most (a cookie's is ARN_CFG_COOKIE_NAME_MAX). */
#define ARN_CFG_SS_HEADER_MAX 256
struct arn_cfg_stateful_session {
	bool disabled; /* StatefulSessionPerRoute.disabled: off on this route */
	bool strict;
	uint8_t mode; /* enum arn_cfg_ss_mode */
	/* the cookie's or (lowercased) the header's name */
	const char *name;
	size_t name_len;
	uint32_t ttl_s;	  /* the cookie's Max-Age and expiry (0: neither) */
	const char *path; /* the cookie's path, or NULL */
	size_t path_len;
};

/** One typed_per_filter_config entry: the HTTP filter's name and its config. */
struct arn_cfg_per_filter {
	const char *name; /* the HttpFilter.name it applies to */
	size_t name_len;
	uint8_t kind; /* enum arn_cfg_per_filter_kind */
	const void *cfg;
};

struct arn_cfg_vhost;
struct arn_cfg_route;

/**
 * The most specific typed_per_filter_config for the HTTP filter named
 * @p name (its HttpFilter.name) of kind @p kind: @p r's, else @p vh's
 * (either may be NULL).
 * @return the configuration (owned by the route table), or NULL: the
 *   filter's own applies.
 */
const void *arn_cfg_per_filter_find(const struct arn_cfg_vhost *vh, const struct arn_cfg_route *r,
				    const char *name, size_t len,
				    enum arn_cfg_per_filter_kind kind);

/**
 * Is HTTP filter @p name (its HttpFilter.name) off for route @p r of
 * virtual host @p vh? Envoy's filterDisabled: the most specific level
 * (route, virtual host, route table) whose typed_per_filter_config names
 * the filter decides (a FilterConfig with disabled: off; any other entry:
 * on); none: @p dflt (the HttpFilter's disabled).
 */
bool arn_cfg_filter_off(const struct arn_cfg_vhost *vh, const struct arn_cfg_route *r,
			const char *name, size_t len, bool dflt);

/**
 * Is compressor @p f in the chain of route @p r of virtual host @p vh
 * (HttpFilter.disabled / FilterConfig, Envoy's filterDisabled; @p toggles:
 * the route table turns some filter off)? If so, *@p pr is its most
 * specific CompressorPerRoute (NULL: none).
 */
bool arn_cfg_cmp_on_route(const struct arn_cfg_compressor *f, bool toggles,
			  const struct arn_cfg_vhost *vh, const struct arn_cfg_route *r,
			  const struct arn_cfg_compressor_route **pr);

/**
 * Does a compressor filter of manager @p h remove the request's
 * accept-encoding on route @p r of virtual host @p vh (table @p rt)?
 * Envoy's compressor decodeHeaders: a filter in the route's chain (not
 * off: arn_cfg_filter_off) whose compression is enabled and whose
 * remove_accept_encoding_header is set, each as the most specific
 * CompressorPerRoute says over the filter's own.
 */
bool arn_cfg_cmp_strip_accept_encoding(const struct arn_cfg_hcm *h,
				       const struct arn_cfg_route_table *rt,
				       const struct arn_cfg_vhost *vh,
				       const struct arn_cfg_route *r);

/**
 * The CORS policies that apply to route @p r of virtual host @p vh for the
 * CORS filter named @p name, most specific first, into @p out (room for
 * 3): the per-filter ones (route, virtual host, route table) if any level
 * has one, else
 * the deprecated `cors` fields. @return how many (0: the filter does
 * nothing for this request).
 */
size_t arn_cfg_cors_policies(const struct arn_cfg_vhost *vh, const struct arn_cfg_route *r,
			     const char *name, size_t len, const struct arn_cfg_cors *out[3]);

/* ---------------------------------------------------------------------------
 * envoy.filters.http.jwt_authn (JwtAuthentication). Providers' key sets
 * are built at conversion (local_jwks only) and freed with the pool; the
 * requirements are trees of struct arn_cfg_jwt_req, the rules' matches
 * RouteMatch converted as a route's (only its match fields are set).
 */
struct arn_jwks;

/* Limits (docs/security.md) */
#define ARN_CFG_JWT_MAX_PROVIDERS 32		 /* providers of one filter */
#define ARN_CFG_JWT_MAX_REQ_DEPTH 8		 /* nesting of requires_any / requires_all */
#define ARN_CFG_JWT_MAX_CLAIM_HEADERS 8		 /* claim_to_headers of one provider */
#define ARN_CFG_JWT_MAX_JWKS_FILE (256u * 1024u) /* local_jwks.filename, read at conversion */

struct arn_cfg_jwt_from_header {
	const char *name; /* lower case */
	size_t name_len;
	const char *prefix; /* value_prefix; "" none */
	size_t prefix_len;
};

struct arn_cfg_jwt_claim_header {
	const char *header; /* lower case */
	size_t header_len;
	const char *claim;
};

struct arn_cfg_jwt_provider {
	const char *name;
	const char *issuer; /* "": any */
	size_t issuer_len;
	const char **audiences;
	size_t n_audiences;
	const struct arn_jwks *jwks;
	/* where tokens are looked for: Envoy's Authorization "Bearer " and
	 * access_token when none of the three is set (filled in so) */
	struct arn_cfg_jwt_from_header *headers;
	size_t n_headers;
	const char **params;
	size_t n_params;
	const char **cookies;
	size_t n_cookies;
	const char *payload_header; /* forward_payload_header, lower case; NULL none */
	size_t payload_header_len;
	struct arn_cfg_jwt_claim_header *claims;
	size_t n_claims;
	uint32_t clock_skew_s; /* 60 unless set */
	bool forward, pad_payload, require_exp;
	/* remote_jwks (jwks NULL): the keys a worker fetches (http_jwks.c) */
	const struct arn_cfg_jwt_remote *remote;
};

/* remote_jwks: GET path from cluster with Host host; the keys kept
 * cache_ms per worker. key (cluster NUL uri, key_len bytes) is the
 * cache's identity: providers of any generation with the same cluster
 * and uri share their keys. */
#define ARN_CFG_JWT_MAX_URI 1024
#define ARN_CFG_JWT_MAX_CLUSTER_NAME 255
#define ARN_CFG_JWT_MAX_KEY (ARN_CFG_JWT_MAX_CLUSTER_NAME + 1 + ARN_CFG_JWT_MAX_URI)
#define ARN_CFG_JWT_MAX_RETRIES 5
struct arn_cfg_jwt_remote {
	struct arn_cfg_ref cluster;
	const char *provider; /* its provider's name, for the log */
	const char *cluster_name;
	const char *host, *path;
	size_t host_len, path_len;
	const char *key;
	size_t key_len;
	uint64_t key_hash;
	uint32_t timeout_ms;
	uint32_t cache_ms; /* cache_duration, 600 s unless set */
	/* retry_policy: retries after a connect failure, reset, timeout or
	 * 5xx, the first base_ms later, each twice the last, at most max_ms */
	uint8_t num_retries;
	uint32_t backoff_base_ms, backoff_max_ms;
	bool async_fetch; /* keys fetched on first use all the same (docs/http.md) */
};

enum arn_cfg_jwt_req_kind {
	ARN_CFG_JWT_REQ_PROVIDER = 0,		 /* provider_name, provider_and_audiences */
	ARN_CFG_JWT_REQ_ANY,			 /* requires_any: subs */
	ARN_CFG_JWT_REQ_ALL,			 /* requires_all: subs */
	ARN_CFG_JWT_REQ_ALLOW_MISSING,		 /* any provider's token, none allowed */
	ARN_CFG_JWT_REQ_ALLOW_MISSING_OR_FAILED, /* likewise, failures allowed too */
};

struct arn_cfg_jwt_req {
	uint8_t kind;	   /* enum arn_cfg_jwt_req_kind */
	bool aud_override; /* provider_and_audiences: audiences replace the provider's */
	uint16_t provider; /* index in providers */
	const char **audiences;
	size_t n_audiences;
	const struct arn_cfg_jwt_req *subs;
	size_t n_subs;
};

struct arn_cfg_jwt_rule {
	struct arn_cfg_route match;	   /* its match fields only */
	const struct arn_cfg_jwt_req *req; /* requires, or requirement_name resolved */
};

struct arn_cfg_jwt_named_req {
	const char *name;
	size_t name_len;
	const struct arn_cfg_jwt_req *req;
};

struct arn_cfg_jwt_authn {
	struct arn_cfg_jwt_provider *providers;
	size_t n_providers;
	struct arn_cfg_jwt_rule *rules;
	size_t n_rules;
	struct arn_cfg_jwt_named_req *reqmap; /* requirement_map */
	size_t n_reqmap;
	const char *reqmap_names; /* "a,b": Envoy's list in a wrong requirement_name's reply */
	bool bypass_cors_preflight;
	bool strip_failure_response;
};

/* A route's or virtual host's PerRouteConfig */
struct arn_cfg_jwt_per_route {
	bool disabled;
	const char *name; /* requirement_name, looked up in the filter's requirement_map */
	size_t name_len;
};

/** Does route @p r's match (path, headers, query parameters) match @p req? */
bool arn_cfg_route_matches(const struct arn_cfg_route *r, const struct arn_cfg_request *req);

/* ---------------------------------------------------------------------------
 * envoy.filters.http.basic_auth (BasicAuth, BasicAuthPerRoute): htpasswd
 * users ("name:{SHA}<base64 of the password's SHA-1>"), sorted by name
 * at conversion so a request's user is found by binary search.
 */

/* Limits (docs/security.md) */
/* users of one users DataSource */
#define ARN_CFG_BASIC_AUTH_MAX_USERS 65536
/* bytes of a user's name */
#define ARN_CFG_BASIC_AUTH_MAX_NAME 256
/* bytes of the users' text (a file, or inline) */
#define ARN_CFG_BASIC_AUTH_MAX_HTPASSWD (4u * 1024u * 1024u)
/* the base64 of a SHA-1 digest, as htpasswd writes it (Envoy's length check) */
#define ARN_CFG_BASIC_AUTH_HASH_LEN 28

struct arn_cfg_basic_auth_user {
	const char *name; /* in the pool, not NUL-terminated */
	uint32_t name_len;
	char hash[ARN_CFG_BASIC_AUTH_HASH_LEN]; /* after "{SHA}", as written */
};

struct arn_cfg_basic_auth_users {
	const struct arn_cfg_basic_auth_user *users; /* sorted: arn_cfg_basic_auth_find */
	size_t n;
};

struct arn_cfg_basic_auth {
	struct arn_cfg_basic_auth_users users;
	const char *forward_username_header; /* lower case; NULL: none */
	size_t forward_username_header_len;
	const char *authentication_header; /* lower case; NULL: authorization */
	size_t authentication_header_len;
};

/** The order users are sorted in (length, then bytes). */
static inline int arn_cfg_basic_auth_cmp(const char *a, size_t al, const char *b, size_t bl)
{
	if (al != bl)
		return al < bl ? -1 : 1;
	return memcmp(a, b, al);
}

/** The user named @p name in @p u (binary search), or NULL. */
static inline const struct arn_cfg_basic_auth_user *
arn_cfg_basic_auth_find(const struct arn_cfg_basic_auth_users *u, const char *name, size_t len)
{
	size_t lo = 0, hi = u->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct arn_cfg_basic_auth_user *x = &u->users[mid];
		int k = arn_cfg_basic_auth_cmp(name, len, x->name, x->name_len);
		if (k == 0)
			return x;
		if (k < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

/* ---------------------------------------------------------------------------
 * envoy.filters.http.ratelimit (global rate limiting, docs/http.md): a
 * request's descriptors go to a rate limit service
 * (envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit over its
 * cluster's HTTP/2); OVER_LIMIT answers rate_limited_status, a failure
 * lets the request on unless failure_mode_deny (then status_on_error).
 */
/* initial_metadata entries: the call's headers are content-type, te,
 * grpc-timeout and these, at most a sub-request's 32 */
#define ARN_CFG_RLS_MD_MAX 29u

enum arn_cfg_rls_request_type {
	ARN_CFG_RLS_BOTH = 0, /* "both" or "" */
	ARN_CFG_RLS_INTERNAL, /* only requests with x-envoy-internal: true */
	ARN_CFG_RLS_EXTERNAL, /* only requests without it */
};

struct arn_cfg_rls {
	const char *domain; /* required */
	uint32_t domain_len;
	uint32_t stage;	       /* 0..10 */
	uint8_t request_type;  /* enum arn_cfg_rls_request_type */
	bool failure_mode_deny;
	bool resource_exhausted; /* rate_limited_as_resource_exhausted */
	bool x_ratelimit_headers; /* enable_x_ratelimit_headers: DRAFT_VERSION_03 */
	bool no_x_envoy_ratelimited; /* disable_x_envoy_ratelimited_header */
	uint16_t rate_limited_status; /* 429, or rate_limited_status when >= 400 */
	uint16_t status_on_error;     /* 500, or status_on_error */
	uint32_t timeout_ms;	      /* timeout: 20 ms unless set (0: none) */
	/* rate_limit_service.grpc_service.envoy_grpc: the cluster, :authority
	 * (NULL: the cluster's name), initial_metadata as request headers */
	struct arn_cfg_ref cluster;
	const char *authority;
	uint32_t authority_len;
	struct arn_cfg_ext_authz_hdr *md;
	size_t n_md;
	/* response_headers_to_add: on the answer to a limited request */
	struct arn_cfg_header_add *resp_add;
	size_t n_resp_add;
};

/* RateLimitPerRoute: rate_limits (when set, the request's descriptors
 * come from them alone, whatever their stage, as Envoy's), the virtual
 * host's rate_limits option and a domain in place of the filter's. */
struct arn_cfg_rls_route {
	uint8_t vh_rate_limits; /* enum arn_cfg_vh_rate_limits */
	struct arn_cfg_rate_limit *rate_limits;
	size_t n_rate_limits;
	const char *domain; /* NULL: the filter's */
	uint32_t domain_len;
};

/* ---------------------------------------------------------------------------
 * envoy.filters.http.oauth2 (OAuth2): Envoy's OAuth2 filter, an OIDC login
 * at the gateway (docs/http.md). The secrets are SDS names, looked up in
 * the request's generation (an update reaches the next request).
 */

/* Limits (docs/security.md) */
/* bytes of authorization_endpoint, redirect_uri, token_endpoint.uri */
#define ARN_CFG_OAUTH2_MAX_URL 2048
/* auth_scopes, resources: entries of each */
#define ARN_CFG_OAUTH2_MAX_LIST 32
/* authorization_endpoint's own query parameters */
#define ARN_CFG_OAUTH2_MAX_PARAMS 16

struct arn_access_format;

/** Envoy's urlEncodeQueryParameter of @p s into @p out (3 * @p n bytes at
 * most): all but ALPHA, DIGIT, '*', '-', '.', '_' percent-encoded.
 * @return the length written. conv_oauth2.c */
size_t arn_cfg_oauth2_qencode(const char *s, size_t n, char *out);

/* One query parameter of the authorization redirect, value as written */
struct arn_cfg_oauth2_param {
	const char *k, *v;
	uint32_t kl, vl;
};

struct arn_cfg_oauth2 {
	/* token_endpoint: the cluster, the request's path and Host (from
	 * uri), the timeout */
	struct arn_cfg_ref cluster;
	const char *token_path, *token_host;
	uint32_t token_path_len, token_host_len;
	uint32_t timeout_ms;
	/* authorization_endpoint up to its query, and the query parameters
	 * Envoy sends (its own, client_id, response_type, scope) sorted by
	 * name as Envoy's QueryParamsMulti keeps them; redirect_uri and state
	 * are added per request */
	const char *auth_base;
	uint32_t auth_base_len;
	const struct arn_cfg_oauth2_param *params;
	size_t n_params;
	/* "&resource=<encoded>" for each resource, appended to the Location */
	const char *resources;
	uint32_t resources_len;
	const char *client_id;
	uint32_t client_id_len;
	struct arn_cfg_ref token_secret, hmac_secret;
	/* cookie names (Envoy's defaults when unset) */
	const char *ck_bearer, *ck_hmac, *ck_expires, *ck_id, *ck_refresh;
	uint8_t ck_bearer_len, ck_hmac_len, ck_expires_len, ck_id_len, ck_refresh_len;
	/* redirect_uri's format (struct arn_access_format, lib/accesslog) */
	const struct arn_access_format *redirect_uri;
	struct arn_cfg_str_match redirect_path, signout_path;
	const struct arn_cfg_header_match *pass_through, *deny_redirect;
	size_t n_pass_through, n_deny_redirect;
	uint32_t default_expires_in_s; /* 0: none */
	bool forward_bearer_token, preserve_authorization_header, basic_auth;
	bool disable_id_token_set_cookie;
	/* OAuth2 without config (Envoy: a filter that does nothing) */
	bool inert;
};

/* ---------------------------------------------------------------------------
 * envoy.filters.http.header_mutation (HeaderMutation; a route level's
 * HeaderMutationPerRoute has the same shape, most_specific_wins unused):
 * its request_mutations on the request's head before it goes upstream,
 * its response_mutations on the response's head (the upstream's and local
 * replies), the filter's first, then every route level's (most specific
 * first, or last with most_specific_wins), each in order, as Envoy's
 * header_mutation.cc. Values keep Envoy's %...% substitutions for the
 * HTTP layer (http_subst). docs/http.md.
 */
#define ARN_CFG_HM_MAX_OPS 32 /* a list's mutations (docs/security.md) */

enum arn_cfg_hm_kind {
	ARN_CFG_HM_REMOVE = 0,	 /* remove: name */
	ARN_CFG_HM_APPEND,	 /* append: add */
	ARN_CFG_HM_REMOVE_MATCH, /* remove_on_match: key (on the names) */
};

struct arn_cfg_hm_op {
	uint8_t kind;	  /* enum arn_cfg_hm_kind */
	const char *name; /* ARN_CFG_HM_REMOVE: lower case */
	size_t name_len;
	struct arn_cfg_header_add add; /* ARN_CFG_HM_APPEND */
	struct arn_cfg_str_match key;  /* ARN_CFG_HM_REMOVE_MATCH */
};

struct arn_cfg_header_mutation {
	const struct arn_cfg_hm_op *req, *resp;
	size_t n_req, n_resp;
	bool most_specific_wins; /* the filter's own only */
};

/* ---------------------------------------------------------------------------
 * envoy.filters.http.custom_response (the filter, or a route level's
 * CustomResponse): custom_response_matcher's matcher_list, whose first
 * entry whose predicate matches the response (the upstream's, or a local
 * reply) names the LocalResponsePolicy that replaces it. Predicates are
 * RBAC rule trees (AND / OR / NOT of the ARN_CFG_RBAC_RESP_* inputs).
 * docs/http.md.
 */
#define ARN_CFG_CRESP_MAX_MATCHERS 64 /* matcher_list's entries (docs/security.md) */
#define ARN_CFG_CRESP_MAX_HEADERS 8   /* a policy's response_headers_to_add */

struct arn_access_format;

/* A LocalResponsePolicy: the reply that replaces the response. */
struct arn_cfg_cresp_policy {
	uint16_t status; /* status_code, or 0: the response's own */
	bool has_body;
	const char *body; /* body (may hold NULs), has_body */
	size_t body_len;
	struct arn_cfg_subst_format format; /* body_format; NULL text and json: none */
	/* body_format compiled (lib/accesslog), freed with the configuration */
	const struct arn_access_format *fmt;
	struct arn_cfg_header_add *headers; /* response_headers_to_add (literal values) */
	size_t n_headers;
};

struct arn_cfg_cresp_entry {
	struct arn_cfg_rbac_rule predicate; /* unused for on_no_match */
	const struct arn_cfg_cresp_policy *policy;
};

struct arn_cfg_custom_response {
	struct arn_cfg_cresp_entry *entries; /* in order: the first that matches */
	size_t n_entries;
	const struct arn_cfg_cresp_policy *no_match; /* on_no_match, or NULL */
};

/*
 * envoy.filters.http.buffer (Buffer, BufferPerRoute's buffer): the request
 * body read whole, max_request_bytes at most, before the request goes on
 * (http_buffer.c). BufferPerRoute's disabled is ARN_CFG_PF_DISABLED.
 */
struct arn_cfg_buffer {
	uint32_t max_request_bytes; /* > 0 */
};

/*
 * envoy.filters.http.ext_proc (ExternalProcessor): one bidirectional gRPC
 * stream per request to an external processor
 * (envoy.service.ext_proc.v3.ExternalProcessor/Process) that sees the
 * request's headers (and, when asked, the response's) and answers with
 * header mutations or an immediate response, as Envoy's ext_proc filter.
 * What Arion does not build is refused by name (docs/configuration.md).
 */
#define ARN_CFG_EXT_PROC_MD_MAX 29 /* initial_metadata entries (the stream's headers) */

enum arn_cfg_ext_proc_send {
	ARN_CFG_EXT_PROC_SEND = 0, /* SEND, or DEFAULT for headers */
	ARN_CFG_EXT_PROC_SKIP,
};

/* A ProcessingMode of what Arion builds: headers sent or skipped, the
 * request's body NONE or BUFFERED, the response's NONE, BUFFERED or
 * STREAMED, no trailers. */
struct arn_cfg_ext_proc_mode {
	uint8_t request_headers;     /* enum arn_cfg_ext_proc_send (DEFAULT: SEND) */
	uint8_t response_headers;    /* enum arn_cfg_ext_proc_send (DEFAULT: SEND) */
	bool request_body_buffered;  /* request_body_mode BUFFERED (else NONE) */
	bool response_body_buffered; /* response_body_mode BUFFERED (else NONE) */
	bool response_body_streamed; /* response_body_mode STREAMED */
};

/* The processor's service: grpc_service.envoy_grpc (the cluster,
 * :authority, NULL: the cluster's name) and initial_metadata as headers. */
struct arn_cfg_ext_proc_service {
	struct arn_cfg_ref cluster;
	const char *authority;
	uint32_t authority_len;
	struct arn_cfg_ext_authz_hdr *md;
	size_t n_md;
};

struct arn_cfg_ext_proc {
	struct arn_cfg_ext_proc_service svc;
	struct arn_cfg_ext_proc_mode mode;
	bool failure_mode_allow;
	bool allow_mode_override;	 /* a processor's mode_override is taken */
	bool disable_immediate_response; /* an immediate_response is spurious */
	bool disable_clear_route_cache;	 /* (or route_cache_action RETAIN) */
	bool clear_route_cache_always;	 /* route_cache_action CLEAR */
	uint32_t message_timeout_ms;	 /* 200 unless set */
	uint32_t max_message_timeout_ms; /* 0: override_message_timeout ignored */
	const char *stat_prefix;	 /* http.<prefix>.ext_proc.<it>.*, NULL: none */
	/* mutation_rules (HeaderMutationRules) */
	bool allow_envoy, disallow_system, disallow_all, disallow_is_error;
	/* forward_rules: which request and response headers go to the
	 * processor (allowed: none means all; disallowed wins) */
	const struct arn_cfg_str_match *fwd_allow, *fwd_deny;
	size_t n_fwd_allow, n_fwd_deny;
};

/* ExtProcPerRoute: disabled, or overrides (processing_mode, grpc_service,
 * grpc_initial_metadata). */
struct arn_cfg_ext_proc_route {
	bool disabled;
	bool has_mode, has_svc;
	struct arn_cfg_ext_proc_mode mode;
	struct arn_cfg_ext_proc_service svc;
	struct arn_cfg_ext_authz_hdr *md; /* grpc_initial_metadata: added to the service's */
	size_t n_md;
};

/*
 * envoy.filters.http.lua (Lua, LuaPerRoute): scripts compiled and run once
 * at conversion (their envoy_on_request / envoy_on_response found), run
 * again by each worker in a Lua 5.4 state of its own (lib/http/http_lua.c,
 * lib/config/arn_lua.h for the bounds).
 */
#define ARN_CFG_LUA_MAX_CODES 256 /* source_codes entries */

struct arn_cfg_lua_script {
	const char *code; /* on the pool */
	size_t len;
	const char *name; /* the chunk's name in errors ("default_source_code", "hello.lua") */
	unsigned idx;	  /* 0 .. n_scripts - 1 within its filter: its state's slot */
	bool on_request;  /* envoy_on_request is a function */
	bool on_response; /* envoy_on_response is */
	/* a LuaPerRoute source_code's: an id never given twice (the workers'
	 * states of route scripts are found by it); 0: the filter's */
	uint64_t uid;
};

struct arn_cfg_lua {
	const char *stat_prefix; /* or NULL */
	/* inline_code or default_source_code, or NULL: only routes naming a
	 * script run one */
	const struct arn_cfg_lua_script *dflt;
	struct arn_cfg_lua_script *named; /* source_codes, in key order */
	size_t n_named;
	unsigned n_scripts; /* n_named + (dflt != NULL) */
};

/* LuaPerRoute's name or source_code (its disabled is ARN_CFG_PF_DISABLED). */
struct arn_cfg_lua_route {
	const char *name; /* or NULL: script */
	size_t name_len;
	const struct arn_cfg_lua_script *script; /* source_code's, compiled */
};

/** The script of @p f's source_codes named @p name (@p len bytes), or
 * NULL (Envoy then runs none). */
const struct arn_cfg_lua_script *arn_cfg_lua_find(const struct arn_cfg_lua *f, const char *name,
						  size_t len);

#endif
