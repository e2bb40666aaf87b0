/*
 * envoy.filters.http.api_key_auth (ApiKeyAuth, ApiKeyAuthPerRoute) and
 * envoy.filters.http.credential_injector (CredentialInjector with the
 * envoy.http.injected_credentials.generic credential), as converted
 * (conv_apikey.c) for the data path (http_apikey.c). docs/http.md.
 *
 * Ownership: everything here lives in the configuration's pool, read by
 * workers while the listener (or route table) that holds it is pinned.
 */
#ifndef ARN_CONFIG_APIKEY_H
#define ARN_CONFIG_APIKEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "arn_config_model.h"

/* Limits (docs/security.md) */
/* credentials of one ApiKeyAuth or ApiKeyAuthPerRoute */
#define ARN_CFG_API_KEY_MAX_CREDENTIALS 65536
/* bytes of a key (Envoy sets none; a longer presented key is unknown
 * without being decoded further) */
#define ARN_CFG_API_KEY_MAX_KEY 1024
/* bytes of a client id (it may go upstream as a header value) */
#define ARN_CFG_API_KEY_MAX_CLIENT 256
/* key sources of one message; allowed_clients of one route */
#define ARN_CFG_API_KEY_MAX_SOURCES 16
#define ARN_CFG_API_KEY_MAX_ALLOWED 1024
/* bytes of a source's header, query or cookie name (Envoy's max_len) */
#define ARN_CFG_API_KEY_MAX_NAME 1024
/* the SHA-256 a key is looked up by */
#define ARN_CFG_API_KEY_DIGEST 32

struct arn_cfg_api_key_cred {
	unsigned char digest[ARN_CFG_API_KEY_DIGEST]; /* SHA-256 of the key */
	const char *key;			      /* in the pool, not NUL-terminated */
	uint32_t key_len;
	uint32_t client_len;
	const char *client; /* in the pool, not NUL-terminated */
};

/* sorted by digest (memcmp): arn_cfg_api_key_find */
struct arn_cfg_api_key_creds {
	const struct arn_cfg_api_key_cred *v;
	size_t n;
};

enum arn_cfg_api_key_src_kind {
	ARN_CFG_AK_HEADER = 0, /* name lower cased */
	ARN_CFG_AK_QUERY,      /* the parameter's name as written (compared decoded) */
	ARN_CFG_AK_COOKIE,
};

struct arn_cfg_api_key_source {
	uint8_t kind; /* enum arn_cfg_api_key_src_kind */
	uint32_t name_len;
	const char *name;
};

struct arn_cfg_api_key_sources {
	const struct arn_cfg_api_key_source *v;
	size_t n; /* 0: not given (the filter's apply to a route) */
};

struct arn_cfg_api_key_fwd {
	bool present; /* the message had a forwarding */
	bool hide;    /* hide_credentials */
	uint32_t header_len;
	const char *header; /* lower case; NULL: none */
};

/* ApiKeyAuth; a route's ApiKeyAuthPerRoute adds allowed_clients. A level
 * with no credentials (n 0) or no key sources takes the filter's. */
struct arn_cfg_api_key_auth {
	struct arn_cfg_api_key_creds creds;
	struct arn_cfg_api_key_sources sources;
	struct arn_cfg_api_key_fwd fwd;
	/* ApiKeyAuthPerRoute only: sorted (length, then bytes); none: every
	 * authenticated client is allowed */
	const struct arn_cfg_api_key_client *allowed;
	size_t n_allowed;
};

struct arn_cfg_api_key_client {
	const char *name;
	size_t len;
};

/** The order allowed clients are sorted in (length, then bytes). */
static inline int arn_cfg_api_key_client_cmp(const char *a, size_t al, const char *b, size_t bl)
{
	if (al != bl)
		return al < bl ? -1 : 1;
	return memcmp(a, b, al);
}

/* ---------------------------------------------------------------------------
 * envoy.filters.http.credential_injector with the generic credential: the
 * secret's value goes into a header of every request (overwrite: replacing
 * the client's own). The secret is an SDS generic_secret by name, looked up
 * in the request's configuration generation (a rotated secret applies to
 * the next request): http_apikey.c's cred_value. Until the store holds
 * generic secrets, conv_apikey.c's ci_generic refuses the reference.
 */
#define ARN_CFG_CRED_MAX_VALUE 8192 /* bytes of the injected value */

struct arn_cfg_cred_injector {
	bool overwrite;
	bool allow_without; /* allow_request_without_credential */
	uint32_t header_len;
	const char *header;	   /* lower case: "authorization" by default */
	struct arn_cfg_ref secret; /* the SdsSecretConfig's name */
};

#endif
