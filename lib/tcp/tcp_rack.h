/*
 * Bytes in flight, for the files that ask (tcp_cc.c, tcp_in.c, tcp_out.c,
 * tcp_rack.c). Apart from tcp_int.h because its usual case is inline and
 * its other case is tcp_rack.c's: an inline in tcp_int.h calling into a
 * .c file made every file of lib/tcp depend on tcp_rack.c through the
 * header they all include. Worker lcore only.
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
