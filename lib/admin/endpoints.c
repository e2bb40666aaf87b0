/*
 * The built-in admin endpoints, registered like any module's handlers.
 * Texts and shapes follow Envoy's admin API where Envoy has the endpoint.
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "envoy/config/bootstrap/v3/bootstrap.upb.h"

#include "admin_int.h"
#include "arn_access_log.h"
#include "arn_bootstrap.h"
#include "arn_log.h"
#include "arn_proto.h"
#include "arn_json.h"
#include "arn_stats_snapshot.h"

#define CT_TEXT "text/plain; charset=UTF-8"
#define CT_JSON "application/json"
#define CT_PROM "text/plain; version=0.0.4; charset=UTF-8"

int64_t arn_admin_now_ms_(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool want_json(const struct arn_admin_request *req)
{
	char f[32];
	return arn_admin_query(req, "format", f, sizeof(f)) && strcmp(f, "json") == 0;
}

/*
 * Query parameter @p key into @p buf, whole: a value cut to the buffer
 * would be used as another one (a cut filter matching other stats, a cut
 * mask selecting other fields), so it is refused with 400 naming it.
 * @return true with *@p val the value or NULL (absent); false when refused
 * (@p resp filled in).
 */
static bool query_arg(const struct arn_admin_request *req, struct arn_admin_response *resp,
		      const char *key, char *buf, size_t cap, const char **val)
{
	ssize_t n = arn_admin_query_whole(req, key, buf, cap);
	*val = n >= 0 ? buf : NULL;
	if (n >= 0 || n == -ENOENT)
		return true;
	resp->status = 400;
	if (n == -E2BIG)
		arn_sb_printf(&resp->body,
			      "query parameter '%s' is too long (%zu bytes at most, decoded)\n",
			      key, cap - 1);
	else
		arn_sb_printf(&resp->body, "query parameter '%s' holds a NUL (%%00)\n", key);
	return false;
}

/* ---- help ---------------------------------------------------------------- */

void arn_admin_help_(struct arn_sb *out)
{
	arn_sb_puts(out, "admin commands are:\n");
	for (const struct arn_admin_handler *h = arn_admin_handlers_(); h; h = h->next)
		arn_sb_printf(out, "  %s%s: %s\n", h->path,
			      h->methods == ARN_ADMIN_POST ? " (POST)" : "", h->help);
}

static void h_help(const struct arn_admin_request *req, struct arn_admin_response *resp, void *arg)
{
	(void)req;
	(void)arg;
	arn_admin_help_(&resp->body);
}

/* ---- /ready, health checks, /quitquitquit --------------------------------- */

static void h_ready(const struct arn_admin_request *req, struct arn_admin_response *resp, void *arg)
{
	(void)req;
	(void)arg;
	struct arn_sb why = ARN_SB_INIT;
	enum arn_admin_state st = arn_admin_state(&why);
	arn_sb_printf(&resp->body, "%s\n", arn_admin_state_name(st));
	if (st != ARN_ADMIN_STATE_LIVE) {
		resp->status = 503;
		arn_sb_puts(&resp->body, arn_sb_cstr(&why));
	}
	arn_sb_free(&why);
}

/* The state is the admin's (/ready); the data plane hears of it through
 * the application's hook, since nothing on a worker calls lib/admin. */
static void set_healthcheck(const struct arn_admin_ctx *ctx, bool failed)
{
	arn_admin_set_healthcheck_failed(failed);
	if (ctx->healthcheck_changed)
		ctx->healthcheck_changed(failed, ctx->healthcheck_arg);
}

static void h_hc_fail(const struct arn_admin_request *req, struct arn_admin_response *resp,
		      void *arg)
{
	(void)req;
	if (!arn_admin_healthcheck_failed())
		ARN_WARN(ADMIN, "POST /healthcheck/fail: failing health checks (draining) until "
				"POST /healthcheck/ok");
	set_healthcheck(arg, true);
	arn_sb_puts(&resp->body, "OK\n");
}

static void h_hc_ok(const struct arn_admin_request *req, struct arn_admin_response *resp, void *arg)
{
	(void)req;
	if (arn_admin_healthcheck_failed())
		ARN_WARN(ADMIN, "POST /healthcheck/ok: passing health checks again");
	set_healthcheck(arg, false);
	arn_sb_puts(&resp->body, "OK\n");
}

static void h_quit(const struct arn_admin_request *req, struct arn_admin_response *resp, void *arg)
{
	(void)req;
	struct arn_admin_ctx *ctx = arg;
	ARN_WARN(ADMIN, "POST /quitquitquit: stopping");
	if (ctx->stop)
		*ctx->stop = 1;
	arn_sb_puts(&resp->body, "OK\n");
}

/* ---- /logging --------------------------------------------------------------- */

static void list_loggers(struct arn_sb *out)
{
	arn_sb_puts(out, "active loggers:\n");
	for (int m = 0; m < ARN_LOGM_COUNT; m++)
		arn_sb_printf(out, "  %s: %s\n", arn_log_module_name((enum arn_log_module)m),
			      arn_log_level_name(arn_log_levels[m]));
}

static void h_logging(const struct arn_admin_request *req, struct arn_admin_response *resp,
		      void *arg)
{
	(void)arg;
	/* ?level=L (all), ?paths=mod:L,mod:L (Envoy's), or ?mod=L per module. */
	struct arn_sb spec = ARN_SB_INIT;
	char key[64], val[256];
	const char *q = req->query;
	while (*q) {
		const char *amp = strchr(q, '&');
		size_t n = amp ? (size_t)(amp - q) : strlen(q);
		const char *eq = memchr(q, '=', n);
		size_t kl = eq ? (size_t)(eq - q) : n;
		if (kl > 0 && kl < sizeof(key)) {
			memcpy(key, q, kl);
			key[kl] = '\0';
			const char *v;
			if (!query_arg(req, resp, key, val, sizeof(val), &v)) {
				arn_sb_free(&spec);
				return;
			}
			if (v != NULL) {
				if (spec.len)
					arn_sb_putc(&spec, ',');
				if (!strcmp(key, "level") || !strcmp(key, "paths"))
					arn_sb_puts(&spec, val);
				else
					arn_sb_printf(&spec, "%s:%s", key, val);
			}
		} else if (kl > 0) {
			arn_sb_puts(&spec, ",?"); /* too long: certainly not a module */
		}
		q += n + (amp ? 1 : 0);
	}
	if (spec.len) {
		const char *bad = NULL;
		if (arn_log_set_spec(arn_sb_cstr(&spec), &bad) != 0) {
			resp->status = 400;
			arn_sb_printf(
			    &resp->body,
			    "invalid logging request: '%s' is not a level (trace, debug, info, "
			    "warning, error, critical, off) or MODULE:LEVEL\n"
			    "usage: POST /logging?level=LEVEL | ?MODULE=LEVEL | "
			    "?paths=MODULE:LEVEL,...\n",
			    bad ? bad : arn_sb_cstr(&spec));
			list_loggers(&resp->body);
			arn_sb_free(&spec);
			return;
		}
		ARN_INFO(ADMIN, "POST /logging: levels now %s", arn_sb_cstr(&spec));
	}
	arn_sb_free(&spec);
	list_loggers(&resp->body);
}

/* ---- /stats -------------------------------------------------------------- */

static void stats_common(const struct arn_admin_request *req, struct arn_admin_response *resp,
			 int format /* 0 text, 1 json, 2 prometheus */)
{
	char re[1024], type[32];
	struct arn_admin_stats_filter_opts o = {
	    .used_only = arn_admin_query(req, "usedonly", (char[2]){0}, 2) != NULL,
	};
	if (!query_arg(req, resp, "filter", re, sizeof(re), &o.regex) ||
	    !query_arg(req, resp, "type", type, sizeof(type), &o.type))
		return;
	void *f = NULL;
	if (arn_admin_stats_filter_init_(&o, &resp->body, &f) != 0) {
		resp->status = 400;
		return;
	}
	struct arn_stats_snapshot s;
	if (arn_stats_snapshot_take(&s) != 0) {
		resp->status = 500;
		arn_sb_puts(&resp->body, "out of memory collecting stats\n");
	} else if (format == 1) {
		resp->content_type = CT_JSON;
		arn_admin_stats_json_(&s, f, &resp->body);
	} else if (format == 2) {
		resp->content_type = CT_PROM;
		arn_admin_stats_prometheus_(&s, f, &resp->body);
	} else {
		arn_admin_stats_text_(&s, f, &resp->body);
	}
	arn_stats_snapshot_free(&s);
	arn_admin_stats_filter_free_(f);
}

static void h_stats(const struct arn_admin_request *req, struct arn_admin_response *resp, void *arg)
{
	(void)arg;
	char f[32];
	const char *fv;
	int fmt = 0;
	if (!query_arg(req, resp, "format", f, sizeof(f), &fv))
		return;
	if (fv) {
		if (!strcmp(f, "json"))
			fmt = 1;
		else if (!strcmp(f, "prometheus"))
			fmt = 2;
		else if (strcmp(f, "text") != 0) {
			resp->status = 400;
			arn_sb_printf(&resp->body,
				      "invalid format '%s': use json, prometheus or text\n", f);
			return;
		}
	}
	stats_common(req, resp, fmt);
}

static void h_prom(const struct arn_admin_request *req, struct arn_admin_response *resp, void *arg)
{
	(void)arg;
	stats_common(req, resp, 2);
}

/* ---- /clusters, /listeners -------------------------------------------------- */

static void h_clusters(const struct arn_admin_request *req, struct arn_admin_response *resp,
		       void *arg)
{
	(void)arg;
	bool json = want_json(req);
	if (json)
		resp->content_type = CT_JSON;
	arn_admin_clusters_write_(&resp->body, json);
}

static void h_listeners(const struct arn_admin_request *req, struct arn_admin_response *resp,
			void *arg)
{
	(void)arg;
	bool json = want_json(req);
	if (json)
		resp->content_type = CT_JSON;
	arn_admin_listeners_write_(&resp->body, json);
}

/* ---- /config_dump ----------------------------------------------------------- */

static int dump_bootstrap(struct arn_sb *out, void *arg)
{
	struct arn_admin_ctx *ctx = arg;
	const struct arn_bootstrap *b = ctx->bs;
	if (b == NULL || b->pb == NULL)
		return -ENOENT;
	struct arn_sb js = ARN_SB_INIT;
	int rc = arn_proto_to_json((const upb_Message *)b->pb, arn_proto_msgdef(ARN_TYPE_BOOTSTRAP),
				   &js);
	if (rc != 0) {
		arn_sb_free(&js);
		return rc;
	}
	arn_sb_puts(out, "{\"@type\":\"" ARN_TYPE_URL_PREFIX "envoy.admin.v3.BootstrapConfigDump\","
			 "\"bootstrap\":");
	rc = arn_admin_redact_json(js.buf ? js.buf : "{}", js.len, out);
	arn_sb_puts(out, ",\"last_updated\":");
	arn_admin_dump_time(out, ctx->start_ms);
	arn_sb_putc(out, '}');
	arn_sb_free(&js);
	return rc;
}

static const char *section_type(const struct arn_json *sec)
{
	const struct arn_json *t = arn_json_get(sec, "@type");
	if (t == NULL || t->type != ARN_JSON_STRING)
		return NULL;
	const char *slash = strrchr(t->str, '/');
	return slash ? slash + 1 : t->str;
}

/* ?resource=F: each element of repeated field F across sections. */
static int dump_resources(struct arn_json *doc, const char *field, const char *mask,
			  struct arn_json *out_configs, struct arn_sb *err)
{
	struct arn_json *configs = arn_json_get(doc, "configs");
	bool known = false;
	for (size_t i = 0; configs && i < configs->n; i++) {
		struct arn_json *sec = configs->v[i];
		const char *tn = section_type(sec);
		const upb_MessageDef *md = tn ? arn_proto_msgdef(tn) : NULL;
		const upb_FieldDef *fd = md ? upb_MessageDef_FindFieldByName(md, field) : NULL;
		if (fd == NULL)
			continue;
		if (!upb_FieldDef_IsRepeated(fd) || upb_FieldDef_MessageSubDef(fd) == NULL) {
			arn_sb_printf(err,
				      "%s.%s is not a repeated message field; ?resource= takes "
				      "one, such as dynamic_active_clusters\n",
				      tn, field);
			return -EINVAL;
		}
		known = true;
		const char *et = upb_MessageDef_FullName(upb_FieldDef_MessageSubDef(fd));
		struct arn_json *arr = arn_json_get(sec, field);
		if (arr == NULL || arr->type != ARN_JSON_ARRAY)
			continue;
		for (size_t k = 0; k < arr->n; k++) {
			struct arn_json *el = arn_json_take(arr, k);
			if (el == NULL)
				return -ENOMEM;
			if (el->type == ARN_JSON_OBJECT) {
				char url[512];
				snprintf(url, sizeof(url), ARN_TYPE_URL_PREFIX "%s", et);
				if (arn_json_set_first(el, "@type", arn_json_new_string(url)) !=
				    0) {
					arn_json_free(el);
					return -ENOMEM;
				}
				if (mask)
					arn_json_mask(el, mask);
			}
			if (arn_json_push(out_configs, el) != 0)
				return -ENOMEM;
		}
	}
	if (!known) {
		arn_sb_printf(err,
			      "no config dump section has a field '%s' (try "
			      "dynamic_active_clusters, static_listeners, dynamic_route_configs, "
			      "dynamic_active_secrets, ...)\n",
			      field);
		return -ENOENT;
	}
	return 0;
}

static void h_config_dump(const struct arn_admin_request *req, struct arn_admin_response *resp,
			  void *arg)
{
	(void)arg;
	char resource[128], mask[1024], incl[8];
	const char *res, *msk;
	if (!query_arg(req, resp, "resource", resource, sizeof(resource), &res) ||
	    !query_arg(req, resp, "mask", mask, sizeof(mask), &msk))
		return;
	bool include_eds = arn_admin_query(req, "include_eds", incl, sizeof(incl)) != NULL;
	if (res && !*res)
		res = NULL;
	if (msk && !*msk)
		msk = NULL;
	struct arn_sb raw = ARN_SB_INIT;
	arn_admin_config_dump_build_(&raw, include_eds || (res && strstr(res, "endpoint")));
	struct arn_json *doc = raw.oom ? NULL : arn_json_parse(raw.buf, raw.len);
	if (doc == NULL) {
		resp->status = 500;
		arn_sb_puts(&resp->body, raw.oom
					     ? "out of memory building the config dump\n"
					     : "a config dump provider produced invalid JSON\n");
		ARN_ERR(ADMIN, "/config_dump: %s",
			raw.oom ? "out of memory" : "a provider produced invalid JSON");
		arn_sb_free(&raw);
		return;
	}
	arn_sb_free(&raw);
	/* Providers redact their own secrets; this is the safety net. */
	arn_json_redact(doc);
	resp->content_type = CT_JSON;
	if (res) {
		struct arn_json *out = arn_json_parse("{\"configs\":[]}", 14);
		struct arn_sb err = ARN_SB_INIT;
		int rc = out ? dump_resources(doc, res, msk, arn_json_get(out, "configs"), &err)
			     : -ENOMEM;
		if (rc == 0) {
			arn_json_write(out, &resp->body, true);
		} else {
			resp->status = rc == -ENOENT ? 404 : rc == -EINVAL ? 400 : 500;
			resp->content_type = CT_TEXT;
			arn_sb_puts(&resp->body, err.len ? arn_sb_cstr(&err) : "out of memory\n");
		}
		arn_sb_free(&err);
		arn_json_free(out);
	} else {
		struct arn_json *configs = arn_json_get(doc, "configs");
		for (size_t i = 0; msk && configs && i < configs->n; i++)
			arn_json_mask(configs->v[i], msk);
		arn_json_write(doc, &resp->body, true);
	}
	arn_sb_putc(&resp->body, '\n');
	arn_json_free(doc);
}

/* ---- /server_info ------------------------------------------------------------ */

static const char *opt_value(int argc, char **argv, const char *shrt, const char *lng)
{
	size_t ll = strlen(lng);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if ((shrt && !strcmp(argv[i], shrt)) || !strcmp(argv[i], lng))
			return i + 1 < argc ? argv[i + 1] : NULL;
		if (!strncmp(argv[i], lng, ll) && argv[i][ll] == '=')
			return argv[i] + ll + 1;
	}
	return NULL;
}

static void json_kv(struct arn_sb *o, const char *k, const char *v, bool *first)
{
	if (v == NULL)
		return;
	arn_sb_printf(o, "%s\"%s\":", *first ? "" : ",", k);
	arn_sb_json_str(o, v, strlen(v));
	*first = false;
}

static void h_server_info(const struct arn_admin_request *req, struct arn_admin_response *resp,
			  void *arg)
{
	(void)req;
	struct arn_admin_ctx *ctx = arg;
	struct arn_sb *o = &resp->body;
	struct arn_sb why = ARN_SB_INIT;
	enum arn_admin_state st = arn_admin_state(&why);
	long long up = (long long)((mono_ms() - ctx->start_mono_ms) / 1000);
	resp->content_type = CT_JSON;
	arn_sb_puts(o, "{\"version\":\"arion/" ARN_VERSION "/Clean/RELEASE/OpenSSL\",\"state\":");
	arn_sb_printf(o, "\"%s\",\"hot_restart_version\":\"disabled\"", arn_admin_state_name(st));
	arn_sb_puts(o, ",\"command_line_options\":{");
	bool first = true;
	int ac = ctx->argc;
	char **av = ctx->argv;
	json_kv(o, "config_path", opt_value(ac, av, "-c", "--config-path"), &first);
	json_kv(o, "log_level", opt_value(ac, av, "-l", "--log-level"), &first);
	json_kv(o, "service_node", opt_value(ac, av, NULL, "--service-node"), &first);
	json_kv(o, "service_cluster", opt_value(ac, av, NULL, "--service-cluster"), &first);
	arn_sb_printf(o, "%s\"concurrency\":%u,\"mode\":\"Serve\",\"restart_epoch\":0}",
		      first ? "" : ",", arn_stats_workers());
	if (ctx->bs && ctx->bs->pb) {
		const upb_Message *node =
		    (const upb_Message *)envoy_config_bootstrap_v3_Bootstrap_node(ctx->bs->pb);
		struct arn_sb nj = ARN_SB_INIT;
		struct arn_json *n = NULL;
		if (node == NULL ||
		    arn_proto_to_json(node, arn_proto_msgdef("envoy.config.core.v3.Node"), &nj) ==
			0)
			n = arn_json_parse(nj.len ? nj.buf : "{}", nj.len ? nj.len : 2);
		if (n) {
			/* --service-node / --service-cluster win (X7) */
			if (ctx->bs->node_id && *ctx->bs->node_id)
				arn_json_set(n, "id", arn_json_new_string(ctx->bs->node_id));
			if (ctx->bs->node_cluster && *ctx->bs->node_cluster)
				arn_json_set(n, "cluster",
					     arn_json_new_string(ctx->bs->node_cluster));
			arn_sb_puts(o, ",\"node\":");
			arn_json_write(n, o, false);
			arn_json_free(n);
		}
		arn_sb_free(&nj);
	}
	arn_sb_printf(o, ",\"uptime_current_epoch\":\"%llds\",\"uptime_all_epochs\":\"%llds\"", up,
		      up);
	arn_sb_puts(o, ",\"command_line\":[");
	for (int i = 0; i < ac; i++) {
		if (i)
			arn_sb_putc(o, ',');
		arn_sb_json_str(o, av[i], strlen(av[i]));
	}
	arn_sb_puts(o, "]");
	if (why.len) {
		arn_sb_puts(o, ",\"not_ready\":[");
		const char *p = arn_sb_cstr(&why);
		bool f = true;
		while (*p) {
			const char *nl = strchr(p, '\n');
			size_t n = nl ? (size_t)(nl - p) : strlen(p);
			if (!f)
				arn_sb_putc(o, ',');
			arn_sb_json_str(o, p, n);
			f = false;
			p += n + (nl ? 1 : 0);
		}
		arn_sb_putc(o, ']');
	}
	arn_sb_puts(o, "}\n");
	arn_sb_free(&why);
}

/* ---- /memory, /reopen_logs ------------------------------------------------- */

static void h_memory(const struct arn_admin_request *req, struct arn_admin_response *resp,
		     void *arg)
{
	(void)req;
	(void)arg;
	struct mallinfo2 mi = mallinfo2();
	resp->content_type = CT_JSON;
	arn_sb_printf(&resp->body,
		      "{\"allocated\":\"%zu\",\"heap_size\":\"%zu\",\"pageheap_unmapped\":\"0\","
		      "\"pageheap_free\":\"%zu\",\"total_thread_cache\":\"0\","
		      "\"total_physical_bytes\":\"%zu\"}\n",
		      mi.uordblks + mi.hblkhd, mi.arena + mi.hblkhd, mi.fordblks,
		      mi.arena + mi.hblkhd);
}

static void h_reopen(const struct arn_admin_request *req, struct arn_admin_response *resp,
		     void *arg)
{
	(void)req;
	(void)arg;
	int rc = arn_access_log_reopen();
	if (rc != 0) {
		resp->status = 500;
		arn_sb_printf(&resp->body, "reopening access logs failed: %s\n", strerror(-rc));
		return;
	}
	arn_sb_puts(&resp->body, "OK\n");
}

/* ---- server.* stats ----------------------------------------------------------- */

static void pull_server(struct arn_stats_emitter *e, void *arg)
{
	struct arn_admin_ctx *ctx = arg;
	enum arn_admin_state st = arn_admin_state(NULL);
	arn_stats_emit(e, ARN_STAT_GAUGE, "server", NULL, NULL, "uptime",
		       (mono_ms() - ctx->start_mono_ms) / 1000);
	arn_stats_emit(e, ARN_STAT_GAUGE, "server", NULL, NULL, "state", (int64_t)st);
	arn_stats_emit(e, ARN_STAT_GAUGE, "server", NULL, NULL, "live", st == ARN_ADMIN_STATE_LIVE);
	arn_stats_emit(e, ARN_STAT_GAUGE, "server", NULL, NULL, "concurrency",
		       (int64_t)arn_stats_workers());
	arn_stats_emit(e, ARN_STAT_GAUGE, "server", NULL, NULL, "healthcheck_failed",
		       arn_admin_healthcheck_failed());
	struct mallinfo2 mi = mallinfo2();
	arn_stats_emit(e, ARN_STAT_GAUGE, "server", NULL, NULL, "memory_allocated",
		       (int64_t)(mi.uordblks + mi.hblkhd));
	arn_stats_emit(e, ARN_STAT_GAUGE, "server", NULL, NULL, "memory_heap_size",
		       (int64_t)(mi.arena + mi.hblkhd));
}

/* ---- registration ------------------------------------------------------------ */

static const struct {
	const char *path;
	unsigned methods;
	const char *help;
	arn_admin_handler_fn fn;
} builtins[] = {
    {"/", ARN_ADMIN_GET, "this list", h_help},
    {"/help", ARN_ADMIN_GET, "this list", h_help},
    {"/ready", ARN_ADMIN_GET,
     "200 LIVE when initialized and not draining, 503 and the state "
     "otherwise",
     h_ready},
    {"/server_info", ARN_ADMIN_GET, "version, state, uptime, node, command line (JSON)",
     h_server_info},
    {"/stats", ARN_ADMIN_GET,
     "statistics; ?filter=REGEX ?usedonly ?type=Counters|Gauges|"
     "Histograms ?format=json|prometheus",
     h_stats},
    {"/stats/prometheus", ARN_ADMIN_GET, "statistics in Prometheus text exposition format", h_prom},
    {"/config_dump", ARN_ADMIN_GET,
     "current configuration (JSON); ?resource=FIELD "
     "?mask=PATHS ?include_eds",
     h_config_dump},
    {"/clusters", ARN_ADMIN_GET, "upstream clusters and hosts; ?format=json", h_clusters},
    {"/listeners", ARN_ADMIN_GET, "listeners; ?format=json", h_listeners},
    {"/memory", ARN_ADMIN_GET, "heap usage (JSON)", h_memory},
    {"/healthcheck/fail", ARN_ADMIN_POST, "fail health checks and /ready (drain)", h_hc_fail},
    {"/healthcheck/ok", ARN_ADMIN_POST, "pass health checks again", h_hc_ok},
    {"/logging", ARN_ADMIN_POST,
     "log levels: ?level=LEVEL, ?MODULE=LEVEL, "
     "?paths=MODULE:LEVEL,...",
     h_logging},
    {"/quitquitquit", ARN_ADMIN_POST, "exit the server", h_quit},
    {"/reopen_logs", ARN_ADMIN_POST, "reopen access log files (after rotation)", h_reopen},
};

int arn_admin_builtins_register_(struct arn_admin_ctx *ctx)
{
	ctx->start_mono_ms = mono_ms();
	if (ctx->start_ms == 0)
		ctx->start_ms = arn_admin_now_ms_();
	for (size_t i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++) {
		int rc = arn_admin_handler_register(builtins[i].path, builtins[i].methods,
						    builtins[i].help, builtins[i].fn, ctx);
		if (rc != 0) {
			ARN_ERR(ADMIN, "cannot register the built-in %s: %s", builtins[i].path,
				rc == -EEXIST ? "a module registered that path already"
					      : strerror(-rc));
			arn_admin_builtins_unregister_(ctx);
			return rc;
		}
	}
	int rc = ctx->bs ? arn_admin_config_dump_register("envoy.admin.v3.BootstrapConfigDump",
							  dump_bootstrap, ctx)
			 : 0;
	if (rc == 0)
		rc = arn_stats_pull_register(pull_server, ctx);
	if (rc != 0)
		arn_admin_builtins_unregister_(ctx);
	return rc;
}

void arn_admin_builtins_unregister_(struct arn_admin_ctx *ctx)
{
	for (size_t i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++) {
		const struct arn_admin_handler *h = arn_admin_handler_find_(builtins[i].path);
		if (h && h->fn == builtins[i].fn)
			arn_admin_handler_unregister(builtins[i].path);
	}
	if (ctx->bs)
		arn_admin_config_dump_unregister("envoy.admin.v3.BootstrapConfigDump");
	arn_stats_pull_unregister(pull_server, ctx);
}

/* ---- helpers for /config_dump providers (arn_admin.h) ------------------------ */

int arn_admin_redact_json(const char *json, size_t len, struct arn_sb *out)
{
	struct arn_json *j = arn_json_parse(json, len);
	if (j == NULL)
		return -EINVAL;
	arn_json_redact(j);
	arn_json_write(j, out, false);
	arn_json_free(j);
	return out->oom ? -ENOMEM : 0;
}

void arn_admin_dump_time(struct arn_sb *out, int64_t unix_ms)
{
	time_t t = (time_t)(unix_ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	arn_sb_printf(out, "\"%04d-%02d-%02dT%02d:%02d:%02d.%03dZ\"", tm.tm_year + 1900,
		      tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		      (int)(unix_ms % 1000));
}
