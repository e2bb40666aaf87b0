/*
 * DPDK's EAL: the argument vector (config file first, then the command
 * line), lcores derived from dataplane.control_lcore / worker_lcores when the
 * arguments do not name them, and errors that tell an operator what to do.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_errno.h>

#include "arn_dataplane.h"
#include "arn_log.h"
#include "arn_sb.h"
#include "net_int.h"

#define EAL_MAX_ARGS 256

static bool eal_up;
/* rte_eal_init may keep pointers into argv (and getopt permutes it): both
 * the vector and the strings live until the process ends. */
static char *eal_argv[EAL_MAX_ARGS + 1];
static int eal_argc;

/* Does @p a name option @p opt (short "-l", "-l0-1"; long "--lcores",
 * "--lcores=...")? */
static bool is_opt(const char *a, const char *opt)
{
	size_t n = strlen(opt);
	if (strncmp(a, opt, n) != 0)
		return false;
	if (opt[1] == '-')
		return a[n] == '\0' || a[n] == '=';
	return true; /* short options take their value attached or next */
}

static bool has_any(char *const *v, int n, const char *const *opts)
{
	for (int i = 0; i < n; i++)
		for (const char *const *o = opts; *o; o++)
			if (is_opt(v[i], *o))
				return true;
	return false;
}

static void push(const char *s)
{
	if (eal_argc < EAL_MAX_ARGS)
		eal_argv[eal_argc++] = strdup(s);
}

static long hugepages_total(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	if (f == NULL)
		return -1;
	char line[256];
	long n = -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "HugePages_Total: %ld", &n) == 1)
			break;
	fclose(f);
	return n;
}

/* Is DPDK part of this binary (the arion binary's default, meson's
 * -Ddpdk_static) rather than loaded from librte_*.so (tests, benchmarks,
 * -Ddpdk_static=false)? */
static bool dpdk_linked_in(void)
{
	Dl_info di;
	if (dladdr((void *)rte_eal_init, &di) == 0 || di.dli_fname == NULL)
		return false;
	return strstr(di.dli_fname, "librte_eal") == NULL;
}

int arn_net_eal_init(const struct arn_dataplane *dp, int argc, char **argv)
{
	static const char *const lcore_opts[] = {"-l", "-c", "--lcores", NULL};
	static const char *const main_opts[] = {"--main-lcore", NULL};
	static const char *const nohuge_opts[] = {"--no-huge", NULL};
	static const char *const driver_opts[] = {"-d", NULL};
	if (eal_up)
		return -EALREADY;

	eal_argc = 0;
	push("arion");
	for (size_t i = 0; i < dp->n_eal_args; i++)
		push(dp->eal_args[i]);
	for (int i = 0; i < argc; i++)
		push(argv[i]);
	if (eal_argc >= EAL_MAX_ARGS) {
		ARN_ERR(NET, "too many EAL arguments (at most %d)", EAL_MAX_ARGS - 1);
		return -E2BIG;
	}
	/* -d loads a shared driver, which brings Debian's shared EAL and a
	 * second copy of every DPDK global into a binary that has its own:
	 * refused, where it would otherwise fail in ways that say nothing. */
	if (has_any(eal_argv + 1, eal_argc - 1, driver_opts) && dpdk_linked_in()) {
		ARN_ERR(NET, "EAL argument -d (load a shared DPDK driver): this arion binary "
			     "carries DPDK and every network PMD linked in, and a shared driver "
			     "would load a second EAL. Remove -d from dataplane.eal_args or the "
			     "command line, or build with -Ddpdk_static=false");
		return -EINVAL;
	}
	bool lcores_given = has_any(eal_argv + 1, eal_argc - 1, lcore_opts);
	bool main_given = has_any(eal_argv + 1, eal_argc - 1, main_opts);
	int control = dp->control_lcore;
	char buf[1024];
	if (!lcores_given && dp->n_workers > 0) {
		/* The control lcore defaults to the lowest id that is not a worker. */
		if (control < 0) {
			for (control = 0;; control++) {
				size_t i = 0;
				while (i < dp->n_workers &&
				       dp->worker_lcores[i] != (unsigned)control)
					i++;
				if (i == dp->n_workers)
					break;
			}
		}
		int len = snprintf(buf, sizeof(buf), "%d", control);
		for (size_t i = 0; i < dp->n_workers && len < (int)sizeof(buf); i++)
			len += snprintf(buf + len, sizeof(buf) - (size_t)len, ",%u",
					dp->worker_lcores[i]);
		push("-l");
		push(buf);
	}
	if (!main_given && control >= 0) {
		snprintf(buf, sizeof(buf), "%d", control);
		push("--main-lcore");
		push(buf);
	}
	eal_argv[eal_argc] = NULL;

	/* DPDK 22.11 runs --no-huge in legacy memory mode and then refuses
	 * --in-memory. Without hugepages there are no hugepage files, so what
	 * --in-memory still means is "no shared config files": --no-shconf. */
	if (has_any(eal_argv + 1, eal_argc - 1, nohuge_opts))
		for (int i = 1; i < eal_argc; i++)
			if (strcmp(eal_argv[i], "--in-memory") == 0) {
				free(eal_argv[i]);
				eal_argv[i] = strdup("--no-shconf");
				ARN_INFO(NET,
					 "--in-memory with --no-huge: using --no-shconf (the same "
					 "without hugepages; DPDK refuses the pair)");
			}

	struct arn_sb line = ARN_SB_INIT;
	for (int i = 0; i < eal_argc; i++)
		arn_sb_printf(&line, "%s%s", i ? " " : "", eal_argv[i]);
	ARN_INFO(NET, "EAL arguments: %s", arn_sb_cstr(&line));
	arn_sb_free(&line);

	/* rte_eal_init reorders its argv: give it a copy of the vector. */
	char *v[EAL_MAX_ARGS + 1];
	memcpy(v, eal_argv, sizeof(v));
	int rc = rte_eal_init(eal_argc, v);
	if (rc < 0) {
		int err = rte_errno ? rte_errno : EINVAL;
		bool no_huge = has_any(eal_argv + 1, eal_argc - 1, nohuge_opts);
		ARN_ERR(NET, "DPDK EAL initialisation failed: %s", rte_strerror(err));
		if (err == EALREADY) {
			ARN_ERR(NET, "the EAL was already initialised in this process");
		} else if (!no_huge && hugepages_total() == 0) {
			ARN_ERR(NET,
				"no hugepages are reserved. Reserve some (e.g. echo 1024 > "
				"/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages), or for "
				"tests without hugepages add --no-huge (with --no-pci --in-memory) "
				"to dataplane.eal_args or after -- on the command line");
		} else if (err == EINVAL) {
			ARN_ERR(NET, "check dataplane.eal_args and the arguments after -- (DPDK's "
				     "message above names the one it refused)");
		} else {
			ARN_ERR(NET,
				"DPDK's messages above say more; running as root with "
				"--in-memory (or a unique --file-prefix) avoids most conflicts");
		}
		return -err;
	}
	eal_up = true;
	return 0;
}

void arn_net_eal_cleanup(void)
{
	if (!eal_up)
		return;
	rte_eal_cleanup();
	eal_up = false;
}
