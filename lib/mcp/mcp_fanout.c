/*
 * tools/list across the backends: one round of asking each for its whole
 * list, page by page, bounded in tools and pages.
 */
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arn_config_model.h"
#include "arn_mcp.h"

int arn_mcp_fanout_init(struct arn_mcp_fanout *f, const struct arn_cfg_toolset *ts,
			const struct arn_mcp_limits *lim)
{
	memset(f, 0, sizeof(*f));
	f->ts = ts;
	if (lim)
		f->lim = *lim;
	arn_mcp_limits_resolve(&f->lim);
	f->n = (uint32_t)ts->n_backends;
	f->b = calloc(f->n ? f->n : 1, sizeof(*f->b));
	if (!f->b)
		return -ENOMEM;
	for (uint32_t i = 0; i < f->n; i++) {
		f->b[i].tools = json_object_new_array();
		if (!f->b[i].tools) {
			arn_mcp_fanout_fini(f);
			return -ENOMEM;
		}
	}
	f->pending = f->n;
	return 0;
}

int arn_mcp_fanout_init_kind(struct arn_mcp_fanout *f, const struct arn_cfg_toolset *ts,
			     const struct arn_mcp_limits *lim, enum arn_mcp_prim k)
{
	int rc = arn_mcp_fanout_init(f, ts, lim);
	f->kind = (uint8_t)k;
	return rc;
}

void arn_mcp_fanout_fini(struct arn_mcp_fanout *f)
{
	for (uint32_t i = 0; f->b && i < f->n; i++) {
		json_object_put(f->b[i].tools);
		json_object_put(f->b[i].cursor);
	}
	free(f->b);
	f->b = NULL;
	f->n = f->pending = 0;
}

static void settle(struct arn_mcp_fanout *f, uint32_t b, uint8_t state, const char *why)
{
	struct arn_mcp_fanout_backend *x = &f->b[b];
	if (x->state == ARN_MCP_F_DONE || x->state == ARN_MCP_F_FAILED)
		return;
	x->state = state;
	if (why)
		snprintf(x->why, sizeof(x->why), "%s", why);
	f->pending--;
}

struct json_object *arn_mcp_fanout_request(struct arn_mcp_fanout *f, uint32_t b)
{
	if (b >= f->n || f->b[b].state != ARN_MCP_F_ASK)
		return NULL;
	struct arn_mcp_fanout_backend *x = &f->b[b];
	char idbuf[48];
	snprintf(idbuf, sizeof(idbuf), "arn.list.%" PRIu32 ".%" PRIu32, b, x->pages);
	struct json_object *id = json_object_new_string(idbuf);
	struct json_object *params = NULL;
	if (x->cursor) {
		params = json_object_new_object();
		if (params)
			json_object_object_add(params, "cursor", json_object_get(x->cursor));
	}
	struct json_object *r =
	    id && (params || !x->cursor)
		? arn_mcp_new_request(id, arn_mcp_prim_list_method((enum arn_mcp_prim)f->kind),
				      params)
		: NULL;
	json_object_put(id);
	json_object_put(params);
	if (r)
		x->state = ARN_MCP_F_WAIT;
	return r;
}

enum arn_mcp_fanout_state arn_mcp_fanout_answer(struct arn_mcp_fanout *f, uint32_t b,
						const struct arn_mcp_msg *m, size_t bytes)
{
	if (b >= f->n)
		return ARN_MCP_F_FAILED;
	struct arn_mcp_fanout_backend *x = &f->b[b];
	if (x->state != ARN_MCP_F_WAIT)
		return (enum arn_mcp_fanout_state)x->state;
	char why[128];
	if (m->err || (m->kind != ARN_MCP_RESULT && m->kind != ARN_MCP_ERROR)) {
		settle(f, b, ARN_MCP_F_FAILED, "tools/list: not a JSON-RPC answer");
		return ARN_MCP_F_FAILED;
	}
	if (m->kind == ARN_MCP_ERROR) {
		snprintf(why, sizeof(why), "tools/list: error %" PRId64 ": %s", m->error_code,
			 m->error_message);
		settle(f, b, ARN_MCP_F_FAILED, why);
		return ARN_MCP_F_FAILED;
	}
	/* each answer was bounded as it was read; the round keeps every
	 * page's tools until it ends, so their answers are bounded together
	 * too (64 pages of one answer-sized tool each would pin 64 answers) */
	x->bytes += bytes;
	if (x->bytes > f->lim.max_message_bytes) {
		snprintf(why, sizeof(why), "tools/list: its pages pass %" PRIu32 " bytes together",
			 f->lim.max_message_bytes);
		settle(f, b, ARN_MCP_F_FAILED, why);
		return ARN_MCP_F_FAILED;
	}
	const char *next = NULL;
	enum arn_mcp_err e =
	    f->kind == ARN_MCP_P_TOOLS
		? arn_mcp_tools_page_read(m->result, x->tools, f->lim.max_tools, &next)
		: arn_mcp_prim_page_read((enum arn_mcp_prim)f->kind, m->result, x->tools,
					 f->lim.max_tools, &next);
	x->pages++;
	if (e == ARN_MCP_E_BACKEND) {
		snprintf(why, sizeof(why), "tools/list: more than %" PRIu32 " tools (max_tools)",
			 f->lim.max_tools);
		settle(f, b, ARN_MCP_F_FAILED, why);
		return ARN_MCP_F_FAILED;
	}
	if (e) {
		settle(f, b, ARN_MCP_F_FAILED, "tools/list: the result has no tools array");
		return ARN_MCP_F_FAILED;
	}
	if (!next) {
		settle(f, b, ARN_MCP_F_DONE, NULL);
		return ARN_MCP_F_DONE;
	}
	/* A cursor that repeats would have the gateway ask forever. */
	if (x->cursor && strcmp(json_object_get_string(x->cursor), next) == 0) {
		settle(f, b, ARN_MCP_F_FAILED, "tools/list: nextCursor repeats the cursor asked");
		return ARN_MCP_F_FAILED;
	}
	if (x->pages >= f->lim.max_backend_pages) {
		snprintf(why, sizeof(why),
			 "tools/list: more than %" PRIu32 " pages (max_backend_pages)",
			 f->lim.max_backend_pages);
		settle(f, b, ARN_MCP_F_FAILED, why);
		return ARN_MCP_F_FAILED;
	}
	json_object_put(x->cursor);
	x->cursor = json_object_new_string(next);
	if (!x->cursor) {
		settle(f, b, ARN_MCP_F_FAILED, "out of memory");
		return ARN_MCP_F_FAILED;
	}
	x->state = ARN_MCP_F_ASK;
	return ARN_MCP_F_ASK;
}

void arn_mcp_fanout_fail(struct arn_mcp_fanout *f, uint32_t b, const char *why)
{
	if (b < f->n)
		settle(f, b, ARN_MCP_F_FAILED, why ? why : "failed");
}

struct arn_mcp_catalog *arn_mcp_fanout_catalog(const struct arn_mcp_fanout *f)
{
	struct json_object *lists[ARN_CFG_MCP_MAX_BACKENDS] = {0};
	for (uint32_t i = 0; i < f->n && i < ARN_CFG_MCP_MAX_BACKENDS; i++)
		lists[i] = f->b[i].state == ARN_MCP_F_DONE ? f->b[i].tools : NULL;
	return arn_mcp_catalog_build(f->ts, lists, &f->lim);
}

bool arn_mcp_catalog_changed(const struct arn_mcp_catalog *prev, const struct arn_mcp_catalog *next)
{
	return !prev || !next || prev->hash != next->hash || prev->n != next->n ||
	       prev->defs_hash != next->defs_hash;
}
