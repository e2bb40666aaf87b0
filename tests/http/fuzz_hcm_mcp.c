/*
 * libFuzzer target: the MCP gateway filter on the data path (lib/http:
 * http_mcp.c, http_subreq.c; lib/mcp) driven through the real HTTP
 * connection manager and TCP stack of fuzz_hcm.c's harness (hcm_harness.h).
 * Every byte from an MCP client and from an MCP backend is hostile: the
 * fuzzer writes both.
 *
 * On top of hcm_harness.h's configuration, a listener "mcp" on port 83
 * whose HCM carries the MCP gateway filter (ToolSet "tools", a small
 * max_request_bytes and max_response_bytes so that both limits are
 * reachable) and the ToolSet: backend "b" on cluster "web" (198.18.0.200)
 * and "c" on cluster "two" (two endpoints, circuit breakers), prefixes
 * only on collision, a tools/list cache of 1 s.
 *
 * Input format (bytes; reading past the end yields zeros):
 *   byte 0   set-up as fuzz_hcm.c (TCP buffers, MSS)
 *   then operations, one opcode byte each: op = byte & 15, a = byte >> 4;
 *   c = a & 3 a client, u = a & 7 the u-th upstream connection
 *     0 OPEN c      client c connects to port 83 (the gateway)
 *     1 CPOST c N   the next byte N, then N bytes: client c POSTs them as a
 *                   JSON-RPC body to /mcp; a & 4: with the mcp-session-id
 *                   of the last session any client was given; a & 8: with
 *                   the stateless era's headers (MCP-Protocol-Version
 *                   2026-07-28, Mcp-Method tools/call, Mcp-Name echo)
 *     2 CREQ c K    client c sends canned request K % N_CREQS (same
 *                   session); a & 8: canned stateless (2026-07-28) request
 *                   K % N_MREQS (tools, prompts, resources), its headers
 *                   matching its body or not
 *     3 CRAW c N    client c sends N raw bytes (any HTTP at all)
 *     4 CFIN c      client c sends FIN
 *     5 CRST c      client c resets
 *     6 CWIN c W    client c's receive window: W * 257 (0: closed)
 *     7 UJSON u N   upstream connection u answers 200 application/json with
 *                   N bytes as the body ("$ID" in them: the JSON-RPC id of
 *                   the last request it received); a & 8: with a
 *                   mcp-session-id
 *     8 USSE u N    as UJSON, text/event-stream, chunked, the body in
 *                   chunks of at most 64 bytes
 *     9 URESP u K   upstream connection u sends canned answer K % N_URESPS
 *    10 URAW u N    upstream connection u sends N raw bytes
 *    11 UFIN u      upstream connection u sends FIN
 *    12 URST u      upstream connection u resets
 *    13 UWIN u W    as CWIN
 *    14 TIME T      the clock advances T ms (T < 128) or (T - 127) * 256 ms
 *    15 SYN         how later upstream SYNs are answered (a % 3, as
 *                   fuzz_hcm.c); a & 4: the next (a >> 3) + 1 mbuf
 *                   allocations fail
 *
 * The end of a run is hcm_harness.h's: every peer resets, the clock runs
 * on, what each peer received must parse as HTTP/1.1 and nothing may be
 * left behind (connections, request buffers, pools, pins, mbufs).
 *
 * Session ids come from getrandom(2), so a run is not exactly the same
 * twice; which id is used is chosen by the input, not its value.
 * FUZZ_HCM_TRACE=1 and FUZZ_HCM_LOG work as for fuzz_hcm.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "hcm_harness.h"

#define MCP_PORT 83

static const char *const creqs[] = {
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
    "\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"f\",\"version\":\"1\"}}}",
    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}",
    "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
    "\"arguments\":{\"x\":1}}}",
    "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"b__echo\","
    "\"arguments\":{}}}",
    "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"c__echo\","
    "\"_meta\":{\"progressToken\":7}}}",
    "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\"}",
    "[{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"},{\"jsonrpc\":\"2.0\",\"id\":8,"
    "\"method\":\"tools/list\"}]",
    "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/list\",\"params\":{\"cursor\":\"x\"}}",
    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":3}}",
    "{\"jsonrpc\":\"2.0\",\"id\":10,\"result\":{}}",
    "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"logging/setLevel\",\"params\":{\"level\":"
    "\"info\"}}",
};
#define N_CREQS (sizeof(creqs) / sizeof(creqs[0]))

/* 2026-07-28: no session, the version in params._meta, the method and
 * name repeated in headers (some of them wrong: -32020) */
#define MMETA                                                                                      \
	"\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                   \
	"\"io.modelcontextprotocol/clientCapabilities\":{}}"
#define MHDR(m) "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: " m "\r\n"
static const char *const mreqs[][2] = {
    {MHDR("server/discover"),
     "{\"jsonrpc\":\"2.0\",\"id\":21,\"method\":\"server/discover\",\"params\":{" MMETA "}}"},
    {MHDR("tools/list"),
     "{\"jsonrpc\":\"2.0\",\"id\":22,\"method\":\"tools/list\",\"params\":{" MMETA "}}"},
    {MHDR("tools/call") "Mcp-Name: echo\r\n",
     "{\"jsonrpc\":\"2.0\",\"id\":23,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
     "\"arguments\":{\"x\":1}," MMETA "}}"},
    {MHDR("tools/call") "Mcp-Name: =?base64?Yl9fZWNobw==?=\r\n",
     "{\"jsonrpc\":\"2.0\",\"id\":24,\"method\":\"tools/call\",\"params\":{\"name\":"
     "\"b__echo\"," MMETA "}}"},
    {MHDR("tools/call") "Mcp-Name: only\r\n",
     "{\"jsonrpc\":\"2.0\",\"id\":25,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
     "" MMETA "}}"},
    {MHDR("tools/list"),
     "{\"jsonrpc\":\"2.0\",\"id\":26,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
     "" MMETA "}}"},
    {"MCP-Protocol-Version: 2026-07-28\r\n",
     "{\"jsonrpc\":\"2.0\",\"id\":27,\"method\":\"tools/list\"}"},
    {MHDR("ping"), "{\"jsonrpc\":\"2.0\",\"id\":28,\"method\":\"ping\",\"params\":{" MMETA "}}"},
    {MHDR("resources/read") "Mcp-Name: file:///x\r\n",
     "{\"jsonrpc\":\"2.0\",\"id\":29,\"method\":\"resources/read\",\"params\":{\"uri\":"
     "\"file:///x\"," MMETA "}}"},
    {MHDR("prompts/list"),
     "{\"jsonrpc\":\"2.0\",\"id\":30,\"method\":\"prompts/list\",\"params\":{" MMETA "}}"},
    {MHDR("prompts/get") "Mcp-Name: b__greet\r\n",
     "{\"jsonrpc\":\"2.0\",\"id\":31,\"method\":\"prompts/get\",\"params\":{\"name\":"
     "\"b__greet\"," MMETA "}}"},
    {MHDR("resources/list"),
     "{\"jsonrpc\":\"2.0\",\"id\":32,\"method\":\"resources/list\",\"params\":{" MMETA "}}"},
    {"", "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
	 "\"requestId\":23," MMETA "}}"},
};
#define N_MREQS (sizeof(mreqs) / sizeof(mreqs[0]))

/* canned backend answers: JSON (with a session id when sid), an event
 * stream (chunked), or raw bytes; "$ID" is the request's JSON-RPC id */
struct uresp {
	char kind; /* 'j', 's', 'r' */
	bool sid;
	const char *body;
};
static const struct uresp uresps[] = {
    {'j', true,
     "{\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{\"protocolVersion\":\"2025-06-18\","
     "\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"b\",\"version\":\"1\"}}}"},
    {'r', false, "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n"},
    {'j', false,
     "{\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{\"tools\":[{\"name\":\"echo\",\"inputSchema\":"
     "{\"type\":\"object\"}},{\"name\":\"only\",\"inputSchema\":{\"type\":\"object\"}}],"
     "\"nextCursor\":\"n1\"}}"},
    {'s', false,
     "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","
     "\"params\":{\"progressToken\":7,\"progress\":1}}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":$ID,"
     "\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}}\n\n"},
    {'r', false, "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n"},
    {'j', false, "{\"jsonrpc\":\"2.0\",\"id\":$ID,\"error\":{\"code\":-32601,\"message\":\"no\"}}"},
    {'s', false,
     "data: {\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"method\":\"sampling/createMessage\"}\n\n"
     "data: {\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{\"isError\":true,\"content\":[]}}\n\n"},
    {'r', false,
     "HTTP/1.1 500 Internal Server Error\r\nconnection: close\r\ncontent-length: 2\r\n\r\nno"},
    /* a backend of the stateless era: server/discover, then a page */
    {'j', false,
     "{\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{\"supportedVersions\":[\"2026-07-28\"],"
     "\"capabilities\":{\"tools\":{}},\"resultType\":\"complete\"}}"},
    {'j', false,
     "{\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{\"tools\":[{\"name\":\"echo\",\"inputSchema\":"
     "{\"type\":\"object\"}}],\"resultType\":\"complete\",\"ttlMs\":0,\"cacheScope\":"
     "\"private\"}}"},
    /* prompts and resources lists */
    {'j', false,
     "{\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{\"prompts\":[{\"name\":\"greet\"}],"
     "\"resources\":[{\"uri\":\"file:///x\"}],\"resourceTemplates\":[{\"uriTemplate\":"
     "\"file:///{p}\"}],\"nextCursor\":\"p2\"}}"},
    {'r', false,
     "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 72\r\n\r\n"
     "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32020,\"message\":\"mismatch\"}}"},
};
#define N_URESPS (sizeof(uresps) / sizeof(uresps[0]))

static const char listener_json[] =
    "{\"name\":\"mcp\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
    "\"port_value\":83}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","
    "\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.filters.network."
    "http_connection_manager.v3.HttpConnectionManager\",\"stat_prefix\":\"mcp\","
    "\"route_config\":{\"name\":\"mcp\",\"virtual_hosts\":[{\"name\":\"vh\",\"domains\":[\"*\"],"
    "\"routes\":[{\"match\":{\"prefix\":\"/\"},\"direct_response\":{\"status\":200}}]}]},"
    "\"http_filters\":[{\"name\":\"arion.filters.http.mcp_gateway\",\"typed_config\":{"
    "\"@type\":\"type.googleapis.com/arion.extensions.filters.http.mcp_gateway.v3."
    "McpGateway\",\"tds\":{\"config_name\":\"tools\"},\"max_request_bytes\":2048,"
    "\"max_response_bytes\":4096,\"session_idle_timeout\":\"20s\"}},"
    "{\"name\":\"envoy.filters.http.router\",\"typed_config\":{\"@type\":\"type.googleapis."
    "com/envoy.extensions.filters.http.router.v3.Router\"}}]}}]}]}";

static const char toolset_json[] =
    "{\"name\":\"tools\",\"prefix_mode\":\"ON_COLLISION\",\"tools_list_cache_ttl\":\"1s\","
    "\"tool_filter\":{\"deny\":[{\"name\":{\"exact\":\"secret\"}}]},"
    "\"access_rules\":[{\"tools\":[{\"name\":{\"exact\":\"greet\"},\"backend\":\"c\"}],"
    "\"principals\":[{\"header\":{\"name\":\"x-team\",\"string_match\":{\"exact\":\"ops\"}}}]}],"
    "\"backends\":[{\"name\":\"b\",\"cluster\":\"web\",\"timeout\":\"2s\"},"
    "{\"name\":\"c\",\"cluster\":\"two\",\"timeout\":\"1s\"}]}";

static void apply_named(const char *type, const char *name, const char *json)
{
	struct arn_config_result res;
	struct arn_config_resource_in in = {name, "v", NULL, 0};
	upb_Arena *a = upb_Arena_New();
	const upb_MessageDef *md = arn_proto_msgdef(strrchr(type, '/') + 1);
	struct arn_sb err = ARN_SB_INIT;
	upb_Message *m = arn_proto_from_json(json, strlen(json), md, a, &err);
	if (!m) {
		fprintf(stderr, "fuzz_hcm_mcp: bad JSON: %s\n%s\n", arn_sb_cstr(&err), json);
		abort();
	}
	arn_sb_free(&err);
	in.bytes = arn_proto_encode(m, md, a, &in.len);
	if (arn_config_apply(store, type, &in, 1, NULL, 0, 0, &res) != 0 || !res.accepted ||
	    res.n_errors) {
		fprintf(stderr, "fuzz_hcm_mcp: %s refused: %s\n", name,
			res.n_errors ? res.errors[0].message : "?");
		abort();
	}
	arn_config_result_free(&res);
	upb_Arena_Free(a);
	arn_http_poll();
	arn_config_poll(store);
}

/* The last mcp-session-id the gateway gave any client ("" before). */
static void last_session(char out[128])
{
	out[0] = 0;
	for (int i = 0; i < N_PEERS; i++) {
		const struct peer *p = &peers[i];
		if (!p->used || p->upstream)
			continue;
		const char *at = NULL, *s = p->log, *end = p->log + p->log_len;
		while ((s = memmem(s, (size_t)(end - s), "mcp-session-id: ", 16)) != NULL)
			at = s += 16;
		if (at) {
			size_t n = 0;
			while (at + n < end && n < 100 && at[n] != '\r')
				n++;
			memcpy(out, at, n);
			out[n] = 0;
		}
	}
}

/* The JSON-RPC id of the last request upstream peer @p p received ("0"). */
static void last_id(const struct peer *p, char out[64])
{
	snprintf(out, 64, "0");
	if (!p)
		return;
	const char *at = NULL, *s = p->log, *end = p->log + p->log_len;
	while ((s = memmem(s, (size_t)(end - s), "\"id\":", 5)) != NULL)
		at = s += 5;
	if (at) {
		size_t n = 0;
		while (at + n < end && n < 60 && at[n] != ',' && at[n] != '}')
			n++;
		memcpy(out, at, n);
		out[n] = 0;
	}
}

/* @p in with each "$ID" replaced by @p id, into @p out (of @p cap). */
static size_t subst_id(char *out, size_t cap, const char *in, size_t n, const char *id)
{
	size_t k = 0, il = strlen(id);
	for (size_t i = 0; i < n && k < cap;) {
		if (i + 3 <= n && !memcmp(in + i, "$ID", 3) && k + il <= cap) {
			memcpy(out + k, id, il);
			k += il;
			i += 3;
		} else {
			out[k++] = in[i++];
		}
	}
	return k;
}

static char msg[16384];

static void client_post(unsigned c, bool with_sid, const char *extra, const char *body, size_t n)
{
	char sid[128] = "";
	if (with_sid)
		last_session(sid);
	int h = snprintf(msg, sizeof(msg),
			 "POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
			 "Accept: application/json, text/event-stream\r\n%s%s%s%s"
			 "Content-Length: %zu\r\n\r\n",
			 sid[0] ? "Mcp-Session-Id: " : "", sid, sid[0] ? "\r\n" : "", extra, n);
	if (n > sizeof(msg) - (size_t)h)
		n = sizeof(msg) - (size_t)h;
	memcpy(msg + h, body, n);
	hh_send(hh_client(c), msg, (uint32_t)(h + n), 255);
}

static void upstream_answer(unsigned u, bool sse, bool with_sid, const uint8_t *body, size_t n)
{
	static char b[2048];
	char id[64];
	last_id(hh_upstream(u), id);
	size_t bl = subst_id(b, sizeof(b), (const char *)body, n, id);
	int h;
	if (!sse) {
		h = snprintf(msg, sizeof(msg),
			     "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n%s"
			     "content-length: %zu\r\n\r\n",
			     with_sid ? "mcp-session-id: B2\r\n" : "", bl);
		memcpy(msg + h, b, bl);
		h += (int)bl;
	} else {
		h = snprintf(msg, sizeof(msg),
			     "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n%s"
			     "transfer-encoding: chunked\r\n\r\n",
			     with_sid ? "mcp-session-id: B2\r\n" : "");
		for (size_t o = 0; o < bl; o += 64) {
			size_t k = bl - o < 64 ? bl - o : 64;
			h += snprintf(msg + h, sizeof(msg) - (size_t)h, "%zx\r\n", k);
			memcpy(msg + h, b + o, k);
			h += (int)k;
			memcpy(msg + h, "\r\n", 2);
			h += 2;
		}
		memcpy(msg + h, "0\r\n\r\n", 5);
		h += 5;
	}
	hh_send(hh_upstream(u), msg, (uint32_t)h, 255);
}

static void upstream_canned(unsigned u, unsigned k)
{
	const struct uresp *x = &uresps[k % N_URESPS];
	if (x->kind == 'r')
		hh_send(hh_upstream(u), x->body, (uint32_t)strlen(x->body), 255);
	else
		upstream_answer(u, x->kind == 's', x->sid, (const uint8_t *)x->body,
				strlen(x->body));
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	hh_fuzz_init(argc, argv);
	/* the listener first: it subscribes to its ToolSet (X14), which is
	 * forgotten when nothing references it (X4) */
	apply_named(ARN_TYPE_URL_LISTENER, "mcp", listener_json);
	apply_named(ARN_TYPE_URL_TOOLSET, "tools", toolset_json);
	n_pins = 0; /* the ToolSet pins clusters: count from here */
	hh_pins_record();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	struct hh_rd r = {data, size, 0};
	hh_begin(hh_rd8(&r));
	static uint8_t tmp[256];
	while (hh_rd_more(&r)) {
		uint8_t b = hh_rd8(&r);
		unsigned a = b >> 4, c = a & 3, u = a & 7;
		uint8_t n;
		uint32_t k = 0;
		switch (b & 15) {
		case 0:
			hh_open(c, MCP_PORT);
			break;
		case 1:
		case 3:
		case 7:
		case 8:
		case 10:
			n = hh_rd8(&r);
			while (k < n && hh_rd_more(&r))
				tmp[k++] = hh_rd8(&r);
			if ((b & 15) == 1)
				client_post(c, a & 4,
					    a & 8 ? MHDR("tools/call") "Mcp-Name: echo\r\n" : "",
					    (const char *)tmp, k);
			else if ((b & 15) == 3)
				hh_send(hh_client(c), tmp, k, n ? n : 1);
			else if ((b & 15) == 10)
				hh_send(hh_upstream(u), tmp, k, n ? n : 1);
			else
				upstream_answer(u, (b & 15) == 8, a & 8, tmp, k);
			break;
		case 2: {
			uint8_t kk = hh_rd8(&r);
			const char *s = a & 8 ? mreqs[kk % N_MREQS][1] : creqs[kk % N_CREQS];
			client_post(c, a & 4, a & 8 ? mreqs[kk % N_MREQS][0] : "", s, strlen(s));
			break;
		}
		case 4:
			hh_fin(hh_client(c));
			break;
		case 5:
			hh_reset(hh_client(c));
			break;
		case 6:
			hh_window(hh_client(c), hh_rd8(&r));
			break;
		case 9:
			upstream_canned(u, hh_rd8(&r));
			break;
		case 11:
			hh_fin(hh_upstream(u));
			break;
		case 12:
			hh_reset(hh_upstream(u));
			break;
		case 13:
			hh_window(hh_upstream(u), hh_rd8(&r));
			break;
		case 14: {
			uint8_t t = hh_rd8(&r);
			hh_advance(t < 128 ? t : (t - 127u) * 256u);
			break;
		}
		default:
			if (a & 4)
				fake_alloc_fail = (a >> 3) + 1;
			else
				hh_syn(a);
			break;
		}
		hh_settle();
	}
	hh_end();
	return 0;
}
