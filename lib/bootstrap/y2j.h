/*
 * Schema-directed YAML -> JSON for protobuf messages (private to bootstrap).
 *
 * Walks a libyaml document node against a upb message definition, checks
 * every key and value against the schema (unknown fields, wrong kinds, bad
 * enums, oneof conflicts, duration syntax), and writes the proto3 JSON that
 * upb's decoder then turns into the message. Walking with the schema is what
 * lets a YAML scalar become the right JSON type (a plain `123` is a string
 * for a string field, a number for an integer field) and what lets errors
 * carry file:line:col and a field path.
 */
#ifndef ARN_Y2J_H
#define ARN_Y2J_H

#include <stdbool.h>
#include <yaml.h>

#include "upb/def.h"

#include "arn_sb.h"

/* A field refused by name wherever it appears: the schema has it, Arion
 * does not do it, and the operator should hear why at the key's position. */
struct arn_y2j_refusal {
	const char *message;   /* full name of the containing message */
	const char *field;     /* proto field name */
	const char *reason;
};

struct arn_y2j {
	yaml_document_t *doc;
	const struct arn_y2j_refusal *refusals; /* terminated by {NULL}; may be NULL */
	const char *file;       /* for messages */
	const upb_DefPool *pool;
	struct arn_sb json;     /* output */
	struct arn_sb *errors;  /* one error per line appended here */
	int n_errors;
	int max_errors;         /* stop reporting after this many */
	char path[1024];        /* current field path */
	size_t path_len;
	unsigned depth;
	unsigned long budget;   /* nodes left to visit (alias bombs) */
};

/**
 * Convert @p node as message @p m, appending JSON to y->json.
 * @return true if no error was found (errors are appended to y->errors).
 */
bool arn_y2j_message(struct arn_y2j *y, yaml_node_t *node, const upb_MessageDef *m);

/** Append "file:line:col: path: message" to y->errors. */
void arn_y2j_error(struct arn_y2j *y, const yaml_node_t *at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/** Path helpers: push ".name", "[i]" or "[\"key\"]"; pop to a saved length. */
size_t arn_y2j_push_field(struct arn_y2j *y, const char *name);
size_t arn_y2j_push_index(struct arn_y2j *y, size_t i);
void arn_y2j_pop(struct arn_y2j *y, size_t saved);

/** A scalar's text as a NUL-terminated string (libyaml stores it so). */
static inline const char *arn_y2j_scalar(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

/** True for YAML null: plain "", "~", "null", "Null", "NULL". */
bool arn_y2j_is_null(const yaml_node_t *n);

/**
 * Find the node at @p path (as arn_y2j builds them: "a.b[2].c[\"k\"]"),
 * starting at @p root, matching keys by proto or lowerCamel name.
 * @return the node, or the deepest node found on the way.
 */
yaml_node_t *arn_y2j_find(yaml_document_t *doc, yaml_node_t *root, const char *path);

#endif
