/*
 * A persistent hash array mapped trie (HAMT) from names to refcounted
 * model objects: how generations share their unchanged parts.
 *
 * Why a HAMT: a generation must be immutable once published (workers read
 * it without locks) and the next one must not copy what did not change.
 * A hash table of pointers copied per generation costs O(total) per change
 * (10,000 pointer copies and refcount increments to change one cluster);
 * a HAMT costs O(log32 n): an update copies the path from the root to the
 * changed slot (3-4 nodes of at most 32 slots for 10,000 names) and shares
 * every other node with the previous generation. Lookups are a hash and at
 * most a few pointer hops plus one name comparison, and never allocate.
 *
 * Nodes are refcounted by the control lcore only (plain integers): a node
 * is freed when no generation (and no node of one) refers to it any more,
 * which only happens after RCU told us no worker can still be reading it.
 * Objects are refcounted atomically (workers pin them).
 *
 * Batches: a node whose reference count is 1 is reachable only through
 * the caller's own (unpublished) root, because every published or retired
 * generation holds its own reference on its root and each node holds one
 * on its children. Such nodes are changed in place ("make mutable" copies
 * only shared nodes), so a batch of 10,000 resources builds the trie in
 * O(n) rather than copying paths 10,000 times.
 */
#ifndef ARN_HAMT_H
#define ARN_HAMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arn_config_model.h"

struct arn_hamt;

/** Look @p name up under @p root (NULL: empty). Worker-safe, no allocation. */
struct arn_cfg_obj *arn_hamt_get(const struct arn_hamt *root, const char *name, size_t len,
				 uint64_t hash);

/**
 * Insert or replace @p o (keyed by its name/hash) in the trie whose root
 * reference *@p root the caller owns. That reference is consumed and
 * *@p root receives the new root (one reference, the caller's); shared
 * nodes are copied, others changed in place. The trie takes its own
 * reference on @p o. @p unref drops an object reference.
 * @return 0 or -ENOMEM (then the trie means what it meant before).
 */
int arn_hamt_set(struct arn_hamt **root, struct arn_cfg_obj *o,
		 void (*unref)(struct arn_cfg_obj *));

/** Remove @p name, like arn_hamt_set(). @return 0, -ENOENT (absent), -ENOMEM. */
int arn_hamt_del(struct arn_hamt **root, const char *name, size_t len, uint64_t hash,
		 void (*unref)(struct arn_cfg_obj *));

/** Take a reference on a root (NULL is fine). */
void arn_hamt_ref(struct arn_hamt *root);

/** Drop a reference on a root, freeing what nothing else uses. */
void arn_hamt_unref(struct arn_hamt *root, void (*unref)(struct arn_cfg_obj *));

/** Call @p fn for each object (hash order). */
void arn_hamt_foreach(const struct arn_hamt *root, void (*fn)(void *ctx, struct arn_cfg_obj *o),
		      void *ctx);

/**
 * What changed from trie @p a to trie @p b (either NULL: empty): @p fn is
 * called once per name whose object differs, with the object in @p a
 * (NULL: added) and in @p b (NULL: removed), in no particular order.
 * Subtries the two share (the same node: what path copying left alone)
 * are skipped without being read, so one change among n costs a few
 * nodes, not n objects. Neither trie may change during the call.
 * @return the nodes read (for tests: the work done).
 */
size_t arn_hamt_diff(const struct arn_hamt *a, const struct arn_hamt *b,
		     void (*fn)(void *ctx, struct arn_cfg_obj *was, struct arn_cfg_obj *now),
		     void *ctx);

/** Nodes and bytes reachable from @p root (for the benchmark and tests). */
void arn_hamt_stats(const struct arn_hamt *root, size_t *nodes, size_t *bytes);

#endif
