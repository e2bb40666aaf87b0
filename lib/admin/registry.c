/*
 * The registries other modules plug into: handlers, /config_dump sections,
 * readiness conditions, /clusters and /listeners providers and the
 * health-check flag. They are process-wide (not part of
 * a server) so that modules can register before the admin server starts.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin_int.h"
#include "arn_log.h"

/* ---- handlers ------------------------------------------------------------ */

static struct arn_admin_handler *handlers; /* sorted by path */

const struct arn_admin_handler *arn_admin_handlers_(void)
{
	return handlers;
}

const struct arn_admin_handler *arn_admin_handler_find_(const char *path)
{
	for (const struct arn_admin_handler *h = handlers; h; h = h->next)
		if (strcmp(h->path, path) == 0)
			return h;
	return NULL;
}

int arn_admin_handler_register(const char *path, unsigned methods, const char *help,
			       arn_admin_handler_fn fn, void *arg)
{
	if (path == NULL || path[0] != '/' || strchr(path, '?') != NULL || fn == NULL ||
	    (methods & (ARN_ADMIN_GET | ARN_ADMIN_POST)) == 0)
		return -EINVAL;
	if (arn_admin_handler_find_(path) != NULL)
		return -EEXIST;
	struct arn_admin_handler *h = calloc(1, sizeof(*h));
	if (h == NULL)
		return -ENOMEM;
	h->path = strdup(path);
	h->help = strdup(help ? help : "");
	if (h->path == NULL || h->help == NULL) {
		free(h->path);
		free(h->help);
		free(h);
		return -ENOMEM;
	}
	h->methods = methods;
	h->fn = fn;
	h->arg = arg;
	struct arn_admin_handler **pp = &handlers;
	while (*pp && strcmp((*pp)->path, path) < 0)
		pp = &(*pp)->next;
	h->next = *pp;
	*pp = h;
	return 0;
}

int arn_admin_handler_unregister(const char *path)
{
	for (struct arn_admin_handler **pp = &handlers; *pp; pp = &(*pp)->next)
		if (strcmp((*pp)->path, path) == 0) {
			struct arn_admin_handler *h = *pp;
			*pp = h->next;
			free(h->path);
			free(h->help);
			free(h);
			return 0;
		}
	return -ENOENT;
}

/* ---- /config_dump providers ---------------------------------------------- */

struct dump_provider {
	char *type_name;
	arn_admin_config_dump_fn fn;
	void *arg;
	struct dump_provider *next;
};

static struct dump_provider *dumpers; /* registration order */

int arn_admin_config_dump_register(const char *type_name, arn_admin_config_dump_fn fn, void *arg)
{
	if (type_name == NULL || fn == NULL)
		return -EINVAL;
	struct dump_provider **pp = &dumpers;
	for (; *pp; pp = &(*pp)->next)
		if (strcmp((*pp)->type_name, type_name) == 0)
			return -EEXIST;
	struct dump_provider *d = calloc(1, sizeof(*d));
	if (d == NULL || (d->type_name = strdup(type_name)) == NULL) {
		free(d);
		return -ENOMEM;
	}
	d->fn = fn;
	d->arg = arg;
	*pp = d;
	return 0;
}

int arn_admin_config_dump_unregister(const char *type_name)
{
	for (struct dump_provider **pp = &dumpers; *pp; pp = &(*pp)->next)
		if (strcmp((*pp)->type_name, type_name) == 0) {
			struct dump_provider *d = *pp;
			*pp = d->next;
			free(d->type_name);
			free(d);
			return 0;
		}
	return -ENOENT;
}

/* Envoy's order of sections; unknown types go after, in registration order. */
static const char *const dump_order[] = {
    "envoy.admin.v3.BootstrapConfigDump",    "envoy.admin.v3.ClustersConfigDump",
    "envoy.admin.v3.EndpointsConfigDump",    "envoy.admin.v3.ListenersConfigDump",
    "envoy.admin.v3.ScopedRoutesConfigDump", "envoy.admin.v3.RoutesConfigDump",
    "envoy.admin.v3.SecretsConfigDump",	     NULL,
};

static int run_dumper(struct dump_provider *d, struct arn_sb *out, bool *first)
{
	size_t mark = out->len;
	if (!*first)
		arn_sb_putc(out, ',');
	int rc = d->fn(out, d->arg);
	if (rc != 0) {
		ARN_ERR(ADMIN, "config_dump: the %s section failed (%d); it is left out",
			d->type_name, rc);
		out->len = mark;
		if (out->buf)
			out->buf[mark] = '\0';
		return rc;
	}
	*first = false;
	return 0;
}

int arn_admin_config_dump_build_(struct arn_sb *out, bool include_eds)
{
	arn_sb_puts(out, "{\"configs\":[");
	bool first = true;
	for (int i = 0; dump_order[i]; i++) {
		if (!include_eds &&
		    strcmp(dump_order[i], "envoy.admin.v3.EndpointsConfigDump") == 0)
			continue;
		for (struct dump_provider *d = dumpers; d; d = d->next)
			if (strcmp(d->type_name, dump_order[i]) == 0)
				run_dumper(d, out, &first);
	}
	for (struct dump_provider *d = dumpers; d; d = d->next) {
		bool known = false;
		for (int i = 0; dump_order[i]; i++)
			known |= strcmp(d->type_name, dump_order[i]) == 0;
		if (!known)
			run_dumper(d, out, &first);
	}
	arn_sb_puts(out, "]}");
	return out->oom ? -ENOMEM : 0;
}

/* ---- readiness ------------------------------------------------------------ */

struct ready_cond {
	char *name;
	arn_admin_ready_fn fn;
	void *arg;
	struct ready_cond *next;
};

static struct ready_cond *conds;
static bool hc_failed;
static bool started;

int arn_admin_ready_register(const char *name, arn_admin_ready_fn fn, void *arg)
{
	if (name == NULL || fn == NULL)
		return -EINVAL;
	struct ready_cond **pp = &conds;
	for (; *pp; pp = &(*pp)->next)
		if (strcmp((*pp)->name, name) == 0)
			return -EEXIST;
	struct ready_cond *c = calloc(1, sizeof(*c));
	if (c == NULL || (c->name = strdup(name)) == NULL) {
		free(c);
		return -ENOMEM;
	}
	c->fn = fn;
	c->arg = arg;
	*pp = c;
	return 0;
}

int arn_admin_ready_unregister(const char *name)
{
	for (struct ready_cond **pp = &conds; *pp; pp = &(*pp)->next)
		if (strcmp((*pp)->name, name) == 0) {
			struct ready_cond *c = *pp;
			*pp = c->next;
			free(c->name);
			free(c);
			return 0;
		}
	return -ENOENT;
}

bool arn_admin_healthcheck_failed(void)
{
	return __atomic_load_n(&hc_failed, __ATOMIC_RELAXED);
}

void arn_admin_set_healthcheck_failed(bool failed)
{
	__atomic_store_n(&hc_failed, failed, __ATOMIC_RELAXED);
}

void arn_admin_set_started_(bool s)
{
	started = s;
}

enum arn_admin_state arn_admin_state(struct arn_sb *why)
{
	if (arn_admin_healthcheck_failed()) {
		if (why)
			arn_sb_puts(why, "health checks failed by POST /healthcheck/fail\n");
		return ARN_ADMIN_STATE_DRAINING;
	}
	if (!started) {
		if (why)
			arn_sb_puts(why, "starting\n");
		return ARN_ADMIN_STATE_PRE_INITIALIZING;
	}
	bool ready = true;
	for (struct ready_cond *c = conds; c; c = c->next) {
		struct arn_sb r = ARN_SB_INIT;
		if (!c->fn(&r, c->arg)) {
			ready = false;
			if (why)
				arn_sb_printf(why, "%s: %s\n", c->name,
					      r.len ? arn_sb_cstr(&r) : "not ready");
		}
		arn_sb_free(&r);
	}
	return ready ? ARN_ADMIN_STATE_LIVE : ARN_ADMIN_STATE_INITIALIZING;
}

const char *arn_admin_state_name(enum arn_admin_state s)
{
	switch (s) {
	case ARN_ADMIN_STATE_LIVE:
		return "LIVE";
	case ARN_ADMIN_STATE_DRAINING:
		return "DRAINING";
	case ARN_ADMIN_STATE_PRE_INITIALIZING:
		return "PRE_INITIALIZING";
	case ARN_ADMIN_STATE_INITIALIZING:
		return "INITIALIZING";
	}
	return "?";
}

/* ---- /clusters and /listeners ------------------------------------------- */

struct walker {
	void *fn;
	void *arg;
	struct walker *next;
};

static struct walker *cluster_walkers, *listener_walkers;

static int walker_add(struct walker **list, void *fn, void *arg)
{
	struct walker **pp = list;
	for (; *pp; pp = &(*pp)->next)
		if ((*pp)->fn == fn && (*pp)->arg == arg)
			return -EEXIST;
	struct walker *w = calloc(1, sizeof(*w));
	if (w == NULL)
		return -ENOMEM;
	w->fn = fn;
	w->arg = arg;
	*pp = w;
	return 0;
}

static int walker_del(struct walker **list, void *fn, void *arg)
{
	for (struct walker **pp = list; *pp; pp = &(*pp)->next)
		if ((*pp)->fn == fn && (*pp)->arg == arg) {
			struct walker *w = *pp;
			*pp = w->next;
			free(w);
			return 0;
		}
	return -ENOENT;
}

int arn_admin_clusters_register(arn_admin_clusters_fn fn, void *arg)
{
	return walker_add(&cluster_walkers, (void *)fn, arg);
}

int arn_admin_clusters_unregister(arn_admin_clusters_fn fn, void *arg)
{
	return walker_del(&cluster_walkers, (void *)fn, arg);
}

int arn_admin_listeners_register(arn_admin_listeners_fn fn, void *arg)
{
	return walker_add(&listener_walkers, (void *)fn, arg);
}

int arn_admin_listeners_unregister(arn_admin_listeners_fn fn, void *arg)
{
	return walker_del(&listener_walkers, (void *)fn, arg);
}

struct arn_admin_clusters {
	struct arn_sb *out;
	bool json;
	unsigned n_clusters;
	unsigned n_hosts; /* of the current cluster */
	char *cur;	  /* current cluster's name, for the text prefix */
};

static void close_cluster_json(struct arn_admin_clusters *c)
{
	if (c->n_clusters == 0)
		return;
	/* host_statuses was opened when the cluster was added */
	arn_sb_puts(c->out, "]}");
}

static uint32_t or_default(uint32_t v, uint32_t d)
{
	return v ? v : d;
}

void arn_admin_clusters_add_cluster(struct arn_admin_clusters *c,
				    const struct arn_admin_cluster_info *ci)
{
	const char *obs = ci->observability_name ? ci->observability_name : ci->name;
	/* Envoy's defaults for circuit breakers: 1024 connections, pending and
	 * requests, 3 retries, for both priorities. */
	uint32_t mc = or_default(ci->max_connections, 1024),
		 mp = or_default(ci->max_pending_requests, 1024),
		 mr = or_default(ci->max_requests, 1024), mt = or_default(ci->max_retries, 3);
	free(c->cur);
	c->cur = strdup(ci->name);
	if (!c->json) {
		const char *n = ci->name;
		arn_sb_printf(c->out, "%s::observability_name::%s\n", n, obs);
		for (int p = 0; p < 2; p++) {
			const char *pr = p ? "high_priority" : "default_priority";
			arn_sb_printf(
			    c->out,
			    "%s::%s::max_connections::%u\n%s::%s::max_pending_requests::%u\n"
			    "%s::%s::max_requests::%u\n%s::%s::max_retries::%u\n",
			    n, pr, mc, n, pr, mp, n, pr, mr, n, pr, mt);
		}
		arn_sb_printf(c->out, "%s::added_via_api::%s\n", n,
			      ci->added_via_api ? "true" : "false");
		c->n_clusters++;
		return;
	}
	close_cluster_json(c);
	arn_sb_puts(c->out, c->n_clusters ? "," : "");
	arn_sb_puts(c->out, "{\"name\":");
	arn_sb_json_str(c->out, ci->name, strlen(ci->name));
	if (ci->added_via_api)
		arn_sb_puts(c->out, ",\"added_via_api\":true");
	arn_sb_puts(c->out, ",\"circuit_breakers\":{\"thresholds\":[");
	for (int p = 0; p < 2; p++)
		arn_sb_printf(c->out,
			      "%s{%s\"max_connections\":%u,\"max_pending_requests\":%u,"
			      "\"max_requests\":%u,\"max_retries\":%u}",
			      p ? "," : "", p ? "\"priority\":\"HIGH\"," : "", mc, mp, mr, mt);
	arn_sb_puts(c->out, "]},\"observability_name\":");
	arn_sb_json_str(c->out, obs, strlen(obs));
	arn_sb_puts(c->out, ",\"host_statuses\":[");
	c->n_clusters++;
	c->n_hosts = 0;
}

void arn_admin_clusters_add_host(struct arn_admin_clusters *c, const struct arn_admin_host_info *h)
{
	if (c->n_clusters == 0 || c->cur == NULL)
		return;
	const char *flags = h->health_flags ? h->health_flags : "healthy";
	const char *region = h->region ? h->region : "", *zone = h->zone ? h->zone : "",
		   *sub = h->sub_zone ? h->sub_zone : "", *hn = h->hostname ? h->hostname : "";
	if (!c->json) {
		char pre[600];
		snprintf(pre, sizeof(pre), "%s::%s:%u::", c->cur, h->address, h->port);
		arn_sb_printf(
		    c->out,
		    "%scx_active::%llu\n%scx_connect_fail::%llu\n%scx_total::%llu\n"
		    "%srq_active::%llu\n%srq_error::%llu\n%srq_success::%llu\n"
		    "%srq_timeout::%llu\n%srq_total::%llu\n",
		    pre, (unsigned long long)h->cx_active, pre,
		    (unsigned long long)h->cx_connect_fail, pre, (unsigned long long)h->cx_total,
		    pre, (unsigned long long)h->rq_active, pre, (unsigned long long)h->rq_error,
		    pre, (unsigned long long)h->rq_success, pre, (unsigned long long)h->rq_timeout,
		    pre, (unsigned long long)h->rq_total);
		arn_sb_printf(c->out,
			      "%shostname::%s\n%shealth_flags::%s\n%sweight::%u\n%sregion::%s\n"
			      "%szone::%s\n%ssub_zone::%s\n%scanary::false\n%spriority::%u\n"
			      "%ssuccess_rate::-1\n%slocal_origin_success_rate::-1\n",
			      pre, hn, pre, flags, pre, h->weight, pre, region, pre, zone, pre, sub,
			      pre, pre, h->priority, pre, pre);
		return;
	}
	arn_sb_puts(c->out, c->n_hosts ? "," : "");
	arn_sb_puts(c->out, "{\"address\":{\"socket_address\":{\"address\":");
	arn_sb_json_str(c->out, h->address, strlen(h->address));
	arn_sb_printf(c->out, ",\"port_value\":%u}},\"stats\":[", h->port);
	const struct {
		const char *n;
		uint64_t v;
		bool gauge;
	} st[] = {
	    {"cx_connect_fail", h->cx_connect_fail, false},
	    {"cx_total", h->cx_total, false},
	    {"rq_error", h->rq_error, false},
	    {"rq_success", h->rq_success, false},
	    {"rq_timeout", h->rq_timeout, false},
	    {"rq_total", h->rq_total, false},
	    {"cx_active", h->cx_active, true},
	    {"rq_active", h->rq_active, true},
	};
	for (size_t i = 0; i < sizeof(st) / sizeof(st[0]); i++) {
		arn_sb_printf(c->out, "%s{%s\"name\":\"%s\"", i ? "," : "",
			      st[i].gauge ? "\"type\":\"GAUGE\"," : "", st[i].n);
		if (st[i].v)
			arn_sb_printf(c->out, ",\"value\":\"%llu\"", (unsigned long long)st[i].v);
		arn_sb_putc(c->out, '}');
	}
	arn_sb_puts(c->out, "],\"health_status\":{");
	const char *eds = h->eds_health_status ? h->eds_health_status : "HEALTHY";
	arn_sb_puts(c->out, "\"eds_health_status\":");
	arn_sb_json_str(c->out, eds, strlen(eds));
	if (strstr(flags, "/failed_active_hc"))
		arn_sb_puts(c->out, ",\"failed_active_health_check\":true");
	if (strstr(flags, "/failed_outlier_check"))
		arn_sb_puts(c->out, ",\"failed_outlier_check\":true");
	arn_sb_puts(c->out, "}");
	if (h->weight)
		arn_sb_printf(c->out, ",\"weight\":%u", h->weight);
	if (h->priority)
		arn_sb_printf(c->out, ",\"priority\":%u", h->priority);
	if (*hn) {
		arn_sb_puts(c->out, ",\"hostname\":");
		arn_sb_json_str(c->out, hn, strlen(hn));
	}
	arn_sb_puts(c->out, ",\"locality\":{");
	bool f = true;
	const char *lk[] = {"region", "zone", "sub_zone"}, *lv[] = {region, zone, sub};
	for (int i = 0; i < 3; i++)
		if (*lv[i]) {
			arn_sb_printf(c->out, "%s\"%s\":", f ? "" : ",", lk[i]);
			arn_sb_json_str(c->out, lv[i], strlen(lv[i]));
			f = false;
		}
	arn_sb_puts(c->out, "}}");
	c->n_hosts++;
}

void arn_admin_clusters_write_(struct arn_sb *out, bool json)
{
	struct arn_admin_clusters c = {.out = out, .json = json};
	if (json)
		arn_sb_puts(out, "{\"cluster_statuses\":[");
	for (struct walker *w = cluster_walkers; w; w = w->next)
		((arn_admin_clusters_fn)w->fn)(&c, w->arg);
	if (json) {
		close_cluster_json(&c);
		arn_sb_puts(out, "]}");
	}
	free(c.cur);
}

struct arn_admin_listeners {
	struct arn_sb *out;
	bool json;
	unsigned n;
};

void arn_admin_listeners_add(struct arn_admin_listeners *o, const struct arn_admin_listener_info *l)
{
	if (!o->json) {
		arn_sb_printf(o->out, "%s::%s:%u\n", l->name, l->address, l->port);
		return;
	}
	arn_sb_puts(o->out, o->n++ ? ",{\"name\":" : "{\"name\":");
	arn_sb_json_str(o->out, l->name, strlen(l->name));
	arn_sb_puts(o->out, ",\"local_address\":{\"socket_address\":{\"address\":");
	arn_sb_json_str(o->out, l->address, strlen(l->address));
	arn_sb_printf(o->out, ",\"port_value\":%u}}}", l->port);
}

void arn_admin_listeners_write_(struct arn_sb *out, bool json)
{
	struct arn_admin_listeners o = {.out = out, .json = json};
	if (json)
		arn_sb_puts(out, "{\"listener_statuses\":[");
	for (struct walker *w = listener_walkers; w; w = w->next)
		((arn_admin_listeners_fn)w->fn)(&o, w->arg);
	if (json)
		arn_sb_puts(out, "]}");
}

/* ---- tests ----------------------------------------------------------------- */

void arn_admin_reset_for_tests(void)
{
	while (handlers)
		arn_admin_handler_unregister(handlers->path);
	while (dumpers)
		arn_admin_config_dump_unregister(dumpers->type_name);
	while (conds)
		arn_admin_ready_unregister(conds->name);
	while (cluster_walkers)
		walker_del(&cluster_walkers, cluster_walkers->fn, cluster_walkers->arg);
	while (listener_walkers)
		walker_del(&listener_walkers, listener_walkers->fn, listener_walkers->arg);
	hc_failed = false;
	started = false;
}
