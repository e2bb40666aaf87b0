/*
 * libFuzzer: arbitrary bytes as a DeltaDiscoveryResponse arriving on a
 * connected stream, through the client's checks (D2-D4, D10), decoding of
 * every resource (X15) and conversion: lib/config's arn_config_apply() when
 * the build has it (ARN_FUZZ_WITH_CONFIG), else the per-resource rule checks
 * alone (X11-X13, arn_rules.h). The answer the client builds (ACK or NACK,
 * D9 truncation) is serialized too. Must never crash, leak or hang.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "arn_log.h"
#include "arn_proto.h"
#include "arn_rules.h"
#include "arn_xds.h"

#ifdef ARN_FUZZ_WITH_CONFIG
#include "arn_config.h"
static struct arn_config_store *store;
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* ---- a transport that goes nowhere ------------------------------------- */

static bool open_;
static int f_open(void *t, const char *h, uint16_t p, const struct arn_xds_tls *tls)
{
	(void)t, (void)h, (void)p, (void)tls;
	open_ = true;
	return 0;
}
static bool f_writable(void *t)
{
	(void)t;
	return open_;
}
static int f_send(void *t, const char *b, size_t n)
{
	(void)t, (void)b, (void)n;
	return 0;
}
static void f_close(void *t)
{
	(void)t;
	open_ = false;
}
static void f_poll(void *t, int ms)
{
	(void)t, (void)ms;
}
static void f_destroy(void *t)
{
	(void)t;
}
static const struct arn_xds_transport_ops tr = {NULL,	 f_open, f_writable, f_send,
						f_close, f_poll, f_destroy};

/* ---- conversion ---------------------------------------------------------- */

#ifndef ARN_FUZZ_WITH_CONFIG
static void rule_report(void *ctx, const char *path, const char *msg)
{
	arn_xds_errors_add(ctx, "", "%s: %s", path, msg);
}
#endif

static int sink_apply(void *ctx, const struct arn_xds_batch *b, struct arn_xds_errors *errs,
		      uint64_t *token)
{
	(void)ctx;
	*token = 0;
#ifdef ARN_FUZZ_WITH_CONFIG
	struct arn_config_resource_in in[64];
	size_t n = b->n_added < 64 ? b->n_added : 64;
	for (size_t i = 0; i < n; i++)
		in[i] = (struct arn_config_resource_in){b->added[i].name, b->added[i].version,
							b->added[i].bytes, b->added[i].len};
	struct arn_config_result r;
	if (arn_config_apply(store, b->type_url, in, n, b->removed, b->n_removed, 0, &r) != 0)
		return -EINVAL;
	for (size_t i = 0; i < r.n_errors; i++)
		arn_xds_errors_add(errs, r.errors[i].name, "%s", r.errors[i].message);
	*token = r.token;
	bool ok = r.accepted;
	arn_config_result_free(&r);
	return ok ? 0 : -EINVAL;
#else
	upb_Arena *a = upb_Arena_New();
	struct arn_rule_sink rs = {rule_report, errs};
	for (size_t i = 0; i < b->n_added; i++) {
		if (strcmp(b->type_url, ARN_XDS_TYPE_CLUSTER) == 0)
			arn_rules_cluster((const void *)b->added[i].msg, "cluster", a, &rs);
		else if (strcmp(b->type_url, ARN_XDS_TYPE_LISTENER) == 0)
			arn_rules_listener((const void *)b->added[i].msg, "listener", a, &rs);
	}
	upb_Arena_Free(a);
	return arn_xds_errors_count(errs) ? -EINVAL : 0;
#endif
}

static bool sink_acked(void *ctx, uint64_t token)
{
	(void)ctx;
#ifdef ARN_FUZZ_WITH_CONFIG
	return arn_config_acked(store, token);
#else
	(void)token;
	return true;
#endif
}

static void sink_interest(void *ctx, arn_xds_interest_fn fn, void *arg)
{
	(void)ctx;
	/* a named on-demand subscription, so that D4 paths run too */
	fn(arg, "type.googleapis.com/envoy.config.core.v3.Node", "n1");
}

static const struct arn_xds_sink_ops sink = {sink_apply, sink_acked, sink_interest, NULL};

static const char *const hosts[] = {"127.0.0.1"};
static const uint16_t ports[] = {50100};
static const struct arn_xds_server server = {"xds_cluster", hosts, ports, 1};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	arn_log_set_spec("off", NULL);
	arn_proto_init();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
#ifdef ARN_FUZZ_WITH_CONFIG
	store = arn_config_create(NULL);
	if (store == NULL)
		return 0;
#endif
	struct arn_xds_options o = {
	    .node_id = "fuzz",
	    .node_cluster = "fuzz",
	    .servers = &server,
	    .n_servers = 1,
	    .sink = &sink,
	    .transport = &tr,
	};
	struct arn_xds_client *c = arn_xds_client_new(&o);
	if (c != NULL) {
		arn_xds_client_poll(c, 0);
		arn_xds_transport_connected(c);
		arn_xds_transport_message(c, (const char *)data, size);
		arn_xds_transport_message(c, (const char *)data,
					  size); /* again: updates, heartbeats */
		arn_xds_client_poll(c, 0);
		struct arn_sb j = ARN_SB_INIT;
		arn_xds_client_state_json(c, &j);
		arn_sb_free(&j);
		arn_xds_client_free(c);
	}
#ifdef ARN_FUZZ_WITH_CONFIG
	arn_config_destroy(store);
#endif
	return 0;
}
