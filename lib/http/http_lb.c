/*
 * Load balancing over a cluster's endpoints, as of one generation.
 *
 * Host selection follows Envoy's outline: the lowest priority that has
 * healthy hosts takes the traffic; when the healthy share of the hosts
 * falls under healthy_panic_threshold (50% by default) Envoy stops trusting
 * health and balances over every host ("panic"); a cluster with no host at
 * all answers 503 UH. Within the chosen set the lb_policy picks.
 *
 * RING_HASH and MAGLEV are served by weighted rendezvous hashing: like
 * Envoy's ring and Maglev table it maps a request hash to a host
 * consistently (adding or removing a host only moves the keys of that
 * host) and honours weights, but needs no per-cluster table to build on a
 * worker when the host set changes. The exact host a key lands on differs
 * from Envoy's.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "http_int.h"

static bool healthy(const struct arn_cfg_endpoint *ep)
{
	return ep->health == ARN_CFG_HEALTH_UNKNOWN || ep->health == ARN_CFG_HEALTH_HEALTHY;
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

/* Candidates: pointers into the endpoints object, bounded. */
#define LB_MAX 1024

struct cand {
	const struct arn_cfg_endpoint *ep[LB_MAX];
	unsigned n;
	uint64_t total_weight;
};

static void collect(const struct arn_cfg_priority *p, int mode, struct cand *c)
{
	/* mode 0: healthy, 1: degraded, 2: every host */
	for (size_t l = 0; l < p->n_localities; l++) {
		const struct arn_cfg_locality *lo = &p->localities[l];
		for (size_t i = 0; i < lo->n_endpoints && c->n < LB_MAX; i++) {
			const struct arn_cfg_endpoint *ep = &lo->endpoints[i];
			bool take = mode == 2 || (mode == 0 && healthy(ep)) ||
				    (mode == 1 && ep->health == ARN_CFG_HEALTH_DEGRADED);
			if (!take)
				continue;
			c->ep[c->n++] = ep;
			c->total_weight += ep->weight ? ep->weight : 1;
		}
	}
}

static const struct arn_cfg_endpoint *pick_weighted(const struct cand *c, uint64_t x)
{
	uint64_t t = x % c->total_weight;
	for (unsigned i = 0; i < c->n; i++) {
		uint64_t w = c->ep[i]->weight ? c->ep[i]->weight : 1;
		if (t < w)
			return c->ep[i];
		t -= w;
	}
	return c->ep[c->n - 1];
}

static bool equal_weights(const struct cand *c)
{
	for (unsigned i = 1; i < c->n; i++)
		if (c->ep[i]->weight != c->ep[0]->weight)
			return false;
	return true;
}

static int __attribute__((noinline))
pick_walk(const struct http_lb_in *in, struct http_lb_out *out, uint32_t panic_pct, uint8_t lb);

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
	 * (bench_hcm: 172 instructions to about 30). The walks and their 8 KB
	 * of candidates are out of line: this path sets up no such frame. */
	const struct arn_cfg_endpoint *one = http_lb_one(eps, panic_pct);
	if (one) {
		if (http_lb_counts(lb) && in->rr)
			(*in->rr)++;
		out->ep = one;
		return 0;
	}
	return pick_walk(in, out, panic_pct, lb);
}

static int pick_walk(const struct http_lb_in *in, struct http_lb_out *out, uint32_t panic_pct,
		     uint8_t lb)
{
	const struct arn_cfg_endpoints *eps = in->eps;
	struct cand c; /* 8 KB of stack, filled only as far as n */
	c.n = 0;
	c.total_weight = 0;
	size_t total = 0, healthy_n = 0;
	int prio = -1;
	for (size_t p = 0; p < eps->n_priorities; p++) {
		const struct arn_cfg_priority *pr = &eps->priorities[p];
		size_t h = 0;
		for (size_t l = 0; l < pr->n_localities; l++)
			for (size_t i = 0; i < pr->localities[l].n_endpoints; i++)
				h += healthy(&pr->localities[l].endpoints[i]);
		total += pr->n_endpoints;
		if (h && prio < 0) {
			prio = (int)p;
			healthy_n = h;
		}
	}
	if (prio >= 0) {
		/* the healthy share of the hosts, against the panic threshold
		 * (percent x 100); Envoy's overprovisioning is left out */
		const struct arn_cfg_priority *pr = &eps->priorities[prio];
		if (panic_pct > 0 && healthy_n * 10000 < (size_t)panic_pct * pr->n_endpoints) {
			out->panic = true;
			collect(pr, 2, &c);
		} else {
			collect(pr, 0, &c);
		}
	} else {
		for (size_t p = 0; p < eps->n_priorities && c.n == 0; p++)
			collect(&eps->priorities[p], 1, &c);
		if (c.n == 0 && panic_pct > 0) {
			out->panic = true;
			for (size_t p = 0; p < eps->n_priorities && c.n == 0; p++)
				collect(&eps->priorities[p], 2, &c);
		}
	}
	(void)total;
	if (c.n == 0)
		return -ENOENT;
	switch (lb) {
	case ARN_CFG_LB_RANDOM:
		out->ep = pick_weighted(&c, in->rand);
		break;
	case ARN_CFG_LB_LEAST_REQUEST: {
		/* Envoy: power of two choices when weights are equal, else weighted */
		if (!equal_weights(&c) || c.n == 1 || !in->active) {
			out->ep = pick_weighted(&c, in->rand);
			break;
		}
		uint32_t k = in->cluster && in->cluster->least_request_choices
				 ? in->cluster->least_request_choices
				 : 2;
		const struct arn_cfg_endpoint *best = NULL;
		uint32_t best_a = UINT32_MAX;
		uint64_t r = in->rand;
		for (uint32_t i = 0; i < k; i++) {
			const struct arn_cfg_endpoint *e = c.ep[r % c.n];
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
			double best = -1;
			for (unsigned i = 0; i < c.n; i++) {
				const struct arn_cfg_endpoint *e = c.ep[i];
				uint64_t h =
				    mix64(in->hash ^ mix64(((uint64_t)e->addr << 16) | e->port));
				/* weighted rendezvous: w / -ln(u), u in (0, 1) */
				double u = ((double)(h >> 11) + 0.5) / 9007199254740992.0;
				double s = (double)(e->weight ? e->weight : 1) / -log(u);
				if (s > best) {
					best = s;
					out->ep = e;
				}
			}
			break;
		}
		out->ep = pick_weighted(&c, in->rand); /* no hash: random, as Envoy */
		break;
	default: {
		uint64_t n = in->rr ? (*in->rr)++ : in->rand;
		if (equal_weights(&c)) {
			out->ep = c.ep[n % c.n];
		} else {
			/* interleave by weight: walk the weight line with a stride
			 * coprime to it, so heavy hosts are not hit in bursts */
			uint64_t tw = c.total_weight, stride = 1;
			for (uint64_t s = tw / 2 + 1; s < tw; s++) {
				uint64_t a = s, b = tw;
				while (b) {
					uint64_t t = a % b;
					a = b;
					b = t;
				}
				if (a == 1) {
					stride = s;
					break;
				}
			}
			out->ep = pick_weighted(&c, (n * stride) % tw);
		}
		break;
	}
	}
	return out->ep ? 0 : -ENOENT;
}

static uint64_t fnv(const char *s, size_t n, uint64_t h)
{
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* Value of cookie @p name in the Cookie headers of @p m. */
static bool cookie_value(const struct arn_h1_msg *m, const char *name, size_t nlen,
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
	unsigned char b[12] = {
	    (unsigned char)(p->raddr >> 24), (unsigned char)(p->raddr >> 16),
	    (unsigned char)(p->raddr >> 8),  (unsigned char)p->raddr,
	    (unsigned char)(p->rport >> 8),  (unsigned char)p->rport,
	    (unsigned char)(p->laddr >> 24), (unsigned char)(p->laddr >> 16),
	    (unsigned char)(p->laddr >> 8),  (unsigned char)p->laddr,
	    (unsigned char)(p->lport >> 8),  (unsigned char)p->lport,
	};
	uint64_t v = mix64(fnv((const char *)b, sizeof(b), 0xcbf29ce484222325ull));
	static const char hex[] = "0123456789abcdef";
	for (int i = 15; i >= 0; i--, v >>= 4)
		out[i] = hex[v & 15];
}

bool http_lb_hash(const struct arn_cfg_route_action *a, const struct arn_h1_msg *m,
		  const struct http_lb_peer *p, uint64_t *out, uint32_t *gen)
{
	bool any = false;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < a->n_hash_policies; i++) {
		const struct arn_cfg_hash_policy *hp = &a->hash_policies[i];
		bool got = false;
		struct arn_h1_slice v;
		switch (hp->kind) {
		case ARN_CFG_HASH_HEADER: {
			int k = arn_h1_find(m, hp->name, hp->name_len, 0);
			if (k >= 0) {
				h = fnv(m->hdrs[k].value, m->hdrs[k].value_len, h);
				got = true;
			}
			break;
		}
		case ARN_CFG_HASH_COOKIE:
			/* an empty value is no cookie (Envoy's value.empty()) */
			if (cookie_value(m, hp->name, hp->name_len, &v) && v.len) {
				h = fnv(v.p, v.len, h);
				got = true;
			} else if (hp->cookie_ttl_set && i < ARN_CFG_COOKIE_GEN_MAX) {
				/* hashed as the cookie it sets will be on the
				 * client's next request: the same host */
				char c[16];
				http_lb_cookie_value(p, c);
				h = fnv(c, sizeof(c), h);
				*gen |= 1u << i;
				got = true;
			}
			break;
		case ARN_CFG_HASH_SOURCE_IP: {
			char b[4] = {(char)(p->raddr >> 24), (char)(p->raddr >> 16),
				     (char)(p->raddr >> 8), (char)p->raddr};
			h = fnv(b, 4, h);
			got = true;
			break;
		}
		case ARN_CFG_HASH_QUERY_PARAMETER:
			if (query_value(m, hp->name, hp->name_len, &v)) {
				h = fnv(v.p, v.len, h);
				got = true;
			}
			break;
		default:
			break;
		}
		any |= got;
		if (got && hp->terminal)
			break;
	}
	*out = mix64(h);
	return any;
}
