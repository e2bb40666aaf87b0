/*
 * Serve mode's configuration store: the first generation comes from the
 * bootstrap's static_resources through the same batch code as xDS
 * (arn_config_apply_static); poll ends warming at initial_fetch_timeout and
 * frees generations and objects once workers are done with them.
 *
 * Workers: the net subsystem registers its lcores on arn_config_rcu() of
 * app->config (also reachable as arn_config_global()).
 *
 * The process's deferred-free queue (arn_defer_default(), arn_defer.h),
 * through which lib/stats and lib/accesslog free what workers may still
 * read, runs over the same QSBR: installed here, reclaimed every loop, and
 * emptied last, when workers are gone.
 */
#include <errno.h>
#include <string.h>

#include "app.h"
#include "arn_config.h"
#include "arn_defer.h"
#include "arn_log.h"

int arn_app_config_start(struct arn_app *app)
{
	struct arn_config_store *s = arn_config_create(app->bootstrap);
	if (!s)
		return -ENOMEM;
	struct arn_sb err = ARN_SB_INIT;
	int rc = arn_config_apply_static(s, app->bootstrap, &err);
	if (rc != 0) {
		/* Envoy does not start with an invalid static resource either */
		ARN_ERR(CONFIG, "static_resources refused:\n%s", arn_sb_cstr(&err));
		arn_sb_free(&err);
		arn_config_destroy(s);
		return rc;
	}
	/* warnings, one per line */
	for (const char *l = arn_sb_cstr(&err); *l;) {
		const char *e = strchr(l, '\n');
		int n = e ? (int)(e - l) : (int)strlen(l);
		if (strncmp(l, "warning: ", 9) == 0)
			ARN_WARN(CONFIG, "%.*s", n - 9, l + 9);
		l += n + (e != NULL);
	}
	arn_sb_free(&err);
	struct arn_defer *d = arn_defer_create(arn_config_rcu(s));
	if (d == NULL) {
		arn_config_destroy(s);
		return -ENOMEM;
	}
	arn_defer_set_default(d);
	app->config = s;
	arn_config_set_global(s);
	struct arn_config_stats st;
	arn_config_get_stats(s, &st);
	ARN_INFO(CONFIG,
		 "static configuration applied: %llu listeners (%llu warming), %llu clusters "
		 "(%llu warming), %llu secrets",
		 (unsigned long long)st.listeners_active, (unsigned long long)st.listeners_warming,
		 (unsigned long long)st.clusters_active, (unsigned long long)st.clusters_warming,
		 (unsigned long long)st.secrets_active);
	return 0;
}

void arn_app_config_poll(struct arn_app *app)
{
	if (app->config) {
		arn_config_poll(app->config);
		arn_defer_reclaim(arn_defer_default());
	}
}

void arn_app_config_stop(struct arn_app *app)
{
	/* net (the workers) stopped before us: no reader is left, so what
	 * waits for a grace period is freed now, before the store goes */
	arn_defer_destroy(arn_defer_default());
	arn_config_destroy(app->config);
	app->config = NULL;
}
