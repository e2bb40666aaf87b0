/*
 * Ports: find or probe the device, configure one RX and one TX queue per
 * worker, MTU, checksum offloads and symmetric RSS when the device has them,
 * start it and report what it became.
 *
 * RSS is "hardware" only for PCI devices that take a 40-byte Toeplitz key,
 * hash IPv4/TCP and have a redirection table: then the NIC and
 * arn_net_flow_worker agree. Virtual devices (net_tap, net_af_packet,
 * net_af_xdp) spread packets over their queues by the kernel's (or the
 * NIC's) hash; there lib/net's software hash decides and input.c hands
 * packets to their owners.
 *
 * Ring sizes: rx_descriptors is what a NIC's RX queue gets; net_af_packet
 * takes its ring size only as a device argument (framecnt, one size for its
 * RX and TX rings) and net_tap's queue is its kernel interface's
 * txqueuelen, so both are set from rx_descriptors here. net_af_xdp takes
 * the descriptor counts of the queue setup as its XSK ring sizes.
 *
 * net_af_xdp binds one XDP socket per worker to queues start_queue ..
 * start_queue + queue_count - 1 of a kernel interface and loads an XDP
 * program (libxdp's xsk_def_prog) that redirects every frame arriving on
 * those queues to them; its UMEM is the worker's mempool itself (no copy
 * on receive). What can go wrong is checked before DPDK tries, because
 * the PMD's own messages ("Failed to create umem", "Invalid argument")
 * do not say what to change: see afx_check and afx_memlock.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <linux/ethtool.h>
#include <linux/if_packet.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <rte_dev.h>
#include <rte_ethdev.h>
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "arn_dataplane.h"
#include "arn_log.h"
#include "net_int.h"
#include "vpkt.h"

#ifndef AF_XDP
#define AF_XDP 44 /* <linux/socket.h>; older C libraries lack it */
#endif

/* lib/bootstrap checks MTU against the mbuf size before the EAL starts,
 * with this headroom written out (it does not include DPDK's headers). */
_Static_assert(RTE_PKTMBUF_HEADROOM == 128, "update DP_MBUF_HEADROOM in lib/bootstrap/dataplane.c");

static bool starts_with(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

/* The device name of a devargs string: up to the first comma. */
static void dev_name(const char *devargs, char *out, size_t n)
{
	size_t len = strcspn(devargs, ",");
	if (len >= n)
		len = n - 1;
	memcpy(out, devargs, len);
	out[len] = '\0';
}

/* The value of device argument @p key in @p devargs ("dev,key=value,..."),
 * or NULL when it is not there. */
static const char *devarg(const char *devargs, const char *key)
{
	size_t kl = strlen(key);
	for (const char *a = strchr(devargs, ','); a != NULL; a = strchr(a, ',')) {
		a++;
		if (strncmp(a, key, kl) == 0 && a[kl] == '=')
			return a + kl + 1;
	}
	return NULL;
}

static unsigned long devarg_ul(const char *devargs, const char *key, unsigned long dflt)
{
	const char *v = devarg(devargs, key);
	return v ? strtoul(v, NULL, 10) : dflt;
}

/* np->device for net_af_packet: one queue pair per worker (qpairs) and
 * rx_descriptors frames per ring (framecnt; the PMD's default is 512 and
 * it ignores the descriptor counts of rte_eth_rx_queue_setup), unless the
 * operator wrote them in the device string. The kernel wants the frame
 * count to be a whole number of blocks (blocksz / framesz frames each). */
static void afp_devargs(struct net_port *np, const char *devargs, unsigned workers,
			unsigned rx_desc)
{
	int len = snprintf(np->device, sizeof(np->device), "%s", devargs);
	if (workers > 1 && !devarg(devargs, "qpairs"))
		len += snprintf(np->device + len, sizeof(np->device) - (size_t)len, ",qpairs=%u",
				workers);
	if (!devarg(devargs, "framecnt")) {
		unsigned long block = devarg_ul(devargs, "blocksz", (unsigned long)getpagesize());
		unsigned long frame = devarg_ul(devargs, "framesz", 2048);
		unsigned long per = frame && block >= frame ? block / frame : 1;
		unsigned long cnt = (rx_desc + per - 1) / per * per;
		snprintf(np->device + len, sizeof(np->device) - (size_t)len, ",framecnt=%lu", cnt);
	}
}

/* np->device for net_af_xdp: one queue per worker (queue_count), unless
 * the operator wrote it in the device string; start_queue stays the
 * PMD's default (0) unless written. */
static void afx_devargs(struct net_port *np, const char *devargs, unsigned workers)
{
	int len = snprintf(np->device, sizeof(np->device), "%s", devargs);
	if (!devarg(devargs, "queue_count"))
		snprintf(np->device + len, sizeof(np->device) - (size_t)len, ",queue_count=%u",
			 workers);
}

/* The ethtool command @p cmd (its struct, .cmd set) on interface @p ifn.
 * @return true when the kernel answered it. */
static bool if_ethtool(const char *ifn, void *cmd)
{
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_data = cmd;
	return net_if_ioctl(ifn, SIOCETHTOOL, &ifr) == 0;
}

/* The receive queues of interface @p ifn as ethtool counts them (combined
 * channels, and separate RX channels as a veth has): 0 when the driver
 * does not say. @p combined: the combined channels alone. */
static unsigned if_rx_channels(const char *ifn, unsigned *combined)
{
	struct ethtool_channels ch = {.cmd = ETHTOOL_GCHANNELS};
	*combined = 0;
	if (!if_ethtool(ifn, &ch))
		return 0;
	*combined = ch.combined_count;
	return ch.combined_count + ch.rx_count;
}

/*
 * TCP checksums on a veth. Linux's own stack does not verify what a veth
 * delivers: veth_xmit marks a packet whose checksum nobody vouched for
 * CHECKSUM_UNNECESSARY when the receiving veth has rx-checksumming on
 * (the default), since it never crossed a wire. net_af_packet and
 * net_af_xdp on such a veth say nothing per packet (DPDK 22.11 reads no
 * checksum status from either), so Arion verified every TCP segment in
 * software: in bench/proxy/run's downloads a third of its checksum work
 * (the other two: the sender's, and Arion's own for what it sends),
 * where nginx in the same place pays one. Such a port's TCP checksums are
 * now taken as Linux's stack would take them, and only there: another
 * driver (a NIC under net_af_xdp) is verified as before, as is a veth
 * with rx-checksumming off (`ethtool -K IF rx off`, the operator's
 * switch, which Linux obeys too). IPv4 header checksums are verified
 * whatever the port (Linux does as well).
 */
static bool if_l4_cksum_vouched(const char *ifn)
{
	struct ethtool_drvinfo di = {.cmd = ETHTOOL_GDRVINFO};
	struct ethtool_value rx = {.cmd = ETHTOOL_GRXCSUM};
	return if_ethtool(ifn, &di) && strcmp(di.driver, "veth") == 0 && if_ethtool(ifn, &rx) &&
	       rx.data != 0;
}

/* What net_af_xdp needs before DPDK probes it: the interface, XDP sockets
 * in the kernel, and as many queues as the port binds. DPDK 22.11's PMD
 * counts only combined channels (a NIC's); an interface with none, such as
 * a veth, offers it one queue whatever its RX channels. Queues of the
 * interface that the port does not bind deliver to the kernel's stack (the
 * XDP program passes what no socket is bound for): a flow the interface
 * hashes there never reaches Arion. */
static int afx_check(const struct net_port *np, const char *ifn, unsigned workers)
{
	if (if_nametoindex(ifn) == 0) {
		ARN_ERR(NET,
			"port %s: net_af_xdp's interface '%s' does not exist (device '%s'): "
			"create it or fix iface= (`ip link show` lists them)",
			np->name, ifn, np->device);
		return -ENODEV;
	}
	int s = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (s < 0) {
		int e = errno;
		ARN_ERR(NET,
			"port %s: cannot open an XDP socket (%s): %s; use net_af_packet on "
			"this machine",
			np->name, strerror(e),
			e == EAFNOSUPPORT ? "this kernel has no AF_XDP (CONFIG_XDP_SOCKETS, Linux "
					    "4.18 and later)"
					  : "net_af_xdp needs root (CAP_NET_RAW and CAP_BPF or "
					    "CAP_SYS_ADMIN)");
		return -e;
	}
	close(s);
	unsigned long start = devarg_ul(np->device, "start_queue", 0);
	unsigned long count = devarg_ul(np->device, "queue_count", 1);
	unsigned combined;
	unsigned rxq = if_rx_channels(ifn, &combined);
	unsigned usable = combined ? combined : 1;
	if (start + count > usable && combined) {
		ARN_ERR(NET,
			"port %s: net_af_xdp binds queues %lu..%lu of '%s' (one per worker: %u) "
			"but it has %u combined channels: raise them (`ethtool -L %s combined "
			"%lu`) or use fewer workers",
			np->name, start, start + count - 1, ifn, workers, combined, ifn,
			start + count);
		return -EINVAL;
	}
	if (start + count > usable) {
		ARN_ERR(NET,
			"port %s: net_af_xdp binds queues %lu..%lu of '%s' (one per worker: %u) "
			"but DPDK's af_xdp PMD counts only combined channels, and '%s' has none "
			"(a veth has none): it offers one queue, 0. Use 1 worker on this "
			"interface, or net_af_packet (qpairs=N) for more",
			np->name, start, start + count - 1, ifn, workers, ifn);
		return -EINVAL;
	}
	if (rxq > count || start > 0)
		ARN_WARN(NET,
			 "port %s: '%s' has %u receive queues and the port binds %lu..%lu: frames "
			 "the interface puts on the others go to the kernel, not to Arion. Make "
			 "them equal (`ethtool -L %s %s %lu`; on a veth, the peer's TX queues too)",
			 np->name, ifn, rxq, start, start + count - 1, ifn,
			 combined ? "combined" : "rx", count);
	return 0;
}

/* Does this process have CAP_IPC_LOCK (exempt from RLIMIT_MEMLOCK)? */
static bool cap_ipc_lock(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	if (f == NULL)
		return true; /* cannot tell: let the kernel decide */
	char line[256];
	unsigned long long eff = ~0ull;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	fclose(f);
	return (eff >> 14) & 1; /* CAP_IPC_LOCK */
}

/* net_af_xdp registers each queue's mempool as a UMEM, which the kernel pins
 * and charges to RLIMIT_MEMLOCK unless the process has CAP_IPC_LOCK. The
 * PMD then only says "Failed to create umem". */
static int afx_memlock(const struct net_port *np, struct rte_mempool *mp, unsigned queues)
{
	struct rlimit rl;
	if (cap_ipc_lock() || getrlimit(RLIMIT_MEMLOCK, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
		return 0;
	size_t obj = mp->header_size + mp->elt_size + mp->trailer_size;
	unsigned long long need = (unsigned long long)mp->size * obj * queues;
	if (rl.rlim_cur >= need)
		return 0;
	ARN_ERR(NET,
		"port %s: net_af_xdp pins its mbuf pool (%llu KiB for %u queue(s)) but the "
		"locked-memory limit is %llu KiB and the process lacks CAP_IPC_LOCK: raise it "
		"(`ulimit -l %llu`, LimitMEMLOCK= in a systemd unit) or run as root",
		np->name, need / 1024, queues, (unsigned long long)rl.rlim_cur / 1024,
		(need + 1023) / 1024 + 1024);
	return -ENOBUFS;
}

static int find_pci(const char *addr, uint16_t *pid)
{
	char want[64];
	/* Accept the short form BB:DD.F as the kernel's 0000:BB:DD.F. */
	snprintf(want, sizeof(want), "%s%s", strlen(addr) == 7 ? "0000:" : "", addr);
	uint16_t p;
	RTE_ETH_FOREACH_DEV (p) {
		char name[RTE_ETH_NAME_MAX_LEN];
		if (rte_eth_dev_get_name_by_port(p, name) == 0 &&
		    strncasecmp(name, want, 12) == 0) {
			*pid = p;
			return 0;
		}
	}
	return -ENODEV;
}

static void probe_hint(const struct net_port *np, const char *devargs, int err)
{
	const char *iface = strstr(devargs, "iface=");
	char ifn[32] = "";
	if (iface)
		dev_name(iface + 6, ifn, sizeof(ifn));
	if (starts_with(devargs, "net_af_packet"))
		ARN_ERR(NET,
			"port %s: net_af_packet needs an existing network interface "
			"(iface=%s): check `ip link show %s`, and run as root",
			np->name, ifn, ifn);
	else if (starts_with(devargs, "net_af_xdp"))
		ARN_ERR(NET,
			"port %s: net_af_xdp could not bind to interface %s: DPDK's messages "
			"above say why (another XDP program on it? `ip link show %s`)",
			np->name, ifn, ifn);
	else if (starts_with(devargs, "net_tap"))
		ARN_ERR(NET,
			"port %s: net_tap needs /dev/net/tun, root, and a free interface "
			"name (iface=%s)",
			np->name, ifn);
	else
		ARN_ERR(
		    NET,
		    "port %s: no DPDK driver accepted '%s' (%s): check the driver name "
		    "(net_tap, net_af_packet, net_af_xdp, ...), its arguments, and that its PMD "
		    "(librte_net_*) is installed",
		    np->name, devargs, rte_strerror(-err));
}

/* Find the ethdev of @p np, probing a virtual device when it is not there. */
static int port_find(struct net_port *np, bool is_pci, unsigned workers)
{
	if (is_pci) {
		if (find_pci(np->device, &np->port_id) == 0)
			return 0;
		int rc = rte_dev_probe(np->device);
		if (rc == 0 && find_pci(np->device, &np->port_id) == 0) {
			np->probed = true;
			return 0;
		}
		ARN_ERR(NET,
			"port %s: PCI device %s not found (%s). Bind it to vfio-pci "
			"(dpdk-devbind.py --bind=vfio-pci %s) and do not exclude it from the "
			"EAL (--no-pci, -b, -a)",
			np->name, np->device, rc ? rte_strerror(-rc) : "not an ethdev", np->device);
		return -ENODEV;
	}
	char name[RTE_ETH_NAME_MAX_LEN];
	dev_name(np->device, name, sizeof(name));
	if (rte_eth_dev_get_port_by_name(name, &np->port_id) == 0)
		return 0; /* created by --vdev in the EAL arguments */
	/* A missing interface is the usual mistake with net_af_packet; DPDK
	 * reports it as "Operation not permitted", which sends a root user
	 * looking for a permission problem. Say what it is, before probing. */
	const char *iface = strstr(np->device, "iface=");
	if (starts_with(np->device, "net_af_packet") && iface) {
		char ifn[IF_NAMESIZE + 1];
		dev_name(iface + 6, ifn, sizeof(ifn));
		if (if_nametoindex(ifn) == 0) {
			ARN_ERR(NET,
				"port %s: net_af_packet's interface '%s' does not exist (device "
				"'%s'): create it or fix iface= (`ip link show` lists them)",
				np->name, ifn, np->device);
			return -ENODEV;
		}
	}
	if (starts_with(np->device, "net_af_xdp") && iface) {
		char ifn[IF_NAMESIZE + 1];
		dev_name(iface + 6, ifn, sizeof(ifn));
		int rc = afx_check(np, ifn, workers);
		if (rc != 0)
			return rc;
	}
	int rc = rte_dev_probe(np->device);
	if (rc != 0) {
		ARN_ERR(NET, "port %s: DPDK could not create device '%s' (its probe returned %d)",
			np->name, np->device, rc);
		probe_hint(np, np->device, rc);
		return -ENODEV;
	}
	np->probed = true;
	if (rte_eth_dev_get_port_by_name(name, &np->port_id) != 0) {
		ARN_ERR(NET, "port %s: device '%s' was probed but is not an Ethernet port named %s",
			np->name, np->device, name);
		return -ENODEV;
	}
	return 0;
}

/* Is @p fd one of the af_packet sockets of a port set up before @p np? */
static bool afp_claimed(const struct arn_net *net, const struct net_port *np, int fd)
{
	for (const struct net_port *o = net->port; o < np; o++)
		for (unsigned i = 0; i < o->n_afp_fd; i++)
			if (o->afp_fd[i] == fd)
				return true;
	return false;
}

/* Find the sockets of the net_af_packet port @p np (interface @p ifindex,
 * @p nq queue pairs). DPDK 22.11's PMD reports no imissed, though the kernel
 * drops every frame that finds a socket's receive ring full (and counts it
 * in that socket's PACKET_STATISTICS), and it keeps its sockets in private
 * structures. The kernel knows them: this process's AF_PACKET sockets bound
 * to the port's interface, one per queue pair, opened when the port was
 * probed. If they cannot be told apart, say so rather than count wrong. */
static void afp_find_sockets(const struct arn_net *net, struct net_port *np, int ifindex,
			     unsigned nq)
{
	np->n_afp_fd = 0;
	DIR *d = opendir("/proc/self/fd");
	if (d == NULL) {
		ARN_WARN(NET,
			 "port %s: cannot list /proc/self/fd (%s): frames the kernel drops "
			 "for a full af_packet receive ring are not counted in nic_rx_missed",
			 np->name, strerror(errno));
		return;
	}
	unsigned found = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		char *end;
		long fd = strtol(e->d_name, &end, 10);
		if (e->d_name[0] < '0' || e->d_name[0] > '9' || *end != '\0' || fd == dirfd(d))
			continue;
		int dom = 0;
		socklen_t l = sizeof(dom);
		if (getsockopt((int)fd, SOL_SOCKET, SO_DOMAIN, &dom, &l) != 0 || dom != AF_PACKET)
			continue;
		struct sockaddr_ll sll;
		l = sizeof(sll);
		if (getsockname((int)fd, (struct sockaddr *)&sll, &l) != 0 ||
		    sll.sll_ifindex != ifindex || afp_claimed(net, np, (int)fd))
			continue;
		if (found < RTE_DIM(np->afp_fd))
			np->afp_fd[found] = (int)fd;
		found++;
	}
	closedir(d);
	if (found != nq) {
		ARN_WARN(NET,
			 "port %s: %u af_packet sockets on interface index %d for %u queue "
			 "pairs; frames the kernel drops for a full receive ring are not "
			 "counted in nic_rx_missed",
			 np->name, found, ifindex, nq);
		return;
	}
	np->n_afp_fd = found;
}

uint64_t net_port_afp_drops(struct net_port *np)
{
	for (unsigned i = 0; i < np->n_afp_fd; i++) {
		/* TPACKET_V2 sockets fill the first two fields (tpacket_stats);
		 * the read resets the kernel's counts, hence the sum. */
		struct tpacket_stats_v3 st;
		socklen_t l = sizeof(st);
		memset(&st, 0, sizeof(st));
		if (getsockopt(np->afp_fd[i], SOL_PACKET, PACKET_STATISTICS, &st, &l) == 0 &&
		    st.tp_drops)
			__atomic_fetch_add(&np->afp_drops, st.tp_drops, __ATOMIC_RELAXED);
	}
	return __atomic_load_n(&np->afp_drops, __ATOMIC_RELAXED);
}

/* net_tap: the kernel queues frames for the port in the TAP interface's
 * queue, txqueuelen long (1000 by default); make it rx_descriptors. */
static void tap_queue_len(const struct net_port *np, int ifindex, unsigned len)
{
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_qlen = (int)len;
	char ifn[IF_NAMESIZE];
	int rc = if_indextoname((unsigned)ifindex, ifn) == NULL
		     ? -errno
		     : net_if_ioctl(ifn, SIOCSIFTXQLEN, &ifr);
	if (rc != 0)
		ARN_WARN(NET,
			 "port %s: cannot set the TAP interface's queue to rx_descriptors (%u "
			 "frames): %s; it keeps its txqueuelen",
			 np->name, len, strerror(-rc));
}

/* Link changes, reported by devices that interrupt on them (real NICs).
 * Runs on the EAL interrupt thread, never on a worker. */
static int lsc_event(uint16_t pid, enum rte_eth_event_type type, void *arg, void *ret)
{
	(void)type, (void)ret;
	const struct net_port *np = arg;
	struct rte_eth_link link = {0};
	char ls[RTE_ETH_LINK_MAX_STR_LEN] = "link unknown";
	if (rte_eth_link_get_nowait(pid, &link) == 0)
		rte_eth_link_to_str(ls, sizeof(ls), &link);
	if (link.link_status)
		ARN_INFO(NET, "port %s: %s", np->name, ls);
	else
		ARN_WARN(NET, "port %s: %s", np->name, ls);
	return 0;
}

int net_port_setup(struct arn_net *net, unsigned idx, const struct arn_dp_port *pc)
{
	const struct arn_dataplane *dp = net->dp;
	struct net_port *np = &net->port[idx];
	unsigned n = net->n_workers;
	snprintf(np->name, sizeof(np->name), "%s", pc->name);
	np->ip = pc->ipv4;
	np->mask = net_prefix_mask(pc->prefix_len);
	np->gateway = pc->gateway;
	np->routes = pc->routes;
	np->n_routes = pc->n_routes;
	np->mtu = pc->mtu;
	if (starts_with(pc->device, VPKT_PREFIX)) {
		/* not an ethdev: a port_id no ethdev has, which keeps net.c's
		 * check that two ports are not the same device meaningful */
		np->port_id = (uint16_t)(RTE_MAX_ETHPORTS + idx);
		const char *iface = devarg(pc->device, "iface");
		char ifn[IF_NAMESIZE + 1] = "";
		if (iface)
			dev_name(iface, ifn, sizeof(ifn));
		return net_vpkt_setup(np, pc, ifn, n, net->lc);
	}
	if (starts_with(pc->device, "net_af_packet"))
		afp_devargs(np, pc->device, n, pc->rx_descriptors);
	else if (starts_with(pc->device, "net_af_xdp"))
		afx_devargs(np, pc->device, n);
	else
		snprintf(np->device, sizeof(np->device), "%s", pc->device);

	int rc = port_find(np, pc->is_pci, n);
	if (rc != 0)
		return rc;
	uint16_t pid = np->port_id;
	struct rte_eth_dev_info info;
	rc = rte_eth_dev_info_get(pid, &info);
	if (rc != 0) {
		ARN_ERR(NET, "port %s: cannot read device info: %s", np->name, rte_strerror(-rc));
		return rc;
	}
	if (info.max_rx_queues < n || info.max_tx_queues < n) {
		ARN_ERR(NET,
			"port %s (%s): the device has %u RX and %u TX queues; %u workers need "
			"%u of each%s",
			np->name, np->device, info.max_rx_queues, info.max_tx_queues, n, n,
			starts_with(np->device, "net_af_packet") ? " (net_af_packet: qpairs=N)"
			: starts_with(np->device, "net_af_xdp")	 ? " (net_af_xdp: queue_count=N)"
								 : "");
		return -EINVAL;
	}
	if (starts_with(np->device, "net_af_packet"))
		afp_find_sockets(net, np, (int)info.if_index, info.max_rx_queues);
	else if (starts_with(np->device, "net_tap"))
		tap_queue_len(np, (int)info.if_index, pc->rx_descriptors);
	if (info.max_mtu && np->mtu > info.max_mtu) {
		ARN_ERR(NET, "port %s: mtu %u is above the device's maximum %u", np->name, np->mtu,
			info.max_mtu);
		return -EINVAL;
	}

	struct rte_eth_conf conf;
	memset(&conf, 0, sizeof(conf));
	conf.rxmode.mtu = np->mtu;
	uint32_t frame = np->mtu + RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN + 4 /* VLAN */;
	if (frame > (uint32_t)dp->mbuf_data_room - RTE_PKTMBUF_HEADROOM) {
		if (!(info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_SCATTER)) {
			ARN_ERR(NET,
				"port %s: mtu %u needs frames of %u bytes but mbufs hold %u "
				"and the device cannot scatter; raise "
				"dataplane.mbuf_pool.data_room_size to %u",
				np->name, np->mtu, frame, dp->mbuf_data_room - RTE_PKTMBUF_HEADROOM,
				frame + RTE_PKTMBUF_HEADROOM);
			return -EINVAL;
		}
		conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_SCATTER;
	}
	if (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_IPV4_CKSUM) {
		conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_IPV4_CKSUM;
		np->rx_ip_cksum = true;
	}
	if (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_TCP_CKSUM)
		conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_TCP_CKSUM;
	if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM) {
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
		np->tx_ip_cksum = true;
	}
	if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_TCP_CKSUM) {
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_TCP_CKSUM;
		np->tx_tcp_cksum = true;
	}
	if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS)
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	if (*info.dev_flags & RTE_ETH_DEV_INTR_LSC) {
		conf.intr_conf.lsc = 1;
		if (rte_eth_dev_callback_register(pid, RTE_ETH_EVENT_INTR_LSC, lsc_event, np) == 0)
			np->lsc = true;
	}

	static uint8_t key[40];
	memcpy(key, net_rss_key, sizeof(key));
	np->rss_hw =
	    pc->is_pci && n > 1 && (info.flow_type_rss_offloads & RTE_ETH_RSS_NONFRAG_IPV4_TCP) &&
	    info.hash_key_size == sizeof(key) && info.reta_size >= RTE_ETH_RETA_GROUP_SIZE &&
	    (info.reta_size & (info.reta_size - 1)) == 0;
	if (np->rss_hw) {
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		conf.rx_adv_conf.rss_conf.rss_key = key;
		conf.rx_adv_conf.rss_conf.rss_key_len = sizeof(key);
		conf.rx_adv_conf.rss_conf.rss_hf = RTE_ETH_RSS_NONFRAG_IPV4_TCP;
	}

	rc = rte_eth_dev_configure(pid, (uint16_t)n, (uint16_t)n, &conf);
	if (rc != 0) {
		ARN_ERR(NET, "port %s (%s): cannot configure %u queue pairs: %s", np->name,
			np->device, n, rte_strerror(-rc));
		return rc;
	}
	np->configured = true;
	bool afx = starts_with(np->device, "net_af_xdp");
	if (afx && (rc = afx_memlock(np, net->lc[0]->pool, n)) != 0)
		return rc;
	uint16_t nb_rx = pc->rx_descriptors, nb_tx = pc->tx_descriptors;
	rc = rte_eth_dev_adjust_nb_rx_tx_desc(pid, &nb_rx, &nb_tx);
	if (rc != 0) {
		ARN_ERR(NET, "port %s: descriptor counts %u/%u refused: %s", np->name, nb_rx, nb_tx,
			rte_strerror(-rc));
		return rc;
	}
	for (unsigned q = 0; q < n; q++) {
		struct arn_lcore *lc = net->lc[q];
		struct rte_eth_rxconf rxc = info.default_rxconf;
		rxc.offloads = conf.rxmode.offloads;
		rc = rte_eth_rx_queue_setup(pid, (uint16_t)q, nb_rx, lc->socket, &rxc, lc->pool);
		if (rc != 0) {
			ARN_ERR(NET, "port %s: RX queue %u (%u descriptors, socket %u): %s",
				np->name, q, nb_rx, lc->socket, rte_strerror(-rc));
			if (afx)
				ARN_ERR(
				    NET,
				    "port %s: net_af_xdp could not open its XDP socket on queue "
				    "%lu: DPDK's messages above say which step failed. Check "
				    "that no other XDP program or socket holds the interface "
				    "(`ip link show`), the locked-memory limit (`ulimit -l`) "
				    "and that the queue exists (`ethtool -l`)",
				    np->name, devarg_ul(np->device, "start_queue", 0) + q);
			return rc;
		}
		struct rte_eth_txconf txc = info.default_txconf;
		txc.offloads = conf.txmode.offloads;
		rc = rte_eth_tx_queue_setup(pid, (uint16_t)q, nb_tx, lc->socket, &txc);
		if (rc != 0) {
			ARN_ERR(NET, "port %s: TX queue %u (%u descriptors): %s", np->name, q,
				nb_tx, rte_strerror(-rc));
			return rc;
		}
	}
	/* (a device that verifies TCP checksums itself needs none of it) */
	const char *iface = devarg(np->device, "iface");
	char ifn[IF_NAMESIZE + 1] = "";
	if (iface)
		dev_name(iface, ifn, sizeof(ifn));
	if ((afx || starts_with(np->device, "net_af_packet")) && *ifn &&
	    !(conf.rxmode.offloads & RTE_ETH_RX_OFFLOAD_TCP_CKSUM) && if_l4_cksum_vouched(ifn)) {
		/* the worker marks each burst's packets (worker.c, rx_port) */
		np->l4_cksum_vouched = true;
		ARN_INFO(NET,
			 "port %s: %s is a veth with rx-checksumming on: the TCP checksums it "
			 "delivers are taken unverified, as Linux's stack takes them (`ethtool "
			 "-K %s rx off` has them verified)",
			 np->name, ifn, ifn);
	}
	/* Some PMDs apply the MTU only through this call (net_tap sets the
	 * kernel interface's). */
	rc = rte_eth_dev_set_mtu(pid, np->mtu);
	if (rc != 0 && rc != -ENOTSUP)
		ARN_WARN(NET, "port %s: cannot set MTU %u (%s); continuing with the device's",
			 np->name, np->mtu, rte_strerror(-rc));
	rte_eth_macaddr_get(pid, &np->mac);
	return 0;
}

/* Program the NIC's RETA with net->reta. */
static int port_reta(struct arn_net *net, struct net_port *np)
{
	struct rte_eth_dev_info info;
	if (rte_eth_dev_info_get(np->port_id, &info) != 0)
		return -EIO;
	struct rte_eth_rss_reta_entry64 conf[NET_RETA_MAX * 8 / RTE_ETH_RETA_GROUP_SIZE];
	unsigned size = info.reta_size;
	if (size / RTE_ETH_RETA_GROUP_SIZE > RTE_DIM(conf))
		return -E2BIG;
	memset(conf, 0, sizeof(conf));
	for (unsigned i = 0; i < size; i++) {
		conf[i / RTE_ETH_RETA_GROUP_SIZE].mask |= 1ull << (i % RTE_ETH_RETA_GROUP_SIZE);
		conf[i / RTE_ETH_RETA_GROUP_SIZE].reta[i % RTE_ETH_RETA_GROUP_SIZE] =
		    net->reta[i & net->reta_mask];
	}
	return rte_eth_dev_rss_reta_update(np->port_id, conf, (uint16_t)size);
}

int net_ports_start(struct arn_net *net)
{
	for (unsigned i = 0; i < net->n_ports; i++) {
		struct net_port *np = &net->port[i];
		int rc = np->vpkt ? net_vpkt_start(net, np) : rte_eth_dev_start(np->port_id);
		if (rc != 0) {
			ARN_ERR(NET, "port %s (%s): cannot start: %s", np->name, np->device,
				rte_strerror(-rc));
			return rc;
		}
		np->started = true;
		if (np->rss_hw && (rc = port_reta(net, np)) != 0) {
			ARN_WARN(NET,
				 "port %s: cannot program the RSS redirection table (%s); flows "
				 "reaching the wrong worker are handed over in software",
				 np->name, rte_strerror(-rc));
			np->rss_hw = false;
		}
		struct rte_eth_link link;
		char ls[RTE_ETH_LINK_MAX_STR_LEN] = "link unknown";
		if (np->vpkt)
			snprintf(ls, sizeof(ls), "GRO in, GSO out");
		else if (rte_eth_link_get_nowait(np->port_id, &link) == 0)
			rte_eth_link_to_str(ls, sizeof(ls), &link);
		char mac[RTE_ETHER_ADDR_FMT_SIZE];
		rte_ether_format_addr(mac, sizeof(mac), &np->mac);
		unsigned plen = (unsigned)__builtin_popcount(np->mask);
		char gw[32] = "none";
		if (np->gateway)
			snprintf(gw, sizeof(gw), "%u.%u.%u.%u", np->gateway >> 24,
				 (np->gateway >> 16) & 0xff, (np->gateway >> 8) & 0xff,
				 np->gateway & 0xff);
		char offl[64];
		snprintf(offl, sizeof(offl), "rx %s, tx %s%s%s", np->rx_ip_cksum ? "ip" : "none",
			 np->tx_ip_cksum ? "ip" : "",
			 np->tx_ip_cksum && np->tx_tcp_cksum ? "+" : "",
			 np->tx_tcp_cksum ? "tcp" : (np->tx_ip_cksum ? "" : "none"));
		ARN_INFO(NET,
			 "port %s (%s, %s %u): %u.%u.%u.%u/%u gateway %s, MAC %s, MTU %u, %u "
			 "queue pairs, RSS %s, checksum offload %s; %s",
			 np->name, np->device, np->vpkt ? "Arion's own port" : "ethdev",
			 np->vpkt ? i : np->port_id, np->ip >> 24, (np->ip >> 16) & 0xff,
			 (np->ip >> 8) & 0xff, np->ip & 0xff, plen, gw, mac, np->mtu,
			 net->n_workers,
			 net->n_workers < 2 ? "not needed"
			 : np->rss_hw	    ? "in the NIC (symmetric Toeplitz)"
			 : np->rss_fanout   ? "in the kernel (a fanout program: symmetric Toeplitz)"
					    : "in software (hand-off to the owner)",
			 offl, ls);
	}
	return 0;
}

void net_ports_close(struct arn_net *net)
{
	for (unsigned i = 0; i < net->n_ports; i++) {
		struct net_port *np = &net->port[i];
		if (np->vpkt) {
			net_port_afp_drops(np); /* the last drops, before the sockets close */
			np->n_afp_fd = 0;
			np->started = false;
			net_vpkt_close(np);
			continue;
		}
		if (np->started) {
			int rc = rte_eth_dev_stop(np->port_id);
			if (rc != 0)
				ARN_WARN(NET, "port %s: stop: %s", np->name, rte_strerror(-rc));
			np->started = false;
		}
		if (np->lsc) {
			rte_eth_dev_callback_unregister(np->port_id, RTE_ETH_EVENT_INTR_LSC,
							lsc_event, np);
			np->lsc = false;
		}
		if (np->n_afp_fd) {
			/* The last drops, before the sockets close (and their
			 * numbers may be reused). */
			net_port_afp_drops(np);
			np->n_afp_fd = 0;
		}
		if (np->configured || np->probed) {
			rte_eth_dev_close(np->port_id);
			np->configured = false;
		}
		np->probed = false;
	}
}
