/*
 * Whether a connection closes because its listener was replaced (Envoy's
 * drainClose()): asked at each response by the connection, its HTTP/2
 * session and local replies alike (http_stream.h), so it sits below all
 * of them; the drains themselves (begin, scan, end) are the connection's
 * (http_conn.c).
 */
#include <stdbool.h>
#include <stdint.h>

#include "arn_config.h"
#include "http_drain.h"
#include "http_stream.h"
#include "http_worker.h"

struct http_drain *http_drain_find(struct http_worker *w, const struct arn_cfg_listener *l)
{
	for (uint32_t i = 0; i < HTTP_DRAINS_MAX && l; i++)
		if (w->drains[i].l == l)
			return &w->drains[i];
	return NULL;
}

void http_drain_count(struct http_conn *hc)
{
	if (!hc->drain_counted) {
		hc->drain_counted = true;
		HTTP_INC(hc, downstream_cx_drain_close);
		LS_INC(hc, downstream_cx_drained);
	}
}

/* http_drain_close past its inline test: the listener lookup only when
 * the generation @p g (or the connection's listener) changed since the last
 * one found its listener current */
bool http_drain_close_slow(struct http_conn *hc, const struct arn_cfg_gen *g)
{
	struct http_worker *w = hc->w;
	uint64_t gid = arn_cfg_gen_id(g);
	const struct arn_cfg_listener *l = arn_cfg_listener_find(g, hc->sladdr, hc->slport);
	if (l == hc->lsn) {
		hc->lsn_gen_id = gid;
		hc->lsn_cur = l;
		return false;
	}
	if (arn_cfg_filter_chain_kept(hc->lsn, hc->fc, l)) {
		hc->rebind = true; /* once this exchange is over */
		return false;
	}
	const struct http_drain *d = http_drain_find(w, hc->lsn);
	if (!d && arn_cfg_gen_id(g) != w->gen_id)
		/* this worker has not taken the generation in yet: its drain
		 * starts at the end of this loop iteration */
		return false;
	/* not draining itself: a version older than the one replaced last
	 * (a connection an earlier in-place update kept and could not
	 * rebind): the latest drain of its address times it */
	bool own = d != NULL;
	for (uint32_t i = 0; !own && i < HTTP_DRAINS_MAX; i++) {
		const struct http_drain *x = &w->drains[i];
		if (x->l && x->l->addr == hc->lsn->addr && x->l->port == hc->lsn->port &&
		    (!d || x->start_ms > d->start_ms))
			d = x;
	}
	bool close;
	if (!d || w->drain_immediate || w->now_ms >= d->end_ms)
		close = true; /* (no drain left: it ended) */
	else
		/* Envoy's gradual drain: P(close) = elapsed / drain time */
		close = w->now_ms - d->start_ms > http_rand(w) % (d->end_ms - d->start_ms);
	if (close)
		http_drain_count(hc);
	return close;
}
