/*
 * lib/tcp's timer wheel, the part the send and receive paths call on every
 * segment: tcp_timer_update (tcp_timer.c) and tcp_timer_armed, its inline
 * front. Beside tcp_timer.c rather than in tcp_int.h, which every file of
 * lib/tcp includes: an inline there calling into tcp_timer.c made the
 * header depend on that file and that file on it (one circle).
 */
#ifndef ARN_TCP_TIMER_H
#define ARN_TCP_TIMER_H

#include <stdint.h>

#include "tcp_int.h"

void tcp_timer_update(struct arn_tcp_conn *c);
/* One of @p c's deadlines was just set to @p when (not 0): tcp_timer_update
 * unless the wheel visits the connection by then anyway. A filed entry is
 * never later than the earliest deadline (every deadline set earlier went
 * through tcp_timer_update; one moved later fires early, finds nothing due
 * and is filed again), so when @p when is not before it, tcp_timer_update
 * would find nothing to do: the retransmission timer re-armed by every
 * flight and the delayed ACK's, several times a request, cost no call. */
static inline __attribute__((always_inline)) void tcp_timer_armed(struct arn_tcp_conn *c,
								  uint64_t when)
{
	if (c->t_sched == 0 || when < c->t_sched)
		tcp_timer_update(c);
}

/* RFC 6298 2.2 / 2.3 from a sample of @p rtt_us microseconds, with
 * Linux's 200 ms floor; G, the clock's granularity, is the timer wheel's
 * millisecond. Inline: every ACK of new data takes a sample, and the call
 * was a fifth of its cost. */
static inline __attribute__((always_inline)) void tcp_rtt_update(struct arn_tcp_conn *c,
								 uint32_t rtt_us)
{
	if (rtt_us == 0)
		rtt_us = 1;
	if (c->srtt_us8 == 0) {
		c->srtt_us8 = rtt_us << 3;
		c->rttvar_us4 = rtt_us << 1; /* rttvar = rtt/2 */
	} else {
		int32_t delta = (int32_t)rtt_us - (int32_t)(c->srtt_us8 >> 3);
		c->srtt_us8 += delta; /* srtt += delta/8 */
		if (delta < 0)
			delta = -delta;
		c->rttvar_us4 +=
		    delta - (int32_t)(c->rttvar_us4 >> 2); /* rttvar += (|d| - rttvar)/4 */
	}
	uint64_t rto_us = (uint64_t)(c->srtt_us8 >> 3) + RTE_MAX(1000u, c->rttvar_us4);
	uint32_t rto = (uint32_t)((rto_us + 999) / 1000);
	if (rto < TCP_RTO_MIN_MS)
		rto = TCP_RTO_MIN_MS;
	if (rto > TCP_RTO_MAX_MS)
		rto = TCP_RTO_MAX_MS;
	c->rto = rto;
}

/* A sample in milliseconds (a timestamp's echo, the handshake's timing):
 * under one is rounded up to one, as Linux does with a timestamp's. */
static inline __attribute__((always_inline)) void tcp_rtt_update_ms(struct arn_tcp_conn *c,
								    uint32_t rtt_ms)
{
	tcp_rtt_update(c, (rtt_ms ? rtt_ms : 1) * 1000u);
}

/* The RTT sample of an ACK that moves snd_una (RFC 6298 3, Karn's rule).
 * With RACK's records, as Linux's tcp_clean_rtx_queue: the time since the
 * oldest segment it acknowledges was sent, in microseconds, when that was
 * sent once and not SACKed before (its delivery is then this ACK's news);
 * otherwise none, since a timestamp's echo (RFC 7323 4.1) is in
 * milliseconds and on a path of 100 us every one of them rounds up to a
 * millisecond, ten times the path (issue 16: SRTT 1.9 ms where RACK
 * measured 110 us). Without records, the echo, or the timed segment. */
static inline __attribute__((always_inline)) void
tcp_rtt_on_ack(struct arn_tcp_conn *c, const struct tcp_seg *s, uint64_t now_ms)
{
	if (tcp_rack_on(c) && c->txr_head != TXR_NIL) {
		const struct tcp_txrec *r = &c->wk->txr[c->txr_head];
		if (!(r->flags & (TXR_SACKED | TXR_EVER_RETRANS)) && seq_gt(s->ack, r->start)) {
			tcp_rtt_update(c, (uint32_t)c->wk->now_us - r->xmit_us);
			c->flags &= ~TF_RTT_TIMING;
		}
		return;
	}
	if ((c->flags & TF_TS_OK) && s->has_ts && s->tsecr) {
		uint32_t rtt = tcp_ts_now(c) - s->tsecr;
		if (rtt < TCP_RTO_MAX_MS)
			tcp_rtt_update_ms(c, rtt);
	} else if ((c->flags & TF_RTT_TIMING) && seq_gt(s->ack, c->rtt_seq)) {
		tcp_rtt_update_ms(c, (uint32_t)(now_ms - c->rtt_start));
		c->flags &= ~TF_RTT_TIMING;
	}
}

#endif
