/*
 * lib/mcp benchmark (reports, never gates): the gateway core's own cost per
 * message, the part of an MCP round trip that is Arion's and not the
 * network's or the backend's.
 *
 *  1. A typical tools/call request (~250 bytes): read, dispatched, routed
 *     (access rules checked, name rewritten) and serialised for the
 *     backend.
 *  2. The backend's answer relayed: an SSE event read, decoded, serialised
 *     for the client.
 *  3. tools/list: a 256-tool page from a catalog of N tools, serialised.
 *  4. A catalog built from three backends' lists (N tools in all).
 *
 *   bench_mcp [N_TOOLS] [ITERATIONS]     (defaults 1000, 200000)
 */
#include <json-c/json.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arn_config_model.h"
#include "arn_mcp.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t heap_bytes(void)
{
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
}

static struct arn_cfg_mcp_backend backends[3] = {
    {.name = "gh", .name_len = 2},
    {.name = "jira", .name_len = 4},
    {.name = "docs", .name_len = 4},
};
static struct arn_cfg_mcp_tool_match rule_tools[1] = {
    {.name = {.kind = ARN_CFG_STR_PREFIX, .s = "admin_", .len = 6}},
};
static struct arn_cfg_mcp_principal principals[1] = {
    {.kind = ARN_CFG_MCP_PRINCIPAL_HEADER,
     .header = {.name = "x-team",
		.name_len = 6,
		.kind = ARN_CFG_HDR_STRING,
		.str = {.kind = ARN_CFG_STR_EXACT, .s = "ops", .len = 3}}},
};
static struct arn_cfg_mcp_access_rule rules[1] = {
    {.tools = rule_tools, .n_tools = 1, .principals = principals, .n_principals = 1},
};
static const struct arn_cfg_toolset ts = {
    .backends = backends,
    .n_backends = 3,
    .prefix_mode = ARN_CFG_MCP_PREFIX_ALWAYS,
    .separator = "__",
    .separator_len = 2,
    .rules = rules,
    .n_rules = 1,
};

static struct json_object *backend_list(int b, int n)
{
	struct json_object *a = json_object_new_array();
	for (int i = 0; i < n; i++) {
		char s[512];
		snprintf(s, sizeof(s),
			 "{\"name\":\"%s_%d_%d\",\"description\":\"Does thing %d of backend %d.\","
			 "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"q\":{\"type\":"
			 "\"string\"},\"limit\":{\"type\":\"integer\"}},\"required\":[\"q\"]}}",
			 i % 10 == 0 ? "admin" : "tool", b, i, i, b);
		json_object_array_add(a, json_tokener_parse(s));
	}
	return a;
}

int main(int argc, char **argv)
{
	int n_tools = argc > 1 ? atoi(argv[1]) : 1000;
	long iters = argc > 2 ? atol(argv[2]) : 200000;
	struct arn_mcp_limits lim = {.max_tools = 65536};
	struct json_object *lists[3];
	for (int b = 0; b < 3; b++)
		lists[b] = backend_list(b, n_tools / 3 + (b < n_tools % 3));

	/* 4. catalog build */
	size_t h0 = heap_bytes();
	double t0 = now_s();
	int builds = 20;
	struct arn_mcp_catalog *c = NULL;
	for (int i = 0; i < builds; i++) {
		arn_mcp_catalog_free(c);
		c = arn_mcp_catalog_build(&ts, lists, &lim);
	}
	double t_build = (now_s() - t0) / builds;
	size_t cat_bytes = heap_bytes() - h0;

	struct arn_cfg_header hdr = {"x-team", 6, "dev", 3};
	struct arn_cfg_request req = {.headers = &hdr, .n_headers = 1};
	struct arn_mcp_client cl = {.req = &req};
	struct arn_mcp_session sess = {.in_use = true, .version = ARN_MCP_V_2025_06_18};

	/* 1. tools/call request */
	char body[512];
	int blen =
	    snprintf(body, sizeof(body),
		     "{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":\"tools/call\",\"params\":{"
		     "\"name\":\"jira__tool_1_%d\",\"arguments\":{\"q\":\"open bugs assigned to "
		     "me\",\"limit\":20},\"_meta\":{\"progressToken\":\"tok-42\"}}}",
		     (n_tools / 3) - 1);
	size_t out_bytes = 0;
	t0 = now_s();
	for (long i = 0; i < iters; i++) {
		struct arn_mcp_body b;
		struct json_object *ans;
		enum arn_mcp_version v;
		const struct arn_mcp_tool *t;
		if (arn_mcp_parse(body, (size_t)blen, NULL, false, &b) ||
		    arn_mcp_dispatch(&b.msgs[0], &sess, false, &ans, &v) != ARN_MCP_S_TOOLS_CALL ||
		    arn_mcp_tools_call(c, &ts, &cl, b.msgs[0].params, &t)) {
			fprintf(stderr, "tools/call failed\n");
			return 1;
		}
		size_t len;
		arn_mcp_text(b.root, &len);
		out_bytes += len;
		arn_mcp_body_release(&b);
	}
	double t_call = (now_s() - t0) / (double)iters;

	/* 2. the answer relayed from an SSE event */
	const char *ev_text =
	    "id: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":42,\"result\":{\"content\":[{"
	    "\"type\":\"text\",\"text\":\"12 open bugs: ARN-1, ARN-2, ARN-3\"}],"
	    "\"isError\":false}}\n\n";
	size_t ev_len = strlen(ev_text);
	char sbuf[4096];
	t0 = now_s();
	for (long i = 0; i < iters; i++) {
		struct arn_mcp_sse p;
		struct arn_mcp_sse_ev ev;
		arn_mcp_sse_init(&p, sbuf, sizeof(sbuf));
		if (arn_mcp_sse_feed(&p, ev_text, ev_len, &ev) <= 0)
			return 1;
		struct arn_mcp_body b;
		if (arn_mcp_parse(ev.data, ev.data_len, NULL, false, &b) ||
		    arn_mcp_from_backend(&b.msgs[0], 1))
			return 1;
		size_t len;
		arn_mcp_text(b.root, &len);
		out_bytes += len;
		arn_mcp_body_release(&b);
	}
	double t_relay = (now_s() - t0) / (double)iters;

	/* 3. a tools/list page */
	long pages = iters / 100 + 1;
	size_t page_bytes = 0;
	t0 = now_s();
	for (long i = 0; i < pages; i++) {
		struct json_object *r;
		if (arn_mcp_tools_list(c, &ts, &cl, NULL, 256, &r))
			return 1;
		size_t len;
		arn_mcp_text(r, &len);
		page_bytes = len;
		json_object_put(r);
	}
	double t_page = (now_s() - t0) / (double)pages;

	printf("lib/mcp, json-c %s, %d tools (3 backends), one core\n", json_c_version(), c->n);
	printf(
	    "  tools/call request: read, dispatched, routed, serialised  %8.0f ns  (%d bytes in)\n",
	    t_call * 1e9, blen);
	printf(
	    "  answer relayed: SSE event read, decoded, serialised       %8.0f ns  (%zu bytes)\n",
	    t_relay * 1e9, ev_len);
	printf(
	    "  tools/list page of 256, serialised                        %8.1f us  (%zu bytes)\n",
	    t_page * 1e6, page_bytes);
	printf("  catalog built from the three lists                        %8.2f ms  (%zu KiB)\n",
	       t_build * 1e3, cat_bytes / 1024);
	if (out_bytes == 0)
		printf("?\n");
	arn_mcp_catalog_free(c);
	for (int b = 0; b < 3; b++)
		json_object_put(lists[b]);
	return 0;
}
