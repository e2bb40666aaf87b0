/*
 * A worker's big tables (connection blocks, request contexts, TIME_WAIT
 * records: tens to hundreds of MiB a worker at the defaults), zeroed and
 * faulted in at start, so that no request pays a page fault later.
 *
 * They are mapped in 2 MiB transparent huge pages where the kernel gives
 * them (madvise(MADV_HUGEPAGE): Debian's default THP mode is "madvise"),
 * and faulted in with one MADV_POPULATE_WRITE. The same tables in 4 KiB
 * heap pages, zeroed with memset, took one page fault per 4 KiB: 1.1 to
 * 2 s of every start of a one-worker Arion on a virtual machine, where a
 * fault is a trip to the hypervisor (perf: memset's faults, 65% of the
 * start). A worker's hot tables in huge pages also take fewer TLB entries
 * at run time.
 *
 * Under AddressSanitizer the tables stay on the heap (aligned_alloc and
 * memset, the whole 2 MiB pages inside advised huge: 0.18-0.47 s of CPU
 * for 190 MiB against 0.8 s): its redzones catch an index past a table's
 * end and its leak check a table never freed, which an mmap hides.
 */
#ifndef ARN_TABLE_H
#define ARN_TABLE_H

#include <stddef.h>

/** @p bytes of zeroes, cache-line aligned and faulted in; NULL (errno set)
 * when there is no memory. Free with arn_table_free only. */
void *arn_table_zalloc(size_t bytes);

/** Give back a table from arn_table_zalloc; NULL is a no-op. */
void arn_table_free(void *p);

#endif
