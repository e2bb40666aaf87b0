/*
 * One DeltaDiscoveryResponse: check it (D2, D3, D4, D10), decode every
 * resource, refuse the whole response on any failure before anything is
 * applied (X15), otherwise hand it to the sink, which applies what it can
 * (X16), commit what it applied, resource by resource (D5), and queue the
 * answer: an ACK waiting for the sink's internal acknowledgement (X17), or
 * a NACK naming each failed resource (G8).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envoy/service/discovery/v3/discovery.upb.h"
#include "google/protobuf/any.upb.h"

#include "arn_log.h"
#include "arn_proto.h"
#include "xds_int.h"

static char *sv_strdup(upb_StringView s)
{
	return strndup(s.data ? s.data : "", s.size);
}

/* Names must be usable as C strings: refuse embedded NULs outright. */
static bool sv_clean(upb_StringView s)
{
	return s.size == 0 || memchr(s.data, '\0', s.size) == NULL;
}

static struct xds_pending *pending_new(upb_StringView nonce, upb_StringView version)
{
	struct xds_pending *p = calloc(1, sizeof(*p));
	if (p == NULL)
		return NULL;
	p->nonce = sv_strdup(nonce);
	p->system_version = sv_strdup(version);
	if (p->nonce == NULL || p->system_version == NULL) {
		xds_pending_free(p);
		return NULL;
	}
	return p;
}

static void nack(struct xds_pending *p, int code, const char *text)
{
	free(p->error);
	p->error = strdup(text && text[0] ? text : "rejected");
	p->code = code;
}

/*
 * D5, per resource: what the sink applied is what the client holds from now
 * on, so that initial_resource_versions on the next stream says exactly
 * that. Resources the sink reported as failed (by name, in @p errs) keep
 * the version held before, or stay not held; the others commit, whether
 * the response is then ACKed or NACKed for those failures (X16). A removal
 * that commits leaves the name out of initial_resource_versions (D6): a
 * control plane that brings the resource back sends it again.
 */
/* A resource's Resource.ttl, if it has one. */
struct ttl_in {
	bool has;
	uint64_t ms;
};

static uint64_t deadline(const struct ttl_in *ttl, uint64_t now)
{
	if (!ttl->has)
		return 0;
	return now + ttl->ms > 0 ? now + ttl->ms : 1; /* 0 would mean "no TTL" */
}

static void commit(struct xds_type *t, const struct arn_xds_resource *added,
		   const struct ttl_in *added_ttl, size_t n_added, const char *const *removed,
		   size_t n_removed, const char *const *hb, const struct ttl_in *hb_ttl,
		   size_t n_hb, const struct arn_xds_errors *errs, uint64_t now)
{
	struct xds_map failed = {0};
	for (size_t i = 0; i < errs->n; i++)
		if (errs->v[i].name != NULL && errs->v[i].name[0] != '\0')
			xds_map_put(&failed, errs->v[i].name);
	for (size_t i = 0; i < n_added; i++) {
		if (xds_map_get(&failed, added[i].name) != NULL)
			continue;
		struct xds_ent *e = xds_map_get(&t->names, added[i].name);
		if (e == NULL) {
			if (!t->wildcard)
				continue; /* not subscribed (D4): never handed to the sink */
			e = xds_map_put(&t->names, added[i].name);
			if (e == NULL)
				continue;
		}
		xds_ent_set_version(e, added[i].version);
		/* with a ttl, it runs from now; without, none (xds_ttl.c) */
		xds_ttl_set(t, e, deadline(&added_ttl[i], now));
	}
	for (size_t i = 0; i < n_removed; i++) {
		if (xds_map_get(&failed, removed[i]) != NULL)
			continue;
		struct xds_ent *e = xds_map_get(&t->names, removed[i]);
		if (e == NULL)
			continue;
		if (e->subscribed) {
			xds_ent_set_version(e, NULL); /* still wanted, nothing held (D6) */
			xds_ttl_set(t, e, 0);
		} else {
			xds_map_del(&t->names, removed[i]);
		}
	}
	/* Heartbeats refresh the TTL of what is held, or clear it. */
	for (size_t i = 0; i < n_hb; i++) {
		struct xds_ent *e = xds_map_get(&t->names, hb[i]);
		if (e != NULL && e->version != NULL)
			xds_ttl_set(t, e, deadline(&hb_ttl[i], now));
	}
	xds_map_free(&failed);
}

void xds_handle_response(struct arn_xds_client *c, const char *buf, size_t len)
{
	uint64_t t_in = xds_mono_us();
	upb_Arena *a = upb_Arena_New();
	if (a == NULL)
		return;
	/* arn_proto_decode checks the wire format first: bytes from a control
	 * plane must never reach upb paths that abort the process. */
	struct arn_sb derr0 = ARN_SB_INIT;
	const envoy_service_discovery_v3_DeltaDiscoveryResponse *r = (const void *)arn_proto_decode(
	    buf, len, arn_proto_msgdef("envoy.service.discovery.v3.DeltaDiscoveryResponse"), a,
	    &derr0);
	if (r == NULL) {
		/* Without a type URL and a nonce there is nothing to answer. */
		ARN_WARN(XDS,
			 "ignoring a DeltaDiscoveryResponse that does not parse (%zu bytes): %s",
			 len, arn_sb_cstr(&derr0));
		arn_sb_free(&derr0);
		upb_Arena_Free(a);
		return;
	}
	arn_sb_free(&derr0);
	upb_StringView type_url = envoy_service_discovery_v3_DeltaDiscoveryResponse_type_url(r);
	upb_StringView nonce = envoy_service_discovery_v3_DeltaDiscoveryResponse_nonce(r);
	upb_StringView sysver =
	    envoy_service_discovery_v3_DeltaDiscoveryResponse_system_version_info(r);
	struct xds_type *t = xds_type_find(c, type_url.data ? type_url.data : "", type_url.size);
	if (t == NULL) {
		/* D10: never subscribed: neither applied nor answered. */
		ARN_WARN(XDS,
			 "ignoring a response for type '" ARN_SV_FMT
			 "', which was never subscribed to (D10)",
			 ARN_SV_ARG(type_url));
		upb_Arena_Free(a);
		return;
	}
	struct xds_pending *p = pending_new(nonce, sysver);
	if (p == NULL) {
		upb_Arena_Free(a);
		return;
	}
	p->t_in_us = t_in;
	free(t->last_nonce);
	t->last_nonce = strdup(p->nonce);
	t->n_responses++;

	size_t n_res = 0, n_rm = 0;
	const envoy_service_discovery_v3_Resource *const *res =
	    envoy_service_discovery_v3_DeltaDiscoveryResponse_resources(r, &n_res);
	const upb_StringView *rm =
	    envoy_service_discovery_v3_DeltaDiscoveryResponse_removed_resources(r, &n_rm);
	if (n_res == 0 && n_rm == 0)
		t->n_empty++; /* Envoy's update_empty; still answered (ACK) */

	struct arn_xds_errors errs = {0};
	struct arn_sb text = ARN_SB_INIT;
	struct xds_map seen = {0};
	struct arn_xds_resource *added = calloc(n_res ? n_res : 1, sizeof(*added));
	struct ttl_in *added_ttl = calloc(n_res ? n_res : 1, sizeof(*added_ttl));
	const char **hb = calloc(n_res ? n_res : 1, sizeof(*hb));
	struct ttl_in *hb_ttl = calloc(n_res ? n_res : 1, sizeof(*hb_ttl));
	const char **removed = calloc(n_rm ? n_rm : 1, sizeof(*removed));
	size_t n_added = 0, n_removed = 0, n_ignored = 0, n_hb = 0;
	char **owned = calloc(n_res * 2 + n_rm + 1, sizeof(char *));
	size_t n_owned = 0;
	if (added == NULL || added_ttl == NULL || hb == NULL || hb_ttl == NULL || removed == NULL ||
	    owned == NULL) {
		nack(p, XDS_CODE_INTERNAL, "out of memory");
		goto answer;
	}

	/* D2: a name twice, among resources, removals, or across both. */
	for (size_t i = 0; i < n_res; i++) {
		upb_StringView nm = envoy_service_discovery_v3_Resource_name(res[i]);
		char *name = sv_strdup(nm);
		if (name == NULL || !sv_clean(nm)) {
			arn_xds_errors_add(&errs, "", "a resource name contains a NUL byte");
			free(name);
			continue;
		}
		if (xds_map_get(&seen, name))
			arn_xds_errors_add(&errs, name,
					   "named twice among added/updated resources (D2)");
		xds_map_put(&seen, name);
		free(name);
	}
	for (size_t i = 0; i < n_rm; i++) {
		char *name = sv_strdup(rm[i]);
		if (name == NULL || !sv_clean(rm[i])) {
			arn_xds_errors_add(&errs, "", "a removed name contains a NUL byte");
			free(name);
			continue;
		}
		if (xds_map_get(&seen, name))
			arn_xds_errors_add(&errs, name,
					   "named twice in the union of added and removed "
					   "resources (D2)");
		xds_map_put(&seen, name);
		free(name);
	}
	if (errs.n > 0)
		goto refuse;

	/* Decode every resource (X15), skipping heartbeats and, for named
	 * subscriptions, resources not asked for (D4). */
	for (size_t i = 0; i < n_res; i++) {
		char *name = sv_strdup(envoy_service_discovery_v3_Resource_name(res[i]));
		char *ver = sv_strdup(envoy_service_discovery_v3_Resource_version(res[i]));
		if (name == NULL || ver == NULL) {
			free(name);
			free(ver);
			nack(p, XDS_CODE_INTERNAL, "out of memory");
			goto answer;
		}
		owned[n_owned++] = name;
		owned[n_owned++] = ver;
		const struct xds_ent *held = xds_map_get(&t->names, name);
		if (!t->wildcard && (held == NULL || !held->subscribed)) {
			n_ignored++;
			continue;
		}
		struct ttl_in ttl = {envoy_service_discovery_v3_Resource_has_ttl(res[i]), 0};
		if (ttl.has &&
		    xds_ttl_ms(envoy_service_discovery_v3_Resource_ttl(res[i]), &ttl.ms) != 0) {
			arn_xds_errors_add(&errs, name,
					   "ttl: must be a duration of 0 s or more, within 10000 "
					   "years");
			continue;
		}
		const struct google_protobuf_Any *any =
		    envoy_service_discovery_v3_Resource_resource(res[i]);
		if (any == NULL) {
			/* A heartbeat: the version held, no body. It only
			 * refreshes the TTL (committed with the rest). */
			if (held != NULL && held->version != NULL &&
			    strcmp(held->version, ver) == 0) {
				hb[n_hb] = name;
				hb_ttl[n_hb++] = ttl;
				continue;
			}
			arn_xds_errors_add(&errs, name,
					   "has no resource body (and is not a heartbeat of the "
					   "version held)");
			continue;
		}
		upb_StringView any_url = google_protobuf_Any_type_url(any);
		if (!upb_StringView_IsEqual(any_url, type_url)) {
			arn_xds_errors_add(&errs, name,
					   "type URL '" ARN_SV_FMT
					   "' of its Any does not match the "
					   "response's type URL '" ARN_SV_FMT "' (D3)",
					   ARN_SV_ARG(any_url), ARN_SV_ARG(type_url));
			continue;
		}
		if (t->def == NULL) {
			arn_xds_errors_add(&errs, name, "type '%s' is not known to Arion",
					   t->type_url);
			continue;
		}
		const upb_Message *msg = NULL;
		if (c->sink == NULL || !c->sink->decodes) {
			struct arn_sb derr = ARN_SB_INIT;
			msg =
			    arn_proto_any_unpack((const upb_Message *)any, t->def, NULL, a, &derr);
			if (msg == NULL) {
				arn_xds_errors_add(&errs, name, "does not decode: %s",
						   arn_sb_cstr(&derr));
				arn_sb_free(&derr);
				continue;
			}
			arn_sb_free(&derr);
		}
		upb_StringView val = google_protobuf_Any_value(any);
		added_ttl[n_added] = ttl;
		added[n_added++] = (struct arn_xds_resource){
		    .name = name,
		    .version = ver,
		    .bytes = val.data ? val.data : "",
		    .len = val.size,
		    .msg = msg,
		};
	}
	for (size_t i = 0; i < n_rm; i++) {
		char *name = sv_strdup(rm[i]);
		if (name == NULL) {
			nack(p, XDS_CODE_INTERNAL, "out of memory");
			goto answer;
		}
		owned[n_owned++] = name;
		const struct xds_ent *held = xds_map_get(&t->names, name);
		if (!t->wildcard && (held == NULL || !held->subscribed)) {
			n_ignored++; /* D4 */
			continue;
		}
		removed[n_removed++] = name;
	}
	if (n_ignored)
		ARN_DEBUG(XDS, "%s nonce %s: ignored %zu resources not subscribed to (D4)",
			  t->short_name, p->nonce, n_ignored);
	if (errs.n > 0)
		goto refuse;

	/* Apply through the sink (X16). */
	struct arn_xds_batch b = {
	    .type_url = t->type_url,
	    .def = t->def,
	    .system_version = p->system_version,
	    .added = added,
	    .n_added = n_added,
	    .removed = removed,
	    .n_removed = n_removed,
	};
	uint64_t token = 0;
	int rc = 0;
	uint64_t t_apply = xds_mono_us();
	p->decode_us = t_apply - t_in;
	if (c->sink && c->sink->apply && (n_added || n_removed))
		rc = c->sink->apply(c->sink_ctx, &b, &errs, &token);
	p->apply_us = xds_mono_us() - t_apply;
	c->interest_dirty = true; /* changed configuration may reference new names (X4) */
	if (rc == -EINVAL)
		goto refuse;
	if (rc == 0)
		commit(t, added, added_ttl, n_added, removed, n_removed, hb, hb_ttl, n_hb, &errs,
		       xds_now(c));
	p->n_add = n_added;
	p->n_rm = n_removed;
	p->n_hb = n_hb;
	if (rc != 0) {
		arn_sb_printf(&text, "%s update (nonce %s) could not be applied: %s", t->short_name,
			      p->nonce, strerror(-rc));
		if (errs.n) {
			arn_sb_puts(&text, ": ");
			xds_errors_format(&errs, &text);
		}
		nack(p, XDS_CODE_INTERNAL, arn_sb_cstr(&text));
		goto answer;
	}
	if (errs.n > 0) {
		arn_sb_printf(
		    &text,
		    "%s update (nonce %s): %zu of %zu resources failed to apply; the others "
		    "are applied (X16): ",
		    t->short_name, p->nonce, errs.n, n_added + n_removed);
		xds_errors_format(&errs, &text);
		nack(p, XDS_CODE_INVALID_ARGUMENT, arn_sb_cstr(&text));
		goto answer;
	}
	/* An ACK, once the data plane has it (X17). */
	p->has_token = token != 0;
	p->token = token;
	p->applied_ms = xds_now(c);
	p->deadline_ms = p->applied_ms + c->ack_timeout_ms;
	goto answer;

refuse:
	arn_sb_printf(&text,
		      "%s update (nonce %s) rejected, nothing of it applied (X15): ", t->short_name,
		      p->nonce);
	xds_errors_format(&errs, &text);
	nack(p, XDS_CODE_INVALID_ARGUMENT, arn_sb_cstr(&text));

answer:
	xds_enqueue(t, p);
	for (size_t i = 0; i < n_owned; i++)
		free(owned[i]);
	free(owned);
	free(added);
	free(added_ttl);
	free(hb);
	free(hb_ttl);
	free(removed);
	xds_map_free(&seen);
	xds_errors_free(&errs);
	arn_sb_free(&text);
	upb_Arena_Free(a);
}
