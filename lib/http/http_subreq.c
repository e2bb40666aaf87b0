/*
 * Sub-requests (http_subreq.h): a POST from memory to a cluster, its
 * response handed to the caller as it is decoded.
 *
 * The pools, the load balancer and the codec know streams, so a
 * sub-request is one to them: its embedded struct http_stream has the
 * client's connection (the worker, the local address), the pinned
 * cluster and endpoints, a request buffer of its own (its response head
 * and scratch) and the counts a routed request takes (upstream_rq_total /
 * _active, which is the circuit breaker's count (http_rq_full), /
 * _completed / _timeout and the response's code class, the host's
 * counters). Nothing of the client's stream is touched.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "arn_config.h"
#include "arn_log.h"
#include "http_host_rq.h"
#include "http_subreq.h"
#include "http_upstream.h"

static void sr_ready(struct http_stream *st);
static void sr_data(struct http_stream *st);
static void sr_writable(struct http_stream *st);
static void sr_failed(struct http_stream *st, int reason, bool connected, bool timed_out,
		      const char *why);
static void sr_owe_sent(struct http_subreq *sr);

static const struct http_upstream_ops sr_up_ops = {
    .on_ready = sr_ready,
    .on_data = sr_data,
    .on_writable = sr_writable,
    .on_failed = sr_failed,
};

static struct http_subreq *of(struct http_stream *st)
{
	return OWNER(st, struct http_subreq, st);
}

/* Everything the sub-request holds goes back; @p ok: its response came
 * whole (the connection may serve another request). */
static void sr_release(struct http_subreq *sr, bool ok, int outcome)
{
	struct http_stream *st = &sr->st;
	struct http_worker *w = st->hc->w;
	sr->running = false;
	http_timer_cancel(&sr->timer);
	if (st->state & HTTP_S_COUNTED_HOST)
		http_host_rq_done(st, outcome);
	if (st->state & HTTP_S_COUNTED_UP) {
		CL_GAUGE(st, upstream_rq_active, -1);
		if (CS(st))
			arn_stats_hist_record(CS(st), w->slot, ARN_CL_upstream_rq_time,
					      http_now_us(w, st->up_start_tsc));
		st->state &= ~HTTP_S_COUNTED_UP;
	}
	struct http_upconn *u = st->up;
	if (u) {
		struct http_peer *up = http_up_peer(u);
		bool reuse = ok && (st->resp.m.flags & ARN_H1_F_KEEP_ALIVE) && !up->eof &&
			     !up->queued && up->codec->idle(up);
		/* a stream answered before its request ended: an HTTP/2
		 * stream is reset with NO_ERROR (RFC 9113 8.1), an HTTP/1.1
		 * connection is left in the middle of a request */
		if (sr->stream && !sr->ended && !u->xs)
			reuse = false;
		http_up_release(u, reuse);
		st->up = NULL;
	} else {
		http_up_detach(st);
	}
	http_pins_release(&st->resp.pins);
	if (st->cluster)
		arn_cfg_unpin(st->cluster);
	if (st->endpoints)
		arn_cfg_unpin(st->endpoints);
	http_crt_put(st->crt);
	st->crt = NULL;
	st->cluster = NULL;
	st->endpoints = NULL;
	if (st->res)
		http_res_put(w, st->res);
	st->res = NULL;
}

static void sr_fail(struct http_subreq *sr, const char *why, int outcome)
{
	ARN_DEBUG(HTTP, "sub-request to %s failed: %s", sr->st.crt ? sr->st.crt->name : "?", why);
	sr_release(sr, false, outcome);
	sr->ops->on_failed(sr, why);
}

static void sr_timeout(struct http_timer *t)
{
	struct http_subreq *sr = OWNER(t, struct http_subreq, timer);
	if (!sr->running)
		return;
	char why[64];
	snprintf(why, sizeof(why), "timed out after %u ms", sr->timeout_ms);
	CL_INC(&sr->st, upstream_rq_timeout);
	sr->st.state |= HTTP_S_TIMED_OUT;
	sr_fail(sr, why, HOST_TIMEOUT);
}

int http_subreq_start(struct http_subreq *sr, struct http_conn *hc, const struct arn_cfg_gen *g,
		      const struct arn_cfg_ref *cluster, const char *path, size_t path_len,
		      const struct http_subreq_header *h, unsigned n, const char *body, size_t blen,
		      uint32_t timeout_ms, const struct http_subreq_ops *ops, void *user)
{
	struct http_worker *w = hc->w;
	if (n > HTTP_SUBREQ_MAX_HDRS || (sr->msg && sr->n_edits > HTTP_SUBREQ_MAX_HDRS))
		return -E2BIG;
	struct arn_cfg_cluster_view v;
	if (!g || arn_cfg_cluster_resolve(g, cluster, &v) != 0)
		return -ENOENT;
	struct http_res *res = http_res_get(w);
	if (!res)
		return -EBUSY;
	struct http_stream *st = &sr->st;
	memset(st, 0, sizeof(*st));
	st->hc = hc;
	http_stream_attach(st, res);
	http_xreq_init(st, res);
	st->method = sr->msg   ? sr->msg->method
		     : sr->get ? ARN_H1_M_GET
		     : sr->del ? ARN_H1_M_DELETE
			       : ARN_H1_M_POST;
	if (!sr->msg && (sr->del || sr->get))
		blen = 0;
	st->version = 11;
	arn_cfg_pin(v.cluster);
	arn_cfg_pin(v.endpoints);
	st->cluster = v.cluster;
	st->endpoints = v.endpoints;
	uint64_t hash = cluster->hash ? cluster->hash : arn_cfg_hash(cluster->name, cluster->len);
	st->crt = http_rt_cluster(cluster->name, cluster->len, hash);
	if (st->crt)
		http_crt_ref(st->crt);
	sr->ops = ops;
	sr->user = user;
	if (sr->method_name.len) /* the caller's method (ext_authz's check) */
		st->method = sr->method;
	sr->path = path;
	sr->path_len = path_len;
	sr->body = body;
	sr->blen = blen;
	sr->timeout_ms = timeout_ms;
	sr->sent = sr->head_seen = sr->paused = false;
	sr->ended = sr->want_sent = false;
	sr->timer.fn = sr_timeout;
	sr->running = true; /* for sr_release's sake from here on */

	struct http_lb_in in = {
	    .cluster = st->cluster,
	    .eps = st->endpoints,
	    .rr = http_lb_rr(w, st->crt ? st->crt->hash : hash),
	    .rand = http_rand(w),
	    .active = http_lb_stream_active,
	    .ctx = st,
	};
	/* the router's input: the hosts of a cluster with checks or outlier
	 * detection, the worker's cached candidates (http_lb_cache) */
	uint32_t unejected = 0;
	http_rt_lb_in(st->crt, w->idx, &in);
	if (st->cluster->outlier.present && st->crt) { /* outlier detection's ejections */
		in.od_crt = st->crt;
		in.now_ms = w->now_ms;
		in.unejected = &unejected;
	}
	struct http_lb_out out;
	int prc = http_lb_pick(&in, &out);
	if (unejected)
		CL_GAUGE(st, outlier_detection_ejections_active, -(int64_t)unejected);
	if (prc != 0) {
		CL_INC(st, upstream_cx_none_healthy);
		sr_release(sr, false, HOST_AUTO);
		return -EHOSTUNREACH;
	}
	st->ep_addr = out.ep->addr;
	st->ep_port = out.ep->port;
	st->ep_host = out.ep->hostname;
	const struct arn_cfg_thresholds *th = &st->cluster->thresholds[0];
	if (st->crt && http_rq_full(st, th->max_requests)) {
		CL_INC(st, upstream_rq_pending_overflow);
		sr_release(sr, false, HOST_AUTO);
		return -EBUSY;
	}
	struct http_pool *p = http_pool_get(w, cluster, st->crt, out.ep->addr, out.ep->port, NULL);
	if (!p) {
		sr_release(sr, false, HOST_AUTO);
		return -EBUSY;
	}

	/* the head: host (the endpoint's hostname, else the cluster's name),
	 * content-length, the caller's headers */
	unsigned k = 0;
	if (sr->msg) {
		n = 0; /* the message's own fields */
		goto head_made;
	}
	sr->authority = st->ep_host ? st->ep_host : cluster->name;
	sr->authority_len = st->ep_host ? strlen(st->ep_host) : cluster->len;
	sr->hdrs[k++] = (struct arn_h1_edit){.name = "host",
					     .name_len = 4,
					     .value = sr->authority,
					     .value_len = (uint32_t)sr->authority_len,
					     .op = ARN_H1_EDIT_ADD};
	if (!sr->get && !sr->stream) {
		/* a GET has no body to announce (RFC 9110 9.3.1); a stream's
		 * length is not known */
		int cl = snprintf(sr->clen, sizeof(sr->clen), "%zu", blen);
		sr->hdrs[k++] = (struct arn_h1_edit){.name = "content-length",
						     .name_len = 14,
						     .value = sr->clen,
						     .value_len = (uint32_t)cl,
						     .op = ARN_H1_EDIT_ADD};
	}
	for (unsigned i = 0; i < n; i++)
		sr->hdrs[k++] = (struct arn_h1_edit){.name = h[i].name,
						     .name_len = (uint32_t)h[i].name_len,
						     .value = h[i].value,
						     .value_len = (uint32_t)h[i].value_len,
						     .op = ARN_H1_EDIT_ADD};
head_made:
	sr->n_hdrs = k;

	if (sr->host_len && sr->n_hdrs) {
		/* the caller's Host in place of the endpoint's (hdrs[0]) */
		sr->authority = sr->host;
		sr->authority_len = sr->host_len;
		sr->hdrs[0].value = sr->host;
		sr->hdrs[0].value_len = (uint32_t)sr->host_len;
	}
	int rc = http_up_acquire(w, p, st, hc->sladdr, &sr_up_ops);
	if (rc != 0) {
		if (rc != -EBUSY)
			CL_INC(st, upstream_cx_connect_fail);
		sr_release(sr, false, HOST_ERROR);
		return rc;
	}
	if (st->crt) {
		st->state |= HTTP_S_COUNTED_UP;
		CL_INC(st, upstream_rq_total);
		CL_GAUGE(st, upstream_rq_active, 1); /* the breaker's count (http_rq_full) */
	}
	if (p->host) {
		struct http_host_ctr *c = http_host_ctr(p->host, w->idx);
		HTTP_HOST_ADD(c, rq_total, 1);
		HTTP_HOST_ADD(c, rq_active, 1);
		p->n_counted++;
		st->state |= HTTP_S_COUNTED_HOST;
	}
	st->up_start_tsc = http_tsc(w);
	if (timeout_ms)
		http_timer_arm(w, &sr->timer, timeout_ms);
	if (st->up && st->up->connected)
		sr_ready(st);
	return 0;
}

void http_subreq_pause(struct http_subreq *sr)
{
	sr->paused = true;
}

void http_subreq_resume(struct http_subreq *sr)
{
	if (!sr->paused)
		return;
	sr->paused = false;
	if (sr->running && sr->st.up)
		sr_data(&sr->st);
}

int http_subreq_send(struct http_subreq *sr, const char *data, size_t len, bool end)
{
	if (!sr->running || !sr->stream || sr->ended || !sr->st.up)
		return -ENOTCONN;
	struct http_peer *up = http_up_peer(sr->st.up);
	if (!sr->sent || up->queued) {
		sr->want_sent = true;
		return -EAGAIN;
	}
	if (len) {
		up->codec->encode_body(up, data, len);
		if (CS(&sr->st))
			arn_stats_add(CS(&sr->st), sr->st.hc->w->slot,
				      ARN_CL_upstream_cx_tx_bytes_total, len);
	}
	if (end) {
		sr->ended = true;
		sr->st.state |= HTTP_S_REQ_DONE;
		up->codec->encode_end(up);
	}
	/* -EAGAIN: on_writable; a dead transport: the response side fails */
	up->codec->flush(up);
	return 0;
}

/* A refused send waits for the transport to have taken everything. */
static void sr_owe_sent(struct http_subreq *sr)
{
	if (!sr->want_sent || !sr->running || !sr->sent || !sr->st.up ||
	    http_up_peer(sr->st.up)->queued)
		return;
	sr->want_sent = false;
	if (sr->ops->on_sent)
		sr->ops->on_sent(sr);
}

void http_subreq_cancel(struct http_subreq *sr)
{
	if (!sr->running)
		return;
	sr->st.flags |= ARN_RF_BIT(DOWNSTREAM_CONNECTION_TERMINATION);
	sr_release(sr, false, HOST_AUTO);
}

/* ---- what the connection tells it ------------------------------------------------------- */

/* Head @p m with its @p n edits @p e (room for one more: the codec may
 * add one), then the body: the request goes out. */
static void sr_send(struct http_subreq *sr, struct http_peer *up, const struct arn_h1_msg *m,
		    struct arn_h1_edit *e, unsigned n)
{
	struct http_stream *st = &sr->st;
	int rc =
	    up->codec->encode_request_head(up, m, sr->path, (uint32_t)sr->path_len, e, n, false);
	if (rc != 0) {
		sr_fail(sr, rc == -E2BIG ? "request head too large" : "out of buffers", HOST_ERROR);
		return;
	}
	sr->sent = true;
	st->state |= HTTP_S_HEAD_SENT | HTTP_S_ATTEMPT_SENT;
	if (!sr->stream)
		st->state |= HTTP_S_REQ_DONE;
	if (sr->blen)
		up->codec->encode_body(up, sr->body, sr->blen);
	if (!sr->stream)
		up->codec->encode_end(up);
	if (CS(st))
		arn_stats_add(CS(st), st->hc->w->slot, ARN_CL_upstream_cx_tx_bytes_total, sr->blen);
	up->codec->flush(up); /* -EAGAIN: on_writable; a dead transport: on_failed */
	sr_owe_sent(sr);      /* a send refused before the head went */
}

static void sr_ready(struct http_stream *st)
{
	struct http_subreq *sr = of(st);
	if (!sr->running || sr->sent || !st->up)
		return;
	struct http_peer *up = http_up_peer(st->up);
	if (sr->msg) {
		/* the caller's message with its edits (msg mode) */
		struct arn_h1_edit e[HTTP_SUBREQ_MAX_HDRS + 1];
		memcpy(e, sr->edits, sr->n_edits * sizeof(e[0]));
		sr_send(sr, up, sr->msg, e, sr->n_edits);
		return;
	}
	struct arn_h1_msg m;
	memset(&m, 0, sizeof(m));
	m.method = sr->get ? ARN_H1_M_GET : sr->del ? ARN_H1_M_DELETE : ARN_H1_M_POST;
	m.method_name = sr->get	  ? (struct arn_h1_slice){"GET", 3}
			: sr->del ? (struct arn_h1_slice){"DELETE", 6}
				  : (struct arn_h1_slice){"POST", 4};
	if (sr->method_name.len) {
		m.method = sr->method;
		m.method_name = sr->method_name;
	}
	m.version = 11;
	m.host_idx = -1;
	m.upgrade_idx = -1;
	m.flags = sr->stream ? ARN_H1_F_CHUNKED : sr->get ? 0 : ARN_H1_F_CONTENT_LENGTH;
	m.content_length = sr->stream ? 0 : sr->blen;
	struct arn_h1_edit e[HTTP_SUBREQ_MAX_HDRS + 3];
	memcpy(e, sr->hdrs, sr->n_hdrs * sizeof(e[0]));
	sr_send(sr, up, &m, e, sr->n_hdrs);
}

static void sr_writable(struct http_stream *st)
{
	if (!st->up)
		return;
	struct http_peer *up = http_up_peer(st->up);
	if (up->queued)
		up->codec->flush(up);
	sr_owe_sent(of(st));
}

/* The response's trailers to the caller that asks for them, while they
 * are in its buffer (sr_release gives it back). */
static void sr_trailers(struct http_subreq *sr)
{
	if (sr->ops->on_trailers && sr->st.resp.m.n_trailers)
		sr->ops->on_trailers(sr, &sr->st.resp.m);
}

static void sr_data(struct http_stream *st)
{
	struct http_subreq *sr = of(st);
	struct http_worker *w = st->hc->w;
	while (sr->running && st->up && !sr->paused) {
		struct http_peer *src = http_up_peer(st->up);
		struct http_ev ev;
		int rc = src->codec->decode(src, &st->resp, !sr->head_seen, &ev);
		if (rc == -EAGAIN)
			return;
		if (rc == -ESHUTDOWN && ev.type == HTTP_EV_END && sr->head_seen) {
			sr_trailers(sr);
			CL_INC(st, upstream_rq_completed);
			sr_release(sr, false, HOST_AUTO);
			sr->ops->on_end(sr);
			return;
		}
		if (rc < 0) {
			if (rc == -EBADMSG)
				CL_INC(st, upstream_cx_protocol_error);
			sr_fail(sr, rc == -EBADMSG ? "protocol error" : "connection reset",
				HOST_ERROR);
			return;
		}
		switch (ev.type) {
		case HTTP_EV_HEAD:
			if (st->resp.m.status < 200)
				break; /* interim: the final one follows */
			sr->head_seen = true;
			st->up_status = st->resp.m.status;
			http_timer_cancel(&st->idle_timer);
			if (CS(st))
				arn_stats_inc(CS(st), w->slot,
					      arn_stats_code_class(ARN_CL_upstream_rq_1xx,
								   st->resp.m.status));
			sr->ops->on_head(sr, &st->resp.m);
			break;
		case HTTP_EV_BODY:
			if (CS(st))
				arn_stats_add(CS(st), w->slot, ARN_CL_upstream_cx_rx_bytes_total,
					      ev.len);
			sr->ops->on_body(sr, ev.data, ev.len);
			break;
		case HTTP_EV_END:
			if (st->resp.m.status < 200)
				break;
			sr_trailers(sr);
			CL_INC(st, upstream_rq_completed);
			sr_release(sr, true, HOST_AUTO);
			sr->ops->on_end(sr);
			return;
		default:
			break;
		}
	}
}

static void sr_failed(struct http_stream *st, int reason, bool connected, bool timed_out,
		      const char *why)
{
	(void)reason;
	(void)why; /* a backend's transport failure is counted, not reported to the MCP client */
	struct http_subreq *sr = of(st);
	if (!sr->running)
		return;
	if (!connected)
		CL_INC(st, upstream_cx_connect_fail);
	sr_fail(sr,
		timed_out    ? "connect timeout"
		: !connected ? "connect failed"
			     : "connection reset",
		HOST_ERROR);
}
