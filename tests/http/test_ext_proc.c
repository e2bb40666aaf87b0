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
	uint32_t off = 24;
	*n = 0;
	assert_true(a->log_len >= 24 &&
		    memcmp(a->log, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24) == 0);
	while (off + 9 <= a->log_len) {
		const uint8_t *f = (const uint8_t *)a->log + off;
		uint32_t len = (uint32_t)f[0] << 16 | (uint32_t)f[1] << 8 | f[2];
		uint32_t id = (uint32_t)(f[5] & 0x7f) << 24 | (uint32_t)f[6] << 16 |
			      (uint32_t)f[7] << 8 | f[8];
		if (off + 9 + len > a->log_len)
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

int main(void)
{
	hh_init(false);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_subreq_stream),
	    cmocka_unit_test(test_subreq_stream_answered_early),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
