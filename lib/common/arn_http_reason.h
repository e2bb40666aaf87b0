/*
 * The standard reason phrases of HTTP status codes (RFC 9110 15), one
 * table for every writer of a status line: the admin endpoint and the data
 * plane's HTTP/1 codec.
 */
#ifndef ARN_HTTP_REASON_H
#define ARN_HTTP_REASON_H

/**
 * The reason phrase RFC 9110 (or, for 102, 103, 421, 422, 426, 429 and 431,
 * the RFC that registered the code) gives @p status, e.g. "Not Found" for
 * 404; "Unknown" for a code without one. The string is static: never NULL,
 * never to be freed.
 */
const char *arn_http_reason(unsigned status);

#endif
