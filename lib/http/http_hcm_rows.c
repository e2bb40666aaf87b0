/* The sweep of per-connection-manager filter rows (http_hcm_rows.h). */
#include "http_hcm_rows.h"

#include <string.h>

#include "arn_config.h"
#include "arn_stats_rows.h"

struct sweep {
	const struct arn_cfg_gen *g;
	http_hcm_rows_has_fn has;
	const char *a;
	size_t an;
	const char *b;
	size_t bn;
	bool found;
};

static void find_hcm(struct sweep *s, const struct arn_cfg_hcm *h)
{
	if (!h || s->found || !h->stat_prefix || strlen(h->stat_prefix) != s->an ||
	    memcmp(h->stat_prefix, s->a, s->an) != 0)
		return;
	s->found = s->has(h, s->b, s->bn);
}

static void find_listener(void *ctx, const struct arn_cfg_listener *l)
{
	struct sweep *s = ctx;
	for (size_t i = 0; i < l->n_chains; i++)
		find_hcm(s, l->chains[i].hcm);
	if (l->default_chain)
		find_hcm(s, l->default_chain->hcm);
}

static bool keep(const char *a, size_t an, const char *b, size_t bn, void *arg)
{
	struct sweep *s = arg;
	if (!s->g)
		return false;
	s->a = a;
	s->an = an;
	s->b = b;
	s->bn = bn;
	s->found = false;
	arn_cfg_listener_foreach(s->g, find_listener, s);
	return s->found;
}

void http_hcm_rows_sweep(struct arn_stats_rows_table *t, const struct arn_cfg_gen *g,
			 http_hcm_rows_has_fn has)
{
	struct sweep s = {.g = g, .has = has};
	arn_stats_rows_sweep(t, keep, &s);
}
