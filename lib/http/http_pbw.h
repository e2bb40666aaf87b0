/*
 * A bounded protobuf writer for the messages Arion hand-encodes to
 * collectors (the gRPC access loggers' OTLP logs and ALS entries, the
 * OpenTelemetry tracer's spans): fields
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

#include "arn_utf8.h"
#include "http_pb.h"

struct pbw {
	uint8_t *b; /* the caller's; NULL: only count (PBW_MEASURE) */
	size_t n, cap;
	bool err;
};

/* A writer that writes nothing and counts the bytes it would write: a
 * nested message's length, from the function that writes it. */
#define PBW_MEASURE ((struct pbw){NULL, 0, SIZE_MAX, false})

enum { PBW_VARINT = 0, PBW_I64 = 1, PBW_LEN = 2, PBW_I32 = 5 };

/* The bytes of varint @p v (http_pb.h's, the readers' and the other
 * writers'). */
#define pbw_vsize pb_vsize

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
	uint8_t t[PB_VARINT_MAX];
	pbw_raw(f, t, pb_varint(t, v));
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
		size_t k = arn_utf8_seq(p + i, n - i);
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
