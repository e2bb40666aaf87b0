/*
 * envoy.filters.network.tcp_proxy's data path (http_tcpp.h): one session
 * per downstream connection, relaying its bytes to an upstream connection
 * and back.
 *
 * A session's life, as Envoy's TcpProxy::Filter:
 *
 *   1. accept: the network filters before tcp_proxy (connection_limit,
 *      local_ratelimit; RBAC waits for the first byte), then the cluster
 *      (cluster or weighted_clusters), a host (the cluster's lb_policy)
 *      and a connection to it, under the cluster's connect_timeout and
 *      max_connections; a failed attempt is retried on a new pick up to
 *      max_connect_attempts. Nothing is read from the downstream until the
 *      upstream is connected (Envoy disables its reads meanwhile).
 *   2. relay: each direction moves what the receiving side holds into the
 *      other side's send queue, as much as it has room for (zero copy:
 *      mbufs are relinked); a full send queue pauses that direction until
 *      lib/tcp says it is writable again. A FIN is passed on once
 *      everything before it was: each direction closes on its own
 *      (half-close), and the session ends when both have.
 *   3. timers: idle_timeout (no byte either way), max_downstream_
 *      connection_duration, the cluster's connect_timeout.
 *   4. end: when both connections are gone, the access log line and the
 *      statistics; the session block goes back to the worker.
 *
 * A reset (or a failed connect after the downstream started) on one side
 * resets the other, as Envoy closes without flushing then.
 *
 * A chain with a DownstreamTlsContext terminates TLS first (http_tls.h's
 * transport, as the HTTP connection's): the handshake runs while the
 * upstream connects; the downstream's records are decrypted into at most
 * HTTP_IN_MAX bytes of mbufs (dn_in) that go to the upstream's send queue
 * as they are, and the upstream's bytes are taken only as far as the
 * downstream's send buffer has room and encrypted from there (dn_out), so
 * neither way grows behind a slow reader. close_notify (or a FIN after
 * the last record) is the downstream's end of input, and the upstream's
 * FIN is passed on as close_notify then FIN.
 *
 * A cluster with an UpstreamTlsContext gets TLS from Arion (origination,
 * the HTTP router's code: http_tls.h over the cluster's context, with its
 * SNI, validation and cluster.<name>.ssl.* statistics): the upstream
 * counts as connected once its handshake is done (Envoy raises Connected
 * then), so a failed handshake is a failed attempt (retried up to
 * max_connect_attempts, counted in tcp.<stat_prefix>.upstream_tls_
 * handshake_failed) and no plaintext is ever sent to it. The same bounds
 * hold that way round: at most HTTP_IN_MAX bytes decrypted from the
 * upstream (up_in), the downstream's bytes taken only as far as the
 * upstream's send buffer has room (up_out); close_notify (or a FIN after
 * the last record) is the upstream's end, and the downstream's FIN goes
 * on as close_notify then FIN. Sessions are not resumed: a tcp_proxy
 * connection belongs to no pool whose last session it could offer.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_common.h>
#include <rte_mbuf.h>

#include "arn_config.h"
#include "arn_log.h"
#include "arn_rbac.h"
#include "arn_tcp.h"
#include "arn_tcp_proxy.h"
#include "http_glog.h"
#include "http_int.h"
#include "http_l4.h"
#include "http_od.h"
#include "http_stream.h"
#include "http_tcpp.h"
#include "http_tls.h"
#include "http_upp.h"
#include "http_worker.h"

/* Where a session is. */
enum tcpp_state {
	TP_CONNECTING = 0, /* waiting for an upstream connection */
	TP_RELAYING,	   /* both connected: bytes move */
	TP_CLOSING,	   /* refused, failed or timed out: the connections are going */
};

struct http_tcpp {
	struct http_tcpp *next; /* the worker's free list */
	struct http_worker *w;
	const struct arn_cfg_listener *lsn; /* pinned */
	const struct arn_cfg_filter_chain *fc;
	const struct arn_cfg_tcp_proxy *tp;    /* in lsn */
	struct http_hcm_rt *rt;		       /* tcp.<stat_prefix>.*, access logs; referenced */
	struct http_listener_rt *lrt;	       /* referenced */
	struct http_cx_adm cx_adm;	       /* its place under the connection limits */
	struct arn_tcp_conn *dn, *up;	       /* NULL once lib/tcp closed them */
	const struct arn_cfg_cluster *cluster; /* pinned */
	const struct arn_cfg_endpoints *eps;   /* pinned */
	struct http_cluster_rt *crt;	       /* referenced */
	struct arn_cfg_ref cref;	       /* the cluster's name, in tp */
	uint32_t laddr, raddr, up_addr;
	uint16_t lport, rport, up_port;
	uint32_t draddr; /* the TCP peer (raddr: a PROXY header's source) */
	uint32_t sladdr; /* TCP's local address, upstream connections' source */
	uint16_t drport;
	uint8_t state;		/* enum tcpp_state */
	uint32_t attempts;	/* connection attempts made (max_connect_attempts is a uint32) */
	uint8_t held;		/* connection_limit filters counting it */
	bool attempt_due;	/* conn_timer makes the next attempt (attempt()) */
	bool rbac_pending;	/* network RBAC decides on the first byte */
	bool rbac_denied;	/* it denied the connection (rbac_policy: the policy) */
	bool up_connected;	/* the current upstream connection is established */
	bool up_counted;	/* counted in the cluster's cx_active */
	uint8_t up_pp;		/* its PROXY header's version (upstream_proxy_protocol); 0: none */
	struct http_host *up_host; /* counted in its cx_active too (referenced), or NULL */
	bool connect_timed_out; /* the current attempt ran out of connect_timeout */
	bool dn_eof, up_eof;	/* FIN received from that side */
	bool dn_shut, up_shut;	/* FIN sent to that side */
	bool dn_paused;		/* reading downstream stopped: the upstream is full */
	bool up_paused;		/* reading upstream stopped: the downstream is full */
	bool in_step;		/* a step is on the stack */
	bool echo;		/* an echo filter's connection: dn only, no relay */
	/* the policy that denied it, or NULL (matched_policy[none]); in the
	 * pinned listener's configuration */
	const struct arn_cfg_rbac_policy *rbac_policy;
	bool utls_failed;	/* the current attempt's TLS handshake failed */
	/* what a side that closed orderly still held for the other (its
	 * receive queue goes with it): at most one receive buffer */
	struct rte_mbuf *pend_up, *pend_dn;
	bool again;	   /* something changed during it: step once more */
	uint32_t flags;	   /* ARN_RF_BIT() response flags */
	uint8_t log_hint;  /* an RBAC LOG filter's access_log_hint (enum arn_access_hint) */
	uint64_t rx_bytes; /* from downstream (to upstream) */
	uint64_t tx_bytes; /* to downstream (from upstream) */
	uint64_t id;
	uint64_t open_tsc, last_ms;
	int64_t start_wall_us;
	struct http_timer idle_timer; /* idle_timeout, then a refusal's delay */
	struct http_timer conn_timer; /* the attempt's connect_timeout, or the next attempt */
	struct http_timer dur_timer;  /* max_downstream_connection_duration */
	struct http_timer log_timer;  /* access_log_flush_interval */
	struct http_timer hs_timer;   /* the chain's transport_socket_connect_timeout */
	uint16_t sni_len;
	char sni[256]; /* the ClientHello's server name (passthrough), for RBAC and the log */
	/* TLS termination (tls.on): the downstream's plaintext both ways */
	struct http_in dn_in;	/* decrypted, not yet with the upstream */
	struct http_out dn_out; /* from the upstream, not yet encrypted */
	struct http_tls_tp tls; /* must not move while on (the block does not) */
	/* TLS origination (utls.on): the upstream's plaintext both ways.
	 * After tls: zero on the free list (tcpp_free clears the block). */
	struct http_in up_in;	 /* decrypted, not yet with the downstream */
	struct http_out up_out;	 /* from the downstream, not yet encrypted */
	struct http_tls_tp utls; /* must not move while on */
};

#define TS(s) ((s)->rt ? (s)->rt->stats : NULL)
#define TP_INC(s, name)                                                                            \
	do {                                                                                       \
		if (TS(s))                                                                         \
			arn_stats_inc(TS(s), (s)->w->slot, ARN_TCP_PROXY_##name);                  \
	} while (0)
#define TP_ADD(s, name, n)                                                                         \
	do {                                                                                       \
		if (TS(s))                                                                         \
			arn_stats_add(TS(s), (s)->w->slot, ARN_TCP_PROXY_##name, (n));             \
	} while (0)
#define TCL_INC(s, name)                                                                           \
	do {                                                                                       \
		if ((s)->crt)                                                                      \
			arn_stats_inc((s)->crt->stats, (s)->w->slot, ARN_CL_##name);               \
	} while (0)
#define TCL_ADD(s, name, n)                                                                        \
	do {                                                                                       \
		if ((s)->crt)                                                                      \
			arn_stats_add((s)->crt->stats, (s)->w->slot, ARN_CL_##name, (n));          \
	} while (0)

static const struct arn_tcp_ops tp_dn_ops, tp_up_ops;
static void step(struct http_tcpp *s);
static void attempt(struct http_tcpp *s);
static void tls_resume(void *arg);
static void tls_drain(struct http_tls_tp *t, struct arn_tcp_conn *c, struct http_in *in);

static struct http_tcpp *owner(struct http_timer *t, size_t off)
{
	return (struct http_tcpp *)(void *)((char *)t - off);
}

/* ---- the end ------------------------------------------------------------------------------ */

static void access_log(struct http_tcpp *s)
{
	struct http_hcm_rt *r = s->rt;
	if (!r || !r->n_logs)
		return;
	struct http_worker *w = s->w;
	struct arn_access_record rec;
	memset(&rec, 0, sizeof(rec));
	rec.start_time_us = s->start_wall_us;
	rec.duration_us = http_now_us(w, s->open_tsc);
	rec.request_duration_us = UINT64_MAX;
	rec.response_duration_us = UINT64_MAX;
	rec.response_tx_duration_us = UINT64_MAX;
	/* a TCP connection has no request: %PROTOCOL% and %RESPONSE_CODE%
	 * are "-" and 0, as Envoy writes them for tcp_proxy */
	rec.response_flags = s->flags;
	rec.bytes_received = s->rx_bytes;
	rec.bytes_sent = s->tx_bytes;
	rec.downstream_remote = (struct arn_access_addr){s->raddr, s->rport};
	rec.downstream_direct_remote = (struct arn_access_addr){s->draddr, s->drport};
	rec.downstream_local = (struct arn_access_addr){s->laddr, s->lport};
	if (s->up_addr)
		rec.upstream_host = (struct arn_access_addr){s->up_addr, s->up_port};
	if (s->cref.len)
		rec.upstream_cluster = (struct arn_access_str){s->cref.name, (uint32_t)s->cref.len};
	if (s->sni_len)
		rec.requested_server_name = (struct arn_access_str){s->sni, s->sni_len};
	rec.connection_id = s->id;
	rec.upstream_request_attempt_count = s->attempts;
	rec.access_log_hint = s->log_hint;
	/* Envoy's network RBAC sets the connection's termination details */
	char term[sizeof("rbac_access_denied_matched_policy[]") + 256];
	if (s->rbac_denied) {
		struct arn_rbac_decision d = {.policy = s->rbac_policy};
		size_t k = arn_rbac_details(&d, term, sizeof(term));
		rec.connection_termination_details =
		    (struct arn_access_str){term, (uint32_t)(k < sizeof(term) ? k : sizeof(term) - 1)};
	}
	for (unsigned i = 0; i < r->n_loggers; i++)
		arn_access_log_write(r->loggers[i], w->slot, &rec);
	if (r->n_glogs)
		r->glog_log(w, s->lsn, s->sladdr, r, &rec);
}

/* The upstream connection of the current attempt is gone: its counts end. */
static void up_uncount(struct http_tcpp *s)
{
	if (!s->up_counted)
		return;
	s->up_counted = false;
	if (s->up_host) {
		HTTP_HOST_ADD(http_host_ctr(s->up_host, s->w->idx), cx_active, -1);
		http_host_put(s->up_host);
		s->up_host = NULL;
	}
	if (s->crt) {
		__atomic_fetch_sub(&s->crt->cx_active, 1, __ATOMIC_RELAXED);
		arn_stats_gauge_add(s->crt->stats, s->w->slot, ARN_CL_upstream_cx_active, -1);
		TCL_INC(s, upstream_cx_destroy);
	}
}

static void tcpp_free(struct http_tcpp *s)
{
	struct http_worker *w = s->w;
	http_timer_cancel(&s->idle_timer);
	http_timer_cancel(&s->conn_timer);
	http_timer_cancel(&s->dur_timer);
	http_timer_cancel(&s->log_timer);
	http_timer_cancel(&s->hs_timer);
	access_log(s);
	up_uncount(s);
	if (s->pend_up)
		rte_pktmbuf_free(s->pend_up);
	if (s->pend_dn)
		rte_pktmbuf_free(s->pend_dn);
	http_in_free(&s->dn_in);
	http_out_reset(&s->dn_out);
	http_tls_stop(&s->tls);
	http_in_free(&s->up_in);
	http_out_reset(&s->up_out);
	http_tls_stop(&s->utls);
	http_l4_net_close(w, s->rt, s->fc, &s->held);
	http_cx_release(&s->cx_adm);
	if (s->lrt) {
		arn_stats_gauge_add(s->lrt->stats, w->slot, ARN_LS_downstream_cx_active, -1);
		arn_stats_inc(s->lrt->stats, w->slot, ARN_LS_downstream_cx_destroy);
		http_lrt_put(s->lrt);
	}
	if (s->cluster)
		arn_cfg_unpin(s->cluster);
	if (s->eps)
		arn_cfg_unpin(s->eps);
	http_crt_put(s->crt);
	http_rt_hcm_put(s->rt);
	if (s->lsn)
		arn_cfg_unpin(s->lsn);
	memset(s, 0, sizeof(*s));
	s->next = w->tcpp_free;
	w->tcpp_free = s;
}

/* Both connections gone (or never made): free it, unless a step is on the
 * stack (it frees it when it unwinds). */
static void maybe_free(struct http_tcpp *s)
{
	if (!s->dn && !s->up && !s->in_step && s->w)
		tcpp_free(s);
}

/* Close both sides now. @p reset: RST (Envoy's NoFlush close after a
 * failure); else queued bytes go, then FIN. */
static void close_both(struct http_tcpp *s, bool reset)
{
	s->state = TP_CLOSING;
	http_timer_cancel(&s->idle_timer);
	http_timer_cancel(&s->conn_timer);
	http_timer_cancel(&s->dur_timer);
	http_timer_cancel(&s->log_timer);
	http_timer_cancel(&s->hs_timer);
	struct arn_tcp_conn *c[2] = {s->dn, s->up};
	for (int i = 0; i < 2; i++) {
		if (!c[i])
			continue;
		if (reset) {
			arn_tcp_abort(c[i]);
		} else {
			/* TLS: close_notify before the FIN, as Envoy's close */
			if (c[i] == s->dn && s->tls.on && arn_tls_is_open(&s->tls.tls))
				(void)arn_tls_shutdown(&s->tls.tls);
			if (c[i] == s->up && s->utls.on && arn_tls_is_open(&s->utls.tls))
				(void)arn_tls_shutdown(&s->utls.tls);
			arn_tcp_rx_consume(c[i], arn_tcp_rx_pending(c[i]));
			arn_tcp_close(c[i]);
		}
		/* on_close follows from the poll for each */
	}
}

/* ---- relaying --------------------------------------------------------------------------- */

/* One side of a session as the relay sees it: its connection, and, when
 * TLS is on that side, its transport with the plaintext read from it (in)
 * and the plaintext being encrypted to it (out). */
struct side {
	struct arn_tcp_conn *c;
	struct http_tls_tp *tls; /* NULL: plain */
	struct http_in *in;
	struct http_out *out;
};

/* The first mbuf of @p in, out of it. */
static struct rte_mbuf *in_pop(struct http_in *in)
{
	struct rte_mbuf *m = in->head;
	in->head = m->next;
	if (!in->head)
		in->tail = NULL;
	in->bytes -= m->data_len;
	m->next = NULL;
	return m;
}

/*
 * Move what @p from holds (*@p left first: what a side that closed
 * orderly still held) into @p to, as much as @p to's send buffer has room
 * for: a plain sink takes the mbufs as they are (zero copy), a TLS sink
 * encrypts them into its send queue. A TLS source's records are decrypted
 * at most HTTP_IN_MAX at a time (the rest stays in TCP as records).
 * @return true when all of it went (or nothing was there), false when @p
 * to is full (paused: lib/tcp calls on_writable once it has room).
 */
static bool pump(const struct side *from, const struct side *to, struct rte_mbuf **left,
		 uint64_t *bytes)
{
	for (;;) {
		if (to->tls && http_out_busy(to->out)) {
			int rc = to->c ? http_tp_flush(&to->tls->t, to->c, to->out) : -ENOTCONN;
			if (rc == -EAGAIN)
				return false; /* on_writable was asked for */
			if (rc < 0) {
				http_out_reset(to->out);
				return true; /* the sink is gone: its close ends us */
			}
		}
		struct rte_mbuf *m = *left;
		*left = NULL;
		if (!m && from->tls) {
			if (!from->in->head &&
			    (!from->c || http_tp_fill(&from->tls->t, from->c, from->in) == 0 ||
			     !from->in->head))
				return true;
		} else if (!m && (!from->c || arn_tcp_rx_pending(from->c) == 0)) {
			return true;
		}
		uint32_t room = to->c ? arn_tcp_sndbuf_space(to->c) : 0;
		if (!m && room == 0) {
			if (to->c)
				arn_tcp_want_writable(to->c);
			return false;
		}
		if (!m && from->tls) {
			m = in_pop(from->in);
		} else if (!m) {
			m = arn_tcp_rx_take(from->c, RTE_MIN(arn_tcp_rx_pending(from->c), room));
			if (!m)
				return false; /* out of mbufs: the next event retries */
		}
		uint32_t n = m->pkt_len;
		if (to->tls) {
			*bytes += n;
			to->out->chain = m; /* encrypted by the flush above, next round */
			continue;
		}
		int rc = to->c ? arn_tcp_write_mbuf(to->c, m) : -ENOTCONN;
		if (rc == -EAGAIN) {
			*left = m; /* it stays first (on_writable follows) */
			return false;
		}
		if (rc < 0) {
			rte_pktmbuf_free(m);
			if (from->tls)
				http_in_free(from->in);
			return true; /* the other side is gone: its close ends us */
		}
		*bytes += n;
	}
}

/* One round of both directions, FINs passed on once all before them went. */
static void relay(struct http_tcpp *s)
{
	struct http_worker *w = s->w;
	uint64_t rx = s->rx_bytes, tx = s->tx_bytes;
	const struct side dn = {s->dn, s->tls.on ? &s->tls : NULL, &s->dn_in, &s->dn_out};
	const struct side up = {s->up, s->utls.on ? &s->utls : NULL, &s->up_in, &s->up_out};
	if (s->up && !s->up_shut) {
		bool done = pump(&dn, &up, &s->pend_up, &s->rx_bytes);
		if (!done && !s->dn_paused) {
			s->dn_paused = true;
			TP_INC(s, downstream_flow_control_paused_reading_total);
		} else if (done && s->dn_paused) {
			s->dn_paused = false;
			TP_INC(s, downstream_flow_control_resumed_reading_total);
		}
		if (done && s->dn_eof) {
			s->up_shut = true;
			/* half-close: the other way goes on */
			if (s->utls.on)
				http_tp_shutdown(&s->utls.t, s->up); /* close_notify, then FIN */
			else
				arn_tcp_shutdown(s->up);
		}
	}
	if (s->dn && !s->dn_shut) {
		bool done = pump(&up, &dn, &s->pend_dn, &s->tx_bytes);
		if (!done && !s->up_paused) {
			s->up_paused = true;
			TCL_INC(s, upstream_flow_control_paused_reading_total);
		} else if (done && s->up_paused) {
			s->up_paused = false;
			TCL_INC(s, upstream_flow_control_resumed_reading_total);
		}
		if (done && s->up_eof) {
			s->dn_shut = true;
			if (s->tls.on)
				http_tp_shutdown(&s->tls.t, s->dn); /* close_notify, then FIN */
			else
				arn_tcp_shutdown(s->dn);
		}
		/* the upstream may hold its next bytes behind Nagle until we ACK */
		if (s->up)
			arn_tcp_ack_now(s->up);
	}
	if (s->rx_bytes != rx || s->tx_bytes != tx) {
		s->last_ms = w->now_ms;
		TP_ADD(s, downstream_cx_rx_bytes_total, s->rx_bytes - rx);
		TP_ADD(s, downstream_cx_tx_bytes_total, s->tx_bytes - tx);
		TCL_ADD(s, upstream_cx_tx_bytes_total, s->rx_bytes - rx);
		TCL_ADD(s, upstream_cx_rx_bytes_total, s->tx_bytes - tx);
	}
	/* Both FINs passed on: each connection ends by itself once its peer
	 * has acknowledged ours and sent its own (lib/tcp's on_close). */
}

/* The network RBAC filters, on the first bytes of the downstream. @return
 * false when they denied it (the connection is closing). */
static bool rbac_first_byte(struct http_tcpp *s)
{
	s->rbac_pending = false;
	struct arn_rbac_input in = {
	    .src_addr = s->raddr,
	    .direct_addr = s->draddr,
	    .remote_addr = s->raddr,
	    .dst_addr = s->laddr,
	    .dst_port = s->lport,
	    .sni = {s->sni_len ? s->sni : NULL, s->sni_len},
	};
	/* authenticated matches a TLS-terminated session, principal_name
	 * over the client certificate's names */
	struct http_rbac_peer peer;
	http_rbac_peer(&in, s->tls.on ? &s->tls.tls : NULL, &peer);
	uint32_t delay = 0;
	struct arn_rbac_decision d = {0};
	if (http_l4_net_first_byte(s->w, s->rt, s->fc, &in, &delay, &s->log_hint, &d) == 0)
		return true;
	s->rbac_denied = true;
	s->rbac_policy = d.policy;
	/* denied: nothing is relayed; close after delay_deny */
	s->state = TP_CLOSING;
	if (s->up) {
		arn_tcp_abort(s->up);
	}
	if (s->dn)
		arn_tcp_rx_consume(s->dn, arn_tcp_rx_pending(s->dn));
	http_in_free(&s->dn_in);
	http_timer_cancel(&s->dur_timer);
	http_timer_arm(s->w, &s->idle_timer, delay ? delay : 1);
	return false;
}

/*
 * TLS: the downstream's handshake, while the upstream connects and before
 * a byte is relayed. @return true once it is open. A failed one (its alert
 * is with TCP) or a client that left mid-handshake closes both sides.
 */
static bool tls_ready(struct http_tcpp *s)
{
	int rc = http_tls_handshake(&s->tls);
	if (rc == 0) {
		http_timer_cancel(&s->hs_timer);
		return true;
	}
	if ((rc == -EAGAIN || rc == -EBUSY) && !s->dn_eof)
		return false;
	ARN_DEBUG(HTTP, "tcp_proxy connection %llx: TLS handshake failed (%d)",
		  (unsigned long long)s->id, rc);
	close_both(s, false);
	return false;
}

static void tp_od_put(struct http_tcpp *s, bool failed);

/* The upstream is there (connected, and its TLS open when originated):
 * the bytes may move. Envoy's Connected, which outlier detection hears. */
static void relaying(struct http_tcpp *s)
{
	if (__builtin_expect(s->cluster->outlier.present, 0) && s->crt)
		tp_od_put(s, false);
	s->state = TP_RELAYING;
	s->last_ms = s->w->now_ms;
	http_timer_cancel(&s->conn_timer);
	if (s->tp->flush_access_log_on_connected)
		access_log(s); /* Envoy's line when the upstream connected */
}

/*
 * TLS origination: the upstream's handshake, once TCP connected. @return
 * true once it is open (the session relays). A failed one (a certificate
 * the validation context refuses, an alert, the upstream gone) is a failed
 * connection attempt: counted, its TCP connection closed (the alert goes
 * first; connect_timeout resets one that lingers), and on_close makes the
 * next attempt or gives up; nothing was sent to it but the handshake.
 */
static bool utls_ready(struct http_tcpp *s)
{
	if (s->utls_failed)
		return false; /* closing: on_close follows */
	int rc = http_tls_handshake(&s->utls);
	if (rc == 0) {
		relaying(s);
		return true;
	}
	if ((rc == -EAGAIN || rc == -EBUSY) && !s->up_eof)
		return false;
	char why[160];
	if (!arn_tls_failure_reason(&s->utls.tls, why, sizeof(why)))
		snprintf(why, sizeof(why), "%s",
			 rc == -EAGAIN || rc == -EBUSY ? "closed" : "failed");
	ARN_DEBUG(HTTP, "tcp_proxy connection %llx: upstream TLS handshake failed (%d): %s",
		  (unsigned long long)s->id, rc, why);
	TP_INC(s, upstream_tls_handshake_failed);
	/* the alert, if any, is queued: close rather than reset */
	s->utls_failed = true;
	arn_tcp_close(s->up); /* on_close: the attempt failed */
	return false;
}

/* Has the downstream sent its first byte (RBAC decides on it, or on its
 * FIN: dn_eof)? With TLS, a byte of plaintext, decrypted now (the relay
 * takes it from dn_in; the fill also sets dn_eof at close_notify). */
static bool first_byte(struct http_tcpp *s)
{
	if (!s->tls.on)
		return arn_tcp_rx_pending(s->dn) != 0;
	if (!s->dn_in.head)
		(void)http_tp_fill(&s->tls.t, s->dn, &s->dn_in);
	return s->dn_in.head != NULL;
}

static void step_once(struct http_tcpp *s)
{
	if (s->state == TP_CLOSING) {
		/* discard what still comes while the connections go */
		if (s->dn)
			arn_tcp_rx_consume(s->dn, arn_tcp_rx_pending(s->dn));
		return;
	}
	if (s->tls.on && s->dn && !arn_tls_is_open(&s->tls.tls) && !tls_ready(s))
		return;
	/* a client's FIN with no byte before it is judged too (Envoy's RBAC
	 * filter runs on onData(end_stream) with an empty buffer): else its
	 * half-close would reach the upstream and the answer come back
	 * without RBAC having looked at the connection */
	if (s->rbac_pending && s->dn && (first_byte(s) || s->dn_eof) && !rbac_first_byte(s))
		return;
	if (s->state == TP_CONNECTING && s->utls.on && s->up_connected && !utls_ready(s))
		return;
	if (s->state != TP_RELAYING)
		return;
	relay(s);
	/* a side is gone and the other has nothing more to take from it:
	 * close what remains once its queue is out (FIN after the data) */
	if (!s->dn && s->up && !s->pend_up && !http_out_busy(&s->up_out) && s->up_shut) {
		s->state = TP_CLOSING;
		arn_tcp_rx_consume(s->up, arn_tcp_rx_pending(s->up));
		arn_tcp_close(s->up);
	} else if (!s->up && s->dn && !s->pend_dn && !http_out_busy(&s->dn_out) && s->dn_shut) {
		s->state = TP_CLOSING;
		arn_tcp_rx_consume(s->dn, arn_tcp_rx_pending(s->dn));
		arn_tcp_close(s->dn);
	}
}

static void step(struct http_tcpp *s)
{
	if (s->in_step) {
		s->again = true;
		return;
	}
	s->in_step = true;
	do {
		s->again = false;
		step_once(s);
	} while (s->again);
	s->in_step = false;
	maybe_free(s);
}

/* ---- timers ----------------------------------------------------------------------------- */

static void idle_timeout(struct http_timer *t)
{
	struct http_tcpp *s = owner(t, offsetof(struct http_tcpp, idle_timer));
	if (s->state == TP_CLOSING) {
		/* a refusal's delay ran out: close the downstream now */
		if (s->dn) {
			arn_tcp_rx_consume(s->dn, arn_tcp_rx_pending(s->dn));
			arn_tcp_close(s->dn);
		}
		return;
	}
	uint64_t idle = s->tp->idle_timeout_ms;
	if (!idle)
		return;
	uint64_t since = s->w->now_ms - s->last_ms;
	if (since < idle) {
		http_timer_arm(s->w, t, idle - since);
		return;
	}
	TP_INC(s, idle_timeout);
	close_both(s, false);
}

/* The client's TLS handshake outlasted transport_socket_connect_timeout
 * (Envoy's): an OpenSSL server handshake holds tens of KB of heap
 * (docs/tls.md), so a client that stalls it is closed now, not at the
 * idle timeout (1 h by default). */
static void hs_timeout(struct http_timer *t)
{
	struct http_tcpp *s = owner(t, offsetof(struct http_tcpp, hs_timer));
	if (s->state == TP_CLOSING || !s->dn || !s->tls.on || arn_tls_is_open(&s->tls.tls))
		return;
	if (s->lrt)
		arn_stats_inc(s->lrt->stats, s->w->slot,
			      ARN_LS_downstream_cx_transport_socket_connect_timeout);
	ARN_DEBUG(HTTP, "tcp_proxy connection %llx: TLS handshake not done in time",
		  (unsigned long long)s->id);
	close_both(s, false);
}

static void duration_timeout(struct http_timer *t)
{
	struct http_tcpp *s = owner(t, offsetof(struct http_tcpp, dur_timer));
	if (s->state == TP_CLOSING)
		return;
	TP_INC(s, max_downstream_connection_duration);
	close_both(s, false);
}

/* access_log_flush_interval: a line now (the counts so far), and again */
static void log_flush(struct http_timer *t)
{
	struct http_tcpp *s = owner(t, offsetof(struct http_tcpp, log_timer));
	if (s->state == TP_CLOSING)
		return;
	access_log(s);
	http_timer_arm(s->w, t, s->tp->access_log_flush_interval_ms);
}

static void attempt(struct http_tcpp *s);

static void connect_timeout(struct http_timer *t)
{
	struct http_tcpp *s = owner(t, offsetof(struct http_tcpp, conn_timer));
	if (s->attempt_due) {
		/* the attempt after one that failed in arn_tcp_connect() */
		s->attempt_due = false;
		if (s->state != TP_CONNECTING || !s->dn)
			return;
		s->in_step = true;
		attempt(s);
		s->in_step = false;
		maybe_free(s);
		return;
	}
	/* TLS origination: the handshake is under connect_timeout too */
	if (!s->up || (s->up_connected && !s->utls.on) || s->state != TP_CONNECTING)
		return;
	s->connect_timed_out = true;
	TCL_INC(s, upstream_cx_connect_timeout);
	arn_tcp_abort(s->up); /* on_close reports the failure (and the next attempt) */
}

/* ---- upstream ------------------------------------------------------------------------------ */

static uint32_t lb_active(void *ctx, const struct arn_cfg_endpoint *ep)
{
	(void)ctx;
	(void)ep;
	return 0;
}

/* No upstream for this connection: close the downstream (Envoy's
 * onInitFailure: the flag says why). */
static void give_up(struct http_tcpp *s, uint32_t flag)
{
	s->flags |= flag;
	close_both(s, false);
}

/* A connection to a host of the cluster for the next attempt. */
static void attempt(struct http_tcpp *s)
{
	struct http_worker *w = s->w;
	s->attempts++;
	s->up_connected = false;
	s->connect_timed_out = false;
	struct http_lb_in in = {
	    .cluster = s->cluster,
	    .eps = s->eps,
	    .rr = http_lb_rr(w, s->crt ? s->crt->hash : arn_cfg_hash(s->cref.name, s->cref.len)),
	    .rand = http_rand(w),
	    .active = lb_active,
	    .ctx = s,
	};
	if (s->tp->hash_source_ip &&
	    (s->cluster->lb == ARN_CFG_LB_RING_HASH || s->cluster->lb == ARN_CFG_LB_MAGLEV)) {
		in.has_hash = true;
		in.hash = http_lb_source_ip_hash(s->raddr); /* Envoy's */
	}
	/* TLS origination: a cluster whose context could not be built (logged
	 * on the control lcore, naming the cluster and the Secret or field)
	 * gets no connection rather than the plaintext it did not configure */
	struct arn_tls_ctx *tctx = NULL;
	if (s->cluster->upstream_tls && !s->cluster->n_ts_matches) {
		tctx = http_rt_upstream_tls(s->cluster, s->crt);
		if (!tctx) {
			TP_INC(s, upstream_tls_handshake_failed);
			TCL_INC(s, upstream_cx_connect_fail);
			give_up(s, ARN_RF_BIT(UPSTREAM_CONNECTION_FAILURE));
			return;
		}
	}
	uint32_t unejected = 0;
	/* the router's input: the hosts of a cluster with checks or outlier
	 * detection, the worker's cached candidates (http_lb_cache) */
	http_rt_lb_in(s->crt, w->idx, &in);
	/* outlier detection: the HTTP routers' ejections keep TCP proxy
	 * connections off the host too (tcp_proxy reports its connects:
	 * tp_od_put) */
	if (s->cluster->outlier.present && s->crt) {
		in.od_crt = s->crt;
		in.now_ms = s->w->now_ms;
		in.unejected = &unejected;
	}
	struct http_lb_out out;
	int prc = http_lb_pick(&in, &out);
	if (unejected)
		arn_stats_gauge_add(s->crt->stats, s->w->slot,
				    ARN_CL_outlier_detection_ejections_active, -(int64_t)unejected);
	if (prc != 0) {
		TCL_INC(s, upstream_cx_none_healthy);
		give_up(s, ARN_RF_BIT(NO_HEALTHY_UPSTREAM));
		return;
	}
	if (out.panic)
		TCL_INC(s, lb_healthy_panic);
	/* the cluster's max_connections, counted across workers as the
	 * HTTP pools count it */
	const struct arn_cfg_thresholds *th = &s->cluster->thresholds[0];
	if (s->crt &&
	    __atomic_load_n(&s->crt->cx_active, __ATOMIC_RELAXED) >= (int32_t)th->max_connections) {
		TCL_INC(s, upstream_cx_overflow);
		give_up(s, ARN_RF_BIT(UPSTREAM_OVERFLOW));
		return;
	}
	/* the host's connections, counted in its per-worker slots as the HTTP
	 * pools count theirs: per_host_thresholds' max_connections */
	struct http_host *h = NULL;
	if (s->crt) {
		size_t nh = 0;
		struct http_host *const *hosts = http_rt_hosts(s->crt, &nh);
		h = http_hosts_find(hosts, nh, out.ep->addr, out.ep->port);
	}
	if (h && s->cluster->host_max_connections != UINT32_MAX) {
		uint64_t n = 0;
		for (unsigned i = 0; i < h->n_slots; i++)
			n += __atomic_load_n(&h->slots[i].cx_active, __ATOMIC_RELAXED);
		if (n >= s->cluster->host_max_connections) {
			TCL_INC(s, upstream_cx_overflow);
			give_up(s, ARN_RF_BIT(UPSTREAM_OVERFLOW));
			return;
		}
	}
	s->up_addr = out.ep->addr;
	s->up_port = out.ep->port;
	s->up_pp = s->cluster->upstream_pp;
	if (s->cluster->n_ts_matches) {
		/* transport_socket_matches: the picked endpoint's entry (this
		 * generation's endpoint, so resolved here, once per connection) */
		const struct arn_cfg_ts_match *m = arn_cfg_tsm_resolve(s->cluster, out.ep);
		s->up_pp = m->pp_version;
		tctx = m->tls ? http_rt_tsm_tls(m, s->crt) : NULL;
		if (m->tls && !tctx) {
			TP_INC(s, upstream_tls_handshake_failed);
			TCL_INC(s, upstream_cx_connect_fail);
			give_up(s, ARN_RF_BIT(UPSTREAM_CONNECTION_FAILURE));
			return;
		}
	}
	int err = 0;
	struct arn_tcp_conn *up = arn_tcp_connect(w->lc, s->sladdr, s->up_addr, s->up_port,
						  &tp_up_ops, s, ARN_TCP_CC_DEFAULT, &err);
	if (up && s->cluster->keepalive)
		arn_tcp_set_keepalive(up, s->cluster->keepalive_time_s,
				      s->cluster->keepalive_intvl_s, s->cluster->keepalive_probes);
	if (!up) {
		/*
		 * Failed before a SYN went out. -ENOBUFS: this worker has no
		 * connection block left. That is a local overflow, as Envoy's
		 * circuit breaker is (no further attempt there either), and
		 * under a flood of clients each one waiting to try again
		 * would hold its own block the longer: give up now, which
		 * frees it. Anything else (-EADDRNOTAVAIL: no source port
		 * for that host) may go with another pick: the next attempt
		 * comes from the timer wheel, as Envoy raises an immediate
		 * connect error on its next loop, never from here, so that
		 * max_connect_attempts (up to 2^32) neither recurses nor
		 * holds the worker in a loop.
		 */
		TCL_INC(s, upstream_cx_connect_fail);
		if (err == -ENOBUFS) {
			give_up(s, ARN_RF_BIT(UPSTREAM_CONNECTION_FAILURE));
			return;
		}
		if (s->attempts < s->tp->max_connect_attempts) {
			s->attempt_due = true;
			http_timer_arm(w, &s->conn_timer, 1);
			return;
		}
		TCL_INC(s, upstream_cx_connect_attempts_exceeded);
		give_up(s, ARN_RF_BIT(UPSTREAM_CONNECTION_FAILURE));
		return;
	}
	s->up = up;
	s->up_counted = true;
	s->utls_failed = false;
	if (tctx) {
		struct arn_tls_stats *ssl = s->crt && s->crt->ssl && w->idx < ARN_STATS_MAX_WORKERS
						? &s->crt->ssl[w->idx]
						: &w->tls_stats;
		if (http_tls_start(&s->utls, w, up, tctx, ssl, &s->up_eof, tls_resume, s, NULL) <
		    0) {
			arn_tcp_abort(up); /* out of memory: on_close makes the next attempt */
			return;
		}
	}
	if (s->crt) {
		__atomic_fetch_add(&s->crt->cx_active, 1, __ATOMIC_RELAXED);
		arn_stats_gauge_add(s->crt->stats, w->slot, ARN_CL_upstream_cx_active, 1);
		TCL_INC(s, upstream_cx_total);
	}
	if (h) {
		http_host_ref(h);
		s->up_host = h;
		HTTP_HOST_ADD(http_host_ctr(h, w->idx), cx_active, 1);
	}
	http_timer_arm(w, &s->conn_timer,
		       s->cluster->connect_timeout_ms ? s->cluster->connect_timeout_ms : 5000);
}

/* Outlier detection hears how a connect to the picked host ended, as
 * Envoy's tcp_proxy reports it (LocalOriginConnectSuccessFinal, and
 * LocalOriginConnectFailed or LocalOriginTimeout): without
 * split_external_local_origin_errors a failure counts to
 * consecutive_5xx and consecutive_gateway_failure as the router's
 * connect failures do, a success resets them, and both count in the
 * interval's success rate and failure percentage (Envoy maps them to a
 * 200 and a 503 there). */
static void __attribute__((noinline)) tp_od_put(struct http_tcpp *s, bool failed)
{
	size_t n = 0;
	struct http_host *const *hosts = http_rt_hosts(s->crt, &n);
	struct http_host *h = http_hosts_find(hosts, n, s->up_addr, s->up_port);
	if (!h)
		return;
	struct http_od_ev ev;
	__atomic_fetch_add(failed ? &h->od_cx_fail : &h->od_cx_ok, 1, __ATOMIC_RELAXED);
	http_od_put(&s->cluster->outlier, s->crt, h, hosts, n,
		    failed ? HTTP_OD_LOCAL : HTTP_OD_CONNECTED, s->w->now_ms, http_rand(s->w), &ev);
	http_od_ev_stats(s->crt->stats, s->w->slot, &ev);
}

static void up_connected(struct arn_tcp_conn *c, int status)
{
	struct http_tcpp *s = arn_tcp_user(c);
	if (!s || status != 0)
		return; /* on_close follows with the reason */
	/* the PROXY header first, before TLS's ClientHello or a relayed byte:
	 * the client's addresses (a listener PROXY header's, when it had
	 * one), as Envoy's tcp_proxy sets ProxyProtocolFilterState */
	struct arn_pp_addrs a = {s->raddr, s->laddr, s->rport, s->lport};
	if (s->up_pp && !http_upp_send(c, s->up_pp, &a)) {
		arn_tcp_abort(c); /* on_close follows */
		return;
	}
	s->up_connected = true;
	/* TLS origination: connect_timeout covers the handshake too, as
	 * Envoy's (Connected comes once it is done) */
	if (!s->utls.on)
		http_timer_cancel(&s->conn_timer);
	if (s->crt)
		arn_stats_hist_record(s->crt->stats, s->w->slot, ARN_CL_upstream_cx_connect_ms,
				      http_now_us(s->w, s->open_tsc) / 1000);
	if (s->state != TP_CONNECTING)
		return;
	if (!s->utls.on)
		relaying(s);
	step(s); /* TLS: the handshake (step_once) */
}

/* ---- lib/tcp's callbacks, either side ------------------------------------------------------ */

/* Data from either side: the step reads it (relay, or TLS records). */
static void side_data(struct arn_tcp_conn *c, struct rte_mbuf *head, uint32_t len)
{
	(void)head;
	(void)len;
	struct http_tcpp *s = arn_tcp_user(c);
	if (s)
		step(s);
}

/* The FIN of side @p c, whose TLS is @p t and whose FIN flag @p eof. */
static void side_eof(struct http_tcpp *s, struct arn_tcp_conn *c, struct http_tls_tp *t, bool *eof)
{
	if (t->on)
		http_tp_eof(&t->t, c); /* the records before it first: the fill sets the flag */
	else
		*eof = true;
	step(s);
}

/* Side @p c (TLS @p t) has room again. */
static void side_writable(struct http_tcpp *s, struct arn_tcp_conn *c, struct http_tls_tp *t)
{
	if (t->on)
		http_tp_writable(&t->t, c); /* a handshake flight or alert first */
	step(s);
}

static void up_eof(struct arn_tcp_conn *c)
{
	struct http_tcpp *s = arn_tcp_user(c);
	if (s)
		side_eof(s, c, &s->utls, &s->up_eof);
}

static void up_writable(struct arn_tcp_conn *c)
{
	struct http_tcpp *s = arn_tcp_user(c);
	if (s)
		side_writable(s, c, &s->utls);
}

/*
 * lib/tcp closed @p c, one side of @p s, orderly (@p reason 0: both FINs
 * exchanged) or not. An orderly one hands what its receive queue still
 * holds to the relay (*@p left) and the other side finishes; any other
 * resets the other side, as Envoy closes without flushing then.
 */
static void side_closed(struct http_tcpp *s, struct arn_tcp_conn *c, int reason,
			struct rte_mbuf **left, bool *eof)
{
	if (s->state == TP_CLOSING) {
		/* going already; an upstream attempt in progress is of no use */
		if (s->up && !s->up_connected && !s->dn)
			arn_tcp_abort(s->up);
		return;
	}
	if (reason == 0 && s->state == TP_RELAYING) {
		uint32_t n = left ? arn_tcp_rx_pending(c) : 0; /* TLS: drained already */
		if (n) {
			struct rte_mbuf *m = arn_tcp_rx_take(c, n);
			if (m) {
				if (*left)
					rte_pktmbuf_chain(*left, m);
				else
					*left = m;
			}
		}
		*eof = true;
		step(s);
		return;
	}
	close_both(s, true);
}

static void up_closed(struct arn_tcp_conn *c, int reason)
{
	struct http_tcpp *s = arn_tcp_user(c);
	if (!s)
		return;
	arn_tcp_set_user(c, NULL);
	s->up = NULL;
	bool was = s->up_connected;
	s->up_connected = false;
	up_uncount(s);
	if (s->utls.on) {
		if (reason == 0 && s->state == TP_RELAYING && arn_tls_is_open(&s->utls.tls))
			tls_drain(&s->utls, c, &s->up_in);
		s->utls.tc = NULL;
		http_out_reset(&s->up_out); /* nobody to send it to */
	}
	if (s->state == TP_CONNECTING && (!was || s->utls.on)) {
		/* the attempt failed: refused, unreachable, connect_timeout, or
		 * (TLS origination) its handshake */
		if (s->utls.on && !s->utls_failed && was) {
			/* the upstream left mid-handshake */
			TP_INC(s, upstream_tls_handshake_failed);
		}
		http_tls_stop(&s->utls);
		TCL_INC(s, upstream_cx_connect_fail);
		if (s->cluster->outlier.present && s->crt)
			tp_od_put(s, true);
		s->in_step = true;
		if (s->attempts < s->tp->max_connect_attempts && s->dn) {
			attempt(s);
		} else {
			/* Envoy counts it whenever the attempts are used up */
			TCL_INC(s, upstream_cx_connect_attempts_exceeded);
			give_up(s, ARN_RF_BIT(UPSTREAM_CONNECTION_FAILURE));
		}
		s->in_step = false;
		maybe_free(s);
		return;
	}
	/* (not counted: an attempt we gave up, the client gone or denied) */
	if (was && (reason == 0 || reason == -ECONNRESET))
		TCL_INC(s, upstream_cx_destroy_remote);
	else if (was)
		TCL_INC(s, upstream_cx_destroy_local);
	if (reason != 0 && s->state == TP_RELAYING)
		s->flags |= ARN_RF_BIT(UPSTREAM_CONNECTION_TERMINATION);
	s->in_step = true;
	side_closed(s, c, reason, s->utls.on ? NULL : &s->pend_dn, &s->up_eof);
	s->in_step = false;
	step(s);
}

static const struct arn_tcp_ops tp_up_ops = {
    .on_connected = up_connected,
    .on_data = side_data,
    .on_eof = up_eof,
    .on_writable = up_writable,
    .on_close = up_closed,
};

/* ---- downstream ---------------------------------------------------------------------------- */

static void dn_eof(struct arn_tcp_conn *c)
{
	struct http_tcpp *s = arn_tcp_user(c);
	if (s)
		side_eof(s, c, &s->tls, &s->dn_eof);
}

static void dn_writable(struct arn_tcp_conn *c)
{
	struct http_tcpp *s = arn_tcp_user(c);
	if (s)
		side_writable(s, c, &s->tls);
}

/* A handshake the worker's budget deferred may go on. */
static void tls_resume(void *arg)
{
	step(arg);
}

/*
 * TLS: an orderly closed side's last records, decrypted now (its
 * receive queue goes with it). Past HTTP_IN_MAX: the plaintext is no
 * larger than the records TCP held already.
 */
static void tls_drain(struct http_tls_tp *t, struct arn_tcp_conn *c, struct http_in *in)
{
	for (;;) {
		struct http_in more = {0};
		uint32_t n = http_tp_fill(&t->t, c, &more);
		if (more.head)
			http_in_append(in, more.head);
		if (n == 0)
			break;
	}
}

static void dn_closed(struct arn_tcp_conn *c, int reason)
{
	struct http_tcpp *s = arn_tcp_user(c);
	if (!s)
		return;
	arn_tcp_set_user(c, NULL);
	s->dn = NULL;
	if (reason != 0 && s->state != TP_CLOSING)
		s->flags |= ARN_RF_BIT(DOWNSTREAM_CONNECTION_TERMINATION);
	s->in_step = true;
	if (s->tls.on) {
		if (reason == 0 && s->state == TP_RELAYING && arn_tls_is_open(&s->tls.tls))
			tls_drain(&s->tls, c, &s->dn_in);
		s->tls.tc = NULL;
		http_out_reset(&s->dn_out); /* nobody to send it to */
	}
	if (s->state == TP_CONNECTING)
		close_both(s, true); /* the client left before the upstream answered */
	else
		side_closed(s, c, reason, s->tls.on ? NULL : &s->pend_up, &s->dn_eof);
	s->in_step = false;
	step(s);
}

static const struct arn_tcp_ops tp_dn_ops = {
    .on_data = side_data,
    .on_eof = dn_eof,
    .on_writable = dn_writable,
    .on_close = dn_closed,
};

/* ---- echo ---------------------------------------------------------------------------------- */

/*
 * envoy.filters.network.echo's connections are lib/tcp's echo; a session
 * block only remembers their listener version and chain, so that a drain
 * can find and close them (http_tcpp_drain_end), and counts them as the
 * listener's active connections.
 */
static void echo_data(struct arn_tcp_conn *c, struct rte_mbuf *head, uint32_t len)
{
	(void)head;
	(void)len;
	struct http_tcpp *s = arn_tcp_user(c);
	if (s && s->state != TP_CLOSING)
		arn_tcp_echo_pump(c, s->dn_eof);
}

static void echo_eof(struct arn_tcp_conn *c)
{
	struct http_tcpp *s = arn_tcp_user(c);
	if (!s)
		return;
	s->dn_eof = true;
	if (s->state != TP_CLOSING)
		arn_tcp_echo_pump(c, true);
}

static void echo_closed(struct arn_tcp_conn *c, int reason)
{
	(void)reason;
	struct http_tcpp *s = arn_tcp_user(c);
	if (!s)
		return;
	arn_tcp_set_user(c, NULL);
	s->dn = NULL;
	maybe_free(s);
}

static void echo_data_writable(struct arn_tcp_conn *c)
{
	echo_data(c, NULL, 0);
}

static const struct arn_tcp_ops tp_echo_ops = {
    .on_data = echo_data,
    .on_eof = echo_eof,
    .on_writable = echo_data_writable,
    .on_close = echo_closed,
};

int http_tcpp_echo_open(struct http_worker *w, struct arn_tcp_conn *tc,
			const struct arn_cfg_listener *l, const struct arn_cfg_filter_chain *fc)
{
	struct http_listener_rt *lrt = http_rt_listener(l->addr, l->port);
	struct http_tcpp *s = w->tcpp_free;
	if (!s) {
		if (lrt)
			arn_stats_inc(lrt->stats, w->slot, ARN_LS_downstream_cx_overload_reject);
		return -ENOBUFS;
	}
	w->tcpp_free = s->next;
	memset(s, 0, sizeof(*s));
	s->w = w;
	s->echo = true;
	s->state = TP_RELAYING;
	http_cx_take(w, &s->cx_adm);
	arn_cfg_pin(l);
	s->lsn = l;
	s->fc = fc;
	s->lrt = lrt;
	if (lrt) {
		http_lrt_ref(lrt);
		arn_stats_inc(lrt->stats, w->slot, ARN_LS_downstream_cx_total);
		arn_stats_gauge_add(lrt->stats, w->slot, ARN_LS_downstream_cx_active, 1);
	}
	s->dn = tc;
	s->idle_timer.fn = idle_timeout; /* (never armed; tcpp_free cancels it) */
	arn_tcp_set_ops(tc, &tp_echo_ops);
	arn_tcp_set_user(tc, s);
	return 0;
}

/* ---- accept ------------------------------------------------------------------------------- */

int http_tcpp_open(struct http_worker *w, struct arn_tcp_conn *tc, const struct arn_cfg_listener *l,
		   const struct arn_cfg_filter_chain *fc, const char *sni, size_t sni_len,
		   struct arn_tls_ctx *tctx, struct arn_tls_stats *ssl)
{
	const struct arn_cfg_tcp_proxy *tp = fc->tcp_proxy;
	struct http_listener_rt *lrt = http_rt_listener(l->addr, l->port);
	struct http_tcpp *s = w->tcpp_free;
	if (!tp)
		return -ENOENT;
	if (!s) {
		if (lrt)
			arn_stats_inc(lrt->stats, w->slot, ARN_LS_downstream_cx_overload_reject);
		return -ENOBUFS;
	}
	struct http_tcpp *next = s->next;
	memset(s, 0, offsetof(struct http_tcpp, tls)); /* tls: zero, or http_tls_start's */
	s->next = next;
	if (tctx && http_tls_start(&s->tls, w, tc, tctx, ssl, &s->dn_eof, tls_resume, s, NULL) < 0)
		return -ENOMEM; /* still on the free list */
	w->tcpp_free = next;
	s->next = NULL;
	s->w = w;
	http_cx_take(w, &s->cx_adm);
	arn_cfg_pin(l);
	s->lsn = l;
	s->fc = fc;
	s->tp = tp;
	s->rt = http_rt_tcpp(tp);
	s->lrt = lrt;
	if (lrt) {
		http_lrt_ref(lrt);
		arn_stats_inc(lrt->stats, w->slot, ARN_LS_downstream_cx_total);
		arn_stats_gauge_add(lrt->stats, w->slot, ARN_LS_downstream_cx_active, 1);
	}
	s->dn = tc;
	arn_tcp_endpoints(tc, &s->laddr, &s->lport, &s->raddr, &s->rport);
	s->draddr = s->raddr;
	s->drport = s->rport;
	s->sladdr = s->laddr;
	if (w->dc_addrs) { /* a PROXY header's (http_conn.c) */
		s->laddr = w->dc_addrs->laddr;
		s->lport = w->dc_addrs->lport;
		s->raddr = w->dc_addrs->raddr;
		s->rport = w->dc_addrs->rport;
	}
	s->id = ((uint64_t)w->idx << 48) | ++w->next_conn_id;
	s->open_tsc = http_tsc(w);
	s->last_ms = w->now_ms;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	s->start_wall_us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
	if (sni && sni_len && sni_len < sizeof(s->sni)) {
		memcpy(s->sni, sni, sni_len);
		s->sni_len = (uint16_t)sni_len;
	}
	s->idle_timer.fn = idle_timeout;
	s->conn_timer.fn = connect_timeout;
	s->dur_timer.fn = duration_timeout;
	s->log_timer.fn = log_flush;
	s->hs_timer.fn = hs_timeout;
	arn_tcp_set_ops(tc, &tp_dn_ops);
	arn_tcp_set_user(tc, s);
	TP_INC(s, downstream_cx_total);
	s->in_step = true; /* nothing frees it before this returns */

	uint32_t deny_ms = 0;
	if (fc->n_l4_filters &&
	    http_l4_net_accept(w, s->rt, fc, &s->held, &s->rbac_pending, &deny_ms) != 0) {
		/* refused by a network filter: read nothing, close after delay_deny */
		s->state = TP_CLOSING;
		http_timer_arm(w, &s->idle_timer, deny_ms ? deny_ms : 1);
		s->in_step = false;
		return 0;
	}
	if (tctx && fc->transport_socket_connect_timeout_ms)
		http_timer_arm(w, &s->hs_timer, fc->transport_socket_connect_timeout_ms);
	if (tp->max_downstream_connection_duration_ms)
		http_timer_arm(w, &s->dur_timer, tp->max_downstream_connection_duration_ms);
	if (tp->idle_timeout_ms)
		http_timer_arm(w, &s->idle_timer, tp->idle_timeout_ms);
	if (tp->access_log_flush_interval_ms)
		http_timer_arm(w, &s->log_timer, tp->access_log_flush_interval_ms);

	/* the cluster (Envoy: downstream_cx_no_route when it does not exist) */
	const struct arn_cfg_ref *ref = arn_tcp_proxy_cluster(tp, http_rand(w));
	const struct arn_cfg_gen *g = w->store ? arn_config_gen(w->store) : NULL;
	struct arn_cfg_cluster_view v;
	if (!g || arn_cfg_cluster_resolve(g, ref, &v) != 0) {
		TP_INC(s, downstream_cx_no_route);
		give_up(s, ARN_RF_BIT(NO_CLUSTER_FOUND));
		s->in_step = false;
		return 0;
	}
	s->cref = *ref;
	arn_cfg_pin(v.cluster);
	arn_cfg_pin(v.endpoints);
	s->cluster = v.cluster;
	s->eps = v.endpoints;
	s->crt = http_rt_cluster(ref->name, ref->len,
				 ref->hash ? ref->hash : arn_cfg_hash(ref->name, ref->len));
	if (s->crt)
		http_crt_ref(s->crt);
	attempt(s);
	s->in_step = false;
	/* a passthrough ClientHello is in the queue already: RBAC decides now */
	if (s->state == TP_CONNECTING && s->rbac_pending && arn_tcp_rx_pending(tc))
		step(s);
	return 0;
}

/* A drain of listener version @p l is under way on @p w. */
static bool draining(const struct http_worker *w, const struct arn_cfg_listener *l)
{
	for (uint32_t i = 0; i < HTTP_DRAINS_MAX; i++)
		if (w->drains[i].l == l)
			return true;
	return false;
}

uint32_t http_tcpp_drain_end(struct http_worker *w, const struct arn_cfg_listener *l,
			     const struct arn_cfg_listener *now)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < w->n_tcpps; i++) {
		struct http_tcpp *s = &w->tcpps[i];
		if (!s->w || !s->lsn || s->state == TP_CLOSING || s->lsn == now ||
		    s->lsn->addr != l->addr || s->lsn->port != l->port)
			continue;
		/* an older version's session, still timed by its own drain */
		if (s->lsn != l && draining(w, s->lsn))
			continue;
		/* Envoy's in-place filter chain update: an unchanged chain's
		 * connections stay */
		if (arn_cfg_filter_chain_kept(s->lsn, s->fc, now))
			continue;
		if (s->lrt)
			arn_stats_inc(s->lrt->stats, w->slot, ARN_LS_downstream_cx_drained);
		n++;
		close_both(s, false); /* each side's on_close follows from the poll */
	}
	return n;
}

void http_tcpp_shutdown(struct http_worker *w)
{
	static const struct arn_tcp_ops none = {0};
	for (uint32_t i = 0; i < w->n_tcpps; i++) {
		struct http_tcpp *s = &w->tcpps[i];
		if (!s->w)
			continue;
		struct arn_tcp_conn *c[2] = {s->dn, s->up};
		for (int k = 0; k < 2; k++) {
			if (!c[k])
				continue;
			arn_tcp_set_ops(c[k], &none);
			arn_tcp_set_user(c[k], NULL);
			arn_tcp_abort(c[k]);
		}
		s->dn = s->up = NULL;
		s->in_step = false;
		tcpp_free(s);
	}
}

int http_tcpp_worker_init(struct http_worker *w, uint32_t n)
{
	size_t bytes = RTE_ALIGN_CEIL((size_t)n * sizeof(struct http_tcpp), RTE_CACHE_LINE_SIZE);
	w->tcpps = aligned_alloc(RTE_CACHE_LINE_SIZE, bytes ? bytes : RTE_CACHE_LINE_SIZE);
	if (!w->tcpps)
		return -ENOMEM;
	memset(w->tcpps, 0, bytes); /* first touch on the worker's socket */
	w->n_tcpps = n;
	w->tcpp_free = NULL;
	for (uint32_t i = n; i-- > 0;) {
		w->tcpps[i].next = w->tcpp_free;
		w->tcpp_free = &w->tcpps[i];
	}
	return 0;
}

void http_tcpp_worker_fini(struct http_worker *w)
{
	free(w->tcpps);
	w->tcpps = NULL;
	w->tcpp_free = NULL;
	w->n_tcpps = 0;
}
