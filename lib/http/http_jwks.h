/*
 * jwt_authn's remote_jwks (Envoy's JwksCache per thread and its
 * JwksFetcher): a worker's cache of fetched key sets, and the fetches.
 *
 * A request whose token needs a provider's keys that its worker has not
 * (or has past cache_duration) waits: the keys are fetched with a GET of
 * http_uri's path, Host its authority, through its cluster (a sub-request,
 * http_subreq.h, on the waiting client's connection), and the request's
 * filter walk resumes at the jwt_authn filter once the fetch is over
 * (http_jwks_resume_at): with the keys cached, or with the provider
 * failing "Jwks remote fetch is failed" for that request.
 *
 * Sharing: a worker's requests waiting for the same keys (the same
 * cluster and uri, in any configuration generation) share one fetch; its
 * sub-request runs on the first waiter's connection, and moves to the
 * next waiter's when that one goes away. The keys are the worker's (not
 * the generation's): a configuration update naming the same cluster and
 * uri keeps them until they expire.
 *
 * Memory: HTTP_JWKS_ENTRIES identities per worker (their key strings in
 * the entry), the cached JWKS counted in their body bytes (at most
 * HTTP_JWKS_CACHE_BYTES per worker: the least recently used idle entry
 * goes, counted in jwks_cache_evicted); a fetch in flight holds one of
 * the worker's large scratch buffers (HTTP_BIG_SCRATCH) for its body,
 * which is its limit (HTTP_JWKS_MAX_BODY). The key sets are built on the
 * worker (json-c and OpenSSL allocate, as a token's verification does).
 *
 * Ownership: the wait contexts and entries are the worker's (allocated
 * at its start); a stream holds its wait context (st->res->jwks_wait)
 * until jwt_authn is done with it (http_jwks_done) or the stream ends
 * (http_jwks_stream_end). A key set returned by http_jwks_get is valid
 * until the caller returns to the worker's loop.
 */
#ifndef ARN_HTTP_JWKS_H
#define ARN_HTTP_JWKS_H

#include <stdbool.h>
#include <stddef.h>

struct arn_cfg_jwt_remote;
struct arn_jwks;
struct arn_stats_scope;
struct http_stream;
struct http_worker;

/* Limits (docs/security.md) */
#define HTTP_JWKS_ENTRIES 32		      /* key sets cached per worker */
#define HTTP_JWKS_CACHE_BYTES (1024u * 1024u) /* their JWKS bytes per worker */
#define HTTP_JWKS_WAITS 256		      /* requests waiting for keys per worker */
#define HTTP_JWKS_MAX_HOLDS 4		      /* fetches one request waits for */

/** The worker's cache and pools (worker init). @return 0 or -ENOMEM. */
int http_jwks_worker_init(struct http_worker *w);
void http_jwks_worker_fini(struct http_worker *w);
/** Tests: wait contexts taken, fetches under way, entries with keys. */
unsigned http_jwks_waiting(const struct http_worker *w);
unsigned http_jwks_fetching(const struct http_worker *w);
unsigned http_jwks_cached(const struct http_worker *w);

/**
 * The keys of @p r for @p st's request, if its worker has them and they
 * have not expired. NULL: *@p failed says whether the request waited for
 * a fetch of them that failed (the provider fails: Jwks remote fetch is
 * failed), else it may wait (http_jwks_hold).
 */
const struct arn_jwks *http_jwks_get(struct http_stream *st, const struct arn_cfg_jwt_remote *r,
				     bool *failed);

/**
 * @p st's request (jwt_authn at filter index @p i, its statistics @p sc)
 * waits for @p r's keys: the fetch starts, or it joins the one under way.
 * @return 0 (its walk resumes from filter @p i once the fetch is over),
 * or a negative errno when it cannot wait (-ELOOP: it waited
 * HTTP_JWKS_MAX_HOLDS times already; -ENOSPC, -EBUSY: no wait context,
 * entry or buffer, counted in jwks_overflow; or the fetch could not
 * start): the provider fails for it.
 */
int http_jwks_hold(struct http_stream *st, size_t i, const struct arn_cfg_jwt_remote *r,
		   struct arn_stats_scope *sc);

/** The filter index the walk resumes from after a wait (0: none). */
size_t http_jwks_resume_at(const struct http_stream *st);
/** jwt_authn decided @p st's request: its wait context goes back. */
void http_jwks_done(struct http_stream *st);
/** The stream ends: it waits no more (its fetch moves on, or stops). */
void http_jwks_stream_end(struct http_stream *st);

#endif
