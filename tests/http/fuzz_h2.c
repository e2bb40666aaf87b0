/*
 * libFuzzer target: downstream HTTP/2 (lib/http/http_h2.c) behind the
 * connection manager, on Arion's real TCP stack over the fake lib/net,
 * with fuzz_hcm.c's harness (hcm_harness.h) and configuration. Every
 * client opens with the HTTP/2 preface and an empty SETTINGS frame; what
 * follows is the fuzzer's: raw bytes (frames of any shape), or frames
 * built here so that runs reach streams quickly.
 *
 * Input format: as fuzz_hcm.c, except that OPEN also sends the preface
 * and that op 14 sends a frame:
 *    14 CH2 c K   client c sends frame K & 15 (see h2_frame), on a new
 *                 stream (HEADERS) or the client's last one (K & 16
 *                 picks a variant: trailers instead of DATA for 7)
 * and op 15 sends upstream responses as in fuzz_hcm.c.
 *
 * At the end, as fuzz_hcm.c: nothing may be left (connections, stream
 * blocks, request buffers, pins, mbufs), what upstreams received must
 * parse as HTTP/1.1; what clients received is HTTP/2 frames (not
 * checked here beyond the sanitizers).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "hcm_harness.h"

static const char *const resps[] = {
    "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n",
    "HTTP/1.1 100 Continue\r\n\r\n",
    "HTTP/1.1 200 OK\r\n\r\nuntil-close",
    "HTTP/1.1 204 No Content\r\n\r\n",
    "HTTP/1.1 200 OK\r\nContent-Length: 65536\r\n\r\n",
    "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
};
#define N_RESPS (sizeof(resps) / sizeof(resps[0]))

static uint32_t next_sid[4]; /* per client: its next stream id */

/* HPACK for a request: GET or POST (static table), :scheme http, :path
 * @p path (literal, name index 4), :authority a (literal, name index 1). */
static size_t hpack_req(uint8_t *b, bool post, const char *path)
{
	size_t n = 0, pl = strlen(path);
	b[n++] = post ? 0x83 : 0x82;
	b[n++] = 0x86;
	b[n++] = 0x04;
	b[n++] = (uint8_t)pl;
	memcpy(b + n, path, pl);
	n += pl;
	b[n++] = 0x01;
	b[n++] = 0x01;
	b[n++] = 'a';
	return n;
}

/* Frame @p k for client @p c into @p b. @return its length. */
static size_t h2_frame(unsigned c, unsigned k, uint8_t *b)
{
	static const char *const paths[] = {"/", "/direct", "/retry", "/slow"};
	uint32_t last = next_sid[c] > 1 ? next_sid[c] - 2 : 1;
	size_t n;
	switch (k & 15) {
	case 0: /* GET, END_STREAM */
	case 1:
	case 2:
	case 3:
		n = hpack_req(b + 9, false, paths[k & 3]);
		hh_h2_frame_hdr(b, (uint32_t)n, 1, 0x5, next_sid[c]);
		next_sid[c] += 2;
		return 9 + n;
	case 4: /* POST, its body to follow */
	case 5:
		n = hpack_req(b + 9, true, paths[(k & 1) ? 2 : 0]);
		hh_h2_frame_hdr(b, (uint32_t)n, 1, 0x4, next_sid[c]);
		next_sid[c] += 2;
		return 9 + n;
	case 6: /* DATA on the last stream */
		memcpy(b + 9, "hello", 5);
		hh_h2_frame_hdr(b, 5, 0, 0, last);
		return 14;
	case 7: /* DATA, END_STREAM; with bit 4, trailers (HEADERS, END_STREAM) */
		if (k & 16) {
			/* x-t: 1, a literal without indexing with a new name */
			memcpy(b + 9,
			       "\x00\x03x-t\x01"
			       "1",
			       7);
			hh_h2_frame_hdr(b, 7, 1, 0x5, last);
			return 16;
		}
		memcpy(b + 9, "end", 3);
		hh_h2_frame_hdr(b, 3, 0, 1, last);
		return 12;
	case 8: /* RST_STREAM (CANCEL) on the last stream */
		hh_h2_frame_hdr(b, 4, 3, 0, last);
		memcpy(b + 9, "\0\0\0\x08", 4);
		return 13;
	case 9: /* WINDOW_UPDATE, connection */
		hh_h2_frame_hdr(b, 4, 8, 0, 0);
		memcpy(b + 9, "\0\x01\0\0", 4);
		return 13;
	case 10: /* WINDOW_UPDATE, last stream */
		hh_h2_frame_hdr(b, 4, 8, 0, last);
		memcpy(b + 9, "\0\x01\0\0", 4);
		return 13;
	case 11: /* PING */
		hh_h2_frame_hdr(b, 8, 6, 0, 0);
		memset(b + 9, 'p', 8);
		return 17;
	case 12: /* SETTINGS ACK */
		return hh_h2_frame_hdr(b, 0, 4, 1, 0);
	case 13: /* SETTINGS INITIAL_WINDOW_SIZE 16 (a client that reads slowly) */
		hh_h2_frame_hdr(b, 6, 4, 0, 0);
		memcpy(b + 9, "\0\x04\0\0\0\x10", 6);
		return 15;
	case 14: /* GOAWAY */
		hh_h2_frame_hdr(b, 8, 7, 0, 0);
		memset(b + 9, 0, 8);
		return 17;
	default: /* HEADERS without END_HEADERS, then its CONTINUATION */
		n = hpack_req(b + 9, false, "/");
		hh_h2_frame_hdr(b, 2, 1, 0x1, next_sid[c]);
		memmove(b + 9 + 2 + 9, b + 9 + 2, n - 2);
		hh_h2_frame_hdr(b + 9 + 2, (uint32_t)(n - 2), 9, 0x4, next_sid[c]);
		next_sid[c] += 2;
		return 9 + 2 + 9 + (n - 2);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	hh_clients_h2 = true;
	hh_fuzz_init(argc, argv);
	return 0;
}

/* after OPEN, the client's preface; ops 14 (CH2) and 15 (URESP);
 * hh_fuzz_run does the others */
static void own_op(struct hh_rd *r, uint8_t b)
{
	static uint8_t tmp[256];
	static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0";
	unsigned a = b >> 4, c = a & 3, u = a & 7;
	switch (b & 15) {
	case 0:
		next_sid[c] = 1;
		hh_send(hh_client(c), preface, sizeof(preface) - 1, 255);
		break;
	case 14: {
		size_t n = h2_frame(c, hh_rd8(r), tmp);
		hh_send(hh_client(c), tmp, (uint32_t)n, 255);
		break;
	}
	case 15: {
		const char *s = resps[hh_rd8(r) % N_RESPS];
		hh_send(hh_upstream(u), s, (uint32_t)strlen(s), 255);
		break;
	}
	default:
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	for (int i = 0; i < 4; i++)
		next_sid[i] = 1;
	hh_fuzz_run(data, size, own_op);
	return 0;
}
