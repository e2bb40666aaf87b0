/*
 * lib/common's small shared pieces: the hex digit decoder (arn_hex.h) and
 * the HTTP reason phrases (arn_http_reason.h), which the JSON parser, the
 * admin endpoint and the HTTP/1 codec all rely on.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "arn_hex.h"
#include "arn_http_reason.h"
#include "arn_json.h"

/* Every byte: the 22 hex digits of either case have their value, nothing
 * else is a digit (no sign, space, 'g' or high byte slips through). */
static void test_hexval_every_byte(void **state)
{
	(void)state;
	int digits = 0;
	for (int c = 0; c < 256; c++) {
		int v = arn_hexval((char)c);
		if (c >= '0' && c <= '9')
			assert_int_equal(v, c - '0');
		else if (c >= 'a' && c <= 'f')
			assert_int_equal(v, c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			assert_int_equal(v, c - 'A' + 10);
		else
			assert_int_equal(v, -1);
		digits += v >= 0;
	}
	assert_int_equal(digits, 22);
}

/* The JSON parser decodes \u escapes through it, in either case, and
 * refuses a non-digit in one. */
static void test_json_unicode_escape(void **state)
{
	(void)state;
	static const char in[] = "[\"\\u00e9\\u00C9\"]";
	struct arn_json *j = arn_json_parse(in, strlen(in));
	assert_non_null(j);
	assert_int_equal(j->type, ARN_JSON_ARRAY);
	assert_int_equal(j->n, 1);
	assert_string_equal(j->v[0]->str, "\xc3\xa9\xc3\x89");
	arn_json_free(j);
	static const char bad[] = "[\"\\u00g9\"]";
	assert_null(arn_json_parse(bad, strlen(bad)));
}

static void test_reason_phrases(void **state)
{
	(void)state;
	static const struct {
		unsigned status;
		const char *reason;
	} want[] = {
	    {100, "Continue"},
	    {200, "OK"},
	    {204, "No Content"},
	    {301, "Moved Permanently"},
	    {304, "Not Modified"},
	    {400, "Bad Request"},
	    {404, "Not Found"},
	    {405, "Method Not Allowed"},
	    {408, "Request Timeout"},
	    {411, "Length Required"},
	    {413, "Payload Too Large"},
	    {414, "URI Too Long"},
	    {421, "Misdirected Request"},
	    {429, "Too Many Requests"},
	    {431, "Request Header Fields Too Large"},
	    {500, "Internal Server Error"},
	    {501, "Not Implemented"},
	    {502, "Bad Gateway"},
	    {503, "Service Unavailable"},
	    {504, "Gateway Timeout"},
	    {505, "HTTP Version Not Supported"},
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		assert_string_equal(arn_http_reason(want[i].status), want[i].reason);
	/* a code without a registered phrase, and what is no status at all */
	assert_string_equal(arn_http_reason(299), "Unknown");
	assert_string_equal(arn_http_reason(0), "Unknown");
	assert_string_equal(arn_http_reason(1000), "Unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hexval_every_byte),
	    cmocka_unit_test(test_json_unicode_escape),
	    cmocka_unit_test(test_reason_phrases),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
