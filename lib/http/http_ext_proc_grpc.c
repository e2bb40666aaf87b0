/*
 * ext_proc's gRPC messages by hand (http_ext_proc_grpc.h).
 *
 * The request is a ProcessingRequest of headers: its sizes are computed
 * first (one pass over the headers), then it is written forward, so no
 * length is guessed. The answer is read in place with the bounded reader
 * of http_pb.h: unknown fields are skipped, as proto3 parsers do.
 */
#include <errno.h>
#include <string.h>

#include "http_ext_proc_grpc.h"
#include "http_pb.h"

/* ---- the request ----------------------------------------------------------------------- */

/* A length-delimited field of one-byte tag and @p len bytes. */
static size_t ld(size_t len)
{
	return 1 + pb_vsize(len) + len;
}

static uint8_t *put_ld(uint8_t *p, uint8_t tag, size_t len)
{
	*p++ = tag;
	return p + pb_varint(p, len);
}

/* HeaderValue {key = 1, raw_value = 3}: its size. */
static size_t hv_size(const struct http_ext_proc_hdr *h)
{
	return ld(h->name_len) + (h->value_len ? ld(h->value_len) : 0);
}

long http_ext_proc_encode_headers(bool response, const struct http_ext_proc_hdr *h, unsigned n,
				  bool eos, uint8_t *buf, size_t cap)
{
	size_t map = 0; /* HeaderMap.headers = 1, repeated */
	for (unsigned i = 0; i < n; i++)
		map += ld(hv_size(&h[i]));
	size_t hh = (map ? ld(map) : 0) + (eos ? 2 : 0); /* HttpHeaders */
	/* request_headers = 2 / response_headers = 3; metadata_context = 8 (empty) */
	size_t req = ld(hh) + 2;
	size_t total = 5 + req;
	if (total > cap || req > UINT32_MAX)
		return -E2BIG;
	uint8_t *p = buf;
	*p++ = 0;
	*p++ = (uint8_t)(req >> 24);
	*p++ = (uint8_t)(req >> 16);
	*p++ = (uint8_t)(req >> 8);
	*p++ = (uint8_t)req;
	p = put_ld(p, response ? (3 << 3 | 2) : (2 << 3 | 2), hh);
	if (map)
		p = put_ld(p, 1 << 3 | 2, map);
	for (unsigned i = 0; i < n; i++) {
		p = put_ld(p, 1 << 3 | 2, hv_size(&h[i]));
		p = put_ld(p, 1 << 3 | 2, h[i].name_len);
		for (uint32_t k = 0; k < h[i].name_len; k++) {
			char c = h[i].name[k];
			*p++ = (uint8_t)(c >= 'A' && c <= 'Z' ? c + 32 : c);
		}
		if (h[i].value_len) {
			p = put_ld(p, 3 << 3 | 2, h[i].value_len);
			memcpy(p, h[i].value, h[i].value_len);
			p += h[i].value_len;
		}
	}
	if (eos) {
		*p++ = 3 << 3; /* end_of_stream = 3 */
		*p++ = 1;
	}
	*p++ = 8 << 3 | 2; /* metadata_context = 8, empty */
	*p++ = 0;
	return (long)(p - buf);
}

long http_ext_proc_encode_body_head(bool response, size_t blen, bool eos, uint8_t *buf, size_t cap)
{
	/* HttpBody {body = 1, end_of_stream = 2}: end_of_stream first, so
	 * the body's bytes end the message */
	size_t hb = ld(blen) + (eos ? 2 : 0);
	/* metadata_context = 8 (empty), then request_body = 4 /
	 * response_body = 5 */
	size_t req = 2 + ld(hb);
	if (req > UINT32_MAX || 5 + req - blen > cap)
		return -E2BIG;
	uint8_t *p = buf;
	*p++ = 0;
	*p++ = (uint8_t)(req >> 24);
	*p++ = (uint8_t)(req >> 16);
	*p++ = (uint8_t)(req >> 8);
	*p++ = (uint8_t)req;
	*p++ = 8 << 3 | 2;
	*p++ = 0;
	p = put_ld(p, response ? (5 << 3 | 2) : (4 << 3 | 2), hb);
	if (eos) {
		*p++ = 2 << 3;
		*p++ = 1;
	}
	p = put_ld(p, 1 << 3 | 2, blen);
	return (long)(p - buf);
}

/* ---- the answer ---------------------------------------------------------------------------- */

/* Scalar fields must be varints, message and string fields
 * length-delimited: anything else is not the message Arion expects. */
static int want_var(const struct fld *f)
{
	return f->wt == 0 ? 0 : -EBADMSG;
}

/* HeaderValueOption {header = 1 {key = 1, value = 2, raw_value = 3},
 * append = 2 (BoolValue {value = 1}), append_action = 3,
 * keep_empty_value = 4}. */
static int hvo(uint8_t *p, size_t n, struct http_ext_proc_set *o)
{
	struct pbr r = {p, p + n};
	struct fld f;
	int rc;
	memset(o, 0, sizeof(*o));
	while ((rc = r_next(&r, &f)) == 1) {
		if (f.num == 1) {
			if (want_len(&f))
				return -EBADMSG;
			struct pbr h = {f.data, f.data + f.len};
			struct fld g;
			const uint8_t *val = NULL, *raw = NULL;
			size_t vl = 0, rl = 0;
			o->has_header = true;
			o->name = NULL;
			o->name_len = 0;
			while ((rc = r_next(&h, &g)) == 1) {
				if (g.num >= 1 && g.num <= 3 && want_len(&g))
					return -EBADMSG;
				if (g.len > UINT32_MAX)
					return -EBADMSG;
				if (g.num == 1)
					o->name = (const char *)g.data,
					o->name_len = (uint32_t)g.len;
				else if (g.num == 2)
					val = g.data, vl = g.len;
				else if (g.num == 3)
					raw = g.data, rl = g.len;
			}
			if (rc < 0)
				return rc;
			o->both_values = vl && rl;
			/* raw_value, as Envoy sends and reads it
			 * (send_header_raw_value); value when it alone is set */
			if (rl) {
				o->value = (const char *)raw;
				o->value_len = (uint32_t)rl;
			} else {
				o->value = (const char *)val;
				o->value_len = (uint32_t)vl;
			}
		} else if (f.num == 2) {
			if (want_len(&f))
				return -EBADMSG;
			struct pbr b = {f.data, f.data + f.len};
			struct fld g;
			o->append = true;
			o->append_value = false;
			while ((rc = r_next(&b, &g)) == 1)
				if (g.num == 1) {
					if (want_var(&g))
						return -EBADMSG;
					o->append_value = g.v != 0;
				}
			if (rc < 0)
				return rc;
		} else if (f.num == 3) {
			if (want_var(&f))
				return -EBADMSG;
			o->action = f.v > 0xffff ? 0xffff : (uint32_t)f.v;
		} else if (f.num == 4 && want_var(&f)) {
			return -EBADMSG;
		}
	}
	return rc;
}

/* HeaderMutation {set_headers = 1, remove_headers = 2}. */
static int mutation(uint8_t *p, size_t n, struct http_ext_proc_mut *m)
{
	struct pbr r = {p, p + n};
	struct fld f;
	int rc;
	while ((rc = r_next(&r, &f)) == 1) {
		if (f.num == 1) {
			if (want_len(&f))
				return -EBADMSG;
			if (m->n_set >= HTTP_EXT_PROC_GRPC_HDRS)
				return -E2BIG;
			rc = hvo(f.data, f.len, &m->set[m->n_set]);
			if (rc < 0)
				return rc;
			m->n_set++;
		} else if (f.num == 2) {
			if (want_len(&f) || f.len > UINT32_MAX)
				return -EBADMSG;
			if (m->n_rm >= HTTP_EXT_PROC_GRPC_HDRS)
				return -E2BIG;
			m->rm[m->n_rm].name = (const char *)f.data;
			m->rm[m->n_rm].name_len = (uint32_t)f.len;
			m->n_rm++;
		}
	}
	return rc;
}

/* HeadersResponse and BodyResponse {response = 1: CommonResponse {status = 1,
 * header_mutation = 2, body_mutation = 3, trailers = 4,
 * clear_route_cache = 5}}. */
static int headers_response(uint8_t *p, size_t n, struct http_ext_proc_resp *o)
{
	struct pbr r = {p, p + n};
	struct fld f;
	int rc;
	while ((rc = r_next(&r, &f)) == 1) {
		if (f.num != 1)
			continue;
		if (want_len(&f))
			return -EBADMSG;
		struct pbr c = {f.data, f.data + f.len};
		struct fld g;
		while ((rc = r_next(&c, &g)) == 1) {
			switch (g.num) {
			case 1:
				if (want_var(&g))
					return -EBADMSG;
				o->status = g.v > 0xffff ? 0xffff : (uint32_t)g.v;
				break;
			case 2:
				if (want_len(&g))
					return -EBADMSG;
				o->has_header_mutation = true;
				rc = mutation(g.data, g.len, &o->mut);
				if (rc < 0)
					return rc;
				break;
			case 3: {
				/* BodyMutation {body = 1, clear_body = 2,
				 * streamed_response = 3}: the last one wins */
				if (want_len(&g))
					return -EBADMSG;
				o->has_body_mutation = true;
				struct pbr b = {g.data, g.data + g.len};
				struct fld h;
				while ((rc = r_next(&b, &h)) == 1) {
					if ((h.num == 1 || h.num == 3) && want_len(&h))
						return -EBADMSG;
					if (h.num == 2 && want_var(&h))
						return -EBADMSG;
					if (h.len > UINT32_MAX)
						return -EBADMSG;
					if (h.num == 1) {
						o->has_new_body = true;
						o->clear_body = false;
						o->new_body = h.data;
						o->new_body_len = (uint32_t)h.len;
					} else if (h.num == 2) {
						o->clear_body = h.v != 0;
						o->has_new_body = false;
					} else if (h.num == 3) {
						o->has_new_body = o->clear_body = false;
					}
				}
				if (rc < 0)
					return rc;
				break;
			}
			case 4:
				if (want_len(&g))
					return -EBADMSG;
				o->has_trailers = true;
				break;
			case 5:
				if (want_var(&g))
					return -EBADMSG;
				o->clear_route_cache = g.v != 0;
				break;
			default:
				break;
			}
		}
		if (rc < 0)
			return rc;
	}
	return rc;
}

/* ImmediateResponse {status = 1 (HttpStatus {code = 1}), headers = 2,
 * body = 3, grpc_status = 4 (GrpcStatus {status = 1}), details = 5}. */
static int immediate(uint8_t *p, size_t n, struct http_ext_proc_resp *o)
{
	struct pbr r = {p, p + n};
	struct fld f;
	int rc;
	while ((rc = r_next(&r, &f)) == 1) {
		if (f.num >= 1 && f.num <= 5 && want_len(&f))
			return -EBADMSG;
		if (f.len > UINT32_MAX)
			return -EBADMSG;
		if (f.num == 1 || f.num == 4) {
			struct pbr s = {f.data, f.data + f.len};
			struct fld g;
			uint32_t v = 0;
			while ((rc = r_next(&s, &g)) == 1)
				if (g.num == 1) {
					if (want_var(&g))
						return -EBADMSG;
					v = g.v > 1000 ? 1000 : (uint32_t)g.v;
				}
			if (rc < 0)
				return rc;
			if (f.num == 1) {
				o->http_status = v;
			} else {
				o->has_grpc_status = true;
				o->grpc_status = v;
			}
		} else if (f.num == 2) {
			rc = mutation(f.data, f.len, &o->mut);
			if (rc < 0)
				return rc;
		} else if (f.num == 3) {
			o->body = (const char *)f.data;
			o->body_len = (uint32_t)f.len;
		} else if (f.num == 5) {
			o->details = (const char *)f.data;
			o->details_len = (uint32_t)f.len;
		}
	}
	return rc;
}

int http_ext_proc_decode(const uint8_t *msg, size_t len, struct http_ext_proc_resp *out)
{
	memset(out, 0, sizeof(*out));
	/* (the reader does not write: the cast only fits its type) */
	struct pbr r = {(uint8_t *)(uintptr_t)msg, (uint8_t *)(uintptr_t)msg + len};
	struct fld f, which = {0};
	int rc;
	while ((rc = r_next(&r, &f)) == 1) {
		if (f.num >= 1 && f.num <= 7) {
			/* the oneof response: the last one read wins */
			if (want_len(&f))
				return -EBADMSG;
			which = f;
		} else if (f.num == 8) { /* dynamic_metadata (Struct) */
			if (want_len(&f))
				return -EBADMSG;
			out->has_dynamic_metadata = true;
		} else if (f.num == 9) { /* mode_override (ProcessingMode) */
			if (want_len(&f))
				return -EBADMSG;
			struct pbr m = {f.data, f.data + f.len};
			struct fld g;
			out->has_mode_override = true;
			memset(out->mode, 0, sizeof(out->mode));
			while ((rc = r_next(&m, &g)) == 1)
				if (g.num >= 1 && g.num <= 6) {
					if (want_var(&g))
						return -EBADMSG;
					out->mode[g.num - 1] = g.v > 0xff ? 0xff : (uint32_t)g.v;
				}
			if (rc < 0)
				return rc;
		} else if (f.num == 10) { /* override_message_timeout (Duration) */
			if (want_len(&f))
				return -EBADMSG;
			struct pbr d = {f.data, f.data + f.len};
			struct fld g;
			uint64_t s = 0, ns = 0;
			while ((rc = r_next(&d, &g)) == 1) {
				if ((g.num == 1 || g.num == 2) && want_var(&g))
					return -EBADMSG;
				if (g.num == 1)
					s = g.v;
				else if (g.num == 2)
					ns = g.v;
			}
			if (rc < 0)
				return rc;
			out->has_timeout_override = true;
			/* negative (a huge varint) or past a day: the cap */
			out->timeout_ms =
			    s > 86400 || ns > 999999999 ? 86400000 : s * 1000 + ns / 1000000;
		}
	}
	if (rc < 0)
		return rc;
	out->kind = (uint8_t)which.num;
	switch (which.num) {
	case HTTP_EXT_PROC_REQUEST_HEADERS:
	case HTTP_EXT_PROC_RESPONSE_HEADERS:
	case HTTP_EXT_PROC_REQUEST_BODY:
	case HTTP_EXT_PROC_RESPONSE_BODY:
		return headers_response(which.data, which.len, out);
	case HTTP_EXT_PROC_IMMEDIATE:
		return immediate(which.data, which.len, out);
	default: /* trailers: what they say is not read (not asked for) */
		return 0;
	}
}

/* ---- gRPC framing ------------------------------------------------------------------------ */

uint32_t http_grpc_rd_len(const struct http_grpc_rd *rd)
{
	return (uint32_t)rd->buf[1] << 24 | (uint32_t)rd->buf[2] << 16 | (uint32_t)rd->buf[3] << 8 |
	       rd->buf[4];
}

long http_grpc_rd_take(struct http_grpc_rd *rd, const char *data, size_t len, bool *done)
{
	size_t taken = 0;
	*done = false;
	if (rd->have < 5) {
		size_t k = 5 - rd->have < len ? 5 - rd->have : len;
		memcpy(rd->buf + rd->have, data, k);
		rd->have += (uint32_t)k;
		taken = k;
		if (rd->have < 5)
			return (long)taken;
		if (rd->buf[0] != 0)
			return -EBADMSG; /* compressed, or not a flag gRPC knows */
		if ((uint64_t)http_grpc_rd_len(rd) + 5 > rd->cap)
			return -E2BIG;
	}
	size_t want = (size_t)http_grpc_rd_len(rd) + 5 - rd->have;
	size_t k = want < len - taken ? want : len - taken;
	memcpy(rd->buf + rd->have, data + taken, k);
	rd->have += (uint32_t)k;
	taken += k;
	*done = rd->have == http_grpc_rd_len(rd) + 5;
	return (long)taken;
}

void http_grpc_rd_next(struct http_grpc_rd *rd)
{
	rd->have = 0;
}
