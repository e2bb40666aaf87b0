/*
 * ClientHello inspection: a resumable parser over a connection's first
 * bytes (the tls_inspector listener filter's core).
 *
 * Two layers, both byte-driven so that any split of the input gives the same
 * result: the record layer strips 5-byte record headers (the ClientHello may
 * span several handshake records), the message layer reads the ClientHello
 * (RFC 8446 4.1.2) field by field. Each field has a length known before it
 * starts (`need`); lengths nest (message > extension block > extension >
 * list inside it), and `rem[]` holds the bytes left in each enclosing
 * container, so that a field longer than its container, or a container not
 * exactly filled by its contents, is caught as soon as it is read - the
 * checks BoringSSL's parser (Envoy's tls_inspector) and OpenSSL's make.
 * Values are copied into the parser as they pass, so nothing points into
 * the caller's buffers. No allocation, no OpenSSL.
 */
#include <string.h>

#include "tls_int.h"

/* field states */
enum {
	ST_HS_HDR = 0, /* msg_type (1) + length (3) */
	ST_VERSION,
	ST_RANDOM,
	ST_SID_LEN,
	ST_SID,
	ST_CS_LEN,
	ST_CS,
	ST_COMP_LEN,
	ST_COMP,
	ST_EXTS_LEN,
	ST_EXT_TYPE,
	ST_EXT_LEN,
	ST_EXT_SKIP,
	ST_SNI_LIST_LEN,
	ST_SNI_TYPE,
	ST_SNI_LEN,
	ST_SNI_NAME,
	ST_SNI_SKIP,
	ST_ALPN_LIST_LEN,
	ST_ALPN_LEN,
	ST_ALPN_NAME,
	ST_ALPN_SKIP,
	ST_SV_LEN,
	ST_SV_ITEM,
	ST_SA_LEN,
	ST_SA_ITEM,
};

/* how a field's bytes are taken */
enum { K_INT = 0, K_SKIP, K_COPY };

static uint8_t kind_of(uint8_t st)
{
	switch (st) {
	case ST_RANDOM:
	case ST_SID:
	case ST_CS:
	case ST_COMP:
	case ST_EXT_SKIP:
	case ST_SNI_SKIP:
	case ST_ALPN_SKIP:
		return K_SKIP;
	case ST_SNI_NAME:
	case ST_ALPN_NAME:
		return K_COPY;
	default:
		return K_INT;
	}
}

/* extension types read here, and their bits in p->seen */
#define EXT_SERVER_NAME 0
#define EXT_SIGALGS 13
#define EXT_ALPN 16
#define EXT_VERSIONS 43
#define SEEN_SNI 1u
#define SEEN_SIGALGS 2u
#define SEEN_ALPN 4u
#define SEEN_VERSIONS 8u

/* container levels in rem[] */
#define C_MSG 0
#define C_EXTS 1
#define C_EXT 2
#define C_LIST 3

/* A ClientHello's fixed part: version, random, three length bytes/fields
 * with at least one cipher suite (2 + 2) and one compression method (1 + 1). */
#define HELLO_MIN_BODY (2 + 32 + 1 + 2 + 2 + 1 + 1)

void arn_tls_hello_init(struct arn_tls_hello_parser *p, uint32_t max_hello)
{
	memset(p, 0, sizeof(*p));
	if (max_hello == 0)
		max_hello = ARN_TLS_HELLO_DEFAULT_MAX;
	if (max_hello > ARN_TLS_HELLO_HARD_MAX)
		max_hello = ARN_TLS_HELLO_HARD_MAX;
	p->max_hello = max_hello;
	p->st = ST_HS_HDR;
	p->need = 4;
	p->status = ARN_TLS_HELLO_AGAIN;
}

/* Begin field @p st of @p need bytes inside the innermost container. */
static int start(struct arn_tls_hello_parser *p, uint8_t st, uint32_t need)
{
	if (p->depth && need > p->rem[p->depth - 1])
		return ARN_TLS_HELLO_NOT_TLS;
	p->st = st;
	p->need = need;
	p->acc = 0;
	return ARN_TLS_HELLO_AGAIN;
}

/* Open a container of @p len bytes (the caller checked it fits). */
static void push(struct arn_tls_hello_parser *p, uint32_t len)
{
	p->rem[p->depth++] = len;
}

/* The current extension is read: it must have been filled exactly. */
static int ext_done(struct arn_tls_hello_parser *p)
{
	if (p->depth > C_LIST) {
		if (p->rem[C_LIST] != 0)
			return ARN_TLS_HELLO_NOT_TLS;
		p->depth = C_LIST;
	}
	if (p->rem[C_EXT] != 0)
		return ARN_TLS_HELLO_NOT_TLS;
	p->depth = C_EXT;
	if (p->rem[C_EXTS] == 0)
		return ARN_TLS_HELLO_DONE;
	return start(p, ST_EXT_TYPE, 2);
}

/* After an element of a list inside an extension: the next one, or the end. */
static int list_next(struct arn_tls_hello_parser *p, uint8_t st, uint32_t need)
{
	if (p->rem[C_LIST] == 0)
		return ext_done(p);
	return start(p, st, need);
}

static int begin_ext(struct arn_tls_hello_parser *p, uint32_t len)
{
	unsigned bit = 0;
	switch (p->ext_type) {
	case EXT_SERVER_NAME:
		bit = SEEN_SNI;
		break;
	case EXT_SIGALGS:
		bit = SEEN_SIGALGS;
		break;
	case EXT_ALPN:
		bit = SEEN_ALPN;
		break;
	case EXT_VERSIONS:
		bit = SEEN_VERSIONS;
		break;
	default:
		return start(p, ST_EXT_SKIP, len);
	}
	/* RFC 8446 4.2: at most one extension of each type */
	if (p->seen & bit)
		return ARN_TLS_HELLO_NOT_TLS;
	p->seen |= (uint8_t)bit;
	switch (p->ext_type) {
	case EXT_SERVER_NAME:
		return start(p, ST_SNI_LIST_LEN, 2);
	case EXT_SIGALGS:
		p->h.has_sigalgs = true;
		return start(p, ST_SA_LEN, 2);
	case EXT_ALPN:
		p->h.has_alpn = true;
		return start(p, ST_ALPN_LIST_LEN, 2);
	default:
		p->h.has_versions = true;
		return start(p, ST_SV_LEN, 1);
	}
}

/* Whether a ClientHello of @p hello_len bytes (handshake header included)
 * needs more than max_hello bytes read, counting the record headers seen so
 * far (more records can only add to it): Envoy's max_client_hello_size
 * bounds the bytes it reads, headers included. With the bound on bytes
 * rather than on records, a ClientHello split into many small records
 * (clients do that against middleboxes reading SNI) is read as BoringSSL
 * and OpenSSL read it, and parsing time stays linear in bytes read. */
static bool too_large(const struct arn_tls_hello_parser *p, uint32_t hello_len)
{
	return (uint64_t)p->n_records * 5 + hello_len > p->max_hello;
}

/* The current field is complete: check it and start the next. */
static int field_done(struct arn_tls_hello_parser *p)
{
	struct arn_tls_hello *h = &p->h;
	uint32_t v = p->acc;
	switch (p->st) {
	case ST_HS_HDR: {
		uint32_t len = v & 0xffffff;
		if ((v >> 24) != 1 /* client_hello */)
			return ARN_TLS_HELLO_NOT_TLS;
		if (too_large(p, len + 4))
			return ARN_TLS_HELLO_TOO_LARGE;
		if (len < HELLO_MIN_BODY)
			return ARN_TLS_HELLO_NOT_TLS;
		h->hello_len = len + 4;
		push(p, len);
		return start(p, ST_VERSION, 2);
	}
	case ST_VERSION:
		/* any value: a server answers a version above its own with its
		 * highest (RFC 5246 E.1), and OpenSSL and BoringSSL do; one it
		 * cannot answer is refused by the handshake, not here */
		h->legacy_version = (uint16_t)v;
		return start(p, ST_RANDOM, 32);
	case ST_RANDOM:
		return start(p, ST_SID_LEN, 1);
	case ST_SID_LEN:
		if (v > 32)
			return ARN_TLS_HELLO_NOT_TLS;
		return start(p, ST_SID, v);
	case ST_SID:
		return start(p, ST_CS_LEN, 2);
	case ST_CS_LEN:
		if (v < 2 || (v & 1))
			return ARN_TLS_HELLO_NOT_TLS;
		return start(p, ST_CS, v);
	case ST_CS:
		return start(p, ST_COMP_LEN, 1);
	case ST_COMP_LEN:
		if (v < 1)
			return ARN_TLS_HELLO_NOT_TLS;
		return start(p, ST_COMP, v);
	case ST_COMP:
		if (p->rem[C_MSG] == 0)
			return ARN_TLS_HELLO_DONE; /* no extensions (a TLS 1.0 client) */
		return start(p, ST_EXTS_LEN, 2);
	case ST_EXTS_LEN:
		/* the extensions fill the rest of the message exactly */
		if (v != p->rem[C_MSG])
			return ARN_TLS_HELLO_NOT_TLS;
		if (v == 0)
			return ARN_TLS_HELLO_DONE;
		push(p, v);
		return start(p, ST_EXT_TYPE, 2);
	case ST_EXT_TYPE:
		p->ext_type = (uint16_t)v;
		return start(p, ST_EXT_LEN, 2);
	case ST_EXT_LEN:
		if (v > p->rem[C_EXTS])
			return ARN_TLS_HELLO_NOT_TLS;
		push(p, v);
		return begin_ext(p, v);
	case ST_EXT_SKIP:
		return ext_done(p);

	case ST_SNI_LIST_LEN:
		/* ServerNameList: at least one entry (type + 2-byte length + name) */
		if (v != p->rem[C_EXT] || v < 4)
			return ARN_TLS_HELLO_NOT_TLS;
		push(p, v);
		return start(p, ST_SNI_TYPE, 1);
	case ST_SNI_TYPE:
		p->name_type = (uint8_t)v;
		return start(p, ST_SNI_LEN, 2);
	case ST_SNI_LEN:
		if (p->name_type != 0)
			return start(p, ST_SNI_SKIP, v);
		/* one host_name, 1..255 bytes (OpenSSL refuses longer ones) */
		if (h->has_sni || v == 0 || v > ARN_TLS_HELLO_SNI_MAX)
			return ARN_TLS_HELLO_NOT_TLS;
		h->sni_len = (uint8_t)v;
		return start(p, ST_SNI_NAME, v);
	case ST_SNI_NAME:
		h->sni[h->sni_len] = 0;
		if (memchr(h->sni, 0, h->sni_len))
			return ARN_TLS_HELLO_NOT_TLS;
		h->has_sni = true;
		return list_next(p, ST_SNI_TYPE, 1);
	case ST_SNI_SKIP:
		return list_next(p, ST_SNI_TYPE, 1);

	case ST_ALPN_LIST_LEN:
		if (v != p->rem[C_EXT] || v < 2)
			return ARN_TLS_HELLO_NOT_TLS;
		push(p, v);
		return start(p, ST_ALPN_LEN, 1);
	case ST_ALPN_LEN:
		/* RFC 7301 3.1: empty names are not allowed */
		if (v == 0)
			return ARN_TLS_HELLO_NOT_TLS;
		if (h->n_alpn >= ARN_TLS_HELLO_MAX_ALPN ||
		    p->alpn_used + v + 1 > sizeof(h->alpn_buf)) {
			h->alpn_truncated = true;
			return start(p, ST_ALPN_SKIP, v);
		}
		h->alpn_off[h->n_alpn] = p->alpn_used;
		h->alpn_len[h->n_alpn] = (uint8_t)v;
		return start(p, ST_ALPN_NAME, v);
	case ST_ALPN_NAME:
		p->alpn_used = (uint16_t)(p->alpn_used + h->alpn_len[h->n_alpn]);
		h->alpn_buf[p->alpn_used++] = 0;
		h->n_alpn++;
		return list_next(p, ST_ALPN_LEN, 1);
	case ST_ALPN_SKIP:
		return list_next(p, ST_ALPN_LEN, 1);

	case ST_SV_LEN:
		/* supported_versions<2..254> */
		if (v != p->rem[C_EXT] || v < 2 || (v & 1))
			return ARN_TLS_HELLO_NOT_TLS;
		push(p, v);
		return start(p, ST_SV_ITEM, 2);
	case ST_SV_ITEM:
		if (h->n_versions < ARN_TLS_HELLO_MAX_VERSIONS)
			h->versions[h->n_versions++] = (uint16_t)v;
		else
			h->versions_truncated = true;
		return list_next(p, ST_SV_ITEM, 2);

	case ST_SA_LEN:
		/* supported_signature_algorithms<2..2^16-2> */
		if (v != p->rem[C_EXT] || v < 2 || (v & 1))
			return ARN_TLS_HELLO_NOT_TLS;
		push(p, v);
		return start(p, ST_SA_ITEM, 2);
	case ST_SA_ITEM:
		if (h->n_sigalgs < ARN_TLS_HELLO_MAX_SIGALGS)
			h->sigalgs[h->n_sigalgs++] = (uint16_t)v;
		else
			h->sigalgs_truncated = true;
		return list_next(p, ST_SA_ITEM, 2);
	}
	return ARN_TLS_HELLO_NOT_TLS;
}

/* Handshake bytes of the current record: take up to @p len of them
 * (*@p used: how many were taken; fewer once the outcome is known). */
static int message(struct arn_tls_hello_parser *p, const uint8_t *b, uint32_t len, uint32_t *used)
{
	const uint8_t *b0 = b;
	while (len) {
		uint32_t n = len < p->need ? len : p->need;
		switch (kind_of(p->st)) {
		case K_INT:
			for (uint32_t i = 0; i < n; i++)
				p->acc = p->acc << 8 | b[i];
			break;
		case K_COPY: {
			uint32_t total =
			    p->st == ST_SNI_NAME ? p->h.sni_len : p->h.alpn_len[p->h.n_alpn];
			char *dst = p->st == ST_SNI_NAME
					? p->h.sni
					: p->h.alpn_buf + p->h.alpn_off[p->h.n_alpn];
			memcpy(dst + (total - p->need), b, n);
			break;
		}
		default:
			break;
		}
		for (unsigned i = 0; i < p->depth; i++)
			p->rem[i] -= n;
		p->need -= n;
		p->body_seen += n;
		b += n;
		len -= n;
		/* a field may be empty (a zero-length session id): finish
		 * fields until one needs bytes */
		while (p->need == 0) {
			int r = field_done(p);
			if (r != ARN_TLS_HELLO_AGAIN) {
				*used = (uint32_t)(b - b0);
				return r;
			}
		}
	}
	*used = (uint32_t)(b - b0);
	return ARN_TLS_HELLO_AGAIN;
}

enum arn_tls_hello_status arn_tls_hello_parse(struct arn_tls_hello_parser *p, const void *buf,
					      size_t len)
{
	const uint8_t *b = buf;
	while (len && p->status == ARN_TLS_HELLO_AGAIN) {
		if (p->rec_rem == 0) {
			/* a record header, byte by byte: refuse early what
			 * cannot be TLS (an HTTP request's first byte) */
			uint8_t c = *b++;
			len--;
			p->fed++;
			p->rec_hdr[p->rec_hdr_n++] = c;
			if (p->rec_hdr_n == 1 && c != 22 /* handshake */) {
				p->status = ARN_TLS_HELLO_NOT_TLS;
			} else if (p->rec_hdr_n == 2 && c != 3) {
				p->status = ARN_TLS_HELLO_NOT_TLS;
			} else if (p->rec_hdr_n == 5) {
				uint32_t rl = (uint32_t)p->rec_hdr[3] << 8 | p->rec_hdr[4];
				p->rec_hdr_n = 0;
				p->n_records++;
				/* the message header's 4 bytes until its length is known */
				if (too_large(p, p->h.hello_len ? p->h.hello_len : 4))
					p->status = ARN_TLS_HELLO_TOO_LARGE;
				else if (rl == 0 || rl > 16384) /* RFC 8446 5.1 */
					p->status = ARN_TLS_HELLO_NOT_TLS;
				if (p->n_records == 1)
					p->h.record_version =
					    (uint16_t)(p->rec_hdr[1] << 8 | p->rec_hdr[2]);
				p->rec_rem = rl;
			}
			continue;
		}
		uint32_t n = len < p->rec_rem ? (uint32_t)len : p->rec_rem, used;
		int r = message(p, b, n, &used);
		p->rec_rem -= used;
		p->fed += used;
		b += used;
		len -= used;
		if (r != ARN_TLS_HELLO_AGAIN)
			p->status = (uint8_t)r;
	}
	return (enum arn_tls_hello_status)p->status;
}

int arn_tls_sni_from_ext(const uint8_t *ext, size_t len, const uint8_t **name)
{
	/* ServerNameList: length (2), then entries: type (1), length (2), name */
	if (len < 2 || (size_t)(ext[0] << 8 | ext[1]) != len - 2)
		return -EINVAL;
	size_t i = 2;
	while (i + 3 <= len) {
		uint8_t type = ext[i];
		size_t n = (size_t)ext[i + 1] << 8 | ext[i + 2];
		i += 3;
		if (n > len - i)
			return -EINVAL;
		if (type == 0) {
			if (n == 0 || n > ARN_TLS_HELLO_SNI_MAX || memchr(ext + i, 0, n))
				return -EINVAL;
			*name = ext + i;
			return (int)n;
		}
		i += n;
	}
	return -EINVAL;
}

void arn_tls_inspector_count(struct arn_tls_inspector_stats *s, enum arn_tls_hello_status st,
			     const struct arn_tls_hello *h)
{
	switch (st) {
	case ARN_TLS_HELLO_DONE:
		tls_inc(&s->v[ARN_TLS_I_TLS_FOUND]);
		tls_inc(&s->v[h->has_sni ? ARN_TLS_I_SNI_FOUND : ARN_TLS_I_SNI_NOT_FOUND]);
		tls_inc(&s->v[h->has_alpn && h->n_alpn ? ARN_TLS_I_ALPN_FOUND
						       : ARN_TLS_I_ALPN_NOT_FOUND]);
		break;
	case ARN_TLS_HELLO_NOT_TLS:
		tls_inc(&s->v[ARN_TLS_I_TLS_NOT_FOUND]);
		break;
	case ARN_TLS_HELLO_TOO_LARGE:
		tls_inc(&s->v[ARN_TLS_I_CLIENT_HELLO_TOO_LARGE]);
		break;
	default:
		break;
	}
}
