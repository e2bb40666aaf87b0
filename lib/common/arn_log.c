#include "arn_log.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

volatile int arn_log_levels[ARN_LOGM_COUNT] = {
#define ARN_LOG_MODULE(id, name) [ARN_LOGM_##id] = ARN_LOG_INFO,
#include "arn_log_modules.def"
#undef ARN_LOG_MODULE
};

static const char *const module_names[ARN_LOGM_COUNT] = {
#define ARN_LOG_MODULE(id, name) [ARN_LOGM_##id] = name,
#include "arn_log_modules.def"
#undef ARN_LOG_MODULE
};

static const char *const level_names[] = {"trace", "debug", "info",    "warning",
					  "error", "critical", "off"};

static int log_fd = -1;

void arn_log_set_fd(int fd)
{
	log_fd = fd;
}

const char *arn_log_level_name(int level)
{
	if (level < 0 || level > ARN_LOG_OFF)
		return "?";
	return level_names[level];
}

const char *arn_log_module_name(enum arn_log_module mod)
{
	return (unsigned)mod < ARN_LOGM_COUNT ? module_names[mod] : "?";
}

static int level_parse_n(const char *s, size_t n)
{
	for (int i = 0; i <= ARN_LOG_OFF; i++)
		if (strlen(level_names[i]) == n && strncasecmp(s, level_names[i], n) == 0)
			return i;
	if (n == 4 && strncasecmp(s, "warn", 4) == 0)
		return ARN_LOG_WARN;
	return -EINVAL;
}

int arn_log_level_parse(const char *name)
{
	return level_parse_n(name, strlen(name));
}

int arn_log_set_spec(const char *spec, const char **bad)
{
	int next[ARN_LOGM_COUNT];

	for (int m = 0; m < ARN_LOGM_COUNT; m++)
		next[m] = arn_log_levels[m];
	const char *p = spec;
	while (1) {
		size_t n = strcspn(p, ",");
		const char *colon = memchr(p, ':', n);
		int lvl;
		if (colon == NULL) {
			lvl = level_parse_n(p, n);
			if (lvl < 0)
				goto fail;
			for (int m = 0; m < ARN_LOGM_COUNT; m++)
				next[m] = lvl;
		} else {
			size_t mn = (size_t)(colon - p);
			int mod = -1;
			for (int m = 0; m < ARN_LOGM_COUNT; m++)
				if (strlen(module_names[m]) == mn &&
				    strncmp(p, module_names[m], mn) == 0)
					mod = m;
			lvl = level_parse_n(colon + 1, n - mn - 1);
			if (mod < 0 || lvl < 0)
				goto fail;
			next[mod] = lvl;
		}
		if (p[n] == '\0')
			break;
		p += n + 1;
	}
	for (int m = 0; m < ARN_LOGM_COUNT; m++)
		arn_log_levels[m] = next[m];
	return 0;
fail:
	if (bad != NULL)
		*bad = p;
	return -EINVAL;
}

void arn_log_write(enum arn_log_level level, enum arn_log_module mod, const char *fmt, ...)
{
	char line[2048];
	struct timeval tv;
	struct tm tm;

	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	int n = snprintf(line, sizeof(line), "[%04d-%02d-%02d %02d:%02d:%02d.%03d][%s][%s] ",
			 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
			 tm.tm_sec, (int)(tv.tv_usec / 1000), arn_log_level_name(level),
			 arn_log_module_name(mod));
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
	if (len > sizeof(line) - 2) {
		/* Truncated: say so rather than cut silently. */
		len = sizeof(line) - 2;
		memcpy(line + len - 3, "...", 3);
	}
	line[len++] = '\n';
	/* One write() per line so concurrent writers never interleave within it. */
	ssize_t w = write(log_fd >= 0 ? log_fd : STDERR_FILENO, line, len);
	(void)w;
}
