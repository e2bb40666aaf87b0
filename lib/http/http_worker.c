/*
 * The HTTP proxy's per-worker state: object pools (connections, upstream
 * connections, per-stream buffers), the timer wheel, listeners that follow
 * the configuration generations, owned input and pending output helpers,
 * and the module glue with lib/tcp (arn_tcp_app_register).
 *
 * Everything is allocated in worker_init (start-up, before traffic) and
 * reused; the fast path allocates nothing but mbufs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "arn_config.h"
#include "arn_l4.h"
#include "arn_log.h"
#include "arn_net.h"
#include "arn_tcp.h"
#include "http_int.h"

static struct arn_config_store *g_store;
static uint32_t cfg_conns = 16384, cfg_ups = 8192, cfg_res = 1024;

/* ---- small services ------------------------------------------------------------ */

uint64_t http_rand(struct http_worker *w)
{
	/* xorshift128+: fast, per worker, good enough for balancing and ids */
	uint64_t s1 = w->rng[0];
	const uint64_t s0 = w->rng[1];
	w->rng[0] = s0;
	s1 ^= s1 << 23;
	w->rng[1] = s1 ^ s0 ^ (s1 >> 17) ^ (s0 >> 26);
	return w->rng[1] + s0;
}

const char *http_date(struct http_worker *w, uint32_t *len)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	if (ts.tv_sec != w->date_sec) {
		struct tm tm;
		gmtime_r(&ts.tv_sec, &tm);
		w->date_len =
		    (uint32_t)strftime(w->date, sizeof(w->date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
		w->date_sec = ts.tv_sec;
	}
	*len = w->date_len;
	return w->date;
}

uint64_t http_tsc(struct http_worker *w)
{
	return arn_net_now(w->lc);
}

struct http_res *http_res_get(struct http_worker *w)
{
	struct http_res *r = w->res_free;
	if (r)
		w->res_free = r->next;
	return r;
}

char *http_big_get(struct http_worker *w)
{
	char **b = w->big_free;
	if (b)
		w->big_free = (char **)*b;
	return (char *)b;
}

static void big_put(struct http_worker *w, char *b)
{
	if (!b)
		return;
	*(char ***)(void *)b = w->big_free;
	w->big_free = (char **)(void *)b;
}

void http_res_wait(struct http_worker *w, struct http_conn *hc)
{
	if (hc->res_waiting)
		return;
	hc->res_waiting = true;
	hc->wnext = NULL;
	hc->wprev = w->res_wait_tail;
	if (w->res_wait_tail)
		w->res_wait_tail->wnext = hc;
	else
		w->res_wait_head = hc;
	w->res_wait_tail = hc;
}

void http_res_unwait(struct http_worker *w, struct http_conn *hc)
{
	if (!hc->res_waiting)
		return;
	hc->res_waiting = false;
	if (hc->wprev)
		hc->wprev->wnext = hc->wnext;
	else
		w->res_wait_head = hc->wnext;
	if (hc->wnext)
		hc->wnext->wprev = hc->wprev;
	else
		w->res_wait_tail = hc->wprev;
	hc->wnext = hc->wprev = NULL;
}

struct http_res *http_res_take(struct http_worker *w, struct http_conn *hc)
{
	/* a buffer freed while others wait is theirs, oldest first (the poll
	 * hands it on): a newcomer, or a connection whose data arrived at the
	 * right moment, never jumps the queue */
	struct http_res *r = NULL;
	if (!w->res_wait_head || w->res_wait_head == hc)
		r = http_res_get(w);
	if (r)
		http_res_unwait(w, hc);
	else
		http_res_wait(w, hc);
	return r;
}

/* Requests that waited for an http_res go on, oldest first, while there
 * are free ones (run from the poll, never from inside another stream). */
static void res_waiters_run(struct http_worker *w)
{
	unsigned n = 0;
	while (w->res_free && w->res_wait_head && n++ < 64) {
		struct http_conn *hc = w->res_wait_head;
		http_dc_pump(hc);
		/* still first in line: it wants no buffer now (it is closing,
		 * or went away); the next one's turn */
		if (w->res_wait_head == hc)
			http_res_unwait(w, hc);
	}
}

void http_res_put(struct http_worker *w, struct http_res *r)
{
	if (!r)
		return;
	big_put(w, r->big_req);
	big_put(w, r->big_resp);
	r->big_req = r->big_resp = NULL;
	r->next = w->res_free;
	w->res_free = r;
}

struct rte_mbuf *http_mbuf(struct http_worker *w)
{
	return arn_net_alloc(w->lc);
}

/* ---- timers ------------------------------------------------------------------------ */

static void tlist_init(struct http_timer *h)
{
	h->next = h->prev = h;
}

void http_timer_cancel(struct http_timer *t)
{
	if (!t->armed)
		return;
	t->prev->next = t->next;
	t->next->prev = t->prev;
	t->next = t->prev = NULL;
	t->armed = false;
}

void http_timer_arm(struct http_worker *w, struct http_timer *t, uint64_t delay_ms)
{
	http_timer_cancel(t);
	if (delay_ms == 0)
		delay_ms = 1;
	t->due_ms = w->now_ms + delay_ms;
	struct http_timer *h = &w->wheel[t->due_ms & (HTTP_WHEEL - 1)];
	t->next = h->next;
	t->prev = h;
	h->next->prev = t;
	h->next = t;
	t->armed = true;
}

static void timers_run(struct http_worker *w)
{
	if (w->now_ms - w->wheel_ms > HTTP_WHEEL)
		w->wheel_ms = w->now_ms - HTTP_WHEEL;
	while (w->wheel_ms < w->now_ms) {
		w->wheel_ms++;
		struct http_timer *h = &w->wheel[w->wheel_ms & (HTTP_WHEEL - 1)];
		/* detach the slot's list first: callbacks may arm timers into it */
		struct http_timer tmp;
		if (h->next == h)
			continue;
		tmp.next = h->next;
		tmp.prev = h->prev;
		tmp.next->prev = &tmp;
		tmp.prev->next = &tmp;
		tlist_init(h);
		while (tmp.next != &tmp) {
			struct http_timer *t = tmp.next;
			t->prev->next = t->next;
			t->next->prev = t->prev;
			t->armed = false;
			if (t->due_ms > w->wheel_ms) {
				/* a later round: back into its slot */
				struct http_timer *s = &w->wheel[t->due_ms & (HTTP_WHEEL - 1)];
				t->next = s->next;
				t->prev = s;
				s->next->prev = t;
				s->next = t;
				t->armed = true;
				continue;
			}
			t->next = t->prev = NULL;
			t->fn(t);
		}
	}
}

/* ---- owned input --------------------------------------------------------------------- */

static void seg_free(struct rte_mbuf *m)
{
	m->next = NULL;
	m->nb_segs = 1;
	rte_pktmbuf_free_seg(m);
}

void http_in_append(struct http_in *in, struct rte_mbuf *chain)
{
	while (chain) {
		struct rte_mbuf *m = chain;
		chain = m->next;
		m->next = NULL;
		m->nb_segs = 1;
		m->pkt_len = m->data_len;
		if (m->data_len == 0) {
			rte_pktmbuf_free_seg(m);
			continue;
		}
		in->bytes += m->data_len;
		/* A small segment joins the tail's free room: bytes before it do
		 * not move (slices stay valid), and a head typed or trickled a few
		 * bytes at a time does not pin one mbuf per byte. */
		struct rte_mbuf *t = in->tail;
		if (t && RTE_MBUF_DIRECT(t) && rte_mbuf_refcnt_read(t) == 1 &&
		    rte_pktmbuf_tailroom(t) >= m->data_len && m->data_len <= 512) {
			memcpy(rte_pktmbuf_mtod_offset(t, char *, t->data_len),
			       rte_pktmbuf_mtod(m, char *), m->data_len);
			t->data_len = (uint16_t)(t->data_len + m->data_len);
			t->pkt_len = t->data_len;
			rte_pktmbuf_free_seg(m);
			continue;
		}
		if (in->tail)
			in->tail->next = m;
		else
			in->head = m;
		in->tail = m;
	}
}

void http_in_free(struct http_in *in)
{
	struct rte_mbuf *m = in->head;
	while (m) {
		struct rte_mbuf *n = m->next;
		seg_free(m);
		m = n;
	}
	memset(in, 0, sizeof(*in));
}

/* Drop the input's first byte. */
static void in_drop1(struct http_in *in)
{
	struct rte_mbuf *m = in->head;
	in->off++;
	in->bytes--;
	if (in->off == m->data_len) {
		in->head = m->next;
		if (!in->head)
			in->tail = NULL;
		in->off = 0;
		seg_free(m);
	}
}

bool http_in_skip_empty_lines(struct http_in *in)
{
	for (;;) {
		struct rte_mbuf *m = in->head;
		if (!m)
			return false;
		if (in->off == m->data_len) {
			in->head = m->next;
			if (!in->head)
				in->tail = NULL;
			in->off = 0;
			seg_free(m);
			continue;
		}
		const char *p = rte_pktmbuf_mtod_offset(m, const char *, in->off);
		if (p[0] == '\n') {
			in_drop1(in);
			continue;
		}
		if (p[0] != '\r')
			return true;
		/* CR: an empty line only with its LF (a bare CR is the parser's
		 * to refuse), which may not be here yet */
		const char *q = in->off + 1 < m->data_len ? p + 1
				: m->next		  ? rte_pktmbuf_mtod(m->next, const char *)
							  : NULL;
		if (!q)
			return false;
		if (*q != '\n')
			return true;
		in_drop1(in);
		in_drop1(in);
	}
}

uint32_t http_in_fill(struct http_in *in, struct arn_tcp_conn *tc)
{
	if (!tc)
		return 0;
	uint32_t pend = arn_tcp_rx_pending(tc);
	if (pend == 0 || in->bytes >= HTTP_IN_MAX)
		return 0;
	uint32_t n = RTE_MIN(pend, HTTP_IN_MAX - in->bytes);
	/* whole mbufs are cheapest: take everything when it fits */
	if (pend - n < 2048 && pend <= 2 * HTTP_IN_MAX)
		n = pend;
	struct rte_mbuf *m = arn_tcp_rx_take(tc, n);
	if (!m)
		return 0;
	uint32_t got = m->pkt_len;
	http_in_append(in, m);
	return got;
}

void http_pins_add(struct http_pins *p, struct rte_mbuf *m)
{
	if (p->n && p->seg[p->n - 1] == m)
		return;
	for (unsigned i = 0; i < p->n; i++)
		if (p->seg[i] == m)
			return;
	if (p->n == HTTP_PIN_MAX) {
		p->overflow = true;
		return;
	}
	rte_mbuf_refcnt_update(m, 1);
	p->seg[p->n++] = m;
}

void http_pins_release(struct http_pins *p)
{
	for (unsigned i = 0; i < p->n; i++)
		rte_pktmbuf_free_seg(p->seg[i]);
	p->n = 0;
	p->overflow = false;
}

ssize_t http_in_parse(struct http_in *in, struct arn_h1_parser *p, struct arn_h1_ev *ev,
		      struct http_pins *pins, bool pin)
{
	while (in->head) {
		struct rte_mbuf *m = in->head;
		uint32_t avail = m->data_len - in->off;
		if (avail == 0) {
			in->head = m->next;
			if (!in->head)
				in->tail = NULL;
			in->off = 0;
			seg_free(m);
			continue;
		}
		const char *b = rte_pktmbuf_mtod_offset(m, const char *, in->off);
		if (pin && pins)
			http_pins_add(pins, m);
		ssize_t n = arn_h1_parse(p, b, avail, ev);
		if (n == ARN_AGAIN) {
			in->off = m->data_len;
			in->bytes -= avail;
			continue;
		}
		if (n < 0)
			return n;
		in->off += (uint32_t)n;
		in->bytes -= (uint32_t)n;
		return n;
	}
	/* no input left, but the parser may still owe an event that needs no
	 * byte (END after a head without body, or after the last body byte) */
	return arn_h1_parse(p, "", 0, ev);
}

/* ---- output --------------------------------------------------------------------------- */

bool http_out_busy(const struct http_out *o)
{
	return o->chain || o->stage_len || o->data_len;
}

void http_out_reset(struct http_out *o)
{
	if (o->chain)
		rte_pktmbuf_free(o->chain);
	memset(o, 0, sizeof(*o));
}

int http_out_flush(struct http_out *o, struct arn_tcp_conn *tc)
{
	if (!tc)
		return -ENOTCONN;
	if (o->chain) {
		int rc = arn_tcp_write_mbuf(tc, o->chain);
		if (rc == -EAGAIN)
			return -EAGAIN;
		if (rc < 0) {
			rte_pktmbuf_free(o->chain);
			o->chain = NULL;
			return rc;
		}
		o->chain = NULL;
	}
	while (o->stage_len) {
		int n = arn_tcp_write(tc, o->stage + o->stage_off, o->stage_len);
		if (n < 0)
			return n;
		if (n == 0)
			return -EAGAIN;
		o->stage_off = (uint8_t)(o->stage_off + n);
		o->stage_len = (uint8_t)(o->stage_len - n);
	}
	o->stage_off = 0;
	while (o->data_len) {
		int n = arn_tcp_write(tc, o->data, o->data_len);
		if (n < 0)
			return n;
		if (n == 0)
			return -EAGAIN;
		o->data += n;
		o->data_len -= (uint32_t)n;
	}
	return 0;
}

static int wchain_refill(struct arn_h1_wbuf *wb)
{
	struct http_wchain *c = wb->arg;
	struct rte_mbuf *m = http_mbuf(c->w);
	if (!m)
		return -ENOBUFS;
	if (c->tail) {
		c->tail->data_len = (uint16_t)wb->len;
		c->tail->next = m;
	} else {
		c->head = m;
	}
	c->tail = m;
	wb->p = rte_pktmbuf_mtod(m, char *);
	wb->len = 0;
	wb->cap = rte_pktmbuf_tailroom(m);
	return 0;
}

void http_wchain_init(struct http_wchain *c, struct http_worker *w)
{
	memset(c, 0, sizeof(*c));
	c->w = w;
	arn_h1_wbuf_init(&c->wb, NULL, 0, wchain_refill, c);
}

struct rte_mbuf *http_wchain_finish(struct http_wchain *c)
{
	if (c->wb.err || !c->head) {
		if (c->head)
			rte_pktmbuf_free(c->head);
		c->head = NULL;
		return NULL;
	}
	c->tail->data_len = (uint16_t)c->wb.len;
	uint32_t total = 0;
	uint16_t segs = 0;
	for (struct rte_mbuf *m = c->head; m; m = m->next) {
		total += m->data_len;
		segs++;
	}
	c->head->pkt_len = total;
	c->head->nb_segs = segs;
	struct rte_mbuf *h = c->head;
	c->head = c->tail = NULL;
	return h;
}

/* ---- listeners follow the configuration ---------------------------------------- */

struct lsn_walk {
	struct http_worker *w;
};

static void want_listener(void *ctx, const struct arn_cfg_listener *l)
{
	struct http_worker *w = ((struct lsn_walk *)ctx)->w;
	int free_slot = -1;
	for (int i = 0; i < HTTP_LISTENERS_MAX; i++) {
		struct http_wlistener *x = &w->lsn[i];
		if (x->used && x->addr == l->addr && x->port == l->port) {
			x->seen = true;
			return;
		}
		if (!x->used && free_slot < 0)
			free_slot = i;
	}
	if (free_slot < 0) {
		if (w->idx == 0)
			ARN_ERR(HTTP, "listener '%s': more than %d listeners; not opened",
				l->obj.name, HTTP_LISTENERS_MAX);
		return;
	}
	int err = 0;
	struct arn_tcp_listen_opts o = {.backlog = l->backlog};
	struct arn_tcp_listener *tl =
	    arn_tcp_listen(w->lc, l->addr, l->port, &http_dc_ops, w, &o, &err);
	if (!tl) {
		if (w->idx == 0)
			ARN_ERR(HTTP, "listener '%s': cannot listen on %u.%u.%u.%u:%u: %s",
				l->obj.name, l->addr >> 24, (l->addr >> 16) & 255,
				(l->addr >> 8) & 255, l->addr & 255, l->port, strerror(-err));
		return;
	}
	struct http_wlistener *x = &w->lsn[free_slot];
	x->used = x->seen = true;
	x->addr = l->addr;
	x->port = l->port;
	x->tl = tl;
	if (w->idx == 0)
		ARN_INFO(HTTP, "listener '%s' on %u.%u.%u.%u:%u", l->obj.name, l->addr >> 24,
			 (l->addr >> 16) & 255, (l->addr >> 8) & 255, l->addr & 255, l->port);
}

static void listeners_sync(struct http_worker *w, const struct arn_cfg_gen *g)
{
	for (int i = 0; i < HTTP_LISTENERS_MAX; i++)
		w->lsn[i].seen = false;
	struct lsn_walk lw = {w};
	arn_cfg_listener_foreach(g, want_listener, &lw);
	for (int i = 0; i < HTTP_LISTENERS_MAX; i++) {
		struct http_wlistener *x = &w->lsn[i];
		if (x->used && !x->seen) {
			/* Envoy stops accepting at once; accepted connections drain */
			arn_tcp_unlisten(w->lc, x->tl);
			if (w->idx == 0)
				ARN_INFO(HTTP, "stopped listening on %u.%u.%u.%u:%u", x->addr >> 24,
					 (x->addr >> 16) & 255, (x->addr >> 8) & 255, x->addr & 255,
					 x->port);
			memset(x, 0, sizeof(*x));
		}
	}
}

/* ---- module hooks ---------------------------------------------------------------------- */

void http_conns_shutdown(struct http_worker *w);

/* A per-worker array: cache-line aligned, and zeroed here, on the worker's
 * own lcore, so that its pages are placed on the worker's NUMA socket
 * (first touch), as lib/tcp places its connection blocks. */
static void *worker_array(size_t n, size_t size)
{
	size_t bytes = RTE_ALIGN_CEIL(n * size, RTE_CACHE_LINE_SIZE);
	void *p = aligned_alloc(RTE_CACHE_LINE_SIZE, bytes ? bytes : RTE_CACHE_LINE_SIZE);
	if (p)
		memset(p, 0, bytes);
	return p;
}

static void worker_free(struct http_worker *w)
{
	free(w->conns);
	free(w->ups);
	free(w->res_mem);
	free(w->big_mem);
	free(w->pools);
	rte_free(w);
}

static struct arn_tcp_app http_app;

static int worker_init(struct arn_lcore *lc, void *arg)
{
	(void)arg;
	unsigned idx = arn_net_worker_index(lc);
	/* on the worker's NUMA socket, cache aligned; found again through the
	 * TCP worker (arn_tcp_app_state), never through a global array */
	struct http_worker *w = rte_zmalloc_socket("arn_http_worker", sizeof(*w),
						   RTE_CACHE_LINE_SIZE, (int)rte_socket_id());
	if (!w)
		return -ENOMEM;
	w->lc = lc;
	w->idx = idx;
	w->slot = ARN_STATS_SLOT_WORKER(idx);
	w->store = g_store;
	w->hz = arn_net_hz();
	w->tsc_per_ms = w->hz / 1000 ? w->hz / 1000 : 1;
	w->tsc_per_us = w->hz / 1000000 ? w->hz / 1000000 : 1;
	w->now_ms = arn_net_now(lc) / w->tsc_per_ms;
	w->wheel_ms = w->now_ms;
	for (int i = 0; i < HTTP_WHEEL; i++)
		tlist_init(&w->wheel[i]);
	if (getrandom(w->rng, sizeof(w->rng), 0) != (ssize_t)sizeof(w->rng)) {
		w->rng[0] = rte_rdtsc() ^ ((uint64_t)getpid() << 32);
		w->rng[1] = ~w->rng[0] * 0x9e3779b97f4a7c15ull;
	}
	w->rng[0] |= 1;
	w->n_conns = cfg_conns;
	w->n_ups = cfg_ups;
	w->n_res = cfg_res;
	w->conns = worker_array(w->n_conns, sizeof(*w->conns));
	w->ups = worker_array(w->n_ups, sizeof(*w->ups));
	w->res_mem = worker_array(w->n_res, sizeof(*w->res_mem));
	w->pools = worker_array(HTTP_POOLS, sizeof(*w->pools));
	w->big_mem = worker_array(HTTP_BIG_SCRATCH_N, HTTP_BIG_SCRATCH);
	if (!w->conns || !w->ups || !w->res_mem || !w->pools || !w->big_mem) {
		ARN_ERR(HTTP, "worker %u: out of memory for the HTTP pools", idx);
		worker_free(w);
		return -ENOMEM;
	}
	int rc = arn_tcp_app_set_state(lc, &http_app, w);
	if (rc != 0) {
		worker_free(w);
		return rc;
	}
	for (uint32_t i = w->n_conns; i-- > 0;) {
		w->conns[i].next = w->conn_free;
		w->conn_free = &w->conns[i];
	}
	for (uint32_t i = w->n_ups; i-- > 0;) {
		w->ups[i].next = w->up_free;
		w->up_free = &w->ups[i];
	}
	for (uint32_t i = w->n_res; i-- > 0;) {
		w->res_mem[i].next = w->res_free;
		w->res_free = &w->res_mem[i];
	}
	for (uint32_t i = HTTP_BIG_SCRATCH_N; i-- > 0;)
		big_put(w, w->big_mem + (size_t)i * HTTP_BIG_SCRATCH);
	if (g_store) {
		const struct arn_cfg_gen *g = arn_config_gen(g_store);
		listeners_sync(w, g);
		w->gen_id = arn_cfg_gen_id(g);
		w->gen_seen = true;
	}
	return 0;
}

static void worker_poll(struct arn_lcore *lc, void *arg)
{
	(void)arg;
	struct http_worker *w = arn_tcp_app_state(lc, &http_app);
	if (!w)
		return;
	uint64_t ms = arn_net_now(lc) / w->tsc_per_ms;
	if (ms > w->now_ms)
		w->now_ms = ms;
	if (w->res_wait_head && w->res_free)
		res_waiters_run(w);
	if (w->wheel_ms != w->now_ms)
		timers_run(w);
	if (g_store) {
		const struct arn_cfg_gen *g = arn_config_gen(g_store);
		uint64_t id = arn_cfg_gen_id(g);
		if (id != w->gen_id || !w->gen_seen) {
			listeners_sync(w, g);
			http_pools_sweep(w, g);
			w->gen_id = id;
			w->gen_seen = true;
		}
	}
}

static void worker_fini(struct arn_lcore *lc, void *arg)
{
	(void)arg;
	struct http_worker *w = arn_tcp_app_state(lc, &http_app);
	if (!w)
		return;
	http_conns_shutdown(w);
	http_pools_close_all(w);
	for (int i = 0; i < HTTP_LISTENERS_MAX; i++)
		if (w->lsn[i].used)
			arn_tcp_unlisten(lc, w->lsn[i].tl);
	arn_tcp_app_set_state(lc, &http_app, NULL);
	worker_free(w);
}

static struct arn_tcp_app http_app = {
    .name = "http",
    .worker_init = worker_init,
    .worker_poll = worker_poll,
    .worker_fini = worker_fini,
};

int arn_http_start(struct arn_config_store *s, const struct arn_http_options *o)
{
	g_store = s;
	if (o) {
		if (o->max_connections)
			cfg_conns = o->max_connections;
		if (o->max_upstream_connections)
			cfg_ups = o->max_upstream_connections;
		if (o->max_streams)
			cfg_res = o->max_streams;
	}
	int rc = http_rt_init(s);
	if (rc)
		return rc;
	rc = arn_tcp_app_register(&http_app);
	if (rc) {
		ARN_ERR(HTTP, "cannot register with the TCP stack: %s", strerror(-rc));
		http_rt_fini();
	}
	return rc;
}

void arn_http_poll(void)
{
	if (g_store)
		http_rt_sync(g_store);
}

void arn_http_stop(void)
{
	http_rt_fini();
	g_store = NULL;
}
