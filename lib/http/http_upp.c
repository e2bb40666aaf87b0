/* The PROXY header sent upstream (http_upp.h). */
#include "http_upp.h"

#include "arn_tcp.h"

bool http_upp_send(struct arn_tcp_conn *tc, unsigned version, const struct arn_pp_addrs *a)
{
	uint8_t hdr[ARN_PP_WRITE_MAX];
	struct arn_pp_addrs own;
	if (!a && version == 1) {
		/* Envoy's generateHeaderV1 without a downstream: the
		 * connection's own local and remote addresses */
		arn_tcp_endpoints(tc, &own.src, &own.sport, &own.dst, &own.dport);
		a = &own;
	}
	size_t n = arn_pp_write(hdr, version, a);
	return n && arn_tcp_write(tc, hdr, (uint32_t)n) == (int)n;
}
