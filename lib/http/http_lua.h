/*
 * envoy.filters.http.lua (docs/http.md "Lua"), as Envoy's lua_filter.cc:
 * a script's envoy_on_request runs on the request's head (a step of
 * http_l4.c's filter walk), its envoy_on_response on the upstream's
 * response head (http_l4_resp_edits), each call in a coroutine of the
 * worker's own Lua 5.4 state for that script (states are not
 * thread-safe), bounded in memory and instructions (lib/config/arn_lua.h).
 *
 * The stream handle's synchronous API is built (headers(), respond(),
 * log*(), streamInfo() with dynamicMetadata(), connection(), metadata(),
 * base64Escape(), timestamp*()), and body() (with setBytes): the
 * coroutine waits (its reference kept in the state's registry, the head
 * held) until the body is whole (a request's in the stream's kept body, a
 * response's in the filter's, which takes it: HTTP_S_ENC_BODY), then goes
 * on; httpCall() on requests and responses (the head held until its
 * answer); bodyChunks() and trailers() (the head goes on, each slice of
 * the body passing the script as it goes: http_lua_xform for requests,
 * the filter's encode_body for responses). What is not built
 * (filterContext(), ...) is a script error naming it. A script error is
 * Envoy's: logged, counted in http.<prefix>.lua[.<stat_prefix>].errors,
 * and the stream goes on with the edits the script made before it.
 *
 * States: one per (connection manager generation, Lua filter, worker,
 * script), made by the worker the first time a request needs it and
 * closed by the control lcore with the generation's runtime object
 * (http_hcm_rt, freed once no connection holds it: no worker runs it);
 * route scripts' (LuaPerRoute source_code) in a per-worker cache.
 */
#ifndef ARN_HTTP_LUA_H
#define ARN_HTTP_LUA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct arn_cfg_lua;
struct arn_cfg_route_match;
struct arn_h1_edit;
struct http_hcm_rt;
struct http_stream;

/* header edits one call may make (adds and removed names) */
#define HTTP_LUA_MAX_EDITS 32
/* states of route scripts (LuaPerRoute source_code) a worker keeps per
 * filter (more: the least recently used one is closed) */
#define HTTP_LUA_ROUTE_STATES 64
/* bytes of a log*() line (longer: cut) */
#define HTTP_LUA_LOG_MAX 1024
/* bytes of a stream's dynamicMetadata() (its values encoded: filter
 * names, keys, strings, numbers, tables; more: a script error) and the
 * depth of its tables */
#define HTTP_LUA_MD_MAX 4096
#define HTTP_LUA_MD_DEPTH 16

/** Control lcore: room for filter @p i's states in @p r (@p f its
 * configuration). Without memory the filter runs no script (logged). */
void http_lua_hrt_init(struct http_hcm_rt *r, size_t i, const struct arn_cfg_lua *f);

/** Control lcore: close every state of @p r's Lua filters. */
void http_lua_hrt_fini(struct http_hcm_rt *r);

/**
 * Filter @p i (configuration @p f) on @p st's request head (@p mt: its
 * route, NULL when none matched). @return true when the script answered
 * (respond()) or the edits did not fit (500): the walk stops.
 */
bool http_lua_step(struct http_stream *st, size_t i, const struct arn_cfg_lua *f,
		   const struct arn_cfg_route_match *mt);

/**
 * The Lua filters' envoy_on_response on @p st's response head (the
 * upstream's; local replies run none), their edits into @p e (at most
 * @p cap). @return how many, or -ENOSPC; or -EAGAIN: a script waits for
 * the response's body (body()), the filter took it (HTTP_S_ENC_BODY) and
 * has the head written once the body is whole and the scripts ran (this
 * asked again then gives their edits); or -ECANCELED: answered instead
 * (a body past HTTP_LUA_BODY_MAX by its content-length: 500); or
 * -EINPROGRESS: a script waits for its httpCall()'s answer, the head
 * held (http_filter.h), resumed with http_hcm_resume_resp_head, this
 * asked again then.
 */
int http_lua_resp_edits(struct http_stream *st, struct arn_h1_edit *e, unsigned cap);

/* httpCall(): sub-requests a stream's scripts may have in flight at
 * once (more: a script error, counted in http_call_refused); each holds
 * a copy of its request and up to HTTP_LUA_CALL_BODY_MAX of its answer */
#define HTTP_LUA_CALLS_MAX 4
/* bytes of an httpCall() answer's body (more: the call is reset at once,
 * the script sees 503 "upstream failure", as Envoy's async client buffer
 * limit) */
#define HTTP_LUA_CALL_BODY_MAX (1u << 20)
/* the bound in force (HTTP_LUA_CALL_BODY_MAX; tests lower it) */
extern uint32_t http_lua_call_body_max;
/* HTTP_LUA_CALLS_MAX in force (tests lower it) */
extern unsigned http_lua_calls_max;

/* bytes of a request body a script's body() reads (more: 413, as Envoy's
 * decoder buffer limit, its default per_connection_buffer_limit_bytes);
 * of a response body (more: 500 response_payload_too_large, as Envoy's
 * encoder buffer limit) */
#define HTTP_LUA_BODY_MAX (1u << 20)
/* response edits kept while a script waits for the response's body (the
 * calls' before it and its own, a content-length) */
#define HTTP_LUA_RESP_EDITS (2 * HTTP_LUA_MAX_EDITS + 1)

/** Is a script waiting for @p st's body (http_lua_body takes it)? */
bool http_lua_reading(const struct http_stream *st);

/** A piece of the body a script waits for. @return true for more (false:
 * answered). */
bool http_lua_body(struct http_stream *st, const char *data, size_t len);

/** The body is whole: the script goes on, then the request. */
void http_lua_body_end(struct http_stream *st);

/** The filter after which the head's walk resumes (a script that read
 * the body), or 0. */
size_t http_lua_resume_at(const struct http_stream *st);

/**
 * http_filter.h's decode_xform for the Lua filter (http_l4.c's, its
 * home): a request slice (@p data, @p len) or its end (@p end) to the
 * script waiting in bodyChunks() or trailers() (st->req_xf set by it).
 * The slice passes as it came (*@p out = @p data). @return @p len.
 */
long http_lua_xform(struct http_stream *st, char *data, size_t len, bool end, const char **out);

/** Does a script wait in bodyChunks() or trailers() for @p st's request
 * body's slices (http_lua_xform)? A filter after the Lua filter that
 * reads the body whole (http_l4.c's readers) hands them over first. */
bool http_lua_streaming(const struct http_stream *st);

/** The stream ends: a script waiting for its (request's or response's)
 * body is let go, a kept response body freed. */
void http_lua_stream_end(struct http_stream *st);

#endif
