/*
 * The access log record of a stream (Envoy's access log fields): built
 * once, when the stream ends, from the stream, its connection and its
 * response, and handed to each of the HCM's access loggers.
 */
#include <string.h>

#include "arn_tls.h"
#include "http_glog.h"
#include "http_access_log.h"
#include "http_int.h"
#include "http_stream.h"

/* A message's headers for the access log; a response's with @p svc, the
 * x-envoy-upstream-service-time Arion sent (NULL: none sent). */
static unsigned log_headers(const struct arn_h1_msg *m, struct arn_access_header *out, unsigned cap,
			    const struct http_stream *st, bool request, const char *svc)
{
	unsigned n = 0;
	bool rid = false, xff = false;
	for (unsigned i = 0; i < m->n_hdrs && n < cap; i++) {
		const struct arn_h1_header *h = &m->hdrs[i];
		struct arn_access_header *a = &out[n++];
		a->name = (struct arn_access_str){h->name, h->name_len};
		a->value = (struct arn_access_str){h->value, h->value_len};
		if (!request) {
			/* Arion's x-envoy-upstream-service-time replaces the
			 * upstream's on the wire (an edit SET): the same here */
			if (svc && h->name_len == 29 &&
			    arn_h1_eq_nocase(h->name, 29, "x-envoy-upstream-service-time", 29)) {
				a->value = (struct arn_access_str){svc, (uint32_t)strlen(svc)};
				svc = NULL;
			}
			continue;
		}
		/* the values Arion sent upstream, as Envoy logs them */
		if (st->request_id && h->name_len == 12 &&
		    arn_h1_eq_nocase(h->name, 12, "x-request-id", 12)) {
			a->value = (struct arn_access_str){st->request_id, st->request_id_len};
			rid = true;
		}
		if (st->xff && h->name_len == 15 &&
		    arn_h1_eq_nocase(h->name, 15, "x-forwarded-for", 15) && !xff) {
			xff = true;
		}
	}
	if (request && st->request_id && !rid && n < cap)
		out[n++] = (struct arn_access_header){{"x-request-id", 12},
						      {st->request_id, st->request_id_len}};
	if (request && st->xff && !xff && n < cap)
		out[n++] =
		    (struct arn_access_header){{"x-forwarded-for", 15}, {st->xff, st->xff_len}};
	if (svc && n < cap)
		out[n++] = (struct arn_access_header){{"x-envoy-upstream-service-time", 29},
						      {svc, (uint32_t)strlen(svc)}};
	return n;
}

/* %DOWNSTREAM_PEER_*%: the client certificate's fields, read only when a
 * format prints them. */
static int peer_field(const void *arg, enum arn_access_peer what, char *buf, size_t len)
{
	const struct arn_tls_conn *t = arg;
	int64_t a, b;
	switch (what) {
	case ARN_ACCESS_PEER_SUBJECT:
		return arn_tls_peer_subject(t, buf, len);
	case ARN_ACCESS_PEER_ISSUER:
		return arn_tls_peer_issuer(t, buf, len);
	case ARN_ACCESS_PEER_URI_SAN:
		return arn_tls_peer_uri_san(t, buf, len);
	case ARN_ACCESS_PEER_FINGERPRINT_256:
		return arn_tls_peer_fingerprint(t, buf, len);
	case ARN_ACCESS_PEER_SERIAL:
		return arn_tls_peer_serial(t, buf, len);
	case ARN_ACCESS_PEER_V_START:
	case ARN_ACCESS_PEER_V_END:
		if (arn_tls_peer_validity(t, &a, &b) != 0)
			return -ENOENT;
		return snprintf(buf, len, "%lld",
				(long long)(what == ARN_ACCESS_PEER_V_START ? a : b));
	}
	return -ENOENT;
}

/* A connection manager that takes the client from the request
 * (http_client_from_headers: X-Forwarded-For without use_remote_address
 * or with trusted hops, original_ip_detection_extensions):
 * %DOWNSTREAM_REMOTE_ADDRESS% is the address found (port 0, as Envoy's
 * parsed one), the TCP peer stays %DOWNSTREAM_DIRECT_REMOTE_ADDRESS%
 * (downstream_direct_remote, set above). */
static void __attribute__((noinline))
detected_remote(struct arn_access_record *rec, const struct http_stream *st)
{
	const struct http_conn *hc = st->hc;
	uint32_t a = http_client_addr(hc->hcm, &st->req.m, hc->raddr, NULL);
	if (a == hc->raddr)
		return;
	rec->downstream_remote = (struct arn_access_addr){a, 0};
}

void http_access_record(struct http_stream *st, struct arn_access_record *rec)
{
	struct http_conn *hc = st->hc;
	struct http_worker *w = hc->w;
	const struct arn_h1_msg *m = &st->req.m;
	memset(rec, 0, sizeof(*rec));
	rec->start_time_us = st->start_wall_us;
	rec->duration_us = http_now_us(w, st->start_tsc);
	rec->request_duration_us =
	    st->req_end_tsc ? (st->req_end_tsc - st->start_tsc) / w->tsc_per_us : UINT64_MAX;
	rec->response_duration_us =
	    st->resp_first_tsc ? (st->resp_first_tsc - st->start_tsc) / w->tsc_per_us : UINT64_MAX;
	rec->response_tx_duration_us =
	    st->resp_first_tsc ? http_now_us(w, st->resp_first_tsc) : UINT64_MAX;
	bool have_req = (st->state & HTTP_S_HEAD_DONE) && st->res;
	if (have_req) {
		rec->method = (struct arn_access_str){m->method_name.p, m->method_name.len};
		rec->path = (struct arn_access_str){m->path.p, m->path.len};
		rec->authority = (struct arn_access_str){m->authority.p, m->authority.len};
		rec->req_headers = w->log_req;
		rec->n_req_headers = log_headers(m, w->log_req, HTTP_MAX_HDRS + 2, st, true, NULL);
		if (st->otel | st->otel_done) { /* Envoy's activeSpan() */
			rec->trace_id = st->res->otel.trace_id;
			rec->span_id = st->res->otel.span_id;
		}
	}
	rec->access_log_hint = st->access_log_hint;
	rec->scheme =
	    hc->tls ? (struct arn_access_str){"https", 5} : (struct arn_access_str){"http", 4};
	if (hc->tls) {
		const char *v = arn_tls_version(hc->tls), *c = arn_tls_cipher(hc->tls),
			   *sni = arn_tls_sni(hc->tls);
		if (v)
			rec->downstream_tls_version =
			    (struct arn_access_str){v, (uint32_t)strlen(v)};
		if (c)
			rec->downstream_tls_cipher =
			    (struct arn_access_str){c, (uint32_t)strlen(c)};
		if (sni)
			rec->requested_server_name =
			    (struct arn_access_str){sni, (uint32_t)strlen(sni)};
		rec->downstream_peer = peer_field;
		rec->downstream_peer_arg = hc->tls;
	}
	rec->protocol = st->version == 10   ? (struct arn_access_str){"HTTP/1.0", 8}
			: st->version == 20 ? (struct arn_access_str){"HTTP/2", 6}
					    : (struct arn_access_str){"HTTP/1.1", 8};
	if ((st->state & HTTP_S_RESP_STARTED) && !(st->state & HTTP_S_LOCAL) && st->res) {
		rec->resp_headers = w->log_resp;
		/* the service time as the client got it, for
		 * %RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)%: none when the router's
		 * suppress_envoy_headers kept it off the wire (Envoy logs "-") */
		const char *svc =
		    hc->hcm && hc->hcm->suppress_envoy_headers ? NULL : st->service_time;
		rec->n_resp_headers =
		    log_headers(&st->resp.m, w->log_resp, HTTP_MAX_HDRS + 1, st, false, svc);
		/* %TRAILER(X)%: the upstream's trailers (grpc-status, ...),
		 * whether or not the client's codec carried them on */
		const struct arn_h1_msg *rm = &st->resp.m;
		if ((rm->flags & ARN_H1_F_TRAILERS) && rm->n_trailers && rm->trailers &&
		    !st->resp.pins.overflow) {
			unsigned k = 0;
			for (unsigned i = 0; i < rm->n_trailers && k < HTTP_MAX_HDRS; i++) {
				const struct arn_h1_header *t = &rm->trailers[i];
				w->log_trl[k++] = (struct arn_access_header){
				    {t->name, t->name_len}, {t->value, t->value_len}};
			}
			rec->resp_trailers = w->log_trl;
			rec->n_resp_trailers = k;
		}
	}
	if (st->res && st->res->x.tfr[0])
		rec->upstream_transport_failure_reason =
		    (struct arn_access_str){st->res->x.tfr, (uint32_t)strlen(st->res->x.tfr)};
	rec->response_code = st->status;
	if (st->details)
		rec->response_code_details =
		    (struct arn_access_str){st->details, (uint32_t)strlen(st->details)};
	rec->response_flags = st->flags;
	rec->bytes_received = st->rx_body;
	rec->bytes_sent = st->tx_body;
	rec->downstream_remote = (struct arn_access_addr){hc->raddr, hc->rport};
	rec->downstream_direct_remote = (struct arn_access_addr){hc->draddr, hc->drport};
	if (hc->hcm && http_client_from_headers(hc->hcm) && have_req)
		detected_remote(rec, st);
	rec->downstream_local = (struct arn_access_addr){hc->laddr, hc->lport};
	if (st->ep_addr)
		rec->upstream_host = (struct arn_access_addr){st->ep_addr, st->ep_port};
	if (st->crt)
		rec->upstream_cluster =
		    (struct arn_access_str){st->crt->name, (uint32_t)st->crt->len};
	if (st->route && st->route->name)
		rec->route_name =
		    (struct arn_access_str){st->route->name, (uint32_t)strlen(st->route->name)};
	if (st->log.mcp_tool)
		rec->mcp_tool = (struct arn_access_str){st->log.mcp_tool, st->log.mcp_tool_len};
	if (st->log.mcp_backend)
		rec->mcp_backend =
		    (struct arn_access_str){st->log.mcp_backend, st->log.mcp_backend_len};
	rec->connection_id = hc->id;
	rec->upstream_request_attempt_count = st->attempts;
	rec->health_check = (st->state & HTTP_S_HEALTH_CHECK);
}

void http_access_log(struct http_stream *st)
{
	struct http_hcm_rt *r = st->hc->hrt;
	if (!r || !r->n_logs)
		return;
	struct arn_access_record rec;
	http_access_record(st, &rec);
	for (unsigned i = 0; i < r->n_loggers; i++)
		arn_access_log_write(r->loggers[i], st->hc->w->slot, &rec);
	if (r->n_glogs)
		r->glog_log(st->hc->w, st->hc->lsn, st->hc->sladdr, r, &rec);
}
