/*
 * The HCM's normalize_path and merge_slashes, applied to a request's path
 * before routing as Envoy does (its :path header changes, so routes, the
 * upstream and the access log all see the result). Pure logic, unit tested
 * with RFC 3986's examples in tests/http/test_proxy.c.
 *
 * normalize_path is RFC 3986 section 6.2.2 without case normalization
 * (Envoy's note): percent-encoded unreserved characters are decoded
 * (6.2.2.2; other escapes, "%2F" among them, stay as they are, in the case
 * they came in), "\" is read as "/" (the URL canonicalizer Envoy uses does
 * that), and dot segments are removed (6.2.2.3, the algorithm of 5.2.4).
 * merge_slashes then turns every run of "/" into one. Only the path is
 * touched: the query (from the first "?") is kept byte for byte.
 */
#include <errno.h>
#include <string.h>

#include "arn_hex.h"
#include "http_int.h"

/* RFC 3986 2.3: ALPHA / DIGIT / "-" / "." / "_" / "~" */
static bool unreserved(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_' || c == '~';
}

static size_t path_part(const char *p, size_t n)
{
	const char *q = memchr(p, '?', n);
	return q ? (size_t)(q - p) : n;
}

bool http_path_needs_normalize(const char *p, size_t n, unsigned flags)
{
	size_t pl = path_part(p, n);
	for (size_t i = 0; i < pl; i++) {
		char c = p[i];
		if ((flags & HTTP_PATH_NORMALIZE) && (c == '%' || c == '\\'))
			return true;
		if (c != '/' || i + 1 >= pl)
			continue;
		if ((flags & HTTP_PATH_MERGE_SLASHES) && p[i + 1] == '/')
			return true;
		if ((flags & HTTP_PATH_NORMALIZE) && p[i + 1] == '.') {
			/* "/." or "/.." as a whole segment */
			size_t j = i + 2;
			if (j < pl && p[j] == '.')
				j++;
			if (j >= pl || p[j] == '/')
				return true;
		}
	}
	return false;
}

/* RFC 3986 5.2.4 on an absolute path (it starts with "/"), in place. */
static size_t remove_dot_segments(char *s, size_t n)
{
	size_t o = 0; /* output length; output never overtakes input */
	size_t i = 0;
	while (i < n) {
		/* s[i] is '/': the segment runs to the next '/' */
		size_t j = i + 1;
		while (j < n && s[j] != '/')
			j++;
		size_t len = j - i - 1;
		bool last = j >= n;
		if (len == 1 && s[i + 1] == '.') {
			if (last)
				s[o++] = '/'; /* "/a/." is "/a/" */
		} else if (len == 2 && s[i + 1] == '.' && s[i + 2] == '.') {
			/* drop the last output segment (never above the root) */
			while (o > 0 && s[o - 1] != '/')
				o--;
			if (o > 0)
				o--;
			if (last)
				s[o++] = '/';
		} else {
			memmove(s + o, s + i, len + 1);
			o += len + 1;
		}
		i = j;
	}
	return o ? o : (s[0] = '/', 1);
}

int http_path_normalize(const char *p, size_t n, unsigned flags, char *out, size_t cap)
{
	size_t pl = path_part(p, n);
	if (cap < n)
		return -ENOSPC;
	if (pl == 0 || p[0] != '/') {
		/* "*" (OPTIONS) or an authority-form target: nothing to do */
		memcpy(out, p, n);
		return (int)n;
	}
	size_t o = 0;
	if (flags & HTTP_PATH_NORMALIZE) {
		for (size_t i = 0; i < pl; i++) {
			char c = p[i];
			if (c == '%' && i + 2 < pl) {
				int hi = arn_hexval(p[i + 1]);
				int lo = arn_hexval(p[i + 2]);
				if (hi >= 0 && lo >= 0 && unreserved(hi * 16 + lo)) {
					out[o++] = (char)(hi * 16 + lo);
					i += 2;
					continue;
				}
			}
			out[o++] = c == '\\' ? '/' : c;
		}
		o = remove_dot_segments(out, o);
	} else {
		memcpy(out, p, pl);
		o = pl;
	}
	if (flags & HTTP_PATH_MERGE_SLASHES) {
		size_t k = 0;
		for (size_t i = 0; i < o; i++)
			if (!(out[i] == '/' && k > 0 && out[k - 1] == '/'))
				out[k++] = out[i];
		o = k;
	}
	memcpy(out + o, p + pl, n - pl);
	return (int)(o + n - pl);
}

int http_path_unescape_slashes(const char *p, size_t n, char *out, size_t cap)
{
	size_t pl = path_part(p, n);
	if (!memchr(p, '%', pl))
		return -ENOENT;
	if (cap < n)
		return -ENOSPC;
	size_t o = 0;
	bool found = false;
	for (size_t i = 0; i < pl; i++) {
		if (p[i] == '%' && i + 2 < pl) {
			char a = p[i + 1], b = (char)(p[i + 2] | 0x20);
			if ((a == '2' && b == 'f') || (a == '5' && b == 'c')) {
				out[o++] = a == '2' ? '/' : '\\';
				i += 2;
				found = true;
				continue;
			}
		}
		out[o++] = p[i];
	}
	if (!found)
		return -ENOENT;
	memcpy(out + o, p + pl, n - pl);
	return (int)(o + n - pl);
}
