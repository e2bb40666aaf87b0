/*
 * A small JSON tree (arn_json.h): a recursive descent walk that finds each
 * value's span and keeps its literal, with json-c (Debian's libjson-c5)
 * decoding and validating the strings; a writer, FieldMask trimming and
 * redaction.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "arn_json.h"

struct parser {
	const char *s, *end;
	int depth;
	struct json_tokener *tok; /* decodes one string literal at a time */
};

static void ws(struct parser *p)
{
	while (p->s < p->end && (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r'))
		p->s++;
}

static struct arn_json *node(enum arn_json_type t)
{
	struct arn_json *j = calloc(1, sizeof(*j));
	if (j)
		j->type = t;
	return j;
}

static char *dup_span(const char *a, const char *b)
{
	char *s = malloc((size_t)(b - a) + 1);
	if (s) {
		memcpy(s, a, (size_t)(b - a));
		s[b - a] = '\0';
	}
	return s;
}

/*
 * The string literal at p->s (a '"'): its span is found here, json-c
 * decodes it (escapes, surrogate pairs, UTF-8 validation). Raw control
 * characters are refused here because json-c 0.16 takes them even in
 * strict mode, and the literal is written back as it came.
 */
static int parse_string(struct parser *p, char **dec, const char **lit_start)
{
	const char *a = p->s++;
	while (p->s < p->end && *p->s != '"') {
		if ((unsigned char)*p->s < 0x20)
			return -1;
		if (*p->s == '\\' && ++p->s >= p->end)
			return -1;
		p->s++;
	}
	if (p->s >= p->end || p->s + 1 - a > INT_MAX)
		return -1;
	p->s++;
	json_tokener_reset(p->tok);
	struct json_object *o = json_tokener_parse_ex(p->tok, a, (int)(p->s - a));
	if (o == NULL || json_tokener_get_parse_end(p->tok) != (size_t)(p->s - a) ||
	    !json_object_is_type(o, json_type_string)) {
		json_object_put(o);
		return -1;
	}
	/* strdup: a \u0000 cuts the decoded value (arn_json.h) */
	*dec = strdup(json_object_get_string(o));
	json_object_put(o);
	*lit_start = a;
	return *dec ? 0 : -1;
}

/* RFC 8259's number grammar. json-c 0.16 in strict mode still takes "1.",
 * "00", "NaN" and "Infinity", and holds integers as 64-bit values, so the
 * literal is checked and kept here and json-c never sees a number. */
static bool number_ok(const char *a, size_t n)
{
	size_t i = 0, d;
#define DIGITS()                                                                                   \
	do {                                                                                       \
		d = i;                                                                             \
		while (i < n && a[i] >= '0' && a[i] <= '9')                                        \
			i++;                                                                       \
	} while (0)
	if (i < n && a[i] == '-')
		i++;
	if (i < n && a[i] == '0')
		i++;
	else {
		DIGITS();
		if (i == d)
			return false;
	}
	if (i < n && a[i] == '.') {
		i++;
		DIGITS();
		if (i == d)
			return false;
	}
	if (i < n && (a[i] == 'e' || a[i] == 'E')) {
		i++;
		if (i < n && (a[i] == '+' || a[i] == '-'))
			i++;
		DIGITS();
		if (i == d)
			return false;
	}
#undef DIGITS
	return i == n;
}

static int grow(struct arn_json *j, bool keys)
{
	if (j->n < j->cap)
		return 0;
	size_t cap = j->cap ? j->cap * 2 : 4;
	struct arn_json **v = realloc(j->v, cap * sizeof(*v));
	if (v == NULL)
		return -ENOMEM;
	j->v = v;
	if (keys) {
		char **k = realloc(j->keys, cap * sizeof(*k));
		if (k == NULL)
			return -ENOMEM;
		j->keys = k;
	}
	j->cap = cap;
	return 0;
}

static struct arn_json *parse_value(struct parser *p)
{
	ws(p);
	if (p->s >= p->end || ++p->depth > ARN_JSON_MAX_DEPTH)
		return NULL;
	struct arn_json *j = NULL;
	char c = *p->s;
	if (c == '{' || c == '[') {
		bool obj = c == '{';
		j = node(obj ? ARN_JSON_OBJECT : ARN_JSON_ARRAY);
		if (j == NULL)
			return NULL;
		p->s++;
		ws(p);
		if (p->s < p->end && *p->s == (obj ? '}' : ']')) {
			p->s++;
			goto done;
		}
		for (;;) {
			char *key = NULL;
			if (obj) {
				ws(p);
				const char *ls;
				if (p->s >= p->end || *p->s != '"' || parse_string(p, &key, &ls))
					goto fail;
				ws(p);
				if (p->s >= p->end || *p->s != ':') {
					free(key);
					goto fail;
				}
				p->s++;
			}
			struct arn_json *v = parse_value(p);
			if (v == NULL || grow(j, obj)) {
				free(key);
				arn_json_free(v);
				goto fail;
			}
			if (obj)
				j->keys[j->n] = key;
			j->v[j->n++] = v;
			ws(p);
			if (p->s < p->end && *p->s == ',') {
				p->s++;
				continue;
			}
			if (p->s < p->end && *p->s == (obj ? '}' : ']')) {
				p->s++;
				break;
			}
			goto fail;
		}
	} else if (c == '"') {
		j = node(ARN_JSON_STRING);
		const char *ls;
		if (j == NULL || parse_string(p, &j->str, &ls))
			goto fail;
		if ((j->lit = dup_span(ls, p->s)) == NULL)
			goto fail;
	} else {
		const char *a = p->s;
		while (p->s < p->end && (strchr("+-.eE", *p->s) || (*p->s >= '0' && *p->s <= '9') ||
					 (*p->s >= 'a' && *p->s <= 'z')))
			p->s++;
		size_t n = (size_t)(p->s - a);
		enum arn_json_type t;
		if ((n == 4 && !memcmp(a, "true", 4)) || (n == 5 && !memcmp(a, "false", 5)))
			t = ARN_JSON_BOOL;
		else if (n == 4 && !memcmp(a, "null", 4))
			t = ARN_JSON_NULL;
		else if (n <= ARN_JSON_MAX_NUMBER && number_ok(a, n))
			t = ARN_JSON_NUMBER;
		else
			return NULL;
		j = node(t);
		if (j == NULL || (j->lit = dup_span(a, p->s)) == NULL)
			goto fail;
	}
done:
	p->depth--;
	return j;
fail:
	arn_json_free(j);
	return NULL;
}

struct arn_json *arn_json_parse(const char *s, size_t len)
{
	struct parser p = {s, s + len, 0, json_tokener_new_ex(1)};
	if (p.tok == NULL)
		return NULL;
	json_tokener_set_flags(p.tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	struct arn_json *j = parse_value(&p);
	json_tokener_free(p.tok);
	if (j == NULL)
		return NULL;
	ws(&p);
	if (p.s != p.end) {
		arn_json_free(j);
		return NULL;
	}
	return j;
}

void arn_json_free(struct arn_json *j)
{
	if (j == NULL)
		return;
	for (size_t i = 0; i < j->n; i++) {
		if (j->keys)
			free(j->keys[i]);
		arn_json_free(j->v[i]);
	}
	free(j->keys);
	free(j->v);
	free(j->lit);
	free(j->str);
	free(j);
}

static void indent(struct arn_sb *out, int level)
{
	arn_sb_putc(out, '\n');
	for (int i = 0; i < level; i++)
		arn_sb_puts(out, "  ");
}

static void write_rec(const struct arn_json *j, struct arn_sb *out, bool pretty, int level)
{
	if (j->type != ARN_JSON_OBJECT && j->type != ARN_JSON_ARRAY) {
		arn_sb_puts(out, j->lit ? j->lit : "null");
		return;
	}
	bool obj = j->type == ARN_JSON_OBJECT;
	arn_sb_putc(out, obj ? '{' : '[');
	for (size_t i = 0; i < j->n; i++) {
		if (i)
			arn_sb_putc(out, ',');
		if (pretty)
			indent(out, level + 1);
		if (obj) {
			arn_sb_json_str(out, j->keys[i], strlen(j->keys[i]));
			arn_sb_puts(out, pretty ? ": " : ":");
		}
		write_rec(j->v[i], out, pretty, level + 1);
	}
	if (pretty && j->n)
		indent(out, level);
	arn_sb_putc(out, obj ? '}' : ']');
}

void arn_json_write(const struct arn_json *j, struct arn_sb *out, bool pretty)
{
	write_rec(j, out, pretty, 0);
}

struct arn_json *arn_json_get(const struct arn_json *j, const char *key)
{
	if (j == NULL || j->type != ARN_JSON_OBJECT)
		return NULL;
	for (size_t i = 0; i < j->n; i++)
		if (strcmp(j->keys[i], key) == 0)
			return j->v[i];
	return NULL;
}

struct arn_json *arn_json_new_string(const char *s)
{
	struct arn_json *j = node(ARN_JSON_STRING);
	struct arn_sb lit = ARN_SB_INIT;
	if (j == NULL)
		return NULL;
	arn_sb_json_str(&lit, s, strlen(s));
	j->str = strdup(s);
	j->lit = lit.oom ? NULL : arn_sb_steal(&lit);
	arn_sb_free(&lit);
	if (j->str == NULL || j->lit == NULL) {
		arn_json_free(j);
		return NULL;
	}
	return j;
}

int arn_json_set(struct arn_json *o, const char *key, struct arn_json *v)
{
	for (size_t i = 0; i < o->n; i++)
		if (strcmp(o->keys[i], key) == 0) {
			arn_json_free(o->v[i]);
			o->v[i] = v;
			return 0;
		}
	char *k = strdup(key);
	if (k == NULL || grow(o, true)) {
		free(k);
		arn_json_free(v);
		return -ENOMEM;
	}
	o->keys[o->n] = k;
	o->v[o->n++] = v;
	return 0;
}

int arn_json_set_first(struct arn_json *o, const char *key, struct arn_json *v)
{
	int rc = arn_json_set(o, key, v);
	if (rc)
		return rc;
	for (size_t i = 0; i < o->n; i++)
		if (strcmp(o->keys[i], key) == 0 && i > 0) {
			char *k = o->keys[i];
			struct arn_json *x = o->v[i];
			memmove(&o->keys[1], &o->keys[0], i * sizeof(char *));
			memmove(&o->v[1], &o->v[0], i * sizeof(struct arn_json *));
			o->keys[0] = k;
			o->v[0] = x;
			break;
		}
	return 0;
}

int arn_json_push(struct arn_json *a, struct arn_json *v)
{
	if (grow(a, false)) {
		arn_json_free(v);
		return -ENOMEM;
	}
	a->v[a->n++] = v;
	return 0;
}

struct arn_json *arn_json_take(struct arn_json *j, size_t i)
{
	struct arn_json *v = j->v[i];
	j->v[i] = node(ARN_JSON_NULL);
	if (j->v[i])
		j->v[i]->lit = strdup("null");
	return v;
}

/* ---- FieldMask ------------------------------------------------------------- */

/* Paths as an array of strings; each applies from the current level. */
static bool path_hits(const char *path, const char *key, const char **rest)
{
	size_t kl = strlen(key);
	if (strncmp(path, key, kl) != 0)
		return false;
	if (path[kl] == '\0') {
		*rest = NULL; /* the whole field */
		return true;
	}
	if (path[kl] == '.') {
		*rest = path + kl + 1;
		return true;
	}
	return false;
}

static void mask_rec(struct arn_json *j, const char **paths, size_t n)
{
	if (j->type == ARN_JSON_ARRAY) {
		for (size_t i = 0; i < j->n; i++)
			mask_rec(j->v[i], paths, n);
		return;
	}
	if (j->type != ARN_JSON_OBJECT)
		return;
	size_t keep = 0;
	const char **sub = calloc(n ? n : 1, sizeof(*sub));
	for (size_t i = 0; i < j->n; i++) {
		bool whole = strcmp(j->keys[i], "@type") == 0, hit = whole;
		size_t ns = 0;
		for (size_t k = 0; k < n && !whole; k++) {
			const char *rest;
			if (path_hits(paths[k], j->keys[i], &rest)) {
				hit = true;
				if (rest == NULL)
					whole = true;
				else if (sub)
					sub[ns++] = rest;
			}
		}
		if (!hit) {
			free(j->keys[i]);
			arn_json_free(j->v[i]);
			continue;
		}
		if (!whole && sub)
			mask_rec(j->v[i], sub, ns);
		j->keys[keep] = j->keys[i];
		j->v[keep++] = j->v[i];
	}
	j->n = keep;
	free(sub);
}

void arn_json_mask(struct arn_json *j, const char *paths)
{
	char *copy = strdup(paths);
	if (copy == NULL)
		return;
	const char *list[64];
	size_t n = 0;
	for (char *save = NULL, *t = strtok_r(copy, ",", &save); t && n < 64;
	     t = strtok_r(NULL, ",", &save)) {
		while (*t == ' ')
			t++;
		if (*t)
			list[n++] = t;
	}
	mask_rec(j, list, n);
	free(copy);
}

/* ---- redaction ------------------------------------------------------------ */

static size_t redact_all(struct arn_json *j, const char *key)
{
	size_t n = 0;
	if (j->type == ARN_JSON_STRING) {
		bool bytes = key && strcmp(key, "inline_bytes") == 0;
		const char *r =
		    bytes ? "W3JlZGFjdGVkXQ==" : "[redacted]"; /* base64("[redacted]") */
		free(j->str);
		free(j->lit);
		j->str = strdup(r);
		size_t l = strlen(r);
		j->lit = malloc(l + 3);
		if (j->lit) {
			j->lit[0] = '"';
			memcpy(j->lit + 1, r, l);
			j->lit[l + 1] = '"';
			j->lit[l + 2] = '\0';
		}
		return 1;
	}
	for (size_t i = 0; i < j->n; i++) {
		const char *k = j->type == ARN_JSON_OBJECT ? j->keys[i] : key;
		if (j->type == ARN_JSON_OBJECT && strcmp(k, "@type") == 0)
			continue;
		n += redact_all(j->v[i], k);
	}
	return n;
}

static bool sensitive(const char *parent, const char *key)
{
	static const char *const keys[] = {"private_key", "password", "private_key_provider", NULL};
	for (int i = 0; keys[i]; i++)
		if (strcmp(key, keys[i]) == 0)
			return true;
	/* GenericSecret.secret; not DynamicSecret.secret, which is the whole Secret */
	if (parent && strcmp(parent, "generic_secret") == 0 && strcmp(key, "secret") == 0)
		return true;
	return parent && strcmp(parent, "session_ticket_keys") == 0 && strcmp(key, "keys") == 0;
}

static size_t redact_rec(struct arn_json *j, const char *parent)
{
	size_t n = 0;
	for (size_t i = 0; i < j->n; i++) {
		if (j->type == ARN_JSON_OBJECT && sensitive(parent, j->keys[i]))
			n += redact_all(j->v[i], j->keys[i]);
		else
			n += redact_rec(j->v[i], j->type == ARN_JSON_OBJECT ? j->keys[i] : parent);
	}
	return n;
}

size_t arn_json_redact(struct arn_json *j)
{
	return redact_rec(j, NULL);
}
