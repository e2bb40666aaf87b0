/*
 * A unary gRPC call whose answer counts only by its grpc-status
 * (http_grpc_unary.h).
 */
#include "http_grpc_unary.h"

#include <stdio.h>
#include <string.h>

#include "arn_config.h"
#include "arn_h1.h"
#include "http_int.h"

static void status_of(struct http_grpc_unary *u, const struct arn_h1_header *h, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (h[i].name_len == 11 && arn_h1_eq_nocase(h[i].name, 11, "grpc-status", 11))
			u->status = h[i].value_len == 1 && h[i].value[0] == '0' ? 0 : 1;
}

static void u_head(struct http_subreq *sr, const struct arn_h1_msg *m)
{
	struct http_grpc_unary *u = sr->user;
	if (m->status != 200)
		u->status = 1;
	else
		status_of(u, m->hdrs, (unsigned)m->n_hdrs); /* trailers-only */
}

static void u_body(struct http_subreq *sr, const char *d, size_t n)
{
	(void)sr, (void)d, (void)n;
}

static void u_trailers(struct http_subreq *sr, const struct arn_h1_msg *m)
{
	status_of(sr->user, m->trailers, (unsigned)m->n_trailers);
}

static void u_end(struct http_subreq *sr)
{
	struct http_grpc_unary *u = sr->user;
	u->done(u, u->status == 0);
}

static void u_failed(struct http_subreq *sr, const char *why)
{
	(void)why;
	struct http_grpc_unary *u = sr->user;
	u->done(u, false);
}

static void u_sent(struct http_subreq *sr)
{
	struct http_grpc_unary *u = sr->user;
	if (u->sent)
		u->sent(u);
}

const struct http_subreq_ops http_grpc_unary_ops = {
    .on_head = u_head,
    .on_body = u_body,
    .on_end = u_end,
    .on_trailers = u_trailers,
    .on_failed = u_failed,
    .on_sent = u_sent,
};

int http_grpc_call_start(struct http_subreq *sr, struct http_conn *hc,
			 const struct http_grpc_target *t, const char *path, size_t path_len,
			 struct http_grpc_head *hd, const char *msg, size_t len, bool stream,
			 uint32_t deadline_ms, const struct http_subreq_ops *ops, void *user)
{
	struct http_subreq_header *h = hd->h;
	unsigned k = 0;
	h[k++] = (struct http_subreq_header){"content-type", "application/grpc", 12, 16};
	h[k++] = (struct http_subreq_header){"te", "trailers", 2, 8};
	if (t->timeout_ms) {
		int tl = snprintf(hd->tmo, sizeof(hd->tmo), "%um", t->timeout_ms);
		h[k++] = (struct http_subreq_header){"grpc-timeout", hd->tmo, 12, (size_t)tl};
	}
	for (size_t i = 0; i < t->n_md && k < HTTP_SUBREQ_MAX_HDRS; i++)
		h[k++] = (struct http_subreq_header){t->md[i].name, t->md[i].value,
						     t->md[i].name_len, t->md[i].value_len};
	memset(sr, 0, sizeof(*sr));
	sr->stream = stream;
	sr->host = t->authority ? t->authority : t->cluster->name;
	sr->host_len = t->authority ? t->authority_len : t->cluster->len;
	struct http_worker *w = hc->w;
	const struct arn_cfg_gen *g = w->gen_slot ? arn_config_gen_at(w->gen_slot) : NULL;
	return http_subreq_start(sr, hc, g, t->cluster, path, path_len, h, k, msg, len, deadline_ms,
				 ops, user);
}
