/*
 * The rate limit service's gRPC messages by hand (http_rls_grpc.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "http_pb.h"
#include "http_rls_grpc.h"

/* ---- the request, forwards ---------------------------------------------------------------- */

static void put(struct http_rls_req *w, const void *p, size_t n)
{
	if (w->err || n > w->cap - w->len) {
		w->err = true;
		return;
	}
	if (n)
		memcpy(w->b + w->len, p, n);
	w->len += n;
}

static void put_varint(struct http_rls_req *w, uint64_t v)
{
	uint8_t t[PB_VARINT_MAX];
	put(w, t, pb_varint(t, v));
}

/* A length-delimited field's tag and length (the field numbers here
 * are below 16: one byte of tag). */
static void put_len(struct http_rls_req *w, uint32_t field, size_t n)
{
	uint8_t tag = (uint8_t)(field << 3 | 2);
	put(w, &tag, 1);
	put_varint(w, n);
}

/* A string field (proto3: none when empty). */
static void put_str(struct http_rls_req *w, uint32_t field, const char *p, size_t n)
{
	if (!n)
		return;
	put_len(w, field, n);
	put(w, p, n);
}

static size_t str_size(size_t n)
{
	return n ? 1 + pb_vsize(n) + n : 0;
}

void http_rls_req_start(struct http_rls_req *w, uint8_t *buf, size_t cap, const char *domain,
			size_t dlen)
{
	*w = (struct http_rls_req){.b = buf, .cap = cap};
	uint8_t pre[5] = {0};
	put(w, pre, 5);
	put_str(w, 1, domain, dlen); /* RateLimitRequest.domain */
}

void http_rls_req_desc(struct http_rls_req *w, const struct arn_rl_desc *d)
{
	/* RateLimitRequest.descriptors = 2: RateLimitDescriptor {entries = 1:
	 * Entry {key = 1, value = 2}} */
	size_t dsz = 0;
	for (size_t i = 0; i < d->n_entries; i++) {
		size_t e = str_size(d->entries[i].key_len) + str_size(d->entries[i].value_len);
		dsz += 1 + pb_vsize(e) + e;
	}
	put_len(w, 2, dsz);
	for (size_t i = 0; i < d->n_entries; i++) {
		const struct arn_cfg_rl_entry *en = &d->entries[i];
		put_len(w, 1, str_size(en->key_len) + str_size(en->value_len));
		put_str(w, 1, en->key, en->key_len);
		put_str(w, 2, en->value, en->value_len);
	}
}

long http_rls_req_end(struct http_rls_req *w)
{
	if (w->err || w->len < 5 || w->len - 5 > UINT32_MAX)
		return -E2BIG;
	size_t n = w->len - 5;
	w->b[0] = 0; /* not compressed */
	w->b[1] = (uint8_t)(n >> 24);
	w->b[2] = (uint8_t)(n >> 16);
	w->b[3] = (uint8_t)(n >> 8);
	w->b[4] = (uint8_t)n;
	return (long)w->len;
}

/* ---- the answer ------------------------------------------------------------------------------ */

/* A HeaderValue {key = 1, value = 2, raw_value = 3 (the value's bytes
 * when value is unset)}. */
static int header_value(uint8_t *p, size_t n, struct http_rls_hv *out)
{
	struct pbr r = {p, p + n};
	struct fld f;
	int rc;
	uint8_t *key = NULL, *val = NULL, *raw = NULL;
	size_t kl = 0, vl = 0, rl = 0;
	while ((rc = r_next(&r, &f)) == 1) {
		if (f.num >= 1 && f.num <= 3 && want_len(&f))
			return -EBADMSG;
		if (f.num == 1)
			key = f.data, kl = f.len;
		else if (f.num == 2)
			val = f.data, vl = f.len;
		else if (f.num == 3)
			raw = f.data, rl = f.len;
	}
	if (rc < 0)
		return rc;
	if (!vl && raw)
		val = raw, vl = rl;
	if (!key || !name_ok(key, kl) || !value_ok(val, vl) || vl > UINT32_MAX)
		return -EBADMSG;
	*out =
	    (struct http_rls_hv){(const char *)key, (const char *)val, (uint32_t)kl, (uint32_t)vl};
	return 0;
}

static int push_hv(const struct fld *f, struct http_rls_hv *arr, uint8_t *n)
{
	if (want_len(f))
		return -EBADMSG;
	if (*n >= HTTP_RLS_GRPC_HDRS)
		return -E2BIG;
	int rc = header_value(f->data, f->len, &arr[*n]);
	if (rc == 0)
		(*n)++;
	return rc;
}

/* RateLimit {requests_per_unit = 1, unit = 2, name = 3}. */
static int current_limit(uint8_t *p, size_t n, struct http_rls_status *s)
{
	struct pbr r = {p, p + n};
	struct fld f;
	int rc;
	s->has_limit = true;
	while ((rc = r_next(&r, &f)) == 1) {
		if (f.num == 1 && f.wt == 0) {
			s->rpu = (uint32_t)f.v;
		} else if (f.num == 2 && f.wt == 0) {
			s->unit = (uint32_t)f.v;
		} else if (f.num == 3) {
			/* a header value's part (x-ratelimit-limit's quota policy) */
			if (want_len(&f) || !value_ok(f.data, f.len) || f.len > 256)
				return -EBADMSG;
			s->name = (const char *)f.data;
			s->name_len = (uint32_t)f.len;
		}
	}
	return rc;
}

/* DescriptorStatus {code = 1, current_limit = 2, limit_remaining = 3,
 * duration_until_reset = 4 {seconds = 1, nanos = 2}, quota = 5}. */
static int status(const struct fld *sf, struct http_rls_status *s)
{
	if (want_len(sf))
		return -EBADMSG;
	struct pbr r = {sf->data, sf->data + sf->len};
	struct fld f;
	int rc;
	*s = (struct http_rls_status){0};
	while ((rc = r_next(&r, &f)) == 1) {
		if (f.num == 2) {
			if (want_len(&f))
				return -EBADMSG;
			rc = current_limit(f.data, f.len, s);
			if (rc < 0)
				return rc;
		} else if (f.num == 3 && f.wt == 0) {
			s->remaining = (uint32_t)f.v;
		} else if (f.num == 4) {
			if (want_len(&f))
				return -EBADMSG;
			struct pbr d = {f.data, f.data + f.len};
			struct fld g;
			while ((rc = r_next(&d, &g)) == 1)
				if (g.num == 1 && g.wt == 0)
					s->reset_s = (int64_t)g.v;
			if (rc < 0)
				return rc;
		}
	}
	return rc;
}

int http_rls_grpc_decode(uint8_t *msg, size_t len, struct http_rls_resp *out)
{
	memset(out, 0, sizeof(*out));
	struct pbr r = {msg, msg + len};
	struct fld f;
	int rc;
	while ((rc = r_next(&r, &f)) == 1) {
		switch (f.num) {
		case 1: /* overall_code */
			if (f.wt != 0)
				return -EBADMSG;
			out->code = f.v > UINT32_MAX ? UINT32_MAX : (uint32_t)f.v;
			rc = 0;
			break;
		case 2: /* statuses */
			if (out->n_st >= HTTP_RLS_GRPC_STATUSES)
				return -E2BIG;
			rc = status(&f, &out->st[out->n_st]);
			if (rc == 0)
				out->n_st++;
			break;
		case 3: /* response_headers_to_add */
			rc = push_hv(&f, out->rsp, &out->n_rsp);
			break;
		case 4: /* request_headers_to_add */
			rc = push_hv(&f, out->req, &out->n_req);
			break;
		case 5: /* raw_body */
			if (want_len(&f) || f.len > UINT32_MAX)
				return -EBADMSG;
			out->body = (const char *)f.data;
			out->body_len = (uint32_t)f.len;
			rc = 0;
			break;
		default: /* dynamic_metadata (6), quota (7): not kept */
			rc = 0;
			break;
		}
		if (rc < 0)
			return rc;
	}
	return rc;
}

/* ---- x-ratelimit-* ----------------------------------------------------------------------------
 */

/* Envoy's convertRateLimitUnit: a unit's window in seconds, 0 for none. */
static uint32_t window(uint32_t unit)
{
	switch (unit) {
	case 1: /* SECOND */
		return 1;
	case 2: /* MINUTE */
		return 60;
	case 3: /* HOUR */
		return 60 * 60;
	case 4: /* DAY */
		return 24 * 60 * 60;
	case 5: /* MONTH */
		return 30 * 24 * 60 * 60;
	case 6: /* YEAR */
		return 365 * 24 * 60 * 60;
	case 7: /* WEEK (newer than the API copy) */
		return 7 * 24 * 60 * 60;
	default:
		return 0;
	}
}

int http_rls_xrl(const struct http_rls_resp *r, struct http_rls_xrl *x)
{
	const struct http_rls_status *min = NULL;
	for (unsigned i = 0; i < r->n_st; i++)
		if (r->st[i].has_limit && (!min || r->st[i].remaining < min->remaining))
			min = &r->st[i];
	if (!min)
		return 0;
	size_t cap = sizeof(x->limit);
	int k = snprintf(x->limit, cap, "%" PRIu32, min->rpu);
	size_t n = (size_t)k;
	for (unsigned i = 0; i < r->n_st; i++) {
		const struct http_rls_status *s = &r->st[i];
		uint32_t w = s->has_limit ? window(s->unit) : 0;
		if (!w)
			continue;
		k = snprintf(x->limit + n, cap - n, ", %" PRIu32 ";w=%" PRIu32, s->rpu, w);
		if (k < 0 || (size_t)k >= cap - n)
			return -E2BIG;
		n += (size_t)k;
		if (s->name_len) {
			k = snprintf(x->limit + n, cap - n, ";name=\"%.*s\"", (int)s->name_len,
				     s->name);
			if (k < 0 || (size_t)k >= cap - n)
				return -E2BIG;
			n += (size_t)k;
		}
	}
	x->limit_len = (uint32_t)n;
	x->remaining_len =
	    (uint32_t)snprintf(x->remaining, sizeof(x->remaining), "%" PRIu32, min->remaining);
	x->reset_len = (uint32_t)snprintf(x->reset, sizeof(x->reset), "%" PRId64, min->reset_s);
	return 1;
}
