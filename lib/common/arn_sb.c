#include "arn_sb.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool sb_reserve(struct arn_sb *sb, size_t extra)
{
	if (sb->oom)
		return false;
	if (sb->len + extra + 1 <= sb->cap)
		return true;
	size_t cap = sb->cap ? sb->cap : 64;
	while (cap < sb->len + extra + 1)
		cap *= 2;
	char *nb = realloc(sb->buf, cap);
	if (nb == NULL) {
		sb->oom = true;
		return false;
	}
	sb->buf = nb;
	sb->cap = cap;
	return true;
}

void arn_sb_append(struct arn_sb *sb, const char *s, size_t n)
{
	if (!sb_reserve(sb, n))
		return;
	memcpy(sb->buf + sb->len, s, n);
	sb->len += n;
	sb->buf[sb->len] = '\0';
}

void arn_sb_puts(struct arn_sb *sb, const char *s)
{
	arn_sb_append(sb, s, strlen(s));
}

void arn_sb_putc(struct arn_sb *sb, char c)
{
	arn_sb_append(sb, &c, 1);
}

void arn_sb_printf(struct arn_sb *sb, const char *fmt, ...)
{
	va_list ap;
	char small[256];

	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(small)) {
		arn_sb_append(sb, small, (size_t)n);
		return;
	}
	if (!sb_reserve(sb, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	sb->len += (size_t)n;
}

void arn_sb_json_str(struct arn_sb *sb, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";

	arn_sb_putc(sb, '"');
	size_t run = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		const char *esc = NULL;
		char u[6];
		switch (c) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		case '\b': esc = "\\b"; break;
		case '\f': esc = "\\f"; break;
		default:
			if (c < 0x20 || c == 0x7f) {
				u[0] = '\\'; u[1] = 'u'; u[2] = '0'; u[3] = '0';
				u[4] = hex[c >> 4]; u[5] = hex[c & 15];
				arn_sb_append(sb, s + i - run, run);
				run = 0;
				arn_sb_append(sb, u, 6);
				continue;
			}
			run++;
			continue;
		}
		arn_sb_append(sb, s + i - run, run);
		run = 0;
		arn_sb_puts(sb, esc);
	}
	arn_sb_append(sb, s + n - run, run);
	arn_sb_putc(sb, '"');
}

const char *arn_sb_cstr(const struct arn_sb *sb)
{
	return sb->buf ? sb->buf : "";
}

char *arn_sb_steal(struct arn_sb *sb)
{
	char *b = sb->buf;
	if (b == NULL)
		b = calloc(1, 1);
	sb->buf = NULL;
	sb->len = sb->cap = 0;
	sb->oom = false;
	return b;
}

void arn_sb_reset(struct arn_sb *sb)
{
	sb->len = 0;
	if (sb->buf)
		sb->buf[0] = '\0';
}

void arn_sb_free(struct arn_sb *sb)
{
	free(sb->buf);
	sb->buf = NULL;
	sb->len = sb->cap = 0;
	sb->oom = false;
}
