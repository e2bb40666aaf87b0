/*
 * Arion's configuration store: the control lcore's side of the
 * configuration model (lib/config).
 *
 * Resources arrive as serialized Envoy protos (over delta-ADS, or from the
 * bootstrap's static_resources, which go through exactly the same code).
 * A batch of one type is decoded and converted into Arion's own immutable
 * objects (arn_config_model.h), checked, applied one by one, and the result
 * is published to workers as a new immutable *generation* through one
 * RCU-protected pointer.
 *
 * Threads: everything in this header except arn_config_gen(),
 * arn_config_gen_at() and the functions of arn_config_model.h runs on the control lcore only (one
 * thread); the store does no locking. Workers read generations only.
 *
 * Rules held here (../shared/spec/RULES.md): X10-X16, G5-G7, G10; X17's
 * "acknowledged internally" is arn_config_acked().
 */
#ifndef ARN_CONFIG_H
#define ARN_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arn_config_model.h"
#include "arn_envoy_types.h"
#include "arn_sb.h"

struct arn_bootstrap;
struct rte_rcu_qsbr;
struct arn_config_store;

/** Highest reader (worker) thread id + 1 that the store's RCU variable takes. */
#define ARN_CONFIG_MAX_READERS 128

/** Warming ends after this long when the config source sets no initial_fetch_timeout (G6). */
#define ARN_CONFIG_DEFAULT_INITIAL_FETCH_MS 15000

/** enum arn_cfg_type for a type URL (exact match), or -EINVAL. */
int arn_config_type_from_url(const char *url, size_t len);
/** The type URL of @p t (static string). */
const char *arn_config_type_url(enum arn_cfg_type t);
/** "Listener", "RouteConfiguration", ... (static string). */
const char *arn_config_type_name(enum arn_cfg_type t);

/* ---------------------------------------------------------------------------
 * Store lifecycle
 */

/**
 * Create the store. @p b (borrowed; must outlive the store, may be NULL in
 * tests) gives the initial_fetch_timeout defaults and whether an initial
 * xDS fetch is expected (dynamic_resources.ads_config). Static resources are
 * applied separately, by arn_config_apply_static(). The first generation is
 * empty.
 * @return the store (owned by the caller; arn_config_destroy()), or NULL
 *   (-ENOMEM; logged).
 */
struct arn_config_store *arn_config_create(const struct arn_bootstrap *b);

/**
 * Free the store, every generation and every object. Workers must be
 * stopped (or unregistered from arn_config_rcu()) and must hold no pins.
 */
void arn_config_destroy(struct arn_config_store *s);

/**
 * Apply the bootstrap's static_resources (secrets, then clusters, then
 * listeners) through arn_config_apply(), marking them static: xDS cannot
 * change or remove them (X16 error).
 * @return 0 if every batch was accepted with no error; -EINVAL otherwise,
 *   with one line per failed resource in @p err ("Cluster 'x': field.path:
 *   reason"); what was accepted stays applied. On success @p err may hold
 *   warnings, one line each starting "warning: " (without ADS: clusters
 *   that routes name and static_resources lacks), for the caller to show.
 */
int arn_config_apply_static(struct arn_config_store *s, const struct arn_bootstrap *b,
			    struct arn_sb *err);

/**
 * `arion --mode validate`: convert every static resource (in a throw-away
 * store, no RCU, no workers) and append one line per problem to @p err.
 * @return 0 if all are valid (@p err may then hold warnings, as
 *   arn_config_apply_static()), -EINVAL if not, -ENOMEM.
 */
int arn_config_validate_bootstrap(const struct arn_bootstrap *b, struct arn_sb *err);

/* ---------------------------------------------------------------------------
 * The xDS-facing API
 */

/** One added or updated resource of a batch (all pointers borrowed for the call). */
struct arn_config_resource_in {
	const char *name;    /* Resource.name; must equal the resource's own name */
	const char *version; /* Resource.version; may be NULL or "" */
	const char *bytes;   /* Resource.resource's Any value (the serialized resource) */
	size_t len;
};

/** One failing resource of a batch. */
struct arn_config_error {
	char *name;    /* resource name (owned by the result) */
	char *message; /* "Cluster 'api': connect_timeout: must be greater than 0s" */
	char *detail;  /* one "field.path<TAB>reason" line per problem, or NULL */
};

struct arn_config_result {
	/*
	 * false: X15, at least one resource failed decoding or conversion; the
	 * whole batch was refused and NOTHING changed (errors lists each failing
	 * resource). true: the batch was applied; errors, if any, are X16
	 * per-resource application failures; the other resources stay applied
	 * (G7: a failed resource never took effect).
	 */
	bool accepted;
	size_t n_errors;
	struct arn_config_error *errors; /* owned; arn_config_result_free() */
	/*
	 * X17: acknowledgement token for arn_config_acked(). 0 when nothing was
	 * published (nothing to wait for).
	 */
	uint64_t token;
	bool published; /* a new generation was published */
};

/** Flags for arn_config_apply(). */
enum {
	ARN_CONFIG_APPLY_STATIC = 1u << 0, /* static_resources: never changed by xDS */
	ARN_CONFIG_APPLY_DNS = 1u << 1,	   /* a DNS cluster's endpoints (dns.c): xDS cannot
					      change them */
};

/**
 * Apply a batch of one type: additions/updates @p res and removals
 * @p removed (names). The caller (the xDS client) has already refused
 * responses that name a resource twice (D2) or carry a wrong Any type (D3).
 *
 * Step 1 decodes and converts every resource; if any fails, the batch is
 * refused as a whole (result.accepted = false), nothing changes, and each
 * failure is listed (X15). Step 2 applies the resources one by one (updates,
 * then removals, in the order given); failures (a static resource, a listener
 * address already used, ...) are listed and the rest stay applied (X16).
 * Then dependent warming resources are re-evaluated, and a new generation is
 * published if anything workers see changed.
 *
 * @param type_url  one of the ARN_TYPE_URL_* (exact)
 * @param flags     0, or ARN_CONFIG_APPLY_STATIC
 * @param out       receives the result (always initialised when 0 is
 *   returned; free with arn_config_result_free())
 * @return 0 (look at @p out); -EINVAL for an unknown type URL; -ENOMEM
 *   (nothing changed).
 */
int arn_config_apply(struct arn_config_store *s, const char *type_url,
		     const struct arn_config_resource_in *res, size_t n_res,
		     const char *const *removed, size_t n_removed, unsigned flags,
		     struct arn_config_result *out);

void arn_config_result_free(struct arn_config_result *r);

struct arn_cfg_tls;
struct arn_cfg_secret;

/**
 * Builds (and drops) the TLS context a DownstreamTlsContext (@p server) or
 * UpstreamTlsContext @p t of @p owner (the listener or cluster) gives with
 * the Secrets named resolved (@p certs in cert_secrets' order, @p
 * validation, @p tickets: NULL when not named). @return 0, or a negative
 * errno with the reason in @p err (naming the certificate or field).
 */
typedef int (*arn_config_tls_check_fn)(const struct arn_cfg_tls *t, bool server, const void *owner,
				       const struct arn_cfg_secret *const *certs, size_t n_certs,
				       const struct arn_cfg_secret *validation,
				       const struct arn_cfg_secret *tickets, char *err,
				       size_t errlen);

/**
 * X16 for TLS: every store (of the process) checks, when it applies a
 * Listener, a Cluster or a Secret, that the TLS contexts it gives build
 * with @p fn (lib/tls's arn_tls_cfg_check; lib/config does not link
 * OpenSSL's context code), against the Secrets in force or being applied.
 * A context that would not build is an application failure of the
 * resource that carries it (a Secret's names the listener or cluster it
 * fails for), and the resource in force stays. A context whose Secrets are
 * not all there yet is not checked (the resource warms; the Secret is
 * checked when it comes). NULL: no check (unit tests of lib/config alone).
 * Call before arn_config_create().
 */
void arn_config_set_tls_check(arn_config_tls_check_fn fn);

/**
 * Register the function called on the control lcore with each generation
 * @p next about to be published, after it is complete and before the
 * single store that makes it visible to workers: what workers look up
 * beside the generation's objects (lib/http's TLS contexts) is built
 * there, so that no worker sees a generation without it. @p fn must not
 * apply to the store. One callback; NULL unregisters.
 */
void arn_config_set_prepare_cb(struct arn_config_store *s,
			       void (*fn)(void *ctx, const struct arn_cfg_gen *next), void *ctx);

/** What happened to a cluster's hosts, for Envoy's cluster.<name>.update_*. */
enum arn_config_cluster_update {
	ARN_CONFIG_UPDATE_ATTEMPT,    /* an EDS ClusterLoadAssignment received; a
				       * DNS cluster's resolution started */
	ARN_CONFIG_UPDATE_SUCCESS,    /* it was applied; the name resolved */
	ARN_CONFIG_UPDATE_REJECTED,   /* the ClusterLoadAssignment was refused (X15, X16) */
	ARN_CONFIG_UPDATE_EMPTY,      /* the ClusterLoadAssignment was removed */
	ARN_CONFIG_UPDATE_FAILURE,    /* the resolution failed (the last hosts stay) */
	ARN_CONFIG_UPDATE_NO_REBUILD, /* it resolved to the hosts the cluster had */
};

/**
 * Register the function told, on the control lcore, of each update of
 * cluster @p cluster's hosts (lib/http counts them in the cluster's
 * statistics). It must not apply to the store. One callback; NULL
 * unregisters.
 */
void arn_config_set_cluster_update_cb(struct arn_config_store *s,
				      void (*fn)(void *ctx, const char *cluster,
						 enum arn_config_cluster_update u),
				      void *ctx);

/**
 * The errors of @p r, one per line, for a NACK's error_detail (the caller
 * truncates, D9).
 */
void arn_config_result_format(const struct arn_config_result *r, struct arn_sb *out);

/**
 * X17: has every registered worker passed a quiescent state since the
 * publication that produced @p token? Non-blocking. True for token 0 and
 * when no worker is registered.
 */
bool arn_config_acked(struct arn_config_store *s, uint64_t token);

/**
 * X4, on-demand interest. A type URL's *referenced names* are the names of
 * that type that the current configuration (active and warming resources)
 * refers to: RouteConfiguration names from HCMs' rds, ClusterLoadAssignment
 * names from EDS clusters, Secret names from TLS contexts, Cluster names
 * from routes (and, with the MCP work, TDS names). The xDS client subscribes
 * by name to non-wildcard types using this set.
 *
 * arn_config_referenced() calls @p fn once per referenced name of
 * @p type_url (any string; unknown types have none) and returns how many.
 */
size_t arn_config_referenced(struct arn_config_store *s, const char *type_url,
			     void (*fn)(void *ctx, const char *name), void *ctx);

/**
 * Register the function called (on the control lcore, at the end of
 * arn_config_apply() / arn_config_poll()) with a type URL whose
 * referenced-name set changed. One callback; NULL unregisters.
 */
void arn_config_set_interest_cb(struct arn_config_store *s,
				void (*fn)(void *ctx, const char *type_url), void *ctx);

/**
 * The xDS client tells the store that the first response for a wildcard
 * type arrived and was processed (accepted or not), ending that type's
 * initial fetch (readiness). The initial fetch of a type also ends after
 * its initial_fetch_timeout (bootstrap dynamic_resources.{lds,cds}_config,
 * else 15 s) counted from arn_config_create().
 */
void arn_config_initial_fetch_done(struct arn_config_store *s, const char *type_url);

/**
 * /ready: static configuration applied (arn_config_apply_static() ran),
 * and, with ads_config, the initial fetch done as Envoy's init manager
 * sees it: the first Cluster and Listener responses arrived (or their
 * initial_fetch_timeout passed; calls for the other types are accepted and
 * change nothing, because EDS, RDS and SDS are waited for through the
 * warming of what references them), and nothing that started warming
 * before that is still warming. Latches: once true, stays true.
 */
bool arn_config_ready(struct arn_config_store *s);

/**
 * Control-lcore housekeeping, called from the main loop: ends warming whose
 * initial_fetch_timeout passed (publishing a new generation), frees
 * generations every worker is done with, frees objects whose last pin was
 * dropped by a worker. Cheap when there is nothing to do.
 */
void arn_config_poll(struct arn_config_store *s);

/**
 * Resolves @p host (a STRICT_DNS / LOGICAL_DNS cluster's hostname) for
 * dns_lookup_family @p family (Envoy's numbers) into at most @p max IPv4
 * addresses (host byte order) at @p out, and the answer's smallest TTL in
 * seconds at @p ttl_s (left 0 if unknown). Runs on a resolver thread,
 * never on the control lcore or a worker; may block.
 * @return the number of addresses the name has (only the first @p max are
 *   written; 0: none), or a negative errno (a failure: the last addresses
 *   stay).
 */
typedef int (*arn_config_dns_fn)(void *ctx, const char *host, int family, uint32_t *out, size_t max,
				 uint32_t *ttl_s);

/**
 * Replace c-ares (the default, NULL) for every store of the
 * process: unit tests resolve without the network. Set it while no
 * resolution runs.
 */
void arn_config_set_dns_resolver(arn_config_dns_fn fn, void *ctx);

/** Monotonic milliseconds clock; tests replace it. NULL restores the real one. */
void arn_config_set_clock(struct arn_config_store *s, uint64_t (*now_ms)(void *ctx), void *ctx);

/* ---------------------------------------------------------------------------
 * RCU: workers (lib/net) register on this variable with their thread id
 * (< ARN_CONFIG_MAX_READERS, e.g. the lcore id), go online, and call
 * rte_rcu_qsbr_quiescent() once per loop iteration, between packets. A
 * generation read through arn_config_gen() stays valid until the reader's
 * next quiescent state; anything kept longer must be pinned.
 */
struct rte_rcu_qsbr *arn_config_rcu(struct arn_config_store *s);

/** The current generation (worker or control). Never NULL after create. */
const struct arn_cfg_gen *arn_config_gen(const struct arn_config_store *s);

/**
 * Where the store keeps its current generation's pointer, valid for the
 * store's life: a worker that looks for a new generation in every loop
 * iteration keeps it and reads through arn_config_gen_at(), inline.
 */
struct arn_cfg_gen *const *arn_config_gen_slot(const struct arn_config_store *s);

/** arn_config_gen() through @p slot (arn_config_gen_slot()): the same
 * acquire load, without a call. */
static inline const struct arn_cfg_gen *arn_config_gen_at(struct arn_cfg_gen *const *slot)
{
	return __atomic_load_n(slot, __ATOMIC_ACQUIRE);
}

/**
 * The process-wide store that app/arion/app_config.c made (NULL before
 * start and in tests that do not set it), for subsystems that have no other
 * way to reach it.
 */
struct arn_config_store *arn_config_global(void);
void arn_config_set_global(struct arn_config_store *s);

/* ---------------------------------------------------------------------------
 * Admin (/config_dump, /clusters, /stats, /ready): control lcore only.
 */

enum arn_config_state {
	ARN_CONFIG_ACTIVE = 0, /* in the current generation */
	ARN_CONFIG_WARMING,    /* accepted, waiting for dependencies (takes no traffic) */
	ARN_CONFIG_ERROR_ONLY, /* never accepted: only its last error is known */
};

/** What arn_config_foreach() reports about one resource version. */
struct arn_config_resource_info {
	enum arn_cfg_type type;
	const char *name;
	enum arn_config_state state;
	const char *version;	       /* "" if none; for ERROR_ONLY the refused version */
	int64_t last_updated_ms;       /* wall clock (Unix ms) when this version was accepted */
	bool is_static;		       /* from static_resources */
	const char *last_error;	       /* last NACK / application error for this name, or NULL */
	const char *error_version;     /* the version that error was about */
	int64_t last_error_ms;	       /* wall clock (Unix ms) of that error */
	bool has_failed_configuration; /* the refused resource is kept: arn_config_failed_json() */
	const void *handle;	       /* for arn_config_resource_json() during the callback */
};

/**
 * Call @p fn for every resource of type @p t: each active one, each warming
 * one (a name can appear twice: an updated listener that is still warming
 * next to the one that serves), and each name known only by its last error.
 * Order: by name. The info is valid during the call only.
 * @return the number of calls.
 */
size_t arn_config_foreach(struct arn_config_store *s, enum arn_cfg_type t,
			  void (*fn)(void *ctx, const struct arn_config_resource_info *info),
			  void *ctx);

/**
 * Append the resource behind @p info (during the arn_config_foreach
 * callback) as JSON: the stored proto through arn_proto_to_json(). A
 * Secret's private key, password and session ticket keys show as
 * "[redacted]": the store never keeps them (they are redacted before the
 * bytes are stored).
 * @return 0, -ENOENT for ERROR_ONLY, -ENOMEM.
 */
int arn_config_resource_json(struct arn_config_store *s,
			     const struct arn_config_resource_info *info, struct arn_sb *out);

/**
 * Append the last refused version of the resource behind @p info (during
 * the arn_config_foreach callback) as JSON, redacted like
 * arn_config_resource_json(): what Envoy's error_state.failed_configuration
 * shows.
 * @return 0; -ENOENT (no refused bytes kept: none, a refused removal, or
 *   bytes that do not decode, which are not kept since nothing could show
 *   them or redact them); -ENOMEM.
 */
int arn_config_failed_json(struct arn_config_store *s, const struct arn_config_resource_info *info,
			   struct arn_sb *out);

/** Counters (X-macro list in arn_config_stats.def). */
struct arn_config_stats {
#define ARN_CONFIG_STAT(id, help) uint64_t id;
#include "arn_config_stats.def"
#undef ARN_CONFIG_STAT
};

/**
 * Current counters and gauges. @p out is filled; gauges (warming counts,
 * active counts, generation id) are computed on the call.
 */
void arn_config_get_stats(struct arn_config_store *s, struct arn_config_stats *out);

/**
 * Envoy's <subscription>.init_fetch_timeout for the family of @p type_url:
 * for CDS and LDS, 1 once their first response did not come within the
 * bootstrap config source's initial_fetch_timeout; for every family, the
 * warmings that ended at initial_fetch_timeout still missing one of its
 * resources (counted once per warming). 0 for a type the store lacks.
 */
uint64_t arn_config_init_fetch_timeouts(const struct arn_config_store *s, const char *type_url);

/** Call @p fn(name, help, value) for each counter, in .def order. */
void arn_config_stats_foreach(const struct arn_config_stats *st,
			      void (*fn)(void *ctx, const char *name, const char *help,
					 uint64_t value),
			      void *ctx);

#endif
