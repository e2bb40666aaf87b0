/*
 * envoy.filters.http.custom_response: the matcher on a response's head and
 * the LocalResponsePolicy's reply (http_cresp.h). Not on the path of a
 * manager without the filter: the HCM asks its runtime's `cresp` first.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "arn_access_log.h"
#include "arn_config.h"
#include "http_access_log.h"
#include "http_cresp.h"
#include "http_stream.h"
#include "http_worker.h"

/* A header's values joined with ',' (Envoy's response header input) are
 * matched from here when there are several; more than this: no match. */
#define CRESP_JOIN_MAX 1024

/* What a predicate reads of the response. */
struct cresp_in {
	unsigned status;
	bool local;
	const struct arn_h1_msg *m;  /* the upstream's head; NULL: a local reply */
	const struct arn_h1_edit *e; /* a local reply's headers */
	unsigned n_e;
	bool text; /* a local reply with a body: content-type text/plain */
};

/* The values of header @p name (lower case) joined with ',' into @p buf
 * (one value is not copied). @return false when absent or too long. */
static bool hdr_value(const struct cresp_in *in, const char *name, size_t nl, char *buf,
		      const char **v, size_t *vl)
{
	size_t n = 0;
	unsigned found = 0;
	unsigned cnt = in->m ? in->m->n_hdrs : in->n_e;
	for (unsigned i = 0; i < cnt; i++) {
		const char *hn, *hv;
		size_t hnl, hvl;
		if (in->m) {
			hn = in->m->hdrs[i].name;
			hnl = in->m->hdrs[i].name_len;
			hv = in->m->hdrs[i].value;
			hvl = in->m->hdrs[i].value_len;
		} else {
			if (in->e[i].op == ARN_H1_EDIT_REMOVE)
				continue;
			hn = in->e[i].name;
			hnl = in->e[i].name_len;
			hv = in->e[i].value;
			hvl = in->e[i].value_len;
		}
		if (!arn_h1_eq_nocase(hn, hnl, name, nl))
			continue;
		if (found++ == 0) {
			*v = hv;
			*vl = hvl;
		}
		if (n + (found > 1) + hvl > CRESP_JOIN_MAX)
			return false;
		if (found > 1)
			buf[n++] = ',';
		memcpy(buf + n, hv, hvl);
		n += hvl;
	}
	if (!found && !in->m && in->text && nl == 12 && memcmp(name, "content-type", 12) == 0) {
		*v = "text/plain";
		*vl = 10;
		return true;
	}
	if (found > 1) {
		*v = buf;
		*vl = n;
	}
	return found > 0;
}

/* A leaf of a predicate (one input and its matcher) on @p in. Apart from
 * eval so that the and / or / not frames of the recursion do not each
 * carry the joined header's buffer. */
static __attribute__((noinline)) bool leaf(const struct arn_cfg_rbac_rule *r,
					   const struct cresp_in *in)
{
	char b[CRESP_JOIN_MAX];
	const char *v;
	size_t vl;
	switch (r->kind) {
	case ARN_CFG_RBAC_RESP_STATUS: {
		int k = snprintf(b, sizeof(b), "%u", in->status);
		return arn_cfg_str_match(&r->str, b, (size_t)k);
	}
	case ARN_CFG_RBAC_RESP_CLASS:
		/* Envoy's: "1xx" .. "5xx" */
		b[0] = (char)('0' + in->status / 100 % 10);
		b[1] = b[2] = 'x';
		return arn_cfg_str_match(&r->str, b, 3);
	case ARN_CFG_RBAC_RESP_RANGE:
		return in->status >= r->port_lo && in->status <= r->port_hi;
	case ARN_CFG_RBAC_RESP_LOCAL:
		return in->local ? arn_cfg_str_match(&r->str, "true", 4)
				 : arn_cfg_str_match(&r->str, "false", 5);
	case ARN_CFG_RBAC_RESP_HEADER:
		return r->header &&
		       hdr_value(in, r->header->name, r->header->name_len, b, &v, &vl) &&
		       arn_cfg_str_match(&r->header->str, v, vl);
	default:
		return false;
	}
}

/* A predicate (an RBAC rule tree of the response inputs; nesting bounded
 * by the conversion, RBAC_MAX_DEPTH) on @p in. */
static bool eval(const struct arn_cfg_rbac_rule *r, const struct cresp_in *in)
{
	switch (r->kind) {
	case ARN_CFG_RBAC_AND:
		for (size_t i = 0; i < r->n_kids; i++)
			if (!eval(&r->kids[i], in))
				return false;
		return true;
	case ARN_CFG_RBAC_OR:
		for (size_t i = 0; i < r->n_kids; i++)
			if (eval(&r->kids[i], in))
				return true;
		return false;
	case ARN_CFG_RBAC_NOT:
		return r->n_kids && !eval(&r->kids[0], in);
	default:
		return leaf(r, in);
	}
}

/* The policy of the first entry of @p f that matches, else on_no_match's. */
static const struct arn_cfg_cresp_policy *cr_match(const struct arn_cfg_custom_response *f,
						   const struct cresp_in *in)
{
	for (size_t i = 0; i < f->n_entries; i++)
		if (eval(&f->entries[i].predicate, in))
			return f->entries[i].policy;
	return f->no_match;
}

static const struct arn_cfg_custom_response *level(const struct arn_cfg_per_filter *pf, size_t n,
						   const char *name, size_t len)
{
	for (size_t i = 0; name && i < n; i++)
		if (pf[i].kind == ARN_CFG_PF_CUSTOM_RESPONSE && pf[i].name_len == len &&
		    memcmp(pf[i].name, name, len) == 0)
			return pf[i].cfg;
	return NULL;
}

/* Envoy's encodeHeaders over every custom_response filter of the chain:
 * the last first (encode order); the first policy found answers. */
static const struct arn_cfg_cresp_policy *find(const struct http_stream *st,
					       const struct cresp_in *in)
{
	const struct arn_cfg_hcm *h = st->hc->hcm;
	const struct arn_cfg_vhost *vh = st->vhost;
	const struct arn_cfg_route *r = st->route;
	for (size_t i = h ? h->n_http_filters : 0; i-- > 0;) {
		if (h->http_filters[i] != ARN_CFG_HF_CUSTOM_RESPONSE)
			continue;
		const char *name = h->http_filter_names ? h->http_filter_names[i] : NULL;
		size_t len = name ? strlen(name) : 0;
		bool dflt = h->http_filter_off && h->http_filter_off[i];
		if (name && (vh || r) ? arn_cfg_filter_off(vh, r, name, len, dflt) : dflt)
			continue;
		/* least specific to most: a later match overrides (Envoy's
		 * getAllPerFilterConfig walk) */
		const struct arn_cfg_cresp_policy *p = NULL, *q;
		const struct arn_cfg_custom_response *lv[3] = {
		    vh ? level(vh->rc_per_filter, vh->n_rc_per_filter, name, len) : NULL,
		    vh ? level(vh->per_filter, vh->n_per_filter, name, len) : NULL,
		    r ? level(r->per_filter, r->n_per_filter, name, len) : NULL};
		for (unsigned k = 0; k < 3; k++)
			if (lv[k] && (q = cr_match(lv[k], in)))
				p = q;
		if (!p && h->http_filter_cfgs && h->http_filter_cfgs[i])
			p = cr_match(h->http_filter_cfgs[i], in);
		if (p)
			return p;
	}
	return NULL;
}

/* Answer @p st with policy @p p in place of the response @p in
 * (local_response_policy.cc): its status, else the response's; its body,
 * formatted by body_format (%LOCAL_REPLY_BODY% the body, the access log's
 * view of the stream); its headers alone (nothing of the replaced head
 * survives). */
static void reply(struct http_stream *st, const struct arn_cfg_cresp_policy *p,
		  const struct cresp_in *in, struct http_cresp_reply *r)
{
	struct http_conn *hc = st->hc;
	struct http_worker *w = hc->w;
	unsigned status = p->status ? p->status : in->status;
	const char *body = p->has_body ? p->body : NULL;
	size_t blen = p->has_body ? p->body_len : 0;
	struct arn_h1_edit *e = r->e;
	unsigned n = 0;
	if (p->fmt) {
		struct arn_access_record rec;
		http_access_record(st, &rec);
		rec.response_code = in->status;
		rec.local_reply_body = (struct arn_access_str){body ? body : "", (uint32_t)blen};
		/* not lr_body: local_reply_config's format may read this body
		 * while it writes its own there */
		blen = arn_access_format_apply(p->fmt, &rec, w->cresp_body, sizeof(w->cresp_body));
		body = w->cresp_body;
		const char *ct = p->format.content_type ? p->format.content_type
				 : p->format.json	? "application/json"
							: NULL; /* text/plain: the reply's own */
		if (ct && blen)
			e[n++] = (struct arn_h1_edit){.name = "content-type",
						      .name_len = 12,
						      .value = ct,
						      .value_len = (uint32_t)strlen(ct),
						      .op = ARN_H1_EDIT_SET};
	}
	for (size_t k = 0; k < p->n_headers; k++) {
		const struct arn_cfg_header_add *h = &p->headers[k];
		if (!h->value_len && !h->keep_empty_value)
			continue;
		e[n++] = (struct arn_h1_edit){
		    .name = h->key,
		    .name_len = (uint16_t)h->key_len,
		    .value = h->value,
		    .value_len = (uint32_t)h->value_len,
		    .op = h->append == ARN_CFG_OVERWRITE_IF_EXISTS_OR_ADD ? ARN_H1_EDIT_SET
			  : h->append == ARN_CFG_ADD_IF_ABSENT ? ARN_H1_EDIT_ADD_IF_ABSENT
							       : ARN_H1_EDIT_ADD};
	}
	HTTP_INC(hc, custom_response_replaced);
	r->status = status;
	r->body = body;
	r->blen = blen;
	r->details = st->details ? st->details : "via_upstream";
	r->n = n;
}

bool http_cresp_upstream(struct http_stream *st, struct http_cresp_reply *r)
{
	const struct arn_h1_msg *m = &st->resp.m;
	if (m->status < 200)
		return false; /* a 101's tunnel is not a response to replace */
	struct cresp_in in = {.status = m->status, .m = m};
	const struct arn_cfg_cresp_policy *p = find(st, &in);
	if (!p)
		return false;
	/* the upstream's answer is counted as it came (Envoy's router did) */
	st->up_status = m->status;
	if (CS(st))
		arn_stats_inc(CS(st), st->hc->w->slot,
			      arn_stats_code_class(ARN_CL_upstream_rq_1xx, m->status));
	reply(st, p, &in, r);
	return true;
}

bool http_cresp_local(struct http_stream *st, unsigned status, size_t blen,
		      const struct arn_h1_edit *extra, unsigned n_extra,
		      struct http_cresp_reply *r)
{
	struct cresp_in in = {
	    .status = status, .local = true, .e = extra, .n_e = n_extra, .text = blen > 0};
	const struct arn_cfg_cresp_policy *p = find(st, &in);
	if (!p)
		return false;
	reply(st, p, &in, r);
	return true;
}
