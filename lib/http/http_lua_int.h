/*
 * envoy.filters.http.lua's per-worker states (http_lua.c runs the
 * scripts, http_lua_rt.c makes and frees the tables of states with the
 * connection manager's runtime object).
 */
#ifndef ARN_HTTP_LUA_INT_H
#define ARN_HTTP_LUA_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <lua.h>

#include "arn_config.h"
#include "arn_lua.h"
#include "arn_stats.h"
#include "http_lua.h"

struct lua_call;

#define SLOTS (ARN_STATS_MAX_WORKERS + 1u)

struct http_lua_vm {
	lua_State *L;
	struct arn_lua_mem mem;
	int ref_req, ref_resp; /* LUA_NOREF: the script has none */
	uint64_t serial;       /* the current call's (objects of other calls are dead) */
	uint64_t n_errors;     /* script errors of this state (the log's 1st, 2nd, 4th, ...) */
	struct lua_call *cur;  /* the call running, or NULL */
	bool failed;	       /* its state could not be made: the script never runs */
	unsigned pins;	       /* calls waiting for a body (never closed while any) */
};

/* A worker's states of route scripts (LuaPerRoute source_code), found by
 * the script's uid; the least recently used one is closed for a new one. */
struct http_lua_rcache {
	uint64_t tick;
	uint64_t uid[HTTP_LUA_ROUTE_STATES];
	uint64_t used[HTTP_LUA_ROUTE_STATES];
	struct http_lua_vm *vm[HTTP_LUA_ROUTE_STATES];
};

struct http_lua_frt {
	const struct arn_cfg_lua *cfg;
	struct http_lua_vm **vms;	   /* [slot * n_scripts + script idx], NULL until needed */
	struct http_lua_rcache *rc[SLOTS]; /* per worker slot, NULL until needed */
};

/** Close @p vm's Lua state and free it (NULL: nothing). */
void http_lua_vm_free(struct http_lua_vm *vm);

#endif
