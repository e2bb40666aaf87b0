/*
 * The connection manager's fields that decide what an upstream believes
 * about the client: forward_client_cert_details and
 * set_current_client_cert_details (x-forwarded-client-cert,
 * lib/http/http_xfcc.c), as Envoy's HttpConnectionManagerConfig reads
 * them.
 */
#include <string.h>

#include "arn_config.h"
#include "arn_proto.h"
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

#define IPD_CUSTOM "envoy.extensions.http.original_ip_detection.custom_header.v3.CustomHeaderConfig"
#define IPD_XFF "envoy.extensions.http.original_ip_detection.xff.v3.XffConfig"

static void cidrs(struct conv *c, struct pb p, const char *f, struct arn_cfg_cidr **out, size_t *n)
{
	size_t len = pb_len(p, f);
	if (!len || !(*out = CONV_NEW(c, struct arn_cfg_cidr, len)))
		return;
	*n = len;
	for (size_t i = 0; i < len; i++) {
		size_t m = conv_push(c, "%s[%zu]", f, i);
		conv_cidr(c, pb_at(p, f, i), &(*out)[i]);
		conv_pop(c, m);
	}
}

/* CustomHeaderConfig: header_name required (an HTTP header name, Envoy's
 * HTTP_HEADER_NAME rule), reject_with_status a status Arion can answer
 * with (Envoy's enum, 0 undefined; a 1xx is no final answer). */
static void ipd_custom(struct conv *c, struct pb p, struct arn_cfg_ipdetect *o)
{
	o->kind = ARN_CFG_IPD_CUSTOM_HEADER;
	conv_only(c, p, "header_name,allow_extension_to_set_address_as_trusted,reject_with_status");
	upb_StringView hn = pb_str(p, "header_name");
	if (!hn.size)
		conv_err(c, "header_name", "missing (Envoy requires it)");
	else
		o->header = conv_hdr_name(c, "header_name", hn, &o->header_len);
	o->trusted = pb_bool(p, "allow_extension_to_set_address_as_trusted");
	if (pb_has(p, "reject_with_status")) {
		size_t m = conv_push(c, "reject_with_status");
		struct pb rs = pb_msg(p, "reject_with_status");
		conv_only(c, rs, "code");
		int32_t code = pb_i32(rs, "code");
		if (code < 200 || code > 599)
			conv_err(c, "code", "%d: a final HTTP status (200 to 599) is needed", code);
		else
			o->reject_status = (uint16_t)code;
		conv_pop(c, m);
	}
}

/* XffConfig: one of xff_num_trusted_hops and xff_trusted_cidrs (Envoy's
 * XffIPDetection::create); skip_xff_append accepted: with detection
 * extensions use_remote_address may not be set, so the connection manager
 * appends nothing whatever it says (Envoy 1.31 to 1.35). */
static void ipd_xff(struct conv *c, struct pb p, struct arn_cfg_ipdetect *o)
{
	o->kind = ARN_CFG_IPD_XFF;
	conv_only(c, p, "xff_num_trusted_hops,xff_trusted_cidrs,skip_xff_append");
	o->hops = pb_u32(p, "xff_num_trusted_hops");
	if (pb_has(p, "xff_trusted_cidrs")) {
		if (o->hops)
			conv_err(c, "xff_trusted_cidrs",
				 "Cannot set both xff_num_trusted_hops and xff_trusted_cidrs");
		size_t m = conv_push(c, "xff_trusted_cidrs");
		struct pb tc = pb_msg(p, "xff_trusted_cidrs");
		conv_only(c, tc, "cidrs");
		cidrs(c, tc, "cidrs", &o->cidrs, &o->n_cidrs);
		conv_pop(c, m);
	}
}

/* original_ip_detection_extensions, as Envoy's HttpConnectionManagerConfig
 * reads them: not with use_remote_address nor xff_num_trusted_hops, each
 * a type Arion has. */
static void ip_detection(struct conv *c, struct pb h, struct arn_cfg_hcm *out)
{
	size_t n = pb_len(h, "original_ip_detection_extensions");
	if (!n)
		return;
	if (out->use_remote_address)
		conv_err(
		    c, "original_ip_detection_extensions",
		    "Original IP detection extensions and use_remote_address may not be mixed");
	if (out->xff_num_trusted_hops)
		conv_err(
		    c, "original_ip_detection_extensions",
		    "Original IP detection extensions and xff_num_trusted_hops may not be mixed");
	struct arn_cfg_ipdetect *v = CONV_NEW(c, struct arn_cfg_ipdetect, n);
	if (!v)
		return;
	for (size_t i = 0; i < n; i++) {
		size_t m = conv_push(c, "original_ip_detection_extensions[%zu]", i);
		struct pb e = pb_at(h, "original_ip_detection_extensions", i);
		conv_only(c, e, "name,typed_config");
		struct pb tc = pb_msg(e, "typed_config");
		upb_StringView tn = tc.m ? arn_proto_any_type_name(tc.m) : (upb_StringView){0};
		upb_StringView name = pb_str(e, "name");
		if (tn.size == sizeof(IPD_CUSTOM) - 1 && !memcmp(tn.data, IPD_CUSTOM, tn.size)) {
			struct pb p = conv_any(c, tc, IPD_CUSTOM);
			size_t k = conv_push(c, "typed_config");
			if (p.m)
				ipd_custom(c, p, &v[i]);
			conv_pop(c, k);
		} else if (tn.size == sizeof(IPD_XFF) - 1 && !memcmp(tn.data, IPD_XFF, tn.size)) {
			struct pb p = conv_any(c, tc, IPD_XFF);
			size_t k = conv_push(c, "typed_config");
			if (p.m)
				ipd_xff(c, p, &v[i]);
			conv_pop(c, k);
		} else {
			conv_err(c, "typed_config",
				 "Original IP detection extension not found: '%.*s' (Arion has "
				 "CustomHeaderConfig and XffConfig)",
				 (int)name.size, name.data);
		}
		out->ip_detect_reject |= v[i].reject_status != 0;
		conv_pop(c, m);
	}
	out->ip_detect = v;
	out->n_ip_detect = n;
	/* the refusal is answered with the head's other policies */
	out->head_policies |= out->ip_detect_reject;
}

void conv_hcm_client(struct conv *c, struct pb h, struct arn_cfg_hcm *out)
{
	fcc(c, h, out);
	internal_addresses(c, h, out);
	ip_detection(c, h, out);
}
