/*
 * Timers: one hashed wheel per worker with 1 ms slots. A connection sits in
 * the wheel once, filed under the earliest of its deadlines (retransmit,
 * persist or loss probe, delayed ACK, keepalive or handshake, 2MSL, RACK's
 * reordering timer). Moving a deadline
 * later, which every ACK does to the retransmit timer, costs nothing: the
 * entry fires early, finds nothing due and is filed again. Deadlines beyond
 * the wheel's span simply go round more than once.
 *
 * Also here: RTT estimation and the RTO (RFC 6298).
 */
#include <errno.h>

#include "arn_log.h"
#include "tcp_int.h"

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

static uint64_t next_deadline(const struct arn_tcp_conn *c)
{
	uint64_t d = 0;
	const uint64_t t[5] = {c->t_rexmt, c->t_delack, c->t_keep, c->t_2msl, c->t_rack};
	for (int i = 0; i < 5; i++)
		if (t[i] && (d == 0 || t[i] < d))
			d = t[i];
	return d;
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
	c->t_rexmt = c->t_delack = c->t_keep = c->t_2msl = c->t_rack = 0;
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
	tcp_timer_update(c);
}

/* RFC 6298 2.2 / 2.3 with Linux's 200 ms floor. */
void tcp_rtt_update(struct arn_tcp_conn *c, uint32_t rtt)
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

static void keepalive_expire(struct arn_tcp_conn *c)
{
	struct arn_tcp_worker *wk = c->wk;
	switch (c->state) {
	case TCPS_SYN_RECEIVED:
	case TCPS_SYN_SENT:
		/* handshake deadline: the retransmit timer gives up first, this
		 * is the backstop */
		TCP_INC(wk, TIMEOUTS);
		if (c->state == TCPS_SYN_SENT) {
			TCP_INC(wk, CONNECT_FAILED);
			if (c->ops && c->ops->on_connected && !(c->flags & TF_APP_CLOSED))
				c->ops->on_connected(c, -ETIMEDOUT);
		}
		tcp_conn_drop(c, -ETIMEDOUT);
		return;
	default:
		break;
	}
	if (!(c->flags & TF_KEEPALIVE) || c->state != TCPS_ESTABLISHED)
		return;
	if (c->probes >= c->keep_cnt) {
		TCP_INC(wk, TIMEOUTS);
		TCP_INC(wk, RST_TIMEOUT);
		tcp_send_rst_conn(c);
		tcp_conn_drop(c, -ETIMEDOUT);
		return;
	}
	/* Only probe an idle connection: data in flight has its own timer. */
	if (c->snd_max == c->snd_una) {
		c->probes++;
		TCP_INC(wk, KEEPALIVES);
		tcp_send_probe(c);
		c->t_keep = wk->now_ms + c->keep_intvl_ms;
	} else {
		c->t_keep = wk->now_ms + c->keep_idle_ms;
	}
}

static void persist_expire(struct arn_tcp_conn *c)
{
	struct arn_tcp_worker *wk = c->wk;
	c->flags &= ~TF_PERSIST;
	if (c->snd_max != c->snd_una ||
	    (c->sndq.bytes == 0 && !((c->flags & TF_FIN_QUEUED) && !(c->flags & TF_FIN_SENT)))) {
		c->backoff = 0;
		tcp_want_output(c);
		return;
	}
	if (c->probes >= TCP_PERSIST_MAX_PROBES) {
		TCP_INC(wk, TIMEOUTS);
		TCP_INC(wk, RST_TIMEOUT);
		tcp_send_rst_conn(c);
		tcp_conn_drop(c, -ETIMEDOUT);
		return;
	}
	if (c->snd_wnd != 0) {
		/* a small window: send what it allows after all (RFC 1122
		 * 4.2.3.4 override timeout) */
		c->flags |= TF_FORCE;
		tcp_output(c);
		c->flags &= ~TF_FORCE;
		if (c->snd_max != c->snd_una)
			return;
	}
	c->probes++;
	TCP_INC(wk, ZWP);
	tcp_send_probe(c);
	if (c->backoff < 15)
		c->backoff++;
	c->flags |= TF_PERSIST;
	tcp_rexmt_arm(c);
}

static void timer_expire(struct arn_tcp_conn *c, uint64_t now)
{
	if (c->t_2msl && c->t_2msl <= now) {
		c->t_2msl = 0;
		/* TIME_WAIT over, or FIN_WAIT_2 of a closed application gave up */
		tcp_conn_drop(c, 0);
		return;
	}
	if (c->t_delack && c->t_delack <= now) {
		c->t_delack = 0;
		/* Our data did not come in time to carry the ACK: not interactive
		 * after all (Linux leaves ping-pong mode here too). */
		c->flags &= ~TF_PINGPONG;
		if (c->flags & TF_DELACK) {
			TCP_INC(c->wk, DELAYED_ACKS);
			c->flags |= TF_ACK_NOW;
			tcp_output(c);
		}
	}
	if (c->state == TCPS_CLOSED)
		return;
	if (c->t_rack && c->t_rack <= now)
		tcp_rack_timeout(c);
	if (c->t_rexmt && c->t_rexmt <= now) {
		c->t_rexmt = 0;
		if (c->flags & TF_PERSIST)
			persist_expire(c);
		else if (c->flags & TF_TLP)
			tcp_tlp_fire(c);
		else
			tcp_retransmit_timeout(c);
	}
	if (c->state == TCPS_CLOSED)
		return;
	if (c->t_keep && c->t_keep <= now) {
		c->t_keep = 0;
		keepalive_expire(c);
	}
	if (c->state == TCPS_CLOSED)
		return;
	tcp_timer_update(c);
}

void tcp_timer_run(struct arn_tcp_worker *wk, uint64_t now)
{
	uint64_t from = wk->wheel_ms + 1;
	uint64_t to = now;
	if (to - from >= TCP_WHEEL_SLOTS)
		to = from + TCP_WHEEL_SLOTS - 1; /* every slot once covers all */
	for (uint64_t t = from; t <= to; t++) {
		wk->wheel_ms = t; /* anything filed from here on lands after t */
		/* First collect what is due (through xnext, a link of its own, so
		 * that callbacks re-filing or dropping other connections cannot
		 * break the walk); entries not due stay where they are. */
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
		while (due) {
			c = due;
			due = c->xnext;
			c->xnext = NULL;
			timer_expire(c, now);
		}
	}
	wk->wheel_ms = now;
}
