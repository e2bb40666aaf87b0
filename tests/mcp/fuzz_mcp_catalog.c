/*
 * libFuzzer: arbitrary tools/list answers from three backends (the input
 * cut at NUL bytes; the first byte picks the prefix mode and the page
 * size) through the catalog: every exposed name unique and found, pages
 * that list each tool exactly once, every call routed to the right backend
 * with its own name. Backends are not trusted to list sane tools.
 */
#include <json-c/json.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arn_config_model.h"
#include "arn_mcp.h"

static struct arn_cfg_mcp_backend backends[3] = {
    {.name = "a", .name_len = 1},
    {.name = "a_", .name_len = 2},
    {.name = "b", .name_len = 1},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	struct arn_cfg_toolset ts = {
	    .backends = backends,
	    .n_backends = 3,
	    .prefix_mode = (uint8_t)(data[0] % 3),
	    .separator = "_",
	    .separator_len = 1,
	};
	uint32_t page = (data[0] >> 2) % 5 + 1;
	struct arn_mcp_limits lim = {
	    .max_tools = 64, .max_tool_name = 24, .max_message_bytes = 1 << 16};
	struct json_object *lists[3] = {0};
	const char *p = (const char *)data + 1, *end = (const char *)data + size;
	for (int i = 0; i < 3 && p < end; i++) {
		const char *z = memchr(p, '\0', (size_t)(end - p));
		size_t n = z ? (size_t)(z - p) : (size_t)(end - p);
		struct arn_mcp_reader r;
		if (arn_mcp_reader_init(&r, &lim) < 0)
			abort();
		/* The reader's limits first, as the filter reads backends' answers. */
		if (arn_mcp_reader_feed(&r, p, n) == ARN_AGAIN) {
			struct arn_mcp_body b;
			if (arn_mcp_reader_finish(&r, true, &b) == ARN_MCP_E_NONE) {
				lists[i] = json_object_get(b.root);
				arn_mcp_body_release(&b);
			} else if (r.root) {
				lists[i] = json_object_get(r.root); /* arrays of non-messages */
			}
		}
		arn_mcp_reader_fini(&r);
		p += n + 1;
	}
	struct arn_mcp_catalog *c = arn_mcp_catalog_build(&ts, lists, &lim);
	if (!c)
		abort();
	if (c->n > lim.max_tools)
		abort();
	for (uint32_t i = 0; i < c->n; i++) {
		const struct arn_mcp_tool *t = &c->tools[i];
		if (arn_mcp_catalog_find(c, t->name, t->name_len) != t ||
		    t->name_len > lim.max_tool_name || t->backend >= 3 ||
		    strlen(t->name) != t->name_len)
			abort();
		/* only tools MCP's Tool allows: clients refuse a list with others */
		struct json_object *in, *ty;
		if (!json_object_object_get_ex(t->def, "inputSchema", &in) ||
		    !json_object_object_get_ex(in, "type", &ty) ||
		    strcmp(json_object_get_string(ty), "object") != 0)
			abort();
	}
	/* pages list every tool once, in order */
	struct arn_mcp_client anon = {0};
	struct json_object *params = json_object_new_object();
	uint32_t seen = 0;
	for (;;) {
		struct json_object *res, *tools, *nc;
		if (arn_mcp_tools_list(c, &ts, &anon, params, page, &res) != ARN_MCP_E_NONE)
			abort();
		json_object_object_get_ex(res, "tools", &tools);
		for (size_t k = 0; k < json_object_array_length(tools); k++) {
			struct json_object *name;
			json_object_object_get_ex(json_object_array_get_idx(tools, k), "name",
						  &name);
			if (seen >= c->n ||
			    strcmp(json_object_get_string(name), c->tools[seen].name) != 0)
				abort();
			seen++;
		}
		bool more = json_object_object_get_ex(res, "nextCursor", &nc);
		if (more)
			json_object_object_add(params, "cursor", json_object_get(nc));
		json_object_put(res);
		if (!more)
			break;
	}
	if (seen != c->n)
		abort();
	json_object_put(params);
	/* calls reach the owner with its own name */
	for (uint32_t i = 0; i < c->n; i++) {
		struct json_object *cp = json_object_new_object();
		json_object_object_add(cp, "name", json_object_new_string(c->tools[i].name));
		const struct arn_mcp_tool *t;
		struct json_object *nm;
		if (arn_mcp_tools_call(c, &ts, &anon, cp, &t) != ARN_MCP_E_NONE ||
		    t != &c->tools[i] || !json_object_object_get_ex(cp, "name", &nm) ||
		    strcmp(json_object_get_string(nm), t->orig) != 0)
			abort();
		json_object_put(cp);
	}
	arn_mcp_catalog_free(c);
	for (int i = 0; i < 3; i++)
		json_object_put(lists[i]);
	return 0;
}
