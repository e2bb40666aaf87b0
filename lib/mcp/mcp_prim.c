/*
 * Prompts and resources across the backends, beside tools: the lists
 * merged (prompts' names prefixed under the ToolSet's prefix mode as
 * tools' are; resources and templates by URI, which is their identity,
 * unchanged), and prompts/get and resources/read routed to the backend
 * that listed the name or URI, or else (resources/read) whose URI
 * template's literal prefix it starts with. Nothing is kept between
 * requests: each list, get or read asks every backend for its list first.
 *
 * The ToolSet's rules apply as to tools where there is a name to match:
 * a prompt is filtered (allow / deny) and governed (access rules) by its
 * own name, as its backend lists it, exactly as a tool of that name would
 * be. Resources and templates have only URIs, which ToolMatchers do not
 * describe, so they follow their backend: arn_mcp_backend_visible(), on
 * the safe side (a client that some rule may narrow on that backend and
 * that matches none of its principals sees none of its resources).
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arn_config_model.h"
#include "arn_mcp.h"

const char *arn_mcp_prim_list_method(enum arn_mcp_prim k)
{
	static const char *const m[] = {"tools/list", "prompts/list", "resources/list",
					"resources/templates/list"};
	return k < sizeof(m) / sizeof(m[0]) ? m[k] : "tools/list";
}

static const char *key_of(enum arn_mcp_prim k)
{
	static const char *const m[] = {"tools", "prompts", "resources", "resourceTemplates"};
	return k < sizeof(m) / sizeof(m[0]) ? m[k] : "tools";
}

/* The field that names an item: prompts by name, resources by URI. */
static const char *id_of(enum arn_mcp_prim k)
{
	return k == ARN_MCP_P_RESOURCES ? "uri" : k == ARN_MCP_P_TEMPLATES ? "uriTemplate" : "name";
}

bool arn_mcp_prim_of(enum arn_mcp_method m, enum arn_mcp_prim *k, bool *list)
{
	switch (m) {
	case ARN_MCP_M_PROMPTS_LIST:
		*k = ARN_MCP_P_PROMPTS, *list = true;
		return true;
	case ARN_MCP_M_PROMPTS_GET:
		*k = ARN_MCP_P_PROMPTS, *list = false;
		return true;
	case ARN_MCP_M_RESOURCES_LIST:
		*k = ARN_MCP_P_RESOURCES, *list = true;
		return true;
	case ARN_MCP_M_RESOURCES_READ:
		*k = ARN_MCP_P_RESOURCES, *list = false;
		return true;
	case ARN_MCP_M_RESOURCES_TEMPLATES_LIST:
		*k = ARN_MCP_P_TEMPLATES, *list = true;
		return true;
	default:
		return false;
	}
}

enum arn_mcp_err arn_mcp_prim_page_read(enum arn_mcp_prim k, struct json_object *result,
					struct json_object *acc, uint32_t max, const char **next)
{
	struct json_object *arr, *nc;
	*next = NULL;
	if (!result || !json_object_object_get_ex(result, key_of(k), &arr) ||
	    !json_object_is_type(arr, json_type_array))
		return ARN_MCP_E_INVALID;
	size_t n = json_object_array_length(arr);
	if (json_object_array_length(acc) + n > max)
		return ARN_MCP_E_BACKEND;
	for (size_t i = 0; i < n; i++)
		json_object_array_add(acc, json_object_get(json_object_array_get_idx(arr, i)));
	if (json_object_object_get_ex(result, "nextCursor", &nc) &&
	    json_object_is_type(nc, json_type_string))
		*next = json_object_get_string(nc);
	return ARN_MCP_E_NONE;
}

/* Whether item @p it of backend @p b passes the ToolSet's filters (all
 * clients) and, when @p check_cl, @p cl's access: prompts by name,
 * resources and templates by their backend. */
static bool shown(const struct arn_cfg_toolset *ts, enum arn_mcp_prim k, uint32_t b,
		  struct json_object *it, bool check_cl, const struct arn_mcp_client *cl)
{
	if (k != ARN_MCP_P_PROMPTS)
		return !check_cl || arn_mcp_backend_visible(ts, b, cl);
	struct json_object *v;
	if (!json_object_is_type(it, json_type_object) ||
	    !json_object_object_get_ex(it, "name", &v) || !json_object_is_type(v, json_type_string))
		return false;
	const char *s = json_object_get_string(v);
	size_t n = (size_t)json_object_get_string_len(v);
	return arn_mcp_name_allowed(ts, b, s, n) &&
	       (!check_cl || arn_mcp_name_visible(ts, b, s, n, cl));
}

/* The name @p it is exposed as (prompts: prefixed per the ToolSet's
 * mode), into @p out; 0 when it has none or it does not fit. */
static size_t exposed(const struct arn_cfg_toolset *ts, enum arn_mcp_prim k, uint32_t b,
		      struct json_object *it, struct json_object *counts, char *out, size_t cap)
{
	struct json_object *v;
	if (!json_object_is_type(it, json_type_object) ||
	    !json_object_object_get_ex(it, id_of(k), &v) ||
	    !json_object_is_type(v, json_type_string))
		return 0;
	const char *s = json_object_get_string(v);
	size_t n = (size_t)json_object_get_string_len(v);
	bool prefix = false;
	if (k == ARN_MCP_P_PROMPTS) {
		struct json_object *c;
		prefix = ts->prefix_mode == ARN_CFG_MCP_PREFIX_ALWAYS ||
			 (ts->prefix_mode == ARN_CFG_MCP_PREFIX_ON_COLLISION && counts &&
			  json_object_object_get_ex(counts, s, &c) && json_object_get_int(c) > 1);
	}
	const struct arn_cfg_mcp_backend *be = &ts->backends[b];
	size_t need = n + (prefix ? be->name_len + ts->separator_len : 0);
	if (n == 0 || need >= cap || memchr(s, 0, n))
		return 0;
	size_t o = 0;
	if (prefix) {
		memcpy(out, be->name, be->name_len);
		memcpy(out + be->name_len, ts->separator, ts->separator_len);
		o = be->name_len + ts->separator_len;
	}
	memcpy(out + o, s, n);
	out[need] = 0;
	return need;
}

/* How many backends list each prompt name (ON_COLLISION); NULL otherwise. */
static struct json_object *collisions(const struct arn_cfg_toolset *ts, enum arn_mcp_prim k,
				      struct json_object *const *lists)
{
	if (k != ARN_MCP_P_PROMPTS || ts->prefix_mode != ARN_CFG_MCP_PREFIX_ON_COLLISION)
		return NULL;
	struct json_object *counts = json_object_new_object();
	struct json_object *mine = json_object_new_object(); /* one backend's, to count it once */
	for (size_t b = 0; counts && mine && b < ts->n_backends; b++) {
		if (!lists[b])
			continue;
		for (size_t i = 0; i < json_object_array_length(lists[b]); i++) {
			struct json_object *v, *it = json_object_array_get_idx(lists[b], i);
			if (!shown(ts, k, (uint32_t)b, it, false, NULL))
				continue; /* filtered out: it collides with nothing, as a tool */
			v = json_object_object_get(it, "name");
			const char *s = json_object_get_string(v);
			if (json_object_object_get_ex(mine, s, NULL))
				continue;
			json_object_object_add(mine, s, NULL);
			struct json_object *c;
			int was =
			    json_object_object_get_ex(counts, s, &c) ? json_object_get_int(c) : 0;
			json_object_object_add(counts, s, json_object_new_int(was + 1));
		}
		json_object_put(mine);
		mine = json_object_new_object();
	}
	json_object_put(mine);
	return counts;
}

struct json_object *arn_mcp_prim_merge(const struct arn_cfg_toolset *ts, enum arn_mcp_prim k,
				       struct json_object *const *lists,
				       const struct arn_mcp_client *cl)
{
	struct json_object *res = json_object_new_object();
	struct json_object *arr = json_object_new_array();
	struct json_object *seen = json_object_new_object();
	struct json_object *counts = collisions(ts, k, lists);
	if (!res || !arr || !seen) {
		json_object_put(res);
		json_object_put(arr);
		json_object_put(seen);
		json_object_put(counts);
		return NULL;
	}
	char name[ARN_MCP_NAME_HDR_MAX];
	for (uint32_t b = 0; b < ts->n_backends; b++) {
		if (!lists[b])
			continue;
		for (size_t i = 0; i < json_object_array_length(lists[b]); i++) {
			struct json_object *it = json_object_array_get_idx(lists[b], i);
			if (!shown(ts, k, b, it, true, cl))
				continue;
			size_t n = exposed(ts, k, b, it, counts, name, sizeof(name));
			if (n == 0 || json_object_object_get_ex(seen, name, NULL))
				continue; /* no name, too long, or another backend's first */
			json_object_object_add(seen, name, NULL);
			struct json_object *cp = json_object_new_object();
			if (!cp)
				continue;
			json_object_object_foreach(it, key, val)
			{
				json_object_object_add(cp, key, json_object_get(val));
			}
			if (k == ARN_MCP_P_PROMPTS)
				json_object_object_add(cp, "name",
						       json_object_new_string_len(name, (int)n));
			json_object_array_add(arr, cp);
		}
	}
	json_object_put(seen);
	json_object_put(counts);
	json_object_object_add(res, key_of(k), arr);
	return res;
}

/* resources/read by the backends' templates: the one whose literal
 * prefix (the text before the first '{', RFC 6570's expressions being
 * what varies) @p want starts with, the longest such prefix winning
 * and the first backend among equals; a template without an expression
 * is a URI and must be equal. */
static enum arn_mcp_err route_template(const struct arn_cfg_toolset *ts,
				       struct json_object *const *lists,
				       const struct arn_mcp_client *cl, const char *want, size_t wn,
				       uint32_t *backend)
{
	bool found = false;
	size_t best = 0;
	for (uint32_t b = 0; b < ts->n_backends; b++) {
		if (!lists[b] || !json_object_is_type(lists[b], json_type_array) ||
		    !arn_mcp_backend_visible(ts, b, cl))
			continue;
		for (size_t i = 0; i < json_object_array_length(lists[b]); i++) {
			struct json_object *v, *it = json_object_array_get_idx(lists[b], i);
			if (!json_object_is_type(it, json_type_object) ||
			    !json_object_object_get_ex(it, "uriTemplate", &v) ||
			    !json_object_is_type(v, json_type_string))
				continue;
			const char *t = json_object_get_string(v);
			size_t tn = (size_t)json_object_get_string_len(v);
			const char *brace = memchr(t, '{', tn);
			size_t pn = brace ? (size_t)(brace - t) : tn;
			if (pn > wn || memcmp(t, want, pn) != 0 || (!brace && pn != wn))
				continue;
			if (!found || pn > best) {
				found = true;
				best = pn;
				*backend = b;
			}
		}
	}
	return found ? ARN_MCP_E_NONE : ARN_MCP_E_UNKNOWN_RESOURCE;
}

enum arn_mcp_err arn_mcp_prim_route(const struct arn_cfg_toolset *ts, enum arn_mcp_prim k,
				    struct json_object *const *lists,
				    const struct arn_mcp_client *cl, struct json_object *params,
				    uint32_t *backend)
{
	struct json_object *v;
	const char *field = k == ARN_MCP_P_PROMPTS ? "name" : "uri";
	if (!params || !json_object_object_get_ex(params, field, &v) ||
	    !json_object_is_type(v, json_type_string))
		return ARN_MCP_E_INVALID_PARAMS;
	const char *want = json_object_get_string(v);
	size_t wn = (size_t)json_object_get_string_len(v);
	if (k == ARN_MCP_P_TEMPLATES)
		return route_template(ts, lists, cl, want, wn, backend);
	struct json_object *counts = collisions(ts, k, lists);
	char name[ARN_MCP_NAME_HDR_MAX];
	for (uint32_t b = 0; b < ts->n_backends; b++) {
		if (!lists[b])
			continue;
		for (size_t i = 0; i < json_object_array_length(lists[b]); i++) {
			struct json_object *it = json_object_array_get_idx(lists[b], i);
			if (!shown(ts, k, b, it, true, cl))
				continue; /* hidden from this client: unknown to it */
			size_t n = exposed(ts, k, b, it, counts, name, sizeof(name));
			if (n != wn || memcmp(name, want, n) != 0)
				continue;
			json_object_put(counts);
			*backend = b;
			if (k == ARN_MCP_P_PROMPTS) { /* the backend's own name */
				struct json_object *orig = json_object_object_get(it, "name");
				json_object_object_add(params, "name", json_object_get(orig));
			}
			return ARN_MCP_E_NONE;
		}
	}
	json_object_put(counts);
	return k == ARN_MCP_P_RESOURCES ? ARN_MCP_E_UNKNOWN_RESOURCE : ARN_MCP_E_UNKNOWN_PROMPT;
}
