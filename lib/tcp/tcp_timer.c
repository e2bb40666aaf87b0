/*
 * Timers: one hashed wheel per worker with 1 ms slots. A connection sits in
 * the wheel once, filed under the earliest of its deadlines (retransmit,
 * persist or loss probe, delayed ACK, keepalive or handshake, 2MSL; RACK's
 * reordering timer is not here but on a list of its own, to the
 * microsecond, tcp_worker.c). Moving a deadline
 * later, which every ACK does to the retransmit timer, costs nothing: the
 * entry fires early, finds nothing due and is filed again. Deadlines beyond
 * the wheel's span simply go round more than once.
 *
 * RTT estimation and the RTO (RFC 6298) are tcp_timer.h's (inline). What
 * happens when a deadline passes is tcp_timeout.c's: this file only keeps time.
 */
#include "tcp_int.h"
#include "tcp_timer.h"

static void wheel_unlink(struct arn_tcp_worker *wk, struct arn_tcp_conn *c)
{
	if (c->tprev)
		c->tprev->tnext = c->tnext;
	else
		wk->wheel[c->t_sched % TCP_WHEEL_SLOTS] = c->tnext;
	if (c->tnext)
		c->tnext->tprev = c->tprev;
	c->tprev = c->tnext = NULL;
	c->t_sched = 0;
}

static void wheel_file(struct arn_tcp_worker *wk, struct arn_tcp_conn *c, uint64_t when)
{
	if (when <= wk->wheel_ms)
		when = wk->wheel_ms + 1;
	c->t_sched = when;
	struct arn_tcp_conn **slot = &wk->wheel[when % TCP_WHEEL_SLOTS];
	c->tprev = NULL;
	c->tnext = *slot;
	if (*slot)
		(*slot)->tprev = c;
	*slot = c;
}

/* The earliest armed deadline, 0 when none is. This runs on every send
 * and ACK (several times a request): 0 (unarmed) minus one wraps to the
 * largest value, so a plain unsigned minimum of t - 1 skips it without a
 * branch per timer, and + 1 gives back the deadline, or 0 when all four
 * were 0 (a loop with a test per timer cost about 30 instructions). */
static inline uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static uint64_t next_deadline(const struct arn_tcp_conn *c)
{
	uint64_t d = min_u64(min_u64(c->t_rexmt - 1, c->t_delack - 1),
			     min_u64(c->t_keep - 1, c->t_2msl - 1));
	return d + 1;
}

void tcp_timer_update(struct arn_tcp_conn *c)
{
	struct arn_tcp_worker *wk = c->wk;
	uint64_t d = next_deadline(c);
	if (d == 0) {
		if (c->t_sched)
			wheel_unlink(wk, c);
		return;
	}
	if (c->t_sched == 0) {
		wheel_file(wk, c, d);
	} else if (d < c->t_sched) {
		wheel_unlink(wk, c);
		wheel_file(wk, c, d);
	}
}

void tcp_timer_cancel_all(struct arn_tcp_conn *c)
{
	c->t_rexmt = c->t_delack = c->t_keep = c->t_2msl = 0;
	c->t_rack_us = 0; /* leaves the worker's list at its next poll */
	if (c->t_sched)
		wheel_unlink(c->wk, c);
}

void tcp_rexmt_arm(struct arn_tcp_conn *c)
{
	uint32_t rto = c->rto;
	for (unsigned i = 0; i < c->backoff && rto < TCP_RTO_MAX_MS; i++)
		rto <<= 1;
	if (rto > TCP_RTO_MAX_MS)
		rto = TCP_RTO_MAX_MS;
	c->flags &= ~TF_TLP;
	c->t_rexmt = c->wk->now_ms + rto;
	tcp_timer_armed(c, c->t_rexmt);
}

/* Unlink and return, linked through xnext, the connections filed in slot
 * @p t whose entry is due by @p now (entries not due stay where they are;
 * the list has a link of its own, so that expiry handlers re-filing or
 * dropping other connections cannot break the caller's walk). */
struct arn_tcp_conn *tcp_timer_due(struct arn_tcp_worker *wk, uint64_t t, uint64_t now)
{
	struct arn_tcp_conn *due = NULL, **tail = &due;
	struct arn_tcp_conn *c = wk->wheel[t % TCP_WHEEL_SLOTS];
	while (c) {
		struct arn_tcp_conn *n = c->tnext;
		if (c->t_sched <= now) {
			wheel_unlink(wk, c);
			*tail = c;
			tail = &c->xnext;
			c->xnext = NULL;
		}
		c = n;
	}
	return due;
}
