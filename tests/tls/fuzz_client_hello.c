/*
 * libFuzzer target for the tls_inspector's ClientHello parser
 * (arn_tls_hello_parse): the same input fed whole, one byte at a time and
 * split where the input says must give the same status and result; the
 * result must respect the documented bounds. Seeds: ClientHellos written
 * by real OpenSSL clients (gen_tls_seeds.c).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arn_tls.h"

static void check(const struct arn_tls_hello *h, enum arn_tls_hello_status st)
{
	if (h->sni_len > ARN_TLS_HELLO_SNI_MAX || h->n_alpn > ARN_TLS_HELLO_MAX_ALPN ||
	    h->n_versions > ARN_TLS_HELLO_MAX_VERSIONS || h->n_sigalgs > ARN_TLS_HELLO_MAX_SIGALGS)
		abort();
	if (st != ARN_TLS_HELLO_DONE)
		return;
	if (h->has_sni && (h->sni_len == 0 || strlen(h->sni) != h->sni_len))
		abort();
	for (unsigned i = 0; i < h->n_alpn; i++) {
		const char *a = arn_tls_hello_alpn(h, i);
		if (h->alpn_off[i] + h->alpn_len[i] >= sizeof(h->alpn_buf) || h->alpn_len[i] == 0 ||
		    a[h->alpn_len[i]] != 0)
			abort();
	}
	if (h->hello_len > ARN_TLS_HELLO_HARD_MAX)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	/* the first two bytes: the bound (0: default) and a split point */
	uint32_t max = data[0] < 16 ? 0 : (uint32_t)data[0] * 64;
	size_t cut = size > 2 ? data[1] % (size - 2) : 0;
	data += 2;
	size -= 2;

	struct arn_tls_hello_parser whole, bytes, split;
	arn_tls_hello_init(&whole, max);
	arn_tls_hello_init(&bytes, max);
	arn_tls_hello_init(&split, max);
	enum arn_tls_hello_status a = arn_tls_hello_parse(&whole, data, size);
	enum arn_tls_hello_status b = ARN_TLS_HELLO_AGAIN;
	for (size_t i = 0; i < size; i++)
		b = arn_tls_hello_parse(&bytes, data + i, 1);
	arn_tls_hello_parse(&split, data, cut);
	enum arn_tls_hello_status c = arn_tls_hello_parse(&split, data + cut, size - cut);
	if (a != b || a != c)
		abort();
	if (memcmp(&whole.h, &bytes.h, sizeof(whole.h)) ||
	    memcmp(&whole.h, &split.h, sizeof(whole.h)))
		abort();
	if (whole.fed != bytes.fed || whole.fed != split.fed || whole.fed > size)
		abort();
	check(&whole.h, a);
	/* the bound counts every byte read, record headers included */
	if (a == ARN_TLS_HELLO_DONE && whole.fed > whole.max_hello)
		abort();
	/* a final status stays */
	if (a != ARN_TLS_HELLO_AGAIN && arn_tls_hello_parse(&whole, data, size) != a)
		abort();
	return 0;
}
