/*
 * A cluster's transport_socket_matches: the conversion (each field, the
 * bounds, the refusals named), the endpoints' envoy.transport_socket_match
 * metadata, X13 on every match's socket, warming on its Secrets, X16 on
 * its context, and the resolution (Envoy's TransportSocketMatcherImpl::
 * resolve and Config::Metadata::metadataLabelMatch).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arn_config.h"
#include "arn_tls.h"
#include "tc.h"

#define UTC_AT                                                                                     \
	"\"@type\":\"type.googleapis.com/"                                                         \
	"envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext\""
/* an UpstreamTlsContext transport socket with sni @p sni, then @p more */
#define UTS(sni, more)                                                                             \
	"{\"name\":\"envoy.transport_sockets.tls\",\"typed_config\":{" UTC_AT ",\"sni\":\"" sni    \
	"\"" more "}}"
#define EP(ip, md)                                                                                 \
	"{\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"" ip                        \
	"\",\"port_value\":443}}}" md "}"
#define TSM_MD(fields)                                                                             \
	",\"metadata\":{\"filter_metadata\":{\"envoy.transport_socket_match\":" fields "}}"

static char jb[4][16384];
static int jn;

/* STATIC cluster 'c' with @p fields (cluster members, each ending in ',')
 * and lb_endpoints @p eps. */
static const char *jc(const char *fields, const char *eps)
{
	char *b = jb[jn++ % 4];
	snprintf(b, sizeof(jb[0]),
		 "{\"name\":\"c\",\"type\":\"STATIC\",\"connect_timeout\":\"1s\",%s"
		 "\"load_assignment\":{\"cluster_name\":\"c\",\"endpoints\":[{\"lb_endpoints\":["
		 "%s]}]}}",
		 fields, eps);
	return b;
}

static const struct arn_cfg_endpoint *ep_at(const struct arn_cfg_cluster *c, size_t i)
{
	return &c->static_endpoints->priorities[0].localities[0].endpoints[i];
}

/* Each field converted: names, the Struct's kinds, each match's socket
 * (TLS with its SNI), the cluster's own socket
 * as the default named "default"; the endpoints' metadata kept. */
static void test_tsm_converted(void **state)
{
	(void)state;
	tc_ok(C, jc("\"transport_socket_matches\":[{\"name\":\"c/tls/0\",\"match\":{\"name\":"
		    "\"c/tls/0\"},\"transport_socket\":" UTS(
			"a.test",
			"") "},"
			    "{\"name\":\"m1\",\"match\":{\"n\":1.5,\"t\":true,\"z\":null},"
			    "\"transport_socket\":" UTS("m1.test", "") "}],"
								       "\"transport_socket\":" UTS(
									   "default.test", "") ",",
		    EP("10.0.0.1", TSM_MD("{\"name\":\"c/tls/0\",\"other\":[1,2]}")) "," EP(
			"10.0.0.2", "") "," EP("10.0.0.3",
					       TSM_MD("{\"n\":1.5,\"t\":true,\"z\":null}"))));
	const struct arn_cfg_cluster *c = cluster("c");
	assert_non_null(c);
	assert_int_equal(c->n_ts_matches, 2);
	const struct arn_cfg_ts_match *m0 = &c->ts_matches[0], *m1 = &c->ts_matches[1];
	assert_string_equal(m0->name, "c/tls/0");
	assert_ptr_equal(m0->cluster, c);
	assert_int_equal(m0->n_kv, 1);
	assert_int_equal(m0->kv[0].kind, ARN_CFG_TSM_STRING);
	assert_string_equal(m0->kv[0].str, "c/tls/0");
	assert_non_null(m0->tls);
	assert_string_equal(m0->tls->sni, "a.test");
	assert_string_equal(m1->name, "m1");
	assert_int_equal(m1->n_kv, 3);
	assert_string_equal(m1->tls->sni, "m1.test");
	assert_true(c->ts_default.is_default);
	assert_string_equal(c->ts_default.name, "default");
	assert_ptr_equal(c->ts_default.tls, c->upstream_tls);
	assert_string_equal(c->upstream_tls->sni, "default.test");
	/* the endpoints' metadata: the list kept as a kind no match equals */
	const struct arn_cfg_endpoint *e0 = ep_at(c, 0), *e1 = ep_at(c, 1), *e2 = ep_at(c, 2);
	assert_int_equal(e0->n_tsm, 2);
	assert_int_equal(e1->n_tsm, 0);
	assert_int_equal(e2->n_tsm, 3);
	bool other = false;
	for (size_t i = 0; i < e0->n_tsm; i++)
		other |=
		    strcmp(e0->tsm[i].key, "other") == 0 && e0->tsm[i].kind == ARN_CFG_TSM_OTHER;
	assert_true(other);
	/* resolution: each endpoint its own */
	assert_ptr_equal(arn_cfg_tsm_resolve(c, e0), m0);
	assert_ptr_equal(arn_cfg_tsm_resolve(c, e1), &c->ts_default);
	assert_ptr_equal(arn_cfg_tsm_resolve(c, e2), m1);
}

/* Envoy's resolve: the first match wins; every field of a match must be
 * in the endpoint's metadata and equal (same kind: "1" is not 1, true is
 * not "true"); a match without fields matches every endpoint, with
 * metadata or without; nothing matching and no transport_socket: plain
 * text (the default has no TLS). */
static void test_tsm_resolution(void **state)
{
	(void)state;
	tc_ok(
	    C,
	    jc("\"transport_socket_matches\":["
	       "{\"name\":\"both\",\"match\":{\"a\":\"1\",\"b\":true},\"transport_socket\":" UTS(
		   "both.test",
		   "") "},"
		       "{\"name\":\"a\",\"match\":{\"a\":\"1\"},\"transport_socket\":" UTS(
			   "a.test",
			   "") "},"
			       "{\"name\":\"a2\",\"match\":{\"a\":\"1\"},\"transport_socket\":" UTS(
				   "a2.test", "") "},"
						  "{\"name\":\"num\",\"match\":{\"a\":1},"
						  "\"transport_socket\":" UTS("num.test", "") "}],",
	       EP("10.0.0.1", TSM_MD("{\"a\":\"1\",\"b\":true}")) "," EP(
		   "10.0.0.2",
		   TSM_MD(
		       "{\"a\""
		       ":\"1\""
		       ",\"b\""
		       ":false"
		       "}")) "," EP("10.0.0.3",
				    TSM_MD(
					"{\"a\":1}")) "," EP("10.0.0.4",
							     TSM_MD(
								 "{\"a\":\"2\"}")) "," EP("10.0.0."
											  "5",
											  "") "," EP("10.0.0.6",
												     TSM_MD(
													 "{\"b\":"
													 "true}"))));
	const struct arn_cfg_cluster *c = cluster("c");
	assert_non_null(c);
	assert_null(c->upstream_tls);
	const struct arn_cfg_ts_match *m = c->ts_matches;
	assert_ptr_equal(arn_cfg_tsm_resolve(c, ep_at(c, 0)), &m[0]); /* first of three that fit */
	assert_ptr_equal(arn_cfg_tsm_resolve(c, ep_at(c, 1)), &m[1]); /* b differs: the next */
	assert_ptr_equal(arn_cfg_tsm_resolve(c, ep_at(c, 2)), &m[3]); /* 1, not "1" */
	assert_ptr_equal(arn_cfg_tsm_resolve(c, ep_at(c, 3)), &c->ts_default);
	assert_ptr_equal(arn_cfg_tsm_resolve(c, ep_at(c, 4)), &c->ts_default);
	assert_ptr_equal(arn_cfg_tsm_resolve(c, ep_at(c, 5)), &c->ts_default); /* a missing */
	assert_null(c->ts_default.tls); /* no transport_socket: plain text */
	/* a match without fields takes every endpoint (metadataLabelMatch of
	 * an empty label set) */
	tc_ok(C, jc("\"transport_socket_matches\":[{\"name\":\"x\",\"match\":{\"a\":\"9\"},"
		    "\"transport_socket\":" UTS("x.test", "") "},{\"name\":\"all\","
							      "\"transport_socket\":" UTS(
								  "all.test", "") "}],",
		    EP("10.0.0.1", "") "," EP("10.0.0.2", TSM_MD("{\"a\":\"1\"}")) "," EP(
			"10.0.0.3", TSM_MD("{\"a\":\"9\"}"))));
	c = cluster("c");
	assert_ptr_equal(arn_cfg_tsm_resolve(c, ep_at(c, 0)), &c->ts_matches[1]);
	assert_ptr_equal(arn_cfg_tsm_resolve(c, ep_at(c, 1)), &c->ts_matches[1]);
	assert_ptr_equal(arn_cfg_tsm_resolve(c, ep_at(c, 2)), &c->ts_matches[0]);
}

/* Refusals, each naming the field; the bounds (ARN_CFG_TSM_*). */
static void test_tsm_refused(void **state)
{
	(void)state;
	tc_refused(C,
		   jc("\"transport_socket_matches\":[{\"transport_socket\":" UTS("a", "") "}],",
		      EP("10.0.0.1", "")),
		   "transport_socket_matches[0].name: missing");
	tc_refused(C, jc("\"transport_socket_matches\":[{\"name\":\"m\"}],", EP("10.0.0.1", "")),
		   "transport_socket_matches[0].transport_socket: missing");
	tc_refused(C,
		   jc("\"transport_socket_matches\":[{\"name\":\"m\",\"match\":{\"a\":[1]},"
		      "\"transport_socket\":" UTS("a", "") "}],",
		      EP("10.0.0.1", "")),
		   "transport_socket_matches[0].match: 'a': a list is not supported");
	tc_refused(C,
		   jc("\"transport_socket_matches\":[{\"name\":\"m\",\"match\":{\"a\":{\"b\":1}},"
		      "\"transport_socket\":" UTS("a", "") "}],",
		      EP("10.0.0.1", "")),
		   "transport_socket_matches[0].match: 'a': a struct is not supported");
	tc_refused(
	    C,
	    jc("\"transport_socket_matches\":[{\"name\":\"m\",\"transport_socket\":{\"name\":"
	       "\"x\",\"typed_config\":{\"@type\":\"type.googleapis.com/"
	       "envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext\"}}}],",
	       EP("10.0.0.1", "")),
	    "transport_socket_matches[0].transport_socket.typed_config: transport socket "
	    "type");
	/* X13 on a match's socket: Secrets by name over ADS only */
	tc_refused(C,
		   jc("\"transport_socket_matches\":[{\"name\":\"m\",\"transport_socket\":" UTS(
			  "a", ",\"common_tls_context\":{\"validation_context_sds_secret_config\":{"
			       "\"name\":\"ca\",\"sds_config\":{\"path\":\"/x\"}}}") "}],",
		      EP("10.0.0.1", "")),
		   "transport_socket_matches[0].transport_socket.typed_config.common_tls_context."
		   "validation_context_sds_secret_config.sds_config");
	tc_refused(C,
		   jc("\"transport_socket_matches\":[{\"name\":\"m\",\"transport_socket\":" UTS(
			  "a", ",\"common_tls_context\":{\"validation_context\":{\"trusted_ca\":{"
			       "\"inline_string\":\"x\"}}}") "}],",
		      EP("10.0.0.1", "")),
		   "transport_socket_matches[0].transport_socket.typed_config.common_tls_context."
		   "validation_context");
	/* health checks: transport_socket_match_criteria refused by name */
	tc_refused(C,
		   jc("\"health_checks\":[{\"timeout\":\"1s\",\"interval\":\"1s\",\"healthy_"
		      "threshold\":1,\"unhealthy_threshold\":1,\"tcp_health_check\":{},"
		      "\"transport_socket_match_criteria\":{\"a\":\"1\"}}],",
		      EP("10.0.0.1", "")),
		   "transport_socket_match_criteria");
	/* bounds: matches, fields of a match and of an endpoint, bytes */
	char *big = malloc(65536), *p = big;
	p += sprintf(p, "\"transport_socket_matches\":[");
	for (int i = 0; i <= ARN_CFG_TSM_MAX; i++)
		p += sprintf(p, "%s{\"name\":\"m%d\",\"transport_socket\":" UTS("a", "") "}",
			     i ? "," : "", i);
	sprintf(p, "],");
	char *j = malloc(65536 + 1024);
	snprintf(j, 65536 + 1024,
		 "{\"name\":\"c\",\"type\":\"STATIC\",\"connect_timeout\":\"1s\",%s"
		 "\"load_assignment\":{\"cluster_name\":\"c\",\"endpoints\":[]}}",
		 big);
	tc_refused(C, j, "transport_socket_matches: 65 matches: at most 64");
	char fields[4096];
	p = fields;
	p += sprintf(p, "{");
	for (int i = 0; i <= ARN_CFG_TSM_FIELDS_MAX; i++)
		p += sprintf(p, "%s\"k%d\":\"v\"", i ? "," : "", i);
	sprintf(p, "}");
	snprintf(big, 65536,
		 "\"transport_socket_matches\":[{\"name\":\"m\",\"match\":%s,"
		 "\"transport_socket\":" UTS("a", "") "}],",
		 fields);
	tc_refused(C, jc(big, EP("10.0.0.1", "")),
		   "transport_socket_matches[0].match: 17 fields: at most 16");
	snprintf(big, 65536, EP("10.0.0.1", TSM_MD("%s")), fields);
	tc_refused(C, jc("", big),
		   "lb_endpoints[0].metadata.filter_metadata[envoy.transport_socket_match]: 17 "
		   "fields: at most 16");
	char longv[ARN_CFG_TSM_STR_MAX + 2];
	memset(longv, 'v', sizeof(longv) - 1);
	longv[sizeof(longv) - 1] = 0;
	snprintf(big, 65536,
		 "\"transport_socket_matches\":[{\"name\":\"m\",\"match\":{\"a\":\"%s\"},"
		 "\"transport_socket\":" UTS("a", "") "}],",
		 longv);
	tc_refused(C, jc(big, EP("10.0.0.1", "")), "'a': a value of 257 bytes: at most 256");
	snprintf(big, 65536, EP("10.0.0.1", TSM_MD("{\"%s\":1}")), longv);
	tc_refused(C, jc("", big), "a key of 257 bytes: at most 256");
	snprintf(big, 65536,
		 "\"transport_socket_matches\":[{\"name\":\"%s\",\"transport_socket\":" UTS(
		     "a", "") "}],",
		 longv);
	tc_refused(C, jc(big, EP("10.0.0.1", "")),
		   "transport_socket_matches[0].name: 257 bytes: at most 256");
	free(big);
	free(j);
}

/* A match's Secrets are the cluster's warming dependencies (G6), as its
 * own transport_socket's are; a match's context that would not build is
 * refused at application naming the match (X16). */
static void test_tsm_warms_and_x16(void **state)
{
	(void)state;
	tc_ok(C, jc("\"transport_socket_matches\":[{\"name\":\"m\",\"transport_socket\":" UTS(
			"a", ",\"common_tls_context\":{\"validation_context_sds_secret_config\":{"
			     "\"name\":\"ca-m\"}}") "}],",
		    EP("10.0.0.1", "")));
	assert_null(cluster("c")); /* warming on Secret 'ca-m' */
	struct tc_pki pki;
	tc_make_pki(&pki);
	char *s = malloc(16384);
	snprintf(s, 16384,
		 "{\"name\":\"ca-m\",\"validation_context\":{\"trusted_ca\":{\"inline_string\":"
		 "\"%s\"}}}",
		 pki.ca);
	tc_ok(S, s);
	assert_non_null(cluster("c"));
	assert_string_equal(cluster("c")->ts_matches[0].tls->validation_secret.name, "ca-m");
	free(s);
	tc_free_pki(&pki);
	arn_config_set_tls_check(arn_tls_cfg_check);
	tc_apply(C,
		 (const char *const[]){
		     jc("\"transport_socket_matches\":[{\"name\":\"m\",\"transport_socket\":" UTS(
			    "a", ",\"common_tls_context\":{\"tls_params\":{\"ecdh_curves\":["
				 "\"NOPE-521\"]}}") "}],",
			EP("10.0.0.1", "")),
		     NULL},
		 NULL);
	arn_config_set_tls_check(NULL);
	assert_int_equal(tc_res.n_errors, 1);
	assert_non_null(strstr(tc_res.errors[0].message,
			       "Cluster 'c': transport_socket_matches[0] 'm': transport_socket: "));
}

const struct CMUnitTest conv_tsm_tests[] = {
    TC(test_tsm_converted),
    TC(test_tsm_resolution),
    TC(test_tsm_refused),
    TC(test_tsm_warms_and_x16),
};
const size_t n_conv_tsm_tests = sizeof(conv_tsm_tests) / sizeof(conv_tsm_tests[0]);
