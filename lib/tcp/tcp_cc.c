/*
 * Congestion control: NewReno (RFC 5681 slow start and congestion
 * avoidance; recovery itself is in tcp_in.c / tcp_out.c, RFC 6582 / 6675)
 * CUBIC (RFC 9438), the default, and BBR v1 (below). Windows are in bytes;
 * CUBIC computes in segments with doubles (the worker is a user-space
 * thread, floating point costs nothing special).
 */
#include <math.h>

#include "tcp_int.h"
#include "tcp_rack.h"

/* RFC 5681 3.1 with appropriate byte counting (RFC 3465, L = 2). */
static void slow_start(struct arn_tcp_conn *c, uint32_t acked)
{
	c->cwnd += RTE_MIN(acked, 2u * c->mss);
}

static void reno_init(struct arn_tcp_conn *c)
{
	/* RFC 6928 initial window: 10 segments */
	c->cwnd = 10u * c->mss;
}

static void reno_on_ack(struct arn_tcp_conn *c, uint32_t acked, uint64_t now)
{
	(void)now;
	if (c->cwnd < c->ssthresh) {
		slow_start(c, acked);
		return;
	}
	/* cwnd += SMSS*SMSS/cwnd per ACK, at least 1 byte */
	uint32_t inc = (uint32_t)((uint64_t)c->mss * c->mss / c->cwnd);
	c->cwnd += inc ? inc : 1;
}

/* Half of cwnd, as Linux's tcp_reno_ssthresh, where RFC 5681's (4) says
 * half the flight: RACK finds a loss after the poll's ACKs have shrunk
 * the flight (issue 16, docs/tcp.md's sixth pass), so the flight then is
 * not the window the loss was sent in. cwnd only grows while it limits
 * (cwnd_lim_seq), so it is not an application-limited overstatement. */
static uint32_t reno_ssthresh(struct arn_tcp_conn *c, uint64_t now)
{
	(void)now;
	return RTE_MAX(c->cwnd / 2, 2u * c->mss);
}

static void reno_after_recovery(struct arn_tcp_conn *c, uint64_t now)
{
	(void)now;
	/* RFC 6582 3.2 step 3 (full ACK): deflate to ssthresh, or to
	 * flight + SMSS if that is smaller, to avoid a burst. */
	uint32_t flight = c->snd_max - c->snd_una;
	uint32_t floor = flight > c->mss ? flight : c->mss;
	c->cwnd = RTE_MIN(c->ssthresh, floor + c->mss);
}

const struct tcp_cc_ops tcp_cc_newreno = {
    .name = "newreno",
    .init = reno_init,
    .on_ack = reno_on_ack,
    .ssthresh = reno_ssthresh,
    .after_recovery = reno_after_recovery,
};

/* ---- CUBIC (RFC 9438) ---------------------------------------------------------- */

#define CUBIC_C 0.4
#define CUBIC_BETA 0.7

static void cubic_init(struct arn_tcp_conn *c)
{
	reno_init(c);
	c->cubic = (struct tcp_cubic){0};
}

static void cubic_on_ack(struct arn_tcp_conn *c, uint32_t acked, uint64_t now)
{
	struct tcp_cubic *k = &c->cubic;
	if (c->cwnd < c->ssthresh) {
		slow_start(c, acked);
		return;
	}
	double mss = c->mss;
	double cwnd = c->cwnd / mss;
	if (k->epoch_ms == 0) {
		/* RFC 9438 4.2: a new congestion avoidance epoch */
		k->epoch_ms = now ? now : 1;
		if (k->w_max < cwnd) {
			k->k = 0;
			k->w_max = cwnd;
		} else {
			k->k = cbrt((k->w_max - cwnd) / CUBIC_C);
		}
		k->w_est = cwnd;
		k->ack_bytes = 0;
	}
	double rtt = c->srtt_us8 ? (c->srtt_us8 >> 3) / 1e6 : 0.1;
	double t = (double)(now - k->epoch_ms) / 1000.0;
	double d = t + rtt - k->k;
	double target = CUBIC_C * d * d * d + k->w_max;
	/* RFC 9438 4.3: the Reno-friendly region */
	k->ack_bytes += acked;
	/* alpha_cubic, and 1 once W_est is back at the cwnd of the last
	 * reduction (w_last_max): Reno's own slope from there on (RFC 9438
	 * 4.3's SHOULD). With a loss every hundred segments (issue 16, 1%
	 * loss) the Reno-friendly region is where cwnd spends its time. */
	double alpha =
	    k->w_est >= k->w_last_max ? 1.0 : 3.0 * (1.0 - CUBIC_BETA) / (1.0 + CUBIC_BETA);
	while (k->ack_bytes >= c->mss) {
		k->ack_bytes -= c->mss;
		k->w_est += alpha / k->w_est;
	}
	if (k->w_est > target)
		target = k->w_est;
	/* RFC 9438 4.4 / 4.5: the target bounds what one RTT may add */
	if (target > 1.5 * cwnd)
		target = 1.5 * cwnd;
	if (target > cwnd) {
		double inc = (target - cwnd) / cwnd * (acked / mss) * mss;
		c->cwnd += inc >= 1.0 ? (uint32_t)inc : 1;
	} else {
		/* TCP-friendly floor: grow very slowly (1 byte per ACK keeps the
		 * epoch honest without stalling). */
		c->cwnd += 1;
	}
}

static uint32_t cubic_ssthresh(struct arn_tcp_conn *c, uint64_t now)
{
	(void)now;
	struct tcp_cubic *k = &c->cubic;
	double cwnd = c->cwnd / (double)c->mss;
	/* RFC 9438 4.7 fast convergence */
	if (cwnd < k->w_last_max)
		k->w_max = cwnd * (1.0 + CUBIC_BETA) / 2.0;
	else
		k->w_max = cwnd;
	k->w_last_max = cwnd;
	k->epoch_ms = 0;
	/* beta x cwnd, as Linux's cubictcp_recalc_ssthresh, not x the flight
	 * (RFC 9438 4.6 allows cwnd when cwnd does not grow while the flight
	 * is below it: on_ack is called only when cwnd-limited, tcp_in.c).
	 * The flight when the loss is found is what is left after this poll's
	 * burst of ACKs, before anything is sent on them: on a sub-millisecond
	 * path a third to a half of cwnd, and every loss halved cwnd twice
	 * over (issue 16: 1% loss, Arion sending, 2.7x Linux's time with
	 * cwnd 3-7 segments after each recovery where Linux kept 10-14). */
	return RTE_MAX((uint32_t)(c->cwnd * CUBIC_BETA), 2u * c->mss);
}

static void cubic_after_recovery(struct arn_tcp_conn *c, uint64_t now)
{
	(void)now;
	c->cwnd = RTE_MAX(c->ssthresh, 2u * c->mss);
	c->cubic.epoch_ms = 0;
}

const struct tcp_cc_ops tcp_cc_cubic = {
    .name = "cubic",
    .init = cubic_init,
    .on_ack = cubic_on_ack,
    .ssthresh = cubic_ssthresh,
    .after_recovery = cubic_after_recovery,
};

/* ---- BBR v1 --------------------------------------------------------------------------
 * As Linux's net/ipv4/tcp_bbr.c (and draft-cardwell-iccrg-bbr-congestion-
 * control-00): a model of the path, the bottleneck bandwidth (a windowed
 * max of delivery rate samples over 10 round trips) and the minimum RTT
 * (over 10 s), sets the pacing rate (gain x bw) and cwnd (gain x BDP);
 * loss does not reduce them, except for packet conservation in the first
 * round of a recovery. States: STARTUP (gain 2.89 until the bandwidth
 * stops growing by 25% for three rounds), DRAIN (the queue STARTUP made),
 * PROBE_BW (a cycle of eight phases, gains 1.25, 0.75, then 1), PROBE_RTT
 * (cwnd 4 segments for 200 ms and a round, when min_rtt is 10 s old).
 * The ACK aggregation extra cwnd as Linux's (bbr_ack_aggregation_cwnd).
 * Not done: the long-term bandwidth estimate for token-bucket policers
 * (lt_bw), and ECN (BBR v1 ignores it).
 * Rate samples come from tcp_rack.c (delivery rate estimation). */

#define BBR_UNIT 256
#define BBR_HIGH_GAIN (BBR_UNIT * 2885 / 1000 + 1) /* 2/ln(2) */
#define BBR_DRAIN_GAIN (BBR_UNIT * 1000 / 2885)
#define BBR_CWND_GAIN (BBR_UNIT * 2)
#define BBR_CYCLE_LEN 8
#define BBR_MIN_RTT_WIN_MS 10000
#define BBR_PROBE_RTT_MS 200
#define BBR_FULL_BW_THRESH (BBR_UNIT * 5 / 4)
#define BBR_FULL_BW_CNT 3
#define BBR_MIN_SEGS 4 /* cwnd floor, and cwnd in PROBE_RTT */
#define BBR_INIT_SEGS 10
#define BBR_EXTRA_ACKED_WIN_RTTS 5	     /* rounds a max of the extra ACKed lasts */
#define BBR_EXTRA_ACKED_MAX_US 100000	     /* the extra cwnd is at most 100 ms of bw */
#define BBR_ACK_EPOCH_RESET (1u << 30)	     /* bytes: about Linux's 2^20 packets */

static const uint32_t bbr_pacing_cycle[BBR_CYCLE_LEN] = {
    BBR_UNIT * 5 / 4, BBR_UNIT * 3 / 4, BBR_UNIT, BBR_UNIT, BBR_UNIT, BBR_UNIT, BBR_UNIT, BBR_UNIT,
};

static uint64_t bbr_max_bw(const struct tcp_bbr *b)
{
	return b->bw[0];
}

/* Kathleen Nichols' windowed max filter (Linux's lib/win_minmax.c), the
 * window in round trips: the best, second and third best samples of
 * successive sub-windows, so that the max ages out without a history. */
static void bbr_bw_filter(struct tcp_bbr *b, uint32_t t, uint64_t v)
{
	const uint32_t win = BBR_BW_RTTS;
	if (v >= b->bw[0] || t - b->bw_round[2] > win) {
		for (int i = 0; i < 3; i++) {
			b->bw[i] = v;
			b->bw_round[i] = t;
		}
		return;
	}
	if (v >= b->bw[1]) {
		b->bw[2] = b->bw[1] = v;
		b->bw_round[2] = b->bw_round[1] = t;
	} else if (v >= b->bw[2]) {
		b->bw[2] = v;
		b->bw_round[2] = t;
	}
	uint32_t dt = t - b->bw_round[0];
	if (dt > win) {
		b->bw[0] = b->bw[1], b->bw_round[0] = b->bw_round[1];
		b->bw[1] = b->bw[2], b->bw_round[1] = b->bw_round[2];
		b->bw[2] = v, b->bw_round[2] = t;
		if (t - b->bw_round[0] > win) {
			b->bw[0] = b->bw[1], b->bw_round[0] = b->bw_round[1];
			b->bw[1] = b->bw[2], b->bw_round[1] = b->bw_round[2];
			b->bw[2] = v, b->bw_round[2] = t;
		}
	} else if (b->bw_round[1] == b->bw_round[0] && dt > win / 4) {
		b->bw[2] = b->bw[1] = v;
		b->bw_round[2] = b->bw_round[1] = t;
	} else if (b->bw_round[2] == b->bw_round[1] && dt > win / 2) {
		b->bw[2] = v;
		b->bw_round[2] = t;
	}
}

/* gain x BDP in bytes (the initial window before any RTT is known) */
static uint64_t bbr_bdp(const struct arn_tcp_conn *c, uint64_t bw, uint32_t gain)
{
	const struct tcp_bbr *b = &c->bbr;
	if (b->min_rtt_us == 0 || bw == 0)
		return (uint64_t)BBR_INIT_SEGS * c->mss;
	uint64_t w = bw * b->min_rtt_us / 1000000;
	return w * gain / BBR_UNIT;
}

/* What one pacing burst may be (pace_sent in tcp_out.c): 1 ms at the
 * pacing rate, within [2 segments, 64 KB]. */
static uint64_t bbr_quantum(const struct arn_tcp_conn *c)
{
	uint64_t q = RTE_MIN(c->pacing_rate / 1000, 65536u);
	return RTE_MAX(q, 2u * c->mss);
}

/* The cwnd BBR aims at: gain x BDP, plus room for three bursts in flight
 * (Linux's bbr_quantization_budget), plus two segments in the probing
 * phase so that it can overfill the pipe. */
static uint64_t bbr_target_cwnd(const struct arn_tcp_conn *c, uint64_t bw, uint32_t gain)
{
	uint64_t w = bbr_bdp(c, bw, gain) + 3 * bbr_quantum(c);
	if (c->bbr.mode == BBR_PROBE_BW && c->bbr.cycle_idx == 0)
		w += 2u * c->mss;
	return w;
}

static void bbr_set_pacing_rate(struct arn_tcp_conn *c, uint64_t bw, uint32_t gain)
{
	/* 1% under the estimate, so that the bottleneck queue drains */
	uint64_t rate = bw * gain / BBR_UNIT * 99 / 100;
	if (rate == 0)
		return;
	if (c->bbr.full_bw_reached || rate > c->pacing_rate)
		c->pacing_rate = rate;
}

static void bbr_init_pacing_rate(struct arn_tcp_conn *c)
{
	uint64_t rtt_us = c->srtt_us8 ? RTE_MAX(c->srtt_us8 >> 3, 1u) : 1000;
	uint64_t bw = (uint64_t)c->bbr.cwnd * 1000000 / rtt_us;
	c->pacing_rate = bw * BBR_HIGH_GAIN / BBR_UNIT;
}

static void bbr_save_cwnd(struct arn_tcp_conn *c)
{
	struct tcp_bbr *b = &c->bbr;
	if (b->prev_recovery == TCP_REC_NONE && b->mode != BBR_PROBE_RTT)
		b->prior_cwnd = b->cwnd;
	else
		b->prior_cwnd = RTE_MAX(b->prior_cwnd, b->cwnd);
}

static void bbr_advance_cycle(struct arn_tcp_conn *c)
{
	c->bbr.cycle_idx = (uint8_t)((c->bbr.cycle_idx + 1) % BBR_CYCLE_LEN);
	c->bbr.cycle_stamp_us = c->wk->now_us;
}

static void bbr_reset_probe_bw(struct arn_tcp_conn *c)
{
	c->bbr.mode = BBR_PROBE_BW;
	/* a random phase, never the draining one (Linux's bbr_cycle_rand) */
	c->bbr.cycle_idx = (uint8_t)(BBR_CYCLE_LEN - 1 - tcp_rng(c->wk) % (BBR_CYCLE_LEN - 1));
	bbr_advance_cycle(c);
}

static void bbr_reset_mode(struct arn_tcp_conn *c)
{
	if (!c->bbr.full_bw_reached)
		c->bbr.mode = BBR_STARTUP;
	else
		bbr_reset_probe_bw(c);
}

static void bbr_init(struct arn_tcp_conn *c)
{
	reno_init(c);
	struct tcp_bbr *b = &c->bbr;
	*b = (struct tcp_bbr){0};
	b->cwnd = c->cwnd;
	b->prior_cwnd = 0;
	b->min_rtt_us = c->min_rtt_us;
	b->min_rtt_stamp_ms = c->wk->now_ms;
	b->next_rtt_delivered = (uint32_t)c->delivered;
	b->ack_epoch_us = c->delivered_us;
	b->mode = BBR_STARTUP;
	b->pacing_gain = b->cwnd_gain = BBR_HIGH_GAIN;
	bbr_init_pacing_rate(c);
	c->next_send_us = c->wk->now_us;
}

static void bbr_on_ack(struct arn_tcp_conn *c, uint32_t acked, uint64_t now)
{
	(void)c, (void)acked, (void)now; /* on_sample does all */
}

/* Loss or ECN: BBR keeps its model (no multiplicative decrease). cwnd is
 * remembered for the end of the recovery; the ssthresh returned keeps
 * c->cwnd where it is (on_sample sets it on this same ACK). */
static uint32_t bbr_ssthresh(struct arn_tcp_conn *c, uint64_t now)
{
	(void)now;
	bbr_save_cwnd(c);
	return RTE_MAX(c->bbr.cwnd, 2u * c->mss);
}

static void bbr_after_recovery(struct arn_tcp_conn *c, uint64_t now)
{
	(void)c, (void)now; /* on_sample restores prior_cwnd */
}

static void bbr_update_bw(struct arn_tcp_conn *c, const struct tcp_rate_sample *rs)
{
	struct tcp_bbr *b = &c->bbr;
	b->round_start = false;
	if (rs->interval_us <= 0)
		return;
	/* a round trip ends when a segment sent after its start is acked */
	if ((int32_t)(rs->prior_delivered - b->next_rtt_delivered) >= 0) {
		b->next_rtt_delivered = (uint32_t)c->delivered;
		b->round_count++;
		b->round_start = true;
		b->packet_conservation = false;
	}
	uint64_t bw = (uint64_t)rs->delivered * 1000000 / (uint64_t)rs->interval_us;
	/* an app-limited sample only counts when it shows more bandwidth */
	if (!rs->is_app_limited || bw >= bbr_max_bw(b))
		bbr_bw_filter(b, b->round_count, bw);
}

static bool bbr_is_next_cycle_phase(struct arn_tcp_conn *c, const struct tcp_rate_sample *rs)
{
	struct tcp_bbr *b = &c->bbr;
	bool full_length = c->wk->now_us - b->cycle_stamp_us > b->min_rtt_us;
	if (b->pacing_gain == BBR_UNIT)
		return full_length;
	uint64_t inflight = rs->prior_in_flight;
	if (b->pacing_gain > BBR_UNIT) /* probing: until the pipe is overfilled, or loss */
		return full_length &&
		       (rs->losses || inflight >= bbr_bdp(c, bbr_max_bw(b), b->pacing_gain));
	/* draining: until the queue is gone, at most one min_rtt */
	return full_length || inflight <= bbr_bdp(c, bbr_max_bw(b), BBR_UNIT);
}

static void bbr_check_full_bw(struct arn_tcp_conn *c, const struct tcp_rate_sample *rs)
{
	struct tcp_bbr *b = &c->bbr;
	if (b->full_bw_reached || !b->round_start || rs->is_app_limited)
		return;
	uint64_t thresh = b->full_bw * BBR_FULL_BW_THRESH / BBR_UNIT;
	if (bbr_max_bw(b) >= thresh) {
		b->full_bw = bbr_max_bw(b);
		b->full_bw_cnt = 0;
		return;
	}
	b->full_bw_reached = ++b->full_bw_cnt >= BBR_FULL_BW_CNT;
}

static void bbr_check_drain(struct arn_tcp_conn *c)
{
	struct tcp_bbr *b = &c->bbr;
	if (b->mode == BBR_STARTUP && b->full_bw_reached)
		b->mode = BBR_DRAIN;
	if (b->mode == BBR_DRAIN && tcp_pipe(c) <= bbr_bdp(c, bbr_max_bw(b), BBR_UNIT))
		bbr_reset_probe_bw(c);
}

static void bbr_update_min_rtt(struct arn_tcp_conn *c, const struct tcp_rate_sample *rs)
{
	struct tcp_bbr *b = &c->bbr;
	uint64_t now = c->wk->now_ms;
	bool expired = now > b->min_rtt_stamp_ms + BBR_MIN_RTT_WIN_MS;
	if (rs->rtt_us && (b->min_rtt_us == 0 || rs->rtt_us < b->min_rtt_us || expired)) {
		b->min_rtt_us = rs->rtt_us;
		b->min_rtt_stamp_ms = now;
	}
	if (expired && b->mode != BBR_PROBE_RTT) {
		b->mode = BBR_PROBE_RTT;
		bbr_save_cwnd(c);
		b->probe_rtt_done_ms = 0;
	}
	if (b->mode != BBR_PROBE_RTT)
		return;
	uint32_t pipe = tcp_pipe(c);
	/* what is delivered while the flight is held down says nothing of
	 * the bandwidth */
	uint64_t al = c->delivered + pipe;
	c->app_limited = al ? al : 1;
	if (b->probe_rtt_done_ms == 0 && pipe <= BBR_MIN_SEGS * (uint32_t)c->mss) {
		b->probe_rtt_done_ms = now + BBR_PROBE_RTT_MS;
		b->probe_rtt_round_done = false;
		b->next_rtt_delivered = (uint32_t)c->delivered;
	} else if (b->probe_rtt_done_ms) {
		if (b->round_start)
			b->probe_rtt_round_done = true;
		if (b->probe_rtt_round_done && now > b->probe_rtt_done_ms) {
			b->min_rtt_stamp_ms = now;
			b->cwnd = RTE_MAX(b->cwnd, b->prior_cwnd);
			bbr_reset_mode(c);
		}
	}
}

static void bbr_update_gains(struct tcp_bbr *b)
{
	switch (b->mode) {
	case BBR_STARTUP:
		b->pacing_gain = b->cwnd_gain = BBR_HIGH_GAIN;
		break;
	case BBR_DRAIN:
		b->pacing_gain = BBR_DRAIN_GAIN;
		b->cwnd_gain = BBR_HIGH_GAIN;
		break;
	case BBR_PROBE_BW:
		b->pacing_gain = bbr_pacing_cycle[b->cycle_idx];
		b->cwnd_gain = BBR_CWND_GAIN;
		break;
	default:
		b->pacing_gain = b->cwnd_gain = BBR_UNIT;
		break;
	}
}

/* The first round of a recovery: packet conservation (send what was
 * delivered, and one segment more); at its end, back to the cwnd before
 * it. @return true when conservation decides this ACK's cwnd. Linux's
 * bbr_set_cwnd_to_recover_or_restore, but for that segment: with Linux's
 * exact conservation, a small flight whose other segments were all SACKed
 * sent one retransmission alone (pipe 0 + one segment delivered), and when
 * that was lost too no ACK came to release the next lost segment or to
 * show the loss: both waited for the RTO (issue 16, 10% loss: 3-6 RTOs a
 * row where Linux BBR had none). The segment more lets the next
 * retransmission or new data follow, whose SACK shows RACK the first lost,
 * as PRR-SSRB does for CUBIC (tcp_prr_ack). */
static bool bbr_recover_or_restore(struct arn_tcp_conn *c, const struct tcp_rate_sample *rs,
				   uint64_t *cwnd)
{
	struct tcp_bbr *b = &c->bbr;
	uint8_t prev = b->prev_recovery, now = c->recovery;
	uint64_t w = *cwnd;
	uint32_t inflight = tcp_pipe(c);
	if (rs->losses > 0)
		w = w > rs->losses + (uint64_t)c->mss ? w - rs->losses : c->mss;
	if (now == TCP_REC_FAST && prev == TCP_REC_NONE) {
		b->packet_conservation = true;
		b->next_rtt_delivered = (uint32_t)c->delivered; /* a round starts */
		w = (uint64_t)inflight + rs->acked_sacked;
	} else if (prev != TCP_REC_NONE && now == TCP_REC_NONE) {
		w = RTE_MAX(w, (uint64_t)b->prior_cwnd);
		b->packet_conservation = false;
	}
	b->prev_recovery = now;
	if (b->packet_conservation) {
		*cwnd = RTE_MAX(w, (uint64_t)inflight + rs->acked_sacked + c->mss);
		return true;
	}
	*cwnd = w;
	return false;
}

/* Linux's bbr_update_ack_aggregation: the data ACKed beyond what the
 * bandwidth estimate explains since the epoch began is data the path
 * delivers in bursts (ACKs held and released together: Wi-Fi, a
 * receiver's or a middlebox's ACK thinning, a path that reorders ACKs).
 * cwnd gets room for that much more (bbr_set_cwnd), or the sender, whose
 * cwnd is about a BDP, idles between the bursts and takes the idle time
 * for less bandwidth. With netem's reordering both ways (docs/tcp.md,
 * "Twelfth pass") min_RTT is a packet and ACK that both overtook, tens of
 * microseconds on a 10 ms path: the BDP is nothing and cwnd was the three
 * pacing quanta alone. An epoch ends when the ACK rate falls back to the
 * estimate. */
static void bbr_update_ack_aggregation(struct arn_tcp_conn *c, const struct tcp_rate_sample *rs)
{
	struct tcp_bbr *b = &c->bbr;
	if (rs->acked_sacked == 0 || rs->interval_us <= 0)
		return;
	if (b->round_start) {
		if (++b->extra_acked_win_rtts >= BBR_EXTRA_ACKED_WIN_RTTS) {
			b->extra_acked_win_rtts = 0;
			b->extra_acked_win_idx ^= 1;
			b->extra_acked[b->extra_acked_win_idx] = 0;
		}
	}
	/* at most 10 s: a product that fits 64 bits at any rate, and an
	 * epoch that old expects more than was ACKed (so it starts again) */
	uint32_t epoch_us = RTE_MIN(c->delivered_us - b->ack_epoch_us, 10000000u);
	uint64_t expected = bbr_max_bw(b) * epoch_us / 1000000;
	if (b->ack_epoch_acked <= expected ||
	    (uint64_t)b->ack_epoch_acked + rs->acked_sacked >= (uint64_t)BBR_ACK_EPOCH_RESET) {
		b->ack_epoch_acked = 0;
		b->ack_epoch_us = c->delivered_us;
		expected = 0;
	}
	b->ack_epoch_acked += rs->acked_sacked;
	uint64_t extra = b->ack_epoch_acked - expected;
	if (extra > b->cwnd)
		extra = b->cwnd;
	if (extra > b->extra_acked[b->extra_acked_win_idx])
		b->extra_acked[b->extra_acked_win_idx] = (uint32_t)extra;
}

/* Linux's bbr_ack_aggregation_cwnd: once the bandwidth is known, the
 * larger of the two windows' extra, at most 100 ms of bandwidth. */
static uint64_t bbr_ack_aggregation_cwnd(const struct arn_tcp_conn *c)
{
	const struct tcp_bbr *b = &c->bbr;
	if (!b->full_bw_reached)
		return 0;
	uint64_t max = bbr_max_bw(b) * BBR_EXTRA_ACKED_MAX_US / 1000000;
	uint64_t extra = RTE_MAX(b->extra_acked[0], b->extra_acked[1]);
	return RTE_MIN(extra, max);
}

static void bbr_set_cwnd(struct arn_tcp_conn *c, const struct tcp_rate_sample *rs)
{
	struct tcp_bbr *b = &c->bbr;
	uint64_t w = b->cwnd;
	uint32_t acked = rs->acked_sacked;
	const uint64_t floor = (uint64_t)BBR_MIN_SEGS * c->mss;
	/* an RTO set cwnd to one segment (tcp_timeout.c): BBR goes on from
	 * there, and the RTO ends a round (Linux's bbr_set_state) */
	if (c->recovery == TCP_REC_LOSS && b->prev_recovery != TCP_REC_LOSS) {
		w = c->cwnd;
		b->prev_recovery = TCP_REC_LOSS;
		b->full_bw = 0;
		b->round_start = true;
		b->packet_conservation = false;
	}
	if (acked == 0)
		goto done;
	if (bbr_recover_or_restore(c, rs, &w))
		goto done;
	uint64_t target =
	    bbr_target_cwnd(c, bbr_max_bw(b), b->cwnd_gain) + bbr_ack_aggregation_cwnd(c);
	if (b->full_bw_reached)
		w = RTE_MIN(w + acked, target);
	else if (w < target || c->delivered < (uint64_t)BBR_INIT_SEGS * c->mss)
		w += acked;
	w = RTE_MAX(w, floor);
done:
	if (b->mode == BBR_PROBE_RTT)
		w = RTE_MIN(w, floor);
	if (w > UINT32_MAX / 2)
		w = UINT32_MAX / 2;
	b->cwnd = (uint32_t)w;
	c->cwnd = b->cwnd;
}

static void bbr_on_sample(struct arn_tcp_conn *c, const struct tcp_rate_sample *rs)
{
	struct tcp_bbr *b = &c->bbr;
	bbr_update_bw(c, rs);
	bbr_update_ack_aggregation(c, rs);
	if (b->mode == BBR_PROBE_BW && bbr_is_next_cycle_phase(c, rs))
		bbr_advance_cycle(c);
	bbr_check_full_bw(c, rs);
	bbr_check_drain(c);
	bbr_update_min_rtt(c, rs);
	bbr_update_gains(b);
	if (bbr_max_bw(b))
		bbr_set_pacing_rate(c, bbr_max_bw(b), b->pacing_gain);
	else if (c->srtt_us8)
		bbr_init_pacing_rate(c); /* no sample yet: from the RTT */
	bbr_set_cwnd(c, rs);
}

const struct tcp_cc_ops tcp_cc_bbr = {
    .name = "bbr",
    .init = bbr_init,
    .on_ack = bbr_on_ack,
    .ssthresh = bbr_ssthresh,
    .after_recovery = bbr_after_recovery,
    .on_sample = bbr_on_sample,
};
