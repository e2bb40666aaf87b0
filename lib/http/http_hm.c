/*
 * envoy.filters.http.header_mutation (http_hm.h), as Envoy's
 * header_mutation.cc (decodeHeaders / encodeHeaders, initializeRouteConfigs)
 * and mutation_rules' HeaderMutations (remove, append with its
 * append_action and keep_empty_value, remove_on_match).
 */
#include <errno.h>
#include <string.h>

#include "arn_config.h"
#include "http_hm.h"
#include "http_int.h"
#include "http_local.h"
#include "http_req_kept.h"
#include "http_stream.h"
#include "http_worker.h"

/* the names and values one filter's mutations on a head may touch (past
 * them: the edits overflow, as any filter's past the stream's room) */
#define HM_NAMES 64
#define HM_ADDS 64
#define HM_OVERWRITE_IF_EXISTS 3 /* HeaderValueOption.append_action, past arn_cfg_append */

struct hm_name {
	const char *n;
	uint16_t len;
	bool in_head; /* the head has lines of it */
	bool kept;    /* and they stay */
};
struct hm_add {
	uint8_t name; /* index in names */
	bool live;
	const char *v;
	uint32_t vl;
};
struct hm_sim {
	const struct arn_h1_msg *m; /* the head (NULL: a local reply's, empty) */
	struct hm_name names[HM_NAMES];
	struct hm_add adds[HM_ADDS];
	unsigned n_names, n_adds;
	bool over;
	struct http_stream *st;
	struct http_subst sub;
};

static bool forbidden(const char *n, size_t len)
{
	static const char *const no[] = {"host", "content-length", "transfer-encoding",
					 "connection", "upgrade"};
	if (len && n[0] == ':')
		return true;
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (strlen(no[i]) == len && arn_h1_eq_nocase(no[i], len, n, len))
			return true;
	return false;
}

static int name_at(struct hm_sim *s, const char *n, size_t len)
{
	for (unsigned k = 0; k < s->n_names; k++)
		if (s->names[k].len == len && arn_h1_eq_nocase(s->names[k].n, len, n, len))
			return (int)k;
	if (s->n_names == HM_NAMES) {
		s->over = true;
		return -1;
	}
	struct hm_name *h = &s->names[s->n_names];
	h->n = n;
	h->len = (uint16_t)len;
	h->in_head = s->m && arn_h1_find(s->m, n, len, 0) >= 0;
	h->kept = h->in_head;
	return (int)s->n_names++;
}

static bool exists(const struct hm_sim *s, int k)
{
	if (s->names[k].kept)
		return true;
	for (unsigned j = 0; j < s->n_adds; j++)
		if (s->adds[j].live && s->adds[j].name == k)
			return true;
	return false;
}

static void drop(struct hm_sim *s, int k)
{
	s->names[k].kept = false;
	for (unsigned j = 0; j < s->n_adds; j++)
		if (s->adds[j].name == k)
			s->adds[j].live = false;
}

static void add(struct hm_sim *s, int k, const char *v, size_t vl)
{
	if (s->n_adds == HM_ADDS) {
		s->over = true;
		return;
	}
	s->adds[s->n_adds++] =
	    (struct hm_add){.name = (uint8_t)k, .live = true, .v = v, .vl = (uint32_t)vl};
}

static void append(struct hm_sim *s, const struct arn_cfg_header_add *a)
{
	const char *v = a->value;
	size_t vl = a->value_len;
	if (vl && memchr(v, '%', vl)) {
		struct http_stream *st = s->st;
		char *t = st->res->text + st->text_len;
		int k = http_subst(&s->sub, v, vl, t, HTTP_TEXT - st->text_len);
		if (k < 0) {
			s->over = true;
			return;
		}
		st->text_len += (uint32_t)k;
		v = t;
		vl = (size_t)k;
	}
	/* Envoy: an empty value is not written unless keep_empty_value */
	if (vl == 0 && !a->keep_empty_value)
		return;
	int k = name_at(s, a->key, a->key_len);
	if (k < 0)
		return;
	switch (a->append) {
	case ARN_CFG_APPEND_IF_EXISTS_OR_ADD:
		add(s, k, v, vl);
		break;
	case ARN_CFG_ADD_IF_ABSENT:
		if (!exists(s, k))
			add(s, k, v, vl);
		break;
	case HM_OVERWRITE_IF_EXISTS:
		if (!exists(s, k))
			break;
		/* fall through */
	default: /* OVERWRITE_IF_EXISTS_OR_ADD */
		drop(s, k);
		add(s, k, v, vl);
		break;
	}
}

/* Envoy's header names are lower case (its codecs lower them): the
 * matcher sees @p n so (a name longer than the buffer as it came) */
static bool key_match(const struct arn_cfg_str_match *km, const char *n, size_t len)
{
	char b[256];
	if (len > sizeof(b))
		return arn_cfg_str_match(km, n, len);
	for (size_t i = 0; i < len; i++)
		b[i] = (char)(n[i] >= 'A' && n[i] <= 'Z' ? n[i] + 32 : n[i]);
	return arn_cfg_str_match(km, b, len);
}

/* remove_on_match: every name of the head and every name added so far
 * that the matcher takes (never one that frames or routes the message) */
static void remove_match(struct hm_sim *s, const struct arn_cfg_str_match *km)
{
	for (unsigned j = 0; s->m && j < s->m->n_hdrs; j++) {
		const struct arn_h1_header *h = &s->m->hdrs[j];
		if (forbidden(h->name, h->name_len) || !key_match(km, h->name, h->name_len))
			continue;
		int k = name_at(s, h->name, h->name_len);
		if (k < 0)
			return;
		drop(s, k);
	}
	for (unsigned k = 0; k < s->n_names; k++)
		if (key_match(km, s->names[k].n, s->names[k].len))
			drop(s, (int)k);
}

static void run_list(struct hm_sim *s, const struct arn_cfg_hm_op *o, size_t n)
{
	for (size_t i = 0; i < n && !s->over; i++) {
		if (o[i].kind == ARN_CFG_HM_REMOVE) {
			int k = name_at(s, o[i].name, o[i].name_len);
			if (k >= 0)
				drop(s, k);
		} else if (o[i].kind == ARN_CFG_HM_APPEND) {
			append(s, &o[i].add);
		} else {
			remove_match(s, &o[i].key);
		}
	}
}

static const struct arn_cfg_header_mutation *level(const struct arn_cfg_per_filter *pf, size_t n,
						   const char *name, size_t len)
{
	for (size_t i = 0; name && i < n; i++)
		if (pf[i].kind == ARN_CFG_PF_HEADER_MUTATION && pf[i].name_len == len &&
		    memcmp(pf[i].name, name, len) == 0)
			return pf[i].cfg;
	return NULL;
}

/* The filter's mutations, then the route levels' in Envoy's order. */
static void run(struct hm_sim *s, const struct arn_cfg_header_mutation *f, const char *name,
		const struct arn_cfg_vhost *vh, const struct arn_cfg_route *r, bool req)
{
	run_list(s, req ? f->req : f->resp, req ? f->n_req : f->n_resp);
	size_t len = name ? strlen(name) : 0;
	const struct arn_cfg_header_mutation *lv[3];
	unsigned n = 0;
	/* most specific first: route, virtual host, route table */
	const struct arn_cfg_header_mutation *p;
	if (r && (p = level(r->per_filter, r->n_per_filter, name, len)))
		lv[n++] = p;
	if (vh && (p = level(vh->per_filter, vh->n_per_filter, name, len)))
		lv[n++] = p;
	if (vh && (p = level(vh->rc_per_filter, vh->n_rc_per_filter, name, len)))
		lv[n++] = p;
	for (unsigned k = 0; k < n; k++) {
		p = lv[f->most_specific_wins ? n - 1 - k : k];
		run_list(s, req ? p->req : p->resp, req ? p->n_req : p->n_resp);
	}
}

/* What the mutations left, as edits. @return how many, or -ENOSPC. */
static int emit(const struct hm_sim *s, struct arn_h1_edit *e, unsigned cap)
{
	unsigned n = 0;
	if (s->over)
		return -ENOSPC;
	for (unsigned k = 0; k < s->n_names; k++) {
		if (!s->names[k].in_head || s->names[k].kept)
			continue;
		if (n == cap)
			return -ENOSPC;
		e[n++] = (struct arn_h1_edit){
		    .name = s->names[k].n, .name_len = s->names[k].len, .op = ARN_H1_EDIT_REMOVE};
	}
	for (unsigned j = 0; j < s->n_adds; j++) {
		if (!s->adds[j].live)
			continue;
		if (n == cap)
			return -ENOSPC;
		const struct hm_name *h = &s->names[s->adds[j].name];
		e[n++] = (struct arn_h1_edit){.name = h->n,
					      .name_len = h->len,
					      .value = s->adds[j].v,
					      .value_len = s->adds[j].vl,
					      .op = ARN_H1_EDIT_ADD};
	}
	return (int)n;
}

static void sim_init(struct hm_sim *s, struct http_stream *st, const struct arn_h1_msg *m)
{
	s->m = m;
	s->n_names = s->n_adds = 0;
	s->over = false;
	s->st = st;
	http_stream_subst(st, &s->sub);
}

bool http_hm_step(struct http_stream *st, size_t i, const struct arn_cfg_header_mutation *f,
		  const struct arn_cfg_route_match *mt)
{
	if (!f->n_req && !mt)
		return false;
	const struct arn_cfg_hcm *h = st->hc->hcm;
	const char *name = h->http_filter_names ? h->http_filter_names[i] : NULL;
	struct hm_sim s;
	sim_init(&s, st, &st->req.m);
	run(&s, f, name, mt ? mt->vhost : NULL, mt ? mt->route : NULL, true);
	struct arn_h1_edit e[HM_NAMES];
	int n = st->res ? emit(&s, e, HM_NAMES) : -ENOSPC;
	if (n < 0 || (n && http_req_edits_keep(st, e, (unsigned)n) < 0)) {
		/* never the request upstream without its edits (issue 12) */
		HTTP_INC(st->hc, rq_edit_overflow);
		http_local_reply(st, 500, NULL, 0, 0, "header_edits_overflow", NULL, 0);
		return true;
	}
	return false;
}

/* Is filter @p i off for the stream's route (HttpFilter.disabled,
 * FilterConfig)? */
static bool hm_off(const struct http_stream *st, const struct arn_cfg_hcm *h, size_t i)
{
	bool dflt = h->http_filter_off && h->http_filter_off[i];
	const char *name = h->http_filter_names ? h->http_filter_names[i] : NULL;
	if (!name || (!st->vhost && !st->route))
		return dflt;
	return arn_cfg_filter_off(st->vhost, st->route, name, strlen(name), dflt);
}

int http_hm_resp_edits(struct http_stream *st, struct arn_h1_edit *e, unsigned cap)
{
	const struct arn_cfg_hcm *h = st->hc->hcm;
	unsigned n = 0;
	for (size_t i = 0; h && i < h->n_http_filters; i++) {
		if (h->http_filters[i] != ARN_CFG_HF_HEADER_MUTATION || !h->http_filter_cfgs ||
		    !h->http_filter_cfgs[i] || hm_off(st, h, i))
			continue;
		if (!st->res)
			return -ENOSPC;
		struct hm_sim s;
		/* a local reply has no parsed head: the mutations see an
		 * empty one (what they add is written) */
		sim_init(&s, st, st->resp.m.status ? &st->resp.m : NULL);
		run(&s, h->http_filter_cfgs[i],
		    h->http_filter_names ? h->http_filter_names[i] : NULL, st->vhost, st->route,
		    false);
		int k = emit(&s, e + n, cap - n);
		if (k < 0)
			return k;
		n += (unsigned)k;
	}
	return (int)n;
}
