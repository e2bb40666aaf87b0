/* lib/mcp's unit tests: one executable, one group per file. */
#include "mcp_test.h"

int main(void)
{
	int fails = 0;
	fails += _cmocka_run_group_tests("jsonrpc", mt_jsonrpc_tests, mt_jsonrpc_n, NULL, NULL);
	fails += _cmocka_run_group_tests("session", mt_session_tests, mt_session_n, NULL, NULL);
	fails += _cmocka_run_group_tests("tools", mt_tools_tests, mt_tools_n, NULL, NULL);
	fails += _cmocka_run_group_tests("sse", mt_sse_tests, mt_sse_n, NULL, NULL);
	fails += _cmocka_run_group_tests("dispatch", mt_dispatch_tests, mt_dispatch_n, NULL, NULL);
	fails += _cmocka_run_group_tests("upstream", mt_upstream_tests, mt_upstream_n, NULL, NULL);
	fails += _cmocka_run_group_tests("fanout", mt_fanout_tests, mt_fanout_n, NULL, NULL);
	fails += _cmocka_run_group_tests("flow", mt_flow_tests, mt_flow_n, NULL, NULL);
	fails += _cmocka_run_group_tests("era", mt_era_tests, mt_era_n, NULL, NULL);
	fails += _cmocka_run_group_tests("prim", mt_prim_tests, mt_prim_n, NULL, NULL);
	return fails;
}
