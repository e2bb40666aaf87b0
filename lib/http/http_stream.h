/*
 * A stream (one request / response exchange) and what it sees of the
 * downstream connection that carries it, whichever codec that is: the
 * connection manager (http_hcm.c), the router filter, local replies and the
 * access log work on these. Also the per-stream buffers (struct http_res)
 * and the worker's pool of them (http_stream.c).
 *
 * Calls: a stream reaches its connection only through hc->ops (struct
 * http_conn_ops: run, close, reset) and its two peers only through their
 * codec (hc->dn, http_up_peer(st->up): http_codec.h), so nothing below the
 * connection calls up into it.
 *
 * Ownership: a connection block is its worker's (w->conns) from accept
 * until lib/tcp's on_close; HTTP/1 embeds its one stream in it. A stream
 * holds an http_res only while a request is in flight; the configuration
 * objects it uses (route table, cluster, endpoints) are pinned, and its
 * cluster's runtime object referenced, until the stream ends.
 *
 * An HTTP/1 connection keeps those pins after its stream ended (struct
 * http_kept), and its next stream borrows them instead of taking its own
 * when it resolves the same objects: a steady keep-alive request takes and
 * drops no reference on the lines every worker writes (issue 17:
 * share-nothing). A connection keeps them until the worker sees a new
 * generation (http_kept_drop_all: idle connections drop them there and
 * then; one whose stream borrows them drops them when that stream ends),
 * until a stream of another route or cluster replaces them, or until it
 * closes. So a replaced or removed object outlives the generations that
 * hold it by no more than the streams in flight on it, plus one loop
 * iteration of each worker. The generation is enough for a cluster's
 * runtime object too: it is the same object for as long as the cluster's
 * name is in the configuration (http_cluster.c), and a stream that
 * resolves in a generation without the cluster takes none.
 */
#ifndef ARN_HTTP_STREAM_H
#define ARN_HTTP_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arn_config.h"
#include "arn_config_model.h"
#include "arn_h1.h"
#include "http_codec.h"
#include "http_int.h"
#include "http_io.h"
#include "http_otel.h"
#include "http_worker.h"
#include "http_zero.h"

struct arn_tls_conn;
struct arn_tcp_conn;
struct http_conn;
struct http_upconn;
struct http_pool;
struct http_upstream_ops;
struct http_mcp_req;
struct http_filter_ops;

/* A request's timers and retry state beyond what every connection keeps:
 * held in its http_res, so that only requests in flight pay for it. */
struct http_xreq {
	struct http_stream *st; /* owner, for the timers */
	/* retries (the route's retry_policy) */
	struct http_retry retry;
	struct arn_cfg_ref cref; /* the cluster (its name lives in pinned config or pins) */
	struct rte_mbuf *replay; /* next kept segment for this attempt */
	struct rte_mbuf *rb_head, *rb_tail; /* the body so far, kept for retries */
	uint32_t rb_bytes, rb_segs;
	uint32_t text_mark; /* text used before the first attempt's edits */
	/* the route's cookie hash policies that generated their cookie
	 * (bit i: hash_policies[i]), valid with HTTP_S_RESP_EXTRA; in the
	 * hole before rid_hi (bench_hcm: a larger block to zero costs) */
	uint32_t cookie_gen;
	uint64_t rid_hi, rid_lo;
	uint64_t up_activity_ms; /* the attempt's upstream last said something */
	bool reuse_replayed;	 /* sent once more after a reused connection closed */
	bool attempt_reused;	 /* this attempt's connection carried a request before */
	bool attempt_heard;	 /* this attempt's upstream sent a byte */
	/* envoy.filters.http.fault (http_l4.c): the filter index + 1 whose
	 * delay held the head (the walk resumes after it), whether that delay
	 * counts in active_faults, and the abort planned for its end (0 none,
	 * an HTTP status, or HTTP_FAULT_GRPC + a gRPC status); in the hole
	 * before the timers (bench_hcm: a larger block to zero costs) */
	uint8_t fault_from;
	bool fault_delayed;
	uint8_t shadows; /* its pending shadows (http_shadow.h) */
	uint16_t fault_abort;
	/* stopped whenever the http_res goes back or is reused (the stream's
	 * end stops them), so http_xreq_init leaves them as they are */
	struct http_timer retry_timer, try_timer, try_idle_timer;
	/* the hosts tried (address << 16 | port), retry.n_tried of them: not
	 * cleared either (the count is) */
	uint64_t tried[HTTP_RETRY_TRIED];
	/* the last transport failure (TLS), or "": last, http_xreq_init
	 * clears only its first byte */
	char tfr[192];
};

/* Per-stream buffers taken from a per-worker pool when a request's head is
 * complete in the input (or larger than a head may be) and returned after
 * the request: idle keep-alive connections and clients still sending their
 * head hold none, so slow heads cannot take them all (issue 12). Requests
 * wait for one first come, first served (http_res_wait). */
struct http_res {
	struct http_res *next;
	/* jwt_authn's remote_jwks: 1 + the index of the request's wait
	 * context in its worker's pool (http_jwks.c), 0 none; out of
	 * http_xreq, whose zeroing a request pays for: set while a request
	 * waits for keys, cleared when jwt_authn is done with it or the
	 * stream ends (http_jwks_done) */
	uint16_t jwks_wait;
	/* envoy.filters.http.buffer (http_buffer.c): 1 + the index of the
	 * buffer filter that held the head (the walk resumes after it), 0
	 * none; whether it is reading the body (HTTP_S_MCP: the body comes
	 * to http_buffer_body), and the bytes it takes. In the hole after
	 * jwks_wait, out of http_xreq's zeroing: cleared at the stream's end
	 * (http_buffer_stream_end) */
	uint8_t buf_from;
	bool buf_reading;
	uint32_t buf_max;
	/* HCM tracing's span (http_otel.c), valid with st->otel */
	struct http_otel_span otel;
	/* envoy.filters.http.lua's body() (http_lua.c): the call waiting for
	 * the request's body, 1 + the filter's index (the walk resumes after
	 * it), whether the body comes to http_lua_body; cleared at the
	 * stream's end (http_lua_stream_end) */
	void *lua_wait;
	uint8_t lua_from;
	bool lua_reading;
	/* envoy_on_response's body(): the response's run (http_lua.c's
	 * struct lua_resp), freed at the stream's end */
	void *lua_resp;
	/* streamInfo():dynamicMetadata()'s values (http_lua.c's struct
	 * lua_md), every Lua filter's, freed at the stream's end */
	void *lua_md;
	/* bodyChunks() / trailers() on a request: the call its slices
	 * resume (http_lua.c's struct lua_call), freed at the stream's end */
	void *lua_chunks;
	/* a body chunk's bytes a script's setBytes() replaced (http_lua.c's
	 * struct lua_out), what passes on instead; freed at the stream's end */
	void *lua_out;
	/* httpCall()'s sub-requests (http_lua.c's struct lua_hcall list),
	 * cancelled and freed at the stream's end */
	void *lua_calls;
	/* envoy.filters.http.decompressor's request state (http_decompressor.c),
	 * freed at the stream's end */
	void *dcmp;
	/* larger scratch for a head whose segment-spanning lines outgrow
	 * req_scratch / resp_scratch, and a trailer array for HTTP/1
	 * trailers past the slots their head left (from the worker's pools,
	 * returned with the http_res); NULL until needed */
	struct http_msg_more req_more, resp_more;
	struct http_xreq x;
	struct arn_h1_header req_hdrs[HTTP_MAX_HDRS];
	struct arn_h1_header resp_hdrs[HTTP_MAX_HDRS];
	char req_scratch[HTTP_SCRATCH];
	char resp_scratch[HTTP_SCRATCH];
	char text[HTTP_TEXT]; /* generated header values, rewritten path, ... */
	/* what came with a response head a filter holds (HTTP_S_HEAD_HELD),
	 * handled once it is written: set only then (http_hcm.c), never
	 * cleared */
	const char *held_data;
	uint32_t held_len;
	bool held_end;
};

/*
 * A stream's state, one bit each: a stream is in several at once (the
 * request and the response run side by side, an attempt beside both).
 * In the order a request usually meets them.
 */
enum http_stream_state {
	/* the request, from the client */
	HTTP_S_STARTED = 1u << 0,	/* its first byte came: its timers run (no buffer yet) */
	HTTP_S_ACTIVE = 1u << 1,	/* a byte of it was decoded, or it was answered early */
	HTTP_S_HEAD_DONE = 1u << 2,	/* its head was decoded and handled */
	HTTP_S_UPGRADE = 1u << 3,	/* it asks to switch protocols (not h2c) */
	HTTP_S_HOST_STRIPPED = 1u << 4, /* the Host's port was stripped (strip_*_host_port) */
	HTTP_S_HEALTH_CHECK = 1u << 5,	/* the health check filter matched it */
	HTTP_S_REQ_DONE = 1u << 6,	/* its END was decoded */
	/* the attempt, to an upstream */
	HTTP_S_PENDING = 1u << 7,	/* it waits in its pool's queue for a connection */
	HTTP_S_HEAD_SENT = 1u << 8,	/* the request head went to the attempt's upstream */
	HTTP_S_REPLAYING = 1u << 9,	/* a retry is being sent the body kept so far */
	HTTP_S_ATTEMPT_SENT = 1u << 10, /* the whole request went to the attempt's upstream */
	HTTP_S_KEEP_BODY = 1u << 11,	/* the request body is kept for a retry */
	HTTP_S_RETRY_WAIT = 1u << 12,	/* between attempts: the back-off runs */
	HTTP_S_ROUTE_TIMER = 1u << 13,	/* the route's timeout runs (once for all attempts) */
	HTTP_S_TIMED_OUT = 1u << 14,	/* the route's or an attempt's timeout ran out */
	/* the response, to the client */
	HTTP_S_LOCAL = 1u << 15,	  /* a local reply answers it */
	HTTP_S_LOCAL_WAIT_END = 1u << 16, /* that reply is out; the request's END is still due */
	HTTP_S_RESP_STARTED = 1u << 17,	  /* the response head went to the client */
	HTTP_S_TUNNEL = 1u << 18,	  /* switched protocols: raw bytes both ways */
	HTTP_S_RESP_DONE = 1u << 19,	  /* the response is complete (queued to the client) */
	/* what was counted, to be uncounted once */
	HTTP_S_COUNTED_RQ = 1u << 20,	/* in the HCM's downstream_rq_active */
	HTTP_S_COUNTED_UP = 1u << 21,	/* in the cluster's upstream_rq_active */
	HTTP_S_COUNTED_HOST = 1u << 22, /* in its pool's host's rq_total / rq_active */
	/* the MCP gateway filter took it (http_mcp.h): its body goes there */
	HTTP_S_MCP = 1u << 23,
	HTTP_S_GRPC_COUNTED = 1u << 24, /* its gRPC outcome is counted (http_grpc_stats.h) */
	/* its attempts take a new upstream connection, not an idle HTTP/1 one: set
	 * by the replay after a reused connection closed
	 * (http_router_filter.c) and kept for the request's later retries
	 * too, on purpose: the pool's other idle connections are likely as
	 * stale as the one that closed (an upstream restarted), and the
	 * replay, once per request, would not save a second such loss. The
	 * stream's reset for the next request clears it. */
	HTTP_S_FRESH_UP = 1u << 25,
	/* the request's END came with its head (http_ev.end) and is still
	 * to be handled (http_hcm.c's req_ready) */
	HTTP_S_END_HELD = 1u << 26,
	/* the upstream's response takes edits of the request's making: a
	 * cookie a hash policy generated (http_xreq.cookie_gen) and the
	 * request's x-request-id (http_stream.rid_resp); one bit, tested once
	 * with the health check's (bench_hcm: no instruction without them) */
	HTTP_S_RESP_EXTRA = 1u << 27,
	/* the response's END came with its last body bytes
	 * (HTTP_EV_BODY_END) and is still to be handled, once those bytes
	 * went to the client (http_hcm.c's resp_ready) */
	HTTP_S_RESP_END_HELD = 1u << 28,
	/* the attempt failed for the proxy's own want (no buffer for the
	 * response): the host's counters and outlier detection see neither a
	 * success nor the host's error (http_host_rq_done, HOST_LOCAL) */
	HTTP_S_LOCAL_FAIL = 1u << 29,
	/* a filter took the response body (st->enc: http_filter.h's
	 * encode_body): its bytes go there, not to the client's codec */
	HTTP_S_ENC_BODY = 1u << 30,
	/* that filter's output was full: encode_more goes on before the
	 * stream takes its next response event (http_hcm.c's resp_ready) */
	HTTP_S_ENC_MORE = 1u << 31,
};
/* ENC_MORE without ENC_BODY: a filter holds the upstream's response head
 * until an answer comes (http_filter.h's encode_head_edits, -EINPROGRESS):
 * resp_ready takes no event meanwhile (the bit sends it off its usual
 * path, so holding costs the usual response nothing) */
#define HTTP_S_HEAD_HELD HTTP_S_ENC_MORE

/*
 * What filters add to their stream's access log record (%MCP_TOOL%,
 * %MCP_BACKEND%): filled by each filter's log hook just before the record
 * is built, so the access log reads the stream and names no filter. The
 * slices point into the filter's per-stream state and stay valid until the
 * stream ends; NULL / 0 when the filter has nothing to say.
 */
struct http_log_fields {
	const char *mcp_tool; /* the tool called, as the client named it */
	uint32_t mcp_tool_len;
	const char *mcp_backend; /* the backend that call went to */
	uint32_t mcp_backend_len;
};

/*
 * One request / response exchange, whichever codec carries it: the
 * connection's (hc->dn) for the request and the response sent back, an
 * upstream connection's (http_up_peer(st->up)) for the request sent on and
 * the response that comes back. HTTP/1 carries one at a time per
 * connection, embedded in it; pipelined requests wait in the input.
 */
struct http_stream {
	struct http_conn *hc; /* the connection that carries it */
	uint32_t state;	      /* enum http_stream_state bits */
	/* a filter cleared the route cache (ext_proc's clear_route_cache):
	 * the route and the later filters' per-route configuration are
	 * matched on the request's headers with the kept edits applied
	 * (http_req_edits_view). In the hole after state, which
	 * stream_reset zeroes (bench_hcm: in http_xreq it cost 2
	 * instructions a request, its zeroed block a word longer) */
	bool route_edited;
	/* a filter rewrote the path (ext_proc's :path) without clearing the
	 * route cache: 1 + the offset in res->text of the path the route is
	 * matched on (http_route_path), as Envoy's cached route; 0: the
	 * request's own. In the same hole */
	uint16_t route_path;
	const char *auth;     /* authority as routed (port stripped or not) */
	uint32_t auth_len;
	const char *ep_host;   /* the endpoint's hostname, or NULL */
	char service_time[24]; /* x-envoy-upstream-service-time sent */
	uint8_t method;	       /* enum arn_h1_method */
	uint8_t version;
	uint16_t status;    /* response code sent downstream (0: none) */
	uint16_t up_status; /* the upstream's final response code (0: none) */
	/* the attempt's HTTP/2 stream was reset by the upstream: 1
	 * RST_STREAM, 2 REFUSED_STREAM (or above a GOAWAY's last stream: not
	 * processed); 0 otherwise */
	uint8_t up_reset;
	/* the response gets the request's x-request-id (Envoy's
	 * mutateResponseHeaders: always_set_request_id_in_response, or an
	 * internal request's x-envoy-force-trace), with HTTP_S_RESP_EXTRA; in
	 * the hole before flags (http_xreq has none: a larger block to zero
	 * costs, bench_hcm) */
	bool rid_resp;
	uint32_t flags; /* ARN_RF_BIT(...) */
	/* the request's x-request-id is in its head, put there before any
	 * filter read it (http_request_id_head, Envoy's mutateRequestHeaders):
	 * the router sends the head's as the request's own, never one
	 * generated over it. In the hole after flags (stream_reset zeroes it
	 * with the block: no more to clear) */
	bool rid_head;
	const char *details;
	uint64_t start_tsc;
	int64_t start_wall_us; /* from start_tsc, set at the end for the access log */
	uint64_t req_end_tsc, resp_first_tsc, up_start_tsc;
	uint64_t rx_body, tx_body;

	/* configuration pinned for the stream's life (G: in-flight requests
	 * finish on what they started with) */
	const struct arn_cfg_route_table *rt;
	const struct arn_cfg_vhost *vhost;
	const struct arn_cfg_route *route;
	const struct arn_cfg_weighted_cluster *wc;
	const struct arn_cfg_cluster *cluster;
	const struct arn_cfg_endpoints *endpoints;
	struct http_cluster_rt *crt;
	uint8_t own; /* enum http_own: those above that are not borrowed from hc->kept */
	/* envoy.filters.http.stateful_session (http_l4.c): HTTP_SS_F_* and
	 * the host the request's session names (for the router's first
	 * pick); ss_from below. In the holes of the block stream_reset
	 * zeroes (bench_hcm: no more to zero, nor a load of the http_res) */
	uint8_t ss_flags;
	uint16_t ss_port;
	uint32_t timeout_ms, idle_timeout_ms;
	uint32_t ss_addr;
	/* when the route's timeout ends (HTTP_S_ROUTE_TIMER): route_timer may
	 * be due earlier, armed by an earlier stream (http_route_timeout) */
	uint64_t route_due_ms;
	uint32_t ep_addr;
	uint16_t ep_port;
	/* the stateful session filter's index + 1 that read the request's
	 * session (0: none did: the response names no host) */
	uint8_t ss_from;

	struct http_upconn *up; /* bound upstream connection */
	/* what its upstream connection tells it (http_up_acquire) */
	const struct http_upstream_ops *up_ops;
	struct http_pool *pool;	   /* where it waits (HTTP_S_PENDING) / went */
	struct http_stream *pnext; /* pool pending queue */
	struct http_stream *pprev;

	struct http_timer route_timer;
	struct http_timer idle_timer;
	uint64_t last_activity_ms;
	/* request_headers_timeout / request_timeout: from the first byte,
	 * which comes before the request has an http_res (a head is taken
	 * into one only once it is complete: struct http_res) */
	struct http_timer hdr_timer, req_timer;
	uint32_t attempts; /* upstream attempts made (x-envoy-attempt-count) */
	/* the filter that took the response body and its state for the
	 * stream (which it frees in its stream_end): read only with
	 * HTTP_S_ENC_BODY, so the stream's reset does not clear them (where
	 * they are: between the fields it leaves, bench_hcm) */
	const struct http_filter_ops *enc;
	void *enc_state;

	/* the request buffer, while a request is in flight; the rest of the
	 * request's timers and retry state is in res->x */
	struct http_res *res;
	/* the request as the connection's codec decodes it (the codec keeps
	 * req.m across requests: http_stream_reset leaves it), and the
	 * response as the upstream's codec decodes it */
	struct http_msgbuf req, resp;
	uint32_t text_len;
	uint32_t cors_expose_len; /* (in a hole: bench_hcm zeroes this tail per request) */
	/* a local_ratelimit filter limited the request without enforcing:
	 * its request_headers_to_add_when_not_enforced go upstream (the
	 * configuration lives in the pinned HCM or route table); or an empty
	 * one, for an allowed ext_authz check's edits (http_authz.c) */
	const struct arn_cfg_http_ratelimit *rl_unenforced;
	/* enable_x_ratelimit_headers: the bucket a local_ratelimit filter
	 * consulted for a request it let through, whose x-ratelimit-* go on
	 * the response, upstream's or local (Envoy adds them in
	 * encodeHeaders whether the request was limited or not; a limited
	 * request's 429 carries them among its own edits) */
	bool rl_x;
	/* the CORS filter allowed the request's Origin, req.m.hdrs[
	 * cors_origin - 1] (0: none): its response gets
	 * access-control-allow-origin with that value, -allow-credentials
	 * and -expose-headers (cors_expose: the policy's, in the pinned
	 * route table). In the holes of the fields around them. */
	bool cors_credentials;
	uint16_t cors_origin;
	uint32_t rl_limit, rl_remaining, rl_reset_s;
	/* the ext_authz filter's check, and what its answer left for the
	 * request and response: 1 + its index in its worker's pool
	 * (http_authz.c), 0 none (in the hole before the pointers below) */
	uint16_t authz;
	/* an RBAC filter with action LOG ran: enum arn_access_hint, Envoy's
	 * envoy.common access_log_hint for the access log's metadata_filter */
	uint8_t access_log_hint;
	/* a filter rewrites the request body on its way upstream: 1 + its
	 * index in http_filters (http_filter.h's decode_xform), 0 none (in
	 * the hole after access_log_hint) */
	uint8_t req_xf;
	/* the jwt_authn and basic_auth filters' request edits (payload and
	 * claim headers, the token's header removed; the user name): a
	 * struct in res->text at this offset + 1 (0: none), which
	 * http_l4_req_edits adds (in a hole; http_l4_req_edits_keep) */
	uint16_t jwt_edits;
	/* the grpc_web filter took it as a gRPC-Web request: its state is a
	 * struct in res->text at this offset + 1 (http_grpc_web.c), 0 none
	 * (in the hole after jwt_edits) */
	uint16_t grpc_web;
	/* the ratelimit filter's call, and what its answer left for the
	 * response: 1 + its index in its worker's pool (http_rls.c), 0 none
	 * (in the hole after grpc_web: jwt_edits and grpc_web stay
	 * adjacent, which the router tests together) */
	uint16_t rls;
	/* the oauth2 filter's token exchange: 1 + its index in its worker's
	 * pool (http_oauth2.c), 0 none (in the hole after grpc_web) */
	uint16_t oauth2;
	/* the ext_proc filter's stream: 1 + its index in its worker's pool
	 * (http_ext_proc.c), 0 none */
	uint16_t ext_proc;
	/* HCM tracing: a span was started (its state in res->otel), or the
	 * request's traceparent was malformed (none is: Envoy's NullSpan);
	 * otel_done: it was finished (its ids still in res->otel, the
	 * access log's active span) */
	bool otel, otel_bad, otel_done;
	/* values the request edits produced (for the access log) */
	const char *xff;
	const char *request_id;
	uint32_t xff_len;
	uint32_t request_id_len;
	const char *cors_expose;
	/* the MCP gateway filter's request (HTTP_S_MCP), from its worker's pool */
	struct http_mcp_req *mcp;
	/* the filter whose decode_head took it (http_filter.h): with
	 * HTTP_S_MCP its body and end go there */
	const struct http_filter_ops *filter;
	/* filled by the filters for the access log (see above) */
	struct http_log_fields log;
	/* the generation its route was matched in (route_to_cluster; 0:
	 * none): what the connection's kept request edits are keyed on */
	uint64_t route_gen;
};

/* Set (@p on) or clear @p bits of @p st's state. */
static inline void http_stream_set(struct http_stream *st, uint32_t bits, bool on)
{
	st->state = on ? st->state | bits : st->state & ~bits;
}

struct http_worker;

enum http_dc_state {
	HTTP_DC_OPEN = 0,
	HTTP_DC_CLOSING, /* response written, FIN sent or about to be: draining input */
	HTTP_DC_CLOSED,
};

/*
 * What a stream asks of the connection that carries it. The connection's
 * owner (http_conn.c for HTTP/1) sets them when it accepts it; the stream's
 * steps, the router filter and local replies reach their connection only
 * through them, never by calling up into the code that calls them.
 */
struct http_conn_ops {
	/* Run the connection: step its stream until nothing changes. Called
	 * when something happened outside the connection's own callbacks (a
	 * timer, the upstream); a call from inside a run asks for one more
	 * round instead of recursing. The connection may be freed by it when
	 * lib/tcp closed it meanwhile. */
	void (*run)(struct http_conn *hc);
	/* Close once the current response is out: FIN, drain what the client
	 * still sends, linger (no more requests are read). */
	void (*close)(struct http_conn *hc);
	/* Reset now (RST): the response cannot be completed properly. @p line
	 * says where, for the debug log. lib/tcp's on_close follows. */
	void (*reset)(struct http_conn *hc, int line);
	/* A filter that held the request's head (ext_authz's check) lets it
	 * go on: the connection manager's head walk resumes after filter
	 * @p from, then the router (http_hcm_resume_head; NULL where no
	 * filter holds a head). */
	void (*resume_head)(struct http_stream *st, const struct http_filter_ops *from);
	/* A filter that held the upstream's response head (ext_proc's
	 * response_headers) lets it go on (http_hcm_resume_resp_head). */
	void (*resume_resp_head)(struct http_stream *st);
	/* A filter that held the response's body (ext_proc's buffered
	 * response_body) has the response go on (http_resp_step). */
	void (*resp_step)(struct http_stream *st);
	/* A filter that read the response's body whole before its head
	 * has the head written now (http_hcm_write_head). */
	void (*write_head)(struct http_stream *st);
	/* The router, when the upstream's connection goes with the
	 * response's end read: keep that end for the client
	 * (http_hcm_resp_keep_end); false, or NULL, and it is lost. */
	bool (*keep_resp_end)(struct http_stream *st);
};

/* The request edits a connection keeps for its next request (struct
 * http_conn.re_e): the common lists have two to four (x-forwarded-proto,
 * the route's timeout, a few of the configuration's); a longer one is
 * made each time. */
#define HTTP_RE_MAX 7
/* struct http_conn.re_rid of a list made with generate_request_id for a
 * request that brought its own x-request-id */
#define HTTP_RE_RID_OWN 0xff

/* The pins an HTTP/1 connection keeps between its streams (see the top of
 * this file): each held once, by the connection, or NULL. */
enum http_own {
	HTTP_OWN_RT = 1u << 0,
	HTTP_OWN_CLUSTER = 1u << 1,
	HTTP_OWN_ENDPOINTS = 1u << 2,
	HTTP_OWN_CRT = 1u << 3,
};
struct http_kept {
	const void *rt, *cluster, *endpoints; /* arn_cfg_obj pins */
	struct http_cluster_rt *crt;	      /* a reference */
};

/*
 * A downstream (client) connection, as its streams see it: who accepted
 * it, its configuration and statistics, whether it goes on after the
 * current exchange. Its owner (http_conn.c for HTTP/1) embeds it with its
 * codec's state.
 */
/* A downstream connection's addresses as a PROXY header gave them (host
 * order), in place of TCP's own. */
struct http_dc_addrs {
	uint32_t laddr, raddr;
	uint16_t lport, rport;
};

struct http_conn {
	struct http_conn *next; /* free list */
	struct http_worker *w;
	const struct http_conn_ops *ops;
	struct http_peer *dn;		       /* the client, as its codec reads and writes it */
	struct arn_tcp_conn *tc;	       /* the transport; NULL once lib/tcp closed it */
	const struct arn_tls_conn *tls;	       /* its TLS (negotiated values), NULL: plain text */
	const struct arn_cfg_listener *lsn;    /* pinned */
	const struct arn_cfg_filter_chain *fc; /* its chain, in lsn (NULL before one is chosen) */
	const struct arn_cfg_hcm *hcm;	       /* lives in lsn */
	struct http_hcm_rt *hrt;	       /* referenced, or NULL */
	struct http_listener_rt *lrt;
	struct http_cx_adm cx_adm; /* its place under the connection limits */
	uint32_t laddr, raddr;
	/* the TCP peer when a PROXY header gave raddr (and laddr); else the
	 * same as raddr: Envoy's direct remote address */
	uint32_t draddr;
	uint16_t drport;
	/* the listener's socket: TCP's local address, which finds the
	 * listener in a generation (laddr may be a PROXY header's) */
	uint16_t slport;
	uint32_t sladdr;
	uint16_t lport, rport;
	uint8_t state;	    /* enum http_dc_state */
	bool close_after;   /* close once the current response is out */
	bool again;	    /* something changed while running: run once more */
	bool drain_counted; /* downstream_cx_drain_close counted */
	bool rebind;	    /* a newer listener kept its chain: move to it once idle */
	bool res_waiting;   /* on the worker's list for a free http_res (FIFO) */
	bool hs_deadline;   /* idle_timer: armed for transport_socket_connect_timeout */
	struct http_conn *wnext, *wprev; /* that list */
	uint32_t n_req;
	uint64_t id;
	uint64_t open_tsc;
	struct http_timer idle_timer; /* connection idle / linger */
	uint64_t idle_since_ms;	      /* HTTP/1: its last stream ended (or it opened) */
	uint64_t hs_due_ms;	      /* hs_deadline: when the TLS handshake must be done */
	/* http_drain_close's last finding: in generation lsn_gen_id, lsn_cur
	 * was its address's listener (0: not looked up yet) */
	uint64_t lsn_gen_id;
	const struct arn_cfg_listener *lsn_cur;
	/* the router's last cluster lookup (a route's named cluster): in
	 * generation cv_gen_id, cv_name resolved to cv (0: none yet). A
	 * generation is immutable, so it holds while the id is the same. */
	uint64_t cv_gen_id;
	const char *cv_name;
	size_t cv_len;
	struct arn_cfg_cluster_view cv;
	/* and cv_name's cluster runtime object in snapshot cv_crt_sync
	 * (http_rt_snap_sync; NULL: none kept). No reference: the snapshot
	 * holds one while it is the current one. */
	struct http_cluster_rt *cv_crt;
	uint64_t cv_crt_sync;
	/* the router's last route match that the authority and path decide
	 * (arn_cfg_route.path_decides): in generation rm_gen_id (0: none),
	 * table rm_rt, the request of authority and path rm_key (rm_alen and
	 * rm_plen bytes, one after the other) matched rm_vhost and rm_route.
	 * A generation holds its objects as they are, so the answer holds
	 * while all of it is the same. */
	uint64_t rm_gen_id;
	const struct arn_cfg_route_table *rm_rt;
	const struct arn_cfg_vhost *rm_vhost;
	const struct arn_cfg_route *rm_route;
	uint8_t rm_alen, rm_plen;
	char rm_key[46];
	struct http_pool *pool_hint; /* its last upstream pool (http_pool_get) */
	/* pins kept between its streams (see the top of this file): only a
	 * connection with keeps set (HTTP/1: an HTTP/2 stream's block is
	 * freed by its own code) keeps any; it is on w->kept_head's list
	 * (knext, kprev) while kept_listed; kept_stale: a new generation
	 * came while its stream borrowed them (they go at its end) */
	struct http_kept kept;
	bool keeps, kept_listed, kept_stale;
	struct http_conn *knext, *kprev;
	/* x-envoy-expected-rq-timeout-ms's value as last sent on it (the
	 * router formats a route timeout once, not once per request) */
	struct http_num_text timeout_text;
	struct http_stream st; /* HTTP/1: the one exchange at a time */
	/* local_rate_limit_per_downstream_connection: the connection's own
	 * buckets, for the first local_ratelimit filter (http_l4.c) */
	struct arn_cfg_bucket_state rl_conn[ARN_CFG_HLRL_CONN_BUCKETS];
	/* the connection_limit filters counting it: bit k for the chain's
	 * k-th connection_limit filter (HTTP_L4_HELD_MAX of them at most) */
	uint8_t l4_held;
	bool l4_rbac_pending;			  /* network RBAC runs on the first byte */
	const struct arn_cfg_filter_chain *l4_fc; /* its chain, in lsn */
	/* The request edits (http_req_edits) of its last request sent
	 * upstream, kept where another request's would be the very same
	 * (http_router_filter.c's edits_kept says what they depend on and
	 * when they are kept): re_n edits in re_e (one slot more: a codec
	 * may add one after them), made for a request routed in generation
	 * re_gen_id (0: none kept) to re_rt, re_vhost, re_route and re_wc,
	 * on re_hcm, announcing timeout re_timeout_ms, with Expect:
	 * 100-continue or not (re_expect). Only within one connection: its
	 * block is zeroed when it is taken. re_rid and re_made: see below. */
	uint64_t re_gen_id;
	const struct arn_cfg_route_table *re_rt;
	const struct arn_cfg_vhost *re_vhost;
	const struct arn_cfg_route *re_route;
	const struct arn_cfg_weighted_cluster *re_wc;
	const struct arn_cfg_hcm *re_hcm;
	uint32_t re_timeout_ms;
	uint8_t re_n;
	bool re_expect;
	struct arn_h1_edit re_e[HTTP_RE_MAX + 1];
	/* 1 + the index in re_e of the generated x-request-id's edit, whose
	 * value each request that uses the list sets to its own id; 0: ids
	 * are not generated; HTTP_RE_RID_OWN: they are, and the list was
	 * made for a request that brought its own (it has no edit for one) */
	uint8_t re_rid;
	/* the lists made for its requests (edits_make): what a test reads */
	uint32_t re_made;
};
#define HTTP_L4_HELD_MAX ARN_CFG_L4_MAX_CONNECTION_LIMITS

/* Queue @p hc until an http_res is free / take it off that queue. */
void http_res_wait(struct http_worker *w, struct http_conn *hc);
void http_res_unwait(struct http_worker *w, struct http_conn *hc);
/* A free http_res for @p hc, first come first served: NULL (and @p hc
 * queued, if it was not) while none is free or others wait before it. */
struct http_res *http_res_take(struct http_worker *w, struct http_conn *hc);
struct http_res *http_res_get(struct http_worker *w);
/* http_res_put's rare case: @p r holds a large scratch or a trailer
 * array, given back too. */
void http_res_put_big(struct http_worker *w, struct http_res *r);
/* @p r (may be NULL) back to @p w's free list. Inline: every stream's end
 * puts one back, nearly always without a large scratch. */
static inline void http_res_put(struct http_worker *w, struct http_res *r)
{
	if (!r)
		return;
	if (r->req_more.big || r->resp_more.big || r->req_more.trl || r->resp_more.trl) {
		http_res_put_big(w, r);
		return;
	}
	r->next = w->res_free;
	w->res_free = r;
}

/* The stream gets request buffer @p r: the messages' headers and scratch. */
static inline void http_stream_attach(struct http_stream *st, struct http_res *r)
{
	st->res = r;
	st->req.scratch = r->req_scratch;
	st->req.more = &r->req_more;
	st->resp.scratch = r->resp_scratch;
	st->resp.more = &r->resp_more;
}

/* The router's per-request state in @p r (http_res's x), fresh for a
 * request of @p st. Here, not in http_router_filter.c, whose state it is:
 * http_stream_take_inline readies it for every request, and the stream
 * layer names nothing of the router's (the timers' handlers are set as
 * the router arms them, xreq_arm). */
static inline void http_xreq_init(struct http_stream *st, struct http_res *r)
{
	struct http_xreq *x = &r->x;
	/* tfr is a string: its first byte is enough (a fifth of the block);
	 * the three timers before it are stopped (the stream's end, or a
	 * never used http_res's zeroed memory): not cleared either, a third
	 * of the rest (bench_hcm: 48 instructions a request to about 30) */
	_Static_assert(offsetof(struct http_xreq, tfr) + sizeof(x->tfr) +
			       _Alignof(struct http_xreq) >
			   sizeof(*x),
		       "tfr is http_xreq's last member");
	_Static_assert(
	    offsetof(struct http_xreq, try_timer) ==
		    offsetof(struct http_xreq, retry_timer) + sizeof(struct http_timer) &&
		offsetof(struct http_xreq, try_idle_timer) ==
		    offsetof(struct http_xreq, try_timer) + sizeof(struct http_timer) &&
		offsetof(struct http_xreq, tried) ==
		    offsetof(struct http_xreq, try_idle_timer) + sizeof(struct http_timer) &&
		offsetof(struct http_xreq, tfr) ==
		    offsetof(struct http_xreq, tried) + sizeof(x->tried),
	    "the timers are last but tried and tfr");
	http_zero(x, offsetof(struct http_xreq, retry_timer));
	x->tfr[0] = '\0';
	x->st = st;
}

/* http_stream_take (http_hcm.h), inline for HTTP/1's request_wait, which
 * takes one a request (bench_hcm: its call and frame). A stream without a
 * request buffer has its request message as arn_h1_msg_init(NULL, 0) left
 * it (http_stream_init, and the stream's end when it gives the buffer
 * back): nothing writes it without a buffer (the codec decodes only into a
 * stream that has one). So the buffer's header array is all it takes, not
 * a second clearing of the message a request. */
static inline void http_stream_take_inline(struct http_stream *st, struct http_res *r)
{
	http_stream_attach(st, r);
	http_xreq_init(st, r);
	st->req.m.hdrs = r->req_hdrs;
	st->req.m.hdr_cap = HTTP_MAX_HDRS;
}

/* Disarm @p t if it is armed: the test inline, for the request path,
 * where most of the timers stopped are not armed (bench_hcm: about 30
 * instructions a request). */
static inline void http_timer_stop(struct http_timer *t)
{
	if (t->armed)
		http_timer_cancel(t);
}

/* ---- pins a connection keeps between its streams (http_hcm.c) --------------------------- */

/* Pin configuration object @p o for stream @p st: borrowed when it is
 * @p kept, its connection's (no atomic operation), else its own (@p own). */
static inline void http_kept_pin(struct http_stream *st, const void *kept, const void *o,
				 unsigned own)
{
	if (kept == o)
		return;
	st->own |= (uint8_t)own;
	st->hc->w->pins_taken++;
	arn_cfg_pin(o);
}

/* The same for cluster runtime object @p c (NULL: none). */
static inline void http_kept_crt(struct http_stream *st, struct http_cluster_rt *c)
{
	if (!c || st->hc->kept.crt == c)
		return;
	st->own |= HTTP_OWN_CRT;
	st->hc->w->pins_taken++;
	http_crt_ref(c);
}

/** Drop the pins @p hc keeps (none: no-op). */
void http_kept_drop(struct http_conn *hc);
/** A new generation on @p w: every connection drops what it keeps (at
 * its stream's end if that borrows them). */
void http_kept_drop_all(struct http_worker *w);

static inline void http_conn_run(struct http_conn *hc)
{
	hc->ops->run(hc);
}

static inline void http_conn_close(struct http_conn *hc)
{
	hc->ops->close(hc);
}

#define http_conn_abort(hc) ((hc)->ops->reset((hc), __LINE__))

/* ---- shared by the files of the connection manager ------------------------------------ */

#define MAX_EDITS ARN_H1_MAX_EDITS

/* Request bodies kept for retries, per worker: a bound on top of each
 * listener's per_connection_buffer_limit so that retries can never take
 * the mbufs that TCP needs (about 4 MB with 2 KB mbufs). */
#define HTTP_RB_WORKER_SEGS 2048

#define HS(hc) ((hc)->hrt ? (hc)->hrt->stats : NULL)

/* Several statistics of one scope and slot bumped together: the slot's
 * slab and the schema's offsets read once. Through arn_stats_add, each
 * counter's store may alias the scope's fields as far as the compiler
 * knows, so it reads them again for the next (about 6 instructions a
 * statistic). Only the slot's thread writes it, as arn_stats_add. */
struct http_sw {
	uint64_t *slab;
	const unsigned *off;
};

static inline struct http_sw http_sw(const struct arn_stats_scope *sc, unsigned slot)
{
	return (struct http_sw){arn_stats_slab(sc, slot), sc->schema->offsets};
}

static inline void http_sw_add(struct http_sw s, unsigned stat, uint64_t n)
{
	uint64_t *p = s.slab + s.off[stat];
	__atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

static inline void http_sw_hist(struct http_sw s, unsigned stat, uint64_t usec)
{
	arn_stats_hist_record_words(s.slab + s.off[stat], usec);
}

#define HTTP_INC(hc, name)                                                                         \
	do {                                                                                       \
		if (HS(hc))                                                                        \
			arn_stats_inc(HS(hc), (hc)->w->slot, ARN_HTTP_##name);                     \
	} while (0)
#define HTTP_GAUGE(hc, name, d)                                                                    \
	do {                                                                                       \
		if (HS(hc))                                                                        \
			arn_stats_gauge_add(HS(hc), (hc)->w->slot, ARN_HTTP_##name, (d));          \
	} while (0)
#define CS(st) ((st)->crt ? (st)->crt->stats : NULL)
#define CL_INC(st, name)                                                                           \
	do {                                                                                       \
		if (CS(st))                                                                        \
			arn_stats_inc(CS(st), (st)->hc->w->slot, ARN_CL_##name);                   \
	} while (0)
#define CL_GAUGE(st, name, d)                                                                      \
	do {                                                                                       \
		if (CS(st))                                                                        \
			arn_stats_gauge_add(CS(st), (st)->hc->w->slot, ARN_CL_##name, (d));        \
	} while (0)
#define LS_INC(hc, name)                                                                           \
	do {                                                                                       \
		if ((hc)->lrt)                                                                     \
			arn_stats_inc((hc)->lrt->stats, (hc)->w->slot, ARN_LS_##name);             \
	} while (0)

/* The request's state that lives in its http_res (only requests in flight
 * have one; every stream that reached this code has one). */
#define X(st) (&(st)->res->x)

/** The edit that sets st->request_id (not NULL) on a response
 * (always_set_request_id_in_response, x-envoy-force-trace). */
static inline struct arn_h1_edit http_request_id_edit(const struct http_stream *st)
{
	return (struct arn_h1_edit){.name = "x-request-id",
				    .name_len = 12,
				    .value = st->request_id,
				    .value_len = st->request_id_len,
				    .op = ARN_H1_EDIT_SET,
				    .id1 = ARN_H1_H_X_REQUEST_ID + 1};
}

#define OWNER(t, type, field) ((type *)((char *)(t)-offsetof(type, field)))

static inline uint64_t http_now_us(struct http_worker *w, uint64_t since_tsc)
{
	return (http_tsc(w) - since_tsc) / w->tsc_per_us;
}

/** Is @p st's request gRPC (content-type application/grpc[+...])? */
bool http_is_grpc(const struct http_stream *st);

static inline bool http_msg_has_body(const struct arn_h1_msg *m)
{
	if (m->flags & ARN_H1_F_CHUNKED)
		return true;
	if (m->flags & ARN_H1_F_CONTENT_LENGTH)
		return m->content_length > 0;
	return false;
}

/**
 * End the request toward upstream peer @p up (not NULL): its trailers
 * first when it has them and @p up's codec carries them (HTTP/2, or
 * HTTP/1.1 chunked with the cluster's enable_trailers), then encode_end.
 * Used at the request's end (http_hcm.c) and when a retry replays it
 * (http_router_filter.c); it lives here, below both. Inline: every
 * proxied request ends so, nearly always without trailers (bench_hcm:
 * its call and frame).
 */
static inline void http_req_end_encode(struct http_stream *st, struct http_peer *up)
{
	const struct arn_h1_msg *m = &st->req.m;
	/* an HTTP/1.1 client's trailer lines are kept by the request's pins;
	 * past their bound, some may be gone: none is sent */
	if ((m->flags & ARN_H1_F_TRAILERS) && m->n_trailers && !st->req.pins.overflow &&
	    up->codec->encode_trailers)
		up->codec->encode_trailers(up, m);
	up->codec->encode_end(up);
}

/**
 * The substitutions' context (struct http_subst) of stream @p st (a
 * struct http_stream *; void for struct http_resp_ctx.subst_fill): its
 * connection's addresses (the PROXY header's and the TCP peer's), its
 * upstream host once chosen, its request head once decoded, and its
 * connection manager, so that %DOWNSTREAM_REMOTE_ADDRESS% is the client
 * that manager took from the request. Every filter's header additions
 * (header_mutation, the rate limits' response headers) and the routes'
 * response additions read the same context, as Envoy's formatters all
 * read the stream info. (http_subst_stream.c)
 */
void http_stream_subst(const void *st, struct http_subst *out);

#endif
