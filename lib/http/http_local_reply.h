/*
 * local_reply_config (Envoy's LocalReplyImpl): the compiled form of an
 * HCM's mappers and body format (http_rt.c keeps one per connection
 * manager and generation) and its rewrite of a local reply (http_local.c).
 */
#ifndef ARN_HTTP_LOCAL_REPLY_H
#define ARN_HTTP_LOCAL_REPLY_H

#include <stddef.h>

#include "arn_h1.h"

struct http_lr;
struct http_stream;
struct arn_cfg_local_reply;

/** @return the compiled form of @p cfg, or NULL (no memory: logged,
 * naming @p where, and local replies go unchanged). Control lcore. */
struct http_lr *http_lr_new(const struct arn_cfg_local_reply *cfg, const char *where);
void http_lr_free(struct http_lr *lr);

/**
 * Envoy's LocalReplyImpl::rewrite on @p st's local reply @p *status /
 * @p *body: the first mapper whose filter passes the reply (as its access
 * log would see it, with the status it had) sets its status, body and
 * headers; then its body_format_override, else the body format, writes
 * the body (%LOCAL_REPLY_BODY% the body so far) into the worker's
 * scratch, read by the codec during the same call. The headers, and the
 * format's content type, go to @p e.
 * @return the edits written, or -ENOSPC when they do not fit @p cap.
 */
int http_lr_rewrite(struct http_stream *st, const struct http_lr *lr, unsigned *status,
		    const char **body, size_t *blen, struct arn_h1_edit *e, unsigned cap);

#endif
