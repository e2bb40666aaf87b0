/*
 * What every converter uses: upb reflection, error paths, and the small
 * Envoy types (Duration, SocketAddress, StringMatcher, RegexMatcher,
 * HeaderValueOption, ConfigSource).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "upb/array.h"
#include "upb/map.h"
/* the mini table's layout, as upb's generated code and its own inline
 * accessors read it (field_set_mt) */
#include "upb/msg_internal.h"

#include "arn_proto.h"
#include "arn_regex.h"
#include "arn_subst.h"
#include "config_int.h"

/* ---- wire format pre-check -------------------------------------------------- */

bool conv_wire_check(const char *buf, size_t len, const upb_MessageDef *m, char *why, size_t whylen)
{
	return arn_proto_wire_check(buf, len, m, true, why, whylen);
}

/* ---- reflection ------------------------------------------------------------ */

/*
 * Converting 10,000 routes asks for fields by name about a million times,
 * and a name lookup in upb's table (length, hash, probe, compare) was a
 * tenth of the work (issue 17). Each thread keeps a direct-mapped cache
 * keyed by the message type and the name's address (the converters pass
 * literals); a hit is confirmed by comparing the names, so a name at a
 * reused address can never return another field.
 */
/* How to tell whether a field is set, known once per field. */
enum field_kind {
	FK_MAP,
	FK_ARRAY,
	FK_PRESENCE, /* has a hasbit, a oneof case, or is a message */
	FK_STR,	     /* string or bytes without presence */
	FK_64,	     /* 64-bit integers and doubles without presence */
	FK_BOOL,     /* bool without presence */
	FK_32,	     /* 32-bit integers, enums, floats without presence */
};

static enum field_kind field_kind(const upb_FieldDef *f)
{
	if (upb_FieldDef_IsRepeated(f))
		return upb_FieldDef_IsMap(f) ? FK_MAP : FK_ARRAY;
	if (upb_FieldDef_HasPresence(f))
		return FK_PRESENCE;
	switch (upb_FieldDef_CType(f)) {
	case kUpb_CType_String:
	case kUpb_CType_Bytes:
		return FK_STR;
	case kUpb_CType_Int64:
	case kUpb_CType_UInt64:
	case kUpb_CType_Double:
		return FK_64;
	case kUpb_CType_Bool:
		return FK_BOOL;
	default:
		return FK_32;
	}
}

#define FIELD_CACHE 1024 /* entries, a power of two */
struct fcache {
	const upb_MessageDef *d;
	const char *name;  /* the caller's */
	const char *fname; /* the field's (upb_FieldDef_Name searches for it) */
	const upb_FieldDef *f;
	/* what reading the field needs, so that a read is the mini table's
	 * offset and a copy, as upb_Message_Get does it after several calls
	 * (these reads were a third of converting a cluster, issue 17) */
	const upb_MiniTable_Field *mf;
	const upb_MessageDef *sub; /* message fields: their type */
	uint8_t kind;		   /* enum field_kind */
	uint8_t size;		   /* bytes of the value in the message */
};
static __thread struct fcache field_cache[FIELD_CACHE];

static const struct fcache *pb_lookup(struct pb p, const char *name)
{
	uintptr_t k = ((uintptr_t)p.d >> 4) * 31u + ((uintptr_t)name >> 2);
	size_t slot = (size_t)((k * 0x9e3779b97f4a7c15ull) >> 54) & (FIELD_CACHE - 1);
	struct fcache *e = &field_cache[slot];
	if (e->d == p.d && e->name == name && strcmp(e->fname, name) == 0)
		return e;
	const upb_FieldDef *f = upb_MessageDef_FindFieldByName(p.d, name);
	if (f == NULL) {
		/* A programming error: the converter names a field the type lacks. */
		fprintf(stderr, "arion: internal: %s has no field %s\n",
			upb_MessageDef_FullName(p.d), name);
		abort();
	}
	static const uint8_t sizes[] = {
	    [kUpb_FieldType_Double] = 8,
	    [kUpb_FieldType_Float] = 4,
	    [kUpb_FieldType_Int64] = 8,
	    [kUpb_FieldType_UInt64] = 8,
	    [kUpb_FieldType_Int32] = 4,
	    [kUpb_FieldType_Fixed64] = 8,
	    [kUpb_FieldType_Fixed32] = 4,
	    [kUpb_FieldType_Bool] = 1,
	    [kUpb_FieldType_String] = sizeof(upb_StringView),
	    [kUpb_FieldType_Group] = sizeof(void *),
	    [kUpb_FieldType_Message] = sizeof(void *),
	    [kUpb_FieldType_Bytes] = sizeof(upb_StringView),
	    [kUpb_FieldType_UInt32] = 4,
	    [kUpb_FieldType_Enum] = 4,
	    [kUpb_FieldType_SFixed32] = 4,
	    [kUpb_FieldType_SFixed64] = 8,
	    [kUpb_FieldType_SInt32] = 4,
	    [kUpb_FieldType_SInt64] = 8,
	};
	e->d = p.d;
	e->name = name;
	e->fname = upb_FieldDef_Name(f);
	e->f = f;
	e->mf = upb_FieldDef_MiniTable(f);
	e->sub = upb_FieldDef_IsSubMessage(f) ? upb_FieldDef_MessageSubDef(f) : NULL;
	e->kind = (uint8_t)field_kind(f);
	e->size = upb_FieldDef_IsRepeated(f) ? sizeof(void *) : sizes[e->mf->descriptortype];
	return e;
}

const upb_FieldDef *pb_field(struct pb p, const char *name)
{
	return pb_lookup(p, name)->f;
}

/*
 * Is field @p mf (of kind @p k) set in @p m, as upb_Message_Next sees it:
 * present, non-empty, or not its zero value, bit for bit (-0.0 is set).
 * Read through the mini table as upb's own accessors do
 * (mini_table_accessors.h; upb_MiniTable_HasField is not exported by
 * Debian's libupb): conv_only asks this of every field a converter does not
 * take, of every message, and reflection's calls were most of its cost.
 */
static bool field_set_mt(const upb_Message *m, const upb_MiniTable_Field *mf, enum field_kind k)
{
	const char *at = (const char *)m + mf->offset;
	switch (k) {
	case FK_PRESENCE:
		if (mf->presence < 0) /* in a oneof: its case names the field */
			return *(const uint32_t *)((const char *)m + ~(ptrdiff_t)mf->presence) ==
			       mf->number;
		if (mf->presence > 0) /* a hasbit */
			return (((const uint8_t *)m)[mf->presence / 8] &
				(1u << (mf->presence % 8))) != 0;
		return *(const upb_Message *const *)at != NULL; /* a message */
	case FK_MAP: {
		const upb_Map *map = *(const upb_Map *const *)at;
		return map && upb_Map_Size(map) > 0;
	}
	case FK_ARRAY: {
		const upb_Array *arr = *(const upb_Array *const *)at;
		return arr && upb_Array_Size(arr) > 0;
	}
	case FK_STR:
		return ((const upb_StringView *)at)->size > 0;
	case FK_64:
		return *(const uint64_t *)at != 0;
	case FK_BOOL:
		return *(const bool *)at;
	default:
		return *(const uint32_t *)at != 0;
	}
}

static bool field_set(const upb_Message *m, const upb_FieldDef *f)
{
	return field_set_mt(m, upb_FieldDef_MiniTable(f), field_kind(f));
}

bool pb_has(struct pb p, const char *name)
{
	if (!p.m)
		return false;
	return field_set(p.m, pb_field(p, name));
}

/* The value of the field @p e names in @p m, as upb_Message_Get() reads it:
 * the bytes at its offset when it has no presence or is present, else its
 * default (upb's, for the rare field with one). */
static upb_MessageValue fc_get(const upb_Message *m, const struct fcache *e)
{
	upb_MessageValue v;
	memset(&v, 0, sizeof(v));
	if (e->kind == FK_PRESENCE && !field_set_mt(m, e->mf, FK_PRESENCE))
		return upb_FieldDef_Default(e->f);
	memcpy(&v, (const char *)m + e->mf->offset, e->size);
	return v;
}

struct pb pb_msg(struct pb p, const char *name)
{
	struct pb r = {NULL, NULL};
	if (!p.d)
		return r;
	const struct fcache *e = pb_lookup(p, name);
	r.d = e->sub;
	if (p.m && field_set_mt(p.m, e->mf, FK_PRESENCE))
		r.m = *(const upb_Message *const *)((const char *)p.m + e->mf->offset);
	return r;
}

static upb_MessageValue get(struct pb p, const char *name)
{
	upb_MessageValue v;
	memset(&v, 0, sizeof(v));
	if (!p.m)
		return v;
	return fc_get(p.m, pb_lookup(p, name));
}

upb_StringView pb_str(struct pb p, const char *f)
{
	if (!p.m) {
		upb_StringView e = {"", 0};
		return e;
	}
	upb_StringView v = get(p, f).str_val;
	if (v.data == NULL) /* unset strings: never hand NULL to memcmp & co */
		v.data = "";
	return v;
}
bool pb_bool(struct pb p, const char *f)
{
	return get(p, f).bool_val;
}
uint32_t pb_u32(struct pb p, const char *f)
{
	return get(p, f).uint32_val;
}
uint64_t pb_u64(struct pb p, const char *f)
{
	return get(p, f).uint64_val;
}
int32_t pb_i32(struct pb p, const char *f)
{
	return get(p, f).int32_val;
}
int64_t pb_i64(struct pb p, const char *f)
{
	return get(p, f).int64_val;
}

size_t pb_len(struct pb p, const char *f)
{
	if (!p.m)
		return 0;
	const upb_Array *a = get(p, f).array_val;
	return a ? upb_Array_Size(a) : 0;
}

struct pb pb_at(struct pb p, const char *f, size_t i)
{
	const struct fcache *e = pb_lookup(p, f);
	struct pb r = {upb_Array_Get(fc_get(p.m, e).array_val, i).msg_val, e->sub};
	return r;
}

upb_StringView pb_str_at(struct pb p, const char *f, size_t i)
{
	upb_StringView v = upb_Array_Get(get(p, f).array_val, i).str_val;
	if (v.data == NULL)
		v.data = "";
	return v;
}

uint32_t pb_u32_at(struct pb p, const char *f, size_t i)
{
	return upb_Array_Get(get(p, f).array_val, i).uint32_val;
}

int32_t pb_i32_at(struct pb p, const char *f, size_t i)
{
	return upb_Array_Get(get(p, f).array_val, i).int32_val;
}

/* Oneofs by name, cached as fields are (pb_lookup): finding one in upb's
 * table was a tenth of converting a cluster once field reads were cheap. */
#define ONEOF_CACHE 256 /* entries, a power of two */
static __thread struct {
	const upb_MessageDef *d;
	const char *name;  /* the caller's */
	const char *oname; /* the oneof's */
	const upb_OneofDef *o;
	const upb_MiniTable_Field *mf0; /* its first field: where its case is */
} oneof_cache[ONEOF_CACHE];

const char *pb_which(struct pb p, const char *oneof)
{
	if (!p.m)
		return NULL;
	uintptr_t k = ((uintptr_t)p.d >> 4) * 31u + ((uintptr_t)oneof >> 2);
	size_t slot = (size_t)((k * 0x9e3779b97f4a7c15ull) >> 56) & (ONEOF_CACHE - 1);
	if (oneof_cache[slot].d != p.d || oneof_cache[slot].name != oneof ||
	    strcmp(oneof_cache[slot].oname, oneof) != 0) {
		const upb_OneofDef *o = upb_MessageDef_FindOneofByName(p.d, oneof);
		if (!o) {
			fprintf(stderr, "arion: internal: %s has no oneof %s\n",
				upb_MessageDef_FullName(p.d), oneof);
			abort();
		}
		if (upb_OneofDef_IsSynthetic(o)) { /* proto3 optional: not cached */
			const upb_FieldDef *f = upb_Message_WhichOneof(p.m, o);
			return f ? upb_FieldDef_Name(f) : NULL;
		}
		oneof_cache[slot].d = p.d;
		oneof_cache[slot].name = oneof;
		oneof_cache[slot].oname = upb_OneofDef_Name(o);
		oneof_cache[slot].o = o;
		oneof_cache[slot].mf0 = upb_FieldDef_MiniTable(upb_OneofDef_Field(o, 0));
	}
	/* the case, where upb_Message_WhichOneof reads it */
	uint32_t n =
	    *(const uint32_t *)((const char *)p.m + ~(ptrdiff_t)oneof_cache[slot].mf0->presence);
	if (n == 0)
		return NULL;
	const upb_FieldDef *f = upb_OneofDef_LookupNumber(oneof_cache[slot].o, n);
	return f ? upb_FieldDef_Name(f) : NULL;
}

bool pb_wrapped_u32(struct pb p, const char *f, uint32_t *out)
{
	struct pb w = pb_msg(p, f);
	if (!w.m)
		return false;
	*out = pb_u32(w, "value");
	return true;
}

bool pb_wrapped_u64(struct pb p, const char *f, uint64_t *out)
{
	struct pb w = pb_msg(p, f);
	if (!w.m)
		return false;
	*out = pb_u64(w, "value");
	return true;
}

bool pb_wrapped_bool(struct pb p, const char *f, bool *out)
{
	struct pb w = pb_msg(p, f);
	if (!w.m)
		return false;
	*out = pb_bool(w, "value");
	return true;
}

bool pb_wrapped_double(struct pb p, const char *f, double *out)
{
	struct pb w = pb_msg(p, f);
	if (!w.m)
		return false;
	*out = get(w, "value").double_val;
	return true;
}

/* ---- conversion context ----------------------------------------------------- */

/* Append @p s (@p n bytes) at *@p p, up to @p end. */
static void path_put(char **p, const char *end, const char *s, size_t n)
{
	size_t room = (size_t)(end - *p);
	if (n > room)
		n = room;
	memcpy(*p, s, n);
	*p += n;
}

size_t conv_push(struct conv *c, const char *fmt, ...)
{
	/* Every step of every resource pushes its path, which is printed only
	 * when something is refused: formatted here for the three
	 * conversions the converters use (%s, %zu, %.*s), not by vsnprintf
	 * (a tenth of a big RouteConfiguration's conversion, issue 17). */
	size_t mark = c->plen;
	char buf[256];
	char *p = buf;
	const char *end = buf + sizeof(buf) - 1;
	va_list ap;
	va_start(ap, fmt);
	for (const char *f = fmt; *f != 0 && p < end; f++) {
		if (*f != '%') {
			*p++ = *f;
		} else if (f[1] == 's') {
			const char *a = va_arg(ap, const char *);
			path_put(&p, end, a ? a : "(null)", a ? strlen(a) : 6);
			f++;
		} else if (f[1] == 'z' && f[2] == 'u') {
			size_t v = va_arg(ap, size_t);
			char d[24];
			int k = (int)sizeof(d);
			do
				d[--k] = (char)('0' + v % 10);
			while ((v /= 10) != 0);
			path_put(&p, end, d + k, sizeof(d) - (size_t)k);
			f += 2;
		} else if (f[1] == '.' && f[2] == '*' && f[3] == 's') {
			int len = va_arg(ap, int);
			const char *a = va_arg(ap, const char *);
			path_put(&p, end, a, len > 0 ? (size_t)len : 0);
			f += 3;
		} else {
			/* a conversion this formatter does not know: a programming
			 * error, caught by the unit tests */
			fprintf(stderr, "arion: internal: conv_push format '%s'\n", fmt);
			abort();
		}
	}
	va_end(ap);
	*p = 0;
	/* "[i]" joins directly; a name joins with a dot unless first */
	char *q = c->path + c->plen;
	const char *qend = c->path + sizeof(c->path) - 1;
	if (buf[0] != '[' && c->plen != 0)
		path_put(&q, qend, ".", 1);
	path_put(&q, qend, buf, (size_t)(p - buf));
	*q = 0;
	c->plen = (size_t)(q - c->path);
	return mark;
}

void conv_pop(struct conv *c, size_t mark)
{
	c->plen = mark;
	c->path[mark] = 0;
}

static const char *const type_names[ARN_CFG_NTYPES] = {
    "Listener", "RouteConfiguration", "Cluster", "ClusterLoadAssignment", "Secret", "ToolSet",
};

void conv_err_at(struct conv *c, const char *path, const char *msg)
{
	if (c->nerr++ > 0)
		arn_sb_puts(&c->msg, "; ");
	else
		arn_sb_printf(&c->msg, "%s '%s': ", type_names[c->type], c->res);
	if (path && *path)
		arn_sb_printf(&c->msg, "%s: ", path);
	arn_sb_puts(&c->msg, msg);
	arn_sb_printf(&c->detail, "%s\t%s\n", path ? path : "", msg);
}

void conv_err(struct conv *c, const char *field, const char *fmt, ...)
{
	char msg[768], path[1200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (field && *field)
		snprintf(path, sizeof(path), "%s%s%s", c->path,
			 (c->plen && field[0] != '[') ? "." : "", field);
	else
		snprintf(path, sizeof(path), "%s", c->path);
	conv_err_at(c, path, msg);
}

static bool in_list(const char *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = list; *p;) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		if (l == n && memcmp(p, name, n) == 0)
			return true;
		if (!e)
			break;
		p = e + 1;
	}
	return false;
}

/*
 * The fields of a type that an allowed list leaves out, in the type's
 * order, computed once per thread for each (type, list) pair: conv_only
 * then tests only those for presence, instead of walking every field of
 * every message with upb_Message_Next and searching the list by name for
 * each (40% of a big RouteConfiguration's conversion, issue 17). Keyed by
 * the list's address: conv_only's lists are literals. A full table falls
 * back to the walk.
 */
#define ONLY_CACHE 256 /* entries, a power of two */
struct only_ent {
	const upb_MessageDef *d;
	const char *allowed;
	struct only_field {
		const upb_FieldDef *f;
		const upb_MiniTable_Field *mf;
		enum field_kind k;
	} * out; /* the fields not allowed */
	size_t n;
};
static __thread struct only_ent only_cache[ONLY_CACHE];

static const struct only_ent *only_fields(const upb_MessageDef *d, const char *allowed)
{
	uintptr_t k = ((uintptr_t)d >> 4) * 31u + ((uintptr_t)allowed >> 2);
	size_t h = (size_t)((k * 0x9e3779b97f4a7c15ull) >> 56);
	for (size_t i = 0; i < ONLY_CACHE; i++) {
		struct only_ent *e = &only_cache[(h + i) & (ONLY_CACHE - 1)];
		if (e->d == d && e->allowed == allowed)
			return e;
		if (e->d != NULL)
			continue;
		int nf = upb_MessageDef_FieldCount(d);
		struct only_field *out = malloc(sizeof(*out) * (size_t)(nf > 0 ? nf : 1));
		if (out == NULL)
			return NULL;
		size_t n = 0;
		for (int j = 0; j < nf; j++) {
			const upb_FieldDef *f = upb_MessageDef_Field(d, j);
			if (!in_list(allowed, upb_FieldDef_Name(f)))
				out[n++] = (struct only_field){f, upb_FieldDef_MiniTable(f),
							       field_kind(f)};
		}
		e->out = out;
		e->n = n;
		e->allowed = allowed;
		e->d = d;
		return e;
	}
	return NULL;
}

int conv_only(struct conv *c, struct pb p, const char *allowed)
{
	if (!p.m)
		return 0;
	int n = 0;
	const struct only_ent *e = only_fields(p.d, allowed);
	if (e != NULL) {
		for (size_t i = 0; i < e->n; i++) {
			if (!field_set_mt(p.m, e->out[i].mf, e->out[i].k))
				continue;
			/* deprecated/ignored fields that change nothing Arion does */
			conv_err(c, upb_FieldDef_Name(e->out[i].f),
				 "not supported by Arion (remove it)");
			n++;
		}
	} else {
		size_t iter = kUpb_Message_Begin;
		const upb_FieldDef *f;
		upb_MessageValue v;
		while (upb_Message_Next(p.m, p.d, NULL, &f, &v, &iter)) {
			const char *name = upb_FieldDef_Name(f);
			if (in_list(allowed, name))
				continue;
			conv_err(c, name, "not supported by Arion (remove it)");
			n++;
		}
	}
	size_t ulen = 0;
	const char *u = upb_Message_GetUnknown(p.m, &ulen);
	if (ulen) {
		/* fields newer than the API copy (lib/proto/newer.c) are
		 * allowed as any field is, by name; any other is refused */
		const char *q = u, *qe = u + ulen;
		struct arn_proto_unknown uf;
		bool other = false;
		int r;
		while ((r = arn_proto_unknown_next(&q, qe, &uf)) > 0) {
			const struct arn_proto_newer *nf = arn_proto_newer_find(p.d, uf.num);
			if (!nf) {
				other = true;
			} else if (!in_list(allowed, nf->name)) {
				conv_err(c, nf->name, "not supported by Arion (remove it)");
				n++;
			}
		}
		if (other || r < 0) {
			conv_err(c, "",
				 "carries fields unknown to Arion's copy of the Envoy API (%s): "
				 "refused rather than ignored",
				 upb_MessageDef_FullName(p.d));
			n++;
		}
	}
	return n;
}

bool pb_newer_bool(struct pb p, const char *name)
{
	const struct arn_proto_newer *nf = p.m ? arn_proto_newer_named(p.d, name) : NULL;
	return nf && arn_proto_newer_bool(p.m, nf);
}

bool pb_newer_wrapped_bool(struct pb p, const char *name, bool *v)
{
	const struct arn_proto_newer *nf = p.m ? arn_proto_newer_named(p.d, name) : NULL;
	return nf && arn_proto_newer_wrapped_bool(p.m, nf, v);
}

upb_StringView pb_newer_str(struct pb p, const char *name)
{
	const struct arn_proto_newer *nf = p.m ? arn_proto_newer_named(p.d, name) : NULL;
	return nf ? arn_proto_newer_str(p.m, nf) : (upb_StringView){NULL, 0};
}

size_t pb_newer_map(struct conv *c, struct pb p, const char *name, struct pb_map_ent **out,
		    size_t max)
{
	*out = NULL;
	const struct arn_proto_newer *nf = p.m ? arn_proto_newer_named(p.d, name) : NULL;
	size_t ulen = 0;
	const char *u = nf ? upb_Message_GetUnknown(p.m, &ulen) : NULL;
	if (!ulen)
		return 0;
	const upb_MessageDef *ad = arn_proto_msgdef("google.protobuf.Any");
	struct arn_proto_unknown uf;
	size_t n = 0, cap = 0;
	const char *q = u, *e = u + ulen;
	while (arn_proto_unknown_next(&q, e, &uf) > 0) {
		if (uf.num != nf->num || uf.wt != 2)
			continue;
		/* an entry: key (1) and value (2); wire.c checked its shape */
		struct pb_map_ent ent = {{"", 0}, {NULL, ad}};
		const char *eq = uf.data, *ee = uf.data + uf.len;
		struct arn_proto_unknown ef;
		const char *val = "";
		size_t val_len = 0;
		while (arn_proto_unknown_next(&eq, ee, &ef) > 0) {
			if (ef.num == 1 && ef.wt == 2)
				ent.key = (upb_StringView){ef.data, ef.len};
			else if (ef.num == 2 && ef.wt == 2) {
				val = ef.data;
				val_len = ef.len;
			}
		}
		struct arn_sb err = ARN_SB_INIT;
		ent.value.m = arn_proto_decode_walked(val, val_len, ad, c->arena, &err);
		if (!ent.value.m) {
			conv_err(c, name, "%s", arn_sb_cstr(&err));
			arn_sb_free(&err);
			continue;
		}
		arn_sb_free(&err);
		/* a key again replaces its entry, as a map's would */
		size_t k = 0;
		while (k < n && !(ent.key.size == (*out)[k].key.size &&
				  (!ent.key.size ||
				   memcmp(ent.key.data, (*out)[k].key.data, ent.key.size) == 0)))
			k++;
		if (k == n) {
			if (n > max)
				break; /* the caller refuses past max */
			if (n == cap) {
				size_t nc = cap ? 2 * cap : 4;
				struct pb_map_ent *g = upb_Arena_Malloc(c->arena, nc * sizeof(*g));
				if (!g) {
					conv_err(c, name, "out of memory");
					return n;
				}
				if (n)
					memcpy(g, *out, n * sizeof(*g));
				*out = g;
				cap = nc;
			}
			n++;
		}
		(*out)[k] = ent;
	}
	return n;
}

/* A resource may name the same dependency thousands of times (a route
 * table with 10,000 routes to a few clusters): look names up in a hash
 * index, not by scanning the list (which made a big RouteConfiguration's
 * conversion quadratic). */
static uint32_t dep_hash(uint8_t t, const char *name, size_t len)
{
	uint32_t h = 2166136261u ^ t;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)name[i]) * 16777619u;
	return h;
}

static uint32_t *dep_slot(struct conv *c, uint8_t t, const char *name, size_t len)
{
	size_t mask = c->dep_idx_cap - 1;
	for (size_t i = dep_hash(t, name, len) & mask;; i = (i + 1) & mask) {
		uint32_t *slot = &c->dep_idx[i];
		if (*slot == 0)
			return slot;
		const struct conv_dep *d = &c->deps[*slot - 1];
		if (d->type == t && strncmp(d->name, name, len) == 0 && d->name[len] == '\0')
			return slot;
	}
}

static int dep_index_grow(struct conv *c)
{
	size_t cap = c->dep_idx_cap ? 2 * c->dep_idx_cap : 16;
	uint32_t *idx = calloc(cap, sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	free(c->dep_idx);
	c->dep_idx = idx;
	c->dep_idx_cap = cap;
	for (size_t i = 0; i < c->ndeps; i++) {
		const struct conv_dep *d = &c->deps[i];
		*dep_slot(c, d->type, d->name, strlen(d->name)) = (uint32_t)(i + 1);
	}
	return 0;
}

void conv_deps_index_free(struct conv *c)
{
	free(c->dep_idx);
	c->dep_idx = NULL;
	c->dep_idx_cap = 0;
}

int conv_dep(struct conv *c, enum arn_cfg_type t, const char *name, size_t len, bool warm,
	     uint32_t timeout_ms)
{
	if (2 * (c->ndeps + 1) > c->dep_idx_cap && dep_index_grow(c) != 0)
		return -ENOMEM;
	uint32_t *slot = dep_slot(c, (uint8_t)t, name, len);
	if (*slot) {
		struct conv_dep *d = &c->deps[*slot - 1];
		if (warm && !d->warm) {
			d->warm = true;
			d->timeout_ms = timeout_ms;
		} else if (warm &&
			   (timeout_ms == 0 || (d->timeout_ms && timeout_ms > d->timeout_ms))) {
			d->timeout_ms = timeout_ms;
		}
		return 0;
	}
	if (c->ndeps == c->capdeps) {
		size_t cap = c->capdeps ? 2 * c->capdeps : 8;
		struct conv_dep *nd = realloc(c->deps, cap * sizeof(*nd));
		if (!nd)
			return -ENOMEM;
		c->deps = nd;
		c->capdeps = cap;
	}
	char *s = strndup(name, len);
	if (!s)
		return -ENOMEM;
	c->deps[c->ndeps++] = (struct conv_dep){
	    .type = (uint8_t)t, .warm = warm, .timeout_ms = timeout_ms, .name = s};
	*slot = (uint32_t)c->ndeps;
	return 0;
}

void *conv_alloc(struct conv *c, size_t n)
{
	return arn_pool_alloc(c->pool, n);
}

const char *conv_str(struct conv *c, upb_StringView s)
{
	return arn_pool_strndup(c->pool, s.data, s.size);
}

void conv_san_type(struct conv *c, struct pb sm, struct arn_cfg_str_match *out)
{
	int32_t ty = pb_i32(sm, "san_type");
	if (ty == ARN_CFG_SAN_EMAIL || ty == ARN_CFG_SAN_DNS || ty == ARN_CFG_SAN_URI ||
	    ty == ARN_CFG_SAN_IP)
		out->san_type = (uint8_t)ty;
	else if (ty == 0)
		conv_err(c, "san_type", "SAN_TYPE_UNSPECIFIED: set EMAIL, DNS, URI or IP_ADDRESS");
	else
		conv_err(c, "san_type",
			 "%d is not supported by Arion (EMAIL, DNS, URI and IP_ADDRESS are)", ty);
}

bool conv_hdr_ok(struct conv *c, const char *field, upb_StringView s)
{
	for (size_t i = 0; i < s.size; i++)
		if (s.data[i] == '\r' || s.data[i] == '\n' || s.data[i] == 0) {
			conv_err(c, field, "contains CR, LF or NUL");
			return false;
		}
	return true;
}

uint32_t conv_wrapped_u32_in(struct conv *c, struct pb p, const char *f, uint32_t lo, uint32_t hi,
			     uint32_t def)
{
	uint32_t v;
	if (!pb_wrapped_u32(p, f, &v))
		return def;
	if (v < lo || v > hi) {
		conv_err(c, f, "%u is out of range: %u to %u", v, lo, hi);
		return def;
	}
	return v;
}

const char *conv_hdr_str(struct conv *c, const char *field, upb_StringView s)
{
	conv_hdr_ok(c, field, s);
	return conv_str(c, s);
}

const char *conv_lstr(struct conv *c, upb_StringView s)
{
	char *r = arn_pool_strndup(c->pool, s.data, s.size);
	if (r)
		for (size_t i = 0; i < s.size; i++)
			r[i] = (char)tolower((unsigned char)r[i]);
	return r;
}

void conv_str_list(struct conv *c, struct pb p, const char *f, const char ***out, size_t *n,
		   bool lower)
{
	size_t len = pb_len(p, f);
	if (!len)
		return;
	*out = CONV_NEW(c, const char *, len);
	if (!*out)
		return;
	*n = len;
	for (size_t i = 0; i < len; i++)
		(*out)[i] =
		    lower ? conv_lstr(c, pb_str_at(p, f, i)) : conv_str(c, pb_str_at(p, f, i));
}

void conv_upgrades(struct conv *c, struct pb p, bool route, struct arn_cfg_upgrade **out, size_t *n)
{
	size_t len = pb_len(p, "upgrade_configs");
	if (!len)
		return;
	*out = CONV_NEW(c, struct arn_cfg_upgrade, len);
	if (!*out)
		return;
	for (size_t i = 0; i < len; i++) {
		struct pb u = pb_at(p, "upgrade_configs", i);
		size_t m = conv_push(c, "upgrade_configs[%zu]", i);
		conv_only(c, u, route ? "upgrade_type,enabled" : "upgrade_type,enabled,filters");
		if (!route && pb_len(u, "filters") > 0)
			conv_err(c, "filters",
				 "custom upgrade filter chains are not supported by Arion: leave "
				 "filters empty and upgrades run the connection manager's filters");
		upb_StringView t = pb_str(u, "upgrade_type");
		struct arn_cfg_upgrade *e = &(*out)[i];
		e->type = conv_str(c, t);
		e->len = t.size;
		e->enabled = true;
		pb_wrapped_bool(u, "enabled", &e->enabled);
		if (t.size == 0)
			conv_err(c, "upgrade_type", "missing");
		else if (t.size == 7 && strncasecmp(t.data, "CONNECT", 7) == 0)
			conv_err(c, "upgrade_type",
				 "CONNECT is not supported by Arion yet (requests with method "
				 "CONNECT are refused)");
		for (size_t j = 0; j < i && e->type; j++)
			if ((*out)[j].len == t.size && (*out)[j].type &&
			    strncasecmp((*out)[j].type, t.data, t.size) == 0)
				conv_err(c, "upgrade_type", "'%s' appears twice (Envoy refuses it)",
					 e->type);
		conv_pop(c, m);
	}
	*n = len;
}

void conv_refs(struct conv *c, struct arn_cfg_ref *r, upb_StringView s)
{
	r->name = conv_str(c, s);
	r->len = s.size;
	r->hash = arn_cfg_hash(s.data, s.size);
}

void *conv_obj_new(struct conv *c, size_t size, enum arn_cfg_type t, upb_StringView name)
{
	struct arn_cfg_obj *o = conv_alloc(c, size);
	if (!o)
		return NULL;
	o->refs = 1;
	o->type = (uint8_t)t;
	o->name = conv_str(c, name);
	o->name_len = name.size;
	o->hash = arn_cfg_hash(name.data, name.size);
	o->pool = c->pool;
	o->reclaim = c->reclaim;
	return o;
}

int conv_read_file(struct conv *c, const char *field, const char *path, size_t max, char **buf,
		   size_t *len)
{
	*buf = NULL;
	*len = 0;
	c->files_read++;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat sb;
	int rc = 0;
	if (fd < 0) {
		rc = -errno;
		conv_err(c, field, "cannot open '%s': %s", path, strerror(errno));
		return rc;
	}
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		conv_err(c, field, "'%s' is not a regular file", path);
		close(fd);
		return -EINVAL;
	}
	if ((size_t)sb.st_size > max) {
		conv_err(c, field, "'%s' is larger than %zu bytes", path, max);
		close(fd);
		return -EFBIG;
	}
	*buf = malloc((size_t)sb.st_size + 1);
	if (!*buf) {
		close(fd);
		return -ENOMEM;
	}
	while (*len < (size_t)sb.st_size) {
		ssize_t n = read(fd, *buf + *len, (size_t)sb.st_size - *len);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			break;
		}
		*len += (size_t)n;
	}
	(*buf)[*len] = 0;
	close(fd);
	return 0;
}

/* ---- small Envoy types ------------------------------------------------------- */

bool conv_duration(struct conv *c, struct pb p, const char *f, uint32_t *out, bool must_be_positive)
{
	struct pb d = pb_msg(p, f);
	if (!d.m)
		return false;
	int64_t s = pb_i64(d, "seconds");
	int32_t ns = pb_i32(d, "nanos");
	if (s < 0 || ns < 0 || ns > 999999999) {
		conv_err(c, f, "must be a non-negative duration");
		return false;
	}
	/* google.protobuf.Duration's range, which Envoy enforces on every
	 * Duration ("Duration out-of-range"): bytes from a control plane can
	 * carry any int64, and seconds * 1000 past 64 bits would wrap to a
	 * short timeout. */
	if (s > CONV_DURATION_MAX_SECONDS) {
		conv_err(c, f, "%lld s is out of range (at most %lld s, 10000 years)", (long long)s,
			 (long long)CONV_DURATION_MAX_SECONDS);
		return false;
	}
	if (must_be_positive && s == 0 && ns == 0) {
		conv_err(c, f, "must be greater than 0s");
		return false;
	}
	uint64_t ms = (uint64_t)s * 1000u + ((uint64_t)ns + 999999u) / 1000000u;
	*out = ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
	return true;
}

void conv_headers_count(struct conv *c, struct pb cpo, uint32_t *out)
{
	uint32_t v;
	if (!pb_wrapped_u32(cpo, "max_headers_count", &v))
		return;
	if (v == 0 || v > ARN_CFG_MAX_HEADERS_COUNT)
		conv_err(c, "max_headers_count", "%u: must be 1 to %u", v,
			 ARN_CFG_MAX_HEADERS_COUNT);
	*out = v;
}

int conv_socket_address(struct conv *c, struct pb addr, const char *f, uint32_t *ip, uint16_t *port,
			bool allow_any)
{
	size_t m0 = conv_push(c, "%s", f);
	int rc = 0;
	const char *which = pb_which(addr, "address");
	if (!addr.m || !which) {
		conv_err(c, "", "missing: give socket_address {address, port_value}");
		conv_pop(c, m0);
		return -EINVAL;
	}
	if (strcmp(which, "socket_address") != 0) {
		conv_err(c, which, "only socket_address is supported (IPv4 over Arion's stack)");
		conv_pop(c, m0);
		return -EINVAL;
	}
	struct pb sa = pb_msg(addr, "socket_address");
	size_t m1 = conv_push(c, "socket_address");
	if (conv_only(c, sa, "address,port_value,protocol,ipv4_compat"))
		rc = -EINVAL;
	if (pb_i32(sa, "protocol") != 0) {
		conv_err(c, "protocol", "only TCP is supported");
		rc = -EINVAL;
	}
	upb_StringView a = pb_str(sa, "address");
	char buf[ARN_CFG_DNS_MAX_NAME + 1];
	struct in_addr in;
	if (a.size == 0 || a.size >= sizeof(buf) || (a.size >= 64 && !c->dns_names)) {
		conv_err(c, "address", "missing or too long: an IPv4 address is required");
		rc = -EINVAL;
	} else {
		memcpy(buf, a.data, a.size);
		buf[a.size] = 0;
		if (inet_pton(AF_INET, buf, &in) == 1) {
			*ip = ntohl(in.s_addr);
			if (*ip == 0 && !allow_any) {
				conv_err(c, "address", "0.0.0.0 is not an endpoint address");
				rc = -EINVAL;
			}
		} else if (strchr(buf, ':')) {
			if (allow_any && strcmp(buf, "::") == 0) {
				*ip = 0; /* Envoy's "::" listens on every address, IPv4 included */
			} else {
				conv_err(
				    c, "address",
				    "'%s': IPv6 is not supported by Arion's data plane (IPv4 only)",
				    buf);
				rc = -EINVAL;
			}
		} else if (c->dns_names) {
			/* a STRICT_DNS / LOGICAL_DNS cluster's hostname: resolved
			 * on the control lcore (dns.c); the address stays 0 here */
			*ip = 0;
			for (size_t i = 0; i < a.size; i++) {
				char ch = buf[i];
				if (!isalnum((unsigned char)ch) && ch != '-' && ch != '.' &&
				    ch != '_') {
					conv_err(c, "address", "'%s' is not a hostname", buf);
					rc = -EINVAL;
					break;
				}
			}
		} else {
			conv_err(c, "address",
				 "'%s' is not an IPv4 address (a hostname needs a STRICT_DNS or "
				 "LOGICAL_DNS cluster)",
				 buf);
			rc = -EINVAL;
		}
	}
	if (strcmp(pb_which(sa, "port_specifier") ? pb_which(sa, "port_specifier") : "",
		   "named_port") == 0) {
		conv_err(c, "named_port", "not supported: use port_value");
		rc = -EINVAL;
	}
	uint32_t pv = pb_u32(sa, "port_value");
	if (pv > 65535) {
		conv_err(c, "port_value", "%u is not a TCP port", pv);
		rc = -EINVAL;
	} else if (pv == 0) {
		conv_err(c, "port_value", "missing: a port from 1 to 65535 is required");
		rc = -EINVAL;
	}
	*port = (uint16_t)pv;
	conv_pop(c, m1);
	conv_pop(c, m0);
	return rc;
}

static void regex_free_cb(void *re)
{
	arn_regex_free(re);
}

const struct arn_regex *conv_regex(struct conv *c, struct pb rm)
{
	if (conv_only(c, rm, "google_re2,regex"))
		return NULL;
	/* google_re2.max_program_size (envoy.type.matcher.v3's; xds's
	 * RegexMatcher, in RBAC matchers, has none): accepted, Arion enforces
	 * its own fixed program-size limit */
	upb_StringView r = pb_str(rm, "regex");
	if (r.size == 0) {
		conv_err(c, "regex", "missing: an empty regex");
		return NULL;
	}
	char err[256];
	struct arn_regex *re = arn_regex_compile(r.data, r.size, err, sizeof(err));
	if (!re) {
		conv_err(c, "regex", "'%.*s': %s", (int)(r.size > 200 ? 200 : r.size), r.data, err);
		return NULL;
	}
	if (arn_pool_on_free(c->pool, regex_free_cb, re) != 0)
		return NULL;
	return re;
}

int conv_string_matcher(struct conv *c, struct pb sm, struct arn_cfg_str_match *out)
{
	if (conv_only(c, sm, "exact,prefix,suffix,safe_regex,contains,ignore_case"))
		return -EINVAL;
	const char *w = pb_which(sm, "match_pattern");
	out->ignore_case = pb_bool(sm, "ignore_case");
	if (!w) {
		conv_err(c, "",
			 "no match pattern: set exact, prefix, suffix, contains or safe_regex");
		return -EINVAL;
	}
	if (strcmp(w, "safe_regex") == 0) {
		size_t m = conv_push(c, "safe_regex");
		out->kind = ARN_CFG_STR_REGEX;
		struct pb rm = pb_msg(sm, "safe_regex");
		out->re = conv_regex(c, rm);
		/* its pattern, for what identifies a matcher (a TLS session
		 * id context: tls_ctx.c) */
		upb_StringView pat = pb_str(rm, "regex");
		out->s = conv_str(c, pat);
		out->len = pat.size;
		conv_pop(c, m);
		if (out->ignore_case) {
			conv_err(c, "ignore_case",
				 "has no effect on safe_regex (write (?i) in the regex)");
			return -EINVAL;
		}
		return out->re ? 0 : -EINVAL;
	}
	upb_StringView s = pb_str(sm, w);
	out->kind = strcmp(w, "exact") == 0	 ? ARN_CFG_STR_EXACT
		    : strcmp(w, "prefix") == 0	 ? ARN_CFG_STR_PREFIX
		    : strcmp(w, "suffix") == 0	 ? ARN_CFG_STR_SUFFIX
		    : strcmp(w, "contains") == 0 ? ARN_CFG_STR_CONTAINS
						 : 255;
	if (out->kind == 255) {
		conv_err(c, w, "not supported");
		return -EINVAL;
	}
	if (s.size == 0 && out->kind != ARN_CFG_STR_EXACT) {
		conv_err(c, w, "must not be empty");
		return -EINVAL;
	}
	out->s = out->ignore_case ? conv_lstr(c, s) : conv_str(c, s);
	out->len = s.size;
	return 0;
}

struct pb conv_any(struct conv *c, struct pb any, const char *full_name)
{
	struct pb r = {NULL, arn_proto_msgdef(full_name)};
	if (!any.m) {
		conv_err(c, "", "missing typed_config (%s)", full_name);
		return r;
	}
	struct arn_sb err = ARN_SB_INIT;
	upb_Message *m = arn_proto_any_unpack(any.m, r.d, NULL, c->arena, &err);
	if (!m)
		conv_err(c, "", "%s", arn_sb_cstr(&err));
	arn_sb_free(&err);
	r.m = m;
	return r;
}

uint32_t conv_fetch_timeout(struct conv *c, struct pb cs)
{
	uint32_t ms = c->default_fetch_ms;
	if (cs.m && pb_has(cs, "initial_fetch_timeout")) {
		uint32_t v = 0;
		if (conv_duration(c, cs, "initial_fetch_timeout", &v, false))
			ms = v; /* 0: wait forever, as Envoy */
	}
	return ms;
}

int conv_header_add_list(struct conv *c, struct pb p, const char *f,
			 struct arn_cfg_header_add **out, size_t *n)
{
	size_t len = pb_len(p, f);
	if (!len)
		return 0;
	*out = CONV_NEW(c, struct arn_cfg_header_add, len);
	if (!*out)
		return -ENOMEM;
	*n = len;
	for (size_t i = 0; i < len; i++) {
		struct pb hvo = pb_at(p, f, i);
		size_t m = conv_push(c, "%s[%zu]", f, i);
		conv_only(c, hvo, "header,append,append_action,keep_empty_value");
		struct pb hv = pb_msg(hvo, "header");
		struct arn_cfg_header_add *h = &(*out)[i];
		if (!hv.m) {
			conv_err(c, "header", "missing");
		} else {
			size_t m2 = conv_push(c, "header");
			conv_only(c, hv, "key,value");
			conv_pop(c, m2);
			upb_StringView k = pb_str(hv, "key");
			if (k.size == 0)
				conv_err(c, "header.key", "missing");
			for (size_t j = 0; j < k.size; j++)
				if (k.data[j] <= ' ' || k.data[j] == ':' || k.data[j] == 127) {
					if (j == 0 && k.data[0] == ':')
						conv_err(c, "header.key",
							 "pseudo-headers (%.*s) cannot be added",
							 (int)k.size, k.data);
					else
						conv_err(c, "header.key",
							 "not a valid header name");
					break;
				}
			upb_StringView v = pb_str(hv, "value");
			h->key = conv_lstr(c, k);
			h->key_len = k.size;
			h->value = conv_hdr_str(c, "header.value", v);
			h->value_len = v.size;
		}
		bool append;
		bool has_append = pb_wrapped_bool(hvo, "append", &append);
		int32_t action = pb_i32(hvo, "append_action");
		if (has_append && action != 0)
			conv_err(c, "append", "set either append or append_action, not both");
		if (has_append)
			h->append = append ? ARN_CFG_APPEND_IF_EXISTS_OR_ADD
					   : ARN_CFG_OVERWRITE_IF_EXISTS_OR_ADD;
		else if (action >= 0 && action <= 2)
			h->append = (uint8_t)action;
		else
			conv_err(c, "append_action", "unknown value %d", action);
		h->keep_empty_value = pb_bool(hvo, "keep_empty_value");
		conv_pop(c, m);
	}
	return 0;
}

void conv_header_value_ops(struct conv *c, const char *field, const char *v, size_t n)
{
	if (!v || !memchr(v, '%', n))
		return;
	char err[320];
	if (arn_subst_check(v, n, err, sizeof(err)) < 0)
		conv_err(c, field, "%s", err);
}

void conv_header_add_ops(struct conv *c, const char *f, const struct arn_cfg_header_add *a,
			 size_t n)
{
	for (size_t i = 0; a && i < n; i++) {
		if (!a[i].value || !memchr(a[i].value, '%', a[i].value_len))
			continue;
		size_t m = conv_push(c, "%s[%zu]", f, i);
		conv_header_value_ops(c, "header.value", a[i].value, a[i].value_len);
		conv_pop(c, m);
	}
}

void conv_header_remove_list(struct conv *c, struct pb p, const char *f, struct arn_cfg_ref **out,
			     size_t *n)
{
	size_t len = pb_len(p, f);
	if (!len)
		return;
	*out = CONV_NEW(c, struct arn_cfg_ref, len);
	if (!*out)
		return;
	*n = len;
	for (size_t i = 0; i < len; i++) {
		upb_StringView s = pb_str_at(p, f, i);
		if (s.size == 0 || s.data[0] == ':') {
			size_t m = conv_push(c, "%s[%zu]", f, i);
			conv_err(c, "", "'%.*s' cannot be removed", (int)s.size, s.data);
			conv_pop(c, m);
		}
		(*out)[i].name = conv_lstr(c, s);
		(*out)[i].len = s.size;
	}
}

void conv_header_ops(struct conv *c, struct pb p, struct arn_cfg_header_ops *ops)
{
	conv_header_add_list(c, p, "request_headers_to_add", &ops->req_add, &ops->n_req_add);
	conv_header_add_list(c, p, "response_headers_to_add", &ops->resp_add, &ops->n_resp_add);
	conv_header_add_ops(c, "request_headers_to_add", ops->req_add, ops->n_req_add);
	conv_header_add_ops(c, "response_headers_to_add", ops->resp_add, ops->n_resp_add);
	conv_header_remove_list(c, p, "request_headers_to_remove", &ops->req_remove,
				&ops->n_req_remove);
	conv_header_remove_list(c, p, "response_headers_to_remove", &ops->resp_remove,
				&ops->n_resp_remove);
}

/* RuntimeFractionalPercent and FractionalPercent (filters, mirror policies,
 * the fault filter) */
bool conv_sv_ieq(upb_StringView a, const char *s)
{
	size_t n = strlen(s);
	if (a.size != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = a.data[i];
		if ((ch >= 'A' && ch <= 'Z' ? ch + 32 : ch) != s[i])
			return false;
	}
	return true;
}

void conv_envoy_grpc(struct conv *c, struct pb eg, struct arn_cfg_ref *cluster,
		     const char **authority, uint32_t *authority_len)
{
	conv_only(c, eg, "cluster_name,authority");
	upb_StringView cn = pb_str(eg, "cluster_name");
	if (!cn.size) {
		conv_err(c, "cluster_name", "missing (Envoy requires it)");
	} else {
		conv_refs(c, cluster, cn);
		conv_dep(c, ARN_CFG_CLUSTER, cn.data, cn.size, false, 0);
	}
	upb_StringView au = pb_str(eg, "authority");
	if (au.size) {
		*authority = conv_hdr_str(c, "authority", au);
		*authority_len = (uint32_t)au.size;
	}
}

void conv_grpc_metadata(struct conv *c, struct pb gs, const char *f, unsigned max, const char *what,
			struct arn_cfg_ext_authz_hdr **md, size_t *n_md)
{
	size_t k = pb_len(gs, f);
	if (k > max)
		conv_err(c, f, "%zu entries: at most %u (the %s's headers)", k, max, what);
	*md = CONV_NEW(c, struct arn_cfg_ext_authz_hdr, k ? k : 1);
	for (size_t i = 0; *md && i < k && i < max; i++) {
		size_t m = conv_push(c, "%s[%zu]", f, i);
		struct pb hv = pb_at(gs, f, i);
		conv_only(c, hv, "key,value");
		upb_StringView key = pb_str(hv, "key"), val = pb_str(hv, "value");
		if (!key.size || key.data[0] == ':' || conv_sv_ieq(key, "host") ||
		    conv_sv_ieq(key, "content-length") || conv_sv_ieq(key, "content-type") ||
		    conv_sv_ieq(key, "te") || conv_sv_ieq(key, "transfer-encoding") ||
		    conv_sv_ieq(key, "connection") || conv_sv_ieq(key, "grpc-timeout")) {
			conv_err(c, "key",
				 "'%.*s': not a header Arion lets the configuration set on the "
				 "%s (its request line, framing and gRPC headers are Arion's)",
				 (int)key.size, key.data, what);
		} else if (conv_hdr_ok(c, "key", key)) {
			const char *v = conv_hdr_str(c, "value", val);
			const char *kn = conv_lstr(c, key);
			if (v && kn)
				(*md)[(*n_md)++] = (struct arn_cfg_ext_authz_hdr){
				    kn, v, (uint32_t)key.size, (uint32_t)val.size};
		}
		conv_pop(c, m);
	}
}

/* An SdsSecretConfig: a name on the ADS stream (X13), a warming
 * dependency. */
void conv_sds_secret(struct conv *c, struct pb s, const char *f, struct arn_cfg_ref *r)
{
	size_t m = conv_push(c, "%s", f);
	if (!s.m) {
		conv_err(c, "", "missing (Envoy requires it)");
		conv_pop(c, m);
		return;
	}
	conv_only(c, s, "name,sds_config");
	upb_StringView name = pb_str(s, "name");
	struct pb cs = pb_msg(s, "sds_config");
	if (!name.size)
		conv_err(c, "name", "missing: a secret is referenced by name (X13)");
	if (cs.m && !pb_has(cs, "ads"))
		conv_err(c, "sds_config",
			 "an sds_config source is refused: secrets are referenced by name only "
			 "and always arrive on the ADS stream; remove sds_config or use ads (X13)");
	if (name.size) {
		conv_refs(c, r, name);
		conv_dep(c, ARN_CFG_SECRET, name.data, name.size, true, conv_fetch_timeout(c, cs));
	}
	conv_pop(c, m);
}

bool conv_runtime_flag(struct conv *c, struct pb p, const char *f)
{
	struct pb rf = pb_msg(p, f);
	if (!rf.m)
		return true;
	size_t m = conv_push(c, "%s", f);
	conv_only(c, rf, "default_value,runtime_key");
	bool v = true;
	if (!pb_wrapped_bool(rf, "default_value", &v))
		conv_err(c, "default_value", "missing (Envoy requires it)");
	conv_pop(c, m);
	return v;
}

void conv_runtime_fraction(struct conv *c, struct pb p, const char *f, struct arn_cfg_fraction *out)
{
	out->numerator = 0;
	out->denominator = 100;
	struct pb rf = pb_msg(p, f);
	if (!rf.m)
		return;
	size_t m = conv_push(c, "%s", f);
	conv_only(c, rf, "default_value,runtime_key");
	struct pb fp = pb_msg(rf, "default_value");
	if (!fp.m)
		conv_err(c, "default_value", "missing (Envoy requires it)");
	else
		conv_fractional_percent(c, fp, "default_value", out);
	conv_pop(c, m);
}

void conv_fractional_percent(struct conv *c, struct pb fp, const char *f,
			     struct arn_cfg_fraction *out)
{
	size_t m = conv_push(c, "%s", f);
	conv_only(c, fp, "numerator,denominator");
	static const uint32_t den[] = {100, 10000, 1000000};
	int32_t d = pb_i32(fp, "denominator");
	if (d < 0 || d > 2)
		conv_err(c, "denominator", "unknown value %d", d);
	else
		out->denominator = den[d];
	out->numerator = pb_u32(fp, "numerator");
	/* Envoy caps a numerator above the denominator at 100 % */
	if (out->numerator > out->denominator)
		out->numerator = out->denominator;
	conv_pop(c, m);
}

/* ---- names Arion writes into a message ------------------------------------------------------ */

/* An HTTP header name Arion writes or removes (jwt_authn's, basic_auth's
 * headers): an RFC 9110 token, lower cased. Here, below the converters
 * of every filter that names one. */
const char *conv_hdr_name(struct conv *c, const char *field, upb_StringView s, size_t *len)
{
	*len = s.size;
	if (s.size == 0) {
		conv_err(c, field, "missing");
		return NULL;
	}
	for (size_t i = 0; i < s.size; i++) {
		unsigned char ch = (unsigned char)s.data[i];
		if (ch <= 0x20 || ch >= 0x7f || strchr("\"(),/:;<=>?@[\\]{}", ch)) {
			conv_err(c, field, "byte 0x%02x at %zu is not a header name character", ch,
				 i);
			return NULL;
		}
	}
	return conv_lstr(c, s);
}

/*
 * A hash policy cookie's name or path, which Arion writes as they are into
 * the Set-Cookie line of a generated cookie: a name is an RFC 6265 token
 * (RFC 9110 tchar: no CTL, space or separator such as ; = , " that would
 * end it or start an attribute); a path any visible ASCII but ';' (RFC
 * 6265 path-value, which would start an attribute; a space or a byte past
 * 0x7e has no place in a URL path). @p max bounds it, so the line always
 * fits the stream's text. Refused naming the field.
 */
bool cookie_octets_ok(struct conv *c, const char *field, upb_StringView s, bool token, size_t max)
{
	if (s.size > max) {
		conv_err(c, field, "longer than %zu bytes", max);
		return false;
	}
	for (size_t i = 0; i < s.size; i++) {
		unsigned char ch = (unsigned char)s.data[i];
		bool ok = ch > 0x20 && ch < 0x7f && ch != ';';
		if (ok && token)
			ok = !strchr("\"(),/:<=>?@[\\]{}", ch);
		if (!ok) {
			conv_err(c, field,
				 token ? "byte 0x%02x at %zu is not a cookie name character (RFC "
					 "6265: a token, no CTL, space or separator)"
				       : "byte 0x%02x at %zu is not a cookie path character (RFC "
					 "6265: visible ASCII but ';')",
				 ch, i);
			return false;
		}
	}
	return true;
}

/* Http1ProtocolOptions.header_key_format (of a connection manager or a
 * cluster): Envoy's preserve_case stateful formatter writes header names
 * with the case they came with, and Envoy's own headers lower-case,
 * which is what Arion's HTTP/1 codec always does (a received line is
 * forwarded as it came; the headers it adds are lower-case), so it is
 * accepted with its defaults; the status line's reason is the standard
 * one, as Envoy's without forward_reason_phrase. proper_case_words
 * (Envoy rewrites every name Proper-Case) and the formatter's other
 * settings are refused by name. */
void conv_header_key_format(struct conv *c, struct pb h1)
{
	struct pb f = pb_msg(h1, "header_key_format");
	if (!f.m)
		return;
	size_t m = conv_push(c, "header_key_format");
	conv_only(c, f, "stateful_formatter");
	struct pb sf = pb_msg(f, "stateful_formatter");
	if (sf.m) {
		size_t m2 = conv_push(c, "stateful_formatter");
		conv_only(c, sf, "name,typed_config");
		size_t m3 = conv_push(c, "typed_config");
		struct pb pc = conv_any(c, pb_msg(sf, "typed_config"),
					"envoy.extensions.http.header_formatters.preserve_case.v3."
					"PreserveCaseFormatterConfig");
		if (pc.m) {
			conv_only(c, pc, "formatter_type_on_envoy_headers");
			if (pb_i32(pc, "formatter_type_on_envoy_headers") != 0)
				conv_err(
				    c, "formatter_type_on_envoy_headers",
				    "PROPER_CASE is not supported by Arion (its own headers are "
				    "lower-case)");
		}
		conv_pop(c, m3);
		conv_pop(c, m2);
	}
	conv_pop(c, m);
}
