/*
 * The connection manager (lib/http/http_hcm.c, http_worker.c,
 * http_upstream.c) driven on the test thread, issue 12's items 3 and 5:
 * slow request heads against the per-worker request buffers, the fairness
 * of the wait for one, and rewrites and header edits that do not fit.
 *
 * Below the proxy, lib/tcp and lib/net are fakes: a connection is a
 * receive queue of mbufs the test fills (a client's or an upstream's
 * bytes), a transmit buffer the test reads, and callbacks the test calls
 * (accept, data, end of input, connected), with on_close delivered from the
 * poll as lib/tcp does. The configuration store, the statistics and the
 * codec are the real ones; the clock is the test's. Nothing is timed:
 * timers fire as the test moves the clock.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <openssl/evp.h>
#include <openssl/x509.h>
#include <nghttp2/nghttp2.h>
#include <rte_eal.h>
#include <rte_mbuf.h>

#include "upb/reflection.h"

#include "arn_access_log.h"
#include "arn_config.h"
#include "arn_http.h"
#include "arn_proto.h"
#include "arn_stats.h"
#include "arn_stats_snapshot.h"
#include "arn_tcp.h"
#include "http_codec_h1.h"
#include "http_conn_blk.h"
#include "http_filter.h"
#include "http_grpc_stats.h"
#include "http_h2.h"
#include "http_mcp.h"
#include "http_od.h"
#include "http_mcp_tools.h"
#include "http_subreq.h"
#include "http_int.h"
#include "http_stream.h"
#include "http_tls.h"
#include "http_worker.h"
#include "tcert.h"

/* ---- fake lib/net ------------------------------------------------------------------------- */

struct arn_lcore {
	void *l4;     /* first, as arn_l4.h wants: the module's state slots */
	uint64_t now; /* second: arn_net_now() reads it; clock_set() writes it */
	unsigned idx;
};
_Static_assert(offsetof(struct arn_lcore, now) == offsetof(struct arn_lcore_head, now),
	       "arn_l4.h's layout contract");

/* The clock (TSC in microseconds), the same on both workers: each lcore
 * carries it where arn_net_now() reads it, as lib/net's do. Read it as
 * now_us (not assignable, so that nothing moves one worker's clock alone),
 * move it with clock_set(). */
static struct arn_lcore lc0 = {.now = 1000000}, lc1 = {.now = 1000000, .idx = 1};
#define now_us ((uint64_t)lc0.now)

static void clock_set(uint64_t us)
{
	lc0.now = us;
	lc1.now = us;
}

static struct rte_mempool *pool;
/* start2(): a second worker (lc1) beside lc0, as RSS spreads clients
 * over two (the MCP gateway's sessions live on one of them) */
static bool two_workers;

uint64_t arn_net_hz(void)
{
	return 1000000;
}

unsigned arn_net_worker_index(const struct arn_lcore *lc)
{
	return lc->idx;
}

/* The worker's next alloc_fail allocations find the pool empty (the
 * peers' bytes the tests send come from the pool directly, not here). */
static unsigned alloc_fail;

struct rte_mbuf *arn_net_alloc(struct arn_lcore *lc)
{
	(void)lc;
	if (alloc_fail) {
		alloc_fail--;
		return NULL;
	}
	return rte_pktmbuf_alloc(pool);
}

/* One worker (lc0) whose control ring runs what is posted at once, and
 * the next hops it was asked to resolve ahead of traffic. */
struct arn_net;
typedef void (*arn_net_ctrl_fn)(struct arn_lcore *lc, void *arg); /* as arn_net.h */
static int fake_net;
static uint32_t resolved[64];
static unsigned n_resolved;

struct arn_net *arn_net_current(void)
{
	return (struct arn_net *)&fake_net;
}

unsigned arn_net_n_workers(const struct arn_net *net)
{
	(void)net;
	return 1;
}

int arn_net_post(unsigned worker, arn_net_ctrl_fn fn, void *arg)
{
	assert_int_equal(worker, 0);
	fn(&lc0, arg);
	return 0;
}

uint64_t arn_net_nexthop_since(const struct arn_lcore *lc, uint32_t dst)
{
	(void)lc;
	(void)dst;
	return 0;
}

uint32_t arn_net_route_src(const struct arn_lcore *lc, uint32_t dst)
{
	(void)lc;
	(void)dst;
	return 0; /* active health checks: no route in this harness */
}

void arn_net_resolve(struct arn_lcore *lc, uint32_t dst)
{
	assert_true(lc == &lc0 || (two_workers && lc == &lc1));
	if (n_resolved < 64)
		resolved[n_resolved++] = dst;
}

/* ---- fake lib/tcp ------------------------------------------------------------------------- */

#define CONNS 512

struct arn_tcp_conn {
	/* first, as arn_tcp.h's struct arn_tcp_conn_pub (read inline) */
	void *user;
	uint32_t rx_bytes;
	bool used, upstream, connected;
	const struct arn_tcp_ops *ops;
	uint32_t laddr, raddr;
	uint16_t lport, rport;
	struct rte_mbuf *rxq; /* one-segment mbufs linked by next */
	char *tx;	      /* everything the proxy wrote */
	size_t tx_len, tx_cap;
	bool tx_limited;    /* the send buffer takes only tx_room more bytes */
	uint32_t tx_room;   /* (the TLS transport's test: a byte at a time) */
	bool shut;	    /* FIN after the data */
	bool closed;	    /* the proxy closed or aborted it */
	bool aborted;	    /* ... with a reset */
	bool close_pending; /* on_close is owed, from the next poll */
	bool gone;	    /* on_close was delivered */
	bool full;	    /* the send buffer takes nothing (a peer that stopped reading) */
	int close_reason;
	unsigned writes; /* calls that wrote (lib/tcp's segments come from each) */
	uint32_t keep_idle, keep_intvl, keep_cnt; /* arn_tcp_set_keepalive's */
};

_Static_assert(offsetof(struct arn_tcp_conn, user) == offsetof(struct arn_tcp_conn_pub, user) &&
		   offsetof(struct arn_tcp_conn, rx_bytes) ==
		       offsetof(struct arn_tcp_conn_pub, rx_bytes),
	       "the fake connection starts as struct arn_tcp_conn_pub");
static struct arn_tcp_conn conns[CONNS];
static const struct arn_tcp_ops *lsn_ops;
static void *lsn_user, *lsn_user1; /* lc0's listener, lc1's */
static const struct arn_tcp_app *app;
static uint16_t next_port = 40000;

void arn_tcp_echo_pump(struct arn_tcp_conn *c, bool eof)
{
	(void)c;
	(void)eof;
}

int arn_tcp_app_register(const struct arn_tcp_app *a)
{
	app = a;
	return 0;
}

/* Each worker's TCP state as arn_tcp_app_state (inline, arn_tcp.h) reads
 * it from the lcore: the slots alone, the one module in the first. */
static struct arn_tcp_app_slots app_slots[2];

int arn_tcp_app_set_state(struct arn_lcore *lc, const struct arn_tcp_app *a, void *state)
{
	if (a != app)
		return -ENOENT;
	lc->l4 = &app_slots[lc->idx];
	app_slots[lc->idx].slot[0].app = a;
	app_slots[lc->idx].slot[0].state = state;
	return 0;
}

struct arn_tcp_listener *arn_tcp_listen(struct arn_lcore *lc, uint32_t addr, uint16_t port,
					const struct arn_tcp_ops *ops, void *user,
					const struct arn_tcp_listen_opts *opts, int *err)
{
	(void)addr, (void)port, (void)opts, (void)err;
	lsn_ops = ops;
	if (lc->idx == 0)
		lsn_user = user;
	else
		lsn_user1 = user;
	return (struct arn_tcp_listener *)&lsn_ops;
}

void arn_tcp_unlisten(struct arn_lcore *lc, struct arn_tcp_listener *l)
{
	(void)lc, (void)l;
}

static struct arn_tcp_conn *conn_new(void)
{
	for (unsigned i = 0; i < CONNS; i++)
		if (!conns[i].used) {
			struct arn_tcp_conn *c = &conns[i];
			free(c->tx);
			memset(c, 0, sizeof(*c));
			c->used = true;
			return c;
		}
	fail_msg("out of fake connections");
	return NULL;
}

struct arn_tcp_conn *arn_tcp_connect(struct arn_lcore *lc, uint32_t laddr, uint32_t raddr,
				     uint16_t rport, const struct arn_tcp_ops *ops, void *user,
				     enum arn_tcp_cc cc, int *err)
{
	(void)lc, (void)cc, (void)err;
	struct arn_tcp_conn *c = conn_new();
	c->upstream = true;
	c->ops = ops;
	c->user = user;
	c->laddr = laddr;
	c->lport = next_port++;
	c->raddr = raddr;
	c->rport = rport;
	return c;
}

void arn_tcp_set_user(struct arn_tcp_conn *c, void *user)
{
	c->user = user;
}

void arn_tcp_set_ops(struct arn_tcp_conn *c, const struct arn_tcp_ops *ops)
{
	c->ops = ops;
}

void arn_tcp_endpoints(const struct arn_tcp_conn *c, uint32_t *laddr, uint16_t *lport,
		       uint32_t *raddr, uint16_t *rport)
{
	*laddr = c->laddr;
	*lport = c->lport;
	*raddr = c->raddr;
	*rport = c->rport;
}

static void tx_put(struct arn_tcp_conn *c, const void *p, size_t n)
{
	if (c->tx_len + n + 1 > c->tx_cap) {
		c->tx_cap = (c->tx_len + n + 1) * 2;
		c->tx = realloc(c->tx, c->tx_cap);
		assert_non_null(c->tx);
	}
	memcpy(c->tx + c->tx_len, p, n);
	c->tx_len += n;
	c->tx[c->tx_len] = 0;
}

int arn_tcp_write(struct arn_tcp_conn *c, const void *buf, uint32_t len)
{
	if (c->closed || c->shut)
		return -EPIPE;
	if (c->upstream && !c->connected)
		return -ENOTCONN;
	if (c->full)
		return 0;
	if (c->tx_limited) {
		len = RTE_MIN(len, c->tx_room);
		c->tx_room -= len;
	}
	tx_put(c, buf, len);
	c->writes++;
	return (int)len;
}

/* by reference or copied: the same bytes on this fake's wire */
int arn_tcp_write_ref(struct arn_tcp_conn *c, struct rte_mbuf *m, const void *data, uint32_t len)
{
	(void)m;
	return arn_tcp_write(c, data, len);
}

int arn_tcp_write_mbuf(struct arn_tcp_conn *c, struct rte_mbuf *m)
{
	if (c->closed || c->shut)
		return -EPIPE;
	if (c->upstream && !c->connected)
		return -ENOTCONN;
	if (c->full)
		return -EAGAIN;
	for (struct rte_mbuf *s = m; s; s = s->next)
		tx_put(c, rte_pktmbuf_mtod(s, const char *), s->data_len);
	rte_pktmbuf_free(m);
	c->writes++;
	return 0;
}

/* the send buffer fills only when the test says so (full, or a limit on tx_room) */
uint32_t arn_tcp_sndbuf_space(const struct arn_tcp_conn *c)
{
	return c->closed || c->shut || c->full ? 0 : c->tx_limited ? c->tx_room : 1u << 20;
}

void arn_tcp_want_writable(struct arn_tcp_conn *c)
{
	(void)c;
}

uint32_t arn_tcp_read(struct arn_tcp_conn *c, void *buf, uint32_t len)
{
	uint32_t got = 0;
	for (struct rte_mbuf *m = c->rxq; m && got < len; m = m->next) {
		uint32_t k = RTE_MIN(len - got, (uint32_t)m->data_len);
		memcpy((char *)buf + got, rte_pktmbuf_mtod(m, char *), k);
		got += k;
	}
	arn_tcp_rx_consume(c, got);
	return got;
}

void arn_tcp_rx_consume(struct arn_tcp_conn *c, uint32_t n)
{
	while (n && c->rxq) {
		struct rte_mbuf *m = c->rxq;
		if (m->data_len > n) {
			rte_pktmbuf_adj(m, (uint16_t)n);
			c->rx_bytes -= n;
			return;
		}
		n -= m->data_len;
		c->rx_bytes -= m->data_len;
		c->rxq = m->next;
		m->next = NULL;
		rte_pktmbuf_free(m);
	}
}

struct rte_mbuf *arn_tcp_rx_take(struct arn_tcp_conn *c, uint32_t n)
{
	struct rte_mbuf *head = NULL, *tail = NULL;
	uint32_t total = 0;
	uint16_t segs = 0;
	while (n && c->rxq) {
		struct rte_mbuf *m = c->rxq;
		if (m->data_len > n) {
			/* split: the first n bytes into a fresh mbuf */
			struct rte_mbuf *p = rte_pktmbuf_alloc(pool);
			assert_non_null(p);
			memcpy(rte_pktmbuf_append(p, (uint16_t)n), rte_pktmbuf_mtod(m, char *), n);
			rte_pktmbuf_adj(m, (uint16_t)n);
			c->rx_bytes -= n;
			m = p;
		} else {
			c->rxq = m->next;
			c->rx_bytes -= m->data_len;
		}
		m->next = NULL;
		n -= m->data_len;
		total += m->data_len;
		segs++;
		if (tail)
			tail->next = m;
		else
			head = m;
		tail = m;
	}
	if (head) {
		head->pkt_len = total;
		head->nb_segs = segs;
	}
	return head;
}

void arn_tcp_ack_now(struct arn_tcp_conn *c)
{
	(void)c;
}

int arn_tcp_shutdown(struct arn_tcp_conn *c)
{
	c->shut = true;
	return 0;
}

/* on_close comes from the poll, never from inside the call (arn_tcp.h) */
static void close_later(struct arn_tcp_conn *c, int reason)
{
	if (c->closed)
		return;
	c->closed = true;
	c->close_pending = true;
	c->close_reason = reason;
}

void arn_tcp_close(struct arn_tcp_conn *c)
{
	close_later(c, c->rx_bytes ? -ECONNABORTED : 0);
}

void arn_tcp_abort(struct arn_tcp_conn *c)
{
	if (!c->closed)
		c->aborted = true;
	close_later(c, -ECONNABORTED);
}

void arn_tcp_set_keepalive(struct arn_tcp_conn *c, uint32_t idle_s, uint32_t intvl_s,
			   uint32_t count)
{
	c->keep_idle = idle_s;
	c->keep_intvl = intvl_s;
	c->keep_cnt = count;
}

bool arn_tcp_close_quiet(struct arn_tcp_conn *c)
{
	arn_tcp_close(c);
	return false;
}

/* ---- the test's side of connections --------------------------------------------------------- */

static void deliver_closes(void)
{
	for (unsigned i = 0; i < CONNS; i++) {
		struct arn_tcp_conn *c = &conns[i];
		if (c->used && c->close_pending) {
			c->close_pending = false;
			c->gone = true;
			arn_tcp_rx_consume(c, c->rx_bytes);
			if (c->ops && c->ops->on_close)
				c->ops->on_close(c, c->close_reason);
		}
	}
}

/* One worker loop iteration @p ms after the last one. */
static void poll_ms(uint64_t ms)
{
	clock_set(now_us + ms * 1000);
	deliver_closes();
	app->worker_poll(&lc0, app->arg);
	if (two_workers)
		app->worker_poll(&lc1, app->arg);
	deliver_closes();
}

/* Let @p ms pass, a worker iteration every 10 ms. */
static void run_ms(uint64_t ms)
{
	for (uint64_t t = 0; t < ms; t += 10)
		poll_ms(10);
}

#define ARION 0xc6120002u /* 198.18.0.2 */
#define UPSTREAM 0xc612000au

/* A client connects to port 80; NULL when refused. */
static struct arn_tcp_conn *client(void)
{
	struct arn_tcp_conn *c = conn_new();
	c->laddr = ARION;
	c->lport = 80;
	c->raddr = 0xc6120101u; /* 198.18.1.1 */
	c->rport = next_port++;
	c->ops = lsn_ops;
	if (lsn_ops->on_accept(c, lsn_user) != 0) {
		c->used = false;
		return NULL;
	}
	return c;
}

/* A client connects to port 80 of worker lc1 (start2). */
static struct arn_tcp_conn *client1(void)
{
	struct arn_tcp_conn *c = conn_new();
	c->laddr = ARION;
	c->lport = 80;
	c->raddr = 0xc6120101u;
	c->rport = next_port++;
	c->ops = lsn_ops;
	assert_int_equal(lsn_ops->on_accept(c, lsn_user1), 0);
	return c;
}

/* The peer's bytes arrive (in mbufs of at most 2000 bytes). */
static void send_n(struct arn_tcp_conn *c, const char *p, size_t n)
{
	struct rte_mbuf **tail = &c->rxq;
	while (*tail)
		tail = &(*tail)->next;
	while (n) {
		struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
		assert_non_null(m);
		uint16_t k = (uint16_t)(n < 2000 ? n : 2000);
		memcpy(rte_pktmbuf_append(m, k), p, k);
		*tail = m;
		tail = &m->next;
		c->rx_bytes += k;
		p += k;
		n -= k;
	}
	if (!c->closed && c->ops->on_data)
		c->ops->on_data(c, c->rxq, c->rx_bytes);
}

static void send_s(struct arn_tcp_conn *c, const char *s)
{
	send_n(c, s, strlen(s));
}

/* The upstream accepts the newest connection the proxy opened to it. */
static struct arn_tcp_conn *upstream_accepts(void)
{
	struct arn_tcp_conn *u = NULL;
	for (unsigned i = 0; i < CONNS; i++) /* slots are used in order, never reused */
		if (conns[i].used && conns[i].upstream && !conns[i].connected && !conns[i].closed)
			u = &conns[i];
	assert_non_null(u);
	u->connected = true;
	u->ops->on_connected(u, 0);
	return u;
}

/* Upstream connection attempts not yet connected. */
static unsigned upstream_pending(void)
{
	unsigned n = 0;
	for (unsigned i = 0; i < CONNS; i++)
		n += conns[i].used && conns[i].upstream && !conns[i].connected && !conns[i].closed;
	return n;
}

static bool answered(const struct arn_tcp_conn *c, const char *status_line)
{
	return c->tx_len && strncmp(c->tx, status_line, strlen(status_line)) == 0;
}

static void want_in(const char *text, const char *what)
{
	if (!text || !strstr(text, what))
		fail_msg("missing '%s' in:\n%s", what, text ? text : "(nothing)");
}

static void want_not_in(const char *text, const char *what)
{
	if (text && strstr(text, what))
		fail_msg("unexpected '%s' in:\n%s", what, text);
}

/* ---- configuration and statistics --------------------------------------------------------------
 */

#define L ARN_TYPE_URL_LISTENER
#define C ARN_TYPE_URL_CLUSTER

static struct arn_config_store *st;
static struct arn_config_result res;

/* apply() leaves the control lcore's http_rt_sync out: what workers see
 * is only what the store's publication made */
static bool apply_no_poll;
/* the name apply() gives a ToolSet (NULL: "tools") */
static const char *apply_toolset_name;

static void apply(const char *type, const char *version, const char *json)
{
	arn_config_result_free(&res);
	upb_Arena *a = upb_Arena_New();
	const upb_MessageDef *md = arn_proto_msgdef(strrchr(type, '/') + 1);
	struct arn_sb err = ARN_SB_INIT;
	upb_Message *m = arn_proto_from_json(json, strlen(json), md, a, &err);
	if (!m)
		fail_msg("bad test JSON: %s\n%s", arn_sb_cstr(&err), json);
	arn_sb_free(&err);
	const char *name = !strcmp(type, L) ? "l"
			   : !strcmp(type, ARN_TYPE_URL_TOOLSET)
			       ? (apply_toolset_name ? apply_toolset_name : "tools")
			       : "web";
	struct arn_config_resource_in in = {name, version, NULL, 0};
	in.bytes = arn_proto_encode(m, md, a, &in.len);
	assert_int_equal(arn_config_apply(st, type, &in, 1, NULL, 0, 0, &res), 0);
	upb_Arena_Free(a);
	if (!res.accepted || res.n_errors)
		fail_msg("refused: %s\n%s", res.n_errors ? res.errors[0].message : "?", json);
	if (!apply_no_poll)
		arn_http_poll(); /* the statistics scopes of the new generation */
}

#define HCM_AT                                                                                     \
	"\"@type\":\"type.googleapis.com/"                                                         \
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager\""
#define ROUTER                                                                                     \
	"{\"name\":\"envoy.filters.http.router\",\"typed_config\":{\"@type\":\"type.googleapis."   \
	"com/envoy.extensions.filters.http.router.v3.Router\"}}"

static char jbuf[65536];

/* Listener "l" on port 80, HCM "in" with @p hcm_extra fields and the
 * routes @p routes (JSON array members). */
static const char *jfilters = ""; /* HTTP filters before the router ("{...},") */
static const char *jlistener(const char *hcm_extra, const char *routes)
{
	snprintf(jbuf, sizeof(jbuf),
		 "{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
		 "\"port_value\":80}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","
		 "\"typed_config\":{" HCM_AT ",\"stat_prefix\":\"in\"%s%s,\"route_config\":{"
		 "\"name\":\"r\",\"virtual_hosts\":[{\"name\":\"vh\",\"domains\":[\"*\"],"
		 "\"routes\":[%s]}]},\"http_filters\":[%s" ROUTER "]}}]}]}",
		 *hcm_extra ? "," : "", hcm_extra, routes, jfilters);
	return jbuf;
}

#define DIRECT_OK                                                                                  \
	"{\"match\":{\"prefix\":\"/\"},\"direct_response\":{\"status\":200,\"body\":{"             \
	"\"inline_string\":\"ok\"}}}"

static void cluster_web(void)
{
	apply(C, "1",
	      "{\"name\":\"web\",\"type\":\"STATIC\",\"connect_timeout\":\"5s\","
	      "\"load_assignment\":{\"cluster_name\":\"web\",\"endpoints\":[{\"lb_endpoints\":[{"
	      "\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"198.18.0.10\","
	      "\"port_value\":8080}}}}]}]}}");
}

static uint64_t stat(const char *name)
{
	struct arn_stats_snapshot s;
	assert_int_equal(arn_stats_snapshot_take(&s), 0);
	uint64_t v = 0;
	for (size_t i = 0; i < s.n; i++)
		if (!strcmp(s.v[i].name, name))
			v = s.v[i].kind == ARN_STAT_GAUGE ? (uint64_t)s.v[i].gauge : s.v[i].counter;
	arn_stats_snapshot_free(&s);
	return v;
}

/* How /stats/prometheus names stat @p name: "<family> <stat> <tag>=<value>
 * <tag2>=<value2>" (before the mangling to envoy_<family>_<stat>), "-" for
 * what it lacks. */
static const char *stat_prom(const char *name)
{
	static char out[512];
	struct arn_stats_snapshot s;
	assert_int_equal(arn_stats_snapshot_take(&s), 0);
	snprintf(out, sizeof(out), "none");
	for (size_t i = 0; i < s.n; i++) {
		const struct arn_stat_sample *x = &s.v[i];
		if (strcmp(x->name, name) != 0)
			continue;
		snprintf(out, sizeof(out), "%s %s %s=%s %s=%s",
			 x->prom_family ? x->prom_family : x->family,
			 x->prom_stat ? x->prom_stat : x->stat, x->tag_name ? x->tag_name : "-",
			 x->tag_value ? x->tag_value : "-", x->tag2_name ? x->tag2_name : "-",
			 x->tag2_value ? x->tag2_value : "-");
	}
	arn_stats_snapshot_free(&s);
	return out;
}

/* Histogram @p name summed over workers; all zero when /stats lacks it. */
static struct arn_stats_hist hist(const char *name)
{
	struct arn_stats_snapshot s;
	assert_int_equal(arn_stats_snapshot_take(&s), 0);
	struct arn_stats_hist h = {0};
	for (size_t i = 0; i < s.n; i++)
		if (!strcmp(s.v[i].name, name) && s.v[i].kind == ARN_STAT_HISTOGRAM)
			h = s.v[i].hist;
	arn_stats_snapshot_free(&s);
	return h;
}

/* ---- set-up: one worker with @p streams request buffers -------------------------------------- */

static struct http_worker *w;
static bool with_toolset; /* start() applies ToolSet "tools" first */
static uint32_t start_trailer_arrays; /* start()'s trailer_arrays (0: the default) */
static uint32_t start_kept_body;      /* start()'s kept_body_mbufs (0: the default) */

static void start(uint32_t streams, const char *listener_json)
{
	st = arn_config_create(NULL);
	assert_non_null(st);
	assert_int_equal(arn_stats_set_workers(two_workers ? 2 : 1), 0);
	cluster_web();
	/* Blocks for 256 connections each way, not the 16384 and 8192 of the
	 * defaults, and small tables: no test here holds more, and start()
	 * runs once per test, so zeroing the defaults' arrays (prefaulted on
	 * purpose, so that a worker takes no page fault later) was most of
	 * this suite's time. */
	struct arn_http_options o = {.max_streams = streams,
				     .max_connections = 256,
				     .max_upstream_connections = 256,
				     .large_buffers = 16,
				     .upstream_pools = 64,
				     .mcp_sessions = 64,
				     .mcp_legs = 128,
				     .mcp_detached = 32,
				     .trailer_arrays = start_trailer_arrays,
				     .kept_body_mbufs = start_kept_body};
	assert_int_equal(arn_http_start(st, &o), 0);
	apply(L, "1", listener_json);
	if (with_toolset) /* the listener's MCP filter waits for it (X14, on demand) */
		apply(ARN_TYPE_URL_TOOLSET, "1",
		      "{\"name\":\"tools\",\"backends\":[{\"name\":\"b\",\"cluster\":\"web\"}]}");
	assert_int_equal(app->worker_init(&lc0, app->arg), 0);
	if (two_workers)
		assert_int_equal(app->worker_init(&lc1, app->arg), 0);
	assert_non_null(lsn_ops);
	w = lsn_user;
}

static unsigned free_buffers(void)
{
	unsigned n = 0;
	for (struct http_res *r = w->res_free; r; r = r->next)
		n++;
	return n;
}

static int teardown(void **state)
{
	(void)state;
	apply_no_poll = false;
	alloc_fail = 0;
	if (app && w)
		app->worker_fini(&lc0, app->arg);
	if (app && two_workers)
		app->worker_fini(&lc1, app->arg);
	two_workers = false;
	start_trailer_arrays = 0;
	arn_config_set_features(0); /* a test that set them and failed */
	lsn_user1 = NULL;
	deliver_closes();
	w = NULL;
	lsn_ops = NULL;
	arn_http_stop();
	arn_config_result_free(&res);
	if (st)
		arn_config_destroy(st);
	st = NULL;
	for (unsigned i = 0; i < CONNS; i++) {
		arn_tcp_rx_consume(&conns[i], conns[i].rx_bytes);
		free(conns[i].tx);
		memset(&conns[i], 0, sizeof(conns[i]));
	}
	arn_stats_reset_for_tests();
	/* every mbuf came back: none is held by a connection that is gone */
	assert_int_equal(rte_mempool_in_use_count(pool), 0);
	return 0;
}

/* ---- issue 12 item 3: slow heads --------------------------------------------------------------
 */

#define SLOW_PART "GET /slow HTTP/1.1\r\nHost: a\r\nX-Pad: 0123"

/*
 * More clients trickling their heads than the worker has request buffers
 * (4): they hold none, and a normal request is answered at once. Before
 * issue 12 each took a buffer at its first byte, the fifth client and the
 * normal one waited, and nothing ended the wait (no head deadline). Then
 * the default head deadline (10 s, request_headers_timeout unset) answers
 * every slow one 408 and closes it.
 */
/* The worker's millisecond clock (w->now_ms) ticks at the first TSC tick
 * of each millisecond, exactly (the floor of TSC / ticks a millisecond),
 * also after several milliseconds without a poll, and a TSC read behind
 * the clock does not move it back. */
static void test_worker_ms_clock_ticks_at_the_boundary(void **state)
{
	(void)state;
	start(4, jlistener("", DIRECT_OK));
	assert_int_equal(w->tsc_per_ms, 1000); /* arn_net_hz: 1 MHz here */
	uint64_t ms = now_us / 1000 + 5;
	clock_set(ms * 1000 - 1);
	poll_ms(0);
	assert_int_equal(w->now_ms, ms - 1);
	clock_set(ms * 1000);
	poll_ms(0);
	assert_int_equal(w->now_ms, ms);
	clock_set(ms * 1000 + 999);
	poll_ms(0);
	assert_int_equal(w->now_ms, ms);
	clock_set((ms + 7) * 1000 + 1);
	poll_ms(0);
	assert_int_equal(w->now_ms, ms + 7);
	clock_set(ms * 1000);
	poll_ms(0);
	assert_int_equal(w->now_ms, ms + 7);
	clock_set((ms + 8) * 1000);
	poll_ms(0);
	assert_int_equal(w->now_ms, ms + 8);
}

static void test_slow_heads_hold_no_buffer(void **state)
{
	(void)state;
	start(4, jlistener("", DIRECT_OK));
	struct arn_tcp_conn *slow[10];
	for (int i = 0; i < 10; i++) {
		slow[i] = client();
		assert_non_null(slow[i]);
		/* a byte at a time, the request line and part of a header */
		for (const char *p = SLOW_PART; *p; p++) {
			send_n(slow[i], p, 1);
			poll_ms(1);
		}
	}
	/* empty lines before a request line are no part of a request (RFC
	 * 9112 2.2, Envoy's codec): no buffer, no stream, no head deadline */
	struct arn_tcp_conn *crlf = client();
	send_s(crlf, "\r\n\n\r\n\r");
	assert_int_equal(free_buffers(), 4);
	for (int i = 0; i < 10; i++)
		assert_int_equal(slow[i]->tx_len, 0);

	struct arn_tcp_conn *c = client();
	send_s(c, "GET /x HTTP/1.1\r\nHost: a\r\n\r\n");
	poll_ms(1);
	if (!answered(c, "HTTP/1.1 200 OK\r\n"))
		fail_msg("the normal request was not answered: '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "\r\n\r\nok");
	assert_int_equal(stat("http.in.downstream_rq_buffer_wait"), 0);

	/* the slow ones are still unanswered 9 s later; at 10 s after their
	 * first byte each gets 408 and is closed */
	run_ms(9000 - 60);
	for (int i = 0; i < 10; i++)
		assert_int_equal(slow[i]->tx_len, 0);
	run_ms(1500);
	for (int i = 0; i < 10; i++) {
		if (!answered(slow[i], "HTTP/1.1 408 Request Timeout\r\n"))
			fail_msg("slow client %d: '%s'", i, slow[i]->tx ? slow[i]->tx : "");
		want_in(slow[i]->tx, "connection: close\r\n");
		want_in(slow[i]->tx, "request header timeout");
		assert_true(slow[i]->shut || slow[i]->closed);
	}
	assert_int_equal(stat("http.in.downstream_rq_header_timeout"), 10);
	assert_int_equal(free_buffers(), 4);
	/* the empty lines left the connection idle: still open, unanswered,
	 * and a request on it is served */
	assert_int_equal(crlf->tx_len, 0);
	assert_false(crlf->closed);
	send_s(crlf, "\nGET /late HTTP/1.1\r\nHost: a\r\n\r\n");
	poll_ms(1);
	assert_true(answered(crlf, "HTTP/1.1 200 OK\r\n"));
}

/* request_headers_timeout given: it replaces the default, and 0 turns the
 * deadline off (Envoy's default behaviour, chosen explicitly). */
static void test_head_deadline_configured(void **state)
{
	(void)state;
	start(4, jlistener("\"request_headers_timeout\":\"2s\"", DIRECT_OK));
	struct arn_tcp_conn *a = client();
	send_s(a, SLOW_PART);
	run_ms(1900);
	assert_int_equal(a->tx_len, 0);
	run_ms(200);
	assert_true(answered(a, "HTTP/1.1 408"));

	apply(L, "2", jlistener("\"request_headers_timeout\":\"0s\"", DIRECT_OK));
	struct arn_tcp_conn *b = client();
	send_s(b, SLOW_PART);
	run_ms(30000);
	assert_int_equal(b->tx_len, 0);
	/* the head completes late: answered, with its buffer taken only now */
	send_s(b, "\r\n\r\n");
	poll_ms(1);
	assert_true(answered(b, "HTTP/1.1 200 OK\r\n"));
	assert_int_equal(stat("http.in.downstream_rq_header_timeout"), 1);
}

/* A head longer than max_request_headers_kb is refused when it grows past
 * the limit, not at the deadline: once the input holds more than a head
 * may be, the parser gets it (and answers 431). */
static void test_oversized_head_refused_at_once(void **state)
{
	(void)state;
	start(4, jlistener("\"max_request_headers_kb\":1", DIRECT_OK));
	struct arn_tcp_conn *c = client();
	char big[1100];
	memset(big, 'a', sizeof(big));
	send_s(c, "GET / HTTP/1.1\r\nHost: a\r\nX-Big: ");
	assert_int_equal(c->tx_len, 0);
	send_n(c, big, sizeof(big));
	poll_ms(1);
	if (!answered(c, "HTTP/1.1 431"))
		fail_msg("got '%s'", c->tx ? c->tx : "");
}

/* Only CRLF and LF are empty lines: a CR before anything else is the
 * parser's to refuse (bare CR, 400), as it was before issue 12. */
static void test_bare_cr_before_a_request_is_refused(void **state)
{
	(void)state;
	start(4, jlistener("", DIRECT_OK));
	struct arn_tcp_conn *c = client();
	send_s(c, "\r\n\r");
	poll_ms(1);
	assert_int_equal(c->tx_len, 0); /* its LF may still come */
	send_s(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
	poll_ms(1);
	if (!answered(c, "HTTP/1.1 400 Bad Request\r\n"))
		fail_msg("got '%s'", c->tx ? c->tx : "");
}

/* How many times @p what occurs in @p text. */
static unsigned occurs(const char *text, const char *what)
{
	unsigned n = 0;
	for (const char *p = text; p && (p = strstr(p, what)) != NULL; p += strlen(what))
		n++;
	return n;
}

/*
 * Where a head ends, as head_ready finds it before a buffer is taken: its
 * first pass over a segment (line feeds 16 bytes at a time) and its byte
 * scan must agree. Lines ending at every place of a 16-byte block, a line
 * that starts with CR, bare LF endings, two heads in one segment, a line of
 * CRs only (an empty line: the parser refuses the bare CR).
 */
static void test_head_end_shapes(void **state)
{
	(void)state;
	start(4, jlistener("", DIRECT_OK));
	/* incomplete: no buffer held */
	struct arn_tcp_conn *a = client();
	send_s(a, "GET /a HTTP/1.1\r\nHost: a\r\nX-1: 1\r\nX-22: 22\r\nX-333: 333\r\n"
		  "X-4444: 4444\r\nX-55555: 55555\r\nX-666666: 666666\r\n");
	poll_ms(1);
	assert_int_equal(free_buffers(), 4);
	assert_int_equal(a->tx_len, 0);
	/* a line that starts with CR is not empty */
	struct arn_tcp_conn *b = client();
	send_s(b, "GET /b HTTP/1.1\r\nHost: b\r\n\rX: 1\r\n");
	poll_ms(1);
	assert_int_equal(free_buffers(), 4);
	assert_int_equal(b->tx_len, 0);
	send_s(a, "\r\n");
	poll_ms(1);
	assert_true(answered(a, "HTTP/1.1 200 OK\r\n"));
	send_s(b, "\r\n");
	poll_ms(1);
	if (!answered(b, "HTTP/1.1 400"))
		fail_msg("b got '%s'", b->tx ? b->tx : "");
	/* bare LF endings, and the next head in the same segment */
	struct arn_tcp_conn *c = client();
	send_s(c, "GET /c HTTP/1.1\nHost: c\n\nGET /d HTTP/1.1\r\nHost: d\r\n\r\n");
	poll_ms(1);
	assert_int_equal(occurs(c->tx, "HTTP/1.1 200 OK\r\n"), 2);
	/* CRs only: an empty line, so the head is in, and the parser says */
	struct arn_tcp_conn *d = client();
	send_s(d, "GET /e HTTP/1.1\r\nHost: e\r\n\r\r\n");
	poll_ms(1);
	if (!answered(d, "HTTP/1.1 400"))
		fail_msg("d got '%s'", d->tx ? d->tx : "");
}

/*
 * CONNECT (RFC 9110 9.3.6) is an upgrade of its own type to Envoy, which
 * answers 403 without CONNECT configured; Arion's configuration refuses
 * that type. A route whose prefix matched the request's empty path used to
 * send the upstream "CONNECT  HTTP/1.1" (no request-target) and give the
 * client the upstream's 200, with the upstream connection turned into a
 * tunnel and the client's left waiting for an upgrade.
 */
static void test_connect_refused(void **state)
{
	(void)state;
	start(4, jlistener("", "{\"match\":{\"prefix\":\"\"},\"route\":{\"cluster\":\"web\"}}"));
	struct arn_tcp_conn *c = client();
	send_s(c, "CONNECT origin.example:443 HTTP/1.1\r\nHost: origin.example:443\r\n\r\n");
	poll_ms(1);
	if (!answered(c, "HTTP/1.1 403 Forbidden\r\n"))
		fail_msg("CONNECT got '%s'", c->tx ? c->tx : "");
	assert_int_equal(upstream_pending(), 0);
	assert_int_equal(stat("http.in.downstream_rq_ws_on_non_ws_route"), 1);
	assert_true(c->shut || c->closed);
}

/*
 * Interim responses are dropped (docs/http.md), each in its own segment as
 * a server sends 102 Processing now and then while it works (RFC 2518) or
 * 103 Early Hints: the final response still goes to the client, however
 * many came before it. Their heads' segments used to stay pinned with the
 * stream's response until its end: past HTTP_PIN_MAX (64) of them the
 * final response was refused, 503 "connection termination".
 */
static void test_many_interim_responses(void **state)
{
	(void)state;
	start(4, jlistener("", "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}"));
	struct arn_tcp_conn *c = client();
	send_s(c, "GET /slow HTTP/1.1\r\nHost: a\r\n\r\n");
	struct arn_tcp_conn *u = upstream_accepts();
	for (int i = 0; i < 2 * HTTP_PIN_MAX; i++) {
		send_s(u, i % 2
			      ? "HTTP/1.1 102 Processing\r\n\r\n"
			      : "HTTP/1.1 103 Early Hints\r\nlink: </a.css>; rel=preload\r\n\r\n");
		poll_ms(1);
	}
	assert_int_equal(c->tx_len, 0);
	send_s(u, "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
	poll_ms(1);
	if (!answered(c, "HTTP/1.1 200 OK\r\n"))
		fail_msg("the final response: '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "\r\n\r\nok");
	want_not_in(c->tx, "Early Hints");
	/* the connection goes on: a second request is served on it, its
	 * interim and final responses in one segment (the interim head's
	 * pins go, the segment stays the final head's) */
	send_s(c, "GET /next HTTP/1.1\r\nHost: a\r\n\r\n");
	poll_ms(1);
	want_in(u->tx, "GET /next");
	send_s(u, "HTTP/1.1 103 Early Hints\r\nlink: </b.css>\r\n\r\n"
		  "HTTP/1.1 200 OK\r\nx-final: yes\r\ncontent-length: 3\r\n\r\ntwo");
	poll_ms(1);
	want_in(c->tx, "x-final: yes\r\n");
	want_in(c->tx, "\r\n\r\ntwo");
	assert_int_equal(occurs(c->tx, "HTTP/1.1 200 OK\r\n"), 2);
}

/*
 * An upstream's response whose Connection names 10 or more elements: each
 * field line was compared with the whole list when the head was written
 * to the client (a 29 KB head of 14,000 elements and 97 lines, 10 ms of a
 * worker, for every response). It is refused as a request is (502, an
 * upstream protocol error); nine are taken, and the fields they name
 * dropped.
 */
/* upstream_connection_options.tcp_keepalive (Envoy Gateway's
 * BackendTrafficPolicy tcpKeepalive): every upstream connection of the
 * cluster probes, the fields given and Linux's defaults for the others
 * (75 s, 9 probes); a cluster without it: none. Fails before: the
 * cluster was refused (upstream_connection_options not supported). */
static void test_upstream_tcp_keepalive(void **state)
{
	(void)state;
	start(4, jlistener("", "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}"));
	struct arn_tcp_conn *c = client();
	send_s(c, "GET /a HTTP/1.1\r\nHost: a\r\n\r\n");
	struct arn_tcp_conn *u = upstream_accepts();
	assert_int_equal(u->keep_idle, 0); /* cluster_web(): none */
	send_s(u, "HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nok");
	poll_ms(1);
	apply(C, "2",
	      "{\"name\":\"web\",\"type\":\"STATIC\",\"connect_timeout\":\"5s\","
	      "\"upstream_connection_options\":{\"tcp_keepalive\":{\"keepalive_time\":30}},"
	      "\"load_assignment\":{\"cluster_name\":\"web\",\"endpoints\":[{\"lb_endpoints\":[{"
	      "\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"198.18.0.10\","
	      "\"port_value\":8080}}}}]}]}}");
	send_s(c, "GET /b HTTP/1.1\r\nHost: a\r\n\r\n");
	u = upstream_accepts();
	assert_int_equal(u->keep_idle, 30);
	assert_int_equal(u->keep_intvl, 75);
	assert_int_equal(u->keep_cnt, 9);
}

/* Http1ProtocolOptions.header_key_format with Envoy's preserve_case
 * formatter (Envoy Gateway's preserveHeaderCase), on the listener and the
 * cluster: names go both ways with the case they came with, the status
 * line with the standard reason (Envoy's without forward_reason_phrase).
 * Arion's codec does so anyway; the test pins it. Fails before: the
 * listener and the cluster were refused (header_key_format; the
 * cluster's other HTTP/1 options were ignored). */
static void test_preserve_case_header_format(void **state)
{
	(void)state;
#define PRESERVE_CASE                                                                              \
	"\"header_key_format\":{\"stateful_formatter\":{\"name\":\"preserve_case\","                \
	"\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.http."                 \
	"header_formatters.preserve_case.v3.PreserveCaseFormatterConfig\"}}}"
	start(4, jlistener("\"http_protocol_options\":{" PRESERVE_CASE "}",
			   "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}"));
	apply(C, "2",
	      "{\"name\":\"web\",\"type\":\"STATIC\",\"connect_timeout\":\"5s\","
	      "\"typed_extension_protocol_options\":{\"envoy.extensions.upstreams.http.v3."
	      "HttpProtocolOptions\":{\"@type\":\"type.googleapis.com/envoy.extensions.upstreams."
	      "http.v3.HttpProtocolOptions\",\"explicit_http_config\":{\"http_protocol_options\":{"
	      PRESERVE_CASE "}}}},"
	      "\"load_assignment\":{\"cluster_name\":\"web\",\"endpoints\":[{\"lb_endpoints\":[{"
	      "\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"198.18.0.10\","
	      "\"port_value\":8080}}}}]}]}}");
#undef PRESERVE_CASE
	struct arn_tcp_conn *c = client();
	send_s(c, "GET /a HTTP/1.1\r\nHost: a\r\nX-Mixed-CASE: v\r\n\r\n");
	struct arn_tcp_conn *u = upstream_accepts();
	want_in(u->tx, "\r\nX-Mixed-CASE: v\r\n");
	send_s(u, "HTTP/1.1 200 Fine\r\nX-Resp-Case: r\r\nContent-Length: 2\r\n\r\nok");
	poll_ms(1);
	want_in(c->tx, "HTTP/1.1 200 OK\r\n");
	want_in(c->tx, "\r\nX-Resp-Case: r\r\n");
}

/* dataplane http.kept_body_mbufs reaches each worker's bound on kept
 * request bodies (Envoy Gateway's default requestBuffer limit, 4 MiB,
 * is the whole default 2048 mbufs of one worker: an operator raises it
 * here). Fails before: the bound was HTTP_RB_WORKER_SEGS, fixed. */
static void test_kept_body_mbufs_option(void **state)
{
	(void)state;
	start_kept_body = 40000;
	start(4, jlistener("", DIRECT_OK));
	start_kept_body = 0;
	assert_int_equal(w->rb_segs_max, 40000);
}

/* A listener's socket_options for TCP keepalive, as Envoy Gateway's
 * ClientTrafficPolicy tcpKeepalive writes them (SO_KEEPALIVE, then
 * TCP_KEEPIDLE and TCP_KEEPCNT; TCP_KEEPINTVL left to Linux's 75 s):
 * every accepted connection probes so. Fails before: the listener was
 * refused (socket_options not supported). */
static void test_listener_tcp_keepalive(void **state)
{
	(void)state;
	char j[4096];
	snprintf(j, sizeof(j),
		 "{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
		 "\"port_value\":80}},\"socket_options\":["
		 "{\"description\":\"socket option to enable tcp keep alive\",\"level\":1,"
		 "\"name\":9,\"int_value\":1,\"state\":\"STATE_PREBIND\"},"
		 "{\"level\":6,\"name\":4,\"int_value\":30,\"state\":\"STATE_PREBIND\"},"
		 "{\"level\":6,\"name\":6,\"int_value\":3,\"state\":\"STATE_PREBIND\"}],"
		 "\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\",\"typed_config\":{" HCM_AT
		 ",\"stat_prefix\":\"in\",\"route_config\":{\"name\":\"r\",\"virtual_hosts\":[{"
		 "\"name\":\"vh\",\"domains\":[\"*\"],\"routes\":[" DIRECT_OK "]}]},"
		 "\"http_filters\":[" ROUTER "]}}]}]}");
	start(4, j);
	struct arn_tcp_conn *c = client();
	assert_int_equal(c->keep_idle, 30);
	assert_int_equal(c->keep_intvl, 75);
	assert_int_equal(c->keep_cnt, 3);
}

/* circuit_breakers.per_host_thresholds' max_connections (Envoy Gateway's
 * perEndpoint.maxConnections): with 1, a second request to the host while
 * its one connection is busy waits (upstream_cx_overflow, pending) rather
 * than opening a second, and goes on that connection once it is free, as
 * Envoy's pool queues it. Fails before: the cluster was refused
 * (per_host_thresholds not supported). */
static void test_per_host_max_connections(void **state)
{
	(void)state;
	start(4, jlistener("", "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}"));
	apply(C, "2",
	      "{\"name\":\"web\",\"type\":\"STATIC\",\"connect_timeout\":\"5s\","
	      "\"circuit_breakers\":{\"per_host_thresholds\":[{\"max_connections\":1,"
	      "\"track_remaining\":true}]},"
	      "\"load_assignment\":{\"cluster_name\":\"web\",\"endpoints\":[{\"lb_endpoints\":[{"
	      "\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"198.18.0.10\","
	      "\"port_value\":8080}}}}]}]}}");
	struct arn_tcp_conn *c1 = client(), *c2 = client();
	send_s(c1, "GET /a HTTP/1.1\r\nHost: a\r\n\r\n");
	struct arn_tcp_conn *u = upstream_accepts();
	send_s(c2, "GET /b HTTP/1.1\r\nHost: a\r\n\r\n");
	poll_ms(1);
	assert_int_equal(upstream_pending(), 0); /* no second connection */
	assert_int_equal(stat("cluster.web.upstream_cx_overflow"), 1);
	assert_int_equal(stat("cluster.web.upstream_rq_pending_total"), 1);
	send_s(u, "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
	poll_ms(1);
	want_in(c1->tx, "HTTP/1.1 200 OK");
	want_in(u->tx, "GET /b HTTP/1.1");
	send_s(u, "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
	poll_ms(1);
	want_in(c2->tx, "HTTP/1.1 200 OK");
	assert_int_equal(upstream_pending(), 0);
}

static void test_response_connection_elements(void **state)
{
	(void)state;
	start(4, jlistener("", "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}"));
	struct arn_tcp_conn *c = client();
	send_s(c, "GET /a HTTP/1.1\r\nHost: a\r\n\r\n");
	struct arn_tcp_conn *u = upstream_accepts();
	send_s(u, "HTTP/1.1 200 OK\r\nconnection: x-a,b,c,d,e,f,g,h,i\r\nx-a: 1\r\n"
		  "content-length: 2\r\n\r\nok");
	poll_ms(1);
	if (!answered(c, "HTTP/1.1 200 OK\r\n"))
		fail_msg("nine elements: '%s'", c->tx ? c->tx : "");
	want_not_in(c->tx, "x-a:");
	send_s(c, "GET /b HTTP/1.1\r\nHost: a\r\n\r\n");
	poll_ms(1);
	want_in(u->tx, "GET /b");
	send_s(u, "HTTP/1.1 200 OK\r\nconnection: x-a,b,c,d,e\r\nx-a: 1\r\n"
		  "connection: f,g,h,i,j\r\ncontent-length: 2\r\n\r\nok");
	poll_ms(1);
	want_in(c->tx, "\r\n\r\nokHTTP/1.1 502 Bad Gateway\r\n");
	assert_int_equal(stat("cluster.web.upstream_cx_protocol_error"), 1);
}

/*
 * A head in more segments than a message's pins hold (HTTP_PIN_MAX, 64),
 * within max_request_headers_kb: a client on a path with the smallest MSS
 * (536) sends a 40 KB head in 75 segments (over 512 bytes each: not packed
 * into the input's tail), an upstream writes its head a line at a time
 * or trickles it byte by byte. Each used to be refused once its 65th
 * segment came (431 for the request, 503 for the response); their later
 * lines now go to the parser's scratch, as lines across segments do.
 */
static void test_head_in_many_segments(void **state)
{
	(void)state;
	start(4, jlistener("", "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}"));
	static char head[48 * 1024];
	int k = snprintf(head, sizeof(head), "GET /big HTTP/1.1\r\nHost: a\r\n");
	for (int i = 0; i < 80; i++)
		k += snprintf(head + k, sizeof(head) - (size_t)k, "x-c%02d: %0490d\r\n", i, i);
	k += snprintf(head + k, sizeof(head) - (size_t)k, "\r\n");
	struct arn_tcp_conn *c = client();
	for (int o = 0; o < k; o += 536)
		send_n(c, head + o, (size_t)(k - o < 536 ? k - o : 536));
	poll_ms(1);
	if (c->tx_len)
		fail_msg("the request: '%.40s'", c->tx);
	struct arn_tcp_conn *u = upstream_accepts();
	want_in(u->tx, "x-c00: 000");
	want_in(u->tx, "x-c79: 000");
	assert_int_equal(occurs(u->tx, "\r\nx-c"), 80);

	/* the response: its status line and 99 header lines, each in a
	 * segment of its own, then the empty line and the body */
	send_s(u, "HTTP/1.1 200 OK\r\n");
	poll_ms(1);
	for (int i = 0; i < 98; i++) {
		char line[64];
		snprintf(line, sizeof(line), "x-r%02d: %d\r\n", i, i);
		send_s(u, line);
		poll_ms(1);
	}
	send_s(u, "content-length: 2\r\n");
	poll_ms(1);
	send_s(u, "\r\nok");
	poll_ms(1);
	if (!answered(c, "HTTP/1.1 200 OK\r\n"))
		fail_msg("the response: '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "x-r00: 0\r\n");
	want_in(c->tx, "x-r97: 97\r\n");
	want_in(c->tx, "\r\n\r\nok");

	/* the next response trickled a byte at a time */
	send_s(c, "GET /two HTTP/1.1\r\nHost: a\r\n\r\n");
	poll_ms(1);
	want_in(u->tx, "GET /two");
	const char *r = "HTTP/1.1 200 OK\r\nx-slow: 0123456789012345678901234567890123456789"
			"0123456789012345678901234567890123456789\r\ncontent-length: 3\r\n\r\ntwo";
	for (const char *q = r; *q; q++) {
		send_n(u, q, 1);
		poll_ms(1);
	}
	want_in(c->tx, "x-slow: 0123456789012345678901234567890123456789"
		       "0123456789012345678901234567890123456789\r\n");
	want_in(c->tx, "\r\n\r\ntwo");
	assert_int_equal(occurs(c->tx, "HTTP/1.1 200 OK\r\n"), 2);
}

/* Hold every buffer with a request whose upstream connection is still
 * connecting (the request waits in the pool meanwhile). */
static void hold_all(struct arn_tcp_conn **hold, int n)
{
	for (int i = 0; i < n; i++) {
		hold[i] = client();
		send_s(hold[i], "GET /h HTTP/1.1\r\nHost: a\r\n\r\n");
	}
	assert_int_equal(free_buffers(), 0);
	assert_int_equal(upstream_pending(), (unsigned)n);
}

#define UP_OK "HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"

/* The upstream accepts the newest pending connection and answers the
 * request that comes on it, which must be @p line. */
static void upstream_answers(const char *line)
{
	struct arn_tcp_conn *u = upstream_accepts();
	want_in(u->tx, line);
	send_s(u, UP_OK);
}

/*
 * The wait for a buffer is first come, first served: a buffer freed while
 * requests wait goes to the oldest, never to a newcomer that arrives at
 * the moment it frees (before the poll hands it on); a waiting client that
 * goes away leaves the line.
 */
static void test_buffer_wait_is_fifo(void **state)
{
	(void)state;
	start(2, jlistener("", "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}"));
	struct arn_tcp_conn *hold[2];
	hold_all(hold, 2);
	struct arn_tcp_conn *q[3];
	for (int i = 0; i < 3; i++) {
		q[i] = client();
		char req[64];
		snprintf(req, sizeof(req), "GET /q%d HTTP/1.1\r\nHost: a\r\n\r\n", i);
		send_s(q[i], req);
	}
	assert_int_equal(stat("http.in.downstream_rq_buffer_wait"), 3);
	assert_int_equal(upstream_pending(), 2);

	/* q[1] goes away while waiting */
	q[1]->closed = q[1]->close_pending = true;
	q[1]->close_reason = -ECONNRESET;
	/* one request completes; in the same loop iteration, before the poll,
	 * a newcomer's complete head arrives */
	upstream_answers("GET /h HTTP/1.1\r\n");
	assert_true(answered(hold[1], "HTTP/1.1 200 OK\r\n"));
	assert_int_equal(free_buffers(), 1);
	struct arn_tcp_conn *late = client();
	send_s(late, "GET /late HTTP/1.1\r\nHost: a\r\n\r\n");
	assert_int_equal(stat("http.in.downstream_rq_buffer_wait"), 4);
	assert_int_equal(free_buffers(), 1);
	poll_ms(1);
	/* q[0] got it: its request went to the pool (an upstream connection
	 * opens for it); the newcomer still waits */
	assert_int_equal(free_buffers(), 0);
	assert_int_equal(upstream_pending(), 2);
	upstream_answers("GET /q0 HTTP/1.1\r\n");
	assert_true(answered(q[0], "HTTP/1.1 200 OK\r\n"));
	/* next: q[2] (q[1] left the line), then the newcomer */
	poll_ms(1);
	upstream_answers("GET /q2 HTTP/1.1\r\n");
	assert_true(answered(q[2], "HTTP/1.1 200 OK\r\n"));
	poll_ms(1);
	upstream_answers("GET /late HTTP/1.1\r\n");
	assert_true(answered(late, "HTTP/1.1 200 OK\r\n"));
	assert_int_equal(q[1]->tx_len, 0);
	assert_null(w->res_wait_head);
}

/* A complete head that found no buffer for the whole head deadline is
 * refused as Envoy's overload manager refuses a request (503, OM), counted
 * in downstream_rq_overload_close, not as a slow client. */
static void test_buffer_wait_bounded_by_head_deadline(void **state)
{
	(void)state;
	start(1, jlistener("\"request_headers_timeout\":\"3s\"",
			   "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}"));
	struct arn_tcp_conn *hold[1];
	hold_all(hold, 1);
	struct arn_tcp_conn *c = client();
	send_s(c, "GET /w HTTP/1.1\r\nHost: a\r\n\r\n");
	run_ms(3100);
	if (!answered(c, "HTTP/1.1 503 Service Unavailable\r\n"))
		fail_msg("got '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "envoy overloaded");
	assert_int_equal(stat("http.in.downstream_rq_overload_close"), 1);
	assert_int_equal(stat("http.in.downstream_rq_header_timeout"), 0);
	assert_null(w->res_wait_head);
}

/* ---- issue 12 item 5: rewrites and edits fail closed --------------------------------------- */

/* A request of @p n path bytes after @p prefix (then 'a's). */
static void send_path(struct arn_tcp_conn *c, const char *prefix, size_t n, const char *extra)
{
	size_t pl = strlen(prefix);
	char *req = malloc(n + 512);
	assert_non_null(req);
	memcpy(req, "GET ", 4);
	memcpy(req + 4, prefix, pl);
	memset(req + 4 + pl, 'a', n - pl);
	int k = snprintf(req + 4 + n, 512, " HTTP/1.1\r\nHost: a\r\n%s\r\n", extra);
	send_n(c, req, 4 + n + (size_t)k);
	free(req);
}

/* The stream's text (4 KB) holds the rewritten path: no other edit takes
 * any here (no request id, no route timeout, no XFF). */
#define REWRITE_ROUTE                                                                              \
	"{\"match\":{\"prefix\":\"/p/\"},\"route\":{\"cluster\":\"web\",\"prefix_rewrite\":"       \
	"\"/q/\",\"timeout\":\"0s\"}}"

/*
 * A rewritten path that does not fit the stream's text is refused (500,
 * rq_edit_overflow) with nothing sent upstream; one byte shorter it goes
 * upstream rewritten. Before issue 12 the longer one went upstream with
 * its original path.
 */
static void test_path_rewrite_fails_closed(void **state)
{
	(void)state;
	start(4, jlistener("\"generate_request_id\":false", REWRITE_ROUTE));
	/* fits: the rewritten path and its NUL take the whole text */
	struct arn_tcp_conn *c = client();
	send_path(c, "/p/", HTTP_TEXT - 1, "");
	struct arn_tcp_conn *u = upstream_accepts();
	want_in(u->tx, "GET /q/aaaa");
	assert_true(strstr(u->tx, " HTTP/1.1\r\n") - u->tx == 4 + HTTP_TEXT - 1);
	want_in(u->tx, "x-envoy-original-path: /p/aaaa");
	send_s(u, UP_OK);
	assert_true(answered(c, "HTTP/1.1 200 OK\r\n"));
	assert_int_equal(stat("http.in.rq_edit_overflow"), 0);

	/* one byte more: refused, before anything goes upstream */
	c = client();
	send_path(c, "/p/", HTTP_TEXT, "");
	u = upstream_accepts();
	poll_ms(1);
	if (!answered(c, "HTTP/1.1 500 Internal Server Error\r\n"))
		fail_msg("got '%.200s'", c->tx ? c->tx : "");
	assert_int_equal(u->tx_len, 0);
	assert_true(u->closed);
	assert_int_equal(stat("http.in.rq_edit_overflow"), 1);
	assert_int_equal(stat("http.in.downstream_rq_5xx"), 1);
}

/* A regex_rewrite that leaves nothing of the path is refused too (the
 * rewrite reports 0, which the HCM took for "no rewrite" and sent the
 * original path); one that leaves something goes upstream. */
static void test_regex_rewrite_to_nothing_refused(void **state)
{
	(void)state;
	start(4, jlistener("\"generate_request_id\":false",
			   "{\"match\":{\"prefix\":\"/e/\"},\"route\":{\"cluster\":\"web\","
			   "\"regex_rewrite\":{\"pattern\":{\"regex\":\"^/e(/k)?.*$\"},"
			   "\"substitution\":\"\\\\1\"}}}"));
	struct arn_tcp_conn *c = client();
	send_s(c, "GET /e/kept HTTP/1.1\r\nHost: a\r\n\r\n");
	struct arn_tcp_conn *u = upstream_accepts();
	want_in(u->tx, "GET /k HTTP/1.1\r\n");
	send_s(u, UP_OK);
	assert_true(answered(c, "HTTP/1.1 200 OK\r\n"));
	c = client();
	send_s(c, "GET /e/secret HTTP/1.1\r\nHost: a\r\n\r\n");
	u = upstream_accepts();
	poll_ms(1);
	assert_true(answered(c, "HTTP/1.1 500"));
	assert_int_equal(u->tx_len, 0);
	assert_int_equal(stat("http.in.rq_edit_overflow"), 1);
}

/* Header edits at the edge of the edit slots (63 for a request: one stays
 * for a content-length removal): x-forwarded-proto and 62 additions fit,
 * 63 do not, and the request is refused rather than sent short of them. */
static void test_request_edit_slots_fail_closed(void **state)
{
	(void)state;
	static char routes[16384];
	for (int adds = 62; adds <= 63; adds++) {
		int k = snprintf(routes, sizeof(routes),
				 "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\","
				 "\"timeout\":\"0s\"},\"request_headers_to_add\":[");
		for (int i = 0; i < adds; i++)
			k += snprintf(routes + k, sizeof(routes) - (size_t)k,
				      "%s{\"header\":{\"key\":\"x-add-%d\",\"value\":\"v\"}}",
				      i ? "," : "", i);
		snprintf(routes + k, sizeof(routes) - (size_t)k, "]}");
		start(4, jlistener("\"generate_request_id\":false", routes));
		struct arn_tcp_conn *c = client();
		send_s(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
		struct arn_tcp_conn *u = upstream_accepts();
		poll_ms(1);
		if (adds == 62) {
			want_in(u->tx, "x-add-61: v\r\n");
			send_s(u, UP_OK);
			assert_true(answered(c, "HTTP/1.1 200 OK\r\n"));
			assert_int_equal(stat("http.in.rq_edit_overflow"), 0);
		} else {
			assert_int_equal(u->tx_len, 0);
			assert_true(answered(c, "HTTP/1.1 500"));
			assert_int_equal(stat("http.in.rq_edit_overflow"), 1);
		}
		teardown(NULL);
	}
}

/*
 * Response edits at the edge of the stream's text: x-envoy-upstream-
 * service-time ("0") takes 2 bytes, then 23 added values of V bytes take
 * V + 1 each; V = 177 fills the 4 KB exactly, V = 178 does not fit. What
 * does not fit is answered 502 (rs_edit_overflow) and the upstream's
 * x-secret, which response_headers_to_remove strips, never reaches the
 * client. Before issue 12 the response went out with none of its edits.
 */
static void test_response_edits_fail_closed(void **state)
{
	(void)state;
	static char routes[32768];
	for (int v = 177; v <= 178; v++) {
		char val[256];
		/* "%%" is one '%': the value is substituted into the text */
		snprintf(
		    val, sizeof(val), "%%%%%.*s", v - 1,
		    "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
		    "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
		    "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
		int k =
		    snprintf(routes, sizeof(routes),
			     "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\","
			     "\"timeout\":\"0s\"},\"response_headers_to_remove\":[\"x-secret\"],"
			     "\"response_headers_to_add\":[");
		for (int i = 0; i < 23; i++)
			k += snprintf(routes + k, sizeof(routes) - (size_t)k,
				      "%s{\"header\":{\"key\":\"x-add-%d\",\"value\":\"%s\"}}",
				      i ? "," : "", i, val);
		snprintf(routes + k, sizeof(routes) - (size_t)k, "]}");
		start(4, jlistener("\"generate_request_id\":false", routes));
		struct arn_tcp_conn *c = client();
		send_s(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
		struct arn_tcp_conn *u = upstream_accepts();
		/* the clock does not move: the service time is "0" */
		send_s(u, "HTTP/1.1 200 OK\r\nx-secret: s3cret\r\ncontent-length: 2\r\n\r\nhi");
		want_not_in(c->tx, "s3cret");
		if (v == 177) {
			assert_true(answered(c, "HTTP/1.1 200 OK\r\n"));
			want_in(c->tx, "x-envoy-upstream-service-time: 0\r\n");
			want_in(c->tx, "x-add-22: %bbb");
			want_in(c->tx, "\r\n\r\nhi");
			assert_int_equal(stat("http.in.rs_edit_overflow"), 0);
		} else {
			if (!answered(c, "HTTP/1.1 502 Bad Gateway\r\n"))
				fail_msg("got '%.300s'", c->tx ? c->tx : "");
			want_not_in(c->tx, "x-add-");
			assert_int_equal(stat("http.in.rs_edit_overflow"), 1);
			poll_ms(1);
			assert_true(u->closed); /* not reused mid-response */
		}
		teardown(NULL);
	}
}

/*
 * x-envoy-expected-rq-timeout-ms on one keep-alive connection whose
 * requests take routes of different timeouts, back and forth: the router
 * keeps the last value's text on the connection (formatted when the
 * timeout changes), and every request must carry its own route's value
 * (none for a route without a timeout), never the one kept from before.
 */
static void test_route_timeout_header_per_request(void **state)
{
	(void)state;
	start(4, jlistener("\"generate_request_id\":false",
			   "{\"match\":{\"prefix\":\"/a\"},\"route\":{\"cluster\":\"web\","
			   "\"timeout\":\"7s\"}},"
			   "{\"match\":{\"prefix\":\"/b\"},\"route\":{\"cluster\":\"web\","
			   "\"timeout\":\"0.25s\"}},"
			   "{\"match\":{\"prefix\":\"/c\"},\"route\":{\"cluster\":\"web\","
			   "\"timeout\":\"0s\"}},"
			   "{\"match\":{\"prefix\":\"/d\"},\"route\":{\"cluster\":\"web\","
			   "\"timeout\":\"4294967.295s\"}}"));
	static const struct {
		const char *path, *want; /* want NULL: no header */
	} rq[] = {
	    {"/a", "7000"}, {"/b", "250"},	  {"/a", "7000"}, {"/c", NULL},
	    {"/b", "250"},  {"/d", "4294967295"}, {"/b", "250"},
	};
	struct arn_tcp_conn *c = client();
	struct arn_tcp_conn *u = NULL;
	for (unsigned i = 0; i < sizeof(rq) / sizeof(rq[0]); i++) {
		size_t uoff = u ? u->tx_len : 0, coff = c->tx_len;
		char line[128];
		snprintf(line, sizeof(line), "GET %s HTTP/1.1\r\nHost: a\r\n\r\n", rq[i].path);
		send_s(c, line);
		if (!u)
			u = upstream_accepts();
		const char *sent = u->tx + uoff;
		snprintf(line, sizeof(line), "GET %s HTTP/1.1\r\n", rq[i].path);
		want_in(sent, line);
		if (rq[i].want) {
			snprintf(line, sizeof(line), "x-envoy-expected-rq-timeout-ms: %s\r\n",
				 rq[i].want);
			want_in(sent, line);
			/* one such line, whole */
			assert_null(
			    strstr(strstr(sent, line) + 1, "x-envoy-expected-rq-timeout-ms"));
		} else {
			want_not_in(sent, "x-envoy-expected-rq-timeout-ms");
		}
		send_s(u, "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
		want_in(c->tx + coff, "HTTP/1.1 200 OK\r\n");
		poll_ms(1);
		assert_false(u->closed); /* the same upstream connection each time */
	}
	assert_int_equal(stat("cluster.web.upstream_cx_total"), 1);
	teardown(NULL);
}

/* Listener "l" whose route table, virtual host and one route (to cluster
 * web, or @p action) carry the header edit fields @p table, @p vhost and
 * @p route (",..." JSON members, or ""). */
static const char *jlistener_levels(const char *table, const char *vhost, const char *route,
				    const char *action)
{
	snprintf(
	    jbuf, sizeof(jbuf),
	    "{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
	    "\"port_value\":80}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","
	    "\"typed_config\":{" HCM_AT ",\"stat_prefix\":\"in\",\"generate_request_id\":false,"
	    "\"route_config\":{\"name\":\"r\"%s,\"virtual_hosts\":[{\"name\":\"vh\","
	    "\"domains\":[\"*\"]%s,\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{%s}%s}]}]},"
	    "\"http_filters\":[" ROUTER "]}}]}]}",
	    table, vhost, action ? action : "\"cluster\":\"web\"", route);
	return jbuf;
}

/* One exchange on client @p c: the request @p rq goes upstream (on *@p u,
 * or a connection the proxy opens), which answers 200. @return what went
 * upstream and (*@p resp) what the client got, this exchange's only. */
static const char *edit_exchange(struct arn_tcp_conn *c, struct arn_tcp_conn **u, const char *rq,
				 const char **resp)
{
	size_t coff = c->tx_len, uoff = *u ? (*u)->tx_len : 0;
	send_s(c, rq);
	if (upstream_pending()) {
		*u = upstream_accepts();
		uoff = 0;
	}
	assert_non_null(*u);
	poll_ms(1);
	static char sent[4096];
	snprintf(sent, sizeof(sent), "%.*s", (int)((*u)->tx_len - uoff), (*u)->tx + uoff);
	send_s(*u, "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
	poll_ms(1);
	*resp = c->tx + coff;
	assert_true(answered(c, "HTTP/1.1 200 OK\r\n"));
	want_in(*resp, "HTTP/1.1 200 OK\r\n");
	return sent;
}

/*
 * The route's "no header edits at any level" is found when its table is
 * converted (arn_cfg_route.no_hdr_edits), not per request: each new
 * generation's routes say it anew. Without edits nothing is added; a new
 * generation with a virtual host's request edit (a value taken from each
 * request, %REQ()%, computed per request) and the table's response edit
 * has them applied; one with a weighted cluster's edit, that one; and one
 * without any, none again (the routes of a new generation, not the old
 * ones' flags).
 */
static void test_route_edits_follow_new_generation(void **state)
{
	(void)state;
	start(4, jlistener_levels("", "", "", NULL));
	struct arn_tcp_conn *u = NULL;
	const char *resp;
	static const char rq1[] = "GET /1 HTTP/1.1\r\nHost: a\r\nx-in: one\r\n\r\n";
	static const char rq2[] = "GET /2 HTTP/1.1\r\nHost: a\r\nx-in: two\r\n\r\n";

	struct arn_tcp_conn *c = client();
	const char *sent = edit_exchange(c, &u, rq1, &resp);
	want_in(sent, "GET /1 HTTP/1.1\r\n");
	want_not_in(sent, "x-v:");
	want_not_in(resp, "x-t:");

	apply(L, "2",
	      jlistener_levels(",\"response_headers_to_add\":[{\"header\":{\"key\":\"x-t\","
			       "\"value\":\"t\"}}]",
			       ",\"request_headers_to_add\":[{\"header\":{\"key\":\"x-v\","
			       "\"value\":\"%REQ(x-in)%\"}}]",
			       "", NULL));
	c = client();
	sent = edit_exchange(c, &u, rq1, &resp);
	want_in(sent, "x-v: one\r\n");
	want_in(resp, "x-t: t\r\n");
	sent = edit_exchange(c, &u, rq2, &resp); /* the same route: its value anew */
	want_in(sent, "x-v: two\r\n");
	want_not_in(sent, "x-v: one");
	want_in(resp, "x-t: t\r\n");

	apply(
	    L, "3",
	    jlistener_levels("", "", "",
			     "\"weighted_clusters\":{\"clusters\":[{\"name\":\"web\",\"weight\":1,"
			     "\"request_headers_to_add\":[{\"header\":{\"key\":\"x-w\","
			     "\"value\":\"w\"}}],\"response_headers_to_add\":[{\"header\":{"
			     "\"key\":\"x-wr\",\"value\":\"%REQ(x-in)%\"}}]}]}"));
	c = client();
	sent = edit_exchange(c, &u, rq2, &resp);
	want_in(sent, "x-w: w\r\n");
	want_not_in(sent, "x-v:");
	want_not_in(resp, "x-t:");
	want_in(resp, "x-wr: two\r\n"); /* the request's header, in the response */

	apply(L, "4",
	      jlistener_levels(
		  "", "",
		  ",\"response_headers_to_remove\":[\"x-up\"],\"request_headers_to_add\":"
		  "[{\"header\":{\"key\":\"x-r\",\"value\":\"r\"}}]",
		  NULL));
	c = client();
	sent = edit_exchange(c, &u, rq1, &resp);
	want_in(sent, "x-r: r\r\n");
	want_not_in(sent, "x-w:");

	apply(L, "5", jlistener_levels("", "", "", NULL));
	c = client();
	sent = edit_exchange(c, &u, rq1, &resp);
	want_not_in(sent, "x-r:");
	want_not_in(sent, "x-w:");
	want_not_in(sent, "x-v:");
	want_not_in(resp, "x-t:");
	teardown(NULL);
}

/*
 * response_headers_to_add's substitutions read what Envoy's formatters
 * read (HeaderParser::evaluateHeaders with the request and response
 * headers and the stream info): %REQ()% is the request's header, and
 * %DOWNSTREAM_REMOTE_ADDRESS% the client the connection manager took from
 * X-Forwarded-For (use_remote_address false: behind a proxy, port 0),
 * not the peer; the local and direct remote addresses are the
 * connection's, %PROTOCOL% the request's. The same in a local reply's
 * route edits (a direct response). Before, a response's %REQ()% was
 * empty (the header dropped), its client the load balancer, its local
 * address 0.0.0.0:0.
 */
static void test_resp_edits_substitute_like_envoy(void **state)
{
	(void)state;
	static const char adds[] =
	    "\"response_headers_to_add\":["
	    "{\"header\":{\"key\":\"x-rc\",\"value\":\"%DOWNSTREAM_REMOTE_ADDRESS%\"}},"
	    "{\"header\":{\"key\":\"x-rq\",\"value\":\"%REQ(x-in)%\"}},"
	    "{\"header\":{\"key\":\"x-pr\",\"value\":\"%PROTOCOL%\"}},"
	    "{\"header\":{\"key\":\"x-dl\",\"value\":\"%DOWNSTREAM_LOCAL_ADDRESS%\"}},"
	    "{\"header\":{\"key\":\"x-dr\",\"value\":"
	    "\"%DOWNSTREAM_DIRECT_REMOTE_ADDRESS_WITHOUT_PORT% %DOWNSTREAM_REMOTE_PORT%\"}}]";
	static char routes[2048];
	snprintf(routes, sizeof(routes),
		 "{\"match\":{\"prefix\":\"/local\"},\"direct_response\":{\"status\":200},%s},"
		 "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"},%s}",
		 adds, adds);
	start(4, jlistener("", routes));
	static const char rq[] = "GET /1 HTTP/1.0\r\nHost: a\r\nx-in: one\r\n"
				 "X-Forwarded-For: 203.0.113.7\r\n\r\n";
	struct arn_tcp_conn *u = NULL;
	const char *resp;
	struct arn_tcp_conn *c = client();
	size_t coff = c->tx_len;
	send_s(c, rq);
	assert_true(upstream_pending());
	u = upstream_accepts();
	poll_ms(1);
	send_s(u, "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
	poll_ms(1);
	resp = c->tx + coff;
	want_in(resp, "HTTP/1.1 200 OK\r\n");
	want_in(resp, "x-rc: 203.0.113.7:0\r\n");
	want_in(resp, "x-rq: one\r\n");
	want_in(resp, "x-pr: HTTP/1.0\r\n");
	want_in(resp, "x-dl: 198.18.0.2:80\r\n");
	want_in(resp, "x-dr: 198.18.1.1 0\r\n"); /* the client's port: none (XFF) */

	c = client();
	coff = c->tx_len;
	send_s(c, "GET /local HTTP/1.1\r\nHost: a\r\nx-in: two\r\n"
		  "X-Forwarded-For: 203.0.113.9\r\n\r\n");
	poll_ms(1);
	resp = c->tx + coff;
	want_in(resp, "HTTP/1.1 200 OK\r\n");
	want_in(resp, "x-rc: 203.0.113.9:0\r\n");
	want_in(resp, "x-rq: two\r\n");
	want_in(resp, "x-pr: HTTP/1.1\r\n");
	want_in(resp, "x-dl: 198.18.0.2:80\r\n");
	teardown(NULL);
}

/* A local reply (here a direct response) whose route edits do not fit its
 * slots (63: one stays for the health check header) is a 500 without
 * them, not the reply without its headers. */
static void test_local_reply_edits_fail_closed(void **state)
{
	(void)state;
	static char routes[16384];
	for (int adds = 63; adds <= 64; adds++) {
		int k =
		    snprintf(routes, sizeof(routes),
			     "{\"match\":{\"prefix\":\"/\"},\"direct_response\":{\"status\":200},"
			     "\"response_headers_to_add\":[");
		for (int i = 0; i < adds; i++)
			k += snprintf(routes + k, sizeof(routes) - (size_t)k,
				      "%s{\"header\":{\"key\":\"x-add-%d\",\"value\":\"v\"}}",
				      i ? "," : "", i);
		snprintf(routes + k, sizeof(routes) - (size_t)k, "]}");
		start(4, jlistener("", routes));
		struct arn_tcp_conn *c = client();
		send_s(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
		poll_ms(1);
		if (adds == 63) {
			assert_true(answered(c, "HTTP/1.1 200 OK\r\n"));
			want_in(c->tx, "x-add-62: v\r\n");
			assert_int_equal(stat("http.in.rs_edit_overflow"), 0);
		} else {
			assert_true(answered(c, "HTTP/1.1 500"));
			want_not_in(c->tx, "x-add-");
			assert_int_equal(stat("http.in.rs_edit_overflow"), 1);
		}
		teardown(NULL);
	}
}

/* A virtual host that requires TLS redirects plain text to https; a
 * Location too long for the text is refused, never proxied in plain text
 * instead (before issue 12 it went to the cluster). The Location is
 * "https://a" and the path: 9 + n bytes and a NUL in 4 KB. */
static void test_require_tls_redirect_fails_closed(void **state)
{
	(void)state;
	snprintf(jbuf, sizeof(jbuf),
		 "{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
		 "\"port_value\":80}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","
		 "\"typed_config\":{" HCM_AT ",\"stat_prefix\":\"in\",\"route_config\":{"
		 "\"name\":\"r\",\"virtual_hosts\":[{\"name\":\"vh\",\"domains\":[\"*\"],"
		 "\"require_tls\":\"ALL\",\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{"
		 "\"cluster\":\"web\"}}]}]},\"http_filters\":[" ROUTER "]}}]}]}");
	static char lj[sizeof(jbuf)];
	memcpy(lj, jbuf, sizeof(lj));
	start(4, lj);
	struct arn_tcp_conn *c = client();
	send_path(c, "/", HTTP_TEXT - 1 - 9, "");
	poll_ms(1);
	assert_true(answered(c, "HTTP/1.1 301"));
	want_in(c->tx, "location: https://a/aaa");
	c = client();
	send_path(c, "/", HTTP_TEXT - 9, "");
	poll_ms(1);
	if (!answered(c, "HTTP/1.1 500"))
		fail_msg("got '%.200s'", c->tx ? c->tx : "");
	assert_int_equal(upstream_pending(), 0);
	assert_int_equal(stat("http.in.rq_edit_overflow"), 1);
}

/* Issue 22: the next hop of an endpoint a generation adds is resolved on
 * every worker when the generation is synced, before any request; an
 * endpoint that stays is not asked for again. */
static void test_new_endpoints_resolved_ahead(void **state)
{
	(void)state;
	n_resolved = 0;
	start(4, jlistener("", DIRECT_OK)); /* cluster web: 198.18.0.10 */
	assert_int_equal(n_resolved, 1);
	assert_int_equal(resolved[0], (198u << 24) | (18u << 16) | 10);
	/* the same endpoint again (a new version): nothing new to resolve */
	apply(C, "2",
	      "{\"name\":\"web\",\"type\":\"STATIC\",\"connect_timeout\":\"1s\","
	      "\"load_assignment\":{\"cluster_name\":\"web\",\"endpoints\":[{\"lb_endpoints\":[{"
	      "\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"198.18.0.10\","
	      "\"port_value\":8080}}}}]}]}}");
	assert_int_equal(n_resolved, 1);
	/* a second endpoint: resolved at once, and only it */
	apply(C, "3",
	      "{\"name\":\"web\",\"type\":\"STATIC\",\"connect_timeout\":\"1s\","
	      "\"load_assignment\":{\"cluster_name\":\"web\",\"endpoints\":[{\"lb_endpoints\":[{"
	      "\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"198.18.0.10\","
	      "\"port_value\":8080}}}},{\"endpoint\":{\"address\":{\"socket_address\":{"
	      "\"address\":\"198.18.0.11\",\"port_value\":8080}}}}]}]}}");
	assert_int_equal(n_resolved, 2);
	assert_int_equal(resolved[1], (198u << 24) | (18u << 16) | 11);
}

/* ---- a generation's work is what changed (issue 17 item 5) ------------------------------- */

/* Clusters "c<i>" for i in [from, to), one endpoint 198.18.<i/250>.<i%250+1>
 * (port @p port), in one batch. */
static void apply_clusters(unsigned from, unsigned to, unsigned port, const char *version)
{
	size_t n = to - from;
	struct arn_config_resource_in *in = calloc(n, sizeof(*in));
	char(*names)[16] = calloc(n, sizeof(*names));
	assert_non_null(in);
	assert_non_null(names);
	upb_Arena *a = upb_Arena_New();
	const upb_MessageDef *md = arn_proto_msgdef(strrchr(C, '/') + 1);
	for (size_t k = 0; k < n; k++) {
		unsigned i = from + (unsigned)k;
		char j[512];
		snprintf(names[k], sizeof(names[k]), "c%u", i);
		snprintf(
		    j, sizeof(j),
		    "{\"name\":\"%s\",\"type\":\"STATIC\",\"load_assignment\":{\"cluster_name\":"
		    "\"%s\",\"endpoints\":[{\"lb_endpoints\":[{\"endpoint\":{\"address\":{"
		    "\"socket_address\":{\"address\":\"198.18.%u.%u\",\"port_value\":%u}}}}]}]}}",
		    names[k], names[k], i / 250, i % 250 + 1, port);
		struct arn_sb err = ARN_SB_INIT;
		upb_Message *m = arn_proto_from_json(j, strlen(j), md, a, &err);
		assert_non_null(m);
		arn_sb_free(&err);
		in[k].name = names[k];
		in[k].version = version;
		in[k].bytes = arn_proto_encode(m, md, a, &in[k].len);
	}
	arn_config_result_free(&res);
	assert_int_equal(arn_config_apply(st, C, in, n, NULL, 0, 0, &res), 0);
	assert_true(res.accepted);
	assert_int_equal(res.n_errors, 0);
	upb_Arena_Free(a);
	free(names);
	free(in);
	if (!apply_no_poll)
		arn_http_poll();
}

static uint32_t c_addr(unsigned i)
{
	return (198u << 24) | (18u << 16) | ((i / 250) << 8) | (i % 250 + 1);
}

/* Envoy's cluster.<name>.update_* for an EDS cluster: each
 * ClusterLoadAssignment received is an attempt, then a success or a
 * rejection; its removal is update_empty. They were declared and never
 * counted. A ClusterLoadAssignment for a name no cluster has makes no
 * statistics (a control plane's names do not become scopes). */
static void test_cluster_update_counters(void **state)
{
	(void)state;
	start(4, jlistener("", DIRECT_OK));
	apply(C, "2",
	      "{\"name\":\"web\",\"type\":\"EDS\",\"connect_timeout\":\"1s\","
	      "\"eds_cluster_config\":{\"eds_config\":{\"ads\":{}}}}");
	assert_int_equal(stat("cluster.web.update_attempt"), 0);
	apply(ARN_TYPE_URL_CLA, "1",
	      "{\"cluster_name\":\"web\",\"endpoints\":[{\"lb_endpoints\":[{\"endpoint\":{"
	      "\"address\":{\"socket_address\":{\"address\":\"198.18.0.9\",\"port_value\":"
	      "8080}}}}]}]}");
	assert_int_equal(stat("cluster.web.update_attempt"), 1);
	assert_int_equal(stat("cluster.web.update_success"), 1);
	/* refused: a hostname in an EDS cluster's endpoints */
	upb_Arena *a = upb_Arena_New();
	const upb_MessageDef *md = arn_proto_msgdef(strrchr(ARN_TYPE_URL_CLA, '/') + 1);
	struct arn_sb err = ARN_SB_INIT;
	const char *bad = "{\"cluster_name\":\"web\",\"endpoints\":[{\"lb_endpoints\":[{"
			  "\"endpoint\":{\"address\":{\"socket_address\":{\"address\":"
			  "\"web.test\",\"port_value\":8080}}}}]}]}";
	upb_Message *m = arn_proto_from_json(bad, strlen(bad), md, a, &err);
	assert_non_null(m);
	struct arn_config_resource_in in = {"web", "2", NULL, 0};
	in.bytes = arn_proto_encode(m, md, a, &in.len);
	arn_config_result_free(&res);
	assert_int_equal(arn_config_apply(st, ARN_TYPE_URL_CLA, &in, 1, NULL, 0, 0, &res), 0);
	assert_false(res.accepted);
	/* and one for a name no cluster has */
	const char *ghost = "{\"cluster_name\":\"ghost\"}";
	m = arn_proto_from_json(ghost, strlen(ghost), md, a, &err);
	assert_non_null(m);
	struct arn_config_resource_in gin = {"ghost", "1", NULL, 0};
	gin.bytes = arn_proto_encode(m, md, a, &gin.len);
	arn_config_result_free(&res);
	assert_int_equal(arn_config_apply(st, ARN_TYPE_URL_CLA, &gin, 1, NULL, 0, 0, &res), 0);
	upb_Arena_Free(a);
	arn_sb_free(&err);
	arn_http_poll();
	assert_int_equal(stat("cluster.web.update_attempt"), 2);
	assert_int_equal(stat("cluster.web.update_success"), 1);
	assert_int_equal(stat("cluster.web.update_rejected"), 1);
	const char *gone[] = {"web"};
	arn_config_result_free(&res);
	assert_int_equal(arn_config_apply(st, ARN_TYPE_URL_CLA, NULL, 0, gone, 1, 0, &res), 0);
	arn_http_poll();
	assert_int_equal(stat("cluster.web.update_empty"), 1);
	assert_int_equal(stat("cluster.web.update_attempt"), 2);
	struct arn_stats_snapshot s;
	assert_int_equal(arn_stats_snapshot_take(&s), 0);
	for (size_t i = 0; i < s.n; i++)
		assert_null(strstr(s.v[i].name, "ghost"));
	arn_stats_snapshot_free(&s);
}

/* One changed cluster among N builds one cluster's runtime entries and
 * visits no other cluster (issue 17: the generations' cluster tries are
 * compared, and the snapshot's own trie of entries is path-copied); the
 * others' (cluster object, hosts and their counters) are the previous
 * snapshot's, by pointer. */
static void test_one_changed_cluster_builds_one(void **state)
{
	(void)state;
	enum { N = 2000 };
	start(4, jlistener("", DIRECT_OK));
	apply_clusters(0, N, 80, "1");
	assert_int_equal(http_rt_clusters_built(), N); /* the first time: all new */
	struct http_cluster_rt *c7 = http_rt_cluster("c7", 2, arn_cfg_hash("c7", 2));
	assert_non_null(c7);
	struct http_host *h7 = http_rt_host(c7, c_addr(7), 80);
	assert_non_null(h7);
	/* one cluster among N changes its endpoint's port */
	apply_clusters(1000, 1001, 81, "2");
	assert_int_equal(http_rt_clusters_built(), 1);
	assert_ptr_equal(http_rt_cluster("c7", 2, arn_cfg_hash("c7", 2)), c7);
	assert_ptr_equal(http_rt_host(c7, c_addr(7), 80), h7);
	struct http_cluster_rt *c1000 = http_rt_cluster("c1000", 5, arn_cfg_hash("c1000", 5));
	assert_non_null(c1000);
	assert_non_null(http_rt_host(c1000, c_addr(1000), 81));
	assert_null(http_rt_host(c1000, c_addr(1000), 80));
	assert_int_equal(stat("cluster.c1000.membership_total"), 1);
	assert_int_equal(stat("cluster.c7.membership_total"), 1);
	assert_int_equal(http_rt_clusters_walked(), 1);	 /* not the N others */
	assert_int_equal(http_rt_listeners_walked(), 0); /* the same listeners and routes */
	/* a listener change builds no cluster, and walks none: the clusters'
	 * part of the snapshot is the previous one (issue 17) */
	apply(L, "2", jlistener("\"generate_request_id\":false", DIRECT_OK));
	assert_int_equal(http_rt_clusters_built(), 0);
	assert_int_equal(http_rt_clusters_walked(), 0);
	assert_int_equal(http_rt_listeners_walked(), 1);
	assert_ptr_equal(http_rt_cluster("c7", 2, arn_cfg_hash("c7", 2)), c7);
	assert_ptr_equal(http_rt_host(c7, c_addr(7), 80), h7);
	assert_non_null(http_rt_host(c1000, c_addr(1000), 81));
	assert_int_equal(stat("cluster.c7.membership_total"), 1);
	/* ten changed: ten built, ten walked */
	apply_clusters(10, 20, 82, "3");
	assert_int_equal(http_rt_clusters_built(), 10);
	assert_int_equal(http_rt_clusters_walked(), 10);
	assert_non_null(
	    http_rt_host(http_rt_cluster("c15", 3, arn_cfg_hash("c15", 3)), c_addr(15), 82));
	assert_ptr_equal(http_rt_host(c7, c_addr(7), 80), h7);
	/* one removed: gone from the snapshot and the registry (its object
	 * lives while the previous snapshot holds it), nothing else walked */
	size_t registered = http_cluster_count();
	const char *gone[] = {"c1500"};
	arn_config_result_free(&res);
	assert_int_equal(arn_config_apply(st, C, NULL, 0, gone, 1, 0, &res), 0);
	arn_http_poll();
	assert_int_equal(http_rt_clusters_walked(), 1);
	assert_int_equal(http_rt_clusters_built(), 0);
	assert_null(http_rt_cluster("c1500", 5, arn_cfg_hash("c1500", 5)));
	assert_ptr_equal(http_rt_cluster("c7", 2, arn_cfg_hash("c7", 2)), c7);
	for (int i = 0; i < 3; i++) { /* the old snapshots' grace periods end */
		apply_clusters(1, 2, 83 + (unsigned)i, i == 0 ? "4" : i == 1 ? "5" : "6");
		assert_int_equal(http_rt_clusters_walked(), 1);
	}
	assert_int_equal(http_cluster_count(), registered - 1);
	/* an EDS cluster: its endpoints' change builds it alone */
	apply(C, "7",
	      "{\"name\":\"web\",\"type\":\"EDS\",\"connect_timeout\":\"1s\","
	      "\"eds_cluster_config\":{\"eds_config\":{\"ads\":{}}}}");
	apply(ARN_TYPE_URL_CLA, "1",
	      "{\"cluster_name\":\"web\",\"endpoints\":[{\"lb_endpoints\":[{\"endpoint\":{"
	      "\"address\":{\"socket_address\":{\"address\":\"198.18.0.9\",\"port_value\":"
	      "8080}}}}]}]}");
	struct http_cluster_rt *web = http_rt_cluster("web", 3, arn_cfg_hash("web", 3));
	assert_non_null(web);
	assert_non_null(http_rt_host(web, 0xc6120009u, 8080));
	apply(ARN_TYPE_URL_CLA, "2",
	      "{\"cluster_name\":\"web\",\"endpoints\":[{\"lb_endpoints\":[{\"endpoint\":{"
	      "\"address\":{\"socket_address\":{\"address\":\"198.18.0.10\",\"port_value\":"
	      "8080}}}}]}]}");
	assert_int_equal(http_rt_clusters_walked(), 1);
	assert_int_equal(http_rt_clusters_built(), 1);
	assert_null(http_rt_host(web, 0xc6120009u, 8080));
	assert_non_null(http_rt_host(web, 0xc612000au, 8080));
	assert_ptr_equal(http_rt_host(c7, c_addr(7), 80), h7);
	/* the balancer's view: the endpoints' hosts in the endpoints' order
	 * (the hosts are sorted), a cache per worker with room for each */
	apply(ARN_TYPE_URL_CLA, "3",
	      "{\"cluster_name\":\"web\",\"endpoints\":[{\"lb_endpoints\":["
	      "{\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"198.18.0.12\","
	      "\"port_value\":8080}}}},"
	      "{\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"198.18.0.10\","
	      "\"port_value\":8080}}}}]},{\"lb_endpoints\":["
	      "{\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"198.18.0.11\","
	      "\"port_value\":8080}}}}]}]}");
	struct http_lb_view lv;
	assert_true(http_rt_lb_view(web, 0, &lv));
	assert_int_equal(lv.n_hosts, 3);
	assert_int_equal(lv.n_ep_hosts, 3);
	assert_non_null(lv.eps);
	assert_int_equal(lv.eps->n_endpoints, 3);
	assert_ptr_equal(lv.ep_hosts[0], http_rt_host(web, 0xc612000cu, 8080));
	assert_ptr_equal(lv.ep_hosts[1], http_rt_host(web, 0xc612000au, 8080));
	assert_ptr_equal(lv.ep_hosts[2], http_rt_host(web, 0xc612000bu, 8080));
	assert_ptr_equal(lv.hosts[0], lv.ep_hosts[1]);
	assert_non_null(lv.cache);
	assert_int_equal(lv.cache->cap, 3);
	assert_null(lv.cache->eps); /* built by the first pick */
	assert_false(http_rt_lb_view(NULL, 0, &lv));
}

/* Issue 17: the snapshot changed where the generations differ says what a
 * snapshot built from nothing would, whatever the changes: random sets,
 * endpoint changes and removals of clusters, one or several per
 * generation, each checked against the configuration (every cluster's
 * object and host, and none for a removed one or a former endpoint). */
static void test_cluster_trie_follows_random_changes(void **state)
{
	(void)state;
	enum { N = 64 };
	int port[N] = {0}; /* 0: absent */
	start(4, jlistener("", DIRECT_OK));
	unsigned seed = 17;
	for (int round = 0; round < 120; round++) {
		int changes = 1 + (int)(rand_r(&seed) % 4);
		for (int k = 0; k < changes; k++) {
			unsigned i = rand_r(&seed) % N;
			char ver[16];
			snprintf(ver, sizeof(ver), "%d.%d", round, k);
			if (port[i] && rand_r(&seed) % 3 == 0) {
				char name[16];
				snprintf(name, sizeof(name), "c%u", i);
				const char *gone[] = {name};
				arn_config_result_free(&res);
				assert_int_equal(arn_config_apply(st, C, NULL, 0, gone, 1, 0, &res),
						 0);
				arn_http_poll();
				port[i] = 0;
			} else {
				port[i] = 80 + (int)(rand_r(&seed) % 3);
				apply_clusters(i, i + 1, (unsigned)port[i], ver);
			}
		}
		for (unsigned i = 0; i < N; i++) {
			char name[16];
			snprintf(name, sizeof(name), "c%u", i);
			size_t len = strlen(name);
			struct http_cluster_rt *c =
			    http_rt_cluster(name, len, arn_cfg_hash(name, len));
			if (!port[i]) {
				assert_null(c);
				continue;
			}
			assert_non_null(c);
			for (uint16_t p = 80; p < 83; p++)
				if (p == port[i])
					assert_non_null(http_rt_host(c, c_addr(i), p));
				else
					assert_null(http_rt_host(c, c_addr(i), p));
		}
	}
}

/* ---- the MCP gateway filter on the data path (issue 20, docs/mcp.md) ------------------------ */

/* Listener "l" whose HCM carries the MCP gateway filter (ToolSet "tools",
 * max_request_bytes @p max) before the router; other paths: DIRECT_OK. */
/* HCM fields the next start_mcp_with() adds (",\"access_log\":[...]"). */
static const char *mcp_hcm_extra = "";
/* request buffers the next start_mcp_with() gives the worker (0: 4) */
static unsigned mcp_streams;

static char mcp_lj[4096]; /* the listener start_mcp_with() applied */

static void start_mcp_with(unsigned max, const char *extra)
{
	char *lj = mcp_lj;
	snprintf(mcp_lj, sizeof(mcp_lj),
		 "{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
		 "\"port_value\":80}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","
		 "\"typed_config\":{" HCM_AT ",\"stat_prefix\":\"in\"%s,\"route_config\":{"
		 "\"name\":\"r\",\"virtual_hosts\":[{\"name\":\"vh\",\"domains\":[\"*\"],"
		 "\"routes\":[" DIRECT_OK "]}]},\"http_filters\":[{\"name\":\"arion.filters.http."
		 "mcp_gateway\",\"typed_config\":{\"@type\":\"type.googleapis.com/arion.extensions."
		 "filters.http.mcp_gateway.v3.McpGateway\",\"tds\":{\"config_name\":\"tools\"},"
		 "\"max_request_bytes\":%u%s}}," ROUTER "]}}]}]}",
		 mcp_hcm_extra, max, extra);
	(void)lj;
	mcp_hcm_extra = "";
	with_toolset = true;
	start(mcp_streams ? mcp_streams : 4, mcp_lj);
	mcp_streams = 0;
	with_toolset = false;
}

static void start_mcp(unsigned max)
{
	start_mcp_with(max, "");
}

#define MCP_INIT                                                                                   \
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":" \
	"\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}"

/* A new client POSTs @p body to /mcp (with session @p sid when not
 * NULL); what it got is in its tx once the poll ran. */
static struct arn_tcp_conn *mcp_post_on(struct arn_tcp_conn *c, const char *sid, const char *body);
/* header lines ("name: value\r\n") the posts add while set */
static const char *mcp_post_headers = "";

static struct arn_tcp_conn *mcp_post(const char *sid, const char *body)
{
	return mcp_post_on(client(), sid, body);
}

/* As mcp_post, from client connection @p c (client1(): worker lc1's). */
static struct arn_tcp_conn *mcp_post_on(struct arn_tcp_conn *c, const char *sid, const char *body)
{
	static char req[8192];
	assert_non_null(c);
	snprintf(
	    req, sizeof(req),
	    "POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
	    "Accept: application/json, text/event-stream\r\n%s%s%s%sContent-Length: %zu\r\n\r\n%s",
	    sid ? "Mcp-Session-Id: " : "", sid ? sid : "", sid ? "\r\n" : "", mcp_post_headers,
	    strlen(body), body);
	send_s(c, req);
	poll_ms(1);
	return c;
}

/* The MCP gateway with HttpFilter.disabled: its path is routed like any
 * other (a direct response here) unless the matched route names the
 * filter in typed_per_filter_config (a FilterConfig with an optional
 * config of a type Arion lacks: on). */
static void test_mcp_disabled_until_a_route_names_it(void **state)
{
	(void)state;
	snprintf(mcp_lj, sizeof(mcp_lj),
		 "{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
		 "\"port_value\":80}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","
		 "\"typed_config\":{" HCM_AT ",\"stat_prefix\":\"in\",\"route_config\":{"
		 "\"name\":\"r\",\"virtual_hosts\":[{\"name\":\"vh\",\"domains\":[\"*\"],"
		 "\"routes\":[{\"match\":{\"prefix\":\"/mcp\",\"headers\":[{\"name\":\"x-on\","
		 "\"present_match\":true}]},\"direct_response\":{\"status\":200},"
		 "\"typed_per_filter_config\":{\"gw\":{\"@type\":\"type.googleapis.com/"
		 "envoy.config.route.v3.FilterConfig\",\"is_optional\":true,\"config\":{"
		 "\"@type\":\"type.googleapis.com/google.protobuf.Empty\"}}}}," DIRECT_OK "]}]},"
		 "\"http_filters\":[{\"name\":\"gw\",\"disabled\":true,\"typed_config\":{"
		 "\"@type\":\"type.googleapis.com/arion.extensions.filters.http.mcp_gateway.v3."
		 "McpGateway\",\"tds\":{\"config_name\":\"tools\"}}}," ROUTER "]}}]}]}");
	arn_config_set_features(ARN_CONFIG_FEATURE_L4 | ARN_CONFIG_FEATURE_HTTP_L4);
	with_toolset = true;
	start(4, mcp_lj);
	with_toolset = false;
	struct arn_tcp_conn *c = mcp_post(NULL, MCP_INIT);
	want_in(c->tx, "HTTP/1.1 200 OK\r\n");
	want_in(c->tx, "\r\n\r\nok");
	assert_null(strstr(c->tx, "protocolVersion"));
	mcp_post_headers = "x-on: 1\r\n";
	c = mcp_post(NULL, MCP_INIT);
	mcp_post_headers = "";
	want_in(c->tx, "protocolVersion");
	arn_config_set_features(0);
}

/* The mcp-session-id a response carries (48 hex digits), into @p out. */
static void session_of(const struct arn_tcp_conn *c, char out[64])
{
	const char *p = c->tx ? strstr(c->tx, "mcp-session-id: ") : NULL;
	if (!p)
		fail_msg("no mcp-session-id in:\n%s", c->tx ? c->tx : "");
	p += 16;
	size_t n = strcspn(p, "\r");
	assert_int_equal(n, 48);
	memcpy(out, p, n);
	out[n] = 0;
	for (size_t i = 0; i < n; i++)
		assert_non_null(strchr("0123456789abcdef", out[i]));
}

/*
 * The filter answers its path itself: initialize opens a session whose id
 * comes back in mcp-session-id (as JSON, content-type application/json),
 * a notification gets an empty 202, ping is answered, a request without a
 * session 400, DELETE ends the session and then it is 404 (-32001, the
 * SDK's code); other paths are routed as before and nothing went upstream.
 */
static void test_mcp_sessions_answered_by_filter(void **state)
{
	(void)state;
	start_mcp(1048576);
	struct arn_tcp_conn *c = mcp_post(NULL, MCP_INIT);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("initialize: got '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "content-type: application/json");
	want_in(c->tx, "\"protocolVersion\":\"2025-06-18\"");
	want_in(c->tx, "\"serverInfo\"");
	char sid[64];
	session_of(c, sid);

	c = mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
	if (!answered(c, "HTTP/1.1 202"))
		fail_msg("initialized: got '%s'", c->tx ? c->tx : "");
	want_not_in(c->tx, "content-type");

	c = mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}");
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("ping: got '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}");
	want_in(c->tx, sid);

	c = mcp_post(NULL, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
	if (!answered(c, "HTTP/1.1 400"))
		fail_msg("no session: got '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "\"code\":-32000");

	c = client();
	char req[256];
	snprintf(req, sizeof(req), "DELETE /mcp HTTP/1.1\r\nHost: a\r\nMcp-Session-Id: %s\r\n\r\n",
		 sid);
	send_s(c, req);
	poll_ms(1);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("DELETE: got '%s'", c->tx ? c->tx : "");

	c = mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\"}");
	if (!answered(c, "HTTP/1.1 404"))
		fail_msg("ended session: got '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "\"code\":-32001");

	/* another worker's session (its id names worker 1): refused with a
	 * JSON-RPC error that says why, and counted, until requests are
	 * handed between workers */
	c = mcp_post("01000000000000000000000000000000000000000000000a",
		     "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}");
	if (!answered(c, "HTTP/1.1 404"))
		fail_msg("another worker's session: got '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "\"code\":-32001");
	want_in(c->tx, "another worker");
	assert_int_equal(stat("http.in.mcp_session_elsewhere"), 1);

	/* the GET stream is not served yet: 405, which the SDK's client
	 * takes for "no GET stream" */
	c = client();
	send_s(c, "GET /mcp HTTP/1.1\r\nHost: a\r\nAccept: text/event-stream\r\n\r\n");
	poll_ms(1);
	if (!answered(c, "HTTP/1.1 405"))
		fail_msg("GET: got '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "allow: ");

	c = client();
	send_s(c, "GET /mcpx HTTP/1.1\r\nHost: a\r\n\r\n");
	poll_ms(1);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("/mcpx: got '%s'", c->tx ? c->tx : "");
	assert_int_equal(upstream_pending(), 0);
	assert_int_equal(stat("http.in.mcp_session_opened"), 1);
	assert_int_equal(stat("http.in.mcp_session_closed"), 1);
}

/*
 * max_request_bytes: a Content-Length over it is refused 413 with a
 * JSON-RPC error before the body is read; a chunked body is refused when
 * its bytes pass it. A body fed one byte at a time is read whole.
 */
static void test_mcp_body_limit(void **state)
{
	(void)state;
	start_mcp(300);
	static char big[400];
	memset(big, ' ', sizeof(big) - 1);
	big[0] = '{';
	big[sizeof(big) - 2] = '}';
	struct arn_tcp_conn *c = mcp_post(NULL, big);
	if (!answered(c, "HTTP/1.1 413"))
		fail_msg("over the limit: got '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "content-type: application/json");
	want_in(c->tx, "\"code\":-32600");

	c = client();
	char req[1024];
	snprintf(req, sizeof(req),
		 "POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
		 "Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
		 "%x\r\n%s\r\n0\r\n\r\n",
		 (unsigned)strlen(big), big);
	send_s(c, req);
	poll_ms(1);
	if (!answered(c, "HTTP/1.1 413"))
		fail_msg("chunked over the limit: got '%s'", c->tx ? c->tx : "");
	assert_int_equal(stat("http.in.mcp_rq_too_large"), 2);

	/* the same initialize a byte at a time */
	c = client();
	snprintf(req, sizeof(req),
		 "POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
		 "Accept: application/json, text/event-stream\r\nContent-Length: %zu\r\n\r\n%s",
		 strlen(MCP_INIT), MCP_INIT);
	for (size_t i = 0; req[i]; i++)
		send_n(c, req + i, 1);
	poll_ms(1);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("byte at a time: got '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "mcp-session-id: ");
}

/*
 * The fake backend (cluster web) answers the request on @p u with @p body
 * (content type @p ctype), "$ID" in it replaced by the request's JSON-RPC
 * id, @p extra headers, then closes (connection: close). NULL @p body: an
 * empty 202.
 */
static void backend_answer_on(struct arn_tcp_conn *u, const char *ctype, const char *extra,
			      const char *body)
{
	char id[128] = "null";
	const char *p = strstr(u->tx, "\r\n\r\n");
	p = p ? strstr(p, "\"id\":") : NULL;
	if (p) {
		p += 5;
		size_t n = strcspn(p, ",}");
		snprintf(id, sizeof(id), "%.*s", (int)n, p);
	}
	static char b[4096], resp[8192];
	b[0] = 0;
	if (body) {
		const char *q = strstr(body, "$ID");
		if (q)
			snprintf(b, sizeof(b), "%.*s%s%s", (int)(q - body), body, id, q + 3);
		else
			snprintf(b, sizeof(b), "%s", body);
	}
	snprintf(resp, sizeof(resp),
		 "HTTP/1.1 %s\r\n%s%s%s%scontent-length: %zu\r\nconnection: close\r\n\r\n%s",
		 body ? "200 OK" : "202 Accepted", ctype ? "content-type: " : "",
		 ctype ? ctype : "", ctype ? "\r\n" : "", extra ? extra : "", strlen(b), b);
	send_s(u, resp);
	poll_ms(1);
}

/* The same, on the connection the gateway opened next, which must carry
 * @p want. */
static void backend_answers(const char *want, const char *ctype, const char *extra,
			    const char *body)
{
	struct arn_tcp_conn *u = upstream_accepts();
	want_in(u->tx, want);
	backend_answer_on(u, ctype, extra, body);
}

#define BE_INIT                                                                                    \
	"{\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{\"protocolVersion\":\"2025-06-18\","          \
	"\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"b\",\"version\":\"1\"}}}"
#define BE_TOOLS                                                                                   \
	"{\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{\"tools\":[{\"name\":\"echo\","               \
	"\"inputSchema\":{\"type\":\"object\"}},{\"name\":\"secret\",\"inputSchema\":{\"type\":"   \
	"\"object\"}}]}}"

/* A client session with the gateway: its id into @p sid. */
static void mcp_session(char sid[64])
{
	struct arn_tcp_conn *c = mcp_post(NULL, MCP_INIT);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("initialize: got '%s'", c->tx ? c->tx : "");
	session_of(c, sid);
}

/*
 * session_idle_timeout is the filter's: with 2 s a session that saw no
 * request for 2 s is forgotten (404, -32001) while one used within that
 * time lives on (the default would keep both for 30 minutes).
 */
static void test_mcp_session_idle_timeout(void **state)
{
	(void)state;
	start_mcp_with(1048576, ",\"session_idle_timeout\":\"2s\"");
	char sid[64], sid2[64];
	mcp_session(sid);
	mcp_session(sid2);
	poll_ms(1500);
	struct arn_tcp_conn *c =
	    mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}");
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("ping at 1.5 s: got '%s'", c->tx ? c->tx : "");
	poll_ms(1000); /* sid: 1 s since the ping; sid2: 2.5 s idle */
	c = mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\"}");
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("ping after 1 s: got '%s'", c->tx ? c->tx : "");
	c = mcp_post(sid2, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}");
	if (!answered(c, "HTTP/1.1 404"))
		fail_msg("ping of an idle session: got '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "-32001");
	poll_ms(2000);
	c = mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"ping\"}");
	if (!answered(c, "HTTP/1.1 404"))
		fail_msg("ping after 2 s idle: got '%s'", c->tx ? c->tx : "");
}

/*
 * A sub-request's response head (the gateway's call to an MCP backend) in
 * more segments than its pins hold, its mcp-session-id line past the 64th:
 * the session the gateway keeps is the backend's, read from a line that
 * stays valid. The line used to be a slice of a segment given back once
 * parsed (no pin: the pins had overflowed, which sub-requests do not
 * test), read after the pool had reused it.
 */
static void scribble_free_mbufs(void);

static void test_mcp_backend_head_in_many_segments(void **state)
{
	(void)state;
	start_mcp(1048576);
	char sid[64];
	struct arn_tcp_conn *c = mcp_post(NULL, MCP_INIT);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("initialize: got '%s'", c->tx ? c->tx : "");
	session_of(c, sid);
	c = mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
	struct arn_tcp_conn *u = upstream_accepts();
	want_in(u->tx, "\"method\":\"initialize\"");
	char id[64] = "null";
	const char *p = strstr(strstr(u->tx, "\r\n\r\n"), "\"id\":");
	if (p)
		snprintf(id, sizeof(id), "%.*s", (int)strcspn(p + 5, ",}"), p + 5);
	char body[512];
	snprintf(
	    body, sizeof(body),
	    "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"protocolVersion\":\"2025-06-18\","
	    "\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"b\",\"version\":\"1\"}}}",
	    id);
	send_s(u, "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n");
	poll_ms(1);
	for (int i = 0; i < HTTP_PIN_MAX + 8; i++) {
		char line[32];
		snprintf(line, sizeof(line), "x-pad-%02d: %d\r\n", i, i);
		send_s(u, line);
		poll_ms(1);
	}
	send_s(u, "mcp-session-id: B1-backend-session\r\n");
	poll_ms(1);
	scribble_free_mbufs(); /* a segment given back reads '#' from here on */
	char tail[1024];
	snprintf(tail, sizeof(tail), "content-length: %zu\r\nconnection: close\r\n\r\n%s",
		 strlen(body), body);
	send_s(u, tail);
	poll_ms(1);
	backend_answers("notifications/initialized", NULL, NULL, NULL);
	struct arn_tcp_conn *u3 = upstream_accepts();
	want_in(u3->tx, "\"method\":\"tools/list\"");
	want_in(u3->tx, "mcp-session-id: B1-backend-session\r\n");
	backend_answer_on(u3, "application/json", NULL, BE_TOOLS);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("tools/list: got '%s'", c->tx ? c->tx : "");
}

/*
 * tools/list and tools/call reach the backend through its cluster: the
 * backend's own session is opened first (initialize, its mcp-session-id
 * kept, notifications/initialized), its tools come back prefixed
 * ("b__echo"), and a call is routed to it with its own name and the
 * backend's session id; its event-stream answer is read and relayed as
 * JSON with the client's id. The cluster counts the requests.
 */
static void test_mcp_tools_through_backend(void **state)
{
	(void)state;
	start_mcp(1048576);
	char sid[64];
	struct arn_tcp_conn *c = mcp_post(NULL, MCP_INIT);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("initialize: got '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "\"prompts\":{},\"resources\":{}");
	session_of(c, sid);
	c = mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
	assert_int_equal(c->tx_len, 0); /* waits for the backend */
	backend_answers("\"method\":\"initialize\"", "application/json", "mcp-session-id: B1\r\n",
			BE_INIT);
	backend_answers("notifications/initialized", NULL, NULL, NULL);
	backend_answers("\"method\":\"tools/list\"", "application/json", NULL, BE_TOOLS);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("tools/list: got '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "\"id\":2,");
	want_in(c->tx, "\"name\":\"b__echo\"");
	want_in(c->tx, "\"name\":\"b__secret\"");
	/* the backend's initialize offered tools only: a client's initialize
	 * from now on says so (merged), where the first, before any backend
	 * had answered, offered everything the gateway serves */
	c = mcp_post(NULL, MCP_INIT);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("second initialize: got '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "\"capabilities\":{\"tools\":{\"listChanged\":true}},");
	want_not_in(c->tx, "\"prompts\"");

	c = mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{"
			  "\"name\":\"b__echo\",\"arguments\":{\"x\":1}}}");
	assert_int_equal(c->tx_len, 0);
	struct arn_tcp_conn *u = upstream_accepts();
	want_in(u->tx, "mcp-session-id: B1");
	want_in(u->tx, "\"name\":\"echo\"");
	want_not_in(u->tx, "b__echo");
	static const char sse[] =
	    ": hi\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":"
	    "[{\"type\":\"text\",\"text\":\"echoed\"}]}}\n\n";
	char resp[512];
	snprintf(resp, sizeof(resp),
		 "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: %zu\r\n"
		 "connection: close\r\n\r\n%s",
		 strlen(sse), sse);
	send_s(u, resp);
	poll_ms(1);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("tools/call: got '%s'", c->tx ? c->tx : "");
	want_in(c->tx,
		"\"id\":3,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"echoed\"}]}");
	want_in(c->tx, "content-type: application/json");
	assert_int_equal(stat("cluster.web.upstream_rq_total"), 4);
	assert_int_equal(stat("http.in.mcp_tools_call"), 1);

	/* a progress notification before the answer: the client gets an
	 * event stream (chunked), the notification as it came, then the
	 * answer, then the stream's end */
	c = mcp_post(sid,
		     "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{"
		     "\"name\":\"b__echo\",\"arguments\":{},\"_meta\":{\"progressToken\":9}}}");
	u = upstream_accepts();
	static const char prog[] =
	    "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","
	    "\"params\":{\"progressToken\":9,\"progress\":1}}\n\n";
	snprintf(
	    resp, sizeof(resp),
	    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"
	    "connection: close\r\n\r\n%zx\r\n%s\r\n",
	    strlen(prog), prog);
	send_s(u, resp);
	poll_ms(1);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("streamed call: got '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "content-type: text/event-stream");
	want_in(c->tx, "transfer-encoding: chunked");
	want_in(c->tx, "\"method\":\"notifications/progress\"");
	want_not_in(c->tx, "\"id\":4,\"result\"");
	/* the backend keeps quiet: the client's stream gets ": ping" comments,
	 * which keep the stream's idle timeout (5 min) from cutting it */
	assert_int_equal(stat("http.in.mcp_ping"), 0);
	run_ms(16000); /* within the backend's timeout (30 s) */
	assert_int_equal(stat("http.in.mcp_ping"), 1);
	want_in(c->tx, ": ping\n\n");
	static const char fin[] =
	    "data: {\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"content\":[]}}\n\n";
	snprintf(resp, sizeof(resp), "%zx\r\n%s\r\n0\r\n\r\n", strlen(fin), fin);
	send_s(u, resp);
	poll_ms(1);
	want_in(
	    c->tx,
	    "data: {\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"content\":[]}}\n\n\r\n0\r\n\r\n");
	assert_int_equal(stat("http.in.mcp_streamed"), 1);
	/* per backend: the tools/list page and the two calls */
	assert_int_equal(stat("mcp.tools.backend.b.rq_total"), 3);
	assert_int_equal(stat("mcp.tools.backend.b.tools_call"), 2);
	assert_int_equal(stat("mcp.tools.backend.b.rq_error"), 0);
	/* in Prometheus the ToolSet and the backend are tags, not parts of
	 * the name: envoy_mcp_backend_rq_total{arion_toolset="tools",
	 * arion_mcp_backend="b"}, as the per-tool stats' */
	assert_string_equal(stat_prom("mcp.tools.backend.b.rq_total"),
			    "mcp.backend rq_total arion_toolset=tools arion_mcp_backend=b");
	assert_string_equal(stat_prom("mcp.tools.backend.b.rq_time"),
			    "mcp.backend rq_time arion_toolset=tools arion_mcp_backend=b");
	/* per tool, by the name the client called (the 16 s wait counted) */
	assert_int_equal(stat("mcp.tools.tool.b__echo.calls"), 2);
	assert_int_equal(stat("mcp.tools.tool.b__echo.errors"), 0);
	struct arn_stats_hist h = hist("mcp.tools.tool.b__echo.rq_time");
	assert_int_equal(h.count, 2);
	assert_true(h.sum_us >= 16000000);
	/* the 16 s call in the bucket le 30000 (ms), the other below it */
	assert_int_equal(arn_stats_hist_bounds_us[13], 30000000);
	assert_int_equal(h.buckets[13], 1);
	assert_int_equal(stat("mcp.tool_stats.0.rows"), 1);
}

/*
 * A tool the ToolSet denies is absent from tools/list and a call to it is
 * answered "Unknown tool" (-32602) without reaching the backend; a
 * backend that fails is named in the error the client gets.
 */
static void test_mcp_denied_tool_and_backend_failure(void **state)
{
	(void)state;
	start_mcp(1048576);
	apply(ARN_TYPE_URL_TOOLSET, "2",
	      "{\"name\":\"tools\",\"backends\":[{\"name\":\"b\",\"cluster\":\"web\"}],"
	      "\"tool_filter\":{\"deny\":[{\"name\":{\"exact\":\"secret\"}}]}}");
	char sid[64];
	mcp_session(sid);
	struct arn_tcp_conn *c =
	    mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
	backend_answers("\"method\":\"initialize\"", "application/json", "mcp-session-id: B1\r\n",
			BE_INIT);
	backend_answers("notifications/initialized", NULL, NULL, NULL);
	backend_answers("\"method\":\"tools/list\"", "application/json", NULL, BE_TOOLS);
	want_in(c->tx, "\"name\":\"b__echo\"");
	want_not_in(c->tx, "secret");

	c = mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{"
			  "\"name\":\"b__secret\",\"arguments\":{}}}");
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("denied call: got '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "\"code\":-32602");
	assert_int_equal(upstream_pending(), 0);
	assert_int_equal(stat("http.in.mcp_tool_unknown"), 1);

	/* the backend answers 500: the client is told which backend */
	c = mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{"
			  "\"name\":\"b__echo\",\"arguments\":{}}}");
	struct arn_tcp_conn *u = upstream_accepts();
	send_s(u, "HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\n"
		  "connection: close\r\n\r\n");
	poll_ms(1);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("failed backend: got '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "\"code\":-32000");
	want_in(c->tx, "backend 'b': HTTP 500");
	assert_int_equal(stat("http.in.mcp_backend_error"), 1);
	assert_int_equal(stat("mcp.tools.backend.b.rq_error"), 1);
	/* the refused tool made no row: only routed calls count per tool */
	assert_int_equal(stat("mcp.tools.tool.b__echo.calls"), 1);
	assert_int_equal(stat("mcp.tools.tool.b__echo.errors"), 1);
	assert_int_equal(stat("mcp.tool_stats.0.rows"), 1);

	/* the client goes away while its call waits for the backend: the
	 * sub-request is cancelled and its connection attempt dropped */
	c = mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{"
			  "\"name\":\"b__echo\",\"arguments\":{}}}");
	assert_int_equal(upstream_pending(), 1);
	assert_int_equal(stat("cluster.web.upstream_rq_active"), 1);
	c->closed = c->close_pending = true;
	c->close_reason = -ECONNRESET;
	poll_ms(1);
	assert_int_equal(upstream_pending(), 0);
	assert_int_equal(stat("cluster.web.upstream_rq_active"), 0);
}

/*
 * Prompts follow the ToolSet's filters by name (a denied prompt is not
 * listed); a resources/read of a URI no backend lists asks the backends
 * for their templates next and goes to the one whose template's literal
 * prefix the URI starts with (issue #20: prompts and resources aggregate
 * as tools do); a URI no template covers is -32002 without a read.
 */
static void test_mcp_prompt_filter_and_template_read(void **state)
{
	(void)state;
	start_mcp(1048576);
	apply(ARN_TYPE_URL_TOOLSET, "2",
	      "{\"name\":\"tools\",\"backends\":[{\"name\":\"b\",\"cluster\":\"web\"}],"
	      "\"tool_filter\":{\"deny\":[{\"name\":{\"exact\":\"secret\"}}]}}");
	char sid[64];
	mcp_session(sid);
	struct arn_tcp_conn *c =
	    mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"prompts/list\"}");
	backend_answers("\"method\":\"initialize\"", "application/json", "mcp-session-id: B1\r\n",
			BE_INIT);
	backend_answers("notifications/initialized", NULL, NULL, NULL);
	backend_answers("\"method\":\"prompts/list\"", "application/json", NULL,
			"{\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{\"prompts\":[{\"name\":"
			"\"hello\"},{\"name\":\"secret\"}]}}");
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("prompts/list: got '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "\"name\":\"b__hello\"");
	want_not_in(c->tx, "secret");

	static const char *const res_list =
	    "{\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{\"resources\":[{\"uri\":\"mem://a\"}]}}";
	static const char *const tpl_list =
	    "{\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{\"resourceTemplates\":[{"
	    "\"uriTemplate\":\"file:///logs/{name}\"}]}}";
	c = mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"resources/read\","
			  "\"params\":{\"uri\":\"file:///logs/a.txt\"}}");
	backend_answers("\"method\":\"resources/list\"", "application/json", NULL, res_list);
	assert_int_equal(c->tx_len, 0);
	backend_answers("\"method\":\"resources/templates/list\"", "application/json", NULL,
			tpl_list);
	backend_answers("\"uri\":\"file:///logs/a.txt\"", "application/json", NULL,
			"{\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{\"contents\":[{\"uri\":"
			"\"file:///logs/a.txt\",\"text\":\"log\"}]}}");
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("resources/read by template: got '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "\"id\":3,\"result\":{\"contents\"");

	c = mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"resources/read\","
			  "\"params\":{\"uri\":\"http://elsewhere/\"}}");
	backend_answers("\"method\":\"resources/list\"", "application/json", NULL, res_list);
	backend_answers("\"method\":\"resources/templates/list\"", "application/json", NULL,
			tpl_list);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("resources/read of an unknown URI: got '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "\"code\":-32002");
	assert_int_equal(upstream_pending(), 0);
}

/*
 * Per-tool statistics are bounded per worker (tool names come from
 * hostile backends): HTTP_MCP_TOOL_STATS rows, then calls are counted in
 * rows_overflow, as are names outside the tool alphabet or too long; each
 * row sums calls, errors and time; rows of a ToolSet the configuration no
 * longer has go at the next generation.
 */
static void test_mcp_tool_stats_bounded(void **state)
{
	(void)state;
	start_mcp(1048576);
	char name[HTTP_MCP_TOOL_STATS_NAME_MAX + 2];
	for (unsigned i = 0; i <= HTTP_MCP_TOOL_STATS; i++) {
		int n = snprintf(name, sizeof(name), "b__t%u", i);
		http_mcp_tools_count(w, "tools", 5, name, (size_t)n, i % 2, 10);
	}
	http_mcp_tools_count(w, "tools", 5, "b__t1", 5, false, 5);
	assert_int_equal(stat("mcp.tool_stats.0.rows"), HTTP_MCP_TOOL_STATS);
	assert_int_equal(stat("mcp.tool_stats.0.rows_overflow"), 1);
	assert_int_equal(stat("mcp.tools.tool.b__t1.calls"), 2);
	assert_int_equal(stat("mcp.tools.tool.b__t1.errors"), 1);
	/* rq_time: a histogram per row, summed over the worker's calls */
	struct arn_stats_hist h = hist("mcp.tools.tool.b__t1.rq_time");
	assert_int_equal(h.count, 2);
	assert_int_equal(h.sum_us, 15);
	assert_int_equal(h.buckets[0], 2); /* both under 0.5 ms */
	http_mcp_tools_count(w, "tools", 5, "b__t1", 5, false, 700);
	h = hist("mcp.tools.tool.b__t1.rq_time");
	assert_int_equal(h.count, 3);
	assert_int_equal(h.buckets[1], 1); /* 0.7 ms: le 1 */
	assert_int_equal(stat("mcp.tools.tool.b__t1.calls"), 3);
	assert_int_equal(stat("mcp.tools.tool.b__t0.errors"), 0);
	/* the last one did not fit */
	char last[64];
	snprintf(last, sizeof(last), "mcp.tools.tool.b__t%u.calls", HTTP_MCP_TOOL_STATS);
	assert_int_equal(stat(last), 0);
	/* names a stat must not carry, whether or not there is room */
	memset(name, 'x', sizeof(name));
	http_mcp_tools_count(w, "tools", 5, name, HTTP_MCP_TOOL_STATS_NAME_MAX + 1, false, 1);
	http_mcp_tools_count(w, "tools", 5, "a b", 3, false, 1);
	http_mcp_tools_count(w, "tools", 5, "", 0, false, 1);
	assert_int_equal(stat("mcp.tool_stats.0.rows_overflow"), 4);
	/* ToolSet "tools" is in the configuration: its rows stay; without
	 * it they go */
	http_mcp_tools_sweep(w, arn_config_gen(st));
	assert_int_equal(stat("mcp.tool_stats.0.rows"), HTTP_MCP_TOOL_STATS);
	http_mcp_tools_sweep(w, NULL);
	assert_int_equal(stat("mcp.tool_stats.0.rows"), 0);
	assert_int_equal(stat("mcp.tools.tool.b__t1.calls"), 0);
	assert_int_equal(hist("mcp.tools.tool.b__t1.rq_time").count, 0);
}

/* Backend connection @p u sends @p text as one chunk of its open response. */
static void upstream_chunk(struct arn_tcp_conn *u, const char *text)
{
	static char b[4096];
	snprintf(b, sizeof(b), "%zx\r\n%s\r\n", strlen(text), text);
	send_s(u, b);
	poll_ms(1);
}

#define BE_GET_OPEN                                                                                \
	"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"     \
	"connection: close\r\n\r\n"

static struct arn_tcp_conn *mcp_get_stream(const char *sid)
{
	static char req[256];
	struct arn_tcp_conn *g = client();
	assert_non_null(g);
	snprintf(req, sizeof(req),
		 "GET /mcp HTTP/1.1\r\nHost: a\r\nAccept: text/event-stream\r\nMcp-Session-Id: "
		 "%s\r\n\r\n",
		 sid);
	send_s(g, req);
	poll_ms(1);
	if (!answered(g, "HTTP/1.1 200"))
		fail_msg("GET stream: got '%s'", g->tx ? g->tx : "");
	return g;
}

/*
 * Issue 20, what a backend sends outside a request (the SDK's server says
 * notifications/tools/list_changed on its session's GET stream when a tool
 * is registered after connect): a client's GET stream holds a GET stream
 * to each backend session of its session. Opened when the backend session
 * is (here after the client's GET stream), with the backend's session id,
 * no body and no timeout; list_changed on it drops the worker's catalog
 * and reaches the client's stream; the backend's own request is relayed
 * with its id wrapped and the client's answer goes back to it; the
 * backend ending it: reopened after the back-off (1 s), not before; the
 * client's stream ending closes it. Counted (mcp_backend_get_*).
 */
static void test_mcp_backend_get_stream(void **state)
{
	(void)state;
	start_mcp(1048576);
	char sid[64];
	mcp_session(sid);
	struct arn_tcp_conn *g = mcp_get_stream(sid);
	/* no backend session yet: nothing to open */
	assert_int_equal(upstream_pending(), 0);
	assert_int_equal(stat("http.in.mcp_backend_get_opened"), 0);

	struct arn_tcp_conn *c =
	    mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
	backend_answers("\"method\":\"initialize\"", "application/json", "mcp-session-id: B1\r\n",
			BE_INIT);
	backend_answers("notifications/initialized", NULL, NULL, NULL);
	/* the backend session is usable: its GET stream, then the list */
	assert_int_equal(upstream_pending(), 2);
	assert_int_equal(stat("http.in.mcp_backend_get_opened"), 1);
	backend_answers("\"method\":\"tools/list\"", "application/json", NULL, BE_TOOLS);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("tools/list: got '%s'", c->tx ? c->tx : "");
	struct arn_tcp_conn *u = upstream_accepts();
	want_in(u->tx, "GET /mcp HTTP/1.1\r\n");
	want_in(u->tx, "mcp-session-id: B1\r\n");
	want_in(u->tx, "text/event-stream");
	want_not_in(u->tx, "content-length");
	send_s(u, BE_GET_OPEN);
	poll_ms(1);
	assert_int_equal(stat("http.in.mcp_backend_get_active"), 1);

	/* list_changed: to the client's stream, and the catalog is dropped
	 * (the next tools/list asks the backend, within the cache's TTL) */
	size_t before = g->tx_len;
	upstream_chunk(u, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
			  "tools/list_changed\"}\n\n");
	want_in(g->tx + before, "\"method\":\"notifications/tools/list_changed\"");
	assert_int_equal(stat("http.in.mcp_backend_list_changed"), 1);
	c = mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}");
	assert_int_equal(c->tx_len, 0);
	backend_answers("\"method\":\"tools/list\"", "application/json", NULL, BE_TOOLS);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("tools/list again: got '%s'", c->tx ? c->tx : "");

	/* the backend's own request: relayed with its id wrapped; the
	 * client's answer goes to it with its own id */
	before = g->tx_len;
	upstream_chunk(u, "data: {\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"roots/list\"}\n\n");
	want_in(g->tx + before, "\"id\":\"arn.0.5\"");
	assert_int_equal(stat("http.in.mcp_relayed_request"), 1);
	c = mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"id\":\"arn.0.5\",\"result\":{\"roots\":[]}}");
	struct arn_tcp_conn *a = upstream_accepts();
	want_in(a->tx, "mcp-session-id: B1\r\n");
	want_in(a->tx, "\"id\":5");
	send_s(a, "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
	poll_ms(1);
	if (!answered(c, "HTTP/1.1 202"))
		fail_msg("answer: got '%s'", c->tx ? c->tx : "");
	assert_int_equal(stat("http.in.mcp_reply_forwarded"), 1);

	/* the backend ends it: reopened after 1 s, not before */
	send_s(u, "0\r\n\r\n");
	poll_ms(1);
	assert_int_equal(stat("http.in.mcp_backend_get_closed"), 1);
	assert_int_equal(stat("http.in.mcp_backend_get_active"), 0);
	run_ms(900);
	assert_int_equal(upstream_pending(), 0);
	run_ms(200);
	assert_int_equal(stat("http.in.mcp_backend_get_reopened"), 1);
	assert_int_equal(stat("http.in.mcp_backend_get_opened"), 2);
	u = upstream_accepts();
	want_in(u->tx, "GET /mcp HTTP/1.1\r\n");
	send_s(u, BE_GET_OPEN);
	poll_ms(1);
	assert_int_equal(stat("http.in.mcp_backend_get_active"), 1);

	/* the client's GET stream ends: so does the backend's */
	g->closed = g->close_pending = true;
	g->close_reason = -ECONNRESET;
	poll_ms(1);
	assert_int_equal(stat("http.in.mcp_backend_get_active"), 0);
	assert_int_equal(stat("cluster.web.upstream_rq_active"), 0);
	run_ms(5000);
	assert_int_equal(upstream_pending(), 0);
	assert_int_equal(stat("http.in.mcp_backend_get_opened"), 2);
	assert_int_equal(stat("http.in.mcp_backend_get_closed"), 1);
}

/*
 * A backend answering its session's GET with 405 (it offers no such
 * stream, as the spec allows) is not asked again; one that failed (503)
 * is, the back-off doubling (1 s, then 2 s). Here the backend session
 * exists before the client's GET stream, which opens its GET at once.
 */
static void test_mcp_backend_get_refused(void **state)
{
	(void)state;
	start_mcp(1048576);
	char sid[64];
	mcp_session(sid);
	struct arn_tcp_conn *c =
	    mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
	backend_answers("\"method\":\"initialize\"", "application/json", "mcp-session-id: B1\r\n",
			BE_INIT);
	backend_answers("notifications/initialized", NULL, NULL, NULL);
	backend_answers("\"method\":\"tools/list\"", "application/json", NULL, BE_TOOLS);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("tools/list: got '%s'", c->tx ? c->tx : "");
	mcp_get_stream(sid);
	struct arn_tcp_conn *u = upstream_accepts();
	want_in(u->tx, "GET /mcp HTTP/1.1\r\n");
	send_s(u, "HTTP/1.1 503 Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
	poll_ms(1);
	assert_int_equal(stat("http.in.mcp_backend_get_closed"), 1);
	run_ms(1100);
	assert_int_equal(stat("http.in.mcp_backend_get_reopened"), 1);
	u = upstream_accepts();
	send_s(u, "HTTP/1.1 503 Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
	poll_ms(1);
	run_ms(1100);
	assert_int_equal(upstream_pending(), 0); /* 2 s this time */
	run_ms(1000);
	assert_int_equal(stat("http.in.mcp_backend_get_reopened"), 2);
	u = upstream_accepts();
	send_s(u,
	       "HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
	poll_ms(1);
	assert_int_equal(stat("http.in.mcp_backend_get_refused"), 1);
	run_ms(40000);
	assert_int_equal(upstream_pending(), 0);
	assert_int_equal(stat("http.in.mcp_backend_get_opened"), 3);
	assert_int_equal(stat("http.in.mcp_backend_get_active"), 0);
}

/* 2026-07-28 (stateless): a POST with no session and the era's headers. */
#define MCP26_META                                                                                 \
	"\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                   \
	"\"io.modelcontextprotocol/clientCapabilities\":{}}"

static struct arn_tcp_conn *mcp26_post(const char *method, const char *name, const char *body)
{
	static char req[8192];
	struct arn_tcp_conn *c = client();
	assert_non_null(c);
	snprintf(
	    req, sizeof(req),
	    "POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
	    "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
	    "Mcp-Method: %s\r\n%s%s%sContent-Length: %zu\r\n\r\n%s",
	    method, name ? "Mcp-Name: " : "", name ? name : "", name ? "\r\n" : "", strlen(body),
	    body);
	send_s(c, req);
	poll_ms(1);
	return c;
}

/*
 * The stateless era: server/discover answered by the filter; a backend of
 * unknown era is asked server/discover for a stateless client, found to
 * speak 2026-07-28, and then sent every message statelessly (no session,
 * the envelope in _meta, Mcp-Method and Mcp-Name from what is sent: the
 * prefix stripped), for a session client too; a header that disagrees
 * with the body is 400, -32020, nothing sent.
 */
static void test_mcp_stateless_era(void **state)
{
	(void)state;
	start_mcp(1048576);
	struct arn_tcp_conn *c = mcp26_post(
	    "server/discover", NULL,
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{" MCP26_META
	    "}}");
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("discover: got '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "\"supportedVersions\":[\"2026-07-28\"]");
	want_in(c->tx, "\"prompts\":{},\"resources\":{}");
	want_not_in(c->tx, "mcp-session-id");

	c = mcp26_post(
	    "tools/list", NULL,
	    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{" MCP26_META "}}");
	assert_int_equal(c->tx_len, 0); /* waits for the backend */
	backend_answers(
	    "\"method\":\"server/discover\"", "application/json", NULL,
	    "{\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{\"supportedVersions\":"
	    "[\"2026-07-28\"],\"capabilities\":{\"tools\":{}},\"resultType\":\"complete\"}}");
	struct arn_tcp_conn *u = upstream_accepts();
	want_in(u->tx, "mcp-method: tools/list");
	want_in(u->tx, "mcp-protocol-version: 2026-07-28");
	want_not_in(u->tx, "mcp-session-id");
	char resp[1024];
	snprintf(resp, sizeof(resp),
		 "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %zu\r\n"
		 "connection: close\r\n\r\n%s",
		 strlen(BE_TOOLS) - 3 + 1, BE_TOOLS);
	char *id = strstr(resp, "$ID");
	memmove(id + 1, id + 3, strlen(id + 3) + 1);
	id[0] = '2';
	send_s(u, resp);
	poll_ms(1);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("tools/list: got '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "\"name\":\"b__echo\"");
	want_in(c->tx, "\"resultType\":\"complete\"");
	want_in(c->tx, "\"cacheScope\":\"private\"");
	/* the first discover, before any backend answered, offered all the
	 * gateway serves; now the backend's discover said tools only */
	c = mcp26_post(
	    "server/discover", NULL,
	    "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"server/discover\",\"params\":{" MCP26_META
	    "}}");
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("second discover: got '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "\"capabilities\":{\"tools\":{\"listChanged\":true}},");
	want_not_in(c->tx, "\"prompts\"");

	/* the call: the backend's own name in the body and in Mcp-Name */
	c = mcp26_post(
	    "tools/call", "b__echo",
	    "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":"
	    "\"b__echo\",\"arguments\":{}," MCP26_META "}}");
	u = upstream_accepts();
	want_in(u->tx, "mcp-name: echo\r\n");
	want_in(u->tx, "mcp-method: tools/call\r\n");
	want_in(u->tx, "\"name\":\"echo\"");
	want_not_in(u->tx, "mcp-session-id");
	static const char cres[] = "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[],"
				   "\"resultType\":\"complete\"}}";
	snprintf(resp, sizeof(resp),
		 "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %zu\r\n"
		 "connection: close\r\n\r\n%s",
		 strlen(cres), cres);
	send_s(u, resp);
	poll_ms(1);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("tools/call: got '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "\"id\":3,\"result\":{\"content\":[]");

	/* Mcp-Name not the body's: refused before any backend is asked */
	unsigned before = (unsigned)stat("cluster.web.upstream_rq_total");
	c = mcp26_post(
	    "tools/call", "b__secret",
	    "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":"
	    "\"b__echo\"," MCP26_META "}}");
	if (!answered(c, "HTTP/1.1 400"))
		fail_msg("mismatch: got '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "\"id\":4,\"error\":{\"code\":-32020");
	assert_int_equal(upstream_pending(), 0);
	assert_int_equal(stat("cluster.web.upstream_rq_total"), before);
	assert_int_equal(stat("http.in.mcp_header_mismatch"), 1);
	/* the version header names 2026-07-28, the body claims nothing */
	c = mcp26_post("tools/list", NULL,
		       "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/list\"}");
	if (!answered(c, "HTTP/1.1 400"))
		fail_msg("no claim: got '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "\"id\":6,\"error\":{\"code\":-32020");
	assert_int_equal(stat("http.in.mcp_header_mismatch"), 2);

	/* a session client's call: the backend is known to be stateless,
	 * so no initialize, and the envelope is added */
	char sid[64];
	mcp_session(sid);
	c = mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{"
			  "\"name\":\"b__echo\",\"arguments\":{}}}");
	u = upstream_accepts();
	want_in(u->tx, "\"method\":\"tools/call\"");
	want_in(u->tx, "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"");
	want_in(u->tx, "mcp-name: echo\r\n");
	want_not_in(u->tx, "mcp-session-id");
	assert_int_equal(stat("http.in.mcp_stateless"), 5); /* the claimless one is not */
}

/*
 * A session client and a backend that speaks only 2026-07-28: its
 * initialize is refused (400, as the SDK 2.x server with legacy 'reject'
 * answers), so the gateway asks server/discover, learns the era, and
 * sends the tools/list statelessly; the next request goes straight.
 */
static void test_mcp_session_client_stateless_backend(void **state)
{
	(void)state;
	start_mcp(1048576);
	char sid[64];
	mcp_session(sid);
	struct arn_tcp_conn *c =
	    mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
	struct arn_tcp_conn *u = upstream_accepts();
	want_in(u->tx, "\"method\":\"initialize\"");
	static const char refused[] = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,"
				      "\"message\":\"modern only\"}}";
	char resp[1024];
	snprintf(resp, sizeof(resp),
		 "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: "
		 "%zu\r\nconnection: close\r\n\r\n%s",
		 strlen(refused), refused);
	send_s(u, resp);
	poll_ms(1);
	backend_answers(
	    "\"method\":\"server/discover\"", "application/json", NULL,
	    "{\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{\"supportedVersions\":"
	    "[\"2026-07-28\"],\"capabilities\":{\"tools\":{}},\"resultType\":\"complete\"}}");
	u = upstream_accepts();
	want_in(u->tx, "\"method\":\"tools/list\"");
	want_in(u->tx, "mcp-method: tools/list");
	want_in(u->tx, "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"");
	want_not_in(u->tx, "mcp-session-id");
	snprintf(resp, sizeof(resp),
		 "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %zu\r\n"
		 "connection: close\r\n\r\n%s",
		 strlen(BE_TOOLS) - 3 + 1, BE_TOOLS);
	char *id = strstr(resp, "$ID");
	memmove(id + 1, id + 3, strlen(id + 3) + 1);
	id[0] = '2';
	send_s(u, resp);
	poll_ms(1);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("tools/list: got '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "\"name\":\"b__echo\"");
	/* the era is known now: the call goes at once, statelessly */
	c = mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{"
			  "\"name\":\"b__echo\",\"arguments\":{}}}");
	u = upstream_accepts();
	want_in(u->tx, "\"method\":\"tools/call\"");
	want_in(u->tx, "mcp-name: echo\r\n");
	assert_int_equal(upstream_pending(), 0);
}

/*
 * Issue 20: a session that ends by idling (session_idle_timeout) ends its
 * backend sessions too, as a client's DELETE does: found idle by the
 * worker's once-a-second sweep, nobody naming it, a DELETE with the
 * backend's session id goes to each backend it opened a session with,
 * from a detached request (no client stream), counted.
 */
static void test_mcp_idle_session_deletes_backend_sessions(void **state)
{
	(void)state;
	start_mcp_with(1048576, ",\"session_idle_timeout\":\"2s\"");
	char sid[64];
	mcp_session(sid);
	struct arn_tcp_conn *c =
	    mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
	backend_answers("\"method\":\"initialize\"", "application/json", "mcp-session-id: B1\r\n",
			BE_INIT);
	backend_answers("notifications/initialized", NULL, NULL, NULL);
	backend_answers("\"method\":\"tools/list\"", "application/json", NULL, BE_TOOLS);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("tools/list: got '%s'", c->tx ? c->tx : "");
	run_ms(1500);
	assert_int_equal(upstream_pending(), 0); /* not idle yet */
	run_ms(1500);
	assert_int_equal(stat("http.in.mcp_session_expired"), 1);
	assert_int_equal(stat("http.in.mcp_backend_session_deleted"), 1);
	struct arn_tcp_conn *u = upstream_accepts();
	want_in(u->tx, "DELETE /mcp HTTP/1.1\r\n");
	want_in(u->tx, "mcp-session-id: B1\r\n");
	send_s(u, "HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
	poll_ms(1);
	assert_int_equal(stat("cluster.web.upstream_rq_2xx"), 4);
	c = mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}");
	if (!answered(c, "HTTP/1.1 404"))
		fail_msg("expired session: got '%s'", c->tx ? c->tx : "");
	/* a session that never opened a backend session sends nothing */
	mcp_session(sid);
	run_ms(3000);
	assert_int_equal(stat("http.in.mcp_session_expired"), 2);
	assert_int_equal(upstream_pending(), 0);
	/* a call running longer than the idle timeout keeps its session:
	 * idle time counts from the last answer */
	mcp_session(sid);
	c = mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/list\"}");
	backend_answers("\"method\":\"initialize\"", "application/json", "mcp-session-id: B2\r\n",
			BE_INIT);
	backend_answers("notifications/initialized", NULL, NULL, NULL);
	backend_answers("\"method\":\"tools/list\"", "application/json", NULL, BE_TOOLS);
	c = mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{"
			  "\"name\":\"b__echo\",\"arguments\":{}}}");
	struct arn_tcp_conn *call = upstream_accepts();
	run_ms(3500);
	assert_int_equal(stat("http.in.mcp_session_expired"), 2);
	assert_int_equal(upstream_pending(), 0); /* no DELETE */
	static const char ans[] = "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"content\":[]}}";
	char resp[512];
	snprintf(resp, sizeof(resp),
		 "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %zu\r\n"
		 "connection: close\r\n\r\n%s",
		 strlen(ans), ans);
	send_s(call, resp);
	poll_ms(1);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("long call: got '%s'", c->tx ? c->tx : "");
}

/*
 * Issue 20: stateless clients (2026-07-28) and a session-era backend
 * share one backend session per worker and ToolSet: the first request
 * opens it (initialize, notifications/initialized), the next ones send
 * its id and no initialize, so no backend session is left behind per
 * request; a ToolSet replaced over xDS ends it with a DELETE.
 */
static void test_mcp_stateless_shared_backend_session(void **state)
{
	(void)state;
	start_mcp(1048576);
	struct arn_tcp_conn *c = mcp26_post(
	    "tools/list", NULL,
	    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{" MCP26_META "}}");
	backend_answers("\"method\":\"server/discover\"", "application/json", NULL,
			"{\"jsonrpc\":\"2.0\",\"id\":$ID,\"error\":{\"code\":-32601,\"message\":"
			"\"Method not found\"}}");
	backend_answers("\"method\":\"initialize\"", "application/json", "mcp-session-id: S1\r\n",
			BE_INIT);
	backend_answers("notifications/initialized", NULL, NULL, NULL);
	backend_answers("\"method\":\"tools/list\"", "application/json", NULL, BE_TOOLS);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("tools/list: got '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "\"name\":\"b__echo\"");
	for (int i = 0; i < 2; i++) {
		c = mcp26_post(
		    "tools/call", "b__echo",
		    "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{"
		    "\"name\":\"b__echo\",\"arguments\":{}," MCP26_META "}}");
		backend_answers("\"method\":\"tools/call\"", "application/json", NULL,
				"{\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{\"content\":[]}}");
		if (!answered(c, "HTTP/1.1 200"))
			fail_msg("tools/call %d: got '%s'", i, c->tx ? c->tx : "");
		want_in(c->tx, "\"id\":3,\"result\":{\"content\":[]");
		/* the shared session's id, and the envelope gone for this backend */
		int k = 0;
		for (unsigned j = 0; j < CONNS; j++)
			if (conns[j].used && conns[j].upstream && conns[j].tx &&
			    strstr(conns[j].tx, "\"method\":\"tools/call\"")) {
				want_in(conns[j].tx, "mcp-session-id: S1\r\n");
				want_not_in(conns[j].tx, "io.modelcontextprotocol/protocolVersion");
				k++;
			}
		assert_int_equal(k, i + 1);
	}
	/* one initialize in all: discover, initialize, initialized, list, 2 calls */
	assert_int_equal(stat("cluster.web.upstream_rq_total"), 6);
	/* the ToolSet replaced: its shared backend session ends */
	apply(ARN_TYPE_URL_TOOLSET, "2",
	      "{\"name\":\"tools\",\"backends\":[{\"name\":\"b\",\"cluster\":\"web\","
	      "\"timeout\":\"5s\"}]}");
	poll_ms(1);
	struct arn_tcp_conn *u = upstream_accepts();
	want_in(u->tx, "DELETE /mcp HTTP/1.1\r\n");
	want_in(u->tx, "mcp-session-id: S1\r\n");
	assert_int_equal(stat("http.in.mcp_backend_session_deleted"),
			 0); /* (no HCM: per backend) */
}

/* A client session (its id into @p sid) whose first tools/list, answered,
 * opened backend b's own session @p bsid. @return that tools/list's
 * client connection. */
static struct arn_tcp_conn *mcp_session_listed(char sid[64], const char *bsid)
{
	mcp_session(sid);
	struct arn_tcp_conn *c =
	    mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
	char extra[160];
	snprintf(extra, sizeof(extra), "mcp-session-id: %s\r\n", bsid);
	backend_answers("\"method\":\"initialize\"", "application/json", extra, BE_INIT);
	backend_answers("notifications/initialized", NULL, NULL, NULL);
	backend_answers("\"method\":\"tools/list\"", "application/json", NULL, BE_TOOLS);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("tools/list: got '%s'", c->tx ? c->tx : "");
	return c;
}

#define BE_DISCOVER26                                                                              \
	"{\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{\"supportedVersions\":"                       \
	"[\"2026-07-28\"],\"capabilities\":{\"tools\":{}},\"resultType\":\"complete\"}}"

/*
 * A backend that speaks both eras (as the SDKs' 2.x servers do): a
 * session client's initialize to it is in flight when a stateless
 * client's server/discover finishes first, so the worker learns the
 * backend is 2026-07-28 while the session keeps the backend session it
 * opened. The session's DELETE goes to that backend session in the
 * session era (it has no method for the stateless era's Mcp-Method: it
 * once crashed the worker there), and so does any side message.
 */
static void test_mcp_delete_after_backend_learnt_stateless(void **state)
{
	(void)state;
	start_mcp(1048576);
	char sid[64];
	mcp_session(sid);
	struct arn_tcp_conn *c1 =
	    mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
	assert_int_equal(upstream_pending(), 1); /* the session's initialize */
	struct arn_tcp_conn *c2 = mcp26_post(
	    "tools/list", NULL,
	    "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\",\"params\":{" MCP26_META "}}");
	backend_answers("\"method\":\"server/discover\"", "application/json", NULL, BE_DISCOVER26);
	backend_answers("\"method\":\"tools/list\"", "application/json", NULL, BE_TOOLS);
	if (!answered(c2, "HTTP/1.1 200"))
		fail_msg("stateless tools/list: got '%s'", c2->tx ? c2->tx : "");
	backend_answers("\"method\":\"initialize\"", "application/json", "mcp-session-id: B1\r\n",
			BE_INIT);
	backend_answers("notifications/initialized", NULL, NULL, NULL);
	backend_answers("\"method\":\"tools/list\"", "application/json", NULL, BE_TOOLS);
	if (!answered(c1, "HTTP/1.1 200"))
		fail_msg("session tools/list: got '%s'", c1->tx ? c1->tx : "");
	struct arn_tcp_conn *c = client();
	char req[256];
	snprintf(req, sizeof(req), "DELETE /mcp HTTP/1.1\r\nHost: a\r\nMcp-Session-Id: %s\r\n\r\n",
		 sid);
	send_s(c, req);
	poll_ms(1);
	struct arn_tcp_conn *u = upstream_accepts();
	want_in(u->tx, "DELETE /mcp HTTP/1.1\r\n");
	want_in(u->tx, "mcp-session-id: B1\r\n");
	want_not_in(u->tx, "mcp-method");
	send_s(u, "HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
	poll_ms(1);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("DELETE: got '%s'", c->tx ? c->tx : "");
}

/*
 * A session belongs to the ToolSet whose gateway opened it: the listener
 * is changed to serve ToolSet "other" and the session, unknown to it, is
 * answered 404 (-32001) without reaching a backend, so that a session id
 * cannot carry one ToolSet's backend sessions to another's backends. A
 * new session on it works.
 */
static void test_mcp_session_unknown_to_another_toolset(void **state)
{
	(void)state;
	start_mcp(1048576);
	char sid[64];
	struct arn_tcp_conn *c = mcp_session_listed(sid, "SECRET-OF-B");
	static char lj[4096];
	char *p = strstr(mcp_lj, "\"config_name\":\"tools\"");
	assert_non_null(p);
	snprintf(lj, sizeof(lj), "%.*s\"config_name\":\"other\"%s", (int)(p - mcp_lj), mcp_lj,
		 p + strlen("\"config_name\":\"tools\""));
	apply(L, "2", lj); /* (it waits for its ToolSet: X14) */
	apply_toolset_name = "other";
	apply(ARN_TYPE_URL_TOOLSET, "1",
	      "{\"name\":\"other\",\"backends\":[{\"name\":\"b\",\"cluster\":\"web\"}]}");
	apply_toolset_name = NULL;
	poll_ms(1);
	c = mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}");
	if (!answered(c, "HTTP/1.1 404"))
		fail_msg("the other ToolSet's session: got '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "-32001");
	assert_int_equal(upstream_pending(), 0);
	mcp_session(sid);
	c = mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/list\"}");
	struct arn_tcp_conn *u = upstream_accepts();
	want_not_in(u->tx, "SECRET-OF-B");
}

/*
 * A request header that several access rules name is kept once for the
 * rules to match (MCP_PRINCIPAL_HDRS of them a request): sixteen rules on
 * x-team once filled every slot with copies of the one x-team header, and
 * x-role, which the seventeenth rule grants "echo" by, was never seen.
 */
static void test_mcp_principal_header_named_by_many_rules(void **state)
{
	(void)state;
	start_mcp(1048576);
	static char ts[8192];
	size_t n = (size_t)snprintf(ts, sizeof(ts),
				    "{\"name\":\"tools\",\"backends\":[{\"name\":\"b\",\"cluster\":"
				    "\"web\"}],\"access_rules\":[");
	for (int i = 0; i < 16; i++)
		n += (size_t)snprintf(
		    ts + n, sizeof(ts) - n,
		    "{\"tools\":[{\"name\":{\"exact\":\"echo\"}}],\"principals\":[{"
		    "\"header\":{\"name\":\"x-team\",\"string_match\":{\"exact\":"
		    "\"nope%d\"}}}]},",
		    i);
	snprintf(ts + n, sizeof(ts) - n,
		 "{\"tools\":[{\"name\":{\"exact\":\"echo\"}}],\"principals\":[{\"header\":{"
		 "\"name\":\"x-role\",\"string_match\":{\"exact\":\"admin\"}}}]}]}");
	apply(ARN_TYPE_URL_TOOLSET, "2", ts);
	mcp_post_headers = "x-team: a\r\nx-role: admin\r\n";
	char sid[64];
	struct arn_tcp_conn *c = mcp_session_listed(sid, "B1");
	mcp_post_headers = "";
	want_in(c->tx, "\"name\":\"b__echo\"");
	/* without x-role: hidden */
	c = mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}");
	if (upstream_pending())
		backend_answers("\"method\":\"tools/list\"", "application/json", NULL, BE_TOOLS);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("tools/list without x-role: got '%s'", c->tx ? c->tx : "");
	want_not_in(c->tx, "b__echo");
}

/*
 * The request headers principals name are kept up to MCP_PRINCIPAL_HDRS;
 * one that did not fit was left out and the principals matched on the
 * rest, so a principal that admits by a header's absence (invert_match)
 * admitted a client that crowded that header out: sixteen x-team values
 * and "secret", hidden from clients that send x-external, was listed to
 * one that sent it.
 */
static void test_mcp_principal_header_crowded_out(void **state)
{
	(void)state;
	start_mcp(1048576);
	apply(ARN_TYPE_URL_TOOLSET, "2",
	      "{\"name\":\"tools\",\"backends\":[{\"name\":\"b\",\"cluster\":\"web\"}],"
	      "\"access_rules\":[{\"tools\":[{\"name\":{\"exact\":\"echo\"}}],\"principals\":[{"
	      "\"header\":{\"name\":\"x-team\",\"string_match\":{\"exact\":\"ops\"}}}]},"
	      "{\"tools\":[{\"name\":{\"exact\":\"secret\"}}],\"principals\":[{\"header\":{"
	      "\"name\":\"x-external\",\"present_match\":true,\"invert_match\":true}}]}]}");
	static char hdrs[1024];
	size_t n = 0;
	for (int i = 0; i < 16; i++)
		n += (size_t)snprintf(hdrs + n, sizeof(hdrs) - n, "x-team: t%d\r\n", i);
	snprintf(hdrs + n, sizeof(hdrs) - n, "x-external: 1\r\n");
	mcp_post_headers = hdrs;
	char sid[64];
	struct arn_tcp_conn *c = mcp_session_listed(sid, "B1");
	mcp_post_headers = "";
	want_not_in(c->tx, "b__secret");
	/* without x-external and the crowd: listed */
	c = mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}");
	if (upstream_pending())
		backend_answers("\"method\":\"tools/list\"", "application/json", NULL, BE_TOOLS);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("tools/list without x-external: got '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "\"name\":\"b__secret\"");
}

/* The worker's large scratch buffers free. */
static unsigned big_free(void)
{
	unsigned n = 0;
	for (char **b = w->big_free; b; b = (char **)*b)
		n++;
	return n;
}

/*
 * A tools/call whose backend streams (progress, then the answer, maybe
 * minutes later) holds no large scratch buffer while it is quiet: eight
 * such calls waiting on their tools, in a worker of 16 large buffers (two
 * a call once: the backend's event stream and the client's), and another
 * client's streamed call still gets its answer.
 */
static void test_mcp_quiet_streamed_calls_hold_no_large_buffer(void **state)
{
	(void)state;
	mcp_streams = 64;
	start_mcp(1048576);
	char sid[64];
	struct arn_tcp_conn *c = mcp_session_listed(sid, "B1");
	unsigned big0 = big_free();
	static const char prog[] =
	    "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","
	    "\"params\":{\"progressToken\":9,\"progress\":1}}\n\n";
	char resp[1024];
	snprintf(
	    resp, sizeof(resp),
	    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"
	    "connection: close\r\n\r\n%zx\r\n%s\r\n",
	    strlen(prog), prog);
	for (int i = 0; i < 8; i++) {
		c = mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"tools/call\","
				  "\"params\":{\"name\":\"b__echo\",\"arguments\":{}}}");
		if (!upstream_pending())
			fail_msg("call %d: nothing upstream; client got '%s'", i,
				 c->tx ? c->tx : "");
		send_s(upstream_accepts(), resp);
		poll_ms(1);
		want_in(c->tx, "notifications/progress");
	}
	assert_int_equal(big_free(), big0); /* eight quiet streams, no buffer held */
	char sid2[64];
	mcp_session(sid2);
	c = mcp_post(sid2, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{"
			   "\"name\":\"b__echo\",\"arguments\":{}}}");
	backend_answers("\"method\":\"initialize\"", "application/json", "mcp-session-id: B2\r\n",
			BE_INIT);
	backend_answers("notifications/initialized", NULL, NULL, NULL);
	static const char sse[] =
	    "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[]}}\n\n";
	snprintf(resp, sizeof(resp),
		 "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: %zu\r\n"
		 "connection: close\r\n\r\n%s",
		 strlen(sse), sse);
	send_s(upstream_accepts(), resp);
	poll_ms(1);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("the other client's call: got '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "\"id\":3,\"result\":{\"content\":[]}");
}

/* Every backend request pending, answered as a backend of its path
 * would: x (path /x) gives session X1, b (/mcp) gives B1 unless it is
 * asked with a session already. @p never must be in none of them; @p
 * want_b, when set, must be in b's first request. */
static void answer_backends(struct arn_tcp_conn *c, const char *never, const char *want_b)
{
	bool b_seen = false;
	for (int i = 0; i < 12 && upstream_pending(); i++) {
		struct arn_tcp_conn *u = upstream_accepts();
		bool x = strncmp(u->tx, "POST /x ", 8) == 0;
		if (never)
			want_not_in(u->tx, never);
		if (!x && !b_seen && want_b)
			want_in(u->tx, want_b);
		b_seen |= !x;
		const char *be = strstr(u->tx, "\r\n\r\n");
		if (be && strstr(be, "\"method\":\"initialize\""))
			backend_answer_on(u, "application/json",
					  x ? "mcp-session-id: X1\r\n" : "mcp-session-id: B1\r\n",
					  BE_INIT);
		else if (be && strstr(be, "\"method\":\"tools/list\""))
			backend_answer_on(u, "application/json", NULL, BE_TOOLS);
		else
			backend_answer_on(u, NULL, NULL, NULL);
	}
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("tools/list: got '%s'", c->tx ? c->tx : "");
}

/*
 * A session's backend session ids follow their backends across ToolSet
 * versions, never the index: the ToolSet gets a backend "x" ahead of "b",
 * and b's session id goes to b (now second) and never to x, which gets
 * its own initialize; a version without b forgets b's id, so that nothing
 * (the session's DELETE included) carries it again. An id is a credential
 * for the server that issued it.
 */
static void test_mcp_backend_session_follows_its_backend(void **state)
{
	(void)state;
	start_mcp(1048576);
	char sid[64];
	struct arn_tcp_conn *c = mcp_session_listed(sid, "SECRET-OF-B");
	apply(ARN_TYPE_URL_TOOLSET, "2",
	      "{\"name\":\"tools\",\"backends\":[{\"name\":\"x\",\"cluster\":\"web\",\"path\":"
	      "\"/x\"},{\"name\":\"b\",\"cluster\":\"web\"}]}");
	poll_ms(1);
	c = mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}");
	answer_backends(c, NULL, "mcp-session-id: SECRET-OF-B\r\n");
	want_in(c->tx, "\"name\":\"x__echo\"");
	want_in(c->tx, "\"name\":\"b__echo\"");
	/* b leaves the ToolSet: its id with it */
	apply(ARN_TYPE_URL_TOOLSET, "3",
	      "{\"name\":\"tools\",\"backends\":[{\"name\":\"x\",\"cluster\":\"web\",\"path\":"
	      "\"/x\"}]}");
	poll_ms(1);
	c = mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/list\"}");
	answer_backends(c, "SECRET-OF-B", NULL);
	/* b again, at index 0 under another path: another server, no id */
	apply(ARN_TYPE_URL_TOOLSET, "4",
	      "{\"name\":\"tools\",\"backends\":[{\"name\":\"b\",\"cluster\":\"web\",\"path\":"
	      "\"/x\"}]}");
	poll_ms(1);
	c = mcp_post(sid, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\"}");
	answer_backends(c, "SECRET-OF-B", NULL);
	c = client();
	char req[256];
	snprintf(req, sizeof(req), "DELETE /mcp HTTP/1.1\r\nHost: a\r\nMcp-Session-Id: %s\r\n\r\n",
		 sid);
	send_s(c, req);
	poll_ms(1);
	while (upstream_pending()) {
		struct arn_tcp_conn *u = upstream_accepts();
		want_not_in(u->tx, "SECRET-OF-B");
		send_s(u, "HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
		poll_ms(1);
	}
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("DELETE: got '%s'", c->tx ? c->tx : "");
}

/* What the access log at @p path holds once drained, into @p buf (@p size
 * bytes, NUL-terminated); the file goes. */
static void read_access_log(const char *path, char *buf, size_t size)
{
	arn_access_log_drain();
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	size_t n = fread(buf, 1, size - 1, f);
	fclose(f);
	unlink(path);
	buf[n] = 0;
}

/*
 * Issue 20, sessions across workers: with two workers (RSS), a session
 * opened on one is used from the other for everything: a request
 * answered as JSON, a tools/list whose backend exchange runs on the
 * owner, a tools/call streamed (progress, then the answer), the GET
 * stream (list_changed after a ToolSet push reaches it), a client that
 * goes away mid-call (the owner drops the call), and DELETE (which ends
 * the GET stream held on the other worker). Without the hand-off each is
 * 404 "another worker" (mcp_session_elsewhere).
 */
static void test_mcp_session_across_workers(void **state)
{
	(void)state;
	char log_path[64], log_json[512];
	snprintf(log_path, sizeof(log_path), "/tmp/arn_test_hcm_mcp.%d.log", (int)getpid());
	unlink(log_path);
	snprintf(log_json, sizeof(log_json),
		 ",\"access_log\":[{\"name\":\"f\",\"typed_config\":{\"@type\":\"type."
		 "googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog\",\"path\":"
		 "\"%s\",\"log_format\":{\"text_format_source\":{\"inline_string\":\"%%REQ(:"
		 "METHOD)%% %%RESPONSE_CODE%% %%MCP_TOOL%% %%MCP_BACKEND%%\\n\"}}}}]",
		 log_path);
	mcp_hcm_extra = log_json;
	two_workers = true;
	start_mcp(1048576);
	char sid[64];
	mcp_session(sid); /* on lc0: its id names worker 0 */
	assert_int_equal(sid[0], '0');
	assert_int_equal(sid[1], '0');

	struct arn_tcp_conn *c =
	    mcp_post_on(client1(), sid, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}");
	poll_ms(1);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("ping from lc1: got '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}");
	want_in(c->tx, sid);
	assert_int_equal(stat("http.in.mcp_handoff_out"), 1);
	assert_int_equal(stat("http.in.mcp_handoff_in"), 1);

	c = mcp_post_on(client1(), sid, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
	poll_ms(1);
	backend_answers("\"method\":\"initialize\"", "application/json", "mcp-session-id: B1\r\n",
			BE_INIT);
	backend_answers("notifications/initialized", NULL, NULL, NULL);
	backend_answers("\"method\":\"tools/list\"", "application/json", NULL, BE_TOOLS);
	poll_ms(1);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("tools/list from lc1: got '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "\"id\":2,");
	want_in(c->tx, "\"name\":\"b__echo\"");

	/* a streamed call: the head, the progress event, the answer, the end */
	c = mcp_post_on(client1(), sid,
			"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{"
			"\"name\":\"b__echo\",\"arguments\":{},\"_meta\":{\"progressToken\":9}}}");
	poll_ms(1);
	struct arn_tcp_conn *u = upstream_accepts();
	want_in(u->tx, "mcp-session-id: B1");
	static const char prog[] =
	    "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","
	    "\"params\":{\"progressToken\":9,\"progress\":1}}\n\n";
	char resp[1024];
	snprintf(
	    resp, sizeof(resp),
	    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"
	    "connection: close\r\n\r\n%zx\r\n%s\r\n",
	    strlen(prog), prog);
	send_s(u, resp);
	poll_ms(1);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("streamed call from lc1: got '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "content-type: text/event-stream");
	want_in(c->tx, sid);
	want_in(c->tx, "\"method\":\"notifications/progress\"");
	static const char fin[] =
	    "data: {\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"content\":[]}}\n\n";
	snprintf(resp, sizeof(resp), "%zx\r\n%s\r\n0\r\n\r\n", strlen(fin), fin);
	send_s(u, resp);
	poll_ms(1);
	want_in(c->tx, "\"id\":4,\"result\":{\"content\":[]}}\n\n\r\n0\r\n\r\n");

	/* a call answered as JSON, and one of a tool nobody has (refused on
	 * the owner before any backend): lc1's access log names each tool,
	 * and the backend of the one routed ("access log" below) */
	c = mcp_post_on(client1(), sid,
			"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{"
			"\"name\":\"b__echo\",\"arguments\":{}}}");
	poll_ms(1);
	backend_answers("\"method\":\"tools/call\"", "application/json", NULL,
			"{\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{\"content\":[]}}");
	poll_ms(1);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("JSON call from lc1: got '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "\"id\":6,\"result\":{\"content\":[]}");
	c = mcp_post_on(client1(), sid,
			"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{"
			"\"name\":\"b__nope\",\"arguments\":{}}}");
	poll_ms(1);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("unknown tool from lc1: got '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "\"code\":-32602");

	/* the GET stream from lc1; the owner's GET to the backend session is
	 * refused (405: it offers none) */
	struct arn_tcp_conn *g = client1();
	snprintf(resp, sizeof(resp),
		 "GET /mcp HTTP/1.1\r\nHost: a\r\nAccept: text/event-stream\r\nMcp-Session-Id: "
		 "%s\r\n\r\n",
		 sid);
	send_s(g, resp);
	poll_ms(1);
	poll_ms(1);
	if (!answered(g, "HTTP/1.1 200"))
		fail_msg("GET stream from lc1: got '%s'", g->tx ? g->tx : "");
	want_in(g->tx, "content-type: text/event-stream");
	u = upstream_accepts();
	want_in(u->tx, "GET /mcp HTTP/1.1");
	send_s(u,
	       "HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
	poll_ms(1);
	apply(ARN_TYPE_URL_TOOLSET, "2",
	      "{\"name\":\"tools\",\"backends\":[{\"name\":\"b\",\"cluster\":\"web\","
	      "\"timeout\":\"5s\"}]}");
	poll_ms(1);
	poll_ms(1);
	want_in(g->tx, "notifications/tools/list_changed");
	while (upstream_pending()) /* the new ToolSet's backend GET: refused too */
		send_s(upstream_accepts(), "HTTP/1.1 405 Method Not Allowed\r\ncontent-length: "
					   "0\r\nconnection: close\r\n\r\n");
	poll_ms(1);

	/* a client that goes away while its call runs on the owner */
	c = mcp_post_on(client1(), sid,
			"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{"
			"\"name\":\"b__echo\",\"arguments\":{}}}");
	poll_ms(1);
	while (upstream_pending() > 1)
		send_s(upstream_accepts(), "HTTP/1.1 405 Method Not Allowed\r\ncontent-length: "
					   "0\r\nconnection: close\r\n\r\n");
	assert_int_equal(upstream_pending(), 1);
	close_later(c, -ECONNRESET);
	poll_ms(1);
	poll_ms(1);
	assert_int_equal(stat("http.in.mcp_handoff_cancel"), 1);

	/* DELETE from lc1: the session, its GET stream (on lc1) and the
	 * backend session end */
	c = client1();
	snprintf(resp, sizeof(resp),
		 "DELETE /mcp HTTP/1.1\r\nHost: a\r\nMcp-Session-Id: %s\r\n\r\n", sid);
	send_s(c, resp);
	poll_ms(1);
	poll_ms(1);
	while (upstream_pending()) {
		u = upstream_accepts();
		if (strstr(u->tx, "DELETE /mcp"))
			send_s(u,
			       "HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
		else
			send_s(u, "HTTP/1.1 405 Method Not Allowed\r\ncontent-length: "
				  "0\r\nconnection: close\r\n\r\n");
		poll_ms(1);
	}
	poll_ms(1);
	poll_ms(1);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("DELETE from lc1: got '%s'", c->tx ? c->tx : "");
	want_in(g->tx, "\r\n0\r\n\r\n"); /* the GET stream ended cleanly */
	c = mcp_post_on(client1(), sid, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\"}");
	poll_ms(1);
	poll_ms(1);
	if (!answered(c, "HTTP/1.1 404"))
		fail_msg("ended session from lc1: got '%s'", c->tx ? c->tx : "");
	assert_int_equal(stat("http.in.mcp_session_elsewhere"), 9);
	assert_int_equal(stat("http.in.mcp_handoff_dropped"), 0);

	/* the access log is lc1's (the owner's detached requests have no
	 * stream, so log nothing): the tool and backend the owner routed
	 * came back with each answer (X_REPLY, X_HEAD / X_END); before,
	 * every handed-over request logged "- -" */
	static char log[8192];
	read_access_log(log_path, log, sizeof(log));
	unsigned routed = 0;
	for (const char *p = log; (p = strstr(p, "POST 200 b__echo b\n")) != NULL; p++)
		routed++;
	if (routed != 2 || !strstr(log, "POST 200 b__nope -\n") || !strstr(log, "GET 200 - -\n"))
		fail_msg("the access log:\n%s", log);
}

/*
 * A request handed to the session's owner runs there detached; when its
 * backend answers (TCP input, outside the MCP poll) the owner's MCP poll
 * has work at its very next loop iteration (its slot freed), and says so
 * in the time the loop's inline test reads (http_mcp_due: 0), not only at
 * the next idle-session sweep a second later.
 */
static void test_mcp_detached_end_polled_next(void **state)
{
	(void)state;
	two_workers = true;
	start_mcp(1048576);
	char sid[64];
	mcp_session(sid); /* on lc0 */
	struct arn_tcp_conn *c =
	    mcp_post_on(client1(), sid, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
	poll_ms(1);
	backend_answers("\"method\":\"initialize\"", "application/json", "mcp-session-id: B1\r\n",
			BE_INIT);
	backend_answers("notifications/initialized", NULL, NULL, NULL);
	backend_answers("\"method\":\"tools/list\"", "application/json", NULL, BE_TOOLS);
	poll_ms(1);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("tools/list from lc1: got '%s'", c->tx ? c->tx : "");
	const struct http_mcp_due *due = (const struct http_mcp_due *)w->mcp;
	c = mcp_post_on(client1(), sid,
			"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{"
			"\"name\":\"b__echo\",\"arguments\":{}}}");
	poll_ms(1);
	struct arn_tcp_conn *u = upstream_accepts();
	want_in(u->tx, "\"method\":\"tools/call\"");
	/* the call runs on lc0: nothing of its own to do until it ends */
	assert_true(due->due_ms > w->now_ms);
	static const char body[] = "{\"jsonrpc\":\"2.0\",\"id\":6,\"result\":{\"content\":[]}}";
	char resp[512];
	snprintf(resp, sizeof(resp),
		 "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
		 "%zu\r\nconnection: close\r\n\r\n%s",
		 strlen(body), body);
	send_s(u, resp);
	assert_int_equal(due->due_ms, 0);
	poll_ms(0);
	assert_true(due->due_ms > w->now_ms);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("call from lc1: got '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "\"id\":6,\"result\"");
}

/*
 * Issue 20: a backend's notifications/tools/list_changed read on one
 * worker is every worker's news. Said on a call's stream (lc0 here), it
 * reaches the GET streams of that ToolSet on both workers (lc1's through
 * its inbox, X_LIST_CHANGED) and drops lc1's catalog too (its next
 * tools/list asks the backend again, within the cache's TTL). Said on one
 * client's backend GET stream, it reaches that client only (every client
 * session has backend sessions of its own, each told by the backend), but
 * the other worker's catalog is stale all the same: dropped. Before, lc1
 * heard neither.
 */
static void test_mcp_backend_list_changed_every_worker(void **state)
{
	(void)state;
	two_workers = true;
	start_mcp(1048576);
	char s0[64], s1[64], req[256];
	mcp_session(s0);
	struct arn_tcp_conn *c = mcp_post_on(client1(), NULL, MCP_INIT);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("initialize on lc1: got '%s'", c->tx ? c->tx : "");
	session_of(c, s1);
	assert_int_equal(s1[1], '1'); /* lc1's own session */
	static const char list[] = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}";
	/* each worker builds its catalog, each session its backend session */
	c = mcp_post_on(client1(), s1, list);
	backend_answers("\"method\":\"initialize\"", "application/json", "mcp-session-id: B1\r\n",
			BE_INIT);
	backend_answers("notifications/initialized", NULL, NULL, NULL);
	backend_answers("\"method\":\"tools/list\"", "application/json", NULL, BE_TOOLS);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("tools/list on lc1: got '%s'", c->tx ? c->tx : "");
	c = mcp_post(s0, list);
	backend_answers("\"method\":\"initialize\"", "application/json", "mcp-session-id: B0\r\n",
			BE_INIT);
	backend_answers("notifications/initialized", NULL, NULL, NULL);
	backend_answers("\"method\":\"tools/list\"", "application/json", NULL, BE_TOOLS);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("tools/list on lc0: got '%s'", c->tx ? c->tx : "");
	/* the GET streams: lc1's backend GET refused, lc0's open */
	struct arn_tcp_conn *g1 = client1();
	snprintf(req, sizeof(req),
		 "GET /mcp HTTP/1.1\r\nHost: a\r\nAccept: text/event-stream\r\nMcp-Session-Id: "
		 "%s\r\n\r\n",
		 s1);
	send_s(g1, req);
	poll_ms(1);
	if (!answered(g1, "HTTP/1.1 200"))
		fail_msg("GET stream on lc1: got '%s'", g1->tx ? g1->tx : "");
	struct arn_tcp_conn *u = upstream_accepts();
	want_in(u->tx, "mcp-session-id: B1\r\n");
	send_s(u,
	       "HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
	poll_ms(1);
	struct arn_tcp_conn *g0 = mcp_get_stream(s0);
	struct arn_tcp_conn *bget = upstream_accepts();
	want_in(bget->tx, "mcp-session-id: B0\r\n");
	send_s(bget, BE_GET_OPEN);
	poll_ms(1);
	assert_int_equal(upstream_pending(), 0);

	/* on lc0's client's backend GET stream: that client is told, lc1's
	 * catalog goes */
	size_t b0 = g0->tx_len, b1 = g1->tx_len;
	upstream_chunk(bget, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
			     "tools/list_changed\"}\n\n");
	poll_ms(1);
	want_in(g0->tx + b0, "\"method\":\"notifications/tools/list_changed\"");
	want_not_in(g1->tx + b1, "list_changed");
	c = mcp_post_on(client1(), s1, list);
	assert_int_equal(c->tx_len, 0); /* the catalog is gone: the backend is asked */
	backend_answers("\"method\":\"tools/list\"", "application/json", NULL, BE_TOOLS);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("tools/list on lc1 after it: got '%s'", c->tx ? c->tx : "");

	/* on a call's stream on lc0 (its catalog built again first), three
	 * times at once: both GET streams are told, lc1's once (what lc0 owes
	 * it coalesces until its next poll: a backend saying it without
	 * pause fills no inbox), and lc1's catalog goes again */
	b0 = g0->tx_len;
	b1 = g1->tx_len;
	c = mcp_post(s0, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{"
			 "\"name\":\"b__echo\",\"arguments\":{}}}");
	backend_answers("\"method\":\"tools/list\"", "application/json", NULL, BE_TOOLS);
	u = upstream_accepts();
	want_in(u->tx, "\"method\":\"tools/call\"");
#define LC_EVENT "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n"
	static const char sse[] = LC_EVENT LC_EVENT LC_EVENT
	    "data: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[]}}\n\n";
#undef LC_EVENT
	char resp[512];
	snprintf(resp, sizeof(resp),
		 "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: %zu\r\n"
		 "connection: close\r\n\r\n%s",
		 strlen(sse), sse);
	send_s(u, resp);
	poll_ms(1);
	poll_ms(1);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("tools/call on lc0: got '%s'", c->tx ? c->tx : "");
	unsigned n0 = 0, n1 = 0;
	for (const char *p = g0->tx + b0; (p = strstr(p, "tools/list_changed")) != NULL; p++)
		n0++;
	for (const char *p = g1->tx + b1; (p = strstr(p, "tools/list_changed")) != NULL; p++)
		n1++;
	assert_int_equal(n0, 3);
	assert_int_equal(n1, 1);
	assert_int_equal(stat("http.in.mcp_list_changed"), 5);
	assert_int_equal(stat("http.in.mcp_list_changed_dropped"), 0);
	c = mcp_post_on(client1(), s1, list);
	assert_int_equal(c->tx_len, 0);
	backend_answers("\"method\":\"tools/list\"", "application/json", NULL, BE_TOOLS);
	if (!answered(c, "HTTP/1.1 200"))
		fail_msg("tools/list on lc1 after the call: got '%s'", c->tx ? c->tx : "");
}

/* ---- the transport seam (docs/tls.md, integration plan 1) ------------------------------- */

/* A transport that is not TCP's bytes as they are (as TLS's is not): its
 * input comes from a string, a byte at a time, its output goes to a
 * buffer, and it counts its shutdowns. */
struct test_tp {
	struct http_transport t;
	const char *src;
	size_t len, off;
	char out[256];
	size_t out_len;
	unsigned fills, shutdowns;
};

static uint32_t ttp_fill(struct http_transport *t, struct arn_tcp_conn *tc, struct http_in *in)
{
	struct test_tp *x = (struct test_tp *)(void *)t;
	(void)tc;
	x->fills++;
	if (x->off == x->len || in->bytes >= HTTP_IN_MAX)
		return 0;
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	assert_non_null(m);
	*rte_pktmbuf_mtod(m, char *) = x->src[x->off++];
	m->data_len = 1;
	m->pkt_len = 1;
	http_in_append(in, m);
	return 1;
}

static int ttp_flush(struct http_transport *t, struct arn_tcp_conn *tc, struct http_out *o)
{
	struct test_tp *x = (struct test_tp *)(void *)t;
	(void)tc;
	assert_null(o->chain);
	assert_true(x->out_len + o->stage_len <= sizeof(x->out));
	memcpy(x->out + x->out_len, o->stage + o->stage_off, o->stage_len);
	x->out_len += o->stage_len;
	o->stage_off = o->stage_len = 0;
	return 0;
}

static void ttp_shutdown(struct http_transport *t, struct arn_tcp_conn *tc)
{
	(void)tc;
	((struct test_tp *)(void *)t)->shutdowns++;
}

static const struct http_transport_ops ttp_ops = {
    .fill = ttp_fill,
    .flush = ttp_flush,
    .shutdown = ttp_shutdown,
};

/*
 * The HTTP/1 codec takes its input from, and hands its output to, the
 * peer's transport, not TCP: with no TCP connection at all, a request
 * arrives through the transport's fill and the queued output leaves through
 * its flush. What TLS termination (issue 18) stands on.
 */
static void test_codec_goes_through_the_transport(void **state)
{
	(void)state;
	static const char req[] = "GET /tls HTTP/1.1\r\nHost: a\r\n\r\n";
	struct test_tp x = {.t.ops = &ttp_ops, .src = req, .len = sizeof(req) - 1};
	struct http_h1_peer h;
	http_h1_peer_init(&h, NULL, NULL);
	assert_ptr_equal(h.tp, &http_transport_raw);
	h.tp = &x.t;
	struct arn_h1_header hdrs[8];
	static char scratch[HTTP_SCRATCH];
	struct http_msg_more more = {0};
	struct http_msgbuf mb = {.scratch = scratch, .more = &more};
	arn_h1_msg_init(&mb.m, hdrs, 8);
	struct arn_h1_config cfg = {.max_headers = 8};
	http_h1_serve(&h, &cfg, &mb.m);
	struct http_ev ev = {0};
	int rc;
	do
		rc = h.peer.codec->decode(&h.peer, &mb, true, &ev);
	while (rc == 0 && ev.type == HTTP_EV_NONE);
	assert_int_equal(rc, 0);
	assert_int_equal(ev.type, HTTP_EV_HEAD);
	assert_int_equal(mb.m.method, ARN_H1_M_GET);
	assert_true(x.fills >= sizeof(req) - 1);
	memcpy(h.out.stage, "0\r\n\r\n", 5);
	h.out.stage_len = 5;
	h.peer.queued = true;
	assert_int_equal(h.peer.codec->flush(&h.peer), 0);
	assert_false(h.peer.queued);
	assert_int_equal(x.out_len, 5);
	assert_memory_equal(x.out, "0\r\n\r\n", 5);
	http_tp_shutdown(h.tp, NULL);
	assert_int_equal(x.shutdowns, 1);
	http_pins_release(&mb.pins);
	http_h1_peer_free(&h);
	assert_int_equal(rte_mempool_in_use_count(pool), 0);
}

/* ---- issue 17: a response body's last bytes and its END in one decode ---------------------- */

/* @p s appended to @p h's input as one segment (as TCP would give it). */
static void be_feed(struct http_h1_peer *h, const char *s)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	assert_non_null(m);
	size_t n = strlen(s);
	assert_true(n <= rte_pktmbuf_tailroom(m));
	memcpy(rte_pktmbuf_mtod(m, char *), s, n);
	m->data_len = (uint16_t)n;
	m->pkt_len = (uint32_t)n;
	http_in_append(&h->in, m);
}

/* The next event (not HTTP_EV_NONE) of @p h, fused or as decode() gives it;
 * @return decode's rc. */
static int be_next(struct http_h1_peer *h, struct http_msgbuf *mb, bool fused, bool keep,
		   struct http_ev *ev)
{
	int rc;
	do
		rc = fused ? http_h1_decode_fused(&h->peer, mb, keep, ev)
			   : h->peer.codec->decode(&h->peer, mb, keep, ev);
	while (rc == 0 && ev->type == HTTP_EV_NONE);
	return rc;
}

/* One event of type @p t with body bytes @p body (NULL: none looked at). */
static void be_expect(struct http_h1_peer *h, struct http_msgbuf *mb, bool fused, bool keep,
		      enum http_ev_type t, const char *body)
{
	struct http_ev ev = {0};
	assert_int_equal(be_next(h, mb, fused, keep, &ev), 0);
	assert_int_equal(ev.type, t);
	if (body) {
		assert_int_equal(ev.len, strlen(body));
		assert_memory_equal(ev.data, body, ev.len);
	}
}

/* A response head of @p h: fused, with the body bytes @p body that
 * followed it in its segment ("": none) and its END when @p end; alone
 * from decode(). */
static void be_head(struct http_h1_peer *h, struct http_msgbuf *mb, bool fused, const char *body,
		    bool end)
{
	struct http_ev ev = {.len = 99, .end = true}; /* what a decode must set */
	assert_int_equal(be_next(h, mb, fused, true, &ev), 0);
	assert_int_equal(ev.type, HTTP_EV_HEAD);
	if (!fused) {
		assert_false(ev.end);
		return;
	}
	assert_int_equal(ev.len, strlen(body));
	if (ev.len)
		assert_memory_equal(ev.data, body, ev.len);
	assert_int_equal(ev.end, end);
}

/*
 * Issue 17: a head's segment that the input is done with once the head is
 * decoded (a GET whose END came with it, a response whose body and END
 * came with it) goes to the head's pins with the input's reference: the
 * pins hold its one reference, the input no longer lists it, and releasing
 * the pins frees it. A segment that holds more (a pipelined request's
 * next one, a body not read yet) stays in the input, and the pins take a
 * reference of their own, as before. Nothing leaks either way.
 */
static void test_head_segment_to_pins(void **state)
{
	(void)state;
	struct test_tp x = {.t.ops = &ttp_ops};
	struct arn_h1_header hdrs[8];
	static char scratch[HTTP_SCRATCH];
	struct http_msg_more more = {0};
	struct http_msgbuf mb = {.scratch = scratch, .more = &more};
	struct arn_h1_config cfg = {.max_headers = 8};
	struct http_h1_peer h;

	/* a client's GET, alone in its segment: handed */
	http_h1_peer_init(&h, NULL, NULL);
	h.tp = &x.t;
	arn_h1_msg_init(&mb.m, hdrs, 8);
	http_h1_serve(&h, &cfg, &mb.m);
	be_feed(&h, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
	struct http_ev ev = {0};
	assert_int_equal(be_next(&h, &mb, false, true, &ev), 0);
	assert_int_equal(ev.type, HTTP_EV_HEAD);
	assert_true(ev.end);
	assert_null(h.in.head);
	assert_int_equal(mb.pins.n, 1);
	assert_int_equal(rte_mbuf_refcnt_read(mb.pins.seg[0]), 1);
	assert_memory_equal(mb.m.path.p, "/a", 2); /* the slices still read */
	http_pins_release(&mb.pins);
	assert_int_equal(rte_mempool_in_use_count(pool), 0);

	/* two pipelined GETs in one segment: the first's head leaves it in
	 * the input, pinned once more; the second's is then handed */
	arn_h1_msg_init(&mb.m, hdrs, 8);
	be_feed(&h, "GET /b HTTP/1.1\r\nHost: x\r\n\r\nGET /c HTTP/1.1\r\nHost: x\r\n\r\n");
	assert_int_equal(be_next(&h, &mb, false, true, &ev), 0);
	assert_int_equal(ev.type, HTTP_EV_HEAD);
	assert_non_null(h.in.head);
	assert_int_equal(mb.pins.n, 1);
	assert_ptr_equal(mb.pins.seg[0], h.in.head);
	assert_int_equal(rte_mbuf_refcnt_read(h.in.head), 2);
	http_pins_release(&mb.pins);
	h.peer.codec->release(&h.peer);
	arn_h1_msg_init(&mb.m, hdrs, 8);
	assert_int_equal(be_next(&h, &mb, false, true, &ev), 0);
	assert_int_equal(ev.type, HTTP_EV_HEAD);
	assert_memory_equal(mb.m.path.p, "/c", 2);
	assert_null(h.in.head);
	assert_int_equal(rte_mbuf_refcnt_read(mb.pins.seg[0]), 1);
	http_pins_release(&mb.pins);
	assert_int_equal(rte_mempool_in_use_count(pool), 0);

	/* a POST whose body is in the head's segment: not handed */
	arn_h1_msg_init(&mb.m, hdrs, 8);
	be_feed(&h, "POST /d HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nab");
	assert_int_equal(be_next(&h, &mb, false, true, &ev), 0);
	assert_int_equal(ev.type, HTTP_EV_HEAD);
	assert_false(ev.end);
	assert_non_null(h.in.head);
	assert_int_equal(rte_mbuf_refcnt_read(h.in.head), 2);
	http_pins_release(&mb.pins);
	http_h1_peer_free(&h);
	assert_int_equal(rte_mempool_in_use_count(pool), 0);

	/* an upstream's response, head, body and END in one segment
	 * (fused): handed, the body's bytes readable until the pins go */
	http_h1_peer_init(&h, NULL, NULL);
	h.tp = &x.t;
	arn_h1_msg_init(&mb.m, hdrs, 8);
	http_h1_expect(&h, &mb.m, 8, ARN_H1_M_GET);
	be_feed(&h, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
	assert_int_equal(be_next(&h, &mb, true, true, &ev), 0);
	assert_int_equal(ev.type, HTTP_EV_HEAD);
	assert_true(ev.end);
	assert_int_equal(ev.len, 2);
	assert_null(h.in.head);
	assert_int_equal(mb.pins.n, 1);
	assert_int_equal(rte_mbuf_refcnt_read(mb.pins.seg[0]), 1);
	http_h1_reuse(&h); /* the connection's reuse: nothing of it left to free */
	assert_memory_equal(ev.data, "ok", 2);
	http_pins_release(&mb.pins);
	http_h1_peer_free(&h);
	assert_int_equal(rte_mempool_in_use_count(pool), 0);
}

/*
 * Issue 17: a response whose last body bytes and end come in one segment
 * is one event from http_h1_decode_fused (HTTP_EV_BODY_END), where decode()
 * gives a BODY and an END: a Content-Length body, a chunked one whose last
 * chunk follows the data (the chunks before it are BODY events), on a
 * connection that goes on and on one that closes after the response. The
 * END is not given again, the bytes stay readable in their segment until
 * the next decode, and the connection's next response decodes as usual.
 * A body that ends in a later segment than its last bytes, or a last chunk
 * with trailers, or one cut short, gives its END by itself, as before.
 * And a Content-Length body's bytes in the head's segment come with the
 * HEAD itself (data, len; end when they were its last), as does the END of
 * a keep-alive response without a body (204, 304, a HEAD's); a head whose
 * body is not in its segment comes alone.
 */
static void test_response_body_end_in_one_decode(void **state)
{
	(void)state;
	static const char head_cl[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n";
	static const char head_ch[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
	struct test_tp x = {.t.ops = &ttp_ops}; /* nothing to fill: the test feeds */
	struct arn_h1_header hdrs[8];
	static char scratch[HTTP_SCRATCH];
	struct http_msg_more more = {0};
	struct http_msgbuf mb = {.scratch = scratch, .more = &more};
	for (int fused = 0; fused < 2; fused++) {
		struct http_h1_peer h;
		http_h1_peer_init(&h, NULL, NULL);
		h.tp = &x.t;
		arn_h1_msg_init(&mb.m, hdrs, 8);
		enum http_ev_type last = fused ? HTTP_EV_BODY_END : HTTP_EV_BODY;
		struct http_ev ev;

		/* Content-Length, in the head's segment: one event fused */
		http_h1_expect(&h, &mb.m, 8, ARN_H1_M_GET);
		char one[128];
		snprintf(one, sizeof(one), "%sab", head_cl);
		be_feed(&h, one);
		be_head(&h, &mb, fused, "ab", true);
		if (fused) {
			/* taken: the parser is between messages, the bytes'
			 * segment used up and handed to the head's pins
			 * (pin_late), the input's reference with it */
			assert_true(arn_h1_parser_idle(&h.p));
			assert_null(h.in.head);
			assert_int_equal(h.in.bytes, 0);
			assert_int_equal(mb.pins.n, 1);
			assert_int_equal(rte_mbuf_refcnt_read(mb.pins.seg[0]), 1);
		}
		http_pins_release(&mb.pins);
		if (!fused) {
			be_expect(&h, &mb, fused, false, last, "ab");
			be_expect(&h, &mb, fused, false, HTTP_EV_END, NULL);
		}
		assert_int_equal(be_next(&h, &mb, fused, false, &ev), -EAGAIN);

		/* chunked: two chunks and the last one in a segment */
		http_h1_expect(&h, &mb.m, 8, ARN_H1_M_GET);
		snprintf(one, sizeof(one), "%s2\r\nab\r\n3\r\ncde\r\n0\r\n\r\n", head_ch);
		be_feed(&h, one);
		be_expect(&h, &mb, fused, true, HTTP_EV_HEAD, NULL);
		http_pins_release(&mb.pins);
		be_expect(&h, &mb, fused, false, HTTP_EV_BODY, "ab");
		be_expect(&h, &mb, fused, false, last, "cde");
		if (!fused)
			be_expect(&h, &mb, fused, false, HTTP_EV_END, NULL);
		assert_true(arn_h1_parser_idle(&h.p));
		assert_int_equal(mb.m.body_len, 5);
		assert_false(mb.m.flags & ARN_H1_F_TRAILERS);
		assert_int_equal(be_next(&h, &mb, fused, false, &ev), -EAGAIN);

		/* a body split over two segments: its first bytes with the
		 * head (fused), its END with the second */
		http_h1_expect(&h, &mb.m, 8, ARN_H1_M_GET);
		be_feed(&h, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nab");
		be_head(&h, &mb, fused, "ab", false);
		http_pins_release(&mb.pins);
		if (!fused)
			be_expect(&h, &mb, fused, false, HTTP_EV_BODY, "ab");
		assert_int_equal(be_next(&h, &mb, fused, false, &ev), -EAGAIN);
		be_feed(&h, "cd");
		be_expect(&h, &mb, fused, false, last, "cd");
		if (!fused)
			be_expect(&h, &mb, fused, false, HTTP_EV_END, NULL);
		assert_int_equal(be_next(&h, &mb, fused, false, &ev), -EAGAIN);

		/* the last chunk in the next segment, or with a trailer: its
		 * own END */
		http_h1_expect(&h, &mb.m, 8, ARN_H1_M_GET);
		snprintf(one, sizeof(one), "%s2\r\nab\r\n0\r", head_ch);
		be_feed(&h, one);
		be_expect(&h, &mb, fused, true, HTTP_EV_HEAD, NULL);
		http_pins_release(&mb.pins);
		be_expect(&h, &mb, fused, false, HTTP_EV_BODY, "ab");
		assert_int_equal(be_next(&h, &mb, fused, false, &ev), -EAGAIN);
		be_feed(&h, "\n\r\n");
		be_expect(&h, &mb, fused, false, HTTP_EV_END, NULL);
		http_pins_release(&mb.pins);
		http_h1_expect(&h, &mb.m, 8, ARN_H1_M_GET);
		snprintf(one, sizeof(one), "%s2\r\nab\r\n0\r\nX-T: 1\r\n\r\n", head_ch);
		be_feed(&h, one);
		be_expect(&h, &mb, fused, true, HTTP_EV_HEAD, NULL);
		http_pins_release(&mb.pins);
		be_expect(&h, &mb, fused, false, HTTP_EV_BODY, "ab");
		be_expect(&h, &mb, fused, false, HTTP_EV_END, NULL);
		assert_true(mb.m.flags & ARN_H1_F_TRAILERS);
		assert_int_equal(mb.m.n_trailers, 1);
		http_pins_release(&mb.pins);

		/* a head whose body is in the next segment: alone */
		http_h1_expect(&h, &mb.m, 8, ARN_H1_M_GET);
		be_feed(&h, head_cl);
		be_head(&h, &mb, fused, "", false);
		http_pins_release(&mb.pins);
		be_feed(&h, "ab");
		be_expect(&h, &mb, fused, false, last, "ab");
		if (!fused)
			be_expect(&h, &mb, fused, false, HTTP_EV_END, NULL);
		assert_int_equal(be_next(&h, &mb, fused, false, &ev), -EAGAIN);

		/* keep-alive responses without a body: their END with the head
		 * (fused), as a GET's comes with its head; the next response
		 * is in the same segment */
		http_h1_expect(&h, &mb.m, 8, ARN_H1_M_GET);
		be_feed(&h, "HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 304 Not Modified\r\n\r\n");
		be_head(&h, &mb, fused, "", true);
		if (!fused)
			be_expect(&h, &mb, fused, true, HTTP_EV_END, NULL);
		assert_true(arn_h1_parser_idle(&h.p));
		http_pins_release(&mb.pins);
		http_h1_expect(&h, &mb.m, 8, ARN_H1_M_GET);
		be_head(&h, &mb, fused, "", true);
		if (!fused)
			be_expect(&h, &mb, fused, true, HTTP_EV_END, NULL);
		assert_int_equal(mb.m.status, 304);
		http_pins_release(&mb.pins);
		http_h1_expect(&h, &mb.m, 8, ARN_H1_M_HEAD);
		be_feed(&h, head_cl);
		be_head(&h, &mb, fused, "", true);
		if (!fused)
			be_expect(&h, &mb, fused, true, HTTP_EV_END, NULL);
		assert_int_equal(be_next(&h, &mb, fused, false, &ev), -EAGAIN);
		http_pins_release(&mb.pins);

		/* a connection that closes after the response: its END too */
		http_h1_expect(&h, &mb.m, 8, ARN_H1_M_GET);
		be_feed(&h, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nab");
		be_head(&h, &mb, fused, "ab", true);
		http_pins_release(&mb.pins);
		if (!fused) {
			be_expect(&h, &mb, fused, false, last, "ab");
			be_expect(&h, &mb, fused, false, HTTP_EV_END, NULL);
		}
		assert_false(arn_h1_parser_idle(&h.p)); /* closed: no next message */
		assert_int_equal(be_next(&h, &mb, fused, false, &ev), -EAGAIN);

		http_pins_release(&mb.pins);
		http_h1_peer_free(&h);
	}
	assert_int_equal(rte_mempool_in_use_count(pool), 0);
}

/* ---- issue 17: a response's first body bytes join its queued head -------------------------- */

/* A transport that keeps what a flush hands it, in order (the chain, the
 * staged bytes, the data, the CRLF), counting the chains and the pieces. */
struct join_tp {
	struct http_transport t;
	char out[4096];
	size_t out_len;
	unsigned chains, pieces;
};

static void jtp_put(struct join_tp *x, const void *p, size_t n)
{
	assert_true(x->out_len + n <= sizeof(x->out));
	memcpy(x->out + x->out_len, p, n);
	x->out_len += n;
}

static int jtp_flush(struct http_transport *t, struct arn_tcp_conn *tc, struct http_out *o)
{
	struct join_tp *x = (struct join_tp *)(void *)t;
	(void)tc;
	if (o->chain) {
		for (struct rte_mbuf *m = o->chain; m; m = m->next)
			jtp_put(x, rte_pktmbuf_mtod(m, char *), m->data_len);
		rte_pktmbuf_free(o->chain);
		o->chain = NULL;
		x->chains++;
	}
	if (o->stage_len) {
		jtp_put(x, o->stage + o->stage_off, o->stage_len);
		o->stage_off = o->stage_len = 0;
		x->pieces++;
	}
	if (o->data_len) {
		jtp_put(x, o->data, o->data_len);
		o->data_len = 0;
		x->pieces++;
	}
	o->seg = NULL;
	if (o->crlf) {
		jtp_put(x, &"\r\n"[2 - o->crlf], o->crlf);
		o->crlf = 0;
		x->pieces++;
	}
	return 0;
}

static const struct http_transport_ops jtp_ops = {
    .fill = ttp_fill,
    .flush = jtp_flush,
    .shutdown = ttp_shutdown,
};

/*
 * Issue 17: the body bytes a response's head came with go into the head's
 * mbuf while the head waits in the client's output (the usual response:
 * its head and its short body then go to TCP as one mbuf, not as the head
 * and a reference TCP copies from): nothing is left as a piece, and the
 * flush hands on one chain with the head and the bytes, in order. Not a
 * body larger than a copy pays for (over 900 bytes: by reference as
 * before), not a chunked one (its chunk's framing is staged), not bytes
 * after the head already went.
 */
static void test_response_body_joins_its_head(void **state)
{
	(void)state;
	start(4, jlistener("", DIRECT_OK));
	struct arn_h1_header hdrs[8];
	static char scratch[HTTP_SCRATCH];
	struct http_msg_more more = {0};
	struct http_msgbuf mb = {.scratch = scratch, .more = &more};
	static char big_body[1001];
	memset(big_body, 'x', 1000);
	static const struct {
		const char *head, *body;
		bool joined;
	} cases[] = {
	    {"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n", "ab", true},
	    {"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", big_body, false},
	    {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "2\r\nab\r\n0\r\n\r\n",
	     false},
	};
	for (int flushed = 0; flushed < 2; flushed++)
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			struct join_tp x = {.t.ops = &jtp_ops};
			struct http_h1_peer up, dn;
			http_h1_peer_init(&up, NULL, NULL);
			http_h1_peer_init(&dn, w, NULL);
			dn.tp = &x.t;
			arn_h1_msg_init(&mb.m, hdrs, 8);
			http_h1_expect(&up, &mb.m, 8, ARN_H1_M_GET);
			char one[1200];
			snprintf(one, sizeof(one), "%s%s", cases[i].head, cases[i].body);
			be_feed(&up, one);
			struct http_ev ev = {0};
			assert_int_equal(be_next(&up, &mb, true, true, &ev), 0);
			assert_int_equal(ev.type, HTTP_EV_HEAD);
			struct http_head_info hi = {.req_method = ARN_H1_M_GET, .req_version = 11};
			assert_int_equal(
			    dn.peer.codec->encode_response_head(&dn.peer, &mb.m, NULL, 0, &hi), 0);
			assert_non_null(dn.out.chain);
			uint32_t head_len = dn.out.chain->pkt_len;
			if (flushed) {
				assert_int_equal(dn.peer.codec->flush(&dn.peer), 0);
				assert_int_equal(x.chains, 1);
			}
			const char *data = ev.data;
			size_t len = ev.len;
			if (!len) { /* chunked: the body's own event */
				http_pins_release(&mb.pins);
				assert_int_equal(be_next(&up, &mb, true, false, &ev), 0);
				data = ev.data;
				len = ev.len;
			}
			assert_int_equal(len, cases[i].joined ? 2 : i == 1 ? 1000 : 2);
			dn.peer.codec->encode_body(&dn.peer, data, len);
			assert_true(dn.peer.queued);
			bool joined = cases[i].joined && !flushed;
			if (joined) {
				assert_int_equal(dn.out.data_len, 0);
				assert_int_equal(dn.out.chain->pkt_len, head_len + len);
			} else {
				assert_int_equal(dn.out.data_len, len);
			}
			assert_int_equal(dn.peer.codec->flush(&dn.peer), 0);
			assert_false(dn.peer.queued);
			assert_int_equal(x.chains, 1);
			assert_int_equal(x.pieces, joined ? 0 : i == 2 ? 3 : 1);
			/* the bytes, in order, after the head */
			assert_true(x.out_len >= head_len + len);
			assert_memory_equal(x.out + head_len + (i == 2 ? 3 : 0), data, len);
			assert_memory_equal(x.out + head_len - 4, "\r\n\r\n", 4);
			http_pins_release(&mb.pins);
			http_h1_peer_free(&up);
			http_h1_peer_free(&dn);
		}
}

/* ---- issue 18: upstream TLS and the pools ---------------------------------------------------- */

/*
 * A pool outlives a cluster update that keeps its endpoint; a cluster that
 * turns to TLS must not send the next request over the plain connection
 * idling in it: it closes, and a new connection starts with a ClientHello.
 */
static void test_cluster_turned_tls_reuses_no_plain_connection(void **state)
{
	(void)state;
	start(4, jlistener("", "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}"));
	struct arn_tcp_conn *c = client();
	send_s(c, "GET /a HTTP/1.1\r\nHost: a\r\n\r\n");
	struct arn_tcp_conn *u = upstream_accepts();
	send_s(u, "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"); /* keep-alive */
	assert_true(answered(c, "HTTP/1.1 200 OK\r\n"));
	poll_ms(1);
	assert_false(u->closed); /* idle in the pool */
	apply(C, "2",
	      "{\"name\":\"web\",\"type\":\"STATIC\",\"connect_timeout\":\"5s\","
	      "\"load_assignment\":{\"cluster_name\":\"web\",\"endpoints\":[{\"lb_endpoints\":[{"
	      "\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"198.18.0.10\","
	      "\"port_value\":8080}}}}]}]},\"transport_socket\":{\"name\":\"tls\","
	      "\"typed_config\":{\"@type\":\"type.googleapis.com/"
	      "envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext\",\"sni\":"
	      "\"web.test\"}}}");
	arn_http_poll(); /* the control lcore builds the cluster's TLS context */
	poll_ms(1);	 /* the worker takes the new generation */
	struct arn_tcp_conn *c2 = client();
	send_s(c2, "GET /b HTTP/1.1\r\nHost: a\r\n\r\n");
	assert_true(u->closed);
	assert_null(strstr(u->tx, "GET /b"));
	struct arn_tcp_conn *u2 = upstream_accepts();
	assert_true(u2->tx_len > 5);
	assert_int_equal((unsigned char)u2->tx[0], 0x16);	    /* a TLS handshake record */
	assert_non_null(memmem(u2->tx, u2->tx_len, "web.test", 8)); /* the SNI */
	assert_null(memmem(u2->tx, u2->tx_len, "GET /b", 6));
}

/* The upstream's FIN (or RST) for connection @p u, before any byte of an answer. */
static void upstream_closes(struct arn_tcp_conn *u, int reason)
{
	u->closed = u->close_pending = true;
	u->close_reason = reason;
}

/* The keep-alive race (RFC 9112 9.3.1): the upstream closes an idle
 * connection while the request the pool gave it is on its way. An
 * idempotent request without a body is sent once more on a new connection
 * (as HAProxy and nginx do); a POST is not, a request already replayed is
 * not, and neither is one whose connection was new. */
static void test_reused_connection_closed_replays_idempotent(void **state)
{
	(void)state;
	start(4, jlistener("", "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}"));
	struct arn_tcp_conn *c = client();
	send_s(c, "GET /a HTTP/1.1\r\nHost: a\r\n\r\n");
	struct arn_tcp_conn *u = upstream_accepts();
	send_s(u, "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"); /* keep-alive */
	assert_true(answered(c, "HTTP/1.1 200 OK\r\n"));
	poll_ms(1);

	/* GET on the reused connection, which closes under it */
	struct arn_tcp_conn *c2 = client();
	send_s(c2, "GET /b HTTP/1.1\r\nHost: a\r\n\r\n");
	want_in(u->tx, "GET /b");
	upstream_closes(u, 0);
	poll_ms(1); /* the close: the replay waits for the next tick */
	assert_int_equal(c2->tx_len, 0);
	poll_ms(1);
	struct arn_tcp_conn *u2 = upstream_accepts(); /* a new connection, not an idle one */
	want_in(u2->tx, "GET /b");
	send_s(u2, "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
	assert_true(answered(c2, "HTTP/1.1 200 OK\r\n"));
	assert_int_equal(stat("cluster.web.upstream_rq_reuse_replay"), 1);
	assert_int_equal(stat("cluster.web.upstream_rq_retry"), 0);
	poll_ms(1);

	/* a POST with a body on the reused u2: not sent twice, 503 UC */
	struct arn_tcp_conn *c3 = client();
	send_s(c3, "POST /c HTTP/1.1\r\nHost: a\r\ncontent-length: 1\r\n\r\nx");
	want_in(u2->tx, "POST /c");
	upstream_closes(u2, -ECONNRESET);
	poll_ms(1);
	poll_ms(1);
	assert_true(answered(c3, "HTTP/1.1 503"));
	assert_int_equal(upstream_pending(), 0);
	assert_int_equal(stat("cluster.web.upstream_rq_reuse_replay"), 1);

	/* a GET whose reused connection closes, then its replay's new one
	 * too: one replay only, then 503 */
	struct arn_tcp_conn *c4 = client();
	send_s(c4, "GET /d HTTP/1.1\r\nHost: a\r\n\r\n");
	struct arn_tcp_conn *u3 = upstream_accepts();
	send_s(u3, "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
	assert_true(answered(c4, "HTTP/1.1 200 OK\r\n"));
	poll_ms(1);
	struct arn_tcp_conn *c5 = client();
	send_s(c5, "GET /e HTTP/1.1\r\nHost: a\r\n\r\n");
	want_in(u3->tx, "GET /e");
	upstream_closes(u3, 0);
	poll_ms(1);
	poll_ms(1);
	struct arn_tcp_conn *u4 = upstream_accepts();
	want_in(u4->tx, "GET /e");
	upstream_closes(u4, 0);
	poll_ms(1);
	poll_ms(1);
	assert_true(answered(c5, "HTTP/1.1 503"));
	assert_int_equal(upstream_pending(), 0);
	assert_int_equal(stat("cluster.web.upstream_rq_reuse_replay"), 2);
}

/*
 * Issue 18: a generation is not visible before its TLS contexts. A cluster
 * that turns to TLS (a new cluster object) is used by the worker at once,
 * before the control lcore's http_rt_sync ran: its context was built when
 * the generation was prepared, so the connection starts with a ClientHello
 * instead of failing (503 UF) until the next sync.
 */
static void test_new_tls_cluster_context_before_sync(void **state)
{
	(void)state;
	start(4, jlistener("", "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}"));
	apply_no_poll = true;
	apply(C, "2",
	      "{\"name\":\"web\",\"type\":\"STATIC\",\"connect_timeout\":\"5s\","
	      "\"load_assignment\":{\"cluster_name\":\"web\",\"endpoints\":[{\"lb_endpoints\":[{"
	      "\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"198.18.0.10\","
	      "\"port_value\":8080}}}}]}]},\"transport_socket\":{\"name\":\"tls\","
	      "\"typed_config\":{\"@type\":\"type.googleapis.com/"
	      "envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext\",\"sni\":"
	      "\"web.test\"}}}");
	apply_no_poll = false;
	poll_ms(1); /* the worker takes the new generation; no arn_http_poll() */
	struct arn_tcp_conn *c = client();
	send_s(c, "GET /b HTTP/1.1\r\nHost: a\r\n\r\n");
	assert_true(!c->tx || !strstr(c->tx, "503"));
	struct arn_tcp_conn *u = upstream_accepts();
	assert_true(u->tx_len > 5);
	assert_int_equal((unsigned char)u->tx[0], 0x16);	  /* a TLS handshake record */
	assert_non_null(memmem(u->tx, u->tx_len, "web.test", 8)); /* the SNI */
	assert_int_equal(stat("cluster.web.upstream_cx_connect_fail"), 0);
}

/*
 * A brand-new cluster is used by the worker before the control lcore's
 * next http_rt_sync: its runtime object (its counters, and the ssl.* block
 * of TLS connections) is published with the generation, so the first
 * connection and request are counted under cluster.<name>. They used to
 * find no runtime object and count nothing, and a TLS connection opened
 * then kept counting into the worker's own block for as long as it lived
 * (a CI run read cluster.tlsup.ssl.handshake = 0 after 1,082 requests
 * through three such connections, e2e_tls_sds).
 */
static void test_new_cluster_counted_before_sync(void **state)
{
	(void)state;
	start(4, jlistener("", "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c5\"}}"));
	apply_no_poll = true;
	apply_clusters(5, 6, 8080, "1");
	apply_no_poll = false;
	poll_ms(1); /* the worker takes the new generation; no arn_http_poll() */
	struct http_cluster_rt *c5 = http_rt_cluster("c5", 2, arn_cfg_hash("c5", 2));
	assert_non_null(c5);
	struct arn_tcp_conn *c = client();
	send_s(c, "GET /b HTTP/1.1\r\nHost: a\r\n\r\n");
	assert_true(!c->tx || !strstr(c->tx, "503"));
	upstream_accepts();
	assert_int_equal(stat("cluster.c5.upstream_cx_total"), 1);
	assert_int_equal(stat("cluster.c5.upstream_rq_total"), 1);
}

/* Issue 17: the TLS contexts of a generation that changes one cluster
 * among many are the previous table's but the changed cluster's: the
 * table looks at that cluster only, and the others keep their contexts
 * (the same objects, with their sessions). */
static void test_tls_table_follows_the_changed_cluster(void **state)
{
	(void)state;
	start(4, jlistener("", DIRECT_OK));
	static const char tls_web[] =
	    "{\"name\":\"web\",\"type\":\"STATIC\",\"connect_timeout\":\"5s\","
	    "\"load_assignment\":{\"cluster_name\":\"web\",\"endpoints\":[{\"lb_endpoints\":[{"
	    "\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"198.18.0.10\","
	    "\"port_value\":8080}}}}]}]},\"transport_socket\":{\"name\":\"tls\","
	    "\"typed_config\":{\"@type\":\"type.googleapis.com/"
	    "envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext\",\"sni\":"
	    "\"%s\"}}}";
	char j[1024];
	snprintf(j, sizeof(j), tls_web, "web.test");
	apply(C, "2", j);
	apply_clusters(0, 200, 80, "1");
	const struct arn_cfg_cluster *web =
	    arn_cfg_find(arn_config_gen(st), ARN_CFG_CLUSTER, "web", 3, arn_cfg_hash("web", 3));
	assert_non_null(web);
	struct arn_tls_ctx *ctx = http_rt_upstream_tls(web, NULL);
	assert_non_null(ctx);
	/* another cluster changes: one looked at, web's context kept */
	apply_clusters(7, 8, 81, "2");
	assert_int_equal(http_rt_tls_clusters_walked(), 1);
	assert_ptr_equal(http_rt_upstream_tls(web, NULL), ctx);
	/* web itself changes: its new object has a context of its own */
	snprintf(j, sizeof(j), tls_web, "web2.test");
	apply(C, "3", j);
	assert_int_equal(http_rt_tls_clusters_walked(), 1);
	const struct arn_cfg_cluster *web2 =
	    arn_cfg_find(arn_config_gen(st), ARN_CFG_CLUSTER, "web", 3, arn_cfg_hash("web", 3));
	assert_ptr_not_equal(web2, web);
	assert_non_null(http_rt_upstream_tls(web2, NULL));
	assert_ptr_not_equal(http_rt_upstream_tls(web2, NULL), ctx);
}

/*
 * The TLS table carries the previous generation's contexts for workers
 * still on it, keyed by the cluster's (or the chain's) address and naming
 * the cluster. Those objects must live as long as the entries: the store
 * frees the previous generation after one grace period, the table drops
 * what it carried only at a later http_rt_sync, and a generation
 * published in between carries the entries again, reading the cluster's
 * name (freed memory), and compares their keys with its own objects'
 * addresses (a new cluster at a freed one's address would get the old
 * cluster's context). A context pins its cluster only for inline SAN
 * matchers (not here), so the entry must.
 */
static void test_tls_carried_context_keeps_its_cluster(void **state)
{
	(void)state;
	start(4, jlistener("", DIRECT_OK));
	static const char tls_web[] =
	    "{\"name\":\"web\",\"type\":\"STATIC\",\"connect_timeout\":\"5s\","
	    "\"load_assignment\":{\"cluster_name\":\"web\",\"endpoints\":[{\"lb_endpoints\":[{"
	    "\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"198.18.0.10\","
	    "\"port_value\":8080}}}}]}]},\"transport_socket\":{\"name\":\"tls\","
	    "\"typed_config\":{\"@type\":\"type.googleapis.com/"
	    "envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext\",\"sni\":"
	    "\"%s\"}}}";
	char j[1024];
	snprintf(j, sizeof(j), tls_web, "web.test");
	apply(C, "2", j);
	const struct arn_cfg_cluster *web =
	    arn_cfg_find(arn_config_gen(st), ARN_CFG_CLUSTER, "web", 3, arn_cfg_hash("web", 3));
	assert_non_null(web);
	struct arn_tls_ctx *ctx = http_rt_upstream_tls(web, NULL);
	assert_non_null(ctx);
	arn_cfg_pin(web); /* the test's, so that it may look at the object */
	/* web changes: the new generation's table carries the old context */
	snprintf(j, sizeof(j), tls_web, "web2.test");
	apply_no_poll = true;
	apply(C, "3", j);
	apply_no_poll = false;
	assert_ptr_equal(http_rt_upstream_tls(web, NULL), ctx); /* a worker on the old one */
	/* the grace period passes (no reader here): the store frees the old
	 * generation, and the sync the old table; the first sync after a
	 * publication only starts the carried entries' grace period */
	arn_config_poll(st);
	arn_http_poll();
	assert_ptr_equal(http_rt_upstream_tls(web, NULL), ctx); /* still carried */
	/* what holds the old cluster now: the test's pin and the carried entry */
	assert_int_equal(__atomic_load_n(&web->obj.refs, __ATOMIC_RELAXED), 2);
	arn_cfg_unpin(web);
	/* a generation published now carries the entry again (under ASan,
	 * reading a freed cluster's name failed here) */
	apply_no_poll = true;
	apply_clusters(7, 8, 81, "4");
	apply_no_poll = false;
	const struct arn_cfg_cluster *web2 =
	    arn_cfg_find(arn_config_gen(st), ARN_CFG_CLUSTER, "web", 3, arn_cfg_hash("web", 3));
	assert_non_null(http_rt_upstream_tls(web2, NULL));
	assert_ptr_not_equal(http_rt_upstream_tls(web2, NULL), ctx);
	/* the carried entries go once every worker passed the generations */
	for (int i = 0; i < 3; i++) {
		arn_config_poll(st);
		arn_http_poll();
	}
	assert_non_null(http_rt_upstream_tls(web2, NULL));
}

/* Issue 18: the same for a listener's new filter chain with a
 * DownstreamTlsContext: its server context is found as soon as the
 * generation that has the chain is. */
static void test_new_tls_chain_context_before_sync(void **state)
{
	(void)state;
	start(4, jlistener("", "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}"));
	struct tcert k;
	tcert_make(&k, "new.test");
	static char sj[8192];
	snprintf(sj, sizeof(sj),
		 "{\"name\":\"web\",\"tls_certificate\":{\"certificate_chain\":{\"inline_string\":"
		 "\"%s\"},\"private_key\":{\"inline_string\":\"%s\"}}}",
		 k.cert_json, k.key_json);
	apply(ARN_TYPE_URL_SECRET, "1", sj); /* the Secret (named "web" by apply) */
	static char lj[8192];
	snprintf(lj, sizeof(lj),
		 "{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
		 "\"port_value\":80}},\"filter_chains\":[{\"name\":\"tls\",\"filters\":[{\"name\":"
		 "\"hcm\",\"typed_config\":{" HCM_AT ",\"stat_prefix\":\"in\",\"route_config\":{"
		 "\"name\":\"r\",\"virtual_hosts\":[{\"name\":\"vh\",\"domains\":[\"*\"],"
		 "\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}]}]},"
		 "\"http_filters\":[" ROUTER "]}}],\"transport_socket\":{\"name\":\"tls\","
		 "\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.transport_"
		 "sockets.tls.v3.DownstreamTlsContext\",\"common_tls_context\":{"
		 "\"tls_certificate_sds_secret_configs\":[{\"name\":\"web\"}]}}}}]}");
	apply_no_poll = true;
	apply(L, "2", lj);
	apply_no_poll = false;
	tcert_free(&k);
	const struct arn_cfg_listener *l =
	    arn_cfg_find(arn_config_gen(st), ARN_CFG_LISTENER, "l", 1, arn_cfg_hash("l", 1));
	assert_non_null(l);
	const struct arn_cfg_filter_chain *fc = l->n_chains ? &l->chains[0] : l->default_chain;
	assert_non_null(fc);
	assert_non_null(fc->tls);
	assert_non_null(http_rt_tls(fc)); /* before any http_rt_sync */
	/* and the context stays once the control lcore synced */
	arn_http_poll();
	assert_non_null(http_rt_tls(fc));
}

/* ---- transport_socket_matches: each endpoint its own transport socket ------------------------ */

#define TSM_UTC(sni, more)                                                                         \
	"{\"name\":\"tls\",\"typed_config\":{\"@type\":\"type.googleapis.com/"                     \
	"envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext\",\"sni\":\"" sni "\"" more  \
	"}}"
#define TSM_EP(ip, md)                                                                             \
	"{\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"" ip                        \
	"\",\"port_value\":8080}}}" md "}"
#define TSM_MD(name)                                                                               \
	",\"metadata\":{\"filter_metadata\":{\"envoy.transport_socket_match\":{\"name\":\"" name   \
	"\"}}}"

/* Cluster web: endpoint .10 names match web/tls/0 (TLS, SNI tls0.test),
 * .11 names none (the cluster has no transport_socket: plain text). */
#define TSM_WEB_SOCKET TSM_UTC("tls0.test", "")
#define TSM_WEB_EP10 TSM_EP("198.18.0.10", TSM_MD("web/tls/0"))
#define TSM_WEB_EP11 TSM_EP("198.18.0.11", "")
#define TSM_WEB(timeout)                                                                           \
	"{\"name\":\"web\",\"type\":\"STATIC\",\"connect_timeout\":\"" timeout "\","               \
	"\"transport_socket_matches\":[{\"name\":\"web/tls/0\",\"match\":{\"name\":"               \
	"\"web/tls/0\"},\"transport_socket\":" TSM_WEB_SOCKET "}],"                                \
	"\"load_assignment\":{\"cluster_name\":\"web\",\"endpoints\":[{\"lb_endpoints\":"          \
	"[" TSM_WEB_EP10 "," TSM_WEB_EP11 "]}]}}"

/* Resource @p name of @p type (apply() names every cluster and Secret "web"). */
static void apply_named(const char *type, const char *name, const char *version, const char *json)
{
	arn_config_result_free(&res);
	upb_Arena *a = upb_Arena_New();
	const upb_MessageDef *md = arn_proto_msgdef(strrchr(type, '/') + 1);
	struct arn_sb err = ARN_SB_INIT;
	upb_Message *m = arn_proto_from_json(json, strlen(json), md, a, &err);
	if (!m)
		fail_msg("bad test JSON: %s\n%s", arn_sb_cstr(&err), json);
	arn_sb_free(&err);
	struct arn_config_resource_in in = {name, version, NULL, 0};
	in.bytes = arn_proto_encode(m, md, a, &in.len);
	assert_int_equal(arn_config_apply(st, type, &in, 1, NULL, 0, 0, &res), 0);
	upb_Arena_Free(a);
	if (!res.accepted || res.n_errors)
		fail_msg("refused: %s\n%s", res.n_errors ? res.errors[0].message : "?", json);
	arn_http_poll();
}

/* The upstream connection the proxy opened to @p raddr, connected now. */
static struct arn_tcp_conn *upstream_at(uint32_t raddr)
{
	struct arn_tcp_conn *u = NULL;
	for (unsigned i = 0; i < CONNS; i++)
		if (conns[i].used && conns[i].upstream && !conns[i].connected && !conns[i].closed &&
		    conns[i].raddr == raddr)
			u = &conns[i];
	assert_non_null(u);
	u->connected = true;
	u->ops->on_connected(u, 0);
	return u;
}

static const struct arn_cfg_cluster *web_cluster(void)
{
	return arn_cfg_find(arn_config_gen(st), ARN_CFG_CLUSTER, "web", 3, arn_cfg_hash("web", 3));
}

/*
 * Envoy Gateway's shape (a backendRef with a BackendTLSPolicy beside one
 * without): the endpoint whose envoy.transport_socket_match metadata names
 * the match connects with the match's UpstreamTlsContext (a ClientHello
 * with its SNI), the other with the cluster's own transport socket (none:
 * plain text). The choice is the host's, made once when the control lcore
 * built the cluster's generation.
 */
static void test_tsm_endpoint_takes_its_match(void **state)
{
	(void)state;
	start(4, jlistener("", "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}"));
	apply(C, "2", TSM_WEB("5s"));
	const struct arn_cfg_cluster *web = web_cluster();
	assert_non_null(web);
	struct http_cluster_rt *crt = http_rt_cluster("web", 3, arn_cfg_hash("web", 3));
	assert_non_null(crt);
	struct http_host *h10 = http_rt_host(crt, 0xc612000au, 8080),
			 *h11 = http_rt_host(crt, 0xc612000bu, 8080);
	assert_non_null(h10);
	assert_non_null(h11);
	/* the hosts' choices (health checks take the same) */
	assert_ptr_equal(http_rt_host_tsm(web, crt, NULL, h10, h10->addr, h10->port),
			 &web->ts_matches[0]);
	assert_ptr_equal(http_rt_host_tsm(web, crt, NULL, h11, h11->addr, h11->port),
			 &web->ts_default);
	assert_non_null(http_rt_tsm_tls(&web->ts_matches[0], crt));
	/* Envoy's TransportSocketMatchStats: each host's choice counted once */
	assert_int_equal(stat("cluster.web.web/tls/0.total_match_count"), 1);
	assert_int_equal(stat("cluster.web.default.total_match_count"), 1);
	poll_ms(1);
	/* round robin: one request to each endpoint, both waiting to connect */
	struct arn_tcp_conn *c1 = client(), *c2 = client();
	send_s(c1, "GET /a HTTP/1.1\r\nHost: a\r\n\r\n");
	send_s(c2, "GET /b HTTP/1.1\r\nHost: a\r\n\r\n");
	assert_int_equal(upstream_pending(), 2);
	struct arn_tcp_conn *u10 = upstream_at(0xc612000au), *u11 = upstream_at(0xc612000bu);
	assert_true(u10->tx_len > 5);
	assert_int_equal((unsigned char)u10->tx[0], 0x16);	       /* a TLS handshake record */
	assert_non_null(memmem(u10->tx, u10->tx_len, "tls0.test", 9)); /* the match's SNI */
	assert_null(memmem(u10->tx, u10->tx_len, "GET /", 5));
	assert_true(u11->tx_len > 5);
	assert_memory_equal(u11->tx, "GET /", 5); /* plain text */
	assert_int_equal(stat("cluster.web.upstream_cx_connect_fail"), 0);
	/* an EDS-like change that keeps the Cluster and the hosts' choices
	 * counts nothing; a new Cluster object counts every host again */
	arn_cfg_pin(web); /* the test's: the stream's generation below */
	apply(C, "3", TSM_WEB("6s"));
	/* a stream still on the previous Cluster object: the hosts' choices
	 * are the new object's, so its own endpoints decide (a walk of the
	 * stream's, or the sorted table's when it has none) */
	assert_ptr_not_equal(web_cluster(), web);
	assert_ptr_equal(
	    http_rt_host_tsm(web, crt, web->static_endpoints, h10, h10->addr, h10->port),
	    &web->ts_matches[0]);
	assert_ptr_equal(
	    http_rt_host_tsm(web, crt, web->static_endpoints, h11, h11->addr, h11->port),
	    &web->ts_default);
	assert_ptr_equal(http_rt_host_tsm(web, crt, NULL, h10, h10->addr, h10->port),
			 &web->ts_matches[0]);
	assert_ptr_equal(http_rt_host_tsm(web, crt, NULL, NULL, h11->addr, h11->port),
			 &web->ts_default);
	arn_cfg_unpin(web);
	assert_int_equal(stat("cluster.web.web/tls/0.total_match_count"), 2);
	assert_int_equal(stat("cluster.web.default.total_match_count"), 2);
}

/*
 * Each match's context is its own (built with its Secrets, keyed by the
 * match): a Secret change rebuilds the context of the match that names
 * it, and the other match's and the cluster's own stay the same objects
 * (with their sessions). The cluster warmed on both matches' Secrets.
 */
static void test_tsm_secret_rotates_its_match_only(void **state)
{
	(void)state;
	start(4, jlistener("", DIRECT_OK));
	struct tcert ka, kb, ka2;
	tcert_make(&ka, "a.test");
	tcert_make(&kb, "b.test");
	tcert_make(&ka2, "a2.test");
	static char sj[8192];
	static const char vfmt[] =
	    "{\"name\":\"%s\",\"validation_context\":{\"trusted_ca\":{\"inline_string\":\"%s\"}}}";
	static const char cl[] =
	    "{\"name\":\"web\",\"type\":\"STATIC\",\"connect_timeout\":\"5s\","
	    "\"transport_socket\":" TSM_UTC(
		"own.test",
		"") ",\"transport_socket_matches\":["
		    "{\"name\":\"a\",\"match\":{\"name\":\"a\"},\"transport_socket\":" TSM_UTC(
			"a.test",
			",\"common_tls_context\":{\"validation_context_sds_secret_config\":{"
			"\"name\":\"ca-a\"}}") "},"
					       "{\"name\":\"b\",\"match\":{\"name\":\"b\"},"
					       "\"transport_socket\":" TSM_UTC(
						   "b.test",
						   ",\"common_tls_context\":{\"validation_context_"
						   "sds_secret_config\":{"
						   "\"name\":\"ca-b\"}}") "}],"
									  "\"load_assignment\":{"
									  "\"cluster_name\":"
									  "\"web\",\"endpoints\":[{"
									  "\"lb_endpoints\":"
									  "[" TSM_EP(
									      "198.18.0.10",
									      TSM_MD(
										  "a")) "," TSM_EP("198.18.0.11",
												   TSM_MD(
												       "b")) "]}]}}";
	const struct arn_cfg_cluster *before = web_cluster();
	apply(C, "2", cl);
	assert_ptr_equal(web_cluster(), before); /* warming on ca-a and ca-b */
	snprintf(sj, sizeof(sj), vfmt, "ca-a", ka.cert_json);
	apply_named(ARN_TYPE_URL_SECRET, "ca-a", "1", sj);
	assert_ptr_equal(web_cluster(), before); /* still on ca-b */
	snprintf(sj, sizeof(sj), vfmt, "ca-b", kb.cert_json);
	apply_named(ARN_TYPE_URL_SECRET, "ca-b", "1", sj);
	const struct arn_cfg_cluster *web = web_cluster();
	assert_ptr_not_equal(web, before);
	assert_int_equal(web->n_ts_matches, 2);
	struct arn_tls_ctx *a = http_rt_tsm_tls(&web->ts_matches[0], NULL),
			   *b = http_rt_tsm_tls(&web->ts_matches[1], NULL),
			   *own = http_rt_upstream_tls(web, NULL);
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(own);
	assert_ptr_not_equal(a, b);
	assert_ptr_not_equal(a, own);
	/* ca-a rotates: a's context only */
	snprintf(sj, sizeof(sj), vfmt, "ca-a", ka2.cert_json);
	apply_named(ARN_TYPE_URL_SECRET, "ca-a", "2", sj);
	assert_ptr_equal(web_cluster(), web);
	struct arn_tls_ctx *a2 = http_rt_tsm_tls(&web->ts_matches[0], NULL);
	assert_non_null(a2);
	assert_ptr_not_equal(a2, a);
	assert_ptr_equal(http_rt_tsm_tls(&web->ts_matches[1], NULL), b);
	assert_ptr_equal(http_rt_upstream_tls(web, NULL), own);
	tcert_free(&ka);
	tcert_free(&kb);
	tcert_free(&ka2);
}

/* ---- issue 18: the TLS transport under partial writes and truncation ---------------------------
 */

/* A client of lib/tls whose bytes go to, and come from, a fake TCP
 * connection of the proxy's: what it writes waits in out[] until the test
 * hands it over (a byte at a time), it reads what the proxy wrote. */
struct tcli {
	struct arn_tls_conn c;
	struct arn_tls_worker w;
	struct arn_tls_stats st;
	struct arn_tcp_conn *srv;
	size_t rd; /* bytes of srv->tx read */
	char out[65536];
	size_t out_len, out_off;
	bool eof;
};

static int tcli_read(void *arg, void *buf, uint32_t len)
{
	struct tcli *k = arg;
	size_t n = RTE_MIN((size_t)len, k->srv->tx_len - k->rd);
	if (n) /* tx is NULL before the proxy wrote anything */
		memcpy(buf, k->srv->tx + k->rd, n);
	k->rd += n;
	return (int)n;
}

static int tcli_write(void *arg, const void *buf, uint32_t len)
{
	struct tcli *k = arg;
	assert_true(k->out_len + len <= sizeof(k->out));
	memcpy(k->out + k->out_len, buf, len);
	k->out_len += len;
	return (int)len;
}

static uint32_t tcli_space(void *arg)
{
	struct tcli *k = arg;
	return (uint32_t)(sizeof(k->out) - k->out_len);
}

static const struct arn_tls_io tcli_io = {
    .read = tcli_read, .write = tcli_write, .space = tcli_space};

/* Hand the proxy @p n more of the client's bytes (one mbuf each byte). */
static size_t tcli_deliver(struct tcli *k, size_t n)
{
	size_t given = 0;
	struct rte_mbuf **tail = &k->srv->rxq;
	while (*tail)
		tail = &(*tail)->next;
	while (given < n && k->out_off < k->out_len) {
		struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
		assert_non_null(m);
		*(char *)rte_pktmbuf_append(m, 1) = k->out[k->out_off++];
		*tail = m;
		tail = &m->next;
		k->srv->rx_bytes++;
		given++;
	}
	return given;
}

static EVP_PKEY *tkey;
static X509 *tcert;

static struct arn_tls_ctx *tls_ctx(bool server)
{
	if (!tkey) {
		tkey = EVP_EC_gen("P-256");
		tcert = X509_new();
		X509_set_version(tcert, 2);
		ASN1_INTEGER_set(X509_get_serialNumber(tcert), 1);
		X509_gmtime_adj(X509_getm_notBefore(tcert), -60);
		X509_gmtime_adj(X509_getm_notAfter(tcert), 3600);
		X509_set_pubkey(tcert, tkey);
		X509_NAME *nm = X509_get_subject_name(tcert);
		X509_NAME_add_entry_by_txt(nm, "CN", MBSTRING_ASC, (const unsigned char *)"t", -1,
					   -1, 0);
		X509_set_issuer_name(tcert, nm);
		assert_true(X509_sign(tcert, tkey, EVP_sha256()) > 0);
	}
	struct arn_tls_cert c = {.cert = tcert, .key = tkey, .name = "t"};
	struct arn_tls_ctx_conf cf = {
	    .name = server ? "server" : "client", .server = server, .replicas = 1};
	if (server) {
		cf.certs = &c;
		cf.n_certs = 1;
	}
	char err[256];
	struct arn_tls_ctx *ctx = arn_tls_ctx_new(&cf, err, sizeof(err));
	if (!ctx)
		fail_msg("%s", err);
	return ctx;
}

struct tls_rig {
	struct http_worker *w;
	struct arn_tcp_conn *sc;
	struct http_tls_tp t;
	struct arn_tls_stats sst;
	struct arn_tls_ctx *sctx, *cctx;
	bool eof;
	struct tcli k;
};

/* A TLS connection through http_tls.c whose TCP takes one byte per
 * iteration both ways, handshaken. */
static void rig_open(struct tls_rig *r)
{
	memset(r, 0, sizeof(*r));
	static const struct arn_tcp_ops none = {0};
	r->w = calloc(1, sizeof(*r->w));
	assert_non_null(r->w);
	r->w->lc = &lc0;
	arn_tls_worker_init(&r->w->tls, 0, 0);
	r->sc = conn_new();
	r->sc->ops = &none;
	r->sc->tx_limited = true;
	r->sctx = tls_ctx(true);
	r->cctx = tls_ctx(false);
	assert_int_equal(
	    http_tls_start(&r->t, r->w, r->sc, r->sctx, &r->sst, &r->eof, NULL, NULL, NULL), 0);
	arn_tls_worker_init(&r->k.w, 0, 0);
	r->k.srv = r->sc;
	assert_int_equal(arn_tls_conn_init(&r->k.c, &r->k.w, r->cctx, &r->k.st, &tcli_io, &r->k,
					   &(struct arn_tls_conn_opts){0}),
			 0);
	int cs = -EAGAIN, ss = -EAGAIN;
	unsigned it;
	for (it = 0; it < 200000 && (cs != 0 || ss != 0); it++) {
		arn_tls_worker_begin(&r->w->tls, 0);
		arn_tls_worker_begin(&r->k.w, 0);
		if (cs != 0)
			cs = arn_tls_handshake(&r->k.c);
		tcli_deliver(&r->k, 1);
		if (ss != 0)
			ss = http_tls_handshake(&r->t);
		r->sc->tx_room = 1; /* one more byte fits: on_writable */
		http_tp_writable(&r->t.t, r->sc);
		assert_true(cs == 0 || cs == -EAGAIN || cs == -EBUSY);
		assert_true(ss == 0 || ss == -EAGAIN || ss == -EBUSY);
	}
	assert_int_equal(cs, 0);
	assert_int_equal(ss, 0);
	assert_true(it > 200); /* it really went a byte at a time */
	assert_int_equal(r->sst.v[ARN_TLS_S_HANDSHAKE], 1);
}

static void rig_close(struct tls_rig *r)
{
	http_tls_stop(&r->t);
	arn_tls_conn_free(&r->k.c);
	arn_tls_ctx_unref(r->sctx);
	arn_tls_ctx_unref(r->cctx);
	arn_tls_reclaim();
	arn_tcp_rx_consume(r->sc, r->sc->rx_bytes);
	free(r->sc->tx);
	memset(r->sc, 0, sizeof(*r->sc));
	free(r->w);
}

/*
 * Issue 18: the TLS transport (http_tls.c) over a TCP whose send buffer
 * takes one byte at a time and whose peer's bytes come one at a time: the
 * handshake, a request in, a response of several records out (each piece
 * of http_out taken in part and resumed on on_writable), all intact.
 */
static void test_tls_transport_byte_at_a_time(void **state)
{
	(void)state;
	struct tls_rig r;
	rig_open(&r);
	/* in: a request, a byte per iteration */
	static const char req[] = "GET /tls HTTP/1.1\r\nHost: a\r\n\r\n";
	assert_int_equal(arn_tls_write(&r.k.c, req, sizeof(req) - 1), sizeof(req) - 1);
	struct http_in in = {0};
	for (unsigned i = 0; i < 10000 && in.bytes < sizeof(req) - 1; i++) {
		tcli_deliver(&r.k, 1);
		http_tp_fill(&r.t.t, r.sc, &in);
	}
	assert_int_equal(in.bytes, sizeof(req) - 1);
	char got[64] = "";
	size_t o = 0;
	for (struct rte_mbuf *m = in.head; m; m = m->next) {
		memcpy(got + o, rte_pktmbuf_mtod(m, char *), m->data_len);
		o += m->data_len;
	}
	assert_memory_equal(got, req, sizeof(req) - 1);
	http_in_free(&in);
	/* out: staged bytes, 6000 bytes by reference and a chunk's CRLF */
	static char body[6000];
	for (size_t i = 0; i < sizeof(body); i++)
		body[i] = (char)('a' + i % 26);
	struct http_out out = {0};
	memcpy(out.stage, "1770\r\n", 6);
	out.stage_len = 6;
	out.data = body;
	out.data_len = sizeof(body);
	out.crlf = 2;
	static char rx[7000];
	size_t rl = 0;
	int rc = -EAGAIN;
	unsigned flushes = 0;
	for (unsigned i = 0; i < 100000 && (rc != 0 || rl < 6008); i++) {
		/* the send buffer drains a byte per iteration; a record is
		 * written once it fits (at least 512 bytes of it: docs/tls.md) */
		r.sc->tx_room += 1;
		http_tp_writable(&r.t.t, r.sc);
		if (rc != 0) {
			rc = http_tp_flush(&r.t.t, r.sc, &out);
			flushes++;
			assert_true(rc == 0 || rc == -EAGAIN);
		}
		ssize_t n = arn_tls_read(&r.k.c, rx + rl, sizeof(rx) - rl);
		if (n > 0)
			rl += (size_t)n;
		else
			assert_int_equal(n, -EAGAIN);
	}
	assert_int_equal(rc, 0);
	assert_true(flushes > 100);
	assert_false(http_out_busy(&out));
	assert_int_equal(rl, 6008);
	assert_memory_equal(rx, "1770\r\n", 6);
	assert_memory_equal(rx + 6, body, sizeof(body));
	assert_memory_equal(rx + 6006, "\r\n", 2);
	assert_false(r.eof);
	assert_false(r.sc->aborted);
	rig_close(&r);
	assert_int_equal(rte_mempool_in_use_count(pool), 0);
}

/*
 * Issue 18: the peer's end. A record cut mid-way by the FIN, or a FIN
 * without close_notify, ends the peer's input (the codec decides what was
 * cut) and is counted (tls.<worker>.truncated), not a crash nor a reset;
 * a close_notify ends it without being counted.
 */
static void test_tls_transport_truncation(void **state)
{
	(void)state;
	for (int k = 0; k < 3; k++) { /* cut record, no close_notify, close_notify */
		struct tls_rig r;
		rig_open(&r);
		uint64_t before = r.w->tls.c[ARN_TLS_W_TRUNCATED];
		assert_int_equal(arn_tls_write(&r.k.c, "hello", 5), 5);
		if (k == 2)
			assert_int_equal(arn_tls_shutdown(&r.k.c), 0);
		size_t rec = r.k.out_len - r.k.out_off;
		tcli_deliver(&r.k, k == 0 ? rec / 2 : rec);
		struct http_in in = {0};
		http_tp_fill(&r.t.t, r.sc, &in);
		assert_int_equal(r.eof, k == 2); /* close_notify ends it before the FIN */
		http_tp_eof(&r.t.t, r.sc);	 /* TCP's FIN */
		http_tp_fill(&r.t.t, r.sc, &in);
		assert_true(r.eof);
		assert_int_equal(in.bytes, k == 0 ? 0 : 5);
		assert_int_equal(r.w->tls.c[ARN_TLS_W_TRUNCATED] - before, k == 2 ? 0 : 1);
		assert_false(r.sc->aborted);
		http_in_free(&in);
		rig_close(&r);
	}
	assert_int_equal(rte_mempool_in_use_count(pool), 0);
}

/* ---- issue 19: downstream HTTP/2 ---------------------------------------------------------------
 *
 * nghttp2 as the client, in process: its frames go into the fake TCP
 * connection, Arion's come back from its transmit buffer. Nothing is timed.
 */

#define H2_STREAMS 64
struct h2c_stream {
	int32_t id;
	unsigned status;
	char hdrs[2048];
	char body[16384];
	size_t body_len;
	bool closed;
	uint32_t error;
};

struct h2c {
	nghttp2_session *s;
	struct arn_tcp_conn *c;
	size_t tx_seen; /* bytes of Arion's output fed to the session */
	struct h2c_stream st[H2_STREAMS];
	unsigned n;
	bool goaway;
	uint32_t goaway_error;
	unsigned rst_rx;
	unsigned pings; /* PINGs from Arion (not ACKs) */
	bool paused;	/* don't feed Arion's output (a client that stops reading) */
	size_t sent;	/* bytes the client sent */
};

static struct h2c_stream *h2c_find(struct h2c *k, int32_t id)
{
	for (unsigned i = 0; i < k->n; i++)
		if (k->st[i].id == id)
			return &k->st[i];
	return NULL;
}

static int h2c_on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name,
			 size_t nlen, const uint8_t *value, size_t vlen, uint8_t flags, void *ud)
{
	(void)s, (void)flags;
	struct h2c_stream *x = h2c_find(ud, f->hd.stream_id);
	if (!x)
		return 0;
	if (nlen == 7 && memcmp(name, ":status", 7) == 0) {
		x->status = (unsigned)atoi((const char *)value);
		if (x->status == 100)
			x->status = 0;
	}
	size_t l = strlen(x->hdrs);
	snprintf(x->hdrs + l, sizeof(x->hdrs) - l, "%.*s: %.*s\n", (int)nlen, name, (int)vlen,
		 value);
	return 0;
}

static int h2c_on_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data,
		       size_t len, void *ud)
{
	(void)s, (void)flags;
	struct h2c_stream *x = h2c_find(ud, id);
	if (x && x->body_len + len < sizeof(x->body)) {
		memcpy(x->body + x->body_len, data, len);
		x->body_len += len;
	}
	return 0;
}

static int h2c_on_close(nghttp2_session *s, int32_t id, uint32_t error, void *ud)
{
	(void)s;
	struct h2c_stream *x = h2c_find(ud, id);
	if (x) {
		x->closed = true;
		x->error = error;
	}
	return 0;
}

static int h2c_on_frame(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
	(void)s;
	struct h2c *k = ud;
	if (f->hd.type == NGHTTP2_GOAWAY) {
		k->goaway = true;
		k->goaway_error = f->goaway.error_code;
	} else if (f->hd.type == NGHTTP2_RST_STREAM) {
		k->rst_rx++;
	} else if (f->hd.type == NGHTTP2_PING && !(f->hd.flags & NGHTTP2_FLAG_ACK)) {
		k->pings++;
	}
	return 0;
}

/* Frames of @p type on stream @p id in what Arion wrote on @p c, read off
 * the wire (what a client's session reports may be filtered); the last
 * one's 32-bit word at payload byte @p off in @p last when asked. */
static unsigned frames_on_wire(const struct arn_tcp_conn *c, uint8_t type, int32_t id, size_t off,
			       uint32_t *last)
{
	const uint8_t *b = (const uint8_t *)c->tx;
	size_t n = c->tx_len, at = 0;
	unsigned found = 0;
	while (at + 9 <= n) {
		size_t len = (size_t)b[at] << 16 | (size_t)b[at + 1] << 8 | b[at + 2];
		int32_t sid =
		    (int32_t)((uint32_t)(b[at + 5] & 0x7f) << 24 | (uint32_t)b[at + 6] << 16 |
			      (uint32_t)b[at + 7] << 8 | b[at + 8]);
		if (b[at + 3] == type && sid == id) {
			found++;
			const uint8_t *pw = b + at + 9 + off;
			if (last && len >= off + 4 && at + 13 + off <= n)
				*last = (uint32_t)pw[0] << 24 | (uint32_t)pw[1] << 16 |
					(uint32_t)pw[2] << 8 | pw[3];
		}
		at += 9 + len;
	}
	return found;
}

static unsigned h2c_frames_on_wire(const struct h2c *k, uint8_t type, int32_t id)
{
	return frames_on_wire(k->c, type, id, 0, NULL);
}

/* A client connection with @p window as its streams' initial window. */
static void h2c_open(struct h2c *k, uint32_t window)
{
	memset(k, 0, sizeof(*k));
	nghttp2_session_callbacks *cb;
	assert_int_equal(nghttp2_session_callbacks_new(&cb), 0);
	nghttp2_session_callbacks_set_on_header_callback(cb, h2c_on_header);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, h2c_on_data);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, h2c_on_close);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, h2c_on_frame);
	/* a client that sends header blocks as large as it likes (HPACK bomb) */
	nghttp2_option *opt;
	assert_int_equal(nghttp2_option_new(&opt), 0);
	nghttp2_option_set_max_send_header_block_length(opt, 1u << 20);
	assert_int_equal(nghttp2_session_client_new2(&k->s, cb, k, opt), 0);
	nghttp2_option_del(opt);
	nghttp2_session_callbacks_del(cb);
	nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, window}};
	assert_int_equal(nghttp2_submit_settings(k->s, NGHTTP2_FLAG_NONE, iv, 1), 0);
	k->c = client();
	assert_non_null(k->c);
}

static void h2c_close(struct h2c *k)
{
	nghttp2_session_del(k->s);
	k->s = NULL;
}

/* Frames both ways until neither side has more. */
static void h2c_pump(struct h2c *k)
{
	for (int round = 0; round < 1000; round++) {
		bool moved = false;
		const uint8_t *data;
		ssize_t n;
		while ((n = nghttp2_session_mem_send(k->s, &data)) > 0) {
			if (k->c->closed)
				break;
			send_n(k->c, (const char *)data, (size_t)n);
			k->sent += (size_t)n;
			moved = true;
		}
		if (!k->paused && k->c->tx_len > k->tx_seen) {
			ssize_t r =
			    nghttp2_session_mem_recv(k->s, (const uint8_t *)k->c->tx + k->tx_seen,
						     k->c->tx_len - k->tx_seen);
			assert_true(r >= 0);
			k->tx_seen = k->c->tx_len;
			moved = true;
		}
		if (!moved)
			return;
	}
	fail_msg("HTTP/2 exchange does not settle");
}

static int32_t h2c_request(struct h2c *k, const char *method, const char *path,
			   const nghttp2_data_provider *body, const char *extra_name,
			   const char *extra_value)
{
	nghttp2_nv nv[5] = {
	    {(uint8_t *)":method", (uint8_t *)method, 7, strlen(method), 0},
	    {(uint8_t *)":scheme", (uint8_t *)"http", 7, 4, 0},
	    {(uint8_t *)":authority", (uint8_t *)"a.example", 10, 9, 0},
	    {(uint8_t *)":path", (uint8_t *)path, 5, strlen(path), 0},
	};
	size_t n = 4;
	if (extra_name)
		nv[n++] = (nghttp2_nv){(uint8_t *)extra_name, (uint8_t *)extra_value,
				       strlen(extra_name), strlen(extra_value), 0};
	int32_t id = nghttp2_submit_request(k->s, NULL, nv, n, body, NULL);
	assert_true(id > 0);
	assert_true(k->n < H2_STREAMS);
	k->st[k->n++] = (struct h2c_stream){.id = id};
	return id;
}

static const char *h2_body_src;
static ssize_t h2c_read_body(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len,
			     uint32_t *flags, nghttp2_data_source *src, void *ud)
{
	(void)s, (void)id, (void)ud;
	size_t *off = src->ptr;
	size_t left = strlen(h2_body_src) - *off;
	size_t k = left < len ? left : len;
	memcpy(buf, h2_body_src + *off, k);
	*off += k;
	if (*off == strlen(h2_body_src))
		*flags |= NGHTTP2_DATA_FLAG_EOF;
	return (ssize_t)k;
}

/*
 * Prior knowledge on a plain listener (codec_type AUTO): the client's
 * preface turns the connection to HTTP/2, and concurrent streams each go
 * through the connection manager (a direct response here) and are counted
 * as HTTP/2 requests.
 */
static void test_h2_prior_knowledge_streams(void **state)
{
	(void)state;
	start(8, jlistener("", DIRECT_OK));
	struct h2c k;
	h2c_open(&k, 65535);
	int32_t id[4];
	for (int i = 0; i < 4; i++)
		id[i] = h2c_request(&k, "GET", "/x", NULL, NULL, NULL);
	h2c_pump(&k);
	for (int i = 0; i < 4; i++) {
		struct h2c_stream *x = h2c_find(&k, id[i]);
		assert_true(x->closed);
		assert_int_equal(x->error, 0);
		assert_int_equal(x->status, 200);
		assert_int_equal(x->body_len, 2);
		assert_memory_equal(x->body, "ok", 2);
		want_in(x->hdrs, "content-length: 2");
		want_not_in(x->hdrs, "connection");
	}
	assert_int_equal(stat("http.in.downstream_cx_http2_total"), 1);
	assert_int_equal(stat("http.in.downstream_cx_http1_total"), 0);
	assert_int_equal(stat("http.in.downstream_rq_http2_total"), 4);
	assert_int_equal(stat("http.in.downstream_rq_2xx"), 4);
	assert_int_equal(stat("http2.streams_active"), 0);
	/* every stream gave its buffer back */
	assert_int_equal(free_buffers(), 8);
	h2c_close(&k);
}

/* Many streams at once, each to its own upstream connection, answered
 * in the reverse order with headers of some size: every response arrives
 * whole on its stream. */
static void test_h2_many_streams_upstream(void **state)
{
	(void)state;
	start(64, jlistener("", "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}"));
	struct h2c k;
	h2c_open(&k, 65535);
	int32_t id[40];
	for (int i = 0; i < 40; i++)
		id[i] = h2c_request(&k, "GET", "/e", NULL, NULL, NULL);
	h2c_pump(&k);
	struct arn_tcp_conn *u[40];
	for (int i = 0; i < 40; i++)
		u[i] = upstream_accepts();
	h2c_pump(&k);
	for (int i = 39; i >= 0; i--) {
		char r[512];
		snprintf(r, sizeof(r),
			 "HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Type: text/plain\r\n"
			 "Content-Length: 9\r\nConnection: keep-alive\r\nX-Seen-Host: a.example\r\n"
			 "X-Seen-XFF: \r\nX-Seen-Proto: http\r\nX-Seen-Rid: %d\r\n\r\necho-%04d",
			 i, i);
		send_s(u[i], r);
	}
	h2c_pump(&k);
	for (int i = 0; i < 40; i++) {
		struct h2c_stream *x = h2c_find(&k, id[i]);
		assert_true(x->closed);
		assert_int_equal(x->status, 200);
		assert_int_equal(x->body_len, 9);
	}
	h2c_close(&k);
}

/* codec_type HTTP1 never takes the preface for HTTP/2; HTTP/1.1 on an
 * AUTO listener stays HTTP/1.1. */
static void test_h2_codec_type(void **state)
{
	(void)state;
	start(4, jlistener("\"codec_type\":\"HTTP1\"", DIRECT_OK));
	struct arn_tcp_conn *c = client();
	send_s(c, HTTP_H2_PREFACE);
	poll_ms(1);
	assert_false(answered(c, "HTTP/1.1 200"));
	assert_int_equal(stat("http.in.downstream_cx_http2_total"), 0);
	teardown(NULL);
	start(4, jlistener("", DIRECT_OK));
	c = client();
	send_s(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
	assert_true(answered(c, "HTTP/1.1 200 OK\r\n"));
	assert_int_equal(stat("http.in.downstream_cx_http1_total"), 1);
	assert_int_equal(stat("http.in.downstream_cx_http2_total"), 0);
}

#define ROUTE_WEB "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}"

/*
 * The router keeps a connection's cluster lookup while the generation is
 * the same: the next request on a keep-alive connection after its
 * cluster changed (another endpoint) goes to the new endpoint, not over
 * the idle connection to the old one.
 */
static void test_cluster_lookup_follows_generations(void **state)
{
	(void)state;
	start(2, jlistener("", ROUTE_WEB)); /* cluster web: 198.18.0.10 */
	struct arn_tcp_conn *c = client();
	send_s(c, "GET /1 HTTP/1.1\r\nHost: a\r\n\r\n");
	struct arn_tcp_conn *u = upstream_accepts();
	assert_int_equal(u->raddr, 0xc612000au);
	send_s(u, "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
	poll_ms(1);
	assert_true(answered(c, "HTTP/1.1 200 OK\r\n"));
	/* the same endpoint again: the kept connection serves */
	send_s(c, "GET /2 HTTP/1.1\r\nHost: a\r\n\r\n");
	poll_ms(1);
	assert_int_equal(upstream_pending(), 0);
	want_in(u->tx, "GET /2 HTTP/1.1\r\n");
	send_s(u, "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
	poll_ms(1);
	apply(C, "2",
	      "{\"name\":\"web\",\"type\":\"STATIC\",\"connect_timeout\":\"5s\","
	      "\"load_assignment\":{\"cluster_name\":\"web\",\"endpoints\":[{\"lb_endpoints\":[{"
	      "\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"198.18.0.11\","
	      "\"port_value\":8080}}}}]}]}}");
	poll_ms(1);
	send_s(c, "GET /3 HTTP/1.1\r\nHost: a\r\n\r\n");
	poll_ms(1);
	assert_int_equal(upstream_pending(), 1);
	struct arn_tcp_conn *u2 = upstream_accepts();
	assert_int_equal(u2->raddr, 0xc612000bu);
	want_in(u2->tx, "GET /3 HTTP/1.1\r\n");
	want_not_in(u->tx, "GET /3");
}

/*
 * Streams to an HTTP/1.1 upstream: each gets its own upstream connection,
 * :authority becomes Host, a body without content-length is re-chunked,
 * and the upstream's chunked response comes back as DATA frames with the
 * hop-by-hop fields gone.
 */
static void test_h2_to_h1_upstream(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	struct h2c k;
	h2c_open(&k, 65535);
	size_t off = 0;
	h2_body_src = "hello upstream";
	nghttp2_data_provider prd = {.source = {.ptr = &off}, .read_callback = h2c_read_body};
	int32_t a = h2c_request(&k, "GET", "/a", NULL, NULL, NULL);
	int32_t b = h2c_request(&k, "POST", "/b", &prd, NULL, NULL);
	h2c_pump(&k);
	assert_int_equal(upstream_pending(), 2);
	struct arn_tcp_conn *u1 = upstream_accepts();
	struct arn_tcp_conn *u2 = upstream_accepts();
	h2c_pump(&k);
	struct arn_tcp_conn *ua = strstr(u1->tx, "GET /a") ? u1 : u2;
	struct arn_tcp_conn *ub = ua == u1 ? u2 : u1;
	want_in(ua->tx, "GET /a HTTP/1.1\r\n");
	want_in(ua->tx, "host: a.example\r\n");
	want_in(ub->tx, "POST /b HTTP/1.1\r\n");
	want_in(ub->tx, "transfer-encoding: chunked\r\n");
	want_in(ub->tx, "\r\ne\r\nhello upstream\r\n0\r\n\r\n");
	send_s(ub, "HTTP/1.1 201 Created\r\ncontent-length: 3\r\nKeep-Alive: timeout=5\r\n\r\nnew");
	send_s(ua, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Up: 1\r\n\r\n"
		   "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n");
	h2c_pump(&k);
	struct h2c_stream *xa = h2c_find(&k, a), *xb = h2c_find(&k, b);
	assert_true(xa->closed && xb->closed);
	assert_int_equal(xa->status, 200);
	assert_int_equal(xa->body_len, 11);
	assert_memory_equal(xa->body, "hello world", 11);
	want_in(xa->hdrs, "x-up: 1\n");
	want_not_in(xa->hdrs, "transfer-encoding");
	assert_int_equal(xb->status, 201);
	assert_memory_equal(xb->body, "new", 3);
	want_not_in(xb->hdrs, "keep-alive");
	assert_int_equal(stat("cluster.web.upstream_rq_completed"), 2);
	h2c_close(&k);
}

/*
 * An HTTP/2 :path that is not origin-form (RFC 9113 8.3.1: "/..." or "*"
 * for OPTIONS). nghttp2 checks its form only under the http and https
 * schemes, so a client naming another :scheme sent an absolute URI that
 * the route prefix "/admin" did not guard and that the HTTP/1.1 upstream
 * read as absolute-form, with its own host and path (RFC 9112 3.2.2);
 * "*" went as "GET * HTTP/1.1". Refused as Envoy refuses a non-relative
 * path: 404, downstream_rq_non_relative_path, nothing sent upstream.
 */
static void test_h2_non_relative_path_refused(void **state)
{
	(void)state;
	start(8,
	      jlistener("", "{\"match\":{\"prefix\":\"/admin\"},\"direct_response\":{\"status\":"
			    "403}},{\"match\":{\"prefix\":\"\"},\"route\":{\"cluster\":\"web\"}}"));
	struct h2c k;
	h2c_open(&k, 65535);
	static const char *const paths[] = {"http://a.example/admin", "*", "admin"};
	for (unsigned i = 0; i < 3; i++) {
		nghttp2_nv nv[4] = {
		    {(uint8_t *)":method", (uint8_t *)"GET", 7, 3, 0},
		    {(uint8_t *)":scheme", (uint8_t *)"foo", 7, 3, 0},
		    {(uint8_t *)":authority", (uint8_t *)"a.example", 10, 9, 0},
		    {(uint8_t *)":path", (uint8_t *)paths[i], 5, strlen(paths[i]), 0},
		};
		int32_t id = nghttp2_submit_request(k.s, NULL, nv, 4, NULL, NULL);
		assert_true(id > 0);
		k.st[k.n++] = (struct h2c_stream){.id = id};
		h2c_pump(&k);
		assert_int_equal(upstream_pending(), 0);
		assert_int_equal(h2c_find(&k, id)->status, 404);
	}
	assert_int_equal(stat("http.in.downstream_rq_non_relative_path"), 3);
	/* the origin-form path meets its route */
	int32_t a = h2c_request(&k, "GET", "/admin", NULL, NULL, NULL);
	h2c_pump(&k);
	assert_int_equal(h2c_find(&k, a)->status, 403);
	h2c_close(&k);
}

/*
 * :authority (or Host without it) as an HTTP/1.1 Host is checked (RFC 9110
 * 7.2, 4.2.4; RFC 9113 8.3.1: no userinfo): nghttp2's check lets '@' and
 * any port through, and the value routes the request and becomes the Host
 * an HTTP/1.1 upstream reads, so "evil@a.example" reached it where an
 * HTTP/1.1 client's "Host: evil@a.example" is refused. 400, not sent on.
 */
static void test_h2_authority_checked_as_host(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	struct h2c k;
	h2c_open(&k, 65535);
	static const char *const bad[][2] = {
	    {":authority", "evil@a.example"},
	    {":authority", "a.example:80:81"},
	    {":authority", "a.example:http"},
	    {"host", "evil@a.example"},
	};
	for (unsigned i = 0; i < 4; i++) {
		nghttp2_nv nv[4] = {
		    {(uint8_t *)":method", (uint8_t *)"GET", 7, 3, 0},
		    {(uint8_t *)":scheme", (uint8_t *)"http", 7, 4, 0},
		    {(uint8_t *)":path", (uint8_t *)"/x", 5, 2, 0},
		    {(uint8_t *)bad[i][0], (uint8_t *)bad[i][1], strlen(bad[i][0]),
		     strlen(bad[i][1]), 0},
		};
		int32_t id = nghttp2_submit_request(k.s, NULL, nv, 4, NULL, NULL);
		assert_true(id > 0);
		k.st[k.n++] = (struct h2c_stream){.id = id};
		h2c_pump(&k);
		assert_int_equal(upstream_pending(), 0);
		assert_int_equal(h2c_find(&k, id)->status, 400);
	}
	/* a name and a port go on as they came */
	nghttp2_nv nv[4] = {
	    {(uint8_t *)":method", (uint8_t *)"GET", 7, 3, 0},
	    {(uint8_t *)":scheme", (uint8_t *)"http", 7, 4, 0},
	    {(uint8_t *)":authority", (uint8_t *)"a.example:8080", 10, 14, 0},
	    {(uint8_t *)":path", (uint8_t *)"/x", 5, 2, 0},
	};
	int32_t id = nghttp2_submit_request(k.s, NULL, nv, 4, NULL, NULL);
	k.st[k.n++] = (struct h2c_stream){.id = id};
	h2c_pump(&k);
	struct arn_tcp_conn *u = upstream_accepts();
	h2c_pump(&k);
	want_in(u->tx, "host: a.example:8080\r\n");
	send_s(u, "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
	h2c_pump(&k);
	assert_int_equal(h2c_find(&k, id)->status, 200);
	h2c_close(&k);
}

/*
 * An HTTP/2 stream takes a request buffer as an HTTP/1.1 request does:
 * never ahead of requests waiting for one (first come, first served:
 * docs/http.md, "Slow heads and the request buffers"). A buffer freed
 * while a request waits is that request's; a stream opening at that
 * moment (before the poll hands the buffer on) took it, so an HTTP/2
 * client opening streams could keep HTTP/1.1 requests waiting until their
 * head deadline (503 OM). It is refused (REFUSED_STREAM, the client may
 * retry), as when no buffer is free.
 */
static void test_h2_stream_does_not_jump_the_buffer_queue(void **state)
{
	(void)state;
	start(2, jlistener("", ROUTE_WEB));
	struct arn_tcp_conn *hold[2];
	hold_all(hold, 2);
	struct arn_tcp_conn *q = client();
	send_s(q, "GET /q HTTP/1.1\r\nHost: a\r\n\r\n");
	assert_int_equal(stat("http.in.downstream_rq_buffer_wait"), 1);
	struct h2c k;
	h2c_open(&k, 65535);
	h2c_pump(&k);
	/* a request completes; before the poll, the HTTP/2 client opens a
	 * stream */
	upstream_answers("GET /h HTTP/1.1\r\n");
	assert_int_equal(free_buffers(), 1);
	int32_t id = h2c_request(&k, "GET", "/s", NULL, NULL, NULL);
	h2c_pump(&k);
	assert_true(h2c_find(&k, id)->closed);
	assert_int_equal(h2c_find(&k, id)->error, NGHTTP2_REFUSED_STREAM);
	assert_int_equal(stat("http2.stream_refused_errors"), 1);
	/* its RST_STREAM is one Arion sent (Envoy's tx_reset counts frames) */
	assert_int_equal(stat("http2.tx_reset"), 1);
	/* the waiting request gets the buffer */
	poll_ms(1);
	assert_int_equal(free_buffers(), 0);
	upstream_answers("GET /q HTTP/1.1\r\n");
	assert_true(answered(q, "HTTP/1.1 200 OK\r\n"));
	/* nobody waits: the stream, again, is served */
	poll_ms(1);
	int32_t again = h2c_request(&k, "GET", "/s", NULL, NULL, NULL);
	h2c_pump(&k);
	upstream_answers("GET /s HTTP/1.1\r\n");
	h2c_pump(&k);
	assert_int_equal(h2c_find(&k, again)->status, 200);
	h2c_close(&k);
}

/*
 * :path holds what an HTTP/1.1 request-target may (RFC 9112 3.2, RFC
 * 3986: visible ASCII; Arion's HTTP/1 parser refuses anything else with
 * 400). nghttp2's check lets bytes 0x80-0xff through, and the path went
 * as it came into the request line of an HTTP/1.1 upstream, which then
 * decodes it its own way (routes matched the raw bytes). 400, not sent on.
 */
static void test_h2_path_bytes_checked_as_target(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	struct h2c k;
	h2c_open(&k, 65535);
	int32_t id = h2c_request(&k, "GET", "/a\xc0\xafz", NULL, NULL, NULL);
	h2c_pump(&k);
	assert_int_equal(upstream_pending(), 0);
	assert_int_equal(h2c_find(&k, id)->status, 400);
	/* visible ASCII goes on as it came, percent-encoded UTF-8 too */
	int32_t ok = h2c_request(&k, "GET", "/a%C3%A9\\b", NULL, NULL, NULL);
	h2c_pump(&k);
	struct arn_tcp_conn *u = upstream_accepts();
	h2c_pump(&k);
	want_in(u->tx, "GET /a%C3%A9\\b HTTP/1.1\r\n");
	send_s(u, "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
	h2c_pump(&k);
	assert_int_equal(h2c_find(&k, ok)->status, 200);
	h2c_close(&k);
}

/* Arion's output so far, fed to the client's session without the client
 * sending anything (what a client waiting for its response sees). */
static void h2c_take(struct h2c *k)
{
	if (k->c->tx_len > k->tx_seen) {
		ssize_t r = nghttp2_session_mem_recv(k->s, (const uint8_t *)k->c->tx + k->tx_seen,
						     k->c->tx_len - k->tx_seen);
		assert_true(r >= 0);
		k->tx_seen = k->c->tx_len;
	}
}

/*
 * One stream at a time (h2load -m 1): the request reaches the upstream as
 * its HEADERS arrive, on the upstream connection the last stream gave back
 * to the pool (not a new one per stream), and the response leaves whole
 * (HEADERS, DATA, END_STREAM) in the call that brought the upstream's
 * answer, in one write: no worker poll, no timer and no frame of the client's is needed
 * to push any of it out. Several requests in turn on one connection.
 */
static void test_h2_one_stream_no_wait(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	struct h2c k;
	h2c_open(&k, 65535);
	h2c_pump(&k); /* the prefaces and SETTINGS */
	struct arn_tcp_conn *u = NULL;
	for (int i = 0; i < 3; i++) {
		size_t up_seen = u ? u->tx_len : 0;
		int32_t id = h2c_request(&k, "GET", "/small", NULL, NULL, NULL);
		const uint8_t *data;
		ssize_t n;
		while ((n = nghttp2_session_mem_send(k.s, &data)) > 0)
			send_n(k.c, (const char *)data, (size_t)n);
		if (!u)
			u = upstream_accepts();
		/* the same upstream connection, kept alive between streams */
		assert_false(u->closed);
		assert_int_equal(upstream_pending(), 0);
		want_in(u->tx + up_seen, "GET /small HTTP/1.1\r\n");
		h2c_take(&k);
		unsigned w0 = k.c->writes;
		send_s(u, "HTTP/1.1 200 OK\r\ncontent-length: 20\r\n\r\nhello from upstream\n");
		h2c_take(&k);
		struct h2c_stream *x = h2c_find(&k, id);
		assert_int_equal(x->status, 200);
		assert_int_equal(x->body_len, 20);
		assert_true(x->closed);
		assert_int_equal(x->error, 0);
		assert_int_equal(k.c->writes - w0, 1);
	}
	assert_int_equal(stat("cluster.web.upstream_cx_total"), 1);
	h2c_close(&k);
}

/*
 * Request bodies follow the upstream's progress: while the upstream takes
 * nothing, the client can send no more than the stream window Arion
 * advertised (256 KiB at most) and gets no WINDOW_UPDATE; once the
 * upstream reads again, the rest follows, and the upstream gets all of it.
 */
static void test_h2_request_follows_upstream(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	struct h2c k;
	h2c_open(&k, 65535);
	static char body[1000001];
	memset(body, 'q', 1000000);
	h2_body_src = body;
	size_t off = 0;
	nghttp2_data_provider prd = {.source = {.ptr = &off}, .read_callback = h2c_read_body};
	int32_t a = h2c_request(&k, "POST", "/up", &prd, "content-length", "1000000");
	h2c_pump(&k);
	struct arn_tcp_conn *u = upstream_accepts();
	u->full = true;
	h2c_pump(&k);
	poll_ms(1);
	h2c_pump(&k);
	/* held at the window: the client sent what the upstream took before
	 * it stopped, plus one stream window, and no more */
	const char *hend = strstr(u->tx, "\r\n\r\n");
	assert_non_null(hend);
	size_t took = u->tx_len - (size_t)(hend + 4 - u->tx);
	assert_true(off - took <= HTTP_H2_MAX_STREAM_WINDOW);
	assert_true(off < 1000000);
	assert_int_equal(nghttp2_session_get_stream_remote_window_size(k.s, a), 0);
	size_t held = off;
	for (int i = 0; i < 5; i++) {
		poll_ms(10);
		h2c_pump(&k);
	}
	assert_int_equal(off, held);
	/* the upstream reads again */
	for (int i = 0; i < 200 && u->tx_len < 1000000; i++) {
		u->full = false;
		u->ops->on_writable(u);
		h2c_pump(&k);
		poll_ms(1);
	}
	assert_int_equal(off, 1000000);
	want_in(u->tx, "content-length: 1000000\r\n");
	char *b = strstr(u->tx, "\r\n\r\n");
	assert_non_null(b);
	assert_int_equal(strlen(b + 4), 1000000);
	send_s(u, "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
	h2c_pump(&k);
	assert_int_equal(h2c_find(&k, a)->status, 200);
	h2c_close(&k);
}

/* RFC 9113 8.2.3: Cookie split over several HTTP/2 fields reaches an
 * HTTP/1.1 upstream as one, joined with "; ". */
static void test_h2_cookies_joined(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	struct h2c k;
	h2c_open(&k, 65535);
	nghttp2_nv nv[7] = {
	    {(uint8_t *)":method", (uint8_t *)"GET", 7, 3, 0},
	    {(uint8_t *)":scheme", (uint8_t *)"http", 7, 4, 0},
	    {(uint8_t *)":authority", (uint8_t *)"a", 10, 1, 0},
	    {(uint8_t *)":path", (uint8_t *)"/c", 5, 2, 0},
	    {(uint8_t *)"cookie", (uint8_t *)"a=1", 6, 3, 0},
	    {(uint8_t *)"x-mid", (uint8_t *)"m", 5, 1, 0},
	    {(uint8_t *)"cookie", (uint8_t *)"b=2", 6, 3, 0},
	};
	int32_t a = nghttp2_submit_request(k.s, NULL, nv, 7, NULL, NULL);
	k.st[k.n++] = (struct h2c_stream){.id = a};
	h2c_pump(&k);
	struct arn_tcp_conn *u = upstream_accepts();
	h2c_pump(&k);
	want_in(u->tx, "cookie: a=1; b=2\r\n");
	want_in(u->tx, "x-mid: m\r\n");
	want_in(u->tx, "host: a\r\n");
	h2c_close(&k);
}

/* ---- a cookie hash policy's generated cookie (Envoy's CookieHashMethod with a ttl) ---------- */

/* Cluster "sticky": RING_HASH over four hosts 198.18.0.21-24. Routes: /nottl
 * hashes on cookie sid without a ttl, / on sid with ttl 3600s and path /. */
#define STICKY_ROUTES                                                                              \
	"{\"match\":{\"prefix\":\"/nottl\"},\"route\":{\"cluster\":\"sticky\",\"hash_policy\":["   \
	"{\"cookie\":{\"name\":\"sid\"}}]}},"                                                      \
	"{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"sticky\",\"hash_policy\":["        \
	"{\"cookie\":{\"name\":\"sid\",\"ttl\":\"3600s\",\"path\":\"/\"}}]}}"

static void cluster_sticky(void)
{
	char j[1024] = "{\"name\":\"sticky\",\"type\":\"STATIC\",\"lb_policy\":\"RING_HASH\","
		       "\"load_assignment\":{\"cluster_name\":\"sticky\",\"endpoints\":[{"
		       "\"lb_endpoints\":[";
	for (int i = 1; i <= 4; i++)
		snprintf(j + strlen(j), sizeof(j) - strlen(j),
			 "%s{\"endpoint\":{\"address\":{\"socket_address\":{\"address\":"
			 "\"198.18.0.2%d\",\"port_value\":8080}}}}",
			 i > 1 ? "," : "", i);
	snprintf(j + strlen(j), sizeof(j) - strlen(j), "]}]}}");
	upb_Arena *a = upb_Arena_New();
	const upb_MessageDef *md = arn_proto_msgdef(strrchr(C, '/') + 1);
	struct arn_sb err = ARN_SB_INIT;
	upb_Message *m = arn_proto_from_json(j, strlen(j), md, a, &err);
	assert_non_null(m);
	arn_sb_free(&err);
	struct arn_config_resource_in in = {"sticky", "1", NULL, 0};
	in.bytes = arn_proto_encode(m, md, a, &in.len);
	arn_config_result_free(&res);
	assert_int_equal(arn_config_apply(st, C, &in, 1, NULL, 0, 0, &res), 0);
	upb_Arena_Free(a);
	if (!res.accepted || res.n_errors)
		fail_msg("refused: %s", res.n_errors ? res.errors[0].message : "?");
	arn_http_poll();
}

/* One exchange on client @p c: the request @p rq reaches an upstream
 * (connected if new), which answers 200 with a Set-Cookie of its own.
 * @return the host it went to; *@p resp the client's response. */
static uint32_t sticky_exchange(struct arn_tcp_conn *c, const char *rq, char *resp, size_t cap)
{
	static size_t uoff[CONNS];
	for (unsigned i = 0; i < CONNS; i++)
		uoff[i] = conns[i].tx_len;
	size_t coff = c->tx_len;
	send_s(c, rq);
	while (upstream_pending())
		upstream_accepts();
	poll_ms(1);
	struct arn_tcp_conn *u = NULL;
	for (unsigned i = 0; i < CONNS; i++)
		if (conns[i].used && conns[i].upstream && conns[i].tx_len > uoff[i])
			u = &conns[i];
	assert_non_null(u);
	send_s(u, "HTTP/1.1 200 OK\r\nset-cookie: up=1\r\ncontent-length: 0\r\n\r\n");
	poll_ms(1);
	snprintf(resp, cap, "%s", c->tx + coff);
	want_in(resp, "HTTP/1.1 200 OK\r\n");
	want_in(resp, "set-cookie: up=1\r\n"); /* the upstream's stays */
	return u->raddr;
}

/* The value of the one "set-cookie: sid=" line in @p resp, checked for
 * Envoy's form: sid="<16 hex>"; Max-Age=3600; Path=/; HttpOnly. */
static void sid_of(const char *resp, char out[17])
{
	assert_int_equal(occurs(resp, "set-cookie: sid="), 1);
	const char *p = strstr(resp, "set-cookie: sid=\"") + 17;
	for (int i = 0; i < 16; i++)
		assert_non_null(strchr("0123456789abcdef", p[i]));
	memcpy(out, p, 16);
	out[16] = 0;
	if (strncmp(p + 16, "\"; Max-Age=3600; Path=/; HttpOnly\r\n", 35) != 0)
		fail_msg("not Envoy's Set-Cookie form:\n%s", resp);
}

/*
 * Envoy's CookieHashMethod with a ttl, through the whole connection
 * manager: a request without cookie sid is hashed on a generated value and
 * its response carries exactly one Set-Cookie for it (after the upstream's
 * own); the connection's next request gets the same value and host; a
 * request on another connection carrying that cookie goes to that host
 * and gets no Set-Cookie. A route whose policy has no ttl sets none.
 */
static void test_cookie_hash_policy_sets_cookie(void **state)
{
	(void)state;
	start(8, jlistener("", STICKY_ROUTES));
	cluster_sticky();
	char resp[4096], sid[17], sid2[17];
	struct arn_tcp_conn *c = client();
	uint32_t host =
	    sticky_exchange(c, "GET /a HTTP/1.1\r\nHost: a\r\n\r\n", resp, sizeof(resp));
	sid_of(resp, sid);
	/* the same connection, still without the cookie: the same value */
	assert_int_equal(sticky_exchange(c, "GET /b HTTP/1.1\r\nHost: a\r\nCookie: x=1\r\n\r\n",
					 resp, sizeof(resp)),
			 host);
	sid_of(resp, sid2);
	assert_string_equal(sid, sid2);
	/* the cookie, sent back as it was set, on a new connection: the
	 * same host, nothing set */
	char rq[256];
	snprintf(rq, sizeof(rq), "GET /c HTTP/1.1\r\nHost: a\r\nCookie: x=1; sid=\"%s\"\r\n\r\n",
		 sid);
	struct arn_tcp_conn *c2 = client();
	assert_int_equal(sticky_exchange(c2, rq, resp, sizeof(resp)), host);
	want_not_in(resp, "set-cookie: sid=");
	/* without a ttl an absent cookie gives no hash, and no Set-Cookie */
	sticky_exchange(c2, "GET /nottl HTTP/1.1\r\nHost: a\r\n\r\n", resp, sizeof(resp));
	want_not_in(resp, "set-cookie: sid=");
	/* a new connection without the cookie: a cookie of its own */
	struct arn_tcp_conn *c3 = client();
	sticky_exchange(c3, "GET /d HTTP/1.1\r\nHost: a\r\n\r\n", resp, sizeof(resp));
	sid_of(resp, sid2);
	assert_string_not_equal(sid, sid2);
}

/* The same over HTTP/2: each stream of a connection without the cookie
 * gets one Set-Cookie, with the connection's one value. */
static void test_cookie_hash_policy_sets_cookie_h2(void **state)
{
	(void)state;
	start(8, jlistener("", STICKY_ROUTES));
	cluster_sticky();
	struct h2c k;
	h2c_open(&k, 65535);
	int32_t a = h2c_request(&k, "GET", "/a", NULL, NULL, NULL);
	int32_t b = h2c_request(&k, "GET", "/b", NULL, NULL, NULL);
	h2c_pump(&k);
	while (upstream_pending())
		upstream_accepts();
	h2c_pump(&k);
	for (unsigned i = 0; i < CONNS; i++)
		if (conns[i].used && conns[i].upstream && conns[i].tx_len)
			send_s(&conns[i], "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
	h2c_pump(&k);
	struct h2c_stream *xa = h2c_find(&k, a), *xb = h2c_find(&k, b);
	assert_int_equal(xa->status, 200);
	assert_int_equal(xb->status, 200);
	assert_int_equal(occurs(xa->hdrs, "set-cookie: "), 1);
	const char *p = strstr(xa->hdrs, "set-cookie: sid=\"");
	assert_non_null(p);
	char want[128];
	snprintf(want, sizeof(want), "%.*s\n", (int)(strchr(p, '\n') - p), p);
	want_in(want, "\"; Max-Age=3600; Path=/; HttpOnly\n");
	want_in(xb->hdrs, want);
	assert_int_equal(occurs(xb->hdrs, "set-cookie: "), 1);
	h2c_close(&k);
}

/* max_requests_per_connection: the last stream allowed is served, and
 * GOAWAY names it as the last one. */
static void test_h2_max_requests_goaway(void **state)
{
	(void)state;
	start(8, jlistener("\"common_http_protocol_options\":{\"max_requests_per_connection\":2}",
			   DIRECT_OK));
	struct h2c k;
	h2c_open(&k, 65535);
	int32_t a = h2c_request(&k, "GET", "/1", NULL, NULL, NULL);
	h2c_pump(&k);
	assert_false(k.goaway);
	int32_t b = h2c_request(&k, "GET", "/2", NULL, NULL, NULL);
	h2c_pump(&k);
	assert_true(k.goaway);
	assert_int_equal(h2c_find(&k, a)->status, 200);
	assert_int_equal(h2c_find(&k, b)->status, 200);
	run_ms(3100);
	assert_true(k.c->closed || k.c->shut);
	h2c_close(&k);
}

/*
 * Flow control tied to the client's progress: a client that stops reading
 * gets no more than its window; the rest stays with the upstream's
 * connection (no copy grows in Arion) and follows once it reads again.
 */
static void test_h2_response_follows_client_window(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	struct h2c k;
	h2c_open(&k, 1000);
	int32_t a = h2c_request(&k, "GET", "/big", NULL, NULL, NULL);
	h2c_pump(&k);
	struct arn_tcp_conn *u = upstream_accepts();
	h2c_pump(&k);
	static char big[10001];
	memset(big, 'z', 10000);
	char head[128];
	snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n", 10000);
	send_s(u, head);
	k.paused = true;
	send_s(u, big);
	poll_ms(1);
	/* what Arion wrote holds at most 1000 bytes of DATA payload */
	size_t sent = k.c->tx_len - k.tx_seen;
	assert_true(sent < 1000 + 512);
	k.paused = false;
	h2c_pump(&k);
	struct h2c_stream *x = h2c_find(&k, a);
	assert_true(x->closed);
	assert_int_equal(x->body_len, 10000);
	h2c_close(&k);
}

/* The client resets a stream while its upstream answers: the upstream's
 * exchange is given up, the reset counted, the other stream unharmed. */
static void test_h2_client_reset(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	struct h2c k;
	h2c_open(&k, 65535);
	int32_t a = h2c_request(&k, "GET", "/a", NULL, NULL, NULL);
	h2c_pump(&k);
	struct arn_tcp_conn *u = upstream_accepts();
	h2c_pump(&k);
	assert_int_equal(nghttp2_submit_rst_stream(k.s, NGHTTP2_FLAG_NONE, a, NGHTTP2_CANCEL), 0);
	h2c_pump(&k);
	poll_ms(1);
	assert_int_equal(stat("http2.rx_reset"), 1);
	assert_int_equal(stat("http.in.downstream_rq_rx_reset"), 1);
	assert_true(u->closed); /* mid-exchange: the upstream connection cannot be reused */
	assert_int_equal(stat("http2.streams_active"), 0);
	/* the connection goes on */
	int32_t b = h2c_request(&k, "GET", "/b", NULL, NULL, NULL);
	h2c_pump(&k);
	struct arn_tcp_conn *u2 = upstream_accepts();
	h2c_pump(&k);
	send_s(u2, "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
	h2c_pump(&k);
	assert_int_equal(h2c_find(&k, b)->status, 200);
	h2c_close(&k);
}

/* A header list over max_request_headers_kb resets that stream
 * (http2.header_overflow, as Envoy); the connection serves the next. */
static void test_h2_header_overflow(void **state)
{
	(void)state;
	start(8, jlistener("\"max_request_headers_kb\":1", DIRECT_OK));
	struct h2c k;
	h2c_open(&k, 65535);
	static char v[1500];
	memset(v, 'v', sizeof(v) - 1);
	int32_t a = h2c_request(&k, "GET", "/a", NULL, "x-big", v);
	h2c_pump(&k);
	struct h2c_stream *x = h2c_find(&k, a);
	assert_true(x->closed);
	assert_int_not_equal(x->error, 0);
	assert_int_equal(x->status, 0);
	assert_int_equal(stat("http2.header_overflow"), 1);
	int32_t b = h2c_request(&k, "GET", "/b", NULL, NULL, NULL);
	h2c_pump(&k);
	assert_int_equal(h2c_find(&k, b)->status, 200);
	h2c_close(&k);
}

/*
 * Streams the proxy resets itself (a header list over max_request_headers_kb:
 * nghttp2 answers RST_STREAM INTERNAL_ERROR for it) are the proxy's resets,
 * not the client's: counted in downstream_rq_tx_reset, and not as premature
 * resets toward the rapid-reset close (CVE-2023-44487). They were counted
 * as client resets, so a client whose requests were refused got its
 * connection closed as an attacker (fails before: assert_false(k.goaway)
 * in the loop, once 100 streams were opened).
 */
static void test_h2_own_resets_not_client_resets(void **state)
{
	(void)state;
	start(8, jlistener("\"max_request_headers_kb\":1", DIRECT_OK));
	struct h2c k;
	h2c_open(&k, 65535);
	static char v[1500];
	memset(v, 'v', sizeof(v) - 1);
	for (int i = 0; i < 150; i++) {
		k.n = 0;
		int32_t a = h2c_request(&k, "GET", "/a", NULL, "x-big", v);
		h2c_pump(&k);
		assert_false(k.goaway);
		assert_true(h2c_find(&k, a)->closed);
		assert_int_equal(h2c_find(&k, a)->error, NGHTTP2_INTERNAL_ERROR);
	}
	assert_int_equal(stat("http2.header_overflow"), 150);
	assert_false(k.goaway);
	assert_int_equal(stat("http.in.downstream_rq_too_many_premature_resets"), 0);
	assert_int_equal(stat("http.in.downstream_rq_rx_reset"), 0);
	assert_int_equal(stat("http.in.downstream_rq_tx_reset"), 150);
	assert_int_equal(stat("http2.tx_reset"), 150);
	assert_int_equal(k.rst_rx, 150);
	k.n = 0;
	int32_t b = h2c_request(&k, "GET", "/b", NULL, NULL, NULL);
	h2c_pump(&k);
	assert_int_equal(h2c_find(&k, b)->status, 200);
	assert_int_equal(stat("http2.streams_active"), 0);
	h2c_close(&k);
}

/*
 * max_headers_count at the most Arion honours (ARN_CFG_MAX_HEADERS_COUNT
 * 127: a stream's HTTP_MAX_HDRS 128 slots, one kept for the Host made from
 * :authority; lib/config refuses more): 127 fields are served, 128 reset
 * the stream (http2.header_overflow), as docs/http.md and
 * docs/security.md say.
 */
static void h2_request_fields(struct h2c *k, unsigned n, int32_t *id)
{
	static char names[HTTP_MAX_HDRS + 8][16];
	nghttp2_nv nv[HTTP_MAX_HDRS + 8];
	nv[0] = (nghttp2_nv){(uint8_t *)":method", (uint8_t *)"GET", 7, 3, 0};
	nv[1] = (nghttp2_nv){(uint8_t *)":scheme", (uint8_t *)"http", 7, 4, 0};
	nv[2] = (nghttp2_nv){(uint8_t *)":authority", (uint8_t *)"a.example", 10, 9, 0};
	nv[3] = (nghttp2_nv){(uint8_t *)":path", (uint8_t *)"/f", 5, 2, 0};
	for (unsigned i = 0; i < n; i++) {
		snprintf(names[i], sizeof(names[i]), "x-%u", i);
		nv[4 + i] =
		    (nghttp2_nv){(uint8_t *)names[i], (uint8_t *)"v", strlen(names[i]), 1, 0};
	}
	*id = nghttp2_submit_request(k->s, NULL, nv, 4 + n, NULL, NULL);
	assert_true(*id > 0);
	k->st[k->n++] = (struct h2c_stream){.id = *id};
	h2c_pump(k);
}

static void test_h2_max_headers_count_capped(void **state)
{
	(void)state;
	start(8,
	      jlistener("\"common_http_protocol_options\":{\"max_headers_count\":127}", DIRECT_OK));
	struct h2c k;
	h2c_open(&k, 65535);
	int32_t a, b;
	h2_request_fields(&k, HTTP_MAX_HDRS - 1, &a);
	assert_int_equal(h2c_find(&k, a)->status, 200);
	assert_int_equal(stat("http2.header_overflow"), 0);
	h2_request_fields(&k, HTTP_MAX_HDRS, &b);
	assert_true(h2c_find(&k, b)->closed);
	assert_int_equal(h2c_find(&k, b)->status, 0);
	assert_int_equal(h2c_find(&k, b)->error, NGHTTP2_INTERNAL_ERROR);
	assert_int_equal(stat("http2.header_overflow"), 1);
	assert_false(k.goaway);
	h2c_close(&k);
}

/*
 * docs/security.md: SETTINGS entries per frame, 32 (nghttp2's
 * max_settings). A client's SETTINGS of 32 entries is taken (ACK); one of
 * 33 closes the connection with GOAWAY ENHANCE_YOUR_CALM, counted in
 * downstream_cx_protocol_error.
 */
static void h2_settings_frame(char *b, unsigned entries)
{
	size_t len = 6u * entries;
	memcpy(b, "\0\0\0\x04\0\0\0\0\0", 9);
	b[1] = (char)(len >> 8);
	b[2] = (char)len;
	for (unsigned i = 0; i < entries; i++) /* HEADER_TABLE_SIZE 4096 */
		memcpy(b + 9 + 6 * i, "\0\x01\0\0\x10\0", 6);
}

static void test_h2_settings_entries_bounded(void **state)
{
	(void)state;
	start(8, jlistener("", DIRECT_OK));
	static char f[9 + 6 * 33];
	struct arn_tcp_conn *c = client();
	send_s(c, HTTP_H2_PREFACE);
	h2_settings_frame(f, 32);
	send_n(c, f, 9 + 6 * 32);
	/* the server's SETTINGS, then the ACK of these */
	assert_int_equal(frames_on_wire(c, NGHTTP2_SETTINGS, 0, 0, NULL), 2);
	assert_int_equal(frames_on_wire(c, NGHTTP2_GOAWAY, 0, 0, NULL), 0);
	assert_false(c->closed || c->shut);
	h2_settings_frame(f, 33);
	send_n(c, f, 9 + 6 * 33);
	run_ms(3100);
	uint32_t code = 0;
	assert_int_equal(frames_on_wire(c, NGHTTP2_SETTINGS, 0, 0, NULL), 2);
	assert_int_equal(frames_on_wire(c, NGHTTP2_GOAWAY, 0, 4, &code), 1);
	assert_int_equal(code, NGHTTP2_ENHANCE_YOUR_CALM);
	assert_true(c->closed || c->shut);
	assert_int_equal(stat("http.in.downstream_cx_protocol_error"), 1);
}

/*
 * docs/security.md: a request body is buffered within the windows Arion
 * advertises, at most 256 KiB a stream and 1 MiB the connection
 * (HTTP_H2_MAX_STREAM_WINDOW, HTTP_H2_MAX_CONN_WINDOW) whatever the
 * configuration asks: with initial_stream_window_size 1 MiB and
 * initial_connection_window_size 2 MiB the client may send 256 KiB on a
 * stream and 1 MiB in all.
 */
static void test_h2_windows_capped(void **state)
{
	(void)state;
	start(8, jlistener("\"http2_protocol_options\":{\"initial_stream_window_size\":1048576,"
			   "\"initial_connection_window_size\":2097152}",
			   ROUTE_WEB));
	struct h2c k;
	h2c_open(&k, 65535);
	h2c_pump(&k);
	assert_int_equal(
	    nghttp2_session_get_remote_settings(k.s, NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE),
	    HTTP_H2_MAX_STREAM_WINDOW);
	assert_int_equal(nghttp2_session_get_remote_window_size(k.s), HTTP_H2_MAX_CONN_WINDOW);
	assert_int_equal(HTTP_H2_MAX_STREAM_WINDOW, 256u << 10);
	assert_int_equal(HTTP_H2_MAX_CONN_WINDOW, 1u << 20);
	h2c_close(&k);
}

/* More streams than max_concurrent_streams: the extra ones are refused
 * (nghttp2 answers REFUSED_STREAM), the others served. */
static void test_h2_max_concurrent_streams(void **state)
{
	(void)state;
	start(8, jlistener("\"http2_protocol_options\":{\"max_concurrent_streams\":2}", ROUTE_WEB));
	struct h2c k;
	h2c_open(&k, 65535);
	h2c_pump(&k); /* SETTINGS both ways: the client knows the limit... */
	/* ...and is made to ignore it: three streams at once */
	nghttp2_settings_entry iv = {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 100};
	(void)iv;
	for (int i = 0; i < 3; i++)
		h2c_request(&k, "GET", "/x", NULL, NULL, NULL);
	h2c_pump(&k);
	/* the client itself holds the third back (RFC 9113 5.1.2) */
	assert_int_equal(upstream_pending(), 2);
	h2c_close(&k);
}

/*
 * GOAWAY on drain: once the listener is replaced by a newer generation
 * (drain strategy immediate here), the connection says GOAWAY (NO_ERROR)
 * with the stream in flight, which completes; HTTP/1.1 says "connection:
 * close" at the same point. An idle HTTP/2 connection gets its GOAWAY when
 * its listener's drain time ends, then closes.
 */
static void test_h2_goaway_on_listener_update(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	w->drain_immediate = true;
	struct h2c k, idle;
	h2c_open(&k, 65535);
	h2c_open(&idle, 65535);
	h2c_pump(&idle);
	int32_t a = h2c_request(&k, "GET", "/a", NULL, NULL, NULL);
	h2c_pump(&k);
	struct arn_tcp_conn *u = upstream_accepts();
	h2c_pump(&k);
	assert_false(k.goaway);
	w->drain_ms = 500;
	apply(L, "2", jlistener("\"server_name\":\"v2\"", ROUTE_WEB));
	poll_ms(1); /* the worker takes the generation in: the drain starts */
	send_s(u, "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
	h2c_pump(&k);
	assert_true(k.goaway);
	assert_int_equal(k.goaway_error, NGHTTP2_NO_ERROR);
	struct h2c_stream *x = h2c_find(&k, a);
	assert_int_equal(x->status, 200);
	assert_true(x->closed);
	assert_false(idle.goaway);
	/* the drain time ends: the idle connection is told too */
	run_ms(600);
	h2c_pump(&idle);
	assert_true(idle.goaway);
	assert_int_equal(stat("http2.goaway_sent"), 2);
	assert_int_equal(stat("http.in.downstream_cx_drain_close"), 2);
	run_ms(3100);
	assert_true(idle.c->closed || idle.c->shut);
	h2c_close(&k);
	h2c_close(&idle);
}

/*
 * gRPC (issue 19): a local reply to a gRPC request is a gRPC status (200,
 * grpc-status from Envoy's httpToGrpcStatus, grpc-message the body, no
 * body); an HTTP/1.1 upstream's chunked trailers reach the HTTP/2 client
 * as trailers; grpc-timeout is the route's timeout under max_grpc_timeout.
 */
static void test_h2_grpc(void **state)
{
	(void)state;
	start(8, jlistener("", "{\"match\":{\"prefix\":\"/svc.S/\"},\"route\":{\"cluster\":"
			       "\"web\",\"max_grpc_timeout\":\"0s\"}}"));
	struct h2c k;
	h2c_open(&k, 65535);
	/* no route: 404 NR, as gRPC UNIMPLEMENTED (12) */
	int32_t a = h2c_request(&k, "POST", "/other.S/M", NULL, "content-type", "application/grpc");
	h2c_pump(&k);
	struct h2c_stream *x = h2c_find(&k, a);
	assert_true(x->closed);
	assert_int_equal(x->status, 200);
	want_in(x->hdrs, "grpc-status: 12\n");
	want_in(x->hdrs, "content-type: application/grpc\n");
	assert_int_equal(x->body_len, 0);
	assert_int_equal(stat("http.in.downstream_rq_grpc_local_reply"), 1);
	assert_int_equal(stat("http.in.downstream_rq_2xx"), 1);
	/* the same without content-type application/grpc: a plain 404 */
	int32_t b = h2c_request(&k, "GET", "/other.S/M", NULL, NULL, NULL);
	h2c_pump(&k);
	assert_int_equal(h2c_find(&k, b)->status, 404);

	/* trailers from a chunked HTTP/1.1 response */
	int32_t c = h2c_request(&k, "POST", "/svc.S/M", NULL, "content-type", "application/grpc");
	h2c_pump(&k);
	struct arn_tcp_conn *u = upstream_accepts();
	h2c_pump(&k);
	send_s(u, "HTTP/1.1 200 OK\r\nContent-Type: application/grpc\r\nTransfer-Encoding: "
		  "chunked\r\n\r\n5\r\nhello\r\n0\r\nGrpc-Status: 0\r\nGrpc-Message: fine\r\n\r\n");
	h2c_pump(&k);
	x = h2c_find(&k, c);
	assert_true(x->closed);
	assert_int_equal(x->error, 0);
	want_in(x->hdrs, "grpc-status: 0\n");
	want_in(x->hdrs, "grpc-message: fine\n");
	h2c_close(&k);
}

/*
 * TE is hop-by-hop, but Envoy forwards "te: trailers" (and only that
 * element) so a gRPC server behind it sees the client takes trailers:
 * from an HTTP/1.1 client ("TE: deflate, trailers" becomes "te: trailers",
 * "TE: deflate" goes) and from an HTTP/2 one.
 */
static void test_te_trailers_forwarded(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	struct arn_tcp_conn *c = client();
	send_s(c, "GET /t1 HTTP/1.1\r\nHost: a\r\nTE: deflate, Trailers\r\nConnection: TE\r\n\r\n");
	struct arn_tcp_conn *u = upstream_accepts();
	want_in(u->tx, "GET /t1 HTTP/1.1\r\n");
	want_in(u->tx, "\r\nte: trailers\r\n");
	want_not_in(u->tx, "deflate");
	want_not_in(u->tx, "TE:");
	c = client();
	send_s(c, "GET /t2 HTTP/1.1\r\nHost: a\r\nTE: deflate\r\n\r\n");
	u = upstream_accepts();
	want_in(u->tx, "GET /t2 HTTP/1.1\r\n");
	want_not_in(u->tx, "\nte:");
	want_not_in(u->tx, "TE:");

	struct h2c k;
	h2c_open(&k, 65535);
	h2c_request(&k, "POST", "/svc.S/M", NULL, "te", "trailers");
	h2c_pump(&k);
	u = upstream_accepts();
	h2c_pump(&k);
	want_in(u->tx, "POST /svc.S/M HTTP/1.1\r\n");
	want_in(u->tx, "\r\nte: trailers\r\n");
	h2c_close(&k);
}

/*
 * envoy.filters.http.grpc_stats with stats_for_all_methods: each call is
 * counted once from grpc-status, in an HTTP/1.1 upstream's chunked
 * trailers or in its head (trailers-only), as
 * cluster.<c>.grpc.<service>.<method>.{success,failure,total,<status>};
 * a call that is not gRPC is not counted; a hostile path (characters a
 * stat name must not carry) and methods past HTTP_GRPC_STATS_METHODS count
 * under the cluster's method-less names (docs/security.md).
 */
static void grpc_call(struct h2c *k, const char *path, const char *resp)
{
	int32_t id = h2c_request(k, "POST", path, NULL, "content-type", "application/grpc");
	h2c_pump(k);
	struct arn_tcp_conn *u = upstream_accepts();
	h2c_pump(k);
	send_s(u, resp);
	h2c_pump(k);
	assert_true(h2c_find(k, id)->closed);
	k->n = 0; /* the slots are reused: ids are not looked up again */
}

#define GRPC_TRAILERS(status)                                                                      \
	"HTTP/1.1 200 OK\r\nContent-Type: application/grpc\r\nConnection: close\r\n"               \
	"Transfer-Encoding: chunked\r\n\r\n"                                                       \
	"5\r\nhello\r\n0\r\nGrpc-Status: " status "\r\n\r\n"
#define GRPC_TRAILERS_ONLY(status)                                                                 \
	"HTTP/1.1 200 OK\r\nContent-Type: application/grpc\r\nConnection: close\r\n"               \
	"grpc-status: " status "\r\ncontent-length: 0\r\n\r\n"

static void test_h2_grpc_stats(void **state)
{
	(void)state;
	jfilters = "{\"name\":\"envoy.filters.http.grpc_stats\",\"typed_config\":{\"@type\":"
		   "\"type.googleapis.com/envoy.extensions.filters.http.grpc_stats.v3."
		   "FilterConfig\",\"stats_for_all_methods\":true}},";
	start(8, jlistener("", ROUTE_WEB));
	jfilters = "";
	struct h2c k;
	h2c_open(&k, 65535);
	grpc_call(&k, "/pkg.Svc/Get", GRPC_TRAILERS("0"));
	grpc_call(&k, "/pkg.Svc/Get", GRPC_TRAILERS("0"));
	grpc_call(&k, "/pkg.Svc/Get", GRPC_TRAILERS_ONLY("5"));
	grpc_call(&k, "/pkg.Svc/Put", GRPC_TRAILERS("14"));
	grpc_call(&k, "/pkg.Svc/Put", GRPC_TRAILERS("99"));
	assert_int_equal(stat("cluster.web.grpc.pkg.Svc.Get.success"), 2);
	assert_int_equal(stat("cluster.web.grpc.pkg.Svc.Get.failure"), 1);
	assert_int_equal(stat("cluster.web.grpc.pkg.Svc.Get.total"), 3);
	assert_int_equal(stat("cluster.web.grpc.pkg.Svc.Get.0"), 2);
	assert_int_equal(stat("cluster.web.grpc.pkg.Svc.Get.5"), 1);
	assert_int_equal(stat("cluster.web.grpc.pkg.Svc.Put.14"), 1);
	assert_int_equal(stat("cluster.web.grpc.pkg.Svc.Put.other"), 1);
	assert_int_equal(stat("cluster.web.grpc.pkg.Svc.Put.failure"), 2);
	/* not gRPC (no content-type application/grpc): not counted */
	int32_t id = h2c_request(&k, "POST", "/pkg.Svc/Get", NULL, NULL, NULL);
	h2c_pump(&k);
	struct arn_tcp_conn *u = upstream_accepts();
	h2c_pump(&k);
	send_s(u, GRPC_TRAILERS("0"));
	h2c_pump(&k);
	assert_true(h2c_find(&k, id)->closed);
	k.n = 0;
	assert_int_equal(stat("cluster.web.grpc.pkg.Svc.Get.total"), 3);
	/* a name a stat must not carry goes to the method-less names */
	grpc_call(&k, "/pkg.Svc/Get%7Bx%7D", GRPC_TRAILERS("0"));
	assert_int_equal(stat("cluster.web.grpc.success"), 1);
	/* distinct methods past the bound: the same */
	for (int i = 2; i < HTTP_GRPC_STATS_METHODS + 5; i++) {
		char path[64];
		snprintf(path, sizeof(path), "/pkg.Svc/M%d", i);
		grpc_call(&k, path, GRPC_TRAILERS("0"));
	}
	assert_int_equal(stat("cluster.web.grpc.pkg.Svc.M2.success"), 1);
	char last[96];
	snprintf(last, sizeof(last), "cluster.web.grpc.pkg.Svc.M%d.success",
		 HTTP_GRPC_STATS_METHODS - 1);
	assert_int_equal(stat(last), 1);
	snprintf(last, sizeof(last), "cluster.web.grpc.pkg.Svc.M%d.total",
		 HTTP_GRPC_STATS_METHODS + 4);
	assert_int_equal(stat(last), 0);
	/* 2 methods came first; 126 more fit, 5 did not */
	assert_int_equal(stat("cluster.web.grpc.success"), 1 + 5);
	assert_int_equal(stat("cluster.web.grpc.total"), 1 + 5);
	/* the rows: 128 methods and the cluster's; those 5 counted as overflow */
	assert_int_equal(stat("grpc_stats.0.rows"), HTTP_GRPC_STATS_METHODS + 1);
	assert_int_equal(stat("grpc_stats.0.rows_overflow"), 5);
	h2c_close(&k);
}

/* HttpFilter.disabled for grpc_stats and health_check, turned on by a
 * route's FilterConfig (an optional config of a type Arion lacks): calls
 * on the other routes are not counted, and the health check path there is
 * routed like any other (docs/configuration.md, "Filters off by default,
 * and per route"). */
#define FC_ON                                                                                      \
	"{\"@type\":\"type.googleapis.com/envoy.config.route.v3.FilterConfig\","                   \
	"\"is_optional\":true,\"config\":{\"@type\":\"type.googleapis.com/"                        \
	"google.protobuf.Empty\"}}"
static void test_filters_disabled_until_a_route_names_them(void **state)
{
	(void)state;
	jfilters = "{\"name\":\"gs\",\"disabled\":true,\"typed_config\":{\"@type\":"
		   "\"type.googleapis.com/envoy.extensions.filters.http.grpc_stats.v3."
		   "FilterConfig\",\"stats_for_all_methods\":true}},"
		   "{\"name\":\"hc\",\"disabled\":true,\"typed_config\":{\"@type\":"
		   "\"type.googleapis.com/envoy.extensions.filters.http.health_check.v3."
		   "HealthCheck\",\"pass_through_mode\":false,\"headers\":[{\"name\":\":path\","
		   "\"string_match\":{\"prefix\":\"/health\"}}]}},";
	/* per-route filter configuration, as the arion binary runs it */
	arn_config_set_features(ARN_CONFIG_FEATURE_L4 | ARN_CONFIG_FEATURE_HTTP_L4);
	start(8, jlistener("", "{\"match\":{\"prefix\":\"/on.S\"},\"route\":{\"cluster\":\"web\"},"
			       "\"typed_per_filter_config\":{\"gs\":" FC_ON "}},"
			       "{\"match\":{\"prefix\":\"/healthz\"},\"route\":{\"cluster\":\"web\"},"
			       "\"typed_per_filter_config\":{\"hc\":" FC_ON "}}," ROUTE_WEB));
	jfilters = "";
	struct h2c k;
	h2c_open(&k, 65535);
	grpc_call(&k, "/on.S/M", GRPC_TRAILERS("0"));
	grpc_call(&k, "/off.S/M", GRPC_TRAILERS("0"));
	assert_int_equal(stat("cluster.web.grpc.on.S.M.success"), 1);
	assert_int_equal(stat("cluster.web.grpc.off.S.M.total"), 0);
	h2c_close(&k);
	/* /healthz: the filter answers (no upstream); /health-x: routed */
	struct arn_tcp_conn *c = client();
	assert_non_null(c);
	unsigned before = upstream_pending();
	send_s(c, "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n");
	want_in(c->tx, "HTTP/1.1 200 OK\r\n");
	assert_int_equal(upstream_pending(), before);
	send_s(c, "GET /health-x HTTP/1.1\r\nHost: a\r\n\r\n");
	assert_int_equal(upstream_pending(), before + 1);
	struct arn_tcp_conn *u = upstream_accepts();
	want_in(u->tx, "GET /health-x HTTP/1.1\r\n");
	arn_config_set_features(0);
}
#undef FC_ON

/* headers_with_underscores_action over HTTP/2, as Envoy's HTTP/2 codec:
 * DROP_HEADER takes the field out (the upstream never sees it),
 * REJECT_REQUEST resets the stream; http2.* counts each. */
static void test_h2_headers_with_underscores(void **state)
{
	(void)state;
	start(8, jlistener("\"common_http_protocol_options\":{\"headers_with_underscores_action\":"
			   "\"DROP_HEADER\"}",
			   ROUTE_WEB));
	struct h2c k;
	h2c_open(&k, 65535);
	int32_t id = h2c_request(&k, "GET", "/d", NULL, "x_user", "eve");
	h2c_pump(&k);
	struct arn_tcp_conn *u = upstream_accepts();
	h2c_pump(&k);
	want_in(u->tx, "GET /d HTTP/1.1\r\n");
	assert_null(strstr(u->tx, "x_user"));
	send_s(u, "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
	h2c_pump(&k);
	assert_int_equal(h2c_find(&k, id)->status, 200);
	assert_int_equal(stat("http2.dropped_headers_with_underscores"), 1);
	h2c_close(&k);
	teardown(NULL);

	start(8, jlistener("\"common_http_protocol_options\":{\"headers_with_underscores_action\":"
			   "\"REJECT_REQUEST\"}",
			   ROUTE_WEB));
	h2c_open(&k, 65535);
	unsigned before = upstream_pending();
	id = h2c_request(&k, "GET", "/r", NULL, "x_user", "eve");
	h2c_pump(&k);
	assert_int_equal(upstream_pending(), before);
	assert_true(h2c_find(&k, id)->closed);
	assert_int_equal(h2c_find(&k, id)->status, 0);
	assert_true(h2c_find(&k, id)->error != 0);
	assert_int_equal(stat("http2.requests_rejected_with_underscores_in_headers"), 1);
	/* the connection serves the next stream */
	id = h2c_request(&k, "GET", "/ok", NULL, "x-user", "eve");
	h2c_pump(&k);
	u = upstream_accepts();
	h2c_pump(&k);
	want_in(u->tx, "x-user: eve\r\n");
	h2c_close(&k);
}

#define GRPC_STATS_FILTER(all)                                                                     \
	"{\"name\":\"envoy.filters.http.grpc_stats\",\"typed_config\":{\"@type\":"                 \
	"\"type.googleapis.com/envoy.extensions.filters.http.grpc_stats.v3."                       \
	"FilterConfig\",\"stats_for_all_methods\":" all "}},"

/*
 * Local replies to gRPC calls are counted with the grpc-status they carry
 * (the upstream refused: 503 as UNAVAILABLE 14; grpc-timeout reached: 504
 * as 14 too), as the upstream's answers are. The rows go with the filter
 * configuration: a generation without stats_for_all_methods frees the
 * per-method rows, one without the filter frees them all, and their
 * counters leave /stats.
 */
static void test_h2_grpc_stats_local_replies_and_rows(void **state)
{
	(void)state;
	jfilters = GRPC_STATS_FILTER("true");
	start(8, jlistener("", "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":"
			       "\"web\",\"max_grpc_timeout\":\"1s\"}}"));
	struct h2c k;
	h2c_open(&k, 65535);
	grpc_call(&k, "/pkg.Svc/Get", GRPC_TRAILERS("0"));
	/* the upstream refuses the connection: a local reply */
	int32_t a =
	    h2c_request(&k, "POST", "/pkg.Svc/Get", NULL, "content-type", "application/grpc");
	h2c_pump(&k);
	for (unsigned c = 0; c < CONNS; c++)
		if (conns[c].used && conns[c].upstream && !conns[c].connected && !conns[c].closed)
			close_later(&conns[c], -ECONNREFUSED);
	poll_ms(1);
	h2c_pump(&k);
	struct h2c_stream *x = h2c_find(&k, a);
	assert_true(x->closed);
	want_in(x->hdrs, "grpc-status: 14\n");
	k.n = 0;
	assert_int_equal(stat("cluster.web.grpc.pkg.Svc.Get.14"), 1);
	assert_int_equal(stat("cluster.web.grpc.pkg.Svc.Get.failure"), 1);
	assert_int_equal(stat("cluster.web.grpc.pkg.Svc.Get.total"), 2);
	/* grpc-timeout reached */
	nghttp2_nv nv[6] = {
	    {(uint8_t *)":method", (uint8_t *)"POST", 7, 4, 0},
	    {(uint8_t *)":scheme", (uint8_t *)"http", 7, 4, 0},
	    {(uint8_t *)":authority", (uint8_t *)"a", 10, 1, 0},
	    {(uint8_t *)":path", (uint8_t *)"/pkg.Svc/Slow", 5, 13, 0},
	    {(uint8_t *)"content-type", (uint8_t *)"application/grpc", 12, 16, 0},
	    {(uint8_t *)"grpc-timeout", (uint8_t *)"100m", 12, 4, 0},
	};
	int32_t b = nghttp2_submit_request(k.s, NULL, nv, 6, NULL, NULL);
	k.st[k.n++] = (struct h2c_stream){.id = b};
	h2c_pump(&k);
	upstream_accepts();
	h2c_pump(&k);
	run_ms(200);
	h2c_pump(&k);
	assert_true(h2c_find(&k, b)->closed);
	k.n = 0;
	assert_int_equal(stat("cluster.web.grpc.pkg.Svc.Slow.14"), 1);
	assert_int_equal(stat("cluster.web.grpc.pkg.Svc.Slow.total"), 1);
	assert_int_equal(stat("grpc_stats.0.rows"), 2);
	h2c_close(&k);
	/* a generation without per-method stats: the method rows go */
	jfilters = GRPC_STATS_FILTER("false");
	apply(L, "2", jlistener("", ROUTE_WEB));
	poll_ms(1);
	assert_int_equal(stat("grpc_stats.0.rows"), 0);
	assert_int_equal(stat("cluster.web.grpc.pkg.Svc.Get.total"), 0);
	h2c_open(&k, 65535);
	grpc_call(&k, "/pkg.Svc/Get", GRPC_TRAILERS("0"));
	assert_int_equal(stat("cluster.web.grpc.total"), 1);
	assert_int_equal(stat("grpc_stats.0.rows"), 1);
	h2c_close(&k);
	/* without the filter: none */
	jfilters = "";
	apply(L, "3", jlistener("", ROUTE_WEB));
	poll_ms(1);
	assert_int_equal(stat("grpc_stats.0.rows"), 0);
	assert_int_equal(stat("cluster.web.grpc.total"), 0);
}

/* grpc-timeout with a content-type of gRPC becomes the route timeout:
 * the upstream does not answer in time, the client gets gRPC UNAVAILABLE
 * (504 as gRPC), well before the route's 15 s. */
static void test_h2_grpc_timeout(void **state)
{
	(void)state;
	start(8, jlistener("", "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":"
			       "\"web\",\"max_grpc_timeout\":\"1s\"}}"));
	struct h2c k;
	h2c_open(&k, 65535);
	nghttp2_nv nv[6] = {
	    {(uint8_t *)":method", (uint8_t *)"POST", 7, 4, 0},
	    {(uint8_t *)":scheme", (uint8_t *)"http", 7, 4, 0},
	    {(uint8_t *)":authority", (uint8_t *)"a", 10, 1, 0},
	    {(uint8_t *)":path", (uint8_t *)"/svc.S/M", 5, 8, 0},
	    {(uint8_t *)"content-type", (uint8_t *)"application/grpc", 12, 16, 0},
	    {(uint8_t *)"grpc-timeout", (uint8_t *)"200m", 12, 4, 0},
	};
	int32_t a = nghttp2_submit_request(k.s, NULL, nv, 6, NULL, NULL);
	k.st[k.n++] = (struct h2c_stream){.id = a};
	h2c_pump(&k);
	upstream_accepts();
	h2c_pump(&k);
	run_ms(150);
	h2c_pump(&k);
	assert_false(h2c_find(&k, a)->closed);
	run_ms(100);
	h2c_pump(&k);
	struct h2c_stream *x = h2c_find(&k, a);
	assert_true(x->closed);
	assert_int_equal(x->status, 200);
	want_in(x->hdrs, "grpc-status: 14\n");
	want_in(x->hdrs, "grpc-message: upstream request timeout\n");
	h2c_close(&k);
}

/*
 * Rapid reset (CVE-2023-44487): a client that opens streams and resets
 * them at once, over and over, is cut off (GOAWAY ENHANCE_YOUR_CALM, then
 * the close) once half of at least 100 streams were reset before their
 * response (Envoy's premature resets), and each stream it opened went
 * back; a client on another connection is served all along.
 */
static void h2_rapid_reset(uint32_t code)
{
	start(8, jlistener("", ROUTE_WEB));
	struct h2c k, good;
	h2c_open(&k, 65535);
	h2c_open(&good, 65535);
	h2c_pump(&k);
	for (int i = 0; i < 1200 && !k.goaway; i++) {
		nghttp2_nv nv[4] = {
		    {(uint8_t *)":method", (uint8_t *)"GET", 7, 3, 0},
		    {(uint8_t *)":scheme", (uint8_t *)"http", 7, 4, 0},
		    {(uint8_t *)":authority", (uint8_t *)"a", 10, 1, 0},
		    {(uint8_t *)":path", (uint8_t *)"/r", 5, 2, 0},
		};
		int32_t id = nghttp2_submit_request(k.s, NULL, nv, 4, NULL, NULL);
		h2c_pump(&k); /* HEADERS out first, or nghttp2 only cancels it */
		nghttp2_submit_rst_stream(k.s, NGHTTP2_FLAG_NONE, id, code);
		h2c_pump(&k);
		poll_ms(1);
		/* the upstream connections it made the proxy open go away */
		for (unsigned c = 0; c < CONNS; c++)
			if (conns[c].used && conns[c].upstream && !conns[c].connected &&
			    !conns[c].closed)
				close_later(&conns[c], -ECONNREFUSED);
		deliver_closes();
	}
	assert_true(k.goaway);
	assert_int_equal(k.goaway_error, NGHTTP2_ENHANCE_YOUR_CALM);
	run_ms(3100);
	assert_true(k.c->closed || k.c->shut);
	assert_int_equal(stat("http2.streams_active"), 0);
	assert_int_equal(stat("http.in.downstream_rq_too_many_premature_resets"), 1);
	/* cut off at the first check that can trip: 100 streams opened */
	assert_int_equal(stat("http2.rx_reset"), 100);
	int32_t a = h2c_request(&good, "GET", "/ok", NULL, NULL, NULL);
	h2c_pump(&good);
	struct arn_tcp_conn *u = upstream_accepts();
	h2c_pump(&good);
	send_s(u, "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
	h2c_pump(&good);
	assert_int_equal(h2c_find(&good, a)->status, 200);
	h2c_close(&k);
	h2c_close(&good);
}

static void test_h2_rapid_reset(void **state)
{
	(void)state;
	h2_rapid_reset(NGHTTP2_CANCEL);
}

/* The same with RST_STREAM's error code NO_ERROR: a reset before the
 * response is premature whatever code the client gives (Envoy counts every
 * remote reset of a stream not ended both ways). */
static void test_h2_rapid_reset_no_error(void **state)
{
	(void)state;
	h2_rapid_reset(NGHTTP2_NO_ERROR);
}

/*
 * A client that holds its window at zero gets the response head (HEADERS
 * are not flow controlled) and nothing of the body; the body waits in the
 * upstream's connection, not in Arion, and stream_idle_timeout ends the
 * stream (RST_STREAM) and the upstream exchange. Another stream on the
 * same connection is served meanwhile.
 */
static void test_h2_zero_window_bounded(void **state)
{
	(void)state;
	start(8, jlistener("\"stream_idle_timeout\":\"2s\"", ROUTE_WEB));
	struct h2c k;
	h2c_open(&k, 0);
	unsigned mbufs0 = rte_mempool_in_use_count(pool);
	int32_t a = h2c_request(&k, "GET", "/big", NULL, NULL, NULL);
	h2c_pump(&k);
	struct arn_tcp_conn *u = upstream_accepts();
	h2c_pump(&k);
	send_s(u, "HTTP/1.1 200 OK\r\ncontent-length: 100000\r\n\r\n");
	static char chunk[20001];
	memset(chunk, 'z', 20000);
	send_s(u, chunk);
	h2c_pump(&k);
	struct h2c_stream *x = h2c_find(&k, a);
	assert_int_equal(x->status, 200);
	assert_int_equal(x->body_len, 0);
	/* the mbufs pinned while the client holds its window shut: those
	 * the upstream's bytes arrived in (10 of 2000 bytes, still the
	 * upstream connection's), and a few of Arion's own; more upstream
	 * bytes pin no more of Arion's */
	unsigned pinned = rte_mempool_in_use_count(pool) - mbufs0;
	assert_true(pinned <= 10 + 4);
	send_s(u, chunk);
	h2c_pump(&k);
	assert_true(rte_mempool_in_use_count(pool) - mbufs0 <= pinned + 10);
	assert_int_equal(x->body_len, 0);
	/* the other stream: a direct answer needs no window for its head... */
	int32_t b = h2c_request(&k, "GET", "/b", NULL, NULL, NULL);
	h2c_pump(&k);
	struct arn_tcp_conn *u2 = upstream_accepts();
	h2c_pump(&k);
	send_s(u2, "HTTP/1.1 204 No Content\r\n\r\n");
	h2c_pump(&k);
	assert_int_equal(h2c_find(&k, b)->status, 204);
	assert_true(h2c_find(&k, b)->closed);
	/* ...and the stalled one is cut by the idle timeout */
	run_ms(2100);
	h2c_pump(&k);
	assert_true(x->closed);
	assert_int_not_equal(x->error, 0);
	assert_true(u->closed);
	assert_int_equal(stat("http2.streams_active"), 0);
	h2c_close(&k);
}

/*
 * HPACK bomb: a 3000-byte value indexed once and then referenced 30 times
 * costs the client a few bytes per reference but decodes to 90 KB, over
 * max_request_headers_kb (60): the stream is reset (header_overflow)
 * however small it was on the wire, and the connection goes on.
 */
static void test_h2_hpack_bomb(void **state)
{
	(void)state;
	start(8, jlistener("", DIRECT_OK));
	struct h2c k;
	h2c_open(&k, 65535);
	static char v[3001];
	memset(v, 'b', 3000);
	nghttp2_nv nv[34] = {
	    {(uint8_t *)":method", (uint8_t *)"GET", 7, 3, 0},
	    {(uint8_t *)":scheme", (uint8_t *)"http", 7, 4, 0},
	    {(uint8_t *)":authority", (uint8_t *)"a", 10, 1, 0},
	    {(uint8_t *)":path", (uint8_t *)"/", 5, 1, 0},
	};
	for (int i = 4; i < 34; i++)
		nv[i] = (nghttp2_nv){(uint8_t *)"x-bomb", (uint8_t *)v, 6, 3000, 0};
	int32_t a = nghttp2_submit_request(k.s, NULL, nv, 34, NULL, NULL);
	k.st[k.n++] = (struct h2c_stream){.id = a};
	size_t sent = k.sent;
	h2c_pump(&k);
	/* small on the wire (one literal, then indexes) */
	assert_true(k.sent - sent < 8000);
	struct h2c_stream *x = h2c_find(&k, a);
	assert_true(x->closed);
	assert_int_not_equal(x->error, 0);
	assert_int_equal(stat("http2.header_overflow"), 1);
	int32_t b = h2c_request(&k, "GET", "/", NULL, NULL, NULL);
	h2c_pump(&k);
	assert_int_equal(h2c_find(&k, b)->status, 200);
	h2c_close(&k);
}

/* Failed health checks drain HTTP/2 connections with GOAWAY, as they
 * close HTTP/1.1 ones with "connection: close". */
static void test_h2_goaway_on_healthcheck_fail(void **state)
{
	(void)state;
	start(8, jlistener("", DIRECT_OK));
	struct h2c k;
	h2c_open(&k, 65535);
	int32_t a = h2c_request(&k, "GET", "/a", NULL, NULL, NULL);
	h2c_pump(&k);
	assert_int_equal(h2c_find(&k, a)->status, 200);
	assert_false(k.goaway);
	arn_http_set_healthcheck_failed(true);
	int32_t b = h2c_request(&k, "GET", "/b", NULL, NULL, NULL);
	h2c_pump(&k);
	arn_http_set_healthcheck_failed(false);
	assert_int_equal(h2c_find(&k, b)->status, 200); /* taken before the GOAWAY */
	assert_true(k.goaway);
	assert_int_equal(stat("http.in.downstream_cx_drain_close"), 1);
	run_ms(3100);
	assert_true(k.c->closed || k.c->shut);
	h2c_close(&k);
}

/* A request on @p good is served through the upstream: what each flood
 * test checks on another connection while the flood is cut off. */
static void h2c_served_web(struct h2c *good)
{
	int32_t id = h2c_request(good, "GET", "/", NULL, NULL, NULL);
	h2c_pump(good);
	/* a new upstream connection, or the one the last request left in
	 * the pool */
	struct arn_tcp_conn *u = NULL;
	if (upstream_pending()) {
		u = upstream_accepts();
	} else {
		for (unsigned i = 0; i < CONNS; i++)
			if (conns[i].used && conns[i].upstream && conns[i].connected &&
			    !conns[i].closed)
				u = &conns[i];
		assert_non_null(u);
	}
	h2c_pump(good);
	send_s(u, "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
	h2c_pump(good);
	struct h2c_stream *x = h2c_find(good, id);
	assert_true(x->closed);
	assert_int_equal(x->status, 200);
	good->n = 0;
}

/* Raw frames from client @p k, past its session (which would not send
 * them), @p n times. */
static void h2c_raw(struct h2c *k, const char *f, size_t len, int n)
{
	for (int i = 0; i < n && !k->c->closed; i++)
		send_n(k->c, f, len);
}

/*
 * Envoy's inbound flood bounds with their defaults: two empty DATA frames
 * in a row (max_consecutive_inbound_frames_with_empty_payload 1), more
 * than 100 PRIORITY frames per stream opened (plus one), more than
 * 5 + 10 WINDOW_UPDATEs per DATA frame sent (plus one): each closes the
 * connection with GOAWAY ENHANCE_YOUR_CALM and is counted, and a client on
 * another connection is served meanwhile.
 */
static void test_h2_inbound_floods(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	static const struct {
		const char *frame;
		size_t len;
		int n;
		const char *stat;
	} cases[] = {
	    {"\0\0\0\0\0\0\0\0\x01", 9, 3, "http2.inbound_empty_frames_flood"},
	    {"\0\0\x05\x02\0\0\0\0\x03\0\0\0\0\x10", 14, 150,
	     "http2.inbound_priority_frames_flood"},
	    {"\0\0\x04\x08\0\0\0\0\0\0\0\0\x01", 13, 30,
	     "http2.inbound_window_update_frames_flood"},
	    /* DATA (PADDED) of a Pad Length byte only: no payload either
	     * (fails before: assert_true(k.goaway), the flood went on) */
	    {"\0\0\x01\0\x08\0\0\0\x01\0", 10, 3, "http2.inbound_empty_frames_flood"},
	};
	struct h2c good;
	h2c_open(&good, 65535);
	for (unsigned i = 0; i < 4; i++) {
		struct h2c k;
		h2c_open(&k, 65535);
		/* an open stream for the empty DATA (its body still to come) */
		nghttp2_nv nv[4] = {
		    {(uint8_t *)":method", (uint8_t *)"POST", 7, 4, 0},
		    {(uint8_t *)":scheme", (uint8_t *)"http", 7, 4, 0},
		    {(uint8_t *)":authority", (uint8_t *)"a", 10, 1, 0},
		    {(uint8_t *)":path", (uint8_t *)"/", 5, 1, 0},
		};
		if (i == 0 || i == 3) {
			assert_int_equal(
			    nghttp2_submit_headers(k.s, NGHTTP2_FLAG_NONE, -1, NULL, nv, 4, NULL),
			    1);
		}
		h2c_pump(&k);
		assert_false(k.goaway);
		h2c_raw(&k, cases[i].frame, cases[i].len, cases[i].n);
		h2c_pump(&k);
		assert_true(k.goaway);
		assert_int_equal(k.goaway_error, NGHTTP2_ENHANCE_YOUR_CALM);
		assert_int_equal(stat(cases[i].stat), i == 3 ? 2 : 1);
		h2c_served_web(&good);
		run_ms(3100);
		assert_true(k.c->closed || k.c->shut);
		h2c_close(&k);
	}
	h2c_close(&good);
}

/* A request on @p good (a direct answer) is served: what each flood test
 * checks on another connection while the flood is cut off. */
static void h2c_served(struct h2c *good)
{
	int32_t id = h2c_request(good, "GET", "/", NULL, NULL, NULL);
	h2c_pump(good);
	struct h2c_stream *x = h2c_find(good, id);
	assert_true(x->closed);
	assert_int_equal(x->status, 200);
	good->n = 0;
}

/* HEADERS opening stream 1 (GET http /) without END_HEADERS, and @p extra
 * bytes of HPACK after it. */
static size_t h2_open_block(char *b, const char *extra, size_t elen)
{
	size_t len = 3 + elen;
	memcpy(b, "\0\0\0\x01\0\0\0\0\x01", 9);
	b[0] = (char)(len >> 16);
	b[1] = (char)(len >> 8);
	b[2] = (char)len;
	memcpy(b + 9, "\x82\x86\x84", 3);
	memcpy(b + 12, extra, elen);
	return 9 + len;
}

/*
 * CONTINUATION flood (CVE-2024-27316): a header block that never ends.
 * Many small CONTINUATION frames (empty here) are cut after
 * HTTP_H2_MAX_CONTINUATIONS; a few large ones carrying one endless field
 * are cut once the block's bytes pass what any header list within
 * max_request_headers_kb (1 KiB here) needs on the wire (4 KiB), long
 * before nghttp2's own frame count. Each closes the connection with
 * GOAWAY ENHANCE_YOUR_CALM, counted in http2.header_overflow; another
 * connection is served meanwhile.
 */
static void test_h2_continuation_flood(void **state)
{
	(void)state;
	start(8, jlistener("\"max_request_headers_kb\":1", DIRECT_OK));
	struct h2c good;
	h2c_open(&good, 65535);
	h2c_served(&good);
	static char b[2048], cont[9 + 1000];
	/* many small ones */
	struct h2c k;
	h2c_open(&k, 65535);
	h2c_pump(&k);
	size_t n = h2_open_block(b, "", 0);
	h2c_raw(&k, b, n, 1);
	h2c_raw(&k, "\0\0\0\x09\0\0\0\0\x01", 9, HTTP_H2_MAX_CONTINUATIONS);
	h2c_pump(&k);
	assert_false(k.goaway);
	h2c_raw(&k, "\0\0\0\x09\0\0\0\0\x01", 9, 1);
	h2c_pump(&k);
	assert_true(k.goaway);
	assert_int_equal(k.goaway_error, NGHTTP2_ENHANCE_YOUR_CALM);
	assert_int_equal(stat("http2.header_overflow"), 1);
	h2c_served(&good);
	run_ms(3100);
	assert_true(k.c->closed || k.c->shut);
	h2c_close(&k);
	/* one endless field: "x" with a value of 60000 bytes announced */
	h2c_open(&k, 65535);
	h2c_pump(&k);
	n = h2_open_block(b, "\x00\x01x\x7f\xe1\xd3\x03", 8);
	h2c_raw(&k, b, n, 1);
	memcpy(cont, "\0\x03\xe8\x09\0\0\0\0\x01", 9); /* 1000 bytes, no END_HEADERS */
	memset(cont + 9, 'v', 1000);
	h2c_raw(&k, cont, sizeof(cont), 4);
	h2c_pump(&k);
	assert_false(k.goaway); /* 4 KiB + the first frame's: still under */
	h2c_raw(&k, cont, sizeof(cont), 1);
	h2c_pump(&k);
	assert_true(k.goaway);
	assert_int_equal(k.goaway_error, NGHTTP2_ENHANCE_YOUR_CALM);
	assert_int_equal(stat("http2.header_overflow"), 2);
	h2c_served(&good);
	run_ms(3100);
	assert_true(k.c->closed || k.c->shut);
	assert_int_equal(stat("http2.streams_active"), 0);
	h2c_close(&k);
	h2c_close(&good);
}

/*
 * SETTINGS and PING floods: each makes nghttp2 queue an ACK. A client that
 * sends them and reads nothing (its receive window closed: Arion's writes
 * take nothing) gets at most max_outbound_control_frames (1000) ACKs
 * queued, then the connection is closed, counted in
 * http2.outbound_control_flood; another connection is served meanwhile.
 * A client that reads its ACKs is not cut off, however many it asks for.
 */
static void test_h2_control_floods(void **state)
{
	(void)state;
	start(8, jlistener("", DIRECT_OK));
	struct h2c good;
	h2c_open(&good, 65535);
	static const struct {
		const char *frame;
		size_t len;
	} cases[] = {
	    {"\0\0\0\x04\0\0\0\0\0", 9}, /* SETTINGS, empty */
	    {"\0\0\x08\x06\0\0\0\0\0"
	     "01234567",
	     17}, /* PING */
	};
	for (unsigned i = 0; i < 2; i++) {
		struct h2c k;
		h2c_open(&k, 65535);
		h2c_pump(&k);
		/* read as they come: answered, however many (the client's
		 * session does not see the ACKs it did not ask for) */
		size_t tx0 = k.c->tx_len;
		h2c_raw(&k, cases[i].frame, cases[i].len, 3000);
		assert_int_equal(k.c->tx_len - tx0, 3000 * (i == 0 ? 9 : 17));
		k.tx_seen = k.c->tx_len;
		assert_false(k.c->closed);
		assert_int_equal(stat("http2.outbound_control_flood"), i);
		/* not read */
		k.c->full = true;
		h2c_raw(&k, cases[i].frame, cases[i].len, 1100);
		assert_int_equal(stat("http2.outbound_control_flood"), i + 1);
		h2c_served(&good);
		run_ms(3100);
		assert_true(k.c->closed);
		h2c_close(&k);
	}
	h2c_close(&good);
}

/* Garbage after the preface is a connection error: GOAWAY, then the
 * connection closes (counted as a protocol error). */
static void test_h2_bad_frames_close(void **state)
{
	(void)state;
	start(8, jlistener("", DIRECT_OK));
	struct arn_tcp_conn *c = client();
	send_s(c, HTTP_H2_PREFACE);
	send_n(c, "\x00\x00\x04\x09\x00\x00\x00\x00\x01zzzz", 13); /* CONTINUATION out of place */
	run_ms(3100);
	assert_true(c->closed || c->shut);
	assert_int_equal(stat("http.in.downstream_cx_protocol_error"), 1);
}

/* ---- upstream HTTP/2 (http_upstream_h2.c) ---------------------------------------------------- */

/* An HTTP/2 upstream: nghttp2's server session on one of the proxy's
 * upstream connections, fed what the proxy wrote and answering into it. */
#define H2U_STREAMS 64
struct h2u_stream {
	int32_t id;
	char path[64];
	char trailers[8192]; /* the request's trailers, "name: value\n" each */
	size_t body;	     /* request body bytes received */
	bool end, answered, closed;
	uint32_t error;
};
struct h2u {
	nghttp2_session *s;
	struct arn_tcp_conn *c;
	size_t tx_seen;
	struct h2u_stream st[H2U_STREAMS];
	unsigned n;
	unsigned rst_rx;
	/* the response body of /big: this many bytes, how many were framed */
	size_t big, big_sent;
	unsigned pings; /* PINGs received (not ACKs) */
};

static struct h2u_stream *h2u_find(struct h2u *k, int32_t id)
{
	for (unsigned i = 0; i < k->n; i++)
		if (k->st[i].id == id)
			return &k->st[i];
	return NULL;
}

static int h2u_on_begin(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
	(void)s;
	struct h2u *k = ud;
	if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_REQUEST) {
		assert_true(k->n < H2U_STREAMS);
		k->st[k->n++] = (struct h2u_stream){.id = f->hd.stream_id};
	}
	return 0;
}

static int h2u_on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name,
			 size_t nlen, const uint8_t *value, size_t vlen, uint8_t flags, void *ud)
{
	(void)s, (void)flags;
	struct h2u_stream *x = h2u_find(ud, f->hd.stream_id);
	if (x && nlen == 5 && memcmp(name, ":path", 5) == 0)
		snprintf(x->path, sizeof(x->path), "%.*s", (int)vlen, value);
	if (x && f->headers.cat == NGHTTP2_HCAT_HEADERS) {
		size_t l = strlen(x->trailers);
		snprintf(x->trailers + l, sizeof(x->trailers) - l, "%.*s: %.*s\n", (int)nlen, name,
			 (int)vlen, value);
	}
	return 0;
}

static int h2u_on_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data,
		       size_t len, void *ud)
{
	(void)s, (void)flags, (void)data;
	struct h2u_stream *x = h2u_find(ud, id);
	if (x)
		x->body += len;
	return 0;
}

static int h2u_on_frame(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
	(void)s;
	struct h2u *k = ud;
	struct h2u_stream *x = h2u_find(k, f->hd.stream_id);
	if (f->hd.type == NGHTTP2_RST_STREAM)
		k->rst_rx++;
	else if (f->hd.type == NGHTTP2_PING && !(f->hd.flags & NGHTTP2_FLAG_ACK))
		k->pings++;
	else if (x && (f->hd.flags & NGHTTP2_FLAG_END_STREAM) &&
		 (f->hd.type == NGHTTP2_DATA || f->hd.type == NGHTTP2_HEADERS))
		x->end = true;
	return 0;
}

static int h2u_on_close(nghttp2_session *s, int32_t id, uint32_t error, void *ud)
{
	(void)s;
	struct h2u_stream *x = h2u_find(ud, id);
	if (x) {
		x->closed = true;
		x->error = error;
	}
	return 0;
}

/* The upstream accepts the proxy's newest connection and speaks HTTP/2
 * on it, allowing @p max_streams concurrent streams. */
static void h2u_open(struct h2u *k, uint32_t max_streams)
{
	memset(k, 0, sizeof(*k));
	k->c = upstream_accepts();
	nghttp2_session_callbacks *cb;
	assert_int_equal(nghttp2_session_callbacks_new(&cb), 0);
	nghttp2_session_callbacks_set_on_begin_headers_callback(cb, h2u_on_begin);
	nghttp2_session_callbacks_set_on_header_callback(cb, h2u_on_header);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, h2u_on_data);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, h2u_on_frame);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, h2u_on_close);
	/* a host that sends header blocks as large as it likes */
	nghttp2_option *opt;
	assert_int_equal(nghttp2_option_new(&opt), 0);
	nghttp2_option_set_max_send_header_block_length(opt, 1u << 20);
	assert_int_equal(nghttp2_session_server_new2(&k->s, cb, k, opt), 0);
	nghttp2_option_del(opt);
	nghttp2_session_callbacks_del(cb);
	nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, max_streams}};
	assert_int_equal(nghttp2_submit_settings(k->s, NGHTTP2_FLAG_NONE, iv, 1), 0);
}

static void h2u_close(struct h2u *k)
{
	if (k->s)
		nghttp2_session_del(k->s);
	k->s = NULL;
}

/* Frames both ways until neither side has more. */
static void h2u_pump(struct h2u *k)
{
	for (int round = 0; round < 10000; round++) {
		bool moved = false;
		if (k->c->tx_len > k->tx_seen) {
			ssize_t r =
			    nghttp2_session_mem_recv(k->s, (const uint8_t *)k->c->tx + k->tx_seen,
						     k->c->tx_len - k->tx_seen);
			assert_true(r >= 0);
			k->tx_seen = k->c->tx_len;
			moved = true;
		}
		const uint8_t *data;
		ssize_t n;
		while (!k->c->closed && (n = nghttp2_session_mem_send(k->s, &data)) > 0) {
			send_n(k->c, (const char *)data, (size_t)n);
			moved = true;
		}
		if (!moved)
			return;
	}
	fail_msg("upstream HTTP/2 exchange does not settle");
}

static ssize_t h2u_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
			nghttp2_data_source *src, void *ud)
{
	(void)s, (void)id;
	struct h2u *k = ud;
	if (src->ptr) { /* a short body */
		const char *b = src->ptr;
		size_t n = strlen(b);
		assert_true(n <= len);
		memcpy(buf, b, n);
		*flags |= NGHTTP2_DATA_FLAG_EOF;
		return (ssize_t)n;
	}
	size_t left = k->big - k->big_sent, n = left < len ? left : len;
	memset(buf, 'x', n);
	k->big_sent += n;
	if (k->big_sent == k->big)
		*flags |= NGHTTP2_DATA_FLAG_EOF;
	return (ssize_t)n;
}

/* Answer stream @p x: 200 with @p body (NULL: k->big bytes). */
static void h2u_answer(struct h2u *k, struct h2u_stream *x, const char *body)
{
	nghttp2_nv nv[] = {{(uint8_t *)":status", (uint8_t *)"200", 7, 3, 0}};
	nghttp2_data_provider prd = {.source = {.ptr = (void *)body}, .read_callback = h2u_read};
	assert_int_equal(nghttp2_submit_response(k->s, x->id, nv, 1, &prd), 0);
	x->answered = true;
}

#define ROUTE_WEB "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}"

/* Cluster "web" over HTTP/2 (the typed extension's explicit config) with
 * @p cluster_extra fields and @p h2 as its http2_protocol_options. */
static void cluster_web_h2(const char *cluster_extra, const char *h2)
{
	char j[2048];
	snprintf(
	    j, sizeof(j),
	    "{\"name\":\"web\",\"type\":\"STATIC\",\"connect_timeout\":\"5s\",%s"
	    "\"typed_extension_protocol_options\":{\"envoy.extensions.upstreams.http.v3."
	    "HttpProtocolOptions\":{\"@type\":\"type.googleapis.com/envoy.extensions.upstreams."
	    "http.v3.HttpProtocolOptions\",\"explicit_http_config\":{\"http2_protocol_options\":"
	    "%s}}},\"load_assignment\":{\"cluster_name\":\"web\",\"endpoints\":[{\"lb_endpoints\":"
	    "[{\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"198.18.0.10\","
	    "\"port_value\":8080}}}}]}]}}",
	    cluster_extra, h2);
	apply(C, "2", j);
}

/* ---- trailers both ways (issue 19: gRPC) ----------------------------------------------------- */

/* What a client sends after its body, and what an upstream answers after
 * its own: trailers (NGHTTP2_DATA_FLAG_NO_END_STREAM, then a HEADERS
 * frame that ends the stream). */
static const nghttp2_nv *tr_nv;
static size_t tr_n;

static ssize_t tr_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
		       nghttp2_data_source *src, void *ud)
{
	(void)ud;
	const char *b = src->ptr ? src->ptr : "";
	size_t n = strlen(b);
	assert_true(n <= len);
	memcpy(buf, b, n);
	*flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
	assert_int_equal(nghttp2_submit_trailer(s, id, tr_nv, tr_n), 0);
	return (ssize_t)n;
}

#define NV(n, v)                                                                                   \
	{                                                                                          \
		(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, sizeof(v) - 1, 0                    \
	}
static const nghttp2_nv req_trailers[] = {NV("x-sum", "5"), NV("x-trace", "t1")};
static const nghttp2_nv grpc_trailers[] = {NV("grpc-status", "0"), NV("grpc-message", "ok")};

/* An HTTP/2 client's POST with body @p body and the trailers above. */
static int32_t h2c_post_trailers(struct h2c *k, const char *path, const char *body)
{
	static nghttp2_data_provider prd;
	prd = (nghttp2_data_provider){.source = {.ptr = (void *)body}, .read_callback = tr_read};
	tr_nv = req_trailers;
	tr_n = 2;
	return h2c_request(k, "POST", path, &prd, NULL, NULL);
}

/* Answer stream @p x: 200, body @p body, then grpc-status 0 as trailers. */
static void h2u_answer_trailers(struct h2u *k, struct h2u_stream *x, const char *body)
{
	nghttp2_nv nv[] = {NV(":status", "200")};
	nghttp2_data_provider prd = {.source = {.ptr = (void *)body}, .read_callback = tr_read};
	tr_nv = grpc_trailers;
	tr_n = 2;
	assert_int_equal(nghttp2_submit_response(k->s, x->id, nv, 1, &prd), 0);
	x->answered = true;
}

/* Overwrite every free mbuf of the pool: a slice into a segment given
 * back too early reads garbage after this. */
static void scribble_free_mbufs(void)
{
	unsigned n = rte_mempool_avail_count(pool);
	struct rte_mbuf **v = calloc(n, sizeof(*v));
	assert_non_null(v);
	unsigned k = 0;
	while (k < n && (v[k] = rte_pktmbuf_alloc(pool)) != NULL)
		k++;
	for (unsigned i = 0; i < k; i++) {
		memset(rte_pktmbuf_mtod(v[i], char *), '#', rte_pktmbuf_tailroom(v[i]));
		rte_pktmbuf_free(v[i]);
	}
	free(v);
}

/* Both sessions until neither moves. */
static void h2cu_pump(struct h2c *c, struct h2u *u)
{
	for (int i = 0; i < 8; i++) {
		h2c_pump(c);
		h2u_pump(u);
	}
}

/*
 * Request trailers to an HTTP/2 upstream (Envoy's HTTP/2 codec carries
 * them): an HTTP/2 client's trailers go after the body in a HEADERS frame
 * with END_STREAM, counted in http2.trailers; an HTTP/1.1 client's chunked
 * trailers (lines in several segments) likewise, names lowercased and the
 * fields RFC 9110 6.5.1 keeps out of trailers (Content-Length, Host)
 * dropped. The upstream's response trailers come back to the HTTP/2
 * client.
 */
static void test_uph2_request_trailers(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	cluster_web_h2("", "{}");
	struct h2c c;
	h2c_open(&c, 65535);
	int32_t id = h2c_post_trailers(&c, "/svc.S/M", "hello");
	h2c_pump(&c);
	struct h2u u;
	h2u_open(&u, 100);
	h2cu_pump(&c, &u);
	assert_int_equal(u.n, 1);
	assert_true(u.st[0].end);
	assert_int_equal(u.st[0].body, 5);
	assert_string_equal(u.st[0].trailers, "x-sum: 5\nx-trace: t1\n");
	assert_int_equal(stat("http2.trailers"), 1);
	h2u_answer_trailers(&u, &u.st[0], "hi");
	h2cu_pump(&c, &u);
	struct h2c_stream *x = h2c_find(&c, id);
	assert_true(x->closed);
	assert_int_equal(x->error, 0);
	assert_int_equal(x->status, 200);
	want_in(x->hdrs, "grpc-status: 0\ngrpc-message: ok\n");

	struct arn_tcp_conn *h = client();
	send_s(h,
	       "POST /h HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n");
	send_s(h, "0\r\nX-Sum: 5\r\n");
	scribble_free_mbufs(); /* the segment holding X-Sum is kept until the end */
	send_s(h, "Content-Length: 9\r\nHo");
	send_s(h, "st: evil\r\n");
	send_s(h, "X-Trace: t2\r\n");
	send_s(h, "\r\n");
	h2u_pump(&u);
	assert_int_equal(u.n, 2);
	assert_true(u.st[1].end);
	assert_int_equal(u.st[1].body, 5);
	assert_string_equal(u.st[1].trailers, "x-sum: 5\nx-trace: t2\n");
	h2u_answer(&u, &u.st[1], "ok");
	h2u_pump(&u);
	assert_true(answered(h, "HTTP/1.1 200"));
	h2c_close(&c);
	h2u_close(&u);
}

/*
 * Trailers larger than one mbuf (three fields of 1.5 KB: a gRPC error's
 * grpc-status-details-bin is of that size) are carried whole, each field
 * in one segment of a chain. Before, what did not fit in the first 2 KB
 * was dropped without a word.
 */
static void test_uph2_request_trailers_over_one_segment(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	cluster_web_h2("", "{}");
	static char v[3][1500];
	for (int i = 0; i < 3; i++) {
		memset(v[i], 'a' + i, sizeof(v[i]) - 1);
		v[i][sizeof(v[i]) - 1] = 0;
	}
	nghttp2_nv nv[] = {{(uint8_t *)"x-one", (uint8_t *)v[0], 5, sizeof(v[0]) - 1, 0},
			   {(uint8_t *)"x-two", (uint8_t *)v[1], 5, sizeof(v[1]) - 1, 0},
			   {(uint8_t *)"x-three", (uint8_t *)v[2], 7, sizeof(v[2]) - 1, 0}};
	static nghttp2_data_provider prd;
	prd = (nghttp2_data_provider){.source = {.ptr = "a"}, .read_callback = tr_read};
	tr_nv = nv;
	tr_n = 3;
	struct h2c c;
	h2c_open(&c, 65535);
	int32_t id = h2c_request(&c, "POST", "/big-trailers", &prd, NULL, NULL);
	h2c_pump(&c);
	struct h2u u;
	h2u_open(&u, 100);
	h2cu_pump(&c, &u);
	assert_int_equal(u.n, 1);
	assert_true(u.st[0].end);
	static char want[8192];
	snprintf(want, sizeof(want), "x-one: %s\nx-two: %s\nx-three: %s\n", v[0], v[1], v[2]);
	assert_string_equal(u.st[0].trailers, want);
	h2u_answer(&u, &u.st[0], "ok");
	h2cu_pump(&c, &u);
	assert_int_equal(h2c_find(&c, id)->status, 200);
	h2c_close(&c);
	h2u_close(&u);
}

/*
 * Request trailers are bounded as the head is: a trailer block over
 * max_request_headers_kb (on its own: the head's bytes do not count)
 * resets the stream, counted in http2.header_overflow; the upstream's
 * stream is cancelled.
 */
static void test_h2_request_trailers_bounded(void **state)
{
	(void)state;
	start(8, jlistener("\"max_request_headers_kb\":1", ROUTE_WEB));
	cluster_web_h2("", "{}");
	static char big[1100];
	memset(big, 'v', sizeof(big) - 1);
	nghttp2_nv nv[] = {{(uint8_t *)"x-big", (uint8_t *)big, 5, sizeof(big) - 1, 0}};
	struct h2c c;
	h2c_open(&c, 65535);
	/* a head of 600 bytes and trailers of 600: each within 1 KiB */
	static char half[600];
	memset(half, 'h', sizeof(half) - 1);
	nghttp2_nv small[] = {{(uint8_t *)"x-half", (uint8_t *)half, 6, sizeof(half) - 1, 0}};
	static nghttp2_data_provider prd;
	prd = (nghttp2_data_provider){.source = {.ptr = "a"}, .read_callback = tr_read};
	tr_nv = small;
	tr_n = 1;
	int32_t ok = h2c_request(&c, "POST", "/ok", &prd, "x-head", half);
	h2c_pump(&c);
	struct h2u u;
	h2u_open(&u, 100);
	h2cu_pump(&c, &u);
	assert_int_equal(u.n, 1);
	assert_true(u.st[0].end);
	want_in(u.st[0].trailers, "x-half: hhh");
	h2u_answer(&u, &u.st[0], "ok");
	h2cu_pump(&c, &u);
	assert_int_equal(h2c_find(&c, ok)->status, 200);
	/* trailers over the limit */
	tr_nv = nv;
	tr_n = 1;
	int32_t id = h2c_request(&c, "POST", "/big", &prd, NULL, NULL);
	h2cu_pump(&c, &u);
	struct h2c_stream *x = h2c_find(&c, id);
	assert_true(x->closed);
	assert_int_not_equal(x->error, 0);
	assert_int_equal(stat("http2.header_overflow"), 1);
	assert_int_equal(u.n, 2);
	assert_false(u.st[1].end);
	assert_true(u.st[1].closed);
	assert_int_equal(u.st[1].trailers[0], 0);
	h2c_close(&c);
	h2u_close(&u);
}

/*
 * Trailers over the limit are the proxy's reset (downstream_rq_tx_reset),
 * but they come after the stream's head started upstream work: they count
 * as premature resets, or a rapid reset (CVE-2023-44487) could hide behind
 * oversized trailers where a refused head would not count. Past half of
 * 100 streams the connection is closed (GOAWAY ENHANCE_YOUR_CALM). It
 * would not be if the overflow branch of stream_run skipped
 * premature_reset() for them too.
 */
static void test_h2_trailer_overflow_rapid_reset(void **state)
{
	(void)state;
	start(8, jlistener("\"max_request_headers_kb\":1", ROUTE_WEB));
	static char big[1100];
	memset(big, 'v', sizeof(big) - 1);
	nghttp2_nv nv[] = {{(uint8_t *)"x-big", (uint8_t *)big, 5, sizeof(big) - 1, 0}};
	tr_nv = nv;
	tr_n = 1;
	static nghttp2_data_provider prd;
	prd = (nghttp2_data_provider){.source = {.ptr = "a"}, .read_callback = tr_read};
	struct h2c k;
	h2c_open(&k, 65535);
	h2c_pump(&k);
	unsigned opened = 0;
	for (int i = 0; i < 300 && !k.goaway; i++) {
		k.n = 0;
		h2c_request(&k, "POST", "/r", &prd, NULL, NULL);
		h2c_pump(&k);
		opened++;
		poll_ms(1);
		for (unsigned c = 0; c < CONNS; c++)
			if (conns[c].used && conns[c].upstream && !conns[c].connected &&
			    !conns[c].closed)
				close_later(&conns[c], -ECONNREFUSED);
		deliver_closes();
	}
	assert_true(k.goaway);
	assert_int_equal(k.goaway_error, NGHTTP2_ENHANCE_YOUR_CALM);
	assert_int_equal(opened, 100);
	assert_int_equal(stat("http.in.downstream_rq_too_many_premature_resets"), 1);
	assert_int_equal(stat("http2.header_overflow"), 100);
	assert_int_equal(stat("http.in.downstream_rq_tx_reset"), 100);
	assert_int_equal(stat("http.in.downstream_rq_rx_reset"), 0);
	h2c_close(&k);
}

/*
 * nghttp2's memory is bounded per connection (HTTP_H2_MEM_MAX, 4 MiB, the
 * counting allocator), as docs/security.md says: a client whose streams
 * wait for their upstream holds their header lists in nghttp2's buffers
 * (fields sent never indexed, so none is shared), 90 KiB a stream within
 * max_request_headers_kb 96. Past 4 MiB an allocation fails, nghttp2
 * fails the session and the connection closes, counted in
 * downstream_cx_protocol_error; the streams before it were all taken.
 */
static void test_h2_nghttp2_memory_bounded(void **state)
{
	(void)state;
	start(128, jlistener("\"max_request_headers_kb\":96", ROUTE_WEB));
	struct h2c k;
	h2c_open(&k, 65535);
	static char v[45001];
	memset(v, 'm', 45000);
	unsigned sent = 0;
	while (!stat("http.in.downstream_cx_protocol_error") && k.n < H2_STREAMS) {
		nghttp2_nv nv[6] = {
		    {(uint8_t *)":method", (uint8_t *)"GET", 7, 3, 0},
		    {(uint8_t *)":scheme", (uint8_t *)"http", 7, 4, 0},
		    {(uint8_t *)":authority", (uint8_t *)"a.example", 10, 9, 0},
		    {(uint8_t *)":path", (uint8_t *)"/", 5, 1, 0},
		    {(uint8_t *)"x-one", (uint8_t *)v, 5, 45000, NGHTTP2_NV_FLAG_NO_INDEX},
		    {(uint8_t *)"x-two", (uint8_t *)v, 5, 45000, NGHTTP2_NV_FLAG_NO_INDEX},
		};
		int32_t id = nghttp2_submit_request(k.s, NULL, nv, 6, NULL, NULL);
		assert_true(id > 0);
		k.st[k.n++] = (struct h2c_stream){.id = id};
		h2c_pump(&k);
		sent++;
	}
	/* 4 MiB of lists of 90 KiB, each field kept once or twice (the
	 * decoder's buffer, the reference the stream keeps) */
	assert_int_equal(stat("http.in.downstream_cx_protocol_error"), 1);
	assert_true(sent >= 4 * 1024 / 180 && sent <= 4 * 1024 / 90);
	assert_int_equal(stat("http2.header_overflow"), 0);
	run_ms(3100);
	assert_true(k.c->closed || k.c->shut);
	h2c_close(&k);
}

/* A POST of @p n_h header fields (x-h000 ...) whose body "a" is
 * followed by @p n_t trailers (x-t000 ...). */
static int32_t h2c_post_fields(struct h2c *k, unsigned n_h, unsigned n_t)
{
	static char names[2][128][8];
	static nghttp2_nv hv[4 + 128], tv[128];
	assert_true(n_h <= 128 && n_t <= 128);
	hv[0] = (nghttp2_nv)NV(":method", "POST");
	hv[1] = (nghttp2_nv)NV(":scheme", "http");
	hv[2] = (nghttp2_nv)NV(":authority", "a.example");
	hv[3] = (nghttp2_nv)NV(":path", "/f");
	for (unsigned i = 0; i < 128; i++) {
		snprintf(names[0][i], 8, "x-h%03u", i);
		snprintf(names[1][i], 8, "x-t%03u", i);
		hv[4 + i] = (nghttp2_nv){(uint8_t *)names[0][i], (uint8_t *)"v", 6, 1, 0};
		tv[i] = (nghttp2_nv){(uint8_t *)names[1][i], (uint8_t *)"v", 6, 1, 0};
	}
	static nghttp2_data_provider prd;
	prd = (nghttp2_data_provider){.source = {.ptr = "a"}, .read_callback = tr_read};
	tr_nv = tv;
	tr_n = n_t;
	int32_t id = nghttp2_submit_request(k->s, NULL, hv, 4 + n_h, n_t ? &prd : NULL, NULL);
	assert_true(id > 0);
	k->st[k->n++] = (struct h2c_stream){.id = id};
	return id;
}

/*
 * What bounds a request's trailer block: max_headers_count (100) on its
 * own, as Envoy bounds each header map. A head of 100 fields (and the
 * Host made from :authority) and 100 trailers reach the upstream (fails
 * before: the head and the trailers shared one array of HTTP_MAX_HDRS,
 * 128, slots, and the 27th trailer reset the stream, counted in
 * http2.header_overflow); the 101st trailer resets it, as Envoy's codec
 * does (http2.header_overflow). A small head: the same 100. And the head:
 * max_headers_count.
 */
static void test_h2_trailers_own_budget(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	cluster_web_h2("", "{}");
	struct h2c c;
	h2c_open(&c, 65535);
	int32_t a = h2c_post_fields(&c, 100, 100);
	h2c_pump(&c);
	struct h2u u;
	h2u_open(&u, 100);
	h2cu_pump(&c, &u);
	assert_int_equal(u.n, 1);
	assert_true(u.st[0].end);
	want_in(u.st[0].trailers, "x-t000: v\n");
	want_in(u.st[0].trailers, "x-t099: v\n");
	h2u_answer(&u, &u.st[0], "ok");
	h2cu_pump(&c, &u);
	assert_int_equal(h2c_find(&c, a)->status, 200);
	assert_int_equal(stat("http2.header_overflow"), 0);
	assert_int_equal(stat("http.in.trailer_slots_exhausted"), 0);
	/* one trailer more: over max_headers_count */
	int32_t b = h2c_post_fields(&c, 100, 101);
	h2cu_pump(&c, &u);
	struct h2c_stream *x = h2c_find(&c, b);
	assert_true(x->closed);
	assert_int_not_equal(x->error, 0);
	assert_int_equal(x->status, 0);
	assert_int_equal(stat("http2.header_overflow"), 1);
	assert_int_equal(u.n, 2);
	assert_false(u.st[1].end);
	/* a small head: max_headers_count bounds the trailers */
	int32_t d = h2c_post_fields(&c, 10, 100);
	h2cu_pump(&c, &u);
	assert_int_equal(u.n, 3);
	assert_true(u.st[2].end);
	want_in(u.st[2].trailers, "x-t099: v\n");
	h2u_answer(&u, &u.st[2], "ok");
	h2cu_pump(&c, &u);
	assert_int_equal(h2c_find(&c, d)->status, 200);
	int32_t e = h2c_post_fields(&c, 10, 101);
	h2cu_pump(&c, &u);
	x = h2c_find(&c, e);
	assert_true(x->closed);
	assert_int_not_equal(x->error, 0);
	assert_int_equal(stat("http2.header_overflow"), 2);
	/* and the head: max_headers_count */
	int32_t f = h2c_post_fields(&c, 101, 0);
	h2cu_pump(&c, &u);
	x = h2c_find(&c, f);
	assert_true(x->closed);
	assert_int_not_equal(x->error, 0);
	assert_int_equal(x->status, 0);
	assert_int_equal(stat("http2.header_overflow"), 3);
	h2c_close(&c);
	h2u_close(&u);
	/* every trailer array back in the pool */
	unsigned n = 0;
	for (struct http_trl *t = w->trl_free; t; t = t->next)
		n++;
	assert_int_equal(n, w->n_trl);
}

/* A request body the test hands out piece by piece: what is there so
 * far (mb_len of mb_buf), then DEFERRED until more comes or it ends. */
static char mb_buf[16384];
static size_t mb_len, mb_off;
static bool mb_end;
static ssize_t mb_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
		       nghttp2_data_source *src, void *ud)
{
	(void)s, (void)id, (void)src, (void)ud;
	size_t k = mb_len - mb_off < len ? mb_len - mb_off : len;
	memcpy(buf, mb_buf + mb_off, k);
	mb_off += k;
	if (mb_off == mb_len && mb_end)
		*flags |= NGHTTP2_DATA_FLAG_EOF;
	else if (!k)
		return NGHTTP2_ERR_DEFERRED;
	return (ssize_t)k;
}

static void mb_more(char c, size_t n, bool end)
{
	memset(mb_buf + mb_len, c, n);
	mb_len += n;
	mb_end = end;
}

/*
 * A request body's DATA that arrives while the worker's mbuf pool is
 * empty: nghttp2 consumed the bytes from its input and counted them
 * against the windows, and it ignores a callback's failure there, so
 * the bytes were gone and the stream went on: the upstream got the body
 * with a hole in it and a clean end, as if nothing were missing (fails
 * before: want_not_in(u->tx, "\r\n0\r\n\r\n")). The stream is
 * reset (INTERNAL_ERROR, http2.rx_body_no_mbuf), its upstream exchange
 * cut before its end, and the connection serves the next stream.
 */
static void test_h2_request_body_no_mbuf(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	struct h2c k;
	h2c_open(&k, 65535);
	mb_len = mb_off = 0;
	mb_more('a', 1000, false);
	nghttp2_data_provider prd = {.read_callback = mb_read};
	int32_t a = h2c_request(&k, "POST", "/up", &prd, NULL, NULL);
	h2c_pump(&k);
	struct arn_tcp_conn *u = upstream_accepts();
	h2c_pump(&k);
	want_in(u->tx, "transfer-encoding: chunked\r\n");
	want_in(u->tx, "aaaa");
	/* 5000 bytes in one DATA frame: its copy takes mbufs, the first of
	 * which the pool does not have */
	mb_more('b', 5000, false);
	assert_int_equal(nghttp2_session_resume_data(k.s, a), 0);
	alloc_fail = 1;
	h2c_pump(&k);
	alloc_fail = 0;
	mb_more('c', 1000, true);
	nghttp2_session_resume_data(k.s, a);
	h2c_pump(&k);
	/* the upstream never saw the body end: it was cut */
	want_not_in(u->tx, "\r\n0\r\n\r\n");
	want_not_in(u->tx, "cccc");
	assert_true(u->closed);
	struct h2c_stream *x = h2c_find(&k, a);
	assert_true(x->closed);
	assert_int_equal(x->error, NGHTTP2_INTERNAL_ERROR);
	assert_int_equal(x->status, 0);
	assert_int_equal(stat("http2.rx_body_no_mbuf"), 1);
	assert_int_equal(stat("http2.tx_reset"), 1);
	/* one RST_STREAM on the wire, not a second (NO_ERROR) as the
	 * stream's block is given back */
	assert_int_equal(h2c_frames_on_wire(&k, NGHTTP2_RST_STREAM, a), 1);
	assert_false(k.goaway);
	/* the connection goes on */
	int32_t b = h2c_request(&k, "GET", "/b", NULL, NULL, NULL);
	h2c_pump(&k);
	struct arn_tcp_conn *u2 = upstream_accepts();
	h2c_pump(&k);
	send_s(u2, "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
	h2c_pump(&k);
	assert_int_equal(h2c_find(&k, b)->status, 200);
	assert_int_equal(stat("http2.streams_active"), 0);
	h2c_close(&k);
}

/* The place of the first frame of @p type on stream @p id with all of
 * @p flags among the frames Arion wrote on @p c (0 the first), -1 when
 * there is none; its first payload word in @p word when asked. */
static int frame_place(const struct arn_tcp_conn *c, uint8_t type, int32_t id, uint8_t flags,
		       uint32_t *word)
{
	const uint8_t *b = (const uint8_t *)c->tx;
	size_t n = c->tx_len, at = 0;
	for (int i = 0; at + 9 <= n; i++) {
		size_t len = (size_t)b[at] << 16 | (size_t)b[at + 1] << 8 | b[at + 2];
		int32_t sid =
		    (int32_t)((uint32_t)(b[at + 5] & 0x7f) << 24 | (uint32_t)b[at + 6] << 16 |
			      (uint32_t)b[at + 7] << 8 | b[at + 8]);
		if (b[at + 3] == type && sid == id && (b[at + 4] & flags) == flags) {
			if (word && len >= 4 && at + 13 <= n)
				*word = (uint32_t)b[at + 9] << 24 | (uint32_t)b[at + 10] << 16 |
					(uint32_t)b[at + 11] << 8 | b[at + 12];
			return i;
		}
		at += 9 + len;
	}
	return -1;
}

/* A POST whose first 1,000 bytes reached the upstream, the rest not sent
 * yet: its stream on the client @p k, its upstream connection in @p u. */
static int32_t h2_post_half_sent_win(struct h2c *k, struct arn_tcp_conn **u, uint32_t window)
{
	h2c_open(k, window);
	mb_len = mb_off = 0;
	mb_more('a', 1000, false);
	nghttp2_data_provider prd = {.read_callback = mb_read};
	int32_t id = h2c_request(k, "POST", "/up", &prd, NULL, NULL);
	h2c_pump(k);
	*u = upstream_accepts();
	h2c_pump(k);
	want_in((*u)->tx, "aaaa");
	return id;
}

static int32_t h2_post_half_sent(struct h2c *k, struct arn_tcp_conn **u)
{
	return h2_post_half_sent_win(k, u, 65535);
}

/* The stream @p id got the upstream's complete early answer ("early\n")
 * and, after the frame that ended it, one RST_STREAM NO_ERROR; the
 * upstream connection was closed, not pooled with a request half sent. */
static void want_early_answer(struct h2c *k, int32_t id, struct arn_tcp_conn *u)
{
	struct h2c_stream *x = h2c_find(k, id);
	assert_true(x->closed);
	assert_int_equal(x->status, 200);
	assert_int_equal(x->body_len, 6);
	assert_memory_equal(x->body, "early\n", 6);
	assert_int_equal(x->error, NGHTTP2_NO_ERROR);
	uint32_t code = ~0u;
	int end = frame_place(k->c, NGHTTP2_DATA, id, NGHTTP2_FLAG_END_STREAM, NULL);
	int rst = frame_place(k->c, NGHTTP2_RST_STREAM, id, 0, &code);
	assert_true(end >= 0);
	assert_true(rst > end);
	assert_int_equal(code, NGHTTP2_NO_ERROR);
	assert_int_equal(h2c_frames_on_wire(k, NGHTTP2_RST_STREAM, id), 1);
	assert_true(u->closed);
	want_not_in(u->tx, "\r\n0\r\n\r\n"); /* the upstream never saw the body end */
	assert_int_equal(stat("http2.tx_reset"), 1);
	/* the proxy did not fail the stream, nor did the client */
	assert_int_equal(stat("http.in.downstream_rq_tx_reset"), 0);
	assert_int_equal(stat("http.in.downstream_rq_rx_reset"), 0);
	assert_int_equal(stat("http.in.downstream_rq_2xx"), 1);
	assert_int_equal(stat("http2.streams_active"), 0);
}

/*
 * An upstream that answers a POST completely before its body is all in
 * (RFC 9113 8.1: a server may; it then sends RST_STREAM NO_ERROR so the
 * client stops sending, and the client must keep the response). Envoy's
 * ConnectionManagerImpl::doEndStream resets such a stream (LocalReset,
 * which its codec's reasonToReset sends as NO_ERROR) and its codec's
 * StreamImpl::resetStream defers the RST_STREAM until the frame with
 * END_STREAM is out. So does Arion: HEADERS, DATA with END_STREAM, then
 * one RST_STREAM NO_ERROR, never before and never another code (a client
 * such as curl fails the stream otherwise); the upstream connection is
 * closed, and the client's connection serves its next stream.
 */
static void test_h2_early_response_resets_no_error_after_end(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	struct h2c k;
	struct arn_tcp_conn *u;
	int32_t a = h2_post_half_sent(&k, &u);
	send_s(u, "HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nearly\n");
	h2c_pump(&k);
	want_early_answer(&k, a, u);
	/* the rest of the body: the client stopped sending it */
	mb_more('b', 1000, true);
	nghttp2_session_resume_data(k.s, a);
	h2c_pump(&k);
	want_not_in(u->tx, "bbbb");
	assert_false(k.goaway);
	int32_t b = h2c_request(&k, "GET", "/b", NULL, NULL, NULL);
	h2c_pump(&k);
	struct arn_tcp_conn *u2 = upstream_accepts();
	h2c_pump(&k);
	send_s(u2, "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
	h2c_pump(&k);
	assert_int_equal(h2c_find(&k, b)->status, 200);
	h2c_close(&k);
}

/*
 * The same early answer from an upstream that closes its connection right
 * after it (connection: close, then its FIN or RST: the request's body it
 * did not read) while the request's body is still coming: the response
 * went to the client whole, so the stream ends as above (RST_STREAM
 * NO_ERROR after END_STREAM), not as an upstream lost mid-response
 * (http_upstream_lost's reset, INTERNAL_ERROR). (A response whose end
 * still waits for the client's window when the close comes is cut: see
 * docs/http.md.)
 */
static void test_h2_early_response_upstream_closes(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	struct h2c k;
	struct arn_tcp_conn *u;
	int32_t a = h2_post_half_sent(&k, &u);
	send_s(u, "HTTP/1.1 200 OK\r\ncontent-length: 6\r\nconnection: close\r\n\r\nearly\n");
	upstream_closes(u, 0);
	poll_ms(1);
	h2c_pump(&k);
	want_early_answer(&k, a, u);
	assert_int_equal(stat("http.in.rq_reset_after_downstream_response_started"), 0);
	h2c_close(&k);
}

/*
 * The same close while the answer's end waits for the client: its stream
 * window (4 bytes) took "earl" when the upstream closed, "y\n" and the
 * END_STREAM still to go. The end was read: Envoy's codec decoded the
 * whole response (UpstreamRequest::decodeData with end_stream), the
 * router completed it, and the connection's close comes after that, so
 * the client gets it whole. Arion copies the two bytes the client's
 * output still lent from the closing connection's input (counted in
 * rs_upstream_close_copied) and ends the stream after them, not with
 * http_upstream_lost's RST_STREAM INTERNAL_ERROR.
 */
static void test_h2_early_response_upstream_closes_window(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	struct h2c k;
	struct arn_tcp_conn *u;
	int32_t a = h2_post_half_sent_win(&k, &u, 4);
	send_s(u, "HTTP/1.1 200 OK\r\ncontent-length: 6\r\nconnection: close\r\n\r\nearly\n");
	upstream_closes(u, -ECONNRESET);
	poll_ms(1);
	h2c_pump(&k); /* "earl", the client's WINDOW_UPDATE, then the rest */
	poll_ms(1);
	h2c_pump(&k);
	want_early_answer(&k, a, u);
	assert_int_equal(stat("http.in.rq_reset_after_downstream_response_started"), 0);
	assert_int_equal(stat("http.in.rs_upstream_close_copied"), 1);
	assert_int_equal(stat("http.in.rs_upstream_close_no_mbuf"), 0);
	h2c_close(&k);
}

/*
 * The same, with no mbuf free for the copy: the response cannot be made
 * whole, so it is cut as before (RST_STREAM INTERNAL_ERROR after the bytes
 * the window took), never sent with END_STREAM as if complete, and the
 * shortage is counted (rs_upstream_close_no_mbuf).
 */
static void test_h2_early_response_upstream_closes_no_mbuf(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	struct h2c k;
	struct arn_tcp_conn *u;
	int32_t a = h2_post_half_sent_win(&k, &u, 4);
	send_s(u, "HTTP/1.1 200 OK\r\ncontent-length: 6\r\nconnection: close\r\n\r\nearly\n");
	upstream_closes(u, -ECONNRESET);
	alloc_fail = 1; /* the copy's first mbuf */
	poll_ms(1);
	alloc_fail = 0;
	h2c_pump(&k);
	poll_ms(1);
	h2c_pump(&k);
	struct h2c_stream *x = h2c_find(&k, a);
	assert_true(x->closed);
	assert_int_equal(x->status, 200);
	assert_int_equal(x->error, NGHTTP2_INTERNAL_ERROR);
	assert_true(x->body_len < 6);
	assert_int_equal(frame_place(k.c, NGHTTP2_DATA, a, NGHTTP2_FLAG_END_STREAM, NULL), -1);
	assert_int_equal(stat("http.in.rs_upstream_close_no_mbuf"), 1);
	assert_int_equal(stat("http.in.rs_upstream_close_copied"), 0);
	assert_int_equal(stat("http.in.rq_reset_after_downstream_response_started"), 1);
	assert_int_equal(stat("http2.streams_active"), 0);
	h2c_close(&k);
}

/*
 * HTTP/1.1, a client that reads nothing for now (its TCP window closed):
 * the upstream's chunked answer, whose last chunk was read with its last
 * bytes, waits in the client's output by reference to the upstream's
 * input when the upstream resets its connection. As Envoy (the response
 * decoded whole is the downstream's), the client still gets all of it,
 * its chunk and the last chunk, once it reads: copied (counted), not cut
 * by an abort of the client's connection.
 */
static void test_h1_slow_reader_response_survives_upstream_close(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	struct arn_tcp_conn *c = client();
	send_s(c, "GET /a HTTP/1.1\r\nHost: a\r\n\r\n");
	struct arn_tcp_conn *u = upstream_accepts();
	poll_ms(1);
	want_in(u->tx, "GET /a");
	c->full = true;
	char resp[2000];
	int n = snprintf(resp, sizeof(resp),
			 "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n"
			 "connection: close\r\n\r\n5dc\r\n");
	memset(resp + n, 'x', 1500);
	memcpy(resp + n + 1500, "\r\n0\r\n\r\n", 7);
	send_n(u, resp, (size_t)n + 1507);
	poll_ms(1);
	assert_int_equal(c->tx_len, 0);
	upstream_closes(u, -ECONNRESET);
	poll_ms(1);
	assert_false(c->closed);
	c->full = false;
	c->ops->on_writable(c);
	poll_ms(1);
	assert_true(answered(c, "HTTP/1.1 200"));
	want_in(c->tx, "transfer-encoding: chunked\r\n");
	char body[1520];
	memcpy(body, "\r\n\r\n5dc\r\n", 9);
	memset(body + 9, 'x', 1500);
	memcpy(body + 1509, "\r\n0\r\n\r\n", 8);
	want_in(c->tx, body);
	assert_false(c->aborted);
	assert_int_equal(stat("http.in.rs_upstream_close_copied"), 1);
	assert_int_equal(stat("http.in.rq_reset_after_downstream_response_started"), 0);
	assert_int_equal(stat("http.in.downstream_rq_2xx"), 1);
}

/*
 * HTTP/1.1: an upstream's complete answer to a POST whose body is not all
 * in goes to the client whole, with "connection: close" (as Envoy's), and
 * the connection ends with a FIN after it, not a reset: the rest of the
 * body the client sends is read and dropped (never taken for a next
 * request, never an RST that could destroy the response in flight).
 */
static void test_h1_early_response_closes_after_it(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	struct arn_tcp_conn *c = client();
	send_s(c, "POST /up HTTP/1.1\r\nHost: a\r\ncontent-length: 3000\r\n\r\n");
	char body[1000];
	memset(body, 'a', sizeof(body));
	send_n(c, body, sizeof(body));
	struct arn_tcp_conn *u = upstream_accepts();
	poll_ms(1);
	want_in(u->tx, "aaaa");
	send_s(u, "HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nearly\n");
	poll_ms(1);
	assert_true(answered(c, "HTTP/1.1 200"));
	want_in(c->tx, "connection: close\r\n");
	want_in(c->tx, "\r\n\r\nearly\n");
	assert_true(c->shut);
	assert_false(c->aborted);
	assert_true(u->closed);
	/* the rest of the body, which looks like a request: dropped */
	memcpy(body, "GET /x HTTP/1.1\r\nHost: a\r\n\r\n", 28);
	send_n(c, body, sizeof(body));
	send_n(c, body, sizeof(body));
	poll_ms(1);
	assert_int_equal(upstream_pending(), 0);
	assert_false(c->aborted);
	assert_int_equal(stat("http.in.downstream_rq_total"), 1);
}

/* Cluster "web" over HTTP/1.1 with @p h1 as its Http1ProtocolOptions: the
 * deprecated cluster field (@p typed false) or the typed extension's
 * explicit_http_config. */
static void cluster_web_h1(const char *version, bool typed, const char *h1)
{
	char j[2048];
	char o[1024];
	if (typed)
		snprintf(o, sizeof(o),
			 "\"typed_extension_protocol_options\":{\"envoy.extensions.upstreams."
			 "http.v3.HttpProtocolOptions\":{\"@type\":\"type.googleapis.com/"
			 "envoy.extensions.upstreams.http.v3.HttpProtocolOptions\","
			 "\"explicit_http_config\":{\"http_protocol_options\":%s}}},",
			 h1);
	else
		snprintf(o, sizeof(o), "\"http_protocol_options\":%s,", h1);
	snprintf(j, sizeof(j),
		 "{\"name\":\"web\",\"type\":\"STATIC\",\"connect_timeout\":\"5s\",%s"
		 "\"load_assignment\":{\"cluster_name\":\"web\",\"endpoints\":[{\"lb_endpoints\":"
		 "[{\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"198.18.0.10\","
		 "\"port_value\":8080}}}}]}]}}",
		 o);
	apply(C, version, j);
}

/*
 * An HTTP/2 client's trailers to an HTTP/1.1 upstream (Envoy's
 * Http1ProtocolOptions.enable_trailers): dropped by default, the chunked
 * body ending with an empty trailer section; with the cluster's
 * enable_trailers (the deprecated field, or explicit_http_config's) they
 * follow the last chunk.
 */
static void test_h2_request_trailers_h1_upstream(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	static const char *cfg[] = {NULL, "{\"enable_trailers\":true}",
				    "{\"enable_trailers\":true}", "{\"enable_trailers\":false}"};
	for (int i = 0; i < 4; i++) {
		if (cfg[i]) {
			char v[4];
			snprintf(v, sizeof(v), "%d", i + 2);
			cluster_web_h1(v, i == 2, cfg[i]);
		}
		struct h2c c;
		h2c_open(&c, 65535);
		int32_t id = h2c_post_trailers(&c, "/a", "hello");
		h2c_pump(&c);
		struct arn_tcp_conn *u = upstream_accepts();
		h2c_pump(&c);
		want_in(u->tx, "transfer-encoding: chunked\r\n");
		if (i == 1 || i == 2) {
			want_in(u->tx, "\r\n5\r\nhello\r\n0\r\nx-sum: 5\r\nx-trace: t1\r\n\r\n");
		} else {
			want_in(u->tx, "\r\n5\r\nhello\r\n0\r\n\r\n");
			want_not_in(u->tx, "x-sum");
		}
		send_s(u, "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
		h2c_pump(&c);
		assert_int_equal(h2c_find(&c, id)->status, 200);
		h2c_close(&c);
	}
	assert_int_equal(stat("http2.trailers"), 4);
}

/*
 * Trailers of a chunked message whose head filled its pins (HTTP_PIN_MAX
 * segments: an upstream that writes its head a line at a time, a client
 * with a small MSS and a long head), each trailer line in a segment of
 * its own: the lines were slices of segments the pins could no longer
 * hold, so the trailers were dropped without a word (the chunked body
 * ended with an empty trailer section). They now go to the parser's
 * scratch, as such a head's lines do, and are forwarded.
 */
static void test_trailers_after_head_in_many_segments(void **state)
{
	(void)state;
	start(8, jlistener("\"http_protocol_options\":{\"enable_trailers\":true}", ROUTE_WEB));
	cluster_web_h1("2", false, "{\"enable_trailers\":true}");
	/* the response: its head a line a segment, then a chunk, the
	 * trailers a line a segment */
	struct arn_tcp_conn *c = client();
	send_s(c, "GET /t HTTP/1.1\r\nHost: a\r\nTE: trailers\r\n\r\n");
	struct arn_tcp_conn *u = upstream_accepts();
	send_s(u, "HTTP/1.1 200 OK\r\n");
	poll_ms(1);
	for (int i = 0; i < 70; i++) {
		char line[64];
		snprintf(line, sizeof(line), "x-r%02d: %d\r\n", i, i);
		send_s(u, line);
		poll_ms(1);
	}
	send_s(u, "transfer-encoding: chunked\r\n\r\n2\r\nok\r\n");
	poll_ms(1);
	send_s(u, "0\r\n");
	poll_ms(1);
	send_s(u, "x-t1: one\r\n");
	poll_ms(1);
	send_s(u, "x-t2: two\r\n");
	poll_ms(1);
	send_s(u, "\r\n");
	poll_ms(1);
	if (!answered(c, "HTTP/1.1 200 OK\r\n"))
		fail_msg("the response: '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "x-r69: 69\r\n");
	want_in(c->tx, "\r\n2\r\nok\r\n0\r\nx-t1: one\r\nx-t2: two\r\n\r\n");

	/* the request: its head in 536-byte segments, then its trailers a
	 * line a segment */
	static char head[48 * 1024];
	int k = snprintf(head, sizeof(head),
			 "POST /big HTTP/1.1\r\nHost: a\r\ntransfer-encoding: chunked\r\n");
	for (int i = 0; i < 80; i++)
		k += snprintf(head + k, sizeof(head) - (size_t)k, "x-c%02d: %0490d\r\n", i, i);
	k += snprintf(head + k, sizeof(head) - (size_t)k, "\r\n");
	for (int o = 0; o < k; o += 536)
		send_n(c, head + o, (size_t)(k - o < 536 ? k - o : 536));
	poll_ms(1);
	send_s(c, "2\r\nhi\r\n0\r\n");
	poll_ms(1);
	send_s(c, "x-q1: one\r\n");
	poll_ms(1);
	send_s(c, "x-q2: two\r\n");
	poll_ms(1);
	send_s(c, "\r\n");
	poll_ms(1);
	want_in(u->tx, "x-c79: 000");
	want_in(u->tx, "\r\n2\r\nhi\r\n0\r\nx-q1: one\r\nx-q2: two\r\n\r\n");
}

/*
 * headers_with_underscores_action on an HTTP/1.1 request's chunked
 * trailers, as Envoy's HTTP/1 codec checks every field it completes:
 * DROP_HEADER takes each trailer whose name has a '_' out before the
 * trailers go upstream; REJECT_REQUEST is the codec's protocol error, a
 * 400 and the connection closed (the head and body had gone up: that
 * attempt is dropped). Only the head was checked before.
 */
static void test_h1_request_trailers_with_underscores(void **state)
{
	(void)state;
	start(8, jlistener("\"http_protocol_options\":{\"enable_trailers\":true},"
			   "\"common_http_protocol_options\":{\"headers_with_underscores_action\":"
			   "\"DROP_HEADER\"}",
			   ROUTE_WEB));
	cluster_web_h1("2", false, "{\"enable_trailers\":true}");
	struct arn_tcp_conn *c = client();
	send_s(c, "POST /t HTTP/1.1\r\nHost: a\r\ntransfer-encoding: chunked\r\n\r\n"
		  "2\r\nhi\r\n0\r\nx_a: 1\r\nx-b: 2\r\ny_c: 3\r\n\r\n");
	struct arn_tcp_conn *u = upstream_accepts();
	poll_ms(1);
	want_in(u->tx, "\r\n2\r\nhi\r\n0\r\nx-b: 2\r\n\r\n");
	want_not_in(u->tx, "x_a");
	want_not_in(u->tx, "y_c");
	send_s(u, "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
	if (!answered(c, "HTTP/1.1 200 OK\r\n"))
		fail_msg("the response: '%s'", c->tx ? c->tx : "");
	assert_int_equal(stat("http1.dropped_headers_with_underscores"), 2);
	teardown(NULL);

	start(8, jlistener("\"http_protocol_options\":{\"enable_trailers\":true},"
			   "\"common_http_protocol_options\":{\"headers_with_underscores_action\":"
			   "\"REJECT_REQUEST\"}",
			   ROUTE_WEB));
	cluster_web_h1("2", false, "{\"enable_trailers\":true}");
	c = client();
	send_s(c, "POST /t HTTP/1.1\r\nHost: a\r\ntransfer-encoding: chunked\r\n\r\n2\r\nhi\r\n");
	u = upstream_accepts();
	poll_ms(1);
	want_in(u->tx, "\r\n2\r\nhi\r\n");
	send_s(c, "0\r\nx-b: 2\r\nx_a: 1\r\n\r\n");
	poll_ms(1);
	if (!answered(c, "HTTP/1.1 400 Bad Request\r\n"))
		fail_msg("the response: '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "connection: close\r\n");
	want_not_in(u->tx, "x-b: 2");
	assert_int_equal(stat("http1.requests_rejected_with_underscores_in_headers"), 1);
	assert_int_equal(stat("http.in.downstream_cx_protocol_error"), 1);
}

/*
 * Response trailers to an HTTP/1.1 client (the HCM's http_protocol_options
 * enable_trailers, as Envoy): an HTTP/2 upstream's grpc-status goes after
 * the chunked body's last chunk when it is on, and is dropped when it is
 * off (the default).
 */
static void test_h1_client_response_trailers(void **state)
{
	(void)state;
	for (int on = 0; on < 2; on++) {
		if (on)
			teardown(NULL);
		start(8, jlistener(on ? "\"http_protocol_options\":{\"enable_trailers\":true}" : "",
				   ROUTE_WEB));
		cluster_web_h2("", "{}");
		struct arn_tcp_conn *h = client();
		send_s(h, "GET /t HTTP/1.1\r\nHost: a\r\nTE: trailers\r\n\r\n");
		struct h2u u;
		h2u_open(&u, 100);
		h2u_pump(&u);
		assert_int_equal(u.n, 1);
		h2u_answer_trailers(&u, &u.st[0], "hi");
		h2u_pump(&u);
		assert_true(answered(h, "HTTP/1.1 200"));
		if (on) {
			want_in(
			    h->tx,
			    "\r\n\r\n2\r\nhi\r\n0\r\ngrpc-status: 0\r\ngrpc-message: ok\r\n\r\n");
		} else {
			want_in(h->tx, "\r\n\r\n2\r\nhi\r\n0\r\n\r\n");
			want_not_in(h->tx, "grpc-status");
		}
		/* the connection serves the next request */
		send_s(h, "GET /n HTTP/1.1\r\nHost: a\r\n\r\n");
		h2u_pump(&u);
		assert_int_equal(u.n, 2);
		h2u_close(&u);
	}
}

/* ---- a message's trailers have their own field budget --------------------------------------- */

/* @p n lines "x-<p>NNN: v\r\n" appended to @p b at @p k (of @p cap). */
static int field_lines(char *b, int k, size_t cap, const char *p, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		k += snprintf(b + k, cap - (size_t)k, "x-%s%03u: v\r\n", p, i);
	return k;
}

/* A chunked HTTP/1.1 message: @p start, @p n_h head fields in all (with
 * the start's, @p start_fields of them), body "hi", @p n_t trailers. */
static size_t chunked_fields(char *b, size_t cap, const char *start, unsigned start_fields,
			     unsigned n_h, unsigned n_t)
{
	int k = snprintf(b, cap, "%s", start);
	k = field_lines(b, k, cap, "h", n_h - start_fields);
	k += snprintf(b + k, cap - (size_t)k, "\r\n2\r\nhi\r\n0\r\n");
	k = field_lines(b, k, cap, "t", n_t);
	k += snprintf(b + k, cap - (size_t)k, "\r\n");
	assert_true((size_t)k < cap);
	return (size_t)k;
}

/*
 * An HTTP/1.1 client's chunked request of 100 head fields (Envoy's
 * max_headers_count) and 100 trailers, with enable_trailers both ways:
 * Envoy bounds the head and the trailers separately, 100 each, and
 * forwards both whole.
 */
static void test_h1_request_trailers_own_budget(void **state)
{
	(void)state;
	start(8, jlistener("\"http_protocol_options\":{\"enable_trailers\":true}", ROUTE_WEB));
	cluster_web_h1("2", false, "{\"enable_trailers\":true}");
	struct arn_tcp_conn *c = client();
	static char req[8192];
	size_t n = chunked_fields(req, sizeof(req),
				  "POST /t HTTP/1.1\r\nHost: a\r\ntransfer-encoding: chunked\r\n",
				  2, 100, 100);
	send_n(c, req, n);
	struct arn_tcp_conn *u = upstream_accepts();
	poll_ms(1);
	want_in(u->tx, "x-h097: v\r\n");
	want_in(u->tx, "\r\n2\r\nhi\r\n0\r\nx-t000: v\r\n");
	want_in(u->tx, "x-t099: v\r\n\r\n");
	send_s(u, "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
	poll_ms(1);
	assert_true(answered(c, "HTTP/1.1 200 OK\r\n"));
}

/*
 * The same for a response: an HTTP/1.1 upstream's chunked response of
 * 100 head fields and 100 trailers reaches the client whole.
 */
static void test_h1_response_trailers_own_budget(void **state)
{
	(void)state;
	start(8, jlistener("\"http_protocol_options\":{\"enable_trailers\":true}", ROUTE_WEB));
	cluster_web_h1("2", false, "{\"enable_trailers\":true}");
	struct arn_tcp_conn *c = client();
	send_s(c, "GET /t HTTP/1.1\r\nHost: a\r\nTE: trailers\r\n\r\n");
	struct arn_tcp_conn *u = upstream_accepts();
	static char resp[8192];
	size_t n = chunked_fields(resp, sizeof(resp),
				  "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n", 1, 100, 100);
	send_n(u, resp, n);
	poll_ms(1);
	if (!answered(c, "HTTP/1.1 200 OK\r\n"))
		fail_msg("the response: '%s'", c->tx ? c->tx : "");
	want_in(c->tx, "x-h098: v\r\n");
	want_in(c->tx, "\r\n2\r\nhi\r\n0\r\nx-t000: v\r\n");
	want_in(c->tx, "x-t099: v\r\n\r\n");
}

/* Answer stream @p x: 200 with @p n_h fields (x-h000 ...), body @p body,
 * then grpc-status 0 and grpc-message as trailers, and @p n_t more
 * (x-t000 ...). */
static void h2u_answer_fields_grpc(struct h2u *k, struct h2u_stream *x, unsigned n_h,
				   const char *body, unsigned n_t)
{
	static char names[2][128][8];
	static nghttp2_nv nv[1 + 128], tv[2 + 128];
	assert_true(n_h <= 128 && n_t <= 128);
	nv[0] = (nghttp2_nv)NV(":status", "200");
	for (unsigned i = 0; i < n_h; i++) {
		snprintf(names[0][i], 8, "x-h%03u", i % 128);
		nv[1 + i] = (nghttp2_nv){(uint8_t *)names[0][i], (uint8_t *)"v", 6, 1, 0};
	}
	tv[0] = grpc_trailers[0];
	tv[1] = grpc_trailers[1];
	for (unsigned i = 0; i < n_t; i++) {
		snprintf(names[1][i], 8, "x-t%03u", i % 128);
		tv[2 + i] = (nghttp2_nv){(uint8_t *)names[1][i], (uint8_t *)"v", 6, 1, 0};
	}
	nghttp2_data_provider prd = {.source = {.ptr = (void *)body}, .read_callback = tr_read};
	tr_nv = tv;
	tr_n = 2 + n_t;
	assert_int_equal(nghttp2_submit_response(k->s, x->id, nv, 1 + n_h, &prd), 0);
	x->answered = true;
}

/*
 * A gRPC answer from an HTTP/2 upstream whose head is large (100 fields,
 * the cluster's max_headers_count): its grpc-status, in the trailers,
 * reaches the HTTP/2 client; and an HTTP/1.1 client with enable_trailers.
 */
static void test_uph2_grpc_status_after_a_large_head(void **state)
{
	(void)state;
	start(8, jlistener("\"http_protocol_options\":{\"enable_trailers\":true}", ROUTE_WEB));
	cluster_web_h2("", "{}");
	struct h2c c;
	h2c_open(&c, 65535);
	int32_t a = h2c_request(&c, "POST", "/svc.S/M", NULL, "content-type", "application/grpc");
	h2c_pump(&c);
	struct h2u u;
	h2u_open(&u, 100);
	h2cu_pump(&c, &u);
	assert_int_equal(u.n, 1);
	h2u_answer_fields_grpc(&u, &u.st[0], 100, "hi", 0);
	h2cu_pump(&c, &u);
	struct h2c_stream *x = h2c_find(&c, a);
	assert_true(x->closed);
	assert_int_equal(x->error, 0);
	assert_int_equal(x->status, 200);
	want_in(x->hdrs, "x-h099: v\n");
	want_in(x->hdrs, "grpc-status: 0\n");
	want_in(x->hdrs, "grpc-message: ok\n");
	assert_int_equal(stat("cluster.web.http2.header_overflow"), 0);
	/* an HTTP/1.1 client */
	struct arn_tcp_conn *h = client();
	send_s(h, "POST /svc.S/M HTTP/1.1\r\nHost: a\r\nTE: trailers\r\ncontent-length: 0\r\n\r\n");
	h2u_pump(&u);
	assert_int_equal(u.n, 2);
	h2u_answer_fields_grpc(&u, &u.st[1], 100, "hi", 0);
	h2u_pump(&u);
	if (!answered(h, "HTTP/1.1 200"))
		fail_msg("the response: '%s'", h->tx ? h->tx : "");
	want_in(h->tx, "\r\n0\r\ngrpc-status: 0\r\ngrpc-message: ok\r\n\r\n");
	h2c_close(&c);
	h2u_close(&u);
}

static unsigned free_trailer_arrays(void)
{
	unsigned n = 0;
	for (struct http_trl *t = w->trl_free; t; t = t->next)
		n++;
	return n;
}

/*
 * The worker's trailer arrays (trailer_arrays, 2 here) attacked: streams
 * whose trailers outgrow the slots their head left each hold one until
 * they end. With both held, the next such message's trailers are refused
 * as ones over max_headers_count are, counted in trailer_slots_exhausted:
 * an HTTP/1.1 client's request 431 (its upstream connection closed), an
 * HTTP/2 client's stream reset, an HTTP/2 upstream's gRPC answer cut (the
 * client's connection reset: its head went out); no crash, and a stream
 * that ends gives its array back for the next.
 */
static void test_trailer_arrays_exhausted(void **state)
{
	(void)state;
	start_trailer_arrays = 2;
	start(16, jlistener("\"http_protocol_options\":{\"enable_trailers\":true}", ROUTE_WEB));
	cluster_web_h1("2", false, "{\"enable_trailers\":true}");
	assert_int_equal(free_trailer_arrays(), 2);
	static char req[8192];
	size_t n = chunked_fields(req, sizeof(req),
				  "POST /t HTTP/1.1\r\nHost: a\r\ntransfer-encoding: chunked\r\n",
				  2, 100, 100);
	/* two requests hold both arrays while their upstreams do not answer */
	struct arn_tcp_conn *c[3], *u[3];
	for (int i = 0; i < 3; i++) {
		c[i] = client();
		send_n(c[i], req, n);
		u[i] = upstream_accepts();
		poll_ms(1);
	}
	want_in(u[0]->tx, "x-t099: v\r\n\r\n");
	want_in(u[1]->tx, "x-t099: v\r\n\r\n");
	assert_int_equal(free_trailer_arrays(), 0);
	/* the third's trailers are refused */
	assert_true(answered(c[2], "HTTP/1.1 431 "));
	want_not_in(u[2]->tx, "x-t099");
	assert_true(u[2]->closed);
	assert_int_equal(stat("http.in.trailer_slots_exhausted"), 1);
	/* an HTTP/2 client's */
	struct h2c k;
	h2c_open(&k, 65535);
	int32_t a = h2c_post_fields(&k, 100, 100);
	h2c_pump(&k);
	/* (refused with its head, which came in the same read: not sent) */
	assert_int_equal(upstream_pending(), 0);
	struct h2c_stream *x = h2c_find(&k, a);
	assert_true(x->closed);
	assert_int_not_equal(x->error, 0);
	assert_int_equal(stat("http.in.trailer_slots_exhausted"), 2);
	assert_int_equal(stat("http2.header_overflow"), 0);
	/* the first request ends: its array serves the next */
	send_s(u[0], "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
	poll_ms(1);
	assert_true(answered(c[0], "HTTP/1.1 200 OK\r\n"));
	assert_int_equal(free_trailer_arrays(), 1);
	send_n(c[0], req, n);
	poll_ms(1);
	const char *second = strstr(u[0]->tx + 10, "POST /t");
	assert_non_null(second);
	want_in(second, "x-t099: v\r\n\r\n");
	assert_int_equal(free_trailer_arrays(), 0);
	send_s(u[0], "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
	poll_ms(1);
	assert_int_equal(free_trailer_arrays(), 1);
	/* an HTTP/2 upstream's trailers after a large head, while an HTTP/2
	 * client's stream holds the last array */
	cluster_web_h2("", "{}");
	int32_t p2 = h2c_post_fields(&k, 100, 100);
	h2c_pump(&k);
	struct h2u g;
	h2u_open(&g, 100);
	h2cu_pump(&k, &g);
	assert_int_equal(g.n, 1);
	want_in(g.st[0].trailers, "x-t099: v\n");
	assert_int_equal(free_trailer_arrays(), 0);
	struct arn_tcp_conn *h = client();
	send_s(h, "POST /svc.S/M HTTP/1.1\r\nHost: a\r\nTE: trailers\r\ncontent-length: 0\r\n\r\n");
	h2cu_pump(&k, &g);
	assert_int_equal(g.n, 2);
	/* a gRPC status after a head of 100 fields needs no array: the 28
	 * slots the head left hold it */
	h2u_answer_fields_grpc(&g, &g.st[1], 100, "hi", 0);
	h2cu_pump(&k, &g);
	assert_true(answered(h, "HTTP/1.1 200"));
	want_in(h->tx, "\r\n0\r\ngrpc-status: 0\r\ngrpc-message: ok\r\n\r\n");
	assert_int_equal(stat("http.in.trailer_slots_exhausted"), 2);
	/* 40 trailers more do */
	send_s(h, "POST /svc.S/M HTTP/1.1\r\nHost: a\r\nTE: trailers\r\ncontent-length: 0\r\n\r\n");
	h2cu_pump(&k, &g);
	assert_int_equal(g.n, 3);
	size_t before = h->tx_len;
	h2u_answer_fields_grpc(&g, &g.st[2], 100, "hi", 40);
	h2cu_pump(&k, &g);
	assert_true(h->tx_len > before);
	want_in(h->tx + before, "HTTP/1.1 200 OK\r\n");
	want_not_in(h->tx + before, "grpc-status");
	assert_true(h->closed);
	assert_int_equal(stat("http.in.trailer_slots_exhausted"), 3);
	/* all answered: every array back */
	h2u_answer(&g, &g.st[0], "ok");
	h2cu_pump(&k, &g);
	assert_int_equal(h2c_find(&k, p2)->status, 200);
	send_s(u[1], "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
	poll_ms(1);
	assert_int_equal(free_trailer_arrays(), 2);
	assert_int_equal(stat("http.in.trailer_slots_exhausted"), 3);
	h2c_close(&k);
	h2u_close(&g);
}

/*
 * Trailers past the budget (the 101st after a head of 100 fields) fail as
 * Envoy's codecs fail them: an HTTP/1.1 request 431 (Envoy's "trailers
 * size exceeds limit", a protocol error), its upstream connection closed;
 * an HTTP/1.1 response a protocol error after its head went (the
 * client's connection cut, flag UPE); an HTTP/2 upstream's stream failed
 * (cluster http2.header_overflow), the HTTP/2 client's stream reset. (A
 * guard of the outcome: before the trailers' own budget the same failures
 * came at the 27th or 29th trailer, test_*_own_budget.)
 */
static void test_trailers_over_the_budget(void **state)
{
	(void)state;
	start(8, jlistener("\"http_protocol_options\":{\"enable_trailers\":true}", ROUTE_WEB));
	cluster_web_h1("2", false, "{\"enable_trailers\":true}");
	static char msg[8192];
	struct arn_tcp_conn *c = client();
	size_t n = chunked_fields(msg, sizeof(msg),
				  "POST /t HTTP/1.1\r\nHost: a\r\ntransfer-encoding: chunked\r\n",
				  2, 100, 101);
	send_n(c, msg, n);
	struct arn_tcp_conn *u = upstream_accepts();
	poll_ms(1);
	assert_true(answered(c, "HTTP/1.1 431 "));
	want_not_in(u->tx, "x-t099");
	assert_true(u->closed);
	assert_int_equal(stat("http.in.downstream_cx_protocol_error"), 1);
	/* a response */
	c = client();
	send_s(c, "GET /t HTTP/1.1\r\nHost: a\r\nTE: trailers\r\n\r\n");
	u = upstream_accepts();
	n = chunked_fields(msg, sizeof(msg), "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n", 1,
			   100, 101);
	send_n(u, msg, n);
	poll_ms(1);
	assert_true(answered(c, "HTTP/1.1 200 OK\r\n"));
	want_not_in(c->tx, "x-t000");
	assert_true(c->closed);
	assert_int_equal(stat("cluster.web.upstream_cx_protocol_error"), 1);
	/* an HTTP/2 upstream's: 2 + 99 trailers */
	cluster_web_h2("", "{}");
	struct h2c k;
	h2c_open(&k, 65535);
	int32_t a = h2c_request(&k, "POST", "/svc.S/M", NULL, "content-type", "application/grpc");
	h2c_pump(&k);
	struct h2u g;
	h2u_open(&g, 100);
	h2cu_pump(&k, &g);
	assert_int_equal(g.n, 1);
	h2u_answer_fields_grpc(&g, &g.st[0], 100, "hi", 99);
	h2cu_pump(&k, &g);
	struct h2c_stream *x = h2c_find(&k, a);
	assert_true(x->closed);
	assert_int_not_equal(x->error, 0);
	want_not_in(x->hdrs, "grpc-status");
	assert_int_equal(stat("cluster.web.http2.header_overflow"), 1);
	/* 2 + 98: the budget */
	a = h2c_request(&k, "POST", "/svc.S/M", NULL, "content-type", "application/grpc");
	h2cu_pump(&k, &g);
	assert_int_equal(g.n, 2);
	h2u_answer_fields_grpc(&g, &g.st[1], 100, "hi", 98);
	h2cu_pump(&k, &g);
	x = h2c_find(&k, a);
	assert_true(x->closed);
	assert_int_equal(x->error, 0);
	want_in(x->hdrs, "grpc-status: 0\n");
	assert_int_equal(stat("cluster.web.http2.header_overflow"), 1);
	assert_int_equal(stat("http.in.trailer_slots_exhausted"), 0);
	h2c_close(&k);
	h2u_close(&g);
}

/*
 * Requests from five HTTP/1.1 clients to an HTTP/2 cluster whose
 * max_concurrent_streams is 2: three upstream connections (2 + 2 + 1
 * streams), each stream answered to its own client. Then
 * max_requests_per_connection (3) counts streams: the connections take
 * four more, and the next request opens a fourth connection.
 */
static void test_uph2_streams_share_connections(void **state)
{
	(void)state;
	start(16, jlistener("", ROUTE_WEB));
	cluster_web_h2("\"max_requests_per_connection\":3,", "{\"max_concurrent_streams\":2}");
	struct arn_tcp_conn *c[10];
	for (int i = 0; i < 5; i++) {
		c[i] = client();
		send_s(c[i], "GET /s HTTP/1.1\r\nHost: a\r\n\r\n");
	}
	assert_int_equal(upstream_pending(), 3);
	assert_int_equal(stat("cluster.web.upstream_cx_http2_total"), 3);
	assert_int_equal(stat("cluster.web.upstream_cx_http1_total"), 0);
	struct h2u k[4];
	memset(k, 0, sizeof(k));
	unsigned streams = 0;
	for (int j = 0; j < 3; j++) {
		h2u_open(&k[j], 100);
		h2u_pump(&k[j]);
		assert_true(k[j].n >= 1 && k[j].n <= 2);
		streams += k[j].n;
		for (unsigned s = 0; s < k[j].n; s++) {
			assert_true(k[j].st[s].end);
			assert_string_equal(k[j].st[s].path, "/s");
			h2u_answer(&k[j], &k[j].st[s], "hi");
		}
		h2u_pump(&k[j]);
	}
	assert_int_equal(streams, 5);
	for (int i = 0; i < 5; i++) {
		assert_true(answered(c[i], "HTTP/1.1 200"));
		want_in(c[i]->tx, "\r\n\r\n2\r\nhi\r\n0\r\n\r\n");
	}
	assert_int_equal(stat("cluster.web.upstream_rq_total"), 5);
	assert_int_equal(stat("cluster.web.upstream_rq_active"), 0);
	/* 5 more, one at a time: the connections' places up to 3 streams each */
	for (int i = 5; i < 10; i++) {
		c[i] = client();
		send_s(c[i], "GET /t HTTP/1.1\r\nHost: a\r\n\r\n");
		if (upstream_pending())
			h2u_open(&k[3], 100);
		for (int j = 0; j < 4; j++) {
			if (j == 3 && !k[3].s)
				continue;
			h2u_pump(&k[j]);
			for (unsigned s = 0; s < k[j].n; s++)
				if (k[j].st[s].end && !k[j].st[s].answered)
					h2u_answer(&k[j], &k[j].st[s], "ok");
			h2u_pump(&k[j]);
		}
		assert_true(answered(c[i], "HTTP/1.1 200"));
	}
	/* 3 connections x 3 requests, then a fourth for the tenth */
	assert_int_equal(stat("cluster.web.upstream_cx_http2_total"), 4);
	assert_int_equal(k[0].n + k[1].n + k[2].n, 9);
	assert_int_equal(k[3].n, 1);
	for (int j = 0; j < 4; j++)
		h2u_close(&k[j]);
}

/*
 * A client that does not read (its send buffer is full) holds the
 * upstream's stream window closed: Arion reads no more of the response
 * than the window it advertised (HTTP_UPH2_STREAM_WINDOW, 256 KiB), so a
 * slow reader does not grow its memory with the body. Once the client
 * reads, the rest follows, window by window.
 */
static void test_uph2_slow_client_holds_window(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	cluster_web_h2("", "{}");
	struct arn_tcp_conn *c = client();
	c->full = true;
	send_s(c, "GET /big HTTP/1.1\r\nHost: a\r\n\r\n");
	struct h2u k;
	h2u_open(&k, 100);
	h2u_pump(&k);
	assert_int_equal(k.n, 1);
	k.big = 4u << 20;
	h2u_answer(&k, &k.st[0], NULL);
	h2u_pump(&k);
	assert_true(k.big_sent >= 65535);
	assert_true(k.big_sent <= 256u * 1024);
	assert_int_equal(nghttp2_session_get_stream_remote_window_size(k.s, k.st[0].id), 0);
	size_t held = k.big_sent;
	run_ms(100); /* nothing moves while the client does not read */
	h2u_pump(&k);
	assert_int_equal(k.big_sent, held);
	c->full = false;
	c->ops->on_writable(c);
	for (int round = 0; round < 200 && k.big_sent < k.big; round++) {
		h2u_pump(&k);
		c->ops->on_writable(c);
	}
	h2u_pump(&k);
	assert_int_equal(k.big_sent, k.big);
	assert_true(answered(c, "HTTP/1.1 200"));
	assert_true(c->tx_len > k.big);
	h2u_close(&k);
}

/*
 * RST_STREAM from the upstream before the response: 503, Envoy's remote
 * reset (UR), counted in upstream_rq_rx_reset; the connection goes on
 * serving. GOAWAY: the streams above its last_stream_id come back
 * REFUSED_STREAM (503, not processed), the one below is answered, and the
 * next request opens a new connection.
 */
static void test_uph2_reset_and_goaway(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	cluster_web_h2("", "{}");
	struct arn_tcp_conn *a = client();
	send_s(a, "GET /a HTTP/1.1\r\nHost: a\r\n\r\n");
	struct h2u k;
	h2u_open(&k, 100);
	h2u_pump(&k);
	assert_int_equal(k.n, 1);
	assert_int_equal(
	    nghttp2_submit_rst_stream(k.s, NGHTTP2_FLAG_NONE, k.st[0].id, NGHTTP2_INTERNAL_ERROR),
	    0);
	h2u_pump(&k);
	assert_true(answered(a, "HTTP/1.1 503"));
	assert_int_equal(stat("cluster.web.upstream_rq_rx_reset"), 1);
	/* three streams on the same connection; GOAWAY after the first */
	struct arn_tcp_conn *b[3];
	for (int i = 0; i < 3; i++) {
		b[i] = client();
		send_s(b[i], "GET /b HTTP/1.1\r\nHost: a\r\n\r\n");
	}
	h2u_pump(&k);
	assert_int_equal(k.n, 4);
	assert_int_equal(upstream_pending(), 0);
	assert_int_equal(
	    nghttp2_submit_goaway(k.s, NGHTTP2_FLAG_NONE, k.st[1].id, NGHTTP2_NO_ERROR, NULL, 0),
	    0);
	h2u_answer(&k, &k.st[1], "ok");
	h2u_pump(&k);
	assert_true(answered(b[0], "HTTP/1.1 200"));
	assert_true(answered(b[1], "HTTP/1.1 503"));
	assert_true(answered(b[2], "HTTP/1.1 503"));
	assert_int_equal(stat("cluster.web.upstream_cx_http2_total"), 1);
	struct arn_tcp_conn *d = client();
	send_s(d, "GET /d HTTP/1.1\r\nHost: a\r\n\r\n");
	assert_int_equal(stat("cluster.web.upstream_cx_http2_total"), 2);
	struct h2u k2;
	h2u_open(&k2, 100);
	h2u_pump(&k2);
	assert_int_equal(k2.n, 1);
	h2u_answer(&k2, &k2.st[0], "ok");
	h2u_pump(&k2);
	assert_true(answered(d, "HTTP/1.1 200"));
	run_ms(20);
	assert_true(k.c->closed); /* the GOAWAY'd connection went once idle */
	h2u_close(&k);
	h2u_close(&k2);
}

/* The cluster's idle_timeout closes an HTTP/2 connection without streams,
 * a GOAWAY first; one with a stream open stays. */
static void test_uph2_idle_timeout(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	cluster_web_h2("\"common_http_protocol_options\":{\"idle_timeout\":\"1s\"},", "{}");
	struct arn_tcp_conn *a = client();
	send_s(a, "GET /a HTTP/1.1\r\nHost: a\r\n\r\n");
	struct h2u k;
	h2u_open(&k, 100);
	h2u_pump(&k);
	run_ms(1500); /* a stream open: the connection stays */
	assert_false(k.c->closed);
	h2u_answer(&k, &k.st[0], "ok");
	h2u_pump(&k);
	assert_true(answered(a, "HTTP/1.1 200"));
	run_ms(900);
	assert_false(k.c->closed);
	run_ms(200);
	assert_true(k.c->closed);
	/* its last frame is a GOAWAY (NO_ERROR) */
	assert_true(k.c->tx_len >= 17);
	const uint8_t *f = (const uint8_t *)k.c->tx + k.c->tx_len - 17;
	assert_int_equal(f[3], NGHTTP2_GOAWAY);
	assert_int_equal(stat("cluster.web.http2.goaway_sent"), 1);
	poll_ms(1);
	assert_int_equal(stat("cluster.web.upstream_cx_active"), 0);
	assert_int_equal(stat("cluster.web.upstream_cx_destroy"), 1);
	h2u_close(&k);
}

/* A full connection and max_connections 1 (the circuit breaker): the
 * second request waits in the pending queue and takes the place the first
 * stream gives back, on the same connection. */
static void test_uph2_pending_takes_freed_place(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	cluster_web_h2("\"circuit_breakers\":{\"thresholds\":[{\"max_connections\":1}]},",
		       "{\"max_concurrent_streams\":1}");
	struct arn_tcp_conn *a = client(), *b = client();
	send_s(a, "GET /a HTTP/1.1\r\nHost: a\r\n\r\n");
	send_s(b, "GET /b HTTP/1.1\r\nHost: a\r\n\r\n");
	assert_int_equal(upstream_pending(), 1);
	assert_int_equal(stat("cluster.web.upstream_rq_pending_total"), 1);
	assert_int_equal(stat("cluster.web.upstream_rq_pending_active"), 1);
	struct h2u k;
	h2u_open(&k, 100);
	h2u_pump(&k);
	assert_int_equal(k.n, 1);
	assert_string_equal(k.st[0].path, "/a");
	h2u_answer(&k, &k.st[0], "A");
	h2u_pump(&k);
	assert_true(answered(a, "HTTP/1.1 200"));
	assert_int_equal(k.n, 2);
	assert_string_equal(k.st[1].path, "/b");
	assert_int_equal(stat("cluster.web.upstream_rq_pending_active"), 0);
	h2u_answer(&k, &k.st[1], "B");
	h2u_pump(&k);
	assert_true(answered(b, "HTTP/1.1 200"));
	assert_int_equal(stat("cluster.web.upstream_cx_http2_total"), 1);
	h2u_close(&k);
}

/* An upstream that sends bytes after a complete response, while the client
 * reads nothing: they wait in TCP's queue, unread, when the stream ends.
 * A request waiting in the pool (max_connections 1) must not be given that
 * connection: the stray bytes would be its answer. The connection closes
 * and the waiting request goes on a new one. */
static void test_stray_bytes_never_answer_a_waiting_request(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	apply(C, "2",
	      "{\"name\":\"web\",\"type\":\"STATIC\",\"connect_timeout\":\"5s\","
	      "\"circuit_breakers\":{\"thresholds\":[{\"max_connections\":1}]},"
	      "\"load_assignment\":{\"cluster_name\":\"web\",\"endpoints\":[{\"lb_endpoints\":[{"
	      "\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"198.18.0.10\","
	      "\"port_value\":8080}}}}]}]}}");
	struct arn_tcp_conn *a = client(), *b = client();
	send_s(a, "GET /a HTTP/1.1\r\nHost: a\r\n\r\n");
	struct arn_tcp_conn *u = upstream_accepts();
	send_s(b, "GET /b HTTP/1.1\r\nHost: a\r\n\r\n");
	assert_int_equal(stat("cluster.web.upstream_rq_pending_active"), 1);
	a->full = true; /* the first client reads nothing for now */
	send_s(u, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
	send_s(u, "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged");
	a->full = false;
	a->ops->on_writable(a);
	poll_ms(1);
	want_in(a->tx, "hello");
	want_not_in(b->tx, "forged");
	assert_true(u->closed);
	struct arn_tcp_conn *u2 = upstream_accepts();
	want_in(u2->tx, "GET /b ");
	send_s(u2, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nB");
	assert_true(answered(b, "HTTP/1.1 200"));
	want_not_in(b->tx, "forged");
	assert_int_equal(stat("cluster.web.upstream_rq_pending_active"), 0);
}

/* The route's timeout counts from the whole request in (docs/http.md, as
 * Envoy's global timeout), whatever its attempt waits for: a place in the
 * pool's queue (max_connections 1, taken by a request to an upstream that
 * reads nothing), or an upstream that does not take the request's bytes.
 * Both answer 504 after the route's 1 s, not after stream_idle_timeout. */
static void test_route_timeout_runs_while_the_attempt_waits(void **state)
{
	(void)state;
	start(8, jlistener("", "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\","
			       "\"timeout\":\"1s\"}}"));
	apply(C, "2",
	      "{\"name\":\"web\",\"type\":\"STATIC\",\"connect_timeout\":\"5s\","
	      "\"circuit_breakers\":{\"thresholds\":[{\"max_connections\":1}]},"
	      "\"load_assignment\":{\"cluster_name\":\"web\",\"endpoints\":[{\"lb_endpoints\":[{"
	      "\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"198.18.0.10\","
	      "\"port_value\":8080}}}}]}]}}");
	struct arn_tcp_conn *a = client(), *b = client();
	send_s(a, "GET /a HTTP/1.1\r\nHost: a\r\n\r\n");
	for (unsigned i = 0; i < CONNS; i++) /* the upstream reads nothing */
		if (conns[i].used && conns[i].upstream && !conns[i].connected)
			conns[i].full = true;
	struct arn_tcp_conn *u = upstream_accepts();
	assert_int_equal(u->tx_len, 0);
	send_s(b, "GET /b HTTP/1.1\r\nHost: a\r\n\r\n");
	assert_int_equal(stat("cluster.web.upstream_rq_pending_active"), 1);
	run_ms(1100);
	assert_true(answered(a, "HTTP/1.1 504"));
	assert_true(answered(b, "HTTP/1.1 504"));
	assert_int_equal(stat("cluster.web.upstream_rq_timeout"), 2);
	assert_int_equal(stat("cluster.web.upstream_rq_pending_active"), 0);
}

/* Clusters @p names[0..n) (STATIC, endpoint 198.18.0.10:8080), version
 * @p version, in one state-of-the-world apply. */
static void apply_named_clusters(const char *const *names, size_t n, const char *version)
{
	struct arn_config_resource_in in[4];
	assert_true(n <= 4);
	upb_Arena *a = upb_Arena_New();
	const upb_MessageDef *md = arn_proto_msgdef(strrchr(C, '/') + 1);
	for (size_t k = 0; k < n; k++) {
		char j[1024];
		snprintf(
		    j, sizeof(j),
		    "{\"name\":\"%s\",\"type\":\"STATIC\",\"load_assignment\":{\"cluster_name\":"
		    "\"%s\",\"endpoints\":[{\"lb_endpoints\":[{\"endpoint\":{\"address\":{"
		    "\"socket_address\":{\"address\":\"198.18.0.10\",\"port_value\":8080}}}}]}"
		    "]}}",
		    names[k], names[k]);
		struct arn_sb err = ARN_SB_INIT;
		upb_Message *m = arn_proto_from_json(j, strlen(j), md, a, &err);
		assert_non_null(m);
		arn_sb_free(&err);
		in[k] = (struct arn_config_resource_in){names[k], version, NULL, 0};
		in[k].bytes = arn_proto_encode(m, md, a, &in[k].len);
	}
	arn_config_result_free(&res);
	assert_int_equal(arn_config_apply(st, C, in, n, NULL, 0, 0, &res), 0);
	assert_true(res.accepted);
	assert_int_equal(res.n_errors, 0);
	upb_Arena_Free(a);
	arn_http_poll();
}

/* A cluster whose name is 128 bytes or longer (Istio names clusters
 * "outbound|port|subset|FQDN", an FQDN up to 253 bytes): a new generation
 * that keeps the cluster and its endpoint keeps its pool and the pool's
 * keep-alive connections, as for any other name. */
static void test_long_cluster_name_keeps_its_connections(void **state)
{
	(void)state;
	static char name[200], route[400];
	int k = snprintf(name, sizeof(name), "outbound|8080||");
	memset(name + k, 'a', 140);
	snprintf(name + k + 140, sizeof(name) - (size_t)k - 140, ".svc.cluster.local");
	snprintf(route, sizeof(route),
		 "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"%s\"}}", name);
	start(8, jlistener("", route));
	const char *one[] = {name}, *two[] = {name, "other"};
	apply_named_clusters(one, 1, "2");
	struct arn_tcp_conn *c = client();
	send_s(c, "GET /a HTTP/1.1\r\nHost: a\r\n\r\n");
	struct arn_tcp_conn *u = upstream_accepts();
	want_in(u->tx, "GET /a ");
	send_s(u, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nA");
	assert_true(answered(c, "HTTP/1.1 200"));
	poll_ms(1);
	apply_named_clusters(two, 2, "3"); /* a new generation, the same cluster */
	poll_ms(1);
	poll_ms(1);
	assert_false(u->closed);
	send_s(c, "GET /b HTTP/1.1\r\nHost: a\r\n\r\n");
	assert_int_equal(upstream_pending(), 0);
	want_in(u->tx, "GET /b ");
}

/* A cluster that turns to TLS keeps its pool (the same endpoint): a
 * request of the new generation waiting in the pool's queue
 * (max_connections 1) must not be given the plain connection an older
 * request gives back, as up_acquire never gives it an idle one. It goes
 * on a new connection, in TLS. */
static void test_waiting_request_never_takes_a_connection_of_another_tls(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	static const char fmt[] =
	    "{\"name\":\"web\",\"type\":\"STATIC\",\"connect_timeout\":\"5s\","
	    "\"circuit_breakers\":{\"thresholds\":[{\"max_connections\":1}]},"
	    "\"load_assignment\":{\"cluster_name\":\"web\",\"endpoints\":[{\"lb_endpoints\":[{"
	    "\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"198.18.0.10\","
	    "\"port_value\":8080}}}}]}]}%s}";
	char j[1024];
	snprintf(j, sizeof(j), fmt, "");
	apply(C, "2", j);
	struct arn_tcp_conn *a = client(), *b = client();
	send_s(a, "GET /a HTTP/1.1\r\nHost: a\r\n\r\n");
	struct arn_tcp_conn *u = upstream_accepts();
	want_in(u->tx, "GET /a ");
	snprintf(j, sizeof(j), fmt,
		 ",\"transport_socket\":{\"name\":\"tls\",\"typed_config\":{\"@type\":"
		 "\"type.googleapis.com/envoy.extensions.transport_sockets.tls.v3."
		 "UpstreamTlsContext\",\"sni\":\"web.test\"}}");
	apply(C, "3", j);
	poll_ms(1);
	send_s(b, "GET /b HTTP/1.1\r\nHost: a\r\n\r\n");
	assert_int_equal(stat("cluster.web.upstream_rq_pending_active"), 1);
	send_s(u, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nA");
	assert_true(answered(a, "HTTP/1.1 200"));
	poll_ms(1);
	poll_ms(1);
	want_not_in(u->tx, "GET /b");
	assert_true(u->closed);
	struct arn_tcp_conn *u2 = upstream_accepts();
	assert_true(u2->tx_len > 5);
	assert_int_equal((unsigned char)u2->tx[0], 0x16); /* a TLS handshake record */
	assert_int_equal(stat("cluster.web.upstream_rq_pending_active"), 0);
}

/* A TLS server of lib/tls (tcli's io) on the proxy's upstream connection
 * @p k->srv: its output goes to the proxy at once (send_n), whole. */
static void usrv_flush(struct tcli *k)
{
	if (k->out_off < k->out_len) {
		size_t n = k->out_len - k->out_off;
		k->out_off = k->out_len;
		send_n(k->srv, k->out + k->out_len - n, n);
	}
}

/* Handshake the proxy's TLS connection @p u with server @p k, made on
 * context @p sctx. */
static void usrv_open(struct tcli *k, struct arn_tcp_conn *u, struct arn_tls_ctx *sctx)
{
	memset(k, 0, sizeof(*k));
	k->srv = u;
	arn_tls_worker_init(&k->w, 0, 0);
	assert_int_equal(arn_tls_conn_init(&k->c, &k->w, sctx, &k->st, &tcli_io, k,
					   &(struct arn_tls_conn_opts){0}),
			 0);
	int rc = -EAGAIN;
	for (int i = 0; i < 50 && rc != 0; i++) {
		arn_tls_worker_begin(&k->w, 0);
		rc = arn_tls_handshake(&k->c);
		usrv_flush(k);
		poll_ms(1);
	}
	assert_int_equal(rc, 0);
}

/* The plaintext the proxy sent server @p k, NUL-terminated in @p buf. */
static void usrv_read(struct tcli *k, char *buf, size_t cap)
{
	size_t o = 0;
	for (int i = 0; i < 50 && o + 1 < cap; i++) {
		arn_tls_worker_begin(&k->w, 0);
		ssize_t n = arn_tls_read(&k->c, buf + o, cap - 1 - o);
		if (n > 0)
			o += (size_t)n;
		else
			break;
	}
	buf[o] = 0;
}

/*
 * A TLS upstream that sends, after a complete response, the first bytes
 * of another record (the rest follows later): they wait in TCP's queue,
 * no plaintext yet, when the stream ends. A request waiting in the pool
 * (max_connections 1) must not be given that connection, as no idle
 * request would be (up_acquire reads the records there and closes a
 * connection with bytes left): the record's plaintext would be its
 * answer. The connection closes; the waiting request goes on a new one.
 */
static void test_partial_tls_record_never_answers_a_waiting_request(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	apply(C, "2",
	      "{\"name\":\"web\",\"type\":\"STATIC\",\"connect_timeout\":\"5s\","
	      "\"circuit_breakers\":{\"thresholds\":[{\"max_connections\":1}]},"
	      "\"load_assignment\":{\"cluster_name\":\"web\",\"endpoints\":[{\"lb_endpoints\":[{"
	      "\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"198.18.0.10\","
	      "\"port_value\":8080}}}}]}]},\"transport_socket\":{\"name\":\"tls\","
	      "\"typed_config\":{\"@type\":\"type.googleapis.com/"
	      "envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext\",\"sni\":"
	      "\"web.test\"}}}");
	arn_http_poll(); /* the control lcore builds the cluster's TLS context */
	poll_ms(1);
	struct arn_tls_ctx *sctx = tls_ctx(true);
	static struct tcli k;
	struct arn_tcp_conn *a = client(), *b = client();
	send_s(a, "GET /a HTTP/1.1\r\nHost: a\r\n\r\n");
	struct arn_tcp_conn *u = upstream_accepts();
	usrv_open(&k, u, sctx);
	char got[512];
	usrv_read(&k, got, sizeof(got));
	want_in(got, "GET /a ");
	send_s(b, "GET /b HTTP/1.1\r\nHost: a\r\n\r\n");
	assert_int_equal(stat("cluster.web.upstream_rq_pending_active"), 1);
	/* the response, then a record of which all but 5 bytes come */
	static const char r1[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
	static const char r2[] = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged";
	arn_tls_worker_begin(&k.w, 0);
	assert_int_equal(arn_tls_write(&k.c, r1, sizeof(r1) - 1), sizeof(r1) - 1);
	size_t end1 = k.out_len;
	assert_int_equal(arn_tls_write(&k.c, r2, sizeof(r2) - 1), sizeof(r2) - 1);
	size_t end2 = k.out_len;
	assert_true(end2 - end1 > 10);
	send_n(u, k.out + k.out_off, end2 - 5 - k.out_off);
	k.out_off = end2 - 5;
	poll_ms(1);
	want_in(a->tx, "hello");
	poll_ms(1);
	/* the rest of the record: never b's answer */
	if (!u->closed)
		usrv_flush(&k);
	poll_ms(1);
	want_not_in(b->tx, "forged");
	assert_true(u->closed);
	struct arn_tcp_conn *u2 = upstream_accepts();
	assert_int_equal((unsigned char)u2->tx[0], 0x16); /* its own handshake */
	assert_int_equal(stat("cluster.web.upstream_rq_pending_active"), 0);
	arn_tls_conn_free(&k.c);
	arn_tls_ctx_unref(sctx);
}

/* The access log's %START_TIME% is when the request's first byte came, in
 * wall-clock time: read from the clock once the stream ends (only when an
 * access log will use it), less the time the stream took, not at every
 * stream's start. */
static void test_access_log_start_time_is_the_streams_start(void **state)
{
	(void)state;
	char log_path[64], extra[512];
	snprintf(log_path, sizeof(log_path), "/tmp/arn_test_hcm_start.%d.log", (int)getpid());
	unlink(log_path);
	snprintf(extra, sizeof(extra),
		 "\"access_log\":[{\"name\":\"f\",\"typed_config\":{\"@type\":\"type."
		 "googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog\",\"path\":"
		 "\"%s\",\"log_format\":{\"text_format_source\":{\"inline_string\":"
		 "\"%%START_TIME(%%s.%%6f)%%\\n\"}}}}]",
		 log_path);
	start(4, jlistener(extra, DIRECT_OK));
	struct timespec t0, t1;
	clock_gettime(CLOCK_REALTIME, &t0);
	struct arn_tcp_conn *c = client();
	send_s(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
	assert_true(answered(c, "HTTP/1.1 200"));
	clock_gettime(CLOCK_REALTIME, &t1);
	char log[256];
	read_access_log(log_path, log, sizeof(log));
	double t = strtod(log, NULL);
	double a = (double)t0.tv_sec + (double)t0.tv_nsec / 1e9;
	double b = (double)t1.tv_sec + (double)t1.tv_nsec / 1e9;
	if (!(t >= a - 0.001 && t <= b + 0.001))
		fail_msg("START_TIME %s not within %.6f .. %.6f", log, a, b);
}

/* log_format.omit_empty_values from a Listener, through the conversion
 * and the connection manager's loggers: an absent header prints nothing,
 * not "-", and a JSON key without a value is left out. */
static void test_access_log_omit_empty_values(void **state)
{
	(void)state;
	char p1[64], p2[64], extra[1024];
	snprintf(p1, sizeof(p1), "/tmp/arn_test_hcm_omit1.%d.log", (int)getpid());
	snprintf(p2, sizeof(p2), "/tmp/arn_test_hcm_omit2.%d.log", (int)getpid());
	unlink(p1);
	unlink(p2);
	snprintf(extra, sizeof(extra),
		 "\"access_log\":[{\"name\":\"f\",\"typed_config\":{\"@type\":\"type."
		 "googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog\",\"path\":"
		 "\"%s\",\"log_format\":{\"omit_empty_values\":true,\"text_format_source\":"
		 "{\"inline_string\":\"[%%REQ(X-NONE)%%|%%RESPONSE_CODE%%]\\n\"}}}},"
		 "{\"name\":\"g\",\"typed_config\":{\"@type\":\"type."
		 "googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog\",\"path\":"
		 "\"%s\",\"log_format\":{\"omit_empty_values\":true,\"json_format\":"
		 "{\"none\":\"%%REQ(X-NONE)%%\",\"code\":\"%%RESPONSE_CODE%%\"}}}}]",
		 p1, p2);
	start(4, jlistener(extra, DIRECT_OK));
	struct arn_tcp_conn *c = client();
	send_s(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
	assert_true(answered(c, "HTTP/1.1 200"));
	char log[256];
	read_access_log(p1, log, sizeof(log));
	assert_string_equal(log, "[|200]\n");
	read_access_log(p2, log, sizeof(log));
	assert_string_equal(log, "{\"code\":200}\n");
}

/* max_requests 1 (the circuit breaker): the second request while the
 * first is in flight is refused, 503 overflow. The count is the workers'
 * upstream_rq_active gauge (each in its own slot, issue 17). */
static void test_breaker_max_requests_refuses_the_next(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	cluster_web_h2("\"circuit_breakers\":{\"thresholds\":[{\"max_requests\":1}]},", "{}");
	struct arn_tcp_conn *a = client(), *b = client();
	send_s(a, "GET /a HTTP/1.1\r\nHost: a\r\n\r\n");
	assert_int_equal(stat("cluster.web.upstream_rq_active"), 1);
	send_s(b, "GET /b HTTP/1.1\r\nHost: a\r\n\r\n");
	assert_true(answered(b, "HTTP/1.1 503"));
	assert_int_equal(stat("cluster.web.upstream_rq_pending_overflow"), 1);
	struct h2u k;
	h2u_open(&k, 100);
	h2u_pump(&k);
	assert_int_equal(k.n, 1);
	h2u_answer(&k, &k.st[0], "A");
	h2u_pump(&k);
	assert_true(answered(a, "HTTP/1.1 200"));
	assert_int_equal(stat("cluster.web.upstream_rq_active"), 0);
	h2u_close(&k);
}

/* Whether /stats has @p name at all (stat() reads an absent one as 0). */
static bool stat_exists(const char *name)
{
	struct arn_stats_snapshot s;
	assert_int_equal(arn_stats_snapshot_take(&s), 0);
	bool found = false;
	for (size_t i = 0; i < s.n; i++)
		if (!strcmp(s.v[i].name, name))
			found = true;
	arn_stats_snapshot_free(&s);
	return found;
}

/* The circuit breakers' gauges, as Envoy's: cluster.<c>.circuit_breakers.
 * <priority>.rq_open is 1 while max_requests are in flight, and
 * remaining_rq (track_remaining) counts down to 0; without
 * track_remaining there are no remaining_* gauges. */
static void test_breaker_gauges_follow_the_counts(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	cluster_web_h2("\"circuit_breakers\":{\"thresholds\":[{\"max_requests\":2,"
		       "\"max_retries\":5,\"track_remaining\":true}]},",
		       "{}");
	assert_true(stat_exists("cluster.web.circuit_breakers.default.rq_open"));
	assert_true(stat_exists("cluster.web.circuit_breakers.high.cx_open"));
	/* Prometheus: envoy_cluster_circuit_breakers_default_rq_open{envoy_cluster_name="web"} */
	assert_string_equal(stat_prom("cluster.web.circuit_breakers.default.rq_open"),
			    "cluster circuit_breakers.default.rq_open envoy_cluster_name=web -=-");
	assert_int_equal(stat("cluster.web.circuit_breakers.default.rq_open"), 0);
	assert_int_equal(stat("cluster.web.circuit_breakers.default.remaining_rq"), 2);
	assert_int_equal(stat("cluster.web.circuit_breakers.default.remaining_retries"), 5);
	assert_int_equal(stat("cluster.web.circuit_breakers.default.remaining_cx"), 1024);
	assert_false(stat_exists("cluster.web.circuit_breakers.high.remaining_rq"));
	struct arn_tcp_conn *a = client(), *b = client();
	send_s(a, "GET /a HTTP/1.1\r\nHost: a\r\n\r\n");
	assert_int_equal(stat("cluster.web.circuit_breakers.default.remaining_rq"), 1);
	assert_int_equal(stat("cluster.web.circuit_breakers.default.rq_open"), 0);
	send_s(b, "GET /b HTTP/1.1\r\nHost: a\r\n\r\n");
	assert_int_equal(stat("cluster.web.circuit_breakers.default.remaining_rq"), 0);
	assert_int_equal(stat("cluster.web.circuit_breakers.default.rq_open"), 1);
	assert_int_equal(stat("cluster.web.circuit_breakers.default.cx_open"), 0);
	struct h2u k;
	h2u_open(&k, 100);
	h2u_pump(&k);
	assert_int_equal(k.n, 2);
	h2u_answer(&k, &k.st[0], "A");
	h2u_answer(&k, &k.st[1], "B");
	h2u_pump(&k);
	assert_true(answered(a, "HTTP/1.1 200"));
	assert_true(answered(b, "HTTP/1.1 200"));
	assert_int_equal(stat("cluster.web.circuit_breakers.default.rq_open"), 0);
	assert_int_equal(stat("cluster.web.circuit_breakers.default.remaining_rq"), 2);
	h2u_close(&k);
	/* without track_remaining: the _open gauges only */
	apply(C, "3",
	      "{\"name\":\"web\",\"type\":\"STATIC\",\"connect_timeout\":\"5s\","
	      "\"circuit_breakers\":{\"thresholds\":[{\"max_requests\":2}]},"
	      "\"load_assignment\":{\"cluster_name\":\"web\",\"endpoints\":[{\"lb_endpoints\":[{"
	      "\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"198.18.0.10\","
	      "\"port_value\":8080}}}}]}]}}");
	assert_true(stat_exists("cluster.web.circuit_breakers.default.rq_open"));
	assert_false(stat_exists("cluster.web.circuit_breakers.default.remaining_rq"));
}

static void sr_nothing(struct http_subreq *sr, const char *why)
{
	(void)sr;
	fail_msg("the refused sub-request was started: %s", why);
}

/* A sub-request (the MCP gateway's call to a backend) counts against the
 * same circuit breaker as routed requests: with max_requests 1 and one
 * routed request in flight it is refused (-EBUSY, an overflow counted),
 * as Envoy's one breaker per cluster does. The two once kept separate
 * counts, and each let the other's requests past. */
static void test_breaker_counts_routed_requests_against_sub_requests(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	cluster_web_h2("\"circuit_breakers\":{\"thresholds\":[{\"max_requests\":1}]},", "{}");
	struct arn_tcp_conn *a = client();
	send_s(a, "GET /a HTTP/1.1\r\nHost: a\r\n\r\n");
	assert_int_equal(stat("cluster.web.upstream_rq_active"), 1);
	/* the sub-request's connection: the client's (it only lends the
	 * worker and a local address) */
	struct http_conn *hc = NULL;
	for (uint32_t i = 0; i < w->n_conns && !hc; i++)
		if (w->conns[i].c.tc)
			hc = &w->conns[i].c;
	assert_non_null(hc);
	static const struct http_subreq_ops ops = {.on_failed = sr_nothing};
	static struct http_subreq sr;
	memset(&sr, 0, sizeof(sr));
	struct arn_cfg_ref web = {.name = "web", .len = 3, .hash = arn_cfg_hash("web", 3)};
	assert_int_equal(http_subreq_start(&sr, hc, arn_config_gen(st), &web, "/", 1, NULL, 0, "{}",
					   2, 1000, &ops, NULL),
			 -EBUSY);
	assert_int_equal(stat("cluster.web.upstream_rq_pending_overflow"), 1);
	assert_int_equal(stat("cluster.web.upstream_rq_active"), 1);
	struct h2u k;
	h2u_open(&k, 100);
	h2u_pump(&k);
	assert_int_equal(k.n, 1);
	h2u_answer(&k, &k.st[0], "A");
	h2u_pump(&k);
	assert_true(answered(a, "HTTP/1.1 200"));
	assert_int_equal(stat("cluster.web.upstream_rq_active"), 0);
	h2u_close(&k);
}

/* A sub-request picks from the worker's cached candidates (http_lb_cache),
 * as the router does: its pick for a cluster with outlier detection
 * builds the list (max_requests 0 then refuses it, after the pick). It
 * walked every endpoint and looked its host up, and the list was never
 * built. */
static void test_sub_request_picks_from_the_worker_cache(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	cluster_web_h2("\"circuit_breakers\":{\"thresholds\":[{\"max_requests\":0}]},"
		       "\"outlier_detection\":{\"consecutive_5xx\":5},",
		       "{}");
	struct arn_tcp_conn *a = client();
	assert_non_null(a);
	struct http_conn *hc = NULL;
	for (uint32_t i = 0; i < w->n_conns && !hc; i++)
		if (w->conns[i].c.tc)
			hc = &w->conns[i].c;
	assert_non_null(hc);
	struct http_cluster_rt *crt = http_rt_cluster("web", 3, arn_cfg_hash("web", 3));
	assert_non_null(crt);
	struct http_lb_view v;
	assert_true(http_rt_lb_view(crt, w->idx, &v));
	assert_non_null(v.cache);
	uint64_t b0 = v.cache->builds;
	static const struct http_subreq_ops ops = {.on_failed = sr_nothing};
	static struct http_subreq sr;
	memset(&sr, 0, sizeof(sr));
	struct arn_cfg_ref web = {.name = "web", .len = 3, .hash = arn_cfg_hash("web", 3)};
	assert_int_equal(http_subreq_start(&sr, hc, arn_config_gen(st), &web, "/", 1, NULL, 0, "{}",
					   2, 1000, &ops, NULL),
			 -EBUSY);
	assert_int_equal(stat("cluster.web.upstream_rq_pending_overflow"), 1);
	assert_true(http_rt_lb_view(crt, w->idx, &v));
	assert_int_equal(v.cache->builds - b0, 1);
}

/* Outlier detection's interval (worker 0, http_od_tick) visits the
 * clusters that have outlier_detection only: with 2,000 clusters
 * without it and one with it, a due walk visits that one, and evaluates
 * it. It walked the generation's every cluster and looked each one's
 * runtime object up. */
static void test_outlier_interval_visits_only_its_clusters(void **state)
{
	(void)state;
	start(4, jlistener("", ROUTE_WEB));
	apply_clusters(0, 2000, 80, "1");
	cluster_web_h2("\"outlier_detection\":{\"consecutive_5xx\":5,\"interval\":\"1s\"},", "{}");
	struct http_cluster_rt *crt = http_rt_cluster("web", 3, arn_cfg_hash("web", 3));
	assert_non_null(crt);
	uint32_t r0 = crt->od_round;
	w->now_ms += 3600 * 1000;
	http_od_tick(w);
	assert_int_equal(http_od_tick_visited(), 1);
	assert_int_equal(crt->od_round - r0, 1);
	/* not due: no walk */
	w->now_ms += 10;
	http_od_tick(w);
	assert_int_equal(http_od_tick_visited(), 0);
	w->now_ms += 1000;
	http_od_tick(w);
	assert_int_equal(http_od_tick_visited(), 1);
	assert_int_equal(crt->od_round - r0, 2);
	/* another cluster changes: the list keeps web (a new list: visited
	 * at the next tick, not evaluated before its time) */
	apply_clusters(5, 6, 81, "2");
	w->now_ms += 10;
	http_od_tick(w);
	assert_int_equal(http_od_tick_visited(), 1);
	assert_int_equal(crt->od_round - r0, 2);
	/* web without outlier_detection leaves it */
	cluster_web_h2("", "{}");
	w->now_ms += 1000;
	http_od_tick(w);
	assert_int_equal(http_od_tick_visited(), 0);
	assert_int_equal(crt->od_round - r0, 2);
}

/* A RING_HASH cluster whose minimum_ring_size asks for more points than a
 * worker's ring holds (HTTP_LB_RING_MAX) is cut to it and counted in
 * cluster.<c>.lb_hash_table_clipped, once per entry built; its picks
 * read the ring (the cache's table). One that fits is not counted. */
static void test_ring_hash_clipped_is_counted(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	cluster_web_h2("\"lb_policy\":\"RING_HASH\",\"ring_hash_lb_config\":{\"minimum_ring_size\":"
		       "\"8388608\"},",
		       "{}");
	assert_int_equal(stat("cluster.web.lb_hash_table_clipped"), 1);
	struct http_cluster_rt *crt = http_rt_cluster("web", 3, arn_cfg_hash("web", 3));
	assert_non_null(crt);
	struct http_lb_view v;
	assert_true(http_rt_lb_view(crt, w->idx, &v));
	assert_non_null(v.cache);
	assert_true(v.cache->tab_cap <= HTTP_LB_RING_MAX + 2);
	assert_non_null(v.cache->ring);
	cluster_web_h2("\"lb_policy\":\"RING_HASH\",", "{}");
	assert_int_equal(stat("cluster.web.lb_hash_table_clipped"), 1);
	assert_true(http_rt_lb_view(crt, w->idx, &v));
	/* one host: minimum_ring_size, and room for any set of candidates'
	 * scale (1024 + total / lightest weight) and its rounding */
	assert_int_equal(v.cache->tab_cap, 1024 + 1 + 2);
}

/* ---- upstream HTTP/2: cluster.<c>.http2.* (Envoy's codec statistics) ------------------------- */

/* One request from a new HTTP/1.1 client on connection @p k (opened by the
 * first call), pumped until the upstream has its stream. */
static struct arn_tcp_conn *uph2_request(struct h2u *k, const char *path, bool open)
{
	struct arn_tcp_conn *c = client();
	char req[128];
	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: a\r\n\r\n", path);
	send_s(c, req);
	if (open)
		h2u_open(k, 100);
	h2u_pump(k);
	return c;
}

/* http2.streams_active counts the streams open to the cluster's hosts:
 * up with each request, down as each ends, and to 0 when the connection
 * goes with a stream still open. */
static void test_uph2_stat_streams_active(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	cluster_web_h2("", "{}");
	struct h2u k;
	struct arn_tcp_conn *a = uph2_request(&k, "/a", true);
	struct arn_tcp_conn *b = uph2_request(&k, "/b", false);
	assert_int_equal(k.n, 2);
	assert_int_equal(stat("cluster.web.http2.streams_active"), 2);
	h2u_answer(&k, &k.st[0], "A");
	h2u_pump(&k);
	assert_true(answered(a, "HTTP/1.1 200"));
	assert_int_equal(stat("cluster.web.http2.streams_active"), 1);
	upstream_closes(k.c, -ECONNRESET);
	poll_ms(1);
	assert_true(b->tx_len > 0); /* its stream was cut */
	assert_int_equal(stat("cluster.web.http2.streams_active"), 0);
	h2u_close(&k);
}

/* RST_STREAM from the host: http2.rx_reset (as well as upstream_rq_rx_reset). */
static void test_uph2_stat_rx_reset(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	cluster_web_h2("", "{}");
	struct h2u k;
	struct arn_tcp_conn *a = uph2_request(&k, "/a", true);
	assert_int_equal(stat("cluster.web.http2.rx_reset"), 0);
	assert_int_equal(
	    nghttp2_submit_rst_stream(k.s, NGHTTP2_FLAG_NONE, k.st[0].id, NGHTTP2_INTERNAL_ERROR),
	    0);
	h2u_pump(&k);
	assert_true(answered(a, "HTTP/1.1 503"));
	assert_int_equal(stat("cluster.web.http2.rx_reset"), 1);
	assert_int_equal(stat("cluster.web.http2.tx_reset"), 0);
	h2u_close(&k);
}

/* The client leaves mid-exchange: Arion resets the stream (RST_STREAM
 * CANCEL), counted in http2.tx_reset; the connection stays. */
static void test_uph2_stat_tx_reset(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	cluster_web_h2("", "{}");
	struct h2u k;
	struct arn_tcp_conn *a = uph2_request(&k, "/a", true);
	a->closed = a->close_pending = true;
	a->close_reason = -ECONNRESET;
	poll_ms(1);
	h2u_pump(&k);
	assert_int_equal(k.rst_rx, 1);
	assert_int_equal(k.st[0].error, NGHTTP2_CANCEL);
	assert_int_equal(stat("cluster.web.http2.tx_reset"), 1);
	assert_int_equal(stat("cluster.web.http2.rx_reset"), 0);
	assert_false(k.c->closed);
	h2u_close(&k);
}

/*
 * A response body's DATA that arrives while the worker's mbuf pool is
 * empty: the stream fails, but it was told only when the next frame of
 * the stream came, so a chunk lost with nothing behind it (an upstream
 * waiting for the client, a long poll) left the client with a head and
 * no body, and the upstream's stream open, until a timeout (fails
 * before: assert_true(c->closed)). Now the stream is told at once: the
 * client's connection is cut (the body cannot end well after a hole),
 * the upstream's stream reset (CANCEL), counted in
 * cluster.<c>.http2.rx_body_no_mbuf, and the connection serves the next.
 */
static void test_uph2_response_body_no_mbuf(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	cluster_web_h2("", "{}");
	struct arn_tcp_conn *c = client();
	send_s(c, "GET /a HTTP/1.1\r\nHost: a\r\n\r\n");
	struct h2u k;
	h2u_open(&k, 100);
	h2u_pump(&k);
	assert_int_equal(k.n, 1);
	mb_len = mb_off = 0;
	mb_end = false;
	nghttp2_nv nv[] = {{(uint8_t *)":status", (uint8_t *)"200", 7, 3, 0}};
	nghttp2_data_provider prd = {.read_callback = mb_read};
	assert_int_equal(nghttp2_submit_response(k.s, k.st[0].id, nv, 1, &prd), 0);
	h2u_pump(&k);
	assert_true(answered(c, "HTTP/1.1 200"));
	mb_more('x', 1000, false);
	assert_int_equal(nghttp2_session_resume_data(k.s, k.st[0].id), 0);
	alloc_fail = 1;
	h2u_pump(&k);
	alloc_fail = 0;
	assert_true(c->closed);
	want_not_in(c->tx, "xxxx");
	assert_true(k.st[0].closed);
	assert_int_equal(k.st[0].error, NGHTTP2_CANCEL);
	assert_int_equal(stat("cluster.web.http2.rx_body_no_mbuf"), 1);
	assert_false(k.c->closed);
	/* the connection goes on */
	struct arn_tcp_conn *c2 = client();
	send_s(c2, "GET /b HTTP/1.1\r\nHost: a\r\n\r\n");
	h2u_pump(&k);
	assert_int_equal(k.n, 2);
	h2u_answer(&k, &k.st[1], "ok");
	h2u_pump(&k);
	assert_true(answered(c2, "HTTP/1.1 200"));
	h2u_close(&k);
}

/* A client's GET /a (returned) goes to the HTTP/2 upstream, opened into
 * @p k, which answers its head and 1,000 bytes of DATA in one read: the
 * DATA finds no mbuf. */
static struct arn_tcp_conn *uph2_answer_without_mbuf(struct h2u *k)
{
	struct arn_tcp_conn *c = client();
	send_s(c, "GET /a HTTP/1.1\r\nHost: a\r\n\r\n");
	h2u_open(k, 100);
	h2u_pump(k);
	assert_int_equal(k->n, 1);
	mb_len = mb_off = 0;
	mb_end = false;
	mb_more('x', 1000, false);
	nghttp2_nv nv[] = {{(uint8_t *)":status", (uint8_t *)"200", 7, 3, 0}};
	nghttp2_data_provider prd = {.read_callback = mb_read};
	assert_int_equal(nghttp2_submit_response(k->s, k->st[0].id, nv, 1, &prd), 0);
	static uint8_t both[4096];
	size_t blen = 0;
	const uint8_t *data;
	ssize_t n;
	while ((n = nghttp2_session_mem_send(k->s, &data)) > 0) {
		assert_true(blen + (size_t)n <= sizeof(both));
		memcpy(both + blen, data, (size_t)n);
		blen += (size_t)n;
	}
	alloc_fail = 1;
	send_n(k->c, (const char *)both, blen);
	alloc_fail = 0;
	h2u_pump(k);
	return c;
}

/*
 * The proxy's mbuf shortage on a response from an HTTP/2 upstream is the
 * proxy's giving up of the stream (Envoy's local reset), not the
 * upstream's protocol error: before the response started, 503 with flag
 * LR and details upstream_reset_before_response_started{local_reset};
 * after it, the client's connection cut with flag LR. Neither counts in
 * upstream_cx_protocol_error (fails before: answered(c, "HTTP/1.1 503"),
 * it was 502 with UPE; upstream_cx_protocol_error was 2).
 */
static void test_uph2_response_no_mbuf_is_local_reset(void **state)
{
	(void)state;
	char log_path[64], extra[512];
	snprintf(log_path, sizeof(log_path), "/tmp/arn_test_hcm_uph2lr.%d.log", (int)getpid());
	unlink(log_path);
	snprintf(extra, sizeof(extra),
		 "\"access_log\":[{\"name\":\"f\",\"typed_config\":{\"@type\":\"type."
		 "googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog\",\"path\":"
		 "\"%s\",\"log_format\":{\"text_format_source\":{\"inline_string\":"
		 "\"%%REQ(:PATH)%% %%RESPONSE_CODE%% %%RESPONSE_FLAGS%% "
		 "%%RESPONSE_CODE_DETAILS%%\\n\"}}}}]",
		 log_path);
	start(8, jlistener(extra, ROUTE_WEB));
	cluster_web_h2("", "{}");
	/* before the response started: its head and a DATA frame come in
	 * one read, and the DATA finds no mbuf */
	struct h2u k;
	struct arn_tcp_conn *c = uph2_answer_without_mbuf(&k);
	assert_true(answered(c, "HTTP/1.1 503"));
	want_not_in(c->tx, "xxxx");
	assert_true(k.st[0].closed);
	/* after it: the head went to the client, then a DATA frame finds
	 * no mbuf */
	struct arn_tcp_conn *c2 = client();
	send_s(c2, "GET /b HTTP/1.1\r\nHost: a\r\n\r\n");
	h2u_pump(&k);
	assert_int_equal(k.n, 2);
	mb_len = mb_off = 0;
	mb_end = false;
	nghttp2_nv nv[] = {{(uint8_t *)":status", (uint8_t *)"200", 7, 3, 0}};
	nghttp2_data_provider prd = {.read_callback = mb_read};
	assert_int_equal(nghttp2_submit_response(k.s, k.st[1].id, nv, 1, &prd), 0);
	h2u_pump(&k);
	assert_true(answered(c2, "HTTP/1.1 200"));
	mb_more('y', 1000, false);
	assert_int_equal(nghttp2_session_resume_data(k.s, k.st[1].id), 0);
	alloc_fail = 1;
	h2u_pump(&k);
	alloc_fail = 0;
	assert_true(c2->closed);
	assert_int_equal(stat("cluster.web.http2.rx_body_no_mbuf"), 2);
	assert_int_equal(stat("cluster.web.upstream_cx_protocol_error"), 0);
	assert_int_equal(stat("cluster.web.upstream_rq_tx_reset"), 2);
	poll_ms(1);
	char log[512];
	read_access_log(log_path, log, sizeof(log));
	want_in(log, "/a 503 LR upstream_reset_before_response_started{local_reset}\n");
	want_in(log, "/b 200 LR ");
	want_not_in(log, "UPE");
	/* the worker's shortage is not the host's failure: neither counts
	 * against it (its success rate, outlier detection) */
	assert_int_equal(stat("cluster.web.endpoint.198.18.0.10_8080.rq_error"), 0);
	assert_int_equal(stat("cluster.web.endpoint.198.18.0.10_8080.rq_total"), 2);
	h2u_close(&k);
}

/* The same shortage on a route that retries resets, in a cluster whose
 * outlier detection ejects at the first gateway failure: the retry is
 * taken, and the host is neither ejected nor charged an error (the
 * retry's attempt was HOST_ERROR, the consecutive detector's failure). */
static void test_uph2_no_mbuf_retry_ejects_no_host(void **state)
{
	(void)state;
	start(8, jlistener("", "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\","
			       "\"retry_policy\":{\"retry_on\":\"reset\",\"num_retries\":1}}}"));
	cluster_web_h2("\"outlier_detection\":{\"consecutive_5xx\":1,"
		       "\"consecutive_gateway_failure\":1,\"enforcing_consecutive_gateway_"
		       "failure\":100,\"max_ejection_percent\":100},",
		       "{}");
	struct h2u k;
	uph2_answer_without_mbuf(&k);
	poll_ms(30); /* the retry's back-off */
	h2u_pump(&k);
	assert_int_equal(stat("cluster.web.upstream_rq_retry"), 1);
	assert_int_equal(stat("cluster.web.outlier_detection.ejections_enforced_total"), 0);
	assert_int_equal(stat("cluster.web.outlier_detection.ejections_active"), 0);
	assert_int_equal(stat("cluster.web.endpoint.198.18.0.10_8080.rq_error"), 0);
	h2u_close(&k);
}

/* With split_external_local_origin_errors the router's connect failures
 * are local-origin failures (two eject by consecutive_local_origin_failure,
 * consecutive_5xx sees none), and a reset after the request went on a
 * connection is the connection's success first, then the failure, as
 * Envoy hears them: two in a row detect nothing. */
static void test_outlier_split_router_local_origin(void **state)
{
	(void)state;
	start(4, jlistener("", "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}"));
	apply(C, "2",
	      "{\"name\":\"web\",\"type\":\"STATIC\",\"connect_timeout\":\"5s\","
	      "\"outlier_detection\":{\"split_external_local_origin_errors\":true,"
	      "\"consecutive_5xx\":2,\"consecutive_local_origin_failure\":2,"
	      "\"enforcing_consecutive_local_origin_failure\":0},"
	      "\"load_assignment\":{\"cluster_name\":\"web\",\"endpoints\":[{\"lb_endpoints\":[{"
	      "\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"198.18.0.10\","
	      "\"port_value\":8080}}}}]}]}}");
	poll_ms(1);
	/* resets after the head went: never two local-origin failures in a row */
	for (int i = 0; i < 2; i++) {
		struct arn_tcp_conn *c = client();
		send_s(c, "GET /r HTTP/1.1\r\nHost: a\r\n\r\n");
		struct arn_tcp_conn *u = upstream_accepts();
		want_in(u->tx, "GET /r");
		upstream_closes(u, -ECONNRESET);
		poll_ms(1);
		poll_ms(1);
		assert_true(answered(c, "HTTP/1.1 503"));
	}
	assert_int_equal(stat("cluster.web.outlier_detection.ejections_detected_consecutive_local_"
			      "origin_failure"),
			 0);
	/* two refused connects: detected (enforcing 0), not a consecutive 5xx */
	for (int i = 0; i < 2; i++) {
		struct arn_tcp_conn *c = client();
		send_s(c, "GET /f HTTP/1.1\r\nHost: a\r\n\r\n");
		assert_int_equal(upstream_pending(), 1);
		for (unsigned k = 0; k < CONNS; k++)
			if (conns[k].used && conns[k].upstream && !conns[k].connected &&
			    !conns[k].closed)
				upstream_closes(&conns[k], -ECONNREFUSED);
		poll_ms(1);
		poll_ms(1);
		assert_true(answered(c, "HTTP/1.1 503"));
	}
	assert_int_equal(stat("cluster.web.outlier_detection.ejections_detected_consecutive_local_"
			      "origin_failure"),
			 1);
	assert_int_equal(stat("cluster.web.outlier_detection.ejections_detected_consecutive_5xx"),
			 0);
	assert_int_equal(stat("cluster.web.outlier_detection.ejections_enforced_total"), 0);
}

/* mb_read's body, then grpc_trailers after it (once mb_end is set). */
static ssize_t mb_read_tr(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
			  nghttp2_data_source *src, void *ud)
{
	ssize_t n = mb_read(s, id, buf, len, flags, src, ud);
	if (n >= 0 && (*flags & NGHTTP2_DATA_FLAG_EOF)) {
		*flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
		assert_int_equal(nghttp2_submit_trailer(s, id, grpc_trailers, 2), 0);
	}
	return n;
}

/*
 * A response's trailers that find no mbuf to be copied into toward an
 * HTTP/2 client: the stream ended as if the response had none, a gRPC
 * call without its grpc-status (fails before: x->error was NO_ERROR, a
 * clean end). Now it is reset (INTERNAL_ERROR, http2.tx_trailers_no_mbuf)
 * and the connection serves the next stream.
 */
static void test_h2_response_trailers_no_mbuf(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	cluster_web_h2("", "{}");
	struct h2c c;
	h2c_open(&c, 65535);
	int32_t id = h2c_request(&c, "GET", "/g", NULL, NULL, NULL);
	h2c_pump(&c);
	struct h2u u;
	h2u_open(&u, 100);
	h2cu_pump(&c, &u);
	assert_int_equal(u.n, 1);
	mb_len = mb_off = 0;
	mb_more('x', 10, false);
	nghttp2_nv nv[] = {NV(":status", "200")};
	nghttp2_data_provider prd = {.read_callback = mb_read_tr};
	assert_int_equal(nghttp2_submit_response(u.s, u.st[0].id, nv, 1, &prd), 0);
	h2cu_pump(&c, &u);
	struct h2c_stream *x = h2c_find(&c, id);
	assert_int_equal(x->status, 200);
	assert_int_equal(x->body_len, 10);
	assert_false(x->closed);
	mb_end = true;
	assert_int_equal(nghttp2_session_resume_data(u.s, u.st[0].id), 0);
	alloc_fail = 1;
	h2cu_pump(&c, &u);
	alloc_fail = 0;
	assert_true(x->closed);
	assert_int_equal(x->error, NGHTTP2_INTERNAL_ERROR);
	want_not_in(x->hdrs, "grpc-status");
	assert_int_equal(stat("http2.tx_trailers_no_mbuf"), 1);
	int32_t b = h2c_request(&c, "GET", "/b", NULL, NULL, NULL);
	h2cu_pump(&c, &u);
	assert_int_equal(u.n, 2);
	h2u_answer(&u, &u.st[1], "ok");
	h2cu_pump(&c, &u);
	assert_int_equal(h2c_find(&c, b)->status, 200);
	h2c_close(&c);
	h2u_close(&u);
}

/* A response with more header fields than the cluster's
 * max_headers_count (100 by default): the stream fails (502), counted
 * once in http2.header_overflow (as a list over 96 KiB is). */
static void test_uph2_stat_header_overflow(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	cluster_web_h2("", "{}");
	struct h2u k;
	struct arn_tcp_conn *a = uph2_request(&k, "/a", true);
	enum { N = HTTP_MAX_HDRS + 20 };
	static char names[N][8];
	nghttp2_nv nv[N + 1];
	nv[0] = (nghttp2_nv){(uint8_t *)":status", (uint8_t *)"200", 7, 3, 0};
	for (int i = 0; i < N; i++) {
		int l = snprintf(names[i], sizeof(names[i]), "x-%d", i);
		nv[i + 1] = (nghttp2_nv){(uint8_t *)names[i], (uint8_t *)"v", (size_t)l, 1, 0};
	}
	assert_int_equal(nghttp2_submit_response(k.s, k.st[0].id, nv, N + 1, NULL), 0);
	h2u_pump(&k);
	poll_ms(1);
	assert_true(answered(a, "HTTP/1.1 502"));
	assert_int_equal(stat("cluster.web.http2.header_overflow"), 1);
	h2u_close(&k);
}

/*
 * docs/security.md, upstream: nghttp2's memory and the streams' header
 * references are bounded by 4 MiB per connection (HTTP_H2_MEM_MAX). A host
 * that answers stream after stream with a head of 90 KiB (within
 * HTTP_UPH2_MAX_HDR_BYTES) and no end makes the proxy hold each list;
 * past 4 MiB an allocation fails and the connection closes, counted in
 * cluster.<c>.upstream_cx_protocol_error, not after 4 MiB of lists of
 * 90 KiB (46), nor before 4 MiB kept twice (23).
 */
static void test_uph2_nghttp2_memory_bounded(void **state)
{
	(void)state;
	start(128, jlistener("", ROUTE_WEB));
	cluster_web_h2("", "{\"max_concurrent_streams\":100}");
	static char v[45001];
	memset(v, 'm', 45000);
	struct h2u k;
	static struct arn_tcp_conn *cl[H2U_STREAMS];
	unsigned sent = 0;
	while (!stat("cluster.web.upstream_cx_protocol_error") && sent < H2U_STREAMS) {
		cl[sent] = uph2_request(&k, "/a", sent == 0);
		assert_int_equal(k.n, sent + 1);
		nghttp2_nv nv[] = {
		    {(uint8_t *)":status", (uint8_t *)"200", 7, 3, 0},
		    {(uint8_t *)"x-one", (uint8_t *)v, 5, 45000, NGHTTP2_NV_FLAG_NO_INDEX},
		    {(uint8_t *)"x-two", (uint8_t *)v, 5, 45000, NGHTTP2_NV_FLAG_NO_INDEX},
		};
		assert_int_equal(nghttp2_submit_headers(k.s, NGHTTP2_FLAG_NONE, k.st[sent].id, NULL,
							nv, 3, NULL),
				 0);
		h2u_pump(&k);
		poll_ms(1);
		if (!stat("cluster.web.upstream_cx_protocol_error"))
			assert_true(answered(cl[sent], "HTTP/1.1 200"));
		sent++;
	}
	assert_int_equal(stat("cluster.web.upstream_cx_protocol_error"), 1);
	assert_true(sent >= 4 * 1024 / 180 && sent <= 4 * 1024 / 90);
	assert_int_equal(stat("cluster.web.http2.header_overflow"), 0);
	poll_ms(1);
	assert_true(k.c->closed || k.c->shut);
	h2u_close(&k);
}

/*
 * docs/security.md, upstream: CONTINUATION frames per header block, 8
 * (nghttp2's max_continuations, the upstream session's own). A response
 * head in HEADERS and 8 CONTINUATION frames is taken; one in 9 closes
 * the connection, counted in cluster.<c>.upstream_cx_protocol_error.
 */
static void uph2_raw_head(struct h2u *k, int32_t id, unsigned continuations)
{
	char f[9 + 5];
	/* HEADERS, END_STREAM, no END_HEADERS: ":status: 200" (indexed) */
	memcpy(f, "\0\0\x01\x01\x01", 5);
	f[5] = (char)(id >> 24), f[6] = (char)(id >> 16), f[7] = (char)(id >> 8), f[8] = (char)id;
	f[9] = (char)0x88;
	send_n(k->c, f, 10);
	for (unsigned i = 0; i < continuations; i++) {
		/* CONTINUATION: "x: y", a literal never indexed */
		memcpy(f, "\0\0\x05\x09", 4);
		f[4] = i + 1 == continuations ? 0x04 : 0; /* END_HEADERS on the last */
		memcpy(f + 9, "\x10\x01x\x01y", 5);
		send_n(k->c, f, 14);
	}
}

static void test_uph2_continuations_bounded(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	cluster_web_h2("", "{}");
	struct h2u k;
	struct arn_tcp_conn *a = uph2_request(&k, "/a", true);
	uph2_raw_head(&k, k.st[0].id, 8);
	poll_ms(1);
	assert_true(answered(a, "HTTP/1.1 200"));
	want_in(a->tx, "x: y\r\n");
	assert_false(k.c->closed);
	assert_int_equal(stat("cluster.web.upstream_cx_protocol_error"), 0);
	struct arn_tcp_conn *b = uph2_request(&k, "/b", false);
	assert_int_equal(k.n, 2);
	uph2_raw_head(&k, k.st[1].id, 9);
	poll_ms(1);
	assert_true(answered(b, "HTTP/1.1 503"));
	assert_int_equal(stat("cluster.web.upstream_cx_protocol_error"), 1);
	run_ms(3100);
	assert_true(k.c->closed || k.c->shut);
	h2u_close(&k);
}

/* A response with trailers (grpc-status): http2.trailers. */
static void test_uph2_stat_trailers(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	cluster_web_h2("", "{}");
	struct h2u k;
	struct arn_tcp_conn *a = uph2_request(&k, "/a", true);
	nghttp2_nv head[] = {{(uint8_t *)":status", (uint8_t *)"200", 7, 3, 0}};
	nghttp2_nv tr[] = {{(uint8_t *)"grpc-status", (uint8_t *)"0", 11, 1, 0}};
	assert_int_equal(
	    nghttp2_submit_headers(k.s, NGHTTP2_FLAG_NONE, k.st[0].id, NULL, head, 1, NULL), 0);
	h2u_pump(&k);
	assert_int_equal(stat("cluster.web.http2.trailers"), 0);
	assert_int_equal(
	    nghttp2_submit_headers(k.s, NGHTTP2_FLAG_END_STREAM, k.st[0].id, NULL, tr, 1, NULL), 0);
	h2u_pump(&k);
	assert_true(answered(a, "HTTP/1.1 200"));
	assert_int_equal(stat("cluster.web.http2.trailers"), 1);
	h2u_close(&k);
}

/* A response that breaks RFC 9113 8.2.2 (a connection-specific field):
 * nghttp2 resets its stream, counted in http2.rx_messaging_error (and
 * the RST_STREAM in http2.tx_reset); the connection serves on. */
static void test_uph2_stat_rx_messaging_error(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	cluster_web_h2("", "{}");
	struct h2u k;
	struct arn_tcp_conn *a = uph2_request(&k, "/a", true);
	nghttp2_nv nv[] = {{(uint8_t *)":status", (uint8_t *)"200", 7, 3, 0},
			   {(uint8_t *)"connection", (uint8_t *)"close", 10, 5, 0}};
	assert_int_equal(nghttp2_submit_response(k.s, k.st[0].id, nv, 2, NULL), 0);
	h2u_pump(&k);
	poll_ms(1);
	assert_true(a->tx_len && strncmp(a->tx, "HTTP/1.1 5", 10) == 0);
	assert_int_equal(stat("cluster.web.http2.rx_messaging_error"), 1);
	assert_int_equal(stat("cluster.web.http2.tx_reset"), 1);
	assert_false(k.c->closed);
	h2u_close(&k);
}

/* A host that makes Arion queue more PING ACKs than
 * max_outbound_control_frames (here 10) before it can write them: the
 * connection is closed, counted in http2.outbound_control_flood. */
static void test_uph2_stat_outbound_control_flood(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	cluster_web_h2("", "{\"max_outbound_control_frames\":10}");
	struct h2u k;
	uph2_request(&k, "/a", true);
	for (int i = 0; i < 20; i++)
		assert_int_equal(nghttp2_submit_ping(k.s, NGHTTP2_FLAG_NONE, NULL), 0);
	const uint8_t *data;
	ssize_t n;
	char buf[2048];
	size_t len = 0;
	while ((n = nghttp2_session_mem_send(k.s, &data)) > 0) {
		assert_true(len + (size_t)n <= sizeof(buf));
		memcpy(buf + len, data, (size_t)n);
		len += (size_t)n;
	}
	send_n(k.c, buf, len); /* all at once: one read */
	poll_ms(1);
	assert_true(k.c->closed);
	assert_int_equal(stat("cluster.web.http2.outbound_control_flood"), 1);
	assert_int_equal(stat("cluster.web.upstream_cx_protocol_error"), 0);
	h2u_close(&k);
}

/* ---- downstream HTTP/2: connection_keepalive --------------------------------------------------
 */

#define H2_KEEPALIVE(fields) "\"http2_protocol_options\":{\"connection_keepalive\":{" fields "}}"

/*
 * A connection manager's connection_keepalive, interval 1 s (no jitter),
 * timeout 500 ms: a PING to the client each second once its ACK came, on
 * an idle connection too; a client that vanished (no ACK, no byte) loses
 * the connection at the deadline, with a GOAWAY, counted in
 * http2.keepalive_timeout.
 */
static void test_h2_keepalive_interval(void **state)
{
	(void)state;
	start(8, jlistener(H2_KEEPALIVE("\"interval\":\"1s\",\"timeout\":\"0.5s\","
					"\"interval_jitter\":{\"value\":0}"),
			   DIRECT_OK));
	struct h2c k;
	h2c_open(&k, 65535);
	int32_t a = h2c_request(&k, "GET", "/a", NULL, NULL, NULL);
	h2c_pump(&k);
	assert_int_equal(h2c_find(&k, a)->status, 200);
	assert_int_equal(k.pings, 0);
	run_ms(1000);
	h2c_pump(&k); /* the client ACKs it (nghttp2 does by itself) */
	assert_int_equal(k.pings, 1);
	run_ms(900);
	h2c_pump(&k);
	assert_int_equal(k.pings, 1);
	run_ms(200); /* 1 s after the ACK: the next PING */
	h2c_pump(&k);
	assert_int_equal(k.pings, 2);
	assert_false(k.c->closed || k.c->shut);
	/* the client goes silent: the next PING stays unanswered */
	run_ms(1000);
	size_t seen = k.c->tx_len;
	run_ms(400);
	assert_false(k.c->closed || k.c->shut);
	assert_int_equal(stat("http2.keepalive_timeout"), 0);
	run_ms(200);
	assert_true(k.c->closed || k.c->shut);
	assert_int_equal(stat("http2.keepalive_timeout"), 1);
	/* its last frame is a GOAWAY, the first it got */
	assert_true(k.c->tx_len >= seen + 17);
	const uint8_t *f = (const uint8_t *)k.c->tx + k.c->tx_len - 17;
	assert_int_equal(f[3], NGHTTP2_GOAWAY);
	assert_int_equal(stat("http2.goaway_sent"), 1);
	h2c_pump(&k);
	assert_int_equal(k.pings, 3);
	assert_true(k.goaway);
	h2c_close(&k);
}

/* Any bytes from the client while a PING waits put its deadline off (a
 * client whose ACK is queued behind its own frames is not cut); without
 * connection_keepalive no PING goes at all. */
static void test_h2_keepalive_extended_by_rx(void **state)
{
	(void)state;
	start(8, jlistener(H2_KEEPALIVE("\"interval\":\"1s\",\"timeout\":\"0.5s\","
					"\"interval_jitter\":{\"value\":0}"),
			   DIRECT_OK));
	struct h2c k;
	h2c_open(&k, 65535);
	h2c_pump(&k);
	k.paused = true; /* Arion's PING is not read: no ACK */
	run_ms(1000);	 /* the PING is out */
	for (int i = 0; i < 4; i++) {
		run_ms(300);
		assert_int_equal(nghttp2_submit_ping(k.s, NGHTTP2_FLAG_NONE, NULL), 0);
		h2c_pump(&k);
	}
	assert_false(k.c->closed || k.c->shut); /* 1.2 s after the PING */
	assert_int_equal(stat("http2.keepalive_timeout"), 0);
	run_ms(600);
	assert_true(k.c->closed || k.c->shut);
	assert_int_equal(stat("http2.keepalive_timeout"), 1);
	h2c_close(&k);
	teardown(NULL);
	/* unset: nothing but the idle timeout */
	start(8, jlistener("", DIRECT_OK));
	h2c_open(&k, 65535);
	h2c_pump(&k);
	run_ms(5000);
	h2c_pump(&k);
	assert_int_equal(k.pings, 0);
	assert_false(k.c->closed || k.c->shut);
	h2c_close(&k);
}

/*
 * Out of mbufs while framing: the bytes nghttp2 handed over are gone from
 * its session, so the client's framing would have a hole; the connection
 * closes instead of going on. Before http_h2_send_frames, the downstream
 * side dropped a first frame that found no mbuf without a word (the
 * connection stayed open, its client waiting for a PING ACK that was
 * never sent); the upstream side already closed.
 */
static void test_h2_frame_lost_out_of_mbufs_closes(void **state)
{
	(void)state;
	start(8, jlistener("", DIRECT_OK));
	struct h2c k;
	h2c_open(&k, 65535);
	h2c_pump(&k);
	assert_false(k.c->closed || k.c->shut);
	assert_int_equal(nghttp2_submit_ping(k.s, NGHTTP2_FLAG_NONE, NULL), 0);
	const uint8_t *ping;
	ssize_t n = nghttp2_session_mem_send(k.s, &ping);
	assert_int_equal(n, 17); /* the PING frame */
	/* the PING comes in an mbuf the test keeps a reference to (so that
	 * Arion's freeing it gives nothing back), and every other mbuf is
	 * taken */
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	assert_non_null(m);
	memcpy(rte_pktmbuf_append(m, (uint16_t)n), ping, (size_t)n);
	rte_mbuf_refcnt_update(m, 1);
	static struct rte_mbuf *held[8192];
	unsigned nh = 0;
	while ((held[nh] = rte_pktmbuf_alloc(pool)) != NULL)
		nh++;
	assert_null(k.c->rxq);
	k.c->rxq = m;
	k.c->rx_bytes += (size_t)n;
	k.c->ops->on_data(k.c, k.c->rxq, k.c->rx_bytes);
	poll_ms(1);
	rte_pktmbuf_free_bulk(held, nh);
	rte_pktmbuf_free(m);
	poll_ms(1);
	assert_true(k.c->closed || k.c->shut);
	h2c_close(&k);
}

/* ---- upstream HTTP/2: connection_keepalive ----------------------------------------------------
 */

#define KEEPALIVE(fields) "{\"connection_keepalive\":{" fields "}}"

/*
 * interval 1 s (no jitter), timeout 500 ms: a PING each second once its
 * ACK came, on an idle connection too; a PING left unanswered closes the
 * connection at its deadline with a GOAWAY, counted in
 * http2.keepalive_timeout.
 */
static void test_uph2_keepalive_interval(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	cluster_web_h2("", KEEPALIVE("\"interval\":\"1s\",\"timeout\":\"0.5s\","
				     "\"interval_jitter\":{\"value\":0}"));
	struct h2u k;
	struct arn_tcp_conn *a = uph2_request(&k, "/a", true);
	h2u_answer(&k, &k.st[0], "ok");
	h2u_pump(&k);
	assert_true(answered(a, "HTTP/1.1 200"));
	assert_int_equal(k.pings, 0);
	run_ms(1000);
	h2u_pump(&k); /* the upstream answers it (nghttp2 ACKs by itself) */
	assert_int_equal(k.pings, 1);
	run_ms(900);
	assert_false(k.c->closed);
	h2u_pump(&k);
	assert_int_equal(k.pings, 1);
	run_ms(200); /* 1 s after the ACK: the next PING */
	h2u_pump(&k);
	assert_int_equal(k.pings, 2);
	assert_false(k.c->closed);
	/* the upstream stops answering */
	run_ms(1000);
	size_t seen = k.c->tx_len;
	assert_false(k.c->closed);
	run_ms(400);
	assert_false(k.c->closed);
	assert_int_equal(stat("cluster.web.http2.keepalive_timeout"), 0);
	run_ms(200);
	assert_true(k.c->closed);
	assert_int_equal(stat("cluster.web.http2.keepalive_timeout"), 1);
	/* its last frame is a GOAWAY */
	assert_true(k.c->tx_len >= seen + 17);
	const uint8_t *f = (const uint8_t *)k.c->tx + k.c->tx_len - 17;
	assert_int_equal(f[3], NGHTTP2_GOAWAY);
	assert_int_equal(stat("cluster.web.http2.goaway_sent"), 1);
	h2u_close(&k);
}

/*
 * connection_idle_interval 2 s, no interval: a request on a connection
 * that received nothing for longer goes out behind a PING; one sooner
 * does not. The host that does not answer that PING within timeout (1 s)
 * loses the connection, and the stream on it is cut.
 */
static void test_uph2_keepalive_idle_interval(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	cluster_web_h2("", KEEPALIVE("\"timeout\":\"1s\",\"connection_idle_interval\":\"2s\""));
	struct h2u k;
	struct arn_tcp_conn *a = uph2_request(&k, "/a", true);
	h2u_answer(&k, &k.st[0], "ok");
	h2u_pump(&k);
	assert_true(answered(a, "HTTP/1.1 200"));
	run_ms(1500);
	struct arn_tcp_conn *b = uph2_request(&k, "/b", false);
	assert_int_equal(k.pings, 0); /* idle 1.5 s: no PING */
	h2u_answer(&k, &k.st[1], "ok");
	h2u_pump(&k);
	assert_true(answered(b, "HTTP/1.1 200"));
	run_ms(2100);
	assert_int_equal(k.pings, 0); /* no interval: nothing while idle */
	struct arn_tcp_conn *c = uph2_request(&k, "/c", false);
	assert_int_equal(k.pings, 1); /* idle 2.1 s: a PING first */
	assert_int_equal(k.n, 3);     /* and the stream behind it */
	h2u_answer(&k, &k.st[2], "ok");
	h2u_pump(&k);
	assert_true(answered(c, "HTTP/1.1 200"));
	run_ms(1100);
	assert_false(k.c->closed); /* it was answered */
	/* idle again; this time the host says nothing */
	run_ms(2000);
	struct arn_tcp_conn *d = client();
	send_s(d, "GET /d HTTP/1.1\r\nHost: a\r\n\r\n");
	run_ms(900);
	assert_false(k.c->closed);
	run_ms(200);
	assert_true(k.c->closed);
	assert_int_equal(stat("cluster.web.http2.keepalive_timeout"), 1);
	poll_ms(1);
	assert_true(d->tx_len > 0); /* its stream was cut: answered by Arion */
	h2u_close(&k);
}

/* Any bytes from the host while a PING waits put its deadline off: a
 * busy connection whose ACK is late is not closed. */
static void test_uph2_keepalive_extended_by_rx(void **state)
{
	(void)state;
	start(8, jlistener("", ROUTE_WEB));
	cluster_web_h2("", KEEPALIVE("\"interval\":\"1s\",\"timeout\":\"0.5s\","
				     "\"interval_jitter\":{\"value\":0}"));
	struct h2u k;
	uph2_request(&k, "/a", true);
	run_ms(1000); /* the PING is out, not read by the upstream yet */
	nghttp2_nv head[] = {{(uint8_t *)":status", (uint8_t *)"200", 7, 3, 0}};
	for (int i = 0; i < 4; i++) {
		run_ms(300);
		/* a frame of the response, without reading Arion's PING */
		assert_int_equal(
		    nghttp2_submit_headers(k.s, NGHTTP2_FLAG_NONE, k.st[0].id, NULL, head, 1, NULL),
		    0);
		const uint8_t *data;
		ssize_t n;
		while ((n = nghttp2_session_mem_send(k.s, &data)) > 0)
			send_n(k.c, (const char *)data, (size_t)n);
		poll_ms(1);
	}
	assert_false(k.c->closed);
	run_ms(600);
	assert_true(k.c->closed);
	assert_int_equal(stat("cluster.web.http2.keepalive_timeout"), 1);
	h2u_close(&k);
}

/* ---- auto_config: the ALPN Arion offers -------------------------------------------------------
 */

/*
 * An auto_config cluster whose UpstreamTlsContext lists no
 * alpn_protocols offers "h2" and "http/1.1" (Envoy's default for
 * AutoHttpConfig), so that a host may choose HTTP/2; one that lists its
 * own offers those.
 */
static void test_auto_config_offers_h2_and_http11(void **state)
{
	(void)state;
	start(4, jlistener("", ROUTE_WEB));
	static const char *const alpn[] = {"", "\"alpn_protocols\":[\"http/1.1\"]"};
	for (int i = 0; i < 2; i++) {
		char j[2048];
		snprintf(
		    j, sizeof(j),
		    "{\"name\":\"web\",\"type\":\"STATIC\",\"connect_timeout\":\"5s\","
		    "\"typed_extension_protocol_options\":{\"envoy.extensions.upstreams.http.v3."
		    "HttpProtocolOptions\":{\"@type\":\"type.googleapis.com/envoy.extensions."
		    "upstreams.http.v3.HttpProtocolOptions\",\"auto_config\":{}}},"
		    "\"load_assignment\":{\"cluster_name\":\"web\",\"endpoints\":[{\"lb_"
		    "endpoints\":[{\"endpoint\":{\"address\":{\"socket_address\":{\"address\":"
		    "\"198.18.0.10\",\"port_value\":8080}}}}]}]},\"transport_socket\":{\"name\":"
		    "\"tls\",\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions."
		    "transport_sockets.tls.v3.UpstreamTlsContext\",\"sni\":\"web.test\","
		    "\"common_tls_context\":{%s}}}}",
		    alpn[i]);
		apply(C, i ? "3" : "2", j);
		arn_http_poll(); /* the control lcore builds the cluster's TLS context */
		poll_ms(1);	 /* the worker takes the new generation */
		struct arn_tcp_conn *c = client();
		send_s(c, "GET /a HTTP/1.1\r\nHost: a\r\n\r\n");
		struct arn_tcp_conn *u = upstream_accepts();
		assert_true(u->tx_len > 5);
		assert_int_equal((unsigned char)u->tx[0], 0x16); /* a ClientHello */
		/* the ALPN extension's protocol list: 0x00 0x0c, "h2", "http/1.1" */
		static const char both[] = "\x00\x0c\x02h2\x08http/1.1";
		static const char h1[] = "\x00\x09\x08http/1.1";
		if (i == 0) {
			assert_non_null(memmem(u->tx, u->tx_len, both, sizeof(both) - 1));
		} else {
			assert_null(memmem(u->tx, u->tx_len, "\x02h2", 3));
			assert_non_null(memmem(u->tx, u->tx_len, h1, sizeof(h1) - 1));
		}
		upstream_closes(u, -ECONNRESET);
		poll_ms(1);
	}
}

/* ---- the filter table (http_filter.h) ------------------------------------------------------- */

static unsigned edit_calls;
static int two_edits(struct http_stream *stream, struct arn_h1_edit *e, unsigned cap)
{
	(void)stream;
	edit_calls++;
	if (cap < 2)
		return -ENOSPC;
	e[0].name_len = 1;
	e[1].name_len = 2;
	return 2;
}
static int one_edit(struct http_stream *stream, struct arn_h1_edit *e, unsigned cap)
{
	(void)stream;
	edit_calls++;
	if (cap < 1)
		return -ENOSPC;
	e[0].name_len = 3;
	return 1;
}

/* The HCM's response head and local replies take every filter's edits
 * through the table, in chain order, each filter given the room the ones
 * before it left; one that runs out of room fails the whole head. */
static void test_filter_table_resp_edits(void **state)
{
	(void)state;
	const struct http_filter_ops *const *was = http_filters;
	unsigned n_was = http_n_filters;
	static const struct http_filter_ops a = {.name = "a", .encode_head_edits = two_edits};
	static const struct http_filter_ops none = {.name = "none"};
	static const struct http_filter_ops b = {.name = "b", .encode_head_edits = one_edit};
	static const struct http_filter_ops *const chain[] = {&a, &none, &b};
	assert_int_equal(http_filters_set(chain, 3), 0);
	struct arn_h1_edit e[4];
	memset(e, 0, sizeof(e));
	edit_calls = 0;
	assert_int_equal(http_filters_resp_edits(NULL, e, 4), 3);
	assert_int_equal(edit_calls, 2); /* the filter without the hook is skipped */
	assert_int_equal(e[0].name_len, 1);
	assert_int_equal(e[1].name_len, 2);
	assert_int_equal(e[2].name_len, 3);
	assert_int_equal(http_filters_resp_edits(NULL, e, 2), -ENOSPC);
	/* more than the table holds, or a count without a table */
	assert_int_equal(http_filters_set(chain, HTTP_FILTERS_MAX + 1), -EINVAL);
	assert_int_equal(http_filters_set(NULL, 1), -EINVAL);
	assert_int_equal(http_filters_set(was, n_was), 0);
}

/* Whether any filter acts on a manager's streams is its configuration's
 * answer, one per runtime (http_hcm_rt.filters_idle): the router alone
 * leaves every filter idle; a health check, RBAC or local ratelimit filter,
 * the MCP gateway or grpc_stats wakes the table; a filter that cannot tell
 * (no active hook) is always taken as acting. */
static void test_filters_idle(void **state)
{
	(void)state;
	const struct http_filter_ops *const *was = http_filters;
	unsigned n_was = http_n_filters;
	static const struct http_filter_ops *const chain[] = {
	    &http_l4_filter_ops, &http_mcp_filter_ops, &http_grpc_stats_filter_ops};
	assert_int_equal(http_filters_set(chain, 3), 0);
	uint8_t router[] = {ARN_CFG_HF_ROUTER};
	struct arn_cfg_hcm h;
	memset(&h, 0, sizeof(h));
	h.http_filters = router;
	h.n_http_filters = 1;
	assert_true(http_filters_idle(&h));
	static const uint8_t kinds[] = {ARN_CFG_HF_HEALTH_CHECK, ARN_CFG_HF_RBAC,
					ARN_CFG_HF_LOCAL_RATELIMIT};
	for (size_t i = 0; i < sizeof(kinds); i++) {
		uint8_t two[] = {kinds[i], ARN_CFG_HF_ROUTER};
		h.http_filters = two;
		h.n_http_filters = 2;
		assert_false(http_filters_idle(&h));
	}
	h.http_filters = router;
	h.n_http_filters = 1;
	static const struct arn_cfg_mcp_filter gw;
	h.mcp_gateway = &gw;
	assert_false(http_filters_idle(&h));
	h.mcp_gateway = NULL;
	h.grpc_stats = true;
	assert_false(http_filters_idle(&h));
	h.grpc_stats = false;
	static const struct http_filter_ops any = {.name = "any"};
	static const struct http_filter_ops *const with_any[] = {&http_l4_filter_ops, &any};
	assert_int_equal(http_filters_set(with_any, 2), 0);
	assert_false(http_filters_idle(&h));
	assert_int_equal(http_filters_set(was, n_was), 0);
}

/* ---- the router's x-envoy-* headers (suppress_envoy_headers) --------------------------------- */

/* Listener "l" as jlistener() makes it, with the router's typed_config
 * members @p router (",..." or "") and an access log to @p log_path whose
 * line is the response's x-envoy-upstream-service-time as logged. */
static const char *jlistener_router(const char *router, const char *log_path, const char *routes)
{
	snprintf(
	    jbuf, sizeof(jbuf),
	    "{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
	    "\"port_value\":80}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","
	    "\"typed_config\":{" HCM_AT ",\"stat_prefix\":\"in\",\"generate_request_id\":false,"
	    "\"access_log\":[{\"name\":\"f\",\"typed_config\":{\"@type\":\"type.googleapis.com/"
	    "envoy.extensions.access_loggers.file.v3.FileAccessLog\",\"path\":\"%s\","
	    "\"log_format\":{\"text_format_source\":{\"inline_string\":"
	    "\"%%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)%% %%RESPONSE_CODE%%\\n\"}}}}],"
	    "\"route_config\":{\"name\":\"r\",\"virtual_hosts\":[{\"name\":\"vh\","
	    "\"domains\":[\"*\"],\"routes\":[%s]}]},\"http_filters\":[{\"name\":"
	    "\"envoy.filters.http.router\",\"typed_config\":{\"@type\":\"type.googleapis.com/"
	    "envoy.extensions.filters.http.router.v3.Router\"%s}}]}}]}]}",
	    log_path, routes, router);
	return jbuf;
}

/*
 * x-envoy-upstream-service-time as the client receives it, over HTTP/1.1
 * and HTTP/2: one line "x-envoy-upstream-service-time: 37" where the
 * upstream answered 37.4 ms after the request went to it (the clock moves
 * only there: the request has no body and its connection is made at
 * once, so the time since the request's end, Envoy's measure, is the same
 * 37), and the access log's %RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% gives
 * the same value. With the router's suppress_envoy_headers (Envoy's
 * router.proto: the router adds no x-envoy-* header of its own) neither it
 * nor x-envoy-expected-rq-timeout-ms goes out; without, the route's 3 s
 * timeout is announced upstream. The upstream's own headers pass either
 * way.
 */
static void test_service_time_line_wire_and_log(void **state)
{
	(void)state;
	char log_path[64], log[256];
	snprintf(log_path, sizeof(log_path), "/tmp/arn_test_hcm_svc.%d.log", (int)getpid());
	for (int h2 = 0; h2 < 2; h2++) {
		for (int sup = 0; sup < 2; sup++) {
			unlink(log_path);
			start(4, jlistener_router(
				     sup ? ",\"suppress_envoy_headers\":true" : "", log_path,
				     "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":"
				     "\"web\",\"timeout\":\"3s\"}}"));
			struct h2c k;
			struct arn_tcp_conn *c = NULL;
			int32_t id = 0;
			if (h2) {
				h2c_open(&k, 65535);
				id = h2c_request(&k, "GET", "/s", NULL, NULL, NULL);
				h2c_pump(&k);
			} else {
				c = client();
				send_s(c, "GET /s HTTP/1.1\r\nHost: a\r\n\r\n");
			}
			struct arn_tcp_conn *u = upstream_accepts();
			want_in(u->tx, "GET /s HTTP/1.1\r\n");
			if (sup) {
				want_not_in(u->tx, "x-envoy-expected-rq-timeout-ms");
			} else {
				want_in(u->tx, "\r\nx-envoy-expected-rq-timeout-ms: 3000\r\n");
				assert_int_equal(occurs(u->tx, "x-envoy-"), 1);
			}
			clock_set(now_us + 37400);
			/* without suppress_envoy_headers, an upstream's own
			 * service time is replaced by Arion's, on the wire and
			 * in the log alike */
			send_s(u,
			       sup ? "HTTP/1.1 200 OK\r\nx-up: 1\r\ncontent-length: 2\r\n\r\nhi"
				   : "HTTP/1.1 200 OK\r\nx-up: 1\r\nx-envoy-upstream-service-time: "
				     "999\r\ncontent-length: 2\r\n\r\nhi");
			const char *got;
			if (h2) {
				h2c_pump(&k);
				struct h2c_stream *x = h2c_find(&k, id);
				assert_true(x->closed);
				assert_int_equal(x->status, 200);
				assert_memory_equal(x->body, "hi", 2);
				got = x->hdrs; /* "name: value\n" a field, as decoded */
				want_in(got, "\nx-up: 1\n");
				if (!sup)
					want_in(got, "\nx-envoy-upstream-service-time: 37\n");
			} else {
				assert_true(answered(c, "HTTP/1.1 200 OK\r\n"));
				want_in(c->tx, "\r\n\r\nhi");
				got = c->tx;
				want_in(got, "\r\nx-up: 1\r\n");
				if (!sup)
					want_in(got, "\r\nx-envoy-upstream-service-time: 37\r\n");
			}
			if (sup)
				want_not_in(got, "x-envoy-");
			else
				assert_int_equal(occurs(got, "x-envoy-"), 1);
			read_access_log(log_path, log, sizeof(log));
			/* the value sent; with suppress_envoy_headers none was,
			 * and %RESP()% gives "-", as Envoy's */
			assert_string_equal(log, sup ? "- 200\n" : "37 200\n");
			if (h2)
				h2c_close(&k);
			teardown(NULL);
		}
	}
}

/* ---- the router's request edits and their header ids ------------------------------------ */

/*
 * The upstream request's head on the wire where the router edits
 * x-forwarded-for (appended at the edge), host (host_rewrite_literal),
 * expect (answered here, removed), x-envoy-original-path (prefix_rewrite)
 * and the x-envoy-* fields of an edge request: byte for byte the head
 * Arion sent before those edits carried their header ids (6c0a695), names
 * in any case replaced where their first line was.
 */
static void test_router_edited_head_on_the_wire(void **state)
{
	(void)state;
	snprintf(jbuf, sizeof(jbuf),
		 "{\"name\":\"l\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
		 "\"port_value\":80}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","
		 "\"typed_config\":{" HCM_AT
		 ",\"stat_prefix\":\"in\",\"generate_request_id\":false,"
		 "\"use_remote_address\":true,\"route_config\":{\"name\":\"r\",\"virtual_hosts\":[{"
		 "\"name\":\"vh\",\"domains\":[\"*\"],\"include_request_attempt_count\":true,"
		 "\"routes\":[{\"match\":{\"prefix\":\"/old\"},\"route\":{\"cluster\":\"web\","
		 "\"prefix_rewrite\":\"/new\",\"host_rewrite_literal\":\"b.test\","
		 "\"timeout\":\"3s\"}}]}]},\"http_filters\":[" ROUTER "]}}]}]}");
	start(4, jbuf);
	struct arn_tcp_conn *c = client();
	send_s(c,
	       "POST /old/x HTTP/1.1\r\nHost: a\r\nUser-Agent: t\r\nx-forwarded-FOR: 10.0.0.1\r\n"
	       "EXPECT: 100-continue\r\nX-Envoy-Original-Path: /forged\r\n"
	       "X-Envoy-Internal: true\r\nAccept: */*\r\nContent-Length: 3\r\n\r\nabc");
	struct arn_tcp_conn *u = upstream_accepts();
	poll_ms(1);
	assert_string_equal(u->tx, "POST /new/x HTTP/1.1\r\n"
				   "host: b.test\r\n"
				   "User-Agent: t\r\n"
				   "x-forwarded-FOR: 10.0.0.1,198.18.1.1\r\n"
				   "x-envoy-original-path: /old/x\r\n"
				   "Accept: */*\r\n"
				   "Content-Length: 3\r\n"
				   "x-forwarded-proto: http\r\n"
				   "x-envoy-external-address: 198.18.1.1\r\n"
				   "x-envoy-expected-rq-timeout-ms: 3000\r\n"
				   "x-envoy-attempt-count: 1\r\n"
				   "\r\n"
				   "abc");
	send_s(u, "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
	assert_true(answered(c, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"));
}

/*
 * auto_host_rewrite as Envoy's router does it (UpstreamRequest: the Host
 * becomes the chosen host's hostname only when it has one): an endpoint
 * without a hostname leaves the client's Host as it came (Arion used to
 * send the endpoint's address:port instead), one with a hostname
 * (LbEndpoint.endpoint.hostname) gets it. Both on the wire.
 */
static void auto_host_request(const char *want_host, const char *not_host)
{
	struct arn_tcp_conn *c = client();
	send_s(c, "GET /x HTTP/1.1\r\nHost: a.test\r\nAccept: */*\r\n\r\n");
	struct arn_tcp_conn *u = upstream_accepts();
	poll_ms(1);
	want_in(u->tx, want_host);
	want_not_in(u->tx, not_host);
	send_s(u, "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
	assert_true(answered(c, "HTTP/1.1 200 OK\r\n"));
}

#define AUTO_HOST_ROUTE                                                                            \
	"{\"match\":{\"prefix\":\"/"                                                               \
	"\"},\"route\":{\"cluster\":\"web\",\"auto_host_rewrite\":true}}"

static void test_auto_host_rewrite_without_hostname_keeps_host(void **state)
{
	(void)state;
	start(4, jlistener("\"generate_request_id\":false", AUTO_HOST_ROUTE));
	auto_host_request("\r\nHost: a.test\r\n", "198.18.0.10");
}

static void test_auto_host_rewrite_takes_the_endpoints_hostname(void **state)
{
	(void)state;
	start(4, jlistener("\"generate_request_id\":false", AUTO_HOST_ROUTE));
	apply(C, "2",
	      "{\"name\":\"web\",\"type\":\"STATIC\",\"connect_timeout\":\"5s\","
	      "\"load_assignment\":{\"cluster_name\":\"web\",\"endpoints\":[{\"lb_endpoints\":[{"
	      "\"endpoint\":{\"hostname\":\"web.internal\",\"address\":{\"socket_address\":{"
	      "\"address\":\"198.18.0.10\",\"port_value\":8080}}}}]}]}}");
	auto_host_request("\r\nhost: web.internal\r\n", "a.test");
}

/* append_x_forwarded_host through the router: the client's Host goes to
 * x-forwarded-host when the route rewrites Host (a literal, or auto's
 * hostname), and not when auto_host_rewrite finds no hostname (Host
 * stays as it came: nothing was rewritten). */
static void xfh_request(const char *req, const char *want_host, const char *want_xfh)
{
	struct arn_tcp_conn *c = client();
	send_s(c, req);
	struct arn_tcp_conn *u = upstream_accepts();
	poll_ms(1);
	want_in(u->tx, want_host);
	if (want_xfh)
		want_in(u->tx, want_xfh);
	else
		want_not_in(u->tx, "orwarded-host");
	send_s(u, "HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
	assert_true(answered(c, "HTTP/1.1 200 OK\r\n"));
}

static void test_append_x_forwarded_host_on_the_wire(void **state)
{
	(void)state;
	start(4, jlistener("\"generate_request_id\":false",
			   "{\"match\":{\"prefix\":\"/lit\"},\"route\":{\"cluster\":\"web\","
			   "\"host_rewrite_literal\":\"b.test\",\"append_x_forwarded_host\":true}},"
			   "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\","
			   "\"auto_host_rewrite\":true,\"append_x_forwarded_host\":true}}"));
	xfh_request("GET /lit HTTP/1.1\r\nHost: a.test\r\nX-Forwarded-Host: z.test\r\n\r\n",
		    "\r\nhost: b.test\r\n", "\r\nX-Forwarded-Host: z.test,a.test\r\n");
	/* auto_host_rewrite without a hostname: Host kept, nothing forwarded */
	xfh_request("GET /x HTTP/1.1\r\nHost: a.test\r\n\r\n", "\r\nHost: a.test\r\n", NULL);
	apply(C, "2",
	      "{\"name\":\"web\",\"type\":\"STATIC\",\"connect_timeout\":\"5s\","
	      "\"load_assignment\":{\"cluster_name\":\"web\",\"endpoints\":[{\"lb_endpoints\":[{"
	      "\"endpoint\":{\"hostname\":\"web.internal\",\"address\":{\"socket_address\":{"
	      "\"address\":\"198.18.0.10\",\"port_value\":8080}}}}]}]}}");
	xfh_request("GET /x HTTP/1.1\r\nHost: a.test\r\n\r\n", "\r\nhost: web.internal\r\n",
		    "\r\nx-forwarded-host: a.test\r\n");
}

struct parsed_req {
	struct arn_h1_parser p;
	struct arn_h1_msg m;
	struct arn_h1_header h[64];
};

/* @p text (a whole head) parsed into @p r, which refers to it. */
static void parse_req(struct parsed_req *r, const char *text)
{
	arn_h1_msg_init(&r->m, r->h, 64);
	arn_h1_parser_init(&r->p, ARN_H1_REQUEST, NULL, &r->m);
	struct arn_h1_ev ev;
	ssize_t n = arn_h1_parse(&r->p, text, strlen(text), &ev);
	if (n <= 0 || ev.type != ARN_H1_EV_HEAD)
		fail_msg("not a head (%zd): %s", n, text);
}

/* @p m's head fields with @p n edits @p e applied, as the upstream
 * request's HTTP/1 writer writes them, after a request line, into @p out. */
static void write_edited(const struct arn_h1_msg *m, const struct arn_h1_edit *e, int n, char *out,
			 size_t cap)
{
	struct arn_h1_wbuf wb;
	arn_h1_wbuf_init(&wb, out, (uint32_t)cap - 1, NULL, NULL);
	arn_h1_write_request_line(&wb, "GET", 3, "/", 1, 1);
	assert_int_equal(
	    arn_h1_write_headers(&wb, m, e, (unsigned)n, ARN_H1_W_DROP_HOP | ARN_H1_W_TE_TRAILERS),
	    0);
	arn_h1_write_end(&wb);
	assert_int_equal(wb.err, 0);
	out[wb.len] = 0;
}

/* The value of @p m's first field of id @p id, NUL-terminated in a
 * static buffer; NULL where @p m has none. */
static const char *value_of(const struct arn_h1_msg *m, enum arn_h1_hdr_id id)
{
	static char v[256];
	int i = arn_h1_find_id(m, id, 0);
	if (i < 0)
		return NULL;
	snprintf(v, sizeof(v), "%.*s", (int)m->hdrs[i].value_len, m->hdrs[i].value);
	return v;
}

/*
 * Every edit the router pushes for the upstream request carries its
 * name's header id (struct arn_h1_edit.id1): x-forwarded-for, host,
 * expect and x-envoy-original-path the ones arn_h1_hdr.def gives them (as
 * x-forwarded-proto and x-request-id had), the x-envoy-* names it lacks
 * ARN_H1_H_OTHER, so the HTTP/1 writer looks none of them up. An id other
 * than the lookup's would send the edit past the message's field of that
 * name (a second Host line, an Expect or a forged x-envoy-* kept). Two
 * requests that take every edit: an edge request from outside with an
 * X-Forwarded-For, and one from an internal peer without. The head
 * written with the ids is byte for byte the one written with them cleared
 * (the writer's lookup), and a parse of it finds each field by its id
 * with the router's value.
 */
static void test_router_edits_carry_header_ids(void **state)
{
	(void)state;
	static const struct {
		const char *head;
		uint32_t raddr;
		const char *xff; /* the x-forwarded-for sent */
	} rq[] = {
	    {"POST /old HTTP/1.1\r\nHost: a:80\r\nx-forwarded-FOR: 10.0.0.1\r\n"
	     "EXPECT: 100-continue\r\nX-Envoy-Original-Path: /forged\r\nx-envoy-internal: true\r\n"
	     "X-Envoy-Attempt-Count: 9\r\nContent-Length: 3\r\n\r\n",
	     0xc6120101u, "10.0.0.1,198.18.1.1"},
	    {"POST /old HTTP/1.1\r\nHOST: a:80\r\nExpect: 100-continue\r\n"
	     "x-envoy-original-path: /forged\r\nContent-Length: 3\r\n\r\n",
	     0x0a000001u, "10.0.0.1"},
	};
	struct arn_cfg_hcm h;
	memset(&h, 0, sizeof(h));
	h.use_remote_address = true;
	h.generate_request_id = true;
	h.internal_cfg = true; /* internal_address_config {}: RFC 1918 internal */
	struct arn_cfg_vhost vh;
	memset(&vh, 0, sizeof(vh));
	vh.include_request_attempt_count = true;
	static char text[HTTP_TEXT];
	for (unsigned r = 0; r < sizeof(rq) / sizeof(rq[0]); r++) {
		struct parsed_req in;
		parse_req(&in, rq[r].head);
		/* as the connection manager's head does (on_head) */
		if (in.m.flags & ARN_H1_F_PROXY_FIELDS)
			http_req_sanitize(&h, &in.m, rq[r].raddr, false);
		struct http_req_ctx x;
		memset(&x, 0, sizeof(x));
		x.hcm = &h;
		x.vhost = &vh;
		x.raddr = rq[r].raddr;
		x.rport = 40000;
		x.laddr = ARION;
		x.lport = 80;
		x.host = "b.test";
		x.host_len = 6;
		x.path_rewritten = true;
		x.timeout_ms = 3000;
		x.attempt = 2;
		x.rand_hi = 1;
		x.rand_lo = 2;
		x.text = text;
		x.text_cap = sizeof(text);
		struct arn_h1_edit e[ARN_H1_MAX_EDITS], e0[ARN_H1_MAX_EDITS];
		int n = http_req_edits(&x, &in.m, e, ARN_H1_MAX_EDITS);
		assert_true(n > 0);
		for (int i = 0; i < n; i++) {
			if (!e[i].id1)
				fail_msg("request %u: edit '%.*s' without its header id", r,
					 (int)e[i].name_len, e[i].name);
			assert_int_equal(e[i].id1 - 1, arn_h1_hdr_lookup(e[i].name, e[i].name_len));
			e0[i] = e[i];
			e0[i].id1 = 0;
		}
		static char with_ids[4096], looked_up[4096];
		write_edited(&in.m, e, n, with_ids, sizeof(with_ids));
		write_edited(&in.m, e0, n, looked_up, sizeof(looked_up));
		assert_string_equal(with_ids, looked_up);
		/* what the upstream parses finds the router's fields by id */
		struct parsed_req out;
		parse_req(&out, with_ids);
		assert_string_equal(value_of(&out.m, ARN_H1_H_HOST), "b.test");
		assert_int_equal(occurs(with_ids, "host: "), 1);
		want_not_in(with_ids, "a:80");
		assert_string_equal(value_of(&out.m, ARN_H1_H_X_FORWARDED_FOR), rq[r].xff);
		assert_string_equal(value_of(&out.m, ARN_H1_H_X_ENVOY_ORIGINAL_PATH), "/old");
		assert_null(value_of(&out.m, ARN_H1_H_EXPECT));
		assert_non_null(value_of(&out.m, ARN_H1_H_X_REQUEST_ID));
		want_in(with_ids, "\r\nx-envoy-attempt-count: 2\r\n");
		want_in(with_ids, "\r\nx-envoy-expected-rq-timeout-ms: 3000\r\n");
		want_not_in(with_ids, "forged");
		if (r == 0) {
			want_in(with_ids, "\r\nx-envoy-external-address: 198.18.1.1\r\n");
			want_not_in(with_ids, "nternal");
			want_not_in(with_ids, ": 9\r\n");
		} else {
			want_in(with_ids, "\r\nx-envoy-internal: true\r\n");
			want_not_in(with_ids, "external");
		}
	}
}

int main(void)
{
	char prefix[64];
	snprintf(prefix, sizeof(prefix), "--file-prefix=arn-t-hcm-%d", (int)getpid());
	char *argv[] = {
	    "test_http_hcm", "--no-huge", "--no-pci", "--no-shconf",	"-m",
	    "128",	     "-l",	  "0",	      "--no-telemetry", "--log-level=error",
	    prefix,	     NULL};
	if (rte_eal_init((int)(sizeof(argv) / sizeof(argv[0])) - 1, argv) < 0) {
		fprintf(stderr, "EAL init failed\n");
		return 1;
	}
	pool = rte_pktmbuf_pool_create("arn_t_hcm", 8191, 0, 0, 2176, 0);
	if (!pool) {
		fprintf(stderr, "no mbuf pool\n");
		return 1;
	}
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_filter_table_resp_edits),
	    cmocka_unit_test(test_filters_idle),
	    cmocka_unit_test_teardown(test_worker_ms_clock_ticks_at_the_boundary, teardown),
	    cmocka_unit_test_teardown(test_slow_heads_hold_no_buffer, teardown),
	    cmocka_unit_test_teardown(test_head_deadline_configured, teardown),
	    cmocka_unit_test_teardown(test_oversized_head_refused_at_once, teardown),
	    cmocka_unit_test_teardown(test_bare_cr_before_a_request_is_refused, teardown),
	    cmocka_unit_test_teardown(test_head_end_shapes, teardown),
	    cmocka_unit_test_teardown(test_connect_refused, teardown),
	    cmocka_unit_test_teardown(test_many_interim_responses, teardown),
	    cmocka_unit_test_teardown(test_response_connection_elements, teardown),
	    cmocka_unit_test_teardown(test_head_in_many_segments, teardown),
	    cmocka_unit_test_teardown(test_cluster_lookup_follows_generations, teardown),
	    cmocka_unit_test_teardown(test_buffer_wait_is_fifo, teardown),
	    cmocka_unit_test_teardown(test_buffer_wait_bounded_by_head_deadline, teardown),
	    cmocka_unit_test_teardown(test_path_rewrite_fails_closed, teardown),
	    cmocka_unit_test_teardown(test_regex_rewrite_to_nothing_refused, teardown),
	    cmocka_unit_test(test_request_edit_slots_fail_closed),
	    cmocka_unit_test(test_response_edits_fail_closed),
	    cmocka_unit_test(test_route_timeout_header_per_request),
	    cmocka_unit_test(test_route_edits_follow_new_generation),
	    cmocka_unit_test(test_resp_edits_substitute_like_envoy),
	    cmocka_unit_test(test_local_reply_edits_fail_closed),
	    cmocka_unit_test_teardown(test_require_tls_redirect_fails_closed, teardown),
	    cmocka_unit_test_teardown(test_new_endpoints_resolved_ahead, teardown),
	    cmocka_unit_test_teardown(test_one_changed_cluster_builds_one, teardown),
	    cmocka_unit_test_teardown(test_cluster_update_counters, teardown),
	    cmocka_unit_test_teardown(test_upstream_tcp_keepalive, teardown),
	    cmocka_unit_test_teardown(test_preserve_case_header_format, teardown),
	    cmocka_unit_test_teardown(test_kept_body_mbufs_option, teardown),
	    cmocka_unit_test_teardown(test_listener_tcp_keepalive, teardown),
	    cmocka_unit_test_teardown(test_per_host_max_connections, teardown),
	    cmocka_unit_test_teardown(test_mcp_sessions_answered_by_filter, teardown),
	    cmocka_unit_test_teardown(test_mcp_body_limit, teardown),
	    cmocka_unit_test_teardown(test_mcp_session_idle_timeout, teardown),
	    cmocka_unit_test_teardown(test_mcp_tools_through_backend, teardown),
	    cmocka_unit_test_teardown(test_mcp_backend_head_in_many_segments, teardown),
	    cmocka_unit_test_teardown(test_mcp_tool_stats_bounded, teardown),
	    cmocka_unit_test_teardown(test_mcp_denied_tool_and_backend_failure, teardown),
	    cmocka_unit_test_teardown(test_mcp_prompt_filter_and_template_read, teardown),
	    cmocka_unit_test_teardown(test_mcp_backend_get_stream, teardown),
	    cmocka_unit_test_teardown(test_mcp_backend_get_refused, teardown),
	    cmocka_unit_test_teardown(test_mcp_stateless_era, teardown),
	    cmocka_unit_test_teardown(test_mcp_session_client_stateless_backend, teardown),
	    cmocka_unit_test_teardown(test_mcp_idle_session_deletes_backend_sessions, teardown),
	    cmocka_unit_test_teardown(test_mcp_stateless_shared_backend_session, teardown),
	    cmocka_unit_test_teardown(test_mcp_delete_after_backend_learnt_stateless, teardown),
	    cmocka_unit_test_teardown(test_mcp_backend_session_follows_its_backend, teardown),
	    cmocka_unit_test_teardown(test_mcp_quiet_streamed_calls_hold_no_large_buffer, teardown),
	    cmocka_unit_test_teardown(test_mcp_session_unknown_to_another_toolset, teardown),
	    cmocka_unit_test_teardown(test_mcp_principal_header_named_by_many_rules, teardown),
	    cmocka_unit_test_teardown(test_mcp_principal_header_crowded_out, teardown),
	    cmocka_unit_test_teardown(test_mcp_session_across_workers, teardown),
	    cmocka_unit_test_teardown(test_mcp_detached_end_polled_next, teardown),
	    cmocka_unit_test_teardown(test_mcp_backend_list_changed_every_worker, teardown),
	    cmocka_unit_test(test_codec_goes_through_the_transport),
	    cmocka_unit_test(test_response_body_end_in_one_decode),
	    cmocka_unit_test(test_head_segment_to_pins),
	    cmocka_unit_test_teardown(test_response_body_joins_its_head, teardown),
	    cmocka_unit_test_teardown(test_cluster_turned_tls_reuses_no_plain_connection, teardown),
	    cmocka_unit_test_teardown(test_reused_connection_closed_replays_idempotent, teardown),
	    cmocka_unit_test_teardown(test_new_tls_cluster_context_before_sync, teardown),
	    cmocka_unit_test_teardown(test_new_cluster_counted_before_sync, teardown),
	    cmocka_unit_test_teardown(test_new_tls_chain_context_before_sync, teardown),
	    cmocka_unit_test(test_tls_transport_byte_at_a_time),
	    cmocka_unit_test(test_tls_transport_truncation),
	    cmocka_unit_test_teardown(test_h2_prior_knowledge_streams, teardown),
	    cmocka_unit_test_teardown(test_h2_codec_type, teardown),
	    cmocka_unit_test_teardown(test_h2_many_streams_upstream, teardown),
	    cmocka_unit_test_teardown(test_h2_to_h1_upstream, teardown),
	    cmocka_unit_test_teardown(test_h2_one_stream_no_wait, teardown),
	    cmocka_unit_test_teardown(test_h2_response_follows_client_window, teardown),
	    cmocka_unit_test_teardown(test_h2_request_follows_upstream, teardown),
	    cmocka_unit_test_teardown(test_h2_cookies_joined, teardown),
	    cmocka_unit_test_teardown(test_cookie_hash_policy_sets_cookie, teardown),
	    cmocka_unit_test_teardown(test_cookie_hash_policy_sets_cookie_h2, teardown),
	    cmocka_unit_test_teardown(test_h2_max_requests_goaway, teardown),
	    cmocka_unit_test_teardown(test_h2_client_reset, teardown),
	    cmocka_unit_test_teardown(test_h2_header_overflow, teardown),
	    cmocka_unit_test_teardown(test_h2_own_resets_not_client_resets, teardown),
	    cmocka_unit_test_teardown(test_h2_max_headers_count_capped, teardown),
	    cmocka_unit_test_teardown(test_h2_settings_entries_bounded, teardown),
	    cmocka_unit_test_teardown(test_h2_windows_capped, teardown),
	    cmocka_unit_test_teardown(test_h2_max_concurrent_streams, teardown),
	    cmocka_unit_test_teardown(test_h2_goaway_on_listener_update, teardown),
	    cmocka_unit_test_teardown(test_h2_bad_frames_close, teardown),
	    cmocka_unit_test_teardown(test_h2_grpc, teardown),
	    cmocka_unit_test_teardown(test_te_trailers_forwarded, teardown),
	    cmocka_unit_test_teardown(test_h2_grpc_stats, teardown),
	    cmocka_unit_test_teardown(test_h2_grpc_stats_local_replies_and_rows, teardown),
	    cmocka_unit_test_teardown(test_filters_disabled_until_a_route_names_them, teardown),
	    cmocka_unit_test_teardown(test_mcp_disabled_until_a_route_names_it, teardown),
	    cmocka_unit_test_teardown(test_h2_headers_with_underscores, teardown),
	    cmocka_unit_test_teardown(test_h2_non_relative_path_refused, teardown),
	    cmocka_unit_test_teardown(test_h2_authority_checked_as_host, teardown),
	    cmocka_unit_test_teardown(test_h2_stream_does_not_jump_the_buffer_queue, teardown),
	    cmocka_unit_test_teardown(test_h2_path_bytes_checked_as_target, teardown),
	    cmocka_unit_test_teardown(test_h2_rapid_reset, teardown),
	    cmocka_unit_test_teardown(test_h2_rapid_reset_no_error, teardown),
	    cmocka_unit_test_teardown(test_h2_zero_window_bounded, teardown),
	    cmocka_unit_test_teardown(test_h2_hpack_bomb, teardown),
	    cmocka_unit_test_teardown(test_h2_inbound_floods, teardown),
	    cmocka_unit_test_teardown(test_h2_continuation_flood, teardown),
	    cmocka_unit_test_teardown(test_h2_control_floods, teardown),
	    cmocka_unit_test_teardown(test_h2_goaway_on_healthcheck_fail, teardown),
	    cmocka_unit_test_teardown(test_h2_grpc_timeout, teardown),
	    cmocka_unit_test_teardown(test_uph2_request_trailers, teardown),
	    cmocka_unit_test_teardown(test_uph2_request_trailers_over_one_segment, teardown),
	    cmocka_unit_test_teardown(test_h2_request_trailers_bounded, teardown),
	    cmocka_unit_test_teardown(test_h2_trailer_overflow_rapid_reset, teardown),
	    cmocka_unit_test_teardown(test_h2_nghttp2_memory_bounded, teardown),
	    cmocka_unit_test_teardown(test_h2_trailers_own_budget, teardown),
	    cmocka_unit_test_teardown(test_h2_request_body_no_mbuf, teardown),
	    cmocka_unit_test_teardown(test_h2_early_response_resets_no_error_after_end, teardown),
	    cmocka_unit_test_teardown(test_h2_early_response_upstream_closes, teardown),
	    cmocka_unit_test_teardown(test_h2_early_response_upstream_closes_window, teardown),
	    cmocka_unit_test_teardown(test_h2_early_response_upstream_closes_no_mbuf, teardown),
	    cmocka_unit_test_teardown(test_h1_slow_reader_response_survives_upstream_close,
				      teardown),
	    cmocka_unit_test_teardown(test_h1_early_response_closes_after_it, teardown),
	    cmocka_unit_test_teardown(test_uph2_response_body_no_mbuf, teardown),
	    cmocka_unit_test_teardown(test_uph2_response_no_mbuf_is_local_reset, teardown),
	    cmocka_unit_test_teardown(test_uph2_no_mbuf_retry_ejects_no_host, teardown),
	    cmocka_unit_test_teardown(test_outlier_split_router_local_origin, teardown),
	    cmocka_unit_test_teardown(test_uph2_nghttp2_memory_bounded, teardown),
	    cmocka_unit_test_teardown(test_uph2_continuations_bounded, teardown),
	    cmocka_unit_test_teardown(test_h2_response_trailers_no_mbuf, teardown),
	    cmocka_unit_test_teardown(test_h2_request_trailers_h1_upstream, teardown),
	    cmocka_unit_test_teardown(test_h1_client_response_trailers, teardown),
	    cmocka_unit_test_teardown(test_h1_request_trailers_own_budget, teardown),
	    cmocka_unit_test_teardown(test_h1_response_trailers_own_budget, teardown),
	    cmocka_unit_test_teardown(test_uph2_grpc_status_after_a_large_head, teardown),
	    cmocka_unit_test_teardown(test_trailer_arrays_exhausted, teardown),
	    cmocka_unit_test_teardown(test_trailers_over_the_budget, teardown),
	    cmocka_unit_test_teardown(test_trailers_after_head_in_many_segments, teardown),
	    cmocka_unit_test_teardown(test_h1_request_trailers_with_underscores, teardown),
	    cmocka_unit_test_teardown(test_uph2_streams_share_connections, teardown),
	    cmocka_unit_test_teardown(test_uph2_slow_client_holds_window, teardown),
	    cmocka_unit_test_teardown(test_uph2_reset_and_goaway, teardown),
	    cmocka_unit_test_teardown(test_uph2_idle_timeout, teardown),
	    cmocka_unit_test_teardown(test_uph2_pending_takes_freed_place, teardown),
	    cmocka_unit_test_teardown(test_stray_bytes_never_answer_a_waiting_request, teardown),
	    cmocka_unit_test_teardown(test_route_timeout_runs_while_the_attempt_waits, teardown),
	    cmocka_unit_test_teardown(test_long_cluster_name_keeps_its_connections, teardown),
	    cmocka_unit_test_teardown(test_waiting_request_never_takes_a_connection_of_another_tls,
				      teardown),
	    cmocka_unit_test_teardown(test_partial_tls_record_never_answers_a_waiting_request,
				      teardown),
	    cmocka_unit_test_teardown(test_access_log_start_time_is_the_streams_start, teardown),
	    cmocka_unit_test_teardown(test_access_log_omit_empty_values, teardown),
	    cmocka_unit_test_teardown(test_breaker_max_requests_refuses_the_next, teardown),
	    cmocka_unit_test_teardown(test_breaker_gauges_follow_the_counts, teardown),
	    cmocka_unit_test_teardown(test_breaker_counts_routed_requests_against_sub_requests,
				      teardown),
	    cmocka_unit_test_teardown(test_sub_request_picks_from_the_worker_cache, teardown),
	    cmocka_unit_test_teardown(test_uph2_stat_streams_active, teardown),
	    cmocka_unit_test_teardown(test_outlier_interval_visits_only_its_clusters, teardown),
	    cmocka_unit_test_teardown(test_uph2_stat_rx_reset, teardown),
	    cmocka_unit_test_teardown(test_ring_hash_clipped_is_counted, teardown),
	    cmocka_unit_test_teardown(test_uph2_stat_tx_reset, teardown),
	    cmocka_unit_test_teardown(test_uph2_stat_header_overflow, teardown),
	    cmocka_unit_test_teardown(test_uph2_stat_trailers, teardown),
	    cmocka_unit_test_teardown(test_uph2_stat_rx_messaging_error, teardown),
	    cmocka_unit_test_teardown(test_uph2_stat_outbound_control_flood, teardown),
	    cmocka_unit_test_teardown(test_h2_keepalive_interval, teardown),
	    cmocka_unit_test_teardown(test_h2_keepalive_extended_by_rx, teardown),
	    cmocka_unit_test_teardown(test_h2_frame_lost_out_of_mbufs_closes, teardown),
	    cmocka_unit_test_teardown(test_uph2_keepalive_interval, teardown),
	    cmocka_unit_test_teardown(test_uph2_keepalive_idle_interval, teardown),
	    cmocka_unit_test_teardown(test_uph2_keepalive_extended_by_rx, teardown),
	    cmocka_unit_test_teardown(test_auto_config_offers_h2_and_http11, teardown),
	    cmocka_unit_test_teardown(test_tls_table_follows_the_changed_cluster, teardown),
	    cmocka_unit_test_teardown(test_tls_carried_context_keeps_its_cluster, teardown),
	    cmocka_unit_test_teardown(test_cluster_trie_follows_random_changes, teardown),
	    cmocka_unit_test_teardown(test_service_time_line_wire_and_log, teardown),
	    cmocka_unit_test_teardown(test_router_edited_head_on_the_wire, teardown),
	    cmocka_unit_test_teardown(test_auto_host_rewrite_without_hostname_keeps_host, teardown),
	    cmocka_unit_test_teardown(test_append_x_forwarded_host_on_the_wire, teardown),
	    cmocka_unit_test_teardown(test_auto_host_rewrite_takes_the_endpoints_hostname,
				      teardown),
	    cmocka_unit_test(test_router_edits_carry_header_ids),
	    cmocka_unit_test_teardown(test_tsm_endpoint_takes_its_match, teardown),
	    cmocka_unit_test_teardown(test_tsm_secret_rotates_its_match_only, teardown),
	};
	if (getenv("TEST_FILTER")) /* one test by name (a glob), e.g. while bisecting */
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	rte_mempool_free(pool);
	rte_eal_cleanup();
	return rc;
}
