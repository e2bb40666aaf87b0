/*
 * Helpers shared by the lib/config test files (one cmocka executable).
 */
#ifndef TC_H
#define TC_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "arn_config.h"
#include "tcert.h"
#include "tj.h"

#define L ARN_TYPE_URL_LISTENER
#define R ARN_TYPE_URL_ROUTE
#define C ARN_TYPE_URL_CLUSTER
#define E ARN_TYPE_URL_CLA
#define S ARN_TYPE_URL_SECRET
#define TDS ARN_TYPE_URL_TOOLSET

extern struct arn_config_store *st;
extern uint64_t fake_now;
/* The stores' clock in these tests: fake_now (ms). */
uint64_t tc_clock(void *ctx);

/* A fresh store with the fake clock (setup/teardown for every test). */
int tc_setup(void **state);
int tc_teardown(void **state);

/*
 * Apply one batch: @p json is a NULL-terminated list of JSON resources of
 * @p type (the name is read from the resource), @p removed a
 * NULL-terminated list of names (or NULL). The result stays in tc_res until
 * the next call.
 */
extern struct arn_config_result tc_res;
void tc_apply(const char *type, const char *const *json, const char *const *removed);
#define APPLY(type, ...) tc_apply((type), (const char *const[]){__VA_ARGS__, NULL}, NULL)
#define REMOVE(type, ...)                                                                          \
	tc_apply((type), (const char *const[]){NULL}, (const char *const[]){__VA_ARGS__, NULL})

/* One resource must fail with a message containing @p want (X15 refusal). */
void tc_refused(const char *type, const char *json, const char *want);
/* The batch must be accepted without error. */
void tc_ok(const char *type, const char *json);

/* Conversions */
const struct arn_cfg_gen *gen(void);
const struct arn_cfg_cluster *cluster(const char *name);
const struct arn_cfg_listener *listener(const char *name);
const struct arn_cfg_route_table *route_table(const char *name);
const struct arn_cfg_secret *secret(const char *name);
const struct arn_cfg_toolset *toolset(const char *name);

/* Pattern @p p compiled (arn_regex_compile), or the test fails with its error. */
struct arn_regex *tc_re(const char *p);

/*
 * A small PKI made at run time for the TLS conversions: a CA, two leaves
 * it issued (serial 42, and 43 with the must-staple extension), a CRL, OCSP
 * responses. PEM is JSON-escaped (for inline_string), DER is base64 (for
 * inline_bytes in JSON).
 */
struct tc_pki {
	char *ca;		 /* the CA's certificate */
	char *crl;		 /* a CRL of the CA revoking serial 7 */
	char *leaf, *leaf_key;	 /* serial 42 */
	char *ms, *ms_key;	 /* serial 43, must-staple */
	char *ocsp;		 /* base64: good, for serial 42 */
	char *ocsp_ms;		 /* for serial 43 */
	char *ocsp_other;	 /* for serial 99 */
	char *ocsp_two;		 /* for 42 and 43 */
	char *ocsp_trylater;	 /* status tryLater, no body */
	unsigned char *ocsp_der; /* the good one, as bytes */
	size_t ocsp_der_len;
};
void tc_make_pki(struct tc_pki *p);
void tc_free_pki(struct tc_pki *p);
/* A session_ticket_keys Secret @p name of @p n keys, key i @p lens[i]
 * bytes of the byte @p fill + i, inline_bytes (malloc'd; the caller frees). */
char *tc_ticket_keys_json(const char *name, const size_t *lens, size_t n, char fill);
/* Base64 of @p n bytes (malloc'd), as JSON carries bytes fields. */
char *tc_b64(const void *b, size_t n);

/* Test groups, defined by each file */
extern const struct CMUnitTest conv_tests[];
extern const size_t n_conv_tests;
extern const struct CMUnitTest conv_tls_tests[];
extern const size_t n_conv_tls_tests;
extern const struct CMUnitTest conv_tsm_tests[];
extern const size_t n_conv_tsm_tests;
extern const struct CMUnitTest conv_l4_tests[];
extern const size_t n_conv_l4_tests;
extern const struct CMUnitTest store_tests[];
extern const size_t n_store_tests;
extern const struct CMUnitTest match_tests[];
extern const size_t n_match_tests;
extern const struct CMUnitTest regex_tests[];
extern const size_t n_regex_tests;
extern const struct CMUnitTest stress_tests[];
extern const size_t n_stress_tests;
extern const struct CMUnitTest rules_tests[];
extern const size_t n_rules_tests;
extern const struct CMUnitTest toolset_tests[];
extern const size_t n_toolset_tests;
extern const struct CMUnitTest conv_apikey_tests[];
extern const size_t n_conv_apikey_tests;
extern const struct CMUnitTest conv_ext_proc_tests[];
extern const size_t n_conv_ext_proc_tests;
extern const struct CMUnitTest dns_tests[];
extern const size_t n_dns_tests;
extern const struct CMUnitTest conv_cresp_tests[];
extern const size_t n_conv_cresp_tests;
extern const struct CMUnitTest conv_buffer_tests[];
extern const size_t n_conv_buffer_tests;
extern const struct CMUnitTest conv_client_tests[];
extern const size_t n_conv_client_tests;
extern const struct CMUnitTest conv_lua_tests[];
extern const size_t n_conv_lua_tests;
extern const struct CMUnitTest conv_tracing_tests[];
extern const size_t n_conv_tracing_tests;

#define TC(f) cmocka_unit_test_setup_teardown(f, tc_setup, tc_teardown)

#endif
