/*
 * x-forwarded-client-cert from a TLS connection (http_xfcc_tls.c).
 */
#ifndef ARN_HTTP_XFCC_TLS_H
#define ARN_HTTP_XFCC_TLS_H

#include <stddef.h>

struct arn_tls_conn;

/**
 * The current client's x-forwarded-client-cert element (By=, Hash= and
 * @p details, ARN_CFG_FCC_D_*) from connection @p t, whose client
 * presented a certificate, into @p out (no NUL; @p t borrowed).
 * @return its length; -ENOSPC past @p cap or the bounds on the names
 *   (32 SANs of a kind, 2 KiB of them, a 1 KiB subject); -EINVAL when a
 *   name has a byte no header value may carry; -ENOMEM.
 */
int http_xfcc_tls_value(const struct arn_tls_conn *t, unsigned details, char *out, size_t cap);

#endif
