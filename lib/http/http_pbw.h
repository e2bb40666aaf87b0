/*
 * A bounded protobuf writer for the messages Arion hand-encodes to
 * collectors (the gRPC access loggers' OTLP logs and ALS entries): fields
 * go forwards into a caller's buffer; a write past its end sets err and
 * writes nothing more. Lengths of nested messages are computed before
 * they are written (pbw_*_size), so that nothing is moved.
 */
#ifndef ARN_HTTP_PBW_H
#define ARN_HTTP_PBW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct pbw {
	uint8_t *b; /* the caller's; NULL: only count (PBW_MEASURE) */
	size_t n, cap;
	bool err;
};

/* A writer that writes nothing and counts the bytes it would write: a
 * nested message's length, from the function that writes it. */
#define PBW_MEASURE ((struct pbw){NULL, 0, SIZE_MAX, false})

enum { PBW_VARINT = 0, PBW_I64 = 1, PBW_LEN = 2, PBW_I32 = 5 };

/* The bytes of varint @p v. */
static inline size_t pbw_vsize(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* A length-delimited field's bytes (tag of a field under 16, its length,
 * @p len bytes). */
static inline size_t pbw_ld_size(size_t len)
{
	return 1 + pbw_vsize(len) + len;
}

static inline void pbw_raw(struct pbw *f, const void *p, size_t n)
{
	if (!f->b) {
		f->n += n;
		return;
	}
	if (f->err || n > f->cap - f->n) {
		f->err = true;
		return;
	}
	if (n)
		memcpy(f->b + f->n, p, n);
	f->n += n;
}

static inline void pbw_varint(struct pbw *f, uint64_t v)
{
	uint8_t t[10];
	size_t n = 0;
	while (v >= 0x80) {
		t[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	t[n++] = (uint8_t)v;
	pbw_raw(f, t, n);
}

static inline void pbw_tag(struct pbw *f, uint32_t field, uint32_t wt)
{
	pbw_varint(f, (uint64_t)field << 3 | wt);
}

/* A nested message's or bytes field's tag and length (its body follows). */
static inline void pbw_ld(struct pbw *f, uint32_t field, size_t len)
{
	pbw_tag(f, field, PBW_LEN);
	pbw_varint(f, len);
}

static inline void pbw_bytes(struct pbw *f, uint32_t field, const void *p, size_t n)
{
	pbw_ld(f, field, n);
	pbw_raw(f, p, n);
}

static inline void pbw_u64(struct pbw *f, uint32_t field, uint64_t v)
{
	pbw_tag(f, field, PBW_VARINT);
	pbw_varint(f, v);
}

static inline void pbw_fixed64(struct pbw *f, uint32_t field, uint64_t v)
{
	uint8_t t[8];
	for (int i = 0; i < 8; i++)
		t[i] = (uint8_t)(v >> (8 * i));
	pbw_tag(f, field, PBW_I64);
	pbw_raw(f, t, 8);
}

/* The length of the valid UTF-8 sequence at @p p (0: not one). */
static inline size_t pbw_utf8_seq(const uint8_t *p, size_t n)
{
	uint8_t c = p[0];
	if (c < 0x80)
		return 1;
	size_t k;
	uint32_t min;
	if ((c & 0xe0) == 0xc0) {
		k = 2;
		min = 0x80;
	} else if ((c & 0xf0) == 0xe0) {
		k = 3;
		min = 0x800;
	} else if ((c & 0xf8) == 0xf0) {
		k = 4;
		min = 0x10000;
	} else {
		return 0;
	}
	if (k > n)
		return 0;
	uint32_t cp = c & (0x7f >> k);
	for (size_t i = 1; i < k; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return k;
}

/* A string's bytes (no tag, no length): bytes that are not UTF-8 become
 * '?' (a protobuf string must be UTF-8, a collector refuses the whole
 * message otherwise, and the values come from clients). The same length
 * as @p n. */
static inline void pbw_utf8_raw(struct pbw *f, const char *s, size_t n)
{
	if (!f->b) {
		f->n += n;
		return;
	}
	if (f->err || n > f->cap - f->n) {
		f->err = true;
		return;
	}
	const uint8_t *p = (const uint8_t *)s;
	uint8_t *o = f->b + f->n;
	for (size_t i = 0; i < n;) {
		size_t k = pbw_utf8_seq(p + i, n - i);
		if (!k) {
			o[i++] = '?';
			continue;
		}
		memcpy(o + i, p + i, k);
		i += k;
	}
	f->n += n;
}

static inline void pbw_utf8(struct pbw *f, uint32_t field, const char *s, size_t n)
{
	pbw_ld(f, field, n);
	pbw_utf8_raw(f, s, n);
}

/* The gRPC message prefix (not compressed, @p len bytes) of a message of
 * @p len bytes; false if @p len does not fit its 32 bits. */
static inline bool pbw_grpc_prefix(struct pbw *f, size_t len)
{
	if (len > UINT32_MAX)
		return false;
	uint8_t h[5] = {0, (uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8),
			(uint8_t)len};
	pbw_raw(f, h, 5);
	return true;
}

#endif
