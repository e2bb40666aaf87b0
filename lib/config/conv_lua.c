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

/* ---- a route's metadata for metadata() ---------------------------------- */

struct md_enc {
	uint8_t *b;
	uint32_t len;
	bool over;
};

static void md_put(struct md_enc *o, const void *p, size_t n)
{
	if (o->over || n > ARN_LUA_ROUTE_MD_MAX - o->len) {
		o->over = true;
		return;
	}
	memcpy(o->b + o->len, p, n);
	o->len += (uint32_t)n;
}

static void md_put_str(struct md_enc *o, upb_StringView s, bool u16)
{
	if (u16) {
		if (s.size > UINT16_MAX) {
			o->over = true;
			return;
		}
		uint16_t k = (uint16_t)s.size;
		md_put(o, &k, 2);
	} else {
		uint32_t k = (uint32_t)s.size;
		md_put(o, &k, 4);
	}
	md_put(o, s.data, s.size);
}

static void md_put_struct(struct md_enc *o, const upb_Message *st, int depth);

/* A google.protobuf.Value (NULL: null), as Envoy's setValue gives it */
static void md_put_value(struct md_enc *o, const upb_Message *vm, int depth)
{
	struct pb v = {vm, arn_proto_msgdef("google.protobuf.Value")};
	const char *k = vm ? pb_which(v, "kind") : NULL;
	if (depth > ARN_LUA_MD_DEPTH) {
		o->over = true;
	} else if (!k || strcmp(k, "null_value") == 0) {
		md_put(o, "z", 1);
	} else if (strcmp(k, "number_value") == 0) {
		double d = upb_Message_Get(vm, pb_field(v, "number_value")).double_val;
		md_put(o, "n", 1);
		md_put(o, &d, sizeof(d));
	} else if (strcmp(k, "bool_value") == 0) {
		md_put(o, pb_bool(v, "bool_value") ? "t" : "f", 1);
	} else if (strcmp(k, "string_value") == 0) {
		md_put(o, "s", 1);
		md_put_str(o, pb_str(v, "string_value"), false);
	} else if (strcmp(k, "struct_value") == 0) {
		md_put_struct(o, upb_Message_Get(vm, pb_field(v, "struct_value")).msg_val,
			      depth + 1);
	} else {
		struct pb l = pb_msg(v, "list_value");
		const upb_Array *a =
		    l.m ? upb_Message_Get(l.m, pb_field(l, "values")).array_val : NULL;
		uint32_t n = a ? (uint32_t)upb_Array_Size(a) : 0;
		md_put(o, "l", 1);
		md_put(o, &n, 4);
		for (uint32_t i = 0; i < n; i++)
			md_put_value(o, upb_Array_Get(a, i).msg_val, depth + 1);
	}
}

static void md_put_struct(struct md_enc *o, const upb_Message *st, int depth)
{
	struct pb s = {st, arn_proto_msgdef("google.protobuf.Struct")};
	const upb_Map *f = st ? upb_Message_Get(st, pb_field(s, "fields")).map_val : NULL;
	uint32_t n = f ? (uint32_t)upb_Map_Size(f) : 0;
	md_put(o, "m", 1);
	md_put(o, &n, 4);
	size_t it = kUpb_Map_Begin;
	while (n && upb_MapIterator_Next(f, &it)) {
		md_put_str(o, upb_MapIterator_Key(f, it).str_val, true);
		md_put_value(o, upb_MapIterator_Value(f, it).msg_val, depth + 1);
	}
}

void conv_lua_route_md(struct conv *c, struct pb md, const uint8_t **out, uint32_t *len)
{
	*out = NULL;
	*len = 0;
	const upb_Map *fm =
	    md.m ? upb_Message_Get(md.m, pb_field(md, "filter_metadata")).map_val : NULL;
	if (!fm || !upb_Map_Size(fm))
		return;
	struct md_enc o = {.b = malloc(ARN_LUA_ROUTE_MD_MAX)};
	if (!o.b) {
		conv_err(c, "metadata", "no memory");
		return;
	}
	size_t it = kUpb_Map_Begin;
	while (!o.over && upb_MapIterator_Next(fm, &it)) {
		/* each key of the filter's Struct a record */
		upb_StringView name = upb_MapIterator_Key(fm, it).str_val;
		const upb_Message *st = upb_MapIterator_Value(fm, it).msg_val;
		struct pb s = {st, arn_proto_msgdef("google.protobuf.Struct")};
		const upb_Map *f = st ? upb_Message_Get(st, pb_field(s, "fields")).map_val : NULL;
		size_t j = kUpb_Map_Begin;
		while (f && !o.over && upb_MapIterator_Next(f, &j)) {
			md_put_str(&o, name, true);
			md_put_str(&o, upb_MapIterator_Key(f, j).str_val, true);
			md_put_value(&o, upb_MapIterator_Value(f, j).msg_val, 1);
		}
	}
	if (o.over) {
		*len = UINT32_MAX; /* metadata() on this route: a script error */
	} else if (o.len) {
		uint8_t *p = conv_alloc(c, o.len);
		if (p) {
			memcpy(p, o.b, o.len);
			*out = p;
			*len = o.len;
		}
	}
	free(o.b);
}
