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
struct arn_sb;

/**
 * How resolved endpoints reach the store (the store gives it: dns.c
 * knows nothing of the store): apply the ClusterLoadAssignment @p bytes
 * (@p len) as cluster @p name's at version @p ver, or remove it (@p bytes
 * NULL). @return 0 when accepted; else a negative errno, or -EINVAL with
 * the refusal said into @p why.
 */
typedef int (*arn_dns_publish_fn)(void *ctx, const char *name, const char *ver, const char *bytes,
				  size_t len, struct arn_sb *why);

/** A cluster's resolution event (arn_config.h's ATTEMPT, SUCCESS,
 * FAILURE, NO_REBUILD), for its update_* counters. */
typedef void (*arn_dns_event_fn)(void *ctx, const char *name, enum arn_config_cluster_update u);

/** The store's resolver state (no thread yet), or NULL (-ENOMEM): it
 * publishes through @p publish and tells each cluster's resolution events
 * to @p event (both with @p ctx); @p st (borrowed, the store's) receives
 * its counters. */
struct arn_dns *arn_dns_create(arn_dns_publish_fn publish, arn_dns_event_fn event, void *ctx,
			       struct arn_config_stats *st);
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
