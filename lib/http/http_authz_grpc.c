/*
 * ext_authz's gRPC messages by hand (http_authz_grpc.h).
 *
 * The request is written backwards from the end of the caller's buffer:
 * a message's fields in reverse order, then its length and tag, so that
 * the bytes come out in field order with every length known. The answer
 * is read in place with a bounded reader: any wire type but the four
 * proto3 uses, a length past the end, or a varint past ten bytes is
 * -EBADMSG; unknown fields are skipped, as proto3 parsers do.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "arn_config.h"
#include "arn_h1.h"
#include "http_authz_grpc.h"
#include "http_pb.h"

/* ---- the request, backwards ------------------------------------------------------------ */

struct pbw {
	uint8_t *b;
	size_t pos; /* the bytes written are b[pos, cap) */
	bool err;
};

static void w_bytes(struct pbw *w, const void *p, size_t n)
{
	if (w->err || n > w->pos) {
		w->err = true;
		return;
	}
	w->pos -= n;
	if (n)
		memcpy(w->b + w->pos, p, n);
}

static void w_varint(struct pbw *w, uint64_t v)
{
	uint8_t t[PB_VARINT_MAX];
	w_bytes(w, t, pb_varint(t, v));
}

static void w_tag(struct pbw *w, uint32_t field, uint32_t wt)
{
	w_varint(w, (uint64_t)field << 3 | wt);
}

/* A string field (proto3: none when empty). */
static void w_str(struct pbw *w, uint32_t field, const char *p, size_t n)
{
	if (!n)
		return;
	w_bytes(w, p, n);
	w_varint(w, n);
	w_tag(w, field, 2);
}

static void w_u64(struct pbw *w, uint32_t field, uint64_t v)
{
	if (!v)
		return;
	w_varint(w, v);
	w_tag(w, field, 0);
}

/* A message field whose fields were written since @p mark. */
static void w_close(struct pbw *w, uint32_t field, size_t mark)
{
	if (w->err)
		return;
	w_varint(w, mark - w->pos);
	w_tag(w, field, 2);
}

/* A map<string, string> entry. */
static void w_entry(struct pbw *w, uint32_t field, const char *k, size_t kl, const char *v,
		    size_t vl)
{
	size_t mark = w->pos;
	w_str(w, 2, v, vl);
	w_str(w, 1, k, kl);
	w_close(w, field, mark);
}

/* A Peer: address.socket_address {address, port_value}. */
static void w_peer(struct pbw *w, uint32_t field, uint32_t addr, uint16_t port)
{
	char a[16];
	int n = snprintf(a, sizeof(a), "%u.%u.%u.%u", addr >> 24, (addr >> 16) & 255,
			 (addr >> 8) & 255, addr & 255);
	size_t peer = w->pos;
	size_t ad = w->pos;
	size_t sa = w->pos;
	w_u64(w, 3, port);
	w_str(w, 2, a, (size_t)n);
	w_close(w, 1, sa); /* Address.socket_address */
	w_close(w, 1, ad); /* Peer.address */
	w_close(w, field, peer);
}

static bool ieq(const char *a, size_t al, const char *b, size_t bl)
{
	if (al != bl)
		return false;
	for (size_t i = 0; i < al; i++) {
		char x = a[i], y = b[i];
		if (x >= 'A' && x <= 'Z')
			x = (char)(x + 32);
		if (y >= 'A' && y <= 'Z')
			y = (char)(y + 32);
		if (x != y)
			return false;
	}
	return true;
}

/* Does header @p i of @p r go (kept, not host, not a client's
 * x-envoy-auth-partial-body)? */
static bool goes(const struct http_authz_grpc_req *r, unsigned i)
{
	const struct arn_h1_header *h = &r->m->hdrs[i];
	if (!h->name_len || h->name[0] == ':' || ieq(h->name, h->name_len, "host", 4) ||
	    ieq(h->name, h->name_len, "x-envoy-auth-partial-body", 25))
		return false;
	return !r->keep || r->keep(r->keep_ctx, h->name, h->name_len);
}

/* HttpRequest.headers: a map entry per name (lower case), the values of
 * the lines of that name joined with "," (Envoy's), the pseudo-headers
 * first in Envoy's map; written last entry first. */
static void w_headers(struct pbw *w, const struct http_authz_grpc_req *r)
{
	const struct arn_h1_msg *m = r->m;
	if (r->with_body)
		w_entry(w, 3, "x-envoy-auth-partial-body", 25, r->partial ? "true" : "false",
			r->partial ? 4 : 5);
	for (unsigned i = m->n_hdrs; i-- > 0 && !w->err;) {
		const struct arn_h1_header *h = &m->hdrs[i];
		if (!goes(r, i))
			continue;
		bool first = true;
		for (unsigned j = 0; j < i && first; j++)
			first = !ieq(m->hdrs[j].name, m->hdrs[j].name_len, h->name, h->name_len);
		if (!first)
			continue; /* its first line writes the entry */
		size_t mark = w->pos;
		size_t vmark = w->pos;
		bool any = false;
		for (unsigned k = m->n_hdrs; k-- > i;) {
			const struct arn_h1_header *o = &m->hdrs[k];
			if (!ieq(o->name, o->name_len, h->name, h->name_len))
				continue;
			if (any)
				w_bytes(w, ",", 1);
			w_bytes(w, o->value, o->value_len);
			any = true;
		}
		if (w->err)
			return;
		if (vmark != w->pos) {
			w_varint(w, vmark - w->pos);
			w_tag(w, 2, 2);
		}
		w_bytes(w, h->name, h->name_len);
		if (w->err)
			return;
		for (size_t k = 0; k < h->name_len; k++) {
			uint8_t *c = &w->b[w->pos + k];
			if (*c >= 'A' && *c <= 'Z')
				*c = (uint8_t)(*c + 32);
		}
		w_varint(w, h->name_len);
		w_tag(w, 1, 2);
		w_close(w, 3, mark);
	}
	w_entry(w, 3, ":scheme", 7, r->scheme, strlen(r->scheme));
	w_entry(w, 3, ":path", 5, r->path, r->path_len);
	w_entry(w, 3, ":method", 7, r->method, r->method_len);
	w_entry(w, 3, ":authority", 10, r->host, r->host_len);
}

long http_authz_grpc_encode(const struct http_authz_grpc_req *r, uint8_t *buf, size_t cap)
{
	struct pbw w = {.b = buf, .pos = cap};
	size_t req = w.pos;
	size_t attrs = w.pos;
	for (size_t i = r->n_ctx_vh; i-- > 0;) { /* context_extensions = 10 */
		bool over = false;		 /* the route's has the key */
		for (size_t k = 0; k < r->n_ctx && !over; k++)
			over = r->ctx[k].name_len == r->ctx_vh[i].name_len &&
			       memcmp(r->ctx[k].name, r->ctx_vh[i].name, r->ctx[k].name_len) == 0;
		if (!over)
			w_entry(&w, 10, r->ctx_vh[i].name, r->ctx_vh[i].name_len,
				r->ctx_vh[i].value, r->ctx_vh[i].value_len);
	}
	for (size_t i = r->n_ctx; i-- > 0;)
		w_entry(&w, 10, r->ctx[i].name, r->ctx[i].name_len, r->ctx[i].value,
			r->ctx[i].value_len);
	size_t request = w.pos; /* request = 4 */
	size_t http = w.pos;	/* Request.http = 2 */
	if (r->with_body && r->body_len) {
		if (r->raw_body) /* raw_body = 12 (bytes) */
			w_str(&w, 12, r->body, r->body_len);
		else /* body = 11 (string; Envoy copies the bytes as they are) */
			w_str(&w, 11, r->body, r->body_len);
	}
	w_str(&w, 10, r->protocol, strlen(r->protocol));
	w_u64(&w, 9, r->with_body ? r->body_len : 0); /* size: the bytes received */
	w_str(&w, 6, r->scheme, strlen(r->scheme));
	w_str(&w, 5, r->host, r->host_len);
	w_str(&w, 4, r->path, r->path_len);
	w_headers(&w, r);
	w_str(&w, 2, r->method, r->method_len);
	char id[24];
	int idl = snprintf(id, sizeof(id), "%llu", (unsigned long long)r->id);
	w_str(&w, 1, id, (size_t)idl);
	w_close(&w, 2, http);
	size_t ts = w.pos; /* Request.time = 1: Timestamp {seconds, nanos} */
	int64_t us = r->time_us > 0 ? r->time_us : 0;
	w_u64(&w, 2, (uint64_t)(us % 1000000) * 1000);
	w_u64(&w, 1, (uint64_t)(us / 1000000));
	w_close(&w, 1, ts);
	w_close(&w, 4, request);
	w_peer(&w, 2, r->daddr, r->dport); /* destination */
	w_peer(&w, 1, r->saddr, r->sport); /* source */
	w_close(&w, 1, attrs);		   /* CheckRequest.attributes */
	size_t n = req - w.pos;
	uint8_t pre[5] = {0, (uint8_t)(n >> 24), (uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n};
	w_bytes(&w, pre, 5);
	if (w.err || n > UINT32_MAX)
		return -E2BIG;
	return (long)w.pos;
}

/* ---- the answer ---------------------------------------------------------------------------- */

/* A HeaderValueOption {header = 1 {key = 1, value = 2, raw_value = 3},
 * append = 2 (BoolValue), append_action = 3, keep_empty_value = 4} into
 * @p out: its op as Envoy's filter applies it (the deprecated append set:
 * true joins the value to the existing one with "," (appendCopy), false
 * sets; else append_action, whose default APPEND_IF_EXISTS_OR_ADD adds a
 * line (addCopy)). */
static int hvo(uint8_t *p, size_t n, struct http_authz_hv *out)
{
	struct pbr r = {p, p + n};
	struct fld f;
	int rc;
	bool has_append = false, append = false;
	uint64_t action = 0;
	uint8_t *key = NULL, *val = NULL, *raw = NULL;
	size_t kl = 0, vl = 0, rl = 0;
	while ((rc = r_next(&r, &f)) == 1) {
		if (f.num == 1) {
			if (want_len(&f))
				return -EBADMSG;
			struct pbr h = {f.data, f.data + f.len};
			struct fld g;
			key = val = raw = NULL;
			kl = vl = rl = 0;
			while ((rc = r_next(&h, &g)) == 1) {
				if (g.num >= 1 && g.num <= 3 && want_len(&g))
					return -EBADMSG;
				if (g.num == 1)
					key = g.data, kl = g.len;
				else if (g.num == 2)
					val = g.data, vl = g.len;
				else if (g.num == 3)
					raw = g.data, rl = g.len;
			}
			if (rc < 0)
				return rc;
		} else if (f.num == 2) {
			if (want_len(&f))
				return -EBADMSG;
			struct pbr b = {f.data, f.data + f.len};
			struct fld g;
			has_append = true;
			append = false;
			while ((rc = r_next(&b, &g)) == 1)
				if (g.num == 1 && g.wt == 0)
					append = g.v != 0;
			if (rc < 0)
				return rc;
		} else if (f.num == 3 && f.wt == 0) {
			action = f.v;
		}
	}
	if (rc < 0)
		return rc;
	if (!vl && raw) /* raw_value: the value's bytes when value is unset */
		val = raw, vl = rl;
	if (!key || !name_ok(key, kl) || !value_ok(val, vl) || vl > UINT32_MAX)
		return -EBADMSG;
	uint8_t op;
	if (has_append)
		op = append ? ARN_H1_EDIT_APPEND_VALUE : ARN_H1_EDIT_SET;
	else if (action == 1)
		op = ARN_H1_EDIT_ADD_IF_ABSENT;
	else if (action == 2)
		op = ARN_H1_EDIT_SET;
	else if (action == 3)
		op = ARN_H1_EDIT_SET_IF_PRESENT;
	else /* APPEND_IF_EXISTS_OR_ADD (0), or an unknown action: Envoy's default */
		op = ARN_H1_EDIT_ADD;
	*out = (struct http_authz_hv){(const char *)key, (const char *)val, (uint32_t)kl,
				      (uint32_t)vl, op};
	return 0;
}

static int push_hvo(struct fld *f, struct http_authz_hv *arr, uint8_t *n)
{
	if (want_len(f))
		return -EBADMSG;
	if (*n >= HTTP_AUTHZ_GRPC_HDRS)
		return -E2BIG;
	int rc = hvo(f->data, f->len, &arr[*n]);
	if (rc == 0)
		(*n)++;
	return rc;
}

/* A QueryParameter (key = 1, value = 2), the last of each field read. */
static int query_param(uint8_t *p, size_t n, struct http_qkv *out)
{
	struct pbr r = {p, p + n};
	struct fld f;
	int rc;
	*out = (struct http_qkv){0};
	while ((rc = r_next(&r, &f)) == 1) {
		if (f.num != 1 && f.num != 2)
			continue;
		if (want_len(&f) || f.len > UINT32_MAX)
			return -EBADMSG;
		if (f.num == 1)
			out->k = (const char *)f.data, out->kl = (uint32_t)f.len;
		else
			out->v = (const char *)f.data, out->vl = (uint32_t)f.len;
	}
	return rc;
}

static int ok_response(uint8_t *p, size_t n, struct http_authz_grpc_resp *o)
{
	struct pbr r = {p, p + n};
	struct fld f;
	int rc;
	while ((rc = r_next(&r, &f)) == 1) {
		switch (f.num) {
		case 2: /* headers */
			rc = push_hvo(&f, o->h, &o->n_h);
			break;
		case 5: /* headers_to_remove */
			if (want_len(&f))
				return -EBADMSG;
			if (o->n_rm >= HTTP_AUTHZ_GRPC_HDRS)
				return -E2BIG;
			if (!name_ok(f.data, f.len))
				return -EBADMSG;
			o->rm[o->n_rm++] = (struct http_authz_hv){
			    (const char *)f.data, NULL, (uint32_t)f.len, 0, ARN_H1_EDIT_REMOVE};
			rc = 0;
			break;
		case 6: /* response_headers_to_add */
			rc = push_hvo(&f, o->rsp, &o->n_rsp);
			break;
		case 7: /* query_parameters_to_set: QueryParameter {key 1, value 2} */
			if (want_len(&f))
				return -EBADMSG;
			if (o->n_qset >= HTTP_AUTHZ_GRPC_HDRS)
				return -E2BIG;
			rc = query_param(f.data, f.len, &o->qset[o->n_qset]);
			if (rc == 0)
				o->n_qset++;
			break;
		case 8: /* query_parameters_to_remove: a key */
			if (want_len(&f) || f.len > UINT32_MAX)
				return -EBADMSG;
			if (o->n_qrm >= HTTP_AUTHZ_GRPC_HDRS)
				return -E2BIG;
			o->qrm[o->n_qrm++] =
			    (struct http_qkv){(const char *)f.data, NULL, (uint32_t)f.len, 0};
			rc = 0;
			break;
		default: /* dynamic_metadata (3): Arion keeps none */
			rc = 0;
			break;
		}
		if (rc < 0)
			return rc;
	}
	return rc;
}

static int denied_response(uint8_t *p, size_t n, struct http_authz_grpc_resp *o)
{
	struct pbr r = {p, p + n};
	struct fld f;
	int rc;
	while ((rc = r_next(&r, &f)) == 1) {
		rc = 0;
		if (f.num == 1) { /* status: HttpStatus {code = 1} */
			if (want_len(&f))
				return -EBADMSG;
			struct pbr s = {f.data, f.data + f.len};
			struct fld g;
			o->http_status = 0;
			while ((rc = r_next(&s, &g)) == 1)
				if (g.num == 1 && g.wt == 0)
					o->http_status = g.v > 999 ? 1000 : (uint32_t)g.v;
		} else if (f.num == 2) {
			rc = push_hvo(&f, o->h, &o->n_h);
		} else if (f.num == 3) {
			if (want_len(&f) || f.len > UINT32_MAX)
				return -EBADMSG;
			o->body = (const char *)f.data;
			o->body_len = (uint32_t)f.len;
		}
		if (rc < 0)
			return rc;
	}
	return rc;
}

int http_authz_grpc_decode(uint8_t *msg, size_t len, struct http_authz_grpc_resp *out)
{
	memset(out, 0, sizeof(*out));
	struct pbr r = {msg, msg + len};
	struct fld f, which = {0};
	int rc;
	while ((rc = r_next(&r, &f)) == 1) {
		if (f.num == 1) { /* status: google.rpc.Status {code = 1} */
			if (want_len(&f))
				return -EBADMSG;
			struct pbr s = {f.data, f.data + f.len};
			struct fld g;
			out->code = 0;
			while ((rc = r_next(&s, &g)) == 1)
				if (g.num == 1 && g.wt == 0)
					out->code = (int32_t)g.v;
			if (rc < 0)
				return rc;
		} else if (f.num == 2 || f.num == 3) {
			/* the oneof http_response: the last one read wins */
			if (want_len(&f))
				return -EBADMSG;
			which = f;
		}
	}
	if (rc < 0)
		return rc;
	out->denied = out->code != 0;
	/* the member that goes with the status: ok_response with OK,
	 * denied_response without (Envoy reads no other) */
	if (!out->denied && which.num == 3)
		return ok_response(which.data, which.len, out);
	if (out->denied && which.num == 2)
		return denied_response(which.data, which.len, out);
	return 0;
}

long http_authz_grpc_unframe(uint8_t *b, size_t n, uint8_t **msg)
{
	if (n < 5 || b[0] != 0)
		return -EBADMSG; /* short, or compressed (Arion asks for none) */
	uint32_t l = (uint32_t)b[1] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 8 | b[4];
	if ((size_t)l != n - 5)
		return -EBADMSG;
	*msg = b + 5;
	return (long)l;
}
