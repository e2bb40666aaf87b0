/*
 * HTTP/1.x parser (see arn_h1.h for the contract).
 *
 * The head is parsed a line at a time. A line wholly inside the current run
 * is scanned once, in place: the scan that validates the characters also
 * finds its end. A line cut by the end of a run is copied to scratch and
 * completed from the next runs (memchr for its LF), then parsed from there
 * by the same code. Errors are reported in scan order within a line, so the
 * result never depends on where the input was split (the fuzz target
 * checks exactly that). Body framing (Content-Length, chunked) is a small
 * byte-at-a-time state machine that never copies data.
 */
#include <string.h>

#include "h1_int.h"

enum {
	ST_IDLE = 0,	  /* between messages */
	ST_HEAD,	  /* start line and header lines */
	ST_BODY_CL,	  /* remaining bytes of a Content-Length body */
	ST_BODY_EOF,	  /* response body until the server closes */
	ST_CHUNK_SIZE,	  /* hex digits of a chunk size */
	ST_CHUNK_BWS,	  /* whitespace after the size, before ';' */
	ST_CHUNK_EXT,	  /* chunk extensions, up to CR */
	ST_CHUNK_LF,	  /* LF ending the size line */
	ST_CHUNK_DATA,	  /* remaining bytes of the current chunk */
	ST_CHUNK_DATA_CR, /* CR after chunk data */
	ST_CHUNK_DATA_LF, /* LF after chunk data */
	ST_TRAILERS,	  /* trailer lines after the last chunk */
	ST_END,		  /* END is the next event */
	ST_UPGRADE_WAIT,  /* request side after upgrade/CONNECT: caller decides */
	ST_TUNNEL,	  /* raw bytes */
	ST_CLOSED,	  /* the connection ends after the last message */
	ST_ERROR,
};

_Static_assert(ST_IDLE == 0,
	       "h1_parser_idle (h1_int.h) and arn_h1_parser_idle (arn_h1.h) test for 0");
_Static_assert(ST_END == H1_ST_END, "h1_parser_end_now (h1_int.h) tests for H1_ST_END");
_Static_assert(ST_BODY_CL == H1_ST_BODY_CL, "the codec tests for H1_ST_BODY_CL");
_Static_assert(ST_CHUNK_DATA_CR == H1_ST_CHUNK_DATA_CR, "the codec tests for H1_ST_CHUNK_DATA_CR");

/* p->te_bits: what the Transfer-Encoding lines said, in order. */
#define TE_CHUNKED 0x01	     /* chunked seen */
#define TE_LAST_CHUNKED 0x02 /* the last coding so far is chunked */
#define TE_OTHER 0x04	     /* a coding other than chunked */
#define TE_TWICE 0x08	     /* chunked more than once */

/* Line parser results (errors: L_ERR, with p->err set). */
#define L_ERR (-1)
#define L_INCOMPLETE 0
#define L_START 1
#define L_FIELD 2
#define L_EMPTY 3
#define L_ASK 4 /* (head_step) a trailer line waits for a slot: NEED_TRAILERS */

/* Step results inside arn_h1_parse. */
#define R_CONT 0  /* state changed, go on */
#define R_EVENT 1 /* ev filled, return the bytes consumed */
#define R_AGAIN 2 /* all input taken */
#define R_ERR 3

typedef const unsigned char *uptr;

static int fail(struct arn_h1_parser *p, enum arn_h1_err e)
{
	p->err = (uint8_t)e;
	p->state = ST_ERROR;
	return L_ERR;
}

/* A character that ended a scan where it was not allowed: NUL and bare CR
 * get their own codes; a CR at the end of the input may still be followed
 * by LF, so that is "need more". */
static int bad_char(struct arn_h1_parser *p, uptr q, uptr end, enum arn_h1_err dflt)
{
	if (*q == 0)
		return fail(p, ARN_H1_E_NUL);
	if (*q == '\r') {
		if (q + 1 == end)
			return L_INCOMPLETE;
		if (q[1] != '\n')
			return fail(p, ARN_H1_E_BARE_CR);
	}
	return fail(p, dflt);
}

/* Line end at q: CRLF or LF (RFC 9112 2.2 lets a recipient accept a bare
 * LF in the head; heads are re-serialized with CRLF, so a downstream parser
 * never sees the difference). Sets *next past it. */
static inline __attribute__((always_inline)) int line_end(struct arn_h1_parser *p, uptr q, uptr end,
							  const char **next, enum arn_h1_err dflt)
{
	if (q == end)
		return L_INCOMPLETE;
	if (*q == '\n') {
		*next = (const char *)q + 1;
		return 1;
	}
	if (*q == '\r') {
		if (q + 1 == end)
			return L_INCOMPLETE;
		if (q[1] != '\n')
			return fail(p, ARN_H1_E_BARE_CR);
		*next = (const char *)q + 2;
		return 1;
	}
	return bad_char(p, q, end, dflt);
}

/* "HTTP/" DIGIT "." DIGIT, checked as far as the input goes; then major
 * version 1 only (505 for others). A higher minor version is taken as 1.1,
 * the highest this side implements (RFC 9110 6.2). */
static __attribute__((noinline)) int parse_version_slow(struct arn_h1_parser *p, uptr q, uptr end,
							uint8_t *ver)
{
	static const char pat[] = "HTTP/9.9";
	size_t avail = (size_t)(end - q);
	size_t n = avail < 8 ? avail : 8;
	for (size_t i = 0; i < n; i++) {
		int ok =
		    pat[i] == '9' ? (q[i] >= '0' && q[i] <= '9') : q[i] == (unsigned char)pat[i];
		if (!ok)
			return bad_char(p, q + i, end, ARN_H1_E_START_LINE);
	}
	if (n < 8)
		return L_INCOMPLETE;
	if (q[5] != '1')
		return fail(p, ARN_H1_E_VERSION);
	*ver = q[7] == '0' ? 10 : 11;
	return 1;
}

/* the two versions there are, as one 8-byte comparison, inline (once in
 * each start line); the rest out of line. @p v11 (NULL: not wanted) is
 * set when the bytes are "HTTP/1.1" exactly (a higher minor version is
 * 11 as well). */
static inline __attribute__((always_inline)) int parse_version(struct arn_h1_parser *p, uptr q,
							       uptr end, uint8_t *ver, bool *v11)
{
	if (end - q >= 8) {
		uint64_t w = h1_ld8((const char *)q);
		if (w == h1_ld8("HTTP/1.1")) {
			*ver = 11;
			if (v11)
				*v11 = true;
			return 1;
		}
		if (w == h1_ld8("HTTP/1.0")) {
			*ver = 10;
			return 1;
		}
	}
	return parse_version_slow(p, q, end, ver);
}

/* The ctz of a non-zero mask, as a size_t for pointer arithmetic: bsf's
 * 64-bit answer as it is. gcc's __builtin_ctz is an int, which it
 * sign-extends, and it zeroes tzcnt's destination first: two
 * instructions more an index. */
static inline __attribute__((always_inline)) size_t ff_ctz(uint64_t m)
{
#if defined(__x86_64__)
	uint64_t r;
	__asm__("bsfq %1, %0" : "=r"(r) : "rm"(m) : "cc");
	return r;
#else
	return (size_t)__builtin_ctzll(m);
#endif
}

/* The start lines' target and reason scans (h1_scan_uri_frag,
 * h1_scan_value) with their first 16-byte block inline, where 16 bytes
 * are in the run: a short target or reason ("/small", "OK") ends there,
 * without the scan loop's entry tests and setup. The same answer: the
 * class is per byte. */
static inline __attribute__((always_inline)) uptr scan_target(uptr q, uptr end, uptr base)
{
#if defined(__SSE2__)
	if ((uintptr_t)q + 16 <= (uintptr_t)end) {
		unsigned m = h1_uri_frag_bad16(q);
		if (m)
			return q + ff_ctz(m);
		return h1_scan_uri_frag(q + 16, end, base);
	}
#endif
	return h1_scan_uri_frag(q, end, base);
}

static inline __attribute__((always_inline)) uptr scan_reason(uptr q, uptr end, uptr base)
{
#if defined(__SSE2__)
	if ((uintptr_t)q + 16 <= (uintptr_t)end) {
		unsigned m = h1_value_bad16(q);
		if (m)
			return q + ff_ctz(m);
		return h1_scan_value(q + 16, end, base);
	}
#endif
	return h1_scan_value(q, end, base);
}

static const char slash[] = "/";
static const char star[] = "*";

/* Request-target forms (RFC 9112 3.2) and the authority they carry. */
static int parse_target(struct arn_h1_parser *p, uptr t, uint32_t n)
{
	struct arn_h1_msg *m = p->msg;
	struct arn_h1_slice host;
	int port;

	if (m->method == ARN_H1_M_CONNECT) {
		/* authority-form, "host:port", the only form CONNECT takes */
		if (t[0] == '/' || arn_h1_authority_split((const char *)t, n, &host, &port) != 0 ||
		    host.len == 0 || port < 0)
			return fail(p, ARN_H1_E_TARGET);
		m->target_form = ARN_H1_TF_AUTHORITY;
		m->authority = (struct arn_h1_slice){(const char *)t, n};
		return 0;
	}
	if (t[0] == '/') {
		m->target_form = ARN_H1_TF_ORIGIN;
		m->path = (struct arn_h1_slice){(const char *)t, n};
		return 0;
	}
	if (n == 1 && t[0] == '*') {
		if (m->method != ARN_H1_M_OPTIONS)
			return fail(p, ARN_H1_E_TARGET);
		m->target_form = ARN_H1_TF_ASTERISK;
		m->path = (struct arn_h1_slice){star, 1};
		return 0;
	}
	/* absolute-form: scheme "://" authority [ "/" path ] [ "?" query ] */
	uint32_t i = 0;
	if (!((t[0] | 0x20) >= 'a' && (t[0] | 0x20) <= 'z'))
		return fail(p, ARN_H1_E_TARGET);
	while (i < n && (((t[i] | 0x20) >= 'a' && (t[i] | 0x20) <= 'z') ||
			 (t[i] >= '0' && t[i] <= '9') || t[i] == '+' || t[i] == '-' || t[i] == '.'))
		i++;
	if (n - i < 3 || memcmp(t + i, "://", 3) != 0)
		return fail(p, ARN_H1_E_TARGET);
	uint32_t a = i + 3, b = a;
	while (b < n && t[b] != '/' && t[b] != '?' && t[b] != '#')
		b++;
	/* no userinfo (RFC 9110 4.2.4), a host is required, and a query with
	 * no path would leave no origin-form path to forward without a copy */
	if (memchr(t + a, '@', b - a) ||
	    arn_h1_authority_split((const char *)t + a, b - a, &host, &port) != 0 ||
	    host.len == 0 || (b < n && t[b] != '/'))
		return fail(p, ARN_H1_E_TARGET);
	m->target_form = ARN_H1_TF_ABSOLUTE;
	m->scheme = (struct arn_h1_slice){(const char *)t, i};
	m->authority = (struct arn_h1_slice){(const char *)t + a, b - a};
	if (b < n)
		m->path = (struct arn_h1_slice){(const char *)t + b, n - b};
	else
		m->path = (struct arn_h1_slice){slash, 1};
	return 0;
}

/* method SP request-target SP HTTP-version CRLF; inline in head_first,
 * once a request, out of line (parse_request_line) for the line loop */
static inline __attribute__((always_inline)) int
request_line(struct arn_h1_parser *p, const char *s, const char *e, const char **next)
{
	struct arn_h1_msg *m = p->msg;
	uptr q = (uptr)s, end = (uptr)e;
	uptr m0 = q;
	/* GET and its space, the usual method, as one word */
	bool get = end - q >= 4 && h1_ld4((const char *)q) == h1_ld4("GET ");
	q = get ? q + 3 : h1_scan_token(q, end, m0);
	if (q == end)
		return L_INCOMPLETE;
	if (*q != ' ' || q == m0) {
		/* "GET\r\n" ends the line early: malformed, not a bad method */
		bool early = q == m0 || *q == '\r' || *q == '\n';
		return bad_char(p, q, end, early ? ARN_H1_E_START_LINE : ARN_H1_E_METHOD);
	}
	uint32_t mlen = (uint32_t)(q - m0);
	q++;
	uptr t0 = q;
	/* a '#' stops the scan: the target has a fragment (ARN_H1_F_FRAGMENT,
	 * once the line is complete), and its scan goes on past it */
	q = scan_target(q, end, m0);
	if (q == end)
		return L_INCOMPLETE;
	bool frag = false;
	if (*q != ' ' || q == t0) {
		if (*q == '#') {
			frag = true;
			q = h1_scan_uri(q + 1, end, m0);
			if (q == end)
				return L_INCOMPLETE;
		}
		if (*q != ' ' || q == t0) {
			/* "GET /\r\n" (HTTP/0.9), two spaces, or a byte no
			 * target has */
			enum arn_h1_err d = (q == t0 || *q == '\r' || *q == '\n')
						? ARN_H1_E_START_LINE
						: ARN_H1_E_TARGET;
			return bad_char(p, q, end, d);
		}
	}
	uint32_t tlen = (uint32_t)(q - t0);
	q++;
	uint8_t ver;
	bool v11 = false;
	int r = parse_version(p, q, end, &ver, &v11);
	if (r != 1)
		return r;
	q += 8;
	r = line_end(p, q, end, next, ARN_H1_E_START_LINE);
	if (r != 1)
		return r;
	/* the line as a writer of HTTP/1.1 would write it: it may go on as
	 * it came (arn_h1_write_request_line_of) */
	if (v11 && *next == (const char *)q + 2)
		m->flags |= ARN_H1_F_LINE_CRLF;

	/* the line is complete and well formed: now its meaning; GET known
	 * from the word above, before the lookup's call */
	enum arn_h1_method meth;
	if (get)
		meth = ARN_H1_M_GET;
	else
		meth = arn_h1_method_lookup((const char *)m0, mlen);
	if (meth == ARN_H1_M_NONE) {
		/* Envoy accepts only its list unless allow_custom_methods */
		if (!(p->opts & ARN_H1_O_ALLOW_CUSTOM_METHODS))
			return fail(p, ARN_H1_E_METHOD);
		meth = ARN_H1_M_OTHER;
	}
	m->method = (uint8_t)meth;
	m->version = ver;
	m->method_name = (struct arn_h1_slice){(const char *)m0, mlen};
	m->target = (struct arn_h1_slice){(const char *)t0, tlen};
	if (frag)
		m->flags |= ARN_H1_F_FRAGMENT;
	if (__builtin_expect(*t0 == '/' && meth != ARN_H1_M_CONNECT, 1)) {
		/* origin-form, the usual target: parse_target's answer for it
		 * inline (its call and frame were about 20 instructions of its
		 * 50 a request) */
		m->target_form = ARN_H1_TF_ORIGIN;
		m->path = (struct arn_h1_slice){(const char *)t0, tlen};
		return L_START;
	}
	if (parse_target(p, t0, tlen) != 0)
		return L_ERR;
	return L_START;
}

static __attribute__((noinline)) int parse_request_line(struct arn_h1_parser *p, const char *s,
							const char *e, const char **next)
{
	return request_line(p, s, e, next);
}

/* HTTP-version SP 3DIGIT SP [ reason-phrase ] CRLF; a missing SP before an
 * empty reason is tolerated, as most clients do. Inline in head_first, out
 * of line (parse_status_line) for the line loop. */
static inline __attribute__((always_inline)) int status_line(struct arn_h1_parser *p, const char *s,
							     const char *e, const char **next)
{
	struct arn_h1_msg *m = p->msg;
	uptr q = (uptr)s, end = (uptr)e;
	uint8_t ver;
	int r = parse_version(p, q, end, &ver, NULL);
	if (r != 1)
		return r;
	q += 8;
	if (q == end)
		return L_INCOMPLETE;
	if (*q != ' ')
		return bad_char(p, q, end, ARN_H1_E_START_LINE);
	q++;
	unsigned status = 0;
	if (end - q >= 4 && (unsigned)(q[0] - '0') <= 9 && (unsigned)(q[1] - '0') <= 9 &&
	    (unsigned)(q[2] - '0') <= 9) {
		/* the usual three digits and a byte after them, without a test
		 * for the input's end per digit */
		status = (unsigned)(q[0] - '0') * 100 + (unsigned)(q[1] - '0') * 10 +
			 (unsigned)(q[2] - '0');
		q += 3;
	} else {
		for (int i = 0; i < 3; i++, q++) {
			if (q == end)
				return L_INCOMPLETE;
			if (*q < '0' || *q > '9')
				return bad_char(p, q, end, ARN_H1_E_STATUS);
			status = status * 10 + (unsigned)(*q - '0');
		}
		if (q == end)
			return L_INCOMPLETE;
	}
	uptr r0 = q;
	if (*q == ' ') {
		q++;
		r0 = q;
		q = scan_reason(q, end, (uptr)s);
	}
	uptr r1 = q;
	r = line_end(p, q, end, next, ARN_H1_E_STATUS);
	if (r != 1)
		return r;
	if (status < 100)
		return fail(p, ARN_H1_E_STATUS);
	m->version = ver;
	m->status = (uint16_t)status;
	m->reason = (struct arn_h1_slice){(const char *)r0, (uint32_t)(r1 - r0)};
	return L_START;
}

static __attribute__((noinline)) int parse_status_line(struct arn_h1_parser *p, const char *s,
						       const char *e, const char **next)
{
	return status_line(p, s, e, next);
}

static int te_line(struct arn_h1_parser *p, const char *v, uint32_t n)
{
	struct arn_h1_list_iter it;
	struct arn_h1_slice el;
	arn_h1_list_init(&it, v, n);
	while (arn_h1_list_next(&it, &el)) {
		/* "chunked" takes no parameters; anything else is another coding */
		if (arn_h1_eq_nocase(el.p, el.len, "chunked", 7)) {
			if (p->te_bits & TE_CHUNKED)
				p->te_bits |= TE_TWICE;
			p->te_bits |= TE_CHUNKED | TE_LAST_CHUNKED;
		} else {
			p->te_bits &= (uint8_t)~TE_LAST_CHUNKED;
			p->te_bits |= TE_OTHER;
		}
	}
	return 0;
}

static int cl_line(struct arn_h1_parser *p, const char *v, uint32_t n)
{
	struct arn_h1_msg *m = p->msg;
	/* Envoy (http-parser, and balsa since envoy#28985) refuses a second
	 * Content-Length even with the same value, and "42, 42" too; so do we:
	 * a proxy that merged them would forward what the sender did not. */
	if (m->flags & ARN_H1_F_CONTENT_LENGTH)
		return fail(p, ARN_H1_E_CL_DUPLICATE);
	if (n == 0)
		return fail(p, ARN_H1_E_CL_INVALID);
	uint64_t x = 0;
	for (uint32_t i = 0; i < n; i++) {
		unsigned d = (unsigned)(unsigned char)v[i] - '0';
		if (d > 9 || x > (UINT64_MAX - d) / 10)
			return fail(p, ARN_H1_E_CL_INVALID);
		x = x * 10 + d;
	}
	m->flags |= ARN_H1_F_CONTENT_LENGTH;
	m->content_length = x;
	return 0;
}

/* A trailer line, in msg->trailers, with its own count limit (the room
 * for it was asked for at its start: trailer_short). */
static __attribute__((noinline)) int add_trailer(struct arn_h1_parser *p, const char *name,
						 uint32_t nlen, const char *value, uint32_t vlen)
{
	struct arn_h1_msg *m = p->msg;
	if (m->n_trailers >= p->max_hdrs || m->n_trailers >= m->trailer_cap)
		return fail(p, ARN_H1_E_TOO_MANY_HEADERS);
	if (nlen > UINT16_MAX)
		return fail(p, ARN_H1_E_HEAD_TOO_LARGE);
	struct arn_h1_header *h = &m->trailers[m->n_trailers];
	h->name = name;
	h->name_len = (uint16_t)nlen;
	h->value = value;
	h->value_len = vlen;
	h->id = (uint16_t)h1_hdr_lookup(name, nlen);
	m->n_trailers++;
	return 0;
}

/* Is the value [v, v + n) a host of letters, digits, '-' and '.' only
 * (what arn_h1_authority_split takes whole, without a port)? Tested as one
 * 16-byte block where the line allows it: the block ending at the value's
 * end when the line from @p base is that long, else the block from v
 * when the input goes on to @p end; false (finish_head splits it) when
 * neither, or for a value over 16 bytes. */
static inline __attribute__((always_inline)) bool host_plain(uptr v, uint32_t n, uptr base,
							     uptr end)
{
#if defined(__SSE2__)
	if (n == 0 || n > 16)
		return false;
	unsigned odd;
	if (v + n - base >= 16)
		odd = h1_host_odd16(v + n - 16) >> (16 - n);
	else if (end - v >= 16)
		odd = h1_host_odd16(v) & ((1u << n) - 1);
	else
		return false;
	return odd == 0;
#else
	(void)v, (void)n, (void)base, (void)end;
	return false;
#endif
}

static inline __attribute__((always_inline)) int
add_head_field(struct arn_h1_parser *p, struct arn_h1_msg *m, struct arn_h1_header *h, unsigned idx,
	       enum arn_h1_hdr_id id, const char *name, uint32_t nlen, const char *value,
	       uint32_t vlen, const char *end);

static inline __attribute__((always_inline)) int add_field(struct arn_h1_parser *p,
							   const char *name, uint32_t nlen,
							   const char *value, uint32_t vlen,
							   const char *end)
{
	if (__builtin_expect(p->state == ST_TRAILERS, 0))
		return add_trailer(p, name, nlen, value, vlen);
	/* a head's lines: no trailers yet (begin_message cleared them) */
	if (p->msg->n_hdrs >= p->max_hdrs || p->msg->n_hdrs >= p->msg->hdr_cap)
		return fail(p, ARN_H1_E_TOO_MANY_HEADERS);
	if (nlen > UINT16_MAX)
		return fail(p, ARN_H1_E_HEAD_TOO_LARGE);
	struct arn_h1_msg *m = p->msg;
	unsigned idx = m->n_hdrs;
	m->n_hdrs = (uint16_t)(idx + 1);
	return add_head_field(p, m, &m->hdrs[idx], idx, h1_hdr_lookup(name, nlen), name, nlen,
			      value, vlen, end);
}

/* A head's field line, once the limits are checked and its name looked up
 * (@p id): its slot and what it means for framing and the connection.
 * @p m is p->msg, @p h its slot hdrs[idx], @p idx the line's index; the
 * caller counts it in n_hdrs (before: a line that fails here counts).
 * They are passed in so that fields_fast keeps them in registers from
 * line to line, and stores n_hdrs once when it stops: reloaded after
 * each line's stores, which may alias them, and n_hdrs stored per line,
 * they cost about 7 instructions a line. */
static inline __attribute__((always_inline)) int
add_head_field(struct arn_h1_parser *p, struct arn_h1_msg *m, struct arn_h1_header *h, unsigned idx,
	       enum arn_h1_hdr_id id, const char *name, uint32_t nlen, const char *value,
	       uint32_t vlen, const char *end)
{
	h->name = name;
	h->name_len = (uint16_t)nlen;
	h->value = value;
	h->value_len = vlen;
	h->id = (uint16_t)id;
	switch (id) {
	case ARN_H1_H_CONTENT_LENGTH:
		if (vlen - 1u < 19u && !(m->flags & ARN_H1_F_CONTENT_LENGTH)) {
			/* the usual first length of 1-19 digits, which cannot
			 * overflow: no call, no overflow test per digit */
			uint64_t x = 0;
			uint32_t i = 0;
			for (; i < vlen; i++) {
				unsigned d = (unsigned)(unsigned char)value[i] - '0';
				if (d > 9)
					break;
				x = x * 10 + d;
			}
			if (i == vlen) {
				m->flags |= ARN_H1_F_CONTENT_LENGTH;
				m->content_length = x;
				return 0;
			}
		}
		return cl_line(p, value, vlen);
	case ARN_H1_H_TRANSFER_ENCODING:
		m->flags |= ARN_H1_F_TE;
		return te_line(p, value, vlen);
	case ARN_H1_H_CONNECTION: {
		/* the usual values, whole, before the list walk (compared inline
		 * by word, ignoring case, as arn_h1_eq_nocase does) */
		if (vlen == 10 && h1_lit_eq(value, "keep-alive", 10)) {
			m->flags |= ARN_H1_F_CONN_KEEP_ALIVE;
			return 0;
		}
		if (vlen == 5 && h1_lit_eq(value, "close", 5)) {
			m->flags |= ARN_H1_F_CONN_CLOSE;
			return 0;
		}
		struct arn_h1_list_iter it;
		struct arn_h1_slice el;
		m->flags |= ARN_H1_F_HOPS_NAMED;
		arn_h1_list_init(&it, value, vlen);
		while (arn_h1_list_next(&it, &el)) {
			if (arn_h1_eq_nocase(el.p, el.len, "close", 5))
				m->flags |= ARN_H1_F_CONN_CLOSE;
			else if (arn_h1_eq_nocase(el.p, el.len, "keep-alive", 10))
				m->flags |= ARN_H1_F_CONN_KEEP_ALIVE;
			else if (arn_h1_eq_nocase(el.p, el.len, "upgrade", 7))
				m->flags |= ARN_H1_F_CONN_UPGRADE;
		}
		return 0;
	}
	case ARN_H1_H_HOST:
		if (p->kind == ARN_H1_REQUEST) {
			if (m->host_idx >= 0)
				return fail(p, ARN_H1_E_HOST_DUPLICATE);
			m->host_idx = (int16_t)idx;
			/* the usual Host checked here, in the line's input, in one
			 * step: finish_head's split (about 95 instructions) then
			 * only for the others */
			p->host_plain = host_plain((uptr)value, vlen, (uptr)name, (uptr)end);
		}
		return 0;
	case ARN_H1_H_TE:
		m->flags |= ARN_H1_F_HOPS_NAMED;
		return 0;
	case ARN_H1_H_UPGRADE:
		if (m->upgrade_idx < 0)
			m->upgrade_idx = (int16_t)idx;
		return 0;
	case ARN_H1_H_EXPECT:
		if (arn_h1_eq_nocase(value, vlen, "100-continue", 12))
			m->flags |= ARN_H1_F_EXPECT_CONTINUE;
		else
			m->flags |= ARN_H1_F_EXPECT_OTHER;
		return 0;
	case ARN_H1_H_X_FORWARDED_CLIENT_CERT:
		m->flags |= ARN_H1_F_PROXY_FIELDS;
		return 0;
	case ARN_H1_H_OTHER:
		if (arn_h1_proxy_field(name, nlen, ARN_H1_H_OTHER))
			m->flags |= ARN_H1_F_PROXY_FIELDS;
		return 0;
	default:
		return 0;
	}
}

/* field-name ":" OWS field-value OWS CRLF, or the empty line. Inlined
 * into the head loop: it runs for every header line. */
static inline __attribute__((always_inline)) int
parse_field_line(struct arn_h1_parser *p, const char *s, const char *e, const char **next)
{
	uptr q = (uptr)s, end = (uptr)e;
	if (q == end)
		return L_INCOMPLETE;
	/* a name starts with a byte above SP: one test for the usual line
	 * before the four for the empty line and a fold */
	if (__builtin_expect(*q <= ' ', 0)) {
		if (*q == '\r' || *q == '\n') {
			int r = line_end(p, q, end, next, ARN_H1_E_HDR_NAME);
			return r == 1 ? L_EMPTY : r;
		}
		if (*q == ' ' || *q == '\t') {
			/* obs-fold (RFC 9112 5.2) continues the previous line; before
			 * the first field it is whitespace after the start line (2.2) */
			bool first =
			    p->state == ST_TRAILERS ? p->msg->n_trailers == 0 : p->msg->n_hdrs == 0;
			return fail(p, first ? ARN_H1_E_LEADING_WS : ARN_H1_E_OBS_FOLD);
		}
	}
	uptr n0 = q;
	q = h1_scan_token(q, end, n0);
	if (q == end)
		return L_INCOMPLETE;
	if (*q != ':') {
		if (*q == ' ' || *q == '\t')
			return fail(p, ARN_H1_E_HDR_NAME_WS);
		if (*q == '\n' || (*q == '\r' && q + 1 < end && q[1] == '\n'))
			return fail(p, ARN_H1_E_HDR_NO_COLON);
		return bad_char(p, q, end, ARN_H1_E_HDR_NAME);
	}
	if (q == n0)
		return fail(p, ARN_H1_E_HDR_NAME);
	uint32_t nlen = (uint32_t)(q - n0);
	q++;
	if (q < end && *q == ' ') /* the usual single space */
		q++;
	/* more OWS: SP and HTAB are the only value bytes up to SP */
	if (q < end && *q <= ' ')
		while (q < end && (*q == ' ' || *q == '\t'))
			q++;
	uptr v0 = q;
	q = h1_scan_value(q, end, n0);
	uptr v1 = q;
	int r = line_end(p, q, end, next, ARN_H1_E_HDR_VALUE);
	if (r != 1)
		return r;
	if (v1 > v0 && v1[-1] <= ' ') /* trailing OWS (the value's bytes: see above) */
		while (v1 > v0 && (v1[-1] == ' ' || v1[-1] == '\t'))
			v1--;
	if (add_field(p, (const char *)n0, nlen, (const char *)v0, (uint32_t)(v1 - v0),
		      (const char *)end) != 0)
		return L_ERR;
	return L_FIELD;
}

/*
 * The fast path for a head's field lines, the bulk of a head: the usual
 * line (a name of letters, digits and '-', ':', at most one SP, a value,
 * CRLF or LF, all inside the run) is taken with the fewest tests, and the
 * limits checked once per run rather than per line. It only ever accepts:
 * a line it cannot take as it is (an empty line, a fold, another name
 * byte, more OWS before the value or any after it, a bad byte, a bare CR,
 * a line the run or the head's limit cuts, the header limit reached)
 * goes to parse_field_line from its first byte, untouched, so every
 * error, its code and where it is found are the scalar path's
 * (test_fields_fast_vs_scalar compares the two on random heads). Reads
 * stay inside [base, lim), @p base being the run's first byte.
 */
#if defined(__SSE2__)
/* bytes of the 16 at v outside 0x20-0x7e: h1_value_plain_bad16 with its
 * two constants in registers (@p sub, @p add), which fields_fast sets
 * once (gcc reloaded them from memory a line) */
static inline __attribute__((always_inline)) unsigned ff_plain_bad16(uptr v, __m128i sub,
								     __m128i add)
{
	return (unsigned)_mm_movemask_epi8(_mm_adds_epu8(
	    _mm_add_epi8(_mm_loadu_si128((const __m128i *)(const void *)v), sub), add));
}
#endif

/* Field lines of a head from s (< lim) while they are the usual kind;
 * each is added as parse_field_line would add it. @p nmax: the head's
 * line limit (max_hdrs and the array's capacity). @return where it
 * stopped, a line's start or lim; *err set when add_head_field failed
 * (the parser is in error); *bent set when a line it took is not
 * "name: value" CRLF (no SP after the ':' or LF alone; head_first's
 * ARN_H1_F_FIELDS_WHOLE), and left as it was otherwise. */
static inline __attribute__((always_inline)) uptr fields_fast(struct arn_h1_parser *p, uptr s,
							      uptr lim, uptr base, unsigned nmax,
							      bool *err, bool *bent)
{
	struct arn_h1_msg *m = p->msg;
	unsigned n = m->n_hdrs;
	/* no line may be added: parse_field_line fails the next (and hdrs
	 * may be NULL, a message without an array, whose NULL + 0 below
	 * clang's UBSan flags) */
	if (n >= nmax)
		return s;
	struct arn_h1_header *h = m->hdrs + n; /* the next line's slot */
	/* lim - 16 and lim - 2 as numbers (as pointers they may be before
	 * the input), once: each line's tests of the room left are then a
	 * compare, not a subtraction and a compare */
	const uintptr_t lim16 = (uintptr_t)lim - 16, lim2 = (uintptr_t)lim - 2;
#if !defined(__SSE2__)
	(void)lim16; /* the 16-byte blocks' bound: none without SSE2 */
#endif
#if defined(__SSE2__)
	/* ff_plain_bad16's constants, kept in registers for the loop (the
	 * empty asm hides their values, so gcc cannot reload them) */
	__m128i k_sub = _mm_set1_epi8(-0x20), k_add = _mm_set1_epi8(0x21);
	__asm__("" : "+x"(k_sub), "+x"(k_add));
#endif
	while (s < lim && s[0] > ' ') {
		uptr q;
		size_t nlen; /* q - s, kept: the colon's index is the length */
#if defined(__SSE2__)
		/* a name under 16 bytes, then ':' (the first of the 16 bytes);
		 * its bytes are tested below, by the lookup or the class */
		unsigned colon = (uintptr_t)s <= lim16
				     ? (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(
					   _mm_loadu_si128((const __m128i *)(const void *)s),
					   _mm_set1_epi8(':')))
				     : 0;
		if (colon) {
			nlen = ff_ctz(colon);
			q = s + nlen;
		} else
#endif
		{
			q = h1_scan_token(s, lim, base);
			nlen = (size_t)(q - s);
			if (q == lim || *q != ':' || nlen > UINT16_MAX)
				break; /* (a name that long: add_field fails it) */
		}
		/* The value's end: h1_scan_value_plain's answer, its first two
		 * 16-byte blocks (the SP and nearly every value: nginx's all
		 * but the longest Date or Last-Modified, a client's Host)
		 * tested inline when 34 bytes from the SP are in the run,
		 * without the scan loop's entry tests and a jump a line. A
		 * value's end found there leaves room for its CRLF (v1 <= lim
		 * - 3), so the test below is for the scan's answer only. */
		uptr v1, v = q + 1;
#if defined(__SSE2__)
		if ((uintptr_t)v + 32 <= lim2) {
			unsigned mk = ff_plain_bad16(v, k_sub, k_add);
			if (mk) {
				v1 = v + ff_ctz(mk);
				goto value_in;
			}
			mk = ff_plain_bad16(v + 16, k_sub, k_add);
			if (mk) {
				v1 = v + 16 + ff_ctz(mk);
				goto value_in;
			}
			v += 32;
		}
#endif
		v1 = h1_scan_value_plain(v, lim, base);
		if ((uintptr_t)v1 > lim2)
			break;
#if defined(__SSE2__)
	value_in:; /* (a statement: C11 puts no declaration after a label) */
#endif
		/* [q + 1, v1] is inside [s, lim): one optional SP, no more OWS
		 * (an HTAB stopped the scan: v1 is not at the line's end). The
		 * usual SP and CRLF are the branches' fall-through; the others,
		 * rare, mark the head bent there, so ARN_H1_F_FIELDS_WHOLE
		 * costs the usual line nothing (a sum of the lines' lengths
		 * kept for it cost 2 instructions a line and a register) */
		uptr v0;
		if (__builtin_expect(q[1] == ' ', 1)) {
			v0 = q + 2;
			if (*v0 == ' ')
				break;
		} else {
			v0 = q + 1; /* not SP: no second test */
			*bent = true;
		}
		/* the line's end, and where the next line starts */
		uptr nx;
		if (__builtin_expect(h1_ld2((const char *)v1) == h1_ld2("\r\n"), 1)) {
			nx = v1 + 2;
		} else if (*v1 == '\n') {
			nx = v1 + 1;
			*bent = true;
		} else {
			break;
		}
		/* trailing OWS: parse_field_line trims it. v1[-1] is the
		 * value's last byte, or, for an empty value, the ':' (not OWS)
		 * or the SP after it, which leaves "name: " CRLF to
		 * parse_field_line too: no test of v1 > v0 for that rare line */
		if (v1[-1] <= ' ')
			break;
		if (n >= nmax)
			break; /* parse_field_line fails it */
		enum arn_h1_hdr_id id = h1_hdr_lookup((const char *)s, nlen);
#if defined(__SSE2__)
		/* A known name needs no test of its bytes: the lookup matched
		 * them with a literal of letters, digits and '-' exactly (only
		 * a letter's case bit is ignored, h1_lit_eq), so they are
		 * tchars. Another name found by its ':' is tested here, for
		 * letters, digits and '-', then, at another byte, by the
		 * table: a byte before the ':' that is no tchar leaves the line
		 * to the scalar path. The lookup comes last, next to the
		 * switch on its answer, so that each name it knows goes to
		 * its case without a second dispatch (about 10 instructions a
		 * known line saved). An empty name (the line's first byte a
		 * ':') is no name the lookup knows: it is tested here too, not
		 * on every line (the reads above stay inside the line's). */
		if (id == ARN_H1_H_OTHER &&
		    (nlen == 0 ||
		     ((uintptr_t)s <= lim16 && nlen < 16 &&
		      (h1_name_odd16(s) & ((1u << nlen) - 1)) && h1_scan_token(s, lim, base) != q)))
			break;
#else
		if (q == s)
			break;
#endif
		if (add_head_field(p, m, h, n, id, (const char *)s, (uint32_t)nlen,
				   (const char *)v0, (uint32_t)(v1 - v0), (const char *)lim) != 0) {
			m->n_hdrs = (uint16_t)(n + 1); /* as add_field counts it */
			*err = true;
			return s;
		}
		n++;
		h++;
		s = nx;
	}
	m->n_hdrs = (uint16_t)n;
	return s;
}

/* the start line, or an empty line before a request line; inlined into
 * the head loop (once a message) */
static inline __attribute__((always_inline)) int
parse_start_line(struct arn_h1_parser *p, const char *s, const char *e, const char **next)
{
	if (p->kind == ARN_H1_REQUEST) {
		/* RFC 9112 2.2: a server ignores empty lines before a request-line */
		if (s < e && (*s == '\r' || *s == '\n')) {
			int r = line_end(p, (uptr)s, (uptr)e, next, ARN_H1_E_START_LINE);
			return r == 1 ? L_EMPTY : r;
		}
		return parse_request_line(p, s, e, next);
	}
	return parse_status_line(p, s, e, next);
}

static int parse_line(struct arn_h1_parser *p, const char *s, const char *e, const char **next)
{
	if (!p->start_done)
		return parse_start_line(p, s, e, next);
	return parse_field_line(p, s, e, next);
}

/* Bytes the current line may still take, and the error when it takes more. */
static size_t line_budget(const struct arn_h1_parser *p, uint32_t so_far, enum arn_h1_err *err)
{
	size_t left = p->max_head - p->head_bytes;
	*err = ARN_H1_E_HEAD_TOO_LARGE;
	if (!p->start_done) {
		size_t sl = p->max_start > so_far ? p->max_start - so_far : 0;
		if (sl < left)
			left = sl;
		if (p->kind == ARN_H1_REQUEST)
			*err = ARN_H1_E_URI_TOO_LONG;
	}
	return left;
}

static void body_start(struct arn_h1_parser *p)
{
	struct arn_h1_msg *m = p->msg;
	if (m->flags & ARN_H1_F_NO_BODY) {
		p->state = ST_END;
	} else if (m->flags & ARN_H1_F_CHUNKED) {
		p->state = ST_CHUNK_SIZE;
		p->remaining = 0;
		p->chunk_digits = 0;
		p->chunk_line_len = 0;
	} else if (m->flags & ARN_H1_F_UNTIL_CLOSE) {
		p->state = ST_BODY_EOF;
	} else {
		p->state = ST_BODY_CL;
		p->remaining = m->content_length;
	}
}

/* Connection elements a message may name (Envoy's HTTP/1 codec refuses
 * a request of 10 or more: sanitizeConnectionHeader). Each may name a
 * field to drop, and a writer compares every field line with them. */
#define H1_MAX_CONN_ELEMENTS 9

/* Does @p m name more than H1_MAX_CONN_ELEMENTS elements over its
 * Connection lines? (Asked of a head whose Connection is not a lone
 * "keep-alive" or "close": ARN_H1_F_HOPS_NAMED.) */
static bool conn_elements_over(const struct arn_h1_msg *m)
{
	unsigned n = 0;
	for (int i = arn_h1_find_id(m, ARN_H1_H_CONNECTION, 0); i >= 0;
	     i = arn_h1_find_id(m, ARN_H1_H_CONNECTION, i + 1)) {
		struct arn_h1_list_iter it;
		struct arn_h1_slice el;
		arn_h1_list_init(&it, m->hdrs[i].value, m->hdrs[i].value_len);
		while (arn_h1_list_next(&it, &el))
			if (++n > H1_MAX_CONN_ELEMENTS)
				return true;
	}
	return false;
}

/* Framing and connection semantics once the head is complete
 * (RFC 9112 6.1-6.3, 9.3; RFC 9110 7.6.1, 7.8, 10.1.1). */
static int finish_head(struct arn_h1_parser *p)
{
	struct arn_h1_msg *m = p->msg;
	uint32_t f = m->flags;

	/* RFC 9110 8.6, 9112 6.1: no Transfer-Encoding and no Content-Length
	 * in a 1xx or 204 response. Envoy's codec refuses the former and a
	 * non-zero length; a zero length is tolerated and not forwarded
	 * (ARN_H1_F_CL_IGNORED). Forwarded as it came, a 204 with a length
	 * could make a client wait for, or eat, the next response's bytes. */
	if (p->kind == ARN_H1_RESPONSE && (m->status < 200 || m->status == 204)) {
		if (f & ARN_H1_F_TE)
			return fail(p, ARN_H1_E_TE_IN_1XX_204);
		if (f & ARN_H1_F_CONTENT_LENGTH) {
			if (m->content_length != 0)
				return fail(p, ARN_H1_E_CL_IN_1XX_204);
			f = (f & ~ARN_H1_F_CONTENT_LENGTH) | ARN_H1_F_CL_IGNORED;
		}
	}
	if (f & ARN_H1_F_TE) {
		if (m->version == 10)
			return fail(p, ARN_H1_E_TE_HTTP10);
		if (!(p->te_bits & TE_LAST_CHUNKED) || (p->te_bits & TE_TWICE))
			return fail(p, ARN_H1_E_TE_NOT_CHUNKED);
		if (p->te_bits & TE_OTHER)
			return fail(p, ARN_H1_E_TE_UNSUPPORTED);
		if (f & ARN_H1_F_CONTENT_LENGTH) {
			if (!(p->opts & ARN_H1_O_ALLOW_CHUNKED_LENGTH))
				return fail(p, ARN_H1_E_CL_AND_TE);
			f &= ~ARN_H1_F_CONTENT_LENGTH;
			f |= ARN_H1_F_CL_IGNORED;
		}
		f |= ARN_H1_F_CHUNKED;
	}
	if (!(f & ARN_H1_F_HOPS_NAMED))
		f |= ARN_H1_F_PLAIN_HOPS;
	if (m->version == 11)
		f |= (f & ARN_H1_F_CONN_CLOSE) ? 0 : ARN_H1_F_KEEP_ALIVE;
	else if ((f & ARN_H1_F_CONN_KEEP_ALIVE) && !(f & ARN_H1_F_CONN_CLOSE))
		f |= ARN_H1_F_KEEP_ALIVE;

	/* as Envoy for a request, but for upgrades too: their fields are
	 * written with the same comparisons. And for a response, which
	 * Envoy does not check (nor does it drop the fields a response's
	 * Connection names): written with the same comparisons, it cost as
	 * much, and an upstream could make each response to a client take
	 * milliseconds of a worker. It fails as any bad response does (502) */
	if ((f & ARN_H1_F_HOPS_NAMED) && conn_elements_over(m))
		return fail(p, ARN_H1_E_CONN_TOKENS);
	if (p->kind == ARN_H1_REQUEST) {
		if (m->host_idx >= 0) {
			const struct arn_h1_header *h = &m->hdrs[m->host_idx];
			struct arn_h1_slice host;
			int port;
			if (!p->host_plain &&
			    arn_h1_authority_split(h->value, h->value_len, &host, &port) != 0)
				return fail(p, ARN_H1_E_HOST_INVALID);
			if (m->target_form != ARN_H1_TF_ABSOLUTE &&
			    m->target_form != ARN_H1_TF_AUTHORITY)
				m->authority = (struct arn_h1_slice){h->value, h->value_len};
		} else if (m->version == 11) {
			return fail(p, ARN_H1_E_HOST_MISSING);
		}
		if (m->method == ARN_H1_M_CONNECT) {
			/* RFC 9110 9.3.6: a CONNECT request has no content */
			if ((f & ARN_H1_F_CHUNKED) ||
			    ((f & ARN_H1_F_CONTENT_LENGTH) && m->content_length > 0))
				return fail(p, ARN_H1_E_CONNECT_BODY);
			f &= ~(ARN_H1_F_CHUNKED | ARN_H1_F_CONTENT_LENGTH);
		}
		if (m->version == 11 && (f & ARN_H1_F_CONN_UPGRADE) && m->upgrade_idx >= 0) {
			const struct arn_h1_header *u = &m->hdrs[m->upgrade_idx];
			f |= ARN_H1_F_UPGRADE;
			if (arn_h1_list_has(u->value, u->value_len, "websocket", 9))
				f |= ARN_H1_F_WEBSOCKET;
			else if (arn_h1_list_has(u->value, u->value_len, "h2c", 3))
				f |= ARN_H1_F_H2C;
		}
		/* RFC 9110 10.1.1: 100-continue in HTTP/1.0 is ignored */
		if (m->version == 10)
			f &= ~ARN_H1_F_EXPECT_CONTINUE;
		if (!(f & (ARN_H1_F_CHUNKED | ARN_H1_F_CONTENT_LENGTH)) ||
		    ((f & ARN_H1_F_CONTENT_LENGTH) && m->content_length == 0))
			f |= ARN_H1_F_NO_BODY;
	} else {
		unsigned st = m->status;
		if (st == 101 || (p->req_method == ARN_H1_M_CONNECT && st >= 200 && st < 300)) {
			f |= ARN_H1_F_TUNNEL | ARN_H1_F_NO_BODY;
			f &= ~ARN_H1_F_KEEP_ALIVE;
		} else if (st < 200 || st == 204 || st == 304 || p->req_method == ARN_H1_M_HEAD) {
			f |= ARN_H1_F_NO_BODY;
		} else if (f & ARN_H1_F_CONTENT_LENGTH) {
			if (m->content_length == 0)
				f |= ARN_H1_F_NO_BODY;
		} else if (!(f & ARN_H1_F_CHUNKED)) {
			f |= ARN_H1_F_UNTIL_CLOSE;
			f &= ~ARN_H1_F_KEEP_ALIVE;
		}
	}
	m->flags = f;
	m->head_len = p->head_bytes;
	body_start(p);
	return 0;
}

/*
 * finish_head for the usual heads, inline in head_first: an HTTP/1.1
 * request in origin or asterisk form with a plain Host and no
 * Transfer-Encoding, CONNECT, Upgrade, or Connection (or TE) that names
 * fields; an HTTP/1.1 2xx response but 204
 * to a request other than CONNECT and HEAD, with a non-zero
 * Content-Length and no Transfer-Encoding. What finish_head does with them
 * is this much: the flags, the authority and the body's state. @return
 * false (nothing done) for any other head: finish_head decides.
 */
_Static_assert(ARN_H1_F_PLAIN_HOPS == ARN_H1_F_HOPS_NAMED << 1, "finish_usual's shift");
_Static_assert(ARN_H1_F_KEEP_ALIVE == ARN_H1_F_CONN_CLOSE >> 1, "finish_usual's shift");

static inline __attribute__((always_inline)) bool finish_usual(struct arn_h1_parser *p)
{
	struct arn_h1_msg *m = p->msg;
	uint32_t f = m->flags;
	/* (a Connection that names elements: finish_head counts them) */
	if (m->version != 11 || (f & (ARN_H1_F_TE | ARN_H1_F_CONN_UPGRADE | ARN_H1_F_HOPS_NAMED)))
		return false;
	/* PLAIN_HOPS unless HOPS_NAMED, KEEP_ALIVE unless CONN_CLOSE: each
	 * flag's neighbour, shifted (asserted below) */
	f |= ((~f & ARN_H1_F_HOPS_NAMED) << 1) | ((~f & ARN_H1_F_CONN_CLOSE) >> 1);
	if (p->kind == ARN_H1_REQUEST) {
		if (m->host_idx < 0 || !p->host_plain || m->method == ARN_H1_M_CONNECT ||
		    m->target_form == ARN_H1_TF_ABSOLUTE)
			return false;
		const struct arn_h1_header *h = &m->hdrs[m->host_idx];
		m->authority = (struct arn_h1_slice){h->value, h->value_len};
		if (!(f & ARN_H1_F_CONTENT_LENGTH) || m->content_length == 0) {
			m->flags = f | ARN_H1_F_NO_BODY;
			p->state = ST_END;
		} else {
			m->flags = f;
			p->state = ST_BODY_CL;
			p->remaining = m->content_length;
		}
	} else {
		unsigned st = m->status;
		if (st - 200u >= 100u || st == 204 || !(f & ARN_H1_F_CONTENT_LENGTH) ||
		    m->content_length == 0 || p->req_method == ARN_H1_M_CONNECT ||
		    p->req_method == ARN_H1_M_HEAD)
			return false;
		m->flags = f;
		p->state = ST_BODY_CL;
		p->remaining = m->content_length;
	}
	m->head_len = p->head_bytes;
	return true;
}

static void begin_message(struct arn_h1_parser *p)
{
	struct arn_h1_msg *m = p->msg;
	struct arn_h1_header *h = m->hdrs;
	uint16_t cap = m->hdr_cap;
	/* not the trailers' pointer and room, the last members: read only
	 * below n_trailers, and set at the last chunk (bench_hcm: a store
	 * less a message) */
	_Static_assert(offsetof(struct arn_h1_msg, trailers) % 16 == 0 &&
			   offsetof(struct arn_h1_msg, trailer_cap) + sizeof(m->trailer_cap) +
				   _Alignof(struct arn_h1_msg) >
			       sizeof(*m),
		       "trailers and trailer_cap are arn_h1_msg's last members");
	http_zero(m, offsetof(struct arn_h1_msg, trailers));
	m->hdrs = h;
	m->hdr_cap = cap;
	m->version = 11;
	m->host_idx = -1;
	m->upgrade_idx = -1;
	/* adjacent fields (arn_h1.h), which gcc stores together: state
	 * to host_plain (chunk_digits as well: body_start sets it again
	 * before a chunk's size), scratch_len and head_bytes */
	p->state = ST_HEAD;
	p->partial = 0;
	p->start_done = 0;
	p->te_bits = 0;
	p->chunk_digits = 0;
	p->grow_denied = 0;
	p->short_room = 0;
	p->host_plain = 0;
	p->scratch_len = 0;
	p->head_bytes = 0;
	p->remaining = 0;
}

static void after_end(struct arn_h1_parser *p)
{
	const struct arn_h1_msg *m = p->msg;
	if (p->kind == ARN_H1_RESPONSE) {
		if (m->flags & ARN_H1_F_TUNNEL)
			p->state = ST_TUNNEL;
		else if (m->status < 200)
			p->state = ST_IDLE; /* the final response follows */
		else
			p->state = (m->flags & ARN_H1_F_KEEP_ALIVE) ? ST_IDLE : ST_CLOSED;
	} else {
		/* after an upgrade or CONNECT the next bytes may be another
		 * protocol: the caller says which, once the upstream answered;
		 * an h2c upgrade is ignored (as Envoy does), the request goes on */
		if (((m->flags & ARN_H1_F_UPGRADE) && !(m->flags & ARN_H1_F_H2C)) ||
		    m->method == ARN_H1_M_CONNECT)
			p->state = ST_UPGRADE_WAIT;
		else
			p->state = (m->flags & ARN_H1_F_KEEP_ALIVE) ? ST_IDLE : ST_CLOSED;
	}
}

/* A complete line was parsed (r: L_START / L_FIELD / L_EMPTY). */
static inline __attribute__((always_inline)) int line_done(struct arn_h1_parser *p, int r,
							   struct arn_h1_ev *ev)
{
	if (r == L_START) {
		p->start_done = 1;
		return R_CONT;
	}
	if (r == L_FIELD)
		return R_CONT;
	if (!p->start_done)
		return R_CONT; /* an empty line before the request line */
	if (p->state == ST_TRAILERS) {
		if (p->msg->n_trailers)
			p->msg->flags |= ARN_H1_F_TRAILERS;
		ev->type = ARN_H1_EV_END;
		after_end(p);
		return R_EVENT;
	}
	if (finish_head(p) != 0)
		return R_ERR;
	ev->type = ARN_H1_EV_HEAD;
	return R_EVENT;
}

/* A spanning line does not fit in scratch: ask for more room when the
 * caller allows it (nothing of the run is consumed), else fail (431). */
static int scratch_short(struct arn_h1_parser *p, struct arn_h1_ev *ev)
{
	if (!p->grow_ok || p->grow_denied)
		return fail(p, ARN_H1_E_SCRATCH_FULL), R_ERR;
	p->short_room = 1;
	ev->type = ARN_H1_EV_NEED_SCRATCH;
	return R_EVENT;
}

/* Start line, header lines or trailer lines. */
/* A trailer line starts at @p s (before @p e): is it one more than the
 * message's trailer slots hold while max_headers allows it, and the
 * parser has not asked for an array yet? Then it asks (ARN_H1_EV_NEED_
 * TRAILERS, once a message), before any byte of the line is taken: the
 * line is parsed into the array the caller gives. The empty line that
 * ends the trailers needs no slot. */
static bool trailer_short(struct arn_h1_parser *p, const char *s, const char *e,
			  struct arn_h1_ev *ev)
{
	struct arn_h1_msg *m = p->msg;
	if (m->n_trailers < m->trailer_cap || m->n_trailers >= p->max_hdrs ||
	    (m->flags & ARN_H1_F_TRAILERS_ASKED) || s == e || *s == '\r' || *s == '\n')
		return false;
	m->flags |= ARN_H1_F_TRAILERS_ASKED;
	ev->type = ARN_H1_EV_NEED_TRAILERS;
	return true;
}

static int head_step(struct arn_h1_parser *p, const char **sp, const char *e, const char *base,
		     struct arn_h1_ev *ev)
{
	const char *s = *sp, *next = NULL;
	enum arn_h1_err lerr;
	int r;

	if (p->partial) {
		/* complete the line held in scratch from this run */
		uint32_t so_far = p->scratch_len - p->line_off;
		size_t budget = line_budget(p, so_far, &lerr);
		size_t avail = (size_t)(e - s);
		size_t scan = avail < budget ? avail : budget;
		const char *lf = scan ? memchr(s, '\n', scan) : NULL;
		size_t take = lf ? (size_t)(lf - s) + 1 : scan;
		if (take > p->scratch_cap - p->scratch_len)
			return scratch_short(p, ev);
		memcpy(p->scratch + p->scratch_len, s, take);
		p->scratch_len += (uint32_t)take;
		p->head_bytes += (uint32_t)take;
		s += take;
		*sp = s;
		const char *ls = p->scratch + p->line_off, *le = p->scratch + p->scratch_len;
		if (!lf) {
			if (scan < avail) {
				/* too long; but an earlier bad byte is reported
				 * first, as it is when the line arrives whole */
				if (parse_line(p, ls, le, &next) == L_ERR)
					return R_ERR;
				return fail(p, lerr), R_ERR;
			}
			return R_AGAIN;
		}
		p->partial = 0;
		r = parse_line(p, ls, le, &next);
		if (r == L_ERR)
			return R_ERR;
		if (r == L_INCOMPLETE) /* cannot happen: the line ends with LF */
			return fail(p, ARN_H1_E_START_LINE), R_ERR;
		r = line_done(p, r, ev);
		if (r != R_CONT)
			return r;
	}
	const char *lim = e;
	while (s < e) {
		if (!p->start_done) {
			size_t budget = line_budget(p, 0, &lerr);
			lim = (size_t)(e - s) > budget ? s + budget : e;
			r = parse_start_line(p, s, lim, &next);
			if (r == L_INCOMPLETE)
				goto incomplete;
			if (r == L_ERR)
				return R_ERR;
			p->head_bytes += (uint32_t)(next - s);
			s = next;
			*sp = s;
			r = line_done(p, r, ev);
			if (r != R_CONT)
				return r;
			continue;
		}
		/* Field lines: each may take what the head has left, so one limit
		 * serves this run's lines (a line starting at s may take
		 * max_head - head_bytes - (s - s0) bytes, which ends at the same
		 * place for all of them), and head_bytes is counted once at the
		 * end of the lines, not per line. */
		const char *s0 = s;
		size_t left = p->max_head - p->head_bytes;
		lerr = ARN_H1_E_HEAD_TOO_LARGE;
		lim = (size_t)(e - s) > left ? s + left : e;
		unsigned nmax = p->max_hdrs < p->msg->hdr_cap ? p->max_hdrs : p->msg->hdr_cap;
		do {
			bool ferr = false;
			if (p->state == ST_HEAD)
				s = (const char *)fields_fast(p, (uptr)s, (uptr)lim, (uptr)base,
							      nmax, &ferr, &(bool){false});
			if (ferr) {
				r = L_ERR;
				break;
			}
			if (s == e) {
				r = L_FIELD;
				break;
			}
			if (__builtin_expect(p->state == ST_TRAILERS, 0) &&
			    trailer_short(p, s, lim, ev)) {
				r = L_ASK;
				break;
			}
			r = parse_field_line(p, s, lim, &next);
			if (__builtin_expect(r != L_FIELD, 0))
				break;
			s = next;
		} while (s < e);
		p->head_bytes += (uint32_t)(s - s0);
		*sp = s;
		if (r == L_FIELD)
			break; /* the run ended with a line */
		if (r == L_ASK)
			return R_EVENT; /* NEED_TRAILERS: the line at s is not taken */
		if (r == L_INCOMPLETE)
			goto incomplete;
		if (r == L_ERR)
			return R_ERR;
		p->head_bytes += (uint32_t)(next - s); /* the empty line */
		s = next;
		*sp = s;
		r = line_done(p, r, ev);
		if (r != R_CONT)
			return r;
	}
	*sp = s;
	return R_AGAIN;

incomplete:
	if (lim < e)
		return fail(p, lerr), R_ERR;
	if (p->state == ST_TRAILERS && trailer_short(p, s, e, ev)) {
		*sp = s; /* before the line's part goes to scratch */
		return R_EVENT;
	}
	size_t part = (size_t)(e - s);
	if (!p->scratch) {
		*sp = s;
		ev->type = ARN_H1_EV_NEED_SCRATCH;
		return R_EVENT;
	}
	if (part > p->scratch_cap - p->scratch_len) {
		*sp = s;
		return scratch_short(p, ev);
	}
	memcpy(p->scratch + p->scratch_len, s, part);
	p->line_off = p->scratch_len;
	p->scratch_len += (uint32_t)part;
	p->head_bytes += (uint32_t)part;
	p->partial = 1;
	*sp = e;
	return R_AGAIN;
}

/*
 * The first run of a message when the head is whole in it (the usual
 * case): the start line, the field lines fields_fast takes and the empty
 * line, one after the other, without head_step's line loop, its budgets
 * recomputed per line and line_done's dispatch. Each step is the one
 * head_step makes there, with the same limits, so what it finds is the
 * same; the first line it does not take (an empty line before a request
 * line, a line the run or a limit cuts, a field line fields_fast leaves)
 * is left to head_step from that line's start, the parser as head_step
 * would have left it there. @return R_EVENT (HEAD), R_ERR, or R_CONT:
 * head_step goes on from *sp.
 */
static inline __attribute__((always_inline)) int head_first(struct arn_h1_parser *p,
							    const char **sp, const char *e,
							    const char *base, struct arn_h1_ev *ev)
{
	const char *s0 = *sp, *next = NULL;
	/* line_budget's, with nothing of the head taken */
	size_t budget = p->max_start < p->max_head ? p->max_start : p->max_head;
	const char *lim = (size_t)(e - s0) > budget ? s0 + budget : e;
	/* parse_start_line's, with the lines inline */
	int r;
	if (p->kind == ARN_H1_REQUEST) {
		if (*s0 == '\r' || *s0 == '\n')
			return R_CONT; /* an empty line first: head_step */
		r = request_line(p, s0, lim, &next);
	} else {
		r = status_line(p, s0, lim, &next);
	}
	if (r != L_START)
		return r == L_ERR ? R_ERR : R_CONT;
	p->start_done = 1;
	const char *s1 = next;
	/* the lines after it may take what the head has left (head_step) */
	size_t left = p->max_head - (size_t)(s1 - s0);
	lim = (size_t)(e - s1) > left ? s1 + left : e;
	unsigned nmax = p->max_hdrs < p->msg->hdr_cap ? p->max_hdrs : p->msg->hdr_cap;
	bool ferr = false;
	bool bent = false;
	const char *s =
	    (const char *)fields_fast(p, (uptr)s1, (uptr)lim, (uptr)base, nmax, &ferr, &bent);
	/* the empty line, as parse_field_line takes it; what the head took
	 * stored once, with it or where head_step goes on */
	size_t el;
	if (__builtin_expect(ferr, 0))
		el = 0;
	else if (lim - s >= 2 && h1_ld2(s) == h1_ld2("\r\n"))
		el = 2;
	else if (s < lim && *s == '\n')
		el = 1;
	else
		el = 0;
	p->head_bytes = (uint32_t)(s + el - s0);
	*sp = s + el;
	if (el == 0)
		return ferr ? R_ERR : R_CONT;
	/* every line in this run and fields_fast's (head_step's heads never
	 * have the flag): each "name: value" CRLF when none is shorter */
	if (!bent)
		p->msg->flags |= ARN_H1_F_FIELDS_WHOLE;
	if (!finish_usual(p) && finish_head(p) != 0)
		return R_ERR;
	ev->type = ARN_H1_EV_HEAD;
	return R_EVENT;
}

/* Chunked framing (RFC 9112 7.1): chunk-size [ chunk-ext ] CRLF data CRLF
 * ... last-chunk trailer-section CRLF. CRLF is required here (no bare LF):
 * lenient chunk parsing is where most smuggling variants live. */
static int chunk_step(struct arn_h1_parser *p, const char **sp, const char *e, struct arn_h1_ev *ev)
{
	uptr q = (uptr)*sp, end = (uptr)e;
	for (;;) {
		if (p->state == ST_CHUNK_DATA) {
			if (q == end)
				break;
			size_t n = (size_t)(end - q);
			if (n > p->remaining)
				n = (size_t)p->remaining;
			ev->type = ARN_H1_EV_BODY;
			ev->data = (const char *)q;
			ev->len = n;
			p->remaining -= n;
			p->msg->body_len += n;
			if (p->remaining == 0)
				p->state = ST_CHUNK_DATA_CR;
			*sp = (const char *)q + n;
			return R_EVENT;
		}
		if (q == end)
			break;
		unsigned char c = *q;
		if (p->state <= ST_CHUNK_LF && ++p->chunk_line_len > p->max_chunk_line)
			return fail(p, ARN_H1_E_CHUNK_EXT), R_ERR;
		switch (p->state) {
		case ST_CHUNK_SIZE:
			if (h1_is(c, ARN_H1_C_HEX)) {
				if (p->remaining >> 60)
					return fail(p, ARN_H1_E_CHUNK_OVERFLOW), R_ERR;
				unsigned d = c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
				p->remaining = (p->remaining << 4) | d;
				p->chunk_digits = 1;
			} else if (c == 0) {
				return fail(p, ARN_H1_E_NUL), R_ERR;
			} else if (!p->chunk_digits) {
				return fail(p, ARN_H1_E_CHUNK_SIZE), R_ERR;
			} else if (c == '\r') {
				p->state = ST_CHUNK_LF;
			} else if (c == ';') {
				p->state = ST_CHUNK_EXT;
			} else if (c == ' ' || c == '\t') {
				p->state = ST_CHUNK_BWS;
			} else if (c == '\n') {
				return fail(p, ARN_H1_E_CHUNK_CRLF), R_ERR;
			} else {
				return fail(p, ARN_H1_E_CHUNK_SIZE), R_ERR;
			}
			break;
		case ST_CHUNK_BWS: /* BWS is allowed only before ';' */
			if (c == ';')
				p->state = ST_CHUNK_EXT;
			else if (c == 0)
				return fail(p, ARN_H1_E_NUL), R_ERR;
			else if (c != ' ' && c != '\t')
				return fail(p, ARN_H1_E_CHUNK_SIZE), R_ERR;
			break;
		case ST_CHUNK_EXT:
			/* extensions are ignored (RFC 9112 7.1.1) but must be text */
			if (c == '\r')
				p->state = ST_CHUNK_LF;
			else if (c == 0)
				return fail(p, ARN_H1_E_NUL), R_ERR;
			else if (c == '\n')
				return fail(p, ARN_H1_E_CHUNK_CRLF), R_ERR;
			else if (!h1_is(c, ARN_H1_C_VALUE))
				return fail(p, ARN_H1_E_CHUNK_EXT), R_ERR;
			break;
		case ST_CHUNK_LF:
			if (c != '\n')
				return fail(p, ARN_H1_E_BARE_CR), R_ERR;
			if (p->remaining == 0) {
				/* last-chunk: trailer lines follow, parsed like a
				 * head, into the slots the head left (a message
				 * built by hand may have none) */
				struct arn_h1_msg *m = p->msg;
				m->trailers = m->hdrs ? m->hdrs + m->n_hdrs : NULL;
				m->trailer_cap = (uint16_t)(m->hdr_cap - m->n_hdrs);
				p->state = ST_TRAILERS;
				p->head_bytes = 0;
				p->partial = 0;
				*sp = (const char *)q + 1;
				return R_CONT;
			}
			p->state = ST_CHUNK_DATA;
			break;
		case ST_CHUNK_DATA_CR:
			if (c != '\r')
				return fail(p, ARN_H1_E_CHUNK_CRLF), R_ERR;
			p->state = ST_CHUNK_DATA_LF;
			break;
		case ST_CHUNK_DATA_LF:
			if (c != '\n')
				return fail(p, ARN_H1_E_CHUNK_CRLF), R_ERR;
			p->state = ST_CHUNK_SIZE;
			p->remaining = 0;
			p->chunk_digits = 0;
			p->chunk_line_len = 0;
			break;
		}
		q++;
	}
	*sp = (const char *)q;
	return R_AGAIN;
}

size_t h1_parser_chunked_end(struct arn_h1_parser *p, const char *buf, size_t len)
{
	if (p->state != ST_CHUNK_DATA_CR || len < 7 || memcmp(buf, "\r\n0\r\n\r\n", 7) != 0 ||
	    p->max_chunk_line < 3 || p->max_head < 2)
		return 0;
	/* what chunk_step and the trailers' empty line leave: the size line
	 * "0\r\n", no trailer (n_trailers is 0, ARN_H1_F_TRAILERS stays
	 * clear), the END given */
	p->remaining = 0;
	p->chunk_digits = 1;
	p->chunk_line_len = 3;
	p->head_bytes = 2;
	p->partial = 0;
	after_end(p);
	return 7;
}

void arn_h1_msg_init(struct arn_h1_msg *m, struct arn_h1_header *hdrs, uint16_t cap)
{
	http_zero(m, sizeof(*m));
	m->hdrs = hdrs;
	m->hdr_cap = cap;
	m->host_idx = -1;
	m->upgrade_idx = -1;
}

void arn_h1_msg_set_trailers(struct arn_h1_msg *m, struct arn_h1_header *arr, uint16_t cap)
{
	unsigned n = m->n_trailers < cap ? m->n_trailers : cap;
	if (n && arr != m->trailers)
		memmove(arr, m->trailers, n * sizeof(*arr));
	m->n_trailers = (uint16_t)n;
	m->trailers = arr;
	m->trailer_cap = cap;
}

void arn_h1_parser_no_trailers(struct arn_h1_parser *p)
{
	fail(p, ARN_H1_E_TOO_MANY_HEADERS);
}

void arn_h1_parser_init(struct arn_h1_parser *p, enum arn_h1_kind kind,
			const struct arn_h1_config *cfg, struct arn_h1_msg *msg)
{
	static const struct arn_h1_config zero;
	if (!cfg)
		cfg = &zero;
	memset(p, 0, sizeof(*p));
	p->msg = msg;
	p->kind = (uint8_t)kind;
	p->state = ST_IDLE;
	p->req_method = ARN_H1_M_GET;
	p->max_head = cfg->max_head_bytes ? cfg->max_head_bytes : ARN_H1_DEFAULT_MAX_HEAD;
	p->max_start = cfg->max_start_line ? cfg->max_start_line : p->max_head;
	p->max_hdrs = cfg->max_headers ? cfg->max_headers : ARN_H1_DEFAULT_MAX_HEADERS;
	if (p->max_hdrs > INT16_MAX) /* host_idx / upgrade_idx are int16_t */
		p->max_hdrs = INT16_MAX;
	p->max_chunk_line =
	    cfg->max_chunk_line ? cfg->max_chunk_line : ARN_H1_DEFAULT_MAX_CHUNK_LINE;
	p->opts = cfg->opts;
}

int arn_h1_parser_set_scratch(struct arn_h1_parser *p, char *buf, uint32_t cap)
{
	return h1_parser_set_scratch(p, buf, cap);
}

bool arn_h1_parser_scratch_busy(const struct arn_h1_parser *p)
{
	return p->scratch_len > 0;
}

void arn_h1_parser_allow_grow(struct arn_h1_parser *p, bool on)
{
	p->grow_ok = on;
}

bool arn_h1_parser_scratch_short(const struct arn_h1_parser *p)
{
	return p->short_room;
}

int arn_h1_parser_grow_scratch(struct arn_h1_parser *p, char *buf, uint32_t cap)
{
	if (buf == NULL) {
		p->grow_denied = 1;
		p->short_room = 0;
		return 0;
	}
	uint32_t plen = p->partial ? p->scratch_len - p->line_off : 0;
	if (cap < plen)
		return -ENOSPC;
	if (plen)
		memmove(buf, p->scratch + p->line_off, plen);
	p->scratch = buf;
	p->scratch_cap = cap;
	p->line_off = 0;
	p->scratch_len = plen;
	p->short_room = 0;
	return 0;
}

void arn_h1_parser_expect(struct arn_h1_parser *p, enum arn_h1_method req_method)
{
	p->req_method = (uint8_t)req_method;
}

void arn_h1_parser_tunnel(struct arn_h1_parser *p)
{
	if (p->state != ST_ERROR)
		p->state = ST_TUNNEL;
}

void arn_h1_parser_resume(struct arn_h1_parser *p)
{
	if (p->state == ST_UPGRADE_WAIT)
		p->state = (p->msg->flags & ARN_H1_F_KEEP_ALIVE) ? ST_IDLE : ST_CLOSED;
}

enum arn_h1_err arn_h1_parser_error(const struct arn_h1_parser *p)
{
	return (enum arn_h1_err)p->err;
}

bool arn_h1_parser_in_trailers(const struct arn_h1_parser *p)
{
	return p->state == ST_TRAILERS;
}

bool arn_h1_parser_in_chunk_lines(const struct arn_h1_parser *p)
{
	switch (p->state) {
	case ST_CHUNK_SIZE:
	case ST_CHUNK_BWS:
	case ST_CHUNK_EXT:
	case ST_CHUNK_LF:
	case ST_CHUNK_DATA_CR:
	case ST_CHUNK_DATA_LF:
	case ST_TRAILERS:
		return true;
	default:
		return false;
	}
}

static __attribute__((noinline)) ssize_t parse_run(struct arn_h1_parser *p, const char *buf,
						   size_t len, struct arn_h1_ev *ev)
{
	const char *s = buf, *e = buf + len;
	int r = R_AGAIN;

	ev->type = ARN_H1_EV_NONE;
	ev->data = NULL;
	ev->len = 0;
	/* a message's first run, the usual call: to its case without the
	 * switch's table jump (about 6 instructions a head) */
	if (p->state == ST_IDLE)
		goto idle;
	for (;;) {
		switch (p->state) {
		case ST_IDLE:
		idle:
			if (s == e)
				return ARN_AGAIN;
			begin_message(p); /* (state: ST_HEAD) */
			r = head_first(p, &s, e, buf, ev);
			if (r != R_CONT)
				break;
			/* fallthrough */
		case ST_HEAD:
		case ST_TRAILERS:
			r = head_step(p, &s, e, buf, ev);
			break;
		case ST_BODY_CL: {
			if (s == e)
				return ARN_AGAIN;
			size_t n = (size_t)(e - s);
			if (n > p->remaining)
				n = (size_t)p->remaining;
			ev->type = ARN_H1_EV_BODY;
			ev->data = s;
			ev->len = n;
			p->remaining -= n;
			p->msg->body_len += n;
			if (p->remaining == 0)
				p->state = ST_END;
			s += n;
			r = R_EVENT;
			break;
		}
		case ST_BODY_EOF:
		case ST_TUNNEL:
			if (s == e)
				return ARN_AGAIN;
			ev->type = ARN_H1_EV_BODY;
			ev->data = s;
			ev->len = (size_t)(e - s);
			if (p->state == ST_BODY_EOF)
				p->msg->body_len += ev->len;
			s = e;
			r = R_EVENT;
			break;
		case ST_CHUNK_SIZE:
		case ST_CHUNK_BWS:
		case ST_CHUNK_EXT:
		case ST_CHUNK_LF:
		case ST_CHUNK_DATA:
		case ST_CHUNK_DATA_CR:
		case ST_CHUNK_DATA_LF:
			r = chunk_step(p, &s, e, ev);
			break;
		case ST_END:
			ev->type = ARN_H1_EV_END;
			after_end(p);
			r = R_EVENT;
			break;
		case ST_UPGRADE_WAIT:
			return s == e ? ARN_AGAIN : -EBUSY;
		case ST_CLOSED:
			return s == e ? ARN_AGAIN : -EPIPE;
		default:
			return -EBADMSG;
		}
		if (r == R_EVENT)
			return s - buf;
		if (r == R_AGAIN)
			return ARN_AGAIN;
		if (r == R_ERR)
			return -EBADMSG;
	}
}

ssize_t arn_h1_parse(struct arn_h1_parser *p, const char *buf, size_t len, struct arn_h1_ev *ev)
{
	/* END after a head without a body or after the last body byte needs
	 * no input: the connection manager asks for it with none, once or
	 * twice a message, and here it costs no frame of the parser's loop
	 * (which saves seven registers) */
	if (p->state == ST_END) {
		ev->type = ARN_H1_EV_END;
		ev->data = NULL;
		ev->len = 0;
		after_end(p);
		return 0;
	}
	/* and a Content-Length body's bytes (the event after most heads of
	 * responses) are as few steps: likewise outside the loop's frame */
	if (p->state == ST_BODY_CL && len)
		return (ssize_t)h1_parser_body_take(p, buf, len, ev);
	return parse_run(p, buf, len, ev);
}

int arn_h1_parse_eof(struct arn_h1_parser *p, struct arn_h1_ev *ev)
{
	ev->type = ARN_H1_EV_NONE;
	ev->data = NULL;
	ev->len = 0;
	switch (p->state) {
	case ST_IDLE:
	case ST_CLOSED:
	case ST_TUNNEL:
	case ST_UPGRADE_WAIT:
		return 0;
	case ST_HEAD:
		/* only empty lines so far: a clean close between requests */
		if (!p->start_done && !p->partial) {
			p->state = ST_CLOSED;
			return 0;
		}
		break;
	case ST_BODY_EOF:
	case ST_END:
		ev->type = ARN_H1_EV_END;
		if (p->state == ST_BODY_EOF)
			p->state = ST_CLOSED;
		else
			after_end(p);
		return 0;
	case ST_ERROR:
		return -EBADMSG;
	default:
		break;
	}
	if (p->partial) {
		/* A partial line is only parsed once its LF arrives; had it come
		 * whole, a bad byte in it would have been found already. Report
		 * that, not the truncation, so the cut does not matter. */
		const char *next;
		if (parse_line(p, p->scratch + p->line_off, p->scratch + p->scratch_len, &next) ==
		    L_ERR)
			return -EBADMSG;
	}
	fail(p, ARN_H1_E_TRUNCATED);
	return -EBADMSG;
}
