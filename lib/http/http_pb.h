/*
 * A bounded protobuf reader for the gRPC answers Arion decodes by hand
 * (ext_authz's CheckResponse, the rate limit service's
 * RateLimitResponse): fields are read in place, any wire type but the
 * four proto3 uses, a length past the end, or a varint past ten bytes is
 * -EBADMSG. And the varint the hand writers share (ext_authz's,
 * ext_proc's, the rate limit service's requests, OpenTelemetry's spans):
 * each keeps its own buffer and bound. Private to lib/http.
 *
 * Ownership: a struct pbr borrows the caller's bytes; a struct fld's
 * data points into them.
 */
#ifndef ARN_HTTP_PB_H
#define ARN_HTTP_PB_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct pbr {
	uint8_t *p, *end;
};

struct fld {
	uint32_t num, wt;
	uint64_t v;
	uint8_t *data;
	size_t len;
};

static inline int r_varint(struct pbr *r, uint64_t *v)
{
	uint64_t x = 0;
	for (unsigned s = 0; s < 70; s += 7) {
		if (r->p >= r->end)
			return -EBADMSG;
		uint8_t b = *r->p++;
		x |= (uint64_t)(b & 0x7f) << s;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -EBADMSG;
}

/* The next field of @p r: 1 with @p f, 0 at the end, -EBADMSG. */
static inline int r_next(struct pbr *r, struct fld *f)
{
	if (r->p >= r->end)
		return 0;
	uint64_t tag;
	if (r_varint(r, &tag) != 0 || (tag >> 3) == 0 || (tag >> 3) > 0x1fffffff)
		return -EBADMSG;
	f->num = (uint32_t)(tag >> 3);
	f->wt = (uint32_t)(tag & 7);
	f->data = NULL;
	f->len = 0;
	f->v = 0;
	switch (f->wt) {
	case 0:
		return r_varint(r, &f->v) == 0 ? 1 : -EBADMSG;
	case 1:
		if (r->end - r->p < 8)
			return -EBADMSG;
		r->p += 8;
		return 1;
	case 5:
		if (r->end - r->p < 4)
			return -EBADMSG;
		r->p += 4;
		return 1;
	case 2: {
		uint64_t n;
		if (r_varint(r, &n) != 0 || n > (uint64_t)(r->end - r->p))
			return -EBADMSG;
		f->data = r->p;
		f->len = (size_t)n;
		r->p += n;
		return 1;
	}
	default:
		return -EBADMSG; /* groups (3, 4) and 6, 7 */
	}
}

/* ---- the writer ---- */

/* A varint's most bytes (a uint64_t's 64 bits, 7 a byte). */
#define PB_VARINT_MAX 10

/* The bytes varint @p v takes. */
static inline size_t pb_vsize(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* Varint @p v into @p t (room for PB_VARINT_MAX bytes). @return its
 * bytes (pb_vsize(v)). */
static inline size_t pb_varint(uint8_t *t, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		t[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	t[n++] = (uint8_t)v;
	return n;
}

/* A message field's bytes: wire type 2, else -EBADMSG. */
static inline int want_len(const struct fld *f)
{
	return f->wt == 2 ? 0 : -EBADMSG;
}

static inline bool tchar(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* A header name: an HTTP token (RFC 9110 5.6.2), lower-cased in place. */
static inline bool name_ok(uint8_t *p, size_t n)
{
	if (!n || n > 256)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!tchar(p[i]))
			return false;
		if (p[i] >= 'A' && p[i] <= 'Z')
			p[i] = (uint8_t)(p[i] + 32);
	}
	return true;
}

static inline bool value_ok(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] == '\r' || p[i] == '\n' || p[i] == 0)
			return false;
	return true;
}

#endif
