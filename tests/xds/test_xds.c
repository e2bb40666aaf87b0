/*
 * The delta-ADS client's state machine against a fake transport, a fake
 * sink and a fake clock: every request it would put on the wire is parsed
 * back and checked rule by rule (spec/RULES.md: X, G and D rules).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "envoy/config/cluster/v3/cluster.upb.h"
#include "envoy/config/core/v3/base.upb.h"
#include "envoy/config/listener/v3/listener.upb.h"
#include "envoy/service/discovery/v3/discovery.upb.h"
#include "google/protobuf/any.upb.h"
#include "google/protobuf/duration.upb.h"
#include "google/rpc/status.upb.h"

#include "arn_bootstrap.h"
#include "arn_log.h"
#include "arn_proto.h"
#include "arn_xds.h"
#include "tboot.h"

/* An on-demand type for tests: any type the pool knows that is not one of
 * the five wildcard ones. */
#define TDS_LIKE "type.googleapis.com/envoy.config.core.v3.Node"

/* ---- fake transport ------------------------------------------------------ */

#define MAX_SENT 64
struct fake_tr {
	struct arn_xds_client *c;
	int open_rc;
	bool open;
	bool writable;
	int n_open;
	char host[64];
	uint16_t port;
	const struct arn_xds_tls *tls; /* as open() last saw it */
	char *sent[MAX_SENT];
	size_t sent_len[MAX_SENT];
	int n_sent;
	int destroyed;
	int last_wait; /* what the last poll() was allowed to wait, ms */
};

static void f_attach(void *t, struct arn_xds_client *c)
{
	((struct fake_tr *)t)->c = c;
}
static int f_open(void *t, const char *host, uint16_t port, const struct arn_xds_tls *tls)
{
	struct fake_tr *f = t;
	f->n_open++;
	f->tls = tls;
	snprintf(f->host, sizeof(f->host), "%s", host);
	f->port = port;
	if (f->open_rc)
		return f->open_rc;
	f->open = true;
	return 0;
}
static bool f_writable(void *t)
{
	struct fake_tr *f = t;
	return f->open && f->writable;
}
static int f_send(void *t, const char *buf, size_t len)
{
	struct fake_tr *f = t;
	assert_true(f->open);
	assert_true(f->n_sent < MAX_SENT);
	f->sent[f->n_sent] = malloc(len ? len : 1);
	memcpy(f->sent[f->n_sent], buf, len);
	f->sent_len[f->n_sent] = len;
	f->n_sent++;
	return 0;
}
static void f_close(void *t)
{
	((struct fake_tr *)t)->open = false;
}
static void f_poll(void *t, int max_wait_ms)
{
	((struct fake_tr *)t)->last_wait = max_wait_ms;
}
static void f_destroy(void *t)
{
	((struct fake_tr *)t)->destroyed++;
}
static const struct arn_xds_transport_ops fake_ops = {
    f_attach, f_open, f_writable, f_send, f_close, f_poll, f_destroy,
};

/* ---- fake sink ------------------------------------------------------------- */

struct fake_sink {
	int n_apply;
	int apply_rc;		   /* returned by apply */
	const char *fail_names[4]; /* reported through errs */
	const char *fail_reason;
	uint64_t token; /* returned by apply */
	bool acked;	/* answer of acknowledged() */
	char last_added[16][64];
	char last_versions[16][64];
	int n_last_added;
	char last_removed[16][64];
	int n_last_removed;
	const char *interest[8]; /* names of TDS_LIKE referenced */
	int n_first;
	bool decodes;	     /* the sink decodes itself: no msg expected */
	size_t last_len[16]; /* bytes of each added resource */
};

static int s_apply(void *ctx, const struct arn_xds_batch *b, struct arn_xds_errors *errs,
		   uint64_t *token)
{
	struct fake_sink *s = ctx;
	s->n_apply++;
	s->n_last_added = (int)b->n_added;
	for (size_t i = 0; i < b->n_added && i < 16; i++) {
		snprintf(s->last_added[i], 64, "%s", b->added[i].name);
		snprintf(s->last_versions[i], 64, "%s", b->added[i].version);
		s->last_len[i] = b->added[i].len;
		if (s->decodes)
			assert_null(b->added[i].msg);
		else
			assert_non_null(b->added[i].msg);
	}
	s->n_last_removed = (int)b->n_removed;
	for (size_t i = 0; i < b->n_removed && i < 16; i++)
		snprintf(s->last_removed[i], 64, "%s", b->removed[i]);
	for (int i = 0; i < 4 && s->fail_names[i]; i++)
		arn_xds_errors_add(errs, s->fail_names[i], "%s",
				   s->fail_reason ? s->fail_reason : "bad");
	*token = s->token;
	return s->apply_rc;
}
static bool s_acked(void *ctx, uint64_t token)
{
	(void)token;
	return ((struct fake_sink *)ctx)->acked;
}
static void s_interest(void *ctx, arn_xds_interest_fn fn, void *arg)
{
	struct fake_sink *s = ctx;
	for (int i = 0; i < 8 && s->interest[i]; i++)
		fn(arg, TDS_LIKE, s->interest[i]);
}
static void s_first(void *ctx, const char *type_url, bool accepted)
{
	(void)type_url;
	(void)accepted;
	((struct fake_sink *)ctx)->n_first++;
}
static const struct arn_xds_sink_ops sink_ops = {s_apply, s_acked, s_interest, s_first};
/* a sink that decodes the resources itself, as lib/config's does */
static const struct arn_xds_sink_ops sink_ops_decodes = {s_apply, s_acked, s_interest, s_first,
							 true};
static bool fx_sink_decodes; /* fx_new gives the next client sink_ops_decodes */

/* ---- fixture ----------------------------------------------------------------- */

struct fx {
	struct fake_tr tr;
	struct fake_sink sink;
	uint64_t now;
	uint32_t rnd;
	struct arn_xds_client *c;
	upb_Arena *a;
	int next; /* first request not checked yet */
};

static uint64_t fx_now(void *ctx)
{
	return ((struct fx *)ctx)->now;
}
static uint32_t fx_rand(void *ctx)
{
	return ((struct fx *)ctx)->rnd;
}
static uint64_t fx_now_static(void *ctx)
{
	return *(const uint64_t *)ctx;
}

static const char *const hosts_a[] = {"127.0.0.1", "127.0.0.2"};
static const uint16_t ports_a[] = {50101, 50102};
static const char *const hosts_b[] = {"127.0.0.3"};
static const uint16_t ports_b[] = {50103};

static struct fx *fx_new(bool two_servers, bool node_first_only)
{
	struct fx *f = calloc(1, sizeof(*f));
	f->tr.writable = true;
	f->now = 1000000;
	f->a = upb_Arena_New();
	static struct arn_xds_server servers[2];
	servers[0] = (struct arn_xds_server){"xds_a", hosts_a, ports_a, 2};
	servers[1] = (struct arn_xds_server){"xds_b", hosts_b, ports_b, 1};
	struct arn_xds_options o = {
	    .node_id = "node-1",
	    .node_cluster = "edge",
	    .node_first_only = node_first_only,
	    .servers = servers,
	    .n_servers = two_servers ? 2 : 1,
	    .sink = fx_sink_decodes ? &sink_ops_decodes : &sink_ops,
	    .sink_ctx = &f->sink,
	    .transport = &fake_ops,
	    .transport_ctx = &f->tr,
	    .now_ms = fx_now,
	    .rand = fx_rand,
	    .clock_ctx = f,
	};
	f->sink.decodes = fx_sink_decodes;
	fx_sink_decodes = false;
	f->c = arn_xds_client_new(&o);
	assert_non_null(f->c);
	return f;
}

static void fx_free(struct fx *f)
{
	arn_xds_client_free(f->c);
	assert_int_equal(f->tr.destroyed, 1);
	for (int i = 0; i < f->tr.n_sent; i++)
		free(f->tr.sent[i]);
	upb_Arena_Free(f->a);
	free(f);
}

static void poll_(struct fx *f)
{
	arn_xds_client_poll(f->c, 0);
}

/* The next request not yet looked at, parsed. */
static const envoy_service_discovery_v3_DeltaDiscoveryRequest *req(struct fx *f)
{
	assert_true(f->next < f->tr.n_sent);
	const envoy_service_discovery_v3_DeltaDiscoveryRequest *r =
	    envoy_service_discovery_v3_DeltaDiscoveryRequest_parse(f->tr.sent[f->next],
								   f->tr.sent_len[f->next], f->a);
	assert_non_null(r);
	f->next++;
	return r;
}

/* The request after the next @p skip, each of which must parse too. */
static const envoy_service_discovery_v3_DeltaDiscoveryRequest *req_after(struct fx *f, int skip)
{
	for (int i = 0; i < skip; i++)
		req(f);
	return req(f);
}

static void no_more_requests(struct fx *f)
{
	assert_int_equal(f->next, f->tr.n_sent);
}

static bool sv_is(upb_StringView v, const char *s)
{
	return arn_sv_eq(v, s);
}

#define assert_sv(v, s)                                                                            \
	do {                                                                                       \
		upb_StringView v_ = (v);                                                           \
		if (!sv_is(v_, s))                                                                 \
			fail_msg("got '%.*s', wanted '%s'", (int)v_.size, v_.data, (s));           \
	} while (0)

static const char *type_of(const envoy_service_discovery_v3_DeltaDiscoveryRequest *r)
{
	static char b[200];
	upb_StringView t = envoy_service_discovery_v3_DeltaDiscoveryRequest_type_url(r);
	snprintf(b, sizeof(b), "%.*s", (int)t.size, t.data);
	return b;
}

static size_t n_sub(const envoy_service_discovery_v3_DeltaDiscoveryRequest *r)
{
	size_t n;
	envoy_service_discovery_v3_DeltaDiscoveryRequest_resource_names_subscribe(r, &n);
	return n;
}

static size_t n_unsub(const envoy_service_discovery_v3_DeltaDiscoveryRequest *r)
{
	size_t n;
	envoy_service_discovery_v3_DeltaDiscoveryRequest_resource_names_unsubscribe(r, &n);
	return n;
}

static const char *irv(const envoy_service_discovery_v3_DeltaDiscoveryRequest *r, const char *name)
{
	static char b[100];
	upb_StringView v;
	if (!envoy_service_discovery_v3_DeltaDiscoveryRequest_initial_resource_versions_get(
		r, upb_StringView_FromString(name), &v))
		return NULL;
	snprintf(b, sizeof(b), "%.*s", (int)v.size, v.data);
	return b;
}

static upb_Arena *g_arena;

static const char *error_msg(const envoy_service_discovery_v3_DeltaDiscoveryRequest *r)
{
	const struct google_rpc_Status *st =
	    envoy_service_discovery_v3_DeltaDiscoveryRequest_error_detail(r);
	if (st == NULL)
		return NULL;
	upb_StringView m = google_rpc_Status_message(st);
	char *s = upb_Arena_Malloc(g_arena, m.size + 1); /* freed at exit */
	memcpy(s, m.data, m.size);
	s[m.size] = 0;
	return s;
}

/* Connect and consume the five initial requests. */
static struct fx *connected(bool two)
{
	struct fx *f = fx_new(two, false);
	poll_(f);
	arn_xds_transport_connected(f->c);
	for (int i = 0; i < 5; i++)
		req(f);
	return f;
}

/* One server, the sink interested in TDS-like @p t1 and @p t2 (or NULL),
 * past the first six requests: the five wildcards and that subscription. */
static struct fx *subscribed(const char *t1, const char *t2)
{
	struct fx *f = fx_new(false, false);
	f->sink.interest[0] = t1;
	f->sink.interest[1] = t2;
	poll_(f);
	for (int i = 0; i < 6; i++)
		req(f);
	return f;
}

/* ---- building responses ------------------------------------------------------ */

struct res_spec {
	const char *name;
	const char *version;
	const char *any_type; /* NULL: the response's */
	bool garbage;	      /* undecodable body */
	bool no_body;
	bool has_ttl; /* Resource.ttl = ttl_s seconds and ttl_ns nanoseconds */
	int64_t ttl_s;
	int32_t ttl_ns;
};

static char *response(struct fx *f, const char *type_url, const char *nonce,
		      const struct res_spec *res, size_t n, const char *const *removed, size_t n_rm,
		      size_t *len)
{
	upb_Arena *a = f->a;
	envoy_service_discovery_v3_DeltaDiscoveryResponse *r =
	    envoy_service_discovery_v3_DeltaDiscoveryResponse_new(a);
	envoy_service_discovery_v3_DeltaDiscoveryResponse_set_type_url(
	    r, upb_StringView_FromString(type_url));
	envoy_service_discovery_v3_DeltaDiscoveryResponse_set_nonce(
	    r, upb_StringView_FromString(nonce));
	envoy_service_discovery_v3_DeltaDiscoveryResponse_set_system_version_info(
	    r, upb_StringView_FromString("sys"));
	for (size_t i = 0; i < n; i++) {
		envoy_service_discovery_v3_Resource *x =
		    envoy_service_discovery_v3_DeltaDiscoveryResponse_add_resources(r, a);
		envoy_service_discovery_v3_Resource_set_name(
		    x, upb_StringView_FromString(res[i].name));
		envoy_service_discovery_v3_Resource_set_version(
		    x, upb_StringView_FromString(res[i].version ? res[i].version : "1"));
		if (res[i].has_ttl) {
			struct google_protobuf_Duration *d =
			    envoy_service_discovery_v3_Resource_mutable_ttl(x, a);
			google_protobuf_Duration_set_seconds(d, res[i].ttl_s);
			google_protobuf_Duration_set_nanos(d, res[i].ttl_ns);
		}
		if (res[i].no_body)
			continue;
		struct google_protobuf_Any *any =
		    envoy_service_discovery_v3_Resource_mutable_resource(x, a);
		const char *at = res[i].any_type ? res[i].any_type : type_url;
		google_protobuf_Any_set_type_url(any, upb_StringView_FromString(at));
		size_t bl = 0;
		char *body;
		if (res[i].garbage) {
			body = upb_Arena_Malloc(a, 4);
			memcpy(body, "\x0a\xff\xff\x01", 4); /* length past the end */
			bl = 4;
		} else if (strcmp(at, ARN_XDS_TYPE_CLUSTER) == 0) {
			envoy_config_cluster_v3_Cluster *c = envoy_config_cluster_v3_Cluster_new(a);
			envoy_config_cluster_v3_Cluster_set_name(
			    c, upb_StringView_FromString(res[i].name));
			body = envoy_config_cluster_v3_Cluster_serialize(c, a, &bl);
		} else if (strcmp(at, ARN_XDS_TYPE_LISTENER) == 0) {
			envoy_config_listener_v3_Listener *l =
			    envoy_config_listener_v3_Listener_new(a);
			envoy_config_listener_v3_Listener_set_name(
			    l, upb_StringView_FromString(res[i].name));
			body = envoy_config_listener_v3_Listener_serialize(l, a, &bl);
		} else {
			envoy_config_core_v3_Node *nd = envoy_config_core_v3_Node_new(a);
			envoy_config_core_v3_Node_set_id(nd,
							 upb_StringView_FromString(res[i].name));
			body = envoy_config_core_v3_Node_serialize(nd, a, &bl);
		}
		google_protobuf_Any_set_value(any, upb_StringView_FromDataAndSize(body, bl));
	}
	for (size_t i = 0; i < n_rm; i++)
		envoy_service_discovery_v3_DeltaDiscoveryResponse_add_removed_resources(
		    r, upb_StringView_FromString(removed[i]), a);
	return envoy_service_discovery_v3_DeltaDiscoveryResponse_serialize(r, a, len);
}

static void deliver(struct fx *f, const char *type_url, const char *nonce,
		    const struct res_spec *res, size_t n, const char *const *removed, size_t n_rm)
{
	size_t len;
	char *b = response(f, type_url, nonce, res, n, removed, n_rm, &len);
	arn_xds_transport_message(f->c, b, len);
}

static void reconnect(struct fx *f)
{
	arn_xds_transport_closed(f->c, 14, "gone");
	struct arn_xds_status st;
	arn_xds_client_status(f->c, &st);
	assert_int_equal(st.state, ARN_XDS_BACKOFF);
	f->now = st.next_attempt_ms;
	poll_(f);
	arn_xds_transport_connected(f->c);
}

/* ---- X rules ---------------------------------------------------------------------- */

static void test_x3_x1_wildcards_on_connect_in_order(void **state)
{
	(void)state;
	struct fx *f = fx_new(false, false);
	poll_(f);
	assert_int_equal(f->tr.n_open, 1);
	static const char *const order[] = {ARN_XDS_TYPE_SECRET, ARN_XDS_TYPE_CLUSTER,
					    ARN_XDS_TYPE_CLA, ARN_XDS_TYPE_LISTENER,
					    ARN_XDS_TYPE_ROUTE};
	for (int i = 0; i < 5; i++) {
		const envoy_service_discovery_v3_DeltaDiscoveryRequest *r = req(f);
		assert_string_equal(type_of(r), order[i]);
		assert_int_equal(n_sub(r), 0); /* wildcard: an empty first request */
		assert_int_equal(n_unsub(r), 0);
		assert_sv(envoy_service_discovery_v3_DeltaDiscoveryRequest_response_nonce(r), "");
		assert_null(envoy_service_discovery_v3_DeltaDiscoveryRequest_error_detail(r));
	}
	no_more_requests(f);
	fx_free(f);
}

static void test_x7_node_in_requests(void **state)
{
	(void)state;
	struct fx *f = fx_new(false, false);
	poll_(f);
	for (int i = 0; i < 5; i++) {
		const envoy_service_discovery_v3_DeltaDiscoveryRequest *r = req(f);
		const envoy_config_core_v3_Node *n =
		    envoy_service_discovery_v3_DeltaDiscoveryRequest_node(r);
		assert_non_null(n); /* Envoy's delta client repeats the node */
		assert_sv(envoy_config_core_v3_Node_id(n), "node-1");
		assert_sv(envoy_config_core_v3_Node_cluster(n), "edge");
		assert_sv(envoy_config_core_v3_Node_user_agent_name(n), "arion");
		/* TTLs are honoured: control planes send them only to clients that say so */
		size_t k = 0;
		const upb_StringView *cf = envoy_config_core_v3_Node_client_features(n, &k);
		assert_int_equal(k, 1);
		assert_sv(cf[0], "xds.config.supports-resource-ttl");
	}
	fx_free(f);

	/* set_node_on_first_message_only: node in the first request of each stream */
	f = fx_new(false, true);
	poll_(f);
	assert_non_null(envoy_service_discovery_v3_DeltaDiscoveryRequest_node(req(f)));
	for (int i = 1; i < 5; i++)
		assert_null(envoy_service_discovery_v3_DeltaDiscoveryRequest_node(req(f)));
	reconnect(f);
	assert_non_null(envoy_service_discovery_v3_DeltaDiscoveryRequest_node(req(f)));
	fx_free(f);
}

static void test_g1_ack_echoes_nonce(void **state)
{
	(void)state;
	struct fx *f = connected(false);
	struct res_spec rs[] = {{"a", "1"}, {"b", "7"}};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n1", rs, 2, NULL, 0);
	assert_int_equal(f->sink.n_apply, 1);
	assert_int_equal(f->sink.n_last_added, 2);
	assert_string_equal(f->sink.last_added[1], "b");
	assert_string_equal(f->sink.last_versions[1], "7");
	const envoy_service_discovery_v3_DeltaDiscoveryRequest *r = req(f);
	assert_string_equal(type_of(r), ARN_XDS_TYPE_CLUSTER);
	assert_sv(envoy_service_discovery_v3_DeltaDiscoveryRequest_response_nonce(r), "n1");
	assert_null(envoy_service_discovery_v3_DeltaDiscoveryRequest_error_detail(r));
	assert_int_equal(n_sub(r), 0);
	assert_int_equal(f->sink.n_first, 1);
	no_more_requests(f);
	struct arn_xds_type_status ts;
	arn_xds_client_type_status(f->c, 1, &ts);
	assert_int_equal(ts.n_held, 2);
	assert_int_equal(ts.n_acks, 1);
	assert_string_equal(ts.last_acked_nonce, "n1");
	fx_free(f);
}

static void test_x15_undecodable_resource_nacks_whole_response(void **state)
{
	(void)state;
	struct fx *f = connected(false);
	struct res_spec rs[] = {{"good", "1"}, {"payments", "3", NULL, true}};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n1", rs, 2, NULL, 0);
	assert_int_equal(f->sink.n_apply, 0); /* nothing applied */
	const envoy_service_discovery_v3_DeltaDiscoveryRequest *r = req(f);
	assert_sv(envoy_service_discovery_v3_DeltaDiscoveryRequest_response_nonce(r), "n1");
	const char *m = error_msg(r);
	assert_non_null(m);
	assert_non_null(strstr(m, "'payments'"));
	assert_non_null(strstr(m, "X15"));
	assert_null(strstr(m, "'good'"));
	/* D5: versions untouched */
	reconnect(f);
	req(f);
	r = req(f);
	assert_null(irv(r, "good"));
	fx_free(f);
}

/* X15 with a sink that decodes the resources itself (lib/config's): the
 * client does not decode them first (issue 17: a 10,000-route table was
 * decoded twice); undecodable bytes reach the sink, whose refusal NACKs
 * the whole response naming the resource. */
static void test_x15_sink_decodes_undecodable_resource(void **state)
{
	(void)state;
	fx_sink_decodes = true;
	struct fx *f = connected(false);
	f->sink.apply_rc = -EINVAL;
	f->sink.fail_names[0] = "payments";
	f->sink.fail_reason = "cannot decode: malformed wire format";
	struct res_spec rs[] = {{"good", "1"}, {"payments", "3", NULL, true}};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n1", rs, 2, NULL, 0);
	assert_int_equal(f->sink.n_apply, 1);
	assert_int_equal(f->sink.n_last_added, 2);
	assert_int_equal(f->sink.last_len[1], 4); /* the bytes as sent */
	const char *m = error_msg(req(f));
	assert_non_null(strstr(m, "'payments': cannot decode"));
	assert_non_null(strstr(m, "X15"));
	assert_null(strstr(m, "'good'"));
	fx_free(f);
}

static void test_x15_conversion_refusal_nacks_whole_response(void **state)
{
	(void)state;
	struct fx *f = connected(false);
	f->sink.apply_rc = -EINVAL;
	f->sink.fail_names[0] = "payments";
	f->sink.fail_reason = "connect_timeout: must be greater than 0s";
	struct res_spec rs[] = {{"a", "1"}, {"payments", "2"}};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n9", rs, 2, NULL, 0);
	const envoy_service_discovery_v3_DeltaDiscoveryRequest *r = req(f);
	const char *m = error_msg(r);
	assert_non_null(strstr(m, "'payments': connect_timeout: must be greater than 0s"));
	assert_non_null(strstr(m, "nothing of it applied"));
	const struct google_rpc_Status *st =
	    envoy_service_discovery_v3_DeltaDiscoveryRequest_error_detail(r);
	assert_int_equal(google_rpc_Status_code(st), 3);
	struct arn_xds_type_status ts;
	arn_xds_client_type_status(f->c, 1, &ts);
	assert_int_equal(ts.n_held, 0);
	assert_int_equal(ts.n_nacks, 1);
	assert_non_null(strstr(ts.last_error, "payments"));
	fx_free(f);
}

/* G8 (operators can see it): a response with neither resources nor removals
 * is ACKed like any other and counted as Envoy's update_empty; one with
 * resources is not. */
static void test_g8_empty_response_counted_and_acked(void **state)
{
	(void)state;
	struct fx *f = connected(false);
	deliver(f, ARN_XDS_TYPE_CLUSTER, "e1", NULL, 0, NULL, 0);
	const envoy_service_discovery_v3_DeltaDiscoveryRequest *r = req(f);
	assert_sv(envoy_service_discovery_v3_DeltaDiscoveryRequest_response_nonce(r), "e1");
	assert_null(envoy_service_discovery_v3_DeltaDiscoveryRequest_error_detail(r));
	struct res_spec rs[] = {{"a", "1"}};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "e2", rs, 1, NULL, 0);
	req(f);
	struct arn_xds_type_status ts;
	arn_xds_client_type_status(f->c, 1, &ts);
	assert_string_equal(ts.type_url, ARN_XDS_TYPE_CLUSTER);
	assert_int_equal(ts.n_responses, 2);
	assert_int_equal(ts.n_empty, 1);
	assert_int_equal(ts.n_acks, 2);
	fx_free(f);
}

static void test_x16_partial_failure_names_each_resource(void **state)
{
	(void)state;
	struct fx *f = connected(false);
	f->sink.fail_names[0] = "b";
	f->sink.fail_names[1] = "d";
	f->sink.fail_reason = "address already used";
	struct res_spec rs[] = {{"a", "1"}, {"b", "1"}, {"c", "1"}, {"d", "1"}};
	deliver(f, ARN_XDS_TYPE_LISTENER, "n1", rs, 4, NULL, 0);
	assert_int_equal(f->sink.n_apply, 1);
	assert_int_equal(f->sink.n_last_added, 4);
	const envoy_service_discovery_v3_DeltaDiscoveryRequest *r = req(f);
	assert_string_equal(type_of(r), ARN_XDS_TYPE_LISTENER);
	const char *m = error_msg(r);
	assert_non_null(strstr(m, "'b': address already used"));
	assert_non_null(strstr(m, "'d': address already used"));
	assert_non_null(strstr(m, "2 of 4"));
	assert_non_null(strstr(m, "X16"));
	fx_free(f);
}

static void test_x17_ack_waits_for_internal_ack(void **state)
{
	(void)state;
	struct fx *f = connected(false);
	f->sink.token = 42;
	f->sink.acked = false;
	struct res_spec rs[] = {{"a", "1"}};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n1", rs, 1, NULL, 0);
	poll_(f);
	no_more_requests(f); /* not yet */
	f->now += 5000;
	poll_(f);
	no_more_requests(f);
	f->sink.acked = true;
	poll_(f);
	const envoy_service_discovery_v3_DeltaDiscoveryRequest *r = req(f);
	assert_sv(envoy_service_discovery_v3_DeltaDiscoveryRequest_response_nonce(r), "n1");
	assert_null(envoy_service_discovery_v3_DeltaDiscoveryRequest_error_detail(r));
	fx_free(f);
}

/* X17's ACK is not held for a whole poll wait: nothing wakes the control
 * thread when workers take a generation, so while one is unacknowledged
 * the client looks again at once for 10 ms, then every millisecond, and
 * sleeps its full wait again once it is acknowledged. */
static void test_x17_ack_polled_promptly(void **state)
{
	(void)state;
	struct fx *f = connected(false);
	f->sink.token = 42;
	f->sink.acked = false;
	struct res_spec rs[] = {{"a", "1"}};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n1", rs, 1, NULL, 0);
	arn_xds_client_poll(f->c, 5);
	assert_int_equal(f->tr.last_wait, 0);
	f->now += 9;
	arn_xds_client_poll(f->c, 5);
	assert_int_equal(f->tr.last_wait, 0);
	f->now += 1; /* 10 ms: a worker is slow, no reason to spin */
	arn_xds_client_poll(f->c, 5);
	assert_int_equal(f->tr.last_wait, 1);
	f->sink.acked = true;
	arn_xds_client_poll(f->c, 5);
	const envoy_service_discovery_v3_DeltaDiscoveryRequest *r = req(f);
	assert_sv(envoy_service_discovery_v3_DeltaDiscoveryRequest_response_nonce(r), "n1");
	arn_xds_client_poll(f->c, 5);
	assert_int_equal(f->tr.last_wait, 5);
	fx_free(f);
}

static void test_x17_timeout_nacks(void **state)
{
	(void)state;
	struct fx *f = connected(false);
	f->sink.token = 42;
	struct res_spec rs[] = {{"a", "1"}};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n1", rs, 1, NULL, 0);
	f->now += ARN_XDS_ACK_TIMEOUT_MS - 1;
	poll_(f);
	no_more_requests(f);
	f->now += 1;
	poll_(f);
	const envoy_service_discovery_v3_DeltaDiscoveryRequest *r = req(f);
	assert_sv(envoy_service_discovery_v3_DeltaDiscoveryRequest_response_nonce(r), "n1");
	assert_non_null(strstr(error_msg(r), "X17"));
	assert_int_equal(google_rpc_Status_code(
			     envoy_service_discovery_v3_DeltaDiscoveryRequest_error_detail(r)),
			 4);
	/* D5: the sink applied it and its application goes on (X17): it is
	 * held, and a new stream says so */
	struct arn_xds_type_status ts;
	arn_xds_client_type_status(f->c, 1, &ts);
	assert_int_equal(ts.n_held, 1);
	reconnect(f);
	req(f);
	assert_string_equal(irv(req(f), "a"), "1");
	fx_free(f);
}

static void test_x5_initial_resource_versions_on_reconnect(void **state)
{
	(void)state;
	struct fx *f = connected(false);
	struct res_spec rs[] = {{"a", "1"}, {"b", "2"}};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n1", rs, 2, NULL, 0);
	req(f);
	reconnect(f);
	req(f); /* Secret */
	const envoy_service_discovery_v3_DeltaDiscoveryRequest *r = req(f);
	assert_string_equal(type_of(r), ARN_XDS_TYPE_CLUSTER);
	assert_int_equal(
	    envoy_service_discovery_v3_DeltaDiscoveryRequest_initial_resource_versions_size(r), 2);
	assert_string_equal(irv(r, "a"), "1");
	assert_string_equal(irv(r, "b"), "2");
	assert_int_equal(n_sub(r), 0); /* still wildcard */
	fx_free(f);
}

static void test_x18_backoff_doubles_from_1s_to_20s(void **state)
{
	(void)state;
	struct fx *f = fx_new(false, false);
	poll_(f);
	/* 1 s doubling to 20 s; the fake random source draws 0, the lowest
	 * of each step's 20%-either-way jitter (never below 1 s) */
	static const uint64_t want[] = {1000, 1600, 3200, 6400, 12800, 16000, 16000};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		arn_xds_transport_closed(f->c, 14, "refused");
		struct arn_xds_status st;
		arn_xds_client_status(f->c, &st);
		assert_int_equal(st.state, ARN_XDS_BACKOFF);
		assert_int_equal(st.next_attempt_ms - f->now, want[i]);
		f->now = st.next_attempt_ms - 1;
		int opens = f->tr.n_open;
		poll_(f);
		assert_int_equal(f->tr.n_open, opens); /* not early */
		f->now++;
		poll_(f);
		assert_int_equal(f->tr.n_open, opens + 1);
	}
	/* A stream that delivered a response resets the backoff. */
	arn_xds_transport_connected(f->c);
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n1", NULL, 0, NULL, 0);
	arn_xds_transport_closed(f->c, 14, "gone");
	struct arn_xds_status st;
	arn_xds_client_status(f->c, &st);
	assert_int_equal(st.next_attempt_ms - f->now, 1000);
	/* Jitter is 20% either way: 2 s becomes 1.6 s to 2.4 s. */
	f->rnd = 999999;
	f->now = st.next_attempt_ms;
	poll_(f);
	arn_xds_transport_closed(f->c, 14, "gone");
	arn_xds_client_status(f->c, &st);
	assert_int_equal(st.next_attempt_ms - f->now, 1600 + 999999 % 801);
	/* The first retry is jittered too (1 s to 1.2 s), not 1 s in every
	 * process, and 20 s is never exceeded. */
	f->now = st.next_attempt_ms;
	poll_(f);
	arn_xds_transport_connected(f->c);
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n2", NULL, 0, NULL, 0);
	f->rnd = 150;
	arn_xds_transport_closed(f->c, 14, "gone");
	arn_xds_client_status(f->c, &st);
	assert_int_equal(st.next_attempt_ms - f->now, 1150);
	fx_free(f);
}

/* X18: with the highest draws, each delay is 20% over its step, and the
 * steps at the ceiling stay at 20 s. */
static void test_x18_jitter_never_over_20s(void **state)
{
	(void)state;
	struct fx *f = fx_new(false, false);
	f->rnd = 0xffffffffu;
	poll_(f);
	uint64_t full = ARN_XDS_BACKOFF_BASE_MS;
	for (int i = 0; i < 7; i++) {
		arn_xds_transport_closed(f->c, 14, "refused");
		struct arn_xds_status st;
		arn_xds_client_status(f->c, &st);
		uint64_t d = st.next_attempt_ms - f->now;
		assert_true(d >= full - full / 5 && d <= full + full / 5);
		assert_true(d >= ARN_XDS_BACKOFF_BASE_MS && d <= ARN_XDS_BACKOFF_MAX_MS);
		full = full * 2 > ARN_XDS_BACKOFF_MAX_MS ? ARN_XDS_BACKOFF_MAX_MS : full * 2;
		f->now = st.next_attempt_ms;
		poll_(f);
	}
	fx_free(f);
}

/* The delays of @p n failed attempts in a row, with the client's own random
 * source (options.rand NULL), as one process sees them. */
#define N_DELAYS 8
static void default_rand_delays(uint64_t *out)
{
	struct fake_tr tr = {.writable = true};
	static uint64_t now;
	now = 5000;
	static const struct arn_xds_server server = {"xds_a", hosts_a, ports_a, 2};
	struct arn_xds_options o = {
	    .node_id = "node-1",
	    .node_cluster = "edge",
	    .servers = &server,
	    .n_servers = 1,
	    .transport = &fake_ops,
	    .transport_ctx = &tr,
	    .now_ms = fx_now_static,
	    .clock_ctx = &now,
	};
	struct arn_xds_client *c = arn_xds_client_new(&o);
	for (int i = 0; c != NULL && i < N_DELAYS; i++) {
		arn_xds_client_poll(c, 0);
		arn_xds_transport_closed(c, 14, "refused");
		struct arn_xds_status st;
		arn_xds_client_status(c, &st);
		out[i] = st.next_attempt_ms - now;
		now = st.next_attempt_ms;
	}
	arn_xds_client_free(c);
	for (int i = 0; i < tr.n_sent; i++)
		free(tr.sent[i]);
}

/* X18: the jitter differs between processes. Two processes (forked here,
 * like a fleet started together) draw their delays from the client's
 * default random source: the schedule is X18's in both, the delays are not
 * the same. libc's random(), unseeded, gave every process the same ones. */
static void test_x18_jitter_differs_between_processes(void **state)
{
	(void)state;
	uint64_t d[2][N_DELAYS];
	for (int k = 0; k < 2; k++) {
		int fds[2];
		assert_int_equal(pipe(fds), 0);
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			uint64_t v[N_DELAYS] = {0};
			default_rand_delays(v);
			ssize_t w = write(fds[1], v, sizeof(v));
			_exit(w == (ssize_t)sizeof(v) ? 0 : 1);
		}
		close(fds[1]);
		size_t got = 0;
		while (got < sizeof(d[k])) {
			ssize_t r = read(fds[0], (char *)d[k] + got, sizeof(d[k]) - got);
			if (r <= 0)
				break;
			got += (size_t)r;
		}
		close(fds[0]);
		int wst = 0;
		assert_int_equal(waitpid(pid, &wst, 0), pid);
		assert_true(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
		assert_int_equal(got, sizeof(d[k]));
	}
	for (int k = 0; k < 2; k++) {
		uint64_t full = ARN_XDS_BACKOFF_BASE_MS;
		for (int i = 0; i < N_DELAYS; i++) {
			/* X18: 1 s doubling to 20 s, 20% either way, inside 1 s to 20 s */
			uint64_t lo = full - full / 5 < ARN_XDS_BACKOFF_BASE_MS
					  ? ARN_XDS_BACKOFF_BASE_MS
					  : full - full / 5;
			uint64_t hi = full + full / 5 > ARN_XDS_BACKOFF_MAX_MS
					  ? ARN_XDS_BACKOFF_MAX_MS
					  : full + full / 5;
			if (d[k][i] < lo || d[k][i] > hi)
				fail_msg("process %d, delay %d: %llu ms, not in [%llu, %llu]", k, i,
					 (unsigned long long)d[k][i], (unsigned long long)lo,
					 (unsigned long long)hi);
			full =
			    full * 2 > ARN_XDS_BACKOFF_MAX_MS ? ARN_XDS_BACKOFF_MAX_MS : full * 2;
		}
	}
	/* Seven jittered delays, each drawn from 201 to 8001 values: equal
	 * sequences mean a shared seed, not chance. */
	assert_memory_not_equal(d[0], d[1], sizeof(d[0]));
}

static void test_x9_round_robin_and_cycling_every_10s(void **state)
{
	(void)state;
	struct fx *f = fx_new(true, false);
	uint64_t t0 = f->now;
	poll_(f);
	assert_string_equal(f->tr.host, "127.0.0.1");
	/* refused again and again: endpoints of xds_a alternate */
	const char *seen[8];
	int n = 0;
	while (strcmp(f->tr.host, "127.0.0.3") != 0 && n < 8) {
		seen[n++] = strcmp(f->tr.host, "127.0.0.1") == 0 ? "1" : "2";
		arn_xds_transport_closed(f->c, 14, "refused");
		struct arn_xds_status st;
		arn_xds_client_status(f->c, &st);
		f->now = st.next_attempt_ms;
		poll_(f);
	}
	assert_true(n >= 3);
	assert_string_equal(seen[0], "1");
	assert_string_equal(seen[1], "2");
	assert_string_equal(seen[2], "1");
	/* xds_b is tried exactly when xds_a had 10 s without a connection */
	assert_int_equal(f->now - t0, ARN_XDS_FAILOVER_MS);
	assert_int_equal(f->tr.port, 50103);
	struct arn_xds_status st;
	arn_xds_client_status(f->c, &st);
	assert_string_equal(st.cluster, "xds_b");
	/* an attempt that never connects is abandoned after 10 s */
	f->now += ARN_XDS_FAILOVER_MS;
	poll_(f);
	arn_xds_client_status(f->c, &st);
	assert_int_equal(st.state, ARN_XDS_BACKOFF);
	assert_non_null(strstr(st.last_error, "not connected"));
	f->now = st.next_attempt_ms;
	poll_(f);
	assert_string_equal(f->tr.host, "127.0.0.1"); /* back to xds_a */
	fx_free(f);
}

/* X4, and G4: subscriptions change by difference (only the name added is
 * in resource_names_subscribe, only the one dropped in _unsubscribe). */
static void test_x4_g4_on_demand_subscribe_and_unsubscribe(void **state)
{
	(void)state;
	struct fx *f = fx_new(false, false);
	f->sink.interest[0] = "t1";
	poll_(f);
	const envoy_service_discovery_v3_DeltaDiscoveryRequest *r = req_after(f, 5);
	assert_string_equal(type_of(r), TDS_LIKE);
	assert_int_equal(n_sub(r), 1);
	no_more_requests(f);
	/* a second name, then the first goes away */
	f->sink.interest[1] = "t2";
	arn_xds_client_interest_changed(f->c);
	poll_(f);
	r = req(f);
	assert_int_equal(n_sub(r), 1);
	assert_int_equal(n_unsub(r), 0);
	f->sink.interest[0] = "t2";
	f->sink.interest[1] = NULL;
	arn_xds_client_interest_changed(f->c);
	poll_(f);
	r = req(f);
	assert_int_equal(n_sub(r), 0);
	assert_int_equal(n_unsub(r), 1);
	size_t k;
	assert_sv(
	    envoy_service_discovery_v3_DeltaDiscoveryRequest_resource_names_unsubscribe(r, &k)[0],
	    "t1");
	/* nothing referenced: unsubscribed, and a new stream sends nothing for it */
	f->sink.interest[0] = NULL;
	arn_xds_client_interest_changed(f->c);
	poll_(f);
	r = req(f);
	assert_int_equal(n_unsub(r), 1);
	reconnect(f);
	for (int i = 0; i < 5; i++)
		req(f);
	no_more_requests(f);
	fx_free(f);
}

/* ---- G rules ------------------------------------------------------------------- */

static void test_g3_removal_goes_to_sink_and_drops_version(void **state)
{
	(void)state;
	struct fx *f = connected(false);
	struct res_spec rs[] = {{"a", "1"}, {"b", "1"}};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n1", rs, 2, NULL, 0);
	req(f);
	static const char *const rm[] = {"b"};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n2", NULL, 0, rm, 1);
	assert_int_equal(f->sink.n_last_removed, 1);
	assert_string_equal(f->sink.last_removed[0], "b");
	req(f);
	struct arn_xds_type_status ts;
	arn_xds_client_type_status(f->c, 1, &ts);
	assert_int_equal(ts.n_held, 1);
	fx_free(f);
}

/* ---- D rules ---------------------------------------------------------------------- */

static void test_d1_nonces_and_pending_acks_reset_on_reconnect(void **state)
{
	(void)state;
	struct fx *f = connected(false);
	f->sink.token = 5; /* hold the ACK */
	struct res_spec rs[] = {{"a", "1"}};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n1", rs, 1, NULL, 0);
	deliver(f, ARN_XDS_TYPE_LISTENER, "n2", rs, 1, NULL, 0);
	struct arn_xds_type_status ts;
	arn_xds_client_type_status(f->c, 1, &ts);
	assert_string_equal(ts.last_nonce, "n1");
	assert_int_equal(ts.pending_acks, 1);
	reconnect(f);
	f->sink.acked = true;
	poll_(f);
	for (int i = 0; i < 5; i++) {
		const envoy_service_discovery_v3_DeltaDiscoveryRequest *r = req(f);
		assert_sv(envoy_service_discovery_v3_DeltaDiscoveryRequest_response_nonce(r), "");
	}
	no_more_requests(f);
	arn_xds_client_type_status(f->c, 1, &ts);
	assert_string_equal(ts.last_nonce, "");
	assert_int_equal(ts.pending_acks, 0);
	/* nonces are per type: a Cluster nonce is never echoed on Listener */
	deliver(f, ARN_XDS_TYPE_CLUSTER, "c1", rs, 1, NULL, 0);
	deliver(f, ARN_XDS_TYPE_LISTENER, "l1", rs, 1, NULL, 0);
	const envoy_service_discovery_v3_DeltaDiscoveryRequest *r = req(f);
	assert_string_equal(type_of(r), ARN_XDS_TYPE_CLUSTER);
	assert_sv(envoy_service_discovery_v3_DeltaDiscoveryRequest_response_nonce(r), "c1");
	r = req(f);
	assert_string_equal(type_of(r), ARN_XDS_TYPE_LISTENER);
	assert_sv(envoy_service_discovery_v3_DeltaDiscoveryRequest_response_nonce(r), "l1");
	fx_free(f);
}

static void test_d2_duplicate_names_nacked(void **state)
{
	(void)state;
	struct fx *f = connected(false);
	struct res_spec twice[] = {{"a", "1"}, {"a", "2"}};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n1", twice, 2, NULL, 0);
	assert_non_null(strstr(error_msg(req(f)), "D2"));
	static const char *const rm2[] = {"x", "x"};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n2", NULL, 0, rm2, 2);
	assert_non_null(strstr(error_msg(req(f)), "D2"));
	struct res_spec one[] = {{"y", "1"}};
	static const char *const rm1[] = {"y"};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n3", one, 1, rm1, 1);
	assert_non_null(strstr(error_msg(req(f)), "'y'"));
	assert_int_equal(f->sink.n_apply, 0);
	fx_free(f);
}

static void test_d3_any_type_mismatch_nacked(void **state)
{
	(void)state;
	struct fx *f = connected(false);
	struct res_spec rs[] = {{"a", "1"}, {"l", "1", ARN_XDS_TYPE_LISTENER}};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n1", rs, 2, NULL, 0);
	const char *m = error_msg(req(f));
	assert_non_null(strstr(m, "D3"));
	assert_non_null(strstr(m, "'l'"));
	assert_int_equal(f->sink.n_apply, 0);
	fx_free(f);
}

static void test_d4_unrequested_resources_ignored(void **state)
{
	(void)state;
	struct fx *f = subscribed("t1", NULL);
	struct res_spec rs[] = {{"t1", "4"}, {"other", "9"}};
	deliver(f, TDS_LIKE, "n1", rs, 2, NULL, 0);
	assert_int_equal(f->sink.n_last_added, 1);
	assert_string_equal(f->sink.last_added[0], "t1");
	const envoy_service_discovery_v3_DeltaDiscoveryRequest *r = req(f);
	assert_null(envoy_service_discovery_v3_DeltaDiscoveryRequest_error_detail(r));
	reconnect(f);
	r = req_after(f, 5);
	assert_string_equal(irv(r, "t1"), "4");
	assert_null(irv(r, "other"));
	fx_free(f);
}

/* D5: in a partially applied response (X16) the resources that failed keep
 * the version held before (or stay unheld); the updates and removals that
 * were applied commit, although the response is NACKed. */
static void test_d5_partial_nack_commits_what_was_applied(void **state)
{
	(void)state;
	struct fx *f = connected(false);
	struct res_spec v1[] = {{"a", "1"}, {"c", "1"}, {"d", "1"}};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n1", v1, 3, NULL, 0);
	req(f);
	f->sink.fail_names[0] = "a"; /* an update that fails */
	f->sink.fail_names[1] = "d"; /* a removal that fails */
	f->sink.fail_names[2] = "e"; /* a new resource that fails */
	struct res_spec v2[] = {{"a", "2"}, {"b", "2"}, {"e", "2"}};
	static const char *const rm[] = {"c", "d"};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n2", v2, 3, rm, 2);
	const char *m = error_msg(req(f));
	assert_non_null(m);
	assert_non_null(strstr(m, "'a'"));
	assert_null(strstr(m, "'b'"));
	struct arn_xds_type_status ts;
	arn_xds_client_type_status(f->c, 1, &ts);
	assert_int_equal(ts.n_held, 3); /* a@1, b@2, d@1 */
	reconnect(f);
	req(f);
	const envoy_service_discovery_v3_DeltaDiscoveryRequest *r = req(f);
	assert_int_equal(
	    envoy_service_discovery_v3_DeltaDiscoveryRequest_initial_resource_versions_size(r), 3);
	assert_string_equal(irv(r, "a"), "1"); /* NACKed: never changes (D5) */
	assert_string_equal(irv(r, "b"), "2"); /* applied: commits */
	assert_null(irv(r, "c"));	       /* removed: commits (D6) */
	assert_string_equal(irv(r, "d"), "1"); /* removal failed: still held */
	assert_null(irv(r, "e"));	       /* never held */
	fx_free(f);
}

/* D5, the sequence a third-party control plane showed: listeners 'holder'
 * and 'gone-l' held; a response removes 'gone-l' and adds 'conflict',
 * which fails (its address is holder's). The NACK must not leave 'gone-l'
 * reported as held: a control plane rolled back and restarted would never
 * send it again. */
static void test_d5_removal_in_nacked_response_not_reported_held(void **state)
{
	(void)state;
	struct fx *f = connected(false);
	struct res_spec a[] = {{"gone-l", "A"}, {"holder", "A"}};
	deliver(f, ARN_XDS_TYPE_LISTENER, "n1", a, 2, NULL, 0);
	assert_null(error_msg(req(f)));
	f->sink.fail_names[0] = "conflict";
	f->sink.fail_reason = "Listener 'conflict': address: 198.18.0.2:80 is already used by "
			      "listener 'holder'";
	struct res_spec b[] = {{"conflict", "B"}};
	static const char *const rm[] = {"gone-l"};
	deliver(f, ARN_XDS_TYPE_LISTENER, "n2", b, 1, rm, 1);
	assert_int_equal(f->sink.n_last_removed, 1);
	const char *m = error_msg(req(f));
	assert_non_null(m);
	/* the reason names the resource already: not "'conflict': Listener 'conflict'" */
	assert_non_null(strstr(m, "X16): Listener 'conflict': address"));
	reconnect(f);
	const envoy_service_discovery_v3_DeltaDiscoveryRequest *r = req_after(f, 3);
	assert_string_equal(type_of(r), ARN_XDS_TYPE_LISTENER);
	assert_int_equal(
	    envoy_service_discovery_v3_DeltaDiscoveryRequest_initial_resource_versions_size(r), 1);
	assert_string_equal(irv(r, "holder"), "A");
	assert_null(irv(r, "gone-l"));
	assert_null(irv(r, "conflict"));
	fx_free(f);
}

/* D5: what was applied is held from the moment it is applied, not from
 * the ACK: a stream that ends while the data plane has not acknowledged an
 * update yet (X17) still reports the update (and a removal) on the next. */
static void test_d5_applied_is_held_before_the_ack(void **state)
{
	(void)state;
	struct fx *f = connected(false);
	struct res_spec v1[] = {{"a", "1"}, {"b", "1"}};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n1", v1, 2, NULL, 0);
	req(f);
	f->sink.token = 9; /* the ACK waits for the data plane */
	struct res_spec v2[] = {{"a", "2"}};
	static const char *const rm[] = {"b"};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n2", v2, 1, rm, 1);
	poll_(f);
	no_more_requests(f);
	reconnect(f);
	req(f);
	const envoy_service_discovery_v3_DeltaDiscoveryRequest *r = req(f);
	assert_string_equal(irv(r, "a"), "2");
	assert_null(irv(r, "b"));
	fx_free(f);
}

/* D5 with an on-demand type: a removal that commits keeps the subscription
 * and drops the version (D6); a failed update keeps the version held. */
static void test_d5_on_demand_partial_nack(void **state)
{
	(void)state;
	struct fx *f = connected(false);
	f->sink.interest[0] = "t1";
	f->sink.interest[1] = "t2";
	arn_xds_client_interest_changed(f->c);
	poll_(f);
	req(f);
	struct res_spec v1[] = {{"t1", "1"}, {"t2", "1"}};
	deliver(f, TDS_LIKE, "n1", v1, 2, NULL, 0);
	req(f);
	f->sink.fail_names[0] = "t2";
	struct res_spec v2[] = {{"t2", "2"}};
	static const char *const rm[] = {"t1"};
	deliver(f, TDS_LIKE, "n2", v2, 1, rm, 1);
	assert_non_null(error_msg(req(f)));
	reconnect(f);
	const envoy_service_discovery_v3_DeltaDiscoveryRequest *r = req_after(f, 5);
	assert_string_equal(type_of(r), TDS_LIKE);
	assert_int_equal(n_sub(r), 2); /* both still wanted (D7) */
	assert_null(irv(r, "t1"));
	assert_string_equal(irv(r, "t2"), "1");
	fx_free(f);
}

static void test_d6_initial_versions_leave_out_removed_and_unreceived(void **state)
{
	(void)state;
	struct fx *f = subscribed("t1", "t2");
	struct res_spec rs[] = {{"t1", "1"}};
	deliver(f, TDS_LIKE, "n1", rs, 1, NULL, 0);
	req(f);
	struct res_spec cl[] = {{"a", "1"}, {"b", "1"}};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n2", cl, 2, NULL, 0);
	req(f);
	static const char *const rm[] = {"b"};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n3", NULL, 0, rm, 1);
	req(f);
	static const char *const rmt[] = {"t1"};
	deliver(f, TDS_LIKE, "n4", NULL, 0, rmt, 1);
	req(f);
	reconnect(f);
	req(f);
	const envoy_service_discovery_v3_DeltaDiscoveryRequest *r = req(f);
	assert_string_equal(irv(r, "a"), "1");
	assert_null(irv(r, "b")); /* removed */
	req(f);
	req(f);
	req(f);
	r = req(f);
	assert_string_equal(type_of(r), TDS_LIKE);
	assert_null(irv(r, "t1")); /* removed, still wanted */
	assert_null(irv(r, "t2")); /* never received */
	assert_int_equal(n_sub(r), 2);
	fx_free(f);
}

static void test_d7_reconnect_resends_full_subscription(void **state)
{
	(void)state;
	struct fx *f = subscribed("t1", "t2");
	/* a change not sent yet when the stream fails */
	f->tr.writable = false;
	f->sink.interest[1] = NULL;
	arn_xds_client_interest_changed(f->c);
	poll_(f);
	no_more_requests(f);
	f->tr.writable = true;
	reconnect(f);
	const envoy_service_discovery_v3_DeltaDiscoveryRequest *r = req_after(f, 5);
	assert_int_equal(n_sub(r), 1);
	size_t k;
	assert_sv(
	    envoy_service_discovery_v3_DeltaDiscoveryRequest_resource_names_subscribe(r, &k)[0],
	    "t1");
	assert_int_equal(n_unsub(r), 0);
	fx_free(f);
}

/* G2: an ACK is also the next request. A subscription change that comes
 * while an ACK waits to be written travels in that same request (nonce
 * and resource_names_subscribe together), never in a separate one. */
static void test_g2_ack_carries_subscription_change(void **state)
{
	(void)state;
	struct fx *f = subscribed("t1", NULL);
	f->tr.writable = false;
	struct res_spec rs[] = {{"t1", "1"}};
	deliver(f, TDS_LIKE, "n1", rs, 1, NULL, 0);
	f->sink.interest[1] = "t2";
	arn_xds_client_interest_changed(f->c);
	poll_(f);
	no_more_requests(f);
	f->tr.writable = true;
	arn_xds_transport_writable(f->c);
	const envoy_service_discovery_v3_DeltaDiscoveryRequest *r = req(f);
	assert_string_equal(type_of(r), TDS_LIKE);
	assert_sv(envoy_service_discovery_v3_DeltaDiscoveryRequest_response_nonce(r), "n1");
	assert_null(envoy_service_discovery_v3_DeltaDiscoveryRequest_error_detail(r));
	size_t k;
	assert_int_equal(n_sub(r), 1);
	assert_sv(
	    envoy_service_discovery_v3_DeltaDiscoveryRequest_resource_names_subscribe(r, &k)[0],
	    "t2");
	no_more_requests(f);
	fx_free(f);
}

static void test_d8_interest_changes_merge(void **state)
{
	(void)state;
	struct fx *f = fx_new(false, false);
	f->sink.interest[0] = "keep";
	f->sink.interest[1] = "r";
	poll_(f);
	for (int i = 0; i < 6; i++)
		req(f);
	f->tr.writable = false;
	/* add-remove-add of "n" sends an add; remove-add-remove of "r" a remove */
	const char *steps[3][3] = {{"keep", "n", NULL}, {"keep", "r", NULL}, {"keep", "n", NULL}};
	for (int s = 0; s < 3; s++) {
		f->sink.interest[0] = steps[s][0];
		f->sink.interest[1] = steps[s][1];
		f->sink.interest[2] = NULL;
		arn_xds_client_interest_changed(f->c);
		poll_(f);
	}
	no_more_requests(f);
	f->tr.writable = true;
	arn_xds_transport_writable(f->c);
	const envoy_service_discovery_v3_DeltaDiscoveryRequest *r = req(f);
	size_t k;
	assert_int_equal(n_sub(r), 1);
	assert_sv(
	    envoy_service_discovery_v3_DeltaDiscoveryRequest_resource_names_subscribe(r, &k)[0],
	    "n");
	assert_int_equal(n_unsub(r), 1);
	assert_sv(
	    envoy_service_discovery_v3_DeltaDiscoveryRequest_resource_names_unsubscribe(r, &k)[0],
	    "r");
	no_more_requests(f);
	fx_free(f);
}

static void test_d9_long_errors_truncated_not_dropped(void **state)
{
	(void)state;
	struct fx *f = connected(false);
	char *big = malloc(20001);
	memset(big, 'e', 20000);
	big[20000] = 0;
	f->sink.fail_names[0] = "a";
	f->sink.fail_reason = big;
	struct res_spec rs[] = {{"a", "1"}};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n1", rs, 1, NULL, 0);
	const char *m = error_msg(req(f));
	assert_non_null(m);
	assert_true(strlen(m) <= ARN_XDS_ERROR_DETAIL_MAX);
	assert_true(strlen(m) > 1000);
	assert_non_null(strstr(m, "'a'"));
	assert_string_equal(m + strlen(m) - strlen("...(truncated)"), "...(truncated)");
	free(big);
	/* the helper keeps UTF-8 whole */
	struct arn_sb sb = ARN_SB_INIT;
	arn_xds_truncate_error(
	    "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 17, &sb);
	assert_string_equal(arn_sb_cstr(&sb), "\xc3\xa9...(truncated)");
	arn_sb_free(&sb);
	fx_free(f);
}

static void test_d10_unsubscribed_type_ignored(void **state)
{
	(void)state;
	struct fx *f = connected(false);
	struct res_spec rs[] = {{"x", "1"}};
	deliver(f, TDS_LIKE, "n1", rs, 1, NULL, 0);
	assert_int_equal(f->sink.n_apply, 0);
	poll_(f);
	no_more_requests(f);
	fx_free(f);
}

static void test_heartbeat_skipped(void **state)
{
	(void)state;
	struct fx *f = connected(false);
	struct res_spec rs[] = {{"a", "1"}};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n1", rs, 1, NULL, 0);
	req(f);
	struct res_spec hb[] = {{"a", "1", NULL, false, true}};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n2", hb, 1, NULL, 0);
	assert_int_equal(f->sink.n_apply, 1); /* nothing new to apply */
	assert_null(error_msg(req(f)));
	/* a body-less resource that is not a heartbeat is refused */
	struct res_spec nb[] = {{"a", "2", NULL, false, true}};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n3", nb, 1, NULL, 0);
	assert_non_null(error_msg(req(f)));
	fx_free(f);
}

/* ---- resource TTLs (Envoy's Resource.ttl and heartbeats) ----------------------------- */

#define TTL(sec) .has_ttl = true, .ttl_s = (sec)

static struct arn_xds_type_status cluster_status(struct fx *f)
{
	struct arn_xds_type_status ts;
	assert_int_equal(arn_xds_client_type_status(f->c, 1, &ts), 0);
	assert_string_equal(ts.type_url, ARN_XDS_TYPE_CLUSTER);
	return ts;
}

/* A resource whose TTL passes is removed as if the control plane had
 * removed it: through the sink, and no longer reported held (D6, X5). It is
 * one update of its type, answered to no one (no nonce). */
static void test_ttl_expiry_removes_as_if_removed(void **state)
{
	(void)state;
	struct fx *f = connected(false);
	struct res_spec rs[] = {
	    {"a", "1", TTL(5)}, {"b", "1"}, {"c", "1", TTL(5), .ttl_ns = 500000000}};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n1", rs, 3, NULL, 0);
	assert_null(error_msg(req(f)));
	assert_int_equal(cluster_status(f).n_ttl, 2);
	int applies = f->sink.n_apply;
	f->now += 4999;
	poll_(f);
	assert_int_equal(f->sink.n_apply, applies); /* not yet */
	f->now += 1;
	poll_(f);
	assert_int_equal(f->sink.n_apply, applies + 1);
	assert_int_equal(f->sink.n_last_added, 0);
	assert_int_equal(f->sink.n_last_removed, 1);
	assert_string_equal(f->sink.last_removed[0], "a");
	no_more_requests(f); /* nothing to answer */
	struct arn_xds_type_status ts = cluster_status(f);
	assert_int_equal(ts.n_held, 2);
	assert_int_equal(ts.n_ttl, 1);
	assert_int_equal(ts.n_ttl_updates, 1);
	assert_int_equal(ts.n_ttl_expired, 1);
	assert_int_equal(ts.last_ttl_update_ms, f->now);
	assert_int_equal(ts.n_responses, 1); /* not a response */
	f->now += 500;			     /* c: 5.5 s */
	poll_(f);
	assert_string_equal(f->sink.last_removed[0], "c");
	ts = cluster_status(f);
	assert_int_equal(ts.n_ttl_updates, 2);
	assert_int_equal(ts.n_ttl_expired, 2);
	assert_int_equal(ts.n_ttl, 0);
	f->now += 60000;
	poll_(f);
	assert_int_equal(f->sink.n_apply, applies + 2); /* b has no TTL */
	reconnect(f);
	req(f);
	const envoy_service_discovery_v3_DeltaDiscoveryRequest *r = req(f);
	assert_int_equal(
	    envoy_service_discovery_v3_DeltaDiscoveryRequest_initial_resource_versions_size(r), 1);
	assert_string_equal(irv(r, "b"), "1");
	fx_free(f);
}

/* TTLs run whatever the stream does: they are what protects a proxy whose
 * control plane went away. */
static void test_ttl_runs_while_disconnected(void **state)
{
	(void)state;
	struct fx *f = connected(false);
	struct res_spec rs[] = {{"a", "1", TTL(30)}};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n1", rs, 1, NULL, 0);
	req(f);
	f->tr.open_rc = -ECONNREFUSED; /* the control plane is gone */
	arn_xds_transport_closed(f->c, 14, "gone");
	for (int i = 0; i < 40; i++) {
		f->now += 1000;
		poll_(f);
	}
	struct arn_xds_status st;
	arn_xds_client_status(f->c, &st);
	assert_int_equal(st.state, ARN_XDS_BACKOFF);
	assert_int_equal(f->sink.n_last_removed, 1);
	assert_string_equal(f->sink.last_removed[0], "a");
	assert_int_equal(cluster_status(f).n_held, 0);
	fx_free(f);
}

/* A heartbeat (no body, the version held) refreshes the TTL without an
 * update; one without a ttl clears it, as does an update without one. */
static void test_ttl_heartbeat_refreshes_and_clears(void **state)
{
	(void)state;
	struct fx *f = connected(false);
	struct res_spec rs[] = {{"a", "1", TTL(2)}, {"b", "1", TTL(2)}, {"c", "1", TTL(2)}};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n1", rs, 3, NULL, 0);
	req(f);
	int applies = f->sink.n_apply;
	f->now += 1500;
	struct res_spec hb[] = {{"a", "1", .no_body = true, TTL(2)}, {"b", "1", .no_body = true}};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "h1", hb, 2, NULL, 0);
	assert_int_equal(f->sink.n_apply, applies); /* nothing to apply */
	assert_null(error_msg(req(f)));
	struct res_spec up[] = {{"c", "2"}}; /* an update without a ttl */
	deliver(f, ARN_XDS_TYPE_CLUSTER, "u1", up, 1, NULL, 0);
	req(f);
	applies = f->sink.n_apply;
	f->now += 1000; /* 2.5 s: the first TTL would have passed */
	poll_(f);
	assert_int_equal(f->sink.n_apply, applies);
	assert_int_equal(cluster_status(f).n_held, 3);
	assert_int_equal(cluster_status(f).n_ttl, 1); /* a only */
	f->now += 999;				      /* 1999 ms after the heartbeat */
	poll_(f);
	assert_int_equal(f->sink.n_apply, applies);
	f->now += 1;
	poll_(f);
	assert_int_equal(f->sink.n_apply, applies + 1);
	assert_string_equal(f->sink.last_removed[0], "a");
	f->now += 3600 * 1000;
	poll_(f);
	assert_int_equal(f->sink.n_apply, applies + 1);
	assert_int_equal(cluster_status(f).n_held, 2);
	/* a heartbeat for what is no longer held is not one: refused */
	struct res_spec late[] = {{"a", "1", .no_body = true, TTL(2)}};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "h2", late, 1, NULL, 0);
	assert_non_null(error_msg(req(f)));
	fx_free(f);
}

/* D5 and X15 for TTLs: a response refused whole refreshes nothing; a
 * resource that fails to apply (X16) does not take the response's TTL;
 * a negative ttl refuses the response, naming the resource. */
static void test_ttl_follows_d5_and_x15(void **state)
{
	(void)state;
	struct fx *f = connected(false);
	struct res_spec rs[] = {{"a", "1", TTL(2)}, {"b", "1"}};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n1", rs, 2, NULL, 0);
	req(f);
	/* X15: refused whole, the heartbeat in it does not count */
	struct res_spec bad[] = {{"a", "1", .no_body = true, TTL(60)}, {"x", "1", NULL, true}};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n2", bad, 2, NULL, 0);
	assert_non_null(strstr(error_msg(req(f)), "X15"));
	/* X16: b fails, so its ttl does not take */
	f->sink.fail_names[0] = "b";
	struct res_spec part[] = {{"b", "2", TTL(1)}, {"c", "1", TTL(1)}};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n3", part, 2, NULL, 0);
	assert_non_null(error_msg(req(f)));
	f->sink.fail_names[0] = NULL;
	/* ttl < 0: the whole response is refused (X15) */
	struct res_spec neg[] = {{"d", "1", TTL(-1)}};
	int applies = f->sink.n_apply;
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n4", neg, 1, NULL, 0);
	assert_int_equal(f->sink.n_apply, applies);
	const char *m = error_msg(req(f));
	assert_non_null(strstr(m, "'d': ttl:"));
	assert_non_null(strstr(m, "X15"));
	f->now += 1000; /* c expires */
	poll_(f);
	assert_int_equal(f->sink.n_last_removed, 1);
	assert_string_equal(f->sink.last_removed[0], "c");
	f->now += 1000; /* a expires: the refused heartbeat did not refresh it */
	poll_(f);
	assert_int_equal(f->sink.n_last_removed, 1);
	assert_string_equal(f->sink.last_removed[0], "a");
	f->now += 3600 * 1000;
	poll_(f);
	struct arn_xds_type_status ts = cluster_status(f);
	assert_int_equal(ts.n_ttl_expired, 2);
	assert_int_equal(ts.n_held, 1); /* b, at version 1, without a TTL */
	fx_free(f);
}

/* A removal the sink refuses (a static resource, say) keeps the resource
 * held (D5) and spends its TTL, as in Envoy; one the sink could not attempt
 * (out of memory) is tried again a second later. */
static void test_ttl_expiry_refused_by_the_sink(void **state)
{
	(void)state;
	struct fx *f = connected(false);
	struct res_spec rs[] = {{"a", "1", TTL(1)}, {"b", "1", TTL(1)}};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n1", rs, 2, NULL, 0);
	req(f);
	f->sink.fail_names[0] = "a";
	f->now += 1000;
	poll_(f);
	f->sink.fail_names[0] = NULL;
	struct arn_xds_type_status ts = cluster_status(f);
	assert_int_equal(ts.n_held, 1); /* a */
	assert_int_equal(ts.n_ttl, 0);
	assert_int_equal(ts.n_ttl_expired, 1); /* b */
	struct res_spec c[] = {{"c", "1", TTL(1)}};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n2", c, 1, NULL, 0);
	req(f);
	f->sink.apply_rc = -ENOMEM;
	f->now += 1000;
	poll_(f);
	assert_int_equal(cluster_status(f).n_held, 2);
	f->sink.apply_rc = 0;
	f->now += 999;
	int applies = f->sink.n_apply;
	poll_(f);
	assert_int_equal(f->sink.n_apply, applies);
	f->now += 1;
	poll_(f);
	assert_int_equal(f->sink.n_apply, applies + 1);
	assert_string_equal(f->sink.last_removed[0], "c");
	assert_int_equal(cluster_status(f).n_held, 1);
	fx_free(f);
}

static void test_state_json(void **state)
{
	(void)state;
	struct fx *f = connected(false);
	struct res_spec rs[] = {{"a\"q", "1"}};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n1", rs, 1, NULL, 0);
	struct arn_sb sb = ARN_SB_INIT;
	arn_xds_client_state_json(f->c, &sb);
	const char *j = arn_sb_cstr(&sb);
	assert_non_null(strstr(j, "\"state\":\"CONNECTED\""));
	assert_non_null(strstr(j, "\"cluster\":\"xds_a\""));
	assert_non_null(strstr(j, "\"name\":\"a\\\"q\",\"version\":\"1\""));
	assert_non_null(strstr(j, "\"last_acked_nonce\":\"n1\""));
	assert_non_null(strstr(j, "\"responses\":1,\"acks\":1,\"nacks\":0"));
	assert_null(strstr(j, "ttl_ms"));
	struct res_spec t[] = {{"t", "1", TTL(3)}};
	deliver(f, ARN_XDS_TYPE_CLUSTER, "n2", t, 1, NULL, 0);
	f->now += 1000;
	arn_sb_reset(&sb);
	arn_xds_client_state_json(f->c, &sb);
	j = arn_sb_cstr(&sb);
	assert_non_null(strstr(j, "{\"name\":\"t\",\"version\":\"1\",\"subscribed\":false,"
				  "\"ttl_ms\":2000}"));
	assert_non_null(strstr(j, "\"ttl_running\":1,\"ttl_expiries\":0,\"ttl_expired\":0"));
	arn_sb_free(&sb);
	fx_free(f);
}

/* X7, X9: what the client takes from the bootstrap. */
static void test_x9_options_from_bootstrap(void **state)
{
	(void)state;
	static const char yaml[] =
	    "envoy_bootstrap:\n"
	    "  node: {id: boot-node, cluster: boot-cl, locality: {zone: z1}}\n"
	    "  dynamic_resources:\n"
	    "    ads_config:\n"
	    "      api_type: DELTA_GRPC\n"
	    "      set_node_on_first_message_only: true\n"
	    "      grpc_services:\n"
	    "        - envoy_grpc: {cluster_name: cp_b}\n"
	    "        - envoy_grpc: {cluster_name: cp_a}\n"
	    "  static_resources:\n"
	    "    clusters:\n"
	    "      - name: cp_a\n"
	    "        type: STATIC\n"
	    "        connect_timeout: 1s\n"
	    "        http2_protocol_options: {}\n"
	    "        load_assignment:\n"
	    "          cluster_name: cp_a\n"
	    "          endpoints:\n"
	    "            - lb_endpoints:\n"
	    "                - endpoint: {address: {socket_address: {address: 127.0.0.5, "
	    "port_value: 1}}}\n"
	    "            - lb_endpoints:\n"
	    "                - endpoint: {address: {socket_address: {address: 127.0.0.6, "
	    "port_value: 2}}}\n"
	    "      - name: cp_b\n"
	    "        type: STATIC\n"
	    "        connect_timeout: 1s\n"
	    "        http2_protocol_options: {}\n"
	    "        load_assignment:\n"
	    "          cluster_name: cp_b\n"
	    "          endpoints:\n"
	    "            - lb_endpoints:\n"
	    "                - endpoint: {address: {socket_address: {address: 127.0.0.7, "
	    "port_value: 3}}}\n";
	struct arn_bootstrap_overrides ov = {.service_node = "cli-node"};
	struct arn_bootstrap *b = tboot_must_load(yaml, &ov);
	struct arn_xds_options o = {0};
	struct arn_xds_options_holder *h = NULL;
	assert_int_equal(arn_xds_options_from_bootstrap(b, &o, &h), 0);
	assert_string_equal(o.node_id, "cli-node");
	assert_string_equal(o.node_cluster, "boot-cl");
	assert_true(o.node_first_only);
	assert_int_equal(o.n_servers, 2);
	assert_string_equal(o.servers[0].cluster, "cp_b"); /* grpc_services order */
	assert_int_equal(o.servers[0].n_endpoints, 1);
	assert_string_equal(o.servers[1].cluster, "cp_a");
	assert_int_equal(o.servers[1].n_endpoints, 2); /* across localities */
	assert_string_equal(o.servers[1].hosts[1], "127.0.0.6");
	assert_int_equal(o.servers[1].ports[1], 2);
	/* the node goes out whole, with id and cluster after overrides */
	struct fake_tr tr = {.writable = true};
	struct fake_sink sk = {0};
	o.sink = &sink_ops;
	o.sink_ctx = &sk;
	o.transport = &fake_ops;
	o.transport_ctx = &tr;
	struct arn_xds_client *c = arn_xds_client_new(&o);
	assert_non_null(c);
	arn_xds_client_poll(c, 0);
	assert_string_equal(tr.host, "127.0.0.7");
	assert_int_equal(tr.n_sent, 5);
	upb_Arena *a = upb_Arena_New();
	const envoy_service_discovery_v3_DeltaDiscoveryRequest *r =
	    envoy_service_discovery_v3_DeltaDiscoveryRequest_parse(tr.sent[0], tr.sent_len[0], a);
	const envoy_config_core_v3_Node *n =
	    envoy_service_discovery_v3_DeltaDiscoveryRequest_node(r);
	assert_non_null(n);
	assert_sv(envoy_config_core_v3_Node_id(n), "cli-node");
	assert_sv(envoy_config_core_v3_Node_cluster(n), "boot-cl");
	assert_non_null(envoy_config_core_v3_Node_locality(n));
	r = envoy_service_discovery_v3_DeltaDiscoveryRequest_parse(tr.sent[1], tr.sent_len[1], a);
	assert_null(envoy_service_discovery_v3_DeltaDiscoveryRequest_node(r)); /* first only */
	upb_Arena_Free(a);
	arn_xds_client_free(c);
	for (int i = 0; i < tr.n_sent; i++)
		free(tr.sent[i]);
	arn_xds_options_release(h);
	arn_bootstrap_free(b);
}

/* ---- TLS to the control plane ------------------------------------------------ */

/* Envoy's SAN check (DefaultCertValidator), as the gRPC verifier applies it. */
static void test_tls_san_matchers_mean_what_they_mean_in_envoy(void **state)
{
	(void)state;
	const char *dns[] = {"xds.example.com", "*.cp.example.com"};
	const char *uri[] = {"spiffe://example.com/ns/cp/sa/xds"};
	const char *ip[] = {"10.0.0.7"};
	const struct arn_xds_peer_sans p = {
	    .dns = dns, .n_dns = 2, .uri = uri, .n_uri = 1, .ip = ip, .n_ip = 1};
	struct arn_xds_san_matcher m;
	struct arn_xds_tls t = {.ca_pem = "x", .san = &m, .n_san = 1};
#define SAN(ty, h, v, ic, want)                                                                    \
	do {                                                                                       \
		m = (struct arn_xds_san_matcher){ty, h, v, ic};                                    \
		if (arn_xds_tls_san_ok(&t, &p) != (want))                                          \
			fail_msg("%s %s: wanted %s", #h, v, (want) ? "match" : "no match");        \
	} while (0)
	SAN(ARN_XDS_SAN_DNS, ARN_XDS_MATCH_EXACT, "xds.example.com", false, true);
	SAN(ARN_XDS_SAN_DNS, ARN_XDS_MATCH_EXACT, "XDS.example.com", false,
	    true); /* DNS: no case */
	SAN(ARN_XDS_SAN_DNS, ARN_XDS_MATCH_EXACT, "other.example.com", false, false);
	/* a wildcard certificate name covers one label, not two, not zero */
	SAN(ARN_XDS_SAN_DNS, ARN_XDS_MATCH_EXACT, "a.cp.example.com", false, true);
	SAN(ARN_XDS_SAN_DNS, ARN_XDS_MATCH_EXACT, "a.b.cp.example.com", false, false);
	SAN(ARN_XDS_SAN_DNS, ARN_XDS_MATCH_EXACT, "cp.example.com", false, false);
	SAN(ARN_XDS_SAN_DNS, ARN_XDS_MATCH_SUFFIX, ".example.com", false, true);
	SAN(ARN_XDS_SAN_DNS, ARN_XDS_MATCH_PREFIX, "XDS.", false, false);
	SAN(ARN_XDS_SAN_DNS, ARN_XDS_MATCH_PREFIX, "XDS.", true, true);
	SAN(ARN_XDS_SAN_URI, ARN_XDS_MATCH_CONTAINS, "/sa/xds", false, true);
	SAN(ARN_XDS_SAN_URI, ARN_XDS_MATCH_EXACT, "xds.example.com", false, false); /* typed */
	SAN(ARN_XDS_SAN_EMAIL, ARN_XDS_MATCH_CONTAINS, "", false, false);	    /* has none */
	SAN(ARN_XDS_SAN_IP, ARN_XDS_MATCH_EXACT, "10.0.0.7", false, true);
	/* match_subject_alt_names (untyped) looks at DNS, URI, email and IP alike */
	SAN(ARN_XDS_SAN_ANY, ARN_XDS_MATCH_EXACT, "10.0.0.7", false, true);
	SAN(ARN_XDS_SAN_ANY, ARN_XDS_MATCH_PREFIX, "spiffe://", false, true);
	SAN(ARN_XDS_SAN_ANY, ARN_XDS_MATCH_EXACT, "10.0.0.8", false, false);
#undef SAN
	/* several matchers: any one is enough; none: any certificate */
	struct arn_xds_san_matcher two[] = {
	    {ARN_XDS_SAN_DNS, ARN_XDS_MATCH_EXACT, "nope", false},
	    {ARN_XDS_SAN_IP, ARN_XDS_MATCH_EXACT, "10.0.0.7", false},
	};
	t.san = two;
	t.n_san = 2;
	assert_true(arn_xds_tls_san_ok(&t, &p));
	t.n_san = 1;
	assert_false(arn_xds_tls_san_ok(&t, &p));
	t.n_san = 0;
	assert_true(arn_xds_tls_san_ok(&t, &p));
}

#define TEST_PEM(what) "-----BEGIN " what "-----\nAAAA\n-----END " what "-----\n"

/* The xDS cluster's UpstreamTlsContext as the client gets it: secrets from
 * static_resources.secrets (inline, file, environment), sni, SAN matchers in
 * Envoy's merge order; copied by the client and handed to open(). */
static void test_tls_options_from_bootstrap_reach_the_transport(void **state)
{
	(void)state;
	char keyfile[] = "/tmp/arn-xds-test-key-XXXXXX";
	int fd = mkstemp(keyfile);
	assert_true(fd >= 0);
	const char key[] = TEST_PEM("PRIVATE KEY");
	assert_int_equal(write(fd, key, sizeof(key) - 1), (ssize_t)(sizeof(key) - 1));
	close(fd);
	setenv("ARN_TEST_XDS_CA", TEST_PEM("CERTIFICATE") "ca", 1);
	char yaml[4096];
	snprintf(yaml, sizeof(yaml),
		 "envoy_bootstrap:\n"
		 "  node: {id: n, cluster: c}\n"
		 "  dynamic_resources:\n"
		 "    ads_config:\n"
		 "      grpc_services: [{envoy_grpc: {cluster_name: cp}}, {envoy_grpc: "
		 "{cluster_name: plain}}]\n"
		 "  static_resources:\n"
		 "    secrets:\n"
		 "      - name: client\n"
		 "        tls_certificate:\n"
		 "          certificate_chain: {inline_string: \"%s\"}\n"
		 "          private_key: {filename: %s}\n"
		 "      - name: ca\n"
		 "        validation_context:\n"
		 "          trusted_ca: {environment_variable: ARN_TEST_XDS_CA}\n"
		 "          match_subject_alt_names: [{suffix: .secret.test}]\n"
		 "    clusters:\n"
		 "      - name: cp\n"
		 "        type: STATIC\n"
		 "        http2_protocol_options: {}\n"
		 "        transport_socket:\n"
		 "          name: envoy.transport_sockets.tls\n"
		 "          typed_config:\n"
		 "            \"@type\": type.googleapis.com/"
		 "envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext\n"
		 "            sni: cp.test\n"
		 "            common_tls_context:\n"
		 "              tls_certificate_sds_secret_configs: [{name: client}]\n"
		 "              combined_validation_context:\n"
		 "                validation_context_sds_secret_config: {name: ca}\n"
		 "                default_validation_context:\n"
		 "                  match_typed_subject_alt_names:\n"
		 "                    - {san_type: DNS, matcher: {exact: cp.test}}\n"
		 "                    - {san_type: URI, matcher: {prefix: \"spiffe://\", "
		 "ignore_case: true}}\n"
		 "        load_assignment: {cluster_name: cp, endpoints: [{lb_endpoints: "
		 "[{endpoint: {address: {socket_address: {address: 10.1.2.3, port_value: "
		 "18000}}}}]}]}\n"
		 "      - name: plain\n"
		 "        type: STATIC\n"
		 "        http2_protocol_options: {}\n"
		 "        load_assignment: {cluster_name: plain, endpoints: [{lb_endpoints: "
		 "[{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: "
		 "18001}}}}]}]}\n",
		 "-----BEGIN CERTIFICATE-----\\nBBBB\\n-----END CERTIFICATE-----\\n", keyfile);
	struct arn_bootstrap *b = tboot_must_load(yaml, NULL);
	struct arn_xds_options o = {0};
	struct arn_xds_options_holder *h = NULL;
	assert_int_equal(arn_xds_options_from_bootstrap(b, &o, &h), 0);
	unlink(keyfile);
	assert_int_equal(o.n_servers, 2);
	const struct arn_xds_tls *t = o.servers[0].tls;
	assert_non_null(t);
	assert_null(o.servers[1].tls); /* loopback in plaintext */
	assert_string_equal(t->ca_pem, TEST_PEM("CERTIFICATE") "ca");
	assert_string_equal(t->cert_pem,
			    "-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----\n");
	assert_string_equal(t->key_pem, key);
	assert_string_equal(t->sni, "cp.test");
	/* default_validation_context's matchers first, then the secret's */
	assert_int_equal(t->n_san, 3);
	assert_int_equal(t->san[0].type, ARN_XDS_SAN_DNS);
	assert_int_equal(t->san[0].how, ARN_XDS_MATCH_EXACT);
	assert_string_equal(t->san[0].value, "cp.test");
	assert_int_equal(t->san[1].type, ARN_XDS_SAN_URI);
	assert_int_equal(t->san[1].how, ARN_XDS_MATCH_PREFIX);
	assert_true(t->san[1].ignore_case);
	assert_int_equal(t->san[2].type, ARN_XDS_SAN_ANY);
	assert_int_equal(t->san[2].how, ARN_XDS_MATCH_SUFFIX);
	assert_string_equal(t->san[2].value, ".secret.test");

	/* the client keeps its own copy and hands it to open() */
	struct fake_tr tr = {.writable = true};
	struct fake_sink sk = {0};
	o.sink = &sink_ops;
	o.sink_ctx = &sk;
	o.transport = &fake_ops;
	o.transport_ctx = &tr;
	struct arn_xds_client *c = arn_xds_client_new(&o);
	assert_non_null(c);
	arn_xds_options_release(h); /* the client copied everything */
	arn_bootstrap_free(b);
	arn_xds_client_poll(c, 0);
	assert_string_equal(tr.host, "10.1.2.3");
	assert_non_null(tr.tls);
	assert_ptr_not_equal(tr.tls, t);
	assert_string_equal(tr.tls->sni, "cp.test");
	assert_string_equal(tr.tls->key_pem, key);
	assert_int_equal(tr.tls->n_san, 3);
	assert_string_equal(tr.tls->san[2].value, ".secret.test");
	struct arn_xds_status st;
	arn_xds_client_status(c, &st);
	assert_string_equal(st.channel, "mTLS");
	struct arn_sb sb = ARN_SB_INIT;
	arn_xds_client_state_json(c, &sb);
	assert_non_null(strstr(arn_sb_cstr(&sb),
			       "\"cluster\":\"cp\",\"channel\":\"mTLS\",\"sni\":\"cp.test\""));
	assert_non_null(
	    strstr(arn_sb_cstr(&sb), "\"cluster\":\"plain\",\"channel\":\"plaintext\""));
	arn_sb_free(&sb);
	arn_xds_client_free(c);
	for (int i = 0; i < tr.n_sent; i++)
		free(tr.sent[i]);
	unsetenv("ARN_TEST_XDS_CA");
}

/* A secret file that cannot be read fails start-up naming cluster and field. */
static void test_tls_unreadable_secret_file_refused(void **state)
{
	(void)state;
	static const char yaml[] =
	    "envoy_bootstrap:\n"
	    "  node: {id: n, cluster: c}\n"
	    "  dynamic_resources:\n"
	    "    ads_config: {grpc_services: [{envoy_grpc: {cluster_name: cp}}]}\n"
	    "  static_resources:\n"
	    "    secrets:\n"
	    "      - {name: ca, validation_context: {trusted_ca: {filename: "
	    "/nonexistent/ca.pem}}}\n"
	    "    clusters:\n"
	    "      - name: cp\n"
	    "        type: STATIC\n"
	    "        http2_protocol_options: {}\n"
	    "        transport_socket:\n"
	    "          typed_config:\n"
	    "            \"@type\": type.googleapis.com/"
	    "envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext\n"
	    "            common_tls_context: {validation_context_sds_secret_config: {name: ca}}\n"
	    "        load_assignment: {cluster_name: cp, endpoints: [{lb_endpoints: "
	    "[{endpoint: {address: {socket_address: {address: 10.1.2.3, port_value: 1}}}}]}]}\n";
	struct arn_bootstrap *b = tboot_must_load(yaml, NULL);
	struct arn_xds_options o = {0};
	struct arn_xds_options_holder *h = NULL;
	assert_int_equal(arn_xds_options_from_bootstrap(b, &o, &h), -EINVAL);
	assert_null(h);
	arn_bootstrap_free(b);
}

int main(void)
{
	arn_log_set_spec("off", NULL);
	if (arn_proto_init() != 0)
		return 1;
	g_arena = upb_Arena_New();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_x3_x1_wildcards_on_connect_in_order),
	    cmocka_unit_test(test_x7_node_in_requests),
	    cmocka_unit_test(test_g1_ack_echoes_nonce),
	    cmocka_unit_test(test_x15_undecodable_resource_nacks_whole_response),
	    cmocka_unit_test(test_x15_sink_decodes_undecodable_resource),
	    cmocka_unit_test(test_x15_conversion_refusal_nacks_whole_response),
	    cmocka_unit_test(test_x16_partial_failure_names_each_resource),
	    cmocka_unit_test(test_g8_empty_response_counted_and_acked),
	    cmocka_unit_test(test_x17_ack_waits_for_internal_ack),
	    cmocka_unit_test(test_x17_ack_polled_promptly),
	    cmocka_unit_test(test_x17_timeout_nacks),
	    cmocka_unit_test(test_x5_initial_resource_versions_on_reconnect),
	    cmocka_unit_test(test_x18_backoff_doubles_from_1s_to_20s),
	    cmocka_unit_test(test_x18_jitter_never_over_20s),
	    cmocka_unit_test(test_x18_jitter_differs_between_processes),
	    cmocka_unit_test(test_x9_round_robin_and_cycling_every_10s),
	    cmocka_unit_test(test_x4_g4_on_demand_subscribe_and_unsubscribe),
	    cmocka_unit_test(test_g3_removal_goes_to_sink_and_drops_version),
	    cmocka_unit_test(test_d1_nonces_and_pending_acks_reset_on_reconnect),
	    cmocka_unit_test(test_d2_duplicate_names_nacked),
	    cmocka_unit_test(test_d3_any_type_mismatch_nacked),
	    cmocka_unit_test(test_d4_unrequested_resources_ignored),
	    cmocka_unit_test(test_d5_partial_nack_commits_what_was_applied),
	    cmocka_unit_test(test_d5_removal_in_nacked_response_not_reported_held),
	    cmocka_unit_test(test_d5_applied_is_held_before_the_ack),
	    cmocka_unit_test(test_d5_on_demand_partial_nack),
	    cmocka_unit_test(test_d6_initial_versions_leave_out_removed_and_unreceived),
	    cmocka_unit_test(test_d7_reconnect_resends_full_subscription),
	    cmocka_unit_test(test_g2_ack_carries_subscription_change),
	    cmocka_unit_test(test_d8_interest_changes_merge),
	    cmocka_unit_test(test_d9_long_errors_truncated_not_dropped),
	    cmocka_unit_test(test_d10_unsubscribed_type_ignored),
	    cmocka_unit_test(test_heartbeat_skipped),
	    cmocka_unit_test(test_ttl_expiry_removes_as_if_removed),
	    cmocka_unit_test(test_ttl_runs_while_disconnected),
	    cmocka_unit_test(test_ttl_heartbeat_refreshes_and_clears),
	    cmocka_unit_test(test_ttl_follows_d5_and_x15),
	    cmocka_unit_test(test_ttl_expiry_refused_by_the_sink),
	    cmocka_unit_test(test_state_json),
	    cmocka_unit_test(test_x9_options_from_bootstrap),
	    cmocka_unit_test(test_tls_san_matchers_mean_what_they_mean_in_envoy),
	    cmocka_unit_test(test_tls_options_from_bootstrap_reach_the_transport),
	    cmocka_unit_test(test_tls_unreadable_secret_file_refused),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	upb_Arena_Free(g_arena);
	return rc;
}
