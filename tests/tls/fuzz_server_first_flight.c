/*
 * libFuzzer target: arbitrary bytes as a client's first flight to a lib/tls
 * server connection (one per input, over an in-memory transport), through
 * the handshake and reads as far as the bytes go, then EOF and free.
 *
 * The first input byte picks the server context (plain; or mTLS with ALPN
 * and two certificate groups) and how the transport cuts the bytes (all at
 * once, or in reads of 1, 7 or 300 bytes); the rest is the flight.
 *
 * Differential check with the tls_inspector: when OpenSSL answered the
 * ClientHello (the server wrote a flight), the inspector must have found a
 * complete ClientHello with the same server name - a listener routes on
 * the inspector's SNI while the handshake serves OpenSSL's.
 * Seeds: real ClientHellos (gen_tls_seeds.c) behind each mode byte.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "arn_tls.h"

static struct arn_tls_ctx *plain, *mtls;
static struct arn_tls_worker worker;
static struct arn_tls_stats stats;

static X509 *make_cert(EVP_PKEY *k, const char *cn, const char *san, X509 *ca, EVP_PKEY *ca_key)
{
	X509 *x = X509_new();
	X509_set_version(x, X509_VERSION_3);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 7);
	X509_gmtime_adj(X509_getm_notBefore(x), -86400);
	X509_gmtime_adj(X509_getm_notAfter(x), 86400L * 365);
	X509_set_pubkey(x, k);
	X509_NAME *n = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
	X509_set_issuer_name(x, ca ? X509_get_subject_name(ca) : n);
	if (san) {
		X509V3_CTX v3;
		X509V3_set_ctx_nodb(&v3);
		X509V3_set_ctx(&v3, ca ? ca : x, x, NULL, NULL, 0);
		X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &v3, NID_subject_alt_name, san);
		X509_add_ext(x, e, -1);
		X509_EXTENSION_free(e);
	}
	X509_sign(x, ca_key ? ca_key : k, EVP_sha256());
	return x;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	EVP_PKEY *ka = EVP_EC_gen("P-256"), *kb = EVP_EC_gen("P-256"), *kca = EVP_EC_gen("P-256");
	X509 *ca = make_cert(kca, "fuzz CA", NULL, NULL, NULL);
	X509 *a = make_cert(ka, "a.example.com", "DNS:a.example.com,DNS:www.example.com", ca, kca);
	X509 *b = make_cert(kb, "b.example.com", "DNS:*.b.example.com", ca, kca);
	X509_STORE *store = X509_STORE_new();
	X509_STORE_add_cert(store, ca);
	struct arn_tls_cert certs[] = {{.cert = a, .key = ka, .name = "a"},
				       {.cert = b, .key = kb, .name = "b"}};
	static const char *const alpn[] = {"h2", "http/1.1"};
	struct arn_tls_ctx_conf cf = {
	    .name = "fuzz plain", .server = true, .certs = certs, .n_certs = 1};
	plain = arn_tls_ctx_new(&cf, NULL, 0);
	cf = (struct arn_tls_ctx_conf){.name = "fuzz mtls",
				       .server = true,
				       .certs = certs,
				       .n_certs = 2,
				       .trusted_ca = store,
				       .require_client_certificate = true,
				       .alpn = alpn,
				       .n_alpn = 2,
				       .min_version = 0x0301 /* TLS 1.0 too: more code */,
				       .cipher_suites = "ECDHE-ECDSA-AES128-GCM-SHA256:"
							"ECDHE-ECDSA-AES128-SHA"};
	mtls = arn_tls_ctx_new(&cf, NULL, 0);
	if (!plain || !mtls)
		abort();
	X509_STORE_free(store);
	X509_free(ca);
	X509_free(a);
	X509_free(b);
	EVP_PKEY_free(ka);
	EVP_PKEY_free(kb);
	EVP_PKEY_free(kca);
	arn_tls_worker_init(&worker, 0, 1000);
	return 0;
}

struct pipe {
	const uint8_t *in;
	size_t len, at;
	uint32_t read_max;
	size_t out; /* bytes the server wrote */
};

static int p_read(void *arg, void *buf, uint32_t len)
{
	struct pipe *p = arg;
	size_t n = p->len - p->at < len ? p->len - p->at : len;
	if (p->read_max && n > p->read_max)
		n = p->read_max;
	memcpy(buf, p->in + p->at, n);
	p->at += n;
	return (int)n;
}

static int p_write(void *arg, const void *buf, uint32_t len)
{
	(void)buf;
	struct pipe *p = arg;
	p->out += len;
	return (int)len;
}

static uint32_t p_space(void *arg)
{
	(void)arg;
	return 1u << 20;
}

static const struct arn_tls_io ops = {p_read, p_write, p_space, NULL};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	static const uint32_t cuts[] = {0, 1, 7, 300};
	uint8_t mode = data[0];
	struct pipe p = {.in = data + 1, .len = size - 1, .read_max = cuts[(mode >> 1) & 3]};
	struct arn_tls_ctx *x = mode & 1 ? mtls : plain;

	struct arn_tls_hello_parser hp;
	arn_tls_hello_init(&hp, 0);
	enum arn_tls_hello_status hs = arn_tls_hello_parse(&hp, p.in, p.len);

	struct arn_tls_conn c;
	if (arn_tls_conn_init(&c, &worker, x, &stats, &ops, &p, NULL))
		abort();
	arn_tls_worker_begin(&worker, 0);
	char buf[512];
	for (int i = 0; i < 64; i++) {
		size_t at = p.at;
		ssize_t r = arn_tls_read(&c, buf, sizeof(buf));
		if (r < 0 && r != -EAGAIN)
			break;
		if (r == 0 || (r == -EAGAIN && p.at == at))
			break;
	}
	/* OpenSSL answered a ClientHello: the inspector read the same one */
	if (p.out > 0 && hs != ARN_TLS_HELLO_TOO_LARGE && c.alert_sent == 0) {
		const char *sni = arn_tls_sni(&c);
		const struct arn_tls_hello *h = arn_tls_hello_result(&hp);
		if (hs != ARN_TLS_HELLO_DONE)
			abort();
		if ((sni != NULL) != h->has_sni || (sni && strcmp(sni, h->sni) != 0))
			abort();
	}
	arn_tls_set_eof(&c);
	arn_tls_read(&c, buf, sizeof(buf));
	arn_tls_shutdown(&c);
	char why[256];
	arn_tls_failure_reason(&c, why, sizeof(why));
	arn_tls_conn_free(&c);
	return 0;
}
