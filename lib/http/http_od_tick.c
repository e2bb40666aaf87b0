/*
 * Outlier detection's interval on worker 0 (http_od.h): each cluster with
 * outlier_detection is evaluated every `interval` (http_od_interval),
 * from the health checker's 100 ms tick (http_hc.c), so no lcore gets a
 * timer of its own. The clusters come from the snapshot's list of those
 * with outlier_detection (http_rt_od_clusters), so a walk costs one visit
 * per such cluster and none for the others, and a configuration without
 * outlier detection costs a comparison per tick.
 */
#include "arn_config.h"
#include "arn_stats.h"
#include "http_int.h"
#include "http_od.h"
#include "http_worker.h"

/* Worker 0 only: no walk before od_walk_ms (the first cluster's due time)
 * while the snapshot's list is od_list_id's; a new list is walked at the
 * next tick (its new clusters start their interval there). */
static uint64_t od_walk_ms, od_list_id = UINT64_MAX;
static size_t od_visited; /* by the last tick (http_od_tick_visited) */

/* Evaluate cluster @p o if it is due; lower *@p next to its next time. */
static void od_cluster(struct http_worker *w, const struct http_rt_od *o, uint64_t *next)
{
	struct http_cluster_rt *crt = o->crt;
	uint64_t now = w->now_ms;
	od_visited++;
	if (crt->od_next_ms && now < crt->od_next_ms) {
		if (crt->od_next_ms < *next)
			*next = crt->od_next_ms;
		return;
	}
	struct http_od_iev ev;
	http_od_interval(o->cfg, crt, o->hosts, o->n_hosts, now, http_rand(w), &ev);
	crt->od_next_ms = now + (o->cfg->interval_ms ? o->cfg->interval_ms : 1);
	if (crt->od_next_ms < *next)
		*next = crt->od_next_ms;
	struct arn_stats_scope *sc = crt->stats;
	if (!sc)
		return;
	uint32_t enforced = ev.enforced_sr + ev.enforced_fp + ev.enforced_lsr + ev.enforced_lfp;
	arn_stats_add(sc, w->slot, ARN_CL_outlier_detection_ejections_detected_success_rate,
		      ev.detected_sr);
	arn_stats_add(sc, w->slot, ARN_CL_outlier_detection_ejections_enforced_success_rate,
		      ev.enforced_sr);
	arn_stats_add(sc, w->slot, ARN_CL_outlier_detection_ejections_detected_failure_percentage,
		      ev.detected_fp);
	arn_stats_add(sc, w->slot, ARN_CL_outlier_detection_ejections_enforced_failure_percentage,
		      ev.enforced_fp);
	if (o->cfg->split_external_local_origin_errors) {
		arn_stats_add(sc, w->slot,
			      ARN_CL_outlier_detection_ejections_detected_local_origin_success_rate,
			      ev.detected_lsr);
		arn_stats_add(sc, w->slot,
			      ARN_CL_outlier_detection_ejections_enforced_local_origin_success_rate,
			      ev.enforced_lsr);
		arn_stats_add(
		    sc, w->slot,
		    ARN_CL_outlier_detection_ejections_detected_local_origin_failure_percentage,
		    ev.detected_lfp);
		arn_stats_add(
		    sc, w->slot,
		    ARN_CL_outlier_detection_ejections_enforced_local_origin_failure_percentage,
		    ev.enforced_lfp);
	}
	arn_stats_add(sc, w->slot, ARN_CL_outlier_detection_ejections_enforced_total, enforced);
	arn_stats_add(sc, w->slot, ARN_CL_outlier_detection_ejections_overflow, ev.overflow);
	arn_stats_gauge_add(sc, w->slot, ARN_CL_outlier_detection_ejections_active,
			    (int64_t)enforced - (int64_t)ev.unejected);
}

size_t http_od_tick_visited(void)
{
	return od_visited;
}

void http_od_tick(struct http_worker *w)
{
	od_visited = 0;
	if (!w->gen_slot)
		return;
	size_t n;
	uint64_t id;
	const struct http_rt_od *list = http_rt_od_clusters(&n, &id);
	if (id == od_list_id && w->now_ms < od_walk_ms)
		return;
	od_list_id = id;
	uint64_t next = UINT64_MAX;
	for (size_t i = 0; i < n; i++)
		od_cluster(w, &list[i], &next);
	od_walk_ms = next;
}
