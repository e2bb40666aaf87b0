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

/* RFC 6298 2.2 / 2.3 with Linux's 200 ms floor. Inline: every ACK of new
 * data takes a sample, and the call was a fifth of its cost. */
static inline __attribute__((always_inline)) void tcp_rtt_update(struct arn_tcp_conn *c,
								 uint32_t rtt)
{
	if (rtt == 0)
		rtt = 1;
	if (c->srtt8 == 0) {
		c->srtt8 = rtt << 3;
		c->rttvar4 = rtt << 1; /* rttvar = rtt/2 */
	} else {
		int32_t delta = (int32_t)rtt - (int32_t)(c->srtt8 >> 3);
		c->srtt8 += delta; /* srtt += delta/8 */
		if (delta < 0)
			delta = -delta;
		c->rttvar4 += delta - (int32_t)(c->rttvar4 >> 2); /* rttvar += (|d| - rttvar)/4 */
	}
	uint32_t rto = (c->srtt8 >> 3) + RTE_MAX(1u, c->rttvar4);
	if (rto < TCP_RTO_MIN_MS)
		rto = TCP_RTO_MIN_MS;
	if (rto > TCP_RTO_MAX_MS)
		rto = TCP_RTO_MAX_MS;
	c->rto = rto;
}

#endif
