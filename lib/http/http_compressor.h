/*
 * envoy.filters.http.compressor on the data path: a response compressed
 * with gzip (zlib), br (brotli) or zstd when the request's Accept-Encoding
 * and the response allow it, as Envoy decides it (docs/http.md,
 * "Response compression"). Stats, with Envoy's names:
 *   http.<stat_prefix>.compressor.<library name>.<gzip|brotli|zstd>.*
 * (compressed, not_compressed, total_uncompressed_bytes,
 * total_compressed_bytes and content_length_too_small under ".response."
 * when response_direction_config is set, as Envoy names them), plus
 * Arion's not_compressed_state_limit and reset_memory_limit (see below).
 *
 * A compressor's state is large (zlib: tens of KB; brotli and zstd:
 * hundreds of KB to MBs) and a client pins it for as long as it reads the
 * response slowly: each worker has at most HTTP_CMP_STATES_MAX states and
 * HTTP_CMP_MEM_MAX bytes for them (the libraries allocate through a
 * counting allocator). A response that would need a state past either is
 * sent uncompressed and counted (not_compressed_state_limit); a library
 * that runs out of the bytes mid-response (brotli and zstd allocate as
 * they go) resets the stream (reset_memory_limit). The output a stream
 * holds is one piece of chunk_size bytes: the next piece is made once the
 * client's codec took the last one (the codec contract's queued).
 *
 * Ownership: a stream's state is its worker's, from the response head
 * (encode_head_edits) to the stream's end (stream_end); the stats are a
 * pulled row table (lib/stats/arn_stats_rows.h) per worker.
 */
#ifndef ARN_HTTP_COMPRESSOR_H
#define ARN_HTTP_COMPRESSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct arn_cfg_gen;
struct http_worker;

/* Compressor states per worker: past them, responses go uncompressed. */
#define HTTP_CMP_STATES_MAX 256
/* The worker's bound on states in force: HTTP_CMP_STATES_MAX (a test
 * lowers it to reach it). */
extern unsigned http_cmp_states_max;
/* The largest output piece in force: a filter's chunk_size up to this
 * (65536, Envoy's maximum; a test lowers it to have a body slice fill
 * more than one piece). */
extern uint32_t http_cmp_chunk_cap;
/* Bytes of compressor state and output per worker (the libraries' own
 * allocations counted): past them, as above. */
#define HTTP_CMP_MEM_MAX (64u << 20)
/* Stats rows per worker (one per connection manager prefix and filter). */
#define HTTP_CMP_ROWS 128
/* Longest stat prefix and "<name>.<library>" kept in a row, bytes. */
#define HTTP_CMP_NAME_MAX 127

/* How Accept-Encoding decided (Envoy's header_* stats). */
enum http_cmp_hdr {
	HTTP_CMP_HDR_USED =
	    0, /* an encoding a filter offers: header_compressor_used/overshadowed */
	HTTP_CMP_HDR_IDENTITY,	/* identity won: header_identity */
	HTTP_CMP_HDR_WILDCARD,	/* "*" won: the first filter's encoding, header_wildcard */
	HTTP_CMP_HDR_NOT_VALID, /* nothing acceptable: header_not_valid */
};

/* An encoding a compressor filter offers, in chain order. */
struct http_cmp_offer {
	const char *enc; /* "gzip", "br", "zstd" */
	size_t len;
	bool choose_first;
};

/* One Accept-Encoding field value (a request may carry several). */
struct http_cmp_slice {
	const char *p;
	size_t len;
};

/**
 * Envoy's choice of encoding (CompressorFilter::chooseEncoding): the
 * encodings of the @p n offers (at most 32; the first offer of an
 * encoding counts) against the request's Accept-Encoding values @p ae
 * (@p n_ae of them, joined as one list): the highest q-value among the
 * offered, "identity" and "*", ties to the earlier token unless the later
 * is an offer with choose_first; "*" means the first offer not refused
 * with q=0. Encodings compare as Envoy compares them (case-sensitive).
 * @return the offer's index, or -1 (identity); @p stat says how.
 */
int http_cmp_choose(const struct http_cmp_offer *o, unsigned n, const struct http_cmp_slice *ae,
		    unsigned n_ae, enum http_cmp_hdr *stat);

/** Allocate @p w's tables. @return 0 or -ENOMEM. */
int http_cmp_worker_init(struct http_worker *w);
/** Free @p w's tables (every stream has ended). */
void http_cmp_worker_fini(struct http_worker *w);
/** Free @p w's stats rows that generation @p g (NULL: none) no longer has. */
void http_cmp_sweep(struct http_worker *w, const struct arn_cfg_gen *g);
/** Register / unregister the /stats pull (control lcore). */
void http_cmp_start(void);
void http_cmp_stop(void);

/** States in use and their bytes on worker @p w (tests, /stats). */
unsigned http_cmp_states(const struct http_worker *w);
size_t http_cmp_mem(const struct http_worker *w);

#endif
