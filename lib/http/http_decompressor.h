/*
 * envoy.filters.http.decompressor on the data path: a response whose
 * Content-Encoding's outermost (last) coding is the filter's library's
 * (gzip, br or zstd) is inflated on its way to the client, as Envoy's
 * DecompressorFilter::encodeHeaders / encodeData (docs/http.md,
 * "Response decompression"). Stats, with Envoy's names:
 *   http.<stat_prefix>.decompressor.<name>.<gzip|brotli|zstd>.response.*
 * (decompressed, not_decompressed, total_compressed_bytes,
 * total_uncompressed_bytes), the library's
 *   ...decompressor_library.* (zlib_data_error, brotli_error,
 * zstd_generic_error, ...), plus Arion's response.not_decompressed_state_limit
 * and response.reset_memory_limit (see below).
 *
 * Hostile bodies: the output a stream holds is one piece of chunk_size
 * bytes, made once the client's codec took the last (the codec contract's
 * queued), so a slow client holds one piece and the upstream's flow
 * control the rest; the output may not outgrow max_inflate_ratio times the
 * compressed bytes taken (Envoy's bound, gzip's configurable, 100 for
 * brotli and zstd), and corrupt input, a body past that ratio or one that
 * ends before its compressed stream does resets the stream, counted in
 * the library's error stat. A decompressor's state (zlib: ~40 KB; brotli
 * and zstd: up to their windows, MBs) is pinned as long as the response
 * runs: each worker has at most HTTP_DCMP_STATES_MAX states and
 * HTTP_DCMP_MEM_MAX bytes for them (the libraries allocate through a
 * counting allocator); a response that would need more goes on compressed,
 * as it came (not_decompressed_state_limit); a library that runs out of the
 * bytes mid-body resets the stream (reset_memory_limit).
 *
 * Ownership: a stream's state is its worker's, from the response head
 * (encode_head_edits) to the stream's end (stream_end); the stats are a
 * pulled row table (lib/stats/arn_stats_rows.h) per worker.
 */
#ifndef ARN_HTTP_DECOMPRESSOR_H
#define ARN_HTTP_DECOMPRESSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct arn_cfg_gen;
struct arn_cfg_hcm;
struct arn_h1_edit;
struct http_stream;
struct http_worker;

/* Decompressor states per worker: past them, responses go as they came. */
#define HTTP_DCMP_STATES_MAX 256
/* The worker's bound in force (a test lowers it to reach it). */
extern unsigned http_dcmp_states_max;
/* The largest output piece in force: chunk_size up to this (a test lowers
 * it to have a body slice fill more than one piece). */
extern uint32_t http_dcmp_chunk_cap;
/* Bytes of decompressor state and output per worker. */
#define HTTP_DCMP_MEM_MAX (64u << 20)
/* Stats rows per worker (one per connection manager prefix and filter). */
#define HTTP_DCMP_ROWS 128
/* Longest stat prefix and "<name>.<library>" kept in a row, bytes. */
#define HTTP_DCMP_NAME_MAX 127

/**
 * The request edit of @p st's decompressor filters that advertise
 * (Envoy's decodeHeaders with advertise_accept_encoding and response
 * decompression enabled): Accept-Encoding as Envoy's
 * HeaderUtility::addEncodingToAcceptEncoding leaves it, each filter's
 * encoding in chain order, into @p e (at most @p cap; the value in the
 * stream's text). @return 0 or 1 edits, or -ENOSPC.
 */
int http_dcmp_req_edits(struct http_stream *st, struct arn_h1_edit *e, unsigned cap);

/**
 * Envoy's addEncodingToAcceptEncoding: the tokens of @p ae (@p n bytes)
 * whose coding (before ';', trimmed) is not @p enc, trimmed, joined with
 * ',', then @p enc; into @p out (@p cap bytes). @return its length, or -1
 * when it does not fit.
 */
int http_dcmp_accept_encoding(const char *ae, size_t n, const char *enc, char *out, size_t cap);

/** Allocate @p w's tables. @return 0 or -ENOMEM. */
int http_dcmp_worker_init(struct http_worker *w);
/** Free @p w's tables (every stream has ended). */
void http_dcmp_worker_fini(struct http_worker *w);
/** Free @p w's stats rows that generation @p g (NULL: none) no longer has. */
void http_dcmp_sweep(struct http_worker *w, const struct arn_cfg_gen *g);
/** Register / unregister the /stats pull (control lcore). */
void http_dcmp_start(void);
void http_dcmp_stop(void);

/** States in use and their bytes on worker @p w (tests, /stats). */
unsigned http_dcmp_states(const struct http_worker *w);
size_t http_dcmp_mem(const struct http_worker *w);

/**
 * The decompression of one body, without a stream (the fuzzer's and a
 * test's way in): library @p lib (enum arn_cfg_cmp_lib), window
 * @p gz_window, ratio @p max_ratio, output pieces of @p chunk bytes
 * handed to @p sink. @p in is fed in slices of @p slice bytes (0: whole).
 * @return 0 when the compressed stream ended, -EBADMSG (corrupt, past the
 * ratio, or cut short), -ENOMEM.
 */
int http_dcmp_run(uint8_t lib, uint8_t gz_window, uint32_t max_ratio, uint32_t chunk,
		  const uint8_t *in, size_t n, size_t slice,
		  void (*sink)(void *arg, const uint8_t *p, size_t n), void *arg);

#endif
