/*
 * Memory pools: every configuration object's memory, freed as a whole
 * (pool.c). Control lcore only; workers read what a pool holds but never
 * allocate from one.
 */
#ifndef ARN_CONFIG_POOL_H
#define ARN_CONFIG_POOL_H

#include <stdbool.h>
#include <stddef.h>

struct arn_pool;

/** A pool whose first chunk is @p first bytes (it grows by doubling). */
struct arn_pool *arn_pool_new(size_t first);
/** Zeroed memory, 16-byte aligned; NULL on ENOMEM (the pool notes it). */
void *arn_pool_alloc(struct arn_pool *p, size_t n);
char *arn_pool_strndup(struct arn_pool *p, const char *s, size_t n);
/** Run @p fn(@p arg) when the pool is freed (OpenSSL objects, regexes). */
int arn_pool_on_free(struct arn_pool *p, void (*fn)(void *), void *arg);
void arn_pool_free(struct arn_pool *p);
bool arn_pool_failed(const struct arn_pool *p);
size_t arn_pool_bytes(const struct arn_pool *p);

#endif
