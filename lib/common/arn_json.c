/*
 * A small JSON tree (arn_json.h): a recursive descent parser with a depth
 * limit, a writer, FieldMask trimming and redaction.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arn_hex.h"
#include "arn_json.h"

#define MAX_DEPTH 200

struct parser {
	const char *s, *end;
	int depth;
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

static void put_utf8(struct arn_sb *sb, uint32_t cp)
{
	char b[4];
	if (cp < 0x80) {
		b[0] = (char)cp;
		arn_sb_append(sb, b, 1);
	} else if (cp < 0x800) {
		b[0] = (char)(0xc0 | (cp >> 6));
		b[1] = (char)(0x80 | (cp & 0x3f));
		arn_sb_append(sb, b, 2);
	} else if (cp < 0x10000) {
		b[0] = (char)(0xe0 | (cp >> 12));
		b[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		b[2] = (char)(0x80 | (cp & 0x3f));
		arn_sb_append(sb, b, 3);
	} else {
		b[0] = (char)(0xf0 | (cp >> 18));
		b[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		b[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		b[3] = (char)(0x80 | (cp & 0x3f));
		arn_sb_append(sb, b, 4);
	}
}

static int read_hex4(struct parser *p, uint32_t *out)
{
	if (p->end - p->s < 4)
		return -1;
	uint32_t v = 0;
	for (int i = 0; i < 4; i++) {
		int h = arn_hexval(p->s[i]);
		if (h < 0)
			return -1;
		v = v << 4 | (uint32_t)h;
	}
	p->s += 4;
	*out = v;
	return 0;
}

/* Parse a string at p->s (a '"'); decoded into *dec, literal span returned. */
static int parse_string(struct parser *p, char **dec, const char **lit_start)
{
	*lit_start = p->s;
	p->s++;
	struct arn_sb sb = ARN_SB_INIT;
	arn_sb_puts(&sb, "");
	while (p->s < p->end && *p->s != '"') {
		unsigned char c = (unsigned char)*p->s;
		if (c < 0x20)
			goto bad;
		if (c != '\\') {
			arn_sb_append(&sb, p->s++, 1);
			continue;
		}
		if (++p->s >= p->end)
			goto bad;
		char e = *p->s++;
		switch (e) {
		case '"':
			arn_sb_putc(&sb, '"');
			break;
		case '\\':
			arn_sb_putc(&sb, '\\');
			break;
		case '/':
			arn_sb_putc(&sb, '/');
			break;
		case 'b':
			arn_sb_putc(&sb, '\b');
			break;
		case 'f':
			arn_sb_putc(&sb, '\f');
			break;
		case 'n':
			arn_sb_putc(&sb, '\n');
			break;
		case 'r':
			arn_sb_putc(&sb, '\r');
			break;
		case 't':
			arn_sb_putc(&sb, '\t');
			break;
		case 'u': {
			uint32_t cp;
			if (read_hex4(p, &cp))
				goto bad;
			if (cp >= 0xd800 && cp < 0xdc00 && p->end - p->s >= 6 && p->s[0] == '\\' &&
			    p->s[1] == 'u') {
				uint32_t lo;
				p->s += 2;
				if (read_hex4(p, &lo) || lo < 0xdc00 || lo > 0xdfff)
					goto bad;
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			}
			put_utf8(&sb, cp ? cp : 0xfffd);
			break;
		}
		default:
			goto bad;
		}
	}
	if (p->s >= p->end || sb.oom)
		goto bad;
	p->s++;
	*dec = arn_sb_steal(&sb);
	return 0;
bad:
	arn_sb_free(&sb);
	return -1;
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
	if (p->s >= p->end || ++p->depth > MAX_DEPTH)
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
		else if (n > 0 && (*a == '-' || (*a >= '0' && *a <= '9'))) {
			char *endp;
			char tmp[64];
			if (n >= sizeof(tmp))
				return NULL;
			memcpy(tmp, a, n);
			tmp[n] = '\0';
			strtod(tmp, &endp);
			if (*endp != '\0')
				return NULL;
			t = ARN_JSON_NUMBER;
		} else
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
	struct parser p = {s, s + len, 0};
	struct arn_json *j = parse_value(&p);
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
