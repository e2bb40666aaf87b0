/*
 * The registered table of HTTP filters (http_filter.h) and what more than
 * one caller walks in it: below the connection manager and local replies,
 * which both use it, and naming no filter.
 */
#include <errno.h>
#include <stddef.h>

#include "arn_h1.h"
#include "http_filter.h"

const struct http_filter_ops *const *http_filters;
unsigned http_n_filters;
struct http_filter_list http_filters_encode_response, http_filters_log, http_filters_stream_end,
    http_filters_encode_head_edits, http_filters_decode_head;

int http_filters_set(const struct http_filter_ops *const *chain, unsigned n)
{
	if (n > HTTP_FILTERS_MAX || (n && !chain))
		return -EINVAL;
	http_filters = chain;
	http_n_filters = n;
	http_filters_encode_response.n = http_filters_log.n = http_filters_stream_end.n = 0;
	http_filters_encode_head_edits.n = http_filters_decode_head.n = 0;
	for (unsigned i = 0; i < n; i++) {
		const struct http_filter_ops *f = chain[i];
		if (f->encode_response)
			http_filters_encode_response.f[http_filters_encode_response.n++] = f;
		if (f->log)
			http_filters_log.f[http_filters_log.n++] = f;
		if (f->stream_end)
			http_filters_stream_end.f[http_filters_stream_end.n++] = f;
		if (f->encode_head_edits)
			http_filters_encode_head_edits.f[http_filters_encode_head_edits.n++] = f;
		if (f->decode_head)
			http_filters_decode_head.f[http_filters_decode_head.n++] = f;
	}
	return 0;
}

int http_filters_resp_edits(struct http_stream *st, struct arn_h1_edit *e, unsigned cap)
{
	unsigned n = 0;
	for (unsigned i = 0; i < http_filters_encode_head_edits.n; i++) {
		const struct http_filter_ops *f = http_filters_encode_head_edits.f[i];
		int k = f->encode_head_edits(st, e + n, cap - n);
		if (k < 0)
			return k;
		n += (unsigned)k;
	}
	return (int)n;
}

bool http_filters_idle(const struct arn_cfg_hcm *h)
{
	for (unsigned i = 0; i < http_n_filters; i++)
		if (!http_filters[i]->active || http_filters[i]->active(h))
			return false;
	return true;
}
