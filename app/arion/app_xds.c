/*
 * Serve mode's xDS hooks: the delta-ADS client on the control lcore.
 *
 * start runs after net (EAL init) on the main lcore, so gRPC's threads,
 * created by grpc_init() here, inherit the control core's affinity and never
 * land on a worker's core (DESIGN.md). In control-plane-only mode (no
 * dataplane: section) there is no EAL at all.
 *
 * Test-only knob: ARION_XDS_ACK_TIMEOUT_MS in the environment, read once at
 * start, shortens X17's 20 s internal acknowledgement timeout so that the
 * e2e suite can prove it quickly. It is not a CLI flag and not meant for
 * production.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app.h"
#include "arn_log.h"
#include "arn_xds.h"

struct app_xds {
	struct arn_xds_client *client;
	struct arn_xds_options_holder *holder;
};

/*
 * TEMPORARY sink, until lib/config (issue 3) exposes its "apply a batch of
 * one type" call: the client has already decoded every resource with
 * lib/proto (X15's decoding half); this sink accepts them all as in force at
 * once. Conversion to Arion's model, X16 application errors and X17's
 * acknowledgement come with lib/config.
 */
static int temp_apply(void *ctx, const struct arn_xds_batch *b, struct arn_xds_errors *errs,
		      uint64_t *token)
{
	(void)ctx;
	(void)errs;
	ARN_DEBUG(XDS, "accepting %zu %s resources and %zu removals (no configuration model yet)",
		  b->n_added, b->type_url, b->n_removed);
	*token = 0;
	return 0;
}

static const struct arn_xds_sink_ops temp_sink = {
    .apply = temp_apply,
};

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
	o.sink = &temp_sink;
	o.ack_timeout_ms = env_ms("ARION_XDS_ACK_TIMEOUT_MS");
	o.transport = &arn_xds_grpc_transport_ops;
	o.transport_ctx = arn_xds_grpc_transport_new();
	if (o.transport_ctx == NULL) {
		ARN_ERR(XDS, "cannot start gRPC");
		arn_xds_options_release(x->holder);
		free(x);
		return -ENOMEM;
	}
	x->client = arn_xds_client_new(&o);
	if (x->client == NULL) {
		arn_xds_grpc_transport_ops.destroy(o.transport_ctx);
		arn_xds_options_release(x->holder);
		free(x);
		return -EINVAL;
	}
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
}

void arn_app_xds_stop(struct arn_app *app)
{
	struct app_xds *x = app->xds;
	if (x == NULL)
		return;
	arn_xds_client_free(x->client);
	arn_xds_options_release(x->holder);
	free(x);
	app->xds = NULL;
}
