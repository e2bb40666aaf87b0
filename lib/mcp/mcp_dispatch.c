/*
 * What the filter does with one message from a client, and the ids of
 * backends' own requests on a client's shared stream.
 */
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arn_mcp.h"

static enum arn_mcp_step answer_err(const struct arn_mcp_msg *m, enum arn_mcp_err e,
				    const char *detail, struct json_object **answer)
{
	*answer = arn_mcp_new_error(m->id, e, detail);
	return ARN_MCP_S_ANSWER;
}

static enum arn_mcp_step answer_empty(const struct arn_mcp_msg *m, struct json_object **answer)
{
	struct json_object *r = json_object_new_object();
	*answer = r ? arn_mcp_new_result(m->id, r) : NULL;
	json_object_put(r);
	return ARN_MCP_S_ANSWER;
}

enum arn_mcp_step arn_mcp_dispatch(const struct arn_mcp_msg *m, struct arn_mcp_session *s,
				   bool in_batch, struct json_object **answer,
				   enum arn_mcp_version *version)
{
	*answer = NULL;
	if (m->err)
		return answer_err(m, m->err, NULL, answer);
	bool ready = s && s->version != ARN_MCP_V_NONE;
	switch (m->kind) {
	case ARN_MCP_REQUEST:
		if (m->method == ARN_MCP_M_INITIALIZE) {
			if (in_batch)
				return answer_err(m, ARN_MCP_E_INIT_IN_BATCH, NULL, answer);
			if (ready)
				return answer_err(m, ARN_MCP_E_ALREADY_INITIALIZED, NULL, answer);
			enum arn_mcp_err e = arn_mcp_initialize_params(m->params, version);
			if (e)
				return answer_err(
				    m, e, "initialize needs params.protocolVersion, a string",
				    answer);
			return ARN_MCP_S_INITIALIZE;
		}
		if (m->method == ARN_MCP_M_PING)
			return answer_empty(m,
					    answer); /* before initialize too, as the spec allows */
		if (!ready)
			return answer_err(m, ARN_MCP_E_NOT_INITIALIZED, NULL, answer);
		switch (arn_mcp_method_kind((enum arn_mcp_method)m->method)) {
		case ARN_MCP_MK_TOOLS:
			return m->method == ARN_MCP_M_TOOLS_LIST ? ARN_MCP_S_TOOLS_LIST
								 : ARN_MCP_S_TOOLS_CALL;
		case ARN_MCP_MK_LOCAL: /* logging/setLevel: accepted; the gateway logs nothing to
					  clients */
			return answer_empty(m, answer);
		case ARN_MCP_MK_PRIM:
			return ARN_MCP_S_PRIM;
		case ARN_MCP_MK_REFUSED:
			return answer_err(m, ARN_MCP_E_NOT_AGGREGATED, m->method_name, answer);
		default:
			return answer_err(m, ARN_MCP_E_METHOD_NOT_FOUND, m->method_name, answer);
		}
	case ARN_MCP_NOTIFICATION:
		if (m->method == ARN_MCP_M_N_INITIALIZED && ready)
			s->initialized = true;
		if (m->method == ARN_MCP_M_N_CANCELLED && ready)
			return ARN_MCP_S_CANCEL;
		return ARN_MCP_S_CONSUMED; /* notifications are never answered */
	default:
		return ready ? ARN_MCP_S_REPLY : ARN_MCP_S_CONSUMED;
	}
}

#define WRAP_PREFIX "arn."

struct json_object *arn_mcp_id_wrap(uint32_t backend, struct json_object *id)
{
	const char *t = arn_mcp_text(id, NULL);
	size_t need = strlen(WRAP_PREFIX) + 11 + strlen(t) + 1;
	char *s = malloc(need);
	if (!s)
		return NULL;
	snprintf(s, need, WRAP_PREFIX "%" PRIu32 ".%s", backend, t);
	struct json_object *o = json_object_new_string(s);
	free(s);
	return o;
}

int arn_mcp_id_unwrap(struct json_object *wrapped, uint32_t *backend, struct json_object **id)
{
	*id = NULL;
	if (!wrapped || !json_object_is_type(wrapped, json_type_string))
		return -EINVAL;
	const char *s = json_object_get_string(wrapped);
	size_t pl = strlen(WRAP_PREFIX);
	if (strncmp(s, WRAP_PREFIX, pl) != 0)
		return -EINVAL;
	s += pl;
	uint64_t b = 0;
	const char *p = s;
	while (*p >= '0' && *p <= '9' && p - s < 10)
		b = b * 10 + (uint64_t)(*p++ - '0');
	if (p == s || *p != '.' || b > UINT32_MAX)
		return -EINVAL;
	p++;
	/* The original id is JSON: an integer or a string, and short (the
	 * backend's ids, ARN_MCP_BACKEND_SID_MAX-sized at most in practice). */
	size_t n = strlen(p);
	if (n == 0 || n > 1024 || !(p[0] == '"' || p[0] == '-' || (p[0] >= '0' && p[0] <= '9')))
		return -EINVAL;
	struct json_tokener *tok = json_tokener_new_ex(1);
	if (!tok)
		return -ENOMEM;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS);
	struct json_object *v =
	    json_tokener_parse_ex(tok, p, (int)n + 1); /* the NUL ends a number */
	size_t end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (!v || end < n ||
	    !(json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_string))) {
		json_object_put(v);
		return -EINVAL;
	}
	*backend = (uint32_t)b;
	*id = v;
	return 0;
}

size_t arn_mcp_sse_endpoint(char *out, size_t cap, const char *path, size_t path_len,
			    const struct arn_mcp_session *s)
{
	char data[512];
	int n = snprintf(data, sizeof(data), "%.*s?sessionId=%s", (int)path_len, path, s->id);
	if (n < 0 || (size_t)n >= sizeof(data))
		return SIZE_MAX;
	return arn_mcp_sse_event(out, cap, "endpoint", NULL, data, (size_t)n);
}
