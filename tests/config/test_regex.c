/*
 * The regex engine's global replace (regex_rewrite) and its work bounds:
 * RE2::GlobalReplace's results, a differential test against the obvious
 * loop of searches (regex_ref.h), and steps counted (not time) to prove
 * that replace, search and full match are linear in the subject.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arn_regex.h"
#include "regex_ref.h"
#include "tc.h"

static void replace_is(const char *pat, const char *sub, const char *in, const char *want)
{
	struct arn_regex *r = tc_re(pat);
	char out[512];
	long n = arn_regex_replace(r, in, strlen(in), sub, out, sizeof(out));
	if (n < 0 || strcmp(out, want) != 0)
		fail_msg("/%s/ -> '%s' over '%s': got '%s' (%ld), want '%s'", pat, sub, in,
			 n < 0 ? "" : out, n, want);
	assert_int_equal(n, strlen(want));
	arn_regex_free(r);
}

/* RE2's own GlobalReplace cases (re2/testing/re2_test.cc, TEST(RE2,
 * Replace)), then the empty-match rules: none where the previous match
 * ended, and a refused one steps over a whole UTF-8 character. */
static void test_regex_replace_re2_semantics(void **state)
{
	(void)state;
	replace_is("(qu|[b-df-hj-np-tv-z]*)([a-z]+)", "\\2\\1ay",
		   "the quick brown fox jumps over the lazy dogs.",
		   "ethay ickquay ownbray oxfay umpsjay overay ethay azylay ogsday.");
	replace_is("\\w+", "\\0-NOSPAM", "abcd.efghi@google.com",
		   "abcd-NOSPAM.efghi-NOSPAM@google-NOSPAM.com-NOSPAM");
	replace_is("^", "(START)", "foo", "(START)foo");
	replace_is("^", "(START)", "", "(START)");
	replace_is("$", "(END)", "", "(END)");
	replace_is("b", "bb", "ababababab", "abbabbabbabbabb");
	replace_is("b", "bb", "bbbbbb", "bbbbbbbbbbbb");
	replace_is("b+", "bb", "bbbbbb", "bb");
	replace_is("b*", "bb", "bbbbbb", "bb");
	replace_is("b*", "bb", "aaaaa", "bbabbabbabbabbabb");
	replace_is("a.*a", "(\\0)", "aba\naba", "(aba)\n(aba)");
	/* no empty match right after a match (Python would give -b--) */
	replace_is("a*", "-", "baaa", "-b-");
	replace_is("a*", "-", "aab", "-b-");
	/* between every character, and a character is a UTF-8 sequence */
	replace_is("x*", "-", "abc", "-a-b-c-");
	replace_is("x*", "-", "a\xc3\xa9z", "-a-\xc3\xa9-z-");
	replace_is("x*", "-", "\xf0\x9f\x98\x80", "-\xf0\x9f\x98\x80-");
	/* ... or one byte where the bytes are not one */
	replace_is("x*", "-", "\xc3", "-\xc3-");
	replace_is("x*", "-", "\xa9\xc3(", "-\xa9-\xc3-(-");
	replace_is("x*", "-", "\xe0\x80\x80", "-\xe0-\x80-\x80-");	    /* overlong */
	replace_is("x*", "-", "\xf4\x90\x80\x80", "-\xf4-\x90-\x80-\x80-"); /* > U+10FFFF */
	/* anchors and word boundaries hold at the subject's ends only */
	replace_is("^a", "X", "aaa", "Xaa");
	replace_is("a$", "X", "aaa", "aaX");
	replace_is("\\b", "|", "ab cd", "|ab| |cd|");
	replace_is("\\B", "|", "ab cd", "a|b c|d");
	/* leftmost-first, a later higher-priority match replaces an earlier one */
	replace_is("(a*b)|a", "<\\0>", "aaab", "<aaab>");
	replace_is("(a*b)|a", "<\\0>", "aaa", "<a><a><a>");
	replace_is("(a*b)|a", "<\\0>", "aabaa", "<aab><a><a>");
	replace_is("a|ab|abc", "<\\0>", "abcab", "<a>bc<a>b");
	replace_is("(a+?)(b*)", "<\\2\\1>", "aabba", "<a><bba><a>");
	/* groups that did not take part are empty; \\ is a backslash */
	replace_is("(a)|(b)", "[\\1\\2\\\\]", "ab", "[a\\][b\\]");
	/* the existing route rewrite */
	replace_is("^/service/([^/]+)(/.*)$", "\\2/instance/\\1", "/service/foo/v1/api",
		   "/v1/api/instance/foo");
}

/* Output is written speculatively and cut back when a higher-priority
 * thread of the same search matches later: only the final length counts
 * against the buffer. */
static void test_regex_replace_output_bound(void **state)
{
	(void)state;
	struct arn_regex *r = tc_re("(a*b)|a");
	char out[16];
	/* "aaab": <a><a><a> would be 3 x 8 bytes before b turns it into one */
	assert_int_equal(arn_regex_replace(r, "aaab", 4, "12345678", out, 9), 8);
	assert_string_equal(out, "12345678");
	assert_int_equal(arn_regex_replace(r, "aaab", 4, "12345678", out, 8), -1);
	assert_int_equal(arn_regex_replace(r, "aaa", 3, "1234", out, 12), -1);
	assert_int_equal(arn_regex_replace(r, "aaa", 3, "1234", out, 13), 12);
	assert_int_equal(arn_regex_replace(r, "", 0, "1234", out, 0), -1);
	assert_int_equal(arn_regex_replace(r, "", 0, "1234", out, 1), 0);
	assert_string_equal(out, "");
	arn_regex_free(r);
}

/* ---- differential: random patterns and subjects against regex_ref.h ---------- */

struct gen {
	uint64_t x;
	char *p;
	char *end;
};

static unsigned rnd(struct gen *g, unsigned n)
{
	g->x ^= g->x << 13;
	g->x ^= g->x >> 7;
	g->x ^= g->x << 17;
	return (unsigned)(g->x % n);
}

static void emit(struct gen *g, const char *s)
{
	size_t l = strlen(s);
	if (g->p + l < g->end) {
		memcpy(g->p, s, l);
		g->p += l;
	}
}

static void gen_re(struct gen *g, int depth)
{
	static const char *const atoms[] = {"a", "b", ".", "[ab]", "[^a]", "\\w",   "é",
					    "",	 "^", "$", "\\b",  "\\B",  "(?i:A)"};
	static const char *const reps[] = {"",	 "",   "",   "*",     "+",  "?",
					   "*?", "+?", "??", "{0,2}", "{2}"};
	unsigned k = depth > 3 ? 0 : rnd(g, 5);
	if (k == 3) {
		gen_re(g, depth + 1);
		emit(g, "|");
		gen_re(g, depth + 1);
		return;
	}
	if (k == 4) {
		emit(g, rnd(g, 2) ? "(" : "(?:");
		gen_re(g, depth + 1);
		emit(g, ")");
		emit(g, reps[rnd(g, sizeof(reps) / sizeof(reps[0]))]);
		return;
	}
	unsigned natoms = 1 + rnd(g, 3);
	for (unsigned i = 0; i < natoms; i++) {
		const char *a = atoms[rnd(g, sizeof(atoms) / sizeof(atoms[0]))];
		emit(g, a);
		bool repeatable = a[0] && a[0] != '^' && a[0] != '$' && strcmp(a, "\\b") != 0 &&
				  strcmp(a, "\\B") != 0;
		if (repeatable)
			emit(g, reps[rnd(g, sizeof(reps) / sizeof(reps[0]))]);
	}
}

static void test_regex_replace_differential(void **state)
{
	(void)state;
	static const char *const pieces[] = {"a",	 "a",	 "b",	 "b",	 "c", " ",
					     "\xc3\xa9", "\xc3", "\xa9", "\xff", "A"};
	static const char *const subs[] = {"<\\0>", "", "-", "[\\1|\\2]", "\\\\\\0\\0"};
	struct gen g = {.x = 0x9e3779b97f4a7c15ull};
	unsigned compared = 0;
	for (int i = 0; i < 4000; i++) {
		char pat[128];
		g.p = pat;
		g.end = pat + sizeof(pat) - 1;
		gen_re(&g, 0);
		*g.p = 0;
		char err[256];
		struct arn_regex *r = arn_regex_compile(pat, strlen(pat), err, sizeof(err));
		if (!r)
			continue; /* e.g. a repetition of an empty group */
		for (int j = 0; j < 12; j++) {
			char subj[64];
			g.p = subj;
			g.end = subj + sizeof(subj) - 1;
			unsigned len = rnd(&g, 12);
			for (unsigned k = 0; k < len; k++)
				emit(&g, pieces[rnd(&g, sizeof(pieces) / sizeof(pieces[0]))]);
			size_t n = (size_t)(g.p - subj);
			const char *sub = subs[rnd(&g, sizeof(subs) / sizeof(subs[0]))];
			char a[1024], b[1024];
			size_t cap = rnd(&g, 4) ? sizeof(a) : rnd(&g, 40);
			long la = arn_regex_replace(r, subj, n, sub, a, cap);
			long lb = ref_replace(r, subj, n, sub, b, cap, NULL);
			if (la != lb || (la >= 0 && memcmp(a, b, (size_t)la + 1) != 0))
				fail_msg("/%s/ -> '%s' over '%.*s' (cap %zu): got %ld '%s', "
					 "reference %ld '%s'",
					 pat, sub, (int)n, subj, cap, la, la >= 0 ? a : "", lb,
					 lb >= 0 ? b : "");
			compared++;
		}
		arn_regex_free(r);
	}
	assert_true(compared > 20000);
}

/* ---- steps: linear in the subject ------------------------------------------------ */

static char *subject(size_t n, const char *unit)
{
	size_t u = strlen(unit);
	char *s = malloc(n + 1);
	assert_non_null(s);
	for (size_t i = 0; i < n; i++)
		s[i] = unit[i % u];
	s[n] = 0;
	return s;
}

static uint64_t replace_steps(const struct arn_regex *r, const char *s, size_t n, const char *sub)
{
	size_t cap = 4 * n + 64;
	char *out = malloc(cap);
	assert_non_null(out);
	struct arn_regex_stats rs;
	assert_true(arn_regex_replace_stats(r, s, n, sub, out, cap, &rs) >= 0);
	free(out);
	return rs.steps;
}

/*
 * Each pattern over 1 KB, 20 KB and 200 KB: within the documented bound
 * ((3P + 1)(n + 1)) and within a small constant of n, and ten times the
 * subject costs ten times the steps. The quadratic loop of searches is
 * shown too, on a subject small enough to finish: (a*b)|a over 20 KB took
 * it 2.8 s.
 */
static void test_regex_replace_linear_steps(void **state)
{
	(void)state;
	static const struct {
		const char *pat, *unit, *sub;
		unsigned k; /* steps per subject byte, at most (measured + ~25%) */
	} cases[] = {
	    {"(a*b)|a", "a", "x", 30},	      /* every search looks for a b to the end */
	    {"a*", "a", "x", 21},	      /* one match, then the empty one refused */
	    {"x*", "ab", "-", 20},	      /* an empty match between every character */
	    {"x*", "\xc3\xa9", "-", 10},      /* ... and every UTF-8 character */
	    {"a|ab|abc", "abc", "<\\0>", 21}, /* leftmost-first, cut at each match */
	    {"^a", "a", "x", 5},	      /* anchors: only the start can match */
	    {"a$", "a", "x", 8},	      /* ... only the end */
	    {"\\b", "ab ", "|", 13},	      /* empty matches at word boundaries */
	    {"(a|aa)+$x", "a", "x", 45},      /* never matches */
	    {"(x+x+)+y", "x", "y", 60},	      /* the backtracking classic */
	    {"((a*)*b)|.", "a", "-", 66},     /* nested loops, the fallback each time */
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct arn_regex *r = tc_re(cases[c].pat);
		uint64_t P = arn_regex_program_size(r);
		uint64_t steps[3];
		static const size_t sizes[3] = {1000, 20000, 200000};
		for (int i = 0; i < 3; i++) {
			size_t n = sizes[i];
			char *s = subject(n, cases[c].unit);
			steps[i] = replace_steps(r, s, n, cases[c].sub);
			if (steps[i] > (3 * P + 1) * (n + 1) || steps[i] > cases[c].k * (n + 1))
				fail_msg("/%s/ over %zu bytes: %llu steps (P %llu, bound %llu, "
					 "%u per byte)",
					 cases[c].pat, n, (unsigned long long)steps[i],
					 (unsigned long long)P,
					 (unsigned long long)((3 * P + 1) * (n + 1)), cases[c].k);
			free(s);
		}
		/* linear: x10 the subject, x10 the steps (give or take the ends) */
		double ratio = (double)steps[2] / (double)steps[1];
		if (ratio < 9.5 || ratio > 10.5)
			fail_msg("/%s/: 200 KB / 20 KB steps = %.3f (%llu / %llu)", cases[c].pat,
				 ratio, (unsigned long long)steps[2], (unsigned long long)steps[1]);
		print_message("  /%s/: %llu steps over 20 KB, %llu over 200 KB (P %llu, k %u)\n",
			      cases[c].pat, (unsigned long long)steps[1],
			      (unsigned long long)steps[2], (unsigned long long)P, cases[c].k);
		arn_regex_free(r);
	}
	/* the loop of searches on (a*b)|a: quadratic (and the same output) */
	struct arn_regex *r = tc_re("(a*b)|a");
	size_t n = 2000;
	char *s = subject(n, "a");
	char *a = malloc(n + 1), *b = malloc(n + 1);
	uint64_t ref_steps = 0;
	struct arn_regex_stats rs;
	assert_int_equal(arn_regex_replace_stats(r, s, n, "x", a, n + 1, &rs), n);
	assert_int_equal(ref_replace(r, s, n, "x", b, n + 1, &ref_steps), n);
	assert_string_equal(a, b);
	assert_true(ref_steps > 100 * rs.steps);
	free(a);
	free(b);
	free(s);
	arn_regex_free(r);
}

/* Full match and search (route paths, header and SAN matchers) were linear
 * already: now it is counted. The classic exponential cases of
 * backtracking engines included. */
static void test_regex_match_linear_steps(void **state)
{
	(void)state;
	static const struct {
		const char *pat, *unit, *tail;
	} cases[] = {
	    {"(a*)*c", "a", "b"},
	    {"(a|aa)+$x", "a", "b"},
	    {"(x+x+)+y", "x", ""},
	    {"(a*b)|a", "a", ""},
	    {"/api/v[0-9]+/.*", "/api/v1/", ""},
	    {".*a.*b.*c", "abx", ""},
	    {"(?i)(ab|a)*c", "Ab", "d"},
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct arn_regex *r = tc_re(cases[c].pat);
		uint64_t P = arn_regex_program_size(r);
		uint64_t full[3], search[3];
		static const size_t sizes[3] = {1000, 20000, 200000};
		for (int i = 0; i < 3; i++) {
			size_t n = sizes[i];
			char *s = subject(n, cases[c].unit);
			size_t tl = strlen(cases[c].tail);
			memcpy(s + n - tl, cases[c].tail, tl);
			struct arn_regex_stats rs;
			arn_regex_full_match_stats(r, s, n, &rs);
			full[i] = rs.steps;
			long caps[4];
			arn_regex_search_stats(r, s, n, 0, caps, 2, &rs);
			search[i] = rs.steps;
			uint64_t bound = 2 * P * (n + 1);
			if (full[i] > bound || search[i] > bound)
				fail_msg("/%s/ over %zu bytes: %llu / %llu steps, bound %llu",
					 cases[c].pat, n, (unsigned long long)full[i],
					 (unsigned long long)search[i], (unsigned long long)bound);
			free(s);
		}
		double rf = (double)full[2] / (double)full[1];
		double rs = (double)search[2] / (double)search[1];
		if (rf < 9.5 || rf > 10.5 || rs < 9.5 || rs > 10.5)
			fail_msg("/%s/: 200 KB / 20 KB steps: full %.3f, search %.3f", cases[c].pat,
				 rf, rs);
		arn_regex_free(r);
	}
}

const struct CMUnitTest regex_tests[] = {
    cmocka_unit_test(test_regex_replace_re2_semantics),
    cmocka_unit_test(test_regex_replace_output_bound),
    cmocka_unit_test(test_regex_replace_differential),
    cmocka_unit_test(test_regex_replace_linear_steps),
    cmocka_unit_test(test_regex_match_linear_steps),
};
const size_t n_regex_tests = sizeof(regex_tests) / sizeof(regex_tests[0]);
