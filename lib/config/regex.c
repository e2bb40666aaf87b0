/*
 * A Pike VM for the RE2 subset of arn_regex.h.
 *
 * compile: pattern -> AST (recursive descent) -> program of instructions.
 * match:   breadth-first simulation of the NFA, one step per input byte;
 *          each thread is a program counter plus its capture offsets, the
 *          lists are sparse sets so each pc runs at most once per byte.
 *          Threads are kept in priority order, which gives RE2's
 *          leftmost-first submatch semantics.
 * replace: the same VM, every successive search in one list and one pass
 *          over the subject (sweep()), so regex_rewrite is linear too.
 */
#include "arn_regex.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum op {
	OP_BYTE = 0, /* x = byte */
	OP_RANGE,    /* x..y bytes */
	OP_SET,	     /* x = set index */
	OP_SPLIT,    /* x preferred, y */
	OP_JMP,	     /* x */
	OP_SAVE,     /* x = slot */
	OP_ASSERT,   /* x = assertion */
	OP_MATCH,
};

enum { AS_BOT = 0, AS_EOT, AS_WORDB, AS_NWORDB };

struct inst {
	uint8_t op;
	uint16_t x, y;
};

struct byteset {
	uint32_t w[8];
};

struct arn_regex {
	struct inst *prog;
	unsigned n;
	struct byteset *sets;
	unsigned nsets;
	unsigned groups; /* capture groups, all (not capped) */
	unsigned ncap;	 /* slots tracked: 2 * min(groups + 1, MAX_GROUPS) */
	char *prefix;	 /* literal prefix of every match */
	size_t prefix_len;
};

/* ---- AST ---------------------------------------------------------------- */

enum node_kind { N_EMPTY = 0, N_BYTE, N_SET, N_CAT, N_ALT, N_REP, N_GROUP, N_ASSERT };

struct node {
	uint8_t kind;
	uint8_t byte;
	bool greedy;
	bool nonascii; /* N_SET: also any multi-byte UTF-8 sequence */
	int min, max;  /* N_REP: max -1 = inf */
	int cap;       /* N_GROUP: capture index, -1 non-capturing */
	int as;
	struct byteset set;
	struct node *a, *b; /* CAT/ALT: a, b; REP/GROUP: a */
};

struct parser {
	const char *p, *s, *end;
	char *err;
	size_t errlen;
	bool failed;
	bool icase, dotall;
	unsigned groups;
	struct node *pool;
	size_t npool, cappool;
	int depth;
};

static void perr(struct parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void perr(struct parser *ps, const char *fmt, ...)
{
	if (ps->failed)
		return;
	ps->failed = true;
	char msg[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(ps->err, ps->errlen, "%s at offset %zu", msg, (size_t)(ps->p - ps->s));
}

static struct node *nn(struct parser *ps, int kind)
{
	if (ps->failed)
		return NULL;
	if (ps->npool == ps->cappool) {
		perr(ps, "regex too complex (more than %zu parts)", ps->cappool);
		return NULL;
	}
	struct node *n = &ps->pool[ps->npool++];
	memset(n, 0, sizeof(*n));
	n->kind = (uint8_t)kind;
	n->cap = -1;
	return n;
}

static void set_add(struct byteset *s, unsigned c)
{
	s->w[c >> 5] |= 1u << (c & 31);
}
static bool set_has(const struct byteset *s, unsigned c)
{
	return (s->w[c >> 5] >> (c & 31)) & 1u;
}
static void set_range(struct byteset *s, unsigned lo, unsigned hi)
{
	for (unsigned c = lo; c <= hi; c++)
		set_add(s, c);
}
static void set_fold(struct byteset *s)
{
	for (unsigned c = 'a'; c <= 'z'; c++)
		if (set_has(s, c) || set_has(s, c - 32)) {
			set_add(s, c);
			set_add(s, c - 32);
		}
}
/* Negate within ASCII (non-ASCII is the nonascii flag's business). */
static void set_negate_ascii(struct byteset *s)
{
	for (unsigned i = 0; i < 4; i++)
		s->w[i] = ~s->w[i];
	for (unsigned i = 4; i < 8; i++)
		s->w[i] = 0;
}

static void class_escape(struct byteset *s, char c, bool *neg)
{
	*neg = (c >= 'A' && c <= 'Z');
	switch (c | 0x20) {
	case 'd':
		set_range(s, '0', '9');
		break;
	case 's':
		set_add(s, ' ');
		set_add(s, '\t');
		set_add(s, '\n');
		set_add(s, '\f');
		set_add(s, '\r');
		break; /* RE2's \s: no \v */
	case 'w':
		set_range(s, '0', '9');
		set_range(s, 'a', 'z');
		set_range(s, 'A', 'Z');
		set_add(s, '_');
		break;
	}
}

/* A single (possibly escaped) character inside or outside a class.
 * Returns the byte, or -1 when the escape is a class (\d ...) handled by
 * the caller, or -2 on error. */
static int parse_escape_char(struct parser *ps, bool in_class)
{
	/* ps->p points after the backslash */
	if (ps->p >= ps->end) {
		perr(ps, "trailing backslash");
		return -2;
	}
	char c = *ps->p++;
	switch (c) {
	case 'a':
		return 7;
	case 'f':
		return '\f';
	case 'n':
		return '\n';
	case 'r':
		return '\r';
	case 't':
		return '\t';
	case 'v':
		return '\v';
	case 'x': {
		unsigned v = 0;
		int nd = 0;
		if (ps->p < ps->end && *ps->p == '{') {
			ps->p++;
			while (ps->p < ps->end && *ps->p != '}') {
				char h = *ps->p++;
				int d = (h >= '0' && h <= '9')	 ? h - '0'
					: (h >= 'a' && h <= 'f') ? h - 'a' + 10
					: (h >= 'A' && h <= 'F') ? h - 'A' + 10
								 : -1;
				if (d < 0 || ++nd > 6) {
					perr(ps, "bad \\x{...} escape");
					return -2;
				}
				v = v * 16 + (unsigned)d;
			}
			if (ps->p >= ps->end) {
				perr(ps, "unterminated \\x{...}");
				return -2;
			}
			ps->p++;
		} else {
			for (nd = 0; nd < 2; nd++) {
				if (ps->p >= ps->end) {
					perr(ps, "short \\x escape");
					return -2;
				}
				char h = *ps->p++;
				int d = (h >= '0' && h <= '9')	 ? h - '0'
					: (h >= 'a' && h <= 'f') ? h - 'a' + 10
					: (h >= 'A' && h <= 'F') ? h - 'A' + 10
								 : -1;
				if (d < 0) {
					perr(ps, "bad \\x escape");
					return -2;
				}
				v = v * 16 + (unsigned)d;
			}
		}
		if (v > 0x7f) {
			perr(ps,
			     "\\x escapes above 0x7f (non-ASCII code points) are not supported; "
			     "write the character itself");
			return -2;
		}
		return (int)v;
	}
	case 'd':
	case 'D':
	case 's':
	case 'S':
	case 'w':
	case 'W':
		ps->p--;
		return -1;
	case 'p':
	case 'P':
		perr(ps, "Unicode classes (\\p, \\P) are not supported");
		return -2;
	case 'Q':
	case 'E':
		perr(ps, "\\Q...\\E quoting is not supported");
		return -2;
	case 'C':
		perr(ps, "\\C is not supported");
		return -2;
	default:
		if (c >= '0' && c <= '9') {
			perr(ps, "back-references and octal escapes (\\%c) are not supported", c);
			return -2;
		}
		if (!in_class && (c == 'b' || c == 'B' || c == 'A' || c == 'z')) {
			ps->p--;
			return -1;
		}
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
			perr(ps, "unknown escape \\%c", c);
			return -2;
		}
		if ((unsigned char)c >= 0x80) {
			perr(ps, "escaped non-ASCII byte");
			return -2;
		}
		return (unsigned char)c;
	}
}

static const struct {
	const char *name;
	const char *ranges; /* pairs */
} posix_classes[] = {
    {"alnum", "09azAZ"},
    {"alpha", "azAZ"},
    {"ascii", "\x01\x7f"},
    {"blank", "  \t\t"},
    {"cntrl", "\x01\x1f\x7f\x7f"},
    {"digit", "09"},
    {"graph", "!~"},
    {"lower", "az"},
    {"print", " ~"},
    {"punct", "!/:@[`{~"},
    {"space", "\t\r  "},
    {"upper", "AZ"},
    {"word", "09azAZ__"},
    {"xdigit", "09afAF"},
};

static struct node *parse_class(struct parser *ps)
{
	/* after '[' */
	struct node *n = nn(ps, N_SET);
	if (!n)
		return NULL;
	bool neg = false;
	if (ps->p < ps->end && *ps->p == '^') {
		neg = true;
		ps->p++;
	}
	bool first = true;
	for (;;) {
		if (ps->p >= ps->end) {
			perr(ps, "missing ]");
			return NULL;
		}
		char c = *ps->p;
		if (c == ']' && !first) {
			ps->p++;
			break;
		}
		first = false;
		if (c == '[' && ps->p + 1 < ps->end && ps->p[1] == ':') {
			const char *e = memchr(ps->p + 2, ']', (size_t)(ps->end - ps->p - 2));
			if (e == NULL || e[-1] != ':') {
				perr(ps, "bad [:class:]");
				return NULL;
			}
			const char *nm = ps->p + 2;
			bool cneg = false;
			if (*nm == '^') {
				cneg = true;
				nm++;
			}
			size_t nl = (size_t)(e - 1 - nm);
			bool found = false;
			for (size_t i = 0; i < sizeof(posix_classes) / sizeof(posix_classes[0]);
			     i++) {
				if (strlen(posix_classes[i].name) == nl &&
				    memcmp(posix_classes[i].name, nm, nl) == 0) {
					struct byteset t = {{0}};
					const char *r = posix_classes[i].ranges;
					for (; *r; r += 2)
						set_range(&t, (unsigned char)r[0],
							  (unsigned char)r[1]);
					if (cneg)
						set_negate_ascii(&t);
					for (int w = 0; w < 8; w++)
						n->set.w[w] |= t.w[w];
					if (cneg)
						n->nonascii = true;
					found = true;
				}
			}
			if (!found) {
				perr(ps, "unknown class [:%.*s:]", (int)nl, nm);
				return NULL;
			}
			ps->p = e + 1;
			continue;
		}
		int lo;
		if (c == '\\') {
			ps->p++;
			lo = parse_escape_char(ps, true);
			if (lo == -2)
				return NULL;
			if (lo == -1) {
				struct byteset t = {{0}};
				bool cneg;
				class_escape(&t, *ps->p++, &cneg);
				if (cneg) {
					set_negate_ascii(&t);
					n->nonascii = true;
				}
				for (int w = 0; w < 8; w++)
					n->set.w[w] |= t.w[w];
				continue;
			}
		} else {
			if ((unsigned char)c >= 0x80) {
				perr(ps, "non-ASCII characters inside [...] are not supported");
				return NULL;
			}
			lo = (unsigned char)c;
			ps->p++;
		}
		int hi = lo;
		if (ps->p + 1 < ps->end && *ps->p == '-' && ps->p[1] != ']') {
			ps->p++;
			char d = *ps->p;
			if (d == '\\') {
				ps->p++;
				hi = parse_escape_char(ps, true);
				if (hi == -2)
					return NULL;
				if (hi == -1) {
					perr(ps, "bad range end");
					return NULL;
				}
			} else {
				if ((unsigned char)d >= 0x80) {
					perr(ps,
					     "non-ASCII characters inside [...] are not supported");
					return NULL;
				}
				hi = (unsigned char)d;
				ps->p++;
			}
			if (hi < lo) {
				perr(ps, "bad character range %c-%c", lo, hi);
				return NULL;
			}
		}
		set_range(&n->set, (unsigned)lo, (unsigned)hi);
	}
	if (ps->icase)
		set_fold(&n->set);
	if (neg) {
		set_negate_ascii(&n->set);
		n->nonascii = !n->nonascii;
	}
	/* RE2: [^a] matches \n whatever (?s) says: nothing more to do. */
	return n;
}

static struct node *parse_alt(struct parser *ps);

static bool parse_flags(struct parser *ps, bool *icase, bool *dotall)
{
	/* at the first flag letter; stops at ':' or ')' */
	bool neg = false;
	while (ps->p < ps->end && *ps->p != ':' && *ps->p != ')') {
		char c = *ps->p++;
		if (c == '-' && !neg)
			neg = true;
		else if (c == 'i')
			*icase = !neg;
		else if (c == 's')
			*dotall = !neg;
		else {
			perr(ps, "flag (?%c) is not supported (only i and s)", c);
			return false;
		}
	}
	if (ps->p >= ps->end) {
		perr(ps, "missing )");
		return false;
	}
	return true;
}

static struct node *parse_atom(struct parser *ps)
{
	char c = *ps->p;
	struct node *n;
	switch (c) {
	case '(': {
		ps->p++;
		int cap = -1;
		bool saved_i = ps->icase, saved_s = ps->dotall;
		if (ps->p < ps->end && *ps->p == '?') {
			ps->p++;
			if (ps->p < ps->end && (*ps->p == 'P' || *ps->p == '<')) {
				if (*ps->p == 'P')
					ps->p++;
				if (ps->p >= ps->end || *ps->p != '<') {
					perr(ps, "bad named group");
					return NULL;
				}
				if (ps->p + 1 < ps->end && (ps->p[1] == '=' || ps->p[1] == '!')) {
					perr(ps, "look-behind is not supported");
					return NULL;
				}
				const char *e = memchr(ps->p, '>', (size_t)(ps->end - ps->p));
				if (e == NULL || e == ps->p + 1) {
					perr(ps, "bad group name");
					return NULL;
				}
				ps->p = e + 1;
				cap = (int)++ps->groups;
			} else if (ps->p < ps->end && (*ps->p == '=' || *ps->p == '!')) {
				perr(ps, "look-ahead is not supported");
				return NULL;
			} else {
				bool ic = ps->icase, da = ps->dotall;
				if (!parse_flags(ps, &ic, &da))
					return NULL;
				if (*ps->p == ')') {
					/* (?i) applies to the rest of the enclosing group */
					ps->p++;
					ps->icase = ic;
					ps->dotall = da;
					return nn(ps, N_EMPTY);
				}
				ps->p++; /* ':' */
				ps->icase = ic;
				ps->dotall = da;
			}
		} else {
			cap = (int)++ps->groups;
		}
		if (++ps->depth > 200) {
			perr(ps, "groups nested too deeply");
			return NULL;
		}
		struct node *in = parse_alt(ps);
		ps->depth--;
		ps->icase = saved_i;
		ps->dotall = saved_s;
		if (ps->failed)
			return NULL;
		if (ps->p >= ps->end || *ps->p != ')') {
			perr(ps, "missing )");
			return NULL;
		}
		ps->p++;
		n = nn(ps, N_GROUP);
		if (n) {
			n->cap = cap;
			n->a = in;
		}
		return n;
	}
	case '[':
		ps->p++;
		return parse_class(ps);
	case '.':
		ps->p++;
		n = nn(ps, N_SET);
		if (n) {
			set_range(&n->set, 0, 0x7f);
			if (!ps->dotall)
				n->set.w['\n' >> 5] &= ~(1u << ('\n' & 31));
			n->nonascii = true;
		}
		return n;
	case '^':
	case '$':
		ps->p++;
		n = nn(ps, N_ASSERT);
		if (n)
			n->as = c == '^' ? AS_BOT : AS_EOT;
		return n;
	case '\\': {
		ps->p++;
		int b = parse_escape_char(ps, false);
		if (b == -2)
			return NULL;
		if (b == -1) {
			char e = *ps->p++;
			if (e == 'b' || e == 'B' || e == 'A' || e == 'z') {
				n = nn(ps, N_ASSERT);
				if (n)
					n->as = e == 'b'   ? AS_WORDB
						: e == 'B' ? AS_NWORDB
						: e == 'A' ? AS_BOT
							   : AS_EOT;
				return n;
			}
			n = nn(ps, N_SET);
			if (n) {
				bool neg;
				class_escape(&n->set, e, &neg);
				if (neg) {
					set_negate_ascii(&n->set);
					n->nonascii = true;
				}
			}
			return n;
		}
		c = (char)b;
		goto literal;
	}
	case '*':
	case '+':
	case '?':
		perr(ps, "missing argument to repetition operator %c", c);
		return NULL;
	default:
		ps->p++;
	literal:
		if (ps->icase && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) {
			n = nn(ps, N_SET);
			if (n) {
				set_add(&n->set, (unsigned char)(c | 0x20));
				set_add(&n->set, (unsigned char)(c & ~0x20));
			}
			return n;
		}
		n = nn(ps, N_BYTE);
		if (n)
			n->byte = (uint8_t)c;
		return n;
	}
}

static bool parse_int(struct parser *ps, int *v)
{
	if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
		return false;
	long x = 0;
	while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
		x = x * 10 + (*ps->p++ - '0');
		if (x > 100000)
			x = 100000;
	}
	*v = (int)x;
	return true;
}

static struct node *parse_repeat(struct parser *ps)
{
	struct node *a = parse_atom(ps);
	while (!ps->failed && a && ps->p < ps->end) {
		char c = *ps->p;
		int min, max;
		const char *save = ps->p;
		if (c == '*') {
			min = 0, max = -1;
			ps->p++;
		} else if (c == '+') {
			min = 1, max = -1;
			ps->p++;
		} else if (c == '?') {
			min = 0, max = 1;
			ps->p++;
		} else if (c == '{') {
			ps->p++;
			if (!parse_int(ps, &min)) {
				/* RE2: a '{' that does not start a repetition is a literal */
				ps->p = save;
				break;
			}
			max = min;
			if (ps->p < ps->end && *ps->p == ',') {
				ps->p++;
				if (!parse_int(ps, &max))
					max = -1;
			}
			if (ps->p >= ps->end || *ps->p != '}') {
				ps->p = save;
				break;
			}
			ps->p++;
			if (min > ARN_REGEX_MAX_REPEAT || max > ARN_REGEX_MAX_REPEAT ||
			    (max >= 0 && max < min)) {
				ps->p = save;
				perr(ps, "bad repetition count (at most %d)", ARN_REGEX_MAX_REPEAT);
				return NULL;
			}
		} else {
			break;
		}
		if (a->kind == N_ASSERT || a->kind == N_EMPTY) {
			ps->p = save;
			perr(ps, "bad repetition operand");
			return NULL;
		}
		if (a->kind == N_REP) {
			ps->p = save;
			perr(ps, "bad repetition operator (nested repetition %c)", c);
			return NULL;
		}
		bool greedy = true;
		if (ps->p < ps->end && *ps->p == '?') {
			greedy = false;
			ps->p++;
		}
		struct node *r = nn(ps, N_REP);
		if (!r)
			return NULL;
		r->min = min;
		r->max = max;
		r->greedy = greedy;
		r->a = a;
		a = r;
	}
	return a;
}

static struct node *parse_cat(struct parser *ps)
{
	struct node *acc = NULL;
	while (!ps->failed && ps->p < ps->end && *ps->p != '|' && *ps->p != ')') {
		struct node *x = parse_repeat(ps);
		if (!x)
			return NULL;
		if (!acc) {
			acc = x;
		} else {
			struct node *c = nn(ps, N_CAT);
			if (!c)
				return NULL;
			c->a = acc;
			c->b = x;
			acc = c;
		}
	}
	return acc ? acc : nn(ps, N_EMPTY);
}

static struct node *parse_alt(struct parser *ps)
{
	struct node *a = parse_cat(ps);
	while (!ps->failed && a && ps->p < ps->end && *ps->p == '|') {
		ps->p++;
		struct node *b = parse_cat(ps);
		if (!b)
			return NULL;
		struct node *n = nn(ps, N_ALT);
		if (!n)
			return NULL;
		n->a = a;
		n->b = b;
		a = n;
	}
	return a;
}

/* ---- compiler ------------------------------------------------------------ */

struct comp {
	struct inst prog[ARN_REGEX_MAX_INSTS];
	unsigned n;
	struct byteset sets[ARN_REGEX_MAX_INSTS];
	unsigned nsets;
	bool overflow;
	unsigned ncap;
};

static unsigned emit(struct comp *c, uint8_t op, unsigned x, unsigned y)
{
	if (c->n >= ARN_REGEX_MAX_INSTS) {
		c->overflow = true;
		return c->n;
	}
	c->prog[c->n] = (struct inst){op, (uint16_t)x, (uint16_t)y};
	return c->n++;
}

static void patch(struct comp *c, unsigned at, unsigned x, unsigned y)
{
	if (at < c->n) {
		c->prog[at].x = (uint16_t)x;
		c->prog[at].y = (uint16_t)y;
	}
}

static unsigned add_set(struct comp *c, const struct byteset *s)
{
	for (unsigned i = 0; i < c->nsets; i++)
		if (memcmp(&c->sets[i], s, sizeof(*s)) == 0)
			return i;
	if (c->nsets >= ARN_REGEX_MAX_INSTS) {
		c->overflow = true;
		return 0;
	}
	c->sets[c->nsets] = *s;
	return c->nsets++;
}

/* Any multi-byte UTF-8 sequence (2, 3 or 4 bytes). */
static void emit_utf8_multi(struct comp *c)
{
	unsigned s1 = emit(c, OP_SPLIT, 0, 0);
	emit(c, OP_RANGE, 0xc2, 0xdf);
	emit(c, OP_RANGE, 0x80, 0xbf);
	unsigned j1 = emit(c, OP_JMP, 0, 0);
	unsigned s2 = emit(c, OP_SPLIT, 0, 0);
	patch(c, s1, s1 + 1, s2);
	emit(c, OP_RANGE, 0xe0, 0xef);
	emit(c, OP_RANGE, 0x80, 0xbf);
	emit(c, OP_RANGE, 0x80, 0xbf);
	unsigned j2 = emit(c, OP_JMP, 0, 0);
	patch(c, s2, s2 + 1, c->n);
	emit(c, OP_RANGE, 0xf0, 0xf4);
	emit(c, OP_RANGE, 0x80, 0xbf);
	emit(c, OP_RANGE, 0x80, 0xbf);
	emit(c, OP_RANGE, 0x80, 0xbf);
	patch(c, j1, c->n, 0);
	patch(c, j2, c->n, 0);
}

static void comp_node(struct comp *c, const struct node *n)
{
	if (c->overflow)
		return;
	switch (n->kind) {
	case N_EMPTY:
		break;
	case N_BYTE:
		emit(c, OP_BYTE, n->byte, 0);
		break;
	case N_SET: {
		unsigned si = add_set(c, &n->set);
		if (!n->nonascii) {
			emit(c, OP_SET, si, 0);
			break;
		}
		unsigned sp = emit(c, OP_SPLIT, 0, 0);
		emit(c, OP_SET, si, 0);
		unsigned j = emit(c, OP_JMP, 0, 0);
		patch(c, sp, sp + 1, c->n);
		emit_utf8_multi(c);
		patch(c, j, c->n, 0);
		break;
	}
	case N_CAT:
		comp_node(c, n->a);
		comp_node(c, n->b);
		break;
	case N_ALT: {
		unsigned sp = emit(c, OP_SPLIT, 0, 0);
		comp_node(c, n->a);
		unsigned j = emit(c, OP_JMP, 0, 0);
		unsigned l2 = c->n;
		comp_node(c, n->b);
		patch(c, sp, sp + 1, l2);
		patch(c, j, c->n, 0);
		break;
	}
	case N_GROUP:
		if (n->cap >= 0 && (unsigned)n->cap < ARN_REGEX_MAX_GROUPS) {
			emit(c, OP_SAVE, 2u * (unsigned)n->cap, 0);
			comp_node(c, n->a);
			emit(c, OP_SAVE, 2u * (unsigned)n->cap + 1, 0);
		} else {
			comp_node(c, n->a);
		}
		break;
	case N_ASSERT:
		emit(c, OP_ASSERT, (unsigned)n->as, 0);
		break;
	case N_REP: {
		for (int i = 0; i < n->min && !c->overflow; i++)
			comp_node(c, n->a);
		if (n->max < 0) {
			/* x*: L: split(body, out); body; jmp L */
			unsigned l = emit(c, OP_SPLIT, 0, 0);
			comp_node(c, n->a);
			emit(c, OP_JMP, l, 0);
			if (n->greedy)
				patch(c, l, l + 1, c->n);
			else
				patch(c, l, c->n, l + 1);
		} else {
			/* (x(x(x)?)?)? for the optional part */
			unsigned splits[ARN_REGEX_MAX_REPEAT];
			int k = n->max - n->min;
			for (int i = 0; i < k && !c->overflow; i++) {
				splits[i] = emit(c, OP_SPLIT, 0, 0);
				comp_node(c, n->a);
			}
			for (int i = 0; i < k && !c->overflow; i++) {
				if (n->greedy)
					patch(c, splits[i], splits[i] + 1, c->n);
				else
					patch(c, splits[i], c->n, splits[i] + 1);
			}
		}
		break;
	}
	}
}

struct arn_regex *arn_regex_compile(const char *pattern, size_t len, char *err, size_t errlen)
{
	struct parser ps = {
	    .p = pattern, .s = pattern, .end = pattern + len, .err = err, .errlen = errlen};
	if (errlen)
		err[0] = 0;
	ps.cappool = 4 * len + 8;
	ps.pool = calloc(ps.cappool, sizeof(*ps.pool));
	struct comp *c = calloc(1, sizeof(*c));
	struct arn_regex *re = NULL;
	if (!ps.pool || !c) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (memchr(pattern, 0, len)) {
		snprintf(err, errlen, "NUL byte in regex");
		goto out;
	}
	struct node *root = parse_alt(&ps);
	if (!ps.failed && ps.p < ps.end) {
		perr(&ps, "unmatched )");
	}
	if (ps.failed || !root)
		goto out;
	emit(c, OP_SAVE, 0, 0);
	comp_node(c, root);
	emit(c, OP_SAVE, 1, 0);
	emit(c, OP_MATCH, 0, 0);
	if (c->overflow) {
		snprintf(err, errlen,
			 "regex too large: its program exceeds %d instructions (simplify it or "
			 "lower repetition counts)",
			 ARN_REGEX_MAX_INSTS);
		goto out;
	}
	re = calloc(1, sizeof(*re));
	if (!re)
		goto out;
	re->prog = malloc(c->n * sizeof(*re->prog));
	re->sets = malloc((c->nsets ? c->nsets : 1) * sizeof(*re->sets));
	if (!re->prog || !re->sets) {
		arn_regex_free(re);
		re = NULL;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	memcpy(re->prog, c->prog, c->n * sizeof(*re->prog));
	memcpy(re->sets, c->sets, c->nsets * sizeof(*re->sets));
	re->n = c->n;
	re->nsets = c->nsets;
	re->groups = ps.groups;
	/* the literal prefix: bytes straight after SAVE 0 (and ^ / \A) */
	re->prefix = malloc(c->n + 1);
	if (!re->prefix) {
		arn_regex_free(re);
		re = NULL;
		goto out;
	}
	for (unsigned pc = 1; pc < c->n; pc++) {
		const struct inst *in = &c->prog[pc];
		if (in->op == OP_ASSERT && in->x == AS_BOT && re->prefix_len == 0)
			continue;
		if (in->op == OP_SAVE)
			continue; /* a group opening or closing consumes nothing */
		if (in->op != OP_BYTE)
			break;
		re->prefix[re->prefix_len++] = (char)in->x;
	}
	unsigned g = ps.groups + 1 < ARN_REGEX_MAX_GROUPS ? ps.groups + 1 : ARN_REGEX_MAX_GROUPS;
	re->ncap = 2 * g;
out:
	free(ps.pool);
	free(c);
	return re;
}

void arn_regex_free(struct arn_regex *re)
{
	if (!re)
		return;
	free(re->prog);
	free(re->sets);
	free(re->prefix);
	free(re);
}

const char *arn_regex_literal_prefix(const struct arn_regex *re, size_t *len)
{
	*len = re->prefix_len;
	return re->prefix ? re->prefix : "";
}

unsigned arn_regex_groups(const struct arn_regex *re)
{
	return re->groups;
}

/* ---- Pike VM ------------------------------------------------------------- */

#define MAXCAP (2 * ARN_REGEX_MAX_GROUPS)
/* A list holds each instruction once, except that the global replace's
 * fresh closure (see sweep()) may add MATCH a second time. */
#define LISTMAX (ARN_REGEX_MAX_INSTS + 1)

/*
 * What a thread carries: its capture offsets and, in a global replace, the
 * search it belongs to: where that search began, whether it may not end
 * with an empty match right there (it began where a match ended), and the
 * output length when it began (its own output is written from there).
 */
struct thread {
	size_t out;
	int32_t start;
	int32_t noempty;
	int32_t caps[MAXCAP]; /* last: only the first ncap are copied */
};

struct tlist {
	unsigned n;
	uint16_t dense[LISTMAX];
	uint16_t sparse[ARN_REGEX_MAX_INSTS];
	/* per dense entry (only caps[0..ncap) are kept); NULL when the caller
	 * wants no captures */
	struct thread *t;
};

struct vm {
	const struct arn_regex *re;
	const char *s;
	size_t n;
	unsigned ncap;
	bool full;
	uint64_t steps; /* see struct arn_regex_stats */
	/* fresh closures: instructions already entered by the current one */
	uint32_t *seen;
	uint32_t stamp;
};

static bool tl_has(const struct tlist *l, unsigned pc)
{
	unsigned i = l->sparse[pc];
	return i < l->n && l->dense[i] == pc;
}

static bool is_word(int c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       c == '_';
}

static bool assert_ok(const struct vm *vm, unsigned as, size_t pos)
{
	switch (as) {
	case AS_BOT:
		return pos == 0;
	case AS_EOT:
		return pos == vm->n;
	default: {
		bool a = pos > 0 && is_word((unsigned char)vm->s[pos - 1]);
		bool b = pos < vm->n && is_word((unsigned char)vm->s[pos]);
		return (as == AS_WORDB) == (a != b);
	}
	}
}

static inline bool consumes(const struct inst *in)
{
	return in->op == OP_BYTE || in->op == OP_RANGE || in->op == OP_SET;
}

static void addthread(struct vm *vm, struct tlist *l, unsigned pc, size_t pos, struct thread *t);
static void addfresh(struct vm *vm, struct tlist *l, unsigned pc, size_t pos, struct thread *t);

/* Entry @p i of @p l is a thread with @p t's payload. */
static inline void tl_keep(const struct vm *vm, struct tlist *l, unsigned i, const struct thread *t)
{
	if (l->t)
		memcpy(&l->t[i], t, offsetof(struct thread, caps) + vm->ncap * sizeof(int32_t));
}

/* The empty transitions out of @p in (at @p pc), followed in priority
 * order with addthread() or, for a fresh closure, addfresh(). */
static inline __attribute__((always_inline)) void follow(struct vm *vm, struct tlist *l,
							 const struct inst *in, unsigned pc,
							 size_t pos, struct thread *t, bool fresh)
{
	void (*next)(struct vm *, struct tlist *, unsigned, size_t, struct thread *) =
	    fresh ? addfresh : addthread;
	switch (in->op) {
	case OP_JMP:
		next(vm, l, in->x, pos, t);
		break;
	case OP_SPLIT:
		next(vm, l, in->x, pos, t);
		next(vm, l, in->y, pos, t);
		break;
	case OP_SAVE:
		if (in->x < vm->ncap) {
			int32_t old = t->caps[in->x];
			t->caps[in->x] = (int32_t)pos;
			next(vm, l, pc + 1, pos, t);
			t->caps[in->x] = old;
		} else {
			next(vm, l, pc + 1, pos, t);
		}
		break;
	case OP_ASSERT:
		if (assert_ok(vm, in->x, pos))
			next(vm, l, pc + 1, pos, t);
		break;
	default:
		break;
	}
}

/*
 * Follow empty transitions from @p pc, adding byte-consuming and MATCH
 * instructions to @p l in priority order, each with a copy of @p t (whose
 * captures are modified and restored on the way). Every instruction
 * entered goes on @p l, which is what marks it entered at this position:
 * a thread reaching it again (of lower priority) is dropped.
 */
static void addthread(struct vm *vm, struct tlist *l, unsigned pc, size_t pos, struct thread *t)
{
	if (tl_has(l, pc))
		return;
	vm->steps++;
	unsigned i = l->n++;
	l->sparse[pc] = (uint16_t)i;
	l->dense[i] = (uint16_t)pc;
	const struct inst *in = &vm->re->prog[pc];
	if (consumes(in) || in->op == OP_MATCH)
		tl_keep(vm, l, i, t);
	else
		follow(vm, l, in, pc, pos, t, false);
}

/*
 * addthread() for a search that begins at this position after @p l was
 * filled by earlier searches (see sweep()): it tracks what it entered
 * itself in vm->seen, adds no empty-transition instructions to @p l, and
 * gives way to an earlier search only on byte-consuming ones.
 */
static void addfresh(struct vm *vm, struct tlist *l, unsigned pc, size_t pos, struct thread *t)
{
	if (vm->seen[pc] == vm->stamp)
		return;
	vm->seen[pc] = vm->stamp;
	vm->steps++;
	const struct inst *in = &vm->re->prog[pc];
	bool c = consumes(in);
	if (c && tl_has(l, pc))
		return;
	if (c || in->op == OP_MATCH) {
		unsigned i = l->n++;
		l->sparse[pc] = (uint16_t)i;
		l->dense[i] = (uint16_t)pc;
		tl_keep(vm, l, i, t);
	} else {
		follow(vm, l, in, pc, pos, t, true);
	}
}

static inline bool step_ok(const struct arn_regex *re, const struct inst *in, unsigned char b)
{
	switch (in->op) {
	case OP_BYTE:
		return b == in->x;
	case OP_RANGE:
		return b >= in->x && b <= in->y;
	case OP_SET:
		return set_has(&re->sets[in->x], b);
	default:
		return false;
	}
}

static void thread_init(struct thread *t)
{
	for (unsigned i = 0; i < MAXCAP; i++)
		t->caps[i] = -1;
	t->start = 0;
	t->noempty = 0;
	t->out = 0;
}

static void lists_init(const struct vm *vm, struct tlist lists[2], struct thread (*buf)[LISTMAX])
{
	for (int k = 0; k < 2; k++) {
		memset(lists[k].sparse, 0, vm->re->n * sizeof(uint16_t));
		lists[k].n = 0;
		lists[k].t = vm->ncap ? buf[k] : NULL;
	}
}

/* One search from @p start. full: anchored at start, match must end at n.
 * Memory: two lists of ~4 KiB on the stack, plus (only when captures are
 * wanted) @p buf, 2 x LISTMAX threads of 96 bytes (~192 KiB).
 * Steps: at most 2 x program size per position from start to n. */
static bool run(struct vm *vm, size_t start, struct thread *out, struct thread (*buf)[LISTMAX])
{
	struct tlist lists[2];
	struct tlist *cl = &lists[0], *nl = &lists[1];
	struct thread t;
	bool matched = false;
	lists_init(vm, lists, buf);
	thread_init(&t);
	addthread(vm, cl, 0, start, &t);
	for (size_t pos = start;; pos++) {
		nl->n = 0;
		for (unsigned i = 0; i < cl->n; i++) {
			unsigned pc = cl->dense[i];
			const struct inst *in = &vm->re->prog[pc];
			vm->steps++;
			if (in->op == OP_MATCH) {
				if (vm->full && pos != vm->n)
					continue;
				matched = true;
				if (out && vm->ncap)
					memcpy(out->caps, cl->t[i].caps,
					       vm->ncap * sizeof(int32_t));
				/* leftmost-first: lower-priority threads are cut */
				break;
			}
			if (pos < vm->n && step_ok(vm->re, in, (unsigned char)vm->s[pos]))
				addthread(vm, nl, pc + 1, pos + 1, vm->ncap ? &cl->t[i] : &t);
		}
		if (pos >= vm->n)
			break;
		/* Unanchored search: a new thread starts at every position
		 * until something matched, with the lowest priority. */
		if (!vm->full && !matched)
			addthread(vm, nl, 0, pos + 1, &t);
		if (nl->n == 0)
			break;
		struct tlist *x = cl;
		cl = nl;
		nl = x;
	}
	return matched;
}

static void put_stats(struct arn_regex_stats *st, const struct vm *vm)
{
	if (st)
		st->steps = vm->steps;
}

bool arn_regex_full_match_stats(const struct arn_regex *re, const char *s, size_t n,
				struct arn_regex_stats *st)
{
	struct vm vm = {.re = re, .s = s, .n = n, .ncap = 0, .full = true};
	bool ok = run(&vm, 0, NULL, NULL);
	put_stats(st, &vm);
	return ok;
}

bool arn_regex_full_match(const struct arn_regex *re, const char *s, size_t n)
{
	return arn_regex_full_match_stats(re, s, n, NULL);
}

bool arn_regex_search_stats(const struct arn_regex *re, const char *s, size_t n, size_t start,
			    long *caps, size_t ncap_pairs, struct arn_regex_stats *st)
{
	struct vm vm = {.re = re, .s = s, .n = n, .ncap = caps ? re->ncap : 0, .full = false};
	struct thread tmp;
	put_stats(st, &vm);
	if (start > n || n > INT32_MAX)
		return false;
	bool ok;
	if (caps) {
		struct thread buf[2][LISTMAX];
		ok = run(&vm, start, &tmp, buf);
	} else {
		ok = run(&vm, start, NULL, NULL);
	}
	put_stats(st, &vm);
	if (ok && caps) {
		size_t k = 2 * ncap_pairs < re->ncap ? 2 * ncap_pairs : re->ncap;
		for (size_t i = 0; i < k; i++)
			caps[i] = tmp.caps[i];
		for (size_t i = k; i < 2 * ncap_pairs; i++)
			caps[i] = -1;
	}
	return ok;
}

bool arn_regex_search(const struct arn_regex *re, const char *s, size_t n, size_t start, long *caps,
		      size_t ncap_pairs)
{
	return arn_regex_search_stats(re, s, n, start, caps, ncap_pairs, NULL);
}

unsigned arn_regex_program_size(const struct arn_regex *re)
{
	return re->n;
}

bool arn_regex_check_substitution(const struct arn_regex *re, const char *sub, char *err,
				  size_t errlen)
{
	for (const char *p = sub; *p; p++) {
		if (*p != '\\')
			continue;
		p++;
		if (*p == '\\')
			continue;
		if (*p >= '0' && *p <= '9') {
			unsigned g = (unsigned)(*p - '0');
			if (g > re->groups) {
				snprintf(err, errlen,
					 "substitution refers to group \\%u but the regex has %u",
					 g, re->groups);
				return false;
			}
			continue;
		}
		snprintf(err, errlen, "invalid escape in substitution: use \\0-\\9 or \\\\");
		return false;
	}
	return true;
}

/* ---- global replace ------------------------------------------------------- */

/*
 * The output of a global replace. A match found may later be superseded by
 * a higher-priority one of the same search (leftmost-first), so output is
 * written speculatively and cut back to where that search's part began;
 * len counts bytes as if @p cap were unbounded, saturating at cap (a cut
 * back below cap makes the bytes written since valid again; one that stays
 * at or above cap means the final output does not fit either).
 */
struct rw {
	char *buf;
	size_t cap, len;
};

static void rw_put(struct rw *w, const char *p, size_t k)
{
	if (w->len < w->cap && k < w->cap - w->len) {
		memcpy(w->buf + w->len, p, k);
		w->len += k;
	} else {
		w->len = w->cap;
	}
}

/* @p sub with \0..\9 replaced by the groups in @p caps and \\ by \. */
static void rw_rewrite(struct rw *w, const struct arn_regex *re, const char *s, const char *sub,
		       const int32_t *caps)
{
	for (const char *p = sub; *p; p++) {
		if (*p == '\\' && p[1] >= '0' && p[1] <= '9') {
			unsigned g = (unsigned)(p[1] - '0');
			p++;
			if (2 * g + 1 < re->ncap && caps[2 * g] >= 0)
				rw_put(w, s + caps[2 * g], (size_t)(caps[2 * g + 1] - caps[2 * g]));
			continue;
		}
		if (*p == '\\' && p[1] == '\\')
			p++;
		rw_put(w, p, 1);
	}
}

/*
 * How far RE2::GlobalReplace steps over a refused empty match at @p p: one
 * UTF-8 character, or one byte where the bytes are not one (RE2's fullrune
 * and chartorune: overlong forms, stray continuation bytes, truncated
 * sequences and values above U+10FFFF are single bytes).
 */
static size_t rune_len(const char *str, size_t avail)
{
	const unsigned char *p = (const unsigned char *)str;
	unsigned c = p[0];
	if (c < 0x80)
		return 1;
	size_t need = c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
	if (avail < need || c < 0xc0 || c >= 0xf8)
		return 1;
	uint32_t r = c & (0x7fu >> need);
	for (size_t k = 1; k < need; k++) {
		if ((p[k] & 0xc0) != 0x80)
			return 1;
		r = (r << 6) | (p[k] & 0x3fu);
	}
	static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
	return r >= min[need] && r <= 0x10ffff ? need : 1;
}

/*
 * RE2::GlobalReplace in one pass over @p s.
 *
 * RE2 (and the obvious loop over arn_regex_search) runs one search per
 * match, each from where the last match ended; but a leftmost-first search
 * is only decided when every higher-priority thread has died, which may be
 * at the end of the subject ((a*b)|a over "aaaa..." looks for a b each
 * time), so that loop is quadratic. Here every search is one group of
 * threads in a single list, in order: search j+1 begins (speculatively)
 * where search j's best match so far ends, while search j's remaining,
 * higher-priority threads run on beside it. If one of them matches, search
 * j's match is replaced, everything after it in the list (its lower
 * threads, and all later searches) is cut, and the output is cut back to
 * where search j's part began and rewritten.
 *
 * Why this stays linear: an instruction is held at a position by at most
 * one thread, the one of the earliest search, as in a single search. A
 * later search can lose a state to an earlier one without changing what it
 * finds: the state's future is the same in both, so if it leads to a match
 * the earlier search's match is replaced and the later search discarded
 * before that match could count. The exception is a match at the very
 * position where a search begins (its empty match there), which an earlier
 * search that just matched at that position also holds; so a search that
 * begins after a match builds its first closure fresh (addfresh()).
 *
 * Empty matches follow RE2: one is refused where the previous match ended
 * (the search then steps over one character, rune_len(), and goes on from
 * there); so a* over "baaa" gives X b X, not X b X X.
 *
 * Steps: at most 3 x program size + 1 per position, plus the initial list.
 */
static long sweep(struct vm *vm, const char *sub, char *out, size_t cap)
{
	const struct arn_regex *re = vm->re;
	const char *s = vm->s;
	size_t n = vm->n;
	struct thread buf[2][LISTMAX];
	uint32_t seen[ARN_REGEX_MAX_INSTS];
	struct tlist lists[2];
	struct tlist *cl = &lists[0], *nl = &lists[1];
	struct rw w = {out, cap, 0};
	memset(seen, 0, re->n * sizeof(seen[0]));
	vm->seen = seen;
	vm->stamp = 0;
	lists_init(vm, lists, buf);
	/* the newest search, which has no match yet; its threads carry nt */
	size_t nstart = 0;
	struct thread nt;
	thread_init(&nt);
	addthread(vm, cl, 0, 0, &nt);
	for (size_t pos = 0;; pos++) {
		nl->n = 0;
		for (unsigned i = 0; i < cl->n; i++) {
			unsigned pc = cl->dense[i];
			const struct inst *in = &re->prog[pc];
			vm->steps++;
			if (in->op != OP_MATCH) {
				if (pos < n && step_ok(re, in, (unsigned char)s[pos]))
					addthread(vm, nl, pc + 1, pos + 1, &cl->t[i]);
				continue;
			}
			/* the best match yet of this thread's search */
			const struct thread *m = &cl->t[i];
			w.len = m->out;
			if (m->noempty && pos == (size_t)m->start) {
				/* empty, where the previous match ended: refused */
				size_t r = pos < n ? rune_len(s + pos, n - pos) : 1;
				rw_put(&w, s + pos, pos < n ? r : 0);
				nstart = pos + r;
				nt.noempty = 0;
			} else {
				rw_put(&w, s + m->start, (size_t)(m->caps[0] - m->start));
				rw_rewrite(&w, re, s, sub, m->caps);
				nstart = pos;
				nt.noempty = 1;
			}
			nt.out = w.len;
			cl->n = i + 1;
			if (nstart == pos) {
				nt.start = (int32_t)pos;
				vm->stamp++;
				addfresh(vm, cl, 0, pos, &nt);
			}
		}
		if (pos >= n)
			break;
		if (nstart <= pos + 1) {
			nt.start = (int32_t)nstart;
			addthread(vm, nl, 0, pos + 1, &nt);
		}
		struct tlist *x = cl;
		cl = nl;
		nl = x;
	}
	if (nstart < n)
		rw_put(&w, s + nstart, n - nstart);
	if (w.len >= cap)
		return -1;
	out[w.len] = 0;
	return (long)w.len;
}

long arn_regex_replace_stats(const struct arn_regex *re, const char *s, size_t n, const char *sub,
			     char *out, size_t cap, struct arn_regex_stats *st)
{
	struct vm vm = {.re = re, .s = s, .n = n, .ncap = re->ncap, .full = false};
	long rc;
	if (n > INT32_MAX) {
		/* beyond what a thread's offsets hold: nothing matches, as
		 * arn_regex_search() says */
		struct rw w = {out, cap, 0};
		rw_put(&w, s, n);
		rc = w.len >= cap ? -1 : (long)w.len;
		if (rc >= 0)
			out[w.len] = 0;
	} else {
		rc = sweep(&vm, sub, out, cap);
	}
	put_stats(st, &vm);
	return rc;
}

long arn_regex_replace(const struct arn_regex *re, const char *s, size_t n, const char *sub,
		       char *out, size_t cap)
{
	return arn_regex_replace_stats(re, s, n, sub, out, cap, NULL);
}
