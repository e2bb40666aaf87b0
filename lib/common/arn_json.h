/*
 * A small JSON tree for the control lcore: the admin's /config_dump
 * (?mask=, ?resource=, redaction, pretty printing) and the JSON forms of
 * configuration that lib/accesslog and lib/http read (access-log filters,
 * json_format). Strings and numbers keep their literal text, so what a
 * provider wrote (proto3 JSON from upb) comes out byte for byte unless
 * changed: a 20-digit integer, -0.0 or 1e400 stay as written, as do
 * escapes such as \u00e9 or \/. Key order and duplicate keys are kept
 * (arn_json_get finds the first).
 *
 * json-c (Debian's libjson-c5) decodes and validates each string (escapes,
 * surrogate pairs, UTF-8): a lone surrogate decodes to U+FFFD, \u0000 cuts
 * the decoded value there; the literal is kept either way. json-c never
 * sees a number: 0.16 clamps integers to 64 bits and takes "1." and "NaN".
 *
 * What the parser refuses (it may be fed any bytes): anything outside RFC
 * 8259 (numbers to its grammar, raw control characters in strings, text
 * after the value), invalid UTF-8 in strings, more than ARN_JSON_MAX_DEPTH
 * nested values (a scalar counts one), a number longer than
 * ARN_JSON_MAX_NUMBER bytes, a string literal longer than INT_MAX bytes
 * (json-c's lengths are int). Memory is the tree's: one node per value.
 */
#ifndef ARN_JSON_H
#define ARN_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include "arn_sb.h"

/** Values nested in one another, the outermost counting one; more is refused. */
#define ARN_JSON_MAX_DEPTH 200
/** Bytes of one number literal; a longer one is refused. */
#define ARN_JSON_MAX_NUMBER 63

enum arn_json_type {
	ARN_JSON_NULL = 0,
	ARN_JSON_BOOL,
	ARN_JSON_NUMBER,
	ARN_JSON_STRING,
	ARN_JSON_ARRAY,
	ARN_JSON_OBJECT,
};

struct arn_json {
	enum arn_json_type type;
	char *lit; /* NULL/BOOL/NUMBER/STRING: the literal, quotes included */
	char *str; /* STRING: decoded value (NUL-terminated; embedded NULs cut) */
	size_t n;  /* ARRAY/OBJECT: members */
	size_t cap;
	char **keys;	     /* OBJECT: decoded keys */
	struct arn_json **v; /* ARRAY/OBJECT: values */
};

/** Parse @p len bytes (bounds above). @return the tree, or NULL (invalid, too deep, or out of
 * memory). */
struct arn_json *arn_json_parse(const char *s, size_t len);
void arn_json_free(struct arn_json *j);

/** Serialize; @p pretty indents by two spaces per level, as Envoy's admin does. */
void arn_json_write(const struct arn_json *j, struct arn_sb *out, bool pretty);

/** Member @p key of an object, or NULL. */
struct arn_json *arn_json_get(const struct arn_json *j, const char *key);

/** A new string node (takes a copy of @p s). */
struct arn_json *arn_json_new_string(const char *s);

/** Set (replace or append) member @p key of object @p o; takes @p v. @return 0 or -ENOMEM. */
int arn_json_set(struct arn_json *o, const char *key, struct arn_json *v);

/** Insert @p key first in object @p o (for "@type"); takes @p v. */
int arn_json_set_first(struct arn_json *o, const char *key, struct arn_json *v);

/** Append @p v to array @p a; takes @p v. */
int arn_json_push(struct arn_json *a, struct arn_json *v);

/** Detach value @p i of an array/object (the slot becomes a JSON null). */
struct arn_json *arn_json_take(struct arn_json *j, size_t i);

/**
 * Keep only the fields of object @p j named by the FieldMask @p paths
 * (comma-separated dotted paths); "@type" is always kept. A path goes
 * through nested objects and applies to each element of arrays on its way.
 */
void arn_json_mask(struct arn_json *j, const char *paths);

/**
 * Replace secret material in place: under private_key, password,
 * generic_secret.secret, private_key_provider and session_ticket_keys.keys every string becomes
 * "[redacted]" (inline_bytes its base64), as Envoy redacts fields marked
 * sensitive. @return the number of values replaced.
 */
size_t arn_json_redact(struct arn_json *j);

#endif
