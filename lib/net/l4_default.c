/*
 * Weak defaults for the L4 side of arn_l4.h, so that lib/net links and its
 * tests run without lib/tcp. lib/tcp's strong definitions replace them.
 *
 * Static-archive caveat: the linker takes a symbol from the first archive
 * member that defines it, weak or not, and does not pull another member
 * just to replace a weak definition. lib/tcp's objects that define these
 * functions must therefore be linked whole (link_whole in arn_tcp_dep) or
 * be pulled in by some other symbol; arn_tcp_worker_init below says loudly
 * when the default is the one running.
 */
#include "arn_l4.h"
#include "arn_log.h"
#include "net_int.h"

#include <rte_mbuf.h>

__attribute__((weak)) void arn_tcp_input(struct arn_lcore *lc, struct rte_mbuf *m)
{
	(void)lc;
	rte_pktmbuf_free(m);
}

__attribute__((weak)) void arn_tcp_icmp_unreach(struct arn_lcore *lc, uint8_t code, uint16_t mtu,
						uint32_t src, uint32_t dst, uint16_t sport,
						uint16_t dport)
{
	(void)lc, (void)code, (void)mtu, (void)src, (void)dst, (void)sport, (void)dport;
}

__attribute__((weak)) int arn_tcp_worker_init(struct arn_lcore *lc,
					      const struct arn_dataplane *conf)
{
	(void)conf;
	if (lc->index == 0)
		ARN_INFO(NET,
			 "no TCP layer is linked: TCP segments are counted (tcp_rx) and dropped");
	return 0;
}

__attribute__((weak)) void arn_tcp_worker_poll(struct arn_lcore *lc, uint64_t now_tsc)
{
	(void)lc, (void)now_tsc;
}

__attribute__((weak)) void arn_tcp_worker_fini(struct arn_lcore *lc)
{
	(void)lc;
}
