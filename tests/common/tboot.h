/*
 * A bootstrap loaded from a string, for the C unit tests that feed
 * lib/bootstrap YAML (the loader's own tests, the contract rules, the
 * converters' static resources, the xDS client's options): the file is
 * always called "t.yaml", so refusals read "t.yaml:LINE:COL: ...".
 */
#ifndef TBOOT_H
#define TBOOT_H

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "arn_bootstrap.h"

/*
 * The start of a bootstrap with one static listener 'l' on
 * 198.18.0.2:80 whose one filter is an HttpConnectionManager, ending
 * after its "stat_prefix: x" line: append HCM fields indented by 18
 * spaces.
 */
#define TBOOT_LISTENER_HCM                                                                         \
	"envoy_bootstrap:\n"                                                                       \
	"  static_resources:\n"                                                                    \
	"    listeners:\n"                                                                         \
	"      - name: l\n"                                                                        \
	"        address: {socket_address: {address: 198.18.0.2, port_value: 80}}\n"               \
	"        filter_chains:\n"                                                                 \
	"          - filters:\n"                                                                   \
	"              - name: envoy.filters.network.http_connection_manager\n"                    \
	"                typed_config:\n"                                                          \
	"                  \"@type\": type.googleapis.com/envoy.extensions.filters."               \
	"network.http_connection_manager.v3.HttpConnectionManager\n"                               \
	"                  stat_prefix: x\n"

/** A loaded bootstrap and the loader's errors and warnings, reused across loads. */
struct tboot {
	struct arn_bootstrap *bs; /* owned; NULL when the last load failed */
	struct arn_sb err;	  /* the last load's errors (and warnings) */
};

/** Free what the last load left; @p t can be loaded into again. */
void tboot_reset(struct tboot *t);

/**
 * tboot_reset, then load @p yaml as "t.yaml" with @p ov (or NULL):
 * arn_bootstrap_load_buf's return, the bootstrap in t->bs, its text in t->err.
 */
int tboot_load(struct tboot *t, const char *yaml, const struct arn_bootstrap_overrides *ov);

/**
 * Load @p yaml as "t.yaml" with @p ov (or NULL), failing the test with the
 * loader's error if it does not load. The caller owns the bootstrap
 * (arn_bootstrap_free); warnings are dropped.
 */
struct arn_bootstrap *tboot_must_load(const char *yaml, const struct arn_bootstrap_overrides *ov);

/* @p rc (a load's, or a check's after it) must be 0; on failure the test
 * fails at the caller's line with t->err's text. */
#define TBOOT_ASSERT_OK(rc, t)                                                                     \
	do {                                                                                       \
		int rc_ = (rc);                                                                    \
		if (rc_ != 0)                                                                      \
			fail_msg("rc=%d:\n%s", rc_, arn_sb_cstr(&(t)->err));                       \
	} while (0)

/* @p rc must be -EINVAL with @p want (position and path included) in
 * t->err's text. */
#define TBOOT_ASSERT_REFUSED(rc, t, want)                                                          \
	do {                                                                                       \
		int rc_ = (rc);                                                                    \
		if (rc_ != -EINVAL || strstr(arn_sb_cstr(&(t)->err), (want)) == NULL)              \
			fail_msg("rc=%d, wanted error containing\n  %s\ngot\n%s", rc_, (want),     \
				 arn_sb_cstr(&(t)->err));                                          \
	} while (0)

#endif
