/*
 * Test certificates made at run time (OpenSSL), for the C unit tests that
 * carry TLS material in xDS resources (lib/config's Secrets and TLS
 * contexts, lib/admin's redaction of them): nothing secret is checked in,
 * and every run has fresh keys.
 */
#ifndef TCERT_H
#define TCERT_H

#include <openssl/bio.h>

/** A self-signed P-256 certificate and its key; all four strings malloc'd. */
struct tcert {
	char *cert_json; /* the certificate's PEM, escaped as a JSON string body */
	char *key_json;	 /* the key's PEM, likewise */
	char *cert_pem;
	char *key_pem;
};

/** Make one for subject CN @p cn (serial 1, valid for an hour); fails the test on error. */
void tcert_make(struct tcert *c, const char *cn);
/** The same with an EC key on @p curve (OpenSSL's name: "P-384", "secp256k1"). */
void tcert_make_ec(struct tcert *c, const char *cn, const char *curve);
/** Free what tcert_make allocated. */
void tcert_free(struct tcert *c);

/** @p s with each newline written as JSON's "\n" escape (PEM has no other
 * character JSON escapes); malloc'd, the caller frees it. */
char *tcert_json_escape(const char *s);
/** What memory BIO @p b holds, NUL-terminated; malloc'd, the caller frees it. */
char *tcert_bio_str(BIO *b);

#endif
