/*
 * Serve mode's xDS hooks: the delta-ADS client on the control lcore.
 *
 * start runs after net (EAL init) on the main lcore, so gRPC's threads,
 * created by grpc_init() here, inherit the control core's affinity and never
 * land on a worker's core (DESIGN.md). In control-plane-only mode (no
 * dataplane: section) there is no EAL at all.
 *
 * The client's sink is lib/config's store (arn_config_apply and friends):
 * conversion (X15), per-resource application (X16), the RCU acknowledgement
 * (X17), referenced names of on-demand types (X4) and initial fetch.
 * Operators see the client's state on the admin endpoint at /xds (JSON), in
 * /stats and every NACK in the log (G8). Envoy's statistic names
 * (control_plane.*, cluster_manager.{cds,eds,rds,sds}.*, listener_manager.lds.*)
 * come from lib/admin's schemas (arn_stats_envoy.h, declared once there) and
 * are brought up to date with the client's state on every poll; Arion's own
 * per-type view (xds.type.<Type>.*) is pulled when /stats is read.
 *
 * Test-only knob: ARION_XDS_ACK_TIMEOUT_MS in the environment, read once at
 * start, shortens X17's 20 s internal acknowledgement timeout so that the
 * e2e suite can prove it quickly. It is not a CLI flag and not meant for
 * production; arion warns when it is set.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app.h"
#include "arn_admin.h"
#include "arn_config.h"
#include "arn_log.h"
#include "arn_stats.h"
#include "arn_stats_envoy.h"
#include "arn_xds.h"

struct app_xds {
	struct arn_xds_client *client;
	struct arn_xds_options_holder *holder;
	struct arn_config_store *store;
	char **ondemand; /* type URLs lib/config reported references for (X4) */
	size_t n_ondemand;
	bool admin_registered;
	bool stats_registered;
	/* Envoy's names: control_plane.* and one subscription scope per type */
	struct arn_stats_scope *cp;
	struct arn_stats_scope *sub[5];
};

/* Envoy's subscription statistics per type (Arion has one ADS stream, so
 * RDS, EDS and SDS are counted per type, not per resource). */
static const struct {
	const char *type_url;
	struct arn_stats_schema *schema;
} envoy_subs[5] = {
    {ARN_XDS_TYPE_CLUSTER, &arn_stats_cds_schema}, {ARN_XDS_TYPE_LISTENER, &arn_stats_lds_schema},
    {ARN_XDS_TYPE_ROUTE, &arn_stats_rds_schema},   {ARN_XDS_TYPE_CLA, &arn_stats_eds_schema},
    {ARN_XDS_TYPE_SECRET, &arn_stats_sds_schema},
};

/* ---- the sink: lib/config's store ------------------------------------------ */

static int cfg_apply(void *ctx, const struct arn_xds_batch *b, struct arn_xds_errors *errs,
		     uint64_t *token)
{
	struct app_xds *x = ctx;
	struct arn_config_resource_in *in = calloc(b->n_added ? b->n_added : 1, sizeof(*in));
	if (in == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < b->n_added; i++)
		in[i] = (struct arn_config_resource_in){
		    .name = b->added[i].name,
		    .version = b->added[i].version,
		    .bytes = b->added[i].bytes,
		    .len = b->added[i].len,
		};
	struct arn_config_result r;
	int rc = arn_config_apply(x->store, b->type_url, in, b->n_added, b->removed, b->n_removed,
				  0, &r);
	free(in);
	if (rc != 0)
		return rc;
	/* By name, always: the client commits every resource not named here
	 * (D5); the NACK text does not repeat a name the message already
	 * gives ("Cluster 'x': ..."). */
	for (size_t i = 0; i < r.n_errors; i++)
		arn_xds_errors_add(errs, r.errors[i].name, "%s",
				   r.errors[i].message ? r.errors[i].message : "failed");
	*token = r.token;
	bool accepted = r.accepted;
	arn_config_result_free(&r);
	return accepted ? 0 : -EINVAL; /* -EINVAL: X15, nothing applied */
}

static bool cfg_acked(void *ctx, uint64_t token)
{
	struct app_xds *x = ctx;
	return arn_config_acked(x->store, token);
}

struct interest_walk {
	arn_xds_interest_fn fn;
	void *arg;
	const char *type_url;
};

static void interest_name(void *ctx, const char *name)
{
	struct interest_walk *w = ctx;
	w->fn(w->arg, w->type_url, name);
}

static void cfg_interest(void *ctx, arn_xds_interest_fn fn, void *arg)
{
	struct app_xds *x = ctx;
	for (size_t i = 0; i < x->n_ondemand; i++) {
		struct interest_walk w = {fn, arg, x->ondemand[i]};
		arn_config_referenced(x->store, x->ondemand[i], interest_name, &w);
	}
}

static void cfg_first_response(void *ctx, const char *type_url, bool accepted)
{
	struct app_xds *x = ctx;
	(void)accepted;
	arn_config_initial_fetch_done(x->store, type_url);
}

static bool is_wildcard_type(const char *url)
{
	static const char *const w[] = {ARN_XDS_TYPE_SECRET, ARN_XDS_TYPE_CLUSTER, ARN_XDS_TYPE_CLA,
					ARN_XDS_TYPE_LISTENER, ARN_XDS_TYPE_ROUTE};
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		if (strcmp(url, w[i]) == 0)
			return true;
	return false;
}

static void track_ondemand(struct app_xds *x, const char *type_url)
{
	if (type_url == NULL || is_wildcard_type(type_url))
		return; /* the five Envoy types are wildcard subscriptions (X3) */
	for (size_t i = 0; i < x->n_ondemand; i++)
		if (strcmp(x->ondemand[i], type_url) == 0)
			return;
	char **nv = realloc(x->ondemand, (x->n_ondemand + 1) * sizeof(char *));
	char *d = strdup(type_url);
	if (nv != NULL)
		x->ondemand = nv;
	if (nv != NULL && d != NULL)
		x->ondemand[x->n_ondemand++] = d;
	else
		free(d);
}

/* lib/config says a type's referenced names changed (X4). */
static void cfg_interest_changed(void *ctx, const char *type_url)
{
	struct app_xds *x = ctx;
	track_ondemand(x, type_url);
	if (x->client != NULL)
		arn_xds_client_interest_changed(x->client);
}

static const struct arn_xds_sink_ops config_sink = {
    .apply = cfg_apply,
    .acknowledged = cfg_acked,
    .interest = cfg_interest,
    .first_response = cfg_first_response,
    /* lib/config decodes (strictly) and refuses what does not (X15) */
    .decodes = true,
};
/* ---- admin: GET /xds ---------------------------------------------------- */

static void h_xds(const struct arn_admin_request *req, struct arn_admin_response *resp, void *arg)
{
	(void)req;
	struct app_xds *x = arg;
	resp->content_type = "application/json";
	arn_xds_client_state_json(x->client, &resp->body);
	arn_sb_putc(&resp->body, '\n');
}

/* ---- /stats: pulled from the client's state (G8) --------------------------- */

static void emit_updates(struct arn_stats_emitter *e, const char *family, const char *tag,
			 const char *tag_value, const struct arn_xds_type_status *ts)
{
	arn_stats_emit(e, ARN_STAT_COUNTER, family, tag, tag_value, "update_attempt",
		       ts->n_responses);
	arn_stats_emit(e, ARN_STAT_COUNTER, family, tag, tag_value, "update_success", ts->n_acks);
	arn_stats_emit(e, ARN_STAT_COUNTER, family, tag, tag_value, "update_rejected", ts->n_nacks);
}

/* Arion's own names, read when /stats is read. */
static void pull_stats(struct arn_stats_emitter *e, void *arg)
{
	struct app_xds *x = arg;
	struct arn_xds_status st;
	arn_xds_client_status(x->client, &st);
	arn_stats_emit(e, ARN_STAT_COUNTER, "xds", NULL, NULL, "connect_attempts", st.attempts);
	arn_stats_emit(e, ARN_STAT_COUNTER, "xds", NULL, NULL, "stream_failures", st.failures);
	for (size_t i = 0; i < arn_xds_client_n_types(x->client); i++) {
		struct arn_xds_type_status ts;
		if (arn_xds_client_type_status(x->client, i, &ts) != 0)
			continue;
		const char *dot = strrchr(ts.type_url, '.');
		const char *name = dot ? dot + 1 : ts.type_url;
		emit_updates(e, "xds.type", "arion_xds_type", name, &ts);
		arn_stats_emit(e, ARN_STAT_GAUGE, "xds.type", "arion_xds_type", name, "resources",
			       (int64_t)ts.n_held);
		arn_stats_emit(e, ARN_STAT_GAUGE, "xds.type", "arion_xds_type", name,
			       "pending_acks", (int64_t)ts.pending_acks);
		arn_stats_emit(e, ARN_STAT_GAUGE, "xds.type", "arion_xds_type", name, "ttl_running",
			       (int64_t)ts.n_ttl);
		arn_stats_emit(e, ARN_STAT_COUNTER, "xds.type", "arion_xds_type", name,
			       "ttl_expired", ts.n_ttl_expired);
	}
}

/* Raise counter @p stat (written by the control lcore alone) to @p v. */
static void counter_to(struct arn_stats_scope *sc, unsigned stat, uint64_t v)
{
	uint64_t cur = arn_stats_counter_value(sc, stat);
	if (v > cur)
		arn_stats_add(sc, ARN_STATS_SLOT_CONTROL, stat, v - cur);
}

static int64_t clock_ms(clockid_t id)
{
	struct timespec t;
	clock_gettime(id, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Envoy's names from the client's state (every poll: a few words per type). */
static void sync_envoy_stats(struct app_xds *x)
{
	struct arn_xds_status st;
	arn_xds_client_status(x->client, &st);
	if (x->cp)
		arn_stats_gauge_set(x->cp, ARN_STATS_SLOT_CONTROL, ARN_CP_connected_state,
				    st.state == ARN_XDS_CONNECTED);
	for (size_t i = 0; i < arn_xds_client_n_types(x->client); i++) {
		struct arn_xds_type_status ts;
		if (arn_xds_client_type_status(x->client, i, &ts) != 0)
			continue;
		struct arn_stats_scope *sc = NULL;
		for (size_t k = 0; k < 5; k++)
			if (strcmp(ts.type_url, envoy_subs[k].type_url) == 0)
				sc = x->sub[k];
		if (sc == NULL)
			continue;
		/* Envoy: a TTL expiry is an update of its own (onConfigUpdate
		 * with the expired names removed and an empty version_info). */
		counter_to(sc, ARN_XDS_update_attempt, (uint64_t)ts.n_responses + ts.n_ttl_updates);
		counter_to(sc, ARN_XDS_update_success, (uint64_t)ts.n_acks + ts.n_ttl_updates);
		counter_to(sc, ARN_XDS_update_rejected, ts.n_nacks);
		counter_to(sc, ARN_XDS_update_empty, ts.n_empty);
		if (x->store)
			counter_to(sc, ARN_XDS_init_fetch_timeout,
				   arn_config_init_fetch_timeouts(x->store, ts.type_url));
		/* Envoy counts a stream failure on every subscription of it */
		counter_to(sc, ARN_XDS_update_failure, st.failures);
		bool ttl_last = ts.last_ttl_update_ms > ts.last_ack_ms;
		uint64_t last = ttl_last ? ts.last_ttl_update_ms : ts.last_ack_ms;
		if (last) {
			/* the client's clock is monotonic; the gauge is wall time */
			int64_t wall =
			    clock_ms(CLOCK_REALTIME) - (clock_ms(CLOCK_MONOTONIC) - (int64_t)last);
			arn_stats_gauge_set(sc, ARN_STATS_SLOT_CONTROL, ARN_XDS_update_time, wall);
		}
		/* Envoy: a hash of the last accepted version_info; a TTL expiry's
		 * is empty (0 here) */
		const char *ver = ttl_last ? "" : ts.system_version ? ts.system_version : "";
		uint64_t h = 0xcbf29ce484222325ull;
		for (const char *p = ver; *p; p++)
			h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
		arn_stats_gauge_set(sc, ARN_STATS_SLOT_CONTROL, ARN_XDS_version,
				    *ver ? (int64_t)(h & INT64_MAX) : 0);
	}
}

static uint32_t env_ms(const char *name)
{
	const char *v = getenv(name);
	if (v == NULL || *v == '\0')
		return 0;
	char *end;
	unsigned long n = strtoul(v, &end, 10);
	if (*end != '\0' || n == 0 || n > 3600000ul) {
		ARN_WARN(XDS, "%s=%s ignored: expected milliseconds (1..3600000)", name, v);
		return 0;
	}
	ARN_WARN(XDS, "%s=%lu: test-only setting in effect", name, n);
	return (uint32_t)n;
}

static void app_xds_free(struct app_xds *x)
{
	if (x->admin_registered)
		arn_admin_handler_unregister("/xds");
	if (x->stats_registered)
		arn_stats_pull_unregister(pull_stats, x);
	arn_stats_scope_put(x->cp);
	for (size_t k = 0; k < 5; k++)
		arn_stats_scope_put(x->sub[k]);
	if (x->store != NULL)
		arn_config_set_interest_cb(x->store, NULL, NULL);
	for (size_t i = 0; i < x->n_ondemand; i++)
		free(x->ondemand[i]);
	free(x->ondemand);
	arn_xds_client_free(x->client);
	arn_xds_options_release(x->holder);
	free(x);
}

int arn_app_xds_start(struct arn_app *app)
{
	if (!app->bootstrap->ads)
		return 0;
	struct app_xds *x = calloc(1, sizeof(*x));
	if (x == NULL)
		return -ENOMEM;
	struct arn_xds_options o = {0};
	int rc = arn_xds_options_from_bootstrap(app->bootstrap, &o, &x->holder);
	if (rc != 0) {
		free(x);
		return rc;
	}
	x->store = arn_config_global();
	if (x->store == NULL) {
		ARN_ERR(XDS, "no configuration store to apply xDS resources to");
		arn_xds_options_release(x->holder);
		free(x);
		return -EINVAL;
	}
	o.sink = &config_sink;
	o.sink_ctx = x;
	/* Every non-wildcard type lib/config models is on demand (X4: TDS when
	 * it lands); static_resources may reference some already. */
	for (int t = 0; t < ARN_CFG_NTYPES; t++)
		track_ondemand(x, arn_config_type_url((enum arn_cfg_type)t));
	arn_config_set_interest_cb(x->store, cfg_interest_changed, x);
	o.ack_timeout_ms = env_ms("ARION_XDS_ACK_TIMEOUT_MS");
	o.transport = &arn_xds_grpc_transport_ops;
	o.transport_ctx = arn_xds_grpc_transport_new();
	if (o.transport_ctx == NULL) {
		ARN_ERR(XDS, "cannot start gRPC");
		app_xds_free(x);
		return -ENOMEM;
	}
	x->client = arn_xds_client_new(&o);
	if (x->client == NULL) {
		arn_xds_grpc_transport_ops.destroy(o.transport_ctx);
		app_xds_free(x);
		return -EINVAL;
	}
	rc =
	    arn_admin_handler_register("/xds", ARN_ADMIN_GET,
				       "xDS client: connection, and per type the subscribed names, "
				       "held versions, nonces, last ACK/NACK and error (JSON)",
				       h_xds, x);
	if (rc == 0)
		x->admin_registered = true;
	else
		ARN_WARN(XDS, "cannot register /xds on the admin endpoint: %s", strerror(-rc));
	x->cp = arn_stats_scope_get(&arn_stats_control_plane_schema, NULL, NULL);
	for (size_t k = 0; k < 5; k++)
		x->sub[k] = arn_stats_scope_get(envoy_subs[k].schema, NULL, NULL);
	rc = arn_stats_pull_register(pull_stats, x);
	if (rc == 0)
		x->stats_registered = true;
	else
		ARN_WARN(XDS, "cannot register xDS statistics: %s", strerror(-rc));
	app->xds = x;
	return 0;
}

void arn_app_xds_poll(struct arn_app *app, int max_wait_ms)
{
	struct app_xds *x = app->xds;
	if (x == NULL) {
		struct timespec ts = {0, (long)max_wait_ms * 1000000L};
		nanosleep(&ts, NULL);
		return;
	}
	arn_xds_client_poll(x->client, max_wait_ms);
	sync_envoy_stats(x);
}

void arn_app_xds_stop(struct arn_app *app)
{
	struct app_xds *x = app->xds;
	if (x == NULL)
		return;
	app_xds_free(x);
	app->xds = NULL;
}
