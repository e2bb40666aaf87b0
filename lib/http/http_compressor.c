/*
 * Response compression (envoy.filters.http.compressor): see
 * http_compressor.h. Envoy's decision (extensions/filters/http/compressor/
 * compressor_filter.cc, encodeHeaders) is made here for all the
 * connection manager's compressor filters at the response head, in the
 * order Envoy's encoder filters see it (the last in the chain first); the
 * body then goes through the chosen library, each body piece flushed as
 * Envoy flushes it (Z_SYNC_FLUSH, BROTLI_OPERATION_FLUSH, ZSTD_e_flush),
 * the end finished (Z_FINISH, ...).
 */
#include "http_compressor.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <brotli/encode.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_createCCtx_advanced, ZSTD_estimateCStreamSize */
#include <zlib.h>
#include <zstd.h>

#include "arn_config.h"
#include "arn_stats.h"
#include "arn_stats_rows.h"
#include "http_filter.h"
#include "http_hcm_rows.h"
#include "http_int.h"
#include "http_stream.h"
#include "http_worker.h"
#include "http_zmem.h"

/* ---- Accept-Encoding (Envoy's chooseEncoding) ------------------------------------------------ */

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

/* absl::SimpleAtof's grammar (what Envoy parses a q-value with): an
 * optional sign, decimal digits with an optional point and exponent, or
 * inf / infinity / nan; out of range gives inf or 0. */
static bool q_parse(const char *p, size_t n, float *out)
{
	char buf[64];
	trim(&p, &n);
	if (n == 0 || n >= sizeof(buf))
		return false;
	size_t i = 0;
	if (p[0] == '+' || p[0] == '-')
		i++;
	if (p[0] == '+' && i < n && p[i] == '-')
		return false;
	bool word = false;
	static const char *const words[] = {"inf", "infinity", "nan"};
	for (unsigned k = 0; k < 3; k++)
		if (n - i == strlen(words[k]) && strncasecmp(p + i, words[k], n - i) == 0)
			word = true;
	if (!word) {
		size_t d = 0;
		while (i < n && p[i] >= '0' && p[i] <= '9')
			i++, d++;
		if (i < n && p[i] == '.') {
			i++;
			while (i < n && p[i] >= '0' && p[i] <= '9')
				i++, d++;
		}
		if (!d)
			return false;
		if (i < n && (p[i] == 'e' || p[i] == 'E')) {
			i++;
			if (i < n && (p[i] == '+' || p[i] == '-'))
				i++;
			size_t e = 0;
			while (i < n && p[i] >= '0' && p[i] <= '9')
				i++, e++;
			if (!e)
				return false;
		}
		if (i != n)
			return false;
	}
	memcpy(buf, p, n);
	buf[n] = 0;
	*out = strtof(buf, NULL);
	return true;
}

/* One token of Accept-Encoding: its coding (trimmed, before ';') and its
 * q-value (1 without "q="). @return false when its q-value does not parse
 * (Envoy skips the token). */
static bool token(const char *t, size_t n, const char **name, size_t *nlen, float *q)
{
	const char *semi = memchr(t, ';', n);
	*name = t;
	*nlen = semi ? (size_t)(semi - t) : n;
	trim(name, nlen);
	*q = 1;
	if (!semi)
		return true;
	const char *params = semi + 1;
	size_t pn = n - (size_t)(params - t);
	const char *eq = memchr(params, '=', pn);
	if (!eq)
		return true;
	const char *key = params;
	size_t kn = (size_t)(eq - params);
	trim(&key, &kn);
	if (!(kn == 1 && (key[0] == 'q' || key[0] == 'Q')))
		return true;
	return q_parse(eq + 1, pn - (size_t)(eq + 1 - params), q);
}

static bool same(const char *a, size_t an, const char *b, size_t bn)
{
	return an == bn && memcmp(a, b, an) == 0;
}

int http_cmp_choose(const struct http_cmp_offer *o, unsigned n, const struct http_cmp_slice *ae,
		    unsigned n_ae, enum http_cmp_hdr *stat)
{
	*stat = HTTP_CMP_HDR_NOT_VALID;
	if (n > 32)
		n = 32;
	/* the encodings offered: the first offer of each */
	uint32_t allowed = 0;
	for (unsigned i = 0; i < n; i++) {
		bool dup = false;
		for (unsigned j = 0; j < i && !dup; j++)
			dup = (allowed >> j & 1) && same(o[i].enc, o[i].len, o[j].enc, o[j].len);
		if (!dup)
			allowed |= 1u << i;
	}
	/* the tokens: q=0 takes its encoding out (a later "*" must not bring
	 * it back) */
	unsigned pairs = 0;
	for (unsigned s = 0; s < n_ae; s++) {
		const char *p = ae[s].p, *end = p + ae[s].len;
		while (p < end) {
			const char *c = memchr(p, ',', (size_t)(end - p));
			const char *te = c ? c : end;
			if (te > p) {
				const char *nm;
				size_t nl;
				float q;
				if (token(p, (size_t)(te - p), &nm, &nl, &q)) {
					pairs++;
					if (q == 0)
						for (unsigned i = 0; i < n; i++)
							if (same(nm, nl, o[i].enc, o[i].len))
								allowed &= ~(1u << i);
				}
			}
			p = c ? c + 1 : end;
		}
	}
	if (!pairs || !allowed)
		return -1;
	/* the highest q-value among what is offered, identity and "*" */
	int choice = -1; /* an offer's index */
	enum { C_IDENTITY, C_WILDCARD, C_OFFER } kind = C_IDENTITY;
	float best = 0;
	for (unsigned s = 0; s < n_ae; s++) {
		const char *p = ae[s].p, *end = p + ae[s].len;
		while (p < end) {
			const char *c = memchr(p, ',', (size_t)(end - p));
			const char *te = c ? c : end;
			const char *nm;
			size_t nl;
			float q;
			if (te > p && token(p, (size_t)(te - p), &nm, &nl, &q)) {
				int idx = -1;
				for (unsigned i = 0; i < n && idx < 0; i++)
					if ((allowed >> i & 1) && same(nm, nl, o[i].enc, o[i].len))
						idx = (int)i;
				bool id = same(nm, nl, "identity", 8), wc = same(nm, nl, "*", 1);
				if (idx >= 0 || id || wc) {
					if (q > best ||
					    (q == best && idx >= 0 && o[idx].choose_first)) {
						best = q;
						choice = idx;
						kind = idx >= 0 ? C_OFFER
						       : id	? C_IDENTITY
								: C_WILDCARD;
					}
				}
			}
			p = c ? c + 1 : end;
		}
	}
	if (!(best > 0) && !(best < 0))
		return -1; /* zero: nothing acceptable */
	if (best < 0)
		return -1;
	if (kind == C_IDENTITY) {
		*stat = HTTP_CMP_HDR_IDENTITY;
		return -1;
	}
	if (kind == C_WILDCARD) {
		*stat = HTTP_CMP_HDR_WILDCARD;
		for (unsigned i = 0; i < n; i++)
			if (allowed >> i & 1)
				return (int)i;
		return -1;
	}
	*stat = HTTP_CMP_HDR_USED;
	return choice;
}

/* ---- stats ----------------------------------------------------------------------------------- */

enum {
	/* Envoy's common direction stats (".response." with
	 * response_direction_config) */
	S_COMPRESSED = 0,
	S_NOT_COMPRESSED,
	S_TOTAL_UNCOMPRESSED,
	S_TOTAL_COMPRESSED,
	S_CL_TOO_SMALL,
	/* Envoy's response stats */
	S_NO_ACCEPT,
	S_IDENTITY,
	S_USED,
	S_OVERSHADOWED,
	S_WILDCARD,
	S_NOT_VALID,
	S_ETAG,
	/* Arion's */
	S_STATE_LIMIT,
	S_RESET_MEMORY,
	S_COUNT,
};

static const char *const stat_names[S_COUNT] = {
    "compressed",
    "not_compressed",
    "total_uncompressed_bytes",
    "total_compressed_bytes",
    "content_length_too_small",
    "no_accept_header",
    "header_identity",
    "header_compressor_used",
    "header_compressor_overshadowed",
    "header_wildcard",
    "header_not_valid",
    "not_compressed_etag",
    "not_compressed_state_limit",
    "reset_memory_limit",
};

static void emit(struct arn_stats_emitter *e, const char *a, const char *b, size_t bn,
		 const uint64_t *sum, const struct arn_stats_hist *h, void *arg);

/* rows keyed (connection manager's stat_prefix, "<r|->name.<library>"):
 * the first byte of b says whether response_direction_config is set */
static struct arn_stats_rows rows = {.def = {
					 .family = "compressor",
					 .n_counters = S_COUNT,
					 .max_keyed = HTTP_CMP_ROWS,
					 .max_bare = 1,
					 .name_max = HTTP_CMP_NAME_MAX,
					 .emit = emit,
				     }};

static const char *const lib_stat[] = {"gzip", "brotli", "zstd"};
static const char *const lib_enc[] = {"gzip", "br", "zstd"};
static const size_t lib_enc_len[] = {4, 2, 4};

static void emit(struct arn_stats_emitter *e, const char *a, const char *b, size_t bn,
		 const uint64_t *sum, const struct arn_stats_hist *h, void *arg)
{
	(void)h;
	(void)arg;
	if (bn < 2)
		return;
	bool resp = b[0] == 'r';
	char stat[2 * HTTP_CMP_NAME_MAX + 64];
	for (unsigned k = 0; k < S_COUNT; k++) {
		snprintf(stat, sizeof(stat), "compressor.%s.%s%s", b + 1,
			 resp && k <= S_CL_TOO_SMALL ? "response." : "", stat_names[k]);
		arn_stats_emit(e, ARN_STAT_COUNTER, "http", ARN_STATS_TAG_HCM, a, stat,
			       (int64_t)sum[k]);
	}
}

/* The row of filter @p f of manager @p h on worker @p w, or NULL. */
static uint64_t *row_of(struct http_worker *w, const struct arn_cfg_hcm *h,
			const struct arn_cfg_compressor *f)
{
	struct arn_stats_rows_table *t = arn_stats_rows_get(&rows, w->idx);
	if (!t || !h->stat_prefix)
		return NULL;
	char b[HTTP_CMP_NAME_MAX + 1];
	int k = snprintf(b, sizeof(b), "%c%s.%s", f->response_config ? 'r' : '-',
			 f->name ? f->name : "", lib_stat[f->lib]);
	uint64_t *c = NULL;
	if (k > 0 && (size_t)k < sizeof(b))
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

/* A stream's compressor. */
struct http_cmp {
	struct http_cmp *next; /* the worker's free list */
	struct cmp_worker *cw;
	uint64_t *row;
	uint8_t lib;
	bool live;	/* the library's state is made */
	bool finished;	/* its end was compressed */
	const char *in; /* input not taken yet */
	size_t in_len;
	bool end;     /* the input is the body's last */
	uint8_t *out; /* out_cap bytes: the piece lent to the client's codec */
	uint32_t out_cap;
	union {
		z_stream z;
		BrotliEncoderState *br;
		ZSTD_CCtx *zs;
	} u;
};

struct cmp_worker {
	struct http_zmem zm; /* its states' bytes (http_zmem.h) */
	unsigned states; /* streams with a struct http_cmp */
	struct http_cmp *free;
	unsigned n_free;
	bool init;
};

/* A few freed states (with their output buffers) are kept for the next
 * streams; the libraries' states are not (they are made per stream). */
#define CMP_FREE_KEEP 8

static struct cmp_worker workers[ARN_STATS_MAX_WORKERS];
unsigned http_cmp_states_max = HTTP_CMP_STATES_MAX;
uint32_t http_cmp_chunk_cap = 65536;

static struct cmp_worker *cw_of(const struct http_worker *w)
{
	return w && w->idx < ARN_STATS_MAX_WORKERS && workers[w->idx].init ? &workers[w->idx]
									   : NULL;
}

int http_cmp_worker_init(struct http_worker *w)
{
	if (w->idx < ARN_STATS_MAX_WORKERS)
		workers[w->idx] =
		    (struct cmp_worker){.zm = {.max = HTTP_CMP_MEM_MAX}, .init = true};
	return arn_stats_rows_worker_init(&rows, w->idx);
}

void http_cmp_worker_fini(struct http_worker *w)
{
	struct cmp_worker *cw = cw_of(w);
	if (cw) {
		for (struct http_cmp *z = cw->free, *nx; z; z = nx) {
			nx = z->next;
			http_zmem_free(&cw->zm, z->out);
			http_zmem_free(&cw->zm, z);
		}
		*cw = (struct cmp_worker){0};
	}
	arn_stats_rows_worker_fini(&rows, w->idx);
}

unsigned http_cmp_states(const struct http_worker *w)
{
	const struct cmp_worker *cw = cw_of(w);
	return cw ? cw->states : 0;
}

size_t http_cmp_mem(const struct http_worker *w)
{
	const struct cmp_worker *cw = cw_of(w);
	return cw ? cw->zm.mem : 0;
}

/* What a state of @p f takes, about: admitted only when it fits. zlib's
 * is its manual's formula; zstd says its own; brotli's ring buffer and
 * hash tables grow with the window (about twice it at the qualities under
 * 10, more above). */
static size_t estimate(const struct arn_cfg_compressor *f)
{
	switch (f->lib) {
	case ARN_CFG_CMP_GZIP:
		return ((size_t)1 << (f->gz_window + 2)) + ((size_t)1 << (f->gz_memlevel + 9)) +
		       8192 + f->chunk_size;
	case ARN_CFG_CMP_BROTLI:
		return ((size_t)(f->br_quality >= 10 ? 12 : 3) << f->br_window) + (1u << 16) +
		       f->chunk_size;
	default:
		return ZSTD_estimateCStreamSize(f->zs_level ? (int)f->zs_level
							    : ZSTD_CLEVEL_DEFAULT) +
		       f->chunk_size;
	}
}

static void lib_free(struct http_cmp *z)
{
	if (!z->live)
		return;
	z->live = false;
	switch (z->lib) {
	case ARN_CFG_CMP_GZIP:
		deflateEnd(&z->u.z);
		break;
	case ARN_CFG_CMP_BROTLI:
		BrotliEncoderDestroyInstance(z->u.br);
		break;
	default:
		ZSTD_freeCCtx(z->u.zs);
		break;
	}
}

/* The library's state for filter @p f. @return 0, or -ENOMEM. */
static int lib_make(struct http_cmp *z, const struct arn_cfg_compressor *f)
{
	struct cmp_worker *cw = z->cw;
	z->lib = f->lib;
	switch (f->lib) {
	case ARN_CFG_CMP_GZIP: {
		memset(&z->u.z, 0, sizeof(z->u.z));
		z->u.z.zalloc = http_zmem_zalloc;
		z->u.z.zfree = http_zmem_zfree;
		z->u.z.opaque = &cw->zm;
		/* window_bits | 16: the gzip header and trailer, as Envoy */
		if (deflateInit2(&z->u.z, f->gz_level, Z_DEFLATED, f->gz_window | 16,
				 f->gz_memlevel, f->gz_strategy) != Z_OK)
			return -ENOMEM;
		break;
	}
	case ARN_CFG_CMP_BROTLI: {
		BrotliEncoderState *b =
		    BrotliEncoderCreateInstance(http_zmem_alloc, http_zmem_free, &cw->zm);
		if (!b)
			return -ENOMEM;
		BrotliEncoderSetParameter(b, BROTLI_PARAM_QUALITY, f->br_quality);
		BrotliEncoderSetParameter(b, BROTLI_PARAM_LGWIN, f->br_window);
		BrotliEncoderSetParameter(b, BROTLI_PARAM_LGBLOCK, f->br_block);
		BrotliEncoderSetParameter(b, BROTLI_PARAM_DISABLE_LITERAL_CONTEXT_MODELING,
					  f->br_no_literal_ctx);
		BrotliEncoderSetParameter(b, BROTLI_PARAM_MODE, f->br_mode);
		z->u.br = b;
		break;
	}
	default: {
		ZSTD_customMem cm = {http_zmem_alloc, http_zmem_free, &cw->zm};
		ZSTD_CCtx *c = ZSTD_createCCtx_advanced(cm);
		if (!c)
			return -ENOMEM;
		ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel,
				       f->zs_level ? (int)f->zs_level : ZSTD_CLEVEL_DEFAULT);
		ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, f->zs_checksum);
		if (f->zs_strategy)
			ZSTD_CCtx_setParameter(c, ZSTD_c_strategy, f->zs_strategy);
		z->u.zs = c;
		break;
	}
	}
	z->live = true;
	return 0;
}

/* A state for a response of filter @p f on worker @p cw, or NULL when the
 * worker's bounds say no. */
static struct http_cmp *state_take(struct cmp_worker *cw, const struct arn_cfg_compressor *f)
{
	if (cw->states >= http_cmp_states_max || cw->zm.mem + estimate(f) > HTTP_CMP_MEM_MAX)
		return NULL;
	uint32_t chunk = f->chunk_size < http_cmp_chunk_cap ? f->chunk_size : http_cmp_chunk_cap;
	struct http_cmp *z = cw->free;
	if (z && z->out_cap >= chunk) {
		cw->free = z->next;
		cw->n_free--;
	} else {
		z = http_zmem_alloc(&cw->zm, sizeof(*z));
		if (!z)
			return NULL;
		memset(z, 0, sizeof(*z));
		z->out = http_zmem_alloc(&cw->zm, chunk);
		if (!z->out) {
			http_zmem_free(&cw->zm, z);
			return NULL;
		}
		z->out_cap = chunk;
	}
	z->cw = cw;
	z->live = z->finished = z->end = false;
	z->in = NULL;
	z->in_len = 0;
	if (lib_make(z, f) != 0) {
		z->next = cw->free;
		cw->free = z;
		cw->n_free++;
		return NULL;
	}
	cw->states++;
	return z;
}

static void state_put(struct http_cmp *z)
{
	struct cmp_worker *cw = z->cw;
	lib_free(z);
	cw->states--;
	if (cw->n_free < CMP_FREE_KEEP) {
		z->next = cw->free;
		cw->free = z;
		cw->n_free++;
		return;
	}
	http_zmem_free(&cw->zm, z->out);
	http_zmem_free(&cw->zm, z);
}

/* ---- the body ---------------------------------------------------------------------------------
 */

/*
 * Compress the pending input into the output piece, flushed (or finished
 * with z->end). @return 1 when the input is taken and the flush (finish)
 * complete, 0 when the piece is full first, -ENOMEM when the library
 * failed (out of the worker's bytes). *@p made: the piece's bytes.
 */
static int lib_run(struct http_cmp *z, size_t *made)
{
	*made = 0;
	switch (z->lib) {
	case ARN_CFG_CMP_GZIP: {
		z_stream *s = &z->u.z;
		s->next_in = (Bytef *)(uintptr_t)z->in;
		s->avail_in = (uInt)z->in_len;
		s->next_out = z->out;
		s->avail_out = z->out_cap;
		int flush = z->end ? Z_FINISH : Z_SYNC_FLUSH;
		int rc = deflate(s, flush);
		*made = z->out_cap - s->avail_out;
		z->in = (const char *)s->next_in;
		z->in_len = s->avail_in;
		if (rc == Z_STREAM_END)
			return 1;
		if (rc != Z_OK && rc != Z_BUF_ERROR)
			return -ENOMEM;
		/* Z_SYNC_FLUSH is complete when deflate left room */
		return !z->end && s->avail_in == 0 && s->avail_out > 0 ? 1 : 0;
	}
	case ARN_CFG_CMP_BROTLI: {
		size_t ai = z->in_len, ao = z->out_cap;
		const uint8_t *ni = (const uint8_t *)z->in;
		uint8_t *no = z->out;
		BrotliEncoderOperation op =
		    z->end ? BROTLI_OPERATION_FINISH : BROTLI_OPERATION_FLUSH;
		BROTLI_BOOL ok = BROTLI_TRUE;
		for (;;) {
			ok = BrotliEncoderCompressStream(z->u.br, op, &ai, &ni, &ao, &no, NULL);
			if (!ok)
				break;
			bool done = z->end ? BrotliEncoderIsFinished(z->u.br)
					   : ai == 0 && !BrotliEncoderHasMoreOutput(z->u.br);
			if (done || ao == 0)
				break;
		}
		*made = z->out_cap - ao;
		z->in = (const char *)ni;
		z->in_len = ai;
		if (!ok)
			return -ENOMEM;
		return (z->end ? BrotliEncoderIsFinished(z->u.br)
			       : ai == 0 && !BrotliEncoderHasMoreOutput(z->u.br))
			   ? 1
			   : 0;
	}
	default: {
		ZSTD_inBuffer ib = {z->in, z->in_len, 0};
		ZSTD_outBuffer ob = {z->out, z->out_cap, 0};
		size_t left =
		    ZSTD_compressStream2(z->u.zs, &ob, &ib, z->end ? ZSTD_e_end : ZSTD_e_flush);
		*made = ob.pos;
		z->in += ib.pos;
		z->in_len -= ib.pos;
		if (ZSTD_isError(left))
			return -ENOMEM;
		return left == 0 && z->in_len == 0 ? 1 : 0;
	}
	}
}

/* The response cannot go on (the library failed mid-body): the stream is
 * reset, as Envoy resets one it cannot complete. */
static void mem_reset(struct http_stream *st, struct http_cmp *z)
{
	inc(z->row, S_RESET_MEMORY, 1);
	z->in_len = 0;
	z->finished = true;
	st->flags |= ARN_RF_BIT(LOCAL_RESET);
	http_conn_abort(st->hc);
}

/* Make one piece from what is pending and hand it to the client's codec.
 * @return true when nothing is left pending. */
static bool pump(struct http_stream *st)
{
	struct http_cmp *z = st->enc_state;
	if (z->finished)
		return true;
	size_t made;
	int rc = lib_run(z, &made);
	if (rc < 0) {
		mem_reset(st, z);
		return true;
	}
	if (made) {
		struct http_peer *dn = st->hc->dn;
		inc(z->row, S_TOTAL_COMPRESSED, made);
		st->tx_body += made;
		dn->codec->encode_body(dn, (const char *)z->out, made);
	}
	if (rc == 1 && z->end)
		z->finished = true;
	return rc == 1;
}

static bool cmp_encode_body(struct http_stream *st, const char *data, size_t len, bool end)
{
	struct http_cmp *z = st->enc_state;
	if (z->finished)
		return true;
	z->in = data;
	z->in_len = len;
	z->end = end;
	inc(z->row, S_TOTAL_UNCOMPRESSED, len);
	return pump(st);
}

static bool cmp_encode_more(struct http_stream *st)
{
	return pump(st);
}

static void cmp_stream_end(struct http_stream *st)
{
	if (!(st->state & HTTP_S_ENC_BODY) || st->enc != &http_compressor_filter_ops)
		return;
	state_put(st->enc_state);
	st->enc_state = NULL;
}

/* ---- the response head: Envoy's encodeHeaders for each filter -------------------------------- */

/* Envoy's default content types (compressor_filter.cc). */
static const char *const default_types[] = {
    "text/html",
    "text/plain",
    "text/css",
    "application/javascript",
    "application/x-javascript",
    "text/javascript",
    "text/x-javascript",
    "text/ecmascript",
    "text/js",
    "text/jscript",
    "text/x-js",
    "application/ecmascript",
    "application/x-json",
    "application/xml",
    "application/json",
    "image/svg+xml",
    "text/xml",
    "application/xhtml+xml",
    "application/grpc-web",
    "application/grpc-web+proto",
};

static bool type_listed(const struct arn_cfg_compressor *f, const char *v, size_t n)
{
	if (f->n_content_types) {
		for (size_t i = 0; i < f->n_content_types; i++)
			if (arn_h1_eq_nocase(v, n, f->content_types[i],
					     strlen(f->content_types[i])))
				return true;
		return false;
	}
	for (size_t i = 0; i < sizeof(default_types) / sizeof(default_types[0]); i++)
		if (arn_h1_eq_nocase(v, n, default_types[i], strlen(default_types[i])))
			return true;
	return false;
}

/* Does the ','-list @p v (@p n bytes) have token @p tok (trimmed)? */
static bool has_token(const char *v, size_t n, const char *tok, size_t tn, bool nocase)
{
	const char *p = v, *end = v + n;
	while (p <= end) {
		const char *c = memchr(p, ',', (size_t)(end - p));
		const char *te = c ? c : end;
		const char *t = p;
		size_t k = (size_t)(te - p);
		trim(&t, &k);
		if (nocase ? arn_h1_eq_nocase(t, k, tok, tn) : same(t, k, tok, tn))
			return true;
		if (!c)
			break;
		p = c + 1;
	}
	return false;
}

/* What the response's head says, found in one walk. */
struct head {
	const char *ct; /* content-type, cropped at ';' and trimmed */
	size_t ct_len;
	bool has_ct, no_transform, has_ce;
	int etag, vary; /* first index, or -1 */
	const char *te; /* transfer-encoding, or NULL */
	size_t te_len;
};

static void head_read(const struct arn_h1_msg *m, struct head *hd)
{
	*hd = (struct head){.etag = -1, .vary = -1};
	for (int i = 0; i < m->n_hdrs; i++) {
		const struct arn_h1_header *x = &m->hdrs[i];
#define IS(lit) arn_h1_eq_nocase(x->name, x->name_len, lit, sizeof(lit) - 1)
		if (IS("content-type") && !hd->has_ct) {
			hd->has_ct = true;
			const char *semi = memchr(x->value, ';', x->value_len);
			hd->ct = x->value;
			hd->ct_len = semi ? (size_t)(semi - x->value) : x->value_len;
			trim(&hd->ct, &hd->ct_len);
		} else if (IS("cache-control")) {
			if (has_token(x->value, x->value_len, "no-transform", 12, true))
				hd->no_transform = true;
		} else if (IS("content-encoding")) {
			hd->has_ce = true;
		} else if (IS("etag")) {
			if (hd->etag < 0)
				hd->etag = i;
		} else if (IS("vary")) {
			if (hd->vary < 0)
				hd->vary = i;
		} else if (IS("transfer-encoding")) {
			if (!hd->te) {
				hd->te = x->value;
				hd->te_len = x->value_len;
			}
		}
#undef IS
	}
}

/* Envoy's isTransferEncodingAllowed: not already coded by a compressor
 * (@p lib the filter's library for the route). */
static bool te_allowed(const struct head *hd, uint8_t lib)
{
	if (!hd->te)
		return true;
	static const char *const coded[] = {"gzip", "br", "deflate", "compress", "zstd"};
	for (unsigned k = 0; k < 5; k++)
		if (has_token(hd->te, hd->te_len, coded[k], strlen(coded[k]), true))
			return false;
	return !has_token(hd->te, hd->te_len, lib_enc[lib], lib_enc_len[lib], true);
}

/* Filter @p f's library fields replaced by a route's compressor_library
 * (CompressorOverrides, Envoy 1.37) into @p out: what the state is made
 * with. */
static const struct arn_cfg_compressor *with_route_lib(const struct arn_cfg_compressor *f,
						       const struct arn_cfg_compressor_route *r,
						       struct arn_cfg_compressor *out)
{
	if (!r || !r->has_lib)
		return f;
	*out = *f;
	const struct arn_cfg_compressor *l = &r->lib;
	out->lib = l->lib;
	out->chunk_size = l->chunk_size;
	out->gz_level = l->gz_level;
	out->gz_strategy = l->gz_strategy;
	out->gz_window = l->gz_window;
	out->gz_memlevel = l->gz_memlevel;
	out->br_quality = l->br_quality;
	out->br_mode = l->br_mode;
	out->br_window = l->br_window;
	out->br_block = l->br_block;
	out->br_no_literal_ctx = l->br_no_literal_ctx;
	out->zs_level = l->zs_level;
	out->zs_strategy = l->zs_strategy;
	out->zs_checksum = l->zs_checksum;
	return out;
}

static int cmp_edits(struct http_stream *st, struct arn_h1_edit *e, unsigned cap)
{
	struct http_conn *hc = st->hc;
	const struct arn_cfg_hcm *h = hc->hcm;
	if (!h || !h->n_compressors || !st->up || (st->state & (HTTP_S_LOCAL | HTTP_S_ENC_BODY)))
		return 0;
	const struct arn_h1_msg *m = &st->resp.m;
	const struct arn_h1_msg *rq = &st->req.m;
	struct head hd;
	head_read(m, &hd);
	/* Envoy's end_stream: a response without a body */
	bool end_stream = (m->flags & ARN_H1_F_NO_BODY) || st->method == ARN_H1_M_HEAD ||
			  m->status == 204 || m->status == 304;
	bool tunnel = (st->state & HTTP_S_TUNNEL) || m->status == 101;
	/* Accept-Encoding: every value, as one list */
	struct http_cmp_slice ae[8];
	unsigned n_ae = 0;
	for (int i = 0; i < rq->n_hdrs && n_ae < 8; i++)
		if (arn_h1_eq_nocase(rq->hdrs[i].name, rq->hdrs[i].name_len, "accept-encoding", 15))
			ae[n_ae++] =
			    (struct http_cmp_slice){rq->hdrs[i].value, rq->hdrs[i].value_len};
	unsigned n = h->n_compressors < 32 ? (unsigned)h->n_compressors : 32;
	bool decided = false;
	int choice = -1;
	enum http_cmp_hdr hstat = HTTP_CMP_HDR_NOT_VALID;
	int chosen = -1;
	bool vary = false;
	struct http_worker *w = hc->w;
	uint64_t *chosen_row = NULL;
	/* Each filter on the stream's route: HttpFilter.disabled /
	 * FilterConfig off (the filter is not in the stream's chain: it
	 * neither compresses nor takes part in choosing the encoding), and
	 * its CompressorPerRoute (the most specific level's) */
	bool toggles = st->rt && st->rt->filter_toggles;
	bool off[32];
	const struct arn_cfg_compressor_route *pr[32];
	uint8_t lib[32];
	for (unsigned j = 0; j < n; j++) {
		const struct arn_cfg_compressor *f = &h->compressors[j];
		off[j] = !arn_cfg_cmp_on_route(f, toggles, st->vhost, st->route, &pr[j]);
		lib[j] = pr[j] && pr[j]->has_lib ? pr[j]->lib.lib : f->lib;
	}
	/* Envoy's encoder filters see the head last filter first */
	for (int i = (int)n - 1; i >= 0; i--) {
		const struct arn_cfg_compressor *f = &h->compressors[i];
		if (off[i])
			continue;
		uint64_t *row = row_of(w, h, f);
		bool big = false;
		/* Envoy's compressionEnabled: the route's CompressorPerRoute
		 * over the filter's response_direction_config enabled */
		if (pr[i] && pr[i]->enable >= 0 ? pr[i]->enable : f->enabled) {
			big = !(m->flags & ARN_H1_F_CONTENT_LENGTH) ||
			      m->content_length >= f->min_content_length;
			if (!big)
				inc(row, S_CL_TOO_SMALL, 1);
		}
		/* Envoy's isCompressible (a content-encoding a filter after
		 * this one in the chain set counts as the upstream's) */
		bool ok = big && !tunnel && (!hd.has_ct || type_listed(f, hd.ct, hd.ct_len)) &&
			  !hd.no_transform;
		if (ok && f->disable_on_etag && hd.etag >= 0) {
			inc(row, S_ETAG, 1);
			ok = false;
		}
		ok = ok && !hd.has_ce && chosen < 0;
		vary = vary || ok;
		bool accept = false;
		if (!end_stream && big) {
			if (!n_ae) {
				inc(row, S_NO_ACCEPT, 1);
			} else {
				if (!decided) {
					/* the filters whose types take the response */
					struct http_cmp_offer o[32];
					int map[32];
					unsigned k = 0;
					for (unsigned j = 0; j < n; j++) {
						const struct arn_cfg_compressor *g =
						    &h->compressors[j];
						if (off[j] || (hd.has_ct && hd.ct_len &&
							       !type_listed(g, hd.ct, hd.ct_len)))
							continue;
						o[k] = (struct http_cmp_offer){lib_enc[lib[j]],
									       lib_enc_len[lib[j]],
									       g->choose_first};
						map[k++] = (int)j;
					}
					int c = http_cmp_choose(o, k, ae, n_ae, &hstat);
					choice = c >= 0 ? map[c] : -1;
					decided = true;
				}
				const char *enc = choice >= 0 ? lib_enc[lib[choice]] : NULL;
				accept = enc && strcmp(enc, lib_enc[lib[i]]) == 0;
				switch (hstat) {
				case HTTP_CMP_HDR_USED:
					inc(row, accept ? S_USED : S_OVERSHADOWED, 1);
					break;
				case HTTP_CMP_HDR_IDENTITY:
					inc(row, S_IDENTITY, 1);
					break;
				case HTTP_CMP_HDR_WILDCARD:
					inc(row, S_WILDCARD, 1);
					break;
				default:
					inc(row, S_NOT_VALID, 1);
					break;
				}
			}
		}
		if (!end_stream && accept && ok && te_allowed(&hd, lib[i])) {
			chosen = i;
			chosen_row = row;
		} else {
			inc(row, S_NOT_COMPRESSED, 1);
		}
	}
	struct http_cmp *z = NULL;
	if (chosen >= 0) {
		struct arn_cfg_compressor rl;
		const struct arn_cfg_compressor *f =
		    with_route_lib(&h->compressors[chosen], pr[chosen], &rl);
		struct cmp_worker *cw = cw_of(w);
		z = cw ? state_take(cw, f) : NULL;
		if (!z) {
			inc(chosen_row, S_STATE_LIMIT, 1);
			inc(chosen_row, S_NOT_COMPRESSED, 1);
		} else {
			z->row = chosen_row;
			inc(chosen_row, S_COMPRESSED, 1);
		}
	}
	unsigned k = 0;
	if (z) {
		if (cap < 4)
			goto nospace;
		e[k++] = (struct arn_h1_edit){.name = "content-encoding",
					      .name_len = 16,
					      .value = lib_enc[lib[chosen]],
					      .value_len = (uint32_t)lib_enc_len[lib[chosen]],
					      .op = ARN_H1_EDIT_SET};
		e[k++] = (struct arn_h1_edit){
		    .name = "content-length", .name_len = 14, .op = ARN_H1_EDIT_REMOVE};
		if (hd.etag >= 0) {
			/* a strong ETag goes (a weak one stays), as Envoy's
			 * sanitizeEtagHeader */
			const struct arn_h1_header *x = &m->hdrs[hd.etag];
			if (x->value_len > 2 &&
			    !((x->value[0] == 'w' || x->value[0] == 'W') && x->value[1] == '/'))
				e[k++] = (struct arn_h1_edit){
				    .name = "etag", .name_len = 4, .op = ARN_H1_EDIT_REMOVE};
		}
	}
	if (vary) {
		if (k >= cap)
			goto nospace;
		if (hd.vary < 0) {
			e[k++] = (struct arn_h1_edit){.name = "vary",
						      .name_len = 4,
						      .value = "accept-encoding",
						      .value_len = 15,
						      .op = ARN_H1_EDIT_SET};
		} else {
			const struct arn_h1_header *x = &m->hdrs[hd.vary];
			if (!has_token(x->value, x->value_len, "accept-encoding", 15, false)) {
				/* Envoy: the first vary's value, ", accept-encoding" */
				size_t need = x->value_len + 17 + 1;
				if (st->text_len + need > HTTP_TEXT)
					goto nospace;
				char *v = st->res->text + st->text_len;
				memcpy(v, x->value, x->value_len);
				memcpy(v + x->value_len, ", accept-encoding", 17);
				v[x->value_len + 17] = 0;
				st->text_len += (uint32_t)need;
				e[k++] = (struct arn_h1_edit){.name = "vary",
							      .name_len = 4,
							      .value = v,
							      .value_len = (uint32_t)(need - 1),
							      .op = ARN_H1_EDIT_SET};
			}
		}
	}
	if (z) {
		st->enc = &http_compressor_filter_ops;
		st->enc_state = z;
		st->state |= HTTP_S_ENC_BODY;
		/* the body the client gets has no length known ahead: the
		 * client's codec frames it so (HTTP/1.1 chunked, HTTP/1.0 to
		 * the close). The upstream's decoder keeps its own count. */
		st->resp.m.flags &= ~ARN_H1_F_CONTENT_LENGTH;
	}
	return (int)k;
nospace:
	if (z)
		state_put(z);
	return -ENOSPC;
}

/* ---- generations: rows of filters gone ------------------------------------------------------- */

/* Has @p h a filter whose row key is @p b (@p bn bytes)? */
static bool has_row(const struct arn_cfg_hcm *h, const char *b, size_t bn)
{
	for (size_t i = 0; i < h->n_compressors; i++) {
		const struct arn_cfg_compressor *f = &h->compressors[i];
		char key[HTTP_CMP_NAME_MAX + 1];
		int k = snprintf(key, sizeof(key), "%c%s.%s", f->response_config ? 'r' : '-',
				 f->name ? f->name : "", lib_stat[f->lib]);
		if (k > 0 && (size_t)k == bn && memcmp(key, b, bn) == 0)
			return true;
	}
	return false;
}

void http_cmp_sweep(struct http_worker *w, const struct arn_cfg_gen *g)
{
	http_hcm_rows_sweep(arn_stats_rows_get(&rows, w->idx), g, has_row);
}

void http_cmp_start(void)
{
	arn_stats_rows_start(&rows);
}

void http_cmp_stop(void)
{
	arn_stats_rows_stop(&rows);
}

static bool cmp_active(const struct arn_cfg_hcm *h)
{
	return h->n_compressors > 0;
}

const struct http_filter_ops http_compressor_filter_ops = {
    .name = "compressor",
    .active = cmp_active,
    .encode_head_edits = cmp_edits,
    .encode_body = cmp_encode_body,
    .encode_more = cmp_encode_more,
    .stream_end = cmp_stream_end,
};
