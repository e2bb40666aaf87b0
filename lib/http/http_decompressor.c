/*
 * Response decompression (envoy.filters.http.decompressor): see
 * http_decompressor.h. Envoy's decision (extensions/filters/http/
 * decompressor/decompressor_filter.h, maybeInitDecompress) is made here at
 * the response head for the manager's decompressor filters, in the order
 * Envoy's encoder filters see it (the last in the chain first); the body
 * then goes through the chosen library as Envoy's decompressors run it
 * (ZlibDecompressorImpl: inflate with Z_NO_FLUSH; BrotliDecompressorImpl;
 * ZstdDecompressorImpl), one output piece at a time.
 */
#include "http_decompressor.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <brotli/decode.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_createDCtx_advanced, ZSTD_estimateDCtxSize */
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "arn_config.h"
#include "arn_stats.h"
#include "arn_stats_rows.h"
#include "http_filter.h"
#include "http_hcm_rows.h"
#include "http_int.h"
#include "http_local.h"
#include "http_stream.h"
#include "http_worker.h"
#include "http_zmem.h"

/* ---- stats ----------------------------------------------------------------------------------- */

enum {
	/* Envoy's direction stats (DecompressorStats) and Arion's two, the
	 * request's then the response's (S_RESP + k) */
	S_DECOMPRESSED = 0,
	S_NOT_DECOMPRESSED,
	S_TOTAL_COMPRESSED,
	S_TOTAL_UNCOMPRESSED,
	S_STATE_LIMIT,
	S_RESET_MEMORY,
	S_RESP = 6,
	/* the library's (Envoy's ZlibDecompressorStats, ...): S_LIB + k */
	S_LIB = 12,
	S_COUNT = S_LIB + 6,
};

static const char *const dir_names[S_RESP] = {
    "decompressed",
    "not_decompressed",
    "total_compressed_bytes",
    "total_uncompressed_bytes",
    "not_decompressed_state_limit",
    "reset_memory_limit",
};

/* Envoy's library stats, by enum arn_cfg_cmp_lib */
enum { Z_ERRNO_S = 0, Z_STREAM_S, Z_DATA_S, Z_MEM_S, Z_BUF_S, Z_VERSION_S };
enum { BR_ERROR_S = 0 };
enum { ZS_GENERIC_S = 0, ZS_MEMORY_S, ZS_DICT_S, ZS_CHECKSUM_S };
static const char *const lib_stats[3][6] = {
    {"zlib_errno", "zlib_stream_error", "zlib_data_error", "zlib_mem_error", "zlib_buf_error",
     "zlib_version_error"},
    {"brotli_error"},
    {"zstd_generic_error", "zstd_memory_error", "zstd_dictionary_error",
     "zstd_checksum_wrong_error"},
};

static const char *const lib_stat[] = {"gzip", "brotli", "zstd"};
static const char *const lib_enc[] = {"gzip", "br", "zstd"};
static const size_t lib_enc_len[] = {4, 2, 4};

static void emit(struct arn_stats_emitter *e, const char *a, const char *b, size_t bn,
		 const uint64_t *sum, const struct arn_stats_hist *h, void *arg);

/* rows keyed (connection manager's stat_prefix, "<lib index><name>.<library>") */
static struct arn_stats_rows rows = {.def = {
					 .family = "decompressor",
					 .n_counters = S_COUNT,
					 .max_keyed = HTTP_DCMP_ROWS,
					 .max_bare = 1,
					 .name_max = HTTP_DCMP_NAME_MAX,
					 .emit = emit,
				     }};

static void emit(struct arn_stats_emitter *e, const char *a, const char *b, size_t bn,
		 const uint64_t *sum, const struct arn_stats_hist *h, void *arg)
{
	(void)h;
	(void)arg;
	if (bn < 2 || b[0] < '0' || b[0] > '2')
		return;
	unsigned lib = (unsigned)(b[0] - '0');
	char stat[2 * HTTP_DCMP_NAME_MAX + 64];
	for (unsigned k = 0; k < 2 * S_RESP; k++) {
		snprintf(stat, sizeof(stat), "decompressor.%s.%s%s", b + 1,
			 k < S_RESP ? "request." : "response.", dir_names[k % S_RESP]);
		arn_stats_emit(e, ARN_STAT_COUNTER, "http", ARN_STATS_TAG_HCM, a, stat,
			       (int64_t)sum[k]);
	}
	for (unsigned k = 0; k < 6 && lib_stats[lib][k]; k++) {
		snprintf(stat, sizeof(stat), "decompressor.%s.decompressor_library.%s", b + 1,
			 lib_stats[lib][k]);
		arn_stats_emit(e, ARN_STAT_COUNTER, "http", ARN_STATS_TAG_HCM, a, stat,
			       (int64_t)sum[S_LIB + k]);
	}
}

/* The row key of filter @p f into @p b. @return its length, or -1. */
static int row_key(const struct arn_cfg_decompressor *f, char *b, size_t cap)
{
	int k = snprintf(b, cap, "%c%s.%s", '0' + f->lib, f->name ? f->name : "", lib_stat[f->lib]);
	return k > 0 && (size_t)k < cap ? k : -1;
}

/* The row of filter @p f of manager @p h on worker @p w, or NULL. */
static uint64_t *row_of(struct http_worker *w, const struct arn_cfg_hcm *h,
			const struct arn_cfg_decompressor *f)
{
	struct arn_stats_rows_table *t = arn_stats_rows_get(&rows, w->idx);
	if (!t || !h->stat_prefix)
		return NULL;
	char b[HTTP_DCMP_NAME_MAX + 1];
	int k = row_key(f, b, sizeof(b));
	uint64_t *c = NULL;
	if (k > 0)
		c = arn_stats_rows_find(t, h->stat_prefix, strlen(h->stat_prefix), b, (size_t)k);
	if (!c)
		arn_stats_rows_overflow(t);
	return c;
}

static inline void inc(uint64_t *row, unsigned k, uint64_t v)
{
	if (row)
		arn_stats_rows_add(&row[k], v);
}

/* ---- per worker: states and their memory ---------------------------------------------------- */

struct dcmp_worker {
	struct http_zmem zm; /* its states' bytes (http_zmem.h) */
	unsigned states; /* streams with a struct http_dcmp */
	struct http_dcmp *free;
	unsigned n_free;
	bool init;
};

/* A stream's decompressor. */
struct http_dcmp {
	struct http_dcmp *next; /* the worker's free list */
	struct dcmp_worker *dw;
	uint64_t *row;
	uint8_t lib;
	bool live;	 /* the library's state is made */
	bool finished;	 /* the compressed stream ended (what follows is dropped, as Envoy) */
	bool frame_open; /* zstd: a frame is begun and not ended */
	bool end;	 /* the input is the body's last */
	bool done;	 /* nothing more goes out (ended or failed) */
	bool req;	 /* the request's (res->dcmp), not the response's */
	/* the request: Content-Encoding's codings left (in the stream's
	 * text), rest_len 0: none */
	const char *rest;
	uint32_t rest_len;
	uint32_t ratio;
	uint64_t in_total, out_total;
	const uint8_t *in; /* input not taken yet */
	size_t in_len;
	uint8_t *out; /* out_cap bytes: the piece lent to the client's codec */
	uint32_t out_cap;
	union {
		z_stream z;
		BrotliDecoderState *br;
		ZSTD_DCtx *zs;
	} u;
};

/* A few freed states (with their output buffers) are kept for the next
 * streams; the libraries' states are not (they are made per stream). */
#define DCMP_FREE_KEEP 8

static struct dcmp_worker workers[ARN_STATS_MAX_WORKERS];
unsigned http_dcmp_states_max = HTTP_DCMP_STATES_MAX;
uint32_t http_dcmp_chunk_cap = 65536;

static struct dcmp_worker *dw_of(const struct http_worker *w)
{
	return w && w->idx < ARN_STATS_MAX_WORKERS && workers[w->idx].init ? &workers[w->idx]
									   : NULL;
}

int http_dcmp_worker_init(struct http_worker *w)
{
	if (w->idx < ARN_STATS_MAX_WORKERS)
		workers[w->idx] =
		    (struct dcmp_worker){.zm = {.max = HTTP_DCMP_MEM_MAX}, .init = true};
	return arn_stats_rows_worker_init(&rows, w->idx);
}

static void free_list_drop(struct dcmp_worker *dw)
{
	for (struct http_dcmp *z = dw->free, *nx; z; z = nx) {
		nx = z->next;
		http_zmem_free(&dw->zm, z->out);
		http_zmem_free(&dw->zm, z);
	}
	dw->free = NULL;
	dw->n_free = 0;
}

void http_dcmp_worker_fini(struct http_worker *w)
{
	struct dcmp_worker *dw = dw_of(w);
	if (dw) {
		free_list_drop(dw);
		*dw = (struct dcmp_worker){0};
	}
	arn_stats_rows_worker_fini(&rows, w->idx);
}

unsigned http_dcmp_states(const struct http_worker *w)
{
	const struct dcmp_worker *dw = dw_of(w);
	return dw ? dw->states : 0;
}

size_t http_dcmp_mem(const struct http_worker *w)
{
	const struct dcmp_worker *dw = dw_of(w);
	return dw ? dw->zm.mem : 0;
}

/* What a state of library @p lib takes at its start, about: admitted only
 * when it fits (brotli's ring buffer and zstd's window grow with the
 * body's own window, counted as they come). */
static size_t estimate(uint8_t lib, uint8_t window, uint32_t chunk)
{
	switch (lib) {
	case ARN_CFG_CMP_GZIP:
		return ((size_t)1 << window) + 8192 + chunk;
	case ARN_CFG_CMP_BROTLI:
		return (1u << 16) + chunk;
	default:
		return ZSTD_estimateDCtxSize() + chunk;
	}
}

static void lib_free(struct http_dcmp *z)
{
	if (!z->live)
		return;
	z->live = false;
	switch (z->lib) {
	case ARN_CFG_CMP_GZIP:
		inflateEnd(&z->u.z);
		break;
	case ARN_CFG_CMP_BROTLI:
		BrotliDecoderDestroyInstance(z->u.br);
		break;
	default:
		ZSTD_freeDCtx(z->u.zs);
		break;
	}
}

/* The library's state. @return 0, or -ENOMEM. */
static int lib_make(struct http_dcmp *z, uint8_t lib, uint8_t window, bool no_realloc)
{
	struct dcmp_worker *dw = z->dw;
	z->lib = lib;
	switch (lib) {
	case ARN_CFG_CMP_GZIP:
		memset(&z->u.z, 0, sizeof(z->u.z));
		z->u.z.zalloc = http_zmem_zalloc;
		z->u.z.zfree = http_zmem_zfree;
		z->u.z.opaque = &dw->zm;
		/* window_bits | 16: the gzip header and trailer, as Envoy's
		 * GzipDecompressorFactory */
		if (inflateInit2(&z->u.z, window | 16) != Z_OK)
			return -ENOMEM;
		break;
	case ARN_CFG_CMP_BROTLI: {
		BrotliDecoderState *b =
		    BrotliDecoderCreateInstance(http_zmem_alloc, http_zmem_free, &dw->zm);
		if (!b)
			return -ENOMEM;
		BrotliDecoderSetParameter(b, BROTLI_DECODER_PARAM_DISABLE_RING_BUFFER_REALLOCATION,
					  no_realloc ? 1 : 0);
		z->u.br = b;
		break;
	}
	default: {
		ZSTD_customMem cm = {http_zmem_alloc, http_zmem_free, &dw->zm};
		ZSTD_DCtx *c = ZSTD_createDCtx_advanced(cm);
		if (!c)
			return -ENOMEM;
		z->u.zs = c;
		break;
	}
	}
	z->live = true;
	return 0;
}

/* A state on worker @p dw, or NULL when the worker's bounds say no. */
static struct http_dcmp *state_take(struct dcmp_worker *dw, uint8_t lib, uint8_t window,
				    bool no_realloc, uint32_t chunk_size, uint32_t ratio)
{
	uint32_t chunk = chunk_size < http_dcmp_chunk_cap ? chunk_size : http_dcmp_chunk_cap;
	if (dw->states >= http_dcmp_states_max ||
	    dw->zm.mem + estimate(lib, window, chunk) > HTTP_DCMP_MEM_MAX)
		return NULL;
	struct http_dcmp *z = dw->free;
	if (z && z->out_cap >= chunk) {
		dw->free = z->next;
		dw->n_free--;
	} else {
		z = http_zmem_alloc(&dw->zm, sizeof(*z));
		if (!z)
			return NULL;
		memset(z, 0, sizeof(*z));
		z->out = http_zmem_alloc(&dw->zm, chunk);
		if (!z->out) {
			http_zmem_free(&dw->zm, z);
			return NULL;
		}
		z->out_cap = chunk;
	}
	z->dw = dw;
	z->row = NULL;
	z->live = z->finished = z->frame_open = z->end = z->done = false;
	z->ratio = ratio;
	z->req = false;
	z->rest = NULL;
	z->rest_len = 0;
	z->in_total = z->out_total = 0;
	z->in = NULL;
	z->in_len = 0;
	/* a kept piece larger than this filter's: its own size is used */
	z->out_cap = z->out_cap < chunk ? z->out_cap : chunk;
	if (lib_make(z, lib, window, no_realloc) != 0) {
		z->next = dw->free;
		dw->free = z;
		dw->n_free++;
		return NULL;
	}
	dw->states++;
	return z;
}

static void state_put(struct http_dcmp *z)
{
	struct dcmp_worker *dw = z->dw;
	lib_free(z);
	dw->states--;
	if (dw->n_free < DCMP_FREE_KEEP) {
		z->next = dw->free;
		dw->free = z;
		dw->n_free++;
		return;
	}
	http_zmem_free(&dw->zm, z->out);
	http_zmem_free(&dw->zm, z);
}

/* ---- the body ---------------------------------------------------------------------------------
 */

/* Why a body could not be decompressed: the library's stat (S_LIB + k),
 * or -1 for the worker's memory (reset_memory_limit). */
struct dc_err {
	int stat;
};

/*
 * Decompress the pending input into the output piece. @return 1 when the
 * input is taken (or dropped: it follows the compressed stream's end) and
 * the library holds no output back, 0 when the piece is full first, -1
 * when the body cannot be decompressed (@p err says why). *@p made: the
 * piece's bytes.
 */
static int lib_step(struct http_dcmp *z, size_t *made, struct dc_err *err)
{
	*made = 0;
	if (z->finished) {
		/* Envoy's decompressors stop at the stream's end */
		z->in_len = 0;
		return 1;
	}
	size_t in0 = z->in_len;
	int r;
	switch (z->lib) {
	case ARN_CFG_CMP_GZIP: {
		z_stream *s = &z->u.z;
		s->next_in = (Bytef *)(uintptr_t)z->in;
		s->avail_in = (uInt)(z->in_len > UINT32_MAX ? UINT32_MAX : z->in_len);
		size_t rest = z->in_len - s->avail_in;
		s->next_out = z->out;
		s->avail_out = z->out_cap;
		int rc = inflate(s, Z_NO_FLUSH);
		*made = z->out_cap - s->avail_out;
		z->in = (const uint8_t *)s->next_in;
		z->in_len = s->avail_in + rest;
		if (rc == Z_STREAM_END) {
			z->finished = true;
			z->in_len = 0;
			r = 1;
		} else if (rc == Z_OK || rc == Z_BUF_ERROR) {
			r = s->avail_out == 0 ? 0 : z->in_len == 0 ? 1 : 0;
			if (rc == Z_BUF_ERROR && s->avail_out && z->in_len) {
				err->stat =
				    S_LIB + Z_BUF_S; /* (cannot be: no progress with room) */
				return -1;
			}
		} else {
			/* Envoy's chargeErrorStats */
			err->stat = rc == Z_MEM_ERROR	   ? -1
				    : rc == Z_STREAM_ERROR ? S_LIB + Z_STREAM_S
				    : rc == Z_ERRNO	   ? S_LIB + Z_ERRNO_S
				    : rc == Z_VERSION_ERROR
					? S_LIB + Z_VERSION_S
					: S_LIB + Z_DATA_S; /* and Z_NEED_DICT */
			return -1;
		}
		break;
	}
	case ARN_CFG_CMP_BROTLI: {
		size_t ai = z->in_len, ao = z->out_cap;
		const uint8_t *ni = z->in;
		uint8_t *no = z->out;
		BrotliDecoderResult rc =
		    BrotliDecoderDecompressStream(z->u.br, &ai, &ni, &ao, &no, NULL);
		*made = z->out_cap - ao;
		z->in = ni;
		z->in_len = ai;
		if (rc == BROTLI_DECODER_RESULT_ERROR) {
			/* its allocation errors are BROTLI_DECODER_ERROR_ALLOC_* */
			int code = (int)BrotliDecoderGetErrorCode(z->u.br);
			err->stat = code <= -21 && code >= -30 ? -1 : S_LIB + BR_ERROR_S;
			return -1;
		}
		if (rc == BROTLI_DECODER_RESULT_SUCCESS) {
			z->finished = true;
			z->in_len = 0;
			r = 1;
		} else {
			r = rc == BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT ? 0 : 1;
		}
		break;
	}
	default: {
		if (!z->in_len && !z->frame_open)
			return 1; /* (a call would begin a frame: zstd's hint, not 0) */
		ZSTD_inBuffer ib = {z->in, z->in_len, 0};
		ZSTD_outBuffer ob = {z->out, z->out_cap, 0};
		size_t rc = 0;
		/* one call per frame: a frame's end returns with input left */
		while (ob.pos < ob.size) {
			size_t before = ib.pos;
			rc = ZSTD_decompressStream(z->u.zs, &ob, &ib);
			if (ZSTD_isError(rc))
				break;
			z->frame_open = rc != 0;
			if (ib.pos == ib.size || ib.pos == before)
				break;
		}
		*made = ob.pos;
		z->in += ib.pos;
		z->in_len -= ib.pos;
		if (ZSTD_isError(rc)) {
			/* Envoy's ZstdDecompressorImpl::isError */
			switch (ZSTD_getErrorCode(rc)) {
			case ZSTD_error_memory_allocation:
				err->stat = -1;
				break;
			case ZSTD_error_dictionary_corrupted:
			case ZSTD_error_dictionary_wrong:
				err->stat = S_LIB + ZS_DICT_S;
				break;
			case ZSTD_error_checksum_wrong:
				err->stat = S_LIB + ZS_CHECKSUM_S;
				break;
			default:
				err->stat = S_LIB + ZS_GENERIC_S;
				break;
			}
			return -1;
		}
		/* the piece full: zstd may hold more of the frame back */
		r = ob.pos == ob.size ? 0 : z->in_len == 0 ? 1 : 0;
		break;
	}
	}
	if (r == 0 && !*made && in0 == z->in_len) {
		/* neither taken nor made with room for both: never spin on
		 * it (no library is known to; the fuzzer would hang) */
		err->stat = S_LIB + (z->lib == ARN_CFG_CMP_GZIP	    ? Z_BUF_S
				     : z->lib == ARN_CFG_CMP_BROTLI ? BR_ERROR_S
								    : ZS_GENERIC_S);
		return -1;
	}
	z->in_total += in0 - z->in_len;
	z->out_total += *made;
	/* Envoy's compression bomb protection: the output no more than
	 * max_inflate_ratio times the input taken so far (its error stat) */
	if (z->out_total > (uint64_t)z->ratio * z->in_total) {
		err->stat = S_LIB + (z->lib == ARN_CFG_CMP_GZIP	    ? Z_DATA_S
				     : z->lib == ARN_CFG_CMP_BROTLI ? BR_ERROR_S
								    : ZS_GENERIC_S);
		*made = 0;
		return -1;
	}
	return r;
}

/* The body ended: did its compressed stream (an empty body has none)? */
static bool stream_whole(const struct http_dcmp *z)
{
	if (!z->in_total)
		return true;
	return z->lib == ARN_CFG_CMP_ZSTD ? !z->frame_open : z->finished;
}

/* The response cannot go on (corrupt, a bomb, cut short, or out of the
 * worker's bytes): the stream is reset, the error counted. Envoy passes
 * what it decompressed and drops the rest, which a client cannot tell
 * from a whole body once Content-Length is gone; a reset it can. */
static void body_fail(struct http_stream *st, struct http_dcmp *z, const struct dc_err *err)
{
	inc(z->row, err->stat < 0 ? S_RESP + S_RESET_MEMORY : (unsigned)err->stat, 1);
	z->in_len = 0;
	z->done = true;
	st->flags |= ARN_RF_BIT(LOCAL_RESET);
	http_conn_abort(st->hc);
}

/* Make one piece from what is pending and hand it to the client's codec.
 * @return true when nothing is left pending. */
static bool pump(struct http_stream *st)
{
	struct http_dcmp *z = st->enc_state;
	if (z->done)
		return true;
	size_t made;
	struct dc_err err = {0};
	int rc = lib_step(z, &made, &err);
	if (rc < 0) {
		body_fail(st, z, &err);
		return true;
	}
	if (made) {
		struct http_peer *dn = st->hc->dn;
		inc(z->row, S_RESP + S_TOTAL_UNCOMPRESSED, made);
		st->tx_body += made;
		dn->codec->encode_body(dn, (const char *)z->out, made);
	}
	if (rc == 1 && z->end) {
		if (!stream_whole(z)) {
			err.stat = S_LIB + (z->lib == ARN_CFG_CMP_GZIP	   ? Z_DATA_S
					    : z->lib == ARN_CFG_CMP_BROTLI ? BR_ERROR_S
									   : ZS_GENERIC_S);
			body_fail(st, z, &err);
			return true;
		}
		z->done = true;
	}
	return rc == 1;
}

static bool dcmp_encode_body(struct http_stream *st, const char *data, size_t len, bool end)
{
	static const uint8_t none[1];
	struct http_dcmp *z = st->enc_state;
	if (z->done)
		return true;
	z->in = data ? (const uint8_t *)data : none; /* (no library reads it: 0 bytes) */
	z->in_len = len;
	z->end = end;
	inc(z->row, S_RESP + S_TOTAL_COMPRESSED, len);
	return pump(st);
}

static bool dcmp_encode_more(struct http_stream *st)
{
	return pump(st);
}

static void dcmp_stream_end(struct http_stream *st)
{
	if (st->res && st->res->dcmp) {
		state_put(st->res->dcmp);
		st->res->dcmp = NULL;
	}
	if (!(st->state & HTTP_S_ENC_BODY) || st->enc != &http_decompressor_filter_ops)
		return;
	state_put(st->enc_state);
	st->enc_state = NULL;
}

/* ---- without a stream (the fuzzer, tests) ---------------------------------------------------- */

int http_dcmp_run(uint8_t lib, uint8_t gz_window, uint32_t max_ratio, uint32_t chunk,
		  const uint8_t *in, size_t n, size_t slice,
		  void (*sink)(void *arg, const uint8_t *p, size_t n), void *arg)
{
	struct dcmp_worker dw = {.zm = {.max = HTTP_DCMP_MEM_MAX}, .init = true};
	uint32_t cap = http_dcmp_chunk_cap;
	http_dcmp_chunk_cap = chunk;
	struct http_dcmp *z = state_take(&dw, lib, gz_window, false, chunk, max_ratio);
	http_dcmp_chunk_cap = cap;
	if (!z)
		return -ENOMEM;
	int ret = 0;
	size_t off = 0;
	/* the slices, then the end without bytes: as a stream's body comes */
	for (bool last = false; !last;) {
		size_t k = slice && n - off > slice ? slice : n - off;
		last = !k;
		z->in = k ? in + off : (const uint8_t *)"";
		z->in_len = k;
		off += k;
		z->end = last;
		for (;;) {
			size_t made;
			struct dc_err err = {0};
			int rc = lib_step(z, &made, &err);
			if (rc < 0) {
				ret = err.stat < 0 ? -ENOMEM : -EBADMSG;
				goto out;
			}
			if (made && sink)
				sink(arg, z->out, made);
			if (rc == 1)
				break;
		}
	}
	if (!stream_whole(z))
		ret = -EBADMSG;
out:
	state_put(z);
	free_list_drop(&dw);
	return ret;
}

/* ---- the response head: Envoy's maybeInitDecompress for each filter ---------------------------
 */

static bool ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static void trim(const char **p, size_t *n)
{
	while (*n && ws(**p)) {
		(*p)++;
		(*n)--;
	}
	while (*n && ws((*p)[*n - 1]))
		(*n)--;
}

/* Does the ','-list @p v (@p n bytes) have token @p tok (trimmed, any
 * case)? Envoy's StringUtil::caseFindToken. */
static bool has_token(const char *v, size_t n, const char *tok, size_t tn)
{
	const char *p = v, *end = v + n;
	for (;;) {
		const char *c = memchr(p, ',', (size_t)(end - p));
		const char *te = c ? c : end;
		const char *t = p;
		size_t k = (size_t)(te - p);
		trim(&t, &k);
		if (arn_h1_eq_nocase(t, k, tok, tn))
			return true;
		if (!c)
			return false;
		p = c + 1;
	}
}

/* The message's Content-Encoding, its values joined with ',' as Envoy's
 * header map joins an inline header's, into @p buf (@p cap bytes).
 * @return its length, 0 without one, -1 when it does not fit. */
static int ce_joined(const struct arn_h1_msg *m, char *buf, size_t cap)
{
	size_t k = 0;
	bool any = false;
	for (int i = 0; i < m->n_hdrs; i++) {
		const struct arn_h1_header *x = &m->hdrs[i];
		if (!arn_h1_eq_nocase(x->name, x->name_len, "content-encoding", 16))
			continue;
		if (k + (any ? 1u : 0u) + x->value_len > cap)
			return -1;
		if (any)
			buf[k++] = ',';
		memcpy(buf + k, x->value, x->value_len);
		k += x->value_len;
		any = true;
	}
	return (int)k;
}

/* The outermost (last) coding of the joined Content-Encoding @p v
 * (@p n bytes): *@p coding, and the codings before it (*@p rest,
 * trimmed: empty when it was the only one). */
static void ce_split(const char *v, size_t n, const char **coding, size_t *cn, const char **rest,
		     size_t *rn)
{
	trim(&v, &n);
	const char *c = n ? memrchr(v, ',', n) : NULL;
	if (!c) {
		*coding = v;
		*cn = n;
		*rest = v;
		*rn = 0;
		return;
	}
	*coding = c + 1;
	*cn = (size_t)(v + n - (c + 1));
	trim(coding, cn);
	*rest = v;
	*rn = (size_t)(c - v);
	trim(rest, rn);
}

/* Cache-Control: no-transform, in any of its lines. */
static bool no_transform(const struct arn_h1_msg *m)
{
	for (int i = 0; i < m->n_hdrs; i++) {
		const struct arn_h1_header *x = &m->hdrs[i];
		if (arn_h1_eq_nocase(x->name, x->name_len, "cache-control", 13) &&
		    has_token(x->value, x->value_len, "no-transform", 12))
			return true;
	}
	return false;
}

static int dcmp_edits(struct http_stream *st, struct arn_h1_edit *e, unsigned cap)
{
	struct http_conn *hc = st->hc;
	const struct arn_cfg_hcm *h = hc->hcm;
	if (!h || !h->n_decompressors || !st->up || !st->res ||
	    (st->state & (HTTP_S_LOCAL | HTTP_S_TUNNEL)))
		return 0;
	struct arn_h1_msg *m = &st->resp.m;
	/* Envoy's end_stream: a response without a body is not looked at
	 * (nor counted) */
	if ((m->flags & ARN_H1_F_NO_BODY) || st->method == ARN_H1_M_HEAD || m->status == 204 ||
	    m->status == 304 || m->status < 200 ||
	    ((m->flags & ARN_H1_F_CONTENT_LENGTH) && !m->content_length))
		return 0;
	/* the joined value, in the stream's text: what the edit keeps of it
	 * is a slice of it */
	uint32_t at = st->text_len;
	char *v = st->res->text + at;
	int vl = ce_joined(m, v, HTTP_TEXT - at);
	const char *coding = NULL, *rest = NULL;
	size_t cn = 0, rn = 0;
	if (vl > 0)
		ce_split(v, (size_t)vl, &coding, &cn, &rest, &rn);
	bool nt = no_transform(m);
	struct http_worker *w = hc->w;
	/* a filter before this one took the body (grpc_web's): one body
	 * transformation per response, so none here */
	bool taken = st->state & HTTP_S_ENC_BODY;
	int chosen = -1;
	uint64_t *chosen_row = NULL;
	/* Envoy's encoder filters see the head last filter first; the
	 * first that matches removes its coding, and Arion runs one library
	 * per response: the others count it not decompressed */
	for (int i = (int)h->n_decompressors - 1; i >= 0; i--) {
		const struct arn_cfg_decompressor *f = &h->decompressors[i];
		uint64_t *row = row_of(w, h, f);
		bool ok = !taken && chosen < 0 && f->resp_enabled && (!nt || f->resp_ignore_nt) &&
			  cn && arn_h1_eq_nocase(coding, cn, lib_enc[f->lib], lib_enc_len[f->lib]);
		if (ok) {
			chosen = i;
			chosen_row = row;
		} else {
			inc(row, S_RESP + S_NOT_DECOMPRESSED, 1);
		}
	}
	if (chosen < 0)
		return 0;
	const struct arn_cfg_decompressor *f = &h->decompressors[chosen];
	struct dcmp_worker *dw = dw_of(w);
	struct http_dcmp *z =
	    dw ? state_take(dw, f->lib, f->gz_window, f->br_no_realloc, f->chunk_size, f->max_ratio)
	       : NULL;
	if (!z) {
		/* the worker's bound: the response goes as it came */
		inc(chosen_row, S_RESP + S_STATE_LIMIT, 1);
		inc(chosen_row, S_RESP + S_NOT_DECOMPRESSED, 1);
		return 0;
	}
	if (cap < 2) {
		state_put(z);
		return -ENOSPC;
	}
	z->row = chosen_row;
	inc(chosen_row, S_RESP + S_DECOMPRESSED, 1);
	unsigned k = 0;
	/* Envoy's modifyContentEncoding: the codings left, or none */
	if (rn) {
		st->text_len = at + (uint32_t)vl;
		e[k++] = (struct arn_h1_edit){.name = "content-encoding",
					      .name_len = 16,
					      .value = rest,
					      .value_len = (uint32_t)rn,
					      .op = ARN_H1_EDIT_SET};
	} else {
		e[k++] = (struct arn_h1_edit){
		    .name = "content-encoding", .name_len = 16, .op = ARN_H1_EDIT_REMOVE};
	}
	e[k++] = (struct arn_h1_edit){
	    .name = "content-length", .name_len = 14, .op = ARN_H1_EDIT_REMOVE};
	st->enc = &http_decompressor_filter_ops;
	st->enc_state = z;
	st->state |= HTTP_S_ENC_BODY;
	/* the body's length is not known ahead: the client's codec frames it
	 * so (HTTP/1.1 chunked, HTTP/1.0 to the close); the upstream's
	 * decoder keeps its own count */
	m->flags &= ~ARN_H1_F_CONTENT_LENGTH;
	return (int)k;
}

/* ---- the request: Accept-Encoding advertised ------------------------------------------------- */

int http_dcmp_accept_encoding(const char *ae, size_t n, const char *enc, char *out, size_t cap)
{
	size_t k = 0, en = strlen(enc);
	const char *p = ae, *end = ae + n;
	while (p < end) {
		const char *c = memchr(p, ',', (size_t)(end - p));
		const char *te = c ? c : end;
		const char *t = p;
		size_t tl = (size_t)(te - p);
		trim(&t, &tl);
		p = c ? c + 1 : end;
		if (!tl)
			continue;
		/* getSemicolonDelimitedAttribute, compared as Envoy (case
		 * and all) */
		const char *semi = memchr(t, ';', tl);
		const char *a = t;
		size_t al = semi ? (size_t)(semi - t) : tl;
		trim(&a, &al);
		if (al == en && memcmp(a, enc, en) == 0)
			continue;
		if (k + tl + 1 > cap)
			return -1;
		memcpy(out + k, t, tl);
		k += tl;
		out[k++] = ',';
	}
	if (k + en > cap)
		return -1;
	memcpy(out + k, enc, en);
	return (int)(k + en);
}

int http_dcmp_req_edits(struct http_stream *st, struct arn_h1_edit *e, unsigned cap)
{
	const struct arn_cfg_hcm *h = st->hc->hcm;
	if (!h || !h->n_decompressors || !st->res)
		return 0;
	unsigned k = 0;
	const struct http_dcmp *z = st->res->dcmp;
	if (z) {
		/* the request is decompressed: Envoy's modifyContentEncoding
		 * and removeContentLength */
		if (cap < 2)
			return -ENOSPC;
		if (z->rest_len)
			e[k++] = (struct arn_h1_edit){.name = "content-encoding",
						      .name_len = 16,
						      .value = z->rest,
						      .value_len = z->rest_len,
						      .op = ARN_H1_EDIT_SET};
		else
			e[k++] = (struct arn_h1_edit){
			    .name = "content-encoding", .name_len = 16, .op = ARN_H1_EDIT_REMOVE};
		e[k++] = (struct arn_h1_edit){
		    .name = "content-length", .name_len = 14, .op = ARN_H1_EDIT_REMOVE};
	}
	/* a compressor filter removes Accept-Encoding (Envoy's, before a
	 * decompressor in the chain, has the last word): nothing to add to */
	if (h->n_compressors && arn_cfg_cmp_strip_accept_encoding(h, st->rt, st->vhost, st->route))
		return (int)k;
	bool any = false;
	for (size_t i = 0; i < h->n_decompressors && !any; i++)
		any = h->decompressors[i].resp_enabled && h->decompressors[i].advertise;
	if (!any)
		return (int)k;
	if (k >= cap)
		return -ENOSPC;
	/* two halves of the text left: the value so far, and the next */
	uint32_t at = st->text_len;
	size_t room = (HTTP_TEXT - at) / 2;
	char *a = st->res->text + at, *b = a + room;
	const struct arn_h1_msg *m = &st->req.m;
	int n = 0;
	bool first = true;
	for (int i = 0; i < m->n_hdrs; i++) {
		const struct arn_h1_header *x = &m->hdrs[i];
		if (!arn_h1_eq_nocase(x->name, x->name_len, "accept-encoding", 15))
			continue;
		if ((size_t)n + 1 + x->value_len > room)
			return -ENOSPC;
		if (!first)
			a[n++] = ',';
		memcpy(a + n, x->value, x->value_len);
		n += (int)x->value_len;
		first = false;
	}
	for (size_t i = 0; i < h->n_decompressors; i++) {
		const struct arn_cfg_decompressor *f = &h->decompressors[i];
		if (!f->resp_enabled || !f->advertise)
			continue;
		int r = http_dcmp_accept_encoding(a, (size_t)n, lib_enc[f->lib], b, room);
		if (r < 0)
			return -ENOSPC;
		memcpy(a, b, (size_t)r);
		n = r;
	}
	st->text_len = at + (uint32_t)n;
	e[k++] = (struct arn_h1_edit){.name = "accept-encoding",
				      .name_len = 15,
				      .value = a,
				      .value_len = (uint32_t)n,
				      .op = ARN_H1_EDIT_SET};
	return (int)k;
}

/* Envoy's decodeHeaders for a request with a body (end_stream false):
 * maybeInitDecompress with the request direction's configuration, the
 * decoder filters in chain order (the first that matches takes it; Arion
 * runs one library per request: the others count it not decompressed).
 * The body then goes through decode_xform on its way upstream. */
static bool dcmp_decode_head(struct http_stream *st, const struct arn_cfg_gen *g,
			     const struct arn_cfg_route_table *rt,
			     const struct arn_cfg_request *req)
{
	(void)g;
	(void)rt;
	(void)req;
	struct http_conn *hc = st->hc;
	const struct arn_cfg_hcm *h = hc->hcm;
	struct arn_h1_msg *m = &st->req.m;
	if (!h || !h->n_decompressors || !st->res || !http_msg_has_body(m))
		return false;
	/* a filter before this one rewrites the body (grpc_web's text) or
	 * read some of it already (buffer, ext_authz's with_request_body):
	 * what goes upstream is that, not decompressed here */
	bool blocked = st->req_xf || st->res->dcmp ||
		       (st->state & (HTTP_S_REQ_DONE | HTTP_S_MCP | HTTP_S_UPGRADE)) ||
		       X(st)->rb_bytes;
	uint32_t at = st->text_len;
	char *v = st->res->text + at;
	int vl = ce_joined(m, v, HTTP_TEXT - at);
	const char *coding = NULL, *rest = NULL;
	size_t cn = 0, rn = 0;
	if (vl > 0)
		ce_split(v, (size_t)vl, &coding, &cn, &rest, &rn);
	bool nt = no_transform(m);
	struct http_worker *w = hc->w;
	int chosen = -1;
	uint64_t *chosen_row = NULL;
	for (size_t i = 0; i < h->n_decompressors; i++) {
		const struct arn_cfg_decompressor *f = &h->decompressors[i];
		uint64_t *row = row_of(w, h, f);
		bool ok = !blocked && chosen < 0 && f->req_enabled && (!nt || f->req_ignore_nt) &&
			  cn && arn_h1_eq_nocase(coding, cn, lib_enc[f->lib], lib_enc_len[f->lib]);
		if (ok) {
			chosen = (int)i;
			chosen_row = row;
		} else {
			inc(row, S_NOT_DECOMPRESSED, 1);
		}
	}
	if (chosen < 0)
		return false;
	const struct arn_cfg_decompressor *f = &h->decompressors[chosen];
	struct dcmp_worker *dw = dw_of(w);
	struct http_dcmp *z =
	    dw ? state_take(dw, f->lib, f->gz_window, f->br_no_realloc, f->chunk_size, f->max_ratio)
	       : NULL;
	if (!z) {
		/* the worker's bound: the request goes as it came */
		inc(chosen_row, S_STATE_LIMIT, 1);
		inc(chosen_row, S_NOT_DECOMPRESSED, 1);
		return false;
	}
	inc(chosen_row, S_DECOMPRESSED, 1);
	z->row = chosen_row;
	z->req = true;
	if (rn) {
		st->text_len = at + (uint32_t)vl;
		z->rest = rest;
		z->rest_len = (uint32_t)rn;
	}
	st->res->dcmp = z;
	for (unsigned k = 0; k < http_n_filters; k++)
		if (http_filters[k] == &http_decompressor_filter_ops)
			st->req_xf = (uint8_t)(k + 1);
	/* the body's length changes, and Envoy sends none: an HTTP/2
	 * upstream gets DATA to its END_STREAM, an HTTP/1.1 one a chunked
	 * body */
	if (m->flags & ARN_H1_F_CONTENT_LENGTH) {
		m->flags &= ~ARN_H1_F_CONTENT_LENGTH;
		m->flags |= ARN_H1_F_CHUNKED;
	}
	return false;
}

/* The request cannot go on (corrupt, a bomb, cut short, or out of the
 * worker's bytes): answered here, 400 (the client's body) or 503 (the
 * worker's bytes), the error counted. Envoy forwards what it decompressed
 * and drops the rest; an upstream cannot tell that from a whole body. */
static long req_fail(struct http_stream *st, struct http_dcmp *z, const struct dc_err *err)
{
	inc(z->row, err->stat < 0 ? S_RESET_MEMORY : (unsigned)err->stat, 1);
	z->in_len = 0;
	z->done = true;
	st->state &= ~HTTP_S_REQ_MORE;
	if (err->stat < 0)
		http_local_reply_route(st, 503, NULL, 0, 0, "decompressor_memory_limit", NULL, 0);
	else
		http_local_reply_route(st, 400, NULL, 0, 0, "decompressor_error", NULL, 0);
	return -1;
}

/* One piece of the request's body: *@p out, its length returned (or -1:
 * answered); HTTP_S_REQ_MORE when the piece was full first. */
static long req_piece(struct http_stream *st, struct http_dcmp *z, const char **out)
{
	st->state &= ~HTTP_S_REQ_MORE;
	if (z->done)
		return 0;
	size_t made;
	struct dc_err err = {0};
	int rc = lib_step(z, &made, &err);
	if (rc < 0)
		return req_fail(st, z, &err);
	inc(z->row, S_TOTAL_UNCOMPRESSED, made);
	if (rc == 0)
		st->state |= HTTP_S_REQ_MORE;
	*out = (const char *)z->out;
	return (long)made;
}

static long dcmp_decode_xform(struct http_stream *st, char *data, size_t len, bool end,
			      const char **out)
{
	struct http_dcmp *z = st->res->dcmp;
	if (end) {
		if (z->done || stream_whole(z))
			return 0;
		struct dc_err err = {S_LIB + (z->lib == ARN_CFG_CMP_GZIP     ? Z_DATA_S
					      : z->lib == ARN_CFG_CMP_BROTLI ? BR_ERROR_S
									     : ZS_GENERIC_S)};
		return req_fail(st, z, &err);
	}
	inc(z->row, S_TOTAL_COMPRESSED, len);
	z->in = (const uint8_t *)data;
	z->in_len = len;
	return req_piece(st, z, out);
}

static long dcmp_decode_more(struct http_stream *st, const char **out)
{
	return req_piece(st, st->res->dcmp, out);
}

/* ---- generations: rows of filters gone ------------------------------------------------------- */

/* Has @p h a filter whose row key is @p b (@p bn bytes)? */
static bool has_row(const struct arn_cfg_hcm *h, const char *b, size_t bn)
{
	for (size_t i = 0; i < h->n_decompressors; i++) {
		char key[HTTP_DCMP_NAME_MAX + 1];
		int k = row_key(&h->decompressors[i], key, sizeof(key));
		if (k > 0 && (size_t)k == bn && memcmp(key, b, bn) == 0)
			return true;
	}
	return false;
}

void http_dcmp_sweep(struct http_worker *w, const struct arn_cfg_gen *g)
{
	http_hcm_rows_sweep(arn_stats_rows_get(&rows, w->idx), g, has_row);
}

void http_dcmp_start(void)
{
	arn_stats_rows_start(&rows);
}

void http_dcmp_stop(void)
{
	arn_stats_rows_stop(&rows);
}

static bool dcmp_active(const struct arn_cfg_hcm *h)
{
	return h->n_decompressors > 0;
}

const struct http_filter_ops http_decompressor_filter_ops = {
    .name = "decompressor",
    .active = dcmp_active,
    .decode_head = dcmp_decode_head,
    .decode_xform = dcmp_decode_xform,
    .decode_more = dcmp_decode_more,
    .encode_head_edits = dcmp_edits,
    .encode_body = dcmp_encode_body,
    .encode_more = dcmp_encode_more,
    .stream_end = dcmp_stream_end,
};
