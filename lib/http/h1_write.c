/*
 * HTTP/1 serializer: heads into caller buffers (mbuf-sized, refilled on
 * demand), header rewriting in one pass over the parsed message, and
 * chunked framing whose prefixes fit in an mbuf's headroom.
 */
#include <string.h>

#include "arn_http_reason.h"
#include "h1_int.h"

void arn_h1_wbuf_init(struct arn_h1_wbuf *w, char *buf, uint32_t cap,
		      int (*refill)(struct arn_h1_wbuf *w), void *arg)
{
	w->p = buf;
	w->len = 0;
	w->cap = buf ? cap : 0;
	w->err = 0;
	w->refill = refill;
	w->arg = arg;
	w->total = 0;
}

static int put_slow(struct arn_h1_wbuf *w, const char *s, size_t n)
{
	while (n) {
		uint32_t room = w->cap - w->len;
		if (room == 0) {
			int r = w->refill ? w->refill(w) : -ENOBUFS;
			if (r == 0 && w->cap == w->len)
				r = -ENOBUFS;
			if (r != 0) {
				w->err = r;
				w->cap = w->len; /* no room after an error (room_for) */
				return r;
			}
			continue;
		}
		size_t k = n < room ? n : room;
		memcpy(w->p + w->len, s, k);
		w->len += (uint32_t)k;
		w->total += k;
		s += k;
		n -= k;
	}
	return 0;
}

int arn_h1_put(struct arn_h1_wbuf *w, const void *s, size_t n)
{
	if (w->err)
		return w->err;
	if (n <= (size_t)(w->cap - w->len)) {
		h1_copy(w->p + w->len, s, n);
		w->len += (uint32_t)n;
		w->total += n;
		return 0;
	}
	return put_slow(w, s, n);
}

/* Does the current buffer hold @p need more bytes? */
static inline bool room_fits(const struct arn_h1_wbuf *w, size_t need)
{
	return need <= (size_t)(w->cap - w->len);
}

/* @p need bytes taken from the current buffer, which holds them */
static inline char *room_take(struct arn_h1_wbuf *w, size_t need)
{
	char *d = w->p + w->len;
	w->len += (uint32_t)need;
	w->total += need;
	return d;
}

/* The first buffer of a writer that starts empty (the connection
 * manager's mbuf chains do), as arn_h1_put would get it; out of line so
 * that the writers' fast path saves no registers for it. @return room or
 * NULL. */
static __attribute__((noinline, cold)) char *room_refill(struct arn_h1_wbuf *w, size_t need)
{
	if (w->err || w->len != w->cap || !w->refill)
		return NULL;
	int r = w->refill(w);
	if (r != 0 || w->cap == w->len) {
		w->err = r ? r : -ENOBUFS;
		w->cap = w->len;
		return NULL;
	}
	return room_fits(w, need) ? room_take(w, need) : NULL;
}

/* Room for @p need more bytes in the current buffer (and no error: a
 * writer in error has no room, cap = len): the writers then fill a whole
 * line with one bounds check and inline copies (a line through arn_h1_put
 * cost ~75 instructions a piece). */
static inline char *room_for(struct arn_h1_wbuf *w, size_t need)
{
	if (__builtin_expect(!room_fits(w, need), 0))
		return room_refill(w, need);
	return room_take(w, need);
}

/* "METHOD target HTTP/1.x\r\n" at d, which has room for it */
static inline __attribute__((always_inline)) void put_request_line(char *d, const char *method,
								   size_t mlen, const char *target,
								   size_t tlen, int minor)
{
	h1_copy(d, method, mlen);
	d += mlen;
	*d++ = ' ';
	h1_copy(d, target, tlen);
	d += tlen;
	h1_copy(d, minor ? " HTTP/1.1\r\n" : " HTTP/1.0\r\n", 11);
}

/* A request line that does not fit in the current buffer: out of line,
 * so that the usual one saves no registers for these calls (~15
 * instructions a request) */
static __attribute__((noinline, cold)) int request_line_slow(struct arn_h1_wbuf *w,
							     const char *method, size_t mlen,
							     const char *target, size_t tlen,
							     int minor)
{
	char *d = room_refill(w, mlen + tlen + 12);
	if (d) {
		put_request_line(d, method, mlen, target, tlen, minor);
		return 0;
	}
	arn_h1_put(w, method, mlen);
	arn_h1_put(w, " ", 1);
	arn_h1_put(w, target, tlen);
	return arn_h1_put(w, minor ? " HTTP/1.1\r\n" : " HTTP/1.0\r\n", 11);
}

int arn_h1_write_request_line(struct arn_h1_wbuf *w, const char *method, size_t mlen,
			      const char *target, size_t tlen, int minor)
{
	size_t need = mlen + tlen + 12;
	if (__builtin_expect(!room_fits(w, need), 0))
		return request_line_slow(w, method, mlen, target, tlen, minor);
	put_request_line(room_take(w, need), method, mlen, target, tlen, minor);
	return 0;
}

int arn_h1_write_request_line_of(struct arn_h1_wbuf *w, const struct arn_h1_msg *m,
				 const char *target, size_t tlen)
{
	const char *mp = m->method_name.p;
	size_t mlen = m->method_name.len;
	/* (the method's slice tested too: a message whose method was set
	 * after the parse is written from its fields) */
	if (__builtin_expect((m->flags & ARN_H1_F_LINE_CRLF) && target == m->target.p &&
				 tlen == m->target.len && mp + mlen + 1 == target,
			     1)) {
		size_t n = mlen + tlen + 12; /* SP, SP "HTTP/1.1" CRLF */
		if (__builtin_expect(!room_fits(w, n), 0))
			return arn_h1_put(w, mp, n);
		h1_copy(room_take(w, n), mp, n);
		return 0;
	}
	return arn_h1_write_request_line(w, mp, mlen, target, tlen, 1);
}

/* the usual status line, whole */
static const char status_ok[] = "HTTP/1.1 200 OK\r\n";

/* Any status line but the usual one, which does not fit or is not
 * "HTTP/1.1 200 OK": out of line, so that the usual one saves no
 * registers for it (~10 instructions a response) */
static __attribute__((noinline)) int status_line_any(struct arn_h1_wbuf *w, unsigned status,
						     const char *reason, size_t rlen, int minor)
{
	if (status == 200 && !reason && minor) {
		char *d = room_for(w, sizeof(status_ok) - 1);
		if (d) {
			h1_copy(d, status_ok, sizeof(status_ok) - 1);
			return 0;
		}
		return arn_h1_put(w, status_ok, sizeof(status_ok) - 1);
	}
	char b[13] = "HTTP/1.1 000 ";
	if (!minor)
		b[7] = '0';
	if (status > 999)
		status = 500;
	b[9] = (char)('0' + status / 100);
	b[10] = (char)('0' + status / 10 % 10);
	b[11] = (char)('0' + status % 10);
	if (!reason) {
		reason = arn_http_reason(status);
		rlen = strlen(reason);
	}
	char *d = room_for(w, sizeof(b) + rlen + 2);
	if (d) {
		h1_copy(d, b, sizeof(b));
		h1_copy(d + sizeof(b), reason, rlen);
		d[sizeof(b) + rlen] = '\r';
		d[sizeof(b) + rlen + 1] = '\n';
		return 0;
	}
	arn_h1_put(w, b, sizeof(b));
	arn_h1_put(w, reason, rlen);
	return arn_h1_put(w, "\r\n", 2);
}

int arn_h1_write_status_line(struct arn_h1_wbuf *w, unsigned status, const char *reason,
			     size_t rlen, int minor)
{
	/* the usual line whole where it fits: no digits, no reason lookup
	 * and strlen (~85 instructions a response); its bytes copied before
	 * the buffer's lengths move (room_take's order costs 2 more here) */
	if (__builtin_expect(
		status == 200 && !reason && minor && room_fits(w, sizeof(status_ok) - 1), 1)) {
		h1_copy(w->p + w->len, status_ok, sizeof(status_ok) - 1);
		w->len += (uint32_t)(sizeof(status_ok) - 1);
		w->total += sizeof(status_ok) - 1;
		return 0;
	}
	return status_line_any(w, status, reason, rlen, minor);
}

/* "name: value\r\n" at d, which has room for it */
static inline __attribute__((always_inline)) void put_line(char *d, const char *name, size_t nlen,
							   const char *value, size_t vlen)
{
	h1_copy(d, name, nlen);
	d += nlen;
	*d++ = ':';
	*d++ = ' ';
	h1_copy(d, value, vlen);
	d += vlen;
	*d++ = '\r';
	*d = '\n';
}

/* A line that does not fit in the current buffer: the first buffer of an
 * empty writer, else piece by piece across buffers. */
static __attribute__((noinline, cold)) int write_header_slow(struct arn_h1_wbuf *w,
							     const char *name, size_t nlen,
							     const char *value, size_t vlen)
{
	char *d = room_refill(w, nlen + vlen + 4);
	if (d) {
		put_line(d, name, nlen, value, vlen);
		return 0;
	}
	arn_h1_put(w, name, nlen);
	arn_h1_put(w, ": ", 2);
	arn_h1_put(w, value, vlen);
	return arn_h1_put(w, "\r\n", 2);
}

/* One field line; inlined into the head writer, where it runs for every
 * line (a call with its register saves cost ~17 instructions a line). The
 * usual case has one bounds check for the whole line, and no test of
 * room_for's result: what does not fit goes out of line whole. */
static inline __attribute__((always_inline)) int
write_line(struct arn_h1_wbuf *w, const char *name, size_t nlen, const char *value, size_t vlen)
{
	size_t need = nlen + vlen + 4;
	if (__builtin_expect(need > (size_t)(w->cap - w->len), 0))
		return write_header_slow(w, name, nlen, value, vlen);
	char *d = w->p + w->len;
	w->len += (uint32_t)need;
	w->total += need;
	put_line(d, name, nlen, value, vlen);
	return 0;
}

/* An edit's line: a pre-built one (edit.line) in one copy, else from its
 * name and value. */
static inline __attribute__((always_inline)) void write_edit(struct arn_h1_wbuf *w,
							     const struct arn_h1_edit *e)
{
	if (e->line) {
		size_t need = (size_t)e->name_len + e->value_len + 4;
		if (__builtin_expect(need > (size_t)(w->cap - w->len), 0)) {
			arn_h1_put(w, e->name, need); /* across buffers, as lines go */
			return;
		}
		char *d = w->p + w->len;
		w->len += (uint32_t)need;
		w->total += need;
		h1_copy(d, e->name, need);
		return;
	}
	write_line(w, e->name, e->name_len, e->value, e->value_len);
}

int arn_h1_write_header(struct arn_h1_wbuf *w, const char *name, size_t nlen, const char *value,
			size_t vlen)
{
	return write_line(w, name, nlen, value, vlen);
}

int arn_h1_write_end(struct arn_h1_wbuf *w)
{
	char *d = room_for(w, 2);
	if (d) {
		d[0] = '\r';
		d[1] = '\n';
		return 0;
	}
	return arn_h1_put(w, "\r\n", 2);
}

int arn_h1_write_fields(struct arn_h1_wbuf *w, const struct arn_h1_header *h, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		arn_h1_write_header(w, h[i].name, h[i].name_len, h[i].value, h[i].value_len);
	return w->err;
}

/* Fields named in Connection (other than close / keep-alive / upgrade),
 * gathered once per head instead of once per field. */
#define MAX_NOMINATED 8
struct nominated {
	struct arn_h1_slice tok[MAX_NOMINATED];
	unsigned n;
	bool overflow; /* more than MAX_NOMINATED: fall back to scanning */
};

static void nominated_collect(const struct arn_h1_msg *m, struct nominated *nm)
{
	nm->n = 0;
	nm->overflow = false;
	for (int i = arn_h1_find_id(m, ARN_H1_H_CONNECTION, 0); i >= 0;
	     i = arn_h1_find_id(m, ARN_H1_H_CONNECTION, i + 1)) {
		struct arn_h1_list_iter it;
		struct arn_h1_slice el;
		arn_h1_list_init(&it, m->hdrs[i].value, m->hdrs[i].value_len);
		/* the usual value names nothing to drop */
		const struct arn_h1_header *h = &m->hdrs[i];
		if (arn_h1_eq_nocase(h->value, h->value_len, "keep-alive", 10) ||
		    arn_h1_eq_nocase(h->value, h->value_len, "close", 5))
			continue;
		while (arn_h1_list_next(&it, &el)) {
			/* known names are handled by id below (and never dropped
			 * because Connection names them) */
			if (arn_h1_hdr_lookup(el.p, el.len) != ARN_H1_H_OTHER ||
			    arn_h1_eq_nocase(el.p, el.len, "close", 5))
				continue;
			if (nm->n == MAX_NOMINATED) {
				nm->overflow = true;
				return;
			}
			nm->tok[nm->n++] = el;
		}
	}
}

/* Hop-by-hop fields (RFC 9110 7.6.1). Fields named in Connection are
 * dropped too, but only unrecognised ones: "Connection: x-forwarded-for"
 * or "Connection: content-length" must not let a client strip what the
 * proxy relies on (the hop-by-hop header abuse trick). Out of line: the
 * head writer asks it only of a field without an id where Connection
 * named some (its known hop-by-hop ids are a mask there); inlined, its
 * loop cost the writer's field loop registers (bench_hcm: 15 instructions
 * a request). */
static __attribute__((noinline)) bool is_hop(const struct arn_h1_msg *m,
					     const struct arn_h1_header *h, unsigned flags,
					     const struct nominated *nm)
{
	switch (h->id) {
	case ARN_H1_H_CONNECTION:
	case ARN_H1_H_KEEP_ALIVE:
	case ARN_H1_H_PROXY_CONNECTION:
	case ARN_H1_H_TE:
	case ARN_H1_H_TRANSFER_ENCODING:
	case ARN_H1_H_HTTP2_SETTINGS:
		return true;
	case ARN_H1_H_UPGRADE:
		return !(flags & ARN_H1_W_UPGRADE);
	case ARN_H1_H_OTHER:
		if (nm->overflow)
			return arn_h1_msg_has_token(m, ARN_H1_H_CONNECTION, h->name, h->name_len);
		for (unsigned i = 0; i < nm->n; i++)
			if (arn_h1_eq_nocase(nm->tok[i].p, nm->tok[i].len, h->name, h->name_len))
				return true;
		return false;
	default:
		return false;
	}
}

bool arn_h1_trailer_dropped(const struct arn_h1_header *h)
{
	if (h->name_len && h->name[0] == ':')
		return true;
	switch (h->id) {
	case ARN_H1_H_CONNECTION:
	case ARN_H1_H_KEEP_ALIVE:
	case ARN_H1_H_PROXY_CONNECTION:
	case ARN_H1_H_TE:
	case ARN_H1_H_TRANSFER_ENCODING:
	case ARN_H1_H_HTTP2_SETTINGS:
	case ARN_H1_H_UPGRADE:
	case ARN_H1_H_CONTENT_LENGTH:
	case ARN_H1_H_HOST:
		return true;
	default:
		return false;
	}
}

/* "name: v1,v2,...,add" from every line named like hdrs[first], joined as
 * Envoy's header map joins repeated lines: an empty value adds nothing, not
 * even its comma (an empty first line used to glue the added value to the
 * last element: ",1.2.3.4198.18.0.1"). */
static void write_joined(struct arn_h1_wbuf *w, const struct arn_h1_msg *m, int first,
			 const struct arn_h1_edit *e)
{
	const struct arn_h1_header *h = &m->hdrs[first];
	bool any = false;
	arn_h1_put(w, h->name, h->name_len);
	arn_h1_put(w, ": ", 2);
	for (int i = first; i < m->n_hdrs; i++) {
		const struct arn_h1_header *o = &m->hdrs[i];
		if (!o->value_len ||
		    (i != first && !arn_h1_eq_nocase(o->name, o->name_len, e->name, e->name_len)))
			continue;
		if (any)
			arn_h1_put(w, ",", 1);
		arn_h1_put(w, o->value, o->value_len);
		any = true;
	}
	if (e->value_len) {
		if (any)
			arn_h1_put(w, ",", 1);
		arn_h1_put(w, e->value, e->value_len);
	}
	arn_h1_put(w, "\r\n", 2);
}

/* Two bytes at @p p are @p lit's two (one load and compare) */
static inline bool eq2(const char *p, const char *lit)
{
	uint16_t a, b;
	memcpy(&a, p, 2);
	memcpy(&b, lit, 2);
	return a == b;
}

/* Unchanged lines as they were received: one copy for the run. */
static inline __attribute__((always_inline)) void put_run(struct arn_h1_wbuf *w, const char *s,
							  size_t n)
{
	if (__builtin_expect(n > (size_t)(w->cap - w->len), 0)) {
		arn_h1_put(w, s, n); /* across buffers, filling each as lines do */
		return;
	}
	char *d = w->p + w->len;
	w->len += (uint32_t)n;
	w->total += n;
	if (n > 256)
		memcpy(d, s, n);
	else
		h1_copy(d, s, n);
}

/* The run so far, [*rs, @p upto) (none: *rs NULL), goes out before any
 * other line, and where a line dropped or replaced ends it. */
static inline __attribute__((always_inline)) void run_end(struct arn_h1_wbuf *w, const char **rs,
							  const char *upto)
{
	if (*rs) {
		put_run(w, *rs, (size_t)(upto - *rs));
		*rs = NULL;
	}
}

/* The edits that add a line after the message's, unless done: SET and
 * APPEND_VALUE where no line of the name was, ADD always (never done),
 * ADD_IF_ABSENT where no line of the name was. */
#define ADDING_OPS                                                                                 \
	((1u << ARN_H1_EDIT_SET) | (1u << ARN_H1_EDIT_ADD) | (1u << ARN_H1_EDIT_ADD_IF_ABSENT) |   \
	 (1u << ARN_H1_EDIT_APPEND_VALUE))

/* What the field loop needs of arn_h1_write_headers (an always-inline
 * callee: it stays in registers) */
struct fields_ctx {
	const struct arn_h1_msg *m;
	const struct arn_h1_edit *edits;
	unsigned n_edits, flags;
	uint64_t look, hop_ids, edit_ids;
	const uint8_t *eid;
	struct nominated *nm;
};

/* The head's field lines with the edits applied, for a head whose block
 * is whole (ARN_H1_F_FIELDS_WHOLE: no line tested, the block copied to
 * its last line) or not (each line tested): specialized twice, so that
 * neither pays for the other. @return the edits done. */
static inline __attribute__((always_inline)) uint64_t
write_fields_edited(struct arn_h1_wbuf *w, const struct fields_ctx *c, const bool whole)
{
	const char *rs = NULL;
	/* SET / SET_IF_PRESENT / APPEND_VALUE written, ADD_IF_ABSENT's name
	 * seen: not to be added after the message's lines */
	uint64_t done = 0;
	const struct arn_h1_msg *m = c->m;
	const struct arn_h1_edit *edits = c->edits;
	const unsigned n_edits = c->n_edits, flags = c->flags;
	const uint64_t look = c->look, hop_ids = c->hop_ids, edit_ids = c->edit_ids;
	const uint8_t *eid = c->eid;
	struct nominated *nmp = c->nm;
	/* in locals: the stores of the lines may alias the message */
	const struct arn_h1_header *hd = m->hdrs;
	/* a message without headers may have no array (NULL + 0 is undefined) */
	const struct arn_h1_header *const hend = hd ? hd + m->n_hdrs : hd;
	for (const struct arn_h1_header *h = hd; h < hend; h++) {
		unsigned hid = h->id < ARN_H1_H_COUNT ? h->id : ARN_H1_H_OTHER;
		if (__builtin_expect((look >> hid) & 1, 0)) {
			if (((hop_ids >> hid) & 1) &&
			    (hid != ARN_H1_H_OTHER || is_hop(m, h, flags, nmp))) {
				run_end(w, &rs, h->name);
				continue;
			}
			bool drop = false;
			/* in edit order: several edits of one name act in the order given */
			for (unsigned k = 0; (edit_ids >> hid) & 1 && k < n_edits; k++) {
				if (eid[k] != hid)
					continue;
				const struct arn_h1_edit *e = &edits[k];
				uint64_t bit = 1ull << k;
				if (hid == ARN_H1_H_OTHER &&
				    (h->name_len != e->name_len ||
				     !arn_h1_eq_nocase(h->name, h->name_len, e->name, e->name_len)))
					continue;
				switch (e->op) {
				case ARN_H1_EDIT_REMOVE:
					drop = true;
					break;
				case ARN_H1_EDIT_SET:
				case ARN_H1_EDIT_SET_IF_PRESENT:
					if (!(done & bit)) {
						run_end(w, &rs, h->name);
						write_edit(w, e);
					}
					done |= bit;
					drop = true;
					break;
				case ARN_H1_EDIT_APPEND_VALUE:
					if (!(done & bit)) {
						run_end(w, &rs, h->name);
						write_joined(w, m, (int)(h - hd), e);
					}
					done |= bit;
					drop = true;
					break;
				case ARN_H1_EDIT_ADD_IF_ABSENT:
					done |= bit;
					break;
				default:
					break;
				}
			}
			if (drop) {
				run_end(w, &rs, h->name);
				continue;
			}
		}
		const char *v = h->value;
		const char *end = v + h->value_len;
		/* in a run, the line before ended where this one's name is
		 * (its next name was tested): no adjacency test here */
		if (whole || (h + 1 < hend && v == h->name + h->name_len + 2 &&
			      h[1].name == end + 2 && eq2(v - 2, ": ") && eq2(end, "\r\n"))) {
			if (!rs)
				rs = h->name;
			continue;
		}
		if (!whole && rs) {
			/* the run and this line in one room test (the last line
			 * after a run: nginx's Accept-Ranges) */
			size_t rn = (size_t)(h->name - rs);
			size_t need = rn + h->name_len + h->value_len + 4;
			if (__builtin_expect(need <= (size_t)(w->cap - w->len), 1) && rn <= 256) {
				char *d = room_take(w, need);
				h1_copy(d, rs, rn);
				put_line(d + rn, h->name, h->name_len, v, h->value_len);
				rs = NULL;
				continue;
			}
			run_end(w, &rs, h->name);
		}
		write_line(w, h->name, h->name_len, v, h->value_len);
	}
	/* a whole block: a run that reaches the last line ends after it */
	if (whole && rs) {
		const struct arn_h1_header *l = hend - 1;
		put_run(w, rs, (size_t)(l->value + l->value_len + 2 - rs));
	}
	return done;
}

/* The hop-by-hop fields' ids, dropped by ARN_H1_W_DROP_HOP (Upgrade but
 * with ARN_H1_W_UPGRADE): what is_hop says of them without a call. */
#define HOP_IDS                                                                                    \
	((1ull << ARN_H1_H_CONNECTION) | (1ull << ARN_H1_H_KEEP_ALIVE) |                           \
	 (1ull << ARN_H1_H_PROXY_CONNECTION) | (1ull << ARN_H1_H_TE) |                             \
	 (1ull << ARN_H1_H_TRANSFER_ENCODING) | (1ull << ARN_H1_H_HTTP2_SETTINGS))
_Static_assert(ARN_H1_H_COUNT <= 64, "a header id is a bit of a word (the writer's masks)");

int arn_h1_write_headers(struct arn_h1_wbuf *w, const struct arn_h1_msg *m,
			 const struct arn_h1_edit *edits, unsigned n_edits, unsigned flags)
{
	/* set by nominated_collect, and read (by is_hop) only where it ran:
	 * the mask's ARN_H1_H_OTHER hop bit says so */
	struct nominated nm;
	/*
	 * Each edit's header id (eid[k]; names without one compare by length,
	 * then bytes), and "look", a bit for each id whose lines need more
	 * than a copy (an edit's name, a hop-by-hop field): every other line
	 * costs one test of it. A line of such an id tests the edits' ids in
	 * edit order (few edits a head; the table by id this replaces was
	 * cleared, 27 words, and filled per edit, two heads a request).
	 */
	uint8_t eid[ARN_H1_MAX_EDITS];
	uint64_t edit_ids = 0;

	if (n_edits > ARN_H1_MAX_EDITS)
		return -E2BIG;
	for (unsigned k = 0; k < n_edits; k++) {
		unsigned id = edits[k].id1 - 1u; /* 0 (not given): UINT_MAX */
		if (__builtin_expect(id >= ARN_H1_H_COUNT, 0))
			id = arn_h1_hdr_lookup(edits[k].name, edits[k].name_len);
		eid[k] = (uint8_t)id;
		edit_ids |= 1ull << id;
	}
	uint64_t hop_ids = 0;
	/* the parser saw no Connection list and no TE: nothing to gather */
	bool plain = m->flags & ARN_H1_F_PLAIN_HOPS;
	if (flags & ARN_H1_W_DROP_HOP) {
		hop_ids = HOP_IDS | ((flags & ARN_H1_W_UPGRADE) ? 0 : 1ull << ARN_H1_H_UPGRADE);
		if (!plain) {
			nominated_collect(m, &nm);
			if (nm.n || nm.overflow)
				hop_ids |= 1ull << ARN_H1_H_OTHER; /* is_hop decides */
		}
	}
	const uint64_t look = edit_ids | hop_ids;
	/*
	 * An unchanged line is not rebuilt from its name and value where the
	 * received bytes from its name to the next line's name are exactly
	 * what write_line would give, "name: value\r\n" (one space, CRLF, the
	 * parser's slices of one buffer; a hand-built message rarely is): a
	 * run of such lines goes out in one copy, from rs to the name of the
	 * first line not in it, which any other line written, dropped or
	 * replaced ends first (then rs is NULL).
	 * A realistic browser head (bench_h1 write): 1,546 instructions to
	 * 1,464. The last line has no next name to bound its bytes: line by
	 * line.
	 */
	struct fields_ctx c = {.m = m,
			       .edits = edits,
			       .n_edits = n_edits,
			       .flags = flags,
			       .look = look,
			       .hop_ids = hop_ids,
			       .edit_ids = edit_ids,
			       .eid = eid,
			       .nm = &nm};
	uint64_t done = (m->flags & ARN_H1_F_FIELDS_WHOLE) ? write_fields_edited(w, &c, true)
							   : write_fields_edited(w, &c, false);
	/* no run is left: the last line is never in one (no next name), and
	 * a dropped one ends it */
	/* the additions in edit order: a pass over them alone, not a switch
	 * on every edit's op (~12 instructions an edit) */
	/* the edits not done, whose op adds a line: the ops are tested here,
	 * for these alone (bench_hcm: ~7 instructions an edit less) */
	uint64_t left = ~done & (n_edits < 64 ? (1ull << n_edits) - 1 : ~0ull);
	for (; left; left &= left - 1) {
		const struct arn_h1_edit *e = &edits[__builtin_ctzll(left)];
		if (e->op < 32 && ((ADDING_OPS >> e->op) & 1u))
			write_edit(w, e);
	}
	if ((flags & ARN_H1_W_DROP_HOP) && (flags & ARN_H1_W_UPGRADE))
		write_line(w, "connection", 10, "upgrade", 7);
	/* TE is hop-by-hop, but its "trailers" element is what a gRPC server
	 * looks for; the other elements (transfer codings we'd have to undo)
	 * stay behind, as Envoy leaves them. */
	if ((flags & ARN_H1_W_DROP_HOP) && (flags & ARN_H1_W_TE_TRAILERS) && !plain &&
	    arn_h1_msg_has_token(m, ARN_H1_H_TE, "trailers", 8))
		write_line(w, "te", 2, "trailers", 8);
	return w->err;
}

static const char hexd[] = "0123456789abcdef";

size_t arn_h1_chunk_prefix(struct arn_h1_chunker *c, uint64_t size,
			   char out[ARN_H1_CHUNK_PREFIX_MAX])
{
	size_t n = 0;
	char tmp[16];
	int k = 0;
	if (size == 0)
		return 0;
	if (c->open) {
		out[n++] = '\r';
		out[n++] = '\n';
	}
	while (size) {
		tmp[k++] = hexd[size & 15];
		size >>= 4;
	}
	while (k)
		out[n++] = tmp[--k];
	out[n++] = '\r';
	out[n++] = '\n';
	c->open = true;
	return n;
}

size_t arn_h1_chunk_close(struct arn_h1_chunker *c, char out[2])
{
	if (!c->open)
		return 0;
	out[0] = '\r';
	out[1] = '\n';
	c->open = false;
	return 2;
}

size_t arn_h1_chunk_last(struct arn_h1_chunker *c, char out[ARN_H1_CHUNK_LAST_MAX])
{
	size_t n = 0;
	if (c->open) {
		out[n++] = '\r';
		out[n++] = '\n';
	}
	memcpy(out + n, "0\r\n", 3);
	c->open = false;
	return n + 3;
}

int arn_h1_write_chunk_prefix(struct arn_h1_wbuf *w, struct arn_h1_chunker *c, uint64_t size)
{
	char b[ARN_H1_CHUNK_PREFIX_MAX];
	size_t n = arn_h1_chunk_prefix(c, size, b);
	return arn_h1_put(w, b, n);
}

int arn_h1_write_chunk_end(struct arn_h1_wbuf *w, struct arn_h1_chunker *c,
			   const struct arn_h1_header *trailers, unsigned n)
{
	char b[ARN_H1_CHUNK_LAST_MAX];
	size_t k = arn_h1_chunk_last(c, b);
	arn_h1_put(w, b, k);
	arn_h1_write_fields(w, trailers, n);
	return arn_h1_put(w, "\r\n", 2);
}
