/*
 * libFuzzer: arbitrary bytes as a backend's event stream, cut into
 * segments whose size the first byte picks; each event's data through the
 * JSON-RPC reader, as the filter reads a streamed backend answer. Checks
 * that the events do not depend on where the segments end.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arn_mcp.h"

/* A digest of the events read from @p d with segments of @p seg bytes. */
static uint64_t events(const uint8_t *d, size_t n, size_t seg, int *err)
{
	static char buf[4096];
	struct arn_mcp_sse p;
	arn_mcp_sse_init(&p, buf, sizeof(buf));
	uint64_t h = 0xcbf29ce484222325ull;
	*err = 0;
	size_t off = 0;
	while (off < n) {
		size_t len = n - off < seg ? n - off : seg;
		struct arn_mcp_sse_ev ev;
		ssize_t k = arn_mcp_sse_feed(&p, (const char *)d + off, len, &ev);
		if (k == ARN_AGAIN) {
			off += len;
			continue;
		}
		if (k < 0) {
			*err = (int)k;
			return h;
		}
		if (k == 0 || (size_t)k > len)
			abort();
		off += (size_t)k;
		const char *parts[3] = {ev.event, ev.id, ev.data};
		size_t lens[3] = {ev.event_len, ev.id_len, ev.data_len};
		for (int i = 0; i < 3; i++) {
			for (size_t j = 0; j < lens[i]; j++)
				h = (h ^ (unsigned char)parts[i][j]) * 0x100000001b3ull;
			h = (h ^ 0x100) * 0x100000001b3ull;
		}
		struct arn_mcp_body b;
		if (arn_mcp_parse(ev.data, ev.data_len, NULL, true, &b) == ARN_MCP_E_NONE)
			arn_mcp_body_release(&b);
	}
	return h;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t seg = (data[0] & 0x1f) + 1;
	int e1, e2;
	uint64_t h1 = events(data + 1, size - 1, size, &e1);
	uint64_t h2 = events(data + 1, size - 1, seg, &e2);
	if (e1 != e2 || (!e1 && h1 != h2))
		abort();
	return 0;
}
