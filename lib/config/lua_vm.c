/*
 * The Lua 5.4 sandbox of envoy.filters.http.lua (arn_lua.h): a bounded
 * allocator, a count hook, the libraries a script may use.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>

#include "arn_lua.h"

/* The state's allocator: every byte it holds counted against its bound,
 * an allocation past it refused (Lua raises "not enough memory"). */
static void *lalloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
	struct arn_lua_mem *m = ud;
	size_t old = ptr ? osize : 0; /* without ptr, osize is a type tag */
	if (nsize == 0) {
		free(ptr);
		m->used -= old;
		return NULL;
	}
	if (nsize > old && nsize - old > m->limit - m->used) {
		m->refused++;
		return NULL;
	}
	void *p = realloc(ptr, nsize);
	if (!p)
		return NULL;
	m->used = m->used - old + nsize;
	return p;
}

/* string.rep's result is written by C, which no hook interrupts: its
 * bytes are charged to the call's instructions, one per byte. */
static int rep_bounded(lua_State *L)
{
	size_t l;
	luaL_checklstring(L, 1, &l);
	lua_Integer n = luaL_checkinteger(L, 2);
	size_t lsep = 0;
	if (!lua_isnoneornil(L, 3))
		luaL_checklstring(L, 3, &lsep);
	struct arn_lua_mem *m;
	lua_getallocf(L, (void **)&m);
	if (n > 0) {
		double bytes = (double)n * (double)(l + lsep);
		double steps = bytes / ARN_LUA_HOOK_STEP;
		if (steps > m->budget) /* the call's end, as the hook's (no pcall catches it) */
			arn_lua_charge(L, m, ((uint64_t)m->budget + 1) * ARN_LUA_HOOK_STEP);
		m->budget -= (uint32_t)steps;
	}
	lua_pushvalue(L, lua_upvalueindex(1));
	lua_insert(L, 1);
	lua_call(L, lua_gettop(L) - 1, 1);
	return 1;
}

/* LuaJIT's bit module (32-bit results), for scripts written for Envoy's
 * LuaJIT; Lua 5.4 has the operators themselves. */
static const char prelude[] =
    "local function n(x) x = math.tointeger(x) or error('bit: not an integer', 3) "
    "x = x & 0xffffffff if x >= 0x80000000 then x = x - 0x100000000 end return x end\n"
    "local function fold(op) return function(a, ...) local r = n(a) "
    "for i = 1, select('#', ...) do r = n(op(r, n(select(i, ...)))) end return r end end\n"
    "bit = { tobit = n,\n"
    " band = fold(function(a, b) return a & b end),\n"
    " bor = fold(function(a, b) return a | b end),\n"
    " bxor = fold(function(a, b) return a ~ b end),\n"
    " bnot = function(a) return n(~n(a)) end,\n"
    " lshift = function(a, s) return n(n(a) << (n(s) & 31)) end,\n"
    " rshift = function(a, s) return n((n(a) & 0xffffffff) >> (n(s) & 31)) end,\n"
    " arshift = function(a, s) return n(n(a) // (1 << (n(s) & 31))) end,\n"
    " tohex = function(a, w) return string.format('%0' .. (w or 8) .. 'x', n(a) & 0xffffffff) end "
    "}\n"
    "unpack = table.unpack\n";

static int open_libs(lua_State *L)
{
	static const luaL_Reg libs[] = {
	    {LUA_GNAME, luaopen_base},	     {LUA_STRLIBNAME, luaopen_string},
	    {LUA_TABLIBNAME, luaopen_table}, {LUA_MATHLIBNAME, luaopen_math},
	    {LUA_UTF8LIBNAME, luaopen_utf8}, {LUA_OSLIBNAME, luaopen_os}};
	for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
		luaL_requiref(L, libs[i].name, libs[i].func, 1);
		lua_pop(L, 1);
	}
	/* no files, no bytecode, no stdout */
	static const char *const drop[] = {"dofile", "loadfile", "load", "print"};
	for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++) {
		lua_pushnil(L);
		lua_setglobal(L, drop[i]);
	}
	/* os: the clock and dates only (no execute, exit, getenv, remove,
	 * rename, tmpname, setlocale) */
	lua_getglobal(L, LUA_OSLIBNAME);
	static const char *const os_drop[] = {"execute", "exit",    "getenv",	"remove",
					      "rename",	 "tmpname", "setlocale"};
	for (size_t i = 0; i < sizeof(os_drop) / sizeof(os_drop[0]); i++) {
		lua_pushnil(L);
		lua_setfield(L, -2, os_drop[i]);
	}
	lua_pop(L, 1);
	lua_getglobal(L, LUA_STRLIBNAME);
	lua_getfield(L, -1, "rep");
	lua_pushcclosure(L, rep_bounded, 1);
	lua_setfield(L, -2, "rep");
	lua_pop(L, 1);
	arn_lua_pat_open(L);
	if (luaL_loadbufferx(L, prelude, sizeof(prelude) - 1, "=prelude", "t") != LUA_OK)
		return lua_error(L);
	lua_call(L, 0, 0);
	return 0;
}

lua_State *arn_lua_new(struct arn_lua_mem *mem)
{
	if (!mem->limit)
		mem->limit = ARN_LUA_MEM_MAX;
	lua_State *L = lua_newstate(lalloc, mem);
	if (!L)
		return NULL;
	lua_pushcfunction(L, open_libs);
	if (lua_pcall(L, 0, 0, 0) != LUA_OK) {
		lua_close(L);
		return NULL;
	}
	return L;
}

void arn_lua_close(lua_State *L)
{
	if (!L)
		return;
	struct arn_lua_mem *m;
	lua_getallocf(L, (void **)&m);
	/* finalizers a script set run now: one step of instructions each */
	m->budget = 0;
	m->acc = 0;
	lua_sethook(L, arn_lua_hook, LUA_MASKCOUNT, ARN_LUA_HOOK_STEP);
	lua_close(L);
}

/* The globals' raw value (no metamethod a script set on _G runs). */
static bool global_function(lua_State *L, const char *name)
{
	lua_pushglobaltable(L);
	lua_pushstring(L, name);
	bool f = lua_rawget(L, -2) == LUA_TFUNCTION;
	lua_remove(L, -2);
	if (!f)
		lua_pop(L, 1);
	return f; /* the function stays on the stack */
}

struct load_args {
	const char *code, *chunk;
	size_t len;
	int ref_req, ref_resp;
};

/* In protected mode: every error (memory included) comes back to
 * arn_lua_load, none reaches Lua's panic. */
static int load_k(lua_State *L)
{
	struct load_args *a = lua_touserdata(L, 1);
	if (luaL_loadbufferx(L, a->code, a->len, a->chunk, "t") != LUA_OK)
		return lua_error(L);
	lua_call(L, 0, 0);
	a->ref_req =
	    global_function(L, "envoy_on_request") ? luaL_ref(L, LUA_REGISTRYINDEX) : LUA_NOREF;
	a->ref_resp =
	    global_function(L, "envoy_on_response") ? luaL_ref(L, LUA_REGISTRYINDEX) : LUA_NOREF;
	return 0;
}

int arn_lua_load(lua_State *L, const char *code, size_t len, const char *name, int *ref_req,
		 int *ref_resp, char *err, size_t errlen)
{
	char chunk[128];
	snprintf(chunk, sizeof(chunk), "=%s", name);
	struct load_args a = {.code = code, .chunk = chunk, .len = len};
	struct arn_lua_mem *m;
	lua_getallocf(L, (void **)&m);
	arn_lua_arm(L, m);
	lua_pushcfunction(L, load_k);
	lua_pushlightuserdata(L, &a);
	if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
		const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
		snprintf(err, errlen, "%s", msg ? msg : "an error object that is not a string");
		lua_pop(L, 1);
		return -EINVAL;
	}
	*ref_req = a.ref_req;
	*ref_resp = a.ref_resp;
	return 0;
}
