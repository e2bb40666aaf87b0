/*
 * Routing: the port and next hop a destination leaves by (route.h). The
 * ports' subnets first (the longest prefix), then their static routes
 * through their gateways, then a default route.
 */
#include <stdint.h>

#include "arn_dataplane.h"
#include "net_int.h"
#include "route.h"

int net_route(const struct arn_net *net, uint32_t src, uint32_t dst, uint32_t *nh)
{
	int best = -1;
	uint32_t best_mask = 0;
	for (unsigned i = 0; i < net->n_ports; i++) {
		const struct net_port *p = &net->port[i];
		if (((dst ^ p->ip) & p->mask) == 0 && (best < 0 || p->mask > best_mask)) {
			best = (int)i;
			best_mask = p->mask;
		}
	}
	if (best >= 0) {
		*nh = dst;
		return best;
	}
	/* Off-link: the longest of the ports' static routes (dataplane
	 * ports[].routes, through that port's gateway)... */
	unsigned best_len = 0;
	for (unsigned i = 0; i < net->n_ports; i++) {
		const struct net_port *p = &net->port[i];
		for (size_t r = 0; r < p->n_routes; r++) {
			unsigned len = p->routes[r].len;
			if (((dst ^ p->routes[r].prefix) & net_prefix_mask(len)) == 0 &&
			    (best < 0 || len > best_len)) {
				best = (int)i;
				best_len = len;
			}
		}
	}
	if (best >= 0) {
		*nh = net->port[best].gateway;
		return best;
	}
	/* ... else a default route: the gateway of a port without routes, the
	 * one that owns the source address first. */
	for (unsigned i = 0; i < net->n_ports; i++)
		if (net->port[i].gateway && !net->port[i].n_routes && net->port[i].ip == src) {
			*nh = net->port[i].gateway;
			return (int)i;
		}
	for (unsigned i = 0; i < net->n_ports; i++)
		if (net->port[i].gateway && !net->port[i].n_routes) {
			*nh = net->port[i].gateway;
			return (int)i;
		}
	return -1;
}
