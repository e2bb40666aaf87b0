/*
 * A transport socket's DownstreamTlsContext (listeners) or
 * UpstreamTlsContext (clusters) -> struct arn_cfg_tls: secrets by name
 * (X13) as warming dependencies, subject alt name matchers, TLS versions,
 * ciphers and curves checked against OpenSSL now rather than at handshake.
 */
#include <string.h>
#include <openssl/ssl.h>

#include "arn_proto.h"
#include "config_int.h"

static void join_list(struct conv *c, struct pb p, const char *f, const char **out)
{
	size_t len = pb_len(p, f);
	if (!len)
		return;
	struct arn_sb sb = ARN_SB_INIT;
	for (size_t i = 0; i < len; i++) {
		upb_StringView s = pb_str_at(p, f, i);
		if (i)
			arn_sb_putc(&sb, ':');
		arn_sb_append(&sb, s.data, s.size);
	}
	upb_StringView v = {arn_sb_cstr(&sb), sb.len};
	*out = conv_str(c, v);
	arn_sb_free(&sb);
}

static uint16_t tls_version(struct conv *c, struct pb tp, const char *f, bool max)
{
	switch (pb_i32(tp, f)) {
	case 0:
		return max ? TLS1_3_VERSION : TLS1_2_VERSION; /* TLS_AUTO: Envoy's defaults */
	case 1:
		return TLS1_VERSION;
	case 2:
		return TLS1_1_VERSION;
	case 3:
		return TLS1_2_VERSION;
	case 4:
		return TLS1_3_VERSION;
	default:
		conv_err(c, f, "unknown TLS version");
		return 0;
	}
}

static void secret_ref(struct conv *c, struct pb sds, struct arn_cfg_ref *r)
{
	/* X13 (name only, ADS source) was checked by arn_rules_*; here the
	 * name becomes a reference and a warming dependency. */
	upb_StringView name = pb_str(sds, "name");
	conv_refs(c, r, name);
	struct pb cs = pb_msg(sds, "sds_config");
	uint32_t timeout = conv_fetch_timeout(c, cs);
	if (name.size)
		conv_dep(c, ARN_CFG_SECRET, name.data, name.size, true, timeout);
}

static void san_matchers(struct conv *c, struct pb vc, struct arn_cfg_tls *t)
{
	size_t n = pb_len(vc, "match_subject_alt_names");
	size_t nt = pb_len(vc, "match_typed_subject_alt_names");
	if (!n && !nt)
		return;
	t->san_matchers = CONV_NEW(c, struct arn_cfg_str_match, n + nt);
	if (!t->san_matchers)
		return;
	for (size_t i = 0; i < n; i++) {
		size_t m = conv_push(c, "match_subject_alt_names[%zu]", i);
		conv_string_matcher(c, pb_at(vc, "match_subject_alt_names", i),
				    &t->san_matchers[t->n_san_matchers++]);
		conv_pop(c, m);
	}
	for (size_t i = 0; i < nt; i++) {
		struct pb sm = pb_at(vc, "match_typed_subject_alt_names", i);
		size_t m = conv_push(c, "match_typed_subject_alt_names[%zu]", i);
		conv_only(c, sm, "san_type,matcher");
		struct arn_cfg_str_match *o = &t->san_matchers[t->n_san_matchers++];
		conv_san_type(c, sm, o);
		size_t m2 = conv_push(c, "matcher");
		conv_string_matcher(c, pb_msg(sm, "matcher"), o);
		conv_pop(c, m2);
		conv_pop(c, m);
	}
}

struct arn_cfg_tls *conv_tls(struct conv *c, struct pb ts, bool downstream)
{
	/* ts is a TransportSocket */
	size_t m0 = conv_push(c, "transport_socket");
	conv_only(c, ts, "name,typed_config");
	struct pb any = pb_msg(ts, "typed_config");
	if (!any.m) {
		conv_err(c, "typed_config", "missing: give a %s",
			 downstream ? ARN_TYPE_DOWNSTREAM_TLS : ARN_TYPE_UPSTREAM_TLS);
		conv_pop(c, m0);
		return NULL;
	}
	upb_StringView tn = arn_proto_any_type_name(any.m);
	const char *want = downstream ? ARN_TYPE_DOWNSTREAM_TLS : ARN_TYPE_UPSTREAM_TLS;
	size_t m1 = conv_push(c, "typed_config");
	if (arn_sv_eq(tn, ARN_TYPE_RAW_BUFFER)) {
		conv_pop(c, m0);
		return NULL; /* plain text, said explicitly */
	}
	if (!arn_sv_eq(tn, want)) {
		conv_err(c, "", "transport socket type '%.*s' is not supported (only %s)",
			 (int)tn.size, tn.data, want);
		conv_pop(c, m0);
		return NULL;
	}
	struct pb ctx = conv_any(c, any, want);
	struct arn_cfg_tls *t = CONV_NEW(c, struct arn_cfg_tls, 1);
	if (!ctx.m || !t) {
		conv_pop(c, m0);
		return NULL;
	}
	if (downstream) {
		conv_only(c, ctx,
			  "common_tls_context,require_client_certificate,require_sni,"
			  "session_timeout,session_ticket_keys,session_ticket_keys_sds_secret_"
			  "config,disable_stateless_session_resumption,ocsp_staple_policy");
		bool rcc = false, sni = false;
		pb_wrapped_bool(ctx, "require_client_certificate", &rcc);
		t->require_client_certificate = rcc;
		pb_wrapped_bool(ctx, "require_sni", &sni);
		t->require_sni = sni;
		conv_duration(c, ctx, "session_timeout", &t->session_timeout_ms, false);
		/* One of three (a oneof in Envoy's API): keys inline, keys by
		 * name, or no tickets at all. Inline keys are key material in
		 * a listener, which X13 keeps in Secrets, as it does
		 * certificates. */
		if (pb_has(ctx, "session_ticket_keys"))
			conv_err(c, "session_ticket_keys",
				 "inline session ticket keys are refused: put them in a Secret "
				 "(session_ticket_keys) and name it in "
				 "session_ticket_keys_sds_secret_config (X13)");
		struct pb tks = pb_msg(ctx, "session_ticket_keys_sds_secret_config");
		if (tks.m)
			secret_ref(c, tks, &t->ticket_keys_secret);
		t->disable_stateless_session_resumption =
		    pb_bool(ctx, "disable_stateless_session_resumption");
		int32_t pol = pb_i32(ctx, "ocsp_staple_policy");
		if (pol < ARN_CFG_OCSP_LENIENT || pol > ARN_CFG_OCSP_MUST_STAPLE)
			conv_err(c, "ocsp_staple_policy",
				 "%d is not a policy (LENIENT_STAPLING, STRICT_STAPLING, "
				 "MUST_STAPLE)",
				 pol);
		else
			t->ocsp_staple_policy = (uint8_t)pol;
	} else {
		conv_only(c, ctx, "common_tls_context,sni,allow_renegotiation");
		if (pb_has(ctx, "sni")) {
			/* a host name for the ClientHello: lib/tls hands it to
			 * OpenSSL as a C string, so a NUL would cut it short
			 * silently, and no host name has a control or a space */
			upb_StringView sn = pb_str(ctx, "sni");
			for (size_t i = 0; i < sn.size; i++)
				if ((unsigned char)sn.data[i] <= ' ' || sn.data[i] == 127) {
					conv_err(c, "sni",
						 "byte %zu is a control or a space (0x%02x): not a "
						 "host name",
						 i, (unsigned char)sn.data[i]);
					break;
				}
			t->sni = conv_str(c, sn);
		}
		if (pb_bool(ctx, "allow_renegotiation"))
			conv_err(c, "allow_renegotiation", "renegotiation is not supported");
	}
	struct pb ctc = pb_msg(ctx, "common_tls_context");
	size_t m2 = conv_push(c, "common_tls_context");
	conv_only(c, ctc,
		  "tls_params,tls_certificates,tls_certificate_sds_secret_configs,validation_"
		  "context,validation_context_sds_secret_config,combined_validation_context,alpn_"
		  "protocols");
	if (pb_has(ctc, "tls_certificates"))
		conv_err(c, "tls_certificates",
			 "inline certificates are refused: reference a Secret by name in "
			 "tls_certificate_sds_secret_configs (X13)");
	size_t nc = pb_len(ctc, "tls_certificate_sds_secret_configs");
	if (nc) {
		t->cert_secrets = CONV_NEW(c, struct arn_cfg_ref, nc);
		if (t->cert_secrets) {
			t->n_cert_secrets = nc;
			for (size_t i = 0; i < nc; i++)
				secret_ref(c, pb_at(ctc, "tls_certificate_sds_secret_configs", i),
					   &t->cert_secrets[i]);
		}
	} else if (downstream) {
		conv_err(c, "tls_certificate_sds_secret_configs",
			 "missing: a server TLS context needs a certificate (a Secret by name)");
	}
	struct pb vc = pb_msg(ctc, "validation_context");
	if (vc.m) {
		size_t m = conv_push(c, "validation_context");
		conv_only(c, vc, "match_subject_alt_names,match_typed_subject_alt_names");
		san_matchers(c, vc, t);
		/* This context has no trusted CA: inline it is refused (X13),
		 * and validation_context_sds_secret_config is the other member
		 * of its oneof, not beside it. Without a CA no chain is
		 * verified, so SAN matchers alone would accept any certificate
		 * that names the host, self-signed ones too: Envoy refuses this
		 * ("SAN-based verification of peer certificates without trusted
		 * CA is insecure and not allowed"). */
		if (t->n_san_matchers)
			conv_err(c,
				 pb_len(vc, "match_subject_alt_names")
				     ? "match_subject_alt_names"
				     : "match_typed_subject_alt_names",
				 "without a trusted CA no certificate is verified, so SAN "
				 "matchers would accept any certificate that names the host "
				 "(Envoy refuses this too): put them in a "
				 "combined_validation_context's default_validation_context, "
				 "beside a validation_context_sds_secret_config naming a "
				 "Secret with trusted_ca");
		conv_pop(c, m);
	}
	struct pb vsds = pb_msg(ctc, "validation_context_sds_secret_config");
	if (vsds.m)
		secret_ref(c, vsds, &t->validation_secret);
	struct pb cvc = pb_msg(ctc, "combined_validation_context");
	if (cvc.m) {
		size_t m = conv_push(c, "combined_validation_context");
		conv_only(c, cvc,
			  "default_validation_context,validation_context_sds_secret_config");
		struct pb dvc = pb_msg(cvc, "default_validation_context");
		if (dvc.m) {
			size_t m3 = conv_push(c, "default_validation_context");
			conv_only(c, dvc, "match_subject_alt_names,match_typed_subject_alt_names");
			san_matchers(c, dvc, t);
			conv_pop(c, m3);
		}
		struct pb s = pb_msg(cvc, "validation_context_sds_secret_config");
		if (s.m)
			secret_ref(c, s, &t->validation_secret);
		else
			conv_err(c, "validation_context_sds_secret_config", "missing");
		conv_pop(c, m);
	}
	if (t->require_client_certificate && !t->validation_secret.len)
		conv_err(c, "",
			 "require_client_certificate needs a validation context (trusted CA)");
	conv_str_list(c, ctc, "alpn_protocols", &t->alpn, &t->n_alpn, false);
	/* h2 in a downstream context is checked against the chain's HCM
	 * (conv_listener.c: only a codec that serves HTTP/2 may offer it) */
	struct pb tp = pb_msg(ctc, "tls_params");
	t->min_version = TLS1_2_VERSION;
	t->max_version = TLS1_3_VERSION;
	if (tp.m) {
		size_t m = conv_push(c, "tls_params");
		conv_only(c, tp,
			  "tls_minimum_protocol_version,tls_maximum_protocol_version,cipher_"
			  "suites,ecdh_curves");
		t->min_version = tls_version(c, tp, "tls_minimum_protocol_version", false);
		t->max_version = tls_version(c, tp, "tls_maximum_protocol_version", true);
		if (t->min_version > t->max_version)
			conv_err(c, "", "tls_minimum_protocol_version is above the maximum");
		join_list(c, tp, "cipher_suites", &t->cipher_suites);
		join_list(c, tp, "ecdh_curves", &t->ecdh_curves);
		if (t->cipher_suites) {
			/* check the list now: a bad one would only fail at handshake time */
			SSL_CTX *sc = SSL_CTX_new(TLS_method());
			if (sc && !SSL_CTX_set_cipher_list(sc, t->cipher_suites))
				conv_err(c, "cipher_suites",
					 "no cipher in '%s' is known to OpenSSL", t->cipher_suites);
			SSL_CTX_free(sc);
		}
		conv_pop(c, m);
	}
	conv_pop(c, m2);
	(void)m1;
	conv_pop(c, m0);
	return t;
}
