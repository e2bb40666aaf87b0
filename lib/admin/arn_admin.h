/*
 * The admin endpoint: Envoy's admin API (/ready, /stats, /config_dump,
 * /clusters, ...) served on the bootstrap's admin.address from the control
 * lcore over kernel sockets (docs/admin.md).
 *
 * lib/admin reads lib/stats (/stats), lib/accesslog (/reopen_logs) and the
 * configuration store (arn_admin_config.h); nothing on a worker calls it.
 * What else shows on the endpoint plugs in through registries that live
 * here, not in the server, so it can register before the server starts
 * and whether or not an admin address is configured:
 *
 *   - handlers:      arn_admin_handler_register()  any path of their own
 *   - /config_dump:  arn_admin_config_dump_register() one typed section each
 *   - /ready:        arn_admin_ready_register()    "is X ready" conditions
 *   - /clusters:     arn_admin_clusters_register() data; admin formats it
 *   - /listeners:    arn_admin_listeners_register()
 *
 * Everything in this header is for the control lcore only.
 *
 * Strings passed to register functions are copied; callback args are owned
 * by the caller and must stay valid until the matching unregister.
 */
#ifndef ARN_ADMIN_H
#define ARN_ADMIN_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "arn_sb.h"

/* ---- handlers ------------------------------------------------------------ */

enum {
	ARN_ADMIN_GET = 1u << 0,
	ARN_ADMIN_POST = 1u << 1,
};

/** A request as a handler sees it. All pointers are owned by the server. */
struct arn_admin_request {
	const char *method; /* "GET", "POST", "HEAD" (served as GET) */
	const char *path;   /* decoded path, no query: "/stats" */
	const char *query;  /* raw query after '?', "" if none */
	const char *body;   /* request body (POST), may be NULL; body_len bytes */
	size_t body_len;
};

/** What a handler fills in. The server sets status 200, text/plain first. */
struct arn_admin_response {
	int status;
	const char *content_type; /* static string */
	struct arn_sb body;	  /* append here; the server frees it */
};

/**
 * Value of query parameter @p key, percent-decoded ('+' is a space), copied
 * into @p buf (NUL-terminated, truncated to @p cap - 1).
 * @return @p buf, or NULL if @p key is absent. A key given without '=' has
 *   the value "".
 */
const char *arn_admin_query(const struct arn_admin_request *req, const char *key, char *buf,
			    size_t cap);

/**
 * Like arn_admin_query, for a value that must be used whole or not at all
 * (a cut /stats filter or /config_dump mask would select something else).
 * @return the decoded length, with the value in @p buf; -ENOENT (@p key
 *   absent); -E2BIG (the value needs more than @p cap - 1 bytes); -EINVAL
 *   (it decodes to a NUL, which would cut it as well). @p buf is only
 *   meaningful when the return is >= 0.
 */
ssize_t arn_admin_query_whole(const struct arn_admin_request *req, const char *key, char *buf,
			      size_t cap);

/**
 * Handle one request (control lcore). Must not block; build the whole body
 * in resp->body. Return nothing: set resp->status (and content_type).
 */
typedef void (*arn_admin_handler_fn)(const struct arn_admin_request *req,
				     struct arn_admin_response *resp, void *arg);

/**
 * Serve @p path ("/foo", exact match, no query) for the @p methods mask
 * (ARN_ADMIN_GET | ARN_ADMIN_POST). A method outside the mask gets 405 with
 * the allowed ones named: state-changing handlers must be POST only.
 * @p help is the one-line text on the endpoint list.
 * @return 0; -EEXIST (path taken, including the built-in ones); -EINVAL
 *   (path not starting with '/', or no method); -ENOMEM.
 */
int arn_admin_handler_register(const char *path, unsigned methods, const char *help,
			       arn_admin_handler_fn fn, void *arg);

/** @return 0, or -ENOENT. */
int arn_admin_handler_unregister(const char *path);

/* ---- /config_dump -------------------------------------------------------- */

/*
 * /config_dump returns {"configs": [section, ...]}, Envoy's
 * envoy.admin.v3.ConfigDump in proto3 JSON with proto field names. Each
 * section is one JSON object whose "@type" names its message, in Envoy's
 * order: BootstrapConfigDump (lib/admin itself, from the bootstrap, private
 * keys redacted), ClustersConfigDump, EndpointsConfigDump (only with
 * ?include_eds, as Envoy), ListenersConfigDump, RoutesConfigDump,
 * SecretsConfigDump, then anything else in registration order.
 *
 * A provider appends exactly one JSON object, for example
 *
 *   {"@type":"type.googleapis.com/envoy.admin.v3.ClustersConfigDump",
 *    "version_info":"7",
 *    "static_clusters":[{"cluster":{"@type":"type.googleapis.com/envoy.config.cluster.v3.Cluster",...},
 *                        "last_updated":"2026-01-01T00:00:00.000Z"}],
 *    "dynamic_active_clusters":[{"version_info":"7","cluster":{...},"last_updated":"..."}],
 *    "dynamic_warming_clusters":[...]}
 *
 * including, per resource, "error_state": {"failed_configuration": {...},
 * "last_update_attempt": "...", "details": "the NACK's error"} when the last
 * update of that resource was rejected (Envoy's UpdateFailureState), and the
 * resource itself (arn_proto_to_json() of the decoded message, inside an Any
 * with "@type"). arn_admin_dump_time() formats timestamps.
 *
 * SecretsConfigDump providers must redact secrets themselves
 * (arn_admin_redact_json() does it on JSON text); the admin redacts the
 * assembled document once more as a safety net.
 *
 * The admin implements ?resource=<field> (each element of that repeated
 * field across sections, each with its "@type") and ?mask=<paths> (a
 * FieldMask: comma-separated dotted field paths, applied to each section, or
 * to each resource with ?resource=) on the assembled JSON.
 */

/**
 * Append one section (a JSON object) to @p out.
 * @return 0, or a negative errno: the section is then left out of the
 *   dump (whatever it appended is discarded) and the error logged.
 */
typedef int (*arn_admin_config_dump_fn)(struct arn_sb *out, void *arg);

/**
 * @p type_name is the section's full message name without the URL prefix
 * ("envoy.admin.v3.ClustersConfigDump"); it decides the order and
 * ?include_eds.
 * @return 0; -EEXIST (a provider for that type is registered); -ENOMEM.
 */
int arn_admin_config_dump_register(const char *type_name, arn_admin_config_dump_fn fn, void *arg);

/** @return 0, or -ENOENT. */
int arn_admin_config_dump_unregister(const char *type_name);

/** Append @p unix_ms as a JSON string "2026-01-01T00:00:00.000Z" (Timestamp). */
void arn_admin_dump_time(struct arn_sb *out, int64_t unix_ms);

/**
 * Replace the values of secret-bearing fields in JSON text (private_key,
 * password, and every DataSource under them: inline_bytes, inline_string,
 * ...) with "[redacted]", as Envoy's config dump does.
 * @return 0, -EINVAL (not JSON; @p out unchanged), -ENOMEM.
 */
int arn_admin_redact_json(const char *json, size_t len, struct arn_sb *out);

/* ---- /ready and health -------------------------------------------------- */

/**
 * A readiness condition: return true when ready; when not, append a short
 * reason to @p why ("waiting for CDS", "2 listeners warming").
 */
typedef bool (*arn_admin_ready_fn)(struct arn_sb *why, void *arg);

/**
 * Add a condition. /ready is 200 "LIVE" when every condition holds and
 * /healthcheck/fail is not in force; 503 "PRE_INITIALIZING" until the admin
 * started, "INITIALIZING" while a condition fails, "DRAINING" after
 * /healthcheck/fail. The reasons are in /server_info and on the 503 body.
 * @return 0; -EEXIST (@p name is taken); -ENOMEM.
 */
int arn_admin_ready_register(const char *name, arn_admin_ready_fn fn, void *arg);

/** @return 0, or -ENOENT. */
int arn_admin_ready_unregister(const char *name);

/**
 * True after POST /healthcheck/fail (until /healthcheck/ok): /ready says
 * DRAINING. The data plane learns it from the application
 * (arn_admin_options.healthcheck_changed), not from here.
 */
bool arn_admin_healthcheck_failed(void);

/** Set by the admin's handlers (and tests); tells no one else. */
void arn_admin_set_healthcheck_failed(bool failed);

/** Envoy's server states, as /server_info and the server.state gauge report them. */
enum arn_admin_state {
	ARN_ADMIN_STATE_LIVE = 0,
	ARN_ADMIN_STATE_DRAINING,
	ARN_ADMIN_STATE_PRE_INITIALIZING,
	ARN_ADMIN_STATE_INITIALIZING,
};

/**
 * The state now, from the conditions and the health-check flag; appends
 * the reasons of failing conditions to @p why if not NULL.
 */
enum arn_admin_state arn_admin_state(struct arn_sb *why);

const char *arn_admin_state_name(enum arn_admin_state s);

/* ---- /clusters and /listeners ------------------------------------------- */

/*
 * lib/config owns the cluster and listener model; the admin owns the output
 * (Envoy's text form "cluster::host::stat::value" and ?format=json, the
 * envoy.admin.v3.Clusters / Listeners messages). A provider walks its model
 * and calls arn_admin_clusters_add_cluster() then arn_admin_clusters_add_host()
 * for each host of that cluster.
 */
struct arn_admin_clusters;

struct arn_admin_cluster_info {
	const char *name;
	const char *observability_name; /* NULL: name */
	bool added_via_api;
	/* Circuit breaker thresholds (default priority); 0: Envoy's default. */
	uint32_t max_connections, max_pending_requests, max_requests, max_retries;
};

struct arn_admin_host_info {
	const char *address; /* "198.18.0.10" */
	uint16_t port;
	const char *hostname; /* "" if none */
	uint32_t weight;
	uint32_t priority;
	const char *region, *zone, *sub_zone; /* NULL: "" */
	/* Envoy's health_flags text: "healthy", or "/"-joined flags such as
	 * "/failed_active_hc/failed_eds_health"; NULL: "healthy". */
	const char *health_flags;
	/* envoy.config.core.v3.HealthStatus name: "HEALTHY", "UNHEALTHY", "DRAINING", ... */
	const char *eds_health_status;
	uint64_t cx_total, cx_connect_fail, rq_total, rq_error, rq_success, rq_timeout;
	uint64_t cx_active, rq_active; /* gauges */
};

typedef void (*arn_admin_clusters_fn)(struct arn_admin_clusters *out, void *arg);

/** @return 0; -EEXIST (fn/arg registered); -ENOMEM. */
int arn_admin_clusters_register(arn_admin_clusters_fn fn, void *arg);
int arn_admin_clusters_unregister(arn_admin_clusters_fn fn, void *arg);

void arn_admin_clusters_add_cluster(struct arn_admin_clusters *out,
				    const struct arn_admin_cluster_info *c);
/** A host of the cluster added last. */
void arn_admin_clusters_add_host(struct arn_admin_clusters *out,
				 const struct arn_admin_host_info *h);

struct arn_admin_listeners;

struct arn_admin_listener_info {
	const char *name;
	const char *address; /* "0.0.0.0" */
	uint16_t port;
};

typedef void (*arn_admin_listeners_fn)(struct arn_admin_listeners *out, void *arg);

int arn_admin_listeners_register(arn_admin_listeners_fn fn, void *arg);
int arn_admin_listeners_unregister(arn_admin_listeners_fn fn, void *arg);

void arn_admin_listeners_add(struct arn_admin_listeners *out,
			     const struct arn_admin_listener_info *l);

/* ---- the server (app/arion/app_admin.c) ---------------------------------- */

struct arn_admin;
struct arn_bootstrap;

/** What the server needs from the process. Pointers are borrowed. */
struct arn_admin_options {
	const struct arn_bootstrap *bootstrap; /* admin address, node, config_dump */
	const char *address;		       /* overrides bootstrap (tests); NULL: bootstrap's */
	int port;			       /* -1: bootstrap's; 0: any free port */
	bool allow_non_loopback;	       /* or ARION_ADMIN_ALLOW_REMOTE=1 */
	int argc;			       /* command line for /server_info */
	char **argv;
	volatile sig_atomic_t *stop; /* set to 1 by POST /quitquitquit; may be NULL */
	/* POST /healthcheck/fail and /healthcheck/ok call this (control lcore)
	 * after changing the state, so the application can tell the data
	 * plane, which drains and fails its health_check filters. May be NULL. */
	void (*healthcheck_changed)(bool failed, void *arg);
	void *healthcheck_arg;
};

/**
 * Bind and listen (non-blocking). Refuses an address that is not loopback
 * unless allowed (the admin endpoint can stop the process and shows the
 * whole configuration).
 * @return the server, or NULL with the reason logged.
 */
struct arn_admin *arn_admin_start(const struct arn_admin_options *opt);

/** The port actually bound (useful with port 0). */
uint16_t arn_admin_port(const struct arn_admin *a);

/**
 * Accept, read, answer and write whatever is ready without blocking. Call
 * every few milliseconds. NULL is a no-op.
 */
void arn_admin_poll(struct arn_admin *a);

/** Close every socket and free @p a. NULL is a no-op. */
void arn_admin_stop(struct arn_admin *a);

#endif
