/*
 * jwt_authn's remote_jwks: a worker's cache of fetched key sets and the
 * fetches that fill it (http_jwks.h). Envoy's behaviour followed (v1.3x
 * source/extensions/filters/http/jwt_authn: authenticator.cc,
 * jwks_cache.cc; common/jwks_fetcher.cc): a request needing a provider's
 * keys that are missing or expired waits for a fetch; a fetch that fails
 * (connect failure, reset, timeout, a status other than 200, a body that
 * is not a usable JWKS) fails the provider with "Jwks remote fetch is
 * failed"; keys expire cache_duration after they came.
 */
#include "http_jwks.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arn_config.h"
#include "arn_jwt.h"
#include "arn_log.h"
#include "arn_stats_envoy.h"
#include "http_filter.h"
#include "http_int.h"
#include "http_stream.h"
#include "http_subreq.h"
#include "http_worker.h"

/* A fetched JWKS is buffered whole in one large scratch buffer: longer is
 * a failed fetch (docs/security.md) */
#define HTTP_JWKS_MAX_BODY HTTP_BIG_SCRATCH
_Static_assert(HTTP_JWKS_MAX_BODY <= ARN_JWKS_MAX_BYTES, "a body the JWKS parser takes");
_Static_assert(HTTP_JWKS_WAITS < UINT16_MAX, "st->res->jwks_wait holds 1 + an index");

struct jwks_entry;

/* A request's wait (while its jwt_authn filter runs) */
struct jwks_wait {
	struct http_stream *st;		    /* NULL: free, or its stream went while being resumed */
	struct jwks_wait *next;		    /* the free list, an entry's waiters or a batch */
	struct jwks_entry *e;		    /* waiting for its fetch; NULL: not waiting */
	const struct arn_cfg_jwt_remote *r; /* what it waits for (its pinned configuration) */
	struct arn_stats_scope *sc;	    /* its filter's statistics */
	/* the keys whose fetch it waited for and that failed */
	const struct arn_cfg_jwt_remote *failed[HTTP_JWKS_MAX_HOLDS];
	uint8_t n_failed, holds;
	uint8_t idx;   /* the filter's index */
	bool in_batch; /* being resumed (jwks_wake): the batch frees it */
	bool resumed;  /* a fetch it waited for is over: the walk resumes at idx */
};

/* One identity (cluster NUL uri): its keys and its fetch */
struct jwks_entry {
	struct http_subreq sr;
	bool used;     /* holds an identity */
	bool fetching; /* a fetch runs (or waits out its back-off) */
	bool over;     /* the fetch ended, its body was handled */
	uint8_t tries; /* attempts of this fetch */
	bool expired;  /* the fetch's time is up (http_uri.timeout) */
	/* http_uri.timeout from the first attempt (0: none): Envoy's async
	 * client's timeout, which its retries share */
	uint64_t deadline_ms;
	uint16_t status;
	bool too_big;
	struct arn_jwks *ks;
	uint32_t bytes; /* ks's JWKS length */
	uint64_t hash, expire_ms, last_ms;
	struct jwks_wait *waiters; /* the first is the owner: its connection carries the fetch */
	char *body;		   /* a large scratch buffer while fetching */
	uint32_t blen;
	struct http_timer backoff;
	struct http_worker *w;
	uint32_t key_len;
	char key[ARN_CFG_JWT_MAX_KEY + 1];
};

struct jwks_worker {
	struct jwks_wait *waits, *free;
	struct jwks_entry *entries;
	unsigned in_use;
	uint32_t bytes;
};
static struct jwks_worker workers[ARN_STATS_MAX_WORKERS];

static void jf_fetch_over(struct jwks_entry *e, bool ok, const char *why);

int http_jwks_worker_init(struct http_worker *w)
{
	if (w->idx >= ARN_STATS_MAX_WORKERS)
		return 0; /* (no pool: every fetch fails, counted) */
	struct jwks_worker *jw = &workers[w->idx];
	jw->waits = calloc(HTTP_JWKS_WAITS, sizeof(*jw->waits));
	jw->entries = calloc(HTTP_JWKS_ENTRIES, sizeof(*jw->entries));
	if (!jw->waits || !jw->entries) {
		free(jw->waits);
		free(jw->entries);
		*jw = (struct jwks_worker){0};
		return -ENOMEM;
	}
	for (unsigned i = HTTP_JWKS_WAITS; i-- > 0;) {
		jw->waits[i].next = jw->free;
		jw->free = &jw->waits[i];
	}
	for (unsigned i = 0; i < HTTP_JWKS_ENTRIES; i++)
		jw->entries[i].w = w;
	return 0;
}

void http_jwks_worker_fini(struct http_worker *w)
{
	if (w->idx >= ARN_STATS_MAX_WORKERS)
		return;
	struct jwks_worker *jw = &workers[w->idx];
	for (unsigned i = 0; jw->entries && i < HTTP_JWKS_ENTRIES; i++)
		arn_jwks_free(jw->entries[i].ks);
	free(jw->waits);
	free(jw->entries);
	*jw = (struct jwks_worker){0};
}

unsigned http_jwks_waiting(const struct http_worker *w)
{
	return w->idx < ARN_STATS_MAX_WORKERS ? workers[w->idx].in_use : 0;
}

unsigned http_jwks_fetching(const struct http_worker *w)
{
	unsigned n = 0;
	const struct jwks_worker *jw = w->idx < ARN_STATS_MAX_WORKERS ? &workers[w->idx] : NULL;
	for (unsigned i = 0; jw && jw->entries && i < HTTP_JWKS_ENTRIES; i++)
		n += jw->entries[i].fetching;
	return n;
}

unsigned http_jwks_cached(const struct http_worker *w)
{
	unsigned n = 0;
	const struct jwks_worker *jw = w->idx < ARN_STATS_MAX_WORKERS ? &workers[w->idx] : NULL;
	for (unsigned i = 0; jw && jw->entries && i < HTTP_JWKS_ENTRIES; i++)
		n += jw->entries[i].ks != NULL;
	return n;
}

static void jw_inc(struct http_worker *w, struct arn_stats_scope *sc, unsigned id)
{
	if (sc)
		arn_stats_inc(sc, w->slot, id);
}

/* The wait context of @p st, or NULL. */
static struct jwks_wait *jw_at(const struct http_stream *st)
{
	unsigned w = st->hc->w->idx;
	if (!st->res || !st->res->jwks_wait || w >= ARN_STATS_MAX_WORKERS || !workers[w].waits)
		return NULL;
	return &workers[w].waits[st->res->jwks_wait - 1];
}

static void jw_put(struct http_worker *w, struct jwks_wait *a)
{
	struct jwks_worker *jw = &workers[w->idx];
	*a = (struct jwks_wait){0};
	a->next = jw->free;
	jw->free = a;
	jw->in_use--;
}

static struct jwks_entry *je_find(struct http_worker *w, const struct arn_cfg_jwt_remote *r)
{
	struct jwks_worker *jw = w->idx < ARN_STATS_MAX_WORKERS ? &workers[w->idx] : NULL;
	for (unsigned i = 0; jw && jw->entries && i < HTTP_JWKS_ENTRIES; i++) {
		struct jwks_entry *e = &jw->entries[i];
		if (e->used && e->hash == r->key_hash && e->key_len == r->key_len &&
		    memcmp(e->key, r->key, r->key_len) == 0)
			return e;
	}
	return NULL;
}

/* Drop @p e's keys (its room goes back). */
static void je_drop_keys(struct jwks_entry *e)
{
	if (!e->ks)
		return;
	arn_jwks_free(e->ks);
	e->ks = NULL;
	workers[e->w->idx].bytes -= e->bytes;
	e->bytes = 0;
}

/* The least recently used entry with no fetch, but @p keep (NULL: none). */
static struct jwks_entry *je_lru(struct http_worker *w, const struct jwks_entry *keep)
{
	struct jwks_worker *jw = &workers[w->idx];
	struct jwks_entry *best = NULL;
	for (unsigned i = 0; i < HTTP_JWKS_ENTRIES; i++) {
		struct jwks_entry *e = &jw->entries[i];
		if (e == keep || !e->used || e->fetching)
			continue;
		if (!best || e->last_ms < best->last_ms)
			best = e;
	}
	return best;
}

/* An entry for @p r: its own, a free one, or the least recently used idle
 * one taken over (counted in jwks_cache_evicted). NULL: every entry
 * fetches. */
static struct jwks_entry *je_get(struct http_worker *w, const struct arn_cfg_jwt_remote *r,
				 struct arn_stats_scope *sc)
{
	struct jwks_entry *e = je_find(w, r);
	if (e)
		return e;
	struct jwks_worker *jw = &workers[w->idx];
	for (unsigned i = 0; i < HTTP_JWKS_ENTRIES && !e; i++)
		if (!jw->entries[i].used)
			e = &jw->entries[i];
	if (!e) {
		e = je_lru(w, NULL);
		if (!e)
			return NULL;
		if (e->ks)
			jw_inc(w, sc, ARN_JWT_AUTHN_jwks_cache_evicted);
		je_drop_keys(e);
	}
	e->used = true;
	e->hash = r->key_hash;
	e->key_len = (uint32_t)r->key_len;
	memcpy(e->key, r->key, r->key_len);
	e->key[r->key_len] = 0;
	e->expire_ms = 0;
	e->last_ms = w->now_ms;
	return e;
}

const struct arn_jwks *http_jwks_get(struct http_stream *st, const struct arn_cfg_jwt_remote *r,
				     bool *failed)
{
	struct http_worker *w = st->hc->w;
	*failed = false;
	struct jwks_entry *e = je_find(w, r);
	if (e && e->ks && w->now_ms < e->expire_ms) {
		e->last_ms = w->now_ms;
		return e->ks;
	}
	const struct jwks_wait *a = jw_at(st);
	for (unsigned k = 0; a && k < a->n_failed; k++)
		if (a->failed[k] == r)
			*failed = true;
	return NULL;
}

/* ---- the fetch --------------------------------------------------------------------------- */

static void jf_head(struct http_subreq *sr, const struct arn_h1_msg *m)
{
	struct jwks_entry *e = OWNER(sr, struct jwks_entry, sr);
	e->status = m->status;
}

static void jf_body(struct http_subreq *sr, const char *data, size_t len)
{
	struct jwks_entry *e = OWNER(sr, struct jwks_entry, sr);
	if (e->status != 200 || e->too_big)
		return;
	if (len > HTTP_JWKS_MAX_BODY - e->blen) {
		e->too_big = true; /* the rest is read and dropped */
		return;
	}
	memcpy(e->body + e->blen, data, len);
	e->blen += (uint32_t)len;
}

static void jf_end(struct http_subreq *sr)
{
	struct jwks_entry *e = OWNER(sr, struct jwks_entry, sr);
	char why[64];
	if (e->status == 200 && !e->too_big) {
		jf_fetch_over(e, true, NULL);
		return;
	}
	if (e->too_big)
		snprintf(why, sizeof(why), "body over %u bytes", (unsigned)HTTP_JWKS_MAX_BODY);
	else
		snprintf(why, sizeof(why), "status %u", e->status);
	jf_fetch_over(e, false, why);
}

static void jf_failed(struct http_subreq *sr, const char *why)
{
	struct jwks_entry *e = OWNER(sr, struct jwks_entry, sr);
	e->status = 0; /* no answer: a connect failure, reset or timeout */
	e->expired = e->deadline_ms && e->w->now_ms >= e->deadline_ms;
	jf_fetch_over(e, false, why);
}

static const struct http_subreq_ops jf_ops = {
    .on_head = jf_head,
    .on_body = jf_body,
    .on_end = jf_end,
    .on_failed = jf_failed,
};

/* Start @p e's fetch on its owner's connection. @return as
 * http_subreq_start, or -EBUSY (no body buffer). */
static int jf_start(struct jwks_entry *e)
{
	struct jwks_wait *a = e->waiters;
	struct http_conn *hc = a->st->hc;
	struct http_worker *w = hc->w;
	const struct arn_cfg_jwt_remote *r = a->r;
	if (!e->body)
		e->body = http_big_get(w);
	if (!e->body)
		return -EBUSY;
	uint32_t timeout = r->timeout_ms;
	if (!e->tries)
		e->deadline_ms = timeout ? w->now_ms + timeout : 0;
	else if (e->deadline_ms && w->now_ms >= e->deadline_ms)
		return -ETIMEDOUT;
	else if (e->deadline_ms)
		timeout = (uint32_t)(e->deadline_ms - w->now_ms);
	e->blen = 0;
	e->status = 0;
	e->too_big = false;
	e->expired = false;
	e->tries++;
	memset(&e->sr, 0, sizeof(e->sr));
	e->sr.get = true;
	e->sr.host = r->host;
	e->sr.host_len = r->host_len;
	const struct arn_cfg_gen *g = w->gen_slot ? arn_config_gen_at(w->gen_slot) : NULL;
	return http_subreq_start(&e->sr, hc, g, &r->cluster, r->path, r->path_len, NULL, 0, NULL, 0,
				 timeout, &jf_ops, e);
}

static const char *jf_errstr(int rc)
{
	return rc == -EBUSY	     ? "overflow (circuit breaker or no buffer)"
	       : rc == -EHOSTUNREACH ? "no healthy upstream"
	       : rc == -ENOENT	     ? "no such cluster"
	       : rc == -ETIMEDOUT    ? "timed out"
				     : "could not start";
}

/* The back-off is over: the next attempt (its owner may have changed). */
static void jf_retry(struct http_timer *t)
{
	struct jwks_entry *e = OWNER(t, struct jwks_entry, backoff);
	if (!e->fetching || !e->waiters)
		return;
	int rc = jf_start(e);
	if (rc != 0)
		jf_fetch_over(e, false, jf_errstr(rc));
}

/* Resume the requests of list @p a (their walk goes on at jwt_authn). */
static void jwks_wake(struct http_worker *w, struct jwks_wait *a)
{
	for (struct jwks_wait *b = a; b; b = b->next)
		b->in_batch = true;
	while (a) {
		struct jwks_wait *next = a->next;
		a->next = NULL;
		a->in_batch = false;
		struct http_stream *st = a->st;
		if (!st) {
			jw_put(w, a); /* its stream went meanwhile */
		} else if (!(st->state & HTTP_S_LOCAL)) {
			/* (one answered meanwhile, by a timeout, is not resumed:
			 * its end gives the context back) */
			struct http_conn *hc = st->hc;
			hc->ops->resume_head(st, &http_l4_filter_ops);
			http_conn_run(hc);
		}
		a = next;
	}
}

/* @p e's fetch is over: @p ok with its body in e->body, else failed
 * (@p why). A retriable failure with retries left waits out its back-off
 * instead. Every waiter resumes. */
static void jf_fetch_over(struct jwks_entry *e, bool ok, const char *why)
{
	struct jwks_wait *own = e->waiters;
	struct http_worker *w = e->w;
	const struct arn_cfg_jwt_remote *r = own ? own->r : NULL;
	char err[160];
	/* retry_policy: Envoy's "5xx,gateway-error,connect-failure,reset",
	 * within the one timeout its attempts share */
	bool retriable = !ok && !e->expired && (e->status == 0 || e->status >= 500);
	uint64_t d = 0;
	if (retriable && r && e->tries <= r->num_retries) {
		d = r->backoff_base_ms;
		for (unsigned k = 1; k < e->tries && d < r->backoff_max_ms; k++)
			d *= 2;
		if (d > r->backoff_max_ms)
			d = r->backoff_max_ms;
		if (!d)
			d = 1;
		if (e->deadline_ms && w->now_ms + d >= e->deadline_ms)
			retriable = false; /* no time left for another attempt */
	}
	if (retriable && r && e->tries <= r->num_retries) {
		e->backoff.fn = jf_retry;
		http_timer_arm(w, &e->backoff, d);
		return;
	}
	if (ok) {
		struct arn_jwks *ks = arn_jwks_parse(e->body, e->blen, err, sizeof(err));
		if (!ks) {
			ok = false;
			why = err;
		} else {
			struct jwks_worker *jw = &workers[w->idx];
			je_drop_keys(e);
			/* room: the least recently used idle entries go */
			while (jw->bytes + e->blen > HTTP_JWKS_CACHE_BYTES) {
				struct jwks_entry *v = je_lru(w, e);
				while (v && !v->ks) {
					v->used = false; /* no keys: nothing to drop */
					v = je_lru(w, e);
				}
				if (!v)
					break;
				je_drop_keys(v);
				v->used = false;
				jw_inc(w, own ? own->sc : NULL, ARN_JWT_AUTHN_jwks_cache_evicted);
			}
			e->ks = ks;
			e->bytes = e->blen;
			jw->bytes += e->blen;
			e->expire_ms = w->now_ms + (r ? r->cache_ms : 0);
			e->last_ms = w->now_ms;
		}
	}
	if (own)
		jw_inc(w, own->sc,
		       ok ? ARN_JWT_AUTHN_jwks_fetch_success : ARN_JWT_AUTHN_jwks_fetch_failed);
	if (!ok && r)
		ARN_WARN(HTTP,
			 "jwt_authn: provider '%s': fetching its JWKS from cluster '%s' (%.*s%.*s) "
			 "failed: %s",
			 r->provider ? r->provider : "", r->cluster_name ? r->cluster_name : "",
			 (int)r->host_len, r->host, (int)r->path_len, r->path, why ? why : "");
	if (!ok)
		je_drop_keys(e); /* expired ones are of no use */
	if (e->body)
		http_big_put(w, e->body);
	e->body = NULL;
	e->fetching = false;
	e->tries = 0;
	http_timer_cancel(&e->backoff);
	struct jwks_wait *list = e->waiters;
	e->waiters = NULL;
	for (struct jwks_wait *a = list; a; a = a->next) {
		a->e = NULL;
		a->resumed = true;
		if (!ok && a->n_failed < HTTP_JWKS_MAX_HOLDS)
			a->failed[a->n_failed++] = a->r;
		a->r = NULL;
	}
	if (!e->ks)
		e->used = false; /* nothing kept: the entry is free */
	jwks_wake(w, list);
}

int http_jwks_hold(struct http_stream *st, size_t i, const struct arn_cfg_jwt_remote *r,
		   struct arn_stats_scope *sc)
{
	struct http_worker *w = st->hc->w;
	struct jwks_worker *jw = w->idx < ARN_STATS_MAX_WORKERS ? &workers[w->idx] : NULL;
	if (!st->res || !jw || !jw->waits || i > UINT8_MAX) {
		jw_inc(w, sc, ARN_JWT_AUTHN_jwks_overflow);
		return -ENOSPC;
	}
	struct jwks_wait *a = jw_at(st);
	if (a && a->holds >= HTTP_JWKS_MAX_HOLDS)
		return -ELOOP;
	if (!a) {
		a = jw->free;
		if (!a) {
			jw_inc(w, sc, ARN_JWT_AUTHN_jwks_overflow);
			return -ENOSPC;
		}
		jw->free = a->next;
		jw->in_use++;
		*a = (struct jwks_wait){0};
		a->st = st;
		st->res->jwks_wait = (uint16_t)(a - jw->waits + 1);
	}
	struct jwks_entry *e = je_get(w, r, sc);
	if (!e) {
		jw_inc(w, sc, ARN_JWT_AUTHN_jwks_overflow);
		return -EBUSY;
	}
	a->holds++;
	a->idx = (uint8_t)i;
	a->sc = sc;
	a->r = r;
	a->e = e;
	a->resumed = false;
	if (e->fetching && e->waiters) { /* the fetch under way: it waits with the others */
		a->next = e->waiters->next;
		e->waiters->next = a;
		return 0;
	}
	a->next = NULL;
	e->waiters = a;
	e->fetching = true;
	e->tries = 0;
	int rc = jf_start(e);
	if (rc == 0)
		return 0;
	/* not started: this request alone waited, and fails */
	ARN_WARN(HTTP, "jwt_authn: provider '%s': fetching its JWKS from cluster '%s' failed: %s",
		 r->provider ? r->provider : "", r->cluster_name ? r->cluster_name : "",
		 jf_errstr(rc));
	jw_inc(w, sc, ARN_JWT_AUTHN_jwks_fetch_failed);
	if (rc == -EBUSY && !e->body)
		jw_inc(w, sc, ARN_JWT_AUTHN_jwks_overflow);
	if (e->body)
		http_big_put(w, e->body);
	e->body = NULL;
	e->fetching = false;
	e->tries = 0;
	e->waiters = NULL;
	if (!e->ks)
		e->used = false;
	a->e = NULL;
	a->r = NULL;
	a->next = NULL;
	if (a->n_failed < HTTP_JWKS_MAX_HOLDS)
		a->failed[a->n_failed++] = r;
	return rc;
}

size_t http_jwks_resume_at(const struct http_stream *st)
{
	if (!st->res || !st->res->jwks_wait)
		return 0;
	const struct jwks_wait *a = jw_at(st);
	return a && a->resumed ? a->idx : 0;
}

/* @p a waits no more for its entry's fetch: off its list; an owner's
 * fetch moves to the next waiter (one on another connection first), or
 * stops when none is left. */
static void jw_leave(struct http_worker *w, struct jwks_wait *a)
{
	struct jwks_entry *e = a->e;
	if (!e)
		return;
	a->e = NULL;
	bool owner = e->waiters == a;
	struct jwks_wait **pp = &e->waiters;
	while (*pp && *pp != a)
		pp = &(*pp)->next;
	if (*pp)
		*pp = a->next;
	a->next = NULL;
	if (!owner || !e->fetching)
		return;
	struct http_conn *gone = a->st ? a->st->hc : NULL;
	bool ran = e->sr.running;
	http_subreq_cancel(&e->sr);
	if (!e->waiters) {
		http_timer_cancel(&e->backoff);
		if (e->body)
			http_big_put(w, e->body);
		e->body = NULL;
		e->fetching = false;
		e->tries = 0;
		if (!e->ks)
			e->used = false;
		return;
	}
	/* a new owner: one on another connection if there is one (this one
	 * may be closing) */
	pp = &e->waiters;
	while (*pp && (*pp)->st && (*pp)->st->hc == gone)
		pp = &(*pp)->next;
	if (*pp && *pp != e->waiters) {
		struct jwks_wait *n = *pp;
		*pp = n->next;
		n->next = e->waiters;
		e->waiters = n;
	}
	if (!ran)
		return; /* in its back-off: the timer starts the next attempt */
	if (e->tries)
		e->tries--; /* the attempt cancelled does not count */
	if (e->waiters->st && e->waiters->st->hc == gone) {
		/* only waiters on this connection, which may be closing (its
		 * streams end one by one): the next tick starts it, if any is
		 * left then */
		e->backoff.fn = jf_retry;
		http_timer_arm(w, &e->backoff, 1);
		return;
	}
	int rc = jf_start(e);
	if (rc != 0)
		jf_fetch_over(e, false, jf_errstr(rc));
}

void http_jwks_done(struct http_stream *st)
{
	struct jwks_wait *a = jw_at(st);
	if (!a)
		return;
	struct http_worker *w = st->hc->w;
	jw_leave(w, a);
	st->res->jwks_wait = 0;
	if (a->in_batch)
		a->st = NULL; /* the batch puts it back */
	else
		jw_put(w, a);
}

void http_jwks_stream_end(struct http_stream *st)
{
	http_jwks_done(st);
}
