/*
 * lib/config internals: the conversion context, reflection helpers over
 * upb, and the converters' entry points (memory pools: pool.h).
 */
#ifndef ARN_CONFIG_INT_H
#define ARN_CONFIG_INT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "upb/def.h"
#include "upb/msg.h"
#include "upb/reflection.h"
#include "upb/upb.h"

#include "arn_config_model.h"
#include "arn_sb.h"
#include "pool.h"

/* ---- key material (redact.c) ---------------------------------------------- */

/**
 * Test hook: called with every buffer that held (or may have held) key
 * material as it is freed, before (@p wiped false) and after (true) it is
 * cleansed. NULL outside tests. Control lcore.
 */
extern void (*arn_config_wipe_hook)(const void *p, size_t len, bool wiped);
/** OPENSSL_cleanse @p len bytes of @p p (through the hook). NULL is a no-op. */
void conv_wipe(void *p, size_t len);
/** conv_wipe(), then free(@p p). NULL is a no-op. */
void conv_wipe_free(void *p, size_t len);
/** A upb arena whose blocks are cleansed when it is freed; NULL on ENOMEM. */
upb_Arena *conv_wipe_arena(void);
/**
 * @p len bytes of a serialized @p md, re-encoded with every sensitive field
 * (private_key, password, private_key_provider, GenericSecret.secret,
 * session ticket keys, conv_cred_fields; inside Any values too) replaced
 * by "[redacted]", and its unknown fields dropped unless @p keep_unknown
 * (an accepted resource's: the strict wire walk let through only the
 * fields newer than gRPC's API copy, which the dump shows). @return a
 * malloc'd copy (*@p out_len bytes), or NULL if the bytes do not decode or
 * memory ran out.
 */
char *conv_redacted_copy(const upb_MessageDef *md, const char *bytes, size_t len, bool keep_unknown,
			 size_t *out_len);
/* A filter configuration's field that holds credentials (Envoy's
 * udpa.annotations.sensitive): in messages whose full name starts with
 * message, in a resource whose bytes hold type_url_part (an Any's type). */
struct conv_cred_field {
	const char *type_url_part, *message, *field;
};
extern const struct conv_cred_field conv_cred_fields[];
extern const size_t n_conv_cred_fields;

/* ---- reflection over upb messages ---------------------------------------- */

/** A message and its definition; m == NULL: absent. */
struct pb {
	const upb_Message *m;
	const upb_MessageDef *d;
};

const upb_FieldDef *pb_field(struct pb p, const char *name);
bool pb_has(struct pb p, const char *f);
struct pb pb_msg(struct pb p, const char *f);
upb_StringView pb_str(struct pb p, const char *f);
bool pb_bool(struct pb p, const char *f);
/* Fields newer than gRPC 1.51's Envoy API copy (lib/proto/newer.c), read
 * from @p p's unknown bytes: list them in conv_only's allowed names to
 * accept them. A bool (false when absent): */
bool pb_newer_bool(struct pb p, const char *f);
/* A string (empty when absent): */
upb_StringView pb_newer_str(struct pb p, const char *f);
/* a newer google.protobuf.BoolValue field: present, its value in *v */
bool pb_newer_wrapped_bool(struct pb p, const char *f, bool *v);
/* A map<string, Any>: its entries into *@p out (on c->arena, a key given
 * twice keeps its last value), at most @p max + 1 (a hostile count is not
 * read whole). @return how many. */
struct pb_map_ent {
	upb_StringView key;
	struct pb value; /* google.protobuf.Any */
};
struct conv;
size_t pb_newer_map(struct conv *c, struct pb p, const char *f, struct pb_map_ent **out,
		    size_t max);
uint32_t pb_u32(struct pb p, const char *f);
uint64_t pb_u64(struct pb p, const char *f);
int32_t pb_i32(struct pb p, const char *f); /* also enums */
int64_t pb_i64(struct pb p, const char *f);
size_t pb_len(struct pb p, const char *f);
struct pb pb_at(struct pb p, const char *f, size_t i);
upb_StringView pb_str_at(struct pb p, const char *f, size_t i);
uint32_t pb_u32_at(struct pb p, const char *f, size_t i);
int32_t pb_i32_at(struct pb p, const char *f, size_t i);
/** Name of the set member of oneof @p oneof, or NULL. */
const char *pb_which(struct pb p, const char *oneof);
/** Wrapper types (UInt32Value, BoolValue, ...): true and *out if set. */
bool pb_wrapped_u32(struct pb p, const char *f, uint32_t *out);
bool pb_wrapped_u64(struct pb p, const char *f, uint64_t *out);
bool pb_wrapped_bool(struct pb p, const char *f, bool *out);
bool pb_wrapped_double(struct pb p, const char *f, double *out);

/**
 * Walk the wire format of a serialized @p m (into sub-messages, map
 * entries and Any values whose type is known) and refuse unknown fields
 * and known fields with the wrong wire type before upb sees them.
 *
 * Why before: libupb.so.29 (gRPC 1.51, built with assertions) aborts the
 * process on some inputs that put data into a message's unknown-field
 * area (found by fuzz_config: e.g. a map entry with a third field). Arion
 * refuses unknown fields anyway, so refusing them here costs nothing and
 * keeps upb_Decode off that path. Also refuses groups and nesting beyond
 * 64 levels.
 * @return true if @p buf may be given to upb_Decode; else false with the
 *   reason in @p why.
 */
bool conv_wire_check(const char *buf, size_t len, const upb_MessageDef *m, char *why,
		     size_t whylen);

/* ---- conversion context ---------------------------------------------------- */

/* A reference from a resource to a name of another type (interest, X4;
 * warming, G6). */
struct conv_dep {
	uint8_t type;	     /* enum arn_cfg_type */
	bool warm;	     /* the resource warms until it exists */
	bool local;	     /* made by Arion itself (a DNS cluster's endpoints): no interest */
	uint32_t timeout_ms; /* initial_fetch_timeout of its config source; 0: none */
	char *name;	     /* malloc'd */
};

struct conv {
	enum arn_cfg_type type;
	const char *res;       /* resource name, for messages */
	struct arn_pool *pool; /* the object under construction */
	upb_Arena *arena;      /* scratch for decoding nested Any */
	char path[1024];
	size_t plen;
	struct arn_sb msg;    /* "; "-joined problems */
	struct arn_sb detail; /* "path\treason\n" per problem */
	int nerr;
	struct conv_dep *deps;
	size_t ndeps, capdeps;
	uint32_t *dep_idx;		 /* open-addressing index of deps (i + 1; 0 empty) */
	size_t dep_idx_cap;		 /* power of two, at least twice ndeps */
	uint32_t default_fetch_ms;	 /* 15 s unless the bootstrap says otherwise */
	const char *node_cluster;	 /* the bootstrap's node.cluster, "" without one */
	struct arn_cfg_reclaim *reclaim; /* set on every object made */
	bool validate_only;		 /* arion --mode validate */
	unsigned files_read;		 /* by conv_read_file(): such a result is not reused */
	bool dns_names;			 /* conv_socket_address() takes hostnames (DNS clusters) */
	/* RouteConfiguration (arn_conv_route_table): routes converted, and
	 * routes taken unchanged from the previous version */
	size_t routes_converted, routes_reused;
};

/** Append ".fmt" (or "[i]") to the path; returns the mark for conv_pop(). */
size_t conv_push(struct conv *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void conv_pop(struct conv *c, size_t mark);
/** Report a problem at path + @p field ("" for the path itself). */
void conv_err(struct conv *c, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/** Report a problem at an absolute (resource-relative) path. */
void conv_err_at(struct conv *c, const char *path, const char *msg);
/**
 * Refuse every field set in @p p that is not in @p allowed (a
 * comma-separated list of field names), and unknown fields (newer Envoy
 * API than Arion knows). @return the number refused.
 */
int conv_only(struct conv *c, struct pb p, const char *allowed);
/** Record a reference; @return 0 or -ENOMEM. */
/** Free the name index conv_dep() keeps (the deps list itself is handed on). */
void conv_deps_index_free(struct conv *c);
int conv_dep(struct conv *c, enum arn_cfg_type t, const char *name, size_t len, bool warm,
	     uint32_t timeout_ms);
/** The converted endpoints of a ClusterLoadAssignment @p cla (conv_cluster.c). */
void conv_endpoints_into(struct conv *c, struct pb cla, struct arn_cfg_endpoints *e);
/** A STRICT_DNS / LOGICAL_DNS cluster's settings and load_assignment (conv_dns.c). */
void conv_cluster_dns(struct conv *c, struct pb cl, struct arn_cfg_cluster *out);
/** A cluster's transport_socket_matches (after its transport_socket), and
 * an endpoint's envoy.transport_socket_match metadata (conv_tsm.c). */
void conv_tsm_cluster(struct conv *c, struct pb cl, struct arn_cfg_cluster *out);
void conv_tsm_endpoint(struct conv *c, const upb_Map *filter_metadata, struct arn_cfg_endpoint *ep);
/** Pool copies. */
const char *conv_str(struct conv *c, upb_StringView s);
const char *conv_lstr(struct conv *c, upb_StringView s); /* lower case */
/* conv_str of a string that Arion writes as it is into a header value or
 * the request line (Envoy validates these as HTTP_HEADER_VALUE): a CR, LF
 * or NUL is refused, naming @p field; it would let the control plane add
 * header lines of its own, or cut the string short. */
/* A wrapped uint32 @p f of @p p within [@p lo, @p hi] (an Envoy
 * validation rule), else @p def: out of it, refused naming the field. */
uint32_t conv_wrapped_u32_in(struct conv *c, struct pb p, const char *f, uint32_t lo, uint32_t hi,
			     uint32_t def);
const char *conv_hdr_str(struct conv *c, const char *field, upb_StringView s);
bool conv_hdr_ok(struct conv *c, const char *field, upb_StringView s); /* the test alone */
/** A repeated string field @p f as a pool array (lower case if @p lower). */
void conv_str_list(struct conv *c, struct pb p, const char *f, const char ***out, size_t *n,
		   bool lower);
/**
 * upgrade_configs of an HttpConnectionManager (@p route false) or a
 * RouteAction (@p route true) into @p out: each type once (compared without
 * case), CONNECT refused until Arion implements it, and the HCM's custom
 * upgrade filter chains refused (upgrades run the HCM's own filters).
 */
void conv_upgrades(struct conv *c, struct pb p, bool route, struct arn_cfg_upgrade **out,
		   size_t *n);
void *conv_alloc(struct conv *c, size_t n);
#define CONV_NEW(c, type, n) ((type *)conv_alloc((c), sizeof(type) * (size_t)(n)))

/**
 * Read a regular file of at most @p max bytes into a malloc'd buffer
 * (NUL-terminated). FIFOs, devices and directories are refused: a
 * configuration read must never block the control lcore.
 * @return 0, or a negative errno with the reason reported at @p field.
 */
int conv_read_file(struct conv *c, const char *field, const char *path, size_t max, char **buf,
		   size_t *len);

/* google.protobuf.Duration's largest seconds (+-10000 years). */
#define CONV_DURATION_MAX_SECONDS 315576000000ll

/** google.protobuf.Duration field in ms (rounded up, capped at UINT32_MAX),
 * *out left if unset. Negative or out of range (CONV_DURATION_MAX_SECONDS)
 * durations are refused (reported at @p f). */
bool conv_duration(struct conv *c, struct pb p, const char *f, uint32_t *out,
		   bool must_be_positive);
/** common_http_protocol_options @p cpo's max_headers_count into @p out
 * when set: 1 to ARN_CFG_MAX_HEADERS_COUNT, or refused naming the field
 * (a connection manager's and a cluster's alike). */
void conv_headers_count(struct conv *c, struct pb cpo, uint32_t *out);
/** A socket_address IPv4 address:port. @return 0 or -EINVAL (reported). */
int conv_socket_address(struct conv *c, struct pb addr, const char *f, uint32_t *ip, uint16_t *port,
			bool allow_any);
/** A request_headers_to_remove-like list @p f of @p p (lower-cased
 * names; pseudo-headers refused). */
void conv_header_remove_list(struct conv *c, struct pb p, const char *f, struct arn_cfg_ref **out,
			     size_t *n);
/** A SubjectAltNameMatcher's san_type into @p out->san_type (EMAIL, DNS,
 * URI, IP_ADDRESS; UNSPECIFIED and OTHER_NAME refused, reported). Call
 * before conv_string_matcher, which leaves san_type as it is. */
void conv_san_type(struct conv *c, struct pb sm, struct arn_cfg_str_match *out);
/** StringMatcher into @p out. @return 0 or -EINVAL (reported). */
int conv_string_matcher(struct conv *c, struct pb sm, struct arn_cfg_str_match *out);
/** RegexMatcher (safe_regex) compiled. NULL (reported) on error. */
const struct arn_regex *conv_regex(struct conv *c, struct pb rm);
/** An Any of the expected type: its message (on c->arena), or m NULL (reported). */
struct pb conv_any(struct conv *c, struct pb any, const char *full_name);
/** A config source (ads only, X11-X13) initial_fetch_timeout in ms. */
uint32_t conv_fetch_timeout(struct conv *c, struct pb config_source);
void conv_refs(struct conv *c, struct arn_cfg_ref *r, upb_StringView s);
/** An envoy.config.route.v3.HeaderMatcher (reported on error; name lower-cased). */
void conv_header_matcher(struct conv *c, struct pb hm, struct arn_cfg_header_match *out);
/** One HeaderValueOption list, repeated field @p f of @p p. @return 0 or -ENOMEM. */
int conv_header_add_list(struct conv *c, struct pb p, const char *f,
			 struct arn_cfg_header_add **out, size_t *n);
/**
 * A header value's command operators (%...%) checked as Envoy's
 * HeaderParser checks them, and that Arion substitutes each
 * (arn_subst_check, the list lib/http substitutes from): refused at
 * @p field otherwise. For every value the HTTP layer formats (http_subst).
 */
void conv_header_value_ops(struct conv *c, const char *field, const char *v, size_t n);
/** conv_header_value_ops of each of @p n values of list @p f ("f[i].header.value"). */
void conv_header_add_ops(struct conv *c, const char *f, const struct arn_cfg_header_add *a,
			 size_t n);
/** Header-mutation lists at the current path into @p ops. */
void conv_header_ops(struct conv *c, struct pb p, struct arn_cfg_header_ops *ops);

/** A HeaderValueOption list @p f of @p p (reported on error). @return 0 or -ENOMEM. */
int conv_header_add_list(struct conv *c, struct pb p, const char *f,
			 struct arn_cfg_header_add **out, size_t *n);
/** An envoy.config.core.v3.CidrRange (IPv4; reported on error). conv_listener.c */
void conv_cidr(struct conv *c, struct pb cr, struct arn_cfg_cidr *out);
/** A repeated envoy.config.accesslog.v3.AccessLog field @p f. conv_listener.c */
/** A RuntimeFractionalPercent field @p f of @p p (its default_value; the
 * runtime_key is not read): 0 % when absent. conv_common.c */
void conv_runtime_fraction(struct conv *c, struct pb p, const char *f,
			   struct arn_cfg_fraction *out);
/** A FractionalPercent @p fp (field @p f of the current message) into @p out
 * (a numerator above the denominator is 100 %). conv_common.c */
void conv_fractional_percent(struct conv *c, struct pb fp, const char *f,
			     struct arn_cfg_fraction *out);
/** An HTTPFault (envoy.filters.http.fault's configuration, or a route's
 * @p per_route) converted; NULL only without memory. conv_fault.c */
const struct arn_cfg_fault *conv_fault(struct conv *c, struct pb p);
/** envoy.filters.http.basic_auth's BasicAuth, or a route's BasicAuthPerRoute
 * (its users), converted; NULL only without memory. conv_basic_auth.c */
const struct arn_cfg_basic_auth *conv_basic_auth(struct conv *c, struct pb p);
const struct arn_cfg_basic_auth_users *conv_basic_auth_route(struct conv *c, struct pb p);
/** envoy.filters.http.oauth2's OAuth2 converted; NULL only without memory.
 * conv_oauth2.c */
const struct arn_cfg_oauth2 *conv_oauth2(struct conv *c, struct pb p);
/** An HTTP header name Arion writes or removes: an RFC 9110 token, lower
 * cased (refused naming @p field). conv_common.c */
const char *conv_hdr_name(struct conv *c, const char *field, upb_StringView s, size_t *len);
/** A StatefulSession (envoy.filters.http.stateful_session's configuration)
 * or, @p per_route, a StatefulSessionPerRoute converted; NULL only without
 * memory. conv_session.c */
const struct arn_cfg_stateful_session *conv_stateful_session(struct conv *c, struct pb p,
							     bool per_route);
/** An envoy.filters.http.compressor filter (@p any, its typed_config)
 * appended to @p out's compressors (room for @p nf). conv_compressor.c */
void conv_compressor_filter(struct conv *c, struct pb any, size_t nf, struct arn_cfg_hcm *out);
/** A compressor filter's CompressorPerRoute converted; NULL only without
 * memory. conv_compressor.c */
const struct arn_cfg_compressor_route *conv_compressor_route(struct conv *c, struct pb p);
/** An envoy.filters.http.decompressor filter (@p any, its typed_config)
 * appended to @p out's decompressors (room for @p nf). conv_decompressor.c */
void conv_decompressor_filter(struct conv *c, struct pb any, size_t nf, struct arn_cfg_hcm *out);
/** envoy.filters.http.ratelimit's RateLimit and RateLimitPerRoute,
 * converted; NULL only without memory. conv_rls.c */
const struct arn_cfg_rls *conv_rls(struct conv *c, struct pb p);
const struct arn_cfg_rls_route *conv_rls_route(struct conv *c, struct pb p);
/** A cookie's name (@p token) or path checked for a Set-Cookie line, at
 * most @p max bytes (refused naming @p field). conv_common.c */
bool cookie_octets_ok(struct conv *c, const char *field, upb_StringView s, bool token, size_t max);
/** envoy.filters.http.api_key_auth's ApiKeyAuth, or a route's
 * ApiKeyAuthPerRoute; envoy.filters.http.credential_injector's
 * CredentialInjector; converted, NULL only without memory. conv_apikey.c */
struct arn_cfg_api_key_auth;
struct arn_cfg_cred_injector;
const struct arn_cfg_api_key_auth *conv_api_key_auth(struct conv *c, struct pb p);
const struct arn_cfg_api_key_auth *conv_api_key_auth_route(struct conv *c, struct pb p);
const struct arn_cfg_cred_injector *conv_cred_injector(struct conv *c, struct pb p);
/** envoy.filters.http.header_mutation's HeaderMutation or, @p per_route, a
 * HeaderMutationPerRoute converted; NULL only without memory. conv_hm.c */
struct arn_cfg_header_mutation;
const struct arn_cfg_header_mutation *conv_header_mutation(struct conv *c, struct pb p,
							   bool per_route);
/** envoy.filters.http.buffer's Buffer converted (NULL only without
 * memory); a BufferPerRoute into @p kind (ARN_CFG_PF_DISABLED or
 * ARN_CFG_PF_BUFFER) and its settings. conv_buffer.c */
struct arn_cfg_buffer;
const struct arn_cfg_buffer *conv_buffer(struct conv *c, struct pb p);
const struct arn_cfg_buffer *conv_buffer_route(struct conv *c, struct pb p, uint8_t *kind);
/** envoy.filters.http.ext_proc's ExternalProcessor or, @p per_route, an
 * ExtProcPerRoute converted; NULL only without memory. conv_ext_proc.c */
struct arn_cfg_ext_proc;
struct arn_cfg_ext_proc_route;
const struct arn_cfg_ext_proc *conv_ext_proc(struct conv *c, struct pb p);
const struct arn_cfg_ext_proc_route *conv_ext_proc_route(struct conv *c, struct pb p);
/** HCM `tracing` @p t (the OpenTelemetry tracer) and a route's `tracing` /
 * `decorator` (of route @p rt; NULL when it has neither) converted; NULL
 * only without memory. conv_tracing.c */
const struct arn_cfg_tracing *conv_tracing(struct conv *c, struct pb t);
const struct arn_cfg_route_trace *conv_route_trace(struct conv *c, struct pb rt);
/** envoy.filters.http.lua's Lua converted, its scripts compiled and run
 * (NULL only without memory); a LuaPerRoute into @p kind
 * (ARN_CFG_PF_DISABLED or ARN_CFG_PF_LUA) and its name. conv_lua.c */
struct arn_cfg_lua;
struct arn_cfg_lua_route;
const struct arn_cfg_lua *conv_lua(struct conv *c, struct pb p);
const struct arn_cfg_lua_route *conv_lua_route(struct conv *c, struct pb p, uint8_t *kind);
/** A route's metadata.filter_metadata (@p md: its Metadata, or none),
 * encoded for the Lua filter's metadata() (arn_lua.h's records) into
 * *@p out and *@p len (NULL, 0: none; NULL, UINT32_MAX: past
 * ARN_LUA_ROUTE_MD_MAX). conv_lua.c */
void conv_lua_route_md(struct conv *c, struct pb md, const uint8_t **out, uint32_t *len);
/** The HCM's local_reply_config @p lrc into @p out. conv_parts.c */
void conv_local_reply(struct conv *c, struct pb lrc, const struct arn_cfg_local_reply **out);
/** An envoy.config.core.v3.DataSource @p b (inline_string, inline_bytes, or
 * filename read now) of at most @p max bytes (@p what names the bound in
 * the error) into @p out / @p len. @return 0, -ENOENT when none is set,
 * -EINVAL when the file could not be read (reported). conv_parts.c */
int conv_data_source(struct conv *c, struct pb b, size_t max, const char *what, const char **out,
		     size_t *len);
void conv_access_logs(struct conv *c, struct pb p, const char *f, struct arn_cfg_access_log **out,
		      size_t *n);
/** A SubstitutionFormatString @p fmt (field @p name of the current
 * message) into @p out; @return its format's path ("<name>.text_format",
 * ...), or NULL without one. conv_check_access_format compiles it as the
 * runtime will and refuses what Arion cannot write. conv_parts.c */
const char *conv_subst_format(struct conv *c, struct pb fmt, const char *name,
			      struct arn_cfg_subst_format *out);
void conv_check_access_format(struct conv *c, const char *json, const char *text, bool omit,
			      const char *field);
/** A gRPC access logger's typed_config @p any of type @p tn into @p a
 * (conv_grpc_log.c). @return false when @p tn is not one (nothing done). */
bool conv_grpc_access_log(struct conv *c, struct pb any, upb_StringView tn,
			  struct arn_cfg_access_log *a);
/** An xds.type.matcher.v3.Matcher's Predicate @p p read as a custom_response
 * rule (the response inputs) into @p out. conv_predicate.c */
void conv_resp_predicate(struct conv *c, struct pb p, struct arn_cfg_rbac_rule *out);
/* and/or/not nesting an RBAC rule may have: the evaluator recurses */
#define RBAC_MAX_DEPTH 32
/* What an xds.type.matcher.v3 predicate reads: the network (nothing), an
 * HTTP request (RBAC), an HTTP response (custom_response). */
enum { CONV_PRED_NET = 0, CONV_PRED_REQ = 1, CONV_PRED_RESP = 2 };
/** Predicate @p p (reading @p in, CONV_PRED_*; nested @p depth deep) as
 * the rule tree @p out. conv_predicate.c */
void conv_predicate(struct conv *c, struct pb p, int in, int depth, struct arn_cfg_rbac_rule *out);
/** envoy.filters.http.custom_response's CustomResponse (the filter's, or a
 * route level's) converted; NULL only without memory. conv_cresp.c */
struct arn_cfg_custom_response;
const struct arn_cfg_custom_response *conv_custom_response(struct conv *c, struct pb p);

/** The connection manager @p h's client identity fields into @p out:
 * forward_client_cert_details, set_current_client_cert_details,
 * internal_address_config. conv_client.c */
void conv_hcm_client(struct conv *c, struct pb h, struct arn_cfg_hcm *out);

/* ---- the L4 filters (conv_l4.c) --------------------------------------------- */

/**
 * The network filter @p f (a Filter whose typed_config has type @p tn) of
 * a filter chain, if conv_l4.c knows it: tcp_proxy (terminal, @p last),
 * rbac, local_ratelimit, connection_limit (before the terminal one).
 * @return false if the type is not one of these (nothing reported).
 */
bool conv_l4_network_filter(struct conv *c, struct pb f, upb_StringView tn, bool last,
			    struct arn_cfg_filter_chain *out);
/**
 * The HTTP filter whose typed_config @p tc has type @p tn, if conv_l4.c
 * knows it (rbac, local_ratelimit): its kind (enum arn_cfg_http_filter)
 * in *@p kind and its configuration in *@p cfg.
 * @return false if the type is not one of these (nothing reported).
 */
bool conv_l4_http_filter(struct conv *c, struct pb tc, upb_StringView tn, uint8_t *kind,
			 const void **cfg);
/** Http1ProtocolOptions @p h1's header_key_format: preserve_case, with its
 * defaults, accepted (what Arion's codec does); the rest refused. conv_common.c */
void conv_header_key_format(struct conv *c, struct pb h1);
/** A route's or virtual host's rate_limits (field of @p p). conv_rate_limits.c */
void conv_rate_limits(struct conv *c, struct pb p, struct arn_cfg_rate_limit **out, size_t *n);
/** A route's or virtual host's typed_per_filter_config (map field of @p p). */
void conv_per_filter(struct conv *c, struct pb p, struct arn_cfg_per_filter **out, size_t *n);
/** A RouteConfiguration's typed_per_filter_config (newer than the API copy). */
void conv_per_filter_newer(struct conv *c, struct pb p, struct arn_cfg_per_filter **out,
			   size_t *n);
/** Does @p a equal lower-case @p s, ignoring ASCII case? conv_common.c */
bool conv_sv_ieq(upb_StringView a, const char *s);
/** A GrpcService's envoy_grpc @p eg: its cluster (a reference and a
 * dependency) and :authority (NULL unless set). conv_common.c */
void conv_envoy_grpc(struct conv *c, struct pb eg, struct arn_cfg_ref *cluster,
		     const char **authority, uint32_t *authority_len);
/** The HeaderValue list @p f of @p gs (a GrpcService's initial_metadata,
 * ExtProcOverrides' grpc_initial_metadata) into @p md / @p n_md (at most
 * @p max; the headers Arion writes on the call itself refused), @p what
 * ("check", "call", "stream") naming the call in refusals. conv_common.c */
struct arn_cfg_ext_authz_hdr;
void conv_grpc_metadata(struct conv *c, struct pb gs, const char *f, unsigned max,
			const char *what, struct arn_cfg_ext_authz_hdr **md, size_t *n_md);
/** An SdsSecretConfig @p s (field @p f): its name a reference into @p r
 * and a warming dependency; missing, nameless or with a non-ADS
 * sds_config refused (X13). conv_common.c */
void conv_sds_secret(struct conv *c, struct pb s, const char *f, struct arn_cfg_ref *r);
/** A RuntimeFeatureFlag @p f of @p p: Arion has no runtime, so its
 * default_value decides (true when the flag is unset). */
bool conv_runtime_flag(struct conv *c, struct pb p, const char *f);
/** A RouteMatch @p rm into @p r's match fields (conv_route.c; "match"
 * pushed on the path, a missing one reported). */
void conv_route_match(struct conv *c, struct pb rm, struct arn_cfg_route *r);
/** A CorsPolicy: the per-filter extensions.filters.http.cors.v3 one
 * (@p ext), or the deprecated config.route.v3 one (the same field names,
 * without the last two). NULL only without memory. */
const struct arn_cfg_cors *conv_cors(struct conv *c, struct pb p, bool ext);

/* ---- converters ------------------------------------------------------------ */

/*
 * Each takes the decoded resource and returns the new object (one
 * reference, owned by the caller) or NULL with c->nerr > 0.
 */
struct arn_cfg_obj *arn_conv_listener(struct conv *c, struct pb l);
/*
 * A RouteConfiguration. With @p src (xDS): each route whose bytes and
 * virtual host context are those of a route of src->prev (the version in
 * force) is taken over from it instead of converted again (issue 17: one
 * changed route among 10,000 converts one). Inline tables (@p is_inline,
 * @p src NULL) take nothing over. NULL with src->fallback set: convert
 * the whole decoded table instead (not an error).
 */
struct conv_route_src {
	const struct arn_cfg_route_table *prev; /* the version in force, or NULL */
	const char *bytes;			/* @p rc serialized */
	size_t len;
	bool shell;    /* @p rc is conv_route_shell()'s: routes come from @p bytes */
	bool fallback; /* out: decode @p bytes whole and convert again */
};
struct arn_cfg_obj *arn_conv_route_table(struct conv *c, struct pb rc, bool is_inline,
					 struct conv_route_src *src);
/*
 * @p bytes (walked strictly as a RouteConfiguration) decoded without its
 * virtual hosts' routes, into *@p out on c->arena, when @p prev offers routes to take
 * over: then only the routes that changed are decoded (issue 17: decoding
 * 10,000 routes to convert one). false: decode the whole table.
 */
bool conv_route_shell(struct conv *c, const char *bytes, size_t len,
		      const struct arn_cfg_route_table *prev, struct pb *out);
struct arn_cfg_obj *arn_conv_cluster(struct conv *c, struct pb cl);
/* http2_protocol_options (a connection manager's, a cluster's) with Envoy's
 * defaults; @p p may be unset (defaults only). */
void arn_conv_h2_options(struct conv *c, struct pb p, struct arn_cfg_h2 *o);
struct arn_cfg_obj *arn_conv_endpoints(struct conv *c, struct pb cla);
struct arn_cfg_obj *arn_conv_secret(struct conv *c, struct pb s);
struct arn_cfg_obj *arn_conv_toolset(struct conv *c, struct pb ts);

/**
 * An HTTP filter's McpGateway typed_config (X14) into a pool object;
 * records its ToolSet as a warming dependency (G6, X4). NULL (reported) on
 * error. conv_toolset.c; conv_listener.c calls it.
 */
struct arn_cfg_mcp_filter *conv_mcp_filter(struct conv *c, struct pb any);

/**
 * A transport socket's DownstreamTlsContext / UpstreamTlsContext (X13:
 * secrets by name) into a pool object; records the secrets as warming
 * dependencies. NULL (reported) on error. conv_tls.c; listeners and
 * clusters both use it.
 */
struct arn_cfg_tls *conv_tls(struct conv *c, struct pb ts, bool downstream);

/**
 * A cluster's (or a transport_socket_matches entry's) transport socket:
 * conv_tls's, or envoy.transport_sockets.upstream_proxy_protocol around
 * raw_buffer or TLS, its PROXY header version in *@p pp (1, 2; 0 without
 * the wrapper). conv_upp.c.
 */
struct arn_cfg_tls *conv_upstream_ts(struct conv *c, struct pb ts, uint8_t *pp);

/** Initialize the object header in a fresh pool (name copied). */
void *conv_obj_new(struct conv *c, size_t size, enum arn_cfg_type t, upb_StringView name);

/* ---- compiled route tables ----------------------------------------------- */

/*
 * Per virtual host: a byte trie of every route's literal path prefix
 * (prefix, exact path, separated prefix, a regex's literal prefix), lower
 * case. Matching walks the trie along the request path, marks the routes
 * found on the way (and those without a literal) in a bitmap, and checks
 * only those, in configuration order: first match wins as before, but a
 * 1,000-route table costs a walk of the path instead of 1,000 checks.
 */
#define ARN_CFG_INDEX_MAX_ROUTES 8192

struct arn_cfg_rtrie_node {
	uint32_t first_child; /* 0: none (node 0 is the root, never a child) */
	uint32_t next_sibling;
	uint32_t routes; /* offset in route_ids */
	uint32_t n_routes;
	uint8_t byte;
};

struct arn_cfg_route_index {
	struct arn_cfg_rtrie_node *nodes;
	uint32_t n_nodes;
	uint32_t *route_ids;
	uint32_t *always; /* routes without a literal prefix */
	uint32_t n_always;
};

/** Build @p v's index (in the pool) once its routes are converted. */
void conv_route_index(struct conv *c, struct arn_cfg_vhost *v);

/* ---- generations (what workers read) ------------------------------------- */

struct arn_hamt;

/* Listeners sorted by (port, addr) for the per-connection lookup; shared by
 * consecutive generations with the same listener set. Pointers are borrowed
 * from the generation's trie. */
struct arn_cfg_lindex {
	uint32_t refs; /* control lcore only */
	size_t n;
	struct arn_cfg_listener *l[];
};

struct arn_cfg_gen {
	uint64_t id;
	struct arn_hamt *roots[ARN_CFG_NTYPES];
	size_t counts[ARN_CFG_NTYPES];
	/* per type, the id of the last generation whose objects of that type
	 * were not its predecessor's (arn_cfg_gen_type_changed) */
	uint64_t changed[ARN_CFG_NTYPES];
	struct arn_cfg_lindex *lindex;
};

/** Full message name per type. */
extern const char *const arn_cfg_type_msg[ARN_CFG_NTYPES];

#endif
