/*
 * envoy.filters.http.stateful_session's session values (Envoy's
 * source/extensions/http/stateful_session cookie/ and header/): what a
 * request's cookie or header names, and what Arion writes back.
 *
 * Cookie: base64 (with padding) of a serialized envoy.Cookie { string
 * address = 1; uint64 expires = 2; } (Envoy since its
 * stateful_session_encode_ttl_in_cookie: expires, in seconds of the
 * monotonic clock, only when the cookie has a ttl). A value that does not
 * parse as that message is read as the older form, base64 of "ip:port",
 * as the newest Envoy still reads it. Header: base64 of "ip:port".
 * Every byte is the client's: nothing is allocated, a value longer than
 * HTTP_SS_VALUE_MAX is no session.
 */
#ifndef ARN_HTTP_SESSION_H
#define ARN_HTTP_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A session cookie's or header's value (base64) longer than this names
 * nothing: Arion's own are under 64 bytes. */
#define HTTP_SS_VALUE_MAX 256
/* Room for a value Arion writes (base64 of the longest Cookie message). */
#define HTTP_SS_ENC_MAX 64

/* http_xreq.ss_flags: the session names something (a host in ss_addr /
 * ss_port with ADDR, else an address no host has), and the filter is
 * strict. */
#define HTTP_SS_F_NAMED 1u
#define HTTP_SS_F_ADDR 2u
#define HTTP_SS_F_STRICT 4u

/* What a session value names. */
enum http_ss_name {
	HTTP_SS_NONE = 0, /* no session: absent, empty, not base64, too long, expired */
	HTTP_SS_ADDR,	  /* an IPv4 host, in *addr / *port */
	HTTP_SS_OTHER,	  /* an address that is no IPv4 "a.b.c.d:port": no host has it */
};

/**
 * Read session value @p v (@p len bytes, the client's) as a cookie's
 * (@p cookie: the envoy.Cookie message or the older form; an expiry at or
 * before @p now_s is no session) or a header's.
 * @return enum http_ss_name; *@p addr (host order) and *@p port with
 * HTTP_SS_ADDR.
 */
int http_session_decode(const char *v, size_t len, bool cookie, uint64_t now_s, uint32_t *addr,
			uint16_t *port);

/**
 * The value naming @p addr:@p port into @p out (HTTP_SS_ENC_MAX bytes):
 * a cookie's (@p cookie; @p expires_s 0: none) or a header's.
 * @return its length.
 */
size_t http_session_encode(bool cookie, uint32_t addr, uint16_t port, uint64_t expires_s,
			   char *out);

/** Envoy's cookie path match: an empty or "/" path takes every request;
 * one ending in '/' its prefix; another the path itself or followed by
 * '/', '?' or '#'. */
bool http_session_path_match(const char *cpath, size_t clen, const char *rpath, size_t rlen);

#endif
