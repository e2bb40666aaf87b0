/*
 * envoy.filters.http.fault's decision (http_fault.h), as Envoy's
 * FaultFilter and its fault_config.cc make it.
 */
#include <string.h>

#include "arn_config.h"
#include "arn_h1.h"
#include "http_fault.h"

/* Header @p name of @p m as an unsigned decimal (at most 19 digits):
 * false when absent or not a number (Envoy's absl::SimpleAtoi). */
static bool hdr_u64(const struct arn_h1_msg *m, const char *name, size_t nlen, uint64_t *out)
{
	int i = arn_h1_find(m, name, nlen, 0);
	if (i < 0)
		return false;
	const char *v = m->hdrs[i].value;
	size_t n = m->hdrs[i].value_len;
	if (n == 0 || n > 19)
		return false;
	uint64_t x = 0;
	for (size_t k = 0; k < n; k++) {
		if (v[k] < '0' || v[k] > '9')
			return false;
		x = x * 10 + (uint64_t)(v[k] - '0');
	}
	*out = x;
	return true;
}

/* Envoy's HeaderPercentageProvider: the header's numerator, never above
 * the configured one, over the configured denominator; the configured
 * percentage when the header is absent or not a number. */
static struct arn_cfg_fraction pct_of(const struct arn_cfg_fraction *cfg, bool from_header,
				      const struct arn_h1_msg *m, const char *name, size_t nlen)
{
	struct arn_cfg_fraction p = *cfg;
	uint64_t v;
	if (from_header && hdr_u64(m, name, nlen, &v) && v < p.numerator)
		p.numerator = (uint32_t)v;
	return p;
}

bool http_fault_plan(const struct arn_cfg_fault *f, const struct arn_h1_msg *m,
		     const struct arn_cfg_request *req, const char *cluster, size_t clen,
		     uint64_t r_delay, uint64_t r_abort, struct http_fault_plan *out)
{
	*out = (struct http_fault_plan){0, 0, -1};
	/* matchesTargetUpstreamCluster */
	if (f->upstream_cluster && (!cluster || clen != f->upstream_cluster_len ||
				    memcmp(cluster, f->upstream_cluster, clen) != 0))
		return false;
	/* matchesDownstreamNodes */
	if (f->n_downstream_nodes) {
		int i = arn_h1_find(m, "x-envoy-downstream-service-node", 31, 0);
		if (i < 0)
			return false;
		bool in = false;
		for (size_t k = 0; k < f->n_downstream_nodes && !in; k++)
			in = strlen(f->downstream_nodes[k]) == m->hdrs[i].value_len &&
			     memcmp(f->downstream_nodes[k], m->hdrs[i].value,
				    m->hdrs[i].value_len) == 0;
		if (!in)
			return false;
	}
	if (f->n_headers && !arn_cfg_headers_match(f->headers, f->n_headers, req))
		return false;
	if (f->delay) {
		struct arn_cfg_fraction p = pct_of(&f->delay_pct, f->delay_header, m,
						   "x-envoy-fault-delay-request-percentage", 38);
		uint64_t ms = f->delay_ms;
		if (f->delay_header && !hdr_u64(m, "x-envoy-fault-delay-request", 27, &ms))
			ms = 0;
		if (ms > ARN_CFG_FAULT_DELAY_MAX_MS)
			ms = ARN_CFG_FAULT_DELAY_MAX_MS;
		if (ms && arn_cfg_fraction_hit(&p, r_delay))
			out->delay_ms = (uint32_t)ms;
	}
	if (f->abort) {
		bool hdr = f->abort == ARN_CFG_FAULT_ABORT_HEADER;
		struct arn_cfg_fraction p =
		    pct_of(&f->abort_pct, hdr, m, "x-envoy-fault-abort-request-percentage", 38);
		if (arn_cfg_fraction_hit(&p, r_abort)) {
			uint64_t v;
			if (f->abort == ARN_CFG_FAULT_ABORT_HTTP) {
				out->abort_status = (uint16_t)f->abort_status;
			} else if (f->abort == ARN_CFG_FAULT_ABORT_GRPC) {
				out->abort_grpc = (int16_t)f->abort_status;
			} else {
				/* Envoy's HeaderAbortProvider: a status in [200, 600) */
				if (hdr_u64(m, "x-envoy-fault-abort-request", 27, &v) && v >= 200 &&
				    v < 600)
					out->abort_status = (uint16_t)v;
				if (hdr_u64(m, "x-envoy-fault-abort-grpc-request", 32, &v) &&
				    v <= 16)
					out->abort_grpc = (int16_t)v;
			}
		}
	}
	return true;
}
