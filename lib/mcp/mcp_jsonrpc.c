/*
 * JSON-RPC 2.0 for the MCP gateway: the body reader (limits first, json-c
 * second), message decoding, and the builders of answers.
 */
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "arn_mcp.h"

/* ---- tables ---------------------------------------------------------------- */

static const struct {
	int code, status;
	const char *text, *name;
} errs[] = {
#define ARN_MCP_ERR(id, code, status, text) {code, status, text, #id},
#include "arn_mcp_err.def"
#undef ARN_MCP_ERR
};

static const struct {
	const char *name;
	uint8_t kind;
} methods[] = {
    {"", ARN_MCP_MK_OTHER},
#define ARN_MCP_METHOD(id, name, kind) {name, ARN_MCP_MK_##kind},
#include "arn_mcp_method.def"
#undef ARN_MCP_METHOD
};

_Static_assert(sizeof(errs) / sizeof(errs[0]) == ARN_MCP_E_COUNT, "one row per error");
_Static_assert(sizeof(methods) / sizeof(methods[0]) == ARN_MCP_M_COUNT, "one row per method");

int arn_mcp_err_code(enum arn_mcp_err e)
{
	return (unsigned)e < ARN_MCP_E_COUNT ? errs[e].code : errs[ARN_MCP_E_INTERNAL].code;
}

int arn_mcp_err_status(enum arn_mcp_err e)
{
	return (unsigned)e < ARN_MCP_E_COUNT ? errs[e].status : 500;
}

const char *arn_mcp_err_text(enum arn_mcp_err e)
{
	return (unsigned)e < ARN_MCP_E_COUNT ? errs[e].text : errs[ARN_MCP_E_INTERNAL].text;
}

const char *arn_mcp_err_name(enum arn_mcp_err e)
{
	return (unsigned)e < ARN_MCP_E_COUNT ? errs[e].name : "INTERNAL";
}

enum arn_mcp_method arn_mcp_method_lookup(const char *s, size_t n)
{
	/* Eighteen names: a linear scan costs less than hashing the name. */
	for (int m = 1; m < ARN_MCP_M_COUNT; m++)
		if (strlen(methods[m].name) == n && memcmp(methods[m].name, s, n) == 0)
			return (enum arn_mcp_method)m;
	return ARN_MCP_M_OTHER;
}

const char *arn_mcp_method_name(enum arn_mcp_method m)
{
	return (unsigned)m < ARN_MCP_M_COUNT ? methods[m].name : "";
}

enum arn_mcp_method_kind arn_mcp_method_kind(enum arn_mcp_method m)
{
	return (unsigned)m < ARN_MCP_M_COUNT ? (enum arn_mcp_method_kind)methods[m].kind
					     : ARN_MCP_MK_OTHER;
}

/* ---- limits ---------------------------------------------------------------- */

/* The largest body any configuration may allow: McpGateway's own ceiling
 * (ARN_CFG_MCP_MAX_MAX_REQUEST, 16 MiB) with room; json-c takes int lengths. */
#define MAX_MESSAGE_CEILING (64u << 20)

static uint32_t pick(uint32_t v, uint32_t def, uint32_t ceiling)
{
	if (v == 0)
		v = def;
	return v > ceiling ? ceiling : v;
}

void arn_mcp_limits_resolve(struct arn_mcp_limits *l)
{
	l->max_message_bytes = pick(l->max_message_bytes, 1u << 20, MAX_MESSAGE_CEILING);
	l->max_batch = pick(l->max_batch, ARN_MCP_MAX_BATCH, ARN_MCP_MAX_BATCH);
	l->max_depth = pick(l->max_depth, 32, ARN_MCP_MAX_DEPTH);
	l->max_containers = pick(l->max_containers, 4096, UINT32_MAX);
	l->max_values = pick(l->max_values, 32768, UINT32_MAX);
	l->max_tools = pick(l->max_tools, 4096, 65536);
	l->max_page_tools = pick(l->max_page_tools, 256, l->max_tools);
	l->max_tool_name = pick(l->max_tool_name, 128, 1024);
	l->max_backend_pages = pick(l->max_backend_pages, 64, 65536);
}

/* ---- the reader -------------------------------------------------------------- */

int arn_mcp_reader_init(struct arn_mcp_reader *r, const struct arn_mcp_limits *lim)
{
	memset(r, 0, sizeof(*r));
	if (lim)
		r->lim = *lim;
	arn_mcp_limits_resolve(&r->lim);
	/* json-c's own depth limit one above ours: the scan refuses first,
	 * with the error that says why. */
	r->tok = json_tokener_new_ex((int)r->lim.max_depth + 1);
	if (!r->tok)
		return -ENOMEM;
	/* Not JSON_TOKENER_VALIDATE_UTF8: json-c 0.16 refuses a valid
	 * sequence cut between two segments (test_split_anywhere); the scan
	 * validates UTF-8 itself, across segments. */
	json_tokener_set_flags(r->tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS);
	return 0;
}

void arn_mcp_reader_fini(struct arn_mcp_reader *r)
{
	if (r->tok)
		json_tokener_free(r->tok);
	if (r->root)
		json_object_put(r->root);
	r->tok = NULL;
	r->root = NULL;
}

static bool is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The first byte of a UTF-8 sequence (RFC 3629 table 3-7): how many
 * continuation bytes follow and the range of the next one, which excludes
 * overlong forms, surrogates and code points past U+10FFFF. */
static int utf8_start(struct arn_mcp_reader *r, unsigned char c)
{
	r->utf8_lo = 0x80;
	r->utf8_hi = 0xbf;
	if (c >= 0xc2 && c <= 0xdf) {
		r->utf8_need = 1;
	} else if (c >= 0xe0 && c <= 0xef) {
		r->utf8_need = 2;
		if (c == 0xe0)
			r->utf8_lo = 0xa0;
		else if (c == 0xed)
			r->utf8_hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		r->utf8_need = 3;
		if (c == 0xf0)
			r->utf8_lo = 0x90;
		else if (c == 0xf4)
			r->utf8_hi = 0x8f;
	} else {
		return -1;
	}
	return 0;
}

/*
 * \uXXXX escapes: a high surrogate must be followed by a low one, and a
 * low one must follow a high one. json-c turns a lone surrogate into
 * U+FFFD, so the backend would get another string than the client sent.
 */
static int u_escape(struct arn_mcp_reader *r, unsigned char c)
{
	if (r->want_low == 1) { /* the '\\' of the low half */
		if (c != '\\')
			return -1;
		r->want_low = 2;
		return 0;
	}
	if (r->want_low == 2) { /* its 'u' */
		if (c != 'u')
			return -1;
		r->want_low = 0;
		r->in_low = 1;
		r->uesc = 4;
		r->uval = 0;
		return 0;
	}
	int h = c >= '0' && c <= '9'   ? c - '0'
		: c >= 'a' && c <= 'f' ? c - 'a' + 10
		: c >= 'A' && c <= 'F' ? c - 'A' + 10
				       : -1;
	if (h < 0)
		return -1;
	r->uval = (uint16_t)(r->uval << 4 | (unsigned)h);
	if (--r->uesc)
		return 0;
	bool high = r->uval >= 0xd800 && r->uval <= 0xdbff;
	bool low = r->uval >= 0xdc00 && r->uval <= 0xdfff;
	if (r->in_low) {
		r->in_low = 0;
		return low ? 0 : -1;
	}
	if (low)
		return -1;
	if (high)
		r->want_low = 1;
	return 0;
}

/*
 * Numbers and literals are checked here too, to RFC 8259's grammar: json-c
 * 0.16 takes "-5119-1" whole but refuses it cut in two, and whether a body
 * is accepted must not depend on where TCP cut it.
 */
enum {
	SC_NONE = 0,
	SC_LITERAL,
	/* number states, after: */
	SC_MINUS,
	SC_ZERO, /* accepting */
	SC_INT,	 /* accepting */
	SC_DOT,
	SC_FRAC, /* accepting */
	SC_E,
	SC_ESIGN,
	SC_EXP, /* accepting */
};

static const char *const literals[] = {"true", "false", "null"};

static bool is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static void num_digit(struct arn_mcp_reader *r, unsigned char c)
{
	if (r->num_len < sizeof(r->num))
		r->num[r->num_len] = (char)c;
	if (r->num_len < UINT8_MAX)
		r->num_len++;
}

/*
 * json-c holds integers as int64 or uint64 and clamps the rest without a
 * word: 18446744073709551616 would reach the backend as
 * 18446744073709551615, and an id come back changed. Such integers are
 * refused instead (RFC 8259 lets an implementation limit number range);
 * numbers with a fraction or exponent keep their text in json-c.
 */
static bool int_out_of_range(const struct arn_mcp_reader *r)
{
	if (r->scalar != SC_INT)
		return false;
	const char *lim = r->num_neg ? "9223372036854775808" : "18446744073709551615";
	size_t ll = strlen(lim);
	if (r->num_len != ll)
		return r->num_len > ll;
	return memcmp(r->num, lim, ll) > 0;
}

static int scalar_begin(struct arn_mcp_reader *r, unsigned char c)
{
	r->lit_pos = 1;
	r->num_len = 0;
	r->num_neg = c == '-';
	if (is_digit(c))
		num_digit(r, c);
	if (c == '-')
		r->scalar = SC_MINUS;
	else if (c == '0')
		r->scalar = SC_ZERO;
	else if (is_digit(c))
		r->scalar = SC_INT;
	else if (c == 't' || c == 'f' || c == 'n') {
		r->scalar = SC_LITERAL;
		r->lit = c == 't' ? 0 : c == 'f' ? 1 : 2;
	} else
		return -1;
	return 0;
}

static bool scalar_complete(const struct arn_mcp_reader *r)
{
	switch (r->scalar) {
	case SC_LITERAL:
		return literals[r->lit][r->lit_pos] == '\0';
	case SC_ZERO:
	case SC_INT:
	case SC_FRAC:
	case SC_EXP:
		return true;
	default:
		return false;
	}
}

/* 1: @p c continues the token; 0: @p c ends a complete token; -1: invalid. */
static int scalar_step(struct arn_mcp_reader *r, unsigned char c)
{
	uint8_t next = SC_NONE;
	switch (r->scalar) {
	case SC_LITERAL:
		if (literals[r->lit][r->lit_pos] != '\0') {
			if (c != (unsigned char)literals[r->lit][r->lit_pos])
				return -1;
			r->lit_pos++;
			return 1;
		}
		break;
	case SC_MINUS:
		next = c == '0' ? SC_ZERO : is_digit(c) ? SC_INT : SC_NONE;
		if (next == SC_INT)
			num_digit(r, c);
		break;
	case SC_ZERO:
		next = c == '.' ? SC_DOT : (c == 'e' || c == 'E') ? SC_E : SC_NONE;
		break;
	case SC_INT:
		next = is_digit(c)		? SC_INT
		       : c == '.'		? SC_DOT
		       : (c == 'e' || c == 'E') ? SC_E
						: SC_NONE;
		if (next == SC_INT)
			num_digit(r, c);
		break;
	case SC_DOT:
		next = is_digit(c) ? SC_FRAC : SC_NONE;
		break;
	case SC_FRAC:
		next = is_digit(c) ? SC_FRAC : (c == 'e' || c == 'E') ? SC_E : SC_NONE;
		break;
	case SC_E:
		next = (c == '+' || c == '-') ? SC_ESIGN : is_digit(c) ? SC_EXP : SC_NONE;
		break;
	case SC_ESIGN:
	case SC_EXP:
		next = is_digit(c) ? SC_EXP : SC_NONE;
		break;
	}
	if (next != SC_NONE) {
		r->scalar = next;
		return 1;
	}
	if (!scalar_complete(r))
		return -1;
	return (is_space(c) || c == ',' || c == ']' || c == '}') ? 0 : -1;
}

/*
 * Count what json-c will allocate for @p buf before it sees it: containers
 * (an object is a hash table, the costliest value), values (every string,
 * key or not, and every scalar token), and nesting. The scan keeps its
 * state across segments. It is not a validator (json-c is); it only has
 * to be exact about where strings are, so that brackets and quotes inside
 * them are not counted.
 */
static enum arn_mcp_err scan(struct arn_mcp_reader *r, const unsigned char *p, size_t n)
{
	const struct arn_mcp_limits *l = &r->lim;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = p[i];
		if (r->in_string) {
			if (r->utf8_need) {
				if (c < r->utf8_lo || c > r->utf8_hi)
					return ARN_MCP_E_PARSE;
				r->utf8_need--;
				r->utf8_lo = 0x80;
				r->utf8_hi = 0xbf;
				continue;
			}
			if (c < 0x20)
				return ARN_MCP_E_PARSE; /* raw control characters (RFC 8259 7) */
			if (c >= 0x80) {
				if (utf8_start(r, c) < 0)
					return ARN_MCP_E_PARSE;
				r->escape = 0;
				continue;
			}
			if (r->want_low || r->uesc) {
				if (u_escape(r, c) < 0)
					return ARN_MCP_E_PARSE;
				continue;
			}
			if (r->escape) {
				r->escape = 0;
				if (c == 'u') {
					r->uesc = 4;
					r->uval = 0;
				}
			} else if (c == '\\') {
				r->escape = 1;
			} else if (c == '"') {
				r->in_string = 0;
			}
			continue;
		}
		if (r->scalar) {
			int k = scalar_step(r, c);
			if (k < 0)
				return ARN_MCP_E_PARSE;
			if (k > 0)
				continue;
			if (int_out_of_range(r))
				return ARN_MCP_E_NUMBER_RANGE;
			r->scalar = 0; /* ended by @p c, a delimiter: go on with it */
		}
		if (is_space(c))
			continue;
		if (c < 0x20)
			return ARN_MCP_E_PARSE;
		bool starts = r->after_value == 0; /* after '[', ',', ':' or at the start */
		switch (c) {
		case '{':
		case '[':
			if (++r->depth > l->max_depth)
				return ARN_MCP_E_TOO_DEEP;
			if (++r->containers > l->max_containers)
				return ARN_MCP_E_TOO_MANY_VALUES;
			r->values++;
			r->after_value = 0;
			break;
		case '}':
		case ']':
			if (r->depth > 0)
				r->depth--;
			r->after_value = 1;
			break;
		case ',':
		case ':':
			r->after_value = 0;
			break;
		case '"':
			r->in_string = 1;
			r->values++;
			r->after_value = 1;
			break;
		default:
			/* Outside strings only numbers and literals remain, and
			 * only where a value may start. */
			if (!starts || scalar_begin(r, c) < 0)
				return ARN_MCP_E_PARSE;
			r->values++;
			r->after_value = 1;
			break;
		}
		if (r->values > l->max_values)
			return ARN_MCP_E_TOO_MANY_VALUES;
	}
	return ARN_MCP_E_NONE;
}

static int fail(struct arn_mcp_reader *r, enum arn_mcp_err e)
{
	r->err = e;
	return (int)e;
}

int arn_mcp_reader_feed(struct arn_mcp_reader *r, const char *buf, size_t len)
{
	if (r->err)
		return (int)r->err;
	if (len > r->lim.max_message_bytes - r->bytes)
		return fail(r, ARN_MCP_E_TOO_LARGE);
	r->bytes += len;
	if (r->done) {
		/* After the top-level value only whitespace may follow. */
		for (size_t i = 0; i < len; i++)
			if (!is_space((unsigned char)buf[i]))
				return fail(r, ARN_MCP_E_PARSE);
		return ARN_AGAIN;
	}
	enum arn_mcp_err e = scan(r, (const unsigned char *)buf, len);
	if (e)
		return fail(r, e);
	if (len == 0)
		return ARN_AGAIN;
	struct json_object *o = json_tokener_parse_ex(r->tok, buf, (int)len);
	enum json_tokener_error je = json_tokener_get_error(r->tok);
	if (je == json_tokener_continue)
		return ARN_AGAIN;
	if (je != json_tokener_success) {
		if (je == json_tokener_error_depth)
			return fail(r, ARN_MCP_E_TOO_DEEP);
		return fail(r, ARN_MCP_E_PARSE);
	}
	r->root = o;
	r->done = true;
	for (size_t i = json_tokener_get_parse_end(r->tok); i < len; i++)
		if (!is_space((unsigned char)buf[i]))
			return fail(r, ARN_MCP_E_PARSE);
	return ARN_AGAIN;
}

/* ---- decoding ------------------------------------------------------------------ */

/* The member @p key of @p o: true when present (its value may be NULL, JSON null). */
static bool member(struct json_object *o, const char *key, struct json_object **v)
{
	return json_object_object_get_ex(o, key, v);
}

static bool valid_id(struct json_object *id)
{
	/* MCP: "a string or integer", never null (JSON-RPC's null id is for
	 * errors answering a request whose id could not be read). */
	return id && (json_object_is_type(id, json_type_string) ||
		      json_object_is_type(id, json_type_int));
}

enum arn_mcp_err arn_mcp_msg_decode(struct json_object *obj, struct arn_mcp_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->obj = obj;
	m->error_message = "";
	struct json_object *v, *id = NULL;
	if (!obj || !json_object_is_type(obj, json_type_object))
		return m->err = ARN_MCP_E_INVALID;
	bool has_id = member(obj, "id", &id);
	if (has_id && valid_id(id))
		m->id = id; /* kept even when the rest is wrong: the error answers it */
	/* Length and bytes: "2.0\u0000x" is not "2.0". */
	if (!member(obj, "jsonrpc", &v) || !json_object_is_type(v, json_type_string) ||
	    json_object_get_string_len(v) != 3 || memcmp(json_object_get_string(v), "2.0", 3) != 0)
		return m->err = ARN_MCP_E_INVALID;
	bool has_method = member(obj, "method", &v);
	if (has_method) {
		if (!json_object_is_type(v, json_type_string))
			return m->err = ARN_MCP_E_INVALID;
		m->method_name = json_object_get_string(v);
		m->method_len = (size_t)json_object_get_string_len(v);
		m->method = (uint8_t)arn_mcp_method_lookup(m->method_name, m->method_len);
		if (member(obj, "params", &v)) {
			/* MCP's params are always objects; JSON-RPC's arrays are unused. */
			if (!v || !json_object_is_type(v, json_type_object))
				return m->err = ARN_MCP_E_INVALID;
			m->params = v;
		}
		if (!has_id) {
			m->kind = ARN_MCP_NOTIFICATION;
			return m->err = ARN_MCP_E_NONE;
		}
		if (!valid_id(id))
			return m->err = ARN_MCP_E_INVALID;
		m->kind = ARN_MCP_REQUEST;
		return m->err = ARN_MCP_E_NONE;
	}
	/* A response: exactly one of result and error. */
	bool has_result = member(obj, "result", &m->result);
	bool has_error = member(obj, "error", &v);
	if (has_result == has_error || !has_id)
		return m->err = ARN_MCP_E_INVALID;
	if (has_result) {
		if (!valid_id(id))
			return m->err = ARN_MCP_E_INVALID;
		m->kind = ARN_MCP_RESULT;
		return m->err = ARN_MCP_E_NONE;
	}
	if (id && !valid_id(id))
		return m->err = ARN_MCP_E_INVALID;
	struct json_object *code, *msg;
	if (!v || !json_object_is_type(v, json_type_object) || !member(v, "code", &code) ||
	    !json_object_is_type(code, json_type_int))
		return m->err = ARN_MCP_E_INVALID;
	m->kind = ARN_MCP_ERROR;
	m->error_code = json_object_get_int64(code);
	if (member(v, "message", &msg) && json_object_is_type(msg, json_type_string))
		m->error_message = json_object_get_string(msg);
	return m->err = ARN_MCP_E_NONE;
}

enum arn_mcp_err arn_mcp_reader_finish(struct arn_mcp_reader *r, bool batch_ok,
				       struct arn_mcp_body *out)
{
	out->root = NULL;
	out->batch = false;
	out->n = 0;
	if (r->err)
		return r->err;
	if (!r->done) {
		if (r->scalar && !scalar_complete(r)) {
			r->err = ARN_MCP_E_PARSE;
			return r->err;
		}
		if (int_out_of_range(r)) {
			r->err = ARN_MCP_E_NUMBER_RANGE;
			return r->err;
		}
		/* A top-level number ends only with the input: json-c wants the
		 * terminating NUL to see it. Anything else unfinished is cut. */
		struct json_object *o = json_tokener_parse_ex(r->tok, "", 1);
		if (json_tokener_get_error(r->tok) != json_tokener_success) {
			r->err = ARN_MCP_E_PARSE;
			return r->err;
		}
		r->root = o;
		r->done = true;
	}
	struct json_object *root = r->root;
	if (json_object_is_type(root, json_type_object)) {
		out->n = 1;
		arn_mcp_msg_decode(root, &out->msgs[0]);
	} else if (json_object_is_type(root, json_type_array)) {
		size_t n = json_object_array_length(root);
		if (n == 0)
			return ARN_MCP_E_BATCH_EMPTY;
		if (!batch_ok)
			return ARN_MCP_E_BATCH_REFUSED;
		if (n > r->lim.max_batch)
			return ARN_MCP_E_BATCH_TOO_LONG;
		out->batch = true;
		out->n = (uint32_t)n;
		for (size_t i = 0; i < n; i++)
			arn_mcp_msg_decode(json_object_array_get_idx(root, i), &out->msgs[i]);
	} else {
		return ARN_MCP_E_NOT_RPC;
	}
	out->root = root; /* the body owns it now */
	r->root = NULL;
	return ARN_MCP_E_NONE;
}

void arn_mcp_body_release(struct arn_mcp_body *b)
{
	if (b->root)
		json_object_put(b->root);
	b->root = NULL;
	b->n = 0;
}

enum arn_mcp_err arn_mcp_parse(const char *buf, size_t len, const struct arn_mcp_limits *lim,
			       bool batch_ok, struct arn_mcp_body *out)
{
	struct arn_mcp_reader r;
	out->root = NULL;
	out->n = 0;
	if (arn_mcp_reader_init(&r, lim) < 0)
		return ARN_MCP_E_INTERNAL;
	int rc = arn_mcp_reader_feed(&r, buf, len);
	enum arn_mcp_err e =
	    rc == ARN_AGAIN ? arn_mcp_reader_finish(&r, batch_ok, out) : (enum arn_mcp_err)rc;
	arn_mcp_reader_fini(&r);
	return e;
}

/* ---- building -------------------------------------------------------------------- */

static struct json_object *envelope(struct json_object *id, bool with_id)
{
	struct json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	json_object_object_add(o, "jsonrpc", json_object_new_string("2.0"));
	if (with_id)
		json_object_object_add(o, "id", json_object_get(id));
	return o;
}

struct json_object *arn_mcp_new_result(struct json_object *id, struct json_object *result)
{
	struct json_object *o = envelope(id, true);
	if (o)
		json_object_object_add(o, "result",
				       result ? json_object_get(result) : json_object_new_object());
	return o;
}

struct json_object *arn_mcp_new_error(struct json_object *id, enum arn_mcp_err e,
				      const char *detail)
{
	struct json_object *o = envelope(id, true);
	struct json_object *err = json_object_new_object();
	if (!o || !err) {
		json_object_put(o);
		json_object_put(err);
		return NULL;
	}
	json_object_object_add(err, "code", json_object_new_int(arn_mcp_err_code(e)));
	const char *text = arn_mcp_err_text(e);
	if (detail && *detail) {
		size_t a = strlen(text), b = strlen(detail);
		char *s = malloc(a + 2 + b + 1);
		if (s) {
			memcpy(s, text, a);
			memcpy(s + a, ": ", 2);
			memcpy(s + a + 2, detail, b + 1);
			json_object_object_add(err, "message", json_object_new_string(s));
			free(s);
		}
	}
	if (!json_object_object_get_ex(err, "message", NULL))
		json_object_object_add(err, "message", json_object_new_string(text));
	json_object_object_add(o, "error", err);
	return o;
}

struct json_object *arn_mcp_new_request(struct json_object *id, const char *method,
					struct json_object *params)
{
	struct json_object *o = envelope(id, id != NULL);
	if (!o)
		return NULL;
	json_object_object_add(o, "method", json_object_new_string(method));
	if (params)
		json_object_object_add(o, "params", json_object_get(params));
	return o;
}

const char *arn_mcp_text(struct json_object *o, size_t *len)
{
	size_t n = 0;
	const char *s = json_object_to_json_string_length(
	    o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
	if (len)
		*len = n;
	return s;
}
