/*
 * The services every part of the proxy uses on its worker (http_worker.h):
 * random numbers, the Date value, the clock, mbufs, the per-stream buffers
 * and the large scratch buffers, and the timer wheel.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include <rte_mbuf.h>

#include "arn_l4.h"
#include "arn_net.h"
#include "http_int.h"

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

void http_big_put(struct http_worker *w, char *b)
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

void http_res_put(struct http_worker *w, struct http_res *r)
{
	if (!r)
		return;
	http_big_put(w, r->big_req);
	http_big_put(w, r->big_resp);
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

void http_timers_run(struct http_worker *w)
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

void http_timers_init(struct http_worker *w)
{
	w->wheel_ms = w->now_ms;
	for (int i = 0; i < HTTP_WHEEL; i++)
		tlist_init(&w->wheel[i]);
}
