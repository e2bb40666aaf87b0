/*
 * envoy.filters.http.lua's tables of per-worker states, made and freed
 * with the connection manager's runtime object (http_l4_rt.c), apart
 * from the scripts' runs (http_lua.c), which answer with local replies.
 */
#include <stdlib.h>

#include "arn_log.h"
#include "http_int.h"
#include "http_lua_int.h"

void http_lua_hrt_init(struct http_hcm_rt *r, size_t i, const struct arn_cfg_lua *f)
{
	if (i >= HTTP_MAX_FILTER_STATS)
		return;
	struct http_lua_frt *t = calloc(1, sizeof(*t));
	/* routes may bring scripts of their own: the table is made anyway */
	struct http_lua_vm **v =
	    t ? calloc((size_t)SLOTS * (f->n_scripts ? f->n_scripts : 1), sizeof(*v)) : NULL;
	if (!v) {
		free(t);
		ARN_ERR(HTTP, "lua: no memory for filter %zu's states: its scripts do not run", i);
		return;
	}
	t->cfg = f;
	t->vms = v;
	r->lua[i] = t;
}

void http_lua_vm_free(struct http_lua_vm *vm)
{
	if (!vm)
		return;
	arn_lua_close(vm->L);
	free(vm);
}

void http_lua_hrt_fini(struct http_hcm_rt *r)
{
	for (size_t i = 0; i < HTTP_MAX_FILTER_STATS; i++) {
		struct http_lua_frt *t = r->lua[i];
		if (!t)
			continue;
		for (size_t k = 0; k < (size_t)SLOTS * t->cfg->n_scripts; k++)
			http_lua_vm_free(t->vms[k]);
		for (size_t k = 0; k < SLOTS; k++) {
			for (size_t j = 0; t->rc[k] && j < HTTP_LUA_ROUTE_STATES; j++)
				http_lua_vm_free(t->rc[k]->vm[j]);
			free(t->rc[k]);
		}
		free(t->vms);
		free(t);
		r->lua[i] = NULL;
	}
}
