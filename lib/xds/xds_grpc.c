/*
 * The gRPC C core transport: one DeltaAggregatedResources call on a channel
 * made for each connection attempt, driven by a completion queue that
 * arn_xds_client_poll() drains on the control lcore.
 *
 * A fresh channel per attempt (with a local subchannel pool) makes every
 * attempt a real new connection to the endpoint chosen by the client's
 * round-robin (X9), and keeps gRPC's own reconnect backoff out of the way
 * of the client's (X18). The channel's receive limit is 10 MiB (X6): gRPC
 * fails a larger message with RESOURCE_EXHAUSTED, which ends the stream.
 *
 * A stream the client closed may still have operations in flight; it is
 * freed when the last of their tags comes back.
 *
 * TLS (the xDS cluster's UpstreamTlsContext, read by xds_bootstrap.c) uses
 * gRPC's grpc_tls_credentials_options: the CA and the client's key pair from
 * a static provider; the chain is verified by gRPC, then a custom verifier
 * applies Envoy's SAN matchers; no host name check and no per-call host
 * check (Envoy does neither: the matchers say who the peer must be). `sni`
 * becomes the target name override, which gRPC sends as SNI. Without it
 * gRPC 1.51 sends the endpoint's IP address as SNI, where Envoy sends none;
 * the C API has no way to send none (docs/configuration.md says so).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/string_util.h>
#include <grpc/support/time.h>

#include "arn_log.h"
#include "arn_xds.h"
#include "xds_int.h"

#define ADS_METHOD "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources"
#define WATCH_MS 1000 /* connectivity watch re-armed this often; bounds draining */

enum tag_kind { TAG_INIT = 0, TAG_MD, TAG_STATUS, TAG_RECV, TAG_SEND, TAG_WATCH, TAG_N };

struct gstream;
struct gtag {
	struct gstream *s;
	enum tag_kind kind;
};

struct gstream {
	struct gtr *tr;
	grpc_channel *ch;
	grpc_call *call;
	int pending; /* operations in flight */
	bool dead;   /* closed: no more events to the client */
	grpc_metadata_array md, trailing;
	grpc_status_code status;
	grpc_slice details;
	grpc_byte_buffer *recv_buf;
	grpc_byte_buffer *send_buf;
	grpc_connectivity_state conn;
	struct gtag tags[TAG_N];
	char target[320];
};

struct gtr {
	struct arn_xds_client *c;
	grpc_completion_queue *cq;
	struct gstream *cur;
	int live; /* streams not freed yet */
};

static gpr_timespec in_ms(int ms)
{
	return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(ms, GPR_TIMESPAN));
}

/* ---- TLS ------------------------------------------------------------------ */

/* The verifier's own copy of the matchers: gRPC may keep the verifier for as
 * long as it likes, so it borrows nothing from the client. */
struct gverifier {
	grpc_tls_certificate_verifier_external ext;
	struct arn_xds_tls *tls;
};

/* Runs on a gRPC thread, after gRPC verified the chain against the CA. */
static int v_verify(void *user_data, grpc_tls_custom_verification_check_request *req,
		    grpc_tls_on_custom_verification_check_done_cb cb, void *cb_arg,
		    grpc_status_code *status, char **details)
{
	(void)cb;
	(void)cb_arg;
	const struct gverifier *v = user_data;
	const struct arn_xds_peer_sans p = {
	    .dns = (const char *const *)req->peer_info.san_names.dns_names,
	    .n_dns = req->peer_info.san_names.dns_names_size,
	    .uri = (const char *const *)req->peer_info.san_names.uri_names,
	    .n_uri = req->peer_info.san_names.uri_names_size,
	    .email = (const char *const *)req->peer_info.san_names.email_names,
	    .n_email = req->peer_info.san_names.email_names_size,
	    .ip = (const char *const *)req->peer_info.san_names.ip_names,
	    .n_ip = req->peer_info.san_names.ip_names_size,
	};
	if (arn_xds_tls_san_ok(v->tls, &p)) {
		*status = GRPC_STATUS_OK;
		*details = NULL;
		return 1;
	}
	struct arn_sb why = ARN_SB_INIT;
	xds_tls_san_mismatch(v->tls, &p, &why);
	*status = GRPC_STATUS_UNAUTHENTICATED;
	*details = gpr_strdup(arn_sb_cstr(&why));
	arn_sb_free(&why);
	return 1; /* done synchronously */
}

static void v_cancel(void *user_data, grpc_tls_custom_verification_check_request *req)
{
	(void)user_data;
	(void)req; /* verify() never goes asynchronous */
}

static void v_destruct(void *user_data)
{
	struct gverifier *v = user_data;
	xds_tls_free(v->tls);
	free(v);
}

static grpc_channel_credentials *tls_credentials(const struct arn_xds_tls *tls)
{
	/* the matchers only: no key material in the verifier */
	const struct arn_xds_tls sans = {.san = tls->san, .n_san = tls->n_san};
	struct gverifier *v = calloc(1, sizeof(*v));
	if (v == NULL || (v->tls = xds_tls_dup(&sans)) == NULL) {
		free(v);
		return NULL;
	}
	v->ext = (grpc_tls_certificate_verifier_external){
	    .user_data = v, .verify = v_verify, .cancel = v_cancel, .destruct = v_destruct};
	grpc_tls_credentials_options *o = grpc_tls_credentials_options_create();
	grpc_tls_identity_pairs *ids = NULL;
	if (tls->cert_pem != NULL) {
		ids = grpc_tls_identity_pairs_create();
		grpc_tls_identity_pairs_add_pair(ids, tls->key_pem, tls->cert_pem);
	}
	/* takes ownership of ids; copies the CA */
	grpc_tls_certificate_provider *prov =
	    grpc_tls_certificate_provider_static_data_create(tls->ca_pem, ids);
	grpc_tls_credentials_options_set_certificate_provider(o, prov);
	grpc_tls_certificate_provider_release(prov);
	grpc_tls_credentials_options_watch_root_certs(o);
	if (ids != NULL)
		grpc_tls_credentials_options_watch_identity_key_cert_pairs(o);
	grpc_tls_credentials_options_set_verify_server_cert(o, 1);
	grpc_tls_credentials_options_set_check_call_host(o, 0);
	grpc_tls_certificate_verifier *ver = grpc_tls_certificate_verifier_external_create(&v->ext);
	grpc_tls_credentials_options_set_certificate_verifier(o, ver);
	grpc_tls_certificate_verifier_release(ver);
	return grpc_tls_credentials_create(o); /* takes o */
}

static void stream_free(struct gstream *s)
{
	grpc_metadata_array_destroy(&s->md);
	grpc_metadata_array_destroy(&s->trailing);
	grpc_slice_unref(s->details);
	if (s->recv_buf)
		grpc_byte_buffer_destroy(s->recv_buf);
	if (s->send_buf)
		grpc_byte_buffer_destroy(s->send_buf);
	if (s->call)
		grpc_call_unref(s->call);
	if (s->ch)
		grpc_channel_destroy(s->ch);
	s->tr->live--;
	free(s);
}

static bool start(struct gstream *s, grpc_op *ops, size_t n, enum tag_kind k)
{
	grpc_call_error e = grpc_call_start_batch(s->call, ops, n, &s->tags[k], NULL);
	if (e != GRPC_CALL_OK) {
		ARN_ERR(XDS, "grpc_call_start_batch (%d) failed: %d", (int)k, (int)e);
		return false;
	}
	s->pending++;
	return true;
}

static void arm_recv(struct gstream *s)
{
	grpc_op op = {.op = GRPC_OP_RECV_MESSAGE};
	op.data.recv_message.recv_message = &s->recv_buf;
	start(s, &op, 1, TAG_RECV);
}

static void arm_watch(struct gstream *s)
{
	grpc_channel_watch_connectivity_state(s->ch, s->conn, in_ms(WATCH_MS), s->tr->cq,
					      &s->tags[TAG_WATCH]);
	s->pending++;
}

static void g_attach(void *t, struct arn_xds_client *c)
{
	((struct gtr *)t)->c = c;
}

static void g_close(void *t)
{
	struct gtr *tr = t;
	struct gstream *s = tr->cur;
	if (s == NULL)
		return;
	tr->cur = NULL;
	s->dead = true;
	grpc_call_cancel(s->call, NULL);
}

static int g_open(void *t, const char *host, uint16_t port, const struct arn_xds_tls *tls)
{
	struct gtr *tr = t;
	g_close(tr);
	if (tls != NULL && tls->ca_pem == NULL)
		return -EINVAL; /* never verify against gRPC's default roots */
	struct gstream *s = calloc(1, sizeof(*s));
	if (s == NULL)
		return -ENOMEM;
	s->tr = tr;
	tr->live++;
	for (int k = 0; k < TAG_N; k++)
		s->tags[k] = (struct gtag){s, (enum tag_kind)k};
	grpc_metadata_array_init(&s->md);
	grpc_metadata_array_init(&s->trailing);
	s->details = grpc_empty_slice();
	if (strchr(host, ':'))
		snprintf(s->target, sizeof(s->target), "ipv6:[%s]:%u", host, port);
	else if (strspn(host, "0123456789.") == strlen(host))
		snprintf(s->target, sizeof(s->target), "ipv4:%s:%u", host, port);
	else
		snprintf(s->target, sizeof(s->target), "dns:///%s:%u", host, port);

	grpc_arg args[] = {
	    {.type = GRPC_ARG_INTEGER,
	     .key = (char *)GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
	     .value.integer = (int)ARN_XDS_MAX_RECV_BYTES}, /* X6 */
	    {.type = GRPC_ARG_INTEGER,
	     .key = (char *)GRPC_ARG_MAX_SEND_MESSAGE_LENGTH,
	     .value.integer = -1},
	    {.type = GRPC_ARG_INTEGER, .key = (char *)GRPC_ARG_ENABLE_RETRIES, .value.integer = 0},
	    {.type = GRPC_ARG_INTEGER,
	     .key = (char *)GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL,
	     .value.integer = 1},
	    {.type = GRPC_ARG_STRING,
	     .key = (char *)GRPC_ARG_PRIMARY_USER_AGENT_STRING,
	     .value.string = (char *)"arion/" ARN_VERSION},
	    {0}, /* room for SNI */
	};
	grpc_channel_args ca = {sizeof(args) / sizeof(args[0]) - 1, args};
	grpc_channel_credentials *creds;
	if (tls != NULL) {
		if (tls->sni != NULL) /* the last slot: SNI */
			args[ca.num_args++] =
			    (grpc_arg){.type = GRPC_ARG_STRING,
				       .key = (char *)GRPC_SSL_TARGET_NAME_OVERRIDE_ARG,
				       .value.string = (char *)tls->sni};
		creds = tls_credentials(tls);
	} else {
		creds = grpc_insecure_credentials_create();
	}
	if (creds == NULL) {
		stream_free(s);
		return -ENOMEM;
	}
	s->ch = grpc_channel_create(s->target, creds, &ca);
	grpc_channel_credentials_release(creds);
	if (s->ch == NULL) {
		stream_free(s);
		return -ENOMEM;
	}
	grpc_slice method = grpc_slice_from_static_string(ADS_METHOD);
	s->call = grpc_channel_create_call(s->ch, NULL, GRPC_PROPAGATE_DEFAULTS, tr->cq, method,
					   NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
	if (s->call == NULL) {
		stream_free(s);
		return -ENOMEM;
	}
	/* No wait_for_ready: a refused connection fails the call at once, so
	 * the client's backoff and server cycling decide what happens next. */
	grpc_op init = {.op = GRPC_OP_SEND_INITIAL_METADATA};
	grpc_op md = {.op = GRPC_OP_RECV_INITIAL_METADATA};
	md.data.recv_initial_metadata.recv_initial_metadata = &s->md;
	grpc_op st = {.op = GRPC_OP_RECV_STATUS_ON_CLIENT};
	st.data.recv_status_on_client.trailing_metadata = &s->trailing;
	st.data.recv_status_on_client.status = &s->status;
	st.data.recv_status_on_client.status_details = &s->details;
	if (!start(s, &init, 1, TAG_INIT) || !start(s, &md, 1, TAG_MD) ||
	    !start(s, &st, 1, TAG_STATUS)) {
		grpc_call_cancel(s->call, NULL);
		s->dead = true;
		if (s->pending == 0)
			stream_free(s);
		return -EIO;
	}
	arm_recv(s);
	s->conn = grpc_channel_check_connectivity_state(s->ch, 1);
	arm_watch(s);
	tr->cur = s;
	return 0;
}

static bool g_writable(void *t)
{
	struct gtr *tr = t;
	return tr->cur != NULL && tr->cur->send_buf == NULL;
}

static int g_send(void *t, const char *buf, size_t len)
{
	struct gtr *tr = t;
	struct gstream *s = tr->cur;
	if (s == NULL)
		return -ENOTCONN;
	if (s->send_buf != NULL)
		return -EBUSY;
	grpc_slice sl = grpc_slice_from_copied_buffer(buf, len);
	s->send_buf = grpc_raw_byte_buffer_create(&sl, 1);
	grpc_slice_unref(sl);
	grpc_op op = {.op = GRPC_OP_SEND_MESSAGE};
	op.data.send_message.send_message = s->send_buf;
	if (!start(s, &op, 1, TAG_SEND)) {
		grpc_byte_buffer_destroy(s->send_buf);
		s->send_buf = NULL;
		return -EIO;
	}
	return 0;
}

static void deliver_message(struct gstream *s)
{
	grpc_byte_buffer_reader rd;
	if (!grpc_byte_buffer_reader_init(&rd, s->recv_buf)) {
		ARN_ERR(XDS, "cannot read a received message");
		return;
	}
	grpc_slice sl = grpc_byte_buffer_reader_readall(&rd);
	grpc_byte_buffer_reader_destroy(&rd);
	grpc_byte_buffer_destroy(s->recv_buf);
	s->recv_buf = NULL;
	arn_xds_transport_message(s->tr->c, (const char *)GRPC_SLICE_START_PTR(sl),
				  GRPC_SLICE_LENGTH(sl));
	grpc_slice_unref(sl);
}

static void on_event(struct gtr *tr, struct gtag *tag, bool ok)
{
	struct gstream *s = tag->s;
	s->pending--;
	bool live = !s->dead && tr->cur == s;
	switch (tag->kind) {
	case TAG_INIT:
		break;
	case TAG_MD:
		if (ok && live)
			arn_xds_transport_connected(tr->c);
		break;
	case TAG_RECV:
		if (s->recv_buf != NULL && ok && live) {
			deliver_message(s);
			/* the client may have closed it meanwhile */
			if (!s->dead && tr->cur == s)
				arm_recv(s);
		} else if (s->recv_buf != NULL) {
			grpc_byte_buffer_destroy(s->recv_buf);
			s->recv_buf = NULL;
		}
		break;
	case TAG_SEND:
		grpc_byte_buffer_destroy(s->send_buf);
		s->send_buf = NULL;
		if (live && ok)
			arn_xds_transport_writable(tr->c);
		break;
	case TAG_WATCH:
		if (!s->dead) {
			s->conn = grpc_channel_check_connectivity_state(s->ch, 0);
			if (s->conn == GRPC_CHANNEL_READY && live)
				arn_xds_transport_connected(tr->c);
			if (!s->dead)
				arm_watch(s);
		}
		break;
	case TAG_STATUS:
		if (live) {
			char *d = grpc_slice_to_c_string(s->details);
			tr->cur = NULL;
			s->dead = true;
			arn_xds_transport_closed(tr->c, (int)s->status, d);
			gpr_free(d);
		}
		s->dead = true;
		break;
	case TAG_N:
		break;
	}
	if (s->dead && s->pending == 0)
		stream_free(s);
}

static void g_poll(void *t, int max_wait_ms)
{
	struct gtr *tr = t;
	gpr_timespec deadline = in_ms(max_wait_ms > 0 ? max_wait_ms : 0);
	for (int i = 0; i < 64; i++) {
		grpc_event ev = grpc_completion_queue_next(tr->cq, deadline, NULL);
		if (ev.type != GRPC_OP_COMPLETE)
			break;
		on_event(tr, ev.tag, ev.success != 0);
		deadline = gpr_inf_past(GPR_CLOCK_MONOTONIC);
	}
}

static void g_destroy(void *t)
{
	struct gtr *tr = t;
	g_close(tr);
	/* Drain the streams still in flight (each watch ends within WATCH_MS). */
	for (int i = 0; tr->live > 0 && i < 100; i++) {
		grpc_event ev = grpc_completion_queue_next(tr->cq, in_ms(100), NULL);
		if (ev.type == GRPC_OP_COMPLETE)
			on_event(tr, ev.tag, ev.success != 0);
	}
	grpc_completion_queue_shutdown(tr->cq);
	while (grpc_completion_queue_next(tr->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL).type !=
	       GRPC_QUEUE_SHUTDOWN)
		;
	grpc_completion_queue_destroy(tr->cq);
	free(tr);
	grpc_shutdown();
}

void *arn_xds_grpc_transport_new(void)
{
	struct gtr *tr = calloc(1, sizeof(*tr));
	if (tr == NULL)
		return NULL;
	grpc_init();
	tr->cq = grpc_completion_queue_create_for_next(NULL);
	if (tr->cq == NULL) {
		grpc_shutdown();
		free(tr);
		return NULL;
	}
	return tr;
}

const struct arn_xds_transport_ops arn_xds_grpc_transport_ops = {
    .attach = g_attach,
    .open = g_open,
    .writable = g_writable,
    .send = g_send,
    .close = g_close,
    .poll = g_poll,
    .destroy = g_destroy,
};
