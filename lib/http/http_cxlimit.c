/*
 * Downstream connection limits, checked when a connection is accepted, as
 * Envoy does (docs/root/configuration/operations/overload_manager):
 *
 *   - the global limit: the overload manager's
 *     envoy.resource_monitors.global_downstream_max_connections, or the
 *     legacy runtime key overload.global_downstream_max_connections; one
 *     count for the whole process, shared by the workers (an atomic, as
 *     Envoy's proactive resource), listeners with ignore_global_conn_limit
 *     left out;
 *   - a listener's limit: the runtime key
 *     envoy.resource_limits.listener.<name>.connection_limit, counted on the
 *     listener's address object (struct http_listener_rt), all workers.
 *
 * Over either, the connection is reset before anything reads it and
 * listener.<address>.downstream_global_cx_overflow / downstream_cx_overflow
 * counts it. The limits are set once, before the workers accept
 * (arn_http_set_cx_limits); the counts are taken in dc_accept and move with
 * the connection (struct http_cx_adm) until the block that ends it gives
 * them back.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "arn_http.h"
#include "http_int.h"
#include "http_worker.h"

static struct {
	bool has_global;
	uint64_t global_max;
	struct arn_http_cx_limit *l; /* names owned */
	size_t n;
} limits;

/* connections open under the global limit, all workers */
static uint64_t global_open;

int arn_http_set_cx_limits(bool has_global, uint64_t global_max,
			   const struct arn_http_cx_limit *listeners, size_t n)
{
	struct arn_http_cx_limit *l = n ? calloc(n, sizeof(*l)) : NULL;
	if (n && !l)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		l[i].max = listeners[i].max;
		l[i].listener = strdup(listeners[i].listener);
		if (!l[i].listener) {
			while (i--)
				free((char *)l[i].listener);
			free(l);
			return -ENOMEM;
		}
	}
	for (size_t i = 0; i < limits.n; i++)
		free((char *)limits.l[i].listener);
	free(limits.l);
	limits.l = l;
	limits.n = n;
	limits.has_global = has_global;
	limits.global_max = global_max;
	return 0;
}

/* The listener's limit, or NULL (few entries: a runtime key each) */
static const struct arn_http_cx_limit *listener_limit(const struct arn_cfg_listener *l)
{
	for (size_t i = 0; i < limits.n; i++)
		if (strlen(limits.l[i].listener) == l->obj.name_len &&
		    !memcmp(limits.l[i].listener, l->obj.name, l->obj.name_len))
			return &limits.l[i];
	return NULL;
}

int http_cx_admit(struct http_worker *w, const struct arn_cfg_listener *l, struct http_cx_adm *a)
{
	memset(a, 0, sizeof(*a));
	const struct arn_http_cx_limit *ll = limits.n ? listener_limit(l) : NULL;
	if (!ll && (!limits.has_global || l->ignore_global_conn_limit))
		return 0;
	struct http_listener_rt *lrt = http_rt_listener(l->addr, l->port);
	/* the global limit first, as Envoy's TCP listener checks it before
	 * the listener's own */
	if (limits.has_global && !l->ignore_global_conn_limit) {
		uint64_t n = __atomic_add_fetch(&global_open, 1, __ATOMIC_RELAXED);
		if (n > limits.global_max) {
			__atomic_fetch_sub(&global_open, 1, __ATOMIC_RELAXED);
			if (lrt)
				arn_stats_inc(lrt->stats, w->slot,
					      ARN_LS_downstream_global_cx_overflow);
			return -ECONNREFUSED;
		}
		a->global = true;
	}
	if (ll && lrt) {
		uint64_t n = __atomic_add_fetch(&lrt->cx_open, 1, __ATOMIC_RELAXED);
		if (n > ll->max) {
			__atomic_fetch_sub(&lrt->cx_open, 1, __ATOMIC_RELAXED);
			arn_stats_inc(lrt->stats, w->slot, ARN_LS_downstream_cx_overflow);
			http_cx_release(a);
			return -ECONNREFUSED;
		}
		http_lrt_ref(lrt);
		a->lrt = lrt;
	}
	return 0;
}

void http_cx_release(struct http_cx_adm *a)
{
	if (a->global)
		__atomic_fetch_sub(&global_open, 1, __ATOMIC_RELAXED);
	if (a->lrt) {
		__atomic_fetch_sub(&a->lrt->cx_open, 1, __ATOMIC_RELAXED);
		http_lrt_put(a->lrt);
	}
	memset(a, 0, sizeof(*a));
}

void http_cx_take(struct http_worker *w, struct http_cx_adm *to)
{
	if (w->cx_pending) {
		*to = *w->cx_pending;
		memset(w->cx_pending, 0, sizeof(*w->cx_pending));
	} else {
		memset(to, 0, sizeof(*to));
	}
}
