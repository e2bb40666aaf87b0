/*
 * STRICT_DNS and LOGICAL_DNS clusters: their Envoy settings, and the
 * load_assignment kept as a template whose hostnames the control lcore's
 * resolver (dns.c) replaces with addresses to make the cluster's
 * ClusterLoadAssignment.
 */
#include <string.h>

#include "arn_proto.h"
#include "config_int.h"

/* Envoy's Cluster.DnsLookupFamily */
enum { DNS_AUTO = 0, DNS_V4_ONLY, DNS_V6_ONLY, DNS_V4_PREFERRED, DNS_ALL };

static void failure_rate(struct conv *c, struct pb fr, struct arn_cfg_dns *d)
{
	size_t m = conv_push(c, "dns_failure_refresh_rate");
	conv_only(c, fr, "base_interval,max_interval");
	if (!pb_has(fr, "base_interval"))
		conv_err(c, "base_interval", "missing (Envoy requires it)");
	conv_duration(c, fr, "base_interval", &d->fail_base_ms, true);
	d->fail_max_ms = d->fail_base_ms > UINT32_MAX / 10 ? UINT32_MAX : 10 * d->fail_base_ms;
	if (pb_has(fr, "max_interval")) {
		conv_duration(c, fr, "max_interval", &d->fail_max_ms, true);
		if (d->fail_max_ms < d->fail_base_ms)
			conv_err(c, "max_interval", "less than base_interval");
	}
	conv_pop(c, m);
}

/* Each lb_endpoint's hostname, and LOGICAL_DNS's single endpoint. */
static void hosts(struct conv *c, struct pb la, struct arn_cfg_cluster *out, struct arn_cfg_dns *d)
{
	size_t nl = pb_len(la, "endpoints"), n = 0;
	for (size_t i = 0; i < nl; i++)
		n += pb_len(pb_at(la, "endpoints", i), "lb_endpoints");
	if (out->type == ARN_CFG_CLUSTER_LOGICAL_DNS && (nl != 1 || n != 1)) {
		/* Envoy: "LOGICAL_DNS clusters must have a single
		 * locality_lb_endpoint and a single lb_endpoint" */
		conv_err(c, "",
			 "LOGICAL_DNS clusters must have a single locality_lb_endpoint and a "
			 "single lb_endpoint");
		return;
	}
	if (n > ARN_CFG_DNS_MAX_HOSTS) {
		conv_err(c, "", "%zu lb_endpoints: a DNS cluster resolves at most %d hostnames", n,
			 ARN_CFG_DNS_MAX_HOSTS);
		return;
	}
	d->hosts = CONV_NEW(c, const char *, n ? n : 1);
	if (!d->hosts)
		return;
	for (size_t i = 0; i < nl; i++) {
		struct pb lle = pb_at(la, "endpoints", i);
		for (size_t j = 0; j < pb_len(lle, "lb_endpoints"); j++) {
			struct pb en = pb_msg(pb_at(lle, "lb_endpoints", j), "endpoint");
			struct pb sa = pb_msg(pb_msg(en, "address"), "socket_address");
			d->hosts[d->n_hosts++] = conv_str(c, pb_str(sa, "address"));
		}
	}
}

void conv_cluster_dns(struct conv *c, struct pb cl, struct arn_cfg_cluster *out)
{
	static const char *const resolver_fields[] = {"dns_resolvers", "use_tcp_for_dns_lookups",
						      "typed_dns_resolver_config",
						      "dns_resolution_config"};
	for (size_t i = 0; i < sizeof(resolver_fields) / sizeof(resolver_fields[0]); i++)
		if (pb_has(cl, resolver_fields[i]))
			conv_err(
			    c, resolver_fields[i],
			    "not supported by Arion: it resolves with the system's configuration "
			    "(c-ares reading /etc/hosts and /etc/resolv.conf) off the workers");
	if (out->type != ARN_CFG_CLUSTER_STRICT_DNS && out->type != ARN_CFG_CLUSTER_LOGICAL_DNS)
		return; /* Envoy ignores the other DNS settings of such clusters */
	struct arn_cfg_dns *d = CONV_NEW(c, struct arn_cfg_dns, 1);
	if (!d)
		return;
	d->refresh_ms = 5000;
	conv_duration(c, cl, "dns_refresh_rate", &d->refresh_ms, true);
	if (d->refresh_ms == 0)
		conv_err(c, "dns_refresh_rate", "must be greater than 0");
	d->fail_base_ms = d->refresh_ms;
	d->fail_max_ms = d->refresh_ms > UINT32_MAX / 10 ? UINT32_MAX : 10 * d->refresh_ms;
	struct pb fr = pb_msg(cl, "dns_failure_refresh_rate");
	if (fr.m)
		failure_rate(c, fr, d);
	d->respect_ttl = pb_bool(cl, "respect_dns_ttl");
	int32_t fam = pb_i32(cl, "dns_lookup_family");
	if (fam == DNS_V6_ONLY)
		conv_err(c, "dns_lookup_family",
			 "V6_ONLY: Arion's data plane is IPv4 only (AUTO, V4_ONLY, V4_PREFERRED "
			 "and ALL give a name's IPv4 addresses)");
	else if (fam < DNS_AUTO || fam > DNS_ALL)
		conv_err(c, "dns_lookup_family", "unknown value %d", fam);
	d->family = (uint8_t)fam;
	d->wait_for_warm = true;
	pb_wrapped_bool(cl, "wait_for_warm_on_init", &d->wait_for_warm);
	struct pb la = pb_msg(cl, "load_assignment");
	if (la.m) {
		size_t m = conv_push(c, "load_assignment");
		/* (checked as an EDS update is, but with hostnames, by the
		 * caller: conv_cluster.c) */
		if (!c->nerr)
			hosts(c, la, out, d);
		size_t len = 0;
		char *bytes = arn_proto_encode(la.m, la.d, c->arena, &len);
		char *keep = bytes ? CONV_NEW(c, char, len ? len : 1) : NULL;
		if (!keep)
			conv_err(c, "", "out of memory");
		else
			memcpy(keep, bytes, len);
		d->la = keep;
		d->la_len = len;
		conv_pop(c, m);
	} else if (out->type == ARN_CFG_CLUSTER_LOGICAL_DNS) {
		conv_err(c, "load_assignment",
			 "missing: LOGICAL_DNS clusters must have a single "
			 "locality_lb_endpoint and a single lb_endpoint");
	}
	/* wait_for_warm_on_init: warm, as an EDS cluster, until the resolver's
	 * first answer (or failure) publishes the endpoints; no timeout, as in
	 * Envoy. The dependency is local: nothing is asked of xDS. */
	size_t len = out->obj.name_len;
	if (d->wait_for_warm && len && conv_dep(c, ARN_CFG_CLA, out->obj.name, len, true, 0) == 0 &&
	    c->ndeps)
		c->deps[c->ndeps - 1].local = true;
	out->dns = d;
}
