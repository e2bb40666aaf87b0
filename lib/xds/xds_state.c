/*
 * What operators see of the client (G8): connection, and per type the
 * subscribed names, held versions and TTLs, nonces, ACK/NACK times and
 * last error.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xds_int.h"

void arn_xds_client_status(const struct arn_xds_client *c, struct arn_xds_status *st)
{
	const struct xds_server *s = &c->servers[c->cur];
	*st = (struct arn_xds_status){
	    .state = c->state,
	    .cluster = s->cluster,
	    .host = s->hosts[c->cur_ep],
	    .port = s->ports[c->cur_ep],
	    .channel = xds_tls_kind(s->tls),
	    .since_ms = c->since_ms,
	    .next_attempt_ms = c->state == ARN_XDS_BACKOFF ? c->next_attempt_ms : 0,
	    .attempts = c->attempts,
	    .failures_in_row = c->failures_in_row,
	    .failures = c->failures,
	    .last_error = c->last_error ? c->last_error : "",
	};
}

size_t arn_xds_client_n_types(const struct arn_xds_client *c)
{
	return c->n_types;
}

int arn_xds_client_type_status(const struct arn_xds_client *c, size_t i,
			       struct arn_xds_type_status *ts)
{
	if (i >= c->n_types)
		return -ENOENT;
	const struct xds_type *t = c->types[i];
	size_t n_sub = 0, n_held = 0, n_ttl = 0;
	XDS_MAP_FOREACH(&t->names, e)
	{
		n_sub += e->subscribed;
		n_held += e->version != NULL;
		n_ttl += e->version != NULL && e->ttl_deadline_ms != 0;
	}
	*ts = (struct arn_xds_type_status){
	    .type_url = t->type_url,
	    .wildcard = t->wildcard,
	    .n_subscribed = n_sub,
	    .n_held = n_held,
	    .last_nonce = t->last_nonce,
	    .last_acked_nonce = t->last_acked_nonce,
	    .system_version = t->system_version,
	    .last_ack_ms = t->last_ack_ms,
	    .last_nack_ms = t->last_nack_ms,
	    .n_responses = t->n_responses,
	    .n_acks = t->n_acks,
	    .n_nacks = t->n_nacks,
	    .n_empty = t->n_empty,
	    .last_error = t->last_error,
	    .pending_acks = t->q_len,
	    .n_ttl = n_ttl,
	    .n_ttl_updates = t->n_ttl_updates,
	    .n_ttl_expired = t->n_ttl_expired,
	    .last_ttl_update_ms = t->last_ttl_update_ms,
	};
	return 0;
}

int arn_xds_client_type_resources(const struct arn_xds_client *c, size_t i,
				  void (*fn)(void *arg, const char *name, const char *version,
					     bool subscribed),
				  void *arg)
{
	if (i >= c->n_types)
		return -ENOENT;
	size_t n = 0;
	struct xds_ent **v = xds_map_sorted(&c->types[i]->names, &n);
	for (size_t k = 0; k < n; k++)
		fn(arg, v[k]->name, v[k]->version, v[k]->subscribed);
	free(v);
	return 0;
}

static void wall_time(struct arn_sb *out, uint64_t ms)
{
	if (ms == 0) {
		arn_sb_puts(out, "null");
		return;
	}
	time_t s = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&s, &tm);
	char b[40];
	strftime(b, sizeof(b), "%Y-%m-%dT%H:%M:%S", &tm);
	arn_sb_printf(out, "\"%s.%03uZ\"", b, (unsigned)(ms % 1000));
}

static void jstr(struct arn_sb *out, const char *s)
{
	arn_sb_json_str(out, s ? s : "", strlen(s ? s : ""));
}

/* Every name of @p t, sorted: version (null: not held), subscribed, and
 * the TTL left, in ms, for a resource that has one. */
static void resources_json(const struct xds_type *t, uint64_t now, struct arn_sb *out)
{
	size_t n = 0;
	struct xds_ent **v = xds_map_sorted(&t->names, &n);
	for (size_t k = 0; k < n; k++) {
		arn_sb_puts(out, k ? ",{\"name\":" : "{\"name\":");
		jstr(out, v[k]->name);
		arn_sb_puts(out, ",\"version\":");
		if (v[k]->version)
			jstr(out, v[k]->version);
		else
			arn_sb_puts(out, "null");
		arn_sb_printf(out, ",\"subscribed\":%s", v[k]->subscribed ? "true" : "false");
		uint64_t d = v[k]->ttl_deadline_ms;
		if (v[k]->version && d != 0)
			arn_sb_printf(out, ",\"ttl_ms\":%" PRIu64, d > now ? d - now : 0);
		arn_sb_putc(out, '}');
	}
	free(v);
}

void arn_xds_client_state_json(const struct arn_xds_client *c, struct arn_sb *out)
{
	struct arn_xds_status st;
	arn_xds_client_status(c, &st);
	uint64_t now = xds_now(c);
	arn_sb_puts(out, "{\"connection\":{\"state\":");
	jstr(out, arn_xds_conn_state_name(st.state));
	arn_sb_puts(out, ",\"cluster\":");
	jstr(out, st.cluster);
	arn_sb_printf(out, ",\"endpoint\":\"%s:%u\",\"channel\":\"%s\"", st.host, st.port,
		      st.channel);
	arn_sb_printf(out, ",\"for_ms\":%" PRIu64, now - st.since_ms);
	if (st.state == ARN_XDS_BACKOFF)
		arn_sb_printf(out, ",\"retry_in_ms\":%" PRIu64,
			      st.next_attempt_ms > now ? st.next_attempt_ms - now : 0);
	arn_sb_printf(out,
		      ",\"attempts\":%u,\"failures\":%u,\"failures_in_row\":%u,\"last_error\":",
		      st.attempts, st.failures, st.failures_in_row);
	jstr(out, st.last_error);
	arn_sb_puts(out, ",\"servers\":[");
	for (size_t i = 0; i < c->n_servers; i++) {
		arn_sb_puts(out, i ? ",{\"cluster\":" : "{\"cluster\":");
		jstr(out, c->servers[i].cluster);
		arn_sb_printf(out, ",\"channel\":\"%s\"", xds_tls_kind(c->servers[i].tls));
		if (c->servers[i].tls && c->servers[i].tls->sni) {
			arn_sb_puts(out, ",\"sni\":");
			jstr(out, c->servers[i].tls->sni);
		}
		arn_sb_puts(out, ",\"endpoints\":[");
		for (size_t k = 0; k < c->servers[i].n; k++)
			arn_sb_printf(out, "%s\"%s:%u\"", k ? "," : "", c->servers[i].hosts[k],
				      c->servers[i].ports[k]);
		arn_sb_puts(out, "]}");
	}
	arn_sb_puts(out, "]},\"types\":[");
	for (size_t i = 0; i < c->n_types; i++) {
		const struct xds_type *t = c->types[i];
		struct arn_xds_type_status ts;
		arn_xds_client_type_status(c, i, &ts);
		arn_sb_puts(out, i ? ",{\"type_url\":" : "{\"type_url\":");
		jstr(out, ts.type_url);
		arn_sb_printf(out,
			      ",\"wildcard\":%s,\"last_nonce\":", ts.wildcard ? "true" : "false");
		jstr(out, ts.last_nonce);
		arn_sb_puts(out, ",\"last_acked_nonce\":");
		jstr(out, ts.last_acked_nonce);
		arn_sb_puts(out, ",\"system_version\":");
		jstr(out, ts.system_version);
		arn_sb_printf(out, ",\"responses\":%u,\"acks\":%u,\"nacks\":%u,\"last_ack\":",
			      ts.n_responses, ts.n_acks, ts.n_nacks);
		wall_time(out, t->last_ack_wall_ms);
		arn_sb_puts(out, ",\"last_nack\":");
		wall_time(out, t->last_nack_wall_ms);
		arn_sb_puts(out, ",\"last_error\":");
		jstr(out, ts.last_error);
		arn_sb_printf(
		    out,
		    ",\"pending_acks\":%zu,\"subscribed\":%zu,\"held\":%zu,\"ttl_running\":%zu,"
		    "\"ttl_expiries\":%u,\"ttl_expired\":%u,\"resources\":[",
		    ts.pending_acks, ts.n_subscribed, ts.n_held, ts.n_ttl, ts.n_ttl_updates,
		    ts.n_ttl_expired);
		resources_json(t, now, out);
		arn_sb_puts(out, "]}");
	}
	arn_sb_puts(out, "]}");
}
