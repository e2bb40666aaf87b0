/*
 * Hooks of subsystems that are not wired yet. Each moves to its own
 * app_<subsystem>.c when the subsystem lands (and leaves this file).
 */
#include <time.h>

#include "app.h"
#include "arn_log.h"

int arn_app_config_start(struct arn_app *app)
{
	(void)app;
	return 0;
}

void arn_app_config_poll(struct arn_app *app)
{
	(void)app;
}

void arn_app_config_stop(struct arn_app *app)
{
	(void)app;
}

int arn_app_net_start(struct arn_app *app)
{
	if (app->bootstrap->dp.present)
		ARN_WARN(MAIN, "the data plane is not built yet; dataplane: is ignored");
	return 0;
}

void arn_app_net_stop(struct arn_app *app)
{
	(void)app;
}

int arn_app_admin_start(struct arn_app *app)
{
	(void)app;
	return 0;
}

void arn_app_admin_poll(struct arn_app *app)
{
	(void)app;
}

void arn_app_admin_stop(struct arn_app *app)
{
	(void)app;
}

int arn_app_xds_start(struct arn_app *app)
{
	if (app->bootstrap->ads)
		ARN_INFO(MAIN, "waiting for the control plane (cluster %s); the xDS client is "
			       "not built yet",
			 app->bootstrap->xds_clusters[0]);
	return 0;
}

void arn_app_xds_poll(struct arn_app *app, int max_wait_ms)
{
	(void)app;
	struct timespec ts = {0, (long)max_wait_ms * 1000000L};
	nanosleep(&ts, NULL);
}

void arn_app_xds_stop(struct arn_app *app)
{
	(void)app;
}
