/*
 * lib/config's model -> struct arn_tls_ctx_conf.
 *
 * The model (arn_config_model.h) carries a DownstreamTlsContext /
 * UpstreamTlsContext as struct arn_cfg_tls with its Secrets by name, and
 * the Secrets as OpenSSL objects already checked (a key that does not
 * match its certificate was refused by name when the Secret was
 * converted). This only maps fields; the caller resolves the names in the
 * generation it builds from (arn_cfg_secret_find) so that a context is
 * always made of one generation's Secrets.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "arn_config_model.h"
#include "tls_int.h"

_Static_assert(ARN_CFG_TICKET_KEY_LEN == ARN_TLS_TICKET_KEY_LEN, "one ticket key format");
_Static_assert((int)ARN_CFG_OCSP_LENIENT == (int)ARN_TLS_OCSP_LENIENT &&
		   (int)ARN_CFG_OCSP_STRICT == (int)ARN_TLS_OCSP_STRICT &&
		   (int)ARN_CFG_OCSP_MUST_STAPLE == (int)ARN_TLS_OCSP_MUST_STAPLE,
	       "one OCSP policy numbering (Envoy's)");

static const char *kind_name(uint8_t k)
{
	switch (k) {
	case ARN_CFG_SECRET_TLS_CERT:
		return "tls_certificate";
	case ARN_CFG_SECRET_VALIDATION:
		return "validation_context";
	case ARN_CFG_SECRET_TICKET_KEYS:
		return "session_ticket_keys";
	case ARN_CFG_SECRET_GENERIC:
		return "generic_secret";
	default:
		return "secret of another kind";
	}
}

int arn_tls_ctx_conf_from_cfg(struct arn_tls_ctx_conf *out, const struct arn_cfg_tls *t,
			      bool server, const void *owner,
			      const struct arn_cfg_secret *const *certs, size_t n_certs,
			      struct arn_tls_cert *certs_out,
			      const struct arn_cfg_secret *validation,
			      const struct arn_cfg_secret *ticket_keys, const void **pins_out,
			      char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	out->server = server;
	for (size_t i = 0; i < n_certs; i++) {
		const struct arn_cfg_secret *s = certs[i];
		const char *want = i < t->n_cert_secrets ? t->cert_secrets[i].name : "?";
		if (!s) {
			snprintf(err, errlen,
				 "tls_certificate_sds_secret_configs[%zu]: Secret '%s' "
				 "is not known",
				 i, want);
			return -EINVAL;
		}
		if (s->kind != ARN_CFG_SECRET_TLS_CERT) {
			snprintf(err, errlen,
				 "tls_certificate_sds_secret_configs[%zu]: Secret '%s' is a "
				 "%s, not a tls_certificate",
				 i, s->obj.name, kind_name(s->kind));
			return -EINVAL;
		}
		certs_out[i] = (struct arn_tls_cert){.cert = s->cert,
						     .chain = s->chain,
						     .key = s->key,
						     .ocsp_staple = s->ocsp_staple,
						     .ocsp_staple_len = s->ocsp_staple_len,
						     .name = s->obj.name};
	}
	out->certs = certs_out;
	out->n_certs = n_certs;
	size_t np = 0;
	if (owner && t->n_san_matchers)
		pins_out[np++] = owner;
	if (validation) {
		if (validation->kind != ARN_CFG_SECRET_VALIDATION) {
			snprintf(err, errlen,
				 "validation_context_sds_secret_config: Secret '%s' is a "
				 "%s, not a validation_context",
				 validation->obj.name, kind_name(validation->kind));
			return -EINVAL;
		}
		out->trusted_ca = validation->ca;
		out->crls = validation->crls;
		out->has_max_verify_depth = validation->has_max_verify_depth;
		out->max_verify_depth = validation->max_verify_depth;
		out->more_san_matchers = validation->san_matchers;
		out->n_more_san_matchers = validation->n_san_matchers;
		if (validation->n_san_matchers)
			pins_out[np++] = validation;
	}
	if (server && t->ticket_keys_secret.len) {
		if (!ticket_keys) {
			snprintf(err, errlen,
				 "session_ticket_keys_sds_secret_config: Secret '%s' is not known",
				 t->ticket_keys_secret.name);
			return -EINVAL;
		}
		if (ticket_keys->kind != ARN_CFG_SECRET_TICKET_KEYS) {
			snprintf(err, errlen,
				 "session_ticket_keys_sds_secret_config: Secret '%s' is a %s, not "
				 "session_ticket_keys",
				 ticket_keys->obj.name, kind_name(ticket_keys->kind));
			return -EINVAL;
		}
		out->ticket_keys = ticket_keys->ticket_keys;
		out->n_ticket_keys = ticket_keys->n_ticket_keys;
	}
	out->disable_stateless_resumption = server && t->disable_stateless_session_resumption;
	out->ocsp_policy = server ? t->ocsp_staple_policy : ARN_TLS_OCSP_LENIENT;
	out->pins = pins_out;
	out->n_pins = np;
	out->san_matchers = t->san_matchers;
	out->n_san_matchers = t->n_san_matchers;
	out->require_client_certificate = t->require_client_certificate;
	out->require_sni = server && t->require_sni;
	out->session_timeout_s = t->session_timeout_ms / 1000;
	out->alpn = (const char *const *)t->alpn;
	out->n_alpn = t->n_alpn;
	out->min_version = t->min_version;
	out->max_version = t->max_version;
	out->cipher_suites = t->cipher_suites;
	out->ecdh_curves = t->ecdh_curves;
	out->sni = server ? NULL : t->sni;
	return 0;
}

int arn_tls_cfg_check(const struct arn_cfg_tls *t, bool server, const void *owner,
		      const struct arn_cfg_secret *const *certs, size_t n_certs,
		      const struct arn_cfg_secret *validation,
		      const struct arn_cfg_secret *ticket_keys, char *err, size_t errlen)
{
	enum { MAXC = 8 };
	struct arn_tls_cert out[MAXC];
	const void *pins[2];
	struct arn_tls_ctx_conf cf;
	if (n_certs > MAXC) {
		snprintf(err, errlen, "more than %d certificates", MAXC);
		return -EINVAL;
	}
	int rc = arn_tls_ctx_conf_from_cfg(&cf, t, server, owner, certs, n_certs, out, validation,
					   ticket_keys, pins, err, errlen);
	if (rc < 0)
		return rc;
	cf.name = server ? "DownstreamTlsContext" : "UpstreamTlsContext";
	cf.replicas = 1; /* what could fail fails in the first replica */
	cf.quiet = true; /* the store reports it, naming the resource */
	struct arn_tls_ctx *ctx = arn_tls_ctx_new(&cf, err, errlen);
	if (!ctx)
		return -EINVAL;
	arn_tls_ctx_unref(ctx);
	arn_tls_reclaim(); /* the caller is the control lcore: free it now */
	return 0;
}
