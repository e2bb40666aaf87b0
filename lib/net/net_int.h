/*
 * lib/net's private declarations, shared by its .c files and its unit tests
 * (tests/net). Not for other modules: they use arn_net.h and arn_l4.h.
 */
#ifndef ARN_NET_INT_H
#define ARN_NET_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_ether.h>

#include "arn_l4.h"
#include "arn_lcore.h"
#include "arn_net.h"

struct rte_mbuf;

/* The logical redirection table: a flow whose hash is h belongs to worker
 * reta[h & reta_mask]. For ports with RSS it is what their RETA holds. */
#define NET_RETA_MAX 512

/* Ring sizes (entries, powers of 2). */
#define NET_HANDOFF_RING 1024
#define NET_CTRL_RING 64

/* Gratuitous ARPs at start, a second apart. */
#define NET_GARP_COUNT 3

/* How long a buffered TX frame may wait for more to batch with. */
#define NET_TX_DRAIN_US 100

struct arn_dataplane;
struct rte_mempool;

/* An mbuf pool of @n mbufs with @data_room bytes each (net.c), as
 * rte_pktmbuf_pool_create makes it, or with @packed its objects back to
 * back (RTE_MEMPOOL_F_NO_IOVA_CONTIG), as net_af_xdp's UMEM needs them.
 * NULL with rte_errno set on failure. */
struct rte_mempool *net_pool_create(const char *name, unsigned n, unsigned cache,
				    uint16_t data_room, int socket, bool packed);
/* How many of @mp's objects lie outside the region DPDK 22.11's net_af_xdp
 * registers as the UMEM for it (0: every frame can reach the socket). */
unsigned net_pool_outside_umem(struct rte_mempool *mp);
/* Whether @dp has a net_af_xdp port (its pools are then made packed). */
bool net_dp_has_af_xdp(const struct arn_dataplane *dp);

struct net_port {
	char name[64];
	char device[256]; /* as configured (qpairs may be appended) */
	uint16_t port_id; /* ethdev port */
	bool probed;	  /* we probed it (and detach it at destroy) */
	bool configured;
	bool started;
	bool rss_hw;	  /* the NIC spreads flows with our key and RETA */
	bool rss_fanout;  /* arn_af_packet: the kernel does, by a fanout program */
	bool lsc;	  /* link-change callback registered */
	bool tx_ip_cksum; /* offloads enabled on the port */
	bool tx_tcp_cksum;
	bool rx_ip_cksum;
	bool l4_cksum_vouched; /* a veth whose TCP checksums the kernel vouches for (port.c) */
	uint32_t ip;	       /* host byte order */
	uint32_t mask;
	uint32_t gateway;		   /* 0: none */
	const struct arn_dp_route *routes; /* via gateway; borrowed from dp */
	size_t n_routes;		   /* 0: the gateway (if any) is a default route */
	uint16_t mtu;
	struct rte_ether_addr mac;
	/* net_af_packet: the PMD's sockets, one per queue pair, found through
	 * the kernel (port.c); their PACKET_STATISTICS drops are the frames the
	 * kernel could not put in a full receive ring. Reading the statistics
	 * resets them, so what was read accumulates in afp_drops (any thread,
	 * atomically). n_afp_fd 0: not an af_packet port, or sockets not found. */
	unsigned n_afp_fd;
	int afp_fd[ARN_NET_MAX_WORKERS];
	uint64_t afp_drops;
	/* arn_af_packet (vpkt.c): its sockets; NULL for an ethdev port, whose
	 * port_id is then an ethdev's (a vpkt port's is none: see port.c) */
	struct net_vpkt *vpkt;
};

/* What the device counted, beside the workers' counters: frames lost before
 * any worker saw them, and frames the device failed to send. */
struct net_nic_stats {
	uint64_t rx_missed; /* RX queue full: the PMD's imissed + af_packet's ring drops */
	uint64_t rx_errors;
	uint64_t rx_nombuf;
	uint64_t tx_errors;
};

struct arn_net {
	const struct arn_dataplane *dp; /* borrowed; read by the L4 layer's worker_init */
	unsigned n_workers;
	unsigned n_ports;
	struct arn_lcore *lc[ARN_NET_MAX_WORKERS];
	char worker_name[ARN_NET_MAX_WORKERS][24];
	struct net_port port[ARN_NET_MAX_PORTS];
	struct rte_mempool *pool[8]; /* per NUMA socket (RTE_MAX_NUMA_NODES) */
	uint32_t reta_mask;
	uint16_t reta[NET_RETA_MAX];
	volatile int stop; /* workers leave their loops */
	unsigned rx_left;  /* workers out of their loops (no more hand-offs from them) */
	bool launched;
	bool stopped;
	int init_rc[ARN_NET_MAX_WORKERS]; /* the L4 layer's worker_init results */
	volatile int init_done[ARN_NET_MAX_WORKERS];
};

/* Control messages as they travel in a ctrl ring (by value, no allocation). */
struct net_ctrl_msg {
	arn_net_ctrl_fn fn;
	void *arg;
};

/* ---- rss.c ---------------------------------------------------------------------------------- */
/* The 40-byte key every RSS port is given: 0x6d5a repeated, which makes
 * Toeplitz symmetric in (src, dst) and (sport, dport). */
extern const uint8_t net_rss_key[40];
void net_rss_init(void);
/* Fill net->reta for @p n workers with @p size entries (power of 2). */
void net_reta_fill(struct arn_net *net, unsigned size);
/* A classic BPF program for an AF_PACKET fanout group (PACKET_FANOUT_CBPF)
 * whose member k is worker k's socket: it returns a value whose remainder
 * by the workers is arn_net_flow_worker()'s owner of an IPv4/TCP frame, so
 * the kernel delivers each flow to its owner and nothing is handed over.
 * Written to @p prog (room for @p cap instructions; NET_RSS_FANOUT_PROG_MAX always do).
 * @return its length, or 0 when net->reta is not round-robin (no program
 * can then say it) or @p cap is too small. */
struct sock_filter;
#define NET_RSS_FANOUT_PROG_MAX 108
unsigned net_rss_fanout_prog(const struct arn_net *net, struct sock_filter *prog, unsigned cap);

/* ---- arp.c ---------------------------------------------------------------------------------- */
struct arn_arp *net_arp_create(unsigned socket);
void net_arp_free(struct arn_arp *arp);
/* An ARP frame (data at the Ethernet header) arrived on @p port. @p shared:
 * a copy from another worker, to learn from only. Consumes @p m. */
void net_arp_input(struct arn_lcore *lc, uint16_t port, struct rte_mbuf *m, bool shared);
/* Send @p m (data at the IPv4 header, checksums final) to next hop @p nh on
 * @p port: now if resolved, else queued while resolving. Consumes @p m.
 * @return 0 or -ENOBUFS (dropped and counted). */
int net_arp_output(struct arn_lcore *lc, uint16_t port, uint32_t nh, struct rte_mbuf *m);
/* net_arp_timer and its inline front net_arp_poll: arp.h */
/* Gratuitous ARP for @p port's address. */
void net_arp_announce(struct arn_lcore *lc, uint16_t port);
/* Free every waiting packet (shutdown). */
void net_arp_flush(struct arn_lcore *lc);
/* For a TX template (output.c): 1, the MAC of next hop @p nh and the TSC
 * until which it stays REACHABLE, when it is REACHABLE and not yet due to
 * be asked again; else 0. Counts as a use of the entry (last_used). */
int net_arp_tmpl(struct arn_lcore *lc, uint32_t nh, struct rte_ether_addr *mac, uint64_t *until);
/* Start resolving next hop @p nh on @p port unless it is known or being
 * resolved. */
void net_arp_resolve(struct arn_lcore *lc, uint16_t port, uint32_t nh);
/* Each next hop of @p lc's cache with packets waiting or dropped from its
 * full queue: @p fn(ctx, next hop, packets waiting, drops). Control lcore,
 * lock-free reads of the worker's table (/stats). */
void net_arp_foreach_queue(const struct arn_lcore *lc,
			   void (*fn)(void *ctx, uint32_t nh, unsigned waiting, uint32_t drops),
			   void *ctx);
/* UINT64_MAX while packets for @p nh wait for its first answer
 * (INCOMPLETE), else the TSC of that answer (0: none recorded). */
uint64_t net_arp_since(const struct arn_lcore *lc, uint32_t nh);
/* Look up @p ip: 1 and the MAC if usable (reachable or stale), else 0. Tests. */
int net_arp_lookup(const struct arn_lcore *lc, uint32_t ip, struct rte_ether_addr *mac);
/* Packets waiting for resolution (all next hops). Tests. */
unsigned net_arp_n_waiting(const struct arn_lcore *lc);
/* Entries in the cache, whatever their state. Tests. */
unsigned net_arp_n_entries(const struct arn_lcore *lc);
/* Slots a lookup of @p ip reads (its probe sequence to the entry or to the
 * first free slot). Tests. */
unsigned net_arp_probes(const struct arn_lcore *lc, uint32_t ip);
/* Entries the cache holds at most (of its 1024 slots). */
#define NET_ARP_MAX_ENTRIES 768u
/* ARP timing, in TSC ticks (set from the TSC rate at create; tests may shorten). */
struct net_arp_timing {
	uint64_t retry;	    /* between requests while resolving */
	uint64_t reachable; /* an answer is trusted this long */
	unsigned retries;   /* requests before giving up */
};
extern struct net_arp_timing net_arp_timing;

/* ---- input.c -------------------------------------------------------------------------------- */
/* Hand the TCP segments net_input gathered to the L4 layer (one call).
 * Inline: the loop calls it after every burst, nearly always of one
 * segment. */
static inline void net_l4_flush(struct arn_lcore *lc)
{
	unsigned n = lc->n_l4_in;
	if (n == 0)
		return;
	lc->n_l4_in = 0;
	lc->l4_ops->input(lc, lc->l4_in, n);
}
/* Process received frames of @p port (or, with @p from_ring, frames another
 * worker handed over: ownership and RX counters are not applied again). */
void net_input(struct arn_lcore *lc, uint16_t port, struct rte_mbuf **pkts, uint16_t n,
	       bool from_ring);
/* Pass @p m to worker @p owner's hand-off ring; consumes it. */
void net_handoff(struct arn_lcore *lc, unsigned owner, struct rte_mbuf *m);

/* ---- tx.c: the bottom of the transmit path, in tx.h ---------------------------------------- */

/* ---- output.c ------------------------------------------------------------------------------- */
/* A chain's checksum: arn_cksum_mbuf (lib/common/arn_cksum_mbuf.h). */

/* Routing: route.h. */

/* Is @p addr (host order) one of the ports' addresses: arn_net_is_local()
 * inline, for the receive path's two checks per packet. */
static inline bool net_is_local(const struct arn_net *net, uint32_t addr)
{
	/* The first port apart: nearly always the only one, and then the
	 * answer is one compare, not a loop's set-up and step. */
	unsigned n = net->n_ports;
	if (n == 0)
		return false;
	if (net->port[0].ip == addr)
		return true;
	for (unsigned i = 1; i < n; i++)
		if (net->port[i].ip == addr)
			return true;
	return false;
}

/* ---- port.c -------------------------------------------------------------------------------- */
struct arn_dp_port;
/* Find or probe, and configure port @p idx from @p pc (queues need
 * net->lc[] with pools). Logs and returns a negative errno on failure. */
int net_port_setup(struct arn_net *net, unsigned idx, const struct arn_dp_port *pc);
/* Start every port, program RETAs, log what each port is. */
int net_ports_start(struct arn_net *net);
/* Stop and close every port that was configured. */
void net_ports_close(struct arn_net *net);
/* Frames the kernel dropped for want of room in @p np's af_packet receive
 * rings, since the port was set up (0 for other devices). Any thread. */
uint64_t net_port_afp_drops(struct net_port *np);

/* ---- netif.c ------------------------------------------------------------------------------- */
/* ioctl @p req on interface @p ifn (its name written into @p ifr, the
 * rest of @p ifr the caller's), through a socket of its own. @return 0 or
 * -errno. */
struct ifreq;
int net_if_ioctl(const char *ifn, unsigned long req, struct ifreq *ifr);

/* ---- worker.c ------------------------------------------------------------------------------- */
/* One iteration of a worker's loop (tests drive it directly). Returns
 * non-zero if it did work. */
int net_worker_iteration(struct arn_lcore *lc);
/* What a worker does before its first and after its last iteration. */
int net_worker_begin(struct arn_lcore *lc);
void net_worker_end(struct arn_lcore *lc);
/* Launch every worker's loop on its lcore and wait for their init; stop and
 * wait for them. */
int net_workers_launch(struct arn_net *net);
void net_workers_join(struct arn_net *net);

/* ---- net.c ---------------------------------------------------------------------------------- */
/* Create lcores, rings and ARP caches for @p net (ports already filled in);
 * the port setup is skipped when @p net was assembled by a test. */
int net_lcores_create(struct arn_net *net);
void net_lcores_free(struct arn_net *net);
/* The QSBR currently asked for (arn_net_set_rcu); net_state.c's, read
 * inline because every iteration of a worker reads it. */
extern struct rte_rcu_qsbr *net_rcu_want;
static inline struct rte_rcu_qsbr *net_rcu_wanted(void)
{
	return __atomic_load_n(&net_rcu_want, __ATOMIC_ACQUIRE);
}
void net_rcu_set_wanted(struct rte_rcu_qsbr *v);
/* net_state.c: the L4 layer registered with arn_net_set_l4, or NULL */
const struct arn_l4_ops *net_l4_registered(void);

/* ---- stats.c ------------------------------------------------------------------------------- */
/* Size lib/admin's per-worker stat slots and register the data plane's
 * counters as a pull source; undo at destroy. */
int net_admin_register(struct arn_net *net);
void net_admin_unregister(struct arn_net *net);
/* The device's counters of port @p p (rte_eth_stats plus af_packet's ring
 * drops). Returns 0, or the negative errno of rte_eth_stats_get. */
int net_port_nic_stats(struct arn_net *net, unsigned p, struct net_nic_stats *out);

/* Make @p net the process's current data plane (tests that assemble one). */
void net_set_current(struct arn_net *net);

static inline uint32_t net_prefix_mask(unsigned plen)
{
	return plen == 0 ? 0 : plen >= 32 ? 0xffffffffu : ~((1u << (32 - plen)) - 1);
}

#endif
