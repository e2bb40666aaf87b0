/*
 * envoy.filters.http.api_key_auth's ApiKeyAuth and ApiKeyAuthPerRoute ->
 * struct arn_cfg_api_key_auth, as Envoy's ApiKeyAuthConfig reads them
 * (the newest api_key_auth.h/.cc stored for envoyproxy/envoy, with Forwarding and
 * creation_status): credentials keyed by their key ("Duplicate API key."),
 * key sources each with one of header / query / cookie ("One of
 * 'header'/'query'/'cookie' must be set.", the first set wins), forwarding.
 * The keys are sorted by their SHA-256 for the data path's lookup
 * (http_apikey.c: a request's key is hashed, the digest searched, the key
 * itself compared with CRYPTO_memcmp).
 *
 * envoy.filters.http.credential_injector's CredentialInjector with
 * envoy.http.injected_credentials.generic -> struct arn_cfg_cred_injector.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "arn_config_apikey.h"
#include "arn_proto.h"
#include "config_int.h"

#define CI_GENERIC_TYPE "envoy.extensions.http.injected_credentials.generic.v3.Generic"
#define CI_OAUTH2_TYPE "envoy.extensions.http.injected_credentials.oauth2.v3.OAuth2"

static int ak_cred_cmp(const void *a, const void *b)
{
	const struct arn_cfg_api_key_cred *x = a, *y = b;
	int k = memcmp(x->digest, y->digest, ARN_CFG_API_KEY_DIGEST);
	if (k)
		return k;
	if (x->key_len != y->key_len)
		return x->key_len < y->key_len ? -1 : 1;
	return memcmp(x->key, y->key, x->key_len);
}

static void ak_credentials(struct conv *c, struct pb p, struct arn_cfg_api_key_creds *out)
{
	size_t n = pb_len(p, "credentials");
	if (n == 0)
		return;
	if (n > ARN_CFG_API_KEY_MAX_CREDENTIALS) {
		conv_err(c, "credentials", "%zu entries: more than Arion's bound (%d)", n,
			 ARN_CFG_API_KEY_MAX_CREDENTIALS);
		return;
	}
	struct arn_cfg_api_key_cred *v = CONV_NEW(c, struct arn_cfg_api_key_cred, n);
	if (!v)
		return;
	bool bad = false;
	for (size_t i = 0; i < n; i++) {
		struct pb e = pb_at(p, "credentials", i);
		size_t m = conv_push(c, "credentials[%zu]", i);
		conv_only(c, e, "key,client");
		upb_StringView k = pb_str(e, "key"), cl = pb_str(e, "client");
		/* Envoy's validation: min_len 1 for both */
		if (k.size == 0) {
			conv_err(c, "key", "empty (Envoy: min_len 1)");
			bad = true;
		} else if (k.size > ARN_CFG_API_KEY_MAX_KEY) {
			conv_err(c, "key", "%zu bytes: longer than Arion's bound (%d)", k.size,
				 ARN_CFG_API_KEY_MAX_KEY);
			bad = true;
		}
		if (cl.size == 0) {
			conv_err(c, "client", "empty (Envoy: min_len 1)");
			bad = true;
		} else if (cl.size > ARN_CFG_API_KEY_MAX_CLIENT) {
			conv_err(c, "client", "%zu bytes: longer than Arion's bound (%d)", cl.size,
				 ARN_CFG_API_KEY_MAX_CLIENT);
			bad = true;
		}
		/* the client may go upstream as a header value */
		const char *cs = cl.size ? conv_hdr_str(c, "client", cl) : NULL;
		const char *ks = k.size ? conv_str(c, k) : NULL;
		if (!bad && (!cs || !ks))
			bad = true;
		if (!bad) {
			v[i].key = ks;
			v[i].key_len = (uint32_t)k.size;
			v[i].client = cs;
			v[i].client_len = (uint32_t)cl.size;
			unsigned int dl = 0;
			if (!EVP_Digest(k.data, k.size, v[i].digest, &dl, EVP_sha256(), NULL) ||
			    dl != ARN_CFG_API_KEY_DIGEST) {
				conv_err(c, "key", "SHA-256 failed");
				bad = true;
			}
		}
		conv_pop(c, m);
	}
	if (bad)
		return;
	qsort(v, n, sizeof(*v), ak_cred_cmp);
	for (size_t i = 1; i < n; i++)
		if (ak_cred_cmp(&v[i - 1], &v[i]) == 0) {
			/* Envoy's error (its map is keyed by the key) */
			conv_err(c, "credentials", "Duplicate API key.");
			return;
		}
	out->v = v;
	out->n = n;
}

static void ak_sources(struct conv *c, struct pb p, struct arn_cfg_api_key_sources *out)
{
	size_t n = pb_len(p, "key_sources");
	if (n == 0)
		return;
	if (n > ARN_CFG_API_KEY_MAX_SOURCES) {
		conv_err(c, "key_sources", "%zu entries: more than Arion's bound (%d)", n,
			 ARN_CFG_API_KEY_MAX_SOURCES);
		return;
	}
	struct arn_cfg_api_key_source *v = CONV_NEW(c, struct arn_cfg_api_key_source, n);
	if (!v)
		return;
	for (size_t i = 0; i < n; i++) {
		struct pb e = pb_at(p, "key_sources", i);
		size_t m = conv_push(c, "key_sources[%zu]", i);
		conv_only(c, e, "header,query,cookie");
		upb_StringView h = pb_str(e, "header"), q = pb_str(e, "query"),
			       ck = pb_str(e, "cookie");
		size_t len = 0;
		/* Envoy's KeySources::Source: header, else query, else cookie */
		if (h.size) {
			v[i].kind = ARN_CFG_AK_HEADER;
			if (h.size > ARN_CFG_API_KEY_MAX_NAME)
				conv_err(c, "header", "longer than %d bytes (Envoy's max_len)",
					 ARN_CFG_API_KEY_MAX_NAME);
			else
				v[i].name = conv_hdr_name(c, "header", h, &len);
		} else if (q.size) {
			v[i].kind = ARN_CFG_AK_QUERY;
			if (q.size > ARN_CFG_API_KEY_MAX_NAME)
				conv_err(c, "query", "longer than %d bytes (Envoy's max_len)",
					 ARN_CFG_API_KEY_MAX_NAME);
			else
				v[i].name = conv_str(c, q);
			len = q.size;
		} else if (ck.size) {
			v[i].kind = ARN_CFG_AK_COOKIE;
			if (cookie_octets_ok(c, "cookie", ck, true, ARN_CFG_API_KEY_MAX_NAME))
				v[i].name = conv_str(c, ck);
			len = ck.size;
		} else {
			conv_err(c, "", "One of 'header'/'query'/'cookie' must be set.");
		}
		v[i].name_len = (uint32_t)len;
		conv_pop(c, m);
	}
	out->v = v;
	out->n = n;
}

/* A header Arion sets on the upstream request from the configuration:
 * never one that frames or routes it (as basic_auth's). */
static const char *ak_fwd_header(struct conv *c, upb_StringView s, size_t *len, const char *what)
{
	const char *h = conv_hdr_name(c, "header", s, len);
	static const char *const framing[] = {"content-length", "transfer-encoding", "host",
					      "connection",	"upgrade",	     "te"};
	for (size_t i = 0; h && i < sizeof(framing) / sizeof(framing[0]); i++)
		if (strcmp(h, framing[i]) == 0)
			conv_err(c, "header",
				 "'%s' frames or routes the request: Arion does not let %s set it",
				 h, what);
	return h;
}

static void ak_forwarding(struct conv *c, struct pb p, struct arn_cfg_api_key_auth *o)
{
	struct pb f = pb_msg(p, "forwarding");
	if (!f.m)
		return;
	size_t m = conv_push(c, "forwarding");
	conv_only(c, f, "header,hide_credentials");
	o->fwd.present = true;
	o->fwd.hide = pb_bool(f, "hide_credentials");
	upb_StringView h = pb_str(f, "header");
	if (h.size > ARN_CFG_API_KEY_MAX_NAME) {
		conv_err(c, "header", "longer than %d bytes (Envoy's max_len)",
			 ARN_CFG_API_KEY_MAX_NAME);
	} else if (h.size) {
		size_t len = 0;
		o->fwd.header = ak_fwd_header(c, h, &len, "a client id");
		o->fwd.header_len = (uint32_t)len;
	}
	conv_pop(c, m);
}

static int ak_client_cmp(const void *a, const void *b)
{
	const struct arn_cfg_api_key_client *x = a, *y = b;
	return arn_cfg_api_key_client_cmp(x->name, x->len, y->name, y->len);
}

static struct arn_cfg_api_key_auth *ak_common(struct conv *c, struct pb p)
{
	struct arn_cfg_api_key_auth *o = CONV_NEW(c, struct arn_cfg_api_key_auth, 1);
	if (!o)
		return NULL;
	ak_credentials(c, p, &o->creds);
	ak_sources(c, p, &o->sources);
	ak_forwarding(c, p, o);
	return o;
}

const struct arn_cfg_api_key_auth *conv_api_key_auth(struct conv *c, struct pb p)
{
	conv_only(c, p, "credentials,key_sources,forwarding");
	return ak_common(c, p);
}

const struct arn_cfg_api_key_auth *conv_api_key_auth_route(struct conv *c, struct pb p)
{
	conv_only(c, p, "credentials,key_sources,allowed_clients,forwarding");
	struct arn_cfg_api_key_auth *o = ak_common(c, p);
	size_t n = pb_len(p, "allowed_clients");
	if (!o || n == 0)
		return o;
	if (n > ARN_CFG_API_KEY_MAX_ALLOWED) {
		conv_err(c, "allowed_clients", "%zu entries: more than Arion's bound (%d)", n,
			 ARN_CFG_API_KEY_MAX_ALLOWED);
		return o;
	}
	struct arn_cfg_api_key_client *v = CONV_NEW(c, struct arn_cfg_api_key_client, n);
	if (!v)
		return o;
	for (size_t i = 0; i < n; i++) {
		upb_StringView s = pb_str_at(p, "allowed_clients", i);
		v[i].name = conv_str(c, s);
		v[i].len = s.size;
	}
	qsort(v, n, sizeof(*v), ak_client_cmp);
	o->allowed = v;
	o->n_allowed = n;
	return o;
}

/* envoy.http.injected_credentials.generic's Generic into @p o. */
static void ci_generic(struct conv *c, struct pb g, struct arn_cfg_cred_injector *o)
{
	conv_only(c, g, "credential,header");
	upb_StringView h = pb_str(g, "header");
	size_t len = 13;
	o->header = "authorization"; /* Envoy's default */
	if (h.size) {
		o->header = ak_fwd_header(c, h, &len, "a credential");
		if (o->header && (strcmp(o->header, "cookie") == 0 || o->header[0] == ':'))
			conv_err(c, "header", "'%s' is not a header a credential goes in",
				 o->header);
	}
	o->header_len = (uint32_t)len;
	/* an SDS generic_secret by name, a warming dependency: the listener
	 * waits for it (http_apikey.c's cred_value reads its bytes) */
	conv_sds_secret(c, pb_msg(g, "credential"), "credential", &o->secret);
}

const struct arn_cfg_cred_injector *conv_cred_injector(struct conv *c, struct pb p)
{
	conv_only(c, p, "overwrite,allow_request_without_credential,credential");
	struct arn_cfg_cred_injector *o = CONV_NEW(c, struct arn_cfg_cred_injector, 1);
	if (!o)
		return NULL;
	o->overwrite = pb_bool(p, "overwrite");
	o->allow_without = pb_bool(p, "allow_request_without_credential");
	struct pb tec = pb_msg(p, "credential");
	if (!tec.m) {
		conv_err(c, "credential", "missing (Envoy requires it)");
		return o;
	}
	size_t m = conv_push(c, "credential");
	conv_only(c, tec, "name,typed_config");
	struct pb any = pb_msg(tec, "typed_config");
	upb_StringView tn = any.m ? arn_proto_any_type_name(any.m) : (upb_StringView){"", 0};
	if (!any.m) {
		conv_err(c, "typed_config", "missing");
	} else if (arn_sv_eq(tn, CI_GENERIC_TYPE)) {
		size_t m2 = conv_push(c, "typed_config");
		struct pb g = conv_any(c, any, CI_GENERIC_TYPE);
		if (g.m)
			ci_generic(c, g, o);
		conv_pop(c, m2);
	} else if (arn_sv_eq(tn, CI_OAUTH2_TYPE)) {
		conv_err(c, "typed_config",
			 "envoy.http.injected_credentials.oauth2 (OAuth2 client credentials) is "
			 "not supported by Arion: use envoy.http.injected_credentials.generic");
	} else {
		conv_err(c, "typed_config",
			 "credential type '%.*s' is not supported by Arion (its "
			 "envoy.http.injected_credentials.generic is)",
			 (int)tn.size, tn.data);
	}
	conv_pop(c, m);
	return o;
}
