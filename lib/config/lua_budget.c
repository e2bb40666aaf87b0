/*
 * The instruction budget of a Lua call (arn_lua.h): the count hook, and
 * the charge of work done in C (string.rep, Arion's pattern matcher).
 * Below both the sandbox (lua_vm.c) and the matcher (lua_pat.c), which
 * charge to it.
 */
#include <lauxlib.h>

#include "arn_lua.h"

/*
 * Every ARN_LUA_HOOK_STEP instructions. Out of budget, the call fails, and
 * from then on every instruction of the thread fails too (count 1), so a
 * script's pcall cannot catch the error and loop on: the first
 * instruction outside every pcall raises it to the top.
 */
_Noreturn static void exhausted(lua_State *L, struct arn_lua_mem *m)
{
	m->budget = 0;
	m->over = true;
	lua_sethook(L, arn_lua_hook, LUA_MASKCOUNT, 1);
	luaL_error(L, "instruction limit reached (%d)", (int)ARN_LUA_INSTR_MAX);
	__builtin_unreachable();
}

void arn_lua_hook(lua_State *L, lua_Debug *ar)
{
	(void)ar;
	struct arn_lua_mem *m;
	lua_getallocf(L, (void **)&m);
	if (m->budget) {
		m->budget--;
		return;
	}
	exhausted(L, m);
}

void arn_lua_charge(lua_State *L, struct arn_lua_mem *m, uint64_t n)
{
	m->acc += n;
	if (m->acc < ARN_LUA_HOOK_STEP)
		return;
	uint64_t k = m->acc / ARN_LUA_HOOK_STEP;
	m->acc %= ARN_LUA_HOOK_STEP;
	if (k > m->budget)
		exhausted(L, m);
	m->budget -= (uint32_t)k;
}

void arn_lua_arm(lua_State *co, struct arn_lua_mem *mem)
{
	mem->budget = ARN_LUA_INSTR_MAX / ARN_LUA_HOOK_STEP;
	mem->over = false;
	mem->acc = 0;
	lua_sethook(co, arn_lua_hook, LUA_MASKCOUNT, ARN_LUA_HOOK_STEP);
	/* the main thread runs the finalizers a collection calls */
	lua_rawgeti(co, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
	lua_State *main = lua_tothread(co, -1);
	lua_pop(co, 1);
	if (main && main != co)
		lua_sethook(main, arn_lua_hook, LUA_MASKCOUNT, ARN_LUA_HOOK_STEP);
}
