/*
 * Decimal integers and dotted IPv4 addresses written into a caller's
 * buffer, for header values formatted per request (service time, timeouts,
 * X-Forwarded-For). snprintf costs 500-700 instructions a call (format
 * parsing, locale, the FILE machinery under vsnprintf); these cost one
 * division by a constant per digit. No NUL is written unless said.
 */
#ifndef ARN_FMT_H
#define ARN_FMT_H

#include <stddef.h>
#include <stdint.h>

/** Longest output of arn_fmt_u64 (UINT64_MAX) and arn_fmt_i64 (INT64_MIN). */
#define ARN_FMT_U64_MAX 20
#define ARN_FMT_I64_MAX 20
/** Longest output of arn_fmt_ip4 ("255.255.255.255"), without the NUL. */
#define ARN_FMT_IP4_MAX 15

/**
 * The decimal digits of @p v into @p out (room for ARN_FMT_U64_MAX bytes),
 * no leading zeros ("0" for 0), no NUL. @return the number of bytes written.
 */
static inline int arn_fmt_u64(uint64_t v, char *out)
{
	char t[ARN_FMT_U64_MAX];
	int n = ARN_FMT_U64_MAX;
	do {
		t[--n] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	int len = ARN_FMT_U64_MAX - n;
	for (int i = 0; i < len; i++)
		out[i] = t[n + i];
	return len;
}

/**
 * @p v in decimal with a '-' when negative (what "%lld" prints) into
 * @p out (room for ARN_FMT_I64_MAX bytes), no NUL. @return the bytes written.
 */
static inline int arn_fmt_i64(int64_t v, char *out)
{
	if (v >= 0)
		return arn_fmt_u64((uint64_t)v, out);
	out[0] = '-';
	/* -(v + 1) + 1 does not overflow for INT64_MIN */
	return 1 + arn_fmt_u64((uint64_t)(-(v + 1)) + 1, out + 1);
}

/**
 * The IPv4 address @p a (host byte order) as a dotted quad ("%u.%u.%u.%u")
 * into @p out (room for ARN_FMT_IP4_MAX bytes), no NUL. @return the bytes
 * written.
 */
static inline int arn_fmt_ip4(uint32_t a, char *out)
{
	int n = 0;
	for (int sh = 24; sh >= 0; sh -= 8) {
		unsigned b = (a >> sh) & 255;
		if (b >= 100) {
			out[n++] = (char)('0' + b / 100);
			b %= 100;
			out[n++] = (char)('0' + b / 10);
			out[n++] = (char)('0' + b % 10);
		} else if (b >= 10) {
			out[n++] = (char)('0' + b / 10);
			out[n++] = (char)('0' + b % 10);
		} else {
			out[n++] = (char)('0' + b);
		}
		if (sh)
			out[n++] = '.';
	}
	return n;
}

#endif
