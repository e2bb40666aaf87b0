/* Shared by lib/mcp's unit test files: cmocka and the helpers. */
#ifndef MCP_TEST_H
#define MCP_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "arn_mcp.h"

/* Parse @p s whole from before a guard page and one byte at a time; both
 * verdicts must agree. @return the whole parse's. */
enum arn_mcp_err mt_parse(const char *s, bool batch_ok, const struct arn_mcp_limits *lim,
			  struct arn_mcp_body *b);
/* @p o as compact JSON, owned by @p o. */
const char *mt_text(struct json_object *o);

extern const struct CMUnitTest mt_jsonrpc_tests[];
extern const size_t mt_jsonrpc_n;
extern const struct CMUnitTest mt_session_tests[];
extern const size_t mt_session_n;
extern const struct CMUnitTest mt_tools_tests[];
extern const size_t mt_tools_n;
extern const struct CMUnitTest mt_sse_tests[];
extern const size_t mt_sse_n;
extern const struct CMUnitTest mt_dispatch_tests[];
extern const size_t mt_dispatch_n;
extern const struct CMUnitTest mt_upstream_tests[];
extern const size_t mt_upstream_n;
extern const struct CMUnitTest mt_fanout_tests[];
extern const size_t mt_fanout_n;
extern const struct CMUnitTest mt_flow_tests[];
extern const size_t mt_flow_n;
extern const struct CMUnitTest mt_era_tests[];
extern const size_t mt_era_n;
extern const struct CMUnitTest mt_prim_tests[];
extern const size_t mt_prim_n;

#endif
