/* HTTP/1 codec helpers: name tables, header lookup, list iteration,
 * authority splitting. */
#include <string.h>

#include "h1_int.h"

static const struct {
	int status;
	const char *details;
	const char *name;
	const char *text;
} errs[] = {
#define ARN_H1_ERR(id, status, details, text) {status, details, #id, text},
#include "arn_h1_err.def"
#undef ARN_H1_ERR
};

int arn_h1_err_status(enum arn_h1_err e)
{
	return (unsigned)e < ARN_H1_E_COUNT ? errs[e].status : 400;
}

const char *arn_h1_err_details(enum arn_h1_err e)
{
	return (unsigned)e < ARN_H1_E_COUNT ? errs[e].details : "http1.codec_error";
}

const char *arn_h1_err_name(enum arn_h1_err e)
{
	return (unsigned)e < ARN_H1_E_COUNT ? errs[e].name : "?";
}

const char *arn_h1_err_text(enum arn_h1_err e)
{
	return (unsigned)e < ARN_H1_E_COUNT ? errs[e].text : "?";
}

static const struct {
	const char *s;
	uint8_t len;
} methods[ARN_H1_M_COUNT] = {
    {"", 0},
#define ARN_H1_METHOD(id, name) {name, sizeof(name) - 1},
#include "arn_h1_method.def"
#undef ARN_H1_METHOD
    {"", 0}, /* ARN_H1_M_OTHER */
};

const char *arn_h1_method_str(enum arn_h1_method m)
{
	return (unsigned)m < ARN_H1_M_COUNT ? methods[m].s : "";
}

enum arn_h1_method arn_h1_method_lookup(const char *s, size_t n)
{
	/* GET and POST are most of the traffic: test them first */
	if (n == 3 && s[0] == 'G' && s[1] == 'E' && s[2] == 'T')
		return ARN_H1_M_GET;
	if (n == 4 && memcmp(s, "POST", 4) == 0)
		return ARN_H1_M_POST;
	for (unsigned i = 1; i < ARN_H1_M_OTHER; i++)
		if (methods[i].len == n && memcmp(methods[i].s, s, n) == 0)
			return (enum arn_h1_method)i;
	return ARN_H1_M_NONE;
}

static const char *const hdr_names[ARN_H1_H_COUNT] = {
    "",
#define ARN_H1_HDR(id, name) name,
#include "arn_h1_hdr.def"
#undef ARN_H1_HDR
};

const char *arn_h1_hdr_name(enum arn_h1_hdr_id id)
{
	return (unsigned)id < ARN_H1_H_COUNT ? hdr_names[id] : "";
}

/*
 * Word-at-a-time comparison of @p n bytes of @p s against @p lit, a lower
 * case literal of letters, digits and '-' (a header name from
 * arn_h1_hdr.def), ignoring the case of @p s. In a word, a byte of @p s
 * matches when it equals the literal's byte, or differs from it only by
 * 0x20 where the literal has a letter: ((s ^ lit) & ~m) == 0 with m the
 * literal's letters' 0x20 bits. That is exact for any input byte (no
 * token assumption). The literal's letters are the bytes >= 'a' (0x61;
 * digits and '-' are below): adding 0x1f sets their high bit without a
 * carry into the next byte. Loads overlap at the end rather than loop over
 * bytes: n is a constant at every call, so each becomes two or three
 * loads and compares (a byte loop cost about 65 instructions a name).
 */
static inline uint64_t ld8(const char *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static inline uint32_t ld4(const char *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static inline uint16_t ld2(const char *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return v;
}

static inline bool w8_eq(uint64_t x, uint64_t l)
{
	uint64_t m = ((l + 0x1f1f1f1f1f1f1f1full) & 0x8080808080808080ull) >> 2;
	return ((x ^ l) & ~m) == 0;
}

static inline bool w4_eq(uint32_t x, uint32_t l)
{
	uint32_t m = ((l + 0x1f1f1f1fu) & 0x80808080u) >> 2;
	return ((x ^ l) & ~m) == 0;
}

static inline __attribute__((always_inline)) bool lit_eq(const char *s, const char *lit, size_t n)
{
	if (n >= 8) {
		size_t i = 0;
		for (; i + 8 <= n; i += 8)
			if (!w8_eq(ld8(s + i), ld8(lit + i)))
				return false;
		return i == n || w8_eq(ld8(s + n - 8), ld8(lit + n - 8));
	}
	if (n >= 4)
		return w4_eq(ld4(s), ld4(lit)) && w4_eq(ld4(s + n - 4), ld4(lit + n - 4));
	if (n >= 2)
		return w4_eq(ld2(s), ld2(lit)) && w4_eq(ld2(s + n - 2), ld2(lit + n - 2));
	return n == 0 || w4_eq((unsigned char)s[0], (unsigned char)lit[0]);
}

enum arn_h1_hdr_id arn_h1_hdr_lookup(const char *s, size_t n)
{
	/* One switch on the length, then at most two comparisons: this runs
	 * for every header line, so no loop over the whole table. */
#define H(id) (lit_eq(s, hdr_names[ARN_H1_H_##id], n) ? ARN_H1_H_##id : ARN_H1_H_OTHER)
	switch (n) {
	case 2:
		return H(TE);
	case 4:
		return H(HOST);
	case 6:
		return (s[0] | 0x20) == 's' ? H(SERVER) : H(EXPECT);
	case 7:
		return (s[0] | 0x20) == 'u' ? H(UPGRADE) : H(TRAILER);
	case 10:
		return (s[0] | 0x20) == 'c' ? H(CONNECTION) : H(KEEP_ALIVE);
	case 12:
		return (s[0] | 0x20) == 'c' ? H(CONTENT_TYPE) : H(X_REQUEST_ID);
	case 14:
		return (s[0] | 0x20) == 'c' ? H(CONTENT_LENGTH) : H(HTTP2_SETTINGS);
	case 15:
		return H(X_FORWARDED_FOR);
	case 16:
		return H(PROXY_CONNECTION);
	case 17:
		return (s[0] | 0x20) == 't' ? H(TRANSFER_ENCODING) : H(X_FORWARDED_PROTO);
	case 21:
		return H(X_ENVOY_ORIGINAL_PATH);
	default:
		return ARN_H1_H_OTHER;
	}
#undef H
}

/* Eight byte pairs at once: equal, or differing only in the 0x20 bit of a
 * letter (ASCII; a byte >= 0x80 is never a letter). */
static inline bool w8_eq_nocase(uint64_t x, uint64_t y)
{
	const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
	uint64_t d = x ^ y;
	if (d == 0)
		return true;
	if (d & ~(0x20 * ones))
		return false;
	uint64_t lx = x | 0x20 * ones;	 /* lower case, if a letter */
	uint64_t h = lx & ~high;	 /* 7 bits: no carry out of a byte below */
	uint64_t ge_a = h + 0x1f * ones; /* high bit: h >= 'a' */
	uint64_t gt_z = h + 0x05 * ones; /* high bit: h > 'z' */
	uint64_t letter = ge_a & ~gt_z & ~lx & high;
	return ((letter >> 2) & d) == d;
}

bool arn_h1_eq_nocase(const char *a, size_t an, const char *b, size_t bn)
{
	if (an != bn)
		return false;
	if (an >= 8) {
		size_t i = 0;
		for (; i + 8 <= an; i += 8)
			if (!w8_eq_nocase(ld8(a + i), ld8(b + i)))
				return false;
		/* the tail as the last 8 bytes, overlapping what was compared */
		return i == an || w8_eq_nocase(ld8(a + an - 8), ld8(b + an - 8));
	}
	if (an >= 4)
		return w8_eq_nocase((uint64_t)ld4(a) << 32 | ld4(a + an - 4),
				    (uint64_t)ld4(b) << 32 | ld4(b + an - 4));
	for (size_t i = 0; i < an; i++) {
		unsigned char x = (unsigned char)a[i], y = (unsigned char)b[i];
		if (x != y && h1_lower(x) != h1_lower(y))
			return false;
	}
	return true;
}

int arn_h1_find(const struct arn_h1_msg *m, const char *name, size_t n, int from)
{
	for (int i = from < 0 ? 0 : from; i < m->n_hdrs; i++)
		if (arn_h1_eq_nocase(m->hdrs[i].name, m->hdrs[i].name_len, name, n))
			return i;
	return -1;
}

int arn_h1_find_id(const struct arn_h1_msg *m, enum arn_h1_hdr_id id, int from)
{
	for (int i = from < 0 ? 0 : from; i < m->n_hdrs; i++)
		if (m->hdrs[i].id == id)
			return i;
	return -1;
}

void arn_h1_list_init(struct arn_h1_list_iter *it, const char *s, size_t n)
{
	it->p = s;
	it->end = s + n;
}

bool arn_h1_list_next(struct arn_h1_list_iter *it, struct arn_h1_slice *out)
{
	while (it->p < it->end) {
		const char *a = it->p;
		const char *c = memchr(a, ',', (size_t)(it->end - a));
		const char *b = c ? c : it->end;
		it->p = c ? c + 1 : it->end;
		while (a < b && (*a == ' ' || *a == '\t'))
			a++;
		while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
			b--;
		if (b > a) {
			out->p = a;
			out->len = (uint32_t)(b - a);
			return true;
		}
	}
	return false;
}

bool arn_h1_list_has(const char *s, size_t n, const char *tok, size_t tn)
{
	struct arn_h1_list_iter it;
	struct arn_h1_slice el;
	arn_h1_list_init(&it, s, n);
	while (arn_h1_list_next(&it, &el))
		if (arn_h1_eq_nocase(el.p, el.len, tok, tn))
			return true;
	return false;
}

bool arn_h1_msg_has_token(const struct arn_h1_msg *m, enum arn_h1_hdr_id id, const char *tok,
			  size_t tn)
{
	for (int i = arn_h1_find_id(m, id, 0); i >= 0; i = arn_h1_find_id(m, id, i + 1))
		if (arn_h1_list_has(m->hdrs[i].value, m->hdrs[i].value_len, tok, tn))
			return true;
	return false;
}

static bool is_hex(unsigned char c)
{
	return h1_is(c, ARN_H1_C_HEX);
}

/* reg-name / IPv4address (RFC 3986 3.2.2): unreserved, pct-encoded, sub-delims */
static bool reg_name_ok(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!h1_is(c, ARN_H1_C_HOST))
			return false;
		if (c == '%') {
			if (i + 2 >= n || !is_hex((unsigned char)s[i + 1]) ||
			    !is_hex((unsigned char)s[i + 2]))
				return false;
			i += 2;
		}
	}
	return true;
}

/* IP-literal: IPv6address (hex, ':', '.' for an embedded IPv4) or
 * IPvFuture ("v" HEX "." ...); checked for characters, not for structure:
 * the router compares strings, and a connect to a malformed literal fails
 * in address parsing. */
static bool ip_literal_ok(const char *s, size_t n)
{
	if (n == 0)
		return false;
	if (s[0] == 'v' || s[0] == 'V')
		return n > 1 && reg_name_ok(s + 1, n - 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!is_hex(c) && c != ':' && c != '.')
			return false;
	}
	return true;
}

int arn_h1_authority_split(const char *s, size_t n, struct arn_h1_slice *host, int *port)
{
	size_t hend;
	host->p = s;
	host->len = 0;
	*port = -1;
	if (n == 0)
		return 0;
	if (s[0] == '[') {
		const char *rb = memchr(s, ']', n);
		if (!rb || !ip_literal_ok(s + 1, (size_t)(rb - s) - 1))
			return -EINVAL;
		host->p = s + 1;
		host->len = (uint32_t)(rb - s - 1);
		hend = (size_t)(rb - s) + 1;
		if (hend < n && s[hend] != ':')
			return -EINVAL;
	} else {
		/* one pass: the host ends at its first byte outside reg-name,
		 * which must be the ':' before a port (this runs for the Host
		 * of every request; memchr and then a second pass cost twice) */
		size_t i = 0;
		for (;;) {
			while (i < n && h1_is((unsigned char)s[i], ARN_H1_C_HOST_NP))
				i++;
			if (i == n || s[i] != '%')
				break;
			if (i + 2 >= n || !is_hex((unsigned char)s[i + 1]) ||
			    !is_hex((unsigned char)s[i + 2]))
				return -EINVAL;
			i += 3;
		}
		hend = i;
		if (hend == 0 || (hend < n && s[hend] != ':'))
			return -EINVAL;
		host->len = (uint32_t)hend;
	}
	if (hend < n) {
		/* ":" port, port = *DIGIT; empty means absent (RFC 3986 3.2.3) */
		long v = 0;
		size_t i = hend + 1;
		if (i == n)
			return 0;
		if (n - i > 5)
			return -EINVAL;
		for (; i < n; i++) {
			if (s[i] < '0' || s[i] > '9')
				return -EINVAL;
			v = v * 10 + (s[i] - '0');
		}
		if (v > 65535)
			return -EINVAL;
		*port = (int)v;
	}
	return 0;
}
