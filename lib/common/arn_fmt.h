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
	/* the length first (comparisons, no division), then two digits per
	 * division by 100 written in place: about 40 instructions for five
	 * digits, where a digit loop through a temporary took 100 */
	static const char d2[201] = "00010203040506070809101112131415161718192021222324"
				    "25262728293031323334353637383940414243444546474849"
				    "50515253545556575859606162636465666768697071727374"
				    "75767778798081828384858687888990919293949596979899";
	int n = 1;
	for (uint64_t p = 10; n < ARN_FMT_U64_MAX && v >= p; p *= 10)
		n++;
	char *q = out + n;
	while (v >= 100) {
		unsigned r = (unsigned)(v % 100) * 2;
		v /= 100;
		q -= 2;
		q[0] = d2[r];
		q[1] = d2[r + 1];
	}
	if (v >= 10) {
		q[-2] = d2[v * 2];
		q[-1] = d2[v * 2 + 1];
	} else {
		q[-1] = (char)('0' + v);
	}
	return n;
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
