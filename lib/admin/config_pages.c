/*
 * The configuration store on the admin endpoint (arn_admin_config.h):
 * /config_dump sections in Envoy's envoy.admin.v3 shapes, the /ready
 * condition, /clusters and /listeners from the current generation, and
 * config.* statistics.
 *
 * Everything is built on request from arn_config_foreach() (what the store
 * holds per name: active, warming, last error) and the current generation
 * (what workers use), on the control lcore; nothing here is kept between
 * requests.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arn_admin.h"
#include "arn_admin_config.h"
#include "arn_config.h"
#include "arn_json.h"
#include "arn_log.h"
#include "arn_stats.h"

#define SEC_CLUSTERS "envoy.admin.v3.ClustersConfigDump"
#define SEC_ENDPOINTS "envoy.admin.v3.EndpointsConfigDump"
#define SEC_LISTENERS "envoy.admin.v3.ListenersConfigDump"
#define SEC_ROUTES "envoy.admin.v3.RoutesConfigDump"
#define SEC_SECRETS "envoy.admin.v3.SecretsConfigDump"
/* Arion's own section for TDS (proto/arion/admin/v3/config_dump.proto),
 * after Envoy's sections */
#define SEC_TOOLSETS "arion.admin.v3.ToolSetsConfigDump"

/* ---- JSON helpers ------------------------------------------------------------ */

static void key(struct arn_sb *o, bool *first, const char *k)
{
	arn_sb_printf(o, "%s\"%s\":", *first ? "" : ",", k);
	*first = false;
}

static void key_str(struct arn_sb *o, bool *first, const char *k, const char *v)
{
	key(o, first, k);
	arn_sb_json_str(o, v, strlen(v));
}

static void key_time(struct arn_sb *o, bool *first, const char *k, int64_t ms)
{
	key(o, first, k);
	arn_admin_dump_time(o, ms);
}

/*
 * Append JSON object text @p obj (as upb prints a message) as an Any of
 * @p type_url: the same members with "@type" first.
 */
static void put_as_any(struct arn_sb *o, const char *type_url, const char *obj)
{
	arn_sb_puts(o, "{\"@type\":");
	arn_sb_json_str(o, type_url, strlen(type_url));
	const char *p = obj;
	while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
		p++;
	if (*p == '{')
		p++;
	const char *q = p;
	while (*q == ' ' || *q == '\n' || *q == '\t' || *q == '\r')
		q++;
	if (*q != '}')
		arn_sb_putc(o, ',');
	arn_sb_puts(o, p); /* the rest, closing brace included */
}

/* A tree node as an Any of @p type_url (it must be an object). */
static int put_node_as_any(struct arn_sb *o, const char *type_url, struct arn_json *n)
{
	struct arn_sb t = ARN_SB_INIT;
	arn_json_write(n, &t, false);
	if (t.oom) {
		arn_sb_free(&t);
		return -ENOMEM;
	}
	put_as_any(o, type_url, arn_sb_cstr(&t));
	arn_sb_free(&t);
	return 0;
}

/* @p j (a resource's JSON) as an Any, redacted once more by lib/admin's
 * rules: lib/config redacts a TLS certificate's key and password; this also
 * covers generic secrets, session ticket keys and anything a later field
 * adds (Envoy's sensitive fields). */
static int put_redacted_any(struct arn_sb *o, enum arn_cfg_type t, const struct arn_sb *j)
{
	if (j->oom)
		return -ENOMEM;
	struct arn_sb r = ARN_SB_INIT;
	int rc = arn_admin_redact_json(arn_sb_cstr(j), j->len, &r);
	if (rc == 0 && r.oom)
		rc = -ENOMEM;
	if (rc == 0)
		put_as_any(o, arn_config_type_url(t), arn_sb_cstr(&r));
	arn_sb_free(&r);
	return rc;
}

/* The resource behind @p in as an Any, secrets redacted. */
static int put_resource(struct arn_config_store *s, const struct arn_config_resource_info *in,
			struct arn_sb *o)
{
	struct arn_sb j = ARN_SB_INIT;
	int rc = arn_config_resource_json(s, in, &j);
	if (rc == 0)
		rc = put_redacted_any(o, in->type, &j);
	arn_sb_free(&j);
	return rc;
}

/* envoy.admin.v3.UpdateFailureState of the last refused update of a name. */
static void put_error_state(struct arn_config_store *s, struct arn_sb *o,
			    const struct arn_config_resource_info *in)
{
	bool f = true;
	arn_sb_putc(o, '{');
	if (in->has_failed_configuration) {
		/* the refused resource, redacted like active ones; left out when
		 * its bytes do not even decode (refused before conversion) */
		struct arn_sb j = ARN_SB_INIT, any = ARN_SB_INIT;
		if (arn_config_failed_json(s, in, &j) == 0 &&
		    put_redacted_any(&any, in->type, &j) == 0 && !any.oom) {
			key(o, &f, "failed_configuration");
			arn_sb_append(o, arn_sb_cstr(&any), any.len);
		}
		arn_sb_free(&j);
		arn_sb_free(&any);
	}
	if (in->last_error_ms)
		key_time(o, &f, "last_update_attempt", in->last_error_ms);
	key_str(o, &f, "details", in->last_error);
	if (in->error_version && *in->error_version)
		key_str(o, &f, "version_info", in->error_version);
	arn_sb_putc(o, '}');
}

/* ---- one section: everything but listeners ------------------------------------ */

struct family {
	const char *section;
	enum arn_cfg_type type;
	const char *res_field;	 /* "cluster", "route_config", ... */
	const char *static_arr;	 /* "static_clusters" */
	const char *active_arr;	 /* "dynamic_active_clusters" */
	const char *warming_arr; /* NULL: warming ones go with the active ones */
	bool named;		 /* secrets carry their name beside the resource */
};

static const struct family families[] = {
    {SEC_CLUSTERS, ARN_CFG_CLUSTER, "cluster", "static_clusters", "dynamic_active_clusters",
     "dynamic_warming_clusters", false},
    {SEC_ENDPOINTS, ARN_CFG_CLA, "endpoint_config", "static_endpoint_configs",
     "dynamic_endpoint_configs", NULL, false},
    {SEC_ROUTES, ARN_CFG_ROUTE, "route_config", "static_route_configs", "dynamic_route_configs",
     NULL, false},
    {SEC_SECRETS, ARN_CFG_SECRET, "secret", "static_secrets", "dynamic_active_secrets",
     "dynamic_warming_secrets", true},
    /* TDS has no static form and a ToolSet never warms (it waits for no
     * other resource: G5, as routes and clusters) */
    {SEC_TOOLSETS, ARN_CFG_TOOLSET, "tool_set", "static_tool_sets", "dynamic_tool_sets", NULL,
     false},
};

struct arr {
	struct arn_sb sb;
	size_t n;
};

static void arr_open(struct arr *a)
{
	arn_sb_putc(&a->sb, a->n++ ? ',' : '[');
}

static void arr_close_into(struct arr *a, struct arn_sb *o, bool *first, const char *name)
{
	if (a->n == 0)
		return; /* proto3 JSON leaves empty repeated fields out */
	key(o, first, name);
	arn_sb_append(o, a->sb.buf, a->sb.len);
	arn_sb_putc(o, ']');
}

struct walk {
	struct arn_config_store *s;
	const struct family *f;
	struct arr stat, active, warming;
	char *err_name; /* the name whose error_state was shown already */
	int rc;
};

static bool error_shown(struct walk *w, const struct arn_config_resource_info *in)
{
	if (!in->last_error)
		return true;
	if (w->err_name && strcmp(w->err_name, in->name) == 0)
		return true;
	free(w->err_name);
	w->err_name = strdup(in->name);
	return false;
}

static void walk_one(void *ctx, const struct arn_config_resource_info *in)
{
	struct walk *w = ctx;
	const struct family *f = w->f;
	if (w->rc)
		return;
	if (in->is_static) {
		/* xDS cannot change a static resource; its refusals are in the
		 * log and /xds, and Static* messages have no error_state */
		if (in->state == ARN_CONFIG_ERROR_ONLY)
			return;
		struct arn_sb *o = &w->stat.sb;
		arr_open(&w->stat);
		bool first = true;
		arn_sb_putc(o, '{');
		if (f->named)
			key_str(o, &first, "name", in->name);
		if (f->named && in->last_updated_ms)
			key_time(o, &first, "last_updated", in->last_updated_ms);
		key(o, &first, f->res_field);
		w->rc = put_resource(w->s, in, o);
		if (!f->named && in->last_updated_ms)
			key_time(o, &first, "last_updated", in->last_updated_ms);
		arn_sb_putc(o, '}');
		return;
	}
	struct arr *a =
	    in->state == ARN_CONFIG_WARMING && f->warming_arr ? &w->warming : &w->active;
	struct arn_sb *o = &a->sb;
	arr_open(a);
	bool first = true;
	arn_sb_putc(o, '{');
	if (f->named)
		key_str(o, &first, "name", in->name);
	if (in->state != ARN_CONFIG_ERROR_ONLY && *in->version)
		key_str(o, &first, "version_info", in->version);
	if (f->named && in->last_updated_ms)
		key_time(o, &first, "last_updated", in->last_updated_ms);
	if (in->state != ARN_CONFIG_ERROR_ONLY) {
		key(o, &first, f->res_field);
		w->rc = put_resource(w->s, in, o);
	}
	if (!f->named && in->last_updated_ms)
		key_time(o, &first, "last_updated", in->last_updated_ms);
	/* Once per name: on the active version if there is one (the one
	 * that kept serving), else on the warming one, else alone. */
	if (!error_shown(w, in)) {
		key(o, &first, "error_state");
		put_error_state(w->s, o, in);
		key_str(o, &first, "client_status", "NACKED");
	}
	arn_sb_putc(o, '}');
}

/*
 * Inline route_config of the HTTP connection managers of @p listener (a
 * JSON tree of envoy.config.listener.v3.Listener): Envoy lists them as
 * static route configs, whichever way the listener came.
 */
static bool is_hcm(const struct arn_json *tc)
{
	const struct arn_json *t = arn_json_get(tc, "@type");
	return t && t->type == ARN_JSON_STRING &&
	       strcmp(t->str, ARN_TYPE_URL_PREFIX ARN_TYPE_HCM) == 0;
}

static int inline_routes_of_chain(struct walk *w, struct arn_json *chain, int64_t updated)
{
	struct arn_json *filters = arn_json_get(chain, "filters");
	for (size_t i = 0; filters && filters->type == ARN_JSON_ARRAY && i < filters->n; i++) {
		struct arn_json *tc = arn_json_get(filters->v[i], "typed_config");
		struct arn_json *rc = tc && is_hcm(tc) ? arn_json_get(tc, "route_config") : NULL;
		if (rc == NULL || rc->type != ARN_JSON_OBJECT)
			continue;
		struct arn_sb *o = &w->stat.sb;
		arr_open(&w->stat);
		bool first = true;
		arn_sb_putc(o, '{');
		key(o, &first, "route_config");
		int r = put_node_as_any(o, ARN_TYPE_URL_ROUTE, rc);
		if (r)
			return r;
		if (updated)
			key_time(o, &first, "last_updated", updated);
		arn_sb_putc(o, '}');
	}
	return 0;
}

static void inline_routes_one(void *ctx, const struct arn_config_resource_info *in)
{
	struct walk *w = ctx;
	if (w->rc || in->state == ARN_CONFIG_ERROR_ONLY)
		return;
	struct arn_sb j = ARN_SB_INIT;
	if (arn_config_resource_json(w->s, in, &j) != 0 || j.oom) {
		arn_sb_free(&j);
		w->rc = -ENOMEM;
		return;
	}
	struct arn_json *l = arn_json_parse(j.buf, j.len);
	arn_sb_free(&j);
	if (l == NULL) {
		w->rc = -ENOMEM;
		return;
	}
	struct arn_json *chains = arn_json_get(l, "filter_chains");
	for (size_t i = 0; !w->rc && chains && chains->type == ARN_JSON_ARRAY && i < chains->n; i++)
		w->rc = inline_routes_of_chain(w, chains->v[i], in->last_updated_ms);
	struct arn_json *def = arn_json_get(l, "default_filter_chain");
	if (!w->rc && def && def->type == ARN_JSON_OBJECT)
		w->rc = inline_routes_of_chain(w, def, in->last_updated_ms);
	arn_json_free(l);
}

/*
 * STATIC clusters' load_assignment: Envoy lists them as static endpoint
 * configs (with ?include_eds), named by the cluster.
 */
static void static_endpoints_one(void *ctx, const struct arn_config_resource_info *in)
{
	struct walk *w = ctx;
	if (w->rc || in->state != ARN_CONFIG_ACTIVE)
		return;
	struct arn_sb j = ARN_SB_INIT;
	if (arn_config_resource_json(w->s, in, &j) != 0 || j.oom) {
		arn_sb_free(&j);
		w->rc = -ENOMEM;
		return;
	}
	struct arn_json *c = arn_json_parse(j.buf, j.len);
	arn_sb_free(&j);
	if (c == NULL) {
		w->rc = -ENOMEM;
		return;
	}
	const struct arn_json *type = arn_json_get(c, "type");
	bool is_static =
	    arn_json_get(c, "cluster_type") == NULL &&
	    (type == NULL || (type->type == ARN_JSON_STRING && !strcmp(type->str, "STATIC")));
	struct arn_json *la = arn_json_get(c, "load_assignment");
	if (is_static && la && la->type == ARN_JSON_OBJECT) {
		int r = 0;
		if (arn_json_get(la, "cluster_name") == NULL)
			r = arn_json_set_first(la, "cluster_name", arn_json_new_string(in->name));
		struct arn_sb *o = &w->stat.sb;
		arr_open(&w->stat);
		bool first = true;
		arn_sb_putc(o, '{');
		key(o, &first, "endpoint_config");
		if (r == 0)
			r = put_node_as_any(o, ARN_TYPE_URL_CLA, la);
		if (in->last_updated_ms)
			key_time(o, &first, "last_updated", in->last_updated_ms);
		arn_sb_putc(o, '}');
		w->rc = r;
	}
	arn_json_free(c);
}

static int dump_family(struct arn_config_store *s, const struct family *f, struct arn_sb *out)
{
	struct walk w = {.s = s, .f = f};
	if (f->type == ARN_CFG_ROUTE)
		arn_config_foreach(s, ARN_CFG_LISTENER, inline_routes_one, &w);
	if (f->type == ARN_CFG_CLA)
		arn_config_foreach(s, ARN_CFG_CLUSTER, static_endpoints_one, &w);
	if (!w.rc)
		arn_config_foreach(s, f->type, walk_one, &w);
	free(w.err_name);
	if (!w.rc && (w.stat.sb.oom || w.active.sb.oom || w.warming.sb.oom))
		w.rc = -ENOMEM;
	if (!w.rc) {
		bool first = false;
		arn_sb_puts(out, "{\"@type\":\"" ARN_TYPE_URL_PREFIX);
		arn_sb_puts(out, f->section);
		arn_sb_putc(out, '"');
		arr_close_into(&w.stat, out, &first, f->static_arr);
		arr_close_into(&w.active, out, &first, f->active_arr);
		if (f->warming_arr)
			arr_close_into(&w.warming, out, &first, f->warming_arr);
		arn_sb_putc(out, '}');
	}
	arn_sb_free(&w.stat.sb);
	arn_sb_free(&w.active.sb);
	arn_sb_free(&w.warming.sb);
	return w.rc;
}

/* ---- listeners: one DynamicListener per name ---------------------------------- */

struct lwalk {
	struct arn_config_store *s;
	struct arr stat, dyn;
	/* the name being collected */
	char *name;
	struct arn_sb active, warming, error;
	bool has_active, has_warming, has_error;
	int rc;
};

static void listener_state(struct lwalk *w, const struct arn_config_resource_info *in,
			   struct arn_sb *o)
{
	bool first = true;
	arn_sb_putc(o, '{');
	if (*in->version)
		key_str(o, &first, "version_info", in->version);
	key(o, &first, "listener");
	w->rc = put_resource(w->s, in, o);
	if (in->last_updated_ms)
		key_time(o, &first, "last_updated", in->last_updated_ms);
	arn_sb_putc(o, '}');
}

static void lflush(struct lwalk *w)
{
	if (w->name == NULL)
		return;
	struct arn_sb *o = &w->dyn.sb;
	arr_open(&w->dyn);
	bool first = true;
	arn_sb_putc(o, '{');
	key_str(o, &first, "name", w->name);
	if (w->has_active) {
		key(o, &first, "active_state");
		arn_sb_append(o, w->active.buf, w->active.len);
	}
	if (w->has_warming) {
		key(o, &first, "warming_state");
		arn_sb_append(o, w->warming.buf, w->warming.len);
	}
	/* No draining_state: a replaced listener is dropped from the next
	 * generation at once; connections that still use it hold a pin. */
	if (w->has_error) {
		key(o, &first, "error_state");
		arn_sb_append(o, w->error.buf, w->error.len);
		key_str(o, &first, "client_status", "NACKED");
	}
	arn_sb_putc(o, '}');
	free(w->name);
	w->name = NULL;
	arn_sb_reset(&w->active);
	arn_sb_reset(&w->warming);
	arn_sb_reset(&w->error);
	w->has_active = w->has_warming = w->has_error = false;
}

static void listener_one(void *ctx, const struct arn_config_resource_info *in)
{
	struct lwalk *w = ctx;
	if (w->rc)
		return;
	if (in->is_static) {
		if (in->state == ARN_CONFIG_ERROR_ONLY)
			return;
		struct arn_sb *o = &w->stat.sb;
		arr_open(&w->stat);
		bool first = true;
		arn_sb_putc(o, '{');
		key(o, &first, "listener");
		w->rc = put_resource(w->s, in, o);
		if (in->last_updated_ms)
			key_time(o, &first, "last_updated", in->last_updated_ms);
		arn_sb_putc(o, '}');
		return;
	}
	if (w->name == NULL || strcmp(w->name, in->name) != 0) {
		lflush(w);
		w->name = strdup(in->name);
		if (w->name == NULL) {
			w->rc = -ENOMEM;
			return;
		}
	}
	if (in->state == ARN_CONFIG_ACTIVE) {
		w->has_active = true;
		listener_state(w, in, &w->active);
	} else if (in->state == ARN_CONFIG_WARMING) {
		w->has_warming = true;
		listener_state(w, in, &w->warming);
	}
	if (in->last_error && !w->has_error) {
		w->has_error = true;
		put_error_state(w->s, &w->error, in);
	}
}

static int dump_listeners(struct arn_config_store *s, struct arn_sb *out)
{
	struct lwalk w = {.s = s};
	arn_config_foreach(s, ARN_CFG_LISTENER, listener_one, &w);
	if (!w.rc)
		lflush(&w);
	free(w.name);
	if (!w.rc &&
	    (w.stat.sb.oom || w.dyn.sb.oom || w.active.oom || w.warming.oom || w.error.oom))
		w.rc = -ENOMEM;
	if (!w.rc) {
		bool first = false;
		arn_sb_puts(out, "{\"@type\":\"" ARN_TYPE_URL_PREFIX SEC_LISTENERS "\"");
		arr_close_into(&w.stat, out, &first, "static_listeners");
		arr_close_into(&w.dyn, out, &first, "dynamic_listeners");
		arn_sb_putc(out, '}');
	}
	arn_sb_free(&w.stat.sb);
	arn_sb_free(&w.dyn.sb);
	arn_sb_free(&w.active);
	arn_sb_free(&w.warming);
	arn_sb_free(&w.error);
	return w.rc;
}

int arn_admin_config_dump(struct arn_config_store *s, const char *type_name, struct arn_sb *out)
{
	if (s == NULL || type_name == NULL)
		return -EINVAL;
	size_t mark = out->len;
	int rc = -EINVAL;
	if (strcmp(type_name, SEC_LISTENERS) == 0)
		rc = dump_listeners(s, out);
	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++)
		if (strcmp(type_name, families[i].section) == 0)
			rc = dump_family(s, &families[i], out);
	if (rc == 0 && out->oom)
		rc = -ENOMEM;
	if (rc != 0) {
		out->len = mark;
		if (out->buf)
			out->buf[mark] = '\0';
	}
	return rc;
}

/* ---- /ready ---------------------------------------------------------------------- */

struct warm_list {
	struct arn_sb *why;
	size_t n;
};

static void warm_one(void *ctx, const struct arn_config_resource_info *in)
{
	struct warm_list *wl = ctx;
	if (in->state != ARN_CONFIG_WARMING)
		return;
	if (wl->n < 5)
		arn_sb_printf(wl->why, "%s%s '%s'", wl->n ? ", " : "",
			      arn_config_type_name(in->type), in->name);
	wl->n++;
}

bool arn_admin_config_ready(struct arn_config_store *s, struct arn_sb *why)
{
	if (s == NULL) {
		arn_sb_puts(why, "no configuration store");
		return false;
	}
	if (arn_config_ready(s))
		return true;
	struct arn_sb w = ARN_SB_INIT;
	struct warm_list wl = {&w, 0};
	for (int t = 0; t < ARN_CFG_NTYPES; t++)
		arn_config_foreach(s, (enum arn_cfg_type)t, warm_one, &wl);
	if (wl.n == 0)
		arn_sb_puts(why, "waiting for the initial xDS fetch (the first Cluster and "
				 "Listener responses, or their initial_fetch_timeout)");
	else
		arn_sb_printf(why,
			      "initial xDS fetch: %zu resource%s warming until what %s "
			      "arrives: %s%s",
			      wl.n, wl.n == 1 ? "" : "s",
			      wl.n == 1 ? "it references" : "they reference", arn_sb_cstr(&w),
			      wl.n > 5 ? ", ..." : "");
	arn_sb_free(&w);
	return false;
}

/* ---- /clusters and /listeners -------------------------------------------------- */

/* What Envoy's /clusters shows as eds_health_status: the EDS flag it keeps
 * (failed / degraded / draining), so UNKNOWN reads HEALTHY and TIMEOUT,
 * which counts as failed, UNHEALTHY. */
static const char *eds_health_name(uint8_t h)
{
	switch (h) {
	case ARN_CFG_HEALTH_UNHEALTHY:
	case ARN_CFG_HEALTH_TIMEOUT:
		return "UNHEALTHY";
	case ARN_CFG_HEALTH_DRAINING:
		return "DRAINING";
	case ARN_CFG_HEALTH_DEGRADED:
		return "DEGRADED";
	default:
		return "HEALTHY";
	}
}

/* Envoy's health_flags text for what EDS says; the data plane's host
 * stats (arn_admin_set_host_stats) put /failed_active_hc before it. */
static const char *health_flags(uint8_t h)
{
	switch (h) {
	case ARN_CFG_HEALTH_UNHEALTHY:
	case ARN_CFG_HEALTH_TIMEOUT:
		return "/failed_eds_health";
	case ARN_CFG_HEALTH_DRAINING:
		return "/eds_status_draining";
	case ARN_CFG_HEALTH_DEGRADED:
		return "/degraded_eds_health";
	default:
		return "healthy";
	}
}

static void ip4(uint32_t a, char *buf, size_t cap)
{
	snprintf(buf, cap, "%u.%u.%u.%u", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255);
}

static arn_admin_host_stats_fn host_stats_fn;
static void *host_stats_arg;

void arn_admin_set_host_stats(arn_admin_host_stats_fn fn, void *arg)
{
	host_stats_fn = fn;
	host_stats_arg = fn ? arg : NULL;
}

struct cwalk {
	struct arn_config_store *s;
	const struct arn_cfg_gen *g;
	struct arn_admin_clusters *out;
};

static void cluster_one(void *ctx, const struct arn_config_resource_info *in)
{
	struct cwalk *w = ctx;
	if (in->state != ARN_CONFIG_ACTIVE)
		return; /* Envoy lists the clusters that serve, not warming ones */
	struct arn_cfg_ref ref = {in->name, strlen(in->name),
				  arn_cfg_hash(in->name, strlen(in->name))};
	struct arn_cfg_cluster_view v;
	if (arn_cfg_cluster_resolve(w->g, &ref, &v) != 0)
		return;
	const struct arn_cfg_cluster *c = v.cluster;
	struct arn_admin_cluster_info ci = {
	    .name = in->name,
	    .observability_name = c->alt_stat_name,
	    .added_via_api = !in->is_static,
	    .max_connections = c->thresholds[0].max_connections,
	    .max_pending_requests = c->thresholds[0].max_pending_requests,
	    .max_requests = c->thresholds[0].max_requests,
	    .max_retries = c->thresholds[0].max_retries,
	};
	arn_admin_clusters_add_cluster(w->out, &ci);
	const struct arn_cfg_endpoints *e = v.endpoints;
	for (size_t p = 0; e && p < e->n_priorities; p++) {
		const struct arn_cfg_priority *pr = &e->priorities[p];
		for (size_t l = 0; l < pr->n_localities; l++) {
			const struct arn_cfg_locality *lo = &pr->localities[l];
			for (size_t k = 0; k < lo->n_endpoints; k++) {
				const struct arn_cfg_endpoint *ep = &lo->endpoints[k];
				char addr[16];
				ip4(ep->addr, addr, sizeof(addr));
				struct arn_admin_host_info h = {
				    .address = addr,
				    .port = ep->port,
				    .hostname = ep->hostname ? ep->hostname : "",
				    .weight = ep->weight,
				    .priority = (uint32_t)p,
				    .region = lo->region,
				    .zone = lo->zone,
				    .sub_zone = lo->sub_zone,
				    .health_flags = health_flags(ep->health),
				    .eds_health_status = eds_health_name(ep->health),
				};
				/* connection and request counts: lib/http's */
				if (host_stats_fn)
					host_stats_fn(host_stats_arg, in->name, ep->addr, ep->port,
						      &h);
				arn_admin_clusters_add_host(w->out, &h);
			}
		}
	}
}

static void clusters_walk(struct arn_admin_clusters *out, void *arg)
{
	struct arn_config_store *s = arg;
	struct cwalk w = {s, arn_config_gen(s), out};
	arn_config_foreach(s, ARN_CFG_CLUSTER, cluster_one, &w);
}

struct lsort {
	const struct arn_cfg_listener **v;
	size_t n, cap;
};

static void lcollect(void *ctx, const struct arn_cfg_listener *l)
{
	struct lsort *ls = ctx;
	if (ls->n == ls->cap) {
		size_t cap = ls->cap ? 2 * ls->cap : 16;
		const struct arn_cfg_listener **v = realloc(ls->v, cap * sizeof(*v));
		if (v == NULL)
			return;
		ls->v = v;
		ls->cap = cap;
	}
	ls->v[ls->n++] = l;
}

static int lname_cmp(const void *a, const void *b)
{
	const struct arn_cfg_listener *x = *(const struct arn_cfg_listener *const *)a;
	const struct arn_cfg_listener *y = *(const struct arn_cfg_listener *const *)b;
	return strcmp(x->obj.name, y->obj.name);
}

static void listeners_walk(struct arn_admin_listeners *out, void *arg)
{
	struct arn_config_store *s = arg;
	struct lsort ls = {0};
	arn_cfg_listener_foreach(arn_config_gen(s), lcollect, &ls);
	if (ls.n > 1)
		qsort(ls.v, ls.n, sizeof(ls.v[0]), lname_cmp);
	for (size_t i = 0; i < ls.n; i++) {
		char addr[16];
		ip4(ls.v[i]->addr, addr, sizeof(addr));
		struct arn_admin_listener_info li = {ls.v[i]->obj.name, addr, ls.v[i]->port};
		arn_admin_listeners_add(out, &li);
	}
	free(ls.v);
}

/* ---- config.* statistics ----------------------------------------------------- */

struct stat_emit {
	struct arn_stats_emitter *e;
};

static void stat_one(void *ctx, const char *name, const char *help, uint64_t value)
{
	struct stat_emit *se = ctx;
	bool gauge = strncmp(help, "gauge:", 6) == 0;
	arn_stats_emit(se->e, gauge ? ARN_STAT_GAUGE : ARN_STAT_COUNTER, "config", NULL, NULL, name,
		       (int64_t)value);
}

static void pull_config_stats(struct arn_stats_emitter *e, void *arg)
{
	struct arn_config_stats st;
	arn_config_get_stats(arg, &st);
	struct stat_emit se = {e};
	arn_config_stats_foreach(&st, stat_one, &se);
}

/* ---- registration ------------------------------------------------------------------ */

static const char *const sections[] = {SEC_CLUSTERS, SEC_ENDPOINTS, SEC_LISTENERS,
				       SEC_ROUTES,   SEC_SECRETS,   SEC_TOOLSETS};
#define N_SECTIONS (sizeof(sections) / sizeof(sections[0]))

struct arn_admin_config {
	struct arn_config_store *s;
	bool dump[N_SECTIONS];
	bool ready, clusters, listeners, stats;
};

static struct arn_admin_config *registered;

struct section_arg {
	struct arn_admin_config *a;
	size_t i;
};
static struct section_arg section_args[N_SECTIONS];

static int dump_section(struct arn_sb *out, void *arg)
{
	const struct section_arg *sa = arg;
	return arn_admin_config_dump(sa->a->s, sections[sa->i], out);
}

static bool ready_cond(struct arn_sb *why, void *arg)
{
	struct arn_admin_config *a = arg;
	return arn_admin_config_ready(a->s, why);
}

struct arn_admin_config *arn_admin_config_start(struct arn_config_store *s)
{
	if (s == NULL)
		return NULL;
	if (registered != NULL) {
		ARN_ERR(ADMIN, "a configuration store is registered already");
		return NULL;
	}
	struct arn_admin_config *a = calloc(1, sizeof(*a));
	if (a == NULL) {
		ARN_ERR(ADMIN, "configuration views: out of memory");
		return NULL;
	}
	a->s = s;
	registered = a;
	int rc = 0;
	for (size_t i = 0; i < N_SECTIONS; i++) {
		section_args[i] = (struct section_arg){a, i};
		int r = arn_admin_config_dump_register(sections[i], dump_section, &section_args[i]);
		a->dump[i] = r == 0;
		rc = rc ? rc : r;
	}
	int r = arn_admin_ready_register("config", ready_cond, a);
	a->ready = r == 0;
	rc = rc ? rc : r;
	r = arn_admin_clusters_register(clusters_walk, s);
	a->clusters = r == 0;
	rc = rc ? rc : r;
	r = arn_admin_listeners_register(listeners_walk, s);
	a->listeners = r == 0;
	rc = rc ? rc : r;
	r = arn_stats_pull_register(pull_config_stats, s);
	a->stats = r == 0;
	rc = rc ? rc : r;
	if (rc != 0) {
		ARN_ERR(ADMIN, "cannot register the configuration's admin views: %s",
			strerror(-rc));
		arn_admin_config_stop(a);
		return NULL;
	}
	return a;
}

void arn_admin_config_stop(struct arn_admin_config *a)
{
	if (a == NULL)
		return;
	for (size_t i = 0; i < N_SECTIONS; i++)
		if (a->dump[i])
			arn_admin_config_dump_unregister(sections[i]);
	if (a->ready)
		arn_admin_ready_unregister("config");
	if (a->clusters)
		arn_admin_clusters_unregister(clusters_walk, a->s);
	if (a->listeners)
		arn_admin_listeners_unregister(listeners_walk, a->s);
	if (a->stats)
		arn_stats_pull_unregister(pull_config_stats, a->s);
	if (registered == a)
		registered = NULL;
	free(a);
}
