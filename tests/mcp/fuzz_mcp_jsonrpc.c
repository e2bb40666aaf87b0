/*
 * libFuzzer: arbitrary bytes as an MCP request body through the JSON-RPC
 * reader, fed in segments whose sizes the first byte picks (as TCP would
 * cut them), then every message decoded and answered. Checks that the
 * segmented read agrees with the whole one and that what the gateway
 * would send on (its own serialisation) reads back the same.
 */
#include <json-c/json.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arn_mcp.h"

static enum arn_mcp_err segmented(const uint8_t *d, size_t n, size_t seg,
				  const struct arn_mcp_limits *lim, bool batch_ok,
				  struct arn_mcp_body *b)
{
	struct arn_mcp_reader r;
	if (arn_mcp_reader_init(&r, lim) < 0)
		abort();
	int rc = ARN_AGAIN;
	for (size_t off = 0; off < n && rc == ARN_AGAIN; off += seg)
		rc = arn_mcp_reader_feed(&r, (const char *)d + off, n - off < seg ? n - off : seg);
	enum arn_mcp_err e =
	    rc == ARN_AGAIN ? arn_mcp_reader_finish(&r, batch_ok, b) : (enum arn_mcp_err)rc;
	arn_mcp_reader_fini(&r);
	return e;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t seg = (data[0] & 0x3f) + 1;
	bool batch_ok = data[0] & 0x40;
	data++;
	size--;
	/* Small limits, so that the fuzzer reaches them. */
	struct arn_mcp_limits lim = {.max_message_bytes = 64 << 10,
				     .max_batch = 8,
				     .max_depth = 12,
				     .max_containers = 256,
				     .max_values = 1024};

	struct arn_mcp_body whole, part;
	enum arn_mcp_err e1 = arn_mcp_parse((const char *)data, size, &lim, batch_ok, &whole);
	enum arn_mcp_err e2 = segmented(data, size, seg, &lim, batch_ok, &part);
	/* A body with several faults may be refused for a different one
	 * depending on where segments end (the count sees bytes before json-c
	 * does); accepted or refused must not depend on it. */
	if ((e1 == ARN_MCP_E_NONE) != (e2 == ARN_MCP_E_NONE))
		abort();
	if (e1 != ARN_MCP_E_NONE)
		return 0;
	if (whole.n != part.n || whole.n == 0 || whole.n > lim.max_batch)
		abort();
	for (uint32_t i = 0; i < whole.n; i++) {
		const struct arn_mcp_msg *m = &whole.msgs[i];
		if (m->err != part.msgs[i].err || m->kind != part.msgs[i].kind)
			abort();
		/* A request gets a result; anything else an error (answering
		 * its id when readable, else null). */
		struct json_object *ans =
		    m->kind == ARN_MCP_REQUEST && !m->err
			? arn_mcp_new_result(m->id, m->params)
			: arn_mcp_new_error(m->id, m->err ? m->err : ARN_MCP_E_INVALID, "detail");
		size_t len;
		const char *t = arn_mcp_text(ans, &len);
		struct arn_mcp_body back;
		if (arn_mcp_parse(t, len, NULL, false, &back) != ARN_MCP_E_NONE ||
		    back.msgs[0].err != ARN_MCP_E_NONE)
			abort();
		arn_mcp_body_release(&back);
		json_object_put(ans);
	}
	/* What would go upstream reads back as the same messages. */
	size_t len;
	const char *t = arn_mcp_text(whole.root, &len);
	struct arn_mcp_body again;
	struct arn_mcp_limits big = {0};
	if (arn_mcp_parse(t, len, &big, true, &again) != ARN_MCP_E_NONE || again.n != whole.n ||
	    !json_object_equal(again.root, whole.root))
		abort();
	for (uint32_t i = 0; i < whole.n; i++)
		if (again.msgs[i].err != whole.msgs[i].err ||
		    again.msgs[i].kind != whole.msgs[i].kind ||
		    again.msgs[i].method != whole.msgs[i].method)
			abort();
	arn_mcp_body_release(&again);
	arn_mcp_body_release(&whole);
	arn_mcp_body_release(&part);
	return 0;
}
