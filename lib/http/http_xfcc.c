/*
 * x-forwarded-client-cert's element for the current client (Envoy's
 * mutateXfccRequestHeader with APPEND_FORWARD and SANITIZE_SET): pure,
 * from the certificate's parts (http_xfcc_tls.c takes them from the
 * connection), so the exact bytes are unit tested against Envoy's.
 */
#include <errno.h>
#include <string.h>

#include "http_int.h"

struct xb {
	char *p;
	size_t cap, len;
	int err;
};

static void put(struct xb *b, const char *s, size_t n)
{
	if (b->err)
		return;
	if (b->len + n > b->cap) {
		b->err = -ENOSPC;
		return;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

/* A byte no header value may carry: a value made of a certificate's
 * names is refused whole rather than cut or sent with it. */
static bool bad_byte(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == 0 || c == '\r' || c == '\n')
			return true;
	}
	return false;
}

/* "key=value" (quoted: "key=\"value\""), after a ';' unless first */
static void elem(struct xb *b, const char *key, const char *v, size_t n, bool quoted)
{
	if (bad_byte(v, n)) {
		b->err = -EINVAL;
		return;
	}
	if (b->len)
		put(b, ";", 1);
	put(b, key, strlen(key));
	put(b, "=", 1);
	if (quoted)
		put(b, "\"", 1);
	put(b, v, n);
	if (quoted)
		put(b, "\"", 1);
}

size_t http_xfcc_urlenc(const char *pem, size_t n, char *out)
{
	/* Envoy's urlEncodedPemEncodedPeerCertificate: these five only */
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		const char *r = NULL;
		switch (pem[i]) {
		case '\n':
			r = "%0A";
			break;
		case ' ':
			r = "%20";
			break;
		case '+':
			r = "%2B";
			break;
		case '/':
			r = "%2F";
			break;
		case '=':
			r = "%3D";
			break;
		default:
			break;
		}
		if (r) {
			if (out)
				memcpy(out + o, r, 3);
			o += 3;
		} else {
			if (out)
				out[o] = pem[i];
			o++;
		}
	}
	return o;
}

/* Cert="..." or Chain="...": the PEM URL-encoded in place in the output */
static void pem_elem(struct xb *b, const char *key, const char *pem, size_t n)
{
	if (!n || b->err)
		return;
	size_t k = http_xfcc_urlenc(pem, n, NULL);
	if (b->len)
		put(b, ";", 1);
	put(b, key, strlen(key));
	put(b, "=\"", 2);
	if (b->err || b->len + k + 1 > b->cap) {
		b->err = -ENOSPC;
		return;
	}
	b->len += http_xfcc_urlenc(pem, n, b->p + b->len);
	put(b, "\"", 1);
}

int http_xfcc_value(const struct http_xfcc_src *s, unsigned details, char *out, size_t cap)
{
	struct xb b = {.p = out, .cap = cap};
	for (size_t i = 0; i < s->n_by; i++)
		elem(&b, "By", s->by[i], strlen(s->by[i]), false);
	if (s->hash && s->hash[0])
		elem(&b, "Hash", s->hash, strlen(s->hash), false);
	if (details & ARN_CFG_FCC_D_CERT)
		pem_elem(&b, "Cert", s->cert, s->cert_len);
	if (details & ARN_CFG_FCC_D_CHAIN)
		pem_elem(&b, "Chain", s->chain, s->chain_len);
	if (details & ARN_CFG_FCC_D_SUBJECT) /* even empty, as Envoy */
		elem(&b, "Subject", s->subject ? s->subject : "",
		     s->subject ? strlen(s->subject) : 0, true);
	if (details & ARN_CFG_FCC_D_URI) {
		for (size_t i = 0; i < s->n_uri; i++)
			elem(&b, "URI", s->uri[i], strlen(s->uri[i]), false);
		if (!s->n_uri) /* "URI=" when there is none, as Envoy */
			elem(&b, "URI", "", 0, false);
	}
	if (details & ARN_CFG_FCC_D_DNS)
		for (size_t i = 0; i < s->n_dns; i++)
			elem(&b, "DNS", s->dns[i], strlen(s->dns[i]), false);
	return b.err ? b.err : (int)b.len;
}
