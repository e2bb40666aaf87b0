/*
 * The admin server's request parsing (http_parse.h): one pass over the
 * head, line by line, every byte checked against RFC 9112's grammar.
 * Stateless: the server calls it again on the whole buffer when more bytes
 * arrive (heads are small, and a complete line is never re-read more than
 * once per read from the socket).
 */
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "arn_admin.h"
#include "http_parse.h"

/* tchar (RFC 9110 5.6.2): visible ASCII but delimiters. */
static bool is_tchar(unsigned char c)
{
	if (c <= 0x20 || c >= 0x7f)
		return false;
	return strchr("\"(),/:;<=>?@[\\]{}", c) == NULL;
}

/* field-vchar / SP / HTAB (obs-text included); not NUL, CR, LF, DEL or other CTLs. */
static bool is_value_char(unsigned char c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

static ssize_t fail(struct arn_admin_head *h, int status, const char *why)
{
	h->status = status;
	h->error = why;
	return -EBADMSG;
}

/* Is token @p t (@p n bytes) one of the comma-separated list @p v? */
static bool list_has(const char *v, size_t n, const char *t)
{
	size_t tl = strlen(t);
	for (size_t i = 0; i < n;) {
		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		size_t s = i;
		while (i < n && v[i] != ',')
			i++;
		size_t e = i;
		while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
			e--;
		if (e - s == tl && strncasecmp(v + s, t, tl) == 0)
			return true;
	}
	return false;
}

static bool name_is(const char *name, size_t n, const char *what)
{
	return strlen(what) == n && strncasecmp(name, what, n) == 0;
}

/* The request line @p l (@p n bytes, without its line end). */
static ssize_t request_line(const char *l, size_t n, struct arn_admin_head *h)
{
	size_t i = 0;
	while (i < n && is_tchar((unsigned char)l[i]))
		i++;
	if (i == 0 || i >= n || l[i] != ' ')
		return fail(h, 400, "bad request line (expected: METHOD /path HTTP/1.1)");
	if (i > ARN_ADMIN_MAX_METHOD)
		return fail(h, 501, "method not implemented");
	h->method = l;
	h->method_len = i;
	size_t t = ++i;
	while (i < n && (unsigned char)l[i] > 0x20 && (unsigned char)l[i] < 0x7f)
		i++;
	if (i >= n || l[i] != ' ' || i == t || l[t] != '/')
		return fail(h, 400, "bad request line (expected: METHOD /path HTTP/1.1)");
	if (i - t > ARN_ADMIN_MAX_TARGET)
		return fail(h, 414, "request target too long (8 KiB at most)");
	h->target = l + t;
	h->target_len = i - t;
	const char *v = l + i + 1;
	size_t vn = n - i - 1;
	if (vn == 8 && memcmp(v, "HTTP/1.", 7) == 0 && (v[7] == '0' || v[7] == '1')) {
		h->minor = (unsigned)(v[7] - '0');
		return 0;
	}
	if (vn == 8 && memcmp(v, "HTTP/", 5) == 0 && v[5] >= '0' && v[5] <= '9' && v[6] == '.' &&
	    v[7] >= '0' && v[7] <= '9')
		return fail(h, 505, "HTTP version not supported (use HTTP/1.1)");
	return fail(h, 400, "bad request line (expected: METHOD /path HTTP/1.1)");
}

ssize_t arn_admin_parse_head(const char *buf, size_t len, struct arn_admin_head *h)
{
	struct arn_admin_head r = {0};
	size_t pos = 0;
	bool seen_request_line = false, seen_length = false, seen_host = false;
	bool has_te = false, conn_close = false, conn_keep = false;
	for (;;) {
		if (pos > ARN_ADMIN_MAX_HEAD)
			return fail(h, 431, "request head too large (64 KiB at most)");
		const char *lf = memchr(buf + pos, '\n', len - pos);
		if (lf == NULL) {
			if (len > ARN_ADMIN_MAX_HEAD)
				return fail(h, 431, "request head too large (64 KiB at most)");
			return ARN_AGAIN;
		}
		const char *l = buf + pos;
		size_t n = (size_t)(lf - l);
		pos += n + 1;
		if (n > 0 && l[n - 1] == '\r')
			n--;
		if (memchr(l, '\r', n) != NULL)
			return fail(h, 400, "bare CR in the request head");
		if (!seen_request_line) {
			if (n == 0)
				continue; /* empty lines before the request line */
			if (request_line(l, n, &r) != 0)
				return fail(h, r.status, r.error);
			seen_request_line = true;
			continue;
		}
		if (n == 0)
			break; /* the end of the head */
		if (l[0] == ' ' || l[0] == '\t')
			return fail(h, 400, "folded header line (obs-fold) not accepted");
		size_t c = 0;
		while (c < n && is_tchar((unsigned char)l[c]))
			c++;
		if (c == 0 || c >= n || l[c] != ':')
			return fail(h, 400, "bad header line (expected: Name: value)");
		const char *v = l + c + 1;
		size_t vn = n - c - 1;
		for (size_t k = 0; k < vn; k++)
			if (!is_value_char((unsigned char)v[k]))
				return fail(h, 400, "control character in a header value");
		while (vn && (v[0] == ' ' || v[0] == '\t'))
			v++, vn--;
		while (vn && (v[vn - 1] == ' ' || v[vn - 1] == '\t'))
			vn--;
		if (name_is(l, c, "Content-Length")) {
			if (seen_length)
				return fail(h, 400, "more than one Content-Length");
			seen_length = true;
			if (vn == 0)
				return fail(h, 400, "bad Content-Length");
			uint64_t cl = 0;
			for (size_t k = 0; k < vn; k++) {
				if (v[k] < '0' || v[k] > '9')
					return fail(h, 400, "bad Content-Length");
				if (cl <= ARN_ADMIN_MAX_BODY)
					cl = cl * 10 + (uint64_t)(v[k] - '0');
			}
			if (cl > ARN_ADMIN_MAX_BODY)
				return fail(h, 413, "request body too large (1 MiB at most)");
			r.content_length = (size_t)cl;
		} else if (name_is(l, c, "Transfer-Encoding")) {
			has_te = true;
		} else if (name_is(l, c, "Host")) {
			if (seen_host)
				return fail(h, 400, "more than one Host");
			seen_host = true;
		} else if (name_is(l, c, "Connection")) {
			conn_close |= list_has(v, vn, "close");
			conn_keep |= list_has(v, vn, "keep-alive");
		}
	}
	if (pos > ARN_ADMIN_MAX_HEAD)
		return fail(h, 431, "request head too large (64 KiB at most)");
	if (has_te)
		return fail(h, 411,
			    "Transfer-Encoding is not accepted (no chunked request bodies); send "
			    "Content-Length");
	if (r.minor == 1 && !seen_host)
		return fail(h, 400, "HTTP/1.1 request without Host");
	r.keep_alive = !conn_close && (r.minor == 1 || conn_keep);
	*h = r;
	return (ssize_t)pos;
}

/* ---- percent-decoding and query strings ---------------------------------------------------- */

static int hexv(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

size_t arn_admin_pct_decode(const char *s, size_t n, char *buf, size_t cap, bool plus)
{
	size_t o = 0;
	if (cap == 0)
		return 0;
	for (size_t i = 0; i < n && o + 1 < cap; i++) {
		char c = s[i];
		if (c == '%' && i + 2 < n && hexv(s[i + 1]) >= 0 && hexv(s[i + 2]) >= 0) {
			c = (char)(hexv(s[i + 1]) << 4 | hexv(s[i + 2]));
			i += 2;
		} else if (c == '+' && plus) {
			c = ' ';
		}
		buf[o++] = c;
	}
	buf[o] = '\0';
	return o;
}

/* The raw (still encoded) value of the first @p key in @p req's query,
 * into @p v and @p vn. @return false when @p key is absent. */
static bool query_find(const struct arn_admin_request *req, const char *key, const char **v,
		       size_t *vn)
{
	const char *q = req->query;
	char k[128];
	while (q && *q) {
		const char *amp = strchr(q, '&');
		size_t n = amp ? (size_t)(amp - q) : strlen(q);
		const char *eq = memchr(q, '=', n);
		size_t kl = eq ? (size_t)(eq - q) : n;
		/* A key too long for k cannot be one we look for, nor one that
		 * decodes to a NUL: skip them rather than compare a cut copy. */
		if (kl < sizeof(k)) {
			size_t dl = arn_admin_pct_decode(q, kl, k, sizeof(k), true);
			if (dl == strlen(k) && strcmp(k, key) == 0) {
				*v = eq ? eq + 1 : q + n;
				*vn = eq ? n - kl - 1 : 0;
				return true;
			}
		}
		q += n + (amp ? 1 : 0);
	}
	return false;
}

const char *arn_admin_query(const struct arn_admin_request *req, const char *key, char *buf,
			    size_t cap)
{
	const char *v;
	size_t vn;
	if (!query_find(req, key, &v, &vn))
		return NULL;
	if (cap)
		arn_admin_pct_decode(v, vn, buf, cap, true);
	return buf;
}

ssize_t arn_admin_query_whole(const struct arn_admin_request *req, const char *key, char *buf,
			      size_t cap)
{
	const char *v;
	size_t vn;
	if (!query_find(req, key, &v, &vn))
		return -ENOENT;
	/* The decoded length, to tell a value cut by cap from one that fit. */
	size_t need = 0;
	for (size_t i = 0; i < vn; i++, need++)
		if (v[i] == '%' && i + 2 < vn && hexv(v[i + 1]) >= 0 && hexv(v[i + 2]) >= 0)
			i += 2;
	if (need >= cap)
		return -E2BIG;
	size_t n = arn_admin_pct_decode(v, vn, buf, cap, true);
	if (strlen(buf) != n)
		return -EINVAL;
	return (ssize_t)n;
}
