/*
 * The arion process in serve mode: what the control lcore owns and the
 * start / poll / stop hooks of each subsystem.
 *
 * serve.c runs them in this order: config (the first generation, from
 * static_resources), http (registers the HTTP layer with the TCP stack, so
 * it must come before the workers start), net (EAL, ports, workers), admin,
 * xds; then polls
 * config, admin and xds on the control lcore until SIGINT/SIGTERM or
 * /quitquitquit; then stops them in reverse order. Each hook lives in its own
 * file (app_<subsystem>.c) so that subsystems can be wired independently.
 *
 * Hooks return 0 or a negative errno, having logged what went wrong; a start
 * hook that fails makes arion exit with code 3 after stopping what started.
 * Poll hooks never block for long (the loop's latency is theirs).
 */
#ifndef ARN_APP_H
#define ARN_APP_H

#include <signal.h>
#include <stdbool.h>

#include "arn_bootstrap.h"

struct arn_app {
	struct arn_bootstrap *bootstrap; /* owned by main */
	int eal_argc;                    /* after "--" on the command line */
	char **eal_argv;
	int argc;                        /* the whole command line, for /server_info */
	char **argv;
	volatile sig_atomic_t stop;      /* set by signals or /quitquitquit */
	uint32_t drain_time_s;           /* --drain-time-s */
	bool drain_immediate;            /* --drain-strategy immediate */

	/* Subsystem state, each owned by its app_<subsystem>.c. */
	void *config;
	void *http;
	void *net;
	void *admin;
	void *xds;
};

int arn_app_config_start(struct arn_app *app);
void arn_app_config_poll(struct arn_app *app);
void arn_app_config_stop(struct arn_app *app);

int arn_app_http_start(struct arn_app *app);
void arn_app_http_poll(struct arn_app *app);
void arn_app_http_stop(struct arn_app *app);

int arn_app_net_start(struct arn_app *app);
void arn_app_net_stop(struct arn_app *app);

int arn_app_admin_start(struct arn_app *app);
void arn_app_admin_poll(struct arn_app *app);
void arn_app_admin_stop(struct arn_app *app);

int arn_app_xds_start(struct arn_app *app);
/* May wait up to @p max_wait_ms for gRPC events: the loop's idle sleep. */
void arn_app_xds_poll(struct arn_app *app, int max_wait_ms);
void arn_app_xds_stop(struct arn_app *app);

/** serve mode: start everything, loop, stop. Returns the exit code. */
int arn_app_serve(struct arn_app *app);

#endif
