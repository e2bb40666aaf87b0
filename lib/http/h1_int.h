/* Private to lib/http's HTTP/1 codec: character classes and small helpers
 * shared by the parser, the serializer and the utilities. */
#ifndef ARN_H1_INT_H
#define ARN_H1_INT_H

#include <stdint.h>

#include "arn_h1.h"

#define ARN_H1_C_TOKEN 0x01 /* tchar (RFC 9110 5.6.2) */
#define ARN_H1_C_VALUE 0x02 /* field-value octet: HTAB, SP, VCHAR, obs-text */
#define ARN_H1_C_URI 0x04   /* request-target octet: VCHAR */
#define ARN_H1_C_HEX 0x08
#define ARN_H1_C_HOST 0x10 /* reg-name: unreserved, pct-encoded, sub-delims */

extern const uint8_t arn_h1_cc[256];

static inline int h1_is(unsigned char c, uint8_t cls)
{
	return arn_h1_cc[c] & cls;
}

/* ASCII lower case; only for comparing against lower-case literals made of
 * letters, digits and '-', where (c | 0x20) cannot create a false match
 * from another token character. */
static inline unsigned char h1_lower(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') ? (unsigned char)(c | 0x20) : c;
}

#endif
