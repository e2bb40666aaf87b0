/*
 * Versions, the two HTTP transports' dispatch, SSE framing, sessions and
 * initialize.
 */
#include <errno.h>
#include <json-c/json.h>
#include <string.h>

#include "mcp_test.h"

static void test_versions(void **state)
{
	(void)state;
	assert_int_equal(arn_mcp_version_parse("2024-11-05", 10), ARN_MCP_V_2024_11_05);
	assert_int_equal(arn_mcp_version_parse("2025-06-18", 10), ARN_MCP_V_2025_06_18);
	assert_int_equal(arn_mcp_version_parse("2025-06-1", 9), ARN_MCP_V_NONE);
	assert_string_equal(arn_mcp_version_name(ARN_MCP_V_2025_03_26), "2025-03-26");
	/* a version the gateway speaks is kept; any other gets its latest */
	assert_int_equal(arn_mcp_negotiate("2025-03-26", 10), ARN_MCP_V_2025_03_26);
	assert_int_equal(arn_mcp_negotiate("2099-01-01", 10), ARN_MCP_V_LATEST);
	assert_int_equal(arn_mcp_negotiate("", 0), ARN_MCP_V_LATEST);
	/* batches: 2024-11-05 and 2025-03-26 only */
	assert_true(arn_mcp_version_batches(ARN_MCP_V_2024_11_05));
	assert_true(arn_mcp_version_batches(ARN_MCP_V_2025_03_26));
	assert_false(arn_mcp_version_batches(ARN_MCP_V_2025_06_18));
	assert_false(arn_mcp_version_batches(ARN_MCP_V_NONE));
	/* MCP-Protocol-Version: absent is the session's; unknown 400; another 400 */
	assert_int_equal(arn_mcp_version_header(NULL, 0, ARN_MCP_V_2025_06_18), ARN_MCP_E_NONE);
	assert_int_equal(arn_mcp_version_header("2025-06-18", 10, ARN_MCP_V_2025_06_18),
			 ARN_MCP_E_NONE);
	assert_int_equal(arn_mcp_version_header("1999-01-01", 10, ARN_MCP_V_2025_06_18),
			 ARN_MCP_E_VERSION_HEADER);
	assert_int_equal(arn_mcp_version_header("2025-03-26", 10, ARN_MCP_V_2025_06_18),
			 ARN_MCP_E_VERSION_MISMATCH);
	assert_int_equal(arn_mcp_err_status(ARN_MCP_E_VERSION_MISMATCH), 400);
}

static struct arn_mcp_route classify(const char *method, const char *path, const char *accept,
				     const char *ctype, const char *sid)
{
	struct arn_mcp_http_req r = {
	    .method = method,
	    .method_len = strlen(method),
	    .path = path,
	    .path_len = strlen(path),
	    .accept = accept,
	    .accept_len = accept ? strlen(accept) : 0,
	    .content_type = ctype,
	    .content_type_len = ctype ? strlen(ctype) : 0,
	    .session_id = sid,
	    .session_id_len = sid ? strlen(sid) : 0,
	};
	struct arn_mcp_route out;
	arn_mcp_classify(&r, "/mcp", 4, &out);
	return out;
}

/* Both transports on one path, told apart as the spec's backwards
 * compatibility section has clients probe. */
static void test_transports_classified(void **state)
{
	(void)state;
	const char *both = "application/json, text/event-stream";
	struct arn_mcp_route r;
	r = classify("POST", "/mcp", both, "application/json", NULL);
	assert_int_equal(r.action, ARN_MCP_A_POST);
	r = classify("POST", "/mcp", "application/json;q=0.9,text/event-stream",
		     "application/json; charset=utf-8", "abc");
	assert_int_equal(r.action, ARN_MCP_A_POST);
	assert_int_equal(r.session_id_len, 3);
	r = classify("POST", "/mcp", "*/*", "application/json", NULL);
	assert_int_equal(r.action, ARN_MCP_A_POST);
	r = classify("POST", "/mcp", "application/json", "application/json", NULL);
	assert_int_equal(r.action, ARN_MCP_A_REFUSE);
	assert_int_equal(r.status, 406);
	r = classify("POST", "/mcp", both, "text/plain", NULL);
	assert_int_equal(r.status, 415);
	r = classify("POST", "/mcp", both, NULL, NULL);
	assert_int_equal(r.status, 415);
	/* the 2024-11-05 transport: GET without a session opens the stream,
	 * POST with ?sessionId= carries a message */
	r = classify("GET", "/mcp", "text/event-stream", NULL, NULL);
	assert_int_equal(r.action, ARN_MCP_A_SSE_OPEN);
	r = classify("POST", "/mcp?sessionId=00000001&x=1", NULL, "application/json", NULL);
	assert_int_equal(r.action, ARN_MCP_A_SSE_POST);
	assert_int_equal(r.session_id_len, 8);
	assert_memory_equal(r.session_id, "00000001", 8);
	/* Streamable HTTP's GET stream and DELETE */
	r = classify("GET", "/mcp", "text/event-stream", NULL, "abc");
	assert_int_equal(r.action, ARN_MCP_A_GET_STREAM);
	r = classify("GET", "/mcp", "application/json", NULL, "abc");
	assert_int_equal(r.status, 406);
	r = classify("DELETE", "/mcp", NULL, NULL, "abc");
	assert_int_equal(r.action, ARN_MCP_A_DELETE);
	r = classify("PUT", "/mcp", NULL, NULL, NULL);
	assert_int_equal(r.status, 405);
	assert_string_equal(r.allow, "GET, POST, DELETE");
	/* other paths are not the filter's */
	r = classify("POST", "/mcpx", both, "application/json", NULL);
	assert_int_equal(r.action, ARN_MCP_A_PASS);
	r = classify("POST", "/", both, "application/json", NULL);
	assert_int_equal(r.action, ARN_MCP_A_PASS);
	r = classify("POST", "/mcp?x", both, "application/json", NULL);
	assert_int_equal(r.action, ARN_MCP_A_POST);
}

static void test_sse_events(void **state)
{
	(void)state;
	char buf[128];
	size_t n = arn_mcp_sse_event(buf, sizeof(buf), "endpoint", NULL, "/mcp?sessionId=ab", 17);
	assert_int_equal(n, strlen("event: endpoint\ndata: /mcp?sessionId=ab\n\n"));
	assert_memory_equal(buf, "event: endpoint\ndata: /mcp?sessionId=ab\n\n", n);
	n = arn_mcp_sse_event(buf, sizeof(buf), "message", "7", "{}", 2);
	assert_memory_equal(buf, "event: message\nid: 7\ndata: {}\n\n", n);
	n = arn_mcp_sse_event(buf, sizeof(buf), NULL, NULL, "{}", 2);
	assert_memory_equal(buf, "data: {}\n\n", n);
	/* too small: the length needed, nothing usable */
	assert_int_equal(arn_mcp_sse_event(buf, 5, NULL, NULL, "{}", 2), 10);
}

static const uint8_t rnd1[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

static void count_expired(void *arg, struct arn_mcp_session *s)
{
	(void)s;
	(*(int *)arg)++;
}

/* Ids name slot and generation; lookups are 400 without an id, 404 for
 * one never issued, ended, or idle past the timeout. */
static void test_sessions(void **state)
{
	(void)state;
	struct arn_mcp_sessions *t = arn_mcp_sessions_create(0, 2, 3, 1000);
	assert_non_null(t);
	struct arn_mcp_session *a, *b, *c, *f;
	assert_int_equal(arn_mcp_session_open(t, ARN_MCP_V_2025_06_18, ARN_MCP_T_STREAMABLE, 100,
					      rnd1, &a, NULL, NULL),
			 ARN_MCP_E_NONE);
	assert_int_equal(strlen(a->id), ARN_MCP_SID_LEN);
	assert_string_equal(a->id, "00000000"
				   "00000000"
				   "0102030405060708090a0b0c0d0e0f10");
	assert_int_equal(a->version, ARN_MCP_V_2025_06_18);
	assert_int_equal(arn_mcp_sessions_count(t), 1);

	assert_int_equal(arn_mcp_session_find(t, a->id, ARN_MCP_SID_LEN, 200, &f), ARN_MCP_E_NONE);
	assert_ptr_equal(f, a);
	assert_int_equal(f->last_ms, 200);
	assert_int_equal(arn_mcp_session_find(t, NULL, 0, 200, &f), ARN_MCP_E_SESSION_MISSING);
	assert_int_equal(arn_mcp_err_status(ARN_MCP_E_SESSION_MISSING), 400);
	char wrong[ARN_MCP_SID_LEN + 1];
	memcpy(wrong, a->id, sizeof(wrong));
	wrong[ARN_MCP_SID_LEN - 1] ^= 1;
	assert_int_equal(arn_mcp_session_find(t, wrong, ARN_MCP_SID_LEN, 200, &f),
			 ARN_MCP_E_SESSION_UNKNOWN);
	assert_int_equal(arn_mcp_err_status(ARN_MCP_E_SESSION_UNKNOWN), 404);
	assert_int_equal(arn_mcp_err_code(ARN_MCP_E_SESSION_UNKNOWN), -32001);
	assert_int_equal(arn_mcp_session_find(t, "zz", 2, 200, &f), ARN_MCP_E_SESSION_UNKNOWN);
	memcpy(wrong, "00ffffff", 8); /* a slot past the table */
	assert_int_equal(arn_mcp_session_find(t, wrong, ARN_MCP_SID_LEN, 200, &f),
			 ARN_MCP_E_SESSION_UNKNOWN);

	/* full: 503, unless a session is idle, which is expired for room */
	assert_int_equal(
	    arn_mcp_session_open(t, ARN_MCP_V_2024_11_05, ARN_MCP_T_SSE, 300, rnd1, &b, NULL, NULL),
	    ARN_MCP_E_NONE);
	assert_int_equal(b->transport, ARN_MCP_T_SSE);
	int expired = 0;
	assert_int_equal(arn_mcp_session_open(t, ARN_MCP_V_2025_06_18, ARN_MCP_T_STREAMABLE, 1199,
					      rnd1, &c, count_expired, &expired),
			 ARN_MCP_E_SESSIONS_FULL);
	assert_int_equal(arn_mcp_err_status(ARN_MCP_E_SESSIONS_FULL), 503);
	assert_int_equal(expired, 0);
	char a_id[ARN_MCP_SID_LEN + 1];
	memcpy(a_id, a->id, sizeof(a_id));
	assert_int_equal(arn_mcp_session_open(t, ARN_MCP_V_2025_06_18, ARN_MCP_T_STREAMABLE, 1200,
					      rnd1, &c, count_expired, &expired),
			 ARN_MCP_E_NONE);
	assert_int_equal(expired, 1); /* a, idle since 200 */
	assert_ptr_equal(c, a);	      /* its slot, a new generation */
	assert_string_not_equal(c->id, a_id);
	assert_int_equal(arn_mcp_session_find(t, a_id, ARN_MCP_SID_LEN, 1200, &f),
			 ARN_MCP_E_SESSION_UNKNOWN);

	/* idle past the timeout at lookup: gone */
	assert_int_equal(arn_mcp_session_find(t, b->id, ARN_MCP_SID_LEN, 1300, &f),
			 ARN_MCP_E_SESSION_UNKNOWN);
	assert_int_equal(arn_mcp_sessions_count(t), 1);
	/* closed: gone */
	char c_id[ARN_MCP_SID_LEN + 1];
	memcpy(c_id, c->id, sizeof(c_id));
	arn_mcp_session_close(t, c);
	assert_int_equal(arn_mcp_session_find(t, c_id, ARN_MCP_SID_LEN, 1300, &f),
			 ARN_MCP_E_SESSION_UNKNOWN);
	assert_int_equal(arn_mcp_sessions_count(t), 0);
	arn_mcp_sessions_destroy(t);
}

static void test_sessions_expire_sweep(void **state)
{
	(void)state;
	struct arn_mcp_sessions *t = arn_mcp_sessions_create(0, 4, 1, 50);
	struct arn_mcp_session *s;
	for (int i = 0; i < 4; i++)
		assert_int_equal(arn_mcp_session_open(t, ARN_MCP_V_2025_06_18, ARN_MCP_T_STREAMABLE,
						      (uint64_t)i * 10, rnd1, &s, NULL, NULL),
				 ARN_MCP_E_NONE);
	int n = 0;
	assert_int_equal(arn_mcp_sessions_expire(t, 65, count_expired, &n),
			 2); /* opened at 0, 10 */
	assert_int_equal(n, 2);
	assert_int_equal(arn_mcp_sessions_count(t), 2);
	/* a session holding a GET stream (user set) does not idle */
	assert_int_equal(arn_mcp_session_find(t, s->id, ARN_MCP_SID_LEN, 70, &s), ARN_MCP_E_NONE);
	s->user = &n;
	assert_int_equal(arn_mcp_sessions_expire(t, 1000, NULL, NULL), 1);
	assert_int_equal(arn_mcp_sessions_count(t), 1);
	assert_int_equal(arn_mcp_session_find(t, s->id, ARN_MCP_SID_LEN, 5000, &s), ARN_MCP_E_NONE);
	arn_mcp_sessions_destroy(t);

	/* idle 0: never */
	t = arn_mcp_sessions_create(0, 1, 1, 0);
	assert_int_equal(arn_mcp_session_open(t, ARN_MCP_V_2025_06_18, ARN_MCP_T_STREAMABLE, 0,
					      rnd1, &s, NULL, NULL),
			 ARN_MCP_E_NONE);
	assert_int_equal(arn_mcp_sessions_expire(t, UINT64_MAX / 2, NULL, NULL), 0);
	arn_mcp_sessions_destroy(t);
	assert_null(arn_mcp_sessions_create(0, 0, 1, 0));
	assert_null(arn_mcp_sessions_create(0, (1u << 24) + 1, 1, 0));
	assert_null(arn_mcp_sessions_create(ARN_MCP_MAX_WORKERS, 1, 1, 0));
}

/* Each backend's own session id, kept per gateway session. */
static void test_backend_sessions(void **state)
{
	(void)state;
	struct arn_mcp_sessions *t = arn_mcp_sessions_create(0, 2, 2, 0);
	struct arn_mcp_session *a, *b;
	assert_int_equal(arn_mcp_session_open(t, ARN_MCP_V_2025_06_18, ARN_MCP_T_STREAMABLE, 0,
					      rnd1, &a, NULL, NULL),
			 ARN_MCP_E_NONE);
	assert_int_equal(arn_mcp_session_open(t, ARN_MCP_V_2025_06_18, ARN_MCP_T_STREAMABLE, 0,
					      rnd1, &b, NULL, NULL),
			 ARN_MCP_E_NONE);
	size_t n;
	assert_null(arn_mcp_session_backend(t, a, 0, &n));
	assert_int_equal(arn_mcp_session_backend_set(t, a, 1, "up-1", 4), 0);
	assert_int_equal(arn_mcp_session_backend_set(t, b, 1, "up-2", 4), 0);
	assert_string_equal(arn_mcp_session_backend(t, a, 1, &n), "up-1");
	assert_int_equal(n, 4);
	assert_string_equal(arn_mcp_session_backend(t, b, 1, &n), "up-2");
	assert_int_equal(arn_mcp_session_backend_set(t, a, 2, "x", 1), -ERANGE);
	assert_int_equal(arn_mcp_session_backend_set(t, a, 0, "a b", 3), -EINVAL);
	assert_int_equal(arn_mcp_session_backend_set(t, a, 0, "a\r\nx: y", 8), -EINVAL);
	assert_int_equal(arn_mcp_session_backend_set(t, a, 0, "", 0), -EINVAL);
	char big[ARN_MCP_BACKEND_SID_MAX + 1];
	memset(big, 'x', sizeof(big));
	assert_int_equal(arn_mcp_session_backend_set(t, a, 0, big, sizeof(big)), -E2BIG);
	assert_int_equal(arn_mcp_session_backend_set(t, a, 0, big, sizeof(big) - 1), 0);
	arn_mcp_session_backend_forget(t, a, 1);
	assert_null(arn_mcp_session_backend(t, a, 1, &n));
	assert_non_null(arn_mcp_session_backend(t, a, 0, &n));
	arn_mcp_session_backend_forget(t, a, UINT32_MAX);
	assert_null(arn_mcp_session_backend(t, a, 0, &n));
	/* a slot reused starts with no backend sessions */
	arn_mcp_session_close(t, b);
	assert_int_equal(arn_mcp_session_open(t, ARN_MCP_V_2025_06_18, ARN_MCP_T_STREAMABLE, 0,
					      rnd1, &b, NULL, NULL),
			 ARN_MCP_E_NONE);
	assert_null(arn_mcp_session_backend(t, b, 1, &n));
	arn_mcp_sessions_destroy(t);
}

/* A ToolSet's new version moved its backends: each kept id follows its
 * backend to its new index, the id of a backend gone is forgotten, no id
 * lands on another backend, and the relayed requests follow too (those
 * of the backend gone are dropped). The other session's ids stay. */
static void test_backend_sessions_remap(void **state)
{
	(void)state;
	struct arn_mcp_sessions *t = arn_mcp_sessions_create(0, 2, 4, 0);
	struct arn_mcp_session *a, *b;
	assert_int_equal(arn_mcp_session_open(t, ARN_MCP_V_2025_06_18, ARN_MCP_T_STREAMABLE, 0,
					      rnd1, &a, NULL, NULL),
			 ARN_MCP_E_NONE);
	assert_int_equal(arn_mcp_session_open(t, ARN_MCP_V_2025_06_18, ARN_MCP_T_STREAMABLE, 0,
					      rnd1, &b, NULL, NULL),
			 ARN_MCP_E_NONE);
	assert_int_equal(arn_mcp_session_backend_set(t, a, 0, "zero", 4), 0);
	assert_int_equal(arn_mcp_session_backend_set(t, a, 1, "one", 3), 0);
	assert_int_equal(arn_mcp_session_backend_set(t, a, 2, "two", 3), 0);
	assert_int_equal(arn_mcp_session_backend_set(t, b, 0, "b-zero", 6), 0);
	struct json_object *i1 = json_object_new_int(1), *i2 = json_object_new_int(2);
	assert_int_equal(arn_mcp_session_pending_add(a, 1, i1, 7), 0);
	assert_int_equal(arn_mcp_session_pending_add(a, 2, i2, 7), 0);
	/* 0 -> 2, 1 gone, 2 -> 0, 3 (none kept) -> 1 */
	const uint32_t map[] = {2, UINT32_MAX, 0, 1};
	arn_mcp_session_backend_remap(t, a, map, 4);
	size_t n = 0;
	assert_string_equal(arn_mcp_session_backend(t, a, 2, &n), "zero");
	assert_int_equal(n, 4);
	assert_string_equal(arn_mcp_session_backend(t, a, 0, &n), "two");
	assert_null(arn_mcp_session_backend(t, a, 1, &n));
	assert_null(arn_mcp_session_backend(t, a, 3, &n));
	assert_string_equal(arn_mcp_session_backend(t, b, 0, &n), "b-zero");
	/* backend 2's request is backend 0's now; backend 1's is gone */
	assert_int_equal(a->n_pending, 1);
	assert_int_equal(arn_mcp_session_pending_take(a, 1, i1), -ENOENT);
	assert_int_equal(arn_mcp_session_pending_take(a, 2, i2), -ENOENT);
	assert_int_equal(arn_mcp_session_pending_take(a, 0, i2), 0);
	/* a map of fewer backends than kept: the rest are forgotten ("two",
	 * at 0 now, goes to 2; "zero", at 2, is past the map) */
	arn_mcp_session_backend_remap(t, a, map, 1);
	assert_string_equal(arn_mcp_session_backend(t, a, 2, &n), "two");
	assert_null(arn_mcp_session_backend(t, a, 0, &n));
	assert_null(arn_mcp_session_backend(t, a, 1, &n));
	json_object_put(i1);
	json_object_put(i2);
	arn_mcp_sessions_destroy(t);
}

static struct json_object *js(const char *s)
{
	return json_tokener_parse(s);
}

static void test_initialize(void **state)
{
	(void)state;
	enum arn_mcp_version v;
	struct json_object *p = js("{\"protocolVersion\":\"2024-11-05\",\"capabilities\":{}}");
	assert_int_equal(arn_mcp_initialize_params(p, &v), ARN_MCP_E_NONE);
	assert_int_equal(v, ARN_MCP_V_2024_11_05);
	json_object_put(p);
	p = js("{\"protocolVersion\":\"2030-01-01\"}");
	assert_int_equal(arn_mcp_initialize_params(p, &v), ARN_MCP_E_NONE);
	assert_int_equal(v, ARN_MCP_V_LATEST);
	json_object_put(p);
	p = js("{\"protocolVersion\":20250618}");
	assert_int_equal(arn_mcp_initialize_params(p, &v), ARN_MCP_E_INVALID_PARAMS);
	json_object_put(p);
	assert_int_equal(arn_mcp_initialize_params(NULL, &v), ARN_MCP_E_INVALID_PARAMS);

	/* before any backend answered: tools offered */
	struct json_object *r = arn_mcp_initialize_result(ARN_MCP_V_2025_06_18, NULL, 0, "0.1.0");
	assert_string_equal(mt_text(r),
			    "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{"
			    "\"tools\":{\"listChanged\":true},\"prompts\":{},\"resources\":{}},"
			    "\"serverInfo\":{\"name\":"
			    "\"arion-mcp-gateway\",\"version\":\"0.1.0\"}}");
	json_object_put(r);
	/* merged: tools when one offers them; instructions under each name */
	struct arn_mcp_backend_init b[3] = {
	    {"gh", js("{\"capabilities\":{\"tools\":{}},\"instructions\":\"Use search first.\"}")},
	    {"jira", NULL},
	    {"docs", js("{\"capabilities\":{\"prompts\":{}},\"instructions\":\"Cite pages.\"}")},
	};
	r = arn_mcp_initialize_result(ARN_MCP_V_2024_11_05, b, 3, "0.1.0");
	struct json_object *x, *caps;
	assert_true(json_object_object_get_ex(r, "capabilities", &caps));
	assert_true(json_object_object_get_ex(caps, "tools", NULL));
	assert_true(json_object_object_get_ex(caps, "prompts", NULL));	  /* docs offers them */
	assert_false(json_object_object_get_ex(caps, "resources", NULL)); /* none offers them */
	assert_true(json_object_object_get_ex(r, "instructions", &x));
	assert_string_equal(json_object_get_string(x),
			    "[gh] Use search first.\n\n[docs] Cite pages.");
	assert_true(json_object_object_get_ex(r, "protocolVersion", &x));
	assert_string_equal(json_object_get_string(x), "2024-11-05");
	json_object_put(r);
	/* no backend offers tools: none offered */
	struct arn_mcp_backend_init only_docs[1] = {{"docs", b[2].result}};
	r = arn_mcp_initialize_result(ARN_MCP_V_2025_06_18, only_docs, 1, "0.1.0");
	assert_true(json_object_object_get_ex(r, "capabilities", &caps));
	assert_false(json_object_object_get_ex(caps, "tools", NULL));
	json_object_put(r);
	json_object_put(b[0].result);
	json_object_put(b[2].result);

	/* listChanged for prompts and resources when an offering backend says
	 * it (the gateway relays those notifications), tools' always; logging
	 * when one logs; subscribe, completions and experimental never (the
	 * gateway serves none of them) */
	struct arn_mcp_backend_init lc[2] = {
	    {"a", js("{\"capabilities\":{\"tools\":{\"listChanged\":false},\"prompts\":{"
		     "\"listChanged\":true},\"resources\":{\"subscribe\":true},\"completions\":{},"
		     "\"experimental\":{\"x\":{}}}}")},
	    {"b", js("{\"capabilities\":{\"resources\":{\"listChanged\":true},\"logging\":{}}}")},
	};
	r = arn_mcp_initialize_result(ARN_MCP_V_2025_06_18, lc, 2, "0.1.0");
	assert_true(json_object_object_get_ex(r, "capabilities", &caps));
	assert_string_equal(json_object_to_json_string_ext(caps, JSON_C_TO_STRING_PLAIN),
			    "{\"tools\":{\"listChanged\":true},\"prompts\":{\"listChanged\":true},"
			    "\"resources\":{\"listChanged\":true},\"logging\":{}}");
	json_object_put(r);
	/* a backend that says listChanged false, or nothing: not claimed */
	r = arn_mcp_initialize_result(ARN_MCP_V_2025_06_18, &lc[1], 1, "0.1.0");
	assert_true(json_object_object_get_ex(r, "capabilities", &caps));
	assert_string_equal(json_object_to_json_string_ext(caps, JSON_C_TO_STRING_PLAIN),
			    "{\"resources\":{\"listChanged\":true},\"logging\":{}}");
	json_object_put(r);
	/* capabilities that are not an object count as none offered */
	struct arn_mcp_backend_init odd[1] = {{"o", js("{\"capabilities\":[1]}")}};
	r = arn_mcp_initialize_result(ARN_MCP_V_2025_06_18, odd, 1, "0.1.0");
	assert_true(json_object_object_get_ex(r, "capabilities", &caps));
	assert_int_equal(json_object_object_length(caps), 0);
	json_object_put(r);
	json_object_put(odd[0].result);

	/* what the filter keeps of a backend's answer: the capabilities the
	 * merge reads, reduced, and its instructions */
	struct json_object *k = arn_mcp_backend_init_keep(lc[0].result);
	assert_string_equal(json_object_to_json_string_ext(k, JSON_C_TO_STRING_PLAIN),
			    "{\"capabilities\":{\"tools\":{},\"prompts\":{\"listChanged\":true},"
			    "\"resources\":{}}}");
	json_object_put(k);
	k = arn_mcp_backend_init_keep(lc[1].result);
	assert_string_equal(
	    json_object_to_json_string_ext(k, JSON_C_TO_STRING_PLAIN),
	    "{\"capabilities\":{\"resources\":{\"listChanged\":true},\"logging\":{}}}");
	json_object_put(k);
	json_object_put(lc[0].result);
	json_object_put(lc[1].result);
	assert_null(arn_mcp_backend_init_keep(NULL));
	struct json_object *notobj = js("[]");
	assert_null(arn_mcp_backend_init_keep(notobj));
	json_object_put(notobj);
	/* instructions of any length are kept bounded, cut before a UTF-8
	 * sequence rather than inside it: "é" (2 bytes) straddles the limit */
	size_t big = ARN_MCP_INSTRUCTIONS_MAX + 100;
	char *t = malloc(big + 1);
	assert_non_null(t);
	memset(t, 'a', big);
	memcpy(t + ARN_MCP_INSTRUCTIONS_MAX - 1, "\xc3\xa9", 2);
	t[big] = 0;
	struct json_object *res = json_object_new_object();
	json_object_object_add(res, "instructions", json_object_new_string(t));
	k = arn_mcp_backend_init_keep(res);
	struct json_object *ins;
	assert_true(json_object_object_get_ex(k, "instructions", &ins));
	assert_int_equal(json_object_get_string_len(ins), ARN_MCP_INSTRUCTIONS_MAX - 1);
	assert_memory_equal(json_object_get_string(ins), t, ARN_MCP_INSTRUCTIONS_MAX - 1);
	assert_true(json_object_object_get_ex(k, "capabilities", &caps));
	assert_int_equal(json_object_object_length(caps), 0);
	json_object_put(k);
	json_object_put(res);
	free(t);
}

/* A session lives on the worker that opened it; others read the owner
 * from the id and hand the request over. */
static void test_sessions_per_worker(void **state)
{
	(void)state;
	struct arn_mcp_sessions *w3 = arn_mcp_sessions_create(3, 4, 1, 0);
	struct arn_mcp_sessions *w7 = arn_mcp_sessions_create(7, 4, 1, 0);
	struct arn_mcp_session *s, *f;
	assert_int_equal(arn_mcp_session_open(w7, ARN_MCP_V_2025_06_18, ARN_MCP_T_STREAMABLE, 0,
					      rnd1, &s, NULL, NULL),
			 ARN_MCP_E_NONE);
	assert_memory_equal(s->id, "07000000", 8);
	assert_int_equal(arn_mcp_session_owner(s->id, ARN_MCP_SID_LEN), 7);
	assert_int_equal(arn_mcp_session_find(w3, s->id, ARN_MCP_SID_LEN, 0, &f),
			 ARN_MCP_E_SESSION_ELSEWHERE);
	assert_int_equal(arn_mcp_err_status(ARN_MCP_E_SESSION_ELSEWHERE), 404);
	assert_int_equal(arn_mcp_session_find(w7, s->id, ARN_MCP_SID_LEN, 0, &f), ARN_MCP_E_NONE);
	assert_int_equal(arn_mcp_session_owner("07", 2), -EINVAL);
	assert_int_equal(
	    arn_mcp_session_owner("zz000000000000000000000000000000000000000000000000", 48),
	    -EINVAL);
	arn_mcp_sessions_destroy(w3);
	arn_mcp_sessions_destroy(w7);
}

/* Backends' requests relayed to a client: only answers to those go back,
 * each once, and a session remembers at most ARN_MCP_MAX_PENDING. */
static void test_pending_requests(void **state)
{
	(void)state;
	struct arn_mcp_sessions *t = arn_mcp_sessions_create(0, 2, 4, 0);
	assert_non_null(t);
	uint8_t rnd[16] = {0};
	struct arn_mcp_session *s = NULL;
	assert_int_equal(arn_mcp_session_open(t, ARN_MCP_V_2025_06_18, ARN_MCP_T_STREAMABLE, 0, rnd,
					      &s, NULL, NULL),
			 ARN_MCP_E_NONE);
	struct json_object *one = json_object_new_int(1);
	struct json_object *one_s = json_object_new_string("1");
	assert_int_equal(arn_mcp_session_pending_add(s, 0, one, 7), 0);
	assert_int_equal(arn_mcp_session_pending_add(s, 0, one, 7), -EEXIST);
	/* the same id from another backend is another request */
	assert_int_equal(arn_mcp_session_pending_add(s, 1, one, 7), 0);
	/* 1 and "1" are different ids (JSON-RPC compares them as given) */
	assert_int_equal(arn_mcp_session_pending_take(s, 0, one_s), -ENOENT);
	assert_int_equal(arn_mcp_session_pending_take(s, 0, one), 0);
	assert_int_equal(arn_mcp_session_pending_take(s, 0, one), -ENOENT); /* once */
	assert_int_equal(arn_mcp_session_pending_take(s, 1, one), 0);
	/* the limit: one more is refused; answering one makes room */
	for (int i = 0; i < ARN_MCP_MAX_PENDING; i++) {
		struct json_object *id = json_object_new_int(100 + i);
		assert_int_equal(arn_mcp_session_pending_add(s, 2, id, 7), 0);
		json_object_put(id);
	}
	struct json_object *more = json_object_new_int(99);
	assert_int_equal(arn_mcp_session_pending_add(s, 2, more, 7), -ENOSPC);
	struct json_object *first = json_object_new_int(100);
	assert_int_equal(arn_mcp_session_pending_take(s, 2, first), 0);
	assert_int_equal(arn_mcp_session_pending_add(s, 2, more, 7), 0);
	/* a call that ends takes its requests with it, and only its own */
	struct json_object *other = json_object_new_int(5);
	assert_int_equal(arn_mcp_session_pending_drop(s, 7), ARN_MCP_MAX_PENDING);
	assert_int_equal(arn_mcp_session_pending_add(s, 2, more, 8), 0);
	assert_int_equal(arn_mcp_session_pending_add(s, 2, other, 9), 0);
	assert_int_equal(arn_mcp_session_pending_drop(s, 8), 1);
	assert_int_equal(arn_mcp_session_pending_take(s, 2, more), -ENOENT);
	assert_int_equal(arn_mcp_session_pending_take(s, 2, other), 0);
	json_object_put(other);
	/* a session opened again in the slot remembers nothing */
	arn_mcp_session_close(t, s);
	assert_int_equal(arn_mcp_session_open(t, ARN_MCP_V_2025_06_18, ARN_MCP_T_STREAMABLE, 0, rnd,
					      &s, NULL, NULL),
			 ARN_MCP_E_NONE);
	assert_int_equal(s->n_pending, 0);
	json_object_put(one);
	json_object_put(one_s);
	json_object_put(more);
	json_object_put(first);
	arn_mcp_sessions_destroy(t);
}

const struct CMUnitTest mt_session_tests[] = {
    cmocka_unit_test(test_pending_requests),
    cmocka_unit_test(test_sessions_per_worker),
    cmocka_unit_test(test_versions),
    cmocka_unit_test(test_transports_classified),
    cmocka_unit_test(test_sse_events),
    cmocka_unit_test(test_sessions),
    cmocka_unit_test(test_sessions_expire_sweep),
    cmocka_unit_test(test_backend_sessions),
    cmocka_unit_test(test_backend_sessions_remap),
    cmocka_unit_test(test_initialize),
};
const size_t mt_session_n = sizeof(mt_session_tests) / sizeof(mt_session_tests[0]);
