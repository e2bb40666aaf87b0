/*
 * gRPC access loggers (http_glog.h). Followed: Envoy 1.36's
 * source/extensions/access_loggers/open_telemetry (access_log_impl.cc: the
 * record's time_unix_nano is the request's start, its body and attributes
 * the expansions of their format strings; otlp_log_utils.cc: the
 * resource's log_name, zone_name, cluster_name, node_name unless
 * disable_builtin_labels, then resource_attributes; one ScopeLogs without
 * a scope) and source/extensions/access_loggers/common/
 * grpc_access_logger.h (a flush when the buffer reaches buffer_size_bytes
 * or at buffer_flush_interval; logs_written / logs_dropped; ALS's one
 * StreamAccessLogs stream kept open, the identifier on its first message,
 * reopened at the next flush once closed, canLogMore's drop while it
 * cannot take a message). Differences: Envoy keeps one logger per
 * configuration and lets OTLP exports overlap; Arion keeps one queue per
 * worker and kind, one OTLP export in flight, one ALS message with the
 * transport at a time, and drops what does not fit while they wait.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arn_access_log.h"
#include "arn_config.h"
#include "arn_log.h"
#include "arn_stats_envoy.h"
#include "http_glog.h"
#include "http_grpc_unary.h"
#include "http_int.h"
#include "http_pbw.h"
#include "http_subreq.h"

#define OTEL_LOGS_PATH "/opentelemetry.proto.collector.logs.v1.LogsService/Export"
#define ALS_PATH "/envoy.service.accesslog.v3.AccessLogService/StreamAccessLogs"
/* the export: the resource (bounded by the configuration's limits), the
 * queue, the nesting's tags and lengths */
#define RES_MAX                                                                                    \
	(4 * (16 + ARN_CFG_GLOG_STR_MAX) +                                                         \
	 ARN_CFG_GLOG_ATTRS_MAX * (16 + 2 * ARN_CFG_GLOG_STR_MAX) + 1024)
#define OUT_MAX (HTTP_GLOG_QUEUE_BYTES + RES_MAX)

struct http_glog {
	const struct arn_cfg_access_log *a; /* in the listener the runtime pins */
	struct arn_access_format *body;	    /* NULL: no body */
	struct arn_access_format *attr[ARN_CFG_GLOG_ATTRS_MAX];
	struct arn_access_filter *filter; /* NULL: every record */
};

/* ---- the encoders -------------------------------------------------------------------- */

/* KeyValue{key, value: AnyValue{string_value}}'s body */
static size_t kv_size(const struct http_glog_kv *kv)
{
	return pbw_ld_size(kv->kl) + pbw_ld_size(pbw_ld_size(kv->vl));
}

static void put_kv(struct pbw *f, uint32_t field, const struct http_glog_kv *kv)
{
	pbw_ld(f, field, kv_size(kv));
	pbw_utf8(f, 1, kv->k, kv->kl);
	pbw_ld(f, 2, pbw_ld_size(kv->vl));
	pbw_utf8(f, 1, kv->v, kv->vl);
}

size_t http_glog_otel_record(uint8_t *out, size_t cap, uint64_t time_ns, const char *body,
			     size_t body_len, const struct http_glog_kv *kv, unsigned n,
			     const uint8_t *trace_id, const uint8_t *span_id)
{
	/* LogRecord{1: time_unix_nano, 5: body AnyValue{1: string_value},
	 * 6: attributes, 9: trace_id, 10: span_id} */
	size_t len = 1 + 8;
	if (body)
		len += pbw_ld_size(pbw_ld_size(body_len));
	for (unsigned i = 0; i < n; i++)
		len += 1 + pbw_vsize(kv_size(&kv[i])) + kv_size(&kv[i]);
	if (trace_id)
		len += pbw_ld_size(16);
	if (span_id)
		len += pbw_ld_size(8);
	struct pbw f = {out, 0, cap, false};
	pbw_ld(&f, 2, len);
	pbw_fixed64(&f, 1, time_ns);
	if (body) {
		pbw_ld(&f, 5, pbw_ld_size(body_len));
		pbw_utf8(&f, 1, body, body_len);
	}
	for (unsigned i = 0; i < n; i++)
		put_kv(&f, 6, &kv[i]);
	/* the active span's (Envoy's populateTraceContext: the trace id's
	 * 16 bytes, a 64-bit one zero-padded as Arion keeps it already) */
	if (trace_id)
		pbw_bytes(&f, 9, trace_id, 16);
	if (span_id)
		pbw_bytes(&f, 10, span_id, 8);
	return f.err ? 0 : f.n;
}

static char g_node_id[256], g_cluster[256], g_zone[256];
static uint32_t g_node_id_len, g_cluster_len, g_zone_len;

static uint32_t copy_label(char *to, size_t cap, const char *s, size_t n)
{
	if (!s)
		return 0;
	if (n > cap - 1)
		n = cap - 1;
	memcpy(to, s, n);
	return (uint32_t)n;
}

/* The resource's attributes (@p kv holds 4 + ARN_CFG_GLOG_ATTRS_MAX). */
static unsigned resource(const struct arn_cfg_grpc_log *cfg, struct http_glog_kv *kv)
{
	unsigned n = 0;
	if (cfg->builtin_labels) {
		kv[n++] = (struct http_glog_kv){"log_name", cfg->log_name, 8, cfg->log_name_len};
		kv[n++] = (struct http_glog_kv){"zone_name", g_zone, 9, g_zone_len};
		kv[n++] = (struct http_glog_kv){"cluster_name", g_cluster, 12, g_cluster_len};
		kv[n++] = (struct http_glog_kv){"node_name", g_node_id, 9, g_node_id_len};
	}
	for (size_t i = 0; i < cfg->n_res_attrs; i++) {
		const struct arn_cfg_glog_kv *a = &cfg->res_attrs[i];
		kv[n++] = (struct http_glog_kv){a->key ? a->key : "", a->value ? a->value : "",
						a->key_len, a->value_len};
	}
	return n;
}

size_t http_glog_otel_export(uint8_t *out, size_t cap, const struct arn_cfg_grpc_log *cfg,
			     const uint8_t *recs, size_t len)
{
	/* ExportLogsServiceRequest{1: ResourceLogs{1: Resource{1: KeyValue},
	 * 2: ScopeLogs{2: LogRecord}}} */
	struct http_glog_kv kv[4 + ARN_CFG_GLOG_ATTRS_MAX];
	unsigned n = resource(cfg, kv);
	size_t res = 0;
	for (unsigned i = 0; i < n; i++)
		res += 1 + pbw_vsize(kv_size(&kv[i])) + kv_size(&kv[i]);
	size_t rl = pbw_ld_size(res) + pbw_ld_size(len);
	size_t req = pbw_ld_size(rl);
	struct pbw f = {out, 0, cap, false};
	if (!pbw_grpc_prefix(&f, req))
		return 0;
	pbw_ld(&f, 1, rl);
	pbw_ld(&f, 1, res);
	for (unsigned i = 0; i < n; i++)
		put_kv(&f, 1, &kv[i]);
	pbw_ld(&f, 2, len);
	pbw_raw(&f, recs, len);
	return f.err ? 0 : f.n;
}

/* ---- Envoy's ALS: HTTPAccessLogEntry, TCPAccessLogEntry ------------------------------ */

static size_t ip_fmt(char *o, size_t cap, uint32_t a)
{
	int n = snprintf(o, cap, "%u.%u.%u.%u", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255);
	return n > 0 ? (size_t)n : 0;
}

static size_t u64_field(uint64_t v)
{
	return v ? 1 + pbw_vsize(v) : 0;
}

static size_t str_field(size_t n)
{
	return n ? pbw_ld_size(n) : 0;
}

/* Address{1: SocketAddress{2: address, 3: port_value}} as field @p field */
static size_t addr_body(uint32_t port, size_t al)
{
	size_t sa = pbw_ld_size(al) + u64_field(port);
	return pbw_ld_size(sa);
}

static void put_addr(struct pbw *f, uint32_t field, uint32_t ip, uint16_t port)
{
	char t[16];
	size_t al = ip_fmt(t, sizeof(t), ip);
	pbw_ld(f, field, addr_body(port, al));
	pbw_ld(f, 1, pbw_ld_size(al) + u64_field(port));
	pbw_utf8(f, 2, t, al);
	if (port)
		pbw_u64(f, 3, port);
}

/* Duration / Timestamp {1: seconds, 2: nanos} of @p us microseconds */
static size_t dur_body(uint64_t us)
{
	return u64_field(us / 1000000) + u64_field(us % 1000000 * 1000);
}

static void put_dur(struct pbw *f, uint32_t field, uint64_t us)
{
	pbw_ld(f, field, dur_body(us));
	if (us / 1000000)
		pbw_u64(f, 1, us / 1000000);
	if (us % 1000000)
		pbw_u64(f, 2, us % 1000000 * 1000);
}

/* Envoy's ResponseFlags field of each of Arion's flags (arn_response_flags.def
 * order); 13 is unauthorized_details{reason: EXTERNAL_SERVICE} */
static const uint8_t rf_field[] = {15, 1,  2,  3,  4,  5,  6,  7,  8,  16, 9,  10, 11, 12,
				   13, 14, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27};
_Static_assert(sizeof(rf_field) == ARN_RF__COUNT, "a response flag without its ALS field");

static size_t flags_body(uint32_t fl)
{
	size_t n = 0;
	for (unsigned i = 0; i < ARN_RF__COUNT; i++)
		if (fl & (1u << i))
			n += rf_field[i] == 13 ? 1 + 1 + 2
					       : pbw_vsize((uint64_t)rf_field[i] << 3) + 1;
	return n;
}

static void put_flags(struct pbw *f, uint32_t fl)
{
	pbw_ld(f, 16, flags_body(fl));
	for (unsigned i = 0; i < ARN_RF__COUNT; i++) {
		if (!(fl & (1u << i)))
			continue;
		if (rf_field[i] == 13) {
			pbw_ld(f, 13, 2);
			pbw_u64(f, 1, 1); /* Unauthorized.Reason EXTERNAL_SERVICE */
		} else {
			pbw_u64(f, rf_field[i], 1);
		}
	}
}

static size_t s_field(const struct arn_access_str *s)
{
	return s->p ? str_field(s->len) : 0;
}

static void put_s(struct pbw *f, uint32_t field, const struct arn_access_str *s)
{
	if (s->p && s->len)
		pbw_utf8(f, field, s->p, s->len);
}

static uint32_t tls_version(const struct arn_access_str *v)
{
	static const char *const names[] = {"TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3"};
	for (uint32_t i = 0; v->p && i < 4; i++)
		if (v->len == strlen(names[i]) && memcmp(v->p, names[i], v->len) == 0)
			return i + 1;
	return 0;
}

/* AccessLogCommon (Envoy's extractCommonAccessLogProperties, 1.36's
 * fields Arion has) into @p f, its body only; @p type its
 * access_log_type (DownstreamEnd 6, TcpConnectionEnd 3). @p peer: the
 * client certificate's subject (NULL: none). */
static void common_body(struct pbw *f, const struct arn_access_record *r, uint32_t type,
			const struct arn_access_str *peer)
{
	const struct arn_access_addr *direct =
	    r->downstream_direct_remote.ip ? &r->downstream_direct_remote : &r->downstream_remote;
	if (r->downstream_remote.ip)
		put_addr(f, 2, r->downstream_remote.ip, r->downstream_remote.port);
	if (r->downstream_local.ip)
		put_addr(f, 3, r->downstream_local.ip, r->downstream_local.port);
	if (r->downstream_tls_version.p && r->downstream_tls_version.len) {
		/* TLSProperties{1: tls_version, 3: tls_sni_hostname,
		 * 5: peer_certificate_properties{2: subject}} */
		uint32_t v = tls_version(&r->downstream_tls_version);
		size_t pc = peer ? pbw_ld_size(peer->len) : 0;
		size_t tl = u64_field(v) + s_field(&r->requested_server_name) +
			    (peer ? pbw_ld_size(pc) : 0);
		pbw_ld(f, 4, tl);
		if (v)
			pbw_u64(f, 1, v);
		put_s(f, 3, &r->requested_server_name);
		if (peer) {
			pbw_ld(f, 5, pc);
			pbw_utf8(f, 2, peer->p, peer->len);
		}
	}
	uint64_t start = r->start_time_us > 0 ? (uint64_t)r->start_time_us : 0;
	put_dur(f, 5, start);
	if (r->request_duration_us != UINT64_MAX)
		put_dur(f, 6, r->request_duration_us);
	if (r->response_duration_us != UINT64_MAX)
		put_dur(f, 9, r->response_duration_us);
	put_dur(f, 12, r->duration_us);
	if (r->upstream_host.ip) {
		put_addr(f, 13, r->upstream_host.ip, r->upstream_host.port);
		put_s(f, 15, &r->upstream_cluster);
	}
	if (r->upstream_local.ip)
		put_addr(f, 14, r->upstream_local.ip, r->upstream_local.port);
	if (r->response_flags)
		put_flags(f, r->response_flags);
	put_s(f, 18, &r->upstream_transport_failure_reason);
	put_s(f, 19, &r->route_name);
	if (direct->ip)
		put_addr(f, 20, direct->ip, direct->port);
	put_dur(f, 23, r->duration_us);
	if (r->upstream_request_attempt_count)
		pbw_u64(f, 24, r->upstream_request_attempt_count);
	put_s(f, 25, &r->connection_termination_details);
	pbw_u64(f, 33, type);
}

/* The same, measured: the body's bytes */
static size_t common_size(const struct arn_access_record *r, uint32_t type,
			  const struct arn_access_str *peer)
{
	struct pbw m = PBW_MEASURE;
	common_body(&m, r, type, peer);
	return m.n;
}

static bool name_is(const struct arn_access_str *n, const char *name, size_t len)
{
	return n->len == len && arn_h1_eq_nocase(n->p, n->len, name, len);
}

/* The first value of header @p name in @p h, or an absent string. */
static struct arn_access_str hdr1(const struct arn_access_header *h, unsigned n, const char *name)
{
	size_t l = strlen(name);
	for (unsigned i = 0; i < n; i++)
		if (name_is(&h[i].name, name, l))
			return h[i].value;
	return (struct arn_access_str){NULL, 0};
}

/* Every value of header @p name joined by ',' (Envoy's
 * getAllOfHeaderAsString) as a map<string, string> entry of field
 * @p field; nothing when the header is absent. */
static void put_hdr_entry(struct pbw *f, uint32_t field, const struct arn_access_header *h,
			  unsigned n, const char *name)
{
	size_t l = strlen(name), vl = 0;
	unsigned k = 0;
	for (unsigned i = 0; i < n; i++)
		if (name_is(&h[i].name, name, l))
			vl += (k++ ? 1 : 0) + h[i].value.len;
	if (!k)
		return;
	pbw_ld(f, field, pbw_ld_size(l) + pbw_ld_size(vl));
	pbw_utf8(f, 1, name, l);
	pbw_ld(f, 2, vl);
	k = 0;
	for (unsigned i = 0; i < n; i++)
		if (name_is(&h[i].name, name, l)) {
			if (k++)
				pbw_raw(f, ",", 1);
			pbw_utf8_raw(f, h[i].value.p, h[i].value.len);
		}
}

/* Envoy's HeaderMap::byteSize: names and values (the pseudo-headers
 * Arion keeps apart counted as Envoy names them) */
static uint64_t hdr_bytes(const struct arn_access_header *h, unsigned n)
{
	uint64_t b = 0;
	for (unsigned i = 0; i < n; i++)
		b += h[i].name.len + h[i].value.len;
	return b;
}

static uint32_t method_enum(const struct arn_access_str *m)
{
	static const char *const names[] = {"GET",     "HEAD",	  "POST",  "PUT",  "DELETE",
					    "CONNECT", "OPTIONS", "TRACE", "PATCH"};
	for (uint32_t i = 0; m->p && i < 9; i++)
		if (m->len == strlen(names[i]) && memcmp(m->p, names[i], m->len) == 0)
			return i + 1;
	return 0; /* METHOD_UNSPECIFIED */
}

/* HTTPRequestProperties's body */
static void req_body(struct pbw *f, const struct arn_access_record *r,
		     const struct arn_cfg_grpc_log *cfg)
{
	const struct arn_access_header *h = r->req_headers;
	unsigned n = r->n_req_headers;
	uint32_t m = method_enum(&r->method);
	if (m)
		pbw_u64(f, 1, m);
	if (r->method.p) {
		put_s(f, 2, &r->scheme);
		put_s(f, 3, &r->authority);
		put_s(f, 5, &r->path);
		struct arn_access_str v = hdr1(h, n, "user-agent");
		put_s(f, 6, &v);
		v = hdr1(h, n, "referer");
		put_s(f, 7, &v);
		v = hdr1(h, n, "x-forwarded-for");
		put_s(f, 8, &v);
		v = hdr1(h, n, "x-request-id");
		put_s(f, 9, &v);
		v = hdr1(h, n, "x-envoy-original-path");
		put_s(f, 10, &v);
		uint64_t hb =
		    hdr_bytes(h, n) + 7 + r->method.len + 5 + r->path.len + 7 + r->scheme.len;
		pbw_u64(f, 11, hb);
	}
	if (r->bytes_received)
		pbw_u64(f, 12, r->bytes_received);
	for (size_t i = 0; i < cfg->n_req_hdrs; i++)
		put_hdr_entry(f, 13, h, n, cfg->req_hdrs[i]);
}

/* HTTPResponseProperties's body */
static void resp_body(struct pbw *f, const struct arn_access_record *r,
		      const struct arn_cfg_grpc_log *cfg)
{
	if (r->response_code) {
		pbw_ld(f, 1, 1 + pbw_vsize(r->response_code));
		pbw_u64(f, 1, r->response_code);
	}
	if (r->n_resp_headers)
		pbw_u64(f, 2, hdr_bytes(r->resp_headers, r->n_resp_headers) + 7 + 3);
	if (r->bytes_sent)
		pbw_u64(f, 3, r->bytes_sent);
	for (size_t i = 0; i < cfg->n_resp_hdrs; i++)
		put_hdr_entry(f, 4, r->resp_headers, r->n_resp_headers, cfg->resp_hdrs[i]);
	for (size_t i = 0; i < cfg->n_resp_trls; i++)
		put_hdr_entry(f, 5, r->resp_trailers, r->n_resp_trailers, cfg->resp_trls[i]);
	put_s(f, 6, &r->response_code_details);
}

static size_t measure(void (*fn)(struct pbw *, const struct arn_access_record *,
				 const struct arn_cfg_grpc_log *),
		      const struct arn_access_record *r, const struct arn_cfg_grpc_log *cfg)
{
	struct pbw m = PBW_MEASURE;
	fn(&m, r, cfg);
	return m.n;
}

static uint32_t proto_version(const struct arn_access_str *p)
{
	if (!p->p)
		return 0;
	if (p->len == 8 && memcmp(p->p, "HTTP/1.0", 8) == 0)
		return 1;
	if (p->len == 8 && memcmp(p->p, "HTTP/1.1", 8) == 0)
		return 2;
	if (p->len == 6 && memcmp(p->p, "HTTP/2", 6) == 0)
		return 3;
	return 0;
}

static void http_entry_body(struct pbw *f, const struct arn_access_record *r,
			    const struct arn_cfg_grpc_log *cfg, const struct arn_access_str *peer)
{
	pbw_ld(f, 1, common_size(r, 6, peer)); /* DownstreamEnd */
	common_body(f, r, 6, peer);
	uint32_t v = proto_version(&r->protocol);
	if (v)
		pbw_u64(f, 2, v);
	pbw_ld(f, 3, measure(req_body, r, cfg));
	req_body(f, r, cfg);
	pbw_ld(f, 4, measure(resp_body, r, cfg));
	resp_body(f, r, cfg);
}

static void tcp_entry_body(struct pbw *f, const struct arn_access_record *r,
			   const struct arn_access_str *peer)
{
	pbw_ld(f, 1, common_size(r, 3, peer)); /* TcpConnectionEnd */
	common_body(f, r, 3, peer);
	size_t cp = u64_field(r->bytes_received) + u64_field(r->bytes_sent);
	pbw_ld(f, 2, cp);
	if (r->bytes_received)
		pbw_u64(f, 1, r->bytes_received);
	if (r->bytes_sent)
		pbw_u64(f, 2, r->bytes_sent);
}

size_t http_glog_als_entry(uint8_t *out, size_t cap, const struct arn_access_record *r,
			   const struct arn_cfg_grpc_log *cfg, bool tcp, const char *peer,
			   size_t peer_len)
{
	struct arn_access_str ps = {peer, (uint32_t)peer_len};
	const struct arn_access_str *pp = peer && peer_len ? &ps : NULL;
	struct pbw m = PBW_MEASURE;
	if (tcp)
		tcp_entry_body(&m, r, pp);
	else
		http_entry_body(&m, r, cfg, pp);
	struct pbw f = {out, 0, cap, false};
	pbw_ld(&f, 1, m.n); /* HTTPAccessLogEntries / TCPAccessLogEntries .log_entry */
	if (tcp)
		tcp_entry_body(&f, r, pp);
	else
		http_entry_body(&f, r, cfg, pp);
	return f.err ? 0 : f.n;
}

static void ident_body(struct pbw *f, const struct arn_cfg_grpc_log *cfg)
{
	/* Identifier{1: Node{1: id, 2: cluster, 4: Locality{2: zone}}, 2: log_name} */
	size_t loc = str_field(g_zone_len);
	size_t node =
	    str_field(g_node_id_len) + str_field(g_cluster_len) + (loc ? pbw_ld_size(loc) : 0);
	pbw_ld(f, 1, node);
	if (g_node_id_len)
		pbw_utf8(f, 1, g_node_id, g_node_id_len);
	if (g_cluster_len)
		pbw_utf8(f, 2, g_cluster, g_cluster_len);
	if (loc) {
		pbw_ld(f, 4, loc);
		pbw_utf8(f, 2, g_zone, g_zone_len);
	}
	pbw_utf8(f, 2, cfg->log_name, cfg->log_name_len);
}

size_t http_glog_als_message(uint8_t *out, size_t cap, const struct arn_cfg_grpc_log *cfg, bool tcp,
			     bool ident, const uint8_t *entries, size_t len)
{
	/* StreamAccessLogsMessage{1: identifier, 2: http_logs | 3: tcp_logs}:
	 * the identifier on a stream's first message only (Envoy's
	 * GrpcAccessLoggerImpl::initMessage, called while the stream is not
	 * started) */
	struct pbw m = PBW_MEASURE;
	if (ident)
		ident_body(&m, cfg);
	size_t msg = (ident ? pbw_ld_size(m.n) : 0) + pbw_ld_size(len);
	struct pbw f = {out, 0, cap, false};
	if (!pbw_grpc_prefix(&f, msg))
		return 0;
	if (ident) {
		pbw_ld(&f, 1, m.n);
		ident_body(&f, cfg);
	}
	pbw_ld(&f, tcp ? 3 : 2, len);
	pbw_raw(&f, entries, len);
	return f.err ? 0 : f.n;
}

/* ---- the loggers (control lcore) ---------------------------------------------------- */

struct http_glog *http_glog_new(const struct arn_cfg_access_log *a, const char *lsn, size_t idx)
{
	const struct arn_cfg_grpc_log *cfg = a->grpc;
	struct http_glog *g = calloc(1, sizeof(*g));
	struct arn_sb err = ARN_SB_INIT;
	if (!g || !cfg)
		goto fail;
	g->a = a;
	/* lib/config compiled them already (the same builder): these fail
	 * only without memory */
	if (cfg->body && !(g->body = arn_access_format_text(cfg->body, &err)))
		goto fail;
	for (size_t i = 0; i < cfg->n_attrs && i < ARN_CFG_GLOG_ATTRS_MAX; i++)
		if (!(g->attr[i] = arn_access_format_text(
			  cfg->attrs[i].value ? cfg->attrs[i].value : "", &err)))
			goto fail;
	if (a->filter_json &&
	    !(g->filter = arn_access_filter_json(a->filter_json, strlen(a->filter_json), "", &err)))
		goto fail;
	arn_sb_free(&err);
	return g;
fail:
	ARN_ERR(HTTP, "listener '%s' access_log[%zu]: %s; this log is off", lsn, idx,
		err.len ? arn_sb_cstr(&err) : "out of memory");
	arn_sb_free(&err);
	http_glog_free(g);
	return NULL;
}

void http_glog_free(struct http_glog *g)
{
	if (!g)
		return;
	if (g->body)
		arn_access_format_free(g->body);
	for (size_t i = 0; i < ARN_CFG_GLOG_ATTRS_MAX; i++)
		if (g->attr[i])
			arn_access_format_free(g->attr[i]);
	arn_access_filter_free(g->filter);
	free(g);
}

/* ---- the worker's queue and exporter ------------------------------------------------ */

struct glog_q {
	/* the sub-requests' connection: only its worker and local address
	 * are read (http_subreq.c) */
	struct http_conn hc;
	struct http_subreq sr;
	struct http_timer timer;
	/* the queued records' configuration, in the pinned listener lsn */
	const struct arn_cfg_listener *lsn;
	const struct arn_cfg_grpc_log *cfg;
	/* the call's (OpenTelemetry: the export in flight; ALS: the open
	 * stream, the configuration of its last message), pinned until it
	 * is over */
	const struct arn_cfg_listener *out_lsn;
	const struct arn_cfg_grpc_log *out_cfg;
	struct http_subreq_header h[HTTP_GRPC_CALL_HDRS(ARN_CFG_GLOG_MD_MAX)];
	struct http_grpc_head hd; /* the call's (h) */
	uint32_t qn;
	size_t qlen;
	/* OpenTelemetry: an export is in flight; ALS: the stream is open */
	bool busy;
	/* ALS: the transport still reads out by reference (on_sent frees
	 * it): the next message waits in the queue */
	bool owed;
	uint8_t kind;		   /* enum arn_cfg_log_kind: what it queues */
	struct http_grpc_unary ex; /* the call */
	uint8_t q[HTTP_GLOG_QUEUE_BYTES];
	uint8_t out[OUT_MAX];
};

/* a worker's queues: OpenTelemetry's, HTTP ALS's, TCP ALS's */
enum { Q_OTEL = 0, Q_HTTP, Q_TCP, Q__COUNT };

struct http_glog_worker {
	struct glog_q q[Q__COUNT];
	uint8_t rec[HTTP_GLOG_RECORD_MAX];
	char peer[512]; /* the client certificate's subject, for ALS */
	char body[HTTP_GLOG_BODY_MAX];
	char attr[ARN_CFG_GLOG_ATTRS_MAX][HTTP_GLOG_ATTR_MAX];
};

static struct arn_stats_scope *g_stats, *g_als_stats;

void http_glog_module_init(const char *node_id, const char *cluster, const char *zone,
			   size_t zone_len)
{
	g_node_id_len =
	    copy_label(g_node_id, sizeof(g_node_id), node_id, node_id ? strlen(node_id) : 0);
	g_cluster_len =
	    copy_label(g_cluster, sizeof(g_cluster), cluster, cluster ? strlen(cluster) : 0);
	g_zone_len = copy_label(g_zone, sizeof(g_zone), zone, zone_len);
	if (!g_stats)
		g_stats = arn_stats_scope_get(&arn_stats_glog_otel_schema, NULL, NULL);
	if (!g_als_stats)
		g_als_stats = arn_stats_scope_get(&arn_stats_glog_als_schema, NULL, NULL);
}

/* A queue's counter: OpenTelemetry's or ALS's (HTTP and TCP alike, as
 * Envoy's one access_logs.grpc_access_log.* prefix) */
static void count(const struct glog_q *o, unsigned stat, uint64_t n)
{
	struct arn_stats_scope *sc = o->kind == ARN_CFG_LOG_OTEL ? g_stats : g_als_stats;
	if (sc && n)
		arn_stats_add(sc, o->hc.w->slot, stat, n);
}

static void export_over(struct glog_q *o, bool ok)
{
	if (!ok)
		count(o, ARN_GLOG_exports_failed, 1);
	o->busy = false;
	o->owed = false;
	if (o->out_lsn)
		arn_cfg_unpin(o->out_lsn);
	o->out_lsn = NULL;
	o->out_cfg = NULL;
}

/* The export is over, or the ALS stream (the collector closed it, reset
 * it, or it failed): Envoy's LocalStream::onRemoteClose, the next flush
 * opens another, its first message with the identifier (http_grpc_unary) */
static void ex_done(struct http_grpc_unary *u, bool ok)
{
	export_over(OWNER(u, struct glog_q, ex), ok);
}

/* ALS: the transport let go of the stream's last message: out is free
 * and the queue's records go at the next flush */
static void ex_sent(struct http_grpc_unary *u)
{
	OWNER(u, struct glog_q, ex)->owed = false;
}

/* The queue lets go of its records and their configuration. */
static void queue_release(struct glog_q *o)
{
	if (o->lsn)
		arn_cfg_unpin(o->lsn);
	o->lsn = NULL;
	o->cfg = NULL;
	o->qn = 0;
	o->qlen = 0;
}

/* The call's target: @p cfg's grpc_service */
static struct http_grpc_target target(const struct arn_cfg_grpc_log *cfg)
{
	return (struct http_grpc_target){&cfg->cluster,	  cfg->authority, cfg->authority_len,
					 cfg->timeout_ms, cfg->md,	  cfg->n_md};
}

static bool same_exporter(const struct arn_cfg_grpc_log *a, const struct arn_cfg_grpc_log *b);

/* ALS (Envoy's GrpcAccessLoggerImpl::flush over GrpcAccessLogClient::log):
 * the queued entries as one StreamAccessLogsMessage on the worker's open
 * stream, or on a new one (the identifier first) when none is. While the
 * transport still holds the last message (Envoy: the stream above its
 * write buffer's high watermark) the entries stay queued. The stream has
 * no deadline and no grpc-timeout (Envoy starts it with default
 * StreamOptions). */
static void als_flush(struct glog_q *o)
{
	const struct arn_cfg_grpc_log *cfg = o->cfg;
	if (o->busy && !same_exporter(o->out_cfg, cfg)) {
		/* another configuration's entries go on a stream of their own
		 * (Envoy: a logger, and its stream, per configuration) */
		http_subreq_cancel(&o->sr);
		export_over(o, true);
	}
	if (o->owed)
		return;
	bool open = o->busy;
	size_t len = http_glog_als_message(o->out, sizeof(o->out), cfg,
					   o->kind == ARN_CFG_LOG_TCP_GRPC, !open, o->q, o->qlen);
	uint32_t n = o->qn;
	/* the queue's pin goes to the stream, whose configuration is then
	 * the newest one it served (an older listener is not kept) */
	if (o->out_lsn)
		arn_cfg_unpin(o->out_lsn);
	o->out_lsn = o->lsn;
	o->out_cfg = cfg;
	o->lsn = NULL;
	o->cfg = NULL;
	o->qn = 0;
	o->qlen = 0;
	int rc = -ENOSPC;
	if (len && open) {
		rc = http_subreq_send(&o->sr, (const char *)o->out, len, false);
	} else if (len) {
		http_grpc_unary_init(&o->ex, ex_done);
		o->ex.sent = ex_sent;
		struct http_grpc_target tg = target(cfg);
		tg.timeout_ms = 0;
		rc = http_grpc_call_start(&o->sr, &o->hc, &tg, ALS_PATH, sizeof(ALS_PATH) - 1,
					  &o->hd, (const char *)o->out, len, true, 0,
					  &http_grpc_unary_ops, &o->ex);
		o->busy = rc == 0;
	}
	if (rc != 0) {
		/* not encoded (past the export's buffer), no stream (no
		 * endpoint, the circuit breaker): dropped, as Envoy clears a
		 * message whose stream could not start */
		count(o, ARN_GLOG_logs_dropped, n);
		if (rc != -ENOSPC)
			count(o, ARN_GLOG_exports_failed, 1);
		if (!o->busy)
			export_over(o, true);
		return;
	}
	/* out is the transport's until it has sent it all (on_sent) */
	o->owed = http_subreq_send(&o->sr, NULL, 0, false) == -EAGAIN;
}

/* Export the queued records (nothing while one is in flight or none
 * wait): the queue's pin of their listener goes with the export. */
static void flush(struct glog_q *o)
{
	const struct arn_cfg_grpc_log *cfg = o->cfg;
	if (!o->qn || !cfg)
		return;
	if (o->kind != ARN_CFG_LOG_OTEL) {
		als_flush(o);
		return;
	}
	if (o->busy)
		return;
	size_t len = http_glog_otel_export(o->out, sizeof(o->out), cfg, o->q, o->qlen);
	uint32_t n = o->qn;
	o->out_lsn = o->lsn; /* its pin: the export's */
	o->out_cfg = cfg;
	o->lsn = NULL;
	o->cfg = NULL;
	o->qn = 0;
	o->qlen = 0;
	o->busy = true;
	if (!len) {
		count(o, ARN_GLOG_logs_dropped, n);
		export_over(o, false);
		return;
	}
	http_grpc_unary_init(&o->ex, ex_done);
	struct http_grpc_target tg = target(cfg);
	/* an export waits at most its timeout, else the flush interval: a
	 * collector that never answers holds one export, not the worker */
	uint32_t tmo = cfg->timeout_ms ? cfg->timeout_ms : cfg->flush_ms;
	int rc = http_grpc_call_start(&o->sr, &o->hc, &tg, OTEL_LOGS_PATH,
				      sizeof(OTEL_LOGS_PATH) - 1, &o->hd, (const char *)o->out, len,
				      false, tmo, &http_grpc_unary_ops, &o->ex);
	if (rc != 0) {
		count(o, ARN_GLOG_logs_dropped, n);
		export_over(o, false);
	}
}

/* Envoy's flush timer: every buffer_flush_interval, re-armed while
 * records wait or a call is open */
static void flush_timer(struct http_timer *tm)
{
	struct glog_q *o = (struct glog_q *)((char *)tm - offsetof(struct glog_q, timer));
	flush(o);
	const struct arn_cfg_grpc_log *cfg = o->cfg ? o->cfg : o->out_cfg;
	if (o->qn || o->busy)
		http_timer_arm(o->hc.w, &o->timer, cfg ? cfg->flush_ms : 1000);
}

static bool sv_eq(const char *a, size_t al, const char *b, size_t bl)
{
	return al == bl && (!al || memcmp(a, b, al) == 0);
}

/* Do @p a and @p b export alike (the same cluster, call and resource)?
 * Their records then go in one export (Envoy Gateway writes the same
 * logger on every listener). */
static bool same_exporter(const struct arn_cfg_grpc_log *a, const struct arn_cfg_grpc_log *b)
{
	if (!sv_eq(a->cluster.name, a->cluster.len, b->cluster.name, b->cluster.len) ||
	    !sv_eq(a->authority, a->authority_len, b->authority, b->authority_len) ||
	    !sv_eq(a->log_name, a->log_name_len, b->log_name, b->log_name_len) ||
	    a->timeout_ms != b->timeout_ms || a->n_md != b->n_md ||
	    a->builtin_labels != b->builtin_labels || a->n_res_attrs != b->n_res_attrs ||
	    a->flush_ms != b->flush_ms || a->buffer_bytes != b->buffer_bytes)
		return false;
	for (size_t i = 0; i < a->n_md; i++)
		if (!sv_eq(a->md[i].name, a->md[i].name_len, b->md[i].name, b->md[i].name_len) ||
		    !sv_eq(a->md[i].value, a->md[i].value_len, b->md[i].value, b->md[i].value_len))
			return false;
	for (size_t i = 0; i < a->n_res_attrs; i++)
		if (!sv_eq(a->res_attrs[i].key, a->res_attrs[i].key_len, b->res_attrs[i].key,
			   b->res_attrs[i].key_len) ||
		    !sv_eq(a->res_attrs[i].value, a->res_attrs[i].value_len, b->res_attrs[i].value,
			   b->res_attrs[i].value_len))
			return false;
	return true;
}

/* Queue the record @p rec (@p len bytes) of @p cfg (listener @p l). */
static void enqueue(struct glog_q *o, const struct arn_cfg_listener *l, uint32_t laddr,
		    const struct arn_cfg_grpc_log *cfg, const uint8_t *rec, size_t len)
{
	struct http_worker *w = o->hc.w;
	/* the export's local address: a listener's of this worker, as a
	 * client's connection lends its own to ext_authz's checks */
	o->hc.laddr = laddr;
	o->hc.sladdr = laddr;
	if (o->qn && o->cfg != cfg && !same_exporter(o->cfg, cfg)) {
		/* another configuration's records go in another export */
		flush(o);
		if (o->qn) { /* one in flight: the others cannot wait */
			count(o, ARN_GLOG_logs_dropped, o->qn);
			queue_release(o);
		}
	}
	/* ALS: Envoy's canLogMore, a buffer at buffer_size_bytes flushed
	 * first, and the entry dropped when it could not go (the stream's
	 * last message still with the transport) */
	if (o->kind != ARN_CFG_LOG_OTEL && o->qn && cfg->buffer_bytes &&
	    o->qlen >= cfg->buffer_bytes) {
		flush(o);
		if (o->qn) {
			count(o, ARN_GLOG_logs_dropped, 1);
			return;
		}
	}
	if (o->qn >= HTTP_GLOG_QUEUE_RECORDS || len > sizeof(o->q) - o->qlen) {
		count(o, ARN_GLOG_logs_dropped, 1);
		return;
	}
	if (!o->qn) { /* the queue holds its records' configuration */
		arn_cfg_pin(l);
		o->lsn = l;
		o->cfg = cfg;
	}
	memcpy(o->q + o->qlen, rec, len);
	o->qlen += len;
	o->qn++;
	count(o, ARN_GLOG_logs_written, 1);
	if (o->qlen >= cfg->buffer_bytes)
		flush(o);
	if (!o->timer.armed)
		http_timer_arm(w, &o->timer, cfg->flush_ms);
}

/* One OTLP record of @p g for @p rec into the worker's scratch. */
static size_t otel_record(struct http_glog_worker *gw, const struct http_glog *g,
			  const struct arn_access_record *rec)
{
	const struct arn_cfg_grpc_log *cfg = g->a->grpc;
	struct http_glog_kv kv[ARN_CFG_GLOG_ATTRS_MAX];
	unsigned n = 0;
	size_t bl = 0;
	if (g->body)
		bl = arn_access_format_apply(g->body, rec, gw->body, sizeof(gw->body));
	for (size_t i = 0; i < cfg->n_attrs && i < ARN_CFG_GLOG_ATTRS_MAX; i++) {
		size_t vl =
		    arn_access_format_apply(g->attr[i], rec, gw->attr[i], sizeof(gw->attr[i]));
		kv[n++] = (struct http_glog_kv){cfg->attrs[i].key ? cfg->attrs[i].key : "",
						gw->attr[i], cfg->attrs[i].key_len, (uint32_t)vl};
	}
	uint64_t t = rec->start_time_us > 0 ? (uint64_t)rec->start_time_us * 1000u : 0;
	return http_glog_otel_record(gw->rec, sizeof(gw->rec), t, g->body ? gw->body : NULL, bl, kv,
				     n, rec->trace_id, rec->span_id);
}

void http_glog_log(struct http_worker *w, const struct arn_cfg_listener *l, uint32_t laddr,
		   const struct http_hcm_rt *r, const struct arn_access_record *rec)
{
	struct http_glog_worker *gw = w->glog;
	if (!gw || !l)
		return;
	for (unsigned i = 0; i < r->n_glogs; i++) {
		const struct http_glog *g = r->glogs[i];
		if (g->filter && !arn_access_filter_match(g->filter, rec))
			continue;
		uint8_t kind = g->a->kind;
		struct glog_q *o = &gw->q[kind == ARN_CFG_LOG_OTEL	  ? Q_OTEL
					  : kind == ARN_CFG_LOG_HTTP_GRPC ? Q_HTTP
									  : Q_TCP];
		size_t len;
		if (kind == ARN_CFG_LOG_OTEL) {
			len = otel_record(gw, g, rec);
		} else {
			/* TLS's peer subject, when the client sent a certificate */
			int pl = -1;
			if (rec->downstream_peer)
				pl = rec->downstream_peer(rec->downstream_peer_arg,
							  ARN_ACCESS_PEER_SUBJECT, gw->peer,
							  sizeof(gw->peer));
			len = http_glog_als_entry(
			    gw->rec, sizeof(gw->rec), rec, g->a->grpc, kind == ARN_CFG_LOG_TCP_GRPC,
			    gw->peer, pl > 0 && (size_t)pl < sizeof(gw->peer) ? (size_t)pl : 0);
		}
		if (!len) {
			count(o, ARN_GLOG_logs_dropped, 1);
			continue;
		}
		enqueue(o, l, laddr, g->a->grpc, gw->rec, len);
	}
}

int http_glog_worker_init(struct http_worker *w)
{
	struct http_glog_worker *gw = calloc(1, sizeof(*gw));
	if (!gw)
		return -ENOMEM;
	static const uint8_t kinds[Q__COUNT] = {ARN_CFG_LOG_OTEL, ARN_CFG_LOG_HTTP_GRPC,
						ARN_CFG_LOG_TCP_GRPC};
	for (unsigned i = 0; i < Q__COUNT; i++) {
		gw->q[i].hc.w = w;
		gw->q[i].timer.fn = flush_timer;
		gw->q[i].kind = kinds[i];
		gw->q[i].hd.h = gw->q[i].h;
	}
	w->glog = gw;
	return 0;
}

void http_glog_worker_fini(struct http_worker *w)
{
	struct http_glog_worker *gw = w->glog;
	if (!gw)
		return;
	/* an export in flight is not cancelled: the worker's upstream
	 * connections are already gone (worker_free), and with them every
	 * callback that could reach it */
	for (unsigned i = 0; i < Q__COUNT; i++) {
		http_timer_cancel(&gw->q[i].timer);
		if (gw->q[i].out_lsn)
			arn_cfg_unpin(gw->q[i].out_lsn);
		queue_release(&gw->q[i]);
	}
	free(gw);
	w->glog = NULL;
}

const struct http_glog_ops http_glog_ops = {
    .create = http_glog_new,
    .destroy = http_glog_free,
    .log = http_glog_log,
};
