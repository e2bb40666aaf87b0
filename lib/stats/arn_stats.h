/*
 * Statistics: counters, gauges and histograms with Envoy's names, written by
 * workers without locks or atomic read-modify-writes, summed by the admin.
 *
 * ## Model
 *
 * A *schema* is a fixed list of stats (declared once in an X-macro .def
 * file, CONVENTIONS.md habit 7). A *scope* is one instance of a schema under
 * a name: "cluster.web" + the cluster schema gives cluster.web.upstream_rq_total,
 * cluster.web.upstream_cx_active, ...  Scopes whose names come from
 * configuration (clusters, listeners, HCM stat_prefix) come and go with it.
 *
 * A scope owns one *slab* of 64-bit words per slot: slot 0 belongs to the
 * control lcore, slot 1 + w to worker w (w = 0 .. arn_stats_workers() - 1).
 * Slabs are cache-line aligned and padded, so two writers never share a
 * line; each slot has exactly one writer thread, which does plain
 * load/add/store (relaxed atomics, no lock prefix); the admin sums the
 * slots when it reads. So:
 *   - a counter is incremented by any number of slots, each its own;
 *   - a gauge is either *added to* by the slots that open/close things
 *     (upstream_cx_active: +1 on the worker that connects, -1 on the worker
 *     that closes; the sum is the value; one slot may go negative), or *set*
 *     by one writer only (membership_healthy, set by the control lcore in
 *     slot 0) - never both for the same gauge;
 *   - a histogram records durations in microseconds into fixed buckets
 *     (Envoy's default bucket bounds, in milliseconds: 0.5 1 5 10 25 50 100
 *     250 500 1000 2500 5000 10000 30000 60000 300000 600000 1800000
 *     3600000); /stats shows quantiles, /stats/prometheus shows buckets in ms.
 *
 * ## Names, tags and Prometheus
 *
 * A scope is named by a family and, optionally, one tag:
 *   family "cluster", tag "envoy_cluster_name" = "web" -> "cluster.web.<stat>"
 *   family "http", tag "envoy_http_conn_manager_prefix" = "ingress_http"
 *   family "listener", tag "envoy_listener_address" = "0.0.0.0_80"
 *   family "cluster_manager.cds", no tag -> "cluster_manager.cds.<stat>"
 * /stats prints the dotted name; /stats/prometheus prints
 * envoy_<family>_<stat>{<tag>="<value>"} with non-alphanumerics mangled to
 * '_' as Envoy does, and extracts Envoy's response-code tags from the stat
 * name (upstream_rq_2xx -> envoy_cluster_upstream_rq_xx{envoy_response_code_class="2"},
 * upstream_rq_503 -> envoy_cluster_upstream_rq{envoy_response_code="503"}).
 * Use ARN_STATS_TAG_* for Envoy's tag names.
 *
 * ## Threads and lifetime
 *
 * Creating, finding and releasing scopes, registering pulls and
 * arn_stats_set_workers() happen on the control lcore only. Workers only
 * touch slabs (the inline functions below). A scope is reference counted
 * by name: arn_stats_scope_get() for a name that exists returns the same
 * scope (Envoy's behaviour: two listeners with one stat_prefix share
 * http.<prefix>.*; a cluster updated by CDS keeps its counters as long as
 * the new generation gets the scope before the old one puts it). When the
 * last reference goes, the scope leaves /stats at once and its memory is
 * freed through the process's deferred-free queue (arn_defer_default(),
 * arn_defer.h) once workers can no longer hold it. A worker must not keep a slab pointer across
 * loop iterations unless it holds the scope through a reference-counted or RCU-protected object.
 *
 * ## Example
 *
 *   // cluster_stats.def
 *   ARN_STAT(COUNTER, upstream_rq_total, "requests sent upstream")
 *   ARN_STAT(GAUGE, upstream_cx_active, "open upstream connections")
 *   ARN_STAT(HISTOGRAM, upstream_rq_time, "request time, ms")
 *
 *   enum cluster_stat {
 *   #define ARN_STAT(kind, name, help) CL_##name,
 *   #include "cluster_stats.def"
 *   #undef ARN_STAT
 *   	CL__COUNT
 *   };
 *   static const struct arn_stat_def cluster_defs[] = {
 *   #define ARN_STAT(kind, name, help) ARN_STAT_DEF(kind, name, help),
 *   #include "cluster_stats.def"
 *   #undef ARN_STAT
 *   };
 *   static struct arn_stats_schema cluster_schema =
 *   	ARN_STATS_SCHEMA("cluster", cluster_defs);
 *
 *   // control lcore, when cluster "web" appears:
 *   struct arn_stats_scope *sc =
 *   	arn_stats_scope_get(&cluster_schema, ARN_STATS_TAG_CLUSTER, "web");
 *   // worker w, per request:
 *   arn_stats_inc(sc, ARN_STATS_SLOT_WORKER(w), CL_upstream_rq_total);
 *   arn_stats_hist_record(sc, ARN_STATS_SLOT_WORKER(w), CL_upstream_rq_time, usec);
 *   // control lcore, when the last generation using it is gone:
 *   arn_stats_scope_put(sc);
 *
 * Stats that are cheaper to read than to count (port counters from
 * rte_eth_stats_get, the xDS stream state, a per-worker struct a module
 * already keeps) are *pulled*: arn_stats_pull_register() runs a callback at
 * read time that emits name/value pairs.
 */
#ifndef ARN_STATS_H
#define ARN_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arn_sb.h"

enum arn_stat_kind {
	ARN_STAT_COUNTER = 0,
	ARN_STAT_GAUGE,
	ARN_STAT_HISTOGRAM,
};

/* Envoy's tag names (Prometheus label names) for the scopes Envoy has. */
#define ARN_STATS_TAG_CLUSTER "envoy_cluster_name"
#define ARN_STATS_TAG_HCM "envoy_http_conn_manager_prefix"
#define ARN_STATS_TAG_LISTENER "envoy_listener_address"
#define ARN_STATS_TAG_WORKER "envoy_worker_id"
#define ARN_STATS_TAG_ENDPOINT "envoy_endpoint_address" /* "198.18.0.10:8080" */

/* Histogram buckets: Envoy's defaults, upper bounds in ms; one more for +Inf. */
#define ARN_STATS_HIST_BUCKETS 19
/* Words a histogram takes in a slab: the buckets, +Inf, and the sum (us). */
#define ARN_STATS_HIST_WORDS (ARN_STATS_HIST_BUCKETS + 2)
/* Bucket upper bounds in microseconds (le="0.5" is 500 us). */
extern const uint64_t arn_stats_hist_bounds_us[ARN_STATS_HIST_BUCKETS];

/* Slots: 0 is the control lcore's, 1 + w is worker w's. */
#define ARN_STATS_SLOT_CONTROL 0u
#define ARN_STATS_SLOT_WORKER(w) (1u + (unsigned)(w))
/* Upper bound on workers (lib/net never runs more). */
#define ARN_STATS_MAX_WORKERS 128

/** One stat of a schema. Use ARN_STAT_DEF in .def expansions. */
struct arn_stat_def {
	const char *name; /* "upstream_rq_total": [a-z0-9_], "." between parts ("http2.rx_reset") */
	enum arn_stat_kind kind;
	const char *help; /* one line, shown by Prometheus # HELP */
};

#define ARN_STAT_DEF(kind, name, help)                                                             \
	{                                                                                          \
#name, ARN_STAT_##kind, help                                                       \
	}

/**
 * A fixed list of stats, usually static const data plus a layout that
 * arn_stats_scope_get() fills in on first use (so the struct is not const).
 */
struct arn_stats_schema {
	const char *family;		 /* "cluster", "http", "cluster_manager.cds" */
	const struct arn_stat_def *defs; /* owned by the caller, static */
	unsigned n_defs;
	/* Filled in by the registry on first use; do not touch. */
	bool laid_out;
	unsigned n_words;  /* words per slab before padding */
	unsigned *offsets; /* word offset of defs[i] in a slab */
};

#define ARN_STATS_SCHEMA(family_, defs_)                                                           \
	{                                                                                          \
		.family = (family_), .defs = (defs_),                                              \
		.n_defs = (unsigned)(sizeof(defs_) / sizeof((defs_)[0])),                          \
	}

/**
 * One named instance of a schema. The first fields are public so the
 * inline writers below can reach a slab with two loads; the rest is the
 * registry's.
 */
struct arn_stats_scope {
	const struct arn_stats_schema *schema;
	uint64_t *slabs; /* n_slots * stride words, 64-byte aligned */
	size_t stride;	 /* words per slot, a multiple of 8 */
	/* private */
	unsigned n_slots;
	unsigned refs;
	char *name;	/* "cluster.web" */
	char *tag_name; /* NULL when untagged */
	char *tag_value;
	char *family; /* arn_stats_scope_get_named()'s, or NULL: the schema's */
	/* arn_stats_scope_get_sub()'s second tag, or NULL */
	char *sub, *sub_tag_name, *sub_tag_value;
	struct arn_stats_scope *next;
};

/* ---- registry (control lcore) ------------------------------------------- */

/**
 * Find the scope for (@p schema's family, @p tag_value) and take a
 * reference, or create it with every stat at zero. @p tag_name NULL means
 * an untagged scope named just the family ("server", "cluster_manager.cds").
 * Creating lays out @p schema on first use.
 *
 * The same name with a different schema is an error (two modules fighting
 * over one prefix).
 *
 * @return the scope (release with arn_stats_scope_put), or NULL with the
 *   reason logged: out of memory, or the name is taken by another schema.
 *   Strings are copied.
 */
struct arn_stats_scope *arn_stats_scope_get(struct arn_stats_schema *schema, const char *tag_name,
					    const char *tag_value);

/**
 * arn_stats_scope_get() under a family of the caller's instead of the
 * schema's: for Envoy's stats whose leading name parts come from
 * configuration ("<stat_prefix>.rbac.allowed", "<prefix>.http_local_rate_limit.ok":
 * family "<stat_prefix>.rbac", untagged). @p family NULL: the schema's. The
 * scope's name is @p family (+ "." + @p tag_value); the same name with
 * another schema is refused as arn_stats_scope_get() does. Copied.
 */
struct arn_stats_scope *arn_stats_scope_get_named(struct arn_stats_schema *schema,
						  const char *family, const char *tag_name,
						  const char *tag_value);

/**
 * arn_stats_scope_get_named() for a sub-scope with a second tag, its
 * stats named as arn_stats_emit_sub() names its own: family "mcp", tag
 * arion_toolset = "tools", sub "backend", sub tag arion_mcp_backend = "b"
 * is the scope "mcp.tools.backend.b" (':' in the sub tag's value becomes
 * '_'), whose stat rq_total is mcp.tools.backend.b.rq_total in /stats and
 * envoy_mcp_backend_rq_total{arion_toolset="tools",arion_mcp_backend="b"}
 * in Prometheus: the configured names are tags, not parts of the metric's
 * name, as Envoy's tag extraction makes cluster.<name>.* into
 * envoy_cluster_*{envoy_cluster_name="<name>"}. A name taken by another
 * schema is refused as arn_stats_scope_get() does. Copied.
 */
struct arn_stats_scope *arn_stats_scope_get_sub(struct arn_stats_schema *schema, const char *family,
						const char *tag_name, const char *tag_value,
						const char *sub, const char *sub_tag_name,
						const char *sub_tag_value);

/** Take one more reference to @p sc. */
void arn_stats_scope_ref(struct arn_stats_scope *sc);

/**
 * Drop a reference. At zero the scope leaves /stats immediately and its
 * memory is freed through arn_defer_default() once workers are done with
 * it. NULL is a no-op.
 */
void arn_stats_scope_put(struct arn_stats_scope *sc);

/** The scope's dotted name ("cluster.web"); owned by the scope. */
const char *arn_stats_scope_name(const struct arn_stats_scope *sc);

/**
 * Set the number of worker slots. lib/net calls this once, after EAL init
 * and before launching any worker; scopes that exist are grown (their
 * values kept), later ones get the new size, and the watchers are told
 * (arn_stats_workers_watch).
 * @return 0, -EINVAL (n > ARN_STATS_MAX_WORKERS), -ENOMEM or a watcher's
 *   error (scopes unchanged).
 */
int arn_stats_set_workers(unsigned n);

/** Workers slots currently configured (0 until lib/net sets them). */
unsigned arn_stats_workers(void);

/**
 * Resize per-slot state of one's own to @p n workers (1 + n slots);
 * called by arn_stats_set_workers() before it changes the scopes, while no
 * worker runs. Return 0 or a negative errno (the change is then refused).
 */
typedef int (*arn_stats_workers_fn)(unsigned n, void *arg);

/**
 * Keep state per slot in step with the scopes' slots: lib/accesslog's
 * per-worker rings. @p arg is borrowed until unwatched.
 * @return 0, -EEXIST (this fn/arg pair watches), -ENOMEM.
 */
int arn_stats_workers_watch(arn_stats_workers_fn fn, void *arg);

/** @return 0, or -ENOENT. */
int arn_stats_workers_unwatch(arn_stats_workers_fn fn, void *arg);

/** Scopes alive now (in /stats), for tests and leak checks. */
size_t arn_stats_scope_count(void);

/* ---- writers (any lcore, each on its own slot) -------------------------- */

static inline uint64_t *arn_stats_slab(const struct arn_stats_scope *sc, unsigned slot)
{
	return sc->slabs + (size_t)slot * sc->stride;
}

static inline uint64_t *arn_stats_word_(const struct arn_stats_scope *sc, unsigned slot,
					unsigned stat)
{
	return arn_stats_slab(sc, slot) + sc->schema->offsets[stat];
}

/** Add @p n to counter @p stat in @p slot (only that slot's thread writes it). */
static inline void arn_stats_add(const struct arn_stats_scope *sc, unsigned slot, unsigned stat,
				 uint64_t n)
{
	uint64_t *p = arn_stats_word_(sc, slot, stat);
	__atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

static inline void arn_stats_inc(const struct arn_stats_scope *sc, unsigned slot, unsigned stat)
{
	arn_stats_add(sc, slot, stat, 1);
}

/** Add @p d (may be negative) to gauge @p stat's share in @p slot. */
static inline void arn_stats_gauge_add(const struct arn_stats_scope *sc, unsigned slot,
				       unsigned stat, int64_t d)
{
	arn_stats_add(sc, slot, stat, (uint64_t)d);
}

/** Set gauge @p stat; use only for gauges that one slot alone writes. */
static inline void arn_stats_gauge_set(const struct arn_stats_scope *sc, unsigned slot,
				       unsigned stat, int64_t v)
{
	__atomic_store_n(arn_stats_word_(sc, slot, stat), (uint64_t)v, __ATOMIC_RELAXED);
}

/**
 * Record one sample of @p usec microseconds into @p h, ARN_STATS_HIST_WORDS
 * words laid out as a slab's histogram: for a module that keeps histograms
 * of its own (one writer thread per array) and emits them when pulled
 * (arn_stats_hist_add_words, arn_stats_emit_sub_hist).
 */
static inline void arn_stats_hist_record_words(uint64_t *h, uint64_t usec)
{
	unsigned b = 0;
	while (b < ARN_STATS_HIST_BUCKETS && usec > arn_stats_hist_bounds_us[b])
		b++;
	__atomic_store_n(&h[b], __atomic_load_n(&h[b], __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
	uint64_t *sum = &h[ARN_STATS_HIST_BUCKETS + 1];
	__atomic_store_n(sum, __atomic_load_n(sum, __ATOMIC_RELAXED) + usec, __ATOMIC_RELAXED);
}

/** Record one sample of @p usec microseconds into histogram @p stat. */
static inline void arn_stats_hist_record(const struct arn_stats_scope *sc, unsigned slot,
					 unsigned stat, uint64_t usec)
{
	arn_stats_hist_record_words(arn_stats_word_(sc, slot, stat), usec);
}

/* ---- readers (control lcore) -------------------------------------------- */

/** Sum of counter @p stat over all slots. */
uint64_t arn_stats_counter_value(const struct arn_stats_scope *sc, unsigned stat);

/** Sum of gauge @p stat over all slots. */
int64_t arn_stats_gauge_value(const struct arn_stats_scope *sc, unsigned stat);

/** A histogram summed over slots: per-bucket (not cumulative) counts. */
struct arn_stats_hist {
	uint64_t buckets[ARN_STATS_HIST_BUCKETS + 1]; /* last: above the top bound */
	uint64_t count;
	uint64_t sum_us;
};

void arn_stats_hist_value(const struct arn_stats_scope *sc, unsigned stat,
			  struct arn_stats_hist *out);

/**
 * Add the ARN_STATS_HIST_WORDS words @p h (arn_stats_hist_record_words'
 * layout, read with relaxed loads) to @p out: a pull summing its workers'
 * histograms. @p out starts zeroed.
 */
void arn_stats_hist_add_words(struct arn_stats_hist *out, const uint64_t *h);

/* ---- pulled stats -------------------------------------------------------- */

struct arn_stats_emitter;

/**
 * Called at read time (control lcore) to emit values with
 * arn_stats_emit(). Must not block; reading rte_eth_stats or a module's
 * per-worker structs (summing them) is the intended use.
 */
typedef void (*arn_stats_pull_fn)(struct arn_stats_emitter *e, void *arg);

/**
 * Register a pull callback. @p arg is owned by the caller and must stay
 * valid until arn_stats_pull_unregister(fn, arg).
 * @return 0, -ENOMEM, -EEXIST (this fn/arg pair is registered).
 */
int arn_stats_pull_register(arn_stats_pull_fn fn, void *arg);

/** @return 0, or -ENOENT. */
int arn_stats_pull_unregister(arn_stats_pull_fn fn, void *arg);

/**
 * Emit one counter or gauge value named like a scope's:
 * family "dpdk.port", tag "arion_port" = "0", stat "rx_missed" gives
 * dpdk.port.0.rx_missed in /stats and arion_dpdk_port_rx_missed_total{arion_port="0"}
 * in Prometheus. @p tag_name NULL: untagged ("control_plane", "connected_state").
 * @p kind is ARN_STAT_COUNTER or ARN_STAT_GAUGE. Strings are copied.
 */
void arn_stats_emit(struct arn_stats_emitter *e, enum arn_stat_kind kind, const char *family,
		    const char *tag_name, const char *tag_value, const char *stat, int64_t value);

/**
 * Emit a stat of a sub-scope with a second tag, as Envoy's per-endpoint
 * stats: family "cluster", tag envoy_cluster_name = "web", sub "endpoint",
 * sub tag "envoy_endpoint_address" = "198.18.0.10:8080", stat "rq_total"
 * gives cluster.web.endpoint.198.18.0.10_8080.rq_total in /stats (':' in
 * the sub tag's value becomes '_') and
 * envoy_cluster_endpoint_rq_total{envoy_cluster_name="web",
 * envoy_endpoint_address="198.18.0.10:8080"} in Prometheus. Strings are copied.
 */
void arn_stats_emit_sub(struct arn_stats_emitter *e, enum arn_stat_kind kind, const char *family,
			const char *tag_name, const char *tag_value, const char *sub,
			const char *sub_tag_name, const char *sub_tag_value, const char *stat,
			int64_t value);

/**
 * arn_stats_emit_sub() for a histogram (@p h: summed over workers, as
 * arn_stats_hist_add_words makes it): /stats prints its quantiles and
 * /stats/prometheus its buckets, as for a scope's histogram. Copied.
 */
void arn_stats_emit_sub_hist(struct arn_stats_emitter *e, const char *family, const char *tag_name,
			     const char *tag_value, const char *sub, const char *sub_tag_name,
			     const char *sub_tag_value, const char *stat,
			     const struct arn_stats_hist *h);

#endif
