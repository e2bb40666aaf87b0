/*
 * local_reply_config (Envoy's LocalReplyImpl): an HCM's mappers and body
 * format compiled once per configuration generation (http_rt.c, control
 * lcore), and applied to each local reply (http_local.c). Below both: it
 * calls only lib/accesslog and the access log record's builder.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "arn_access_log.h"
#include "arn_config.h"
#include "arn_log.h"
#include "http_access_log.h"
#include "http_local_reply.h"
#include "http_stream.h"

struct http_lr_mapper {
	const struct arn_cfg_lr_mapper *cfg;
	struct arn_access_filter *filter;
	struct arn_access_format *fmt; /* body_format_override, or NULL */
};

struct http_lr {
	const struct arn_cfg_local_reply *cfg;
	struct arn_access_format *fmt; /* body_format, or NULL */
	size_t n;
	struct http_lr_mapper m[];
};

void http_lr_free(struct http_lr *lr)
{
	if (!lr)
		return;
	for (size_t i = 0; i < lr->n; i++) {
		arn_access_filter_free(lr->m[i].filter);
		if (lr->m[i].fmt)
			arn_access_format_free(lr->m[i].fmt);
	}
	if (lr->fmt)
		arn_access_format_free(lr->fmt);
	free(lr);
}

static struct arn_access_format *lr_format(const struct arn_cfg_subst_format *f, bool *fail)
{
	if (!f->text && !f->json)
		return NULL;
	struct arn_sb err = ARN_SB_INIT;
	struct arn_access_format *out =
	    arn_access_format_of(f->json, f->text, f->omit_empty_values, "body_format", &err);
	arn_sb_free(&err);
	*fail |= out == NULL;
	return out;
}

struct http_lr *http_lr_new(const struct arn_cfg_local_reply *cfg, const char *where)
{
	struct http_lr *lr = calloc(1, sizeof(*lr) + cfg->n_mappers * sizeof(lr->m[0]));
	if (!lr) {
		ARN_ERR(HTTP, "%s: local_reply_config: out of memory; local replies go unchanged",
			where);
		return NULL;
	}
	lr->cfg = cfg;
	/* lib/config compiled each with the same builders: this fails only
	 * without memory */
	bool fail = false;
	lr->fmt = lr_format(&cfg->format, &fail);
	for (size_t i = 0; i < cfg->n_mappers; i++) {
		const struct arn_cfg_lr_mapper *c = &cfg->mappers[i];
		struct arn_sb err = ARN_SB_INIT;
		lr->m[i].cfg = c;
		lr->m[i].filter =
		    c->filter_json
			? arn_access_filter_json(c->filter_json, strlen(c->filter_json), "", &err)
			: NULL;
		fail |= c->filter_json && !lr->m[i].filter;
		lr->m[i].fmt = lr_format(&c->format, &fail);
		lr->n = i + 1;
		arn_sb_free(&err);
	}
	if (fail) {
		ARN_ERR(HTTP, "%s: local_reply_config: out of memory; local replies go unchanged",
			where);
		http_lr_free(lr);
		return NULL;
	}
	return lr;
}

_Static_assert(ARN_CFG_LR_HEADERS_MAX + 1 < MAX_EDITS - 1,
	       "a mapper's headers and the content type fit a reply without other edits");

/*
 * Envoy's LocalReplyImpl::rewrite on the reply @p *status / @p *body: the
 * first mapper whose filter passes the reply (as its access log would see
 * it, with the status it had) sets its status, body and headers; then its
 * body_format_override, else the body format, writes the body
 * (%LOCAL_REPLY_BODY% the body so far) into the worker's scratch. The
 * headers, and the format's content type, go to @p e. @return the edits
 * written, or -ENOSPC when they do not fit @p cap.
 */
int http_lr_rewrite(struct http_stream *st, const struct http_lr *lr, unsigned *status,
		    const char **body, size_t *blen, struct arn_h1_edit *e, unsigned cap)
{
	struct http_worker *w = st->hc->w;
	struct arn_access_record rec;
	http_access_record(st, &rec);
	rec.response_code = *status;
	const struct arn_access_format *fmt = lr->fmt;
	const struct arn_cfg_subst_format *fcfg = &lr->cfg->format;
	unsigned n = 0;
	for (size_t i = 0; i < lr->n; i++) {
		const struct http_lr_mapper *m = &lr->m[i];
		if (m->filter && !arn_access_filter_match(m->filter, &rec))
			continue;
		const struct arn_cfg_lr_mapper *c = m->cfg;
		if (c->has_body) {
			*body = c->body;
			*blen = c->body_len;
		}
		if (c->status) {
			*status = c->status;
			st->status = c->status;
			rec.response_code = c->status;
		}
		if (c->n_headers > cap)
			return -ENOSPC;
		for (size_t k = 0; k < c->n_headers; k++) {
			const struct arn_cfg_header_add *h = &c->headers[k];
			if (!h->value_len && !h->keep_empty_value)
				continue;
			e[n++] = (struct arn_h1_edit){
			    .name = h->key,
			    .name_len = (uint32_t)h->key_len,
			    .value = h->value,
			    .value_len = (uint32_t)h->value_len,
			    .op = h->append == ARN_CFG_OVERWRITE_IF_EXISTS_OR_ADD ? ARN_H1_EDIT_SET
				  : h->append == ARN_CFG_ADD_IF_ABSENT ? ARN_H1_EDIT_ADD_IF_ABSENT
								       : ARN_H1_EDIT_ADD};
		}
		if (m->fmt) {
			fmt = m->fmt;
			fcfg = &c->format;
		}
		break;
	}
	if (!fmt)
		return (int)n;
	rec.local_reply_body = (struct arn_access_str){*body ? *body : "", (uint32_t)*blen};
	*blen = arn_access_format_apply(fmt, &rec, w->lr_body, sizeof(w->lr_body));
	*body = w->lr_body;
	const char *ct = fcfg->content_type ? fcfg->content_type
			 : fcfg->json	    ? "application/json"
					    : NULL; /* text/plain: the reply's own */
	if (ct && *blen) {
		if (n >= cap)
			return -ENOSPC;
		e[n++] = (struct arn_h1_edit){.name = "content-type",
					      .name_len = 12,
					      .value = ct,
					      .value_len = (uint32_t)strlen(ct),
					      .op = ARN_H1_EDIT_SET};
	}
	return (int)n;
}
