/*
 * The reference that arn_regex_replace() is checked against (unit test and
 * fuzzer): RE2::GlobalReplace's own loop, one arn_regex_search() from where
 * the last match ended, an empty match there refused by stepping over one
 * character. Obviously right and quadratic (each search may scan to the
 * end of the subject), which is why the library does not use it.
 */
#ifndef REGEX_REF_H
#define REGEX_REF_H

#include <stdint.h>
#include <string.h>

#include "arn_regex.h"

/* RE2's fullrune() then chartorune(), with GlobalReplace's Runemax check,
 * spelled out the way RE2's rune.cc does it rather than as regex.c does. */
static inline size_t ref_rune_len(const unsigned char *p, size_t avail)
{
	unsigned c = p[0];
	size_t full = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
	if (avail < full)
		return 1; /* not a full rune: GlobalReplace copies one byte */
	if (c < 0x80)
		return 1;
	unsigned c1 = p[1] ^ 0x80;
	if (c1 & 0xc0)
		return 1;
	if (c < 0xe0) {
		if (c < 0xc0)
			return 1;
		unsigned long l = ((c << 6) | c1) & 0x7ff;
		return l <= 0x7f ? 1 : 2;
	}
	unsigned c2 = p[2] ^ 0x80;
	if (c2 & 0xc0)
		return 1;
	if (c < 0xf0) {
		unsigned long l = ((((unsigned long)c << 6) | c1) << 6 | c2) & 0xffff;
		return l <= 0x7ff ? 1 : 3;
	}
	unsigned c3 = p[3] ^ 0x80;
	if (c3 & 0xc0)
		return 1;
	if (c >= 0xf8)
		return 1;
	unsigned long l = ((((((unsigned long)c << 6) | c1) << 6) | c2) << 6 | c3) & 0x1fffff;
	if (l <= 0xffff || l > 0x10ffff)
		return 1;
	return 4;
}

/* Same contract as arn_regex_replace(); @p steps (may be NULL) adds up the
 * searches' steps. */
static inline long ref_replace(const struct arn_regex *re, const char *s, size_t n, const char *sub,
			       char *out, size_t cap, uint64_t *steps)
{
	size_t o = 0, p = 0;
	size_t lastend = (size_t)-1;
	long caps[2 * ARN_REGEX_MAX_GROUPS];
	bool fits = true;
#define REF_PUT(ptr, len)                                                                          \
	do {                                                                                       \
		size_t l_ = (len);                                                                 \
		if (fits && o + l_ < cap)                                                          \
			memcpy(out + o, (ptr), l_);                                                \
		else                                                                               \
			fits = false;                                                              \
		o += l_;                                                                           \
	} while (0)
	if (steps)
		*steps = 0;
	while (p <= n) {
		struct arn_regex_stats st;
		bool found = arn_regex_search_stats(re, s, n, p, caps, ARN_REGEX_MAX_GROUPS, &st);
		if (steps)
			*steps += st.steps;
		if (!found)
			break;
		size_t ms = (size_t)caps[0], me = (size_t)caps[1];
		REF_PUT(s + p, ms - p);
		if (ms == lastend && me == ms) {
			size_t r = p < n ? ref_rune_len((const unsigned char *)s + p, n - p) : 1;
			if (p < n)
				REF_PUT(s + p, r);
			p += r;
			continue;
		}
		for (const char *q = sub; *q; q++) {
			if (*q == '\\' && q[1] >= '0' && q[1] <= '9') {
				unsigned g = (unsigned)(q[1] - '0');
				q++;
				if (g <= arn_regex_groups(re) && caps[2 * g] >= 0)
					REF_PUT(s + caps[2 * g],
						(size_t)(caps[2 * g + 1] - caps[2 * g]));
				continue;
			}
			if (*q == '\\' && q[1] == '\\')
				q++;
			REF_PUT(q, 1);
		}
		p = me;
		lastend = me;
	}
	if (p < n)
		REF_PUT(s + p, n - p);
	if (!fits || o >= cap)
		return -1;
	out[o] = 0;
	return (long)o;
#undef REF_PUT
}

#endif
