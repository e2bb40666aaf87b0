/*
 * The tool catalog: backends' tools/list answers merged under a ToolSet
 * (filters, prefixes, collisions, access rules), served as pages with the
 * gateway's own cursors, and tools/call routed by exposed name.
 */
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arn_config_model.h"
#include "arn_mcp.h"

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
	const unsigned char *s = p;
	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

#define FNV_INIT 0xcbf29ce484222325ull

/* ---- backends' pages ----------------------------------------------------------- */

enum arn_mcp_err arn_mcp_tools_page_read(struct json_object *result, struct json_object *acc,
					 uint32_t max_tools, const char **next)
{
	struct json_object *tools, *nc;
	*next = NULL;
	if (!result || !json_object_is_type(result, json_type_object) ||
	    !json_object_object_get_ex(result, "tools", &tools) ||
	    !json_object_is_type(tools, json_type_array))
		return ARN_MCP_E_INVALID;
	size_t n = json_object_array_length(tools);
	for (size_t i = 0; i < n; i++) {
		if (json_object_array_length(acc) >= max_tools)
			return ARN_MCP_E_BACKEND;
		json_object_array_add(acc, json_object_get(json_object_array_get_idx(tools, i)));
	}
	if (json_object_object_get_ex(result, "nextCursor", &nc) &&
	    json_object_is_type(nc, json_type_string) && json_object_get_string_len(nc) > 0)
		*next = json_object_get_string(nc);
	return ARN_MCP_E_NONE;
}

/* ---- matching ------------------------------------------------------------------- */

static bool tool_match(const struct arn_cfg_mcp_tool_match *m, const struct arn_cfg_toolset *ts,
		       uint32_t backend, const char *orig, size_t n)
{
	if (m->backend_len) {
		const struct arn_cfg_mcp_backend *b = &ts->backends[backend];
		if (b->name_len != m->backend_len || memcmp(b->name, m->backend, b->name_len) != 0)
			return false;
	}
	return arn_cfg_str_match(&m->name, orig, n);
}

static bool any_match(const struct arn_cfg_mcp_tool_match *m, size_t n,
		      const struct arn_cfg_toolset *ts, uint32_t backend, const char *orig,
		      size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (tool_match(&m[i], ts, backend, orig, len))
			return true;
	return false;
}

static bool principal_match(const struct arn_cfg_mcp_principal *p, const struct arn_mcp_client *cl)
{
	if (!cl)
		return false; /* nobody: no principal admits it */
	if (p->kind == ARN_CFG_MCP_PRINCIPAL_HEADER)
		return cl->req && !cl->headers_lost &&
		       arn_cfg_headers_match(&p->header, 1, cl->req);
	if (cl->sans_lost)
		return false; /* a part of the list is not the certificate: fail closed */
	for (size_t i = 0; i < cl->n_sans; i++)
		if (arn_cfg_str_match(&p->san, cl->sans[i].s, cl->sans[i].n))
			return true;
	return false;
}

bool arn_mcp_tool_visible(const struct arn_cfg_toolset *ts, const struct arn_mcp_tool *t,
			  const struct arn_mcp_client *cl)
{
	if (!t->governed)
		return true;
	for (size_t r = 0; r < ts->n_rules; r++) {
		const struct arn_cfg_mcp_access_rule *rule = &ts->rules[r];
		if (!any_match(rule->tools, rule->n_tools, ts, t->backend, t->orig, t->orig_len))
			continue;
		for (size_t p = 0; p < rule->n_principals; p++)
			if (principal_match(&rule->principals[p], cl))
				return true;
	}
	return false;
}

static bool rule_admits(const struct arn_cfg_mcp_access_rule *rule, const struct arn_mcp_client *cl)
{
	for (size_t p = 0; p < rule->n_principals; p++)
		if (principal_match(&rule->principals[p], cl))
			return true;
	return false;
}

bool arn_mcp_name_allowed(const struct arn_cfg_toolset *ts, uint32_t backend, const char *orig,
			  size_t n)
{
	if (ts->n_allow && !any_match(ts->allow, ts->n_allow, ts, backend, orig, n))
		return false;
	return !any_match(ts->deny, ts->n_deny, ts, backend, orig, n);
}

bool arn_mcp_name_visible(const struct arn_cfg_toolset *ts, uint32_t backend, const char *orig,
			  size_t n, const struct arn_mcp_client *cl)
{
	bool governed = false;
	for (size_t r = 0; r < ts->n_rules; r++) {
		const struct arn_cfg_mcp_access_rule *rule = &ts->rules[r];
		if (!any_match(rule->tools, rule->n_tools, ts, backend, orig, n))
			continue;
		governed = true;
		if (rule_admits(rule, cl))
			return true;
	}
	return !governed;
}

/* Whether matcher @p m can apply to backend @p b's names (it names no
 * backend, or that one). */
static bool may_cover(const struct arn_cfg_mcp_tool_match *m, const struct arn_cfg_toolset *ts,
		      uint32_t b)
{
	const struct arn_cfg_mcp_backend *be = &ts->backends[b];
	return !m->backend_len ||
	       (m->backend_len == be->name_len && memcmp(m->backend, be->name, be->name_len) == 0);
}

bool arn_mcp_backend_visible(const struct arn_cfg_toolset *ts, uint32_t backend,
			     const struct arn_mcp_client *cl)
{
	/* URIs have no matchers of their own: the backend's exposure decides,
	 * read on the safe side (anything that may narrow the backend's tools
	 * for this client hides its resources) */
	if (ts->n_allow) {
		bool any = false;
		for (size_t i = 0; i < ts->n_allow && !any; i++)
			any = may_cover(&ts->allow[i], ts, backend);
		if (!any)
			return false;
	}
	bool governed = false;
	for (size_t r = 0; r < ts->n_rules; r++) {
		const struct arn_cfg_mcp_access_rule *rule = &ts->rules[r];
		bool covers = false;
		for (size_t i = 0; i < rule->n_tools && !covers; i++)
			covers = may_cover(&rule->tools[i], ts, backend);
		if (!covers)
			continue;
		governed = true;
		if (rule_admits(rule, cl))
			return true;
	}
	return !governed;
}

/* ---- building ---------------------------------------------------------------------- */

struct cand {
	struct json_object *obj;
	const char *orig;
	size_t orig_len;
	uint32_t backend;
	uint32_t backends_listing; /* distinct backends listing orig (ON_COLLISION) */
	bool drop;
};

/* An open-addressing table of indices + 1 into an array of names. */
static uint32_t *lookup_slot(uint32_t *idx, uint32_t mask, uint64_t h, const char *s, size_t n,
			     const char *(*name)(const void *, uint32_t, size_t *), const void *arr)
{
	for (uint32_t i = (uint32_t)h & mask;; i = (i + 1) & mask) {
		if (!idx[i])
			return &idx[i];
		size_t l;
		const char *k = name(arr, idx[i] - 1, &l);
		if (l == n && memcmp(k, s, n) == 0)
			return &idx[i];
	}
}

static const char *cand_name(const void *arr, uint32_t i, size_t *n)
{
	const struct cand *c = arr;
	*n = c[i].orig_len;
	return c[i].orig;
}

static const char *tool_name(const void *arr, uint32_t i, size_t *n)
{
	const struct arn_mcp_tool *t = arr;
	*n = t[i].name_len;
	return t[i].name;
}

static uint32_t table_mask(size_t n)
{
	uint32_t m = 16;
	while (m < 2 * n)
		m <<= 1;
	return m - 1;
}

/* A tool's name as its backend lists it, or NULL when unusable. */
static const char *orig_name(struct json_object *t, size_t max, size_t *n)
{
	struct json_object *name;
	if (!t || !json_object_is_type(t, json_type_object) ||
	    !json_object_object_get_ex(t, "name", &name) ||
	    !json_object_is_type(name, json_type_string))
		return NULL;
	const char *s = json_object_get_string(name);
	*n = (size_t)json_object_get_string_len(name);
	if (*n == 0 || *n > max)
		return NULL;
	for (size_t i = 0; i < *n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return NULL;
	return s;
}

/* Whether @p t's schemas are what MCP's Tool says: inputSchema an object
 * with "type": "object", outputSchema (optional) an object. Clients check
 * every tool of a tools/list result (the SDKs' ListToolsResultSchema), so
 * one backend's tool without them would make the whole merged list, every
 * backend's tools, unreadable to them. */
static bool schemas_ok(struct json_object *t)
{
	struct json_object *in, *ty, *out;
	if (!json_object_object_get_ex(t, "inputSchema", &in) ||
	    !json_object_is_type(in, json_type_object) ||
	    !json_object_object_get_ex(in, "type", &ty) ||
	    !json_object_is_type(ty, json_type_string) ||
	    strcmp(json_object_get_string(ty), "object") != 0)
		return false;
	return !json_object_object_get_ex(t, "outputSchema", &out) ||
	       json_object_is_type(out, json_type_object);
}

/* The backend's definition with "name" replaced, sharing every other value. */
static struct json_object *exposed_def(struct json_object *orig, const char *name, size_t n)
{
	struct json_object *d = json_object_new_object();
	if (!d)
		return NULL;
	json_object_object_foreach(orig, k, v)
	{
		if (strcmp(k, "name") != 0)
			json_object_object_add(d, k, json_object_get(v));
	}
	json_object_object_add(d, "name", json_object_new_string_len(name, (int)n));
	return d;
}

struct arn_mcp_catalog *arn_mcp_catalog_build(const struct arn_cfg_toolset *ts,
					      struct json_object *const *lists,
					      const struct arn_mcp_limits *lim_in)
{
	struct arn_mcp_limits lim = lim_in ? *lim_in : (struct arn_mcp_limits){0};
	arn_mcp_limits_resolve(&lim);
	struct arn_mcp_catalog *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;

	size_t total = 0;
	for (size_t b = 0; b < ts->n_backends; b++)
		if (lists[b] && json_object_is_type(lists[b], json_type_array))
			total += json_object_array_length(lists[b]);
	struct cand *cands = calloc(total ? total : 1, sizeof(*cands));
	uint32_t cmask = table_mask(total);
	uint32_t *cidx = calloc((size_t)cmask + 1, sizeof(*cidx));
	if (!cands || !cidx)
		goto oom;

	/* 1. Usable, allowed tools; each backend's duplicates dropped; how
	 * many backends list each name. */
	size_t nc = 0;
	for (uint32_t b = 0; b < ts->n_backends; b++) {
		if (!lists[b] || !json_object_is_type(lists[b], json_type_array))
			continue;
		size_t n = json_object_array_length(lists[b]);
		for (size_t i = 0; i < n; i++) {
			struct json_object *t = json_object_array_get_idx(lists[b], i);
			size_t len;
			const char *orig = orig_name(t, lim.max_tool_name, &len);
			if (!orig || !schemas_ok(t)) {
				c->n_invalid++;
				continue;
			}
			if ((ts->n_allow && !any_match(ts->allow, ts->n_allow, ts, b, orig, len)) ||
			    any_match(ts->deny, ts->n_deny, ts, b, orig, len)) {
				c->n_filtered++;
				continue;
			}
			struct cand *k = &cands[nc];
			*k = (struct cand){.obj = t, .orig = orig, .orig_len = len, .backend = b};
			uint32_t *slot = lookup_slot(cidx, cmask, fnv1a(FNV_INIT, orig, len), orig,
						     len, cand_name, cands);
			if (!*slot) {
				*slot = (uint32_t)nc + 1;
				k->backends_listing = 1;
			} else {
				struct cand *first = &cands[*slot - 1];
				if (first->backend == b) {
					c->n_shadowed++; /* the same name twice from one backend */
					continue;
				}
				/* Counted on the first; read back through the table. */
				if (first->backends_listing < UINT32_MAX)
					first->backends_listing++;
			}
			nc++;
		}
	}

	/* 2. Exposed names. */
	size_t arena_len = 0;
	for (size_t i = 0; i < nc; i++)
		arena_len += ts->backends[cands[i].backend].name_len + ts->separator_len +
			     2 * (cands[i].orig_len + 1);
	char *arena = c->arena = malloc(arena_len ? arena_len : 1);
	c->tools = calloc(nc ? nc : 1, sizeof(*c->tools));
	c->index_mask = table_mask(nc);
	c->index = calloc((size_t)c->index_mask + 1, sizeof(*c->index));
	if (!arena || !c->tools || !c->index)
		goto oom;
	/* Names, exposed then original, one after the other in the arena: the
	 * backends' answers may be freed once the catalog is built. */
	char *w = arena;
	c->hash = c->defs_hash = FNV_INIT;
	for (size_t i = 0; i < nc; i++) {
		struct cand *k = &cands[i];
		const struct arn_cfg_mcp_backend *be = &ts->backends[k->backend];
		bool prefix = ts->prefix_mode == ARN_CFG_MCP_PREFIX_ALWAYS;
		if (ts->prefix_mode == ARN_CFG_MCP_PREFIX_ON_COLLISION) {
			uint32_t *slot =
			    lookup_slot(cidx, cmask, fnv1a(FNV_INIT, k->orig, k->orig_len), k->orig,
					k->orig_len, cand_name, cands);
			prefix = cands[*slot - 1].backends_listing > 1;
		}
		size_t len = prefix ? be->name_len + ts->separator_len + k->orig_len : k->orig_len;
		if (len > lim.max_tool_name) {
			c->n_invalid++;
			continue;
		}
		char *name = w;
		if (prefix) {
			memcpy(w, be->name, be->name_len);
			memcpy(w + be->name_len, ts->separator, ts->separator_len);
			memcpy(w + be->name_len + ts->separator_len, k->orig, k->orig_len);
		} else {
			memcpy(w, k->orig, k->orig_len);
		}
		name[len] = '\0';
		uint32_t *slot = lookup_slot(c->index, c->index_mask, fnv1a(FNV_INIT, name, len),
					     name, len, tool_name, c->tools);
		if (*slot) {
			c->n_shadowed++; /* NEVER's rule, or a prefixed name taken */
			continue;
		}
		if (c->n >= lim.max_tools) {
			c->n_over++;
			continue;
		}
		w += len + 1;
		memcpy(w, k->orig, k->orig_len);
		w[k->orig_len] = '\0';
		struct arn_mcp_tool *t = &c->tools[c->n];
		t->orig = w;
		w += k->orig_len + 1;
		t->name = name;
		t->name_len = len;
		t->orig_len = k->orig_len;
		t->backend = k->backend;
		t->governed = false;
		for (size_t r = 0; r < ts->n_rules && !t->governed; r++)
			t->governed = any_match(ts->rules[r].tools, ts->rules[r].n_tools, ts,
						k->backend, k->orig, k->orig_len);
		t->def = exposed_def(k->obj, name, len);
		if (!t->def)
			goto oom;
		*slot = c->n + 1;
		c->n++;
		c->hash = fnv1a(c->hash, name, len + 1);
		c->hash = fnv1a(c->hash, &t->backend, sizeof(t->backend));
		size_t dl;
		const char *dt = arn_mcp_text(t->def, &dl);
		c->defs_hash = fnv1a(c->defs_hash, dt, dl + 1);
	}
	free(cands);
	free(cidx);
	return c;
oom:
	free(cands);
	free(cidx);
	arn_mcp_catalog_free(c);
	return NULL;
}

void arn_mcp_catalog_free(struct arn_mcp_catalog *c)
{
	if (!c)
		return;
	for (uint32_t i = 0; i < c->n; i++)
		json_object_put(c->tools[i].def);
	free(c->arena);
	free(c->tools);
	free(c->index);
	free(c);
}

const struct arn_mcp_tool *arn_mcp_catalog_find(const struct arn_mcp_catalog *c, const char *name,
						size_t n)
{
	uint32_t *slot = lookup_slot(c->index, c->index_mask, fnv1a(FNV_INIT, name, n), name, n,
				     tool_name, c->tools);
	return *slot ? &c->tools[*slot - 1] : NULL;
}

/* ---- serving -------------------------------------------------------------------------- */

#define CURSOR_LEN 24 /* 16 hex digits of hash, 8 of position */

static bool cursor_read(const char *s, size_t n, uint64_t *hash, uint32_t *pos)
{
	if (n != CURSOR_LEN)
		return false;
	uint64_t h = 0;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		int v = ch >= '0' && ch <= '9'	 ? ch - '0'
			: ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
						 : -1;
		if (v < 0)
			return false;
		if (i < 16)
			h = h << 4 | (uint64_t)v;
		else
			*pos = (i == 16 ? 0 : *pos << 4) | (uint32_t)v;
	}
	*hash = h;
	return true;
}

enum arn_mcp_err arn_mcp_tools_list(const struct arn_mcp_catalog *c,
				    const struct arn_cfg_toolset *ts,
				    const struct arn_mcp_client *cl, struct json_object *params,
				    uint32_t page_size, struct json_object **result)
{
	*result = NULL;
	uint32_t from = 0;
	struct json_object *cur;
	if (params && json_object_object_get_ex(params, "cursor", &cur) && cur) {
		uint64_t h;
		if (!json_object_is_type(cur, json_type_string))
			return ARN_MCP_E_INVALID_PARAMS;
		if (!cursor_read(json_object_get_string(cur),
				 (size_t)json_object_get_string_len(cur), &h, &from) ||
		    h != c->hash || from > c->n)
			return ARN_MCP_E_BAD_CURSOR;
	}
	if (page_size == 0) {
		struct arn_mcp_limits lim = {0};
		arn_mcp_limits_resolve(&lim);
		page_size = lim.max_page_tools;
	}
	struct json_object *r = json_object_new_object();
	struct json_object *arr = json_object_new_array();
	if (!r || !arr) {
		json_object_put(r);
		json_object_put(arr);
		return ARN_MCP_E_INTERNAL;
	}
	uint32_t i = from, taken = 0;
	for (; i < c->n; i++) {
		if (!arn_mcp_tool_visible(ts, &c->tools[i], cl))
			continue;
		if (taken == page_size)
			break; /* i: the next visible tool */
		json_object_array_add(arr, json_object_get(c->tools[i].def));
		taken++;
	}
	json_object_object_add(r, "tools", arr);
	if (i < c->n) {
		char buf[CURSOR_LEN + 1];
		snprintf(buf, sizeof(buf), "%016" PRIx64 "%08" PRIx32, c->hash, i);
		json_object_object_add(r, "nextCursor", json_object_new_string(buf));
	}
	*result = r;
	return ARN_MCP_E_NONE;
}

enum arn_mcp_err arn_mcp_tools_call(const struct arn_mcp_catalog *c,
				    const struct arn_cfg_toolset *ts,
				    const struct arn_mcp_client *cl, struct json_object *params,
				    const struct arn_mcp_tool **out)
{
	struct json_object *name, *args;
	*out = NULL;
	if (!params || !json_object_object_get_ex(params, "name", &name) ||
	    !json_object_is_type(name, json_type_string))
		return ARN_MCP_E_INVALID_PARAMS;
	if (json_object_object_get_ex(params, "arguments", &args) &&
	    (!args || !json_object_is_type(args, json_type_object)))
		return ARN_MCP_E_INVALID_PARAMS;
	const struct arn_mcp_tool *t = arn_mcp_catalog_find(
	    c, json_object_get_string(name), (size_t)json_object_get_string_len(name));
	if (!t)
		return ARN_MCP_E_UNKNOWN_TOOL;
	if (!arn_mcp_tool_visible(ts, t, cl))
		return ARN_MCP_E_FORBIDDEN_TOOL;
	json_object_object_add(params, "name",
			       json_object_new_string_len(t->orig, (int)t->orig_len));
	*out = t;
	return ARN_MCP_E_NONE;
}
