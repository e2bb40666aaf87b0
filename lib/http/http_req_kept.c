/*
 * What the request-head filters share (http_req_kept.h).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "arn_h1.h"
#include "arn_config.h"
#include "http_int.h"
#include "http_req_kept.h"
#include "http_stream.h"
#include "arn_rbac.h"

/* the realm's path (Envoy's MaximumUriLength) and host */
#define URI_PATH_MAX 256
#define URI_HOST_MAX 1024

char *http_st_text(struct http_stream *st, size_t n)
{
	if (!st->res || st->text_len > HTTP_TEXT || n > HTTP_TEXT - st->text_len)
		return NULL;
	char *p = st->res->text + st->text_len;
	st->text_len += (uint32_t)n;
	return p;
}

const struct http_req_edits *http_req_edits_kept(const struct http_stream *st)
{
	return st->jwt_edits && st->res
		   ? (const struct http_req_edits *)(const void *)(st->res->text + st->jwt_edits -
								   1)
		   : NULL;
}

int http_req_edits_keep(struct http_stream *st, const struct arn_h1_edit *e, unsigned n)
{
	if (!n)
		return 0;
	const struct http_req_edits *old = http_req_edits_kept(st);
	unsigned on = old ? old->n : 0;
	if (!st->res || st->text_len >= HTTP_TEXT)
		return -ENOSPC;
	/* a new block (aligned) holding the kept ones, then these: the text
	 * is the stream's, so the old block is simply left behind */
	uintptr_t a = (uintptr_t)(st->res->text + st->text_len);
	size_t skip = (size_t)((8 - a % 8) % 8);
	size_t sz = offsetof(struct http_req_edits, e) + (on + n) * sizeof(e[0]);
	char *t = http_st_text(st, skip + sz);
	if (!t)
		return -ENOSPC;
	struct http_req_edits *k = (struct http_req_edits *)(void *)(t + skip);
	if (on)
		memcpy(k->e, old->e, on * sizeof(e[0]));
	memcpy(k->e + on, e, n * sizeof(e[0]));
	k->n = on + n;
	st->jwt_edits = (uint16_t)((char *)k - st->res->text + 1);
	return 0;
}

int http_route_path_keep(struct http_stream *st)
{
	if (st->route_path)
		return 0;
	if (!st->res || st->text_len >= HTTP_TEXT)
		return -ENOSPC;
	uintptr_t a = (uintptr_t)(st->res->text + st->text_len);
	size_t skip = (size_t)((8 - a % 8) % 8);
	char *t = http_st_text(st, skip + sizeof(struct arn_h1_slice));
	if (!t)
		return -ENOSPC;
	struct arn_h1_slice *k = (struct arn_h1_slice *)(void *)(t + skip);
	*k = st->req.m.path; /* its bytes are the request head's, kept with it */
	_Static_assert(HTTP_TEXT < UINT16_MAX, "route_path holds 1 + an offset in the text");
	st->route_path = (uint16_t)((char *)k - st->res->text + 1);
	return 0;
}

const struct arn_h1_slice *http_route_path(const struct http_stream *st)
{
	return st->route_path && st->res
		   ? (const struct arn_h1_slice *)(const void *)(st->res->text + st->route_path - 1)
		   : NULL;
}

/* Entry @p name's first line in @p h from @p from (@p n entries), or n. */
static size_t view_find(const struct arn_cfg_header *h, size_t from, size_t n, const char *name,
			size_t len)
{
	for (size_t i = from; i < n; i++)
		if (h[i].name_len == len && strncasecmp(h[i].name, name, len) == 0)
			return i;
	return n;
}

static void view_drop(struct arn_cfg_header *h, size_t *n, size_t i)
{
	memmove(h + i, h + i + 1, (*n - i - 1) * sizeof(h[0]));
	(*n)--;
}

bool http_req_edits_view(const struct http_stream *st, struct arn_cfg_header *h, size_t *n,
			 size_t cap)
{
	const struct http_req_edits *k = http_req_edits_kept(st);
	bool fit = true;
	for (unsigned j = 0; k && j < k->n; j++) {
		const struct arn_h1_edit *e = &k->e[j];
		size_t i = view_find(h, 0, *n, e->name, e->name_len);
		bool found = i < *n, set = false, add = false;
		switch (e->op) {
		case ARN_H1_EDIT_REMOVE:
			while ((i = view_find(h, 0, *n, e->name, e->name_len)) < *n)
				view_drop(h, n, i);
			continue;
		case ARN_H1_EDIT_SET:
			set = found;
			add = !found;
			break;
		case ARN_H1_EDIT_SET_IF_PRESENT:
			set = found;
			break;
		case ARN_H1_EDIT_ADD_IF_ABSENT:
			add = !found;
			break;
		default: /* ADD, APPEND_VALUE: one more line */
			add = true;
			break;
		}
		if (set) {
			h[i].value = e->value;
			h[i].value_len = e->value_len;
			size_t d;
			while ((d = view_find(h, i + 1, *n, e->name, e->name_len)) < *n)
				view_drop(h, n, d);
		} else if (add && *n < cap) {
			h[(*n)++] =
			    (struct arn_cfg_header){e->name, e->name_len, e->value, e->value_len};
		} else if (add) {
			fit = false;
		}
	}
	return fit;
}

unsigned http_www_authenticate(struct http_stream *st, const char *scheme, const char *suffix,
			       struct arn_h1_edit *e)
{
	struct http_conn *hc = st->hc;
	const struct arn_h1_msg *m = &st->req.m;
	/* Envoy's buildOriginalUri: x-forwarded-proto (the connection's,
	 * unless a trusted hop's is kept), host, path to 256 bytes */
	size_t pl = 0, hl = st->auth_len < URI_HOST_MAX ? st->auth_len : URI_HOST_MAX;
	const char *xfp = NULL;
	if (hc->hcm->xff_num_trusted_hops) {
		int i = arn_h1_find(m, "x-forwarded-proto", 17, 0);
		if (i >= 0 && m->hdrs[i].value_len) {
			xfp = m->hdrs[i].value;
			pl = m->hdrs[i].value_len;
		}
	}
	if (!xfp) {
		xfp = hc->tls ? "https" : "http";
		pl = strlen(xfp);
	}
	size_t path_len = m->path.len < URI_PATH_MAX ? m->path.len : URI_PATH_MAX;
	size_t sl = strlen(scheme), xl = strlen(suffix);
	size_t need = sl + 8 + pl + 3 + hl + path_len + 1 + xl + 1;
	char *t = http_st_text(st, need);
	if (!t)
		return 0;
	int k = snprintf(t, need, "%s realm=\"%.*s://%.*s%.*s\"%s", scheme, (int)pl, xfp, (int)hl,
			 st->auth ? st->auth : "", (int)path_len, m->path.p, suffix);
	/* never a CR / LF from the request into the reply's header */
	if (k <= 0 || (size_t)k >= need || memchr(t, '\r', (size_t)k) || memchr(t, '\n', (size_t)k))
		return 0;
	e[0] = (struct arn_h1_edit){.name = "www-authenticate",
				    .name_len = 16,
				    .value = t,
				    .value_len = (uint32_t)k,
				    .op = ARN_H1_EDIT_SET};
	return 1;
}

bool http_route_cluster(const struct arn_cfg_route_action *ra, const struct arn_cfg_request *req,
			struct arn_cfg_ref *out)
{
	if (ra->spec != ARN_CFG_CLUSTER_HEADER)
		return arn_cfg_route_cluster(ra, req, out) == 0;
	const char *v = NULL;
	size_t vl = 0;
	if (arn_rbac_request_header((void *)(uintptr_t)req, ra->cluster.name, ra->cluster.len, NULL,
				    0, &v, &vl) <= 0 ||
	    !vl)
		return false;
	*out = (struct arn_cfg_ref){.name = v, .len = vl, .hash = arn_cfg_hash(v, vl)};
	return true;
}
