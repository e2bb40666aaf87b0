/*
 * Weak hooks for subsystems that are not wired yet: an app_<subsystem>.c
 * with the same functions replaces them (strong symbols win at link time),
 * so wiring a subsystem never needs to touch this file.
 */
#include <time.h>

#include "app.h"
#include "arn_log.h"

__attribute__((weak)) int arn_app_config_start(struct arn_app *app)
{
	(void)app;
	return 0;
}

__attribute__((weak)) void arn_app_config_poll(struct arn_app *app)
{
	(void)app;
}

__attribute__((weak)) void arn_app_config_stop(struct arn_app *app)
{
	(void)app;
}

__attribute__((weak)) int arn_app_http_start(struct arn_app *app)
{
	(void)app;
	return 0;
}

__attribute__((weak)) void arn_app_http_poll(struct arn_app *app)
{
	(void)app;
}

__attribute__((weak)) void arn_app_http_stop(struct arn_app *app)
{
	(void)app;
}

__attribute__((weak)) int arn_app_net_start(struct arn_app *app)
{
	if (app->bootstrap->dp.present)
		ARN_WARN(MAIN, "the data plane is not built yet; dataplane: is ignored");
	return 0;
}

__attribute__((weak)) void arn_app_net_stop(struct arn_app *app)
{
	(void)app;
}

__attribute__((weak)) int arn_app_admin_start(struct arn_app *app)
{
	(void)app;
	return 0;
}

__attribute__((weak)) void arn_app_admin_poll(struct arn_app *app)
{
	(void)app;
}

__attribute__((weak)) void arn_app_admin_stop(struct arn_app *app)
{
	(void)app;
}

__attribute__((weak)) int arn_app_xds_start(struct arn_app *app)
{
	if (app->bootstrap->ads)
		ARN_INFO(MAIN, "waiting for the control plane (cluster %s); the xDS client is "
			       "not built yet",
			 app->bootstrap->xds_clusters[0]);
	return 0;
}

__attribute__((weak)) void arn_app_xds_poll(struct arn_app *app, int max_wait_ms)
{
	(void)app;
	struct timespec ts = {0, (long)max_wait_ms * 1000000L};
	nanosleep(&ts, NULL);
}

__attribute__((weak)) void arn_app_xds_stop(struct arn_app *app)
{
	(void)app;
}
