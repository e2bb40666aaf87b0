/*
 * libFuzzer: Arion's Lua pattern functions (lib/config/lua_pat.c) against
 * the stock Lua 5.4 string library on small inputs: every probe
 * (lua_pat_ref.h: find, match, gmatch, gsub's replacements, plain find)
 * equal, results and error messages; an input that runs Arion's out of
 * instructions is not given to the stock one (it could backtrack for
 * minutes), and a trap if it takes more than the call's budget.
 *
 * Input: [L][L pattern bytes][init][subject, up to 48 bytes]
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lua_pat_ref.h"

static struct arn_lua_mem mem;
static lua_State *arn, *ref;
static char out_a[1 << 16], out_r[1 << 16];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!arn) {
		arn = arn_lua_new(&mem);
		ref = luaL_newstate();
		if (!arn || !ref)
			abort();
		luaL_openlibs(ref);
		arn_lua_arm(arn, &mem);
		if (lpr_setup(arn) != 0 || lpr_setup(ref) != 0)
			abort();
	}
	if (size < 2)
		return 0;
	size_t pl = data[0];
	if (1 + pl + 1 > size)
		return 0;
	const char *p = (const char *)data + 1;
	long long init = (long long)(int8_t)data[1 + pl];
	const char *s = (const char *)data + 2 + pl;
	size_t sl = size - 2 - pl;
	if (sl > 48)
		sl = 48;
	arn_lua_arm(arn, &mem);
	size_t na = lpr_run(arn, s, sl, p, pl, init, out_a, sizeof(out_a));
	if (mem.over || strstr(out_a, "instruction limit reached"))
		return 0;
	size_t nr = lpr_run(ref, s, sl, p, pl, init, out_r, sizeof(out_r));
	if (na != nr || memcmp(out_a, out_r, na) != 0)
		__builtin_trap();
	/* the states' garbage between inputs */
	lua_gc(arn, LUA_GCCOLLECT);
	lua_gc(ref, LUA_GCCOLLECT);
	return 0;
}
