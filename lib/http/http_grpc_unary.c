/*
 * A unary gRPC call whose answer counts only by its grpc-status
 * (http_grpc_unary.h).
 */
#include "http_grpc_unary.h"

#include "arn_h1.h"

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

const struct http_subreq_ops http_grpc_unary_ops = {
    .on_head = u_head,
    .on_body = u_body,
    .on_end = u_end,
    .on_trailers = u_trailers,
    .on_failed = u_failed,
};
