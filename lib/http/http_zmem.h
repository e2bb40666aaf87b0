/*
 * The counting allocator the compression libraries allocate through
 * (zlib, brotli and zstd states of the compressor and the decompressor
 * filters): each block carries its size, so that a free uncounts it, and
 * the bytes a worker's states hold together are bounded (max). The
 * opaque pointer the libraries pass back is the struct http_zmem.
 *
 * Ownership: a struct http_zmem is its worker's; not thread-safe.
 */
#ifndef ARN_HTTP_ZMEM_H
#define ARN_HTTP_ZMEM_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

struct http_zmem {
	size_t mem; /* bytes allocated through http_zmem_alloc */
	size_t max;
};

/* Each block carries its size. */
struct http_zmem_hdr {
	size_t n;
	size_t pad; /* 16-byte aligned payload */
};

/** @p n bytes counted in @p opaque (a struct http_zmem), or NULL past its max. */
static inline void *http_zmem_alloc(void *opaque, size_t n)
{
	struct http_zmem *zm = opaque;
	if (n > zm->max || zm->mem + n > zm->max)
		return NULL;
	struct http_zmem_hdr *p = malloc(sizeof(*p) + n);
	if (!p)
		return NULL;
	p->n = n;
	zm->mem += n;
	return p + 1;
}

static inline void http_zmem_free(void *opaque, void *ptr)
{
	struct http_zmem *zm = opaque;
	if (!ptr)
		return;
	struct http_zmem_hdr *p = (struct http_zmem_hdr *)ptr - 1;
	zm->mem -= p->n;
	free(p);
}

/* zlib's alloc_func and free_func */
static inline void *http_zmem_zalloc(void *opaque, unsigned items, unsigned size)
{
	if (size && items > SIZE_MAX / size)
		return NULL;
	return http_zmem_alloc(opaque, (size_t)items * size);
}

static inline void http_zmem_zfree(void *opaque, void *address)
{
	http_zmem_free(opaque, address);
}

#endif
