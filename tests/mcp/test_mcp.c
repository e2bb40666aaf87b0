/*
 * lib/mcp's core, one behaviour per test: JSON-RPC 2.0 reading (whole, one
 * byte at a time, at a guard page) and its limits, decoding, the answers
 * built.
 */
#include <json-c/json.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mcp_test.h"

/* ---- helpers --------------------------------------------------------------- */

/* @p s copied so that its last byte sits right before a PROT_NONE page: a
 * read past the end crashes (picohttpparser's habit). */
static const char *guarded(const char *s, size_t n, void **map, size_t *maplen)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t npg = (n + pg - 1) / pg + 1;
	char *m = mmap(NULL, npg * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED);
	assert_int_equal(mprotect(m + (npg - 1) * pg, pg, PROT_NONE), 0);
	char *dst = m + (npg - 1) * pg - n;
	memcpy(dst, s, n);
	*map = m;
	*maplen = npg * pg;
	return dst;
}

enum arn_mcp_err mt_parse(const char *s, bool batch_ok, const struct arn_mcp_limits *lim,
			  struct arn_mcp_body *b)
{
	void *map;
	size_t maplen, n = strlen(s);
	const char *g = guarded(s, n, &map, &maplen);
	enum arn_mcp_err e = arn_mcp_parse(g, n, lim, batch_ok, b);

	/* The same bytes one at a time must give the same verdict. */
	struct arn_mcp_reader r;
	struct arn_mcp_body b2;
	assert_int_equal(arn_mcp_reader_init(&r, lim), 0);
	int rc = ARN_AGAIN;
	for (size_t i = 0; i < n && rc == ARN_AGAIN; i++)
		rc = arn_mcp_reader_feed(&r, g + i, 1);
	enum arn_mcp_err e2 =
	    rc == ARN_AGAIN ? arn_mcp_reader_finish(&r, batch_ok, &b2) : (enum arn_mcp_err)rc;
	arn_mcp_reader_fini(&r);
	assert_int_equal(e2, e);
	if (e2 == ARN_MCP_E_NONE) {
		assert_int_equal(b2.n, b->n);
		for (uint32_t i = 0; i < b->n; i++) {
			assert_int_equal(b2.msgs[i].err, b->msgs[i].err);
			assert_int_equal(b2.msgs[i].kind, b->msgs[i].kind);
		}
		arn_mcp_body_release(&b2);
	}
	munmap(map, maplen);
	return e;
}

/* @p o's compact text, for comparisons. */
const char *mt_text(struct json_object *o)
{
	return arn_mcp_text(o, NULL);
}

/* ---- reading ------------------------------------------------------------------- */

static void test_request_decoded(void **state)
{
	(void)state;
	struct arn_mcp_body b;
	assert_int_equal(mt_parse("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\","
				  "\"params\":{\"name\":\"gh__search\",\"arguments\":{}}}",
				  false, NULL, &b),
			 ARN_MCP_E_NONE);
	assert_int_equal(b.n, 1);
	assert_false(b.batch);
	const struct arn_mcp_msg *m = &b.msgs[0];
	assert_int_equal(m->err, ARN_MCP_E_NONE);
	assert_int_equal(m->kind, ARN_MCP_REQUEST);
	assert_int_equal(m->method, ARN_MCP_M_TOOLS_CALL);
	assert_int_equal(arn_mcp_method_kind(m->method), ARN_MCP_MK_TOOLS);
	assert_string_equal(m->method_name, "tools/call");
	assert_int_equal(json_object_get_int(m->id), 7);
	assert_non_null(m->params);
	arn_mcp_body_release(&b);
}

static void test_notification_result_error_decoded(void **state)
{
	(void)state;
	struct arn_mcp_body b;
	assert_int_equal(mt_parse("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
				  false, NULL, &b),
			 ARN_MCP_E_NONE);
	assert_int_equal(b.msgs[0].kind, ARN_MCP_NOTIFICATION);
	assert_int_equal(b.msgs[0].method, ARN_MCP_M_N_INITIALIZED);
	assert_null(b.msgs[0].id);
	arn_mcp_body_release(&b);

	assert_int_equal(mt_parse("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"result\":{\"tools\":[]}}",
				  false, NULL, &b),
			 ARN_MCP_E_NONE);
	assert_int_equal(b.msgs[0].kind, ARN_MCP_RESULT);
	assert_string_equal(json_object_get_string(b.msgs[0].id), "a");
	assert_non_null(b.msgs[0].result);
	arn_mcp_body_release(&b);

	assert_int_equal(mt_parse("{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,"
				  "\"message\":\"Parse error\"}}",
				  false, NULL, &b),
			 ARN_MCP_E_NONE);
	assert_int_equal(b.msgs[0].kind, ARN_MCP_ERROR);
	assert_int_equal(b.msgs[0].error_code, -32700);
	assert_string_equal(b.msgs[0].error_message, "Parse error");
	arn_mcp_body_release(&b);
}

/* Not JSON-RPC 2.0: each is a valid JSON object that the gateway answers
 * with Invalid Request (-32600), keeping the id when it was readable. */
static void test_invalid_messages(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		bool id_kept;
	} cases[] = {
	    {"{\"id\":1,\"method\":\"ping\"}", true},			  /* no jsonrpc */
	    {"{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", true}, /* wrong version */
	    {"{\"jsonrpc\":2.0,\"id\":1,\"method\":\"ping\"}", true},	  /* not a string */
	    {"{\"jsonrpc\":\"2.0\\u0000x\",\"id\":1,\"method\":\"ping\"}", true}, /* NUL inside */
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}", true}, /* method not a string */
	    {"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}",
	     false}, /* MCP: id never null */
	    {"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", false}, /* not an integer */
	    {"{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}", false},  /* not a scalar */
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":[1]}",
	     true}, /* MCP params: objects */
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":null}", true},
	    {"{\"jsonrpc\":\"2.0\",\"id\":1}", true}, /* neither method nor result */
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"error\":{\"code\":1}}",
	     true},					    /* both */
	    {"{\"jsonrpc\":\"2.0\",\"result\":{}}", false}, /* result without id */
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"message\":\"x\"}}", true}, /* no code */
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":\"x\"}}", true},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct arn_mcp_body b;
		assert_int_equal(mt_parse(cases[i].s, false, NULL, &b), ARN_MCP_E_NONE);
		assert_int_equal(b.n, 1);
		if (b.msgs[0].err != ARN_MCP_E_INVALID)
			fail_msg("case %zu (%s): err %d", i, cases[i].s, b.msgs[0].err);
		assert_int_equal(b.msgs[0].id != NULL, cases[i].id_kept);
		struct json_object *ans = arn_mcp_new_error(b.msgs[0].id, b.msgs[0].err, NULL);
		struct arn_mcp_body a;
		assert_int_equal(arn_mcp_parse(mt_text(ans), strlen(mt_text(ans)), NULL, false, &a),
				 ARN_MCP_E_NONE);
		assert_int_equal(a.msgs[0].kind, ARN_MCP_ERROR);
		assert_int_equal(a.msgs[0].error_code, -32600);
		arn_mcp_body_release(&a);
		json_object_put(ans);
		arn_mcp_body_release(&b);
	}
}

/* Bodies refused whole: JSON-RPC's Parse error (-32700) and the gateway's
 * own limits, each with its HTTP status. */
static void test_bodies_refused(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		enum arn_mcp_err e;
	} cases[] = {
	    {"", ARN_MCP_E_PARSE},
	    {"   ", ARN_MCP_E_PARSE},
	    {"{\"jsonrpc\":\"2.0\"", ARN_MCP_E_PARSE}, /* cut */
	    {"{\"a\":1,}", ARN_MCP_E_PARSE},	       /* trailing comma: strict */
	    {"{'a':1}", ARN_MCP_E_PARSE},
	    {"{\"a\":1} {\"b\":2}", ARN_MCP_E_PARSE}, /* two values */
	    {"{\"a\":1}x", ARN_MCP_E_PARSE},
	    {"{\"a\":\"x\ny\"}", ARN_MCP_E_PARSE},	   /* raw control character in a string */
	    {"{\"a\":\"\xff\"}", ARN_MCP_E_PARSE},	   /* not UTF-8 */
	    {"{\"a\":\"\xc0\xaf\"}", ARN_MCP_E_PARSE},	   /* overlong '/' */
	    {"{\"a\":\"\xed\xa0\x80\"}", ARN_MCP_E_PARSE}, /* a surrogate */
	    {"{\"a\":\"\xf4\x90\x80\x80\"}", ARN_MCP_E_PARSE}, /* past U+10FFFF */
	    {"{\"a\":\"\xc3\"}", ARN_MCP_E_PARSE},	       /* cut sequence */
	    {"{\"a\":-5119-1}", ARN_MCP_E_PARSE},
	    {"{\"a\":01}", ARN_MCP_E_PARSE},
	    {"{\"a\":1.}", ARN_MCP_E_PARSE},
	    {"{\"a\":.5}", ARN_MCP_E_PARSE},
	    {"{\"a\":1e}", ARN_MCP_E_PARSE},
	    {"{\"a\":+1}", ARN_MCP_E_PARSE},
	    {"{\"a\":tru}", ARN_MCP_E_PARSE},
	    {"{\"a\":truex}", ARN_MCP_E_PARSE},
	    {"{\"a\":nul1}", ARN_MCP_E_PARSE},
	    {"-", ARN_MCP_E_PARSE},
	    {"{\"a\":NaN}", ARN_MCP_E_PARSE},
	    {"{\"a\":1}/*c*/", ARN_MCP_E_PARSE},
	    {"{\"a\":1}\x01", ARN_MCP_E_PARSE},
	    {"123", ARN_MCP_E_NOT_RPC},
	    {"\"ping\"", ARN_MCP_E_NOT_RPC},
	    {"null", ARN_MCP_E_NOT_RPC},
	    {"[]", ARN_MCP_E_BATCH_EMPTY},
	    {"{\"a\":18446744073709551616}", ARN_MCP_E_NUMBER_RANGE},
	    {"{\"a\":-9223372036854775809}", ARN_MCP_E_NUMBER_RANGE},
	    {"{\"a\":[100000000000000000000000]}", ARN_MCP_E_NUMBER_RANGE},
	    {"18446744073709551616", ARN_MCP_E_NUMBER_RANGE},
	    {"{\"a\":\"\\ud800\"}", ARN_MCP_E_PARSE},	     /* a lone high surrogate */
	    {"{\"a\":\"\\udc00\"}", ARN_MCP_E_PARSE},	     /* a lone low one */
	    {"{\"a\":\"\\ud800\\u0041\"}", ARN_MCP_E_PARSE}, /* high, then not low */
	    {"{\"a\":\"\\ud800x\"}", ARN_MCP_E_PARSE},
	    {"{\"a\":\"\\u12g4\"}", ARN_MCP_E_PARSE},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct arn_mcp_body b;
		enum arn_mcp_err e = mt_parse(cases[i].s, true, NULL, &b);
		if (e != cases[i].e)
			fail_msg("case %zu (%s): got %s, want %s", i, cases[i].s,
				 arn_mcp_err_name(e), arn_mcp_err_name(cases[i].e));
		assert_null(b.root);
	}
	assert_int_equal(arn_mcp_err_code(ARN_MCP_E_PARSE), -32700);
	assert_int_equal(arn_mcp_err_status(ARN_MCP_E_PARSE), 400);
	assert_int_equal(arn_mcp_err_status(ARN_MCP_E_TOO_LARGE), 413);
	/* trailing whitespace is fine */
	struct arn_mcp_body b;
	assert_int_equal(
	    mt_parse("\r\n {\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":1} \n", true, NULL, &b),
	    ARN_MCP_E_NONE);
	arn_mcp_body_release(&b);
}

/* Batches: JSON-RPC's, allowed by 2024-11-05 and 2025-03-26 only. A bad
 * element is its own error; the others stand. */
static void test_batches(void **state)
{
	(void)state;
	const char *s = "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},"
			"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"},"
			"1,"
			"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"frobnicate\"}]";
	struct arn_mcp_body b;
	assert_int_equal(mt_parse(s, true, NULL, &b), ARN_MCP_E_NONE);
	assert_true(b.batch);
	assert_int_equal(b.n, 4);
	assert_int_equal(b.msgs[0].method, ARN_MCP_M_PING);
	assert_int_equal(b.msgs[1].kind, ARN_MCP_NOTIFICATION);
	assert_int_equal(b.msgs[2].err, ARN_MCP_E_INVALID);
	assert_null(b.msgs[2].id);
	assert_int_equal(b.msgs[3].err, ARN_MCP_E_NONE);
	assert_int_equal(b.msgs[3].method, ARN_MCP_M_OTHER);
	arn_mcp_body_release(&b);
	assert_int_equal(mt_parse(s, false, NULL, &b), ARN_MCP_E_BATCH_REFUSED);

	struct arn_mcp_limits lim = {.max_batch = 3};
	assert_int_equal(mt_parse(s, true, &lim, &b), ARN_MCP_E_BATCH_TOO_LONG);
	lim.max_batch = 4;
	assert_int_equal(mt_parse(s, true, &lim, &b), ARN_MCP_E_NONE);
	arn_mcp_body_release(&b);
}

/* The limits are counted before json-c allocates: bytes, nesting,
 * containers and values, each refused with its own error. */
static void test_limits_counted(void **state)
{
	(void)state;
	struct arn_mcp_body b;
	const char *ping = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"; /* 40 bytes */
	struct arn_mcp_limits lim = {.max_message_bytes = 40};
	assert_int_equal(mt_parse(ping, false, &lim, &b), ARN_MCP_E_NONE);
	arn_mcp_body_release(&b);
	lim.max_message_bytes = 39;
	assert_int_equal(mt_parse(ping, false, &lim, &b), ARN_MCP_E_TOO_LARGE);

	/* depth 4 allowed, 5 refused */
	lim = (struct arn_mcp_limits){.max_depth = 4};
	const char *d4 = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"a\":[[1]]}}";
	const char *d5 =
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"a\":[[{}]]}}";
	assert_int_equal(mt_parse(d4, false, &lim, &b), ARN_MCP_E_NONE);
	arn_mcp_body_release(&b);
	assert_int_equal(mt_parse(d5, false, &lim, &b), ARN_MCP_E_TOO_DEEP);
	/* brackets inside strings are not nesting */
	assert_int_equal(
	    mt_parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"a\":"
		     "\"[[[[[{{{{\\\"]]\"}}",
		     false, &lim, &b),
	    ARN_MCP_E_NONE);
	arn_mcp_body_release(&b);

	/* containers: the message and params are 2; a third is refused */
	lim = (struct arn_mcp_limits){.max_containers = 2};
	assert_int_equal(mt_parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{}}",
				  false, &lim, &b),
			 ARN_MCP_E_NONE);
	arn_mcp_body_release(&b);
	assert_int_equal(
	    mt_parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"a\":[]}}", false,
		     &lim, &b),
	    ARN_MCP_E_TOO_MANY_VALUES);

	/* values: {"jsonrpc":"2.0","id":1,"method":"x","params":{"a":[true,-1,null]}}
	 * is 1 + 2+2+2 + 1+1 + 1+1 + 3 = 14 (keys count: json-c allocates them) */
	const char *v14 =
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"a\":[true,-1,null]}}";
	lim = (struct arn_mcp_limits){.max_values = 14};
	assert_int_equal(mt_parse(v14, false, &lim, &b), ARN_MCP_E_NONE);
	arn_mcp_body_release(&b);
	lim.max_values = 13;
	assert_int_equal(mt_parse(v14, false, &lim, &b), ARN_MCP_E_TOO_MANY_VALUES);

	/* a refusal is sticky and takes nothing more */
	struct arn_mcp_reader r;
	lim = (struct arn_mcp_limits){.max_message_bytes = 4};
	assert_int_equal(arn_mcp_reader_init(&r, &lim), 0);
	assert_int_equal(arn_mcp_reader_feed(&r, "{\"a\"", 4), ARN_AGAIN);
	assert_int_equal(arn_mcp_reader_feed(&r, ":", 1), ARN_MCP_E_TOO_LARGE);
	assert_int_equal(arn_mcp_reader_feed(&r, "", 0), ARN_MCP_E_TOO_LARGE);
	assert_int_equal(arn_mcp_reader_finish(&r, false, &b), ARN_MCP_E_TOO_LARGE);
	arn_mcp_reader_fini(&r);

	/* defaults */
	lim = (struct arn_mcp_limits){0};
	arn_mcp_limits_resolve(&lim);
	assert_int_equal(lim.max_message_bytes, 1u << 20);
	assert_int_equal(lim.max_batch, 64);
	assert_int_equal(lim.max_depth, 32);
	assert_int_equal(lim.max_tools, 4096);
	lim = (struct arn_mcp_limits){.max_batch = 1000, .max_depth = 1000};
	arn_mcp_limits_resolve(&lim);
	assert_int_equal(lim.max_batch, ARN_MCP_MAX_BATCH);
	assert_int_equal(lim.max_depth, ARN_MCP_MAX_DEPTH);
}

/* Segments split anywhere (inside strings, escapes, numbers, UTF-8
 * sequences) read the same as the whole. */
static void test_split_anywhere(void **state)
{
	(void)state;
	const char *s =
	    "{\"jsonrpc\":\"2.0\",\"id\":\"r\\\"1\",\"method\":\"tools/call\",\"params\":"
	    "{\"name\":\"caf\xc3\xa9\",\"arguments\":{\"n\":-12.5e3,\"ok\":false}}}";
	size_t n = strlen(s);
	for (size_t cut = 0; cut <= n; cut++) {
		struct arn_mcp_reader r;
		struct arn_mcp_body b;
		assert_int_equal(arn_mcp_reader_init(&r, NULL), 0);
		assert_int_equal(arn_mcp_reader_feed(&r, s, cut), ARN_AGAIN);
		assert_int_equal(arn_mcp_reader_feed(&r, s + cut, n - cut), ARN_AGAIN);
		assert_int_equal(arn_mcp_reader_finish(&r, false, &b), ARN_MCP_E_NONE);
		assert_string_equal(json_object_get_string(b.msgs[0].id), "r\"1");
		struct json_object *name;
		assert_true(json_object_object_get_ex(b.msgs[0].params, "name", &name));
		assert_string_equal(json_object_get_string(name), "caf\xc3\xa9");
		arn_mcp_body_release(&b);
		arn_mcp_reader_fini(&r);
	}
}

/* Duplicate keys: the last wins, and what the gateway sends on is
 * serialised from what it read, so the backend sees the same value. */
/* Integers json-c holds exactly pass unchanged, to the last one; doubles
 * keep their text; escapes become the same characters (surrogate pairs
 * joined). */
static void test_values_unchanged(void **state)
{
	(void)state;
	const char *s =
	    "{\"jsonrpc\":\"2.0\",\"id\":9223372036854775807,\"method\":\"x\",\"params\":"
	    "{\"a\":[18446744073709551615,-9223372036854775808,1e400,0.10000000000000001],"
	    "\"s\":\"\\u0000\\ud83d\\ude00\\uD83D\\uDE00\"}}";
	struct arn_mcp_body b;
	assert_int_equal(mt_parse(s, false, NULL, &b), ARN_MCP_E_NONE);
	/* the numbers come out as they came in */
	struct json_object *arr;
	json_object_object_get_ex(b.msgs[0].params, "a", &arr);
	assert_string_equal(
	    mt_text(arr), "[18446744073709551615,-9223372036854775808,1e400,0.10000000000000001]");
	assert_string_equal(mt_text(b.msgs[0].id), "9223372036854775807");
	/* the escapes come out as UTF-8, the same characters */
	struct json_object *str;
	json_object_object_get_ex(b.msgs[0].params, "s", &str);
	assert_int_equal(json_object_get_string_len(str), 9);
	assert_memory_equal(json_object_get_string(str), "\0\xf0\x9f\x98\x80\xf0\x9f\x98\x80", 9);
	arn_mcp_body_release(&b);
}

static void test_duplicate_keys_resolved_once(void **state)
{
	(void)state;
	struct arn_mcp_body b;
	assert_int_equal(
	    mt_parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
		     "{\"name\":\"safe\",\"name\":\"evil\"}}",
		     false, NULL, &b),
	    ARN_MCP_E_NONE);
	const char *t = mt_text(b.msgs[0].params);
	assert_string_equal(t, "{\"name\":\"evil\"}");
	arn_mcp_body_release(&b);
}

/* ---- building --------------------------------------------------------------------- */

static void test_answers_built(void **state)
{
	(void)state;
	struct json_object *id = json_object_new_int(3);
	struct json_object *res = json_object_new_object();
	struct json_object *o = arn_mcp_new_result(id, res);
	assert_string_equal(mt_text(o), "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}");
	json_object_put(o);

	o = arn_mcp_new_error(id, ARN_MCP_E_UNKNOWN_TOOL, "'gh__nope'");
	assert_string_equal(mt_text(o), "{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":-32602,"
					"\"message\":\"Unknown tool: 'gh__nope'\"}}");
	json_object_put(o);
	o = arn_mcp_new_error(NULL, ARN_MCP_E_PARSE, NULL);
	assert_string_equal(mt_text(o),
			    "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,"
			    "\"message\":\"Parse error: the body is not valid JSON\"}}");
	json_object_put(o);

	o = arn_mcp_new_request(id, "tools/list", res);
	assert_string_equal(
	    mt_text(o), "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\",\"params\":{}}");
	json_object_put(o);
	o = arn_mcp_new_request(NULL, "notifications/tools/list_changed", NULL);
	assert_string_equal(mt_text(o), "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/"
					"list_changed\"}");
	json_object_put(o);
	json_object_put(res);
	json_object_put(id);

	/* every error has a name, a code in JSON-RPC's ranges and a status */
	for (int e = 1; e < ARN_MCP_E_COUNT; e++) {
		int c = arn_mcp_err_code((enum arn_mcp_err)e);
		assert_true((c >= -32700 && c <= -32600) || (c >= -32099 && c <= -32000));
		assert_true(arn_mcp_err_status((enum arn_mcp_err)e) >= 200);
		assert_true(strlen(arn_mcp_err_name((enum arn_mcp_err)e)) > 0);
	}
	assert_string_equal(arn_mcp_err_text(ARN_MCP_E_UNKNOWN_TOOL),
			    arn_mcp_err_text(ARN_MCP_E_FORBIDDEN_TOOL));
	assert_int_equal(arn_mcp_method_lookup("tools/list", 10), ARN_MCP_M_TOOLS_LIST);
	assert_int_equal(arn_mcp_method_lookup("tools/lis", 9), ARN_MCP_M_OTHER);
	assert_int_equal(arn_mcp_method_kind(ARN_MCP_M_PROMPTS_LIST), ARN_MCP_MK_PRIM);
	assert_int_equal(arn_mcp_method_kind(ARN_MCP_M_COMPLETION_COMPLETE), ARN_MCP_MK_REFUSED);
}

const struct CMUnitTest mt_jsonrpc_tests[] = {
    cmocka_unit_test(test_request_decoded),
    cmocka_unit_test(test_notification_result_error_decoded),
    cmocka_unit_test(test_invalid_messages),
    cmocka_unit_test(test_bodies_refused),
    cmocka_unit_test(test_batches),
    cmocka_unit_test(test_limits_counted),
    cmocka_unit_test(test_split_anywhere),
    cmocka_unit_test(test_values_unchanged),
    cmocka_unit_test(test_duplicate_keys_resolved_once),
    cmocka_unit_test(test_answers_built),
};
const size_t mt_jsonrpc_n = sizeof(mt_jsonrpc_tests) / sizeof(mt_jsonrpc_tests[0]);
