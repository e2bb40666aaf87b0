/*
 * Runtime objects of the proxy that the configuration model does not carry:
 * statistics scopes (cluster.<name>.*, http.<stat_prefix>.*,
 * listener.<address>.*), access loggers, and the circuit breakers' shared
 * counters; the cluster and listener objects themselves live in
 * http_cluster.c.
 *
 * The control lcore builds them while the store prepares a new generation
 * (rt_prepare, before any worker can see it) and publishes an immutable
 * lookup table (a "snapshot") through one pointer; workers read it without
 * locks and the old table is
 * freed once every worker passed an RCU quiescent state (the configuration
 * store's QSBR, through an arn_defer queue). A snapshot holds a reference
 * to every cluster, listener, HCM and host object it maps, and pins the
 * listeners whose HCMs it maps, so an HCM pointer used as a key cannot be
 * reused by another object while a worker may still look it up.
 *
 * The work is proportional to the change, not to the configuration
 * (issue 17): the clusters are a persistent trie of immutable entries,
 * path-copied where the generation's clusters or endpoints differ from
 * those the previous snapshot followed (found by comparing the two
 * generations' tries, arn_hamt_diff); the listeners' part is taken from
 * the previous snapshot when listeners, routes and ToolSets are the same;
 * the TLS table likewise builds only the changed clusters' contexts.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <rte_rcu_qsbr.h>

#include "arn_config.h"
#include "hamt.h"
#include "arn_defer.h"
#include "arn_http.h"
#include "arn_json.h"
#include "arn_l4.h"
#include "arn_log.h"
#include "arn_net.h"
#include "arn_tls.h"
#include "http_filter.h"
#include "http_int.h"
#include "http_l4.h"
#include "http_local_reply.h"

enum { K_HCM = 1, K_LISTENER, K_TLS, K_RLS, K_UTLS_NAME, K_MCPB };

struct slot;
static const struct slot *slot_find(const struct slot *slots, size_t mask, uint8_t kind,
				    uint64_t key, const void *name, size_t len);

struct slot {
	uint8_t kind;
	uint64_t key;
	const void *name;
	size_t len;
	void *val;
};

/* A filter chain's DownstreamTlsContext or a cluster's UpstreamTlsContext
 * built into a lib/tls context, and the Secrets it was built from (pinned,
 * so that a Secret at the same address in a later generation is the same
 * Secret): a later generation whose chain or cluster (same object) names
 * the same Secrets keeps the context, its session ticket keys (server) and
 * the sessions clients keep for it (upstream) with it. The chain's
 * listener or the cluster is pinned too: an entry carried for workers on
 * the previous generation outlives that generation (the store frees it
 * after one grace period, the table drops what it carried at a later
 * sync), and meanwhile the next table copies it, reading the cluster's
 * name, and compares its key with new objects' addresses, which a freed
 * object's could be. */
#define TLS_RT_CERTS 4
struct tls_rt {
	const void *key;   /* the filter chain or the cluster */
	const void *owner; /* the chain's listener or the cluster: pinned */
	const struct arn_cfg_secret *certs[TLS_RT_CERTS];
	size_t n_certs;
	const struct arn_cfg_secret *validation, *tickets;
	struct arn_tls_ctx *ctx; /* one reference */
	/* a cluster's: also found by its name (the cluster's, which the
	 * entry pins) */
	const struct arn_cfg_obj *cl;
};

/*
 * The TLS contexts a generation's chains and clusters name, in a table of
 * their own: published on the control lcore by the store's prepare
 * callback (rt_prepare), before the store makes the generation visible, so
 * that a worker never sees a chain or cluster whose context is not there
 * yet (issue 18: a new TLS cluster or chain used to fail until the next
 * http_rt_sync). Entries [n_live, n_tls) are the previous tables' that the
 * generation no longer has, kept for workers still reading the previous
 * generation; http_rt_sync drops them once every worker passed a
 * quiescent state after the publication.
 */
struct tls_tab {
	uint64_t gen_id;
	/* the generation's clusters (a reference) and Secrets (its
	 * arn_cfg_gen_type_changed) the table was built for: the next table
	 * with the same Secrets builds only what its clusters' diff names */
	struct arn_hamt *cl_trie;
	uint64_t secrets_changed;
	size_t mask;
	struct slot *slots;
	struct tls_rt *tls;
	size_t n_tls, cap_tls, n_live;
};

struct mcpb_scope {
	uint64_t key;
	struct arn_stats_scope *sc;
};

/* A ToolSet's backend @p b (< 64) as a key: distinct for distinct ToolSet
 * objects, which are more than 64 bytes apart. */
static uint64_t mcpb_key(const struct arn_cfg_toolset *ts, uint32_t b)
{
	return (uint64_t)(uintptr_t)ts * 64 + b;
}

struct rl_scope {
	const struct arn_cfg_http_ratelimit *cfg;
	struct arn_stats_scope *sc;
};

/* One cluster of a snapshot: its runtime object and its hosts, found by
 * the cluster's name in the snapshot's persistent trie (lib/config's
 * hamt.h, the trie generations are made of). An entry is immutable and
 * shared by every snapshot whose trie holds it: one built for a cluster's
 * configuration serves each later snapshot until that cluster changes. */
struct cent {
	struct arn_cfg_obj obj;	     /* name: the cluster object's; refs: tries holding it */
	struct http_cluster_rt *crt; /* one reference */
	bool hc;		     /* its Cluster has health_checks */
	/* its circuit breakers (DEFAULT, HIGH), for their gauges (cb_stats_pull) */
	struct arn_cfg_thresholds th[2];
	/* the balancer's (http_rt_lb_view): the endpoints it was built from,
	 * their hosts in endpoint order (NULL where none could be had; no
	 * reference of their own: hosts[] holds them) and one candidate
	 * cache per worker, each with room for every endpoint */
	const struct arn_cfg_endpoints *eps;
	struct http_host **ep_hosts;
	size_t n_ep;
	struct http_lb_cache *lbc;
	unsigned n_lbc;
	const struct arn_cfg_outlier *od; /* its Cluster's outlier_detection, or NULL */
	/* eps' endpoints sorted by (address, port), n_ep of them (NULL:
	 * none, or no memory): a stateful session's host found in O(log n) */
	const struct arn_cfg_endpoint **ep_sorted;
	/* transport_socket_matches: each match's total_match_count scope,
	 * then the default's (n_ts_matches + 1 of them; NULL without) */
	struct arn_stats_scope **tsm_sc;
	size_t n_tsm_sc;
	size_t n_hosts;
	struct http_host *hosts[]; /* sorted by (addr, port); one reference each */
};

/* cluster.<name>.<match>.total_match_count (lib/stats's .def) */
enum {
#define ARN_STAT(kind, name, help) ARN_TSM_##name,
#include "envoy_cluster_tsm_stats.def"
#undef ARN_STAT
};
static const struct arn_stat_def tsm_defs[] = {
#define ARN_STAT(kind, name, help) ARN_STAT_DEF(kind, name, help),
#include "envoy_cluster_tsm_stats.def"
#undef ARN_STAT
};
static struct arn_stats_schema tsm_schema = ARN_STATS_SCHEMA("transport_socket_match", tsm_defs);

/*
 * The clusters' part of a snapshot: a persistent trie of entries, by
 * cluster name. Shared (refcounted, control lcore only) by the snapshots
 * of generations whose clusters and endpoints are the same objects; the
 * next generation's part is this trie path-copied where the generation's
 * clusters or endpoints differ from those this part followed (arn_hamt_diff
 * of the two generations' tries), so one changed cluster among 10,000
 * builds one entry and copies a few trie nodes (issue 17: a walk of every
 * cluster, its registry lookup, pins and host references, cost 6.4M
 * instructions and 5 to 74 ms per change in bench/xds/run).
 */
struct cpart {
	long refs;			     /* snapshots using it */
	uint64_t sync;			     /* the sync_id that built it */
	unsigned nw;			     /* worker count its hosts were made for */
	struct arn_hamt *cl_trie, *cla_trie; /* the generation's it follows (references) */
	struct arn_hamt *ents;		     /* struct cent by cluster name */
	size_t n_crts, n_hosts;
	size_t n_hc; /* entries with hc set */
	/* the entries with od set (http_rt_od_clusters): the previous part's
	 * that stay and those built for it */
	struct http_rt_od *od;
	size_t n_od;
};

struct snap {
	uint64_t gen_id;
	uint64_t sync; /* the sync_id that built it */
	/* arn_cfg_gen_type_changed() of every type but clusters and endpoints
	 * when it was built: the next generation with the same values has the
	 * same listeners, routes and ToolSets, and takes this one's part */
	uint64_t lchanged[ARN_CFG_NTYPES];
	struct cpart *cp; /* one reference */
	size_t mask;
	struct slot *slots;	   /* the other kinds */
	struct http_hcm_rt **hcms; /* one reference each */
	size_t n_hcms;
	const struct arn_cfg_listener **pinned;
	size_t n_pinned;
	struct http_listener_rt **lrts; /* its listener addresses, one reference each */
	size_t n_lrts, cap_lrts;
	/* routes' and virtual hosts' local_ratelimit configurations and their
	 * <stat_prefix>.http_local_rate_limit.* scopes (one reference each) */
	struct rl_scope *rls;
	size_t n_rls, cap_rls;
	/* the MCP gateway's ToolSets' backends (key: mcpb_key) and their
	 * mcp.<ToolSet>.backend.<name>.* scopes (one reference each) */
	struct mcpb_scope *mcpbs;
	size_t n_mcpbs, cap_mcpbs;
};

static struct arn_config_store *store;
static struct arn_defer *retired; /* snapshots workers may still read */
bool http_hc_failed_;		  /* http_healthcheck_failed() */
static struct snap *current;
static struct tls_tab *tls_current;
static bool tls_carry_tok_set; /* tls_carry_tok was started after the last publication */
static uint64_t tls_carry_tok;
static uint64_t synced_gen = UINT64_MAX;
static unsigned synced_workers;		/* hosts need worker slots: rebuild once they are known */
static uint64_t sync_id;		/* one per snapshot built */
static size_t clusters_built;		/* by the last snapshot: not taken from the previous one */
static size_t clusters_walked;		/* by the last snapshot (http_rt_clusters_walked) */
static size_t listeners_walked;		/* by the last snapshot (http_rt_listeners_walked) */
static size_t tls_clusters_walked;	/* by the last TLS table (http_rt_tls_clusters_walked) */
static struct http_hcm_rt *hcm_reclaim; /* Treiber stack: workers push, control pops all */
/* the gRPC access loggers' (http_rt_glog_ops) */
static const struct http_glog_ops *glog_ops;
uint64_t http_rt_sync_;			/* http_rt_snap_sync (http_int.h) */

/* ---- worker side ------------------------------------------------------------ */

static const struct slot *slot_find(const struct slot *slots, size_t mask, uint8_t kind,
				    uint64_t key, const void *name, size_t len)
{
	for (size_t i = (size_t)(key * 0x9e3779b97f4a7c15ull) & mask;; i = (i + 1) & mask) {
		const struct slot *sl = &slots[i];
		if (!sl->kind)
			return NULL;
		if (sl->kind == kind && sl->key == key &&
		    (!name || (sl->len == len && memcmp(sl->name, name, len) == 0)))
			return sl;
	}
}

static const struct slot *snap_find(uint8_t kind, uint64_t key, const void *name, size_t len)
{
	const struct snap *s = __atomic_load_n(&current, __ATOMIC_ACQUIRE);
	return s ? slot_find(s->slots, s->mask, kind, key, name, len) : NULL;
}

static const struct slot *tls_find(uint8_t kind, uint64_t key, const void *name, size_t len)
{
	const struct tls_tab *t = __atomic_load_n(&tls_current, __ATOMIC_ACQUIRE);
	return t ? slot_find(t->slots, t->mask, kind, key, name, len) : NULL;
}

/* A worker's last cluster found (per lcore: no cache line shared across
 * workers), valid while the snapshot's clusters are the same part
 * (cpart.sync names one part for good, and the part holds a reference to
 * the object): a keep-alive connection's requests mostly go to one
 * cluster, and the trie walk cost about 80 instructions a request
 * (bench_hcm). Misses are not kept. */
static __thread struct {
	uint64_t sync;
	struct http_cluster_rt *crt;
} crt_last;

struct http_cluster_rt *http_rt_cluster(const char *name, size_t len, uint64_t hash)
{
	const struct snap *sn = __atomic_load_n(&current, __ATOMIC_ACQUIRE);
	if (!sn)
		return NULL;
	struct http_cluster_rt *c = crt_last.crt;
	/* the name by its bytes: a cluster_header's lives in a request
	 * buffer, where the next request's may differ at the same address */
	if (c && crt_last.sync == sn->cp->sync && c->hash == hash && c->len == len &&
	    memcmp(c->name, name, len) == 0)
		return c;
	const struct cent *e =
	    (const struct cent *)(const void *)arn_hamt_get(sn->cp->ents, name, len, hash);
	if (!e)
		return NULL;
	crt_last.sync = sn->cp->sync;
	crt_last.crt = e->crt;
	return e->crt;
}

/* The key of an HCM's or a tcp_proxy's runtime object: its configuration
 * object's address (distinct objects, so one kind of slot serves both). */
static uint64_t hrt_key(const struct http_hcm_rt *r)
{
	return r->hcm  ? (uint64_t)(uintptr_t)r->hcm
	       : r->tp ? (uint64_t)(uintptr_t)r->tp
		       : (uint64_t)(uintptr_t)r->lsn;
}

static struct http_hcm_rt *hrt_lookup(const void *key)
{
	const struct slot *s = snap_find(K_HCM, (uint64_t)(uintptr_t)key, NULL, 0);
	if (!s)
		return NULL;
	struct http_hcm_rt *r = s->val;
	__atomic_fetch_add(&r->refs, 1, __ATOMIC_RELAXED);
	return r;
}

struct http_hcm_rt *http_rt_hcm(const struct arn_cfg_hcm *hcm)
{
	return hrt_lookup(hcm);
}

struct http_hcm_rt *http_rt_tcpp(const struct arn_cfg_tcp_proxy *tp)
{
	return hrt_lookup(tp);
}

struct http_hcm_rt *http_rt_listener_logs(const struct arn_cfg_listener *l)
{
	return l->n_access_logs ? hrt_lookup(l) : NULL;
}

struct arn_tls_ctx *http_rt_tls(const struct arn_cfg_filter_chain *fc)
{
	const struct slot *sl = tls_find(K_TLS, (uint64_t)(uintptr_t)fc, NULL, 0);
	return sl ? sl->val : NULL;
}

struct arn_stats_scope *http_rt_rl_scope(const struct arn_cfg_http_ratelimit *cfg)
{
	const struct slot *sl = snap_find(K_RLS, (uint64_t)(uintptr_t)cfg, NULL, 0);
	return sl ? sl->val : NULL;
}

struct arn_tls_ctx *http_rt_upstream_tls(const struct arn_cfg_cluster *c,
					 const struct http_cluster_rt *crt)
{
	const struct slot *sl = tls_find(K_TLS, (uint64_t)(uintptr_t)c, NULL, 0);
	/* a stream routed with the cluster's previous (or next) version while
	 * the table has the other: the context in force under its name */
	if (!sl && crt)
		sl = tls_find(K_UTLS_NAME, crt->hash, crt->name, crt->len);
	if (!sl)
		sl = tls_find(K_UTLS_NAME, c->obj.hash, c->obj.name, c->obj.name_len);
	return sl ? sl->val : NULL;
}

/* Is @p m one of @p c's matches (or its default)? By address alone: a
 * host's choice may be another generation's, whose cluster may be gone. */
static bool tsm_of(const struct arn_cfg_cluster *c, const struct arn_cfg_ts_match *m)
{
	uintptr_t a = (uintptr_t)m, lo = (uintptr_t)c->ts_matches;
	return m == &c->ts_default ||
	       (a >= lo && a < lo + c->n_ts_matches * sizeof(*c->ts_matches));
}

const struct arn_cfg_ts_match *http_rt_host_tsm(const struct arn_cfg_cluster *c,
						const struct http_cluster_rt *crt,
						const struct arn_cfg_endpoints *eps,
						const struct http_host *h, uint32_t addr,
						uint16_t port)
{
	if (!c || !c->n_ts_matches)
		return NULL;
	const struct arn_cfg_ts_match *m = h ? __atomic_load_n(&h->tsm, __ATOMIC_ACQUIRE) : NULL;
	if (m && tsm_of(c, m))
		return m;
	/* the stream's generation differs from the one the control lcore
	 * chose with: its own endpoints decide (once per connection) */
	const struct arn_cfg_endpoint *ep = NULL;
	struct http_lb_view v;
	/* (no endpoints of its own: the snapshot's, the newest) */
	if (crt && http_rt_lb_view(crt, 0, &v) && (!eps || v.eps == eps) && v.ep_sorted) {
		size_t lo = 0, hi = v.n_ep_sorted;
		while (lo < hi && !ep) {
			size_t mid = lo + (hi - lo) / 2;
			const struct arn_cfg_endpoint *x = v.ep_sorted[mid];
			if (x->addr == addr && x->port == port)
				ep = x;
			else if (x->addr < addr || (x->addr == addr && x->port < port))
				lo = mid + 1;
			else
				hi = mid;
		}
	}
	for (size_t p = 0; eps && !ep && p < eps->n_priorities; p++)
		for (size_t l = 0; !ep && l < eps->priorities[p].n_localities; l++) {
			const struct arn_cfg_locality *lo = &eps->priorities[p].localities[l];
			for (size_t i = 0; !ep && i < lo->n_endpoints; i++)
				if (lo->endpoints[i].addr == addr && lo->endpoints[i].port == port)
					ep = &lo->endpoints[i];
		}
	return ep ? arn_cfg_tsm_resolve(c, ep) : &c->ts_default;
}

struct arn_tls_ctx *http_rt_tsm_tls(const struct arn_cfg_ts_match *m,
				    const struct http_cluster_rt *crt)
{
	if (m->is_default)
		return http_rt_upstream_tls(m->cluster, crt);
	const struct slot *sl = tls_find(K_TLS, (uint64_t)(uintptr_t)m, NULL, 0);
	if (sl)
		return sl->val;
	/* a stream on a generation the table no longer carries: the context
	 * in force under the cluster's and the match's names (rare: a walk) */
	const struct tls_tab *t = __atomic_load_n(&tls_current, __ATOMIC_ACQUIRE);
	const struct arn_cfg_obj *co = &m->cluster->obj;
	for (size_t i = 0; t && i < t->n_live; i++) {
		const struct tls_rt *e = &t->tls[i];
		if (!e->cl || e->key == e->owner || e->cl->name_len != co->name_len ||
		    memcmp(e->cl->name, co->name, co->name_len) != 0)
			continue;
		const struct arn_cfg_ts_match *o = e->key;
		if (strcmp(o->name, m->name) == 0)
			return e->ctx;
	}
	return NULL;
}

struct arn_stats_scope *http_rt_mcp_backend(const struct arn_cfg_toolset *ts, uint32_t b)
{
	const struct slot *sl = snap_find(K_MCPB, mcpb_key(ts, b), NULL, 0);
	return sl ? sl->val : NULL;
}

struct http_listener_rt *http_rt_listener(uint32_t addr, uint16_t port)
{
	const struct slot *s = snap_find(K_LISTENER, ((uint64_t)addr << 16) | port, NULL, 0);
	return s ? s->val : NULL;
}

struct http_host *http_rt_host(const struct http_cluster_rt *crt, uint32_t addr, uint16_t port)
{
	size_t n;
	struct http_host *const *hosts = http_rt_hosts(crt, &n);
	return http_hosts_find(hosts, n, addr, port);
}

struct http_host *const *http_rt_hosts(const struct http_cluster_rt *crt, size_t *n)
{
	const struct snap *sn = __atomic_load_n(&current, __ATOMIC_ACQUIRE);
	*n = 0;
	if (!sn || !crt)
		return NULL;
	const struct cent *e =
	    (const void *)arn_hamt_get(sn->cp->ents, crt->name, crt->len, crt->hash);
	if (!e || e->crt != crt)
		return NULL;
	*n = e->n_hosts;
	return e->hosts;
}

bool http_rt_lb_view(const struct http_cluster_rt *crt, unsigned worker, struct http_lb_view *v)
{
	const struct snap *sn = __atomic_load_n(&current, __ATOMIC_ACQUIRE);
	memset(v, 0, sizeof(*v));
	if (!sn || !crt)
		return false;
	const struct cent *e =
	    (const void *)arn_hamt_get(sn->cp->ents, crt->name, crt->len, crt->hash);
	if (!e || e->crt != crt)
		return false;
	v->eps = e->eps;
	v->hosts = e->hosts;
	v->n_hosts = e->n_hosts;
	v->ep_hosts = e->ep_hosts;
	v->n_ep_hosts = e->ep_hosts ? e->n_ep : 0;
	v->cache = worker < e->n_lbc ? &e->lbc[worker] : NULL;
	v->ep_sorted = e->ep_sorted;
	v->n_ep_sorted = e->ep_sorted ? e->n_ep : 0;
	return true;
}

void http_rt_lb_in(const struct http_cluster_rt *crt, unsigned worker, struct http_lb_in *in)
{
	const struct arn_cfg_cluster *cl = in->cluster;
	bool checked = cl->n_health_checks || cl->outlier.present;
	/* the hash policies' tables live in the cache only */
	bool hashed = cl->lb == ARN_CFG_LB_RING_HASH || cl->lb == ARN_CFG_LB_MAGLEV;
	/* so is the locality schedule, when a priority has localities to
	 * choose among (one is the whole priority: no schedule) */
	for (size_t p = 0; cl->locality_weighted && !hashed && in->eps && p < in->eps->n_priorities;
	     p++)
		hashed = in->eps->priorities[p].n_localities > 1;
	struct http_lb_view v;
	if (!crt || !(checked || hashed || (in->eps && in->eps->n_endpoints > HTTP_LB_CACHE_MIN)) ||
	    !http_rt_lb_view(crt, worker, &v))
		return;
	if (checked) {
		in->hosts = v.hosts;
		in->n_hosts = v.n_hosts;
	}
	in->cache = v.cache;
	in->epoch = __atomic_load_n(&crt->health_epoch, __ATOMIC_ACQUIRE);
	if (v.eps == in->eps) {
		in->ep_hosts = v.ep_hosts;
		in->n_ep_hosts = v.n_ep_hosts;
	}
}

/* The balancer's caches of an entry of @p n endpoints for @p nw workers,
 * in one block (each cache's lists after the caches), or NULL; with room
 * for a table of @p tab entries of kind @p kind (HTTP_LB_TAB_*) each, and
 * for @p nloc localities (locality weighting; 0: none). */
static struct http_lb_cache *lb_caches(size_t n, unsigned nw, uint8_t kind, size_t tab, size_t nloc)
{
	if (!n || !nw)
		return NULL;
	size_t head = nw * sizeof(struct http_lb_cache);
	size_t per = n * (sizeof(const struct arn_cfg_endpoint *) + sizeof(uint64_t));
	per += nloc * (sizeof(struct http_lb_loc) + 2 * sizeof(uint64_t) + sizeof(uint64_t));
	if (nloc && kind != HTTP_LB_TAB_NONE)
		per += n * sizeof(double); /* the normalized weights */
	if (kind == HTTP_LB_TAB_RING)
		per += tab * sizeof(struct http_lb_point);
	else if (kind == HTTP_LB_TAB_MAGLEV)
		per += 4 * n * sizeof(uint64_t) + ((tab * sizeof(uint32_t) + 7) & ~(size_t)7);
	size_t size = (head + nw * per + 63) & ~(size_t)63;
	struct http_lb_cache *c = aligned_alloc(64, size);
	if (!c)
		return NULL;
	memset(c, 0, size);
	char *p = (char *)c + head;
	for (unsigned w = 0; w < nw; w++) {
		c[w].cap = n;
		c[w].cand = (const struct arn_cfg_endpoint **)(void *)p;
		p += n * sizeof(const struct arn_cfg_endpoint *);
		c[w].cum = (uint64_t *)(void *)p;
		p += n * sizeof(uint64_t);
		if (nloc) {
			c[w].loc_cap = nloc;
			c[w].loc = (struct http_lb_loc *)(void *)p;
			p += nloc * sizeof(struct http_lb_loc);
			c[w].loc_tmp = (uint64_t *)(void *)p;
			p += 2 * nloc * sizeof(uint64_t);
			c[w].loc_heap = (uint32_t *)(void *)p; /* 8 bytes each: aligned */
			p += nloc * sizeof(uint64_t);
			if (kind != HTTP_LB_TAB_NONE) {
				c[w].nw = (double *)(void *)p;
				p += n * sizeof(double);
			}
		}
		if (kind == HTTP_LB_TAB_RING) {
			c[w].tab_cap = tab;
			c[w].ring = (struct http_lb_point *)(void *)p;
			p += tab * sizeof(struct http_lb_point);
		} else if (kind == HTTP_LB_TAB_MAGLEV) {
			c[w].tab_cap = tab;
			c[w].scratch = (uint64_t *)(void *)p;
			p += 4 * n * sizeof(uint64_t);
			c[w].mag = (uint32_t *)(void *)p;
			p += (tab * sizeof(uint32_t) + 7) & ~(size_t)7;
		}
	}
	return c;
}

const struct http_rt_od *http_rt_od_clusters(size_t *n, uint64_t *id)
{
	const struct snap *sn = __atomic_load_n(&current, __ATOMIC_ACQUIRE);
	*n = sn ? sn->cp->n_od : 0;
	*id = sn ? sn->cp->sync : 0;
	return sn ? sn->cp->od : NULL;
}

size_t http_rt_hc_clusters(void)
{
	const struct snap *sn = __atomic_load_n(&current, __ATOMIC_ACQUIRE);
	return sn ? sn->cp->n_hc : 0;
}

void arn_http_set_healthcheck_failed(bool failed)
{
	__atomic_store_n(&http_hc_failed_, failed, __ATOMIC_RELAXED);
}

void http_rt_hcm_put(struct http_hcm_rt *r)
{
	if (!r || __atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	struct http_hcm_rt *head = __atomic_load_n(&hcm_reclaim, __ATOMIC_RELAXED);
	do {
		r->reclaim_next = head;
	} while (!__atomic_compare_exchange_n(&hcm_reclaim, &head, r, true, __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
}

/* ---- control side --------------------------------------------------------------- */

static void hcm_rt_free(struct http_hcm_rt *r)
{
	arn_stats_scope_put(r->stats);
	arn_stats_scope_put(r->h2stats);
	arn_stats_scope_put(r->h1stats);
	http_l4_hrt_fini(r);
	for (unsigned i = 0; i < r->n_loggers; i++)
		arn_access_logger_put(r->loggers[i]);
	for (unsigned i = 0; i < r->n_glogs; i++)
		glog_ops->destroy(r->glogs[i]);
	http_lr_free(r->lr);
	free(r);
}

static void reclaim_hcms(void)
{
	struct http_hcm_rt *r = __atomic_exchange_n(&hcm_reclaim, NULL, __ATOMIC_ACQUIRE);
	while (r) {
		struct http_hcm_rt *n = r->reclaim_next;
		hcm_rt_free(r);
		r = n;
	}
}

static void tls_rt_clear(struct tls_rt *t)
{
	arn_tls_ctx_unref(t->ctx); /* connections keep theirs */
	arn_cfg_unpin(t->owner);
	for (size_t i = 0; i < t->n_certs; i++)
		arn_cfg_unpin(t->certs[i]);
	if (t->validation)
		arn_cfg_unpin(t->validation);
	if (t->tickets)
		arn_cfg_unpin(t->tickets);
}

/* A trie's reference to an entry dropped (control lcore: tries are freed
 * after the grace period of the snapshots that published them). */
static void cent_unref(struct arn_cfg_obj *o)
{
	if (__atomic_sub_fetch(&o->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	struct cent *e = (struct cent *)(void *)o;
	for (size_t i = 0; i < e->n_hosts; i++)
		http_host_put(e->hosts[i]);
	http_crt_put(e->crt);
	free(e->ep_hosts);
	free(e->ep_sorted);
	free(e->lbc);
	for (size_t i = 0; i < e->n_tsm_sc; i++)
		if (e->tsm_sc[i])
			arn_stats_scope_put(e->tsm_sc[i]);
	free(e->tsm_sc);
	free(e);
}

static void cpart_put(struct cpart *s)
{
	if (!s || --s->refs > 0)
		return;
	arn_hamt_unref(s->ents, cent_unref);
	arn_hamt_unref(s->cl_trie, arn_cfg_obj_unref);
	arn_hamt_unref(s->cla_trie, arn_cfg_obj_unref);
	free(s->od);
	free(s);
}

static void snap_free(void *arg)
{
	struct snap *s = arg;
	if (!s)
		return;
	for (size_t i = 0; i < s->n_hcms; i++)
		http_rt_hcm_put(s->hcms[i]);
	for (size_t i = 0; i < s->n_pinned; i++)
		arn_cfg_unpin(s->pinned[i]);
	cpart_put(s->cp);
	for (size_t i = 0; i < s->n_lrts; i++)
		http_lrt_put(s->lrts[i]);
	for (size_t i = 0; i < s->n_rls; i++)
		arn_stats_scope_put(s->rls[i].sc);
	free(s->rls);
	for (size_t i = 0; i < s->n_mcpbs; i++)
		arn_stats_scope_put(s->mcpbs[i].sc);
	free(s->mcpbs);
	free(s->lrts);
	free(s->hcms);
	free(s->pinned);
	free(s->slots);
	free(s);
}

static void tls_tab_free(void *arg)
{
	struct tls_tab *t = arg;
	if (!t)
		return;
	for (size_t i = 0; i < t->n_tls; i++)
		tls_rt_clear(&t->tls[i]);
	arn_hamt_unref(t->cl_trie, arn_cfg_obj_unref);
	free(t->tls);
	free(t->slots);
	free(t);
}

static int slot_put(struct slot *slots, size_t mask, uint8_t kind, uint64_t key, const void *name,
		    size_t len, void *val)
{
	for (size_t i = (size_t)(key * 0x9e3779b97f4a7c15ull) & mask;; i = (i + 1) & mask) {
		struct slot *sl = &slots[i];
		if (!sl->kind) {
			*sl = (struct slot){kind, key, name, len, val};
			return 0;
		}
		if (sl->kind == kind && sl->key == key &&
		    (!name || (sl->len == len && memcmp(sl->name, name, len) == 0)))
			return 0; /* already there (two listeners sharing an HCM prefix) */
	}
}

static int snap_put(struct snap *s, uint8_t kind, uint64_t key, const void *name, size_t len,
		    void *val)
{
	return slot_put(s->slots, s->mask, kind, key, name, len, val);
}

/* The runtime object of connection manager @p h, or (h NULL) of tcp_proxy
 * filter @p tp: statistics, access loggers, the network filters' scopes;
 * or (both NULL) of listener @p l's own access_log: its loggers only. */
static struct http_hcm_rt *hcm_rt_new(const struct arn_cfg_listener *l, const struct arn_cfg_hcm *h,
				      const struct arn_cfg_tcp_proxy *tp)
{
	struct http_hcm_rt *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->hcm = h;
	r->tp = h ? NULL : tp;
	r->lsn = h || tp ? NULL : l;
	r->refs = 1; /* the snapshot's */
	r->filters_idle = h && http_filters_idle(h);
	r->cresp = h && arn_cfg_hcm_has_filter(h, ARN_CFG_HF_CUSTOM_RESPONSE);
	if (h)
		r->stats = arn_stats_scope_get(&arn_stats_http_schema, ARN_STATS_TAG_HCM,
					       h->stat_prefix ? h->stat_prefix : "");
	else if (tp)
		r->stats = arn_stats_scope_get(&arn_stats_tcp_proxy_schema, ARN_STATS_TAG_TCP_PROXY,
					       tp->stat_prefix ? tp->stat_prefix : "");
	if (h && h->codec != ARN_CFG_CODEC_HTTP1)
		r->h2stats = arn_stats_scope_get(&arn_stats_http2_schema, NULL, NULL);
	if (h && h->headers_with_underscores)
		r->h1stats = arn_stats_scope_get(&arn_stats_http1_schema, NULL, NULL);
	if (h || tp)
		http_l4_hrt_init(r, l);
	if (h && h->local_reply)
		r->lr = http_lr_new(h->local_reply, l->obj.name);
	const struct arn_cfg_access_log *logs = h ? h->access_logs : tp ? tp->access_logs : l->access_logs;
	size_t n_logs = h ? h->n_access_logs : tp ? tp->n_access_logs : l->n_access_logs;
	for (size_t i = 0; i < n_logs && r->n_loggers < HTTP_MAX_LOGGERS; i++) {
		const struct arn_cfg_access_log *a = &logs[i];
		if (a->grpc) { /* a gRPC access logger (http_glog.c) */
			struct http_glog *g = glog_ops ? glog_ops->create(a, l->obj.name, i) : NULL;
			if (g && r->n_glogs < HTTP_MAX_LOGGERS) {
				r->glogs[r->n_glogs++] = g;
				r->glog_log = glog_ops->log;
			} else if (g) {
				glog_ops->destroy(g);
			}
			continue;
		}
		struct arn_sb err = ARN_SB_INIT;
		/* lib/config compiled it already (the same builder): this
		 * fails only without memory */
		struct arn_access_format *f = arn_access_format_of(
		    a->json_format, a->format, a->omit_empty_values, "log_format", &err);
		if (!f) {
			ARN_ERR(HTTP, "listener '%s' access_log[%zu]: %s; this log is off",
				l->obj.name, i, arn_sb_cstr(&err));
			arn_sb_free(&err);
			continue;
		}
		const char *path = a->kind == ARN_CFG_LOG_STDOUT   ? "/dev/stdout"
				   : a->kind == ARN_CFG_LOG_STDERR ? "/dev/stderr"
								   : a->path;
		struct arn_access_filter *af = NULL;
		if (a->filter_json) {
			/* lib/config checked it: this fails only without memory */
			af = arn_access_filter_json(a->filter_json, strlen(a->filter_json), "",
						    &err);
			if (!af) {
				if (f)
					arn_access_format_free(f);
				ARN_ERR(HTTP, "listener '%s' access_log[%zu]%s; this log is off",
					l->obj.name, i, arn_sb_cstr(&err));
				arn_sb_free(&err);
				continue;
			}
		}
		struct arn_access_logger *lg = arn_access_logger_open(path, f, &err);
		if (!lg) {
			if (f)
				arn_access_format_free(f);
			arn_access_filter_free(af);
			ARN_ERR(HTTP, "listener '%s' access_log[%zu]: %s; this log is off",
				l->obj.name, i, arn_sb_cstr(&err));
		} else {
			if (af)
				arn_access_logger_set_filter(lg, af);
			r->loggers[r->n_loggers++] = lg;
		}
		arn_sb_free(&err);
	}
	r->n_logs = r->n_loggers + r->n_glogs;
	return r;
}

static struct http_hcm_rt *find_hcm(const struct snap *s, const void *key)
{
	for (size_t i = 0; s && i < s->n_hcms; i++)
		if (hrt_key(s->hcms[i]) == (uint64_t)(uintptr_t)key)
			return s->hcms[i];
	return NULL;
}

static bool snap_hold_lrt(struct snap *s, struct http_listener_rt *l)
{
	if (s->n_lrts == s->cap_lrts) {
		size_t nc = s->cap_lrts ? s->cap_lrts * 2 : 8;
		void *p = realloc(s->lrts, nc * sizeof(*s->lrts));
		if (!p)
			return false;
		s->lrts = p;
		s->cap_lrts = nc;
	}
	http_lrt_ref(l);
	s->lrts[s->n_lrts++] = l;
	return true;
}

struct build {
	struct snap *s;
	size_t cap_hcms, cap_pinned;
	const struct arn_cfg_gen *g;
	bool oom;
};

/* Chain @p fc's runtime object (its manager's or tcp_proxy's), or with
 * @p fc NULL listener @p l's own (its access_log), into the snapshot. */
static void chain_hcm(struct build *b, const struct arn_cfg_listener *l,
		      const struct arn_cfg_filter_chain *fc)
{
	const struct arn_cfg_hcm *h = fc && fc->kind == ARN_CFG_NF_HCM ? fc->hcm : NULL;
	const struct arn_cfg_tcp_proxy *tp =
	    fc && fc->kind == ARN_CFG_NF_TCP_PROXY ? fc->tcp_proxy : NULL;
	const void *key = h    ? (const void *)h
			  : tp ? (const void *)tp
			  : !fc && l->n_access_logs ? (const void *)l
						    : NULL;
	if (!key)
		return;
	struct snap *s = b->s;
	if (find_hcm(s, key))
		return;
	struct http_hcm_rt *r = find_hcm(current, key);
	if (r)
		__atomic_fetch_add(&r->refs, 1, __ATOMIC_RELAXED);
	else
		r = hcm_rt_new(l, h, tp);
	if (!r) {
		b->oom = true;
		return;
	}
	if (s->n_hcms == b->cap_hcms) {
		size_t nc = b->cap_hcms ? b->cap_hcms * 2 : 8;
		void *p = realloc(s->hcms, nc * sizeof(*s->hcms));
		if (!p) {
			http_rt_hcm_put(r);
			b->oom = true;
			return;
		}
		s->hcms = p;
		b->cap_hcms = nc;
	}
	s->hcms[s->n_hcms++] = r;
}

static const struct tls_rt *find_tls(const struct tls_tab *s, const struct tls_rt *want)
{
	if (!s)
		return NULL;
	for (size_t i = 0; i < s->n_tls; i++) {
		const struct tls_rt *t = &s->tls[i];
		if (t->key == want->key && t->n_certs == want->n_certs &&
		    memcmp(t->certs, want->certs, sizeof(t->certs)) == 0 &&
		    t->validation == want->validation && t->tickets == want->tickets)
			return t;
	}
	return NULL;
}

/*
 * auto_config (Envoy's AutoHttpConfig): ALPN chooses the protocol, and a
 * cluster whose UpstreamTlsContext lists no alpn_protocols offers
 * "h2,http/1.1", the default ALPN Envoy gives such a cluster (its own
 * list, when it has one, is offered as it is). Without it the host would
 * see no ALPN and answer HTTP/1.1 only.
 */
static void auto_config_alpn(struct arn_tls_ctx_conf *cf, const struct arn_cfg_obj *cl)
{
	static const char *const auto_alpn[] = {"h2", "http/1.1"};
	if (!cl || cl->type != ARN_CFG_CLUSTER || cf->n_alpn || cf->server)
		return;
	const struct arn_cfg_cluster *c = (const struct arn_cfg_cluster *)(const void *)cl;
	if (c->http.upstream != 3)
		return;
	cf->alpn = auto_alpn;
	cf->n_alpn = 2;
}

/* The server context of a chain, or the client context of a cluster
 * (@p key, whose @p t it is; @p owner, the configuration object the
 * context pins: the chain's listener, the cluster; named @p name in
 * logs), into table @p s: the current table's when the object and its
 * Secrets are the same, else built now. One whose
 * context cannot be built has none: a chain's connections are refused, a
 * cluster's upstream connections fail (503 UF), and the reason is logged
 * naming the listener and chain or the cluster, and the Secret or field. */
static void snap_tls(struct tls_tab *s, const struct arn_cfg_gen *g, bool *oom, const void *key,
		     const void *owner, const struct arn_cfg_tls *t, bool server, const char *name,
		     const struct arn_cfg_obj *cl)
{
	char err[256];
	const char *refused =
	    server ? "its connections are refused" : "its upstream connections fail";
	if (t->n_cert_secrets > TLS_RT_CERTS) {
		ARN_ERR(HTTP, "%s: more than %d certificates; %s", name, TLS_RT_CERTS, refused);
		return;
	}
	struct tls_rt nt = {.key = key, .owner = owner, .n_certs = t->n_cert_secrets, .cl = cl};
	for (size_t i = 0; i < nt.n_certs; i++)
		nt.certs[i] = arn_cfg_secret_find(g, &t->cert_secrets[i]);
	if (t->validation_secret.len)
		nt.validation = arn_cfg_secret_find(g, &t->validation_secret);
	if (server && t->ticket_keys_secret.len)
		nt.tickets = arn_cfg_secret_find(g, &t->ticket_keys_secret);
	const struct tls_rt *old = find_tls(tls_current, &nt);
	if (old) {
		nt.ctx = old->ctx;
		arn_tls_ctx_ref(nt.ctx);
	} else {
		struct arn_tls_ctx_conf cf;
		struct arn_tls_cert certs[TLS_RT_CERTS];
		const void *pins[2];
		if (arn_tls_ctx_conf_from_cfg(&cf, t, server, owner, nt.certs, nt.n_certs, certs,
					      nt.validation, nt.tickets, pins, err,
					      sizeof(err)) < 0) {
			ARN_ERR(HTTP, "%s: %s; %s", name, err, refused);
			return;
		}
		cf.name = name;
		cf.replicas = arn_stats_workers();
		auto_config_alpn(&cf, cl);
		nt.ctx = arn_tls_ctx_new(&cf, err, sizeof(err));
		if (!nt.ctx) {
			ARN_ERR(HTTP, "%s: %s; %s", name, err, refused);
			return;
		}
	}
	if (s->n_tls == s->cap_tls) {
		size_t nc = s->cap_tls ? s->cap_tls * 2 : 4;
		void *p = realloc(s->tls, nc * sizeof(*s->tls));
		if (!p) {
			arn_tls_ctx_unref(nt.ctx);
			*oom = true;
			return;
		}
		s->tls = p;
		s->cap_tls = nc;
	}
	arn_cfg_pin(nt.owner);
	for (size_t i = 0; i < nt.n_certs; i++)
		if (nt.certs[i])
			arn_cfg_pin(nt.certs[i]);
	if (nt.validation)
		arn_cfg_pin(nt.validation);
	if (nt.tickets)
		arn_cfg_pin(nt.tickets);
	s->tls[s->n_tls++] = nt;
}

/* One route's or virtual host's typed_per_filter_config entries: the
 * local_ratelimit ones count under their own stat_prefix, as Envoy's. */
static void per_filter_rls(struct build *b, const struct arn_cfg_per_filter *pf, size_t n)
{
	struct snap *s = b->s;
	for (size_t i = 0; i < n; i++) {
		if (pf[i].kind != ARN_CFG_PF_LOCAL_RATELIMIT || !pf[i].cfg)
			continue;
		const struct arn_cfg_http_ratelimit *f = pf[i].cfg;
		bool have = false;
		for (size_t k = 0; k < s->n_rls && !have; k++)
			have = s->rls[k].cfg == f;
		if (have)
			continue;
		if (s->n_rls == s->cap_rls) {
			size_t nc = s->cap_rls ? s->cap_rls * 2 : 8;
			void *p = realloc(s->rls, nc * sizeof(*s->rls));
			if (!p) {
				b->oom = true;
				return;
			}
			s->rls = p;
			s->cap_rls = nc;
		}
		char fam[256];
		snprintf(fam, sizeof(fam), "%s.http_local_rate_limit",
			 f->stat_prefix ? f->stat_prefix : "");
		struct arn_stats_scope *sc = arn_stats_scope_get_named(
		    &arn_stats_http_local_ratelimit_schema, fam, NULL, NULL);
		if (!sc) {
			b->oom = true;
			return;
		}
		s->rls[s->n_rls++] = (struct rl_scope){f, sc};
	}
}

/* The backends of the ToolSet chain @p fc's MCP gateway filter serves. */
static void chain_mcp(struct build *b, const struct arn_cfg_filter_chain *fc)
{
	if (!fc || fc->kind != ARN_CFG_NF_HCM || !fc->hcm || !fc->hcm->mcp_gateway)
		return;
	const struct arn_cfg_toolset *ts =
	    arn_cfg_toolset_find(b->g, &fc->hcm->mcp_gateway->toolset);
	struct snap *s = b->s;
	for (uint32_t i = 0; ts && i < ts->n_backends; i++) {
		uint64_t key = mcpb_key(ts, i);
		bool have = false;
		for (size_t k = 0; k < s->n_mcpbs && !have; k++)
			have = s->mcpbs[k].key == key;
		if (have)
			continue;
		if (s->n_mcpbs == s->cap_mcpbs) {
			size_t nc = s->cap_mcpbs ? s->cap_mcpbs * 2 : 8;
			void *p = realloc(s->mcpbs, nc * sizeof(*s->mcpbs));
			if (!p) {
				b->oom = true;
				return;
			}
			s->mcpbs = p;
			s->cap_mcpbs = nc;
		}
		/* mcp.<ToolSet>.backend.<name>.* in /stats; in Prometheus the
		 * names are tags, as the per-tool stats' (http_mcp_tools.c) */
		char *tsn = strndup(ts->obj.name, ts->obj.name_len);
		char *bn = strndup(ts->backends[i].name, ts->backends[i].name_len);
		struct arn_stats_scope *sc =
		    tsn && bn ? arn_stats_scope_get_sub(&arn_stats_mcp_backend_schema, "mcp",
							"arion_toolset", tsn, "backend",
							"arion_mcp_backend", bn)
			      : NULL;
		free(tsn);
		free(bn);
		if (!sc) {
			b->oom = true;
			return;
		}
		s->mcpbs[s->n_mcpbs++] = (struct mcpb_scope){key, sc};
	}
}

/* The per-route local_ratelimit configurations of the routes chain @p fc's
 * connection manager uses in this generation. */
static void chain_rls(struct build *b, const struct arn_cfg_filter_chain *fc)
{
	if (!fc || fc->kind != ARN_CFG_NF_HCM || !fc->hcm)
		return;
	const struct arn_cfg_route_table *rt = arn_cfg_hcm_routes(b->g, fc->hcm);
	for (size_t v = 0; rt && v < rt->n_vhosts; v++) {
		const struct arn_cfg_vhost *vh = &rt->vhosts[v];
		per_filter_rls(b, vh->per_filter, vh->n_per_filter);
		for (size_t r = 0; r < vh->n_routes; r++)
			per_filter_rls(b, vh->routes[r].per_filter, vh->routes[r].n_per_filter);
	}
}

static void each_listener(void *ctx, const struct arn_cfg_listener *l)
{
	struct build *b = ctx;
	struct snap *s = b->s;
	if (s->n_pinned == b->cap_pinned) {
		size_t nc = b->cap_pinned ? b->cap_pinned * 2 : 8;
		void *p = realloc(s->pinned, nc * sizeof(*s->pinned));
		if (!p) {
			b->oom = true;
			return;
		}
		s->pinned = p;
		b->cap_pinned = nc;
	}
	arn_cfg_pin(l);
	s->pinned[s->n_pinned++] = l;
	struct http_listener_rt *lr = http_listener_get(l->addr, l->port);
	if (lr && lr->seen != sync_id) { /* two listeners may share an address */
		lr->seen = sync_id;
		b->oom |= !snap_hold_lrt(s, lr);
	}
	bool tls = l->default_chain && l->default_chain->tls;
	for (size_t i = 0; i < l->n_chains; i++) {
		chain_hcm(b, l, &l->chains[i]);
		chain_rls(b, &l->chains[i]);
		chain_mcp(b, &l->chains[i]);
		tls |= l->chains[i].tls != NULL;
	}
	if (tls && lr && !lr->ssl) /* published with the snapshot */
		lr->ssl = calloc(ARN_STATS_MAX_WORKERS, sizeof(*lr->ssl));
	if (l->default_chain)
		chain_hcm(b, l, l->default_chain);
	if (l->proxy_protocol && lr && !lr->pp) {
		char fam[160];
		snprintf(fam, sizeof(fam), "proxy_proto%s%s", l->pp_stat_prefix ? "." : "",
			 l->pp_stat_prefix ? l->pp_stat_prefix : "");
		lr->pp = arn_stats_scope_get_named(&arn_stats_proxy_proto_schema, fam, NULL, NULL);
	}
	chain_rls(b, l->default_chain);
	chain_mcp(b, l->default_chain);
	chain_hcm(b, l, NULL); /* the listener's own access_log, if any */
}

/*
 * Endpoints a generation adds: their next hops are resolved on every
 * worker as soon as the generation is synced, before the first request
 * needs them (issue 22: ~50 SYNs to never-contacted endpoints waited on
 * ARP at once, most dropped). At most RESOLVE_MAX distinct addresses per
 * generation, so that a first load of thousands of endpoints on one link
 * is not an ARP storm: the rest resolve on demand as before. The control
 * lcore allocates and frees each batch; workers only read it and count
 * down its references.
 */
#define RESOLVE_MAX 256
struct resolve_batch {
	struct resolve_batch *next;
	uint32_t refs; /* workers that have not run it yet (atomic) */
	uint32_t n;
	uint32_t addr[RESOLVE_MAX];
};
static struct resolve_batch *resolving; /* posted, not yet run by every worker */

static void resolve_on_worker(struct arn_lcore *lc, void *arg)
{
	struct resolve_batch *b = arg;
	for (uint32_t i = 0; i < b->n; i++)
		arn_net_resolve(lc, b->addr[i]);
	__atomic_sub_fetch(&b->refs, 1, __ATOMIC_RELEASE);
}

static void resolve_reclaim(void)
{
	for (struct resolve_batch **pp = &resolving; *pp;) {
		struct resolve_batch *b = *pp;
		if (__atomic_load_n(&b->refs, __ATOMIC_ACQUIRE) == 0) {
			*pp = b->next;
			free(b);
		} else {
			pp = &b->next;
		}
	}
}

static void resolve_add(struct resolve_batch *b, uint32_t addr)
{
	for (uint32_t i = 0; i < b->n; i++)
		if (b->addr[i] == addr)
			return;
	if (b->n < RESOLVE_MAX)
		b->addr[b->n++] = addr;
}

static void resolve_post(struct resolve_batch *b)
{
	struct arn_net *net = arn_net_current();
	unsigned nw = net ? arn_net_n_workers(net) : 0;
	if (b->n == 0 || nw == 0) {
		free(b);
		return;
	}
	__atomic_store_n(&b->refs, nw, __ATOMIC_RELAXED);
	for (unsigned w = 0; w < nw; w++)
		if (arn_net_post(w, resolve_on_worker, b) != 0)
			__atomic_sub_fetch(&b->refs, 1, __ATOMIC_RELEASE);
	b->next = resolving;
	resolving = b;
}

struct cl_walk {
	const struct arn_cfg_gen *g;
	struct cpart *s;
	bool oom;
	struct resolve_batch *resolve; /* new endpoints' addresses, or NULL */
	/* the runtime objects of the entries built with outlier detection */
	struct http_cluster_rt **od;
	size_t n_od, cap_od;
};

static int host_cmp(const void *a, const void *b)
{
	const struct http_host *x = *(struct http_host *const *)a,
			       *y = *(struct http_host *const *)b;
	uint64_t kx = (uint64_t)x->addr << 16 | x->port, ky = (uint64_t)y->addr << 16 | y->port;
	return kx < ky ? -1 : kx > ky;
}

static int ep_cmp(const void *a, const void *b)
{
	const struct arn_cfg_endpoint *x = *(const struct arn_cfg_endpoint *const *)a,
				      *y = *(const struct arn_cfg_endpoint *const *)b;
	uint64_t kx = (uint64_t)x->addr << 16 | x->port, ky = (uint64_t)y->addr << 16 | y->port;
	return kx < ky ? -1 : kx > ky;
}

/* Cluster @p name's entry leaves the part being built (if it has one). */
static void ent_drop(struct cl_walk *cw, const char *name, size_t len, uint64_t hash)
{
	struct cpart *s = cw->s;
	const struct cent *e = (const void *)arn_hamt_get(s->ents, name, len, hash);
	if (!e)
		return;
	size_t nh = e->n_hosts;
	bool hc = e->hc;
	if (arn_hamt_del(&s->ents, name, len, hash, cent_unref) != 0) {
		cw->oom = true;
		return;
	}
	s->n_crts--;
	s->n_hc -= hc;
	s->n_hosts -= nh;
}

/* Entry @p e's total_match_count scopes for cluster @p cl (runtime @p c):
 * cluster.<name>.<match>, then cluster.<name>.default. One a name
 * another schema holds (a match named like a cluster sub-scope) is not
 * counted (the registry logs it). */
static void tsm_scopes(struct cent *e, const struct arn_cfg_cluster *cl,
		       const struct http_cluster_rt *c)
{
	size_t n = cl->n_ts_matches + 1;
	e->tsm_sc = calloc(n, sizeof(*e->tsm_sc));
	if (!e->tsm_sc)
		return;
	e->n_tsm_sc = n;
	const char *cn = c->stats && c->stats->name ? c->stats->name : "cluster";
	for (size_t i = 0; i < n; i++) {
		const struct arn_cfg_ts_match *m =
		    i < cl->n_ts_matches ? &cl->ts_matches[i] : &cl->ts_default;
		size_t len = strlen(cn) + strlen(m->name) + 2;
		char *fam = malloc(len);
		if (!fam)
			continue;
		snprintf(fam, len, "%s.%s", cn, m->name);
		e->tsm_sc[i] = arn_stats_scope_get_named(&tsm_schema, fam, NULL, NULL);
		free(fam);
	}
}

/* Host @p h of entry @p e takes endpoint @p ep's transport socket, chosen
 * now, once for the generation; counted as Envoy counts a host's
 * resolution: when the host is new to the Cluster object (a new host, or
 * a new Cluster: Envoy builds every host again) or its choice changed. */
static void tsm_choose(struct cent *e, const struct arn_cfg_cluster *cl, struct http_host *h,
		       const struct arn_cfg_endpoint *ep)
{
	const struct arn_cfg_ts_match *old = __atomic_load_n(&h->tsm, __ATOMIC_RELAXED);
	const struct arn_cfg_ts_match *m = cl->n_ts_matches ? arn_cfg_tsm_resolve(cl, ep) : NULL;
	__atomic_store_n(&h->tsm, m, __ATOMIC_RELEASE);
	if (!m || (old == m) || !e->tsm_sc)
		return;
	size_t i = m->is_default ? cl->n_ts_matches : (size_t)(m - cl->ts_matches);
	if (i < e->n_tsm_sc && e->tsm_sc[i])
		arn_stats_inc(e->tsm_sc[i], ARN_STATS_SLOT_CONTROL, ARN_TSM_total_match_count);
}

/*
 * Cluster @p cl's entry, built: its object, its hosts (the same objects,
 * with their counts, for endpoints that stay) and its membership gauges,
 * in place of the one the part had under its name.
 */
static void ent_build(struct cl_walk *cw, const struct arn_cfg_cluster *cl)
{
	struct http_cluster_rt *c = http_cluster_getn(cl->obj.name, cl->obj.name_len, cl->obj.hash);
	if (!c) {
		cw->oom = true;
		return;
	}
	if (c->seen == sync_id) /* its Cluster and its endpoints both changed */
		return;
	c->seen = sync_id;
	/* a cluster's own endpoints need no lookup */
	struct arn_cfg_cluster_view v = {cl, cl->static_endpoints};
	struct arn_cfg_ref ref = {cl->obj.name, cl->obj.name_len, cl->obj.hash};
	if (!v.endpoints && arn_cfg_cluster_resolve(cw->g, &ref, &v) != 0)
		v = (struct arn_cfg_cluster_view){cl, NULL};
	size_t n = 0;
	for (size_t p = 0; v.endpoints && p < v.endpoints->n_priorities; p++)
		for (size_t l = 0; l < v.endpoints->priorities[p].n_localities; l++)
			n += v.endpoints->priorities[p].localities[l].n_endpoints;
	struct cent *e = calloc(1, sizeof(*e) + n * sizeof(e->hosts[0]));
	if (!e) {
		cw->oom = true;
		return;
	}
	http_crt_ref(c);
	e->crt = c;
	e->obj.refs = 1; /* ours, until the trie has its own */
	e->obj.type = ARN_CFG_CLUSTER;
	e->obj.name = c->name;
	e->obj.name_len = c->len;
	e->obj.hash = c->hash;
	e->hc = cl->n_health_checks > 0;
	e->od = cl->outlier.present ? &cl->outlier : NULL;
	memcpy(e->th, cl->thresholds, sizeof(e->th));
	/* without them the balancer looks hosts up and walks (the same picks) */
	e->eps = v.endpoints;
	e->n_ep = n;
	e->ep_hosts = n ? calloc(n, sizeof(*e->ep_hosts)) : NULL;
	e->ep_sorted = n ? calloc(n, sizeof(*e->ep_sorted)) : NULL;
	/* RING_HASH / MAGLEV: each worker's table, within the limits */
	bool clipped = false;
	size_t tab = http_lb_table_entries(cl, v.endpoints, &clipped);
	uint8_t kind = !tab			     ? HTTP_LB_TAB_NONE
		       : cl->lb == ARN_CFG_LB_MAGLEV ? HTTP_LB_TAB_MAGLEV
						     : HTTP_LB_TAB_RING;
	if (clipped)
		arn_stats_inc(c->stats, ARN_STATS_SLOT_CONTROL, ARN_CL_lb_hash_table_clipped);
	/* locality weighting: room for the most localities of a priority */
	size_t nloc = 0;
	for (size_t p = 0; cl->locality_weighted && v.endpoints && p < v.endpoints->n_priorities;
	     p++)
		if (v.endpoints->priorities[p].n_localities > nloc)
			nloc = v.endpoints->priorities[p].n_localities;
	e->lbc = e->ep_hosts ? lb_caches(n, cw->s->nw, kind, tab, nloc) : NULL;
	e->n_lbc = e->lbc ? cw->s->nw : 0;
	clusters_built++;
	/* membership gauges, set from the control lcore's slot only */
	int64_t total = 0, healthy = 0, degraded = 0, excluded = 0;
	bool any_tls = v.cluster->upstream_tls != NULL;
	for (size_t i = 0; i < v.cluster->n_ts_matches; i++)
		any_tls |= v.cluster->ts_matches[i].tls != NULL;
	if (any_tls && !c->ssl)
		c->ssl = calloc(ARN_STATS_MAX_WORKERS, sizeof(*c->ssl)); /* with the snapshot */
	if (cl->n_ts_matches)
		tsm_scopes(e, cl, c);
	for (size_t p = 0; v.endpoints && p < v.endpoints->n_priorities; p++) {
		const struct arn_cfg_priority *pr = &v.endpoints->priorities[p];
		for (size_t l = 0; l < pr->n_localities; l++)
			for (size_t i = 0; i < pr->localities[l].n_endpoints; i++) {
				const struct arn_cfg_endpoint *ep = &pr->localities[l].endpoints[i];
				bool created = false;
				struct http_host *h =
				    http_host_get(c, ep->addr, ep->port, &created);
				if (e->ep_sorted)
					e->ep_sorted[total] = ep;
				if (h) {
					/* transport_socket_matches: the host's
					 * choice, made once per generation (an
					 * address listed twice: its last listing's) */
					tsm_choose(e, cl, h, ep);
					if (e->ep_hosts)
						e->ep_hosts[total] = h;
					e->hosts[e->n_hosts++] = h;
				} else {
					cw->oom = true;
				}
				/* Envoy: a host added to a cluster with active
				 * checks is failed until its first check passes
				 * (worker 0 runs them, http_hc.c); set before any
				 * worker can see it */
				if (h && created && e->hc)
					__atomic_store_n(&h->hc_flags, HTTP_HOST_FAILED_ACTIVE_HC,
							 __ATOMIC_RELAXED);
				if (created && cw->resolve)
					resolve_add(cw->resolve, ep->addr);
				total++;
				if (ep->health == ARN_CFG_HEALTH_UNKNOWN ||
				    ep->health == ARN_CFG_HEALTH_HEALTHY)
					healthy++;
				else if (ep->health == ARN_CFG_HEALTH_DEGRADED)
					degraded++;
				else if (ep->health == ARN_CFG_HEALTH_DRAINING)
					excluded++;
			}
	}
	qsort(e->hosts, e->n_hosts, sizeof(e->hosts[0]), host_cmp);
	if (e->ep_sorted)
		qsort(e->ep_sorted, n, sizeof(e->ep_sorted[0]), ep_cmp);
	size_t nh = e->n_hosts;
	ent_drop(cw, e->obj.name, e->obj.name_len, e->obj.hash);
	if (arn_hamt_set(&cw->s->ents, &e->obj, cent_unref) != 0)
		cw->oom = true;
	else {
		cw->s->n_crts++;
		cw->s->n_hosts += nh;
		cw->s->n_hc += e->hc;
		if (e->od && cw->n_od == cw->cap_od) {
			size_t cap = cw->cap_od ? 2 * cw->cap_od : 16;
			struct http_cluster_rt **o = realloc(cw->od, cap * sizeof(*o));
			if (o) {
				cw->od = o;
				cw->cap_od = cap;
			} else {
				cw->oom = true;
			}
		}
		if (e->od && cw->n_od < cw->cap_od)
			cw->od[cw->n_od++] = e->crt;
	}
	cent_unref(&e->obj);
	struct arn_stats_scope *sc = c->stats;
	int64_t before = arn_stats_gauge_value(sc, ARN_CL_membership_total);
	int64_t hb = arn_stats_gauge_value(sc, ARN_CL_membership_healthy);
	if (before != total || hb != healthy)
		arn_stats_inc(sc, ARN_STATS_SLOT_CONTROL, ARN_CL_membership_change);
	arn_stats_gauge_set(sc, ARN_STATS_SLOT_CONTROL, ARN_CL_membership_total, total);
	arn_stats_gauge_set(sc, ARN_STATS_SLOT_CONTROL, ARN_CL_membership_healthy, healthy);
	arn_stats_gauge_set(sc, ARN_STATS_SLOT_CONTROL, ARN_CL_membership_degraded, degraded);
	arn_stats_gauge_set(sc, ARN_STATS_SLOT_CONTROL, ARN_CL_membership_excluded, excluded);
}

/* Every cluster of a generation, for a part built from nothing. */
static void each_cluster(void *ctx, const struct arn_cfg_cluster *cl)
{
	clusters_walked++;
	ent_build(ctx, cl);
}

/* A name whose Cluster or endpoints differ from the previous part's
 * generation: its entry built again, or dropped with the cluster. */
static void cluster_changed(void *ctx, struct arn_cfg_obj *was, struct arn_cfg_obj *now)
{
	struct cl_walk *cw = ctx;
	const struct arn_cfg_obj *o = now ? now : was;
	clusters_walked++;
	const struct arn_cfg_cluster *cl =
	    arn_cfg_find(cw->g, ARN_CFG_CLUSTER, o->name, o->name_len, o->hash);
	if (cl) {
		ent_build(cw, cl);
		return;
	}
	ent_drop(cw, o->name, o->name_len, o->hash);
	http_cluster_forget(o->name, o->name_len, o->hash);
}

/* ---- the TLS table ------------------------------------------------------------------- */

struct tls_walk {
	struct tls_tab *t;
	const struct arn_cfg_gen *g;
	bool oom;
};

static void chain_tls(struct tls_walk *tw, const struct arn_cfg_listener *l,
		      const struct arn_cfg_filter_chain *fc)
{
	if (!fc || !fc->tls)
		return;
	char name[192];
	snprintf(name, sizeof(name), "listener '%s' chain '%s'", l->obj.name,
		 fc->name ? fc->name : "");
	snap_tls(tw->t, tw->g, &tw->oom, fc, l, fc->tls, true, name, NULL);
}

static void tls_each_listener(void *ctx, const struct arn_cfg_listener *l)
{
	struct tls_walk *tw = ctx;
	for (size_t i = 0; i < l->n_chains; i++)
		chain_tls(tw, l, &l->chains[i]);
	chain_tls(tw, l, l->default_chain);
}

static void tls_each_cluster(void *ctx, const struct arn_cfg_cluster *c)
{
	struct tls_walk *tw = ctx;
	char name[400];
	/* each transport_socket_matches entry's own context, keyed by the
	 * entry (its cluster pinned as owner) */
	for (size_t i = 0; i < c->n_ts_matches; i++) {
		const struct arn_cfg_ts_match *m = &c->ts_matches[i];
		if (!m->tls)
			continue;
		snprintf(name, sizeof(name), "cluster '%.*s' transport_socket_matches '%s'",
			 (int)c->obj.name_len, c->obj.name, m->name);
		snap_tls(tw->t, tw->g, &tw->oom, m, c, m->tls, false, name, &c->obj);
	}
	if (!c->upstream_tls)
		return;
	snprintf(name, sizeof(name), "cluster '%.*s'", (int)c->obj.name_len, c->obj.name);
	snap_tls(tw->t, tw->g, &tw->oom, c, c, c->upstream_tls, false, name, &c->obj);
}

/* A reference to what @p o holds, appended to @p t. */
static bool tls_rt_copy(struct tls_tab *t, const struct tls_rt *o)
{
	if (t->n_tls == t->cap_tls) {
		size_t nc = t->cap_tls ? t->cap_tls * 2 : 4;
		void *p = realloc(t->tls, nc * sizeof(*t->tls));
		if (!p)
			return false;
		t->tls = p;
		t->cap_tls = nc;
	}
	struct tls_rt c = *o;
	arn_tls_ctx_ref(c.ctx);
	arn_cfg_pin(c.owner);
	for (size_t k = 0; k < c.n_certs; k++)
		if (c.certs[k])
			arn_cfg_pin(c.certs[k]);
	if (c.validation)
		arn_cfg_pin(c.validation);
	if (c.tickets)
		arn_cfg_pin(c.tickets);
	t->tls[t->n_tls++] = c;
	return true;
}

/* The clusters a diff named, up to TLS_DIFF_MAX (more: walk them all). */
#define TLS_DIFF_MAX 64
struct tls_diff {
	const struct arn_cfg_obj *was[TLS_DIFF_MAX];
	const struct arn_cfg_cluster *now[TLS_DIFF_MAX];
	size_t n_was, n_now;
	bool over;
};

static void tls_diff_note(void *ctx, struct arn_cfg_obj *was, struct arn_cfg_obj *now)
{
	struct tls_diff *d = ctx;
	if ((was && d->n_was == TLS_DIFF_MAX) || (now && d->n_now == TLS_DIFF_MAX)) {
		d->over = true;
		return;
	}
	if (was)
		d->was[d->n_was++] = was;
	if (now)
		d->now[d->n_now++] = (const struct arn_cfg_cluster *)(const void *)now;
}

/*
 * The clusters' contexts of table @p tw->t: with the Secrets of @p old's
 * generation, @p old's for the clusters that are the same objects and
 * those built (or found) for the ones that differ (arn_hamt_diff of the
 * two generations' clusters: a few nodes for one change among 10,000,
 * issue 17); else every cluster's.
 */
static void tls_clusters(struct tls_walk *tw, const struct tls_tab *old)
{
	struct tls_tab *nt = tw->t;
	struct tls_diff *d = NULL;
	if (old && old->secrets_changed == nt->secrets_changed && (d = calloc(1, sizeof(*d))))
		arn_hamt_diff(old->cl_trie, nt->cl_trie, tls_diff_note, d);
	if (!d || d->over) {
		free(d);
		tls_clusters_walked = arn_cfg_cluster_foreach(tw->g, tls_each_cluster, tw);
		return;
	}
	for (size_t i = 0; i < old->n_live && !tw->oom; i++) {
		const struct tls_rt *o = &old->tls[i];
		bool gone = false;
		for (size_t k = 0; o->cl && k < d->n_was && !gone; k++)
			gone = o->cl == d->was[k];
		if (o->cl && !gone)
			tw->oom |= !tls_rt_copy(nt, o);
	}
	for (size_t k = 0; k < d->n_now; k++)
		tls_each_cluster(tw, d->now[k]);
	tls_clusters_walked = d->n_now;
	free(d);
}

static bool tls_has_key(const struct tls_tab *t, size_t n, const void *key)
{
	for (size_t i = 0; i < n; i++)
		if (t->tls[i].key == key)
			return true;
	return false;
}

/*
 * Build and publish the TLS table of generation @p g: the contexts of its
 * chains and clusters (the current table's when the object and its
 * Secrets are the same, else built now), and, with @p carry, the current
 * table's others, for workers that still read the previous generation.
 */
static void tls_publish(const struct arn_cfg_gen *g, bool carry)
{
	struct tls_tab *nt = calloc(1, sizeof(*nt));
	if (!nt) {
		ARN_ERR(HTTP, "out of memory building the TLS contexts of generation %llu",
			(unsigned long long)arn_cfg_gen_id(g));
		return;
	}
	nt->gen_id = arn_cfg_gen_id(g);
	nt->cl_trie = arn_cfg_gen_trie(g, ARN_CFG_CLUSTER);
	arn_hamt_ref(nt->cl_trie);
	nt->secrets_changed = arn_cfg_gen_type_changed(g, ARN_CFG_SECRET);
	struct tls_walk tw = {.t = nt, .g = g};
	arn_cfg_listener_foreach(g, tls_each_listener, &tw);
	const struct tls_tab *old = tls_current;
	tls_clusters(&tw, old);
	nt->n_live = nt->n_tls;
	for (size_t i = 0; carry && old && i < old->n_tls && !tw.oom; i++) {
		const struct tls_rt *o = &old->tls[i];
		if (!tls_has_key(nt, nt->n_live, o->key))
			tw.oom |= !tls_rt_copy(nt, o);
	}
	size_t sz = 16;
	while (sz < nt->n_tls * 4)
		sz <<= 1;
	nt->slots = calloc(sz, sizeof(*nt->slots));
	if (!nt->slots || tw.oom) {
		ARN_ERR(HTTP, "out of memory building the TLS contexts of generation %llu",
			(unsigned long long)nt->gen_id);
		tls_tab_free(nt);
		return;
	}
	nt->mask = sz - 1;
	/* the generation's first: a name a carried cluster shares is theirs */
	for (size_t i = 0; i < nt->n_tls; i++) {
		const struct tls_rt *t = &nt->tls[i];
		slot_put(nt->slots, nt->mask, K_TLS, (uint64_t)(uintptr_t)t->key, NULL, 0, t->ctx);
		/* the entry pins the cluster, and its name with it; a
		 * transport_socket_matches entry (key: the match) is not
		 * the cluster's own context */
		if (t->cl && t->key == t->owner)
			slot_put(nt->slots, nt->mask, K_UTLS_NAME, t->cl->hash, t->cl->name,
				 t->cl->name_len, t->ctx);
	}
	struct tls_tab *prev = __atomic_exchange_n(&tls_current, nt, __ATOMIC_ACQ_REL);
	tls_carry_tok_set = false;
	if (prev)
		arn_defer_free(retired, tls_tab_free, prev);
}

static void rt_build(const struct arn_cfg_gen *g);

/* The store's prepare callback: generation @p next is about to be seen: its
 * TLS contexts and its runtime snapshot are published first. */
static void rt_prepare(void *ctx, const struct arn_cfg_gen *next)
{
	(void)ctx;
	tls_publish(next, true);
	rt_build(next);
}

/* After a publication: the table of generation @p g, once without what it
 * carried for the previous one, when no worker can read that any more. */
static void tls_sync(const struct arn_cfg_gen *g)
{
	const struct tls_tab *t = tls_current;
	if (!t || t->gen_id != arn_cfg_gen_id(g)) {
		tls_publish(g, t != NULL); /* a generation published without rt_prepare */
		t = tls_current;
	}
	if (!t || t->n_tls == t->n_live)
		return;
	struct rte_rcu_qsbr *q = store ? arn_config_rcu(store) : NULL;
	if (!q) {
		tls_publish(g, false);
		return;
	}
	if (!tls_carry_tok_set) {
		tls_carry_tok = rte_rcu_qsbr_start(q);
		tls_carry_tok_set = true;
	} else if (rte_rcu_qsbr_check(q, tls_carry_tok, false) == 1) {
		tls_publish(g, false);
	}
}

static void retire_poll(void)
{
	resolve_reclaim();
	arn_defer_reclaim(retired);
	reclaim_hcms();
	http_host_reclaim(); /* hosts hold their clusters: before them */
	http_cluster_reclaim();
	arn_tls_reclaim(); /* contexts whose last connection ended on a worker */
}

static uint64_t mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Part @p ns's list of entries with outlier detection: those of @p pc
 * (NULL: none) that it still holds, and those built for it (@p cw's),
 * looked up once each: O(clusters with outlier detection), not O(clusters).
 * @return false: out of memory. */
static bool od_list(struct cpart *ns, const struct cpart *pc, const struct cl_walk *cw)
{
	size_t cap = (pc ? pc->n_od : 0) + cw->n_od;
	if (!cap)
		return true;
	ns->od = malloc(cap * sizeof(*ns->od));
	if (!ns->od)
		return false;
	for (size_t i = 0; pc && i < pc->n_od; i++) {
		const struct http_cluster_rt *c = pc->od[i].crt;
		const struct cent *e =
		    (const void *)arn_hamt_get(ns->ents, c->name, c->len, c->hash);
		/* the same entry: neither its Cluster nor its endpoints changed */
		if (e && e->od && e->hosts == pc->od[i].hosts)
			ns->od[ns->n_od++] = pc->od[i];
	}
	for (size_t i = 0; i < cw->n_od; i++) {
		const struct http_cluster_rt *c = cw->od[i];
		const struct cent *e =
		    (const void *)arn_hamt_get(ns->ents, c->name, c->len, c->hash);
		if (e && e->od && e->crt == c)
			ns->od[ns->n_od++] = (struct http_rt_od){
			    e->crt, e->od, (struct http_host *const *)e->hosts, e->n_hosts};
	}
	return true;
}

/* The clusters' part of generation @p g: the previous snapshot's when its
 * clusters and endpoints are the same objects; else that part changed
 * where the generation's clusters and endpoints differ from those it
 * followed; else (the first, or a new worker count: hosts need a slot
 * per worker) built from every cluster. NULL: out of memory. */
static struct cpart *cpart_sync(const struct arn_cfg_gen *g, unsigned nw)
{
	struct arn_hamt *clt = arn_cfg_gen_trie(g, ARN_CFG_CLUSTER);
	struct arn_hamt *clat = arn_cfg_gen_trie(g, ARN_CFG_CLA);
	struct cpart *pc = current && current->cp->nw == nw ? current->cp : NULL;
	if (pc && pc->cl_trie == clt && pc->cla_trie == clat) {
		pc->refs++;
		return pc;
	}
	struct cpart *ns = calloc(1, sizeof(*ns));
	if (!ns)
		return NULL;
	ns->refs = 1;
	ns->sync = sync_id;
	ns->nw = nw;
	arn_hamt_ref(clt);
	arn_hamt_ref(clat);
	ns->cl_trie = clt;
	ns->cla_trie = clat;
	struct cl_walk cw = {.g = g, .s = ns, .resolve = calloc(1, sizeof(struct resolve_batch))};
	if (pc) {
		/* path copying: the previous trie is never changed (its nodes
		 * are shared, so copied before any change) */
		arn_hamt_ref(pc->ents);
		ns->ents = pc->ents;
		ns->n_crts = pc->n_crts;
		ns->n_hc = pc->n_hc;
		ns->n_hosts = pc->n_hosts;
		arn_hamt_diff(pc->cl_trie, clt, cluster_changed, &cw);
		arn_hamt_diff(pc->cla_trie, clat, cluster_changed, &cw);
	} else {
		arn_cfg_cluster_foreach(g, each_cluster, &cw);
	}
	if (cw.resolve)
		resolve_post(cw.resolve);
	if (!cw.oom && !od_list(ns, pc, &cw))
		cw.oom = true;
	free(cw.od);
	if (cw.oom) {
		cpart_put(ns);
		return NULL;
	}
	return ns;
}

/* The listeners' part of snapshot @p ns taken from @p old (the same
 * listeners, routes and ToolSets): a reference on each of its objects. */
static bool snap_take_listeners(struct snap *ns, const struct snap *old)
{
	size_t sz = old->mask + 1;
	ns->slots = malloc(sz * sizeof(*ns->slots));
	ns->hcms = malloc((old->n_hcms + 1) * sizeof(*ns->hcms));
	ns->pinned = malloc((old->n_pinned + 1) * sizeof(*ns->pinned));
	ns->lrts = malloc((old->n_lrts + 1) * sizeof(*ns->lrts));
	ns->rls = malloc((old->n_rls + 1) * sizeof(*ns->rls));
	ns->mcpbs = malloc((old->n_mcpbs + 1) * sizeof(*ns->mcpbs));
	if (!ns->slots || !ns->hcms || !ns->pinned || !ns->lrts || !ns->rls || !ns->mcpbs)
		return false;
	memcpy(ns->slots, old->slots, sz * sizeof(*ns->slots));
	ns->mask = old->mask;
	for (size_t i = 0; i < old->n_hcms; i++) {
		__atomic_fetch_add(&old->hcms[i]->refs, 1, __ATOMIC_RELAXED);
		ns->hcms[ns->n_hcms++] = old->hcms[i];
	}
	for (size_t i = 0; i < old->n_pinned; i++) {
		arn_cfg_pin(old->pinned[i]);
		ns->pinned[ns->n_pinned++] = old->pinned[i];
	}
	for (size_t i = 0; i < old->n_lrts; i++) {
		http_lrt_ref(old->lrts[i]);
		ns->lrts[ns->n_lrts++] = old->lrts[i];
	}
	ns->cap_lrts = old->n_lrts + 1;
	for (size_t i = 0; i < old->n_rls; i++) {
		arn_stats_scope_ref(old->rls[i].sc);
		ns->rls[ns->n_rls++] = old->rls[i];
	}
	ns->cap_rls = old->n_rls + 1;
	for (size_t i = 0; i < old->n_mcpbs; i++) {
		arn_stats_scope_ref(old->mcpbs[i].sc);
		ns->mcpbs[ns->n_mcpbs++] = old->mcpbs[i];
	}
	ns->cap_mcpbs = old->n_mcpbs + 1;
	return true;
}

/*
 * The snapshot of generation @p g (its clusters' and listeners' runtime
 * objects), published unless it is the one in force. Run when the store
 * prepares @p g (rt_prepare), so that a worker never takes a generation
 * whose new cluster has no runtime object yet: until then its requests
 * found no cluster scope and counted nothing (cluster.<name>.upstream_*,
 * and the ssl.* of the connections opened meanwhile, which stay open),
 * for as long as the control lcore took to come back to arn_http_poll.
 * A worker still on the previous generation for a moment finds the new
 * snapshot's objects, which for a cluster or listener that stays are the
 * same ones. Run again by http_rt_sync for a generation published
 * without a prepare callback, or whose build waited for the workers.
 */
static void rt_build(const struct arn_cfg_gen *g)
{
	uint64_t id = arn_cfg_gen_id(g);
	unsigned nw = arn_stats_workers();
	if (id == synced_gen && nw == synced_workers)
		return;
	struct snap *ns = calloc(1, sizeof(*ns));
	if (!ns)
		return;
	ns->gen_id = id;
	sync_id++;
	struct build b = {.s = ns, .g = g};
	ns->sync = sync_id;
	clusters_built = 0;
	clusters_walked = 0;
	listeners_walked = 0;
	uint64_t t0 = ARN_LOG_DEBUG >= arn_log_levels[ARN_LOGM_HTTP] ? mono_us() : 0;
	/* a part built from nothing finds every cluster: what it does not
	 * have left the configuration (one changed from the previous part
	 * drops removed clusters itself) */
	bool full = !current || current->cp->nw != nw;
	ns->cp = cpart_sync(g, nw);
	bool same_l = current != NULL;
	for (int t = 0; t < ARN_CFG_NTYPES; t++) {
		if (t == ARN_CFG_CLUSTER || t == ARN_CFG_CLA)
			continue;
		ns->lchanged[t] = arn_cfg_gen_type_changed(g, (enum arn_cfg_type)t);
		same_l &= current && current->lchanged[t] == ns->lchanged[t];
	}
	if (same_l) {
		b.oom |= !snap_take_listeners(ns, current);
	} else {
		listeners_walked = arn_cfg_listener_foreach(g, each_listener, &b);
		size_t n = ns->n_hcms + ns->n_lrts + ns->n_rls + ns->n_mcpbs;
		size_t sz = 16;
		while (sz < n * 2)
			sz <<= 1;
		ns->slots = calloc(sz, sizeof(*ns->slots));
		if (ns->slots) {
			ns->mask = sz - 1;
			for (size_t i = 0; i < ns->n_hcms; i++)
				snap_put(ns, K_HCM, hrt_key(ns->hcms[i]), NULL, 0, ns->hcms[i]);
			for (size_t i = 0; i < ns->n_lrts; i++) {
				struct http_listener_rt *l = ns->lrts[i];
				snap_put(ns, K_LISTENER, ((uint64_t)l->addr << 16) | l->port, NULL,
					 0, l);
			}
			for (size_t i = 0; i < ns->n_rls; i++)
				snap_put(ns, K_RLS, (uint64_t)(uintptr_t)ns->rls[i].cfg, NULL, 0,
					 ns->rls[i].sc);
			for (size_t i = 0; i < ns->n_mcpbs; i++)
				snap_put(ns, K_MCPB, ns->mcpbs[i].key, NULL, 0, ns->mcpbs[i].sc);
		}
	}
	if (!ns->cp || !ns->slots || b.oom) {
		/* Before lib/net has set the worker count (http_rt_init runs
		 * first at start-up), no cluster's per-worker counters can be
		 * had: not an error, arn_http_poll builds the table once the
		 * workers are known (synced_gen is left as it was). */
		if (nw == 0)
			ARN_DEBUG(HTTP,
				  "the statistics table for generation %llu waits for the workers",
				  (unsigned long long)id);
		else
			ARN_ERR(HTTP,
				"out of memory building the statistics table for generation %llu",
				(unsigned long long)id);
		snap_free(ns);
		return;
	}
	struct snap *old = __atomic_exchange_n(&current, ns, __ATOMIC_ACQ_REL);
	/* after the snapshot: a worker that reads this id finds that snapshot
	 * or a newer one (http_rt_snap_sync) */
	__atomic_store_n(&http_rt_sync_, ns->sync, __ATOMIC_RELEASE);
	synced_gen = id;
	synced_workers = nw;
	if (old)
		arn_defer_free(retired, snap_free, old);
	/* what this generation no longer has: users may hold it a while */
	if (full)
		http_cluster_drop_unseen(sync_id);
	if (!same_l)
		http_listener_drop_unseen(sync_id);
	if (t0)
		ARN_DEBUG(HTTP,
			  "generation %llu: %zu clusters (%zu walked, %zu built, the others "
			  "kept), %zu listeners walked, in %llu us",
			  (unsigned long long)id, ns->cp->n_crts, clusters_walked, clusters_built,
			  listeners_walked, (unsigned long long)(mono_us() - t0));
}

void http_rt_sync(struct arn_config_store *s)
{
	retire_poll();
	const struct arn_cfg_gen *g = arn_config_gen(s);
	tls_sync(g);
	rt_build(g);
}

size_t http_rt_clusters_walked(void)
{
	return clusters_walked;
}

size_t http_rt_tls_clusters_walked(void)
{
	return tls_clusters_walked;
}

size_t http_rt_listeners_walked(void)
{
	return listeners_walked;
}

size_t http_rt_clusters_built(void)
{
	return clusters_built;
}

/* ---- /certs: the certificates in force ---------------------------------------------- */

static void certs_push(struct arn_json *a, const X509 *x, const char *path, int64_t now_s)
{
	struct arn_json *d = arn_tls_cert_details(x, path, now_s);
	if (d && arn_json_push(a, d) != 0)
		arn_json_free(d);
}

int arn_http_certs_write(struct arn_sb *out, int64_t now_s)
{
	static const char empty[] = "{\"certificates\":[]}";
	struct arn_json *root = arn_json_parse(empty, sizeof(empty) - 1);
	if (!root)
		return -ENOMEM;
	struct arn_json *all = arn_json_get(root, "certificates");
	const struct tls_tab *s = tls_current;
	for (size_t i = 0; s && i < s->n_live; i++) { /* not what it carries */
		const struct tls_rt *t = &s->tls[i];
		static const char one[] = "{\"ca_cert\":[],\"cert_chain\":[]}";
		struct arn_json *c = arn_json_parse(one, sizeof(one) - 1);
		if (!c)
			break;
		const struct arn_cfg_secret *v = t->validation;
		if (v && v->ca) {
			STACK_OF(X509_OBJECT) *objs = X509_STORE_get0_objects(v->ca);
			for (int k = 0; k < sk_X509_OBJECT_num(objs); k++) {
				X509 *x = X509_OBJECT_get0_X509(sk_X509_OBJECT_value(objs, k));
				if (x)
					certs_push(arn_json_get(c, "ca_cert"), x, v->path, now_s);
			}
		}
		for (size_t k = 0; k < t->n_certs; k++)
			if (t->certs[k] && t->certs[k]->cert)
				certs_push(arn_json_get(c, "cert_chain"), t->certs[k]->cert,
					   t->certs[k]->path, now_s);
		if (arn_json_push(all, c) != 0)
			arn_json_free(c);
	}
	arn_json_write(root, out, true);
	arn_json_free(root);
	return 0;
}

/* ---- per-host counters on the admin endpoint ----------------------------------- */

static void host_addr(const struct http_host *h, char *buf, size_t cap)
{
	snprintf(buf, cap, "%u.%u.%u.%u:%u", h->addr >> 24, (h->addr >> 16) & 255,
		 (h->addr >> 8) & 255, h->addr & 255, h->port);
}

/* /clusters: the admin lists the hosts, the application asks us their counts. */
int arn_http_host_counts(const char *cluster, uint32_t addr, uint16_t port,
			 struct arn_http_host_counts *out)
{
	memset(out, 0, sizeof(*out));
	struct http_host *h = http_host_find(cluster, strlen(cluster), addr, port);
	if (!h)
		return -ENOENT;
	struct http_host_ctr c;
	http_host_sum(h, &c);
	out->cx_total = c.cx_total;
	out->cx_connect_fail = c.cx_connect_fail;
	out->rq_total = c.rq_total;
	out->rq_success = c.rq_success;
	out->rq_error = c.rq_error;
	out->rq_timeout = c.rq_timeout;
	out->cx_active = c.cx_active;
	out->rq_active = c.rq_active;
	out->failed_active_hc =
	    __atomic_load_n(&h->hc_flags, __ATOMIC_RELAXED) & HTTP_HOST_FAILED_ACTIVE_HC;
	out->failed_outlier_check = __atomic_load_n(&h->od_ejected, __ATOMIC_RELAXED) != 0;
	return 0;
}

/* /stats: Envoy's per-endpoint stats, cluster.<name>.endpoint.<address>.<stat>,
 * for the hosts of the current snapshot (a removed host leaves with it). */
enum {
	SSL_FIXED = 0
#define ARN_TLS_STAT(id, name, help) +1
#include "arn_tls_stats.def"
#undef ARN_TLS_STAT
};

/* One scope's ssl.* block (@p ssl, one per worker), summed over the
 * workers: Envoy's fixed ones always, those per cipher, curve, version and
 * signature algorithm once counted (Envoy creates them on first use). */
static void ssl_emit(struct arn_stats_emitter *e, const struct arn_tls_stats *ssl,
		     const char *scope, const char *tag, const char *name)
{
	unsigned nw = arn_stats_workers();
	uint64_t sum[ARN_TLS_S_COUNT] = {0}, v[ARN_TLS_S_COUNT];
	for (unsigned w = 0; w < nw && w < ARN_STATS_MAX_WORKERS; w++) {
		arn_tls_stats_read(&ssl[w], v);
		for (unsigned k = 0; k < ARN_TLS_S_COUNT; k++)
			sum[k] += v[k];
	}
	for (unsigned k = 0; k < ARN_TLS_S_COUNT; k++)
		if (k < SSL_FIXED || sum[k])
			arn_stats_emit(e, ARN_STAT_COUNTER, scope, tag, name,
				       arn_tls_stat_name((enum arn_tls_stat)k), (int64_t)sum[k]);
}

static void ssl_cluster_emit(void *ctx, struct arn_cfg_obj *o)
{
	const struct http_cluster_rt *c = ((const struct cent *)(const void *)o)->crt;
	if (c->ssl)
		ssl_emit(ctx, c->ssl, "cluster", ARN_STATS_TAG_CLUSTER, c->name);
}

/* listener.<address>.ssl.* and cluster.<name>.ssl.*. */
static void ssl_stats_pull(struct arn_stats_emitter *e, void *arg)
{
	(void)arg;
	const struct snap *s = current;
	if (!s)
		return;
	for (size_t i = 0; i < s->n_lrts; i++) {
		const struct http_listener_rt *l = s->lrts[i];
		if (!l->ssl)
			continue;
		char addr[32];
		snprintf(addr, sizeof(addr), "%u.%u.%u.%u_%u", l->addr >> 24, (l->addr >> 16) & 255,
			 (l->addr >> 8) & 255, l->addr & 255, l->port);
		ssl_emit(e, l->ssl, "listener", ARN_STATS_TAG_LISTENER, addr);
	}
	arn_hamt_foreach(s->cp->ents, ssl_cluster_emit, e);
}

struct host_walk {
	struct arn_stats_emitter *e;
	uint64_t walk;
};

static void host_stats_emit(void *ctx, struct arn_cfg_obj *o)
{
	struct host_walk *hw = ctx;
	const struct cent *ce = (const void *)o;
	for (size_t i = 0; i < ce->n_hosts; i++) {
		struct http_host *h = ce->hosts[i];
		if (h->mark == hw->walk)
			continue;
		h->mark = hw->walk;
		struct http_host_ctr c;
		http_host_sum(h, &c);
		char addr[32];
		host_addr(h, addr, sizeof(addr));
		const struct {
			const char *name;
			uint64_t v;
			enum arn_stat_kind kind;
		} v[] = {
		    {"cx_connect_fail", c.cx_connect_fail, ARN_STAT_COUNTER},
		    {"cx_total", c.cx_total, ARN_STAT_COUNTER},
		    {"rq_error", c.rq_error, ARN_STAT_COUNTER},
		    {"rq_success", c.rq_success, ARN_STAT_COUNTER},
		    {"rq_timeout", c.rq_timeout, ARN_STAT_COUNTER},
		    {"rq_total", c.rq_total, ARN_STAT_COUNTER},
		    {"cx_active", c.cx_active, ARN_STAT_GAUGE},
		    {"rq_active", c.rq_active, ARN_STAT_GAUGE},
		};
		for (size_t k = 0; k < sizeof(v) / sizeof(v[0]); k++)
			arn_stats_emit_sub(hw->e, v[k].kind, "cluster", ARN_STATS_TAG_CLUSTER,
					   h->crt->name, "endpoint", ARN_STATS_TAG_ENDPOINT, addr,
					   v[k].name, (int64_t)v[k].v);
	}
}

static void host_stats_pull(struct arn_stats_emitter *e, void *arg)
{
	(void)arg;
	static uint64_t walk;
	const struct snap *s = current;
	if (!s)
		return;
	struct host_walk hw = {e, ++walk};
	arn_hamt_foreach(s->cp->ents, host_stats_emit, &hw);
}

/* One priority's circuit breaker gauges, as Envoy's ResourceManagerImpl
 * keeps them: <resource>_open (1 while the count is at its limit) and,
 * with track_remaining, remaining_<resource> (the limit less the count,
 * 0 at or past it). */
static void cb_emit(struct arn_stats_emitter *e, const char *cluster, const char *prio,
		    const struct arn_cfg_thresholds *t, const int64_t now[4])
{
	static const char *const open[4] = {"cx_open", "rq_pending_open", "rq_open",
					    "rq_retry_open"};
	static const char *const rem[4] = {"remaining_cx", "remaining_pending", "remaining_rq",
					   "remaining_retries"};
	const uint32_t max[4] = {t->max_connections, t->max_pending_requests, t->max_requests,
				 t->max_retries};
	char name[64];
	for (int k = 0; k < 4; k++) {
		int64_t n = now[k] > 0 ? now[k] : 0;
		snprintf(name, sizeof(name), "circuit_breakers.%s.%s", prio, open[k]);
		arn_stats_emit(e, ARN_STAT_GAUGE, "cluster", ARN_STATS_TAG_CLUSTER, cluster, name,
			       n >= (int64_t)max[k]);
		if (!t->track_remaining)
			continue;
		snprintf(name, sizeof(name), "circuit_breakers.%s.%s", prio, rem[k]);
		arn_stats_emit(e, ARN_STAT_GAUGE, "cluster", ARN_STATS_TAG_CLUSTER, cluster, name,
			       n < (int64_t)max[k] ? (int64_t)max[k] - n : 0);
	}
}

static void cb_cluster_emit(void *ctx, struct arn_cfg_obj *o)
{
	const struct cent *ce = (const void *)o;
	const struct http_cluster_rt *c = ce->crt;
	/* what the breakers count (every route is of DEFAULT priority: the
	 * HIGH one counts nothing, as Envoy's without high-priority routes) */
	const int64_t dflt[4] = {
	    __atomic_load_n(&c->cx_active, __ATOMIC_RELAXED),
	    __atomic_load_n(&c->rq_pending, __ATOMIC_RELAXED),
	    arn_stats_gauge_value(c->stats, ARN_CL_upstream_rq_active),
	    __atomic_load_n(&c->retries_active, __ATOMIC_RELAXED),
	};
	const int64_t none[4] = {0, 0, 0, 0};
	cb_emit(ctx, c->name, "default", &ce->th[0], dflt);
	cb_emit(ctx, c->name, "high", &ce->th[1], none);
}

/* cluster.<name>.circuit_breakers.{default,high}.*: read from the counts
 * the breakers test, at read time. */
static void cb_stats_pull(struct arn_stats_emitter *e, void *arg)
{
	(void)arg;
	const struct snap *s = current;
	if (!s)
		return;
	arn_hamt_foreach(s->cp->ents, cb_cluster_emit, e);
}

/* Envoy's cluster.<name>.update_* (arn_config_set_cluster_update_cb):
 * counted on the cluster in force; a name no generation has is not
 * made a cluster for it. */
static void cluster_update_stat(void *ctx, const char *name, enum arn_config_cluster_update u)
{
	(void)ctx;
	static const unsigned stat[] = {
	    [ARN_CONFIG_UPDATE_ATTEMPT] = ARN_CL_update_attempt,
	    [ARN_CONFIG_UPDATE_SUCCESS] = ARN_CL_update_success,
	    [ARN_CONFIG_UPDATE_REJECTED] = ARN_CL_update_rejected,
	    [ARN_CONFIG_UPDATE_EMPTY] = ARN_CL_update_empty,
	    [ARN_CONFIG_UPDATE_FAILURE] = ARN_CL_update_failure,
	    [ARN_CONFIG_UPDATE_NO_REBUILD] = ARN_CL_update_no_rebuild,
	};
	struct http_cluster_rt *c = http_cluster_find(name);
	if (c && (unsigned)u < sizeof(stat) / sizeof(stat[0]))
		arn_stats_inc(c->stats, ARN_STATS_SLOT_CONTROL, stat[u]);
}

void http_rt_glog_ops(const struct http_glog_ops *ops)
{
	glog_ops = ops;
}

int http_rt_init(struct arn_config_store *s)
{
	arn_stats_pull_register(cb_stats_pull, NULL);
	arn_stats_pull_register(host_stats_pull, NULL);
	arn_stats_pull_register(ssl_stats_pull, NULL);
	store = s;
	retired = arn_defer_create(s ? arn_config_rcu(s) : NULL);
	if (!retired)
		return -ENOMEM;
	synced_gen = UINT64_MAX;
	if (s) {
		arn_config_set_prepare_cb(s, rt_prepare, NULL);
		arn_config_set_cluster_update_cb(s, cluster_update_stat, NULL);
		http_rt_sync(s);
	}
	return 0;
}

void http_rt_fini(void)
{
	arn_stats_pull_unregister(cb_stats_pull, NULL);
	arn_stats_pull_unregister(host_stats_pull, NULL);
	arn_stats_pull_unregister(ssl_stats_pull, NULL);
	/* workers are stopped: nothing reads the snapshots (or the batches
	 * of addresses to resolve) any more */
	while (resolving) {
		struct resolve_batch *b = resolving;
		resolving = b->next;
		free(b);
	}
	if (store) {
		arn_config_set_prepare_cb(store, NULL, NULL);
		arn_config_set_cluster_update_cb(store, NULL, NULL);
	}
	struct snap *s = __atomic_exchange_n(&current, NULL, __ATOMIC_ACQ_REL);
	__atomic_store_n(&http_rt_sync_, ++sync_id, __ATOMIC_RELEASE); /* no snapshot's */
	snap_free(s);
	tls_tab_free(__atomic_exchange_n(&tls_current, NULL, __ATOMIC_ACQ_REL));
	tls_carry_tok_set = false;
	arn_defer_destroy(retired);
	retired = NULL;
	reclaim_hcms();
	http_host_fini(); /* hosts hold their clusters: before them */
	http_cluster_fini();
	store = NULL;
	http_hc_failed_ = false;
	synced_gen = UINT64_MAX;
	synced_workers = 0;
}
