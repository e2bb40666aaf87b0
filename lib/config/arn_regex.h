/*
 * Regular expressions for Envoy's safe_regex (route paths, headers, query
 * parameters, regex_rewrite, SAN matchers): the RE2 syntax that Envoy
 * configurations use, matched in linear time.
 *
 * Why our own engine: Envoy's safe_regex is RE2, whose promise is that a
 * match costs O(pattern x input), never exponential, so a hostile request
 * cannot stall a worker. RE2 is C++ and not available here; PCRE and POSIX
 * regcomp/regexec are backtracking (or unbounded) engines, and bounding
 * their program size or input length limits the damage without removing
 * the exponential cases. This is a Thompson-NFA / Pike VM: every input byte
 * advances each of at most ARN_REGEX_MAX_INSTS threads once, so time is
 * O(instructions x input) and memory is fixed (on the caller's stack), with
 * no allocation while matching: safe on worker lcores.
 *
 * Syntax (RE2's, byte-oriented, UTF-8 aware for `.` and negated classes):
 * literals, `.`, `[...]` / `[^...]` with ranges, `[:alpha:]`-style classes
 * and escapes, `\d \D \s \S \w \W`, `\b \B`, `^ $ \A \z` (no multi-line),
 * `* + ? {n} {n,} {n,m}` and their lazy forms, `|`, `(...)`, `(?:...)`,
 * `(?P<name>...)`, `(?<name>...)`, flags `(?i)` `(?s)` and `(?i:...)`.
 * Anything else (`\p{..}`, `\Q..\E`, `\C`, `(?m)`, `(?U)`, non-ASCII
 * characters inside a class, back-references, look-around) is refused at
 * compile time with a message naming the construct, so a configuration
 * that Envoy would read differently is never silently accepted.
 *
 * Compiled once (on the control lcore); a compiled regex is immutable and
 * may be used by any number of threads at once.
 */
#ifndef ARN_REGEX_H
#define ARN_REGEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Limits: the compiled program size (RE2's max_program_size plays the same
 * role in Envoy) and the counted repetition bound (RE2's is 1000). */
#define ARN_REGEX_MAX_INSTS 1024
#define ARN_REGEX_MAX_REPEAT 1000
/* Capture groups reported to rewrites: \0 .. \9 */
#define ARN_REGEX_MAX_GROUPS 10

struct arn_regex;

/**
 * Compile @p len bytes of @p pattern.
 * @return the regex (free with arn_regex_free()), or NULL with the reason
 *   (one line, naming the construct and its offset) in @p err (@p errlen
 *   bytes, NUL-terminated).
 */
struct arn_regex *arn_regex_compile(const char *pattern, size_t len, char *err, size_t errlen);

void arn_regex_free(struct arn_regex *re);

/**
 * The literal bytes every match must start with (empty if none), for
 * prefilters: a full match of @p s is only possible if @p s starts with
 * them. Valid as long as @p re.
 */
const char *arn_regex_literal_prefix(const struct arn_regex *re, size_t *len);

/** Number of capture groups (not counting the whole match). */
unsigned arn_regex_groups(const struct arn_regex *re);

/**
 * The work one call did, so that tests and fuzzers can bound it by counting
 * rather than timing. A step is a thread entering an instruction, or a
 * list entry examined at one position. Bounds, with P the program size
 * (arn_regex_program_size()) and n the subject length:
 *   full match, search from start: steps <= 2 * P * (n - start + 1);
 *   global replace:                steps <= (3 * P + 1) * (n + 1).
 */
struct arn_regex_stats {
	uint64_t steps;
};

/** Instructions in @p re's program (at most ARN_REGEX_MAX_INSTS). */
unsigned arn_regex_program_size(const struct arn_regex *re);

/** Does @p re match the whole of @p s (RE2::FullMatch)? */
bool arn_regex_full_match(const struct arn_regex *re, const char *s, size_t n);

/** arn_regex_full_match(), the work done in @p st (may be NULL). */
bool arn_regex_full_match_stats(const struct arn_regex *re, const char *s, size_t n,
				struct arn_regex_stats *st);

/**
 * Leftmost-first search (RE2::PartialMatch) in @p s from @p start.
 * @param caps  receives 2 * (groups + 1) offsets, at most 2 * @p ncap_pairs
 *   (-1 for a group that did not take part); may be NULL.
 * @return true if found.
 */
bool arn_regex_search(const struct arn_regex *re, const char *s, size_t n, size_t start, long *caps,
		      size_t ncap_pairs);

/** arn_regex_search(), the work done in @p st (may be NULL). */
bool arn_regex_search_stats(const struct arn_regex *re, const char *s, size_t n, size_t start,
			    long *caps, size_t ncap_pairs, struct arn_regex_stats *st);

/**
 * RE2::GlobalReplace: replace every non-overlapping match of @p re in
 * @p s with @p sub, where `\0`..`\9` insert groups and `\\` a backslash.
 * Each search resumes where the previous match ended; an empty match right
 * there is refused (the search steps over one UTF-8 character instead), as
 * RE2 does. One pass over @p s: linear in @p n whatever the matches.
 * Needs ~210 KiB of stack.
 * @return the output length (output NUL-terminated in @p out when it fits),
 *   or -1 if @p cap is too small.
 */
long arn_regex_replace(const struct arn_regex *re, const char *s, size_t n, const char *sub,
		       char *out, size_t cap);

/** arn_regex_replace(), the work done in @p st (may be NULL). */
long arn_regex_replace_stats(const struct arn_regex *re, const char *s, size_t n, const char *sub,
			     char *out, size_t cap, struct arn_regex_stats *st);

/**
 * Check a substitution string against @p re (groups that exist, escapes).
 * @return true, or false with the reason in @p err.
 */
bool arn_regex_check_substitution(const struct arn_regex *re, const char *sub, char *err,
				  size_t errlen);

#endif
