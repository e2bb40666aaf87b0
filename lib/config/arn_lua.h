/*
 * The Lua 5.4 sandbox of envoy.filters.http.lua, shared by the converter
 * (lib/config/conv_lua.c: each script compiled and its chunk run once, so
 * a syntax error or a chunk that fails refuses the resource) and the
 * workers (lib/http/http_lua.c: one state per script per worker).
 *
 * The scripts are the control plane's bytes, hostile like any peer's: each
 * state's memory is bounded by its allocator (ARN_LUA_MEM_MAX bytes; past
 * it an allocation fails and the script gets Lua's "not enough memory"
 * error), and each call into a script by a count hook
 * (ARN_LUA_INSTR_MAX VM instructions, then a script error), so a loop ends
 * and the worker goes on serving; the pattern functions (string.find, match,
 * gmatch, gsub) are Arion's (lua_pat.c), their steps charged to the same
 * budget, since C code runs no hook. Libraries: base (without dofile,
 * loadfile, load: no file and no bytecode), string, table, math, utf8, and
 * os's clock / date / time; a global unpack (Lua 5.1's, for LuaJIT-era
 * scripts). No io, os.execute, package, require or debug.
 *
 * Ownership: a state is its creator's (one thread), closed with
 * arn_lua_close.
 */
#ifndef ARN_LUA_H
#define ARN_LUA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <lauxlib.h>
#include <lua.h>

#define ARN_LUA_MEM_MAX (4u << 20)    /* bytes per state */
#define ARN_LUA_INSTR_MAX 1000000u    /* VM instructions per call into a script */
#define ARN_LUA_HOOK_STEP 1000	      /* instructions between the count hook's calls */
#define ARN_LUA_CODE_MAX (256u << 10) /* bytes of one script */
/* bytes of a route's metadata encoded for metadata() (more: not kept, and
 * metadata() on that route a script error) */
#define ARN_LUA_ROUTE_MD_MAX (64u << 10)
#define ARN_LUA_MD_DEPTH 16 /* tables (Structs, lists) nested */

/*
 * Metadata encoded for the Lua filter (a route's filter_metadata for
 * metadata(), a stream's dynamicMetadata()), host byte order, records of
 *   [u16 filter name length][name][u16 key length][key][value]
 * a value 'z' (null), 'f' / 't' (booleans), 'n' + a double, 's' + u32
 * length + bytes, 'l' + u32 count + values, 'm' + u32 count + (u16 key
 * length, key, value) each.
 */

/* A state's allocator accounting: the state's userdata (lua_getallocf). */
struct arn_lua_mem {
	size_t used, limit;
	uint64_t refused; /* allocations refused by the bound */
	uint32_t budget;  /* hook steps left in the current call */
	bool over;	  /* the current call ran out of instructions */
	uint64_t acc;	  /* instructions charged by C (arn_lua_charge) not yet a step */
};

/**
 * A new state: its allocator bounded by @p mem->limit (0: ARN_LUA_MEM_MAX),
 * the sandbox's libraries open. @p mem must outlive the state.
 * @return it, or NULL without memory.
 */
lua_State *arn_lua_new(struct arn_lua_mem *mem);

/** Close @p L (NULL: nothing). */
void arn_lua_close(lua_State *L);

/**
 * Arm the instruction bound on thread @p co of a state with accounting
 * @p mem for one call (ARN_LUA_INSTR_MAX instructions).
 */
void arn_lua_arm(lua_State *co, struct arn_lua_mem *mem);

/** The count hook arn_lua_arm sets (lua_budget.c): a step of the call's
 * budget each ARN_LUA_HOOK_STEP instructions, the call failed past it. */
void arn_lua_hook(lua_State *L, lua_Debug *ar);

/**
 * Charge @p n instructions of work done in C (where the count hook never
 * fires) to the current call of the state whose accounting is @p mem,
 * running on thread @p L: past the call's budget, the call fails as the
 * hook fails it ("instruction limit reached", every further instruction
 * failing too). Raises a Lua error then: call it only from a function
 * Lua called.
 */
void arn_lua_charge(lua_State *L, struct arn_lua_mem *mem, uint64_t n);

/**
 * Register Arion's string.find, match, gmatch and gsub (lib/config/lua_pat.c:
 * Lua 5.4's pattern language, every step charged with arn_lua_charge) in
 * the string library of @p L, a state made by arn_lua_new.
 */
void arn_lua_pat_open(lua_State *L);

/**
 * Load script @p code (@p len bytes, text only) as chunk @p name and run
 * it (bounded as a call, in protected mode: no error reaches Lua's panic),
 * then take references (in the registry) to its envoy_on_request and
 * envoy_on_response, the globals' raw values that are functions
 * (LUA_NOREF: none).
 * @return 0; or -EINVAL with Lua's message in @p err (@p errlen bytes).
 */
int arn_lua_load(lua_State *L, const char *code, size_t len, const char *name, int *ref_req,
		 int *ref_resp, char *err, size_t errlen);

#endif
