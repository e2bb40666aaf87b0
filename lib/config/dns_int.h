/*
 * The store's side of STRICT_DNS / LOGICAL_DNS resolution (dns.c).
 * Control lcore only.
 */
#ifndef ARN_DNS_INT_H
#define ARN_DNS_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "arn_config.h"

struct arn_dns;

/** The store's resolver state (no thread yet), or NULL (-ENOMEM).
 * @p st (borrowed, the store's) receives its counters. */
struct arn_dns *arn_dns_create(struct arn_config_store *s, struct arn_config_stats *st);
/** Stop the resolver threads (each finishes the name it resolves) and free. */
void arn_dns_destroy(struct arn_dns *d);
/**
 * Cluster @p name's newest version is @p cl (pinned while tracked), or it
 * was removed or is no longer a DNS cluster (@p cl NULL or without dns).
 * Called while a batch applies: it only records; arn_dns_poll() resolves,
 * publishes and removes endpoints.
 */
void arn_dns_track(struct arn_dns *d, const char *name, const struct arn_cfg_cluster *cl,
		   uint64_t now_ms);
/** Collect answers, publish changed endpoints, start due resolutions. */
void arn_dns_poll(struct arn_dns *d, uint64_t now_ms);

#endif
