/*
 * Key material in lib/config: wiping what held it, redacting what is kept.
 *
 * A Secret's private key and password arrive as bytes (an xDS response, a
 * static resource) and are decoded into a upb arena, copied for OpenSSL,
 * and loaded into an EVP_PKEY, which is all that the model keeps (lib/tls
 * builds its contexts from it); session ticket keys are kept as bytes,
 * cleansed when the Secret is freed (conv_secret.c). Everything else that
 * held the bytes is cleansed before it is freed: the copies
 * (conv_secret.c), and the arenas
 * that the store decodes resources in, through an allocator that cleanses
 * every block on free (upb has no hook of its own). What the store keeps
 * for /config_dump is the resource with those fields replaced by
 * "[redacted]", so a dump cannot print them and the store does not hold
 * them for as long as the resource lives.
 *
 * Not reachable from here: the caller's bytes (lib/xds's response buffer
 * and its arena; the bootstrap's YAML text and arena for static_resources),
 * and OpenSSL's own buffers while it parses PEM.
 */
#include <errno.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "upb/collections.h"

#include "arn_proto.h"
#include "config_int.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ARN_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define ARN_ASAN 1
#endif
#ifdef ARN_ASAN
#include <sanitizer/asan_interface.h>
#endif

void (*arn_config_wipe_hook)(const void *p, size_t len, bool wiped);

void conv_wipe(void *p, size_t len)
{
	if (!p)
		return;
#ifdef ARN_ASAN
	/* an arena poisons the unused part of its blocks */
	ASAN_UNPOISON_MEMORY_REGION(p, len);
#endif
	if (arn_config_wipe_hook)
		arn_config_wipe_hook(p, len, false);
	OPENSSL_cleanse(p, len);
	if (arn_config_wipe_hook)
		arn_config_wipe_hook(p, len, true);
}

void conv_wipe_free(void *p, size_t len)
{
	if (!p)
		return;
	conv_wipe(p, len);
	free(p);
}

/* ---- an arena that cleanses its blocks ------------------------------------ */

/* Each block starts with its size (upb passes none on free). */
#define WIPE_HDR 16
_Static_assert(WIPE_HDR >= sizeof(size_t) && WIPE_HDR % alignof(max_align_t) == 0,
	       "block header keeps upb's alignment");

static void *wipe_allocfunc(upb_alloc *alloc, void *ptr, size_t oldsize, size_t size)
{
	(void)alloc;
	(void)oldsize;
	char *old = ptr ? (char *)ptr - WIPE_HDR : NULL;
	size_t had = old ? *(size_t *)old : 0;
	char *b = NULL;
	if (size) {
		if (size > SIZE_MAX - WIPE_HDR || !(b = malloc(WIPE_HDR + size)))
			return NULL; /* upb keeps the old block on failure */
		*(size_t *)b = size;
		if (old)
			memcpy(b + WIPE_HDR, ptr, had < size ? had : size);
	}
	if (old)
		conv_wipe_free(old, WIPE_HDR + had);
	return b ? b + WIPE_HDR : NULL;
}

static upb_alloc wipe_alloc = {wipe_allocfunc};

upb_Arena *conv_wipe_arena(void)
{
	return upb_Arena_Init(NULL, 0, &wipe_alloc);
}

/* ---- redaction -------------------------------------------------------------- */

#define DATASOURCE "envoy.config.core.v3.DataSource"
#define REDACTED "[redacted]"

const struct conv_cred_field conv_cred_fields[] = {
    /* ApiKeyAuth and ApiKeyAuthPerRoute: the API keys */
    {"envoy.extensions.filters.http.api_key_auth.v3.ApiKeyAuth",
     "envoy.extensions.filters.http.api_key_auth.v3.ApiKeyAuth", "credentials"},
    /* BasicAuth and BasicAuthPerRoute: the htpasswd users (their hashes) */
    {"envoy.extensions.filters.http.basic_auth.v3.BasicAuth",
     "envoy.extensions.filters.http.basic_auth.v3.BasicAuth", "users"},
    /* ExtAuthzPerRoute's check_settings: context_extensions */
    {"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz",
     "envoy.extensions.filters.http.ext_authz.v3.CheckSettings", "context_extensions"},
};
const size_t n_conv_cred_fields = sizeof(conv_cred_fields) / sizeof(conv_cred_fields[0]);

/* Envoy's sensitive fields (udpa.annotations.sensitive), by name as
 * lib/admin's JSON redaction has them. */
static bool sensitive(const upb_MessageDef *parent, const upb_FieldDef *f)
{
	const char *n = upb_FieldDef_Name(f);
	const char *pn = upb_MessageDef_FullName(parent);
	if (strcmp(n, "private_key") == 0 || strcmp(n, "password") == 0 ||
	    strcmp(n, "private_key_provider") == 0)
		return true;
	if (strcmp(n, "secret") == 0 &&
	    strcmp(pn, "envoy.extensions.transport_sockets.tls.v3.GenericSecret") == 0)
		return true;
	for (size_t i = 0; i < n_conv_cred_fields; i++)
		if (strcmp(n, conv_cred_fields[i].field) == 0 &&
		    strncmp(pn, conv_cred_fields[i].message, strlen(conv_cred_fields[i].message)) ==
			0)
			return true;
	return strcmp(n, "keys") == 0 &&
	       strcmp(pn, "envoy.extensions.transport_sockets.tls.v3.TlsSessionTicketKeys") == 0;
}

/* A DataSource that says "[redacted]" (as Envoy's dump shows one). */
static upb_Message *redacted_ds(const upb_MessageDef *dsd, upb_Arena *a)
{
	upb_Message *ds = upb_Message_New(dsd, a);
	if (!ds)
		return NULL;
	upb_MessageValue v;
	v.str_val.data = REDACTED;
	v.str_val.size = strlen(REDACTED);
	if (!upb_Message_Set(ds, upb_MessageDef_FindFieldByName(dsd, "inline_string"), v, a))
		return NULL;
	return ds;
}

/* Replace sensitive field @p f of @p m. @return 0 or -ENOMEM. */
static int redact_field(upb_Message *m, const upb_FieldDef *f, upb_Arena *a)
{
	const upb_MessageDef *sub = upb_FieldDef_MessageSubDef(f);
	if (upb_FieldDef_IsMap(f) || !sub ||
	    strcmp(upb_MessageDef_FullName(sub), DATASOURCE) != 0) {
		/* a string, a map, or a message of another type: nothing of it stays */
		if (!sub && !upb_FieldDef_IsRepeated(f)) {
			upb_MessageValue v;
			v.str_val.data = REDACTED;
			v.str_val.size = strlen(REDACTED);
			return upb_Message_Set(m, f, v, a) ? 0 : -ENOMEM;
		}
		upb_Message_ClearField(m, f);
		return 0;
	}
	if (upb_FieldDef_IsRepeated(f)) {
		upb_Array *arr = upb_Message_Mutable(m, f, a).array;
		for (size_t i = 0; arr && i < upb_Array_Size(arr); i++) {
			upb_MessageValue v;
			if (!(v.msg_val = redacted_ds(sub, a)))
				return -ENOMEM;
			upb_Array_Set(arr, i, v);
		}
		return 0;
	}
	upb_MessageValue v;
	if (!(v.msg_val = redacted_ds(sub, a)))
		return -ENOMEM;
	return upb_Message_Set(m, f, v, a) ? 0 : -ENOMEM;
}

static int redact_msg(upb_Message *m, const upb_MessageDef *md, upb_Arena *a, int depth);

/* An Any: redact inside its value. One of an unknown type, or whose value
 * does not decode, loses its value: nothing could print it, so nothing of
 * it needs keeping. */
static int redact_any(upb_Message *any, const upb_MessageDef *md, upb_Arena *a, int depth)
{
	const upb_FieldDef *vf = upb_MessageDef_FindFieldByName(md, "value");
	upb_StringView url = arn_proto_any_type_url(any);
	const upb_MessageDef *im = arn_proto_msgdef_by_url(url.data, url.size);
	upb_StringView val = upb_Message_Get(any, vf).str_val;
	struct arn_sb err = ARN_SB_INIT;
	upb_Message *inner = im ? arn_proto_decode(val.data, val.size, im, a, &err) : NULL;
	arn_sb_free(&err);
	upb_MessageValue nv = {0};
	if (inner) {
		int rc = redact_msg(inner, im, a, depth + 1);
		if (rc)
			return rc;
		nv.str_val.data = arn_proto_encode(inner, im, a, &nv.str_val.size);
		if (!nv.str_val.data)
			return -ENOMEM;
	}
	return upb_Message_Set(any, vf, nv, a) ? 0 : -ENOMEM;
}

static bool field_set(const upb_Message *m, const upb_FieldDef *f)
{
	if (upb_FieldDef_IsMap(f)) {
		const upb_Map *mp = upb_Message_Get(m, f).map_val;
		return mp && upb_Map_Size(mp);
	}
	if (upb_FieldDef_IsRepeated(f)) {
		const upb_Array *ar = upb_Message_Get(m, f).array_val;
		return ar && upb_Array_Size(ar);
	}
	if (upb_FieldDef_HasPresence(f))
		return upb_Message_Has(m, f);
	/* proto3 scalars without presence: only strings can need redacting */
	upb_CType t = upb_FieldDef_CType(f);
	return (t == kUpb_CType_String || t == kUpb_CType_Bytes) &&
	       upb_Message_Get(m, f).str_val.size > 0;
}

static int redact_msg(upb_Message *m, const upb_MessageDef *md, upb_Arena *a, int depth)
{
	if (depth > 100)
		return -EINVAL; /* deeper than the wire check lets anything be */
	if (upb_MessageDef_WellKnownType(md) == kUpb_WellKnown_Any)
		return redact_any(m, md, a, depth);
	for (int i = 0; i < upb_MessageDef_FieldCount(md); i++) {
		const upb_FieldDef *f = upb_MessageDef_Field(md, i);
		if (!field_set(m, f))
			continue;
		if (sensitive(md, f)) {
			int rc = redact_field(m, f, a);
			if (rc)
				return rc;
			continue;
		}
		if (!upb_FieldDef_IsSubMessage(f))
			continue;
		const upb_MessageDef *sub = upb_FieldDef_MessageSubDef(f);
		upb_MessageValue v = upb_Message_Get(m, f);
		int rc = 0;
		if (upb_FieldDef_IsMap(f)) {
			const upb_FieldDef *vf = upb_MessageDef_FindFieldByNumber(sub, 2);
			if (!upb_FieldDef_IsSubMessage(vf))
				continue;
			const upb_MessageDef *vm = upb_FieldDef_MessageSubDef(vf);
			size_t it = kUpb_Map_Begin;
			while (rc == 0 && upb_MapIterator_Next(v.map_val, &it))
				rc = redact_msg(
				    (upb_Message *)upb_MapIterator_Value(v.map_val, it).msg_val, vm,
				    a, depth + 1);
		} else if (upb_FieldDef_IsRepeated(f)) {
			for (size_t k = 0; rc == 0 && k < upb_Array_Size(v.array_val); k++)
				rc =
				    redact_msg((upb_Message *)upb_Array_Get(v.array_val, k).msg_val,
					       sub, a, depth + 1);
		} else {
			rc = redact_msg((upb_Message *)v.msg_val, sub, a, depth + 1);
		}
		if (rc)
			return rc;
	}
	return 0;
}

char *conv_redacted_copy(const upb_MessageDef *md, const char *bytes, size_t len, bool keep_unknown,
			 size_t *out_len)
{
	*out_len = 0;
	upb_Arena *a = conv_wipe_arena();
	if (!a)
		return NULL;
	char *out = NULL;
	struct arn_sb err = ARN_SB_INIT;
	upb_Message *m = arn_proto_decode(bytes ? bytes : "", len, md, a, &err);
	arn_sb_free(&err);
	size_t n = 0;
	char *enc = NULL;
	/* unknown fields are opaque: they go too, but an accepted resource's
	 * (the newer fields the dump shows: lib/proto/newer.c) */
	if (m && (keep_unknown || upb_Message_DiscardUnknown(m, md, 100)) &&
	    redact_msg(m, md, a, 0) == 0)
		enc = arn_proto_encode(m, md, a, &n);
	if (enc && (out = malloc(n ? n : 1)) != NULL) {
		memcpy(out, enc, n);
		*out_len = n;
	}
	upb_Arena_Free(a);
	return out;
}
