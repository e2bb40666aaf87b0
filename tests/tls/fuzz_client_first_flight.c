/*
 * libFuzzer target: arbitrary bytes as an upstream's answer to a lib/tls
 * client connection (Arion originating TLS to a cluster: the upstream is
 * the peer that may be hostile), over an in-memory transport, through the
 * handshake and reads as far as the bytes go, then EOF and free. The
 * client's own ClientHello goes to a sink.
 *
 * The first input byte picks the client context (plain, no validation; or
 * validating against a CA with a SAN matcher, presenting a client
 * certificate, offering ALPN and SNI, with a session slot), whether the
 * slot already holds a session, and how the transport cuts the bytes (all
 * at once, or in reads of 1, 7 or 300 bytes); the rest is the flight.
 * Whatever the bytes, a connection that opened under validation must have
 * a verified peer certificate.
 * Seeds: real servers' first flights (Python's ssl, tests/tls/gen_client_seeds.py).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "arn_config_model.h"
#include "arn_tls.h"

static struct arn_tls_ctx *plain, *verify;
static struct arn_tls_worker worker;
static struct arn_tls_stats stats;

static X509 *make_cert(EVP_PKEY *k, const char *cn, X509 *ca, EVP_PKEY *ca_key)
{
	X509 *x = X509_new();
	X509_set_version(x, X509_VERSION_3);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 9);
	X509_gmtime_adj(X509_getm_notBefore(x), -86400);
	X509_gmtime_adj(X509_getm_notAfter(x), 86400L * 365);
	X509_set_pubkey(x, k);
	X509_NAME *n = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
	X509_set_issuer_name(x, ca ? X509_get_subject_name(ca) : n);
	X509_sign(x, ca_key ? ca_key : k, EVP_sha256());
	return x;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	EVP_PKEY *kca = EVP_EC_gen("P-256"), *kc = EVP_EC_gen("P-256");
	X509 *ca = make_cert(kca, "fuzz CA", NULL, NULL);
	X509 *cli = make_cert(kc, "arion", ca, kca);
	X509_STORE *store = X509_STORE_new();
	X509_STORE_add_cert(store, ca);
	struct arn_tls_cert cert = {.cert = cli, .key = kc, .name = "client"};
	static const char *const alpn[] = {"http/1.1"};
	static const struct arn_cfg_str_match san = {
	    .kind = ARN_CFG_STR_EXACT, .s = "up.test", .len = 7};
	struct arn_tls_ctx_conf cf = {.name = "fuzz plain client"};
	plain = arn_tls_ctx_new(&cf, NULL, 0);
	cf = (struct arn_tls_ctx_conf){.name = "fuzz validating client",
				       .certs = &cert,
				       .n_certs = 1,
				       .trusted_ca = store,
				       .san_matchers = &san,
				       .n_san_matchers = 1,
				       .alpn = alpn,
				       .n_alpn = 1,
				       .sni = "up.test"};
	verify = arn_tls_ctx_new(&cf, NULL, 0);
	if (!plain || !verify)
		abort();
	X509_STORE_free(store);
	X509_free(ca);
	X509_free(cli);
	EVP_PKEY_free(kca);
	EVP_PKEY_free(kc);
	arn_tls_worker_init(&worker, 0, 1000);
	return 0;
}

struct pipe {
	const uint8_t *in;
	size_t len, at;
	uint32_t read_max;
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
	(void)arg;
	(void)buf;
	return (int)len;
}

static uint32_t p_space(void *arg)
{
	(void)arg;
	return 1u << 20;
}

static const struct arn_tls_io ops = {p_read, p_write, p_space, NULL};

/* The session slot of the modes that use one: it holds whatever session an
 * earlier input's handshake left (inputs that complete one are rare, but
 * the seeds' do not: they are real servers' flights to another hello). */
static struct arn_tls_session_slot slot;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	static const uint32_t cuts[] = {0, 1, 7, 300};
	uint8_t mode = data[0];
	struct pipe p = {.in = data + 1, .len = size - 1, .read_max = cuts[(mode >> 1) & 3]};
	bool validating = mode & 1;
	struct arn_tls_ctx *x = validating ? verify : plain;
	struct arn_tls_conn_opts o = {.session = (mode & 8) ? &slot : NULL};
	struct arn_tls_conn c;
	if (arn_tls_conn_init(&c, &worker, x, &stats, &ops, &p, &o))
		abort();
	arn_tls_worker_begin(&worker, 0);
	int hs = -EAGAIN;
	char buf[512];
	for (int i = 0; i < 64; i++) {
		size_t at = p.at;
		if (hs != 0) {
			hs = arn_tls_handshake(&c);
			if (hs < 0 && hs != -EAGAIN && hs != -EBUSY)
				break;
			if (hs == 0 && validating && !arn_tls_peer_cert(&c))
				abort(); /* opened under validation without a certificate */
			if (hs != 0 && p.at == at)
				break;
			continue;
		}
		ssize_t r = arn_tls_read(&c, buf, sizeof(buf));
		if (r < 0 && r != -EAGAIN)
			break;
		if (r == 0 || (r == -EAGAIN && p.at == at))
			break;
	}
	arn_tls_set_eof(&c);
	arn_tls_read(&c, buf, sizeof(buf));
	arn_tls_shutdown(&c);
	char why[256];
	arn_tls_failure_reason(&c, why, sizeof(why));
	arn_tls_conn_free(&c);
	/* keep the slot from growing stale across inputs of other modes */
	if (!(mode & 8))
		arn_tls_session_slot_clear(&slot);
	return 0;
}
