/*
 * The delta-ADS client's stream and subscriptions: connecting, cycling
 * servers (X9), backoff (X18), building requests (X1, X3, X5, X7, D1, D6-D8)
 * and answering responses in order once acknowledged (G1, G2, X17).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "envoy/config/core/v3/base.upb.h"
#include "envoy/service/discovery/v3/discovery.upb.h"
#include "google/rpc/status.upb.h"

#include "arn_log.h"
#include "arn_proto.h"
#include "xds_int.h"

static const char *const wildcard_types[] = {
    ARN_XDS_TYPE_SECRET,   ARN_XDS_TYPE_CLUSTER, ARN_XDS_TYPE_CLA,
    ARN_XDS_TYPE_LISTENER, ARN_XDS_TYPE_ROUTE, /* X3: exactly this order */
};
#define N_WILDCARD (sizeof(wildcard_types) / sizeof(wildcard_types[0]))

/* ---- small helpers ------------------------------------------------------ */

static uint64_t mono_ms(void *ctx)
{
	(void)ctx;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/*
 * Backoff jitter (X18) must differ from one process to the next: a fleet
 * whose control plane restarts would otherwise retry in lockstep, which is
 * what the jitter exists to prevent. libc's random() is the same sequence
 * in every process that does not seed it, so every draw comes from the
 * kernel instead (a reconnect is at most once a second: one system call is
 * nothing). GRND_NONBLOCK: before the kernel's pool is initialised (early
 * boot) fall back to what differs per process, the pid and the clock.
 */
static uint32_t std_rand(void *ctx)
{
	(void)ctx;
	uint32_t v;
	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == (ssize_t)sizeof(v))
		return v;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t x =
	    ((uint64_t)getpid() << 32) ^ ((uint64_t)ts.tv_sec << 30) ^ (uint64_t)ts.tv_nsec;
	/* splitmix64's finaliser: every input bit reaches the high half */
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	x ^= x >> 31;
	return (uint32_t)(x >> 32);
}

static void set_str(char **dst, const char *s)
{
	char *n = strdup(s ? s : "");
	if (n == NULL)
		return; /* keep the old text rather than lose it */
	free(*dst);
	*dst = n;
}

static upb_StringView sv(const char *s)
{
	return upb_StringView_FromString(s);
}

/* ---- errors collected from the sink ------------------------------------- */

/* ---- types -------------------------------------------------------------- */

static struct xds_type *type_add(struct arn_xds_client *c, const char *type_url, bool wildcard)
{
	void *nv = realloc(c->types, (c->n_types + 1) * sizeof(*c->types));
	if (nv == NULL)
		return NULL;
	c->types = nv;
	struct xds_type *t = calloc(1, sizeof(*t));
	if (t == NULL || (t->type_url = strdup(type_url)) == NULL) {
		free(t);
		return NULL;
	}
	const char *dot = strrchr(t->type_url, '.');
	t->short_name = dot ? dot + 1 : t->type_url;
	t->def = arn_proto_msgdef_by_url(type_url, strlen(type_url));
	t->wildcard = wildcard;
	set_str(&t->last_nonce, "");
	set_str(&t->last_acked_nonce, "");
	set_str(&t->system_version, "");
	set_str(&t->last_error, "");
	c->types[c->n_types++] = t;
	return t;
}

static struct xds_pending *dequeue(struct xds_type *t)
{
	struct xds_pending *p = t->q_head;
	if (p) {
		t->q_head = p->next;
		if (t->q_head == NULL)
			t->q_tail = NULL;
		t->q_len--;
		p->next = NULL;
	}
	return p;
}

static void type_free(struct xds_type *t)
{
	struct xds_pending *p;
	while ((p = dequeue(t)) != NULL)
		xds_pending_free(p);
	xds_map_free(&t->names);
	xds_map_free(&t->added);
	xds_map_free(&t->removed);
	xds_map_free(&t->wanted);
	free(t->type_url);
	free(t->last_nonce);
	free(t->last_acked_nonce);
	free(t->system_version);
	free(t->last_error);
	free(t);
}

/* ---- interest (X4, D8) --------------------------------------------------- */

static void subscribe(struct xds_type *t, const char *name)
{
	struct xds_ent *e = xds_map_get(&t->names, name);
	if (e != NULL && e->subscribed)
		return;
	if (e == NULL && (e = xds_map_put(&t->names, name)) == NULL)
		return;
	e->subscribed = true;
	/* remove-then-add before a request goes out is an add (D8) */
	xds_map_del(&t->removed, name);
	xds_map_put(&t->added, name);
	ARN_DEBUG(XDS, "%s: subscribing to '%s'", t->short_name, name);
}

static void unsubscribe(struct xds_type *t, const char *name_in)
{
	char *name = strdup(name_in); /* name_in may be the entry deleted below */
	if (name == NULL)
		return;
	bool was = xds_map_del(&t->names, name);
	/* add-then-remove cancels the add; a name the server knows about is
	 * unsubscribed explicitly (D8). */
	bool pending_add = xds_map_del(&t->added, name);
	(void)pending_add;
	if (was)
		xds_map_put(&t->removed, name);
	ARN_DEBUG(XDS, "%s: unsubscribing from '%s'", t->short_name, name);
	free(name);
}

static void interest_cb(void *arg, const char *type_url, const char *name)
{
	struct arn_xds_client *c = arg;
	if (type_url == NULL || name == NULL || name[0] == '\0')
		return;
	struct xds_type *t = xds_type_find(c, type_url, strlen(type_url));
	if (t == NULL) {
		t = type_add(c, type_url, false);
		if (t == NULL)
			return;
		ARN_INFO(XDS, "on-demand type %s: first reference, subscribing by name (X4)",
			 type_url);
	}
	if (t->wildcard)
		return; /* already receives everything (X3) */
	xds_map_put(&t->wanted, name);
}

static void refresh_interest(struct arn_xds_client *c)
{
	c->interest_dirty = false;
	if (c->sink == NULL || c->sink->interest == NULL)
		return;
	c->sink->interest(c->sink_ctx, interest_cb, c);
	for (size_t i = 0; i < c->n_types; i++) {
		struct xds_type *t = c->types[i];
		if (t->wildcard)
			continue;
		/* names no longer referenced */
		size_t n = 0;
		struct xds_ent **v = xds_map_sorted(&t->names, &n);
		for (size_t k = 0; k < n; k++)
			if (v[k]->subscribed && xds_map_get(&t->wanted, v[k]->name) == NULL)
				unsubscribe(t, v[k]->name);
		free(v);
		/* names newly referenced */
		v = xds_map_sorted(&t->wanted, &n);
		for (size_t k = 0; k < n; k++)
			subscribe(t, v[k]->name);
		free(v);
		xds_map_clear(&t->wanted);
	}
}

void arn_xds_client_interest_changed(struct arn_xds_client *c)
{
	c->interest_dirty = true;
}

/* ---- requests ------------------------------------------------------------ */

static bool explicit_names(const struct xds_type *t)
{
	XDS_MAP_FOREACH(&t->names, e)
	if (e->subscribed)
		return true;
	return false;
}

/* Is the head of @p t's queue ready to be answered? Turns an expired wait
 * into a timeout NACK (X17). */
static bool head_ready(struct arn_xds_client *c, struct xds_type *t, uint64_t now)
{
	struct xds_pending *p = t->q_head;
	if (p == NULL)
		return false;
	if (p->error != NULL || !p->has_token)
		return true;
	if (c->sink && c->sink->acknowledged && c->sink->acknowledged(c->sink_ctx, p->token))
		return true;
	if (now >= p->deadline_ms) {
		char *msg = NULL;
		if (asprintf(&msg,
			     "%s update (nonce %s) was not acknowledged by the data plane within "
			     "%u ms; application already in progress goes on (X17)",
			     t->short_name, p->nonce, c->ack_timeout_ms) < 0)
			msg = NULL;
		p->error = msg ? msg : strdup("timeout (X17)");
		p->code = XDS_CODE_DEADLINE_EXCEEDED;
		return true;
	}
	return false;
}

static bool needs_request(struct arn_xds_client *c, struct xds_type *t, uint64_t now)
{
	if (!t->sent_on_stream) {
		/* First request of the stream: the whole interest again (D7).
		 * An on-demand type with no names sends nothing: an empty first
		 * request would mean wildcard. */
		if (t->wildcard || explicit_names(t))
			return true;
	} else if (t->added.n || t->removed.n) {
		return true;
	}
	return head_ready(c, t, now);
}

static void add_names(upb_Arena *a, envoy_service_discovery_v3_DeltaDiscoveryRequest *req,
		      struct xds_map *m, bool sub)
{
	size_t n = 0;
	struct xds_ent **v = xds_map_sorted(m, &n);
	for (size_t i = 0; i < n; i++) {
		if (sub)
			envoy_service_discovery_v3_DeltaDiscoveryRequest_add_resource_names_subscribe(
			    req, sv(v[i]->name), a);
		else
			envoy_service_discovery_v3_DeltaDiscoveryRequest_add_resource_names_unsubscribe(
			    req, sv(v[i]->name), a);
	}
	free(v);
}

/* Build and send the next request of @p t. @return 0 or -errno. */
static int send_request(struct arn_xds_client *c, struct xds_type *t, uint64_t now)
{
	upb_Arena *a = upb_Arena_New();
	if (a == NULL)
		return -ENOMEM;
	envoy_service_discovery_v3_DeltaDiscoveryRequest *req =
	    envoy_service_discovery_v3_DeltaDiscoveryRequest_new(a);
	envoy_service_discovery_v3_DeltaDiscoveryRequest_set_type_url(req, sv(t->type_url));
	/* X7: node in the first request of every stream; Envoy's delta client
	 * repeats it unless set_node_on_first_message_only. */
	if (!c->node_first_only || !c->node_sent_on_stream)
		envoy_service_discovery_v3_DeltaDiscoveryRequest_set_node(req, c->node);
	bool first = !t->sent_on_stream;
	size_t n_irv = 0;
	if (first) {
		/* X5, D6, D7: everything held, every explicit name, nothing to
		 * unsubscribe; a wildcard type's first request names nothing. */
		size_t n = 0;
		struct xds_ent **v = xds_map_sorted(&t->names, &n);
		for (size_t i = 0; i < n; i++) {
			if (v[i]->version != NULL) {
				envoy_service_discovery_v3_DeltaDiscoveryRequest_initial_resource_versions_set(
				    req, sv(v[i]->name), sv(v[i]->version), a);
				n_irv++;
			}
			if (!t->wildcard && v[i]->subscribed)
				envoy_service_discovery_v3_DeltaDiscoveryRequest_add_resource_names_subscribe(
				    req, sv(v[i]->name), a);
		}
		free(v);
	} else {
		add_names(a, req, &t->added, true);
		add_names(a, req, &t->removed, false);
	}
	struct xds_pending *p = head_ready(c, t, now) ? t->q_head : NULL;
	if (p != NULL) {
		envoy_service_discovery_v3_DeltaDiscoveryRequest_set_response_nonce(req,
										    sv(p->nonce));
		if (p->error != NULL) {
			struct google_rpc_Status *st =
			    envoy_service_discovery_v3_DeltaDiscoveryRequest_mutable_error_detail(
				req, a);
			struct arn_sb msg = ARN_SB_INIT;
			arn_xds_truncate_error(p->error, ARN_XDS_ERROR_DETAIL_MAX, &msg);
			google_rpc_Status_set_code(st,
						   p->code ? p->code : XDS_CODE_INVALID_ARGUMENT);
			char *m = arn_sb_steal(&msg);
			/* the arena must own the text: it is serialized below */
			size_t ml = strlen(m);
			char *am = upb_Arena_Malloc(a, ml + 1);
			if (am)
				memcpy(am, m, ml + 1);
			free(m);
			google_rpc_Status_set_message(
			    st, upb_StringView_FromDataAndSize(am ? am : "", am ? ml : 0));
		}
	}
	size_t len = 0;
	char *buf = envoy_service_discovery_v3_DeltaDiscoveryRequest_serialize(req, a, &len);
	if (buf == NULL) {
		upb_Arena_Free(a);
		return -ENOMEM;
	}
	int rc = c->tr->send(c->tr_ctx, buf, len);
	upb_Arena_Free(a);
	if (rc != 0)
		return rc;

	/* Sent: now the state moves. */
	c->node_sent_on_stream = true;
	if (first)
		ARN_DEBUG(XDS, "%s: first request on this stream (%s, %zu initial versions)",
			  t->short_name, t->wildcard ? "wildcard" : "named", n_irv);
	t->sent_on_stream = true;
	xds_map_clear(&t->added);
	xds_map_clear(&t->removed);
	if (p != NULL) {
		dequeue(t);
		uint64_t wall = xds_wall_ms();
		if (p->error == NULL) {
			t->n_acks++;
			t->last_ack_ms = now;
			t->last_ack_wall_ms = wall;
			set_str(&t->last_acked_nonce, p->nonce);
			set_str(&t->system_version, p->system_version);
			char hb[48] = "";
			if (p->n_hb)
				snprintf(hb, sizeof(hb), ", %zu heartbeat%s", p->n_hb,
					 p->n_hb == 1 ? "" : "s");
			/* where the time went (issue 17): decoding the response,
			 * the sink (conversion, X16, publication), then waiting
			 * for the workers to take the generation (X17) */
			ARN_DEBUG(XDS,
				  "ACK %s nonce %s version '%s' (%zu updated, %zu removed%s): "
				  "decoded in %llu us, applied in %llu us, sent %llu us after "
				  "the response arrived",
				  t->short_name, p->nonce, p->system_version, p->n_add, p->n_rm, hb,
				  (unsigned long long)p->decode_us, (unsigned long long)p->apply_us,
				  (unsigned long long)(xds_mono_us() - p->t_in_us));
		} else {
			t->n_nacks++;
			t->last_nack_ms = now;
			t->last_nack_wall_ms = wall;
			set_str(&t->last_error, p->error);
			/* G8: every NACK is visible to operators, names and reasons. */
			ARN_WARN(XDS, "NACK %s nonce %s: %s", t->short_name, p->nonce, p->error);
		}
		if (!t->first_done) {
			t->first_done = true;
			if (c->sink && c->sink->first_response)
				c->sink->first_response(c->sink_ctx, t->type_url, p->error == NULL);
		}
		xds_pending_free(p);
	}
	return 0;
}

/* Send whatever is due, in type order (X3 for the first requests). */
static void flush(struct arn_xds_client *c)
{
	if (!c->stream_open || c->in_flush)
		return;
	c->in_flush = true;
	uint64_t now = xds_now(c);
	while (c->stream_open && c->tr->writable(c->tr_ctx)) {
		struct xds_type *t = NULL;
		for (size_t i = 0; i < c->n_types && t == NULL; i++)
			if (needs_request(c, c->types[i], now))
				t = c->types[i];
		if (t == NULL)
			break;
		int rc = send_request(c, t, now);
		if (rc != 0) {
			ARN_ERR(XDS, "cannot send a %s request: %s", t->short_name, strerror(-rc));
			break;
		}
	}
	c->in_flush = false;
}

/* ---- connection (X9, X18) -------------------------------------------------- */

const char *arn_xds_conn_state_name(enum arn_xds_conn_state s)
{
	switch (s) {
	case ARN_XDS_IDLE:
		return "IDLE";
	case ARN_XDS_CONNECTING:
		return "CONNECTING";
	case ARN_XDS_CONNECTED:
		return "CONNECTED";
	case ARN_XDS_BACKOFF:
		return "BACKOFF";
	}
	return "?";
}

static void set_state(struct arn_xds_client *c, enum arn_xds_conn_state s)
{
	c->state = s;
	c->since_ms = xds_now(c);
}

/* Forget everything tied to the stream that ended (D1, D7). */
static void reset_stream_state(struct arn_xds_client *c)
{
	c->node_sent_on_stream = false;
	c->got_message = false;
	c->connected = false;
	for (size_t i = 0; i < c->n_types; i++) {
		struct xds_type *t = c->types[i];
		struct xds_pending *p;
		while ((p = dequeue(t)) != NULL)
			xds_pending_free(p);
		t->sent_on_stream = false;
		xds_map_clear(&t->added);
		xds_map_clear(&t->removed);
		set_str(&t->last_nonce, "");
	}
}

static uint32_t backoff_delay(struct arn_xds_client *c)
{
	uint64_t d = c->backoff_base_ms;
	for (uint32_t i = 0; i < c->backoff_k && d < c->backoff_max_ms; i++)
		d *= 2;
	if (d > c->backoff_max_ms)
		d = c->backoff_max_ms;
	if (c->backoff_k < 31)
		c->backoff_k++;
	/* Jitter spreads a fleet's reconnects after a control plane restart:
	 * 20% either way, inside X18's 1 s to 20 s. Either way, so that the
	 * first retry (at the floor) and the last ones (at the ceiling) are
	 * spread too: shortening only left every process's first retry at
	 * exactly 1 s. */
	uint64_t lo = d - d / 5, hi = d + d / 5;
	if (lo < c->backoff_base_ms)
		lo = c->backoff_base_ms;
	if (hi > c->backoff_max_ms)
		hi = c->backoff_max_ms;
	if (hi > lo)
		d = lo + c->rand(c->clock_ctx) % (hi - lo + 1);
	else
		d = lo;
	return (uint32_t)d;
}

static void stream_failed(struct arn_xds_client *c, const char *why)
{
	uint64_t now = xds_now(c);
	bool was_connected = c->connected;
	if (c->got_message)
		c->backoff_k = 0; /* a stream that delivered something worked */
	if (was_connected)
		c->window_start_ms = now; /* this cluster worked: a fresh window on it */
	c->stream_open = false;
	c->failures_in_row++;
	c->failures++;
	set_str(&c->last_error, why);
	reset_stream_state(c);
	uint32_t delay = backoff_delay(c);
	uint64_t next = now + delay;
	/* X9: with several clusters, the current one is given failover_ms to
	 * connect, then the next one is tried. */
	if (c->n_servers > 1 && !was_connected) {
		uint64_t end = c->window_start_ms + c->failover_ms;
		if (next > end)
			next = end > now ? end : now;
	}
	c->next_attempt_ms = next;
	set_state(c, ARN_XDS_BACKOFF);
	const struct xds_server *s = &c->servers[c->cur];
	ARN_WARN(XDS, "stream to cluster %s (%s:%u) failed: %s; retrying in %llu ms (X18)",
		 s->cluster, s->hosts[c->cur_ep], s->ports[c->cur_ep], why,
		 (unsigned long long)(next - now));
}

static void start_attempt(struct arn_xds_client *c)
{
	uint64_t now = xds_now(c);
	if (c->n_servers > 1 && c->state == ARN_XDS_BACKOFF &&
	    now >= c->window_start_ms + c->failover_ms) {
		size_t prev = c->cur;
		c->cur = (c->cur + 1) % c->n_servers;
		c->window_start_ms = now;
		c->backoff_k = 0;
		ARN_WARN(XDS, "no connection to cluster %s for %u ms: trying cluster %s (X9)",
			 c->servers[prev].cluster, c->failover_ms, c->servers[c->cur].cluster);
	}
	struct xds_server *s = &c->servers[c->cur];
	c->cur_ep = s->rr++ % s->n;
	c->attempts++;
	if (c->stream_open)
		c->tr->close(c->tr_ctx);
	c->stream_open = false;
	reset_stream_state(c);
	ARN_INFO(XDS, "connecting to cluster %s (%s:%u) %s %s, attempt %u", s->cluster,
		 s->hosts[c->cur_ep], s->ports[c->cur_ep], s->tls ? "over" : "in",
		 xds_tls_kind(s->tls), c->attempts);
	int rc = c->tr->open(c->tr_ctx, s->hosts[c->cur_ep], s->ports[c->cur_ep], s->tls);
	if (rc != 0) {
		char why[128];
		snprintf(why, sizeof(why), "cannot open a stream: %s", strerror(-rc));
		stream_failed(c, why);
		return;
	}
	c->stream_open = true;
	set_state(c, ARN_XDS_CONNECTING);
	c->connect_deadline_ms = now + c->failover_ms;
	/* Requests go out at once; gRPC holds them until the connection is up. */
	if (c->interest_dirty)
		refresh_interest(c);
	flush(c);
}

/* ---- transport events ------------------------------------------------------ */

void arn_xds_transport_connected(struct arn_xds_client *c)
{
	if (!c->stream_open || c->connected)
		return;
	c->connected = true;
	set_state(c, ARN_XDS_CONNECTED);
	const struct xds_server *s = &c->servers[c->cur];
	ARN_INFO(XDS, "connected to cluster %s (%s:%u) %s %s", s->cluster, s->hosts[c->cur_ep],
		 s->ports[c->cur_ep], s->tls ? "over" : "in", xds_tls_kind(s->tls));
}

void arn_xds_transport_message(struct arn_xds_client *c, const char *buf, size_t len)
{
	if (!c->stream_open)
		return;
	arn_xds_transport_connected(c);
	c->got_message = true;
	c->failures_in_row = 0;
	xds_handle_response(c, buf, len);
	if (c->interest_dirty)
		refresh_interest(c);
	flush(c);
}

void arn_xds_transport_writable(struct arn_xds_client *c)
{
	flush(c);
}

void arn_xds_transport_closed(struct arn_xds_client *c, int code, const char *details)
{
	if (!c->stream_open)
		return;
	char why[512];
	snprintf(why, sizeof(why), "gRPC status %d: %s", code,
		 details && details[0] ? details : "(no details)");
	stream_failed(c, why);
}

/* ---- life cycle ------------------------------------------------------------- */

#define XDS_FEATURE_RESOURCE_TTL "xds.config.supports-resource-ttl"

static bool node_has_feature(const struct envoy_config_core_v3_Node *n, const char *f)
{
	size_t k = 0;
	const upb_StringView *v = envoy_config_core_v3_Node_client_features(n, &k);
	for (size_t i = 0; i < k; i++)
		if (upb_StringView_IsEqual(v[i], sv(f)))
			return true;
	return false;
}

struct arn_xds_client *arn_xds_client_new(const struct arn_xds_options *o)
{
	if (o->n_servers == 0 || o->transport == NULL) {
		ARN_ERR(XDS, "no control plane to connect to (ads_config.grpc_services is empty)");
		return NULL;
	}
	struct arn_xds_client *c = calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	c->arena = upb_Arena_New();
	c->servers = calloc(o->n_servers, sizeof(*c->servers));
	if (c->arena == NULL || c->servers == NULL)
		goto oom;
	c->n_servers = o->n_servers;
	for (size_t i = 0; i < o->n_servers; i++) {
		const struct arn_xds_server *in = &o->servers[i];
		struct xds_server *s = &c->servers[i];
		if (in->n_endpoints == 0) {
			ARN_ERR(XDS, "xDS cluster %s has no endpoints", in->cluster);
			goto fail;
		}
		s->cluster = strdup(in->cluster);
		s->hosts = calloc(in->n_endpoints, sizeof(char *));
		s->ports = calloc(in->n_endpoints, sizeof(uint16_t));
		if (!s->cluster || !s->hosts || !s->ports)
			goto oom;
		for (size_t k = 0; k < in->n_endpoints; k++) {
			if ((s->hosts[k] = strdup(in->hosts[k])) == NULL)
				goto oom;
			s->ports[k] = in->ports[k];
			s->n++;
		}
		if (in->tls != NULL && (s->tls = xds_tls_dup(in->tls)) == NULL)
			goto oom;
	}
	/* The node: the bootstrap's, with id and cluster after overrides (X7). */
	c->node = NULL;
	if (o->node_pb != NULL && o->node_pb_len > 0)
		c->node = envoy_config_core_v3_Node_parse(o->node_pb, o->node_pb_len, c->arena);
	if (c->node == NULL)
		c->node = envoy_config_core_v3_Node_new(c->arena);
	if (c->node == NULL)
		goto oom;
	char *id = upb_Arena_Malloc(c->arena, strlen(o->node_id ? o->node_id : "") + 1);
	char *cl = upb_Arena_Malloc(c->arena, strlen(o->node_cluster ? o->node_cluster : "") + 1);
	if (id == NULL || cl == NULL)
		goto oom;
	strcpy(id, o->node_id ? o->node_id : "");
	strcpy(cl, o->node_cluster ? o->node_cluster : "");
	envoy_config_core_v3_Node_set_id(c->node, sv(id));
	envoy_config_core_v3_Node_set_cluster(c->node, sv(cl));
	envoy_config_core_v3_Node_set_user_agent_name(c->node, sv("arion"));
	envoy_config_core_v3_Node_set_user_agent_version(c->node, sv(ARN_VERSION));
	/* Control planes send Resource.ttl only to clients that say they
	 * honour it (xds_ttl.c), as Envoy does. */
	if (!node_has_feature(c->node, XDS_FEATURE_RESOURCE_TTL) &&
	    !envoy_config_core_v3_Node_add_client_features(c->node, sv(XDS_FEATURE_RESOURCE_TTL),
							   c->arena))
		goto oom;
	c->node_first_only = o->node_first_only;

	c->sink = o->sink;
	c->sink_ctx = o->sink_ctx;
	c->tr = o->transport;
	c->tr_ctx = o->transport_ctx;
	if (c->tr->attach)
		c->tr->attach(c->tr_ctx, c);
	c->ack_timeout_ms = o->ack_timeout_ms ? o->ack_timeout_ms : ARN_XDS_ACK_TIMEOUT_MS;
	c->backoff_base_ms = o->backoff_base_ms ? o->backoff_base_ms : ARN_XDS_BACKOFF_BASE_MS;
	c->backoff_max_ms = o->backoff_max_ms ? o->backoff_max_ms : ARN_XDS_BACKOFF_MAX_MS;
	c->failover_ms = o->failover_ms ? o->failover_ms : ARN_XDS_FAILOVER_MS;
	c->now_ms = o->now_ms ? o->now_ms : mono_ms;
	c->rand = o->rand ? o->rand : std_rand;
	c->clock_ctx = o->clock_ctx;
	for (size_t i = 0; i < N_WILDCARD; i++)
		if (type_add(c, wildcard_types[i], true) == NULL)
			goto oom;
	set_str(&c->last_error, "");
	c->interest_dirty = true;
	c->state = ARN_XDS_IDLE;
	c->since_ms = xds_now(c);
	c->window_start_ms = c->since_ms;
	return c;
oom:
	ARN_ERR(XDS, "out of memory creating the xDS client");
fail:
	c->tr = NULL; /* the caller still owns the transport */
	arn_xds_client_free(c);
	return NULL;
}

void arn_xds_client_free(struct arn_xds_client *c)
{
	if (c == NULL)
		return;
	if (c->tr != NULL) {
		if (c->stream_open)
			c->tr->close(c->tr_ctx);
		c->tr->destroy(c->tr_ctx);
	}
	for (size_t i = 0; i < c->n_types; i++)
		type_free(c->types[i]);
	free(c->types);
	for (size_t i = 0; c->servers && i < c->n_servers; i++) {
		struct xds_server *s = &c->servers[i];
		for (size_t k = 0; k < s->n; k++)
			free(s->hosts[k]);
		free(s->hosts);
		free(s->ports);
		free(s->cluster);
		xds_tls_free(s->tls);
	}
	free(c->servers);
	free(c->last_error);
	if (c->arena)
		upb_Arena_Free(c->arena);
	free(c);
}

void arn_xds_client_poll(struct arn_xds_client *c, int max_wait_ms)
{
	uint64_t now = xds_now(c);
	if (c->state == ARN_XDS_IDLE || (c->state == ARN_XDS_BACKOFF && now >= c->next_attempt_ms))
		start_attempt(c);
	else if (c->state == ARN_XDS_CONNECTING && now >= c->connect_deadline_ms) {
		c->tr->close(c->tr_ctx);
		char why[96];
		snprintf(why, sizeof(why), "not connected within %u ms", c->failover_ms);
		stream_failed(c, why);
	}
	/* TTLs run out whatever the stream does (xds_ttl.c). */
	xds_ttl_expire(c, xds_now(c));
	if (c->interest_dirty)
		refresh_interest(c);
	flush(c);

	/* Sleep no longer than the next timer. */
	now = xds_now(c);
	uint64_t next = now + (uint64_t)(max_wait_ms > 0 ? max_wait_ms : 0);
	if (c->state == ARN_XDS_BACKOFF && c->next_attempt_ms < next)
		next = c->next_attempt_ms;
	if (c->state == ARN_XDS_CONNECTING && c->connect_deadline_ms < next)
		next = c->connect_deadline_ms;
	for (size_t i = 0; i < c->n_types; i++) {
		const struct xds_pending *p = c->types[i]->q_head;
		if (p == NULL || !p->has_token || p->error != NULL)
			continue;
		/* X17: workers usually take a generation within microseconds,
		 * and nothing wakes this thread when they do: look again at
		 * once for the first XDS_ACK_SPIN_MS, then every millisecond,
		 * so that the ACK is not held for a whole max_wait_ms. */
		uint64_t soon = now < p->applied_ms + XDS_ACK_SPIN_MS ? now : now + 1;
		if (p->deadline_ms < soon)
			soon = p->deadline_ms;
		if (soon < next)
			next = soon;
	}
	uint64_t ttl = xds_ttl_next(c);
	if (ttl != 0 && ttl < next)
		next = ttl;
	int wait = next > now ? (int)(next - now) : 0;
	c->tr->poll(c->tr_ctx, wait);
	/* acknowledgements that arrived meanwhile (X17) */
	flush(c);
}
