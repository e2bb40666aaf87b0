/*
 * A walk over protobuf wire format before upb_Decode sees it.
 *
 * Why: libupb.so.29 (gRPC 1.51, as Debian builds it, with assertions)
 * aborts the whole process on some inputs that put data into a message's
 * unknown-field area, e.g. a map entry with a third field (found by
 * fuzz_config). Bytes from a control plane must never take Arion down, so
 * every decode of outside bytes walks them first.
 */
#include <stdio.h>
#include <string.h>

#include "arn_proto.h"


static bool varint(const char **p, const char *end, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64 && *p < end; shift += 7) {
		uint8_t b = (uint8_t) * (*p)++;
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

static int wire_type_of(const upb_FieldDef *f)
{
	switch (upb_FieldDef_Type(f)) {
	case kUpb_FieldType_Double:
	case kUpb_FieldType_Fixed64:
	case kUpb_FieldType_SFixed64:
		return 1;
	case kUpb_FieldType_Float:
	case kUpb_FieldType_Fixed32:
	case kUpb_FieldType_SFixed32:
		return 5;
	case kUpb_FieldType_String:
	case kUpb_FieldType_Bytes:
	case kUpb_FieldType_Message:
		return 2;
	case kUpb_FieldType_Group:
		return 3;
	default:
		return 0;
	}
}

static bool wire_walk(const char *p, const char *end, const upb_MessageDef *m, int depth,
		      bool strict, char *why, size_t whylen);

/* One occurrence of newer field @p nf (wire type @p wt) at *@p p. */
static bool newer_walk(const char **p, const char *end, const struct arn_proto_newer *nf, int wt,
		       int depth, bool strict, char *why, size_t whylen)
{
	int want = nf->kind == ARN_PROTO_NEWER_BOOL ? 0 : 2;
	if (wt != want) {
		snprintf(why, whylen, "%s.%s: wrong wire type %d", nf->msg, nf->name, wt);
		return false;
	}
	uint64_t v;
	if (!varint(p, end, &v))
		return true; /* truncated: upb reports it */
	if (wt == 0)
		return true;
	if (v > (uint64_t)(end - *p))
		return true;
	if (nf->kind == ARN_PROTO_NEWER_BOOL_VALUE) {
		const upb_MessageDef *bv = arn_proto_msgdef("google.protobuf.BoolValue");
		const char *q = *p;
		*p += v;
		return !bv || wire_walk(q, q + v, bv, depth + 1, strict, why, whylen);
	}
	if (nf->kind == ARN_PROTO_NEWER_STRING) {
		/* opaque to upb: the converter copies it as a header-safe
		 * string or refuses it */
		*p += v;
		return true;
	}
	const char *q = *p, *qe = *p + v;
	*p = qe;
	/* a map entry: key (1, string) and value (2, Any), nothing else */
	const upb_MessageDef *any = arn_proto_msgdef("google.protobuf.Any");
	while (q < qe) {
		uint64_t tag, n;
		if (!varint(&q, qe, &tag) || (tag & 7) != 2 ||
		    ((tag >> 3) != 1 && (tag >> 3) != 2)) {
			snprintf(why, whylen, "%s.%s: a map entry has only its key and value",
				 nf->msg, nf->name);
			return false;
		}
		if (!varint(&q, qe, &n) || n > (uint64_t)(qe - q)) {
			/* opaque to upb (an unknown field's bytes): refused here */
			snprintf(why, whylen, "%s.%s: a truncated map entry", nf->msg, nf->name);
			return false;
		}
		if ((tag >> 3) == 2 && any &&
		    !wire_walk(q, q + n, any, depth + 2, strict, why, whylen))
			return false;
		q += n;
	}
	return true;
}

static bool wire_walk(const char *p, const char *end, const upb_MessageDef *m, int depth,
		      bool strict, char *why, size_t whylen)
{
	if (depth > 64) {
		snprintf(why, whylen, "nested too deeply");
		return false;
	}
	bool is_any = strcmp(upb_MessageDef_FullName(m), "google.protobuf.Any") == 0;
	const char *url = NULL, *val = NULL;
	size_t url_len = 0, val_len = 0;
	while (p < end) {
		uint64_t tag, v = 0;
		if (!varint(&p, end, &tag))
			return true; /* truncated: upb reports it */
		uint32_t num = (uint32_t)(tag >> 3);
		int wt = (int)(tag & 7);
		const upb_FieldDef *f = upb_MessageDef_FindFieldByNumber(m, num);
		const struct arn_proto_newer *nf = f ? NULL : arn_proto_newer_find(m, num);
		if (nf) {
			/* a field newer than the API copy (newer.c): its wire
			 * type, and a map entry's fields, checked as a known
			 * field's would be */
			if (!newer_walk(&p, end, nf, wt, depth, strict, why, whylen))
				return false;
			continue;
		}
		if (!f && (strict || upb_MessageDef_IsMapEntry(m))) {
			snprintf(why, whylen,
				 "%s: field number %u is unknown to Arion's copy of the Envoy API "
				 "(refused rather than ignored)",
				 upb_MessageDef_FullName(m), num);
			return false;
		}
		if (!f) {
			/* Lenient: skip an unknown field of a non-map message, as protobuf
			 * does (a newer peer's envelope field). */
			switch (wt) {
			case 0:
				if (!varint(&p, end, &v))
					return true;
				continue;
			case 1:
				p += 8;
				continue;
			case 5:
				p += 4;
				continue;
			case 2:
				if (!varint(&p, end, &v) || v > (uint64_t)(end - p))
					return true;
				p += v;
				continue;
			default:
				snprintf(why, whylen,
					 "groups (wire types 3 and 4) are not used by the Envoy API");
				return false;
			}
		}
		int want = wire_type_of(f);
		bool packed_ok = wt == 2 && upb_FieldDef_IsRepeated(f) && want != 2;
		if (wt != want && !packed_ok) {
			snprintf(why, whylen, "%s.%s: wrong wire type %d",
				 upb_MessageDef_FullName(m), upb_FieldDef_Name(f), wt);
			return false;
		}
		switch (wt) {
		case 0:
			if (!varint(&p, end, &v))
				return true;
			break;
		case 1:
			p += 8;
			break;
		case 5:
			p += 4;
			break;
		case 2: {
			if (!varint(&p, end, &v) || v > (uint64_t)(end - p))
				return true;
			const char *sub = p;
			p += v;
			if (is_any && num == 1) {
				url = sub;
				url_len = (size_t)v;
			} else if (is_any && num == 2) {
				val = sub;
				val_len = (size_t)v;
			}
			if (upb_FieldDef_CType(f) == kUpb_CType_Message && !packed_ok &&
			    !wire_walk(sub, sub + v, upb_FieldDef_MessageSubDef(f), depth + 1, strict,
				       why, whylen))
				return false;
			break;
		}
		default:
			snprintf(why, whylen,
				 "groups (wire types 3 and 4) are not used by the Envoy API");
			return false;
		}
	}
	/* An Any's value is opaque bytes to upb_Decode of the outer message; it
	 * is decoded (and checked) on its own when unpacked. Strict mode looks
	 * inside now so that a resource is refused as a whole. */
	if (strict && is_any && url && val) {
		const upb_MessageDef *vd = arn_proto_msgdef_by_url(url, url_len);
		if (vd && !wire_walk(val, val + val_len, vd, depth + 1, strict, why, whylen))
			return false;
	}
	return true;
}

bool arn_proto_wire_check(const char *buf, size_t len, const upb_MessageDef *m, bool strict,
			  char *why, size_t whylen)
{
	if (whylen)
		why[0] = 0;
	if (buf == NULL || len == 0)
		return true; /* empty: every field at its default */
	return wire_walk(buf, buf + len, m, 0, strict, why, whylen);
}
