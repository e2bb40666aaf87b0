/*
 * RACK-TLP loss detection (RFC 8985), with the reordering window grown by
 * DSACKs, and undo of congestion responses that DSACKs show were spurious
 * (RFC 2883 section 4, RFC 3708).
 *
 * Why time-based: on a path that reorders, counting three duplicate ACKs
 * (RFC 5681) or three segments SACKed above a hole (RFC 6675 IsLost) calls
 * a segment lost that is merely late, and each such call halves cwnd. RACK
 * calls a segment lost only when a segment sent after it was delivered and
 * it has been out longer than that segment's RTT plus a reordering window.
 * It also sees a lost retransmission the same way, and the tail loss probe
 * turns a lost tail into a SACK instead of an RTO.
 *
 * Records (struct tcp_txrec) come from a per-worker pool. When the pool is
 * empty, or the peer did not negotiate SACK, the connection uses RFC 6675 /
 * RFC 6582 as before (TF_RACK_OFF until nothing is outstanding).
 */
#include "tcp_int.h"
#include "tcp_timer.h"
#include "tcp_rack.h"

#define R(wk, i) (&(wk)->txr[i])

/* Out of records: this connection falls back to RFC 6675 until its pipe
 * drains. What RACK knew carries over: holes below the highest lost
 * record are lost, nothing counts as retransmitted. */
static void rack_fallback(struct arn_tcp_conn *c)
{
	struct arn_tcp_worker *wk = c->wk;
	uint32_t edge = c->snd_una;
	for (uint32_t i = c->txr_head; i != TXR_NIL; i = R(wk, i)->next)
		if ((R(wk, i)->flags & (TXR_LOST | TXR_SACKED)) == TXR_LOST)
			edge = R(wk, i)->end;
	tcp_txr_free_all(c);
	c->flags |= TF_RACK_OFF;
	c->flags &= ~TF_TLP;
	c->high_rxt = c->snd_una;
	c->lost_edge = edge;
	if (c->recovery != TCP_REC_NONE)
		tcp_sb_update_lost_edge(c);
	TCP_INC(wk, RACK_FALLBACK);
}

/* ---- delivery rate estimation (draft-cheng-iccrg-delivery-rate-estimation) ---- */

/* Record @p r is (re)sent now: the draft's OnPacketSent. @p idle: nothing
 * was in flight before it. Only for a congestion control that takes
 * samples (tcp_rate_on): for the others nothing reads the record's
 * snapshot or the connection's delivery clock (its congestion control
 * never changes after the handshake). */
static void rate_snap(struct arn_tcp_conn *c, struct tcp_txrec *r, bool idle)
{
	if (!tcp_rate_on(c))
		return;
	uint32_t now = (uint32_t)c->wk->now_us;
	if (idle) {
		/* nothing in flight: intervals start now, not at the last ACK */
		c->first_sent_us = now;
		c->delivered_us = now;
	}
	r->delivered = (uint32_t)c->delivered;
	r->delivered_us = c->delivered_us;
	r->first_sent_us = c->first_sent_us;
	if (c->app_limited)
		r->flags |= TXR_APP_LIMITED;
	else
		r->flags &= ~TXR_APP_LIMITED;
}

/* @p len bytes of record @p r were delivered (ACKed or SACKed) by the ACK
 * being processed: the draft's UpdateRateSample. As rate_snap, only when
 * the congestion control takes the sample (one per ACK otherwise made
 * and never read). */
static void rate_delivered(struct arn_tcp_conn *c, const struct tcp_txrec *r, uint32_t len)
{
	if (!tcp_rate_on(c))
		return;
	struct tcp_rate_sample *rs = &c->rs;
	c->delivered += len;
	c->delivered_us = (uint32_t)c->wk->now_us;
	rs->acked_sacked += len;
	if (!rs->has_prior || (int32_t)(r->delivered - rs->prior_delivered) > 0) {
		rs->has_prior = true;
		rs->prior_delivered = r->delivered;
		rs->prior_us = r->delivered_us;
		rs->is_app_limited = r->flags & TXR_APP_LIMITED;
		rs->send_elapsed_us = r->xmit_us - r->first_sent_us;
		c->first_sent_us = r->xmit_us;
	}
}

void tcp_rate_sample_end(struct arn_tcp_conn *c, uint32_t prior_in_flight)
{
	struct tcp_rate_sample *rs = &c->rs;
	if (c->app_limited && c->delivered > c->app_limited)
		c->app_limited = 0;
	rs->prior_in_flight = prior_in_flight;
	rs->interval_us = -1;
	if (!rs->has_prior)
		return;
	rs->delivered = (uint32_t)c->delivered - rs->prior_delivered;
	uint32_t ack_elapsed = c->delivered_us - rs->prior_us;
	uint32_t iv = RTE_MAX(rs->send_elapsed_us, ack_elapsed);
	/* shorter than the minimum RTT: ACK compression or a stretch ACK,
	 * it would overestimate the rate (the draft's rule) */
	if (iv < c->min_rtt_us || iv == 0)
		return;
	rs->interval_us = iv;
}

void tcp_rate_check_app_limited(struct arn_tcp_conn *c)
{
	if (c->snd_max != c->snd_una + c->sndq.bytes)
		return; /* unsent data waits: limited by cwnd or the window */
	uint32_t pipe = tcp_pipe(c);
	if (pipe >= c->cwnd || c->lost_bytes > c->retrans_bytes)
		return;
	uint64_t v = c->delivered + pipe;
	c->app_limited = v ? v : 1;
}

void tcp_txr_sent_full(struct arn_tcp_conn *c, uint32_t seq, uint32_t len)
{
	struct arn_tcp_worker *wk = c->wk;
	if (!tcp_rack_on(c) || len == 0)
		return;
	if (c->txr_tail != TXR_NIL && R(wk, c->txr_tail)->end != seq) {
		rack_fallback(c); /* not contiguous: never expected */
		return;
	}
	bool idle = c->txr_head == TXR_NIL || tcp_rack_pipe(c) == len;
	uint32_t i = tcp_txr_alloc(wk);
	if (i == TXR_NIL) {
		rack_fallback(c);
		return;
	}
	struct tcp_txrec *r = R(wk, i);
	r->start = seq;
	r->end = seq + len;
	r->xmit_us = (uint32_t)wk->now_us;
	r->flags = 0;
	r->next = TXR_NIL;
	rate_snap(c, r, idle);
	if (c->txr_tail != TXR_NIL)
		R(wk, c->txr_tail)->next = i;
	else
		c->txr_head = i;
	c->txr_tail = i;
}

/* Split record @p i at @p at (start < at < end): the second half gets a
 * record of its own. @return false when the pool is empty. */
static bool txr_split(struct arn_tcp_conn *c, uint32_t i, uint32_t at)
{
	struct arn_tcp_worker *wk = c->wk;
	uint32_t j = tcp_txr_alloc(wk);
	if (j == TXR_NIL)
		return false;
	struct tcp_txrec *a = R(wk, i), *b = R(wk, j);
	*b = *a;
	b->start = at;
	a->end = at;
	a->next = j;
	if (c->txr_tail == i)
		c->txr_tail = j;
	return true;
}

uint32_t tcp_rack_next_lost(struct arn_tcp_conn *c, uint32_t room, uint32_t *start, uint32_t *end)
{
	struct arn_tcp_worker *wk = c->wk;
	if (c->lost_bytes <= c->retrans_bytes)
		return TXR_NIL;
	for (uint32_t i = c->txr_head; i != TXR_NIL; i = R(wk, i)->next) {
		struct tcp_txrec *r = R(wk, i);
		if ((r->flags & (TXR_LOST | TXR_RETRANS | TXR_SACKED)) != TXR_LOST)
			continue;
		if (r->end - r->start > room && !txr_split(c, i, r->start + room)) {
			rack_fallback(c);
			return TXR_NIL;
		}
		r = R(wk, i);
		*start = r->start;
		*end = r->end;
		return i;
	}
	return TXR_NIL;
}

void tcp_txr_rexmit(struct arn_tcp_conn *c, uint32_t i)
{
	struct tcp_txrec *r = R(c->wk, i);
	bool idle = tcp_rack_pipe(c) == 0;
	uint32_t now = (uint32_t)c->wk->now_us;
	/* The reordering window's sample (reo_late_dsack): the first
	 * retransmission of a segment RACK found lost, with the original's
	 * send time, which the record forgets now. One at a time; one whose
	 * DSACK never came (a real loss) gives way after twice the cap, when
	 * a DSACK for it could no longer be told from a late RTO. Without
	 * the operator's opt-in (the worker's reo_late_max_us, dataplane.tcp.
	 * reordering_window_max_ms) the sample serves RFC 8985's window, at
	 * most SRTT, and gives way after twice SRTT. With it, not for a
	 * congestion control that does not take loss for congestion (BBR):
	 * a spurious retransmission costs it one segment and no cut, while
	 * the wait beyond SRTT for each real loss stalled its transfers
	 * (issue 16's 1% and 5% `s2c` rows with 10% reordering: 2.2-2.4 s,
	 * 1.0x Linux BBR, became 10.5-14.3 s). */
	uint32_t max = c->wk->reo_late_max_us ? c->wk->reo_late_max_us : c->srtt_us8 >> 3;
	if (c->recovery == TCP_REC_FAST && !(r->flags & TXR_EVER_RETRANS) &&
	    (!tcp_rate_on(c) || !c->wk->reo_late_max_us) &&
	    (c->reo_rxt_us == 0 || now - c->reo_rxt_us > 2 * max)) {
		c->reo_rxt_seq = r->start;
		c->reo_rxt_us = r->xmit_us ? r->xmit_us : 1;
	}
	r->flags |= TXR_RETRANS | TXR_EVER_RETRANS;
	r->xmit_us = now;
	c->retrans_bytes += r->end - r->start;
	rate_snap(c, r, idle);
}

uint32_t tcp_pipe_full(const struct arn_tcp_conn *c)
{
	return tcp_rack_on(c) ? tcp_rack_pipe(c) : tcp_sb_pipe(c);
}

uint32_t tcp_rack_pipe(const struct arn_tcp_conn *c)
{
	int64_t p = (int64_t)(uint32_t)(c->snd_max - c->snd_una) - c->sacked_bytes - c->lost_bytes +
		    c->retrans_bytes;
	return p > 0 ? (uint32_t)p : 0;
}

/* ---- RACK state (RFC 8985 6.2) --------------------------------------------------- */

static inline bool sent_after(uint32_t t1, uint32_t seq1, uint32_t t2, uint32_t seq2)
{
	return (int32_t)(t1 - t2) > 0 || (t1 == t2 && seq_gt(seq1, seq2));
}

static uint32_t srtt_us(const struct arn_tcp_conn *c)
{
	return c->srtt_us8 >> 3;
}

/* ---- the reordering window beyond SRTT (docs/tcp.md "Ninth pass") ---- */

/* RFC 8985 6.2's window: min_RTT / 4 per DSACKed round trip, capped at
 * SRTT, and at twice the middle of RACK's RTT samples (tcp_rtt_med_update)
 * where that is less. SRTT is the mean of other samples, which on a fast
 * path that holds some segments long are mostly the held ones, and there
 * the window grew to whatever SRTT became: each real loss then waited
 * that long for its retransmission (docs/tcp.md, "Fourteenth pass": a
 * window at 5 ms on the loss matrix's 0.1 ms path made 1% loss with 10%
 * reordering 9.8 s where 2.0 s is usual). Linux's eight-bit count of
 * steps bounds it there (255 steps of a min_RTT / 4 of a few
 * microseconds); a step count cannot, as a 10 ms path whose ACKs are
 * reordered too has a min_RTT as small and needs a thousand steps
 * (reo_late_dsack). On that path the samples' middle is the 10 ms, above
 * SRTT, and SRTT stays the cap. */
static uint32_t reo_wnd_rfc(const struct arn_tcp_conn *c)
{
	uint64_t w = (uint64_t)c->reo_wnd_mult * c->min_rtt_us / 4;
	uint64_t cap = srtt_us(c);
	if (c->rtt_med_us && 2ull * c->rtt_med_us < cap)
		cap = 2ull * c->rtt_med_us;
	return (uint32_t)(w < cap ? w : cap);
}

/* Segment @p r, never retransmitted, was delivered after one sent later
 * (reordering), with the window grown by DSACKs. When it came later than
 * half that window (its lateness: the time since it went out less
 * min_RTT), the window still earns its size: the path reorders as much
 * as the DSACKs measured, and the window lasts TCP_REO_PERSIST more real
 * recoveries. Without this, the window (which stops the very DSACKs that
 * grew it) is reset every 16 real losses on a path that never stopped
 * reordering, and each reset costs a run of spurious retransmissions
 * until DSACKs grow it again: with netem's reordering (10% of the
 * packets sent at once, overtaking the rest, held 5 ms each way), two
 * thirds of the D-SACKed retransmissions were in those runs (docs/tcp.md,
 * "Eleventh pass"). RFC 8985 6.2 and Linux reset it all the same. A
 * path whose reordering shrank below half the window stops refreshing
 * it, and 16 real recoveries bring back min_RTT / 4, from which DSACKs
 * measure the new lateness. The window beyond SRTT (reo_late_dsack) is
 * refreshed only by a lateness beyond the RFC's window. */
static void reo_late_seen(struct arn_tcp_conn *c, const struct tcp_txrec *r)
{
	int32_t late = (int32_t)((uint32_t)c->wk->now_us - r->xmit_us - c->min_rtt_us);
	uint32_t rfc = reo_wnd_rfc(c);
	if (late <= 0)
		return;
	if (c->reo_late_us ? late > (int32_t)(c->reo_late_us / 2) && (uint32_t)late > rfc
			   : (uint32_t)late > rfc / 2 && (uint32_t)late > c->min_rtt_us / 4)
		c->reo_wnd_persist = TCP_REO_PERSIST;
}

/* Segment @p r was delivered by ACK @p s: cumulatively, or (@p sacked)
 * selectively. Inline: the cumulative case, once per ACK of new data,
 * costs no call and folds @p sacked away. */
static inline __attribute__((always_inline)) void rack_delivered(struct arn_tcp_conn *c,
								 const struct tcp_txrec *r,
								 const struct tcp_seg *s,
								 bool sacked)
{
	struct arn_tcp_worker *wk = c->wk;
	/* RACK_detect_reordering */
	if (seq_gt(r->end, c->rack_fack))
		c->rack_fack = r->end;
	else if (seq_lt(r->end, c->rack_fack) && !(r->flags & TXR_EVER_RETRANS)) {
		c->rack_reord = true;
		if (c->reo_wnd_mult > 1 || c->reo_late_us)
			reo_late_seen(c, r);
	}
	/* RACK_update: an RTT sample unless it may belong to the original */
	uint32_t rtt = (uint32_t)wk->now_us - r->xmit_us;
	if (rtt == 0)
		rtt = 1;
	if (r->flags & TXR_EVER_RETRANS) {
		/* RFC 8985 6.2 step 2: an echoed timestamp older than the
		 * retransmission says the original was delivered. Only on a
		 * cumulative ACK: a SACK's echoes TS.Recent, the timestamp of
		 * the last segment in order (RFC 7323 4.3), always older than a
		 * retransmission above a hole, and RACK would never learn from
		 * one that a retransmission sent before it was lost (issue 16:
		 * RTOs). A SACKed retransmission counts once its RTT is at least
		 * min_RTT, as in Linux's tcp_rack_advance. */
		if (!sacked && (c->flags & TF_TS_OK) && s->has_ts) {
			uint32_t xmit_ms = (uint32_t)((wk->now_us - rtt) / 1000);
			if (seq_lt(s->tsecr - c->ts_offset, xmit_ms))
				return;
		}
		if (rtt < c->min_rtt_us)
			return;
	} else {
		tcp_min_rtt_update(c, rtt);
		c->rs.rtt_us = rtt;
	}
	/* rack_rtt_us 0: nothing delivered since the flight began, so
	 * RACK.xmit_ts is unset. It must be set here, not compared: send
	 * times are 32-bit microseconds, and a 0 would rank after every time
	 * in the upper half of the clock's range. */
	bool unset = c->rack_rtt_us == 0;
	c->rack_rtt_us = rtt;
	if (unset || sent_after(r->xmit_us, r->end, c->rack_xmit_us, c->rack_end)) {
		c->rack_xmit_us = r->xmit_us;
		c->rack_end = r->end;
	}
}

/* RFC 8985 6.2's window, or the lateness DSACKs measured beyond it
 * (reo_late_dsack). */
static uint32_t reo_wnd(const struct arn_tcp_conn *c)
{
	if (!c->rack_reord) {
		if (c->recovery != TCP_REC_NONE)
			return 0;
		if (c->sacked_bytes >= TCP_DUPTHRESH * (uint32_t)c->mss)
			return 0;
	}
	uint32_t w = reo_wnd_rfc(c);
	return c->reo_late_us > w ? c->reo_late_us : w;
}

static void mark_lost(struct arn_tcp_conn *c, struct tcp_txrec *r)
{
	uint32_t len = r->end - r->start;
	if (r->flags & TXR_RETRANS) {
		r->flags &= ~TXR_RETRANS;
		c->retrans_bytes -= len;
	}
	if (!(r->flags & TXR_LOST)) {
		r->flags |= TXR_LOST;
		c->lost_bytes += len;
		c->rs.losses += len;
	}
}

void tcp_rack_detect(struct arn_tcp_conn *c)
{
	struct arn_tcp_worker *wk = c->wk;
	if (!tcp_rack_on(c) || c->rack_rtt_us == 0)
		return;
	uint32_t reo = reo_wnd(c);
	uint32_t now = (uint32_t)wk->now_us;
	int32_t timeout = 0;
	unsigned newly = 0;
	for (uint32_t i = c->txr_head; i != TXR_NIL; i = R(wk, i)->next) {
		struct tcp_txrec *r = R(wk, i);
		if (r->flags & TXR_SACKED)
			continue;
		if ((r->flags & (TXR_LOST | TXR_RETRANS)) == TXR_LOST)
			continue; /* already waiting for its retransmission */
		if (!sent_after(c->rack_xmit_us, c->rack_end, r->xmit_us, r->end)) {
			/* Without retransmissions in flight, sequence order is
			 * sending order: nothing further on was sent earlier. */
			if (c->retrans_bytes == 0 && !(r->flags & TXR_EVER_RETRANS))
				break;
			continue;
		}
		int32_t remaining = (int32_t)(r->xmit_us + c->rack_rtt_us + reo - now);
		if (remaining <= 0) {
			mark_lost(c, r);
			newly++;
		} else if (remaining > timeout) {
			timeout = remaining;
		}
	}
	if (newly) {
		wk->cnt[ARN_TCP_C_RACK_LOST] += newly;
		if (c->recovery == TCP_REC_NONE)
			tcp_enter_recovery(c);
		tcp_want_output(c);
	}
	if (timeout > 0) {
		/* to the microsecond (the worker's poll), not on the 1 ms
		 * wheel: rounded up to whole milliseconds, the time left on a
		 * 50 us path became 1-2 ms of waiting for every segment the
		 * timer finds lost */
		c->t_rack_us = wk->now_us + (uint32_t)timeout;
		tcp_rack_wait(c);
		/* A loss probe armed when the flight went out (2 x SRTT + 2
		 * ms) waits for this timer: with the window beyond SRTT
		 * (reo_late_dsack) it would otherwise come first, and resend
		 * the tail (or send new data beyond cwnd) while RACK still
		 * gives a held segment its time. Linux has one timer for
		 * both, and the reordering timer replaces the probe. With
		 * RFC 8985's window (at most SRTT) the probe comes first
		 * rarely, and is left as it was before the window beyond
		 * SRTT (reo_late_us 0: the operator did not opt in, or no
		 * evidence). Not a second probe (tlp_again_ms): one is out. */
		uint64_t after = c->t_rack_us / 1000 + 1;
		if (c->reo_late_us && (c->flags & TF_TLP) && c->tlp_again_ms == 0 &&
		    c->t_rexmt < after) {
			c->t_rexmt = after;
			tcp_timer_update(c);
		}
	} else {
		c->t_rack_us = 0;
	}
}

void tcp_rack_timeout(struct arn_tcp_conn *c)
{
	c->t_rack_us = 0;
	tcp_rack_detect(c);
}

void tcp_rack_mark_all_lost(struct arn_tcp_conn *c)
{
	struct arn_tcp_worker *wk = c->wk;
	bool forget_sacks = c->n_sb == 0; /* the scoreboard was cleared (reneging) */
	for (uint32_t i = c->txr_head; i != TXR_NIL; i = R(wk, i)->next) {
		struct tcp_txrec *r = R(wk, i);
		if ((r->flags & TXR_SACKED) && forget_sacks)
			r->flags &= ~TXR_SACKED;
		if (!(r->flags & TXR_SACKED))
			mark_lost(c, r);
	}
	c->t_rack_us = 0;
	c->flags &= ~(TF_TLP_OUT | TF_TLP_RETRANS | TF_TLP_DSACKED);
	c->reo_rxt_us = 0; /* everything goes again: a DSACK is no measure */
}

/* ---- undo (RFC 3708 style, with DSACK) ------------------------------------------- */

void tcp_undo_begin(struct arn_tcp_conn *c)
{
	c->prior_cwnd = c->cwnd;
	c->prior_ssthresh = c->ssthresh;
	c->prior_cubic = c->cubic;
	c->undo_marker = c->snd_una;
	c->undo_end = c->snd_max;
	c->undo_retrans = 0;
	c->flags |= TF_UNDO;
}

static void reo_wnd_recovery_end(struct arn_tcp_conn *c, bool undone);

static void undo(struct arn_tcp_conn *c)
{
	c->flags &= ~TF_UNDO;
	if (c->prior_cwnd > c->cwnd)
		c->cwnd = c->prior_cwnd;
	if (c->prior_ssthresh > c->ssthresh)
		c->ssthresh = c->prior_ssthresh;
	c->cubic = c->prior_cubic;
	if (c->recovery != TCP_REC_NONE) {
		c->recovery = TCP_REC_NONE;
		c->reno_sacked = 0;
	}
	reo_wnd_recovery_end(c, true);
	TCP_INC(c->wk, UNDO);
}

void tcp_enter_recovery(struct arn_tcp_conn *c)
{
	struct arn_tcp_worker *wk = c->wk;
	tcp_undo_begin(c);
	c->ssthresh = c->cc->ssthresh(c, wk->now_ms);
	tcp_ecn_queue_cwr(c);
	c->recovery = TCP_REC_FAST;
	c->recover = c->snd_max;
	c->prr_delivered = 0;
	c->prr_out = 0;
	c->high_rxt = c->snd_una;
	c->lost_edge = c->snd_una + c->mss;
	if (c->flags & TF_SACK_OK) {
		tcp_sb_update_lost_edge(c);
		TCP_INC(wk, SACK_RECOVERIES);
	}
	/* cwnd is not cut to ssthresh here: with the flight above ssthresh
	 * nothing could be sent until ACKs drained it, and when those ACKs
	 * are lost too (or recovery began on the reordering timer, with no
	 * ACK at all) the lost segment waited for the RTO. PRR brings cwnd
	 * down ACK by ACK (tcp_prr_ack); the first retransmission goes now,
	 * as Linux's "force a fast retransmit upon entering fast recovery".
	 * A congestion control with its own cwnd (BBR: on_sample sets it on
	 * every ACK) keeps it, as Linux leaves a cong_control's cwnd alone:
	 * when RACK's timer, not an ACK, began the recovery, no sample
	 * follows to undo the cut, and with the rest of a small flight SACKed
	 * pipe + 1 sent the first lost segment alone (issue 16: the next
	 * waited for the RTO when that retransmission was lost). */
	/* RecoverFS: the pipe, as RFC 9937 (which obsoletes RFC 6937's
	 * flight size) has it. SACKed data above a hole is not in the
	 * network; counted in RecoverFS, it shrank PRR's share of what is
	 * delivered (ssthresh / RecoverFS) to a few percent where the flight
	 * held much of it (docs/tcp.md, "The opt-in window's cost, traced").
	 * On the loss matrix's rows where Arion sends, the change measured
	 * within the runs' noise (docs/tcp.md, "RecoverFS: the pipe"). */
	uint32_t pipe = tcp_pipe(c);
	c->recover_fs = pipe;
	uint32_t floor = pipe + c->mss;
	if (c->cc->on_sample == NULL || c->cwnd < floor)
		c->cwnd = floor;
	TCP_INC(wk, FAST_RETRANSMITS);
}

void tcp_prr_ack(struct arn_tcp_conn *c, uint32_t delivered)
{
	if (c->recovery != TCP_REC_FAST)
		return;
	if (delivered == 0)
		return; /* nothing left the network: nothing more may enter */
	c->prr_delivered += delivered;
	uint32_t pipe = tcp_pipe(c);
	int64_t sndcnt;
	if (pipe > c->ssthresh) {
		/* RFC 9937: send ssthresh / RecoverFS of what is delivered,
		 * so that the flight comes down to ssthresh evenly */
		uint64_t fs = c->recover_fs ? c->recover_fs : 1;
		sndcnt = (int64_t)(((uint64_t)c->prr_delivered * c->ssthresh + fs - 1) / fs) -
			 c->prr_out;
	} else {
		/* below ssthresh: back up to it no faster than slow start,
		 * what is delivered plus a segment (PRR-SSRB, the bound RFC
		 * 6937 recommends; Linux adds the segment only on an ACK that
		 * moved snd_una and found no new loss, RFC 6937bis). With the
		 * few segments in flight of a lossy path, that segment is new
		 * data after the retransmission: if the retransmission is lost
		 * too, RACK sees it when the new segment is SACKed, where
		 * otherwise only the RTO could (issue 16: RTOs halved). */
		int64_t limit =
		    RTE_MAX((int64_t)c->prr_delivered - c->prr_out, (int64_t)delivered) + c->mss;
		sndcnt = RTE_MIN((int64_t)c->ssthresh - pipe, limit);
	}
	if (sndcnt < 0)
		sndcnt = 0;
	if (c->prr_out == 0 && sndcnt < c->mss)
		sndcnt = c->mss; /* the first retransmission is never held back */
	c->cwnd = pipe + (uint32_t)sndcnt;
}

void tcp_exit_recovery(struct arn_tcp_conn *c)
{
	if (c->recovery == TCP_REC_FAST) {
		if ((c->flags & TF_UNDO) && c->undo_retrans <= 0) {
			undo(c); /* nothing was retransmitted after all */
		} else {
			c->cc->after_recovery(c, c->wk->now_ms);
			reo_wnd_recovery_end(c, false);
		}
	}
	c->recovery = TCP_REC_NONE;
	c->reno_sacked = 0;
	c->undo_end = c->snd_max;
}

/* RFC 8985 6.2: a grown window lasts TCP_REO_PERSIST recoveries that were
 * real. As Linux (tcp_try_undo_recovery, tcp_try_undo_dsack): only a
 * recovery that ends without being undone counts down, and one undone by
 * DSACKs (a spurious one: the window was still too small) counts back up.
 * Counting undone recoveries down too, as the RFC's pseudocode reads,
 * shrank the window again on a path that reorders all the time, each
 * spurious recovery bringing the reset nearer (issue 16: 35-89% of the
 * retransmissions D-SACKed with 10% reordering). */
static void reo_wnd_recovery_end(struct arn_tcp_conn *c, bool undone)
{
	if (undone) {
		if (c->reo_wnd_persist < TCP_REO_PERSIST)
			c->reo_wnd_persist++;
		return;
	}
	if (c->reo_wnd_persist && --c->reo_wnd_persist == 0) {
		c->reo_wnd_mult = 1;
		c->reo_late_us = 0; /* the path stopped reordering that much */
	}
}

/* A DSACK for [st, en), not for a loss probe, and the sampled
 * retransmission (tcp_txr_rexmit) in it: both copies arrived, so the
 * original was late, not lost. By how much: the time since it went out,
 * less min_RTT. The DSACK comes when the second copy arrives: on a path
 * that holds a segment for longer than RACK waited, the retransmission
 * arrives first and the late original draws the DSACK, so the time is
 * the original's own lateness; when the original came first, an upper
 * bound on it (the retransmission's time). RFC 8985 6.2's window grows
 * by min_RTT / 4 per round trip with DSACKs, capped at SRTT: on a path
 * of 100 us that holds segments 2-12 ms (issue 16's loss matrix) it can
 * never cover the lateness, and every held segment is retransmitted
 * (33-90% of the retransmissions spurious). When the lateness is beyond
 * that window the window becomes the largest lateness seen, up to
 * the worker's reo_late_max_us, for TCP_REO_PERSIST recoveries
 * (reo_late_seen).
 *
 * That cap is dataplane.tcp.reordering_window_max_ms, and 0 (the
 * default) keeps the window within SRTT, where the lateness only sets how
 * many steps it takes at once. Beyond SRTT each real loss RACK finds
 * waits up to the window for its retransmission, and a sender whose send
 * buffer fills behind the hole waits with it. In issue 16's reordering
 * rows (10% of the packets held 2-12 ms) a 50 ms cap cut the D-SACKed
 * share of the retransmissions from 33-90% to 1-5% but made the
 * transfers 2.5-6x slower (1% loss `s2c`: 2.4-3.75 s -> 11.3-11.7 s; 5%:
 * 4.3-4.9 s -> 25-27 s): spurious retransmissions cost ~10% more bytes,
 * the wait costs the time. At most the RTO's floor (1-200 ms), as the
 * RTO must come only after RACK had its chance. */
static bool reo_late_dsack(struct arn_tcp_conn *c, uint32_t st, uint32_t en)
{
	if (c->reo_rxt_us == 0 || seq_gt(st, c->reo_rxt_seq) || seq_leq(en, c->reo_rxt_seq))
		return false;
	uint32_t since = (uint32_t)c->wk->now_us - c->reo_rxt_us;
	c->reo_rxt_us = 0;
	if (since <= c->min_rtt_us)
		return false;
	uint32_t late = since - c->min_rtt_us;
	if (c->wk->reo_late_max_us == 0) {
		/* RFC 8985's window, in as many min_RTT / 4 steps as the
		 * lateness needs, not one a round trip: a step is a quarter
		 * of the shortest RTT, which reordering itself shortens. With
		 * netem's reordering on a 10 ms path (docs/tcp.md, "Eleventh
		 * pass") min_RTT was the overtaking packets' 5 ms, a step
		 * 1.25 ms, and the window took six or seven DSACKed round
		 * trips to cover the lateness, each a run of spurious
		 * retransmissions. SRTT still caps it (reo_wnd_rfc), not a
		 * count of steps: with netem's reordering both ways, a packet
		 * and its ACK both sent at once come back in tens of
		 * microseconds, min_RTT becomes that, and a 5 ms lateness is
		 * a thousand steps. Linux counts them in eight bits; 255 steps
		 * of 12 us left every segment held longer than 3 ms to be
		 * retransmitted (docs/tcp.md, "Twelfth pass"). */
		uint32_t unit = c->min_rtt_us / 4 ? c->min_rtt_us / 4 : 1;
		uint32_t m = late / unit + 1;
		if (m > UINT16_MAX)
			m = UINT16_MAX;
		if (m > c->reo_wnd_mult)
			c->reo_wnd_mult = (uint16_t)m;
		c->rack_reord = true;
		c->reo_wnd_persist = TCP_REO_PERSIST;
		return true; /* this round's step */
	}
	if (late > c->wk->reo_late_max_us)
		late = c->wk->reo_late_max_us;
	if (late <= reo_wnd_rfc(c))
		return false; /* the RFC's window can grow to it */
	if (late > c->reo_late_us)
		c->reo_late_us = late;
	c->rack_reord = true;
	c->reo_wnd_persist = TCP_REO_PERSIST;
	return false;
}

/* Is a DSACK for [st, en) (st < en) one to act on? As Linux's
 * tcp_dsack_seen and tcp_is_sackblock_valid: no wider than the largest
 * window the peer ever offered (no receiver can have had more of our data
 * twice), not past what we sent, and not reporting, with the DSACKs
 * before it, more duplicated segments than we ever retransmitted (a
 * network's own duplicates, or a peer's inventions). The range is the
 * peer's to write: unchecked, one block of 2^31 bytes below the ACK
 * counted as 1.5 million spurious retransmissions, so a single forged
 * DSACK undid any response to a loss (cwnd and ssthresh restored, the
 * recovery ended), and a DSACK for data never retransmitted grew the
 * reordering window once a round trip. A peer may still report our real
 * retransmissions as duplicates: no sender can tell. Unlike Linux, a
 * DSACK ignored is not counted: Linux adds every DSACK's segments to
 * dsack_dups before the comparison, so on a path that duplicates packets
 * the network's own duplicates soon pass total_retrans and every later
 * DSACK, those of spurious retransmissions included, is ignored (Linux
 * still undoes by timestamps, tcp_packet_delayed; Arion undoes by DSACKs
 * only): e2e tcp_transfer_impair took 130 s instead of 15-30, 5,651 of
 * its 5,662 DSACKs ignored and no reordering window grown. */
static bool dsack_valid(struct arn_tcp_conn *c, uint32_t st, uint32_t en)
{
	uint32_t len = en - st;
	if (seq_gt(en, c->snd_max) || len > RTE_MAX(c->max_sndwnd, (uint32_t)c->mss))
		return false;
	uint32_t mss = c->mss ? c->mss : 1;
	uint32_t segs = (len + mss - 1) / mss;
	if (c->dsack_segs + (uint64_t)segs > c->retrans_segs)
		return false;
	c->dsack_segs += segs;
	return true;
}

/* A DSACK for [st, en) arrived on an ACK of @p ack (RFC 2883). @p old_una
 * is snd_una before this ACK. */
static void dsack_in(struct arn_tcp_conn *c, uint32_t st, uint32_t en, uint32_t ack,
		     uint32_t old_una)
{
	struct arn_tcp_worker *wk = c->wk;
	/* A receiver reports a duplicate once, but a Linux peer that sends
	 * data puts its ACK's options on a GSO (or TSO) burst, and each
	 * segment cut from it carries the same DSACK: issue 16's echo counted
	 * one duplicate 45 times (64 KB / 1436 bytes) and, in a recovery,
	 * took each copy for another spurious retransmission (undo_retrans).
	 * The copies carry the same ACK too. A second report of the same
	 * range on the same ACK (sent three times, all arriving) is missed. */
	if (c->dsack_in.start == st && c->dsack_in.end == en && c->dsack_in_ack == ack)
		return;
	c->dsack_in.start = st;
	c->dsack_in.end = en;
	c->dsack_in_ack = ack;
	TCP_INC(wk, DSACK_RECEIVED);
	if (!dsack_valid(c, st, en)) {
		TCP_INC(wk, DSACK_IGNORED);
		return;
	}
	/* A DSACK for the loss probe says only that the probe was not
	 * needed: the timer sent it, not RACK, and the reordering window had
	 * no part in it (Linux's FLAG_DSACK_TLP). */
	bool tlp =
	    (c->flags & TF_TLP_OUT) && (c->flags & TF_TLP_RETRANS) && seq_leq(en, c->tlp_high_seq);
	if (tlp)
		c->flags |= TF_TLP_DSACKED;
	/* RFC 8985 6.2 step 4: grow the reordering window once per round trip */
	if (c->rack_dsack_round && seq_geq(c->snd_una, c->dsack_round))
		c->rack_dsack_round = false;
	bool measured = !tlp && reo_late_dsack(c, st, en);
	if (!c->rack_dsack_round && !tlp) {
		c->rack_dsack_round = true;
		c->dsack_round = c->snd_max;
		if (!measured && c->reo_wnd_mult < UINT16_MAX)
			c->reo_wnd_mult++;
		c->reo_wnd_persist = TCP_REO_PERSIST;
	}
	/* A segment SACKed and then reported again: the retransmission and
	 * the original both arrived, the original after segments sent later
	 * (Linux's tcp_sacktag_one counts it as reordering). */
	if (seq_gt(en, old_una) && seq_lt(st, c->rack_fack)) {
		for (uint32_t i = c->txr_head; i != TXR_NIL; i = R(wk, i)->next) {
			const struct tcp_txrec *r = R(wk, i);
			if (seq_geq(r->start, en))
				break;
			if (seq_gt(r->end, st) && (r->flags & (TXR_SACKED | TXR_EVER_RETRANS)) ==
						      (TXR_SACKED | TXR_EVER_RETRANS))
				c->rack_reord = true;
		}
	}
	if (!(c->flags & TF_UNDO) || !seq_gt(en, c->undo_marker))
		return;
	/* Count the duplicated segments that we retransmitted. Below snd_una
	 * the records are gone: count them blindly, as Linux does. */
	uint32_t mss = c->mss ? c->mss : 1;
	int32_t segs = 0;
	if (seq_leq(en, old_una)) {
		segs = (int32_t)((en - st + mss - 1) / mss);
	} else {
		for (uint32_t i = c->txr_head; i != TXR_NIL; i = R(wk, i)->next) {
			struct tcp_txrec *r = R(wk, i);
			if (seq_geq(r->start, en))
				break;
			if (seq_gt(r->end, st) && (r->flags & TXR_EVER_RETRANS))
				segs++;
		}
	}
	c->undo_retrans -= segs;
	if (segs && c->undo_retrans <= 0)
		undo(c);
}

/* ---- the ACK ------------------------------------------------------------------------ */

/* @p r delivered by ACK @p s: cumulatively, or (@p sacked) selectively. */
static void rec_sacked(struct arn_tcp_conn *c, struct tcp_txrec *r, const struct tcp_seg *s,
		       bool sacked)
{
	uint32_t len = r->end - r->start;
	if (r->flags & TXR_LOST)
		c->lost_bytes -= len;
	if (r->flags & TXR_RETRANS)
		c->retrans_bytes -= len;
	r->flags = (r->flags & ~(TXR_LOST | TXR_RETRANS)) | TXR_SACKED;
	rate_delivered(c, r, len);
	rack_delivered(c, r, s, sacked);
}

/* Mark the records inside SACK block [st, en). A record straddling an
 * edge is split only at a whole MSS from its start, and its part the
 * block covers is marked only as far as whole MSSes go (Linux's
 * tcp_match_skb_to_sack): a record of one segment is marked when the
 * block covers all of it, never cut. Splitting at every edge let a peer
 * carve a flight into a record per byte with 1-byte blocks (20 segments
 * in flight took the worker's whole pool, 8,192 records, and every other
 * connection fell back from RACK; each ACK walked them all). What the
 * rounding leaves unmarked is a hole RACK may resend, as Linux does. */
static void sack_block(struct arn_tcp_conn *c, uint32_t st, uint32_t en, const struct tcp_seg *s)
{
	struct arn_tcp_worker *wk = c->wk;
	uint32_t mss = c->mss ? c->mss : 1;
	for (uint32_t i = c->txr_head; i != TXR_NIL; i = R(wk, i)->next) {
		struct tcp_txrec *r = R(wk, i);
		if (seq_leq(r->end, st))
			continue;
		if (seq_geq(r->start, en))
			break;
		if (r->flags & TXR_SACKED)
			continue;
		if (seq_lt(r->start, st)) {
			/* marked from the first MSS boundary at or after st */
			uint32_t at = r->start + (st - r->start + mss - 1) / mss * mss;
			if (!seq_lt(at, r->end) || !seq_lt(at, en))
				continue;
			if (!txr_split(c, i, at))
				return;
			continue; /* the next record starts at at */
		}
		if (seq_gt(r->end, en)) {
			/* marked up to the last MSS boundary at or before en */
			uint32_t at = r->start + (en - r->start) / mss * mss;
			if (at == r->start)
				break; /* less than an MSS of it: nothing */
			if (!txr_split(c, i, at))
				return;
		}
		rec_sacked(c, R(wk, i), s, true);
	}
}

/* Is block @p b already wholly in the scoreboard (sent again on every ACK
 * of a recovery: nothing new to mark)? */
static bool sb_has(const struct arn_tcp_conn *c, const struct tcp_sack_block *b)
{
	for (unsigned i = 0; i < c->n_sb; i++)
		if (seq_leq(c->sb[i].start, b->start) && seq_leq(b->end, c->sb[i].end))
			return true;
	return false;
}

/* After an ACK: the end of a tail loss probe's episode (RFC 8985 7.4).
 * Called only with a probe out (TF_TLP_OUT), tested where it is called:
 * nearly no ACK has one. */
static void tlp_ack(struct arn_tcp_conn *c, const struct tcp_seg *s)
{
	if (seq_lt(s->ack, c->tlp_high_seq))
		return;
	/* RFC 8985 7.4: the probe repaired a loss unless a DSACK showed the
	 * original arrived too; then a loss happened and cwnd must come down. */
	if ((c->flags & (TF_TLP_RETRANS | TF_TLP_DSACKED)) == TF_TLP_RETRANS &&
	    seq_gt(s->ack, c->tlp_high_seq) && c->recovery == TCP_REC_NONE) {
		TCP_INC(c->wk, TLP_REPAIRS);
		c->ssthresh = c->cc->ssthresh(c, c->wk->now_ms);
		c->cwnd = c->ssthresh;
		tcp_ecn_queue_cwr(c);
	}
	if (seq_gt(s->ack, c->tlp_high_seq) || (c->flags & TF_TLP_DSACKED) ||
	    !(c->flags & TF_TLP_RETRANS))
		c->flags &= ~(TF_TLP_OUT | TF_TLP_RETRANS | TF_TLP_DSACKED);
}

static __attribute__((noinline)) void rack_on_ack(struct arn_tcp_conn *c, const struct tcp_seg *s,
						  uint32_t old_una, bool sack_new)
{
	struct arn_tcp_worker *wk = c->wk;
	unsigned first = 0;
	if (c->tlp_again_ms) {
		/* an answer after the probe: no second one (tcp_tlp_again_ms);
		 * the RTO from now, as after any probe, unless the ACK's own
		 * processing arms the timer again */
		c->tlp_again_ms = 0;
		if (c->flags & TF_TLP) {
			c->flags &= ~TF_TLP;
			tcp_rexmt_arm(c);
		}
	}
	/* RFC 2883: the first block is a DSACK when it lies below the ACK or
	 * inside the second block. */
	if (s->n_sack && (c->flags & TF_SACK_OK)) {
		const struct tcp_sack_block *b = &s->sack[0];
		if (seq_lt(b->start, b->end) &&
		    (seq_leq(b->end, s->ack) ||
		     (s->n_sack > 1 && seq_geq(b->start, s->sack[1].start) &&
		      seq_leq(b->end, s->sack[1].end)))) {
			dsack_in(c, b->start, b->end, s->ack, old_una);
			first = 1;
		}
	}
	if ((c->flags & TF_UNDO) && c->recovery == TCP_REC_NONE && seq_gt(c->snd_una, c->undo_end))
		c->flags &= ~TF_UNDO;
	if (!tcp_rack_on(c)) {
		if (c->flags & TF_TLP_OUT)
			tlp_ack(c, s);
		return;
	}
	c->rs.rtt_us = 0; /* the last sample rack_delivered takes from this ACK */

	/* Cumulatively acknowledged records. A run of clean ones (sent once,
	 * never SACKed, lost or reordered) changes RACK's state only through
	 * the last of them, the most recently sent: it alone is looked at. */
	struct tcp_txrec last;
	bool have_last = false;
	while (c->txr_head != TXR_NIL) {
		uint32_t i = c->txr_head;
		struct tcp_txrec *r = R(wk, i);
		if (seq_leq(r->end, c->snd_una)) {
			if ((r->flags & ~TXR_APP_LIMITED) == 0 && seq_geq(r->end, c->rack_fack)) {
				rate_delivered(c, r, r->end - r->start);
				last = *r;
				have_last = true;
			} else if (!(r->flags & TXR_SACKED)) {
				rec_sacked(c, r, s, false);
			}
			c->txr_head = r->next;
			if (c->txr_head == TXR_NIL)
				c->txr_tail = TXR_NIL;
			tcp_txr_put(wk, i);
			continue;
		}
		if (seq_lt(r->start, c->snd_una) && !(r->flags & TXR_SACKED)) {
			uint32_t cut = c->snd_una - r->start;
			rate_delivered(c, r, cut);
			if (r->flags & TXR_LOST)
				c->lost_bytes -= cut;
			if (r->flags & TXR_RETRANS)
				c->retrans_bytes -= cut;
			r->start = c->snd_una;
		} else if (seq_lt(r->start, c->snd_una)) {
			r->start = c->snd_una;
		}
		break;
	}
	if (have_last)
		rack_delivered(c, &last, s, false);
	if (sack_new) {
		/* in ascending order, so that RACK_detect_reordering sees
		 * deliveries in sequence order (the receiver lists the most
		 * recent block first) */
		struct tcp_sack_block b[4];
		unsigned n = 0;
		for (unsigned k = first; k < s->n_sack; k++) {
			struct tcp_sack_block x = s->sack[k];
			if (!seq_lt(x.start, x.end) || seq_leq(x.end, c->snd_una) ||
			    seq_gt(x.end, c->snd_max))
				continue;
			unsigned j = n++;
			while (j > 0 && seq_gt(b[j - 1].start, x.start)) {
				b[j] = b[j - 1];
				j--;
			}
			b[j] = x;
		}
		for (unsigned k = 0; k < n; k++)
			sack_block(c, seq_max(b[k].start, c->snd_una), b[k].end, s);
	}
	if (c->rs.rtt_us)
		tcp_rtt_med_update(c, c->rs.rtt_us);
	if (c->flags & TF_TLP_OUT)
		tlp_ack(c, s);
	if (c->snd_una == c->snd_max && c->txr_head == TXR_NIL) {
		c->lost_bytes = c->retrans_bytes = 0;
		c->t_rack_us = 0;
		/* Everything is delivered: RACK.xmit_ts starts again with the
		 * next flight, so a connection idle for more than half the
		 * 32-bit microsecond range never compares against a stale one. */
		c->rack_rtt_us = 0;
		return;
	}
	tcp_rack_detect(c);
}

/* With tcp_rack_acked_all_ok's ACK (tcp_rack.h) the O(1) update, else
 * the general path. 139 instructions a call became 61 in bench_tcp_unit's
 * pingpong (callgrind); the fast path (tcp_in.c) tests and updates
 * inline, with the RTT estimator's sample from the same records. */
void tcp_rack_on_ack(struct arn_tcp_conn *c, const struct tcp_seg *s, uint32_t old_una,
		     bool sack_new)
{
	if (s->n_sack || !tcp_rack_acked_all_ok(c, c->snd_una, false)) {
		rack_on_ack(c, s, old_una, sack_new);
		return;
	}
	tcp_rack_acked_all(c);
}

bool tcp_rack_sack_is_new(const struct arn_tcp_conn *c, const struct tcp_seg *s)
{
	for (unsigned k = 0; k < s->n_sack; k++)
		if (!sb_has(c, &s->sack[k]))
			return true;
	return false;
}

/* ---- tail loss probe (RFC 8985 7) ------------------------------------------------------ */

bool tcp_rack_rxt_probe_ok(const struct arn_tcp_conn *c)
{
	if (!tcp_rack_on(c) || c->recovery == TCP_REC_LOSS || c->retrans_bytes == 0 ||
	    c->lost_bytes > c->retrans_bytes || c->t_rack_us)
		return false;
	if (seq_gt(c->snd_una + c->sndq.bytes, c->snd_max)) {
		/* New data goes next, and its SACKs will show the loss, when
		 * cwnd and the peer's window have room for a segment. When
		 * they have not, only an ACK for what is out makes room, and
		 * if that ACK is lost nothing else comes back: the probe
		 * (tcp_tlp_send) sends one new segment beyond cwnd (issue 16:
		 * the 1% `both` row's RTO, its ACKs lost behind a full cwnd). */
		int32_t wl = (int32_t)(c->snd_una + c->snd_wnd - c->snd_max);
		return tcp_pipe(c) + c->mss > c->cwnd || wl < (int32_t)c->mss;
	}
	return !(c->flags & TF_FIN_QUEUED) || (c->flags & TF_FIN_SENT);
}

/* RFC 8985 7.2: the probe timeout, in ms from now, or 0 when no probe may
 * be scheduled (a probe outstanding, no RTT yet; recovery or SACKed data
 * outstanding, unless tcp_rack_rxt_probe_ok). Two SRTTs, plus the
 * worst-case delayed ACK when one segment is out, else Linux's two ticks
 * (tcp_schedule_loss_probe): on a path of a millisecond or less, the 10 ms
 * floor of older Linux made a lost tail wait five times longer than the
 * probe needs.
 *
 * RFC 8985 7.2 schedules no probe in recovery or with SACKed data out,
 * leaving those to RACK's reordering timer. But that timer only finds
 * segments sent before one that was delivered: a lost retransmission
 * with nothing sent after it (the stream's last segments, or a send
 * buffer full of SACKed data behind a hole) waited for the RTO, 200 ms
 * on a 50 us path (issue 16: Arion BBR's RTOs at 10% loss, nearly all at
 * a transfer's tail). So a probe also goes then, for the first
 * retransmission not SACKed; like any probe, its DSACK does not grow the
 * reordering window. The same when new data is waiting but cwnd (or the
 * peer's window) holds it back: an ACK for what is out is then the only
 * thing that can come, and when it is lost the probe's new segment draws
 * another. As Linux, a probe may also go once the FIN is out
 * (FIN_WAIT_1, CLOSING, LAST_ACK), where a lost tail is just as likely. */
static uint64_t pto_ms(const struct arn_tcp_conn *c)
{
	if (!tcp_rack_on(c) || c->srtt_us8 == 0 || (c->flags & (TF_PERSIST | TF_TLP_OUT)) ||
	    c->snd_max == c->snd_una)
		return 0;
	switch (c->state) {
	case TCPS_ESTABLISHED:
	case TCPS_CLOSE_WAIT:
	case TCPS_FIN_WAIT_1:
	case TCPS_CLOSING:
	case TCPS_LAST_ACK:
		break;
	default:
		return 0;
	}
	if ((c->recovery != TCP_REC_NONE || c->sacked_bytes) && !tcp_rack_rxt_probe_ok(c))
		return 0;
	uint64_t pto = 2ull * srtt_us(c);
	pto += c->snd_max - c->snd_una <= c->mss ? TCP_TLP_WCDELACK_US : TCP_TLP_SLACK_US;
	return (pto + 999) / 1000;
}

static uint64_t rto_ms(const struct arn_tcp_conn *c)
{
	uint64_t rto = c->rto;
	for (unsigned i = 0; i < c->backoff && rto < TCP_RTO_MAX_MS; i++)
		rto <<= 1;
	return rto < TCP_RTO_MAX_MS ? rto : TCP_RTO_MAX_MS;
}

/* A second probe, once per episode, when nothing at all came back within a
 * probe timeout of the first: a departure from RFC 8985 7.3 and Linux
 * (`tlp_high_seq`: one probe, then the RTO). Traced in issue 16
 * (`tcp_transfer_loss5`, docs/tcp.md "Fifth pass"): the RTOs left after
 * a probe were not losses. The flight, the probe included, had arrived;
 * the client (Linux) held its ACK for new in-order data for the whole
 * 200 ms and answered the RTO's retransmission, a duplicate, within a
 * millisecond with a DSACK. A duplicate draws an ACK at once from any
 * receiver (RFC 9293 3.10.7.4, RFC 5681 4.2; Linux's tcp_send_dupack), so
 * the second probe resends the last segment (RFC 8985 7.3's retransmission
 * probe), and the RTO (cwnd to one segment, the scoreboard marked lost)
 * waits behind it. Half the RTO after the first probe (at least a PTO):
 * one PTO was too soon where SRTT is below the path's RTT (the BBR test's
 * queue of 10 ms behind an SRTT of 1 ms: the second probe resent data
 * whose ACKs were on their way), and the RTO floor (200 ms) is far above
 * any RTT of a path this matters on. Not for a flight of one segment,
 * where the receiver may hold its ACK for WCDelAckT anyway. */
uint64_t tcp_tlp_again_ms(const struct arn_tcp_conn *c)
{
	if (c->srtt_us8 == 0 || c->snd_max - c->snd_una <= c->mss)
		return 0;
	uint64_t pto = (2ull * srtt_us(c) + TCP_TLP_SLACK_US + 999) / 1000;
	uint64_t rto = rto_ms(c);
	if (pto < rto / 2)
		pto = rto / 2;
	return pto < rto ? pto : 0;
}

void tcp_rexmt_arm_pto(struct arn_tcp_conn *c)
{
	/* the RTO as below, without computing either timeout */
	if (tcp_rto_first(c)) {
		tcp_rto_arm_first(c);
		return;
	}
	uint64_t pto = pto_ms(c);
	/* the RTO computed once: tcp_rexmt_arm's, inline (every flight of
	 * one segment, where the probe would wait longer, arms it) */
	uint64_t rto = rto_ms(c);
	if (pto && pto < rto) {
		c->flags |= TF_TLP;
		c->t_rexmt = c->wk->now_ms + pto;
	} else {
		c->flags &= ~TF_TLP;
		c->t_rexmt = c->wk->now_ms + rto;
	}
	tcp_timer_armed(c, c->t_rexmt);
}

void tcp_rexmt_new_data_full(struct arn_tcp_conn *c)
{
	if (c->t_rexmt == 0 || (c->flags & (TF_PERSIST | TF_TLP))) {
		c->flags &= ~TF_PERSIST;
		tcp_rexmt_arm_pto(c); /* which asks pto_ms itself, without TF_PERSIST */
		return;
	}
	uint64_t pto = pto_ms(c);
	uint64_t now = c->wk->now_ms;
	if (pto && now + pto < c->t_rexmt) {
		/* Linux's tcp_schedule_loss_probe: the probe replaces the RTO
		 * whenever it comes first (the flight grew past one segment) */
		c->flags |= TF_TLP;
		c->t_rexmt = now + pto;
		tcp_timer_armed(c, c->t_rexmt);
	}
}

uint32_t tcp_txr_tail_probe(struct arn_tcp_conn *c, uint32_t room, uint32_t *start, uint32_t *end)
{
	struct arn_tcp_worker *wk = c->wk;
	uint32_t i = c->txr_tail;
	if (i == TXR_NIL)
		return TXR_NIL;
	struct tcp_txrec *r = R(wk, i);
	if (r->end - r->start > room) {
		if (!txr_split(c, i, r->end - room))
			return TXR_NIL;
		i = c->txr_tail;
		r = R(wk, i);
	}
	*start = r->start;
	*end = r->end;
	return i;
}

uint32_t tcp_txr_rxt_probe(struct arn_tcp_conn *c, uint32_t room, uint32_t *start, uint32_t *end)
{
	struct arn_tcp_worker *wk = c->wk;
	for (uint32_t i = c->txr_head; i != TXR_NIL; i = R(wk, i)->next) {
		struct tcp_txrec *r = R(wk, i);
		if ((r->flags & (TXR_RETRANS | TXR_SACKED)) != TXR_RETRANS)
			continue;
		if (r->end - r->start > room && !txr_split(c, i, r->start + room))
			return TXR_NIL;
		r = R(wk, i);
		*start = r->start;
		*end = r->end;
		return i;
	}
	return TXR_NIL;
}

void tcp_txr_probed(struct arn_tcp_conn *c, uint32_t i)
{
	struct tcp_txrec *r = R(c->wk, i);
	/* a third copy of the sampled segment: its DSACK could be the
	 * probe's, and say nothing about the original's lateness */
	if (c->reo_rxt_us && seq_leq(r->start, c->reo_rxt_seq) && seq_lt(c->reo_rxt_seq, r->end))
		c->reo_rxt_us = 0;
	r->flags |= TXR_EVER_RETRANS;
	r->xmit_us = (uint32_t)c->wk->now_us;
	rate_snap(c, r, false);
}
