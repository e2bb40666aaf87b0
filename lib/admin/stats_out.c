/*
 * /stats (Envoy's text form and ?format=json) and /stats/prometheus from a
 * snapshot of every stat.
 *
 * Prometheus names follow Envoy: the tag values are cut out of the dotted
 * name ("cluster.web.upstream_rq_total" -> "cluster.upstream_rq_total"),
 * response codes too (upstream_rq_2xx -> upstream_rq_xx with
 * envoy_response_code_class="2"; upstream_rq_200 -> upstream_rq with
 * envoy_response_code="200"), every character outside [a-zA-Z0-9_] becomes
 * '_', and "envoy_" goes in front. Envoy prints no # HELP; Arion does (the
 * stat's help text), which Prometheus accepts and promtool asks for.
 *
 * Arion's own families (no Envoy has them: dpdk.*, tcp, config, xds.*) are
 * named as Prometheus asks instead, since no dashboard expects Envoy's
 * spelling of them: "arion_" in front, and counters end in "_total"
 * (tcp.0.segments_received -> arion_tcp_segments_received_total
 * {envoy_worker_id="0"}). Envoy's names stay exactly as Envoy writes them.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin_int.h"
#include "arn_regex.h"
#include "arn_stats_snapshot.h"

static const double quantiles[] = {0, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 1};
static const char *const quantile_names[] = {"0",  "25", "50",	 "75",	 "90",
					     "95", "99", "99.5", "99.9", "100"};

struct filter {
	/* ?filter=: RE2, as Envoy's (RE2::PartialMatch), in lib/config's
	 * linear-time engine. Not POSIX regexec: with back-references it
	 * backtracks, exponentially in the pattern, on the control lcore
	 * that runs xDS too. */
	struct arn_regex *re;
	bool used_only;
	int type; /* -1: all; else arn_stat_kind */
};

int arn_admin_stats_filter_init_(struct arn_admin_stats_filter_opts *o, struct arn_sb *err,
				 void **out)
{
	struct filter *f = calloc(1, sizeof(*f));
	if (f == NULL)
		return -ENOMEM;
	f->type = -1;
	f->used_only = o->used_only;
	if (o->type && *o->type) {
		if (!strcmp(o->type, "Counters"))
			f->type = ARN_STAT_COUNTER;
		else if (!strcmp(o->type, "Gauges"))
			f->type = ARN_STAT_GAUGE;
		else if (!strcmp(o->type, "Histograms"))
			f->type = ARN_STAT_HISTOGRAM;
		else if (strcmp(o->type, "All") != 0) {
			arn_sb_printf(
			    err, "invalid type '%s': use Counters, Gauges, Histograms or All\n",
			    o->type);
			free(f);
			return -EINVAL;
		}
	}
	if (o->regex && *o->regex) {
		char msg[200];
		f->re = arn_regex_compile(o->regex, strlen(o->regex), msg, sizeof(msg));
		if (f->re == NULL) {
			arn_sb_printf(err, "Invalid regex: %s (filter=%s; RE2 syntax)\n", msg,
				      o->regex);
			free(f);
			return -EINVAL;
		}
	}
	*out = f;
	return 0;
}

void arn_admin_stats_filter_free_(void *fv)
{
	struct filter *f = fv;
	if (f == NULL)
		return;
	arn_regex_free(f->re);
	free(f);
}

static bool used(const struct arn_stat_sample *x)
{
	if (x->kind == ARN_STAT_HISTOGRAM)
		return x->hist.count != 0;
	return x->counter != 0;
}

static bool keep(const struct filter *f, const struct arn_stat_sample *x)
{
	if (f == NULL)
		return true;
	if (f->type >= 0 && (int)x->kind != f->type)
		return false;
	if (f->used_only && !used(x))
		return false;
	if (f->re && !arn_regex_search(f->re, x->name, strlen(x->name), 0, NULL, 0))
		return false;
	return true;
}

/* A double the way Envoy prints quantiles: shortest of %g with enough digits. */
static void put_double(struct arn_sb *out, double v)
{
	if (isnan(v)) {
		arn_sb_puts(out, "nan");
		return;
	}
	char b[64];
	snprintf(b, sizeof(b), "%.15g", v);
	arn_sb_puts(out, b);
}

static void put_ms_from_us(struct arn_sb *out, uint64_t us)
{
	unsigned long long ms = us / 1000, frac = us % 1000;
	if (frac == 0) {
		arn_sb_printf(out, "%llu", ms);
		return;
	}
	char b[8];
	snprintf(b, sizeof(b), "%03llu", frac);
	for (int i = 2; i > 0 && b[i] == '0'; i--)
		b[i] = '\0';
	arn_sb_printf(out, "%llu.%s", ms, b);
}

void arn_admin_stats_text_(const struct arn_stats_snapshot *s, void *fv, struct arn_sb *out)
{
	const struct filter *f = fv;
	for (size_t i = 0; i < s->n; i++) {
		const struct arn_stat_sample *x = &s->v[i];
		if (x->kind == ARN_STAT_HISTOGRAM || !keep(f, x))
			continue;
		if (x->kind == ARN_STAT_GAUGE)
			arn_sb_printf(out, "%s: %lld\n", x->name, (long long)x->gauge);
		else
			arn_sb_printf(out, "%s: %llu\n", x->name, (unsigned long long)x->counter);
	}
	for (size_t i = 0; i < s->n; i++) {
		const struct arn_stat_sample *x = &s->v[i];
		if (x->kind != ARN_STAT_HISTOGRAM || !keep(f, x))
			continue;
		arn_sb_printf(out, "%s: ", x->name);
		if (x->hist.count == 0) {
			arn_sb_puts(out, "No recorded values\n");
			continue;
		}
		for (size_t q = 0; q < sizeof(quantiles) / sizeof(quantiles[0]); q++) {
			arn_sb_printf(out, "%sP%s(nan,", q ? " " : "", quantile_names[q]);
			put_double(out, arn_stats_hist_quantile(&x->hist, quantiles[q]));
			arn_sb_putc(out, ')');
		}
		arn_sb_putc(out, '\n');
	}
}

void arn_admin_stats_json_(const struct arn_stats_snapshot *s, void *fv, struct arn_sb *out)
{
	const struct filter *f = fv;
	arn_sb_puts(out, "{\"stats\":[");
	bool first = true;
	for (size_t i = 0; i < s->n; i++) {
		const struct arn_stat_sample *x = &s->v[i];
		if (x->kind == ARN_STAT_HISTOGRAM || !keep(f, x))
			continue;
		arn_sb_puts(out, first ? "{\"name\":" : ",{\"name\":");
		first = false;
		arn_sb_json_str(out, x->name, strlen(x->name));
		if (x->kind == ARN_STAT_GAUGE)
			arn_sb_printf(out, ",\"value\":%lld}", (long long)x->gauge);
		else
			arn_sb_printf(out, ",\"value\":%llu}", (unsigned long long)x->counter);
	}
	bool any_hist = false;
	for (size_t i = 0; i < s->n; i++) {
		const struct arn_stat_sample *x = &s->v[i];
		if (x->kind != ARN_STAT_HISTOGRAM || !keep(f, x))
			continue;
		if (!any_hist) {
			arn_sb_puts(out, first ? "" : ",");
			arn_sb_puts(out, "{\"histograms\":{\"supported_quantiles\":[");
			for (size_t q = 0; q < sizeof(quantiles) / sizeof(quantiles[0]); q++)
				arn_sb_printf(out, "%s%s", q ? "," : "", quantile_names[q]);
			arn_sb_puts(out, "],\"computed_quantiles\":[");
		} else {
			arn_sb_putc(out, ',');
		}
		any_hist = true;
		arn_sb_puts(out, "{\"name\":");
		arn_sb_json_str(out, x->name, strlen(x->name));
		arn_sb_puts(out, ",\"values\":[");
		for (size_t q = 0; q < sizeof(quantiles) / sizeof(quantiles[0]); q++) {
			double v = arn_stats_hist_quantile(&x->hist, quantiles[q]);
			arn_sb_puts(out, q ? ",{\"interval\":null,\"cumulative\":"
					   : "{\"interval\":null,\"cumulative\":");
			if (isnan(v))
				arn_sb_puts(out, "null");
			else
				put_double(out, v);
			arn_sb_putc(out, '}');
		}
		arn_sb_puts(out, "]}");
	}
	if (any_hist)
		arn_sb_puts(out, "]}}");
	arn_sb_puts(out, "]}");
}

/* ---- Prometheus ------------------------------------------------------------ */

struct prom_line {
	char *family; /* envoy_cluster_upstream_rq_xx */
	char *labels; /* envoy_response_code_class="2",envoy_cluster_name="web" (may be "") */
	const struct arn_stat_sample *x;
};

static void sanitize(struct arn_sb *out, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '_';
		arn_sb_putc(out, ok ? c : '_');
	}
}

static void label(struct arn_sb *out, const char *name, const char *value, bool *first)
{
	if (!*first)
		arn_sb_putc(out, ',');
	*first = false;
	sanitize(out, name, strlen(name));
	arn_sb_puts(out, "=\"");
	for (const char *p = value; *p; p++) {
		if (*p == '\\')
			arn_sb_puts(out, "\\\\");
		else if (*p == '"')
			arn_sb_puts(out, "\\\"");
		else if (*p == '\n')
			arn_sb_puts(out, "\\n");
		else
			arn_sb_putc(out, *p);
	}
	arn_sb_putc(out, '"');
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Envoy's response-code tags: "..._rq_2xx" and "..._rq_200" at the end. */
static size_t code_tag(const char *stat, const char **tag, char value[4])
{
	size_t n = strlen(stat);
	if (n >= 7 && !memcmp(stat + n - 7, "_rq_", 4) && is_digit(stat[n - 3]) &&
	    stat[n - 2] == 'x' && stat[n - 1] == 'x') {
		*tag = "envoy_response_code_class";
		value[0] = stat[n - 3];
		value[1] = '\0';
		return n - 3; /* keep "..._rq_", then "xx" is appended */
	}
	if (n >= 7 && !memcmp(stat + n - 7, "_rq_", 4) && is_digit(stat[n - 3]) &&
	    is_digit(stat[n - 2]) && is_digit(stat[n - 1])) {
		*tag = "envoy_response_code";
		memcpy(value, stat + n - 3, 3);
		value[3] = '\0';
		return n - 4; /* drop "_200" */
	}
	*tag = NULL;
	return n;
}

/* Families that are Arion's own, not Envoy's (see the top of the file).
 * "tcp" is both: lib/tcp's per-worker counters (tcp.<worker>.*) are Arion's,
 * Envoy's tcp_proxy statistics (tcp.<stat_prefix>.*, tagged
 * envoy_tcp_prefix) keep Envoy's spelling. */
static bool arion_family(const char *family, const char *tag_name)
{
	if (tag_name && !strcmp(tag_name, "envoy_tcp_prefix"))
		return false;
	static const char *const own[] = {"dpdk", "tcp", "config", "xds"};
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
		size_t n = strlen(own[i]);
		if (!strncmp(family, own[i], n) && (family[n] == '\0' || family[n] == '.'))
			return true;
	}
	return false;
}

static int prom_make(const struct arn_stat_sample *x, struct prom_line *pl)
{
	struct arn_sb fam = ARN_SB_INIT, lab = ARN_SB_INIT;
	const char *ctag;
	char cval[4];
	const char *family = x->prom_family ? x->prom_family : x->family;
	const char *stat = x->prom_stat ? x->prom_stat : x->stat;
	bool own = arion_family(family, x->tag_name);
	size_t keep_n = own ? strlen(stat) : code_tag(stat, &ctag, cval);
	if (own)
		ctag = NULL;
	arn_sb_puts(&fam, own ? "arion_" : "envoy_");
	sanitize(&fam, family, strlen(family));
	arn_sb_putc(&fam, '_');
	if (ctag && !strcmp(ctag, "envoy_response_code_class")) {
		sanitize(&fam, stat, keep_n); /* up to "_rq_" */
		arn_sb_puts(&fam, "xx");
	} else {
		sanitize(&fam, stat, keep_n);
	}
	if (own && x->kind == ARN_STAT_COUNTER &&
	    (keep_n < 6 || strcmp(stat + keep_n - 6, "_total") != 0))
		arn_sb_puts(&fam, "_total");
	bool first = true;
	arn_sb_puts(&lab, "");
	if (ctag)
		label(&lab, ctag, cval, &first);
	if (x->tag_name)
		label(&lab, x->tag_name, x->tag_value, &first);
	if (x->tag2_name)
		label(&lab, x->tag2_name, x->tag2_value, &first);
	if (fam.oom || lab.oom) {
		arn_sb_free(&fam);
		arn_sb_free(&lab);
		return -ENOMEM;
	}
	pl->family = arn_sb_steal(&fam);
	pl->labels = arn_sb_steal(&lab);
	pl->x = x;
	return 0;
}

static int prom_cmp(const void *a, const void *b)
{
	const struct prom_line *x = a, *y = b;
	/* counters, then gauges, then histograms, as Envoy; by family within */
	if (x->x->kind != y->x->kind)
		return (int)x->x->kind - (int)y->x->kind;
	int c = strcmp(x->family, y->family);
	return c ? c : strcmp(x->labels, y->labels);
}

static void sample(struct arn_sb *out, const char *family, const char *suffix, const char *labels,
		   const char *extra)
{
	arn_sb_puts(out, family);
	arn_sb_puts(out, suffix);
	if (*labels || extra) {
		arn_sb_putc(out, '{');
		arn_sb_puts(out, labels);
		if (extra) {
			if (*labels)
				arn_sb_putc(out, ',');
			arn_sb_puts(out, extra);
		}
		arn_sb_putc(out, '}');
	}
	arn_sb_putc(out, ' ');
}

int arn_admin_stats_prometheus_(const struct arn_stats_snapshot *s, void *fv, struct arn_sb *out)
{
	const struct filter *f = fv;
	struct prom_line *v = calloc(s->n ? s->n : 1, sizeof(*v));
	if (v == NULL)
		return -ENOMEM;
	size_t n = 0;
	int rc = 0;
	for (size_t i = 0; i < s->n; i++) {
		if (!keep(f, &s->v[i]))
			continue;
		if (prom_make(&s->v[i], &v[n]) != 0) {
			rc = -ENOMEM;
			break;
		}
		n++;
	}
	if (n > 1)
		qsort(v, n, sizeof(v[0]), prom_cmp);
	static const char *const kinds[] = {"counter", "gauge", "histogram"};
	for (size_t i = 0; i < n; i++) {
		const struct prom_line *p = &v[i];
		const struct arn_stat_sample *x = p->x;
		if (i == 0 || strcmp(v[i - 1].family, p->family) != 0 ||
		    v[i - 1].x->kind != x->kind) {
			const char *help = x->help && *x->help ? x->help : x->stat;
			arn_sb_printf(out, "# HELP %s ", p->family);
			for (const char *h = help; *h; h++) {
				if (*h == '\\')
					arn_sb_puts(out, "\\\\");
				else if (*h == '\n')
					arn_sb_puts(out, "\\n");
				else
					arn_sb_putc(out, *h);
			}
			arn_sb_printf(out, "\n# TYPE %s %s\n", p->family, kinds[x->kind]);
		}
		if (x->kind == ARN_STAT_COUNTER) {
			sample(out, p->family, "", p->labels, NULL);
			arn_sb_printf(out, "%llu\n", (unsigned long long)x->counter);
		} else if (x->kind == ARN_STAT_GAUGE) {
			sample(out, p->family, "", p->labels, NULL);
			arn_sb_printf(out, "%lld\n", (long long)x->gauge);
		} else {
			uint64_t cum = 0;
			for (unsigned b = 0; b <= ARN_STATS_HIST_BUCKETS; b++) {
				char le[40];
				cum += x->hist.buckets[b];
				if (b == ARN_STATS_HIST_BUCKETS) {
					snprintf(le, sizeof(le), "le=\"+Inf\"");
				} else {
					struct arn_sb t = ARN_SB_INIT;
					put_ms_from_us(&t, arn_stats_hist_bounds_us[b]);
					snprintf(le, sizeof(le), "le=\"%s\"", arn_sb_cstr(&t));
					arn_sb_free(&t);
				}
				sample(out, p->family, "_bucket", p->labels, le);
				arn_sb_printf(out, "%llu\n", (unsigned long long)cum);
			}
			sample(out, p->family, "_sum", p->labels, NULL);
			put_ms_from_us(out, x->hist.sum_us);
			arn_sb_putc(out, '\n');
			sample(out, p->family, "_count", p->labels, NULL);
			arn_sb_printf(out, "%llu\n", (unsigned long long)x->hist.count);
		}
	}
	for (size_t i = 0; i < n; i++) {
		free(v[i].family);
		free(v[i].labels);
	}
	free(v);
	return rc ? rc : out->oom ? -ENOMEM : 0;
}
