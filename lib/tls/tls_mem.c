/*
 * OpenSSL allocation accounting, to measure what a TLS connection costs.
 *
 * CRYPTO_set_mem_functions() routes every OpenSSL allocation through the
 * three functions below, which put a 16-byte header (the account charged,
 * the size) before each block. The header keeps 16-byte alignment, so
 * callers see what malloc would give them. Accounts are updated with
 * atomic adds: memory is freed on another thread than the one that
 * allocated it (a context built on the control lcore, freed there after a
 * worker dropped the last reference). This is a measurement tool for tests
 * and benchmarks; Arion's binary does not install it.
 */
#include <errno.h>
#include <stdlib.h>

#include <openssl/crypto.h>

#include "tls_int.h"

struct hdr {
	struct arn_tls_mem_account *a;
	size_t size;
};
_Static_assert(sizeof(struct hdr) == 16, "keeps malloc's alignment");

static struct arn_tls_mem_account global_default;
static __thread struct arn_tls_mem_account *current;

static void charge(struct arn_tls_mem_account *a, int64_t n)
{
	int64_t live = __atomic_add_fetch(&a->live, n, __ATOMIC_RELAXED);
	int64_t peak = __atomic_load_n(&a->peak, __ATOMIC_RELAXED);
	while (live > peak && !__atomic_compare_exchange_n(&a->peak, &peak, live, true,
							   __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

static void *acct_malloc(size_t n, const char *file, int line)
{
	(void)file;
	(void)line;
	struct hdr *h = malloc(sizeof(*h) + n);
	if (!h)
		return NULL;
	h->a = current ? current : &global_default;
	h->size = n;
	__atomic_add_fetch(&h->a->allocs, 1, __ATOMIC_RELAXED);
	charge(h->a, (int64_t)n);
	return h + 1;
}

static void *acct_realloc(void *p, size_t n, const char *file, int line)
{
	if (!p)
		return acct_malloc(n, file, line);
	struct hdr *h = (struct hdr *)p - 1;
	struct arn_tls_mem_account *a = h->a;
	size_t old = h->size;
	struct hdr *nh = realloc(h, sizeof(*nh) + n);
	if (!nh)
		return NULL;
	nh->size = n;
	charge(a, (int64_t)n - (int64_t)old);
	return nh + 1;
}

static void acct_free(void *p, const char *file, int line)
{
	(void)file;
	(void)line;
	if (!p)
		return;
	struct hdr *h = (struct hdr *)p - 1;
	charge(h->a, -(int64_t)h->size);
	free(h);
}

int arn_tls_mem_init(void)
{
	return CRYPTO_set_mem_functions(acct_malloc, acct_realloc, acct_free) ? 0 : -EALREADY;
}

struct arn_tls_mem_account *arn_tls_mem_use(struct arn_tls_mem_account *a)
{
	struct arn_tls_mem_account *old = current;
	current = a;
	return old;
}

struct arn_tls_mem_account *arn_tls_mem_default(void)
{
	return &global_default;
}
