/*
 * Bytes in flight, for the files that ask (tcp_cc.c, tcp_in.c, tcp_out.c,
 * tcp_rack.c). Apart from tcp_int.h because its usual case is inline and
 * its other case is tcp_rack.c's: an inline in tcp_int.h calling into a
 * .c file made every file of lib/tcp depend on tcp_rack.c through the
 * header they all include. And RACK's usual ACK (the whole flight,
 * clean), which tcp_in.c's fast path takes inline. Worker lcore only.
 */
#ifndef ARN_TCP_RACK_H
#define ARN_TCP_RACK_H

#include <stdint.h>

#include "tcp_int.h"
#include "tcp_timer.h"

/* Bytes in flight: RACK's records, or RFC 6675's scoreboard. */
uint32_t tcp_pipe_full(const struct arn_tcp_conn *c);
/* The same, inline for the usual case: nothing SACKed, marked lost or
 * retransmitted, no duplicate ACKs counted and no recovery. Then RACK's
 * pipe (flight - sacked - lost + retransmitted) and RFC 6675's (flight -
 * sacked, or flight - duplicate ACKs' segments without SACK; holes count
 * only in recovery) are both the flight: no call, no scoreboard walk. It
 * is asked up to a dozen times per request-response exchange (ACK
 * processing, output, the app-limited check). */
static inline uint32_t tcp_pipe(const struct arn_tcp_conn *c)
{
	if ((c->sacked_bytes | c->reno_sacked | c->lost_bytes | c->retrans_bytes | c->recovery) ==
	    0)
		return c->snd_max - c->snd_una;
	return tcp_pipe_full(c);
}

/* RACK's min_RTT filter (RFC 8985 6.2 step 2's min_RTT, kept over
 * TCP_MINRTT_WIN_MS) takes @p rtt_us. */
static inline __attribute__((always_inline)) void tcp_min_rtt_update(struct arn_tcp_conn *c,
								     uint32_t rtt_us)
{
	uint64_t now = c->wk->now_ms;
	if (c->min_rtt_us == 0 || rtt_us <= c->min_rtt_us ||
	    now - c->min_rtt_ms > TCP_MINRTT_WIN_MS) {
		c->min_rtt_us = rtt_us;
		c->min_rtt_ms = now;
	}
}

/* One RTT sample an ACK (RACK's, of the last segment it delivers that
 * was sent once) moves rtt_med_us a sixteenth of itself towards it: an
 * estimate of the samples' median (their 48th percentile: a step down
 * is a little larger than a step up), which a few outliers do not move.
 * Twice it caps RACK's reordering window beside SRTT (tcp_rack.c,
 * reo_wnd_rfc). SRTT is a mean of other samples (tcp_rtt_on_ack: the
 * oldest segment an ACK acknowledges, when sent once and never SACKed),
 * and on a path that holds one segment in ten far longer than its RTT
 * those are mostly the held ones, each filling its hole: on issue 16's
 * loss matrix (0.1 ms, 10% held 2-12 ms) SRTT reached 5.2 ms, and the
 * window with it, where CUBIC's RACK samples are 99% under 0.5 ms
 * (docs/tcp.md, "Fourteenth pass"). A sample a step or less away leaves
 * it: it moves by whole steps or not at all, and never to 0. */
static inline __attribute__((always_inline)) void tcp_rtt_med_update(struct arn_tcp_conn *c,
								     uint32_t rtt_us)
{
	uint32_t m = c->rtt_med_us, step = (m >> 4) | 1;
	if (m == 0)
		m = rtt_us;
	else if (rtt_us > m && rtt_us - m >= step)
		m += step; /* at most rtt_us: never past UINT32_MAX */
	else if (m > rtt_us && m - rtt_us >= step && m > step)
		m -= step; /* never to 0, which means no sample */
	c->rtt_med_us = m;
}

/* The usual ACK of a request-response exchange (issue 17): ACK @p ack
 * covers everything sent (snd_max), nothing was SACKed, lost,
 * retransmitted or probed, and the congestion control takes no rate
 * samples (tcp_rate_on: with one, every record is delivered one by one;
 * @p rate_off: the caller found none). Then of RACK's ACK processing
 * (tcp_rack_on_ack) only tcp_rack_acked_all is left. The caller knows
 * the ACK carries no SACK block. RACK.fack below the first record's
 * end: no record still listed was delivered before (a SACKed one would
 * have moved it), so none was passed by a later one
 * (RACK_detect_reordering has nothing to find) even where the
 * scoreboard, trimmed to this ACK, no longer shows the SACK; and the
 * last one, sent once, is the RTT sample. */
static inline __attribute__((always_inline)) bool
tcp_rack_acked_all_ok(const struct arn_tcp_conn *c, uint32_t ack, bool rate_off)
{
	const struct arn_tcp_worker *wk = c->wk;
	if ((c->flags & (TF_SACK_OK | TF_TLP_OUT | TF_UNDO | TF_RACK_OFF)) != TF_SACK_OK ||
	    ack != c->snd_max || c->txr_head == TXR_NIL || c->tlp_again_ms ||
	    (c->sacked_bytes | c->lost_bytes | c->retrans_bytes) || (!rate_off && tcp_rate_on(c)))
		return false;
	return seq_lt(c->rack_fack, wk->txr[c->txr_head].end) &&
	       !(wk->txr[c->txr_tail].flags & ~TXR_APP_LIMITED);
}

/* tcp_rack_acked_all_ok's ACK: the records go back to the pool as one
 * list, the last one's RTT is RACK's and min_RTT's sample (RACK.xmit_ts
 * starts again with the next flight, as after every flight delivered),
 * and RACK.fack moves to its end. */
static inline __attribute__((always_inline)) void tcp_rack_acked_all(struct arn_tcp_conn *c)
{
	struct arn_tcp_worker *wk = c->wk;
	struct tcp_txrec *t = &wk->txr[c->txr_tail];
	uint32_t rtt = (uint32_t)wk->now_us - t->xmit_us;
	if (rtt == 0)
		rtt = 1;
	tcp_min_rtt_update(c, rtt);
	tcp_rtt_med_update(c, rtt);
	/* no c->rs.rtt_us: without tcp_rate_on nothing reads it */
	if (seq_gt(t->end, c->rack_fack))
		c->rack_fack = t->end;
	t->next = wk->txr_free;
	wk->txr_free = c->txr_head;
	c->txr_head = c->txr_tail = TXR_NIL;
	c->t_rack_us = 0;
	c->rack_rtt_us = 0;
}

/* tcp_txr_sent's every case, out of line. */
void tcp_txr_sent_full(struct arn_tcp_conn *c, uint32_t seq, uint32_t len);
/* New data [seq, seq + len) went out (len counts a FIN): record it. Inline
 * for the usual case on a RACK connection (once per segment of new data):
 * the record follows the last one, the pool has one, and the congestion
 * control takes no rate samples, so the record needs no snapshot. */
static inline void tcp_txr_sent(struct arn_tcp_conn *c, uint32_t seq, uint32_t len)
{
	if (!tcp_rack_on(c) || len == 0)
		return;
	struct arn_tcp_worker *wk = c->wk;
	uint32_t tail = c->txr_tail, i = wk->txr_free;
	if ((tail != TXR_NIL && wk->txr[tail].end != seq) || i == TXR_NIL || tcp_rate_on(c)) {
		tcp_txr_sent_full(c, seq, len);
		return;
	}
	struct tcp_txrec *r = &wk->txr[i];
	wk->txr_free = r->next;
	r->start = seq;
	r->end = seq + len;
	r->xmit_us = (uint32_t)wk->now_us;
	r->flags = 0;
	r->next = TXR_NIL;
	if (tail != TXR_NIL)
		wk->txr[tail].next = i;
	else
		c->txr_head = i;
	c->txr_tail = i;
}

/* A flight of one segment (every keep-alive request's response, and its
 * request upstream) with the RTO not backed off and not above WCDelAckT:
 * a loss probe, when pto_ms (tcp_rack.c) allows one, would wait 2 x SRTT
 * + WCDelAckT, never less than the RTO, so the RTO is the timer to arm. */
static inline bool tcp_rto_first(const struct arn_tcp_conn *c)
{
	return c->snd_max - c->snd_una <= c->mss && c->backoff == 0 &&
	       c->rto <= TCP_TLP_WCDELACK_US / 1000;
}

/* The RTO for tcp_rto_first's flight: c->rto itself (not backed off),
 * no probe first. tcp_rexmt_arm's result there, without its loop. */
static inline void tcp_rto_arm_first(struct arn_tcp_conn *c)
{
	c->flags &= ~TF_TLP;
	c->t_rexmt = c->wk->now_ms + c->rto;
	tcp_timer_armed(c, c->t_rexmt);
}

/* New data went out: (re)start the probe timer (RFC 8985 7.2), or arm the
 * RTO if none runs. Inline for a flight that starts with one segment,
 * once per segment sent on a keep-alive exchange; the rest in
 * tcp_rexmt_new_data_full. */
static inline void tcp_rexmt_new_data(struct arn_tcp_conn *c)
{
	if (c->t_rexmt == 0 && tcp_rto_first(c)) {
		c->flags &= ~TF_PERSIST;
		tcp_rto_arm_first(c);
		return;
	}
	tcp_rexmt_new_data_full(c);
}

#endif
