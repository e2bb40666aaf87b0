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

const char *arn_h1_hdr_name(enum arn_h1_hdr_id id)
{
	return (unsigned)id < ARN_H1_H_COUNT ? h1_hdr_names[id] : "";
}

enum arn_h1_hdr_id arn_h1_hdr_lookup(const char *s, size_t n)
{
	return h1_hdr_lookup(s, n);
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
			if (!w8_eq_nocase(h1_ld8(a + i), h1_ld8(b + i)))
				return false;
		/* the tail as the last 8 bytes, overlapping what was compared */
		return i == an || w8_eq_nocase(h1_ld8(a + an - 8), h1_ld8(b + an - 8));
	}
	if (an >= 4)
		return w8_eq_nocase((uint64_t)h1_ld4(a) << 32 | h1_ld4(a + an - 4),
				    (uint64_t)h1_ld4(b) << 32 | h1_ld4(b + an - 4));
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

unsigned arn_h1_drop_fields(struct arn_h1_msg *m,
			    bool (*drop)(const struct arn_h1_header *f, void *arg), void *arg)
{
	unsigned j = 0;
	int host = -1, upgrade = -1;
	for (unsigned i = 0; i < m->n_hdrs; i++) {
		const struct arn_h1_header *f = &m->hdrs[i];
		if (drop(f, arg))
			continue;
		if ((int)i == m->host_idx)
			host = (int)j;
		if ((int)i == m->upgrade_idx)
			upgrade = (int)j;
		if (i != j)
			m->hdrs[j] = *f;
		j++;
	}
	unsigned gone = m->n_hdrs - j;
	if (gone) {
		m->n_hdrs = (uint16_t)j;
		m->host_idx = (int16_t)host;
		m->upgrade_idx = (int16_t)upgrade;
		m->flags &= ~ARN_H1_F_FIELDS_WHOLE; /* the block is no longer whole */
	}
	return gone;
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
		const unsigned char *u = (const unsigned char *)s;
		for (;;) {
			/* four bytes a step (a name or an IPv4 address: 7-20
			 * bytes), the last ones alone */
			while (n - i >= 4 && h1_is(u[i], ARN_H1_C_HOST_NP) &&
			       h1_is(u[i + 1], ARN_H1_C_HOST_NP) &&
			       h1_is(u[i + 2], ARN_H1_C_HOST_NP) &&
			       h1_is(u[i + 3], ARN_H1_C_HOST_NP))
				i += 4;
			while (i < n && h1_is(u[i], ARN_H1_C_HOST_NP))
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
