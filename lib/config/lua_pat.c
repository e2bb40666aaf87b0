/*
 * Lua 5.4's pattern functions (string.find, match, gmatch, gsub) for the
 * sandbox (arn_lua.h), written for Arion: the stock ones run in C, where
 * the count hook never fires, so a pattern that backtracks
 * (("a"):rep(8000):find(".-.-.-.-b")) held a worker for minutes. These
 * have the same language and results (Lua 5.4.4's manual, section 6.4.1,
 * and its behaviour, checked against the stock library by
 * tests/config/test_lua_pat.c and fuzz_lua_pat.c), and charge every step
 * of the matcher to the call's instruction budget (arn_lua_charge): a
 * position tried, a class item examined, a byte of a %b run; bytes
 * compared or scanned in bulk (memchr, memcmp, a replacement string) at
 * one step per 16. Past the budget the call fails as a loop would.
 */
#include <ctype.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "arn_lua.h"

#define PAT_MAXCAPTURES 32 /* Lua's LUA_MAXCAPTURES */
#define PAT_MAXDEPTH 200   /* Lua's MAXCCALLS: the matcher's recursion */
#define CAP_UNFINISHED (-1)
#define CAP_POSITION (-2)
#define ESC '%'
#define SPECIALS "^$*+?.([%-"

struct pm {
	lua_State *L;
	struct arn_lua_mem *mem;
	const char *s0, *se; /* the subject */
	const char *pe;	     /* the pattern's end */
	int depth;	     /* recursion left */
	int level;	     /* captures open or closed */
	struct {
		const char *at;
		ptrdiff_t len; /* or CAP_UNFINISHED, CAP_POSITION */
	} cap[PAT_MAXCAPTURES];
};

static inline void step(struct pm *ms, uint64_t n)
{
	struct arn_lua_mem *m = ms->mem;
	if ((m->acc += n) >= ARN_LUA_HOOK_STEP)
		arn_lua_charge(ms->L, m, 0);
}

static void pm_init(struct pm *ms, lua_State *L, const char *s, size_t ls, const char *p, size_t lp)
{
	ms->L = L;
	lua_getallocf(L, (void **)&ms->mem);
	ms->s0 = s;
	ms->se = s + ls;
	ms->pe = p + lp;
}

static void pm_reset(struct pm *ms)
{
	ms->level = 0;
	ms->depth = PAT_MAXDEPTH;
}

/* %a, %d, ... on @p c (an upper-case class is its complement; any other
 * character stands for itself) */
static bool class_has(int c, int cl)
{
	bool r;
	switch (tolower(cl)) {
	case 'a':
		r = isalpha(c);
		break;
	case 'c':
		r = iscntrl(c);
		break;
	case 'd':
		r = isdigit(c);
		break;
	case 'g':
		r = isgraph(c);
		break;
	case 'l':
		r = islower(c);
		break;
	case 'p':
		r = ispunct(c);
		break;
	case 's':
		r = isspace(c);
		break;
	case 'u':
		r = isupper(c);
		break;
	case 'w':
		r = isalnum(c);
		break;
	case 'x':
		r = isxdigit(c);
		break;
	case 'z':
		r = c == 0;
		break; /* 5.1's, kept by 5.4 */
	default:
		return cl == c;
	}
	return isupper(cl) ? !r : r;
}

/* The end of the single-character class at @p p: after %x, after a
 * set's ']' (its first item may be ']'), else p + 1. */
static const char *item_end(struct pm *ms, const char *p)
{
	const char *p0 = p;
	char c = *p++;
	if (c == ESC) {
		if (p == ms->pe)
			luaL_error(ms->L, "malformed pattern (ends with '%%')");
		return p + 1;
	}
	if (c == '[') {
		if (p < ms->pe && *p == '^')
			p++;
		do {
			if (p == ms->pe)
				luaL_error(ms->L, "malformed pattern (missing ']')");
			if (*p++ == ESC && p < ms->pe)
				p++;
		} while (p == ms->pe || *p != ']');
		step(ms, (uint64_t)(p - p0));
		return p + 1;
	}
	return p;
}

/* Is @p c in the set [p, ec] (p at '[', ec at its ']')? */
static bool set_has(struct pm *ms, int c, const char *p, const char *ec)
{
	bool in = true;
	step(ms, (uint64_t)(ec - p));
	if (p[1] == '^') {
		in = false;
		p++;
	}
	while (++p < ec) {
		if (*p == ESC) {
			p++;
			if (class_has(c, (unsigned char)*p))
				return in;
		} else if (p[1] == '-' && p + 2 < ec) {
			p += 2;
			if ((unsigned char)p[-2] <= c && c <= (unsigned char)*p)
				return in;
		} else if ((unsigned char)*p == c) {
			return in;
		}
	}
	return !in;
}

/* Does subject byte @p s match the item [p, ep)? */
static bool one(struct pm *ms, const char *s, const char *p, const char *ep)
{
	step(ms, 1);
	if (s >= ms->se)
		return false;
	int c = (unsigned char)*s;
	switch (*p) {
	case '.':
		return true;
	case ESC:
		return class_has(c, (unsigned char)p[1]);
	case '[':
		return set_has(ms, c, p, ep - 1);
	default:
		return (unsigned char)*p == c;
	}
}

static const char *do_match(struct pm *ms, const char *s, const char *p);

/* %bxy at @p p (x, y): a balanced run from s */
static const char *balanced(struct pm *ms, const char *s, const char *p)
{
	if (p >= ms->pe - 1)
		luaL_error(ms->L, "malformed pattern (missing arguments to '%%b')");
	if (s >= ms->se || *s != *p)
		return NULL;
	char open = p[0], close = p[1];
	int depth = 1;
	while (++s < ms->se) {
		step(ms, 1);
		if (*s == close) {
			if (--depth == 0)
				return s + 1;
		} else if (*s == open) {
			depth++;
		}
	}
	return NULL;
}

/* item* or item+ (from s): the longest run, then shorter ones */
static const char *longest(struct pm *ms, const char *s, const char *p, const char *ep)
{
	ptrdiff_t i = 0;
	while (one(ms, s + i, p, ep))
		i++;
	for (; i >= 0; i--) {
		const char *r = do_match(ms, s + i, ep + 1);
		if (r)
			return r;
	}
	return NULL;
}

/* item- (from s): the shortest run that lets the rest match */
static const char *shortest(struct pm *ms, const char *s, const char *p, const char *ep)
{
	for (;;) {
		const char *r = do_match(ms, s, ep + 1);
		if (r)
			return r;
		if (!one(ms, s, p, ep))
			return NULL;
		s++;
	}
}

static const char *open_cap(struct pm *ms, const char *s, const char *p, ptrdiff_t what)
{
	if (ms->level >= PAT_MAXCAPTURES)
		luaL_error(ms->L, "too many captures");
	ms->cap[ms->level].at = s;
	ms->cap[ms->level].len = what;
	ms->level++;
	const char *r = do_match(ms, s, p);
	if (!r)
		ms->level--;
	return r;
}

static const char *close_cap(struct pm *ms, const char *s, const char *p)
{
	int l = ms->level - 1;
	while (l >= 0 && ms->cap[l].len != CAP_UNFINISHED)
		l--;
	if (l < 0)
		luaL_error(ms->L, "invalid pattern capture");
	ms->cap[l].len = s - ms->cap[l].at;
	const char *r = do_match(ms, s, p);
	if (!r)
		ms->cap[l].len = CAP_UNFINISHED;
	return r;
}

/* %1-%9 in a pattern: the capture's bytes again */
static const char *backref(struct pm *ms, const char *s, int d)
{
	int l = d - '1';
	if (l < 0 || l >= ms->level || ms->cap[l].len == CAP_UNFINISHED)
		luaL_error(ms->L, "invalid capture index %%%d", l + 1);
	ptrdiff_t len = ms->cap[l].len;
	if (len < 0) /* a position capture: Lua compares as a huge length */
		return NULL;
	step(ms, 1 + (uint64_t)len / 16);
	if (ms->se - s >= len && memcmp(ms->cap[l].at, s, (size_t)len) == 0)
		return s + len;
	return NULL;
}

/* The end of the match of pattern [p, pe) at @p s, or NULL. */
static const char *do_match(struct pm *ms, const char *s, const char *p)
{
	if (ms->depth-- == 0)
		luaL_error(ms->L, "pattern too complex");
	for (;;) {
		step(ms, 1);
		if (p == ms->pe)
			break;
		const char *ep;
		switch (*p) {
		case '(':
			if (p + 1 < ms->pe && p[1] == ')')
				s = open_cap(ms, s, p + 2, CAP_POSITION);
			else
				s = open_cap(ms, s, p + 1, CAP_UNFINISHED);
			goto out;
		case ')':
			s = close_cap(ms, s, p + 1);
			goto out;
		case '$':
			if (p + 1 != ms->pe)
				goto item;
			if (s != ms->se)
				s = NULL;
			goto out;
		case ESC:
			if (p + 1 == ms->pe)
				goto item;
			if (p[1] == 'b') {
				s = balanced(ms, s, p + 2);
				if (!s)
					goto out;
				p += 4;
				continue;
			}
			if (p[1] == 'f') {
				p += 2;
				if (p == ms->pe || *p != '[')
					luaL_error(ms->L, "missing '[' after '%%f' in pattern");
				ep = item_end(ms, p);
				int prev = s == ms->s0 ? 0 : (unsigned char)s[-1];
				int cur = s < ms->se ? (unsigned char)*s : 0;
				if (!set_has(ms, prev, p, ep - 1) && set_has(ms, cur, p, ep - 1)) {
					p = ep;
					continue;
				}
				s = NULL;
				goto out;
			}
			if (p[1] >= '0' && p[1] <= '9') {
				s = backref(ms, s, (unsigned char)p[1]);
				if (!s)
					goto out;
				p += 2;
				continue;
			}
			goto item;
		default:
		item:
			ep = item_end(ms, p);
			char q = ep < ms->pe ? *ep : 0;
			if (!one(ms, s, p, ep)) {
				if (q == '*' || q == '?' || q == '-') {
					p = ep + 1;
					continue;
				}
				s = NULL;
				goto out;
			}
			switch (q) {
			case '?': {
				const char *r = do_match(ms, s + 1, ep + 1);
				if (r) {
					s = r;
					goto out;
				}
				p = ep + 1;
				continue;
			}
			case '+':
				s = longest(ms, s + 1, p, ep);
				goto out;
			case '*':
				s = longest(ms, s, p, ep);
				goto out;
			case '-':
				s = shortest(ms, s, p, ep);
				goto out;
			default:
				s++;
				p = ep;
				continue;
			}
		}
	}
out:
	ms->depth++;
	return s;
}

/* Capture @p i (or the whole match [s, e) when there is none and i is
 * 0): its bytes in *cap and their length; a position capture pushed as
 * an integer and CAP_POSITION returned. */
static ptrdiff_t cap_get(struct pm *ms, int i, const char *s, const char *e, const char **cap)
{
	if (i >= ms->level) {
		if (i != 0)
			luaL_error(ms->L, "invalid capture index %%%d", i + 1);
		*cap = s;
		return e - s;
	}
	ptrdiff_t l = ms->cap[i].len;
	*cap = ms->cap[i].at;
	if (l == CAP_UNFINISHED)
		luaL_error(ms->L, "unfinished capture");
	else if (l == CAP_POSITION)
		lua_pushinteger(ms->L, (ms->cap[i].at - ms->s0) + 1);
	return l;
}

static void cap_push(struct pm *ms, int i, const char *s, const char *e)
{
	const char *cap;
	ptrdiff_t l = cap_get(ms, i, s, e, &cap);
	if (l != CAP_POSITION)
		lua_pushlstring(ms->L, cap, (size_t)l);
}

/* The captures (the whole match when none and @p s is set) */
static int caps_push(struct pm *ms, const char *s, const char *e)
{
	int n = ms->level == 0 && s ? 1 : ms->level;
	luaL_checkstack(ms->L, n, "too many captures");
	for (int i = 0; i < n; i++)
		cap_push(ms, i, s, e);
	return n;
}

/* A start position: negative from the end, clamped at 1 (Lua's posrelatI) */
static size_t start_at(lua_Integer pos, size_t len)
{
	if (pos > 0)
		return (size_t)pos;
	if (pos == 0)
		return 1;
	if (pos < -(lua_Integer)len)
		return 1;
	return len + (size_t)pos + 1;
}

static bool plain_only(struct pm *ms, const char *p, size_t lp)
{
	step(ms, lp / 16);
	for (size_t i = 0; i < lp; i++)
		if (p[i] && strchr(SPECIALS, p[i]))
			return false;
	return true;
}

/* @p n in @p s (@p ls bytes), or NULL */
static const char *plain_find(struct pm *ms, const char *s, size_t ls, const char *n, size_t ln)
{
	if (ln == 0)
		return s;
	if (ln > ls)
		return NULL;
	const char *end = s + (ls - ln) + 1; /* the last start + 1 */
	while (s < end) {
		const char *c = memchr(s, n[0], (size_t)(end - s));
		step(ms, (uint64_t)((c ? c : end) - s) / 16);
		if (!c)
			return NULL;
		step(ms, 1 + ln / 16);
		if (memcmp(c + 1, n + 1, ln - 1) == 0)
			return c;
		s = c + 1;
	}
	return NULL;
}

static int find_or_match(lua_State *L, bool find)
{
	size_t ls, lp;
	const char *s = luaL_checklstring(L, 1, &ls);
	const char *p = luaL_checklstring(L, 2, &lp);
	size_t init = start_at(luaL_optinteger(L, 3, 1), ls) - 1;
	if (init > ls) {
		luaL_pushfail(L);
		return 1;
	}
	struct pm ms;
	pm_init(&ms, L, s, ls, p, lp);
	if (find && (lua_toboolean(L, 4) || plain_only(&ms, p, lp))) {
		const char *f = plain_find(&ms, s + init, ls - init, p, lp);
		if (f) {
			lua_pushinteger(L, (f - s) + 1);
			lua_pushinteger(L, (lua_Integer)((size_t)(f - s) + lp));
			return 2;
		}
		luaL_pushfail(L);
		return 1;
	}
	const char *at = s + init;
	bool anchor = lp && *p == '^';
	if (anchor) {
		p++;
		lp--;
	}
	for (;;) {
		pm_reset(&ms);
		const char *e = do_match(&ms, at, p);
		if (e) {
			if (!find)
				return caps_push(&ms, at, e);
			lua_pushinteger(L, (at - s) + 1);
			lua_pushinteger(L, e - s);
			return caps_push(&ms, NULL, NULL) + 2;
		}
		if (anchor || at >= ms.se)
			break;
		at++;
	}
	luaL_pushfail(L);
	return 1;
}

static int p_find(lua_State *L)
{
	return find_or_match(L, true);
}

static int p_match(lua_State *L)
{
	return find_or_match(L, false);
}

/* gmatch's iterator: upvalues the subject, the pattern, and the next
 * start and last match's end (-1: none) as integers */
static int gmatch_next(lua_State *L)
{
	size_t ls, lp;
	const char *s = lua_tolstring(L, lua_upvalueindex(1), &ls);
	const char *p = lua_tolstring(L, lua_upvalueindex(2), &lp);
	lua_Integer at = lua_tointeger(L, lua_upvalueindex(3));
	lua_Integer last = lua_tointeger(L, lua_upvalueindex(4));
	struct pm ms;
	pm_init(&ms, L, s, ls, p, lp);
	/* in 5.4 a leading '^' is no anchor here: do_match reads it as a byte */
	for (; at <= (lua_Integer)ls; at++) {
		pm_reset(&ms);
		const char *e = do_match(&ms, s + at, p);
		if (e && e - s != last) {
			lua_pushinteger(L, e - s);
			lua_copy(L, -1, lua_upvalueindex(3));
			lua_replace(L, lua_upvalueindex(4));
			return caps_push(&ms, s + at, e);
		}
	}
	lua_pushinteger(L, at);
	lua_replace(L, lua_upvalueindex(3));
	return 0;
}

static int p_gmatch(lua_State *L)
{
	size_t ls;
	luaL_checklstring(L, 1, &ls);
	luaL_checkstring(L, 2);
	size_t init = start_at(luaL_optinteger(L, 3, 1), ls) - 1;
	if (init > ls)
		init = ls + 1;
	lua_settop(L, 2);
	lua_pushinteger(L, (lua_Integer)init);
	lua_pushinteger(L, -1);
	lua_pushcclosure(L, gmatch_next, 4);
	return 1;
}

/* A replacement string's %0-%9 and %% for the match [s, e) */
static void repl_string(struct pm *ms, luaL_Buffer *b, const char *s, const char *e)
{
	lua_State *L = ms->L;
	size_t l;
	const char *r = lua_tolstring(L, 3, &l);
	step(ms, 1 + l / 16);
	const char *q;
	while ((q = memchr(r, ESC, l)) != NULL) {
		luaL_addlstring(b, r, (size_t)(q - r));
		q++; /* Lua's strings end with a NUL: q is readable */
		if (*q == ESC) {
			luaL_addchar(b, *q);
		} else if (*q == '0') {
			luaL_addlstring(b, s, (size_t)(e - s));
		} else if (isdigit((unsigned char)*q)) {
			const char *cap;
			ptrdiff_t cl = cap_get(ms, *q - '1', s, e, &cap);
			if (cl == CAP_POSITION)
				luaL_addvalue(b);
			else
				luaL_addlstring(b, cap, (size_t)cl);
		} else {
			luaL_error(L, "invalid use of '%c' in replacement string", ESC);
		}
		l -= (size_t)(q + 1 - r);
		r = q + 1;
	}
	luaL_addlstring(b, r, l);
}

/* The match [s, e)'s replacement added to @p b. @return whether it
 * changed (false: the function or table gave false or nil) */
static bool repl(struct pm *ms, luaL_Buffer *b, const char *s, const char *e, int tr)
{
	lua_State *L = ms->L;
	if (tr == LUA_TFUNCTION) {
		lua_pushvalue(L, 3);
		int n = caps_push(ms, s, e);
		lua_call(L, n, 1);
	} else if (tr == LUA_TTABLE) {
		cap_push(ms, 0, s, e);
		lua_gettable(L, 3);
	} else {
		repl_string(ms, b, s, e);
		return true;
	}
	if (!lua_toboolean(L, -1)) {
		lua_pop(L, 1);
		luaL_addlstring(b, s, (size_t)(e - s));
		return false;
	}
	if (!lua_isstring(L, -1))
		luaL_error(L, "invalid replacement value (a %s)", luaL_typename(L, -1));
	luaL_addvalue(b);
	return true;
}

static int p_gsub(lua_State *L)
{
	size_t ls, lp;
	const char *src = luaL_checklstring(L, 1, &ls);
	const char *p = luaL_checklstring(L, 2, &lp);
	const char *s = src, *last = NULL;
	int tr = lua_type(L, 3);
	lua_Integer max = luaL_optinteger(L, 4, (lua_Integer)ls + 1);
	luaL_argexpected(
	    L, tr == LUA_TNUMBER || tr == LUA_TSTRING || tr == LUA_TFUNCTION || tr == LUA_TTABLE, 3,
	    "string/function/table");
	bool anchor = lp && *p == '^';
	if (anchor) {
		p++;
		lp--;
	}
	luaL_Buffer b;
	luaL_buffinit(L, &b);
	struct pm ms;
	pm_init(&ms, L, src, ls, p, lp);
	lua_Integer n = 0;
	bool changed = false;
	while (n < max) {
		pm_reset(&ms);
		const char *e = do_match(&ms, s, p);
		if (e && e != last) {
			n++;
			changed = repl(&ms, &b, s, e, tr) || changed;
			s = last = e;
		} else if (s < ms.se) {
			luaL_addchar(&b, *s++);
		} else {
			break;
		}
		if (anchor)
			break;
	}
	if (!changed) {
		lua_pushvalue(L, 1);
	} else {
		luaL_addlstring(&b, s, (size_t)(ms.se - s));
		luaL_pushresult(&b);
	}
	lua_pushinteger(L, n);
	return 2;
}

void arn_lua_pat_open(lua_State *L)
{
	static const luaL_Reg fns[] = {{"find", p_find},
				       {"match", p_match},
				       {"gmatch", p_gmatch},
				       {"gsub", p_gsub},
				       {NULL, NULL}};
	lua_getglobal(L, LUA_STRLIBNAME);
	luaL_setfuncs(L, fns, 0);
	lua_pop(L, 1);
}
