/*
 * What happens when a deadline of tcp_timer.c's wheel passes: the
 * retransmission timeout (RFC 6298 5.4-5.7, with RFC 5681's loss window and
 * RACK's marking), the tail loss probe (RFC 8985 7), the persist timer (RFC
 * 9293 3.8.6.1), keepalives and handshake deadlines, the delayed ACK, and
 * the end of TIME_WAIT. It sits above sending (tcp_out.c) and loss
 * detection (tcp_rack.c), which it drives; the wheel below it only keeps
 * time.
 */
#include <errno.h>

#include "arn_log.h"
#include "tcp_int.h"
#include "tcp_timer.h"

void tcp_retransmit_timeout(struct arn_tcp_conn *c)
{
	struct arn_tcp_worker *wk = c->wk;
	switch (c->state) {
	case TCPS_SYN_SENT:
		if (c->backoff >= TCP_SYN_RETRIES) {
			TCP_INC(wk, TIMEOUTS);
			TCP_INC(wk, CONNECT_FAILED);
			if (c->ops && c->ops->on_connected && !(c->flags & TF_APP_CLOSED))
				c->ops->on_connected(c, -ETIMEDOUT);
			tcp_conn_drop(c, -ETIMEDOUT);
			return;
		}
		TCP_INC(wk, RTO);
		c->backoff++;
		c->flags |= TF_SYN_RTX;
		tcp_send_syn(c);
		tcp_rexmt_arm(c);
		return;
	case TCPS_SYN_RECEIVED:
		if (c->backoff >= TCP_SYNACK_RETRIES) {
			TCP_INC(wk, TIMEOUTS);
			tcp_conn_drop(c, -ETIMEDOUT);
			return;
		}
		TCP_INC(wk, RTO);
		c->backoff++;
		c->flags |= TF_SYN_RTX;
		tcp_send_syn(c);
		tcp_rexmt_arm(c);
		return;
	case TCPS_ESTABLISHED:
	case TCPS_CLOSE_WAIT:
	case TCPS_FIN_WAIT_1:
	case TCPS_CLOSING:
	case TCPS_LAST_ACK:
		break;
	default:
		return;
	}
	if (c->snd_una == c->snd_max)
		return;
	if (c->backoff >= TCP_DATA_RETRIES) {
		TCP_INC(wk, TIMEOUTS);
		TCP_INC(wk, RST_TIMEOUT);
		tcp_send_rst_conn(c);
		tcp_conn_drop(c, -ETIMEDOUT);
		return;
	}
	TCP_INC(wk, RTO);
	if (c->recovery == TCP_REC_NONE)
		tcp_undo_begin(c);
	/* ssthresh once per congestion event, as Linux's tcp_enter_loss: not
	 * again after an RTO (the loss recovery's own), nor in a fast
	 * recovery still repairing its window, whose ssthresh is the event's
	 * and whose cwnd PRR has brought down (a second cut, and CUBIC's
	 * W_max moved to it) */
	if (c->recovery == TCP_REC_NONE ||
	    (c->recovery == TCP_REC_FAST && !seq_gt(c->recover, c->snd_una)))
		c->ssthresh = c->cc->ssthresh(c, wk->now_ms);
	tcp_ecn_queue_cwr(c);
	/* A second timeout in a row: the receiver may have reneged on what it
	 * SACKed (RFC 2018 8), so stop trusting the scoreboard. */
	if (c->backoff >= 1)
		tcp_sb_clear(c);
	c->cwnd = c->mss; /* loss window, RFC 5681 3.1 */
	c->recovery = TCP_REC_LOSS;
	c->recover = c->snd_max;
	c->high_rxt = c->snd_una;
	c->lost_edge = c->snd_max;
	c->dupacks = 0;
	c->reno_sacked = 0;
	c->flags &= ~TF_RTT_TIMING;
	c->backoff++;
	if (tcp_rack_on(c))
		tcp_rack_mark_all_lost(c);
	c->flags &= ~(TF_TLP_OUT | TF_TLP_RETRANS | TF_TLP_DSACKED);
	c->tlp_again_ms = 0;
	tcp_output(c);
	tcp_rexmt_arm(c);
}

void tcp_tlp_fire(struct arn_tcp_conn *c)
{
	c->flags &= ~TF_TLP;
	if (c->tlp_again_ms) {
		/* the second probe (tcp_rack.c, tcp_tlp_again_ms): nothing came
		 * back since the first. The RTO then comes when it would have
		 * without it: RTO after the first probe, as after any probe. */
		uint64_t waited = c->tlp_again_ms;
		c->tlp_again_ms = 0;
		if (c->snd_una == c->snd_max)
			return;
		if ((c->flags & TF_TLP_OUT) && tcp_tlp_resend(c))
			TCP_INC(c->wk, TLP_AGAIN);
		tcp_rexmt_arm(c);
		if (c->t_rexmt > c->wk->now_ms + waited) {
			c->t_rexmt -= waited;
			tcp_timer_update(c);
		}
		return;
	}
	if (c->snd_una == c->snd_max || !tcp_rack_on(c) ||
	    (c->recovery != TCP_REC_NONE && !tcp_rack_rxt_probe_ok(c))) {
		if (c->snd_una != c->snd_max)
			tcp_rexmt_arm(c);
		return;
	}
	if (tcp_tlp_send(c)) {
		TCP_INC(c->wk, TLP);
		c->flags |= TF_TLP_OUT;
		c->tlp_high_seq = c->snd_max;
		uint64_t again = tcp_tlp_again_ms(c);
		if (again) {
			c->tlp_again_ms = (uint32_t)again;
			c->flags |= TF_TLP;
			c->t_rexmt = c->wk->now_ms + again;
			tcp_timer_update(c);
			return;
		}
	}
	tcp_rexmt_arm(c);
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
	uint64_t no_mbuf = wk->cnt[ARN_TCP_C_OUT_NOMBUF];
	if (c->snd_wnd != 0) {
		/* a small window: send what it allows after all (RFC 1122
		 * 4.2.3.4 override timeout) */
		c->flags |= TF_FORCE;
		tcp_output(c);
		c->flags &= ~TF_FORCE;
		if (c->snd_max != c->snd_una)
			return;
		if (wk->cnt[ARN_TCP_C_OUT_NOMBUF] != no_mbuf) {
			/* The window is open and the pool, not the peer, kept
			 * the data back: try again at the RTO, neither backed
			 * off nor counted as a probe (as Linux retries at its
			 * TCP_RESOURCE_PROBE_INTERVAL, a fixed 500 ms), so
			 * that the data goes soon after the pool refills,
			 * however long it was short. A zero window below stays
			 * bounded by the probes' limit, pool or not: an
			 * attacker's zero-window connections must not outlive
			 * a shortage they cause. A backoff from zero-window
			 * probes before the window opened goes too. */
			c->backoff = 0;
			c->flags |= TF_PERSIST;
			tcp_rexmt_arm(c);
			return;
		}
	}
	c->probes++;
	tcp_send_probe(c);
	/* counted as sent only if it was (output_no_mbuf counts the rest) */
	if (wk->cnt[ARN_TCP_C_OUT_NOMBUF] == no_mbuf)
		TCP_INC(wk, ZWP);
	if (c->backoff < 15)
		c->backoff++;
	c->flags |= TF_PERSIST;
	tcp_rexmt_arm(c);
}

static void timer_expire(struct arn_tcp_conn *c, uint64_t now)
{
	if (c->t_2msl && c->t_2msl <= now) {
		c->t_2msl = 0;
		/* FIN_WAIT_2 of a closed application gave up (TIME_WAIT is a
		 * record of its own, tcp_tw_expire) */
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
		struct arn_tcp_conn *due = tcp_timer_due(wk, t, now);
		while (due) {
			struct arn_tcp_conn *c = due;
			due = c->xnext;
			c->xnext = NULL;
			timer_expire(c, now);
		}
	}
	wk->wheel_ms = now;
}
