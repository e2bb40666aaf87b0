/*
 * The control lcore's part of the L4 and access-control filters: the
 * statistics scopes a connection manager's runtime object holds for its
 * HTTP filters (rbac, local_ratelimit) and for the network filters before
 * it. Apart from http_l4.c (the workers' part) so that the runtime objects
 * (http_rt.c) depend on nothing that answers requests.
 */
#include <stdio.h>
#include <string.h>

#include "arn_config.h"
#include "http_int.h"
#include "http_l4.h"
#include "http_lua.h"

void http_l4_hrt_init(struct http_hcm_rt *r, const struct arn_cfg_listener *l)
{
	const struct arn_cfg_hcm *h = r->hcm;
	char fam[256];
	/* the network filters of the chain this connection manager ends:
	 * local_rate_limit.<prefix>.* and connection_limit.<prefix>.* */
	for (size_t c = 0; l && c <= l->n_chains; c++) {
		const struct arn_cfg_filter_chain *fc =
		    c < l->n_chains ? &l->chains[c] : l->default_chain;
		if (!fc || (h ? fc->hcm != h : fc->tcp_proxy != r->tp))
			continue;
		for (size_t i = 0; i < fc->n_l4_filters && i < HTTP_MAX_FILTER_STATS; i++) {
			const struct arn_cfg_l4_filter *f = &fc->l4_filters[i];
			if (f->kind == ARN_CFG_L4_LOCAL_RATELIMIT && f->ratelimit)
				r->l4stats[i] = arn_stats_scope_get(
				    &arn_stats_local_ratelimit_schema,
				    ARN_STATS_TAG_LOCAL_RATELIMIT, f->ratelimit->stat_prefix);
			else if (f->kind == ARN_CFG_L4_RBAC && f->rbac) {
				snprintf(fam, sizeof(fam), "%s.rbac",
					 f->rbac->stat_prefix ? f->rbac->stat_prefix : "");
				r->l4stats[i] = arn_stats_scope_get_named(&arn_stats_rbac_schema,
									  fam, NULL, NULL);
				if (f->rbac->shadow_stat_prefix && f->rbac->shadow_stat_prefix[0]) {
					size_t k = strlen(fam);
					snprintf(fam + k, sizeof(fam) - k, ".%s",
						 f->rbac->shadow_stat_prefix);
					r->l4shadow[i] = arn_stats_scope_get_named(
					    &arn_stats_rbac_shadow_schema, fam, NULL, NULL);
				}
			} else if (f->kind == ARN_CFG_L4_CONNECTION_LIMIT && f->connection_limit)
				r->l4stats[i] =
				    arn_stats_scope_get(&arn_stats_connection_limit_schema,
							ARN_STATS_TAG_CONNECTION_LIMIT,
							f->connection_limit->stat_prefix);
		}
	}
	for (size_t i = 0; h && i < h->n_http_filters && i < HTTP_MAX_FILTER_STATS; i++) {
		const void *cfg = h->http_filter_cfgs ? h->http_filter_cfgs[i] : NULL;
		if (!cfg)
			continue;
		if (h->http_filters[i] == ARN_CFG_HF_RBAC) {
			/* Envoy: http.<HCM stat_prefix>.rbac.* and, with
			 * shadow_rules_stat_prefix, the shadow counters under
			 * http.<prefix>.rbac.<shadow prefix>.* */
			const struct arn_cfg_rbac_filter *f = cfg;
			snprintf(fam, sizeof(fam), "http.%s.rbac",
				 h->stat_prefix ? h->stat_prefix : "");
			r->fstats[i] =
			    arn_stats_scope_get_named(&arn_stats_rbac_schema, fam, NULL, NULL);
			if (f->shadow_stat_prefix && f->shadow_stat_prefix[0]) {
				size_t k = strlen(fam);
				snprintf(fam + k, sizeof(fam) - k, ".%s", f->shadow_stat_prefix);
				r->fshadow[i] = arn_stats_scope_get_named(
				    &arn_stats_rbac_shadow_schema, fam, NULL, NULL);
			}
		} else if (h->http_filters[i] == ARN_CFG_HF_EXT_AUTHZ) {
			/* Envoy: http.<HCM stat_prefix>.ext_authz[.<its stat_prefix>].* */
			const struct arn_cfg_ext_authz *f = cfg;
			snprintf(fam, sizeof(fam), "http.%s.ext_authz%s%s",
				 h->stat_prefix ? h->stat_prefix : "",
				 f && f->stat_prefix ? "." : "",
				 f && f->stat_prefix ? f->stat_prefix : "");
			r->fstats[i] =
			    arn_stats_scope_get_named(&arn_stats_ext_authz_schema, fam, NULL, NULL);
		} else if (h->http_filters[i] == ARN_CFG_HF_CORS) {
			/* Envoy: http.<HCM stat_prefix>.cors.* */
			snprintf(fam, sizeof(fam), "http.%s.cors",
				 h->stat_prefix ? h->stat_prefix : "");
			r->fstats[i] =
			    arn_stats_scope_get_named(&arn_stats_cors_schema, fam, NULL, NULL);
		} else if (h->http_filters[i] == ARN_CFG_HF_FAULT) {
			/* Envoy: http.<HCM stat_prefix>.fault.* */
			snprintf(fam, sizeof(fam), "http.%s.fault",
				 h->stat_prefix ? h->stat_prefix : "");
			r->fstats[i] =
			    arn_stats_scope_get_named(&arn_stats_fault_schema, fam, NULL, NULL);
		} else if (h->http_filters[i] == ARN_CFG_HF_OAUTH2) {
			/* Envoy: http.<HCM stat_prefix>.oauth_*; Arion's scope
			 * names are one set of stats each, so under .oauth2 */
			snprintf(fam, sizeof(fam), "http.%s.oauth2",
				 h->stat_prefix ? h->stat_prefix : "");
			r->fstats[i] =
			    arn_stats_scope_get_named(&arn_stats_oauth2_schema, fam, NULL, NULL);
		} else if (h->http_filters[i] == ARN_CFG_HF_BASIC_AUTH) {
			/* Envoy: http.<HCM stat_prefix>.basic_auth.* */
			snprintf(fam, sizeof(fam), "http.%s.basic_auth",
				 h->stat_prefix ? h->stat_prefix : "");
			r->fstats[i] = arn_stats_scope_get_named(&arn_stats_basic_auth_schema, fam,
								 NULL, NULL);
		} else if (h->http_filters[i] == ARN_CFG_HF_CSRF) {
			/* Envoy: http.<HCM stat_prefix>.csrf.* */
			snprintf(fam, sizeof(fam), "http.%s.csrf",
				 h->stat_prefix ? h->stat_prefix : "");
			r->fstats[i] =
			    arn_stats_scope_get_named(&arn_stats_csrf_schema, fam, NULL, NULL);
		} else if (h->http_filters[i] == ARN_CFG_HF_JWT_AUTHN) {
			/* Envoy: http.<HCM stat_prefix>.jwt_authn.* */
			snprintf(fam, sizeof(fam), "http.%s.jwt_authn",
				 h->stat_prefix ? h->stat_prefix : "");
			r->fstats[i] =
			    arn_stats_scope_get_named(&arn_stats_jwt_authn_schema, fam, NULL, NULL);
		} else if (h->http_filters[i] == ARN_CFG_HF_LOCAL_RATELIMIT) {
			const struct arn_cfg_http_ratelimit *f = cfg;
			snprintf(fam, sizeof(fam), "%s.http_local_rate_limit",
				 f->stat_prefix ? f->stat_prefix : "");
			r->fstats[i] = arn_stats_scope_get_named(
			    &arn_stats_http_local_ratelimit_schema, fam, NULL, NULL);
		} else if (h->http_filters[i] == ARN_CFG_HF_API_KEY_AUTH ||
			   h->http_filters[i] == ARN_CFG_HF_CRED_INJECTOR) {
			/* Envoy: http.<HCM stat_prefix>.api_key_auth.* and
			 * .credential_injector.* */
			bool ak = h->http_filters[i] == ARN_CFG_HF_API_KEY_AUTH;
			snprintf(fam, sizeof(fam), "http.%s.%s",
				 h->stat_prefix ? h->stat_prefix : "",
				 ak ? "api_key_auth" : "credential_injector");
			r->fstats[i] = arn_stats_scope_get_named(
			    ak ? &arn_stats_api_key_auth_schema : &arn_stats_cred_injector_schema,
			    fam, NULL, NULL);
		} else if (h->http_filters[i] == ARN_CFG_HF_EXT_PROC) {
			/* Envoy: http.<HCM stat_prefix>.ext_proc[.<its stat_prefix>].* */
			const struct arn_cfg_ext_proc *f = cfg;
			snprintf(fam, sizeof(fam), "http.%s.ext_proc%s%s",
				 h->stat_prefix ? h->stat_prefix : "", f->stat_prefix ? "." : "",
				 f->stat_prefix ? f->stat_prefix : "");
			r->fstats[i] =
			    arn_stats_scope_get_named(&arn_stats_ext_proc_schema, fam, NULL, NULL);
		} else if (h->http_filters[i] == ARN_CFG_HF_LUA) {
			/* Envoy: http.<HCM stat_prefix>.lua[.<its stat_prefix>].* */
			const struct arn_cfg_lua *f = cfg;
			snprintf(fam, sizeof(fam), "http.%s.lua%s%s",
				 h->stat_prefix ? h->stat_prefix : "", f->stat_prefix ? "." : "",
				 f->stat_prefix ? f->stat_prefix : "");
			r->fstats[i] =
			    arn_stats_scope_get_named(&arn_stats_lua_schema, fam, NULL, NULL);
			http_lua_hrt_init(r, i, f);
		}
	}
}

void http_l4_hrt_fini(struct http_hcm_rt *r)
{
	http_lua_hrt_fini(r);
	for (unsigned i = 0; i < HTTP_MAX_FILTER_STATS; i++) {
		arn_stats_scope_put(r->fstats[i]);
		arn_stats_scope_put(r->fshadow[i]);
		arn_stats_scope_put(r->l4stats[i]);
		arn_stats_scope_put(r->l4shadow[i]);
	}
}
