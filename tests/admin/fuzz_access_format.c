/*
 * libFuzzer target: access log formats and filters, which come from the
 * control plane (a Listener's access_log) and so are hostile bytes too:
 * lib/accesslog's format compiler (arn_access_format_text, _json), the
 * formatter over a record whose header values are the input's own bytes,
 * and the filter's JSON reader (arn_access_filter_json).
 *
 * The first byte chooses: bit 0 a json_format (the rest split at NULs
 * into keys and values, at most 16 pairs) or a text format (the rest);
 * bit 1 omit_empty_values; bit 2 the rest read as a filter's JSON as
 * well. Checked on every format that compiles, at several line sizes:
 *   - the line is NUL-terminated where the return says, within the room;
 *   - a JSON line is one JSON object and a newline, whatever bytes the
 *     header values hold and wherever the room cuts it (members that do
 *     not fit are left out whole), with no more members than keys;
 *   - a text line that the room cut ends in "...\n".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arn_access_log.h"
#include "arn_json.h"
#include "arn_sb.h"

#define S(s)                                                                                       \
	{                                                                                          \
		s, sizeof(s) - 1                                                                   \
	}

static void check(bool ok, const char *what, const char *line)
{
	if (!ok) {
		fprintf(stderr, "fuzz_access_format: %s: '%s'\n", what, line ? line : "");
		abort();
	}
}

static void apply_all(const struct arn_access_format *f, const struct arn_access_record *r,
		      bool json, size_t n_keys)
{
	static const size_t caps[] = {1, 2, 3, 5, 8, 17, 64, 300, 8192};
	static char buf[8192];
	for (size_t k = 0; k < sizeof(caps) / sizeof(caps[0]); k++) {
		size_t cap = caps[k];
		memset(buf, 0x5a, cap);
		size_t n = arn_access_format_apply(f, r, buf, cap);
		check(n < cap, "longer than the room", NULL);
		check(buf[n] == '\0' && strlen(buf) == n, "not NUL-terminated at its length", buf);
		if (json && n) {
			check(n >= 3 && buf[n - 1] == '\n', "a JSON line without its newline", buf);
			struct arn_json *j = arn_json_parse(buf, n - 1);
			check(j != NULL, "a JSON line that is not JSON", buf);
			check(j->type == ARN_JSON_OBJECT && j->n <= n_keys,
			      "not one object of the keys", buf);
			arn_json_free(j);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 4096)
		return 0;
	uint8_t mode = data[0];
	const char *rest = (const char *)data + 1;
	size_t len = size - 1;
	/* the header values are the input's bytes (escaping and cuts), as the
	 * codecs pass them: never NUL, CR or LF (RFC 9110 5.5; both parsers
	 * refuse them) */
	char *val = malloc(len + 1);
	check(val != NULL, "out of memory", NULL);
	for (size_t i = 0; i < len; i++)
		val[i] = rest[i] == '\0' || rest[i] == '\r' || rest[i] == '\n' ? 'x' : rest[i];
	struct arn_access_header req[] = {
	    {S("user-agent"), {val, (uint32_t)len}},
	    {S("x-forwarded-for"), S("203.0.113.7")},
	    {S("x-request-id"), {val, (uint32_t)(len / 2)}},
	};
	struct arn_access_header resp[] = {{S("content-type"), {val, (uint32_t)(len / 3)}}};
	struct arn_access_record r = {
	    .start_time_us = 1460751420310123LL,
	    .duration_us = 12345,
	    .request_duration_us = 100,
	    .response_duration_us = 9000,
	    .response_tx_duration_us = UINT64_MAX,
	    .method = S("GET"),
	    .path = {val, (uint32_t)len},
	    .authority = S("example.com"),
	    .protocol = S("HTTP/1.1"),
	    .req_headers = req,
	    .n_req_headers = 3,
	    .resp_headers = resp,
	    .n_resp_headers = 1,
	    .resp_trailers = resp,
	    .n_resp_trailers = 1,
	    .response_code = 503,
	    .response_code_details = {val, (uint32_t)(len / 4)},
	    .connection_termination_details = {val, (uint32_t)(len / 5)},
	    .response_flags = ARN_RF_BIT(UPSTREAM_OVERFLOW) | ARN_RF_BIT(NO_ROUTE_FOUND),
	    .bytes_sent = 1024,
	    .downstream_remote = {0xc6120101, 51234},
	    .downstream_local = {0xc6120002, 80},
	    .upstream_host = {0xc612000a, 8080},
	    .upstream_cluster = S("web"),
	    .upstream_transport_failure_reason = {val, (uint32_t)(len / 5)},
	    .route_name = S("default"),
	    .connection_id = 17,
	    .upstream_request_attempt_count = 2,
	};
	char *text = malloc(len + 1);
	check(text != NULL, "out of memory", NULL);
	memcpy(text, rest, len);
	text[len] = '\0';
	struct arn_sb err = ARN_SB_INIT;
	struct arn_access_format *f = NULL;
	size_t n_keys = 0;
	if (mode & 1) {
		const char *keys[16], *vals[16];
		const char *p = text, *end = text + len;
		while (n_keys < 16 && p < end) {
			keys[n_keys] = p;
			p += strlen(p) + 1;
			vals[n_keys] = p < end ? p : "";
			p += p < end ? strlen(p) + 1 : 0;
			n_keys++;
		}
		f = arn_access_format_json(keys, vals, n_keys, &err);
	} else {
		f = arn_access_format_text(text, &err);
	}
	if (f) {
		arn_access_format_omit_empty(f, (mode & 2) != 0);
		apply_all(f, &r, mode & 1, n_keys);
		arn_access_format_free(f);
	} else {
		check(err.len > 0, "a refusal without a reason", text);
	}
	if (mode & 4) {
		arn_sb_reset(&err);
		struct arn_access_filter *af = arn_access_filter_json(rest, len, "fuzz", &err);
		check(af != NULL || err.len > 0, "a filter refused without a reason", text);
		if (af) /* evaluated too: header_filter walks the record's headers */
			(void)arn_access_filter_match(af, &r);
		arn_access_filter_free(af);
	}
	arn_sb_free(&err);
	free(text);
	free(val);
	return 0;
}
