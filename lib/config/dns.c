/*
 * STRICT_DNS and LOGICAL_DNS clusters: resolution on the control side.
 *
 * Names are resolved with c-ares (Envoy's resolver; gRPC already links
 * it), one blocking resolution at a time on each of ARN_CFG_DNS_MAX_INFLIGHT
 * resolver threads of our own (started with the first DNS cluster): a slow
 * DNS server holds a resolver thread, never the control lcore, xDS or a
 * worker. The control lcore hands a thread one hostname at a time (never
 * more than a thread is free for) and collects the answers in
 * arn_config_poll(): both sides hold the mutex only to link a job in or
 * out. A thread sees its job's copy of the hostname only, never a cluster,
 * so a cluster removed or changed while its name resolves is safe: the
 * late answer is dropped (dns_stale_results).
 *
 * An answer that changes a hostname's addresses republishes the cluster's
 * endpoints as the ClusterLoadAssignment named like the cluster, made from
 * the cluster's load_assignment with each lb_endpoint repeated once per
 * address (STRICT_DNS) or given the first address (LOGICAL_DNS), and
 * applied through arn_config_apply() exactly as an EDS update is (a new
 * generation). Envoy's semantics (strict_dns_cluster.cc,
 * logical_dns_cluster.cc, 1.3x): per-hostname refresh timers; a failure
 * keeps the hostname's last addresses and retries on the cluster's failure
 * back-off; a successful answer with no address removes the hostname's
 * hosts (STRICT_DNS) or keeps the one host (LOGICAL_DNS); the first answer
 * or failure ends the cluster's warming.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config_int.h"
#include <ares.h>

#include "arn_log.h"
#include "dns_int.h"
#include "envoy/config/core/v3/address.upb.h"
#include "envoy/config/endpoint/v3/endpoint.upb.h"
#include "envoy/config/endpoint/v3/endpoint_components.upb.h"

struct dns_host {
	uint64_t due_ms;
	bool running;
	bool answered; /* resolved at least once */
	size_t n;
	uint32_t addrs[ARN_CFG_DNS_MAX_ADDRS]; /* host order, deduplicated */
};

struct dns_cl {
	struct dns_cl *next;
	char *name;
	const struct arn_cfg_cluster *cl; /* pinned; NULL once removed */
	uint64_t epoch;			  /* answers of older epochs are stale */
	unsigned inflight;
	uint32_t fail_ms;   /* current failure back-off; 0 after a success */
	bool dirty;	    /* endpoints to (re)publish */
	bool first_done;    /* the first answer or failure came (warming ends) */
	bool cla_published; /* the ClusterLoadAssignment is in the store */
	uint64_t published; /* versions published */
	struct dns_host *h; /* cl->dns->n_hosts */
};

struct dns_job {
	struct dns_job *next;
	struct dns_cl *c; /* the control lcore's; the thread does not touch it */
	uint64_t epoch;
	size_t host;
	int family;
	int rc;		/* addresses found, or a negative errno */
	uint32_t ttl_s; /* the answer's smallest TTL, seconds; 0: unknown */
	uint32_t addrs[ARN_CFG_DNS_MAX_ADDRS];
	char name[ARN_CFG_DNS_MAX_NAME + 1];
};

struct arn_dns {
	arn_dns_publish_fn publish;
	arn_dns_event_fn event;
	void *ctx;
	struct arn_config_stats *st;
	struct dns_cl *list;
	unsigned inflight;
	/* shared with the resolver threads, under mu */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct dns_job *todo, *done;
	bool stop;
	int wake; /* eventfd: readable once stopping (a resolution gives up) */
	size_t nthreads;
	pthread_t threads[ARN_CFG_DNS_MAX_INFLIGHT];
};

static arn_config_dns_fn resolver_fn;
static void *resolver_ctx;

void arn_config_set_dns_resolver(arn_config_dns_fn fn, void *ctx)
{
	resolver_fn = fn;
	resolver_ctx = ctx;
}

static pthread_once_t cares_once = PTHREAD_ONCE_INIT;
static int cares_init_rc;

static void cares_init(void)
{
	cares_init_rc = ares_library_init(ARES_LIB_INIT_ALL);
}

struct cares_answer {
	bool done;
	int status;
	struct ares_addrinfo *ai;
};

static void cares_cb(void *arg, int status, int timeouts, struct ares_addrinfo *res)
{
	(void)timeouts;
	struct cares_answer *a = arg;
	a->done = true;
	a->status = status;
	a->ai = res;
}

/*
 * c-ares, as Envoy resolves (its default resolver): /etc/hosts, then the
 * servers of /etc/resolv.conf, both read again for each resolution (a
 * channel per resolution), with the records' TTLs. Run on a resolver
 * thread: it waits here, in poll(), for as long as c-ares' own timeouts
 * and tries allow. Every family Arion takes asks for A records: its data
 * plane is IPv4.
 */
static int system_resolve(int wake, const char *host, int family, uint32_t *out, size_t max,
			  uint32_t *ttl_s)
{
	(void)family;
	pthread_once(&cares_once, cares_init);
	if (cares_init_rc != ARES_SUCCESS)
		return -ENOSYS;
	ares_channel ch;
	if (ares_init(&ch) != ARES_SUCCESS)
		return -EAGAIN;
	struct ares_addrinfo_hints hints;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_INET;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = ARES_AI_NOSORT;
	struct cares_answer a = {false, ARES_ENOTFOUND, NULL};
	ares_getaddrinfo(ch, host, NULL, &hints, cares_cb, &a);
	while (!a.done) {
		ares_socket_t socks[ARES_GETSOCK_MAXNUM];
		int bits = ares_getsock(ch, socks, ARES_GETSOCK_MAXNUM);
		struct pollfd pfd[ARES_GETSOCK_MAXNUM + 1];
		nfds_t n = 0;
		for (int i = 0; i < ARES_GETSOCK_MAXNUM; i++) {
			short ev = (short)((ARES_GETSOCK_READABLE(bits, i) ? POLLIN : 0) |
					   (ARES_GETSOCK_WRITABLE(bits, i) ? POLLOUT : 0));
			if (ev)
				pfd[n++] = (struct pollfd){.fd = socks[i], .events = ev};
		}
		if (n == 0)
			break;
		/* the store stopping: a silent server does not hold shutdown */
		pfd[n] = (struct pollfd){.fd = wake, .events = POLLIN};
		struct timeval tv, *tvp = ares_timeout(ch, NULL, &tv);
		int ms = tvp ? (int)(tvp->tv_sec * 1000 + tvp->tv_usec / 1000) : 1000;
		int r = poll(pfd, n + 1, ms);
		if ((r < 0 && errno != EINTR) || (r > 0 && pfd[n].revents))
			break;
		if (r <= 0) {
			ares_process_fd(ch, ARES_SOCKET_BAD, ARES_SOCKET_BAD); /* timeouts */
			continue;
		}
		for (nfds_t i = 0; i < n; i++)
			ares_process_fd(ch,
					(pfd[i].revents & (POLLIN | POLLERR | POLLHUP))
					    ? pfd[i].fd
					    : ARES_SOCKET_BAD,
					(pfd[i].revents & POLLOUT) ? pfd[i].fd : ARES_SOCKET_BAD);
	}
	ares_destroy(ch); /* a query still pending is called back (ARES_EDESTRUCTION) */
	if (a.status == ARES_ENOTFOUND || a.status == ARES_ENODATA) {
		/* Envoy: a name with no such record resolves to nothing */
		ares_freeaddrinfo(a.ai);
		return 0;
	}
	if (a.status != ARES_SUCCESS || !a.ai) {
		ares_freeaddrinfo(a.ai);
		return a.status == ARES_ENOMEM ? -ENOMEM : -EAGAIN;
	}
	int n = 0;
	uint32_t ttl = 0;
	for (struct ares_addrinfo_node *x = a.ai->nodes; x; x = x->ai_next) {
		if (x->ai_family != AF_INET)
			continue;
		if ((size_t)n < max)
			out[n] = ntohl(((const struct sockaddr_in *)x->ai_addr)->sin_addr.s_addr);
		n++;
		if (x->ai_ttl > 0 && (ttl == 0 || (uint32_t)x->ai_ttl < ttl))
			ttl = (uint32_t)x->ai_ttl;
	}
	ares_freeaddrinfo(a.ai);
	*ttl_s = ttl;
	return n;
}

static void *resolver_main(void *arg)
{
	struct arn_dns *d = arg;
	pthread_mutex_lock(&d->mu);
	for (;;) {
		while (!d->todo && !d->stop)
			pthread_cond_wait(&d->cv, &d->mu);
		if (d->stop)
			break;
		struct dns_job *j = d->todo;
		d->todo = j->next;
		pthread_mutex_unlock(&d->mu);
		j->ttl_s = 0;
		j->rc = resolver_fn ? resolver_fn(resolver_ctx, j->name, j->family, j->addrs,
						  ARN_CFG_DNS_MAX_ADDRS, &j->ttl_s)
				    : system_resolve(d->wake, j->name, j->family, j->addrs,
						     ARN_CFG_DNS_MAX_ADDRS, &j->ttl_s);
		pthread_mutex_lock(&d->mu);
		j->next = d->done;
		d->done = j;
	}
	pthread_mutex_unlock(&d->mu);
	return NULL;
}

struct arn_dns *arn_dns_create(arn_dns_publish_fn publish, arn_dns_event_fn event, void *ctx,
			       struct arn_config_stats *st)
{
	struct arn_dns *d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->publish = publish;
	d->event = event;
	d->ctx = ctx;
	d->st = st;
	d->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); /* -1: poll() ignores it */
	pthread_mutex_init(&d->mu, NULL);
	pthread_cond_init(&d->cv, NULL);
	return d;
}

static void cl_free(struct dns_cl *c)
{
	arn_cfg_obj_unref((struct arn_cfg_obj *)c->cl);
	free(c->h);
	free(c->name);
	free(c);
}

void arn_dns_destroy(struct arn_dns *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&d->mu);
	d->stop = true;
	pthread_cond_broadcast(&d->cv);
	pthread_mutex_unlock(&d->mu);
	if (d->wake >= 0 && write(d->wake, &(uint64_t){1}, sizeof(uint64_t)) < 0)
		ARN_WARN(CONFIG, "DNS resolver: cannot wake its threads: %s", strerror(errno));
	for (size_t i = 0; i < d->nthreads; i++)
		pthread_join(d->threads[i], NULL);
	for (struct dns_job *j = d->todo, *n; j; j = n) {
		n = j->next;
		free(j);
	}
	for (struct dns_job *j = d->done, *n; j; j = n) {
		n = j->next;
		free(j);
	}
	for (struct dns_cl *c = d->list, *n; c; c = n) {
		n = c->next;
		cl_free(c);
	}
	if (d->wake >= 0)
		close(d->wake);
	pthread_mutex_destroy(&d->mu);
	pthread_cond_destroy(&d->cv);
	free(d);
}

static struct dns_cl *cl_find(struct arn_dns *d, const char *name)
{
	for (struct dns_cl *c = d->list; c; c = c->next)
		if (c->cl && strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

/* Same names, in the same order, looked up the same way? */
static bool same_names(const struct arn_cfg_dns *a, const struct arn_cfg_dns *b)
{
	if (a->n_hosts != b->n_hosts || a->family != b->family)
		return false;
	for (size_t i = 0; i < a->n_hosts; i++)
		if (strcmp(a->hosts[i], b->hosts[i]) != 0)
			return false;
	return true;
}

void arn_dns_track(struct arn_dns *d, const char *name, const struct arn_cfg_cluster *cl,
		   uint64_t now_ms)
{
	struct dns_cl *c = cl_find(d, name);
	if (cl && !cl->dns)
		cl = NULL;
	if (!cl) {
		if (c) {
			/* removed (or no longer a DNS cluster): its answers in
			 * flight are dropped; poll removes its endpoints */
			arn_cfg_obj_unref((struct arn_cfg_obj *)c->cl);
			c->cl = NULL;
			c->epoch++;
			d->st->dns_clusters--;
		}
		return;
	}
	if (c && same_names(c->cl->dns, cl->dns)) {
		/* new settings or weights, same names: the addresses known
		 * stay, the endpoints are made again from the new template */
		arn_cfg_pin(cl);
		arn_cfg_obj_unref((struct arn_cfg_obj *)c->cl);
		c->cl = cl;
		c->dirty = c->first_done;
		return;
	}
	struct dns_host *h = calloc(cl->dns->n_hosts ? cl->dns->n_hosts : 1, sizeof(*h));
	struct dns_cl *nc = c ? NULL : calloc(1, sizeof(*nc));
	char *nm = c ? NULL : strdup(name);
	if (!h || (!c && (!nc || !nm))) {
		ARN_ERR(CONFIG, "Cluster '%s': out of memory for its DNS resolution", name);
		free(h);
		free(nc);
		free(nm);
		return;
	}
	if (!c) {
		c = nc;
		c->name = nm;
		/* a removed cluster of the same name whose endpoints are still
		 * in the store hands them over (poll would remove them) */
		for (struct dns_cl *o = d->list; o; o = o->next)
			if (!o->cl && o->cla_published && strcmp(o->name, name) == 0) {
				o->cla_published = false;
				c->cla_published = true;
			}
		c->next = d->list;
		d->list = c;
		d->st->dns_clusters++;
	} else {
		arn_cfg_obj_unref((struct arn_cfg_obj *)c->cl);
		free(c->h);
	}
	arn_cfg_pin(cl);
	c->cl = cl;
	c->h = h;
	c->epoch++;
	c->fail_ms = 0;
	c->first_done = false;
	for (size_t i = 0; i < cl->dns->n_hosts; i++)
		h[i].due_ms = now_ms;
	if (cl->dns->n_hosts == 0) {
		/* Envoy: no endpoints configured, initialized at once */
		c->first_done = true;
		c->dirty = true;
	}
}

static int start_threads(struct arn_dns *d)
{
	while (d->nthreads < ARN_CFG_DNS_MAX_INFLIGHT) {
		int rc = pthread_create(&d->threads[d->nthreads], NULL, resolver_main, d);
		if (rc != 0) {
			ARN_ERR(CONFIG, "cannot start a DNS resolver thread: %s", strerror(rc));
			break;
		}
		d->nthreads++;
	}
	return d->nthreads ? 0 : -EAGAIN;
}

static int u32cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* The answer @p j for host @p h of @p c: true if the host set changed. */
static bool take_answer(struct arn_dns *d, struct dns_cl *c, struct dns_host *h,
			const struct dns_job *j)
{
	size_t n = 0;
	uint32_t v[ARN_CFG_DNS_MAX_ADDRS];
	size_t got = (size_t)j->rc;
	if (got > ARN_CFG_DNS_MAX_ADDRS) {
		d->st->dns_addresses_dropped += got - ARN_CFG_DNS_MAX_ADDRS;
		got = ARN_CFG_DNS_MAX_ADDRS;
	}
	for (size_t i = 0; i < got; i++) {
		size_t k = 0;
		while (k < n && v[k] != j->addrs[i])
			k++;
		if (k == n && j->addrs[i] != 0)
			v[n++] = j->addrs[i];
	}
	if (n == 0)
		d->st->dns_update_empty++;
	bool logical = c->cl->type == ARN_CFG_CLUSTER_LOGICAL_DNS;
	if (logical) {
		/* one logical host: the newest first address; none keeps it */
		if (n == 0 || (h->n == 1 && h->addrs[0] == v[0]))
			return false;
		h->addrs[0] = v[0];
		h->n = 1;
		return true;
	}
	uint32_t a[ARN_CFG_DNS_MAX_ADDRS], b[ARN_CFG_DNS_MAX_ADDRS];
	memcpy(a, v, n * sizeof(*a));
	memcpy(b, h->addrs, h->n * sizeof(*b));
	qsort(a, n, sizeof(*a), u32cmp);
	qsort(b, h->n, sizeof(*b), u32cmp);
	bool same = n == h->n && memcmp(a, b, n * sizeof(*a)) == 0;
	memcpy(h->addrs, v, n * sizeof(*v));
	h->n = n;
	return !same;
}

static void collect(struct arn_dns *d, uint64_t now_ms)
{
	pthread_mutex_lock(&d->mu);
	struct dns_job *list = d->done;
	d->done = NULL;
	pthread_mutex_unlock(&d->mu);
	for (struct dns_job *j = list, *n; j; j = n) {
		n = j->next;
		struct dns_cl *c = j->c;
		c->inflight--;
		d->inflight--;
		if (!c->cl || j->epoch != c->epoch) {
			d->st->dns_stale_results++;
			free(j);
			continue;
		}
		const struct arn_cfg_dns *cfg = c->cl->dns;
		struct dns_host *h = &c->h[j->host];
		h->running = false;
		if (j->rc < 0) {
			d->st->dns_update_failure++;
			d->event(d->ctx, c->name, ARN_CONFIG_UPDATE_FAILURE);
			c->fail_ms = c->fail_ms == 0			 ? cfg->fail_base_ms
				     : c->fail_ms > cfg->fail_max_ms / 2 ? cfg->fail_max_ms
									 : 2 * c->fail_ms;
			if (c->fail_ms > cfg->fail_max_ms)
				c->fail_ms = cfg->fail_max_ms;
			h->due_ms = now_ms + c->fail_ms;
			ARN_WARN(
			    CONFIG,
			    "Cluster '%s': resolving '%s' failed (%s); its last addresses stay, "
			    "retry in %u ms",
			    c->name, j->name, strerror(-j->rc), c->fail_ms);
		} else {
			d->st->dns_update_success++;
			d->event(d->ctx, c->name, ARN_CONFIG_UPDATE_SUCCESS);
			c->fail_ms = 0;
			h->answered = true;
			/* respect_dns_ttl: the answer's TTL, when it has one
			 * and addresses (Envoy's strict_dns_cluster.cc) */
			h->due_ms = now_ms + (cfg->respect_ttl && j->rc > 0 && j->ttl_s
						  ? (uint64_t)j->ttl_s * 1000
						  : cfg->refresh_ms);
			if (take_answer(d, c, h, j))
				c->dirty = true;
			else if (c->first_done) {
				d->st->dns_update_no_rebuild++;
				d->event(d->ctx, c->name, ARN_CONFIG_UPDATE_NO_REBUILD);
			}
		}
		if (!c->first_done) {
			c->first_done = true;
			c->dirty = true; /* ends warming, with no endpoints if it failed */
		}
		free(j);
	}
}

static void launch(struct arn_dns *d, uint64_t now_ms)
{
	bool waited = false;
	for (struct dns_cl *c = d->list; c; c = c->next) {
		if (!c->cl)
			continue;
		const struct arn_cfg_dns *cfg = c->cl->dns;
		for (size_t i = 0; i < cfg->n_hosts; i++) {
			struct dns_host *h = &c->h[i];
			if (h->running || h->due_ms > now_ms)
				continue;
			if (d->inflight >= ARN_CFG_DNS_MAX_INFLIGHT ||
			    (d->nthreads == 0 && start_threads(d) != 0)) {
				waited = true;
				continue;
			}
			struct dns_job *j = malloc(sizeof(*j));
			if (!j)
				return;
			j->c = c;
			j->epoch = c->epoch;
			j->host = i;
			j->family = cfg->family;
			j->rc = 0;
			snprintf(j->name, sizeof(j->name), "%s", cfg->hosts[i]);
			h->running = true;
			c->inflight++;
			d->inflight++;
			d->st->dns_update_attempt++;
			d->event(d->ctx, c->name, ARN_CONFIG_UPDATE_ATTEMPT);
			pthread_mutex_lock(&d->mu);
			j->next = NULL;
			struct dns_job **tail = &d->todo;
			while (*tail)
				tail = &(*tail)->next;
			*tail = j;
			pthread_cond_signal(&d->cv);
			pthread_mutex_unlock(&d->mu);
		}
	}
	if (waited)
		d->st->dns_inflight_full++;
}

/* The cluster's ClusterLoadAssignment from its template and addresses. */
static char *make_cla(const struct dns_cl *c, upb_Arena *a, size_t *len)
{
	const struct arn_cfg_dns *cfg = c->cl->dns;
	envoy_config_endpoint_v3_ClusterLoadAssignment *cla =
	    cfg->la ? envoy_config_endpoint_v3_ClusterLoadAssignment_parse(cfg->la, cfg->la_len, a)
		    : envoy_config_endpoint_v3_ClusterLoadAssignment_new(a);
	if (!cla)
		return NULL;
	envoy_config_endpoint_v3_ClusterLoadAssignment_set_cluster_name(
	    cla, upb_StringView_FromString(c->name));
	size_t nl = 0, k = 0;
	envoy_config_endpoint_v3_LocalityLbEndpoints **ll =
	    envoy_config_endpoint_v3_ClusterLoadAssignment_mutable_endpoints(cla, &nl);
	for (size_t i = 0; i < nl; i++) {
		size_t ne = 0, nout = 0;
		envoy_config_endpoint_v3_LbEndpoint **le =
		    envoy_config_endpoint_v3_LocalityLbEndpoints_mutable_lb_endpoints(ll[i], &ne);
		if (k + ne > cfg->n_hosts)
			return NULL;
		/* each lb_endpoint, serialized once, is copied per address */
		char **bytes = upb_Arena_Malloc(a, (ne ? ne : 1) * sizeof(*bytes));
		size_t *blen = upb_Arena_Malloc(a, (ne ? ne : 1) * sizeof(*blen));
		if (!bytes || !blen)
			return NULL;
		for (size_t j = 0; j < ne; j++) {
			bytes[j] =
			    envoy_config_endpoint_v3_LbEndpoint_serialize(le[j], a, &blen[j]);
			if (!bytes[j])
				return NULL;
			nout += c->h[k + j].n;
		}
		envoy_config_endpoint_v3_LbEndpoint **out =
		    envoy_config_endpoint_v3_LocalityLbEndpoints_resize_lb_endpoints(ll[i], nout,
										     a);
		if (!out && nout)
			return NULL;
		size_t o = 0;
		for (size_t j = 0; j < ne; j++) {
			const struct dns_host *h = &c->h[k + j];
			for (size_t x = 0; x < h->n; x++) {
				envoy_config_endpoint_v3_LbEndpoint *e =
				    envoy_config_endpoint_v3_LbEndpoint_parse(bytes[j], blen[j], a);
				char *ip = upb_Arena_Malloc(a, INET_ADDRSTRLEN);
				if (!e || !ip)
					return NULL;
				struct in_addr in = {htonl(h->addrs[x])};
				inet_ntop(AF_INET, &in, ip, INET_ADDRSTRLEN);
				envoy_config_endpoint_v3_Endpoint *ep =
				    envoy_config_endpoint_v3_LbEndpoint_mutable_endpoint(e, a);
				envoy_config_core_v3_SocketAddress *sa =
				    envoy_config_core_v3_Address_mutable_socket_address(
					envoy_config_endpoint_v3_Endpoint_mutable_address(ep, a),
					a);
				if (!sa)
					return NULL;
				/* Envoy's host hostname: endpoint.hostname, else the
				 * name resolved (auto_host_rewrite sends it) */
				if (envoy_config_endpoint_v3_Endpoint_hostname(ep).size == 0)
					envoy_config_endpoint_v3_Endpoint_set_hostname(
					    ep, upb_StringView_FromString(cfg->hosts[k + j]));
				envoy_config_core_v3_SocketAddress_set_address(
				    sa, upb_StringView_FromString(ip));
				out[o++] = e;
			}
		}
		k += ne;
	}
	return envoy_config_endpoint_v3_ClusterLoadAssignment_serialize(cla, a, len);
}

static void publish_cl(struct arn_dns *d, struct dns_cl *c)
{
	upb_Arena *a = upb_Arena_New();
	size_t len = 0;
	char *bytes = a ? make_cla(c, a, &len) : NULL;
	if (!bytes) {
		ARN_ERR(CONFIG, "Cluster '%s': out of memory making its endpoints", c->name);
		if (a)
			upb_Arena_Free(a);
		return; /* dirty stays: tried again at the next poll */
	}
	char ver[32];
	snprintf(ver, sizeof(ver), "dns-%llu", (unsigned long long)++c->published);
	struct arn_sb why = ARN_SB_INIT;
	int rc = d->publish(d->ctx, c->name, ver, bytes, len, &why);
	upb_Arena_Free(a);
	if (rc == 0) {
		c->dirty = false;
		c->cla_published = true;
	} else {
		/* cannot happen with a template conversion accepted; said once */
		ARN_ERR(CONFIG, "Cluster '%s': its resolved endpoints were refused: %s", c->name,
			rc == -EINVAL ? arn_sb_cstr(&why) : strerror(-rc));
		c->dirty = false;
	}
	arn_sb_free(&why);
}

static void unpublish(struct arn_dns *d, struct dns_cl *c)
{
	struct arn_sb why = ARN_SB_INIT;
	if (d->publish(d->ctx, c->name, NULL, NULL, 0, &why) == 0)
		c->cla_published = false;
	arn_sb_free(&why);
}

void arn_dns_poll(struct arn_dns *d, uint64_t now_ms)
{
	if (!d->list)
		return;
	collect(d, now_ms);
	/* removed clusters: their endpoints go, then (nothing in flight) they do */
	for (struct dns_cl **p = &d->list, *c; (c = *p) != NULL;) {
		if (c->cl) {
			p = &c->next;
			continue;
		}
		if (c->cla_published)
			unpublish(d, c);
		if (c->inflight == 0 && !c->cla_published) {
			*p = c->next;
			cl_free(c);
		} else {
			p = &c->next;
		}
	}
	for (struct dns_cl *c = d->list; c; c = c->next)
		if (c->cl && c->dirty)
			publish_cl(d, c);
	launch(d, now_ms);
}
