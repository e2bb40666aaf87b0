/*
 * The admin server's HTTP/1.x request parsing (lib/admin private; the
 * server and its fuzzer use it): the request head, percent-decoding and
 * query strings. Pure functions: no allocation, no I/O, no global state;
 * they read only the bytes they are given.
 *
 * The admin endpoint is not the data plane's HTTP (lib/http's arn_h1.h,
 * which lib/admin cannot depend on): it answers small requests on loopback
 * from curl, probes and scripts. It is strict all the same (RFC 9112), so
 * that what it accepts is unambiguous: one Content-Length at most, no
 * Transfer-Encoding, no obs-fold, no bare CR, no NUL or other control
 * characters, no whitespace before a colon, exactly one Host in HTTP/1.1.
 */
#ifndef ARN_ADMIN_HTTP_PARSE_H
#define ARN_ADMIN_HTTP_PARSE_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/** Parsers return this when they took all of their input and need more. */
#ifndef ARN_AGAIN
#define ARN_AGAIN (-EAGAIN)
#endif

/** Limits: a longer head is refused with 431, a longer target with 414, a
 * longer body (by its Content-Length) with 413. */
#define ARN_ADMIN_MAX_HEAD (64 * 1024)
#define ARN_ADMIN_MAX_TARGET (8 * 1024)
#define ARN_ADMIN_MAX_BODY (1024 * 1024)
#define ARN_ADMIN_MAX_METHOD 32

/** A parsed request head. Slices point into the parsed buffer. */
struct arn_admin_head {
	const char *method; /* a token, ARN_ADMIN_MAX_METHOD bytes at most */
	size_t method_len;
	const char *target; /* origin-form: starts with '/', visible ASCII only */
	size_t target_len;
	unsigned minor;	       /* HTTP/1.<minor>: 0 or 1 */
	size_t content_length; /* the body's length; 0 without the header */
	bool keep_alive;       /* the connection may carry another request */
	/* On error: the status to answer and a line saying why (static). */
	int status;
	const char *error;
};

/**
 * Parse the request head at the start of @p buf (@p len bytes; no NUL
 * needed, none read beyond @p len). Empty lines before the request line are
 * skipped (RFC 9112 2.2); lines may end in CRLF or a bare LF.
 * @return the length of the head (request line, header lines and the empty
 *   line; the body of @p h->content_length bytes follows it);
 *   ARN_AGAIN if the head is not complete and may still be (fewer than
 *   ARN_ADMIN_MAX_HEAD bytes, every complete line valid);
 *   -EBADMSG if it is not acceptable: @p h->status (400, 411, 413, 414,
 *   431, 505) and @p h->error say why. @p h is filled only on success
 *   (status and error on -EBADMSG).
 */
ssize_t arn_admin_parse_head(const char *buf, size_t len, struct arn_admin_head *h);

/**
 * Percent-decode @p s[0..n) into @p buf (@p cap bytes including the NUL it
 * always writes when @p cap > 0); '+' becomes a space if @p plus. A '%' not
 * followed by two hex digits is kept as is. Output beyond @p cap - 1 bytes
 * is cut.
 * @return the bytes written, without the NUL.
 */
size_t arn_admin_pct_decode(const char *s, size_t n, char *buf, size_t cap, bool plus);

#endif
