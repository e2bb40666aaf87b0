/*
 * arion: the command line, then the configuration, then (in serve mode) the
 * control lcore's loop.
 *
 *   arion -c FILE [--mode serve|validate] [--service-node ID]
 *         [--service-cluster NAME] [--log-level LEVEL] [--drain-time-s N]
 *         [--drain-strategy gradual|immediate] [--version] [--help]
 *         [-- EAL args]
 *
 * Exit codes (docs/cli.md): 0 success; 1 the configuration is invalid;
 * 2 bad command line; 3 start-up failed (files, EAL, ports); 4 internal error.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "arn_bootstrap.h"
#include "arn_config.h"
#include "arn_log.h"
#include "arn_rules.h"
#include "arn_sb.h"
#include "arn_tls.h"

enum {
	EXIT_OK = 0,
	EXIT_CONFIG = 1,
	EXIT_USAGE = 2,
	EXIT_STARTUP = 3,
	EXIT_INTERNAL = 4,
};

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "Usage: arion -c FILE [options] [-- EAL arguments]\n"
	    "\n"
	    "Arion: a DPDK user-space HTTP ingress gateway configured like Envoy.\n"
	    "\n"
	    "  -c, --config-path FILE     the configuration file (YAML: envoy_bootstrap: and\n"
	    "                             dataplane:)\n"
	    "      --mode serve|validate  serve (default), or load and check everything,\n"
	    "                             print a summary and exit 0 (valid) or 1 (invalid)\n"
	    "                             without starting DPDK\n"
	    "      --service-node ID      node id sent to the control plane (wins over\n"
	    "                             envoy_bootstrap.node.id)\n"
	    "      --service-cluster NAME node cluster (wins over envoy_bootstrap.node.cluster)\n"
	    "  -l, --log-level SPEC       trace|debug|info|warning|error|critical|off, or\n"
	    "                             per module: info,xds:debug\n"
	    "      --drain-time-s N       seconds over which a replaced listener's\n"
	    "                             connections drain (default 600, as Envoy)\n"
	    "      --drain-strategy S     gradual (default: each response closes its\n"
	    "                             connection with a probability rising to 1 over\n"
	    "                             the drain time) or immediate (every response)\n"
	    "      --version              print the version and exit\n"
	    "  -h, --help                 this text\n"
	    "\n"
	    "Arguments after -- go to DPDK's EAL (e.g. -- --no-huge --no-pci -l 0-1),\n"
	    "after those from dataplane.eal_args.\n"
	    "\n"
	    "Exit codes: 0 ok, 1 invalid configuration, 2 bad command line,\n"
	    "3 start-up failed, 4 internal error.\n");
}

struct cli {
	const char *config;
	const char *mode;
	const char *log_level;
	uint32_t drain_time_s;
	bool drain_immediate;
	struct arn_bootstrap_overrides ov;
	int eal_argc;
	char **eal_argv;
};

static int parse_cli(int argc, char **argv, struct cli *cli)
{
	enum {
		OPT_MODE = 256,
		OPT_NODE,
		OPT_CLUSTER,
		OPT_VERSION,
		OPT_DRAIN_TIME,
		OPT_DRAIN_STRATEGY
	};
	static const struct option opts[] = {
	    {"config-path", required_argument, NULL, 'c'},
	    {"mode", required_argument, NULL, OPT_MODE},
	    {"service-node", required_argument, NULL, OPT_NODE},
	    {"service-cluster", required_argument, NULL, OPT_CLUSTER},
	    {"log-level", required_argument, NULL, 'l'},
	    {"drain-time-s", required_argument, NULL, OPT_DRAIN_TIME},
	    {"drain-strategy", required_argument, NULL, OPT_DRAIN_STRATEGY},
	    {"version", no_argument, NULL, OPT_VERSION},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	cli->mode = "serve";
	cli->drain_time_s = 600; /* Envoy's default */
	/* getopt stops at "--"; what follows belongs to the EAL. */
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+c:l:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			cli->config = optarg;
			break;
		case 'l':
			cli->log_level = optarg;
			break;
		case OPT_MODE:
			cli->mode = optarg;
			break;
		case OPT_NODE:
			cli->ov.service_node = optarg;
			break;
		case OPT_CLUSTER:
			cli->ov.service_cluster = optarg;
			break;
		case OPT_DRAIN_TIME: {
			char *end = NULL;
			errno = 0;
			unsigned long v = strtoul(optarg, &end, 10);
			if (errno || !end || *end || end == optarg || optarg[0] == '-' ||
			    v > 86400) {
				fprintf(
				    stderr,
				    "arion: --drain-time-s %s: expected whole seconds from 0 to "
				    "86400\n",
				    optarg);
				return -EINVAL;
			}
			cli->drain_time_s = (uint32_t)v;
			break;
		}
		case OPT_DRAIN_STRATEGY:
			if (strcmp(optarg, "gradual") == 0) {
				cli->drain_immediate = false;
			} else if (strcmp(optarg, "immediate") == 0) {
				cli->drain_immediate = true;
			} else {
				fprintf(
				    stderr,
				    "arion: --drain-strategy %s: expected gradual or immediate\n",
				    optarg);
				return -EINVAL;
			}
			break;
		case OPT_VERSION:
			printf("arion %s\n", ARN_VERSION);
			exit(EXIT_OK);
		case 'h':
			usage(stdout);
			exit(EXIT_OK);
		case '?':
		default:
			if (optopt)
				fprintf(stderr, "arion: option -%c: %s\n", optopt,
					strchr("cl", optopt) ? "needs an argument" : "unknown");
			else
				fprintf(stderr, "arion: %s: unknown option or missing argument\n",
					argv[optind - 1]);
			fprintf(stderr, "Try 'arion --help'.\n");
			return -EINVAL;
		}
	}
	if (optind < argc && strcmp(argv[optind - 1], "--") != 0) {
		fprintf(stderr, "arion: unexpected argument '%s' (EAL arguments go after --)\n",
			argv[optind]);
		return -EINVAL;
	}
	cli->eal_argc = argc - optind;
	cli->eal_argv = argv + optind;
	if (strcmp(cli->mode, "serve") != 0 && strcmp(cli->mode, "validate") != 0) {
		fprintf(stderr, "arion: --mode %s: expected serve or validate\n", cli->mode);
		return -EINVAL;
	}
	if (cli->config == NULL) {
		fprintf(stderr, "arion: no configuration: give one with -c FILE\n"
				"Try 'arion --help'.\n");
		return -EINVAL;
	}
	if (cli->log_level != NULL) {
		const char *bad = NULL;
		if (arn_log_set_spec(cli->log_level, &bad) != 0) {
			fprintf(stderr,
				"arion: --log-level: '%s' is not a level (trace, debug, info, "
				"warning, error, critical, off) or MODULE:LEVEL\n",
				bad ? bad : cli->log_level);
			return -EINVAL;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct cli cli = {0};
	if (parse_cli(argc, argv, &cli) != 0)
		return EXIT_USAGE;
	/* the filters lib/http's workers run, before anything is converted
	 * (both modes: validate accepts what serve would run) */
	arn_config_set_features(ARN_CONFIG_FEATURE_HTTP_L4 | ARN_CONFIG_FEATURE_L4);
	/* a TLS context that would not build refuses the resource that
	 * carries it (X16), in both modes, instead of failing on the workers */
	arn_config_set_tls_check(arn_tls_cfg_check);

	struct arn_sb err = ARN_SB_INIT;
	struct arn_bootstrap *b = NULL;
	int rc = arn_bootstrap_load_file(cli.config, &cli.ov, &b, &err);
	if (rc == 0) {
		/* X11-X13 on static_resources: a file that breaks them is invalid
		 * in both modes, reported like the loader's own errors */
		rc = arn_rules_static(b, &err);
		if (rc != 0) {
			arn_bootstrap_free(b);
			b = NULL;
		}
	}
	if (rc != 0) {
		fputs(arn_sb_cstr(&err), stderr);
		if (rc == -EINVAL)
			fprintf(stderr, "arion: %s: configuration invalid\n", cli.config);
		arn_sb_free(&err);
		return rc == -EINVAL ? EXIT_CONFIG : rc == -ENOMEM ? EXIT_INTERNAL : EXIT_STARTUP;
	}
	arn_sb_free(&err);

	struct arn_sb sum = ARN_SB_INIT;
	arn_bootstrap_summary(b, &sum);
	if (strcmp(cli.mode, "validate") == 0) {
		/* static_resources through lib/config's converters (as xDS would) */
		rc = arn_config_validate_bootstrap(b, &err);
		if (rc != 0) {
			fputs(arn_sb_cstr(&err), stderr);
			fprintf(stderr, "arion: %s: configuration invalid\n", cli.config);
			arn_sb_free(&err);
			arn_sb_free(&sum);
			arn_bootstrap_free(b);
			return rc == -EINVAL ? EXIT_CONFIG : EXIT_INTERNAL;
		}
		fputs(arn_sb_cstr(&err), stderr); /* warnings */
		arn_sb_free(&err);
		fputs(arn_sb_cstr(&sum), stdout);
		printf("configuration OK\n");
		arn_sb_free(&sum);
		arn_bootstrap_free(b);
		return EXIT_OK;
	}

	/* serve */
	fputs(arn_sb_cstr(&sum), stdout);
	fflush(stdout);
	arn_sb_free(&sum);
	struct arn_app app = {
	    .bootstrap = b,
	    .eal_argc = cli.eal_argc,
	    .eal_argv = cli.eal_argv,
	    .argc = argc,
	    .argv = argv,
	    .drain_time_s = cli.drain_time_s,
	    .drain_immediate = cli.drain_immediate,
	};
	int code = arn_app_serve(&app);
	arn_bootstrap_free(b);
	return code;
}
