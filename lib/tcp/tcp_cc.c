/*
 * Congestion control: NewReno (RFC 5681 slow start and congestion
 * avoidance; recovery itself is in tcp_in.c / tcp_out.c, RFC 6582 / 6675)
 * and CUBIC (RFC 9438), the default. Windows are in bytes; CUBIC computes in
 * segments with doubles (the worker is a user-space thread, floating point
 * costs nothing special).
 */
#include <math.h>

#include "tcp_int.h"

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

static uint32_t reno_ssthresh(struct arn_tcp_conn *c, uint64_t now)
{
	(void)now;
	uint32_t flight = c->snd_max - c->snd_una;
	return RTE_MAX(flight / 2, 2u * c->mss);
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
	double rtt = c->srtt8 ? (c->srtt8 >> 3) / 1000.0 : 0.1;
	double t = (double)(now - k->epoch_ms) / 1000.0;
	double d = t + rtt - k->k;
	double target = CUBIC_C * d * d * d + k->w_max;
	/* RFC 9438 4.3: the Reno-friendly region */
	k->ack_bytes += acked;
	double alpha = 3.0 * (1.0 - CUBIC_BETA) / (1.0 + CUBIC_BETA);
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
	uint32_t flight = c->snd_max - c->snd_una;
	uint32_t base = RTE_MIN(c->cwnd, flight ? flight : c->cwnd);
	return RTE_MAX((uint32_t)(base * CUBIC_BETA), 2u * c->mss);
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
