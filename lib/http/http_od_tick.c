/*
 * Outlier detection's interval on worker 0 (http_od.h): each cluster with
 * outlier_detection is evaluated every `interval` (http_od_interval),
 * from the health checker's 100 ms tick (http_hc.c), so no lcore gets a
 * timer of its own and a configuration without outlier detection costs
 * one comparison per tick.
 */
#include "arn_config.h"
#include "arn_stats.h"
#include "http_int.h"
#include "http_od.h"
#include "http_worker.h"

/* Worker 0 only: no walk of the clusters before od_walk_ms; none either
 * while the generation's clusters are those (od_none_clusters, from
 * arn_cfg_gen_type_changed) of a walk that found no outlier_detection.
 * A cluster that a new generation brings is found within OD_IDLE_MS. */
static uint64_t od_walk_ms, od_none_clusters;
#define OD_IDLE_MS 1000

struct od_walk {
	struct http_worker *w;
	uint64_t next;
	size_t n_od; /* clusters with outlier_detection */
};

static void od_cluster(void *ctx, const struct arn_cfg_cluster *cl)
{
	struct od_walk *ow = ctx;
	if (!cl->outlier.present)
		return;
	ow->n_od++;
	struct http_cluster_rt *crt = http_rt_cluster(cl->obj.name, cl->obj.name_len, cl->obj.hash);
	if (!crt)
		return;
	struct http_worker *w = ow->w;
	uint64_t now = w->now_ms;
	if (crt->od_next_ms && now < crt->od_next_ms) {
		if (crt->od_next_ms < ow->next)
			ow->next = crt->od_next_ms;
		return;
	}
	size_t n;
	struct http_host *const *hosts = http_rt_hosts(crt, &n);
	struct http_od_iev ev;
	http_od_interval(&cl->outlier, crt, hosts, n, now, http_rand(w), &ev);
	crt->od_next_ms = now + (cl->outlier.interval_ms ? cl->outlier.interval_ms : 1);
	if (crt->od_next_ms < ow->next)
		ow->next = crt->od_next_ms;
	struct arn_stats_scope *sc = crt->stats;
	if (!sc)
		return;
	uint32_t enforced = ev.enforced_sr + ev.enforced_fp;
	arn_stats_add(sc, w->slot, ARN_CL_outlier_detection_ejections_detected_success_rate,
		      ev.detected_sr);
	arn_stats_add(sc, w->slot, ARN_CL_outlier_detection_ejections_enforced_success_rate,
		      ev.enforced_sr);
	arn_stats_add(sc, w->slot, ARN_CL_outlier_detection_ejections_detected_failure_percentage,
		      ev.detected_fp);
	arn_stats_add(sc, w->slot, ARN_CL_outlier_detection_ejections_enforced_failure_percentage,
		      ev.enforced_fp);
	arn_stats_add(sc, w->slot, ARN_CL_outlier_detection_ejections_enforced_total, enforced);
	arn_stats_add(sc, w->slot, ARN_CL_outlier_detection_ejections_overflow, ev.overflow);
	arn_stats_gauge_add(sc, w->slot, ARN_CL_outlier_detection_ejections_active,
			    (int64_t)enforced - (int64_t)ev.unejected);
}

void http_od_tick(struct http_worker *w)
{
	if (!w->gen_slot || w->now_ms < od_walk_ms)
		return;
	struct od_walk ow = {w, w->now_ms + OD_IDLE_MS, 0};
	od_walk_ms = ow.next;
	const struct arn_cfg_gen *g = arn_config_gen_at(w->gen_slot);
	if (!g)
		return;
	uint64_t clusters = arn_cfg_gen_type_changed(g, ARN_CFG_CLUSTER);
	if (od_none_clusters && clusters == od_none_clusters)
		return;
	arn_cfg_cluster_foreach(g, od_cluster, &ow);
	od_walk_ms = ow.next;
	od_none_clusters = ow.n_od ? 0 : clusters;
}
