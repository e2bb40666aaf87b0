/*
 * lib/config: converters, refusals, batches (X15, X16), warming (G6),
 * generations and RCU (X17), interest (X4), readiness, admin enumeration,
 * route and filter chain matching, regexes, the HAMT, a stress test of
 * publication under readers, and the contract rules on static_resources.
 * Rule ids from spec/RULES.md are in test names.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/ocsp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "arn_log.h"
#include "arn_proto.h"
#include "arn_regex.h"
#include "tc.h"
#include "tj_config.h"

struct arn_config_store *st;
uint64_t fake_now;
struct arn_config_result tc_res;

uint64_t tc_clock(void *ctx)
{
	(void)ctx;
	return fake_now;
}

int tc_setup(void **state)
{
	(void)state;
	fake_now = 1000000;
	st = arn_config_create(NULL);
	assert_non_null(st);
	arn_config_set_clock(st, tc_clock, NULL);
	memset(&tc_res, 0, sizeof(tc_res));
	return 0;
}

int tc_teardown(void **state)
{
	(void)state;
	arn_config_result_free(&tc_res);
	arn_config_destroy(st);
	st = NULL;
	return 0;
}

void tc_apply(const char *type, const char *const *json, const char *const *removed)
{
	tj_apply(st, type, "v1", 0, json, removed, &tc_res);
}

static void dump_errors(void)
{
	for (size_t i = 0; i < tc_res.n_errors; i++)
		print_message("  error: %s\n", tc_res.errors[i].message);
}

void tc_refused(const char *type, const char *json, const char *want)
{
	tc_apply(type, (const char *const[]){json, NULL}, NULL);
	if (tc_res.accepted || tc_res.n_errors != 1 || !strstr(tc_res.errors[0].message, want)) {
		dump_errors();
		fail_msg("expected refusal containing '%s' (accepted=%d, %zu errors)", want,
			 tc_res.accepted, tc_res.n_errors);
	}
}

void tc_ok(const char *type, const char *json)
{
	tc_apply(type, (const char *const[]){json, NULL}, NULL);
	if (!tc_res.accepted || tc_res.n_errors) {
		dump_errors();
		fail_msg("expected %s to be accepted", json);
	}
}

const struct arn_cfg_gen *gen(void)
{
	return arn_config_gen(st);
}

static const void *find(enum arn_cfg_type t, const char *name)
{
	return arn_cfg_find(gen(), t, name, strlen(name), arn_cfg_hash(name, strlen(name)));
}

const struct arn_cfg_cluster *cluster(const char *name)
{
	return find(ARN_CFG_CLUSTER, name);
}
const struct arn_cfg_listener *listener(const char *name)
{
	return find(ARN_CFG_LISTENER, name);
}
const struct arn_cfg_toolset *toolset(const char *name)
{
	return find(ARN_CFG_TOOLSET, name);
}
const struct arn_cfg_route_table *route_table(const char *name)
{
	return find(ARN_CFG_ROUTE, name);
}
const struct arn_cfg_secret *secret(const char *name)
{
	return find(ARN_CFG_SECRET, name);
}

struct arn_regex *tc_re(const char *p)
{
	char err[256];
	struct arn_regex *r = arn_regex_compile(p, strlen(p), err, sizeof(err));
	if (!r)
		fail_msg("'%s': %s", p, err);
	return r;
}

char *tc_b64(const void *b, size_t n)
{
	char *o = malloc(4 * ((n + 2) / 3) + 1);
	EVP_EncodeBlock((unsigned char *)o, b, (int)n);
	return o;
}

char *tc_ticket_keys_json(const char *name, const size_t *lens, size_t n, char fill)
{
	char *j = malloc(8192);
	size_t o =
	    (size_t)snprintf(j, 8192, "{\"name\":\"%s\",\"session_ticket_keys\":{\"keys\":[", name);
	for (size_t i = 0; i < n; i++) {
		char k[128];
		memset(k, fill + (char)i, sizeof(k));
		char *b = tc_b64(k, lens[i]);
		o += (size_t)snprintf(j + o, 8192 - o, "%s{\"inline_bytes\":\"%s\"}", i ? "," : "",
				      b);
		free(b);
	}
	snprintf(j + o, 8192 - o, "]}}");
	return j;
}

static X509 *pki_cert(EVP_PKEY *k, const char *cn, long serial, X509 *issuer, EVP_PKEY *ik,
		      const char *ext_nid_value)
{
	X509 *x = X509_new();
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), serial);
	X509_gmtime_adj(X509_getm_notBefore(x), -60);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	X509_set_pubkey(x, k);
	X509_NAME *nm = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(nm, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
	X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : nm);
	X509V3_CTX v3;
	X509V3_set_ctx(&v3, issuer ? issuer : x, x, NULL, NULL, 0);
	X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &v3, NID_basic_constraints,
						issuer ? "CA:FALSE" : "critical,CA:TRUE");
	X509_add_ext(x, e, -1);
	X509_EXTENSION_free(e);
	if (ext_nid_value) { /* the TLS feature extension: "status_request" */
		e = X509V3_EXT_conf_nid(NULL, &v3, NID_tlsfeature, ext_nid_value);
		assert_non_null(e);
		X509_add_ext(x, e, -1);
		X509_EXTENSION_free(e);
	}
	assert_true(X509_sign(x, ik ? ik : k, EVP_sha256()) > 0);
	return x;
}

static char *pem_json(X509 *x, EVP_PKEY *k, X509_CRL *crl)
{
	BIO *b = BIO_new(BIO_s_mem());
	if (x)
		PEM_write_bio_X509(b, x);
	if (k)
		PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL);
	if (crl)
		PEM_write_bio_X509_CRL(b, crl);
	char *s = tcert_bio_str(b), *j = tcert_json_escape(s);
	free(s);
	BIO_free(b);
	return j;
}

/* An OCSP response for @p certs (issued by @p ca), or of @p status alone. */
static unsigned char *pki_ocsp(X509 *const *certs, size_t n, X509 *ca, EVP_PKEY *ca_key, int status,
			       size_t *len)
{
	OCSP_BASICRESP *bs = OCSP_BASICRESP_new();
	ASN1_TIME *t0 = X509_gmtime_adj(NULL, -60), *t1 = X509_gmtime_adj(NULL, 3600);
	for (size_t i = 0; i < n; i++) {
		OCSP_CERTID *id = OCSP_cert_to_id(EVP_sha1(), certs[i], ca);
		assert_non_null(
		    OCSP_basic_add1_status(bs, id, V_OCSP_CERTSTATUS_GOOD, 0, NULL, t0, t1));
		OCSP_CERTID_free(id);
	}
	assert_true(OCSP_basic_sign(bs, ca, ca_key, EVP_sha256(), NULL, 0) == 1);
	OCSP_RESPONSE *r = OCSP_response_create(status, n ? bs : NULL);
	unsigned char *der = NULL;
	int l = i2d_OCSP_RESPONSE(r, &der);
	assert_true(l > 0);
	*len = (size_t)l;
	OCSP_RESPONSE_free(r);
	OCSP_BASICRESP_free(bs);
	ASN1_TIME_free(t0);
	ASN1_TIME_free(t1);
	return der;
}

static char *pki_ocsp_b64(X509 *const *certs, size_t n, X509 *ca, EVP_PKEY *ca_key, int status)
{
	size_t len;
	unsigned char *der = pki_ocsp(certs, n, ca, ca_key, status, &len);
	char *b = tc_b64(der, len);
	OPENSSL_free(der);
	return b;
}

void tc_make_pki(struct tc_pki *p)
{
	EVP_PKEY *ck = EVP_EC_gen("P-256"), *lk = EVP_EC_gen("P-256"), *mk = EVP_EC_gen("P-256"),
		 *ok = EVP_EC_gen("P-256");
	X509 *ca = pki_cert(ck, "Config Test CA", 1, NULL, NULL, NULL);
	X509 *leaf = pki_cert(lk, "leaf.test", 42, ca, ck, NULL);
	X509 *ms = pki_cert(mk, "ms.test", 43, ca, ck, "status_request");
	X509 *other = pki_cert(ok, "other.test", 99, ca, ck, NULL);
	X509_CRL *crl = X509_CRL_new();
	X509_CRL_set_version(crl, 1);
	X509_CRL_set_issuer_name(crl, X509_get_subject_name(ca));
	ASN1_TIME *t = X509_gmtime_adj(NULL, -60);
	X509_CRL_set1_lastUpdate(crl, t);
	X509_gmtime_adj(t, 3600);
	X509_CRL_set1_nextUpdate(crl, t);
	X509_REVOKED *rv = X509_REVOKED_new();
	ASN1_INTEGER *sn = ASN1_INTEGER_new();
	ASN1_INTEGER_set(sn, 7);
	X509_REVOKED_set_serialNumber(rv, sn);
	X509_REVOKED_set_revocationDate(rv, t);
	X509_CRL_add0_revoked(crl, rv);
	ASN1_INTEGER_free(sn);
	ASN1_TIME_free(t);
	assert_true(X509_CRL_sign(crl, ck, EVP_sha256()) > 0);
	p->ca = pem_json(ca, NULL, NULL);
	p->crl = pem_json(NULL, NULL, crl);
	p->leaf = pem_json(leaf, NULL, NULL);
	p->leaf_key = pem_json(NULL, lk, NULL);
	p->ms = pem_json(ms, NULL, NULL);
	p->ms_key = pem_json(NULL, mk, NULL);
	p->ocsp_der = pki_ocsp(&leaf, 1, ca, ck, OCSP_RESPONSE_STATUS_SUCCESSFUL, &p->ocsp_der_len);
	p->ocsp = tc_b64(p->ocsp_der, p->ocsp_der_len);
	p->ocsp_ms = pki_ocsp_b64(&ms, 1, ca, ck, OCSP_RESPONSE_STATUS_SUCCESSFUL);
	p->ocsp_other = pki_ocsp_b64(&other, 1, ca, ck, OCSP_RESPONSE_STATUS_SUCCESSFUL);
	X509 *both[] = {leaf, ms};
	p->ocsp_two = pki_ocsp_b64(both, 2, ca, ck, OCSP_RESPONSE_STATUS_SUCCESSFUL);
	p->ocsp_trylater = pki_ocsp_b64(NULL, 0, ca, ck, OCSP_RESPONSE_STATUS_TRYLATER);
	X509_CRL_free(crl);
	X509_free(ca);
	X509_free(leaf);
	X509_free(ms);
	X509_free(other);
	EVP_PKEY_free(ck);
	EVP_PKEY_free(lk);
	EVP_PKEY_free(mk);
	EVP_PKEY_free(ok);
}

void tc_free_pki(struct tc_pki *p)
{
	char **f[] = {&p->ca,	      &p->crl,	    &p->leaf,	      &p->leaf_key,
		      &p->ms,	      &p->ms_key,   &p->ocsp,	      &p->ocsp_ms,
		      &p->ocsp_other, &p->ocsp_two, &p->ocsp_trylater};
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		free(*f[i]);
	OPENSSL_free(p->ocsp_der);
	memset(p, 0, sizeof(*p));
}

int main(void)
{
	/* config warnings are expected in refusal tests; keep output short */
	arn_log_set_spec("error", NULL);
	assert_true(arn_proto_init() == 0);
	int fails = 0;
	fails += _cmocka_run_group_tests("conv", conv_tests, n_conv_tests, NULL, NULL);
	fails += _cmocka_run_group_tests("conv_tls", conv_tls_tests, n_conv_tls_tests, NULL, NULL);
	fails += _cmocka_run_group_tests("conv_tsm", conv_tsm_tests, n_conv_tsm_tests, NULL, NULL);
	fails += _cmocka_run_group_tests("conv_l4", conv_l4_tests, n_conv_l4_tests, NULL, NULL);
	fails += _cmocka_run_group_tests("store", store_tests, n_store_tests, NULL, NULL);
	fails += _cmocka_run_group_tests("match", match_tests, n_match_tests, NULL, NULL);
	fails += _cmocka_run_group_tests("regex", regex_tests, n_regex_tests, NULL, NULL);
	fails += _cmocka_run_group_tests("stress", stress_tests, n_stress_tests, NULL, NULL);
	fails += _cmocka_run_group_tests("rules", rules_tests, n_rules_tests, NULL, NULL);
	fails += _cmocka_run_group_tests("toolset", toolset_tests, n_toolset_tests, NULL, NULL);
	fails += _cmocka_run_group_tests("conv_apikey", conv_apikey_tests, n_conv_apikey_tests,
					 NULL, NULL);
	fails += _cmocka_run_group_tests("conv_ext_proc", conv_ext_proc_tests,
					 n_conv_ext_proc_tests, NULL, NULL);
	fails += _cmocka_run_group_tests("dns", dns_tests, n_dns_tests, NULL, NULL);
	fails +=
	    _cmocka_run_group_tests("conv_cresp", conv_cresp_tests, n_conv_cresp_tests, NULL, NULL);
	fails += _cmocka_run_group_tests("conv_buffer", conv_buffer_tests, n_conv_buffer_tests,
					 NULL, NULL);
	fails += _cmocka_run_group_tests("conv_client", conv_client_tests, n_conv_client_tests,
					 NULL, NULL);
	fails += _cmocka_run_group_tests("conv_lua", conv_lua_tests, n_conv_lua_tests, NULL, NULL);
	fails += _cmocka_run_group_tests("conv_tracing", conv_tracing_tests, n_conv_tracing_tests,
					 NULL, NULL);
	return fails ? 1 : 0;
}
