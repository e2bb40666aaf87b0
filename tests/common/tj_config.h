/*
 * Applying JSON resources to a lib/config store as xDS would deliver them,
 * for the C unit tests of lib/config and of what reads its generations
 * (lib/admin's views, lib/http): each resource is parsed against Envoy's
 * message for @p type and encoded to the bytes a DeltaDiscoveryResponse
 * carries, named as the resource names itself.
 */
#ifndef TJ_CONFIG_H
#define TJ_CONFIG_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "arn_config.h"

/**
 * Apply one batch of @p type (a type URL, ARN_TYPE_URL_*) to @p st: the
 * NULL-terminated JSON resources @p json (or NULL: none), all at
 * @p version, and the NULL-terminated names @p removed (or NULL), with
 * arn_config_apply's @p flags. @p res is freed first, then holds the
 * result (the caller frees it at the end). At most 64 resources, names
 * under 256 bytes. Fails the test if a resource is not valid JSON for its
 * message or if arn_config_apply returns an error (a refused resource is
 * not an error: it is in @p res).
 */
void tj_apply(struct arn_config_store *st, const char *type, const char *version, unsigned flags,
	      const char *const *json, const char *const *removed, struct arn_config_result *res);

/**
 * Fail the test unless @p len bytes of JSON at @p json decode strictly
 * (upb's JSON decoder: no unknown or misspelt field, every Any of its
 * type) as the message @p msg_name ("envoy.admin.v3.Clusters"): what
 * Envoy's tooling would read. @p what names the document in the failure.
 */
void tj_assert_decodes(const char *json, size_t len, const char *msg_name, const char *what);

#endif
