/*
 * Serve mode's data plane hooks: EAL (dataplane.eal_args, then the
 * command line's arguments after --), ports and worker lcores at start;
 * workers stopped and drained, ports released and the EAL cleaned up at
 * stop. The control lcore is the EAL main lcore: serve.c keeps running the
 * xDS / admin / config loop on it.
 *
 * Workers report RCU quiescent states to the configuration store's QSBR
 * (arn_config_rcu), which started before us; its thread ids are lcore ids,
 * below ARN_CONFIG_MAX_READERS (= RTE_MAX_LCORE).
 */
#include <errno.h>

#include <rte_config.h>

#include "app.h"
#include "arn_config.h"
#include "arn_log.h"
#include "arn_l4.h"
#include "arn_net.h"
#include "arn_tcp.h"

_Static_assert(ARN_CONFIG_MAX_READERS >= RTE_MAX_LCORE,
	       "workers register on the config QSBR with their lcore id");

int arn_app_net_start(struct arn_app *app)
{
	const struct arn_dataplane *dp = &app->bootstrap->dp;
	if (!dp->present) {
		if (app->eal_argc > 0)
			ARN_WARN(MAIN, "EAL arguments given after -- but the configuration has no "
				       "dataplane: section; they are ignored");
		ARN_INFO(MAIN, "no dataplane: section; running the control plane only");
		return 0;
	}
	/* lib/net calls the TCP stack through its ops table only */
	arn_net_set_l4(&arn_tcp_l4_ops);
	int rc = arn_net_eal_init(dp, app->eal_argc, app->eal_argv);
	if (rc != 0)
		return rc;
	struct arn_net *net = arn_net_create(dp);
	if (net == NULL) {
		rc = errno ? -errno : -EINVAL;
		arn_net_eal_cleanup();
		return rc;
	}
	if (app->config != NULL)
		arn_net_set_rcu(arn_config_rcu(app->config));
	rc = arn_net_launch(net);
	if (rc != 0) {
		arn_net_set_rcu(NULL);
		arn_net_destroy(net);
		arn_net_eal_cleanup();
		return rc;
	}
	app->net = net;
	return 0;
}

void arn_app_net_stop(struct arn_app *app)
{
	struct arn_net *net = app->net;
	if (net == NULL)
		return;
	arn_net_stop(net); /* workers have left the QSBR */
	arn_net_set_rcu(NULL);
	arn_net_destroy(net);
	arn_net_eal_cleanup();
	app->net = NULL;
	ARN_INFO(MAIN, "data plane stopped; ports released");
}
