/*
 * One hex digit's value, for the decoders that read %XX and \uXXXX escapes
 * (lib/common's JSON parser, lib/http's path normalization): one copy, so
 * they cannot come to disagree on which characters are digits.
 */
#ifndef ARN_HEX_H
#define ARN_HEX_H

/**
 * The value of the hex digit @p c: 0-9 for '0'-'9', 10-15 for 'a'-'f' and
 * 'A'-'F' (RFC 3986 2.1 and RFC 8259 7 allow both cases); -1 for any other
 * character.
 */
static inline int arn_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

#endif
