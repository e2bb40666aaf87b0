/* The groups of the lib/tls test executable (one cmocka executable). */
#ifndef TLS_TESTS_H
#define TLS_TESTS_H

#include <stddef.h>

struct CMUnitTest;
extern const struct CMUnitTest hello_tests[];
extern const size_t n_hello_tests;
extern const struct CMUnitTest conn_tests[];
extern const size_t n_conn_tests;

#endif
