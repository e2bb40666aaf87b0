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

#endif
