/*
 * The connection manager's client identity fields (conv_client.c):
 * forward_client_cert_details and set_current_client_cert_details, and
 * every refusal, each naming its field.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tc.h"

#define ADDR "\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\",\"port_value\":9000}}"
#define AT(t) "\"@type\":\"type.googleapis.com/" t "\""
#define HCM_AT                                                                                     \
	AT("envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager")
#define ROUTER                                                                                     \
	"{\"name\":\"envoy.filters.http.router\",\"typed_config\":{" AT(                           \
	    "envoy.extensions.filters.http.router.v3.Router") "}}"
/* a listener whose connection manager has @p extra (members and a comma) */
#define LSN(extra)                                                                                 \
	"{\"name\":\"l\"," ADDR ",\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","             \
	"\"typed_config\":{" HCM_AT ",\"stat_prefix\":\"ing\"," extra                              \
	"\"route_config\":{\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],"                \
	"\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\"}}]}]},"            \
	"\"http_filters\":[" ROUTER "]}}]}]}"

static int setup(void **state)
{
	arn_config_set_features(ARN_CONFIG_FEATURE_L4 | ARN_CONFIG_FEATURE_HTTP_L4);
	return tc_setup(state);
}

static int teardown(void **state)
{
	arn_config_set_features(0);
	return tc_teardown(state);
}

static const struct arn_cfg_hcm *hcm0(void)
{
	const struct arn_cfg_listener *l = listener("l");
	assert_non_null(l);
	return l->chains[0].hcm;
}

/* SANITIZE unless set (Envoy's default); each mode Arion acts on. */
static void test_fcc_modes(void **state)
{
	(void)state;
	tc_ok(L, LSN(""));
	assert_int_equal(hcm0()->fcc, ARN_CFG_FCC_SANITIZE);
	assert_int_equal(hcm0()->fcc_details, 0);
	tc_ok(L, LSN("\"forward_client_cert_details\":\"FORWARD_ONLY\","));
	assert_int_equal(hcm0()->fcc, ARN_CFG_FCC_FORWARD_ONLY);
	tc_ok(L, LSN("\"forward_client_cert_details\":\"ALWAYS_FORWARD_ONLY\","));
	assert_int_equal(hcm0()->fcc, ARN_CFG_FCC_ALWAYS_FORWARD_ONLY);
	tc_ok(L, LSN("\"forward_client_cert_details\":\"SANITIZE_SET\","
		     "\"set_current_client_cert_details\":{\"subject\":true,\"cert\":true,"
		     "\"chain\":true,\"dns\":true,\"uri\":true},"));
	assert_int_equal(hcm0()->fcc, ARN_CFG_FCC_SANITIZE_SET);
	assert_int_equal(hcm0()->fcc_details, ARN_CFG_FCC_D_CERT | ARN_CFG_FCC_D_CHAIN |
						  ARN_CFG_FCC_D_SUBJECT | ARN_CFG_FCC_D_URI |
						  ARN_CFG_FCC_D_DNS);
	tc_ok(L, LSN("\"forward_client_cert_details\":\"APPEND_FORWARD\","
		     "\"set_current_client_cert_details\":{\"uri\":true},"));
	assert_int_equal(hcm0()->fcc, ARN_CFG_FCC_APPEND_FORWARD);
	assert_int_equal(hcm0()->fcc_details, ARN_CFG_FCC_D_URI);
	/* details that are all false are no details */
	tc_ok(L, LSN("\"set_current_client_cert_details\":{\"subject\":false,\"cert\":false},"));
	assert_int_equal(hcm0()->fcc_details, 0);
}

/* Details with a mode that never writes the header would be accepted
 * and do nothing: refused, naming the field and the mode. */
static void test_fcc_refusals(void **state)
{
	(void)state;
	tc_refused(L,
		   LSN("\"forward_client_cert_details\":\"FORWARD_ONLY\","
		       "\"set_current_client_cert_details\":{\"uri\":true},"),
		   "set_current_client_cert_details: only APPEND_FORWARD and SANITIZE_SET add the "
		   "client's certificate details; forward_client_cert_details is FORWARD_ONLY");
	tc_refused(L, LSN("\"set_current_client_cert_details\":{\"subject\":true},"),
		   "forward_client_cert_details is SANITIZE");
}

/* internal_address_config: unset (no internal address), set without
 * ranges (RFC 1918), ranges; IPv6 ranges kept with their family, masked
 * (Envoy's CidrRange::create), a prefix_len above 128 refused by field. */
static void test_internal_address_config(void **state)
{
	(void)state;
	tc_ok(L, LSN(""));
	assert_false(hcm0()->internal_cfg);
	tc_ok(L, LSN("\"internal_address_config\":{\"unix_sockets\":true},"));
	assert_true(hcm0()->internal_cfg);
	assert_int_equal(hcm0()->n_internal_cidrs, 0);
	tc_ok(L, LSN("\"internal_address_config\":{\"cidr_ranges\":[{\"address_prefix\":"
		     "\"10.1.2.3\",\"prefix_len\":16},{\"address_prefix\":\"192.0.2.7\"}]},"));
	const struct arn_cfg_hcm *h = hcm0();
	assert_int_equal(h->n_internal_cidrs, 2);
	assert_int_equal(h->internal_cidrs[0].addr, 0x0a010000);
	assert_int_equal(h->internal_cidrs[0].len, 16);
	assert_int_equal(h->internal_cidrs[1].addr, 0xc0000207);
	assert_int_equal(h->internal_cidrs[1].len, 32);
	/* an IPv6 range beside an IPv4 one (Envoy Gateway's mixed lists) */
	tc_ok(L, LSN("\"internal_address_config\":{\"cidr_ranges\":[{\"address_prefix\":"
		     "\"fdff:1:2:3::\",\"prefix_len\":8},{\"address_prefix\":\"10.0.0.0\","
		     "\"prefix_len\":8},{\"address_prefix\":\"2001:db8::7\"}]},"));
	h = hcm0();
	assert_int_equal(h->n_internal_cidrs, 3);
	static const uint8_t fd[16] = {0xfd};
	assert_true(h->internal_cidrs[0].v6);
	assert_int_equal(h->internal_cidrs[0].len, 8);
	assert_memory_equal(h->internal_cidrs[0].addr6, fd, 16);
	assert_false(h->internal_cidrs[1].v6);
	assert_int_equal(h->internal_cidrs[1].addr, 0x0a000000);
	/* an address alone is all of its bits, as for IPv4 */
	static const uint8_t one[16] = {0x20, 0x01, 0x0d, 0xb8, [15] = 7};
	assert_true(h->internal_cidrs[2].v6);
	assert_int_equal(h->internal_cidrs[2].len, 128);
	assert_memory_equal(h->internal_cidrs[2].addr6, one, 16);
	tc_refused(L,
		   LSN("\"internal_address_config\":{\"cidr_ranges\":[{\"address_prefix\":"
		       "\"10.0.0.0\",\"prefix_len\":8},{\"address_prefix\":\"fd00::\",\"prefix_"
		       "len\":129}]},"),
		   "internal_address_config.cidr_ranges[1].prefix_len: 129 is more than 128");
	tc_refused(
	    L,
	    LSN("\"internal_address_config\":{\"cidr_ranges\":[{\"address_prefix\":"
		"\"fd00::g\",\"prefix_len\":8}]},"),
	    "internal_address_config.cidr_ranges[0].address_prefix: 'fd00::g' is not an IPv4 "
	    "or IPv6 address");
}

#define IPD(t, fields)                                                                             \
	"\"original_ip_detection_extensions\":[{\"name\":\"e\",\"typed_config\":{" AT(             \
	    "envoy.extensions.http.original_ip_detection." t) fields "}}],"
#define CUSTOM(fields) IPD("custom_header.v3.CustomHeaderConfig", fields)
#define XFF(fields) IPD("xff.v3.XffConfig", fields)

/* Envoy Gateway's shapes (clientIPDetection customHeader, xForwardedFor
 * numTrustedHops / trustedCIDRs), in order. */
static void test_ip_detection(void **state)
{
	(void)state;
	tc_ok(L, LSN(CUSTOM(",\"header_name\":\"X-Real-IP\",\"allow_extension_to_set_address_as_"
			    "trusted\":true,\"reject_with_status\":{\"code\":\"Forbidden\"}")));
	const struct arn_cfg_hcm *h = hcm0();
	assert_int_equal(h->n_ip_detect, 1);
	assert_int_equal(h->ip_detect[0].kind, ARN_CFG_IPD_CUSTOM_HEADER);
	assert_string_equal(h->ip_detect[0].header, "x-real-ip");
	assert_true(h->ip_detect[0].trusted);
	assert_int_equal(h->ip_detect[0].reject_status, 403);
	assert_true(h->ip_detect_reject);
	assert_true(h->head_policies);
	tc_ok(L, LSN(XFF(",\"xff_num_trusted_hops\":2,\"skip_xff_append\":false")));
	h = hcm0();
	assert_int_equal(h->ip_detect[0].kind, ARN_CFG_IPD_XFF);
	assert_int_equal(h->ip_detect[0].hops, 2);
	assert_false(h->head_policies);
	tc_ok(L, LSN(XFF(",\"xff_trusted_cidrs\":{\"cidrs\":[{\"address_prefix\":\"10.0.0.0\","
			 "\"prefix_len\":8}]},\"skip_xff_append\":false")));
	h = hcm0();
	assert_int_equal(h->ip_detect[0].n_cidrs, 1);
	assert_int_equal(h->ip_detect[0].cidrs[0].addr, 0x0a000000);
}

/* Envoy's refusals, by field and with Envoy's words where it has them. */
static void test_ip_detection_refusals(void **state)
{
	(void)state;
	tc_refused(L, LSN("\"use_remote_address\":true," CUSTOM(",\"header_name\":\"x-ip\"")),
		   "Original IP detection extensions and use_remote_address may not be mixed");
	tc_refused(L, LSN("\"xff_num_trusted_hops\":1," CUSTOM(",\"header_name\":\"x-ip\"")),
		   "Original IP detection extensions and xff_num_trusted_hops may not be mixed");
	tc_refused(L,
		   LSN(XFF(",\"xff_num_trusted_hops\":1,\"xff_trusted_cidrs\":{\"cidrs\":[{"
			   "\"address_prefix\":\"10.0.0.0\",\"prefix_len\":8}]}")),
		   "Cannot set both xff_num_trusted_hops and xff_trusted_cidrs");
	tc_refused(L, LSN(CUSTOM("")), "typed_config.header_name: missing (Envoy requires it)");
	tc_refused(L, LSN(CUSTOM(",\"header_name\":\"x ip\"")), "typed_config.header_name");
	tc_refused(L,
		   LSN(CUSTOM(",\"header_name\":\"x-ip\",\"reject_with_status\":{\"code\":"
			      "\"Continue\"}")),
		   "reject_with_status.code: 100: a final HTTP status (200 to 599) is needed");
	tc_refused(L,
		   LSN("\"original_ip_detection_extensions\":[{\"name\":\"mine\",\"typed_config\":"
		       "{" AT("google.protobuf.Empty") "}}],"),
		   "Original IP detection extension not found: 'mine'");
	tc_refused(L,
		   LSN(XFF(",\"xff_trusted_cidrs\":{\"cidrs\":[{\"address_prefix\":\"2001:db8::\","
			   "\"prefix_len\":200}]}")),
		   "xff_trusted_cidrs.cidrs[0].prefix_len: 200 is more than 128");
	tc_refused(L,
		   LSN(XFF(",\"xff_trusted_cidrs\":{\"cidrs\":[{\"address_prefix\":\"[::1]\","
			   "\"prefix_len\":128}]}")),
		   "xff_trusted_cidrs.cidrs[0].address_prefix: '[::1]' is not an IPv4 or IPv6 "
		   "address");
}

/* Envoy's XffTrustedCidrsTest configuration: IPv4 and IPv6 ranges in one
 * list, each masked as CidrRange::create masks it (the host bits of
 * 2001:db8:7e57:1::ff/64 cleared; a /0 keeps nothing); an IPv4 length
 * above 32 is 32 (truncateIpAddressAndLength), as Envoy accepts it. */
static void test_ip_detection_ipv6_cidrs(void **state)
{
	(void)state;
	tc_ok(L, LSN(XFF(",\"xff_trusted_cidrs\":{\"cidrs\":[{\"address_prefix\":\"192.0.2.0\","
			 "\"prefix_len\":24},{\"address_prefix\":\"2001:db8:7e57:1::ff\","
			 "\"prefix_len\":64},{\"address_prefix\":\"2001:db8:7e57:1::ff\","
			 "\"prefix_len\":61},{\"address_prefix\":\"::\",\"prefix_len\":0},"
			 "{\"address_prefix\":\"198.51.100.9\",\"prefix_len\":64}]}")));
	const struct arn_cfg_ipdetect *d = &hcm0()->ip_detect[0];
	assert_int_equal(d->n_cidrs, 5);
	assert_false(d->cidrs[0].v6);
	assert_int_equal(d->cidrs[0].addr, 0xc0000200);
	static const uint8_t n64[16] = {0x20, 0x01, 0x0d, 0xb8, 0x7e, 0x57, 0x00, 0x01};
	static const uint8_t n61[16] = {0x20, 0x01, 0x0d, 0xb8, 0x7e, 0x57, 0x00, 0x00};
	static const uint8_t zero[16] = {0};
	assert_true(d->cidrs[1].v6);
	assert_int_equal(d->cidrs[1].len, 64);
	assert_memory_equal(d->cidrs[1].addr6, n64, 16);
	assert_int_equal(d->cidrs[2].len, 61);
	assert_memory_equal(d->cidrs[2].addr6, n61, 16);
	assert_true(d->cidrs[3].v6);
	assert_int_equal(d->cidrs[3].len, 0);
	assert_memory_equal(d->cidrs[3].addr6, zero, 16);
	assert_false(d->cidrs[4].v6);
	assert_int_equal(d->cidrs[4].len, 32);
	assert_int_equal(d->cidrs[4].addr, 0xc6336409);
}

const struct CMUnitTest conv_client_tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    T(test_fcc_modes),	  T(test_fcc_refusals),		 T(test_internal_address_config),
    T(test_ip_detection), T(test_ip_detection_refusals), T(test_ip_detection_ipv6_cidrs),
};
const size_t n_conv_client_tests = sizeof(conv_client_tests) / sizeof(conv_client_tests[0]);
