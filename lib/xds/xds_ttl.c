/*
 * Resource TTLs, as Envoy keeps them (its TtlManager, source/common/config/
 * ttl.cc, driven by the delta subscription state):
 *
 * - A resource delivered with Resource.ttl is removed when the TTL passes
 *   without a refresh, as if the control plane had removed it: the sink
 *   removes it and the client stops reporting it held (D6). This protects
 *   against a control plane that went away: nothing else would ever take
 *   the resource back.
 * - Delivered without a ttl, the resource has no TTL (any earlier one is
 *   cleared).
 * - A heartbeat (a Resource without a body, naming the version held)
 *   refreshes the TTL, or clears it when it has no ttl itself, without
 *   touching the resource.
 * - TTLs run whatever the stream does: expiry is what is left when the
 *   control plane is unreachable.
 *
 * Like Envoy, each expiry is one configuration update of its type (Envoy's
 * update_attempt and update_success count it, update_time moves and the
 * version becomes that of an empty version_info); the client counts the
 * expiries and the resources they removed (arn_xds_type_status).
 */
#include <stdlib.h>
#include <string.h>

#include "google/protobuf/duration.upb.h"

#include "arn_log.h"
#include "xds_int.h"

/* google.protobuf.Duration's range: +-10000 years. */
#define XDS_TTL_RETRY_MS 1000u /* after the sink failed internally (-ENOMEM) */
#define DURATION_MAX_SECONDS 315576000000ll

int xds_ttl_ms(const struct google_protobuf_Duration *d, uint64_t *ms)
{
	int64_t s = google_protobuf_Duration_seconds(d);
	int32_t n = google_protobuf_Duration_nanos(d);
	if (s < 0 || n < 0 || n > 999999999 || s > DURATION_MAX_SECONDS)
		return -1;
	/* Envoy truncates to milliseconds (DurationUtil::durationToMilliseconds) */
	*ms = (uint64_t)s * 1000u + (uint64_t)n / 1000000u;
	return 0;
}

void xds_ttl_set(struct xds_type *t, struct xds_ent *e, uint64_t deadline_ms)
{
	e->ttl_deadline_ms = deadline_ms;
	if (deadline_ms != 0 && (t->ttl_next_ms == 0 || deadline_ms < t->ttl_next_ms))
		t->ttl_next_ms = deadline_ms;
}

uint64_t xds_ttl_next(const struct arn_xds_client *c)
{
	uint64_t next = 0;
	for (size_t i = 0; i < c->n_types; i++) {
		uint64_t n = c->types[i]->ttl_next_ms;
		if (n != 0 && (next == 0 || n < next))
			next = n;
	}
	return next;
}

/* Remove what expired in @p t: one update through the sink (Envoy:
 * onConfigUpdate({}, expired, "")). */
static void expire_type(struct arn_xds_client *c, struct xds_type *t, uint64_t now)
{
	/* Entries that expired, and the next deadline among the others.
	 * ttl_next_ms is only a lower bound (cleared TTLs leave it early). */
	size_t n = 0;
	struct xds_ent **v = xds_map_sorted(&t->names, &n);
	const char **names = calloc(n ? n : 1, sizeof(*names));
	if (n > 0 && (v == NULL || names == NULL)) {
		free(v);
		free(names);
		return; /* out of memory: tried again on the next poll */
	}
	size_t n_exp = 0;
	uint64_t next = 0;
	for (size_t k = 0; k < n; k++) {
		uint64_t d = v[k]->ttl_deadline_ms;
		if (d == 0)
			continue;
		if (d <= now && v[k]->version != NULL) {
			v[k]->ttl_deadline_ms = 0;
			names[n_exp++] = v[k]->name;
		} else if (d > now && (next == 0 || d < next)) {
			next = d;
		} else {
			v[k]->ttl_deadline_ms = 0; /* nothing held to expire */
		}
	}
	t->ttl_next_ms = next;
	if (n_exp == 0) {
		free(v);
		free(names);
		return;
	}
	struct arn_xds_errors errs = {0};
	int rc = 0;
	if (c->sink && c->sink->apply) {
		struct arn_xds_batch b = {
		    .type_url = t->type_url,
		    .def = t->def,
		    .system_version = "",
		    .removed = names,
		    .n_removed = n_exp,
		};
		uint64_t token = 0; /* no ACK waits for it: nothing to answer */
		rc = c->sink->apply(c->sink_ctx, &b, &errs, &token);
	}
	c->interest_dirty = true; /* what is left may reference fewer names (X4) */
	t->n_ttl_updates++;
	t->last_ttl_update_ms = now;
	struct arn_sb list = ARN_SB_INIT;
	size_t removed = 0;
	for (size_t k = 0; k < n_exp; k++) {
		bool failed = rc != 0;
		for (size_t i = 0; !failed && i < errs.n; i++)
			failed = errs.v[i].name && strcmp(errs.v[i].name, names[k]) == 0;
		if (failed) {
			/* Still held (D5), reported below. The sink refused this
			 * removal: as in Envoy, the TTL is spent. An internal
			 * failure (nothing applied) is tried again in a second. */
			struct xds_ent *e = xds_map_get(&t->names, names[k]);
			if (rc != 0 && e != NULL)
				xds_ttl_set(t, e, now + XDS_TTL_RETRY_MS);
			continue;
		}
		if (removed < 8)
			arn_sb_printf(&list, "%s'%s'", removed ? ", " : "", names[k]);
		removed++;
		struct xds_ent *e = xds_map_get(&t->names, names[k]);
		if (e == NULL)
			continue;
		if (e->subscribed)
			xds_ent_set_version(e, NULL); /* still wanted, nothing held (D6) */
		else
			xds_map_del(&t->names, names[k]); /* names[k] is freed here: last use */
	}
	t->n_ttl_expired += (uint32_t)removed;
	if (removed > 0)
		ARN_WARN(XDS,
			 "%s %s%s: TTL passed without a refresh from the control plane; removed as "
			 "if the control plane had removed %s",
			 t->short_name, arn_sb_cstr(&list), removed > 8 ? ", ..." : "",
			 removed == 1 ? "it" : "them");
	if (rc != 0 || errs.n > 0) {
		struct arn_sb why = ARN_SB_INIT;
		if (rc != 0)
			arn_sb_printf(&why, "%s", strerror(-rc));
		if (errs.n > 0) {
			if (rc != 0)
				arn_sb_puts(&why, ": ");
			xds_errors_format(&errs, &why);
		}
		ARN_WARN(XDS, "%s: removing resources whose TTL passed failed: %s", t->short_name,
			 arn_sb_cstr(&why));
		arn_sb_free(&why);
	}
	arn_sb_free(&list);
	xds_errors_free(&errs);
	free(v);
	free(names);
}

void xds_ttl_expire(struct arn_xds_client *c, uint64_t now)
{
	for (size_t i = 0; i < c->n_types; i++) {
		struct xds_type *t = c->types[i];
		if (t->ttl_next_ms != 0 && now >= t->ttl_next_ms)
			expire_type(c, t, now);
	}
}
