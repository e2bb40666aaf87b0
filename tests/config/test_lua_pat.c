/*
 * Arion's Lua pattern functions (lib/config/lua_pat.c): the same results
 * as the stock Lua 5.4 string library (the oracle, a plain state) on a
 * table of patterns and subjects (captures, position captures, %b, %f,
 * anchors, back references, sets, every error), on init and count
 * arguments, and on random patterns (a seeded generator, the unit-run
 * twin of fuzz_lua_pat.c); and bounded: a backtracking pattern, which the
 * stock find runs in C for minutes, ends with the call's instruction
 * limit, a pcall does not catch it, and small calls in a loop are charged
 * too.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lua_pat_ref.h"

struct two {
	struct arn_lua_mem mem;
	lua_State *arn, *ref;
};

static int setup(void **state)
{
	struct two *t = calloc(1, sizeof(*t));
	assert_non_null(t);
	t->arn = arn_lua_new(&t->mem);
	t->ref = luaL_newstate();
	assert_non_null(t->arn);
	assert_non_null(t->ref);
	luaL_openlibs(t->ref);
	arn_lua_arm(t->arn, &t->mem);
	assert_int_equal(lpr_setup(t->arn), 0);
	assert_int_equal(lpr_setup(t->ref), 0);
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct two *t = *state;
	arn_lua_close(t->arn);
	lua_close(t->ref);
	free(t);
	return 0;
}

static char out_a[1 << 16], out_r[1 << 16];

/* probe in both; @return false (and nothing compared) when Arion's ran
 * out of instructions: the stock one could run for ever */
static bool same(struct two *t, const char *s, size_t sl, const char *p, size_t pl, long long i)
{
	arn_lua_arm(t->arn, &t->mem);
	size_t na = lpr_run(t->arn, s, sl, p, pl, i, out_a, sizeof(out_a));
	if (t->mem.over || strstr(out_a, "instruction limit reached"))
		return false;
	size_t nr = lpr_run(t->ref, s, sl, p, pl, i, out_r, sizeof(out_r));
	if (na != nr || memcmp(out_a, out_r, na) != 0)
		fail_msg("string %.*s, pattern %.*s, init %lld:\n-- arion --\n%s\n-- lua --\n%s",
			 (int)sl, s, (int)pl, p, i, out_a, out_r);
	return true;
}

static const char *const pats[] = {
    "",
    "a",
    "^a",
    "a$",
    "^$",
    "$",
    "^",
    ".",
    "..",
    "a*",
    "a+",
    "a-",
    "a?",
    ".-b",
    ".*b",
    "^.-b",
    "^(.-)b",
    "(a*(.)%w(%s*))",
    "()",
    "()a()",
    "(()a)",
    "(a)(b)",
    "((a)(b))",
    "%a+",
    "%A+",
    "%d",
    "%D+",
    "%l%u",
    "%s*",
    "%S+",
    "%w+",
    "%W",
    "%x+",
    "%p",
    "%c",
    "%g+",
    "%%",
    "%.",
    "%]",
    "[a-c]+",
    "[^a-c]+",
    "[]]",
    "[^]]",
    "[%a%d]",
    "[%]]",
    "[a-]",
    "[-a]",
    "[a%-z]",
    "[%w_]+",
    "[^%s]+",
    "[.]",
    "[^.]",
    "[a-c-e]",
    "%bxy",
    "%b()",
    "%b((",
    "%b",
    "%ba",
    "%f[%w]%w+",
    "%f[%W]",
    "%f[%a]",
    "%f[^%z]",
    "%f[%z]",
    "%f",
    "%fa",
    "(a)%1",
    "(a*)%1",
    "()%1",
    "%1",
    "(a)%2",
    "(a%1)",
    "(a",
    "a)",
    "(()",
    "%",
    "a%",
    "[a",
    "[^",
    "[a%",
    "[]",
    "[^]",
    "((((((((((((((((((((((((((((((((a))))))))))))))))))))))))))))))))",
    "(((((((((((((((((((((((((((((((((a)))))))))))))))))))))))))))))))))",
    "a-$",
    "a*$",
    "x?y?z?",
    "(h)(e)(l)(l)(o)",
    "^(%w+)=(%w+)$",
    "(%w+)%s*=%s*(%w+)",
    "$a",
    "a^",
    "%$",
    "[$]",
    "[%^]",
    "[a^]",
    "%z",
    "%Z",
    ".-$",
    "(.-)%s*$",
    "^%s*(.-)%s*$",
    "%f[%a]%a+%f[%A]",
    "(x*)",
    "x*y*",
    "[%z]",
    "b-",
    "b*",
    "%B",
    "%Bxy",
    "%9",
    "(%d+)%.(%d+)",
    "a.b",
};

static const char *const subjects[] = {
    "",
    "a",
    "aaa",
    "ab",
    "aab",
    "baaac",
    "hello world from Lua",
    "key = value",
    "x(a(b)c)y (d) x(",
    "  trim me  ",
    "THE (quick) fox",
    "a.b-c_d%e]f[g^h$",
    "\x01\x7f\xff tab\there",
    "xyxxyy",
    "1.25 3.5 10",
    "^a$",
};

static void test_lua_pat_table(void **state)
{
	struct two *t = *state;
	unsigned n = 0;
	for (size_t i = 0; i < sizeof(pats) / sizeof(pats[0]); i++)
		for (size_t j = 0; j < sizeof(subjects) / sizeof(subjects[0]); j++) {
			const char *s = subjects[j];
			static const long long inits[] = {1, 0, 2, -1, -3, -100, 5, 30};
			for (size_t k = 0; k < sizeof(inits) / sizeof(inits[0]); k++)
				n += same(t, s, strlen(s), pats[i], strlen(pats[i]), inits[k]);
		}
	/* every case small: none ran out */
	assert_int_equal(n, sizeof(pats) / sizeof(pats[0]) * sizeof(subjects) /
				sizeof(subjects[0]) * 8);
	/* embedded zeros in the subject and the pattern */
	assert_true(same(t, "a\0b\0c", 5, "%z", 2, 1));
	assert_true(same(t, "a\0b\0c", 5, "\0b", 2, 1));
	assert_true(same(t, "a\0b\0c", 5, "[\0]", 3, 1));
	assert_true(same(t, "a\0b\0c", 5, "%b\0c", 4, 1));
	assert_true(same(t, "a\0b\0c", 5, "b.", 2, 1));
	assert_true(same(t, "a\0b\0c", 5, "[^%z]+", 6, 1));
}

/* What the table does not reach: arguments, replacements' every kind,
 * gmatch's anchor rule and its init. */
static void test_lua_pat_api(void **state)
{
	struct two *t = *state;
	static const char *const exprs[] = {
	    "return ('abc'):find('b', 1, true)",
	    "return ('a.c'):find('.', 1, true)",
	    "return ('a.c'):find('.', 3, true)",
	    "return ('abc'):find('', 10)",
	    "return ('abc'):find('', 4)",
	    "return ('abc'):match('()', 4)",
	    "return ('abc'):find('b', 1.0)",
	    "return pcall(string.find, 'abc', 'b', 1.5)",
	    "return pcall(string.find, 'abc')",
	    "return pcall(string.find, nil, 'a')",
	    "return pcall(string.gsub, 'abc', 'b')",
	    "return pcall(string.gsub, 'abc', 'b', true)",
	    "return pcall(string.gmatch, 'abc')",
	    "return (123):find(2)",
	    "return string.find(12345, 34)",
	    "return ('abc'):gsub('b', 7)",
	    "return ('abc'):gsub('%w', '%0%0', 2)",
	    "return ('abc'):gsub('%w', '%0', -1)",
	    "return ('abc'):gsub('', '-')",
	    "return ('abc'):gsub('^', '-')",
	    "return ('abc'):gsub('$', '-')",
	    "return ('abc'):gsub('b*', '-')",
	    "return ('hello world'):gsub('(o)', '[%1]')",
	    "return ('hello world'):gsub('()o', '%1')",
	    "return pcall(string.gsub, 'abc', 'b', '%2')",
	    "return pcall(string.gsub, 'abc', 'b', '%x')",
	    "return pcall(string.gsub, 'abc', 'b', 'x%')",
	    "return ('abc'):gsub('(b)', {b = 1.5})",
	    "return ('abc'):gsub('(b)', {b = true})",
	    "return pcall(string.gsub, 'abc', '(b)', {b = true})",
	    "return ('abc'):gsub('%w', function(c) return c:upper() .. '.' end)",
	    "return ('abc'):gsub('()(%w)', function(p, c) return p end)",
	    "return ('abc'):gsub('%w', function() end)",
	    "return ('a,b,,c'):gsub(',', {})",
	    "local r = {} for k, v in ('a=1, b=2'):gmatch('(%w+)=(%w+)') do r[#r+1] = k..v end"
	    " return table.concat(r, ' ')",
	    "local r = {} for w in ('^a ^b a'):gmatch('^a') do r[#r+1] = w end return #r",
	    "local r = {} for w in ('one two three'):gmatch('%a+', 5) do r[#r+1] = w end"
	    " return table.concat(r, ' ')",
	    "local r = {} for w in ('one two'):gmatch('%a+', -3) do r[#r+1] = w end"
	    " return table.concat(r, ' ')",
	    "local r = {} for w in ('abc'):gmatch('', 10) do r[#r+1] = w end return #r",
	    "local r = {} for p in ('abc'):gmatch('()') do r[#r+1] = p end return table.concat(r)",
	    "local r = {} for a in ('aaa'):gmatch('a*') do r[#r+1] = '<'..a..'>' end"
	    " return table.concat(r)",
	    "local f = ('ab'):gmatch('.') return f(), f(), f(), f()",
	    "return pcall(function() for a in ('x'):gmatch('(') do end end)",
	    "return ('  x  '):match('^%s*(.-)%s*$')",
	    "return ('THE (quick) fox'):find('%((%a+)%)')",
	    "return ('f(a(b)c)'):match('%b()')",
	    "return ('THE (quick) fox'):gsub('%f[%a]%a+', function(w) return w:lower() end)",
	};
	for (size_t i = 0; i < sizeof(exprs) / sizeof(exprs[0]); i++) {
		char a[512], r[512];
		lua_State *ls[2] = {t->arn, t->ref};
		char *o[2] = {a, r};
		for (int k = 0; k < 2; k++) {
			char code[1024];
			snprintf(
			    code, sizeof(code),
			    "local function ser(...) local t = {} for i = 1, select('#', ...) do"
			    " local v = select(i, ...) t[#t + 1] = type(v) .. ':' .. tostring(v)"
			    " end return table.concat(t, '|') end"
			    " return ser(pcall(function() %s end))",
			    exprs[i]);
			arn_lua_arm(t->arn, &t->mem);
			assert_int_equal(luaL_loadbufferx(ls[k], code, strlen(code), "=e", "t"), 0);
			if (lua_pcall(ls[k], 0, 1, 0) != LUA_OK)
				fail_msg("%s: %s", exprs[i], lua_tostring(ls[k], -1));
			snprintf(o[k], 512, "%s", lua_tostring(ls[k], -1));
			lua_pop(ls[k], 1);
		}
		if (strcmp(a, r) != 0)
			fail_msg("%s\n-- arion --\n%s\n-- lua --\n%s", exprs[i], a, r);
	}
}

/* A random pattern of the language's pieces over a small alphabet. */
static size_t gen_pat(uint64_t *x, char *p, size_t cap)
{
	static const char *const pieces[] = {
	    "a",  "b",	 ".",	"%a", "%d",   "%s", "[ab]", "[^a]", "[a-c]", "*",  "+",
	    "-",  "?",	 "(",	")",  "()",   "^",  "$",    "%b()", "%f[a]", "%1", "%2",
	    "%%", "[%]", "[]]", "%",  "%bab", "x",  "(a)",  "(.-)", "%W",    "[",  "]",
	};
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	size_t n = 1 + *x % 7, len = 0;
	for (size_t i = 0; i < n; i++) {
		*x ^= *x << 13;
		*x ^= *x >> 7;
		*x ^= *x << 17;
		const char *q = pieces[*x % (sizeof(pieces) / sizeof(pieces[0]))];
		size_t ql = strlen(q);
		if (len + ql >= cap)
			break;
		memcpy(p + len, q, ql);
		len += ql;
	}
	return len;
}

static void test_lua_pat_random(void **state)
{
	struct two *t = *state;
	uint64_t x = 0x9e3779b97f4a7c15ull;
	static const char alpha[] = "aab()x 1";
	unsigned ran = 0;
	for (int it = 0; it < 20000; it++) {
		char p[64], s[24];
		size_t pl = gen_pat(&x, p, sizeof(p));
		size_t sl = x % sizeof(s);
		for (size_t i = 0; i < sl; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			s[i] = alpha[x % (sizeof(alpha) - 1)];
		}
		ran += same(t, s, sl, p, pl, (long long)(x % 5) - 1);
	}
	assert_true(ran > 19000);
}

static const char *run_arn(struct two *t, const char *code)
{
	arn_lua_arm(t->arn, &t->mem);
	lua_settop(t->arn, 0);
	assert_int_equal(luaL_loadbufferx(t->arn, code, strlen(code), "=h", "t"), 0);
	if (lua_pcall(t->arn, 0, 1, 0) == LUA_OK)
		return "ok";
	return lua_tostring(t->arn, -1);
}

/* The stock find returns nil after ~9 M matcher steps (120^4 / 24; a
 * tenth of a second); Arion's stops at the call's budget. Fails before the fix:
 * "ok" != "instruction limit reached". */
static void test_lua_pat_backtracking_bounded(void **state)
{
	struct two *t = *state;
	const char *e = run_arn(t, "return ('a'):rep(120):find('.-.-.-b')");
	assert_non_null(strstr(e, "instruction limit reached"));
	assert_true(t->mem.over);
	/* the brief's hostile one: minutes in the stock find */
	e = run_arn(t, "return ('a'):rep(8000):find('.-.-.-.-b')");
	assert_non_null(strstr(e, "instruction limit reached"));
	/* a pcall does not catch it, so the script cannot loop on */
	e = run_arn(t, "for i = 1, 100 do pcall(string.find, ('a'):rep(8000), '.-.-.-.-b') end"
		       " return 1");
	assert_non_null(strstr(e, "instruction limit reached"));
	/* string.rep past the budget ends the call as the hook does: the
	 * pcall returns, and the next instruction fails (fails before: the
	 * script went on and returned "ok") */
	t->mem.over = false;
	e = run_arn(t, "pcall(string.rep, 'x', 1000000000) return 1");
	assert_non_null(strstr(e, "instruction limit reached"));
	assert_true(t->mem.over);
	/* every function: gsub, match, gmatch */
	e = run_arn(t, "return (('a'):rep(8000)):gsub('.-.-.-.-b', '')");
	assert_non_null(strstr(e, "instruction limit reached"));
	e = run_arn(t, "return (('a'):rep(8000)):match('(.-)(.-)(.-)b')");
	assert_non_null(strstr(e, "instruction limit reached"));
	e = run_arn(t, "for x in (('a'):rep(8000)):gmatch('.-.-.-b') do end");
	assert_non_null(strstr(e, "instruction limit reached"));
	/* a set as long as the subject, tried at every position */
	e = run_arn(t,
		    "local s = ('b'):rep(100000) return s:find('[' .. ('a'):rep(100000) .. ']')");
	assert_non_null(strstr(e, "instruction limit reached"));
	/* plain find: the stock memchr + memcmp is n * m */
	e = run_arn(
	    t, "local s = ('a'):rep(1000000) return s:find(('a'):rep(500000) .. 'b', 1, true)");
	assert_non_null(strstr(e, "instruction limit reached"));
	/* a replacement string's bytes, scanned at every match */
	e = run_arn(t, "return (('a'):rep(100000)):gsub('', ('%0'):rep(50000))");
	assert_non_null(strstr(e, "instruction limit reached"));
	/* the same patterns on short subjects run */
	assert_string_equal(run_arn(t, "return ('aab'):find('.-.-.-b')"), "ok");
	assert_false(t->mem.over);
}

/* Work under a step of the hook in each call still adds up: 100,000
 * finds of ~800 steps each, 80 M steps the stock one runs unbounded.
 * Fails before the fix: "ok". */
static void test_lua_pat_small_calls_add_up(void **state)
{
	struct two *t = *state;
	const char *e = run_arn(t, "local s = ('a'):rep(40) for i = 1, 100000 do s:find('.-b') end"
				   " return 1");
	assert_non_null(strstr(e, "instruction limit reached"));
	/* and charged, not free: 200 of them take a part of the budget */
	arn_lua_arm(t->arn, &t->mem);
	uint32_t before = t->mem.budget;
	lua_settop(t->arn, 0);
	const char *c = "local s = ('a'):rep(40) for i = 1, 200 do s:find('.-b') end";
	assert_int_equal(luaL_loadbufferx(t->arn, c, strlen(c), "=c", "t"), 0);
	assert_int_equal(lua_pcall(t->arn, 0, 0, 0), LUA_OK);
	/* 200 x (41 positions x ~60 steps): ~500 K steps, ~500 hook steps */
	assert_true(before - t->mem.budget > 300);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_lua_pat_table, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lua_pat_api, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lua_pat_random, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lua_pat_backtracking_bounded, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lua_pat_small_calls_add_up, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
