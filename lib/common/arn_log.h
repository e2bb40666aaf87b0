/*
 * Arion's log: one line per event, levels per module, Envoy's level names.
 *
 * Lines go to stderr as "[2026-11-30 05:41:15.123][info][xds] text". Logging
 * is for events (a NACK, a port coming up), never for per-packet work: the
 * level check is one load and a compare, but formatting and the stdio lock
 * are not something a worker lcore should pay per packet.
 */
#ifndef ARN_LOG_H
#define ARN_LOG_H

#include <stdarg.h>
#include <stdbool.h>

enum arn_log_level {
	ARN_LOG_TRACE = 0,
	ARN_LOG_DEBUG,
	ARN_LOG_INFO,
	ARN_LOG_WARN,
	ARN_LOG_ERROR,
	ARN_LOG_CRITICAL,
	ARN_LOG_OFF,
};

enum arn_log_module {
#define ARN_LOG_MODULE(id, name) ARN_LOGM_##id,
#include "arn_log_modules.def"
#undef ARN_LOG_MODULE
	ARN_LOGM_COUNT,
};

/* Current level per module; read on every log call, written by the control
 * lcore only (arn_log_set_level). A torn read is impossible for an int. */
extern volatile int arn_log_levels[ARN_LOGM_COUNT];

/** Write one line (fmt without trailing newline). Prefer ARN_LOG(). */
void arn_log_write(enum arn_log_level level, enum arn_log_module mod, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define ARN_LOG(level, mod, ...)                                                                   \
	do {                                                                                       \
		if ((int)(level) >= arn_log_levels[ARN_LOGM_##mod])                                \
			arn_log_write((level), ARN_LOGM_##mod, __VA_ARGS__);                       \
	} while (0)

#define ARN_ERR(mod, ...) ARN_LOG(ARN_LOG_ERROR, mod, __VA_ARGS__)
#define ARN_WARN(mod, ...) ARN_LOG(ARN_LOG_WARN, mod, __VA_ARGS__)
#define ARN_INFO(mod, ...) ARN_LOG(ARN_LOG_INFO, mod, __VA_ARGS__)
#define ARN_DEBUG(mod, ...) ARN_LOG(ARN_LOG_DEBUG, mod, __VA_ARGS__)
#define ARN_TRACE(mod, ...) ARN_LOG(ARN_LOG_TRACE, mod, __VA_ARGS__)

/**
 * Parse a level name ("trace", "debug", "info", "warning"/"warn", "error",
 * "critical", "off").
 * @return the level, or -EINVAL for an unknown name.
 */
int arn_log_level_parse(const char *name);

/** The name of @p level ("info", ...); "?" for an out-of-range value. */
const char *arn_log_level_name(int level);

/** The name of module @p mod ("xds", ...). */
const char *arn_log_module_name(enum arn_log_module mod);

/**
 * Set levels from a spec: "LEVEL" (every module) or a comma-separated list of
 * "LEVEL" and "MODULE:LEVEL" items, applied left to right
 * (e.g. "info,xds:debug").
 * @return 0, or -EINVAL with nothing changed if any item is unknown; then
 *   @p bad (if not NULL) points into @p spec at the offending item.
 */
int arn_log_set_spec(const char *spec, const char **bad);

/** Redirect log lines to a file descriptor (tests); -1 restores stderr. */
void arn_log_set_fd(int fd);

#endif
