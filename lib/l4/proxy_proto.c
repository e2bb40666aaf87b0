/*
 * The PROXY protocol header parser (arn_proxy_proto.h): a byte-at-a-time
 * state machine for v1's line, a counted walk for v2's binary header.
 * Only the fixed parts a decision needs are kept in struct arn_pp; v2's
 * TLV values are skipped by length, never copied.
 */
#include <arpa/inet.h>
#include <string.h>

#include "arn_fmt.h"
#include "arn_proxy_proto.h"

static const char V1_SIG[] = "PROXY ";
#define V1_SIG_LEN 6
static const uint8_t V2_SIG[12] = {0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d,
				   0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a};
#define V2_SIG_LEN 12

enum {
	S_SIG = 0,  /* the signature: v1's or v2's still possible */
	S_V1_FIELD, /* v1: reading field p->field (0 proto .. 4 dport) */
	S_V1_SKIP,  /* v1 UNKNOWN: ignore up to CR */
	S_V1_LF,    /* v1: the LF after the CR */
	S_V2_PRE,   /* v2: ver/cmd, fam/proto, length */
	S_V2_ADDR,  /* v2 PROXY: the family's addresses */
	S_V2_TLV,   /* v2 PROXY: a TLV's 3-byte head */
	S_V2_VAL,   /* v2 PROXY: a TLV's value (skipped) */
	S_V2_SKIP,  /* v2 LOCAL: everything the length covers (skipped) */
	S_DONE,
	S_ERR,
};

enum { F_PROTO = 0, F_SRC, F_DST, F_SPORT, F_DPORT };

void arn_pp_init(struct arn_pp *p)
{
	memset(p, 0, sizeof(*p));
}

const struct arn_pp_result *arn_pp_result(const struct arn_pp *p)
{
	return p->state == S_DONE ? &p->r : NULL;
}

const char *arn_pp_err_name(enum arn_pp_err e)
{
	static const char *const names[] = {
	    "none",
#define ARN_PP_ERR(id, name, what) #name,
#include "arn_proxy_proto_err.def"
#undef ARN_PP_ERR
	};
	return (unsigned)e < ARN_PP_E_COUNT ? names[e] : "none";
}

static ssize_t fail(struct arn_pp *p, enum arn_pp_err e)
{
	p->state = S_ERR;
	p->err = (uint8_t)e;
	return ARN_PP_ERROR;
}

static bool unicast4(uint32_t a)
{
	return a != 0 && a != 0xffffffffu && (a >> 28) != 0xe;
}

static bool unicast6(const uint8_t *a)
{
	static const uint8_t any[16];
	return memcmp(a, any, 16) != 0 && a[0] != 0xff;
}

/* v1: the field in p->buf ended (at a space, or at the CR: @p cr). */
static int v1_field_end(struct arn_pp *p, bool cr)
{
	uint8_t f = p->field;
	if (p->flen == 0)
		return ARN_PP_E_V1_BAD_LINE; /* two spaces, or a space before CR */
	p->buf[p->flen] = 0;
	switch (f) {
	case F_PROTO:
		if (!strcmp(p->buf, "UNKNOWN")) {
			p->r.local = true;
			p->state = cr ? S_V1_LF : S_V1_SKIP;
			return 0;
		}
		if (!strcmp(p->buf, "TCP4"))
			p->r.family = 4;
		else if (!strcmp(p->buf, "TCP6"))
			p->r.family = 6;
		else
			return ARN_PP_E_V1_BAD_PROTO;
		break;
	case F_SRC:
	case F_DST: {
		uint8_t a[16];
		if (inet_pton(p->r.family == 4 ? AF_INET : AF_INET6, p->buf, a) != 1)
			return ARN_PP_E_V1_BAD_ADDR;
		if (p->r.family == 4) {
			uint32_t v = (uint32_t)a[0] << 24 | (uint32_t)a[1] << 16 |
				     (uint32_t)a[2] << 8 | a[3];
			if (!unicast4(v))
				return ARN_PP_E_NOT_UNICAST;
			*(f == F_SRC ? &p->r.src4 : &p->r.dst4) = v;
		} else {
			if (!unicast6(a))
				return ARN_PP_E_NOT_UNICAST;
			memcpy(f == F_SRC ? p->r.src6 : p->r.dst6, a, 16);
		}
		break;
	}
	default: { /* F_SPORT, F_DPORT */
		if (p->flen > 5 || (p->flen > 1 && p->buf[0] == '0'))
			return ARN_PP_E_V1_BAD_PORT;
		uint32_t v = 0;
		for (unsigned i = 0; i < p->flen; i++)
			v = v * 10 + (uint32_t)(p->buf[i] - '0');
		if (v > 65535)
			return ARN_PP_E_V1_BAD_PORT;
		*(f == F_SPORT ? &p->r.src_port : &p->r.dst_port) = (uint16_t)v;
		break;
	}
	}
	/* TCP4/TCP6: exactly four fields after the protocol, the last ends at CR */
	if (cr != (f == F_DPORT))
		return ARN_PP_E_V1_BAD_FIELDS;
	p->field++;
	p->flen = 0;
	if (cr)
		p->state = S_V1_LF;
	return 0;
}

/* v1: one byte of field p->field. @return 0 or an enum arn_pp_err. */
static int v1_byte(struct arn_pp *p, uint8_t c)
{
	if (c == ' ' || c == '\r')
		return v1_field_end(p, c == '\r');
	if (c == '\n')
		return ARN_PP_E_V1_BAD_LINE;
	switch (p->field) {
	case F_PROTO:
		if (p->flen >= 7 || c < 0x21 || c > 0x7e)
			return ARN_PP_E_V1_BAD_PROTO;
		break;
	case F_SRC:
	case F_DST:
		/* inet_pton judges the text; this bounds it (INET6_ADDRSTRLEN) */
		if (p->flen >= 45 || !(c == '.' || c == ':' || (c >= '0' && c <= '9') ||
				       (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
			return ARN_PP_E_V1_BAD_ADDR;
		break;
	default:
		if (p->flen >= 5 || c < '0' || c > '9')
			return ARN_PP_E_V1_BAD_PORT;
		break;
	}
	p->buf[p->flen++] = (char)c;
	return 0;
}

/* v2: the 16-byte preamble is in p->buf. @return 0 or an enum arn_pp_err. */
static int v2_preamble(struct arn_pp *p)
{
	const uint8_t *b = (const uint8_t *)p->buf;
	if (b[0] >> 4 != 2)
		return ARN_PP_E_V2_BAD_VERSION;
	uint32_t len = (uint32_t)b[2] << 8 | b[3];
	p->r.version = 2;
	p->r.header_len = ARN_PP_V2_HDR + len;
	p->remain = len;
	p->flen = 0;
	switch (b[0] & 0xf) {
	case 0: /* LOCAL: the addresses and TLVs are ignored, as Envoy */
		p->r.local = true;
		p->r.tlv_bytes = len;
		p->state = S_V2_SKIP;
		return 0;
	case 1:
		break;
	default:
		return ARN_PP_E_V2_BAD_COMMAND;
	}
	uint32_t alen;
	switch (b[1] >> 4) {
	case 1:
		alen = 12;
		p->r.family = 4;
		break;
	case 2:
		alen = 36;
		p->r.family = 6;
		break;
	default:
		return ARN_PP_E_V2_BAD_FAMILY;
	}
	if ((b[1] & 0xf) != 1 && (b[1] & 0xf) != 2)
		return ARN_PP_E_V2_BAD_TRANSPORT;
	if (len < alen)
		return ARN_PP_E_V2_SHORT_LENGTH;
	p->r.tlv_bytes = len - alen;
	p->tlv_left = alen; /* the address bytes still to come */
	p->state = S_V2_ADDR;
	return 0;
}

/* v2: the addresses are in p->buf. */
static int v2_addresses(struct arn_pp *p)
{
	const uint8_t *b = (const uint8_t *)p->buf;
	if (p->r.family == 4) {
		p->r.src4 =
		    (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
		p->r.dst4 =
		    (uint32_t)b[4] << 24 | (uint32_t)b[5] << 16 | (uint32_t)b[6] << 8 | b[7];
		p->r.src_port = (uint16_t)(b[8] << 8 | b[9]);
		p->r.dst_port = (uint16_t)(b[10] << 8 | b[11]);
		if (!unicast4(p->r.src4) || !unicast4(p->r.dst4))
			return ARN_PP_E_NOT_UNICAST;
	} else {
		memcpy(p->r.src6, b, 16);
		memcpy(p->r.dst6, b + 16, 16);
		p->r.src_port = (uint16_t)(b[32] << 8 | b[33]);
		p->r.dst_port = (uint16_t)(b[34] << 8 | b[35]);
		if (!unicast6(p->r.src6) || !unicast6(p->r.dst6))
			return ARN_PP_E_NOT_UNICAST;
	}
	p->flen = 0;
	p->tlv_left = 0;
	p->state = p->remain ? S_V2_TLV : S_DONE;
	return 0;
}

ssize_t arn_pp_parse(struct arn_pp *p, const void *buf, size_t len)
{
	const uint8_t *s = buf;
	size_t i = 0;
	int e = 0;
	if (p->state == S_ERR)
		return ARN_PP_ERROR;
	if (p->state == S_DONE)
		return 0;
	while (i < len) {
		uint8_t c = s[i];
		switch (p->state) {
		case S_SIG: {
			uint32_t at = p->fed;
			bool v1 = at < V1_SIG_LEN && p->flen != 2 && c == (uint8_t)V1_SIG[at];
			bool v2 = at < V2_SIG_LEN && p->flen != 1 && c == V2_SIG[at];
			if (!v1 && !v2)
				return fail(p, ARN_PP_E_NOT_PROXY);
			p->flen = v1 ? 1 : 2; /* the one signature still possible */
			i++;
			p->fed++;
			if (v1 && p->fed == V1_SIG_LEN) {
				p->r.version = 1;
				p->state = S_V1_FIELD;
				p->field = F_PROTO;
				p->flen = 0;
			} else if (v2 && p->fed == V2_SIG_LEN) {
				p->r.version = 2;
				p->state = S_V2_PRE;
				p->flen = 0;
			}
			continue;
		}
		case S_V1_FIELD:
		case S_V1_SKIP:
		case S_V1_LF:
			if (p->fed + 1 > ARN_PP_V1_MAX)
				return fail(p, ARN_PP_E_V1_TOO_LONG);
			if (p->state == S_V1_FIELD) {
				e = v1_byte(p, c);
			} else if (p->state == S_V1_SKIP) {
				if (c == '\r')
					p->state = S_V1_LF;
				else if (c == '\n')
					e = ARN_PP_E_V1_BAD_LINE;
			} else if (c == '\n') {
				p->state = S_DONE;
				p->r.header_len = p->fed + 1;
			} else {
				e = ARN_PP_E_V1_BAD_LINE;
			}
			if (e)
				return fail(p, (enum arn_pp_err)e);
			i++;
			p->fed++;
			break;
		case S_V2_PRE:
			p->buf[p->flen++] = (char)c;
			i++;
			p->fed++;
			if (p->flen == 4 && (e = v2_preamble(p)) != 0)
				return fail(p, (enum arn_pp_err)e);
			if (p->state == S_V2_SKIP && p->remain == 0)
				p->state = S_DONE;
			break;
		case S_V2_ADDR:
			p->buf[p->flen++] = (char)c;
			i++;
			p->fed++;
			p->remain--;
			if (--p->tlv_left == 0 && (e = v2_addresses(p)) != 0)
				return fail(p, (enum arn_pp_err)e);
			break;
		case S_V2_TLV:
			p->buf[p->flen++] = (char)c;
			i++;
			p->fed++;
			p->remain--;
			if (p->flen < 3) {
				if (p->remain == 0)
					return fail(p, ARN_PP_E_V2_BAD_TLV); /* a TLV's head cut */
				break;
			}
			p->tlv_left = (uint32_t)(uint8_t)p->buf[1] << 8 | (uint8_t)p->buf[2];
			if (p->tlv_left > p->remain)
				return fail(p, ARN_PP_E_V2_BAD_TLV); /* its value runs past */
			p->r.n_tlvs++;
			p->flen = 0;
			p->state = p->tlv_left ? S_V2_VAL : (p->remain ? S_V2_TLV : S_DONE);
			break;
		case S_V2_VAL:
		case S_V2_SKIP: {
			uint32_t want = p->state == S_V2_VAL ? p->tlv_left : p->remain;
			uint32_t n = len - i < want ? (uint32_t)(len - i) : want;
			i += n;
			p->fed += n;
			p->remain -= n;
			if (p->state == S_V2_VAL) {
				p->tlv_left -= n;
				if (p->tlv_left == 0)
					p->state = p->remain ? S_V2_TLV : S_DONE;
			} else if (p->remain == 0) {
				p->state = S_DONE;
			}
			break;
		}
		default:
			return ARN_PP_ERROR;
		}
		if (p->state == S_DONE)
			return (ssize_t)i;
	}
	return ARN_AGAIN;
}

/* ---- the writer ------------------------------------------------------------- */

static void be16(uint8_t *o, uint16_t v)
{
	o[0] = (uint8_t)(v >> 8);
	o[1] = (uint8_t)v;
}

static void be32(uint8_t *o, uint32_t v)
{
	be16(o, (uint16_t)(v >> 16));
	be16(o + 2, (uint16_t)v);
}

size_t arn_pp_write(uint8_t *out, unsigned version, const struct arn_pp_addrs *a)
{
	if (version == 1) {
		char *o = (char *)out;
		if (!a) {
			memcpy(o, "PROXY UNKNOWN\r\n", 15);
			return 15;
		}
		size_t n = 0;
		memcpy(o, "PROXY TCP4 ", 11);
		n = 11;
		n += (size_t)arn_fmt_ip4(a->src, o + n);
		o[n++] = ' ';
		n += (size_t)arn_fmt_ip4(a->dst, o + n);
		o[n++] = ' ';
		n += (size_t)arn_fmt_u64(a->sport, o + n);
		o[n++] = ' ';
		n += (size_t)arn_fmt_u64(a->dport, o + n);
		o[n++] = '\r';
		o[n++] = '\n';
		return n;
	}
	if (version != 2)
		return 0;
	memcpy(out, V2_SIG, V2_SIG_LEN);
	if (!a) {
		out[12] = 0x20; /* version 2, LOCAL */
		out[13] = 0;	/* AF_UNSPEC, UNSPEC */
		be16(out + 14, 0);
		return ARN_PP_V2_HDR;
	}
	out[12] = 0x21; /* version 2, PROXY */
	out[13] = 0x11; /* AF_INET, STREAM */
	be16(out + 14, 12);
	be32(out + 16, a->src);
	be32(out + 20, a->dst);
	be16(out + 24, a->sport);
	be16(out + 26, a->dport);
	return ARN_PP_V2_HDR + 12;
}
