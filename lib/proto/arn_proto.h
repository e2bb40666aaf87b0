/*
 * upb glue: one descriptor pool for every protobuf type Arion knows, Any
 * unpacking by type URL, binary and JSON conversion.
 *
 * The pool holds the descriptors compiled into libgrpc.so (Envoy's API as
 * gRPC 1.51 carries it) plus Arion's own protos (proto/). It is built once,
 * on the control lcore, by arn_proto_init(), and is read-only afterwards.
 * Workers never touch protobufs.
 */
#ifndef ARN_PROTO_H
#define ARN_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "upb/def.h"
#include "upb/msg.h"
#include "upb/upb.h"

#include "arn_envoy_types.h"
#include "arn_sb.h"

/**
 * Build the pool (idempotent; not thread-safe: call from the control lcore
 * before anything else uses protobufs).
 * @return 0, or -ENOMEM / -EINVAL (a descriptor failed to load; logged).
 */
int arn_proto_init(void);

/** The pool; arn_proto_init() must have succeeded. Owned by this module. */
const upb_DefPool *arn_proto_pool(void);

/** Message definition by full name ("envoy.config.cluster.v3.Cluster"), or NULL. */
const upb_MessageDef *arn_proto_msgdef(const char *full_name);

/**
 * Message definition for a type URL ("type.googleapis.com/<full name>"; any
 * prefix up to the last '/' is accepted as protobuf does), or NULL.
 */
const upb_MessageDef *arn_proto_msgdef_by_url(const char *url, size_t len);

/**
 * Parse @p len bytes of @p m's wire format into a new message on @p arena,
 * after arn_proto_wire_check (lenient), so no input can abort the process.
 * @return the message, or NULL with the reason in @p err (appended).
 */
upb_Message *arn_proto_decode(const char *buf, size_t len, const upb_MessageDef *m,
			      upb_Arena *arena, struct arn_sb *err);
/**
 * arn_proto_decode without the walk, for bytes the caller has just passed
 * through arn_proto_wire_check itself (lenient or strict: strict refuses
 * more). Walking a 10,000-route table twice cost a sixth of applying it.
 */
upb_Message *arn_proto_decode_walked(const char *buf, size_t len, const upb_MessageDef *m,
				     upb_Arena *arena, struct arn_sb *err);

/**
 * Walk the wire format of a serialized @p m (into sub-messages, map entries
 * and, if @p strict, Any values of known types) before upb_Decode sees it. Always refused:
 * unknown fields inside map entries (upb 1.51 aborts on them), groups,
 * nesting beyond 64 levels, known fields with the wrong wire type. With
 * @p strict, unknown fields anywhere are refused too (Arion's policy for
 * resources: a field it does not know is a field it would silently ignore);
 * without, they are skipped as protobuf does (a newer peer's envelope).
 * @return true if @p buf may be decoded; else false with the reason in @p why.
 */
bool arn_proto_wire_check(const char *buf, size_t len, const upb_MessageDef *m, bool strict,
			  char *why, size_t whylen);

/**
 * Unpack an Any whose type must be @p expect (NULL: any known type; then
 * *@p got_def, if not NULL, receives the type found).
 * @return the message on @p arena, or NULL with the reason in @p err: unknown
 *   type, a type other than @p expect, or undecodable bytes.
 */
upb_Message *arn_proto_any_unpack(const upb_Message *any, const upb_MessageDef *expect,
				  const upb_MessageDef **got_def, upb_Arena *arena,
				  struct arn_sb *err);

/** The type URL of an Any (not NUL-terminated). */
upb_StringView arn_proto_any_type_url(const upb_Message *any);

/** The full type name of an Any: its URL after the last '/'. */
upb_StringView arn_proto_any_type_name(const upb_Message *any);

/**
 * Decode JSON (proto3 JSON mapping; proto field names or lowerCamel names)
 * into a new message of type @p m. Unknown fields are errors.
 * @return the message, or NULL with upb's reason in @p err.
 */
upb_Message *arn_proto_from_json(const char *json, size_t len, const upb_MessageDef *m,
				 upb_Arena *arena, struct arn_sb *err);

/**
 * Append @p msg as JSON (proto field names; defaults omitted) to @p out.
 * @return 0; -EINVAL (an Any inside is of an unknown type or undecodable:
 *   nothing appended), -ENOMEM.
 */
int arn_proto_to_json(const upb_Message *msg, const upb_MessageDef *m, struct arn_sb *out);

/** Serialize @p msg; the bytes live on @p arena. NULL on failure. */
char *arn_proto_encode(const upb_Message *msg, const upb_MessageDef *m, upb_Arena *arena,
		       size_t *len);

/*
 * Fields of Envoy's API newer than gRPC 1.51's copy (newer.c says why and
 * how): in the main pool they are unknown fields, read from a message's
 * unknown bytes by the converter that acts on them.
 */
enum arn_proto_newer_kind {
	ARN_PROTO_NEWER_BOOL = 0,	/* bool: varint */
	ARN_PROTO_NEWER_MAP_ANY = 1,	/* map<string, google.protobuf.Any>: entries */
	ARN_PROTO_NEWER_STRING = 2,	/* string: length-delimited */
	ARN_PROTO_NEWER_BOOL_VALUE = 3, /* google.protobuf.BoolValue: a message of a bool (1) */
};
struct arn_proto_newer {
	const char *msg;       /* the message's full name */
	const char *name;      /* the field's name */
	const char *json_name; /* and its JSON name */
	const char *file;      /* the .proto file declaring msg */
	const char *entry;     /* map: the entry type's simple name */
	uint32_t num;
	uint8_t kind; /* enum arn_proto_newer_kind */
};
extern const struct arn_proto_newer arn_proto_newer_fields[];
extern const size_t arn_proto_n_newer_fields;

/** The newer field number @p num of @p m, or NULL. */
const struct arn_proto_newer *arn_proto_newer_find(const upb_MessageDef *m, uint32_t num);
/** The newer field named @p name of @p m, or NULL. */
const struct arn_proto_newer *arn_proto_newer_named(const upb_MessageDef *m, const char *name);
/** A newer bool field's value in @p msg's unknown bytes (false if absent). */
bool arn_proto_newer_bool(const upb_Message *msg, const struct arn_proto_newer *f);
/** A newer BoolValue field of @p msg's unknown bytes: @return present, its
 * value in @p v. */
bool arn_proto_newer_wrapped_bool(const upb_Message *msg, const struct arn_proto_newer *f, bool *v);
/** A newer string field's value in @p msg's unknown bytes (empty if absent; it
 * points into the message). */
upb_StringView arn_proto_newer_str(const upb_Message *msg, const struct arn_proto_newer *f);

/** One field of a message's unknown bytes (arn_proto_unknown_next). */
struct arn_proto_unknown {
	uint32_t num;
	uint8_t wt;	  /* wire type */
	uint64_t varint;  /* wire type 0 */
	const char *data; /* wire types 1, 2, 5: the payload */
	size_t len;
};
/**
 * The next field of the unknown bytes at *@p p (up to @p end), into @p u.
 * @return 1, 0 at the end, -1 malformed (a group, a truncated field).
 */
int arn_proto_unknown_next(const char **p, const char *end, struct arn_proto_unknown *u);

/**
 * A pool of every type again, whose descriptors carry the newer fields
 * (their tables built at run time, read only by reflection): JSON is
 * decoded and encoded through it. NULL on failure (logged).
 */
upb_DefPool *arn_proto_newer_pool_new(void);

/**
 * @p m's definition in the pool JSON goes through (with the newer fields),
 * and that pool into *@p pool: for a reader that walks JSON or YAML
 * against the schema (the bootstrap's). The main pool's @p m itself if the
 * JSON pool could not be built.
 */
const upb_MessageDef *arn_proto_json_def(const upb_MessageDef *m, const upb_DefPool **pool);

/** upb string view helpers. */
static inline bool arn_sv_eq(upb_StringView a, const char *s)
{
	size_t n = __builtin_strlen(s);
	return a.size == n && (n == 0 || __builtin_memcmp(a.data, s, n) == 0);
}

#define ARN_SV_FMT "%.*s"
#define ARN_SV_ARG(sv) (int)(sv).size, (sv).data

#endif
