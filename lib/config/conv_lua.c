/*
 * envoy.filters.http.lua's Lua and a route level's LuaPerRoute ->
 * struct arn_cfg_lua / arn_cfg_lua_route, as Envoy's lua_filter.cc reads
 * them (FilterConfig): inline_code or default_source_code (not both), the
 * source_codes a route names, a route's own source_code. Each script is
 * compiled and its chunk run here, on the control lcore, in a bounded state of its own (arn_lua.h):
 * a syntax error, or a chunk that fails or runs past the bounds, refuses
 * the resource with Lua's message at the field. Whether it defines
 * envoy_on_request / envoy_on_response is kept: a direction without one
 * costs a request nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arn_config.h"
#include "arn_lua.h"
#include "arn_proto.h"
#include "config_int.h"

/* Compile and run @p code in a state of its own; its functions into @p o. */
static void check_script(struct conv *c, const char *field, const char *code, size_t len,
			 const char *name, struct arn_cfg_lua_script *o)
{
	o->code = code;
	o->len = len;
	o->name = name;
	struct arn_lua_mem mem = {0};
	lua_State *L = arn_lua_new(&mem);
	if (!L) {
		conv_err(c, field, "no memory for a Lua state");
		return;
	}
	char err[512];
	int rq, rs;
	if (arn_lua_load(L, code, len, name, &rq, &rs, err, sizeof(err)) < 0)
		conv_err(c, field, "Lua: %s", err);
	else {
		o->on_request = rq != LUA_NOREF;
		o->on_response = rs != LUA_NOREF;
	}
	arn_lua_close(L);
}

/* One DataSource's script (inline_string, inline_bytes, filename). */
static bool source(struct conv *c, struct pb ds, const char *field, const char *name,
		   struct arn_cfg_lua_script *o)
{
	const char *code = NULL;
	size_t len = 0;
	size_t m = conv_push(c, "%s", field);
	int rc = conv_data_source(c, ds, ARN_LUA_CODE_MAX, "a script's bound", &code, &len);
	if (rc == -ENOENT)
		conv_err(c, "", "no source: inline_string, inline_bytes or filename");
	else if (rc == 0 && code)
		check_script(c, "", code, len, name, o);
	conv_pop(c, m);
	return rc == 0 && code;
}

static int by_name(const void *a, const void *b)
{
	const struct arn_cfg_lua_script *x = a, *y = b;
	return strcmp(x->name, y->name);
}

const struct arn_cfg_lua *conv_lua(struct conv *c, struct pb p)
{
	struct arn_cfg_lua *o = CONV_NEW(c, struct arn_cfg_lua, 1);
	if (!o)
		return NULL;
	conv_only(c, p, "inline_code,source_codes,default_source_code,stat_prefix");
	upb_StringView sp = pb_str(p, "stat_prefix");
	if (sp.size)
		o->stat_prefix = conv_str(c, sp);
	upb_StringView ic = pb_str(p, "inline_code");
	struct arn_cfg_lua_script *d = CONV_NEW(c, struct arn_cfg_lua_script, 1);
	if (!d)
		return o;
	if (pb_has(p, "default_source_code")) {
		/* Envoy: "Only one of `inline_code` or `default_source_code` can
		 * be set for the Lua filter." */
		if (ic.size)
			conv_err(c, "inline_code",
				 "set with default_source_code: only one of them");
		else if (source(c, pb_msg(p, "default_source_code"), "default_source_code",
				"default_source_code", d))
			o->dflt = d;
	} else if (ic.size) {
		if (ic.size > ARN_LUA_CODE_MAX)
			conv_err(c, "inline_code", "%zu bytes: longer than a script's bound (%u)",
				 ic.size, ARN_LUA_CODE_MAX);
		else {
			check_script(c, "inline_code", conv_str(c, ic), ic.size, "inline_code", d);
			o->dflt = d;
		}
	}
	const upb_Map *map = upb_Message_Get(p.m, pb_field(p, "source_codes")).map_val;
	size_t n = map ? upb_Map_Size(map) : 0;
	if (n > ARN_CFG_LUA_MAX_CODES) {
		conv_err(c, "source_codes",
			 "%zu entries: more than %d (each is a Lua state per worker)", n,
			 ARN_CFG_LUA_MAX_CODES);
		return o;
	}
	o->named = CONV_NEW(c, struct arn_cfg_lua_script, n ? n : 1);
	const upb_MessageDef *dd = arn_proto_msgdef("envoy.config.core.v3.DataSource");
	size_t iter = kUpb_Map_Begin;
	while (o->named && map && upb_MapIterator_Next(map, &iter)) {
		upb_StringView key = upb_MapIterator_Key(map, iter).str_val;
		struct pb ds = {upb_MapIterator_Value(map, iter).msg_val, dd};
		char field[300];
		snprintf(field, sizeof(field), "source_codes[%.*s]",
			 (int)(key.size < 256 ? key.size : 256), key.data);
		const char *name = conv_str(c, key);
		if (name && source(c, ds, field, name, &o->named[o->n_named]))
			o->n_named++;
	}
	if (o->n_named)
		qsort(o->named, o->n_named, sizeof(*o->named), by_name);
	unsigned k = 0;
	if (o->dflt)
		d->idx = k++;
	for (size_t i = 0; i < o->n_named; i++)
		o->named[i].idx = k++;
	o->n_scripts = k;
	return o;
}

const struct arn_cfg_lua_route *conv_lua_route(struct conv *c, struct pb p, uint8_t *kind)
{
	conv_only(c, p, "disabled,name,source_code");
	*kind = ARN_CFG_PF_DISABLED;
	const char *which = pb_which(p, "override");
	if (!which) {
		conv_err(c, "override",
			 "missing: disabled, name or source_code (Envoy requires one)");
		return NULL;
	}
	if (which[0] == 'd') {
		if (!pb_bool(p, "disabled"))
			conv_err(c, "disabled", "must be true (Envoy's only value)");
		return NULL;
	}
	if (which[0] == 's') {
		/* a script of the route's own, compiled and run here as the
		 * filter's are; its id finds its states on the workers */
		static uint64_t next_uid;
		struct arn_cfg_lua_route *o = CONV_NEW(c, struct arn_cfg_lua_route, 1);
		struct arn_cfg_lua_script *sc = CONV_NEW(c, struct arn_cfg_lua_script, 1);
		if (!o || !sc)
			return NULL;
		if (!source(c, pb_msg(p, "source_code"), "source_code", "source_code", sc))
			return NULL;
		sc->uid = __atomic_add_fetch(&next_uid, 1, __ATOMIC_RELAXED);
		o->script = sc;
		*kind = ARN_CFG_PF_LUA;
		return o;
	}
	upb_StringView nm = pb_str(p, "name");
	if (!nm.size) {
		conv_err(c, "name", "empty (Envoy requires at least 1 byte)");
		return NULL;
	}
	struct arn_cfg_lua_route *o = CONV_NEW(c, struct arn_cfg_lua_route, 1);
	if (!o)
		return NULL;
	o->name = conv_str(c, nm);
	o->name_len = nm.size;
	*kind = ARN_CFG_PF_LUA;
	return o;
}

const struct arn_cfg_lua_script *arn_cfg_lua_find(const struct arn_cfg_lua *f, const char *name,
						  size_t len)
{
	size_t lo = 0, hi = f->n_named;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const char *k = f->named[mid].name;
		size_t kl = strlen(k);
		int r = memcmp(k, name, kl < len ? kl : len);
		if (r == 0)
			r = kl < len ? -1 : kl > len ? 1 : 0;
		if (r == 0)
			return &f->named[mid];
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}
