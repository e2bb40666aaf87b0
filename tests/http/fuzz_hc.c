/*
 * libFuzzer target for what an upstream sends to an active health check
 * (lib/http/http_hc.c): the HTTP check's response head
 * (http_hc_http_verdict) and the TCP check's receive matching
 * (http_hc_tcp_match), both as worker 0 judges them, segment by segment,
 * through http_hc_judge into a bounded buffer.
 *
 * Input: byte 0 chooses the check (bit 0: TCP, else HTTP; bits 1-2: how
 * many expected_statuses ranges; bits 3-4: how many TCP receive blocks;
 * bits 5-7: the largest segment), then 2 bytes per range (start 100 +
 * 2 x b0, width b1), then per receive block a length byte (0-8) and that
 * many bytes, then a byte that seeds the cuts; the rest is what the
 * upstream sends.
 *
 * Besides "never crash, leak, hang or read out of bounds", the oracle:
 *  - a verdict does not depend on how the bytes were split: one given
 *    after any segment is the whole answer's, and a complete final head
 *    (or matched receive blocks) is never missed;
 *  - nothing past HTTP_HC_RX_MAX bytes is read (the functions are called
 *    with a longer length over a buffer of exactly that many bytes: ASan
 *    sees an overread) and a verdict depends on none of it;
 *  - a pass only for a status in the expected ranges (default 200 only),
 *    a final status in [200, 999], an immediate failure only with the
 *    header in the bytes; TCP matching agrees with a memmem reference;
 *  - the body a check that keeps its connection consumes
 *    (http_hc_body_eat, reuse_connection): after a final head, the bytes
 *    after it under the head's framing; with no final head, all of them
 *    as a chunked body. It ends at the same byte (or not, or is refused)
 *    however the bytes are cut, never uses more than it is given, and a
 *    content-length body ends exactly at its length.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_hc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_hc: %s:%d: %s\n", __FILE__, __LINE__, #cond);        \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

struct fcfg {
	struct arn_cfg_health_check c;
	uint32_t ranges[6];
	uint8_t blk[3][8];
	uint8_t *blocks[3];
	size_t lens[3];
};

static bool ref_status_ok(const struct fcfg *f, unsigned status)
{
	if (!f->c.n_expected_statuses)
		return status == 200;
	for (size_t i = 0; i < f->c.n_expected_statuses; i++)
		if (status >= f->ranges[2 * i] && status < f->ranges[2 * i + 1])
			return true;
	return false;
}

/* Envoy's ordered receive blocks, another way: memmem from the previous
 * block's end. */
static bool ref_tcp_match(const struct fcfg *f, const uint8_t *buf, size_t len)
{
	size_t at = 0;
	for (size_t i = 0; i < f->c.n_receive; i++) {
		if (!f->lens[i])
			continue;
		const uint8_t *p = memmem(buf + at, len - at, f->blocks[i], f->lens[i]);
		if (!p)
			return false;
		at = (size_t)(p - buf) + f->lens[i];
	}
	return true;
}

/* Does @p buf hold @p name, in any case? */
static bool has_ci(const char *buf, size_t len, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; i + n <= len; i++)
		if (strncasecmp(buf + i, name, n) == 0)
			return true;
	return false;
}

/* What the whole answer says (its first HTTP_HC_RX_MAX bytes). */
struct whole {
	int rc; /* http: http_hc_http_verdict's; tcp: the judge's */
	struct http_hc_verdict v;
	enum http_hc_result r; /* the judge's, when judged */
	int judged;
};

/*
 * Feed @p in (@p n) as segments of 1..maxp bytes (cut by @p seed; 1-byte
 * segments when @p maxp is 1) into a bounded buffer, as hc_data does, and
 * judge after each; every prefix's own verdict is compared with the
 * whole's on the way.
 */
static void segmented(const struct fcfg *f, const char *in, size_t n, uint32_t seed, size_t maxp,
		      const struct whole *w)
{
	if (n == 0)
		return; /* no data, no judge: a check with no receive block passes at connect */
	char *rx = malloc(HTTP_HC_RX_MAX);
	CHECK(rx);
	size_t len = 0, at = 0;
	uint32_t x = seed * 2654435761u + 1;
	enum http_hc_result r = HTTP_HC_SUCCESS;
	int judged = 0;
	while (at < n && len < HTTP_HC_RX_MAX && !judged) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		size_t seg = maxp > 1 ? 1 + x % maxp : 1;
		if (seg > n - at)
			seg = n - at;
		if (seg > HTTP_HC_RX_MAX - len)
			seg = HTTP_HC_RX_MAX - len;
		size_t was = len;
		memcpy(rx + len, in + at, seg);
		len += seg;
		at += seg;
		/* every prefix: a verdict, once there, is the whole's */
		if (f->c.kind == ARN_CFG_HC_HTTP) {
			struct http_hc_verdict v;
			int rc = http_hc_http_verdict(&f->c, rx, len, &v);
			if (rc != 0) {
				CHECK(rc == w->rc);
				CHECK(v.r == w->v.r && v.status == w->v.status);
			}
		} else if (http_hc_tcp_match(&f->c, (const uint8_t *)rx, len)) {
			CHECK(w->judged && w->r == HTTP_HC_SUCCESS);
		}
		judged = http_hc_judge(&f->c, rx, was, len, &r);
	}
	if (judged) {
		CHECK(w->judged);
		CHECK(r == w->r);
	}
	/* a final head, or the receive blocks, are never missed: the
	 * newline shortcut skips only bytes that cannot complete a head */
	if (f->c.kind == ARN_CFG_HC_HTTP && w->rc == 1)
		CHECK(judged);
	if (f->c.kind == ARN_CFG_HC_TCP && w->judged)
		CHECK(judged);
	free(rx);
}

/* The body @p p (@p n) under @p framing fed in pieces cut by @p seed (of
 * 1..maxp bytes): the result, and the bytes used when it ended. */
static int body_cut(enum http_hc_framing framing, uint64_t cl, const char *p, size_t n,
		    uint32_t seed, size_t maxp, size_t *end)
{
	struct http_hc_body b;
	http_hc_body_init(&b, framing, cl);
	uint32_t x = seed * 2654435761u + 7;
	size_t at = 0;
	*end = 0;
	while (at < n) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		size_t seg = maxp > 1 ? 1 + x % maxp : 1;
		if (seg > n - at)
			seg = n - at;
		size_t used = SIZE_MAX;
		int rc = http_hc_body_eat(&b, p + at, seg, &used);
		CHECK(used <= seg);
		CHECK(rc == 1 || rc == 0 || rc == -EBADMSG);
		if (rc != 0) {
			*end = rc == 1 ? at + used : 0; /* a refusal has no end */
			return rc;
		}
		CHECK(used == seg);
		at += seg;
	}
	return 0;
}

/* The body after the head (or, with no head, the bytes as chunked): the
 * same end however cut. */
static void body_oracle(const struct whole *w, const char *in, size_t cap, uint32_t seed)
{
	enum http_hc_framing fr = HTTP_HC_BODY_CHUNKED;
	uint64_t cl = 0;
	const char *p = in;
	size_t n = cap;
	if (w->rc == 1) {
		CHECK(w->v.head_len > 0 && w->v.head_len <= cap);
		fr = (enum http_hc_framing)w->v.framing;
		cl = w->v.content_length;
		p = in + w->v.head_len;
		n = cap - w->v.head_len;
	}
	size_t e0, e;
	int r0 = body_cut(fr, cl, p, n, seed, n ? n : 1, &e0);
	if (fr == HTTP_HC_BODY_LENGTH)
		CHECK(r0 == (cl <= n) && (r0 == 0 || e0 == cl));
	if (fr == HTTP_HC_BODY_NONE)
		CHECK(r0 == (n > 0) && e0 == 0);
	if (fr == HTTP_HC_BODY_CLOSE)
		CHECK(r0 == 0);
	CHECK(body_cut(fr, cl, p, n, seed, 7, &e) == r0 && e == e0);
	if (n <= 512)
		CHECK(body_cut(fr, cl, p, n, seed, 1, &e) == r0 && e == e0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	struct fcfg f;
	memset(&f, 0, sizeof(f));
	size_t at = 0;
	uint8_t ctl = data[at++];
	f.c.kind = (ctl & 1) ? ARN_CFG_HC_TCP : ARN_CFG_HC_HTTP;
	f.c.timeout_ms = 1000;
	f.c.interval_ms = 1000;
	size_t nr = (ctl >> 1) & 3, nb = (ctl >> 3) & 3;
	for (size_t i = 0; i < nr && at + 2 <= size; i++, at += 2) {
		f.ranges[2 * i] = 100 + 2u * data[at];
		f.ranges[2 * i + 1] = f.ranges[2 * i] + data[at + 1];
		f.c.n_expected_statuses = i + 1;
	}
	if (f.c.n_expected_statuses)
		f.c.expected_statuses = f.ranges;
	for (size_t i = 0; i < nb && at < size; i++) {
		size_t l = data[at++] % 9;
		if (l > size - at)
			l = size - at;
		memcpy(f.blk[i], data + at, l);
		at += l;
		f.blocks[i] = f.blk[i];
		f.lens[i] = l;
		f.c.n_receive = i + 1;
	}
	f.c.receive = f.blocks;
	f.c.receive_len = f.lens;
	uint32_t seed = at < size ? data[at++] : 0;
	size_t n = size - at;
	size_t cap = n < HTTP_HC_RX_MAX ? n : HTTP_HC_RX_MAX;
	/* the bytes a check may read, in a buffer of exactly that size */
	char *in = malloc(cap ? cap : 1);
	CHECK(in);
	memcpy(in, data + at, cap);

	struct whole w = {0};
	if (f.c.kind == ARN_CFG_HC_HTTP) {
		w.rc = http_hc_http_verdict(&f.c, in, cap, &w.v);
		CHECK(w.rc == 1 || w.rc == 0 || w.rc == -EBADMSG);
		if (w.rc == -EBADMSG)
			CHECK(w.v.r == HTTP_HC_FAIL_ACTIVE);
		if (w.rc == 1) {
			CHECK(w.v.status >= 200 && w.v.status <= 999);
			if (w.v.r == HTTP_HC_SUCCESS)
				CHECK(ref_status_ok(&f, w.v.status));
			else if (w.v.r == HTTP_HC_FAIL_ACTIVE)
				CHECK(!ref_status_ok(&f, w.v.status));
			else
				CHECK(w.v.r == HTTP_HC_FAIL_IMMEDIATE &&
				      has_ci(in, cap, "x-envoy-immediate-health-check-fail"));
		}
		/* the bound read whole is an answer, one way or the other */
		if (cap == HTTP_HC_RX_MAX)
			CHECK(w.rc != 0);
	} else {
		CHECK(http_hc_tcp_match(&f.c, (const uint8_t *)in, cap) ==
		      ref_tcp_match(&f, (const uint8_t *)in, cap));
	}
	w.judged = http_hc_judge(&f.c, in, 0, cap, &w.r);
	if (f.c.kind == ARN_CFG_HC_HTTP && w.judged)
		CHECK(w.rc != 0 && w.r == w.v.r);
	if (f.c.kind == ARN_CFG_HC_HTTP && w.rc == 1)
		CHECK(w.judged);
	if (cap == HTTP_HC_RX_MAX)
		CHECK(w.judged);

	/* more than the bound: nothing past it is read (the buffer holds only
	 * the bound: ASan sees an overread), nor changes the verdict */
	if (n > HTTP_HC_RX_MAX) {
		if (f.c.kind == ARN_CFG_HC_HTTP) {
			struct http_hc_verdict v;
			int rc = http_hc_http_verdict(&f.c, in, n, &v);
			CHECK(rc == w.rc && v.r == w.v.r && v.status == w.v.status);
		}
		enum http_hc_result r = HTTP_HC_FAIL_TIMEOUT;
		CHECK(http_hc_judge(&f.c, in, 0, n, &r) == w.judged && r == w.r);
	}

	if (f.c.kind == ARN_CFG_HC_HTTP)
		body_oracle(&w, in, cap, seed);

	segmented(&f, in, cap, seed, ((ctl >> 5) & 7) * 64 + 1, &w);
	segmented(&f, in, cap, seed ^ 0x5a, 7, &w);
	if (cap <= 512)
		segmented(&f, in, cap, seed, 1, &w);
	free(in);
	return 0;
}
