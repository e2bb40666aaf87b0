/*
 * The gateway as a client of its backends: request headers, the backend
 * session's initialize, the backends' answers classified, their own
 * messages made ready for the client.
 */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "arn_config_model.h"
#include "arn_mcp.h"

static void put(struct arn_mcp_header *out, size_t cap, size_t *n, const char *name,
		size_t name_len, const char *value, size_t value_len)
{
	if (*n < cap)
		out[*n] = (struct arn_mcp_header){name, value, name_len, value_len};
	(*n)++;
}

#define LIT(s) s, sizeof(s) - 1

size_t arn_mcp_upstream_headers(const struct arn_cfg_mcp_backend *b, const char *sid,
				enum arn_mcp_version v, struct arn_mcp_header *out, size_t cap)
{
	size_t n = 0;
	put(out, cap, &n, LIT("content-type"), LIT("application/json"));
	put(out, cap, &n, LIT("accept"), LIT("application/json, text/event-stream"));
	if (sid) {
		put(out, cap, &n, LIT("mcp-session-id"), sid, strlen(sid));
		/* 2025-06-18 and later want it after initialize; 2025-03-26
		 * servers ignore it; 2024-11-05 has no such header. */
		if (v >= ARN_MCP_V_2025_03_26)
			put(out, cap, &n, LIT("mcp-protocol-version"), arn_mcp_version_name(v), 10);
	}
	for (size_t i = 0; i < b->n_headers; i++)
		put(out, cap, &n, b->headers[i].key, b->headers[i].key_len, b->headers[i].value,
		    b->headers[i].value_len);
	return n;
}

struct json_object *arn_mcp_backend_initialize(enum arn_mcp_version v, const char *version,
					       bool relay)
{
	struct json_object *p = json_object_new_object();
	struct json_object *caps = json_object_new_object();
	struct json_object *info = json_object_new_object();
	struct json_object *id = json_object_new_string("arn.init");
	if (!p || !caps || !info || !id) {
		json_object_put(p);
		json_object_put(caps);
		json_object_put(info);
		json_object_put(id);
		return NULL;
	}
	json_object_object_add(p, "protocolVersion",
			       json_object_new_string(arn_mcp_version_name(v)));
	if (relay) {
		json_object_object_add(caps, "elicitation", json_object_new_object());
		json_object_object_add(caps, "sampling", json_object_new_object());
	}
	json_object_object_add(p, "capabilities", caps);
	json_object_object_add(info, "name", json_object_new_string("arion-mcp-gateway"));
	json_object_object_add(info, "version", json_object_new_string(version ? version : ""));
	json_object_object_add(p, "clientInfo", info);
	struct json_object *r = arn_mcp_new_request(id, "initialize", p);
	json_object_put(id);
	json_object_put(p);
	return r;
}

static bool ctype_is(const char *s, size_t n, const char *type)
{
	size_t tl = strlen(type);
	while (n && (*s == ' ' || *s == '\t'))
		s++, n--;
	return n >= tl && strncasecmp(s, type, tl) == 0 &&
	       (n == tl || s[tl] == ';' || s[tl] == ' ' || s[tl] == '\t');
}

enum arn_mcp_upstream arn_mcp_upstream_classify(int status, const char *ctype, size_t ctype_len,
						bool sent_session)
{
	if (status == 202)
		return ARN_MCP_U_ACCEPTED;
	if (status == 404 && sent_session)
		return ARN_MCP_U_SESSION_GONE;
	if (status != 200 || !ctype)
		return ARN_MCP_U_FAILED;
	if (ctype_is(ctype, ctype_len, "application/json"))
		return ARN_MCP_U_JSON;
	if (ctype_is(ctype, ctype_len, "text/event-stream"))
		return ARN_MCP_U_SSE;
	return ARN_MCP_U_FAILED;
}

struct json_object *arn_mcp_backend_error(struct json_object *id, const char *backend,
					  const char *why)
{
	char detail[512];
	snprintf(detail, sizeof(detail), "backend '%s': %s", backend, why ? why : "failed");
	return arn_mcp_new_error(id, ARN_MCP_E_BACKEND, detail);
}

int arn_mcp_from_backend(struct arn_mcp_msg *m, uint32_t backend)
{
	if (m->err)
		return -EINVAL;
	if (m->kind != ARN_MCP_REQUEST)
		return 0;
	struct json_object *w = arn_mcp_id_wrap(backend, m->id);
	if (!w)
		return -ENOMEM;
	json_object_object_add(m->obj, "id", w); /* frees the old id */
	m->id = w;
	return 0;
}
