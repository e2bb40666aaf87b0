/*
 * The router's retry decisions, as Envoy's RetryStateImpl makes them: which
 * attempt outcomes a retry_policy retries (response codes, resets, connect
 * failures, per-try timeouts), the retry limit and the cluster's max_retries
 * circuit breaker, and the fully jittered exponential back-off. Pure logic:
 * http_hcm.c drives it, tests/http/test_proxy.c checks it.
 */
#include <stdio.h>
#include <string.h>

#include "http_int.h"

bool http_retry_on_status(const struct arn_cfg_retry_policy *rp, unsigned status, bool ratelimited)
{
	if (!rp || !rp->present)
		return false;
	uint32_t on = rp->retry_on;
	/* x-envoy-ratelimited comes from an upstream Envoy that rate limited
	 * the request: retried only under envoy-ratelimited, whatever else
	 * the policy says (Envoy's wouldRetryFromHeaders) */
	if (ratelimited)
		return (on & ARN_CFG_RETRY_ENVOY_RATELIMITED) != 0;
	if ((on & ARN_CFG_RETRY_5XX) && status >= 500 && status <= 599)
		return true;
	if ((on & ARN_CFG_RETRY_GATEWAY_ERROR) && status >= 502 && status <= 504)
		return true;
	if ((on & ARN_CFG_RETRY_RETRIABLE_4XX) && status == 409)
		return true;
	if (on & ARN_CFG_RETRY_RETRIABLE_STATUS_CODES)
		for (size_t i = 0; i < rp->n_retriable_status_codes; i++)
			if (rp->retriable_status_codes[i] == status)
				return true;
	return false;
}

bool http_retry_on_grpc(const struct arn_cfg_retry_policy *rp, const char *v, size_t len)
{
	if (!rp || !rp->present || !(rp->retry_on & ARN_CFG_RETRY_GRPC_ANY) || len == 0 || len > 2)
		return false;
	unsigned code = 0;
	for (size_t i = 0; i < len; i++) {
		if (v[i] < '0' || v[i] > '9')
			return false; /* not a status: Envoy's getGrpcStatus gives none */
		code = code * 10 + (unsigned)(v[i] - '0');
	}
	uint32_t on = rp->retry_on;
	switch (code) {
	case 1: /* CANCELLED */
		return (on & ARN_CFG_RETRY_GRPC_CANCELLED) != 0;
	case 4: /* DEADLINE_EXCEEDED */
		return (on & ARN_CFG_RETRY_GRPC_DEADLINE_EXCEEDED) != 0;
	case 8: /* RESOURCE_EXHAUSTED */
		return (on & ARN_CFG_RETRY_GRPC_RESOURCE_EXHAUSTED) != 0;
	case 13: /* INTERNAL */
		return (on & ARN_CFG_RETRY_GRPC_INTERNAL) != 0;
	case 14: /* UNAVAILABLE */
		return (on & ARN_CFG_RETRY_GRPC_UNAVAILABLE) != 0;
	default:
		return false;
	}
}

/* Header @p name (lower case, @p nlen bytes) of @p m as Envoy's
 * HeaderMatcher reads it: repeated fields joined with ',' (into @p buf,
 * cut at @p cap), the pseudo-headers from the start line. */
static bool msg_value(const struct arn_h1_msg *m, const char *name, size_t nlen, char *buf,
		      size_t cap, const char **v, size_t *vlen)
{
	if (nlen && name[0] == ':') {
		const struct arn_h1_slice *sl = NULL;
		if (nlen == 7 && memcmp(name, ":status", 7) == 0) {
			if (!m->status)
				return false;
			*vlen = (size_t)snprintf(buf, cap, "%u", m->status);
			*v = buf;
			return true;
		}
		if (nlen == 7 && memcmp(name, ":method", 7) == 0)
			sl = &m->method_name;
		else if (nlen == 5 && memcmp(name, ":path", 5) == 0)
			sl = &m->path;
		else if (nlen == 10 && memcmp(name, ":authority", 10) == 0)
			sl = &m->authority;
		if (!sl || !sl->p)
			return false;
		*v = sl->p;
		*vlen = sl->len;
		return true;
	}
	int i = arn_h1_find(m, name, nlen, 0);
	if (i < 0)
		return false;
	int j = arn_h1_find(m, name, nlen, i + 1);
	if (j < 0) {
		*v = m->hdrs[i].value;
		*vlen = m->hdrs[i].value_len;
		return true;
	}
	size_t n = 0;
	for (; i >= 0 && n < cap; i = arn_h1_find(m, name, nlen, i + 1)) {
		if (n)
			buf[n++] = ',';
		size_t k = m->hdrs[i].value_len < cap - n ? m->hdrs[i].value_len : cap - n;
		memcpy(buf + n, m->hdrs[i].value, k);
		n += k;
	}
	*v = buf;
	*vlen = n;
	return true;
}

bool http_retry_headers_match(const struct arn_cfg_header_match *hm, size_t n,
			      const struct arn_h1_msg *m)
{
	char buf[1024];
	for (size_t i = 0; i < n; i++) {
		const char *v = NULL;
		size_t vlen = 0;
		bool present =
		    msg_value(m, hm[i].name, hm[i].name_len, buf, sizeof(buf), &v, &vlen);
		if (arn_cfg_header_match_value(&hm[i], present, v, vlen))
			return true;
	}
	return false;
}

bool http_retry_on_reset(const struct arn_cfg_retry_policy *rp, enum http_reset_kind k)
{
	if (!rp || !rp->present)
		return false;
	uint32_t on = rp->retry_on;
	if (k == HTTP_RESET_OVERFLOW)
		return false; /* a circuit breaker said no: never retried */
	if (k == HTTP_RESET_CONNECT_FAILURE && (on & ARN_CFG_RETRY_CONNECT_FAILURE))
		return true;
	/* Envoy counts every reset (a connect failure, a close or reset before
	 * the response head, a per-try timeout) as a 5xx: reset, 5xx and
	 * gateway-error all retry it. refused-stream is an HTTP/2 reset that an
	 * HTTP/1 upstream cannot send. */
	return (on & (ARN_CFG_RETRY_RESET | ARN_CFG_RETRY_5XX | ARN_CFG_RETRY_GATEWAY_ERROR)) != 0;
}

enum http_retry_status http_retry_should(struct http_retry *r, bool would, int32_t *active,
					 uint32_t max_active, bool *success)
{
	*success = false;
	if (r->holding) {
		/* the breaker's retry slot is held from a retry's decision until
		 * the retried attempt's outcome: that is now */
		__atomic_fetch_sub(active, 1, __ATOMIC_RELAXED);
		r->holding = false;
		if (!would)
			*success = true;
	}
	if (!would || !r->rp)
		return HTTP_RETRY_NO;
	if (r->left == 0)
		return HTTP_RETRY_LIMIT;
	r->left--;
	if (__atomic_load_n(active, __ATOMIC_RELAXED) >= (int32_t)max_active)
		return HTTP_RETRY_OVERFLOW;
	__atomic_fetch_add(active, 1, __ATOMIC_RELAXED);
	r->holding = true;
	r->n++;
	return HTTP_RETRY_YES;
}

void http_retry_release(struct http_retry *r, int32_t *active)
{
	if (r->holding)
		__atomic_fetch_sub(active, 1, __ATOMIC_RELAXED);
	r->holding = false;
}

uint32_t http_retry_backoff_ms(uint32_t base_ms, uint32_t max_ms, uint32_t n, uint64_t rand)
{
	if (base_ms == 0 || n == 0)
		return 0;
	/* the n-th retry waits in [0, (2^n - 1) * base), capped at max */
	uint64_t ceil = n >= 32 ? UINT64_MAX : ((1ull << n) - 1) * (uint64_t)base_ms;
	uint64_t v = rand % ceil;
	return v < max_ms ? (uint32_t)v : max_ms;
}
