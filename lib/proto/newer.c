/*
 * Fields of Envoy's API newer than gRPC 1.51's copy of it, which control
 * planes written for today's Envoy send (Envoy Gateway adds every security
 * filter with HttpFilter.disabled and enables it per route).
 *
 * The main pool (defs.c) keeps gRPC's compiled tables: Arion's code reads
 * many of those messages through their generated accessors, whose layout a
 * descriptor change would break. So such a field stays an unknown field
 * there, and is read from the message's unknown bytes (arn_proto_newer_*)
 * by the converter that acts on it; the strict wire walk (wire.c) lets
 * exactly these through, with their wire type. For JSON (a bootstrap's
 * static resources, the admin's config dump), which has no unknown fields,
 * a second pool whose descriptors carry them decodes and encodes, and the
 * bytes cross over to the main pool (codec.c).
 */
#include <string.h>

#include "upb/def.h"
#include "upb/reflection.h"

#include "google/protobuf/descriptor.upb.h"

#include "arn_log.h"
#include "arn_proto.h"

#define HCM_FILE                                                                                   \
	"envoy/extensions/filters/network/http_connection_manager/v3/"                             \
	"http_connection_manager.proto"
#define HCM_PKG "envoy.extensions.filters.network.http_connection_manager.v3."

const struct arn_proto_newer arn_proto_newer_fields[] = {
    /* Envoy 1.25: a filter off unless a route's per-filter config names it */
    {HCM_PKG "HttpFilter", "disabled", "disabled", HCM_FILE, NULL, 7, ARN_PROTO_NEWER_BOOL},
    /* Envoy 1.24: a route turns a filter off */
    {"envoy.config.route.v3.FilterConfig", "disabled", "disabled",
     "envoy/config/route/v3/route_components.proto", NULL, 3, ARN_PROTO_NEWER_BOOL},
    /* Envoy 1.26: per-filter configuration for a whole route table */
    {"envoy.config.route.v3.RouteConfiguration", "typed_per_filter_config", "typedPerFilterConfig",
     "envoy/config/route/v3/route.proto", "TypedPerFilterConfigEntry", 16, ARN_PROTO_NEWER_MAP_ANY},
    /* Envoy 1.24: the OpenTelemetry tracer's resource service.name */
    {"envoy.config.trace.v3.OpenTelemetryConfig", "service_name", "serviceName",
     "envoy/config/trace/v3/opentelemetry.proto", NULL, 2, ARN_PROTO_NEWER_STRING},
    /* Envoy 1.29: HCM tracing's CLIENT span per upstream request (Envoy
     * Gateway v1.2 and Istio's gateways set it) */
    {HCM_PKG "HttpConnectionManager.Tracing", "spawn_upstream_span", "spawnUpstreamSpan", HCM_FILE,
     NULL, 10, ARN_PROTO_NEWER_BOOL_VALUE},
};
const size_t arn_proto_n_newer_fields =
    sizeof(arn_proto_newer_fields) / sizeof(arn_proto_newer_fields[0]);

const struct arn_proto_newer *arn_proto_newer_find(const upb_MessageDef *m, uint32_t num)
{
	const char *full = upb_MessageDef_FullName(m);
	for (size_t i = 0; i < arn_proto_n_newer_fields; i++)
		if (arn_proto_newer_fields[i].num == num &&
		    strcmp(arn_proto_newer_fields[i].msg, full) == 0)
			return &arn_proto_newer_fields[i];
	return NULL;
}

const struct arn_proto_newer *arn_proto_newer_named(const upb_MessageDef *m, const char *name)
{
	const char *full = upb_MessageDef_FullName(m);
	for (size_t i = 0; i < arn_proto_n_newer_fields; i++)
		if (strcmp(arn_proto_newer_fields[i].name, name) == 0 &&
		    strcmp(arn_proto_newer_fields[i].msg, full) == 0)
			return &arn_proto_newer_fields[i];
	return NULL;
}

/* ---- reading them from a message's unknown bytes ---------------------------------------- */

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

int arn_proto_unknown_next(const char **p, const char *end, struct arn_proto_unknown *u)
{
	if (*p >= end)
		return 0;
	uint64_t tag, v;
	if (!varint(p, end, &tag) || (tag >> 3) == 0 || (tag >> 3) > UINT32_MAX)
		return -1;
	u->num = (uint32_t)(tag >> 3);
	u->wt = (uint8_t)(tag & 7);
	u->data = *p;
	u->len = 0;
	u->varint = 0;
	switch (u->wt) {
	case 0:
		if (!varint(p, end, &v))
			return -1;
		u->varint = v;
		break;
	case 1:
	case 5: {
		size_t n = u->wt == 1 ? 8 : 4;
		if ((size_t)(end - *p) < n)
			return -1;
		u->len = n;
		*p += n;
		break;
	}
	case 2:
		if (!varint(p, end, &v) || v > (uint64_t)(end - *p))
			return -1;
		u->data = *p;
		u->len = (size_t)v;
		*p += v;
		break;
	default:
		return -1; /* groups: not in the Envoy API */
	}
	return 1;
}

bool arn_proto_newer_bool(const upb_Message *msg, const struct arn_proto_newer *f)
{
	size_t n = 0;
	const char *p = msg ? upb_Message_GetUnknown(msg, &n) : NULL;
	if (!p || !n)
		return false; /* (upb gives NULL for none: no NULL + 0 below) */
	const char *end = p + n;
	bool v = false;
	struct arn_proto_unknown u;
	/* the last occurrence wins, as protobuf merges a scalar */
	while (arn_proto_unknown_next(&p, end, &u) > 0)
		if (u.num == f->num && u.wt == 0)
			v = u.varint != 0;
	return v;
}

bool arn_proto_newer_wrapped_bool(const upb_Message *msg, const struct arn_proto_newer *f, bool *v)
{
	size_t n = 0;
	const char *p = msg ? upb_Message_GetUnknown(msg, &n) : NULL;
	bool have = false;
	if (!p || !n)
		return false;
	const char *end = p + n;
	struct arn_proto_unknown u;
	/* the occurrences merge as protobuf merges messages: the last value
	 * set wins, an empty one sets none (wire.c checked each is a
	 * BoolValue) */
	while (arn_proto_unknown_next(&p, end, &u) > 0) {
		if (u.num != f->num || u.wt != 2)
			continue;
		if (!have)
			*v = false;
		have = true;
		const char *q = u.data, *qe = u.data + u.len;
		struct arn_proto_unknown b;
		while (arn_proto_unknown_next(&q, qe, &b) > 0)
			if (b.num == 1 && b.wt == 0)
				*v = b.varint != 0;
	}
	return have;
}

upb_StringView arn_proto_newer_str(const upb_Message *msg, const struct arn_proto_newer *f)
{
	size_t n = 0;
	const char *p = msg ? upb_Message_GetUnknown(msg, &n) : NULL;
	upb_StringView v = {NULL, 0};
	if (!p || !n)
		return v;
	const char *end = p + n;
	struct arn_proto_unknown u;
	/* the last occurrence wins, as protobuf merges a scalar */
	while (arn_proto_unknown_next(&p, end, &u) > 0)
		if (u.num == f->num && u.wt == 2)
			v = (upb_StringView){u.data, u.len};
	return v;
}

/* ---- the JSON pool: every file again, those with newer fields patched ------------------------ */

extern const _upb_DefPool_Init *const arn_proto_grpc_defs[];
extern const _upb_DefPool_Init *const arn_proto_own_defs[];

static google_protobuf_DescriptorProto *find_msg(google_protobuf_FileDescriptorProto *fp,
						 const char *pkg_name, size_t pl, const char *full)
{
	if (strncmp(full, pkg_name, pl) != 0 || full[pl] != '.')
		return NULL;
	const char *simple = full + pl + 1;
	size_t n;
	google_protobuf_DescriptorProto **ms =
	    google_protobuf_FileDescriptorProto_mutable_message_type(fp, &n);
	/* a nested message: "Outer.Inner" */
	google_protobuf_DescriptorProto *m = NULL;
	for (;;) {
		const char *dot = strchr(simple, '.');
		size_t sl = dot ? (size_t)(dot - simple) : strlen(simple);
		m = NULL;
		for (size_t i = 0; i < n && !m; i++) {
			upb_StringView nm = google_protobuf_DescriptorProto_name(ms[i]);
			if (nm.size == sl && memcmp(nm.data, simple, sl) == 0)
				m = ms[i];
		}
		if (!m || !dot)
			return m;
		simple = dot + 1;
		ms = google_protobuf_DescriptorProto_mutable_nested_type(m, &n);
	}
}

static google_protobuf_FieldDescriptorProto *add_field(google_protobuf_DescriptorProto *m,
						       const char *name, const char *json,
						       uint32_t num, int label, int type,
						       upb_Arena *a)
{
	google_protobuf_FieldDescriptorProto *f = google_protobuf_DescriptorProto_add_field(m, a);
	if (!f)
		return NULL;
	google_protobuf_FieldDescriptorProto_set_name(f, upb_StringView_FromString(name));
	google_protobuf_FieldDescriptorProto_set_json_name(f, upb_StringView_FromString(json));
	google_protobuf_FieldDescriptorProto_set_number(f, (int32_t)num);
	google_protobuf_FieldDescriptorProto_set_label(f, label);
	google_protobuf_FieldDescriptorProto_set_type(f, type);
	return f;
}

/* Add the newer fields of file @p fp's messages. @return false (out of memory). */
static bool patch_file(google_protobuf_FileDescriptorProto *fp, const char *filename, upb_Arena *a)
{
	upb_StringView pkg = google_protobuf_FileDescriptorProto_package(fp);
	for (size_t i = 0; i < arn_proto_n_newer_fields; i++) {
		const struct arn_proto_newer *nf = &arn_proto_newer_fields[i];
		if (strcmp(nf->file, filename) != 0)
			continue;
		google_protobuf_DescriptorProto *m = find_msg(fp, pkg.data, pkg.size, nf->msg);
		if (!m)
			continue; /* defs.c's check reports it */
		if (nf->kind == ARN_PROTO_NEWER_BOOL || nf->kind == ARN_PROTO_NEWER_STRING) {
			if (!add_field(m, nf->name, nf->json_name, nf->num,
				       google_protobuf_FieldDescriptorProto_LABEL_OPTIONAL,
				       nf->kind == ARN_PROTO_NEWER_BOOL
					   ? google_protobuf_FieldDescriptorProto_TYPE_BOOL
					   : google_protobuf_FieldDescriptorProto_TYPE_STRING,
				       a))
				return false;
			continue;
		}
		if (nf->kind == ARN_PROTO_NEWER_BOOL_VALUE) {
			/* (the file imports google/protobuf/wrappers.proto: defs.c's
			 * load of the JSON pool fails otherwise) */
			google_protobuf_FieldDescriptorProto *f =
			    add_field(m, nf->name, nf->json_name, nf->num,
				      google_protobuf_FieldDescriptorProto_LABEL_OPTIONAL,
				      google_protobuf_FieldDescriptorProto_TYPE_MESSAGE, a);
			if (!f)
				return false;
			google_protobuf_FieldDescriptorProto_set_type_name(
			    f, upb_StringView_FromString(".google.protobuf.BoolValue"));
			continue;
		}
		/* map<string, google.protobuf.Any>: a nested map entry type */
		google_protobuf_DescriptorProto *e =
		    google_protobuf_DescriptorProto_add_nested_type(m, a);
		google_protobuf_MessageOptions *o =
		    e ? google_protobuf_DescriptorProto_mutable_options(e, a) : NULL;
		if (!o)
			return false;
		google_protobuf_DescriptorProto_set_name(e, upb_StringView_FromString(nf->entry));
		google_protobuf_MessageOptions_set_map_entry(o, true);
		google_protobuf_FieldDescriptorProto *k = add_field(
		    e, "key", "key", 1, google_protobuf_FieldDescriptorProto_LABEL_OPTIONAL,
		    google_protobuf_FieldDescriptorProto_TYPE_STRING, a);
		google_protobuf_FieldDescriptorProto *v = add_field(
		    e, "value", "value", 2, google_protobuf_FieldDescriptorProto_LABEL_OPTIONAL,
		    google_protobuf_FieldDescriptorProto_TYPE_MESSAGE, a);
		google_protobuf_FieldDescriptorProto *f =
		    add_field(m, nf->name, nf->json_name, nf->num,
			      google_protobuf_FieldDescriptorProto_LABEL_REPEATED,
			      google_protobuf_FieldDescriptorProto_TYPE_MESSAGE, a);
		if (!k || !v || !f)
			return false;
		google_protobuf_FieldDescriptorProto_set_type_name(
		    v, upb_StringView_FromString(".google.protobuf.Any"));
		char *tn = upb_Arena_Malloc(a, strlen(nf->msg) + strlen(nf->entry) + 3);
		if (!tn)
			return false;
		strcpy(tn, ".");
		strcat(tn, nf->msg);
		strcat(tn, ".");
		strcat(tn, nf->entry);
		google_protobuf_FieldDescriptorProto_set_type_name(f,
								   upb_StringView_FromString(tn));
		/* the Any's file, if the file did not import it */
		static const char any_file[] = "google/protobuf/any.proto";
		size_t nd;
		const upb_StringView *deps =
		    google_protobuf_FileDescriptorProto_dependency(fp, &nd);
		bool have = false;
		for (size_t d = 0; d < nd; d++)
			have |= deps[d].size == sizeof(any_file) - 1 &&
				memcmp(deps[d].data, any_file, deps[d].size) == 0;
		if (!have && !google_protobuf_FileDescriptorProto_add_dependency(
				 fp, upb_StringView_FromString(any_file), a))
			return false;
	}
	return true;
}

static bool load(upb_DefPool *p, const _upb_DefPool_Init *init, upb_Arena *a)
{
	if (upb_DefPool_FindFileByName(p, init->filename))
		return true;
	for (struct _upb_DefPool_Init **d = init->deps; *d; d++)
		if (!load(p, *d, a))
			return false;
	google_protobuf_FileDescriptorProto *fp = google_protobuf_FileDescriptorProto_parse(
	    init->descriptor.data, init->descriptor.size, a);
	if (!fp || !patch_file(fp, init->filename, a))
		return false;
	upb_Status st;
	upb_Status_Clear(&st);
	if (!upb_DefPool_AddFile(p, fp, &st)) {
		ARN_ERR(MAIN, "protobuf descriptor %s (JSON pool) failed to load: %s",
			init->filename, upb_Status_ErrorMessage(&st));
		return false;
	}
	return true;
}

upb_DefPool *arn_proto_newer_pool_new(void)
{
	upb_DefPool *p = upb_DefPool_New();
	upb_Arena *a = upb_Arena_New();
	bool ok = p && a;
	const _upb_DefPool_Init *const *lists[] = {arn_proto_grpc_defs, arn_proto_own_defs};
	for (size_t l = 0; ok && l < 2; l++)
		for (const _upb_DefPool_Init *const *d = lists[l]; ok && *d != NULL; d++)
			ok = load(p, *d, a);
	/* every newer field must have found its message: a table naming a
	 * message that moved would otherwise be silently absent */
	for (size_t i = 0; ok && i < arn_proto_n_newer_fields; i++) {
		const struct arn_proto_newer *nf = &arn_proto_newer_fields[i];
		const upb_MessageDef *m = upb_DefPool_FindMessageByName(p, nf->msg);
		const upb_FieldDef *f = m ? upb_MessageDef_FindFieldByNumber(m, nf->num) : NULL;
		if (!f || strcmp(upb_FieldDef_Name(f), nf->name) != 0) {
			ARN_ERR(MAIN, "newer Envoy field %s.%s = %u: not in the JSON pool", nf->msg,
				nf->name, nf->num);
			ok = false;
		}
	}
	if (a)
		upb_Arena_Free(a);
	if (!ok && p) {
		upb_DefPool_Free(p);
		p = NULL;
	}
	return p;
}
