/*
 * Load balancing over a cluster's endpoints, as of one generation.
 *
 * Host selection follows Envoy's outline: the priorities share the
 * traffic by their healthy (then degraded) availability, overprovisioned
 * (prio_loads: a priority keeps all of it while 1 / 1.4 of its hosts are
 * healthy, then spills the rest to the next); a priority whose healthy
 * share falls under healthy_panic_threshold (50% by default), when the
 * priorities together cannot take the whole load, stops trusting health
 * and balances over every host ("panic"); a cluster with no host at all
 * answers 503 UH. Within the chosen set the lb_policy picks; with
 * common_lb_config.locality_weighted_lb_config, within a locality of the
 * set that Envoy's EDF over the localities' effective weights chose.
 *
 * RING_HASH and MAGLEV read a table each worker builds with its cached
 * candidates (struct http_lb_cache), as Envoy builds its ring and Maglev
 * table when the host set changes, and pick the host Envoy picks for the
 * same request: the request's hash is Envoy's (XXH64 per hash policy,
 * combined as Envoy's generateHash), the ring is Envoy's RingHash over the
 * candidates (points "ip:port_i" hashed by XXH64 or MurmurHash2, Envoy's
 * scale and running sums, the first point at or after the hash), searched
 * in O(log n); the Maglev table is Envoy's (the hosts in hash-key order,
 * XXH64 offsets and skips, Envoy's weighted rounds), read in O(1). As Envoy's, the ring follows the
 * candidates: a host that leaves them (checks, ejection, EDS health) may change the others' points
 * (the scale follows the lightest candidate's share). Without a table (no
 * cache) a RING_HASH pick computes the same ring's answer from the
 * candidates' points, and a MAGLEV pick falls back to weighted rendezvous
 * hashing, another host than the table's: the router, tcp_proxy and the
 * sub-requests always pass the cache for these policies, so it happens
 * only when the snapshot has no entry for the pick's cluster (replaced
 * since the stream took it), its caches could not be allocated, or the
 * pick's endpoints are an older generation with more endpoints than the
 * entry's cache holds (a retry after an EDS update): a Maglev table takes
 * table_size entries and a pick may not allocate. What differs from
 * Envoy: docs/http.md.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

/* Debian's libxxhash, header-only (inlined: a request's hash is on the
 * hot path); Envoy's HashUtil::xxHash64 is XXH64 */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "arn_fmt.h"
#include "http_int.h"
#include "http_od.h"

/* The host of @p ep, the @p idx th endpoint of in->eps (priority,
 * locality, index order): in->ep_hosts' entry when it is that endpoint's
 * (resolved once per snapshot entry, http_rt.c), else a binary search of
 * the cluster's sorted hosts (the snapshot's, which may be a generation
 * apart from the endpoints: a host it lacks is failed by neither). */
static struct http_host *host_of(const struct http_lb_in *in, const struct arn_cfg_endpoint *ep,
				 size_t idx)
{
	if (idx < in->n_ep_hosts) {
		struct http_host *h = in->ep_hosts[idx];
		if (h && h->addr == ep->addr && h->port == ep->port)
			return h;
	}
	return http_hosts_find(in->hosts, in->n_hosts, ep->addr, ep->port);
}

/* Has active health checking failed the host of @p ep, or outlier
 * detection ejected it? An ejection's end lowers *@p until (NULL: not
 * asked): a cached candidate list is good until then. */
static bool hc_failed(const struct http_lb_in *in, const struct arn_cfg_endpoint *ep, size_t idx,
		      uint64_t *until)
{
	struct http_host *h = host_of(in, ep, idx);
	if (!h)
		return false;
	if (in->cluster->n_health_checks &&
	    (__atomic_load_n(&h->hc_flags, __ATOMIC_RELAXED) & HTTP_HOST_FAILED_ACTIVE_HC))
		return true;
	if (!in->od_crt || !http_od_ejected(h, in->od_crt, in->now_ms, in->unejected))
		return false;
	if (until) {
		uint64_t u = __atomic_load_n(&h->od_until_ms, __ATOMIC_ACQUIRE);
		if (u < *until)
			*until = u;
	}
	return true;
}

/* EDS says HEALTHY or UNKNOWN and, for a cluster with active health
 * checks, they have not failed it: Envoy's combined health. An EDS
 * UNHEALTHY, DRAINING or TIMEOUT host stays out whatever the checks say. */
static bool healthy(const struct http_lb_in *in, const struct arn_cfg_endpoint *ep, size_t idx,
		    uint64_t *until)
{
	if (ep->health != ARN_CFG_HEALTH_UNKNOWN && ep->health != ARN_CFG_HEALTH_HEALTHY)
		return false;
	return !in->hosts || !hc_failed(in, ep, idx, until);
}

/* DEGRADED by EDS, and not failed by active checks. */
static bool degraded(const struct http_lb_in *in, const struct arn_cfg_endpoint *ep, size_t idx,
		     uint64_t *until)
{
	return ep->health == ARN_CFG_HEALTH_DEGRADED &&
	       (!in->hosts || !hc_failed(in, ep, idx, until));
}

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

/*
 * The candidates of one pick: the hosts of one priority that a mode takes
 * (0: healthy, 1: degraded, 2: every host), walked in place, or a
 * worker's cached list of them (cand, cum: http_lb_cache). Nothing is
 * copied per pick, so a priority of any size is balanced over all of its
 * hosts: a copy bounded at 1,024 left the hosts after it without traffic,
 * and without any when the first 1,024 taken were not the healthy ones.
 */
struct cset {
	const struct http_lb_in *in; /* its hosts' active health check flags */
	const struct arn_cfg_priority *pr;
	size_t base; /* the index of pr's first endpoint in in->eps */
	int mode;
	uint64_t n;
	uint64_t total_weight;
	bool equal;			      /* every candidate has the first one's weight */
	uint64_t *until;		      /* building a cache: its ejections' first end */
	const struct arn_cfg_endpoint **cand; /* cached: the n candidates in order */
	const uint64_t *cum;		      /* cached: their cumulative weights */
	/* RING_HASH, MAGLEV with locality weighting: the candidates'
	 * normalized weights (Envoy's normalizeLocalityWeights); NULL: each
	 * one's weight / the candidates' total */
	const double *nw;
};

static bool takes(const struct cset *c, const struct arn_cfg_endpoint *ep, size_t idx)
{
	return c->mode == 2 || (c->mode == 0 && healthy(c->in, ep, idx, c->until)) ||
	       (c->mode == 1 && degraded(c->in, ep, idx, c->until));
}

static uint64_t ep_weight(const struct arn_cfg_endpoint *ep)
{
	return ep->weight ? ep->weight : 1;
}

/* The index in @p eps of priority @p p's first endpoint. */
static size_t prio_base(const struct arn_cfg_endpoints *eps, size_t p)
{
	size_t k = 0;
	for (size_t q = 0; q < p; q++)
		for (size_t l = 0; l < eps->priorities[q].n_localities; l++)
			k += eps->priorities[q].localities[l].n_endpoints;
	return k;
}

static void cset_of(struct cset *c, const struct http_lb_in *in, size_t p, int mode,
		    uint64_t *until)
{
	const struct arn_cfg_priority *pr = &in->eps->priorities[p];
	c->in = in;
	c->pr = pr;
	c->base = prio_base(in->eps, p);
	c->mode = mode;
	c->n = 0;
	c->total_weight = 0;
	c->equal = true;
	c->until = until;
	c->cand = NULL;
	c->cum = NULL;
	c->nw = NULL;
	uint32_t w0 = 0;
	size_t k = c->base;
	for (size_t l = 0; l < pr->n_localities; l++) {
		const struct arn_cfg_locality *lo = &pr->localities[l];
		for (size_t i = 0; i < lo->n_endpoints; i++, k++) {
			const struct arn_cfg_endpoint *ep = &lo->endpoints[i];
			if (!takes(c, ep, k))
				continue;
			if (c->n == 0)
				w0 = ep->weight;
			else if (ep->weight != w0)
				c->equal = false;
			c->n++;
			c->total_weight += ep_weight(ep);
		}
	}
}

/* The candidate @p k (< n) in order. */
static const struct arn_cfg_endpoint *cset_nth(const struct cset *c, uint64_t k)
{
	if (c->cand)
		return c->cand[k];
	const struct arn_cfg_endpoint *last = NULL;
	size_t x = c->base;
	for (size_t l = 0; l < c->pr->n_localities; l++) {
		const struct arn_cfg_locality *lo = &c->pr->localities[l];
		for (size_t i = 0; i < lo->n_endpoints; i++, x++) {
			const struct arn_cfg_endpoint *ep = &lo->endpoints[i];
			if (!takes(c, ep, x))
				continue;
			if (k-- == 0)
				return ep;
			last = ep;
		}
	}
	return last;
}

/* The candidate whose share of the weight line holds @p t (< total_weight). */
static const struct arn_cfg_endpoint *cset_weighted(const struct cset *c, uint64_t t)
{
	if (c->cand) {
		/* the first whose cumulative weight is above t */
		uint64_t lo = 0, hi = c->n - 1;
		while (lo < hi) {
			uint64_t mid = lo + (hi - lo) / 2;
			if (c->cum[mid] > t)
				hi = mid;
			else
				lo = mid + 1;
		}
		return c->cand[lo];
	}
	const struct arn_cfg_endpoint *last = NULL;
	size_t x = c->base;
	for (size_t l = 0; l < c->pr->n_localities; l++) {
		const struct arn_cfg_locality *lo = &c->pr->localities[l];
		for (size_t i = 0; i < lo->n_endpoints; i++, x++) {
			const struct arn_cfg_endpoint *ep = &lo->endpoints[i];
			if (!takes(c, ep, x))
				continue;
			uint64_t w = ep_weight(ep);
			if (t < w)
				return ep;
			t -= w;
			last = ep;
		}
	}
	return last;
}

/* Round robin over unequal weights walks the weight line @p tw with a
 * stride coprime to it, so heavy hosts are not hit in bursts. */
static uint64_t rr_stride(uint64_t tw)
{
	for (uint64_t s = tw / 2 + 1; s < tw; s++) {
		uint64_t a = s, b = tw;
		while (b) {
			uint64_t t = a % b;
			a = b;
			b = t;
		}
		if (a == 1)
			return s;
	}
	return 1;
}

/* ---- RING_HASH and MAGLEV ------------------------------------------------ */

/* "a.b.c.d:port" into @p o (22 bytes): Envoy's Address::Instance::asString
 * of an IPv4 address. @return its length. */
static size_t addr_str(char *o, uint32_t a, uint16_t port)
{
	size_t n = (size_t)arn_fmt_ip4(a, o);
	o[n++] = ':';
	return n + (size_t)arn_fmt_u64(port, o + n);
}

/* The key Envoy hashes for an endpoint's host (HashingLoadBalancer::
 * hashKey): its address's asString, "a.b.c.d:port", into @p o (22 bytes).
 * Neither use_hostname_for_hashing nor an envoy.lb hash_key is taken (the
 * configuration refuses them). @return its length. */
static size_t host_key_str(const struct arn_cfg_endpoint *e, char *o)
{
	return addr_str(o, e->addr, e->port);
}

static uint64_t shift_mix(uint64_t v)
{
	return v ^ (v >> 47);
}

/* Envoy's MurmurHash::murmurHash2 (libstdc++'s 64-bit std::hash of a
 * string, from hash_bytes.cc): RING_HASH's MURMUR_HASH_2. No Debian
 * library has it. */
static uint64_t murmur2_64(const char *buf, size_t len, uint64_t seed)
{
	const uint64_t mul = 0xc6a4a7935bd1e995ull;
	size_t aligned = len & ~(size_t)7;
	uint64_t hash = seed ^ (len * mul);
	for (size_t i = 0; i < aligned; i += 8) {
		uint64_t d;
		memcpy(&d, buf + i, 8);
		hash ^= shift_mix(d * mul) * mul;
		hash *= mul;
	}
	if (len & 7) {
		uint64_t d = 0;
		for (size_t n = len & 7; n-- > 0;)
			d = (d << 8) + (unsigned char)buf[aligned + n];
		hash ^= d;
		hash *= mul;
	}
	hash = shift_mix(hash) * mul;
	return shift_mix(hash);
}

/* MurmurHash::STD_HASH_SEED */
#define MURMUR_STD_SEED 0xc70f6907ull

/* A ring point's hash of key @p b (@p n bytes): XX_HASH or MURMUR_HASH_2. */
static uint64_t ring_hash(uint8_t fn, const char *b, size_t n)
{
	return fn == 1 ? murmur2_64(b, n, MURMUR_STD_SEED) : XXH64(b, n, 0);
}

/* The candidates of @p c in order, one at a time: the cached list or a
 * walk of the priority. */
struct cit {
	const struct cset *c;
	size_t l, i, x;
	uint64_t j;
};

static void cit_init(struct cit *it, const struct cset *c)
{
	*it = (struct cit){.c = c, .x = c->base};
}

static const struct arn_cfg_endpoint *cit_next(struct cit *it)
{
	const struct cset *c = it->c;
	if (c->cand)
		return it->j < c->n ? c->cand[it->j++] : NULL;
	for (; it->l < c->pr->n_localities; it->l++, it->i = 0) {
		const struct arn_cfg_locality *lo = &c->pr->localities[it->l];
		while (it->i < lo->n_endpoints) {
			const struct arn_cfg_endpoint *ep = &lo->endpoints[it->i++];
			if (takes(c, ep, it->x++))
				return ep;
		}
	}
	return NULL;
}

/* 0: unset (the configuration gives Envoy's defaults) */
static uint64_t ring_min(const struct arn_cfg_cluster *cl)
{
	return cl->ring_min_size ? cl->ring_min_size : 1024;
}

static uint64_t ring_max(const struct arn_cfg_cluster *cl)
{
	return cl->ring_max_size ? cl->ring_max_size : 8 * 1024 * 1024;
}

/* The most points a worker's ring takes for a cluster of @p n endpoints:
 * HTTP_LB_RING_MAX, or one per endpoint when there are more. */
static uint64_t ring_lim(size_t n)
{
	return n > HTTP_LB_RING_MAX ? n : HTTP_LB_RING_MAX;
}

/* Envoy's scale of a ring whose lightest host has normalized weight
 * @p min_nw: min(ceil(min_nw x minimum_ring_size) / min_nw,
 * maximum_ring_size), the maximum cut to ring_lim(@p n_all). */
static double ring_scale(const struct arn_cfg_cluster *cl, size_t n_all, double min_nw)
{
	double s = ceil(min_nw * (double)ring_min(cl)) / min_nw;
	uint64_t mx = ring_max(cl), lim = ring_lim(n_all);
	double m = (double)(mx < lim ? mx : lim);
	return m < s ? m : s;
}

/* The normalized weight of candidate @p j (@p e) of @p c, whose weights
 * total @p tw: Envoy's normalizeHostWeights (w x 1.0 / the total) or,
 * with locality weighting, normalizeLocalityWeights' (c->nw). */
static double cand_nw(const struct cset *c, uint64_t j, const struct arn_cfg_endpoint *e,
		      uint64_t tw)
{
	return c->nw ? c->nw[j] : (double)ep_weight(e) * 1.0 / (double)tw;
}

/* Envoy's ring over the candidates of @p c (RingHashLoadBalancer::Ring,
 * over normalizeHostWeights' weights: w / the candidates' total): its
 * scale in *@p scale, the total weight in *@p sum. @return the points. */
static uint64_t ring_plan(const struct cset *c, const struct arn_cfg_cluster *cl, size_t n_all,
			  double *scale, uint64_t *sum)
{
	struct cit it;
	const struct arn_cfg_endpoint *e;
	uint64_t tw = 0;
	cit_init(&it, c);
	while ((e = cit_next(&it)))
		tw += ep_weight(e);
	double min_nw = 1.0;
	cit_init(&it, c);
	for (uint64_t j = 0; (e = cit_next(&it)); j++) {
		double nw = cand_nw(c, j, e, tw);
		if (nw < min_nw)
			min_nw = nw;
	}
	*sum = tw;
	*scale = tw ? ring_scale(cl, n_all, min_nw) : 0;
	/* the running sums of Envoy's loop: target += scale x weight, a
	 * point while current < target */
	double cur = 0, tgt = 0;
	uint64_t pts = 0;
	cit_init(&it, c);
	for (uint64_t j = 0; (e = cit_next(&it)); j++) {
		tgt += *scale * cand_nw(c, j, e, tw);
		for (; cur < tgt; cur++)
			pts++;
	}
	return pts;
}

/*
 * Envoy's ring points of @p c, in its order, each given to @p fn with the
 * candidate's index: host after host (the candidates' order), the k-th
 * point of a host hashed from "<hash key>_<k>" while the running count of
 * points is under the running target (Envoy's current_hashes and
 * target_hashes, doubles, as Envoy sums them).
 */
struct ring_sink {
	void (*fn)(struct ring_sink *s, uint64_t hash, uint32_t j,
		   const struct arn_cfg_endpoint *e);
};

static void ring_points(const struct cset *c, const struct arn_cfg_cluster *cl, double scale,
			uint64_t sum, struct ring_sink *sink)
{
	struct cit it;
	const struct arn_cfg_endpoint *e;
	double cur = 0, tgt = 0;
	char b[48];
	cit_init(&it, c);
	for (uint32_t j = 0; (e = cit_next(&it)); j++) {
		size_t base = host_key_str(e, b);
		b[base++] = '_';
		tgt += scale * cand_nw(c, j, e, sum);
		for (uint64_t i = 0; cur < tgt; i++, cur++)
			sink->fn(
			    sink,
			    ring_hash(cl->ring_hash_fn, b, base + (size_t)arn_fmt_u64(i, b + base)),
			    j, e);
	}
}

size_t http_lb_table_entries(const struct arn_cfg_cluster *cl, const struct arn_cfg_endpoints *eps,
			     bool *clipped)
{
	*clipped = false;
	if (!cl || !eps || !eps->n_endpoints)
		return 0;
	if (cl->lb == ARN_CFG_LB_RING_HASH && cl->locality_weighted) {
		/* the lightest normalized weight a candidate can have: at
		 * least the lightest locality weight / the priority's
		 * localities' total x the lightest host weight / the
		 * priority's host total (any candidates, any merging) */
		double min_nw = 1.0;
		for (size_t p = 0; p < eps->n_priorities; p++) {
			const struct arn_cfg_priority *pr = &eps->priorities[p];
			uint64_t lsum = 0, lmin = UINT64_MAX, tw = 0, wmin = UINT64_MAX;
			for (size_t l = 0; l < pr->n_localities; l++) {
				const struct arn_cfg_locality *lo = &pr->localities[l];
				lsum += lo->weight;
				if (lo->weight && lo->weight < lmin)
					lmin = lo->weight;
				for (size_t i = 0; i < lo->n_endpoints; i++) {
					uint64_t w = ep_weight(&lo->endpoints[i]);
					tw += w;
					if (w < wmin)
						wmin = w;
				}
			}
			if (!lsum || !tw)
				continue;
			double m = (double)lmin / (double)lsum * ((double)wmin / (double)tw);
			if (m < min_nw)
				min_nw = m;
		}
		uint64_t n = eps->n_endpoints, lim = ring_lim(n);
		uint64_t mx = ring_max(cl) < lim ? ring_max(cl) : lim;
		double s = ceil(min_nw * (double)ring_min(cl)) / min_nw;
		*clipped = s > (double)lim && ring_max(cl) > lim;
		double b = (double)ring_min(cl) + ceil(1.0 / min_nw) + 1.0;
		return (b < (double)mx ? (uint64_t)b : mx) + 2;
	}
	if (cl->lb == ARN_CFG_LB_RING_HASH) {
		uint64_t n = 0, tw = 0, wmin = UINT64_MAX;
		for (size_t p = 0; p < eps->n_priorities; p++)
			for (size_t l = 0; l < eps->priorities[p].n_localities; l++) {
				const struct arn_cfg_locality *lo =
				    &eps->priorities[p].localities[l];
				for (size_t i = 0; i < lo->n_endpoints; i++) {
					uint64_t w = ep_weight(&lo->endpoints[i]);
					n++;
					tw += w;
					if (w < wmin)
						wmin = w;
				}
			}
		/* Envoy's scale over every endpoint: the limit clips it when
		 * the configuration's maximum would not */
		double min_nw = (double)wmin * 1.0 / (double)tw;
		double s = ceil(min_nw * (double)ring_min(cl)) / min_nw;
		uint64_t lim = ring_lim(n), mx = ring_max(cl) < lim ? ring_max(cl) : lim;
		*clipped = s > (double)lim && ring_max(cl) > lim;
		/* any set of candidates: scale < minimum_ring_size + 1 / its
		 * lightest normalized weight <= minimum_ring_size + tw / wmin;
		 * the points are at most the scale's ceiling (and the sums'
		 * rounding) */
		uint64_t b = ring_min(cl) + (tw + wmin - 1) / wmin;
		return (b < mx ? b : mx) + 2;
	}
	if (cl->lb == ARN_CFG_LB_MAGLEV) {
		/* a prime (the configuration checks it); the limit is one */
		uint64_t m = cl->maglev_table_size ? cl->maglev_table_size : HTTP_LB_MAGLEV_MAX;
		if (m > HTTP_LB_MAGLEV_MAX) {
			*clipped = true;
			m = HTTP_LB_MAGLEV_MAX;
		}
		return m;
	}
	return 0;
}

static void point_sift(struct http_lb_point *a, size_t i, size_t n)
{
	struct http_lb_point x = a[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && a[c + 1].hash > a[c].hash)
			c++;
		if (a[c].hash <= x.hash)
			break;
		a[i] = a[c];
		i = c;
	}
	a[i] = x;
}

/* Heapsort: in place, no allocation on a worker (qsort may allocate). */
static void points_sort(struct http_lb_point *a, size_t n)
{
	for (size_t i = n / 2; i-- > 0;)
		point_sift(a, i, n);
	for (size_t e = n; e-- > 1;) {
		struct http_lb_point t = a[0];
		a[0] = a[e];
		a[e] = t;
		point_sift(a, 0, e);
	}
}

struct ring_fill {
	struct ring_sink s;
	struct http_lb_point *r;
	size_t m;
};

static void ring_fill_one(struct ring_sink *s, uint64_t hash, uint32_t j,
			  const struct arn_cfg_endpoint *e)
{
	(void)e;
	struct ring_fill *f = (struct ring_fill *)(void *)s;
	f->r[f->m++] = (struct http_lb_point){hash, j};
}

/* Cache @p k's ring over its candidates @p c (Envoy's), when it fits in
 * the room the snapshot gave it (another generation's endpoints may want
 * more: then the pick walks). */
static bool ring_build(struct http_lb_cache *k, const struct cset *c,
		       const struct arn_cfg_cluster *cl, size_t n_all)
{
	double scale;
	uint64_t sum;
	if (ring_plan(c, cl, n_all, &scale, &sum) > k->tab_cap)
		return false;
	struct ring_fill f = {{ring_fill_one}, k->ring, 0};
	ring_points(c, cl, scale, sum, &f.s);
	points_sort(k->ring, f.m);
	k->tab_n = f.m;
	return true;
}

/* The index of the candidate whose point is the first at or after @p h
 * on the ring (wrapping to the first point), or @p attempt points after
 * it (a retry's re-pick), as Envoy's ring. */
static uint32_t ring_find(const struct http_lb_point *r, size_t n, uint64_t h, uint32_t attempt)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (r[mid].hash < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == n)
		lo = 0;
	if (attempt)
		lo = (lo + attempt) % n;
	return r[lo].idx;
}

/* Ring search without a ring: keep a point if it is a better answer for
 * h than the best so far (the first at or after h, else the lowest). */
struct ring_best {
	struct ring_sink s;
	uint64_t h;
	uint64_t ge, low; /* the best point at or after h, and the lowest */
	const struct arn_cfg_endpoint *ge_ep, *low_ep;
};

static void ring_consider(struct ring_sink *s, uint64_t x, uint32_t j,
			  const struct arn_cfg_endpoint *e)
{
	(void)j;
	struct ring_best *b = (struct ring_best *)(void *)s;
	if (x >= b->h && (!b->ge_ep || x < b->ge)) {
		b->ge = x;
		b->ge_ep = e;
	}
	if (!b->low_ep || x < b->low) {
		b->low = x;
		b->low_ep = e;
	}
}

/* Candidate @p j takes its next free entry of Maglev table @p t of @p m
 * entries (its permutation's state in @p s: the next entry, the skip). */
static void maglev_take(uint32_t *t, uint64_t m, uint64_t *s, uint32_t j)
{
	uint64_t pos = (uint32_t)*s, skip = *s >> 32;
	while (t[pos] != UINT32_MAX) {
		pos += skip;
		if (pos >= m)
			pos -= m;
	}
	t[pos] = j;
	pos += skip;
	if (pos >= m)
		pos -= m;
	*s = pos | skip << 32;
}

/* Min-heap of (round << 24 | candidate) keys: sift @p i down. */
static void mheap_down(uint64_t *h, size_t i, size_t n)
{
	uint64_t x = h[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && h[c + 1] < h[c])
			c++;
		if (h[c] >= x)
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = x;
}

/* A sortable form of host key @p b (@p n bytes, at most 21 of
 * ".0123456789:", an address's asString): 4 bits a byte, 0 past its end,
 * so comparing (hi, lo) orders the keys as std::string_view does. */
static void key_pack(const char *b, size_t n, uint64_t *hi, uint64_t *lo)
{
	uint64_t h = 0, l = 0;
	for (size_t i = 0; i < 21; i++) {
		uint64_t c = 0;
		if (i < n)
			c = b[i] == '.' ? 1 : b[i] == ':' ? 12 : (uint64_t)(b[i] - '0') + 2;
		if (i < 16)
			h = h << 4 | c;
		else
			l = l << 4 | c;
	}
	*hi = h;
	*lo = l;
}

/* Is candidate @p a's key (in @p key: hi, lo pairs) before @p b's? Equal
 * keys (an endpoint listed twice) in their order. */
static bool key_before(const uint64_t *key, uint64_t a, uint64_t b)
{
	const uint64_t *x = &key[2 * a], *y = &key[2 * b];
	return x[0] != y[0] ? x[0] < y[0] : x[1] != y[1] ? x[1] < y[1] : a < b;
}

/* Heapsort of indexes @p o (no allocation on a worker), @p before
 * ordering two of them with @p ctx: the candidates by their keys, a
 * priority's localities by Envoy's LocalityLess. */
typedef bool (*idx_before_fn)(const void *ctx, uint64_t a, uint64_t b);

static void idx_sift(uint64_t *o, size_t i, size_t n, idx_before_fn before, const void *ctx)
{
	uint64_t x = o[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && before(ctx, o[c], o[c + 1]))
			c++;
		if (!before(ctx, x, o[c]))
			break;
		o[i] = o[c];
		i = c;
	}
	o[i] = x;
}

static void idx_sort(uint64_t *o, size_t n, idx_before_fn before, const void *ctx)
{
	for (size_t i = n / 2; i-- > 0;)
		idx_sift(o, i, n, before, ctx);
	for (size_t e = n; e-- > 1;) {
		uint64_t t = o[0];
		o[0] = o[e];
		o[e] = t;
		idx_sift(o, 0, e, before, ctx);
	}
}

static bool key_before_fn(const void *key, uint64_t a, uint64_t b)
{
	return key_before(key, a, b);
}

static double dget(const uint64_t *p)
{
	double d;
	memcpy(&d, p, sizeof(d));
	return d;
}

static void dset(uint64_t *p, double d)
{
	memcpy(p, &d, sizeof(d));
}

/* The first round after @p r in which a host of normalized weight @p nw
 * whose target is @p t takes an entry: Envoy's test, round x weight >=
 * target, in doubles as Envoy computes it. */
static uint64_t maglev_next_round(uint64_t r, double nw, double t)
{
	uint64_t nr = r + 1;
	if ((double)nr * nw >= t)
		return nr;
	double c = ceil(t / nw);
	nr = c < 1099511627775.0 ? (uint64_t)c : 1099511627775ull;
	while (nr > r + 2 && (double)(nr - 1) * nw >= t)
		nr--;
	while (nr < 1099511627775ull && (double)nr * nw < t)
		nr++;
	return nr;
}

/* The normalized weight of cache @p k's candidate @p j, the candidates'
 * weights totalling @p sum (see cand_nw). */
static double mag_nw(const struct http_lb_cache *k, uint64_t j, uint64_t sum)
{
	return k->nw_on ? k->nw[j] : (double)ep_weight(k->cand[j]) * 1.0 / (double)sum;
}

/*
 * Cache @p k's Maglev table over its candidates: Envoy's
 * (maglev_lb.cc, OriginalMaglevTable). The hosts are sorted by their hash
 * key ("a.b.c.d:port"); each has offset XXH64(key) % M and skip
 * XXH64(key, seed 1) % (M - 1) + 1, its permutation of the table; round
 * after round, each host in key order takes its next free entry when
 * round x its normalized weight (w / the candidates' total, a double)
 * reaches its target, which grows by the largest normalized weight at
 * each take. tab_cap is a prime, so every skip walks the whole table.
 * Equal weights: every host takes one entry a round, in order. Unequal:
 * the takes are made in Envoy's order, (round, host), from a min-heap of
 * each host's next round (maglev_next_round); the rounds loop visited
 * every host each round, 65,537 x wmax / average weight visits. The
 * entries hold candidate indexes. Scratch: the keys and the sorted order,
 * then each host's permutation state and target, and the heap.
 */
static void maglev_build(struct http_lb_cache *k, bool equal)
{
	uint64_t m = k->tab_cap, n = k->n;
	uint32_t *t = k->mag;
	uint64_t *key = k->scratch, *ord = k->scratch + 2 * n, *heap = k->scratch + 3 * n;
	uint64_t *st = k->scratch, *tg = k->scratch + n; /* once sorted */
	char b[24];
	uint64_t sum = 0;
	for (uint64_t j = 0; j < n; j++) {
		key_pack(b, host_key_str(k->cand[j], b), &key[2 * j], &key[2 * j + 1]);
		ord[j] = j;
		sum += ep_weight(k->cand[j]);
	}
	idx_sort(ord, n, key_before_fn, key);
	double maxw = 0.0;
	for (uint64_t s = 0; s < n; s++) {
		const struct arn_cfg_endpoint *e = k->cand[ord[s]];
		size_t len = host_key_str(e, b);
		uint64_t off = XXH64(b, len, 0) % m;
		uint64_t skip = m > 1 ? XXH64(b, len, 1) % (m - 1) + 1 : 1;
		st[s] = off | skip << 32; /* the next entry to try, the skip */
		double nw = mag_nw(k, ord[s], sum);
		if (nw > maxw)
			maxw = nw;
	}
	for (uint64_t s = 0; s < n; s++) {
		dset(&tg[s], 0.0);	  /* Envoy's target_weight_ */
		heap[s] = 1ull << 24 | s; /* the first take: round 1 */
	}
	for (uint64_t i = 0; i < m; i++)
		t[i] = UINT32_MAX;
	uint64_t filled = 0;
	if (equal) {
		while (filled < m)
			for (uint64_t s = 0; s < n && filled < m; s++, filled++)
				maglev_take(t, m, &st[s], (uint32_t)ord[s]);
	} else if (n >= 1u << 24) {
		/* past 2^24 hosts (no room in a heap key): Envoy's rounds */
		for (uint64_t round = 1; filled < m; round++)
			for (uint64_t s = 0; s < n && filled < m; s++) {
				double nw = mag_nw(k, ord[s], sum);
				if ((double)round * nw < dget(&tg[s]))
					continue;
				dset(&tg[s], dget(&tg[s]) + maxw);
				maglev_take(t, m, &st[s], (uint32_t)ord[s]);
				filled++;
			}
	} else {
		/* sorted by (round, host): a valid heap as it is */
		for (; filled < m; filled++) {
			uint64_t s = heap[0] & 0xffffff, r = heap[0] >> 24;
			maglev_take(t, m, &st[s], (uint32_t)ord[s]);
			double tt = dget(&tg[s]) + maxw;
			dset(&tg[s], tt);
			double nw = mag_nw(k, ord[s], sum);
			heap[0] = maglev_next_round(r, nw, tt) << 24 | s;
			mheap_down(heap, 0, n);
		}
	}
	k->tab_n = m;
}

/* Weighted rendezvous hashing's score of @p e for key @p hash:
 * w / -ln(u), u in (0, 1); the highest wins. */
static double rendezvous(uint64_t hash, const struct arn_cfg_endpoint *e, double w)
{
	uint64_t h = mix64(hash ^ mix64(((uint64_t)e->addr << 16) | e->port));
	double u = ((double)(h >> 11) + 0.5) / 9007199254740992.0;
	return w / -log(u);
}

/*
 * A hashed pick without a table: RING_HASH's ring answer computed from
 * the candidates' points (the same host as the ring: O(points)), MAGLEV's
 * weighted rendezvous hashing (the candidate with the highest score).
 * Over the cached list (its normalized weights @p nw with locality
 * weighting) or, without one, in place.
 */
static const struct arn_cfg_endpoint *__attribute__((noinline))
hash_walk(const struct cset *pc, const double *nw, bool ring, uint64_t hash)
{
	struct cset cc = *pc;
	cc.nw = nw; /* the cache's list: its weights (NULL: none, or a walk) */
	const struct cset *c = &cc;
	const struct arn_cfg_endpoint *win = NULL;
	double best = -1;
	if (ring) {
		struct ring_best b = {.s = {ring_consider}, .h = hash};
		double scale;
		uint64_t sum;
		ring_plan(c, c->in->cluster, c->in->eps->n_endpoints, &scale, &sum);
		ring_points(c, c->in->cluster, scale, sum, &b.s);
		return b.ge_ep ? b.ge_ep : b.low_ep;
	}
	size_t x = c->cand ? 0 : c->base;
	for (size_t l = 0; c->cand ? l < 1 : l < c->pr->n_localities; l++) {
		size_t n = c->cand ? c->n : c->pr->localities[l].n_endpoints;
		for (size_t i = 0; i < n; i++, x++) {
			const struct arn_cfg_endpoint *e =
			    c->cand ? c->cand[i] : &c->pr->localities[l].endpoints[i];
			if (!c->cand && !takes(c, e, x))
				continue;
			double s = rendezvous(hash, e, c->nw ? c->nw[i] : (double)ep_weight(e));
			if (s > best) {
				best = s;
				win = e;
			}
		}
	}
	return win;
}

static int __attribute__((noinline))
pick_walk(const struct http_lb_in *in, struct http_lb_out *out, uint32_t panic_pct, uint8_t lb);

/* RING_HASH's or MAGLEV's pick for @p hash among @p c: from the table of
 * cache @p t (NULL: not cached) when it has the policy's, else
 * hash_walk. Out of line, with hash_walk: inline in pick_walk, their
 * registers cost every round-robin pick 3 instructions (bench_lb). */
static const struct arn_cfg_endpoint *__attribute__((noinline))
hash_pick(const struct cset *c, const struct http_lb_cache *t, uint8_t lb, uint64_t hash,
	  uint32_t attempt)
{
	if (t && t->tab_kind == HTTP_LB_TAB_RING && lb == ARN_CFG_LB_RING_HASH)
		return c->cand[ring_find(t->ring, t->tab_n, hash, attempt)];
	/* Envoy's MaglevTable::chooseHost: a re-pick's hash, mutated by a
	 * value with most bits set */
	if (attempt && lb == ARN_CFG_LB_MAGLEV)
		hash ^= ~0ull - attempt + 1;
	if (t && t->tab_kind == HTTP_LB_TAB_MAGLEV && lb == ARN_CFG_LB_MAGLEV)
		return c->cand[t->mag[hash % t->tab_n]];
	return hash_walk(c, t && t->nw_on ? t->nw : NULL, lb == ARN_CFG_LB_RING_HASH, hash);
}

int http_lb_pick(const struct http_lb_in *in, struct http_lb_out *out)
{
	const struct arn_cfg_endpoints *eps = in->eps;
	out->ep = NULL;
	out->panic = false;
	if (!eps || eps->n_endpoints == 0)
		return -ENOENT;
	uint32_t panic_pct = in->cluster ? in->cluster->healthy_panic_threshold : 5000;
	uint8_t lb = in->cluster ? in->cluster->lb : ARN_CFG_LB_ROUND_ROBIN;
	/* A cluster of one healthy host (a STATIC cluster's usual shape): it
	 * is every policy's pick and no panic (1 of 1 is 100%), without the
	 * walks below; round robin still advances its counter, as it would
	 * (bench_hcm: 172 instructions to about 30). The walks are out of
	 * line. */
	const struct arn_cfg_endpoint *one = in->hosts ? NULL : http_lb_one(eps, panic_pct);
	if (one) {
		if (http_lb_counts(lb) && in->rr)
			(*in->rr)++;
		out->ep = one;
		return 0;
	}
	return pick_walk(in, out, panic_pct, lb);
}

/*
 * Envoy's priority loads (LoadBalancerBase::recalculatePerPriorityState,
 * recalculatePerPriorityPanic, recalculateLoadInTotalPanic, choosePriority):
 * a priority's healthy (degraded) availability is min(100,
 * overprovisioning_factor x its healthy (degraded) hosts / its hosts), in
 * whole percent; the load's 100 percent goes to the priorities in order,
 * each taking its availability x 100 / the total availability (capped at
 * 100), the healthy ones first, then the degraded, the rounding's rest to
 * the first available priority. So a priority keeps all of the traffic
 * while 1 / 1.4 (71%) of its hosts are healthy and then spills it to the
 * next in proportion, rather than holding it until its last host fails.
 * A priority is in panic (its every host a candidate) when the total is
 * under 100 and its healthy and degraded hosts are under
 * healthy_panic_threshold (rounded to a whole percent, as Envoy's
 * PROTOBUF_PERCENT_TO_ROUNDED_INTEGER) of its hosts; when every priority
 * is, the load follows the priorities' host counts. EDS DRAINING hosts
 * are Envoy's excluded ones: in no priority's share.
 */
#define LB_PRIOS 128 /* the configuration's bound (conv_cluster.c) */

struct prio_loads {
	size_t n;	      /* priorities */
	uint8_t hl[LB_PRIOS]; /* healthy load, percent */
	uint8_t dl[LB_PRIOS]; /* degraded load, percent */
	bool panic[LB_PRIOS]; /* its every host a candidate */
};

static void prio_loads(const struct http_lb_in *in, uint32_t panic_pct, uint64_t *until,
		       struct prio_loads *pl)
{
	const struct arn_cfg_endpoints *eps = in->eps;
	size_t np = eps->n_priorities < LB_PRIOS ? eps->n_priorities : LB_PRIOS;
	uint32_t hav[LB_PRIOS], dav[LB_PRIOS];
	uint64_t hosts[LB_PRIOS], up[LB_PRIOS], all = 0;
	/* 0: an endpoints object not made by the configuration (which
	 * refuses 0): Envoy's default */
	uint64_t of = eps->overprovisioning_factor ? eps->overprovisioning_factor : 140;
	uint32_t tot = 0;
	size_t k = 0;
	pl->n = np;
	for (size_t p = 0; p < np; p++) {
		const struct arn_cfg_priority *pr = &eps->priorities[p];
		uint64_t n = 0, h = 0, d = 0;
		for (size_t l = 0; l < pr->n_localities; l++)
			for (size_t i = 0; i < pr->localities[l].n_endpoints; i++, k++) {
				const struct arn_cfg_endpoint *ep = &pr->localities[l].endpoints[i];
				/* Envoy's excluded hosts (EDS DRAINING) count in
				 * no share */
				if (ep->health == ARN_CFG_HEALTH_DRAINING)
					continue;
				n++;
				if (healthy(in, ep, k, until))
					h++;
				else if (degraded(in, ep, k, until))
					d++;
			}
		hosts[p] = n;
		up[p] = h + d;
		all += pr->n_endpoints;
		hav[p] = n ? (uint32_t)(of * h / n < 100 ? of * h / n : 100) : 0;
		dav[p] = n ? (uint32_t)(of * d / n < 100 ? of * d / n : 100) : 0;
		tot += hav[p] + dav[p];
		pl->hl[p] = pl->dl[p] = 0;
		pl->panic[p] = false;
	}
	if (tot > 100)
		tot = 100;
	if (tot) {
		uint32_t left = 100;
		int fh = -1, fd = -1;
		for (size_t p = 0; p < np; p++) {
			uint32_t v = hav[p] * 100 / tot;
			if (fh < 0 && hav[p])
				fh = (int)p;
			pl->hl[p] = (uint8_t)(v < left ? v : left);
			left -= pl->hl[p];
		}
		for (size_t p = 0; p < np; p++) {
			uint32_t v = dav[p] * 100 / tot;
			if (fd < 0 && dav[p])
				fd = (int)p;
			pl->dl[p] = (uint8_t)(v < left ? v : left);
			left -= pl->dl[p];
		}
		if (left && fh >= 0)
			pl->hl[fh] += (uint8_t)left;
		else if (left && fd >= 0)
			pl->dl[fd] += (uint8_t)left;
	}
	uint64_t thr = (panic_pct + 50) / 100;
	if (thr > 100)
		thr = 100;
	if (np == 0)
		return;
	if (thr == 0 && tot == 0) {
		pl->hl[0] = 100; /* nothing to route to: P0, which has no host up */
		return;
	}
	if (tot == 100)
		return; /* no panic, however few a priority has */
	bool total = true;
	for (size_t p = 0; p < np; p++) {
		/* Envoy's isHostSetInPanic: 100 x up / hosts < threshold */
		pl->panic[p] = hosts[p] ? 100 * up[p] < thr * hosts[p] : thr > 0;
		total = total && pl->panic[p];
	}
	if (!total)
		return;
	/* every priority in panic: the load follows the host counts */
	uint32_t left = 100;
	int first = -1;
	for (size_t p = 0; p < np; p++) {
		if (first < 0 && eps->priorities[p].n_endpoints)
			first = (int)p;
		pl->hl[p] = all ? (uint8_t)(100 * eps->priorities[p].n_endpoints / all) : 0;
		pl->dl[p] = 0;
		left -= pl->hl[p];
	}
	pl->hl[first < 0 ? 0 : first] += (uint8_t)left;
}

/* Envoy's choosePriority for @p r: the priority whose share of the load
 * line (1-100, the healthy loads then the degraded) holds r % 100 + 1, and
 * its candidates' mode (0 healthy, 1 degraded, 2 every host: panic). */
static size_t prio_pick(const struct prio_loads *pl, uint64_t r, int *mode)
{
	uint32_t at = (uint32_t)(r % 100) + 1, sum = 0;
	for (size_t p = 0; p < pl->n; p++) {
		sum += pl->hl[p];
		if (at <= sum) {
			*mode = pl->panic[p] ? 2 : 0;
			return p;
		}
	}
	for (size_t p = 0; p < pl->n; p++) {
		sum += pl->dl[p];
		if (at <= sum) {
			*mode = pl->panic[p] ? 2 : 1;
			return p;
		}
	}
	*mode = pl->panic[0] ? 2 : 0; /* (the loads sum to 100) */
	return 0;
}

/* The priority pick's random value: the request's hash for RING_HASH and
 * MAGLEV (Envoy's ThreadAwareLoadBalancer chooses the priority with it),
 * else one drawn from the pick's random, apart from the host's. */
static uint64_t prio_rand(const struct http_lb_in *in, uint8_t lb)
{
	if (in->has_hash && (lb == ARN_CFG_LB_RING_HASH || lb == ARN_CFG_LB_MAGLEV))
		return in->hash;
	return mix64(in->rand ^ 0x2545f4914f6cdd1dull);
}

/* The candidates of the priority Envoy's loads give for @p r into *@p c,
 * and whether they are panic's; @p until as in struct cset. */
static void choose(const struct http_lb_in *in, uint32_t panic_pct, struct cset *c, bool *panic,
		   uint64_t *until, uint64_t r)
{
	struct prio_loads pl;
	int mode;
	prio_loads(in, panic_pct, until, &pl);
	c->n = 0;
	if (pl.n == 0)
		return;
	size_t p = prio_pick(&pl, r, &mode);
	*panic = mode == 2;
	cset_of(c, in, p, mode, until);
}

/* A run of a worker's cached candidates: one priority's hosts of one
 * mode that take load, in the load line's order. */
struct prio_run {
	size_t p;
	int mode;
	uint8_t upto; /* the load line's end of its share (1-100) */
};

/* The runs of @p pl (those with load) into @p r, at most @p cap of them.
 * @return how many there are (more than cap: not all listed). */
static size_t prio_runs(const struct prio_loads *pl, struct prio_run *r, size_t cap)
{
	size_t nr = 0;
	uint32_t sum = 0;
	for (int d = 0; d < 2; d++)
		for (size_t p = 0; p < pl->n; p++) {
			uint8_t load = d ? pl->dl[p] : pl->hl[p];
			if (!load)
				continue;
			sum += load;
			if (nr < cap)
				r[nr] = (struct prio_run){
				    .p = p, .mode = pl->panic[p] ? 2 : d, .upto = (uint8_t)sum};
			nr++;
		}
	return nr;
}

/* ---- locality weighting (common_lb_config.locality_weighted_lb_config) ----
 *
 * Envoy's (upstream_impl.cc, HostSetImpl::rebuildLocalityScheduler and
 * effectiveLocalityWeight; load_balancer_impl.cc, hostSourceToUse): the
 * localities of a priority are its distinct (region, zone, sub_zone) in
 * that order (Envoy's std::map with LocalityLess; entries naming the same
 * locality are one, the last weight given is its weight); each has the
 * effective weight weight x min(1, overprovisioning_factor / 100 x its
 * eligible hosts / its hosts), where eligible is healthy (degraded when
 * the degraded hosts serve); those above 0 enter an EDF scheduler
 * (edf_scheduler.h: deadline = now + 1 / weight, ties in insertion order)
 * created with a random number of picks done (createWithPicks: workers do
 * not all start on the same locality). A pick takes the locality with the
 * earliest deadline, then the lb_policy picks among its eligible hosts.
 * In panic, or when no locality has an effective weight, the priority's
 * hosts are one list, as without the option.
 */

static const char *nz(const char *s)
{
	return s ? s : "";
}

/* Envoy's LocalityLess of priority @p pr's localities @p a and @p b. */
static int loc_cmp(const struct arn_cfg_priority *pr, uint64_t a, uint64_t b)
{
	const struct arn_cfg_locality *x = &pr->localities[a], *y = &pr->localities[b];
	int c = strcmp(nz(x->region), nz(y->region));
	if (!c)
		c = strcmp(nz(x->zone), nz(y->zone));
	if (!c)
		c = strcmp(nz(x->sub_zone), nz(y->sub_zone));
	return c;
}

/* Is locality @p a before @p b (their keys, then their order: stable)? */
static bool loc_before(const struct arn_cfg_priority *pr, uint64_t a, uint64_t b)
{
	int c = loc_cmp(pr, a, b);
	return c ? c < 0 : a < b;
}

static bool loc_before_fn(const void *pr, uint64_t a, uint64_t b)
{
	return loc_before(pr, a, b);
}

/* Envoy's EdfEntry order: the earlier deadline, then the lower offset. */
static bool edf_before(const struct http_lb_loc *l, uint32_t a, uint32_t b)
{
	return l[a].deadline < l[b].deadline ||
	       (l[a].deadline == l[b].deadline && l[a].order < l[b].order);
}

static inline __attribute__((always_inline)) void edf_down(struct http_lb_cache *k, size_t i)
{
	uint32_t *h = k->loc_heap;
	size_t n = k->n_loc;
	uint32_t x = h[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && edf_before(k->loc, h[c + 1], h[c]))
			c++;
		if (!edf_before(k->loc, h[c], x))
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = x;
}

/* Envoy's pickAndAdd: the earliest deadline is picked and added back at
 * now + 1 / its weight (the keys are unique: the order offsets). */
static struct http_lb_loc *edf_pick(struct http_lb_cache *k)
{
	struct http_lb_loc *g = &k->loc[k->loc_heap[0]];
	k->loc_now = g->deadline;
	g->deadline = k->loc_now + 1.0 / g->weight;
	g->order = k->loc_order++;
	edf_down(k, 0);
	return g;
}

/* A locality's hosts less Envoy's excluded ones (EDS DRAINING,
 * excludeBasedOnHealthFlag): the count its availability is a share of. */
static uint64_t loc_hosts(const struct arn_cfg_locality *lo)
{
	uint64_t n = 0;
	for (size_t i = 0; i < lo->n_endpoints; i++)
		n += lo->endpoints[i].health != ARN_CFG_HEALTH_DRAINING;
	return n;
}

/* Envoy's effectiveLocalityWeight: @p w x min(1, @p of / 100 x @p elig /
 * @p total), in its doubles; total leaves out the excluded hosts
 * (loc_hosts). */
static double loc_effective(uint32_t w, uint32_t of, uint64_t elig, uint64_t total)
{
	if (total == 0)
		return 0.0;
	double ratio = 1.0 * (double)elig / (double)total;
	double r = ((double)of / 100.0) * ratio;
	return (double)w * (r < 1.0 ? r : 1.0);
}

/* Envoy's EdfScheduler::createWithPicks over k's n_loc localities, with
 * @p picks picks done. */
static void edf_create(struct http_lb_cache *k, uint32_t picks)
{
	size_t n = k->n_loc;
	picks %= 429496729u;
	double sum = 0.0;
	for (size_t i = 0; i < n; i++)
		sum += k->loc[i].weight + 1e-13;
	uint32_t so_far = 0;
	double max_t = 0.0;
	for (size_t i = 0; i < n; i++) {
		struct http_lb_loc *g = &k->loc[i];
		double w = g->weight + 1e-13;
		uint32_t f = (uint32_t)(w * (double)picks / sum);
		if (f > 0 && (double)f / w >= (double)picks / sum)
			f--;
		double t = (double)f / w;
		g->deadline = (double)(f + 1) / w;
		g->order = i;
		if (t > max_t)
			max_t = t;
		so_far += f;
		k->loc_heap[i] = (uint32_t)i;
	}
	for (size_t i = n / 2; i-- > 0;)
		edf_down(k, i);
	k->loc_now = max_t;
	k->loc_order = n;
	for (; so_far < picks; so_far++)
		edf_pick(k);
}

/* The localities of @p c's priority with an effective weight into cache
 * @p k, their candidates in cand (locality after locality, in Envoy's
 * order), and the EDF schedule; @p seed gives the picks done first.
 * @return false: no locality has one (the caller lists the priority). */
static bool lw_build(const struct http_lb_in *in, struct http_lb_cache *k, const struct cset *c,
		     uint64_t seed)
{
	const struct arn_cfg_priority *pr = c->pr;
	size_t nl = pr->n_localities;
	uint64_t *ord = k->loc_tmp, *xb = k->loc_tmp + nl;
	size_t x = c->base;
	for (size_t l = 0; l < nl; l++) {
		ord[l] = l;
		xb[l] = x;
		x += pr->localities[l].n_endpoints;
	}
	idx_sort(ord, nl, loc_before_fn, pr);
	uint64_t n = 0;
	k->n_loc = 0;
	for (size_t g = 0; g < nl;) {
		size_t e = g + 1;
		while (e < nl && loc_cmp(pr, ord[g], ord[e]) == 0)
			e++;
		uint32_t w = 0;
		uint64_t total = 0, elig = 0;
		for (size_t j = g; j < e; j++) {
			const struct arn_cfg_locality *lo = &pr->localities[ord[j]];
			if (lo->weight)
				w = lo->weight;
			total += loc_hosts(lo);
			for (size_t i = 0; i < lo->n_endpoints; i++)
				elig += takes(c, &lo->endpoints[i], xb[ord[j]] + i);
		}
		double eff = loc_effective(w, in->eps->overprovisioning_factor, elig, total);
		if (eff > 0) {
			struct http_lb_loc *lc = &k->loc[k->n_loc++];
			*lc = (struct http_lb_loc){.weight = eff, .off = n, .equal = true};
			uint64_t tw = 0;
			for (size_t j = g; j < e; j++) {
				const struct arn_cfg_locality *lo = &pr->localities[ord[j]];
				for (size_t i = 0; i < lo->n_endpoints; i++) {
					const struct arn_cfg_endpoint *ep = &lo->endpoints[i];
					if (!takes(c, ep, xb[ord[j]] + i))
						continue;
					if (lc->n && ep->weight != k->cand[lc->off]->weight)
						lc->equal = false;
					tw += ep_weight(ep);
					k->cand[n] = ep;
					k->cum[n++] = tw;
					lc->n++;
				}
			}
			lc->total_weight = tw;
			lc->stride = lc->equal ? 1 : rr_stride(tw);
		}
		g = e;
	}
	if (k->n_loc == 0)
		return false;
	k->n = n;
	edf_create(k, (uint32_t)seed);
	return true;
}

/* RING_HASH and MAGLEV with locality weighting: @p c's candidates into
 * cache @p k in Envoy's order (the localities as lw_build sorts and
 * merges them, those of weight 0 left out) with Envoy's normalized
 * weights (thread_aware_lb_impl.cc normalizeLocalityWeights: a host's
 * weight x its locality's weight / the priority's localities' total /
 * its locality's candidates' total; the raw weights, not the effective
 * ones, and the total counts localities without candidates, as Envoy's).
 * @return the candidates: 0 when no locality has a weight (Envoy's
 * table is then empty: no host). */
static uint64_t lw_hash_build(struct http_lb_cache *k, const struct cset *c)
{
	const struct arn_cfg_priority *pr = c->pr;
	size_t nl = pr->n_localities;
	uint64_t *ord = k->loc_tmp, *xb = k->loc_tmp + nl;
	size_t x = c->base;
	for (size_t l = 0; l < nl; l++) {
		ord[l] = l;
		xb[l] = x;
		x += pr->localities[l].n_endpoints;
	}
	idx_sort(ord, nl, loc_before_fn, pr);
	uint64_t lsum = 0;
	for (int pass = 0; pass < 2; pass++) {
		uint64_t n = 0, tw = 0;
		for (size_t g = 0; g < nl;) {
			size_t e = g + 1;
			while (e < nl && loc_cmp(pr, ord[g], ord[e]) == 0)
				e++;
			uint32_t w = 0;
			for (size_t j = g; j < e; j++)
				if (pr->localities[ord[j]].weight)
					w = pr->localities[ord[j]].weight;
			if (!pass) {
				lsum += w;
				g = e;
				continue;
			}
			uint64_t first = n, ltw = 0;
			for (size_t j = g; w && j < e; j++) {
				const struct arn_cfg_locality *lo = &pr->localities[ord[j]];
				for (size_t i = 0; i < lo->n_endpoints; i++) {
					const struct arn_cfg_endpoint *ep = &lo->endpoints[i];
					if (!takes(c, ep, xb[ord[j]] + i))
						continue;
					ltw += ep_weight(ep);
					tw += ep_weight(ep);
					k->cand[n] = ep;
					k->cum[n++] = tw;
				}
			}
			double nlw = (double)w / (double)lsum;
			for (uint64_t j = first; j < n; j++)
				k->nw[j] = (double)ep_weight(k->cand[j]) * nlw / (double)ltw;
			g = e;
		}
		if (!pass && lsum == 0)
			return 0;
		if (pass)
			return n;
	}
	return 0;
}

/* Envoy's locality first (the EDF's pick), then the policy within it:
 * @p c and *@p stride narrowed to its candidates. Out of line, as
 * hash_pick. @return its round-robin counter, or NULL: the cache has no
 * room for the localities (the pick walks). */
static uint64_t *__attribute__((noinline))
lw_narrow(struct http_lb_cache *k, struct cset *c, uint64_t *stride)
{
	if (k->loc_short)
		return NULL; /* the caller walks */
	struct http_lb_loc *g = edf_pick(k);
	c->n = g->n;
	c->total_weight = g->total_weight;
	c->equal = g->equal;
	c->cand = k->cand + g->off;
	c->cum = k->cum + g->off;
	*stride = g->stride;
	return &g->rr;
}

/* Without a cache (rare: http_rt_lb_in gives one to every cluster with
 * locality weighting): @p c narrowed to one locality of its priority,
 * drawn at random by effective weight (entries naming the same locality
 * are not merged here). Unchanged when none has an effective weight. */
static void __attribute__((noinline))
lw_walk(const struct http_lb_in *in, struct cset *c, struct arn_cfg_priority *one)
{
	const struct arn_cfg_priority *pr = c->pr;
	double sum = 0.0, t = 0.0;
	const struct arn_cfg_locality *pick = NULL;
	size_t pick_x = 0;
	for (int pass = 0; pass < 2; pass++) {
		size_t x = c->base;
		for (size_t l = 0; l < pr->n_localities; l++) {
			const struct arn_cfg_locality *lo = &pr->localities[l];
			uint64_t elig = 0;
			for (size_t i = 0; i < lo->n_endpoints; i++)
				elig += takes(c, &lo->endpoints[i], x + i);
			double eff = loc_effective(lo->weight, in->eps->overprovisioning_factor,
						   elig, loc_hosts(lo));
			if (!pass) {
				sum += eff;
			} else if (eff > 0) {
				pick = lo;
				pick_x = x;
				if (t < eff)
					break;
				t -= eff;
			}
			x += lo->n_endpoints;
		}
		if (sum <= 0.0)
			return;
		t = (double)(in->rand >> 11) / 9007199254740992.0 * sum;
	}
	*one = (struct arn_cfg_priority){.localities = (struct arn_cfg_locality *)pick,
					 .n_localities = 1,
					 .n_endpoints = pick->n_endpoints};
	c->pr = one;
	c->base = pick_x;
	c->n = 0;
	c->total_weight = 0;
	c->equal = true;
	uint32_t w0 = 0;
	for (size_t i = 0; i < pick->n_endpoints; i++) {
		const struct arn_cfg_endpoint *ep = &pick->endpoints[i];
		if (!takes(c, ep, pick_x + i))
			continue;
		if (c->n == 0)
			w0 = ep->weight;
		else if (ep->weight != w0)
			c->equal = false;
		c->n++;
		c->total_weight += ep_weight(ep);
	}
}

/* The runs @p r (@p nr, at most HTTP_LB_SEGS) listed in @p k's cand, each
 * with its cumulative weights from 0. @return the candidates listed. */
static uint64_t seg_build(const struct http_lb_in *in, struct http_lb_cache *k,
			  const struct prio_run *r, size_t nr, uint64_t *until)
{
	uint64_t n = 0;
	for (size_t i = 0; i < nr; i++) {
		struct cset c;
		struct http_lb_seg *g = &k->seg[i];
		uint64_t tw = 0;
		cset_of(&c, in, r[i].p, r[i].mode, until);
		g->off = n;
		g->equal = true;
		size_t x = c.base;
		for (size_t l = 0; l < c.pr->n_localities; l++) {
			const struct arn_cfg_locality *lo = &c.pr->localities[l];
			for (size_t j = 0; j < lo->n_endpoints; j++, x++) {
				const struct arn_cfg_endpoint *ep = &lo->endpoints[j];
				if (n == k->cap || !takes(&c, ep, x))
					continue;
				if (n > g->off && ep->weight != k->cand[g->off]->weight)
					g->equal = false;
				tw += ep_weight(ep);
				k->cand[n] = ep;
				k->cum[n++] = tw;
			}
		}
		g->n = n - g->off;
		g->total_weight = tw;
		g->stride = g->equal ? 1 : rr_stride(tw);
		g->upto = r[i].upto;
		g->panic = r[i].mode == 2;
	}
	k->n_seg = (uint8_t)nr;
	return n;
}

/* The run of @p k whose share of the load line holds @p r % 100 + 1
 * (Envoy's choosePriority over the cached runs). */
static const struct http_lb_seg *seg_at(const struct http_lb_cache *k, uint64_t r)
{
	uint32_t at = (uint32_t)(r % 100) + 1;
	for (size_t i = 0; i < k->n_seg; i++)
		if (at <= k->seg[i].upto)
			return &k->seg[i];
	return &k->seg[k->n_seg - 1];
}

/* That run's listed candidates into @p c, and whether it is panic's. */
static void seg_narrow(const struct http_lb_cache *k, struct cset *c, uint64_t *stride, uint64_t r,
		       bool *panic)
{
	const struct http_lb_seg *g = seg_at(k, r);
	c->n = g->n;
	c->total_weight = g->total_weight;
	c->equal = g->equal;
	c->cand = k->cand + g->off;
	c->cum = k->cum + g->off;
	*stride = g->stride;
	*panic = g->panic;
}

/* The worker's cached candidates, built again: choose's, listed with their
 * cumulative weights. The epoch is the one the caller read before: a
 * change of health after it moves the epoch again, and the next pick
 * builds once more. */
static void __attribute__((noinline))
cache_build(const struct http_lb_in *in, struct http_lb_cache *k, uint32_t panic_pct)
{
	struct cset c;
	bool panic = false;
	uint64_t until = UINT64_MAX;
	/* the table built last stays when the candidates are the same
	 * endpoints, in order, of the same endpoints and cluster (so the same
	 * weights and table options): a move of the health epoch that left
	 * them as they were (another host's check verdict or ejection in
	 * another priority, a refused claim given back) builds no table */
	uint64_t old_n = k->n;
	uint8_t old_kind = k->tab_kind;
	bool same = k->eps == in->eps && k->cluster == in->cluster && old_kind != HTTP_LB_TAB_NONE;
	k->eps = NULL; /* not valid while it is built */
	uint64_t n = 0, tw = 0;
	/* Envoy's priority loads: one run (the usual: a priority takes all
	 * of it) is one list as ever; more are listed one after the other,
	 * the pick choosing by the load line (seg_narrow), or walked when
	 * they are more than the cache holds or locality weighting would
	 * narrow each of them */
	struct prio_loads pl;
	struct prio_run runs[HTTP_LB_SEGS];
	prio_loads(in, panic_pct, &until, &pl);
	size_t nr = prio_runs(&pl, runs, HTTP_LB_SEGS);
	k->n_seg = 0;
	k->walk = false;
	c.n = 0;
	if (nr == 1) {
		panic = runs[0].mode == 2;
		cset_of(&c, in, runs[0].p, runs[0].mode, &until);
	} else if (nr > 1) {
		same = false;
		if (nr > HTTP_LB_SEGS) {
			k->walk = true;
		} else if (in->cluster && in->cluster->locality_weighted) {
			/* the runs kept, not listed: a pick walks only its
			 * run's priority (lw_walk), not every endpoint */
			for (size_t i = 0; i < nr; i++)
				k->seg[i] = (struct http_lb_seg){.upto = runs[i].upto,
								 .panic = runs[i].mode == 2,
								 .prio = (uint8_t)runs[i].p,
								 .mode = (uint8_t)runs[i].mode};
			k->n_seg = (uint8_t)nr;
			k->walk = true;
		} else {
			n = seg_build(in, k, runs, nr, &until);
		}
	}
	bool equal = true;
	uint8_t lb = in->cluster ? in->cluster->lb : ARN_CFG_LB_ROUND_ROBIN;
	/* locality weighting: not in panic (Envoy's AllHosts), not for the
	 * hash policies (the configuration refuses them) */
	k->n_loc = 0;
	k->loc_short = false;
	k->lw = false;
	k->nw_on = false;
	bool hashed = lb == ARN_CFG_LB_RING_HASH || lb == ARN_CFG_LB_MAGLEV;
	if (c.n && hashed && in->cluster && in->cluster->locality_weighted && k->nw) {
		if (c.pr->n_localities > k->loc_cap) {
			k->loc_short = true; /* another generation's: the pick walks */
		} else {
			n = lw_hash_build(k, &c);
			tw = n ? k->cum[n - 1] : 0;
			for (uint64_t j = 1; j < n; j++)
				if (k->nw[j] != k->nw[0] ||
				    k->cand[j]->weight != k->cand[0]->weight)
					equal = false;
			k->nw_on = true;
			same = false; /* the table is built again with the list */
			c.n = 0;      /* listed */
		}
	}
	/* one locality is the whole priority: picking it first changes
	 * nothing (its weight 0 too: then no schedule, one list) */
	bool lw = c.n && !panic && in->cluster && in->cluster->locality_weighted &&
		  lb != ARN_CFG_LB_RING_HASH && lb != ARN_CFG_LB_MAGLEV && c.pr->n_localities > 1;
	if (lw && c.pr->n_localities > k->loc_cap)
		k->loc_short = true; /* another generation's: the pick walks */
	else if (lw && lw_build(in, k, &c, in->rand)) {
		n = k->n;
		c.n = 0; /* listed */
		same = false;
	}
	if (c.n) {
		size_t x = c.base;
		for (size_t l = 0; l < c.pr->n_localities; l++) {
			const struct arn_cfg_locality *lo = &c.pr->localities[l];
			for (size_t i = 0; i < lo->n_endpoints; i++, x++) {
				const struct arn_cfg_endpoint *ep = &lo->endpoints[i];
				if (n == k->cap || !takes(&c, ep, x))
					continue;
				if (n && ep->weight != k->cand[0]->weight)
					equal = false;
				if (n >= old_n || k->cand[n] != ep)
					same = false;
				tw += ep_weight(ep);
				k->cand[n] = ep;
				k->cum[n++] = tw;
			}
		}
	}
	same = same && n == old_n;
	k->n = n;
	k->total_weight = tw;
	k->equal = equal;
	k->stride = equal ? 1 : rr_stride(tw);
	k->panic = panic;
	k->until_ms = until;
	k->cluster = in->cluster;
	k->epoch = in->epoch;
	k->lw = k->n_loc || k->loc_short || k->n_seg || k->walk;
	if (k->lw)
		k->n = 0; /* the pick narrows to a locality or a run */
	if (k->n_seg || k->walk) {
		/* no table over runs of several priorities: a hashed pick
		 * reads its run's points (RING_HASH: the same answer) */
		k->tab_kind = HTTP_LB_TAB_NONE;
		k->tab_n = 0;
	} else if (same && ((lb == ARN_CFG_LB_RING_HASH && old_kind == HTTP_LB_TAB_RING) ||
			    (lb == ARN_CFG_LB_MAGLEV && old_kind == HTTP_LB_TAB_MAGLEV))) {
		/* kept, tab_n with it */
	} else {
		k->tab_kind = HTTP_LB_TAB_NONE;
		k->tab_n = 0;
		if (n && lb == ARN_CFG_LB_RING_HASH && k->ring) {
			struct cset kc = {
			    .in = in, .n = n, .cand = k->cand, .nw = k->nw_on ? k->nw : NULL};
			if (ring_build(k, &kc, in->cluster, in->eps->n_endpoints))
				k->tab_kind = HTTP_LB_TAB_RING;
			k->tab_builds++;
		} else if (n && lb == ARN_CFG_LB_MAGLEV && k->mag) {
			maglev_build(k, equal);
			k->tab_kind = HTTP_LB_TAB_MAGLEV;
			k->tab_builds++;
		}
	}
	k->eps = in->eps;
	k->builds++;
}

static int pick_walk(const struct http_lb_in *in, struct http_lb_out *out, uint32_t panic_pct,
		     uint8_t lb)
{
	struct cset c;
	uint64_t stride = 0;
	uint64_t *rr = in->rr;
	struct http_lb_cache *k = in->cache;
	struct arn_cfg_priority one;
	if (k && k->cap >= in->eps->n_endpoints) {
		/* the worker's list, unless the endpoints, the cluster or the
		 * health of its hosts moved since, or an ejection it left out
		 * ended */
		if (k->eps != in->eps || k->cluster != in->cluster || k->epoch != in->epoch ||
		    (in->od_crt && in->now_ms >= k->until_ms))
			cache_build(in, k, panic_pct);
		out->panic = k->panic;
		c.in = in;
		c.pr = NULL;
		c.n = k->n;
		c.total_weight = k->total_weight;
		c.equal = k->equal;
		c.cand = k->cand;
		c.cum = k->cum;
		stride = k->stride;
		/* n 0 with lw: the candidates are the localities' (tested
		 * where an empty list is anyway) */
		if (__builtin_expect(c.n == 0, 0) && k->lw) {
			if (k->n_seg && k->walk) {
				/* Envoy's choosePriority over the kept runs,
				 * then the run's priority walked */
				const struct http_lb_seg *g = seg_at(k, prio_rand(in, lb));
				cset_of(&c, in, g->prio, g->mode, NULL);
				out->panic = g->panic;
				stride = 0;
				goto narrow;
			}
			if (k->n_seg)
				seg_narrow(k, &c, &stride, prio_rand(in, lb), &out->panic);
			else if (k->walk || !(rr = lw_narrow(k, &c, &stride)))
				goto walk;
		}
	} else {
	walk:
		out->panic = false;
		choose(in, panic_pct, &c, &out->panic, NULL, prio_rand(in, lb));
	narrow:
		if (c.n && !out->panic && in->cluster && in->cluster->locality_weighted &&
		    c.pr->n_localities > 1 && lb != ARN_CFG_LB_RING_HASH && lb != ARN_CFG_LB_MAGLEV)
			lw_walk(in, &c, &one);
	}
	if (c.n == 0)
		return -ENOENT;
	switch (lb) {
	case ARN_CFG_LB_RANDOM:
		out->ep = cset_weighted(&c, in->rand % c.total_weight);
		break;
	case ARN_CFG_LB_LEAST_REQUEST: {
		/* Envoy: power of two choices when weights are equal, else weighted */
		if (!c.equal || c.n == 1 || !in->active) {
			out->ep = cset_weighted(&c, in->rand % c.total_weight);
			break;
		}
		uint32_t kc = in->cluster && in->cluster->least_request_choices
				  ? in->cluster->least_request_choices
				  : 2;
		const struct arn_cfg_endpoint *best = NULL;
		uint32_t best_a = UINT32_MAX;
		uint64_t r = in->rand;
		for (uint32_t i = 0; i < kc; i++) {
			const struct arn_cfg_endpoint *e =
			    c.cand ? c.cand[r % c.n] : cset_nth(&c, r % c.n);
			r = mix64(r + 0x9e3779b97f4a7c15ull);
			uint32_t a = in->active(in->ctx, e);
			if (a < best_a) {
				best_a = a;
				best = e;
			}
		}
		out->ep = best;
		break;
	}
	case ARN_CFG_LB_RING_HASH:
	case ARN_CFG_LB_MAGLEV:
		if (in->has_hash) {
			out->ep = hash_pick(&c, c.cand ? k : NULL, lb, in->hash, in->attempt);
			break;
		}
		if (c.cand && k->nw_on) {
			/* no hash: Envoy's random one, through the table
			 * (the locality weights are in it) */
			out->ep = hash_pick(&c, k, lb, in->rand, 0);
			break;
		}
		out->ep =
		    cset_weighted(&c, in->rand % c.total_weight); /* no hash: random, as Envoy */
		break;
	default: {
		uint64_t n = rr ? (*rr)++ : in->rand;
		if (c.equal) {
			out->ep = c.cand ? c.cand[n % c.n] : cset_nth(&c, n % c.n);
		} else {
			uint64_t tw = c.total_weight;
			if (!stride)
				stride = rr_stride(tw);
			out->ep = cset_weighted(&c, (n * stride) % tw);
		}
		break;
	}
	}
	return out->ep ? 0 : -ENOENT;
}

int http_lb_override(const struct http_lb_in *in, const struct arn_cfg_endpoint *const *sorted,
		     size_t n_sorted, uint32_t addr, uint16_t port, struct http_lb_out *out)
{
	const struct arn_cfg_endpoint *ep = NULL;
	uint64_t want = (uint64_t)addr << 16 | port;
	if (sorted) {
		size_t lo = 0, hi = n_sorted;
		while (lo < hi && !ep) {
			size_t mid = lo + (hi - lo) / 2;
			uint64_t k = (uint64_t)sorted[mid]->addr << 16 | sorted[mid]->port;
			if (k == want)
				ep = sorted[mid];
			else if (k < want)
				lo = mid + 1;
			else
				hi = mid;
		}
	} else {
		/* no index (a snapshot a generation apart): a walk */
		for (size_t p = 0; in->eps && p < in->eps->n_priorities && !ep; p++) {
			const struct arn_cfg_priority *pr = &in->eps->priorities[p];
			for (size_t l = 0; l < pr->n_localities && !ep; l++)
				for (size_t i = 0; i < pr->localities[l].n_endpoints; i++) {
					const struct arn_cfg_endpoint *e =
					    &pr->localities[l].endpoints[i];
					if (e->addr == addr && e->port == port) {
						ep = e;
						break;
					}
				}
		}
	}
	if (!ep)
		return -ENOENT;
	/* Envoy's host health (HostImpl::healthStatus): a failed active
	 * check or an ejection is UNHEALTHY, else EDS's status; in the
	 * cluster's override_host_status, by default UNKNOWN, HEALTHY and
	 * DEGRADED */
	const struct arn_cfg_cluster *cl = in->cluster;
	unsigned allowed = cl->override_host_set
			       ? cl->override_host_mask
			       : (1u << ARN_CFG_HEALTH_UNKNOWN) | (1u << ARN_CFG_HEALTH_HEALTHY) |
				     (1u << ARN_CFG_HEALTH_DEGRADED);
	unsigned h = ep->health;
	if (in->hosts && hc_failed(in, ep, SIZE_MAX, NULL))
		h = ARN_CFG_HEALTH_UNHEALTHY;
	if (h > ARN_CFG_HEALTH_DEGRADED || !(allowed & (1u << h)))
		return -EHOSTDOWN;
	out->ep = ep;
	out->panic = false;
	return 0;
}

/* Value of cookie @p name in the Cookie headers of @p m. */
bool http_lb_cookie_find(const struct arn_h1_msg *m, const char *name, size_t nlen,
			 struct arn_h1_slice *out)
{
	for (int i = arn_h1_find(m, "cookie", 6, 0); i >= 0;
	     i = arn_h1_find(m, "cookie", 6, i + 1)) {
		const char *p = m->hdrs[i].value, *e = p + m->hdrs[i].value_len;
		while (p < e) {
			while (p < e && (*p == ' ' || *p == ';'))
				p++;
			const char *eq = memchr(p, '=', (size_t)(e - p));
			const char *semi = memchr(p, ';', (size_t)(e - p));
			if (!semi)
				semi = e;
			if (eq && eq < semi && (size_t)(eq - p) == nlen &&
			    memcmp(p, name, nlen) == 0) {
				out->p = eq + 1;
				out->len = (uint32_t)(semi - eq - 1);
				/* RFC 6265 4.1.1: a value may be quoted; Envoy's
				 * parseCookieValue drops the quotes, and its
				 * generated cookies are sent quoted */
				if (out->len >= 2 && out->p[0] == '"' &&
				    out->p[out->len - 1] == '"') {
					out->p++;
					out->len -= 2;
				}
				return true;
			}
			p = semi;
		}
	}
	return false;
}

static bool query_value(const struct arn_h1_msg *m, const char *name, size_t nlen,
			struct arn_h1_slice *out)
{
	const char *q = memchr(m->path.p, '?', m->path.len);
	if (!q)
		return false;
	const char *p = q + 1, *e = m->path.p + m->path.len;
	while (p < e) {
		const char *amp = memchr(p, '&', (size_t)(e - p));
		if (!amp)
			amp = e;
		const char *eq = memchr(p, '=', (size_t)(amp - p));
		const char *ke = eq ? eq : amp;
		if ((size_t)(ke - p) == nlen && memcmp(p, name, nlen) == 0) {
			out->p = eq ? eq + 1 : amp;
			out->len = eq ? (uint32_t)(amp - eq - 1) : 0;
			return true;
		}
		p = amp + 1;
	}
	return false;
}

void http_lb_cookie_value(const struct http_lb_peer *p, char out[16])
{
	/* Envoy's generateCookie: Hex::uint64ToHex(xxHash64(remote address
	 * asString + local address asString)) */
	char b[44];
	size_t n = addr_str(b, p->raddr, p->rport);
	n += addr_str(b + n, p->laddr, p->lport);
	uint64_t v = XXH64(b, n, 0);
	static const char hex[] = "0123456789abcdef";
	for (int i = 15; i >= 0; i--, v >>= 4)
		out[i] = hex[v & 15];
}

uint64_t http_lb_source_ip_hash(uint32_t raddr)
{
	/* IpHashMethod (HTTP) and SourceIpHashMethod (tcp_proxy):
	 * xxHash64(addressAsString) */
	char b[16];
	return XXH64(b, (size_t)arn_fmt_ip4(raddr, b), 0);
}

/* Bytewise order of two values, a prefix first (std::string_view's). */
static int slice_cmp(const char *a, size_t al, const char *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);
	return c ? c : (al > bl) - (al < bl);
}

/* Envoy's HeaderHashMethod: the values of every header @p name, sorted
 * (so their order does not matter), each XXH64'd with the previous
 * hash as its seed (HashUtil::xxHash64 of a span), from 0. Sorted without
 * memory: each turn hashes the smallest value above the last one as many
 * times as it occurs (O(n^2) in the header's lines, which
 * max_headers_count bounds; one line is one XXH64). */
static bool header_hash(const struct arn_h1_msg *m, const char *name, size_t nlen, uint64_t *out)
{
	int k = arn_h1_find(m, name, nlen, 0);
	if (k < 0)
		return false;
	if (arn_h1_find(m, name, nlen, k + 1) < 0) {
		*out = XXH64(m->hdrs[k].value, m->hdrs[k].value_len, 0);
		return true;
	}
	uint64_t seed = 0;
	const char *lp = NULL;
	size_t ll = 0;
	for (;;) {
		int best = -1;
		unsigned mult = 0;
		for (int i = k; i >= 0; i = arn_h1_find(m, name, nlen, i + 1)) {
			const char *v = m->hdrs[i].value;
			size_t l = m->hdrs[i].value_len;
			if (lp && slice_cmp(v, l, lp, ll) <= 0)
				continue;
			int c = best < 0
				    ? -1
				    : slice_cmp(v, l, m->hdrs[best].value, m->hdrs[best].value_len);
			if (c < 0) {
				best = i;
				mult = 1;
			} else if (c == 0) {
				mult++;
			}
		}
		if (best < 0)
			break;
		lp = m->hdrs[best].value;
		ll = m->hdrs[best].value_len;
		while (mult--)
			seed = XXH64(lp, ll, seed);
	}
	*out = seed;
	return true;
}

bool http_lb_hash(const struct arn_cfg_route_action *a, const struct arn_h1_msg *m,
		  const struct http_lb_peer *p, uint64_t *out, uint32_t *gen)
{
	/* Envoy's HashPolicyImpl::generateHash: each policy that gives a hash
	 * (XXH64 of its value, seed 0) is XORed into the previous ones'
	 * rotated left by one; a terminal policy stops once there is a hash,
	 * its own or an earlier one's */
	bool any = false;
	uint64_t h = 0;
	for (size_t i = 0; i < a->n_hash_policies; i++) {
		const struct arn_cfg_hash_policy *hp = &a->hash_policies[i];
		bool got = false;
		uint64_t v = 0;
		struct arn_h1_slice s;
		switch (hp->kind) {
		case ARN_CFG_HASH_HEADER:
			got = header_hash(m, hp->name, hp->name_len, &v);
			break;
		case ARN_CFG_HASH_COOKIE:
			/* an empty value is no cookie (Envoy's value.empty()) */
			if (http_lb_cookie_find(m, hp->name, hp->name_len, &s) && s.len) {
				v = XXH64(s.p, s.len, 0);
				got = true;
			} else if (hp->cookie_ttl_set && i < ARN_CFG_COOKIE_GEN_MAX) {
				/* hashed as the cookie it sets will be on the
				 * client's next request: the same host */
				char c[16];
				http_lb_cookie_value(p, c);
				v = XXH64(c, sizeof(c), 0);
				*gen |= 1u << i;
				got = true;
			}
			break;
		case ARN_CFG_HASH_SOURCE_IP:
			v = http_lb_source_ip_hash(p->raddr);
			got = true;
			break;
		case ARN_CFG_HASH_QUERY_PARAMETER:
			if (query_value(m, hp->name, hp->name_len, &s)) {
				v = XXH64(s.p, s.len, 0);
				got = true;
			}
			break;
		default:
			break;
		}
		if (got) {
			h = any ? (h << 1 | h >> 63) ^ v : v;
			any = true;
		}
		if (hp->terminal && any)
			break;
	}
	*out = h;
	return any;
}
