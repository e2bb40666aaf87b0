/*
 * The stateless era (protocol version 2026-07-28): requests without
 * sessions, carrying their version and capabilities in params._meta, and
 * the MCP-Protocol-Version, Mcp-Method and Mcp-Name headers that let an
 * intermediary route without reading the body, checked against it as the
 * MCP TypeScript SDK's server checks them (@modelcontextprotocol/server
 * 2.x, validateStandardRequestHeaders): absent or different is HTTP 400
 * with -32020 (HeaderMismatch).
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arn_mcp.h"

#define META_VERSION "io.modelcontextprotocol/protocolVersion"
#define META_CAPS "io.modelcontextprotocol/clientCapabilities"
#define META_INFO "io.modelcontextprotocol/clientInfo"
#define META_SERVER "io.modelcontextprotocol/serverInfo"

bool arn_mcp_is_modern(const char *v, size_t n)
{
	return v && n == sizeof(ARN_MCP_MODERN) - 1 && memcmp(v, ARN_MCP_MODERN, n) == 0;
}

bool arn_mcp_meta_claim(struct json_object *params, const char **v, size_t *n)
{
	struct json_object *meta, *pv;
	*v = NULL;
	*n = 0;
	if (!params || !json_object_is_type(params, json_type_object) ||
	    !json_object_object_get_ex(params, "_meta", &meta) ||
	    !json_object_is_type(meta, json_type_object) ||
	    !json_object_object_get_ex(meta, META_VERSION, &pv) ||
	    !json_object_is_type(pv, json_type_string))
		return false;
	*v = json_object_get_string(pv);
	*n = (size_t)json_object_get_string_len(pv);
	return true;
}

const char *arn_mcp_name_field(enum arn_mcp_method m)
{
	switch (m) {
	case ARN_MCP_M_TOOLS_CALL:
	case ARN_MCP_M_PROMPTS_GET:
		return "name";
	case ARN_MCP_M_RESOURCES_READ:
		return "uri";
	default:
		return NULL;
	}
}

static int b64v(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

#define SENT_PRE "=?base64?"
#define SENT_SUF "?="

ssize_t arn_mcp_name_decode(const char *h, size_t n, char *out, size_t cap)
{
	size_t pl = sizeof(SENT_PRE) - 1, sl = sizeof(SENT_SUF) - 1;
	if (n < pl + sl || memcmp(h, SENT_PRE, pl) != 0 || memcmp(h + n - sl, SENT_SUF, sl) != 0) {
		if (n > cap)
			return -E2BIG;
		memcpy(out, h, n);
		return (ssize_t)n;
	}
	const char *b = h + pl;
	size_t bl = n - pl - sl;
	if (bl % 4)
		return -EINVAL; /* canonical Base64 only, as the SDK's decoder */
	size_t o = 0;
	for (size_t i = 0; i < bl; i += 4) {
		int v[4];
		unsigned pad = 0;
		for (int k = 0; k < 4; k++) {
			if (b[i + k] == '=' && i + 4 == bl && k >= 2) {
				v[k] = 0;
				pad++;
				continue;
			}
			if (pad)
				return -EINVAL; /* data after '=' */
			v[k] = b64v((unsigned char)b[i + k]);
			if (v[k] < 0)
				return -EINVAL;
		}
		uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 |
			     (uint32_t)v[3];
		/* canonical: the bits a pad leaves unused are zero */
		if ((pad == 1 && (v[2] & 3)) || (pad == 2 && (v[1] & 15)))
			return -EINVAL;
		unsigned char bytes[3] = {(unsigned char)(w >> 16), (unsigned char)(w >> 8),
					  (unsigned char)w};
		for (unsigned k = 0; k < 3 - pad; k++) {
			if (o >= cap)
				return -E2BIG;
			out[o++] = (char)bytes[k];
		}
	}
	return (ssize_t)o;
}

static const char b64c[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t arn_mcp_name_encode(const char *s, size_t n, char *out, size_t cap)
{
	/* plain when it survives a header as it is: visible ASCII or inner
	 * spaces, no leading or trailing whitespace, not itself a sentinel */
	bool plain = n > 0 && s[0] != ' ' && s[n - 1] != ' ' &&
		     !(n >= sizeof(SENT_PRE) - 1 && memcmp(s, SENT_PRE, sizeof(SENT_PRE) - 1) == 0);
	for (size_t i = 0; i < n && plain; i++)
		plain = (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f;
	if (plain) {
		if (n <= cap)
			memcpy(out, s, n);
		return n;
	}
	size_t need = sizeof(SENT_PRE) - 1 + (n + 2) / 3 * 4 + sizeof(SENT_SUF) - 1;
	if (need > cap)
		return need;
	size_t o = 0;
	memcpy(out, SENT_PRE, sizeof(SENT_PRE) - 1);
	o += sizeof(SENT_PRE) - 1;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t w = (uint32_t)(unsigned char)s[i] << 16;
		if (i + 1 < n)
			w |= (uint32_t)(unsigned char)s[i + 1] << 8;
		if (i + 2 < n)
			w |= (unsigned char)s[i + 2];
		out[o++] = b64c[w >> 18 & 63];
		out[o++] = b64c[w >> 12 & 63];
		out[o++] = i + 1 < n ? b64c[w >> 6 & 63] : '=';
		out[o++] = i + 2 < n ? b64c[w & 63] : '=';
	}
	memcpy(out + o, SENT_SUF, sizeof(SENT_SUF) - 1);
	return need;
}

static void ows(const char **s, size_t *n)
{
	while (*n && (**s == ' ' || **s == '\t'))
		(*s)++, (*n)--;
	while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
		(*n)--;
}

enum arn_mcp_err arn_mcp_modern_check(const struct arn_mcp_msg *m,
				      const struct arn_mcp_modern_hdrs *h, char *why, size_t cap)
{
	const char *claim;
	size_t cn;
	arn_mcp_meta_claim(m->params, &claim, &cn);
	const char *pv = h->version, *mm = h->method, *nm = h->name;
	size_t pvn = h->version_len, mmn = h->method_len, nmn = h->name_len;
	if (pv)
		ows(&pv, &pvn);
	if (mm)
		ows(&mm, &mmn);
	if (nm)
		ows(&nm, &nmn);
	if (claim && pv && (pvn != cn || memcmp(pv, claim, cn) != 0)) {
		snprintf(why, cap,
			 "the body's _meta names protocol version %.*s but MCP-Protocol-Version "
			 "names %.*s",
			 (int)(cn > 32 ? 32 : cn), claim, (int)(pvn > 32 ? 32 : pvn), pv);
		return ARN_MCP_E_HEADER_MISMATCH;
	}
	if (claim && !arn_mcp_is_modern(claim, cn)) {
		snprintf(why, cap, "requested %.*s", (int)(cn > 32 ? 32 : cn), claim);
		return ARN_MCP_E_MODERN_VERSION;
	}
	if (mm && m->method_name && (mmn != m->method_len || memcmp(mm, m->method_name, mmn))) {
		snprintf(why, cap, "the body names method %.*s but Mcp-Method names %.*s",
			 (int)(m->method_len > 64 ? 64 : m->method_len), m->method_name,
			 (int)(mmn > 64 ? 64 : mmn), mm);
		return ARN_MCP_E_HEADER_MISMATCH;
	}
	if (m->kind != ARN_MCP_REQUEST)
		return ARN_MCP_E_NONE;
	if (!pv) {
		snprintf(why, cap, "the required MCP-Protocol-Version header is absent");
		return ARN_MCP_E_HEADER_MISMATCH;
	}
	if (!mm) {
		snprintf(why, cap, "the required Mcp-Method header is absent");
		return ARN_MCP_E_HEADER_MISMATCH;
	}
	const char *field = arn_mcp_name_field((enum arn_mcp_method)m->method);
	struct json_object *bv = NULL;
	if (!field || !m->params || !json_object_object_get_ex(m->params, field, &bv) ||
	    !json_object_is_type(bv, json_type_string))
		return ARN_MCP_E_NONE; /* no name to mirror: later checks judge the body */
	if (!nm) {
		snprintf(why, cap,
			 "the body carries params.%s but the required Mcp-Name header is absent",
			 field);
		return ARN_MCP_E_HEADER_MISMATCH;
	}
	char dec[ARN_MCP_NAME_HDR_MAX];
	ssize_t dn = arn_mcp_name_decode(nm, nmn, dec, sizeof(dec));
	if (dn < 0) {
		snprintf(why, cap, "the Mcp-Name header carries an invalid Base64 sentinel value");
		return ARN_MCP_E_HEADER_MISMATCH;
	}
	if ((size_t)dn != (size_t)json_object_get_string_len(bv) ||
	    memcmp(dec, json_object_get_string(bv), (size_t)dn) != 0) {
		snprintf(why, cap, "the body's params.%s differs from the Mcp-Name header", field);
		return ARN_MCP_E_HEADER_MISMATCH;
	}
	return ARN_MCP_E_NONE;
}

static struct json_object *server_meta(const char *server_version)
{
	struct json_object *meta = json_object_new_object();
	struct json_object *info = json_object_new_object();
	if (!meta || !info) {
		json_object_put(meta);
		json_object_put(info);
		return NULL;
	}
	json_object_object_add(info, "name", json_object_new_string("arion-mcp-gateway"));
	json_object_object_add(info, "version",
			       json_object_new_string(server_version ? server_version : ""));
	json_object_object_add(meta, META_SERVER, info);
	return meta;
}

struct json_object *arn_mcp_discover_result(const struct arn_mcp_backend_init *b, size_t n,
					    const char *server_version)
{
	/* the capabilities and instructions initialize gives, re-dressed */
	struct json_object *init =
	    arn_mcp_initialize_result(ARN_MCP_V_LATEST, b, n, server_version);
	struct json_object *r = json_object_new_object();
	struct json_object *vs = json_object_new_array();
	struct json_object *meta = server_meta(server_version);
	if (!init || !r || !vs || !meta) {
		json_object_put(init);
		json_object_put(r);
		json_object_put(vs);
		json_object_put(meta);
		return NULL;
	}
	json_object_array_add(vs, json_object_new_string(ARN_MCP_MODERN));
	json_object_object_add(r, "supportedVersions", vs);
	struct json_object *x;
	if (json_object_object_get_ex(init, "capabilities", &x))
		json_object_object_add(r, "capabilities", json_object_get(x));
	if (json_object_object_get_ex(init, "instructions", &x))
		json_object_object_add(r, "instructions", json_object_get(x));
	json_object_object_add(r, "_meta", meta);
	json_object_put(init);
	arn_mcp_modern_stamp(r, ARN_MCP_M_SERVER_DISCOVER, server_version);
	return r;
}

bool arn_mcp_cacheable(enum arn_mcp_method m)
{
	switch (m) {
	case ARN_MCP_M_TOOLS_LIST:
	case ARN_MCP_M_PROMPTS_LIST:
	case ARN_MCP_M_RESOURCES_LIST:
	case ARN_MCP_M_RESOURCES_TEMPLATES_LIST:
	case ARN_MCP_M_RESOURCES_READ:
	case ARN_MCP_M_SERVER_DISCOVER:
		return true;
	default:
		return false;
	}
}

int arn_mcp_modern_stamp(struct json_object *result, enum arn_mcp_method m,
			 const char *server_version)
{
	if (!result || !json_object_is_type(result, json_type_object))
		return -EINVAL;
	if (!json_object_object_get_ex(result, "resultType", NULL))
		json_object_object_add(result, "resultType", json_object_new_string("complete"));
	if (arn_mcp_cacheable(m)) {
		/* what the gateway answers depends on who asks (access rules)
		 * and may change with any backend: private, not to be kept */
		if (!json_object_object_get_ex(result, "ttlMs", NULL))
			json_object_object_add(result, "ttlMs", json_object_new_int(0));
		if (!json_object_object_get_ex(result, "cacheScope", NULL))
			json_object_object_add(result, "cacheScope",
					       json_object_new_string("private"));
	}
	struct json_object *meta;
	if (!json_object_object_get_ex(result, "_meta", &meta)) {
		meta = server_meta(server_version);
		if (!meta)
			return -ENOMEM;
		json_object_object_add(result, "_meta", meta);
	}
	return 0;
}

int arn_mcp_envelope_set(struct json_object *msg, bool modern)
{
	struct json_object *params = NULL, *meta = NULL;
	json_object_object_get_ex(msg, "params", &params);
	if (params && !json_object_is_type(params, json_type_object))
		return -EINVAL;
	if (!modern) {
		/* a session-era backend must not read a stateless claim: the
		 * SDK's dual-era servers would take the request for 2026's */
		if (params && json_object_object_get_ex(params, "_meta", &meta) &&
		    json_object_is_type(meta, json_type_object)) {
			json_object_object_del(meta, META_VERSION);
			json_object_object_del(meta, META_CAPS);
			json_object_object_del(meta, META_INFO);
			if (json_object_object_length(meta) == 0)
				json_object_object_del(params, "_meta");
		}
		return 0;
	}
	if (!params) {
		params = json_object_new_object();
		if (!params)
			return -ENOMEM;
		json_object_object_add(msg, "params", params);
	}
	if (!json_object_object_get_ex(params, "_meta", &meta) ||
	    !json_object_is_type(meta, json_type_object)) {
		meta = json_object_new_object();
		if (!meta)
			return -ENOMEM;
		json_object_object_add(params, "_meta", meta);
	}
	json_object_object_add(meta, META_VERSION, json_object_new_string(ARN_MCP_MODERN));
	if (!json_object_object_get_ex(meta, META_CAPS, NULL))
		json_object_object_add(meta, META_CAPS, json_object_new_object());
	if (!json_object_object_get_ex(meta, META_INFO, NULL)) {
		struct json_object *info = json_object_new_object();
		if (!info)
			return -ENOMEM;
		json_object_object_add(info, "name", json_object_new_string("arion-mcp-gateway"));
		json_object_object_add(info, "version", json_object_new_string(""));
		json_object_object_add(meta, META_INFO, info);
	}
	return 0;
}

struct json_object *arn_mcp_backend_discover(void)
{
	struct json_object *id = json_object_new_string("arn.discover");
	struct json_object *r = id ? arn_mcp_new_request(id, "server/discover", NULL) : NULL;
	json_object_put(id);
	if (r && arn_mcp_envelope_set(r, true) != 0) {
		json_object_put(r);
		return NULL;
	}
	return r;
}

bool arn_mcp_discover_modern(const struct arn_mcp_msg *m)
{
	struct json_object *vs;
	if (m->err || m->kind != ARN_MCP_RESULT || !m->result ||
	    !json_object_object_get_ex(m->result, "supportedVersions", &vs) ||
	    !json_object_is_type(vs, json_type_array))
		return false;
	for (size_t i = 0; i < json_object_array_length(vs); i++) {
		struct json_object *v = json_object_array_get_idx(vs, i);
		if (json_object_is_type(v, json_type_string) &&
		    arn_mcp_is_modern(json_object_get_string(v),
				      (size_t)json_object_get_string_len(v)))
			return true;
	}
	return false;
}

enum arn_mcp_step arn_mcp_modern_dispatch(const struct arn_mcp_msg *m, struct json_object **answer,
					  const char *server_version,
					  const struct arn_mcp_backend_init *b, size_t n)
{
	*answer = NULL;
	if (m->err) {
		*answer = arn_mcp_new_error(m->id, m->err, NULL);
		return ARN_MCP_S_ANSWER;
	}
	if (m->kind != ARN_MCP_REQUEST)
		return ARN_MCP_S_CONSUMED; /* notifications and answers: nothing to say */
	struct json_object *res = NULL;
	switch (m->method) {
	case ARN_MCP_M_SERVER_DISCOVER:
		res = arn_mcp_discover_result(b, n, server_version);
		break;
	case ARN_MCP_M_PING:
	case ARN_MCP_M_LOGGING_SET_LEVEL:
		res = json_object_new_object();
		if (res && arn_mcp_modern_stamp(res, (enum arn_mcp_method)m->method,
						server_version) != 0) {
			json_object_put(res);
			res = NULL;
		}
		break;
	case ARN_MCP_M_TOOLS_LIST:
		return ARN_MCP_S_TOOLS_LIST;
	case ARN_MCP_M_TOOLS_CALL:
		return ARN_MCP_S_TOOLS_CALL;
	case ARN_MCP_M_PROMPTS_LIST:
	case ARN_MCP_M_PROMPTS_GET:
	case ARN_MCP_M_RESOURCES_LIST:
	case ARN_MCP_M_RESOURCES_READ:
	case ARN_MCP_M_RESOURCES_TEMPLATES_LIST:
		return ARN_MCP_S_PRIM;
	default:
		*answer = arn_mcp_new_error(m->id,
					    arn_mcp_method_kind((enum arn_mcp_method)m->method) ==
						    ARN_MCP_MK_REFUSED
						? ARN_MCP_E_NOT_AGGREGATED
						: ARN_MCP_E_METHOD_NOT_FOUND,
					    m->method_name);
		return ARN_MCP_S_ANSWER;
	}
	if (res) {
		*answer = arn_mcp_new_result(m->id, res);
		json_object_put(res);
	}
	return ARN_MCP_S_ANSWER;
}
