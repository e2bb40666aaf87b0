/*
 * A stream's substitutions' context (http_stream_subst, http_stream.h): a
 * leaf below the connection manager, the local replies and the filters
 * that all format header values, so that none of them builds its own.
 */
#include "http_int.h"
#include "http_stream.h"

void http_stream_subst(const void *arg, struct http_subst *out)
{
	const struct http_stream *st = arg;
	const struct http_conn *hc = st->hc;
	*out = (struct http_subst){
	    .raddr = hc->raddr,
	    .rport = hc->rport,
	    .laddr = hc->laddr,
	    .lport = hc->lport,
	    .draddr = hc->draddr,
	    .drport = hc->drport,
	    .hcm = hc->hcm,
	    .upstream_addr = st->ep_addr,
	    .upstream_port = st->ep_port,
	    .req = (st->state & HTTP_S_HEAD_DONE) ? &st->req.m : NULL,
	};
}
