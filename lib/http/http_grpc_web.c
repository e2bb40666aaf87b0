/*
 * gRPC-Web to gRPC and back (envoy.filters.http.grpc_web): see
 * http_grpc_web.h. Envoy's behaviour followed is its main branch's
 * (1.3x): a text response is base64-encoded one gRPC frame at a time,
 * each with its own padding, the trailers frame too.
 */
#include "http_grpc_web.h"

#include <errno.h>
#include <stdio.h>
#include <stdbool.h>
#include <string.h>

#include "arn_config.h"
#include "arn_h1.h"
#include "http_filter.h"
#include "http_hcm.h"
#include "http_l4.h"
#include "http_int.h"
#include "http_local.h"
#include "http_stream.h"

enum {
	GW_TEXT_REQ = 1u << 0,		  /* the request body is base64 */
	GW_TEXT_RESP = HTTP_GW_TEXT_RESP, /* the response body goes base64 */
};

/* A stream's state, in its res->text (st->grpc_web - 1). */
struct gw_state {
	uint8_t flags;
	/* the request: base64 chars of an unfinished quantum, and a decoded
	 * slice too short to be rewritten in place */
	uint8_t dn;
	char dc[4];
	uint8_t small[8];
	/* the response (text): bytes of an unfinished base64 group, and the
	 * gRPC frame being encoded (its header bytes seen, payload left) */
	uint8_t en, hn;
	uint8_t eb[3];
	uint8_t hdr[5];
	bool end, framed, finished, trailers;
	/* a non-gRPC answer held for its transformation (Envoy's
	 * needs_transformation_for_non_proto_encoded_response_): its body's
	 * first bytes kept in out (msg_len), the head written at its end */
	bool held, written;
	uint16_t msg_len;
	char gs[8];
	uint32_t left;
	/* the input being taken: a body slice, or the trailers frame's next
	 * bytes (tb) from offset toff of ttotal */
	const uint8_t *in;
	size_t in_len;
	uint32_t toff, ttotal;
	uint8_t tb[48];
	/* the output piece, in res->text after this state */
	char *out;
	uint32_t out_cap;
};

/* http_grpc_web.h's inline readers take the flags from the state's first
 * byte */
_Static_assert(offsetof(struct gw_state, flags) == 0, "the flags first");

static struct gw_state *gw(const struct http_stream *st)
{
	return (struct gw_state *)(void *)(st->res->text + st->grpc_web - 1);
}

/* ---- base64 ---------------------------------------------------------------------------------- */

#define B64_PAD 64
#define B64_BAD 65

/* A base64 char's value, B64_PAD or B64_BAD */
static inline uint8_t b64val(uint8_t c)
{
	if (c >= 'A' && c <= 'Z')
		return (uint8_t)(c - 'A');
	if (c >= 'a' && c <= 'z')
		return (uint8_t)(c - 'a' + 26);
	if (c >= '0' && c <= '9')
		return (uint8_t)(c - '0' + 52);
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return c == '=' ? B64_PAD : B64_BAD;
}

static const char b64c[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* One quantum of 4 chars into @p o: @return 1 to 3 bytes, or -1. As
 * Envoy's Base64::decode at the end of its input: '=' only as the last
 * one or two chars, the unused bits zero. */
static int quantum(const char *p, uint8_t o[3])
{
	uint8_t a = b64val((uint8_t)p[0]), b = b64val((uint8_t)p[1]), c = b64val((uint8_t)p[2]),
		d = b64val((uint8_t)p[3]);
	if (a >= B64_PAD || b >= B64_PAD || c == B64_BAD || d == B64_BAD)
		return -1;
	o[0] = (uint8_t)(a << 2 | b >> 4);
	if (c == B64_PAD) {
		if (d != B64_PAD || (b & 0xf))
			return -1;
		return 1;
	}
	o[1] = (uint8_t)(b << 4 | c >> 2);
	if (d == B64_PAD)
		return (c & 3) ? -1 : 2;
	o[2] = (uint8_t)(c << 6 | d);
	return 3;
}

long http_grpc_web_b64dec(const char *in, size_t n, uint8_t *out)
{
	size_t k = 0;
	for (size_t i = 0; i + 4 <= n; i += 4) {
		int m = quantum(in + i, out + k);
		if (m < 0)
			return -1;
		k += (size_t)m;
	}
	return (long)k;
}

/* ---- the request ----------------------------------------------------------------------------- */

static bool is_type(const struct arn_h1_header *h, bool *text)
{
	/* Envoy compares the whole value, case and parameters included */
	static const struct {
		const char *s;
		uint32_t n;
		bool text;
	} t[] = {{"application/grpc-web", 20, false},
		 {"application/grpc-web+proto", 26, false},
		 {"application/grpc-web-text", 25, true},
		 {"application/grpc-web-text+proto", 31, true}};
	for (unsigned i = 0; i < 4; i++)
		if (h->value_len == t[i].n && memcmp(h->value, t[i].s, t[i].n) == 0) {
			*text = t[i].text;
			return true;
		}
	return false;
}

static bool gw_decode_head(struct http_stream *st, const struct arn_cfg_gen *g,
			   const struct arn_cfg_route_table *rt, const struct arn_cfg_request *req)
{
	(void)g;
	struct http_conn *hc = st->hc;
	if (!hc->hcm || !hc->hcm->grpc_web || !st->res)
		return false;
	/* HttpFilter.disabled, a route's FilterConfig (Envoy's
	 * filterDisabled): nothing unless the HCM or the table toggles one */
	if (http_filter_kind_off(hc->hcm, ARN_CFG_HF_GRPC_WEB, rt, req))
		return false;
	struct arn_h1_msg *m = &st->req.m;
	int i = arn_h1_find_id(m, ARN_H1_H_CONTENT_TYPE, 0);
	bool text_req = false, text_resp = false;
	if (i < 0 || !m->path.len || !is_type(&m->hdrs[i], &text_req))
		return false;
	int a = arn_h1_find(m, "accept", 6, 0);
	if (a >= 0) {
		const struct arn_h1_header *h = &m->hdrs[a];
		text_resp = (h->value_len == 25 &&
			     memcmp(h->value, "application/grpc-web-text", 25) == 0) ||
			    (h->value_len == 31 &&
			     memcmp(h->value, "application/grpc-web-text+proto", 31) == 0);
	}
	uint32_t at = (st->text_len + 7u) & ~7u;
	if (at + sizeof(struct gw_state) > HTTP_TEXT)
		return false; /* (the head's own text took it all: cannot be, 4 KB) */
	struct gw_state *s = (struct gw_state *)(void *)(st->res->text + at);
	memset(s, 0, sizeof(*s));
	s->flags = (uint8_t)((text_req ? GW_TEXT_REQ : 0) | (text_resp ? GW_TEXT_RESP : 0));
	st->text_len = at + (uint32_t)sizeof(*s);
	st->grpc_web = (uint16_t)(at + 1);
	if (text_req) {
		for (unsigned k = 0; k < http_n_filters; k++)
			if (http_filters[k] == &http_grpc_web_filter_ops)
				st->req_xf = (uint8_t)(k + 1);
	}
	/* the body's length changes (decoded), and Envoy sends none: an
	 * HTTP/2 upstream gets DATA to its END_STREAM, an HTTP/1.1 one a
	 * chunked body */
	if (http_msg_has_body(m) && (m->flags & ARN_H1_F_CONTENT_LENGTH)) {
		m->flags &= ~ARN_H1_F_CONTENT_LENGTH;
		m->flags |= ARN_H1_F_CHUNKED;
	}
	return false;
}

/* Envoy's answer to a body that is not base64 (its sendLocalReply: a
 * gRPC request by then, so 200 with grpc-status 13). */
static long bad_b64(struct http_stream *st, const char *details)
{
	static const char msg[] = "Bad gRPC-web request, invalid base64 data.";
	http_local_reply_route(st, 400, msg, sizeof(msg) - 1, 0, details, NULL, 0);
	return -1;
}

/*
 * The text request's body, decoded in place: the quantum the last slice
 * left unfinished is completed first (its bytes, at most 3, then go
 * before the rest), the slice's whole quanta are decoded from the last to
 * the first with the output ending where they end (a quantum's output,
 * 3 bytes at most, never reaches input not yet read: see below), and its
 * last 0 to 3 chars are kept for the next slice.
 */
static long gw_decode_xform(struct http_stream *st, char *data, size_t len, bool end,
			    const char **out)
{
	struct gw_state *s = gw(st);
	if (end) {
		/* Envoy: a body whose length is no multiple of 4 */
		if (s->dn)
			return bad_b64(st, "grpc_base_64_decode_failed_bad_size");
		return 0;
	}
	size_t i = 0;
	uint8_t head[3];
	int hl = 0;
	if (s->dn) {
		while (s->dn < 4 && i < len)
			s->dc[s->dn++] = data[i++];
		if (s->dn < 4)
			return 0;
		s->dn = 0;
		if ((hl = quantum(s->dc, head)) < 0)
			return bad_b64(st, "grpc_base_64_decode_failed");
	}
	size_t q = (len - i) / 4, e = i + 4 * q;
	s->dn = (uint8_t)(len - e);
	memcpy(s->dc, data + e, s->dn);
	/* quantum k (input at i + 4k) writes its n <= 3 bytes just below w;
	 * w is then at least e - 3 (q - k) = i + q + 3k >= i + 4k: at or
	 * past the quantum's own input, read already, and past every
	 * earlier one's */
	size_t w = e;
	for (size_t k = q; k-- > 0;) {
		uint8_t b[3];
		int n = quantum(data + i + 4 * k, b);
		if (n < 0)
			return bad_b64(st, "grpc_base_64_decode_failed");
		w -= (size_t)n;
		memcpy(data + w, b, (size_t)n);
	}
	if (hl) {
		if (w >= (size_t)hl) {
			w -= (size_t)hl;
			memcpy(data + w, head, (size_t)hl);
		} else {
			/* w >= i + q >= 1 + q and w < 3: at most 3 + 3 bytes,
			 * which go from the state (valid until the next event) */
			memcpy(s->small, head, (size_t)hl);
			memcpy(s->small + hl, data + w, e - w);
			*out = (const char *)s->small;
			return (long)((size_t)hl + e - w);
		}
	}
	*out = data + w;
	return (long)(e - w);
}

/* ---- the response ---------------------------------------------------------------------------- */

/* Envoy's Grpc::Common::isGrpcResponseHeaders, and its
 * isProtoEncodedGrpcWebResponseHeaders: an answer either of which takes
 * needs no transformation. */
static bool grpc_answer(const struct arn_h1_msg *m, bool end_stream)
{
	if (end_stream)
		return arn_h1_find(m, "grpc-status", 11, 0) >= 0; /* trailers-only */
	if (m->status != 200)
		return false;
	int i = arn_h1_find_id(m, ARN_H1_H_CONTENT_TYPE, 0);
	if (i < 0)
		return false;
	const char *v = m->hdrs[i].value;
	uint32_t n = m->hdrs[i].value_len;
	/* application/grpc, +suffix or parameters (Envoy compares exactly) */
	if (n >= 16 && memcmp(v, "application/grpc", 16) == 0 &&
	    (n == 16 || v[16] == '+' || v[16] == ';'))
		return true;
	/* application/grpc-web(+proto), parameters dropped, any case */
	const char *semi = memchr(v, ';', n);
	if (semi)
		n = (uint32_t)(semi - v);
	while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	return arn_h1_eq_nocase(v, n, "application/grpc-web", 20) ||
	       arn_h1_eq_nocase(v, n, "application/grpc-web+proto", 26);
}

/* The transformed head of a held answer (Envoy's
 * setTransformedNonProtoEncodedResponseHeaders): grpc-status from the HTTP
 * status, grpc-message the body's first bytes percent-encoded, no body. */
static int transformed(struct http_stream *st, struct gw_state *s, struct arn_h1_edit *e,
		       unsigned cap)
{
	static const char hex[] = "0123456789ABCDEF";
	struct arn_h1_msg *m = &st->resp.m;
	if (cap < 4)
		return -ENOSPC;
	unsigned n = 0;
	uint32_t cl;
	const char *ct = http_grpc_web_ctype(st, &cl);
	e[n++] = (struct arn_h1_edit){.name = "content-type",
				      .name_len = 12,
				      .value = ct,
				      .value_len = cl,
				      .op = ARN_H1_EDIT_SET};
	e[n++] = (struct arn_h1_edit){.name = "content-length",
				      .name_len = 14,
				      .value = "0",
				      .value_len = 1,
				      .op = ARN_H1_EDIT_SET};
	/* Envoy's Grpc::Utility::httpToGrpcStatus (UNKNOWN for a 2xx too) */
	unsigned g = http_grpc_status(m->status);
	int k = snprintf(s->gs, sizeof(s->gs), "%u", g);
	e[n++] = (struct arn_h1_edit){.name = "grpc-status",
				      .name_len = 11,
				      .value = s->gs,
				      .value_len = (uint32_t)k,
				      .op = ARN_H1_EDIT_SET};
	/* Http::Utility::PercentEncoding::encode, after the kept bytes */
	char *v = s->out + s->msg_len;
	uint32_t vl = 0;
	for (uint16_t i = 0; i < s->msg_len; i++) {
		unsigned char c = (unsigned char)s->out[i];
		if (c >= 0x20 && c < 0x7f && c != '%') {
			v[vl++] = (char)c;
		} else {
			v[vl++] = '%';
			v[vl++] = hex[c >> 4];
			v[vl++] = hex[c & 15];
		}
	}
	e[n++] = (struct arn_h1_edit){.name = "grpc-message",
				      .name_len = 12,
				      .value = v,
				      .value_len = vl,
				      .op = ARN_H1_EDIT_SET};
	m->flags |= ARN_H1_F_CONTENT_LENGTH;
	m->content_length = 0;
	return (int)n;
}

static int gw_edits(struct http_stream *st, struct arn_h1_edit *e, unsigned cap)
{
	/* a local reply takes its content-type itself (http_local.c) */
	if (!st->grpc_web || !st->res || (st->state & (HTTP_S_LOCAL | HTTP_S_TUNNEL)))
		return 0;
	struct gw_state *s = gw(st);
	struct arn_h1_msg *m = &st->resp.m;
	if (s->held)
		return transformed(st, s, e, cap);
	unsigned n = 0;
	if (cap < 2)
		return -ENOSPC;
	uint32_t cl;
	const char *ct = http_grpc_web_ctype(st, &cl);
	e[n++] = (struct arn_h1_edit){.name = "content-type",
				      .name_len = 12,
				      .value = ct,
				      .value_len = cl,
				      .op = ARN_H1_EDIT_SET};
	/* Envoy's end_stream: an answer without a body */
	bool end_stream = (m->flags & ARN_H1_F_NO_BODY) || st->method == ARN_H1_M_HEAD ||
			  m->status == 204 || m->status == 304 ||
			  ((m->flags & ARN_H1_F_CONTENT_LENGTH) && !m->content_length);
	bool hold = !end_stream && !grpc_answer(m, end_stream);
	/* Envoy removes it (the body's length changes); a response without
	 * a body keeps its 0, which Envoy's codec writes again */
	if ((m->flags & ARN_H1_F_CONTENT_LENGTH) && m->content_length) {
		e[n++] = (struct arn_h1_edit){
		    .name = "content-length", .name_len = 14, .op = ARN_H1_EDIT_REMOVE};
	}
	if (st->state & HTTP_S_ENC_BODY)
		return (int)n; /* (cannot be: this filter's edits come first) */
	/* the output piece: the text the head left */
	uint32_t at = (st->text_len + 3u) & ~3u;
	uint32_t room = at < HTTP_TEXT ? (HTTP_TEXT - at) & ~7u : 0;
	if (room > HTTP_GW_OUT_MAX)
		room = HTTP_GW_OUT_MAX;
	if (room < HTTP_GW_OUT_MIN)
		return -ENOSPC;
	s->out = st->res->text + at;
	s->out_cap = room;
	st->text_len = at + room;
	m->flags &= ~ARN_H1_F_CONTENT_LENGTH;
	st->enc = &http_grpc_web_filter_ops;
	st->enc_state = s;
	st->state |= HTTP_S_ENC_BODY;
	if (hold) {
		/* not gRPC's (a 503 page, HTML): Envoy holds the head, reads
		 * the body and answers its first bytes as grpc-message */
		s->held = true;
		return -EAGAIN;
	}
	return (int)n;
}

/* The trailers frame's bytes from offset @p off into @p b (at most
 * @p cap): 0x80, the length, then "name:value\r\n" each, names in lower
 * case (Envoy's header map holds them so). @return how many. */
static size_t trl_bytes(const struct arn_h1_msg *m, uint32_t total, uint32_t off, uint8_t *b,
			size_t cap)
{
	size_t k = 0;
	uint32_t pos = 0;
	uint8_t hdr[5] = {0x80, (uint8_t)(total >> 24), (uint8_t)(total >> 16),
			  (uint8_t)(total >> 8), (uint8_t)total};
	for (; pos < 5; pos++)
		if (pos >= off && k < cap)
			b[k++] = hdr[pos];
	for (unsigned i = 0; i < m->n_trailers && k < cap; i++) {
		const struct arn_h1_header *t = &m->trailers[i];
		uint32_t len = t->name_len + 1 + t->value_len + 2;
		if (off >= pos + len) {
			pos += len;
			continue;
		}
		for (uint32_t j = 0; j < len && k < cap; j++, pos++) {
			if (pos < off)
				continue;
			char c;
			if (j < t->name_len) {
				c = t->name[j];
				if (c >= 'A' && c <= 'Z')
					c = (char)(c + 32);
			} else if (j == t->name_len) {
				c = ':';
			} else if (j < len - 2u) {
				c = t->value[j - t->name_len - 1];
			} else {
				c = j == len - 2u ? '\r' : '\n';
			}
			b[k++] = (uint8_t)c;
		}
	}
	return k;
}

static bool has_trailers(const struct http_stream *st)
{
	const struct arn_h1_msg *m = &st->resp.m;
	return (m->flags & ARN_H1_F_TRAILERS) && m->n_trailers && !st->resp.pins.overflow;
}

/* The 4 chars of the group in eb (en bytes; padded when fewer than 3). */
static void group_out(struct gw_state *s, char *o)
{
	uint8_t a = s->eb[0], b = s->en > 1 ? s->eb[1] : 0, c = s->en > 2 ? s->eb[2] : 0;
	o[0] = b64c[a >> 2];
	o[1] = b64c[(a & 3) << 4 | b >> 4];
	o[2] = s->en > 1 ? b64c[(b & 15) << 2 | c >> 6] : '=';
	o[3] = s->en > 2 ? b64c[c & 63] : '=';
	s->en = 0;
}

/* One byte of a gRPC frame into the text output at @p o (at least 8
 * chars of room): @return the chars written. A frame's end flushes its
 * group padded, as Envoy encodes each frame by itself. */
static size_t text_byte(struct gw_state *s, uint8_t c, char *o)
{
	size_t k = 0;
	s->eb[s->en++] = c;
	if (s->en == 3) {
		group_out(s, o);
		k = 4;
	}
	bool fin = false;
	if (s->hn < 5) {
		s->hdr[s->hn++] = c;
		if (s->hn == 5) {
			s->left = (uint32_t)s->hdr[1] << 24 | (uint32_t)s->hdr[2] << 16 |
				  (uint32_t)s->hdr[3] << 8 | s->hdr[4];
			fin = s->left == 0;
		}
	} else if (--s->left == 0) {
		fin = true;
	}
	if (fin) {
		if (s->en) {
			group_out(s, o + k);
			k += 4;
		}
		s->hn = 0;
	}
	return k;
}

/* Fill the output piece from the input (a body slice, then at the end the
 * trailers frame) and hand it to the client's codec. @return true when
 * the input is taken whole (and, at the end, everything is out). */
static bool pump(struct http_stream *st)
{
	struct gw_state *s = st->enc_state;
	bool text = s->flags & GW_TEXT_RESP;
	size_t made = 0;
	for (;;) {
		if (!s->in_len && s->end && !s->finished) {
			if (!s->framed) {
				/* a frame the upstream left unfinished: its last
				 * group goes padded (Envoy would drop it) */
				if (text && s->en && s->out_cap - made >= 4) {
					group_out(s, s->out + made);
					made += 4;
				}
				if (text && s->en)
					break;
				s->hn = 0;
				s->framed = true;
				s->trailers = has_trailers(st);
				if (s->trailers) {
					const struct arn_h1_msg *m = &st->resp.m;
					uint64_t t = 0;
					for (unsigned i = 0; i < m->n_trailers; i++)
						t += m->trailers[i].name_len + 1u +
						     m->trailers[i].value_len + 2u;
					s->ttotal = (uint32_t)t + 5;
				}
			}
			if (s->trailers && s->toff < s->ttotal) {
				uint32_t total = s->ttotal - 5;
				s->in_len =
				    trl_bytes(&st->resp.m, total, s->toff, s->tb, sizeof(s->tb));
				s->toff += (uint32_t)s->in_len;
				s->in = s->tb;
			} else {
				s->finished = true;
			}
		}
		if (!s->in_len)
			break;
		if (text) {
			while (s->in_len && s->out_cap - made >= 8) {
				made += text_byte(s, *s->in, s->out + made);
				s->in++;
				s->in_len--;
			}
		} else {
			size_t k = s->out_cap - made < s->in_len ? s->out_cap - made : s->in_len;
			memcpy(s->out + made, s->in, k);
			made += k;
			s->in += k;
			s->in_len -= k;
		}
		if (s->in_len)
			break; /* the piece is full */
	}
	if (made) {
		struct http_peer *dn = st->hc->dn;
		st->tx_body += made;
		dn->codec->encode_body(dn, s->out, made);
	}
	return !s->in_len && (!s->end || s->finished);
}

static bool gw_encode_body(struct http_stream *st, const char *data, size_t len, bool end)
{
	struct gw_state *s = st->enc_state;
	if (s->held) {
		/* its first out_cap / 4 bytes make grpc-message (up to 3 chars
		 * each, after them in out); the rest is dropped, as Envoy's
		 * past its 16 KiB */
		if (!end) {
			uint32_t keep = s->out_cap / 4 - s->msg_len;
			if (len < keep)
				keep = (uint32_t)len;
			memcpy(s->out + s->msg_len, data, keep);
			s->msg_len = (uint16_t)(s->msg_len + keep);
			return true;
		}
		if (!s->written) {
			s->written = true;
			s->finished = true;
			http_hcm_write_head(st);
		}
		return true;
	}
	if (end) {
		if (s->finished)
			return true;
		s->end = true;
		return pump(st);
	}
	if (!(s->flags & GW_TEXT_RESP)) {
		/* binary: the frames go as they are */
		struct http_peer *dn = st->hc->dn;
		st->tx_body += len;
		dn->codec->encode_body(dn, data, len);
		return true;
	}
	s->in = (const uint8_t *)data;
	s->in_len = len;
	return pump(st);
}

static bool gw_encode_more(struct http_stream *st)
{
	return pump(st);
}

static bool gw_trailers_in_body(const struct http_stream *st)
{
	/* a transformed answer's trailers go on as Envoy lets them */
	return !((struct gw_state *)st->enc_state)->held;
}

static bool gw_active(const struct arn_cfg_hcm *h)
{
	return h->grpc_web;
}

const struct http_filter_ops http_grpc_web_filter_ops = {
    .name = "grpc_web",
    .active = gw_active,
    .decode_head = gw_decode_head,
    .decode_xform = gw_decode_xform,
    .encode_head_edits = gw_edits,
    .encode_body = gw_encode_body,
    .encode_more = gw_encode_more,
    .trailers_in_body = gw_trailers_in_body,
};
