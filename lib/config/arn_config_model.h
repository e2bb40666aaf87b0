/*
 * Arion's configuration model: what workers read.
 *
 * Every object here is built on the control lcore by the converters
 * (lib/config/conv_*.c) from an Envoy proto and is immutable afterwards.
 * Workers reach objects through a generation (arn_config_gen()) and may use
 * them without further ado until their next RCU quiescent state. Anything a
 * worker keeps longer (an in-flight request's route table and cluster, a TLS
 * context) must be pinned with arn_cfg_pin() and released with
 * arn_cfg_unpin(); both are one atomic operation, never allocate, never
 * block. A pinned object stays valid even after a later generation dropped
 * it; the object is freed on the control lcore after its last unpin.
 *
 * The pinnable objects (those that start with struct arn_cfg_obj) are:
 * arn_cfg_listener, arn_cfg_route_table, arn_cfg_cluster, arn_cfg_endpoints,
 * arn_cfg_secret, arn_cfg_toolset. Everything inside one of them (filter chains, HCM, virtual
 * hosts, routes, ...) lives exactly as long as that object.
 *
 * Strings: pointer + length, also NUL-terminated. Times: milliseconds; 0
 * means "disabled" where Envoy says so.
 *
 * Generations share unchanged objects: a generation is, per type, the root
 * of a persistent hash array mapped trie (HAMT) of pointers to refcounted
 * objects. Changing one cluster among 10,000 copies one path of the trie
 * (at most a few 32-slot nodes) and converts one cluster; the other 9,999
 * objects and the untouched subtrees are shared by both generations. See
 * hamt.h for why a HAMT rather than a copied hash table.
 */
#ifndef ARN_CONFIG_MODEL_H
#define ARN_CONFIG_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct arn_regex;
struct arn_cfg_gen;

/** Resource families (X2); the order is X3's subscription order is not implied. */
enum arn_cfg_type {
	ARN_CFG_LISTENER = 0,
	ARN_CFG_ROUTE, /* RouteConfiguration */
	ARN_CFG_CLUSTER,
	ARN_CFG_CLA, /* ClusterLoadAssignment: arn_cfg_endpoints */
	ARN_CFG_SECRET,
	ARN_CFG_TOOLSET, /* arion.extensions.mcp.v3.ToolSet (TDS), on demand (X4) */
	ARN_CFG_NTYPES,
};

/* ---------------------------------------------------------------------------
 * Reference-counted object header (arn_config_model.c)
 */
struct arn_cfg_reclaim;

struct arn_cfg_obj {
	uint32_t refs;	      /* atomic; generations, the store and pins */
	uint8_t type;	      /* enum arn_cfg_type */
	uint8_t inline_owned; /* an inline route table owned by a listener */
	uint64_t hash;	      /* arn_cfg_hash(name) */
	const char *name;
	size_t name_len;
	struct arn_cfg_reclaim *reclaim; /* where the last unpin sends the object */
	struct arn_cfg_obj *reclaim_next;
	void *pool; /* private: the memory the object and its parts live in */
};

/** Called by arn_cfg_unpin() when it dropped the last reference. No allocation. */
void arn_cfg_obj_last_unpin(struct arn_cfg_obj *o);

/** Pin @p obj (any pinnable model object) beyond the current loop iteration. */
static inline void arn_cfg_pin(const void *obj)
{
	struct arn_cfg_obj *o = (struct arn_cfg_obj *)obj;
	__atomic_fetch_add(&o->refs, 1, __ATOMIC_RELAXED);
}

/** Drop a pin taken with arn_cfg_pin(). */
static inline void arn_cfg_unpin(const void *obj)
{
	struct arn_cfg_obj *o = (struct arn_cfg_obj *)obj;
	if (__atomic_sub_fetch(&o->refs, 1, __ATOMIC_ACQ_REL) == 0)
		arn_cfg_obj_last_unpin(o);
}

/*
 * The control lcore's side, for lib/config alone: its references (the
 * store's, a generation's) are dropped with arn_cfg_obj_unref(); objects
 * whose last pin a worker dropped wait on a lock-free stack until the
 * control lcore drains it.
 */
struct arn_cfg_reclaim {
	struct arn_cfg_obj *head;
};

/** Drop a control-side reference; frees at zero. NULL is a no-op. */
void arn_cfg_obj_unref(struct arn_cfg_obj *o);

/** Free every object on @p r (control lcore). */
void arn_cfg_reclaim_drain(struct arn_cfg_reclaim *r);

/** The name hash every lookup uses (FNV-1a, 64 bits). */
static inline uint64_t arn_cfg_hash(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/** A name that is resolved in the generation at use time (G5: may not exist). */
struct arn_cfg_ref {
	const char *name;
	size_t len;
	uint64_t hash;
};

/* ---------------------------------------------------------------------------
 * Matchers
 */
enum arn_cfg_str_kind {
	ARN_CFG_STR_EXACT = 0,
	ARN_CFG_STR_PREFIX,
	ARN_CFG_STR_SUFFIX,
	ARN_CFG_STR_CONTAINS,
	ARN_CFG_STR_REGEX, /* full match, Envoy's safe_regex */
};

/** envoy.type.matcher.v3.StringMatcher. */
struct arn_cfg_str_match {
	uint8_t kind;
	bool ignore_case;
	/* a SAN matcher of match_typed_subject_alt_names: the only SAN type
	 * it is tried on (Envoy's SanType: ARN_CFG_SAN_*); 0: every type
	 * (match_subject_alt_names, and every other matcher) */
	uint8_t san_type;
	const char *s; /* the text to match; ARN_CFG_STR_REGEX: the pattern */
	size_t len;
	const struct arn_regex *re; /* ARN_CFG_STR_REGEX */
};

/* envoy.extensions.transport_sockets.tls.v3.SubjectAltNameMatcher.SanType */
enum { ARN_CFG_SAN_EMAIL = 1, ARN_CFG_SAN_DNS = 2, ARN_CFG_SAN_URI = 3, ARN_CFG_SAN_IP = 4 };

bool arn_cfg_str_match(const struct arn_cfg_str_match *m, const char *v, size_t n);

struct arn_cfg_header_match;
struct arn_cfg_request;
/**
 * One header matcher @p m over a value already looked up: @p present says
 * whether the header was there, @p v / @p vlen its value (repeated headers
 * joined with ','). Envoy's rules: a missing header never matches (unless
 * treat_missing_header_as_empty), inverted or not.
 */
bool arn_cfg_header_match_value(const struct arn_cfg_header_match *m, bool present, const char *v,
				size_t vlen);
/**
 * True when every one of the @p n matchers @p m matches @p req (as route
 * header matching does: ":method", ":authority" and ":path" are the request
 * line's; repeated headers are joined with ','). True for n == 0.
 */
bool arn_cfg_headers_match(const struct arn_cfg_header_match *m, size_t n,
			   const struct arn_cfg_request *req);

enum arn_cfg_hdr_kind {
	ARN_CFG_HDR_STRING = 0, /* exact/prefix/suffix/contains/safe_regex/string_match */
	ARN_CFG_HDR_PRESENT,
	ARN_CFG_HDR_RANGE, /* [start, end) on the value as a decimal integer */
};

/** envoy.config.route.v3.HeaderMatcher. */
struct arn_cfg_header_match {
	const char *name; /* lower case */
	size_t name_len;
	uint8_t kind;
	bool present; /* ARN_CFG_HDR_PRESENT: true = must be present */
	bool invert;
	bool missing_as_empty; /* treat_missing_header_as_empty */
	struct arn_cfg_str_match str;
	int64_t start, end;
};

/** envoy.config.route.v3.QueryParameterMatcher. */
struct arn_cfg_query_match {
	const char *name;
	size_t name_len;
	bool present_only; /* present_match */
	struct arn_cfg_str_match str;
};

/* ---------------------------------------------------------------------------
 * Requests, as the HTTP layer hands them to the route matcher
 */
struct arn_cfg_header {
	const char *name; /* any case */
	size_t name_len;
	const char *value;
	size_t value_len;
};

struct arn_cfg_request {
	const char *method;
	size_t method_len;
	const char *authority; /* Host / :authority as received (may carry :port) */
	size_t authority_len;
	const char *path; /* request target: path and query */
	size_t path_len;
	const struct arn_cfg_header *headers; /* every request header */
	size_t n_headers;
	uint16_t listener_port; /* for strip_matching_host_port */
	uint64_t random;	/* for weighted_clusters */
	/* When headers is NULL and this is set, the matcher asks it for them
	 * (the caller builds them only when a header matcher or
	 * cluster_header needs them: most routes match on the path alone). */
	const struct arn_cfg_header *(*headers_fn)(void *ctx, size_t *n);
	void *headers_ctx;
};

/* ---------------------------------------------------------------------------
 * RouteConfiguration
 */
enum arn_cfg_append {
	ARN_CFG_APPEND_IF_EXISTS_OR_ADD = 0,
	ARN_CFG_ADD_IF_ABSENT,
	ARN_CFG_OVERWRITE_IF_EXISTS_OR_ADD,
};

struct arn_cfg_header_add {
	const char *key; /* lower case */
	size_t key_len;
	const char *value; /* Envoy substitution syntax (%...%) left for the HTTP layer */
	size_t value_len;
	uint8_t append; /* enum arn_cfg_append */
	bool keep_empty_value;
};

/** request/response headers to add and remove at one level. */
struct arn_cfg_header_ops {
	struct arn_cfg_header_add *req_add;
	size_t n_req_add;
	struct arn_cfg_ref *req_remove; /* lower case names (hash unused) */
	size_t n_req_remove;
	struct arn_cfg_header_add *resp_add;
	size_t n_resp_add;
	struct arn_cfg_ref *resp_remove;
	size_t n_resp_remove;
};

/* Nonzero when @p o has edits (removals or additions) for the request
 * (@p request) or the response: the router's test per level, and the
 * conversion's for arn_cfg_route.no_hdr_edits. */
static inline size_t arn_cfg_header_ops_n(const struct arn_cfg_header_ops *o, bool request)
{
	return request ? (o->n_req_remove | o->n_req_add) : (o->n_resp_remove | o->n_resp_add);
}

enum arn_cfg_path_kind {
	ARN_CFG_PATH_PREFIX = 0,
	ARN_CFG_PATH_EXACT,
	ARN_CFG_PATH_REGEX,
	ARN_CFG_PATH_SEPARATED_PREFIX,
};

/* Envoy's retry_on conditions, as bits. */
enum {
	ARN_CFG_RETRY_5XX = 1u << 0,
	ARN_CFG_RETRY_GATEWAY_ERROR = 1u << 1,
	ARN_CFG_RETRY_RESET = 1u << 2,
	ARN_CFG_RETRY_CONNECT_FAILURE = 1u << 3,
	ARN_CFG_RETRY_RETRIABLE_4XX = 1u << 4,
	ARN_CFG_RETRY_REFUSED_STREAM = 1u << 5,
	ARN_CFG_RETRY_RETRIABLE_STATUS_CODES = 1u << 6,
	ARN_CFG_RETRY_RETRIABLE_HEADERS = 1u << 7,
	ARN_CFG_RETRY_HTTP3_POST_CONNECT_FAILURE = 1u << 8,
	ARN_CFG_RETRY_ENVOY_RATELIMITED = 1u << 9,
	/* gRPC's (x-grpc-retry-on's names): the grpc-status of a response head */
	ARN_CFG_RETRY_GRPC_CANCELLED = 1u << 10,
	ARN_CFG_RETRY_GRPC_DEADLINE_EXCEEDED = 1u << 11,
	ARN_CFG_RETRY_GRPC_INTERNAL = 1u << 12,
	ARN_CFG_RETRY_GRPC_RESOURCE_EXHAUSTED = 1u << 13,
	ARN_CFG_RETRY_GRPC_UNAVAILABLE = 1u << 14,
	ARN_CFG_RETRY_GRPC_ANY = ARN_CFG_RETRY_GRPC_CANCELLED | ARN_CFG_RETRY_GRPC_DEADLINE_EXCEEDED |
				 ARN_CFG_RETRY_GRPC_INTERNAL | ARN_CFG_RETRY_GRPC_RESOURCE_EXHAUSTED |
				 ARN_CFG_RETRY_GRPC_UNAVAILABLE,
};

struct arn_cfg_retry_policy {
	bool present;
	uint32_t retry_on;    /* ARN_CFG_RETRY_* */
	uint32_t num_retries; /* default 1 */
	uint32_t per_try_timeout_ms;
	uint32_t per_try_idle_timeout_ms;
	uint16_t *retriable_status_codes;
	size_t n_retriable_status_codes;
	uint32_t backoff_base_ms; /* default 25 */
	uint32_t backoff_max_ms;  /* default 10 x base */
	/* retry_host_predicate previous_hosts: a retry's pick avoids the
	 * hosts its request tried, picking again up to host_selection_retries
	 * more times (host_selection_retry_max_attempts; Envoy's 1 when unset) */
	bool previous_hosts;
	uint32_t host_selection_retries;
	/* retriable_headers: an answer one of them matches is retried under
	 * retriable-headers; retriable_request_headers: none matching the
	 * request, it is not retried at all (Envoy). */
	struct arn_cfg_header_match *retriable_headers;
	size_t n_retriable_headers;
	struct arn_cfg_header_match *retriable_request_headers;
	size_t n_retriable_request_headers;
};
/* Matchers a retry policy's header list may hold (each tried per answer). */
#define ARN_CFG_RETRY_HEADERS_MAX 16

enum arn_cfg_hash_kind {
	ARN_CFG_HASH_HEADER = 0,
	ARN_CFG_HASH_COOKIE,
	ARN_CFG_HASH_SOURCE_IP,
	ARN_CFG_HASH_QUERY_PARAMETER,
};

/* A cookie policy's generated cookie (Envoy's CookieHashMethod with a ttl):
 * the conversion refuses longer names and paths, so the Set-Cookie line
 * always fits the stream's text (HTTP_TEXT). */
#define ARN_CFG_COOKIE_NAME_MAX 256
#define ARN_CFG_COOKIE_PATH_MAX 1024
/* Only the first 32 policies may generate a cookie: a stream keeps which
 * did in a 32-bit mask (the conversion refuses one further on). */
#define ARN_CFG_COOKIE_GEN_MAX 32

struct arn_cfg_hash_policy {
	uint8_t kind;
	bool terminal;
	/* cookie: ttl was given, so an absent cookie is generated (value from
	 * the connection's addresses) and set on the response, as Envoy does */
	bool cookie_ttl_set;
	const char *name; /* header (lower case), cookie or parameter name */
	size_t name_len;
	/* the ttl's whole seconds (Envoy takes ttl().seconds(), the nanos
	 * dropped): the cookie's Max-Age, 0 a session cookie (no Max-Age) */
	uint32_t cookie_ttl_s;
	const char *cookie_path; /* NULL: no Path attribute */
	size_t cookie_path_len;
};

struct arn_cfg_weighted_cluster {
	struct arn_cfg_ref cluster;
	uint32_t weight;
	struct arn_cfg_header_ops headers;
};

enum arn_cfg_cluster_spec {
	ARN_CFG_CLUSTER_NAME = 0,
	ARN_CFG_CLUSTER_HEADER,
	ARN_CFG_CLUSTER_WEIGHTED,
};

struct arn_cfg_route_action {
	uint8_t spec;		    /* enum arn_cfg_cluster_spec */
	struct arn_cfg_ref cluster; /* NAME; for HEADER: the header name (lower case) */
	struct arn_cfg_weighted_cluster *weighted;
	size_t n_weighted;
	uint64_t total_weight;
	/* When the named cluster does not exist: 503 (G5, flag NC) unless
	 * cluster_not_found_response_code says 404 / 500. */
	uint16_t cluster_not_found_status;
	const char *prefix_rewrite; /* NULL: none */
	size_t prefix_rewrite_len;
	const struct arn_regex *regex_rewrite; /* NULL: none */
	const char *regex_substitution;
	const char *host_rewrite_literal; /* NULL: none */
	bool auto_host_rewrite;
	/* append_x_forwarded_host: a rewritten Host's original value is
	 * appended to x-forwarded-host (unless it is the last value there) */
	bool append_x_forwarded_host;
	uint32_t timeout_ms;	  /* default 15000; 0 disables */
	uint32_t idle_timeout_ms; /* 0: none */
	bool
	    idle_timeout_set; /* idle_timeout given: it replaces stream_idle_timeout (0 disables) */
	/* max_grpc_timeout / max_stream_duration.grpc_timeout_header_max set:
	 * a gRPC request's grpc-timeout (less the offset) is the route's
	 * timeout, capped by it (0: no cap) */
	bool grpc_timeout_set;
	uint32_t max_grpc_timeout_ms;
	uint32_t grpc_timeout_offset_ms;
	struct arn_cfg_retry_policy retry; /* route's, else the virtual host's */
	struct arn_cfg_hash_policy *hash_policies;
	size_t n_hash_policies;
	/* upgrade_configs: each overrides the HCM's for its type (Envoy's
	 * table: a route's enabled wins either way) */
	struct arn_cfg_upgrade *upgrades;
	size_t n_upgrades;
	struct arn_cfg_rate_limit *rate_limits; /* RouteAction.rate_limits */
	size_t n_rate_limits;
	bool include_vh_rate_limits; /* RouteAction.include_vh_rate_limits */
	/* request_mirror_policies: a shadow of the request to each (docs/http.md) */
	struct arn_cfg_mirror *mirrors;
	size_t n_mirrors;
};

/**
 * One RouteAction.request_mirror_policies entry: the cluster a shadow of
 * the request goes to (named, or read from a request header), and the
 * share of requests shadowed (runtime_fraction's default_value; absent:
 * every request).
 */
struct arn_cfg_mirror {
	struct arn_cfg_ref cluster;	 /* the name; with header: the header's (lower case) */
	bool header;			 /* cluster_header */
	uint32_t numerator, denominator; /* denominator 100, 10000 or 1000000 */
};

/**
 * One upgrade type (the request's Upgrade header value, e.g. "websocket",
 * compared without case) allowed or refused: the entries of
 * HttpConnectionManager.upgrade_configs and RouteAction.upgrade_configs.
 */
struct arn_cfg_upgrade {
	const char *type;
	size_t len;
	bool enabled; /* enabled: true unless set false */
};

struct arn_cfg_redirect {
	const char *scheme;	    /* NULL: keep; https_redirect sets "https" */
	const char *host;	    /* NULL: keep */
	uint32_t port;		    /* 0: keep */
	const char *path;	    /* path_redirect, NULL: keep */
	const char *prefix_rewrite; /* NULL: none */
	uint16_t status;	    /* 301 default, 302, 303, 307, 308 */
	bool strip_query;
};

struct arn_cfg_direct {
	uint16_t status;
	const char *body; /* NULL: none */
	size_t body_len;
};

enum arn_cfg_action {
	ARN_CFG_ACTION_ROUTE = 0,
	ARN_CFG_ACTION_REDIRECT,
	ARN_CFG_ACTION_DIRECT,
};

struct arn_cfg_route {
	const char *name;
	/* match */
	uint8_t path_kind; /* enum arn_cfg_path_kind */
	bool case_sensitive;
	const char *path; /* prefix / exact path / separated prefix */
	size_t path_len;
	const struct arn_regex *path_re;
	struct arn_cfg_header_match *headers;
	size_t n_headers;
	struct arn_cfg_query_match *query;
	size_t n_query;
	bool grpc_only;
	/* action */
	uint8_t action; /* enum arn_cfg_action */
	/* ARN_CFG_NO_REQ_EDITS / ARN_CFG_NO_RESP_EDITS: none of the route's
	 * header levels (its weighted clusters, itself, its virtual host, its
	 * table) has edits for that direction. Found once, when the table is
	 * converted, so that the router does not look at four levels a
	 * request; 0 (a route built by hand) has them looked at. */
	uint8_t no_hdr_edits;
	/* A request this route matches first would match it again with any
	 * other headers: neither it nor a route before it in its virtual host
	 * has a header, query parameter or gRPC matcher, so the authority and
	 * path decide. Found with no_hdr_edits; false (a route built by hand)
	 * is the safe answer. The router keeps such a match for a
	 * connection's next request (http_router_filter.c). */
	bool path_decides;
	struct arn_cfg_route_action route;
	struct arn_cfg_redirect redirect;
	struct arn_cfg_direct direct;
	struct arn_cfg_header_ops headers_ops;
	struct arn_cfg_per_filter *per_filter; /* typed_per_filter_config */
	size_t n_per_filter;
	const struct arn_cfg_cors *cors; /* RouteAction.cors (deprecated), or NULL */
	const struct arn_cfg_route_trace *trace; /* tracing and decorator, or NULL */
	/* metadata.filter_metadata encoded for the Lua filter's metadata()
	 * (arn_lua.h); NULL with length UINT32_MAX: past ARN_LUA_ROUTE_MD_MAX */
	const uint8_t *lua_md;
	uint32_t lua_md_len;
};

#define ARN_CFG_NO_REQ_EDITS 1u
#define ARN_CFG_NO_RESP_EDITS 2u

struct arn_cfg_route_index; /* private: a prefilter over the routes' literal path prefixes */
struct arn_cfg_route_reuse; /* private: conv_route.c */

struct arn_cfg_vhost {
	const char *name;
	const struct arn_cfg_route_index *index; /* NULL: routes are scanned in order */
	uint8_t require_tls; /* 0 NONE, 1 EXTERNAL_ONLY, 2 ALL: redirect plain text to https */
	bool include_request_attempt_count;
	struct arn_cfg_route *routes;
	size_t n_routes;
	struct arn_cfg_header_ops headers_ops;
	struct arn_cfg_retry_policy retry;     /* default for its routes */
	struct arn_cfg_per_filter *per_filter; /* typed_per_filter_config */
	size_t n_per_filter;
	/* its route table's typed_per_filter_config (the least specific
	 * level), kept here for arn_cfg_per_filter_find */
	const struct arn_cfg_per_filter *rc_per_filter;
	size_t n_rc_per_filter;
	const struct arn_cfg_cors *cors;	/* VirtualHost.cors (deprecated), or NULL */
	struct arn_cfg_rate_limit *rate_limits; /* VirtualHost.rate_limits */
	size_t n_rate_limits;
};

/* Domain index entry (compiled for Envoy's matching order). */
struct arn_cfg_domain {
	const char *s; /* lower case; for wildcards without the '*' */
	size_t len;
	uint32_t vhost;
};

struct arn_cfg_route_table {
	struct arn_cfg_obj obj;
	struct arn_cfg_vhost *vhosts;
	size_t n_vhosts;
	/* Envoy's order: exact (hash), longest "*.suffix", longest "prefix.*", "*". */
	struct arn_cfg_domain *exact; /* open-addressed, n_exact_slots (power of 2) */
	size_t n_exact_slots;
	struct arn_cfg_domain *suffix; /* longest first */
	size_t n_suffix;
	struct arn_cfg_domain *prefix; /* longest first */
	size_t n_prefix;
	int32_t default_vhost; /* "*", or -1 */
	bool ignore_port_in_host_matching;
	bool most_specific_header_mutations_wins;
	struct arn_cfg_header_ops headers_ops;
	/* RouteConfiguration.typed_per_filter_config (newer than gRPC 1.51's
	 * API copy: lib/proto/newer.c) */
	struct arn_cfg_per_filter *per_filter;
	size_t n_per_filter;
	/* some level of the table turns a filter off by name
	 * (FilterConfig.disabled): arn_cfg_filter_off must be asked */
	bool filter_toggles;
	/* private to lib/config (conv_route.c): what the next version of this
	 * RouteConfiguration may take over instead of converting again */
	const struct arn_cfg_route_reuse *reuse;
};

/**
 * Length of @p host without a trailing ":port" ("[v6]:port" understood, a
 * bare IPv6 literal left alone); *@p port (may be NULL) gets the port or 0.
 * The HTTP layer uses it for the HCM's strip_matching_host_port /
 * strip_any_host_port before calling arn_cfg_route_match() (Envoy strips
 * the Host header itself, so the upstream sees the stripped one too).
 */
size_t arn_cfg_host_without_port(const char *host, size_t len, uint32_t *port);

/** Result of arn_cfg_route_match(). */
struct arn_cfg_route_match {
	const struct arn_cfg_vhost *vhost;
	const struct arn_cfg_route *route;
};

/**
 * Find the virtual host and the first matching route for @p req.
 * @return 0; -ENOENT when no virtual host matches the authority, -ESRCH when
 *   one does but none of its routes match (both: 404, flag NR).
 */
int arn_cfg_route_match(const struct arn_cfg_route_table *rt, const struct arn_cfg_request *req,
			struct arn_cfg_route_match *out);

/**
 * The cluster a ROUTE action sends @p req to: the named one, the one a
 * header names, or a weighted pick by req->random.
 * @return 0 with @p out filled; -ENOENT when cluster_header is absent from
 *   the request (503 NC, as Envoy).
 */
int arn_cfg_route_cluster(const struct arn_cfg_route_action *a, const struct arn_cfg_request *req,
			  struct arn_cfg_ref *out);

/**
 * Rewrite the path of a request routed by @p rt_route (prefix_rewrite or
 * regex_rewrite; the query string is kept) into @p buf.
 * @return the new length; 0 when the route rewrites nothing, or a
 *   regex_rewrite left nothing of the path (no query either: a caller that
 *   configured a rewrite must not send the original path then); -ENOSPC
 *   when the result and its NUL do not fit @p cap.
 */
int arn_cfg_route_rewrite_path(const struct arn_cfg_route *r, const char *path, size_t len,
			       char *buf, size_t cap);

/* ---------------------------------------------------------------------------
 * Listener, filter chains, HttpConnectionManager
 */
enum arn_cfg_codec {
	ARN_CFG_CODEC_AUTO = 0,
	ARN_CFG_CODEC_HTTP1,
	ARN_CFG_CODEC_HTTP2,
};

enum arn_cfg_log_kind {
	ARN_CFG_LOG_FILE = 0,
	ARN_CFG_LOG_STDOUT,
	ARN_CFG_LOG_STDERR,
	ARN_CFG_LOG_OTEL, /* envoy.access_loggers.open_telemetry (grpc) */
	ARN_CFG_LOG_HTTP_GRPC, /* envoy.access_loggers.http_grpc (ALS) */
	ARN_CFG_LOG_TCP_GRPC,  /* envoy.access_loggers.tcp_grpc (ALS) */
};

/* Bounds on a gRPC access logger's configuration (each refused past it,
 * naming the field): attributes are formatted per record, resource
 * attributes are sent with every export. */
#define ARN_CFG_GLOG_ATTRS_MAX 32
#define ARN_CFG_GLOG_MD_MAX 8
/* buffer_size_bytes: at most the worker's queue (http_glog.h) */
#define ARN_CFG_GLOG_BUFFER_MAX 65536
/* log_name, an attribute's key, a resource attribute's key and value:
 * bytes (the resource goes with every export, a key with every record) */
#define ARN_CFG_GLOG_STR_MAX 256

/* A key and a string: an attribute's format string, a resource
 * attribute's value. */
struct arn_cfg_glog_kv {
	const char *key, *value;
	uint32_t key_len, value_len;
};

struct arn_cfg_ext_authz_hdr;

/* A gRPC access logger (Envoy's CommonGrpcAccessLogConfig and its
 * OpenTelemetry / HTTP / TCP configurations). */
struct arn_cfg_grpc_log {
	struct arn_cfg_ref cluster; /* grpc_service.envoy_grpc.cluster_name */
	const char *authority;	    /* envoy_grpc.authority, or NULL */
	uint32_t authority_len;
	uint32_t timeout_ms;		  /* grpc_service.timeout; 0: none */
	struct arn_cfg_ext_authz_hdr *md; /* initial_metadata */
	size_t n_md;
	const char *log_name; /* "" when not set */
	uint32_t log_name_len;
	uint32_t flush_ms;     /* buffer_flush_interval: 1000 */
	uint32_t buffer_bytes; /* buffer_size_bytes: 16384 */
	/* OpenTelemetry's */
	const char *body;	       /* body.string_value's format, or NULL: no body */
	struct arn_cfg_glog_kv *attrs; /* attributes: key, format string */
	size_t n_attrs;
	struct arn_cfg_glog_kv *res_attrs; /* resource_attributes: key, literal */
	size_t n_res_attrs;
	bool builtin_labels; /* !disable_builtin_labels */
	/* HTTP ALS's additional_request_headers_to_log, _response_headers_,
	 * _response_trailers_ (lower case; at most ARN_CFG_GLOG_ATTRS_MAX) */
	const char **req_hdrs, **resp_hdrs, **resp_trls;
	size_t n_req_hdrs, n_resp_hdrs, n_resp_trls;
};

struct arn_cfg_access_log {
	uint8_t kind;
	const char *path;	 /* FILE */
	const char *format;	 /* text format, NULL: Envoy's default */
	const char *json_format; /* JSON object text of json_format, or NULL */
	const char *filter_json; /* JSON of the AccessLogFilter, or NULL (log everything) */
	bool omit_empty_values;	 /* log_format's: no "-" for an absent value, no null key */
	const struct arn_cfg_grpc_log *grpc; /* OTEL, *_GRPC: the gRPC logger's, else NULL */
};

/* An envoy.config.core.v3.SubstitutionFormatString (local_reply_config's
 * body_format and a mapper's body_format_override). */
struct arn_cfg_subst_format {
	const char *text;	  /* text_format / text_format_source, or NULL */
	const char *json;	  /* json_format's object text, or NULL */
	const char *content_type; /* content_type, or NULL: text/plain, application/json */
	bool omit_empty_values;
};

/* Bounds on local_reply_config (each refused past it, naming the field):
 * mappers are tried in order on each local reply; a mapper's headers take
 * the reply's edit slots; a body or a formatted body is written whole. */
#define ARN_CFG_LR_MAPPERS_MAX 64
#define ARN_CFG_LR_HEADERS_MAX 8
#define ARN_CFG_LR_BODY_MAX 65536

/* A ResponseMapper: the first whose filter passes a local reply changes it. */
struct arn_cfg_lr_mapper {
	const char *filter_json; /* the AccessLogFilter's JSON (lib/accesslog) */
	uint16_t status;	 /* status_code, or 0: kept */
	bool has_body;
	const char *body; /* body (may hold NULs), has_body */
	size_t body_len;
	struct arn_cfg_header_add *headers; /* headers_to_add (literal values) */
	size_t n_headers;
	struct arn_cfg_subst_format format; /* body_format_override; NULL text and json: none */
};

/* The HCM's local_reply_config. */
struct arn_cfg_local_reply {
	struct arn_cfg_lr_mapper *mappers;
	size_t n_mappers;
	struct arn_cfg_subst_format format; /* body_format; NULL text and json: none */
};

enum arn_cfg_http_filter {
	ARN_CFG_HF_ROUTER = 0,
	ARN_CFG_HF_HEALTH_CHECK,    /* the HCM's health_check describes it */
	ARN_CFG_HF_RBAC,	    /* http_filter_cfgs[i]: struct arn_cfg_rbac_filter */
	ARN_CFG_HF_LOCAL_RATELIMIT, /* http_filter_cfgs[i]: struct arn_cfg_http_ratelimit */
	ARN_CFG_HF_MCP_GATEWAY,	    /* the HCM's mcp_gateway describes it */
	ARN_CFG_HF_EXT_AUTHZ,	    /* http_filter_cfgs[i]: struct arn_cfg_ext_authz */
	ARN_CFG_HF_CORS,	    /* policies in the route table (arn_cfg_cors_policies) */
	ARN_CFG_HF_JWT_AUTHN,	    /* http_filter_cfgs[i]: struct arn_cfg_jwt_authn */
	ARN_CFG_HF_FAULT,	    /* http_filter_cfgs[i]: struct arn_cfg_fault */
	ARN_CFG_HF_BASIC_AUTH,	    /* http_filter_cfgs[i]: struct arn_cfg_basic_auth */
	ARN_CFG_HF_STATEFUL_SESSION, /* http_filter_cfgs[i]: struct arn_cfg_stateful_session */
	ARN_CFG_HF_GRPC_WEB,	    /* the HCM's grpc_web says it */
	/* http_filter_cfgs[i]: struct arn_cfg_csrf */
	ARN_CFG_HF_CSRF,
	/* http_filter_cfgs[i]: struct arn_cfg_api_key_auth, arn_cfg_cred_injector */
	ARN_CFG_HF_API_KEY_AUTH,
	ARN_CFG_HF_CRED_INJECTOR,
	ARN_CFG_HF_RATELIMIT,	    /* http_filter_cfgs[i]: struct arn_cfg_rls */
	ARN_CFG_HF_OAUTH2,	    /* http_filter_cfgs[i]: struct arn_cfg_oauth2 */
	/* http_filter_cfgs[i]: struct arn_cfg_header_mutation */
	ARN_CFG_HF_HEADER_MUTATION,
	/* http_filter_cfgs[i]: struct arn_cfg_custom_response */
	ARN_CFG_HF_CUSTOM_RESPONSE,
	/* http_filter_cfgs[i]: struct arn_cfg_buffer */
	ARN_CFG_HF_BUFFER,
	/* http_filter_cfgs[i]: struct arn_cfg_ext_proc */
	ARN_CFG_HF_EXT_PROC,
	/* http_filter_cfgs[i]: struct arn_cfg_lua */
	ARN_CFG_HF_LUA,
};

/* McpGateway's defaults and ceilings (docs/mcp.md). */
#define ARN_CFG_MCP_DEFAULT_PATH "/mcp"
#define ARN_CFG_MCP_DEFAULT_MAX_REQUEST (1u << 20)
#define ARN_CFG_MCP_MAX_MAX_REQUEST (16u << 20)
#define ARN_CFG_MCP_DEFAULT_MAX_RESPONSE (4u << 20)
#define ARN_CFG_MCP_MAX_MAX_RESPONSE (64u << 20)
#define ARN_CFG_MCP_DEFAULT_SESSION_IDLE_MS (30u * 60u * 1000u)

/**
 * arion.filters.http.mcp_gateway (McpGateway): the MCP endpoint this
 * connection manager serves and the ToolSet (TDS, X14) it serves from,
 * resolved per request in the generation (NULL there: answer 503 with a
 * JSON-RPC error until it arrives).
 */
struct arn_cfg_mcp_filter {
	struct arn_cfg_ref toolset; /* tds.config_name */
	const char *path;	    /* "/mcp" unless set */
	size_t path_len;
	uint32_t max_request_bytes;	  /* 1 MiB */
	uint32_t max_response_bytes;	  /* 4 MiB */
	uint32_t session_idle_timeout_ms; /* 30 min; 0: never */
};

/** One cluster_min_healthy_percentages entry of the health check filter. */
struct arn_cfg_hc_min_healthy {
	struct arn_cfg_ref cluster;
	uint32_t percent; /* truncated to an integer, as Envoy does */
};

/**
 * envoy.filters.http.health_check (HealthCheck): which requests are health
 * checks (every header matcher must match; ":path" is the request target)
 * and how they are answered.
 */
struct arn_cfg_hc_filter {
	bool pass_through;	/* pass_through_mode */
	uint32_t cache_time_ms; /* pass-through: reuse the upstream's answer this long; 0: off */
	struct arn_cfg_header_match *headers;
	size_t n_headers;
	struct arn_cfg_hc_min_healthy *min_healthy; /* cluster_min_healthy_percentages */
	size_t n_min_healthy;
};

/*
 * Envoy's Http2ProtocolOptions as the downstream HTTP/2 codec applies them
 * (lib/http/http_h2.c). Converted with Envoy's defaults; where Envoy's
 * default is larger than Arion keeps per connection, the value is capped
 * when it is applied (docs/http.md, "HTTP/2"), not here, so that the
 * configuration reads back as written.
 */
struct arn_cfg_h2 {
	uint32_t hpack_table_size;	     /* 4096 */
	uint32_t max_concurrent_streams;     /* 2147483647 (Arion caps it: HTTP_H2_MAX_STREAMS) */
	uint32_t initial_stream_window_size; /* 268435456 (capped: HTTP_H2_MAX_STREAM_WINDOW) */
	uint32_t initial_connection_window_size; /* 268435456 (capped: HTTP_H2_MAX_CONN_WINDOW) */
	uint32_t max_outbound_frames;		 /* 10000 */
	uint32_t max_outbound_control_frames;	 /* 1000 */
	uint32_t max_consecutive_inbound_frames_with_empty_payload;    /* 1 */
	uint32_t max_inbound_priority_frames_per_stream;	       /* 100 */
	uint32_t max_inbound_window_update_frames_per_data_frame_sent; /* 10 */
	/* connection_keepalive (KeepaliveSettings; both sides): all 0 when
	 * unset. PING every interval (+ up to jitter_pct % of it, 15 by
	 * default), and before a stream on an upstream connection that
	 * received nothing for idle_interval (0 on a connection manager: a
	 * client codec's option); no ACK within timeout closes it. */
	uint32_t keepalive_interval_ms;
	uint32_t keepalive_timeout_ms;
	uint32_t keepalive_idle_interval_ms; /* connection_idle_interval */
	double keepalive_jitter_pct;	     /* interval_jitter */
};

/** envoy.filters.http.compressor's library (compressor_library). */
enum arn_cfg_cmp_lib {
	ARN_CFG_CMP_GZIP = 0, /* envoy.compression.gzip.compressor: "gzip" */
	ARN_CFG_CMP_BROTLI,   /* envoy.compression.brotli.compressor: "br" */
	ARN_CFG_CMP_ZSTD,     /* envoy.compression.zstd.compressor: "zstd" */
};

/**
 * One envoy.filters.http.compressor filter (response direction; Arion
 * refuses request compression), Envoy's defaults filled in, the deprecated
 * top-level fields applied where response_direction_config is unset, as
 * Envoy applies them (lib/http/http_compressor.c runs it).
 */
struct arn_cfg_compressor {
	const char *name;	     /* compressor_library.name: the stats' <name> */
	const char *filter_name;     /* its HttpFilter.name (typed_per_filter_config's key) */
	bool off;		     /* its HttpFilter.disabled */
	uint8_t lib;		     /* enum arn_cfg_cmp_lib */
	bool enabled;		     /* common_config.enabled (runtime_enabled): default_value */
	bool response_config;	     /* response_direction_config set: ".response." in stat names */
	bool disable_on_etag;	     /* disable_on_etag_header */
	bool remove_accept_encoding; /* remove_accept_encoding_header */
	bool choose_first;
	uint32_t min_content_length; /* 30 unset (or 0) */
	const char **content_types;  /* lower case; NULL: Envoy's default list */
	size_t n_content_types;
	uint32_t chunk_size; /* output piece, 4096 unset */
	/* gzip */
	int8_t gz_level;     /* -1 (DEFAULT_COMPRESSION), 1..9 */
	uint8_t gz_strategy; /* Gzip.CompressionStrategy */
	uint8_t gz_window;   /* 9..15, 12 */
	uint8_t gz_memlevel; /* 1..9, 5 */
	/* brotli */
	uint8_t br_quality;	/* 0..11, 3 */
	uint8_t br_mode;	/* Brotli.EncoderMode */
	uint8_t br_window;	/* 10..24, 18 */
	uint8_t br_block;	/* 16..24, 24 */
	bool br_no_literal_ctx; /* disable_literal_context_modeling */
	/* zstd */
	uint32_t zs_level;   /* 0: zstd's default */
	uint8_t zs_strategy; /* Zstd.Strategy, 0: zstd's choice */
	bool zs_checksum;    /* enable_checksum */
};

/**
 * A compressor filter's CompressorPerRoute (Envoy's
 * CompressorPerRouteFilterConfig), the most specific level's: `disabled`
 * turns response compression off, `overrides.response_direction_config`
 * on (with its remove_accept_encoding_header), each over the filter's
 * own; `overrides.compressor_library` compresses the route's responses
 * with that library (its encoding and settings) in place of the filter's.
 */
struct arn_cfg_compressor_route {
	int8_t enable;	  /* -1 the filter's, 0 off (disabled), 1 on */
	int8_t remove_ae; /* -1 the filter's, else remove_accept_encoding_header */
	bool has_lib;	  /* lib below is the route's compressor_library */
	/* that library: its fields only (lib, chunk_size, gz_, br_, zs_) */
	struct arn_cfg_compressor lib;
};

/**
 * One envoy.filters.http.decompressor filter, Envoy's defaults filled in
 * (lib/config/conv_decompressor.c; lib/http/http_decompressor.c runs it).
 * Its library is one of enum arn_cfg_cmp_lib's: gzip, br or zstd.
 */
struct arn_cfg_decompressor {
	const char *name;    /* decompressor_library.name: the stats' <name> */
	uint8_t lib;	     /* enum arn_cfg_cmp_lib */
	bool req_enabled;    /* request_direction_config.common_config.enabled */
	bool resp_enabled;   /* response_direction_config.common_config.enabled */
	bool req_ignore_nt;  /* request's ignore_no_transform_header */
	bool resp_ignore_nt; /* response's ignore_no_transform_header */
	bool advertise;	     /* advertise_accept_encoding (true unset) */
	bool br_no_realloc;  /* brotli's disable_ring_buffer_reallocation */
	uint8_t gz_window;   /* 9..15, 15 unset */
	uint32_t chunk_size; /* output piece, 4096 unset */
	uint32_t max_ratio;  /* gzip's max_inflate_ratio (1..1032, 100); 100 for the others */
};

enum {
	ARN_CFG_UNDERSCORES_ALLOW = 0,
	ARN_CFG_UNDERSCORES_REJECT = 1,
	ARN_CFG_UNDERSCORES_DROP = 2,
};
enum {
	ARN_CFG_ESC_SLASHES_KEEP = 1, /* 0 (IMPLEMENTATION_SPECIFIC_DEFAULT) too */
	ARN_CFG_ESC_SLASHES_REJECT = 2,
	ARN_CFG_ESC_SLASHES_REDIRECT = 3,
	ARN_CFG_ESC_SLASHES_FORWARD = 4,
};

struct arn_cfg_hcm {
	const char *stat_prefix;
	uint8_t codec; /* enum arn_cfg_codec */
	/* Routes: inline, or by RDS name (X11) resolved per request. */
	struct arn_cfg_route_table *inline_routes; /* owned (refcounted), or NULL */
	struct arn_cfg_ref rds;			   /* rds.route_config_name when rds */
	uint8_t *http_filters;			   /* enum arn_cfg_http_filter, router last */
	size_t n_http_filters;
	/* per filter: its HttpFilter.name (the key of routes'
	 * typed_per_filter_config) and its configuration (RBAC and
	 * LOCAL_RATELIMIT; NULL for the others) */
	const char **http_filter_names;
	const void **http_filter_cfgs;
	/* per filter: HttpFilter.disabled (off unless the route's, virtual
	 * host's or table's typed_per_filter_config names it); NULL when no
	 * filter is (arn_cfg_filter_off) */
	bool *http_filter_off;
	const struct arn_cfg_hc_filter *health_check; /* ARN_CFG_HF_HEALTH_CHECK's, or NULL */
	const struct arn_cfg_mcp_filter *mcp_gateway; /* ARN_CFG_HF_MCP_GATEWAY's, or NULL */
	uint32_t idle_timeout_ms;	      /* common_http_protocol_options.idle_timeout, 1 h */
	uint32_t request_timeout_ms;	      /* 0: disabled (default) */
	uint32_t stream_idle_timeout_ms;      /* 5 min default; 0 disables */
	uint32_t request_headers_timeout_ms;  /* 10 s default (Arion; Envoy: off); 0 disables */
	uint32_t drain_timeout_ms;	      /* 5 s */
	uint32_t max_request_headers_kb;      /* 60 */
	uint32_t max_headers_count;	      /* 100 */
	uint32_t max_requests_per_connection; /* 0: unlimited */
	bool use_remote_address;
	/* common_http_protocol_options.headers_with_underscores_action:
	 * ARN_CFG_UNDERSCORES_* (Envoy's enum) */
	uint8_t headers_with_underscores;
	/* path_with_escaped_slashes_action: ARN_CFG_ESC_SLASHES_* (Envoy's
	 * enum; IMPLEMENTATION_SPECIFIC_DEFAULT is KEEP_UNCHANGED, Envoy's
	 * default) */
	uint8_t escaped_slashes;
	/* either of the two above, ip_detect_reject or
	 * always_set_request_id_in_response: one test a request */
	bool head_policies;
	uint32_t xff_num_trusted_hops;
	const char *server_name;	      /* "envoy" as Envoy, unless set */
	size_t server_name_len;		      /* strlen(server_name), 0: not known */
	const char *server_line;	      /* "server: " server_name CRLF, or NULL */
	uint8_t server_header_transformation; /* 0 overwrite, 1 append if absent, 2 pass through */
	bool generate_request_id;	      /* true */
	bool suppress_envoy_headers;	      /* router: no x-envoy-upstream-service-time, ... */
	/* envoy.filters.http.grpc_stats: count gRPC calls per cluster
	 * (cluster.<c>.grpc.*), per method with stats_for_all_methods */
	bool grpc_stats;
	bool grpc_stats_all_methods;
	bool grpc_stats_off;	       /* its HttpFilter.disabled */
	const char *grpc_stats_name; /* its HttpFilter.name */
	/* envoy.filters.http.grpc_web: gRPC-Web requests go upstream as gRPC
	 * (http_grpc_web.h) */
	bool grpc_web;
	/* envoy.filters.http.compressor filters, in chain order (a stream's
	 * encoding is chosen among them: http_compressor.c), and whether one
	 * of them, enabled, removes Accept-Encoding from requests by its own
	 * configuration (a route may say otherwise: the router asks
	 * arn_cfg_cmp_strip_accept_encoding) */
	const struct arn_cfg_compressor *compressors;
	size_t n_compressors;
	bool cmp_strip_accept_encoding;
	/* envoy.filters.http.decompressor filters, in chain order
	 * (http_decompressor.c) */
	const struct arn_cfg_decompressor *decompressors;
	size_t n_decompressors;
	bool preserve_external_request_id;
	bool strip_matching_host_port;
	bool strip_any_host_port;
	bool normalize_path;
	bool merge_slashes;
	struct arn_cfg_access_log *access_logs;
	size_t n_access_logs;
	const struct arn_cfg_local_reply *local_reply; /* local_reply_config, or NULL */
	uint32_t delayed_close_timeout_ms;	       /* 1 s */
	uint32_t max_connection_duration_ms; /* 0: none */
	bool add_user_agent;
	bool skip_xff_append;
	/* forward_client_cert_details (enum arn_cfg_fcc; SANITIZE, 0, is
	 * Envoy's default) and set_current_client_cert_details (bits
	 * ARN_CFG_FCC_D_*): lib/http/http_router.c, http_xfcc.c */
	uint8_t fcc;
	uint8_t fcc_details;
	/* internal_address_config (lib/http/http_router.c http_addr_internal):
	 * unset, no address is internal (Envoy 1.36); set without
	 * cidr_ranges, RFC 1918 and loopback; else exactly cidr_ranges */
	bool internal_cfg;
	struct arn_cfg_cidr *internal_cidrs;
	size_t n_internal_cidrs;
	/* original_ip_detection_extensions, in their order (http_router.c
	 * http_client_addr); ip_detect_reject: one of them has
	 * reject_with_status (then head_policies too) */
	const struct arn_cfg_ipdetect *ip_detect;
	size_t n_ip_detect;
	bool ip_detect_reject;
	/* the request's x-request-id on every response (head_policies too) */
	bool always_set_request_id_in_response;
	bool stream_error_on_invalid_http_message;
	bool strip_trailing_host_dot;
	bool accept_http_10;		      /* http_protocol_options */
	const char *default_host_for_http_10; /* or NULL */
	/* http_protocol_options.enable_trailers: trailers go to HTTP/1.1
	 * clients (after a chunked response's last chunk); off, as Envoy,
	 * they are dropped */
	bool enable_trailers;
	/* upgrade_configs: the upgrade types this HCM allows (enabled) or
	 * names but disables; a type in none of them is refused (403) */
	struct arn_cfg_upgrade *upgrades;
	size_t n_upgrades;
	struct arn_cfg_rate_limit *rate_limits; /* RouteAction.rate_limits */
	size_t n_rate_limits;
	bool include_vh_rate_limits; /* RouteAction.include_vh_rate_limits */
	struct arn_cfg_h2 h2;	     /* http2_protocol_options */
	const struct arn_cfg_tracing *tracing; /* tracing (OpenTelemetry), or NULL */
};

/** Has connection manager @p h an HTTP filter of kind @p kind (enum
 * arn_cfg_http_filter)? */
static inline bool arn_cfg_hcm_has_filter(const struct arn_cfg_hcm *h, unsigned kind)
{
	for (size_t i = 0; h && i < h->n_http_filters; i++)
		if (h->http_filters[i] == kind)
			return true;
	return false;
}

/**
 * Whether a request asking to upgrade to @p type (its Upgrade header,
 * @p len bytes) may, as Envoy decides it: a route's upgrade_configs entry
 * for the type decides when there is one (enabled or not); otherwise the
 * HCM's entry, if enabled; a type that neither names is refused.
 * @p a may be NULL (no route action: direct responses, redirects).
 */
bool arn_cfg_upgrade_allowed(const struct arn_cfg_hcm *h, const struct arn_cfg_route_action *a,
			     const char *type, size_t len);

/** DownstreamTlsContext.ocsp_staple_policy (Envoy's numbering). */
enum arn_cfg_ocsp_policy {
	ARN_CFG_OCSP_LENIENT = 0, /* LENIENT_STAPLING: staple when valid, else omit */
	ARN_CFG_OCSP_STRICT,	  /* STRICT_STAPLING: an expired staple fails the handshake */
	ARN_CFG_OCSP_MUST_STAPLE, /* MUST_STAPLE: every certificate needs a staple */
};

/* Downstream TLS (DownstreamTlsContext), secrets by name (X13). */
struct arn_cfg_tls {
	struct arn_cfg_ref *cert_secrets; /* tls_certificate_sds_secret_configs */
	size_t n_cert_secrets;
	struct arn_cfg_ref validation_secret; /* len 0: none */
	bool require_client_certificate;
	bool require_sni;	     /* downstream */
	uint32_t session_timeout_ms; /* downstream; 0: OpenSSL's default */
	const char **alpn;
	size_t n_alpn;
	uint16_t min_version; /* TLS1_2_VERSION etc.; 0: OpenSSL default */
	uint16_t max_version;
	const char *cipher_suites;		/* OpenSSL cipher list joined by ':', or NULL */
	const char *ecdh_curves;		/* joined by ':', or NULL */
	const char *sni;			/* upstream only */
	struct arn_cfg_str_match *san_matchers; /* match_subject_alt_names (default validation) */
	size_t n_san_matchers;
	/* Session resumption (downstream). Tickets are encrypted with the
	 * keys of a Secret of type session_ticket_keys, named here (len 0:
	 * none, a random key per TLS context, as Envoy's default), unless
	 * disable_stateless_session_resumption. */
	struct arn_cfg_ref ticket_keys_secret; /* session_ticket_keys_sds_secret_config */
	bool disable_stateless_session_resumption;
	uint8_t ocsp_staple_policy; /* enum arn_cfg_ocsp_policy (downstream) */
};

/* An envoy.config.core.v3.CidrRange as Envoy's Network::Address::CidrRange
 * holds it: its family and its address masked to its length
 * (truncateIpAddressAndLength). Arion's own addresses are IPv4; IPv6
 * ranges are kept so that a configuration mixing both families means what
 * it means in Envoy (arn_cfg_cidr_has4: no IPv4 address is in them). */
struct arn_cfg_cidr {
	uint32_t addr;	   /* IPv4: host order, masked */
	uint8_t len;	   /* prefix length: 0..32, IPv6 0..128 */
	bool v6;	   /* an IPv6 range: addr6, not addr */
	uint8_t addr6[16]; /* IPv6: network order, masked */
};

/** Is the IPv4 address @p a (host order) in @p c? Envoy's
 * CidrRange::isInRange: an address of the other family is in no range, so
 * an IPv4 address is never in an IPv6 range, the IPv4-mapped
 * ::ffff:0:0/96 included (Envoy's IPv4 peer is an Ipv4Instance). The
 * family test comes first: an IPv4 range costs one byte test more. */
static inline bool arn_cfg_cidr_has4(const struct arn_cfg_cidr *c, uint32_t a)
{
	if (c->v6)
		return false;
	uint32_t mask = c->len ? ~0u << (32 - c->len) : 0;
	return (a & mask) == c->addr;
}

/** Is the IPv6 address @p a (16 bytes, network order) in @p c? Never in an
 * IPv4 range (CidrRange::isInRange); else the first len bits equal. */
static inline bool arn_cfg_cidr_has6(const struct arn_cfg_cidr *c, const uint8_t a[16])
{
	if (!c->v6)
		return false;
	unsigned full = c->len / 8u, rest = c->len % 8u;
	for (unsigned i = 0; i < full; i++)
		if (a[i] != c->addr6[i])
			return false;
	return rest == 0 || ((a[full] ^ c->addr6[full]) & (uint8_t)(0xffu << (8 - rest))) == 0;
}

/* HttpConnectionManager.forward_client_cert_details, Envoy's values */
enum arn_cfg_fcc {
	ARN_CFG_FCC_SANITIZE = 0,
	ARN_CFG_FCC_FORWARD_ONLY,
	ARN_CFG_FCC_APPEND_FORWARD,
	ARN_CFG_FCC_SANITIZE_SET,
	ARN_CFG_FCC_ALWAYS_FORWARD_ONLY,
};
/* An original_ip_detection_extensions entry */
enum arn_cfg_ipdetect_kind {
	ARN_CFG_IPD_CUSTOM_HEADER = 0, /* CustomHeaderConfig */
	ARN_CFG_IPD_XFF,	       /* XffConfig */
};
struct arn_cfg_ipdetect {
	uint8_t kind;
	bool trusted;		/* allow_extension_to_set_address_as_trusted */
	uint16_t reject_status; /* reject_with_status, 0: none */
	const char *header;	/* header_name, lower case */
	size_t header_len;
	uint32_t hops;		    /* xff_num_trusted_hops */
	struct arn_cfg_cidr *cidrs; /* xff_trusted_cidrs */
	size_t n_cidrs;
};

/* set_current_client_cert_details: what the element adds after By= and
 * Hash=, in this order (Envoy's) */
#define ARN_CFG_FCC_D_CERT 1u
#define ARN_CFG_FCC_D_CHAIN 2u
#define ARN_CFG_FCC_D_SUBJECT 4u
#define ARN_CFG_FCC_D_URI 8u
#define ARN_CFG_FCC_D_DNS 16u

/* The L4 filters (tcp_proxy, RBAC, rate and connection limits). */
#include "arn_config_l4.h"

/* FilterChainMatch.source_type */
enum arn_cfg_source_type {
	ARN_CFG_SOURCE_ANY = 0,
	ARN_CFG_SOURCE_LOCAL,	 /* SAME_IP_OR_LOOPBACK */
	ARN_CFG_SOURCE_EXTERNAL, /* EXTERNAL */
};

struct arn_cfg_fc_match {
	uint16_t dst_port; /* 0: any */
	struct arn_cfg_cidr *dst_prefixes;
	size_t n_dst_prefixes;
	const char **server_names; /* lower case; "*.example.com" allowed */
	size_t n_server_names;
	const char *transport_protocol; /* NULL any, "tls", "raw_buffer" */
	const char **alpn;
	size_t n_alpn;
	struct arn_cfg_cidr *src_prefixes;
	size_t n_src_prefixes;
	uint16_t *src_ports;
	size_t n_src_ports;
	/* direct_source_prefix_ranges: the connection's peer before any
	 * PROXY protocol; Arion has none, so the same address as source */
	struct arn_cfg_cidr *direct_src_prefixes;
	size_t n_direct_src_prefixes;
	uint8_t source_type; /* enum arn_cfg_source_type */
};

enum arn_cfg_net_filter {
	ARN_CFG_NF_HCM = 0,
	ARN_CFG_NF_ECHO,
	ARN_CFG_NF_TCP_PROXY,
};

struct arn_cfg_filter_chain {
	const char *name;
	struct arn_cfg_fc_match match;
	struct arn_cfg_tls *tls;	     /* NULL: plain text */
	uint8_t kind;			     /* enum arn_cfg_net_filter: the terminal filter */
	struct arn_cfg_hcm *hcm;	     /* ARN_CFG_NF_HCM */
	struct arn_cfg_tcp_proxy *tcp_proxy; /* ARN_CFG_NF_TCP_PROXY */
	/* the network filters before the terminal one, in order (rbac,
	 * local_ratelimit, connection_limit) */
	struct arn_cfg_l4_filter *l4_filters;
	size_t n_l4_filters;
	/* transport_socket_connect_timeout: how long a connection on this
	 * chain may take to complete its TLS handshake (from the chain's
	 * choice); on expiry it is closed, counted in the listener's
	 * downstream_cx_transport_socket_connect_timeout. 0: no limit of its
	 * own (Envoy's default), the idle timeouts alone */
	uint32_t transport_socket_connect_timeout_ms;
	/* FNV-1a of the FilterChain proto, deterministically encoded: a
	 * listener update that leaves a chain's bytes as they were leaves the
	 * connections on it open (Envoy's in-place filter chain update) */
	uint64_t hash;
};

struct arn_cfg_listener {
	struct arn_cfg_obj obj;
	uint32_t addr; /* IPv4, host order; 0 = any */
	uint16_t port;
	struct arn_cfg_filter_chain *chains;
	size_t n_chains;
	struct arn_cfg_filter_chain *default_chain; /* or NULL */
	bool tls_inspector;
	/* The tls_inspector's initial_read_buffer_size (256..65536), 0 if not
	 * given. Envoy's first read size, doubled up to 64 KiB: it changes no
	 * outcome, and Arion's inspector parses TCP's queue in place, so
	 * there is no buffer to size; kept as configured. */
	uint32_t tls_inspector_read_size;
	/* listener_filters_timeout: how long listener filters (the
	 * tls_inspector) may wait for a connection's first bytes; 15 s by
	 * default, 0: no limit. On expiry the connection is closed, or goes on
	 * as raw_buffer with continue_on_listener_filters_timeout. */
	uint32_t listener_filters_timeout_ms;
	bool continue_on_listener_filters_timeout;
	/* ignore_global_conn_limit: the global downstream connection limit
	 * (overload manager / runtime) does not refuse its connections */
	bool ignore_global_conn_limit;
	uint32_t per_connection_buffer_limit; /* bytes, 1 MiB default */
	uint32_t backlog;	/* tcp_backlog_size: SYN queue bound; 0: the stack's default */
	bool drain_modify_only; /* drain_type MODIFY_ONLY: /healthcheck/fail does not drain it */
	/* socket_options' TCP keepalive (SO_KEEPALIVE, TCP_KEEPIDLE,
	 * TCP_KEEPINTVL, TCP_KEEPCNT): probes on every accepted connection;
	 * keepalive false: none */
	bool keepalive;
	uint32_t keepalive_time_s, keepalive_intvl_s, keepalive_probes;
	/* the listener's own access_log: a connection no filter chain takes
	 * (Envoy's NR, "filter_chain_not_found") is logged there */
	struct arn_cfg_access_log *access_logs;
	size_t n_access_logs;
	const char *stat_prefix;
	/* FNV-1a of the Listener proto without filter_chains and
	 * default_filter_chain: equal in two versions that differ only in
	 * their filter chains, which Envoy updates in place (only the
	 * connections of chains that changed drain) */
	uint64_t base_hash;
	/* envoy.filters.listener.proxy_protocol (listed before any
	 * tls_inspector): the connection's first bytes are a PROXY header,
	 * whose addresses become its downstream remote and local ones */
	bool proxy_protocol;
	bool pp_allow_without;	    /* allow_requests_without_proxy_protocol */
	bool pp_v1_off, pp_v2_off;  /* disallowed_versions */
	const char *pp_stat_prefix; /* the filter's stat_prefix, or NULL */
};

/**
 * Envoy's in-place filter chain update: when listener @p now differs from
 * @p was only in its filter chains (equal base_hash), a connection on
 * @p was's chain @p fc stays open if @p now has a chain with the same
 * FilterChain bytes. @return that chain of @p now (the default chain
 * included), or NULL: the connection drains. Both listeners are the
 * caller's to keep valid.
 */
const struct arn_cfg_filter_chain *arn_cfg_filter_chain_kept(const struct arn_cfg_listener *was,
							     const struct arn_cfg_filter_chain *fc,
							     const struct arn_cfg_listener *now);

/** Most filter chains a listener may have (selection works on the stack). */
#define ARN_CFG_MAX_CHAINS 1024

/** Inputs of filter chain selection (Envoy's order of criteria). */
struct arn_cfg_fc_input {
	uint32_t dst_addr; /* host order */
	uint16_t dst_port;
	uint32_t src_addr;
	uint16_t src_port;
	/* the TCP peer when a PROXY header gave src_addr (0: src_addr):
	 * direct_source_prefix_ranges */
	uint32_t direct_src_addr;
	const char *server_name; /* SNI, NULL if none */
	size_t server_name_len;
	const char *transport_protocol; /* "tls" or "raw_buffer"; NULL = raw_buffer */
	const char *const *alpn;
	size_t n_alpn;
};

/**
 * Envoy's filter chain selection, in Envoy's order of criteria:
 * destination port, destination IP (longest prefix), server name (exact,
 * then the longest "*.suffix"), transport protocol, application protocols
 * (the client's first ALPN name that some chain lists), direct source IP,
 * source type (SAME_IP_OR_LOOPBACK / EXTERNAL before ANY), source IP
 * (longest prefix), source port. At each step only the chains that match
 * most specifically go on, and a chain with no condition on a criterion
 * matches it least specifically; as in Envoy, a later step never falls
 * back to chains an earlier step dropped. @return the chain, else the
 * default chain, or NULL (close the connection).
 */
const struct arn_cfg_filter_chain *arn_cfg_filter_chain_select(const struct arn_cfg_listener *l,
							       const struct arn_cfg_fc_input *in);

/* ---------------------------------------------------------------------------
 * Cluster and endpoints
 */
enum arn_cfg_cluster_type {
	ARN_CFG_CLUSTER_STATIC = 0,
	ARN_CFG_CLUSTER_EDS,
	ARN_CFG_CLUSTER_STRICT_DNS,
	ARN_CFG_CLUSTER_LOGICAL_DNS,
};

/* Limits of STRICT_DNS / LOGICAL_DNS clusters (docs/security.md) */
#define ARN_CFG_DNS_MAX_HOSTS 64     /* lb_endpoints (hostnames) per cluster */
#define ARN_CFG_DNS_MAX_ADDRS 32     /* addresses kept per hostname resolution */
#define ARN_CFG_DNS_MAX_INFLIGHT 4   /* resolutions running at once (resolver threads) */
#define ARN_CFG_DNS_MAX_NAME 253     /* a hostname's length */

/*
 * A DNS cluster's resolution settings (Envoy's Cluster fields). Its hosts
 * come from lib/config/dns.c on the control lcore, published as the
 * ClusterLoadAssignment named like the cluster, exactly as an EDS update.
 */
struct arn_cfg_dns {
	uint32_t refresh_ms;	 /* dns_refresh_rate; 5000 */
	uint32_t fail_base_ms;	 /* dns_failure_refresh_rate.base_interval; refresh_ms */
	uint32_t fail_max_ms;	 /* .max_interval; 10 x base */
	uint8_t family;		 /* dns_lookup_family, Envoy's numbers (AUTO = 0) */
	bool wait_for_warm;	 /* wait_for_warm_on_init; true */
	bool respect_ttl;	 /* respect_dns_ttl: refresh at the answer's TTL */
	const char *la;		 /* load_assignment, serialized, hostnames as given */
	size_t la_len;
	size_t n_hosts;		 /* lb_endpoints, in order across localities */
	const char **hosts;	 /* socket_address.address of each */
};

enum arn_cfg_lb {
	ARN_CFG_LB_ROUND_ROBIN = 0,
	ARN_CFG_LB_LEAST_REQUEST,
	ARN_CFG_LB_RANDOM,
	ARN_CFG_LB_RING_HASH,
	ARN_CFG_LB_MAGLEV,
};

struct arn_cfg_thresholds {
	uint8_t priority;	       /* 0 DEFAULT, 1 HIGH */
	uint32_t max_connections;      /* 1024 */
	uint32_t max_pending_requests; /* 1024 */
	uint32_t max_requests;	       /* 1024 */
	uint32_t max_retries;	       /* 3 */
	uint32_t max_connection_pools; /* UINT32_MAX: unlimited */
	bool track_remaining;	       /* circuit_breakers.<priority>.remaining_* gauges */
};

enum arn_cfg_hc_kind {
	ARN_CFG_HC_HTTP = 0,
	ARN_CFG_HC_TCP,
};

/* An HTTP health check's request: headers added, and its size (what
 * worker 0 writes it into). */
#define ARN_CFG_HC_MAX_HEADERS 32
#define ARN_CFG_HC_REQUEST_MAX 4096

struct arn_cfg_health_check {
	uint8_t kind;
	uint32_t timeout_ms;
	uint32_t interval_ms;
	uint32_t interval_jitter_ms;
	uint32_t unhealthy_threshold;
	uint32_t healthy_threshold;
	uint32_t no_traffic_interval_ms; /* 60 s */
	uint32_t unhealthy_interval_ms;
	uint32_t unhealthy_edge_interval_ms; /* default: unhealthy_interval */
	uint32_t healthy_edge_interval_ms;   /* default: interval */
	uint32_t initial_jitter_ms;
	uint32_t interval_jitter_percent;
	/* reuse_connection (default true): a host's checks share one
	 * connection while it stays open and idle (lib/http/http_hc.c) */
	bool reuse_connection;
	/* HTTP */
	const char *host; /* NULL: the cluster name */
	const char *path;
	uint32_t *expected_statuses; /* pairs [start, end); default [200, 201) */
	size_t n_expected_statuses;
	/* request_headers_to_add / _to_remove (req_* only; literal values:
	 * command operators are refused), at most ARN_CFG_HC_MAX_HEADERS
	 * added, the request at most ARN_CFG_HC_REQUEST_MAX bytes */
	struct arn_cfg_header_ops headers;
	/* TCP: payloads as bytes (hex decoded); send NULL = connect only */
	uint8_t *send;
	size_t send_len;
	uint8_t **receive;
	size_t *receive_len;
	size_t n_receive;
};

struct arn_cfg_outlier {
	bool present;
	uint32_t consecutive_5xx;			/* 5 */
	uint32_t consecutive_gateway_failure;		/* 5 */
	uint32_t consecutive_local_origin_failure;	/* 5 */
	uint32_t interval_ms;				/* 10 s */
	uint32_t base_ejection_time_ms;			/* 30 s */
	uint32_t max_ejection_time_ms;			/* 300 s */
	uint32_t max_ejection_percent;			/* 10 */
	uint32_t enforcing_consecutive_5xx;		/* 100 */
	uint32_t enforcing_consecutive_gateway_failure; /* 0 */
	uint32_t enforcing_success_rate;		/* 100 */
	uint32_t success_rate_minimum_hosts;		/* 5 */
	uint32_t success_rate_request_volume;		/* 100 */
	uint32_t success_rate_stdev_factor;		/* 1900 */
	uint32_t failure_percentage_threshold;		/* 85 */
	uint32_t enforcing_failure_percentage;		/* 0 */
	uint32_t failure_percentage_minimum_hosts;	/* 5 */
	uint32_t failure_percentage_request_volume;	/* 50 */
	bool split_external_local_origin_errors;
	uint32_t enforcing_consecutive_local_origin_failure; /* 100 */
	uint32_t enforcing_local_origin_success_rate;	     /* 100 */
	uint32_t enforcing_failure_percentage_local_origin;  /* 0 */
};

/* The most max_headers_count Arion can honour (a message's fields live in
 * a fixed array per stream, one slot kept free: lib/http's HTTP_MAX_HDRS);
 * a larger value is refused rather than quietly lowered. */
#define ARN_CFG_MAX_HEADERS_COUNT 127

struct arn_cfg_http_proto {
	uint8_t upstream; /* 0 HTTP/1.1 (default), 1 HTTP/2 (explicit), 2 use downstream, 3 auto */
	uint32_t idle_timeout_ms;	      /* common_http_protocol_options.idle_timeout; 1 h */
	uint32_t max_requests_per_connection; /* 0: unlimited */
	uint32_t max_headers_count;	      /* 100 */
	uint32_t max_connection_duration_ms;
	/* Http1ProtocolOptions.enable_trailers (explicit_http_config's or the
	 * deprecated cluster field): trailers go to HTTP/1.1 hosts after a
	 * chunked request's last chunk; off, as Envoy, they are dropped */
	bool enable_trailers;
	/* http2_protocol_options for HTTP/2 to the hosts (the deprecated
	 * cluster field or explicit_http_config's), Envoy's defaults when
	 * unset; lib/http/http_upstream_h2.c caps what it keeps */
	struct arn_cfg_h2 h2;
};

enum arn_cfg_health {
	ARN_CFG_HEALTH_UNKNOWN = 0, /* counts as healthy */
	ARN_CFG_HEALTH_HEALTHY,
	ARN_CFG_HEALTH_UNHEALTHY,
	ARN_CFG_HEALTH_DRAINING,
	ARN_CFG_HEALTH_TIMEOUT,
	ARN_CFG_HEALTH_DEGRADED,
};

struct arn_cfg_endpoint {
	uint32_t addr; /* IPv4, host order */
	uint16_t port;
	uint8_t health;	      /* enum arn_cfg_health */
	uint32_t weight;      /* 1 default */
	const char *hostname; /* or NULL */
	/* Endpoint.health_check_config: the port active checks go to instead
	 * of port (0: the same), the Host they send when the check names none
	 * (NULL: the cluster's name) */
	uint16_t hc_port;
	const char *hc_hostname;
	/* LbEndpoint.metadata.filter_metadata["envoy.transport_socket_match"]:
	 * its fields, which choose the cluster's transport_socket_matches
	 * entry (arn_cfg_tsm_resolve); n_tsm 0: none */
	const struct arn_cfg_tsm_kv *tsm;
	uint8_t n_tsm;
};

struct arn_cfg_locality {
	const char *region, *zone, *sub_zone;
	uint32_t weight; /* 0: unset */
	struct arn_cfg_endpoint *endpoints;
	size_t n_endpoints;
};

struct arn_cfg_priority {
	struct arn_cfg_locality *localities;
	size_t n_localities;
	size_t n_endpoints;
};

/*
 * transport_socket_matches: one field of a match's `match` Struct or of an
 * endpoint's envoy.transport_socket_match metadata, compared as Envoy's
 * ValueUtil::equal (same kind, same value; numbers as doubles).
 */
#define ARN_CFG_TSM_MAX 64	  /* transport_socket_matches per cluster */
#define ARN_CFG_TSM_FIELDS_MAX 16 /* fields of a match, or of an endpoint's metadata */
#define ARN_CFG_TSM_STR_MAX 256	  /* bytes of a key or a string value */
enum arn_cfg_tsm_kind {
	ARN_CFG_TSM_OTHER = 0, /* an endpoint's list or struct: equals no match value */
	ARN_CFG_TSM_NULL,
	ARN_CFG_TSM_NUMBER,
	ARN_CFG_TSM_STRING,
	ARN_CFG_TSM_BOOL,
};
struct arn_cfg_tsm_kv {
	const char *key;
	uint16_t key_len;
	uint8_t kind; /* enum arn_cfg_tsm_kind */
	bool b;
	uint16_t str_len;
	const char *str;
	double num;
};

struct arn_cfg_cluster;
/** One Cluster.TransportSocketMatch, or a cluster's default (its own
 * transport_socket, named "default" as Envoy's stats). */
struct arn_cfg_ts_match {
	const struct arn_cfg_cluster *cluster; /* the cluster that holds it */
	const char *name;
	const struct arn_cfg_tsm_kv *kv; /* the match's fields; none: every endpoint */
	uint8_t n_kv;
	bool is_default;
	struct arn_cfg_tls *tls; /* NULL: plain text (raw_buffer, or no socket) */
	/* envoy.transport_sockets.upstream_proxy_protocol around it: the
	 * PROXY header's version (1, 2) written first; 0: none */
	uint8_t pp_version;
};

/** A ClusterLoadAssignment (EDS), or a STATIC cluster's load_assignment. */
struct arn_cfg_endpoints {
	struct arn_cfg_obj obj;
	uint32_t overprovisioning_factor;    /* percent; 140 default */
	struct arn_cfg_priority *priorities; /* index = priority; gaps are empty */
	size_t n_priorities;
	size_t n_endpoints; /* all priorities */
};

struct arn_cfg_cluster {
	struct arn_cfg_obj obj;
	uint8_t type;				 /* enum arn_cfg_cluster_type */
	uint8_t lb;				 /* enum arn_cfg_lb */
	const char *alt_stat_name;		 /* or NULL: stats use the cluster name */
	uint32_t connect_timeout_ms;		 /* > 0 */
	uint32_t per_connection_buffer_limit;	 /* 1 MiB default */
	struct arn_cfg_thresholds thresholds[2]; /* [0] DEFAULT, [1] HIGH */
	/* circuit_breakers.per_host_thresholds' max_connections (the one
	 * field Envoy enforces per host): connections open to each host
	 * across workers; UINT32_MAX: none */
	uint32_t host_max_connections;
	/* upstream_connection_options.tcp_keepalive: probes on every
	 * upstream connection (idle s, interval s, count: Linux's defaults
	 * 7200 / 75 / 9 for what it leaves unset); keepalive false: none */
	bool keepalive;
	uint32_t keepalive_time_s, keepalive_intvl_s, keepalive_probes;
	struct arn_cfg_health_check *health_checks;
	size_t n_health_checks;
	struct arn_cfg_outlier outlier;
	uint32_t healthy_panic_threshold;      /* percent x 100 (5000 = 50%) */
	uint32_t least_request_choices;	       /* 2 */
	uint64_t ring_min_size, ring_max_size; /* 1024, 8M */
	uint8_t ring_hash_fn;		       /* 0 XX_HASH, 1 MURMUR_HASH_2 */
	uint64_t maglev_table_size;	       /* 65537 */
	struct arn_cfg_tls *upstream_tls;      /* NULL: plain text */
	uint8_t upstream_pp; /* its transport_socket's PROXY header version (1, 2); 0: none */
	struct arn_cfg_http_proto http;
	uint32_t max_requests_per_connection;
	/* STATIC: its load_assignment (owned, refcounted). EDS: NULL; the
	 * ClusterLoadAssignment named like the cluster is looked up per
	 * generation (X12). */
	struct arn_cfg_endpoints *static_endpoints;
	/* common_lb_config.override_host_status (override_host_set): the
	 * states (bit 1 << enum arn_cfg_health, Envoy's HealthStatus numbers)
	 * a stateful session's host may be in; unset: Envoy's default
	 * (UNKNOWN, HEALTHY, DEGRADED) */
	uint8_t override_host_mask;
	bool override_host_set;
	/* common_lb_config.locality_weighted_lb_config: a priority's traffic
	 * is shared among its localities by their load_balancing_weight
	 * (Envoy's EDF over effective weights; http_lb.c), then the lb_policy
	 * picks among the chosen locality's hosts */
	bool locality_weighted;
	/* STRICT_DNS, LOGICAL_DNS: resolution settings; NULL otherwise */
	const struct arn_cfg_dns *dns;
	/* transport_socket_matches, in order (n_ts_matches 0: none, every
	 * endpoint uses upstream_tls); ts_default: upstream_tls as the match
	 * no entry gave (its cluster set when there are matches) */
	struct arn_cfg_ts_match *ts_matches;
	size_t n_ts_matches;
	struct arn_cfg_ts_match ts_default;
	/* HTTP/1.1 (http.upstream 0) and no TLS toward any endpoint (no
	 * upstream_tls, no transport_socket_matches): the pools' usual
	 * checkout, one test (http_up_acquire) */
	bool plain_h1;
};

/**
 * The transport socket endpoint @p ep of cluster @p c connects with, as
 * Envoy's TransportSocketMatcherImpl::resolve: the first match all of whose
 * fields equal the endpoint's envoy.transport_socket_match metadata (a
 * match without fields matches every endpoint), else &c->ts_default.
 * @return a pointer into @p c (never NULL).
 */
const struct arn_cfg_ts_match *arn_cfg_tsm_resolve(const struct arn_cfg_cluster *c,
						   const struct arn_cfg_endpoint *ep);

/** A cluster and the endpoints that serve it, as of one generation. */
struct arn_cfg_cluster_view {
	const struct arn_cfg_cluster *cluster;
	const struct arn_cfg_endpoints *endpoints; /* never NULL (may be empty) */
};

/* ---------------------------------------------------------------------------
 * Secrets
 */
enum arn_cfg_secret_kind {
	ARN_CFG_SECRET_TLS_CERT = 0,
	ARN_CFG_SECRET_VALIDATION,
	ARN_CFG_SECRET_TICKET_KEYS, /* session_ticket_keys */
	ARN_CFG_SECRET_GENERIC,	    /* generic_secret (oauth2's client and HMAC secrets) */
};

/** Bytes of a generic_secret's secret (docs/security.md). */
#define ARN_CFG_GENERIC_SECRET_MAX 4096u

/** Bytes in one session ticket key (Envoy's TlsSessionTicketKeys: a 16-byte
 * name, a 32-byte HMAC-SHA256 key, a 32-byte AES-256-CBC key). */
#define ARN_CFG_TICKET_KEY_LEN 80u

/** CertificateValidationContext.max_verify_depth's ceiling and default. */
#define ARN_CFG_MAX_VERIFY_DEPTH 100u

/* OpenSSL objects, opaque here so that users need not include OpenSSL. */
struct x509_st;
struct evp_pkey_st;
struct stack_st_X509;
struct stack_st_X509_CRL;
struct x509_store_st;

struct arn_cfg_secret {
	struct arn_cfg_obj obj;
	uint8_t kind;
	/* TLS_CERT: the certificate_chain's file, VALIDATION: the
	 * trusted_ca's; NULL when inline (admin /certs' "path") */
	const char *path;
	/* TLS_CERT: leaf, intermediates (may be empty), key (matches leaf). */
	struct x509_st *cert;
	struct stack_st_X509 *chain;
	struct evp_pkey_st *key;
	/* TLS_CERT: ocsp_staple, a DER OCSPResponse that parsed, is successful
	 * and is for the leaf (its serial number, as Envoy checks); NULL: none
	 * (refused for a certificate with the must-staple extension). */
	const uint8_t *ocsp_staple;
	size_t ocsp_staple_len;
	/* VALIDATION: trusted CAs, and SAN matchers */
	struct x509_store_st *ca;
	size_t n_ca;
	struct arn_cfg_str_match *san_matchers;
	size_t n_san_matchers;
	/* VALIDATION: the CRLs of crl and those found in trusted_ca (Envoy
	 * takes both), or NULL; checked for the whole chain. */
	struct stack_st_X509_CRL *crls;
	/* VALIDATION: max_verify_depth as Envoy counts it (certificates after
	 * the leaf, the trust anchor included: 1 = leaf and one CA), 0..100;
	 * only when has_max_verify_depth (else 100). */
	bool has_max_verify_depth;
	uint32_t max_verify_depth;
	/* TICKET_KEYS: n_ticket_keys x ARN_CFG_TICKET_KEY_LEN bytes, in the
	 * configured order (the first encrypts, any decrypts); cleansed when
	 * the Secret is freed. */
	const uint8_t *ticket_keys;
	size_t n_ticket_keys;
	/* GENERIC: the secret's bytes (1 to ARN_CFG_GENERIC_SECRET_MAX), in
	 * the Secret's pool, cleansed when the Secret is freed */
	const uint8_t *generic;
	size_t generic_len;
};

/* ---------------------------------------------------------------------------
 * ToolSet (TDS): the MCP servers an MCP gateway filter aggregates
 */

/** Most backends in one ToolSet, and the longest backend name. */
#define ARN_CFG_MCP_MAX_BACKENDS 64
#define ARN_CFG_MCP_MAX_NAME 64
/** Most request_headers_to_add of one backend: each request to it carries
 * them beside the gateway's own (at most 5), in a fixed array per
 * backend request (lib/http/http_mcp.c, MCP_LEG_HDRS). */
#define ARN_CFG_MCP_MAX_BACKEND_HEADERS 16
/** Longest tools_list_cache_ttl (ms). */
#define ARN_CFG_MCP_MAX_CACHE_TTL_MS (3600u * 1000u)
#define ARN_CFG_MCP_DEFAULT_SEPARATOR "__"
#define ARN_CFG_MCP_DEFAULT_BACKEND_TIMEOUT_MS 30000u

struct arn_cfg_mcp_backend {
	const char *name; /* [A-Za-z0-9_.-]{1,64}, unique in the ToolSet */
	size_t name_len;
	struct arn_cfg_ref cluster; /* resolved per request (G5) */
	const char *path;	    /* "/mcp" unless set */
	size_t path_len;
	uint32_t timeout_ms;		    /* 30 s; 0: none */
	struct arn_cfg_header_add *headers; /* request_headers_to_add */
	size_t n_headers;
};

/** A ToolMatcher: the tool's own name (as its backend lists it), and its backend. */
struct arn_cfg_mcp_tool_match {
	struct arn_cfg_str_match name;
	const char *backend; /* NULL: any backend */
	size_t backend_len;
};

enum arn_cfg_mcp_prefix {
	ARN_CFG_MCP_PREFIX_ALWAYS = 0, /* ToolSet.PrefixMode's numbering */
	ARN_CFG_MCP_PREFIX_ON_COLLISION,
	ARN_CFG_MCP_PREFIX_NEVER,
};

enum arn_cfg_mcp_principal_kind {
	ARN_CFG_MCP_PRINCIPAL_HEADER = 0,
	ARN_CFG_MCP_PRINCIPAL_SAN,
};

struct arn_cfg_mcp_principal {
	uint8_t kind;			    /* enum arn_cfg_mcp_principal_kind */
	struct arn_cfg_header_match header; /* HEADER */
	struct arn_cfg_str_match san;	    /* SAN */
};

struct arn_cfg_mcp_access_rule {
	struct arn_cfg_mcp_tool_match *tools; /* at least one */
	size_t n_tools;
	struct arn_cfg_mcp_principal *principals; /* at least one; any one admits */
	size_t n_principals;
};

struct arn_cfg_toolset {
	struct arn_cfg_obj obj;
	struct arn_cfg_mcp_backend *backends; /* 1..ARN_CFG_MCP_MAX_BACKENDS, in order */
	size_t n_backends;
	struct arn_cfg_mcp_tool_match *allow; /* empty: every tool */
	size_t n_allow;
	struct arn_cfg_mcp_tool_match *deny;
	size_t n_deny;
	uint8_t prefix_mode;   /* enum arn_cfg_mcp_prefix */
	const char *separator; /* "__" unless set; "" only with PREFIX_NEVER */
	size_t separator_len;
	struct arn_cfg_mcp_access_rule *rules;
	size_t n_rules;
	uint32_t tools_list_cache_ttl_ms; /* 0: no cache */
};

/* ---------------------------------------------------------------------------
 * Generation lookups (worker side). @p g from arn_config_gen(); results are
 * valid until the caller's next quiescent state unless pinned.
 */

/** arn_cfg_gen_id(), for a worker that asks in every loop iteration: the
 * id is a generation's first member (store.c asserts it), so it is read
 * without the generation's definition. */
static inline uint64_t arn_cfg_gen_id_fast(const struct arn_cfg_gen *g)
{
	return *(const uint64_t *)(const void *)g;
}
/** Generation number (1 = the first published; 0 = the empty start).
 * Inline: the router and the drain ask on every request. */
static inline uint64_t arn_cfg_gen_id(const struct arn_cfg_gen *g)
{
	return arn_cfg_gen_id_fast(g);
}
/**
 * The id of the last generation (up to @p g) whose objects of type @p t are
 * not those of the generation before it: two generations with the same
 * value have the very same objects of that type (and no ABA: ids only grow).
 */
uint64_t arn_cfg_gen_type_changed(const struct arn_cfg_gen *g, enum arn_cfg_type t);

struct arn_hamt;
/**
 * The persistent trie (hamt.h) of @p g's objects of type @p t, NULL when
 * there are none. Control lcore: a holder of a reference (arn_hamt_ref,
 * dropped with arn_hamt_unref(.., arn_cfg_obj_unref)) keeps the objects
 * alive, and arn_hamt_diff against a later generation's tells what changed
 * in a few nodes per change (issue 17: lib/http's snapshot follows one
 * changed cluster among 10,000 without walking them).
 */
struct arn_hamt *arn_cfg_gen_trie(const struct arn_cfg_gen *g, enum arn_cfg_type t);

/** Active (non-warming) listener bound to addr:port, else to 0.0.0.0:port, else NULL. */
const struct arn_cfg_listener *arn_cfg_listener_find(const struct arn_cfg_gen *g, uint32_t addr,
						     uint16_t port);

/** Active listeners, for binding: calls @p fn for each; returns the count. */
size_t arn_cfg_listener_foreach(const struct arn_cfg_gen *g,
				void (*fn)(void *ctx, const struct arn_cfg_listener *l), void *ctx);

/** Active clusters of @p g (in no particular order): calls @p fn for each; returns the count. */
size_t arn_cfg_cluster_foreach(const struct arn_cfg_gen *g,
			       void (*fn)(void *ctx, const struct arn_cfg_cluster *c), void *ctx);

/** Listener (or any type) by name; NULL if absent in @p g. */
const void *arn_cfg_find(const struct arn_cfg_gen *g, enum arn_cfg_type t, const char *name,
			 size_t len, uint64_t hash);

/**
 * The route table an HCM uses: its inline one, or the RouteConfiguration
 * named by rds in @p g. NULL: none (RDS timed out during warming, or was
 * removed): answer 404 NR.
 */
const struct arn_cfg_route_table *arn_cfg_hcm_routes(const struct arn_cfg_gen *g,
						     const struct arn_cfg_hcm *h);

/**
 * Cluster by name with its endpoints.
 * @return 0; -ENOENT: no such cluster (G5: 503 with flag NC).
 */
int arn_cfg_cluster_resolve(const struct arn_cfg_gen *g, const struct arn_cfg_ref *name,
			    struct arn_cfg_cluster_view *out);

/** Secret by name, or NULL. */
const struct arn_cfg_secret *arn_cfg_secret_find(const struct arn_cfg_gen *g,
						 const struct arn_cfg_ref *name);

/**
 * The ToolSet an MCP gateway filter serves from, or NULL (not received yet,
 * or removed: the filter answers 503 with a JSON-RPC error).
 */
const struct arn_cfg_toolset *arn_cfg_toolset_find(const struct arn_cfg_gen *g,
						   const struct arn_cfg_ref *name);

/* ---- tracing (HCM tracing, envoy.tracers.opentelemetry; conv_tracing.c) ---- */

#define ARN_CFG_TRACE_TAGS_MAX 32  /* custom_tags of one level */
#define ARN_CFG_TRACE_MD_MAX 16	   /* the exporter's initial_metadata */
#define ARN_CFG_TRACE_TAG_VALUE_MAX 1024 /* a literal's or a default's bytes */

enum arn_cfg_trace_tag_kind {
	ARN_CFG_TRACE_TAG_LITERAL = 0, /* literal, and environment (read at conversion) */
	ARN_CFG_TRACE_TAG_HEADER = 1,  /* request_header: its first value, else the default */
};

/* One custom tag: set on the span when its value is not empty (Envoy's
 * CustomTagBase::apply). */
struct arn_cfg_trace_tag {
	const char *tag;
	const char *value;  /* literal / environment value; request_header's default */
	const char *header; /* request_header: the name, lower case */
	uint32_t tag_len, value_len, header_len;
	uint8_t kind; /* enum arn_cfg_trace_tag_kind */
};

/* The HCM's sampling rates are per 10000, as Envoy rounds a Percent
 * (PROTOBUF_PERCENT_TO_ROUNDED_INTEGER_OR_DEFAULT to 10000). */
struct arn_cfg_ext_authz_hdr;
struct arn_cfg_tracing {
	struct arn_cfg_ref cluster; /* grpc_service.envoy_grpc.cluster_name */
	const char *authority;	    /* envoy_grpc.authority, or NULL */
	uint32_t authority_len;
	uint32_t timeout_ms; /* grpc_service.timeout; 0: none */
	struct arn_cfg_ext_authz_hdr *md; /* initial_metadata */
	size_t n_md;
	const char *service_name; /* resource service.name */
	uint32_t service_name_len;
	struct arn_cfg_fraction client_sampling, random_sampling, overall_sampling; /* 100 % */
	uint32_t max_path_tag_length;						    /* 256 */
	struct arn_cfg_trace_tag *tags;
	size_t n_tags;
	/* spawn_upstream_span (Envoy 1.29): a CLIENT span per upstream
	 * request, the server span's child */
	bool spawn_upstream_span;
	/* the provider: enum arn_cfg_tracer. With ZIPKIN, cluster is
	 * collector_cluster, service_name the node's cluster (the spans'
	 * localEndpoint.serviceName, "" for none), and: */
	uint8_t tracer;
	const char *zk_path; /* collector_endpoint: the POST's path */
	uint32_t zk_path_len;
	const char *zk_host; /* collector_hostname, else collector_cluster */
	uint32_t zk_host_len;
	bool zk_trace_id_128bit;     /* trace_id_128bit (false) */
	bool zk_shared_span_context; /* shared_span_context (true) */
};

/* HCM tracing's provider (struct arn_cfg_tracing.tracer) */
enum arn_cfg_tracer {
	ARN_CFG_TRACER_OTEL = 0, /* envoy.tracers.opentelemetry */
	ARN_CFG_TRACER_ZIPKIN,	 /* envoy.tracers.zipkin */
};

/* A route's tracing (overrides) and decorator. */
struct arn_cfg_route_trace {
	/* FractionalPercent overrides (denominator 0: the HCM's) */
	struct arn_cfg_fraction client_sampling, random_sampling, overall_sampling;
	struct arn_cfg_trace_tag *tags;
	size_t n_tags;
	const char *operation; /* decorator.operation, or NULL */
	uint32_t operation_len;
	bool propagate; /* decorator.propagate (true) */
};

#endif
