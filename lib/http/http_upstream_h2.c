/*
 * Upstream HTTP/2 (http_upstream_h2.h): the nghttp2 client session of an
 * upstream connection, its streams as upstream blocks of their own, and
 * the codec (http_codec_uph2) through which a stream writes its request
 * and reads its response.
 *
 * The counting allocator, the mbuf copy and drop helpers are the same as
 * http_h2.c's (kept as copies: that file is the server side's, and the
 * two sessions bound their memory apart).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>
#include <rte_mbuf.h>

#include "arn_config.h"
#include "arn_log.h"
#include "arn_tcp.h"
#include "http_h2_mem.h"
#include "http_h2_util.h"
#include "http_int.h"
#include "http_stream.h"
#include "http_upstream_h2.h"

struct http_uph2 {
	struct http_upconn *conn;	      /* its connection block; NULL once that is gone */
	const struct http_uph2_pool_ops *ops; /* its pool's (http_upstream.c) */
	struct http_worker *w;
	nghttp2_session *s;
	size_t mem;		      /* bytes nghttp2 (and the streams' state) hold */
	struct http_upconn *streams;  /* stream blocks */
	uint32_t n_streams, n_opened; /* open now; opened in all */
	uint32_t max_streams;	      /* max_concurrent_streams, capped */
	uint32_t max_requests;	      /* max_requests_per_connection (0: unlimited) */
	uint32_t busy;		      /* inside pump/notify: not freed yet */
	bool tls;		      /* :scheme https */
	bool fatal;		      /* the session failed: close */
	bool goaway;		      /* a GOAWAY came or went: no new streams */
	bool dead;		      /* the connection is gone: no more frames */
	uint32_t gauged;	      /* streams counted in cluster.<c>.http2.streams_active */
	struct http_h2_keepalive ka;  /* connection_keepalive (keepalive_ops) */
};

struct http_uph2s {
	struct http_uph2 *h2;
	struct http_upconn *next, *prev; /* the session's stream blocks */
	int32_t id;			 /* 0 until the request is submitted */
	/* the response */
	bool head_in, head_given, end_in, end_given, bad;
	bool no_mbuf; /* bad because a DATA frame found no mbuf: the proxy's failure */
	bool no_trl;  /* bad because no trailer array was free: the proxy's failure */
	bool closed; /* nghttp2 closed the stream (close_error) */
	bool lost;   /* the connection went before the stream ended */
	uint32_t close_error;
	uint32_t hdr_bytes;
	/* the cluster's max_headers_count: the head's fields, and the
	 * trailers' on their own (http_uph2_bind) */
	uint16_t max_hdrs;
	uint32_t given;	     /* bytes of the last HTTP_EV_BODY, given back at the next decode */
	struct http_in body; /* DATA payload copied, not yet handed on */
	/* the request */
	bool req_end, deferred;
	const char *out; /* body bytes by reference (the client's input) */
	uint32_t out_len;
	/* its trailers, copied by encode_trailers (http_h2_trailers_copy),
	 * sent after the body with END_STREAM */
	struct rte_mbuf *trailers;
	uint16_t n_trailers;
	/* what to tell the stream once nghttp2 is out of the way */
	bool n_data, n_write, n_ready;
	uint16_t n_rc;
	nghttp2_rcbuf *rc[HTTP_H2_RCBUFS];
	/* the response's trailers past the slots its head left, and the
	 * references to their bytes past rc (from the worker's pool, given
	 * back with those references: rc_drop; NULL until needed) */
	struct http_trl *trl;
};

/* ---- helpers -----------------------------------------------------------------------------------
 */

static struct http_upconn *blk(struct http_peer *p)
{
	return (struct http_upconn *)(void *)((char *)p - offsetof(struct http_upconn, h2peer));
}

static struct http_upconn *stream_of(nghttp2_session *s, int32_t id)
{
	return id > 0 ? nghttp2_session_get_stream_user_data(s, id) : NULL;
}

#define CL_STATS(h)                                                                                \
	((h)->conn && (h)->conn->pool && (h)->conn->pool->crt ? (h)->conn->pool->crt->stats : NULL)

static void cl_inc(struct http_uph2 *h, struct arn_stats_scope *sc, unsigned ctr)
{
	if (sc)
		arn_stats_inc(sc, h->w->slot, ctr);
}

/* cluster.<c>.http2.<name> (envoy_cluster_http2_stats.def) */
#define H2_INC(h, name) cl_inc((h), CL_STATS(h), ARN_CL_http2_##name)

static bool live(const struct http_uph2 *h)
{
	return h->s && !h->dead;
}

static void session_free(struct http_uph2 *h)
{
	http_h2_keepalive_stop(&h->ka);
	if (h->s)
		nghttp2_session_del(h->s);
	h->s = NULL;
	free(h);
}

/* A session whose connection is gone goes with its last stream. */
static void maybe_free(struct http_uph2 *h)
{
	if (h->dead && !h->n_streams && !h->busy)
		session_free(h);
}

static void rc_drop(struct http_uph2s *x)
{
	for (unsigned i = 0; i < x->n_rc; i++)
		nghttp2_rcbuf_decref(x->rc[i]);
	x->n_rc = 0;
	if (x->trl) {
		for (unsigned i = 0; i < x->trl->n_rc; i++)
			nghttp2_rcbuf_decref(x->trl->rc[i]);
		http_trl_put(x->h2->w, x->trl);
		x->trl = NULL;
	}
}

static int keep(struct http_uph2s *x, nghttp2_rcbuf *b)
{
	if (__builtin_expect(x->n_rc < HTTP_H2_RCBUFS, 1)) {
		nghttp2_rcbuf_incref(b);
		x->rc[x->n_rc++] = b;
		return 0;
	}
	/* trailers after a large head: in its trailer array */
	struct http_trl *t = x->trl;
	if (!t || t->n_rc >= sizeof(t->rc) / sizeof(t->rc[0]))
		return -1;
	nghttp2_rcbuf_incref(b);
	t->rc[t->n_rc++] = b;
	return 0;
}

/* Streams that leave http2.streams_active: @p n of those counted, while
 * the connection (and so its cluster's scope) is there. */
static void gauge_drop(struct http_uph2 *h, uint32_t n)
{
	if (n > h->gauged)
		n = h->gauged;
	if (!n)
		return;
	h->gauged -= n;
	if (CL_STATS(h))
		arn_stats_gauge_add(CL_STATS(h), h->w->slot, ARN_CL_http2_streams_active,
				    -(int64_t)n);
}

static int h2_send(struct http_uph2 *h);

/* ---- connection_keepalive ----------------------------------------------------------------------
 *
 * Envoy's HTTP/2 keepalive (http2_protocol_options.connection_keepalive):
 * a PING every interval (plus a random jitter of up to interval_jitter %
 * of it), armed again once its ACK came; and a PING ahead of a new stream
 * on a connection that received nothing for connection_idle_interval,
 * unless one is out already. A PING whose ACK does not come within
 * timeout closes the connection (GOAWAY, then FIN; its streams see it
 * cut), counted in cluster.<c>.http2.keepalive_timeout. Any bytes from
 * the upstream while waiting put the deadline off by timeout: a PING ACK
 * queued behind a large response does not close a connection that is
 * working (Envoy extends it on any frame too).
 */

static struct http_uph2 *ka_conn(struct http_h2_keepalive *ka)
{
	return (struct http_uph2 *)(void *)((char *)ka - offsetof(struct http_uph2, ka));
}

static nghttp2_session *keepalive_session(struct http_h2_keepalive *ka)
{
	struct http_uph2 *h = ka_conn(ka);
	return live(h) && h->conn && !h->fatal ? h->s : NULL;
}

/* A PING is queued: out now if the connection is up (else behind the
 * preface, at http_uph2_ready). */
static void keepalive_sent(struct http_h2_keepalive *ka)
{
	struct http_uph2 *h = ka_conn(ka);
	if (!h->conn->connected)
		return;
	h->busy++;
	h2_send(h);
	h->busy--;
}

static void keepalive_close(struct http_h2_keepalive *ka)
{
	struct http_uph2 *h = ka_conn(ka);
	struct http_upconn *u = h->conn;
	if (!u || !live(h))
		return;
	ARN_DEBUG(HTTP, "upstream HTTP/2: no PING ACK within %u ms: closing", ka->timeout_ms);
	H2_INC(h, keepalive_timeout);
	http_h2_keepalive_stop(ka);
	h->busy++;
	if (!h->goaway) {
		h->goaway = true;
		nghttp2_submit_goaway(h->s, NGHTTP2_FLAG_NONE,
				      nghttp2_session_get_last_proc_stream_id(h->s),
				      NGHTTP2_NO_ERROR, NULL, 0);
		h2_send(h);
	}
	h->busy--;
	h->ops->close(u, false);
}

static const struct http_h2_keepalive_ops keepalive_ops = {
    .session = keepalive_session,
    .sent = keepalive_sent,
    .close = keepalive_close,
};

/* A stream is about to open: a connection idle for connection_idle_interval
 * is probed first (the stream goes out behind the PING, as in Envoy). */
static void keepalive_before_stream(struct http_uph2 *h)
{
	if (h->conn && h->conn->connected && http_h2_keepalive_idle(&h->ka))
		http_h2_keepalive_ping(&h->ka);
}

/* ---- output ------------------------------------------------------------------------------------
 */

/* Frame what the session has, up to HTTP_H2_OUT_MAX bytes waiting for
 * TCP, and hand it on. @return 0, -EAGAIN, or the transport's error. */
static int h2_send(struct http_uph2 *h)
{
	struct http_upconn *u = h->conn;
	if (!u || !live(h) || !u->h1.tc || !u->connected)
		return u && !u->connected && live(h) ? 0 : -ENOTCONN;
	size_t framed;
	return http_h2_send_frames(h->s, h->w, &u->h1, u->h1.tc, &h->fatal, &framed);
}

/* Tell the streams what the session recorded for them: each flag once,
 * outside nghttp2; a stream may end (and its block go) in its call. */
static void notify(struct http_uph2 *h)
{
	h->busy++;
	for (unsigned guard = 0; guard < 4 * HTTP_UPH2_MAX_STREAMS + 16; guard++) {
		struct http_upconn *b = h->streams;
		while (b && !(b->xs->n_data || b->xs->n_write || b->xs->n_ready))
			b = b->xs->next;
		if (!b)
			break;
		struct http_uph2s *x = b->xs;
		struct http_stream *st = b->st;
		if (x->n_ready) {
			x->n_ready = false;
			if (st)
				st->up_ops->on_ready(st);
		} else if (x->n_data) {
			x->n_data = false;
			if (st)
				st->up_ops->on_data(st);
		} else {
			x->n_write = false;
			if (st)
				st->up_ops->on_writable(st);
		}
	}
	h->busy--;
}

/* Give @p n response bytes back to the upstream's windows. */
static void window_give(struct http_uph2s *x, uint32_t n)
{
	struct http_uph2 *h = x->h2;
	if (!n || !live(h))
		return;
	nghttp2_session_consume_connection(h->s, n);
	if (!x->closed && x->id > 0)
		nghttp2_session_consume_stream(h->s, x->id, n);
}

/* ---- nghttp2's callbacks -----------------------------------------------------------------------
 */

static int on_begin_headers(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
	(void)ud;
	struct http_upconn *b = stream_of(s, f->hd.stream_id);
	if (!b || !b->st || f->hd.type != NGHTTP2_HEADERS)
		return 0;
	struct http_uph2s *x = b->xs;
	if (x->head_in)
		return 0; /* trailers */
	/* a response head (the final one, or an interim 1xx before it) */
	struct arn_h1_msg *m = &b->st->resp.m;
	rc_drop(x);
	m->n_hdrs = 0;
	m->n_trailers = 0;
	m->trailers = NULL;
	m->trailer_cap = 0;
	m->status = 0;
	m->version = 20;
	m->flags = ARN_H1_F_KEEP_ALIVE;
	x->hdr_bytes = 0;
	return 0;
}

/* A response's header list (or its trailers') is over what Arion keeps:
 * the stream fails, counted once (Envoy's http2.header_overflow). */
static void header_overflow(struct http_uph2s *x)
{
	if (!x->bad)
		H2_INC(x->h2, header_overflow);
	x->bad = true;
}

/*
 * A slot for the response's next trailer. The trailers have a budget of
 * their own, the cluster's max_headers_count (max_hdrs), as Envoy bounds
 * each header map; they start in the slots the head left of the
 * message's 128, and go on in a trailer array of the worker's when those,
 * or the stream's references (rc), are too few. @return false when
 * the stream fails: over the budget (header_overflow), or no trailer
 * array free (the proxy's want: decode's -ENOBUFS, counted in
 * trailer_slots_exhausted).
 */
static bool trailer_room(struct http_upconn *b, struct http_uph2s *x, struct arn_h1_msg *m)
{
	if (!(m->flags & ARN_H1_F_TRAILERS)) {
		m->flags |= ARN_H1_F_TRAILERS;
		m->trailers = m->hdrs + m->n_hdrs;
		m->trailer_cap = (uint16_t)(m->hdr_cap - m->n_hdrs);
	}
	if (m->n_trailers >= x->max_hdrs) {
		header_overflow(x);
		return false;
	}
	if ((m->n_trailers < m->trailer_cap && x->n_rc + 2u <= HTTP_H2_RCBUFS) || x->trl)
		return true;
	x->trl = http_trl_get(b->w);
	if (!x->trl) {
		x->bad = x->no_trl = true;
		return false;
	}
	arn_h1_msg_set_trailers(m, x->trl->f, HTTP_MAX_HDRS);
	return true;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *f, nghttp2_rcbuf *name,
		     nghttp2_rcbuf *value, uint8_t flags, void *ud)
{
	(void)flags;
	(void)ud;
	struct http_upconn *b = stream_of(s, f->hd.stream_id);
	if (!b || !b->st || f->hd.type != NGHTTP2_HEADERS)
		return 0;
	struct http_uph2s *x = b->xs;
	struct arn_h1_msg *m = &b->st->resp.m;
	nghttp2_vec n = nghttp2_rcbuf_get_buf(name), v = nghttp2_rcbuf_get_buf(value);
	const char *np = (const char *)n.base, *vp = (const char *)v.base;
	x->hdr_bytes += (uint32_t)(n.len + v.len + 32);
	if (x->head_in && n.len && np[0] == ':')
		return 0; /* (nghttp2 refuses pseudo-headers in trailers) */
	if (x->head_in && !trailer_room(b, x, m))
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	if (x->hdr_bytes > HTTP_UPH2_MAX_HDR_BYTES || keep(x, name) || keep(x, value)) {
		header_overflow(x);
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	}
	if (n.len && np[0] == ':') {
		if (n.len == 7 && memcmp(np, ":status", 7) == 0) {
			unsigned st = 0;
			for (size_t i = 0; i < v.len && i < 3; i++)
				st = st * 10 + (unsigned)(vp[i] - '0'); /* nghttp2 checked it */
			m->status = (uint16_t)st;
		}
		return 0;
	}
	struct arn_h1_header *hd;
	if (x->head_in) {
		/* trailers (grpc-status, grpc-message): trailer_room made room */
		hd = &m->trailers[m->n_trailers++];
	} else {
		/* (one slot kept: head_done may add content-length) */
		if (m->n_hdrs >= x->max_hdrs || m->n_hdrs + 1u >= m->hdr_cap) {
			header_overflow(x);
			return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
		}
		hd = &m->hdrs[m->n_hdrs];
	}
	*hd = (struct arn_h1_header){
	    .name = np,
	    .name_len = (uint16_t)n.len,
	    .value = vp,
	    .value_len = (uint32_t)v.len,
	    .id = (uint16_t)arn_h1_hdr_lookup(np, n.len),
	};
	if (x->head_in)
		return 0;
	if (hd->id == ARN_H1_H_CONTENT_LENGTH) {
		uint64_t cl = 0;
		for (size_t i = 0; i < v.len; i++)
			cl = cl * 10 + (uint64_t)(vp[i] - '0'); /* digits: nghttp2 checked */
		m->flags |= ARN_H1_F_CONTENT_LENGTH;
		m->content_length = cl;
	}
	m->n_hdrs++;
	return 0;
}

/* The response head is complete: what HTTP/1 would have parsed. A head
 * that ends the stream (a trailers-only gRPC answer, a 204) has no body:
 * toward an HTTP/1.1 client it says so with content-length 0 unless it
 * gave a length of its own. */
static void head_done(struct http_upconn *b, bool end)
{
	struct http_uph2s *x = b->xs;
	struct arn_h1_msg *m = &b->st->resp.m;
	if (m->status < 200) {
		/* interim: dropped (the stream layer forwards no 1xx but 101) */
		return;
	}
	x->head_in = true;
	if (end) {
		x->end_in = true;
		m->flags |= ARN_H1_F_NO_BODY;
		if (!(m->flags & ARN_H1_F_CONTENT_LENGTH) && m->status != 204 && m->status != 304 &&
		    (unsigned)m->n_hdrs + 1u < m->hdr_cap) {
			m->hdrs[m->n_hdrs++] = (struct arn_h1_header){
			    .name = "content-length",
			    .name_len = 14,
			    .value = "0",
			    .value_len = 1,
			    .id = ARN_H1_H_CONTENT_LENGTH,
			};
			m->flags |= ARN_H1_F_CONTENT_LENGTH;
			m->content_length = 0;
		}
	}
}

static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
	struct http_uph2 *h = ud;
	if (f->hd.type == NGHTTP2_GOAWAY) {
		/* no new streams here; nghttp2 closes those above last_stream_id
		 * (REFUSED_STREAM: they were not processed, a retry is safe) */
		h->goaway = true;
		return 0;
	}
	if (f->hd.type == NGHTTP2_RST_STREAM)
		H2_INC(h, rx_reset);
	if (f->hd.type == NGHTTP2_PING && (f->hd.flags & NGHTTP2_FLAG_ACK)) {
		http_h2_keepalive_ack(&h->ka);
		return 0;
	}
	struct http_upconn *b = stream_of(s, f->hd.stream_id);
	if (!b || !b->st)
		return 0;
	struct http_uph2s *x = b->xs;
	bool end = f->hd.flags & NGHTTP2_FLAG_END_STREAM;
	if (f->hd.type == NGHTTP2_HEADERS) {
		if (!x->head_in) {
			head_done(b, end);
		} else {
			H2_INC(h, trailers);
			if (end)
				x->end_in = true; /* trailers end the response */
		}
		x->n_data = true;
	} else if (f->hd.type == NGHTTP2_DATA && end) {
		x->end_in = true;
		x->n_data = true;
	}
	return 0;
}

static int on_data_chunk(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data,
			 size_t len, void *ud)
{
	(void)flags;
	struct http_uph2 *h = ud;
	struct http_upconn *b = stream_of(s, id);
	if (!b || !b->st || !b->xs->head_in) {
		/* nobody takes it: the windows reopen at once */
		nghttp2_session_consume(s, id, len);
		return 0;
	}
	struct http_uph2s *x = b->xs;
	if (x->bad) {
		/* the stream failed (a hole in its body, or its header list):
		 * what follows goes nowhere */
		nghttp2_session_consume(s, id, len);
		return 0;
	}
	uint32_t before = x->body.bytes;
	bool all = http_h2_in_copy(h->w, &x->body, data, len);
	if (!all) {
		/* Out of mbufs. nghttp2 ignores a callback failure here (only
		 * a fatal code or PAUSE stops it), so the stream is failed
		 * (decode: 502, or the client's stream reset once the
		 * response started) and told now, not when the next frame
		 * comes. What was kept of the chunk is given back with the
		 * rest of x->body at the stream's end (http_uph2_stream_end),
		 * not twice. */
		x->bad = true;
		x->no_mbuf = true;
		nghttp2_session_consume(s, id, len - (x->body.bytes - before));
		H2_INC(h, rx_body_no_mbuf);
	}
	x->n_data = true;
	return 0;
}

static int on_stream_close(nghttp2_session *s, int32_t id, uint32_t error, void *ud)
{
	(void)ud;
	struct http_upconn *b = stream_of(s, id);
	if (!b)
		return 0;
	struct http_uph2s *x = b->xs;
	x->closed = true;
	x->close_error = error;
	x->n_data = true;
	x->n_write = true;
	return 0;
}

static int on_frame_send(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
	struct http_uph2 *h = ud;
	if (f->hd.type == NGHTTP2_RST_STREAM)
		H2_INC(h, tx_reset);
	else if (f->hd.type == NGHTTP2_GOAWAY)
		H2_INC(h, goaway_sent);
	if (f->hd.type != NGHTTP2_DATA)
		return 0;
	struct http_upconn *b = stream_of(s, f->hd.stream_id);
	if (b)
		b->xs->n_write = true;
	return 0;
}

/* A frame nghttp2 refused (Envoy's onInvalidFrame): a response that
 * breaks RFC 9113 section 8 (its stream is reset) counts as Envoy counts
 * it; the others end the session and count as upstream_cx_protocol_error. */
static int on_invalid_frame(nghttp2_session *s, const nghttp2_frame *f, int err, void *ud)
{
	(void)s, (void)f;
	if (err == NGHTTP2_ERR_HTTP_HEADER || err == NGHTTP2_ERR_HTTP_MESSAGING)
		H2_INC((struct http_uph2 *)ud, rx_messaging_error);
	return 0;
}

/* The request body, framed from the client's bytes by reference as the
 * upstream's windows allow. */
static ssize_t on_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
		       nghttp2_data_source *src, void *ud)
{
	(void)src;
	(void)ud;
	struct http_upconn *b = stream_of(s, id);
	if (!b)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* its block went: reset */
	struct http_uph2s *x = b->xs;
	if (x->out_len) {
		size_t k = len < x->out_len ? len : x->out_len;
		memcpy(buf, x->out, k);
		x->out += k;
		x->out_len -= (uint32_t)k;
		if (!x->out_len) {
			b->h2peer.queued = false;
			x->n_write = true;
		}
		return (ssize_t)k;
	}
	if (x->req_end) {
		*flags |= NGHTTP2_DATA_FLAG_EOF;
		if (x->trailers) {
			/* END_STREAM goes with the trailers (nghttp2 copies them) */
			nghttp2_nv nv[HTTP_MAX_HDRS];
			unsigned n =
			    http_h2_trailers_nv(x->trailers, x->n_trailers, nv, HTTP_MAX_HDRS);
			if (nghttp2_submit_trailer(s, id, nv, n) == 0)
				*flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
			rte_pktmbuf_free(x->trailers);
			x->trailers = NULL;
		}
		return 0;
	}
	x->deferred = true;
	return NGHTTP2_ERR_DEFERRED;
}

/* ---- the session -------------------------------------------------------------------------------
 */

static uint32_t cap(uint32_t v, uint32_t max)
{
	return v && v < max ? v : max;
}

/* a peer that may not be trusted more than a client: its header blocks
 * in pieces are bounded as the clients' are */
static const struct http_h2_session_def session_def = {
    .server = false,
    .max_continuations = 8,
    .begin_headers = on_begin_headers,
    .header = on_header,
    .frame_recv = on_frame_recv,
    .data_chunk = on_data_chunk,
    .stream_close = on_stream_close,
    .frame_send = on_frame_send,
    .invalid_frame = on_invalid_frame,
};

int http_uph2_start(struct http_upconn *u, const struct arn_cfg_cluster *c,
		    const struct http_uph2_pool_ops *ops)
{
	struct http_uph2 *h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->conn = u;
	h->ops = ops;
	h->w = u->w;
	const struct arn_cfg_h2 *o = c ? &c->http.h2 : NULL;
	h->max_streams = cap(o ? o->max_concurrent_streams : 0, HTTP_UPH2_MAX_STREAMS);
	h->max_requests = c ? (c->max_requests_per_connection ? c->max_requests_per_connection
							      : c->http.max_requests_per_connection)
			    : 0;
	h->tls = u->tls.on || u->want_tls;
	/* the cluster's idle_timeout (1 h by default) as of its opening */
	u->idle_ms = c ? c->http.idle_timeout_ms : 0;
	uint32_t swin = cap(o ? o->initial_stream_window_size : 0, HTTP_UPH2_STREAM_WINDOW);
	uint32_t cwin = cap(o ? o->initial_connection_window_size : 0, HTTP_UPH2_CONN_WINDOW);
	nghttp2_mem mem = http_h2_mem(&h->mem);
	nghttp2_settings_entry iv[] = {
	    {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
	    {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, swin},
	    {NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, o ? o->hpack_table_size : 4096},
	    {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, h->max_streams},
	};
	if (http_h2_session_new(&h->s, &session_def, h, &mem, o, iv, sizeof(iv) / sizeof(iv[0]),
				cwin) != 0) {
		free(h);
		return -ENOMEM;
	}
	u->h2 = h;
	http_h2_keepalive_init(&h->ka, h->w, &keepalive_ops, o);
	return 0;
}

bool http_uph2_wanted(const struct http_stream *st)
{
	const struct arn_cfg_cluster *c = st->cluster;
	if (!c)
		return false;
	switch (c->http.upstream) {
	case 1:
		return true;
	case 2:
		return st->version == 20;
	default:
		/* auto_config: HTTP/1.1 until a TLS handshake's ALPN chose h2
		 * (http_upstream.c, up_turn_h2) */
		return false;
	}
}

bool http_uph2_room(const struct http_upconn *u)
{
	const struct http_uph2 *h = u->h2;
	if (!h || !live(h) || h->fatal || h->goaway || u->state == HTTP_UP_CLOSED || !u->h1.tc)
		return false;
	if (h->max_requests && h->n_opened >= h->max_requests)
		return false;
	uint32_t max = h->max_streams;
	/* the upstream's SETTINGS_MAX_CONCURRENT_STREAMS once it told us */
	uint32_t remote =
	    nghttp2_session_get_remote_settings(h->s, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
	if (remote < max)
		max = remote;
	return h->n_streams < max;
}

uint32_t http_uph2_streams(const struct http_upconn *u)
{
	return u->h2 ? u->h2->n_streams : 0;
}

bool http_uph2_alive(const struct http_upconn *s)
{
	const struct http_uph2 *h = s->xs->h2;
	return live(h) && h->conn && h->conn->h1.tc && !s->xs->closed;
}

struct http_upconn *http_uph2_stream_new(struct http_upconn *u)
{
	struct http_uph2 *h = u->h2;
	struct http_worker *w = u->w;
	struct http_upconn *b = w->up_free;
	if (!b || !h)
		return NULL;
	struct http_uph2s *x = http_h2_mem_calloc(1, sizeof(*x), &h->mem);
	if (!x)
		return NULL;
	w->up_free = b->next;
	memset(b, 0, sizeof(*b));
	b->w = w;
	b->pool = u->pool;
	b->state = HTTP_UP_BUSY;
	b->connected = u->connected;
	b->xs = x;
	b->h2peer.codec = &http_codec_uph2;
	x->h2 = h;
	x->next = h->streams;
	if (h->streams)
		h->streams->xs->prev = b;
	h->streams = b;
	h->n_streams++;
	h->n_opened++;
	if (CL_STATS(h)) {
		arn_stats_gauge_add(CL_STATS(h), w->slot, ARN_CL_http2_streams_active, 1);
		h->gauged++;
	}
	keepalive_before_stream(h);
	return b;
}

void http_uph2_bind(struct http_upconn *s, struct http_stream *st, uint16_t max_headers)
{
	st->up_reset = 0;
	s->xs->max_hdrs = max_headers;
	s->connected = s->xs->h2->conn && s->xs->h2->conn->connected;
}

void http_uph2_stream_end(struct http_upconn *b, bool cancel)
{
	struct http_uph2s *x = b->xs;
	struct http_uph2 *h = x->h2;
	struct http_worker *w = b->w;
	uint32_t left = x->body.bytes;
	http_in_free(&x->body);
	rc_drop(x);
	if (x->trailers)
		rte_pktmbuf_free(x->trailers);
	if (live(h) && x->id > 0) {
		if (left)
			nghttp2_session_consume_connection(h->s, left);
		if (!x->closed) {
			/* the response is complete but the request is not (RFC
			 * 9113 8.1), or the stream is cut: the upstream stops */
			nghttp2_submit_rst_stream(h->s, NGHTTP2_FLAG_NONE, x->id,
						  cancel ? NGHTTP2_CANCEL : NGHTTP2_NO_ERROR);
			if (cancel)
				cl_inc(h, CL_STATS(h), ARN_CL_upstream_rq_tx_reset);
		}
		nghttp2_session_set_stream_user_data(h->s, x->id, NULL);
	}
	if (x->prev)
		x->prev->xs->next = x->next;
	else
		h->streams = x->next;
	if (x->next)
		x->next->xs->prev = x->prev;
	h->n_streams--;
	gauge_drop(h, 1);
	http_h2_mem_free(x, &h->mem);
	b->xs = NULL;
	b->state = HTTP_UP_CLOSED;
	b->next = w->up_free;
	w->up_free = b;
	struct http_upconn *u = h->conn;
	if (u && live(h)) {
		h->busy++;
		h->ops->slot_freed(u);
		h2_send(h);
		h->busy--;
	}
	maybe_free(h);
}

void http_uph2_ready(struct http_upconn *u)
{
	struct http_uph2 *h = u->h2;
	for (struct http_upconn *b = h->streams; b; b = b->xs->next) {
		b->connected = true;
		b->xs->n_ready = true;
	}
	http_h2_keepalive_start(&h->ka);
	h->busy++;
	h2_send(h); /* the preface and SETTINGS */
	notify(h);
	h2_send(h);
	h->busy--;
}

/* Feed what the upstream sent to the session. */
static void h2_read(struct http_uph2 *h)
{
	struct http_upconn *u = h->conn;
	struct http_h1_peer *d = &u->h1;
	while (!h->fatal && d->tc) {
		if (!d->in.head && !http_tp_fill(d->tp, d->tc, &d->in))
			break;
		while (d->in.head) {
			struct rte_mbuf *m = d->in.head;
			uint32_t avail = m->data_len - d->in.off;
			ssize_t n = 0;
			if (avail)
				n = nghttp2_session_mem_recv(
				    h->s, rte_pktmbuf_mtod_offset(m, uint8_t *, d->in.off), avail);
			if (n < 0) {
				ARN_DEBUG(HTTP, "upstream HTTP/2: %s", nghttp2_strerror((int)n));
				if (n == NGHTTP2_ERR_FLOODED)
					H2_INC(h, outbound_control_flood);
				else
					cl_inc(h, CL_STATS(h), ARN_CL_upstream_cx_protocol_error);
				h->fatal = true;
				http_in_free(&d->in);
				return;
			}
			d->in.bytes -= avail;
			d->in.head = m->next;
			if (!d->in.head)
				d->in.tail = NULL;
			d->in.off = 0;
			http_seg_free(m);
			if (avail)
				http_h2_keepalive_rx(&h->ka);
		}
	}
}

/* After a run: a session that failed, was told to go, or has nothing
 * more to do closes (its streams learn it from on_close). */
static void settle(struct http_uph2 *h)
{
	struct http_upconn *u = h->conn;
	if (!u || !live(h) || u->state == HTTP_UP_CLOSED)
		return;
	if (h->fatal || u->h1.peer.eof ||
	    (!nghttp2_session_want_read(h->s) && !nghttp2_session_want_write(h->s)) ||
	    (h->goaway && !h->n_streams)) {
		ARN_DEBUG(HTTP,
			  "upstream HTTP/2: closing (fatal %d eof %d read %d write %d goaway %d)",
			  h->fatal, u->h1.peer.eof, nghttp2_session_want_read(h->s),
			  nghttp2_session_want_write(h->s), h->goaway);
		h->ops->close(u, h->fatal);
		return;
	}
}

void http_uph2_pump(struct http_upconn *u)
{
	struct http_uph2 *h = u->h2;
	if (!h)
		return;
	h->busy++;
	h2_read(h);
	notify(h);
	h2_send(h);
	notify(h);
	h->busy--;
	settle(h);
	maybe_free(h);
}

void http_uph2_writable(struct http_upconn *u)
{
	struct http_uph2 *h = u->h2;
	if (!h)
		return;
	h->busy++;
	h2_send(h);
	/* streams whose bytes waited for room may go on */
	for (struct http_upconn *b = h->streams; b; b = b->xs->next)
		if (!b->h2peer.queued)
			b->xs->n_write = true;
	notify(h);
	h->busy--;
	settle(h);
	maybe_free(h);
}

void http_uph2_goaway(struct http_upconn *u)
{
	struct http_uph2 *h = u->h2;
	if (!h || !live(h) || h->goaway)
		return;
	h->goaway = true;
	nghttp2_submit_goaway(h->s, NGHTTP2_FLAG_NONE, 0, NGHTTP2_NO_ERROR, NULL, 0);
	h2_send(h);
}

void http_uph2_closed(struct http_upconn *u, int reason, const char *why)
{
	struct http_uph2 *h = u->h2;
	if (!h)
		return;
	gauge_drop(h, h->gauged);
	http_h2_keepalive_stop(&h->ka);
	u->h2 = NULL;
	h->conn = NULL;
	h->dead = true;
	h->busy++;
	struct http_upconn *b = h->streams;
	while (b) {
		struct http_upconn *next = b->xs->next;
		struct http_stream *st = b->st;
		if (!u->connected && st) {
			/* never connected: the stream fails as on an HTTP/1
			 * connection that could not open (retried as such) */
			b->st = NULL;
			st->up = NULL;
			if (b->pool && b->pool->n_active)
				b->pool->n_active--;
			http_uph2_stream_end(b, false);
			st->up_ops->on_failed(st, reason, false, u->connect_timed_out, why);
		} else {
			b->xs->lost = true;
			b->xs->n_data = true;
			b->h2peer.queued = false;
		}
		b = next;
	}
	notify(h);
	h->busy--;
	maybe_free(h);
}

void http_uph2_shutdown(struct http_upconn *u)
{
	if (u->xs) {
		http_in_free(&u->xs->body);
		rc_drop(u->xs);
		if (u->xs->trailers)
			rte_pktmbuf_free(u->xs->trailers);
		struct http_uph2 *h = u->xs->h2;
		http_h2_mem_free(u->xs, &h->mem);
		u->xs = NULL;
		if (h->n_streams)
			h->n_streams--;
		maybe_free(h);
		return;
	}
	struct http_uph2 *h = u->h2;
	if (!h)
		return;
	gauge_drop(h, h->gauged);
	http_h2_keepalive_stop(&h->ka);
	u->h2 = NULL;
	h->conn = NULL;
	h->dead = true;
	h->busy = 0;
	maybe_free(h);
}

/* ---- the codec ---------------------------------------------------------------------------------
 */

static int uph2_decode(struct http_peer *p, struct http_msgbuf *mb, bool keep_head,
		       struct http_ev *ev)
{
	(void)mb;
	(void)keep_head;
	struct http_upconn *b = blk(p);
	struct http_uph2s *x = b->xs;
	ev->type = HTTP_EV_NONE;
	ev->data = NULL;
	ev->len = 0;
	ev->end = false; /* END comes with a decode of its own */
	if (x->given) {
		http_in_drop(&x->body, x->given);
		window_give(x, x->given);
		x->given = 0;
		h2_send(x->h2); /* the WINDOW_UPDATE: the upstream may go on */
	}
	if (x->bad) {
		if (x->no_mbuf || x->no_trl) {
			/* the proxy's shortage, not the upstream's fault: the
			 * stream is given up (Envoy's local reset) */
			ev->status = 503;
			ev->details = x->no_trl
					  ? HTTP_TRL_DETAILS
					  : "upstream_reset_before_response_started{local_reset}";
			return -ENOBUFS;
		}
		ev->status = 502;
		ev->details = "upstream_reset_before_response_started{protocol_error}";
		return -EBADMSG;
	}
	if (!x->head_given) {
		if (x->head_in) {
			x->head_given = true;
			ev->type = HTTP_EV_HEAD;
			return 0;
		}
	} else if (x->body.head) {
		struct rte_mbuf *m = x->body.head;
		ev->type = HTTP_EV_BODY;
		ev->data = rte_pktmbuf_mtod_offset(m, const char *, x->body.off);
		ev->len = m->data_len - x->body.off;
		x->given = (uint32_t)ev->len;
		return 0;
	} else if (x->end_in && !x->end_given) {
		x->end_given = true;
		ev->type = HTTP_EV_END;
		return 0;
	}
	if (x->end_in)
		return -EAGAIN;
	if (x->closed || x->lost) {
		/* RST_STREAM from the upstream (Envoy's remote reset; refused:
		 * not processed, a retry is safe), or the connection went */
		if (b->st && x->closed && !x->lost)
			b->st->up_reset = x->close_error == NGHTTP2_REFUSED_STREAM ? 2 : 1;
		return -ECONNABORTED;
	}
	return -EAGAIN;
}

static void uph2_upgrade(struct http_peer *p, bool accepted)
{
	(void)p;
	(void)accepted;
}

static bool uph2_idle(const struct http_peer *p)
{
	(void)p;
	return true; /* one exchange per stream */
}

static void uph2_release(struct http_peer *p)
{
	(void)p;
}

static bool hop_by_hop(const char *n, size_t len)
{
	static const char *const drop[] = {"connection",	"keep-alive", "proxy-connection",
					   "transfer-encoding", "upgrade",    "host"};
	for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
		if (strlen(drop[i]) == len && memcmp(drop[i], n, len) == 0)
			return true;
	return false;
}

#define UPH2_NV_MAX (HTTP_MAX_HDRS + ARN_H1_MAX_EDITS + 8)

/*
 * The request head as HTTP/1.1 would write it (edits applied, hop-by-hop
 * fields dropped, te: trailers kept), turned into HTTP/2 fields: the
 * pseudo-headers first (RFC 9113 8.3.1; :authority from Host), names
 * lowercased, connection-specific fields dropped (8.2.2).
 */
static int uph2_encode_request_head(struct http_peer *p, const struct arn_h1_msg *m,
				    const char *path, uint32_t plen, struct arn_h1_edit *e,
				    unsigned n, bool upgrade)
{
	struct http_upconn *b = blk(p);
	struct http_uph2s *x = b->xs;
	struct http_uph2 *h = x->h2;
	if (upgrade || m->method == ARN_H1_M_CONNECT)
		return -EPROTONOSUPPORT; /* no upgrade over HTTP/2 */
	if (!live(h) || x->id)
		return -ENOBUFS;
	char *buf = http_big_get(h->w);
	if (!buf)
		return -ENOBUFS;
	struct arn_h1_wbuf wb;
	arn_h1_wbuf_init(&wb, buf, HTTP_BIG_SCRATCH, NULL, NULL);
	arn_h1_write_request_line(&wb, m->method_name.p, m->method_name.len, path, plen, 1);
	int rc = arn_h1_write_headers(&wb, m, e, n, ARN_H1_W_DROP_HOP | ARN_H1_W_TE_TRAILERS);
	arn_h1_write_end(&wb);
	if (rc == 0 && wb.err)
		rc = -ENOBUFS;
	if (rc != 0) {
		http_big_put(h->w, buf);
		return rc == -E2BIG ? -E2BIG : -ENOBUFS;
	}
	nghttp2_nv nv[UPH2_NV_MAX];
	unsigned k = 4;
	const char *auth = m->authority.p;
	size_t alen = m->authority.len;
	char *q = buf, *end = buf + wb.len;
	char *lf = memchr(q, '\n', (size_t)(end - q));
	q = lf ? lf + 1 : end; /* past the request line */
	while (q < end) {
		lf = memchr(q, '\n', (size_t)(end - q));
		if (!lf || lf - q < 2)
			break; /* the empty line */
		char *colon = memchr(q, ':', (size_t)(lf - q));
		if (!colon)
			break;
		for (char *t = q; t < colon; t++)
			if (*t >= 'A' && *t <= 'Z')
				*t = (char)(*t + 32);
		char *v = colon + 1;
		while (v < lf && *v == ' ')
			v++;
		size_t vlen = (size_t)(lf - 1 - v), nlen = (size_t)(colon - q);
		if (nlen == 4 && memcmp(q, "host", 4) == 0) {
			auth = v;
			alen = vlen;
		} else if (!hop_by_hop(q, nlen) && k < UPH2_NV_MAX) {
			nv[k++] = (nghttp2_nv){(uint8_t *)q, (uint8_t *)v, nlen, vlen,
					       NGHTTP2_NV_FLAG_NONE};
		}
		q = lf + 1;
	}
	nv[0] = (nghttp2_nv){(uint8_t *)":method", (uint8_t *)m->method_name.p, 7,
			     m->method_name.len, NGHTTP2_NV_FLAG_NONE};
	nv[1] = (nghttp2_nv){(uint8_t *)":scheme", (uint8_t *)(h->tls ? "https" : "http"), 7,
			     h->tls ? 5u : 4u, NGHTTP2_NV_FLAG_NONE};
	nv[2] = (nghttp2_nv){(uint8_t *)":authority", (uint8_t *)(auth ? auth : ""), 10,
			     auth ? alen : 0, NGHTTP2_NV_FLAG_NONE};
	nv[3] = (nghttp2_nv){(uint8_t *)":path", (uint8_t *)path, 5, plen, NGHTTP2_NV_FLAG_NONE};
	bool body = !(m->flags & ARN_H1_F_NO_BODY) &&
		    ((m->flags & ARN_H1_F_CHUNKED) ||
		     ((m->flags & ARN_H1_F_CONTENT_LENGTH) && m->content_length));
	nghttp2_data_provider prd = {.source = {.ptr = b}, .read_callback = on_read};
	int32_t id = nghttp2_submit_request(h->s, NULL, nv, k, body ? &prd : NULL, b);
	http_big_put(h->w, buf);
	if (id < 0)
		return -ENOBUFS;
	x->id = id;
	if (!body)
		x->req_end = true;
	h2_send(h);
	return 0;
}

static int uph2_encode_response_head(struct http_peer *p, const struct arn_h1_msg *r,
				     struct arn_h1_edit *e, unsigned n, struct http_head_info *hi)
{
	(void)p, (void)r, (void)e, (void)n, (void)hi;
	return -EPROTONOSUPPORT; /* upstream streams only send requests */
}

static int uph2_encode_reply(struct http_peer *p, const struct http_reply *r)
{
	(void)p, (void)r;
	return -EPROTONOSUPPORT;
}

static void uph2_encode_continue(struct http_peer *p)
{
	(void)p;
}

static void resume(struct http_uph2s *x)
{
	if (x->deferred && !x->closed && x->id > 0 && live(x->h2)) {
		x->deferred = false;
		nghttp2_session_resume_data(x->h2->s, x->id);
	}
}

static void uph2_encode_body(struct http_peer *p, const char *data, size_t len)
{
	struct http_uph2s *x = blk(p)->xs;
	if (!len || x->closed || x->lost || x->req_end)
		return;
	x->out = data;
	x->out_len = (uint32_t)len;
	p->queued = true;
	resume(x);
}

/* The request's trailers (a client-streaming gRPC call's, an HTTP/1.1
 * client's chunked ones), kept for on_read to send after the body. A
 * request framed without a body (its END_STREAM went with the head) has
 * no place for them: they are dropped. */
static void uph2_encode_trailers(struct http_peer *p, const struct arn_h1_msg *m)
{
	struct http_uph2s *x = blk(p)->xs;
	if (x->req_end || x->trailers || x->closed || x->lost)
		return;
	/* out of mbufs: the request ends without them (not failed yet:
	 * the stream layer is inside its request step here, and the
	 * response side learns of a failure only at the next notify) */
	bool nomem;
	x->trailers = http_h2_trailers_copy(x->h2->w, m, &x->n_trailers, &nomem);
}

static void uph2_encode_end(struct http_peer *p)
{
	struct http_uph2s *x = blk(p)->xs;
	if (x->req_end)
		return;
	x->req_end = true;
	resume(x);
	/* nothing is queued by reference: frame the END_STREAM now (no flush
	 * follows an end that leaves the peer idle) */
	h2_send(x->h2);
}

static int uph2_flush(struct http_peer *p)
{
	struct http_uph2s *x = blk(p)->xs;
	if (x->closed || x->lost || !live(x->h2)) {
		/* reset or gone: what waited is dropped, the response side
		 * tells the stream */
		x->out_len = 0;
		p->queued = false;
		return 0;
	}
	int rc = h2_send(x->h2);
	if (rc != 0 && rc != -EAGAIN)
		return rc;
	return p->queued ? -EAGAIN : 0;
}

const struct http_codec_ops http_codec_uph2 = {
    .name = "HTTP/2",
    .decode = uph2_decode,
    .upgrade = uph2_upgrade,
    .idle = uph2_idle,
    .release = uph2_release,
    .encode_request_head = uph2_encode_request_head,
    .encode_response_head = uph2_encode_response_head,
    .encode_reply = uph2_encode_reply,
    .encode_continue = uph2_encode_continue,
    .encode_body = uph2_encode_body,
    .encode_trailers = uph2_encode_trailers,
    .encode_end = uph2_encode_end,
    .flush = uph2_flush,
};
