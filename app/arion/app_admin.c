/*
 * Serve mode's admin hooks: the admin endpoint on the bootstrap's
 * admin.address (none configured: no endpoint, but access logs are still
 * drained here), polled from the control lcore's loop.
 */
#include <errno.h>

#include "app.h"
#include "arn_access_log.h"
#include "arn_admin.h"
#include "arn_log.h"

int arn_app_admin_start(struct arn_app *app)
{
	if (!app->bootstrap->has_admin) {
		ARN_INFO(ADMIN, "no envoy_bootstrap.admin.address: the admin endpoint is off");
		return 0;
	}
	struct arn_admin_options o = {
	    .bootstrap = app->bootstrap,
	    .port = -1,
	    .argc = app->argc,
	    .argv = app->argv,
	    .stop = &app->stop,
	};
	struct arn_admin *a = arn_admin_start(&o);
	if (a == NULL)
		return -EINVAL;
	app->admin = a;
	return 0;
}

void arn_app_admin_poll(struct arn_app *app)
{
	arn_admin_poll(app->admin); /* NULL: only drains access logs */
}

void arn_app_admin_stop(struct arn_app *app)
{
	arn_admin_stop(app->admin); /* flushes access logs, even without a server */
	app->admin = NULL;
}
