/*
 * A connection's receive memory bound, the part the receive path asks for
 * every in-order segment: tcp_rmem_admit (tcp_rmem.c) and
 * tcp_rmem_admit_in_order, its inline front. Beside tcp_rmem.c rather than
 * in tcp_int.h, which every file of lib/tcp includes: an inline there
 * calling into tcp_rmem.c would make the header depend on that file and
 * that file on it (as tcp_timer.h says). Worker lcore only.
 */
#ifndef ARN_TCP_RMEM_H
#define ARN_TCP_RMEM_H

#include <stdbool.h>

#include "tcp_int.h"

/* tcp_rmem_admit(c, true) without a call while the connection's queues
 * are under their mbuf bound, as they nearly always are: the first test
 * tcp_rmem_admit makes for in-order data, which then changes nothing.
 * Admitted, the segment is queued (its caller's contract): counted in
 * rmem_queued, which pays for collapse walks (tcp_rmem.c), from here. */
static inline bool tcp_rmem_admit_in_order(struct arn_tcp_conn *c)
{
	c->rmem_queued++; /* taken back if refused (tcp_rmem_admit) */
	if (c->rcvq.n + c->oooq.n < c->rmem_max)
		return true;
	return tcp_rmem_admit(c, true);
}

#endif
