/*
 * lib/tls unit tests: one cmocka executable, two groups (test_hello.c:
 * ClientHello inspection and server names; test_conn.c: contexts and
 * connections). OpenSSL's allocations are counted from the first one
 * (arn_tls_mem_init before anything else) so that test_conn.c can measure
 * what a connection costs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "arn_tls.h"
#include "tests.h"
#include "tls_harness.h"

int main(void)
{
	if (arn_tls_mem_init() != 0)
		fprintf(stderr, "test_tls: OpenSSL allocated before main: not measuring memory\n");
	int failed = _cmocka_run_group_tests("hello", hello_tests, n_hello_tests, NULL, NULL);
	failed += _cmocka_run_group_tests("conn", conn_tests, n_conn_tests, NULL, NULL);
	tt_pki_free();
	arn_tls_reclaim();
	return failed;
}
