/*
 * Serve mode's admin hooks: the admin endpoint on the bootstrap's
 * admin.address, polled from the control lcore's loop, and the glue that
 * keeps lib/admin away from the data plane: the configuration store's
 * pages (arn_admin_config.h), lib/http's per-host counters for /clusters,
 * and POST /healthcheck/fail|ok passed on to lib/http. Access logs are
 * drained here whether or not an endpoint runs.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "app.h"
#include "arn_access_log.h"
#include "arn_admin.h"
#include "arn_admin_config.h"
#include "arn_http.h"
#include "arn_log.h"

static struct arn_admin_config *config_views;

static void healthcheck_changed(bool failed, void *arg)
{
	(void)arg;
	arn_http_set_healthcheck_failed(failed);
}

static void host_stats(void *arg, const char *cluster, uint32_t addr, uint16_t port,
		       struct arn_admin_host_info *h)
{
	(void)arg;
	struct arn_http_host_counts c;
	if (arn_http_host_counts(cluster, addr, port, &c) != 0)
		return;
	h->cx_total = c.cx_total;
	h->cx_connect_fail = c.cx_connect_fail;
	h->rq_total = c.rq_total;
	h->rq_success = c.rq_success;
	h->rq_error = c.rq_error;
	h->rq_timeout = c.rq_timeout;
	h->cx_active = c.cx_active;
	h->rq_active = c.rq_active;
	if (c.failed_active_hc || c.failed_outlier_check) {
		/* Envoy's order: /failed_active_hc, /failed_outlier_check,
		 * then the EDS flags; the admin reads it before the next host
		 * (control lcore only) */
		static char flags[128];
		const char *eds = h->health_flags && strcmp(h->health_flags, "healthy") != 0
				      ? h->health_flags
				      : "";
		snprintf(flags, sizeof(flags), "%s%s%s", c.failed_active_hc ? "/failed_active_hc" : "",
			 c.failed_outlier_check ? "/failed_outlier_check" : "", eds);
		h->health_flags = flags;
	}
}

/* GET /certs: the certificates of the TLS contexts in force (lib/http's). */
static void h_certs(const struct arn_admin_request *req, struct arn_admin_response *resp, void *arg)
{
	(void)req;
	(void)arg;
	resp->content_type = "application/json";
	if (arn_http_certs_write(&resp->body, (int64_t)time(NULL)) != 0)
		resp->status = 500;
}

int arn_app_admin_start(struct arn_app *app)
{
	if (!app->bootstrap->has_admin) {
		ARN_INFO(ADMIN, "no envoy_bootstrap.admin.address: the admin endpoint is off");
		return 0;
	}
	if (app->config) {
		config_views = arn_admin_config_start(app->config);
		if (config_views == NULL)
			return -ENOMEM;
		arn_admin_set_host_stats(host_stats, NULL);
	}
	struct arn_admin_options o = {
	    .bootstrap = app->bootstrap,
	    .port = -1,
	    .argc = app->argc,
	    .argv = app->argv,
	    .stop = &app->stop,
	    .healthcheck_changed = healthcheck_changed,
	};
	struct arn_admin *a = arn_admin_start(&o);
	if (a == NULL) {
		arn_admin_set_host_stats(NULL, NULL);
		arn_admin_config_stop(config_views);
		config_views = NULL;
		return -EINVAL;
	}
	app->admin = a;
	int rc = arn_admin_handler_register("/certs", ARN_ADMIN_GET,
					    "certificates of the TLS contexts in force (JSON)",
					    h_certs, NULL);
	if (rc != 0)
		ARN_WARN(ADMIN, "cannot register /certs: %s", strerror(-rc));
	return 0;
}

void arn_app_admin_poll(struct arn_app *app)
{
	arn_access_log_drain();
	arn_admin_poll(app->admin);
}

void arn_app_admin_stop(struct arn_app *app)
{
	arn_access_log_drain();
	if (app->admin)
		arn_admin_handler_unregister("/certs");
	arn_admin_stop(app->admin);
	app->admin = NULL;
	arn_admin_set_host_stats(NULL, NULL);
	arn_admin_config_stop(config_views);
	config_views = NULL;
}
