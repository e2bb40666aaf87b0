/*
 * The differential check of Arion's pattern functions (lib/config/lua_pat.c)
 * against the stock Lua 5.4 string library, shared by test_lua_pat.c and
 * fuzz_lua_pat.c: probe() runs find, match, gmatch and gsub (string, %1,
 * function and table replacements, a count), and find plain, each under
 * pcall, and writes every result (type and value) or error message in one
 * string; the two states' strings must be equal.
 */
#ifndef LUA_PAT_REF_H
#define LUA_PAT_REF_H

#include <string.h>

#include <lauxlib.h>
#include <lualib.h>

#include "arn_lua.h"

static const char lpr_probe[] =
    "local function ser(...) local t = {} for i = 1, select('#', ...) do local v = select(i, ...)"
    " t[#t + 1] = type(v) .. ':' .. tostring(v) end return table.concat(t, '|') end\n"
    "local function gm(s, p, i) local r, n = {}, 0\n"
    " for a, b, c in string.gmatch(s, p, i) do n = n + 1 if n > 64 then break end"
    " r[#r + 1] = ser(a, b, c) end return table.concat(r, ';') end\n"
    "local tab = setmetatable({a = 'A', [''] = 'E', b = false, c = {}}, {__index = function(t, k)"
    " if k == 'd' then return 42 end end})\n"
    "local function fn(a, b) if b == nil then return a .. '!' end if a == '' then return false end"
    " return b end\n"
    "function lpr_probe(s, p, i)\n"
    " return table.concat({ser(pcall(string.find, s, p, i)), ser(pcall(string.match, s, p, i)),\n"
    "  ser(pcall(gm, s, p, i)), ser(pcall(string.gsub, s, p, '<%0>')),\n"
    "  ser(pcall(string.gsub, s, p, '%1-%%', i)), ser(pcall(string.gsub, s, p, fn)),\n"
    "  ser(pcall(string.gsub, s, p, tab)), ser(pcall(string.find, s, p, i, true))}, '\\n')\n"
    "end\n";

/* A state's probe function defined (the sandbox has no load: the C API). */
static inline int lpr_setup(lua_State *L)
{
	if (luaL_loadbufferx(L, lpr_probe, sizeof(lpr_probe) - 1, "=probe", "t") != LUA_OK)
		return -1;
	return lua_pcall(L, 0, 0, 0) == LUA_OK ? 0 : -1;
}

/* probe(s, p, i) in @p L into @p out (cut at @p cap). @return its length */
static inline size_t lpr_run(lua_State *L, const char *s, size_t sl, const char *p, size_t pl,
			     long long init, char *out, size_t cap)
{
	lua_getglobal(L, "lpr_probe");
	lua_pushlstring(L, s, sl);
	lua_pushlstring(L, p, pl);
	lua_pushinteger(L, init);
	const char *r = "(probe failed)";
	size_t rl = strlen(r);
	if (lua_pcall(L, 3, 1, 0) == LUA_OK || lua_type(L, -1) == LUA_TSTRING)
		r = lua_tolstring(L, -1, &rl);
	if (!r) {
		r = "(no string)";
		rl = strlen(r);
	}
	if (rl >= cap)
		rl = cap - 1;
	memcpy(out, r, rl);
	out[rl] = 0;
	lua_pop(L, 1);
	return rl;
}

#endif
