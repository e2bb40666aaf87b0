/*
 * Pulled row tables: per-worker counters whose names the workers learn at
 * run time (a gRPC call's method, an MCP tool a backend exposes), so no
 * scope can be made for them on the control lcore in advance.
 *
 * Each worker has a table of rows, allocated at start: a row is keyed by
 * two names (a, b; b may be empty) and holds def.n_counters counters and,
 * with def.hist, one histogram (arn_stats_hist_record_words' layout). The
 * rows are bounded: def.max_keyed rows with a non-empty b and def.max_bare
 * rows with an empty b; a row that does not fit is not made
 * (arn_stats_rows_find returns NULL) and the caller counts the lost sample
 * with arn_stats_rows_overflow. The control lcore pulls the tables into
 * /stats: <family>.<worker>.rows (gauge, rows in use) and
 * <family>.<worker>.rows_overflow (counter), then each (a, b) once, its
 * counters and histogram summed over the workers that have it, through
 * def.emit (which names the row's stats).
 *
 * Threads: a table has one writer, its worker; rows are added behind a
 * release store of the row count, and moved only by a sweep
 * (arn_stats_rows_sweep), inside a sequence count the pull checks around
 * its copy of the table (a seqlock), so the pull reads them without a
 * lock. A copy that a sweep overlapped a few times running is skipped for
 * that read.
 *
 * Ownership: the caller owns the struct arn_stats_rows (static storage,
 * its def filled in); the tables and the pull's copies belong to it,
 * made by arn_stats_rows_worker_init / arn_stats_rows_start and freed by
 * arn_stats_rows_worker_fini / arn_stats_rows_stop.
 */
#ifndef ARN_STATS_ROWS_H
#define ARN_STATS_ROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arn_stats.h"

/* Most counters a row holds. */
#define ARN_STATS_ROWS_COUNTERS 32

struct arn_stats_rows_table;

/**
 * Emit one row (control lcore, while pulled): names @p a and @p b
 * (NUL-terminated; @p bn is b's length, 0: none), @p sum its def.n_counters
 * counters and @p h its histogram (NULL without def.hist), summed over
 * workers.
 */
typedef void (*arn_stats_rows_emit_fn)(struct arn_stats_emitter *e, const char *a, const char *b,
				       size_t bn, const uint64_t *sum,
				       const struct arn_stats_hist *h, void *arg);

/** What a table holds and how its rows are emitted. */
struct arn_stats_rows_def {
	const char *family;  /* "grpc_stats": <family>.<worker>.rows{,_overflow} */
	unsigned n_counters; /* per row, at most ARN_STATS_ROWS_COUNTERS */
	bool hist;	     /* a histogram per row too */
	uint32_t max_keyed;  /* rows with a non-empty b, per worker */
	uint32_t max_bare;   /* rows with an empty b, per worker */
	size_t name_max;     /* longest a and b kept, bytes */
	arn_stats_rows_emit_fn emit;
	void *arg; /* emit's */
};

/** A set of per-worker tables and the pull that reads them. */
struct arn_stats_rows {
	struct arn_stats_rows_def def;
	/* the pull finds the tables here; set and cleared with the worker */
	struct arn_stats_rows_table *tables[ARN_STATS_MAX_WORKERS];
	/* the pull's copies of them (control lcore only; freed at stop) */
	struct arn_stats_rows_table *snap[ARN_STATS_MAX_WORKERS];
};

/**
 * Allocate and publish worker @p w's table of @p s (a worker without a
 * /stats slot, @p w >= ARN_STATS_MAX_WORKERS, gets none and counts
 * nothing). @return 0, -ENOMEM, or -EINVAL (def.n_counters is more than
 * ARN_STATS_ROWS_COUNTERS).
 */
int arn_stats_rows_worker_init(struct arn_stats_rows *s, unsigned w);
/** Unpublish and free worker @p w's table of @p s. */
void arn_stats_rows_worker_fini(struct arn_stats_rows *s, unsigned w);

/** Worker @p w's table of @p s, NULL if none. Worker @p w only. */
static inline struct arn_stats_rows_table *arn_stats_rows_get(const struct arn_stats_rows *s,
							      unsigned w)
{
	return w < ARN_STATS_MAX_WORKERS ? s->tables[w] : NULL;
}

/**
 * The counters of row (@p a, @p b) of @p t (@p an, @p bn bytes; @p bn 0:
 * bare), added when missing and there is room: def.n_counters words, then
 * the histogram's ARN_STATS_HIST_WORDS with def.hist. Write them with
 * arn_stats_rows_add / arn_stats_hist_record_words. @return NULL when the
 * row does not fit (its kind's rows are all used, or a name is longer than
 * def.name_max). Worker lcore, until the next sweep.
 */
uint64_t *arn_stats_rows_find(struct arn_stats_rows_table *t, const char *a, size_t an,
			      const char *b, size_t bn);

/** Add @p v to a row's counter @p c (its worker's alone: relaxed). */
static inline void arn_stats_rows_add(uint64_t *c, uint64_t v)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
}

/** Count one sample of @p t that found no row (rows_overflow). Worker lcore. */
void arn_stats_rows_overflow(struct arn_stats_rows_table *t);

/** Whether a sweep keeps row (@p a, @p b) (@p an, @p bn bytes). */
typedef bool (*arn_stats_rows_keep_fn)(const char *a, size_t an, const char *b, size_t bn,
				       void *arg);

/**
 * Free the rows of @p t (NULL: nothing) that @p keep says go, keeping the
 * others' order. Worker lcore.
 */
void arn_stats_rows_sweep(struct arn_stats_rows_table *t, arn_stats_rows_keep_fn keep, void *arg);

/** Register the /stats pull of @p s (control lcore). @return 0 or -ENOMEM. */
int arn_stats_rows_start(struct arn_stats_rows *s);
/** Unregister it and free its copies. */
void arn_stats_rows_stop(struct arn_stats_rows *s);

#endif
