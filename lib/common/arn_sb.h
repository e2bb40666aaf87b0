/*
 * A growable string on the heap, for the control lcore (JSON, error texts,
 * admin pages). Never used on worker lcores.
 *
 * Allocation failure is sticky: after it, appends do nothing, sb->oom is
 * set and arn_sb_cstr() still returns a valid (truncated) string.
 */
#ifndef ARN_SB_H
#define ARN_SB_H

#include <stdbool.h>
#include <stddef.h>

struct arn_sb {
	char *buf; /* owned; NUL-terminated once anything was appended */
	size_t len;
	size_t cap;
	bool oom;
};

#define ARN_SB_INIT {NULL, 0, 0, false}

void arn_sb_append(struct arn_sb *sb, const char *s, size_t n);
void arn_sb_puts(struct arn_sb *sb, const char *s);
void arn_sb_putc(struct arn_sb *sb, char c);
void arn_sb_printf(struct arn_sb *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** Append @p s (n bytes) as a JSON string literal, quotes included. */
void arn_sb_json_str(struct arn_sb *sb, const char *s, size_t n);
/** The text so far; "" when empty. Owned by @p sb. */
const char *arn_sb_cstr(const struct arn_sb *sb);
/** Take the buffer (caller frees); @p sb is reset. Never NULL. */
char *arn_sb_steal(struct arn_sb *sb);
void arn_sb_reset(struct arn_sb *sb);
void arn_sb_free(struct arn_sb *sb);

#endif
