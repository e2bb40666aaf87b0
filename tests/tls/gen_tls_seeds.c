/*
 * Seed corpora for the lib/tls fuzzers, from real OpenSSL clients:
 *   gen_tls_seeds CLIENT_HELLO_DIR FIRST_FLIGHT_DIR
 * writes ClientHellos made with different versions, SNI, ALPN, sigalgs,
 * groups and extensions (hello_gen.c). fuzz_client_hello's inputs start
 * with two control bytes (bound, split point); fuzz_server_first_flight's
 * with one mode byte (context, segment size). The committed corpora under
 * tests/tls/corpus/ were made by this program; run it again after changing
 * it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/ssl.h>

#include "hello_gen.h"

static void put(const char *dir, const char *name, const uint8_t *pre, size_t pl, const uint8_t *b,
		size_t n)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(pre, 1, pl, f) != pl || fwrite(b, 1, n, f) != n || fclose(f)) {
		perror(path);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s CLIENT_HELLO_DIR FIRST_FLIGHT_DIR\n", argv[0]);
		return 2;
	}
	static const char *const h1[] = {"http/1.1", NULL};
	static const char *const h2[] = {"h2", "http/1.1", NULL};
	struct {
		const char *name;
		struct hg_opts o;
	} seeds[] = {
	    {"tls13_sni_alpn", {.sni = "a.example.com", .alpn = h2}},
	    {"tls13_wild_sni", {.sni = "x.b.example.com", .alpn = h1}},
	    {"tls13_no_sni", {0}},
	    {"tls12_only", {.sni = "www.example.com", .max_version = TLS1_2_VERSION}},
	    {"tls12_rsa_ciphers",
	     {.max_version = TLS1_2_VERSION, .ciphers = "ECDHE-RSA-AES128-GCM-SHA256:AES128-SHA"}},
	    {"tls10_only",
	     {.sni = "a.example.com", .min_version = TLS1_VERSION, .max_version = TLS1_VERSION}},
	    {"sigalgs_rsa_pss", {.sni = "a.example.com", .sigalgs = "RSA-PSS+SHA256:RSA+SHA256"}},
	    {"groups_p384", {.sni = "a.example.com", .groups = "P-384:P-521"}},
	    {"padding_status", {.sni = "a.example.com", .padding = true, .status_request = true}},
	};
	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		size_t n;
		uint8_t *b = hg_client_hello(&seeds[i].o, &n);
		static const uint8_t ch_pre[] = {0, 0};
		put(argv[1], seeds[i].name, ch_pre, sizeof(ch_pre), b, n);
		for (size_t m = 0; m < 4; m++) {
			static const uint8_t modes[] = {0, 1, 3, 6};
			uint8_t mode = modes[m];
			char name[128];
			snprintf(name, sizeof(name), "%s_m%u", seeds[i].name, mode);
			put(argv[2], name, &mode, 1, b, n);
		}
		free(b);
	}
	return 0;
}
