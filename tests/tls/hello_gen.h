/*
 * Real ClientHellos, made by an OpenSSL client: the first flight an
 * OpenSSL SSL object writes when it starts a handshake, as it would put it
 * on the wire. Used by the unit tests, the seed generator and the
 * first-flight fuzzer.
 */
#ifndef HELLO_GEN_H
#define HELLO_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hg_opts {
	const char *sni;
	const char *const *alpn;      /* NULL-terminated */
	int min_version, max_version; /* TLS1_2_VERSION...; 0: OpenSSL's */
	const char *sigalgs;	      /* "ECDSA+SHA256:RSA-PSS+SHA256", or NULL */
	const char *groups;	      /* "X25519:P-256", or NULL */
	const char *ciphers;	      /* TLS <= 1.2 list, or NULL */
	bool status_request;	      /* ask for an OCSP staple */
	bool padding;		      /* the padding extension (RFC 7685) */
};

/* The ClientHello record(s), malloc'd; *len set. Aborts on failure. */
uint8_t *hg_client_hello(const struct hg_opts *o, size_t *len);

#endif
