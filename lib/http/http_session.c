/*
 * envoy.filters.http.stateful_session's session values (http_session.h).
 */
#include <string.h>

#include "http_session.h"

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int b64_val(unsigned char ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	if (ch == '+')
		return 62;
	if (ch == '/')
		return 63;
	return -1;
}

/* Envoy's Base64::decode: a length that is a multiple of 4, at most two
 * '=' at the end, no other byte outside the alphabet, the last
 * character's unused bits 0; anything else decodes to nothing (0).
 * @p out has room for len / 4 * 3. @return the decoded length. */
static size_t b64_decode(const char *in, size_t len, unsigned char *out)
{
	if (!len || len % 4)
		return 0;
	size_t n = len;
	if (in[n - 1] == '=') {
		n--;
		if (in[n - 1] == '=')
			n--;
	}
	uint32_t acc = 0;
	unsigned bits = 0;
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		int v = b64_val((unsigned char)in[i]);
		if (v < 0)
			return 0;
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (unsigned char)(acc >> bits);
		}
	}
	/* the leftover bits of the last character must be 0 (Envoy's
	 * decodeLast); a lone character past a group carries no byte */
	if (bits >= 6 || (acc & ((1u << bits) - 1)))
		return 0;
	return o;
}

static size_t b64_encode(const unsigned char *in, size_t len, char *out)
{
	size_t o = 0, i = 0;
	for (; i + 3 <= len; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
		out[o++] = b64[v >> 18];
		out[o++] = b64[(v >> 12) & 63];
		out[o++] = b64[(v >> 6) & 63];
		out[o++] = b64[v & 63];
	}
	if (i < len) {
		uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < len ? (uint32_t)in[i + 1] << 8 : 0);
		out[o++] = b64[v >> 18];
		out[o++] = b64[(v >> 12) & 63];
		out[o++] = i + 1 < len ? b64[(v >> 6) & 63] : '=';
		out[o++] = '=';
	}
	return o;
}

/* "a.b.c.d:port" as Envoy's Ipv4Instance::asString writes it (no leading
 * zeros, a port to 65535): any other spelling is no host's. */
static bool addr_parse(const unsigned char *s, size_t n, uint32_t *addr, uint16_t *port)
{
	size_t i = 0;
	uint32_t a = 0;
	for (int part = 0; part < 5; part++) {
		size_t st = i;
		uint32_t v = 0;
		while (i < n && s[i] >= '0' && s[i] <= '9' && i - st < 5)
			v = v * 10 + (uint32_t)(s[i++] - '0');
		size_t dl = i - st;
		if (!dl || (dl > 1 && s[st] == '0'))
			return false;
		if (part < 4) {
			if (v > 255 || i >= n || s[i] != (part < 3 ? '.' : ':'))
				return false;
			i++;
			a = a << 8 | v;
		} else {
			if (v > 65535 || i != n)
				return false;
			*addr = a;
			*port = (uint16_t)v;
		}
	}
	return true;
}

static size_t addr_format(uint32_t addr, uint16_t port, char *out)
{
	size_t o = 0;
	uint32_t parts[5] = {addr >> 24, (addr >> 16) & 255, (addr >> 8) & 255, addr & 255, port};
	for (int p = 0; p < 5; p++) {
		char d[5];
		int k = 0;
		uint32_t v = parts[p];
		do {
			d[k++] = (char)('0' + v % 10);
			v /= 10;
		} while (v);
		while (k)
			out[o++] = d[--k];
		if (p < 4)
			out[o++] = p < 3 ? '.' : ':';
	}
	return o;
}

static bool varint(const unsigned char *p, size_t n, size_t *i, uint64_t *v)
{
	*v = 0;
	for (unsigned sh = 0; sh < 70; sh += 7) {
		if (*i >= n)
			return false;
		unsigned char b = p[(*i)++];
		if (sh == 63 && b > 1)
			return false;
		*v |= (uint64_t)(b & 0x7f) << sh;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

/* The envoy.Cookie message in @p p as protobuf parses it: any valid wire
 * form, unknown fields skipped, a field given twice the last; a known
 * field of another wire type is an unknown one (protobuf's). Groups are
 * refused (no Cookie has them). @return false: not that message. */
static bool cookie_msg(const unsigned char *p, size_t n, const unsigned char **a, size_t *alen,
		       uint64_t *expires)
{
	*a = NULL;
	*alen = 0;
	*expires = 0;
	size_t i = 0;
	while (i < n) {
		uint64_t tag, v;
		if (!varint(p, n, &i, &tag) || tag >> 3 == 0 || tag >> 3 > 0x1fffffff)
			return false;
		switch (tag & 7) {
		case 0:
			if (!varint(p, n, &i, &v))
				return false;
			if (tag >> 3 == 2)
				*expires = v;
			break;
		case 1:
			if (n - i < 8)
				return false;
			i += 8;
			break;
		case 2:
			if (!varint(p, n, &i, &v) || v > n - i)
				return false;
			if (tag >> 3 == 1) {
				*a = p + i;
				*alen = (size_t)v;
			}
			i += (size_t)v;
			break;
		case 5:
			if (n - i < 4)
				return false;
			i += 4;
			break;
		default:
			return false;
		}
	}
	return true;
}

int http_session_decode(const char *v, size_t len, bool cookie, uint64_t now_s, uint32_t *addr,
			uint16_t *port)
{
	unsigned char d[HTTP_SS_VALUE_MAX / 4 * 3];
	if (len > HTTP_SS_VALUE_MAX)
		return HTTP_SS_NONE;
	size_t n = b64_decode(v, len, d);
	if (!n)
		return HTTP_SS_NONE;
	const unsigned char *a = d, *ma;
	size_t alen = n, malen;
	uint64_t exp;
	if (cookie && cookie_msg(d, n, &ma, &malen, &exp)) {
		/* Envoy: an empty address is no session; an expiry passed
		 * (now > expires) is none either, and a new one is set */
		if (!malen || (exp && now_s > exp))
			return HTTP_SS_NONE;
		a = ma;
		alen = malen;
	}
	return addr_parse(a, alen, addr, port) ? HTTP_SS_ADDR : HTTP_SS_OTHER;
}

size_t http_session_encode(bool cookie, uint32_t addr, uint16_t port, uint64_t expires_s, char *out)
{
	unsigned char m[40];
	char as[24];
	size_t al = addr_format(addr, port, as);
	size_t n = 0;
	if (cookie) {
		m[n++] = 0x0a; /* address = 1, length-delimited */
		m[n++] = (unsigned char)al;
		memcpy(m + n, as, al);
		n += al;
		if (expires_s) {
			m[n++] = 0x10; /* expires = 2, varint */
			while (expires_s >= 0x80) {
				m[n++] = (unsigned char)(expires_s | 0x80);
				expires_s >>= 7;
			}
			m[n++] = (unsigned char)expires_s;
		}
	} else {
		memcpy(m, as, al);
		n = al;
	}
	return b64_encode(m, n, out);
}

bool http_session_path_match(const char *cpath, size_t clen, const char *rpath, size_t rlen)
{
	if (!clen || (clen == 1 && cpath[0] == '/'))
		return true;
	if (rlen < clen || memcmp(rpath, cpath, clen) != 0)
		return false;
	if (cpath[clen - 1] == '/' || rlen == clen)
		return true;
	char nx = rpath[clen];
	return nx == '/' || nx == '?' || nx == '#';
}
