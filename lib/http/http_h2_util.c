/*
 * What both HTTP/2 sides share (http_h2_util.h).
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <nghttp2/nghttp2.h>
#include <rte_mbuf.h>

#include "arn_config.h"
#include "http_h2_util.h"
#include "http_int.h"

struct rte_mbuf *http_h2_trailers_copy(struct http_worker *w, const struct arn_h1_msg *m,
				       uint16_t *n_out, bool *nomem)
{
	*nomem = false;
	struct rte_mbuf *head = NULL, *t = NULL;
	uint16_t n = 0;
	for (unsigned i = 0; i < m->n_trailers; i++) {
		const struct arn_h1_header *h = &m->trailers[i];
		if (arn_h1_trailer_dropped(h))
			continue;
		uint32_t need = (uint32_t)h->name_len + h->value_len + 2;
		if (!t || rte_pktmbuf_tailroom(t) < need) {
			/* a field starts a new segment when the last one is
			 * full: a gRPC error's grpc-status-details-bin alone
			 * can take most of one */
			struct rte_mbuf *b = http_mbuf(w);
			if (!b) {
				/* out of mbufs */
				if (head)
					rte_pktmbuf_free(head);
				*nomem = true;
				return NULL;
			}
			if (rte_pktmbuf_tailroom(b) < need) {
				rte_pktmbuf_free(b);
				continue; /* one field larger than a segment */
			}
			b->next = NULL;
			b->data_len = 0;
			if (t) {
				t->next = b;
				head->nb_segs++;
			} else {
				head = b;
				head->pkt_len = 0;
			}
			t = b;
		}
		char *o = rte_pktmbuf_mtod_offset(t, char *, t->data_len);
		for (unsigned k = 0; k < h->name_len; k++) {
			char ch = h->name[k];
			*o++ = ch >= 'A' && ch <= 'Z' ? (char)(ch + 32) : ch;
		}
		*o++ = 0;
		memcpy(o, h->value, h->value_len);
		o[h->value_len] = 0;
		t->data_len = (uint16_t)(t->data_len + need);
		head->pkt_len += need;
		n++;
	}
	if (!n) {
		if (head)
			rte_pktmbuf_free(head);
		return NULL;
	}
	*n_out = n;
	return head;
}

unsigned http_h2_trailers_nv(const struct rte_mbuf *b, uint16_t n, nghttp2_nv *nv, unsigned max)
{
	const char *p = rte_pktmbuf_mtod(b, const char *);
	unsigned k = 0;
	for (unsigned i = 0; i < n && k < max && b; i++) {
		size_t nl = strlen(p);
		const char *v = p + nl + 1;
		size_t vl = strlen(v);
		nv[k++] = (nghttp2_nv){(uint8_t *)(uintptr_t)p, (uint8_t *)(uintptr_t)v, nl, vl,
				       NGHTTP2_NV_FLAG_NONE};
		p = v + vl + 1;
		/* the next field is in the next segment once this one is read */
		if (p >= rte_pktmbuf_mtod_offset(b, const char *, b->data_len)) {
			b = b->next;
			if (b)
				p = rte_pktmbuf_mtod(b, const char *);
		}
	}
	return k;
}

uint64_t http_h2_keepalive_delay(struct http_worker *w, uint32_t interval_ms, double jitter_pct)
{
	uint64_t ms = interval_ms;
	uint64_t jitter = (uint64_t)(jitter_pct * (double)ms / 100.0);
	if (jitter)
		ms += http_rand(w) % jitter;
	return ms;
}

static struct http_h2_keepalive *ka_of(struct http_timer *t, size_t off)
{
	return (struct http_h2_keepalive *)(void *)((char *)t - off);
}

static void keepalive_arm_interval(struct http_h2_keepalive *ka)
{
	if (ka->interval_ms)
		http_timer_arm(ka->w, &ka->send,
			       http_h2_keepalive_delay(ka->w, ka->interval_ms, ka->jitter_pct));
}

void http_h2_keepalive_ping(struct http_h2_keepalive *ka)
{
	if (ka->wait.armed)
		return;
	nghttp2_session *s = ka->ops->session(ka);
	if (!s)
		return;
	uint8_t opaque[8];
	uint64_t now = ka->w->now_ms;
	memcpy(opaque, &now, sizeof(opaque)); /* for a trace to match the ACK */
	if (nghttp2_submit_ping(s, NGHTTP2_FLAG_NONE, opaque) != 0)
		return;
	http_timer_arm(ka->w, &ka->wait, ka->timeout_ms);
	ka->ops->sent(ka);
}

/* The interval is up: a PING out. */
static void keepalive_send_fired(struct http_timer *t)
{
	http_h2_keepalive_ping(ka_of(t, offsetof(struct http_h2_keepalive, send)));
}

static void keepalive_wait_fired(struct http_timer *t)
{
	struct http_h2_keepalive *ka = ka_of(t, offsetof(struct http_h2_keepalive, wait));
	ka->ops->close(ka);
}

void http_h2_keepalive_init(struct http_h2_keepalive *ka, struct http_worker *w,
			    const struct http_h2_keepalive_ops *ops, const struct arn_cfg_h2 *o)
{
	ka->w = w;
	ka->ops = ops;
	ka->send.fn = keepalive_send_fired;
	ka->wait.fn = keepalive_wait_fired;
	if (!o || !o->keepalive_timeout_ms)
		return;
	ka->interval_ms = o->keepalive_interval_ms;
	ka->timeout_ms = o->keepalive_timeout_ms;
	ka->idle_ms = o->keepalive_idle_interval_ms;
	ka->jitter_pct = o->keepalive_jitter_pct;
}

void http_h2_keepalive_start(struct http_h2_keepalive *ka)
{
	ka->rx_ms = ka->w->now_ms;
	keepalive_arm_interval(ka);
}

void http_h2_keepalive_ack(struct http_h2_keepalive *ka)
{
	if (!ka->wait.armed)
		return; /* an ACK nobody waits for (the peer's own) */
	http_timer_cancel(&ka->wait);
	keepalive_arm_interval(ka);
}

void http_h2_keepalive_rx(struct http_h2_keepalive *ka)
{
	ka->rx_ms = ka->w->now_ms;
	if (ka->wait.armed)
		http_timer_arm(ka->w, &ka->wait, ka->timeout_ms);
}

bool http_h2_keepalive_idle(const struct http_h2_keepalive *ka)
{
	return ka->idle_ms && ka->w->now_ms - ka->rx_ms > ka->idle_ms;
}

void http_h2_keepalive_stop(struct http_h2_keepalive *ka)
{
	http_timer_cancel(&ka->send);
	http_timer_cancel(&ka->wait);
}

bool http_h2_in_copy(struct http_worker *w, struct http_in *in, const uint8_t *p, size_t len)
{
	while (len) {
		struct rte_mbuf *t = in->tail;
		uint16_t room = t ? rte_pktmbuf_tailroom(t) : 0;
		if (!room) {
			struct rte_mbuf *m = http_mbuf(w);
			if (!m)
				return false;
			m->next = NULL;
			if (in->tail)
				in->tail->next = m;
			else
				in->head = m;
			in->tail = t = m;
			room = rte_pktmbuf_tailroom(t);
		}
		size_t k = len < room ? len : room;
		memcpy(rte_pktmbuf_mtod_offset(t, char *, t->data_len), p, k);
		t->data_len = (uint16_t)(t->data_len + k);
		t->pkt_len = t->data_len;
		in->bytes += (uint32_t)k;
		p += k;
		len -= k;
	}
	return true;
}

int http_h2_session_new(nghttp2_session **s, const struct http_h2_session_def *d, void *user,
			nghttp2_mem *mem, const struct arn_cfg_h2 *o,
			const nghttp2_settings_entry *iv, size_t n_iv, uint32_t conn_window)
{
	*s = NULL;
	nghttp2_session_callbacks *cb;
	nghttp2_option *opt;
	if (nghttp2_session_callbacks_new(&cb) != 0)
		return -ENOMEM;
	if (nghttp2_option_new(&opt) != 0) {
		nghttp2_session_callbacks_del(cb);
		return -ENOMEM;
	}
	nghttp2_session_callbacks_set_on_begin_headers_callback(cb, d->begin_headers);
	nghttp2_session_callbacks_set_on_begin_frame_callback(cb, d->begin_frame);
	nghttp2_session_callbacks_set_on_header_callback2(cb, d->header);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, d->frame_recv);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, d->data_chunk);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, d->stream_close);
	nghttp2_session_callbacks_set_on_frame_send_callback(cb, d->frame_send);
	nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(cb, d->invalid_frame);
	/* windows open only as the other side takes the bytes (http_h2.h,
	 * http_upstream_h2.h) */
	nghttp2_option_set_no_auto_window_update(opt, 1);
	nghttp2_option_set_max_outbound_ack(opt, o ? o->max_outbound_control_frames : 1000);
	/* CVE-2023-44487 (rapid reset): a client's streams, so the server's
	 * session only; nghttp2's own bound, at its default */
	if (d->server)
		nghttp2_option_set_stream_reset_rate_limit(opt, 1000, 33);
	/* CVE-2024-27316 (CONTINUATION flood): nghttp2's own bound, each
	 * side's (struct http_h2_session_def) */
	nghttp2_option_set_max_continuations(opt, d->max_continuations);
	nghttp2_option_set_max_settings(opt, 32);
	/* closed streams are not kept for the priority tree: neither their
	 * memory nor a user data pointer to a block given back */
	nghttp2_option_set_no_closed_streams(opt, 1);
	nghttp2_option_set_max_deflate_dynamic_table_size(opt, 4096);
	int rc = d->server ? nghttp2_session_server_new3(s, cb, user, opt, mem)
			   : nghttp2_session_client_new3(s, cb, user, opt, mem);
	nghttp2_session_callbacks_del(cb);
	nghttp2_option_del(opt);
	if (rc != 0) {
		*s = NULL;
		return -ENOMEM;
	}
	if (nghttp2_submit_settings(*s, NGHTTP2_FLAG_NONE, iv, n_iv) != 0 ||
	    nghttp2_session_set_local_window_size(*s, NGHTTP2_FLAG_NONE, 0, (int32_t)conn_window) !=
		0) {
		nghttp2_session_del(*s);
		*s = NULL;
		return -ENOMEM;
	}
	return 0;
}

int http_h2_send_frames(nghttp2_session *s, struct http_worker *w, struct http_h1_peer *d,
			struct arn_tcp_conn *tc, bool *fatal, size_t *framed)
{
	*framed = 0;
	if (d->out.chain) {
		int rc = http_tp_flush(d->tp, tc, &d->out);
		d->peer.queued = http_out_busy(&d->out);
		if (rc != 0)
			return rc;
	}
	struct http_wchain wc;
	http_wchain_init(&wc, w);
	size_t total = 0;
	while (total < HTTP_H2_OUT_MAX) {
		const uint8_t *data;
		ssize_t n = nghttp2_session_mem_send(s, &data);
		if (n < 0) {
			*fatal = true;
			break;
		}
		if (n == 0)
			break;
		if (arn_h1_put(&wc.wb, data, (size_t)n) != 0) {
			/* taken from nghttp2 and lost, even as the first
			 * frame of the call: the peer's framing would miss it */
			*fatal = true;
			break;
		}
		total += (size_t)n;
	}
	struct rte_mbuf *m = http_wchain_finish(&wc);
	if (!total) {
		if (m)
			rte_pktmbuf_free(m);
		return 0;
	}
	if (!m) {
		*fatal = true; /* out of mbufs: what was written is freed */
		return -ENOBUFS;
	}
	*framed = total;
	d->out.chain = m;
	int rc = http_tp_flush(d->tp, tc, &d->out);
	d->peer.queued = http_out_busy(&d->out);
	return rc;
}
