/*
 * libFuzzer targets for the HTTP/1 parser (FUZZ_KIND selects requests or
 * responses). Besides "never crash, leak, hang or read out of bounds"
 * (each input piece is its own malloc, so ASan sees any overread), the
 * oracle is differential: the transcript of the input parsed whole must
 * equal the one of the same input cut into pieces (chosen by the first
 * byte) and, for short inputs, fed one byte at a time. A parser that
 * resumes wrongly across a cut shows up as a difference. And the serializer
 * must write a parsed message back so that it parses the same.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h1_harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void compare(const char *what, const char *a, const char *b)
{
	if (strcmp(a, b) != 0) {
		fprintf(stderr, "transcripts differ (%s)\n--- whole:\n%s--- %s:\n%s", what, a, what,
			b);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	/* byte 0: how to cut and which limits; byte 1: response's request method */
	unsigned ctl = data[0];
	static const struct arn_h1_config small = {
	    .max_head_bytes = 512, .max_start_line = 128, .max_headers = 8, .max_chunk_line = 32};
	struct h1t_opts o = {
	    .kind = FUZZ_KIND,
	    .cfg = (ctl & 0x80) ? &small : NULL,
	    .expect = (enum arn_h1_method)(data[1] % 10),
	    .eager_scratch = (ctl & 0x40) != 0,
	    .alloc = H1T_MALLOC,
	    /* with the small limits a small array too: a head of 3 fields
	     * or more leaves fewer slots than max_headers' 8 trailers, so
	     * the parser asks for a trailer array (NEED_TRAILERS) */
	    .hdr_cap = (ctl & 0x80) ? 10 : 0,
	};
	const char *in = (const char *)data + 2;
	size_t n = size - 2;
	size_t *cuts = malloc((n ? n : 1) * sizeof(size_t));
	size_t nc = 0;
	char *whole = h1t_run(in, n, NULL, 0, &o);

	/* pieces of 1..(ctl & 0x3f)+1 bytes from a seeded generator */
	uint32_t x = 2463534242u ^ (uint32_t)ctl ^ ((uint32_t)size << 8);
	size_t maxp = (ctl & 0x3f) + 1;
	for (size_t at = 0;;) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		at += 1 + x % maxp;
		if (at >= n)
			break;
		cuts[nc++] = at;
	}
	char *t = h1t_run(in, n, cuts, nc, &o);
	compare("random pieces", whole, t);
	free(t);
	/* the same pieces with a tiny scratch that grows when the parser asks */
	struct h1t_opts go = o;
	go.grow = 1;
	t = h1t_run(in, n, cuts, nc, &go);
	compare("random pieces, growing scratch", whole, t);
	free(t);
	if (n <= 2048) {
		nc = 0;
		for (size_t i = 1; i < n; i++)
			cuts[nc++] = i;
		t = h1t_run(in, n, cuts, nc, &o);
		compare("byte by byte", whole, t);
		free(t);
	}
	/* Round trip: what the serializer writes back from a message that
	 * parsed must parse to the same transcript. Inputs that end in an
	 * error or are cut off by a close are left out (the writer stops
	 * there); the re-parse uses default limits since CRLF may replace a
	 * bare LF and make the head a little longer. */
	if (!strstr(whole, "ERR ") && !strstr(whole, "CLOSED") && !strstr(whole, "HARNESS")) {
		size_t olen;
		char *out = h1t_reserialize(in, n, &o, ctl, &olen);
		struct h1t_opts ro = o;
		ro.cfg = NULL;
		t = h1t_run(out, olen, NULL, 0, &ro);
		compare("re-serialized", whole, t);
		free(t);
		free(out);
	}
	free(whole);
	free(cuts);
	return 0;
}
