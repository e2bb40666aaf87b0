/*
 * TLS in the model, field by field as Envoy reads it: the listener's
 * listener_filters_timeout and tls_inspector, DownstreamTlsContext's
 * session resumption and OCSP policy, and the Secret kinds' fields (OCSP
 * staples, CRLs, max_verify_depth, session ticket keys), each converted
 * and each malformed value refused naming the resource and the field.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include <openssl/x509.h>

#include "arn_config.h"
#include "arn_tls.h"
#include "tc.h"

#define ECHO "{\"filters\":[{\"name\":\"envoy.filters.network.echo\"}]"
#define ADDR "\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\",\"port_value\":443}}"
#define DTC_AT                                                                                     \
	"\"@type\":\"type.googleapis.com/"                                                         \
	"envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext\""
#define INSPECTOR_AT                                                                               \
	"\"@type\":\"type.googleapis.com/"                                                         \
	"envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector\""

static char jb[4][16384];
static int jn;

/* A plain listener 'l' with @p extra listener fields (each ending in ','). */
static const char *jplain(const char *extra)
{
	char *b = jb[jn++ % 4];
	snprintf(b, sizeof(jb[0]), "{\"name\":\"l\"," ADDR ",%s\"filter_chains\":[" ECHO "}]}",
		 extra);
	return b;
}

/* A listener 'l' whose chain terminates TLS with Secret 'cert' and @p dtc
 * (more DownstreamTlsContext fields, each starting with ','). */
static const char *jtls(const char *dtc)
{
	char *b = jb[jn++ % 4];
	snprintf(b, sizeof(jb[0]),
		 "{\"name\":\"l\"," ADDR ",\"filter_chains\":[" ECHO
		 ",\"transport_socket\":{\"name\":\"tls\",\"typed_config\":{" DTC_AT
		 ",\"common_tls_context\":{\"tls_certificate_sds_secret_configs\":[{\"name\":"
		 "\"cert\"}]}%s}}}]}",
		 dtc);
	return b;
}

/* Secret 'cert' (so that TLS listeners are active, not warming). */
static void cert_secret(void)
{
	struct tcert c;
	tcert_make(&c, "cert.test");
	char *j = tj_secret_tls("cert", c.cert_json, c.key_json);
	assert_non_null(j);
	tc_ok(S, j);
	free(j);
	tcert_free(&c);
}

/* ---- Listener --------------------------------------------------------------------- */

/* listener_filters_timeout: Envoy's default 15 s, 0 disables, negative refused. */
static void test_listener_filters_timeout(void **state)
{
	(void)state;
	tc_ok(L, jplain(""));
	assert_int_equal(listener("l")->listener_filters_timeout_ms, 15000);
	tc_ok(L, jplain("\"listener_filters_timeout\":\"2.5s\","));
	assert_int_equal(listener("l")->listener_filters_timeout_ms, 2500);
	tc_ok(L, jplain("\"listener_filters_timeout\":\"0s\","));
	assert_int_equal(listener("l")->listener_filters_timeout_ms, 0);
	tc_refused(L, jplain("\"listener_filters_timeout\":\"-1s\","),
		   "Listener 'l': listener_filters_timeout: must be a non-negative duration");
}

/* continue_on_listener_filters_timeout: false unless said. */
static void test_continue_on_listener_filters_timeout(void **state)
{
	(void)state;
	tc_ok(L, jplain(""));
	assert_false(listener("l")->continue_on_listener_filters_timeout);
	tc_ok(L, jplain("\"continue_on_listener_filters_timeout\":true,"));
	assert_true(listener("l")->continue_on_listener_filters_timeout);
}

/* The tls_inspector's typed_config is read: by name alone, an empty one,
 * initial_read_buffer_size kept within Envoy's bounds. */
static void test_tls_inspector_initial_read_buffer_size(void **state)
{
	(void)state;
	tc_ok(
	    L,
	    jplain("\"listener_filters\":[{\"name\":\"envoy.filters.listener.tls_inspector\"}],"));
	assert_true(listener("l")->tls_inspector);
	assert_int_equal(listener("l")->tls_inspector_read_size, 0);
	tc_ok(L, jplain("\"listener_filters\":[{\"name\":\"i\",\"typed_config\":{" INSPECTOR_AT
			"}}],"));
	assert_true(listener("l")->tls_inspector);
	tc_ok(L, jplain("\"listener_filters\":[{\"name\":\"i\",\"typed_config\":{" INSPECTOR_AT
			",\"initial_read_buffer_size\":4096}}],"));
	assert_int_equal(listener("l")->tls_inspector_read_size, 4096);
	tc_ok(L, jplain("\"listener_filters\":[{\"name\":\"i\",\"typed_config\":{" INSPECTOR_AT
			",\"initial_read_buffer_size\":65536}}],"));
	assert_int_equal(listener("l")->tls_inspector_read_size, 65536);
	tc_refused(L,
		   jplain("\"listener_filters\":[{\"name\":\"i\",\"typed_config\":{" INSPECTOR_AT
			  ",\"initial_read_buffer_size\":255}}],"),
		   "Listener 'l': listener_filters[0].typed_config.initial_read_buffer_size: 255 "
		   "is not from 256 to 65536");
	tc_refused(L,
		   jplain("\"listener_filters\":[{\"name\":\"i\",\"typed_config\":{" INSPECTOR_AT
			  ",\"initial_read_buffer_size\":65537}}],"),
		   "initial_read_buffer_size: 65537 is not from 256 to 65536");
	/* the typed_config's type decides, not the name */
	tc_refused(L,
		   jplain("\"listener_filters\":[{\"name\":\"envoy.filters.listener.tls_"
			  "inspector\",\"typed_config\":{\"@type\":\"type.googleapis.com/"
			  "envoy.extensions.filters.network.echo.v3.Echo\"}}],"),
		   "listener_filters[0]: listener filter "
		   "'envoy.extensions.filters.network.echo.v3.Echo' is not supported");
}

/* enable_ja3_fingerprinting: Arion computes no JA3 hash, so true is refused. */
static void test_tls_inspector_ja3(void **state)
{
	(void)state;
	tc_ok(L, jplain("\"listener_filters\":[{\"name\":\"i\",\"typed_config\":{" INSPECTOR_AT
			",\"enable_ja3_fingerprinting\":false}}],"));
	assert_true(listener("l")->tls_inspector);
	tc_refused(L,
		   jplain("\"listener_filters\":[{\"name\":\"i\",\"typed_config\":{" INSPECTOR_AT
			  ",\"enable_ja3_fingerprinting\":true}}],"),
		   "Listener 'l': listener_filters[0].typed_config.enable_ja3_fingerprinting: "
		   "JA3 fingerprinting is not supported");
}

/* ---- DownstreamTlsContext ----------------------------------------------------------- */

/* session_ticket_keys_sds_secret_config: a Secret by name, a warming
 * dependency (G6); an sds_config other than ADS is refused (X13). */
static void test_dtc_session_ticket_keys_sds(void **state)
{
	(void)state;
	cert_secret();
	tc_ok(L, jtls(""));
	const struct arn_cfg_tls *t = listener("l")->chains[0].tls;
	assert_int_equal(t->ticket_keys_secret.len, 0);
	assert_false(t->disable_stateless_session_resumption);
	tc_ok(L, jtls(",\"session_ticket_keys_sds_secret_config\":{\"name\":\"tk\"}"));
	/* it warms until Secret 'tk' exists, as for its certificate */
	assert_int_equal(listener("l")->chains[0].tls->ticket_keys_secret.len, 0);
	char key[80];
	memset(key, 'k', sizeof(key));
	char *b64 = tc_b64(key, sizeof(key)), *j = malloc(1024);
	snprintf(j, 1024,
		 "{\"name\":\"tk\",\"session_ticket_keys\":{\"keys\":[{\"inline_bytes\":\"%s\"}]}}",
		 b64);
	tc_ok(S, j);
	t = listener("l")->chains[0].tls;
	assert_string_equal(t->ticket_keys_secret.name, "tk");
	assert_int_equal(t->ticket_keys_secret.len, 2);
	tc_refused(L,
		   jtls(",\"session_ticket_keys_sds_secret_config\":{\"name\":\"tk\",\"sds_"
			"config\":{\"path\":\"/x\"}}"),
		   "session_ticket_keys_sds_secret_config.sds_config: an sds_config source is "
		   "refused");
	tc_refused(L, jtls(",\"session_ticket_keys_sds_secret_config\":{}"),
		   "session_ticket_keys_sds_secret_config.name: missing: a secret is referenced "
		   "by name (X13)");
	free(j);
	free(b64);
}

/* session_ticket_keys inline: key material in a listener, refused as
 * inline certificates are (X13). */
static void test_dtc_session_ticket_keys_inline_refused(void **state)
{
	(void)state;
	char key[81];
	memset(key, 'k', 80);
	char *b64 = tc_b64(key, 80), *d = malloc(1024);
	snprintf(d, 1024, ",\"session_ticket_keys\":{\"keys\":[{\"inline_bytes\":\"%s\"}]}", b64);
	tc_refused(L, jtls(d),
		   "Listener 'l': filter_chains[0].transport_socket.typed_config."
		   "session_ticket_keys: inline session ticket keys are refused: put them in a "
		   "Secret");
	/* nothing of the key is kept for /config_dump */
	assert_null(strstr(tc_res.errors[0].message, b64));
	free(d);
	free(b64);
}

/* disable_stateless_session_resumption: no tickets at all. */
static void test_dtc_disable_stateless_session_resumption(void **state)
{
	(void)state;
	cert_secret();
	tc_ok(L, jtls(",\"disable_stateless_session_resumption\":true"));
	assert_true(listener("l")->chains[0].tls->disable_stateless_session_resumption);
	tc_ok(L, jtls(",\"disable_stateless_session_resumption\":false"));
	assert_false(listener("l")->chains[0].tls->disable_stateless_session_resumption);
}

/* ocsp_staple_policy: LENIENT_STAPLING by default, Envoy's three values. */
/* ALPN h2 is offered only where an HTTP/2 codec serves it: a chain
 * without a connection manager, or one whose codec_type is HTTP1, is
 * refused; AUTO and HTTP2 take it (issue 19). */
#define H2_TS                                                                                      \
	",\"transport_socket\":{\"name\":\"tls\",\"typed_config\":{" DTC_AT                        \
	",\"common_tls_context\":{\"tls_certificate_sds_secret_configs\":[{\"name\":"              \
	"\"cert\"}],\"alpn_protocols\":[\"h2\",\"http/1.1\"]}}}"
#define H2_HCM(codec)                                                                              \
	"{\"filters\":[{\"name\":\"hcm\",\"typed_config\":{" TJ_HCM_AT                             \
	",\"stat_prefix\":\"x\",\"codec_type\":\"" codec "\",\"route_config\":{},"                 \
	"\"http_filters\":[" TJ_ROUTER "]}}]"
static void test_dtc_alpn_h2(void **state)
{
	(void)state;
	cert_secret();
	tc_refused(L, "{\"name\":\"l\"," ADDR ",\"filter_chains\":[" ECHO H2_TS "}]}",
		   "ALPN 'h2' on a chain without http_connection_manager");
	tc_refused(L, "{\"name\":\"l\"," ADDR ",\"filter_chains\":[" H2_HCM("HTTP1") H2_TS "}]}",
		   "ALPN 'h2' but the connection manager's codec_type is HTTP1");
	tc_ok(L, "{\"name\":\"l\"," ADDR ",\"filter_chains\":[" H2_HCM("AUTO") H2_TS "}]}");
	tc_ok(L, "{\"name\":\"l\"," ADDR ",\"filter_chains\":[" H2_HCM("HTTP2") H2_TS "}]}");
}

static void test_dtc_ocsp_staple_policy(void **state)
{
	(void)state;
	cert_secret();
	tc_ok(L, jtls(""));
	assert_int_equal(listener("l")->chains[0].tls->ocsp_staple_policy, ARN_CFG_OCSP_LENIENT);
	tc_ok(L, jtls(",\"ocsp_staple_policy\":\"STRICT_STAPLING\""));
	assert_int_equal(listener("l")->chains[0].tls->ocsp_staple_policy, ARN_CFG_OCSP_STRICT);
	tc_ok(L, jtls(",\"ocsp_staple_policy\":\"MUST_STAPLE\""));
	assert_int_equal(listener("l")->chains[0].tls->ocsp_staple_policy,
			 ARN_CFG_OCSP_MUST_STAPLE);
	tc_refused(L, jtls(",\"ocsp_staple_policy\":7"),
		   "typed_config.ocsp_staple_policy: 7 is not a policy");
}

/* ---- Secrets ------------------------------------------------------------------------ */

static char *tls_cert_json(const char *name, const char *cert, const char *key, const char *more)
{
	char *j = malloc(32768);
	snprintf(j, 32768,
		 "{\"name\":\"%s\",\"tls_certificate\":{\"certificate_chain\":{\"inline_string\":"
		 "\"%s\"},\"private_key\":{\"inline_string\":\"%s\"}%s}}",
		 name, cert, key, more);
	return j;
}

static void ocsp_case(const char *cert, const char *key, const char *staple_field, const char *want)
{
	char *more = malloc(8192);
	snprintf(more, 8192, ",\"ocsp_staple\":{%s}", staple_field);
	char *j = tls_cert_json("s", cert, key, more);
	if (want)
		tc_refused(S, j, want);
	else
		tc_ok(S, j);
	free(j);
	free(more);
}

/* TlsCertificate.ocsp_staple: kept as DER when it parses, is successful,
 * for one certificate, this one (Envoy's checks); else refused by name. */
static void test_secret_ocsp_staple(void **state)
{
	(void)state;
	struct tc_pki p;
	tc_make_pki(&p);
	char f[4096];
	snprintf(f, sizeof(f), "\"inline_bytes\":\"%s\"", p.ocsp);
	ocsp_case(p.leaf, p.leaf_key, f, NULL);
	const struct arn_cfg_secret *s = secret("s");
	assert_int_equal(s->ocsp_staple_len, p.ocsp_der_len);
	assert_memory_equal(s->ocsp_staple, p.ocsp_der, p.ocsp_der_len);
	/* none: none kept */
	char *j = tls_cert_json("s", p.leaf, p.leaf_key, "");
	tc_ok(S, j);
	free(j);
	assert_null(secret("s")->ocsp_staple);
	snprintf(f, sizeof(f), "\"inline_bytes\":\"%s\"", p.ocsp_other);
	ocsp_case(p.leaf, p.leaf_key, f,
		  "Secret 's': tls_certificate.ocsp_staple: the OCSP response is for another "
		  "certificate (serial 63; certificate_chain's is 2A)");
	snprintf(f, sizeof(f), "\"inline_bytes\":\"%s\"", p.ocsp_two);
	ocsp_case(p.leaf, p.leaf_key, f,
		  "tls_certificate.ocsp_staple: the OCSP response is for 2 certificates");
	snprintf(f, sizeof(f), "\"inline_bytes\":\"%s\"", p.ocsp_trylater);
	ocsp_case(p.leaf, p.leaf_key, f,
		  "tls_certificate.ocsp_staple: the OCSP response is not successful (trylater)");
	ocsp_case(p.leaf, p.leaf_key, "\"inline_bytes\":\"AAECAw==\"",
		  "tls_certificate.ocsp_staple: not a DER OCSP response");
	ocsp_case(p.leaf, p.leaf_key, "\"inline_string\":\"x\"",
		  "tls_certificate.ocsp_staple.inline_string: an OCSP staple is DER");
	/* the good one with a byte more */
	char *more = tc_b64(p.ocsp_der, p.ocsp_der_len);
	unsigned char *plus = malloc(p.ocsp_der_len + 1);
	memcpy(plus, p.ocsp_der, p.ocsp_der_len);
	plus[p.ocsp_der_len] = 0;
	free(more);
	more = tc_b64(plus, p.ocsp_der_len + 1);
	snprintf(f, sizeof(f), "\"inline_bytes\":\"%s\"", more);
	ocsp_case(p.leaf, p.leaf_key, f,
		  "tls_certificate.ocsp_staple: not a DER OCSP response (bytes after it)");
	free(more);
	free(plus);
	tc_free_pki(&p);
}

/* A must-staple certificate (TLS feature status_request) needs a staple,
 * whatever the policy (Envoy). */
static void test_secret_ocsp_must_staple_certificate(void **state)
{
	(void)state;
	struct tc_pki p;
	tc_make_pki(&p);
	char *j = tls_cert_json("ms", p.ms, p.ms_key, "");
	tc_refused(S, j,
		   "Secret 'ms': tls_certificate.ocsp_staple: missing: the certificate in "
		   "certificate_chain is must-staple");
	free(j);
	char f[4096];
	snprintf(f, sizeof(f), ",\"ocsp_staple\":{\"inline_bytes\":\"%s\"}", p.ocsp_ms);
	j = tls_cert_json("ms", p.ms, p.ms_key, f);
	tc_ok(S, j);
	free(j);
	assert_non_null(secret("ms")->ocsp_staple);
	tc_free_pki(&p);
}

static char *validation_json(const char *name, const char *ca, const char *more)
{
	char *j = malloc(32768);
	snprintf(j, 32768,
		 "{\"name\":\"%s\",\"validation_context\":{\"trusted_ca\":{\"inline_string\":"
		 "\"%s\"}%s}}",
		 name, ca, more);
	return j;
}

/* CertificateValidationContext.crl: every PEM CRL in it, and those a
 * trusted_ca holds (Envoy loads both); one that does not parse, or none,
 * refused. */
static void test_secret_crl(void **state)
{
	(void)state;
	struct tc_pki p;
	tc_make_pki(&p);
	char *j = validation_json("v", p.ca, ""), *more = malloc(16384);
	tc_ok(S, j);
	free(j);
	assert_null(secret("v")->crls);
	snprintf(more, 16384, ",\"crl\":{\"inline_string\":\"%s%s\"}", p.crl, p.crl);
	j = validation_json("v", p.ca, more);
	tc_ok(S, j);
	free(j);
	assert_int_equal(sk_X509_CRL_num((STACK_OF(X509_CRL) *)secret("v")->crls), 2);
	/* a CRL inside trusted_ca counts too */
	char *ca_crl = malloc(16384);
	snprintf(ca_crl, 16384, "%s%s", p.ca, p.crl);
	j = validation_json("v", ca_crl, "");
	tc_ok(S, j);
	free(j);
	assert_int_equal(secret("v")->n_ca, 1);
	assert_int_equal(sk_X509_CRL_num((STACK_OF(X509_CRL) *)secret("v")->crls), 1);
	/* no CRL in crl: a certificate, text */
	snprintf(more, 16384, ",\"crl\":{\"inline_string\":\"%s\"}", p.ca);
	j = validation_json("v", p.ca, more);
	tc_refused(S, j, "Secret 'v': validation_context.crl: no PEM CRL (X509 CRL) could be read");
	free(j);
	j = validation_json("v", p.ca, ",\"crl\":{\"inline_string\":\"junk\"}");
	tc_refused(S, j, "Secret 'v': validation_context.crl: no PEM CRL");
	free(j);
	/* a CRL block whose content is not a CRL */
	j = validation_json("v", p.ca,
			    ",\"crl\":{\"inline_string\":\"-----BEGIN X509 CRL-----\\nAAECAwQF\\n-"
			    "----END X509 CRL-----\\n\"}");
	tc_refused(S, j, "Secret 'v': validation_context.crl: a CRL is bad (");
	free(j);
	j = validation_json("v", p.ca, ",\"crl\":{\"filename\":\"/nonexistent/crl.pem\"}");
	tc_refused(S, j, "validation_context.crl.filename: cannot open '/nonexistent/crl.pem'");
	free(j);
	free(ca_crl);
	free(more);
	tc_free_pki(&p);
}

/* CertificateValidationContext.max_verify_depth: kept (0 included), at
 * most 100 (Envoy's bound). */
static void test_secret_max_verify_depth(void **state)
{
	(void)state;
	struct tc_pki p;
	tc_make_pki(&p);
	char *j = validation_json("v", p.ca, "");
	tc_ok(S, j);
	free(j);
	assert_false(secret("v")->has_max_verify_depth);
	j = validation_json("v", p.ca, ",\"max_verify_depth\":3");
	tc_ok(S, j);
	free(j);
	assert_true(secret("v")->has_max_verify_depth);
	assert_int_equal(secret("v")->max_verify_depth, 3);
	j = validation_json("v", p.ca, ",\"max_verify_depth\":0");
	tc_ok(S, j);
	free(j);
	assert_true(secret("v")->has_max_verify_depth);
	assert_int_equal(secret("v")->max_verify_depth, 0);
	j = validation_json("v", p.ca, ",\"max_verify_depth\":100");
	tc_ok(S, j);
	free(j);
	j = validation_json("v", p.ca, ",\"max_verify_depth\":101");
	tc_refused(S, j, "Secret 'v': validation_context.max_verify_depth: 101 is more than 100");
	free(j);
	tc_free_pki(&p);
}

/* Secret.session_ticket_keys: each key exactly 80 bytes, kept in order. */
static void test_secret_session_ticket_keys(void **state)
{
	(void)state;
	size_t two[] = {80, 80};
	char *j = tc_ticket_keys_json("tk", two, 2, 'a');
	tc_ok(S, j);
	free(j);
	const struct arn_cfg_secret *s = secret("tk");
	assert_int_equal(s->kind, ARN_CFG_SECRET_TICKET_KEYS);
	assert_int_equal(s->n_ticket_keys, 2);
	for (size_t i = 0; i < 2 * ARN_CFG_TICKET_KEY_LEN; i++)
		assert_int_equal(s->ticket_keys[i], i < ARN_CFG_TICKET_KEY_LEN ? 'a' : 'b');
	/* from a file and inline_string too: any DataSource */
	char path[] = "/tmp/arn-config-tk-XXXXXX";
	int fd = mkstemp(path);
	FILE *fp = fdopen(fd, "w");
	for (int i = 0; i < 80; i++)
		fputc('f', fp);
	fclose(fp);
	j = malloc(2048);
	snprintf(j, 2048,
		 "{\"name\":\"tk\",\"session_ticket_keys\":{\"keys\":[{\"filename\":\"%s\"},{"
		 "\"inline_string\":\"%080d\"}]}}",
		 path, 0);
	tc_ok(S, j);
	unlink(path);
	free(j);
	assert_int_equal(secret("tk")->n_ticket_keys, 2);
	assert_int_equal(secret("tk")->ticket_keys[0], 'f');
	assert_int_equal(secret("tk")->ticket_keys[80], '0');
	size_t bad[] = {80, 79};
	j = tc_ticket_keys_json("tk", bad, 2, 'a');
	tc_refused(S, j,
		   "Secret 'tk': session_ticket_keys.keys[1]: 79 bytes: a session ticket key is "
		   "exactly 80 bytes");
	free(j);
	/* the refusal never prints a key ("YWFh" is "aaa" in base64) */
	assert_null(strstr(tc_res.errors[0].message, "YWFh"));
	assert_null(strstr(tc_res.errors[0].message, "aaaa"));
	size_t big[] = {81};
	j = tc_ticket_keys_json("tk", big, 1, 'a');
	tc_refused(S, j, "session_ticket_keys.keys[0]: 81 bytes");
	free(j);
	tc_refused(S, "{\"name\":\"tk\",\"session_ticket_keys\":{}}",
		   "Secret 'tk': session_ticket_keys.keys: empty: give at least one key of 80 "
		   "bytes");
}

/* Secret.generic_secret (Envoy Gateway's OIDC client secret and HMAC key):
 * the secret's bytes kept (any DataSource), 1 to ARN_CFG_GENERIC_SECRET_MAX;
 * a refusal never prints them. */
static void test_secret_generic(void **state)
{
	(void)state;
	tc_ok(S, "{\"name\":\"g\",\"generic_secret\":{\"secret\":{\"inline_bytes\":"
		 "\"c2VjcmV0AA==\"}}}");
	const struct arn_cfg_secret *s = secret("g");
	assert_int_equal(s->kind, ARN_CFG_SECRET_GENERIC);
	assert_int_equal(s->generic_len, 7);
	assert_memory_equal(s->generic, "secret\0", 7);
	char *j = malloc(2 * ARN_CFG_GENERIC_SECRET_MAX + 128);
	int n = snprintf(j, 128, "{\"name\":\"g\",\"generic_secret\":{\"secret\":{"
				 "\"inline_string\":\"");
	memset(j + n, 'k', ARN_CFG_GENERIC_SECRET_MAX);
	strcpy(j + n + ARN_CFG_GENERIC_SECRET_MAX, "\"}}}");
	tc_ok(S, j);
	assert_int_equal(secret("g")->generic_len, ARN_CFG_GENERIC_SECRET_MAX);
	memset(j + n, 'k', ARN_CFG_GENERIC_SECRET_MAX + 1);
	strcpy(j + n + ARN_CFG_GENERIC_SECRET_MAX + 1, "\"}}}");
	tc_refused(S, j,
		   "Secret 'g': generic_secret.secret: 4097 bytes: Arion keeps a generic secret of "
		   "at most 4096");
	assert_null(strstr(tc_res.errors[0].message, "kkkk"));
	free(j);
	tc_refused(S, "{\"name\":\"g\",\"generic_secret\":{}}",
		   "Secret 'g': generic_secret.secret: missing");
	tc_refused(S, "{\"name\":\"g\",\"generic_secret\":{\"secret\":{\"inline_string\":\"\"}}}",
		   "Secret 'g': generic_secret.secret.inline_string: empty");
}

/* ---- X16: a TLS context that would not build ------------------------------------------ */

/* One resource applied and refused at application (X16): the batch is
 * accepted, the resource is named with @p want in its error. */
static void x16_refused(const char *type, const char *json, const char *want)
{
	tc_apply(type, (const char *const[]){json, NULL}, NULL);
	if (!tc_res.accepted || tc_res.n_errors != 1 || !strstr(tc_res.errors[0].message, want))
		fail_msg("expected an application failure containing '%s' (accepted=%d, %zu "
			 "errors%s%s)",
			 want, tc_res.accepted, tc_res.n_errors, tc_res.n_errors ? ": " : "",
			 tc_res.n_errors ? tc_res.errors[0].message : "");
}

#define UTC_AT                                                                                     \
	"\"@type\":\"type.googleapis.com/"                                                         \
	"envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext\""

/* A cluster 'c' originating TLS with @p ctc (CommonTlsContext's fields). */
static const char *jutc(const char *ctc)
{
	char *b = jb[jn++ % 4];
	snprintf(b, sizeof(jb[0]),
		 "{\"name\":\"c\",\"type\":\"STATIC\",\"connect_timeout\":\"1s\","
		 "\"load_assignment\":{\"cluster_name\":\"c\",\"endpoints\":[{\"lb_endpoints\":[{"
		 "\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"10.0.0.1\","
		 "\"port_value\":443}}}}]}]},\"transport_socket\":{\"name\":\"tls\",\"typed_"
		 "config\":{" UTC_AT ",\"sni\":\"up.test\",\"common_tls_context\":{%s}}}}",
		 ctc);
	return b;
}

/* An UpstreamTlsContext's sni with a NUL, a control or a space is refused
 * naming the field: OpenSSL takes it as a C string, so a NUL would send a
 * shorter name than the one configured. */
static void test_utc_sni_refuses_controls(void **state)
{
	(void)state;
	static const char *const bad[] = {"up\\u0000.test", "up.test\\r\\nx", "up test",
					  "up\\ttest"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char j[2048];
		snprintf(j, sizeof(j),
			 "{\"name\":\"c\",\"type\":\"STATIC\",\"connect_timeout\":\"1s\","
			 "\"load_assignment\":{\"cluster_name\":\"c\",\"endpoints\":[{\"lb_"
			 "endpoints\":[{"
			 "\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"10.0.0.1\","
			 "\"port_value\":443}}}}]}]},"
			 "\"transport_socket\":{\"name\":\"tls\",\"typed_config\":{" UTC_AT
			 ",\"sni\":\"%s\"}}}",
			 bad[i]);
		tc_refused(C, j, "sni: byte ");
	}
	tc_ok(C, "{\"name\":\"c\",\"type\":\"STATIC\",\"connect_timeout\":\"1s\","
		 "\"load_assignment\":{\"cluster_name\":\"c\",\"endpoints\":[{\"lb_endpoints\":[{"
		 "\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"10.0.0.1\","
		 "\"port_value\":443}}}}]}]},"
		 "\"transport_socket\":{\"name\":\"tls\",\"typed_config\":{" UTC_AT
		 ",\"sni\":\"up-1.test\"}}}");
	assert_string_equal(cluster("c")->upstream_tls->sni, "up-1.test");
	/* raw_buffer, typed as Envoy Gateway writes it: plain text. Fails
	 * before: "unknown type ... RawBuffer" (not in gRPC's tree) */
	tc_ok(C, "{\"name\":\"c\",\"type\":\"STATIC\",\"connect_timeout\":\"1s\","
		 "\"load_assignment\":{\"cluster_name\":\"c\",\"endpoints\":[{\"lb_endpoints\":[{"
		 "\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"10.0.0.1\","
		 "\"port_value\":80}}}}]}]},"
		 "\"transport_socket\":{\"name\":\"envoy.transport_sockets.raw_buffer\","
		 "\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.transport_"
		 "sockets.raw_buffer.v3.RawBuffer\"}}}");
	assert_null(cluster("c")->upstream_tls);
	/* the upstream PROXY protocol socket (BackendTrafficPolicy
	 * proxyProtocol) around raw_buffer: plain text after a v2 header.
	 * Fails before: "upstream_proxy_protocol is not supported by Arion" */
#define UPP_CL(cfg, inner)                                                                         \
	"{\"name\":\"c\",\"type\":\"STATIC\",\"connect_timeout\":\"1s\","                          \
	"\"transport_socket\":{\"name\":\"envoy.transport_sockets.upstream_proxy_protocol\","      \
	"\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.transport_"            \
	"sockets.proxy_protocol.v3.ProxyProtocolUpstreamTransport\"" cfg inner "}}}"
#define UPP_RAW                                                                                    \
	",\"transport_socket\":{\"name\":\"envoy.transport_sockets.raw_buffer\",\"typed_config\":" \
	"{"                                                                                        \
	"\"@type\":\"type.googleapis.com/envoy.extensions.transport_sockets.raw_buffer.v3."        \
	"RawBuffer\"}}"
	tc_ok(C, UPP_CL(",\"config\":{\"version\":\"V2\"}", UPP_RAW));
	assert_null(cluster("c")->upstream_tls);
	assert_int_equal(cluster("c")->upstream_pp, 2);
	assert_int_equal(cluster("c")->ts_default.pp_version, 2);
	assert_false(cluster("c")->plain_h1); /* the pools' key check runs */
	/* V1 is the default; allow_unspecified_address and tlv_as_pool_key
	 * change nothing Arion sends (IPv4 downstreams, no TLVs) */
	tc_ok(C, UPP_CL(",\"allow_unspecified_address\":true,\"tlv_as_pool_key\":true", UPP_RAW));
	assert_int_equal(cluster("c")->upstream_pp, 1);
	/* around TLS: the header, then the ClientHello */
	tc_ok(C, UPP_CL(",\"config\":{\"version\":\"V1\"}",
			",\"transport_socket\":{\"name\":\"tls\",\"typed_config\":{" UTC_AT
			",\"sni\":\"up.test\"}}"));
	assert_string_equal(cluster("c")->upstream_tls->sni, "up.test");
	assert_int_equal(cluster("c")->upstream_pp, 1);
	/* no cluster without it has a header */
	tc_ok(C, "{\"name\":\"c\",\"type\":\"STATIC\",\"connect_timeout\":\"1s\"}");
	assert_int_equal(cluster("c")->upstream_pp, 0);
	assert_true(cluster("c")->plain_h1);
	/* refused, naming the field */
	tc_refused(C, UPP_CL(",\"config\":{\"version\":\"V2\"}", ""),
		   "typed_config.transport_socket: missing");
	tc_refused(C,
		   UPP_CL("", ",\"transport_socket\":{\"name\":\"x\",\"typed_config\":{\"@type\":"
			      "\"type.googleapis.com/envoy.extensions.transport_sockets.proxy_"
			      "protocol.v3.ProxyProtocolUpstreamTransport\"}}"),
		   "upstream_proxy_protocol inside upstream_proxy_protocol");
	tc_refused(C, UPP_CL(",\"config\":{\"version\":7}", UPP_RAW),
		   "config.version: 7 is not a PROXY protocol version");
#undef UPP_CL
#undef UPP_RAW
}

/* SAN matchers without a trusted CA (an inline validation_context, which
 * cannot hold one: X13) would check the names of a chain nobody verified,
 * so any certificate naming the host, a self-signed one too, would pass.
 * Envoy refuses it ("SAN-based verification of peer certificates without
 * trusted CA is insecure and not allowed"); so does the conversion, naming
 * the field, for clusters and listeners. With a CA's Secret beside them
 * (combined_validation_context) the same matchers are taken, and an empty
 * validation_context (no verification, Envoy's default) still is. */
static void test_san_matchers_without_trusted_ca_refused(void **state)
{
	(void)state;
	tc_refused(C,
		   jutc("\"validation_context\":{\"match_subject_alt_names\":[{\"exact\":"
			"\"up.test\"}]}"),
		   "Cluster 'c': transport_socket.typed_config.common_tls_context."
		   "validation_context.match_subject_alt_names: without a trusted CA no "
		   "certificate is verified");
	tc_refused(C,
		   jutc("\"validation_context\":{\"match_typed_subject_alt_names\":[{\"san_type\":"
			"\"DNS\",\"matcher\":{\"exact\":\"up.test\"}}]}"),
		   "validation_context.match_typed_subject_alt_names: without a trusted CA");
	tc_refused(L,
		   "{\"name\":\"l\"," ADDR ",\"filter_chains\":[" ECHO
		   ",\"transport_socket\":{\"name\":\"tls\",\"typed_config\":{" DTC_AT
		   ",\"require_client_certificate\":false,\"common_tls_context\":{\"tls_"
		   "certificate_sds_secret_configs\":[{\"name\":\"cert\"}],\"validation_context\":{"
		   "\"match_subject_alt_names\":[{\"suffix\":\".client.test\"}]}}}}}]}",
		   "validation_context.match_subject_alt_names: without a trusted CA");
	struct tc_pki p;
	tc_make_pki(&p);
	char *v = validation_json("ca", p.ca, "");
	tc_ok(S, v);
	free(v);
	tc_free_pki(&p);
	tc_ok(C, jutc("\"combined_validation_context\":{\"default_validation_context\":{\"match_"
		      "subject_alt_names\":[{\"exact\":\"up.test\"}]},\"validation_context_sds_"
		      "secret_config\":{\"name\":\"ca\"}}"));
	assert_int_equal(cluster("c")->upstream_tls->n_san_matchers, 1);
	tc_ok(C, jutc("\"validation_context\":{}"));
	assert_int_equal(cluster("c")->upstream_tls->n_san_matchers, 0);
	/* match_typed_subject_alt_names keeps each matcher's SAN type (lib/tls
	 * tries it on SANs of that type only); UNSPECIFIED and OTHER_NAME are
	 * refused */
	tc_ok(C, jutc("\"combined_validation_context\":{\"default_validation_context\":{\"match_"
		      "typed_subject_alt_names\":[{\"san_type\":\"URI\",\"matcher\":{\"prefix\":"
		      "\"spiffe://\"}},{\"san_type\":\"IP_ADDRESS\",\"matcher\":{\"exact\":"
		      "\"10.0.0.1\"}}]},\"validation_context_sds_secret_config\":{\"name\":\"ca\"}}"));
	const struct arn_cfg_tls *t = cluster("c")->upstream_tls;
	assert_int_equal(t->n_san_matchers, 2);
	assert_int_equal(t->san_matchers[0].san_type, ARN_CFG_SAN_URI);
	assert_int_equal(t->san_matchers[1].san_type, ARN_CFG_SAN_IP);
	tc_refused(C,
		   jutc("\"combined_validation_context\":{\"default_validation_context\":{\"match_"
			"typed_subject_alt_names\":[{\"matcher\":{\"exact\":\"a\"}}]},"
			"\"validation_context_sds_secret_config\":{\"name\":\"ca\"}}"),
		   "match_typed_subject_alt_names[0].san_type: SAN_TYPE_UNSPECIFIED");
	tc_refused(C,
		   jutc("\"combined_validation_context\":{\"default_validation_context\":{\"match_"
			"typed_subject_alt_names\":[{\"san_type\":5,\"matcher\":"
			"{\"exact\":\"a\"}}]},\"validation_context_sds_secret_config\":{\"name\":"
			"\"ca\"}}"),
		   "match_typed_subject_alt_names[0].san_type: 5 is not supported by Arion");
}

/* X16: a listener whose DownstreamTlsContext names a cipher OpenSSL does
 * not know (conversion lets a list with one known cipher through; lib/tls
 * checks each, as Envoy does) is refused when applied, naming the chain
 * and the cipher; the listener in force stays. */
static void test_x16_listener_tls_context_refused(void **state)
{
	(void)state;
	arn_config_set_tls_check(arn_tls_cfg_check);
	cert_secret();
	tc_ok(L, jtls(""));
	x16_refused(
	    L,
	    "{\"name\":\"l\"," ADDR ",\"filter_chains\":[" ECHO
	    ",\"transport_socket\":{\"name\":\"tls\",\"typed_config\":{" DTC_AT
	    ",\"common_tls_context\":{\"tls_certificate_sds_secret_configs\":[{\"name\":"
	    "\"cert\"}],\"tls_params\":{\"cipher_suites\":[\"ECDHE-ECDSA-AES128-GCM-SHA256\","
	    "\"NOT-A-CIPHER\"]}}}}}]}",
	    "Listener 'l': filter_chains '': transport_socket: ");
	assert_non_null(strstr(tc_res.errors[0].message, "NOT-A-CIPHER"));
	assert_null(listener("l")->chains[0].tls->cipher_suites); /* the old one */
	/* without its Secret the context is not checked: the listener warms */
	tc_ok(L, "{\"name\":\"l2\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
		 "\"port_value\":444}},\"filter_chains\":[" ECHO
		 ",\"transport_socket\":{\"name\":\"tls\",\"typed_config\":{" DTC_AT
		 ",\"common_tls_context\":{\"tls_certificate_sds_secret_configs\":[{\"name\":"
		 "\"missing\"}]}}}}]}");
	arn_config_set_tls_check(NULL);
}

/* X16: a cluster's UpstreamTlsContext with an unknown curve is refused
 * naming the cluster and the field. */
static void test_x16_cluster_tls_context_refused(void **state)
{
	(void)state;
	arn_config_set_tls_check(arn_tls_cfg_check);
	tc_ok(C, jutc("\"tls_params\":{\"ecdh_curves\":[\"X25519\"]}"));
	x16_refused(C, jutc("\"tls_params\":{\"ecdh_curves\":[\"X25519\",\"NOPE-521\"]}"),
		    "Cluster 'c': transport_socket: ");
	assert_string_equal(cluster("c")->upstream_tls->ecdh_curves, "X25519");
	arn_config_set_tls_check(NULL);
}

/* X16: a Secret update whose certificate the listener using it cannot
 * serve (an ECDSA key off P-256/384/521; the Secret alone converts) is
 * refused naming the Secret and the listener; the old certificate stays. */
static void test_x16_secret_refused_for_its_listener(void **state)
{
	(void)state;
	arn_config_set_tls_check(arn_tls_cfg_check);
	cert_secret();
	tc_ok(L, jtls(""));
	const struct arn_cfg_secret *before = secret("cert");
	struct tcert c;
	tcert_make_ec(&c, "cert.test", "secp256k1");
	char *j = tj_secret_tls("cert", c.cert_json, c.key_json);
	x16_refused(S, j, "Secret 'cert': for listener 'l': filter_chains '': transport_socket: ");
	assert_ptr_equal(secret("cert"), before);
	free(j);
	tcert_free(&c);
	/* a Secret nothing uses is not checked against anything */
	tcert_make_ec(&c, "other.test", "secp256k1");
	j = tj_secret_tls("other", c.cert_json, c.key_json);
	tc_ok(S, j);
	free(j);
	tcert_free(&c);
	arn_config_set_tls_check(NULL);
}

/* X16, G7: removing a Secret that a listener or cluster in force names
 * would leave it without its TLS context (the listener's connections
 * refused, the cluster's upstream connections failing). Envoy ignores the
 * removal of an SDS Secret ("it should never be removed except by the
 * modification of the referenced cluster/listener"); Arion refuses it,
 * naming who uses it, and the Secret stays. Once nothing names it, it goes. */
static void test_x16_secret_in_use_not_removed(void **state)
{
	(void)state;
	cert_secret();
	tc_ok(L, jtls(""));
	const struct arn_cfg_secret *before = secret("cert");
	REMOVE(S, "cert");
	assert_true(tc_res.accepted);
	assert_int_equal(tc_res.n_errors, 1);
	assert_string_equal(tc_res.errors[0].name, "cert");
	assert_non_null(
	    strstr(tc_res.errors[0].message, "Secret 'cert': still used by listener 'l'"));
	assert_ptr_equal(secret("cert"), before);
	/* a cluster's validation context likewise */
	struct tcert ca;
	tcert_make(&ca, "ca.test");
	char *j = validation_json("ca", ca.cert_json, "");
	tc_ok(S, j);
	free(j);
	tcert_free(&ca);
	tc_ok(C, jutc("\"validation_context_sds_secret_config\":{\"name\":\"ca\"}"));
	REMOVE(S, "ca");
	assert_int_equal(tc_res.n_errors, 1);
	assert_non_null(strstr(tc_res.errors[0].message, "Secret 'ca': still used by cluster 'c'"));
	assert_non_null(secret("ca"));
	/* nothing names them any more: removed */
	REMOVE(L, "l");
	REMOVE(C, "c");
	REMOVE(S, "cert", "ca");
	assert_int_equal(tc_res.n_errors, 0);
	assert_null(secret("cert"));
	assert_null(secret("ca"));
}

const struct CMUnitTest conv_tls_tests[] = {
    TC(test_listener_filters_timeout),
    TC(test_continue_on_listener_filters_timeout),
    TC(test_tls_inspector_initial_read_buffer_size),
    TC(test_tls_inspector_ja3),
    TC(test_dtc_session_ticket_keys_sds),
    TC(test_dtc_session_ticket_keys_inline_refused),
    TC(test_dtc_disable_stateless_session_resumption),
    TC(test_dtc_alpn_h2),
    TC(test_dtc_ocsp_staple_policy),
    TC(test_secret_ocsp_staple),
    TC(test_secret_ocsp_must_staple_certificate),
    TC(test_secret_crl),
    TC(test_secret_max_verify_depth),
    TC(test_secret_session_ticket_keys),
    TC(test_secret_generic),
    TC(test_x16_listener_tls_context_refused),
    TC(test_utc_sni_refuses_controls),
    TC(test_san_matchers_without_trusted_ca_refused),
    TC(test_x16_cluster_tls_context_refused),
    TC(test_x16_secret_refused_for_its_listener),
    TC(test_x16_secret_in_use_not_removed),
};
const size_t n_conv_tls_tests = sizeof(conv_tls_tests) / sizeof(conv_tls_tests[0]);
