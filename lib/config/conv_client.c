/*
 * The connection manager's fields that decide what an upstream believes
 * about the client: forward_client_cert_details and
 * set_current_client_cert_details (x-forwarded-client-cert,
 * lib/http/http_xfcc.c), as Envoy's HttpConnectionManagerConfig reads
 * them.
 */
#include "arn_config.h"
#include "config_int.h"

static const char *const fcc_names[] = {"SANITIZE", "FORWARD_ONLY", "APPEND_FORWARD",
					"SANITIZE_SET", "ALWAYS_FORWARD_ONLY"};

/* forward_client_cert_details: SANITIZE (0) by default, as Envoy: a
 * client's own header never reaches the upstream unless asked. */
static void fcc(struct conv *c, struct pb h, struct arn_cfg_hcm *out)
{
	int32_t m = pb_i32(h, "forward_client_cert_details");
	if (m < 0 || m > ARN_CFG_FCC_ALWAYS_FORWARD_ONLY) {
		conv_err(c, "forward_client_cert_details", "%d: unknown value", m);
		return;
	}
	out->fcc = (uint8_t)m;
	if (!pb_has(h, "set_current_client_cert_details"))
		return;
	size_t k = conv_push(c, "set_current_client_cert_details");
	struct pb d = pb_msg(h, "set_current_client_cert_details");
	conv_only(c, d, "subject,cert,chain,dns,uri");
	bool subject = false;
	pb_wrapped_bool(d, "subject", &subject);
	uint8_t bits = (uint8_t)((pb_bool(d, "cert") ? ARN_CFG_FCC_D_CERT : 0) |
				 (pb_bool(d, "chain") ? ARN_CFG_FCC_D_CHAIN : 0) |
				 (subject ? ARN_CFG_FCC_D_SUBJECT : 0) |
				 (pb_bool(d, "uri") ? ARN_CFG_FCC_D_URI : 0) |
				 (pb_bool(d, "dns") ? ARN_CFG_FCC_D_DNS : 0));
	/* Envoy reads the details only with the two modes that write the
	 * header; with another they would be accepted and do nothing */
	if (bits && m != ARN_CFG_FCC_APPEND_FORWARD && m != ARN_CFG_FCC_SANITIZE_SET)
		conv_err(c, "",
			 "only APPEND_FORWARD and SANITIZE_SET add the client's certificate "
			 "details; forward_client_cert_details is %s",
			 fcc_names[m]);
	out->fcc_details = bits;
	conv_pop(c, k);
}

/* internal_address_config: which peers are internal (x-envoy-internal,
 * the x-envoy-* sanitising). Envoy 1.36 (the runtime guard
 * explicit_internal_address_config removed, its true kept): unset, none
 * is; set without cidr_ranges, its isInternalAddress falls back to RFC
 * 1918 (and loopback); else exactly the ranges. unix_sockets is
 * accepted: it names pipe peers, and Arion's data plane has none. */
static void internal_addresses(struct conv *c, struct pb h, struct arn_cfg_hcm *out)
{
	if (!pb_has(h, "internal_address_config"))
		return;
	size_t k = conv_push(c, "internal_address_config");
	struct pb ia = pb_msg(h, "internal_address_config");
	conv_only(c, ia, "unix_sockets,cidr_ranges");
	out->internal_cfg = true;
	size_t n = pb_len(ia, "cidr_ranges");
	if (n) {
		out->internal_cidrs = CONV_NEW(c, struct arn_cfg_cidr, n);
		if (out->internal_cidrs) {
			out->n_internal_cidrs = n;
			for (size_t i = 0; i < n; i++) {
				size_t m = conv_push(c, "cidr_ranges[%zu]", i);
				conv_cidr(c, pb_at(ia, "cidr_ranges", i), &out->internal_cidrs[i]);
				conv_pop(c, m);
			}
		}
	}
	conv_pop(c, k);
}

void conv_hcm_client(struct conv *c, struct pb h, struct arn_cfg_hcm *out)
{
	fcc(c, h, out);
	internal_addresses(c, h, out);
}
