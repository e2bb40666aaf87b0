/* The counting allocator for nghttp2 sessions (http_h2_mem.h). */
#include "http_h2_mem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Each block carries its size, so that free() can uncount it. */
struct memhdr {
	size_t n;
	size_t pad; /* keeps the payload 16-byte aligned */
};

static void *mem_malloc(size_t n, void *ud)
{
	size_t *used = ud;
	if (n > HTTP_H2_MEM_MAX || *used + n > HTTP_H2_MEM_MAX)
		return NULL;
	struct memhdr *p = malloc(sizeof(*p) + n);
	if (!p)
		return NULL;
	p->n = n;
	*used += n;
	return p + 1;
}

void http_h2_mem_free(void *ptr, void *ud)
{
	size_t *used = ud;
	if (!ptr)
		return;
	struct memhdr *p = (struct memhdr *)ptr - 1;
	*used -= p->n;
	free(p);
}

void *http_h2_mem_calloc(size_t nmemb, size_t size, void *ud)
{
	if (size && nmemb > SIZE_MAX / size)
		return NULL;
	void *p = mem_malloc(nmemb * size, ud);
	if (p)
		memset(p, 0, nmemb * size);
	return p;
}

static void *mem_realloc(void *ptr, size_t n, void *ud)
{
	size_t *used = ud;
	if (!ptr)
		return mem_malloc(n, ud);
	struct memhdr *p = (struct memhdr *)ptr - 1;
	if (n > HTTP_H2_MEM_MAX || *used - p->n + n > HTTP_H2_MEM_MAX)
		return NULL;
	size_t old = p->n;
	struct memhdr *q = realloc(p, sizeof(*q) + n);
	if (!q)
		return NULL;
	q->n = n;
	*used = *used - old + n;
	return q + 1;
}

nghttp2_mem http_h2_mem(size_t *used)
{
	return (nghttp2_mem){
	    .mem_user_data = used,
	    .malloc = mem_malloc,
	    .free = http_h2_mem_free,
	    .calloc = http_h2_mem_calloc,
	    .realloc = mem_realloc,
	};
}
