/*
 * Test harness for the HTTP/1 parser: feeds an input cut into pieces and
 * writes a transcript of every event (heads with their headers and flags,
 * body bytes merged, END with trailers, errors by name). A correct parser
 * gives the same transcript however the input is cut, so tests and the
 * fuzz target compare transcripts across cuttings.
 */
#ifndef H1_HARNESS_H
#define H1_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "arn_h1.h"

enum h1t_alloc {
	H1T_GUARD = 0, /* each piece ends right before a PROT_NONE page */
	H1T_MALLOC,    /* each piece is its own malloc (for ASan) */
};

struct h1t_opts {
	enum arn_h1_kind kind;
	const struct arn_h1_config *cfg; /* NULL: defaults */
	enum arn_h1_method expect;	 /* responses: request method (0: GET) */
	uint16_t hdr_cap;		 /* 0: 128 */
	uint32_t scratch_cap;		 /* 0: max head bytes + 1 KiB */
	int eager_scratch;		 /* attach scratch before parsing, not on NEED_SCRATCH */
	int grow; /* start with a 24-byte scratch and grow into the large one when asked */
	enum h1t_alloc alloc;
	int no_trailers; /* answer NEED_TRAILERS with arn_h1_parser_no_trailers */
};

/**
 * Copy @p n bytes so that they end right before a PROT_NONE page; the
 * mapping is returned in *map / *maplen for munmap. NULL on failure.
 */
char *h1t_guarded(const char *src, size_t n, void **map, size_t *maplen);

/**
 * Parse @p in (@p n bytes) cut at the ascending offsets @p cuts[0..ncuts)
 * and return the transcript (malloc'ed, caller frees). After all input,
 * arn_h1_parse_eof is called. On a NEED_SCRATCH the harness attaches the
 * scratch and goes on, on a NEED_TRAILERS an array of max_headers (unless
 * no_trailers); after an upgrade WAIT it switches to tunnel mode.
 */
char *h1t_run(const char *in, size_t n, const size_t *cuts, size_t ncuts, const struct h1t_opts *o);

/** Whole, one byte at a time, and @p nrandom random cuttings (seeded):
 * @return NULL if all transcripts agree (and *whole gets the transcript,
 * caller frees), else a description of the first difference. */
char *h1t_all_splits(const char *in, size_t n, const struct h1t_opts *o, unsigned nrandom,
		     unsigned seed, char **whole);

/**
 * Parse @p in whole (options @p o) and write every message back with the
 * serializer: start line, headers unchanged, body raw or, when it was
 * chunked, re-chunked in pieces of 1..7 bytes (from @p seed) with the
 * trailers; writes go through 29-byte buffers refilled on demand. Stops at
 * the first error. @return the bytes written (malloc'ed; *outlen set).
 */
char *h1t_reserialize(const char *in, size_t n, const struct h1t_opts *o, unsigned seed,
		      size_t *outlen);

/**
 * For a head @p m flagged ARN_H1_F_FIELDS_WHOLE: abort() unless its lines
 * are "name: value" CRLF side by side, and arn_h1_write_headers writes the
 * same bytes with the flag as without it under a set of edit lists and
 * hop-by-hop flags (the flag's oracle: h1t_run and h1t_reserialize call
 * it on every head). Nothing for a head without the flag.
 */
void h1t_fields_whole_check(const struct arn_h1_msg *m);

#endif
