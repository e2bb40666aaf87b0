/*
 * Active health checks on worker 0 (http_hc.h): the state machine, the
 * checks' connections, and the targets that follow the generations.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arn_config.h"
#include "arn_l4.h"
#include "arn_log.h"
#include "arn_stats.h"
#include "arn_tcp.h"
#include "arn_tls.h"
#include "http_hc.h"
#include "http_int.h"
#include "http_od.h"
#include "http_upp.h"

/* ---- pure logic ------------------------------------------------------------------- */

void http_hc_sm_init(struct http_hc_sm *s, bool failed)
{
	s->n_ok = 0;
	s->n_fail = 0;
	s->failed = failed;
	s->first = true;
	s->last_failed = failed;
	s->pending = false;
}

bool http_hc_sm_apply(const struct arn_cfg_health_check *c, struct http_hc_sm *s,
		      enum http_hc_result r)
{
	bool first = s->first;
	s->first = false;
	s->last_failed = r != HTTP_HC_SUCCESS;
	s->pending = false;
	if (r == HTTP_HC_SUCCESS) {
		s->n_fail = 0;
		if (!s->failed)
			return false;
		/* Envoy: the first check a host ever completes marks it
		 * healthy at once (a faster start), later ones after
		 * healthy_threshold in a row */
		uint32_t need = c->healthy_threshold ? c->healthy_threshold : 1;
		if (first || ++s->n_ok >= need) {
			s->failed = false;
			s->n_ok = 0;
			return true;
		}
		s->pending = true;
		return false;
	}
	s->n_ok = 0;
	if (s->failed)
		return false;
	/* a wrong answer fails the host at once (Envoy ignores
	 * unhealthy_threshold for it); the network's failures and timeouts
	 * count up to the threshold */
	uint32_t need = c->unhealthy_threshold ? c->unhealthy_threshold : 1;
	if (r == HTTP_HC_FAIL_ACTIVE || r == HTTP_HC_FAIL_IMMEDIATE || ++s->n_fail >= need) {
		s->failed = true;
		s->n_fail = 0;
		return true;
	}
	s->pending = true;
	return false;
}

uint64_t http_hc_next_ms(const struct arn_cfg_health_check *c, const struct http_hc_sm *s,
			 bool traffic, uint64_t rand)
{
	/* after the last check's result, not the host's health: a healthy
	 * host whose check failed (not yet unhealthy_threshold times) is
	 * checked again after unhealthy_interval, a failed one whose check
	 * passed after interval (Envoy's edge intervals, defaults) */
	uint64_t base;
	if (!traffic)
		base = c->no_traffic_interval_ms;
	else if (s->last_failed && s->pending && c->unhealthy_edge_interval_ms)
		base = c->unhealthy_edge_interval_ms;
	else if (s->last_failed)
		base = c->unhealthy_interval_ms ? c->unhealthy_interval_ms : c->interval_ms;
	else if (s->pending && c->healthy_edge_interval_ms)
		base = c->healthy_edge_interval_ms;
	else
		base = c->interval_ms;
	/* Envoy's two jitters, each from its own draw: a percentage of the
	 * base, then interval_jitter */
	uint64_t pct = (uint64_t)c->interval_jitter_percent * base / 100;
	if (pct)
		base += ((rand >> 32) ^ (rand * 0x9e3779b97f4a7c15ull)) % pct;
	if (c->interval_jitter_ms)
		base += rand % c->interval_jitter_ms;
	return base ? base : 1;
}

uint64_t http_hc_first_ms(const struct arn_cfg_health_check *c, uint64_t rand)
{
	return c->initial_jitter_ms ? 1 + rand % c->initial_jitter_ms : 1;
}

bool http_hc_status_ok(const struct arn_cfg_health_check *c, unsigned status)
{
	if (!c->n_expected_statuses || !c->expected_statuses)
		return status == 200;
	for (size_t i = 0; i < c->n_expected_statuses; i++)
		if (status >= c->expected_statuses[2 * i] &&
		    status < c->expected_statuses[2 * i + 1])
			return true;
	return false;
}

bool http_hc_tcp_match(const struct arn_cfg_health_check *c, const uint8_t *buf, size_t len)
{
	size_t at = 0;
	for (size_t i = 0; i < c->n_receive; i++) {
		const uint8_t *b = c->receive[i];
		size_t n = c->receive_len[i];
		if (n == 0)
			continue;
		bool found = false;
		for (; at + n <= len; at++)
			if (buf[at] == b[0] && memcmp(buf + at, b, n) == 0) {
				found = true;
				break;
			}
		if (!found)
			return false;
		at += n;
	}
	return true;
}

#define HC_HDRS 100

int http_hc_http_verdict(const struct arn_cfg_health_check *c, const char *buf, size_t len,
			 struct http_hc_verdict *v)
{
	struct arn_h1_header hdrs[HC_HDRS];
	struct arn_h1_msg m;
	struct arn_h1_parser p;
	/* the bound is ours, not the parser's default 60 KiB: a check reads
	 * no more than HTTP_HC_RX_MAX bytes of a response */
	struct arn_h1_config cfg = {.max_head_bytes = HTTP_HC_RX_MAX, .max_headers = HC_HDRS};
	arn_h1_msg_init(&m, hdrs, HC_HDRS);
	arn_h1_parser_init(&p, ARN_H1_RESPONSE, &cfg, &m);
	const char *start = buf;
	v->status = 0;
	v->head_len = 0;
	v->framing = HTTP_HC_BODY_CLOSE;
	v->keep = false;
	v->content_length = 0;
	/* the bound is the whole answer's, interim 1xx heads included (the
	 * parser's is per head): a verdict never depends on a byte past it,
	 * and no verdict within it is an answer not taken */
	bool full = len >= HTTP_HC_RX_MAX;
	if (full)
		len = HTTP_HC_RX_MAX;
	for (;;) {
		struct arn_h1_ev ev;
		ssize_t n = arn_h1_parse(&p, buf, len, &ev);
		/* a line cut by the input's end: the parser would keep it in
		 * a scratch buffer; the whole response is parsed again from
		 * its first byte once more has come, so it is just not there
		 * yet */
		if (n == ARN_AGAIN || (n >= 0 && ev.type == ARN_H1_EV_NEED_SCRATCH)) {
			if (!full)
				return 0;
			n = -1; /* a head over the bound: not an answer we take */
		}
		if (n < 0) {
			v->r = HTTP_HC_FAIL_ACTIVE;
			return -EBADMSG;
		}
		buf += n;
		len -= (size_t)n;
		if (ev.type != ARN_H1_EV_HEAD)
			continue;
		if (m.status < 200)
			continue; /* 1xx: the final response follows */
		v->status = m.status;
		v->head_len = (uint32_t)(buf - start);
		if (m.flags & ARN_H1_F_NO_BODY ||
		    (m.flags & ARN_H1_F_CONTENT_LENGTH && m.content_length == 0))
			v->framing = HTTP_HC_BODY_NONE;
		else if (m.flags & ARN_H1_F_CHUNKED)
			v->framing = HTTP_HC_BODY_CHUNKED;
		else if (m.flags & ARN_H1_F_CONTENT_LENGTH)
			v->framing = HTTP_HC_BODY_LENGTH;
		v->content_length = m.content_length;
		/* Envoy's shouldCloseConnection: HTTP/1.0 without keep-alive,
		 * connection: close (the parser's KEEP_ALIVE says both), or
		 * proxy-connection: close */
		v->keep = (m.flags & ARN_H1_F_KEEP_ALIVE) &&
			  !arn_h1_msg_has_token(&m, ARN_H1_H_PROXY_CONNECTION, "close", 5);
		if (arn_h1_find(&m, "x-envoy-immediate-health-check-fail", 35, 0) >= 0)
			v->r = HTTP_HC_FAIL_IMMEDIATE;
		else
			v->r =
			    http_hc_status_ok(c, m.status) ? HTTP_HC_SUCCESS : HTTP_HC_FAIL_ACTIVE;
		return 1;
	}
}

static bool hc_name_is(const char *a, size_t al, const char *b)
{
	return al == strlen(b) && arn_h1_eq_nocase(a, al, b, al);
}

/* Is @p name among @p o's removals, or set by an OVERWRITE or ADD_IF_ABSENT
 * addition (which then replaces or keeps Envoy's own field)? */
static bool hc_default_dropped(const struct arn_cfg_header_ops *o, const char *name)
{
	for (size_t i = 0; i < o->n_req_remove; i++)
		if (hc_name_is(o->req_remove[i].name, o->req_remove[i].len, name))
			return true;
	for (size_t i = 0; i < o->n_req_add; i++)
		if (o->req_add[i].append == ARN_CFG_OVERWRITE_IF_EXISTS_OR_ADD &&
		    hc_name_is(o->req_add[i].key, o->req_add[i].key_len, name))
			return true;
	return false;
}

int http_hc_http_request(const struct arn_cfg_health_check *c, const char *path, const char *host,
			 char *out, size_t cap)
{
	/* Envoy's request: GET, the path, the host, user-agent Envoy/HC,
	 * then the check's own edits (Envoy's HeaderParser: removals first,
	 * then additions; OVERWRITE replaces a field, ADD_IF_ABSENT adds one
	 * only where none is, APPEND adds another). A connection not reused
	 * (the checker closes it after the head) says so. */
	static const struct arn_cfg_header_ops none;
	const struct arn_cfg_header_ops *o = c ? &c->headers : &none;
	bool h = !hc_default_dropped(o, "host"), ua = !hc_default_dropped(o, "user-agent");
	int n = snprintf(out, cap, "GET %s HTTP/1.1\r\n%s%s%s%s", path, h ? "host: " : "",
			 h ? host : "", h ? "\r\n" : "", ua ? "user-agent: Envoy/HC\r\n" : "");
	if (n < 0 || (size_t)n >= cap)
		return -ENOSPC;
	size_t k = (size_t)n;
	for (size_t i = 0; i < o->n_req_add; i++) {
		const struct arn_cfg_header_add *a = &o->req_add[i];
		if (a->value_len == 0 && !a->keep_empty_value)
			continue;
		if (a->append == ARN_CFG_ADD_IF_ABSENT) {
			/* present: Envoy's own field, or an earlier addition */
			bool present = (h && hc_name_is(a->key, a->key_len, "host")) ||
				       (ua && hc_name_is(a->key, a->key_len, "user-agent"));
			for (size_t j = 0; !present && j < i; j++)
				present = o->req_add[j].key_len == a->key_len &&
					  memcmp(o->req_add[j].key, a->key, a->key_len) == 0;
			if (present)
				continue;
		}
		int w = snprintf(out + k, cap - k, "%.*s: %.*s\r\n", (int)a->key_len, a->key,
				 (int)a->value_len, a->value);
		if (w < 0 || (size_t)w >= cap - k)
			return -ENOSPC;
		k += (size_t)w;
	}
	/* a connection the next check reuses says nothing: keep-alive is
	 * HTTP/1.1's default */
	int w = snprintf(out + k, cap - k, "%s\r\n",
			 c && c->reuse_connection ? "" : "connection: close\r\n");
	if (w < 0 || (size_t)w >= cap - k)
		return -ENOSPC;
	return (int)(k + (size_t)w);
}

/* where a chunked body's decoder is */
enum {
	HB_SIZE,    /* chunk-size digits */
	HB_EXT,	    /* chunk extensions, up to CR */
	HB_SIZE_LF, /* the chunk-size line's LF */
	HB_DATA,    /* the chunk's bytes */
	HB_DATA_CR, /* the CRLF after them */
	HB_DATA_LF,
	HB_TRAILER0, /* a trailer line's first byte, or the last CR */
	HB_TRAILER,  /* a trailer line, up to CR */
	HB_TRAILER_LF,
	HB_END_LF, /* the last LF */
};

void http_hc_body_init(struct http_hc_body *b, enum http_hc_framing framing,
		       uint64_t content_length)
{
	b->framing = (uint8_t)framing;
	b->st = HB_SIZE;
	b->digits = false;
	b->left = framing == HTTP_HC_BODY_LENGTH ? content_length : 0;
}

static int hex_digit(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	ch = (char)(ch | 0x20);
	return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

int http_hc_body_eat(struct http_hc_body *b, const char *p, size_t len, size_t *used)
{
	*used = 0;
	switch (b->framing) {
	case HTTP_HC_BODY_NONE:
		return 1;
	case HTTP_HC_BODY_CLOSE:
		*used = len;
		return 0;
	case HTTP_HC_BODY_LENGTH:
		*used = b->left < len ? (size_t)b->left : len;
		b->left -= *used;
		return b->left == 0;
	default:
		break;
	}
	/* chunked (RFC 9112 7.1), strictly: CRLF line ends, hex sizes that
	 * fit 60 bits; only the framing is read */
	size_t i = 0;
	while (i < len) {
		char ch = p[i];
		switch (b->st) {
		case HB_SIZE: {
			int d = hex_digit(ch);
			if (d >= 0) {
				if (b->left >> 56)
					return -EBADMSG;
				b->left = b->left << 4 | (uint64_t)d;
				b->digits = true;
			} else if (b->digits && (ch == ';' || ch == ' ' || ch == '\t')) {
				b->st = HB_EXT;
			} else if (b->digits && ch == '\r') {
				b->st = HB_SIZE_LF;
			} else {
				return -EBADMSG;
			}
			i++;
			break;
		}
		case HB_EXT:
			if (ch == '\r')
				b->st = HB_SIZE_LF;
			else if (ch == '\n')
				return -EBADMSG;
			i++;
			break;
		case HB_SIZE_LF:
			if (ch != '\n')
				return -EBADMSG;
			b->st = b->left ? HB_DATA : HB_TRAILER0;
			i++;
			break;
		case HB_DATA: {
			size_t n = b->left < len - i ? (size_t)b->left : len - i;
			b->left -= n;
			i += n;
			if (!b->left)
				b->st = HB_DATA_CR;
			break;
		}
		case HB_DATA_CR:
		case HB_TRAILER_LF:
		case HB_DATA_LF:
			if (ch != (b->st == HB_DATA_CR ? '\r' : '\n'))
				return -EBADMSG;
			b->st = b->st == HB_DATA_CR   ? HB_DATA_LF
				: b->st == HB_DATA_LF ? HB_SIZE
						      : HB_TRAILER0;
			b->digits = false;
			i++;
			break;
		case HB_TRAILER0:
			b->st = ch == '\r' ? HB_END_LF : HB_TRAILER;
			if (ch == '\n')
				return -EBADMSG;
			i++;
			break;
		case HB_TRAILER:
			if (ch == '\r')
				b->st = HB_TRAILER_LF;
			else if (ch == '\n')
				return -EBADMSG;
			i++;
			break;
		case HB_END_LF:
			if (ch != '\n')
				return -EBADMSG;
			*used = i + 1;
			return 1;
		default:
			return -EBADMSG;
		}
	}
	*used = len;
	return 0;
}

/* ---- worker 0 ----------------------------------------------------------------- */

struct hc_tab;

struct hc_target {
	bool running; /* a check is in flight: the timer is its timeout */
	bool tls_on;  /* the check's connection speaks TLS (tls is initialised) */
	uint8_t pp;   /* its PROXY header's version (upstream_proxy_protocol), 0: none */
	bool eof;     /* the check's peer sent its FIN */
	/* reuse_connection: the response's body is being consumed (its
	 * verdict, pend, waits for its end), and the connection must not
	 * carry another check (the cluster or the port changed under it) */
	bool in_body;
	bool drop;
	enum http_hc_result pend;
	struct http_hc_body body;
	uint32_t body_n; /* bytes of it consumed */
	uint64_t seen;
	struct http_host *host;		      /* a reference */
	const struct arn_cfg_cluster *cl;     /* pinned */
	const struct arn_cfg_health_check *c; /* cl->health_checks[0] */
	struct http_hc_sm sm;
	struct arn_tcp_conn *tc; /* the check's connection (its user is this target) */
	struct http_timer timer;
	uint32_t rx_len;
	struct hc_tab *hw;
	/* the endpoint's health_check_config, as of the last generation:
	 * the port checks go to (the host's when it sets none) and the Host
	 * they send over the check's own (empty: the check's, or the
	 * cluster's name) */
	uint16_t port;
	char hostname[256];
	/* the cluster's UpstreamTlsContext, when it has one: the check's
	 * connection is the cluster's transport socket, as Envoy's (SNI,
	 * validation, client certificate of the cluster's context). Must not
	 * move while on: a target is allocated on its own and never moves. */
	struct arn_tls_conn tls;
	char rx[HTTP_HC_RX_MAX]; /* last: its pages are touched only by checks */
};

/* The targets of worker 0: one allocation each (made and freed as the
 * generations add and remove checked hosts, never per check), found by
 * host through an index rebuilt per generation. The table grows as the
 * configuration's checked hosts do, up to HTTP_HC_MAX_TARGETS, and is
 * freed with its last target once no cluster has checks. */
struct hc_tab {
	struct http_worker *w;
	struct hc_target **t; /* n of cap */
	uint32_t n, cap;
	uint32_t *idx; /* 2 x cap slots, by host pointer: index in t + 1 */
	uint64_t mark;
	bool full_logged;
};

/* What worker 0 holds while no cluster has checks: a few words. */
struct http_hc_worker {
	struct http_worker *w;
	struct hc_tab *tab; /* NULL until a generation has checks */
	bool nomem_logged;
	/* the snapshot (http_rt_snap_sync) the targets follow: a snapshot
	 * built after its generation was published (the first, static
	 * resources) is found by this timer, not by a generation change */
	uint64_t snap;
	struct http_timer tick;
};

static struct arn_stats_scope *t_stats(const struct hc_target *t)
{
	return t->host->crt ? t->host->crt->stats : NULL;
}

static void t_inc(struct hc_target *t, unsigned stat)
{
	struct arn_stats_scope *sc = t_stats(t);
	if (sc)
		arn_stats_inc(sc, t->hw->w->slot, stat);
}

static void t_healthy_add(struct hc_target *t, int64_t d)
{
	struct arn_stats_scope *sc = t_stats(t);
	if (sc)
		arn_stats_gauge_add(sc, t->hw->w->slot, ARN_CL_health_check_healthy, d);
}

static void host_flag(struct http_host *h, bool failed)
{
	uint8_t f0 = __atomic_load_n(&h->hc_flags, __ATOMIC_RELAXED);
	uint8_t f = failed ? (uint8_t)(f0 | HTTP_HOST_FAILED_ACTIVE_HC)
			   : (uint8_t)(f0 & ~HTTP_HOST_FAILED_ACTIVE_HC);
	__atomic_store_n(&h->hc_flags, f, __ATOMIC_RELAXED);
	/* the balancers' cached candidates follow (http_lb_cache) */
	if (f != f0 && h->crt)
		__atomic_fetch_add(&h->crt->health_epoch, 1, __ATOMIC_RELEASE);
}

/* Let go of the check's connection (in a check, or idle between two): no
 * callback reaches the target any more (on_close still comes, for no
 * one). @p clean: all was read, close with a FIN; else reset. */
static void t_detach(struct hc_target *t, bool clean)
{
	struct arn_tcp_conn *tc = t->tc;
	if (t->tls_on) {
		/* close_notify before the FIN after a completed check, as
		 * Envoy's transport socket closes (the record goes straight
		 * into TCP's send buffer; a full buffer just skips it): a
		 * server then sees an orderly close, not a truncation. The SSL
		 * object goes now: the target starts a new one per connection. */
		if (clean && arn_tls_is_open(&t->tls))
			(void)arn_tls_shutdown(&t->tls);
		arn_tls_conn_free(&t->tls);
		t->tls_on = false;
	}
	if (!tc)
		return;
	t->tc = NULL;
	arn_tcp_set_user(tc, NULL);
	uint32_t left = arn_tcp_rx_pending(tc);
	if (left)
		arn_tcp_rx_consume(tc, left);
	if (clean)
		arn_tcp_close(tc);
	else
		arn_tcp_abort(tc);
}

static void t_idle_in(struct hc_target *t);

/* The check's result @p r; @p keep: its connection may carry the next
 * check (reuse_connection, Envoy's rules: see the callers), else it is
 * closed now. */
static void t_conclude(struct hc_target *t, enum http_hc_result r, bool keep)
{
	if (!t->running)
		return;
	t->running = false;
	t->in_body = false;
	if (keep && t->tc && !t->drop && !t->eof && t->c->reuse_connection)
		t_idle_in(t); /* what came after the answer, if anything, closes it */
	else
		t_detach(t, r == HTTP_HC_SUCCESS);
	if (r == HTTP_HC_SUCCESS) {
		t_inc(t, ARN_CL_health_check_success);
	} else {
		t_inc(t, ARN_CL_health_check_failure);
		if (r == HTTP_HC_FAIL_NETWORK || r == HTTP_HC_FAIL_TIMEOUT)
			t_inc(t, ARN_CL_health_check_network_failure);
	}
	bool was = t->sm.failed;
	if (http_hc_sm_apply(t->c, &t->sm, r)) {
		host_flag(t->host, t->sm.failed);
		t_healthy_add(t, was ? 1 : -1);
	}
	struct arn_stats_scope *sc = t_stats(t);
	bool traffic = !sc || arn_stats_counter_value(sc, ARN_CL_upstream_cx_total) > 0;
	http_timer_arm(t->hw->w, &t->timer,
		       http_hc_next_ms(t->c, &t->sm, traffic, http_rand(t->hw->w)));
}

static void hc_connected(struct arn_tcp_conn *c, int status);
static void hc_data(struct arn_tcp_conn *c, struct rte_mbuf *head, uint32_t len);
static void hc_eof(struct arn_tcp_conn *c);
static void hc_writable(struct arn_tcp_conn *c);
static void hc_close(struct arn_tcp_conn *c, int reason);

static const struct arn_tcp_ops hc_ops = {
    .on_connected = hc_connected,
    .on_data = hc_data,
    .on_eof = hc_eof,
    .on_writable = hc_writable,
    .on_close = hc_close,
};

/* ---- TLS: lib/tls's view of the check's TCP connection ---------------------- */

static void t_tls_step(struct hc_target *t);

static int hc_io_read(void *arg, void *buf, uint32_t len)
{
	struct hc_target *t = arg;
	return t->tc ? (int)arn_tcp_read(t->tc, buf, len) : 0;
}

static int hc_io_write(void *arg, const void *buf, uint32_t len)
{
	struct hc_target *t = arg;
	return t->tc ? arn_tcp_write(t->tc, buf, len) : -ENOTCONN;
}

static uint32_t hc_io_space(void *arg)
{
	struct hc_target *t = arg;
	return t->tc ? arn_tcp_sndbuf_space(t->tc) : 0;
}

/* a handshake the worker's budget deferred may go on (arn_tls_conn_free
 * takes a concluded check's connection off the queue) */
static void hc_io_resume(void *arg)
{
	struct hc_target *t = arg;
	if (t->running && t->tls_on)
		t_tls_step(t);
}

static const struct arn_tls_io hc_tls_io = {
    .read = hc_io_read,
    .write = hc_io_write,
    .space = hc_io_space,
    .resume = hc_io_resume,
};

/* cluster.<name>.ssl.* of worker 0, as the cluster's own connections count
 * (the worker's block until the control lcore made the cluster's) */
static struct arn_tls_stats *t_ssl(const struct hc_target *t)
{
	const struct http_cluster_rt *crt = t->host->crt;
	struct http_worker *w = t->hw->w;
	return crt && crt->ssl && w->idx < ARN_STATS_MAX_WORKERS ? &crt->ssl[w->idx]
								 : &w->tls_stats;
}

static void t_send(struct hc_target *t);

static void t_start(struct hc_target *t)
{
	struct http_worker *w = t->hw->w;
	t->running = true;
	t->rx_len = 0;
	t->in_body = false;
	t_inc(t, ARN_CL_health_check_attempt);
	/* the timeout covers the connect, the TLS handshake and the answer
	 * (its body included), as Envoy's */
	http_timer_arm(w, &t->timer, t->c->timeout_ms ? t->c->timeout_ms : 1);
	/* the previous check's connection, open and idle: this one goes on
	 * it (reuse_connection; over TLS, its session) */
	if (t->tc) {
		t_send(t);
		return;
	}
	t->eof = false;
	t->drop = false;
	/* a cluster with an UpstreamTlsContext is checked over TLS with its
	 * context (Envoy's default transport socket for checks); one whose
	 * context could not be built (logged by the control lcore) cannot be
	 * reached: a network failure, as its connections' connect failures */
	struct arn_tls_ctx *tctx = NULL;
	/* with transport_socket_matches, the host's entry (Envoy checks a
	 * host with its own transport socket; transport_socket_match_criteria
	 * is refused by the conversion) */
	const struct arn_cfg_ts_match *m =
	    http_rt_host_tsm(t->cl, t->host->crt, NULL, t->host, t->host->addr, t->host->port);
	t->pp = m ? m->pp_version : t->cl->upstream_pp;
	if (m ? m->tls != NULL : t->cl->upstream_tls != NULL) {
		tctx = m ? http_rt_tsm_tls(m, t->host->crt)
			 : http_rt_upstream_tls(t->cl, t->host->crt);
		if (!tctx) {
			t_conclude(t, HTTP_HC_FAIL_NETWORK, false);
			return;
		}
	}
	uint32_t laddr = arn_net_route_src(w->lc, t->host->addr);
	int err = -EHOSTUNREACH;
	struct arn_tcp_conn *tc = laddr ? arn_tcp_connect(w->lc, laddr, t->host->addr, t->port,
							  &hc_ops, t, ARN_TCP_CC_DEFAULT, &err)
					: NULL;
	if (!tc) {
		t_conclude(t, HTTP_HC_FAIL_NETWORK, false);
		return;
	}
	t->tc = tc;
	if (tctx) {
		/* no session slot: each connection makes a full handshake, so
		 * that every new connection validates the host's certificate
		 * (a reused one keeps its session, as Envoy's) */
		struct arn_tls_conn_opts o = {0};
		if (arn_tls_conn_init(&t->tls, &w->tls, tctx, t_ssl(t), &hc_tls_io, t, &o) < 0) {
			t_conclude(t, HTTP_HC_FAIL_NETWORK, false);
			return;
		}
		t->tls_on = true;
	}
}

static void t_timer(struct http_timer *tm)
{
	struct hc_target *t =
	    (struct hc_target *)(void *)((char *)tm - offsetof(struct hc_target, timer));
	if (t->running)
		t_conclude(t, HTTP_HC_FAIL_TIMEOUT, false); /* Envoy closes it too */
	else
		t_start(t);
}

/* Send @p len bytes of the check, all of them (over TLS once open).
 * @return false if they did not all go. */
static bool t_write(struct hc_target *t, const void *buf, uint32_t len)
{
	if (t->tls_on)
		return arn_tls_write(&t->tls, buf, len) == (ssize_t)len;
	return arn_tcp_write(t->tc, buf, len) == (int)len;
}

/* The Host an HTTP check sends, as Envoy: the endpoint's
 * health_check_config.hostname, else the check's host, else the
 * cluster's name. */
static const char *t_host(const struct hc_target *t)
{
	return t->hostname[0] ? t->hostname : t->c->host ? t->c->host : t->cl->obj.name;
}

/* The connection is open (TCP's, or TLS's handshake done): the request. */
static void t_send(struct hc_target *t)
{
	const struct arn_cfg_health_check *h = t->c;
	if (h->kind == ARN_CFG_HC_HTTP) {
		char req[ARN_CFG_HC_REQUEST_MAX];
		int n =
		    http_hc_http_request(h, h->path ? h->path : "/", t_host(t), req, sizeof(req));
		/* a configuration's path and host too long for the buffer:
		 * a check that cannot be sent fails */
		if (n < 0 || !t_write(t, req, (uint32_t)n))
			t_conclude(t, HTTP_HC_FAIL_NETWORK, false);
		return;
	}
	if (h->send_len && !t_write(t, h->send, (uint32_t)h->send_len)) {
		t_conclude(t, HTTP_HC_FAIL_NETWORK, false);
		return;
	}
	/* nothing to receive: a connect-only check (Envoy's TCP check with
	 * no receive blocks) passes here (over TLS: once the handshake, and
	 * so the certificate's validation, passed) and closes its connection
	 * whatever reuse_connection says, as Envoy's */
	if (h->n_receive == 0)
		t_conclude(t, HTTP_HC_SUCCESS, false);
}

static void hc_connected(struct arn_tcp_conn *c, int status)
{
	struct hc_target *t = arn_tcp_user(c);
	if (!t)
		return;
	if (status != 0) {
		t_conclude(t, HTTP_HC_FAIL_NETWORK, false);
		return;
	}
	/* a check has no downstream: the PROXY header Envoy's socket writes
	 * then (v2 LOCAL; v1 the connection's own addresses), first */
	if (t->pp && !http_upp_send(c, t->pp, NULL)) {
		t_conclude(t, HTTP_HC_FAIL_NETWORK, false);
		return;
	}
	if (t->tls_on)
		t_tls_step(t); /* the ClientHello goes out */
	else
		t_send(t);
}

int http_hc_judge_v(const struct arn_cfg_health_check *c, const char *rx, size_t was, size_t len,
		    struct http_hc_verdict *v)
{
	bool full = len >= HTTP_HC_RX_MAX;
	if (c->kind == ARN_CFG_HC_HTTP) {
		/* the head is parsed again from its first byte: only when a
		 * line ended, so that a peer dribbling a byte a segment costs
		 * a parse per line, not per byte */
		if (!full && !memchr(rx + was, '\n', len - was))
			return 0;
		return http_hc_http_verdict(c, rx, len, v) != 0;
	}
	memset(v, 0, sizeof(*v));
	if (full)
		len = HTTP_HC_RX_MAX;
	if (http_hc_tcp_match(c, (const uint8_t *)rx, len)) {
		v->r = HTTP_HC_SUCCESS;
		return 1;
	}
	if (!full)
		return 0;
	v->r = HTTP_HC_FAIL_ACTIVE;
	return 1;
}

int http_hc_judge(const struct arn_cfg_health_check *c, const char *rx, size_t was, size_t len,
		  enum http_hc_result *r)
{
	struct http_hc_verdict v;
	if (!http_hc_judge_v(c, rx, was, len, &v))
		return 0;
	*r = v.r;
	return 1;
}

/* @p n more bytes @p p of the body of a response whose connection is
 * kept: its verdict once it ended there, and the connection with it
 * unless more came after it; a chunked coding that is not one is a
 * network failure (Envoy's codec resets the stream); past
 * HTTP_HC_BODY_MAX, the connection is closed and the head's verdict
 * stands. The target's buffer is free again after. */
static void t_body(struct hc_target *t, const char *p, uint32_t n)
{
	size_t used;
	int rc = http_hc_body_eat(&t->body, p, n, &used);
	t->rx_len = 0;
	t->body_n += (uint32_t)used;
	if (rc < 0) {
		t_conclude(t, HTTP_HC_FAIL_NETWORK, false);
	} else if (rc == 1) {
		t_conclude(t, t->pend, used == n);
	} else if (t->body_n > HTTP_HC_BODY_MAX) {
		t_inc(t, ARN_CL_health_check_body_over_limit);
		t_conclude(t, t->pend, false);
	}
}

/* The bytes read so far (@p was of them seen before): a verdict, if they
 * give one. */
static void t_judge(struct hc_target *t, uint32_t was)
{
	if (t->in_body) {
		t_body(t, t->rx, t->rx_len);
		return;
	}
	struct http_hc_verdict v;
	if (!http_hc_judge_v(t->c, t->rx, was, t->rx_len, &v))
		return;
	if (t->c->kind != ARN_CFG_HC_HTTP || !t->c->reuse_connection) {
		/* TCP: a match keeps it (Envoy's); receive blocks that did
		 * not come within the bound leave the stream where no next
		 * check can read it */
		t_conclude(t, v.r, v.r == HTTP_HC_SUCCESS);
		return;
	}
	/* not an HTTP response, connection: close (or HTTP/1.0), a body that
	 * ends only with the connection: the verdict now, the connection
	 * closed */
	if (!v.head_len || !v.keep || v.framing == HTTP_HC_BODY_CLOSE) {
		t_conclude(t, v.r, false);
		return;
	}
	t->in_body = true;
	t->pend = v.r;
	t->body_n = 0;
	http_hc_body_init(&t->body, (enum http_hc_framing)v.framing, v.content_length);
	t_body(t, t->rx + v.head_len, t->rx_len - v.head_len);
}

/* The connection between two checks: the upstream sent nothing asked for
 * (TLS records without data, as a session ticket, are read and dropped);
 * data or its end closes it, and the next check opens a new one. */
static void t_idle_in(struct hc_target *t)
{
	if (t->tls_on) {
		ssize_t n = arn_tls_read(&t->tls, t->rx, HTTP_HC_RX_MAX);
		if (n == -EAGAIN && arn_tls_want_write(&t->tls) && t->tc)
			arn_tcp_want_writable(t->tc);
		if ((n == -EAGAIN || n == -EBUSY) && !t->eof)
			return;
		t_detach(t, n == 0);
		return;
	}
	if (t->eof || (t->tc && arn_tcp_rx_pending(t->tc)))
		t_detach(t, false);
}

/*
 * The TLS connection as far as its input allows: the handshake, then the
 * request, then the plaintext of the answer, decrypted straight into the
 * target's bounded buffer (no http_in: a check holds no more than
 * HTTP_HC_RX_MAX bytes, and what is not decrypted stays in TCP). A
 * handshake that fails (a certificate that does not validate, an alert)
 * or a connection that ends before a verdict is a network failure, as
 * Envoy counts them.
 */
static void t_tls_step(struct hc_target *t)
{
	if (!arn_tls_is_open(&t->tls)) {
		int rc = arn_tls_handshake(&t->tls);
		if (rc == -EAGAIN && arn_tls_want_write(&t->tls) && t->tc)
			arn_tcp_want_writable(t->tc);
		if ((rc == -EAGAIN || rc == -EBUSY) && !t->eof)
			return;
		if (rc != 0) {
			char why[256];
			if (arn_tls_failure_reason(&t->tls, why, sizeof(why)) == 0)
				snprintf(why, sizeof(why), "%s",
					 t->eof ? "connection closed" : "failed");
			ARN_DEBUG(HTTP, "cluster %s: health check: TLS handshake: %s",
				  t->cl->obj.name, why);
			t_conclude(t, HTTP_HC_FAIL_NETWORK, false);
			return;
		}
		t_send(t);
	}
	while (t->running && t->rx_len < HTTP_HC_RX_MAX) {
		uint32_t was = t->rx_len;
		ssize_t n = arn_tls_read(&t->tls, t->rx + was, HTTP_HC_RX_MAX - was);
		if (n > 0) {
			t->rx_len += (uint32_t)n;
			t_judge(t, was);
			continue;
		}
		if (n == -EAGAIN && arn_tls_want_write(&t->tls) && t->tc)
			arn_tcp_want_writable(t->tc);
		if ((n == -EAGAIN || n == -EBUSY) && !t->eof)
			return;
		/* close_notify, the FIN, or a failed record before a verdict */
		t_conclude(t, HTTP_HC_FAIL_NETWORK, false);
	}
}

static void hc_data(struct arn_tcp_conn *c, struct rte_mbuf *head, uint32_t len)
{
	(void)head;
	(void)len;
	struct hc_target *t = arn_tcp_user(c);
	if (!t)
		return;
	if (!t->running) {
		t_idle_in(t);
		return;
	}
	if (t->tls_on) {
		t_tls_step(t);
		return;
	}
	/* copied out (bounded): the check keeps no mbuf of a hostile peer;
	 * a body being consumed frees the buffer after each read */
	do {
		uint32_t room = HTTP_HC_RX_MAX - t->rx_len, was = t->rx_len;
		uint32_t n = arn_tcp_read(c, t->rx + t->rx_len, room);
		t->rx_len += n;
		t_judge(t, was);
		if (!n)
			break;
	} while (t->running && t->in_body && arn_tcp_rx_pending(c));
}

static void hc_eof(struct arn_tcp_conn *c)
{
	struct hc_target *t = arn_tcp_user(c);
	if (!t)
		return;
	t->eof = true;
	if (!t->running) {
		/* between two checks: the next opens a new connection */
		if (t->tls_on)
			arn_tls_set_eof(&t->tls);
		t_idle_in(t);
		return;
	}
	if (t->tls_on) {
		/* the records before the FIN first */
		arn_tls_set_eof(&t->tls);
		t_tls_step(t);
	}
	/* closed before a verdict */
	t_conclude(t, HTTP_HC_FAIL_NETWORK, false);
}

/* TLS only: a handshake flight that waited for send buffer room */
static void hc_writable(struct arn_tcp_conn *c)
{
	struct hc_target *t = arn_tcp_user(c);
	if (!t || !t->tls_on)
		return;
	if (arn_tls_flush(&t->tls) == -EAGAIN && arn_tls_want_write(&t->tls))
		arn_tcp_want_writable(c);
	if (!arn_tls_is_open(&t->tls))
		t_tls_step(t);
}

static void hc_close(struct arn_tcp_conn *c, int reason)
{
	(void)reason;
	struct hc_target *t = arn_tcp_user(c);
	if (!t)
		return;
	t->tc = NULL; /* gone: nothing to close */
	if (!t->running)
		t_detach(t, false); /* idle: its TLS goes too */
	t_conclude(t, HTTP_HC_FAIL_NETWORK, false);
}

/* Stop @p t's checks, drop what it holds and free it. */
static void t_stop(struct hc_target *t)
{
	t->running = false;
	t_detach(t, false);
	http_timer_cancel(&t->timer);
	if (!t->sm.failed)
		t_healthy_add(t, -1);
	/* nobody keeps the flag up to date any more: the host counts as
	 * healthy for active checks (its cluster, if it still has them,
	 * gives it a new target at once) */
	host_flag(t->host, false);
	http_host_put(t->host);
	arn_cfg_unpin(t->cl);
	free(t);
}

static uint32_t idx_slot(const struct hc_tab *hw, const void *p)
{
	uint64_t k = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull;
	return (uint32_t)(k >> 32) & (2 * hw->cap - 1);
}

static struct hc_target *idx_find(struct hc_tab *hw, const struct http_host *h)
{
	uint32_t mask = 2 * hw->cap - 1;
	for (uint32_t i = idx_slot(hw, h), k = 0; hw->cap && k <= mask; i = (i + 1) & mask, k++) {
		uint32_t v = hw->idx[i];
		if (!v)
			return NULL;
		if (hw->t[v - 1]->host == h)
			return hw->t[v - 1];
	}
	return NULL;
}

static void idx_add(struct hc_tab *hw, uint32_t ti)
{
	uint32_t mask = 2 * hw->cap - 1;
	for (uint32_t i = idx_slot(hw, hw->t[ti]->host);; i = (i + 1) & mask)
		if (!hw->idx[i]) {
			hw->idx[i] = ti + 1;
			return;
		}
}

/* The index of the n targets, again (at most half full: 2 x cap slots). */
static void idx_rebuild(struct hc_tab *hw)
{
	if (!hw->cap)
		return;
	memset(hw->idx, 0, 2 * (size_t)hw->cap * sizeof(*hw->idx));
	for (uint32_t i = 0; i < hw->n; i++)
		idx_add(hw, i);
}

/* Room for one more target: the table doubles (from 64) up to
 * HTTP_HC_MAX_TARGETS. @return false at the limit or out of memory. */
static bool tab_room(struct hc_tab *hw)
{
	if (hw->n < hw->cap)
		return true;
	if (hw->cap >= HTTP_HC_MAX_TARGETS)
		return false;
	uint32_t cap = hw->cap ? 2 * hw->cap : 64;
	if (cap > HTTP_HC_MAX_TARGETS)
		cap = HTTP_HC_MAX_TARGETS;
	struct hc_target **t = realloc(hw->t, cap * sizeof(*t));
	if (!t)
		return false;
	hw->t = t;
	uint32_t *idx = calloc(2 * (size_t)cap, sizeof(*idx));
	if (!idx)
		return false;
	free(hw->idx);
	hw->idx = idx;
	hw->cap = cap;
	idx_rebuild(hw);
	return true;
}

struct gen_walk {
	struct hc_tab *hw;
	const struct arn_cfg_gen *g;
};

/* The endpoint's health_check_config into @p t (port, Host). */
static void t_endpoint(struct hc_target *t, const struct arn_cfg_endpoint *ep)
{
	t->port = ep->hc_port ? ep->hc_port : ep->port;
	size_t n = ep->hc_hostname ? strlen(ep->hc_hostname) : 0;
	if (n >= sizeof(t->hostname))
		n = 0; /* longer than a DNS name: the check's own Host */
	memcpy(t->hostname, ep->hc_hostname ? ep->hc_hostname : "", n);
	t->hostname[n] = '\0';
}

static void add_host(struct hc_tab *hw, const struct arn_cfg_cluster *cl, struct http_host *h,
		     const struct arn_cfg_endpoint *ep)
{
	struct hc_target *t = idx_find(hw, h);
	if (t) {
		t->seen = hw->mark;
		uint16_t port = t->port;
		t_endpoint(t, ep);
		/* a kept connection is to the old port, with the old cluster's
		 * TLS context and settings: the next check opens a new one */
		if (t->cl != cl || t->port != port) {
			t->drop = true;
			if (!t->running)
				t_detach(t, true);
		}
		if (t->cl != cl) { /* a new version of the cluster: its settings */
			arn_cfg_pin(cl);
			arn_cfg_unpin(t->cl);
			t->cl = cl;
			t->c = &cl->health_checks[0];
		}
		return;
	}
	t = tab_room(hw) ? malloc(sizeof(*t)) : NULL;
	if (!t) {
		/* not checked: not held failed either; counted per host and
		 * configuration change */
		host_flag(h, false);
		if (h->crt && h->crt->stats)
			arn_stats_inc(h->crt->stats, hw->w->slot, ARN_CL_health_check_unchecked);
		if (!hw->full_logged)
			ARN_WARN(HTTP,
				 "cluster %s: %s; hosts beyond %u with active health checks "
				 "are not checked",
				 cl->obj.name, hw->n < HTTP_HC_MAX_TARGETS ? "no memory" : "limit",
				 hw->n);
		hw->full_logged = true;
		return;
	}
	/* the receive buffer is left untouched until a check reads into it */
	memset(t, 0, offsetof(struct hc_target, rx));
	uint32_t ti = hw->n++;
	hw->t[ti] = t;
	t->seen = hw->mark;
	t->hw = hw;
	t_endpoint(t, ep);
	http_host_ref(h); /* the snapshot that handed it out holds its own */
	t->host = h;
	arn_cfg_pin(cl);
	t->cl = cl;
	t->c = &cl->health_checks[0];
	t->timer.fn = t_timer;
	/* a host this cluster gained starts failed (the control lcore set
	 * it so when it created the host); one it had before the checks
	 * were configured keeps its health until its first check */
	bool failed = __atomic_load_n(&h->hc_flags, __ATOMIC_RELAXED) & HTTP_HOST_FAILED_ACTIVE_HC;
	http_hc_sm_init(&t->sm, failed);
	idx_add(hw, ti);
	if (!failed)
		t_healthy_add(t, 1);
	/* the first check at once, or within initial_jitter, as Envoy */
	http_timer_arm(hw->w, &t->timer, http_hc_first_ms(t->c, http_rand(hw->w)));
}

static void gen_cluster(void *ctx, const struct arn_cfg_cluster *cl)
{
	struct gen_walk *gw = ctx;
	if (!cl->n_health_checks || !cl->health_checks)
		return;
	struct http_cluster_rt *crt = http_rt_cluster(cl->obj.name, cl->obj.name_len, cl->obj.hash);
	if (!crt)
		return;
	struct arn_cfg_cluster_view v = {cl, cl->static_endpoints};
	struct arn_cfg_ref ref = {cl->obj.name, cl->obj.name_len, cl->obj.hash};
	if (!v.endpoints && arn_cfg_cluster_resolve(gw->g, &ref, &v) != 0)
		return;
	/* the snapshot's hosts of the cluster, looked up once */
	size_t n_hosts;
	struct http_host *const *hosts = http_rt_hosts(crt, &n_hosts);
	for (size_t p = 0; v.endpoints && p < v.endpoints->n_priorities; p++) {
		const struct arn_cfg_priority *pr = &v.endpoints->priorities[p];
		for (size_t l = 0; l < pr->n_localities; l++)
			for (size_t i = 0; i < pr->localities[l].n_endpoints; i++) {
				const struct arn_cfg_endpoint *ep = &pr->localities[l].endpoints[i];
				struct http_host *h =
				    http_hosts_find(hosts, n_hosts, ep->addr, ep->port);
				if (h)
					add_host(gw->hw, cl, h, ep);
			}
	}
}

#define HC_TICK_MS 100

static void reconcile(struct http_hc_worker *hc, const struct arn_cfg_gen *g);

static void hc_tick(struct http_timer *tm)
{
	struct http_hc_worker *hw =
	    (struct http_hc_worker *)(void *)((char *)tm - offsetof(struct http_hc_worker, tick));
	struct http_worker *w = hw->w;
	if (w->gen_slot && http_rt_snap_sync() != hw->snap)
		reconcile(hw, arn_config_gen_at(w->gen_slot));
	http_od_tick(w); /* outlier detection's interval rides this tick */
	http_timer_arm(w, &hw->tick, HC_TICK_MS);
}

int http_hc_worker_init(struct http_worker *w)
{
	w->hc = NULL;
	if (w->idx != 0)
		return 0;
	/* the targets' table waits for a cluster with checks (reconcile) */
	struct http_hc_worker *hw = calloc(1, sizeof(*hw));
	if (!hw)
		return -ENOMEM;
	hw->w = w;
	w->hc = hw;
	hw->tick.fn = hc_tick;
	http_timer_arm(w, &hw->tick, HC_TICK_MS);
	return 0;
}

void http_hc_gen(struct http_worker *w, const struct arn_cfg_gen *g)
{
	if (w->hc)
		reconcile(w->hc, g);
}

/* The targets' table, allocated on first need: worker 0 of a configuration
 * without health checks holds none of it, and lets go of it when no
 * cluster has checks any more. Between generations, not per request. NULL
 * when out of memory (logged once): the hosts are not checked and count as
 * healthy for active checks, as beyond HTTP_HC_MAX_TARGETS; the next
 * generation or snapshot tries again. */
static struct hc_tab *tab_get(struct http_hc_worker *hc)
{
	if (hc->tab)
		return hc->tab;
	struct hc_tab *tab = calloc(1, sizeof(*tab));
	if (!tab) {
		if (!hc->nomem_logged)
			ARN_WARN(HTTP, "active health checks: no memory for their table; "
				       "hosts are not checked");
		hc->nomem_logged = true;
		return NULL;
	}
	tab->w = hc->w;
	hc->tab = tab;
	return tab;
}

/* Stop every target and free the table. */
static void tab_free(struct http_hc_worker *hc)
{
	struct hc_tab *hw = hc->tab;
	if (!hw)
		return;
	for (uint32_t i = 0; i < hw->n; i++)
		t_stop(hw->t[i]);
	free(hw->t);
	free(hw->idx);
	free(hw);
	hc->tab = NULL;
}

static void reconcile(struct http_hc_worker *hc, const struct arn_cfg_gen *g)
{
	/* read first: a snapshot published during the walk is seen next tick */
	hc->snap = http_rt_snap_sync();
	if (!g)
		return;
	/* no cluster to check: no walk of the clusters, and no table */
	if (http_rt_hc_clusters() == 0) {
		tab_free(hc);
		return;
	}
	struct hc_tab *hw = tab_get(hc);
	if (!hw)
		return;
	hw->mark++;
	idx_rebuild(hw);
	struct gen_walk gw = {hw, g};
	arn_cfg_cluster_foreach(g, gen_cluster, &gw);
	/* the targets this generation did not see go; the others close up */
	uint32_t k = 0;
	for (uint32_t i = 0; i < hw->n; i++) {
		struct hc_target *t = hw->t[i];
		if (t->seen != hw->mark)
			t_stop(t);
		else
			hw->t[k++] = t;
	}
	hw->n = k;
}

void http_hc_worker_fini(struct http_worker *w)
{
	struct http_hc_worker *hc = w->hc;
	if (!hc)
		return;
	tab_free(hc);
	http_timer_cancel(&hc->tick);
	free(hc);
	w->hc = NULL;
}

int http_hc_target_peer(const struct http_worker *w, const struct http_host *h, uint16_t *port,
			const char **host)
{
	struct hc_target *t = w->hc && w->hc->tab ? idx_find(w->hc->tab, h) : NULL;
	if (!t)
		return -ENOENT;
	*port = t->port;
	*host = t_host(t);
	return 0;
}

size_t http_hc_targets(const struct http_worker *w)
{
	return w->hc && w->hc->tab ? w->hc->tab->n : 0;
}

size_t http_hc_mem(const struct http_worker *w)
{
	if (!w->hc)
		return 0;
	const struct hc_tab *hw = w->hc->tab;
	size_t n = sizeof(*w->hc);
	if (hw)
		n += sizeof(*hw) + hw->cap * (sizeof(*hw->t) + 2 * sizeof(*hw->idx)) +
		     hw->n * sizeof(struct hc_target);
	return n;
}
