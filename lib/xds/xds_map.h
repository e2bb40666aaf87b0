/*
 * A string-keyed hash map for the client's per-type bookkeeping (names,
 * versions, pending interest changes). Control lcore only; keys and values
 * are copied. Sized for 10,000s of names per type.
 */
#ifndef ARN_XDS_MAP_H
#define ARN_XDS_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct xds_ent {
	char *name;    /* NULL: empty slot; XDS_TOMB: deleted */
	char *version; /* NULL: no version held */
	bool subscribed;
	uint64_t ttl_deadline_ms; /* Resource.ttl runs out then (client clock); 0: no TTL */
};

struct xds_map {
	struct xds_ent *slots;
	size_t cap;  /* power of two, or 0 */
	size_t n;    /* live entries */
	size_t used; /* live + tombstones */
};

extern char xds_tomb_[1];
#define XDS_TOMB (xds_tomb_)

static inline bool xds_ent_live(const struct xds_ent *e)
{
	return e->name != NULL && e->name != XDS_TOMB;
}

struct xds_ent *xds_map_get(const struct xds_map *m, const char *name);
/** Find or insert @p name (version NULL, not subscribed). NULL on ENOMEM. */
struct xds_ent *xds_map_put(struct xds_map *m, const char *name);
/** Replace the version (NULL clears it). @return 0 or -ENOMEM. */
int xds_ent_set_version(struct xds_ent *e, const char *version);
bool xds_map_del(struct xds_map *m, const char *name);
void xds_map_clear(struct xds_map *m);
void xds_map_free(struct xds_map *m);

/** Live entries sorted by name, as a malloc'd array of pointers (caller frees); NULL if empty. */
struct xds_ent **xds_map_sorted(const struct xds_map *m, size_t *n);

#define XDS_MAP_FOREACH(m, e)                                                                      \
	for (struct xds_ent *e = (m)->slots; e && e < (m)->slots + (m)->cap; e++)                  \
		if (xds_ent_live(e))

#endif
