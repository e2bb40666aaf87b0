/*
 * HCM tracing's response header (http_otel.h), apart from the tracer so
 * that a local reply (http_local.c) adds it without depending on the
 * span export's sub-requests.
 */
#include "arn_config.h"
#include "http_otel.h"
#include "http_stream.h"

bool http_otel_resp_header(const struct http_stream *st, struct arn_h1_edit *e)
{
	const struct arn_cfg_route_trace *rt = st->route ? st->route->trace : NULL;
	if (!rt || !rt->operation || !rt->propagate)
		return false;
	/* a request that named its operation gets none back (Envoy clears
	 * its decorated operation) */
	int k = arn_h1_find(&st->req.m, "x-envoy-decorator-operation", 27, 0);
	if (k >= 0 && st->req.m.hdrs[k].value_len)
		return false;
	*e = (struct arn_h1_edit){.op = ARN_H1_EDIT_SET,
				  .id1 = ARN_H1_H_OTHER + 1,
				  .name = "x-envoy-decorator-operation",
				  .name_len = 27,
				  .value = rt->operation,
				  .value_len = rt->operation_len};
	return true;
}
