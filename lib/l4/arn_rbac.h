/*
 * Envoy's RBAC engine over the configuration model (arn_config_l4.h):
 * pure functions of a policy set and a small description of the
 * connection or request. No allocation, no locks, no I/O: the network and
 * HTTP RBAC filters call it on workers, the fuzzer with fuzzed policies.
 *
 * Semantics (Envoy's RoleBasedAccessControlEngineImpl):
 *   - a policy matches when any of its permissions AND any of its
 *     principals match;
 *   - ALLOW: allowed iff some policy matches; DENY: allowed iff none
 *     does; LOG: always allowed, and a match asks for an access log;
 *   - the effective policy is the first matching one in name order (the
 *     model keeps policies sorted as Envoy's std::map does);
 *   - no rules (the filter's `rules` absent): allowed, nothing matched.
 */
#ifndef ARN_RBAC_H
#define ARN_RBAC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arn_config_model.h"

/** A string of the input (not NUL-terminated). */
struct arn_rbac_str {
	const char *s;
	size_t len;
};

/**
 * Look up request header @p name (lower case, or a pseudo-header: ":path",
 * ":method", ":authority"). Repeated headers are joined with ',' as Envoy
 * joins them for RBAC. The value may be written to @p buf (@p cap bytes)
 * or point into the callee's storage; it must stay valid until the next
 * call. @p buf NULL asks for the first occurrence only, never joined (as
 * Envoy's request_headers rate limit action reads a header).
 * @return 1 and *@p v / *@p vlen when present, 0 when absent, -ENOSPC when
 *   the joined value does not fit in @p cap (the evaluator then denies:
 *   a truncated value could dodge a DENY rule).
 */
typedef int (*arn_rbac_header_fn)(void *ctx, const char *name, size_t name_len, char *buf,
				  size_t cap, const char **v, size_t *vlen);

/**
 * What RBAC rules may look at. Addresses are IPv4 in host order. Every
 * pointer is borrowed for the duration of arn_rbac_eval().
 */
struct arn_rbac_input {
	uint32_t src_addr;	 /* the connection's remote: source_ip (a PROXY header's) */
	uint32_t direct_addr;	 /* direct_remote_ip: the TCP peer; 0: src_addr */
	uint32_t remote_addr;	 /* remote_ip: the client the HCM resolved (XFF); the
				    peer on the network filter */
	uint32_t dst_addr;	 /* the local address: destination_ip */
	uint16_t dst_port;	 /* the local port: destination_port(_range) */
	struct arn_rbac_str sni; /* requested_server_name: {NULL, 0} without SNI */
	/* HTTP only: NULL on the network filter (url_path and header rules
	 * never match then; lib/config refuses them on the network filter) */
	const char *path; /* :path as received, query and fragment included */
	size_t path_len;
	arn_rbac_header_fn header; /* NULL: no headers */
	void *header_ctx;
	/*
	 * authenticated: Envoy's AuthenticatedMatcher. Without TLS nothing
	 * matches; on a TLS connection a principal without principal_name
	 * matches (even without a client certificate, as in Envoy); with
	 * principal_name, the peer's URI SANs are tried, then its DNS SANs,
	 * then its subject (RFC 2253, as Envoy prints it).
	 */
	bool tls;
	const struct arn_rbac_str *uri_sans;
	size_t n_uri_sans;
	const struct arn_rbac_str *dns_sans;
	size_t n_dns_sans;
	struct arn_rbac_str subject;
	/* the peer had more names than the caller could pass: principal_name
	 * rules set the error (denied) rather than decide on a part */
	bool peer_names_truncated;
	/* scratch for joined header values, >= the largest request head the
	 * listener accepts so that nothing is truncated; NULL: a 4 KiB one on
	 * the stack */
	char *scratch;
	size_t scratch_len;
};

/** The outcome of one set of rules. */
struct arn_rbac_decision {
	bool allowed;
	/* the effective policy: the first match in name order, or NULL */
	const struct arn_cfg_rbac_policy *policy;
	bool log;   /* LOG action and a policy matched: write an access log */
	bool error; /* a header did not fit in the scratch: denied (but for LOG) */
};

/**
 * Evaluate @p rules (NULL: no rules, allowed) against @p in.
 * @return the decision (also in *@p out): true if allowed.
 */
bool arn_rbac_eval(const struct arn_cfg_rbac_rules *rules, const struct arn_rbac_input *in,
		   struct arn_rbac_decision *out);

/** One RBAC filter's outcome: its enforcing rules and its shadow rules. */
struct arn_rbac_result {
	bool ran;	 /* enforcing rules were evaluated (count allowed/denied) */
	bool shadow_ran; /* shadow rules were evaluated (count shadow_*) */
	struct arn_rbac_decision enforced; /* allowed when !ran */
	struct arn_rbac_decision shadow;   /* only counted and logged, never enforced */
};

/**
 * Run RBAC filter @p f, or the route's RBACPerRoute @p per_route when not
 * NULL (it replaces both rule sets, as in Envoy; one without rules turns
 * the filter off for the route).
 * @return whether the connection or request may go on (also in
 *   out->enforced.allowed).
 */
bool arn_rbac_filter_eval(const struct arn_cfg_rbac_filter *f,
			  const struct arn_cfg_rbac_filter *per_route,
			  const struct arn_rbac_input *in, struct arn_rbac_result *out);

/**
 * Whether one permission or principal @p r matches @p in (exposed for the
 * tests). *@p error is set when a header lookup overflowed.
 */
bool arn_rbac_rule_match(const struct arn_cfg_rbac_rule *r, const struct arn_rbac_input *in,
			 bool *error);

/**
 * Envoy's %RESPONSE_CODE_DETAILS% for a denial by @p d:
 * "rbac_access_denied_matched_policy[<name>]", or "[none]" when no policy
 * matched (an ALLOW set that nothing matched). Writes at most @p cap bytes
 * including the NUL.
 * @return the length it would have (as snprintf).
 */
size_t arn_rbac_details(const struct arn_rbac_decision *d, char *buf, size_t cap);

/**
 * An arn_rbac_header_fn over a route-matching request (@p ctx: a const
 * struct arn_cfg_request *): its headers, and ":method", ":authority",
 * ":path" from the request line.
 */
int arn_rbac_request_header(void *ctx, const char *name, size_t name_len, char *buf, size_t cap,
			    const char **v, size_t *vlen);

#endif
