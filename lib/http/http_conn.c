/*
 * A downstream HTTP/1 connection on one worker: accept (filter chain
 * selection), lib/tcp's callbacks, the pump that runs the connection's
 * stream whenever something happened, closing (linger, FIN, drain) and the
 * connection's idle timer.
 */
#include <errno.h>
#include <string.h>

#include <rte_mbuf.h>

#include "arn_config.h"
#include "arn_log.h"
#include "arn_tcp.h"
#include "http_conn.h"
#include "http_hcm.h"
#include "http_stream.h"
#include "http_upstream.h"

#define LINGER_MS 3000

static void conn_free(struct http_conn *hc);
static void conn_idle_timeout(struct http_timer *t);

/* ---- closing ------------------------------------------------------------------------------ */

static void conn_abort(struct http_conn *hc, int line)
{
	if (hc->state == HTTP_DC_CLOSED || !hc->tc)
		return;
	ARN_DEBUG(HTTP, "connection %llx: reset (line %d)", (unsigned long long)hc->id, line);
	HTTP_INC(hc, downstream_rq_tx_reset);
	hc->state = HTTP_DC_CLOSED;
	hc->aborted = true;
	arn_tcp_abort(hc->tc); /* on_close follows and frees the connection */
}

static void start_close(struct http_conn *hc)
{
	if (hc->state != HTTP_DC_OPEN)
		return;
	http_res_unwait(hc->w, hc);
	hc->state = HTTP_DC_CLOSING;
	hc->idle_timer.fn = conn_idle_timeout;
	http_timer_arm(hc->w, &hc->idle_timer, LINGER_MS);
	hc->shut = false;
}

/* Closing: once the reply is out, FIN; discard what the client still sends
 * (a close with unread data would reset and could destroy our response in
 * flight); close when the client's FIN arrives or the linger time ends. */
static void closing_step(struct http_conn *hc)
{
	if (!hc->tc || http_out_busy(&hc->out))
		return;
	http_in_free(&hc->in);
	arn_tcp_rx_consume(hc->tc, arn_tcp_rx_pending(hc->tc));
	if (!hc->shut) {
		hc->shut = true;
		arn_tcp_shutdown(hc->tc);
	}
	if (hc->peer_eof) {
		hc->state = HTTP_DC_CLOSED;
		arn_tcp_close(hc->tc);
	}
}

/* ---- the pump ------------------------------------------------------------------------------ */

/* The stream ended on an open connection: close, or wait for the next
 * request under the connection's idle timeout. */
static void stream_ended(struct http_conn *hc)
{
	if (!hc->tc)
		return;
	if (hc->close_after) {
		start_close(hc);
	} else {
		hc->idle_timer.fn = conn_idle_timeout;
		if (hc->hcm && hc->hcm->idle_timeout_ms)
			http_timer_arm(hc->w, &hc->idle_timer, hc->hcm->idle_timeout_ms);
		hc->again = true; /* pipelined requests may wait in the input */
	}
}

static void run_once(struct http_conn *hc)
{
	struct http_stream *st = &hc->st;
	if (hc->state == HTTP_DC_CLOSED || !hc->tc)
		return;
	if (st->up && !st->local)
		http_resp_step(hc);
	if (hc->state == HTTP_DC_CLOSED || !hc->tc)
		return;
	int rc = http_out_flush(&hc->out, hc->tc);
	if (rc != 0 && rc != -EAGAIN)
		return; /* the connection is going: on_close follows */
	bool flushed = rc == 0;
	if (st->active && flushed && st->resp_done && (st->req_done || hc->close_after) &&
	    !(st->up && http_out_busy(&st->up->out))) {
		http_stream_end(hc);
		stream_ended(hc);
		hc->again = true;
		return;
	}
	if (hc->state == HTTP_DC_CLOSING) {
		closing_step(hc);
		return;
	}
	if (!st->active && hc->close_after && flushed) {
		start_close(hc);
		hc->again = true;
		return;
	}
	http_req_step(hc);
}

static void conn_run(struct http_conn *hc)
{
	if (hc->in_pump) {
		hc->again = true;
		return;
	}
	hc->in_pump = true;
	do {
		hc->again = false;
		run_once(hc);
	} while (hc->again && hc->tc && hc->state != HTTP_DC_CLOSED);
	hc->in_pump = false;
	if (hc->dead)
		conn_free(hc);
}

static void conn_idle_timeout(struct http_timer *t)
{
	struct http_conn *hc = OWNER(t, struct http_conn, idle_timer);
	if (!hc->tc)
		return;
	if (hc->state == HTTP_DC_CLOSING) {
		/* the client never closed its side: give up waiting */
		hc->state = HTTP_DC_CLOSED;
		arn_tcp_rx_consume(hc->tc, arn_tcp_rx_pending(hc->tc));
		arn_tcp_close(hc->tc);
		return;
	}
	if (hc->st.active || hc->st.started)
		return;
	HTTP_INC(hc, downstream_cx_idle_timeout);
	hc->close_after = true;
	start_close(hc);
	conn_run(hc);
}

static const struct http_conn_ops conn_ops = {
    .run = conn_run,
    .close = start_close,
    .reset = conn_abort,
};

/* ---- TCP callbacks ----------------------------------------------------------------------------
 */

static struct http_conn *conn_alloc(struct http_worker *w)
{
	struct http_conn *hc = w->conn_free;
	if (!hc)
		return NULL;
	w->conn_free = hc->next;
	memset(hc, 0, sizeof(*hc));
	hc->w = w;
	hc->ops = &conn_ops;
	http_stream_reset(hc);
	hc->idle_timer.fn = conn_idle_timeout;
	return hc;
}

static void conn_free(struct http_conn *hc)
{
	struct http_worker *w = hc->w;
	struct http_stream *st = &hc->st;
	http_res_unwait(w, hc);
	/* a stream starts (its timers run) before it has a buffer */
	http_stream_timers_cancel(st);
	if (st->active || st->res || st->rt || st->up || st->pending) {
		if (st->active && !st->resp_done && !hc->aborted)
			st->flags |= ARN_RF_BIT(DOWNSTREAM_CONNECTION_TERMINATION);
		http_up_detach(hc);
		http_stream_end(hc);
		http_res_put(w, hc->st.res); /* kept by stream_end when mid-message */
		hc->st.res = NULL;
	}
	http_timer_cancel(&hc->idle_timer);
	http_in_free(&hc->in);
	http_out_reset(&hc->out);
	HTTP_GAUGE(hc, downstream_cx_active, -1);
	HTTP_GAUGE(hc, downstream_cx_http1_active, -1);
	HTTP_INC(hc, downstream_cx_destroy);
	if (HS(hc))
		arn_stats_hist_record(HS(hc), w->slot, ARN_HTTP_downstream_cx_length_ms,
				      http_now_us(w, hc->open_tsc));
	if (hc->lrt) {
		arn_stats_gauge_add(hc->lrt->stats, w->slot, ARN_LS_downstream_cx_active, -1);
		LS_INC(hc, downstream_cx_destroy);
		http_lrt_put(hc->lrt);
		hc->lrt = NULL;
	}
	http_rt_hcm_put(hc->hrt);
	hc->hrt = NULL;
	if (hc->lsn)
		arn_cfg_unpin(hc->lsn);
	hc->lsn = NULL;
	hc->next = w->conn_free;
	w->conn_free = hc;
}

static int dc_accept(struct arn_tcp_conn *c, void *luser)
{
	struct http_worker *w = luser;
	uint32_t laddr, raddr;
	uint16_t lport, rport;
	arn_tcp_endpoints(c, &laddr, &lport, &raddr, &rport);
	const struct arn_cfg_gen *g = w->store ? arn_config_gen(w->store) : NULL;
	const struct arn_cfg_listener *l = g ? arn_cfg_listener_find(g, laddr, lport) : NULL;
	if (!l)
		return -ENOENT;
	struct http_listener_rt *lrt = http_rt_listener(l->addr, l->port);
	struct arn_cfg_fc_input in = {
	    .dst_addr = laddr,
	    .dst_port = lport,
	    .src_addr = raddr,
	    .src_port = rport,
	    .transport_protocol = "raw_buffer",
	};
	const struct arn_cfg_filter_chain *fc = arn_cfg_filter_chain_select(l, &in);
	if (!fc) {
		if (lrt)
			arn_stats_inc(lrt->stats, w->slot, ARN_LS_no_filter_chain_match);
		return -ENOENT;
	}
	if (fc->tls) {
		/* lib/tls is not wired to this layer yet */
		static bool warned;
		if (!warned && w->idx == 0) {
			warned = true;
			ARN_WARN(HTTP,
				 "listener '%s': TLS filter chains are not served yet; "
				 "connections to them are refused",
				 l->obj.name);
		}
		return -EPROTONOSUPPORT;
	}
	if (fc->kind == ARN_CFG_NF_ECHO) {
		int rc = arn_tcp_echo_ops.on_accept ? arn_tcp_echo_ops.on_accept(c, NULL) : 0;
		if (rc == 0)
			arn_tcp_set_ops(c, &arn_tcp_echo_ops);
		if (lrt) {
			arn_stats_inc(lrt->stats, w->slot, ARN_LS_downstream_cx_total);
		}
		return rc;
	}
	if (fc->kind != ARN_CFG_NF_HCM || !fc->hcm)
		return -ENOENT;
	struct http_conn *hc = conn_alloc(w);
	if (!hc) {
		if (lrt)
			arn_stats_inc(lrt->stats, w->slot, ARN_LS_downstream_cx_overload_reject);
		return -ENOBUFS;
	}
	arn_cfg_pin(l);
	hc->lsn = l;
	hc->hcm = fc->hcm;
	hc->hrt = http_rt_hcm(fc->hcm);
	hc->lrt = lrt;
	if (lrt)
		http_lrt_ref(lrt); /* the connection's, until conn_free */
	hc->tc = c;
	hc->laddr = laddr;
	hc->lport = lport;
	hc->raddr = raddr;
	hc->rport = rport;
	hc->id = ((uint64_t)w->idx << 48) | ++w->next_conn_id;
	hc->open_tsc = http_tsc(w);
	const struct arn_cfg_hcm *h = fc->hcm;
	struct arn_h1_config pc = {
	    .max_head_bytes = h->max_request_headers_kb ? h->max_request_headers_kb * 1024 : 0,
	    .max_headers = (uint16_t)(h->max_headers_count && h->max_headers_count < HTTP_MAX_HDRS
					  ? h->max_headers_count
					  : HTTP_MAX_HDRS),
	};
	arn_h1_msg_init(&hc->msg, NULL, 0);
	arn_h1_parser_init(&hc->p, ARN_H1_REQUEST, &pc, &hc->msg);
	arn_h1_parser_allow_grow(&hc->p, true);
	HTTP_INC(hc, downstream_cx_total);
	HTTP_INC(hc, downstream_cx_http1_total);
	HTTP_GAUGE(hc, downstream_cx_active, 1);
	HTTP_GAUGE(hc, downstream_cx_http1_active, 1);
	if (lrt) {
		arn_stats_inc(lrt->stats, w->slot, ARN_LS_downstream_cx_total);
		arn_stats_gauge_add(lrt->stats, w->slot, ARN_LS_downstream_cx_active, 1);
	}
	if (h->idle_timeout_ms)
		http_timer_arm(w, &hc->idle_timer, h->idle_timeout_ms);
	arn_tcp_set_user(c, hc);
	return 0;
}

static void dc_data(struct arn_tcp_conn *c, struct rte_mbuf *head, uint32_t len)
{
	(void)head;
	struct http_conn *hc = arn_tcp_user(c);
	if (!hc)
		return;
	if (hc->state != HTTP_DC_OPEN) {
		arn_tcp_rx_consume(c, len);
		return;
	}
	hc->st.last_activity_ms = hc->w->now_ms;
	conn_run(hc);
}

static void dc_eof(struct arn_tcp_conn *c)
{
	struct http_conn *hc = arn_tcp_user(c);
	if (!hc)
		return;
	hc->peer_eof = true;
	conn_run(hc);
}

static void dc_writable(struct arn_tcp_conn *c)
{
	struct http_conn *hc = arn_tcp_user(c);
	if (!hc)
		return;
	conn_run(hc);
}

static void dc_closed(struct arn_tcp_conn *c, int reason)
{
	struct http_conn *hc = arn_tcp_user(c);
	if (!hc)
		return;
	arn_tcp_set_user(c, NULL);
	ARN_DEBUG(HTTP, "connection %llx: closed (%d), state %d", (unsigned long long)hc->id,
		  reason, hc->state);
	hc->tc = NULL;
	/* http_conn_abort() closed it: our reset, not the client's going away */
	bool remote = !hc->aborted && (reason == 0 || reason == -ECONNRESET);
	hc->state = HTTP_DC_CLOSED;
	if (remote)
		HTTP_INC(hc, downstream_cx_destroy_remote);
	else
		HTTP_INC(hc, downstream_cx_destroy_local);
	if (hc->st.active && !hc->st.resp_done) {
		HTTP_INC(hc, downstream_cx_destroy_active_rq);
		if (remote) {
			/* as Envoy flags a request whose client went away */
			hc->st.flags |= ARN_RF_BIT(DOWNSTREAM_CONNECTION_TERMINATION);
			HTTP_INC(hc, downstream_rq_rx_reset);
		}
	}
	if (hc->in_pump) {
		hc->dead = true;
		return;
	}
	conn_free(hc);
}

const struct arn_tcp_ops http_dc_ops = {
    .on_accept = dc_accept,
    .on_data = dc_data,
    .on_eof = dc_eof,
    .on_writable = dc_writable,
    .on_close = dc_closed,
};

void http_conns_shutdown(struct http_worker *w)
{
	static const struct arn_tcp_ops none = {0};
	for (uint32_t i = 0; i < w->n_conns; i++) {
		struct http_conn *hc = &w->conns[i];
		if (!hc->tc)
			continue;
		struct arn_tcp_conn *tc = hc->tc;
		arn_tcp_set_ops(tc, &none);
		arn_tcp_set_user(tc, NULL);
		arn_tcp_abort(tc);
		hc->tc = NULL;
		hc->state = HTTP_DC_CLOSED;
		conn_free(hc);
	}
}
