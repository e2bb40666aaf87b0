/*
 * Messages in and out: binary decode (after wire.c's check) and encode,
 * JSON both ways, and Any unpacking, all against the pool of defs.c.
 */
#include "arn_proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "upb/decode.h"
#include "upb/encode.h"
#include "upb/json_decode.h"
#include "upb/json_encode.h"
#include "upb/map.h"
#include "upb/reflection.h"

#include "google/protobuf/any.upb.h"

#include "arn_log.h"

static const char *decode_status_str(upb_DecodeStatus st)
{
	switch (st) {
	case kUpb_DecodeStatus_Malformed:
		return "malformed wire format";
	case kUpb_DecodeStatus_OutOfMemory:
		return "out of memory";
	case kUpb_DecodeStatus_BadUtf8:
		return "a string field is not valid UTF-8";
	case kUpb_DecodeStatus_MaxDepthExceeded:
		return "nested too deeply";
	case kUpb_DecodeStatus_MissingRequired:
		return "a required field is missing";
	default:
		return "undecodable";
	}
}

static upb_Message *decode(const char *buf, size_t len, const upb_MessageDef *m, upb_Arena *arena,
			   struct arn_sb *err, bool walk)
{
	const upb_MiniTable *mt = upb_MessageDef_MiniTable(m);
	char why[256];
	if (walk && !arn_proto_wire_check(buf, len, m, false, why, sizeof(why))) {
		arn_sb_printf(err, "cannot decode %s: %s", upb_MessageDef_FullName(m), why);
		return NULL;
	}
	upb_Message *msg = upb_Message_New(m, arena);
	if (msg == NULL) {
		arn_sb_puts(err, "out of memory");
		return NULL;
	}
	upb_DecodeStatus st = upb_Decode(buf, len, msg, mt, NULL, 0, arena);
	if (st != kUpb_DecodeStatus_Ok) {
		arn_sb_printf(err, "cannot decode %s: %s", upb_MessageDef_FullName(m),
			      decode_status_str(st));
		return NULL;
	}
	return msg;
}

upb_Message *arn_proto_decode(const char *buf, size_t len, const upb_MessageDef *m,
			      upb_Arena *arena, struct arn_sb *err)
{
	return decode(buf, len, m, arena, err, true);
}

upb_Message *arn_proto_decode_walked(const char *buf, size_t len, const upb_MessageDef *m,
				     upb_Arena *arena, struct arn_sb *err)
{
	return decode(buf, len, m, arena, err, false);
}

upb_StringView arn_proto_any_type_url(const upb_Message *any)
{
	return google_protobuf_Any_type_url((const google_protobuf_Any *)any);
}

upb_StringView arn_proto_any_type_name(const upb_Message *any)
{
	upb_StringView url = arn_proto_any_type_url(any);
	const char *slash = url.size ? memrchr(url.data, '/', url.size) : NULL;
	if (slash != NULL) {
		size_t skip = (size_t)(slash + 1 - url.data);
		url.data += skip;
		url.size -= skip;
	}
	return url;
}

upb_Message *arn_proto_any_unpack(const upb_Message *any, const upb_MessageDef *expect,
				  const upb_MessageDef **got_def, upb_Arena *arena,
				  struct arn_sb *err)
{
	upb_StringView url = arn_proto_any_type_url(any);
	const upb_MessageDef *m = arn_proto_msgdef_by_url(url.data, url.size);
	if (m == NULL) {
		arn_sb_printf(err, "unknown type '" ARN_SV_FMT "'", ARN_SV_ARG(url));
		return NULL;
	}
	if (expect != NULL && m != expect) {
		arn_sb_printf(err, "type '" ARN_SV_FMT "' where %s was expected", ARN_SV_ARG(url),
			      upb_MessageDef_FullName(expect));
		return NULL;
	}
	if (got_def != NULL)
		*got_def = m;
	upb_StringView v = google_protobuf_Any_value((const google_protobuf_Any *)any);
	return arn_proto_decode(v.data, v.size, m, arena, err);
}

/* The pool JSON goes through (arn_proto_newer_pool_new), built at the first
 * use: NULL if it could not be (then JSON uses the main pool, without the
 * newer fields). Control lcore only, as the main pool. */
static upb_DefPool *json_pool;
static bool json_pool_tried;

static const upb_MessageDef *json_def(const upb_MessageDef *m, const upb_DefPool **pool)
{
	if (!json_pool_tried) {
		json_pool_tried = true;
		json_pool = arn_proto_newer_pool_new();
	}
	const upb_MessageDef *jm =
	    json_pool ? upb_DefPool_FindMessageByName(json_pool, upb_MessageDef_FullName(m)) : NULL;
	*pool = jm ? json_pool : arn_proto_pool();
	return jm ? jm : m;
}

const upb_MessageDef *arn_proto_json_def(const upb_MessageDef *m, const upb_DefPool **pool)
{
	return json_def(m, pool);
}

upb_Message *arn_proto_from_json(const char *json, size_t len, const upb_MessageDef *m,
				 upb_Arena *arena, struct arn_sb *err)
{
	upb_Status st;
	upb_Status_Clear(&st);
	const upb_DefPool *jp;
	const upb_MessageDef *jm = json_def(m, &jp);
	upb_Message *msg = upb_Message_New(jm, arena);
	if (msg == NULL) {
		arn_sb_puts(err, "out of memory");
		return NULL;
	}
	if (!upb_JsonDecode(json, len, msg, jm, jp, 0, arena, &st)) {
		arn_sb_puts(err, upb_Status_ErrorMessage(&st));
		return NULL;
	}
	if (jm == m)
		return msg;
	/* into the main pool's layout: the newer fields become unknown
	 * fields there, as they arrive from a control plane */
	char *buf = NULL;
	size_t n = 0;
	if (upb_Encode(msg, upb_MessageDef_MiniTable(jm), 0, arena, &buf, &n) !=
	    kUpb_EncodeStatus_Ok) {
		arn_sb_puts(err, "out of memory");
		return NULL;
	}
	return decode(buf, n, m, arena, err, true);
}

/* An Any with neither type URL nor value (Envoy's JSON writes it {}; upb's
 * encoder fails on it) gets this type for the encoding, and its JSON is
 * written back as {} (put_json). */
#define EMPTY_ANY_TYPE "arion.admin.v3.EmptyAny"
#define EMPTY_ANY_URL "type.googleapis.com/" EMPTY_ANY_TYPE
static const char empty_any_json[] = "{\"@type\":\"" EMPTY_ANY_URL "\"}";

/*
 * Ready every Any inside @p msg (mutable, on @p a) for upb_JsonEncode: an
 * empty one gets the stand-in type; each other one's value is decoded
 * (after wire.c's walk) and readied in turn, and encoded again where one
 * inside it changed (*@p changed). @return false when one cannot be
 * encoded: an unknown type or undecodable bytes. upb 1.51's encoder leaks
 * its scratch arena when it fails (it longjmps past the free), and those
 * are the only ways it fails on a message we hold: so they are refused
 * here, before it runs.
 */
static bool mend_empty_anys(upb_Message *msg, const upb_MessageDef *m, const upb_DefPool *pool,
			    upb_Arena *a, int depth, bool *changed)
{
	if (depth > 64)
		return false;
	if (upb_MessageDef_WellKnownType(m) == kUpb_WellKnown_Any) {
		google_protobuf_Any *any = (google_protobuf_Any *)msg;
		upb_StringView url = google_protobuf_Any_type_url(any);
		upb_StringView v = google_protobuf_Any_value(any);
		if (url.size == 0) {
			if (v.size)
				return false;
			google_protobuf_Any_set_type_url(any,
							 upb_StringView_FromString(EMPTY_ANY_URL));
			*changed = true;
			return true;
		}
		const char *slash = memrchr(url.data, '/', url.size);
		const char *name = slash ? slash + 1 : url.data;
		size_t nl = url.size - (size_t)(name - url.data);
		const upb_MessageDef *im =
		    nl ? upb_DefPool_FindMessageByNameWithSize(pool, name, nl) : NULL;
		if (!im)
			return false;
		upb_Message *inner = upb_Message_New(im, a);
		char why[8];
		if (!inner || !arn_proto_wire_check(v.data, v.size, im, false, why, sizeof(why)) ||
		    upb_Decode(v.data, v.size, inner, upb_MessageDef_MiniTable(im), NULL, 0, a) !=
			kUpb_DecodeStatus_Ok)
			return false;
		bool ch = false;
		if (!mend_empty_anys(inner, im, pool, a, depth + 1, &ch))
			return false;
		if (ch) {
			char *buf = NULL;
			size_t n = 0;
			if (upb_Encode(inner, upb_MessageDef_MiniTable(im), 0, a, &buf, &n) !=
			    kUpb_EncodeStatus_Ok)
				return false;
			google_protobuf_Any_set_value(any, upb_StringView_FromDataAndSize(buf, n));
			*changed = true;
		}
		return true;
	}
	size_t iter = kUpb_Message_Begin;
	const upb_FieldDef *f;
	upb_MessageValue val;
	while (upb_Message_Next(msg, m, NULL, &f, &val, &iter)) {
		if (!upb_FieldDef_IsSubMessage(f))
			continue;
		const upb_MessageDef *sub = upb_FieldDef_MessageSubDef(f);
		if (upb_FieldDef_IsMap(f)) {
			const upb_FieldDef *vf = upb_MessageDef_FindFieldByNumber(sub, 2);
			if (!upb_FieldDef_IsSubMessage(vf))
				continue;
			const upb_MessageDef *vm = upb_FieldDef_MessageSubDef(vf);
			size_t mi = kUpb_Map_Begin;
			while (upb_MapIterator_Next(val.map_val, &mi))
				if (!mend_empty_anys(
					(upb_Message *)upb_MapIterator_Value(val.map_val, mi)
					    .msg_val,
					vm, pool, a, depth + 1, changed))
					return false;
		} else if (upb_FieldDef_IsRepeated(f)) {
			for (size_t i = 0; i < upb_Array_Size(val.array_val); i++)
				if (!mend_empty_anys(
					(upb_Message *)upb_Array_Get(val.array_val, i).msg_val, sub,
					pool, a, depth + 1, changed))
					return false;
		} else if (!mend_empty_anys((upb_Message *)val.msg_val, sub, pool, a, depth + 1,
					    changed)) {
			return false;
		}
	}
	return true;
}

/* @p n bytes of JSON into @p out, the stand-in type's objects as {}. */
static void put_json(struct arn_sb *out, const char *p, size_t n)
{
	const size_t el = sizeof(empty_any_json) - 1;
	for (;;) {
		const char *q = memmem(p, n, empty_any_json, el);
		if (!q) {
			arn_sb_append(out, p, n);
			return;
		}
		arn_sb_append(out, p, (size_t)(q - p));
		arn_sb_append(out, "{}", 2);
		n -= (size_t)(q - p) + el;
		p = q + el;
	}
}

int arn_proto_to_json(const upb_Message *msg, const upb_MessageDef *m, struct arn_sb *out)
{
	upb_Arena *scratch = upb_Arena_New();
	if (scratch == NULL)
		return -ENOMEM;
	/* through the JSON pool, so that the newer fields (unknown bytes in
	 * the main pool's message) are written as the fields they are */
	const upb_DefPool *jp;
	const upb_MessageDef *jm = json_def(m, &jp);
	/* a copy of the message, which the empty Anys' mending may change */
	char *buf = NULL;
	size_t bn = 0;
	upb_Message *jmsg = upb_Message_New(jm, scratch);
	if (jmsg == NULL ||
	    upb_Encode(msg, upb_MessageDef_MiniTable(m), 0, scratch, &buf, &bn) !=
		kUpb_EncodeStatus_Ok ||
	    upb_Decode(buf, bn, jmsg, upb_MessageDef_MiniTable(jm), NULL, 0, scratch) !=
		kUpb_DecodeStatus_Ok) {
		upb_Arena_Free(scratch);
		return -EINVAL;
	}
	msg = jmsg;
	int rc = -EINVAL;
	bool mended = false;
	if (!mend_empty_anys(jmsg, jm, jp, scratch, 0, &mended))
		goto out;
	upb_Status st;
	char small[512];
	upb_Status_Clear(&st);
	size_t n =
	    upb_JsonEncode(msg, jm, jp, upb_JsonEncode_UseProtoNames, small, sizeof(small), &st);
	if (!upb_Status_IsOk(&st))
		goto out;
	if (n < sizeof(small)) {
		put_json(out, small, n);
		rc = 0;
		goto out;
	}
	char *big = malloc(n + 1);
	if (big == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	upb_JsonEncode(msg, jm, jp, upb_JsonEncode_UseProtoNames, big, n + 1, &st);
	put_json(out, big, n);
	free(big);
	rc = upb_Status_IsOk(&st) ? 0 : -EINVAL;
out:
	upb_Arena_Free(scratch);
	return rc;
}

char *arn_proto_encode(const upb_Message *msg, const upb_MessageDef *m, upb_Arena *arena,
		       size_t *len)
{
	char *buf = NULL;
	upb_EncodeStatus st = upb_Encode(msg, upb_MessageDef_MiniTable(m), 0, arena, &buf, len);
	return st == kUpb_EncodeStatus_Ok ? buf : NULL;
}
