/*
 * The configuration store: batches, warming, generations, RCU publication,
 * interest, readiness and what the admin sees.
 *
 * State on the control lcore, per type: a map name -> entry. An entry holds
 * the active object (the one in the current generation), the warming one
 * (accepted, waiting for what it references, G6), the serialized proto and
 * version of each (for /config_dump), and the last error for the name.
 *
 * What workers see is only the generation: per type, the root of a
 * persistent trie (hamt.h) of active objects. A batch edits "next" roots
 * (copying only shared paths), then publishes one new generation with a
 * single release store; the previous generation is retired to an
 * rte_rcu_qsbr deferred-free queue (arn_defer.h) and freed by
 * arn_config_poll() once every registered worker has reported a quiescent
 * state after the publication.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_rcu_qsbr.h>

#include "upb/decode.h"

#include "arn_bootstrap.h"
#include "arn_config.h"
#include "arn_defer.h"
#include "arn_log.h"
#include "arn_proto.h"
#include "config_int.h"
#include "dns_int.h"
#include "hamt.h"

const char *const arn_cfg_type_msg[ARN_CFG_NTYPES] = {
    ARN_TYPE_LISTENER, ARN_TYPE_ROUTE,	ARN_TYPE_CLUSTER,
    ARN_TYPE_CLA,      ARN_TYPE_SECRET, ARN_TYPE_TOOLSET,
};

static const char *const type_urls[ARN_CFG_NTYPES] = {
    ARN_TYPE_URL_LISTENER, ARN_TYPE_URL_ROUTE,	ARN_TYPE_URL_CLUSTER,
    ARN_TYPE_URL_CLA,	   ARN_TYPE_URL_SECRET, ARN_TYPE_URL_TOOLSET,
};

static const char *const type_names[ARN_CFG_NTYPES] = {
    "Listener", "RouteConfiguration", "Cluster", "ClusterLoadAssignment", "Secret", "ToolSet",
};

int arn_config_type_from_url(const char *url, size_t len)
{
	for (int t = 0; t < ARN_CFG_NTYPES; t++)
		if (strlen(type_urls[t]) == len && memcmp(type_urls[t], url, len) == 0)
			return t;
	return -EINVAL;
}

const char *arn_config_type_url(enum arn_cfg_type t)
{
	return (unsigned)t < ARN_CFG_NTYPES ? type_urls[t] : "";
}

const char *arn_config_type_name(enum arn_cfg_type t)
{
	return (unsigned)t < ARN_CFG_NTYPES ? type_names[t] : "";
}

/* ---- a small string-keyed hash map ---------------------------------------- */

struct snode {
	struct snode *next;
	uint64_t hash;
	size_t len;
	char *key;
	void *val;
	long count;
};

struct smap {
	struct snode **b;
	size_t nb, n;
};

static struct snode *smap_get(const struct smap *m, const char *k, size_t len, uint64_t h)
{
	if (!m->nb)
		return NULL;
	for (struct snode *n = m->b[h & (m->nb - 1)]; n; n = n->next)
		if (n->hash == h && n->len == len && memcmp(n->key, k, len) == 0)
			return n;
	return NULL;
}

static struct snode *smap_add(struct smap *m, const char *k, size_t len, uint64_t h)
{
	if (m->n + 1 > m->nb) {
		size_t nb = m->nb ? 2 * m->nb : 16;
		struct snode **b = calloc(nb, sizeof(*b));
		if (!b)
			return NULL;
		for (size_t i = 0; i < m->nb; i++)
			for (struct snode *n = m->b[i], *x; n; n = x) {
				x = n->next;
				n->next = b[n->hash & (nb - 1)];
				b[n->hash & (nb - 1)] = n;
			}
		free(m->b);
		m->b = b;
		m->nb = nb;
	}
	struct snode *n = calloc(1, sizeof(*n));
	if (!n || !(n->key = malloc(len + 1))) {
		free(n);
		return NULL;
	}
	memcpy(n->key, k, len);
	n->key[len] = 0;
	n->len = len;
	n->hash = h;
	n->next = m->b[h & (m->nb - 1)];
	m->b[h & (m->nb - 1)] = n;
	m->n++;
	return n;
}

static void smap_del(struct smap *m, struct snode *x)
{
	struct snode **pp = &m->b[x->hash & (m->nb - 1)];
	while (*pp != x)
		pp = &(*pp)->next;
	*pp = x->next;
	free(x->key);
	free(x);
	m->n--;
}

/* ---- entries ---------------------------------------------------------------- */

struct version {
	struct arn_cfg_obj *obj; /* one reference */
	char *version;
	char *bytes; /* serialized resource, for /config_dump (keep_bytes()) */
	size_t len;
	int64_t updated_ms;
	struct conv_dep *deps;
	size_t ndeps;
};

struct entry {
	enum arn_cfg_type type;
	const char *name; /* the snode's key */
	size_t len;
	uint64_t hash;
	struct version active, warming;
	uint64_t warm_deadline; /* monotonic ms; 0: no deadline */
	bool warm_initial;	/* warming since before readiness */
	bool is_static;
	bool dns_owned; /* a DNS cluster's endpoints (ARN_CONFIG_APPLY_DNS) */
	char *last_error, *error_version;
	char *error_bytes; /* the refused resource (redacted), for failed_configuration */
	size_t error_len;
	int64_t error_ms;
	size_t warm_idx; /* index in the store's warming list, when warming */
};

/*
 * The checks that need the rest of the configuration (X16) ask, for each
 * resource of a batch, which listener holds an address and which listeners
 * and clusters name a Secret. A walk of every entry for each made a batch
 * quadratic: 8,000 listeners in one LDS response held the control lcore,
 * and xDS and the admin with it, for seconds. For the length of a batch
 * they are looked up here instead: entries by a 64-bit key (address and
 * port, or a Secret name's hash), duplicates kept, nothing deleted. A
 * candidate is checked against its entry's versions, which stay the truth,
 * so one gone stale costs a comparison. The entries it holds are not freed
 * while it lives: LDS builds it after the batch's removals, and an SDS
 * batch's removals drop only Secrets, which are not in it.
 */
struct bslot {
	uint64_t key;
	struct entry *e; /* NULL: empty */
};

struct bidx {
	struct bslot *v;
	size_t cap, n; /* cap a power of two, n <= cap / 2 */
	bool on;       /* false: the checks walk every entry */
};

struct arn_config_store {
	struct smap entries[ARN_CFG_NTYPES];
	struct smap interest[ARN_CFG_NTYPES]; /* name -> count of referencing versions */
	bool interest_dirty[ARN_CFG_NTYPES];
	void (*interest_cb)(void *, const char *);
	void *interest_ctx;
	struct entry **warming; /* every entry with a warming version */
	size_t n_warming, cap_warming;
	struct arn_hamt *next[ARN_CFG_NTYPES];
	size_t n_active[ARN_CFG_NTYPES];
	struct arn_cfg_gen *gen;
	uint64_t gen_id;
	struct arn_defer *retired; /* generations workers may still read */
	struct rte_rcu_qsbr *qsbr;
	struct arn_cfg_reclaim reclaim;
	uint64_t (*now)(void *);
	void *now_ctx;
	uint32_t default_fetch_ms;
	bool static_applied, expect_initial, ready;
	bool initial_done[ARN_CFG_NTYPES];
	uint64_t initial_deadline[ARN_CFG_NTYPES];
	bool initial_timed_out[ARN_CFG_NTYPES];
	/* Envoy's <subscription>.init_fetch_timeout, per type: CDS/LDS first
	 * responses that did not come in time, and, for the types resources
	 * warm on, each warming that ended at initial_fetch_timeout */
	uint64_t init_fetch_timeouts[ARN_CFG_NTYPES];
	struct arn_config_stats st;
	bool validate_only;
	/* called with a generation before workers can see it */
	void (*prepare_cb)(void *ctx, const struct arn_cfg_gen *next);
	void *prepare_ctx;
	struct bidx bidx;    /* the batch's index (bidx_build), while one applies */
	struct arn_dns *dns; /* STRICT_DNS / LOGICAL_DNS resolution; NULL until one */
	char *node_cluster;  /* the bootstrap's node.cluster ("" without one) */
	/* told of each update of a cluster's hosts (update_* counters), after
	 * the generation it made is published: a cluster that warmed on
	 * that update is then there to count it */
	void (*cluster_update_cb)(void *ctx, const char *cluster, enum arn_config_cluster_update u);
	void *cluster_update_ctx;
	struct cl_upd {
		char *name;
		enum arn_config_cluster_update u;
	} *upd;
	size_t n_upd, cap_upd;
};

static struct arn_config_store *global_store;

struct arn_config_store *arn_config_global(void)
{
	return global_store;
}

void arn_config_set_global(struct arn_config_store *s)
{
	global_store = s;
}

static uint64_t real_now(void *ctx)
{
	(void)ctx;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void arn_config_set_clock(struct arn_config_store *s, uint64_t (*now_ms)(void *ctx), void *ctx)
{
	s->now = now_ms ? now_ms : real_now;
	s->now_ctx = ctx;
}

static uint64_t now(struct arn_config_store *s)
{
	return s->now(s->now_ctx);
}

static void version_clear(struct arn_config_store *s, struct entry *e, struct version *v);

/* ---- generations --------------------------------------------------------------- */

static void lindex_unref(struct arn_cfg_lindex *x)
{
	if (x && --x->refs == 0)
		free(x);
}

static void gen_free(void *arg)
{
	struct arn_cfg_gen *g = arg;
	if (!g)
		return;
	for (int t = 0; t < ARN_CFG_NTYPES; t++)
		arn_hamt_unref(g->roots[t], arn_cfg_obj_unref);
	lindex_unref(g->lindex);
	free(g);
}

struct lcollect {
	struct arn_cfg_lindex *x;
};

static void lcollect_fn(void *ctx, struct arn_cfg_obj *o)
{
	struct lcollect *lc = ctx;
	lc->x->l[lc->x->n++] = (struct arn_cfg_listener *)o;
}

static int lcmp(const void *a, const void *b)
{
	const struct arn_cfg_listener *x = *(struct arn_cfg_listener *const *)a;
	const struct arn_cfg_listener *y = *(struct arn_cfg_listener *const *)b;
	if (x->port != y->port)
		return x->port < y->port ? -1 : 1;
	/* specific addresses before 0.0.0.0 for the same port */
	if (x->addr != y->addr)
		return x->addr > y->addr ? -1 : 1;
	return 0;
}

static int publish(struct arn_config_store *s, uint64_t *token)
{
	struct arn_cfg_gen *old = s->gen;
	bool changed = false;
	for (int t = 0; t < ARN_CFG_NTYPES; t++)
		changed |= s->next[t] != old->roots[t];
	if (!changed) {
		for (int t = 0; t < ARN_CFG_NTYPES; t++) {
			arn_hamt_unref(s->next[t], arn_cfg_obj_unref);
			s->next[t] = NULL;
		}
		*token = 0;
		return 0;
	}
	struct arn_cfg_gen *g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	if (s->next[ARN_CFG_LISTENER] == old->roots[ARN_CFG_LISTENER] && old->lindex) {
		g->lindex = old->lindex;
		g->lindex->refs++;
	} else {
		size_t n = s->entries[ARN_CFG_LISTENER].n; /* upper bound of active listeners */
		g->lindex = calloc(1, sizeof(*g->lindex) + (n ? n : 1) * sizeof(void *));
		if (!g->lindex) {
			free(g);
			return -ENOMEM;
		}
		g->lindex->refs = 1;
		struct lcollect lc = {g->lindex};
		arn_hamt_foreach(s->next[ARN_CFG_LISTENER], lcollect_fn, &lc);
		qsort(g->lindex->l, g->lindex->n, sizeof(void *), lcmp);
	}
	for (int t = 0; t < ARN_CFG_NTYPES; t++) {
		g->roots[t] = s->next[t];
		s->next[t] = NULL;
		g->counts[t] = s->n_active[t];
	}
	g->id = ++s->gen_id;
	for (int t = 0; t < ARN_CFG_NTYPES; t++)
		g->changed[t] = g->roots[t] != old->roots[t] ? g->id : old->changed[t];
	/* what the generation needs beside its objects (the TLS contexts its
	 * chains and clusters name) exists before a worker can take it */
	if (s->prepare_cb)
		s->prepare_cb(s->prepare_ctx, g);
	__atomic_store_n(&s->gen, g, __ATOMIC_RELEASE);
	*token = rte_rcu_qsbr_start(s->qsbr);
	arn_defer_free(s->retired, gen_free, old);
	s->st.generations_published++;
	return 0;
}

static void next_begin(struct arn_config_store *s)
{
	for (int t = 0; t < ARN_CFG_NTYPES; t++) {
		s->next[t] = s->gen->roots[t];
		arn_hamt_ref(s->next[t]);
	}
}

void arn_config_set_prepare_cb(struct arn_config_store *s,
			       void (*fn)(void *ctx, const struct arn_cfg_gen *next), void *ctx)
{
	s->prepare_cb = fn;
	s->prepare_ctx = ctx;
}

bool arn_config_acked(struct arn_config_store *s, uint64_t token)
{
	return token == 0 || rte_rcu_qsbr_check(s->qsbr, token, false) == 1;
}

struct rte_rcu_qsbr *arn_config_rcu(struct arn_config_store *s)
{
	return s->qsbr;
}

const struct arn_cfg_gen *arn_config_gen(const struct arn_config_store *s)
{
	return __atomic_load_n(&s->gen, __ATOMIC_ACQUIRE);
}

struct arn_cfg_gen *const *arn_config_gen_slot(const struct arn_config_store *s)
{
	return &s->gen;
}

/* arn_cfg_gen_id_fast (arn_config_model.h) reads the id as the first word */
_Static_assert(offsetof(struct arn_cfg_gen, id) == 0, "a generation's id is its first member");

/* ---- interest (X4) and dependencies ------------------------------------------ */

static void deps_account(struct arn_config_store *s, const struct conv_dep *d, size_t n, int delta)
{
	for (size_t i = 0; i < n; i++) {
		if (d[i].local)
			continue; /* Arion makes it: nothing to subscribe to */
		struct smap *m = &s->interest[d[i].type];
		size_t len = strlen(d[i].name);
		uint64_t h = arn_cfg_hash(d[i].name, len);
		struct snode *x = smap_get(m, d[i].name, len, h);
		if (delta > 0) {
			if (!x && !(x = smap_add(m, d[i].name, len, h)))
				continue; /* ENOMEM: interest slightly wrong, logged below */
			if (x->count++ == 0)
				s->interest_dirty[d[i].type] = true;
		} else if (x && --x->count == 0) {
			smap_del(m, x);
			s->interest_dirty[d[i].type] = true;
		}
	}
}

static void deps_free(struct conv_dep *d, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(d[i].name);
	free(d);
}

size_t arn_config_referenced(struct arn_config_store *s, const char *type_url,
			     void (*fn)(void *ctx, const char *name), void *ctx)
{
	int t = arn_config_type_from_url(type_url, strlen(type_url));
	if (t < 0)
		return 0;
	struct smap *m = &s->interest[t];
	size_t n = 0;
	for (size_t i = 0; i < m->nb; i++)
		for (struct snode *x = m->b[i]; x; x = x->next, n++)
			if (fn)
				fn(ctx, x->key);
	return n;
}

void arn_config_set_interest_cb(struct arn_config_store *s,
				void (*fn)(void *ctx, const char *type_url), void *ctx)
{
	s->interest_cb = fn;
	s->interest_ctx = ctx;
}

static void interest_notify(struct arn_config_store *s)
{
	for (int t = 0; t < ARN_CFG_NTYPES; t++) {
		if (!s->interest_dirty[t])
			continue;
		s->interest_dirty[t] = false;
		if (s->interest_cb)
			s->interest_cb(s->interest_ctx, type_urls[t]);
	}
}

/* Is the resource @p d names present (active)? */
static bool dep_active(struct arn_config_store *s, const struct conv_dep *d)
{
	size_t len = strlen(d->name);
	struct snode *x = smap_get(&s->entries[d->type], d->name, len, arn_cfg_hash(d->name, len));
	return x && ((struct entry *)x->val)->active.obj;
}

/* Is everything @p v warms on present (active)? */
static bool deps_ready(struct arn_config_store *s, const struct version *v)
{
	for (size_t i = 0; i < v->ndeps; i++)
		if (v->deps[i].warm && !dep_active(s, &v->deps[i]))
			return false;
	return true;
}

/* The longest initial_fetch_timeout among the unsatisfied dependencies; 0
 * if one of them waits forever (initial_fetch_timeout: 0s). */
static uint64_t warm_deadline(struct arn_config_store *s, const struct version *v)
{
	uint32_t max = 0;
	for (size_t i = 0; i < v->ndeps; i++) {
		if (!v->deps[i].warm)
			continue;
		if (v->deps[i].timeout_ms == 0)
			return 0;
		if (v->deps[i].timeout_ms > max)
			max = v->deps[i].timeout_ms;
	}
	return now(s) + max;
}

/* ---- entries ------------------------------------------------------------------ */

static struct entry *entry_get(struct arn_config_store *s, enum arn_cfg_type t, const char *name,
			       size_t len)
{
	struct snode *x = smap_get(&s->entries[t], name, len, arn_cfg_hash(name, len));
	return x ? x->val : NULL;
}

static struct entry *entry_make(struct arn_config_store *s, enum arn_cfg_type t, const char *name,
				size_t len)
{
	uint64_t h = arn_cfg_hash(name, len);
	struct snode *x = smap_get(&s->entries[t], name, len, h);
	if (x)
		return x->val;
	struct entry *e = calloc(1, sizeof(*e));
	if (!e || !(x = smap_add(&s->entries[t], name, len, h))) {
		free(e);
		return NULL;
	}
	x->val = e;
	e->type = t;
	e->name = x->key;
	e->len = len;
	e->hash = h;
	return e;
}

/* Forget the last refused update of @p e (it was accepted since, or removed). */
static void clear_error(struct entry *e)
{
	free(e->last_error);
	free(e->error_version);
	free(e->error_bytes);
	e->last_error = e->error_version = e->error_bytes = NULL;
	e->error_len = 0;
}

static void entry_maybe_drop(struct arn_config_store *s, struct entry *e)
{
	if (e->active.obj || e->warming.obj || e->last_error)
		return;
	struct smap *m = &s->entries[e->type];
	struct snode *x = smap_get(m, e->name, e->len, e->hash);
	clear_error(e);
	free(e);
	smap_del(m, x);
}

static void version_clear(struct arn_config_store *s, struct entry *e, struct version *v)
{
	(void)e;
	deps_account(s, v->deps, v->ndeps, -1);
	deps_free(v->deps, v->ndeps);
	arn_cfg_obj_unref(v->obj);
	free(v->version);
	free(v->bytes);
	memset(v, 0, sizeof(*v));
}

static void warming_add(struct arn_config_store *s, struct entry *e)
{
	if (s->n_warming == s->cap_warming) {
		size_t cap = s->cap_warming ? 2 * s->cap_warming : 16;
		struct entry **w = realloc(s->warming, cap * sizeof(*w));
		if (!w)
			abort(); /* a few pointers; nothing sensible to do without them */
		s->warming = w;
		s->cap_warming = cap;
	}
	e->warm_idx = s->n_warming;
	s->warming[s->n_warming++] = e;
}

static void warming_remove(struct arn_config_store *s, struct entry *e)
{
	size_t i = e->warm_idx;
	s->warming[i] = s->warming[--s->n_warming];
	s->warming[i]->warm_idx = i;
}

/*
 * What the store keeps of a resource's bytes for /config_dump. A Secret's
 * bytes hold its private key and password (the EVP_PKEY made from them is
 * all the model needs), and a refused resource of any type may hold them
 * anywhere (an inline tls_certificates, refused by X13, is the likely
 * one): these are kept redacted (conv_redacted_copy()), or not at all if
 * they do not decode, since a dump could not show them either. Accepted
 * listeners, clusters, routes and endpoints have no field that holds key
 * material (conversion refuses every one) but filters' credentials
 * (holds_credentials), so their bytes are otherwise kept as they came.
 */
/* An accepted listener or route table with a filter configuration that
 * holds credentials (conv_cred_fields: api_key_auth's API keys,
 * basic_auth's users, ext_authz's context_extensions; Envoy's sensitive
 * fields), which the dump must not show. Looked for in the bytes (an
 * Any's type URL is there as it is), so a route taken unchanged from the
 * previous version, which conversion does not see again, counts too. */
static bool holds_credentials(enum arn_cfg_type t, const char *bytes, size_t len)
{
	if ((t != ARN_CFG_LISTENER && t != ARN_CFG_ROUTE) || !bytes)
		return false;
	for (size_t i = 0; i < n_conv_cred_fields; i++) {
		const char *u = conv_cred_fields[i].type_url_part;
		if (memmem(bytes, len, u, strlen(u)))
			return true;
	}
	return false;
}

static char *keep_bytes(enum arn_cfg_type t, const char *bytes, size_t len, bool refused,
			size_t *out_len)
{
	if (refused || t == ARN_CFG_SECRET || holds_credentials(t, bytes, len))
		return conv_redacted_copy(arn_proto_msgdef(arn_cfg_type_msg[t]), bytes, len,
					  !refused && t != ARN_CFG_SECRET, out_len);
	char *b = malloc(len ? len : 1);
	*out_len = b ? len : 0;
	if (b && len)
		memcpy(b, bytes, len);
	return b;
}

/* @p bytes/len: the refused resource (NULL for a refused removal). */
static void set_error(struct entry *e, const char *msg, const char *version, const char *bytes,
		      size_t len)
{
	free(e->last_error);
	free(e->error_version);
	free(e->error_bytes);
	e->last_error = strdup(msg);
	e->error_version = strdup(version ? version : "");
	e->error_bytes = NULL;
	e->error_len = 0;
	if (bytes && len)
		e->error_bytes = keep_bytes(e->type, bytes, len, true, &e->error_len);
	e->error_ms = wall_ms();
}

/* Make @p e's active version @p v (taking it over); in the next roots. */
static int make_active(struct arn_config_store *s, struct entry *e, struct version *v)
{
	int rc = arn_hamt_set(&s->next[e->type], v->obj, arn_cfg_obj_unref);
	if (rc)
		return rc;
	if (!e->active.obj)
		s->n_active[e->type]++;
	version_clear(s, e, &e->active);
	e->active = *v;
	memset(v, 0, sizeof(*v));
	return 0;
}

/* A warming @p v gave up at its deadline: count, once per type, the
 * subscriptions whose resources did not come (Envoy's init_fetch_timeout). */
static void count_fetch_timeouts(struct arn_config_store *s, const struct version *v)
{
	bool seen[ARN_CFG_NTYPES] = {false};
	for (size_t i = 0; i < v->ndeps; i++) {
		const struct conv_dep *d = &v->deps[i];
		if (!d->warm || d->type >= ARN_CFG_NTYPES || seen[d->type] || dep_active(s, d))
			continue;
		seen[d->type] = true;
		s->init_fetch_timeouts[d->type]++;
	}
}

static void promote(struct arn_config_store *s, struct entry *e, bool timeout)
{
	if (timeout)
		count_fetch_timeouts(s, &e->warming);
	warming_remove(s, e);
	if (make_active(s, e, &e->warming) != 0) {
		warming_add(s, e); /* ENOMEM: try again at the next poll */
		return;
	}
	if (timeout) {
		s->st.warming_timeouts++;
		ARN_WARN(CONFIG,
			 "%s '%s' stops warming after initial_fetch_timeout without what it "
			 "references; it takes traffic now",
			 type_names[e->type], e->name);
	} else {
		s->st.warming_completed++;
		ARN_DEBUG(CONFIG, "%s '%s' is warm", type_names[e->type], e->name);
	}
}

static void warming_check(struct arn_config_store *s, bool timeouts)
{
	uint64_t t = now(s);
	for (size_t i = 0; i < s->n_warming;) {
		struct entry *e = s->warming[i];
		if (deps_ready(s, &e->warming))
			promote(s, e, false);
		else if (timeouts && e->warm_deadline && t >= e->warm_deadline)
			promote(s, e, true);
		else
			i++;
		/* promote() moved the last entry into slot i: look at it next */
	}
}

/* ---- create / destroy ------------------------------------------------------------- */

static uint32_t bootstrap_fetch_ms(const struct arn_bootstrap *b, const char *src)
{
	uint32_t ms = ARN_CONFIG_DEFAULT_INITIAL_FETCH_MS;
	if (!b || !b->pb)
		return ms;
	struct pb bs = {(const upb_Message *)b->pb, arn_proto_msgdef(ARN_TYPE_BOOTSTRAP)};
	struct pb cs = pb_msg(pb_msg(bs, "dynamic_resources"), src);
	struct pb d = pb_msg(cs, "initial_fetch_timeout");
	if (d.m) {
		uint64_t v = (uint64_t)pb_i64(d, "seconds") * 1000u +
			     (uint64_t)pb_i32(d, "nanos") / 1000000u;
		ms = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
	}
	return ms;
}

struct arn_config_store *arn_config_create(const struct arn_bootstrap *b)
{
	if (arn_proto_init() != 0)
		return NULL;
	struct arn_config_store *s = calloc(1, sizeof(*s));
	if (!s)
		goto nomem;
	s->now = real_now;
	s->default_fetch_ms = ARN_CONFIG_DEFAULT_INITIAL_FETCH_MS;
	s->node_cluster = strdup(b && b->node_cluster ? b->node_cluster : "");
	if (!s->node_cluster)
		goto nomem;
	size_t sz = rte_rcu_qsbr_get_memsize(ARN_CONFIG_MAX_READERS);
	s->qsbr = aligned_alloc(RTE_CACHE_LINE_SIZE, (sz + RTE_CACHE_LINE_SIZE - 1) &
							 ~(size_t)(RTE_CACHE_LINE_SIZE - 1));
	s->gen = calloc(1, sizeof(*s->gen));
	if (!s->qsbr || !s->gen)
		goto nomem;
	if (rte_rcu_qsbr_init(s->qsbr, ARN_CONFIG_MAX_READERS) != 0)
		goto nomem;
	s->retired = arn_defer_create(s->qsbr);
	if (!s->retired)
		goto nomem;
	s->expect_initial = b && b->ads;
	uint64_t t = now(s);
	uint32_t cds = bootstrap_fetch_ms(b, "cds_config");
	uint32_t lds = bootstrap_fetch_ms(b, "lds_config");
	s->initial_deadline[ARN_CFG_CLUSTER] = cds ? t + cds : 0;
	s->initial_deadline[ARN_CFG_LISTENER] = lds ? t + lds : 0;
	return s;
nomem:
	ARN_ERR(CONFIG, "cannot create the configuration store: out of memory");
	if (s) {
		free(s->node_cluster);
		free(s->qsbr);
		free(s->gen);
		free(s);
	}
	return NULL;
}

void arn_config_destroy(struct arn_config_store *s)
{
	if (!s)
		return;
	if (global_store == s)
		global_store = NULL;
	arn_dns_destroy(s->dns); /* its pins go before the objects */
	arn_defer_destroy(s->retired);
	gen_free(s->gen);
	for (int t = 0; t < ARN_CFG_NTYPES; t++) {
		arn_hamt_unref(s->next[t], arn_cfg_obj_unref);
		struct smap *m = &s->entries[t];
		for (size_t i = 0; i < m->nb; i++)
			for (struct snode *x = m->b[i], *n; x; x = n) {
				n = x->next;
				struct entry *e = x->val;
				version_clear(s, e, &e->active);
				version_clear(s, e, &e->warming);
				clear_error(e);
				free(e);
				free(x->key);
				free(x);
			}
		free(m->b);
		struct smap *im = &s->interest[t];
		for (size_t i = 0; i < im->nb; i++)
			for (struct snode *x = im->b[i], *n; x; x = n) {
				n = x->next;
				free(x->key);
				free(x);
			}
		free(im->b);
	}
	arn_cfg_reclaim_drain(&s->reclaim);
	free(s->warming);
	free(s->node_cluster);
	for (size_t i = 0; i < s->n_upd; i++)
		free(s->upd[i].name);
	free(s->upd);
	free(s->qsbr);
	free(s);
}

/* ---- batches -------------------------------------------------------------------- */

struct conv_out {
	struct arn_cfg_obj *obj;
	struct conv_dep *deps;
	size_t ndeps;
	char *err; /* conversion failure */
	char *detail;
};

static int result_add2(struct arn_config_result *r, const char *name, const char *msg,
		       const char *detail)
{
	struct arn_config_error *e = realloc(r->errors, (r->n_errors + 1) * sizeof(*e));
	if (!e)
		return -ENOMEM;
	r->errors = e;
	e[r->n_errors].name = strdup(name);
	e[r->n_errors].message = strdup(msg);
	e[r->n_errors].detail = detail ? strdup(detail) : NULL;
	r->n_errors++;
	return 0;
}

static int result_add(struct arn_config_result *r, const char *name, const char *msg)
{
	return result_add2(r, name, msg, NULL);
}

void arn_config_result_free(struct arn_config_result *r)
{
	for (size_t i = 0; i < r->n_errors; i++) {
		free(r->errors[i].name);
		free(r->errors[i].message);
		free(r->errors[i].detail);
	}
	free(r->errors);
	memset(r, 0, sizeof(*r));
}

void arn_config_result_format(const struct arn_config_result *r, struct arn_sb *out)
{
	for (size_t i = 0; i < r->n_errors; i++) {
		arn_sb_puts(out, r->errors[i].message ? r->errors[i].message : "out of memory");
		arn_sb_putc(out, '\n');
	}
}

/* Decode and convert one resource (step 1). */
static void convert_one(struct arn_config_store *s, enum arn_cfg_type t,
			const struct arn_config_resource_in *in, upb_Arena *arena,
			struct conv_out *out)
{
	struct conv c;
	memset(&c, 0, sizeof(c));
	c.type = t;
	c.res = in->name ? in->name : "";
	c.arena = arena;
	c.default_fetch_ms = s->default_fetch_ms;
	c.node_cluster = s->node_cluster;
	c.reclaim = &s->reclaim;
	c.validate_only = s->validate_only;
	const upb_MessageDef *md = arn_proto_msgdef(arn_cfg_type_msg[t]);
	struct arn_sb derr = ARN_SB_INIT;
	char why[512];
	if (!conv_wire_check(in->bytes ? in->bytes : "", in->len, md, why, sizeof(why))) {
		arn_sb_printf(&c.msg, "%s '%s': cannot decode: %s", type_names[t], c.res, why);
		c.nerr++;
		goto done;
	}
	/* A RouteConfiguration takes unchanged routes over from the version
	 * in force and decodes only the others (issue 17). */
	const struct arn_cfg_route_table *prev = NULL;
	struct pb p = {NULL, md};
	if (t == ARN_CFG_ROUTE && in->name) {
		const struct entry *pe = entry_get(s, t, in->name, strlen(in->name));
		prev = pe ? (const struct arn_cfg_route_table *)pe->active.obj : NULL;
		if (!conv_route_shell(&c, in->bytes ? in->bytes : "", in->len, prev, &p))
			p.m = NULL;
	}
	bool shell = p.m != NULL;
whole:
	if (!p.m) {
		/* conv_wire_check walked the bytes (strictly) just above */
		p.m =
		    arn_proto_decode_walked(in->bytes ? in->bytes : "", in->len, md, arena, &derr);
		if (!p.m) {
			arn_sb_printf(&c.msg, "%s '%s': cannot decode: %s", type_names[t], c.res,
				      arn_sb_cstr(&derr));
			c.nerr++;
			arn_sb_free(&derr);
			goto done;
		}
		arn_sb_free(&derr);
	}
	upb_StringView inner = pb_str(p, t == ARN_CFG_CLA ? "cluster_name" : "name");
	if (!in->name || inner.size != strlen(in->name) ||
	    memcmp(inner.data, in->name, inner.size)) {
		conv_err(&c, t == ARN_CFG_CLA ? "cluster_name" : "name",
			 "'%.*s' differs from the resource's name in the response", (int)inner.size,
			 inner.data);
		goto done;
	}
	if (t == ARN_CFG_ROUTE) {
		struct conv_route_src rs = {prev, in->bytes ? in->bytes : "", in->len, shell,
					    false};
		out->obj = arn_conv_route_table(&c, p, false, &rs);
		if (!out->obj && rs.fallback) {
			/* a changed route does not decode alone: the whole
			 * table says why, as without a version in force */
			p.m = NULL;
			shell = false;
			goto whole;
		}
		s->st.routes_converted += c.routes_converted;
		s->st.routes_reused += c.routes_reused;
	} else {
		c.pool = arn_pool_new(t == ARN_CFG_CLUSTER || t == ARN_CFG_CLA ? 512 : 2048);
		if (!c.pool) {
			conv_err(&c, "", "out of memory");
			goto done;
		}
		switch (t) {
		case ARN_CFG_LISTENER:
			out->obj = arn_conv_listener(&c, p);
			break;
		case ARN_CFG_CLUSTER:
			out->obj = arn_conv_cluster(&c, p);
			break;
		case ARN_CFG_CLA:
			out->obj = arn_conv_endpoints(&c, p);
			break;
		case ARN_CFG_TOOLSET:
			out->obj = arn_conv_toolset(&c, p);
			break;
		default:
			out->obj = arn_conv_secret(&c, p);
			break;
		}
		if (!out->obj && !c.nerr)
			conv_err(&c, "", "out of memory");
		if (c.nerr || arn_pool_failed(c.pool)) {
			if (!c.nerr)
				conv_err(&c, "", "out of memory");
			arn_pool_free(c.pool); /* frees the object too */
			out->obj = NULL;
		}
	}
done:
	conv_deps_index_free(&c);
	if (c.nerr) {
		out->err = arn_sb_steal(&c.msg);
		out->detail = arn_sb_steal(&c.detail);
		deps_free(c.deps, c.ndeps);
		if (out->obj)
			arn_cfg_obj_unref(out->obj);
		out->obj = NULL;
	} else {
		arn_sb_free(&c.msg);
		arn_sb_free(&c.detail);
		out->deps = c.deps;
		out->ndeps = c.ndeps;
	}
}

/* ---- X16: TLS contexts that would not build ------------------------------------------ */

static arn_config_tls_check_fn tls_check;

void arn_config_set_tls_check(arn_config_tls_check_fn fn)
{
	tls_check = fn;
}

/* The Secret named @p r: @p over when it is the one being applied, else
 * the one in force. NULL: not there (yet). */
static const struct arn_cfg_secret *tls_secret(struct arn_config_store *s,
					       const struct arn_cfg_ref *r,
					       const struct entry *over_e,
					       const struct arn_cfg_obj *over)
{
	if (!r->len)
		return NULL;
	struct entry *e = entry_get(s, ARN_CFG_SECRET, r->name, r->len);
	if (e && e == over_e)
		return (const void *)over;
	return e ? (const void *)e->active.obj : NULL;
}

static bool tls_names(const struct arn_cfg_tls *t, const struct entry *sec)
{
	if (!sec)
		return true;
	for (size_t i = 0; i < t->n_cert_secrets; i++)
		if (t->cert_secrets[i].len == sec->len &&
		    memcmp(t->cert_secrets[i].name, sec->name, sec->len) == 0)
			return true;
	const struct arn_cfg_ref *r[2] = {&t->validation_secret, &t->ticket_keys_secret};
	for (int i = 0; i < 2; i++)
		if (r[i]->len == sec->len && memcmp(r[i]->name, sec->name, sec->len) == 0)
			return true;
	return false;
}

/*
 * Build @p t's context (of @p owner, @p server side) with the Secrets in
 * force, @p over standing for Secret entry @p over_e when not NULL. Only
 * contexts naming @p over_e when it is given. @return 0 (built, or not
 * checkable yet), -EINVAL with the reason in @p err.
 */
static int tls_try(struct arn_config_store *s, const struct arn_cfg_tls *t, bool server,
		   const void *owner, const struct entry *over_e, const struct arn_cfg_obj *over,
		   char *err, size_t errlen)
{
	if (!tls_check || !t || !tls_names(t, over_e))
		return 0;
	enum { MAXC = 8 };
	const struct arn_cfg_secret *certs[MAXC];
	if (t->n_cert_secrets > MAXC)
		return 0; /* the runtime refuses it by name */
	for (size_t i = 0; i < t->n_cert_secrets; i++)
		if (!(certs[i] = tls_secret(s, &t->cert_secrets[i], over_e, over)))
			return 0;
	const struct arn_cfg_secret *v = tls_secret(s, &t->validation_secret, over_e, over);
	const struct arn_cfg_secret *k =
	    server ? tls_secret(s, &t->ticket_keys_secret, over_e, over) : NULL;
	if ((t->validation_secret.len && !v) || (server && t->ticket_keys_secret.len && !k))
		return 0;
	return tls_check(t, server, owner, certs, t->n_cert_secrets, v, k, err, errlen) < 0
		   ? -EINVAL
		   : 0;
}

/* The first TLS context of listener @p l that would not build, into @p buf
 * (prefixed with @p who). @return true when one failed. */
static bool listener_tls_error(struct arn_config_store *s, const struct arn_cfg_listener *l,
			       const struct entry *over_e, const struct arn_cfg_obj *over,
			       const char *who, char *buf, size_t cap)
{
	char err[320];
	for (size_t i = 0; i <= l->n_chains; i++) {
		const struct arn_cfg_filter_chain *fc =
		    i < l->n_chains ? &l->chains[i] : l->default_chain;
		if (!fc || !fc->tls)
			continue;
		if (tls_try(s, fc->tls, true, l, over_e, over, err, sizeof(err)) < 0) {
			snprintf(buf, cap, "%s%s '%s': transport_socket: %s", who,
				 i < l->n_chains ? "filter_chains" : "default_filter_chain",
				 fc->name ? fc->name : "", err);
			return true;
		}
	}
	return false;
}

static bool cluster_tls_error(struct arn_config_store *s, const struct arn_cfg_cluster *c,
			      const struct entry *over_e, const struct arn_cfg_obj *over,
			      const char *who, char *buf, size_t cap)
{
	char err[320];
	if (tls_try(s, c->upstream_tls, false, c, over_e, over, err, sizeof(err)) < 0) {
		snprintf(buf, cap, "%stransport_socket: %s", who, err);
		return true;
	}
	for (size_t i = 0; i < c->n_ts_matches; i++)
		if (tls_try(s, c->ts_matches[i].tls, false, c, over_e, over, err, sizeof(err)) <
		    0) {
			snprintf(buf, cap,
				 "%stransport_socket_matches[%zu] '%s': transport_socket: %s", who,
				 i, c->ts_matches[i].name, err);
			return true;
		}
	return false;
}

/* ---- the batch's index (struct bidx) ----------------------------------------- */

static size_t bidx_at(const struct bidx *x, uint64_t key)
{
	/* Fibonacci hashing: an address and port key differs in its high bits */
	return x->cap ? (size_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & (x->cap - 1) : 0;
}

static void bidx_free(struct bidx *x)
{
	free(x->v);
	*x = (struct bidx){0};
}

static int bidx_add(struct bidx *x, uint64_t key, struct entry *e)
{
	if (2 * (x->n + 1) > x->cap) {
		size_t cap = x->cap ? 2 * x->cap : 64;
		struct bidx y = {calloc(cap, sizeof(struct bslot)), cap, 0, x->on};
		if (!y.v)
			return -ENOMEM;
		for (size_t i = 0; i < x->cap; i++)
			if (x->v[i].e)
				bidx_add(&y, x->v[i].key, x->v[i].e); /* fits: no allocation */
		free(x->v);
		*x = y;
	}
	size_t i = bidx_at(x, key);
	while (x->v[i].e)
		i = (i + 1) & (x->cap - 1);
	x->v[i] = (struct bslot){key, e};
	x->n++;
	return 0;
}

/* The next entry under @p key, *@p i starting at bidx_at(); NULL: no more. */
static struct entry *bidx_next(const struct bidx *x, uint64_t key, size_t *i)
{
	while (x->cap && x->v[*i].e) {
		const struct bslot *b = &x->v[*i];
		*i = (*i + 1) & (x->cap - 1);
		if (b->key == key)
			return b->e;
	}
	return NULL;
}

static uint64_t laddr_key(const struct arn_cfg_listener *l)
{
	return (uint64_t)l->addr << 16 | l->port;
}

/* Listener entry @p e under the addresses of its versions. */
static int bidx_listener(struct bidx *x, struct entry *e)
{
	const struct arn_cfg_listener *a = (const void *)e->active.obj;
	const struct arn_cfg_listener *w = (const void *)e->warming.obj;
	if ((a && bidx_add(x, laddr_key(a), e)) || (w && bidx_add(x, laddr_key(w), e)))
		return -ENOMEM;
	return 0;
}

/* Listener or cluster entry @p u under the Secrets its versions name. */
static int bidx_secret_user(struct bidx *x, struct entry *u)
{
	const struct version *v[2] = {&u->active, &u->warming};
	for (int k = 0; k < 2; k++)
		for (size_t i = 0; i < v[k]->ndeps; i++) {
			const struct conv_dep *d = &v[k]->deps[i];
			if (d->type == ARN_CFG_SECRET &&
			    bidx_add(x, arn_cfg_hash(d->name, strlen(d->name)), u))
				return -ENOMEM;
		}
	return 0;
}

/* Index what a batch of @p t looks up (listeners by address for LDS, the
 * users of Secrets for SDS). Without memory the checks walk, as before. */
static void bidx_build(struct arn_config_store *s, enum arn_cfg_type t)
{
	static const enum arn_cfg_type users[2] = {ARN_CFG_LISTENER, ARN_CFG_CLUSTER};
	bidx_free(&s->bidx);
	if (t != ARN_CFG_LISTENER && t != ARN_CFG_SECRET)
		return;
	for (int k = 0; k < (t == ARN_CFG_LISTENER ? 1 : 2); k++) {
		const struct smap *m = &s->entries[users[k]];
		for (size_t i = 0; i < m->nb; i++)
			for (struct snode *x = m->b[i]; x; x = x->next)
				if ((t == ARN_CFG_LISTENER
					 ? bidx_listener(&s->bidx, x->val)
					 : bidx_secret_user(&s->bidx, x->val)) != 0) {
					bidx_free(&s->bidx);
					return;
				}
	}
	s->bidx.on = true;
}

/* A Secret being applied: every listener and cluster in force that names
 * it must still build its TLS context with it. */
static bool secret_user_error(struct arn_config_store *s, struct entry *e,
			      const struct arn_cfg_obj *o, struct entry *u, char *buf, size_t cap)
{
	const struct arn_cfg_obj *uo = u->active.obj;
	s->st.check_visits++;
	if (!uo)
		return false;
	bool listener = u->type == ARN_CFG_LISTENER;
	char who[256];
	snprintf(who, sizeof(who), "Secret '%s': for %s '%s': ", e->name,
		 listener ? "listener" : "cluster", u->name);
	return listener ? listener_tls_error(s, (const void *)uo, e, o, who, buf, cap)
			: cluster_tls_error(s, (const void *)uo, e, o, who, buf, cap);
}

static bool secret_tls_error(struct arn_config_store *s, struct entry *e,
			     const struct arn_cfg_obj *o, char *buf, size_t cap)
{
	if (s->bidx.on) {
		size_t i = bidx_at(&s->bidx, e->hash);
		for (struct entry *u; (u = bidx_next(&s->bidx, e->hash, &i)) != NULL;)
			if (secret_user_error(s, e, o, u, buf, cap))
				return true;
		return false;
	}
	static const enum arn_cfg_type types[2] = {ARN_CFG_LISTENER, ARN_CFG_CLUSTER};
	for (int k = 0; k < 2; k++) {
		struct smap *m = &s->entries[types[k]];
		for (size_t i = 0; i < m->nb; i++)
			for (struct snode *x = m->b[i]; x; x = x->next)
				if (secret_user_error(s, e, o, x->val, buf, cap))
					return true;
	}
	return false;
}

/* Does listener entry @p o2, another than @p e, hold @p l's address? */
static bool holds_addr(const struct entry *o2, const struct entry *e,
		       const struct arn_cfg_listener *l)
{
	const struct arn_cfg_listener *a = (const void *)o2->active.obj;
	const struct arn_cfg_listener *w = (const void *)o2->warming.obj;
	return o2 != e && ((a && a->addr == l->addr && a->port == l->port) ||
			   (w && w->addr == l->addr && w->port == l->port));
}

/* The listener entry other than @p e holding @p l's address, or NULL. */
static struct entry *addr_holder(struct arn_config_store *s, const struct entry *e,
				 const struct arn_cfg_listener *l)
{
	if (s->bidx.on) {
		uint64_t key = laddr_key(l);
		size_t i = bidx_at(&s->bidx, key);
		for (struct entry *c; (c = bidx_next(&s->bidx, key, &i)) != NULL;) {
			s->st.check_visits++;
			if (holds_addr(c, e, l))
				return c;
		}
		return NULL;
	}
	struct smap *m = &s->entries[ARN_CFG_LISTENER];
	for (size_t i = 0; i < m->nb; i++)
		for (struct snode *x = m->b[i]; x; x = x->next) {
			s->st.check_visits++;
			if (holds_addr(x->val, e, l))
				return x->val;
		}
	return NULL;
}

/* X16 checks that need the rest of the configuration. NULL: fine. */
static char *application_error(struct arn_config_store *s, struct entry *e,
			       const struct arn_cfg_obj *o, unsigned flags)
{
	char buf[768];
	if (e->is_static && !(flags & ARN_CONFIG_APPLY_STATIC)) {
		snprintf(buf, sizeof(buf),
			 "%s '%s': defined in static_resources; xDS cannot change or remove it",
			 type_names[e->type], e->name);
		return strdup(buf);
	}
	if (e->dns_owned && !(flags & ARN_CONFIG_APPLY_DNS)) {
		snprintf(buf, sizeof(buf),
			 "%s '%s': the endpoints of a STRICT_DNS or LOGICAL_DNS cluster come from "
			 "its DNS resolution; xDS cannot change or remove them",
			 type_names[e->type], e->name);
		return strdup(buf);
	}
	if (e->type == ARN_CFG_LISTENER) {
		const struct arn_cfg_listener *l = (const void *)o;
		struct entry *o2 = addr_holder(s, e, l);
		if (o2) {
			snprintf(buf, sizeof(buf),
				 "Listener '%s': address: %u.%u.%u.%u:%u is already used by "
				 "listener '%s'",
				 e->name, l->addr >> 24, (l->addr >> 16) & 255,
				 (l->addr >> 8) & 255, l->addr & 255, l->port, o2->name);
			return strdup(buf);
		}
	}
	if (o && tls_check) {
		char who[256];
		snprintf(who, sizeof(who), "%s '%s': ", type_names[e->type], e->name);
		bool bad =
		    e->type == ARN_CFG_LISTENER
			? listener_tls_error(s, (const void *)o, NULL, NULL, who, buf, sizeof(buf))
		    : e->type == ARN_CFG_CLUSTER
			? cluster_tls_error(s, (const void *)o, NULL, NULL, who, buf, sizeof(buf))
		    : e->type == ARN_CFG_SECRET ? secret_tls_error(s, e, o, buf, sizeof(buf))
						: false;
		if (bad)
			return strdup(buf);
	}
	return NULL;
}

static void apply_update(struct arn_config_store *s, struct entry *e, struct conv_out *co,
			 const struct arn_config_resource_in *in, unsigned flags,
			 struct arn_config_result *r)
{
	char *err = application_error(s, e, co->obj, flags);
	if (err) {
		set_error(e, err, in->version, in->bytes, in->len);
		result_add(r, e->name, err);
		free(err);
		s->st.resources_rejected++;
		arn_cfg_obj_unref(co->obj);
		deps_free(co->deps, co->ndeps);
		return;
	}
	struct version v = {
	    .obj = co->obj,
	    .version = strdup(in->version ? in->version : ""),
	    .updated_ms = wall_ms(),
	    .deps = co->deps,
	    .ndeps = co->ndeps,
	};
	v.bytes = keep_bytes(e->type, in->bytes, in->len, false, &v.len);
	deps_account(s, v.deps, v.ndeps, +1);
	if (flags & ARN_CONFIG_APPLY_STATIC)
		e->is_static = true;
	if (flags & ARN_CONFIG_APPLY_DNS)
		e->dns_owned = true;
	s->st.resources_updated++;
	clear_error(e);
	if (deps_ready(s, &v)) {
		if (e->warming.obj) {
			warming_remove(s, e);
			version_clear(s, e, &e->warming);
		}
		if (make_active(s, e, &v) != 0) {
			result_add(r, e->name, "out of memory");
			version_clear(s, e, &v);
		}
		return;
	}
	/* G6: warm until what it references arrives; an active previous version
	 * keeps serving meanwhile. */
	if (e->warming.obj)
		version_clear(s, e, &e->warming);
	else
		warming_add(s, e);
	e->warming = v;
	e->warm_deadline = warm_deadline(s, &v);
	e->warm_initial = !s->ready;
	s->st.warming_started++;
	ARN_DEBUG(CONFIG, "%s '%s' warms until what it references arrives", type_names[e->type],
		  e->name);
}

/* Does version @p v name the resource @p e among its dependencies? */
static bool version_names(const struct version *v, const struct entry *e)
{
	for (size_t i = 0; i < v->ndeps; i++)
		if (v->deps[i].type == e->type && strlen(v->deps[i].name) == e->len &&
		    memcmp(v->deps[i].name, e->name, e->len) == 0)
			return true;
	return false;
}

/* The first listener or cluster (active or warming) whose TLS context
 * names Secret @p e, or NULL (interest[] counts them: none, no walk). */
static struct entry *secret_user(struct arn_config_store *s, const struct entry *e)
{
	if (!smap_get(&s->interest[ARN_CFG_SECRET], e->name, e->len, e->hash))
		return NULL;
	if (s->bidx.on) {
		size_t i = bidx_at(&s->bidx, e->hash);
		for (struct entry *u; (u = bidx_next(&s->bidx, e->hash, &i)) != NULL;) {
			s->st.check_visits++;
			if (version_names(&u->active, e) || version_names(&u->warming, e))
				return u;
		}
		return NULL;
	}
	static const enum arn_cfg_type types[2] = {ARN_CFG_LISTENER, ARN_CFG_CLUSTER};
	for (int k = 0; k < 2; k++) {
		struct smap *m = &s->entries[types[k]];
		for (size_t i = 0; i < m->nb; i++)
			for (struct snode *x = m->b[i]; x; x = x->next) {
				struct entry *u = x->val;
				s->st.check_visits++;
				if (version_names(&u->active, e) || version_names(&u->warming, e))
					return u;
			}
	}
	return NULL;
}

static void apply_remove(struct arn_config_store *s, enum arn_cfg_type t, const char *name,
			 unsigned flags, struct arn_config_result *r)
{
	struct entry *e = entry_get(s, t, name, strlen(name));
	if (!e)
		return; /* G3: removing what is not there changes nothing */
	if (!e->active.obj && !e->warming.obj) {
		/* Only a refusal is known of it: the control plane withdrew
		 * what was refused, so the error (and the refused bytes) go,
		 * or they would stay in /config_dump for ever, each refused
		 * name adding to the memory held. */
		clear_error(e);
		entry_maybe_drop(s, e);
		return;
	}
	if ((e->is_static && !(flags & ARN_CONFIG_APPLY_STATIC)) ||
	    (e->dns_owned && !(flags & ARN_CONFIG_APPLY_DNS))) {
		char *err = application_error(s, e, NULL, flags);
		set_error(e, err, "", NULL, 0);
		result_add(r, name, err);
		free(err);
		s->st.resources_rejected++;
		return;
	}
	/* G7: a Secret a listener or cluster in force uses stays, or their
	 * TLS contexts could not be built (connections refused, upstream
	 * connections failing). Envoy ignores such a removal ("SDS ... should
	 * never be removed except by the modification of the referenced
	 * cluster/listener"); Arion refuses it (X16) so that the client keeps
	 * reporting it held (D5), and says who uses it. */
	struct entry *u = t == ARN_CFG_SECRET ? secret_user(s, e) : NULL;
	if (u) {
		char buf[768];
		snprintf(buf, sizeof(buf),
			 "Secret '%s': still used by %s '%s'; not removed (change or remove "
			 "what uses it first)",
			 e->name, u->type == ARN_CFG_LISTENER ? "listener" : "cluster", u->name);
		set_error(e, buf, "", NULL, 0);
		result_add(r, name, buf);
		s->st.resources_rejected++;
		return;
	}
	if (e->active.obj) {
		if (arn_hamt_del(&s->next[t], e->name, e->len, e->hash, arn_cfg_obj_unref) ==
		    -ENOMEM) {
			result_add(r, name, "out of memory");
			return;
		}
		version_clear(s, e, &e->active);
		s->n_active[t]--;
	}
	if (e->warming.obj) {
		warming_remove(s, e);
		version_clear(s, e, &e->warming);
	}
	s->st.resources_removed++;
	e->dns_owned = false;
	if (t == ARN_CFG_CLUSTER && s->dns)
		arn_dns_track(s->dns, e->name, NULL, now(s));
	clear_error(e);
	entry_maybe_drop(s, e);
}

/*
 * X4: a resource of an on-demand type (TDS) that nothing references any
 * more is forgotten. The xDS client unsubscribes from it, so the server
 * stops sending its updates and the client stops reporting it held; a
 * version kept here could only go stale. A later reference subscribes
 * again and the server sends it anew. Runs while next roots are open.
 */
static void drop_unreferenced(struct arn_config_store *s)
{
	const enum arn_cfg_type t = ARN_CFG_TOOLSET;
	struct smap *m = &s->entries[t];
	if (m->n == 0)
		return;
	struct entry **v = malloc(m->n * sizeof(*v));
	if (v == NULL)
		return; /* kept until the next batch tries again */
	size_t n = 0;
	for (size_t i = 0; i < m->nb; i++)
		for (struct snode *x = m->b[i]; x; x = x->next) {
			struct entry *e = x->val;
			if (smap_get(&s->interest[t], e->name, e->len, e->hash) == NULL)
				v[n++] = e;
		}
	for (size_t i = 0; i < n; i++) {
		struct entry *e = v[i];
		if (e->active.obj) {
			if (arn_hamt_del(&s->next[t], e->name, e->len, e->hash,
					 arn_cfg_obj_unref) == -ENOMEM)
				continue; /* kept; tried again with the next batch */
			version_clear(s, e, &e->active);
			s->n_active[t]--;
		}
		if (e->warming.obj) {
			warming_remove(s, e);
			version_clear(s, e, &e->warming);
		}
		ARN_INFO(CONFIG, "%s '%s': nothing references it any more; forgotten (X4)",
			 type_names[t], e->name);
		s->st.toolsets_dropped++;
		clear_error(e);
		entry_maybe_drop(s, e);
	}
	free(v);
}
/* The resolver's endpoints for DNS cluster @p name (dns.c's
 * arn_dns_publish_fn): applied, or removed, as an EDS update is. */
static int dns_publish(void *ctx, const char *name, const char *ver, const char *bytes, size_t len,
		       struct arn_sb *why)
{
	struct arn_config_store *s = ctx;
	struct arn_config_result r;
	struct arn_config_resource_in in = {name, ver, bytes, len};
	const char *rm[1] = {name};
	int rc =
	    bytes ? arn_config_apply(s, ARN_TYPE_URL_CLA, &in, 1, NULL, 0, ARN_CONFIG_APPLY_DNS, &r)
		  : arn_config_apply(s, ARN_TYPE_URL_CLA, NULL, 0, rm, 1, ARN_CONFIG_APPLY_DNS, &r);
	if (rc != 0)
		return rc;
	if (!r.accepted || r.n_errors) {
		arn_config_result_format(&r, why);
		rc = -EINVAL;
	}
	arn_config_result_free(&r);
	return rc;
}

static void update_ready(struct arn_config_store *s);

void arn_config_set_cluster_update_cb(struct arn_config_store *s,
				      void (*fn)(void *ctx, const char *cluster,
						 enum arn_config_cluster_update u),
				      void *ctx)
{
	s->cluster_update_cb = fn;
	s->cluster_update_ctx = ctx;
}

/* Updates waiting for their cluster to warm: a control plane that keeps
 * refusing updates of a warming cluster does not grow the queue past it. */
#define ARN_CONFIG_MAX_QUEUED_UPDATES 4096

/* Queue @p u for cluster @p name (dropped past the bound or when out of
 * memory: it is a counter). */
static void cluster_update(void *ctx, const char *name, enum arn_config_cluster_update u)
{
	struct arn_config_store *s = ctx;
	if (!s->cluster_update_cb || s->n_upd >= ARN_CONFIG_MAX_QUEUED_UPDATES)
		return;
	if (s->n_upd == s->cap_upd) {
		size_t cap = s->cap_upd ? 2 * s->cap_upd : 16;
		struct cl_upd *v = realloc(s->upd, cap * sizeof(*v));
		if (!v)
			return;
		s->upd = v;
		s->cap_upd = cap;
	}
	char *n = strdup(name);
	if (!n)
		return;
	s->upd[s->n_upd++] = (struct cl_upd){n, u};
}

/* The queued updates to the callback, once their generation is out: a
 * cluster still warming keeps its own until it is in force (its first
 * resolution's attempt, say), one no Cluster names is dropped. */
static void cluster_updates_flush(struct arn_config_store *s)
{
	size_t kept = 0;
	for (size_t i = 0; i < s->n_upd; i++) {
		const char *n = s->upd[i].name;
		struct entry *e = entry_get(s, ARN_CFG_CLUSTER, n, strlen(n));
		if (e && !e->active.obj && e->warming.obj) {
			s->upd[kept++] = s->upd[i];
			continue;
		}
		if (e && e->active.obj && s->cluster_update_cb)
			s->cluster_update_cb(s->cluster_update_ctx, n, s->upd[i].u);
		free(s->upd[i].name);
	}
	s->n_upd = kept;
}

/* An EDS ClusterLoadAssignment's update (not the resolver's, which tells
 * its own, nor a static one): @p name's cluster counts it. */
static void eds_update(struct arn_config_store *s, int t, unsigned flags, const char *name,
		       enum arn_config_cluster_update u)
{
	if (t == ARN_CFG_CLA && !(flags & (ARN_CONFIG_APPLY_DNS | ARN_CONFIG_APPLY_STATIC)) && name)
		cluster_update(s, name, u);
}

/* A cluster's newest version (warming, else active) to the resolver:
 * a DNS cluster resolves while it warms, which ends when it answers. */
static void dns_track(struct arn_config_store *s, struct entry *e)
{
	const struct arn_cfg_cluster *cl =
	    (const void *)(e->warming.obj ? e->warming.obj : e->active.obj);
	if (!s->dns && (!cl || !cl->dns))
		return;
	if (!s->dns && !(s->dns = arn_dns_create(dns_publish, cluster_update, s, &s->st))) {
		ARN_ERR(CONFIG, "Cluster '%s': out of memory for DNS resolution", e->name);
		return;
	}
	arn_dns_track(s->dns, e->name, cl, now(s));
}

int arn_config_apply(struct arn_config_store *s, const char *type_url,
		     const struct arn_config_resource_in *res, size_t n_res,
		     const char *const *removed, size_t n_removed, unsigned flags,
		     struct arn_config_result *out)
{
	memset(out, 0, sizeof(*out));
	int t = type_url ? arn_config_type_from_url(type_url, strlen(type_url)) : -EINVAL;
	if (t < 0)
		return -EINVAL;
	arn_cfg_reclaim_drain(&s->reclaim);
	/* decoded Secrets (key, password), and inline TLS material of
	 * listeners and clusters, are in it: cleansed when freed. Routes and
	 * endpoints hold no key, and cleansing a 10,000-route table's decode
	 * costs as much as converting a tenth of it. */
	upb_Arena *arena =
	    (t == ARN_CFG_ROUTE || t == ARN_CFG_CLA) ? upb_Arena_New() : conv_wipe_arena();
	struct conv_out *co = calloc(n_res ? n_res : 1, sizeof(*co));
	if (!arena || !co) {
		if (arena)
			upb_Arena_Free(arena);
		free(co);
		return -ENOMEM;
	}
	/* Step 1: decode and convert everything (X15). */
	size_t nbad = 0;
	for (size_t i = 0; i < n_res; i++) {
		eds_update(s, t, flags, res[i].name, ARN_CONFIG_UPDATE_ATTEMPT);
		convert_one(s, t, &res[i], arena, &co[i]);
		nbad += co[i].err != NULL;
	}
	upb_Arena_Free(arena);
	if (nbad) {
		for (size_t i = 0; i < n_res; i++) {
			eds_update(s, t, flags, res[i].name, ARN_CONFIG_UPDATE_REJECTED);
			if (co[i].err) {
				const char *nm = res[i].name ? res[i].name : "";
				result_add2(out, nm, co[i].err, co[i].detail);
				struct entry *e = entry_make(s, t, nm, strlen(nm));
				if (e)
					set_error(e, co[i].err, res[i].version, res[i].bytes,
						  res[i].len);
				free(co[i].err);
				free(co[i].detail);
			} else {
				arn_cfg_obj_unref(co[i].obj);
				deps_free(co[i].deps, co[i].ndeps);
			}
		}
		free(co);
		s->st.batches_refused++;
		s->st.resources_rejected += nbad;
		out->accepted = false;
		if (!s->validate_only)
			ARN_WARN(CONFIG,
				 "%s batch refused (X15): %zu of %zu resources failed conversion",
				 type_names[t], nbad, n_res);
		cluster_updates_flush(s);
		return 0;
	}
	/* Step 2: apply one by one (X16). Removals first, as Envoy's LDS does:
	 * a listener that replaces a removed one on the same address must not
	 * be refused as a conflict with it (for the other types the order
	 * changes nothing: D2 keeps a name out of both lists). */
	out->accepted = true;
	next_begin(s);
	/* SDS removals ask who uses a Secret; LDS's index is built after its
	 * removals, which free the entries they drop. */
	if (t == ARN_CFG_SECRET)
		bidx_build(s, (enum arn_cfg_type)t);
	for (size_t i = 0; i < n_removed; i++) {
		size_t errs = out->n_errors;
		apply_remove(s, t, removed[i], flags, out);
		if (out->n_errors == errs)
			eds_update(s, t, flags, removed[i], ARN_CONFIG_UPDATE_EMPTY);
	}
	if (t == ARN_CFG_LISTENER)
		bidx_build(s, (enum arn_cfg_type)t);
	for (size_t i = 0; i < n_res; i++) {
		struct entry *e = entry_make(s, t, res[i].name, strlen(res[i].name));
		if (!e) {
			result_add(out, res[i].name, "out of memory");
			arn_cfg_obj_unref(co[i].obj);
			deps_free(co[i].deps, co[i].ndeps);
			continue;
		}
		size_t errs = out->n_errors;
		apply_update(s, e, &co[i], &res[i], flags, out);
		eds_update(s, t, flags, res[i].name,
			   out->n_errors == errs ? ARN_CONFIG_UPDATE_SUCCESS
						 : ARN_CONFIG_UPDATE_REJECTED);
		if (t == ARN_CFG_CLUSTER)
			dns_track(s, e);
		/* the next listeners of the batch must see this one's address */
		if (t == ARN_CFG_LISTENER && s->bidx.on && bidx_listener(&s->bidx, e) != 0)
			bidx_free(&s->bidx);
	}
	bidx_free(&s->bidx);
	free(co);
	warming_check(s, false);
	drop_unreferenced(s);
	int rc = publish(s, &out->token);
	if (rc) {
		/* the next roots are dropped; the store's entries are ahead of
		 * what workers see until the next successful publish */
		for (int k = 0; k < ARN_CFG_NTYPES; k++) {
			arn_hamt_unref(s->next[k], arn_cfg_obj_unref);
			s->next[k] = NULL;
		}
		result_add(out, "", "out of memory while publishing");
	}
	out->published = out->token != 0;
	s->st.batches_accepted++;
	update_ready(s);
	interest_notify(s);
	cluster_updates_flush(s);
	return 0;
}

/* ---- static resources --------------------------------------------------------------- */

/* One line per problem: FILE:LINE:COL: envoy_bootstrap.static_resources.
 * <field>[i].<path>: <Type> '<name>': <reason>, the place found in the YAML
 * as deep along the path as it goes. */
static void static_error(const struct arn_bootstrap *b, const char *field, char **names, size_t n,
			 const struct arn_config_error *e, struct arn_sb *err)
{
	size_t idx = 0;
	while (idx < n && strcmp(names[idx], e->name) != 0)
		idx++;
	const char *detail = e->detail;
	const char *q = strstr(e->message, "': ");
	size_t prefix = q ? (size_t)(q - e->message) + 2 : 0; /* "Type 'name':" */
	if (!detail || !*detail) {
		char base[256];
		size_t line = 0, col = 0;
		snprintf(base, sizeof(base), "envoy_bootstrap.static_resources.%s[%zu]", field,
			 idx);
		if (b->yaml && arn_bootstrap_where(b, base, &line, &col) == 0)
			arn_sb_printf(err, "%s:%zu:%zu: ", b->file, line, col);
		arn_sb_printf(err, "%s: %s\n", base, e->message);
		return;
	}
	for (const char *l = detail; *l;) {
		const char *tab = strchr(l, '\t');
		const char *nl = strchr(l, '\n');
		if (!tab || !nl || tab > nl)
			break;
		char path[1400];
		size_t line = 0, col = 0;
		snprintf(path, sizeof(path), "envoy_bootstrap.static_resources.%s[%zu]%s%.*s",
			 field, idx, tab > l ? "." : "", (int)(tab - l), l);
		if (b->yaml && arn_bootstrap_where(b, path, &line, &col) == 0)
			arn_sb_printf(err, "%s:%zu:%zu: ", b->file, line, col);
		arn_sb_printf(err, "%s: %.*s %.*s\n", path, (int)prefix, e->message,
			      (int)(nl - tab - 1), tab + 1);
		l = nl + 1;
	}
}

static int apply_static_list(struct arn_config_store *s, const struct arn_bootstrap *b,
			     enum arn_cfg_type t, const char *field, struct arn_sb *err)
{
	struct pb bs = {(const upb_Message *)b->pb, arn_proto_msgdef(ARN_TYPE_BOOTSTRAP)};
	struct pb sr = pb_msg(bs, "static_resources");
	size_t n = pb_len(sr, field);
	if (!n)
		return 0;
	/* the resources re-encoded, secrets' keys among them: cleansed on free */
	upb_Arena *arena = conv_wipe_arena();
	struct arn_config_resource_in *in = calloc(n, sizeof(*in));
	char **names = calloc(n, sizeof(*names));
	int rc = 0;
	if (!arena || !in || !names) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct pb r = pb_at(sr, field, i);
		upb_StringView nm = pb_str(r, "name");
		in[i].version = "";
		in[i].bytes = arn_proto_encode(r.m, r.d, arena, &in[i].len);
		if (t == ARN_CFG_LISTENER && nm.size == 0 && in[i].bytes) {
			/* Envoy names a static listener that has no name itself
			 * (Listener.name: "If no name is provided, Envoy will
			 * allocate an internal UUID"), and its documentation's
			 * examples leave it out. Arion's name is stable instead: the
			 * address, or the index without one. A name field appended
			 * to the encoding wins (protobuf: the last one does). */
			struct pb sa = pb_msg(pb_msg(r, "address"), "socket_address");
			upb_StringView a = pb_str(sa, "address");
			char gen[112];
			int gl = a.size ? snprintf(gen, sizeof(gen), "%.*s:%u",
						   (int)(a.size < 64 ? a.size : 64), a.data,
						   pb_u32(sa, "port_value"))
					: snprintf(gen, sizeof(gen), "static_listener_%zu", i);
			char *nb = upb_Arena_Malloc(arena, in[i].len + 2 + (size_t)gl);
			if (nb) {
				memcpy(nb, in[i].bytes, in[i].len);
				nb[in[i].len] = 0x0a;	      /* field 1 (name), length-delimited */
				nb[in[i].len + 1] = (char)gl; /* < 128: one varint byte */
				memcpy(nb + in[i].len + 2, gen, (size_t)gl);
				in[i].len += 2 + (size_t)gl;
			}
			in[i].bytes = nb;
			names[i] = nb ? strdup(gen) : NULL;
		} else {
			names[i] = strndup(nm.data, nm.size);
		}
		in[i].name = names[i];
		if (!names[i] || !in[i].bytes) {
			rc = -ENOMEM;
			goto out;
		}
	}
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < i; j++)
			if (strcmp(names[i], names[j]) == 0) {
				char path[128];
				size_t line = 0, col = 0;
				snprintf(path, sizeof(path),
					 "envoy_bootstrap.static_resources.%s[%zu].name", field, i);
				if (b->yaml && arn_bootstrap_where(b, path, &line, &col) == 0)
					arn_sb_printf(err, "%s:%zu:%zu: ", b->file, line, col);
				arn_sb_printf(err, "%s: %s '%s' is defined twice (also %s[%zu])\n",
					      path, type_names[t], names[i], field, j);
				rc = -EINVAL;
				break;
			}
	if (rc)
		goto out;
	struct arn_config_result r;
	rc = arn_config_apply(s, type_urls[t], in, n, NULL, 0, ARN_CONFIG_APPLY_STATIC, &r);
	if (rc == 0) {
		for (size_t i = 0; i < r.n_errors; i++)
			static_error(b, field, names, n, &r.errors[i], err);
		if (r.n_errors)
			rc = -EINVAL;
		arn_config_result_free(&r);
	}
out:
	for (size_t i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
	free(in);
	if (arena)
		upb_Arena_Free(arena);
	return rc;
}

/* Without a control plane a cluster that a route names and static_resources
 * lacks can never arrive. G5 installs such a route all the same (its
 * requests get 503 NC), as Envoy does with validate_clusters off; the
 * operator is told which names, in name order. */
static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void warn_undefined_clusters(struct arn_config_store *s, const struct arn_bootstrap *b,
				    struct arn_sb *out)
{
	const struct smap *m = &s->interest[ARN_CFG_CLUSTER];
	const struct arn_cfg_gen *g = arn_config_gen(s);
	if (m->n == 0 || g == NULL)
		return;
	const char **names = calloc(m->n, sizeof(*names));
	if (names == NULL)
		return;
	size_t n = 0;
	for (size_t i = 0; i < m->nb; i++)
		for (const struct snode *x = m->b[i]; x && n < m->n; x = x->next) {
			if (x->count == 0 ||
			    arn_cfg_find(g, ARN_CFG_CLUSTER, x->key, x->len, x->hash))
				continue;
			/* a DNS cluster warms until its first answer: defined */
			const struct entry *e = entry_get(s, ARN_CFG_CLUSTER, x->key, x->len);
			if (!e || !e->warming.obj)
				names[n++] = x->key;
		}
	qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n; i++) {
		size_t line, col;
		if (b && b->file && arn_bootstrap_where_cluster_ref(b, names[i], &line, &col) == 0)
			arn_sb_printf(out, "%s:%zu:%zu: ", b->file, line, col);
		arn_sb_printf(out,
			      "warning: static_resources: cluster '%s' is named by a route but not "
			      "defined, and without dynamic_resources.ads_config no control plane "
			      "can deliver it: requests routed to it get 503 NC\n",
			      names[i]);
	}
	free(names);
}

int arn_config_apply_static(struct arn_config_store *s, const struct arn_bootstrap *b,
			    struct arn_sb *err)
{
	int rc = 0;
	if (b && b->pb) {
		static const struct {
			enum arn_cfg_type t;
			const char *field;
		} order[] = {
		    {ARN_CFG_SECRET, "secrets"},
		    {ARN_CFG_CLUSTER, "clusters"},
		    {ARN_CFG_LISTENER, "listeners"},
		};
		for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
			int r = apply_static_list(s, b, order[i].t, order[i].field, err);
			if (r && (rc == 0 || r == -ENOMEM))
				rc = r;
		}
	}
	if (rc == 0 && b && !b->ads)
		warn_undefined_clusters(s, b, err);
	s->static_applied = true;
	update_ready(s);
	return rc;
}

int arn_config_validate_bootstrap(const struct arn_bootstrap *b, struct arn_sb *err)
{
	struct arn_config_store *s = arn_config_create(NULL);
	if (!s)
		return -ENOMEM;
	s->validate_only = true;
	int rc = arn_config_apply_static(s, b, err);
	arn_config_destroy(s);
	return rc;
}

/* ---- readiness -------------------------------------------------------------------------- */

void arn_config_initial_fetch_done(struct arn_config_store *s, const char *type_url)
{
	int t = arn_config_type_from_url(type_url, strlen(type_url));
	if (t >= 0)
		s->initial_done[t] = true;
	update_ready(s);
}

static void update_ready(struct arn_config_store *s)
{
	if (s->ready || !s->static_applied)
		return;
	if (s->expect_initial) {
		/* Like Envoy's init manager: CDS and LDS first responses (or their
		 * initial_fetch_timeout); EDS, RDS and SDS are waited for through
		 * the warming of what references them. */
		uint64_t t = now(s);
		static const enum arn_cfg_type types[] = {ARN_CFG_CLUSTER, ARN_CFG_LISTENER};
		bool waiting = false;
		for (size_t i = 0; i < 2; i++) {
			enum arn_cfg_type ty = types[i];
			if (s->initial_done[ty])
				continue;
			if (s->initial_deadline[ty] && t >= s->initial_deadline[ty]) {
				if (!s->initial_timed_out[ty]) {
					s->initial_timed_out[ty] = true;
					s->init_fetch_timeouts[ty]++;
				}
			} else {
				waiting = true;
			}
		}
		if (waiting)
			return;
	}
	for (size_t i = 0; i < s->n_warming; i++)
		if (s->warming[i]->warm_initial)
			return;
	s->ready = true;
	if (!s->validate_only)
		ARN_INFO(CONFIG, "initial configuration ready (generation %llu)",
			 (unsigned long long)s->gen_id);
}

bool arn_config_ready(struct arn_config_store *s)
{
	update_ready(s);
	return s->ready;
}

/* ---- poll --------------------------------------------------------------------------------- */

void arn_config_poll(struct arn_config_store *s)
{
	arn_cfg_reclaim_drain(&s->reclaim);
	if (s->dns)
		arn_dns_poll(s->dns, now(s));
	/* the queue holds generations only: what it ran were generations */
	s->st.generations_freed += arn_defer_reclaim(s->retired);
	if (s->n_warming) {
		uint64_t t = now(s);
		bool due = false;
		for (size_t i = 0; i < s->n_warming && !due; i++)
			due = s->warming[i]->warm_deadline && t >= s->warming[i]->warm_deadline;
		if (due) {
			next_begin(s);
			warming_check(s, true);
			drop_unreferenced(s);
			uint64_t token;
			if (publish(s, &token) != 0) {
				for (int k = 0; k < ARN_CFG_NTYPES; k++) {
					arn_hamt_unref(s->next[k], arn_cfg_obj_unref);
					s->next[k] = NULL;
				}
			}
			interest_notify(s);
		}
	}
	cluster_updates_flush(s); /* the resolver's, when nothing was published */
	update_ready(s);
}

/* ---- admin --------------------------------------------------------------------------------- */

static int ecmp(const void *a, const void *b)
{
	const struct entry *x = *(struct entry *const *)a, *y = *(struct entry *const *)b;
	return strcmp(x->name, y->name);
}

struct dump_handle {
	struct entry *e;
	bool warming;
};

size_t arn_config_foreach(struct arn_config_store *s, enum arn_cfg_type t,
			  void (*fn)(void *ctx, const struct arn_config_resource_info *info),
			  void *ctx)
{
	if ((unsigned)t >= ARN_CFG_NTYPES)
		return 0;
	struct smap *m = &s->entries[t];
	struct entry **v = malloc((m->n ? m->n : 1) * sizeof(*v));
	if (!v)
		return 0;
	size_t n = 0, calls = 0;
	for (size_t i = 0; i < m->nb; i++)
		for (struct snode *x = m->b[i]; x; x = x->next)
			v[n++] = x->val;
	qsort(v, n, sizeof(*v), ecmp);
	for (size_t i = 0; i < n; i++) {
		struct entry *e = v[i];
		struct arn_config_resource_info info = {
		    .type = t,
		    .name = e->name,
		    .is_static = e->is_static,
		    .last_error = e->last_error,
		    .has_failed_configuration = e->error_bytes != NULL,
		    .error_version = e->error_version,
		    .last_error_ms = e->error_ms,
		};
		struct dump_handle h = {e, false};
		info.handle = &h;
		if (e->active.obj) {
			info.state = ARN_CONFIG_ACTIVE;
			info.version = e->active.version ? e->active.version : "";
			info.last_updated_ms = e->active.updated_ms;
			fn(ctx, &info);
			calls++;
		}
		if (e->warming.obj) {
			h.warming = true;
			info.state = ARN_CONFIG_WARMING;
			info.version = e->warming.version ? e->warming.version : "";
			info.last_updated_ms = e->warming.updated_ms;
			fn(ctx, &info);
			calls++;
		}
		if (!e->active.obj && !e->warming.obj) {
			info.state = ARN_CONFIG_ERROR_ONLY;
			info.version = e->error_version ? e->error_version : "";
			info.last_updated_ms = 0;
			fn(ctx, &info);
			calls++;
		}
	}
	free(v);
	return calls;
}

/* A resource's kept bytes as JSON (keys and passwords were redacted when
 * they were kept: keep_bytes()). */
static int bytes_json(enum arn_cfg_type t, const char *bytes, size_t len, struct arn_sb *out)
{
	if (!bytes)
		return -ENOMEM; /* could not be kept */
	upb_Arena *a = upb_Arena_New();
	if (!a)
		return -ENOMEM;
	const upb_MessageDef *md = arn_proto_msgdef(arn_cfg_type_msg[t]);
	struct arn_sb err = ARN_SB_INIT;
	upb_Message *m = arn_proto_decode(bytes, len, md, a, &err);
	arn_sb_free(&err);
	int rc = m ? arn_proto_to_json(m, md, out) : -EINVAL;
	upb_Arena_Free(a);
	return rc;
}

int arn_config_resource_json(struct arn_config_store *s,
			     const struct arn_config_resource_info *info, struct arn_sb *out)
{
	(void)s;
	const struct dump_handle *h = info->handle;
	const struct version *v = h->warming ? &h->e->warming : &h->e->active;
	if (info->state == ARN_CONFIG_ERROR_ONLY || !v->obj)
		return -ENOENT;
	return bytes_json(info->type, v->bytes, v->len, out);
}

int arn_config_failed_json(struct arn_config_store *s, const struct arn_config_resource_info *info,
			   struct arn_sb *out)
{
	(void)s;
	const struct dump_handle *h = info->handle;
	if (!h->e->error_bytes)
		return -ENOENT;
	return bytes_json(info->type, h->e->error_bytes, h->e->error_len, out);
}

uint64_t arn_config_init_fetch_timeouts(const struct arn_config_store *s, const char *type_url)
{
	int t = arn_config_type_from_url(type_url, strlen(type_url));
	return t >= 0 ? s->init_fetch_timeouts[t] : 0;
}

void arn_config_get_stats(struct arn_config_store *s, struct arn_config_stats *out)
{
	*out = s->st;
	out->generations_pending = arn_defer_pending(s->retired);
	out->generation = s->gen_id;
	size_t active[ARN_CFG_NTYPES] = {0}, warming[ARN_CFG_NTYPES] = {0};
	for (int t = 0; t < ARN_CFG_NTYPES; t++)
		active[t] = s->gen->counts[t];
	for (size_t i = 0; i < s->n_warming; i++)
		warming[s->warming[i]->type]++;
	out->listeners_active = active[ARN_CFG_LISTENER];
	out->listeners_warming = warming[ARN_CFG_LISTENER];
	out->routes_active = active[ARN_CFG_ROUTE];
	out->clusters_active = active[ARN_CFG_CLUSTER];
	out->clusters_warming = warming[ARN_CFG_CLUSTER];
	out->endpoints_active = active[ARN_CFG_CLA];
	out->secrets_active = active[ARN_CFG_SECRET];
	out->toolsets_active = active[ARN_CFG_TOOLSET];
}

void arn_config_stats_foreach(const struct arn_config_stats *st,
			      void (*fn)(void *ctx, const char *name, const char *help,
					 uint64_t value),
			      void *ctx)
{
#define ARN_CONFIG_STAT(id, help) fn(ctx, #id, help, st->id);
#include "arn_config_stats.def"
#undef ARN_CONFIG_STAT
}
