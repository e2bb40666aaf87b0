/*
 * Listener drain (http_drain.c): a listener replaced or removed by a new
 * configuration generation drains its connections gradually, as Envoy's
 * drain manager does (http_conn.c says how a connection is closed).
 */
#ifndef ARN_HTTP_DRAIN_H
#define ARN_HTTP_DRAIN_H

#include <stdbool.h>

#include "arn_config.h"
#include "http_stream.h"
#include "http_worker.h"

/**
 * Should the response about to start on @p hc close its connection because
 * its listener was replaced (Envoy's drainClose())? True with a probability
 * rising from 0 to 1 over the drain time of the replaced version (1 with
 * --drain-strategy immediate); false while the connection's filter chain
 * is one the new version kept. Counted in downstream_cx_drain_close.
 */
bool http_drain_close_slow(struct http_conn *hc, const struct arn_cfg_gen *g);
/* Asked at every response: inline while the generation (and the
 * connection's listener) are those the last answer found current. */
static inline bool http_drain_close(struct http_conn *hc)
{
	struct http_worker *w = hc->w;
	if (!w->store || !hc->lsn)
		return false;
	const struct arn_cfg_gen *g = arn_config_gen_at(w->gen_slot);
	if (arn_cfg_gen_id(g) == hc->lsn_gen_id && hc->lsn_cur == hc->lsn)
		return false;
	return http_drain_close_slow(hc, g);
}

struct arn_cfg_listener;
/** The drain of listener @p l on @p w (NULL: @p l does not drain there). */
struct http_drain *http_drain_find(struct http_worker *w, const struct arn_cfg_listener *l);
/** Count @p hc as closed by a drain (once per connection). */
void http_drain_count(struct http_conn *hc);
/**
 * The worker saw listener @p l replaced or removed: its connections start
 * draining now. Takes over the caller's pin of @p l.
 */
void http_drain_begin(struct http_worker *w, const struct arn_cfg_listener *l);
/** Once per loop iteration: drains that ended close their idle connections. */
void http_drains_poll(struct http_worker *w);
/** Worker shutdown: drop the drains' pins (connections are gone). */
void http_drains_fini(struct http_worker *w);

#endif
