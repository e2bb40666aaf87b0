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
#include "http_worker.h"

/* ---- small services ------------------------------------------------------------ */

uint64_t *http_lb_rr_probe(struct http_worker *w, uint64_t key)
{
	key |= 1;
	for (unsigned i = 0; i < HTTP_LB_SLOTS; i++) {
		struct http_lb_state *s = &w->lb[(key + i) & (HTTP_LB_SLOTS - 1)];
		if (s->key == key)
			return &s->rr;
		if (s->key == 0) {
			s->key = key;
			s->rr = 0;
			return &s->rr;
		}
	}
	return NULL;
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
