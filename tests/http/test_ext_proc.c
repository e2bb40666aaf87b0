/*
 * envoy.filters.http.ext_proc and what it stands on: the streaming
 * sub-request (lib/http/http_subreq.c, sr->stream), one bidirectional
 * gRPC call per client request, on the real TCP stack over the fake
 * lib/net (hcm_harness.h) with the processing service a raw HTTP/2 peer
 * whose frames are built and read here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <time.h>

#include "tjwt.h" /* before the harness, whose macros OpenSSL's headers would meet */

#include "hcm_harness.h"
#include "arn_access_log.h"
#include "arn_stats_envoy.h"
#include "arn_stats_snapshot.h"
#include "http_conn.h"
#include "http_subreq.h"
#include "http_worker.h"

#define AT_(t) "\"@type\":\"type.googleapis.com/envoy.extensions.filters.http." t "\""

/* Cluster "dyn" (HTTP/2) at the upstream peer of port 203. */
/* clang-format off */
#define EP_CLUSTER                                                                                 \
	"{\"name\":\"dyn\",\"type\":\"STATIC\",\"connect_timeout\":\"0.3s\","                     \
	"\"http2_protocol_options\":{},"                                                           \
	"\"load_assignment\":{\"cluster_name\":\"dyn\",\"endpoints\":[{\"lb_endpoints\":["        \
	HH_EP(203) "]}]}}"
/* clang-format on */

static void send_raw(struct peer *p, const void *d, size_t n)
{
	assert_non_null(p);
	hh_send(p, d, (uint32_t)n, 0);
	hh_settle();
}

static void snapshot(uint32_t *rx0)
{
	for (int i = 0; i < N_PEERS; i++)
		rx0[i] = peers[i].rx;
}

/* The upstream connection that received bytes since @p rx0, or NULL. */
static struct peer *upstream_that_got(const uint32_t *rx0)
{
	for (unsigned u = 0; u < N_UPSTREAMS; u++) {
		struct peer *p = hh_upstream(u);
		if (p && p->rx != rx0[p - peers])
			return p;
	}
	return NULL;
}

static struct http_worker *worker(void)
{
	struct arn_tcp_worker *wk = tcp_wk(lc);
	for (int i = 0; i < TCP_LISTENERS_MAX; i++)
		if (wk->lsn[i].used && wk->lsn[i].port == 80)
			return wk->lsn[i].user;
	fail_msg("no HTTP worker");
	return NULL;
}

/* The worker's connection of client peer @p p. */
static struct http_conn *conn_of(struct http_worker *w, struct peer *p)
{
	for (uint32_t i = 0; p && i < w->n_conns; i++)
		if (w->conns[i].c.tc && w->conns[i].c.rport == p->port)
			return &w->conns[i].c;
	return NULL;
}

/* What @p p received: its capture when a test set one (everything),
 * else its log (the first PEER_LOG bytes). */
static const char *plog(const struct peer *p, uint32_t *len)
{
	*len = p->cap ? p->cap_len : p->log_len;
	return p->cap ? (const char *)p->cap : p->log;
}

/* Capture everything @p p receives from now on, after what it has: a
 * buffer of its own for each of the first PROC_CAPS peers captured in a
 * test (one shared buffer had two processors' frames interleaved, which
 * read as a stream that never came: test_ext_proc_alternating_clusters). */
#define PROC_CAPS 4
static uint8_t proc_cap[PROC_CAPS][128 * 1024];
static void capture(struct peer *p)
{
	if (p->cap)
		return;
	unsigned k = 0;
	while (k < PROC_CAPS) {
		bool used = false;
		for (unsigned q = 0; q < N_PEERS && !used; q++)
			used = peers[q].cap == proc_cap[k];
		if (!used)
			break;
		k++;
	}
	assert_true(k < PROC_CAPS);
	memcpy(proc_cap[k], p->log, p->log_len);
	p->cap = proc_cap[k];
	p->cap_len = p->log_len;
	p->cap_max = sizeof(proc_cap[k]);
}

static unsigned count_str_peer(const struct peer *p, const char *s)
{
	unsigned n = 0;
	size_t k = strlen(s);
	for (uint32_t i = 0; p && i + k <= p->log_len; i++)
		n += memcmp(p->log + i, s, k) == 0;
	return n;
}

/* ---- an HTTP/2 peer's frames ----------------------------------------------------------- */

/* What an HTTP/2 upstream peer @p a received (its log: the preface, then
 * frames) on stream @p sid: the number of HEADERS frames, DATA bytes
 * (into @p out, *@p n of them, at most @p cap) and whether END_STREAM
 * came. */
struct h2_seen {
	unsigned n_headers, n_data;
	bool end_stream;
};

static struct h2_seen h2_read(const struct peer *a, uint32_t sid, uint8_t *out, size_t cap,
			      size_t *n)
{
	struct h2_seen s = {0};
	uint32_t off = 24, ll;
	const char *lg = plog(a, &ll);
	*n = 0;
	assert_true(ll >= 24 && memcmp(lg, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24) == 0);
	while (off + 9 <= ll) {
		const uint8_t *f = (const uint8_t *)lg + off;
		uint32_t len = (uint32_t)f[0] << 16 | (uint32_t)f[1] << 8 | f[2];
		uint32_t id = (uint32_t)(f[5] & 0x7f) << 24 | (uint32_t)f[6] << 16 |
			      (uint32_t)f[7] << 8 | f[8];
		if (off + 9 + len > ll)
			break;
		if (id == sid && f[3] == 1)
			s.n_headers++;
		if (id == sid && f[3] == 0) {
			s.n_data++;
			assert_true(*n + len <= cap);
			memcpy(out + *n, f + 9, len);
			*n += len;
		}
		if (id == sid && (f[3] == 0 || f[3] == 1) && (f[4] & 1))
			s.end_stream = true;
		off += 9 + len;
	}
	return s;
}

/* A gRPC message (@p n bytes @p msg) with its 5-byte prefix, into @p b. */
static size_t grpc_frame(uint8_t *b, const void *msg, size_t n)
{
	b[0] = 0;
	b[1] = (uint8_t)(n >> 24);
	b[2] = (uint8_t)(n >> 16);
	b[3] = (uint8_t)(n >> 8);
	b[4] = (uint8_t)n;
	memcpy(b + 5, msg, n);
	return 5 + n;
}

/* The server's SETTINGS (@p init_window: SETTINGS_INITIAL_WINDOW_SIZE,
 * 0: none) and its ACK of ours. */
static size_t h2_settings(uint8_t *b, uint32_t init_window)
{
	size_t k = 0;
	if (init_window) {
		k += hh_h2_frame_hdr(b + k, 6, 4, 0, 0);
		uint8_t s[6] = {0,
				4,
				(uint8_t)(init_window >> 24),
				(uint8_t)(init_window >> 16),
				(uint8_t)(init_window >> 8),
				(uint8_t)init_window};
		memcpy(b + k, s, 6);
		k += 6;
	} else {
		k += hh_h2_frame_hdr(b + k, 0, 4, 0, 0);
	}
	k += hh_h2_frame_hdr(b + k, 0, 4, 1, 0); /* ACK */
	return k;
}

/* A response head on @p sid: :status 200, content-type application/grpc. */
static size_t h2_grpc_head(uint8_t *b, uint32_t sid)
{
	uint8_t h[32];
	size_t hl = 0;
	h[hl++] = 0x88; /* :status 200 (static 8) */
	h[hl++] = 0x0f; /* content-type (static 31), a literal */
	h[hl++] = 0x10;
	h[hl++] = 16;
	memcpy(h + hl, "application/grpc", 16);
	hl += 16;
	size_t k = hh_h2_frame_hdr(b, (uint32_t)hl, 1, 0x4, sid);
	memcpy(b + k, h, hl);
	return k + hl;
}

/* A DATA frame on @p sid of @p n bytes @p d (@p end: END_STREAM). */
static size_t h2_data(uint8_t *b, uint32_t sid, const void *d, size_t n, bool end)
{
	size_t k = hh_h2_frame_hdr(b, (uint32_t)n, 0, end ? 1 : 0, sid);
	memcpy(b + k, d, n);
	return k + n;
}

/* Trailers grpc-status @p gs on @p sid (END_STREAM). */
static size_t h2_grpc_trailers(uint8_t *b, uint32_t sid, const char *gs)
{
	size_t gl = strlen(gs);
	uint8_t t[32] = {0x00, 11,  'g', 'r', 'p', 'c', '-',
			 's',  't', 'a', 't', 'u', 's', (uint8_t)gl};
	memcpy(t + 14, gs, gl);
	size_t k = hh_h2_frame_hdr(b, (uint32_t)(14 + gl), 1, 0x5, sid);
	memcpy(b + k, t, 14 + gl);
	return k + 14 + gl;
}

/* A WINDOW_UPDATE of @p inc on @p sid. */
static size_t h2_window_update(uint8_t *b, uint32_t sid, uint32_t inc)
{
	size_t k = hh_h2_frame_hdr(b, 4, 8, 0, sid);
	b[k++] = (uint8_t)(inc >> 24);
	b[k++] = (uint8_t)(inc >> 16);
	b[k++] = (uint8_t)(inc >> 8);
	b[k++] = (uint8_t)inc;
	return k;
}

/* ---- the streaming sub-request --------------------------------------------------------- */

/* What a sub-request's callbacks saw, in order: "H" head, "B<n>" body
 * slice, "T" trailers, "E" end, "F<why>" failed, "S" sent. */
struct ss_rec {
	char ev[512];
	uint8_t body[256];
	size_t blen;
};

static void ss_ev(struct http_subreq *sr, const char *e)
{
	struct ss_rec *r = sr->user;
	size_t l = strlen(r->ev);
	snprintf(r->ev + l, sizeof(r->ev) - l, "%s ", e);
}

static void ss_head(struct http_subreq *sr, const struct arn_h1_msg *m)
{
	char e[16];
	snprintf(e, sizeof(e), "H%u", m->status);
	ss_ev(sr, e);
}

static void ss_body(struct http_subreq *sr, const char *d, size_t n)
{
	struct ss_rec *r = sr->user;
	char e[16];
	snprintf(e, sizeof(e), "B%zu", n);
	ss_ev(sr, e);
	assert_true(r->blen + n <= sizeof(r->body));
	memcpy(r->body + r->blen, d, n);
	r->blen += n;
}

static void ss_trailers(struct http_subreq *sr, const struct arn_h1_msg *m)
{
	(void)m;
	ss_ev(sr, "T");
}

static void ss_end(struct http_subreq *sr)
{
	ss_ev(sr, "E");
}

static void ss_failed(struct http_subreq *sr, const char *why)
{
	char e[64];
	snprintf(e, sizeof(e), "F<%s>", why);
	ss_ev(sr, e);
}

static void ss_sent(struct http_subreq *sr)
{
	ss_ev(sr, "S");
}

static const struct http_subreq_ops ss_ops = {
    .on_head = ss_head,
    .on_body = ss_body,
    .on_end = ss_end,
    .on_trailers = ss_trailers,
    .on_failed = ss_failed,
    .on_sent = ss_sent,
};

static const struct http_subreq_header ss_hdrs[] = {
    {"content-type", "application/grpc", 12, 16},
    {"te", "trailers", 2, 8},
};

#define SS_PATH "/envoy.service.ext_proc.v3.ExternalProcessor/Process"

/* Start a streaming sub-request of client 0's connection to "dyn" with
 * @p first (@p n bytes) as its first body bytes; @return the service's
 * peer. */
static struct peer *ss_start(struct http_subreq *sr, struct ss_rec *rec, const uint8_t *first,
			     size_t n)
{
	hh_begin(1);
	hh_apply(ARN_TYPE_URL_CLUSTER, EP_CLUSTER);
	hh_settle();
	hh_open(0, 80);
	hh_settle();
	struct http_conn *hc = conn_of(worker(), hh_client(0));
	assert_non_null(hc);
	memset(sr, 0, sizeof(*sr));
	memset(rec, 0, sizeof(*rec));
	sr->stream = true;
	struct arn_cfg_ref ref = {.name = "dyn", .len = 3, .hash = arn_cfg_hash("dyn", 3)};
	uint32_t rx0[N_PEERS];
	snapshot(rx0);
	assert_int_equal(http_subreq_start(sr, hc, arn_config_gen(store), &ref, SS_PATH,
					   strlen(SS_PATH), ss_hdrs, 2, (const char *)first, n, 0,
					   &ss_ops, rec),
			 0);
	hh_settle();
	struct peer *a = upstream_that_got(rx0);
	assert_non_null(a);
	a->sent_head = true; /* frames, not HTTP/1.1 */
	return a;
}

/*
 * A streaming sub-request is one HTTP/2 request whose body goes as the
 * caller gives it: the head and the first message without END_STREAM,
 * a second message later, the end last; the response's head and messages
 * reach the caller as they arrive, while the request is still open
 * (a message split over two DATA frames comes as two slices), then its
 * trailers and end. Flow control: past the stream's window (the
 * server's SETTINGS_INITIAL_WINDOW_SIZE) a write waits, a second one is
 * refused with -EAGAIN, and on_sent comes once the WINDOW_UPDATE lets
 * the first out. Fails before: http_subreq_send and sr->stream do not
 * exist (the request was a POST with its content-length and END_STREAM).
 */
static void test_subreq_stream(void **state)
{
	(void)state;
	struct http_subreq sr;
	struct ss_rec rec;
	uint8_t m1[16], m2[16], m3[16], seen[256], b[512];
	size_t n1 = grpc_frame(m1, "one", 3), n2 = grpc_frame(m2, "second", 6),
	       n3 = grpc_frame(m3, "3", 1), sn, k;
	struct peer *a = ss_start(&sr, &rec, m1, n1);
	struct h2_seen s = h2_read(a, 1, seen, sizeof(seen), &sn);
	assert_int_equal(s.n_headers, 1);
	assert_false(s.end_stream);
	assert_int_equal(sn, n1);
	assert_memory_equal(seen, m1, n1);
	assert_false(memmem(a->log, a->log_len, "content-length", 14));
	/* the server's window for the stream is what it has taken already:
	 * the next write waits */
	k = h2_settings(b, (uint32_t)n1);
	send_raw(a, b, k);
	assert_int_equal(http_subreq_send(&sr, (const char *)m2, n2, false), 0);
	hh_settle();
	s = h2_read(a, 1, seen, sizeof(seen), &sn);
	assert_int_equal(sn, n1); /* the window is closed */
	assert_int_equal(http_subreq_send(&sr, (const char *)m3, n3, true), -EAGAIN);
	assert_string_equal(rec.ev, "");
	/* the response starts while the request is open */
	k = h2_grpc_head(b, 1);
	uint8_t r1[16];
	size_t rn = grpc_frame(r1, "ans", 3);
	k += h2_data(b + k, 1, r1, 4, false); /* the message in two frames */
	send_raw(a, b, k);
	k = h2_data(b, 1, r1 + 4, rn - 4, false);
	send_raw(a, b, k);
	assert_string_equal(rec.ev, "H200 B4 B4 ");
	assert_int_equal(rec.blen, rn);
	assert_memory_equal(rec.body, r1, rn);
	/* the window opens: the waiting write goes, on_sent follows */
	k = h2_window_update(b, 1, 1000);
	send_raw(a, b, k);
	s = h2_read(a, 1, seen, sizeof(seen), &sn);
	assert_int_equal(sn, n1 + n2);
	assert_memory_equal(seen + n1, m2, n2);
	assert_false(s.end_stream);
	assert_string_equal(rec.ev, "H200 B4 B4 S ");
	/* the last message and the request's end */
	assert_int_equal(http_subreq_send(&sr, (const char *)m3, n3, true), 0);
	hh_settle();
	s = h2_read(a, 1, seen, sizeof(seen), &sn);
	assert_int_equal(sn, n1 + n2 + n3);
	assert_memory_equal(seen + n1 + n2, m3, n3);
	assert_true(s.end_stream);
	assert_int_equal(http_subreq_send(&sr, NULL, 0, true), -ENOTCONN);
	/* the answer ends */
	k = h2_grpc_trailers(b, 1, "0");
	send_raw(a, b, k);
	assert_string_equal(rec.ev, "H200 B4 B4 S T E ");
	assert_false(sr.running);
	assert_int_equal(http_subreq_send(&sr, NULL, 0, true), -ENOTCONN);
	hh_end();
}

/* The server ends its answer (trailers-only) while the request is still
 * open: the sub-request is over (on_head, on_end), its HTTP/2 stream
 * reset with NO_ERROR (RFC 9113 8.1), not CANCEL, and the connection
 * stays for the next one (a second stream, id 3, on it). */
static void test_subreq_stream_answered_early(void **state)
{
	(void)state;
	struct http_subreq sr;
	struct ss_rec rec;
	uint8_t m1[16], b[256];
	size_t n1 = grpc_frame(m1, "one", 3), k;
	struct peer *a = ss_start(&sr, &rec, m1, n1);
	k = h2_settings(b, 0);
	uint8_t h[48] = {0x88, 0x0f, 0x10, 16};
	memcpy(h + 4, "application/grpc", 16);
	memcpy(h + 20,
	       "\x00\x0bgrpc-status\x01"
	       "7",
	       15);
	k += hh_h2_frame_hdr(b + k, 35, 1, 0x5, 1);
	memcpy(b + k, h, 35);
	k += 35;
	uint32_t tx0 = a->rx;
	send_raw(a, b, k);
	assert_string_equal(rec.ev, "H200 E "); /* grpc-status in the head */
	/* RST_STREAM(1, NO_ERROR) */
	const uint8_t rst[] = {0, 0, 4, 3, 0, 0, 0, 0, 1, 0, 0, 0, 0};
	assert_non_null(memmem(a->log + (a->log_len - (a->rx - tx0)), a->rx - tx0, rst, 13));
	assert_false(sr.running);
	/* the connection serves the next sub-request */
	struct http_conn *hc = conn_of(worker(), hh_client(0));
	struct arn_cfg_ref ref = {.name = "dyn", .len = 3, .hash = arn_cfg_hash("dyn", 3)};
	memset(&sr, 0, sizeof(sr));
	memset(&rec, 0, sizeof(rec));
	sr.stream = true;
	uint32_t rx0[N_PEERS];
	snapshot(rx0);
	assert_int_equal(http_subreq_start(&sr, hc, arn_config_gen(store), &ref, SS_PATH,
					   strlen(SS_PATH), ss_hdrs, 2, (const char *)m1, n1, 0,
					   &ss_ops, &rec),
			 0);
	hh_settle();
	assert_ptr_equal(upstream_that_got(rx0), a);
	uint8_t seen[64];
	size_t sn;
	struct h2_seen s = h2_read(a, 3, seen, sizeof(seen), &sn);
	assert_int_equal(s.n_headers, 1);
	assert_int_equal(sn, n1);
	http_subreq_cancel(&sr);
	hh_settle();
	assert_string_equal(rec.ev, "");
	hh_end();
}

/* ---- envoy.filters.http.ext_proc ---------------------------------------------------------- */

#define OK5 "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"

static void send_str(struct peer *p, const char *s)
{
	send_raw(p, s, strlen(s));
}

/* Listener "dyn" (port 82) whose ext_proc filter "ep" sends the request's
 * headers to cluster "dyn" (EP_CLUSTER: HTTP/2) with initial_metadata
 * x-tenant, the response's headers skipped, then the router to "web";
 * /open has the filter disabled (ExtProcPerRoute). %s: the access log's
 * path, then more ExternalProcessor fields. */
/* clang-format off */
#define EP_LISTENER                                                                                \
	"{\"name\":\"dyn\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","              \
	"\"port_value\":82}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","                  \
	"\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.filters.network."      \
	"http_connection_manager.v3.HttpConnectionManager\",\"stat_prefix\":\"l4e\","              \
	"\"access_log\":[{\"name\":\"f\",\"typed_config\":{\"@type\":\"type.googleapis.com/"       \
	"envoy.extensions.access_loggers.file.v3.FileAccessLog\",\"path\":\"%s\",\"log_format\":"  \
	"{\"text_format_source\":{\"inline_string\":\"%%RESPONSE_CODE%% "                          \
	"%%RESPONSE_CODE_DETAILS%%\\n\"}}}}],"                                                     \
	"\"route_config\":{\"name\":\"dyn\",\"virtual_hosts\":["                                   \
	"{\"name\":\"all\",\"domains\":[\"*\"],\"routes\":["                                       \
	"{\"match\":{\"prefix\":\"/open\"},\"route\":{\"cluster\":\"web\"},"                       \
	"\"typed_per_filter_config\":{\"ep\":{" AT_("ext_proc.v3.ExtProcPerRoute")                \
	",\"disabled\":true}}},"                                                                   \
	"{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}]}]},"                      \
	"\"http_filters\":[{\"name\":\"ep\",\"typed_config\":{" AT_("ext_proc.v3.ExternalProcessor") \
	",\"grpc_service\":{\"envoy_grpc\":{\"cluster_name\":\"dyn\"},"                            \
	"\"initial_metadata\":[{\"key\":\"x-tenant\",\"value\":\"t1\"}]},"                        \
	"\"processing_mode\":{\"response_header_mode\":\"SKIP\"}%s}},"                             \
	"{\"name\":\"envoy.filters.http.router\",\"typed_config\":{" AT_("router.v3.Router") "}}]}}]}]}"
/* clang-format on */

static uint64_t ep_stat(unsigned id)
{
	struct arn_stats_scope *sc =
	    arn_stats_scope_get_named(&arn_stats_ext_proc_schema, "http.l4e.ext_proc", NULL, NULL);
	assert_non_null(sc);
	uint64_t v = arn_stats_counter_value(sc, id);
	arn_stats_scope_put(sc);
	return v;
}

static void log_take(const char *path, char *log, size_t cap)
{
	arn_access_log_drain();
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	size_t n = fread(log, 1, cap - 1, f);
	fclose(f);
	unlink(path);
	log[n] = 0;
}

static void ep_begin(const char *path, const char *extra)
{
	char json[8192];
	unlink(path);
	snprintf(json, sizeof(json), EP_LISTENER, path, extra);
	hh_begin(1);
	hh_apply(ARN_TYPE_URL_CLUSTER, EP_CLUSTER);
	hh_apply(ARN_TYPE_URL_LISTENER, json);
	hh_cfg_changed = true;
	hh_settle();
	hh_open(0, 82);
	hh_settle();
}

/* Protobuf field @p num of wire type 2 with @p len bytes @p d at @p b + *@p at. */
static void pb_ld(uint8_t *b, size_t *at, unsigned num, const void *d, size_t len)
{
	assert_true(len < 16384);
	b[(*at)++] = (uint8_t)(num << 3 | 2);
	if (len >= 128)
		b[(*at)++] = (uint8_t)((len & 0x7f) | 0x80);
	b[(*at)++] = (uint8_t)(len >= 128 ? len >> 7 : len);
	memcpy(b + *at, d, len);
	*at += len;
}

static void pb_var(uint8_t *b, size_t *at, unsigned num, unsigned v)
{
	b[(*at)++] = (uint8_t)(num << 3);
	assert_true(v < 16384);
	if (v >= 128)
		b[(*at)++] = (uint8_t)((v & 0x7f) | 0x80);
	b[(*at)++] = (uint8_t)(v >= 128 ? v >> 7 : v);
}

/* A set_headers entry {header {key, raw_value}, append_action (-1:
 * unset), append BoolValue (-1: unset)} as field 1 of a HeaderMutation. */
static void set_hdr(uint8_t *mut, size_t *at, const char *k, const char *v, int action, int append)
{
	uint8_t hv[256], hvo[300];
	size_t n = 0, o = 0;
	pb_ld(hv, &n, 1, k, strlen(k));
	pb_ld(hv, &n, 3, v, strlen(v));
	pb_ld(hvo, &o, 1, hv, n);
	if (append >= 0) {
		uint8_t bv[2] = {0x08, (uint8_t)append};
		pb_ld(hvo, &o, 2, bv, 2);
	}
	if (action >= 0)
		pb_var(hvo, &o, 3, (unsigned)action);
	pb_ld(mut, at, 1, hvo, o);
}

/* The processor answers on @p sid (its SETTINGS first when @p first): a
 * 200 head, the message @p msg (@p n bytes, NULL: none). */
static void ep_answer(struct peer *a, bool first, uint32_t sid, const uint8_t *msg, size_t n)
{
	uint8_t b[4096];
	size_t k = 0;
	if (first)
		k += h2_settings(b, 0);
	k += h2_grpc_head(b + k, sid);
	if (msg) {
		uint8_t fr[2048];
		assert_true(n + 5 <= sizeof(fr));
		size_t fl = grpc_frame(fr, msg, n);
		k += h2_data(b + k, sid, fr, fl, false);
	}
	send_raw(a, b, k);
}

/* Client 0 sends @p req: @return the processor's peer (its message on
 * stream *@p sid in @p m, *@p mn bytes), NULL if none got anything. */
static struct peer *ep_request(const char *req, uint8_t *m, size_t cap, size_t *mn, uint32_t *sid,
			       struct peer *known)
{
	uint32_t rx0[N_PEERS];
	snapshot(rx0);
	send_str(hh_client(0), req);
	struct peer *a = known ? known : upstream_that_got(rx0);
	if (!a || a->rx == rx0[a - peers])
		return NULL;
	a->sent_head = true;
	capture(a);
	/* the last stream that has a HEADERS frame */
	uint32_t off = 24, last = 0, ll;
	const char *lg = plog(a, &ll);
	while (off + 9 <= ll) {
		const uint8_t *f = (const uint8_t *)lg + off;
		uint32_t len = (uint32_t)f[0] << 16 | (uint32_t)f[1] << 8 | f[2];
		uint32_t id = (uint32_t)(f[5] & 0x7f) << 24 | (uint32_t)f[6] << 16 |
			      (uint32_t)f[7] << 8 | f[8];
		if (f[3] == 1)
			last = id;
		off += 9 + len;
	}
	*sid = last;
	struct h2_seen s = h2_read(a, last, m, cap, mn);
	assert_int_equal(s.n_headers, 1);
	assert_false(s.end_stream); /* the stream stays open for the next messages */
	return a;
}

/* A HeaderValue {key @p k, raw_value @p v} is in ProcessingRequest @p m. */
static bool has_hv(const uint8_t *m, size_t n, const char *k, const char *v)
{
	uint8_t e[256];
	size_t el = 0;
	pb_ld(e, &el, 1, k, strlen(k));
	pb_ld(e, &el, 3, v, strlen(v));
	return memmem(m, n, e, el) != NULL;
}

static void client_since(uint32_t mark, char *out, size_t cap)
{
	struct peer *c = hh_client(0);
	size_t n = c->log_len - mark < cap - 1 ? c->log_len - mark : cap - 1;
	memcpy(out, c->log + mark, n);
	out[n] = 0;
}

/*
 * envoy.filters.http.ext_proc, the request's headers, as Envoy's filter:
 * one gRPC stream (ExternalProcessor/Process, initial_metadata as
 * headers) whose ProcessingRequest carries the pseudo-headers and fields
 * as a HeaderMap of raw_values (Host as :authority) and end_of_stream for
 * a request without body; the request waits for the answer. Its
 * header_mutation rides on the request upstream: OVERWRITE_IF_EXISTS_OR_ADD,
 * the deprecated append adding a line, the default replacing, a removal;
 * Host and x-envoy-* are refused by the default mutation rules (counted,
 * skipped). An immediate_response answers the client (status, header,
 * body, details with its spaces as '_'); a trailers-only UNAVAILABLE
 * answers 500 ext_proc_error_gRPC_error_14; an invalid value 500 with
 * Envoy's message; a message that does not decode 500 gRPC_error_13
 * (malformed); no answer within message_timeout 504
 * ext_proc_error_per-message_timeout_exceeded; the filter disabled on the
 * route (ExtProcPerRoute) opens no stream. Counted as Envoy's.
 * Fails before: the listener is refused (the filter's type is unknown).
 */
static void test_ext_proc_request_headers(void **state)
{
	(void)state;
	char path[64], r[4096];
	uint8_t m[2048], msg[1024], mut[1024], b[1024];
	size_t mn, n, k;
	uint32_t sid;
	snprintf(path, sizeof(path), "/tmp/arn_test_ep.%d.log", (int)getpid());
	ep_begin(path, "");
	uint64_t started0 = ep_stat(ARN_EXT_PROC_streams_started),
		 sent0 = ep_stat(ARN_EXT_PROC_stream_msgs_sent),
		 recv0 = ep_stat(ARN_EXT_PROC_stream_msgs_received),
		 rej0 = ep_stat(ARN_EXT_PROC_rejected_header_mutations),
		 failed0 = ep_stat(ARN_EXT_PROC_streams_failed),
		 to0 = ep_stat(ARN_EXT_PROC_message_timeouts),
		 mal0 = ep_stat(ARN_EXT_PROC_malformed);
	/* 1. mutations */
	uint32_t mark = hh_client(0)->log_len;
	struct peer *a = ep_request("GET /x?q=1 HTTP/1.1\r\nHost: a\r\nX-A: 1\r\nX-Drop: d\r\n"
				    "X-Keep: k\r\n\r\n",
				    m, sizeof(m), &mn, &sid, NULL);
	assert_non_null(a);
	assert_int_equal(sid, 1);
	assert_true(mn > 5 && m[0] == 0 && (size_t)(m[3] << 8 | m[4]) == mn - 5);
	if (!has_hv(m, mn, ":authority", "a") || !has_hv(m, mn, ":path", "/x?q=1") ||
	    !has_hv(m, mn, ":method", "GET") || !has_hv(m, mn, ":scheme", "http") ||
	    !has_hv(m, mn, "x-a", "1") || !has_hv(m, mn, "x-drop", "d") ||
	    has_hv(m, mn, "host", "a") || !memmem(m, mn, "\x18\x01", 2))
		fail_msg("the ProcessingRequest (%zu bytes) lacks what it should carry", mn);
	assert_int_equal(m[5], 2 << 3 | 2);	       /* request_headers */
	assert_int_equal(hh_client(0)->log_len, mark); /* the request waits */
	n = 0;
	set_hdr(mut, &n, "x-user", "alice", 2, -1); /* OVERWRITE_IF_EXISTS_OR_ADD */
	set_hdr(mut, &n, "x-a", "2", -1, 1);	    /* append: true, a line */
	set_hdr(mut, &n, "X-Keep", "k2", -1, -1);   /* nothing: the value replaces */
	set_hdr(mut, &n, "host", "evil", 2, -1);    /* a routing header: ignored */
	set_hdr(mut, &n, "x-envoy-x", "1", 2, -1);  /* x-envoy-*: ignored */
	pb_ld(mut, &n, 2, "x-drop", 6);		    /* remove_headers */
	size_t cn = 0, hn = 0;
	uint8_t common[1024], hr[1100];
	pb_ld(common, &cn, 2, mut, n); /* header_mutation */
	pb_ld(hr, &hn, 1, common, cn); /* HeadersResponse.response */
	k = 0;
	pb_ld(msg, &k, 1, hr, hn); /* request_headers */
	uint32_t rx0[N_PEERS];
	snapshot(rx0);
	ep_answer(a, true, sid, msg, k);
	rx0[a - peers] = a->rx;
	struct peer *u = upstream_that_got(rx0);
	assert_non_null(u);
	assert_ptr_not_equal(u, a);
	size_t ul = u->rx - rx0[u - peers];
	memcpy(r, u->log + u->log_len - ul, ul);
	r[ul] = 0;
	if (!strstr(r, "GET /x?q=1 HTTP/1.1\r\n") || !strstr(r, "x-user: alice\r\n") ||
	    !strstr(r, "X-A: 1\r\n") || !strstr(r, "x-a: 2\r\n") || strstr(r, "X-Drop") ||
	    !strstr(r, "k2\r\n") || strstr(r, "X-Keep: k\r\n") || strstr(r, "evil") ||
	    strstr(r, "x-envoy-x") || !strstr(r, "Host: a\r\n"))
		fail_msg("the upstream got: %s", r);
	send_str(u, OK5);
	client_since(mark, r, sizeof(r));
	if (!strstr(r, "HTTP/1.1 200 OK\r\n") || !strstr(r, "hello"))
		fail_msg("the client got: %s", r);
	assert_int_equal(ep_stat(ARN_EXT_PROC_rejected_header_mutations) - rej0, 2);
	/* the stream closed once answered, as Envoy's close(): END_STREAM,
	 * then a reset */
	assert_true(h2_read(a, 1, m, sizeof(m), &mn).end_stream);
	const uint8_t rst1[] = {0, 0, 4, 3, 0, 0, 0, 0, 1};
	uint32_t ll;
	const char *lg = plog(a, &ll);
	assert_non_null(memmem(lg, ll, rst1, 9));

	/* 2. an immediate response */
	mark = hh_client(0)->log_len;
	assert_ptr_equal(
	    ep_request("GET /deny HTTP/1.1\r\nHost: a\r\n\r\n", m, sizeof(m), &mn, &sid, a), a);
	assert_int_equal(sid, 3);
	n = 0;
	set_hdr(mut, &n, "x-why", "no", 2, -1);
	uint8_t imm[512], st[8];
	size_t il = 0, sl = 0;
	pb_var(st, &sl, 1, 403);
	pb_ld(imm, &il, 1, st, sl);
	pb_ld(imm, &il, 2, mut, n);
	pb_ld(imm, &il, 3, "denied", 6);
	pb_ld(imm, &il, 5, "my details", 10);
	k = 0;
	pb_ld(msg, &k, 7, imm, il);
	snapshot(rx0);
	ep_answer(a, false, sid, msg, k);
	rx0[a - peers] = a->rx;
	assert_null(upstream_that_got(rx0));
	client_since(mark, r, sizeof(r));
	if (!strstr(r, "HTTP/1.1 403 Forbidden\r\n") || !strstr(r, "x-why: no\r\n") ||
	    !strstr(r, "\r\n\r\ndenied"))
		fail_msg("the client got: %s", r);

	/* 3. a trailers-only UNAVAILABLE */
	mark = hh_client(0)->log_len;
	assert_ptr_equal(
	    ep_request("GET /e HTTP/1.1\r\nHost: a\r\n\r\n", m, sizeof(m), &mn, &sid, a), a);
	uint8_t h[48] = {0x88, 0x0f, 0x10, 16};
	memcpy(h + 4, "application/grpc", 16);
	memcpy(h + 20,
	       "\x00\x0bgrpc-status\x02"
	       "14",
	       16);
	k = hh_h2_frame_hdr(b, 36, 1, 0x5, sid);
	memcpy(b + k, h, 36);
	send_raw(a, b, k + 36);
	client_since(mark, r, sizeof(r));
	if (!strstr(r, "HTTP/1.1 500 Internal Server Error\r\n"))
		fail_msg("the client got: %s", r);

	/* 4. an invalid value: Envoy's message as details */
	mark = hh_client(0)->log_len;
	assert_ptr_equal(
	    ep_request("GET /v HTTP/1.1\r\nHost: a\r\n\r\n", m, sizeof(m), &mn, &sid, a), a);
	n = 0;
	set_hdr(mut, &n, "x-bad", "a\nb", 2, -1);
	cn = hn = k = 0;
	pb_ld(common, &cn, 2, mut, n);
	pb_ld(hr, &hn, 1, common, cn);
	pb_ld(msg, &k, 1, hr, hn);
	snapshot(rx0);
	ep_answer(a, false, sid, msg, k);
	rx0[a - peers] = a->rx;
	assert_null(upstream_that_got(rx0));
	client_since(mark, r, sizeof(r));
	if (!strstr(r, "HTTP/1.1 500 Internal Server Error\r\n"))
		fail_msg("the client got: %s", r);

	/* 5. a message that does not decode (a length past its end) */
	mark = hh_client(0)->log_len;
	assert_ptr_equal(
	    ep_request("GET /m HTTP/1.1\r\nHost: a\r\n\r\n", m, sizeof(m), &mn, &sid, a), a);
	ep_answer(a, false, sid, (const uint8_t *)"\x0a\x7f\x12", 3);
	client_since(mark, r, sizeof(r));
	if (!strstr(r, "HTTP/1.1 500 Internal Server Error\r\n"))
		fail_msg("the client got: %s", r);

	/* 6. the filter disabled on the route: no stream */
	snapshot(rx0);
	send_str(hh_client(0), "GET /open HTTP/1.1\r\nHost: a\r\n\r\n");
	u = upstream_that_got(rx0);
	assert_non_null(u);
	assert_ptr_not_equal(u, a);
	send_str(u, OK5);

	/* 7. no answer within message_timeout (200 ms) */
	mark = hh_client(0)->log_len;
	assert_ptr_equal(
	    ep_request("GET /slow HTTP/1.1\r\nHost: a\r\n\r\n", m, sizeof(m), &mn, &sid, a), a);
	hh_advance(150);
	assert_int_equal(hh_client(0)->log_len, mark);
	hh_advance(100);
	client_since(mark, r, sizeof(r));
	if (!strstr(r, "HTTP/1.1 504 Gateway Timeout\r\n"))
		fail_msg("the client got: %s", r);

	assert_int_equal(ep_stat(ARN_EXT_PROC_streams_started) - started0, 6);
	assert_int_equal(ep_stat(ARN_EXT_PROC_stream_msgs_sent) - sent0, 6);
	assert_int_equal(ep_stat(ARN_EXT_PROC_stream_msgs_received) - recv0, 3);
	assert_int_equal(ep_stat(ARN_EXT_PROC_rejected_header_mutations) - rej0, 3);
	assert_int_equal(ep_stat(ARN_EXT_PROC_streams_failed) - failed0, 2);
	assert_int_equal(ep_stat(ARN_EXT_PROC_malformed) - mal0, 1);
	assert_int_equal(ep_stat(ARN_EXT_PROC_message_timeouts) - to0, 1);
	hh_end();
	char log[2048];
	log_take(path, log, sizeof(log));
	if (!strstr(log, "200 via_upstream\n") || !strstr(log, "403 my_details\n") ||
	    !strstr(log, "500 ext_proc_error_gRPC_error_14\n") ||
	    !strstr(log, "500 Invalid_character_in_set_headers_mutation.\n") ||
	    !strstr(log, "500 ext_proc_error_gRPC_error_13\n") ||
	    !strstr(log, "504 ext_proc_error_per-message_timeout_exceeded\n"))
		fail_msg("the access log: %s", log);
}

/* failure_mode_allow: a stream that fails (connection refused: no
 * processor listening... here a trailers-only INTERNAL) and one whose
 * answer is late let the request on unprocessed, counted in
 * failure_mode_allowed; a processor that closes the stream with OK before
 * answering lets it on too (streams_closed, as Envoy's onGrpcClose); an
 * answer out of turn (response_headers) is spurious and lets it on. */
static void test_ext_proc_failure_mode_allow(void **state)
{
	(void)state;
	char path[64], r[2048];
	uint8_t m[2048], msg[64], b[256];
	size_t mn, k;
	uint32_t sid;
	snprintf(path, sizeof(path), "/tmp/arn_test_ep2.%d.log", (int)getpid());
	ep_begin(path, ",\"failure_mode_allow\":true");
	uint64_t fma0 = ep_stat(ARN_EXT_PROC_failure_mode_allowed),
		 closed0 = ep_stat(ARN_EXT_PROC_streams_closed),
		 spur0 = ep_stat(ARN_EXT_PROC_spurious_msgs_received);
	/* a trailers-only INTERNAL */
	struct peer *a =
	    ep_request("GET /1 HTTP/1.1\r\nHost: a\r\n\r\n", m, sizeof(m), &mn, &sid, NULL);
	assert_non_null(a);
	uint8_t h[48] = {0x88, 0x0f, 0x10, 16};
	memcpy(h + 4, "application/grpc", 16);
	memcpy(h + 20,
	       "\x00\x0bgrpc-status\x02"
	       "13",
	       16);
	k = h2_settings(b, 0);
	k += hh_h2_frame_hdr(b + k, 36, 1, 0x5, sid);
	memcpy(b + k, h, 36);
	uint32_t rx0[N_PEERS];
	snapshot(rx0);
	send_raw(a, b, k + 36);
	rx0[a - peers] = a->rx;
	struct peer *u = upstream_that_got(rx0);
	assert_non_null(u);
	send_str(u, OK5);
	/* late */
	assert_ptr_equal(
	    ep_request("GET /2 HTTP/1.1\r\nHost: a\r\n\r\n", m, sizeof(m), &mn, &sid, a), a);
	snapshot(rx0);
	hh_advance(250);
	rx0[a - peers] = a->rx;
	u = upstream_that_got(rx0);
	assert_non_null(u);
	send_str(u, OK5);
	/* closed with OK before an answer */
	assert_ptr_equal(
	    ep_request("GET /3 HTTP/1.1\r\nHost: a\r\n\r\n", m, sizeof(m), &mn, &sid, a), a);
	memcpy(h + 20,
	       "\x00\x0bgrpc-status\x01"
	       "0",
	       15);
	k = hh_h2_frame_hdr(b, 35, 1, 0x5, sid);
	memcpy(b + k, h, 35);
	snapshot(rx0);
	send_raw(a, b, k + 35);
	rx0[a - peers] = a->rx;
	u = upstream_that_got(rx0);
	assert_non_null(u);
	send_str(u, OK5);
	/* out of turn: response_headers while the request's are awaited */
	assert_ptr_equal(
	    ep_request("GET /4 HTTP/1.1\r\nHost: a\r\n\r\n", m, sizeof(m), &mn, &sid, a), a);
	size_t ml = 0;
	pb_ld(msg, &ml, 2, "", 0);
	snapshot(rx0);
	ep_answer(a, false, sid, msg, ml);
	rx0[a - peers] = a->rx;
	u = upstream_that_got(rx0);
	assert_non_null(u);
	send_str(u, OK5);
	assert_int_equal(count_str_peer(hh_client(0), "HTTP/1.1 200 OK"), 4);
	assert_int_equal(ep_stat(ARN_EXT_PROC_failure_mode_allowed) - fma0, 2);
	/* the OK close, and the INTERNAL let on (Envoy's onGrpcError calls
	 * onGrpcClose with failure_mode_allow) */
	assert_int_equal(ep_stat(ARN_EXT_PROC_streams_closed) - closed0, 2);
	assert_int_equal(ep_stat(ARN_EXT_PROC_spurious_msgs_received) - spur0, 1);
	(void)r;
	hh_end();
	unlink(path);
}

/* mutation_rules with disallow_is_error: a mutation the rules refuse
 * (x-envoy-*, without allow_envoy) fails the request with Envoy's
 * message as details; disallow_system leaves no pseudo-header to set.
 * override_message_timeout within max_message_timeout restarts the wait
 * with its value (received), 16 times an exchange at most, past it or
 * past the count is ignored; the immediate response
 * disabled (disable_immediate_response) is spurious and lets the request
 * on. */
static void test_ext_proc_rules_and_timeouts(void **state)
{
	(void)state;
	char path[64], r[2048];
	uint8_t m[2048], msg[512], mut[512], common[600], hr[700];
	size_t mn, n, cn, hn, k;
	uint32_t sid;
	snprintf(path, sizeof(path), "/tmp/arn_test_ep4.%d.log", (int)getpid());
	ep_begin(path, ",\"mutation_rules\":{\"disallow_is_error\":true},"
		       "\"max_message_timeout\":\"1s\",\"disable_immediate_response\":true");
	uint64_t rec0 = ep_stat(ARN_EXT_PROC_override_message_timeout_received),
		 ign0 = ep_stat(ARN_EXT_PROC_override_message_timeout_ignored),
		 spur0 = ep_stat(ARN_EXT_PROC_spurious_msgs_received);
	/* x-envoy-* refused as an error */
	uint32_t mark = hh_client(0)->log_len;
	struct peer *a =
	    ep_request("GET /1 HTTP/1.1\r\nHost: a\r\n\r\n", m, sizeof(m), &mn, &sid, NULL);
	assert_non_null(a);
	n = cn = hn = k = 0;
	set_hdr(mut, &n, "x-envoy-a", "1", 2, -1);
	pb_ld(common, &cn, 2, mut, n);
	pb_ld(hr, &hn, 1, common, cn);
	pb_ld(msg, &k, 1, hr, hn);
	ep_answer(a, true, sid, msg, k);
	client_since(mark, r, sizeof(r));
	if (!strstr(r, "HTTP/1.1 500 Internal Server Error\r\n"))
		fail_msg("the client got: %s", r);
	/* the wait extended to 600 ms (within 1 s), then 5 s ignored */
	mark = hh_client(0)->log_len;
	assert_ptr_equal(
	    ep_request("GET /2 HTTP/1.1\r\nHost: a\r\n\r\n", m, sizeof(m), &mn, &sid, a), a);
	uint8_t d[8];
	size_t dl = 0;
	k = 0;
	d[dl++] = 0x08; /* seconds: 0 */
	d[dl++] = 0;
	d[dl++] = 0x10; /* nanos: 600000000 */
	d[dl++] = 0x80;
	d[dl++] = 0x8c;
	d[dl++] = 0x8d;
	d[dl++] = 0x9e;
	d[dl++] = 0x02;
	pb_ld(msg, &k, 10, d, dl);
	ep_answer(a, false, sid, msg, k);
	/* 16 more: 15 taken (HTTP_EXT_PROC_OVERRIDES an exchange), 1 ignored */
	{
		static uint8_t many[16 * 64];
		size_t ml = 0;
		for (int i = 0; i < 16; i++) {
			uint8_t g[64];
			size_t gl = grpc_frame(g, msg, k);
			ml += h2_data(many + ml, sid, g, gl, false);
		}
		send_raw(a, many, ml);
	}
	hh_advance(400); /* past the 200 ms it started with */
	assert_int_equal(hh_client(0)->log_len, mark);
	k = 0;
	pb_ld(msg, &k, 10, "\x08\x05", 2); /* 5 s: past max_message_timeout */
	uint8_t b[256];
	size_t fl = grpc_frame(b, msg, k);
	uint8_t fr[300];
	size_t frl = h2_data(fr, sid, b, fl, false);
	send_raw(a, fr, frl);
	hh_advance(300); /* 600 ms from the override: over */
	client_since(mark, r, sizeof(r));
	if (!strstr(r, "HTTP/1.1 504 Gateway Timeout\r\n"))
		fail_msg("the client got: %s", r);
	/* an immediate response, disabled: spurious, the request goes on */
	assert_ptr_equal(
	    ep_request("GET /3 HTTP/1.1\r\nHost: a\r\n\r\n", m, sizeof(m), &mn, &sid, a), a);
	uint8_t imm[64], st[8];
	size_t il = 0, sl = 0;
	pb_var(st, &sl, 1, 403);
	pb_ld(imm, &il, 1, st, sl);
	k = 0;
	pb_ld(msg, &k, 7, imm, il);
	uint32_t rx0[N_PEERS];
	snapshot(rx0);
	ep_answer(a, false, sid, msg, k);
	rx0[a - peers] = a->rx;
	struct peer *u = upstream_that_got(rx0);
	assert_non_null(u);
	send_str(u, OK5);
	assert_int_equal(ep_stat(ARN_EXT_PROC_override_message_timeout_received) - rec0, 16);
	assert_int_equal(ep_stat(ARN_EXT_PROC_override_message_timeout_ignored) - ign0, 2);
	assert_int_equal(ep_stat(ARN_EXT_PROC_spurious_msgs_received) - spur0, 1);
	hh_end();
	char log[1024];
	log_take(path, log, sizeof(log));
	if (!strstr(log, "500 Invalid_attempt_to_modify_x-envoy-a\n") ||
	    !strstr(log, "504 ext_proc_error_per-message_timeout_exceeded\n") ||
	    !strstr(log, "200 via_upstream\n"))
		fail_msg("the access log: %s", log);
}

/* The client goes away while its headers wait for the processor: the
 * gRPC stream is reset, its context and buffer go back (hh_end: nothing
 * left), the late answer is nobody's. */
static void test_ext_proc_client_gone(void **state)
{
	(void)state;
	char path[64];
	uint8_t m[2048], msg[64];
	size_t mn;
	uint32_t sid;
	snprintf(path, sizeof(path), "/tmp/arn_test_ep3.%d.log", (int)getpid());
	ep_begin(path, "");
	struct peer *a =
	    ep_request("GET /x HTTP/1.1\r\nHost: a\r\n\r\n", m, sizeof(m), &mn, &sid, NULL);
	assert_non_null(a);
	hh_reset(hh_client(0));
	hh_settle();
	hh_advance(10);						       /* the worker's TX flush */
	const uint8_t rst[] = {0, 0, 4, 3, 0, 0, 0, 0, 1, 0, 0, 0, 8}; /* CANCEL */
	uint32_t ll;
	const char *lg = plog(a, &ll);
	assert_non_null(memmem(lg, ll, rst, sizeof(rst)));
	assert_int_equal(http_ext_proc_in_use(worker()), 0);
	size_t ml = 0, hl = 0;
	uint8_t hr[8];
	pb_ld(hr, &hl, 1, "", 0);
	pb_ld(msg, &ml, 1, hr, hl);
	ep_answer(a, true, sid, msg, ml);
	hh_end();
	unlink(path);
}

/* Two ext_proc filters in one chain (Envoy Gateway writes one per
 * extProc of a policy): each has its own stream, one after the other, each
 * answer's mutations on the request upstream; both streams reset when the
 * request ends, their contexts back (hh_end). Fails before: the second
 * filter saw the stream's context of the first and let the request on
 * unprocessed. */
static void test_ext_proc_two_filters(void **state)
{
	(void)state;
	char path[64], json[8192], r[2048];
	uint8_t m[2048], msg[512], mut[512], common[600], hr[700];
	size_t mn, n, cn, hn, k;
	uint32_t sid;
	snprintf(path, sizeof(path), "/tmp/arn_test_ep5.%d.log", (int)getpid());
	unlink(path);
	snprintf(json, sizeof(json), EP_LISTENER, path, "");
	/* a second filter "ep2", the same processor, before the router */
	char *router = strstr(json, "{\"name\":\"envoy.filters.http.router\"");
	assert_non_null(router);
	static const char ep2[] = "{\"name\":\"ep2\",\"typed_config\":{" AT_(
	    "ext_proc.v3.ExternalProcessor") ","
					     "\"grpc_service\":{\"envoy_grpc\":{\"cluster_name\":"
					     "\"dyn\"}},"
					     "\"processing_mode\":{\"response_header_mode\":"
					     "\"SKIP\"}}},";
	size_t tail = strlen(router);
	assert_true(strlen(json) + sizeof(ep2) < sizeof(json));
	memmove(router + sizeof(ep2) - 1, router, tail + 1);
	memcpy(router, ep2, sizeof(ep2) - 1);
	hh_begin(1);
	hh_apply(ARN_TYPE_URL_CLUSTER, EP_CLUSTER);
	hh_apply(ARN_TYPE_URL_LISTENER, json);
	hh_cfg_changed = true;
	hh_settle();
	hh_open(0, 82);
	hh_settle();
	uint32_t mark = hh_client(0)->log_len;
	struct peer *a =
	    ep_request("GET /x HTTP/1.1\r\nHost: a\r\n\r\n", m, sizeof(m), &mn, &sid, NULL);
	assert_non_null(a);
	assert_int_equal(sid, 1);
	static const char *const names[2] = {"x-one", "x-two"};
	for (unsigned f = 0; f < 2; f++) {
		n = cn = hn = k = 0;
		set_hdr(mut, &n, names[f], "1", 2, -1);
		pb_ld(common, &cn, 2, mut, n);
		pb_ld(hr, &hn, 1, common, cn);
		pb_ld(msg, &k, 1, hr, hn);
		uint32_t rx0[N_PEERS];
		snapshot(rx0);
		ep_answer(a, f == 0, sid, msg, k);
		if (f == 0) {
			/* the second filter's stream, on the same connection
			 * (opened inside the first's answer: out at the
			 * worker's TX flush) */
			hh_advance(10);
			struct h2_seen s3 = h2_read(a, 3, m, sizeof(m), &mn);
			assert_int_equal(s3.n_headers, 1);
			assert_true(mn > 5 && has_hv(m, mn, ":path", "/x"));
			/* the second filter sees the first one's mutation, as
			 * Envoy's sees the mutated header map (fails before:
			 * it saw the client's headers) */
			assert_true(has_hv(m, mn, "x-one", "1"));
			assert_int_equal(hh_client(0)->log_len, mark); /* still waiting */
			sid = 3;
			continue;
		}
		rx0[a - peers] = a->rx;
		struct peer *u = upstream_that_got(rx0);
		assert_non_null(u);
		size_t ul = u->rx - rx0[u - peers];
		memcpy(r, u->log + u->log_len - ul, ul);
		r[ul] = 0;
		if (!strstr(r, "x-one: 1\r\n") || !strstr(r, "x-two: 1\r\n"))
			fail_msg("the upstream got: %s", r);
		send_str(u, OK5);
	}
	client_since(mark, r, sizeof(r));
	if (!strstr(r, "HTTP/1.1 200 OK\r\n"))
		fail_msg("the client got: %s", r);
	hh_advance(10);
	uint32_t ll;
	const char *lg = plog(a, &ll);
	const uint8_t rst1[] = {0, 0, 4, 3, 0, 0, 0, 0, 1}, rst3[] = {0, 0, 4, 3, 0, 0, 0, 0, 3};
	assert_non_null(memmem(lg, ll, rst1, 9));
	assert_non_null(memmem(lg, ll, rst3, 9));
	assert_int_equal(http_ext_proc_in_use(worker()), 0);
	hh_end();
	unlink(path);
}

/* ep_begin with the response's headers SEND (and @p extra). */
static void ep_begin_resp(const char *path, const char *extra)
{
	char json[8192];
	unlink(path);
	snprintf(json, sizeof(json), EP_LISTENER, path, extra);
	char *m = strstr(json, "\"response_header_mode\":\"SKIP\"");
	assert_non_null(m);
	memcpy(m + 24, "SEND", 4);
	hh_begin(1);
	hh_apply(ARN_TYPE_URL_CLUSTER, EP_CLUSTER);
	hh_apply(ARN_TYPE_URL_LISTENER, json);
	hh_cfg_changed = true;
	hh_settle();
	hh_open(0, 82);
	hh_settle();
}

/* The processor's next message on @p sid (DATA alone: its head went). */
static void ep_more(struct peer *a, uint32_t sid, const uint8_t *msg, size_t n)
{
	uint8_t b[4096], fr[2048];
	assert_true(n + 5 <= sizeof(fr));
	size_t fl = grpc_frame(fr, msg, n);
	size_t k = h2_data(b, sid, fr, fl, false);
	send_raw(a, b, k);
}

/* The @p nth gRPC message (0 first) the processor got on @p sid, into
 * @p out (its payload, *@p n bytes). @return false if it has not come. */
static bool ep_nth(struct peer *a, uint32_t sid, unsigned nth, uint8_t *out, size_t cap, size_t *n)
{
	static uint8_t all[8192];
	size_t an;
	h2_read(a, sid, all, sizeof(all), &an);
	size_t off = 0;
	for (unsigned i = 0;; i++) {
		if (off + 5 > an)
			return false;
		size_t l = (size_t)all[off + 1] << 24 | (size_t)all[off + 2] << 16 |
			   (size_t)all[off + 3] << 8 | all[off + 4];
		if (off + 5 + l > an)
			return false;
		if (i == nth) {
			assert_true(l <= cap);
			memcpy(out, all + off + 5, l);
			*n = l;
			return true;
		}
		off += 5 + l;
	}
}

/* A ProcessingResponse of kind @p field (1 request_headers, 2
 * response_headers) whose CommonResponse has HeaderMutation @p mut. */
static size_t headers_answer(uint8_t *msg, unsigned field, const uint8_t *mut, size_t n)
{
	uint8_t common[1024], hr[1100];
	size_t cn = 0, hn = 0, k = 0;
	if (n)
		pb_ld(common, &cn, 2, mut, n); /* header_mutation */
	pb_ld(hr, &hn, 1, common, cn);	       /* HeadersResponse.response */
	pb_ld(msg, &k, field, hr, hn);
	return k;
}

/*
 * response_header_mode SEND (Envoy's default; Envoy Gateway's
 * processingMode.response): after the request's answer the stream stays
 * open; the upstream's response head goes to the processor as
 * response_headers (:status and its fields, end_of_stream when it has no
 * body) on the same stream and is held, the client getting nothing, until
 * the answer: its mutations (a set, an overwrite, a removal, :status) go
 * on the head, then the body that came with it; the stream is closed once
 * answered. An immediate_response replaces the response (the upstream's
 * body never reaches the client); no answer within message_timeout 504;
 * a :status that would unframe the body (204) is refused, counted. With
 * request_header_mode SKIP the stream opens at the response. Counted as
 * Envoy's. Fails before: the listener is refused (response_header_mode
 * SEND "not built").
 */
static void test_ext_proc_response_headers(void **state)
{
	(void)state;
	char path[64], r[4096];
	uint8_t m[2048], msg[1024], mut[1024];
	size_t mn, n, k;
	uint32_t sid;
	snprintf(path, sizeof(path), "/tmp/arn_test_ep6.%d.log", (int)getpid());
	ep_begin_resp(path, "");
	uint64_t sent0 = ep_stat(ARN_EXT_PROC_stream_msgs_sent),
		 recv0 = ep_stat(ARN_EXT_PROC_stream_msgs_received),
		 rej0 = ep_stat(ARN_EXT_PROC_rejected_header_mutations),
		 to0 = ep_stat(ARN_EXT_PROC_message_timeouts);
	/* 1. mutations on the response's head */
	uint32_t mark = hh_client(0)->log_len;
	struct peer *a =
	    ep_request("GET /r HTTP/1.1\r\nHost: a\r\n\r\n", m, sizeof(m), &mn, &sid, NULL);
	assert_non_null(a);
	k = headers_answer(msg, 1, NULL, 0);
	uint32_t rx0[N_PEERS];
	snapshot(rx0);
	ep_answer(a, true, sid, msg, k);
	rx0[a - peers] = a->rx;
	struct peer *u = upstream_that_got(rx0);
	assert_non_null(u);
	assert_false(h2_read(a, sid, m, sizeof(m), &mn).end_stream); /* still open */
	send_str(u, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Up: u\r\nX-Gone: g\r\n\r\nhello");
	hh_advance(10);
	assert_int_equal(hh_client(0)->log_len, mark); /* the head is held */
	assert_true(ep_nth(a, sid, 1, m, sizeof(m), &mn));
	assert_int_equal(m[0], 3 << 3 | 2); /* response_headers */
	if (!has_hv(m, mn, ":status", "200") || !has_hv(m, mn, "x-up", "u") ||
	    !has_hv(m, mn, "x-gone", "g") || memmem(m, mn, "\x18\x01", 2))
		fail_msg("the response_headers message (%zu bytes) lacks what it should carry", mn);
	n = 0;
	set_hdr(mut, &n, "x-added", "1", 2, -1);
	set_hdr(mut, &n, "x-up", "v", 2, -1);
	set_hdr(mut, &n, ":status", "201", 2, -1);
	pb_ld(mut, &n, 2, "x-gone", 6);
	k = headers_answer(msg, 2, mut, n);
	ep_more(a, sid, msg, k);
	hh_advance(10);
	client_since(mark, r, sizeof(r));
	if (!strstr(r, "HTTP/1.1 201 Created\r\n") || !strstr(r, "x-added: 1\r\n") ||
	    !strstr(r, "x-up: v\r\n") || strstr(r, "X-Up: u") || strstr(r, "X-Gone") ||
	    !strstr(r, "\r\n\r\nhello"))
		fail_msg("the client got: %s", r);
	assert_true(h2_read(a, sid, m, sizeof(m), &mn).end_stream); /* closed once answered */

	/* 2. an immediate response replaces the response */
	mark = hh_client(0)->log_len;
	assert_ptr_equal(
	    ep_request("GET /i HTTP/1.1\r\nHost: a\r\n\r\n", m, sizeof(m), &mn, &sid, a), a);
	k = headers_answer(msg, 1, NULL, 0);
	snapshot(rx0);
	ep_answer(a, false, sid, msg, k);
	rx0[a - peers] = a->rx;
	u = upstream_that_got(rx0);
	assert_non_null(u);
	send_str(u, "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecret");
	hh_advance(10);
	assert_true(ep_nth(a, sid, 1, m, sizeof(m), &mn));
	uint8_t imm[512], stc[8];
	size_t il = 0, sl = 0;
	pb_var(stc, &sl, 1, 403);
	pb_ld(imm, &il, 1, stc, sl);
	pb_ld(imm, &il, 3, "no", 2);
	k = 0;
	pb_ld(msg, &k, 7, imm, il);
	ep_more(a, sid, msg, k);
	hh_advance(10);
	client_since(mark, r, sizeof(r));
	if (!strstr(r, "HTTP/1.1 403 Forbidden\r\n") || !strstr(r, "\r\n\r\nno") ||
	    strstr(r, "secret"))
		fail_msg("the client got: %s", r);

	/* 3. no answer for the response's head: 504 */
	mark = hh_client(0)->log_len;
	assert_ptr_equal(
	    ep_request("GET /t HTTP/1.1\r\nHost: a\r\n\r\n", m, sizeof(m), &mn, &sid, a), a);
	k = headers_answer(msg, 1, NULL, 0);
	snapshot(rx0);
	ep_answer(a, false, sid, msg, k);
	rx0[a - peers] = a->rx;
	u = upstream_that_got(rx0);
	assert_non_null(u);
	send_str(u, OK5);
	hh_advance(150);
	assert_int_equal(hh_client(0)->log_len, mark);
	hh_advance(100);
	client_since(mark, r, sizeof(r));
	if (!strstr(r, "HTTP/1.1 504 Gateway Timeout\r\n") || strstr(r, "hello"))
		fail_msg("the client got: %s", r);

	/* 4. a response without a body (end_of_stream), a :status 204 that
	 * would unframe it refused (counted), the rest applied */
	mark = hh_client(0)->log_len;
	assert_ptr_equal(
	    ep_request("GET /e HTTP/1.1\r\nHost: a\r\n\r\n", m, sizeof(m), &mn, &sid, a), a);
	k = headers_answer(msg, 1, NULL, 0);
	snapshot(rx0);
	ep_answer(a, false, sid, msg, k);
	rx0[a - peers] = a->rx;
	u = upstream_that_got(rx0);
	assert_non_null(u);
	send_str(u, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
	hh_advance(10);
	assert_int_equal(hh_client(0)->log_len, mark);
	assert_true(ep_nth(a, sid, 1, m, sizeof(m), &mn));
	assert_non_null(memmem(m, mn, "\x18\x01", 2)); /* end_of_stream */
	n = 0;
	set_hdr(mut, &n, ":status", "204", 2, -1);
	set_hdr(mut, &n, "x-empty", "yes", 2, -1);
	k = headers_answer(msg, 2, mut, n);
	ep_more(a, sid, msg, k);
	hh_advance(10);
	client_since(mark, r, sizeof(r));
	if (!strstr(r, "HTTP/1.1 200 OK\r\n") || !strstr(r, "x-empty: yes\r\n"))
		fail_msg("the client got: %s", r);

	assert_int_equal(ep_stat(ARN_EXT_PROC_stream_msgs_sent) - sent0, 8);
	assert_int_equal(ep_stat(ARN_EXT_PROC_stream_msgs_received) - recv0, 7);
	assert_int_equal(ep_stat(ARN_EXT_PROC_rejected_header_mutations) - rej0, 1);
	assert_int_equal(ep_stat(ARN_EXT_PROC_message_timeouts) - to0, 1);
	hh_end();
	char log[2048];
	log_take(path, log, sizeof(log));
	if (!strstr(log, "201 via_upstream\n") || !strstr(log, "403 -\n") ||
	    !strstr(log, "504 ext_proc_error_per-message_timeout_exceeded\n"))
		fail_msg("the access log: %s", log);

	/* 5. request_header_mode SKIP: the stream opens at the response */
	ep_begin_resp(path, "");
	hh_end();
	char json[8192];
	snprintf(json, sizeof(json), EP_LISTENER, path, "");
	char *pm = strstr(json, "\"response_header_mode\":\"SKIP\"");
	assert_non_null(pm);
	static const char both[] =
	    "\"request_header_mode\":\"SKIP\",\"response_header_mode\":\"SEND\"";
	memmove(pm + sizeof(both) - 1, pm + 29, strlen(pm + 29) + 1);
	memcpy(pm, both, sizeof(both) - 1);
	hh_begin(1);
	hh_apply(ARN_TYPE_URL_CLUSTER, EP_CLUSTER);
	hh_apply(ARN_TYPE_URL_LISTENER, json);
	hh_cfg_changed = true;
	hh_settle();
	hh_open(0, 82);
	hh_settle();
	mark = hh_client(0)->log_len;
	snapshot(rx0);
	send_str(hh_client(0), "GET /s HTTP/1.1\r\nHost: a\r\n\r\n");
	u = upstream_that_got(rx0);
	assert_non_null(u); /* straight upstream: no stream yet */
	snapshot(rx0);
	send_str(u, OK5);
	hh_advance(10);
	assert_int_equal(hh_client(0)->log_len, mark);
	a = upstream_that_got(rx0);
	assert_non_null(a);
	a->sent_head = true;
	capture(a);
	assert_true(ep_nth(a, 1, 0, m, sizeof(m), &mn));
	assert_int_equal(m[0], 3 << 3 | 2);
	n = 0;
	set_hdr(mut, &n, "x-late", "1", 2, -1);
	k = headers_answer(msg, 2, mut, n);
	ep_answer(a, true, 1, msg, k);
	hh_advance(10);
	client_since(mark, r, sizeof(r));
	if (!strstr(r, "HTTP/1.1 200 OK\r\n") || !strstr(r, "x-late: 1\r\n") || !strstr(r, "hello"))
		fail_msg("the client got: %s", r);
	assert_int_equal(http_ext_proc_in_use(worker()), 0);
	hh_end();
	unlink(path);
}

/* The request's upstream head after ext_proc's answer @p msg (@p k
 * bytes) to client 0's @p req, into @p r. */
static void path_case(const char *req, const uint8_t *msg, size_t k, bool first, char *r,
		      size_t cap)
{
	uint8_t m[2048];
	size_t mn;
	uint32_t sid;
	static struct peer *a;
	a = ep_request(req, m, sizeof(m), &mn, &sid, first ? NULL : a);
	assert_non_null(a);
	uint32_t rx0[N_PEERS];
	snapshot(rx0);
	ep_answer(a, first, sid, msg, k);
	rx0[a - peers] = a->rx;
	struct peer *u = upstream_that_got(rx0);
	assert_non_null(u);
	size_t ul = u->rx - rx0[u - peers];
	assert_true(ul < cap);
	memcpy(r, u->log + u->log_len - ul, ul);
	r[ul] = 0;
	send_str(u, OK5);
}

/* A :path set by the processor goes upstream, as Envoy's (its mutation
 * rules let :path through), on the route the request matched; one an
 * HTTP/1 request line cannot carry (a space) is refused, counted. Fails
 * before: 500 "Arion does not rewrite the request's pseudo-headers". */
static void test_ext_proc_path_mutation(void **state)
{
	(void)state;
	char path[64], r[4096];
	uint8_t msg[1024], mut[512];
	size_t n, k;
	snprintf(path, sizeof(path), "/tmp/arn_test_ep7.%d.log", (int)getpid());
	ep_begin(path, "");
	uint64_t rej0 = ep_stat(ARN_EXT_PROC_rejected_header_mutations);
	n = 0;
	set_hdr(mut, &n, ":path", "/new/p?x=1", 2, -1);
	set_hdr(mut, &n, "x-moved", "1", 2, -1);
	k = headers_answer(msg, 1, mut, n);
	path_case("GET /old?q=1 HTTP/1.1\r\nHost: a\r\n\r\n", msg, k, true, r, sizeof(r));
	if (!strstr(r, "GET /new/p?x=1 HTTP/1.1\r\n") || !strstr(r, "x-moved: 1\r\n"))
		fail_msg("the upstream got: %s", r);
	n = 0;
	set_hdr(mut, &n, ":path", "/a b", 2, -1);
	k = headers_answer(msg, 1, mut, n);
	path_case("GET /keep HTTP/1.1\r\nHost: a\r\n\r\n", msg, k, false, r, sizeof(r));
	if (!strstr(r, "GET /keep HTTP/1.1\r\n"))
		fail_msg("the upstream got: %s", r);
	assert_int_equal(ep_stat(ARN_EXT_PROC_rejected_header_mutations) - rej0, 1);
	hh_end();
	unlink(path);
}

/* ep_begin with @p pm inserted in the processing_mode after
 * response_header_mode SKIP. */
static void ep_begin_pm(const char *path, const char *pm)
{
	char json[8192], out[8192];
	unlink(path);
	snprintf(json, sizeof(json), EP_LISTENER, path, "");
	const char *at = strstr(json, "\"response_header_mode\":\"SKIP\"");
	assert_non_null(at);
	size_t head = (size_t)(at - json) + 29;
	snprintf(out, sizeof(out), "%.*s%s%s", (int)head, json, pm, json + head);
	hh_begin(1);
	hh_apply(ARN_TYPE_URL_CLUSTER, EP_CLUSTER);
	hh_apply(ARN_TYPE_URL_LISTENER, out);
	hh_cfg_changed = true;
	hh_settle();
	hh_open(0, 82);
	hh_settle();
}

/* A request_body answer: CommonResponse {header_mutation @p mut (@p n
 * bytes, 0: none), body_mutation: body @p body, or clear_body (@p body
 * NULL)}. */
static size_t body_answer(uint8_t *msg, const uint8_t *mut, size_t n, const char *body)
{
	uint8_t common[1024], bm[512], br[1100];
	size_t cn = 0, bn = 0, rn = 0, k = 0;
	if (n)
		pb_ld(common, &cn, 2, mut, n);
	if (body)
		pb_ld(bm, &bn, 1, body, strlen(body));
	else
		pb_var(bm, &bn, 2, 1);
	pb_ld(common, &cn, 3, bm, bn);
	pb_ld(br, &rn, 1, common, cn);
	pb_ld(msg, &k, 3, br, rn); /* ProcessingResponse.request_body */
	return k;
}

/*
 * request_body_mode BUFFERED (what Envoy AI Gateway and rewriting
 * processors use): after the headers' answer the body is read whole into
 * the stream's kept body (the buffer filter's, one copy) and sent as one
 * request_body (end_of_stream) on the same stream, the request held: the
 * answer's body_mutation replaces the body (content-length set to its
 * length, as Envoy's), its header mutations ride upstream; clear_body
 * sends an empty body; a chunked request stays chunked, its body
 * replaced or not (Envoy adds no content-length in BUFFERED mode; fails
 * before: content-length: 0, content-length: 4); a content-length past
 * the bound is answered 413 before a byte is read; no answer for the
 * body: 504. Fails before: the listener is refused (request_body_mode
 * BUFFERED "not built").
 */
static void test_ext_proc_request_body(void **state)
{
	(void)state;
	char path[64], r[4096];
	uint8_t m[2048], msg[1024], mut[512];
	size_t mn, n, k;
	uint32_t sid;
	snprintf(path, sizeof(path), "/tmp/arn_test_ep8.%d.log", (int)getpid());
	ep_begin_pm(path, ",\"request_body_mode\":\"BUFFERED\"");
	uint64_t sent0 = ep_stat(ARN_EXT_PROC_stream_msgs_sent),
		 recv0 = ep_stat(ARN_EXT_PROC_stream_msgs_received);
	/* 1. the body replaced */
	uint32_t mark = hh_client(0)->log_len;
	struct peer *a = ep_request("POST /b HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
				    m, sizeof(m), &mn, &sid, NULL);
	assert_non_null(a);
	assert_null(memmem(m, mn, "\x18\x01", 2)); /* a body follows */
	k = headers_answer(msg, 1, NULL, 0);
	uint32_t rx0[N_PEERS];
	snapshot(rx0);
	ep_answer(a, true, sid, msg, k);
	hh_advance(10);
	rx0[a - peers] = a->rx;
	assert_null(upstream_that_got(rx0)); /* held for the body's answer */
	assert_true(ep_nth(a, sid, 1, m, sizeof(m), &mn));
	static const uint8_t body_msg[] = {0x42, 0x00, 4 << 3 | 2, 9,	0x10, 0x01, 0x0a,
					   5,	 'h',  'e',	   'l', 'l',  'o'};
	assert_int_equal(mn, sizeof(body_msg));
	assert_memory_equal(m, body_msg, sizeof(body_msg));
	n = 0;
	set_hdr(mut, &n, "x-b", "1", 2, -1);
	k = body_answer(msg, mut, n, "HELLO WORLD");
	snapshot(rx0);
	ep_more(a, sid, msg, k);
	hh_advance(10);
	rx0[a - peers] = a->rx;
	struct peer *u = upstream_that_got(rx0);
	assert_non_null(u);
	size_t ul = u->rx - rx0[u - peers];
	memcpy(r, u->log + u->log_len - ul, ul);
	r[ul] = 0;
	if (!strstr(r, "POST /b HTTP/1.1\r\n") || !strcasestr(r, "content-length: 11\r\n") ||
	    strcasestr(r, "content-length: 5") || !strstr(r, "x-b: 1\r\n") ||
	    !strstr(r, "\r\n\r\nHELLO WORLD"))
		fail_msg("the upstream got: %s", r);
	send_str(u, OK5);
	client_since(mark, r, sizeof(r));
	if (!strstr(r, "HTTP/1.1 200 OK\r\n"))
		fail_msg("the client got: %s", r);
	assert_true(h2_read(a, sid, m, sizeof(m), &mn).end_stream); /* closed once answered */

	/* 2. clear_body, a chunked request */
	assert_ptr_equal(
	    ep_request("POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
		       "3\r\nabc\r\n0\r\n\r\n",
		       m, sizeof(m), &mn, &sid, a),
	    a);
	k = headers_answer(msg, 1, NULL, 0);
	snapshot(rx0);
	ep_answer(a, false, sid, msg, k);
	hh_advance(10);
	assert_true(ep_nth(a, sid, 1, m, sizeof(m), &mn));
	assert_non_null(memmem(m, mn,
			       "\x0a\x03"
			       "abc",
			       5));
	k = body_answer(msg, NULL, 0, NULL);
	ep_more(a, sid, msg, k);
	hh_advance(10);
	rx0[a - peers] = a->rx;
	u = upstream_that_got(rx0);
	assert_non_null(u);
	ul = u->rx - rx0[u - peers];
	memcpy(r, u->log + u->log_len - ul, ul);
	r[ul] = 0;
	/* chunked still, as Envoy's (it adds no content-length in BUFFERED
	 * mode): the empty body is its last chunk */
	if (!strstr(r, "POST /c HTTP/1.1\r\n") || strcasestr(r, "content-length") ||
	    !strcasestr(r, "transfer-encoding: chunked\r\n") || !strstr(r, "\r\n\r\n0\r\n\r\n") ||
	    strstr(r, "abc"))
		fail_msg("the upstream got: %s", r);
	send_str(u, OK5);

	/* 2b. a chunked request's body replaced: chunked, the new body */
	assert_ptr_equal(
	    ep_request("POST /c2 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
		       "3\r\nabc\r\n0\r\n\r\n",
		       m, sizeof(m), &mn, &sid, a),
	    a);
	k = headers_answer(msg, 1, NULL, 0);
	ep_answer(a, false, sid, msg, k);
	hh_advance(10);
	assert_true(ep_nth(a, sid, 1, m, sizeof(m), &mn));
	k = body_answer(msg, NULL, 0, "WXYZ");
	snapshot(rx0);
	ep_more(a, sid, msg, k);
	hh_advance(10);
	rx0[a - peers] = a->rx;
	u = upstream_that_got(rx0);
	assert_non_null(u);
	ul = u->rx - rx0[u - peers];
	memcpy(r, u->log + u->log_len - ul, ul);
	r[ul] = 0;
	if (!strstr(r, "POST /c2 HTTP/1.1\r\n") || strcasestr(r, "content-length") ||
	    !strcasestr(r, "transfer-encoding: chunked\r\n") ||
	    !strstr(r, "\r\n\r\n4\r\nWXYZ\r\n0\r\n\r\n"))
		fail_msg("the upstream got: %s", r);
	send_str(u, OK5);

	/* 3. a content-length past the bound: 413 once the headers' answer
	 * let it on, nothing read */
	mark = hh_client(0)->log_len;
	assert_ptr_equal(
	    ep_request("POST /big HTTP/1.1\r\nHost: a\r\nContent-Length: 2000000\r\n\r\n", m,
		       sizeof(m), &mn, &sid, a),
	    a);
	k = headers_answer(msg, 1, NULL, 0);
	ep_answer(a, false, sid, msg, k);
	hh_advance(10);
	client_since(mark, r, sizeof(r));
	if (!strstr(r, "HTTP/1.1 413 Payload Too Large\r\n"))
		fail_msg("the client got: %s", r);

	assert_int_equal(ep_stat(ARN_EXT_PROC_stream_msgs_sent) - sent0, 7);
	assert_int_equal(ep_stat(ARN_EXT_PROC_stream_msgs_received) - recv0, 7);
	assert_int_equal(http_ext_proc_in_use(worker()), 0);
	hh_end();
	unlink(path);
}

/* A request_headers answer with no mutation and a mode_override whose
 * field @p field (ProcessingMode's, 1..6) is @p v. */
static size_t override_answer(uint8_t *msg, unsigned field, unsigned v)
{
	uint8_t pm[8];
	size_t pn = 0;
	size_t k = headers_answer(msg, 1, NULL, 0);
	pb_var(pm, &pn, field, v);
	pb_ld(msg, &k, 9, pm, pn); /* ProcessingResponse.mode_override */
	return k;
}

/*
 * allow_mode_override: a mode_override in the request headers' answer
 * changes what the stream sends next, as Envoy's: response_header_mode
 * SEND has the response's head sent and held (the filter's mode said
 * SKIP), request_body_mode BUFFERED has the body sent; one that asks for
 * what Arion does not build (a STREAMED body) is ignored whole, the
 * request let on and the stream closed. Fails before: the listener is
 * refused (allow_mode_override "not supported by Arion yet").
 */
static void test_ext_proc_mode_override(void **state)
{
	(void)state;
	char path[64], r[4096];
	uint8_t m[2048], msg[1024], mut[256];
	size_t mn, n, k;
	uint32_t sid;
	snprintf(path, sizeof(path), "/tmp/arn_test_ep9.%d.log", (int)getpid());
	ep_begin(path, ",\"allow_mode_override\":true");
	/* 1. the response's head asked for */
	uint32_t mark = hh_client(0)->log_len;
	struct peer *a =
	    ep_request("GET /m HTTP/1.1\r\nHost: a\r\n\r\n", m, sizeof(m), &mn, &sid, NULL);
	assert_non_null(a);
	k = override_answer(msg, 2, 1); /* response_header_mode SEND */
	uint32_t rx0[N_PEERS];
	snapshot(rx0);
	ep_answer(a, true, sid, msg, k);
	rx0[a - peers] = a->rx;
	struct peer *u = upstream_that_got(rx0);
	assert_non_null(u);
	send_str(u, OK5);
	hh_advance(10);
	assert_int_equal(hh_client(0)->log_len, mark); /* held */
	assert_true(ep_nth(a, sid, 1, m, sizeof(m), &mn));
	assert_int_equal(m[0], 3 << 3 | 2);
	n = 0;
	set_hdr(mut, &n, "x-o", "1", 2, -1);
	k = headers_answer(msg, 2, mut, n);
	ep_more(a, sid, msg, k);
	hh_advance(10);
	client_since(mark, r, sizeof(r));
	if (!strstr(r, "HTTP/1.1 200 OK\r\n") || !strstr(r, "x-o: 1\r\n"))
		fail_msg("the client got: %s", r);
	/* 2. the request's body asked for */
	assert_ptr_equal(ep_request("POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nxyz",
				    m, sizeof(m), &mn, &sid, a),
			 a);
	k = override_answer(msg, 3, 2); /* request_body_mode BUFFERED */
	snapshot(rx0);
	ep_answer(a, false, sid, msg, k);
	hh_advance(10);
	rx0[a - peers] = a->rx;
	assert_null(upstream_that_got(rx0));
	assert_true(ep_nth(a, sid, 1, m, sizeof(m), &mn));
	assert_non_null(memmem(m, mn, "\x0a\x03xyz", 5));
	k = body_answer(msg, NULL, 0, "XYZ");
	snapshot(rx0);
	ep_more(a, sid, msg, k);
	hh_advance(10);
	rx0[a - peers] = a->rx;
	u = upstream_that_got(rx0);
	assert_non_null(u);
	send_str(u, OK5);
	/* 3. a STREAMED body asked for: ignored, the request on at once */
	assert_ptr_equal(ep_request("POST /s HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nxyz",
				    m, sizeof(m), &mn, &sid, a),
			 a);
	k = override_answer(msg, 3, 1); /* request_body_mode STREAMED */
	snapshot(rx0);
	ep_answer(a, false, sid, msg, k);
	hh_advance(10);
	rx0[a - peers] = a->rx;
	u = upstream_that_got(rx0);
	assert_non_null(u);
	assert_true(h2_read(a, sid, m, sizeof(m), &mn).end_stream);
	send_str(u, OK5);
	assert_int_equal(http_ext_proc_in_use(worker()), 0);
	hh_end();
	unlink(path);
}

/* Client 0's GET @p req through the filter (response SEND) whose
 * request headers' answer lets it on: @return the upstream, with the
 * processor in *@p pa and its stream in *@p sid. */
static struct peer *held_setup(const char *req, struct peer **pa, uint32_t *sid, bool first)
{
	uint8_t m[2048], msg[256];
	size_t mn;
	struct peer *a = ep_request(req, m, sizeof(m), &mn, sid, first ? NULL : *pa);
	assert_non_null(a);
	*pa = a;
	size_t k = headers_answer(msg, 1, NULL, 0);
	uint32_t rx0[N_PEERS];
	snapshot(rx0);
	ep_answer(a, first, *sid, msg, k);
	rx0[a - peers] = a->rx;
	struct peer *u = upstream_that_got(rx0);
	assert_non_null(u);
	return u;
}

/*
 * The response's head held for the processor, and then: failure_mode_allow
 * and no answer within message_timeout: the response goes on unmodified,
 * its body (which came with the head) after it; the upstream resetting
 * while the head waits: 503, as any upstream loss before the response
 * started, the stream's context back; the client going away: the gRPC
 * stream reset (CANCEL), the context back.
 */
static void test_ext_proc_response_held(void **state)
{
	(void)state;
	char path[64], r[4096];
	uint32_t sid;
	struct peer *a = NULL;
	snprintf(path, sizeof(path), "/tmp/arn_test_ep10.%d.log", (int)getpid());
	ep_begin_resp(path, ",\"failure_mode_allow\":true");
	uint64_t to0 = ep_stat(ARN_EXT_PROC_message_timeouts),
		 fma0 = ep_stat(ARN_EXT_PROC_failure_mode_allowed);
	/* 1. late, allowed: unmodified */
	uint32_t mark = hh_client(0)->log_len;
	struct peer *u = held_setup("GET /late HTTP/1.1\r\nHost: a\r\n\r\n", &a, &sid, true);
	send_str(u, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Up: u\r\n\r\nhello");
	hh_advance(100);
	assert_int_equal(hh_client(0)->log_len, mark);
	hh_advance(150);
	client_since(mark, r, sizeof(r));
	if (!strstr(r, "HTTP/1.1 200 OK\r\n") || !strstr(r, "X-Up: u\r\n") ||
	    !strstr(r, "\r\n\r\nhello"))
		fail_msg("the client got: %s", r);
	assert_int_equal(ep_stat(ARN_EXT_PROC_message_timeouts) - to0, 1);
	assert_int_equal(ep_stat(ARN_EXT_PROC_failure_mode_allowed) - fma0, 1);
	/* 2. the upstream resets while the head waits */
	mark = hh_client(0)->log_len;
	u = held_setup("GET /rst HTTP/1.1\r\nHost: a\r\n\r\n", &a, &sid, false);
	send_str(u, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello");
	hh_advance(10);
	assert_int_equal(hh_client(0)->log_len, mark);
	hh_reset(u);
	hh_settle();
	hh_advance(10);
	client_since(mark, r, sizeof(r));
	if (!strstr(r, "HTTP/1.1 503 Service Unavailable\r\n") || strstr(r, "hello"))
		fail_msg("the client got: %s", r);
	/* 3. the client goes away while the head waits */
	u = held_setup("GET /gone HTTP/1.1\r\nHost: a\r\n\r\n", &a, &sid, false);
	send_str(u, OK5);
	hh_advance(10);
	hh_reset(hh_client(0));
	hh_settle();
	hh_advance(10);
	uint8_t rst[13] = {0, 0, 4, 3, 0, 0, 0, 0, 0, 0, 0, 0, 8}; /* CANCEL */
	rst[8] = (uint8_t)sid;
	uint32_t ll;
	const char *lg = plog(a, &ll);
	assert_non_null(memmem(lg, ll, rst, sizeof(rst)));
	assert_int_equal(http_ext_proc_in_use(worker()), 0);
	hh_end();
	unlink(path);
}

/*
 * response_body_mode BUFFERED (Envoy AI Gateway's response side): the
 * response's body is read whole (the head held), sent as one
 * response_body (end_of_stream) on the same stream after the
 * response_headers exchange, and the answer's body_mutation replaces it:
 * content-length the new length, its header mutations and the headers'
 * answer's on the head; a chunked response stays chunked, its body
 * replaced; a response without a body sends no body message. Fails
 * before: the listener is refused (response_body_mode BUFFERED "not
 * built").
 */
static void test_ext_proc_response_body(void **state)
{
	(void)state;
	char path[64], r[4096];
	uint8_t m[2048], msg[1024], mut[256];
	size_t mn, n, k;
	uint32_t sid;
	struct peer *a = NULL;
	snprintf(path, sizeof(path), "/tmp/arn_test_ep11.%d.log", (int)getpid());
	ep_begin_pm(path, ",\"response_body_mode\":\"BUFFERED\"");
	/* make it response_header_mode SEND too */
	hh_end();
	{
		char json[8192], out[8192];
		snprintf(json, sizeof(json), EP_LISTENER, path, "");
		char *at = strstr(json, "\"response_header_mode\":\"SKIP\"");
		assert_non_null(at);
		memcpy(at + 24, "SEND", 4);
		size_t head = (size_t)(at - json) + 29;
		snprintf(out, sizeof(out), "%.*s%s%s", (int)head, json,
			 ",\"response_body_mode\":\"BUFFERED\"", json + head);
		hh_begin(1);
		hh_apply(ARN_TYPE_URL_CLUSTER, EP_CLUSTER);
		hh_apply(ARN_TYPE_URL_LISTENER, out);
		hh_cfg_changed = true;
		hh_settle();
		hh_open(0, 82);
		hh_settle();
	}
	uint64_t sent0 = ep_stat(ARN_EXT_PROC_stream_msgs_sent),
		 recv0 = ep_stat(ARN_EXT_PROC_stream_msgs_received);
	/* 1. a content-length body replaced */
	uint32_t mark = hh_client(0)->log_len;
	struct peer *u = held_setup("GET /rb HTTP/1.1\r\nHost: a\r\n\r\n", &a, &sid, true);
	send_str(u, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
	hh_advance(10);
	assert_true(ep_nth(a, sid, 1, m, sizeof(m), &mn));
	assert_int_equal(m[0], 3 << 3 | 2); /* response_headers */
	n = 0;
	set_hdr(mut, &n, "x-h", "1", 2, -1);
	k = headers_answer(msg, 2, mut, n);
	ep_more(a, sid, msg, k);
	hh_advance(10);
	assert_int_equal(hh_client(0)->log_len, mark); /* still held: the body */
	assert_true(ep_nth(a, sid, 2, m, sizeof(m), &mn));
	static const uint8_t body_msg[] = {0x42, 0x00, 5 << 3 | 2, 9,	0x10, 0x01, 0x0a,
					   5,	 'h',  'e',	   'l', 'l',  'o'};
	assert_int_equal(mn, sizeof(body_msg));
	assert_memory_equal(m, body_msg, sizeof(body_msg));
	n = 0;
	set_hdr(mut, &n, "x-b", "2", 2, -1);
	k = body_answer(msg, mut, n, "HELLO, WORLD");
	msg[0] = 4 << 3 | 2; /* ProcessingResponse.response_body */
	ep_more(a, sid, msg, k);
	hh_advance(10);
	client_since(mark, r, sizeof(r));
	if (!strstr(r, "HTTP/1.1 200 OK\r\n") || !strcasestr(r, "content-length: 12\r\n") ||
	    strcasestr(r, "content-length: 5") || !strstr(r, "x-h: 1\r\n") ||
	    !strstr(r, "x-b: 2\r\n") || !strstr(r, "\r\n\r\nHELLO, WORLD"))
		fail_msg("the client got: %s", r);
	assert_true(h2_read(a, sid, m, sizeof(m), &mn).end_stream);
	/* 2. a chunked response: chunked still, the body replaced */
	mark = hh_client(0)->log_len;
	u = held_setup("GET /ch HTTP/1.1\r\nHost: a\r\n\r\n", &a, &sid, false);
	send_str(u, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
	hh_advance(10);
	assert_true(ep_nth(a, sid, 1, m, sizeof(m), &mn));
	k = headers_answer(msg, 2, NULL, 0);
	ep_more(a, sid, msg, k);
	hh_advance(10);
	assert_true(ep_nth(a, sid, 2, m, sizeof(m), &mn));
	assert_non_null(memmem(m, mn,
			       "\x0a\x03"
			       "abc",
			       5));
	k = body_answer(msg, NULL, 0, "xyzw");
	msg[0] = 4 << 3 | 2;
	ep_more(a, sid, msg, k);
	hh_advance(10);
	client_since(mark, r, sizeof(r));
	if (!strstr(r, "HTTP/1.1 200 OK\r\n") || !strstr(r, "chunked") || !strstr(r, "xyzw") ||
	    strstr(r, "abc"))
		fail_msg("the client got: %s", r);
	/* 3. no body: no body message */
	mark = hh_client(0)->log_len;
	u = held_setup("GET /nb HTTP/1.1\r\nHost: a\r\n\r\n", &a, &sid, false);
	send_str(u, "HTTP/1.1 204 No Content\r\n\r\n");
	hh_advance(10);
	assert_true(ep_nth(a, sid, 1, m, sizeof(m), &mn));
	k = headers_answer(msg, 2, NULL, 0);
	ep_more(a, sid, msg, k);
	hh_advance(10);
	client_since(mark, r, sizeof(r));
	if (!strstr(r, "HTTP/1.1 204 No Content\r\n"))
		fail_msg("the client got: %s", r);
	assert_false(ep_nth(a, sid, 2, m, sizeof(m), &mn));
	/* 4. no answer for the body: 504, the upstream's body never out, a
	 * local reply that takes none of the upstream response's mutations */
	mark = hh_client(0)->log_len;
	u = held_setup("GET /slow HTTP/1.1\r\nHost: a\r\n\r\n", &a, &sid, false);
	send_str(u, OK5);
	hh_advance(10);
	assert_true(ep_nth(a, sid, 1, m, sizeof(m), &mn));
	n = 0;
	set_hdr(mut, &n, "x-h", "1", 2, -1);
	k = headers_answer(msg, 2, mut, n);
	ep_more(a, sid, msg, k);
	hh_advance(10);
	assert_true(ep_nth(a, sid, 2, m, sizeof(m), &mn));
	hh_advance(250);
	client_since(mark, r, sizeof(r));
	if (!strstr(r, "HTTP/1.1 504 Gateway Timeout\r\n") || strstr(r, "x-h") ||
	    strstr(r, "hello"))
		fail_msg("the client got: %s", r);
	assert_int_equal(ep_stat(ARN_EXT_PROC_stream_msgs_sent) - sent0, 11);
	assert_int_equal(ep_stat(ARN_EXT_PROC_stream_msgs_received) - recv0, 10);
	assert_int_equal(http_ext_proc_in_use(worker()), 0);
	hh_end();
	unlink(path);
}

/* A processor that answers the request's body before it could have read
 * it all (100 KB, past the HTTP/2 stream's 64 KiB window it never
 * opens): the kept body is still sent by reference, so the answer is not
 * applied (its body_mutation would free what the transport reads): the
 * stream fails, 500 (malformed), its context back; ASan sees no use
 * after free. */
static void test_ext_proc_body_answered_early(void **state)
{
	(void)state;
	char path[64], r[2048];
	uint8_t m[2048], msg[512];
	size_t mn, k;
	uint32_t sid;
	snprintf(path, sizeof(path), "/tmp/arn_test_ep12.%d.log", (int)getpid());
	ep_begin_pm(path, ",\"request_body_mode\":\"BUFFERED\"");
	uint64_t mal0 = ep_stat(ARN_EXT_PROC_malformed);
	uint32_t mark = hh_client(0)->log_len;
	struct peer *a =
	    ep_request("POST /early HTTP/1.1\r\nHost: a\r\nContent-Length: 100000\r\n\r\n", m,
		       sizeof(m), &mn, &sid, NULL);
	assert_non_null(a);
	hh_send(hh_client(0), NULL, 100000, 0);
	hh_settle();
	k = headers_answer(msg, 1, NULL, 0);
	ep_answer(a, true, sid, msg, k);
	hh_advance(10);
	assert_int_equal(hh_client(0)->log_len, mark);
	size_t an;
	static uint8_t all[200000];
	h2_read(a, sid, all, sizeof(all), &an);
	assert_true(an > 1000 && an < 100000); /* part of the body, not all */
	k = body_answer(msg, NULL, 0, "X");
	ep_more(a, sid, msg, k);
	hh_advance(10);
	client_since(mark, r, sizeof(r));
	if (!strstr(r, "HTTP/1.1 500 Internal Server Error\r\n"))
		fail_msg("the client got: %s", r);
	assert_int_equal(ep_stat(ARN_EXT_PROC_malformed) - mal0, 1);
	assert_int_equal(http_ext_proc_in_use(worker()), 0);
	hh_end();
	unlink(path);
}

/* A local reply that replaces a response ext_proc answered for takes
 * none of its answers' mutations (Envoy's sendLocalReply builds new
 * headers): here the body's answer never comes (504) after the headers'
 * answer set x-h, in a chain whose header_mutation filter has local
 * replies take the filters' response edits. Fails before: the 504
 * carried x-h: 1 (and a body answer's content-length would have gone
 * beside the reply's own). */
static void test_ext_proc_local_reply_clean(void **state)
{
	(void)state;
	char path[64], json[8192], out[8192], r[4096];
	uint8_t m[2048], msg[512], mut[256];
	size_t mn, n, k;
	uint32_t sid;
	struct peer *a = NULL;
	snprintf(path, sizeof(path), "/tmp/arn_test_ep13.%d.log", (int)getpid());
	unlink(path);
	snprintf(json, sizeof(json), EP_LISTENER, path, "");
	char *at = strstr(json, "\"response_header_mode\":\"SKIP\"");
	assert_non_null(at);
	memcpy(at + 24, "SEND", 4);
	size_t head = (size_t)(at - json) + 29;
	snprintf(out, sizeof(out), "%.*s%s%s", (int)head, json,
		 ",\"response_body_mode\":\"BUFFERED\"", json + head);
	char *router = strstr(out, "{\"name\":\"envoy.filters.http.router\"");
	assert_non_null(router);
	static const char hm[] =
	    "{\"name\":\"hm\",\"typed_config\":{" AT_("header_mutation.v3.HeaderMutation") "}},";
	memmove(router + sizeof(hm) - 1, router, strlen(router) + 1);
	memcpy(router, hm, sizeof(hm) - 1);
	hh_begin(1);
	hh_apply(ARN_TYPE_URL_CLUSTER, EP_CLUSTER);
	hh_apply(ARN_TYPE_URL_LISTENER, out);
	hh_cfg_changed = true;
	hh_settle();
	hh_open(0, 82);
	hh_settle();
	uint32_t mark = hh_client(0)->log_len;
	struct peer *u = held_setup("GET /slow HTTP/1.1\r\nHost: a\r\n\r\n", &a, &sid, true);
	send_str(u, OK5);
	hh_advance(10);
	assert_true(ep_nth(a, sid, 1, m, sizeof(m), &mn));
	n = 0;
	set_hdr(mut, &n, "x-h", "1", 2, -1);
	k = headers_answer(msg, 2, mut, n);
	ep_more(a, sid, msg, k);
	hh_advance(10);
	assert_true(ep_nth(a, sid, 2, m, sizeof(m), &mn));
	hh_advance(250);
	client_since(mark, r, sizeof(r));
	if (!strstr(r, "HTTP/1.1 504 Gateway Timeout\r\n") || strstr(r, "x-h") ||
	    strstr(r, "hello"))
		fail_msg("the client got: %s", r);
	assert_int_equal(http_ext_proc_in_use(worker()), 0);
	hh_end();
	unlink(path);
}

/* Listener "dyn" (port 82) for clear_route_cache: ext_proc "ep" (the
 * request's headers), then header_mutation "hm" whose per-route config
 * on the route to "two" adds x-later: two, then the router. Virtual host
 * "nr" has one route, which wants x-keep; the others: x-ai-eg-model m2
 * to "two" (HeaderMutationPerRoute), /p2 to "two", direct to a direct
 * response 418, else "web". %s: more ExternalProcessor fields. */
/* clang-format off */
#define RC_MODEL(v) "\"headers\":[{\"name\":\"x-ai-eg-model\",\"string_match\":{\"exact\":\"" v "\"}}]"
#define RC_LISTENER                                                                                \
	"{\"name\":\"dyn\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","              \
	"\"port_value\":82}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","                  \
	"\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.filters.network."      \
	"http_connection_manager.v3.HttpConnectionManager\",\"stat_prefix\":\"l4e\","              \
	"\"route_config\":{\"name\":\"dyn\",\"virtual_hosts\":["                                   \
	"{\"name\":\"nr\",\"domains\":[\"nr\"],\"routes\":["                                       \
	"{\"match\":{\"prefix\":\"/\",\"headers\":[{\"name\":\"x-keep\",\"present_match\":true}]}," \
	"\"route\":{\"cluster\":\"web\"}}]},"                                                      \
	"{\"name\":\"all\",\"domains\":[\"*\"],\"routes\":["                                       \
	"{\"match\":{\"prefix\":\"/\"," RC_MODEL("m2") "},\"route\":{\"cluster\":\"two\"},"        \
	"\"typed_per_filter_config\":{\"hm\":{" AT_("header_mutation.v3.HeaderMutationPerRoute")  \
	",\"mutations\":{\"request_mutations\":[{\"append\":{\"header\":{\"key\":\"x-later\","     \
	"\"value\":\"two\"}}}]}}}},"                                                              \
	"{\"match\":{\"prefix\":\"/p2\"},\"route\":{\"cluster\":\"two\"}},"                  \
	"{\"match\":{\"prefix\":\"/\"," RC_MODEL("direct") "},\"direct_response\":{\"status\":418}}," \
	"{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}]}]},"                      \
	"\"http_filters\":[{\"name\":\"ep\",\"typed_config\":{" AT_("ext_proc.v3.ExternalProcessor") \
	",\"grpc_service\":{\"envoy_grpc\":{\"cluster_name\":\"dyn\"}},"                           \
	"\"processing_mode\":{\"response_header_mode\":\"SKIP\"}%s}},"                             \
	"{\"name\":\"hm\",\"typed_config\":{" AT_("header_mutation.v3.HeaderMutation") "}},"     \
	"{\"name\":\"envoy.filters.http.router\",\"typed_config\":{" AT_("router.v3.Router") "}}]}}]}]}"
/* clang-format on */

/* A request_headers answer: header_mutation @p mut (@p n bytes, NULL:
 * none), clear_route_cache when @p clear. */
static size_t rc_answer(uint8_t *msg, const uint8_t *mut, size_t n, bool clear)
{
	uint8_t common[1024], hr[1100];
	size_t cn = 0, hn = 0, k = 0;
	if (mut)
		pb_ld(common, &cn, 2, mut, n);
	if (clear)
		pb_var(common, &cn, 5, 1);
	pb_ld(hr, &hn, 1, common, cn);
	pb_ld(msg, &k, 1, hr, hn);
	return k;
}

static void rc_begin(const char *extra)
{
	char json[8192];
	snprintf(json, sizeof(json), RC_LISTENER, extra);
	hh_begin(1);
	hh_apply(ARN_TYPE_URL_CLUSTER, EP_CLUSTER);
	hh_apply(ARN_TYPE_URL_LISTENER, json);
	hh_cfg_changed = true;
	hh_settle();
	hh_open(0, 82);
	hh_settle();
}

/* Client 0's @p req, the processor's answer @p msg: the upstream that got
 * the request (NULL: none; its head in @p r), else what the client got
 * (in @p r). The upstream answers 200. */
static struct peer *rc_case(const char *req, const uint8_t *msg, size_t k, bool first, char *r,
			    size_t cap)
{
	uint8_t m[2048];
	size_t mn;
	uint32_t sid;
	static struct peer *a;
	uint32_t mark = hh_client(0)->log_len;
	a = ep_request(req, m, sizeof(m), &mn, &sid, first ? NULL : a);
	assert_non_null(a);
	uint32_t rx0[N_PEERS];
	snapshot(rx0);
	ep_answer(a, first, sid, msg, k);
	rx0[a - peers] = a->rx;
	struct peer *u = upstream_that_got(rx0);
	if (!u) {
		client_since(mark, r, cap);
		return NULL;
	}
	size_t ul = u->rx - rx0[u - peers];
	assert_true(ul < cap);
	memcpy(r, u->log + u->log_len - ul, ul);
	r[ul] = 0;
	send_str(u, OK5);
	return u;
}

#define ADDR_WEB 0xc61200c8u /* 198.18.0.200 */

/*
 * clear_route_cache (Envoy's DecodingProcessorState::clearRouteCache,
 * route_cache_action DEFAULT): the processor's header mutation
 * (x-ai-eg-model, as Envoy AI Gateway's) with clear_route_cache moves the
 * request to the route its mutated headers match: cluster "two", with
 * that route's per-route config of the filter after ext_proc
 * (header_mutation's x-later); a direct-response route answers; a
 * removal that leaves no route matching: 404 NR (route_not_found).
 * Without clear_route_cache the request stays on its route, as it does
 * with clear_route_cache but no header_mutation (counted
 * clear_route_cache_ignored, as Envoy's). Fails before: the request went
 * to "web" (198.18.0.200), the mutation only counted.
 */
static void test_ext_proc_clear_route_cache(void **state)
{
	(void)state;
	char r[4096];
	uint8_t msg[1024], mut[512];
	size_t n, k;
	rc_begin("");
	uint64_t ign0 = ep_stat(ARN_EXT_PROC_clear_route_cache_ignored),
		 dis0 = ep_stat(ARN_EXT_PROC_clear_route_cache_disabled);
	n = 0;
	set_hdr(mut, &n, "x-ai-eg-model", "m2", 2, -1);
	k = rc_answer(msg, mut, n, true);
	struct peer *u =
	    rc_case("GET /v1/chat HTTP/1.1\r\nHost: a\r\n\r\n", msg, k, true, r, sizeof(r));
	assert_non_null(u);
	if (u->addr == ADDR_WEB || !strstr(r, "x-ai-eg-model: m2\r\n") ||
	    !strstr(r, "x-later: two\r\n"))
		fail_msg("upstream %08x got: %s", u->addr, r);
	/* the same mutation without clear_route_cache: the route stays */
	k = rc_answer(msg, mut, n, false);
	u = rc_case("GET /v1/chat HTTP/1.1\r\nHost: a\r\n\r\n", msg, k, false, r, sizeof(r));
	assert_non_null(u);
	if (u->addr != ADDR_WEB || !strstr(r, "x-ai-eg-model: m2\r\n") || strstr(r, "x-later"))
		fail_msg("upstream %08x got: %s", u->addr, r);
	/* a direct-response route */
	n = 0;
	set_hdr(mut, &n, "x-ai-eg-model", "direct", 2, -1);
	k = rc_answer(msg, mut, n, true);
	u = rc_case("GET /v1/chat HTTP/1.1\r\nHost: a\r\n\r\n", msg, k, false, r, sizeof(r));
	assert_null(u);
	if (!strstr(r, "HTTP/1.1 418 "))
		fail_msg("the client got: %s", r);
	/* no route for the mutated headers: 404 */
	uint8_t rm[64];
	size_t rn = 0;
	pb_ld(rm, &rn, 2, "x-keep", 6); /* HeaderMutation.remove_headers */
	k = rc_answer(msg, rm, rn, true);
	u = rc_case("GET /v1/chat HTTP/1.1\r\nHost: nr\r\nx-keep: 1\r\n\r\n", msg, k, false, r,
		    sizeof(r));
	assert_null(u);
	if (!strstr(r, "HTTP/1.1 404 Not Found\r\n"))
		fail_msg("the client got: %s", r);
	/* clear_route_cache without a header_mutation: ignored, counted */
	k = rc_answer(msg, NULL, 0, true);
	u = rc_case("GET /v1/chat HTTP/1.1\r\nHost: a\r\nx-ai-eg-model: m2\r\n\r\n", msg, k, false,
		    r, sizeof(r));
	assert_non_null(u);
	assert_true(u->addr != ADDR_WEB); /* its own header's route */
	assert_int_equal(ep_stat(ARN_EXT_PROC_clear_route_cache_ignored) - ign0, 1);
	assert_int_equal(ep_stat(ARN_EXT_PROC_clear_route_cache_disabled) - dis0, 0);
	hh_end();
}

/* A :path rewrite without clear_route_cache: the new path goes upstream
 * on the route the client's path matched (Envoy's cached route: "web"),
 * with it the new path's route ("two"). Fails before: the rewritten path
 * moved the request to "two" without clear_route_cache. */
static void test_ext_proc_path_route_kept(void **state)
{
	(void)state;
	char r[4096];
	uint8_t msg[1024], mut[512];
	size_t n = 0, k;
	bool first = true;
	struct peer *u;
	rc_begin("");
	/* a :path rewrite without clear_route_cache: the route stays the one
	 * the client's path matched (Envoy's cached route), the new path goes
	 * upstream; with it, the new path's route */
	n = 0;
	set_hdr(mut, &n, ":path", "/p2/x", 2, -1);
	k = rc_answer(msg, mut, n, false);
	u = rc_case("GET /a HTTP/1.1\r\nHost: a\r\n\r\n", msg, k, first, r, sizeof(r));
	first = false;
	assert_non_null(u);
	if (u->addr != ADDR_WEB || !strstr(r, "GET /p2/x HTTP/1.1\r\n"))
		fail_msg("upstream %08x got: %s", u->addr, r);
	k = rc_answer(msg, mut, n, true);
	u = rc_case("GET /a HTTP/1.1\r\nHost: a\r\n\r\n", msg, k, first, r, sizeof(r));
	first = false;
	assert_non_null(u);
	if (u->addr == ADDR_WEB || !strstr(r, "GET /p2/x HTTP/1.1\r\n"))
		fail_msg("upstream %08x got: %s", u->addr, r);
	hh_end();
}

/* disable_clear_route_cache (route_cache_action RETAIN): counted in
 * clear_route_cache_disabled, the request not moved; route_cache_action
 * CLEAR moves it on a header mutation without the answer's word. Fails
 * before: CLEAR refused by the configuration. */
static void test_ext_proc_clear_route_cache_modes(void **state)
{
	(void)state;
	char r[4096];
	uint8_t msg[1024], mut[512];
	size_t n = 0, k;
	set_hdr(mut, &n, "x-ai-eg-model", "m2", 2, -1);
	rc_begin(",\"disable_clear_route_cache\":true");
	uint64_t dis0 = ep_stat(ARN_EXT_PROC_clear_route_cache_disabled);
	k = rc_answer(msg, mut, n, true);
	struct peer *u = rc_case("GET /x HTTP/1.1\r\nHost: a\r\n\r\n", msg, k, true, r, sizeof(r));
	assert_non_null(u);
	if (u->addr != ADDR_WEB || !strstr(r, "x-ai-eg-model: m2\r\n"))
		fail_msg("upstream %08x got: %s", u->addr, r);
	assert_int_equal(ep_stat(ARN_EXT_PROC_clear_route_cache_disabled) - dis0, 1);
	hh_end();
	rc_begin(",\"route_cache_action\":\"CLEAR\"");
	k = rc_answer(msg, mut, n, false);
	u = rc_case("GET /x HTTP/1.1\r\nHost: a\r\n\r\n", msg, k, true, r, sizeof(r));
	assert_non_null(u);
	if (u->addr == ADDR_WEB || !strstr(r, "x-later: two\r\n"))
		fail_msg("upstream %08x got: %s", u->addr, r);
	hh_end();
}

/* The worker's large scratch buffers free now. */
static unsigned bigs_free(void)
{
	unsigned n = 0;
	for (char **b = worker()->big_free; b; b = (char **)*b)
		n++;
	return n;
}

/*
 * The next exchange while the transport still holds the last message (a
 * processor that answers the request's headers before its HTTP/2 stream's
 * window, 0 from its SETTINGS, let Arion send them: the message stays
 * queued, by reference, in the exchange's buffer): the body phase takes a
 * buffer of its own and its message follows once the window opens; the
 * request goes upstream with the body's answer. Twice on the processor's
 * one connection; every buffer back at the end. Fails before: 500
 * ext_proc_error_gRPC_error_14 ("no buffer": the body's exchange refused
 * while the headers' buffer was owed).
 */
static void test_ext_proc_answer_while_queued(void **state)
{
	(void)state;
	char path[64], r[4096];
	uint8_t m[2048], msg[1024], b[256];
	size_t mn, k;
	uint32_t sid;
	snprintf(path, sizeof(path), "/tmp/arn_test_ep13.%d.log", (int)getpid());
	ep_begin_pm(path, ",\"request_body_mode\":\"BUFFERED\"");
	unsigned free0 = bigs_free();
	/* the connection: a GET's exchange; the processor's SETTINGS give
	 * every later stream a window of 0 */
	struct peer *a =
	    ep_request("GET /g HTTP/1.1\r\nHost: a\r\n\r\n", m, sizeof(m), &mn, &sid, NULL);
	assert_non_null(a);
	/* SETTINGS {INITIAL_WINDOW_SIZE 0}, then the ACK of Arion's */
	static const uint8_t win0[] = {0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 4, 0,
				       0, 0, 0, 0, 0, 0, 4, 1, 0, 0, 0, 0};
	send_raw(a, win0, sizeof(win0));
	k = headers_answer(msg, 1, NULL, 0);
	uint32_t rx0[N_PEERS];
	snapshot(rx0);
	ep_answer(a, false, sid, msg, k);
	hh_advance(10);
	rx0[a - peers] = a->rx;
	struct peer *u = upstream_that_got(rx0);
	assert_non_null(u);
	send_str(u, OK5);
	for (int round = 0; round < 2; round++) {
		uint32_t mark = hh_client(0)->log_len;
		a = ep_request("POST /b HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello", m,
			       sizeof(m), &mn, &sid, a);
		assert_non_null(a);
		assert_int_equal(mn, 0); /* its message waits for the window */
		k = headers_answer(msg, 1, NULL, 0);
		ep_answer(a, false, sid, msg, k); /* answered before it was read */
		hh_advance(10);
		client_since(mark, r, sizeof(r));
		if (r[0]) {
			char lg[512];
			log_take(path, lg, sizeof(lg));
			fail_msg("the client got: %s (access log: %s)", r, lg);
		}
		k = h2_window_update(b, sid, 100000);
		send_raw(a, b, k);
		hh_advance(10);
		assert_true(ep_nth(a, sid, 1, m, sizeof(m), &mn)); /* the body's message */
		k = body_answer(msg, NULL, 0, "HELLO");
		snapshot(rx0);
		ep_more(a, sid, msg, k);
		hh_advance(10);
		rx0[a - peers] = a->rx;
		u = upstream_that_got(rx0);
		client_since(mark, r, sizeof(r));
		if (!u)
			fail_msg("round %d: nothing upstream; the client got: %s", round, r);
		size_t ul = u->rx - rx0[u - peers];
		memcpy(r, u->log + u->log_len - ul, ul);
		r[ul] = 0;
		if (!strstr(r, "\r\n\r\nHELLO"))
			fail_msg("the upstream got: %s", r);
		send_str(u, OK5);
		client_since(mark, r, sizeof(r));
		if (!strstr(r, "HTTP/1.1 200 OK\r\n"))
			fail_msg("the client got: %s", r);
	}
	assert_int_equal(http_ext_proc_in_use(worker()), 0);
	assert_int_equal(bigs_free(), free0);
	hh_end();
	unlink(path);
}

/*
 * A local reply made after the filter (the router's 503: the upstream
 * reset before its response) is not sent to a processor that waits for
 * the response (response_header_mode SEND): Envoy's encodeHeaders would
 * send it (ext_proc.cc: !processing_complete_ && sendHeaders()); Arion
 * writes it at once (docs/http.md "External processing") and counts it
 * in local_replies_unprocessed, so an operator sees what the processor
 * missed. A reply the filter made itself (an immediate_response) is not
 * counted: Envoy's is not sent back either (processing_complete_). Fails
 * before: local_replies_unprocessed does not exist (the 503 went out as
 * here, uncounted).
 */
static void test_ext_proc_local_reply_counted(void **state)
{
	(void)state;
	char path[64], r[4096];
	uint8_t m[2048], msg[512];
	size_t mn, k;
	uint32_t sid, rx0[N_PEERS];
	struct peer *a = NULL;
	snprintf(path, sizeof(path), "/tmp/arn_test_ep14.%d.log", (int)getpid());
	ep_begin_resp(path, "");
	uint64_t lr0 = ep_stat(ARN_EXT_PROC_local_replies_unprocessed),
		 sent0 = ep_stat(ARN_EXT_PROC_stream_msgs_sent);
	/* 1. the router's 503 after the request's answer */
	uint32_t mark = hh_client(0)->log_len;
	struct peer *u = held_setup("GET /rst HTTP/1.1\r\nHost: a\r\n\r\n", &a, &sid, true);
	hh_reset(u);
	hh_settle();
	hh_advance(10);
	client_since(mark, r, sizeof(r));
	if (!strstr(r, "HTTP/1.1 503 Service Unavailable\r\n"))
		fail_msg("the client got: %s", r);
	assert_false(ep_nth(a, sid, 1, m, sizeof(m), &mn)); /* no response_headers */
	assert_int_equal(ep_stat(ARN_EXT_PROC_local_replies_unprocessed) - lr0, 1);
	assert_int_equal(ep_stat(ARN_EXT_PROC_stream_msgs_sent) - sent0, 1);
	/* 2. its own immediate_response: not counted, not sent back */
	mark = hh_client(0)->log_len;
	assert_ptr_equal(
	    ep_request("GET /i HTTP/1.1\r\nHost: a\r\n\r\n", m, sizeof(m), &mn, &sid, a), a);
	uint8_t imm[64], stc[8];
	size_t il = 0, sl = 0;
	pb_var(stc, &sl, 1, 403);
	pb_ld(imm, &il, 1, stc, sl);
	k = 0;
	pb_ld(msg, &k, 7, imm, il);
	snapshot(rx0);
	ep_answer(a, false, sid, msg, k);
	rx0[a - peers] = a->rx;
	assert_null(upstream_that_got(rx0));
	client_since(mark, r, sizeof(r));
	if (!strstr(r, "HTTP/1.1 403 Forbidden\r\n"))
		fail_msg("the client got: %s", r);
	assert_false(ep_nth(a, sid, 1, m, sizeof(m), &mn));
	assert_int_equal(ep_stat(ARN_EXT_PROC_local_replies_unprocessed) - lr0, 1);
	assert_int_equal(http_ext_proc_in_use(worker()), 0);
	hh_end();
	unlink(path);
}

static void no_own(struct hh_rd *r, uint8_t op)
{
	(void)r;
	(void)op;
}

static uint64_t dyn_stat(unsigned id)
{
	struct arn_stats_scope *sc =
	    arn_stats_scope_get_named(&arn_stats_ext_proc_schema, "http.dyn.ext_proc", NULL, NULL);
	assert_non_null(sc);
	uint64_t v = arn_stats_counter_value(sc, id);
	arn_stats_scope_put(sc);
	return v;
}

/* fuzz_hcm's seed dyn_ext_proc (tests/http/gen_hcm_seeds.py) reaches the
 * filter the fuzzers' "dyn" listener has (HH_FILTER_EP, on for /ep only)
 * with its processor over HTTP/1.1 (a chunked streaming POST): a
 * ProcessingResponse split over two chunks, then the request upstream; an
 * immediate_response; a processor that never answers (the timeout). The
 * fuzzer starts from there. Fails before: the seed and the filter are
 * not there (the "dyn" listener would be refused). */
static void test_ext_proc_fuzz_seed(void **state)
{
	(void)state;
	FILE *f = fopen("tests/http/corpus/hcm/dyn_ext_proc", "rb");
	assert_non_null(f);
	static uint8_t seed[4096];
	size_t n = fread(seed, 1, sizeof(seed), f);
	fclose(f);
	assert_true(n > 1 && n < sizeof(seed));
	hh_begin(1); /* the scope exists once the listener does */
	hh_end();
	uint64_t st0 = dyn_stat(ARN_EXT_PROC_streams_started),
		 rx0 = dyn_stat(ARN_EXT_PROC_stream_msgs_received),
		 to0 = dyn_stat(ARN_EXT_PROC_message_timeouts);
	hh_fuzz_run(seed, n, no_own);
	assert_int_equal(dyn_stat(ARN_EXT_PROC_streams_started) - st0, 3);
	assert_int_equal(dyn_stat(ARN_EXT_PROC_stream_msgs_received) - rx0, 2);
	assert_int_equal(dyn_stat(ARN_EXT_PROC_message_timeouts) - to0, 1);
}

/* ---- response_body_mode STREAMED --------------------------------------------------------- */

/* ep_begin with response_header_mode SEND, response_body_mode STREAMED
 * and @p extra (more ExternalProcessor fields). */
static void ep_begin_stream(const char *path, const char *extra)
{
	char json[8192], out[8192];
	unlink(path);
	snprintf(json, sizeof(json), EP_LISTENER, path, extra);
	char *at = strstr(json, "\"response_header_mode\":\"SKIP\"");
	assert_non_null(at);
	memcpy(at + 24, "SEND", 4);
	size_t head = (size_t)(at - json) + 29;
	snprintf(out, sizeof(out), "%.*s%s%s", (int)head, json,
		 ",\"response_body_mode\":\"STREAMED\"", json + head);
	hh_begin(1);
	hh_apply(ARN_TYPE_URL_CLUSTER, EP_CLUSTER);
	hh_apply(ARN_TYPE_URL_LISTENER, out);
	hh_cfg_changed = true;
	hh_settle();
	hh_open(0, 82);
	hh_settle();
}

/* A response_body answer with no mutation (the piece goes as it came). */
static size_t rs_plain(uint8_t *msg)
{
	size_t k = 0;
	static const uint8_t br[2] = {0x0a, 0x00}; /* BodyResponse {response {}} */
	pb_ld(msg, &k, 4, br, sizeof(br));
	return k;
}

/* response_body answer with body_mutation body @p body (NULL: clear_body). */
static size_t rs_body(uint8_t *msg, const char *body)
{
	size_t k = body_answer(msg, NULL, 0, body);
	msg[0] = 4 << 3 | 2; /* ProcessingResponse.response_body */
	return k;
}

/* The processor's @p nth message is a response_body carrying @p piece
 * (its HttpBody.body) with end_of_stream @p eos. */
static void rs_expect(struct peer *a, uint32_t sid, unsigned nth, const char *piece, bool eos)
{
	uint8_t m[2048], want[64];
	size_t mn, wn = 0;
	if (!ep_nth(a, sid, nth, m, sizeof(m), &mn))
		fail_msg("message %u not sent", nth);
	assert_int_equal(m[0], 0x42);	    /* metadata_context first, as Envoy's */
	assert_int_equal(m[2], 5 << 3 | 2); /* response_body */
	if (*piece)
		pb_ld(want, &wn, 1, piece, strlen(piece));
	if (wn)
		assert_non_null(memmem(m, mn, want, wn));
	static const uint8_t e1[2] = {0x10, 0x01};
	assert_true((memmem(m + 4, mn - 4, e1, 2) != NULL) == eos);
}

/*
 * response_body_mode STREAMED, as Envoy's ext_proc (encodeData with
 * STREAMED; handleStreamedBodyResponse): after the response_headers
 * answer the head goes to the client without its content-length
 * (shouldRemoveContentLength), chunked; each piece of the body is sent
 * as a response_body as it comes (end_of_stream false) and held until
 * its answer, the answers in order: a body_mutation body replaces the
 * piece, clear_body drops it, none lets it on as it came; the body's
 * end goes as an empty piece with end_of_stream and the client's body
 * ends only after its answer (whose body is written before the end).
 * A content-length response the same (its length removed). A message
 * for a piece not sent, and one of another kind while a piece waits, are
 * spurious (counted): the stream is closed and the waiting piece and
 * the rest go on unprocessed (Envoy's clearAsyncState). Fails before:
 * the listener is refused (response_body_mode STREAMED "not built").
 */
static void test_ext_proc_response_streamed(void **state)
{
	(void)state;
	char path[64], r[4096];
	uint8_t m[2048], msg[1024];
	size_t mn, k;
	uint32_t sid;
	struct peer *a = NULL;
	snprintf(path, sizeof(path), "/tmp/arn_test_ep20.%d.log", (int)getpid());
	ep_begin_stream(path, "");
	uint64_t sent0 = ep_stat(ARN_EXT_PROC_stream_msgs_sent),
		 recv0 = ep_stat(ARN_EXT_PROC_stream_msgs_received),
		 sp0 = ep_stat(ARN_EXT_PROC_spurious_msgs_received);
	/* 1. SSE: every piece answered its own way */
	uint32_t mark = hh_client(0)->log_len;
	struct peer *u = held_setup("GET /sse HTTP/1.1\r\nHost: a\r\n\r\n", &a, &sid, true);
	send_str(u, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n6\r\ndata:1\r\n");
	hh_advance(10);
	assert_true(ep_nth(a, sid, 1, m, sizeof(m), &mn));
	assert_int_equal(m[0], 3 << 3 | 2);		    /* response_headers */
	assert_false(ep_nth(a, sid, 2, m, sizeof(m), &mn)); /* the body waits for the head */
	k = headers_answer(msg, 2, NULL, 0);
	ep_more(a, sid, msg, k);
	hh_advance(10);
	rs_expect(a, sid, 2, "data:1", false);
	client_since(mark, r, sizeof(r));
	if (!strstr(r, "HTTP/1.1 200 OK\r\n") || !strcasestr(r, "transfer-encoding: chunked") ||
	    strstr(r, "data:1"))
		fail_msg("the client got: %s", r);
	k = rs_body(msg, "DATA:1");
	ep_more(a, sid, msg, k);
	hh_advance(10);
	client_since(mark, r, sizeof(r));
	if (!strstr(r, "\r\n6\r\nDATA:1\r\n"))
		fail_msg("the client got: %s", r);
	send_str(u, "6\r\ndata:2\r\n");
	hh_advance(10);
	rs_expect(a, sid, 3, "data:2", false);
	k = rs_body(msg, NULL); /* clear_body */
	ep_more(a, sid, msg, k);
	hh_advance(10);
	send_str(u, "6\r\ndata:3\r\n0\r\n\r\n");
	hh_advance(10);
	rs_expect(a, sid, 4, "data:3", false);
	rs_expect(a, sid, 5, "", true); /* the end: an empty piece */
	k = rs_plain(msg);
	ep_more(a, sid, msg, k);
	hh_advance(10);
	client_since(mark, r, sizeof(r));
	if (!strstr(r, "data:3") || strstr(r, "data:2") || strstr(r, "0\r\n\r\n"))
		fail_msg("the client got (not ended yet): %s", r);
	k = rs_body(msg, "[DONE]");
	ep_more(a, sid, msg, k);
	hh_advance(10);
	client_since(mark, r, sizeof(r));
	if (!strstr(r, "DATA:1\r\n6\r\ndata:3\r\n6\r\n[DONE]\r\n0\r\n\r\n"))
		fail_msg("the client got: %s", r);
	assert_true(h2_read(a, sid, m, sizeof(m), &mn).end_stream); /* processing over */
	/* 2. a content-length response: streamed, its length removed */
	mark = hh_client(0)->log_len;
	u = held_setup("GET /cl HTTP/1.1\r\nHost: a\r\n\r\n", &a, &sid, false);
	send_str(u, OK5);
	hh_advance(10);
	k = headers_answer(msg, 2, NULL, 0);
	ep_more(a, sid, msg, k);
	hh_advance(10);
	rs_expect(a, sid, 2, "hello", false);
	rs_expect(a, sid, 3, "", true);
	k = rs_body(msg, "HELLO, WORLD");
	ep_more(a, sid, msg, k);
	k = rs_plain(msg);
	ep_more(a, sid, msg, k);
	hh_advance(10);
	client_since(mark, r, sizeof(r));
	if (strcasestr(r, "content-length") || !strcasestr(r, "transfer-encoding: chunked") ||
	    !strcasestr(r, "c\r\nHELLO, WORLD\r\n0\r\n\r\n") || strstr(r, "hello"))
		fail_msg("the client got: %s", r);
	/* 3. an answer for a piece not sent (the head's answered, no body
	 * yet): spurious; the body then goes as it comes */
	mark = hh_client(0)->log_len;
	u = held_setup("GET /sp HTTP/1.1\r\nHost: a\r\n\r\n", &a, &sid, false);
	send_str(u, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
	hh_advance(10);
	k = headers_answer(msg, 2, NULL, 0);
	ep_more(a, sid, msg, k);
	hh_advance(10);
	k = rs_body(msg, "INJECTED");
	ep_more(a, sid, msg, k);
	hh_advance(10);
	assert_true(h2_read(a, sid, m, sizeof(m), &mn).end_stream);
	send_str(u, "5\r\nhello\r\n0\r\n\r\n");
	hh_advance(10);
	client_since(mark, r, sizeof(r));
	if (!strstr(r, "5\r\nhello\r\n0\r\n\r\n") || strstr(r, "INJECTED"))
		fail_msg("the client got: %s", r);
	/* 4. out of turn while a piece waits (a response_headers answer):
	 * spurious, the piece goes on as it came, so does the rest */
	mark = hh_client(0)->log_len;
	u = held_setup("GET /oo HTTP/1.1\r\nHost: a\r\n\r\n", &a, &sid, false);
	send_str(u, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n");
	hh_advance(10);
	k = headers_answer(msg, 2, NULL, 0);
	ep_more(a, sid, msg, k);
	hh_advance(10);
	rs_expect(a, sid, 2, "abc", false);
	k = headers_answer(msg, 2, NULL, 0);
	ep_more(a, sid, msg, k);
	hh_advance(10);
	send_str(u, "3\r\ndef\r\n0\r\n\r\n");
	hh_advance(10);
	client_since(mark, r, sizeof(r));
	if (!strstr(r, "3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n"))
		fail_msg("the client got: %s", r);
	assert_false(ep_nth(a, sid, 3, m, sizeof(m), &mn));
	assert_int_equal(ep_stat(ARN_EXT_PROC_spurious_msgs_received) - sp0, 2);
	/* requests 4 x (headers, response headers) + pieces 4 + 2 + 1 */
	assert_int_equal(ep_stat(ARN_EXT_PROC_stream_msgs_sent) - sent0, 15);
	assert_int_equal(ep_stat(ARN_EXT_PROC_stream_msgs_received) - recv0, 14);
	assert_int_equal(http_ext_proc_in_use(worker()), 0);
	assert_int_equal(worker()->rb_segs, 0);
	hh_end();
	unlink(path);
}

/*
 * STREAMED's flow control, attacked by a processor that answers nothing:
 * at HTTP_EXT_PROC_STREAM_CHUNKS pieces in flight (Envoy's high
 * watermark, requestWatermark) the upstream is read no more, however
 * much it sent; answers that bring the queue to half (its low watermark,
 * queueBelowLowLimit) have it read again. With no answer within
 * message_timeout the stream cannot take a 504 any more (its head went):
 * the client's connection is reset, as Envoy resets it, counted; every
 * kept mbuf back.
 */
static void test_ext_proc_streamed_bound(void **state)
{
	(void)state;
	char path[64], body[1024];
	uint8_t m[2048], msg[1024];
	size_t mn, k;
	uint32_t sid;
	struct peer *a = NULL;
	snprintf(path, sizeof(path), "/tmp/arn_test_ep21.%d.log", (int)getpid());
	ep_begin_stream(path, "");
	uint64_t to0 = ep_stat(ARN_EXT_PROC_message_timeouts);
	struct peer *u = held_setup("GET /flood HTTP/1.1\r\nHost: a\r\n\r\n", &a, &sid, true);
	send_str(u, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
	hh_advance(10);
	k = headers_answer(msg, 2, NULL, 0);
	ep_more(a, sid, msg, k);
	hh_advance(10);
	size_t bl = 0;
	for (unsigned i = 0; i < 24; i++)
		bl += (size_t)snprintf(body + bl, sizeof(body) - bl, "2\r\n%02u\r\n", i);
	send_str(u, body);
	hh_advance(10);
	/* 1 headers, 1 response headers, then 16 pieces and no more */
	assert_true(ep_nth(a, sid, 1 + HTTP_EXT_PROC_STREAM_CHUNKS, m, sizeof(m), &mn));
	assert_false(ep_nth(a, sid, 2 + HTTP_EXT_PROC_STREAM_CHUNKS, m, sizeof(m), &mn));
	hh_advance(10);
	assert_false(ep_nth(a, sid, 2 + HTTP_EXT_PROC_STREAM_CHUNKS, m, sizeof(m), &mn));
	/* 7 answers: 9 in flight, above half: still held */
	k = rs_plain(msg);
	for (unsigned i = 0; i < 7; i++)
		ep_more(a, sid, msg, k);
	hh_advance(10);
	assert_false(ep_nth(a, sid, 2 + HTTP_EXT_PROC_STREAM_CHUNKS, m, sizeof(m), &mn));
	/* the 8th: 8 in flight, read again: the 8 pieces left */
	ep_more(a, sid, msg, k);
	hh_advance(10);
	rs_expect(a, sid, 2 + HTTP_EXT_PROC_STREAM_CHUNKS, "16", false);
	rs_expect(a, sid, 9 + HTTP_EXT_PROC_STREAM_CHUNKS, "23", false);
	/* and then nothing: the message timeout resets the client */
	assert_false(hh_client(0)->dead);
	hh_advance(250);
	assert_true(hh_client(0)->dead);
	assert_int_equal(ep_stat(ARN_EXT_PROC_message_timeouts) - to0, 1);
	assert_int_equal(http_ext_proc_in_use(worker()), 0);
	assert_int_equal(worker()->rb_segs, 0);
	hh_end();
	unlink(path);
}

/*
 * Envoy AI Gateway's processor: the filter configured with the bodies
 * NONE and allow_mode_override, it answers an SSE completion's
 * response_headers with mode_override {response_body_mode: STREAMED},
 * and then rewrites each piece. FULL_DUPLEX_STREAMED asked so is ignored
 * whole (Arion does not build it): the body goes on unprocessed. Fails
 * before: the override was ignored, the body unprocessed.
 */
static void test_ext_proc_streamed_override(void **state)
{
	(void)state;
	char path[64], r[4096];
	uint8_t m[2048], msg[1024], pm[8];
	size_t mn, k, pn;
	uint32_t sid;
	struct peer *a = NULL;
	snprintf(path, sizeof(path), "/tmp/arn_test_ep22.%d.log", (int)getpid());
	ep_begin_resp(path, ",\"allow_mode_override\":true");
	for (unsigned mode = 1; mode <= 4; mode += 3) {
		uint32_t mark = hh_client(0)->log_len;
		struct peer *u =
		    held_setup("GET /ai HTTP/1.1\r\nHost: a\r\n\r\n", &a, &sid, mode == 1);
		send_str(u, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
			    "Transfer-Encoding: chunked\r\n\r\n");
		hh_advance(10);
		k = headers_answer(msg, 2, NULL, 0);
		pn = 0;
		pb_var(pm, &pn, 4, mode);  /* response_body_mode */
		pb_ld(msg, &k, 9, pm, pn); /* ProcessingResponse.mode_override */
		ep_more(a, sid, msg, k);
		hh_advance(10);
		send_str(u, "7\r\ndata:hi\r\n0\r\n\r\n");
		hh_advance(10);
		if (mode == 1) {
			rs_expect(a, sid, 2, "data:hi", false);
			k = rs_body(msg, "data:HI");
			ep_more(a, sid, msg, k);
			rs_expect(a, sid, 3, "", true);
			k = rs_plain(msg);
			ep_more(a, sid, msg, k);
			hh_advance(10);
		} else {
			assert_false(ep_nth(a, sid, 2, m, sizeof(m), &mn));
		}
		client_since(mark, r, sizeof(r));
		if (!strstr(r,
			    mode == 1 ? "7\r\ndata:HI\r\n0\r\n\r\n" : "7\r\ndata:hi\r\n0\r\n\r\n"))
			fail_msg("mode %u: the client got: %s", mode, r);
	}
	assert_int_equal(http_ext_proc_in_use(worker()), 0);
	hh_end();
	unlink(path);
}

/*
 * STREAMED with failure_mode_allow, as Envoy's: no answer within
 * message_timeout for a waiting piece (onMessageTimeout, then
 * clearAsyncState) lets it on unprocessed and the rest of the body after
 * it, counted; the processor closing its stream OK while a piece waits
 * (onGrpcClose) the same. The client's body is whole either way.
 */
static void test_ext_proc_streamed_allowed(void **state)
{
	(void)state;
	char path[64], r[4096];
	uint8_t msg[256], b[256];
	size_t k;
	uint32_t sid;
	struct peer *a = NULL;
	snprintf(path, sizeof(path), "/tmp/arn_test_ep24.%d.log", (int)getpid());
	ep_begin_stream(path, ",\"failure_mode_allow\":true");
	uint64_t to0 = ep_stat(ARN_EXT_PROC_message_timeouts),
		 fma0 = ep_stat(ARN_EXT_PROC_failure_mode_allowed),
		 cl0 = ep_stat(ARN_EXT_PROC_streams_closed);
	for (unsigned c = 0; c < 2; c++) {
		uint32_t mark = hh_client(0)->log_len;
		struct peer *u = held_setup(c ? "GET /closed HTTP/1.1\r\nHost: a\r\n\r\n"
					      : "GET /late HTTP/1.1\r\nHost: a\r\n\r\n",
					    &a, &sid, c == 0);
		send_str(u, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n");
		hh_advance(10);
		k = headers_answer(msg, 2, NULL, 0);
		ep_more(a, sid, msg, k);
		hh_advance(10);
		rs_expect(a, sid, 2, "abc", false);
		client_since(mark, r, sizeof(r));
		if (strstr(r, "abc"))
			fail_msg("case %u: the piece before its answer: %s", c, r);
		if (c == 0) {
			hh_advance(250); /* message_timeout */
		} else {
			k = h2_grpc_trailers(b, sid, "0");
			send_raw(a, b, k);
			hh_advance(10);
		}
		send_str(u, "3\r\ndef\r\n0\r\n\r\n");
		hh_advance(10);
		client_since(mark, r, sizeof(r));
		if (!strstr(r, "3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n"))
			fail_msg("case %u: the client got: %s", c, r);
		assert_false(hh_client(0)->dead);
	}
	assert_int_equal(ep_stat(ARN_EXT_PROC_message_timeouts) - to0, 1);
	assert_int_equal(ep_stat(ARN_EXT_PROC_failure_mode_allowed) - fma0, 1);
	assert_int_equal(ep_stat(ARN_EXT_PROC_streams_closed) - cl0, 1);
	assert_int_equal(http_ext_proc_in_use(worker()), 0);
	assert_int_equal(worker()->rb_segs, 0);
	hh_end();
	unlink(path);
}

/* Cluster "dyn2" (HTTP/2) at the upstream peer 198.18.0.204. */
/* clang-format off */
#define EP_CLUSTER2                                                                                \
	"{\"name\":\"dyn2\",\"type\":\"STATIC\",\"connect_timeout\":\"0.3s\","                    \
	"\"http2_protocol_options\":{},"                                                           \
	"\"load_assignment\":{\"cluster_name\":\"dyn2\",\"endpoints\":[{\"lb_endpoints\":["      \
	HH_EP(204) "]}]}}"
/* clang-format on */

/* hh_apply's, for a resource named @p name (hh_apply names it "dyn"). */
static void apply_named(const char *type, const char *name, const char *json)
{
	struct arn_config_result res;
	struct arn_config_resource_in in = {name, "v", NULL, 0};
	upb_Arena *ar = upb_Arena_New();
	const upb_MessageDef *md = arn_proto_msgdef(strrchr(type, '/') + 1);
	struct arn_sb err = ARN_SB_INIT;
	upb_Message *msg = arn_proto_from_json(json, strlen(json), md, ar, &err);
	assert_non_null(msg);
	arn_sb_free(&err);
	in.bytes = arn_proto_encode(msg, md, ar, &in.len);
	assert_int_equal(arn_config_apply(store, type, &in, 1, NULL, 0, 0, &res), 0);
	assert_true(res.accepted && !res.n_errors);
	arn_config_result_free(&res);
	upb_Arena_Free(ar);
}

/*
 * One client connection whose requests alternate between two processors'
 * clusters (the route /b overrides the filter's grpc_service with
 * "dyn2", ExtProcPerRoute overrides.grpc_service, as Envoy's): every
 * request opens its own stream on its processor's HTTP/2 connection,
 * each answered; the tenth as the first (a previous helper saw the
 * fifth fail with "could not start"). Every context back.
 */
static void test_ext_proc_alternating_clusters(void **state)
{
	(void)state;
	char path[64], json[8192], out[8192], r[2048];
	uint8_t m[2048], msg[256];
	size_t mn, k;
	uint32_t sid;
	snprintf(path, sizeof(path), "/tmp/arn_test_ep23.%d.log", (int)getpid());
	unlink(path);
	snprintf(json, sizeof(json), EP_LISTENER, path, "");
	const char *at = strstr(json, "{\"match\":{\"prefix\":\"/open\"}");
	assert_non_null(at);
	snprintf(out, sizeof(out),
		 "%.*s{\"match\":{\"prefix\":\"/b\"},\"route\":{\"cluster\":\"web\"},"
		 "\"typed_per_filter_config\":{\"ep\":{" AT_(
		     "ext_proc.v3.ExtProcPerRoute") ",\"overrides\":{\"grpc_service\":{\"envoy_"
						    "grpc\":{\"cluster_name\":\"dyn2\"}}}}}},%s",
		 (int)(at - json), json, at);
	hh_begin(1);
	hh_apply(ARN_TYPE_URL_CLUSTER, EP_CLUSTER);
	apply_named(ARN_TYPE_URL_CLUSTER, "dyn2", EP_CLUSTER2);
	hh_apply(ARN_TYPE_URL_LISTENER, out);
	hh_cfg_changed = true;
	hh_settle();
	hh_open(0, 82);
	hh_settle();
	uint64_t st0 = ep_stat(ARN_EXT_PROC_streams_started),
		 f0 = ep_stat(ARN_EXT_PROC_streams_failed);
	struct peer *proc[2] = {NULL, NULL};
	for (unsigned i = 0; i < 10; i++) {
		unsigned c = i % 2;
		char req[64];
		snprintf(req, sizeof(req), "GET /%s/%u HTTP/1.1\r\nHost: a\r\n\r\n", c ? "b" : "a",
			 i);
		uint32_t mark = hh_client(0)->log_len;
		struct peer *a = ep_request(req, m, sizeof(m), &mn, &sid, proc[c]);
		if (!a)
			fail_msg("request %u: no processor got it", i);
		bool first = !proc[c];
		proc[c] = a;
		assert_true(proc[0] != proc[1]);
		k = headers_answer(msg, 1, NULL, 0);
		uint32_t rx0[N_PEERS];
		snapshot(rx0);
		ep_answer(a, first, sid, msg, k);
		rx0[proc[0] - peers] = proc[0]->rx;
		if (proc[1])
			rx0[proc[1] - peers] = proc[1]->rx;
		struct peer *u = upstream_that_got(rx0);
		if (!u)
			fail_msg("request %u: not let on", i);
		send_str(u, OK5);
		hh_advance(10);
		client_since(mark, r, sizeof(r));
		if (!strstr(r, "HTTP/1.1 200 OK\r\n"))
			fail_msg("request %u: the client got: %s", i, r);
	}
	assert_int_equal(ep_stat(ARN_EXT_PROC_streams_started) - st0, 10);
	assert_int_equal(ep_stat(ARN_EXT_PROC_streams_failed) - f0, 0);
	assert_int_equal(http_ext_proc_in_use(worker()), 0);
	hh_end();
	unlink(path);
}

int main(void)
{
	hh_init(false);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_subreq_stream),
	    cmocka_unit_test(test_subreq_stream_answered_early),
	    cmocka_unit_test(test_ext_proc_request_headers),
	    cmocka_unit_test(test_ext_proc_failure_mode_allow),
	    cmocka_unit_test(test_ext_proc_rules_and_timeouts),
	    cmocka_unit_test(test_ext_proc_client_gone),
	    cmocka_unit_test(test_ext_proc_fuzz_seed),
	    cmocka_unit_test(test_ext_proc_two_filters),
	    cmocka_unit_test(test_ext_proc_response_headers),
	    cmocka_unit_test(test_ext_proc_path_mutation),
	    cmocka_unit_test(test_ext_proc_request_body),
	    cmocka_unit_test(test_ext_proc_mode_override),
	    cmocka_unit_test(test_ext_proc_response_held),
	    cmocka_unit_test(test_ext_proc_response_body),
	    cmocka_unit_test(test_ext_proc_body_answered_early),
	    cmocka_unit_test(test_ext_proc_local_reply_clean),
	    cmocka_unit_test(test_ext_proc_clear_route_cache),
	    cmocka_unit_test(test_ext_proc_clear_route_cache_modes),
	    cmocka_unit_test(test_ext_proc_path_route_kept),
	    cmocka_unit_test(test_ext_proc_answer_while_queued),
	    cmocka_unit_test(test_ext_proc_local_reply_counted),
	    cmocka_unit_test(test_ext_proc_response_streamed),
	    cmocka_unit_test(test_ext_proc_streamed_bound),
	    cmocka_unit_test(test_ext_proc_streamed_override),
	    cmocka_unit_test(test_ext_proc_streamed_allowed),
	    cmocka_unit_test(test_ext_proc_alternating_clusters),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
