/* Private to lib/http's HTTP/1 codec: character classes and small helpers
 * shared by the parser, the serializer and the utilities. */
#ifndef ARN_H1_INT_H
#define ARN_H1_INT_H

#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "arn_h1.h"
#include "http_zero.h" /* the parser's message and the writer's edit table */

#define ARN_H1_C_TOKEN 0x01 /* tchar (RFC 9110 5.6.2) */
#define ARN_H1_C_VALUE 0x02 /* field-value octet: HTAB, SP, VCHAR, obs-text */
#define ARN_H1_C_URI 0x04   /* request-target octet: VCHAR */
#define ARN_H1_C_HEX 0x08
#define ARN_H1_C_HOST 0x10    /* reg-name: unreserved, pct-encoded, sub-delims */
#define ARN_H1_C_HOST_NP 0x20 /* the same but '%' (the byte loop's fast class) */
/* 0x20-0x7e, the usual field value's octets: no bit of the table, a range
 * test (h1_scan_class) */
#define ARN_H1_C_PLAIN 0x00
/* request-target octets but '#' (h1_scan_uri_frag): no bit of the table */
#define ARN_H1_C_URI_FRAG 0xff

extern const uint8_t arn_h1_cc[256];

static inline int h1_is(unsigned char c, uint8_t cls)
{
	return arn_h1_cc[c] & cls;
}

/* ASCII lower case; only for comparing against lower-case literals made of
 * letters, digits and '-', where (c | 0x20) cannot create a false match
 * from another token character. */
static inline unsigned char h1_lower(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') ? (unsigned char)(c | 0x20) : c;
}

/*
 * Scans that return the first byte of [q, end) outside a class. On x86-64
 * (SSE2 is baseline, so no dispatch) they test 16 bytes per step: a
 * header value is usually 10-100 bytes and a target 10-200, and the byte
 * loop costs about 4 instructions per byte. A 16-byte load is made only
 * inside [base, end): @p base (<= q) is the first byte the caller may read
 * (the line's start). While 16 bytes remain before end they are loaded
 * from q; the last part, shorter than 16 (a short value at the end of
 * the input, like the Host line before the empty line), is the block that
 * ends at end, its bytes before q shifted out of the mask, when the line
 * so far is 16 bytes long; only else the byte loop. Nothing outside
 * [base, end) is read.
 */

#if defined(__SSE2__)
/* bytes of the 16 at p that are not field-value octets (HTAB, 0x20-0x7e,
 * 0x80-0xff), one bit each */
static inline __attribute__((always_inline)) unsigned h1_value_bad16(const unsigned char *p)
{
	const __m128i c1f = _mm_set1_epi8(0x1f), tab = _mm_set1_epi8(0x09),
		      del = _mm_set1_epi8(0x7f);
	__m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
	__m128i ctl = _mm_cmpeq_epi8(_mm_max_epu8(v, c1f), c1f); /* v <= 0x1f */
	__m128i bad =
	    _mm_or_si128(_mm_andnot_si128(_mm_cmpeq_epi8(v, tab), ctl), _mm_cmpeq_epi8(v, del));
	return (unsigned)_mm_movemask_epi8(bad);
}

/* bytes of the 16 at p outside 0x20-0x7e: the value bytes of the usual
 * field line, for the field-line fast path (fields_fast), which leaves a
 * line with HTAB or obs-text in its value to the scalar parser. Two
 * operations where h1_value_bad16 has six, and the mask without a third
 * (a compare's answer inverted): v - 0x20 maps 0x20-0x7e to 0x00-0x5e
 * and every other byte to 0x5f-0xff; adding 0x21 with unsigned
 * saturation takes the former to 0x21-0x7f (the top bit clear) and the
 * latter to 0x80-0xff (set), which movemask gathers. (v + 1 compared
 * with 0x21 as signed bytes, the compare the compiler turned into two,
 * cost one instruction more a block.) */
static inline __attribute__((always_inline)) unsigned h1_value_plain_bad16(const unsigned char *p)
{
	__m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
	__m128i w = _mm_sub_epi8(v, _mm_set1_epi8(0x20));
	return (unsigned)_mm_movemask_epi8(_mm_adds_epu8(w, _mm_set1_epi8(0x21)));
}

/* bytes of the 16 at p outside 0x21-0x7e (request-target octets) */
static inline __attribute__((always_inline)) unsigned h1_uri_bad16(const unsigned char *p)
{
	const __m128i lo = _mm_set1_epi8(0x21), span = _mm_set1_epi8(0x7e - 0x21);
	__m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
	__m128i w = _mm_sub_epi8(v, lo); /* valid iff w <= 0x5d unsigned */
	__m128i ok = _mm_cmpeq_epi8(_mm_max_epu8(w, span), span);
	return (unsigned)_mm_movemask_epi8(ok) ^ 0xffffu;
}

/* bytes of the 16 at p outside 0x21-0x7e or '#': a request-target's scan
 * that stops at its fragment too (the parser's, which flags one) */
static inline __attribute__((always_inline)) unsigned h1_uri_frag_bad16(const unsigned char *p)
{
	const __m128i lo = _mm_set1_epi8(0x21), span = _mm_set1_epi8(0x7e - 0x21);
	__m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
	__m128i w = _mm_sub_epi8(v, lo); /* valid iff w <= 0x5d unsigned */
	__m128i ok = _mm_cmpeq_epi8(_mm_max_epu8(w, span), span);
	__m128i hash = _mm_cmpeq_epi8(v, _mm_set1_epi8('#'));
	return (unsigned)_mm_movemask_epi8(_mm_andnot_si128(hash, ok)) ^ 0xffffu;
}

/* the letters of either case among the 16 bytes of v: (v | 0x20) - 'a'
 * <= 25 unsigned */
static inline __attribute__((always_inline)) __m128i h1_letters16(__m128i v)
{
	__m128i l = _mm_sub_epi8(_mm_or_si128(v, _mm_set1_epi8(0x20)), _mm_set1_epi8('a'));
	return _mm_cmpeq_epi8(_mm_max_epu8(l, _mm_set1_epi8(25)), _mm_set1_epi8(25));
}

/* bytes of the 16 at p other than letters, digits and '-' (the usual
 * name bytes; the table decides about the others) */
static inline __attribute__((always_inline)) unsigned h1_name_odd16(const unsigned char *p)
{
	__m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
	__m128i letter = h1_letters16(v);
	__m128i d = _mm_sub_epi8(v, _mm_set1_epi8('0'));
	__m128i digit = _mm_cmpeq_epi8(_mm_max_epu8(d, _mm_set1_epi8(9)), _mm_set1_epi8(9));
	__m128i dash = _mm_cmpeq_epi8(v, _mm_set1_epi8('-'));
	return (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(letter, digit), dash)) ^
	       0xffffu;
}

/* bytes of the 16 at p other than letters, digits, '-' and '.' (a host
 * name or an IPv4 address without a port) */
static inline __attribute__((always_inline)) unsigned h1_host_odd16(const unsigned char *p)
{
	__m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
	__m128i letter = h1_letters16(v);
	/* '-', '.', '/' and the digits are 0x2d-0x39; '/' is not one of them */
	__m128i d = _mm_sub_epi8(v, _mm_set1_epi8('-'));
	__m128i dd = _mm_cmpeq_epi8(_mm_max_epu8(d, _mm_set1_epi8(12)), _mm_set1_epi8(12));
	__m128i slash = _mm_cmpeq_epi8(v, _mm_set1_epi8('/'));
	return ((unsigned)_mm_movemask_epi8(_mm_or_si128(letter, dd)) ^ 0xffffu) |
	       (unsigned)_mm_movemask_epi8(slash);
}
#endif

#if defined(__SSE2__)
#define H1_BAD16(f) (f)
#else
#define H1_BAD16(f) NULL
#endif

/* The bytes from @p q on that are of class @p cls, to the first that is
 * not (or @p end): 16 at a time where @p bad16 marks the bytes outside
 * the class (the top of this section says which loads are made), the
 * table byte by byte after. Inlined with a constant @p bad16, so each
 * scanner below is its own loop. Two blocks a round while 32 bytes
 * remain: a value of 16-31 bytes (a Date, a Content-Type) then takes its
 * second block without the loop's test and branch. */
static inline __attribute__((always_inline)) const unsigned char *
h1_scan_class(const unsigned char *q, const unsigned char *end, const unsigned char *base,
	      unsigned (*bad16)(const unsigned char *), uint8_t cls)
{
#if defined(__SSE2__)
	/* q + 32 <= end as numbers: a lea and a compare, where end - q >= 32
	 * took a subtraction more (q + 32 past end is no pointer to form) */
	while ((uintptr_t)q + 32 <= (uintptr_t)end) {
		unsigned m = bad16(q);
		if (m)
			return q + __builtin_ctz(m);
		m = bad16(q + 16);
		if (m)
			return q + 16 + __builtin_ctz(m);
		q += 32;
	}
	if (end - q >= 16) {
		unsigned m = bad16(q);
		if (m)
			return q + __builtin_ctz(m);
		q += 16;
	}
	if (q < end && end - base >= 16) {
		/* the block ending at end; q - b is 1..15 */
		const unsigned char *b = end - 16;
		unsigned m = bad16(b) >> (q - b);
		return m ? q + __builtin_ctz(m) : end;
	}
#else
	(void)base, (void)bad16;
#endif
	while (q < end && (cls == ARN_H1_C_PLAIN      ? (unsigned)(*q - 0x20) < 0x5fu
			   : cls == ARN_H1_C_URI_FRAG ? h1_is(*q, ARN_H1_C_URI) && *q != '#'
						      : h1_is(*q, cls)))
		q++;
	return q;
}

/* field-value octets: HTAB, 0x20-0x7e, 0x80-0xff */
static inline __attribute__((always_inline)) const unsigned char *
h1_scan_value(const unsigned char *q, const unsigned char *end, const unsigned char *base)
{
	return h1_scan_class(q, end, base, H1_BAD16(h1_value_bad16), ARN_H1_C_VALUE);
}

/* field-value octets of the usual line (fields_fast): 0x20-0x7e, so the
 * scan stops at HTAB and obs-text too, and fields_fast leaves such a line
 * (its value ends short of the line's end) to the scalar parser, the
 * byte loop on the same bytes */
static inline __attribute__((always_inline)) const unsigned char *
h1_scan_value_plain(const unsigned char *q, const unsigned char *end, const unsigned char *base)
{
	return h1_scan_class(q, end, base, H1_BAD16(h1_value_plain_bad16), ARN_H1_C_PLAIN);
}

/* request-target octets: 0x21-0x7e */
static inline __attribute__((always_inline)) const unsigned char *
h1_scan_uri(const unsigned char *q, const unsigned char *end, const unsigned char *base)
{
	return h1_scan_class(q, end, base, H1_BAD16(h1_uri_bad16), ARN_H1_C_URI);
}

/* request-target octets but '#': the request line's target scan stops at
 * a fragment, which it flags, then goes on (has_fragment's second pass
 * over the target cost about 12 instructions a request) */
static inline __attribute__((always_inline)) const unsigned char *
h1_scan_uri_frag(const unsigned char *q, const unsigned char *end, const unsigned char *base)
{
	return h1_scan_class(q, end, base, H1_BAD16(h1_uri_frag_bad16), ARN_H1_C_URI_FRAG);
}

/* tchar. Names are short (about 10 bytes) and nearly always letters,
 * digits and '-': 16 bytes are tested for those three ranges at once
 * (about 12 instructions, where the table costs about 4 a byte), and the
 * table decides from the first other byte on (another tchar such as '_'
 * or '.', or the end of the name). */
static inline __attribute__((always_inline)) const unsigned char *
h1_scan_token(const unsigned char *q, const unsigned char *end, const unsigned char *base)
{
#if defined(__SSE2__)
	if (end - q >= 16) {
		unsigned m = h1_name_odd16(q);
		if (!m) {
			q += 16;
		} else {
			q += __builtin_ctz(m);
			if (!h1_is(*q, ARN_H1_C_TOKEN))
				return q;
		}
	} else if (q < end && end - base >= 16) {
		const unsigned char *b = end - 16;
		unsigned m = h1_name_odd16(b) >> (q - b);
		if (!m)
			return end;
		q += __builtin_ctz(m);
		if (!h1_is(*q, ARN_H1_C_TOKEN))
			return q;
	}
#else
	(void)base;
#endif
	while (end - q >= 4) {
		if (!h1_is(q[0], ARN_H1_C_TOKEN))
			return q;
		if (!h1_is(q[1], ARN_H1_C_TOKEN))
			return q + 1;
		if (!h1_is(q[2], ARN_H1_C_TOKEN))
			return q + 2;
		if (!h1_is(q[3], ARN_H1_C_TOKEN))
			return q + 3;
		q += 4;
	}
	while (q < end && h1_is(*q, ARN_H1_C_TOKEN))
		q++;
	return q;
}

/* arn_h1_parser_idle, inline for the codec's input loop (twice a message:
 * a call there cost more than the test). ST_IDLE, h1_parse.c's first
 * state, is 0 (asserted there). */
static inline bool h1_parser_idle(const struct arn_h1_parser *p)
{
	return p->state == 0;
}

/* h1_parse.c's ST_END (asserted there): END is the next event */
#define H1_ST_END 12
/* h1_parse.c's ST_BODY_CL (asserted there): a Content-Length body's bytes */
#define H1_ST_BODY_CL 2
/* h1_parse.c's ST_CHUNK_DATA_CR (asserted there): a chunk's data was all
 * given, its CRLF is next */
#define H1_ST_CHUNK_DATA_CR 9

/*
 * The END the parser owes after a head without a body or after the last
 * body byte, answered without a parse when the connection goes on to the
 * next message as HTTP (after_end's common case: keep-alive, no upgrade,
 * tunnel or CONNECT): the codec asks twice a proxied request, and a parse
 * with no input costs its call and the codec's input loop. @return false
 * (nothing done) otherwise: arn_h1_parse answers.
 */
static inline bool h1_parser_end_now(struct arn_h1_parser *p)
{
	if (p->state != H1_ST_END)
		return false;
	const struct arn_h1_msg *m = p->msg;
	if ((m->flags & (ARN_H1_F_KEEP_ALIVE | ARN_H1_F_UPGRADE | ARN_H1_F_TUNNEL)) !=
		ARN_H1_F_KEEP_ALIVE ||
	    m->method == ARN_H1_M_CONNECT)
		return false;
	p->state = 0; /* ST_IDLE */
	return true;
}

/*
 * A Content-Length body's next bytes from [buf, buf + len), len > 0, as
 * arn_h1_parse gives them (its first step in that state), for a parser in
 * state H1_ST_BODY_CL. Inline for the codec, which takes them without the
 * parser's call once a response with a body (its bytes usually follow
 * the head in its segment). @return the bytes taken (the event's).
 */
static inline size_t h1_parser_body_take(struct arn_h1_parser *p, const char *buf, size_t len,
					 struct arn_h1_ev *ev)
{
	size_t n = len < p->remaining ? len : (size_t)p->remaining;
	ev->type = ARN_H1_EV_BODY;
	ev->data = buf;
	ev->len = n;
	p->remaining -= n;
	p->msg->body_len += n;
	if (p->remaining == 0)
		p->state = H1_ST_END;
	return n;
}

/*
 * A chunked body's end right after a chunk's data, for a parser in state
 * H1_ST_CHUNK_DATA_CR: when [buf, buf + len) starts with the usual last
 * chunk, "\r\n0\r\n\r\n" (the data's CRLF, a size of 0, no extension and
 * no trailer), the parser takes it and its END as arn_h1_parse would give
 * them (h1_parse.c). The codec gives the chunk's data and the END as one
 * event then. @return the bytes taken (7), or 0 (nothing done: other bytes,
 * or fewer): arn_h1_parse goes on from there.
 */
size_t h1_parser_chunked_end(struct arn_h1_parser *p, const char *buf, size_t len);

/* arn_h1_parser_set_scratch, inline for the codec, which drops the
 * message's scratch after every message (h1_release) */
static inline int h1_parser_set_scratch(struct arn_h1_parser *p, char *buf, uint32_t cap)
{
	if (p->partial)
		return -EBUSY;
	p->scratch = buf;
	p->scratch_cap = buf ? cap : 0;
	p->scratch_len = 0;
	return 0;
}

/*
 * The next response on a connection whose parser is already a response
 * parser between messages with @p max_hdrs headers and no options (what
 * http_h1_expect made it): the same as arn_h1_parser_init with those
 * limits, then arn_h1_parser_allow_grow and arn_h1_parser_expect, without
 * clearing and recomputing what is the same. What else init clears is
 * cleared by the parser when the message begins (begin_message, body_start)
 * or zero in an idle parser (err). @return false (nothing done) when the
 * parser is not in that state.
 */
static inline bool h1_parser_rearm_response(struct arn_h1_parser *p, struct arn_h1_msg *msg,
					    uint16_t max_hdrs, enum arn_h1_method req_method)
{
	if (p->kind != ARN_H1_RESPONSE || !h1_parser_idle(p) || p->max_hdrs != max_hdrs ||
	    max_hdrs == 0 || p->opts != 0 || !p->grow_ok)
		return false;
	p->msg = msg;
	p->scratch = NULL;
	p->scratch_cap = 0;
	p->scratch_len = 0;
	p->req_method = (uint8_t)req_method;
	return true;
}

/* ---- known header names (arn_h1_hdr.def) ---- */

static const char *const h1_hdr_names[ARN_H1_H_COUNT] = {
    "",
#define ARN_H1_HDR(id, name) name,
#include "arn_h1_hdr.def"
#undef ARN_H1_HDR
};

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
static inline uint64_t h1_ld8(const char *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static inline uint32_t h1_ld4(const char *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static inline uint16_t h1_ld2(const char *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return v;
}

static inline bool h1_w8_eq(uint64_t x, uint64_t l)
{
	uint64_t m = ((l + 0x1f1f1f1f1f1f1f1full) & 0x8080808080808080ull) >> 2;
	return ((x ^ l) & ~m) == 0;
}

static inline bool h1_w4_eq(uint32_t x, uint32_t l)
{
	uint32_t m = ((l + 0x1f1f1f1fu) & 0x80808080u) >> 2;
	return ((x ^ l) & ~m) == 0;
}

static inline __attribute__((always_inline)) bool h1_lit_eq(const char *s, const char *lit,
							    size_t n)
{
	if (n >= 8) {
		size_t i = 0;
		for (; i + 8 <= n; i += 8)
			if (!h1_w8_eq(h1_ld8(s + i), h1_ld8(lit + i)))
				return false;
		return i == n || h1_w8_eq(h1_ld8(s + n - 8), h1_ld8(lit + n - 8));
	}
	if (n >= 4)
		return h1_w4_eq(h1_ld4(s), h1_ld4(lit)) &&
		       h1_w4_eq(h1_ld4(s + n - 4), h1_ld4(lit + n - 4));
	if (n >= 2)
		return h1_w4_eq(h1_ld2(s), h1_ld2(lit)) &&
		       h1_w4_eq(h1_ld2(s + n - 2), h1_ld2(lit + n - 2));
	return n == 0 || h1_w4_eq((unsigned char)s[0], (unsigned char)lit[0]);
}

/* arn_h1_hdr_lookup, inline for the parser (a call per field line) */
static inline __attribute__((always_inline)) enum arn_h1_hdr_id h1_hdr_lookup(const char *s,
									      size_t n)
{
	/* One switch on the length, then at most two comparisons: this runs
	 * for every header line, so no loop over the whole table. */
#define H(id) (h1_lit_eq(s, h1_hdr_names[ARN_H1_H_##id], n) ? ARN_H1_H_##id : ARN_H1_H_OTHER)
	switch (n) {
	case 2:
		return H(TE);
	case 4:
		switch (s[0] | 0x20) {
		case 'h':
			return H(HOST);
		case 'd':
			return H(DATE);
		case 'e':
			return H(ETAG);
		default:
			return H(VARY);
		}
	case 6:
		switch (s[0] | 0x20) {
		case 's':
			return H(SERVER);
		case 'e':
			return H(EXPECT);
		default:
			return H(ACCEPT);
		}
	case 7:
		return (s[0] | 0x20) == 'u' ? H(UPGRADE) : H(TRAILER);
	case 10:
		switch (s[0] | 0x20) {
		case 'c':
			return H(CONNECTION);
		case 'k':
			return H(KEEP_ALIVE);
		default:
			return H(USER_AGENT);
		}
	case 12:
		return (s[0] | 0x20) == 'c' ? H(CONTENT_TYPE) : H(X_REQUEST_ID);
	case 13:
		switch (s[0] | 0x20) {
		case 'l':
			return H(LAST_MODIFIED);
		case 'a':
			return H(ACCEPT_RANGES);
		default:
			return H(CACHE_CONTROL);
		}
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
	case 23:
		return H(X_FORWARDED_CLIENT_CERT);
	default:
		return ARN_H1_H_OTHER;
	}
#undef H
}

/*
 * Copy @p n bytes with inline loads and stores, for the serializer's many
 * short pieces (a header name, a value: 3-60 bytes), where a call to
 * memcpy cost ~20 instructions each (two per header line, 30+ lines a
 * proxied request). Overlapping loads and stores cover every length
 * without touching a byte outside [s, s + n) or [d, d + n).
 */
static inline void h1_copy(char *d, const char *s, size_t n)
{
	if (n >= 16) {
#if defined(__SSE2__)
		/* the first and the last 16 bytes; up to 32 (a Date value, the
		 * x-envoy names) that is all, without a loop */
		const __m128i first = _mm_loadu_si128((const __m128i *)(const void *)s);
		const __m128i last = _mm_loadu_si128((const __m128i *)(const void *)(s + n - 16));
		for (size_t i = 16; i + 16 < n; i += 16)
			_mm_storeu_si128((__m128i *)(void *)(d + i),
					 _mm_loadu_si128((const __m128i *)(const void *)(s + i)));
		_mm_storeu_si128((__m128i *)(void *)d, first);
		_mm_storeu_si128((__m128i *)(void *)(d + n - 16), last);
#else
		memcpy(d, s, n);
#endif
		return;
	}
	if (n >= 8) {
		uint64_t a, b;
		memcpy(&a, s, 8);
		memcpy(&b, s + n - 8, 8);
		memcpy(d, &a, 8);
		memcpy(d + n - 8, &b, 8);
		return;
	}
	if (n >= 4) {
		uint32_t a, b;
		memcpy(&a, s, 4);
		memcpy(&b, s + n - 4, 4);
		memcpy(d, &a, 4);
		memcpy(d + n - 4, &b, 4);
		return;
	}
	if (n) {
		/* 1-3 bytes: first, middle, last (some the same byte) */
		char a = s[0], b = s[n / 2], c = s[n - 1];
		d[0] = a;
		d[n / 2] = b;
		d[n - 1] = c;
	}
}

#endif
