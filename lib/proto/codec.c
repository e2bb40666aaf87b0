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

/*
 * Would upb_JsonEncode succeed on every Any inside @p msg? upb 1.51's
 * encoder leaks its scratch arena when it fails (it longjmps past the free),
 * and the only way it fails on a message we hold is an Any of an unknown
 * type or with undecodable bytes. So look first: decode each Any into our
 * own arena, recursively, and refuse before the encoder runs.
 */
static bool anys_encodable(const upb_Message *msg, const upb_MessageDef *m, const upb_DefPool *pool,
			   upb_Arena *a, int depth)
{
	if (depth > 64)
		return false;
	if (upb_MessageDef_WellKnownType(m) == kUpb_WellKnown_Any) {
		upb_StringView url = arn_proto_any_type_url(msg);
		const char *slash = url.size ? memrchr(url.data, '/', url.size) : NULL;
		const char *name = slash ? slash + 1 : url.data;
		size_t nl = url.size - (size_t)(name - url.data);
		const upb_MessageDef *im =
		    nl ? upb_DefPool_FindMessageByNameWithSize(pool, name, nl) : NULL;
		if (im == NULL)
			return false;
		upb_StringView v = google_protobuf_Any_value((const google_protobuf_Any *)msg);
		upb_Message *inner = upb_Message_New(im, a);
		char why[8];
		if (inner == NULL ||
		    !arn_proto_wire_check(v.data, v.size, im, false, why, sizeof(why)) ||
		    upb_Decode(v.data, v.size, inner, upb_MessageDef_MiniTable(im), NULL, 0, a) !=
			kUpb_DecodeStatus_Ok)
			return false;
		return anys_encodable(inner, im, pool, a, depth + 1);
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
				if (!anys_encodable(upb_MapIterator_Value(val.map_val, mi).msg_val,
						    vm, pool, a, depth + 1))
					return false;
		} else if (upb_FieldDef_IsRepeated(f)) {
			for (size_t i = 0; i < upb_Array_Size(val.array_val); i++)
				if (!anys_encodable(upb_Array_Get(val.array_val, i).msg_val, sub,
						    pool, a, depth + 1))
					return false;
		} else if (!anys_encodable(val.msg_val, sub, pool, a, depth + 1)) {
			return false;
		}
	}
	return true;
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
	if (jm != m) {
		char *buf = NULL;
		size_t n = 0;
		upb_Message *jmsg = upb_Message_New(jm, scratch);
		if (jmsg == NULL ||
		    upb_Encode(msg, upb_MessageDef_MiniTable(m), 0, scratch, &buf, &n) !=
			kUpb_EncodeStatus_Ok ||
		    upb_Decode(buf, n, jmsg, upb_MessageDef_MiniTable(jm), NULL, 0, scratch) !=
			kUpb_DecodeStatus_Ok) {
			upb_Arena_Free(scratch);
			return -EINVAL;
		}
		msg = jmsg;
	}
	int rc = -EINVAL;
	if (!anys_encodable(msg, jm, jp, scratch, 0))
		goto out;
	upb_Status st;
	char small[512];
	upb_Status_Clear(&st);
	size_t n =
	    upb_JsonEncode(msg, jm, jp, upb_JsonEncode_UseProtoNames, small, sizeof(small), &st);
	if (!upb_Status_IsOk(&st))
		goto out;
	if (n < sizeof(small)) {
		arn_sb_append(out, small, n);
		rc = 0;
		goto out;
	}
	char *big = malloc(n + 1);
	if (big == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	upb_JsonEncode(msg, jm, jp, upb_JsonEncode_UseProtoNames, big, n + 1, &st);
	arn_sb_append(out, big, n);
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
