/*
 * Big zeroed tables in huge pages (arn_table.h).
 */
#include "arn_table.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#if defined(__SANITIZE_ADDRESS__)
#define ARN_TABLE_HEAP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ARN_TABLE_HEAP 1
#endif
#endif

/* the table's length, kept in front of it (a cache line, so that the
 * table stays aligned) */
#define TABLE_HDR 64u
#define HUGE_2M ((size_t)2 << 20)
#define PAGE_4K ((size_t)4096)

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

#ifdef ARN_TABLE_HEAP

void *arn_table_zalloc(size_t bytes)
{
	size_t len = (bytes + TABLE_HDR + 63) & ~(size_t)63;
	if (len < bytes)
		return errno = ENOMEM, NULL;
	void *p = aligned_alloc(64, len);
	if (!p)
		return NULL;
	/* the whole 2 MiB pages inside it in huge pages too (ASan maps a
	 * block this big on its own), or its memset faults every 4 KiB */
	if (len >= 2 * HUGE_2M) {
		uintptr_t a = ((uintptr_t)p + HUGE_2M - 1) & ~(uintptr_t)(HUGE_2M - 1);
		uintptr_t e = ((uintptr_t)p + len) & ~(uintptr_t)(HUGE_2M - 1);
		(void)madvise((void *)a, e - a, MADV_HUGEPAGE);
	}
	memset(p, 0, len);
	return (uint8_t *)p + TABLE_HDR;
}

void arn_table_free(void *p)
{
	if (p)
		free((uint8_t *)p - TABLE_HDR);
}

#else

void *arn_table_zalloc(size_t bytes)
{
	size_t len = bytes + TABLE_HDR;
	if (len < bytes)
		return errno = ENOMEM, NULL;
	/* a table of 2 MiB or more: whole huge pages, the mapping aligned
	 * to one (the kernel does not align an anonymous mapping before
	 * Linux 6.7); mapped with a huge page of slack, trimmed after */
	size_t align = len >= HUGE_2M ? HUGE_2M : PAGE_4K;
	len = (len + align - 1) & ~(align - 1);
	size_t map = len + (align == HUGE_2M ? HUGE_2M : 0);
	if (len < bytes || map < len)
		return errno = ENOMEM, NULL;
	uint8_t *m = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	uint8_t *base = (uint8_t *)(((uintptr_t)m + align - 1) & ~(uintptr_t)(align - 1));
	if (base > m)
		munmap(m, (size_t)(base - m));
	size_t tail = (size_t)(m + map - (base + len));
	if (tail)
		munmap(base + len, tail);
	if (align == HUGE_2M)
		(void)madvise(base, len, MADV_HUGEPAGE); /* best effort: THP off is fine */
	/* fault it all in now, in one call; a kernel before 5.14 refuses
	 * the advice: touch each page instead (anonymous memory is zero) */
	if (madvise(base, len, MADV_POPULATE_WRITE) != 0) {
		for (size_t off = 0; off < len; off += PAGE_4K)
			((volatile uint8_t *)base)[off] = 0;
	}
	memcpy(base, &len, sizeof(len));
	return base + TABLE_HDR;
}

void arn_table_free(void *p)
{
	if (!p)
		return;
	uint8_t *base = (uint8_t *)p - TABLE_HDR;
	size_t len;
	memcpy(&len, base, sizeof(len));
	munmap(base, len);
}

#endif
