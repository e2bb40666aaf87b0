/*
 * Envoy's access-log command operators: compiled once on the control lcore
 * into a list of operations, applied on workers into a caller's buffer
 * without allocating.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "arn_access_log.h"

enum op_kind {
	OP_LIT = 0,
	OP_START_TIME,
	OP_REQ,
	OP_RESP,
	OP_TRAILER,
	OP_PROTOCOL,
	OP_RESPONSE_CODE,
	OP_RESPONSE_CODE_DETAILS,
	OP_CONNECTION_TERMINATION_DETAILS,
	OP_RESPONSE_FLAGS,
	OP_RESPONSE_FLAGS_LONG,
	OP_BYTES_RECEIVED,
	OP_BYTES_SENT,
	OP_DURATION,
	OP_REQUEST_DURATION,
	OP_RESPONSE_DURATION,
	OP_RESPONSE_TX_DURATION,
	OP_UPSTREAM_HOST,
	OP_UPSTREAM_CLUSTER,
	OP_UPSTREAM_LOCAL_ADDRESS,
	OP_UPSTREAM_TRANSPORT_FAILURE_REASON,
	OP_DS_REMOTE,
	OP_DS_REMOTE_NOPORT,
	OP_DS_REMOTE_PORT,
	OP_DS_DIRECT_REMOTE,
	OP_DS_DIRECT_REMOTE_NOPORT,
	OP_DS_DIRECT_REMOTE_PORT,
	OP_DS_LOCAL,
	OP_DS_LOCAL_NOPORT,
	OP_DS_LOCAL_PORT,
	OP_REQUESTED_SERVER_NAME,
	OP_DS_TLS_VERSION,
	OP_DS_TLS_CIPHER,
	OP_DS_PEER, /* op.peer: which field */
	OP_ROUTE_NAME,
	OP_CONNECTION_ID,
	OP_HOSTNAME,
	OP_ATTEMPTS,
	OP_MCP_TOOL,
	OP_MCP_BACKEND,
	OP_LOCAL_REPLY_BODY,
};

/* Operators without arguments. */
static const struct {
	const char *name;
	enum op_kind kind;
	enum arn_access_peer peer; /* OP_DS_PEER */
} simple_ops[] = {
    {"PROTOCOL", OP_PROTOCOL},
    {"RESPONSE_CODE", OP_RESPONSE_CODE},
    {"RESPONSE_CODE_DETAILS", OP_RESPONSE_CODE_DETAILS},
    {"CONNECTION_TERMINATION_DETAILS", OP_CONNECTION_TERMINATION_DETAILS},
    {"RESPONSE_FLAGS", OP_RESPONSE_FLAGS},
    {"RESPONSE_FLAGS_LONG", OP_RESPONSE_FLAGS_LONG},
    {"BYTES_RECEIVED", OP_BYTES_RECEIVED},
    {"BYTES_SENT", OP_BYTES_SENT},
    {"DURATION", OP_DURATION},
    {"REQUEST_DURATION", OP_REQUEST_DURATION},
    {"RESPONSE_DURATION", OP_RESPONSE_DURATION},
    {"RESPONSE_TX_DURATION", OP_RESPONSE_TX_DURATION},
    {"UPSTREAM_HOST", OP_UPSTREAM_HOST},
    {"UPSTREAM_CLUSTER", OP_UPSTREAM_CLUSTER},
    {"UPSTREAM_LOCAL_ADDRESS", OP_UPSTREAM_LOCAL_ADDRESS},
    {"UPSTREAM_TRANSPORT_FAILURE_REASON", OP_UPSTREAM_TRANSPORT_FAILURE_REASON},
    {"DOWNSTREAM_REMOTE_ADDRESS", OP_DS_REMOTE},
    {"DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT", OP_DS_REMOTE_NOPORT},
    {"DOWNSTREAM_REMOTE_PORT", OP_DS_REMOTE_PORT},
    {"DOWNSTREAM_DIRECT_REMOTE_ADDRESS", OP_DS_DIRECT_REMOTE},
    {"DOWNSTREAM_DIRECT_REMOTE_ADDRESS_WITHOUT_PORT", OP_DS_DIRECT_REMOTE_NOPORT},
    {"DOWNSTREAM_DIRECT_REMOTE_PORT", OP_DS_DIRECT_REMOTE_PORT},
    {"DOWNSTREAM_LOCAL_ADDRESS", OP_DS_LOCAL},
    {"DOWNSTREAM_LOCAL_ADDRESS_WITHOUT_PORT", OP_DS_LOCAL_NOPORT},
    {"DOWNSTREAM_LOCAL_PORT", OP_DS_LOCAL_PORT},
    {"REQUESTED_SERVER_NAME", OP_REQUESTED_SERVER_NAME},
    {"DOWNSTREAM_TLS_VERSION", OP_DS_TLS_VERSION},
    {"DOWNSTREAM_TLS_CIPHER", OP_DS_TLS_CIPHER},
    {"DOWNSTREAM_PEER_SUBJECT", OP_DS_PEER, ARN_ACCESS_PEER_SUBJECT},
    {"DOWNSTREAM_PEER_ISSUER", OP_DS_PEER, ARN_ACCESS_PEER_ISSUER},
    {"DOWNSTREAM_PEER_URI_SAN", OP_DS_PEER, ARN_ACCESS_PEER_URI_SAN},
    {"DOWNSTREAM_PEER_FINGERPRINT_256", OP_DS_PEER, ARN_ACCESS_PEER_FINGERPRINT_256},
    {"DOWNSTREAM_PEER_SERIAL", OP_DS_PEER, ARN_ACCESS_PEER_SERIAL},
    {"ROUTE_NAME", OP_ROUTE_NAME},
    {"CONNECTION_ID", OP_CONNECTION_ID},
    {"HOSTNAME", OP_HOSTNAME},
    {"UPSTREAM_REQUEST_ATTEMPT_COUNT", OP_ATTEMPTS},
    /* Arion's: the MCP gateway filter's tool and backend (docs/mcp.md) */
    {"MCP_TOOL", OP_MCP_TOOL},
    {"MCP_BACKEND", OP_MCP_BACKEND},
    /* a local reply's body, for local_reply_config's body_format */
    {"LOCAL_REPLY_BODY", OP_LOCAL_REPLY_BODY},
};

struct op {
	enum op_kind kind;
	char *a; /* literal text, header name, or START_TIME format */
	size_t alen;
	char *b; /* alternative header (REQ(X?Y)) */
	size_t blen;
	size_t max_len;		   /* :Z, 0 = no limit */
	enum arn_access_peer peer; /* OP_DS_PEER */
};

struct seq {
	struct op *ops;
	size_t n;
};

struct arn_access_format {
	bool json;
	bool omit_empty; /* omit_empty_values: no "-", no null members */
	struct seq text; /* text format */
	size_t n_keys;	 /* json: sorted keys with their value sequences */
	char **keys;
	struct seq *values;
	char hostname[256];
};

static const char *const flag_short[] = {
#define ARN_RESPONSE_FLAG(id, s, l) s,
#include "arn_response_flags.def"
#undef ARN_RESPONSE_FLAG
};
static const char *const flag_long[] = {
#define ARN_RESPONSE_FLAG(id, s, l) l,
#include "arn_response_flags.def"
#undef ARN_RESPONSE_FLAG
};

/* ---- compiling -------------------------------------------------------------- */

static int push(struct seq *s, struct op op)
{
	struct op *v = realloc(s->ops, (s->n + 1) * sizeof(*v));
	if (v == NULL) {
		free(op.a);
		free(op.b);
		return -ENOMEM;
	}
	s->ops = v;
	s->ops[s->n++] = op;
	return 0;
}

static char *dupn(const char *s, size_t n)
{
	char *d = malloc(n + 1);
	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

static void seq_free(struct seq *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->ops[i].a);
		free(s->ops[i].b);
	}
	free(s->ops);
	s->ops = NULL;
	s->n = 0;
}

static int compile(const char *fmt, struct seq *s, struct arn_sb *err)
{
	const char *p = fmt;
	while (*p) {
		const char *pct = strchr(p, '%');
		if (pct == NULL)
			pct = p + strlen(p);
		if (pct > p) {
			struct op lit = {OP_LIT, dupn(p, (size_t)(pct - p)), (size_t)(pct - p)};
			if (lit.a == NULL || push(s, lit))
				return -ENOMEM;
		}
		if (*pct == '\0')
			break;
		/* %% is a literal percent (Envoy's escape). */
		if (pct[1] == '%') {
			struct op lit = {OP_LIT, dupn("%", 1), 1};
			if (lit.a == NULL || push(s, lit))
				return -ENOMEM;
			p = pct + 2;
			continue;
		}
		/* NAME, NAME(args), NAME(args):Z, up to the closing '%'. A '%' inside the
		 * parentheses (START_TIME's strftime format) does not close it. */
		const char *q = pct + 1, *name = q;
		while ((*q >= 'A' && *q <= 'Z') || *q == '_' || (*q >= '0' && *q <= '9'))
			q++;
		size_t nlen = (size_t)(q - name);
		const char *args = NULL;
		size_t alen = 0;
		if (*q == '(') {
			args = ++q;
			while (*q && *q != ')')
				q++;
			if (*q != ')') {
				arn_sb_printf(err,
					      "'%.*s' at offset %zu: no ')' closes the argument\n",
					      (int)(q - pct), pct, (size_t)(pct - fmt));
				return -EINVAL;
			}
			alen = (size_t)(q - args);
			q++;
		}
		size_t max_len = 0;
		if (*q == ':') {
			q++;
			char *e = (char *)q;
			unsigned long z = 0;
			/* digits only: strtoul would take "-1" as ULONG_MAX */
			if (*q >= '0' && *q <= '9') {
				errno = 0;
				z = strtoul(q, &e, 10);
			}
			if (e == q || errno == ERANGE) {
				arn_sb_printf(
				    err,
				    "offset %zu: ':' must be followed by a length (digits, "
				    "at most %lu)\n",
				    (size_t)(q - fmt), ULONG_MAX);
				return -EINVAL;
			}
			max_len = z;
			q = e;
		}
		if (*q != '%' || nlen == 0) {
			arn_sb_printf(err,
				      "'%.*s' at offset %zu is not a command operator: write "
				      "%%NAME%%, %%NAME(ARG)%% or %%NAME(ARG):LEN%% (%%%% for a "
				      "literal %%)\n",
				      (int)(q - pct + (*q ? 1 : 0)), pct, (size_t)(pct - fmt));
			return -EINVAL;
		}
		struct op op = {.max_len = max_len};
		bool found = false;
		if ((nlen == 3 && !memcmp(name, "REQ", 3)) ||
		    (nlen == 4 && !memcmp(name, "RESP", 4)) ||
		    (nlen == 7 && !memcmp(name, "TRAILER", 7))) {
			op.kind = name[1] == 'E' && name[2] == 'Q' ? OP_REQ
				  : name[0] == 'T'		   ? OP_TRAILER
								   : OP_RESP;
			if (args == NULL || alen == 0) {
				arn_sb_printf(err,
					      "%%%.*s%% at offset %zu needs a header name: "
					      "%%%.*s(X-REQUEST-ID)%%\n",
					      (int)nlen, name, (size_t)(pct - fmt), (int)nlen,
					      name);
				return -EINVAL;
			}
			const char *alt = memchr(args, '?', alen);
			size_t l1 = alt ? (size_t)(alt - args) : alen;
			op.a = dupn(args, l1);
			op.alen = l1;
			if (alt) {
				op.b = dupn(alt + 1, alen - l1 - 1);
				op.blen = alen - l1 - 1;
			}
			found = true;
		} else if (nlen == 11 && !memcmp(name, "ENVIRONMENT", 11)) {
			/* Envoy's %ENVIRONMENT(X):Z%: read when the format is
			 * built, a literal from then on ("-" when unset) */
			if (args == NULL || alen == 0) {
				arn_sb_printf(err,
					      "%%ENVIRONMENT%% at offset %zu needs a variable's "
					      "name: %%ENVIRONMENT(POD_NAME)%%\n",
					      (size_t)(pct - fmt));
				return -EINVAL;
			}
			char *vn = dupn(args, alen);
			const char *v = vn ? getenv(vn) : NULL;
			size_t vl = v ? strlen(v) : 1;
			if (max_len && vl > max_len)
				vl = max_len;
			op = (struct op){OP_LIT, dupn(v ? v : "-", vl), vl};
			free(vn);
			if (op.a == NULL)
				return -ENOMEM;
			found = true;
		} else if (nlen == 10 && !memcmp(name, "START_TIME", 10)) {
			op.kind = OP_START_TIME;
			if (args && alen)
				op.a = dupn(args, alen), op.alen = alen;
			found = true;
		} else if ((nlen == 28 && !memcmp(name, "DOWNSTREAM_PEER_CERT_V_START", 28)) ||
			   (nlen == 26 && !memcmp(name, "DOWNSTREAM_PEER_CERT_V_END", 26))) {
			/* a time, formatted as START_TIME's (same argument) */
			op.kind = OP_DS_PEER;
			op.peer = nlen == 28 ? ARN_ACCESS_PEER_V_START : ARN_ACCESS_PEER_V_END;
			if (args && alen)
				op.a = dupn(args, alen), op.alen = alen;
			found = true;
		} else {
			for (size_t i = 0; i < sizeof(simple_ops) / sizeof(simple_ops[0]); i++)
				if (strlen(simple_ops[i].name) == nlen &&
				    !memcmp(simple_ops[i].name, name, nlen)) {
					op.kind = simple_ops[i].kind;
					op.peer = simple_ops[i].peer;
					found = true;
				}
			if (found && args) {
				arn_sb_printf(err, "%%%.*s%% at offset %zu takes no argument\n",
					      (int)nlen, name, (size_t)(pct - fmt));
				return -EINVAL;
			}
		}
		if (!found) {
			arn_sb_printf(err,
				      "'%%%.*s%%' at offset %zu is not a command operator Arion "
				      "knows (START_TIME, REQ, RESP, TRAILER, PROTOCOL, "
				      "RESPONSE_CODE, RESPONSE_FLAGS, BYTES_RECEIVED, BYTES_SENT, "
				      "DURATION, UPSTREAM_HOST, DOWNSTREAM_REMOTE_ADDRESS, ...: "
				      "docs/admin.md)\n",
				      (int)nlen, name, (size_t)(pct - fmt));
			return -EINVAL;
		}
		if (push(s, op))
			return -ENOMEM;
		p = q + 1;
	}
	return 0;
}

struct arn_access_format *arn_access_format_text(const char *fmt, struct arn_sb *err)
{
	struct arn_access_format *f = calloc(1, sizeof(*f));
	if (f == NULL)
		return NULL;
	if (compile(fmt, &f->text, err) != 0) {
		arn_access_format_free(f);
		return NULL;
	}
	if (gethostname(f->hostname, sizeof(f->hostname) - 1) != 0)
		f->hostname[0] = '\0';
	return f;
}

struct arn_access_format *arn_access_format_json(const char *const *keys, const char *const *values,
						 size_t n, struct arn_sb *err)
{
	struct arn_access_format *f = calloc(1, sizeof(*f));
	if (f == NULL)
		return NULL;
	f->json = true;
	f->keys = calloc(n ? n : 1, sizeof(*f->keys));
	f->values = calloc(n ? n : 1, sizeof(*f->values));
	if (f->keys == NULL || f->values == NULL)
		goto fail;
	/* Envoy builds a protobuf Struct, whose JSON has its keys sorted. */
	size_t *order = calloc(n ? n : 1, sizeof(*order));
	if (order == NULL)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		size_t j = i;
		while (j > 0 && strcmp(keys[order[j - 1]], keys[i]) > 0) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
	for (size_t k = 0; k < n; k++) {
		size_t i = order[k];
		if (k > 0 && strcmp(keys[order[k - 1]], keys[i]) == 0) {
			arn_sb_printf(err, "json_format: key '%s' is given twice\n", keys[i]);
			free(order);
			goto fail;
		}
		f->keys[k] = strdup(keys[i]);
		f->n_keys = k + 1;
		if (f->keys[k] == NULL) {
			free(order);
			goto fail;
		}
		if (compile(values[i], &f->values[k], err) != 0) {
			arn_sb_printf(err, "  (in json_format key '%s')\n", keys[i]);
			free(order);
			goto fail;
		}
	}
	free(order);
	if (gethostname(f->hostname, sizeof(f->hostname) - 1) != 0)
		f->hostname[0] = '\0';
	return f;
fail:
	arn_access_format_free(f);
	return NULL;
}

void arn_access_format_omit_empty(struct arn_access_format *f, bool on)
{
	if (f)
		f->omit_empty = on;
}

void arn_access_format_free(struct arn_access_format *f)
{
	if (f == NULL)
		return;
	seq_free(&f->text);
	for (size_t i = 0; i < f->n_keys; i++) {
		free(f->keys[i]);
		seq_free(&f->values[i]);
	}
	free(f->keys);
	free(f->values);
	free(f);
}

/* ---- applying (any lcore, no allocation) ------------------------------------- */

struct out {
	char *buf;
	size_t cap; /* usable bytes (excluding the NUL) */
	size_t len;
	bool cut;
	bool json; /* escape for a JSON string */
};

static void put_raw(struct out *o, const char *s, size_t n)
{
	size_t room = o->cap - o->len;
	if (n > room) {
		n = room;
		o->cut = true;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

/* Length of the well-formed UTF-8 sequence at @p s (RFC 3629: no overlong
 * form, no surrogate, nothing past U+10FFFF), 0 if there is none. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t l = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
	unsigned char lo = 0x80, hi = 0xbf; /* the range of the second byte */
	if (c < 0xc2 || c > 0xf4)
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (n < l || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < l; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return l;
}

static void put(struct out *o, const char *s, size_t n)
{
	if (!o->json) {
		put_raw(o, s, n);
		return;
	}
	/* A JSON line is valid JSON whatever the client sent: control bytes
	 * and bytes that are not UTF-8 (a header's obs-text) are escaped as
	 * \u00XX, as Envoy's JSON sanitizer does; an escape or a UTF-8
	 * sequence is written whole or not at all, so that a cut (:Z, the
	 * line's room) never leaves half of one before the closing quote. */
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	for (size_t i = 0; i < n && !o->cut;) {
		unsigned char c = u[i];
		char e[6];
		const char *w = e;
		size_t el = 0, used = 1;
		if (c == '"' || c == '\\') {
			e[0] = '\\';
			e[1] = (char)c;
			el = 2;
		} else if (c == '\n') {
			memcpy(e, "\\n", 2);
			el = 2;
		} else if (c == '\r') {
			memcpy(e, "\\r", 2);
			el = 2;
		} else if (c == '\t') {
			memcpy(e, "\\t", 2);
			el = 2;
		} else if (c >= 0x20 && c < 0x7f) {
			w = (const char *)&u[i];
			el = 1;
		} else if (c >= 0x80 && (used = utf8_len(&u[i], n - i)) != 0) {
			w = (const char *)&u[i];
			el = used;
		} else {
			memcpy(e, "\\u00", 4);
			e[4] = hex[c >> 4];
			e[5] = hex[c & 15];
			el = 6;
			used = 1;
		}
		if (el > o->cap - o->len) {
			o->cut = true;
			break;
		}
		put_raw(o, w, el);
		i += used;
	}
}

static void put_u64(struct out *o, uint64_t v)
{
	char b[24];
	int n = snprintf(b, sizeof(b), "%llu", (unsigned long long)v);
	put_raw(o, b, (size_t)n);
}

static void put_addr(struct out *o, const struct arn_access_addr *a, bool ip, bool port)
{
	char b[32];
	int n = 0;
	if (ip)
		n = snprintf(b, sizeof(b), "%u.%u.%u.%u", a->ip >> 24, (a->ip >> 16) & 255,
			     (a->ip >> 8) & 255, a->ip & 255);
	if (ip && port)
		n += snprintf(b + n, sizeof(b) - (size_t)n, ":%u", a->port);
	else if (port)
		n = snprintf(b, sizeof(b), "%u", a->port);
	put_raw(o, b, (size_t)n);
}

static bool name_eq(struct arn_access_str n, const char *s, size_t l)
{
	return n.p && n.len == l && strncasecmp(n.p, s, l) == 0;
}

static struct arn_access_str lookup(const struct arn_access_header *h, unsigned n, const char *name,
				    size_t l)
{
	for (unsigned i = 0; i < n; i++)
		if (name_eq(h[i].name, name, l))
			return h[i].value;
	return (struct arn_access_str){NULL, 0};
}

static struct arn_access_str req_header(const struct arn_access_record *r, const char *name,
					size_t l)
{
	if (l > 0 && name[0] == ':') {
		if (l == 7 && !strncasecmp(name, ":method", 7))
			return r->method;
		if (l == 5 && !strncasecmp(name, ":path", 5))
			return r->path;
		if (l == 10 && !strncasecmp(name, ":authority", 10))
			return r->authority.p ? r->authority
					      : lookup(r->req_headers, r->n_req_headers, "host", 4);
		if (l == 7 && !strncasecmp(name, ":scheme", 7))
			return r->scheme;
		return (struct arn_access_str){NULL, 0};
	}
	if (l == 4 && !strncasecmp(name, "host", 4) && r->authority.p)
		return r->authority;
	return lookup(r->req_headers, r->n_req_headers, name, l);
}

static void put_time(struct out *o, const struct op *op, int64_t us)
{
	time_t sec = (time_t)(us / 1000000);
	long frac_us = (long)(us % 1000000);
	if (frac_us < 0) {
		frac_us += 1000000;
		sec--;
	}
	struct tm tm;
	gmtime_r(&sec, &tm);
	char b[256];
	if (op->a == NULL) {
		/* Envoy's default: 2016-04-15T20:17:00.310Z */
		size_t n = strftime(b, sizeof(b), "%Y-%m-%dT%H:%M:%S", &tm);
		n += (size_t)snprintf(b + n, sizeof(b) - n, ".%03ldZ", frac_us / 1000);
		put(o, b, n);
		return;
	}
	/* strftime plus Envoy's %s (epoch seconds) and %Nf (N fractional digits). */
	const char *p = op->a, *end = op->a + op->alen;
	while (p < end) {
		if (*p != '%' || p + 1 >= end) {
			put(o, p, 1);
			p++;
			continue;
		}
		const char *q = p + 1;
		unsigned digits = 9;
		if (*q >= '1' && *q <= '9' && q + 1 < end && q[1] == 'f') {
			digits = (unsigned)(*q - '0');
			q++;
		}
		if (*q == 'f') {
			char fr[16];
			snprintf(fr, sizeof(fr), "%09ld", frac_us * 1000);
			put(o, fr, digits);
			p = q + 1;
			continue;
		}
		if (*q == 's') {
			char s[24];
			int n = snprintf(s, sizeof(s), "%lld", (long long)sec);
			put(o, s, (size_t)n);
			p = q + 1;
			continue;
		}
		char spec[4] = {'%', *q, 0, 0};
		if ((*q == 'E' || *q == 'O') && q + 1 < end) {
			spec[2] = q[1];
			q++;
		}
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
		/* spec is one conversion taken from the configured format */
		size_t n = strftime(b, sizeof(b), spec, &tm);
#pragma GCC diagnostic pop
		put(o, b, n);
		p = q + 1;
	}
}

enum val { V_NONE = 0, V_STR, V_NUM };

/* Evaluate one operation into @p o; return what kind of value it was. */
static enum val eval(const struct arn_access_format *f, const struct op *op,
		     const struct arn_access_record *r, struct out *o)
{
	struct arn_access_str s = {NULL, 0};
	switch (op->kind) {
	case OP_LIT:
		put(o, op->a, op->alen);
		return V_STR;
	case OP_START_TIME:
		put_time(o, op, r->start_time_us);
		return V_STR;
	case OP_REQ:
		s = req_header(r, op->a, op->alen);
		if (s.p == NULL && op->b)
			s = req_header(r, op->b, op->blen);
		break;
	case OP_RESP:
	case OP_TRAILER: {
		const struct arn_access_header *h =
		    op->kind == OP_RESP ? r->resp_headers : r->resp_trailers;
		unsigned n = op->kind == OP_RESP ? r->n_resp_headers : r->n_resp_trailers;
		s = lookup(h, n, op->a, op->alen);
		if (s.p == NULL && op->b)
			s = lookup(h, n, op->b, op->blen);
		break;
	}
	case OP_PROTOCOL:
		s = r->protocol;
		break;
	case OP_RESPONSE_CODE:
		put_u64(o, r->response_code);
		return V_NUM;
	case OP_RESPONSE_CODE_DETAILS:
		s = r->response_code_details;
		break;
	case OP_CONNECTION_TERMINATION_DETAILS:
		s = r->connection_termination_details;
		break;
	case OP_RESPONSE_FLAGS:
	case OP_RESPONSE_FLAGS_LONG: {
		if (r->response_flags == 0)
			return V_NONE;
		bool first = true;
		for (unsigned i = 0; i < ARN_RF__COUNT; i++)
			if (r->response_flags & (1u << i)) {
				if (!first)
					put(o, ",", 1);
				const char *n =
				    op->kind == OP_RESPONSE_FLAGS ? flag_short[i] : flag_long[i];
				put(o, n, strlen(n));
				first = false;
			}
		return V_STR;
	}
	case OP_BYTES_RECEIVED:
		put_u64(o, r->bytes_received);
		return V_NUM;
	case OP_BYTES_SENT:
		put_u64(o, r->bytes_sent);
		return V_NUM;
	case OP_DURATION:
	case OP_REQUEST_DURATION:
	case OP_RESPONSE_DURATION:
	case OP_RESPONSE_TX_DURATION: {
		uint64_t us = op->kind == OP_DURATION		 ? r->duration_us
			      : op->kind == OP_REQUEST_DURATION	 ? r->request_duration_us
			      : op->kind == OP_RESPONSE_DURATION ? r->response_duration_us
								 : r->response_tx_duration_us;
		if (us == UINT64_MAX)
			return V_NONE;
		put_u64(o, us / 1000);
		return V_NUM;
	}
	case OP_UPSTREAM_HOST:
	case OP_UPSTREAM_LOCAL_ADDRESS:
	case OP_DS_REMOTE:
	case OP_DS_REMOTE_NOPORT:
	case OP_DS_REMOTE_PORT:
	case OP_DS_DIRECT_REMOTE:
	case OP_DS_DIRECT_REMOTE_NOPORT:
	case OP_DS_DIRECT_REMOTE_PORT:
	case OP_DS_LOCAL:
	case OP_DS_LOCAL_NOPORT:
	case OP_DS_LOCAL_PORT: {
		const struct arn_access_addr *a =
		    op->kind == OP_UPSTREAM_HOST	    ? &r->upstream_host
		    : op->kind == OP_UPSTREAM_LOCAL_ADDRESS ? &r->upstream_local
		    : (op->kind == OP_DS_REMOTE || op->kind == OP_DS_REMOTE_NOPORT ||
		       op->kind == OP_DS_REMOTE_PORT)
			? &r->downstream_remote
		    /* the TCP peer: differs from the remote address only after a
		     * PROXY header; a record without one is the remote's */
		    : (op->kind == OP_DS_DIRECT_REMOTE || op->kind == OP_DS_DIRECT_REMOTE_NOPORT ||
		       op->kind == OP_DS_DIRECT_REMOTE_PORT)
			? (r->downstream_direct_remote.ip ? &r->downstream_direct_remote
							  : &r->downstream_remote)
			: &r->downstream_local;
		if (a->ip == 0 && a->port == 0)
			return V_NONE;
		bool port_only = op->kind == OP_DS_REMOTE_PORT || op->kind == OP_DS_LOCAL_PORT ||
				 op->kind == OP_DS_DIRECT_REMOTE_PORT;
		bool no_port = op->kind == OP_DS_REMOTE_NOPORT || op->kind == OP_DS_LOCAL_NOPORT ||
			       op->kind == OP_DS_DIRECT_REMOTE_NOPORT;
		put_addr(o, a, !port_only, !no_port);
		return port_only ? V_NUM : V_STR;
	}
	case OP_UPSTREAM_CLUSTER:
		s = r->upstream_cluster;
		break;
	case OP_UPSTREAM_TRANSPORT_FAILURE_REASON:
		s = r->upstream_transport_failure_reason;
		break;
	case OP_REQUESTED_SERVER_NAME:
		s = r->requested_server_name;
		break;
	case OP_DS_TLS_VERSION:
		s = r->downstream_tls_version;
		break;
	case OP_DS_TLS_CIPHER:
		s = r->downstream_tls_cipher;
		break;
	case OP_DS_PEER: {
		char b[1024];
		int n = r->downstream_peer
			    ? r->downstream_peer(r->downstream_peer_arg, op->peer, b, sizeof(b))
			    : -ENOENT;
		if (n <= 0)
			return V_NONE;
		if (op->peer == ARN_ACCESS_PEER_V_START || op->peer == ARN_ACCESS_PEER_V_END) {
			put_time(o, op, strtoll(b, NULL, 10) * 1000000);
			return V_STR;
		}
		put(o, b, (size_t)n);
		return V_STR;
	}
	case OP_ROUTE_NAME:
		s = r->route_name;
		break;
	case OP_MCP_TOOL:
		s = r->mcp_tool;
		break;
	case OP_MCP_BACKEND:
		s = r->mcp_backend;
		break;
	case OP_LOCAL_REPLY_BODY:
		/* Envoy's: the body as it is, an empty one printing nothing */
		s = r->local_reply_body;
		if (s.p == NULL)
			s = (struct arn_access_str){"", 0};
		break;
	case OP_CONNECTION_ID:
		put_u64(o, r->connection_id);
		return V_NUM;
	case OP_HOSTNAME:
		s.p = f->hostname;
		s.len = (uint32_t)strlen(f->hostname);
		break;
	case OP_ATTEMPTS:
		if (r->upstream_request_attempt_count == 0)
			return V_NONE;
		put_u64(o, r->upstream_request_attempt_count);
		return V_NUM;
	}
	if (s.p == NULL || (s.len == 0 && op->kind != OP_LIT && op->kind != OP_LOCAL_REPLY_BODY))
		return V_NONE;
	put(o, s.p, s.len);
	return V_STR;
}

/* Evaluate with the :Z limit; absent values print "-" in text. */
static enum val eval_limited(const struct arn_access_format *f, const struct op *op,
			     const struct arn_access_record *r, struct out *o, bool dash)
{
	size_t start = o->len, saved_cap = o->cap;
	bool was_cut = o->cut, limited = false;
	/* not o->len + max_len < o->cap: a length near SIZE_MAX would wrap and
	 * put the limit below what is written (room then underflows) */
	if (op->max_len && op->max_len < o->cap - o->len) {
		o->cap = o->len + op->max_len;
		limited = true;
	}
	enum val v = eval(f, op, r, o);
	if (limited) {
		o->cap = saved_cap;
		o->cut = was_cut; /* cut by :Z on purpose, not by the buffer */
	}
	if (v == V_NONE) {
		o->len = start;
		if (dash)
			put_raw(o, "-", 1);
	}
	return v;
}

size_t arn_access_format_apply(const struct arn_access_format *f, const struct arn_access_record *r,
			       char *buf, size_t cap)
{
	if (cap == 0)
		return 0;
	struct out o = {buf, cap - 1, 0, false, false};
	bool dash = !f->omit_empty;
	if (!f->json) {
		for (size_t i = 0; i < f->text.n; i++)
			eval_limited(f, &f->text.ops[i], r, &o, dash);
	} else {
		if (o.cap < 3) {
			buf[0] = '\0';
			return 0;
		}
		/* A cut JSON line would not parse: a member that does not fit
		 * is left out whole instead, the room for "}\n" kept. */
		o.cap -= 2;
		put_raw(&o, "{", 1);
		size_t whole = o.len; /* the end of the last member written whole */
		for (size_t k = 0; k < f->n_keys; k++) {
			size_t member = o.len; /* where this member (and its comma) starts */
			if (whole > 1)
				put_raw(&o, ",", 1);
			o.json = true;
			put_raw(&o, "\"", 1);
			put(&o, f->keys[k], strlen(f->keys[k]));
			put_raw(&o, "\":", 2);
			const struct seq *s = &f->values[k];
			if (s->n == 1 && s->ops[0].kind != OP_LIT) {
				/* a lone operator keeps its type */
				size_t at = o.len;
				put_raw(&o, "\"", 1);
				enum val v = eval_limited(f, &s->ops[0], r, &o, false);
				if (v == V_NONE && f->omit_empty) {
					o.len = member; /* left out, its comma too */
				} else if (v == V_NONE) {
					o.len = at;
					put_raw(&o, "null", 4);
				} else if (v == V_NUM && o.len > at) {
					/* the quote goes: a number is bare. Not when the
					 * quote did not fit (o.len == at, the line cut and
					 * the member left out below): o.len - at - 1 would
					 * be SIZE_MAX */
					memmove(o.buf + at, o.buf + at + 1, o.len - at - 1);
					o.len--;
				} else if (v != V_NUM) {
					put_raw(&o, "\"", 1);
				}
			} else {
				put_raw(&o, "\"", 1);
				for (size_t i = 0; i < s->n; i++)
					eval_limited(f, &s->ops[i], r, &o, dash);
				put_raw(&o, "\"", 1);
			}
			o.json = false;
			if (o.cut) {
				o.len = whole;
				o.cut = false;
			}
			whole = o.len;
		}
		o.cap += 2;
		put_raw(&o, "}\n", 2);
	}
	if (o.cut && o.cap >= 4) {
		/* Say the line was cut, and keep lines apart. */
		memcpy(o.buf + o.cap - 4, "...\n", 4);
		o.len = o.cap;
	}
	buf[o.len] = '\0';
	return o.len;
}
