#include <signal.h>
#include <string.h>

#include "app.h"
#include "arn_log.h"

static struct arn_app *running;

static void on_signal(int sig)
{
	(void)sig;
	if (running != NULL)
		running->stop = 1;
}

int arn_app_serve(struct arn_app *app)
{
	struct {
		const char *name;
		int (*start)(struct arn_app *);
		void (*stop)(struct arn_app *);
	} steps[] = {
		{"config", arn_app_config_start, arn_app_config_stop},
		{"http", arn_app_http_start, arn_app_http_stop},
		{"net", arn_app_net_start, arn_app_net_stop},
		{"admin", arn_app_admin_start, arn_app_admin_stop},
		{"xds", arn_app_xds_start, arn_app_xds_stop},
	};
	const int n = (int)(sizeof(steps) / sizeof(steps[0]));

	running = app;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	int started = 0, rc = 0;
	for (; started < n; started++) {
		if (steps[started].start(app) != 0) {
			ARN_ERR(MAIN, "start-up failed in %s; stopping", steps[started].name);
			rc = 3;
			break;
		}
	}
	if (rc == 0) {
		ARN_INFO(MAIN, "arion %s serving; SIGINT or SIGTERM stops it", ARN_VERSION);
		while (!app->stop) {
			arn_app_config_poll(app);
			arn_app_http_poll(app);
			arn_app_admin_poll(app);
			arn_app_xds_poll(app, 5);
		}
		ARN_INFO(MAIN, "stopping");
	}
	while (started-- > 0)
		steps[started].stop(app);
	running = NULL;
	return rc;
}
