/*
 * libFuzzer: the regex engine on its own (safe_regex, regex_rewrite):
 * compile any pattern; full match, search and global replace over any
 * subject, each within its documented step bound (arn_regex.h); the
 * replace equal to the obvious loop of searches (regex_ref.h) on subjects
 * short enough for that quadratic loop.
 *
 * Input: [L][L pattern bytes][M][M substitution bytes][subject...]
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arn_regex.h"
#include "regex_ref.h"

#define REF_MAX 512

static void check_bound(uint64_t steps, uint64_t bound)
{
	if (steps > bound)
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	size_t pl = data[0];
	if (1 + pl + 1 > size)
		return 0;
	const char *pat = (const char *)data + 1;
	size_t sl = data[1 + pl];
	if (2 + pl + sl > size)
		return 0;
	char sub[256];
	memcpy(sub, data + 2 + pl, sl);
	sub[sl] = 0; /* a NUL inside ends it, as in a configuration */
	const char *s = (const char *)data + 2 + pl + sl;
	size_t n = size - 2 - pl - sl;

	char err[256];
	struct arn_regex *re = arn_regex_compile(pat, pl, err, sizeof(err));
	if (!re)
		return 0;
	uint64_t P = arn_regex_program_size(re);
	size_t plen;
	arn_regex_literal_prefix(re, &plen);
	arn_regex_check_substitution(re, sub, err, sizeof(err));

	struct arn_regex_stats st;
	arn_regex_full_match_stats(re, s, n, &st);
	check_bound(st.steps, 2 * P * (n + 1));
	long caps[2 * ARN_REGEX_MAX_GROUPS];
	size_t starts[3] = {0, n / 2, n};
	for (int i = 0; i < 3; i++) {
		if (arn_regex_search_stats(re, s, n, starts[i], caps, ARN_REGEX_MAX_GROUPS, &st) &&
		    (caps[0] < (long)starts[i] || caps[1] < caps[0] || caps[1] > (long)n))
			__builtin_trap();
		check_bound(st.steps, 2 * P * (n - starts[i] + 1));
	}

	size_t cap = 2 * n + 64;
	char *out = malloc(cap);
	char *ref = malloc(cap);
	if (out && ref) {
		long len = arn_regex_replace_stats(re, s, n, sub, out, cap, &st);
		check_bound(st.steps, (3 * P + 1) * (n + 1));
		if (n <= REF_MAX) {
			long rlen = ref_replace(re, s, n, sub, ref, cap, NULL);
			if (len != rlen || (len >= 0 && memcmp(out, ref, (size_t)len + 1) != 0))
				__builtin_trap();
			/* and a buffer too small by one is refused, never overrun */
			if (len > 0 && arn_regex_replace(re, s, n, sub, out, (size_t)len) != -1)
				__builtin_trap();
		}
	}
	free(out);
	free(ref);
	arn_regex_free(re);
	return 0;
}
