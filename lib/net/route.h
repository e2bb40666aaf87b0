/*
 * Routing (route.c): which port and next hop a destination leaves by.
 * Ports' addresses and routes are fixed for the data plane's life (port.c
 * sets them before any worker runs), which is why a TX template
 * (output.c) may keep what these found.
 */
#ifndef ARN_NET_ROUTE_H
#define ARN_NET_ROUTE_H

#include <stdint.h>

#include "net_int.h"

/* Port and next hop for @p dst; -1 if no route. */
int net_route(const struct arn_net *net, uint32_t src, uint32_t dst, uint32_t *nh);

/* net_route() for every segment sent, inline for the usual machine: one
 * port and a destination on its subnet (what net_route() finds first,
 * with no other port to compare); the rest through net_route(). */
static inline int net_route_fast(const struct arn_net *net, uint32_t src, uint32_t dst,
				 uint32_t *nh)
{
	if (net->n_ports == 1 && ((dst ^ net->port[0].ip) & net->port[0].mask) == 0) {
		*nh = dst;
		return 0;
	}
	return net_route(net, src, dst, nh);
}

#endif
