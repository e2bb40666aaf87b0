/*
 * Receiving: segment parsing and validation, the RFC 9293 3.10.7 event
 * processing for every state, with RFC 7323 (PAWS, timestamps), RFC 5961
 * (RST/SYN/ACK validation, challenge ACKs), RFC 2018/6675 (SACK) and
 * RFC 5681/6582 (duplicate ACKs, fast retransmit, NewReno) folded in;
 * listeners, the SYN queue and SYN cookies.
 */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include <rte_ip.h>
#include <rte_tcp.h>

#include "arn_log.h"
#include "tcp_int.h"
#include "tcp_cksum.h"
#include "tcp_timer.h"
#include "tcp_rack.h"
#include "tcp_rmem.h"
#include "tcp_stash.h"

/* ---- parsing -------------------------------------------------------------------- */

void tcp_parse_options(struct tcp_seg *s, const uint8_t *p, unsigned len)
{
	unsigned i = 0;
	/* The layout nearly every segment of a connection with timestamps
	 * has (RFC 7323 appendix A): NOP, NOP, TS. Linux takes the same
	 * shortcut (tcp_parse_aligned_timestamp). SACK blocks may follow. */
	if (len >= 12 && p[0] == 1 && p[1] == 1 && p[2] == 8 && p[3] == 10) {
		uint32_t a, b;
		memcpy(&a, p + 4, 4);
		memcpy(&b, p + 8, 4);
		s->has_ts = true;
		s->tsval = rte_be_to_cpu_32(a);
		s->tsecr = rte_be_to_cpu_32(b);
		if (len == 12)
			return;
		i = 12;
	}
	while (i < len) {
		uint8_t kind = p[i];
		if (kind == 0)
			return;
		if (kind == 1) {
			i++;
			continue;
		}
		if (i + 1 >= len)
			return;
		uint8_t olen = p[i + 1];
		if (olen < 2 || i + olen > len)
			return;
		const uint8_t *o = p + i + 2;
		switch (kind) {
		case 2:
			if (olen == 4) {
				s->has_mss = true;
				s->mss = (uint16_t)(o[0] << 8 | o[1]);
			}
			break;
		case 3:
			if (olen == 3) {
				s->has_ws = true;
				s->ws = o[0] > 14 ? 14 : o[0]; /* RFC 7323 2.3 */
			}
			break;
		case 4:
			if (olen == 2)
				s->sack_ok = true;
			break;
		case 5:
			if (olen >= 10 && (olen - 2) % 8 == 0) {
				unsigned n = (olen - 2u) / 8;
				for (unsigned k = 0; k < n && k < 4; k++) {
					uint32_t a, b;
					memcpy(&a, o + 8 * k, 4);
					memcpy(&b, o + 8 * k + 4, 4);
					s->sack[k].start = rte_be_to_cpu_32(a);
					s->sack[k].end = rte_be_to_cpu_32(b);
				}
				s->n_sack = (uint8_t)(n < 4 ? n : 4);
			}
			break;
		case 8:
			if (olen == 10) {
				uint32_t a, b;
				memcpy(&a, o, 4);
				memcpy(&b, o + 4, 4);
				s->has_ts = true;
				s->tsval = rte_be_to_cpu_32(a);
				s->tsecr = rte_be_to_cpu_32(b);
			}
			break;
		default:
			break;
		}
		i += olen;
	}
}

/* ---- helpers ---------------------------------------------------------------------------- */

static void set_mss(struct arn_tcp_conn *c)
{
	c->mss = tcp_mss_clamp(c->wk, c->peer_mss, c->raddr, (c->flags & TF_TS_OK) != 0);
}

static void negotiate(struct arn_tcp_conn *c, const struct tcp_seg *s)
{
	if (s->has_ws) {
		c->flags |= TF_WS_OK;
		c->snd_ws = s->ws;
	} else {
		c->snd_ws = 0;
		c->rcv_ws = 0;
	}
	if (s->has_ts) {
		c->flags |= TF_TS_OK;
		c->ts_recent = c->ts_echo = s->tsval;
		c->ts_recent_age = c->wk->now_ms;
	}
	if (s->sack_ok)
		c->flags |= TF_SACK_OK;
	c->peer_mss = s->has_mss && s->mss ? s->mss : TCP_DEFAULT_MSS;
	set_mss(c);
}

static void handshake_rtt(struct arn_tcp_conn *c, const struct tcp_seg *s)
{
	if (c->flags & TF_SYN_RTX) {
		/* RFC 6298 5.7: no sample from an ambiguous handshake, and a
		 * 3 s RTO once data flows */
		c->rto = TCP_RTO_SYN_FALLBACK_MS;
		return;
	}
	/* RFC 7323 4.1: only an echo of a TSval we sent since the SYN left is
	 * a sample; the peer writes TSecr, and one from our future (a wrapped
	 * 2^32 - 1 ms) or far past set SRTT to minutes and the RTO to its
	 * ceiling. Anything else: the handshake's own timing (Linux's
	 * tcp_synack_rtt_meas). */
	uint32_t since = (uint32_t)(c->wk->now_ms - c->rtt_start);
	if ((c->flags & TF_TS_OK) && s->has_ts && s->tsecr) {
		uint32_t rtt = tcp_ts_now(c) - s->tsecr;
		if (rtt <= since) {
			tcp_rtt_update_ms(c, rtt);
			return;
		}
	}
	tcp_rtt_update_ms(c, since);
}

static void start_keepalive(struct arn_tcp_conn *c)
{
	if (c->flags & TF_KEEPALIVE) {
		c->t_keep = c->wk->now_ms + c->keep_idle_ms;
		tcp_timer_update(c);
	} else {
		c->t_keep = 0;
	}
}

static void established_common(struct arn_tcp_conn *c, const struct tcp_seg *s)
{
	/* RFC 7323 2.2: the window field of a SYN is never scaled */
	c->snd_wnd = (s->flags & TH_SYN) ? s->wnd : (uint32_t)s->wnd << c->snd_ws;
	c->max_sndwnd = c->snd_wnd;
	c->snd_wl1 = s->seq;
	c->snd_wl2 = s->ack;
	/* BBR's samples come from the transmission records, which need SACK:
	 * a peer without it gets CUBIC */
	if (c->cc == &tcp_cc_bbr && !(c->flags & TF_SACK_OK))
		c->cc = &tcp_cc_cubic;
	c->cc->init(c);
	if (c->flags & TF_SYN_RTX)
		c->cwnd = c->mss; /* RFC 5681 3.1: IW is 1 segment after a lost SYN */
	c->recover = c->snd_una;
	c->cwnd_lim_seq = c->snd_una;
	c->high_rxt = c->snd_una;
	c->rack_fack = c->snd_una;
	c->reo_wnd_mult = 1;
	c->backoff = 0;
	c->t_rexmt = 0;
	c->flags &= ~TF_PERSIST;
	c->rcv_adv = c->rcv_nxt + RTE_MIN(c->rcvbuf, 65535u); /* what the SYN offered */
	if (c->rcvbuf < c->wk->rcvbuf_max)
		tcp_rcv_space_init(c); /* autotuning's first measurement */
	tcp_set_state(c, TCPS_ESTABLISHED);
	start_keepalive(c);
	tcp_timer_update(c);
}

/* The application learns about a passive connection. @return false if
 * it refused it (the connection has been reset). */
static bool accept_conn(struct arn_tcp_conn *c)
{
	struct arn_tcp_worker *wk = c->wk;
	struct arn_tcp_listener *l = c->lsn;
	if (l) {
		if (l->syn_queued)
			l->syn_queued--;
		c->lsn = NULL;
	}
	TCP_INC(wk, ACCEPTED);
	c->flags |= TF_ACCEPTED;
	if (c->ops && c->ops->on_accept) {
		int rc = c->ops->on_accept(c, c->user);
		if (rc < 0 && c->state != TCPS_CLOSED) {
			c->flags &= ~TF_ACCEPTED;
			TCP_INC(wk, RST_REFUSED);
			tcp_send_rst_conn(c);
			tcp_conn_drop(c, rc);
			return false;
		}
	}
	return c->state != TCPS_CLOSED;
}

static void connected(struct arn_tcp_conn *c)
{
	TCP_INC(c->wk, CONNECTED);
	if (c->ops && c->ops->on_connected && !(c->flags & TF_APP_CLOSED))
		c->ops->on_connected(c, 0);
	if (c->state != TCPS_CLOSED)
		tcp_want_output(c);
}

/* ---- LISTEN ----------------------------------------------------------------------------- */

static void send_cookie(struct arn_tcp_worker *wk, const struct tcp_seg *s)
{
	uint16_t mss;
	uint16_t want = s->has_mss && s->mss ? s->mss : TCP_DEFAULT_MSS;
	want = RTE_MIN(want, tcp_adv_mss(wk, s->src));
	uint32_t isn = tcp_cookie_make(wk, s, want, &mss);
	int ws = -1;
	uint32_t tsval = 0;
	if (s->has_ts) {
		uint8_t rws = tcp_rcv_wscale(wk);
		/* The peer's scale, which nothing else could give back (ours
		 * follows from the worker's buffers, tcp_rcv_wscale), as Linux's
		 * cookie_init_timestamp keeps it. */
		unsigned bits = 0x20 | (s->sack_ok ? 0x10 : 0) | (s->has_ws ? s->ws : 0xf);
		if (s->has_ws)
			ws = rws;
		uint32_t now = (uint32_t)wk->now_ms + (uint32_t)wk->key[1];
		tsval = (now & ~0x3fu) | bits;
		if (seq_gt(tsval, now))
			tsval -= 64;
	}
	TCP_INC(wk, SYN_COOKIES_SENT);
	tcp_send_synack_cookie(wk, s, isn, tsval, mss, ws, s->has_ts && s->sack_ok);
}

static struct arn_tcp_conn *cookie_conn(struct arn_tcp_worker *wk, struct arn_tcp_listener *l,
					const struct tcp_seg *s)
{
	uint16_t mss = tcp_cookie_check(wk, s);
	if (mss == 0)
		return NULL;
	struct arn_tcp_conn *c = tcp_conn_alloc(wk, true);
	if (c == NULL)
		return NULL;
	tcp_conn_init_common(wk, c, s->dst, s->dport, s->src, s->sport, l->cc);
	c->flags |= TF_PASSIVE;
	c->ops = l->ops;
	c->user = l->user;
	c->irs = s->seq - 1;
	c->rcv_nxt = s->seq;
	c->iss = s->ack - 1;
	c->snd_una = c->snd_nxt = c->snd_max = s->ack;
	c->peer_mss = mss;
	if (s->has_ts && (s->tsecr & 0x20)) {
		c->flags |= TF_TS_OK;
		c->ts_recent = c->ts_echo = s->tsval;
		c->ts_recent_age = wk->now_ms;
		c->ts_offset = (uint32_t)wk->key[1];
		if (s->tsecr & 0x10)
			c->flags |= TF_SACK_OK;
		if ((s->tsecr & 0xf) != 0xf) {
			c->flags |= TF_WS_OK;
			/* Without it every window the peer offers would be
			 * read 2^scale times too small: a client that
			 * connected during a flood got 63 bytes per ACK, and
			 * waited for its own delayed ACK between them. */
			c->snd_ws = s->tsecr & 0xf;
		} else {
			c->rcv_ws = 0;
		}
	} else {
		c->rcv_ws = 0;
	}
	set_mss(c);
	TCP_INC(wk, SYN_COOKIES_OK);
	c->rtt_start = wk->now_ms;
	c->flags |= TF_SYN_RTX; /* no handshake RTT sample */
	established_common(c, s);
	c->rto = TCP_RTO_INIT_MS;
	c->cwnd = 10u * c->mss;
	c->flags &= ~TF_SYN_RTX;
	if (l->keepalive)
		arn_tcp_set_keepalive(c, 7200, 75, 9);
	tcp_hash_insert(wk, c);
	return c;
}

static void conn_input(struct arn_tcp_conn *c, struct tcp_seg *s, struct rte_mbuf *m);
static inline bool fast_input(struct arn_tcp_conn *c, struct tcp_seg *s, struct rte_mbuf *m);

static void listen_input(struct arn_tcp_worker *wk, struct tcp_seg *s, struct rte_mbuf *m)
{
	struct arn_tcp_listener *l = tcp_listener_find(wk, s->dst, s->dport);
	if (l == NULL || (s->flags & TH_RST)) {
		if (!(s->flags & TH_RST)) {
			TCP_INC(wk, RST_NO_LISTENER);
			tcp_send_rst_reply(wk, s);
		}
		rte_pktmbuf_free(m);
		return;
	}
	if (s->flags & TH_ACK) {
		/* A cookie is only looked for while one may be out (Linux's
		 * tcp_synq_no_recent_overflow): a bare ACK long after the last
		 * cookie is just a stray segment, and answering it by checking
		 * costs a hash and offers 2^24 guesses per second for free. */
		bool cookie_window =
		    l->cookie_sent_ms && wk->now_ms - l->cookie_sent_ms <= TCP_COOKIE_VALID_MS;
		if (!(s->flags & (TH_SYN | TH_FIN)) && cookie_window) {
			if (tcp_rmem_refuse_new(wk)) {
				rte_pktmbuf_free(m);
				return;
			}
			struct arn_tcp_conn *c = cookie_conn(wk, l, s);
			if (c) {
				if (!accept_conn(c)) {
					rte_pktmbuf_free(m);
					return;
				}
				if (!fast_input(c, s, m))
					conn_input(c, s, m);
				return;
			}
			if (wk->n_free <= wk->reserve && tcp_cookie_check(wk, s)) {
				/* valid cookie, no block: let the peer retry */
				rte_pktmbuf_free(m);
				return;
			}
			TCP_INC(wk, SYN_COOKIES_BAD);
		}
		TCP_INC(wk, RST_NO_LISTENER);
		tcp_send_rst_reply(wk, s);
		rte_pktmbuf_free(m);
		return;
	}
	if (!(s->flags & TH_SYN) || (s->flags & TH_FIN)) {
		rte_pktmbuf_free(m);
		return;
	}
	/* A SYN. Data on it is dropped (no TCP Fast Open); the peer sends it
	 * again after the handshake. */
	rte_pktmbuf_free(m);
	/* the mbuf pool is nearly empty: established connections first */
	if (tcp_rmem_refuse_new(wk))
		return;
	struct arn_tcp_conn *c = NULL;
	if (l->syn_queued >= l->backlog)
		TCP_INC(wk, SYN_QUEUE_FULL);
	else
		c = tcp_conn_alloc(wk, true);
	if (c == NULL) {
		l->cookie_sent_ms = wk->now_ms ? wk->now_ms : 1;
		send_cookie(wk, s);
		return;
	}
	tcp_conn_init_common(wk, c, s->dst, s->dport, s->src, s->sport, l->cc);
	c->flags |= TF_PASSIVE;
	c->ops = l->ops;
	c->user = l->user;
	c->lsn = l;
	l->syn_queued++;
	c->irs = s->seq;
	c->rcv_nxt = s->seq + 1;
	c->rcv_adv = c->rcv_nxt;
	negotiate(c, s);
	c->snd_wnd = s->wnd; /* never scaled in a SYN */
	c->iss = tcp_isn(wk, c->laddr, c->lport, c->raddr, c->rport);
	c->snd_una = c->iss;
	c->snd_nxt = c->snd_max = c->iss + 1;
	/* RFC 3168 6.1.1: a SYN with ECE and CWR asks for ECN; the SYN-ACK
	 * answers with ECE alone (tcp_out.c). Operators' fabrics mark CE
	 * instead of dropping: the sender then slows down without a loss. */
	if ((s->flags & (TH_ECE | TH_CWR)) == (TH_ECE | TH_CWR)) {
		c->ecn = TCP_ECN_OK;
		c->ecn_high = c->iss;
		TCP_INC(wk, ECN_NEGOTIATED);
	}
	c->rtt_start = wk->now_ms;
	if (l->keepalive)
		arn_tcp_set_keepalive(c, 7200, 75, 9);
	tcp_set_state(c, TCPS_SYN_RECEIVED);
	tcp_hash_insert(wk, c);
	tcp_send_syn(c);
	tcp_rexmt_arm(c);
}

/* ---- SYN-SENT ----------------------------------------------------------------------------- */

static void syn_sent_input(struct arn_tcp_conn *c, struct tcp_seg *s, struct rte_mbuf *m)
{
	struct arn_tcp_worker *wk = c->wk;
	rte_pktmbuf_free(m); /* data on a SYN-ACK is rare; the peer resends it */
	bool ack_ok = false;
	if (s->flags & TH_ACK) {
		if (seq_leq(s->ack, c->iss) || seq_gt(s->ack, c->snd_max)) {
			if (!(s->flags & TH_RST)) {
				TCP_INC(wk, RST_BAD_ACK);
				tcp_send_rst_reply(wk, s);
			}
			return;
		}
		ack_ok = true;
		/* RFC 7323 3.2 and 5.3, as Linux's tcp_rcv_synsent_state_process
		 * (PAWSActiveRejected): a timestamp echo that is none we sent,
		 * not between our first SYN's TSval and our clock now, is no
		 * answer to our SYN (an old duplicate, or forged): a RST for a
		 * SYN-ACK, nothing for a RST, and the connection waits in
		 * SYN-SENT for the real answer, retransmitting its SYN. A TSecr
		 * of 0 is a peer that echoes nothing yet: taken. */
		if (s->has_ts && s->tsecr &&
		    s->tsecr - ((uint32_t)c->rtt_start + c->ts_offset) >
			(uint32_t)(wk->now_ms - c->rtt_start)) {
			TCP_INC(wk, PAWS_SYNACK_REJECTED);
			if (!(s->flags & TH_RST))
				tcp_send_rst_reply(wk, s);
			return;
		}
	}
	if (s->flags & TH_RST) {
		if (ack_ok) {
			TCP_INC(wk, RST_RECEIVED);
			TCP_INC(wk, CONNECT_FAILED);
			if (c->ops && c->ops->on_connected && !(c->flags & TF_APP_CLOSED))
				c->ops->on_connected(c, -ECONNREFUSED);
			tcp_conn_drop(c, -ECONNREFUSED);
		}
		return;
	}
	if (!(s->flags & TH_SYN))
		return;
	c->irs = s->seq;
	c->rcv_nxt = s->seq + 1;
	c->rcv_adv = c->rcv_nxt;
	negotiate(c, s);
	if (ack_ok) {
		c->snd_una = s->ack;
		handshake_rtt(c, s);
		established_common(c, s);
		c->flags |= TF_ACK_NOW;
		connected(c);
		return;
	}
	/* Simultaneous open (RFC 9293 3.5, figure 8). */
	tcp_set_state(c, TCPS_SYN_RECEIVED);
	c->snd_wnd = s->wnd;
	tcp_send_syn(c);
	tcp_rexmt_arm(c);
}

/* ---- synchronized states ------------------------------------------------------------------ */

static inline __attribute__((always_inline)) void sndq_drop(struct arn_tcp_conn *c, uint32_t n)
{
	struct tcp_q *q = &c->sndq;
	struct rte_mbuf *h = q->head;
	if (n == q->bytes && h != NULL && h == q->tail) {
		/* All of a one-mbuf queue, the usual ACK of a request-response
		 * exchange: the loop's outcome without its steps (the queue's
		 * only mbuf has no next; snd_cur, when set, is it). */
		q->head = q->tail = NULL;
		q->bytes = 0;
		q->n = 0;
		c->snd_cur = NULL;
		tcp_mbuf_done(c->wk, h);
		return;
	}
	while (n > 0 && q->head) {
		struct rte_mbuf *m = q->head;
		if (m->data_len <= n) {
			n -= m->data_len;
			q->bytes -= m->data_len;
			q->n--;
			q->head = m->next;
			if (q->head == NULL)
				q->tail = NULL;
			if (c->snd_cur == m)
				c->snd_cur = NULL;
			m->next = NULL;
			tcp_mbuf_done(c->wk, m);
		} else {
			rte_pktmbuf_adj(m, (uint16_t)n);
			q->bytes -= n;
			n = 0;
			if (c->snd_cur == m)
				c->snd_cur = NULL;
		}
	}
}

/* ---- the receive side's ACK policy (docs/tcp.md "ACK policy") ----------------------- */

/* An ACK is owed at once: it goes at this poll's output, one per connection
 * per receive burst (the batch GRO gives Linux), or rides on our data if
 * the application answers in the same poll. A segment that finds one owed
 * already shares it. */
static void ack_owed(struct arn_tcp_conn *c)
{
	struct arn_tcp_worker *wk = c->wk;
	if (c->flags & TF_ACK_NOW) {
		/* not a chain's later link, sharing the ACK its first owed */
		if (!wk->in_chain || !(wk->chain_counted & TCP_PKT_ACK_SET))
			TCP_INC_PKT(wk, ACKS_COALESCED, TCP_PKT_COALESCED);
	} else if (wk->in_chain) {
		wk->chain_counted |= TCP_PKT_ACK_SET;
	}
	c->flags |= TF_ACK_NOW;
}

/* Linux's tcp_enter_quickack_mode: the next ACKs go at once, as many as
 * half the receive window's segments (at least 2, at most
 * TCP_QUICKACK_SEGS), and an interactive exchange is over. At the start of
 * a connection this lets the sender's slow start grow on every ACK; after
 * an idle RTO, the same for its restart; after a duplicate segment (our
 * ACK was lost, or the sender's RTO fired), the sender recovers on prompt
 * ACKs instead of waiting TCP_DELACK_MS per segment. */
static void quickack_enter(struct arn_tcp_conn *c)
{
	uint32_t q = c->rcvbuf / (2u * (c->mss ? c->mss : 1u));
	q = q < 2 ? 2 : q > TCP_QUICKACK_SEGS ? TCP_QUICKACK_SEGS : q;
	if (c->quickack < q)
		c->quickack = (uint8_t)q;
	c->flags &= ~TF_PINGPONG;
}

/* An ACK for a segment that left a hole below it or filled (part of) one,
 * as Linux's __tcp_ack_snd_check with its out-of-order queue in use: the
 * first TCP_DUPACKS_AT_ONCE for one rcv_nxt go now, each on its own (a
 * sender without SACK counts three duplicate ACKs to start fast
 * retransmit; one with SACK learns the loss a burst earlier), and every
 * one without SACK; past those, a burst's SACK changes share the poll's
 * ACK (Linux compresses them for up to 1 ms), unless one would push
 * another out of the blocks an ACK carries (tcp_rsack_ack_due). */
static bool ack_at_once(struct arn_tcp_conn *c)
{
	if (c->rcv_dupack_nxt != c->rcv_nxt) {
		c->rcv_dupack_nxt = c->rcv_nxt;
		c->rcv_dupacks = 0;
	}
	if ((c->flags & TF_SACK_OK) && c->rcv_dupacks >= TCP_DUPACKS_AT_ONCE)
		return false;
	if (c->rcv_dupacks < UINT8_MAX)
		c->rcv_dupacks++;
	return true;
}

/* Report [start, end) as received twice (RFC 2883). An ACK carries one
 * DSACK: a pending one that this does not extend goes out first, so that
 * every duplicate is reported, as Linux does (an ACK per duplicate). The
 * sender counts them to undo a spurious recovery and to widen its
 * reordering window; one ACK per poll used to report one duplicate of a
 * burst's dozens. */
static void dsack_report(struct arn_tcp_conn *c, uint32_t start, uint32_t end)
{
	if ((c->flags & TF_DSACK) && seq_leq(c->dsack.start, end) && seq_leq(start, c->dsack.end)) {
		c->dsack.start = seq_min(c->dsack.start, start);
		c->dsack.end = seq_max(c->dsack.end, end);
		return;
	}
	if (c->flags & TF_DSACK)
		tcp_send_ack(c);
	tcp_dsack_note(c, start, end);
}

/* Bytes that count as delivered for PRR: SACKed, or (without SACK) the
 * duplicate ACKs' segments. */
static uint64_t delivered_mark(const struct arn_tcp_conn *c)
{
	return c->sacked_bytes + (uint64_t)c->reno_sacked * c->mss;
}

/* PRR (RFC 9937) after an ACK in fast recovery: DeliveredData is how far
 * snd_una moved plus the change in what is SACKed. */
static void prr_step(struct arn_tcp_conn *c, uint32_t old_una, uint64_t mark)
{
	if (c->recovery != TCP_REC_FAST)
		return;
	int64_t d =
	    (int64_t)(uint32_t)(c->snd_una - old_una) + (int64_t)delivered_mark(c) - (int64_t)mark;
	tcp_prr_ack(c, d > 0 ? (uint32_t)d : 0);
}

/* Does an ACK that found @p flight_before bytes in flight and snd_una at
 * @p old_una grow cwnd (RFC 5681 / RFC 7661: only while cwnd limits
 * the flow)? In slow start, a flight of half of cwnd or more; beyond it,
 * one within three segments of it. */
static inline __attribute__((always_inline)) bool
cwnd_limited(const struct arn_tcp_conn *c, uint32_t flight_before, uint32_t old_una)
{
	bool limited = c->cwnd < c->ssthresh ? 2 * flight_before >= c->cwnd
					     : flight_before + 3u * c->mss >= c->cwnd;
	/* or cwnd held data back when what this ACK covers was sent
	 * (Linux's is_cwnd_limited, kept up to its cwnd_usage_seq): the
	 * ACKs of one poll's burst drain the flight one by one before
	 * anything is sent on them, and on a sub-millisecond path a fifth of
	 * them found it under cwnd and were not counted (issue 16, 1% loss,
	 * Arion sending) */
	return limited ||
	       (seq_lt(old_una, c->cwnd_lim_seq) && seq_leq(c->cwnd_lim_seq, c->snd_max));
}

/* An ACK of new data moves snd_una to @p ack: the backoff and the
 * zero-window probes start over, and snd_nxt and high_rxt never stay
 * below it. Both ACK branches of process_ack_inner, the clean one and the
 * general one, begin with it. */
static inline __attribute__((always_inline)) void snd_una_advance(struct arn_tcp_conn *c,
								  uint32_t ack)
{
	c->backoff = 0;
	c->probes = 0;
	c->snd_una = ack;
	if (seq_lt(c->snd_nxt, c->snd_una))
		c->snd_nxt = c->snd_una;
	if (seq_lt(c->high_rxt, c->snd_una))
		c->high_rxt = c->snd_una;
}

/* Send-buffer autotuning (tcp_rmem.c, 7.), for an ACK of new data while
 * the application waits on its send buffer: Linux's tcp_new_space and
 * tcp_should_expand_sndbuf. The buffer grows only when it, not cwnd, is
 * what holds the sender back: everything it holds (in flight and not yet
 * sent) and one segment more fit in cwnd, so that sending all of it would
 * still leave cwnd room (Linux asks the same after pushing what the ACK
 * let out: packets in flight under cwnd). Nor when the peer's window is
 * what holds it back: a larger buffer would only hold more unsent data
 * (a peer that reads fast and then advertises a zero window gets nothing
 * more by it). Not in loss recovery, whose cwnd says nothing of the
 * path's. After a growth, cut short or refused, nothing is asked until
 * snd_una passes what had been sent then, a round trip: twice cwnd covers
 * what cwnd grows to within one, even doubling in slow start, and a
 * refusal is counted once a round trip, not once an ACK. Out of line: the
 * caller tests the flag and the ceiling, and most ACKs go no further. */
static __attribute__((noinline)) void sndbuf_expand_check(struct arn_tcp_conn *c)
{
	if (c->recovery != TCP_REC_NONE || (c->flags & (TF_APP_CLOSED | TF_FIN_QUEUED)) ||
	    (seq_leq(c->snd_una, c->smem_next_seq) && seq_leq(c->smem_next_seq, c->snd_max)))
		return;
	uint32_t data_end = c->snd_una + c->sndq.bytes;
	uint32_t unsent = seq_gt(data_end, c->snd_max) ? data_end - c->snd_max : 0;
	uint64_t held = (uint64_t)tcp_pipe(c) + unsent + c->mss;
	if (held > c->cwnd || (uint64_t)c->sndq.bytes + c->mss > c->snd_wnd)
		return;
	c->smem_next_seq = c->snd_max;
	tcp_sndbuf_expand(c, (uint32_t)RTE_MIN(2ull * c->cwnd, (uint64_t)UINT32_MAX));
}

static bool process_ack_inner(struct arn_tcp_conn *c, const struct tcp_seg *s);

/* ACK processing for the synchronized states, then the delivery rate
 * sample it made for the congestion control (BBR's cong_control runs
 * last, as Linux's tcp_cong_control: after loss detection and PRR).
 * Inline: without a rate sample (tcp_rate_on) it is a call of
 * process_ack_inner, no frame of its own.
 * @return false if the connection ended. */
static inline __attribute__((always_inline)) bool process_ack(struct arn_tcp_conn *c,
							      const struct tcp_seg *s)
{
	if (!tcp_rate_on(c))
		return process_ack_inner(c, s);
	uint32_t prior_in_flight = tcp_pipe(c);
	uint32_t old_una = c->snd_una;
	memset(&c->rs, 0, sizeof(c->rs));
	if (!process_ack_inner(c, s))
		return false;
	if (!tcp_rack_on(c) && seq_gt(c->snd_una, old_una))
		c->delivered += c->snd_una - old_una; /* no records: no sample */
	tcp_rate_sample_end(c, prior_in_flight);
	c->cc->on_sample(c, &c->rs);
	return true;
}

/* @p fast: the fast path's segment (fast_input's checks passed: no SACK
 * blocks, not an old ACK, no ECE, no recovery), which makes the tests of
 * those constant here. */
static inline __attribute__((always_inline)) bool ack_body_in(struct arn_tcp_conn *c,
							      const struct tcp_seg *s, bool fast)
{
	struct arn_tcp_worker *wk = c->wk;
	uint64_t now = wk->now_ms;
	uint32_t old_wnd = c->snd_wnd;
	uint32_t flight_before = c->snd_max - c->snd_una;
	uint32_t old_una = c->snd_una;
	bool rack = tcp_rack_on(c);
	bool sack_new = false;
	/* The fast path's is 0, or never read: PRR's mark matters only once
	 * this ACK ends in fast recovery, which from no recovery only RACK's
	 * loss detection begins here (tcp_rack_on_ack), on a SACK
	 * connection, whose reno_sacked stays 0; and sacked_bytes is the
	 * scoreboard's sum (tcp_sack.c), empty at fast_input's n_sb test. */
	uint64_t mark = fast ? 0 : delivered_mark(c);

	if (!fast && (c->flags & TF_SACK_OK) && s->n_sack) {
		if (rack)
			sack_new = tcp_rack_sack_is_new(c, s);
		tcp_sb_update(c, s);
	}

	/* send window update (RFC 9293 3.10.7.4, fifth check), and as Linux
	 * (tcp_may_update_window) from any ACK that moves snd_una: the window
	 * is relative to the ACK that carries it, so one on a retransmitted
	 * segment (an old SEG.SEQ) that the RFC's rule ignores would leave
	 * SND.UNA + SND.WND past the receiver's right edge, and what we sent
	 * there was dropped as out of window, ACKs included. Never from a
	 * reordered old ACK, whose window is stale. */
	if ((fast || !s->old_ack) && (seq_gt(s->ack, c->snd_una) || seq_lt(c->snd_wl1, s->seq) ||
				      (c->snd_wl1 == s->seq && seq_leq(c->snd_wl2, s->ack)))) {
		c->snd_wnd = (uint32_t)s->wnd << c->snd_ws;
		c->snd_wl1 = s->seq;
		c->snd_wl2 = s->ack;
		if (c->snd_wnd > c->max_sndwnd)
			c->max_sndwnd = c->snd_wnd;
		/* a window that grew may let out what it held back: not only
		 * one from 0 (persist), but one too small to send in (sender
		 * SWS avoidance) that a pure window update opened; without
		 * this it waited for the persist timer (Linux checks on every
		 * ACK: tcp_data_snd_check) */
		if (c->snd_wnd > old_wnd && tcp_may_send(c))
			tcp_want_output(c);
	}

	/* ECN sender (RFC 3168 6.1.2): an ECN-Echo is the congestion a loss
	 * would signal, answered as one (ssthresh and cwnd from the congestion
	 * control) but once per window of data: ECEs go on until our CWR
	 * reaches the receiver, so only an ACK beyond what was sent at the
	 * last reduction counts. Not during a recovery, which has reduced
	 * already; and cwnd grows on no ACK with ECE (6.1.2: "SHOULD NOT
	 * increase"). An ECN reduction is a real signal: no DSACK may undo
	 * it (Linux's tcp_enter_cwr). */
	bool ece = !fast && (c->ecn & TCP_ECN_OK) && (s->flags & TH_ECE) && !s->old_ack;
	if (ece && c->recovery == TCP_REC_NONE && seq_gt(s->ack, c->ecn_high)) {
		c->ssthresh = c->cc->ssthresh(c, now);
		c->cwnd = c->ssthresh;
		c->flags &= ~TF_UNDO;
		tcp_ecn_queue_cwr(c);
		TCP_INC(wk, ECN_REDUCTIONS);
	}

	if (seq_gt(s->ack, c->snd_una)) {
		uint32_t acked = s->ack - c->snd_una;
		bool fin_acked = (c->flags & TF_FIN_SENT) && seq_gt(s->ack, c->fin_seq);
		sndq_drop(c, RTE_MIN(acked, c->sndq.bytes));
		if (fast && tcp_rack_acked_all_ok(c, s->ack, true) &&
		    (c->txr_head == c->txr_tail ||
		     !(wk->txr[c->txr_head].flags & ~TXR_APP_LIMITED))) {
			/* The fast path's ACK of the whole flight, clean (no
			 * SACK block, scoreboard, recovery or rate sample:
			 * fast_input's checks; tcp_rack_acked_all_ok's; and
			 * the oldest record sent once): tcp_rtt_on_ack's
			 * sample (RFC 6298, from the oldest record) and
			 * tcp_rack_on_ack's O(1) update, from the records
			 * tested once, inline; no scoreboard to trim. The
			 * two, one inline and one called, tested the same
			 * records and flags each (bench_tcp_unit pingpong:
			 * 24 instructions a segment). */
			/* The flags read once and written once: the records'
			 * stores in between (uint32_t, as c->flags) would
			 * otherwise make each test and update load them
			 * again; nothing here but this branch changes them
			 * (the congestion control's on_ack has no flags). */
			uint32_t f = c->flags & ~TF_RTT_TIMING;
			tcp_rtt_update(c, (uint32_t)wk->now_us - wk->txr[c->txr_head].xmit_us);
			tcp_rack_acked_all(c);
			snd_una_advance(c, s->ack);
			/* What the general case below does after its RACK
			 * call, with what is known here folded in: no
			 * recovery (so no PRR step), no ECE, nothing left in
			 * flight (no PTO to arm), TF_RACK_OFF clear, nothing
			 * lost or retransmitted (tcp_may_send's last two
			 * tests), no rate sample (bench_tcp_unit pingpong: 17
			 * instructions a segment). */
			if (!(f & TF_PERSIST)) {
				c->t_rexmt = 0;
				f &= ~TF_TLP;
			}
			c->flags = f;
			if (cwnd_limited(c, flight_before, old_una))
				c->cc->on_ack(c, acked, now);
			c->dupacks = 0;
			/* SND.UNA is SND.MAX (the ACK covered it all): data
			 * not yet sent is the queue's bytes */
			if ((int32_t)c->sndq.bytes > 0 ||
			    (f & (TF_FIN_QUEUED | TF_FIN_SENT)) == TF_FIN_QUEUED ||
			    (f & TF_ACK_NOW))
				tcp_want_output(c);
		} else {
			tcp_rtt_on_ack(c, s, now);
			snd_una_advance(c, s->ack);
			if (c->flags & TF_SACK_OK) {
				/* no blocks (nor a count of them, which the
				 * trim would zero): nothing to trim, no call */
				if (c->n_sb || c->sacked_bytes)
					tcp_sb_trim(c);
				/* RACK: records delivered, DSACK, loss
				 * detection */
				tcp_rack_on_ack(c, s, old_una, sack_new);
			} else if (c->reno_sacked) {
				/* without duplicate ACKs counted, no division */
				uint32_t segs = acked / c->mss;
				c->reno_sacked = c->reno_sacked > segs ? c->reno_sacked - segs : 0;
			}
			if (c->recovery != TCP_REC_NONE) {
				if (seq_geq(s->ack, c->recover)) {
					tcp_exit_recovery(c);
				} else if (rack) {
					/* RACK decides what is lost; LOSS: slow start */
					if (c->recovery == TCP_REC_LOSS)
						c->cc->on_ack(c, acked, now);
				} else if (c->recovery == TCP_REC_FAST) {
					/* RFC 6582 partial ACK: the next hole is lost too */
					if (!(c->flags & TF_SACK_OK)) {
						if (seq_lt(c->lost_edge, c->snd_una + c->mss))
							c->lost_edge = c->snd_una + c->mss;
					} else {
						tcp_sb_update_lost_edge(c);
					}
				} else {
					c->cc->on_ack(c, acked, now); /* slow start after RTO */
				}
			} else if (!ece && cwnd_limited(c, flight_before, old_una)) {
				c->cc->on_ack(c, acked, now);
			}
			prr_step(c, old_una, mark);
			c->dupacks = 0;
			if (c->snd_una == c->snd_max) {
				if (!(c->flags & TF_PERSIST)) {
					c->t_rexmt = 0;
					c->flags &= ~TF_TLP;
				}
				if ((c->flags & TF_RACK_OFF) && c->recovery == TCP_REC_NONE)
					c->flags &= ~TF_RACK_OFF; /* records may be had again */
			} else {
				tcp_rexmt_arm_pto(c);
			}
			/* To tcp_output only if it has something to do after
			 * this ACK: send (what cwnd or the window held back, a
			 * retransmission), an owed ACK, or the app-limited
			 * check (tcp_rate_on). A pure ACK of everything we
			 * sent, the usual one in a request-response exchange,
			 * has none of these. */
			if (tcp_may_send(c) || (c->flags & TF_ACK_NOW) || tcp_rate_on(c))
				tcp_want_output(c);
		}
		if (fin_acked) {
			switch (c->state) {
			case TCPS_FIN_WAIT_1:
				tcp_set_state(c, TCPS_FIN_WAIT_2);
				if (c->flags & TF_APP_CLOSED) {
					c->t_2msl = now + TCP_FIN_WAIT2_MS;
					tcp_timer_update(c);
				}
				break;
			case TCPS_CLOSING:
				tcp_enter_time_wait(c);
				return false; /* the block is gone; a record answers */
			case TCPS_LAST_ACK:
				tcp_conn_drop(c, 0);
				return false;
			default:
				break;
			}
		}
		if (c->flags & TF_WANT_WRITE) {
			/* the application waits on its buffer: grow it if the
			 * buffer is what limits the sender (no call with
			 * autotuning off or the buffer at its ceiling); the
			 * test below then sees the larger buffer */
			if (c->sndbuf < wk->sndbuf_max)
				sndbuf_expand_check(c);
			/* on_writable once a quarter of the buffer is free,
			 * not per byte */
			if (!(c->flags & (TF_APP_CLOSED | TF_FIN_QUEUED)) &&
			    c->sndq.bytes <= c->sndbuf - c->sndbuf / 4) {
				c->flags &= ~TF_WANT_WRITE;
				if (c->ops && c->ops->on_writable)
					c->ops->on_writable(c);
				if (c->state == TCPS_CLOSED)
					return false;
			}
		}
		/* Everything sent was acknowledged and the application,
		 * woken or not, has nothing more to send: a grown buffer goes
		 * back to sndbuf and its grant to the worker (tcp_rmem.c, 8.).
		 * Its next burst grows it again within a round trip. */
		if (unlikely(c->smem_grant) && c->sndq.bytes == 0)
			tcp_smem_ungrant(c);
		return true;
	}

	bool outstanding = c->snd_max != c->snd_una;
	if (!fast && (c->flags & TF_SACK_OK) && s->n_sack)
		tcp_rack_on_ack(c, s, old_una, sack_new); /* DSACK; RACK */
	if (rack || s->old_ack) {
		/* RACK needs no duplicate ACK counting; a reordered old ACK is
		 * no duplicate */
		prr_step(c, old_una, mark);
		if (outstanding && s->n_sack)
			tcp_want_output(c);
		return true;
	}
	/* Duplicate ACK (RFC 5681 2; with SACK, any ACK carrying SACK info). */
	bool dup = s->ack == c->snd_una && s->len == 0 && !(s->flags & (TH_SYN | TH_FIN)) &&
		   outstanding && (c->snd_wnd == old_wnd || ((c->flags & TF_SACK_OK) && s->n_sack));
	if (dup) {
		c->dupacks++;
		if (!(c->flags & TF_SACK_OK)) {
			uint32_t segs = (c->snd_max - c->snd_una + c->mss - 1) / c->mss;
			if (c->reno_sacked + 1 < segs)
				c->reno_sacked++;
		}
		if (c->recovery == TCP_REC_NONE) {
			bool lost = c->dupacks >= TCP_DUPTHRESH ||
				    ((c->flags & TF_SACK_OK) && tcp_sb_is_lost(c, c->snd_una));
			if (lost && seq_geq(c->snd_una, c->recover))
				tcp_enter_recovery(c);
		} else if (c->recovery == TCP_REC_FAST && (c->flags & TF_SACK_OK)) {
			tcp_sb_update_lost_edge(c);
		}
		tcp_want_output(c);
	} else if (s->n_sack && (c->flags & TF_SACK_OK) && outstanding) {
		/* RFC 6675 5: SACK information counts on any ACK, also one
		 * that carries data (a bidirectional flow has few pure ACKs). */
		if (c->recovery == TCP_REC_NONE) {
			if (tcp_sb_is_lost(c, c->snd_una) && seq_geq(c->snd_una, c->recover))
				tcp_enter_recovery(c);
		} else if (c->recovery == TCP_REC_FAST) {
			tcp_sb_update_lost_edge(c);
		}
		tcp_want_output(c);
	}
	prr_step(c, old_una, mark);
	return true;
}

/* ack_body_in out of line: the full path's and the rate sample's. */
static __attribute__((noinline)) bool process_ack_inner(struct arn_tcp_conn *c,
							const struct tcp_seg *s)
{
	return ack_body_in(c, s, false);
}

/* Inline (and rcv_append, rcv_ack_policy below): the fast path takes all
 * three for every segment with data. @p appended: the caller has just
 * queued data with the application open (the fast path), so neither test
 * of those can fail. */
static inline __attribute__((always_inline)) void deliver_data(struct arn_tcp_conn *c,
							       bool appended)
{
	if ((!appended && (c->flags & TF_APP_CLOSED)) || c->ops == NULL ||
	    c->ops->on_data == NULL || (!appended && c->rcvq.bytes == 0))
		return;
	c->ops->on_data(c, c->rcvq.head, c->rcvq.bytes);
}

static void fin_in(struct arn_tcp_conn *c)
{
	c->rcv_nxt++;
	c->flags |= TF_RCVD_FIN | TF_ACK_NOW;
	c->flags &= ~TF_OOO_FIN;
	switch (c->state) {
	case TCPS_SYN_RECEIVED:
	case TCPS_ESTABLISHED:
		tcp_set_state(c, TCPS_CLOSE_WAIT);
		break;
	case TCPS_FIN_WAIT_1:
		if ((c->flags & TF_FIN_SENT) && c->snd_una == c->snd_max) {
			tcp_send_ack(c);
			tcp_enter_time_wait(c);
		} else {
			tcp_set_state(c, TCPS_CLOSING);
		}
		break;
	case TCPS_FIN_WAIT_2:
		tcp_send_ack(c);
		tcp_enter_time_wait(c);
		break;
	default:
		break;
	}
	/* Also after TIME_WAIT began: the block lives until on_close has run. */
	if (!(c->flags & TF_APP_CLOSED) && c->ops && c->ops->on_eof)
		c->ops->on_eof(c);
}

/* In-order data of @p len bytes (@p m holds just them) joins the receive
 * queue. @p sized: m's lengths are len already (the fast path's segment,
 * as tcp_input left it), so they are not stored again. */
static inline __attribute__((always_inline)) void
rcv_append(struct arn_tcp_conn *c, struct rte_mbuf *m, uint32_t len, bool sized)
{
	if (!sized)
		m->pkt_len = m->data_len = (uint16_t)len;
	tcp_q_append(&c->rcvq, m);
	c->rcv_nxt += len;
	c->wk->cnt[ARN_TCP_C_BYTES_IN] += len;
}

/* Delayed ACKs (RFC 1122 / 5681: at least every second full segment), but
 * as Linux: quick ACKs at the start of a connection and after an idle RTO,
 * unless the exchange is interactive. A peer with Nagle on
 * (write-write-read: a response body after its headers) otherwise waits up
 * to TCP_DELACK_MS for our ACK. The ACK goes at the poll's output: a
 * burst's segments share it. A delayed ACK's timer is armed here, not by
 * tcp_output at the poll's end: the connection then needs no output call
 * for it (data sent in the same poll carries the ACK and clears the
 * timer, as it would have found it unarmed). @p s: the in-order
 * segment. */
static inline __attribute__((always_inline)) void rcv_ack_policy(struct arn_tcp_conn *c,
								 const struct tcp_seg *s)
{
	struct arn_tcp_worker *wk = c->wk;
	if (wk->now_ms - c->last_rcv_ms > c->rto)
		quickack_enter(c);
	c->last_rcv_ms = wk->now_ms;
	if (s->flags & TH_PSH)
		c->flags |= TF_PUSHED;
	/* A link of a chain counts the sender's segments that end in it
	 * (chain_input, segs_adj): a 64 KB super-segment is ~45 segments, as
	 * Linux counts a GRO skb by its gso_size, not one giant segment. */
	if ((c->quickack && !(c->flags & TF_PINGPONG)) ||
	    (c->segs_unacked += (uint32_t)(1 + s->segs_adj)) >= 2) {
		ack_owed(c);
	} else {
		c->flags |= TF_DELACK;
		if (c->t_delack == 0) {
			c->t_delack = wk->now_ms + TCP_DELACK_MS;
			tcp_timer_armed(c, c->t_delack);
		}
	}
}

/* The receiver's round-trip time, which receive-buffer autotuning measures
 * the application's reading against (tcp_rcv_space_adjust), as Linux's
 * tcp_rcv_rtt_measure_ts and tcp_rcv_rtt_measure: with timestamps, our
 * clock less the TSecr of a full in-order segment (once per TSecr: in
 * milliseconds, at least one); without, the time rcv_nxt takes to pass
 * the window's right edge as it was when the sample began (a window per
 * round trip, at most: it only ever lowers the estimate). A connection
 * that cannot grow (autotuning off, or at its ceiling) measures nothing.
 * A sample longer than the connection's RTO (our own timing of the path)
 * or RFC 6298's initial 1 s RTO, whichever is longer (room for a sender
 * behind a bloated queue), is no round trip of this path: ignored. The
 * TSecr is the peer's to write, and a window's sample is as long as the
 * peer is slow; yet the estimate sets how long autotuning measures the
 * reading before it grows the buffer, and how long an idle or stalled
 * connection keeps its grant (tcp_rmem.c's stalled() and sending()). With
 * echoes 98 s old (under the 100 s bound this had), a peer sending one
 * segment a second had its reading measured over 98 s and grew its
 * buffer to rcvbuf_max (test_tcp_rcvbuf.c). Linux's
 * tcp_rcv_rtt_measure_ts bounds the echo only at 2^31 ms
 * (tcp_rtt_tsopt_us) and lets the lowest sample win, which a peer that
 * writes every echo decides too. @p len: the in-order segment's
 * payload. */
static inline __attribute__((always_inline)) void
rcv_rtt_measure(struct arn_tcp_conn *c, const struct tcp_seg *s, uint32_t len)
{
	struct arn_tcp_worker *wk = c->wk;
	if (c->rcvbuf >= wk->rcvbuf_max)
		return;
	uint32_t sample;
	bool win_dep = false;
	if ((c->flags & TF_TS_OK) && s->has_ts && s->tsecr) {
		if (s->tsecr == c->rcv_rtt_tsecr)
			return;
		c->rcv_rtt_tsecr = s->tsecr;
		int32_t d = (int32_t)(tcp_ts_now(c) - s->tsecr);
		/* full: a chain's link by the sender's segment size, which
		 * link boundaries say nothing of (chain_input) */
		uint32_t seg = (s->chain & TCP_SEG_CHAIN) ? s->mss : len;
		if (seg < c->mss || d < 0 ||
		    (uint32_t)d > RTE_MAX(c->rto, (uint32_t)TCP_RTO_INIT_MS))
			return;
		sample = d ? (uint32_t)d * 1000u : 1000u;
	} else {
		uint64_t t0 = c->rcv_rtt_us0;
		if (t0 && seq_lt(c->rcv_nxt, c->rcv_rtt_seq))
			return;
		c->rcv_rtt_seq = c->rcv_nxt + tcp_rcv_window(c);
		c->rcv_rtt_us0 = wk->now_us ? wk->now_us : 1;
		if (t0 == 0 ||
		    wk->now_us - t0 > (uint64_t)RTE_MAX(c->rto, (uint32_t)TCP_RTO_INIT_MS) * 1000u)
			return;
		sample = (uint32_t)(wk->now_us - t0);
		sample = sample ? sample : 1;
		win_dep = true;
	}
	/* Linux's tcp_rcv_rtt_update: a lower sample is taken as it is, a
	 * higher one smoothed in (by 1/8), or ignored if it is per window */
	uint32_t old = c->rcv_rtt8_us, m = sample << 3;
	if (old == 0 || m < old)
		c->rcv_rtt8_us = m;
	else if (!win_dep)
		c->rcv_rtt8_us = old - (old >> 3) + sample;
}

/* Data for a connection the application closed (not just shut down):
 * nobody will read it. RFC 9293 3.10.7.4 / Linux: reset. */
static void rst_data_after_close(struct arn_tcp_conn *c, struct rte_mbuf *m)
{
	rte_pktmbuf_free(m);
	TCP_INC(c->wk, RST_DATA_AFTER_CLOSE);
	tcp_send_rst_conn(c);
	tcp_conn_drop(c, -ECONNABORTED);
}

/* Connection states and events that the fast path leaves to conn_input's
 * full path: data out of order below (a FIN beyond a hole), the peer's FIN
 * (no more data: the full path drops it), and an application that closed
 * (data is answered with a RST). */
#define FAST_PATH_NOT_FLAGS (TF_OOO_FIN | TF_RCVD_FIN | TF_APP_CLOSED)

/* ESTABLISHED and not in recovery, the connection's adjacent state and
 * recovery bytes (checked in tcp_int.h) compared as one 16-bit word: one
 * load and comparison a segment, not two. Nothing is cached, so nothing
 * can go stale; a debug build (build-fuzz) checks it against the two
 * fields on every segment. */
static inline __attribute__((always_inline)) bool established_plain(const struct arn_tcp_conn *c)
{
	static const uint8_t want[2] = {TCPS_ESTABLISHED, TCP_REC_NONE};
	uint16_t have, w;
	memcpy(&have, (const char *)c + offsetof(struct arn_tcp_conn, state), sizeof(have));
	memcpy(&w, want, sizeof(w));
#ifndef __OPTIMIZE__
	assert((have == w) == (c->state == TCPS_ESTABLISHED && c->recovery == TCP_REC_NONE));
#endif
	return have == w;
}

/*
 * The in-order fast path: header prediction (Van Jacobson; 4.4BSD's
 * tcp_input, Linux's tcp_rcv_established). Nearly every segment of an
 * established connection is the next one expected, carries ACK (maybe
 * PSH) and nothing else, and arrives with nothing in recovery, no
 * scoreboard and no out-of-order data; it is either an ACK for new data,
 * in-order data, or both. Such a segment is
 * handled here with the checks that can apply to it and nothing else;
 * every other segment (and this one when a check fails) takes conn_input's
 * full path, unchanged. Each of the full path's checks, in its order:
 *
 * - SYN-SENT, SYN-RECEIVED (a retransmitted SYN): ESTABLISHED only here.
 * - PAWS (RFC 7323 5.3): applies; TSval at or after TS.Recent, or the full
 *   path decides (drop, or a reordered pure ACK used as old_ack). Without
 *   timestamps negotiated, or a segment without them, the full path has no
 *   check either.
 * - SYN (RFC 5961 4.2), RST (RFC 5961 3.2), no ACK: flags are ACK or
 *   ACK|PSH only. URG, ECE and CWR go to the full path too, and a CE mark
 *   (RFC 3168's receiver echo, sender reduction).
 * - Acceptability (RFC 9293 3.10.7.4 first check): SEG.SEQ = RCV.NXT, and
 *   data only when all of it is inside the window we offered; a pure ACK
 *   at RCV.NXT is acceptable whatever the window. So no trimming either.
 * - ACK range (RFC 5961 5.2, RFC 9293): SND.UNA <= SEG.ACK <= SND.MAX,
 *   and the full path's lower bound SND.UNA - MAX.SND.WND, kept here
 *   although with SEG.ACK >= SND.UNA it fails only if the flight and the
 *   largest window together pass 2^31.
 * - TS.Recent update (RFC 7323 4.3): the full path's condition, with
 *   SEG.SEQ = RCV.NXT and an empty out-of-order queue substituted.
 * - Keepalive restart: the same.
 * - ACK processing: process_ack, whole, for an ACK of new data (and for
 *   every segment when the congestion control has on_sample: BBR takes a
 *   sample from each ACK), the window update with it. Data that
 *   acknowledges nothing new changes there only the window (its update,
 *   RFC 9293 3.10.7.4's fifth check), done here with process_ack's
 *   condition and outcome (the rate sample and the app-limited mark are
 *   kept only with on_sample, tcp_rate_on). A pure ACK that acknowledges
 *   nothing new is a duplicate ACK candidate (RFC 5681 counts one only
 *   with the window unchanged): full path.
 * - The window may change: a receiver that keeps the right edge still
 *   until it can move it by an MSS (RFC 9293 3.8.6.2.2, as lib/tcp does)
 *   offers a smaller window with every short segment it takes, so that
 *   in a request-response exchange nearly every segment changes it.
 * - SACK blocks, recovery, ECN: no blocks, no recovery, no ECE/CWR/CE
 *   (above).
 * - Data: the receive queue's mbuf bound (tcp_rmem_admit_in_order) applies; an
 *   empty out-of-order queue means no hole to fill and no pull.
 *
 * @return false if the segment takes the full path (nothing was done).
 */
static inline __attribute__((always_inline)) bool fast_input(struct arn_tcp_conn *c,
							     struct tcp_seg *s, struct rte_mbuf *m)
{
	if ((s->flags & ~TH_PSH) != TH_ACK || s->ce || !established_plain(c) ||
	    s->seq != c->rcv_nxt || s->n_sack || c->n_sb || c->oooq.head ||
	    (c->flags & FAST_PATH_NOT_FLAGS))
		return false;
	uint32_t acked = s->ack - c->snd_una;
	if (acked > c->snd_max - c->snd_una ||
	    seq_lt(s->ack, c->snd_una - RTE_MAX(c->max_sndwnd, 1u)))
		return false;
	if (s->len == 0) {
		if (acked == 0)
			return false;
	} else {
		uint32_t rwnd = seq_gt(c->rcv_adv, c->rcv_nxt) ? c->rcv_adv - c->rcv_nxt : 0;
		if (s->len > rwnd)
			return false;
	}
	bool ts = (c->flags & TF_TS_OK) && s->has_ts;
	if (ts && seq_lt(s->tsval, c->ts_recent))
		return false;

	struct arn_tcp_worker *wk = c->wk;
	uint64_t now = wk->now_ms;
	TCP_INC(wk, FAST_PATH); /* once for a chain: chain_input */
	if (ts && seq_leq(s->seq, c->last_ack_sent)) {
		if (seq_geq(s->tsval, c->ts_echo))
			c->ts_echo = s->tsval;
		c->ts_recent = s->tsval;
		c->ts_recent_age = now;
	}
	if (c->flags & TF_KEEPALIVE) {
		c->t_keep = now + c->keep_idle_ms; /* the wheel finds out lazily */
		/* keepalive's count, not the persist timer's (conn_input) */
		if (!(c->flags & TF_PERSIST))
			c->probes = 0;
	}
	if (tcp_rate_on(c)) {
		/* every ACK: the congestion control takes a sample of each */
		if (!process_ack(c, s)) {
			rte_pktmbuf_free(m);
			return true;
		}
	} else if (acked) {
		/* ACK processing inline here, where nearly every ACK comes */
		if (!ack_body_in(c, s, true)) {
			rte_pktmbuf_free(m);
			return true;
		}
	} else {
		/* process_ack's window update (its condition, less the ACK
		 * that moves SND.UNA), all it does for this segment; no rate
		 * sample without on_sample (tcp_rate_on) */
		if (seq_lt(c->snd_wl1, s->seq) ||
		    (c->snd_wl1 == s->seq && seq_leq(c->snd_wl2, s->ack))) {
			uint32_t old_wnd = c->snd_wnd;
			c->snd_wnd = (uint32_t)s->wnd << c->snd_ws;
			c->snd_wl1 = s->seq;
			c->snd_wl2 = s->ack;
			if (c->snd_wnd > c->max_sndwnd)
				c->max_sndwnd = c->snd_wnd;
			if (c->snd_wnd > old_wnd && tcp_may_send(c))
				tcp_want_output(c); /* as process_ack's */
		}
	}
	/* process_ack may have called on_writable, and the application
	 * closed: as on the full path, where the data check comes after the
	 * ACK. (Its other outcomes here: ESTABLISHED, or FIN-WAIT-1 after a
	 * close or shutdown, which take data too; CLOSED returned above.) */
	if (s->len == 0) {
		tcp_pkt_done(wk, m);
	} else if (c->flags & TF_APP_CLOSED) {
		rst_data_after_close(c, m);
		return true;
	} else if (!tcp_rmem_admit_in_order(c)) {
		/* as the full path: over the connection's mbuf bound even
		 * after collapsing, dropped, the peer sends it again */
		rte_pktmbuf_free(m);
		c->flags |= TF_ACK_NOW;
	} else {
		rcv_append(c, m, s->len, true);
		rcv_rtt_measure(c, s, s->len);
		rcv_ack_policy(c, s);
		deliver_data(c, true);
		if (c->state == TCPS_CLOSED)
			return true;
	}
	if (c->flags & TF_ACK_NOW)
		tcp_want_output(c); /* a delayed ACK's timer is armed (rcv_ack_policy) */
	return true;
}

/* The full path: every segment fast_input declined. Out of line, so that
 * the fast path, inline in its callers, pays none of its frame. */
static __attribute__((noinline)) void conn_input(struct arn_tcp_conn *c, struct tcp_seg *s,
						 struct rte_mbuf *m)
{
	struct arn_tcp_worker *wk = c->wk;
	uint64_t now = wk->now_ms;

	if (c->state == TCPS_SYN_SENT) {
		syn_sent_input(c, s, m);
		return;
	}

	uint32_t seg_len = s->len + !!(s->flags & TH_SYN) + !!(s->flags & TH_FIN);

	/* A retransmitted SYN while the SYN-ACK is unanswered: send it again. */
	if (c->state == TCPS_SYN_RECEIVED && (s->flags & (TH_SYN | TH_ACK | TH_RST)) == TH_SYN &&
	    s->seq == c->irs) {
		rte_pktmbuf_free(m);
		tcp_send_syn(c);
		return;
	}

	/* PAWS (RFC 7323 5.3 R1); a timestamp older than 24 days is stale. A
	 * timestamp one tick behind passes (Linux's TCP_PAWS_WINDOW: a peer
	 * whose clock ticked between two segments of one burst). */
	bool pure_ack = s->len == 0 && (s->flags & (TH_SYN | TH_FIN | TH_RST | TH_ACK)) == TH_ACK &&
			c->state != TCPS_SYN_RECEIVED;
	if ((c->flags & TF_TS_OK) && s->has_ts && !(s->flags & TH_RST) &&
	    (int32_t)(c->ts_recent - s->tsval) > TCP_PAWS_WINDOW &&
	    now - c->ts_recent_age < TCP_PAWS_24DAYS_MS) {
		if (pure_ack && (int32_t)(c->ts_recent - s->tsval) <= (int32_t)c->rto) {
			/* A pure ACK that a later segment overtook: what it
			 * acknowledges and SACKs is still true, and within an
			 * RTO's worth of ticks it cannot come from an earlier
			 * wrap of the sequence space (Linux's
			 * tcp_disordered_ack bound). Used, not answered. */
			s->old_ack = true;
			TCP_INC(wk, PAWS_OLD_ACK);
		} else {
			TCP_INC(wk, PAWS_DROPPED);
			if (s->len && seq_lt(s->seq, c->rcv_nxt))
				dsack_report(c, s->seq, seq_min(s->seq + s->len, c->rcv_nxt));
			c->flags |= TF_ACK_NOW;
			tcp_want_output(c);
			rte_pktmbuf_free(m);
			return;
		}
	}

	/* SYN in a synchronized state, whatever its sequence number (RFC 5961
	 * 4.2): a (rate-limited) challenge ACK. */
	if ((s->flags & (TH_SYN | TH_RST)) == TH_SYN) {
		rte_pktmbuf_free(m);
		tcp_send_challenge_ack(c, s);
		return;
	}

	/* Acceptability (RFC 9293 3.10.7.4 first check), with its right edge
	 * included as Linux (tcp_sequence) and FreeBSD have it: a peer that
	 * has sent everything our window allowed while a segment below is
	 * missing sends its ACKs at SEG.SEQ = RCV.NXT + RCV.WND, one past the
	 * RFC's window. Those ACKs carry what it received of our data (and
	 * its SACK blocks): dropping them stalls our sending until an RTO
	 * whenever both directions lose packets and our window is full.
	 * Data there is cut below; the ACK and SACK are used. */
	uint32_t rwnd = seq_gt(c->rcv_adv, c->rcv_nxt) ? c->rcv_adv - c->rcv_nxt : 0;
	bool ok;
	if (s->seq == c->rcv_nxt + rwnd)
		ok = true; /* at the right edge; also a zero window's only sequence */
	else if (seg_len == 0)
		ok = seq_in(s->seq, c->rcv_nxt, c->rcv_nxt + rwnd);
	else if (rwnd == 0)
		ok = false;
	else
		ok = seq_in(s->seq, c->rcv_nxt, c->rcv_nxt + rwnd) ||
		     seq_in(s->seq + seg_len - 1, c->rcv_nxt, c->rcv_nxt + rwnd);
	/* A pure ACK that arrives after segments sent later (reordering):
	 * its sequence number is behind rcv_nxt but within the last window.
	 * Its ACK and SACK information is used; nothing else, and no reply. */
	if (!ok && pure_ack && seq_lt(s->seq, c->rcv_nxt) &&
	    seq_geq(s->seq, c->rcv_nxt - RTE_MAX(c->rcvbuf, 65535u))) {
		ok = true;
		s->old_ack = true;
		/* RCV.NXT - 1 is how zero-window probes and keepalives look
		 * (Linux's tcp_xmit_probe_skb): those want our ACK */
		if (s->seq == c->rcv_nxt - 1) {
			c->flags |= TF_ACK_NOW;
			tcp_want_output(c);
		}
	}
	/* A segment that starts before rcv_nxt and ends past it (partial
	 * retransmission) passes through the second clause; one entirely
	 * old gets a duplicate ACK. */
	if (!ok) {
		if (!(s->flags & TH_RST)) {
			if (s->len && seq_lt(s->seq, c->rcv_nxt)) {
				uint32_t dup_end = seq_min(s->seq + s->len, c->rcv_nxt);
				TCP_DUP(wk, dup_end - s->seq);
				dsack_report(c, s->seq, dup_end);
				/* Linux's tcp_send_dupack: quick ACKs from here on */
				quickack_enter(c);
			} else {
				TCP_INC(wk, OUT_OF_WINDOW);
			}
			ack_owed(c);
			tcp_want_output(c);
		}
		rte_pktmbuf_free(m);
		return;
	}

	/* RST (RFC 5961 3.2): exact match resets, in-window gets a challenge. */
	if (s->flags & TH_RST) {
		rte_pktmbuf_free(m);
		if (s->seq != c->rcv_nxt) {
			tcp_send_challenge_ack(c, s);
			return;
		}
		TCP_INC(wk, RST_RECEIVED);
		int reason = -ECONNRESET;
		if (c->state == TCPS_SYN_RECEIVED && !(c->flags & TF_PASSIVE)) {
			TCP_INC(wk, CONNECT_FAILED);
			reason = -ECONNREFUSED;
			if (c->ops && c->ops->on_connected && !(c->flags & TF_APP_CLOSED))
				c->ops->on_connected(c, reason);
		}
		tcp_conn_drop(c, reason);
		return;
	}

	if (!(s->flags & TH_ACK)) {
		rte_pktmbuf_free(m);
		return;
	}

	/* ACK validation (RFC 5961 5.2, RFC 9293). */
	if (seq_gt(s->ack, c->snd_max)) {
		rte_pktmbuf_free(m);
		if (c->state == TCPS_SYN_RECEIVED) {
			TCP_INC(wk, RST_BAD_ACK);
			tcp_send_rst_reply(wk, s);
			return;
		}
		c->flags |= TF_ACK_NOW;
		tcp_want_output(c);
		return;
	}
	uint32_t max_wnd = RTE_MAX(c->max_sndwnd, 1u);
	if (seq_lt(s->ack, c->snd_una - max_wnd)) {
		rte_pktmbuf_free(m);
		tcp_send_challenge_ack(c, s);
		return;
	}

	/* RFC 7323 4.3: remember the timestamp to echo, from a segment that is
	 * in order (SEG.SEQ <= Last.ACK.sent), and not from a wholly old
	 * duplicate (a spurious retransmission's newer timestamp would make
	 * PAWS drop new data the peer sent before it). The segment that fills
	 * a hole is echoed (the RFC's case C): echoing the timestamp from
	 * before the loss gives the peer an RTT sample as long as its whole
	 * recovery, and its RTO grows to the 120 s cap. PAWS's reference does
	 * not move while data is missing below queued data: segments sent
	 * before the hole filler may still be on their way, with older
	 * timestamps, and are new data. */
	if ((c->flags & TF_TS_OK) && s->has_ts && !s->old_ack &&
	    seq_leq(s->seq, c->last_ack_sent) &&
	    (seg_len == 0 ? s->seq == c->rcv_nxt : seq_gt(s->seq + seg_len, c->rcv_nxt))) {
		if (seq_geq(s->tsval, c->ts_echo))
			c->ts_echo = s->tsval;
		if (c->oooq.head == NULL && seq_geq(s->tsval, c->ts_recent)) {
			c->ts_recent = s->tsval;
			c->ts_recent_age = now;
		}
	}
	if (c->flags & TF_KEEPALIVE) {
		c->t_keep = now + c->keep_idle_ms; /* the wheel finds out lazily */
		/* An answer ends keepalive's probing, but not the persist
		 * timer's, which shares the count: a peer that answers every
		 * zero-window probe with a zero window must still reach
		 * TCP_PERSIST_MAX_PROBES (tcp_timeout.c's persist_expire). An
		 * ACK of new data clears it (snd_una_advance). */
		if (!(c->flags & TF_PERSIST))
			c->probes = 0;
	}

	if (c->state == TCPS_SYN_RECEIVED) {
		if (!seq_gt(s->ack, c->snd_una)) {
			rte_pktmbuf_free(m);
			TCP_INC(wk, RST_BAD_ACK);
			tcp_send_rst_reply(wk, s);
			return;
		}
		c->snd_una = s->ack;
		handshake_rtt(c, s);
		if (!(c->flags & TF_SACK_OK))
			c->n_sb = 0;
		established_common(c, s);
		if (c->flags & TF_PASSIVE) {
			if (!accept_conn(c)) {
				rte_pktmbuf_free(m);
				return;
			}
		} else {
			connected(c);
			if (c->state == TCPS_CLOSED) {
				rte_pktmbuf_free(m);
				return;
			}
		}
	} else if (!process_ack(c, s)) {
		rte_pktmbuf_free(m);
		return;
	}

	/* ECN receiver (RFC 3168 6.1.3): a CE mark is echoed, ECE on every
	 * ACK, until a segment with CWR says the sender has reduced; CWR
	 * first, so that a CE on that same segment starts a new echo. The ACK
	 * that starts an echo goes at once (Linux: a quick ACK on CE). */
	if (c->ecn & TCP_ECN_OK) {
		if (s->flags & TH_CWR)
			c->ecn &= (uint8_t)~TCP_ECN_ECHO;
		if (s->ce) {
			TCP_INC(wk, ECN_CE_RECEIVED);
			if (!(c->ecn & TCP_ECN_ECHO)) {
				c->ecn |= TCP_ECN_ECHO;
				c->flags |= TF_ACK_NOW;
				tcp_want_output(c);
			}
		}
	}

	/* Trim to the window: the left part already received, the right part
	 * beyond what we offered. */
	uint32_t seq = s->seq;
	uint32_t len = s->len;
	bool fin = s->flags & TH_FIN;
	if (seq_lt(seq, c->rcv_nxt) && !s->old_ack) {
		uint32_t d = c->rcv_nxt - seq;
		if (d >= len) {
			if (len) {
				TCP_DUP(wk, len);
				dsack_report(c, seq, seq + len);
				quickack_enter(c);
			}
			/* a FIN at rcv_nxt - 1 is an old FIN too */
			if (fin && seq + len != c->rcv_nxt)
				fin = false;
			len = 0;
			ack_owed(c);
		} else {
			dsack_report(c, seq, c->rcv_nxt);
			rte_pktmbuf_adj(m, (uint16_t)d);
			len -= d;
			ack_owed(c);
		}
		seq = c->rcv_nxt;
	}
	rwnd = seq_gt(c->rcv_adv, c->rcv_nxt) ? c->rcv_adv - c->rcv_nxt : 0;
	if (len && seq_gt(seq + len, c->rcv_nxt + rwnd)) {
		uint32_t keep = seq_gt(c->rcv_nxt + rwnd, seq) ? c->rcv_nxt + rwnd - seq : 0;
		rte_pktmbuf_trim(m, (uint16_t)(len - keep));
		len = keep;
		fin = false;
		c->flags |= TF_ACK_NOW;
	}

	bool data_state = c->state == TCPS_ESTABLISHED || c->state == TCPS_FIN_WAIT_1 ||
			  c->state == TCPS_FIN_WAIT_2;
	bool appended = false, ack_now = false;
	if (len && (!data_state || (c->flags & TF_RCVD_FIN))) {
		len = 0; /* after the peer's FIN: nothing more can be data */
	} else if (len && (c->flags & TF_APP_CLOSED)) {
		rst_data_after_close(c, m);
		return;
	} else if (len && seq == c->rcv_nxt && !tcp_rmem_admit_in_order(c)) {
		/* over the connection's mbuf bound even after collapsing:
		 * dropped, the peer sends it again */
		len = 0;
		fin = false;
		c->flags |= TF_ACK_NOW;
	} else if (len && seq == c->rcv_nxt) {
		rcv_append(c, m, len, false);
		m = NULL;
		appended = true;
		if (c->oooq.head) {
			/* RFC 5681 4.2: a hole was filled, ACKed at once, once
			 * the application has read what it released */
			wk->cnt[ARN_TCP_C_BYTES_IN] += tcp_ooo_pull(c);
			/* a chain's links share one ACK: its last link's */
			ack_now = !(s->chain & TCP_SEG_MORE) && ack_at_once(c);
			ack_owed(c);
		}
		rcv_rtt_measure(c, s, len);
		rcv_ack_policy(c, s);
		if (fin && seq + len != c->rcv_nxt)
			fin = false; /* data queued beyond a FIN: the FIN is bogus */
		if (!fin && (c->flags & TF_OOO_FIN) && c->rcv_nxt == c->ooo_fin_seq)
			fin = true;
	} else if (len) {
		m->pkt_len = m->data_len = (uint16_t)len;
		TCP_INC_PKT(wk, OUT_OF_ORDER, TCP_PKT_OOO);
		/* The ACK owed so far goes first if this segment's SACK block
		 * (or a DSACK) would push what it has not reported yet out of
		 * the blocks one ACK carries (tcp_sack.c). */
		if (tcp_rsack_ack_due(c))
			tcp_send_ack(c);
		tcp_ooo_insert(c, m, seq);
		m = NULL;
		/* a duplicate ACK with SACK blocks (one for a chain's
		 * links: its last link's) */
		if (!(s->chain & TCP_SEG_MORE) && ack_at_once(c))
			tcp_send_ack(c);
		else
			ack_owed(c);
		if (fin) {
			c->flags |= TF_OOO_FIN;
			c->ooo_fin_seq = seq + len;
			fin = false;
		}
	} else if (fin && seq != c->rcv_nxt) {
		if (seq_gt(seq, c->rcv_nxt)) {
			c->flags |= TF_OOO_FIN;
			c->ooo_fin_seq = seq;
		}
		c->flags |= TF_ACK_NOW;
		fin = false;
	}
	if (m)
		tcp_pkt_done(wk, m);

	if (appended) {
		deliver_data(c, false);
		if (c->state == TCPS_CLOSED)
			return;
		/* after the read, so that the ACK carries the window it freed */
		if (ack_now && (c->flags & TF_ACK_NOW) &&
		    !seq_gt(c->snd_una + c->sndq.bytes, c->snd_max))
			tcp_send_ack(c);
	}
	if (fin && !(c->flags & TF_RCVD_FIN) && (data_state || c->state == TCPS_SYN_RECEIVED)) {
		fin_in(c);
		if (c->state == TCPS_CLOSED)
			return;
	}
	if (c->flags & TF_ACK_NOW)
		tcp_want_output(c); /* a delayed ACK's timer is armed (rcv_ack_policy) */
}

/* ---- TIME_WAIT ------------------------------------------------------------------------ */

/*
 * A segment for a 4-tuple in TIME_WAIT (RFC 9293 3.10.7.4), answered from
 * its record: a newer SYN reopens the tuple (RFC 6191: a newer timestamp,
 * or without timestamps a higher sequence number); RSTs do not end TIME_WAIT
 * (RFC 1337); a retransmitted FIN restarts 2 MSL; everything else gets our
 * last ACK again.
 */
static void tw_input(struct arn_tcp_worker *wk, struct tcp_tw *t, struct tcp_seg *s,
		     struct rte_mbuf *m)
{
	if ((s->flags & TH_SYN) && !(s->flags & (TH_ACK | TH_RST))) {
		bool newer = (t->ts_ok && s->has_ts) ? seq_gt(s->tsval, t->ts_recent)
						     : seq_gt(s->seq, t->rcv_nxt);
		if (newer && tcp_listener_find(wk, s->dst, s->dport)) {
			TCP_INC(wk, TW_REUSED);
			tcp_tw_free(wk, t);
			listen_input(wk, s, m);
			return;
		}
	}
	rte_pktmbuf_free(m);
	if (s->flags & TH_RST)
		return;
	/* PAWS (RFC 7323 5.3): an old duplicate is dropped, and ACKed */
	bool paws = t->ts_ok && s->has_ts && (int32_t)(t->ts_recent - s->tsval) > TCP_PAWS_WINDOW;
	/* RFC 9293 3.10.7.4: the only thing that can arrive is the peer's FIN
	 * again (with its data, if it came with some): ACKed, and 2 MSL
	 * restarted. A FIN at any other sequence number restarts nothing. */
	if ((s->flags & TH_FIN) && !paws && s->seq + s->len + 1 == t->rcv_nxt) {
		tcp_tw_restart(wk, t);
		tcp_send_tw_ack(wk, t);
		return;
	}
	/* A copy of the peer's last ACK: nothing to say (Linux's
	 * tcp_timewait_state_process drops an in-window bare ACK). */
	if (!paws && s->len == 0 && !(s->flags & (TH_SYN | TH_FIN)) && s->seq == t->rcv_nxt)
		return;
	/* Anything else gets our ACK, as RFC 9293 says, but at most one per
	 * record per TCP_INVALID_RATELIMIT_MS (Linux's tw_last_oow_ack_time)
	 * and from the worker's challenge ACK budget: each segment used to get
	 * one, so a spoofer who knew the tuple had the peer sent a packet for
	 * every packet it sent. */
	uint32_t now = (uint32_t)wk->now_ms;
	if ((t->ack_ms && now - t->ack_ms < TCP_INVALID_RATELIMIT_MS) ||
	    !tcp_chack_budget_take(wk)) {
		TCP_INC(wk, CHALLENGE_ACKS_LIMITED);
		return;
	}
	t->ack_ms = now ? now : 1;
	tcp_send_tw_ack(wk, t);
}

/* ---- chains ------------------------------------------------------------------------- */

/*
 * A packet that arrived as an mbuf chain: a kernel port's GRO/LRO
 * super-segment (up to 64 KB of one flow's payload under one TCP header),
 * whose links lib/net filled as they came, not at the sender's segment
 * boundaries. chain_in has checked it and parsed its header into @p s0;
 * @p m's first link starts at the payload.
 *
 * Each link is taken as a segment of its own, in order: one mbuf (next
 * NULL, nb_segs 1, pkt_len = data_len), at the sequence number of its
 * first byte, through the same paths as a plain segment (fast_input or
 * conn_input). So everything the receive side bounds in mbufs (tcp_rmem.c:
 * a connection's budget, the out-of-order queues', the pool's) counts a
 * chain's links as it counts segments, and a chain can pin no more mbufs
 * than its links sent as segments could; trimming to the window, overlaps
 * and holes are a plain segment's. What the header says once is used
 * once: the ACK and its window on every link, as segments repeating them
 * would carry them (the first link's ACK moves snd_una, the rest find it
 * moved), SACK blocks and CWR on the first link only, FIN and PSH on the
 * last. The ACK the packet earns goes once: links before the last never
 * send one at once (TCP_SEG_MORE), and the owed ACK waits for the poll's
 * output as a burst's does. The delayed-ACK rule and the receiver's RTT
 * count the sender's segments (m->tso_segsz with RTE_MBUF_F_RX_LRO, else
 * the whole payload as one), not the links.
 *
 * The connection may end or change under a link (data after a close is
 * answered with a RST, an application callback may abort): every link
 * looks its connection up again, and once the connection an earlier link
 * found is gone the rest of the chain is dropped (a single answer, the
 * first link's, went already; the peer sends again what it needs to).
 */
static void chain_input(struct arn_tcp_worker *wk, const struct tcp_seg *s0, struct rte_mbuf *m)
{
	TCP_INC(wk, GRO_IN);
	uint32_t total = s0->len; /* > 0: a second link holds payload */
	uint32_t mss = total;
	if ((m->ol_flags & RTE_MBUF_F_RX_LRO) && m->tso_segsz && m->tso_segsz < total)
		mss = m->tso_segsz;
	wk->cnt[ARN_TCP_C_GRO_SEGS] += (total + mss - 1) / mss;
	uint32_t off = 0;
	bool first = true;
	struct rte_mbuf *nx;
	wk->in_chain = true; /* TCP_INC_PKT: once for the chain */
	wk->chain_counted = 0;
	/* segments_fast_path, on the path every in-order segment takes, is
	 * bumped per link there (no test of in_chain per segment: 16
	 * instructions a request in bench_hcm) and brought back to one for
	 * the chain here */
	uint64_t fast0 = wk->cnt[ARN_TCP_C_FAST_PATH];
	for (struct rte_mbuf *x = m; x != NULL; x = nx) {
		nx = x->next;
		x->next = NULL;
		x->nb_segs = 1;
		x->pkt_len = x->data_len;
		uint32_t n = x->data_len;
		if (n == 0) {
			/* the first link held the headers alone */
			rte_pktmbuf_free_seg(x);
			continue;
		}
		struct tcp_seg s = *s0;
		bool more = nx != NULL;
		s.chain = (uint8_t)(TCP_SEG_CHAIN | (more ? TCP_SEG_MORE : 0));
		s.seq = s0->seq + off;
		s.len = n;
		s.mss = (uint16_t)mss;
		/* the sender's segments that end in this link: those whose
		 * last byte it holds, and the last (short) one with the last
		 * link; past 2 the count changes nothing (rcv_ack_policy) */
		uint32_t segs = (off + n) / mss - off / mss;
		if (!more && (off + n) % mss)
			segs++;
		s.segs_adj = (int8_t)((int)RTE_MIN(segs, 64u) - 1);
		if (more)
			s.flags &= (uint8_t) ~(TH_FIN | TH_PSH);
		if (off) {
			s.flags &= (uint8_t)~TH_CWR;
			s.n_sack = 0;
		}
		off += n;
		struct arn_tcp_conn *c = tcp_lookup_inline(wk, s.dst, s.dport, s.src, s.sport);
		if (c) {
			if (!fast_input(c, &s, x))
				conn_input(c, &s, x);
		} else if (first) {
			struct tcp_tw *t = tcp_tw_lookup(wk, s.dst, s.dport, s.src, s.sport);
			if (t)
				tw_input(wk, t, &s, x);
			else
				listen_input(wk, &s, x);
		} else {
			rte_pktmbuf_free_seg(x);
			rte_pktmbuf_free(nx);
			break;
		}
		first = false;
	}
	wk->in_chain = false;
	if (wk->cnt[ARN_TCP_C_FAST_PATH] > fast0 + 1)
		wk->cnt[ARN_TCP_C_FAST_PATH] = fast0 + 1;
}

/* Are @p m's links what chain_input takes: as many as nb_segs, none
 * empty, their lengths adding up to pkt_len, and the first holding the
 * IPv4 and TCP headers (@p hl bytes) whole? lib/net vouches for none of
 * this beyond the first link's fixed headers (arn_l4.h). */
static bool chain_ok(const struct rte_mbuf *m, uint32_t hl)
{
	if (m->data_len < hl)
		return false;
	uint32_t sum = 0, links = 0;
	for (const struct rte_mbuf *x = m; x != NULL; x = x->next) {
		if (x->data_len == 0 || ++links > m->nb_segs)
			return false;
		sum += x->data_len;
	}
	return links == m->nb_segs && sum == m->pkt_len;
}

/* ---- entry -------------------------------------------------------------------------------- */

/* The TCP header at @p th (@p doff bytes, options included) under IPv4
 * header @p ip, with @p len bytes of payload, into @p s. Inline: both
 * entries (tcp_input's every segment, chain_in's chains) take it. */
static inline __attribute__((always_inline)) void seg_parse(struct tcp_seg *s,
							    const struct rte_ipv4_hdr *ip,
							    const struct rte_tcp_hdr *th,
							    unsigned doff, uint32_t len)
{
	memset(s, 0, offsetof(struct tcp_seg, sack));
	s->src = rte_be_to_cpu_32(ip->src_addr);
	s->dst = rte_be_to_cpu_32(ip->dst_addr);
	s->sport = rte_be_to_cpu_16(th->src_port);
	s->dport = rte_be_to_cpu_16(th->dst_port);
	s->seq = rte_be_to_cpu_32(th->sent_seq);
	s->ack = rte_be_to_cpu_32(th->recv_ack);
	s->flags = th->tcp_flags;
	s->wnd = rte_be_to_cpu_16(th->rx_win);
	s->len = len;
	s->ce = (ip->type_of_service & ARN_IP_ECN_MASK) == ARN_IP_ECN_CE;
	if (doff > TCP_HDR_LEN) {
		const uint8_t *opt = (const uint8_t *)(th + 1);
		uint32_t w0;
		memcpy(&w0, opt, 4);
		if (doff == TCP_HDR_LEN + 12 && w0 == RTE_BE32(0x0101080au)) {
			/* NOP, NOP, timestamps alone: nearly every segment
			 * of a connection with timestamps, tcp_parse_options'
			 * first case without its call (each word loaded
			 * into a register, not copied through the stack) */
			uint32_t w1, w2;
			memcpy(&w1, opt + 4, 4);
			memcpy(&w2, opt + 8, 4);
			s->has_ts = true;
			s->tsval = rte_be_to_cpu_32(w1);
			s->tsecr = rte_be_to_cpu_32(w2);
		} else {
			tcp_parse_options(s, opt, doff - TCP_HDR_LEN);
			if (!(s->flags & TH_SYN)) {
				/* MSS and window scale mean something only
				 * on a SYN (only the full parse sets them) */
				s->has_mss = s->has_ws = false;
			}
		}
	}
}

/*
 * A packet that came as an mbuf chain (m->nb_segs > 1): a kernel port's
 * GRO super-segment (the AF_PACKET port with virtio-net headers). What
 * lib/net vouches for is tcp_input's; beyond it, here: up to 64 links,
 * pkt_len up to 65535, link boundaries anywhere in the payload (the first
 * link is typically an mbuf's data room less the headroom, 66 bytes of it
 * headers). The first link must hold the IPv4 and the whole TCP header,
 * options included, and every link at least one byte; a chain that breaks
 * either (hostile input, or a lib/net bug) is dropped as malformed.
 * RTE_MBUF_F_RX_L4_CKSUM_GOOD: the kernel vouched for the checksum;
 * otherwise it is summed over every link. RTE_MBUF_F_RX_LRO with
 * m->tso_segsz: the sender's segment size, which the ACK policy and the
 * receiver's RTT count by (chain_input). Out of line, and apart from
 * tcp_input's path for one mbuf, which stays as it was.
 * @return true if @p m is now one mbuf for tcp_input to take as usual (a
 * chain with SYN or RST, which GRO never makes, linearized as before
 * chains came); false if it was taken or dropped.
 */
static __attribute__((noinline)) bool chain_in(struct arn_tcp_worker *wk, struct rte_mbuf *m)
{
	const struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod(m, const struct rte_ipv4_hdr *);
	unsigned l3 = m->l3_len;
	const struct rte_tcp_hdr *th = rte_pktmbuf_mtod_offset(m, const struct rte_tcp_hdr *, l3);
	unsigned doff = (unsigned)(th->data_off >> 4) * 4;
	if (doff < TCP_HDR_LEN || !chain_ok(m, l3 + doff)) {
		TCP_INC(wk, MALFORMED);
		rte_pktmbuf_free(m);
		return false;
	}
	uint64_t ck = m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK;
	if (ck == RTE_MBUF_F_RX_L4_CKSUM_BAD ||
	    (ck != RTE_MBUF_F_RX_L4_CKSUM_GOOD && !tcp_cksum_ok_chain(ip, m, l3))) {
		TCP_INC(wk, BAD_CKSUM);
		rte_pktmbuf_free(m);
		return false;
	}
	if (th->tcp_flags & (TH_SYN | TH_RST)) {
		if (rte_pktmbuf_linearize(m) == 0)
			return true;
		TCP_INC(wk, MALFORMED);
		rte_pktmbuf_free(m);
		return false;
	}
	struct tcp_seg s;
	seg_parse(&s, ip, th, doff, m->pkt_len - l3 - doff);
	/* the headers off the first link; each link's lengths are set as
	 * chain_input takes it */
	m->data_off = (uint16_t)(m->data_off + l3 + doff);
	m->data_len = (uint16_t)(m->data_len - l3 - doff);
	chain_input(wk, &s, m);
	return false;
}

/*
 * One received packet (arn_l4.h, arn_l4_ops.input). What lib/net vouches
 * for is not asked again: its data starts at the IPv4 header, l3_len is
 * that header's length, pkt_len the IPv4 total length, with room for the
 * TCP header's fixed 20 bytes in the first mbuf; a packet of one mbuf
 * holds it all (data_len == pkt_len). What is the peer's alone, the data
 * offset, is checked here. A chain (a kernel port's GRO super-segment)
 * takes chain_in's path, whose comment says what is checked of it.
 */
void tcp_input(struct arn_tcp_worker *wk, struct rte_mbuf *m)
{
	TCP_INC(wk, SEG_IN);
	if (unlikely(m->nb_segs > 1) && !chain_in(wk, m))
		return;
	const struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod(m, const struct rte_ipv4_hdr *);
	unsigned l3 = m->l3_len;
	const struct rte_tcp_hdr *th = rte_pktmbuf_mtod_offset(m, const struct rte_tcp_hdr *, l3);
	unsigned doff = (unsigned)(th->data_off >> 4) * 4;
	if (doff < TCP_HDR_LEN || l3 + doff > m->pkt_len) {
		TCP_INC(wk, MALFORMED);
		rte_pktmbuf_free(m);
		return;
	}
	uint64_t ck = m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK;
	if (ck == RTE_MBUF_F_RX_L4_CKSUM_BAD ||
	    (ck != RTE_MBUF_F_RX_L4_CKSUM_GOOD && !tcp_cksum_ok(ip, th, m->pkt_len - l3))) {
		TCP_INC(wk, BAD_CKSUM);
		rte_pktmbuf_free(m);
		return;
	}
	struct tcp_seg s;
	seg_parse(&s, ip, th, doff, m->pkt_len - l3 - doff);
	/* rte_pktmbuf_adj without its test: the headers are within the one
	 * segment (checked above, and data_len == pkt_len), and m stays
	 * what every path after this expects: the payload, pkt_len and
	 * data_len both s.len (the fast path queues it as it is) */
	m->data_off = (uint16_t)(m->data_off + l3 + doff);
	m->data_len = (uint16_t)s.len;
	m->pkt_len = s.len;

	struct arn_tcp_conn *c = tcp_lookup_inline(wk, s.dst, s.dport, s.src, s.sport);
	if (c) {
		if (!fast_input(c, &s, m))
			conn_input(c, &s, m);
		return;
	}
	struct tcp_tw *t = tcp_tw_lookup(wk, s.dst, s.dport, s.src, s.sport);
	if (t)
		tw_input(wk, t, &s, m);
	else
		listen_input(wk, &s, m);
}

void arn_tcp_input(struct arn_lcore *lc, struct rte_mbuf *m)
{
	struct arn_tcp_worker *wk = tcp_wk(lc);
	if (wk == NULL) {
		rte_pktmbuf_free(m);
		return;
	}
	tcp_clock(wk);
	tcp_input(wk, m);
}

void arn_tcp_icmp_unreach(struct arn_lcore *lc, uint8_t code, uint16_t mtu, uint32_t src,
			  uint32_t dst, uint16_t sport, uint16_t dport, uint32_t seq)
{
	struct arn_tcp_worker *wk = tcp_wk(lc);
	if (wk == NULL)
		return;
	tcp_clock(wk);
	struct arn_tcp_conn *c = tcp_lookup(wk, src, sport, dst, dport);
	if (c == NULL)
		return;
	/* RFC 5927 4.1 (Linux's tcp_v4_err): the quoted segment must be one
	 * of ours still in flight, SND.UNA <= SEG.SEQ < SND.MAX; in SYN-SENT
	 * that is the SYN's ISS. Anyone can send an ICMP error: without this,
	 * one who knew only the 4-tuple (an upstream's address and port, and
	 * Arion's ephemeral port, a few thousand guesses) failed every
	 * connect to it with a port unreachable, and shrank any connection's
	 * segments with a "fragmentation needed". */
	if (!seq_in(seq, c->snd_una, c->snd_max)) {
		TCP_INC(wk, ICMP_OUT_OF_WINDOW);
		return;
	}
	if (code == 4) {
		/* Path MTU (RFC 1191). A forged ICMP quoting a segment in
		 * flight can still lower it: never below 576-byte paths'
		 * MSS. */
		if (mtu < 576)
			mtu = 576;
		uint16_t mss = tcp_mss_clamp(wk, RTE_MIN((uint32_t)mtu - 40, (uint32_t)c->peer_mss),
					     c->raddr, (c->flags & TF_TS_OK) != 0);
		if (mss >= c->mss)
			return;
		c->mss = mss;
		if (c->snd_max != c->snd_una && c->recovery == TCP_REC_NONE) {
			/* resend what was in flight at the new size, without
			 * treating it as congestion (Linux tcp_simple_retransmit) */
			c->recovery = TCP_REC_LOSS;
			c->recover = c->snd_max;
			c->high_rxt = c->snd_una;
			c->lost_edge = c->snd_max;
			if (tcp_rack_on(c))
				tcp_rack_mark_all_lost(c);
			tcp_want_output(c);
		}
		return;
	}
	/* Hard errors only abort a connection still opening (RFC 1122
	 * 4.2.3.9 allows it; established connections ride them out). */
	if (c->state == TCPS_SYN_SENT && code <= 3) {
		int err = code == 3 ? -ECONNREFUSED : -EHOSTUNREACH;
		TCP_INC(wk, CONNECT_FAILED);
		if (c->ops && c->ops->on_connected && !(c->flags & TF_APP_CLOSED))
			c->ops->on_connected(c, err);
		tcp_conn_drop(c, err);
	}
}
