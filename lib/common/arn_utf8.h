/*
 * UTF-8 (RFC 3629) sequences, for the writers of formats whose strings
 * must be UTF-8 (protobuf strings, JSON) from bytes a client sent.
 */
#ifndef ARN_UTF8_H
#define ARN_UTF8_H

#include <stddef.h>
#include <stdint.h>

/** The length of the valid UTF-8 sequence at @p p (@p n bytes there, at
 * least 1): 1 to 4, or 0 when none starts there (a stray continuation
 * byte, an overlong form, a surrogate, past U+10FFFF, cut short). */
static inline size_t arn_utf8_seq(const uint8_t *p, size_t n)
{
	uint8_t c = p[0];
	if (c < 0x80)
		return 1;
	size_t k;
	uint32_t min;
	if ((c & 0xe0) == 0xc0) {
		k = 2;
		min = 0x80;
	} else if ((c & 0xf0) == 0xe0) {
		k = 3;
		min = 0x800;
	} else if ((c & 0xf8) == 0xf0) {
		k = 4;
		min = 0x10000;
	} else {
		return 0;
	}
	if (k > n)
		return 0;
	uint32_t cp = c & (0x7f >> k);
	for (size_t i = 1; i < k; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return k;
}

#endif
