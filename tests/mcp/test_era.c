/*
 * The stateless era (2026-07-28, lib/mcp/mcp_era.c): the headers checked
 * against the body as the MCP TypeScript SDK 2.x server checks them,
 * Mcp-Name's Base64 sentinel, the envelope dressed for each backend era,
 * server/discover both ways, results stamped for stateless clients.
 */
#include <errno.h>
#include <json-c/json.h>
#include <string.h>

#include "mcp_test.h"

#define META                                                                                       \
	"\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                   \
	"\"io.modelcontextprotocol/clientCapabilities\":{}}"

static struct arn_mcp_body body;

static const struct arn_mcp_msg *msg(const char *s)
{
	assert_int_equal(mt_parse(s, false, NULL, &body), ARN_MCP_E_NONE);
	assert_int_equal(body.n, 1);
	return &body.msgs[0];
}

static enum arn_mcp_err check(const char *s, const char *pv, const char *mm, const char *nm)
{
	const struct arn_mcp_msg *m = msg(s);
	struct arn_mcp_modern_hdrs h = {
	    .version = pv,
	    .version_len = pv ? strlen(pv) : 0,
	    .method = mm,
	    .method_len = mm ? strlen(mm) : 0,
	    .name = nm,
	    .name_len = nm ? strlen(nm) : 0,
	};
	char why[200] = "";
	enum arn_mcp_err e = arn_mcp_modern_check(m, &h, why, sizeof(why));
	if (e)
		assert_true(why[0] != 0); /* it says what differs */
	arn_mcp_body_release(&body);
	return e;
}

#define CALL(name)                                                                                 \
	"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"" name     \
	"\"," META "}}"

static void test_claim(void **st)
{
	(void)st;
	const struct arn_mcp_msg *m = msg(CALL("x"));
	const char *v;
	size_t n;
	assert_true(arn_mcp_meta_claim(m->params, &v, &n));
	assert_true(arn_mcp_is_modern(v, n));
	arn_mcp_body_release(&body);
	m = msg(
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":{}}}");
	assert_false(arn_mcp_meta_claim(m->params, &v, &n));
	arn_mcp_body_release(&body);
	m = msg("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
	assert_false(arn_mcp_meta_claim(m->params, &v, &n));
	arn_mcp_body_release(&body);
	assert_false(arn_mcp_is_modern("2025-11-25", 10));
	assert_false(arn_mcp_is_modern("2026-07-2", 9));
}

/* Each header the SDK's server requires: present and equal to the body,
 * else HTTP 400 with -32020 (HeaderMismatch). */
static void test_headers_checked(void **st)
{
	(void)st;
	assert_int_equal(arn_mcp_err_code(ARN_MCP_E_HEADER_MISMATCH), -32020);
	assert_int_equal(arn_mcp_err_status(ARN_MCP_E_HEADER_MISMATCH), 400);
	assert_int_equal(check(CALL("gh__get"), "2026-07-28", "tools/call", "gh__get"),
			 ARN_MCP_E_NONE);
	/* optional whitespace around a field value is not part of it */
	assert_int_equal(check(CALL("gh__get"), " 2026-07-28", "tools/call\t", " gh__get "),
			 ARN_MCP_E_NONE);
	assert_int_equal(check(CALL("gh__get"), "2026-07-28", "tools/call", "gh__put"),
			 ARN_MCP_E_HEADER_MISMATCH);
	assert_int_equal(check(CALL("gh__get"), "2026-07-28", "tools/call", NULL),
			 ARN_MCP_E_HEADER_MISMATCH);
	assert_int_equal(check(CALL("gh__get"), "2026-07-28", NULL, "gh__get"),
			 ARN_MCP_E_HEADER_MISMATCH);
	assert_int_equal(check(CALL("gh__get"), "2026-07-28", "tools/list", "gh__get"),
			 ARN_MCP_E_HEADER_MISMATCH);
	assert_int_equal(check(CALL("gh__get"), NULL, "tools/call", "gh__get"),
			 ARN_MCP_E_HEADER_MISMATCH);
	assert_int_equal(check(CALL("gh__get"), "2025-11-25", "tools/call", "gh__get"),
			 ARN_MCP_E_HEADER_MISMATCH);
	/* a case differs: names are exact */
	assert_int_equal(check(CALL("gh__get"), "2026-07-28", "tools/call", "GH__get"),
			 ARN_MCP_E_HEADER_MISMATCH);
	/* the Base64 sentinel form names the same tool */
	assert_int_equal(
	    check(CALL("gh__get"), "2026-07-28", "tools/call", "=?base64?Z2hfX2dldA==?="),
	    ARN_MCP_E_NONE);
	assert_int_equal(
	    check(CALL("gh__get"), "2026-07-28", "tools/call", "=?base64?Z2hfX2dldA?="),
	    ARN_MCP_E_HEADER_MISMATCH);
	/* resources/read mirrors params.uri; tools/list has no name */
	assert_int_equal(
	    check("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/read\",\"params\":"
		  "{\"uri\":\"file:///a b\"," META "}}",
		  "2026-07-28", "resources/read", "file:///a b"),
	    ARN_MCP_E_NONE);
	assert_int_equal(
	    check("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{" META "}}",
		  "2026-07-28", "tools/list", NULL),
	    ARN_MCP_E_NONE);
	/* a claim of a version not spoken statelessly */
	assert_int_equal(
	    check("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{"
		  "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2027-01-01\"}}}",
		  "2027-01-01", "tools/list", NULL),
	    ARN_MCP_E_MODERN_VERSION);
	/* notifications: only what is present is compared */
	assert_int_equal(
	    check("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{" META
		  "}}",
		  NULL, NULL, NULL),
	    ARN_MCP_E_NONE);
	assert_int_equal(
	    check("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{" META
		  "}}",
		  NULL, "tools/call", NULL),
	    ARN_MCP_E_HEADER_MISMATCH);
}

static void test_name_sentinel(void **st)
{
	(void)st;
	char out[64], back[64];
	/* plain when it survives a header as it is */
	assert_int_equal(arn_mcp_name_encode("gh__get", 7, out, sizeof(out)), 7);
	assert_memory_equal(out, "gh__get", 7);
	/* non-ASCII, control bytes, edge spaces: the sentinel form, read back the same */
	static const char *const odd[] = {"caf\xc3\xa9", "a\nb", " lead", "trail ",
					  "=?base64?x",	 "a",	 "ab",	  "abc"};
	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
		size_t n = strlen(odd[i]);
		size_t k = arn_mcp_name_encode(odd[i], n, out, sizeof(out));
		assert_true(k <= sizeof(out));
		ssize_t d = arn_mcp_name_decode(out, k, back, sizeof(back));
		assert_int_equal(d, (ssize_t)n);
		assert_memory_equal(back, odd[i], n);
	}
	assert_int_equal(arn_mcp_name_encode("caf\xc3\xa9", 5, out, sizeof(out)),
			 strlen("=?base64?Y2Fmw6k=?="));
	assert_memory_equal(out, "=?base64?Y2Fmw6k=?=", strlen("=?base64?Y2Fmw6k=?="));
	/* too small a buffer: the length needed, nothing claimed written */
	assert_true(arn_mcp_name_encode("caf\xc3\xa9", 5, out, 4) > 4);
	/* not canonical Base64 */
	static const char *const bad[] = {"=?base64?Y2Fmw6?=", "=?base64?Y2F*w6k=?=",
					  "=?base64?Y2Fmw6l=?=", "=?base64?Y2=mw6k=?="};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(arn_mcp_name_decode(bad[i], strlen(bad[i]), back, sizeof(back)),
				 -EINVAL);
	assert_int_equal(arn_mcp_name_decode("abcdef", 6, back, 3), -E2BIG);
}

static void test_envelope(void **st)
{
	(void)st;
	/* a session-era client's call to a 2026 backend: the envelope added */
	struct json_object *o = json_tokener_parse(
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"x\"}}");
	assert_int_equal(arn_mcp_envelope_set(o, true), 0);
	struct arn_mcp_msg m;
	assert_int_equal(arn_mcp_msg_decode(o, &m), ARN_MCP_E_NONE);
	const char *v;
	size_t n;
	assert_true(arn_mcp_meta_claim(m.params, &v, &n) && arn_mcp_is_modern(v, n));
	assert_non_null(strstr(mt_text(o), "\"io.modelcontextprotocol/clientCapabilities\":{}"));
	/* and taken away again for a session-era backend, other _meta kept */
	json_object_object_add(json_object_object_get(m.params, "_meta"), "progressToken",
			       json_object_new_int(3));
	assert_int_equal(arn_mcp_envelope_set(o, false), 0);
	assert_string_equal(mt_text(o),
			    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
			    "\"params\":{\"name\":\"x\",\"_meta\":{\"progressToken\":3}}}");
	json_object_put(o);
	/* a stateless client's own capabilities go on to a 2026 backend */
	o = json_tokener_parse(
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{"
	    "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
	    "\"io.modelcontextprotocol/clientCapabilities\":{\"elicitation\":{}}}}}");
	assert_int_equal(arn_mcp_envelope_set(o, true), 0);
	assert_non_null(strstr(mt_text(o), "\"elicitation\":{}"));
	assert_int_equal(arn_mcp_envelope_set(o, false), 0);
	assert_string_equal(
	    mt_text(o), "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{}}");
	json_object_put(o);
}

static void test_discover(void **st)
{
	(void)st;
	struct json_object *r = arn_mcp_discover_result(NULL, 0, "9.9");
	assert_non_null(r);
	const char *t = mt_text(r);
	assert_non_null(strstr(t, "\"supportedVersions\":[\"2026-07-28\"]"));
	assert_non_null(strstr(t, "\"tools\":{\"listChanged\":true}"));
	assert_non_null(strstr(t, "\"resultType\":\"complete\""));
	assert_non_null(strstr(t, "\"cacheScope\":\"private\""));
	assert_non_null(
	    strstr(t, "\"io.modelcontextprotocol/serverInfo\":{\"name\":\"arion-mcp-gateway\""));
	/* what the gateway learns a backend's era from */
	struct json_object *id = json_object_new_string("arn.discover");
	struct json_object *a = arn_mcp_new_result(id, r);
	json_object_put(id);
	struct arn_mcp_msg m;
	arn_mcp_msg_decode(a, &m);
	assert_true(arn_mcp_discover_modern(&m));
	json_object_put(a);
	json_object_put(r);
	a = json_tokener_parse(
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"supportedVersions\":[\"2025-11-25\"]}}");
	arn_mcp_msg_decode(a, &m);
	assert_false(arn_mcp_discover_modern(&m));
	json_object_put(a);
	a = json_tokener_parse(
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32601,\"message\":\"x\"}}");
	arn_mcp_msg_decode(a, &m);
	assert_false(arn_mcp_discover_modern(&m));
	json_object_put(a);
	struct json_object *q = arn_mcp_backend_discover();
	assert_non_null(strstr(mt_text(q), "\"method\":\"server/discover\""));
	assert_non_null(
	    strstr(mt_text(q), "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\""));
	json_object_put(q);
}

static void test_stamp_and_dispatch(void **st)
{
	(void)st;
	/* a session-era backend's tools/call result, made acceptable */
	struct json_object *r = json_tokener_parse("{\"content\":[]}");
	assert_int_equal(arn_mcp_modern_stamp(r, ARN_MCP_M_TOOLS_CALL, "1"), 0);
	assert_non_null(json_object_object_get(r, "resultType"));
	assert_null(json_object_object_get(r, "ttlMs")); /* not cacheable */
	json_object_put(r);
	r = json_tokener_parse("{\"tools\":[],\"ttlMs\":5,\"resultType\":\"complete\"}");
	assert_int_equal(arn_mcp_modern_stamp(r, ARN_MCP_M_TOOLS_LIST, "1"), 0);
	assert_int_equal(json_object_get_int(json_object_object_get(r, "ttlMs")), 5); /* kept */
	assert_string_equal(json_object_get_string(json_object_object_get(r, "cacheScope")),
			    "private");
	json_object_put(r);
	struct json_object *ans = NULL;
	const struct arn_mcp_msg *m =
	    msg("{\"jsonrpc\":\"2.0\",\"id\":\"d\",\"method\":\"server/discover\",\"params\":{" META
		"}}");
	assert_int_equal(arn_mcp_modern_dispatch(m, &ans, "1", NULL, 0), ARN_MCP_S_ANSWER);
	assert_non_null(strstr(mt_text(ans), "\"id\":\"d\",\"result\":{\"supportedVersions\""));
	json_object_put(ans);
	arn_mcp_body_release(&body);
	m = msg(CALL("x"));
	assert_int_equal(arn_mcp_modern_dispatch(m, &ans, "1", NULL, 0), ARN_MCP_S_TOOLS_CALL);
	arn_mcp_body_release(&body);
	/* initialize is the session era's handshake: unknown statelessly */
	m = msg("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"initialize\",\"params\":{" META "}}");
	assert_int_equal(arn_mcp_modern_dispatch(m, &ans, "1", NULL, 0), ARN_MCP_S_ANSWER);
	assert_non_null(strstr(mt_text(ans), "\"code\":-32601"));
	json_object_put(ans);
	arn_mcp_body_release(&body);
	/* and server/discover is unknown to a session-era client */
	assert_int_equal(arn_mcp_method_kind(ARN_MCP_M_SERVER_DISCOVER), ARN_MCP_MK_OTHER);
}

const struct CMUnitTest mt_era_tests[] = {
    cmocka_unit_test(test_claim),	  cmocka_unit_test(test_headers_checked),
    cmocka_unit_test(test_name_sentinel), cmocka_unit_test(test_envelope),
    cmocka_unit_test(test_discover),	  cmocka_unit_test(test_stamp_and_dispatch),
};
const size_t mt_era_n = sizeof(mt_era_tests) / sizeof(mt_era_tests[0]);
