/*
 * libFuzzer target: arbitrary frames into a two-worker data plane on net_ring
 * ports, through the whole receive path (Ethernet, ARP, IPv4, ICMP, the
 * hand-off to the flow's owner) and out of the TX rings, plus arbitrary L4
 * payloads through arn_net_ip4_output (routing, ARP resolution and queueing).
 *
 * Input: byte 0 chooses what to do with the rest:
 *   bit 0   the RX queue (worker) the frame arrives on
 *   bit 1   keep the frame's destination MAC (else it is set to the port's)
 *   bit 2   send the rest as an L4 payload to 198.18.0.<byte 1> instead
 *
 * After every input both workers run until idle and what they sent is
 * freed; every mbuf of the input pool must then be back: a frame the stack
 * forgot to free or send aborts the run.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "arn_bootstrap.h"
#include "arn_log.h"
#include "arn_net.h"
#include "net_int.h"

static struct rte_mempool *pool;
static struct rte_ring *rx[2], *tx[2];
static struct arn_net *net;
static struct rte_ether_addr mac;

/* The TCP layer: take segments and drop them, as a closed port would. */
void arn_tcp_input(struct arn_lcore *lc, struct rte_mbuf *m)
{
	(void)lc;
	rte_pktmbuf_free(m);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	char *eal[] = {"fuzz_net_input", "--no-huge",	"--no-pci",    "--no-shconf",	"-m", "128",
		       "--lcores",	 "0@0,1@0,2@0", "--log-level", "lib.eal:error", NULL};
	arn_log_set_spec("critical", NULL);
	if (rte_eal_init((int)(sizeof(eal) / sizeof(eal[0])) - 1, eal) < 0)
		abort();
	pool = rte_pktmbuf_pool_create("fuzz_pool", 1023, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, 0);
	char name[RTE_ETH_NAME_MAX_LEN];
	for (int q = 0; q < 2; q++) {
		snprintf(name, sizeof(name), "fz_rx%d", q);
		rx[q] = rte_ring_create(name, 256, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
		snprintf(name, sizeof(name), "fz_tx%d", q);
		tx[q] = rte_ring_create(name, 1024, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
	}
	int pid = rte_eth_from_rings("fz", rx, 2, tx, 2, 0);
	if (pool == NULL || pid < 0 || rte_eth_dev_get_name_by_port((uint16_t)pid, name) != 0)
		abort();
	static unsigned workers[2] = {1, 2};
	static struct arn_dp_port port = {.name = "wan",
					  .ipv4 = 0xc6120002, /* 198.18.0.2 */
					  .prefix_len = 24,
					  .gateway = 0xc61200fe,
					  .mtu = 1500,
					  .rx_descriptors = 256,
					  .tx_descriptors = 256};
	static struct arn_dataplane dp;
	port.device = strdup(name);
	dp.present = true;
	dp.control_lcore = -1;
	dp.worker_lcores = workers;
	dp.n_workers = 2;
	dp.ports = &port;
	dp.n_ports = 1;
	dp.mbufs_per_socket = 2047;
	dp.mbuf_cache_size = 0;
	dp.mbuf_data_room = RTE_MBUF_DEFAULT_BUF_SIZE;
	net = arn_net_create(&dp);
	if (net == NULL)
		abort();
	mac = net->port[0].mac;
	return 0;
}

static void settle(void)
{
	for (int round = 0; round < 4; round++)
		for (unsigned w = 0; w < 2; w++)
			for (int i = 0; i < 8 && net_worker_iteration(net->lc[w]); i++)
				;
	struct rte_mbuf *m;
	for (int q = 0; q < 2; q++)
		while (rte_ring_dequeue(tx[q], (void **)&m) == 0)
			rte_pktmbuf_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 1 + 1600)
		return 0;
	uint8_t mode = data[0];
	data++, size--;
	if (mode & 4) {
		if (size < 1 || size > 1480)
			return 0;
		struct arn_lcore *lc = net->lc[mode & 1];
		struct rte_mbuf *m = arn_net_alloc(lc);
		if (m == NULL)
			return 0;
		char *p = rte_pktmbuf_append(m, (uint16_t)(size - 1));
		if (size > 1)
			memcpy(p, data + 1, size - 1);
		arn_net_ip4_output(lc, m, 0xc6120002, 0xc6120000 | data[0], data[0] & 0x3f);
	} else {
		struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
		if (m == NULL)
			abort(); /* the pool is back to full after every input */
		char *p = rte_pktmbuf_append(m, (uint16_t)size);
		memcpy(p, data, size);
		if (!(mode & 2) && size >= 6)
			memcpy(p, &mac, 6);
		if (rte_ring_enqueue(rx[mode & 1], m) != 0)
			rte_pktmbuf_free(m);
	}
	settle();
	if (rte_mempool_in_use_count(pool) != 0) {
		fprintf(stderr, "fuzz_net_input: %u mbufs of the input not freed\n",
			rte_mempool_in_use_count(pool));
		abort();
	}
	return 0;
}
