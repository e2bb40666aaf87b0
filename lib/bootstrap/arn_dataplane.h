/*
 * Arion's `dataplane:` section as the data plane reads it: ports, lcores,
 * pools, TCP and HTTP sizes, with defaults filled in (lib/bootstrap parses
 * it; docs/configuration.md describes it). Plain C, no protobuf: lib/net,
 * lib/tcp and lib/http include this header, never arn_bootstrap.h, so that
 * nothing on a worker depends on upb.
 *
 * Ownership: struct arn_bootstrap owns the arn_dataplane it holds and every
 * string and array in it; the data plane borrows it for its whole life.
 */
#ifndef ARN_DATAPLANE_H
#define ARN_DATAPLANE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** One DPDK port from dataplane.ports. */
struct arn_dp_port {
	char *name;   /* dataplane.ports[i].name, default "port<i>" */
	char *device; /* PCI address ("0000:03:00.0") or vdev ("net_tap0,iface=a") */
	bool is_pci;
	uint32_t ipv4; /* host byte order */
	uint8_t prefix_len;
	uint32_t gateway; /* host byte order; 0: none (on-link only) */
	struct arn_dp_route {
		uint32_t prefix; /* host byte order, host bits zero */
		uint8_t len;
	} * routes;	 /* prefixes reached through this port's gateway */
	size_t n_routes; /* 0: the gateway (if any) is this port's default route */
	uint16_t mtu;
	uint16_t rx_descriptors;
	uint16_t tx_descriptors;
};

/** Arion's `dataplane:` section, with defaults filled in. */
struct arn_dataplane {
	bool present;	 /* the file had a dataplane: key */
	char **eal_args; /* extra EAL arguments, before the CLI's */
	size_t n_eal_args;
	int control_lcore; /* main lcore; -1: EAL's default */
	unsigned *worker_lcores;
	size_t n_workers;
	struct arn_dp_port *ports;
	size_t n_ports;
	uint32_t mbufs_per_socket;
	uint32_t mbuf_cache_size;
	uint16_t mbuf_data_room;
	uint32_t tcp_max_connections; /* per worker */
	uint32_t tcp_rcvbuf;
	/* the most autotuning grows a receive buffer to; 0 (or at most
	 * tcp_rcvbuf): off, every buffer stays tcp_rcvbuf */
	uint32_t tcp_rcvbuf_max;
	/* reordering_window_max_ms: the cap of RACK's reordering window
	 * beyond SRTT on DSACK evidence; 0: off (RFC 8985's, as Linux) */
	uint32_t tcp_reo_max_ms;
	uint32_t tcp_sndbuf;
	/* the most autotuning grows a send buffer to; 0 (or at most
	 * tcp_sndbuf): off, every buffer stays tcp_sndbuf */
	uint32_t tcp_sndbuf_max;
	uint32_t tcp_cc; /* ARN_DP_TCP_CC_*: congestion control for every connection */
	/* dataplane.http, per worker; 0: lib/http's defaults */
	uint32_t http_max_client_connections;
	uint32_t http_max_upstream_connections;
	uint32_t http_max_requests_in_flight;
	uint32_t http_kept_body_mbufs; /* per worker: request bodies kept whole */
};

/* dataplane.tcp.congestion_control */
#define ARN_DP_TCP_CC_CUBIC 0
#define ARN_DP_TCP_CC_NEWRENO 1
#define ARN_DP_TCP_CC_BBR 2

#endif
