/*
 * libFuzzer target: upstream HTTP/2 (lib/http/http_upstream_h2.c and its
 * pool in http_upstream.c) behind the connection manager, on Arion's real
 * TCP stack over the fake lib/net, with fuzz_hcm.c's harness
 * (hcm_harness.h) and configuration, except that clusters web and two
 * speak HTTP/2 to their hosts (HH_UPSTREAMS_H2, max_concurrent_streams
 * 4). Clients send HTTP/1.1 requests; the upstreams' input is the
 * fuzzer's: raw bytes (frames of any shape), or frames built here so that
 * runs reach responses quickly.
 *
 * Input format: as fuzz_hcm.c, except:
 *    14 CREQ c K   client c sends canned request K % N_REQS
 *    15 UH2 u K    upstream connection u sends frame K & 15 (h2_frame) on
 *                  stream 2 * ((K >> 4) & 7) + 1
 *
 * At the end, as fuzz_hcm.c: nothing may be left (connections, stream
 * blocks, request buffers, pins, mbufs, circuit breaker counts), and what
 * clients received must parse as HTTP/1.1; what upstreams received is
 * HTTP/2 frames (not checked here beyond the sanitizers).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define HH_UPSTREAMS_H2 1
#include "hcm_harness.h"

static const char *const reqs[] = {
    "GET / HTTP/1.1\r\nHost: a\r\n\r\n",
    "POST /retry HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
    "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    "GET /slow HTTP/1.1\r\nHost: a\r\nTE: trailers\r\n\r\n",
    "GET /direct HTTP/1.1\r\nHost: a\r\n\r\n",
    "HEAD / HTTP/1.1\r\nHost: a\r\n\r\n",
    "GET /ridle HTTP/1.1\r\nHost: a\r\nX-Cluster: two\r\n\r\n",
    "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 70000\r\n\r\n",
};
#define N_REQS (sizeof(reqs) / sizeof(reqs[0]))

static size_t with(uint8_t *b, uint8_t type, uint8_t flags, uint32_t sid, const void *p, size_t n)
{
	hh_h2_frame_hdr(b, (uint32_t)n, type, flags, sid);
	memcpy(b + 9, p, n);
	return 9 + n;
}

/* Frame @p k & 15 from an upstream, on stream @p sid, into @p b. */
static size_t h2_frame(unsigned k, uint32_t sid, uint8_t *b)
{
	/* HPACK: ":status 200" is static index 8, ":status 500" 14; "100"
	 * and the trailer are literals without indexing */
	static const uint8_t st100[] = {0x08, 0x03, '1', '0', '0'};
	static const uint8_t trailer[] = {0x00, 0x0b, 'g', 'r', 'p', 'c',  '-', 's',
					  't',	'a',  't', 'u', 's', 0x01, '0'};
	switch (k & 15) {
	case 0: /* SETTINGS (the server's preface) */
		return hh_h2_frame_hdr(b, 0, 4, 0, 0);
	case 1: /* SETTINGS MAX_CONCURRENT_STREAMS 1 */
		return with(b, 4, 0, 0, "\0\x03\0\0\0\x01", 6);
	case 2: /* HEADERS 200 */
		return with(b, 1, 0x4, sid, "\x88", 1);
	case 3: /* HEADERS 200, END_STREAM */
		return with(b, 1, 0x5, sid, "\x88", 1);
	case 4: /* HEADERS 500, END_STREAM */
		return with(b, 1, 0x5, sid, "\x8e", 1);
	case 5: /* DATA */
		return with(b, 0, 0, sid, "hello", 5);
	case 6: /* DATA, END_STREAM */
		return with(b, 0, 1, sid, "end", 3);
	case 7: /* trailers: grpc-status 0, END_STREAM */
		return with(b, 1, 0x5, sid, trailer, sizeof(trailer));
	case 8: /* RST_STREAM INTERNAL_ERROR */
		return with(b, 3, 0, sid, "\0\0\0\x02", 4);
	case 9: /* RST_STREAM REFUSED_STREAM */
		return with(b, 3, 0, sid, "\0\0\0\x07", 4);
	case 10: /* GOAWAY, last stream 1 */
		return with(b, 7, 0, 0, "\0\0\0\x01\0\0\0\0", 8);
	case 11: /* WINDOW_UPDATE, connection */
		return with(b, 8, 0, 0, "\0\x01\0\0", 4);
	case 12: /* WINDOW_UPDATE, stream */
		return with(b, 8, 0, sid, "\0\x01\0\0", 4);
	case 13: /* PING */
		return with(b, 6, 0, 0, "pingping", 8);
	case 14: /* SETTINGS ACK */
		return hh_h2_frame_hdr(b, 0, 4, 1, 0);
	default: /* HEADERS 100 (interim) */
		return with(b, 1, 0x4, sid, st100, sizeof(st100));
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	hh_fuzz_init(argc, argv);
	return 0;
}

/* ops 14 (CREQ) and 15 (UH2); hh_fuzz_run does the others */
static void own_op(struct hh_rd *r, uint8_t b)
{
	static uint8_t tmp[256];
	unsigned a = b >> 4, c = a & 3, u = a & 7;
	switch (b & 15) {
	case 14: {
		const char *s = reqs[hh_rd8(r) % N_REQS];
		hh_send(hh_client(c), s, (uint32_t)strlen(s), 255);
		break;
	}
	case 15: {
		uint8_t k = hh_rd8(r);
		size_t n = h2_frame(k, 2u * ((k >> 4) & 7) + 1, tmp);
		hh_send(hh_upstream(u), tmp, (uint32_t)n, 255);
		break;
	}
	default:
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	hh_fuzz_run(data, size, own_op);
	return 0;
}
