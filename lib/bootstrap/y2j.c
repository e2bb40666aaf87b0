#include "y2j.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "upb/reflection.h"

#include "arn_envoy_types.h"

/* Deeper than any real config; stops alias cycles (&a [*a]) and stack abuse. */
#define Y2J_MAX_DEPTH 100

static bool value(struct arn_y2j *y, yaml_node_t *n, const upb_FieldDef *f);
static bool message(struct arn_y2j *y, yaml_node_t *n, const upb_MessageDef *m, bool in_any);
static bool untyped(struct arn_y2j *y, yaml_node_t *n);

void arn_y2j_error(struct arn_y2j *y, const yaml_node_t *at, const char *fmt, ...)
{
	y->n_errors++;
	if (y->n_errors > y->max_errors)
		return;
	if (y->n_errors == y->max_errors) {
		arn_sb_printf(y->errors, "%s: too many errors, stopping here\n", y->file);
		return;
	}
	if (at != NULL)
		arn_sb_printf(y->errors, "%s:%zu:%zu: ", y->file, at->start_mark.line + 1,
			      at->start_mark.column + 1);
	else
		arn_sb_printf(y->errors, "%s: ", y->file);
	if (y->path_len > 0)
		arn_sb_printf(y->errors, "%s: ", y->path);
	va_list ap;
	va_start(ap, fmt);
	char msg[768];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	arn_sb_puts(y->errors, msg);
	arn_sb_putc(y->errors, '\n');
}

static size_t push(struct arn_y2j *y, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static size_t push(struct arn_y2j *y, const char *fmt, ...)
{
	size_t saved = y->path_len;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(y->path + y->path_len, sizeof(y->path) - y->path_len, fmt, ap);
	va_end(ap);
	if (n > 0)
		y->path_len += (size_t)n;
	if (y->path_len >= sizeof(y->path))
		y->path_len = sizeof(y->path) - 1;
	return saved;
}

size_t arn_y2j_push_field(struct arn_y2j *y, const char *name)
{
	return push(y, y->path_len ? ".%s" : "%s", name);
}

size_t arn_y2j_push_index(struct arn_y2j *y, size_t i)
{
	return push(y, "[%zu]", i);
}

static size_t push_key(struct arn_y2j *y, const char *key)
{
	return push(y, "[\"%s\"]", key);
}

void arn_y2j_pop(struct arn_y2j *y, size_t saved)
{
	y->path_len = saved;
	y->path[saved] = '\0';
}

bool arn_y2j_is_null(const yaml_node_t *n)
{
	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	const char *s = arn_y2j_scalar(n);
	return s[0] == '\0' || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 ||
	       strcmp(s, "Null") == 0 || strcmp(s, "NULL") == 0;
}

static const char *kind_name(const yaml_node_t *n)
{
	switch (n->type) {
	case YAML_SCALAR_NODE: return "a scalar";
	case YAML_SEQUENCE_NODE: return "a list";
	case YAML_MAPPING_NODE: return "a mapping";
	default: return "nothing";
	}
}

/* Enter a node: depth and node budget, so alias cycles and alias bombs
 * ("billion laughs") end with an error instead of a crash or a hang. */
static bool enter(struct arn_y2j *y, yaml_node_t *n)
{
	if (y->depth >= Y2J_MAX_DEPTH) {
		arn_y2j_error(y, n, "nested more than %d levels deep (an alias that refers to itself?)",
			      Y2J_MAX_DEPTH);
		return false;
	}
	if (y->budget == 0) {
		arn_y2j_error(y, n, "document too large once aliases are expanded");
		return false;
	}
	y->budget--;
	y->depth++;
	return true;
}

static yaml_node_t *node_at(struct arn_y2j *y, int idx)
{
	return yaml_document_get_node(y->doc, idx);
}

static void emit(struct arn_y2j *y, const char *s)
{
	arn_sb_puts(&y->json, s);
}

static void emit_str(struct arn_y2j *y, const char *s)
{
	arn_sb_json_str(&y->json, s, strlen(s));
}

/* Scalar text of a key node, or NULL (with an error) if it isn't one. */
static const char *key_text(struct arn_y2j *y, yaml_node_t *k)
{
	if (k == NULL || k->type != YAML_SCALAR_NODE) {
		arn_y2j_error(y, k, "a mapping key must be a plain name, not %s",
			      k ? kind_name(k) : "nothing");
		return NULL;
	}
	return arn_y2j_scalar(k);
}

/* Does key @p kt (of pair @p p, node @p k) repeat an earlier key of mapping
 * @p n? Reports it. */
static bool duplicate_key(struct arn_y2j *y, yaml_node_t *n, yaml_node_pair_t *p, yaml_node_t *k,
			  const char *kt)
{
	for (yaml_node_pair_t *q = n->data.mapping.pairs.start; q < p; q++) {
		yaml_node_t *k2 = node_at(y, q->key);
		if (k2 && k2->type == YAML_SCALAR_NODE && strcmp(arn_y2j_scalar(k2), kt) == 0) {
			arn_y2j_error(y, k, "duplicate key '%s'", kt);
			return true;
		}
	}
	return false;
}

/* Levenshtein distance, capped; for "did you mean" hints. */
static unsigned edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 64 || lb > 64)
		return 99;
	unsigned row[65];
	for (size_t j = 0; j <= lb; j++)
		row[j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		unsigned prev = row[0];
		row[0] = (unsigned)i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned cur = row[j];
			unsigned sub = prev + (a[i - 1] != b[j - 1]);
			unsigned del = row[j] + 1, ins = row[j - 1] + 1;
			row[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
			prev = cur;
		}
	}
	return row[lb];
}

static const char *suggest_field(const upb_MessageDef *m, const char *name)
{
	const char *best = NULL;
	unsigned best_d = 3;
	for (int i = 0; i < upb_MessageDef_FieldCount(m); i++) {
		const upb_FieldDef *f = upb_MessageDef_Field(m, i);
		unsigned d = edit_distance(name, upb_FieldDef_Name(f));
		unsigned dj = edit_distance(name, upb_FieldDef_JsonName(f));
		if (dj < d)
			d = dj;
		if (d < best_d) {
			best_d = d;
			best = upb_FieldDef_Name(f);
		}
	}
	return best;
}

/* ---- scalars ------------------------------------------------------------ */

static bool expect_scalar(struct arn_y2j *y, yaml_node_t *n, const char *what)
{
	if (n->type == YAML_SCALAR_NODE)
		return true;
	arn_y2j_error(y, n, "expected %s, found %s", what, kind_name(n));
	return false;
}

static bool parse_int(const char *s, bool is_unsigned, int bits, char *out, size_t outlen)
{
	errno = 0;
	char *end;
	if (*s == '\0')
		return false;
	if (is_unsigned) {
		if (*s == '-' || *s == '+')
			return false;
		unsigned long long v = strtoull(s, &end, 10);
		if (errno || *end || (bits == 32 && v > UINT32_MAX))
			return false;
		snprintf(out, outlen, "%llu", v);
	} else {
		long long v = strtoll(s, &end, 10);
		if (errno || *end || (bits == 32 && (v < INT32_MIN || v > INT32_MAX)))
			return false;
		snprintf(out, outlen, "%lld", v);
	}
	return true;
}

static bool scalar_number(struct arn_y2j *y, yaml_node_t *n, upb_CType t)
{
	if (!expect_scalar(y, n, "a number"))
		return false;
	const char *s = arn_y2j_scalar(n);
	char buf[64];
	switch (t) {
	case kUpb_CType_Int32:
	case kUpb_CType_Int64:
	case kUpb_CType_UInt32:
	case kUpb_CType_UInt64: {
		bool u = t == kUpb_CType_UInt32 || t == kUpb_CType_UInt64;
		int bits = (t == kUpb_CType_Int32 || t == kUpb_CType_UInt32) ? 32 : 64;
		if (!parse_int(s, u, bits, buf, sizeof(buf))) {
			arn_y2j_error(y, n, "expected %s %d-bit integer, got '%s'",
				      u ? "an unsigned" : "a", bits, s);
			return false;
		}
		/* 64-bit values as JSON strings: exact beyond 2^53. */
		if (bits == 64) {
			emit_str(y, buf);
		} else {
			emit(y, buf);
		}
		return true;
	}
	default: {
		if (strcmp(s, ".inf") == 0 || strcmp(s, ".Inf") == 0 || strcmp(s, "+.inf") == 0) {
			emit(y, "\"Infinity\"");
			return true;
		}
		if (strcmp(s, "-.inf") == 0 || strcmp(s, "-.Inf") == 0) {
			emit(y, "\"-Infinity\"");
			return true;
		}
		if (strcmp(s, ".nan") == 0 || strcmp(s, ".NaN") == 0) {
			emit(y, "\"NaN\"");
			return true;
		}
		char *end;
		errno = 0;
		double d = strtod(s, &end);
		if (*s == '\0' || *end || errno == ERANGE || !isfinite(d)) {
			arn_y2j_error(y, n, "expected a number, got '%s'", s);
			return false;
		}
		snprintf(buf, sizeof(buf), "%.17g", d);
		emit(y, buf);
		return true;
	}
	}
}

static bool scalar_bool(struct arn_y2j *y, yaml_node_t *n)
{
	if (!expect_scalar(y, n, "true or false"))
		return false;
	const char *s = arn_y2j_scalar(n);
	if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE")) {
		emit(y, "true");
		return true;
	}
	if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE")) {
		emit(y, "false");
		return true;
	}
	arn_y2j_error(y, n, "expected true or false, got '%s'", s);
	return false;
}

static bool scalar_enum(struct arn_y2j *y, yaml_node_t *n, const upb_EnumDef *e)
{
	if (!expect_scalar(y, n, "an enum value name"))
		return false;
	const char *s = arn_y2j_scalar(n);
	if (upb_EnumDef_FindValueByName(e, s) != NULL) {
		emit_str(y, s);
		return true;
	}
	/* Envoy parses with protobuf's case_insensitive_enum_parsing: a name
	 * that is not found is tried again in upper case, so its own examples
	 * write `type: strict_dns`, `lb_policy: round_robin` */
	char up[64];
	size_t sl = strlen(s);
	if (sl < sizeof(up)) {
		for (size_t i = 0; i <= sl; i++)
			up[i] = (char)toupper((unsigned char)s[i]);
		if (upb_EnumDef_FindValueByName(e, up) != NULL) {
			emit_str(y, up);
			return true;
		}
	}
	char buf[32];
	if (parse_int(s, false, 32, buf, sizeof(buf))) {
		if (upb_EnumDef_FindValueByNumber(e, (int32_t)strtol(buf, NULL, 10)) != NULL) {
			emit(y, buf);
			return true;
		}
	}
	struct arn_sb names = ARN_SB_INIT;
	int nv = upb_EnumDef_ValueCount(e);
	for (int i = 0; i < nv && i < 16; i++) {
		arn_sb_puts(&names, i ? ", " : "");
		arn_sb_puts(&names, upb_EnumValueDef_Name(upb_EnumDef_Value(e, i)));
	}
	if (nv > 16)
		arn_sb_puts(&names, ", ...");
	arn_y2j_error(y, n, "'%s' is not a value of %s (one of: %s)", s, upb_EnumDef_FullName(e),
		      arn_sb_cstr(&names));
	arn_sb_free(&names);
	return false;
}

/* google.protobuf.Duration's JSON form: "-?\d+(\.\d{1,9})?s", at most
 * 315576000000 s either way. */
static bool duration_ok(const char *s)
{
	const char *p = s;
	if (*p == '-')
		p++;
	const char *digits = p;
	while (*p >= '0' && *p <= '9')
		p++;
	if (p == digits || p - digits > 12)
		return false;
	if (*p == '.') {
		const char *frac = ++p;
		while (*p >= '0' && *p <= '9')
			p++;
		if (p == frac || p - frac > 9)
			return false;
	}
	if (p[0] != 's' || p[1] != '\0')
		return false;
	return strtoll(*s == '-' ? s + 1 : s, NULL, 10) <= 315576000000LL;
}

/* ---- well-known types --------------------------------------------------- */

static bool wkt(struct arn_y2j *y, yaml_node_t *n, const upb_MessageDef *m, upb_WellKnown w)
{
	switch (w) {
	case kUpb_WellKnown_Duration:
		if (!expect_scalar(y, n, "a duration such as \"0.25s\""))
			return false;
		if (!duration_ok(arn_y2j_scalar(n))) {
			arn_y2j_error(y, n,
				      "'%s' is not a duration: write seconds with an 's' suffix, "
				      "such as 5s or 0.25s",
				      arn_y2j_scalar(n));
			return false;
		}
		/* Envoy refuses every negative Duration ("Expected positive
		 * duration"). Checked here, on the text: upb's JSON decoder
		 * drops the sign of one under a second ("-0.25s" read as
		 * +0.25 s), and lib/config reads some Durations into unsigned
		 * milliseconds (a negative initial_fetch_timeout wrapped to 49
		 * days). */
		if (arn_y2j_scalar(n)[0] == '-' &&
		    strspn(arn_y2j_scalar(n), "-0.s") != strlen(arn_y2j_scalar(n))) {
			arn_y2j_error(y, n, "'%s': a duration must not be negative",
				      arn_y2j_scalar(n));
			return false;
		}
		emit_str(y, arn_y2j_scalar(n));
		return true;
	case kUpb_WellKnown_Timestamp:
	case kUpb_WellKnown_FieldMask:
		if (!expect_scalar(y, n, "a string"))
			return false;
		emit_str(y, arn_y2j_scalar(n));
		return true;
	case kUpb_WellKnown_Struct:
		if (n->type != YAML_MAPPING_NODE) {
			arn_y2j_error(y, n, "expected a mapping, found %s", kind_name(n));
			return false;
		}
		return untyped(y, n);
	case kUpb_WellKnown_ListValue:
		if (n->type != YAML_SEQUENCE_NODE) {
			arn_y2j_error(y, n, "expected a list, found %s", kind_name(n));
			return false;
		}
		return untyped(y, n);
	case kUpb_WellKnown_Value:
		return untyped(y, n);
	default: /* wrappers: the JSON form is the wrapped value itself */
		return value(y, n, upb_MessageDef_FindFieldByName(m, "value"));
	}
}

/* Any: a mapping with "@type"; the other keys are the named type's fields,
 * or "value" for a well-known type with a special JSON form. */
static bool any(struct arn_y2j *y, yaml_node_t *n)
{
	if (n->type != YAML_MAPPING_NODE) {
		arn_y2j_error(y, n, "expected a mapping with an \"@type\", found %s", kind_name(n));
		return false;
	}
	yaml_node_t *type_node = NULL;
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
		yaml_node_t *k = node_at(y, p->key);
		if (k && k->type == YAML_SCALAR_NODE && strcmp(arn_y2j_scalar(k), "@type") == 0)
			type_node = node_at(y, p->value);
	}
	if (type_node == NULL || type_node->type != YAML_SCALAR_NODE) {
		arn_y2j_error(y, n,
			      "\"@type\" is missing: an Any names its type, such as "
			      "\"@type\": " ARN_TYPE_URL_PREFIX "envoy.extensions.filters.http."
			      "router.v3.Router");
		return false;
	}
	const char *url = arn_y2j_scalar(type_node);
	const char *slash = strrchr(url, '/');
	const char *name = slash ? slash + 1 : url;
	const upb_MessageDef *m = upb_DefPool_FindMessageByName(y->pool, name);
	if (m == NULL) {
		size_t saved = arn_y2j_push_field(y, "@type");
		arn_y2j_error(y, type_node, "unknown type '%s': Arion does not know this extension",
			      url);
		arn_y2j_pop(y, saved);
		return false;
	}
	if (slash == NULL) {
		size_t saved = arn_y2j_push_field(y, "@type");
		arn_y2j_error(y, type_node,
			      "'%s' is not a type URL; write " ARN_TYPE_URL_PREFIX "%s", url, url);
		arn_y2j_pop(y, saved);
		return false;
	}
	upb_WellKnown w = upb_MessageDef_WellKnownType(m);
	emit(y, "{\"@type\":");
	emit_str(y, url);
	bool ok = true;
	if (w != kUpb_WellKnown_Unspecified && w != kUpb_WellKnown_Any) {
		for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
		     p < n->data.mapping.pairs.top; p++) {
			yaml_node_t *k = node_at(y, p->key);
			const char *kt = key_text(y, k);
			if (kt == NULL || strcmp(kt, "@type") == 0)
				continue;
			size_t saved = arn_y2j_push_field(y, kt);
			if (strcmp(kt, "value") != 0) {
				arn_y2j_error(y, k, "a %s in an Any takes only \"value\"",
					      upb_MessageDef_FullName(m));
				ok = false;
			} else {
				emit(y, ",\"value\":");
				ok &= wkt(y, node_at(y, p->value), m, w);
			}
			arn_y2j_pop(y, saved);
		}
		emit(y, "}");
		return ok;
	}
	/* Fields of m, written into the same JSON object after "@type". */
	size_t before = y->json.len;
	ok = message(y, n, m, true);
	/* message() wrote "{...}"; splice it after "@type". */
	if (y->json.len > before && y->json.buf[before] == '{') {
		if (y->json.len - before == 2) { /* "{}" */
			y->json.len = before;
			y->json.buf[before] = '\0';
		} else {
			y->json.buf[before] = ',';
			y->json.len--; /* drop its closing brace */
			y->json.buf[y->json.len] = '\0';
		}
	}
	emit(y, "}");
	return ok;
}

/* ---- untyped JSON (Struct / Value / ListValue) -------------------------- */

static bool untyped(struct arn_y2j *y, yaml_node_t *n)
{
	if (!enter(y, n))
		return false;
	bool ok = true;
	switch (n->type) {
	case YAML_SCALAR_NODE: {
		const char *s = arn_y2j_scalar(n);
		if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) {
			emit_str(y, s);
			break;
		}
		/* YAML 1.2 core schema for plain scalars. */
		if (arn_y2j_is_null(n)) {
			emit(y, "null");
		} else if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE")) {
			emit(y, "true");
		} else if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE")) {
			emit(y, "false");
		} else {
			char *end;
			errno = 0;
			double d = strtod(s, &end);
			bool numeric = *end == '\0' && errno == 0 && isfinite(d) &&
				       strspn(s, "+-0123456789.eE") == strlen(s);
			if (numeric) {
				char buf[64];
				snprintf(buf, sizeof(buf), "%.17g", d);
				emit(y, buf);
			} else {
				emit_str(y, s);
			}
		}
		break;
	}
	case YAML_SEQUENCE_NODE: {
		emit(y, "[");
		size_t i = 0;
		for (yaml_node_item_t *it = n->data.sequence.items.start;
		     it < n->data.sequence.items.top; it++, i++) {
			if (i)
				emit(y, ",");
			size_t saved = arn_y2j_push_index(y, i);
			ok &= untyped(y, node_at(y, *it));
			arn_y2j_pop(y, saved);
		}
		emit(y, "]");
		break;
	}
	case YAML_MAPPING_NODE: {
		emit(y, "{");
		size_t i = 0;
		for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
		     p < n->data.mapping.pairs.top; p++, i++) {
			yaml_node_t *k = node_at(y, p->key);
			const char *kt = key_text(y, k);
			if (kt == NULL) {
				ok = false;
				continue;
			}
			size_t saved = push_key(y, kt);
			ok &= !duplicate_key(y, n, p, k, kt);
			if (i)
				emit(y, ",");
			emit_str(y, kt);
			emit(y, ":");
			ok &= untyped(y, node_at(y, p->value));
			arn_y2j_pop(y, saved);
		}
		emit(y, "}");
		break;
	}
	default:
		emit(y, "null");
	}
	y->depth--;
	return ok;
}

/* ---- typed values ------------------------------------------------------- */

/* One value of field @p f's type (an element, for repeated fields). */
static bool single(struct arn_y2j *y, yaml_node_t *n, const upb_FieldDef *f)
{
	upb_CType t = upb_FieldDef_CType(f);
	if (arn_y2j_is_null(n) && t == kUpb_CType_Message &&
	    upb_MessageDef_WellKnownType(upb_FieldDef_MessageSubDef(f)) == kUpb_WellKnown_Value) {
		emit(y, "null");
		return true;
	}
	switch (t) {
	case kUpb_CType_Bool:
		return scalar_bool(y, n);
	case kUpb_CType_Float:
	case kUpb_CType_Double:
	case kUpb_CType_Int32:
	case kUpb_CType_UInt32:
	case kUpb_CType_Int64:
	case kUpb_CType_UInt64:
		return scalar_number(y, n, t);
	case kUpb_CType_Enum:
		return scalar_enum(y, n, upb_FieldDef_EnumSubDef(f));
	case kUpb_CType_String:
	case kUpb_CType_Bytes:
		if (!expect_scalar(y, n, "a string"))
			return false;
		emit_str(y, arn_y2j_scalar(n));
		return true;
	case kUpb_CType_Message: {
		const upb_MessageDef *m = upb_FieldDef_MessageSubDef(f);
		upb_WellKnown w = upb_MessageDef_WellKnownType(m);
		if (w == kUpb_WellKnown_Any)
			return any(y, n);
		if (w != kUpb_WellKnown_Unspecified)
			return wkt(y, n, m, w);
		return message(y, n, m, false);
	}
	}
	return false;
}

static bool map_key_ok(struct arn_y2j *y, yaml_node_t *k, upb_CType t)
{
	char buf[32];
	const char *s = arn_y2j_scalar(k);
	bool ok;
	switch (t) {
	case kUpb_CType_Bool:
		ok = !strcmp(s, "true") || !strcmp(s, "false");
		break;
	case kUpb_CType_Int32:
	case kUpb_CType_Int64:
	case kUpb_CType_UInt32:
	case kUpb_CType_UInt64:
		ok = parse_int(s, t == kUpb_CType_UInt32 || t == kUpb_CType_UInt64,
			       (t == kUpb_CType_Int32 || t == kUpb_CType_UInt32) ? 32 : 64, buf,
			       sizeof(buf));
		break;
	default:
		ok = true;
	}
	if (!ok)
		arn_y2j_error(y, k, "'%s' is not a valid key for this map", s);
	return ok;
}

static bool value(struct arn_y2j *y, yaml_node_t *n, const upb_FieldDef *f)
{
	if (!enter(y, n))
		return false;
	bool ok = true;
	if (arn_y2j_is_null(n) &&
	    !(upb_FieldDef_CType(f) == kUpb_CType_Message && !upb_FieldDef_IsRepeated(f) &&
	      upb_MessageDef_WellKnownType(upb_FieldDef_MessageSubDef(f)) == kUpb_WellKnown_Value)) {
		/* null: the field is unset, as in Envoy. */
		emit(y, "null");
	} else if (upb_FieldDef_IsMap(f)) {
		const upb_MessageDef *entry = upb_FieldDef_MessageSubDef(f);
		const upb_FieldDef *kf = upb_MessageDef_FindFieldByNumber(entry, 1);
		const upb_FieldDef *vf = upb_MessageDef_FindFieldByNumber(entry, 2);
		if (n->type != YAML_MAPPING_NODE) {
			arn_y2j_error(y, n, "expected a mapping, found %s", kind_name(n));
			ok = false;
		} else {
			emit(y, "{");
			size_t i = 0;
			for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
			     p < n->data.mapping.pairs.top; p++, i++) {
				yaml_node_t *k = node_at(y, p->key);
				const char *kt = key_text(y, k);
				if (kt == NULL) {
					ok = false;
					continue;
				}
				size_t saved = push_key(y, kt);
				ok &= !duplicate_key(y, n, p, k, kt);
				if (i)
					emit(y, ",");
				/* JSON map keys are strings; check them against the key type. */
				ok &= map_key_ok(y, k, upb_FieldDef_CType(kf));
				emit_str(y, kt);
				emit(y, ":");
				ok &= value(y, node_at(y, p->value), vf);
				arn_y2j_pop(y, saved);
			}
			emit(y, "}");
		}
	} else if (upb_FieldDef_IsRepeated(f)) {
		if (n->type != YAML_SEQUENCE_NODE) {
			arn_y2j_error(y, n, "expected a list, found %s", kind_name(n));
			ok = false;
		} else {
			emit(y, "[");
			size_t i = 0;
			for (yaml_node_item_t *it = n->data.sequence.items.start;
			     it < n->data.sequence.items.top; it++, i++) {
				if (i)
					emit(y, ",");
				size_t saved = arn_y2j_push_index(y, i);
				yaml_node_t *e = node_at(y, *it);
				if (arn_y2j_is_null(e) && upb_FieldDef_CType(f) != kUpb_CType_String) {
					arn_y2j_error(y, e, "a list item cannot be null");
					ok = false;
				} else if (enter(y, e)) {
					ok &= single(y, e, f);
					y->depth--;
				} else {
					ok = false;
				}
				arn_y2j_pop(y, saved);
			}
			emit(y, "]");
		}
	} else {
		ok = single(y, n, f);
	}
	y->depth--;
	return ok;
}

static const char *refused(const struct arn_y2j *y, const upb_MessageDef *m, const upb_FieldDef *f)
{
	for (const struct arn_y2j_refusal *r = y->refusals; r && r->message; r++)
		if (strcmp(r->field, upb_FieldDef_Name(f)) == 0 &&
		    strcmp(r->message, upb_MessageDef_FullName(m)) == 0)
			return r->reason;
	return NULL;
}

static bool message(struct arn_y2j *y, yaml_node_t *n, const upb_MessageDef *m, bool in_any)
{
	if (n->type != YAML_MAPPING_NODE) {
		arn_y2j_error(y, n, "expected a mapping (%s), found %s", upb_MessageDef_FullName(m),
			      kind_name(n));
		return false;
	}
	bool ok = true;
	int nf = upb_MessageDef_FieldCount(m);
	/* Which field each oneof was set by, and which fields were seen. */
	int noneof = upb_MessageDef_OneofCount(m);
	const upb_FieldDef **oneof_set = calloc((size_t)noneof + 1, sizeof(*oneof_set));
	yaml_node_t **seen = calloc((size_t)nf + 1, sizeof(*seen));
	if (oneof_set == NULL || seen == NULL) {
		free(oneof_set);
		free(seen);
		arn_y2j_error(y, n, "out of memory");
		return false;
	}
	emit(y, "{");
	bool first = true;
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
		yaml_node_t *k = node_at(y, p->key);
		const char *kt = key_text(y, k);
		if (kt == NULL) {
			ok = false;
			continue;
		}
		if (in_any && strcmp(kt, "@type") == 0)
			continue; /* read by any() */
		const upb_FieldDef *f = upb_MessageDef_FindByJsonName(m, kt);
		size_t saved = arn_y2j_push_field(y, f ? upb_FieldDef_Name(f) : kt);
		if (f == NULL) {
			const char *hint = suggest_field(m, kt);
			if (hint)
				arn_y2j_error(y, k, "unknown field '%s' in %s (did you mean '%s'?)", kt,
					      upb_MessageDef_FullName(m), hint);
			else
				arn_y2j_error(y, k, "unknown field '%s' in %s", kt,
					      upb_MessageDef_FullName(m));
			ok = false;
			arn_y2j_pop(y, saved);
			continue;
		}
		const char *why = refused(y, m, f);
		if (why != NULL) {
			arn_y2j_error(y, k, "%s", why);
			ok = false;
			arn_y2j_pop(y, saved);
			continue;
		}
		int fi = upb_FieldDef_Index(f);
		if (seen[fi] != NULL) {
			arn_y2j_error(y, k, "'%s' is set twice (also at line %zu)", kt,
				      seen[fi]->start_mark.line + 1);
			ok = false;
			arn_y2j_pop(y, saved);
			continue;
		}
		seen[fi] = k;
		yaml_node_t *v = node_at(y, p->value);
		const upb_OneofDef *o = upb_FieldDef_RealContainingOneof(f);
		if (o != NULL && !arn_y2j_is_null(v)) {
			int oi = upb_OneofDef_Index(o);
			if (oneof_set[oi] != NULL) {
				arn_y2j_error(y, k,
					      "'%s' and '%s' are both set, but only one of them may be "
					      "(oneof %s)",
					      upb_FieldDef_Name(oneof_set[oi]), upb_FieldDef_Name(f),
					      upb_OneofDef_Name(o));
				ok = false;
				arn_y2j_pop(y, saved);
				continue;
			}
			oneof_set[oi] = f;
		}
		if (!first)
			emit(y, ",");
		first = false;
		emit_str(y, upb_FieldDef_Name(f));
		emit(y, ":");
		ok &= value(y, v, f);
		arn_y2j_pop(y, saved);
	}
	emit(y, "}");
	free(oneof_set);
	free(seen);
	return ok;
}

bool arn_y2j_message(struct arn_y2j *y, yaml_node_t *node, const upb_MessageDef *m)
{
	if (y->budget == 0)
		y->budget = 2000000;
	if (y->max_errors == 0)
		y->max_errors = 20;
	if (!enter(y, node))
		return false;
	bool ok = message(y, node, m, false);
	y->depth--;
	return ok && y->n_errors == 0 && !y->json.oom;
}

/* ---- finding a node by path --------------------------------------------- */

/* Does YAML key @p k name proto field @p name (snake_case) by either form? */
static bool key_matches(const char *k, const char *name, size_t n)
{
	if (strlen(k) == n && strncmp(k, name, n) == 0)
		return true;
	/* lowerCamel: foo_bar -> fooBar */
	size_t i = 0, j = 0;
	for (; i < n && k[j]; i++, j++) {
		if (name[i] == '_' && i + 1 < n) {
			i++;
			if (k[j] != (name[i] >= 'a' && name[i] <= 'z' ? name[i] - 32 : name[i]))
				return false;
		} else if (k[j] != name[i]) {
			return false;
		}
	}
	return i == n && k[j] == '\0';
}

yaml_node_t *arn_y2j_find(yaml_document_t *doc, yaml_node_t *root, const char *path)
{
	yaml_node_t *cur = root;
	const char *p = path;
	while (cur != NULL && *p) {
		yaml_node_t *next = NULL;
		if (*p == '.') {
			p++;
			continue;
		}
		if (p[0] == '[' && p[1] == '"') {
			const char *end = strstr(p + 2, "\"]");
			if (end == NULL || cur->type != YAML_MAPPING_NODE)
				return cur;
			size_t n = (size_t)(end - (p + 2));
			for (yaml_node_pair_t *q = cur->data.mapping.pairs.start;
			     q < cur->data.mapping.pairs.top; q++) {
				yaml_node_t *k = yaml_document_get_node(doc, q->key);
				if (k && k->type == YAML_SCALAR_NODE && k->data.scalar.length == n &&
				    memcmp(k->data.scalar.value, p + 2, n) == 0)
					next = yaml_document_get_node(doc, q->value);
			}
			p = end + 2;
		} else if (*p == '[') {
			char *end;
			unsigned long i = strtoul(p + 1, &end, 10);
			if (*end != ']' || cur->type != YAML_SEQUENCE_NODE)
				return cur;
			yaml_node_item_t *it = cur->data.sequence.items.start + i;
			if (it < cur->data.sequence.items.top)
				next = yaml_document_get_node(doc, *it);
			p = end + 1;
		} else {
			size_t n = strcspn(p, ".[");
			if (cur->type != YAML_MAPPING_NODE)
				return cur;
			for (yaml_node_pair_t *q = cur->data.mapping.pairs.start;
			     q < cur->data.mapping.pairs.top; q++) {
				yaml_node_t *k = yaml_document_get_node(doc, q->key);
				if (k && k->type == YAML_SCALAR_NODE &&
				    key_matches(arn_y2j_scalar(k), p, n))
					next = yaml_document_get_node(doc, q->value);
			}
			p += n;
		}
		if (next == NULL)
			return cur;
		cur = next;
	}
	return cur;
}
