/*
 * The process-wide state of lib/net, at the bottom of the module so that
 * the data plane's start and stop (net.c), its workers (worker.c) and its
 * statistics (stats.c) all read it without calling each other: the data
 * plane of this process, the configuration's RCU QSBR that workers must
 * follow, and the L4 layer the application registered.
 */
#include "arn_l4.h"
#include "net_int.h"

static struct arn_net *current;
struct rte_rcu_qsbr *net_rcu_want;
static const struct arn_l4_ops *l4_registered;

struct arn_net *arn_net_current(void)
{
	return current;
}

void net_set_current(struct arn_net *net)
{
	current = net;
}

void net_rcu_set_wanted(struct rte_rcu_qsbr *v)
{
	__atomic_store_n(&net_rcu_want, v, __ATOMIC_RELEASE);
}

void arn_net_set_l4(const struct arn_l4_ops *ops)
{
	l4_registered = ops;
}

const struct arn_l4_ops *net_l4_registered(void)
{
	return l4_registered;
}
