/*
 * The L4 filters, field for field as Envoy reads them (arn_config_l4.h):
 * tcp_proxy, the network and HTTP RBAC filters and their policies
 * (envoy.config.rbac.v3), the network and HTTP local_ratelimit filters,
 * connection_limit, and typed_per_filter_config of routes and virtual
 * hosts. What Envoy's validation annotations refuse is refused here, with
 * the field's path; what Arion does not run is refused by name rather than
 * ignored (an ignored RBAC rule or rate limit lets through what the
 * operator meant to stop).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "arn_jwt.h"
#include "arn_proto.h"
#include "arn_sb.h"
#include "config_int.h"

#define TCP_PROXY_TYPE "envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy"
#define NET_RBAC_TYPE "envoy.extensions.filters.network.rbac.v3.RBAC"
#define NET_LRL_TYPE "envoy.extensions.filters.network.local_ratelimit.v3.LocalRateLimit"
#define CXL_TYPE "envoy.extensions.filters.network.connection_limit.v3.ConnectionLimit"
#define HTTP_RBAC_TYPE "envoy.extensions.filters.http.rbac.v3.RBAC"
#define HTTP_RBAC_PER_ROUTE_TYPE "envoy.extensions.filters.http.rbac.v3.RBACPerRoute"
#define HTTP_LRL_TYPE "envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit"
#define HTTP_EXT_AUTHZ_TYPE "envoy.extensions.filters.http.ext_authz.v3.ExtAuthz"
#define HTTP_EXT_AUTHZ_ROUTE_TYPE "envoy.extensions.filters.http.ext_authz.v3.ExtAuthzPerRoute"
#define HTTP_CORS_TYPE "envoy.extensions.filters.http.cors.v3.Cors"
#define HTTP_CORS_POLICY_TYPE "envoy.extensions.filters.http.cors.v3.CorsPolicy"
#define HTTP_JWT_TYPE "envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication"
#define HTTP_JWT_PER_ROUTE_TYPE "envoy.extensions.filters.http.jwt_authn.v3.PerRouteConfig"
#define HTTP_FAULT_TYPE "envoy.extensions.filters.http.fault.v3.HTTPFault"
#define ROUTE_FILTER_CONFIG_TYPE "envoy.config.route.v3.FilterConfig"
#define HTTP_BASIC_AUTH_TYPE "envoy.extensions.filters.http.basic_auth.v3.BasicAuth"
#define HTTP_RLS_TYPE "envoy.extensions.filters.http.ratelimit.v3.RateLimit"
#define HTTP_RLS_ROUTE_TYPE "envoy.extensions.filters.http.ratelimit.v3.RateLimitPerRoute"
#define HTTP_BASIC_AUTH_ROUTE_TYPE "envoy.extensions.filters.http.basic_auth.v3.BasicAuthPerRoute"
#define HTTP_CMP_ROUTE_TYPE "envoy.extensions.filters.http.compressor.v3.CompressorPerRoute"
#define HTTP_CSRF_TYPE "envoy.extensions.filters.http.csrf.v3.CsrfPolicy"
#define HTTP_OAUTH2_TYPE "envoy.extensions.filters.http.oauth2.v3.OAuth2"
#define HTTP_HM_TYPE "envoy.extensions.filters.http.header_mutation.v3.HeaderMutation"
#define HTTP_HM_ROUTE_TYPE "envoy.extensions.filters.http.header_mutation.v3.HeaderMutationPerRoute"
#define HTTP_BUFFER_TYPE "envoy.extensions.filters.http.buffer.v3.Buffer"
#define HTTP_BUFFER_ROUTE_TYPE "envoy.extensions.filters.http.buffer.v3.BufferPerRoute"
#define HTTP_EXT_PROC_TYPE "envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor"
#define HTTP_EXT_PROC_ROUTE_TYPE "envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute"
#define HTTP_LUA_TYPE "envoy.extensions.filters.http.lua.v3.Lua"
#define HTTP_LUA_ROUTE_TYPE "envoy.extensions.filters.http.lua.v3.LuaPerRoute"
#define HTTP_SS_TYPE "envoy.extensions.filters.http.stateful_session.v3.StatefulSession"
#define HTTP_SS_ROUTE_TYPE                                                                         \
	"envoy.extensions.filters.http.stateful_session.v3.StatefulSessionPerRoute"
#define HTTP_API_KEY_TYPE "envoy.extensions.filters.http.api_key_auth.v3.ApiKeyAuth"
#define HTTP_API_KEY_ROUTE_TYPE "envoy.extensions.filters.http.api_key_auth.v3.ApiKeyAuthPerRoute"
#define HTTP_CRED_INJECTOR_TYPE                                                                    \
	"envoy.extensions.filters.http.credential_injector.v3.CredentialInjector"
#define HTTP_CRESP_TYPE "envoy.extensions.filters.http.custom_response.v3.CustomResponse"

/* Envoy's floor for the local rate limiters' fill timers */
#define LRL_MIN_FILL_MS 50

static uint32_t features;

void arn_config_set_features(uint32_t f)
{
	features = f;
}

uint32_t arn_config_features(void)
{
	return features;
}

static bool feature(struct conv *c, uint32_t f, const char *what)
{
	if (features & f)
		return true;
	conv_err(c, "",
		 "%s is not run by this Arion's data plane yet: refused rather than accepted "
		 "and not enforced",
		 what);
	return false;
}

/* ---- shared ------------------------------------------------------------------ */

/* envoy.type.v3.TokenBucket: max_tokens > 0 (required), tokens_per_fill
 * > 0 (1 unless set), fill_interval > 0 (required); the local rate
 * limiters also need fill_interval >= 50 ms. */
static void token_bucket(struct conv *c, struct pb tb, struct arn_cfg_token_bucket *out)
{
	conv_only(c, tb, "max_tokens,tokens_per_fill,fill_interval");
	out->max_tokens = pb_u32(tb, "max_tokens");
	if (out->max_tokens == 0)
		conv_err(c, "max_tokens", "must be greater than 0");
	out->tokens_per_fill = 1;
	if (pb_wrapped_u32(tb, "tokens_per_fill", &out->tokens_per_fill) &&
	    out->tokens_per_fill == 0)
		conv_err(c, "tokens_per_fill", "must be greater than 0");
	if (!pb_has(tb, "fill_interval"))
		conv_err(c, "fill_interval", "missing (Envoy requires it)");
	else if (conv_duration(c, tb, "fill_interval", &out->fill_interval_ms, true) &&
		 out->fill_interval_ms < LRL_MIN_FILL_MS)
		conv_err(c, "fill_interval", "%u ms: the fill timer must be at least %d ms",
			 out->fill_interval_ms, LRL_MIN_FILL_MS);
}

/* ---- envoy.filters.http.ext_authz --------------------------------------------- */

/* A ListStringMatcher @p f of @p p into @p out (NULL, 0 when unset). */
static void authz_list(struct conv *c, struct pb p, const char *f, struct arn_cfg_str_match **out,
		       size_t *n)
{
	*out = NULL;
	*n = 0;
	struct pb l = pb_msg(p, f);
	if (!l.m)
		return;
	size_t m = conv_push(c, "%s", f);
	conv_only(c, l, "patterns");
	size_t k = pb_len(l, "patterns");
	*out = CONV_NEW(c, struct arn_cfg_str_match, k ? k : 1);
	for (size_t i = 0; *out && i < k; i++) {
		size_t m2 = conv_push(c, "patterns[%zu]", i);
		if (conv_string_matcher(c, pb_at(l, "patterns", i), &(*out)[*n]) == 0)
			(*n)++;
		conv_pop(c, m2);
	}
	conv_pop(c, m);
}

/* authorization_request.headers_to_add: HeaderValues (key lower-cased,
 * value a header value; Envoy's own pseudo-headers and host refused: the
 * check's request line and Host are Arion's). */
static void authz_add(struct conv *c, struct pb ar, struct arn_cfg_ext_authz *o)
{
	size_t k = pb_len(ar, "headers_to_add");
	o->add = CONV_NEW(c, struct arn_cfg_ext_authz_hdr, k ? k : 1);
	for (size_t i = 0; o->add && i < k; i++) {
		size_t m = conv_push(c, "headers_to_add[%zu]", i);
		struct pb hv = pb_at(ar, "headers_to_add", i);
		conv_only(c, hv, "key,value");
		upb_StringView key = pb_str(hv, "key"), val = pb_str(hv, "value");
		if (!key.size || key.data[0] == ':' || conv_sv_ieq(key, "host") ||
		    conv_sv_ieq(key, "content-length") || conv_sv_ieq(key, "transfer-encoding") ||
		    conv_sv_ieq(key, "connection")) {
			conv_err(c, "key",
				 "'%.*s': not a header Arion lets the configuration set on the "
				 "check (its request line, host and framing are Arion's)",
				 (int)key.size, key.data);
		} else if (val.size && memchr(val.data, '%', val.size)) {
			/* Envoy's ClientConfig builds a HeaderParser of these
			 * (operators substituted, %% a %); Arion writes them as
			 * they are: refused rather than sent as their text */
			conv_err(c, "value",
				 "'%%' (a command operator) is not supported by Arion in the "
				 "check's headers: values are sent as written");
		} else if (conv_hdr_ok(c, "key", key)) {
			const char *v = conv_hdr_str(c, "value", val);
			const char *kn = conv_lstr(c, key);
			if (v && kn)
				o->add[o->n_add++] = (struct arn_cfg_ext_authz_hdr){
				    kn, v, (uint32_t)key.size, (uint32_t)val.size};
		}
		conv_pop(c, m);
	}
}

/* The HttpService: the cluster, its timeout, the path prefix, what goes
 * to the service and what is taken from its answer. */
static void authz_http_service(struct conv *c, struct pb hs, struct arn_cfg_ext_authz *o)
{
	conv_only(c, hs, "server_uri,path_prefix,authorization_request,authorization_response");
	struct pb su = pb_msg(hs, "server_uri");
	size_t m = conv_push(c, "server_uri");
	if (!su.m) {
		conv_err(c, "", "missing (Envoy requires it)");
	} else {
		/* uri: required, unused by Envoy's HTTP client as by Arion (the
		 * cluster is where the check goes; its Host is the client's) */
		conv_only(c, su, "uri,cluster,timeout");
		if (!pb_str(su, "uri").size)
			conv_err(c, "uri", "missing (Envoy requires it)");
		const char *w = pb_which(su, "http_upstream_type");
		upb_StringView cn = pb_str(su, "cluster");
		if (!w || !cn.size) {
			conv_err(c, "cluster", "missing: the authorization service's cluster");
		} else {
			conv_refs(c, &o->cluster, cn);
			/* resolved per check, as a route's cluster (G5) */
			conv_dep(c, ARN_CFG_CLUSTER, cn.data, cn.size, false, 0);
		}
		if (!pb_has(su, "timeout"))
			conv_err(c, "timeout", "missing (Envoy requires it)");
		else
			conv_duration(c, su, "timeout", &o->timeout_ms, false);
	}
	conv_pop(c, m);
	upb_StringView pp = pb_str(hs, "path_prefix");
	if (pp.size) {
		if (pp.data[0] != '/')
			conv_err(c, "path_prefix", "must start with '/'");
		o->path_prefix = conv_hdr_str(c, "path_prefix", pp);
		o->path_prefix_len = (uint32_t)pp.size;
		for (size_t i = 0; i < pp.size; i++)
			if ((unsigned char)pp.data[i] <= ' ' || pp.data[i] == '?' ||
			    pp.data[i] == '#' || pp.data[i] == 0x7f) {
				conv_err(c, "path_prefix",
					 "has a space, control byte, '?' or '#' (not a path)");
				break;
			}
	}
	struct pb ar = pb_msg(hs, "authorization_request");
	if (ar.m) {
		m = conv_push(c, "authorization_request");
		conv_only(c, ar, "allowed_headers,headers_to_add");
		if (!o->allowed)
			authz_list(c, ar, "allowed_headers", &o->allowed, &o->n_allowed);
		authz_add(c, ar, o);
		conv_pop(c, m);
	}
	struct pb rs = pb_msg(hs, "authorization_response");
	if (rs.m) {
		m = conv_push(c, "authorization_response");
		/* dynamic_metadata_from_headers: Arion keeps no dynamic
		 * metadata (refused by conv_only) */
		conv_only(c, rs,
			  "allowed_upstream_headers,allowed_upstream_headers_to_append,"
			  "allowed_client_headers,allowed_client_headers_on_success");
		authz_list(c, rs, "allowed_upstream_headers", &o->up_set, &o->n_up_set);
		authz_list(c, rs, "allowed_upstream_headers_to_append", &o->up_append,
			   &o->n_up_append);
		authz_list(c, rs, "allowed_client_headers", &o->client, &o->n_client);
		authz_list(c, rs, "allowed_client_headers_on_success", &o->client_ok,
			   &o->n_client_ok);
		conv_pop(c, m);
	}
}

/* A GrpcService's envoy_grpc: the cluster, its :authority, the timeout
 * (Envoy's 200 ms unless set) and initial_metadata (sent as request
 * headers). google_grpc is refused: Arion has no gRPC library, the check
 * rides on its own HTTP/2 upstreams as envoy_grpc does. */
static void authz_grpc_service(struct conv *c, struct pb gs, struct arn_cfg_ext_authz *o)
{
	conv_only(c, gs, "envoy_grpc,google_grpc,timeout,initial_metadata");
	o->grpc = true;
	o->timeout_ms = 200;
	if (pb_has(gs, "google_grpc"))
		conv_err(c, "google_grpc",
			 "not supported by Arion: the check goes over Arion's own HTTP/2 "
			 "upstreams (use envoy_grpc)");
	struct pb eg = pb_msg(gs, "envoy_grpc");
	size_t m = conv_push(c, "envoy_grpc");
	if (!eg.m) {
		if (!pb_has(gs, "google_grpc"))
			conv_err(c, "", "missing: the authorization service's cluster");
	} else {
		conv_envoy_grpc(c, eg, &o->cluster, &o->authority, &o->authority_len);
	}
	conv_pop(c, m);
	if (pb_has(gs, "timeout"))
		conv_duration(c, gs, "timeout", &o->timeout_ms, false);
	/* the check's headers: content-type, te, grpc-timeout and these, at
	 * most a sub-request's 32 (http_subreq.h) */
	conv_grpc_metadata(c, gs, "initial_metadata", ARN_CFG_EXT_AUTHZ_MD_MAX, "check", &o->md, &o->n_md);
}

/* with_request_body (BufferSettings): the body waits for the check and
 * goes with it, max_request_bytes of it at most (what a check's buffer
 * holds: ARN_CFG_EXT_AUTHZ_BODY_MAX, docs/security.md). */
static void authz_body(struct conv *c, struct pb b, struct arn_cfg_ext_authz *o)
{
	size_t m = conv_push(c, "with_request_body");
	conv_only(c, b, "max_request_bytes,allow_partial_message,pack_as_bytes");
	o->with_body = true;
	o->max_body = pb_u32(b, "max_request_bytes");
	o->partial_body = pb_bool(b, "allow_partial_message");
	o->pack_as_bytes = pb_bool(b, "pack_as_bytes");
	if (!o->max_body)
		conv_err(c, "max_request_bytes", "must be at least 1 (Envoy requires it)");
	else if (o->max_body > ARN_CFG_EXT_AUTHZ_BODY_MAX)
		conv_err(c, "max_request_bytes",
			 "%u: more than Arion holds for a check (%u bytes, docs/security.md)",
			 o->max_body, ARN_CFG_EXT_AUTHZ_BODY_MAX);
	conv_pop(c, m);
}

/* What only a gRPC CheckRequest carries and Arion's does not (the peer
 * certificate, the TLS session, metadata, raw headers): refused with that
 * said (rather than conv_only's "not supported"), as the fields of @p p
 * that @p fields lists. @return how many. */
static int authz_grpc_only(struct conv *c, struct pb p, const char *const *fields, size_t n)
{
	int k = 0;
	for (size_t i = 0; i < n; i++)
		if (pb_has(p, fields[i])) {
			conv_err(
			    c, fields[i],
			    "only a gRPC CheckRequest carries it, which Arion does not fill in "
			    "(remove it)");
			k++;
		}
	return k;
}

static const struct arn_cfg_ext_authz *ext_authz(struct conv *c, struct pb p)
{
	struct arn_cfg_ext_authz *o = CONV_NEW(c, struct arn_cfg_ext_authz, 1);
	if (!o)
		return NULL;
	/* What is not listed is refused by name: clear_route_cache (the
	 * route is not matched again), the metadata namespaces, filter_enabled_metadata,
	 * include_peer_certificate / include_tls_session / encode_raw_headers (what a gRPC
	 * CheckRequest carries), validate_mutations, bootstrap_metadata_labels_key,
	 * enable_dynamic_metadata_ingestion. */
	static const char *const grpc_only[] = {
	    "include_peer_certificate",
	    "include_tls_session",
	    "metadata_context_namespaces",
	    "typed_metadata_context_namespaces",
	    "route_metadata_context_namespaces",
	    "route_typed_metadata_context_namespaces",
	    "encode_raw_headers",
	    "bootstrap_metadata_labels_key",
	};
	authz_grpc_only(c, p, grpc_only, sizeof(grpc_only) / sizeof(grpc_only[0]));
	conv_only(c, p,
		  "http_service,grpc_service,with_request_body,transport_api_version,"
		  "failure_mode_allow,"
		  "failure_mode_allow_header_add,status_on_error,filter_enabled,deny_at_disable,"
		  "stat_prefix,allowed_headers,disallowed_headers,charge_cluster_response_stats,"
		  "include_peer_certificate,include_tls_session,metadata_context_namespaces,"
		  "typed_metadata_context_namespaces,route_metadata_context_namespaces,"
		  "route_typed_metadata_context_namespaces,encode_raw_headers,"
		  "bootstrap_metadata_labels_key");
	const char *svc = pb_which(p, "services");
	if (!svc)
		conv_err(c, "http_service", "missing: set http_service or grpc_service");
	/* AUTO and V3 (the only one Envoy has left; a gRPC check is v3) */
	int32_t api = pb_i32(p, "transport_api_version");
	if (api != 0 && api != 2)
		conv_err(c, "transport_api_version", "%d: only AUTO or V3", api);
	bool charge = true;
	if (pb_wrapped_bool(p, "charge_cluster_response_stats", &charge) && !charge)
		conv_err(c, "charge_cluster_response_stats",
			 "false is not supported by Arion: the check counts in its cluster's "
			 "statistics as any sub-request");
	o->failure_mode_allow = pb_bool(p, "failure_mode_allow");
	o->failure_mode_allow_header_add = pb_bool(p, "failure_mode_allow_header_add");
	o->status_on_error = 403;
	struct pb se = pb_msg(p, "status_on_error");
	if (se.m) {
		size_t m = conv_push(c, "status_on_error");
		conv_only(c, se, "code");
		int32_t code = pb_i32(se, "code");
		if (code >= 200 && code <= 599)
			o->status_on_error = (uint16_t)code;
		else if (code != 0)
			conv_err(c, "code", "%d: not a final HTTP status", code);
		conv_pop(c, m);
	}
	o->enabled = (struct arn_cfg_fraction){100, 100};
	if (pb_has(p, "filter_enabled"))
		conv_runtime_fraction(c, p, "filter_enabled", &o->enabled);
	o->deny_at_disable =
	    pb_has(p, "deny_at_disable") && conv_runtime_flag(c, p, "deny_at_disable");
	upb_StringView sp = pb_str(p, "stat_prefix");
	if (sp.size)
		o->stat_prefix = conv_str(c, sp);
	/* the top-level list wins over authorization_request's (Envoy) */
	authz_list(c, p, "allowed_headers", &o->allowed, &o->n_allowed);
	authz_list(c, p, "disallowed_headers", &o->disallowed, &o->n_disallowed);
	if (svc && strcmp(svc, "http_service") == 0) {
		size_t m = conv_push(c, "http_service");
		authz_http_service(c, pb_msg(p, "http_service"), o);
		conv_pop(c, m);
	} else if (svc && strcmp(svc, "grpc_service") == 0) {
		size_t m = conv_push(c, "grpc_service");
		authz_grpc_service(c, pb_msg(p, "grpc_service"), o);
		conv_pop(c, m);
	}
	if (pb_has(p, "with_request_body"))
		authz_body(c, pb_msg(p, "with_request_body"), o);
	return o;
}

/* ExtAuthzPerRoute: disabled, or check_settings: context_extensions
 * (a gRPC check carries them, an HTTP one does not, as in Envoy) and
 * disable_request_body_buffering (the check goes without the body where
 * the filter's with_request_body would wait for it);
 * check_settings.with_request_body is refused by name. */
static const struct arn_cfg_ext_authz_route *ext_authz_route(struct conv *c, struct pb p)
{
	struct arn_cfg_ext_authz_route *o = CONV_NEW(c, struct arn_cfg_ext_authz_route, 1);
	if (!o)
		return NULL;
	conv_only(c, p, "disabled,check_settings");
	const char *w = pb_which(p, "override");
	if (!w) {
		conv_err(c, "", "set disabled or check_settings (Envoy requires one)");
	} else if (strcmp(w, "disabled") == 0) {
		if (!pb_bool(p, "disabled"))
			conv_err(c, "disabled", "must be true (Envoy's rule)");
		o->disabled = true;
	} else {
		size_t m = conv_push(c, "check_settings");
		struct pb cs = pb_msg(p, "check_settings");
		conv_only(c, cs, "disable_request_body_buffering,context_extensions");
		o->no_body = pb_bool(cs, "disable_request_body_buffering");
		/* context_extensions: a gRPC check carries them (an HTTP one
		 * does not, as in Envoy) */
		const upb_Map *map =
		    upb_Message_Get(cs.m, pb_field(cs, "context_extensions")).map_val;
		size_t n = map ? upb_Map_Size(map) : 0;
		o->ctx = CONV_NEW(c, struct arn_cfg_ext_authz_hdr, n ? n : 1);
		size_t iter = kUpb_Map_Begin;
		while (o->ctx && map && upb_MapIterator_Next(map, &iter)) {
			upb_StringView k = upb_MapIterator_Key(map, iter).str_val;
			upb_StringView v = upb_MapIterator_Value(map, iter).str_val;
			const char *ks = conv_str(c, k), *vs = conv_str(c, v);
			if (ks && vs)
				o->ctx[o->n_ctx++] = (struct arn_cfg_ext_authz_hdr){
				    ks, vs, (uint32_t)k.size, (uint32_t)v.size};
		}
		conv_pop(c, m);
	}
	return o;
}

static const char *required_prefix(struct conv *c, struct pb p)
{
	upb_StringView sp = pb_str(p, "stat_prefix");
	if (sp.size == 0)
		conv_err(c, "stat_prefix", "missing (Envoy requires it)");
	return conv_str(c, sp);
}

/* ---- tcp_proxy ---------------------------------------------------------------- */

static struct arn_cfg_tcp_proxy *tcp_proxy(struct conv *c, struct pb tp)
{
	struct arn_cfg_tcp_proxy *out = CONV_NEW(c, struct arn_cfg_tcp_proxy, 1);
	if (!out)
		return NULL;
	/* on_demand, metadata_match, tunneling_config: behaviours Arion does
	 * not have; downstream/upstream_idle_timeout: not implemented by Envoy
	 * either (hidden fields); all refused by conv_only */
	conv_only(c, tp,
		  "stat_prefix,cluster,weighted_clusters,idle_timeout,access_log,max_connect_"
		  "attempts,hash_policy,max_downstream_connection_duration,access_log_flush_"
		  "interval,flush_access_log_on_connected,access_log_options");
	out->stat_prefix = required_prefix(c, tp);
	const char *cs = pb_which(tp, "cluster_specifier");
	if (!cs) {
		conv_err(c, "", "no upstream: set cluster or weighted_clusters");
	} else if (strcmp(cs, "cluster") == 0) {
		upb_StringView n = pb_str(tp, "cluster");
		if (n.size == 0)
			conv_err(c, "cluster", "empty cluster name");
		conv_refs(c, &out->cluster, n);
	} else {
		struct pb wc = pb_msg(tp, "weighted_clusters");
		size_t m = conv_push(c, "weighted_clusters");
		conv_only(c, wc, "clusters");
		size_t n = pb_len(wc, "clusters");
		if (n == 0)
			conv_err(c, "clusters", "empty (Envoy requires at least one)");
		out->weighted = CONV_NEW(c, struct arn_cfg_tcp_proxy_cluster, n ? n : 1);
		for (size_t i = 0; out->weighted && i < n; i++) {
			struct pb cw = pb_at(wc, "clusters", i);
			size_t m2 = conv_push(c, "clusters[%zu]", i);
			conv_only(c, cw, "name,weight");
			upb_StringView cn = pb_str(cw, "name");
			if (cn.size == 0)
				conv_err(c, "name", "empty cluster name");
			uint32_t w = pb_u32(cw, "weight");
			if (w == 0)
				conv_err(c, "weight", "must be at least 1");
			conv_refs(c, &out->weighted[i].cluster, cn);
			out->weighted[i].weight = w;
			out->total_weight += w;
			conv_pop(c, m2);
		}
		out->n_weighted = out->weighted ? n : 0;
		conv_pop(c, m);
	}
	out->idle_timeout_ms = 3600 * 1000;
	conv_duration(c, tp, "idle_timeout", &out->idle_timeout_ms, false);
	out->max_connect_attempts = 1;
	if (pb_wrapped_u32(tp, "max_connect_attempts", &out->max_connect_attempts) &&
	    out->max_connect_attempts == 0)
		conv_err(c, "max_connect_attempts", "must be at least 1");
	if (pb_has(tp, "max_downstream_connection_duration") &&
	    conv_duration(c, tp, "max_downstream_connection_duration",
			  &out->max_downstream_connection_duration_ms, false) &&
	    out->max_downstream_connection_duration_ms == 0)
		conv_err(c, "max_downstream_connection_duration", "must be at least 1ms");
	size_t nh = pb_len(tp, "hash_policy");
	if (nh > 1)
		conv_err(c, "hash_policy", "%zu policies: Envoy takes at most one", nh);
	if (nh) {
		struct pb hp = pb_at(tp, "hash_policy", 0);
		size_t m = conv_push(c, "hash_policy[0]");
		conv_only(c, hp, "source_ip");
		if (!pb_has(hp, "source_ip"))
			conv_err(c, "", "set source_ip (the only policy Arion hashes on)");
		out->hash_source_ip = true;
		conv_pop(c, m);
	}
	conv_access_logs(c, tp, "access_log", &out->access_logs, &out->n_access_logs);
	struct pb ao = pb_msg(tp, "access_log_options");
	bool old =
	    pb_has(tp, "access_log_flush_interval") || pb_bool(tp, "flush_access_log_on_connected");
	if (ao.m && old)
		conv_err(c, "access_log_options",
			 "set either access_log_options or the deprecated "
			 "access_log_flush_interval / flush_access_log_on_connected, not both");
	struct pb src = ao.m ? ao : tp;
	size_t m = ao.m ? conv_push(c, "access_log_options") : 0;
	if (ao.m)
		conv_only(c, ao, "access_log_flush_interval,flush_access_log_on_connected");
	if (pb_has(src, "access_log_flush_interval") &&
	    conv_duration(c, src, "access_log_flush_interval", &out->access_log_flush_interval_ms,
			  false) &&
	    out->access_log_flush_interval_ms == 0)
		conv_err(c, "access_log_flush_interval", "must be at least 1ms");
	out->flush_access_log_on_connected = pb_bool(src, "flush_access_log_on_connected");
	if (ao.m)
		conv_pop(c, m);
	return out;
}

/* ---- RBAC ---------------------------------------------------------------------- */

enum { RULE_PERMISSION, RULE_PRINCIPAL };

static void rbac_rule(struct conv *c, struct pb p, int which, bool http, int depth,
		      struct arn_cfg_rbac_rule *out);

static void rbac_set(struct conv *c, struct pb set, int which, bool http, int depth,
		     struct arn_cfg_rbac_rule *out)
{
	const char *f = which == RULE_PERMISSION ? "rules" : "ids";
	conv_only(c, set, f);
	size_t n = pb_len(set, f);
	if (n == 0)
		conv_err(c, f, "empty (Envoy requires at least one)");
	out->kids = CONV_NEW(c, struct arn_cfg_rbac_rule, n ? n : 1);
	for (size_t i = 0; out->kids && i < n; i++) {
		size_t m = conv_push(c, "%s[%zu]", f, i);
		rbac_rule(c, pb_at(set, f, i), which, http, depth + 1, &out->kids[i]);
		conv_pop(c, m);
	}
	out->n_kids = out->kids ? n : 0;
}

static void path_matcher(struct conv *c, struct pb pm, struct arn_cfg_rbac_rule *out)
{
	conv_only(c, pm, "path");
	struct pb sm = pb_msg(pm, "path");
	if (!sm.m) {
		conv_err(c, "path", "missing");
		return;
	}
	size_t m = conv_push(c, "path");
	conv_string_matcher(c, sm, &out->str);
	conv_pop(c, m);
}

/*
 * One Permission or Principal (their oneof "rule" / "identifier"). The
 * network filter has no request: header and url_path never match there
 * in Envoy, which would silently turn a DENY rule into nothing, so Arion
 * refuses them on the network filter.
 */
static void rbac_rule(struct conv *c, struct pb p, int which, bool http, int depth,
		      struct arn_cfg_rbac_rule *out)
{
	const char *oneof = which == RULE_PERMISSION ? "rule" : "identifier";
	const char *w = pb_which(p, oneof);
	if (depth > RBAC_MAX_DEPTH) {
		conv_err(c, "", "and/or/not nested more than %d deep", RBAC_MAX_DEPTH);
		return;
	}
	if (!w) {
		conv_err(c, "", "empty %s: set one of its rules",
			 which == RULE_PERMISSION ? "permission" : "principal");
		return;
	}
	size_t m = conv_push(c, "%s", w);
	/* scalar members (any, destination_port) have no message */
	const upb_FieldDef *fd = pb_field(p, w);
	struct pb v = {NULL, NULL};
	if (fd && upb_FieldDef_IsSubMessage(fd))
		v = pb_msg(p, w);
	if (!strcmp(w, "and_rules") || !strcmp(w, "and_ids")) {
		out->kind = ARN_CFG_RBAC_AND;
		rbac_set(c, v, which, http, depth, out);
	} else if (!strcmp(w, "or_rules") || !strcmp(w, "or_ids")) {
		out->kind = ARN_CFG_RBAC_OR;
		rbac_set(c, v, which, http, depth, out);
	} else if (!strcmp(w, "not_rule") || !strcmp(w, "not_id")) {
		out->kind = ARN_CFG_RBAC_NOT;
		out->kids = CONV_NEW(c, struct arn_cfg_rbac_rule, 1);
		if (out->kids) {
			out->n_kids = 1;
			rbac_rule(c, v, which, http, depth + 1, out->kids);
		}
	} else if (!strcmp(w, "any")) {
		out->kind = ARN_CFG_RBAC_ANY;
		if (!pb_bool(p, "any"))
			conv_err(c, "", "must be true (Envoy's constant)");
	} else if (!strcmp(w, "header") || !strcmp(w, "url_path")) {
		if (!http) {
			conv_err(c, "",
				 "the network RBAC filter has no HTTP request to match (use the "
				 "HTTP RBAC filter, envoy.filters.http.rbac)");
		} else if (w[0] == 'h') {
			out->kind = ARN_CFG_RBAC_HEADER;
			out->header = CONV_NEW(c, struct arn_cfg_header_match, 1);
			if (out->header)
				conv_header_matcher(c, v, out->header);
		} else {
			out->kind = ARN_CFG_RBAC_URL_PATH;
			path_matcher(c, v, out);
		}
	} else if (!strcmp(w, "destination_ip") || !strcmp(w, "source_ip") ||
		   !strcmp(w, "direct_remote_ip") || !strcmp(w, "remote_ip")) {
		out->kind = w[0] == 'd'	  ? (w[1] == 'e' ? ARN_CFG_RBAC_DST_IP
							 : ARN_CFG_RBAC_DIRECT_REMOTE_IP)
			    : w[0] == 's' ? ARN_CFG_RBAC_SOURCE_IP
					  : ARN_CFG_RBAC_REMOTE_IP;
		conv_cidr(c, v, &out->cidr);
	} else if (!strcmp(w, "destination_port")) {
		out->kind = ARN_CFG_RBAC_DST_PORT;
		out->port_lo = pb_u32(p, "destination_port");
		if (out->port_lo > 65535)
			conv_err(c, "", "%u is not a port", out->port_lo);
	} else if (!strcmp(w, "destination_port_range")) {
		out->kind = ARN_CFG_RBAC_DST_PORT_RANGE;
		conv_only(c, v, "start,end");
		int32_t s = pb_i32(v, "start"), e = pb_i32(v, "end");
		/* Envoy: start <= end, both ports; [start, end) */
		if (s < 0 || e < 0 || s > 65536 || e > 65536 || s > e)
			conv_err(c, "", "[%d, %d) is not a range of ports", s, e);
		out->port_lo = s < 0 ? 0 : (uint32_t)s;
		out->port_hi = e < 0 ? 0 : (uint32_t)e;
	} else if (!strcmp(w, "requested_server_name")) {
		out->kind = ARN_CFG_RBAC_SNI;
		conv_string_matcher(c, v, &out->str);
	} else if (!strcmp(w, "authenticated")) {
		out->kind = ARN_CFG_RBAC_AUTHENTICATED;
		conv_only(c, v, "principal_name");
		struct pb pn = pb_msg(v, "principal_name");
		if (pn.m) {
			size_t m2 = conv_push(c, "principal_name");
			out->has_str = conv_string_matcher(c, pn, &out->str) == 0;
			conv_pop(c, m2);
		}
	} else {
		/* metadata, matcher, filter_state, uri_template, ...: no dynamic
		 * metadata or filter state in Arion */
		conv_err(c, "", "this RBAC %s is not supported by Arion",
			 which == RULE_PERMISSION ? "permission" : "principal");
	}
	conv_pop(c, m);
}

static int policy_cmp(const void *a, const void *b)
{
	const struct arn_cfg_rbac_policy *x = a, *y = b;
	size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
	int r = memcmp(x->name, y->name, n);
	return r ? r : (x->name_len > y->name_len) - (x->name_len < y->name_len);
}

/* An RBAC filter's `rules` (or shadow_rules): an envoy.config.rbac.v3.RBAC. */
static void rbac_rules(struct conv *c, struct pb r, bool http, struct arn_cfg_rbac_rules *out)
{
	conv_only(c, r, "action,policies");
	int32_t a = pb_i32(r, "action");
	if (a < 0 || a > 2)
		conv_err(c, "action", "unknown value %d", a);
	out->action = (uint8_t)a;
	const upb_Map *map = upb_Message_Get(r.m, pb_field(r, "policies")).map_val;
	size_t n = map ? upb_Map_Size(map) : 0;
	out->policies = CONV_NEW(c, struct arn_cfg_rbac_policy, n ? n : 1);
	const upb_MessageDef *pd = arn_proto_msgdef("envoy.config.rbac.v3.Policy");
	size_t iter = kUpb_Map_Begin;
	while (out->policies && map && upb_MapIterator_Next(map, &iter)) {
		upb_StringView key = upb_MapIterator_Key(map, iter).str_val;
		struct pb pol = {upb_MapIterator_Value(map, iter).msg_val, pd};
		struct arn_cfg_rbac_policy *o = &out->policies[out->n_policies++];
		size_t m = conv_push(c, "policies[%.*s]", (int)key.size, key.data);
		o->name = conv_str(c, key);
		o->name_len = key.size;
		/* condition / checked_condition: CEL, which Arion does not run */
		conv_only(c, pol, "permissions,principals");
		size_t np = pb_len(pol, "permissions"), nq = pb_len(pol, "principals");
		if (np == 0)
			conv_err(c, "permissions", "empty (Envoy requires at least one)");
		if (nq == 0)
			conv_err(c, "principals", "empty (Envoy requires at least one)");
		o->permissions = CONV_NEW(c, struct arn_cfg_rbac_rule, np ? np : 1);
		o->principals = CONV_NEW(c, struct arn_cfg_rbac_rule, nq ? nq : 1);
		for (size_t i = 0; o->permissions && i < np; i++) {
			size_t m2 = conv_push(c, "permissions[%zu]", i);
			rbac_rule(c, pb_at(pol, "permissions", i), RULE_PERMISSION, http, 0,
				  &o->permissions[i]);
			conv_pop(c, m2);
		}
		for (size_t i = 0; o->principals && i < nq; i++) {
			size_t m2 = conv_push(c, "principals[%zu]", i);
			rbac_rule(c, pb_at(pol, "principals", i), RULE_PRINCIPAL, http, 0,
				  &o->principals[i]);
			conv_pop(c, m2);
		}
		o->n_permissions = o->permissions ? np : 0;
		o->n_principals = o->principals ? nq : 0;
		conv_pop(c, m);
	}
	if (out->policies && out->n_policies > 1)
		qsort(out->policies, out->n_policies, sizeof(*out->policies), policy_cmp);
}

/* ---- RBAC's matcher (xds.type.matcher.v3.Matcher) ------------------------------------ */


/* An OnMatch: its action, an envoy.config.rbac.v3.Action. */
static void rbac_on_match(struct conv *c, struct pb om, struct arn_cfg_rbac_mentry *out,
			  struct arn_cfg_rbac_rules *rules)
{
	/* a nested matcher, keep_matching: not supported (conv_only names them) */
	conv_only(c, om, "action");
	struct pb a = pb_msg(om, "action");
	size_t m = conv_push(c, "action");
	if (!a.m) {
		conv_err(c, "", "missing (a nested matcher is not supported by Arion)");
		conv_pop(c, m);
		return;
	}
	size_t m2 = conv_push(c, "typed_config");
	struct pb act = conv_any(c, pb_msg(a, "typed_config"), "envoy.config.rbac.v3.Action");
	conv_pop(c, m2);
	if (act.m) {
		upb_StringView n = pb_str(act, "name");
		if (n.size == 0)
			conv_err(c, "typed_config.name", "missing (Envoy requires a name)");
		out->policy.name = conv_str(c, n);
		out->policy.name_len = n.size;
		int32_t x = pb_i32(act, "action");
		if (x < 0 || x > 2)
			conv_err(c, "typed_config.action", "unknown value %d", x);
		out->action = (uint8_t)x;
		if (x == ARN_CFG_RBAC_LOG)
			rules->action = ARN_CFG_RBAC_LOG;
	}
	conv_pop(c, m);
}

/* An RBAC filter's `matcher` (or shadow_matcher): an xds.type.matcher.v3.Matcher. */
static void rbac_matcher(struct conv *c, struct pb r, bool http, struct arn_cfg_rbac_rules *out)
{
	out->matcher = true;
	out->action = ARN_CFG_RBAC_ALLOW;
	/* matcher_tree: exact / prefix maps over an input, not supported */
	conv_only(c, r, "matcher_list,on_no_match");
	struct pb ml = pb_msg(r, "matcher_list");
	size_t n = ml.m ? pb_len(ml, "matchers") : 0;
	if (ml.m && n == 0)
		conv_err(c, "matcher_list.matchers", "empty (Envoy requires at least one)");
	out->entries = CONV_NEW(c, struct arn_cfg_rbac_mentry, n ? n : 1);
	for (size_t i = 0; out->entries && i < n; i++) {
		struct pb fm = pb_at(ml, "matchers", i);
		size_t m = conv_push(c, "matcher_list.matchers[%zu]", i);
		conv_only(c, fm, "predicate,on_match");
		size_t m2 = conv_push(c, "predicate");
		if (!pb_msg(fm, "predicate").m)
			conv_err(c, "", "missing");
		else
			conv_predicate(c, pb_msg(fm, "predicate"), http ? CONV_PRED_REQ : CONV_PRED_NET, 0,
				       &out->entries[i].predicate);
		conv_pop(c, m2);
		m2 = conv_push(c, "on_match");
		if (!pb_msg(fm, "on_match").m)
			conv_err(c, "", "missing");
		else
			rbac_on_match(c, pb_msg(fm, "on_match"), &out->entries[i], out);
		conv_pop(c, m2);
		conv_pop(c, m);
	}
	out->n_entries = out->entries ? n : 0;
	struct pb nm = pb_msg(r, "on_no_match");
	if (nm.m) {
		size_t m = conv_push(c, "on_no_match");
		out->has_no_match = true;
		rbac_on_match(c, nm, &out->no_match, out);
		conv_pop(c, m);
	}
}

/* The rules at field @p f of @p p, read by @p read (rbac_rules or
 * rbac_matcher) with @p f on the path its errors name; NULL when the field
 * is absent or out of memory. */
static const struct arn_cfg_rbac_rules *
rbac_field(struct conv *c, struct pb p, const char *f, bool http,
	   void (*read)(struct conv *c, struct pb r, bool http, struct arn_cfg_rbac_rules *out))
{
	struct pb r = pb_msg(p, f);
	if (!r.m)
		return NULL;
	size_t m0 = conv_push(c, "%s", f);
	struct arn_cfg_rbac_rules *out = CONV_NEW(c, struct arn_cfg_rbac_rules, 1);
	if (out)
		read(c, r, http, out);
	conv_pop(c, m0);
	return out;
}

/* `rules` or `matcher` (Envoy: not both), and the shadow pair likewise. */
static void rbac_rules_or_matcher(struct conv *c, struct pb r, bool http,
				  struct arn_cfg_rbac_filter *out)
{
	if (pb_has(r, "rules") && pb_has(r, "matcher"))
		conv_err(c, "matcher", "rules and matcher are exclusive (Envoy): set one");
	if (pb_has(r, "shadow_rules") && pb_has(r, "shadow_matcher"))
		conv_err(c, "shadow_matcher",
			 "shadow_rules and shadow_matcher are exclusive (Envoy): set one");
	out->rules = pb_has(r, "matcher") ? rbac_field(c, r, "matcher", http, rbac_matcher)
					  : rbac_field(c, r, "rules", http, rbac_rules);
	out->shadow = pb_has(r, "shadow_matcher")
			  ? rbac_field(c, r, "shadow_matcher", http, rbac_matcher)
			  : rbac_field(c, r, "shadow_rules", http, rbac_rules);
}

static struct arn_cfg_rbac_filter *net_rbac(struct conv *c, struct pb r)
{
	struct arn_cfg_rbac_filter *out = CONV_NEW(c, struct arn_cfg_rbac_filter, 1);
	if (!out)
		return NULL;
	conv_only(c, r,
		  "rules,matcher,shadow_rules,shadow_matcher,shadow_rules_stat_prefix,stat_prefix,"
		  "enforcement_type,delay_deny");
	out->stat_prefix = required_prefix(c, r);
	out->shadow_stat_prefix = conv_str(c, pb_str(r, "shadow_rules_stat_prefix"));
	rbac_rules_or_matcher(c, r, false, out);
	int32_t e = pb_i32(r, "enforcement_type");
	if (e < 0 || e > 1)
		conv_err(c, "enforcement_type", "unknown value %d", e);
	out->enforcement = (uint8_t)e;
	conv_duration(c, r, "delay_deny", &out->delay_deny_ms, false);
	return out;
}

static struct arn_cfg_rbac_filter *http_rbac(struct conv *c, struct pb r)
{
	struct arn_cfg_rbac_filter *out = CONV_NEW(c, struct arn_cfg_rbac_filter, 1);
	if (!out)
		return NULL;
	conv_only(c, r, "rules,matcher,shadow_rules,shadow_matcher,shadow_rules_stat_prefix");
	out->stat_prefix = "";
	out->shadow_stat_prefix = conv_str(c, pb_str(r, "shadow_rules_stat_prefix"));
	rbac_rules_or_matcher(c, r, true, out);
	return out;
}

/* ---- rate and connection limits ------------------------------------------------ */

static struct arn_cfg_bucket_state *bucket_state(struct conv *c)
{
	return CONV_NEW(c, struct arn_cfg_bucket_state, 1);
}

static struct arn_cfg_local_ratelimit *net_ratelimit(struct conv *c, struct pb r)
{
	struct arn_cfg_local_ratelimit *out = CONV_NEW(c, struct arn_cfg_local_ratelimit, 1);
	if (!out)
		return NULL;
	/* share_key: buckets shared between filter configurations by name */
	conv_only(c, r, "stat_prefix,token_bucket,runtime_enabled");
	out->stat_prefix = required_prefix(c, r);
	struct pb tb = pb_msg(r, "token_bucket");
	if (!tb.m) {
		conv_err(c, "token_bucket", "missing (Envoy requires it)");
	} else {
		size_t m = conv_push(c, "token_bucket");
		token_bucket(c, tb, &out->bucket);
		conv_pop(c, m);
	}
	out->enabled = conv_runtime_flag(c, r, "runtime_enabled");
	out->state = bucket_state(c);
	return out;
}

static struct arn_cfg_connection_limit *connection_limit(struct conv *c, struct pb r)
{
	struct arn_cfg_connection_limit *out = CONV_NEW(c, struct arn_cfg_connection_limit, 1);
	if (!out)
		return NULL;
	conv_only(c, r, "stat_prefix,max_connections,delay,runtime_enabled");
	out->stat_prefix = required_prefix(c, r);
	if (!pb_wrapped_u64(r, "max_connections", &out->max_connections))
		conv_err(c, "max_connections", "missing (Envoy requires it)");
	else if (out->max_connections == 0)
		conv_err(c, "max_connections", "must be at least 1");
	conv_duration(c, r, "delay", &out->delay_ms, false);
	out->enabled = conv_runtime_flag(c, r, "runtime_enabled");
	out->count = CONV_NEW(c, uint64_t, 8); /* a line of its own, mostly */
	return out;
}

static bool entries_eq(const struct arn_cfg_rl_descriptor *a, const struct arn_cfg_rl_descriptor *b)
{
	if (a->n_entries != b->n_entries)
		return false;
	for (size_t i = 0; i < a->n_entries; i++) {
		const struct arn_cfg_rl_entry *x = &a->entries[i], *y = &b->entries[i];
		if (x->key_len != y->key_len || x->value_len != y->value_len ||
		    memcmp(x->key, y->key, x->key_len) || memcmp(x->value, y->value, x->value_len))
			return false;
	}
	return true;
}

/*
 * envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit, the
 * filter's or a route's (@p per_route: the token bucket is required).
 */
static struct arn_cfg_http_ratelimit *http_ratelimit(struct conv *c, struct pb r, bool per_route)
{
	struct arn_cfg_http_ratelimit *out = CONV_NEW(c, struct arn_cfg_http_ratelimit, 1);
	if (!out)
		return NULL;
	/* local_cluster_rate_limit: sharing by the local cluster's membership */
	conv_only(c, r,
		  "stat_prefix,status,token_bucket,filter_enabled,filter_enforced,request_headers_"
		  "to_add_when_not_enforced,response_headers_to_add,descriptors,stage,local_rate_"
		  "limit_per_downstream_connection,enable_x_ratelimit_headers,vh_rate_limits,"
		  "always_consume_default_token_bucket,rate_limited_as_resource_exhausted");
	out->stat_prefix = required_prefix(c, r);
	out->status = 429;
	struct pb st = pb_msg(r, "status");
	if (st.m) {
		size_t m = conv_push(c, "status");
		conv_only(c, st, "code");
		int32_t code = pb_i32(st, "code");
		/* Envoy: a code below 400 falls back to 429 */
		if (code >= 400 && code <= 599)
			out->status = (uint16_t)code;
		else if (code > 599)
			conv_err(c, "code", "%d is not an HTTP status", code);
		conv_pop(c, m);
	}
	struct pb tb = pb_msg(r, "token_bucket");
	if (tb.m) {
		size_t m = conv_push(c, "token_bucket");
		token_bucket(c, tb, &out->bucket);
		conv_pop(c, m);
		out->has_bucket = true;
		out->state = bucket_state(c);
	} else if (per_route) {
		conv_err(c, "token_bucket", "missing (Envoy requires it per route)");
	}
	conv_runtime_fraction(c, r, "filter_enabled", &out->enabled);
	conv_runtime_fraction(c, r, "filter_enforced", &out->enforced);
	conv_header_add_list(c, r, "request_headers_to_add_when_not_enforced",
			     &out->headers.req_add, &out->headers.n_req_add);
	conv_header_add_list(c, r, "response_headers_to_add", &out->headers.resp_add,
			     &out->headers.n_resp_add);
	conv_header_add_ops(c, "request_headers_to_add_when_not_enforced", out->headers.req_add,
			    out->headers.n_req_add);
	conv_header_add_ops(c, "response_headers_to_add", out->headers.resp_add,
			    out->headers.n_resp_add);
	if (out->headers.n_req_add > 10)
		conv_err(c, "request_headers_to_add_when_not_enforced", "at most 10 (Envoy)");
	if (out->headers.n_resp_add > 10)
		conv_err(c, "response_headers_to_add", "at most 10 (Envoy)");
	size_t nd = pb_len(r, "descriptors");
	out->descriptors = CONV_NEW(c, struct arn_cfg_rl_descriptor, nd ? nd : 1);
	for (size_t i = 0; out->descriptors && i < nd; i++) {
		struct pb d = pb_at(r, "descriptors", i);
		struct arn_cfg_rl_descriptor *o = &out->descriptors[i];
		size_t m = conv_push(c, "descriptors[%zu]", i);
		conv_only(c, d, "entries,token_bucket");
		size_t ne = pb_len(d, "entries");
		if (ne == 0)
			conv_err(c, "entries", "empty (Envoy requires at least one)");
		o->entries = CONV_NEW(c, struct arn_cfg_rl_entry, ne ? ne : 1);
		for (size_t j = 0; o->entries && j < ne; j++) {
			struct pb e = pb_at(d, "entries", j);
			size_t m2 = conv_push(c, "entries[%zu]", j);
			conv_only(c, e, "key,value");
			upb_StringView k = pb_str(e, "key"), v = pb_str(e, "value");
			if (k.size == 0)
				conv_err(c, "key", "missing");
			o->entries[j] = (struct arn_cfg_rl_entry){conv_str(c, k), k.size,
								  conv_str(c, v), v.size};
			conv_pop(c, m2);
		}
		o->n_entries = o->entries ? ne : 0;
		/* a request's descriptor longer than lib/l4 builds matches
		 * none (it is not built): one configured here could never
		 * apply, so it is refused rather than silently inert */
		size_t vbytes = 0;
		for (size_t j = 0; j < o->n_entries; j++)
			vbytes += o->entries[j].value_len;
		if (ne > ARN_CFG_RL_MAX_ACTIONS)
			conv_err(c, "entries",
				 "%zu entries: Arion builds a request's descriptors of at most %d "
				 "(a RateLimit's actions), so this one could never match",
				 ne, ARN_CFG_RL_MAX_ACTIONS);
		else if (vbytes > ARN_CFG_RL_DESC_BYTES)
			conv_err(c, "entries",
				 "values of %zu bytes together: Arion builds a request's "
				 "descriptors of at most %d bytes of values, so this one could "
				 "never match",
				 vbytes, ARN_CFG_RL_DESC_BYTES);
		struct pb dtb = pb_msg(d, "token_bucket");
		if (!dtb.m) {
			conv_err(c, "token_bucket", "missing (Envoy requires it)");
		} else {
			size_t m2 = conv_push(c, "token_bucket");
			token_bucket(c, dtb, &o->bucket);
			conv_pop(c, m2);
		}
		o->state = bucket_state(c);
		for (size_t j = 0; j < i; j++)
			if (entries_eq(&out->descriptors[j], o))
				conv_err(c, "",
					 "the same entries as descriptors[%zu] (Envoy refuses "
					 "duplicate descriptors)",
					 j);
		conv_pop(c, m);
	}
	out->n_descriptors = out->descriptors ? nd : 0;
	out->stage = pb_u32(r, "stage");
	if (out->stage > 10)
		conv_err(c, "stage", "%u is more than 10", out->stage);
	out->per_connection = pb_bool(r, "local_rate_limit_per_downstream_connection");
	if (out->per_connection && 1 + out->n_descriptors > ARN_CFG_HLRL_CONN_BUCKETS)
		conv_err(c, "local_rate_limit_per_downstream_connection",
			 "%zu descriptors: a connection keeps at most %d buckets of its own "
			 "(the default one and %d descriptors)",
			 out->n_descriptors, ARN_CFG_HLRL_CONN_BUCKETS,
			 ARN_CFG_HLRL_CONN_BUCKETS - 1);
	int32_t x = pb_i32(r, "enable_x_ratelimit_headers");
	if (x < 0 || x > 1)
		conv_err(c, "enable_x_ratelimit_headers", "unknown value %d", x);
	out->x_ratelimit_headers = x == 1;
	int32_t vh = pb_i32(r, "vh_rate_limits");
	if (vh < 0 || vh > 2)
		conv_err(c, "vh_rate_limits", "unknown value %d", vh);
	out->vh_rate_limits = (uint8_t)vh;
	out->always_consume_default = true;
	pb_wrapped_bool(r, "always_consume_default_token_bucket", &out->always_consume_default);
	out->resource_exhausted = pb_bool(r, "rate_limited_as_resource_exhausted");
	return out;
}

/* ---- entry points ---------------------------------------------------------------- */

bool conv_l4_network_filter(struct conv *c, struct pb f, upb_StringView tn, bool last,
			    struct arn_cfg_filter_chain *out)
{
	static const struct {
		const char *type, *name;
		int kind; /* -1: tcp_proxy (terminal) */
	} known[] = {
	    {TCP_PROXY_TYPE, "envoy.filters.network.tcp_proxy", -1},
	    {NET_RBAC_TYPE, "envoy.filters.network.rbac", ARN_CFG_L4_RBAC},
	    {NET_LRL_TYPE, "envoy.filters.network.local_ratelimit", ARN_CFG_L4_LOCAL_RATELIMIT},
	    {CXL_TYPE, "envoy.filters.network.connection_limit", ARN_CFG_L4_CONNECTION_LIMIT},
	};
	size_t k = 0;
	while (k < sizeof(known) / sizeof(known[0]) && !arn_sv_eq(tn, known[k].type) &&
	       !arn_sv_eq(tn, known[k].name))
		k++;
	if (k == sizeof(known) / sizeof(known[0]))
		return false;
	if (!feature(c, ARN_CONFIG_FEATURE_L4, known[k].name))
		return true;
	size_t m = conv_push(c, "typed_config");
	struct pb tc = pb_msg(f, "typed_config");
	struct pb cfg = conv_any(c, tc, known[k].type);
	conv_pop(c, m);
	if (known[k].kind < 0) {
		if (!last) {
			conv_err(c, "", "%s is a terminal filter: it must be the chain's last",
				 known[k].name);
			return true;
		}
		out->kind = ARN_CFG_NF_TCP_PROXY;
		if (cfg.m) {
			m = conv_push(c, "typed_config");
			out->tcp_proxy = tcp_proxy(c, cfg);
			conv_pop(c, m);
		}
		return true;
	}
	if (last) {
		conv_err(c, "",
			 "%s is not a terminal filter: the chain's last filter must be "
			 "http_connection_manager, tcp_proxy or echo",
			 known[k].name);
		return true;
	}
	if (!cfg.m)
		return true;
	struct arn_cfg_l4_filter *lf = &out->l4_filters[out->n_l4_filters++];
	lf->kind = (uint8_t)known[k].kind;
	lf->name = conv_str(c, pb_str(f, "name"));
	m = conv_push(c, "typed_config");
	switch (lf->kind) {
	case ARN_CFG_L4_RBAC:
		lf->rbac = net_rbac(c, cfg);
		break;
	case ARN_CFG_L4_LOCAL_RATELIMIT:
		lf->ratelimit = net_ratelimit(c, cfg);
		break;
	default:
		lf->connection_limit = connection_limit(c, cfg);
		break;
	}
	conv_pop(c, m);
	return true;
}

/* envoy.filters.http.cors's entry of http_filter_cfgs: the filter has no
 * configuration of its own, but an entry without one is not recorded */
static const uint8_t conv_cors_filter_cfg = 1;

/* A wrapped bool into -1 (absent), 0 or 1. */
static int8_t tristate(struct pb p, const char *f)
{
	bool v = false;
	return pb_wrapped_bool(p, f, &v) ? (int8_t)v : -1;
}

/* One header value of a CORS policy: NULL when empty (unset, taken from
 * the next level out). */
static const char *cors_value(struct conv *c, struct pb p, const char *f, uint32_t *len)
{
	upb_StringView v = pb_str(p, f);
	*len = (uint32_t)v.size;
	return v.size ? conv_hdr_str(c, f, v) : NULL;
}

const struct arn_cfg_cors *conv_cors(struct conv *c, struct pb p, bool ext)
{
	struct arn_cfg_cors *o = CONV_NEW(c, struct arn_cfg_cors, 1);
	if (!o)
		return NULL;
	/* the route's CorsPolicy, as gRPC's tree has it, has neither of the
	 * last two fields */
	conv_only(c, p,
		  ext ? "allow_origin_string_match,allow_methods,allow_headers,expose_headers,"
			"max_age,allow_credentials,filter_enabled,shadow_enabled,"
			"allow_private_network_access,forward_not_matching_preflights"
		      : "allow_origin_string_match,allow_methods,allow_headers,expose_headers,"
			"max_age,allow_credentials,filter_enabled,shadow_enabled");
	size_t n = pb_len(p, "allow_origin_string_match");
	o->origins = CONV_NEW(c, struct arn_cfg_str_match, n ? n : 1);
	for (size_t i = 0; o->origins && i < n; i++) {
		size_t m = conv_push(c, "allow_origin_string_match[%zu]", i);
		if (conv_string_matcher(c, pb_at(p, "allow_origin_string_match", i),
					&o->origins[o->n_origins]) == 0)
			o->n_origins++;
		conv_pop(c, m);
	}
	o->allow_methods = cors_value(c, p, "allow_methods", &o->allow_methods_len);
	o->allow_headers = cors_value(c, p, "allow_headers", &o->allow_headers_len);
	o->expose_headers = cors_value(c, p, "expose_headers", &o->expose_headers_len);
	o->max_age = cors_value(c, p, "max_age", &o->max_age_len);
	o->allow_credentials = tristate(p, "allow_credentials");
	o->allow_private_network = ext ? tristate(p, "allow_private_network_access") : -1;
	o->forward_not_matching = ext ? tristate(p, "forward_not_matching_preflights") : -1;
	/* Envoy: enabled for every request unless filter_enabled says
	 * otherwise; shadow mode for none unless shadow_enabled does */
	o->enabled = (struct arn_cfg_fraction){100, 100};
	if (pb_has(p, "filter_enabled"))
		conv_runtime_fraction(c, p, "filter_enabled", &o->enabled);
	conv_runtime_fraction(c, p, "shadow_enabled", &o->shadow);
	return o;
}

/* ---- envoy.filters.http.csrf ----------------------------------------------------------------- */

/* A CsrfPolicy (the filter's, or a route's per-filter one), as Envoy's
 * CsrfPolicy: filter_enabled is required (PGV), shadow_enabled 0 unset. */
static const struct arn_cfg_csrf *conv_csrf(struct conv *c, struct pb p)
{
	struct arn_cfg_csrf *o = CONV_NEW(c, struct arn_cfg_csrf, 1);
	if (!o)
		return NULL;
	conv_only(c, p, "filter_enabled,shadow_enabled,additional_origins");
	if (!pb_has(p, "filter_enabled"))
		conv_err(c, "filter_enabled", "missing (Envoy requires it)");
	conv_runtime_fraction(c, p, "filter_enabled", &o->enabled);
	conv_runtime_fraction(c, p, "shadow_enabled", &o->shadow);
	size_t n = pb_len(p, "additional_origins");
	if (n > ARN_CFG_CSRF_MAX_ORIGINS) {
		conv_err(c, "additional_origins",
			 "%zu entries: more than %d (each is tried for every refused request)", n,
			 ARN_CFG_CSRF_MAX_ORIGINS);
		return o;
	}
	o->origins = CONV_NEW(c, struct arn_cfg_str_match, n ? n : 1);
	for (size_t i = 0; o->origins && i < n; i++) {
		size_t m = conv_push(c, "additional_origins[%zu]", i);
		if (conv_string_matcher(c, pb_at(p, "additional_origins", i),
					&o->origins[o->n_origins]) == 0)
			o->n_origins++;
		conv_pop(c, m);
	}
	return o;
}

/* ---- envoy.filters.http.jwt_authn ------------------------------------------------------------ */

static void jwks_free_fn(void *p)
{
	arn_jwks_free(p);
}

/* local_jwks: a DataSource (inline_string, inline_bytes, or filename read
 * now, at most ARN_CFG_JWT_MAX_JWKS_FILE bytes) into a key set. */
static const struct arn_jwks *jwt_local_jwks(struct conv *c, struct pb ds, upb_StringView pname)
{
	size_t m = conv_push(c, "local_jwks");
	conv_only(c, ds, "inline_string,inline_bytes,filename");
	const char *w = pb_which(ds, "specifier");
	char *buf = NULL;
	size_t n = 0;
	const char *text = NULL;
	if (!w) {
		conv_err(c, "", "set inline_string, inline_bytes or filename");
	} else if (strcmp(w, "filename") == 0) {
		upb_StringView fn = pb_str(ds, "filename");
		char *path = strndup(fn.data, fn.size);
		if (path &&
		    conv_read_file(c, "filename", path, ARN_CFG_JWT_MAX_JWKS_FILE, &buf, &n) == 0)
			text = buf;
		free(path);
	} else {
		upb_StringView s = pb_str(ds, w);
		text = s.data;
		n = s.size;
	}
	struct arn_jwks *ks = NULL;
	if (text) {
		char err[160];
		ks = arn_jwks_parse(text, n, err, sizeof(err));
		if (!ks)
			conv_err(c, w, "provider '%.*s': no usable JWKS: %s", (int)pname.size,
				 pname.data, err);
		else if (arn_pool_on_free(c->pool, jwks_free_fn, ks) != 0) {
			arn_jwks_free(ks);
			ks = NULL;
			conv_err(c, "", "out of memory");
		}
	}
	free(buf);
	conv_pop(c, m);
	return ks;
}

/* remote_jwks: an http_uri (http or https, its authority the Host, its
 * path what is fetched) through a cluster; cache_duration; async_fetch
 * and retry_policy as far as Arion acts on them (docs/http.md). */
static const struct arn_cfg_jwt_remote *jwt_remote_jwks(struct conv *c, struct pb rj,
							upb_StringView pname)
{
	size_t m = conv_push(c, "remote_jwks");
	conv_only(c, rj, "http_uri,cache_duration,async_fetch,retry_policy");
	struct arn_cfg_jwt_remote *o = CONV_NEW(c, struct arn_cfg_jwt_remote, 1);
	struct pb hu = pb_msg(rj, "http_uri");
	if (!o) {
		conv_pop(c, m);
		return NULL;
	}
	o->cache_ms = 600u * 1000u; /* Envoy's DefaultCacheExpirationSec */
	o->provider = conv_str(c, pname);
	if (!hu.m) {
		conv_err(c, "http_uri", "missing (Envoy requires it)");
		conv_pop(c, m);
		return o;
	}
	size_t m2 = conv_push(c, "http_uri");
	conv_only(c, hu, "uri,cluster,timeout");
	upb_StringView uri = pb_str(hu, "uri");
	upb_StringView cn = pb_str(hu, "cluster");
	const char *u = uri.data;
	size_t ul = uri.size, skip = 0;
	if (ul >= 7 && strncasecmp(u, "http://", 7) == 0)
		skip = 7;
	else if (ul >= 8 && strncasecmp(u, "https://", 8) == 0)
		skip = 8;
	if (!ul) {
		conv_err(c, "uri", "missing (Envoy requires it)");
	} else if (ul > ARN_CFG_JWT_MAX_URI) {
		conv_err(c, "uri", "%zu bytes: more than %d", ul, ARN_CFG_JWT_MAX_URI);
	} else if (!skip) {
		conv_err(c, "uri", "'%.*s': not an http:// or https:// URI", (int)ul, u);
	} else {
		const char *a = u + skip, *end = u + ul;
		const char *sl = memchr(a, '/', (size_t)(end - a));
		const char *ae = sl ? sl : end;
		bool bad = ae == a;
		for (const char *q = u; q < end && !bad; q++)
			bad = (unsigned char)*q <= ' ' || *q == 0x7f || *q == '#';
		for (const char *q = a; q < ae && !bad; q++)
			bad = *q == '?' || *q == '@';
		if (bad) {
			conv_err(c, "uri",
				 "'%.*s': no host, or a space, control byte, '#', '?' or '@' where "
				 "Arion does not take one",
				 (int)ul, u);
		} else {
			o->host = arn_pool_strndup(c->pool, a, (size_t)(ae - a));
			o->host_len = (size_t)(ae - a);
			o->path = sl ? arn_pool_strndup(c->pool, sl, (size_t)(end - sl)) : "/";
			o->path_len = sl ? (size_t)(end - sl) : 1;
		}
	}
	if (!pb_which(hu, "http_upstream_type") || !cn.size) {
		conv_err(c, "cluster", "missing: the cluster the keys are fetched from");
	} else if (cn.size > ARN_CFG_JWT_MAX_CLUSTER_NAME) {
		conv_err(c, "cluster", "%zu bytes: more than %d", cn.size,
			 ARN_CFG_JWT_MAX_CLUSTER_NAME);
	} else {
		o->cluster_name = conv_str(c, cn);
		conv_refs(c, &o->cluster, cn);
		/* resolved per fetch, as a route's cluster (G5) */
		conv_dep(c, ARN_CFG_CLUSTER, cn.data, cn.size, false, 0);
		char *k = arn_pool_alloc(c->pool, cn.size + 1 + ul + 1);
		if (k) {
			memcpy(k, cn.data, cn.size);
			k[cn.size] = 0;
			memcpy(k + cn.size + 1, u, ul);
			k[cn.size + 1 + ul] = 0;
			o->key = k;
			o->key_len = cn.size + 1 + ul;
			uint64_t h = 1469598103934665603ull; /* FNV-1a */
			for (size_t i = 0; i < o->key_len; i++)
				h = (h ^ (unsigned char)k[i]) * 1099511628211ull;
			o->key_hash = h;
		}
	}
	if (!pb_has(hu, "timeout"))
		conv_err(c, "timeout", "missing (Envoy requires it)");
	else
		conv_duration(c, hu, "timeout", &o->timeout_ms, false);
	conv_pop(c, m2);
	if (pb_has(rj, "cache_duration"))
		conv_duration(c, rj, "cache_duration", &o->cache_ms, false);
	struct pb af = pb_msg(rj, "async_fetch");
	if (af.m) {
		m2 = conv_push(c, "async_fetch");
		conv_only(c, af, "fast_listener,failed_refetch_duration");
		/* Arion fetches with a client's request (a sub-request needs
		 * its connection): never at listener start, so the listener
		 * never waits (fast_listener either way); there is no
		 * background refetch for failed_refetch_duration to pace */
		if (pb_has(af, "failed_refetch_duration"))
			conv_err(c, "failed_refetch_duration",
				 "not supported by Arion: no background refetch (keys are "
				 "fetched when a request needs them); leave it unset");
		o->async_fetch = true;
		conv_pop(c, m2);
	}
	struct pb rp = pb_msg(rj, "retry_policy");
	if (rp.m) {
		m2 = conv_push(c, "retry_policy");
		conv_only(c, rp, "num_retries,retry_back_off");
		/* Envoy's defaults: 1 retry, 25 ms base, ten times that at most */
		o->backoff_base_ms = 25;
		struct pb bo = pb_msg(rp, "retry_back_off");
		if (bo.m) {
			size_t m3 = conv_push(c, "retry_back_off");
			conv_only(c, bo, "base_interval,max_interval");
			if (!conv_duration(c, bo, "base_interval", &o->backoff_base_ms, true))
				conv_err(c, "base_interval", "missing (Envoy requires it)");
			o->backoff_max_ms = 10 * o->backoff_base_ms;
			if (pb_has(bo, "max_interval")) {
				conv_duration(c, bo, "max_interval", &o->backoff_max_ms, true);
				if (o->backoff_max_ms < o->backoff_base_ms)
					conv_err(c, "max_interval",
						 "less than base_interval (Envoy refuses it)");
			}
			conv_pop(c, m3);
		}
		if (!o->backoff_max_ms)
			o->backoff_max_ms = 10 * o->backoff_base_ms;
		uint32_t n = 1; /* Envoy's convertCoreToRouteRetryPolicy default */
		pb_wrapped_u32(rp, "num_retries", &n);
		if (n > ARN_CFG_JWT_MAX_RETRIES)
			conv_err(c, "num_retries", "%u: more than %d", n, ARN_CFG_JWT_MAX_RETRIES);
		else
			o->num_retries = (uint8_t)n;
		conv_pop(c, m2);
	}
	conv_pop(c, m);
	return o;
}

static void jwt_provider(struct conv *c, struct pb p, upb_StringView name,
			 struct arn_cfg_jwt_provider *o)
{
	conv_only(c, p,
		  "issuer,audiences,require_expiration,local_jwks,remote_jwks,forward,from_"
		  "headers,from_params,from_cookies,forward_payload_header,pad_forward_payload_"
		  "header,clock_skew_seconds,claim_to_headers,payload_in_metadata,header_in_"
		  "metadata,failed_status_in_metadata,normalize_payload_in_metadata");
	/* The *_in_metadata fields (Istio's RequestAuthentication sets
	 * payload_in_metadata) give Envoy's dynamic metadata to later
	 * filters: Arion has none, and refuses everything that would read it
	 * (RBAC metadata principals, %DYNAMIC_METADATA%), so accepting them
	 * changes no decision (docs/configuration.md, accepted and not acted
	 * on). */
	o->name = conv_str(c, name);
	upb_StringView iss = pb_str(p, "issuer");
	o->issuer = conv_str(c, iss);
	o->issuer_len = iss.size;
	conv_str_list(c, p, "audiences", &o->audiences, &o->n_audiences, false);
	o->require_exp = pb_bool(p, "require_expiration");
	o->forward = pb_bool(p, "forward");
	o->pad_payload = pb_bool(p, "pad_forward_payload_header");
	o->clock_skew_s = pb_u32(p, "clock_skew_seconds");
	if (!o->clock_skew_s)
		o->clock_skew_s = 60; /* Envoy's kClockSkewInSecond */
	if (pb_has(p, "remote_jwks"))
		o->remote = jwt_remote_jwks(c, pb_msg(p, "remote_jwks"), name);
	else if (pb_has(p, "local_jwks"))
		o->jwks = jwt_local_jwks(c, pb_msg(p, "local_jwks"), name);
	else
		conv_err(c, "local_jwks", "missing: set local_jwks");
	size_t nh = pb_len(p, "from_headers"), np = pb_len(p, "from_params"),
	       nc = pb_len(p, "from_cookies");
	bool dflt = !nh && !np && !nc;
	o->headers = CONV_NEW(c, struct arn_cfg_jwt_from_header, dflt ? 1 : (nh ? nh : 1));
	if (!o->headers)
		return;
	if (dflt) {
		/* Envoy's default locations */
		o->headers[0] = (struct arn_cfg_jwt_from_header){"authorization", 13, "Bearer ", 7};
		o->n_headers = 1;
		static const char *const access_token[1] = {"access_token"};
		o->params = (const char **)access_token;
		o->n_params = 1;
	}
	for (size_t i = 0; i < nh; i++) {
		struct pb h = pb_at(p, "from_headers", i);
		size_t m = conv_push(c, "from_headers[%zu]", i);
		conv_only(c, h, "name,value_prefix");
		struct arn_cfg_jwt_from_header *f = &o->headers[o->n_headers];
		f->name = conv_hdr_name(c, "name", pb_str(h, "name"), &f->name_len);
		upb_StringView pre = pb_str(h, "value_prefix");
		f->prefix = conv_hdr_str(c, "value_prefix", pre);
		f->prefix_len = pre.size;
		if (f->name && f->prefix)
			o->n_headers++;
		conv_pop(c, m);
	}
	if (!dflt) {
		conv_str_list(c, p, "from_params", &o->params, &o->n_params, false);
		conv_str_list(c, p, "from_cookies", &o->cookies, &o->n_cookies, false);
	}
	upb_StringView fph = pb_str(p, "forward_payload_header");
	if (fph.size)
		o->payload_header =
		    conv_hdr_name(c, "forward_payload_header", fph, &o->payload_header_len);
	size_t ncl = pb_len(p, "claim_to_headers");
	if (ncl > ARN_CFG_JWT_MAX_CLAIM_HEADERS)
		conv_err(c, "claim_to_headers", "%zu entries: more than %d", ncl,
			 ARN_CFG_JWT_MAX_CLAIM_HEADERS);
	else if (ncl)
		o->claims = CONV_NEW(c, struct arn_cfg_jwt_claim_header, ncl);
	for (size_t i = 0; o->claims && i < ncl; i++) {
		struct pb h = pb_at(p, "claim_to_headers", i);
		size_t m = conv_push(c, "claim_to_headers[%zu]", i);
		conv_only(c, h, "header_name,claim_name");
		struct arn_cfg_jwt_claim_header *e = &o->claims[o->n_claims];
		e->header =
		    conv_hdr_name(c, "header_name", pb_str(h, "header_name"), &e->header_len);
		upb_StringView cn = pb_str(h, "claim_name");
		if (!cn.size)
			conv_err(c, "claim_name", "missing");
		e->claim = conv_str(c, cn);
		if (e->header && cn.size)
			o->n_claims++;
		conv_pop(c, m);
	}
}

static int jwt_provider_find(const struct arn_cfg_jwt_authn *f, upb_StringView name)
{
	for (size_t i = 0; i < f->n_providers; i++)
		if (strlen(f->providers[i].name) == name.size &&
		    memcmp(f->providers[i].name, name.data, name.size) == 0)
			return (int)i;
	return -1;
}

/* A JwtRequirement (@p p) into @p o; @p depth levels of lists above it. */
static void jwt_req(struct conv *c, const struct arn_cfg_jwt_authn *f, struct pb p,
		    struct arn_cfg_jwt_req *o, unsigned depth)
{
	const char *w = pb_which(p, "requires_type");
	if (!w) {
		/* Envoy: an empty requirement verifies nothing */
		o->kind = ARN_CFG_JWT_REQ_ALLOW_MISSING_OR_FAILED;
		o->n_subs = SIZE_MAX; /* marks "no requirement" */
		return;
	}
	if (strcmp(w, "provider_name") == 0 || strcmp(w, "provider_and_audiences") == 0) {
		bool pa = w[9] == 'a';
		struct pb pw = pa ? pb_msg(p, w) : p;
		upb_StringView name = pb_str(pw, "provider_name");
		size_t m = conv_push(c, "%s", w);
		if (pa)
			conv_only(c, pw, "provider_name,audiences");
		int i = jwt_provider_find(f, name);
		if (i < 0)
			conv_err(c, "", "no provider named '%.*s'", (int)name.size, name.data);
		o->kind = ARN_CFG_JWT_REQ_PROVIDER;
		o->provider = (uint16_t)(i < 0 ? 0 : i);
		if (pa) {
			o->aud_override = true;
			conv_str_list(c, pw, "audiences", &o->audiences, &o->n_audiences, false);
		}
		conv_pop(c, m);
		return;
	}
	if (strcmp(w, "allow_missing") == 0) {
		o->kind = ARN_CFG_JWT_REQ_ALLOW_MISSING;
		return;
	}
	if (strcmp(w, "allow_missing_or_failed") == 0) {
		o->kind = ARN_CFG_JWT_REQ_ALLOW_MISSING_OR_FAILED;
		return;
	}
	bool any = strcmp(w, "requires_any") == 0;
	size_t m = conv_push(c, "%s", w);
	struct pb l = pb_msg(p, w);
	size_t n = pb_len(l, "requirements");
	o->kind = any ? ARN_CFG_JWT_REQ_ANY : ARN_CFG_JWT_REQ_ALL;
	if (depth >= ARN_CFG_JWT_MAX_REQ_DEPTH) {
		conv_err(c, "", "nested more than %d levels deep", ARN_CFG_JWT_MAX_REQ_DEPTH);
	} else if (n < 2) {
		conv_err(c, "requirements", "%zu: at least 2 (Envoy's min_items)", n);
	} else {
		struct arn_cfg_jwt_req *subs = CONV_NEW(c, struct arn_cfg_jwt_req, n);
		for (size_t i = 0; subs && i < n; i++) {
			size_t m2 = conv_push(c, "requirements[%zu]", i);
			jwt_req(c, f, pb_at(l, "requirements", i), &subs[i], depth + 1);
			conv_pop(c, m2);
		}
		o->subs = subs;
		o->n_subs = subs ? n : 0;
	}
	conv_pop(c, m);
}

static const struct arn_cfg_jwt_req *jwt_req_new(struct conv *c, const struct arn_cfg_jwt_authn *f,
						 struct pb p)
{
	struct arn_cfg_jwt_req *o = CONV_NEW(c, struct arn_cfg_jwt_req, 1);
	if (!o)
		return NULL;
	jwt_req(c, f, p, o, 0);
	if (o->n_subs == SIZE_MAX)
		return NULL; /* an empty JwtRequirement: nothing required */
	return o;
}

static const struct arn_cfg_jwt_authn *http_jwt_authn(struct conv *c, struct pb p)
{
	conv_only(c, p,
		  "providers,rules,bypass_cors_preflight,requirement_map,strip_failure_response");
	struct arn_cfg_jwt_authn *f = CONV_NEW(c, struct arn_cfg_jwt_authn, 1);
	if (!f)
		return NULL;
	f->bypass_cors_preflight = pb_bool(p, "bypass_cors_preflight");
	f->strip_failure_response = pb_bool(p, "strip_failure_response");
	const upb_MessageDef *pd =
	    arn_proto_msgdef("envoy.extensions.filters.http.jwt_authn.v3.JwtProvider");
	const upb_MessageDef *rd =
	    arn_proto_msgdef("envoy.extensions.filters.http.jwt_authn.v3.JwtRequirement");
	/* providers (a map: its order is the wire's) */
	const upb_FieldDef *fd = pb_field(p, "providers");
	const upb_Map *map = fd ? upb_Message_Get(p.m, fd).map_val : NULL;
	size_t np = map ? upb_Map_Size(map) : 0;
	if (np > ARN_CFG_JWT_MAX_PROVIDERS) {
		conv_err(c, "providers", "%zu providers: more than %d", np,
			 ARN_CFG_JWT_MAX_PROVIDERS);
		return f;
	}
	f->providers = CONV_NEW(c, struct arn_cfg_jwt_provider, np ? np : 1);
	if (!f->providers)
		return f;
	size_t iter = kUpb_Map_Begin;
	while (map && upb_MapIterator_Next(map, &iter)) {
		upb_StringView key = upb_MapIterator_Key(map, iter).str_val;
		struct pb v = {upb_MapIterator_Value(map, iter).msg_val, pd};
		size_t m = conv_push(c, "providers[%.*s]", (int)key.size, key.data);
		jwt_provider(c, v, key, &f->providers[f->n_providers++]);
		conv_pop(c, m);
	}
	/* requirement_map */
	fd = pb_field(p, "requirement_map");
	map = fd ? upb_Message_Get(p.m, fd).map_val : NULL;
	size_t nr = map ? upb_Map_Size(map) : 0;
	f->reqmap = CONV_NEW(c, struct arn_cfg_jwt_named_req, nr ? nr : 1);
	struct arn_sb names = ARN_SB_INIT;
	iter = kUpb_Map_Begin;
	while (f->reqmap && map && upb_MapIterator_Next(map, &iter)) {
		upb_StringView key = upb_MapIterator_Key(map, iter).str_val;
		struct pb v = {upb_MapIterator_Value(map, iter).msg_val, rd};
		size_t m = conv_push(c, "requirement_map[%.*s]", (int)key.size, key.data);
		struct arn_cfg_jwt_named_req *e = &f->reqmap[f->n_reqmap++];
		e->name = conv_str(c, key);
		e->name_len = key.size;
		e->req = jwt_req_new(c, f, v);
		arn_sb_printf(&names, "%s%.*s", f->n_reqmap > 1 ? "," : "", (int)key.size,
			      key.data);
		conv_pop(c, m);
	}
	f->reqmap_names = arn_pool_strndup(c->pool, names.buf ? names.buf : "", names.len);
	arn_sb_free(&names);
	/* rules, in order: the first whose match matches decides */
	size_t nru = pb_len(p, "rules");
	f->rules = CONV_NEW(c, struct arn_cfg_jwt_rule, nru ? nru : 1);
	for (size_t i = 0; f->rules && i < nru; i++) {
		struct pb r = pb_at(p, "rules", i);
		size_t m = conv_push(c, "rules[%zu]", i);
		conv_only(c, r, "match,requires,requirement_name");
		struct arn_cfg_jwt_rule *o = &f->rules[f->n_rules++];
		conv_route_match(c, pb_msg(r, "match"), &o->match);
		const char *w = pb_which(r, "requirement_type");
		if (w && strcmp(w, "requires") == 0) {
			size_t m2 = conv_push(c, "requires");
			o->req = jwt_req_new(c, f, pb_msg(r, "requires"));
			conv_pop(c, m2);
		} else if (w) {
			upb_StringView rn = pb_str(r, "requirement_name");
			size_t k = 0;
			while (k < f->n_reqmap &&
			       (f->reqmap[k].name_len != rn.size ||
				memcmp(f->reqmap[k].name, rn.data, rn.size) != 0))
				k++;
			if (k == f->n_reqmap)
				conv_err(c, "requirement_name", "'%.*s' is not in requirement_map",
					 (int)rn.size, rn.data);
			else
				o->req = f->reqmap[k].req;
		}
		conv_pop(c, m);
	}
	return f;
}

static const struct arn_cfg_jwt_per_route *http_jwt_per_route(struct conv *c, struct pb p)
{
	conv_only(c, p, "disabled,requirement_name");
	struct arn_cfg_jwt_per_route *o = CONV_NEW(c, struct arn_cfg_jwt_per_route, 1);
	if (!o)
		return NULL;
	const char *w = pb_which(p, "requirement_specifier");
	if (!w) {
		conv_err(c, "", "set disabled or requirement_name");
	} else if (strcmp(w, "disabled") == 0) {
		if (!pb_bool(p, "disabled"))
			conv_err(c, "disabled", "must be true (Envoy's const)");
		o->disabled = true;
	} else {
		upb_StringView n = pb_str(p, "requirement_name");
		if (!n.size)
			conv_err(c, "requirement_name", "empty");
		o->name = conv_str(c, n);
		o->name_len = n.size;
	}
	return o;
}

bool conv_l4_http_filter(struct conv *c, struct pb tc, upb_StringView tn, uint8_t *kind,
			 const void **cfg)
{
	if (arn_sv_eq(tn, HTTP_API_KEY_TYPE) || arn_sv_eq(tn, HTTP_CRED_INJECTOR_TYPE)) {
		bool ak = arn_sv_eq(tn, HTTP_API_KEY_TYPE);
		if (!feature(c, ARN_CONFIG_FEATURE_HTTP_L4,
			     ak ? "envoy.filters.http.api_key_auth"
				: "envoy.filters.http.credential_injector"))
			return true;
		size_t m = conv_push(c, "typed_config");
		struct pb p = conv_any(c, tc, ak ? HTTP_API_KEY_TYPE : HTTP_CRED_INJECTOR_TYPE);
		if (p.m) {
			*kind = ak ? ARN_CFG_HF_API_KEY_AUTH : ARN_CFG_HF_CRED_INJECTOR;
			*cfg = ak ? (const void *)conv_api_key_auth(c, p)
				  : (const void *)conv_cred_injector(c, p);
		}
		conv_pop(c, m);
		return true;
	}
	if (arn_sv_eq(tn, HTTP_RLS_TYPE)) {
		if (!feature(c, ARN_CONFIG_FEATURE_HTTP_L4, "envoy.filters.http.ratelimit"))
			return true;
		size_t m = conv_push(c, "typed_config");
		struct pb p = conv_any(c, tc, HTTP_RLS_TYPE);
		if (p.m) {
			*kind = ARN_CFG_HF_RATELIMIT;
			*cfg = conv_rls(c, p);
		}
		conv_pop(c, m);
		return true;
	}
	if (arn_sv_eq(tn, HTTP_BASIC_AUTH_TYPE)) {
		if (!feature(c, ARN_CONFIG_FEATURE_HTTP_L4, "envoy.filters.http.basic_auth"))
			return true;
		size_t m = conv_push(c, "typed_config");
		struct pb p = conv_any(c, tc, HTTP_BASIC_AUTH_TYPE);
		if (p.m) {
			*kind = ARN_CFG_HF_BASIC_AUTH;
			*cfg = conv_basic_auth(c, p);
		}
		conv_pop(c, m);
		return true;
	}
	if (arn_sv_eq(tn, HTTP_CSRF_TYPE)) {
		if (!feature(c, ARN_CONFIG_FEATURE_HTTP_L4, "envoy.filters.http.csrf"))
			return true;
		size_t m = conv_push(c, "typed_config");
		struct pb p = conv_any(c, tc, HTTP_CSRF_TYPE);
		if (p.m) {
			*kind = ARN_CFG_HF_CSRF;
			*cfg = conv_csrf(c, p);
		}
		conv_pop(c, m);
		return true;
	}
	if (arn_sv_eq(tn, HTTP_HM_TYPE)) {
		if (!feature(c, ARN_CONFIG_FEATURE_HTTP_L4, "envoy.filters.http.header_mutation"))
			return true;
		size_t m = conv_push(c, "typed_config");
		struct pb p = conv_any(c, tc, HTTP_HM_TYPE);
		if (p.m) {
			*kind = ARN_CFG_HF_HEADER_MUTATION;
			*cfg = conv_header_mutation(c, p, false);
		}
		conv_pop(c, m);
		return true;
	}
	if (arn_sv_eq(tn, HTTP_CRESP_TYPE)) {
		if (!feature(c, ARN_CONFIG_FEATURE_HTTP_L4, "envoy.filters.http.custom_response"))
			return true;
		size_t m = conv_push(c, "typed_config");
		struct pb p = conv_any(c, tc, HTTP_CRESP_TYPE);
		if (p.m) {
			*kind = ARN_CFG_HF_CUSTOM_RESPONSE;
			*cfg = conv_custom_response(c, p);
		}
		conv_pop(c, m);
		return true;
	}
	if (arn_sv_eq(tn, HTTP_BUFFER_TYPE)) {
		if (!feature(c, ARN_CONFIG_FEATURE_HTTP_L4, "envoy.filters.http.buffer"))
			return true;
		size_t m = conv_push(c, "typed_config");
		struct pb p = conv_any(c, tc, HTTP_BUFFER_TYPE);
		if (p.m) {
			*kind = ARN_CFG_HF_BUFFER;
			*cfg = conv_buffer(c, p);
		}
		conv_pop(c, m);
		return true;
	}
	if (arn_sv_eq(tn, HTTP_EXT_PROC_TYPE)) {
		if (!feature(c, ARN_CONFIG_FEATURE_HTTP_L4, "envoy.filters.http.ext_proc"))
			return true;
		size_t m = conv_push(c, "typed_config");
		struct pb p = conv_any(c, tc, HTTP_EXT_PROC_TYPE);
		if (p.m) {
			*kind = ARN_CFG_HF_EXT_PROC;
			*cfg = conv_ext_proc(c, p);
		}
		conv_pop(c, m);
		return true;
	}
	if (arn_sv_eq(tn, HTTP_LUA_TYPE)) {
		if (!feature(c, ARN_CONFIG_FEATURE_HTTP_L4, "envoy.filters.http.lua"))
			return true;
		size_t m = conv_push(c, "typed_config");
		struct pb p = conv_any(c, tc, HTTP_LUA_TYPE);
		if (p.m) {
			*kind = ARN_CFG_HF_LUA;
			*cfg = conv_lua(c, p);
		}
		conv_pop(c, m);
		return true;
	}
	if (arn_sv_eq(tn, HTTP_OAUTH2_TYPE)) {
		if (!feature(c, ARN_CONFIG_FEATURE_HTTP_L4, "envoy.filters.http.oauth2"))
			return true;
		size_t m = conv_push(c, "typed_config");
		struct pb p = conv_any(c, tc, HTTP_OAUTH2_TYPE);
		if (p.m) {
			*kind = ARN_CFG_HF_OAUTH2;
			*cfg = conv_oauth2(c, p);
		}
		conv_pop(c, m);
		return true;
	}
	if (arn_sv_eq(tn, HTTP_SS_TYPE)) {
		if (!feature(c, ARN_CONFIG_FEATURE_HTTP_L4, "envoy.filters.http.stateful_session"))
			return true;
		size_t m = conv_push(c, "typed_config");
		struct pb p = conv_any(c, tc, HTTP_SS_TYPE);
		if (p.m) {
			*kind = ARN_CFG_HF_STATEFUL_SESSION;
			*cfg = conv_stateful_session(c, p, false);
		}
		conv_pop(c, m);
		return true;
	}
	if (arn_sv_eq(tn, HTTP_FAULT_TYPE)) {
		if (!feature(c, ARN_CONFIG_FEATURE_HTTP_L4, "envoy.filters.http.fault"))
			return true;
		size_t m = conv_push(c, "typed_config");
		struct pb p = conv_any(c, tc, HTTP_FAULT_TYPE);
		if (p.m) {
			*kind = ARN_CFG_HF_FAULT;
			*cfg = conv_fault(c, p);
		}
		conv_pop(c, m);
		return true;
	}
	if (arn_sv_eq(tn, HTTP_JWT_TYPE)) {
		if (!feature(c, ARN_CONFIG_FEATURE_HTTP_L4, "envoy.filters.http.jwt_authn"))
			return true;
		size_t m = conv_push(c, "typed_config");
		struct pb p = conv_any(c, tc, HTTP_JWT_TYPE);
		if (p.m) {
			*kind = ARN_CFG_HF_JWT_AUTHN;
			*cfg = http_jwt_authn(c, p);
		}
		conv_pop(c, m);
		return true;
	}
	if (arn_sv_eq(tn, HTTP_CORS_TYPE)) {
		/* the filter has no configuration of its own: the policies
		 * are the route table's (arn_cfg_cors_policies) */
		if (!feature(c, ARN_CONFIG_FEATURE_HTTP_L4, "envoy.filters.http.cors"))
			return true;
		size_t m = conv_push(c, "typed_config");
		struct pb p = conv_any(c, tc, HTTP_CORS_TYPE);
		if (p.m) {
			conv_only(c, p, "");
			*kind = ARN_CFG_HF_CORS;
			*cfg = &conv_cors_filter_cfg;
		}
		conv_pop(c, m);
		return true;
	}
	if (arn_sv_eq(tn, HTTP_EXT_AUTHZ_TYPE)) {
		if (!feature(c, ARN_CONFIG_FEATURE_HTTP_L4, "envoy.filters.http.ext_authz"))
			return true;
		size_t m = conv_push(c, "typed_config");
		struct pb p = conv_any(c, tc, HTTP_EXT_AUTHZ_TYPE);
		if (p.m) {
			*kind = ARN_CFG_HF_EXT_AUTHZ;
			*cfg = ext_authz(c, p);
		}
		conv_pop(c, m);
		return true;
	}
	bool rbac = arn_sv_eq(tn, HTTP_RBAC_TYPE);
	if (!rbac && !arn_sv_eq(tn, HTTP_LRL_TYPE))
		return false;
	if (!feature(c, ARN_CONFIG_FEATURE_HTTP_L4,
		     rbac ? "envoy.filters.http.rbac" : "envoy.filters.http.local_ratelimit"))
		return true;
	size_t m = conv_push(c, "typed_config");
	struct pb p = conv_any(c, tc, rbac ? HTTP_RBAC_TYPE : HTTP_LRL_TYPE);
	if (p.m) {
		*kind = rbac ? ARN_CFG_HF_RBAC : ARN_CFG_HF_LOCAL_RATELIMIT;
		*cfg = rbac ? (const void *)http_rbac(c, p)
			    : (const void *)http_ratelimit(c, p, false);
	}
	conv_pop(c, m);
	return true;
}

/* A typed_per_filter_config value of type @p tn (@p any) into @p pf.
 * @return whether it is one Arion has (else reported, unless @p optional:
 * then the entry only turns the filter on, as Envoy's FilterConfig with
 * is_optional does for a type it lacks). */
static bool per_filter_typed(struct conv *c, upb_StringView tn, struct pb any,
			     struct arn_cfg_per_filter *pf, bool optional)
{
	bool ok = false;
	if (arn_sv_eq(tn, HTTP_RBAC_PER_ROUTE_TYPE)) {
		struct pb pr = conv_any(c, any, HTTP_RBAC_PER_ROUTE_TYPE);
		if (pr.m) {
			conv_only(c, pr, "rbac");
			struct arn_cfg_rbac_filter *f = NULL;
			struct pb r = pb_msg(pr, "rbac");
			if (r.m) {
				size_t m2 = conv_push(c, "rbac");
				f = http_rbac(c, r);
				conv_pop(c, m2);
			} else {
				/* no rbac: the filter is off on this route */
				f = CONV_NEW(c, struct arn_cfg_rbac_filter, 1);
				if (f)
					f->stat_prefix = f->shadow_stat_prefix = "";
			}
			pf->kind = ARN_CFG_PF_RBAC;
			pf->cfg = f;
			ok = true;
		}
	} else if (arn_sv_eq(tn, HTTP_LRL_TYPE)) {
		struct pb r = conv_any(c, any, HTTP_LRL_TYPE);
		if (r.m) {
			pf->kind = ARN_CFG_PF_LOCAL_RATELIMIT;
			pf->cfg = http_ratelimit(c, r, true);
			ok = true;
		}
	} else if (arn_sv_eq(tn, HTTP_JWT_PER_ROUTE_TYPE)) {
		struct pb r = conv_any(c, any, HTTP_JWT_PER_ROUTE_TYPE);
		if (r.m) {
			pf->kind = ARN_CFG_PF_JWT_AUTHN;
			pf->cfg = http_jwt_per_route(c, r);
			ok = true;
		}
	} else if (arn_sv_eq(tn, HTTP_CORS_POLICY_TYPE)) {
		struct pb r = conv_any(c, any, HTTP_CORS_POLICY_TYPE);
		if (r.m) {
			pf->kind = ARN_CFG_PF_CORS;
			pf->cfg = conv_cors(c, r, true);
			ok = true;
		}
	} else if (arn_sv_eq(tn, HTTP_EXT_AUTHZ_ROUTE_TYPE)) {
		struct pb r = conv_any(c, any, HTTP_EXT_AUTHZ_ROUTE_TYPE);
		if (r.m) {
			pf->kind = ARN_CFG_PF_EXT_AUTHZ;
			pf->cfg = ext_authz_route(c, r);
			ok = true;
		}
	} else if (arn_sv_eq(tn, HTTP_FAULT_TYPE)) {
		/* a route's HTTPFault replaces the filter's whole (Envoy) */
		struct pb r = conv_any(c, any, HTTP_FAULT_TYPE);
		if (r.m) {
			pf->kind = ARN_CFG_PF_FAULT;
			pf->cfg = conv_fault(c, r);
			ok = true;
		}
	} else if (arn_sv_eq(tn, HTTP_BASIC_AUTH_ROUTE_TYPE)) {
		/* the route's users replace the filter's (Envoy) */
		struct pb r = conv_any(c, any, HTTP_BASIC_AUTH_ROUTE_TYPE);
		if (r.m) {
			pf->kind = ARN_CFG_PF_BASIC_AUTH;
			pf->cfg = conv_basic_auth_route(c, r);
			ok = true;
		}
	} else if (arn_sv_eq(tn, HTTP_SS_ROUTE_TYPE)) {
		struct pb r = conv_any(c, any, HTTP_SS_ROUTE_TYPE);
		if (r.m) {
			pf->kind = ARN_CFG_PF_STATEFUL_SESSION;
			pf->cfg = conv_stateful_session(c, r, true);
			ok = true;
		}
	} else if (arn_sv_eq(tn, HTTP_CMP_ROUTE_TYPE)) {
		struct pb r = conv_any(c, any, HTTP_CMP_ROUTE_TYPE);
		if (r.m) {
			pf->kind = ARN_CFG_PF_COMPRESSOR;
			pf->cfg = conv_compressor_route(c, r);
			ok = true;
		}
	} else if (arn_sv_eq(tn, HTTP_CSRF_TYPE)) {
		/* the most specific level's policy replaces the filter's */
		struct pb r = conv_any(c, any, HTTP_CSRF_TYPE);
		if (r.m) {
			pf->kind = ARN_CFG_PF_CSRF;
			pf->cfg = conv_csrf(c, r);
			ok = true;
		}
	} else if (arn_sv_eq(tn, HTTP_API_KEY_ROUTE_TYPE)) {
		struct pb r = conv_any(c, any, HTTP_API_KEY_ROUTE_TYPE);
		if (r.m) {
			pf->kind = ARN_CFG_PF_API_KEY_AUTH;
			pf->cfg = conv_api_key_auth_route(c, r);
			ok = true;
		}
	} else if (arn_sv_eq(tn, HTTP_RLS_ROUTE_TYPE)) {
		struct pb r = conv_any(c, any, HTTP_RLS_ROUTE_TYPE);
		if (r.m) {
			pf->kind = ARN_CFG_PF_RATELIMIT;
			pf->cfg = conv_rls_route(c, r);
			ok = true;
		}
	} else if (arn_sv_eq(tn, HTTP_HM_ROUTE_TYPE)) {
		struct pb r = conv_any(c, any, HTTP_HM_ROUTE_TYPE);
		if (r.m) {
			pf->kind = ARN_CFG_PF_HEADER_MUTATION;
			pf->cfg = conv_header_mutation(c, r, true);
			ok = true;
		}
	} else if (arn_sv_eq(tn, HTTP_CRESP_TYPE)) {
		/* a matching level's policy before the filter's (Envoy) */
		struct pb r = conv_any(c, any, HTTP_CRESP_TYPE);
		if (r.m) {
			pf->kind = ARN_CFG_PF_CUSTOM_RESPONSE;
			pf->cfg = conv_custom_response(c, r);
			ok = true;
		}
	} else if (arn_sv_eq(tn, HTTP_BUFFER_ROUTE_TYPE)) {
		/* disabled: the filter off at this level (arn_cfg_filter_off);
		 * buffer: its settings instead of the filter's */
		struct pb r = conv_any(c, any, HTTP_BUFFER_ROUTE_TYPE);
		if (r.m) {
			pf->cfg = conv_buffer_route(c, r, &pf->kind);
			ok = true;
		}
	} else if (arn_sv_eq(tn, HTTP_EXT_PROC_ROUTE_TYPE)) {
		struct pb r = conv_any(c, any, HTTP_EXT_PROC_ROUTE_TYPE);
		if (r.m) {
			pf->kind = ARN_CFG_PF_EXT_PROC;
			pf->cfg = conv_ext_proc_route(c, r);
			ok = true;
		}
	} else if (arn_sv_eq(tn, HTTP_LUA_ROUTE_TYPE)) {
		/* disabled: the filter off at this level; name: a script of
		 * the filter's source_codes */
		struct pb r = conv_any(c, any, HTTP_LUA_ROUTE_TYPE);
		if (r.m) {
			pf->cfg = conv_lua_route(c, r, &pf->kind);
			ok = true;
		}
	} else if (optional) {
		pf->kind = ARN_CFG_PF_ENABLED;
		pf->cfg = NULL;
		ok = true;
	} else {
		conv_err(c, "",
			 "per-filter configuration of type '%.*s' is not supported by "
			 "Arion (RBACPerRoute, LocalRateLimit, CorsPolicy, HTTPFault, "
			 "ExtAuthzPerRoute, StatefulSessionPerRoute, BasicAuthPerRoute, "
			 "CompressorPerRoute, CsrfPolicy, ApiKeyAuthPerRoute, RateLimitPerRoute, "
			 "HeaderMutationPerRoute, CustomResponse, ExtProcPerRoute, LuaPerRoute, jwt_authn's PerRouteConfig and "
			 "route.v3.FilterConfig are)",
			 (int)tn.size, tn.data);
	}
	return ok;
}

/* envoy.config.route.v3.FilterConfig (Envoy's PerFilterConfigs): disabled
 * turns the filter off at this level; else its config, empty to turn the
 * filter on with its own configuration. */
static bool per_filter_config(struct conv *c, struct pb any, struct arn_cfg_per_filter *pf)
{
	struct pb fc = conv_any(c, any, ROUTE_FILTER_CONFIG_TYPE);
	if (!fc.m)
		return false;
	conv_only(c, fc, "config,is_optional,disabled");
	pf->cfg = NULL;
	if (pb_newer_bool(fc, "disabled")) {
		pf->kind = ARN_CFG_PF_DISABLED;
		return true;
	}
	if (!pb_has(fc, "config")) {
		/* Envoy's words */
		conv_err(c, "config",
			 "Empty route/virtual host per filter configuration for %s filter "
			 "(set config, or disabled: true)",
			 pf->name);
		return false;
	}
	struct pb inner = pb_msg(fc, "config");
	upb_StringView tn = arn_proto_any_type_name(inner.m);
	if (tn.size == 0) {
		pf->kind = ARN_CFG_PF_ENABLED;
		return true;
	}
	size_t m = conv_push(c, "config");
	bool ok = per_filter_typed(c, tn, inner, pf, pb_bool(fc, "is_optional"));
	conv_pop(c, m);
	return ok;
}

/* One typed_per_filter_config entry into @p pf. @return whether it is one. */
static bool per_filter_entry(struct conv *c, upb_StringView key, struct pb any,
			     struct arn_cfg_per_filter *pf)
{
	size_t m = conv_push(c, "typed_per_filter_config[%.*s]", (int)key.size, key.data);
	pf->name = conv_str(c, key);
	pf->name_len = key.size;
	upb_StringView tn = arn_proto_any_type_name(any.m);
	bool ok = arn_sv_eq(tn, ROUTE_FILTER_CONFIG_TYPE) ? per_filter_config(c, any, pf)
							  : per_filter_typed(c, tn, any, pf, false);
	conv_pop(c, m);
	return ok;
}

static bool per_filter_l4_on(struct conv *c, const char *where)
{
	if (features & ARN_CONFIG_FEATURE_HTTP_L4)
		return true;
	/* RBACPerRoute, LocalRateLimit and CorsPolicy are all it may carry */
	conv_err(c, where,
		 "not supported by Arion: the HTTP filters it configures (rbac, "
		 "local_ratelimit, cors) are not run by this Arion's data plane yet");
	return false;
}

static bool per_filter_count_ok(struct conv *c, size_t len)
{
	if (len <= ARN_CFG_MAX_PER_FILTER)
		return true;
	conv_err(c, "typed_per_filter_config",
		 "more than %d entries: Arion looks them up by a walk and keeps at most %d "
		 "(they name the connection manager's HTTP filters)",
		 ARN_CFG_MAX_PER_FILTER, ARN_CFG_MAX_PER_FILTER);
	return false;
}

void conv_per_filter(struct conv *c, struct pb p, struct arn_cfg_per_filter **out, size_t *n)
{
	const upb_FieldDef *fd = pb_field(p, "typed_per_filter_config");
	const upb_Map *map = fd ? upb_Message_Get(p.m, fd).map_val : NULL;
	size_t len = map ? upb_Map_Size(map) : 0;
	if (len == 0 || !per_filter_l4_on(c, "typed_per_filter_config") ||
	    !per_filter_count_ok(c, len))
		return;
	*out = CONV_NEW(c, struct arn_cfg_per_filter, len);
	if (!*out)
		return;
	const upb_MessageDef *ad = arn_proto_msgdef("google.protobuf.Any");
	size_t iter = kUpb_Map_Begin;
	while (upb_MapIterator_Next(map, &iter)) {
		upb_StringView key = upb_MapIterator_Key(map, iter).str_val;
		struct pb any = {upb_MapIterator_Value(map, iter).msg_val, ad};
		if (per_filter_entry(c, key, any, &(*out)[*n]))
			(*n)++;
	}
}

void conv_per_filter_newer(struct conv *c, struct pb p, struct arn_cfg_per_filter **out, size_t *n)
{
	struct pb_map_ent *ents;
	size_t len = pb_newer_map(c, p, "typed_per_filter_config", &ents, ARN_CFG_MAX_PER_FILTER);
	if (len == 0 || !per_filter_l4_on(c, "typed_per_filter_config") ||
	    !per_filter_count_ok(c, len))
		return;
	*out = CONV_NEW(c, struct arn_cfg_per_filter, len);
	for (size_t i = 0; *out && i < len; i++)
		if (per_filter_entry(c, ents[i].key, ents[i].value, &(*out)[*n]))
			(*n)++;
}
